-- math_spec.lua — the elementwise math ops (exp2 ... heaviside):
-- values against PyTorch (fixtures/math_cases.lua, from
-- scripts/fixtures/make_math_fixtures.py) and hand calculations, type
-- promotion, broadcasting, the in-place and method spellings, gradients by
-- finite differences, and bad input.
local ember = require "ember"
local h = require "helpers"
local ag = ember.autograd

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local cases = dofile(here .. "fixtures/math_cases.lua")

local function tensor_of(v)
  if type(v) == "table" and v.values then return ember.tensor(v.values, {dtype = v.dtype}) end
  return v
end

-- values equal, NaN matching NaN and -0.0 told from 0.0
local function same_bits(got, want, tol)
  if #got ~= #want then return false, "length" end
  for i = 1, #want do
    local g, w = got[i], want[i]
    if type(w) == "boolean" or math.type(w) == "integer" then
      if g ~= w then return false, i end
    elseif w ~= w then
      if g == g then return false, i end
    elseif w == 0 and g == 0 then
      if (1 / w > 0) ~= (1 / g > 0) then return false, i end
    elseif w ~= g then
      if w == math.huge or w == -math.huge or math.abs(g - w) > tol * math.abs(w) then return false, i end
    end
  end
  return true
end

describe("math: PyTorch's values", function()
  for _, c in ipairs(cases) do
    it(c.name, function()
      local args = {}
      for i, a in ipairs(c.args) do args[i] = tensor_of(a) end
      if next(c.opts) then args[#args + 1] = c.opts end
      local r = ember[c.op](table.unpack(args, 1, #args))
      assert.are.equal(c.out.dtype, r.dtype)
      local got = r:tolist()
      -- float32 math is libm's against PyTorch's (vectorised) functions: a few ulp
      local tol = c.out.dtype == "float32" and 1e-6 or 1e-13
      -- PyTorch's float32 erfinv is off by up to 4e-6 near +-1 (against mpmath); ember's
      -- is correctly rounded there
      -- (and its float64 one by up to 1e-8 near +-1; ember's agrees with mpmath there)
      if c.op == "erfinv" then tol = c.out.dtype == "float32" and 1e-5 or 1e-7 end
      local ok, where = same_bits(got, c.out.values, tol)
      assert(ok, c.name .. ": element " .. tostring(where) .. ": expected " .. h.show(c.out.values) ..
                 ", got " .. h.show(got))
    end)
  end
end)

describe("math: methods, aliases and in-place forms", function()
  it("methods agree with the functions", function()
    local x = ember.tensor({0.1, 0.4, 0.8}, {dtype = "float64"})
    for _, op in ipairs({"exp2", "log2", "log10", "erf", "erfc", "erfinv", "trunc", "fix", "frac", "tan",
                         "sinh", "cosh", "asin", "acos", "atan", "asinh", "atanh", "sgn", "logit",
                         "nan_to_num", "isnan", "isinf", "isfinite", "isposinf", "isneginf",
                         "arcsin", "arccos", "arctan", "arcsinh", "arctanh"}) do
      assert(ember.equal(x[op](x), ember[op](x)), op)
    end
    assert(ember.equal(ember.acosh(x + 1), (x + 1):arccosh()))
  end)

  it("in-place forms write into self and return it", function()
    for _, op in ipairs({"exp2", "log2", "log10", "erf", "erfc", "erfinv", "trunc", "fix", "frac", "tan",
                         "sinh", "cosh", "asin", "acos", "atan", "asinh", "atanh", "sgn", "logit",
                         "nan_to_num"}) do
      local x = ember.tensor({0.1, 0.4, 0.8})
      local want = ember[op](x)
      local r = x[op .. "_"](x)
      assert(rawequal(r, x), op)
      assert(ember.equal(x, want), op .. "_")
    end
    local a = ember.tensor({1.5, -2.5, 7.0})
    local b = ember.tensor({2.0, 2.0, -2.0})
    for _, op in ipairs({"atan2", "arctan2", "hypot", "copysign", "fmod", "floor_divide", "xlogy"}) do
      if op == "xlogy" then b = b:abs() end
      local want = ember[op](a, b)
      local x = a:clone()
      assert(rawequal(x[op .. "_"](x, b), x))
      assert(ember.equal(x, want), op .. "_")
    end
    local x = ember.tensor({1.25, 2.5})
    x:round_({decimals = 1})
    h.check(x, {1.2, 2.5}, 1e-6)
    local y = ember.tensor({-7.0, 7.0})
    y:div_(2, {rounding_mode = "floor"})
    h.check(y, {-4, 3})
    local i = ember.tensor({12, 5})
    i:bitwise_and_(10):bitwise_or_(1):bitwise_xor_(3):bitwise_left_shift_(1):bitwise_right_shift_(1)
    h.check(i, {((12 & 10) | 1) ~ 3, ((5 & 10) | 1) ~ 3})
    local nb = ember.tensor({5, 0})
    nb:bitwise_not_()
    h.check(nb, {-6, -1})
    local l = ember.tensor({0.0, 1.0})
    l:lerp_(ember.tensor({10.0, 11.0}), 0.5)
    h.check(l, {5, 6})
    local m = ember.tensor({1.0, 1.0})
    m:addcmul_(ember.tensor({2.0, 3.0}), ember.tensor({4.0, 5.0}), {value = 0.5})
    h.check(m, {5, 8.5})
    m:addcdiv_(ember.tensor({2.0, 3.0}), ember.tensor({4.0, 6.0}))
    h.check(m, {5.5, 9})
    local hv = ember.tensor({-1.0, 0.0, 3.0})
    hv:heaviside_(ember.tensor({0.5}))
    h.check(hv, {0, 0.5, 1})
    local lx = ember.tensor({true, false})
    lx:logical_xor_(ember.tensor({true, true}))
    h.check(lx, {false, true})
    local cl = ember.tensor({-1.0, 0.5, 2.0})
    cl:clamp_(ember.tensor({0.0}), ember.tensor({1.0, 1.0, 1.5}))
    h.check(cl, {0, 0.5, 1.5})
  end)

  it("an in-place op refuses a float result into an integer tensor", function()
    local i = ember.tensor({1, 2})
    h.has(h.err(function() i:exp2_() end), "can't be cast")
    h.has(h.err(function() i:atan2_(ember.tensor({1, 1})) end), "can't be cast")
    h.has(h.err(function() i:xlogy_(2) end), "can't be cast")
    h.has(h.err(function() local x = ember.zeros(2); x:hypot_(ember.zeros(3, 2)) end), "")
  end)
end)

describe("math: dtypes and broadcasting", function()
  it("integer inputs of float ops give the default float dtype", function()
    local i = ember.tensor({1, 2, 4})
    for _, op in ipairs({"exp2", "log2", "log10", "erf", "erfc", "erfinv", "tan", "sinh", "cosh", "asin",
                         "acos", "atan", "asinh", "acosh", "atanh", "logit"}) do
      assert.are.equal("float32", ember[op](i).dtype, op)
    end
    for _, op in ipairs({"atan2", "hypot", "copysign", "logaddexp", "logaddexp2", "xlogy"}) do
      assert.are.equal("float32", ember[op](i, i).dtype, op)
    end
    ember.set_default_dtype("float64")
    local ok, d = pcall(function() return ember.exp2(i).dtype end)
    ember.set_default_dtype("float32")
    assert(ok, d)
    assert.are.equal("float64", d)
    h.check(ember.log2(i), {0, 1, 2})
  end)

  it("integer ops keep integer dtypes", function()
    assert.are.equal("int64", ember.trunc(ember.tensor({3})).dtype)
    assert.are.equal("int32", ember.fmod(ember.tensor({7}, {dtype = "int32"}), 3).dtype)
    assert.are.equal("float32", ember.fmod(ember.tensor({7}), 2.5).dtype)
    assert.are.equal("uint8", ember.bitwise_and(ember.tensor({7}, {dtype = "uint8"}), 3).dtype)
    assert.are.equal("bool", ember.bitwise_or(ember.tensor({true}), ember.tensor({false})).dtype)
    assert.are.equal("int64", ember.bitwise_and(ember.tensor({true, true}), ember.tensor({1, 2})).dtype)
    h.check(ember.bitwise_not(ember.tensor({true, false})), {false, true})
    h.check(ember.bitwise_xor(ember.tensor({true, false}), ember.tensor({true, true})), {false, true})
    h.check(ember.bitwise_left_shift(ember.tensor({200}, {dtype = "uint8"}), 1), {144})
    h.check(ember.bitwise_right_shift(ember.tensor({-8}, {dtype = "int32"}), 40), {-1})
    h.check(ember.bitwise_left_shift(ember.tensor({1}), 64), {0})
    h.check(ember.div(ember.tensor({-7}), 2, {rounding_mode = "trunc"}), {-3})
    assert.are.equal("int64", ember.div(ember.tensor({-7}), 2, {rounding_mode = "floor"}).dtype)
    assert.are.equal("float32", ember.div(ember.tensor({-7}), 2).dtype)
    assert.are.equal("int64", ember.nan_to_num(ember.tensor({1})).dtype)
    h.check(ember.isnan(ember.tensor({1, 2})), {false, false})
    h.check(ember.isfinite(ember.tensor({true})), {true})
  end)

  it("float16 and bfloat16 compute in float32 and keep their dtype", function()
    for _, dt in ipairs({"float16", "bfloat16"}) do
      local x = ember.tensor({0.25, 0.5}, {dtype = dt})
      assert.are.equal(dt, x:erfinv().dtype)
      assert.are.equal(dt, ember.atan2(x, x).dtype)
      h.check(ember.logaddexp(x, x):float(), {0.25 + math.log(2), 0.5 + math.log(2)}, 1e-2)
      h.check(x:round({decimals = 1}):float(), {0.2, 0.5}, 1e-2)
    end
  end)

  it("binary ops broadcast, with numbers on either side", function()
    local a = ember.tensor({{1.0}, {-2.0}})
    local b = ember.tensor({3.0, -4.0})
    h.check(ember.hypot(a, b), {{math.sqrt(10), math.sqrt(17)}, {math.sqrt(13), math.sqrt(20)}}, 1e-6)
    h.check(ember.copysign(a, b), {{1, -1}, {2, -2}})
    h.check(ember.atan2(1, b), {math.atan(1, 3), math.atan(1, -4)}, 1e-6)
    h.check(ember.fmod(-7, ember.tensor({2.0, 3.0})), {-1, -1})
    h.check(ember.floor_divide(7, ember.tensor({-2})), {-4})
    h.check(ember.logaddexp(a, 0), {{math.log(1 + math.exp(1))}, {math.log(1 + math.exp(-2))}}, 1e-6)
    h.check(ember.xlogy(a:abs(), b:abs()), {{math.log(3), math.log(4)}, {2 * math.log(3), 2 * math.log(4)}}, 1e-6)
    h.check(ember.logical_xor(a, 0), {{true}, {true}})
    h.check(ember.heaviside(ember.tensor({{0.0, 1.0}, {-1.0, 0.0}}), ember.tensor({7.0, 8.0})), {{7, 1}, {0, 8}})
    h.check_shape(ember.lerp(ember.zeros(2, 1), ember.ones(3), ember.full({2, 3}, 0.5)), {2, 3})
    h.check(ember.addcmul(ember.zeros(2, 1), ember.ones(3), ember.tensor({{1.0}, {2.0}})),
            {{1, 1, 1}, {2, 2, 2}})
    h.check(ember.isclose(ember.tensor({1.0, 2.0}), ember.tensor({{1.0}, {2.0}})), {{true, false}, {false, true}})
  end)

  it("clamp takes tensor bounds, broadcast and promoted", function()
    local x = ember.tensor({-2.0, 0.5, 3.0})
    h.check(ember.clamp(x, ember.tensor({0.0, 1.0, 0.0}), ember.tensor({1.0})), {0, 1, 1})
    h.check(x:clip(nil, ember.tensor({0.0, 0.0, 2.0})), {-2, 0, 2})
    h.check(ember.clamp(x, -1, ember.tensor({{0.0}, {10.0}})), {{-1, 0, 0}, {-1, 0.5, 3}})
    assert.are.equal("float64", ember.clamp(x, ember.tensor({0.0}, {dtype = "float64"})).dtype)
    assert.are.equal("float32", ember.clamp(ember.tensor({1, 5}), ember.tensor({0.5})).dtype)
    -- a NaN bound gives NaN, min above max gives max (PyTorch)
    local r = ember.clamp(x, ember.tensor({0 / 0, 0, 0}), ember.tensor({1.0, 1.0, -5.0})):tolist()
    assert(r[1] ~= r[1])
    assert.are.same({0.5, -5}, {r[2], r[3]})
    h.check(ember.clamp_min(x, ember.tensor({1.0})), {1, 1, 3})
    h.check(ember.clamp_max(x, ember.tensor({1.0})), {-2, 0.5, 1})
  end)

  it("allclose and equal return Lua booleans", function()
    local a = ember.tensor({1.0, 2.0})
    assert.is_true(ember.allclose(a, a + 1e-9))
    assert.is_false(ember.allclose(a, a + 1e-3))
    assert.is_true(a:allclose(a + 1e-3, {atol = 1e-2}))
    assert.is_true(ember.allclose(a, a + 1e-3, 0, 1e-2))
    assert.is_true(ember.equal(a, ember.tensor({1.0, 2.0})))
    assert.is_true(ember.equal(ember.tensor({1, 2}), ember.tensor({1.0, 2.0})))   -- values, promoted
    assert.is_false(ember.equal(a, ember.tensor({1.0, 2.0, 3.0})))
    assert.is_false(ember.equal(a, ember.tensor({{1.0, 2.0}})))                 -- shapes differ
    assert.is_false(ember.equal(ember.tensor({0 / 0}), ember.tensor({0 / 0})))
    assert.is_true(a:equal(a))
    assert.is_true(ember.equal(ember.zeros(0), ember.zeros(0)))
  end)
end)

describe("math: hand-computed values", function()
  it("round with decimals rounds half to even, as PyTorch's formula", function()
    h.check(ember.round(ember.tensor({0.5, 1.5, 2.5, -0.5}, {dtype = "float64"})), {0, 2, 2, -0.0})
    h.check(ember.round(ember.tensor({125.0, 135.0, -250.0}, {dtype = "float64"}), {decimals = -1}),
            {120, 140, -250})
    h.check(ember.round(ember.tensor({1.25, 1.35}, {dtype = "float64"}), 1), {1.2, 1.4})
    assert.are.equal("int64", ember.round(ember.tensor({3})).dtype)
  end)

  it("lerp with a weight tensor is PyTorch's two-sided formula", function()
    local a = ember.tensor({1.0, 1.0, 1.0}, {dtype = "float64"})
    local b = ember.tensor({3.0, 3.0, 1e16}, {dtype = "float64"})
    local w = ember.tensor({0.25, 1.0, 1.0}, {dtype = "float64"})
    -- w = 1 gives end exactly (a + w (b - a) would give 1e16 + 0, then 1 lost to rounding anyway)
    h.check(ember.lerp(a, b, w), {1.5, 3, 1e16})
    h.check(ember.lerp(a, b, 0.75), {2.5, 2.5, 1 + 0.75 * (1e16 - 1)}, 1e-15)
  end)

  it("erfinv inverts erf to double precision, also near +-1", function()
    local y = ember.tensor({-0.999999, -0.9, -1e-300, 0.2, 0.999, 0.9999999999, 1 - 2 ^ -52}, {dtype = "float64"})
    local x = ember.erfinv(y)
    -- erfc keeps the tail's accuracy: compare 1 - |y| with erfc(|x|)
    local got = ember.erfc(x:abs()):tolist()
    local want = (1 - y:abs()):tolist()
    for i = 1, #want do
      assert(math.abs(got[i] - want[i]) <= 1e-14 * want[i], i .. ": " .. got[i] .. " vs " .. want[i])
    end
  end)

  it("isnan, isinf, isfinite, isposinf, isneginf", function()
    local x = ember.tensor({0 / 0, math.huge, -math.huge, 1, -0.0})
    h.check(x:isnan(), {true, false, false, false, false})
    h.check(x:isinf(), {false, true, true, false, false})
    h.check(x:isfinite(), {false, false, false, true, true})
    h.check(x:isposinf(), {false, true, false, false, false})
    h.check(x:isneginf(), {false, false, true, false, false})
  end)
end)

describe("math: gradients", function()
  local function check(fn, inputs, opts)
    local ok, msg = ag.gradcheck(fn, inputs, opts)
    assert(ok, msg)
  end
  local function t(v) return ember.tensor(v, {dtype = "float64"}) end

  it("unary ops, also near their domains' edges", function()
    local mid = t({-0.7, -0.2, 0.3, 0.9})
    for _, op in ipairs({"exp2", "erf", "erfc", "tan", "sinh", "cosh", "atan", "asinh", "frac", "trunc",
                         "sgn"}) do
      check(function(x) return ember[op](x) end, {mid})
    end
    local unit = t({-0.999, -0.5, 1e-9, 0.5, 0.9995})
    for _, op in ipairs({"asin", "acos", "atanh", "erfinv"}) do
      check(function(x) return ember[op](x) end, {unit}, {eps = 1e-8, rtol = 1e-3})
    end
    check(function(x) return ember.acosh(x) end, {t({1.001, 1.5, 30})}, {eps = 1e-8})
    local pos = t({1e-3, 0.5, 2, 100})
    for _, op in ipairs({"log2", "log10"}) do check(function(x) return ember[op](x) end, {pos}) end
    check(function(x) return ember.logit(x) end, {t({0.01, 0.3, 0.99})}, {eps = 1e-8})
    check(function(x) return ember.logit(x, 0.1) end, {t({0.05, 0.3, 0.95})})
    check(function(x) return ember.round(x, {decimals = 2}) end, {mid})
    check(function(x) return ember.nan_to_num(x) end, {mid})
  end)

  it("nan_to_num and logit with eps give no gradient where they replace", function()
    local x = t({0 / 0, math.huge, 1.5}):requires_grad_()
    local g = ag.grad({ember.nan_to_num(x):sum()}, {x})
    h.check(g, {0, 0, 1})
    local y = t({0.05, 0.5, 0.1}):requires_grad_()
    local gy = ag.grad({ember.logit(y, 0.1):sum()}, {y})
    h.check(gy, {0, 4, 1 / 0.09}, 1e-12)
  end)

  it("binary ops", function()
    local a, b = t({0.7, -1.3, 2.1, -0.4}), t({1.1, 0.6, -2.5, -0.8})
    for _, op in ipairs({"atan2", "hypot", "logaddexp", "logaddexp2", "fmod", "copysign"}) do
      check(function(x, y) return ember[op](x, y) end, {a, b})
    end
    check(function(x, y) return ember.xlogy(x, y) end, {a, b:abs()})
    -- broadcasting sums the gradient back
    check(function(x, y) return ember.atan2(x, y) end, {t({{0.5}, {-1.5}}), t({0.3, -0.9, 2})})
    check(function(x, y) return ember.logaddexp(x, y) end, {t({{0.5}, {-1.5}}), t({0.3, -0.9, 2})})
    -- floor division and the rounded divisions are piecewise constant
    local x = a:clone():requires_grad_()
    local g = ag.grad({ember.div(x, 0.3, {rounding_mode = "floor"}):sum()}, {x})
    h.check(g, {0, 0, 0, 0})
    local g2 = ag.grad({ember.floor_divide(x, 0.3):sum() + ember.div(x, 0.3, {rounding_mode = "trunc"}):sum()}, {x})
    h.check(g2, {0, 0, 0, 0})
  end)

  it("xlogy's gradient for x at x == 0 is log(y) for y > 0 and 0 for y == 0 (PyTorch 2.15)", function()
    -- PyTorch 2.x's backward zeroes x's gradient only where x == 0 and y <= 0 (1.13: wherever x == 0)
    local x = t({0, 0, 2, 0}):requires_grad_()
    local y = t({0, 3, 4, -1}):requires_grad_()
    local gx, gy = ag.grad({ember.xlogy(x, y):sum()}, {x, y})
    h.check(gx, {0, math.log(3), math.log(4), 0}, 1e-15)
    h.check(gy, {0, 0, 0.5, 0}, 1e-15)
  end)

  it("copysign: the gradient of the magnitude is sign(result / input), none for the sign", function()
    local a = t({2, -3, 0}):requires_grad_()
    local b = t({-1, -1, -1}):requires_grad_()
    local ga, gb = ag.grad({ember.copysign(a, b):sum()}, {a, b})
    h.check(ga, {-1, 1, 0})
    h.check(gb, {0, 0, 0})
  end)

  it("lerp, addcmul, addcdiv and clamp with tensor bounds", function()
    local a, b, w = t({0.3, -1.2, 2}), t({1.5, 0.2, -0.7}), t({0.2, 0.6, 0.9})
    check(function(x, y, z) return ember.lerp(x, y, z) end, {a, b, w})
    check(function(x, y) return ember.lerp(x, y, 0.7) end, {a, b})
    check(function(x, y, z) return ember.addcmul(x, y, z, {value = -1.5}) end, {a, b, w})
    check(function(x, y, z) return ember.addcdiv(x, y, z, {value = 0.5}) end, {a, b, w})
    check(function(x, lo, hi) return ember.clamp(x, lo, hi) end, {t({-1, 0.5, 3}), t({0, 0, 0}), t({1, 1, 1})})
  end)

  it("clamp with tensor bounds splits the gradient at a bound between the input and it, as PyTorch 2.x", function()
    -- PyTorch 2.15's values (1.13 gave the input all of it at the bounds); clamp_tensor_spec has the rest
    local x = t({0, 0.5, 1, -1, 2}):requires_grad_()
    local lo = t({0, 0, 0, 0, 0}):requires_grad_()
    local hi = t({1, 1, 1, 1, 1}):requires_grad_()
    local gx, glo, ghi = ag.grad({ember.clamp(x, lo, hi):sum()}, {x, lo, hi})
    h.check(gx, {0.5, 1, 0.5, 0, 0})
    h.check(glo, {0.5, 0, 0, 1, 0})
    h.check(ghi, {0, 0, 0.5, 0, 1})
  end)

  it("second derivatives of the new unary and binary ops", function()
    local ok, msg = ag.gradgradcheck(function(x) return ember.erfinv(x) + ember.tan(x) + ember.asinh(x) end,
                                     {t({-0.3, 0.1, 0.4})})
    assert(ok, msg)
    ok, msg = ag.gradgradcheck(function(x, y) return ember.atan2(x, y) + ember.hypot(x, y) end,
                               {t({0.3, -0.7}), t({1.2, 0.5})})
    assert(ok, msg)
  end)
end)

describe("math: bad input", function()
  it("bitwise ops refuse floats", function()
    local f = ember.tensor({1.5})
    for _, op in ipairs({"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                         "bitwise_right_shift"}) do
      h.has(h.err(function() local r = ember[op](f, f); return r end), op .. ": only integer and bool tensors")
      h.has(h.err(function() local r = ember[op](ember.tensor({1}), 1.5); return r end), "got float32")
    end
    h.has(h.err(function() local r = f:bitwise_not(); return r end), "bitwise_not: only integer and bool")
    h.has(h.err(function() local r = ember.bitwise_left_shift(ember.tensor({true}), ember.tensor({true})); return r end),
          "not supported for bool")
  end)

  it("shape mismatches name both shapes", function()
    local a, b = ember.zeros(2, 3), ember.zeros(4)
    for _, op in ipairs({"atan2", "hypot", "copysign", "fmod", "floor_divide", "logaddexp", "xlogy",
                         "logical_xor", "isclose"}) do
      local msg = h.err(function() local r = ember[op](a, b); return r end)
      h.has(msg, "[2,3]")
      h.has(msg, "[4]")
    end
    h.has(h.err(function() local r = ember.lerp(a, b, 0.5); return r end), "[2,3]")
    h.has(h.err(function() local r = ember.clamp(a, b); return r end), "[2,3]")
  end)

  it("div's rounding_mode must be nil, trunc or floor", function()
    local msg = h.err(function() local r = ember.div(ember.ones(2), 2, {rounding_mode = "round"}); return r end)
    h.has(msg, "rounding_mode must be nil, \"trunc\" or \"floor\", got round")
    h.has(msg, "math_spec.lua")
    h.has(h.err(function() local r = ember.ones(2):div(2, {rounding_mode = 3}); return r end), "rounding_mode")
  end)

  it("integer division by zero is an error", function()
    h.has(h.err(function() local r = ember.fmod(ember.tensor({1}), 0); return r end), "division by zero")
    h.has(h.err(function() local r = ember.floor_divide(ember.tensor({1}), ember.tensor({0})); return r end),
          "division by zero")
    h.has(h.err(function() local r = ember.div(ember.tensor({1}), 0, {rounding_mode = "trunc"}); return r end),
          "division by zero")
  end)

  it("dtype rules: bool, integer and mixed inputs PyTorch refuses", function()
    local bt = ember.tensor({true})
    for _, op in ipairs({"fmod", "floor_divide"}) do
      h.has(h.err(function() local r = ember[op](bt, bt); return r end), "not supported for bool")
    end
    h.has(h.err(function() local r = bt:trunc(); return r end), "not supported for bool")
    h.has(h.err(function() local r = ember.frac(ember.tensor({1})); return r end), "frac: only float")
    h.has(h.err(function() local r = ember.round(ember.tensor({1}), 2); return r end), "decimals")
    h.has(h.err(function() local r = ember.isclose(ember.tensor({1}), ember.tensor({1.0})); return r end),
          "same dtype")
    h.has(h.err(function() local r = ember.isclose(ember.ones(1), ember.ones(1), -1); return r end), "non-negative")
    h.has(h.err(function() local r = ember.heaviside(ember.ones(1), ember.ones(1, {dtype = "float64"})); return r end),
          "one dtype")
    h.has(h.err(function() local r = ember.lerp(ember.ones(1), ember.ones(1, {dtype = "float64"}), 0.5); return r end),
          "one dtype")
    h.has(h.err(function() local r = ember.lerp(ember.tensor({1}), ember.tensor({2}), 0.5); return r end),
          "only float")
    h.has(h.err(function() local r = ember.addcdiv(ember.ones(1), ember.tensor({1}), ember.tensor({2})); return r end),
          "integer division")
  end)

  it("wrong argument types", function()
    h.has(h.err(function() local r = ember.atan2("a", ember.ones(1)); return r end), "atan2")
    h.has(h.err(function() local r = ember.xlogy(1, 2); return r end), "xlogy: argument")
    h.has(h.err(function() local r = ember.xlogy(ember.ones(1), "x"); return r end), "xlogy: argument 2")
    h.has(h.err(function() local r = ember.lerp(ember.ones(1), ember.ones(1), "w"); return r end), "weight")
    h.has(h.err(function() local r = ember.lerp(ember.ones(1), 2, 0.5); return r end), "lerp")
    h.has(h.err(function() local r = ember.heaviside(ember.ones(1), 0.5); return r end), "heaviside")
    h.has(h.err(function() local r = ember.round(ember.ones(1), {decimals = "x"}); return r end), "round: argument")
    h.has(h.err(function() local r = ember.logit(ember.ones(1), {eps = "x"}); return r end), "eps")
    h.has(h.err(function() local r = ember.nan_to_num(ember.ones(1), {posinf = {}}); return r end), "posinf")
    h.has(h.err(function() local r = ember.isclose(ember.ones(1), 1); return r end), "isclose")
    h.has(h.err(function() local r = ember.equal(ember.ones(1), nil); return r end), "equal")
    h.has(h.err(function() local r = ember.addcmul(ember.ones(1), ember.ones(1), ember.ones(1), {value = "v"}); return r end),
          "value")
    h.has(h.err(function() local r = ember.clamp(ember.ones(1), "lo"); return r end), "clamp")
  end)

  it("in-place ops on a tensor that requires grad are refused", function()
    local x = ember.ones(2):requires_grad_()
    h.has(h.err(function() x:erfinv_() end), "erfinv_")
    h.has(h.err(function() x:logit_() end), "logit_")
    h.has(h.err(function() x:lerp_(ember.zeros(2), 0.5) end), "lerp_")
  end)
end)
