-- The model of scripts/fixtures/make_state_dict_fixtures.py in ember (for
-- state_dict_spec.lua and that script's --check-ember): a Sequential inside a module, a
-- ModuleList of blocks holding Sequentials, a BatchNorm's buffers, a non-persistent buffer and
-- an lm_head tied to the embedding. require("state_dict_model")() -> the model (float64).
local ember = require "ember"
local nn = ember.nn

local V, D = 11, 8

local Block = nn.Module:extend("Block")
function Block:init()
  self.ln = nn.LayerNorm(D)
  self.ff = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))
end
function Block:forward(x) return x + self.ff(self.ln(x)) end

local Net = nn.Module:extend("Net")
function Net:init()
  self.tok_emb = nn.Embedding(V, D)
  self.stem = nn.Sequential(nn.Linear(D, D), nn.Tanh(), nn.LayerNorm(D))
  self.bn = nn.BatchNorm1d(D)
  self.blocks = nn.ModuleList({Block(), Block()})
  self.norm = nn.LayerNorm(D)
  self.lm_head = nn.Linear(D, V, {bias = false})
  self.lm_head.weight = self.tok_emb.weight           -- tied, as PyTorch's
  self:register_buffer("scale", ember.full({D}, 0.5), {persistent = false})
end
-- idx: 1-based token ids [N, T]
function Net:forward(idx)
  local h = self.stem(self.tok_emb(idx))
  h = self.bn(h:transpose(2, 3)):transpose(2, 3)
  for _, b in ipairs(self.blocks:children()) do h = b(h) end
  return self.lm_head(self.norm(h) * (self.scale + 1))
end

return function() return Net():double() end
