-- narrow_int_spec.lua — the int8 and int16 dtypes (torch.int8 / torch.int16, Tensor.char /
-- Tensor.short): names, promotion, two's-complement wrap-around, conversions, reductions,
-- sorting, indexing, random draws, iinfo, saving and loading, and the errors. Expected
-- values: worked by hand (the wrap is the value modulo 2^8 or 2^16, taken into the signed
-- range) and checked against what PyTorch 2.15 printed for the same expressions (quoted
-- where they were surprising). The same ops on the emulated CUDA device are in
-- tests/gpu/ops_table_spec.lua (every elementwise op on every dtype) and
-- tests/gpu/composite_parts_spec.lua.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

local function t8(v) return ember.tensor(v, {dtype = "int8"}) end
local function t16(v) return ember.tensor(v, {dtype = "int16"}) end

local function same(t, dtype, want)
  assert.are.equal(dtype, t.dtype)
  assert.are.same(want, t:tolist())
end

describe("int8 and int16", function()
  it("have PyTorch's names, sizes and conversions", function()
    assert.are.equal("int8", ember.int8)
    assert.are.equal("int16", ember.int16)
    assert.are.equal("int16", ember.short)
    local x = ember.tensor({1.9, -2.9, 3})
    same(x:char(), "int8", {1, -2, 3})
    same(x:short(), "int16", {1, -2, 3})
    same(x:to("int8"), "int8", {1, -2, 3})
    assert.are.equal(1, t8({1}):element_size())
    assert.are.equal(2, t16({1}):element_size())
    assert.is_true(ember.is_signed(t8({1})))
    assert.is_false(ember.is_floating_point(t16({1})))
    assert.are.equal("tensor([ 1, -2], dtype=int8)", tostring(t8({1, -2})))
  end)

  it("wrap around as two's complement", function()
    local a = t8({100, -100, 127, -128})
    same(a + a, "int8", {-56, 56, -2, 0})
    same(a * 3, "int8", {44, -44, 125, -128})
    same(-a, "int8", {-100, 100, -127, -128})
    same(a:abs(), "int8", {100, 100, 127, -128})             -- |-128| is -128, as in PyTorch
    same(a - t8({1}), "int8", {99, -101, 126, 127})
    same(t8({2, -3}):pow(7), "int8", {-128, 117})            -- 128 and -2187 modulo 256
    local s = t16({30000, -30000, 3})
    same(s + s, "int16", {-5536, 5536, 6})
    same(t16({3}):bitwise_left_shift(14), "int16", {-16384})
    same(t8({3, -1}):bitwise_not(), "int8", {-4, 0})
    same(t8({-16}):bitwise_right_shift(2), "int8", {-4})     -- arithmetic shift
    same(t8({0x55}):bitwise_and(t8({0x0f})), "int8", {5})
  end)

  it("divide, floor-divide and take remainders as PyTorch", function()
    local a = t8({100, -100, 127, -128})
    assert.are.equal("float32", (a / 3).dtype)
    same(a // 3, "int8", {33, -34, 42, -43})
    same(a % 3, "int8", {1, 2, 1, 1})                        -- the divisor's sign
    same(ember.fmod(a, 3), "int8", {1, -1, 1, -2})           -- the dividend's sign
  end)

  it("promote as PyTorch's table", function()
    local a, u = t8({1}), ember.tensor({1}, {dtype = "uint8"})
    assert.are.equal("int16", (a + u).dtype)                 -- neither holds the other
    assert.are.equal("int16", (a + t16({1})).dtype)
    assert.are.equal("int16", (t16({1}) + u).dtype)
    assert.are.equal("int8", (ember.tensor({true}) + a).dtype)
    assert.are.equal("int32", (a + ember.tensor({1}, {dtype = "int32"})).dtype)
    assert.are.equal("int64", (a + ember.tensor({1})).dtype)
    assert.are.equal("float16", (a + ember.tensor({1}, {dtype = "float16"})).dtype)
    assert.are.equal("float32", (t16({1}) * 2.5).dtype)
    assert.are.equal("int8", (a + 5).dtype)                   -- a number is a weak operand
    same(ember.cat({a, u}), "int16", {1, 1})
    assert.are.equal("int16", ember.promote_types("int8", "uint8"))
    assert.are.equal("int16", ember.result_type(t16({1}), a))
  end)

  it("convert from floats and wider integers by truncating, then keeping the low bits", function()
    -- 300 = 256 + 44; 1e10 = 2^10 * 9765625 is 0 modulo 256; 70000 - 65536 = 4464
    same(ember.tensor({300.7, -300.2, 1e10, -0.9}):to("int8"), "int8", {44, -44, 0, 0})
    same(ember.tensor({70000.0, -1.5, 40000.0}):to("int16"), "int16", {4464, -1, -25536})
    same(ember.tensor({255, 256, -129, 65535}):to("int8"), "int8", {-1, 0, 127, -1})
    same(ember.tensor({65535, 32768}):to("int16"), "int16", {-1, -32768})
    same(t8({-1, -128}):to("int16"), "int16", {-1, -128})
    same(t8({-1}):to("uint8"), "uint8", {255})
    same(t16({-2}):to("float64"), "float64", {-2})
  end)

  it("reduce into int64 where PyTorch does", function()
    local a = t8({100, -100, 127, -128})
    same(a:sum(), "int64", -1)
    same(a:cumsum(1), "int64", {100, 0, 127, -1})
    assert.are.equal("int64", a:prod().dtype)
    same(t16({1000, 1000, 1000, 1000}):sum(), "int64", 4000)
    same(a:max(), "int8", 127)
    same(a:min(), "int8", -128)
    assert.are.equal(4, a:argmin():item())                   -- ember's positions are 1-based
    same(ember.topk(t16({30000, -30000, 3}), 2), "int16", {30000, 3})
    has(err(function() local _ = a:mean() end), "mean", "int8", "narrow_int_spec.lua:")
    assert.are.equal(1.5, t8({1, 2}):float():mean():item())
  end)

  it("sort with the sign", function()
    local v, i = ember.sort(t8({5, -3, 0, -128, 127}))
    same(v, "int8", {-128, -3, 0, 5, 127})
    assert.are.same({4, 2, 3, 1, 5}, i:tolist())
    v = ember.sort(t16({-300, 300, -32768, 32767}), {descending = true})
    same(v, "int16", {32767, 300, -300, -32768})
    same(ember.unique(t8({3, -1, 3, -1, 0})), "int8", {-1, 0, 3})
    same(ember.bincount(t8({1, 1, 3})), "int64", {2, 0, 1})  -- counts of 1, 2, 3 (1-based)
  end)

  it("index, scatter and select", function()
    same(ember.zeros(3, {dtype = "int8"}):scatter_add(1, ember.tensor({1, 1, 2}), t8({100, 100, -7})), "int8",
         {-56, -7, 0})
    same(t16({{1, 2}, {3, 4}}):gather(2, ember.tensor({{2}, {1}})), "int16", {{2}, {3}})
    same(ember.where(ember.tensor({true, false}), t8({1, 2}), t16({-5, 600})), "int16", {1, 600})
    local x = t8({1, 2, 3})
    x[2] = -7
    same(x, "int8", {1, -7, 3})
    same(x:masked_fill(ember.tensor({true, false, true}), -128), "int8", {-128, -7, -128})
    same(t16({1, 2, 3}):index_select(1, ember.tensor({3, 1})), "int16", {3, 1})
    same(x:clamp(-5, 1000), "int8", {1, -5, 3})              -- a bound past the range clamps nothing
    same(ember.full({2}, -128, {dtype = "int8"}), "int8", {-128, -128})
    same(x:view(1, 3):t():contiguous():view(-1), "int8", {1, -7, 3})
  end)

  it("draw random integers over their whole range", function()
    ember.manual_seed(3)
    local r = ember.randint(-128, 128, {4000}, {dtype = "int8"})
    assert.are.equal("int8", r.dtype)
    assert.are.equal(-128, r:min():item())
    assert.are.equal(127, r:max():item())
    r = ember.randint(-32768, 32768, {1000}, {dtype = "int16"})
    assert.is_true(r:min():item() < -30000 and r:max():item() > 30000)
    -- ember's permutations are of 1 .. n, so int8 holds n = 127 (PyTorch's 0 .. n - 1: 128)
    local p = ember.randperm(127, {dtype = "int8"})
    same(ember.sort(p), "int8", (function() local l = {} for k = 1, 127 do l[#l + 1] = k end return l end)())
    has(err(ember.randperm, 128, {dtype = "int8"}), "randperm: n=128 is too large for dtype int8")
    has(err(ember.randint, 0, 129, {2}, {dtype = "int8"}), "randint", "does not fit dtype int8")
    has(err(ember.randint, -129, 0, {2}, {dtype = "int8"}), "randint", "does not fit dtype int8")
  end)

  it("have iinfo as torch.iinfo", function()
    assert.are.equal("iinfo(min=-128, max=127, dtype=int8)", tostring(ember.iinfo("int8")))
    assert.are.equal("iinfo(min=-32768, max=32767, dtype=int16)", tostring(ember.iinfo("int16")))
    assert.are.equal(8, ember.iinfo("int8").bits)
    assert.are.equal(16, ember.iinfo("int16").bits)
  end)

  it("refuse what PyTorch refuses, naming the op and the dtype", function()
    has(err(ember.full, {2}, 128, {dtype = "int8"}), "value 128 cannot be converted to int8")
    has(err(function() local _ = t8({1}):fill_(200) end), "200", "int8", "narrow_int_spec.lua:")
    has(err(function() local _ = ember.tensor({1}, {dtype = "int8", requires_grad = true}) end), "int8",
        "narrow_int_spec.lua:")
    has(err(ember.zeros, 2, {dtype = "int4"}), "unknown dtype 'int4'", "int16", "int8")
  end)

  it("refuse numbers outside an integer dtype's range in ember.tensor, as torch.tensor does", function()
    -- PyTorch 2.15: "value cannot be converted to type int8 without overflow"; ember had wrapped
    has(err(function() local _ = t8({1, 200}) end),
        "ember.tensor: value 200 (element 2) cannot be converted to int8 without overflow", "narrow_int_spec.lua:")
    has(err(function() local _ = t16({{1}, {-32769}}) end), "value -32769 (element 2)", "int16")
    has(err(function() local _ = ember.tensor({300}, {dtype = "uint8"}) end), "value 300", "uint8")
    has(err(function() local _ = ember.tensor({2 ^ 40}, {dtype = "int32"}) end), "value 1099511627776", "int32")
    has(err(function() local _ = ember.tensor(0 / 0, {dtype = "int64"}) end), "value nan", "int64")
    same(t8({127.9, -128, 0}), "int8", {127, -128, 0})        -- the fraction is cut off, as in PyTorch
  end)

  it("save and load through safetensors", function()
    local path = os.tmpname()
    local x, y = t8({-128, 0, 127}), t16({{-32768, 1}, {2, 32767}})
    ember.save(path, {x = x, y = y})
    local back = ember.load(path)
    os.remove(path)
    same(back.x, "int8", {-128, 0, 127})
    same(back.y, "int16", {{-32768, 1}, {2, 32767}})
  end)
end)
