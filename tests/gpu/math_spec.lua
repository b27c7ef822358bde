-- math_spec.lua (GPU) — the elementwise math (exp2 ... heaviside) on the device under
-- test against the CPU backend on the same inputs: the new unary and binary
-- kernels (float32, float64, integers), strided and broadcast operands,
-- in-place forms, the composed ops and their gradients.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, same = g.dev, g.same
local nan, inf = 0 / 0, math.huge

describe("math: unary kernels", function()
  it("float32 and float64, contiguous and strided", function()
    local ops = {"exp2", "log2", "log10", "erf", "erfc", "erfinv", "trunc", "tan", "sinh", "cosh", "asin",
                 "acos", "atan", "asinh", "acosh", "atanh", "frac", "sgn", "logit", "nan_to_num", "isnan",
                 "isinf", "isfinite", "isposinf", "isneginf"}
    -- Ops whose result is exact (IEEE operations and comparisons) must match
    -- to the bit. The others are library functions: glibc's on the CPU (and
    -- the CPU's own erfinv, within 2 ulp), CUDA's math library on the device,
    -- which the CUDA C++ Programming Guide bounds by a few ulp each (double:
    -- erfc, erfinv 5 ulp, asinh/acosh 3, most others 1-2; float at most 4).
    -- Two results each within a few ulp of the truth differ by at most about
    -- 10 ulp, and an ulp is at most 2^-52 (2^-23) of the value, so 16 ulp of
    -- relative tolerance, and no absolute one: still far below any wrong
    -- formula or constant (a float constant in a double path is ~1e-8).
    local exact = {trunc = true, frac = true, sgn = true, nan_to_num = true, isnan = true, isinf = true,
                   isfinite = true, isposinf = true, isneginf = true}
    for _, d in ipairs({"float32", "float64"}) do
      local x = (ember.rand(37, 5, {dtype = d}) * 2.2 - 1.1)
      x[1][1], x[2][1], x[3][1], x[4][1], x[5][1] = nan, inf, -inf, 1, -1
      local rtol = 16 * (d == "float32" and 2 ^ -23 or 2 ^ -52)
      for _, op in ipairs(ops) do
        local cmp = exact[op] and same or g.close
        cmp(ember[op](dev(x)), ember[op](x), {what = op .. " " .. d, rtol = rtol, atol = 0})
        cmp(ember[op](dev(x):t()), ember[op](x:t()), {what = op .. " strided " .. d, rtol = rtol, atol = 0})
      end
      same(ember.round(dev(x), {decimals = 2}), ember.round(x, {decimals = 2}), {what = "round " .. d})
    end
  end)

  it("erfinv near -1 and 1 (where erf is flat) within a few ulp of the CPU's", function()
    local y = {}
    for k = 1, 15 do y[#y + 1] = 1 - 10 ^ -k; y[#y + 1] = -(1 - 3 * 10 ^ -k) end
    local x = ember.tensor(y, {dtype = "float64"})
    g.close(ember.erfinv(dev(x)), ember.erfinv(x), {what = "erfinv tail", rtol = 16 * 2 ^ -52, atol = 0})
  end)

  it("integer inputs: trunc, bitwise_not, promotion of float ops", function()
    local i = ember.randint(-50, 50, {40}, {dtype = "int64"})
    same(dev(i):trunc(), i:trunc())
    same(dev(i):bitwise_not(), i:bitwise_not())
    same(dev(i:to("int32")):bitwise_not(), i:to("int32"):bitwise_not())
    same(dev(i):exp2(), i:exp2())
    local b = ember.randint(0, 2, {9}):to("bool")
    same(dev(b):bitwise_not(), b:bitwise_not())
  end)

  it("in place", function()
    local x = ember.rand(64) * 0.9
    local dx = dev(x)
    dx:erfinv_():atanh_()
    x:erfinv_():atanh_()
    same(dx, x)
  end)
end)

describe("math: binary kernels", function()
  it("float ops with broadcasting and numbers", function()
    for _, d in ipairs({"float32", "float64"}) do
      local a = ember.randn(33, 1, {dtype = d}) * 3
      local b = ember.randn(1, 7, {dtype = d}) * 3
      a[1][1], a[2][1], a[3][1] = inf, -inf, 0
      b[1][1], b[1][2] = inf, -0.0
      for _, op in ipairs({"atan2", "hypot", "copysign", "logaddexp", "logaddexp2", "fmod", "floor_divide",
                           "xlogy"}) do
        same(ember[op](dev(a), dev(b)), ember[op](a, b), {what = op .. " " .. d})
        same(ember[op](dev(a), 1.5), ember[op](a, 1.5), {what = op .. " number " .. d})
      end
      for _, mode in ipairs({"trunc", "floor"}) do
        same(ember.div(dev(a), dev(b), {rounding_mode = mode}), ember.div(a, b, {rounding_mode = mode}),
             {what = mode})
      end
    end
  end)

  it("integer ops: fmod, rounded divisions, bitwise", function()
    for _, d in ipairs({"int64", "int32", "uint8"}) do
      local lo = d == "uint8" and 0 or -100
      local a = ember.randint(lo, 100, {50}, {dtype = d})
      local b = ember.randint(1, 9, {50}, {dtype = d})
      if d ~= "uint8" then b = b * (ember.randint(0, 2, {50}, {dtype = d}) * 2 - 1) end
      for _, op in ipairs({"fmod", "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor",
                           "bitwise_left_shift", "bitwise_right_shift"}) do
        local bb = op:match("shift") and b:abs() or b
        same(ember[op](dev(a), dev(bb)), ember[op](a, bb), {what = op .. " " .. d})
      end
      same(ember.div(dev(a), dev(b), {rounding_mode = "trunc"}), ember.div(a, b, {rounding_mode = "trunc"}))
    end
    local p, q = ember.randint(0, 2, {20}):to("bool"), ember.randint(0, 2, {20}):to("bool")
    same(ember.bitwise_xor(dev(p), dev(q)), ember.bitwise_xor(p, q))
    same(ember.logical_xor(dev(p), dev(q)), ember.logical_xor(p, q))
  end)
end)

describe("math: composed ops and gradients", function()
  it("isclose, allclose, equal, lerp, addcmul, addcdiv, clamp, heaviside", function()
    local a, b = ember.randn(6, 4), ember.randn(4)
    same(ember.isclose(dev(a), dev(a + 1e-6)), ember.isclose(a, a + 1e-6))
    assert.are.equal(ember.allclose(a, a + 1e-3), ember.allclose(dev(a), dev(a + 1e-3)))
    assert.is_true(ember.equal(dev(a), dev(a)))
    same(ember.lerp(dev(a), dev(b), 0.3), ember.lerp(a, b, 0.3))
    same(ember.lerp(dev(a), dev(b), dev(b:sigmoid())), ember.lerp(a, b, b:sigmoid()))
    same(ember.addcmul(dev(a), dev(b), dev(a), {value = 0.5}), ember.addcmul(a, b, a, {value = 0.5}))
    same(ember.addcdiv(dev(a), dev(b), dev(a), {value = 2}), ember.addcdiv(a, b, a, {value = 2}))
    same(ember.clamp(dev(a), dev(b), dev(b + 1)), ember.clamp(a, b, b + 1))
    same(ember.heaviside(dev(a:round()), dev(b)), ember.heaviside(a:round(), b))
  end)

  it("gradients agree with the CPU's", function()
    local x = ember.rand(5, {dtype = "float64"}) * 0.8 + 0.1
    local y = ember.rand(5, {dtype = "float64"}) + 0.5
    local function grads(xx, yy)
      local l = (ember.erfinv(xx) + ember.atan2(xx, yy) + ember.hypot(xx, yy) + ember.logaddexp(xx, yy) +
                 ember.xlogy(xx, yy) + ember.lerp(xx, yy, 0.3) + ember.logit(xx) + ember.acosh(yy + 1)):sum()
      return ember.autograd.grad({l}, {xx, yy})
    end
    local gx, gy = grads(g.leaf(x), g.leaf(y))
    local cx, cy = grads(x:clone():requires_grad_(), y:clone():requires_grad_())
    same(gx, cx)
    same(gy, cy)
  end)

  it("the Bessel functions of ember.special and their gradients", function()
    local x = ember.tensor({0, 1e-6, 0.5, 2, 3.5, 5, 6.5, 40, -1, inf}, {dtype = "float64"})
    for _, name in ipairs({"bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
                           "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"}) do
      g.agree(ember.special[name], {x}, {what = name})
      local pos = ember.tensor({0.3, 2.5, 7}, {dtype = "float64"})
      local function grad(t) local y = ember.special[name](t) return ember.autograd.grad({y:sum()}, {t})[1] end
      same(grad(g.leaf(pos)), grad(pos:clone():requires_grad_()))
    end
  end)

  it("the regularized incomplete gamma functions and dP/dx", function()
    local a = ember.tensor({0.5, 2, 10, 300, 0, 1, -1}, {dtype = "float64"})
    local x = ember.tensor({0.1, 5, 10, 310, 1, inf, 1}, {dtype = "float64"})
    g.agree(ember.special.gammainc, {a, x}, {what = "gammainc"})
    g.agree(ember.special.gammaincc, {a, x}, {what = "gammaincc"})
    local function grad(aa, xx) return ember.autograd.grad({ember.igamma(aa, xx):sum()}, {xx})[1] end
    local pa, px = a:narrow(1, 1, 4), x:narrow(1, 1, 4)
    same(grad(g.dev(pa), g.leaf(px)), grad(pa, px:clone():requires_grad_()))
  end)
end)
