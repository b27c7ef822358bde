-- grad_accumulate_spec.lua — gradients that meet in one tensor: the backward
-- pass adds a later gradient into an earlier one in place when nothing else
-- can see it (split's and chunk's pieces add straight into their part of
-- the whole), and never into a tensor the program holds. Expected values by
-- hand.
local ember = require "ember"

local function same(want, got)
  assert.are.same(want, got:tolist())
end

describe("gradients meeting in one tensor", function()
  it("split's pieces each land in their part of the input's gradient", function()
    local x = ember.zeros(2, 6):requires_grad_()
    local a, b, c = x:split(2, 2)
    local s = (a * 1):sum() + (b * 2):sum() + (c * 3):sum()
    s:backward()
    same({{1, 1, 2, 2, 3, 3}, {1, 1, 2, 2, 3, 3}}, x.grad)
  end)

  it("a piece used twice and a piece never used", function()
    local x = ember.tensor({1, 2, 3, 4, 5, 6}, {dtype = "float32"}):requires_grad_()
    local a, b, c = x:chunk(3)
    local _ = b
    local s = (a * a):sum() + (c * 10):sum() + a:sum()
    s:backward()
    -- d/da (a^2 + a) = 2a + 1; c: 10; b: 0
    same({3, 5, 0, 0, 10, 10}, x.grad)
  end)

  it("select and narrow of the same tensor, overlapping", function()
    local x = ember.zeros(3, 2):requires_grad_()
    local y = x * 1
    local r1 = y:select(1, 1)
    local r2 = y:narrow(1, 1, 2)
    local s = (r1 * 5):sum() + (r2 * 7):sum()
    s:backward()
    same({{12, 12}, {7, 7}, {0, 0}}, x.grad)
  end)

  it("leaves the gradient the program passed to backward untouched", function()
    local x = ember.tensor({1, 2}, {dtype = "float32"}):requires_grad_()
    local a = x * 3
    local g = ember.tensor({1, 10}, {dtype = "float32"})
    local s = a + a
    s:backward(g)
    same({1, 10}, g)
    same({6, 60}, x.grad)
  end)

  it("leaves a gradient a hook kept untouched when more arrives", function()
    local x = ember.tensor({1, 2, 3, 4}, {dtype = "float32"}):requires_grad_()
    local y = x * 1
    local kept
    local p, q = y:split(2)
    p:register_hook(function(g) kept = g; return g end)
    -- p's gradient reaches y's node first; q's would be added into it
    local s = (p * 2):sum() + (q * 5):sum()
    s:backward()
    same({2, 2}, kept)
    same({2, 2, 5, 5}, x.grad)
  end)

  it("adds a residual path's gradient to the other path's", function()
    local x = ember.tensor({0, 1}, {dtype = "float32"}):requires_grad_()
    local y = x * 2
    local z = y:exp() + y
    z:sum():backward()
    -- d/dx (e^(2x) + 2x) = 2 e^(2x) + 2
    local got = x.grad:tolist()
    assert.is_true(math.abs(got[1] - 4) < 1e-6)
    assert.is_true(math.abs(got[2] - (2 * math.exp(2) + 2)) < 1e-5)
  end)

  it("stays differentiable with create_graph", function()
    local x = ember.tensor({1, 2, 3, 4}, {dtype = "float64"}):requires_grad_()
    local a, b = x:split(2)
    local s = (a * a * a):sum() + (b * b):sum()
    local g = ember.autograd.grad(s, x, {create_graph = true})
    -- first derivative: 3a^2 and 2b; second, summed: 6a and 2
    same({3, 12, 6, 8}, g)
    g:sum():backward()
    same({6, 12, 2, 2}, x.grad)
  end)
end)
