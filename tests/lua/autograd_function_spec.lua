-- autograd_function_spec.lua — ember.autograd.Function (custom forward/backward in Lua)
-- and ember.autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp). Expected values
-- are hand derivatives, gradcheck's finite differences, or the same function written
-- with built-in ops.
local ember = require "ember"
local autograd = ember.autograd
local Function = autograd.Function

local function close(a, b, tol)
  tol = tol or 1e-6
  assert.are.same(tostring(a.shape), tostring(b.shape))
  local d = (a:to("float64") - b:to("float64")):abs():max():item()
  assert(d <= tol, string.format("max difference %g > %g\n%s\n%s", d, tol, tostring(a), tostring(b)))
end

local function f64(data) return ember.tensor(data, {dtype = "float64"}) end

-- exp(x), saving its output
local Exp = Function:extend("Exp")
function Exp.forward(ctx, x)
  local y = x:exp()
  ctx:save_for_backward(y)
  return y
end
function Exp.backward(ctx, g)
  local y = table.unpack(ctx.saved_tensors)
  return g * y
end

-- x * s for a Lua number s, recording which inputs need a gradient
local Scale = Function:extend("Scale")
function Scale.forward(ctx, x, s)
  ctx.s = s
  ctx.seen = {ctx.needs_input_grad[1], ctx.needs_input_grad[2]}
  return x * s
end
function Scale.backward(ctx, g) return g * ctx.s, nil end

-- two outputs: a * b and a + b; backward reports what it received
local ProdSum = Function:extend("ProdSum")
function ProdSum.forward(ctx, a, b)
  ctx:save_for_backward(a, b)
  return a * b, a + b
end
function ProdSum.backward(ctx, gp, gs)
  local a, b = table.unpack(ctx.saved_tensors)
  ctx.got = {gp, gs}
  local ga, gb = nil, nil
  if gp then ga, gb = gp * b, gp * a end
  if gs then ga, gb = (ga and ga + gs or gs), (gb and gb + gs or gs) end
  return ga, gb
end

-- x^3 with a differentiable backward (3 x^2 g): second derivatives work
local Cube = Function:extend("Cube")
function Cube.forward(ctx, x)
  ctx:save_for_backward(x)
  return x * x * x
end
function Cube.backward(ctx, g)
  local x = ctx.saved_tensors[1]
  return g * 3 * x * x
end

describe("autograd.Function", function()
  it("gives the gradient its backward computes, checked against finite differences", function()
    local x = ember.randn(3, 4, {dtype = "float64"}):requires_grad_()
    local y = Exp.apply(x)
    assert.are.equal("ExpBackward", y.grad_fn)
    y:sum():backward()
    close(x.grad, x:detach():exp())
    assert.is_true(autograd.gradcheck(function(t) return Exp.apply(t) end, {ember.randn(5, {dtype = "float64"})}))
    -- Class(...) is Class.apply(...)
    close(Exp(ember.zeros(2)), ember.ones(2))
  end)

  it("passes non-tensor arguments through and sets needs_input_grad", function()
    local x = ember.randn(3):requires_grad_()
    local ctxs = {}
    local Probe = Function:extend("Probe")
    function Probe.forward(ctx, a, s) ctxs[1] = ctx; return a * s end
    function Probe.backward(ctx, g) return g * 2, nil end
    Probe.apply(x, 2)
    assert.are.same({true, false}, ctxs[1].needs_input_grad)
    local y = Scale.apply(x, 5)
    y:sum():backward()
    close(x.grad, ember.full({3}, 5))
  end)

  it("runs forward without recording and returns plain results when nothing requires grad", function()
    local y = Exp.apply(ember.ones(2))
    assert.is_false(y.requires_grad)
    assert.is_nil(y.grad_fn)
    local x = ember.ones(2):requires_grad_()
    local z = ember.no_grad(function() return Exp.apply(x) end)
    assert.is_false(z.requires_grad)
    local Inner = Function:extend("Inner")
    local mode
    function Inner.forward(_, a) mode = ember.is_grad_enabled(); return a * 2 end
    function Inner.backward(_, g) return g * 2 end
    Inner.apply(x)
    assert.is_false(mode)       -- forward runs with recording off
  end)

  it("handles several outputs: each output's gradient reaches one backward call", function()
    local a = f64({1, 2, 3}):requires_grad_()
    local b = f64({4, 5, 6}):requires_grad_()
    local p, s = ProdSum.apply(a, b)
    assert.are.equal("ProdSumBackward", p.grad_fn)
    assert.are.equal("ProdSumBackward", s.grad_fn)
    local loss = (p * 2):sum() + (s * s):sum()
    loss:backward()
    -- d/da = 2 b + 2 (a + b); d/db = 2 a + 2 (a + b)
    close(a.grad, f64({2 * 4 + 2 * 5, 2 * 5 + 2 * 7, 2 * 6 + 2 * 9}))
    close(b.grad, f64({2 * 1 + 2 * 5, 2 * 2 + 2 * 7, 2 * 3 + 2 * 9}))
  end)

  it("materializes zeros for an output that got no gradient, or gives nil when told not to", function()
    local a = f64({1, 2}):requires_grad_()
    local b = f64({3, 4}):requires_grad_()
    local seen
    local P2 = Function:extend("P2")
    function P2.forward(ctx, x, y) ctx:save_for_backward(x, y); return x * y, x + y end
    function P2.backward(ctx, gp, gs) seen = {gp, gs}; return gp + gs, gp + gs end
    local p = P2.apply(a, b)
    p:sum():backward()
    close(seen[2], f64({0, 0}))
    close(a.grad, f64({1, 1}))
    local N = Function:extend("N")
    function N.forward(ctx, x, y) ctx:set_materialize_grads(false); return x * y, x + y end
    function N.backward(_, gp, gs) seen = {gp, gs}; return gp, gp end
    local _, s2 = N.apply(a, b)
    local q = select(1, N.apply(a, b))
    q:sum():backward()
    assert.is_nil(seen[2])
    assert.is_truthy(s2)
  end)

  it("never reuses a gradient stashed in an earlier pass (retain_graph, one output at a time)", function()
    local x = f64({1, 2}):requires_grad_()
    local calls = {}
    local Two = Function:extend("Two")
    function Two.forward(_, t) return t * 1, t * 1 end
    function Two.backward(_, g1, g2)
      calls[#calls + 1] = {g1:sum():item(), g2:sum():item()}
      return g1 * 10 + g2 * 100
    end
    local y1, y2 = Two.apply(x)
    local both = y1 + y2        -- keeps the graph shared
    y1:sum():backward({retain_graph = true})
    y2:sum():backward()
    assert.are.same({{2, 0}, {0, 2}}, calls)
    close(x.grad, f64({110, 110}))
    assert.is_truthy(both)
  end)

  it("returns outputs marked non-differentiable without a gradient", function()
    local SortF = Function:extend("SortF")
    function SortF.forward(ctx, x)
      local v, i = x:sort()
      ctx:mark_non_differentiable(i)
      ctx:save_for_backward(i)
      ctx.n = x:numel()
      return v, i
    end
    function SortF.backward(ctx, gv)
      local i = ctx.saved_tensors[1]
      return ember.zeros(ctx.n, {dtype = gv.dtype}):scatter(1, i, gv)
    end
    local x = f64({3, 1, 2}):requires_grad_()
    local v, i = SortF.apply(x)
    assert.is_true(v.requires_grad)
    assert.is_false(i.requires_grad)
    close(v, f64({1, 2, 3}))
    ;(v * f64({1, 10, 100})):sum():backward()
    close(x.grad, f64({100, 1, 10}))
  end)

  it("refuses an integer output that is not marked non-differentiable", function()
    local Bad = Function:extend("Bad")
    function Bad.forward(_, x) return x:argmax() end
    function Bad.backward(_, g) return g end
    local ok, err = pcall(function() local y = Bad.apply(ember.ones(3):requires_grad_()); return y end)
    assert.is_false(ok)
    assert.matches("^[^:]*autograd_function_spec.lua:%d+: autograd.Function BadBackward: output 1 has dtype int64 "
                   .. "and cannot require grad; mark it with ctx:mark_non_differentiable", err)
  end)

  it("rebases the history of an input modified in place (mark_dirty)", function()
    local AddOne = Function:extend("AddOne")
    function AddOne.forward(ctx, x)
      x:add_(1)
      ctx:mark_dirty(x)
      return x
    end
    function AddOne.backward(_, g) return g end
    local leaf = f64({1, 2}):requires_grad_()
    local x = leaf * 1
    local y = AddOne.apply(x)
    assert.are.equal("AddOneBackward", y.grad_fn)
    assert.are.equal("AddOneBackward", x.grad_fn)    -- the same tensor, new history
    ;(y * y):sum():backward()
    close(leaf.grad, f64({4, 6}))                    -- 2 (leaf + 1)
    local err = select(2, pcall(function() local z = AddOne.apply(f64({1}):requires_grad_()); return z end))
    assert.matches("a leaf tensor that requires grad %(input 1%) was modified in place", err)
    local NotReturned = Function:extend("NotReturned")
    function NotReturned.forward(ctx, a) a:add_(1); ctx:mark_dirty(a); return a * 2 end
    function NotReturned.backward(_, g) return g end
    err = select(2, pcall(function() local z = NotReturned.apply(f64({1}):requires_grad_() * 1); return z end))
    assert.matches("autograd_function_spec.lua:%d+: autograd.Function NotReturnedBackward: a tensor given to "
                   .. "mark_dirty is not returned by forward", err)
  end)

  it("returns an input given back unchanged as a new tensor, leaving the input's history alone", function()
    local Id = Function:extend("Id")
    function Id.forward(_, x) return x end
    function Id.backward(_, g) return g * 3 end
    local leaf = f64({1, 2}):requires_grad_()
    local x = leaf * 2
    local y = Id.apply(x)
    assert.are.equal("IdBackward", y.grad_fn)
    assert.are.equal("MulBackward", x.grad_fn)
    y:sum():backward()
    close(leaf.grad, f64({6, 6}))
  end)

  it("sums a broadcast gradient down to the input's shape and casts its dtype", function()
    local Wide = Function:extend("Wide")
    function Wide.forward(_, x) return x * 1 end
    function Wide.backward(_, g) return ember.ones(4, 3, {dtype = "float32"}) * g:sum() end
    local x = ember.ones(1, 3, {dtype = "float64"}):requires_grad_()
    Wide.apply(x):sum():backward()
    assert.are.equal("float64", x.grad.dtype)
    close(x.grad, f64({{12, 12, 12}}))
  end)

  it("gives clear errors for bad backward results", function()
    local x = ember.randn(3):requires_grad_()
    local function run(cls, ...) local y = cls.apply(...); y:sum():backward() end
    local Few = Function:extend("Few")
    function Few.forward(_, a, s) return a * s end
    function Few.backward(_, g) return g end
    assert.has_error(function() run(Few, x, 2) end)
    local ok, err = pcall(run, Few, x, 2)
    assert.is_false(ok)
    assert.matches("Few: backward returned 1 gradients; expected 2", err)
    -- one position: the line that started the backward pass
    assert.matches("^[^:]*autograd_function_spec.lua:%d+: autograd.Function Few:", err)
    local Shape = Function:extend("Shape")
    function Shape.forward(_, a) return a * 1 end
    function Shape.backward(_, g) return ember.ones(2) end
    ok, err = pcall(run, Shape, x)
    assert.matches("invalid gradient for input 1: got %[2%] but expected a shape compatible with %[3%]", err)
    local NumGrad = Function:extend("NumGrad")
    function NumGrad.forward(_, a, s) return a * s end
    function NumGrad.backward(_, g) return g, g end
    ok, err = pcall(run, NumGrad, x, 2)
    assert.matches("gradient for argument 2, which is not a tensor", err)
    local NotTensor = Function:extend("NotTensor")
    function NotTensor.forward(_, a) return a * 1 end
    function NotTensor.backward() return 3 end
    ok, err = pcall(run, NotTensor, x)
    assert.matches("returned a number as gradient 1", err)
    local Raises = Function:extend("Raises")
    function Raises.forward(_, a) return a * 1 end
    function Raises.backward() error("custom failure") end
    ok, err = pcall(run, Raises, x)
    assert.matches("custom failure", err)
    local Incomplete = Function:extend("Incomplete")
    function Incomplete.forward(_, a) return a end
    ok, err = pcall(function() local y = Incomplete.apply(x); return y end)
    assert.matches("define both Incomplete.forward", err)
  end)

  it("refuses a bad class name, a non-function for once_differentiable, and a double backward through a "
     .. "saved output of a function with several outputs", function()
    local ok, e = pcall(function() local c = Function:extend(3); return c end)
    assert.is_false(ok)
    assert.matches("autograd_function_spec.lua:%d+: autograd.Function:extend: expected a class name %(a string%), "
                   .. "got number", e)
    ok, e = pcall(function() local f = autograd.once_differentiable("x"); return f end)
    assert.matches("once_differentiable: expected a function, got string", e)
    local Two = Function:extend("TwoSaved")
    function Two.forward(ctx, x)
      local a, b = x * x, x * 3
      ctx:save_for_backward(a)
      return a, b
    end
    function Two.backward(ctx, ga, gb) return ga * ctx.saved_tensors[1] + gb * 3 end
    local x = f64({1, 2}):requires_grad_()
    local a, b = Two.apply(x)
    -- first order works ...
    local g = autograd.grad((a + b):sum(), x, {retain_graph = true})
    close(g, f64({4, 7}))
    -- ... a recorded backward through the saved output is refused, not silently wrong
    ok, e = pcall(function() local r = autograd.grad((a + b):sum(), x, {create_graph = true}); return r end)
    assert.is_false(ok)
    assert.matches("TwoSavedBackward: a double backward through a saved output of a function with several "
                   .. "outputs is not supported", e)
  end)

  it("refuses saved_tensors in forward and non-tensors in save_for_backward", function()
    local Early = Function:extend("Early")
    function Early.forward(ctx, a) local s = ctx.saved_tensors; return a * 1, s end
    function Early.backward(_, g) return g end
    local ok, err = pcall(Early.apply, ember.ones(1):requires_grad_())
    assert.is_false(ok)
    assert.matches("only readable in backward", err)
    local Bad = Function:extend("BadSave")
    function Bad.forward(ctx, a) ctx:save_for_backward(a, 3); return a * 1 end
    function Bad.backward(_, g) return g end
    ok, err = pcall(Bad.apply, ember.ones(1):requires_grad_())
    assert.matches("save_for_backward: argument 2 is a number", err)
  end)

  it("detects a saved tensor modified in place and a second backward without retain_graph", function()
    local x = f64({1, 2}):requires_grad_()
    local h = x * 1
    local y = Cube.apply(h)
    ember.no_grad(function() h:add_(1) end)
    local ok, err = pcall(function() y:sum():backward() end)
    assert.is_false(ok)
    assert.matches("modified by an in%-place operation", err)
    local z = Cube.apply(x)
    z:sum():backward()
    ok, err = pcall(function() z:sum():backward() end)
    assert.matches("backward through the graph a second time", err)
    local w = Cube.apply(x)
    w:sum():backward({retain_graph = true})
    w:sum():backward()
  end)

  it("records a differentiable backward: second derivatives by gradgradcheck", function()
    local x = f64({0.5, -1.5, 2})
    assert.is_true(autograd.gradcheck(function(t) return Cube.apply(t) end, {x}))
    assert.is_true(autograd.gradgradcheck(function(t) return Cube.apply(t) end, {x}))
    local xr = x:clone():requires_grad_()
    local g = autograd.grad(Cube.apply(xr):sum(), xr, {create_graph = true})
    local gg = autograd.grad(g:sum(), xr)
    close(gg, x * 6)
  end)

  it("once_differentiable runs backward without recording and refuses a double backward", function()
    local Sq = Function:extend("Sq")
    function Sq.forward(ctx, x) ctx:save_for_backward(x); return x * x end
    Sq.backward = autograd.once_differentiable(function(ctx, g)
      assert(not ember.is_grad_enabled())
      return g * 2 * ctx.saved_tensors[1]
    end)
    local x = f64({1, 3}):requires_grad_()
    Sq.apply(x):sum():backward()
    close(x.grad, f64({2, 6}))
    -- a gradient that itself requires grad flows into Sq's backward: its results are guarded
    local g = autograd.grad((Sq.apply(x) * x):sum(), x, {create_graph = true})
    close(g, f64({3, 27}))                            -- 2x * x + x^2
    assert.is_true(g.requires_grad)
    local ok, err = pcall(function() local r = autograd.grad(g:sum(), x); return r end)
    assert.is_false(ok)
    assert.matches("differentiate twice", err)
  end)

  it("lets the gradient reach an input through another path when its backward returns nil", function()
    -- the engine must still count a node nothing flowed into, or b would wait for ever
    local Cut = Function:extend("Cut")
    function Cut.forward(_, t) return t * 1 end
    function Cut.backward() return nil end
    local a = f64({1, 2}):requires_grad_()
    local b = a * 2
    local e = b + 1
    local c = Cut.apply(e)
    local d = b * 3
    ;(c + d):sum():backward()
    close(a.grad, f64({6, 6}))
  end)
end)

describe("autograd.functional", function()
  local F = autograd.functional
  local A = f64({{1, 2, 3}, {4, 5, 6}})

  it("jacobian of x^2 is diag(2x); of A x is A; several inputs give one block each", function()
    local x = f64({1, -2, 3})
    close(F.jacobian(function(t) return t * t end, x), ember.diag and ember.diag(x * 2) or
          f64({{2, 0, 0}, {0, -4, 0}, {0, 0, 6}}))
    close(F.jacobian(function(t) return A:matmul(t) end, x), A)
    local J = F.jacobian(function(a, b) return a * b end, {f64({1, 2}), f64({3, 4})})
    close(J[1], f64({{3, 0}, {0, 4}}))
    close(J[2], f64({{1, 0}, {0, 2}}))
    -- several outputs: a list per output
    local JJ = F.jacobian(function(t) return t:sum(), t * 2 end, f64({1, 2}))
    close(JJ[1], f64({1, 1}))
    close(JJ[2], f64({{2, 0}, {0, 2}}))
    -- shape: output.shape .. input.shape
    local J3 = F.jacobian(function(t) return t:t() end, ember.ones(2, 3, {dtype = "float64"}))
    assert.are.same({3, 2, 2, 3}, {table.unpack(J3.shape)})
  end)

  it("jacobian gives zeros for an unused input, or an error with strict", function()
    local J = F.jacobian(function(a, b) return a * 2 end, {f64({1}), f64({1})})
    close(J[2], f64({{0}}))
    local ok, err = pcall(F.jacobian, function(a, b) return a * 2 end, {f64({1}), f64({1})}, {strict = true})
    assert.is_false(ok)
    assert.matches("does not depend on input 2", err)
  end)

  it("hessian of sum(x^3) is diag(6x); of x^T A x is A + A^T", function()
    local x = f64({1, 2})
    close(F.hessian(function(t) return (t * t * t):sum() end, x), f64({{6, 0}, {0, 12}}))
    local M = f64({{1, 2}, {3, 4}})
    close(F.hessian(function(t) return t:matmul(M:matmul(t)) end, x), M + M:t())
    local H = F.hessian(function(a, b) return (a * a * b):sum() end, {f64({2}), f64({3})})
    -- d2/da2 = 2b, d2/dadb = 2a, d2/db2 = 0
    close(H[1][1], f64({{6}}))
    close(H[1][2], f64({{4}}))
    close(H[2][1], f64({{4}}))
    close(H[2][2], f64({{0}}))
  end)

  it("vjp, jvp, hvp and vhp match J and H applied by hand", function()
    local x = f64({1, 2, 3})
    local f = function(t) return A:matmul(t * t) end    -- J = A diag(2x)
    local J = A * (x * 2)
    local out, vj = F.vjp(f, x, f64({1, -1}))
    close(out, A:matmul(x * x))
    close(vj, f64({1, -1}):matmul(J))
    local out2, jv = F.jvp(f, x, f64({1, 0, 2}))
    close(out2, A:matmul(x * x))
    close(jv, J:matmul(f64({1, 0, 2})))
    local g = function(t) return (t * t * t):sum() end  -- H = diag(6x)
    local val, hv = F.hvp(g, x, f64({1, 1, -1}))
    close(val, f64(36):reshape({}))
    close(hv, f64({6, 12, -18}))
    local val2, vh = F.vhp(g, x, f64({1, 1, -1}))
    close(val2, val)
    close(vh, hv)
    local _, vs = F.vjp(function(t) return t:sum() end, x)
    close(vs, f64({1, 1, 1}))
  end)

  it("create_graph keeps the results differentiable in the caller's inputs", function()
    local x = f64({1, 2}):requires_grad_()
    local _, vj = F.vjp(function(t) return (t * t * t):sum() end, x, nil, {create_graph = true})
    assert.is_true(vj.requires_grad)
    local g = autograd.grad(vj:sum(), x)
    close(g, x:detach() * 6)
    local _, plain = F.vjp(function(t) return (t * t):sum() end, x)
    assert.is_false(plain.requires_grad)
  end)

  it("gives clear errors for bad arguments", function()
    local x = f64({1, 2})
    local ok, err = pcall(F.jacobian, function(t) return t end, 3)
    assert.matches("expected a tensor or a list of tensors as inputs, got number", err)
    ok, err = pcall(F.vjp, function(t) return t * 2 end, x, f64({1, 2, 3}))
    assert.matches("v 1 has shape", err)
    ok, err = pcall(F.vjp, function(t) return t * 2 end, x)
    assert.matches("v can be omitted only", err)
    ok, err = pcall(F.hessian, function(t) return t * 2 end, x)
    assert.matches("must return a single tensor with one element", err)
    ok, err = pcall(F.jacobian, function() return 3 end, x)
    assert.matches("result 1 is a number", err)
    assert.is_false(ok)
  end)
end)
