-- scripts/bench/instr_work.lua — the workloads whose instruction counts
-- `make bench-instr` keeps within budget (scripts/bench/instr.sh runs each
-- under valgrind twice, with two repeat counts, and takes the difference, so
-- start-up and set-up cancel out and what is left is the cost of one op or one
-- training step). Synthetic data, fixed seeds: the same instructions every run.
--
--   ember scripts/bench/instr_work.lua WORKLOAD N
--     op           N times c = a + b (16 float32 elements)
--     op_autograd  N times c = a * b with requires_grad (the op and its graph node)
--     mlp          N training steps of the Fashion-MNIST MLP (784-256-128-10, batch
--                  128, cross-entropy, AdamW): zero_grad, forward, backward, step
--     cnn          N steps of the Fashion-MNIST CNN of scripts/fashion_mnist_cnn.lua
--                  (batch 16), same loop
-- (the GPT step is scripts/char_gpt.lua itself, run by instr.sh)
local ember = require "ember"
local nn, F, optim = ember.nn, ember.nn.functional, ember.optim

local workload, n = arg[1], tonumber(arg[2])
if not workload or not n then
  io.stderr:write("usage: ember scripts/bench/instr_work.lua op|op_autograd|mlp|cnn N\n")
  os.exit(2)
end
ember.manual_seed(1)

local function train(model, x, y)
  local opt = optim.AdamW(model:parameters(), {lr = 1e-3})
  for _ = 1, n do
    opt:zero_grad()
    local loss = F.cross_entropy(model(x), y)
    loss:backward()
    opt:step()
  end
end

if workload == "op" then
  local a, b = ember.randn(16), ember.randn(16)
  local c
  for _ = 1, n do c = a + b end
elseif workload == "op_autograd" then
  local a = ember.randn(16, {requires_grad = true})
  local b = ember.randn(16, {requires_grad = true})
  local c
  for _ = 1, n do c = a * b end
elseif workload == "mlp" then
  local model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
  train(model, ember.randn(128, 784), ember.randint(1, 11, {128}))
elseif workload == "cnn" then
  local model = nn.Sequential(
    nn.Conv2d(1, 32, 3, {padding = 1}), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, {padding = 1}), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25),
    nn.Linear(128, 10))
  train(model, ember.randn(16, 1, 28, 28), ember.randint(1, 11, {16}))
else
  io.stderr:write("instr_work.lua: unknown workload '" .. workload .. "'\n")
  os.exit(2)
end
