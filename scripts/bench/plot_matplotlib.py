"""plot_matplotlib.py -- matplotlib's time for what scripts/bench/plot.lua times
in ember: a line of N points (float64, from a torch-free numpy array) drawn
into an 800x600 PNG with the Agg backend. Prints "plot_1m_png_s SECONDS"
(the best of REPEATS runs)."""
import os
import sys
import tempfile
import time

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
x = np.arange(1, n + 1, dtype=np.float64)
y = np.sin(x / 1000.0) + np.cos(x / 37.0) * 0.1
path = os.path.join(tempfile.mkdtemp(), "line.png")
best = float("inf")
for _ in range(repeats):
    t0 = time.perf_counter()
    fig = plt.figure(figsize=(8, 6), dpi=100)   # 800x600 pixels
    plt.plot(x, y)
    fig.savefig(path)
    plt.close(fig)
    best = min(best, time.perf_counter() - t0)
os.remove(path)
print("plot_1m_png_s %.4f" % best)
