-- Docs of lua/ember/composite/random.lua: the sampling functions (normal, bernoulli and
-- the in-place fills), the window functions, i0 and mvlgamma. Format: ember/help.lua.
local entries = {}

local function entry(name, also, sig, doc, torch_name, example)
  entries[#entries + 1] = {name = name, also = also, sig = sig, doc = doc .. "\nLike torch." .. torch_name .. ".",
                           example = example}
end

local SEED = "The numbers come from the default generator (ember.manual_seed repeats them, on every\n"
          .. "device) or from the ember.Generator given as the option {generator = g}."
local FILL = "Fills self in place and returns it; refused on a tensor that requires grad (outside\n"
          .. "ember.no_grad), as t:uniform_.\n" .. SEED

entry("ember.normal", {}, "ember.normal(mean, std, [{generator}])\n"
  .. "ember.normal(mean, std, size, [{generator, dtype, device, requires_grad}])",
  "Draws from normal distributions. mean and std are tensors that broadcast, or one of them a\n"
  .. "number (std defaults to 1 with a tensor mean): the result has their broadcast shape,\n"
  .. "mean's dtype (std's when mean is a number) and device. With two numbers, size (a table)\n"
  .. "gives the shape and the options dtype (default float32), device and requires_grad.\n"
  .. "std must be >= 0 everywhere; the tensors must be floating point. The result is\n"
  .. "mean + std * randn, so it is differentiable in tensor mean and std (gradients 1 and\n"
  .. "(result - mean) / std, as PyTorch's).\n" .. SEED, "normal",
  "ember.manual_seed(0)\n"
  .. "print(ember.normal(0, 1, {2, 3}))\n"
  .. "local mean = ember.tensor({0.0, 10.0, 100.0})\n"
  .. "print(ember.normal(mean, 0.1))                   -- near 0, 10, 100\n"
  .. "print(ember.normal(mean, ember.tensor({{1.0}, {2.0}})).shape)   -- {2, 3}")

entry("ember.bernoulli", {"Tensor:bernoulli", "Tensor:bernoulli_"},
  "ember.bernoulli(input, [p], [{generator}])\nTensor:bernoulli([p], [{generator}])\n"
  .. "Tensor:bernoulli_([p = 0.5], [{generator}])",
  "0/1 draws in input's dtype and shape. Without p, input (a float tensor) holds the\n"
  .. "probabilities, each in [0, 1]; with p (a number in [0, 1]) every element is 1 with\n"
  .. "probability p, for input of any dtype. bernoulli_ writes the draws into self (any dtype)\n"
  .. "and takes p as a number or as a float tensor of probabilities broadcast to self's shape.\n"
  .. "The result has no gradient (PyTorch's has a zero one).\n" .. SEED, "bernoulli",
  "ember.manual_seed(0)\n"
  .. "print(ember.bernoulli(ember.tensor({0.0, 0.5, 1.0})))   -- [0, ?, 1]\n"
  .. "print(ember.zeros(6, {dtype = \"int64\"}):bernoulli_(0.3))\n"
  .. "local mask = ember.ones(2, 3):bernoulli(0.5)         -- a dropout-style mask")

entry("Tensor:exponential_", {}, "Tensor:exponential_([lambd = 1], [{generator}])",
  "Fills a float tensor with exponential draws of rate lambd > 0 (mean 1 / lambd), as\n"
  .. "-log(1 - u) / lambd of uniform u in [0, 1) (float64, 2^-32 apart: the largest draw is\n"
  .. "22.2 / lambd).\n" .. FILL, "Tensor.exponential_",
  "ember.manual_seed(0)\nlocal t = ember.empty(10000):exponential_(2)\nprint(t:mean():item())   -- about 0.5")

entry("Tensor:geometric_", {}, "Tensor:geometric_(p, [{generator}])",
  "Fills a float or integer tensor with geometric draws: the number of Bernoulli(p) trials\n"
  .. "up to and including the first success (1, 2, ...; mean 1 / p), for p in (0, 1).\n"
  .. "Draws beyond an integer dtype's range are cast as PyTorch's are.\n" .. FILL, "Tensor.geometric_",
  "ember.manual_seed(0)\nprint(ember.empty(8, {dtype = \"int64\"}):geometric_(0.5))")

entry("Tensor:log_normal_", {}, "Tensor:log_normal_([mean = 1 [, std = 2]], [{generator}])",
  "Fills a float tensor with exp(z), z normal with that mean and std > 0 (the mean and std\n"
  .. "of the logarithm, not of the draws).\n" .. FILL, "Tensor.log_normal_",
  "ember.manual_seed(0)\nlocal t = ember.empty(10000, {dtype = \"float64\"}):log_normal_(0, 0.5)\n"
  .. "print(t:log():mean():item(), t:min():item() > 0)   -- about 0, true")

entry("Tensor:cauchy_", {}, "Tensor:cauchy_([median = 0 [, sigma = 1]], [{generator}])",
  "Fills a float tensor with Cauchy draws of that median and scale sigma > 0, as\n"
  .. "median + sigma tan(pi (u - 1/2)).\n" .. FILL, "Tensor.cauchy_",
  "ember.manual_seed(0)\nprint(ember.empty(10001):cauchy_(3, 0.5):median():item())   -- about 3")

entry("Tensor:random_", {}, "Tensor:random_()\nTensor:random_(to)\nTensor:random_(from, to)\n"
  .. "Tensor:random_({from =, to =, generator =})",
  "Fills self with integers uniform in [from, to) (from defaults to 0). Without to, up to\n"
  .. "the dtype's largest: int64 2^63 - 1, int32 2^31 - 1, uint8 255, bool 1, and for the\n"
  .. "float dtypes the integers they hold exactly (2^24 float32, 2^53 float64, 2^11 float16,\n"
  .. "2^8 bfloat16); from and to - 1 must lie in that range (PyTorch only warns for floats\n"
  .. "beyond it). Any int64 bounds are exact. Ranges up to 2^16 come from ember.randint (bias\n"
  .. "below 2^-16), wider ones by rejection, exactly uniform.\n" .. FILL, "Tensor.random_",
  "ember.manual_seed(0)\n"
  .. "print(ember.empty(6, {dtype = \"int64\"}):random_(1, 7))   -- dice\n"
  .. "print(ember.empty(3, {dtype = \"uint8\"}):random_())       -- 0..255\n"
  .. "print(ember.empty(2, {dtype = \"int64\"}):random_({from = -2^62}))")

-- ---- windows -----------------------------------------------------------------------------

local WINDOW = "window_length >= 0 points; a periodic window (the default, for spectral analysis)\n"
            .. "is the symmetric one of window_length + 1 points without its last. Options: dtype (a\n"
            .. "float dtype; the default dtype), device, requires_grad. Computed in float64, then cast."

local function window(name, params, doc, example)
  entry("ember." .. name, {}, "ember." .. name .. "(window_length, [periodic = true" .. params
          .. "], [{dtype, device, requires_grad}])", doc .. "\n" .. WINDOW, name, example)
end

window("hann_window", "", "The Hann window 0.5 - 0.5 cos(2 pi k / (N - 1)), k = 0..N-1.",
  "print(ember.hann_window(5, false))   -- [0, 0.5, 1, 0.5, 0]\nprint(ember.hann_window(4))")
window("hamming_window", " [, alpha = 0.54 [, beta = 0.46]]",
  "The generalised Hamming window alpha - beta cos(2 pi k / (N - 1)); alpha and beta may be\n"
  .. "given in the options table too.",
  "print(ember.hamming_window(5, false))   -- [0.08, 0.54, 1, 0.54, 0.08]\n"
  .. "print(ember.hamming_window(4, {alpha = 0.5, beta = 0.5, dtype = \"float64\"}))")
window("blackman_window", "", "The Blackman window 0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1)).",
  "print(ember.blackman_window(5, false))   -- [~0, 0.34, 1, 0.34, ~0]")
window("bartlett_window", "", "The Bartlett (triangular) window 1 - |2k / (N - 1) - 1|.",
  "print(ember.bartlett_window(5, false))   -- [0, 0.5, 1, 0.5, 0]")
window("kaiser_window", " [, beta = 12]",
  "The Kaiser window i0(beta sqrt(1 - ((k - a) / a)^2)) / i0(beta), a = (N - 1) / 2; beta may\n"
  .. "be given in the options table too.",
  "print(ember.kaiser_window(5, false, 5))   -- [0.0367, 0.5529, 1, 0.5529, 0.0367]\n"
  .. "print(ember.kaiser_window(8, {beta = 8.6, dtype = \"float64\"}))")

-- ---- special functions -------------------------------------------------------------------

entry("ember.i0", {"Tensor:i0", "Tensor:i0_", "ember.special.i0", "ember.special.modified_bessel_i0"},
  "ember.i0(x)\nTensor:i0()\nTensor:i0_()\nember.special.i0(x)\nember.special.modified_bessel_i0(x)",
  "The modified Bessel function of the first kind of order 0, elementwise: Cephes'\n"
  .. "Chebyshev expansions (PyTorch's), in float64, accurate to about 1e-15 relative; inf\n"
  .. "beyond |x| = 713.9 and NaN at +-inf (as PyTorch's). Integer and bool inputs give the\n"
  .. "default float dtype. Differentiable: the derivative is ember.special.i1. i0_ writes\n"
  .. "into a float self. modified_bessel_i0 is the same function (PyTorch's has no gradient).",
  "i0", "print(ember.i0(ember.tensor({0.0, 1.0, -2.0, 10.0})))   -- [1, 1.2661, 2.2796, 2815.7]")

entry("ember.mvlgamma", {"Tensor:mvlgamma", "Tensor:mvlgamma_", "ember.special.multigammaln"},
  "ember.mvlgamma(x, p)\nTensor:mvlgamma(p)\nTensor:mvlgamma_(p)\nember.special.multigammaln(x, p)",
  "The multivariate log-gamma function of dimension p >= 1, elementwise: the sum over\n"
  .. "j = 0..p-1 of lgamma(x - j/2), plus p (p - 1) / 4 log(pi) (inf where an lgamma term\n"
  .. "is, as in PyTorch 2.x, which no longer checks x > (p - 1) / 2). Integer inputs give\n"
  .. "the default float dtype. Differentiable (through lgamma). p may be given as {p = 2}.",
  "mvlgamma", "print(ember.mvlgamma(ember.tensor({2.5, 3.0}), 3))   -- [1.8810, 2.6949]")

return entries
