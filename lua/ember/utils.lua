-- ember.utils — PyTorch's torch.utils: ember.utils.tensorboard (SummaryWriter),
-- ember.utils.checkpoint (activation checkpointing: checkpoint, checkpoint_sequential)
-- and ember.utils.deterministic (fill_uninitialized_memory),
-- each loaded on first use so that `require "ember"` stays as quick as before.
local M = {}

local lazy = {tensorboard = "ember.utils.tensorboard", checkpoint = "ember.utils.checkpoint"}

--- ember.utils.deterministic.fill_uninitialized_memory (read and assigned, default true): under
-- ember.use_deterministic_algorithms(true), empty() and its kin fill with NaN / the integer maximum.
local deterministic = setmetatable({}, {
  __index = function(_, key)
    if key == "fill_uninitialized_memory" then return require("ember")._deterministic[key] end
  end,
  __newindex = function(_, key, value)
    if key ~= "fill_uninitialized_memory" then
      error(string.format("ember.utils.deterministic: no setting '%s' (there is fill_uninitialized_memory)",
                          tostring(key)), 2)
    end
    require("ember")._deterministic[key] = value
  end,
})
M.deterministic = deterministic

return setmetatable(M, {
  __index = function(t, key)
    local name = lazy[key]
    if not name then return nil end
    local mod = require(name)
    rawset(t, key, mod)
    return mod
  end,
})
