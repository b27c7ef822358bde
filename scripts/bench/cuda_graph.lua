-- scripts/bench/cuda_graph.lua — ember's side of the CUDA graph rows: one
-- training step of a Fashion-MNIST-sized MLP (784-256-128-10, batch 128,
-- cross-entropy, AdamW capturable) on the GPU, eager and replayed from a
-- CUDA graph; median per-step milliseconds over `steps` steps after 5
-- warm-up steps, each timed between synchronisations of 20 steps.
-- PyTorch's eager side: scripts/bench/cuda_graph_torch.py (same shapes).
-- Usage: ember scripts/bench/cuda_graph.lua [steps = 200]   prints
--   mlp_eager_step_ms <ms> ms        mlp_graph_step_ms <ms> ms
local ember = require "ember"
local nn = ember.nn

local ok, why = ember.cuda.is_available()
if not ok then error("cuda_graph bench: needs a CUDA device: " .. tostring(why)) end
local steps = tonumber(arg and arg[1]) or 200

local function setup()
  ember.manual_seed(1)
  local model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
  model:to("cuda")
  local opt = ember.optim.AdamW(model:parameters(), {lr = 1e-3, capturable = true})
  local criterion = nn.CrossEntropyLoss()
  local x = ember.randn(128, 784, {device = "cuda"})
  local y = ember.randint(1, 11, {128}):to("cuda")
  local function step()
    opt:zero_grad()
    local loss = criterion(model(x), y)
    loss:backward()
    opt:step()
    return loss
  end
  return step
end

-- median over chunks of 20 steps of the per-step time
local function time_steps(run)
  for _ = 1, 5 do run() end
  ember.cuda.synchronize()
  local per = {}
  for _ = 1, math.max(1, steps // 20) do
    local t0 = ember.wall_time()
    for _ = 1, 20 do run() end
    ember.cuda.synchronize()
    per[#per + 1] = (ember.wall_time() - t0) / 20
  end
  table.sort(per)
  return per[(#per + 1) // 2]
end

local eager = setup()
print(string.format("mlp_eager_step_ms %.6g ms", time_steps(eager) * 1e3))

local step = setup()
for _ = 1, 3 do step() end
local g = ember.cuda.CUDAGraph()
ember.cuda.graph(g, function() step() end)
print(string.format("mlp_graph_step_ms %.6g ms", time_steps(function() g:replay() end) * 1e3))
