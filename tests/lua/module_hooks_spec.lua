-- module_hooks_spec.lua — nn.Module's register_forward_pre_hook, register_forward_hook,
-- register_full_backward_pre_hook and register_full_backward_hook, and the handles of
-- Tensor:register_hook / register_post_accumulate_grad_hook (PyTorch's semantics: order,
-- prepend, replaced arguments, results and gradients, removal through the handle), with
-- expected values by hand (and, where noted, what PyTorch 2.15 printed for the same calls).
local ember = require "ember"
local h = require "helpers"
local nn = ember.nn
local err, has = h.err, h.has

-- y = 2 x + 1, exactly
local Affine = nn.Module:extend("Affine")
function Affine:forward(x) return x * 2 + 1 end

-- forward with two results and two arguments
local Pair = nn.Module:extend("Pair")
function Pair:forward(a, b) return a + b, a - b end

describe("forward hooks", function()
  it("see the arguments and the result, and may replace them", function()
    local m = Affine()
    local seen = {}
    local hp = m:register_forward_pre_hook(function(mod, args)
      seen.pre_mod, seen.pre_n, seen.pre_x = mod, args.n, args[1]
    end)
    local hf = m:register_forward_hook(function(mod, args, out) seen.args, seen.out = args, out end)
    local x = ember.tensor({1.0, 2.0})
    local y = m(x)
    assert.are.equal(m, seen.pre_mod)
    assert.are.equal(1, seen.pre_n)
    assert.are.equal(x, seen.pre_x)
    assert.are.equal(x, seen.args[1])
    assert.are.equal(y, seen.out)
    h.check(y, {3, 5})
    -- a pre-hook's single value becomes the argument, a forward hook's value the result
    hp:remove()
    local hp2 = m:register_forward_pre_hook(function(_, args) return args[1] * 10 end)
    h.check(m(x), {21, 41})
    local hf2 = m:register_forward_hook(function(_, _, out) return out - 1 end)
    h.check(m(x), {20, 40})
    hp2:remove(); hf2:remove(); hf:remove()
    h.check(m(x), {3, 5})
    assert.is_nil(rawget(m, "_forward_hooks"))
    assert.is_nil(rawget(m, "_forward_pre_hooks"))
  end)

  it("pass every argument and every result; a table from a pre-hook is the new arguments", function()
    local m = Pair()
    local outs
    m:register_forward_hook(function(_, args, s, d) outs = {args.n, s:item(), d:item()} end)
    local s, d = m(ember.tensor(5.0), ember.tensor(3.0))
    assert.are.same({2, 8, 2}, outs)
    assert.are.same({8, 2}, {s:item(), d:item()})
    m:register_forward_pre_hook(function(_, args) return {args[2], args[1]} end)
    s, d = m(ember.tensor(5.0), ember.tensor(3.0))
    assert.are.same({8, -2}, {s:item(), d:item()})
    -- a forward hook returning several values replaces all the results
    m:register_forward_hook(function(_, _, a, b) return b, a end)
    s, d = m(ember.tensor(5.0), ember.tensor(3.0))
    assert.are.same({-2, 8}, {s:item(), d:item()})
  end)

  it("run in the order registered, prepend first; a hook removed while running still lets the others run", function()
    local m = Affine()
    local order = {}
    local h1
    h1 = m:register_forward_hook(function() order[#order + 1] = "a"; h1:remove() end)
    m:register_forward_hook(function() order[#order + 1] = "b" end)
    m:register_forward_hook(function() order[#order + 1] = "c" end, {prepend = true})
    m(ember.zeros(1))
    assert.are.same({"c", "a", "b"}, order)
    order = {}
    m(ember.zeros(1))
    assert.are.same({"c", "b"}, order)
  end)

  it("on a child see its activations inside a Sequential, and gradients flow through replaced results", function()
    local model = nn.Sequential(Affine(), Affine())
    local act
    model[1]:register_forward_hook(function(_, _, out) act = out end)
    local x = ember.tensor({1.0}, {requires_grad = true})
    local y = model(x)
    h.check(act, {3})
    h.check(y, {7})
    model[2]:register_forward_hook(function(_, _, out) return out * out end)
    y = model(x)
    y:sum():backward()
    -- y = (2 (2x + 1) + 1)^2 = (4x + 3)^2: dy/dx = 8 (4x + 3) = 56 at x = 1
    h.check(x.grad, {56})
  end)

  it("refuse what is not a hook, and the options Lua cannot honour", function()
    local m = Affine()
    has(err(m.register_forward_hook, m, 5), "register_forward_hook: hook must be a function, got number")
    has(err(m.register_forward_pre_hook, m, "x"), "register_forward_pre_hook: hook must be a function, got string")
    has(err(m.register_forward_hook, m, print, {with_kwargs = true}), "with_kwargs = true is not supported")
    has(err(m.register_forward_hook, m, print, {always_call = true}), "always_call = true is not supported")
    has(err(m.register_forward_hook, m, print, {prepend = 1}), "register_forward_hook: prepend must be a boolean")
    has(err(m.register_forward_hook, m, print, {bogus = true}), "register_forward_hook: unknown option 'bogus'")
    assert.is_nil(rawget(m, "_forward_hooks"))
  end)
end)

-- the values of a gradient list, first element of each (nil kept as "nil")
local function firsts(l)
  local t = {}
  for i = 1, l.n do t[i] = l[i] and l[i]:tolist()[1] or "nil" end
  return t
end

-- forward with an unused third argument
local Two = nn.Module:extend("Two")
function Two:forward(a, b, k) return a * 2, b * 3 end

describe("full backward hooks", function()
  it("see grad_output before the pre-hooks' replacement and grad_input after", function()
    -- PyTorch 2.15, same module: pre [[1,1], None]; full gi [[2,2], [0,0], None], go [[1,1], None]
    -- (ember gives nil, not zeros, for b, a tensor that does not require grad)
    local m, log = Two(), {}
    m:register_full_backward_pre_hook(function(mod, go)
      assert.equals(m, mod)
      log[#log + 1] = {"pre", firsts(go)}
    end)
    m:register_full_backward_hook(function(mod, gi, go) log[#log + 1] = {"full", firsts(gi), firsts(go)} end)
    local a = ember.ones(2, {requires_grad = true})
    local o1 = m(a, ember.ones(2), 5)
    o1:sum():backward()
    assert.same({{"pre", {1, "nil"}}, {"full", {2, "nil", "nil"}, {1, "nil"}}}, log)
  end)

  it("get every result's gradient when both are used, summed into grad_input", function()
    -- d/da (sum(2a) + sum(3a)) = 5
    local m, log = Two(), {}
    m.forward = function(_, a) return a * 2, a * 3 end
    m:register_full_backward_hook(function(_, gi, go) log[#log + 1] = {firsts(gi), firsts(go)} end)
    local o1, o2 = m(ember.ones(2, {requires_grad = true}))
    ;(o1:sum() + o2:sum()):backward()
    assert.same({{{5}, {1, 1}}}, log)
  end)

  it("run once per call of the module", function()
    local m, calls = Affine(), 0
    m:register_full_backward_hook(function() calls = calls + 1 end)
    local x = ember.ones(1, {requires_grad = true})
    ;(m(x) + m(x)):sum():backward()
    assert.equals(2, calls)
    h.check(x.grad, {4})
  end)

  it("may replace grad_input and grad_output", function()
    -- y = w . x + b with w = (3, 4): dy/dx = w; times 10 from the hook
    local l = nn.Linear(2, 1)
    ember.no_grad(function() l.weight:copy_(ember.tensor({{3, 4}})) end)
    l:register_full_backward_hook(function(_, gi) return {gi[1] * 10} end)
    local x = ember.ones(1, 2, {requires_grad = true})
    l(x):sum():backward()
    h.check(x.grad, {{30, 40}})
    h.check(l.weight.grad, {{1, 1}})   -- grad_input is x's gradient only
    -- a pre-hook scaling grad_output scales every gradient inside the module
    local l2 = nn.Linear(2, 1)
    ember.no_grad(function() l2.weight:copy_(ember.tensor({{3, 4}})) end)
    local handle = l2:register_full_backward_pre_hook(function(_, go) return go[1] * 10 end)
    local x2 = ember.ones(1, 2, {requires_grad = true})
    l2(x2):sum():backward()
    h.check(x2.grad, {{30, 40}})
    h.check(l2.weight.grad, {{10, 10}})
    h.check(l2.bias.grad, {10})
    handle:remove()
    x2.grad, l2.weight.grad = nil, nil
    l2(x2):sum():backward()
    h.check(x2.grad, {{3, 4}})
    h.check(l2.weight.grad, {{1, 1}})
  end)

  it("run at the results when no argument requires grad, with grad_input all nil", function()
    local w = ember.ones(2, {requires_grad = true})
    local m, log = Affine(), {}
    m.forward = function(_, x) return x * w end
    m:register_full_backward_hook(function(_, gi, go) log[#log + 1] = {firsts(gi), firsts(go)} end)
    m(ember.ones(2)):sum():backward()
    assert.same({{{"nil"}, {1}}}, log)
    -- and then must not return gradients
    local m2 = Affine()
    m2.forward = function(_, x) return x * w end
    m2:register_full_backward_hook(function(_, gi) return {ember.ones(2)} end)
    has(err(function() m2(ember.ones(2)):sum():backward() end),
        "module_hooks_spec.lua:", "hooks must return nil")
  end)

  it("follow PyTorch's order: pre-hooks first, each list in order, prepend first", function()
    -- PyTorch 2.15 printed ['p2', 'p1', 2, 1] for the same registrations on nn.Identity
    local m, order = nn.Identity(), {}
    m:register_full_backward_hook(function() order[#order + 1] = "1" end)
    m:register_full_backward_hook(function() order[#order + 1] = "2" end, {prepend = true})
    m:register_full_backward_pre_hook(function() order[#order + 1] = "p1" end)
    m:register_full_backward_pre_hook(function() order[#order + 1] = "p2" end, {prepend = true})
    m(ember.ones(2, {requires_grad = true})):sum():backward()
    assert.same({"p2", "p1", "2", "1"}, order)
  end)

  it("come after the forward hooks, which see the same call", function()
    local m, order = Affine(), {}
    m:register_forward_pre_hook(function() order[#order + 1] = "fpre" end)
    m:register_forward_hook(function() order[#order + 1] = "fwd" end)
    m:register_full_backward_hook(function() order[#order + 1] = "bwd" end)
    local y = m(ember.ones(1, {requires_grad = true}))
    order[#order + 1] = "-"
    y:sum():backward()
    assert.same({"fpre", "fwd", "-", "bwd"}, order)
  end)

  it("are not run without grad mode, nor for results that need no gradient", function()
    local m, calls = Affine(), 0
    m:register_full_backward_hook(function() calls = calls + 1 end)
    local y = ember.no_grad(function() return m(ember.ones(1, {requires_grad = true})) end)
    assert.is_false(y.requires_grad)
    m(ember.ones(1))
    assert.equals(0, calls)
  end)

  it("refuse wrong results with the count PyTorch names, at the backward call's line", function()
    -- PyTorch: "Backward hook returned an invalid number of grad_input, got 2, but expected 1"
    local m = nn.Identity()
    m:register_full_backward_hook(function(_, gi) return {gi[1], gi[1]} end)
    has(err(function() m(ember.ones(2, {requires_grad = true})):sum():backward() end),
        "module_hooks_spec.lua:", "backward hook returned 2 gradients, but expected 1")
    local m2 = nn.Identity()
    m2:register_full_backward_pre_hook(function() return {"x"} end)
    has(err(function() m2(ember.ones(2, {requires_grad = true})):sum():backward() end),
        "backward pre-hook returned a string as gradient 1")
    local m3 = nn.Identity()
    m3:register_full_backward_pre_hook(function() return 5 end)
    has(err(function() m3(ember.ones(2, {requires_grad = true})):sum():backward() end),
        "backward pre-hook returned a number; expected nil or a table of 1 gradients")
    -- dropping a gradient that exists is refused; a table with n says how many it holds
    local P = Pair()
    P:register_full_backward_hook(function(_, gi) return {gi[1]} end)
    local a, b = ember.ones(1, {requires_grad = true}), ember.ones(1, {requires_grad = true})
    has(err(function() local s, d = P(a, b); (s + d):sum():backward() end), "returned 1 gradients, but expected 2")
    local P2 = Pair()
    P2:register_full_backward_hook(function(_, gi) return {gi[1], nil, n = 2} end)
    local s, d = P2(a, b)
    a.grad, b.grad = nil, nil
    ;(s + d):sum():backward()
    h.check(a.grad, {2})
    assert.is_nil(b.grad)
    has(err(m.register_full_backward_hook, m, print, {always_call = true}),
        "register_full_backward_hook: unknown option 'always_call'")
    has(err(m.register_full_backward_pre_hook, m, 1), "register_full_backward_pre_hook: hook must be a function")
  end)
end)

describe("tensor hook handles", function()
  it("register_hook returns a handle whose remove() stops the hook", function()
    local x = ember.ones(3, {requires_grad = true})
    local calls = 0
    local handle = x:register_hook(function(g) calls = calls + 1; return g * 2 end)
    assert.equals("RemovableHandle", tostring(handle))
    ;(x * 3):sum():backward()
    h.check(x.grad, {6, 6, 6})
    handle:remove()
    handle:remove()   -- twice does nothing
    assert.equals("RemovableHandle (removed)", tostring(handle))
    x.grad = nil
    ;(x * 3):sum():backward()
    h.check(x.grad, {3, 3, 3})
    assert.equals(1, calls)
  end)

  it("a non-leaf's hook and the post-accumulate hook are removable too", function()
    local x = ember.ones(2, {requires_grad = true})
    local y = x * 2
    local handle = y:register_hook(function(g) return g + 1 end)
    handle:remove()
    y:sum():backward()
    h.check(x.grad, {2, 2})
    local posts = 0
    local ph = x:register_post_accumulate_grad_hook(function() posts = posts + 1 end)
    x:sum():backward()
    ph:remove()
    x:sum():backward()
    assert.equals(1, posts)
  end)

  it("a handle outliving its tensor, or collected before it, is safe", function()
    local handle = ember.ones(2, {requires_grad = true}):register_hook(function(g) return g end)
    collectgarbage(); collectgarbage()
    handle:remove()
    handle = nil
    collectgarbage()
    local x = ember.ones(2, {requires_grad = true})
    x:register_hook(function(g) return g * 5 end)   -- handle dropped at once: the hook stays
    collectgarbage(); collectgarbage()
    x:sum():backward()
    h.check(x.grad, {5, 5})
  end)
end)
