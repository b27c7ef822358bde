-- autograd_backward_spec.lua — torch.autograd.backward and Tensor.backward's
-- arguments as PyTorch takes them (positional, then an options table): several
-- roots in one pass, inputs= (only those tensors' .grad written), retain_graph
-- and create_graph by position, and the mistakes named. Expected values by hand.
local ember = require "ember"

local function vals(t) return t:tolist() end

describe("ember.autograd.backward", function()
  it("runs one pass from several tensors, each with its gradient", function()
    local x = ember.tensor({1, 2, 3}, {dtype = "float64"}):requires_grad_()
    local y1, y2 = x * 2, x * x
    ember.autograd.backward({y1, y2}, {ember.tensor({1, 1, 1.0}, {dtype = "float64"}),
                                       ember.tensor({1, 0, 2.0}, {dtype = "float64"})})
    -- 2 g1 + 2 x g2
    assert.are.same({4, 2, 14}, vals(x.grad))
  end)

  it("takes one tensor, and implies ones for single-element tensors", function()
    local x = ember.tensor({1, 2}, {dtype = "float64"}):requires_grad_()
    ember.autograd.backward((x * x):sum())
    assert.are.same({2, 4}, vals(x.grad))
    local a, b = (x * 3):sum(), (x * x * x):sum()
    x.grad = nil
    ember.autograd.backward({a, b}, {nil, ember.tensor(2.0, {dtype = "float64"})})
    -- 3 + 2 * 3 x^2
    assert.are.same({9, 27}, vals(x.grad))
  end)

  it("writes only the inputs' .grad with inputs=, and adds to what is there", function()
    local a = ember.tensor({1, 2}, {dtype = "float64"}):requires_grad_()
    local b = ember.tensor({3, 4}, {dtype = "float64"}):requires_grad_()
    ember.autograd.backward((a * b):sum(), nil, {inputs = {a}})
    assert.are.same({3, 4}, vals(a.grad))
    assert.is_nil(b.grad)
    ember.autograd.backward((a * b):sum(), {inputs = a})
    assert.are.same({6, 8}, vals(a.grad))
  end)

  it("keeps the graph with retain_graph by position", function()
    local x = ember.tensor({1, 2}, {dtype = "float64"}):requires_grad_()
    local y = (x * x):sum()
    ember.autograd.backward(y, nil, true)
    ember.autograd.backward(y)
    assert.are.same({4, 8}, vals(x.grad))
  end)

  it("names its mistakes", function()
    local x = ember.ones(2):requires_grad_()
    local y = x * 2
    assert.has_error(function() ember.autograd.backward({y}, {ember.ones(2), ember.ones(2)}) end,
      "autograd.backward: 2 grad_tensors given for 1 tensors")
    local ok, err = pcall(ember.autograd.backward, {y, y}, {ember.ones(2)})
    assert.is_false(ok)
    assert.matches("grad_tensors%[2%] is nil, but tensors%[2%] has shape %[2%]", err)
    -- the engine's message, at the caller's line
    ok, err = pcall(function() ember.autograd.backward(y) end)
    assert.is_false(ok)
    assert.matches("^[^:]*autograd_backward_spec%.lua:%d+: backward: grad can be implicitly created only for scalar outputs", err)
    ok, err = pcall(ember.autograd.backward, y:sum(), {foo = 1})
    assert.is_false(ok)
    assert.matches("unknown option 'foo'", err)
    ok, err = pcall(ember.autograd.backward, {})
    assert.is_false(ok)
    assert.matches("non%-empty list", err)
    ok, err = pcall(ember.autograd.backward, y:sum(), {inputs = {ember.ones(2)}})
    assert.is_false(ok)
    assert.matches("entry 1 of inputs does not require grad", err)
  end)
end)

describe("Tensor.backward's arguments", function()
  it("takes gradient, retain_graph, create_graph and inputs by position", function()
    local a = ember.tensor({1, 2}, {dtype = "float64"}):requires_grad_()
    local b = ember.tensor({3, 4}, {dtype = "float64"}):requires_grad_()
    local y = a * b
    y:backward(ember.tensor({1, 10}, {dtype = "float64"}), true, false, {b})
    assert.is_nil(a.grad)
    assert.are.same({1, 20}, vals(b.grad))
    y:backward(ember.tensor({1, 1}, {dtype = "float64"}))      -- the graph was kept
    assert.are.same({3, 4}, vals(a.grad))
    assert.are.same({2, 22}, vals(b.grad))
  end)

  it("takes them in an options table, and create_graph makes .grad differentiable", function()
    local x = ember.tensor({1, 2}, {dtype = "float64"}):requires_grad_()
    local y = (x * x * x):sum()
    y:backward({create_graph = true, inputs = {x}})
    assert.are.same({3, 12}, vals(x.grad))
    assert.is_true(x.grad.requires_grad)
    local g = x.grad
    x.grad = nil
    g:sum():backward()
    assert.are.same({6, 12}, vals(x.grad))        -- d/dx 3x^2 = 6x
  end)

  it("refuses an unknown option, a value given twice and too many arguments", function()
    local x = ember.ones(2):requires_grad_()
    local y = (x * 2):sum()
    local ok, err = pcall(y.backward, y, {retain = true})
    assert.is_false(ok)
    assert.matches("backward: unknown option 'retain'", err)
    ok, err = pcall(y.backward, y, nil, true, {retain_graph = true})
    assert.is_false(ok)
    assert.matches("multiple values for argument 'retain_graph'", err)
    ok, err = pcall(y.backward, y, nil, true, false, {x}, 5)
    assert.is_false(ok)
    assert.matches("too many positional arguments", err)
    ok, err = pcall(y.backward, y, nil, "yes")
    assert.is_false(ok)
    assert.matches("retain_graph must be a boolean, got string", err)
  end)
end)
