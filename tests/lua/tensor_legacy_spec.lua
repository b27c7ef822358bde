-- tensor_legacy_spec.lua — the Tensor methods of PyTorch's older code a port meets:
-- as_strided (a view; with autograd, a copy whose gradient adds up where elements repeat),
-- t:new (the legacy constructor), apply_ / map_ / map2_ (Lua callbacks, as Lua Torch's and
-- PyTorch's), unsafe_chunk / unsafe_split / unsafe_split_with_sizes, const_data_ptr.
-- Expected values by hand.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

describe("as_strided", function()
  it("views the storage with the sizes, strides and offset given", function()
    local x = ember.arange(1, 10):float()
    local v = x:as_strided({3, 3}, {1, 1})                   -- sliding windows of 3
    assert.are.same({{1, 2, 3}, {2, 3, 4}, {3, 4, 5}}, v:tolist())
    assert.are.same({{2, 3}, {5, 6}}, ember.as_strided(x, {2, 2}, {3, 1}, 1):tolist())
    v[{1, 1}] = 100                                            -- a view: the write reaches x
    assert.are.equal(100, x[1]:item())
    -- the offset is the storage's, not the input view's (as PyTorch's)
    local tail = x:narrow(1, 4, 3)
    assert.are.same({100, 2}, tail:as_strided({2}, {1}, 0):tolist())
    assert.are.same({4, 5}, tail:as_strided({2}, {1}):tolist())          -- default: tail's own offset
  end)

  it("records the gradient, adding it up where the view repeats an element", function()
    local w = ember.arange(1, 7, {dtype = "float64"}):requires_grad_()
    local v = w:as_strided({3, 2}, {1, 1})                   -- positions {0,1},{1,2},{2,3}
    assert.are.same({{1, 2}, {2, 3}, {3, 4}}, v:tolist())
    local loss = (v * ember.tensor({{1, 10}, {100, 1000}, {1e4, 1e5}}, {dtype = "float64"})):sum()
    loss:backward()
    -- element 1: 1; 2: 10 + 100; 3: 1000 + 1e4; 4: 1e5; 5, 6: none
    assert.are.same({1, 110, 11000, 100000, 0, 0}, w.grad:tolist())
    local t = ember.arange(1, 7, {dtype = "float64"}):view(2, 3):t():requires_grad_()
    local s = t:as_strided({2}, {3}, 1)                      -- storage positions 1 and 4: t's 2 and 5
    s:sum():backward()
    assert.are.same({{0, 0}, {1, 1}, {0, 0}}, t.grad:tolist())
  end)

  it("refuses views outside the storage and bad arguments, naming them", function()
    local x = ember.zeros(9)
    has(err(function() local _ = x:as_strided({4}, {3}) end), "as_strided: view of size [4] reaches outside its storage",
        "tensor_legacy_spec.lua:")
    has(err(function() local _ = x:as_strided({2, 2}, {1}) end), "mismatch in length of strides and shape")
    has(err(function() local _ = x:as_strided({2}, {-1}) end), "stride must be >= 0")
    has(err(function() local _ = x:as_strided(2, {1}) end), "size must be a list of integers")
    local w = ember.zeros(4, {requires_grad = true})
    has(err(function() local _ = w:narrow(1, 2, 2):as_strided({2}, {1}, 0) end),
        "reaches storage elements that [2] does not hold")
  end)
end)

describe("empty_strided, new_empty_strided, empty_permuted", function()
  it("lay the elements out at the strides asked for (PyTorch's strides)", function()
    local x = ember.empty_strided({2, 3}, {1, 2})
    assert(h.same(x.shape, {2, 3}) and x:stride(1) == 1 and x:stride(2) == 2 and not x:is_contiguous())
    -- writing through the view reaches the element (i, j) at storage position i + 2 j (0-based)
    x:copy_(ember.tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}))
    assert.are.same({1, 4, 2, 5, 3, 6}, x:as_strided({6}, {1}, 0):tolist())
    local y = ember.empty_permuted({2, 3, 4}, {1, 3, 2})
    assert.are.same({12, 1, 3}, {y:stride(1), y:stride(2), y:stride(3)})
    local z = ember.ones(2, {dtype = "float64"}):new_empty_strided({2, 2}, {0, 1})
    assert.are.equal("float64", z.dtype)
    assert.are.equal(0, z:stride(1))
    assert.is_true(ember.empty_strided({3}, {1}, {requires_grad = true}).requires_grad)
    assert(h.same(ember.empty_strided({2, 0}, {1, 1}).shape, {2, 0}))
  end)

  it("refuse mismatched lists and layouts that are not permutations", function()
    has(err(function() local _ = ember.empty_strided({2, 3}, {1}) end),
        "empty_strided: dimensionality of sizes (2) must match dimensionality of strides (1)", "tensor_legacy_spec.lua:")
    has(err(function() local _ = ember.empty_permuted({2, 3}, {1, 1}) end),
        "empty_permuted: physical_layout must be a permutation of 1..2")
    has(err(function() local _ = ember.empty_permuted({2, 3}, {1}) end), "len(size) = 2 is not equal to len(physical_layout) = 1")
    has(err(function() local _ = ember.empty_strided({2}, {1}, {pin_memory = true}) end), "pin_memory is not supported")
    has(err(function() local _ = ember.empty_strided({2}, {1}, {layout = "sparse_coo"}) end),
        "empty_strided: layout sparse_coo is not supported by ember (only strided)")
  end)
end)

describe("the legacy constructor t:new", function()
  it("makes tensors of t's dtype and device", function()
    local x = ember.ones(2, {dtype = "float64"})
    local e = x:new()
    assert.are.same({0}, e.shape)
    assert.are.equal("float64", e.dtype)
    assert.are.same({2, 3}, x:new(2, 3).shape)
    assert.are.same({3, 1}, x:new(ember.zeros(3, 1).shape).shape)
    local d = x:new({1, 2.5})
    assert.are.equal("float64", d.dtype)
    assert.are.same({1, 2.5}, d:tolist())
    assert.is_true(rawequal(x:new(x), x))
    has(err(function() local _ = x:new(ember.ones(1)) end), "new: expected a tensor of dtype float64 on cpu, got float32")
  end)
end)

describe("apply_, map_, map2_", function()
  it("write each element through a Lua function", function()
    local x = ember.tensor({{1, 2}, {3, 4}})
    assert.is_true(rawequal(x:apply_(function(v) return v * v end), x))
    assert.are.same({{1, 4}, {9, 16}}, x:tolist())
    x:map_(ember.tensor({10, 20}), function(a, b) return a + b end)        -- broadcast over rows
    assert.are.same({{11, 24}, {19, 36}}, x:tolist())
    x:map2_(ember.ones(2, 2), ember.tensor({{1, 2}, {3, 4}}), function(a, b, c) return a - b * c end)
    assert.are.same({{10, 22}, {16, 32}}, x:tolist())
    local i = ember.tensor({1, 2}, {dtype = "int64"})
    i:apply_(function(v) return v * 7 end)
    assert.are.same({7, 14}, i:tolist())
  end)

  it("refuse what PyTorch refuses", function()
    has(err(function() local _ = ember.ones(2):apply_(5) end), "apply_: expected a callable, got number")
    has(err(function() local _ = ember.ones(2, {requires_grad = true}):apply_(function(v) return v end) end),
        "tensor_legacy_spec.lua:")
  end)
end)

describe("the unsafe_ splits and const_data_ptr", function()
  it("are chunk, split and split_with_sizes, and data_ptr", function()
    local x = ember.arange(1, 8)
    local a, b = x:unsafe_chunk(2)
    assert.are.same({1, 2, 3, 4}, a:tolist())
    assert.are.same({5, 6, 7}, b:tolist())
    local p, q, r = ember.unsafe_split(x, 3)
    assert.are.same({{1, 2, 3}, {4, 5, 6}, {7}}, {p:tolist(), q:tolist(), r:tolist()})
    p, q = x:unsafe_split_with_sizes({2, 5})
    assert.are.same({{1, 2}, {3, 4, 5, 6, 7}}, {p:tolist(), q:tolist()})
    assert.are.equal(x:data_ptr(), x:const_data_ptr())
  end)
end)
