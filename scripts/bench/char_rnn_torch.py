"""scripts/bench/char_rnn_torch.py — PyTorch's side of the small-op training
row: the same character RNN as scripts/bench/char_rnn.lua (vocabulary 65,
hidden 128, batch 32, 25 steps, tanh cell op by op, cross-entropy at every
step, Adam). Prints "rnn_iter_ms <best> ms" and "rnn_iter_mean_ms <mean> ms".
Argument: iterations."""
import sys
import time

import torch

ITERS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
V, H, B, T = 65, 128, 32, 25
torch.manual_seed(0)


def param(*shape):
    return (torch.randn(*shape) * 0.1).requires_grad_()


Wxh, Whh, bh = param(V, H), param(H, H), torch.zeros(H, requires_grad=True)
Why, by = param(H, V), torch.zeros(V, requires_grad=True)
opt = torch.optim.Adam([Wxh, Whh, bh, Why, by], lr=1e-3)
x = torch.nn.functional.one_hot(torch.randint(0, V, (T, B)), V).float()
y = torch.randint(0, V, (T, B))


def iteration():
    h = torch.zeros(B, H)
    loss = 0
    for t in range(T):
        h = (x[t] @ Wxh + h @ Whh + bh).tanh()
        loss = loss + torch.nn.functional.cross_entropy(h @ Why + by, y[t])
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


iteration()
best, total = float("inf"), 0.0
for _ in range(ITERS):
    t0 = time.perf_counter()
    iteration()
    dt = time.perf_counter() - t0
    total += dt
    best = min(best, dt)
print("rnn_iter_ms %.4f ms" % (best * 1e3))
print("rnn_iter_mean_ms %.4f ms" % (total / ITERS * 1e3))
