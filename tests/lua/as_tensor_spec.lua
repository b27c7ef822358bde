-- as_tensor_spec.lua — ember.as_tensor and ember.asarray: the tensor itself when nothing is
-- to change, a copy when the dtype or device changes, PyTorch 2.15's answers to copy and
-- requires_grad (read from a run of it: asarray(x, requires_grad = true) sets the flag on x
-- itself and returns x; copy = true gives a new leaf; copy = false with a dtype change is an
-- error).
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

describe("ember.as_tensor", function()
  it("returns a tensor of the asked dtype and device itself, sharing its memory", function()
    local x = ember.ones(2)
    assert.is_true(rawequal(ember.as_tensor(x), x))
    assert.is_true(rawequal(ember.as_tensor(x, "float32"), x))
    assert.is_true(rawequal(ember.as_tensor(x, {dtype = "float32", device = "cpu"}), x))
  end)

  it("converts another dtype, recording it for autograd", function()
    local w = ember.tensor({1.5, -2.0}, {requires_grad = true})
    local y = ember.as_tensor(w, {dtype = "float64"})
    assert.are.equal("float64", y.dtype)
    assert.is_true(y.requires_grad)
    y:sum():backward()
    assert.are.same({1, 1}, w.grad:tolist())
    local i = ember.as_tensor(w:detach(), "int64")
    assert.are.same({1, -2}, i:tolist())
    i:add_(5)
    assert.are.same({1.5, -2.0}, w:detach():tolist())      -- a copy: w is untouched
  end)

  it("makes tensors of tables and numbers as ember.tensor does", function()
    assert.are.equal("int64", ember.as_tensor({1, 2}).dtype)
    assert.are.equal("float32", ember.as_tensor({1.5}).dtype)
    assert.are.equal(0, ember.as_tensor(3):dim())
    assert.are.equal("bool", ember.as_tensor(true).dtype)
    assert.are.same({1, 2}, ember.as_tensor({1, 2}, {dtype = "float64"}):tolist())
    has(err(function() return ember.as_tensor({1}, {dtype = "float64", layout = "strided"}) end), "layout")
  end)
end)

describe("ember.asarray", function()
  it("aliases a tensor unless a copy is asked or a change needs one", function()
    local x = ember.ones(2)
    local a = ember.asarray(x)
    assert.is_true(rawequal(a, x))
    local c = ember.asarray(x, {copy = true})
    c:add_(1)
    assert.are.same({1, 1}, x:tolist())
    assert.are.same({2, 2}, c:tolist())
    local d = ember.asarray(x, {dtype = "float64"})
    assert.are.equal("float64", d.dtype)
    local e = err(function() return ember.asarray(x, {dtype = "float64", copy = false}) end)
    has(e, "ember.asarray: copy = false, but a float32 tensor on cpu cannot be aliased as float64 on cpu", "as_tensor_spec.lua:")
    assert.is_true(rawequal(ember.asarray(x, {copy = false}), x))
  end)

  it("sets requires_grad on the tensor itself, as PyTorch 2.15 does", function()
    local x = ember.ones(2)
    local a = ember.asarray(x, {requires_grad = true})
    assert.is_true(rawequal(a, x))
    assert.is_true(x.requires_grad)
    local w = ember.ones(2, {requires_grad = true})
    local c = ember.asarray(w, {copy = true})
    assert.is_false(c.requires_grad)                          -- a new leaf
    assert.is_true(ember.asarray({1.0, 2.0}, {requires_grad = true}).requires_grad)
    local e = err(function() return ember.asarray(ember.ones(2, {dtype = "int64"}), {requires_grad = true}) end)
    has(e, "ember.asarray: only floating point tensors can require gradients, got int64", "as_tensor_spec.lua:")
  end)

  it("copies tables, refuses copy = false for them, and checks its options", function()
    assert.are.same({1, 2}, ember.asarray({1, 2}):tolist())
    has(err(function() return ember.asarray({1, 2}, {copy = false}) end), "a table or a number is always copied")
    has(err(function() return ember.asarray({1}, {copy = "yes"}) end), "ember.asarray: copy must be a boolean, got string")
    has(err(function() return ember.asarray({1}, "float64") end), "ember.asarray")
  end)
end)
