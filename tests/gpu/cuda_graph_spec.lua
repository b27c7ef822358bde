-- cuda_graph_spec.lua (GPU) — CUDA graphs: a captured MLP training step
-- (forward, backward, SGD with momentum / capturable AdamW) replayed on the
-- same batches gives the parameters of the same number of eager steps; a
-- synchronising op inside a capture raises a clear error, discards the
-- capture and the session goes on; non-capturable Adam is refused during a
-- capture; the memory of a reset graph is reused. Random numbers (dropout,
-- rand, randn, randint, normal_, uniform_, attention dropout) replay what
-- eager code at the same generator state draws, and the generator moves on
-- as it would; capturable AdamW with a tensor lr changed between replays
-- follows the eager steps; scripts/char_gpt.lua --cuda-graph prints the
-- eager run's losses.
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

-- an MLP (with dropout: the CNN scripts' case), its optimizer and a fixed list
-- of batches, the same for every call
local function setup(make_opt, dropout)
  ember.manual_seed(7)
  local model = dropout and nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Dropout(dropout), nn.Linear(32, 5))
                or nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5))
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
  return model, batches, step, opt
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

-- A Lua number operand is not a host tensor: x:add_(1) is captured as a kernel
-- with the number in it (PyTorch captures x.add_(1) too), whatever the number's
-- Lua subtype. Capturable Adam's st.step:add_(1) depends on it.
describe("numbers as operands in a capture", function()
  it("in-place ops with integer and float numbers are captured and replayed", function()
    local x = ember.ones(3, {device = DEV})
    local n = ember.full({3}, 5, {dtype = "int64", device = DEV})
    local graph = ember.cuda.CUDAGraph()
    ember.cuda.graph(graph, function()
      x:mul_(2):add_(1):sub_(1, {alpha = 2}):add_(0.5)
      n:add_(3):mul_(2)
    end)
    assert.are.same({1, 1, 1}, x:tolist())     -- the capture ran nothing
    assert.are.same({5, 5, 5}, n:tolist())
    graph:replay()
    assert.are.same({1.5, 1.5, 1.5}, x:tolist())
    assert.are.same({16, 16, 16}, n:tolist())
    graph:replay()
    assert.are.same({2.5, 2.5, 2.5}, x:tolist())
    assert.are.same({38, 38, 38}, n:tolist())
    -- and eagerly, an integer past 2^53 still meets an int64 device tensor exactly
    local big = ember.zeros({}, {dtype = "int64", device = DEV})
    big:add_(9007199254740993)
    assert.are.equal(9007199254740993, big:item())
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

-- the largest absolute difference of two tensors of one shape (any devices)
local function maxdiff(a, b)
  return (a:to("cpu"):double() - b:to("cpu"):double()):abs():max():item()
end
local function same(a, b, what)
  local d = maxdiff(a, b)
  assert(d == 0, what .. " differs by " .. d)
end
local function close_parameters(ma, mb, tol)
  local pa, pb = ma:parameters(), mb:parameters()
  for j = 1, #pa do
    local d = maxdiff(pa[j], pb[j])
    assert(d <= tol, "parameter " .. j .. " differs by " .. d)
  end
end

-- step on each batch: the first `warm` eagerly, then captured once on static
-- copies of the inputs and replayed for the others; before(i) runs first
local function graphed_steps(step, batches, warm, before)
  for i = 1, warm do
    before(i)
    step(batches[i][1], batches[i][2])
  end
  local sx, sy = batches[warm + 1][1]:clone(), batches[warm + 1][2]:clone()
  local graph = ember.cuda.CUDAGraph()
  ember.cuda.graph(graph, function() step(sx, sy) end)
  for i = warm + 1, #batches do
    before(i)
    sx:copy_(batches[i][1])
    sy:copy_(batches[i][2])
    graph:replay()
  end
end

describe("random numbers in a captured graph", function()
  local F = nn.functional

  it("a captured dropout replayed twice equals two eager dropouts from the same state", function()
    local x = ember.randn(1001, {device = DEV})     -- not a multiple of 4: a partly used counter
    ember.manual_seed(11)
    local e1, e2 = F.dropout(x, 0.5, true), F.dropout(x, 0.5, true)
    local e3 = ember.randn(7, {device = DEV})        -- eager code after them
    local after = ember.get_rng_state()
    ember.manual_seed(11)
    local before = ember.get_rng_state()
    local graph, out = ember.cuda.CUDAGraph(), nil
    ember.cuda.graph(graph, function() out = F.dropout(x, 0.5, true) end)
    assert.are.same(before, ember.get_rng_state())   -- a capture draws nothing
    graph:replay()
    local r1 = out:clone()
    graph:replay()
    local r2 = out:clone()
    local r3 = ember.randn(7, {device = DEV})
    same(r1, e1, "replay 1")
    same(r2, e2, "replay 2")
    same(r3, e3, "the eager draw after the replays")
    assert.are.same(after, ember.get_rng_state())
    assert(maxdiff(r1, r2) > 0, "two replays drew the same mask")
  end)

  it("rand, randn, randint, normal_ and uniform_ in one graph follow the eager sequence, after manual_seed too",
     function()
    local buf = ember.empty(5, 3, {device = DEV})
    local function draws()
      local a = ember.rand(3, 5, {device = DEV})
      local b = ember.randn(9, {device = DEV})
      local c = ember.randint(0, 100, {6}, {device = DEV})
      local wide = ember.randint(0, 1 << 40, {3}, {device = DEV})   -- two values per element
      buf:normal_(2, 3)
      local d = buf * 1
      buf:uniform_(-1, 1)
      return {a, b, c, wide, d, buf * 1}
    end
    local function eager(seed)
      ember.manual_seed(seed)
      local r = draws()
      for i, t in ipairs(r) do r[i] = t:clone() end
      return r
    end
    local e5, e9 = eager(5), eager(9)
    local graph, out = ember.cuda.CUDAGraph(), nil
    ember.cuda.graph(graph, function() out = draws() end)
    for _, case in ipairs({{5, e5}, {9, e9}}) do
      ember.manual_seed(case[1])     -- the replay reads the seed, too, from the graph's device state
      graph:replay()
      for i = 1, #out do same(out[i], case[2][i], "seed " .. case[1] .. ", draw " .. i) end
    end
  end)

  it("attention dropout: a captured forward and backward replay the eager masks", function()
    ember.manual_seed(2)
    local q = ember.randn(2, 3, 17, 16, {device = DEV}):requires_grad_()
    local k = ember.randn(2, 3, 19, 16, {device = DEV}):requires_grad_()
    local v = ember.randn(2, 3, 19, 16, {device = DEV}):requires_grad_()
    local go = ember.randn(2, 3, 17, 16, {device = DEV})
    local function step()
      q.grad, k.grad, v.grad = nil, nil, nil
      local out = ember.scaled_dot_product_attention(q, k, v, {dropout_p = 0.3, is_causal = true})
      out:backward(go)
      return out
    end
    ember.manual_seed(21)
    local eager = {}
    for i = 1, 2 do
      local o = step()
      eager[i] = {o:detach():clone(), q.grad:clone(), k.grad:clone(), v.grad:clone()}
    end
    step()   -- warm-up
    ember.manual_seed(21)
    local graph, out = ember.cuda.CUDAGraph(), nil
    ember.cuda.graph(graph, function() out = step() end)
    for i = 1, 2 do
      graph:replay()
      local got = {out:detach(), q.grad, k.grad, v.grad}
      for j, name in ipairs({"out", "dq", "dk", "dv"}) do
        local d = maxdiff(got[j], eager[i][j])
        assert(d <= 1e-5, ("replay %d: %s differs by %g"):format(i, name, d))
      end
    end
  end)

  it("the backward of a captured attention dropout must be captured with it", function()
    local q = ember.randn(1, 4, 8, {device = DEV}):requires_grad_()
    local graph, out = ember.cuda.CUDAGraph(), nil
    ember.cuda.graph(graph, function() out = ember.scaled_dot_product_attention(q, q, q, {dropout_p = 0.5}) end)
    graph:replay()
    has(err(function() out:sum():backward() end), "run the backward in the same capture")
  end)

  it("a training step with Dropout: replays give the parameters of the eager steps", function()
    local make = function(p) return optim.SGD(p, {lr = 0.05, momentum = 0.9}) end
    local eager_model, batches, eager_step = setup(make, 0.25)
    for i = 1, #batches do eager_step(batches[i][1], batches[i][2]) end
    local model, batches2, step = setup(make, 0.25)
    graphed_steps(step, batches2, 2, function() end)
    close_parameters(eager_model, model, 1e-6)
  end)
end)

describe("capturable AdamW with a tensor lr", function()
  local LRS = {1e-2, 5e-3, 8e-3, 2e-3, 1e-3, 4e-3, 6e-3, 3e-3}

  it("an lr filled between replays follows the eager steps with a number lr", function()
    local eager_model, batches, eager_step, eager_opt =
      setup(function(p) return optim.AdamW(p, {lr = LRS[1], capturable = true}) end)
    for i = 1, #batches do
      eager_opt.param_groups[1].lr = LRS[i]
      eager_step(batches[i][1], batches[i][2])
    end
    local lr = ember.full({}, LRS[1], {device = DEV})
    local model, batches2, step = setup(function(p) return optim.AdamW(p, {lr = lr, capturable = true}) end)
    graphed_steps(step, batches2, 2, function(i) lr:fill_(LRS[i]) end)   -- a kernel queued before the replay
    close_parameters(eager_model, model, 1e-5)
  end)

  it("an lr on another device than the parameters is an error", function()
    local w = ember.randn(3, {device = DEV}):requires_grad_()
    has(err(function() local o = optim.AdamW({w}, {lr = ember.tensor(0.1), capturable = true}); return o end),
        "a tensor lr must be on the parameters' device")
  end)
end)

describe("scripts/char_gpt.lua --cuda-graph", function()
  it("prints the losses of the eager run (with dropout)", function()
    local root = debug.getinfo(1, "S").source:match("^@(.*/)tests/gpu/") or "./"
    local exe = os.getenv("EMBER") or (root .. "build/ember")
    local text = os.tmpname()
    local f = assert(io.open(text, "w"))
    for i = 1, 800 do f:write("the quick brown fox ", i, " jumps over the lazy dog.\n") end
    f:close()
    local function losses(extra)
      local ckpt = os.tmpname()
      local cmd = ("%q %q %q --layers 1 --heads 2 --d-model 32 --context 16 --batch 16 --warmup 3 --steps 12 "
                   .. "--log-every 1 --eval-every 100 --dropout 0.1 --device %s --out %q %s 2>&1")
                  :format(exe, root .. "scripts/char_gpt.lua", text, DEV, ckpt, extra)
      local pipe = assert(io.popen(cmd))
      local out = pipe:read("a")
      pipe:close()
      os.remove(ckpt)
      local t = {}
      for v in out:gmatch("\nstep +%d+/12  loss ([%d.]+)") do t[#t + 1] = tonumber(v) end
      assert(#t == 12, "expected 12 loss lines from: " .. cmd .. "\n" .. out)
      return t
    end
    local eager, graphed = losses(""), losses("--cuda-graph")
    os.remove(text)
    for i = 1, 12 do
      assert(math.abs(eager[i] - graphed[i]) <= 2e-3, ("step %d: eager %g, graph %g"):format(i, eager[i], graphed[i]))
    end
  end)
end)
