"""scripts/bench/cuda_graph_torch.py — PyTorch's side of the CUDA graph rows
(scripts/bench/cuda_graph.lua): one eager training step of the same MLP
(784-256-128-10, batch 128, cross-entropy, AdamW) on the GPU, and the same
step captured with torch.cuda.graph; median per-step milliseconds over chunks
of 20 steps after 5 warm-up steps.
Argument: steps (default 200). Prints "torch_mlp_eager_step_ms <ms> ms" and
"torch_mlp_graph_step_ms <ms> ms"."""
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200


def setup(capturable):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                                torch.nn.ReLU(), torch.nn.Linear(128, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=capturable)
    crit = torch.nn.CrossEntropyLoss()
    x = torch.randn(128, 784, device="cuda")
    y = torch.randint(0, 10, (128,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def time_steps(run):
    for _ in range(5):
        run()
    torch.cuda.synchronize()
    per = []
    for _ in range(max(1, steps // 20)):
        t0 = time.perf_counter()
        for _ in range(20):
            run()
        torch.cuda.synchronize()
        per.append((time.perf_counter() - t0) / 20)
    per.sort()
    return per[(len(per) - 1) // 2]


print("torch_mlp_eager_step_ms %.6g ms" % (time_steps(setup(False)) * 1e3))
step = setup(True)
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        step()
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    step()
print("torch_mlp_graph_step_ms %.6g ms" % (time_steps(g.replay) * 1e3))
