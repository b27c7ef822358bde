-- ember.nn recurrent layers (nn.RNN, nn.LSTM, nn.GRU and their cells); merged into ember.nn by nn/layers.lua.
local M = {}

return M
