-- tensor_data_spec.lua — PyTorch's t.data (read: t's memory without autograd; assigned:
-- t takes the new data and stays the same tensor) and the properties is_cpu, itemsize and
-- nbytes. Expected values by hand.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

describe("t.data", function()
  it("reads t's memory as a tensor autograd does not see", function()
    local w = ember.ones(3, {requires_grad = true})
    local d = w.data
    assert.is_false(d.requires_grad)
    assert.is_true(d.is_leaf)
    d:mul_(2)                                  -- allowed: w itself would be refused in grad mode
    h.check(w, {2, 2, 2})
    assert.is_true(w.requires_grad)
    -- the initialisation idiom of ported scripts
    ember.manual_seed(0)
    local lin = ember.nn.Linear(4, 3)
    lin.weight.data:normal_(0, 0.02)
    lin.bias.data:zero_()
    h.check(lin.bias, {0, 0, 0})
    assert.is_true(lin.weight:std():item() < 0.1)
  end)

  it("assigned, replaces t's data and keeps t: its references, requires_grad and grad", function()
    local lin = ember.nn.Linear(2, 3)
    local w = lin.weight
    local opt = ember.optim.SGD(lin:parameters(), {lr = 0.5})
    w.data = ember.ones(3, 5)                  -- another shape, as lazy modules need
    assert.equals(w, lin.weight)
    assert.same({3, 5}, w.shape)
    assert.is_true(w.requires_grad and w.is_leaf)
    -- y = sum(x w^T) with x = ones(1, 5): dy/dw = 1 everywhere; SGD: w = 1 - 0.5 * 1
    ember.ones(1, 5):matmul(w:t()):sum():backward()
    h.check(w.grad, {{1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}})
    opt:step()
    h.check(w, {{0.5, 0.5, 0.5, 0.5, 0.5}, {0.5, 0.5, 0.5, 0.5, 0.5}, {0.5, 0.5, 0.5, 0.5, 0.5}})
    -- the dtype may change too (module conversion as PyTorch once did it)
    w.data = w.data:to("float64")
    assert.equals("float64", w.dtype)
    -- t shares the new data's memory
    local src = ember.zeros(2)
    local t = ember.ones(2)
    t.data = src
    src:add_(3)
    h.check(t, {3, 3})
  end)

  it("refuses a tensor autograd computed, and integer data for one that requires grad", function()
    local w = ember.ones(2, {requires_grad = true})
    local y = w * 2
    has(err(function() y.data = ember.zeros(2) end), "tensor_data_spec.lua:",
        "data: cannot replace the data of a tensor autograd computed (grad_fn MulBackward)")
    has(err(function() w.data = ember.zeros(2, {dtype = "int64"}) end),
        "data: a tensor that requires grad needs floating point data, got int64")
    has(err(function() w.data = 5 end), "data")
    h.check(w, {1, 1})
    local plain = ember.ones(2)
    plain.data = ember.tensor({7, 8})          -- any dtype for one that does not require grad
    assert.equals("int64", plain.dtype)
  end)
end)

describe("tensor size properties", function()
  it("itemsize, nbytes and is_cpu", function()
    local t = ember.zeros(3, 5)
    assert.equals(4, t.itemsize)
    assert.equals(60, t.nbytes)
    assert.is_true(t.is_cpu)
    assert.equals(2, ember.zeros(3, {dtype = "bfloat16"}).itemsize)
    assert.equals(6, ember.zeros(3, {dtype = "float16"}).nbytes)
    assert.equals(24, ember.zeros(3, {dtype = "int64"}).nbytes)
    assert.equals(1, ember.zeros(2, {dtype = "bool"}).itemsize)
    -- nbytes counts the view's elements, as PyTorch's
    assert.equals(20, t[1].nbytes)
    assert.equals(0, ember.zeros(0).nbytes)
  end)
end)
