-- ember.utils — PyTorch's torch.utils: ember.utils.tensorboard (SummaryWriter) and
-- ember.utils.checkpoint (activation checkpointing: checkpoint, checkpoint_sequential),
-- each loaded on first use so that `require "ember"` stays as quick as before.
local M = {}

local lazy = {tensorboard = "ember.utils.tensorboard", checkpoint = "ember.utils.checkpoint"}

return setmetatable(M, {
  __index = function(t, key)
    local name = lazy[key]
    if not name then return nil end
    local mod = require(name)
    rawset(t, key, mod)
    return mod
  end,
})
