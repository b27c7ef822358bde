-- more_parts_spec.lua (GPU) — the functions added on 2026-11-30's second session, on the
-- device under test against the CPU on the same inputs, values and gradients: F.ctc_loss,
-- lp_pool, pdist, the margin losses, the composite extras (the scatter forms, renorm,
-- index_reduce, put, gradient), draws from an ember.Generator, and module backward hooks.
-- Their values against PyTorch are the CPU specs' business.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, agree = g.dev, g.agree
local F = ember.nn.functional

-- f(x, ...) and the gradient of its sum with respect to x (x float64, a fresh leaf)
local function with_grad(f)
  return function(x, ...)
    local leaf = x:detach():requires_grad_()
    local y = f(leaf, ...)
    return y, ember.autograd.grad({y:sum()}, {leaf})
  end
end

describe("more parts on the device", function()
  it("ctc_loss, values and the logits' gradient", function()
    ember.manual_seed(21)
    local logits = ember.randn(12, 3, 6, {dtype = "float64"})
    local targets = ember.randint(2, 7, {3, 4})
    agree(with_grad(function(x, t)
      return F.ctc_loss(F.log_softmax(x, 3), t, {12, 10, 12}, {4, 3, 2}, {reduction = "none"})
    end), {logits, targets})
  end)

  it("lp_pool, pdist and the margin losses", function()
    ember.manual_seed(22)
    local x = ember.randn(2, 3, 6, 6, {dtype = "float64"})
    agree(with_grad(function(t) return F.lp_pool2d(t, 3, 2) end), {x:abs() + 0.1})
    agree(with_grad(function(t) return F.pdist(t, 1.5) end), {ember.randn(5, 4, {dtype = "float64"})})
    local scores = ember.randn(3, 5, {dtype = "float64"})
    agree(with_grad(function(t, y) return F.multilabel_margin_loss(t, y, {reduction = "none"}) end),
          {scores, ember.tensor({{2, 4, 0, 0, 0}, {1, 0, 0, 0, 0}, {5, 3, 1, 0, 0}})})
    local a, p, n = ember.randn(4, 3, {dtype = "float64"}), ember.randn(4, 3, {dtype = "float64"}),
                    ember.randn(4, 3, {dtype = "float64"})
    agree(with_grad(function(t, pp, nn) return F.triplet_margin_with_distance_loss(t, pp, nn, {swap = true}) end),
          {a, p, n})
  end)

  it("the composite extras", function()
    ember.manual_seed(23)
    local x = ember.randn(4, 5, {dtype = "float64"})
    local src = ember.randn(4, 2, {dtype = "float64"})
    agree(with_grad(function(t, s) return ember.slice_scatter(t, s, 2, 2, 4, 2) end), {x, src})
    agree(with_grad(function(t) return ember.diagonal_scatter(t, ember.ones(4, {dtype = "float64", device = t.device})) end), {x})
    agree(with_grad(function(t) return t:renorm(2, 1, 1.0) end), {x})
    agree(with_grad(function(t, s) return t:index_reduce(1, ember.tensor({1, 3, 1}, {device = t.device}), s, "amax") end),
          {x, ember.randn(3, 5, {dtype = "float64"})})
    agree(with_grad(function(t) return t:put(ember.tensor({1, -1, 7}, {device = t.device}),
                                             ember.tensor({1.0, 2, 3}, {dtype = "float64", device = t.device}), true) end),
          {x})
    agree(function(t) return ember.gradient(t, {spacing = 0.5, edge_order = 2}) end, {x})
    agree(function(t) return ember.frexp(t) end, {x})
  end)

  it("an ember.Generator's draws on the device are the CPU's from the same state", function()
    local gen = ember.Generator():manual_seed(24)
    local on_dev = ember.randn(100, {device = g.devname, generator = gen})
    gen:manual_seed(24)
    local on_cpu = ember.randn(100, {generator = gen})
    g.close(on_dev, on_cpu, {what = "randn", any_device = true})
    gen:manual_seed(25)
    local b = dev(ember.zeros(50)):bernoulli_(0.5, {generator = gen})
    gen:manual_seed(25)
    g.same(b, ember.zeros(50):bernoulli_(0.5, {generator = gen}))
  end)

  it("module backward hooks see the device's gradients", function()
    ember.manual_seed(26)
    local lin = ember.nn.Linear(3, 2, {dtype = "float64"})
    local seen = {}
    lin:register_full_backward_hook(function(_, gi, go) seen[#seen + 1] = {gi[1], go[1]} end)
    local x = ember.randn(4, 3, {dtype = "float64"})
    lin(x:clone():requires_grad_()):sum():backward()
    lin:to(g.devname)
    lin(dev(x):requires_grad_()):sum():backward()
    assert.are.equal(2, #seen)
    g.close(seen[2][1], seen[1][1], {what = "grad_input", any_device = true})
    assert.are.equal(g.devname, seen[2][1].device)
  end)
end)
