-- ember.utils — PyTorch's torch.utils: ember.utils.tensorboard (SummaryWriter),
-- loaded on first use so that `require "ember"` stays as quick as before.
local M = {}

local lazy = {tensorboard = "ember.utils.tensorboard"}

return setmetatable(M, {
  __index = function(t, key)
    local name = lazy[key]
    if not name then return nil end
    local mod = require(name)
    rawset(t, key, mod)
    return mod
  end,
})
