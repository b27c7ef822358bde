-- func_spec.lua — ember.func (torch.func) and ember.cond / while_loop: gradients,
-- Jacobians and Hessians against closed forms, vjp / jvp against the Jacobian, nesting
-- (grad of grad, a MAML step differentiated), vmap against explicit loops and per-sample
-- gradients against their formula, functional_call against the module with its own
-- tensors replaced by hand, an ensemble through stack_module_state, and the errors.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local func = ember.func

local function t(v) return ember.tensor(v, {dtype = "float64"}) end
local function close(what, got, want, tol) h.check_flat(got, h.flat(want), what, tol or 1e-12) end

describe("func.grad and its relatives", function()
  it("grad of a scalar function: closed forms, argnums, has_aux, tables of tensors", function()
    local x = t({1.0, -2.0, 3.0})
    close("d sum x^3", func.grad(function(v) return (v ^ 3):sum() end)(x), {3, 12, 27})
    local gx, gy = table.unpack(func.grad(function(a, b) return (a * b):sum() end, {argnums = {1, 2}})(x, t({4, 5, 6})))
    close("d/da", gx, {4, 5, 6})
    close("d/db", gy, {1, -2, 3})
    local g, aux = func.grad(function(v) return v:sum(), "aux" end, {has_aux = true})(x)
    close("with aux", g, {1, 1, 1})
    assert.are.equal("aux", aux)
    -- a parameter table: the gradient has its keys
    local params = {w = t({2.0}), b = t({1.0})}
    local gp = func.grad(function(p, v) return (p.w * v + p.b):sum() end)(params, x)
    close("d/dw", gp.w, {2})
    close("d/db", gp.b, {3})
    -- an unused input gets zeros; results carry no graph at the top level
    local gu = func.grad(function(a, _) return a:sum() end, {argnums = 2})(x, t({1, 1}))
    close("unused", gu, {0, 0})
    assert.is_false(gp.w.requires_grad)
  end)

  it("grad_and_value, and grad of grad (6x for x^3)", function()
    local g, v = func.grad_and_value(function(x) return (x ^ 2):sum() end)(t({3.0, 4.0}))
    close("grad", g, {6, 8})
    close("value", v, {25})
    local d2 = func.grad(func.grad(function(x) return x ^ 3 end))(t(2.0))
    close("second derivative", d2, {12})
  end)

  it("a MAML inner step stays differentiable in the parameters that require grad", function()
    -- w' = w - a dL/dw with L = (w x - y)^2; dL(w')/dw by hand: 2 (w' x - y) x (1 - 2 a x^2)
    local w = t({0.5}):requires_grad_()
    local x, y, a = 2.0, 1.0, 0.1
    local inner = func.grad(function(p) return ((p * x - y) ^ 2):sum() end)(w)
    assert.is_true(inner.requires_grad)
    local w2 = w - a * inner
    local outer = ((w2 * x - y) ^ 2):sum()
    outer:backward()
    local wv = 0.5
    local w2v = wv - a * 2 * (wv * x - y) * x
    close("meta-gradient", w.grad, {2 * (w2v * x - y) * x * (1 - 2 * a * x * x)})
  end)

  it("vjp and jvp agree with the Jacobian", function()
    local A = t({{1, 2, 0}, {0, -1, 3}})
    local f = function(v) return A:mv(v:sin()) end
    local x = t({0.3, -0.5, 1.2})
    local J = func.jacrev(f)(x)
    local y, vjp_fn = func.vjp(f, x)
    close("vjp value", y, f(x):tolist())
    local u = t({1.0, -2.0})
    close("u^T J", vjp_fn(u), J:t():mv(u):tolist())
    local yj, jv = func.jvp(f, {x}, {t({1.0, 0.5, -1.0})})
    close("jvp value", yj, f(x):tolist())
    close("J v", jv, J:mv(t({1.0, 0.5, -1.0})):tolist())
    -- the Jacobian itself: A diag(cos x)
    local want = {}
    local cx = x:cos():tolist()
    for i, row in ipairs(A:tolist()) do
      want[i] = {}
      for j = 1, 3 do want[i][j] = row[j] * cx[j] end
    end
    close("jacrev", J, want)
    close("jacfwd", func.jacfwd(f)(x), want)
  end)

  it("hessian of a quadratic form is A + A^T", function()
    local A = t({{1, 2}, {0, 3}})
    local H = func.hessian(function(v) return v:dot(A:mv(v)) end)(t({0.7, -1.1}))
    close("hessian", H, {{2, 2}, {2, 6}})
  end)

  it("refuses what PyTorch refuses", function()
    local x = t({1.0, 2.0})
    has(err(function() local _ = func.grad(function(v) return v end)(x) end),
        "func.grad: expected the function to return a tensor with one element, got a tensor of shape", "func_spec.lua:")
    has(err(function() local _ = func.grad(function(v) return v:sum() end, {argnums = 3})(x) end),
        "func.grad: got argnums = 3 but the function was called with 1 positional argument")
    has(err(function() local _ = func.grad(function(v) return v:sum() end)(ember.tensor({1, 2})) end),
        "only floating-point tensors can be differentiated, got int64")
    has(err(function() local _ = func.grad(function(v) return v:sum() end, {has_aux = true})(x) end),
        "has_aux = true needs the function to return two values")
    has(err(function() local _ = func.grad(3) end), "func.grad: expected a function, got number")
    has(err(function() local _ = func.grad(function() end, {argnum = 1}) end), "func.grad: unknown option 'argnum'")
    has(err(function() local _ = func.jvp(function(v) return v end, {x}, {t({1.0})}) end),
        "func.jvp: tangent 1 has shape")
    has(err(function() local _ = func.jvp(function(v) return v end, x, {x}) end),
        "func.jvp: primals and tangents must be lists (PyTorch's tuples), got userdata and table")
    local _, vjp_fn = func.vjp(function(v) return v * 2 end, x)
    has(err(function() local _ = vjp_fn(t({1.0})) end), "func.vjp: vjp_fn: cotangent 1 has shape")
    has(err(function() local _ = vjp_fn({x, x}) end), "func.vjp: vjp_fn: 2 cotangents for 1 outputs")
    has(err(function() local _ = func.vjp(function() end) end), "func.vjp: expected at least one primal")
    has(err(function() local _ = func.grad(function(a) return a end)({}) end), "func.grad: argument 1 (argnums) holds no tensor")
  end)
end)

describe("func.vmap", function()
  it("maps over a dim and stacks, as an explicit loop", function()
    ember.manual_seed(2)
    local M, v = ember.randn(4, 3, {dtype = "float64"}), ember.randn(3, {dtype = "float64"})
    close("rows", func.vmap(function(r) return r:dot(v) end)(M), M:mv(v):tolist())
    -- in_dims per argument (nil: not mapped), a negative dim, out_dims
    close("columns", func.vmap(function(c, w) return c * w end, {in_dims = {-1, nil}, out_dims = 2})(M, 2.0),
          (M * 2):tolist())
    local outer = func.vmap(func.vmap(function(a, b) return a * b end, {in_dims = {nil, 1}}), {in_dims = {1, nil}})
    local a, b = t({1, 2}), t({3, 4, 5})
    close("nested: the outer product", outer(a, b), {{3, 4, 5}, {6, 8, 10}})
    -- a table of results and a table argument
    local r = func.vmap(function(p) return {s = p.x + p.y, d = p.x - p.y} end)({x = t({1, 2}), y = t({3, 5})})
    close("sum", r.s, {4, 7})
    close("difference", r.d, {-2, -3})
  end)

  it("gives per-sample gradients with grad", function()
    ember.manual_seed(4)
    local w = ember.randn(3, {dtype = "float64"})
    local X, Y = ember.randn(5, 3, {dtype = "float64"}), ember.randn(5, {dtype = "float64"})
    local loss = function(p, x, y) return (x:dot(p) - y) ^ 2 end
    local per = func.vmap(func.grad(loss), {in_dims = {nil, 1, 1}})(w, X, Y)
    -- 2 (x . w - y) x, row by row
    local want = (2 * (X:mv(w) - Y)):unsqueeze(2) * X
    close("per-sample gradients", per, want:tolist())
  end)

  it("randomness: an error by default, the same draws with 'same', fresh ones with 'different'", function()
    local z = ember.zeros(3, 2)
    has(err(function() local _ = func.vmap(function(r) return r + ember.rand(2) end)(z) end),
        "func.vmap: called a random operation while in randomness error mode", "func_spec.lua:")
    ember.manual_seed(5)
    local same = func.vmap(function(r) return r + ember.rand(2) end, {randomness = "same"})(z)
    assert.is_true(same[1]:equal(same[3]))
    local diff = func.vmap(function(r) return r + ember.rand(2) end, {randomness = "different"})(z)
    assert.is_false(diff[1]:equal(diff[2]))
  end)

  it("is ember.vmap too, and refuses mismatched sizes and bad options", function()
    assert.are.equal(func.vmap, ember.vmap)
    has(err(function() local _ = func.vmap(function(a, b) return a + b end)(ember.zeros(2), ember.zeros(3)) end),
        "func.vmap: expected all tensors to have the same size in the mapped dimension, got sizes 2 and 3")
    has(err(function() local _ = func.vmap(function(a) return a end, {in_dims = 3})(ember.zeros(2)) end),
        "func.vmap: in_dim 3 is out of range for a tensor of 1 dims")
    has(err(function() local _ = func.vmap(function(a) return a end, {in_dims = {nil}})(ember.zeros(2)) end),
        "at least one argument must be mapped over")
    has(err(function() local _ = func.vmap(function(a) return a end, {randomness = "x"}) end),
        "randomness must be 'error', 'different' or 'same'")
    has(err(function() local _ = func.vmap(function() return 1 end)(ember.zeros(2)) end),
        "func.vmap: the function must return tensors, got number")
    has(err(function() local _ = func.vmap(function(a) return a end, {in_dims = {{p = 1}}})(ember.zeros(2)) end),
        "func.vmap: in_dims for argument 1 does not match the argument's structure (a table where a tensor is)",
        "func_spec.lua:")
    has(err(function() local _ = func.vmap(function(a) return a end, {chunk_size = 0}) end),
        "func.vmap: chunk_size must be a positive integer or nil, got 0")
    has(err(function() local _ = func.vmap(function(a) return a end, {out_dims = 3})(ember.zeros(2)) end),
        "func.vmap: out_dim 3 is out of range")
  end)
end)

describe("func.functional_call and stack_module_state", function()
  it("runs the module on the given tensors and puts its own back, also after an error", function()
    local net = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU(), ember.nn.Linear(2, 1))
    local own = net[1].weight
    local p = {["0.weight"] = t({{1, 0}, {0, 2}}):float(), ["0.bias"] = ember.zeros(2),
               ["2.weight"] = ember.ones(1, 2), ["2.bias"] = ember.tensor({0.5})}
    -- by hand: relu([x1, 2 x2]) summed, plus 0.5
    close("output", func.functional_call(net, p, ember.tensor({{3.0, -1.0}})), {3.5}, 1e-6)
    assert.is_true(rawequal(net[1].weight, own))
    has(err(function() local _ = func.functional_call(net, p, ember.ones(1, 5)) end), "Linear")
    assert.is_true(rawequal(net[1].weight, own))
    has(err(function() local _ = func.functional_call(net, {["9.weight"] = ember.ones(1)}, ember.ones(1, 2)) end),
        "'9.weight' names no submodule")
    has(err(function() local _ = func.functional_call(net, {nope = ember.ones(1)}, ember.ones(1, 2), nil, {strict = true}) end),
        "unexpected key 'nope' (strict = true)")
    local lin, x = ember.nn.Linear(2, 1), ember.ones(1, 2)
    has(err(function() local _ = func.functional_call(3, {}, x) end), "func.functional_call: expected a module, got number")
    has(err(function() local _ = func.functional_call(lin, {weight = 3}, x) end), "'weight' must be a tensor, got number")
    has(err(function() local _ = func.functional_call(lin, {{weight = x}, {weight = x}}, x) end),
        "'weight' appears in more than one of the tables")
    has(err(function() local _ = func.functional_call(lin, {}, x, nil, 5) end), "options must be a table, got number")
    has(err(function() local _ = func.stack_module_state({}) end),
        "func.stack_module_state: expected a non-empty list of modules, got an empty list")
  end)

  it("is nn.utils.stateless.functional_call too (PyTorch's older name)", function()
    assert.are.equal(func.functional_call, ember.nn.utils.stateless.functional_call)
  end)

  it("replaces a tied weight under both names", function()
    -- two layers holding one weight tensor (tied), the second's given under no name
    local a, b = ember.nn.Linear(2, 2, {bias = false}), ember.nn.Linear(2, 2, {bias = false})
    b.weight = a.weight
    local m = ember.nn.Sequential(a, b)
    local out = func.functional_call(m, {["0.weight"] = ember.eye(2) * 2}, ember.ones(1, 2))
    close("tied", out, {4, 4}, 1e-6)
    local untied = func.functional_call(m, {["0.weight"] = ember.eye(2) * 2}, ember.ones(1, 2), nil, {tie_weights = false})
    close("untied", untied, (b(ember.ones(1, 2) * 2)):tolist(), 1e-6)
    assert.is_true(rawequal(b.weight, a.weight))
  end)

  it("stacks an ensemble that vmap runs in one call", function()
    ember.manual_seed(8)
    local models = {ember.nn.Linear(3, 2), ember.nn.Linear(3, 2), ember.nn.Linear(3, 2)}
    local params, buffers = func.stack_module_state(models)
    assert(h.same(params.weight.shape, {3, 2, 3}), tostring(params.weight.shape))
    assert.is_true(params.weight.requires_grad and params.weight.is_leaf)
    local x = ember.randn(4, 3)
    local run = function(p, b, v) return func.functional_call(models[1], {p, b}, v) end
    local out = func.vmap(run, {in_dims = {1, 1, nil}})(params, buffers, x)
    for i, m in ipairs(models) do close("model " .. i, out[i], m(x):tolist(), 1e-6) end
    out:sum():backward()
    close("d/d bias of each model", params.bias.grad, {{4, 4}, {4, 4}, {4, 4}}, 1e-6)
  end)
end)

describe("ember.cond and ember.while_loop", function()
  it("run the branch or the loop eagerly, as PyTorch's eager mode", function()
    local x = t({1.0, 2.0})
    close("true branch", ember.cond(ember.tensor(true), function(v) return v * 2 end, function(v) return -v end, {x}), {2, 4})
    close("false branch", ember.cond(x:sum():lt(0), function(v) return v * 2 end, function(v) return -v end, {x}), {-1, -2})
    local i, s = ember.while_loop(function(k) return k < 5 end, function(k, acc) return k + 1, acc + k end, {0, 0})
    assert.are.equal(5, i)
    assert.are.equal(10, s)
    local v = ember.while_loop(function(u) return u:sum():lt(10) end, function(u) return u * 2 end, {t({1.0, 1.0})})
    close("doubling", v, {8, 8})
    has(err(function() local _ = ember.cond(ember.ones(2), print, print) end), "cond: pred must be a boolean or a tensor with one element")
    has(err(function() local _ = ember.while_loop(function() return true end, function() return 1, 2 end, {0}) end),
        "while_loop: body_fn returned 2 values for 1 carried inputs")
    has(err(function() local _ = ember.cond(true, print, print, 5) end), "cond: operands must be a list, got number")
    has(err(function() local _ = ember.while_loop(print, print, 5) end), "while_loop: carried_inputs must be a list, got number")
  end)
end)
