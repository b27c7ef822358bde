-- Docs of the activations, the further losses, the distances and the structured
-- initialisers: ember.nn.functional's functions, their modules (nn/activation.lua,
-- nn/loss.lua) and ember.nn.init's eye_, dirac_, orthogonal_, sparse_, trunc_normal_.
-- Format: ember/help.lua. A class entry also documents the class's own init (the
-- constructor), forward (what calling an instance does) and extra_repr.
local entries = {}
local function add(e) entries[#entries + 1] = e end

local class_also = require("ember.help")._class_also

-- an activation: F.<fname> and nn.<cls> share the text; args is the argument list after x
local function activation(fname, cls, args, csig, doc, fexample, cexample)
  add {
    name = "ember.nn.functional." .. fname,
    sig = "F." .. fname .. "(x" .. args .. ") -> tensor",
    doc = doc .. "\nArguments after x are positional or one options table"
       .. (cls and "; the module is nn." .. cls .. "." or "."),
    example = "local F = ember.nn.functional\n" .. fexample,
  }
  if cls then
    add {
      name = "ember.nn." .. cls,
      also = class_also("ember.nn." .. cls),
      sig = "nn." .. cls .. "(" .. csig .. ") -> module",
      doc = doc .. "\nThe module form of F." .. fname .. "; constructor arguments positional or as one\n"
         .. "options table. tostring shows them as PyTorch's repr does.",
      example = "local nn = ember.nn\n" .. cexample,
    }
  end
end

local X = "local x = ember.tensor({-3.0, -0.5, 0.0, 0.5, 3.0})\n"

activation("relu", nil, " [, inplace = false]",
  nil, "max(x, 0) elementwise (Tensor:relu); inplace = true overwrites x and returns it.",
  X .. "print(F.relu(x))")
activation("relu6", "ReLU6", " [, inplace = false]", "[inplace = false]",
  "min(max(x, 0), 6) elementwise: hardtanh(x, 0, 6).",
  "print(F.relu6(ember.tensor({-1.0, 3.0, 9.0})))   -- [0, 3, 6]",
  "print(nn.ReLU6()(ember.tensor({-1.0, 3.0, 9.0})))")
activation("hardtanh", "Hardtanh", " [, min_val = -1 [, max_val = 1 [, inplace = false]]]",
  "[min_val = -1 [, max_val = 1 [, inplace = false]]]",
  [[x clamped to [min_val, max_val]; the gradient is 1 strictly inside, 0 outside and on
the bounds (as PyTorch). min_val > max_val is an error.]],
  X .. "print(F.hardtanh(x, -2, 2))", "print(nn.Hardtanh(-2, 2))")
activation("leaky_relu", "LeakyReLU", " [, negative_slope = 0.01 [, inplace = false]]",
  "[negative_slope = 0.01 [, inplace = false]]",
  "x for x > 0, negative_slope * x otherwise.",
  X .. "print(F.leaky_relu(x, 0.2))",
  "local m = nn.LeakyReLU(0.2)\nprint(m, m(ember.tensor({-1.0, 1.0})))")
activation("elu", "ELU", " [, alpha = 1 [, inplace = false]]", "[alpha = 1 [, inplace = false]]",
  "x for x > 0, alpha * (exp(x) - 1) otherwise (no overflow for large x).",
  X .. "print(F.elu(x, {alpha = 0.5}))", "print(nn.ELU()(ember.tensor({-1.0, 1.0})))")
activation("selu", "SELU", " [, inplace = false]", "[inplace = false]",
  "scale * elu(x, alpha) with alpha = 1.6732632423543772, scale = 1.0507009873554805 (self-normalising).",
  X .. "print(F.selu(x))", "print(nn.SELU()(ember.tensor({-1.0, 1.0})))")
activation("celu", "CELU", " [, alpha = 1 [, inplace = false]]", "[alpha = 1 [, inplace = false]]",
  "max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha = 0 is an error.",
  X .. "print(F.celu(x, 2))", "print(nn.CELU(2)(ember.tensor({-1.0, 1.0})))")
activation("gelu", nil, " [, approximate = \"none\"]", nil,
  "x * Phi(x), Phi the standard normal CDF (Tensor:gelu); approximate = \"tanh\" for the tanh formula.",
  X .. "print(F.gelu(x), F.gelu(x, {approximate = \"tanh\"}))")
activation("silu", nil, " [, inplace = false]", nil, "x * sigmoid(x) (Tensor:silu).",
  X .. "print(F.silu(x))")
activation("mish", "Mish", " [, inplace = false]", "[inplace = false]",
  "x * tanh(softplus(x)), with a softplus that cannot overflow.",
  X .. "print(F.mish(x))", "print(nn.Mish()(ember.tensor({-1.0, 1.0})))")
activation("hardswish", "Hardswish", " [, inplace = false]", "[inplace = false]",
  "x * relu6(x + 3) / 6: 0 below -3, x above 3.",
  X .. "print(F.hardswish(x))", "print(nn.Hardswish()(ember.tensor({-1.0, 1.0})))")
activation("hardsigmoid", "Hardsigmoid", " [, inplace = false]", "[inplace = false]",
  "relu6(x + 3) / 6: 0 below -3, 1 above 3, x / 6 + 1/2 between.",
  X .. "print(F.hardsigmoid(x))", "print(nn.Hardsigmoid()(ember.tensor({-1.0, 1.0})))")
activation("softplus", "Softplus", " [, beta = 1 [, threshold = 20]]", "[beta = 1 [, threshold = 20]]",
  [[log(1 + exp(beta x)) / beta, computed without overflow; x itself where beta x > threshold
(as PyTorch). beta = 0 is an error.]],
  X .. "print(F.softplus(x, {beta = 2}))", "print(nn.Softplus(2, 10))")
activation("softsign", "Softsign", "", "", "x / (1 + |x|).",
  X .. "print(F.softsign(x))", "print(nn.Softsign()(ember.tensor({-1.0, 1.0})))   -- [-0.5, 0.5]")
activation("tanhshrink", "Tanhshrink", "", "", "x - tanh(x).",
  X .. "print(F.tanhshrink(x))", "print(nn.Tanhshrink()(ember.tensor({-1.0, 1.0})))")
activation("threshold", "Threshold", ", threshold, value [, inplace = false]", "threshold, value [, inplace = false]",
  "x where x > threshold, value elsewhere (threshold and value are required numbers).",
  X .. "print(F.threshold(x, 0.1, 20))", "print(nn.Threshold(0.1, 20))")
activation("glu", "GLU", " [, dim = -1]", "[dim = -1]",
  [[The gated linear unit: a * sigmoid(b), a the first and b the second half of x along dim
(1-based, negative from the end). An odd size along dim is an error.]],
  "print(F.glu(ember.tensor({{1.0, 2.0, 0.0, 0.0}})))   -- [[0.5, 1]]",
  "print(nn.GLU(2)(ember.randn(3, 4)).shape)   -- {3, 2}")
activation("logsigmoid", "LogSigmoid", "", "",
  "log(sigmoid(x)) = -softplus(-x), with no overflow for large |x| (finite gradients too).",
  "print(F.logsigmoid(ember.tensor({-1000.0, 0.0, 1000.0})))   -- [-1000, -0.6931, 0]",
  "print(nn.LogSigmoid()(ember.tensor({0.0})))")
activation("softmin", "Softmin", ", dim [, dtype]", "dim",
  "softmax(-x) along dim (1-based, negative from the end; required). dtype converts x first.",
  "print(F.softmin(ember.tensor({{1.0, 2.0}}), 2))", "print(nn.Softmin(-1)(ember.tensor({1.0, 2.0})))")
activation("hardshrink", "Hardshrink", " [, lambd = 0.5]", "[lambd = 0.5]",
  "x where |x| > lambd, 0 elsewhere.",
  X .. "print(F.hardshrink(x, 1))", "print(nn.Hardshrink())")
activation("softshrink", "Softshrink", " [, lambd = 0.5]", "[lambd = 0.5]",
  "x - lambd above lambd, x + lambd below -lambd, 0 between; lambd < 0 is an error.",
  X .. "print(F.softshrink(x, 1))", "print(nn.Softshrink(1))")

add {
  name = "ember.nn.functional.softmax",
  sig = "F.softmax(x, dim [, dtype]) -> tensor",
  doc = [[exp(x) / sum(exp(x)) along dim (1-based, negative from the end; required), computed
stably (Tensor:softmax). dtype (a name, or {dtype = ...}) converts x first.]],
  example = "local F = ember.nn.functional\nprint(F.softmax(ember.tensor({{1.0, 1.0}}), 2))   -- [[0.5, 0.5]]",
}
add {
  name = "ember.nn.functional.log_softmax",
  sig = "F.log_softmax(x, dim [, dtype]) -> tensor",
  doc = "log(softmax(x)) along dim (1-based, negative from the end; required), computed stably.",
  example = "local F = ember.nn.functional\nprint(F.log_softmax(ember.tensor({{1.0, 1.0}}), 2):exp())",
}
add {
  name = "ember.nn.functional.prelu",
  sig = "F.prelu(x, weight) -> tensor",
  doc = [[x for x > 0, weight * x otherwise. weight has 1 entry (shared) or one per channel,
dim 2 of x; both get gradients.]],
  example = [=[local F = ember.nn.functional
print(F.prelu(ember.tensor({{-1.0, -1.0}}), ember.tensor({0.1, 0.2})))   -- [[-0.1, -0.2]]]=],
}
add {
  name = "ember.nn.PReLU",
  also = class_also("ember.nn.PReLU", {"ember.nn.PReLU:reset_parameters"}),
  sig = "nn.PReLU([num_parameters = 1 [, init = 0.25]] [, {dtype =, device =}]) -> module",
  doc = [[x for x > 0, weight * x otherwise, with a learnable weight [num_parameters] filled with
init (reset_parameters fills it again). More than one parameter means one per channel, dim 2
of the input. num_parameters and init may also go in the options table.]],
  example = [[local nn = ember.nn
local m = nn.PReLU(3)
print(m, m(ember.randn(2, 3, 4)).shape)]],
}

-- ---- distances -------------------------------------------------------------------------

add {
  name = "ember.nn.functional.normalize",
  sig = "F.normalize(x [, p = 2 [, dim = 2 [, eps = 1e-12]]]) -> tensor",
  doc = [[x / max(||x||_p, eps), the norm taken along dim (1-based: the default 2 is PyTorch's
dim=1). Arguments positional or as {p =, dim =, eps =}.]],
  example = [=[local F = ember.nn.functional
print(F.normalize(ember.tensor({{3.0, 4.0}})))   -- [[0.6, 0.8]]]=],
}
add {
  name = "ember.nn.functional.cosine_similarity",
  sig = "F.cosine_similarity(x1, x2 [, dim = 2 [, eps = 1e-8]]) -> tensor",
  doc = [[x1 . x2 / (||x1|| ||x2||) along dim (1-based; the default 2 is PyTorch's dim=1), x1 and
x2 broadcast together; dim is removed. As PyTorch 1.13, each squared norm is clamped at
eps^2 (the gradient passes as if not).]],
  example = [=[local F = ember.nn.functional
print(F.cosine_similarity(ember.tensor({{1.0, 0.0}}), ember.tensor({{1.0, 1.0}})))   -- [0.7071]]=],
}
add {
  name = "ember.nn.functional.pairwise_distance",
  sig = "F.pairwise_distance(x1, x2 [, p = 2 [, eps = 1e-6 [, keepdim = false]]]) -> tensor",
  doc = "||x1 - x2 + eps||_p over the last dim (x1 and x2 broadcast together).",
  example = [=[local F = ember.nn.functional
print(F.pairwise_distance(ember.tensor({{0.0, 0.0}}), ember.tensor({{3.0, 4.0}})))   -- [5]]=],
}

-- ---- the in-place forms ----------------------------------------------------------------------

add {
  name = "ember.nn.functional.elu_",
  also = {"ember.nn.functional.relu_", "ember.nn.functional.leaky_relu_", "ember.nn.functional.hardtanh_",
          "ember.nn.functional.selu_", "ember.nn.functional.celu_", "ember.nn.functional.threshold_",
          "ember.nn.functional.rrelu_"},
  sig = "F.relu_(x), F.elu_(x [, alpha = 1]), F.leaky_relu_(x [, negative_slope = 0.01]),\n"
     .. "F.hardtanh_(x [, min_val = -1 [, max_val = 1]]), F.selu_(x), F.celu_(x [, alpha = 1]),\n"
     .. "F.threshold_(x, threshold, value), F.rrelu_(x [, lower = 1/8 [, upper = 1/3 [, training = false]]])\n"
     .. "  -> x",
  doc = [[The in-place forms: x overwritten with F.relu(x), F.elu(x, alpha), ... and returned
(F.relu_(x) is x:relu_()). As every in-place op they are refused on a tensor that autograd
records (one that requires grad while grad mode is on); under ember.no_grad they may
change a parameter. Errors name the in-place form. Like torch.nn.functional.elu_ and the
others; PyTorch also lets autograd record in place on tensors that are not leaves.]],
  example = [=[local F = ember.nn.functional
local x = ember.tensor({-1.0, 0.5, 3.0})
print(rawequal(F.hardtanh_(x), x), x)   -- true, [-1, 0.5, 1]
print(F.leaky_relu_(ember.tensor({-2.0, 2.0}), 0.1))   -- [-0.2, 2]]=],
}

-- ---- losses --------------------------------------------------------------------------------

local function loss(fname, cls, sig, csig, doc, fexample, cexample)
  add {
    name = "ember.nn.functional." .. fname,
    sig = "F." .. fname .. sig .. " -> tensor",
    doc = doc .. "\nreduction: \"mean\" (default), \"sum\" or \"none\" (elementwise); unknown options are errors.",
    example = "local F = ember.nn.functional\n" .. fexample,
  }
  add {
    name = "ember.nn." .. cls,
    also = class_also("ember.nn." .. cls),
    sig = "nn." .. cls .. "(" .. csig .. ") -> module",
    doc = "The module form of F." .. fname .. ": the options are given to the constructor, the tensors "
       .. "to the call. Tensor options (weights) are buffers, so they follow module:to().",
    example = "local nn = ember.nn\n" .. cexample,
  }
end

activation("sigmoid", nil, "", nil, "1 / (1 + exp(-x)) elementwise (Tensor:sigmoid).", X .. "print(F.sigmoid(x))")
activation("tanh", nil, "", nil, "tanh(x) elementwise (Tensor:tanh).", X .. "print(F.tanh(x))")
activation("rrelu", "RReLU", " [, lower = 1/8 [, upper = 1/3 [, training = false [, inplace = false]]]]",
  "[lower = 1/8 [, upper = 1/3 [, inplace = false]]]",
  [[x for x > 0, a * x otherwise. With training = true (the module: in training mode) each a
is drawn uniformly from [lower, upper] by ember's generator (ember.manual_seed repeats
it) and the gradient is that a; otherwise a = (lower + upper) / 2 (leaky_relu).]],
  X .. "print(F.rrelu(x))   -- slope 0.2292 below 0",
  "local m = nn.RReLU(0.1, 0.3)\nm:eval()\nprint(m(ember.tensor({-1.0, 1.0})))   -- [-0.2, 1]")
activation("pixel_shuffle", "PixelShuffle", ", upscale_factor", "upscale_factor",
  [[Rearranges x [*, C * r^2, H, W] to [*, C, H * r, W * r] (r = upscale_factor): each
channel group of r^2 becomes an r x r block of pixels. At least 3-D.]],
  "print(F.pixel_shuffle(ember.arange(8):reshape(1, 4, 1, 2), 2))",
  "print(nn.PixelShuffle(2)(ember.zeros(1, 8, 3, 3)).shape)   -- {1, 2, 6, 6}")
activation("pixel_unshuffle", "PixelUnshuffle", ", downscale_factor", "downscale_factor",
  [[pixel_shuffle's inverse: x [*, C, H * r, W * r] to [*, C * r^2, H, W]
(r = downscale_factor).]],
  "print(F.pixel_unshuffle(ember.arange(16):reshape(1, 1, 4, 4), 2).shape)   -- {1, 4, 2, 2}",
  "print(nn.PixelUnshuffle(3)(ember.zeros(1, 2, 6, 6)).shape)   -- {1, 18, 2, 2}")
activation("local_response_norm", "LocalResponseNorm", ", size [, alpha = 1e-4 [, beta = 0.75 [, k = 1]]]",
  "size [, alpha = 1e-4 [, beta = 0.75 [, k = 1]]]",
  [[x / (k + alpha * mean(x^2 over size neighbouring channels))^beta for x [N, C, *]:
the window over dim 2 is zero-padded size // 2 before and (size - 1) // 2 after, and
its mean always divides by size (as PyTorch).]],
  "print(F.local_response_norm(ember.ones(1, 3, 2), 2))",
  "print(nn.LocalResponseNorm(3)(ember.ones(1, 4, 2, 2)).shape)")

local XY = "local x, y = ember.tensor({1.0, 2.0, 3.0}), ember.tensor({1.5, 2.0, 5.0})\n"
loss("l1_loss", "L1Loss", "(input, target [, {reduction = \"mean\"}])", "[{reduction = \"mean\"}]",
  "|input - target|, reduced. input and target must have the same shape (an error names both).",
  XY .. "print(F.l1_loss(x, y))   -- (0.5 + 0 + 2) / 3", XY .. "print(nn.L1Loss({reduction = \"sum\"})(x, y))   -- 2.5")
loss("smooth_l1_loss", "SmoothL1Loss", "(input, target [, {beta = 1, reduction = \"mean\"}])",
  "[{beta = 1, reduction = \"mean\"}]",
  [[0.5 d^2 / beta where |d| < beta, |d| - beta / 2 elsewhere (d = input - target); beta = 0
is l1_loss, beta < 0 an error.]],
  XY .. "print(F.smooth_l1_loss(x, y, {reduction = \"none\"}))", XY .. "print(nn.SmoothL1Loss({beta = 0.5})(x, y))")
loss("huber_loss", "HuberLoss", "(input, target [, {delta = 1, reduction = \"mean\"}])",
  "[{delta = 1, reduction = \"mean\"}]",
  "0.5 d^2 where |d| < delta, delta (|d| - delta / 2) elsewhere; delta must be > 0.",
  XY .. "print(F.huber_loss(x, y, {delta = 2}))", XY .. "print(nn.HuberLoss()(x, y))")
loss("binary_cross_entropy", "BCELoss", "(input, target [, {weight =, reduction = \"mean\"}])",
  "[{weight =, reduction = \"mean\"}]",
  [[-(t log(p) + (1 - t) log(1 - p)) for probabilities p = input in [0, 1] (values outside are
an error) and targets t of the same shape; each log is clamped at -100, as PyTorch, so p = 0
or 1 gives a finite loss (and there a zero gradient, where PyTorch's is about 1e12).
weight (broadcast to the input) multiplies each element's loss. For logits use
binary_cross_entropy_with_logits.]],
  "print(F.binary_cross_entropy(ember.tensor({0.25, 0.0}), ember.tensor({1.0, 1.0}), {reduction = \"none\"}))   -- [1.3863, 100]",
  "local p = ember.randn(4):sigmoid()\nprint(nn.BCELoss()(p, ember.tensor({1.0, 0.0, 1.0, 1.0})))")
loss("kl_div", "KLDivLoss", "(input, target [, {reduction = \"mean\", log_target = false}])",
  "[{reduction = \"mean\", log_target = false}]",
  [[The Kullback-Leibler divergence with input holding log-probabilities: target * (log(target)
- input), 0 where target = 0; log_target = true takes target as log-probabilities too.
reduction may also be "batchmean" (the sum divided by the size of dim 1: the true KL
divergence); "mean" divides by the element count, as PyTorch.]],
  "local logp = ember.tensor({{0.5, 0.5}}):log()\nprint(F.kl_div(logp, ember.tensor({{1.0, 0.0}}), {reduction = \"batchmean\"}))   -- log 2",
  "local logp = ember.randn(3, 4):log_softmax(2)\nprint(nn.KLDivLoss({reduction = \"batchmean\"})(logp, ember.randn(3, 4):softmax(2)))")
loss("poisson_nll_loss", "PoissonNLLLoss", "(input, target [, {log_input = true, full = false, eps = 1e-8,\n"
  .. "                                     reduction = \"mean\"}])",
  "[{log_input = true, full = false, eps = 1e-8, reduction = \"mean\"}]",
  [[The Poisson negative log-likelihood: exp(input) - target * input (log_input), else
input - target * log(input + eps). full adds Stirling's approximation of log(target!),
target log(target) - target + log(2 pi target) / 2, where target > 1.]],
  "print(F.poisson_nll_loss(ember.tensor({0.0}), ember.tensor({2.0})))   -- 1",
  "print(nn.PoissonNLLLoss({full = true})(ember.randn(5), ember.tensor({0.0, 1, 2, 3, 4})))")
loss("gaussian_nll_loss", "GaussianNLLLoss", "(input, target, var [, {full = false, eps = 1e-6, reduction = \"mean\"}])",
  "[{full = false, eps = 1e-6, reduction = \"mean\"}]",
  [[0.5 (log(var) + (input - target)^2 / var), plus 0.5 log(2 pi) with full. var has input's
shape, or input's shape without the last dim, or that with a last dim of 1 (a variance
shared along the last dim); other shapes and negative entries are errors. var is clamped at
eps, the gradient passing as if not (as PyTorch). The module is called as
loss_fn(input, target, var).]],
  "print(F.gaussian_nll_loss(ember.tensor({1.0}), ember.tensor({3.0}), ember.tensor({2.0})))",
  "print(nn.GaussianNLLLoss()(ember.randn(4, 2), ember.randn(4, 2), ember.ones(4)))")
loss("cosine_embedding_loss", "CosineEmbeddingLoss", "(x1, x2, y [, {margin = 0, reduction = \"mean\"}])",
  "[{margin = 0, reduction = \"mean\"}]",
  [[1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1. x1, x2: [N, D]
with y [N], or [D] with a 0-d y. The module is called as loss_fn(x1, x2, y).]],
  "print(F.cosine_embedding_loss(ember.tensor({{1.0, 0.0}}), ember.tensor({{0.0, 1.0}}), ember.tensor({1})))   -- 1",
  "print(nn.CosineEmbeddingLoss()(ember.randn(3, 4), ember.randn(3, 4), ember.tensor({1, -1, 1})))")
loss("margin_ranking_loss", "MarginRankingLoss", "(x1, x2, y [, {margin = 0, reduction = \"mean\"}])",
  "[{margin = 0, reduction = \"mean\"}]",
  [[max(0, -y (x1 - x2) + margin): y = 1 wants x1 ranked above x2, y = -1 below. x1, x2 and y
have one shape. The module is called as loss_fn(x1, x2, y).]],
  "print(F.margin_ranking_loss(ember.tensor({1.0, 2.0}), ember.tensor({2.0, 1.0}), ember.tensor({1.0, 1.0})))   -- 0.5",
  "print(nn.MarginRankingLoss({margin = 0.1})(ember.randn(4), ember.randn(4), ember.ones(4)))")
loss("hinge_embedding_loss", "HingeEmbeddingLoss", "(x, y [, {margin = 1, reduction = \"mean\"}])",
  "[{margin = 1, reduction = \"mean\"}]",
  "x where y = 1, max(0, margin - x) where y = -1 (x typically a distance); y has x's shape.",
  "print(F.hinge_embedding_loss(ember.tensor({0.3, 0.3}), ember.tensor({1.0, -1.0}), {reduction = \"none\"}))   -- [0.3, 0.7]",
  "print(nn.HingeEmbeddingLoss()(ember.rand(4), ember.tensor({1.0, -1.0, 1.0, -1.0})))")
loss("triplet_margin_loss", "TripletMarginLoss",
  "(anchor, positive, negative [, {margin = 1, p = 2, eps = 1e-6,\n"
  .. "                                                   swap = false, reduction = \"mean\"}])",
  "[{margin = 1, p = 2, eps = 1e-6, swap = false, reduction = \"mean\"}]",
  [[max(0, d(anchor, positive) - d(anchor, negative) + margin) with d = F.pairwise_distance(., ., p,
eps); swap uses min(d(anchor, negative), d(positive, negative)) as the negative distance.
The three inputs share one shape, [N, D] or [D]. The module is called as
loss_fn(anchor, positive, negative).]],
  "print(F.triplet_margin_loss(ember.tensor({{0.0, 0.0}}), ember.tensor({{3.0, 4.0}}), ember.tensor({{6.0, 8.0}}), {eps = 0}))   -- 0",
  "print(nn.TripletMarginLoss({swap = true})(ember.randn(3, 4), ember.randn(3, 4), ember.randn(3, 4)))")
loss("multilabel_soft_margin_loss", "MultiLabelSoftMarginLoss", "(input, target [, {weight =, reduction = \"mean\"}])",
  "[{weight =, reduction = \"mean\"}]",
  [[For logits input [N, C] and 0/1 targets [N, C]: the mean over the C classes of
-(t logsigmoid(x) + (1 - t) logsigmoid(-x)), each class weighted by weight [C]; "none"
gives the [N] per-sample losses.]],
  "print(F.multilabel_soft_margin_loss(ember.zeros(1, 2), ember.tensor({{1.0, 0.0}})))   -- log 2",
  "print(nn.MultiLabelSoftMarginLoss()(ember.randn(2, 3), ember.tensor({{1.0, 0, 1}, {0, 0, 1}})))")

-- ---- initialisers ------------------------------------------------------------------------

add {
  name = "ember.nn.init.eye_",
  also = {"ember.nn.init.eye"},   -- PyTorch's deprecated name, the same function
  sig = "nn.init.eye_(t) -> t",
  doc = "Sets the 2-D tensor t (any [n, m]) to the identity: ones on the diagonal, zeros elsewhere.",
  example = "local nn = ember.nn\nprint(nn.init.eye_(ember.empty(2, 3)))",
}
add {
  name = "ember.nn.init.dirac_",
  also = {"ember.nn.init.dirac"},   -- PyTorch's deprecated name, the same function
  sig = "nn.init.dirac_(t [, groups = 1]) -> t",
  doc = [[Sets a 3-, 4- or 5-D convolution weight [out, in, k...] to the Dirac delta: within each
of groups, output channel c takes input channel c at the kernel's centre (size // 2 + 1,
1-based), so the convolution keeps as many input channels as fit. groups must divide out.]],
  example = [[local nn = ember.nn
local w = nn.init.dirac_(ember.empty(2, 2, 3, 3))
local x = ember.randn(1, 2, 4, 4)
print((ember.conv2d(x, w, nil, 1, 1) - x):abs():max())   -- 0]],
}
add {
  name = "ember.nn.init.orthogonal_",
  also = {"ember.nn.init.orthogonal"},   -- PyTorch's deprecated name, the same function
  sig = "nn.init.orthogonal_(t [, gain = 1] [, generator]) -> t",
  doc = [[Sets t (at least 2-D, seen as [rows, numel / rows]) to a random (semi-)orthogonal matrix
times gain, as PyTorch: the Q factor of a QR decomposition of a standard normal matrix
with R's diagonal made positive (computed on the host). Rows are orthonormal when
rows <= cols, columns otherwise. Draws from the default generator or the ember.Generator
given as generator.]],
  example = [[local nn = ember.nn
local w = nn.init.orthogonal_(ember.empty(3, 5, {dtype = "float64"}))
print(w:matmul(w:t()))   -- the identity]],
}
add {
  name = "ember.nn.init.sparse_",
  also = {"ember.nn.init.sparse"},   -- PyTorch's deprecated name, the same function
  sig = "nn.init.sparse_(t, sparsity [, std = 0.01] [, generator]) -> t",
  doc = [[Fills the 2-D t from N(0, std^2), then sets ceil(sparsity * rows) randomly chosen entries
of every column to 0. sparsity in [0, 1].]],
  example = [[local nn = ember.nn
print(nn.init.sparse_(ember.empty(4, 3), 0.5))   -- two zeros per column]],
}
add {
  name = "ember.nn.init.trunc_normal_",
  sig = "nn.init.trunc_normal_(t [, mean = 0 [, std = 1 [, a = -2 [, b = 2]]]] [, generator])\n  -> t",
  doc = [[Fills t from N(mean, std^2) truncated to [a, b], by PyTorch's inverse-CDF method: u
uniform between the normal CDF at a and at b, then mean + std sqrt(2) erfinv(2u - 1),
clamped to [a, b] (erfinv computed on the host). a and b are values, not multiples of std.
Options-table form: {mean =, std =, a =, b =, generator =}.]],
  example = [[local nn = ember.nn
local w = nn.init.trunc_normal_(ember.empty(1000), 0, 0.02, -0.04, 0.04)
print(w:min():item() >= -0.04, w:max():item() <= 0.04)   -- true true]],
}

-- doc lines stay within 88 columns: longer ones (the shared texts joined above) are
-- broken at spaces
local function wrap(text)
  local out = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do
    while #line > 88 do
      local cut = line:sub(1, 89):match(".*() ")
      if not cut or cut < 20 then break end
      out[#out + 1] = line:sub(1, cut - 1)
      line = line:sub(cut + 1)
    end
    out[#out + 1] = line
  end
  return table.concat(out, "\n")
end
loss("soft_margin_loss", "SoftMarginLoss", "(input, target [, {reduction = \"mean\"}])", "[{reduction = \"mean\"}]",
  "log(1 + exp(-target * input)) with target in {1, -1}, computed without overflow; shapes must match.",
  "print(F.soft_margin_loss(ember.tensor({1.0, -2.0}), ember.tensor({1.0, 1.0})))",
  "print(nn.SoftMarginLoss({reduction = \"sum\"})(ember.tensor({0.5}), ember.tensor({-1.0})))")
loss("multi_margin_loss", "MultiMarginLoss",
  "(input, target [, p = 1 [, margin = 1 [, weight]]] [, {reduction = \"mean\"}])",
  "[p = 1 [, margin = 1 [, weight]]] [, {reduction = \"mean\"}]",
  [[The multi-class hinge loss: input [N, C] (or [C]), target [N] (or 0-d) of 1-based class
indices; per sample the sum over i ~= y of weight[y] * max(0, margin - x[y] + x[i])^p / C.
p is 1 or 2; weight [C] weighs the classes.]],
  "print(F.multi_margin_loss(ember.tensor({{0.1, 0.2, 0.4, 0.8}}), ember.tensor({4})))   -- 0.325",
  "print(nn.MultiMarginLoss({p = 2})(ember.tensor({{0.1, 0.9}}), ember.tensor({1})))")

for _, e in ipairs(entries) do e.doc = wrap(e.doc) end

return entries
