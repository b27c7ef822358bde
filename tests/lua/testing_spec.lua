-- testing_spec.lua — ember.testing (lua/ember/testing.lua): assert_close against PyTorch
-- 2.15's torch.testing.assert_close (fixtures/testing.lua, written by
-- scripts/fixtures/make_testing_fixtures.py: every pair of dtypes, the default tolerance
-- edges, NaN and infinities, numbers, nested tables, the messages, and Python's repr of the
-- numbers they print), the tolerance edges worked out by hand, the options and misuse,
-- assert_allclose, and make_tensor's ranges, dtypes, shapes and flags.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local T = ember.testing

-- the message of a failed call without the "file:line: " in front
local function message(f, ...)
  return (err(f, ...):gsub("^[^\n]-:%d+: ", "", 1))
end

local function passes(...) T.assert_close(...) end
local function fails(...) return message(T.assert_close, ...) end

-- float32 rounding of a double, by the C library (string.pack), not by ember
local function f32(x) return (string.unpack("f", string.pack("f", x))) end

describe("assert_close against PyTorch (fixtures)", function()
  local fx = h.fixture("testing.lua")
  local env = setmetatable({ember = ember}, {__index = _G})
  for _, c in ipairs(fx.cases) do
    it(c.name, function()
      local a = assert(load("return " .. c.actual, "actual", "t", env))()
      local e = assert(load("return " .. c.expected, "expected", "t", env))()
      local ok, e_ = pcall(T.assert_close, a, e, c.opts)
      if c.message == nil then
        assert(ok, "expected to pass, raised: " .. tostring(e_))
      else
        assert(not ok, "expected to fail with: " .. c.message)
        assert.are.equal(c.message, (tostring(e_):gsub("^[^\n]-:%d+: ", "", 1)))
      end
    end)
  end

  it("numbers print as Python's repr (the shortest digits that read back)", function()
    local bad = {}
    for _, r in ipairs(fx.reprs) do
      local x, want = r[1], r[2]
      local msg = fails(x, x == 0 and 1.0 or 0.0, {rtol = 0, atol = 0})
      local got = msg:match("but got (.-)%.\n")
      if got ~= want then bad[#bad + 1] = string.format("%a: want %s, got %s", x, want, tostring(got)) end
    end
    assert(#fx.reprs > 1000 and #bad == 0, table.concat(bad, "\n"))
  end)
end)

describe("assert_close at the tolerance edges (by hand)", function()
  it("given tolerances: |a - b| <= atol + rtol * |b|, float64", function()
    local o = {rtol = 0.25, atol = 0.5}   -- at b = 2 the allowed difference is exactly 1
    local function t(x) return ember.tensor({x}, {dtype = "float64"}) end
    passes(t(3.0), t(2.0), o)
    passes(t(1.0), t(2.0), o)
    passes(t(-3.0), t(-2.0), o)
    has(fails(t(3.0 + 2 ^ -51), t(2.0), o), "Mismatched elements: 1 / 1 (100.0%)")   -- the next double above 3
    fails(t(1.0 - 2 ^ -52), t(2.0), o)   -- 2 doubles below 1: 1 - 2^-53 would differ by 1 + 2^-53, rounded to 1
    fails(t(-3.0 - 2 ^ -51), t(-2.0), o)
    -- the relative part counts |b|, not |a|
    passes(t(0.0), t(2.0), {rtol = 1, atol = 0})
    fails(t(2.0), t(0.0), {rtol = 1, atol = 0})
  end)

  it("given tolerances in float32, float16 and bfloat16 (dyadic, so exact in each)", function()
    for dtype, ulp in pairs({float32 = 2 ^ -22, float16 = 2 ^ -9, bfloat16 = 2 ^ -6}) do
      local function t(x) return ember.tensor({x}, {dtype = dtype}) end
      local o = {rtol = 0.25, atol = 0.5}
      passes(t(3.0), t(2.0), o)
      has(fails(t(3.0 + ulp), t(2.0), o), "(up to 0.5 allowed)")
      passes(t(1.0), t(2.0), o)
      fails(t(1.0 - ulp / 2), t(2.0), o)
    end
  end)

  it("float64 defaults (1e-7, 1e-7)", function()
    local function t(x) return ember.tensor({x}, {dtype = "float64"}) end
    local step = 2 ^ (math.floor(math.log(1e-7, 2)) - 52)   -- the spacing of doubles at 1e-7
    passes(t(1e-7), t(0.0))
    has(fails(t(1e-7 + step), t(0.0)), "(up to 1e-07 allowed)")
    -- at b = 1: a = 1 + k * 2^-52 differs by exactly k * 2^-52; allowed 2 * 1e-7
    local k = math.floor(2 * 1e-7 / 2 ^ -52)
    passes(t(1 + k * 2 ^ -52), t(1.0))
    fails(t(1 + (k + 1) * 2 ^ -52), t(1.0))
    passes(1 + k * 2 ^ -52, 1.0)   -- Lua floats are float64 too
    fails(1 + (k + 1) * 2 ^ -52, 1.0)
  end)

  it("float32 defaults at 0: atol = 1e-5 rounded to float32", function()
    local function t(x) return ember.tensor({x}, {dtype = "float32"}) end
    local atol = f32(1e-5)
    local step = 2 ^ (math.floor(math.log(atol, 2)) - 23)
    passes(t(atol), t(0.0))
    passes(t(-atol), t(0.0))
    has(fails(t(atol + step), t(0.0)), "(up to 1e-05 allowed)")
  end)

  it("integers compare exactly by default; given tolerances apply to them", function()
    local function t(x) return ember.tensor({x}, {dtype = "int64"}) end
    has(fails(t(9), t(8)), "Tensor-likes are not equal!")
    local o = {rtol = 0.25, atol = 1}   -- at 8: 3
    passes(t(11), t(8), o)
    passes(t(5), t(8), o)
    fails(t(12), t(8), o)
    fails(t(4), t(8), o)
    passes(11, 8, o)
    fails(12, 8, o)
  end)

  it("bool: equality by default, PyTorch's isclose in float32 with a tolerance", function()
    local a, b = ember.tensor({true, false}), ember.tensor({false, false})
    has(fails(a, b), "Tensor-likes are not equal!")
    passes(a, b, {rtol = 0, atol = 1})
    fails(a, b, {rtol = 0, atol = 0.5})
  end)

  it("NaN and infinities", function()
    local nan, inf = 0 / 0, math.huge
    local function t(...) return ember.tensor({...}, {dtype = "float64"}) end
    passes(t(inf, -inf), t(inf, -inf))
    fails(t(inf), t(-inf))
    has(fails(t(inf), t(1e300), {rtol = 1e10, atol = 1e300}), "Greatest absolute difference: inf at index {1}")
    has(fails(t(1.0, nan), t(1.0, nan)), "Greatest absolute difference: nan at index {2}")
    passes(t(1.0, nan), t(1.0, nan), {equal_nan = true})
    fails(t(nan), t(inf), {equal_nan = true})
    fails(t(nan), t(1.0), {equal_nan = true})
    fails(nan, nan)
    passes(nan, nan, {equal_nan = true})
    passes(inf, inf)
    fails(inf, -inf)
    fails(inf, 1e308, {rtol = 1, atol = 1e308})
  end)
end)

describe("assert_close: tables, numbers and types", function()
  it("nested lists and mappings, their items named 1-based in Lua's syntax", function()
    local w = ember.tensor({1.0, 2.0})
    passes({w, {x = 1.0, y = {2, true}}}, {w:clone(), {y = {2, true}, x = 1.0}})
    local msg = fails({w, {x = 1.0, y = {2, ember.tensor({3.0})}}}, {w, {x = 1.0, y = {2, ember.tensor({3.5})}}})
    has(msg, "Tensor-likes are not close!")
    has(msg, "\n\nThe failure occurred for item [2][\"y\"][2]")
    has(fails({{1.0}, {2.0}}, {{1.0}, {2.0, 3.0}}), "The length of the sequences mismatch: 1 != 2\n\n"
        .. "The failure occurred for item [2]")
    has(fails({a = 1.0, [2] = 1.0}, {a = 1.0, b = 1.0, [1] = 1.0}), "Missing keys in the actual mapping: {1, \"b\"}\n"
        .. "Additional keys in the actual mapping: {2}")
    -- a list with a hole is a mapping: its keys show what is missing
    has(fails({[1] = 1.0, [3] = 3.0}, {1.0, 2.0, 3.0}), "Missing keys in the actual mapping: {2}")
    passes({}, {})
    passes(ember.zeros(2, 3).shape, {2, 3})   -- an ember.Size is a list of integers
    has(fails(ember.zeros(2, 3).shape, {2, 4}), "Scalars are not equal!\n\nExpected 4 but got 3.")
  end)

  it("structure errors come before any value is compared, and msg does not replace them", function()
    -- item 1 differs, but item 2 cannot be compared at all: PyTorch pairs everything first
    has(fails({2.0, "a"}, {1.0, 1.0}, {msg = "custom"}),
        "assert_close: No comparison pair was able to handle inputs of type string and float.\n\n"
        .. "The failure occurred for item [2]")
    has(fails({1.0, 2.0}, {1.0}, {msg = "custom"}), "The length of the sequences mismatch: 2 != 1")
    -- the first failed comparison is raised
    has(fails({ember.tensor({1.0}), 1}, {ember.tensor({2.0}), 2}), "Tensor-likes are not close!")
  end)

  it("numbers, booleans and nil", function()
    passes(3, 3)
    has(fails(1, 1.0), "The (d)types do not match: integer != float.")
    passes(1, 1.0, {check_dtype = false})
    passes(true, true)
    has(fails(true, false), "Booleans mismatch: true is not false")
    passes(nil, nil)
    has(fails(nil, 1), "nil mismatch: nil is not 1")
    has(fails({}, nil), "nil mismatch: table")
    has(fails(true, 1), "assert_close: No comparison pair was able to handle inputs of type boolean and integer.")
    has(fails(ember.tensor(1.0), 1.0), "inputs of type ember.Tensor and float.")
    has(fails(ember.nn.Linear(1, 1), ember.nn.Linear(1, 1)), "of type Linear and Linear.")
    has(fails(print, print), "of type function and function.")
  end)

  it("dtype, device and stride checks", function()
    local a, b = ember.tensor({1.0, 2.0}), ember.tensor({1.0, 2.0}, {dtype = "float64"})
    has(fails(a, b), "The values for attribute 'dtype' do not match: float32 != float64.")
    passes(a, b, {check_dtype = false})
    -- compared in the promoted dtype, with the looser tolerances of the two
    passes(ember.tensor({1.0}, {dtype = "float16"}), ember.tensor({1.0009765625}), {check_dtype = false})
    has(fails(ember.tensor({1.0}, {dtype = "int64"}), ember.tensor({1.5}), {check_dtype = false}),
        "(up to 1e-05 allowed)")
    local m = ember.tensor({{1.0, 2.0}, {3.0, 4.0}})
    passes(m:t(), m:t():contiguous())
    has(fails(m:t(), m:t():contiguous(), {check_stride = true}),
        "The values for attribute 'stride()' do not match: {1, 2} != {2, 1}.")
    has(fails(m, m:reshape(4)), "The values for attribute 'shape' do not match: ember.Size({2, 2}) != ember.Size({4}).")
    passes(m, m, {check_layout = false, allow_subclasses = false})
    if ember.cuda.is_available() then
      local g = m:to("cuda")
      has(fails(g, m), "The values for attribute 'device' do not match: " .. tostring(g.device) .. " != cpu.")
      passes(g, m, {check_device = false})
      has(fails(g, m + 1, {check_device = false}), "Mismatched elements: 4 / 4 (100.0%)")
    end
  end)

  it("tensors that require grad compare without being recorded", function()
    local x = ember.tensor({1.0, 2.0}, {requires_grad = true})
    local y = x * 2
    passes(y, ember.tensor({2.0, 4.0}))
    fails(y, ember.tensor({2.0, 5.0}))
    assert.is_nil(x.grad)
    y:sum():backward()
    h.check(x.grad, {2, 2})
  end)

  it("msg: a string replaces a failed comparison's message, a function rewrites it", function()
    local a, b = ember.tensor({1.0, 4.0}), ember.tensor({1.0, 2.0})
    assert.are.equal("Argh", fails(a, b, {msg = "Argh"}))
    assert.are.equal("custom", fails({a}, {b}, {msg = "custom"}))   -- without the item line
    local msg = fails({a}, {b}, {msg = function(m) return "Header\n\n" .. m .. "\n\nFooter" end})
    has(msg, "Header\n\nTensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n")
    has(msg, "The failure occurred for item [1]\n\nFooter")
    has(fails(a, b, {msg = function() return 1 end}), "assert_close: option 'msg' must return a string, got number")
    passes(a, a, {msg = function() error("not called") end})
  end)

  it("raises at the caller's line", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, e = pcall(function() T.assert_close(ember.ones(2), ember.zeros(2)) end)
    assert(not ok)
    assert(tostring(e):match("^[^\n]*testing_spec%.lua:" .. line .. ": Tensor%-likes are not close!"), e)
    line = debug.getinfo(1, "l").currentline + 1
    ok, e = pcall(function() T.assert_close(1.0, 1.0, {rtol = 1}) end)
    assert(tostring(e):match("^[^\n]*testing_spec%.lua:" .. line .. ": assert_close: Both 'rtol' and 'atol'"), e)
  end)

  it("bad arguments", function()
    local a = ember.ones(2)
    has(err(T.assert_close, a), "assert_close: missing required argument 'expected'")
    has(err(T.assert_close), "assert_close: missing required arguments 'actual' and 'expected'")
    has(err(T.assert_close, a, a, {tol = 1}), "assert_close: unknown option 'tol'")
    has(err(T.assert_close, a, a, 1e-3), "assert_close: too many positional arguments")
    has(err(T.assert_close, a, a, {rtol = -1, atol = 0}), "assert_close: rtol must be a number greater than or equal "
        .. "to zero, got -1")
    has(err(T.assert_close, a, a, {rtol = 0, atol = 0 / 0}), "assert_close: atol must be a number")
    has(err(T.assert_close, a, a, {rtol = "1", atol = 0}), "assert_close: rtol must be a number greater than or equal "
        .. "to zero, got string")
    has(err(T.assert_close, a, a, {equal_nan = 1}), "assert_close: option 'equal_nan' must be a boolean, got number")
    has(err(T.assert_close, a, a, {check_dtype = "no"}), "assert_close: option 'check_dtype' must be a boolean")
    has(err(T.assert_close, a, a, {msg = 3}), "assert_close: option 'msg' must be a string or a function")
    has(err(T.assert_close, a, a, {atol = 0.1}), "assert_close: Both 'rtol' and 'atol' must be either specified or "
        .. "omitted, but got no rtol.")
    -- as PyTorch, a lone tolerance is only refused where numbers are compared
    passes(true, true, {rtol = 0.1})
  end)
end)

describe("assert_allclose (deprecated in PyTorch, still there)", function()
  it("its own defaults: float32 1e-4 / 1e-5, float64 1e-5 / 1e-8, float16 1e-3 / 1e-3, else 0", function()
    local A = T.assert_allclose
    local function t(x, dtype) return ember.tensor({x}, {dtype = dtype}) end
    A(t(1 + 2 ^ -14, "float32"), t(1.0, "float32"))            -- 6.1e-5 <= 1e-5 + 1e-4
    has(message(A, t(1 + 2 ^ -13, "float32"), t(1.0, "float32")), "(up to 0.0001 allowed)")
    A(t(1 + 2 ^ -17, "float64"), t(1.0, "float64"))            -- 7.6e-6 <= 1e-8 + 1e-5
    has(message(A, t(1 + 2 ^ -16, "float64"), t(1.0, "float64")), "(up to 1e-08 allowed)")
    A(t(1 + 2 ^ -10, "float16"), t(1.0, "float16"))            -- 9.8e-4 <= 2e-3
    has(message(A, t(1 + 2 ^ -8, "float16"), t(1.0, "float16")), "(up to 0.001 allowed)")
    has(message(A, t(1 + 2 ^ -7, "bfloat16"), t(1.0, "bfloat16")), "Tensor-likes are not equal!")
  end)

  it("converts its inputs, compares dtypes loosely, NaN equal by default, positional options", function()
    local A = T.assert_allclose
    A(ember.tensor({1.0, 0 / 0}), {1.0, 0 / 0})
    has(message(A, ember.tensor({1.0, 0 / 0}), {1.0, 0 / 0}, nil, nil, false), "Mismatched elements: 1 / 2")
    A({1, 2}, ember.tensor({1.0, 2.0}))                         -- int64 against float32
    has(message(A, {1, 2}, ember.tensor({1.0, 2.5})), "Greatest relative difference: 0.20000000298023224 at "
        .. "index {2} (up to 0.0001 allowed)")
    A(ember.tensor({1.0}), {1.25}, 0, 0.25)
    has(message(A, ember.tensor({1.0}), 1.0), "The values for attribute 'shape' do not match")
    assert.are.equal("no", message(A, ember.tensor({1.0}), {2.0}, nil, nil, true, "no"))
    has(message(A, ember.tensor({1.0}), {2.0}, {msg = ""}), "Tensor-likes are not close!")
    has(message(A, ember.tensor({1.0}), {2.0}, {rtol = 0.1}), "assert_allclose: Both 'rtol' and 'atol'")
    has(message(A, ember.tensor({1.0}), {"x"}), "assert_allclose: cannot make a tensor of expected")
    has(message(A, ember.tensor({1.0}), {2.0}, {msg = 1}), "assert_allclose: msg must be a string, got number")
    has(message(A, ember.tensor({1.0})), "assert_allclose: missing required arguments")
  end)
end)

describe("make_tensor", function()
  local M = T.make_tensor
  local function opts(dtype, extra)
    local o = {dtype = dtype, device = "cpu"}
    for k, v in pairs(extra or {}) do o[k] = v end
    return o
  end
  -- the smallest and largest of t's values, as doubles
  local function range(t)
    local f = t:to("float64")
    return f:min():item(), f:max():item()
  end
  -- the distinct values of an integral tensor, sorted
  local function distinct(t)
    local seen, out = {}, {}
    for _, v in ipairs(t:to("int64"):reshape(-1):tolist()) do
      if not seen[v] then seen[v] = true; out[#out + 1] = v end
    end
    table.sort(out)
    return out
  end
  local function from_to(a, b)
    local out = {}
    for v = a, b do out[#out + 1] = v end
    return out
  end

  it("PyTorch's default ranges: floating [-9, 9), signed [-9, 10), uint8 [0, 10), bool [0, 2)", function()
    ember.manual_seed(1)
    for _, d in ipairs({"float32", "float64", "float16", "bfloat16"}) do
      local t = M(4000, opts(d))
      assert.are.equal(d, t.dtype)
      local lo, hi = range(t)
      assert(lo >= -9 and lo < -8.9 and hi > 8.9 and hi <= 9, d .. ": " .. lo .. " " .. hi)
    end
    for _, d in ipairs({"int64", "int32"}) do
      assert.are.same(from_to(-9, 9), distinct(M(4000, opts(d))))
    end
    assert.are.same(from_to(0, 9), distinct(M(4000, opts("uint8"))))
    local b = M(1000, opts("bool"))
    assert.are.equal("bool", b.dtype)
    local n = b:sum():item()
    assert(n > 400 and n < 600, n)
  end)

  it("given ranges; bounds clamped to the dtype, integral ones rounded up", function()
    ember.manual_seed(2)
    local lo, hi = range(M(2000, opts("float32", {low = -1, high = 1})))
    assert(lo >= -1 and lo < -0.99 and hi < 1 and hi > 0.99)
    assert.are.same(from_to(3, 4), distinct(M(500, opts("int32", {low = 2.5, high = 4.5}))))   -- [3, 5)
    assert.are.same(from_to(250, 255), distinct(M(2000, opts("uint8", {low = 250, high = 1000}))))
    assert.are.same(from_to(0, 2), distinct(M(500, opts("uint8", {low = -100, high = 3}))))
    assert.are.same({1}, distinct(M(50, opts("bool", {low = 1, high = 5}))))
    lo, hi = range(M(2000, opts("float16", {low = -1e9, high = 1e9})))   -- clamped to +-65504
    assert(lo >= -65504 and lo < -60000 and hi <= 65504 and hi > 60000, lo .. " " .. hi)
    -- float64's whole range: drawn from half of it and doubled, as high - low overflows
    local t = M(2000, opts("float64", {low = -math.huge, high = math.huge}))
    lo, hi = range(t)
    assert(lo < -1.7e308 and hi > 1.7e308 and lo > -math.huge and hi < math.huge, lo .. " " .. hi)
    -- low == high for a floating dtype: that value (deprecated in PyTorch)
    h.check(M(3, opts("float32", {low = 2, high = 2})), {2, 2, 2})
  end)

  it("shapes: sizes, a table, an ember.Size, none; the same draws for the same seed", function()
    assert.are.same({2, 3}, M(2, 3, opts("float32")).shape)
    assert.are.same({2, 3}, M({2, 3}, opts("int64")).shape)
    assert.are.same({4, 1, 2}, M(ember.zeros(4, 1, 2).shape, opts("float16")).shape)
    local s = M(opts("float64"))
    assert.are.equal(0, s:dim())
    assert.are.same({0, 3}, M(0, 3, opts("uint8")).shape)
    ember.manual_seed(7)
    local a = M(5, opts("float32"))
    ember.manual_seed(7)
    h.check(M(5, opts("float32")), a:tolist())
  end)

  it("noncontiguous: every second element of a doubled last dim; ignored under 2 elements", function()
    ember.manual_seed(3)
    local t = M(3, 4, opts("float32", {noncontiguous = true}))
    assert.are.same({3, 4}, t.shape)
    assert.is_false(t:is_contiguous())
    assert.are.same({8, 2}, t:stride())
    assert.are.equal(1, t:storage_offset())   -- PyTorch's [..., 1::2]: offset by one
    local i = M(6, opts("int64", {noncontiguous = true, low = 0, high = 1000000}))
    assert.are.same({2}, i:stride())
    assert.are.equal(6, #distinct(i))
    assert.is_true(M(1, opts("float32", {noncontiguous = true})):is_contiguous())
    assert.is_true(M(opts("float32", {noncontiguous = true})):is_contiguous())
    assert.is_true(M(0, 2, opts("float32", {noncontiguous = true})):is_contiguous())
    assert.is_true(M(3, 4, opts("float32")):is_contiguous())
  end)

  it("exclude_zero: 1 for integral dtypes, the smallest normal number for floating ones", function()
    h.check(M(4, opts("int64", {low = 0, high = 1, exclude_zero = true})), {1, 1, 1, 1})
    h.check(M(3, opts("bool", {low = 0, high = 1, exclude_zero = true})), {true, true, true})
    for d, tiny in pairs({float32 = 2 ^ -126, float64 = 2 ^ -1022, float16 = 2 ^ -14, bfloat16 = 2 ^ -126}) do
      h.check(M(3, opts(d, {low = 0, high = 0, exclude_zero = true})):to("float64"), {tiny, tiny, tiny})
    end
    local t = M(2, 4, opts("int32", {low = -1, high = 2, exclude_zero = true, noncontiguous = true}))
    assert(t:eq(0):sum():item() == 0)
  end)

  it("requires_grad: a leaf of a floating dtype", function()
    local t = M(2, 2, opts("float64", {requires_grad = true, noncontiguous = true}))
    assert.is_true(t.requires_grad)
    assert.is_true(t.is_leaf)
    local loss = (t * t):sum()
    loss:backward()
    h.check(t.grad, (t * 2):detach():tolist())
    assert.is_false(M(2, opts("float32")).requires_grad)
  end)

  it("bad arguments", function()
    has(err(M, 3, opts("int64", {requires_grad = true})), "make_tensor: `requires_grad=True` is not supported for "
        .. "boolean and integral dtypes, but got dtype=int64")
    has(err(M, 3, {device = "cpu"}), "make_tensor: missing required keyword-only argument 'dtype'")
    has(err(M, 3), "make_tensor: missing required keyword-only arguments 'dtype' and 'device'")
    has(err(M, 3, {dtype = "float32"}), "make_tensor: missing required keyword-only argument 'device'")
    has(err(M, -1, opts("float32")), "make_tensor: size 1 must be a non-negative integer, got -1")
    has(err(M, 2, 1.5, opts("float32")), "make_tensor: size 2 must be a non-negative integer, got 1.5")
    has(err(M, {2, "x"}, opts("float32")), "make_tensor: size 2 must be a non-negative integer, got string")
    has(err(M, 3, opts("uint16")), "make_tensor: the requested dtype 'uint16' is not supported")
    has(err(M, 3, opts("float32", {low = 5, high = 3})), "make_tensor: `low` must be less than `high`, but got 5 >= 3")
    has(err(M, 3, opts("int64", {low = 3, high = 3})), "make_tensor: `low` must be less than `high`, but got 3 >= 3")
    has(err(M, 3, opts("float32", {low = 0 / 0})), "make_tensor: `low` and `high` cannot be NaN, but got low=nan "
        .. "and high=9")
    has(err(M, 3, opts("uint8", {low = 300, high = 400})), "make_tensor: The value interval specified by `low` and "
        .. "`high` is [300, 400), but uint8 only supports [0, 256)")
    has(err(M, 3, opts("float16", {low = -1e6, high = -7e4})), "but float16 only supports [-65504.0, 65504.0)")
    has(err(M, 3, opts("float32", {low = "a"})), "make_tensor: low must be a number, got string")
    has(err(M, 3, opts("float32", {noncontiguous = 1})), "make_tensor: option 'noncontiguous' must be a boolean")
    has(err(M, 3, opts("float32", {memory_format = "channels_last"})), "make_tensor: unknown option 'memory_format'")
    has(err(M, 3, {dtype = "float32", device = "xpu"}), "make_tensor: ")
    has(err(M, 3, {dtype = "float32", device = 0}), "make_tensor: device must be a string, got number")
    has(err(M, 3, opts("int64", {low = -2 ^ 60})), "make_tensor: integer bounds beyond 2^53 are not supported")
  end)

  it("on the GPU when there is one", function()
    if not ember.cuda.is_available() then return end
    local t = M(3, 4, {dtype = "float32", device = "cuda", noncontiguous = true})
    assert.are.equal("cuda", tostring(t.device):sub(1, 4))
    assert.is_false(t:is_contiguous())
    local i = M(1000, {dtype = "int32", device = "cuda"})
    assert.are.same(from_to(-9, 9), distinct(i:cpu()))
  end)
end)
