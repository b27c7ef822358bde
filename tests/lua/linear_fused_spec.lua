-- linear_fused_spec.lua — F.linear as one fused op (engine/linear.c on the backend's
-- linear family), with the epilogues none / bias / bias + gelu_tanh. Expected values:
-- the composed ops (matmul, add, the tanh GELU written out here from elementwise ops)
-- in float64, plain Lua loops for a small case, and finite differences (gradcheck).
local ember = require "ember"
local h = require "helpers"
local F = ember.nn.functional
local nn = ember.nn

local err, has = h.err, h.has

local function D(...) return ember.randn({...}, {dtype = "float64"}) end

-- 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3))), written independently of the engine's
local function gelu_tanh_ref(y)
  local k = math.sqrt(2 / math.pi)
  return (((y + y * y * y * 0.044715) * k):tanh() + 1) * y * 0.5
end

-- the composed reference: x @ w^T (+ b), then the activation
local function composed(x, w, b, act)
  local y = x:matmul(w:t())
  if b then y = y + b end
  if act == "gelu_tanh" then y = gelu_tanh_ref(y) end
  return y
end

-- value and gradients of sum(f(x, w, b) * weights) for f fused and composed
local function grads(f, x, w, b)
  local xs = {x:detach():clone():requires_grad_(), w:detach():clone():requires_grad_(),
              b and b:detach():clone():requires_grad_() or nil}
  local y = f(xs[1], xs[2], xs[3])
  local wt = ember.linspace(-1, 1, y:numel(), {dtype = y.dtype}):reshape(y.shape)
  local gs = {ember.autograd.grad((y * wt):sum(), b and xs or {xs[1], xs[2]})}
  return y:detach(), gs
end

local function agree(act, x, w, b, tol)
  tol = tol or 1e-12
  local y1, g1 = grads(function(a, m, c) return F.linear(a, m, c, {activation = act}) end, x, w, b)
  local y2, g2 = grads(function(a, m, c) return composed(a, m, c, act) end, x, w, b)
  h.close_tensors("output", y1, y2, tol)
  for i = 1, #g2 do h.close_tensors("gradient " .. i, g1[i], g2[i], tol) end
end

describe("F.linear fused: values and gradients against the composed ops (float64)", function()
  for _, act in ipairs({"none", "gelu_tanh"}) do
    it("2-D input with bias, activation " .. act, function() agree(act, D(7, 5), D(3, 5), D(3)) end)
    it("2-D input without bias, activation " .. act, function() agree(act, D(4, 6), D(5, 6), nil) end)
    it("batched input [2, 3, 5], activation " .. act, function() agree(act, D(2, 3, 5), D(4, 5), D(4)) end)
    it("1-D input [5], activation " .. act, function() agree(act, D(5), D(4, 5), D(4)) end)
    it("a transposed (non-contiguous) input, activation " .. act, function()
      agree(act, D(5, 2, 3):transpose(1, 3), D(4, 5), D(4))
    end)
  end

  it("a small case by hand: [[1, 2]] @ [[1, 0], [1, -1]]^T + [0.5, 0.25]", function()
    local x = ember.tensor({{1, 2}}, {dtype = "float64"})
    local w = ember.tensor({{1, 0}, {1, -1}}, {dtype = "float64"})
    local b = ember.tensor({0.5, 0.25}, {dtype = "float64"})
    h.check(F.linear(x, w, b), {{1.5, -0.75}}, 1e-15)
    -- gelu_tanh(1.5) and gelu_tanh(-0.75), each from the formula in plain Lua
    local function g(v) return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ^ 3))) end
    h.check(F.linear(x, w, b, {activation = "gelu_tanh"}), {{g(1.5), g(-0.75)}}, 1e-14)
  end)

  it("equals F.gelu(F.linear(x, w, b), {approximate = \"tanh\"})", function()
    local x, w, b = D(6, 4), D(3, 4), D(3)
    h.close_tensors("gelu", F.linear(x, w, b, {activation = "gelu_tanh"}),
                    F.gelu(F.linear(x, w, b), {approximate = "tanh"}), 1e-13)
  end)

  it("bias may come as an option, or a positional options table", function()
    local x, w, b = D(3, 4), D(2, 4), D(2)
    h.close_tensors("bias option", F.linear(x, w, {bias = b}), composed(x, w, b), 1e-13)
    h.close_tensors("gelu, no bias", F.linear(x, w, {activation = "gelu_tanh"}), composed(x, w, nil, "gelu_tanh"), 1e-13)
  end)

  it("records one node per call (LinearBackward, LinearGeluBackward)", function()
    local x, w = D(3, 4):requires_grad_(), D(2, 4)
    assert.are.equal("LinearBackward", tostring(F.linear(x, w).grad_fn):match("LinearBackward"))
    assert.truthy(tostring(F.linear(x, w, nil, {activation = "gelu_tanh"}).grad_fn):find("LinearGeluBackward"))
  end)

  it("gradient wrt the bias alone, and wrt the input alone", function()
    local x, w, b = D(5, 3), D(4, 3), D(4):requires_grad_()
    local y = F.linear(x, w, b, {activation = "gelu_tanh"})
    local gb = ember.autograd.grad(y:sum(), {b})
    local bb = b:detach():clone():requires_grad_()
    local gb2 = ember.autograd.grad(composed(x, w, bb, "gelu_tanh"):sum(), {bb})
    h.close_tensors("gb", gb, gb2, 1e-12)
    local xx = x:clone():requires_grad_()
    local gx = ember.autograd.grad(F.linear(xx, w, b:detach()):sum(), {xx})
    h.close_tensors("gx", gx, ember.ones(5, 4, {dtype = "float64"}):matmul(w), 1e-12)
  end)
end)

describe("F.linear fused: finite differences", function()
  for _, act in ipairs({"none", "gelu_tanh"}) do
    it("gradcheck and gradgradcheck, activation " .. act, function()
      local x, w, b = D(2, 3, 4):requires_grad_(), D(5, 4):requires_grad_(), D(5):requires_grad_()
      local f = function(a, m, c) return F.linear(a, m, c, {activation = act}) end
      h.gradcheck_ok(f, {x, w, b})
      local ok, report = ember.autograd.gradgradcheck(f, {x, w, b})
      assert(ok, report)
    end)
    it("gradcheck without bias, activation " .. act, function()
      h.gradcheck_ok(function(a, m) return F.linear(a, m, nil, {activation = act}) end,
                     {D(3, 4):requires_grad_(), D(2, 4):requires_grad_()})
    end)
  end
end)

describe("F.linear fused: half dtypes", function()
  for _, dt in ipairs({"bfloat16", "float16"}) do
    it(dt .. " against float32, forward and backward", function()
      local x, w, b = ember.randn(8, 16):to(dt), (ember.randn(12, 16) * 0.25):to(dt), ember.randn(12):to(dt)
      for _, act in ipairs({"none", "gelu_tanh"}) do
        local y, g = grads(function(a, m, c) return F.linear(a, m, c, {activation = act}) end, x, w, b)
        local y32, g32 = grads(function(a, m, c) return composed(a, m, c, act) end,
                               x:float(), w:float(), b:float())
        assert.are.equal(dt, y.dtype)
        local tol = dt == "bfloat16" and 2e-2 or 4e-3
        assert(h.max_rel_err_tensors(y, y32) <= tol, dt .. " " .. act .. " output")
        for i = 1, 3 do
          assert.are.equal(dt, g[i].dtype)
          -- relative to the gradient's scale: single elements may cancel
          local scale = g32[i]:abs():max():item()
          local diff = (g[i]:float() - g32[i]):abs():max():item()
          assert(diff <= 4 * tol * math.max(scale, 1), string.format("%s %s gradient %d: %g", dt, act, i, diff))
        end
      end
    end)
  end
end)

describe("nn.Linear goes through the fused op", function()
  it("forward and backward match the composed ops", function()
    local m = nn.Linear(5, 3, {dtype = "float64"})
    local x = D(4, 5)
    local y = m(x)
    assert.truthy(tostring(y.grad_fn):find("LinearBackward"))
    h.close_tensors("y", y, composed(x, m.weight:detach(), m.bias:detach()), 1e-13)
    y:sum():backward()
    h.close_tensors("gw", m.weight.grad, ember.ones(4, 3, {dtype = "float64"}):t():matmul(x), 1e-12)
    h.close_tensors("gb", m.bias.grad, ember.full({3}, 4, {dtype = "float64"}), 1e-12)
  end)
end)

describe("F.linear fused: composed fallback", function()
  it("integer tensors take the composed path", function()
    local x = ember.tensor({{1, 2}, {3, 4}})
    local w = ember.tensor({{1, 1}, {0, 2}})
    h.check(F.linear(x, w, ember.tensor({1, -1})), {{4, 3}, {8, 7}})
  end)

  it("empty products: K = 0 gives act(bias), M = 0 an empty result", function()
    local b = ember.tensor({0.5, -1}, {dtype = "float64"})
    h.check(F.linear(ember.zeros(3, 0, {dtype = "float64"}), ember.zeros(2, 0, {dtype = "float64"}), b),
            {{0.5, -1}, {0.5, -1}, {0.5, -1}})
    h.check_shape(F.linear(ember.zeros(0, 4), ember.zeros(2, 4), nil, {activation = "gelu_tanh"}), {0, 2})
  end)
end)

describe("F.linear fused: bad input", function()
  it("names the shapes when the last dim does not match, at the caller's line", function()
    local e = err(function() local y = F.linear(ember.ones(2, 3), ember.ones(4, 5)); return y end)
    has(e, "linear_fused_spec.lua:"); has(e, "linear: input [2, 3] and weight [4, 5]")
  end)

  it("a bias of the wrong shape", function()
    local e = err(function() local y = F.linear(ember.ones(2, 3), ember.ones(4, 3), ember.ones(3)); return y end)
    has(e, "linear_fused_spec.lua:"); has(e, "linear: bias [3] and weight [4,3]: expected a bias of shape [4]")
  end)

  it("a weight that is not 2-D", function()
    local e = err(function() local y = F.linear(ember.ones(2, 3), ember.ones(3)); return y end)
    has(e, "expected a 2-D weight [out_features, in_features], got [3]")
  end)

  it("mixed dtypes", function()
    local e = err(function() local y = F.linear(ember.ones(2, 3), ember.ones(4, 3, {dtype = "float64"})); return y end)
    has(e, "linear: input (float32) and weight (float64) must have one dtype")
    e = err(function()
      local y = F.linear(ember.ones(2, 3), ember.ones(4, 3), ember.ones(4, {dtype = "bfloat16"})); return y
    end)
    has(e, "linear: input (float32), weight (float32) and bias (bfloat16) must have one dtype")
  end)

  it("gelu on integer tensors", function()
    local e = err(function()
      local y = F.linear(ember.ones(2, 3, {dtype = "int64"}), ember.ones(4, 3, {dtype = "int64"}), nil,
                         {activation = "gelu_tanh"}); return y
    end)
    has(e, "linear: the gelu activation needs floating point tensors, got int64")
  end)

  it("unknown or exact-GELU activations, unknown options, bias given twice", function()
    local x, w = ember.ones(2, 3), ember.ones(4, 3)
    has(err(function() local y = F.linear(x, w, nil, {activation = "relu"}); return y end),
        "linear: activation must be \"none\" or \"gelu_tanh\", got relu")
    has(err(function() local y = F.linear(x, w, nil, {activation = "gelu"}); return y end),
        "has no fused form: use \"gelu_tanh\"")
    has(err(function() local y = F.linear(x, w, nil, {act = "gelu_tanh"}); return y end), "unknown option 'act'")
    has(err(function() local y = F.linear(x, w, ember.ones(4), {bias = ember.ones(4)}); return y end),
        "linear: got multiple values for argument 'bias'")
    has(err(function() local y = F.linear(x, "w"); return y end), "linear: weight must be a tensor, got string")
  end)
end)
