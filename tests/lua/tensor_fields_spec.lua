-- tensor_fields_spec.lua — X.T, X.mT, X.H, X.mH as PyTorch 2.x has
-- them (checked against PyTorch 2.15: T reverses every dim, also past 2-D, where PyTorch
-- warns that it is deprecated; H only for 0-D and 2-D; mT / mH swap the last two dims and
-- need 2 or more; 0-D tensors are returned as they are), an unknown field of a tensor is
-- an error naming it, and Sequential / ModuleList slicing with an inclusive range.
local ember = require "ember"
local h = require "helpers"
local nn = ember.nn

local err, has, check = h.err, h.has, h.check

describe("tensor properties T, mT, H, mH", function()
  local m = ember.tensor({{1, 2, 3}, {4, 5, 6}})

  it("transpose a matrix (real dtypes: H is T, mH is mT)", function()
    for _, k in ipairs{"T", "mT", "H", "mH"} do
      check(m[k], {{1, 4}, {2, 5}, {3, 6}})
    end
    -- a view: writing through it writes m
    local v = ember.zeros(2, 2)
    v.T[1][2] = 7
    check(v, {{0, 0}, {7, 0}})
  end)

  it("T reverses every dim, mT / mH swap the last two (PyTorch 2.15's shapes)", function()
    local x = ember.arange(1, 25):reshape(2, 3, 4)
    h.check_shape(x.T, {4, 3, 2})
    h.check_shape(x.mT, {2, 4, 3})
    h.check_shape(x.mH, {2, 4, 3})
    -- x.T[k][j][i] == x[i][j][k]: x[2][3][4] = 24, x[1][2][3] = 7
    assert.are.equal(24, x.T[4][3][2]:item())
    assert.are.equal(7, x.T[3][2][1]:item())
    assert.are.equal(7, x.mT[1][3][2]:item())
    check(ember.tensor({1, 2, 3}).T, {1, 2, 3})                  -- 1-D: as it is
    check(ember.tensor(5).T, 5)
    check(ember.tensor(5).mT, 5)                                   -- 0-D: as it is
    check(ember.tensor(5).H, 5)
  end)

  it("refuses H past 2-D and mT / mH below 2-D, as PyTorch", function()
    local x = ember.zeros(2, 3, 4)
    has(err(function() return x.H end), "tensor.H is only supported on matrices (2-D tensors), got a 3-D tensor")
    has(err(function() return ember.zeros(3).H end), "got a 1-D tensor")
    has(err(function() return ember.zeros(3).mT end),
        "tensor.mT is only supported on matrices or batches of matrices, got a 1-D tensor")
    has(err(function() return ember.zeros(3).mH end), "tensor.mH is only supported")
  end)

  it("raises an error naming an unknown field, at the caller's line", function()
    local x = ember.zeros(2)
    local e = err(function() local v = x.shap; return v end)
    has(e, "tensor_fields_spec.lua:")
    has(e, "tensor has no field or method 'shap'")
    e = err(function() local v = x.foo_bar; return v end)
    has(e, "'foo_bar'")
    -- methods, properties and indexing still work
    assert.are.equal(1, x:dim())
    assert.are.same({2}, {x.shape[1]})
    assert.is_nil(x.grad)
    assert.is_nil(x.grad_fn)
    assert.are.equal(0, x[1]:item())
  end)
end)

describe("Sequential / ModuleList slicing", function()
  local l1, r, l2, t, l3 = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)
  local seq = nn.Sequential(l1, r, l2, t, l3)

  it("seq[{1, 4}] is PyTorch's seq[:4]: a Sequential sharing the modules", function()
    local head = seq[{1, 4}]
    assert.are.equal("Sequential", getmetatable(head).__name)
    assert.are.equal(4, #head)
    assert.are.equal(l1, head[1])
    assert.are.equal(t, head[4])
    -- the same computation as the first four layers
    local x = ember.randn(5, 2)
    check(head(x), t(l2(r(l1(x)))):tolist(), 1e-6)
  end)

  it("takes negative positions, a step, {} and the tensor form {{a, b}}", function()
    local tail = seq[{-2, -1}]
    assert.are.same({2, true, true}, {#tail, tail[1] == t, tail[2] == l3})
    local odd = seq[{1, 5, 2}]
    assert.are.same({3, true, true, true}, {#odd, odd[1] == l1, odd[2] == l2, odd[3] == l3})
    assert.are.equal(5, #seq[{}])
    assert.are.equal(l2, seq[{{3, 3}}][1])
    assert.are.equal(r, seq[{2}][1])
  end)

  it("slices a ModuleList into a ModuleList", function()
    local list = nn.ModuleList({l1, r, l2})
    local s = list[{2, 3}]
    assert.are.equal("ModuleList", getmetatable(s).__name)
    assert.are.same({2, true, true}, {#s, s[1] == r, s[2] == l2})
  end)

  it("refuses ranges out of bounds and modules without slicing", function()
    has(err(function() return seq[{0, 2}] end), "Sequential[{start, stop [, step]}]: range {0, 2, 1} out of bounds for 5 modules")
    has(err(function() return seq[{1, 6}] end), "out of bounds")
    has(err(function() return seq[{1, 2, 0}] end), "out of bounds")
    has(err(function() return seq[{1, 2.5}] end), "range entry 2 must be an integer")
    has(err(function() return nn.Linear(2, 2)[{1, 2}] end), "Linear: a table index ({start, stop}) slices a Sequential")
  end)
end)
