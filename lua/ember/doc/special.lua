-- Docs of ember.special (lua/ember/special.lua): the module and the functions written
-- there. Its other names of ember's functions (erf, expit, gammaln, ...) are those
-- functions: help finds their own entries. Format: ember/help.lua.
local entries = {}

entries[#entries + 1] = {
  name = "ember.special",
  sig = "ember.special.<name>(...)",
  doc = "PyTorch's torch.special. Other names of ember's functions, the same functions: erf, erfc,\n"
     .. "erfinv, expm1, exp2, log1p, logit, expit (sigmoid), xlogy, digamma and psi (digamma),\n"
     .. "polygamma, gammaln (lgamma), multigammaln (mvlgamma), sinc, round, softmax,\n"
     .. "log_softmax, logsumexp, i0 and modified_bessel_i0 (ember.i0). Written here: i0e, i1\n"
     .. "(also modified_bessel_i1), i1e, erfcx, ndtr, log_ndtr, ndtri, entr, xlog1py, zeta,\n"
     .. "spherical_bessel_j0. Their values are computed in float64 and rounded to the input's\n"
     .. "float dtype; integer and bool inputs give the default float dtype. Gradients follow\n"
     .. "PyTorch's formulas (second derivatives too).\n"
     .. "Not provided: airy_ai, bessel_j0/j1/y0/y1, modified_bessel_k0/k1 and their scaled\n"
     .. "forms, spherical Bessel beyond j0, gammainc/gammaincc and the orthogonal polynomials\n"
     .. "(chebyshev_polynomial_*, hermite_*, laguerre_polynomial_l, legendre_polynomial_p).\n"
     .. "Like torch.special.",
  example = "local x = ember.tensor({-1.0, 0.0, 2.0})\n"
         .. "print(ember.special.ndtr(x))        -- [0.1587, 0.5, 0.9772]\n"
         .. "print(ember.special.expit(x))       -- ember.sigmoid\n"
         .. "print(ember.special.i1e(x))",
}

local function fn(name, also, args, doc, example)
  local names = {}
  for i, a in ipairs(also) do names[i] = "ember.special." .. a end
  local sig = "ember.special." .. name .. "(" .. args .. ")"
  for _, a in ipairs(also) do sig = sig .. "\nember.special." .. a .. "(" .. args .. ")" end
  entries[#entries + 1] = {name = "ember.special." .. name, also = names, sig = sig,
                           doc = doc .. "\nLike torch.special." .. name .. ".", example = example}
end

fn("i0e", {}, "x", "exp(-|x|) i0(x), the exponentially scaled modified Bessel function of order 0 (finite\n"
   .. "where i0 overflows; 0 at +-inf). Its gradient is i1e(x) - sgn(x) i0e(x).",
   "print(ember.special.i0e(ember.tensor({0.0, 1.0, 1000.0})))   -- [1, 0.4658, 0.0126]")
fn("i1", {"modified_bessel_i1"}, "x", "The modified Bessel function of the first kind of order 1, I1(x) (odd; inf beyond\n"
   .. "|x| = 713.9, NaN at +-inf as PyTorch's). Cephes' Chebyshev expansions, as PyTorch's.\n"
   .. "Its gradient is i0(x) - i1(x) / x, 1/2 where |x| is below the dtype's epsilon.\n"
   .. "modified_bessel_i1 is the same function (PyTorch's has no gradient).",
   "print(ember.special.i1(ember.tensor({0.0, 1.0, -2.0})))   -- [0, 0.5652, -1.5906]")
fn("i1e", {}, "x", "exp(-|x|) i1(x) (0 at +inf, -0 at -inf). Its gradient is\n"
   .. "i0e(x) - i1e(x) (sgn(x) + 1 / x), 1/2 where |x| is below the dtype's epsilon.",
   "print(ember.special.i1e(ember.tensor({1.0, 1000.0})))   -- [0.2079, 0.0126]")
fn("erfcx", {}, "x", "exp(x^2) erfc(x), the scaled complementary error function: finite and accurate for\n"
   .. "large x, where erfc underflows (about 1 / (x sqrt(pi))); inf below -26.7. Its gradient\n"
   .. "is 2 x erfcx(x) - 2 / sqrt(pi).",
   "print(ember.special.erfcx(ember.tensor({0.0, 1.0, 30.0})))   -- [1, 0.4276, 0.0188]")
fn("ndtr", {}, "x", "The standard normal distribution function, erfc(-x / sqrt 2) / 2 (accurate in the lower\n"
   .. "tail).", "print(ember.special.ndtr(ember.tensor({-1.96, 0.0, 1.0})))   -- [0.025, 0.5, 0.8413]")
fn("log_ndtr", {}, "x", "log(ndtr(x)), accurate far into both tails (from erfcx below -1, from log1p above).\n"
   .. "Its gradient is exp(-x^2 / 2 - log_ndtr(x)) / sqrt(2 pi).",
   "print(ember.special.log_ndtr(ember.tensor({-40.0, 0.0, 10.0})))   -- [-804.61, -0.6931, -7.6e-24]")
fn("ndtri", {}, "p", "The inverse of ndtr: x with ndtr(x) = p; -inf at 0, inf at 1, NaN outside [0, 1].\n"
   .. "A first guess (erfinv, or the tail's asymptotic form) refined by Newton's steps on\n"
   .. "log_ndtr, accurate to about 1e-15 relative down to p = 1e-300. Its gradient is\n"
   .. "sqrt(2 pi) exp(ndtri(p)^2 / 2).",
   "print(ember.special.ndtri(ember.tensor({0.025, 0.5, 0.975})))   -- [-1.96, 0, 1.96]")
fn("entr", {}, "x", "The elementwise entropy term -x log(x): 0 at 0, -inf below 0, NaN at NaN. Its gradient\n"
   .. "is -(1 + log(x)) (inf at 0, NaN below).",
   "print(ember.special.entr(ember.tensor({0.0, 0.5, 1.0, -1.0})))   -- [0, 0.3466, -0, -inf]")
fn("xlog1py", {}, "x, y", "x log1p(y), with 0 where x == 0 (even where y = -1), unless y is NaN. x and y\n"
   .. "broadcast and promote (either may be a number). Gradients: log1p(y) for x (0 where\n"
   .. "x == 0 and y <= -1) and x / (1 + y) for y.",
   "print(ember.special.xlog1py(ember.tensor({0.0, 2.0}), ember.tensor({-1.0, 1.0})))   -- [0, 1.3863]")
fn("zeta", {}, "x, q", "The Hurwitz zeta function, the sum over k >= 0 of (k + q)^-x, by Cephes'\n"
   .. "Euler-Maclaurin summation (PyTorch's): inf at x = 1 and at integer q <= 0, NaN for\n"
   .. "x < 1 and for q < 0 with x not an integer. x and q broadcast and promote (either may be\n"
   .. "a number); a non-integer q below -1e4 is refused (its sum would take -q terms). The\n"
   .. "gradient in q is -x zeta(x + 1, q); in x there is none (asking for it is an error,\n"
   .. "as in PyTorch).",
   "print(ember.special.zeta(2, ember.tensor({1.0, 2.0})))   -- [1.6449 (pi^2 / 6), 0.6449]")
fn("spherical_bessel_j0", {}, "x", "The spherical Bessel function of the first kind of order 0, sin(x) / x: 1 at 0, 0 at\n"
   .. "+-inf. Differentiable (PyTorch's is not).",
   "print(ember.special.spherical_bessel_j0(ember.tensor({0.0, math.pi, 1.0})))   -- [1, ~0, 0.8415]")

return entries
