-- autograd_spec.lua — the tape: every differentiable op against central
-- finite differences in float64 (ember.autograd.gradcheck), with
-- broadcasting and non-contiguous inputs; accumulation, retain_grad, hooks,
-- no_grad, detach, higher-order gradients, and the errors.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

local gradcheck = ember.autograd.gradcheck

local function check(name, fn, inputs, opts)
  it(name, function()
    ember.manual_seed(1234)
    local ok, report = gradcheck(fn, inputs(), opts)
    assert(ok, report)
  end)
end

local function R(...) return ember.randn(...) end
local function P(...) return ember.rand(...) + 0.5 end     -- positive, away from 0
local function T(...) return ember.randn(...):t() end      -- non-contiguous

describe("gradcheck: elementwise", function()
  check("neg abs exp", function(x) return (-x):abs() + x:exp() end, function() return {R(3, 4)} end)
  check("log log1p sqrt rsqrt", function(x) return x:log() + x:log1p() + x:sqrt() + x:rsqrt() end,
    function() return {P(2, 3)} end)
  check("expm1 sin cos tanh sigmoid", function(x) return x:expm1() + x:sin() * x:cos() + x:tanh() + x:sigmoid() end,
    function() return {R(4)} end)
  check("relu gelu silu", function(x) return x:relu() + x:gelu() + x:silu() end,
    function() return {R(5, 3) + 0.01} end)
  check("reciprocal square", function(x) return x:reciprocal() + x:square() end, function() return {P(3)} end)
  check("add sub mul div with broadcasting", function(a, b) return (a + b) * (a - b) / (b * b + 1) end,
    function() return {R(3, 1), R(1, 4)} end)
  check("pow of two tensors", function(a, b) return a ^ b end, function() return {P(2, 3), R(2, 3)} end)
  check("numbers on either side", function(a) return 2 - a * 3 + a / 4 + 1 / (a + 3) + a ^ 2 + 2 ^ a end,
    function() return {P(3)} end)
  -- a number as exponent: the exponents with loops of their own (0, 1, 2, 3, -1, -2, 0.5,
  -- -0.5) and two that go through pow() (4, 2.5)
  check("pow with a number as exponent", function(a)
    local r = a:pow(0)
    for _, e in ipairs({1, 2, 3, -1, -2, 0.5, -0.5, 4, 2.5}) do r = r + a:pow(e) end
    return r
  end, function() return {P(2, 3)} end)
  check("maximum minimum", function(a, b) return a:maximum(b) + a:minimum(b) end,
    function() return {R(4), R(4)} end)
  check("clamp", function(a) return a:clamp(-0.5, 0.5) end, function() return {R(10)} end)
  check("where and masked_fill", function(a, b)
    local c = ember.tensor{true, false, true}
    return ember.where(c, a, b) + a:masked_fill(c, 2)
  end, function() return {R(2, 3), R(3)} end)
  check("non-contiguous operands", function(a, b) return a * b + a end, function() return {T(3, 4), R(4, 3)} end)
  check("remainder", function(a, b) return a % b end, function() return {P(5) * 3, P(5)} end)
end)

describe("gradcheck: reductions", function()
  check("sum over all, one and several dims", function(x) return x:sum() + x:sum(2):sum() + x:sum({1, 3}, true):sum() end,
    function() return {R(2, 3, 4)} end)
  check("mean var std", function(x) return x:mean(1) + x:var(1) + x:std(1) end, function() return {R(4, 3)} end)
  check("prod", function(x) return x:prod(2) end, function() return {P(3, 4)} end)
  check("amax amin", function(x) return x:amax(1) + x:amin(2):sum() end, function() return {R(3, 5)} end)
  check("max and min with a dim", function(x)
    local v = x:max(2)
    local w = x:min(1, true)
    return v:sum() + w:sum()
  end, function() return {R(3, 4)} end)
  check("norm", function(x) return x:norm() + x:norm(1, 1):sum() + x:norm(3, 2):sum() end,
    function() return {R(3, 4)} end)
  check("logsumexp", function(x) return x:logsumexp(2) end, function() return {R(3, 4) * 3} end)
  check("softmax log_softmax", function(x) return x:softmax(2) * x:log_softmax(1) end,
    function() return {R(3, 4)} end)
  check("cumsum", function(x) return x:cumsum(2) end, function() return {R(2, 5)} end)
end)

describe("gradcheck: views and shapes", function()
  check("view reshape t transpose permute", function(x)
    return x:view(6, 4):t():reshape(2, 12):sum(1):sum() + x:permute(3, 1, 2):transpose(1, 2):sum(3):sum(2)
  end, function() return {R(2, 3, 4)} end)
  check("narrow select slice", function(x) return x:narrow(2, 2, 2):sum() + x:select(1, 2) + x:slice(2, 1, 4, 2):sum() end,
    function() return {R(3, 4)} end)
  check("indexing with t[i] and t[{...}]", function(x) return x[2] + x[{{1, 3, 2}, 2}]:sum() end,
    function() return {R(3, 4)} end)
  check("expand squeeze unsqueeze flatten", function(x)
    return x:unsqueeze(1):expand(3, 2, 4):flatten():sum() + x:unsqueeze(3):squeeze(3)
  end, function() return {R(2, 4)} end)
  check("unfold with overlapping windows", function(x) return x:unfold(1, 3, 1) end, function() return {R(6)} end)
  check("diagonal contiguous clone", function(x) return x:diagonal() + x:t():contiguous():clone():sum(1) end,
    function() return {R(3, 3)} end)
  check("diagonal with an offset", function(x) return x:diagonal(1) * 2 + x:diagonal(-2):sum() end,
    function() return {R(3, 4)} end)
  -- through float32 the finite differences need a larger step
  check("dtype conversions", function(x) return x:float():double() * 2 end, function() return {R(3)} end,
    {eps = 1e-2, atol = 1e-3, rtol = 1e-3})
end)

describe("gradcheck: linear algebra and indexing", function()
  check("matmul 2-D @ 2-D", function(a, b) return a:matmul(b) end, function() return {R(3, 4), R(4, 2)} end)
  check("matmul with vectors", function(a, b, v) return a:matmul(v) + v:matmul(b:t()) + v:dot(v) end,
    function() return {R(3, 4), R(3, 4), R(4)} end)
  check("batched matmul with broadcast batch", function(a, b) return a:matmul(b) end,
    function() return {R(2, 1, 3, 4), R(5, 4, 2)} end)
  check("mm bmm addmm outer", function(a, b, c)
    return a:mm(b):sum() + ember.addmm(c, a, b, {beta = 0.5, alpha = 2}):sum() + a:narrow(1, 1, 1):squeeze(1):outer(c):sum()
  end, function() return {R(2, 3), R(3, 2), R(2)} end)
  check("index_select gather with repeated indices", function(x)
    local i = ember.tensor{3, 1, 3}
    return x:index_select(1, i):sum(2) + x:gather(2, ember.tensor{{1, 1}, {2, 3}, {4, 4}}):sum(2)
  end, function() return {R(3, 4)} end)
  check("cat stack split chunk", function(a, b)
    local c = ember.cat({a, b}, 2)
    local s1, s2 = c:split(3, 2)
    local k1 = c:chunk(2, 1)
    return ember.stack({a, b}, 1):sum(1) + s1:sum(2, true) + s2:sum() + k1:sum()
  end, function() return {R(2, 3), R(2, 3)} end)
  check("masked_select and boolean indexing", function(x)
    local m = ember.tensor{{true, false, true}, {false, true, true}}
    return x:masked_select(m) * 2 + x[m]
  end, function() return {R(2, 3)} end)
  check("sort and topk values", function(x)
    local v = x:sort(2)
    local t = x:topk(2, 1)
    return v:sum(1) + t:sum()
  end, function() return {R(3, 4)} end)
end)

describe("the tape", function()
  it("accumulates into .grad across backward calls and zeroes with grad = nil", function()
    local x = ember.tensor({1.0, 2.0}, {requires_grad = true});
    (x * 3):sum():backward();
    (x * x):sum():backward()
    assert.are.same({5, 7}, x.grad:tolist())      -- 3 + 2x
    x.grad = nil
    assert.is_nil(x.grad)
  end)

  it("leaves, non-leaves and grad_fn", function()
    local x = ember.ones(2, {requires_grad = true})
    local y = x * 2
    assert.is_true(x.is_leaf)
    assert.is_false(y.is_leaf)
    assert.are.equal("MulBackward", y.grad_fn)
    assert.is_nil(x.grad_fn)
    assert.is_false(ember.ones(2).requires_grad)
    assert.is_true(y.requires_grad)
  end)

  it("a tensor used twice gets the sum of both paths", function()
    local x = ember.tensor({2.0}, {requires_grad = true})
    local y = x * x + x * 3     -- dy/dx = 2x + 3 = 7
    y:sum():backward()
    assert.are.same({7}, x.grad:tolist())
  end)

  it("backward of a non-scalar needs a gradient", function()
    local x = ember.ones(3, {requires_grad = true})
    local y = x * 2
    has(err(y.backward, y), "grad can be implicitly created only for scalar outputs")
    y:backward(ember.tensor{1.0, 0.0, 2.0})
    assert.are.same({2, 0, 4}, x.grad:tolist())
  end)

  it("retain_grad keeps a non-leaf's gradient", function()
    local x = ember.tensor({1.0, 2.0}, {requires_grad = true})
    local y = x * 2
    y:retain_grad();
    (y * y):sum():backward()
    assert.are.same({4, 8}, y.grad:tolist())       -- 2y
    assert.are.same({8, 16}, x.grad:tolist())
  end)

  it("hooks see and may replace gradients", function()
    local x = ember.tensor({1.0, 2.0}, {requires_grad = true})
    local seen
    x:register_hook(function(g) seen = g:tolist(); return g * 10 end)
    local y = x * 3
    y:register_hook(function(g) return g + 1 end)
    y:sum():backward()
    assert.are.same({6, 6}, seen)                  -- (1 + 1) * 3
    assert.are.same({60, 60}, x.grad:tolist())
    has(err(function()
      local z = ember.ones(1, {requires_grad = true})
      z:register_hook(function() error("boom") end)
      z:sum():backward()
    end), "boom")
  end)

  it("no_grad as a function and as a <close> guard", function()
    local x = ember.ones(2, {requires_grad = true})
    local y = ember.no_grad(function() return x * 2 end)
    assert.is_false(y.requires_grad)
    do
      local _ <close> = ember.no_grad()
      assert.is_false(ember.is_grad_enabled())
      assert.is_false((x * 2).requires_grad)
    end
    assert.is_true(ember.is_grad_enabled())
    pcall(ember.no_grad, function() error("inside") end)
    assert.is_true(ember.is_grad_enabled())        -- restored after an error
  end)

  it("detach cuts the graph and shares memory", function()
    local x = ember.ones(2, {requires_grad = true})
    local d = (x * 2):detach()
    assert.is_false(d.requires_grad)
    assert.is_true(d.is_leaf)
  end)

  it("second derivatives with create_graph", function()
    local x = ember.tensor({1.0, 2.0}, {requires_grad = true, dtype = "float64"})
    local y = (x ^ 3):sum()
    local g = ember.autograd.grad(y, x, {create_graph = true})   -- 3x^2
    assert.are.same({3, 12}, g:tolist())
    local g2 = ember.autograd.grad(g:sum(), x)                   -- 6x
    assert.are.same({6, 12}, g2:tolist())
    assert.is_nil(x.grad)                                        -- autograd.grad does not accumulate
  end)

  it("autograd.grad returns one gradient per input and checks unused inputs", function()
    local a = ember.ones(2, {requires_grad = true})
    local b = ember.ones(2, {requires_grad = true})
    local c = ember.ones(2, {requires_grad = true})
    local ga, gb = ember.autograd.grad((a * 2 + b):sum(), {a, b})
    assert.are.same({2, 2}, ga:tolist())
    assert.are.same({1, 1}, gb:tolist())
    has(err(ember.autograd.grad, (a * 2):sum(), {a, c}), "input 2 was not used")
    local ga2, gc = ember.autograd.grad((a * 2):sum(), {a, c}, {allow_unused = true})
    assert.are.same({2, 2}, ga2:tolist())
    assert.is_nil(gc)
  end)
end)

describe("errors", function()
  it("in-place changes to saved tensors are detected", function()
    local x = ember.ones(3, {requires_grad = true})
    local y = x * 2
    local z = y:exp()                 -- saves its output
    local w = y:detach()
    w:add_(1)                         -- the same storage as y
    has(err(function() (z * y):sum():backward() end), "modified by an in-place operation")
  end)

  it("only what a backward reads is saved (as in PyTorch: add saves nothing, mul its other operand)", function()
    local w = ember.ones(3, {requires_grad = true})
    local a = ember.tensor({1, 2, 3})
    local y = a + w
    a:add_(10)                        -- add's backward never reads a: allowed
    y:sum():backward()
    assert.are.same({1, 1, 1}, w.grad:tolist())
    local b = ember.tensor({1, 2, 3})
    local z = b * w
    b:add_(10)                        -- mul's gradient for w is b: refused
    has(err(function() z:sum():backward() end), "modified by an in-place operation")
    local c = ember.tensor({2, 4, 8})
    local q = w / c
    w.grad = nil
    q:sum():backward()
    assert.are.same({0.5, 0.25, 0.125}, w.grad:tolist())
  end)

  it("in-place ops on tensors that require grad are refused", function()
    local x = ember.ones(2, {requires_grad = true})
    has(err(x.add_, x, 1), "add_: in-place operation on a tensor that requires grad")
    has(err(x.fill_, x, 1), "fill_")
    has(err(function() x[1] = 5 end), "requires grad")
    ember.no_grad(function() x:add_(1) end)       -- allowed: how optimizers update
    assert.are.same({2, 2}, x:tolist())
  end)

  it("a second backward through freed buffers says so", function()
    local x = ember.ones(2, {requires_grad = true})
    local y = (x:exp()):sum()
    y:backward()
    has(err(y.backward, y), "backward through the graph a second time")
    local z = (x:exp()):sum()
    z:backward({retain_graph = true})
    z:backward()
    assert.is_true(x.grad ~= nil)
  end)

  it("only float tensors can require grad", function()
    has(err(ember.zeros, 2, {dtype = "int64", requires_grad = true}), "only floating point tensors")
    has(err(function() ember.arange(3).requires_grad = true end), "only floating point tensors")
  end)

  it("bad arguments to the autograd API name what was expected", function()
    has(err(ember.zeros, 2, {requires_grad = 1}), "option 'requires_grad': expected a boolean")
    local x = ember.ones(2, {requires_grad = true})
    has(err(function() x.grad = ember.ones(3) end), "grad: assigned gradient of size [3] does not match the tensor's size [2]")
    has(err(function() x.grad = ember.ones(2, {dtype = "float64"}) end), "assigned gradient has dtype float64")
    has(err(function() x:register_hook(5) end), "register_hook: argument 1: expected a function")
    has(err(ember.no_grad, 5), "ember.no_grad: argument 1: expected a function")
    assert.is_true(ember.is_grad_enabled())
    local y = x * 2
    has(err(y.backward, y, ember.ones(3)), "backward: gradient of size [3] given for an output of size [2]")
    has(err(ember.autograd.grad, y, x, {grad_outputs = {ember.ones(2), ember.ones(2)}}),
      "autograd.grad: 2 grad_outputs given for 1 outputs")
    has(err(ember.autograd.grad, y, {x, 3}), "entry 2 of inputs is not a tensor")
    has(err(ember.autograd.grad, y, ember.ones(2)), "input 1 does not require grad")
  end)

  it("backward on a tensor that does not require grad", function()
    local t = ember.ones(1)
    has(err(t.backward, t), "does not require grad")
  end)
end)

describe("detach_", function()
  it("makes the tensor itself a leaf without grad, keeping .grad; other tensors keep their graph", function()
    local x = ember.ones(3, {requires_grad = true})
    ;(x * 2):sum():backward()
    assert.is_true(rawequal(x:detach_(), x))
    assert.is_false(x.requires_grad)
    assert.are.same({2, 2, 2}, x.grad:tolist())
    local a = ember.ones(3, {requires_grad = true})
    local b = a * 3
    local alias = b
    b:detach_()
    assert.is_false(alias.requires_grad)
    assert.is_true(b.is_leaf)
    assert.is_nil(b.grad_fn)
    -- d(sum(b * a))/da with b a constant 3 now
    ;(b * a):sum():backward()
    assert.are.same({3, 3, 3}, a.grad:tolist())
  end)

  it("refuses a recorded view, naming the op that made it", function()
    local v = (ember.ones(4, {requires_grad = true}) * 2):narrow(1, 2, 2)
    local ok, e = pcall(function() local _ = v:detach_() end)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("detach_: can't detach views in-place (this one was made by NarrowBackward)", 1, true),
                  tostring(e))
    assert.truthy(tostring(e):find("autograd_spec.lua:", 1, true), tostring(e))
    assert.is_true(v.requires_grad)
  end)
end)
