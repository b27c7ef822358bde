-- cuda_graph_spec.lua — CUDA graphs on a machine without a GPU: every entry
-- point (CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing)
-- raises a clear "no CUDA device" error and the session goes on; argument
-- checks; Adam/AdamW's capturable = true (the step count on the device)
-- follows the fused step. Capture and replay themselves: tests/gpu/cuda_graph_spec.lua.
local ember = require "ember"
local h = require "helpers"
local err = h.err

describe("CUDA graphs without a GPU", function()
  if ember.cuda.is_available() then
    pending("a CUDA device is present: see tests/gpu/cuda_graph_spec.lua")
    return
  end

  it("every entry point says there is no CUDA device", function()
    h.has(err(function() local g = ember.cuda.CUDAGraph(); return g end), "ember.cuda.CUDAGraph: no CUDA device:")
    h.has(err(function() local p = ember.cuda.graph_pool_handle(); return p end), "no CUDA device:")
    h.has(err(function() local p = ember.cuda.graph_pool_handle(1); return p end), "no CUDA device:")
    h.has(err(function() local c = ember.cuda.is_current_stream_capturing(); return c end), "no CUDA device:")
    -- the session goes on
    h.check(ember.tensor({1, 2}) + 1, {2, 3})
  end)

  it("ember.cuda.graph checks its graph argument", function()
    h.has(err(function() ember.cuda.graph(nil, function() end) end), "argument 1: expected a cuda.CUDAGraph, got nil")
    h.has(err(function() ember.cuda.graph({}, function() end) end), "expected a cuda.CUDAGraph")
    h.has(err(function() local g = ember.cuda.graph("x"); return g end), "expected a cuda.CUDAGraph, got string")
  end)

  it("errors point at the caller's line", function()
    local ok, msg = pcall(function() local g = ember.cuda.CUDAGraph(); return g end)
    assert.is_false(ok)
    h.has(msg, "cuda_graph_spec.lua:")
  end)

  it("the Fashion-MNIST scripts' --cuda-graph helper refuses without CUDA", function()
    local root = (debug.getinfo(1, "S").source:match("^@(.*/)tests/lua/") or "./")
    h.has(h.read_file(root .. "scripts/fashion_mnist_common.lua"), "--cuda-graph")
    local helper = dofile(root .. "scripts/cuda_graph_step.lua")
    h.has(err(function() local s = helper.new(function() end); return s end), "--cuda-graph needs a CUDA device:")
  end)
end)

describe("Adam/AdamW capturable = true", function()
  local function trajectory(cls, opts, steps)
    ember.manual_seed(3)
    local w = ember.randn(4, 3, {dtype = "float64"}):requires_grad_()
    local b = ember.randn(3, {dtype = "float64"}):requires_grad_()
    local x = ember.randn(5, 4, {dtype = "float64"})
    local opt = cls({w, b}, opts)
    for _ = 1, steps do
      opt:zero_grad()
      local loss = ((x:matmul(w) + b):tanh() ^ 2):sum()
      loss:backward()
      opt:step()
    end
    return w, b, opt
  end

  for _, name in ipairs({"Adam", "AdamW"}) do
    it(name .. " follows the fused step (float64, 6 steps, weight decay, maximize)", function()
      for _, extra in ipairs({{}, {weight_decay = 0.05}, {maximize = true, weight_decay = 0.01}}) do
        local base = {lr = 0.05}
        for k, v in pairs(extra) do base[k] = v end
        local w1, b1 = trajectory(ember.optim[name], base, 6)
        local cap = {capturable = true}
        for k, v in pairs(base) do cap[k] = v end
        local w2, b2, opt = trajectory(ember.optim[name], cap, 6)
        h.close_tensors(name .. " w", w2, w1, 1e-12)
        h.close_tensors(name .. " b", b2, b1, 1e-12)
        -- the count is a 0-d tensor on the parameter's device
        local st = opt.state[w2]
        assert.is_true(ember.is_tensor(st.step))
        assert.are.equal(6, st.step:item())
      end
    end)
  end

  it("a loaded state with a number step goes on counting", function()
    local _, _, opt = trajectory(ember.optim.Adam, {lr = 0.05}, 3)
    local w, b, opt2 = trajectory(ember.optim.Adam, {lr = 0.05, capturable = true}, 0)
    opt2:load_state_dict(opt:state_dict())
    opt2.param_groups[1].capturable = true   -- the loaded groups carry the saved settings
    w.grad = ember.ones_like(w)
    b.grad = ember.ones_like(b)
    opt2:step()
    assert.are.equal(4, opt2.state[w].step:item())
  end)

  it("checks the option", function()
    local p = ember.zeros(2):requires_grad_()
    h.has(err(function() local o = ember.optim.Adam({p}, {capturable = 1}); return o end),
          "capturable must be a boolean")
    h.has(err(function() local o = ember.optim.AdamW({p}, {capturable = true, amsgrad = true}); return o end),
          "capturable = true does not cover amsgrad")
  end)
end)
