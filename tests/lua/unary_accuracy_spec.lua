-- unary_accuracy_spec.lua — the float32 transcendental kernels (exp, log,
-- tanh, sigmoid, silu, sin, cos, expm1, log1p, log2, exp2, log10): the
-- largest error in float32 ulps over dense sweeps of exactly representable
-- inputs against float64 references written here, the special values, and
-- float16/bfloat16 inputs (the float32 result rounded once). The bar is
-- PyTorch's (Sleef's u10 functions): 1 ulp.
local ember = require "ember"
local h = require "helpers"

local isnan = h.is_nan
local inf = math.huge
local BAR = 1.0

-- x rounded to float32
local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end

local ulp32 = h.ulp32

-- float64 references without cancellation
local function expm1_ref(x)
  if math.abs(x) >= 0.5 then return math.exp(x) - 1 end
  local term, sum, n = x, x, 1
  while math.abs(term) > 1e-18 * math.abs(sum) do
    n = n + 1
    term = term * x / n
    sum = sum + term
  end
  return sum
end
local function log1p_ref(x)
  local u = 1 + x
  if u == 1 or u == inf then return x end
  return math.log(u) * x / (u - 1)        -- Goldberg: exact up to double rounding
end
local function tanh_ref(x)
  local a = math.min(math.abs(x), 20)
  local e = expm1_ref(2 * a)
  local t = e / (e + 2)
  return x < 0 and -t or t
end

local REF = {
  exp = math.exp,
  log = math.log,
  log2 = function(x) return math.log(x, 2) end,
  log10 = function(x) return math.log(x, 10) end,
  exp2 = function(x) return 2.0 ^ x end,
  expm1 = expm1_ref,
  log1p = log1p_ref,
  tanh = tanh_ref,
  sigmoid = function(x) return 1 / (1 + math.exp(-x)) end,
  silu = function(x) return x / (1 + math.exp(-x)) end,
  sin = math.sin,
  cos = math.cos,
}

local function apply(op, t)
  if op == "silu" then return ember.nn.functional.silu(t) end
  return t[op](t)
end

-- the largest error of op over xs (rounded to float32 first: the
-- references see the exact inputs), in ulps of the float32 spacing at the
-- reference
local function max_ulps(op, xs)
  for i, x in ipairs(xs) do xs[i] = f32(x) end
  local got = apply(op, ember.tensor(xs, {dtype = "float32"})):tolist()
  local ref = REF[op]
  local worst, at = 0, nil
  for i, x in ipairs(xs) do
    local want = ref(x)
    local u
    if want ~= want then
      u = got[i] ~= got[i] and 0 or inf
    elseif math.abs(want) > 3.4028235677973366e38 then   -- beyond float range
      u = got[i] == f32(want) and 0 or inf
    else
      u = math.abs(got[i] - want) / ulp32(want)
    end
    if u > worst then worst, at = u, x end
  end
  return worst, at
end

-- lo, lo + step, ..., hi (the caller picks steps that keep them exact floats)
local function range(xs, lo, hi, step)
  for k = 0, math.floor((hi - lo) / step) do xs[#xs + 1] = lo + k * step end
  return xs
end
-- 2^e (1 + j / n) for e in [e0, e1], j in [0, n): every binade, both signs
-- if asked
local function binades(xs, e0, e1, n, signs)
  for e = e0, e1 do
    for j = 0, n - 1 do
      local x = 2.0 ^ e * (1 + j / n)
      xs[#xs + 1] = x
      if signs then xs[#xs + 1] = -x end
    end
  end
  return xs
end

local SWEEPS = {
  exp = function() return binades(range({}, -104, 89, 1 / 256), -40, 6, 64, true) end,
  exp2 = function() return binades(range({}, -151, 128, 1 / 256), -40, 7, 64, true) end,
  expm1 = function() return binades(range({}, -20, 89, 1 / 512), -140, 6, 64, true) end,
  log = function() return range(binades({}, -149, 127, 256), 0.5, 2, 2 ^ -16) end,
  log2 = function() return range(binades({}, -149, 127, 256), 0.5, 2, 2 ^ -16) end,
  log10 = function() return range(binades({}, -149, 127, 256), 0.5, 2, 2 ^ -16) end,
  log1p = function()
    local xs = range({}, -1 + 2 ^ -24, -0.5, 2 ^ -14)
    return range(binades(xs, -149, 127, 128, true), -0.5, 1, 2 ^ -14)
  end,
  tanh = function() return binades(range({}, -12, 12, 1 / 2048), -149, 4, 64, true) end,
  sigmoid = function() return range({}, -110, 30, 1 / 512) end,
  silu = function() return binades(range({}, -110, 30, 1 / 512), -40, 6, 64, true) end,
  -- |x| <= 1e6 takes the vector path; beyond, libm a block at a time
  sin = function() return binades(range({}, -1024, 1024, 1 / 128), -149, 127, 64, true) end,
  cos = function() return binades(range({}, -1024, 1024, 1 / 128), -149, 127, 64, true) end,
}

local OPS = {"exp", "log", "tanh", "sigmoid", "silu", "sin", "cos",
             "expm1", "log1p", "log2", "exp2", "log10"}

describe("float32 transcendentals", function()
  for _, op in ipairs(OPS) do
    it(op .. " is within " .. BAR .. " ulp over a dense sweep", function()
      local worst, at = max_ulps(op, SWEEPS[op]())
      assert.is_true(worst <= BAR, ("%s: %.3f ulp at x = %.9g"):format(op, worst, at or 0))
    end)
  end

  it("sin and cos are within 1 ulp for large arguments (libm beyond 1e6)", function()
    local xs = {}
    for k = 0, 2000 do
      local x = f32(1e6 * 1.00731 ^ k)          -- 1e6 to ~2e12
      xs[#xs + 1], xs[#xs + 2] = x, -x
    end
    for _, x in ipairs({999999.9375, 1e6, 1000000.0625, 2 ^ 20, 2 ^ 24, 1e30, -1e30,
                        3.4028234663852886e38, 0x1.921fb6p24, 102940.0, 103993.0,
                        13176795.0, 1.5707963705062866}) do
      xs[#xs + 1] = x
    end
    -- the same values inside a block of small ones (the block goes to libm)
    for k = 1, 300 do xs[#xs + 1] = k / 7 end
    for _, op in ipairs({"sin", "cos"}) do
      local worst, at = max_ulps(op, xs)
      assert.is_true(worst <= BAR, ("%s: %.3f ulp at x = %.9g"):format(op, worst, at or 0))
    end
  end)

  it("a wrong result does fail the measure", function()
    -- exp(x) with x one float ulp off is far more than 1 ulp off near 88
    local xs = {88.0, 80.5, 50.25}
    local got = ember.tensor(xs, {dtype = "float32"}):exp():tolist()
    local ref = function(x) return math.exp(x * (1 + 2 ^ -23)) end
    local worst = 0
    for i, x in ipairs(xs) do worst = math.max(worst, math.abs(got[i] - ref(x)) / ulp32(ref(x))) end
    assert.is_true(worst > BAR)
  end)
end)

describe("float32 special values", function()
  local function one(op, x) return apply(op, ember.tensor({x}, {dtype = "float32"})):tolist()[1] end
  local function is_neg_zero(v) return v == 0 and 1 / v < 0 end
  local function is_pos_zero(v) return v == 0 and 1 / v > 0 end
  local nan = 0 / 0

  it("exp, exp2, expm1", function()
    assert.are.equal(0, one("exp", -inf))
    assert.are.equal(inf, one("exp", inf))
    assert.are.equal(inf, one("exp", 89))
    assert.are.equal(inf, one("exp", 88.75))              -- just past FLT_MAX
    assert.are.equal(f32(math.exp(88.5)), one("exp", 88.5))
    assert.are.equal(0, one("exp", -104))
    assert.are.equal(0, one("exp", -1e30))
    -- gradual underflow: subnormal results, rounded once
    assert.are.equal(f32(math.exp(-100)), one("exp", -100))
    assert.is_true(one("exp", -100) > 0)
    assert.are.equal(2 ^ -149, one("exp", f32(-149 * math.log(2))))
    assert.is_true(isnan(one("exp", nan)))
    assert.are.equal(1, one("exp", -0.0))
    assert.are.equal(2 ^ -149, one("exp2", -149))
    assert.are.equal(0, one("exp2", -151))
    assert.are.equal(inf, one("exp2", 128))
    assert.are.equal(2 ^ 127, one("exp2", 127))
    assert.are.equal(0, one("exp2", -inf))
    assert.is_true(isnan(one("exp2", nan)))
    assert.are.equal(-1, one("expm1", -inf))
    assert.are.equal(-1, one("expm1", -20))
    assert.are.equal(inf, one("expm1", inf))
    assert.are.equal(inf, one("expm1", 89))
    assert.are.equal(f32(1e-30), one("expm1", f32(1e-30)))
    assert.is_true(is_neg_zero(one("expm1", -0.0)))
    assert.is_true(isnan(one("expm1", nan)))
  end)

  it("log, log2, log10, log1p", function()
    for _, op in ipairs({"log", "log2", "log10"}) do
      assert.are.equal(-inf, one(op, 0), op)
      assert.are.equal(-inf, one(op, -0.0), op)
      assert.is_true(isnan(one(op, -1)), op)
      assert.is_true(isnan(one(op, -inf)), op)
      assert.is_true(isnan(one(op, -2 ^ -149)), op)
      assert.are.equal(inf, one(op, inf), op)
      assert.is_true(isnan(one(op, nan)), op)
      assert.is_true(is_pos_zero(one(op, 1)), op)
    end
    assert.are.equal(f32(-149 * math.log(2)), one("log", 2 ^ -149))      -- subnormal inputs
    assert.are.equal(-149, one("log2", 2 ^ -149))
    assert.are.equal(-130, one("log2", 2 ^ -130))
    assert.are.equal(f32(math.log(3 * 2 ^ -140)), one("log", 3 * 2 ^ -140))
    assert.are.equal(10, one("log10", 1e10))
    assert.are.equal(-inf, one("log1p", -1))
    assert.is_true(isnan(one("log1p", -1.5)))
    assert.are.equal(inf, one("log1p", inf))
    assert.is_true(is_neg_zero(one("log1p", -0.0)))
    assert.are.equal(f32(1e-30), one("log1p", f32(1e-30)))
    assert.are.equal(2 ^ -149, one("log1p", 2 ^ -149))
    assert.is_true(isnan(one("log1p", nan)))
  end)

  it("tanh", function()
    assert.are.equal(1, one("tanh", inf))
    assert.are.equal(-1, one("tanh", -inf))
    assert.are.equal(1, one("tanh", 10))
    assert.are.equal(-1, one("tanh", -1e30))
    assert.are.equal(f32(1e-30), one("tanh", f32(1e-30)))
    assert.are.equal(-2 ^ -149, one("tanh", -2 ^ -149))
    assert.is_true(is_neg_zero(one("tanh", -0.0)))
    assert.is_true(is_pos_zero(one("tanh", 0.0)))
    assert.is_true(isnan(one("tanh", nan)))
  end)

  it("sigmoid and silu in both tails", function()
    -- sigmoid(-100) = 3.7e-44, a float32 subnormal: not 0
    local s = one("sigmoid", -100)
    assert.is_true(s > 0)
    assert.are.equal(f32(1 / (1 + math.exp(100))), s)
    assert.are.equal(f32(1 / (1 + math.exp(87.5))), one("sigmoid", -87.5))
    assert.are.equal(0, one("sigmoid", -110))
    assert.are.equal(0, one("sigmoid", -inf))
    assert.are.equal(1, one("sigmoid", 20))
    assert.are.equal(1, one("sigmoid", inf))
    assert.are.equal(0.5, one("sigmoid", -0.0))
    assert.is_true(isnan(one("sigmoid", nan)))
    local v = one("silu", -100)
    assert.is_true(v < 0)
    assert.are.equal(f32(-100 / (1 + math.exp(100))), v)
    assert.are.equal(f32(-103 / (1 + math.exp(103))), one("silu", -103))
    assert.is_true(is_neg_zero(one("silu", -200)))
    assert.is_true(is_neg_zero(one("silu", -1e30)))
    assert.is_true(is_neg_zero(one("silu", -3.4028234663852886e38)))
    assert.is_true(isnan(one("silu", -inf)))                 -- -inf / inf, as PyTorch
    assert.are.equal(inf, one("silu", inf))
    assert.are.equal(f32(1e30), one("silu", 1e30))
    assert.is_true(is_neg_zero(one("silu", -0.0)))
    assert.is_true(isnan(one("silu", nan)))
  end)

  it("sin and cos", function()
    assert.is_true(is_neg_zero(one("sin", -0.0)))
    assert.is_true(is_pos_zero(one("sin", 0.0)))
    assert.are.equal(1, one("cos", -0.0))
    assert.are.equal(2 ^ -149, one("sin", 2 ^ -149))
    assert.are.equal(f32(1e-30), one("sin", f32(1e-30)))
    for _, op in ipairs({"sin", "cos"}) do
      assert.is_true(isnan(one(op, inf)), op)
      assert.is_true(isnan(one(op, -inf)), op)
      assert.is_true(isnan(one(op, nan)), op)
      assert.are.equal(f32(math[op](f32(1e30))), one(op, 1e30), op)
      assert.are.equal(f32(math[op](f32(1e6))), one(op, 1e6), op)
    end
  end)

  it("NaN, inf and large inputs mixed into a block keep the others' values", function()
    local xs = {}
    for k = 1, 600 do xs[k] = (k - 300) / 16 end
    xs[17], xs[300], xs[555] = nan, inf, f32(1e30)
    for _, op in ipairs(OPS) do
      local got = apply(op, ember.tensor(xs, {dtype = "float32"})):tolist()
      for i, x in ipairs(xs) do
        local want = REF[op](x)
        if want ~= want then
          assert.is_true(isnan(got[i]), ("%s(%g)"):format(op, x))
        elseif math.abs(want) > 3.4028235677973366e38 or math.abs(want) == inf then
          assert.are.equal(f32(want), got[i], ("%s(%g)"):format(op, x))
        else
          assert.is_true(math.abs(got[i] - want) <= BAR * ulp32(want),
            ("%s(%g) = %.9g, expected %.9g"):format(op, x, got[i], want))
        end
      end
    end
  end)
end)

describe("float16 and bfloat16", function()
  it("give the float32 result rounded once", function()
    local xs = {}
    for k = -400, 400 do xs[#xs + 1] = k / 40 end
    for _, dt in ipairs({"float16", "bfloat16"}) do
      local t = ember.tensor(xs, {dtype = "float32"}):to(dt)
      local t32 = t:to("float32")                      -- the exact half values
      for _, op in ipairs(OPS) do
        local got = apply(op, t)
        assert.are.equal(dt, got.dtype)
        local want = apply(op, t32):to(dt):to("float32"):tolist()
        local g = got:to("float32"):tolist()
        for i = 1, #xs do
          if want[i] ~= want[i] then
            assert.is_true(isnan(g[i]), ("%s %s(%g)"):format(dt, op, xs[i]))
          else
            assert.are.equal(want[i], g[i], ("%s %s(%g)"):format(dt, op, xs[i]))
          end
        end
      end
    end
  end)

  it("strided float32 inputs give the contiguous values", function()
    ember.manual_seed(3)
    local base = ember.randn(8, 40) * 6
    local v = base[{{}, {1, 40, 3}}]:t()
    for _, op in ipairs({"exp", "tanh", "sin", "cos", "sigmoid"}) do
      assert.are.same(apply(op, v:contiguous()):tolist(), apply(op, v):tolist())
    end
  end)
end)
