-- ember.nn activation modules (nn.ELU, nn.Mish, ...); merged into ember.nn by nn/layers.lua.
local M = {}

return M
