-- gpt_pieces.lua — the char GPT step's elementwise pieces on their own, on the
-- step's shapes, best of 30; one "name ms" line each. PyTorch's side is
-- gpt_pieces_torch.py (same shapes, same lines):
--   build/ember scripts/bench/gpt_pieces.lua
--   scripts/bench/torch-python scripts/bench/gpt_pieces_torch.py
-- The inputs are reused, so they are warm in the caches: inside a training
-- step the same ops run on cold data and take longer.
local ember = require "ember"
local F = ember.nn.functional
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local best = dofile(here .. "timing.lua").best
ember.manual_seed(1)

local x = ember.randn(32, 128, 512)            -- the MLP's hidden activations
local g = ember.randn(32, 128, 512)
local xr = x:clone():requires_grad_()
local W = ember.randn(65, 128):requires_grad_()  -- the token embedding
local idx = ember.randint(1, 66, {32, 128})
local gy = ember.randn(32, 128, 128)

local rows = {
  {"gelu_fwd", function() return F.gelu(x) end},
  {"gelu_fwd_bwd", function() F.gelu(xr):backward(g); xr.grad = nil end},
  {"gelu_tanh_fwd", function() return F.gelu(x, {approximate = "tanh"}) end},
  {"gelu_tanh_fwd_bwd", function() F.gelu(xr, {approximate = "tanh"}):backward(g); xr.grad = nil end},
  {"embedding_fwd_bwd", function() F.embedding(idx, W):backward(gy); W.grad = nil end},
}
for _, r in ipairs(rows) do print(string.format("%s_ms %.3f", r[1], best(30, r[2]) * 1e3)) end
