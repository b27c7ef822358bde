-- activation_checkpoint_spec.lua — ember.utils.checkpoint (torch.utils.checkpoint):
-- the gradients of a checkpointed region are the bits the same region gives without
-- checkpointing (an MLP block and nn.TransformerEncoderLayer with dropout, float64 and
-- float32: the recomputation draws the dropout masks again from the forward's generator
-- state), checkpoint_sequential's segments, several outputs and non-tensor arguments,
-- arguments that do not require grad, nested regions, autograd.grad and inputs= reaching
-- the parameters, the reentrant variant, and the mistakes named at the caller's line.
-- Expected values: the same program run without checkpointing, or by hand.
local ember = require "ember"
local nn = ember.nn
local ck = ember.utils.checkpoint
local checkpoint, checkpoint_sequential = ck.checkpoint, ck.checkpoint_sequential

local THIS = "activation_checkpoint_spec.lua"

-- fn() fails with msg positioned at this file's line `line` (luassert's has_error
-- drops the position, so compare the whole message here)
local function fails_at(line, msg, fn)
  local ok, err = pcall(fn)
  assert.is_false(ok)
  assert.equal(THIS .. ":" .. line .. ": " .. msg, tostring(err):match("[^/]*$"))
end

local h = require "checkpoint_helpers"
local same_bits, gradients, assert_same_gradients, differs = h.same_bits, h.gradients, h.assert_same, h.differs

local function mlp(dtype)
  ember.manual_seed(3)
  return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Dropout(0.25), nn.Linear(16, 16), nn.Tanh(),
                       nn.Dropout(0.25), nn.Linear(16, 6)):to(dtype)
end

for _, dtype in ipairs({"float64", "float32"}) do
  describe("checkpoint (" .. dtype .. ")", function()
    it("gives an MLP block with dropout the gradients it has without checkpointing, bit for bit", function()
      local model = mlp(dtype)
      local x = ember.randn(5, 6, {dtype = dtype}):requires_grad_()
      local plain, l1 = gradients(model, x, 11, function(v) return (model(v) * v):sum() end)
      local ckd, l2 = gradients(model, x, 11, function(v) return (checkpoint(model, v) * v):sum() end)
      same_bits(l1, l2)
      assert_same_gradients(plain, ckd)
      assert.equal(6, #ckd)   -- three Linear layers
    end)

    it("gives nn.TransformerEncoderLayer with dropout the same gradients, bit for bit", function()
      ember.manual_seed(5)
      local layer = nn.TransformerEncoderLayer(8, 2, {dim_feedforward = 16, dropout = 0.2, batch_first = true})
      layer:to(dtype)
      local x = ember.randn(2, 5, 8, {dtype = dtype}):requires_grad_()
      local w = ember.randn(2, 5, 8, {dtype = dtype})
      local plain = gradients(layer, x, 21, function(v) return (layer(v) * w):sum() end)
      local ckd = gradients(layer, x, 21, function(v) return (checkpoint(layer, v) * w):sum() end)
      assert_same_gradients(plain, ckd)
      -- every parameter got a gradient (none left out of the region's inputs)
      assert.equal(#layer:parameters(), #ckd)
    end)

    it("recomputes with other dropout masks when preserve_rng_state = false", function()
      local model = mlp(dtype)
      local x = ember.randn(5, 6, {dtype = dtype}):requires_grad_()
      local step = function(v) return (model(v) * v):sum() end
      local plain = gradients(model, x, 11, step)
      local kept = gradients(model, x, 11, function(v)
        return (checkpoint(model, v, {preserve_rng_state = true}) * v):sum()
      end)
      local fresh, loss = gradients(model, x, 11, function(v)
        return (checkpoint(model, v, {preserve_rng_state = false}) * v):sum()
      end)
      assert_same_gradients(plain, kept)
      assert.is_true(differs(plain, fresh))
      -- the forward itself is unchanged: only the recomputation drew other masks
      ember.manual_seed(11)
      same_bits(step(x), loss)
    end)
  end)
end

describe("checkpoint", function()
  it("leaves the generator where the forward left it after the recomputation", function()
    local model = mlp("float64")
    local x = ember.randn(3, 6, {dtype = "float64"}):requires_grad_()
    ember.manual_seed(9)
    local y = checkpoint(model, x)
    local after_forward = ember.get_rng_state()
    y:sum():backward()
    assert.are.same(after_forward, ember.get_rng_state())
  end)

  it("passes several outputs and non-tensor arguments and results through", function()
    local a = ember.tensor({1, 2, 3}, {dtype = "float64"}):requires_grad_()
    local b = ember.tensor({4, 5, 6}, {dtype = "float64"}):requires_grad_()
    local calls = 0
    local function fn(x, k, y, tag)
      calls = calls + 1
      assert.equal("label", tag)
      return x * y * k, (x + y):pow(2), "done", 42
    end
    local p, q, s, n = checkpoint(fn, a, 3, b, "label")
    assert.equal(1, calls)
    assert.equal("done", s)
    assert.equal(42, n)
    assert.are.same({12, 30, 54}, p:tolist())
    ;(p:sum() + (q * 2):sum()):backward()
    assert.equal(2, calls)   -- the backward ran fn again
    -- d/da = 3 b + 4 (a + b), d/db = 3 a + 4 (a + b)
    assert.are.same({32, 43, 54}, a.grad:tolist())
    assert.are.same({23, 34, 45}, b.grad:tolist())
  end)

  it("gives gradients when only one of several outputs is used", function()
    local a = ember.tensor({1, 2}, {dtype = "float64"}):requires_grad_()
    local p, q = checkpoint(function(x) return x * 2, x * x end, a)
    q:sum():backward()   -- p has no gradient: it reaches backward as nil
    assert.are.same({2, 4}, a.grad:tolist())
    assert.is_true(p.requires_grad)
  end)

  it("reaches the parameters when the argument does not require grad", function()
    ember.manual_seed(2)
    local lin = nn.Linear(3, 2):to("float64")
    local x = ember.randn(4, 3, {dtype = "float64"})
    local y = checkpoint(lin, x)
    assert.is_true(y.requires_grad)
    assert.equal("CheckpointBackward", y.grad_fn)
    y:sum():backward()
    -- d sum(x W^T + b)/dW[i][j] = sum over rows of x[:, j]; d/db = rows
    local colsum = x:sum(1):tolist()
    assert.are.same({colsum, colsum}, lin.weight.grad:tolist())
    assert.are.same({4, 4}, lin.bias.grad:tolist())
    assert.is_nil(x.grad)
  end)

  it("reaches tensors a closure captures, and autograd.grad and inputs= see them", function()
    local w = ember.tensor({2, 3}, {dtype = "float64"}):requires_grad_()
    local x = ember.tensor({5, 7}, {dtype = "float64"}):requires_grad_()
    local y = checkpoint(function(v) return (v * w):sin() end, x)
    local gx, gw = ember.autograd.grad({y:sum()}, {x, w}, {retain_graph = true})
    -- d sin(v w)/dv = w cos(v w), /dw = v cos(v w)
    local c = (x * w):detach():cos()
    same_bits((w:detach() * c), gx)
    same_bits((x:detach() * c), gw)
    y:sum():backward({inputs = {w}})
    same_bits(x:detach() * c, w.grad)
    assert.is_nil(x.grad)
  end)

  it("runs a backward twice with retain_graph, recomputing each time", function()
    local x = ember.tensor({1, 2}, {dtype = "float64"}):requires_grad_()
    local calls = 0
    local y = checkpoint(function(v) calls = calls + 1; return v * v * v end, x)
    y:sum():backward({retain_graph = true})
    y:sum():backward()
    assert.equal(3, calls)
    assert.are.same({6, 24}, x.grad:tolist())   -- 2 * 3 x^2
    -- without retain_graph the second pass freed the saved arguments
    assert.has_error(function() y:sum():backward() end)
  end)

  it("nests: a checkpoint inside a checkpointed function", function()
    local model = mlp("float64")
    local x = ember.randn(4, 6, {dtype = "float64"}):requires_grad_()
    local front, back = model[{1, 3}], model[{4, 7}]
    local function both(v) return back(front(v)) end
    local plain = gradients(model, x, 8, function(v) return (both(v) * v):sum() end)
    local calls = 0
    local nested = gradients(model, x, 8, function(v)
      return (checkpoint(function(u)
        calls = calls + 1
        return back(checkpoint(front, u))
      end, v) * v):sum()
    end)
    assert_same_gradients(plain, nested)
    assert.equal(2, calls)
  end)

  it("just runs fn under no_grad", function()
    local x = ember.tensor({1, 2}, {dtype = "float64"}):requires_grad_()
    local y = ember.no_grad(function() return checkpoint(function(v) return v * 2 end, x) end)
    assert.is_false(y.requires_grad)
    assert.are.same({2, 4}, y:tolist())
  end)

  it("returns what fn returns when nothing requires grad", function()
    local y = checkpoint(function(v) return v + 1 end, ember.tensor({1, 2}))
    assert.is_false(y.requires_grad)
    assert.are.same({2, 3}, y:tolist())
  end)

  it("keeps an autocast forward's dtypes in the recomputation", function()
    ember.manual_seed(4)
    local lin = nn.Linear(4, 4)
    local x = ember.randn(3, 4):requires_grad_()
    local function run(use)
      lin:zero_grad(); lin.weight.grad = nil; lin.bias.grad = nil; x.grad = nil
      local y
      do
        local _ <close> = ember.autocast("cpu", {dtype = "bfloat16"})
        y = use and checkpoint(function(v) return lin(v):relu() end, x) or lin(x):relu()
      end
      assert.equal("bfloat16", y.dtype)
      y:float():pow(2):sum():backward()
      return {x = x.grad:clone(), lin.weight.grad:clone(), lin.bias.grad:clone()}
    end
    assert_same_gradients(run(false), run(true))
    assert.is_false(ember.is_autocast_enabled("cpu"))
  end)

  it("refuses a double backward through the region", function()
    local x = ember.tensor({1, 2}, {dtype = "float64"}):requires_grad_()
    local y = checkpoint(function(v) return v * v end, x)
    local line = debug.getinfo(1, "l").currentline
    fails_at(line + 2, "checkpoint: a backward with create_graph (double backward) through a checkpoint is not provided",
      function() local g = ember.autograd.grad({y:sum()}, {x}, {create_graph = true}); return g end)
  end)

  it("names a recomputation that differs from the forward, at the backward's line", function()
    local x = ember.tensor({1, 2, 3}, {dtype = "float64"}):requires_grad_()
    local calls = 0
    local y = checkpoint(function(v)
      calls = calls + 1
      return calls == 1 and v * 2 or v[{{1, 2}}] * 2
    end, x)
    local line = debug.getinfo(1, "l").currentline
    fails_at(line + 3, "checkpoint: the recomputation of fn gave a tensor of shape [2], float64, on cpu as result 1 "
      .. "where the forward gave a tensor of shape [3], float64, on cpu: fn must compute the same thing when run again",
      function() y:sum():backward() end)
  end)

  it("names a captured tensor computed outside fn, at the caller's line", function()
    local w = ember.tensor({2, 3}, {dtype = "float64"}):requires_grad_()
    local h = w * 2
    local ok, err = pcall(checkpoint, function(v) return v * h end, ember.ones(2, {dtype = "float64"}))
    assert.is_false(ok)
    assert.matches("checkpoint: the function uses a tensor that requires grad %(made by MulBackward%) computed "
                   .. "outside it and not passed to it as an argument", err)
    -- passed as an argument it is fine
    local y = checkpoint(function(v, hh) return v * hh end, ember.ones(2, {dtype = "float64"}), h)
    y:sum():backward()
    assert.are.same({2, 2}, w.grad:tolist())
  end)

  it("refuses what is not callable and bad options, at the caller's line", function()
    local x = ember.ones(2)
    local line = debug.getinfo(1, "l").currentline
    fails_at(line + 2, "checkpoint: argument 1 must be a function (or a module, anything callable), got number",
      function() checkpoint(42, x) end)
    fails_at(line + 4, "checkpoint: use_reentrant must be a boolean, got string",
      function() checkpoint(function(v) return v end, x, {use_reentrant = "no"}) end)
    fails_at(line + 6, "checkpoint: determinism_check must be \"default\" or \"none\", got always",
      function() checkpoint(function(v) return v end, x, {determinism_check = "always"}) end)
    local ok, err = pcall(checkpoint, function(v) return v end, x, {preserve = true})
    assert.is_false(ok)
    assert.matches("checkpoint: unknown option 'preserve'", err, 1, true)
  end)
end)

describe("checkpoint with use_reentrant = true", function()
  it("gives the same gradients through its own backward pass", function()
    local model = mlp("float64")
    local x = ember.randn(5, 6, {dtype = "float64"}):requires_grad_()
    local plain = gradients(model, x, 13, function(v) return (model(v) * v):sum() end)
    local ckd = gradients(model, x, 13, function(v)
      return (checkpoint(model, v, {use_reentrant = true}) * v):sum()
    end)
    assert_same_gradients(plain, ckd)
  end)

  it("needs an argument that requires grad", function()
    local model = mlp("float64")
    local line = debug.getinfo(1, "l").currentline
    fails_at(line + 3, "checkpoint: use_reentrant = true needs an argument that requires grad (none "
      .. "does, so fn's parameters would get no gradient); use use_reentrant = false",
      function() checkpoint(model, ember.ones(2, 6, {dtype = "float64"}), {use_reentrant = true}) end)
  end)
end)

describe("checkpoint_sequential", function()
  for _, segments in ipairs({2, 3}) do
    it("gives an nn.Sequential's gradients in " .. segments .. " segments, bit for bit", function()
      local model = mlp("float64")
      local x = ember.randn(4, 6, {dtype = "float64"}):requires_grad_()
      local plain = gradients(model, x, 17, function(v) return (model(v) * v):sum() end)
      local ckd, loss = gradients(model, x, 17, function(v)
        return (checkpoint_sequential(model, segments, v) * v):sum()
      end)
      assert_same_gradients(plain, ckd)
    end)
  end

  it("checkpoints the first segments - 1 chunks and runs the last one plainly", function()
    local calls = {0, 0, 0, 0, 0}
    local fns = {}
    for i = 1, 5 do fns[i] = function(v) calls[i] = calls[i] + 1; return v * (i + 1) end end
    local x = ember.tensor({1.0}, {dtype = "float64"}):requires_grad_()
    -- 5 functions, 3 segments: chunks of 5 // 3 = 1: {1}, {2}, then {3, 4, 5} plainly
    local y = checkpoint_sequential(fns, 3, x, {use_reentrant = false})
    y:backward()
    assert.are.same({2, 2, 1, 1, 1}, calls)
    assert.are.same({720}, x.grad:tolist())   -- 2 * 3 * 4 * 5 * 6
  end)

  it("refuses bad segments and functions, at the caller's line", function()
    local model = mlp("float64")
    local x = ember.ones(2, 6, {dtype = "float64"})
    local line = debug.getinfo(1, "l").currentline
    fails_at(line + 2, "checkpoint_sequential: segments must be between 1 and the number of functions (7), got 0",
      function() checkpoint_sequential(model, 0, x) end)
    fails_at(line + 4, "checkpoint_sequential: segments must be between 1 and the number of functions (7), got 8",
      function() checkpoint_sequential(model, 8, x) end)
    fails_at(line + 6, "checkpoint_sequential: segments must be an integer, got 2.5",
      function() checkpoint_sequential(model, 2.5, x) end)
    fails_at(line + 8, "checkpoint_sequential: functions[2] is a number, not callable",
      function() checkpoint_sequential({function(v) return v end, 3}, 1, x) end)
    fails_at(line + 10, "checkpoint_sequential: argument 1 must be an nn.Sequential or a list of modules or functions, got ember.Tensor",
      function() checkpoint_sequential(x, 1, x) end)
    fails_at(line + 12, "checkpoint_sequential: functions is empty",
      function() checkpoint_sequential({}, 1, x) end)
  end)
end)

-- what the recomputation relies on in the engine: a pass started inside another one's
-- custom backward reaches a leaf the outer pass also holds and gets that leaf's gradient
-- itself, while the outer pass's gradient for the leaf stays its own
describe("a backward pass inside a custom function's backward", function()
  it("gets the gradient of a leaf the outer pass also reaches, and leaves the outer one alone", function()
    local w = ember.tensor({2, 3}, {dtype = "float64"}):requires_grad_()
    local x = ember.tensor({1, 1}, {dtype = "float64"}):requires_grad_()
    local inner
    local Probe = ember.autograd.Function:extend("Probe")
    function Probe.forward(ctx, a, b) return a * b end
    function Probe.backward(ctx, g)
      inner = ember.enable_grad(function()   -- a backward runs with grad off
        return ember.autograd.grad({(w * w * w):sum()}, {w})   -- 3 w^2
      end)
      return g * w:detach(), g * 7
    end
    local y = Probe.apply(x, w)
    ;(y:sum() + (w * 5):sum()):backward()
    assert.are.same({12, 27}, inner:tolist())
    assert.are.same({12, 12}, w.grad:tolist())   -- 7 + 5, nothing of the inner pass
    assert.are.same({2, 3}, x.grad:tolist())
  end)
end)
