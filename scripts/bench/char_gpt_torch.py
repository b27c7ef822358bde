"""scripts/bench/char_gpt_torch.py — PyTorch's side of the character-level GPT
row: the model of scripts/char_gpt.lua built from nn.TransformerEncoderLayer
(norm_first=True, activation="gelu", batch_first=True, a causal mask), trained
the same way: the same text, alphabet (its sorted bytes), 90/10 split, random
windows, validation windows (evenly spaced), GPT-2 initialisation, AdamW
(betas 0.9, 0.99; weight decay on the matrices only), warm-up then cosine
learning rate set by hand each step, gradient clipping. The random draws
differ (PyTorch's generator, not ember's).

Prints, after --steps steps:
  gpt_step_ms <median> ms   the median training step, the first 3 left out
  gpt_val_loss <value>      the mean loss over the validation windows

  /usr/bin/python3 scripts/bench/char_gpt_torch.py TEXT_FILE --steps 50
      [--layers 4 --heads 4 --d-model 128 --context 128 --batch 32 ...]
      [--device cuda] [--compile] [--amp bfloat16|float16]

--amp runs the forward and the loss under torch.autocast(device, dtype) and, for
float16, scales the loss with a GradScaler (as scripts/char_gpt.lua --amp does).
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("text")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--untied", action="store_true")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=None)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eval-batches", type=int, default=8)
    p.add_argument("--device", default="cpu")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch 2)")
    p.add_argument("--amp", choices=["bfloat16", "float16"], default=None,
                   help="autocast the forward and loss to this dtype")
    a = p.parse_args()
    if a.min_lr is None:
        a.min_lr = a.lr / 10
    return a


class GPT(nn.Module):
    def __init__(self, vocab, a):
        super().__init__()
        d = a.d_model
        self.tok_emb = nn.Embedding(vocab, d)
        self.pos_emb = nn.Embedding(a.context, d)
        self.drop = nn.Dropout(a.dropout)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(d, a.heads, dim_feedforward=4 * d, dropout=a.dropout,
                                       activation="gelu", batch_first=True, norm_first=True)
            for _ in range(a.layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False) if a.untied else None
        mask = torch.full((a.context, a.context), float("-inf")).triu(1)
        self.register_buffer("mask", mask, persistent=False)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("bias"):
                    p.zero_()
                elif name.startswith("norm") or ".norm" in name:
                    p.fill_(1)
                elif name.endswith("out_proj.weight") or name.endswith("linear2.weight"):
                    p.normal_(0, 0.02 / math.sqrt(2 * a.layers))
                else:
                    p.normal_(0, 0.02)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.drop(self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device)))
        mask = self.mask[:T, :T]
        for b in self.blocks:
            x = b(x, src_mask=mask)
        x = self.norm(x)
        return self.head(x) if self.head is not None else F.linear(x, self.tok_emb.weight)


def main():
    a = parse_args()
    torch.manual_seed(a.seed)
    raw = open(a.text, "rb").read()
    alphabet = sorted(set(raw))
    index = {b: i for i, b in enumerate(alphabet)}
    data = torch.tensor([index[b] for b in raw], dtype=torch.long)
    n_train = int(len(data) * 0.9)
    train, val = data[:n_train], data[n_train:]
    T, B = a.context, a.batch

    model = GPT(len(alphabet), a).to(a.device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.99))
    fwd = torch.compile(model) if a.compile else model
    offsets = torch.arange(T + 1)

    def windows(source, starts):
        w = source[starts[:, None] + offsets[None, :]]
        return w[:, :-1].to(a.device), w[:, 1:].to(a.device)

    amp_dtype = getattr(torch, a.amp) if a.amp else None
    device_type = torch.device(a.device).type
    scaler = torch.cuda.amp.GradScaler() if a.amp == "float16" and device_type == "cuda" else None

    def loss_of(x, y):
        with torch.autocast(device_type, dtype=amp_dtype or torch.bfloat16, enabled=amp_dtype is not None):
            logits = fwd(x)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    def lr_at(s):
        if s <= a.warmup:
            return a.lr * s / a.warmup
        if s >= a.steps:
            return a.min_lr
        t = (s - a.warmup) / (a.steps - a.warmup)
        return a.min_lr + 0.5 * (1 + math.cos(math.pi * t)) * (a.lr - a.min_lr)

    times = []
    for s in range(1, a.steps + 1):
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_at(s)
        x, y = windows(train, torch.randint(0, len(train) - T, (B,)))
        loss = loss_of(x, y)
        opt.zero_grad(set_to_none=True)
        if scaler:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
        else:
            loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        loss.item()  # waits for the device
        if s > min(3, a.steps - 1):
            times.append(time.perf_counter() - t0)

    # the validation windows of scripts/char_gpt.lua: n evenly spaced starts
    n = a.eval_batches * B
    last = len(val) - T - 1
    starts = torch.tensor([(i * last) // (n - 1) if n > 1 else 0 for i in range(n)])
    model.eval()
    total = 0.0
    with torch.no_grad():
        for i in range(0, n, B):
            x, y = windows(val, starts[i:i + B])
            total += loss_of(x, y).item() * x.shape[0]
    print("gpt_step_ms %.3f ms" % (statistics.median(times) * 1e3))
    print("gpt_val_loss %.4f" % (total / n))


if __name__ == "__main__":
    main()
