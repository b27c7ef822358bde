-- ddp_overlap.lua — how much of DistributedDataParallel's all-reduce time backward hides, on the
-- Fashion-MNIST MLP and CNN (the models of scripts/fashion_mnist_*.lua), 64 random images a rank.
-- Under mpirun -n 2 (scripts/bench/run.sh): for each model and bucket size, the median over `reps`
-- iterations of the slowest rank's
--   backward    loss:backward() of the unwrapped model (no communication)
--   comm        the same buckets all-reduced one after another, blocking (communication alone)
--   ddp         loss:backward() of the wrapped model: copies into buckets, all-reduces started from
--               the hooks, waited for at the end of backward
-- and hidden = (backward + comm - ddp) / comm, the share of the communication that overlapped
-- backward (0: none, 1: all; clamped to [0, 1]). Rank 0 prints one line per case.
local dist = ember.distributed
local nn = ember.nn
dist.init_process_group()
local reps = math.tointeger(tonumber(arg[1])) or 20

local MODELS = {
  {"mlp", function()
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
  end, function(x) return x:view(-1, 784) end},
  {"cnn", function()
    return nn.Sequential(
      nn.Conv2d(1, 32, 3, {padding = 1}), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
      nn.Conv2d(32, 64, 3, {padding = 1}), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
      nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
  end, function(x) return x:view(-1, 1, 28, 28) end},
}

-- the slowest rank's time
local function slowest(t)
  local took = ember.tensor({t}, {dtype = "float64"})
  dist.all_reduce(took, {op = "max"})
  return took[1]:item()
end

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

-- median of the slowest rank's time of fn(), after 3 warm-up calls; setup() runs untimed before each
local function timed(setup, fn)
  local times = {}
  for i = 1, reps + 3 do
    setup()
    dist.barrier()
    local t0 = ember.wall_time()
    fn()
    local t = slowest(ember.wall_time() - t0)
    if i > 3 then times[#times + 1] = t end
  end
  return median(times)
end

ember.manual_seed(1)
local x = ember.randn(64, 784)
local y = ember.randint(1, 11, {64})
local ce = nn.CrossEntropyLoss()
for _, m in ipairs(MODELS) do
  local name, make, layout = m[1], m[2], m[3]
  for _, cap in ipairs({25, 0.25}) do
    local model = make()
    local loss
    local backward = timed(function() model:zero_grad(); loss = ce(model(layout(x)), y) end,
                           function() loss:backward() end)
    local ddp = nn.parallel.DistributedDataParallel(make(), {bucket_cap_mb = cap})
    local buckets = {}
    for i, n in ipairs(ddp:bucket_sizes()) do buckets[i] = ember.zeros(n) end
    local comm = timed(function() end, function()
      for _, b in ipairs(buckets) do dist.all_reduce(b, {op = "avg"}) end
    end)
    local with = timed(function() ddp:zero_grad(); loss = ce(ddp(layout(x)), y) end,
                       function() loss:backward() end)
    local hidden = math.max(0, math.min(1, (backward + comm - with) / comm))
    if dist.get_rank() == 0 then
      print(string.format("%-4s bucket_cap_mb %-4s buckets %-2d  backward %7.3f ms  comm %7.3f ms  ddp %7.3f ms" ..
                          "  hidden %3.0f%%", name, tostring(cap), #buckets, backward * 1e3, comm * 1e3, with * 1e3, hidden * 100))
    end
  end
end
dist.destroy_process_group()
