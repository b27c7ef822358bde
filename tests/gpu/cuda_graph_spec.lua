-- cuda_graph_spec.lua (GPU) — CUDA graphs: a captured MLP training step
-- (forward, backward, SGD with momentum / capturable AdamW) replayed on the
-- same batches gives the parameters of the same number of eager steps; a
-- synchronising op inside a capture raises a clear error, discards the
-- capture and the session goes on; random ops and non-capturable Adam are
-- refused during a capture; the memory of a reset graph is reused.
-- Needs a GPU: with EMBER_GPU_TEST_DEVICE=cpu it is pending.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end
if g.on_cpu then pending("CUDA graphs need a CUDA device") return end

local DEV = g.DEV
local nn, optim = ember.nn, ember.optim

local function err(f)
  local ok, e = pcall(f)
  assert(not ok, "expected an error")
  return tostring(e)
end
local function has(msg, text)
  assert(msg:find(text, 1, true), "expected '" .. text .. "' in: " .. msg)
end

-- an MLP, its optimizer and a fixed list of batches, the same for every call
local function setup(make_opt)
  ember.manual_seed(7)
  local model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5))
  model:to(DEV)
  local batches = {}
  for i = 1, 8 do
    batches[i] = {ember.randn(16, 20):to(DEV), ember.randint(1, 6, {16}):to(DEV)}
  end
  local opt = make_opt(model:parameters())
  local criterion = nn.CrossEntropyLoss()
  local function step(x, y)
    opt:zero_grad()
    local loss = criterion(model(x), y)
    loss:backward()
    opt:step()
    return loss
  end
  return model, batches, step
end

local OPTS = {
  {"SGD with momentum", function(p) return optim.SGD(p, {lr = 0.05, momentum = 0.9, weight_decay = 1e-3}) end},
  {"AdamW capturable", function(p) return optim.AdamW(p, {lr = 1e-2, capturable = true}) end},
  {"Adam capturable", function(p) return optim.Adam(p, {lr = 1e-2, capturable = true, weight_decay = 1e-3}) end},
}

describe("a captured training step", function()
  for _, case in ipairs(OPTS) do
    it(case[1] .. ": replays give the parameters of the eager steps", function()
      local eager_model, batches, eager_step = setup(case[2])
      for i = 1, #batches do eager_step(batches[i][1], batches[i][2]) end

      local model, batches2, step = setup(case[2])
      local warm = 2
      for i = 1, warm do step(batches2[i][1], batches2[i][2]) end
      local sx, sy = batches2[warm + 1][1]:clone(), batches2[warm + 1][2]:clone()
      local graph, loss = ember.cuda.CUDAGraph(), nil
      ember.cuda.graph(graph, function() loss = step(sx, sy) end)
      for i = warm + 1, #batches2 do
        sx:copy_(batches2[i][1])
        sy:copy_(batches2[i][2])
        graph:replay()
      end
      assert.is_true(ember.is_tensor(loss))
      local pe, pg = eager_model:parameters(), model:parameters()
      for k = 1, #pe do
        local d = (pe[k] - pg[k]):abs():max():item()
        assert(d <= 1e-6, case[1] .. ": parameter " .. k .. " differs by " .. d)
      end
    end)
  end

  it("the guard form captures the block", function()
    local x = ember.ones(3, {device = DEV})
    local graph = ember.cuda.CUDAGraph()
    do
      local _ <close> = ember.cuda.graph(graph)
      assert.is_true(ember.cuda.is_current_stream_capturing())
      x:mul_(2)
    end
    assert.is_false(ember.cuda.is_current_stream_capturing())
    graph:replay()
    graph:replay()
    assert.are.same({4, 4, 4}, x:tolist())
  end)
end)

describe("synchronising during a capture", function()
  it("item() raises, the capture is discarded and the session goes on", function()
    local x = ember.randn(4, {device = DEV})
    local graph = ember.cuda.CUDAGraph()
    graph:capture_begin()
    has(err(function() local v = x:sum():item(); return v end), "while a CUDA graph is being captured")
    assert.is_false(ember.cuda.is_current_stream_capturing())
    has(err(function() graph:capture_end() end), "discarded")
    -- eager work runs again
    assert.are.equal(6, (ember.ones(6, {device = DEV})):sum():item())
    graph:reset()
    ember.cuda.graph(graph, function() x:add_(1) end)
    graph:replay()
  end)

  for _, case in ipairs({
    {"tolist", function(x) return x:tolist() end},
    {"to(\"cpu\")", function(x) return x:to("cpu") end},
    {"synchronize", function() ember.cuda.synchronize() end},
    {"nonzero", function(x) return x:gt(0):nonzero() end},
    {"masked_select", function(x) return x:masked_select(x:gt(0)) end},
    {"empty_cache", function() ember.cuda.empty_cache() end},
    {"randn", function() return ember.randn(3, {device = DEV}) end},
    {"dropout", function(x) return nn.functional.dropout(x, 0.5, true) end},
  }) do
    it(case[1] .. " inside ember.cuda.graph raises and resets the graph", function()
      local x = ember.randn(4, {device = DEV})
      local graph = ember.cuda.CUDAGraph()
      has(err(function() ember.cuda.graph(graph, function() local r = case[2](x); return r end) end),
          "while a CUDA graph is being captured")
      assert.is_false(ember.cuda.is_current_stream_capturing())
      has(err(function() graph:replay() end), "nothing captured")
      assert.are.equal(4, #(x + 1):tolist())
    end)
  end

  it("Adam without capturable and SGD's first momentum step refuse to be captured", function()
    for _, make in ipairs({
      function(p) return optim.AdamW(p, {lr = 1e-3}) end,
      function(p) return optim.SGD(p, {lr = 1e-3, momentum = 0.9}) end,
    }) do
      local w = ember.randn(3, {device = DEV}):requires_grad_()
      local opt = make({w})
      if opt._name == "AdamW" then w.grad = ember.ones(3, {device = DEV}); opt:step() end   -- warm-up
      local graph = ember.cuda.CUDAGraph()
      has(err(function()
        ember.cuda.graph(graph, function() w.grad = ember.ones(3, {device = DEV}); opt:step() end)
      end), opt._name == "AdamW" and "capturable = true" or "first step with momentum")
      assert.is_false(ember.cuda.is_current_stream_capturing())
    end
  end)
end)

describe("graph memory", function()
  it("the memory of a reset graph is reused", function()
    local n = 4 * 1024 * 1024
    local graph = ember.cuda.CUDAGraph()
    local keep
    ember.cuda.graph(graph, function() keep = ember.zeros(n, {device = DEV}) + 1 end)
    graph:replay()
    keep = nil
    collectgarbage()
    graph:reset()
    local reserved = ember.cuda.memory_reserved()
    -- an eager allocation of the same size fits in the returned memory
    local y = ember.zeros(n, {device = DEV}) + 1
    assert.are.equal(reserved, ember.cuda.memory_reserved())
    y = nil
    collectgarbage()
    -- and so does a new capture in a shared pool
    local pool = ember.cuda.graph_pool_handle()
    local a, b = ember.cuda.CUDAGraph(), ember.cuda.CUDAGraph()
    ember.cuda.graph(a, function() keep = ember.zeros(n, {device = DEV}) + 1 end, {pool = pool})
    local after_a = ember.cuda.memory_reserved()
    keep = nil
    collectgarbage()
    ember.cuda.graph(b, function() keep = ember.zeros(n, {device = DEV}) + 1 end, {pool = pool})
    assert.are.equal(after_a, ember.cuda.memory_reserved())
    a:replay()
    b:replay()
    assert.are.equal(n, keep:sum():item())
  end)

  it("capture arguments are checked", function()
    local graph = ember.cuda.CUDAGraph()
    has(err(function() graph:capture_begin(42) end), "a pool handle or an options table")
    has(err(function() graph:capture_begin({pool = 1}) end), "pool: expected a handle")
    has(err(function() graph:replay() end), "nothing captured")
    has(err(function() graph:capture_end() end), "no capture under way")
    graph:capture_begin()
    has(err(function() graph:capture_begin() end), "already holds a capture")
    local other = ember.cuda.CUDAGraph()
    has(err(function() other:capture_begin() end), "already being captured")
    graph:capture_end()
  end)
end)
