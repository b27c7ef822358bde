-- gelu_spec.lua — GELU, exact (erf) and tanh forms: values against an
-- independent Phi written here (a positive-term series for erf and a
-- continued fraction for erfc, in float64), the float32 error in ulps over a
-- dense sweep of [-10, 10], special values, strided inputs, and first and
-- second derivatives against finite differences (gradcheck, gradgradcheck).
local ember = require "ember"
local nn = require "ember.nn"
local h = require "helpers"

local gradcheck, gradgradcheck = ember.autograd.gradcheck, ember.autograd.gradgradcheck
local isnan = h.is_nan
local SQRT1_2, SQRTPI = math.sqrt(0.5), math.sqrt(math.pi)

-- erf(z), z >= 0: 2/sqrt(pi) e^(-z^2) sum 2^n z^(2n+1) / (1 3 5 ... (2n+1)),
-- a series of positive terms (no cancellation)
-- (z2 = z^2, passed exactly: exp(-z^2) magnifies an error in z^2)
local function erf_series(z, z2)
  z2 = z2 or z * z
  local term, sum, n = z, z, 0
  while term > sum * 1e-17 do
    n = n + 1
    term = term * 2 * z2 / (2 * n + 1)
    sum = sum + term
  end
  return 2 / SQRTPI * math.exp(-z2) * sum
end

-- erfc(z), z >= 1/2: e^(-z^2) / sqrt(pi) / (z + (1/2) / (z + 1 / (z + (3/2) / (z + ...)))),
-- 1000 terms (converged to the last bit from z = 1/2 up)
local function erfc_cf(z, z2)
  z2 = z2 or z * z
  local f = z
  for k = 1000, 1, -1 do f = z + (k / 2) / f end
  return math.exp(-z2) / SQRTPI / f
end

-- the standard normal CDF, accurate in both tails (memoised: the sweeps
-- below ask for the same points several times)
local phi_memo = {}
local function Phi(x)
  local p = phi_memo[x]
  if p then return p end
  local z, z2 = math.abs(x) * SQRT1_2, x * x / 2
  local lower = z < 0.5 and 0.5 * (1 - erf_series(z, z2)) or 0.5 * erfc_cf(z, z2)
  p = x >= 0 and 1 - lower or lower
  phi_memo[x] = p
  return p
end
local function pdf(x) return math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi) end

local function gelu_ref(x) return x * Phi(x) end
local function gelu_grad_ref(x) return Phi(x) + x * pdf(x) end
-- the tanh form as x sigmoid(2u): no cancellation for negative x
local function gelu_tanh_ref(x)
  local u = math.sqrt(2 / math.pi) * (x + 0.044715 * x ^ 3)
  return x / (1 + math.exp(-2 * u))
end

local ulp32 = h.ulp32

-- the largest error of got against ref(x) in float32 ulps of the reference;
-- errors below floor count as none (near a zero of the function, where
-- the reference's own rounding is larger than an ulp)
local function max_ulps(xs, got, ref, floor)
  local worst, at = 0, nil
  for i, x in ipairs(xs) do
    local want = ref(x)
    local d = math.abs(got[i] - want)
    local u = d <= (floor or 0) and 0 or d / ulp32(want)
    if u > worst then worst, at = u, x end
  end
  return worst, at
end

-- x = k / 1024 for |x| <= 10: exact float32 inputs
local function sweep()
  local xs = {}
  for k = -10240, 10240 do xs[#xs + 1] = k / 1024 end
  return xs
end

describe("the reference Phi", function()
  it("agrees with known values (mpmath, 30 digits)", function()
    local cases = {{1.5, 0.933192798731141934}, {-5, 2.8665157187919391167e-7},
                   {-10, 7.619853024160526066e-24}, {-0.5, 0.30853753872598689636},
                   {3, 0.99865010196836990547}}
    for _, c in ipairs(cases) do
      assert.is_true(math.abs(Phi(c[1]) - c[2]) <= 1e-15 * c[2], ("Phi(%g) = %.17g"):format(c[1], Phi(c[1])))
    end
    -- the two methods agree where they meet and beyond
    for _, z in ipairs({0.5, 1, 1.5}) do
      assert.is_true(math.abs(erf_series(z) - (1 - erfc_cf(z))) < 1e-15)
    end
  end)
end)

describe("gelu (exact form)", function()
  it("float64 matches x Phi(x) over [-10, 10]", function()
    local xs = sweep()
    local got = ember.tensor(xs, {dtype = "float64"}):gelu():tolist()
    for i, x in ipairs(xs) do
      local want = gelu_ref(x)
      -- libm's erfc of the rounded x / sqrt 2: relative error about eps x^2
      assert.is_true(math.abs(got[i] - want) <= 1e-15 * (1 + x * x) * math.abs(want),
        ("gelu(%.17g) = %.17g, expected %.17g"):format(x, got[i], want))
    end
  end)

  it("float32 is within one ulp over [-10, 10]", function()
    local xs = sweep()
    local got = ember.tensor(xs, {dtype = "float32"}):gelu():tolist()
    local worst, at = max_ulps(xs, got, gelu_ref)
    assert.is_true(worst <= 1, ("max error %.3f ulp at x = %.17g"):format(worst, at))
  end)

  it("float32 keeps its relative accuracy in the far negative tail", function()
    local xs = {}
    for k = -14 * 64, -10 * 64 do xs[#xs + 1] = k / 64 end
    local got = ember.tensor(xs, {dtype = "float32"}):gelu():tolist()
    -- gelu(-13) is about 8e-38, near the smallest normal float
    local worst, at = max_ulps(xs, got, gelu_ref)
    assert.is_true(worst <= 1, ("max error %.3f ulp at x = %.17g"):format(worst, at))
    assert.are.equal(0, ember.tensor({-15, -30, -1e30}):gelu():tolist()[3])
  end)

  -- float32 takes a polynomial without exp for blocks of elements whose
  -- every |x| is at most 3, the tail form otherwise: the same x on both
  it("float32 is within one ulp on [-3, 3] by either formula", function()
    local xs, mixed = {}, {}
    for k = -3072, 3072 do xs[#xs + 1] = k / 1024 end
    -- every 16th element 10, so no block of 16 or more is all small
    for i, x in ipairs(xs) do
      mixed[#mixed + 1] = x
      if i % 15 == 0 then mixed[#mixed + 1] = 10 end
    end
    for _, set in ipairs({xs, mixed}) do
      local got = ember.tensor(set, {dtype = "float32"}):gelu():tolist()
      local worst, at = max_ulps(set, got, gelu_ref)
      assert.is_true(worst <= 1, ("max error %.3f ulp at x = %.17g"):format(worst, at))
      local x = ember.tensor(set, {dtype = "float32"}):requires_grad_()
      x:gelu():sum():backward()
      worst, at = max_ulps(set, x.grad:tolist(), gelu_grad_ref, 1e-12)
      assert.is_true(worst <= 1, ("gradient: max error %.3f ulp at x = %.17g"):format(worst, at))
    end
  end)

  it("handles -0, large values, infinities and NaN", function()
    local nan, inf = 0 / 0, math.huge
    for _, dt in ipairs({"float32", "float64"}) do
      local r = ember.tensor({-0.0, 0.0, 1e30, -1e30, inf, -inf, nan}, {dtype = dt}):gelu():tolist()
      assert.are.equal(0, r[1])
      assert.are.equal(0, r[2])
      assert.is_true(math.abs(r[3] - 1e30) <= 1e30 * 1e-7)
      assert.are.equal(0, r[4])
      assert.are.equal(inf, r[5])
      assert.is_true(isnan(r[6]))   -- -inf * Phi(-inf) = -inf * 0, as in PyTorch
      assert.is_true(isnan(r[7]))
    end
  end)

  it("integer inputs promote to the default float dtype", function()
    local r = ember.tensor({-1, 0, 2}):gelu()
    assert.are.equal("float32", r.dtype)
    assert.is_true(math.abs(r:tolist()[3] - gelu_ref(2)) < 1e-6)
  end)

  it("strided and non-contiguous inputs give the contiguous values", function()
    ember.manual_seed(7)
    for _, dt in ipairs({"float32", "float64"}) do
      local base = ember.randn(6, 10, {dtype = dt}) * 4
      local views = {base:t(), base[{{}, {1, 10, 3}}], base:narrow(2, 2, 5)}
      for _, v in ipairs(views) do
        assert.is_false(v:is_contiguous())
        assert.are.same(v:contiguous():gelu():tolist(), v:gelu():tolist())
        local w = v:clone():t():contiguous():t()   -- same values, transposed layout
        w:gelu_()
        assert.are.same(v:contiguous():gelu():tolist(), w:tolist())
      end
    end
  end)
end)

describe("gelu gradient (exact form)", function()
  it("float64 gradient is Phi(x) + x phi(x)", function()
    local xs = sweep()
    local x = ember.tensor(xs, {dtype = "float64"}):requires_grad_()
    x:gelu():sum():backward()
    local got = x.grad:tolist()
    for i, v in ipairs(xs) do
      local want = gelu_grad_ref(v)
      -- as the forward, plus a few ulps of Phi (about 0.25) where Phi(x) + x phi(x) cancels
      assert.is_true(math.abs(got[i] - want) <= 1e-15 * (1 + v * v) * math.abs(want) + 4e-16,
        ("gelu'(%.17g) = %.17g, expected %.17g"):format(v, got[i], want))
    end
  end)

  it("float32 gradient is within one ulp over [-10, 10]", function()
    local xs = sweep()
    for k = -64, 64 do xs[#xs + 1] = -0.7517916243 + k * 2 ^ -20 end   -- around its zero
    local x = ember.tensor(xs, {dtype = "float32"}):requires_grad_()
    x:gelu():sum():backward()
    xs = x:detach():to("float64"):tolist()   -- the float32 inputs
    -- near the zero, Phi(x) + x phi(x) cancels: an absolute error of 1e-12
    -- (Phi's, from its polynomial) counts as none
    local worst, at = max_ulps(xs, x.grad:tolist(), gelu_grad_ref, 1e-12)
    assert.is_true(worst <= 1, ("max error %.3f ulp at x = %.17g"):format(worst, at))
  end)

  it("multiplies the incoming gradient, with special values", function()
    local nan, inf = 0 / 0, math.huge
    for _, dt in ipairs({"float32", "float64"}) do
      local x = ember.tensor({0, 1e30, -1e30, inf, -inf, nan, 1.5}, {dtype = dt}):requires_grad_()
      x:gelu():backward(ember.full({7}, 2, {dtype = dt}))
      local g = x.grad:tolist()
      assert.are.equal(1, g[1])
      assert.are.equal(2, g[2])
      assert.are.equal(0, g[3])
      -- 1 + inf * 0 and 0 + (-inf) * 0, as PyTorch's
      assert.is_true(isnan(g[4]) and isnan(g[5]) and isnan(g[6]))
      assert.is_true(math.abs(g[7] - 2 * 1.1274691922299795254) < 1e-6)
    end
  end)

  it("passes gradcheck and gradgradcheck in float64, strided too", function()
    ember.manual_seed(3)
    local f = function(x) return x:gelu() end
    assert(gradcheck(f, {ember.randn(4, 5) * 3}))
    assert(gradcheck(f, {(ember.randn(5, 4) * 3):t()}))
    assert(gradgradcheck(f, {ember.randn(4, 5) * 3}))
    assert(gradgradcheck(f, {(ember.randn(5, 4) * 3):t()}))
    assert(gradgradcheck(function(x) return x:gelu() * x end, {ember.randn(6)}))
  end)

  it("records the second derivative phi(x) (2 - x^2)", function()
    local xs = {-3, -1, -0.25, 0, 0.5, 2}
    local x = ember.tensor(xs, {dtype = "float64"}):requires_grad_()
    local g = ember.autograd.grad(x:gelu():sum(), x, {create_graph = true})
    local gg = ember.autograd.grad(g:sum(), x)
    for i, v in ipairs(gg:tolist()) do
      local want = pdf(xs[i]) * (2 - xs[i] ^ 2)
      assert.is_true(math.abs(v - want) < 1e-15, ("gelu''(%g) = %.17g, expected %.17g"):format(xs[i], v, want))
    end
  end)
end)

describe("gelu (tanh form)", function()
  local tanh = {approximate = "tanh"}

  it("float64 matches 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))", function()
    local xs = sweep()
    local got = ember.tensor(xs, {dtype = "float64"}):gelu(tanh):tolist()
    for i, x in ipairs(xs) do
      local want = gelu_tanh_ref(x)
      assert.is_true(math.abs(got[i] - want) <= 1e-14 * math.abs(want) + 1e-15,
        ("gelu_tanh(%.17g) = %.17g, expected %.17g"):format(x, got[i], want))
    end
  end)

  it("float32 is close over [-10, 10]", function()
    local xs = sweep()
    local got = ember.tensor(xs, {dtype = "float32"}):gelu(tanh):tolist()
    for i, x in ipairs(xs) do
      local want = gelu_tanh_ref(x)
      assert.is_true(math.abs(got[i] - want) <= 4 * ulp32(want) + 1e-7,
        ("gelu_tanh(%.17g) = %.17g, expected %.17g"):format(x, got[i], want))
    end
  end)

  it("handles -0, infinities and NaN", function()
    local nan, inf = 0 / 0, math.huge
    local r = ember.tensor({-0.0, inf, nan}, {dtype = "float64"}):gelu(tanh):tolist()
    assert.are.equal(0, r[1])
    assert.are.equal(inf, r[2])
    assert.is_true(isnan(r[3]))
  end)

  it("strided inputs give the contiguous values", function()
    ember.manual_seed(8)
    local base = ember.randn(6, 10) * 4
    local v = base[{{}, {1, 10, 3}}]:t()
    assert.are.same(v:contiguous():gelu(tanh):tolist(), v:gelu(tanh):tolist())
  end)

  it("passes gradcheck and gradgradcheck in float64", function()
    ember.manual_seed(4)
    local f = function(x) return x:gelu(tanh) end
    assert(gradcheck(f, {ember.randn(4, 5) * 3}))
    assert(gradgradcheck(f, {(ember.randn(5, 4) * 3):t()}))
  end)
end)

describe("nn.GELU", function()
  it("computes both forms and their gradients", function()
    local xs = {-4, -1.5, -0.1, 0, 0.3, 2.5}
    local x = ember.tensor(xs, {dtype = "float64"}):requires_grad_()
    local y = nn.GELU()(x)
    local yt = nn.GELU({approximate = "tanh"})(x)
    for i, v in ipairs(y:tolist()) do
      assert.is_true(math.abs(v - gelu_ref(xs[i])) < 1e-15)
      assert.is_true(math.abs(yt:tolist()[i] - gelu_tanh_ref(xs[i])) < 1e-15)
    end
    y:sum():backward()
    for i, v in ipairs(x.grad:tolist()) do assert.is_true(math.abs(v - gelu_grad_ref(xs[i])) < 1e-15) end
  end)
end)
