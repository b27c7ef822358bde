-- module_hooks_spec.lua — nn.Module's register_forward_pre_hook and register_forward_hook
-- (PyTorch's semantics: order, prepend, replaced arguments and results, removal through
-- the handle), with expected values by hand.
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
