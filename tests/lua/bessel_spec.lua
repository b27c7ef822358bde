-- bessel_spec.lua — ember.special's Bessel functions J0, J1, Y0, Y1 and modified K0, K1
-- (and exp(x) K0, exp(x) K1): values and derivatives against mpmath at 40 digits
-- (scripts/fixtures/make_bessel_fixtures.py, an independent implementation) across every
-- branch of Cephes' forms, float32 rounded once, the special values, PyTorch's integer
-- promotion, and the gradients through autograd against finite differences too.
local ember = require "ember"
local h = require "helpers"
local S = ember.special
local FX = h.fixture("bessel.lua")

local NAMES = {"bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
               "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"}

-- the worst relative error of got against want, and where
local function worst(got, want)
  local w, at = 0, 0
  for i = 1, #want do
    local e = math.abs(got[i] - want[i]) / math.max(math.abs(want[i]), 1e-300)
    if e > w then w, at = e, i end
  end
  return w, at
end

describe("the Bessel functions against mpmath", function()
  local x = ember.tensor(FX.x, {dtype = "float64"})
  for _, name in ipairs(NAMES) do
    it(name .. ": values to float64's precision", function()
      local got = S[name](x):tolist()
      local w, at = worst(got, FX.values[name])
      -- near the zeros of J and Y the relative error grows with 1 / |f|; away from them 1e-13
      assert(w < 5e-13, string.format("%s at x = %g: relative error %.3g", name, FX.x[at], w))
    end)

    it(name .. ": its gradient", function()
      local xg = x:clone():requires_grad_()
      local y = S[name](xg)
      y:sum():backward()
      local w, at = worst(xg.grad:tolist(), FX.grads[name])
      assert(w < 5e-12, string.format("%s' at x = %g: relative error %.3g", name, FX.x[at], w))
    end)
  end

  it("float32 inputs: the float64 result rounded once", function()
    local x32 = ember.tensor(FX.x, {dtype = "float32"})
    for _, name in ipairs(NAMES) do
      local got = S[name](x32)
      assert.are.equal("float32", got.dtype)
      local want = S[name](x32:to("float64")):to("float32")
      assert.are.same(want:tolist(), got:tolist(), name)
    end
    assert.are.equal("float32", S.bessel_j0(ember.tensor({1, 2})).dtype)     -- integers: the default dtype
  end)

  it("the special values", function()
    local v = ember.tensor({0, -1, math.huge, -math.huge, 0 / 0}, {dtype = "float64"})
    local function vals(name) return S[name](v):tolist() end
    local nan = function(t) return t ~= t end
    local j0, j1, y0, k0, k1e = vals("bessel_j0"), vals("bessel_j1"), vals("bessel_y0"), vals("modified_bessel_k0"),
                                vals("scaled_modified_bessel_k1")
    assert.are.same({1, 0, 0, 0}, {j0[1], j1[1], j0[3], j1[4]})              -- J's limit at +-inf is 0
    assert.are.equal(j0[2], S.bessel_j0(ember.tensor({1}, {dtype = "float64"})):item())   -- even
    assert.are.equal(-j1[2], S.bessel_j1(ember.tensor({1}, {dtype = "float64"})):item())  -- odd
    assert.are.equal(-math.huge, y0[1])
    assert.is_true(nan(y0[2]) and nan(y0[5]) and nan(j0[5]))
    assert.are.same({math.huge, 0}, {k0[1], k0[3]})
    assert.is_true(nan(k0[2]))
    assert.are.equal(math.huge, k1e[1])
  end)

  it("agree with finite differences through autograd in float64", function()
    local xs = ember.tensor({0.3, 1.7, 4.2, 5.3, 9.1}, {dtype = "float64"})
    for _, name in ipairs(NAMES) do
      local ok, e = ember.autograd.gradcheck(S[name], {xs:clone():requires_grad_()})
      assert(ok, name .. ": " .. tostring(e))
    end
  end)
end)
