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
    has(err(function() local _ = ember.as_tensor({1}, {dtype = "float64", layout = "strided"}) end), "layout")
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
    local e = err(function() local _ = ember.asarray(x, {dtype = "float64", copy = false}) end)
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
    local e = err(function() local _ = ember.asarray(ember.ones(2, {dtype = "int64"}), {requires_grad = true}) end)
    has(e, "ember.asarray: only floating point tensors can require gradients, got int64", "as_tensor_spec.lua:")
  end)

  it("copies tables, refuses copy = false for them, and checks its options", function()
    assert.are.same({1, 2}, ember.asarray({1, 2}):tolist())
    has(err(function() local _ = ember.asarray({1, 2}, {copy = false}) end), "a table or a number is always copied")
    has(err(function() local _ = ember.asarray({1}, {copy = "yes"}) end), "ember.asarray: copy must be a boolean, got string")
    has(err(function() local _ = ember.asarray({1}, "float64") end), "ember.asarray")
  end)
end)

describe("t:data_ptr, and PyTorch's other names for F's functions", function()
  it("data_ptr is the first element's address: shared by views, moved by offsets", function()
    local x = ember.zeros(4)
    assert.are.equal(x:data_ptr(), x:view(2, 2):data_ptr())
    assert.are.equal(x:data_ptr(), ember.as_tensor(x):data_ptr())
    assert.are_not.equal(x:data_ptr(), x:clone():data_ptr())
    assert.are.equal(4, x[2]:data_ptr() - x:data_ptr())                  -- one float32 on
    local m = ember.zeros(3, 4, {dtype = "float64"})
    assert.are.equal(8 * (4 + 2), m[2][3]:data_ptr() - m:data_ptr())      -- row 2, column 3
    has(err(function() local _ = x:data_ptr(1) end), "data_ptr: argument 1: one argument too many", "as_tensor_spec.lua:")
  end)

  it("t:prelu, t:hardshrink, ember.rms_norm and narrow_copy, values by hand", function()
    local x = ember.tensor({-1.0, 0.2, 2.0})
    h.check(x:prelu(ember.tensor({0.25})), {-0.25, 0.2, 2.0}, 1e-7)
    h.check(x:hardshrink(0.5), {-1, 0, 2})
    h.check(x:hardshrink(), {-1, 0, 2})
    -- rms over the 3 values: sqrt((1 + 0.04 + 4) / 3) = sqrt(1.68)
    local r = math.sqrt(1.68 + 1.1920928955078125e-07)
    h.check(ember.rms_norm(x, {3}), {-1 / r, 0.2 / r, 2 / r}, 1e-6)
    local c = x:narrow_copy(1, 2, 2)
    h.check(c, {0.2, 2.0}, 1e-7)
    c:fill_(9)
    h.check(x, {-1, 0.2, 2}, 1e-7)                                             -- a copy
    h.check(ember.narrow_copy(ember.arange(6):view(2, 3), 2, 2, 2), {{1, 2}, {4, 5}})
  end)
end)
