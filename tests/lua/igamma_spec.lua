-- igamma_spec.lua — the regularized incomplete gamma functions (special.gammainc / gammaincc,
-- ember.igamma / igammac and the methods) against mpmath at 40 digits
-- (scripts/fixtures/make_igamma_fixtures.py, an independent implementation; it also records
-- PyTorch's values) on a grid of a from 1e-3 to 1e4 across x = a + 1, where the series gives
-- way to the continued fraction; P + Q = 1; dP/dx against mpmath; PyTorch's special values
-- (printed by PyTorch 2.15, quoted); the errors.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local S = ember.special
local FX = h.fixture("igamma.lua")

local function rel(g, w) if w == 0 then return math.abs(g) end return math.abs(g - w) / math.abs(w) end

-- the prefactor x^a e^-x / Gamma(a) cancels terms of size a: relative error grows with it
local function tol(a) return a <= 100 and 2e-12 or 1e-10 end

describe("the regularized incomplete gamma functions against mpmath", function()
  local a, x = ember.tensor(FX.a, {dtype = "float64"}), ember.tensor(FX.x, {dtype = "float64"})

  it("P and Q on both sides of x = a + 1, a from 1e-3 to 1e4", function()
    local p, q = S.gammainc(a, x):tolist(), S.gammaincc(a, x):tolist()
    for i = 1, #FX.p do
      assert(rel(p[i], FX.p[i]) <= tol(FX.a[i]), string.format("P(%g, %g) = %.17g, want %.17g", FX.a[i], FX.x[i],
                                                               p[i], FX.p[i]))
      assert(rel(q[i], FX.q[i]) <= tol(FX.a[i]), string.format("Q(%g, %g) = %.17g, want %.17g", FX.a[i], FX.x[i],
                                                               q[i], FX.q[i]))
      assert(math.abs(p[i] + q[i] - 1) <= 4e-16 + tol(FX.a[i]), "P + Q")
    end
  end)

  it("dP/dx = x^(a-1) e^-x / Gamma(a); dQ/dx its negative; no gradient for a, as PyTorch", function()
    local xg = x:clone():requires_grad_()
    S.gammainc(a, xg):sum():backward()
    local gp = xg.grad:tolist()
    for i = 1, #FX.dp do assert(rel(gp[i], FX.dp[i]) <= 10 * tol(FX.a[i]), "dP/dx at " .. FX.a[i] .. ", " .. FX.x[i]) end
    local x2 = x:clone():requires_grad_()
    S.gammaincc(a, x2):sum():backward()
    h.close_tensors("dQ/dx", x2.grad, -xg.grad, 1e-12)
    local ag = a:clone():requires_grad_()
    has(err(function() S.gammainc(ag, x):sum():backward() end), "gammainc: the gradient with respect to a")
  end)

  it("PyTorch's values where a or x is 0, inf, negative or NaN", function()
    local inf, nan = math.huge, 0 / 0
    local sa = ember.tensor({0, 0, 1, 2, inf, inf, -1, 1, nan, 1, 2, 0}, {dtype = "float64"})
    local sx = ember.tensor({0, 1, 0, inf, 1, inf, 1, -1, 1, nan, 0, inf}, {dtype = "float64"})
    -- torch.igamma: [nan, 1.0, 0.0, 1.0, 0.0, nan, nan, nan, nan, nan, 0.0, 1.0]
    local want = {nan, 1, 0, 1, 0, nan, nan, nan, nan, nan, 0, 1}
    local got, gotc = ember.igamma(sa, sx):tolist(), ember.igammac(sa, sx):tolist()
    for i, w in ipairs(want) do
      if w ~= w then assert(got[i] ~= got[i] and gotc[i] ~= gotc[i], "NaN at " .. i)
      else assert(got[i] == w and gotc[i] == 1 - w, "at " .. i .. ": " .. got[i] .. ", " .. gotc[i]) end
    end
  end)

  it("the methods, the in-place forms and float32", function()
    local a32, x32 = ember.tensor({2.0, 3.0}), ember.tensor({1.0, 5.0})
    local p = a32:igamma(x32)
    assert.are.equal("float32", p.dtype)
    h.close_tensors("float32", p, S.gammainc(a32:double(), x32:double()):float(), 0)
    local t = a32:clone()
    assert.is_true(rawequal(t:igammac_(x32), t))
    h.close_tensors("igammac_", t, a32:igammac(x32), 0)
    has(err(function() local _ = ember.igamma(ember.ones(2), "x") end), "gammainc", "igamma_spec.lua:")
    has(err(function() local _ = ember.tensor({2, 3}):igamma_(x32) end),
        "igamma_: result type float32 can't be cast to the desired output type int64", "igamma_spec.lua:")
  end)
end)
