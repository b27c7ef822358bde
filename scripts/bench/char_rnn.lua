-- scripts/bench/char_rnn.lua — ember's side of the small-op training row: a
-- character-level RNN (vocabulary 65, hidden 128, batch 32, 25 steps of
-- truncated backpropagation), tanh cell written out op by op, cross-entropy
-- at every step, Adam. Hundreds of small ops per iteration: what a
-- busy machine does to per-op costs shows here first.
-- Usage: ember scripts/bench/char_rnn.lua [iterations]  prints
--   rnn_iter_ms <best> ms        the least disturbed iteration (the idle-machine figure)
--   rnn_iter_mean_ms <mean> ms   the mean (the figure under load, where the best is luck)
-- The same model is scripts/bench/char_rnn_torch.py.
local ember = require "ember"
local nn, optim, F = ember.nn, ember.optim, ember.nn.functional

local iters = tonumber(arg and arg[1]) or 30
local V, H, B, T = 65, 128, 32, 25
ember.manual_seed(0)

local function param(...) return nn.Parameter(ember.randn(...) * 0.1) end
local Wxh, Whh, bh = param(V, H), param(H, H), nn.Parameter(ember.zeros(H))
local Why, by = param(H, V), nn.Parameter(ember.zeros(V))
local opt = optim.Adam({Wxh, Whh, bh, Why, by}, {lr = 1e-3})

-- a fixed random "text": inputs one-hot [T, B, V], targets [T, B]
local x = ember.zeros(T, B, V):scatter_(3, ember.randint(1, V + 1, {T, B, 1}), 1)
local y = ember.randint(1, V + 1, {T, B})

local function iteration()
  local h = ember.zeros(B, H)
  local loss = 0
  for t = 1, T do
    h = (x[t]:matmul(Wxh) + h:matmul(Whh) + bh):tanh()
    loss = loss + F.cross_entropy(h:matmul(Why) + by, y[t])
  end
  opt:zero_grad()
  loss:backward()
  opt:step()
  return loss
end

iteration()   -- warm
local wall = ember.wall_time
local best, total = math.huge, 0
for _ = 1, iters do
  local t0 = wall()
  iteration()
  local dt = wall() - t0
  total = total + dt
  if dt < best then best = dt end
end
print(string.format("rnn_iter_ms %.4f ms", best * 1e3))
print(string.format("rnn_iter_mean_ms %.4f ms", total / iters * 1e3))
