-- ember.linalg: linear algebra as torch.linalg (loaded on first use of ember.linalg).
local M = {}

return M
