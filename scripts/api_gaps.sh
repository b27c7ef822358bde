#!/usr/bin/env bash
# api_gaps.sh — the public names of PyTorch (torch.*, Tensor methods, torch.nn classes,
# torch.nn.functional, torch.linalg, torch.fft, torch.special, torch.optim classes,
# torch.nn.init, torch.nn.utils) that ember does not have, one per line as
# "ember.X", "Tensor.X", "nn.X", "F.X", ... with a count per namespace at the end.
# Many of torch's names are internal (cudnn_*, mkldnn_*, quantized_*, sym_*, *_copy):
# read the list, not only the counts.
#
#   bash scripts/api_gaps.sh [BUILD]        (default build/; PyTorch from
#                                            scripts/bench/torch-python)
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/torch_names.py" <<'PY'
import inspect, torch, torch.nn as nn, torch.nn.functional as F
def names(prefix, mod, keep):
    for k in sorted(dir(mod)):
        if k.startswith('_'): continue
        v = getattr(mod, k, None)
        if inspect.ismodule(v) or not keep(v): continue
        print(prefix + k)
fn = lambda v: callable(v) and not isinstance(v, type)
names("ember.", torch, fn)
# the classes a script calls as functions (torch.device("cuda"), torch.finfo(dtype), ...);
# torch's other classes are its internals
for k in ("device", "finfo", "iinfo", "Generator", "Size", "autocast", "no_grad", "enable_grad",
          "inference_mode", "set_grad_enabled"):
    print("ember." + k)
names("Tensor.", torch.Tensor, callable)
names("nn.", nn, lambda v: isinstance(v, type))
names("F.", F, callable)
for sub in ("linalg", "fft", "special"):
    names(sub + ".", getattr(torch, sub), callable)
names("optim.", torch.optim, lambda v: isinstance(v, type))
names("init.", nn.init, callable)
names("utils.", nn.utils, callable)
PY
scripts/bench/torch-python "$tmp/torch_names.py" 2>/dev/null | sort -u > "$tmp/torch.txt"
cat > "$tmp/probe.lua" <<'LUA'
local ember = require "ember"
local t = ember.zeros(1)
local roots = {ember = ember, nn = ember.nn, F = ember.nn.functional, linalg = ember.linalg,
               fft = rawget(ember, "fft") or {}, special = ember.special, optim = ember.optim,
               init = ember.nn.init, utils = ember.nn.utils}
local counts, order = {}, {}
for line in io.lines(arg[1]) do
  local p, n = line:match("^(%w+)%.(.+)$")
  local ok, v = pcall(function() if p == "Tensor" then return t[n] end return roots[p][n] end)
  if not ok or v == nil then
    print(line)
    if not counts[p] then counts[p] = 0; order[#order + 1] = p end
    counts[p] = counts[p] + 1
  end
end
for _, p in ipairs(order) do io.stderr:write(string.format("%-8s %d missing\n", p, counts[p])) end
LUA
"$BUILD/ember" "$tmp/probe.lua" "$tmp/torch.txt"
