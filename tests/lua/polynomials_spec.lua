-- polynomials_spec.lua — ember.special's orthogonal polynomials (Chebyshev T, U, V, W and their
-- shifted forms, Hermite H and He, Laguerre L, Legendre P) against PyTorch 2.15
-- (scripts/fixtures/make_polynomial_fixtures.py) on a grid of x through each family's special
-- points and n from -1 to 600 (the recurrence, the trigonometric forms, the Hermite limit,
-- fractional n); both sides run the recurrence in float64, whose last bits differ in order
-- of operations: within 1e-12 of max(1, |value|) (measured: 5.6e-13, Laguerre at n = 600,
-- where both are 4e-12 from mpmath's value). Numbers as arguments, float32, no gradient.
local ember = require "ember"
local h = require "helpers"
local S = ember.special
local FX = h.fixture("polynomials.lua")

local function off(g, w)
  if w ~= w then return g ~= g and 0 or math.huge end
  if w == math.huge or w == -math.huge then return g == w and 0 or math.huge end
  return math.abs(g - w) / math.max(1, math.abs(w))
end

describe("the orthogonal polynomials against PyTorch 2.15", function()
  local x = ember.tensor(FX.x, {dtype = "float64"}):view(-1, 1)
  local n = ember.tensor(FX.n, {dtype = "float64"}):view(1, -1)
  for name, want in pairs(FX.values) do
    it(name, function()
      local got = S[name](x, n)
      assert.are.same({#FX.x, #FX.n}, got.shape)
      got = got:tolist()
      for i = 1, #want do
        for j = 1, #want[i] do
          assert(off(got[i][j], want[i][j]) <= 1e-12, string.format("%s(x = %g, n = %g) = %.17g, PyTorch %.17g", name,
                 FX.x[i], FX.n[j], got[i][j], want[i][j]))
        end
      end
    end)
  end

  it("take numbers, keep float32, record no gradient (PyTorch has none)", function()
    assert.are.equal(-1, S.chebyshev_polynomial_t(ember.tensor(0.5), 3):item())   -- T_3(x) = 4x^3 - 3x
    assert.are.equal(-1, S.chebyshev_polynomial_t(0.5, ember.tensor(3)):item())
    assert.are.equal(5.5, S.legendre_polynomial_p(ember.tensor({2.0}), 2):item())  -- (3x^2 - 1) / 2
    local x32 = ember.tensor({0.5, 2})
    local r = S.hermite_polynomial_he(x32, ember.tensor({3, 2}))          -- x^3 - 3x, x^2 - 1
    assert.are.equal("float32", r.dtype)
    assert.are.same({0.125 - 1.5, 3}, r:tolist())
    local xg = ember.tensor({0.5}, {requires_grad = true})
    assert.is_false(S.laguerre_polynomial_l(xg, 2).requires_grad)
  end)
end)
