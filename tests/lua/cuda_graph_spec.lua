-- cuda_graph_spec.lua — CUDA graphs on a machine without a GPU: every entry
-- point (CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing)
-- raises a clear "no CUDA device" error and the session goes on; argument
-- checks; Adam/AdamW's capturable = true (the step count on the device)
-- follows the fused step, and takes a 0-d tensor lr (checked). Capture and
-- replay themselves: tests/gpu/cuda_graph_spec.lua.
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

  it("a 0-d tensor lr filled before each step follows a number lr set on the group", function()
    local lrs = {0.05, 0.02, 0.08, 0.01, 0.03}
    local function run(dtype, tensor_lr)
      ember.manual_seed(3)
      local w = ember.randn(4, 3, {dtype = dtype}):requires_grad_()
      local x = ember.randn(5, 4, {dtype = dtype})
      local lr = tensor_lr and ember.full({}, lrs[1], {dtype = tensor_lr}) or lrs[1]
      local opt = ember.optim.AdamW({w}, {lr = lr, capturable = true, weight_decay = 0.1})
      for s = 1, #lrs do
        if tensor_lr then lr:fill_(lrs[s]) else opt.param_groups[1].lr = lrs[s] end
        opt:zero_grad()
        local loss = (x:matmul(w):tanh() ^ 2):sum()
        loss:backward()
        opt:step()
      end
      if tensor_lr then assert.is_true(rawequal(opt.param_groups[1].lr, lr)) end   -- the tensor itself
      return w
    end
    local want = run("float64", nil)
    h.close_tensors("float64 lr", run("float64", "float64"), want, 1e-12)
    -- a float32 lr is rounded once: float tolerance
    h.close_tensors("float32 lr", run("float32", "float32"), want:float(), 1e-5)
    h.close_tensors("float32 lr, float64 parameters", run("float64", "float32"), want, 1e-6)
  end)

  it("checks a tensor lr", function()
    local p = ember.zeros(2):requires_grad_()
    for _, name in ipairs({"Adam", "AdamW"}) do
      h.has(err(function() local o = ember.optim[name]({p}, {lr = ember.tensor(0.1)}); return o end),
            name .. " (group 1): lr as a tensor needs capturable = true")
    end
    h.has(err(function() local o = ember.optim.AdamW({p}, {lr = ember.tensor({0.1}), capturable = true}); return o end),
          "lr as a tensor must be 0-d (one value), got shape [1]")
    h.has(err(function()
      local o = ember.optim.AdamW({p}, {lr = ember.tensor(1, {dtype = "int64"}), capturable = true}); return o
    end), "lr as a tensor must be float32 or float64, got int64")
    h.has(err(function() local o = ember.optim.SGD({p}, {lr = ember.tensor(0.1)}); return o end),
          "SGD (group 1): lr must be a number, got a tensor")
    -- set on a group later: checked at the step, at the caller's line
    local opt = ember.optim.AdamW({p}, {lr = 0.1})
    opt.param_groups[1].lr = ember.tensor(0.1)
    p.grad = ember.ones(2)
    local ok, msg = pcall(function() opt:step() end)
    assert.is_false(ok)
    h.has(msg, "cuda_graph_spec.lua:")
    h.has(msg, "needs capturable = true")
  end)

  it("state_dict_flat saves a tensor lr as its number", function()
    local p = ember.zeros(2):requires_grad_()
    local opt = ember.optim.AdamW({p}, {lr = ember.tensor(0.25, {dtype = "float64"}), capturable = true})
    local _, meta = opt:state_dict_flat()
    assert.are.equal("0.25", meta["param_groups.1.lr"])
  end)

  it("checks the option", function()
    local p = ember.zeros(2):requires_grad_()
    h.has(err(function() local o = ember.optim.Adam({p}, {capturable = 1}); return o end),
          "capturable must be a boolean")
    h.has(err(function() local o = ember.optim.AdamW({p}, {capturable = true, amsgrad = true}); return o end),
          "capturable = true does not cover amsgrad")
  end)
end)
