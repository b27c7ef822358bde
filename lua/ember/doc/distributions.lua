-- Docs of ember.distributions (lua/ember/distributions.lua and ember/distributions/):
-- the distribution classes, the methods they share (defined once on Distribution),
-- kl_divergence, register_kl and the constraints. Format: ember/help.lua.
local entries = {}

local function add(e) entries[#entries + 1] = e end

local COMMON = [=[
Parameters are tensors or numbers, broadcast together (numbers take the first tensor's
dtype, or the default dtype when all are numbers); the keyword arguments (validate_args)
go in a trailing options table.]=]

add {
  name = "ember.distributions",
  sig = "local D = ember.distributions",
  doc = [=[
Probability distributions as torch.distributions (PyTorch 2.x):
  D.Normal, D.LogNormal, D.Uniform, D.Exponential, D.Laplace     continuous
  D.Bernoulli, D.Categorical, D.OneHotCategorical, D.Poisson    discrete
  D.MultivariateNormal, D.Independent                           multivariate
  D.Distribution            their base class, holding the shared methods
  D.kl_divergence, D.register_kl, D.constraints
Each instance has batch_shape and event_shape (ember.Size), sample / rsample
(sample_shape .. batch_shape .. event_shape), log_prob, entropy and, where PyTorch has
them, cdf, icdf, enumerate_support; the properties mean, mode, variance, stddev, support,
arg_constraints. rsample reparameterises (loc + scale * eps, ...), so gradients reach
the parameters. Random numbers come from ember's generator (ember.manual_seed).
Arguments and values are validated as with PyTorch's default validate_args = true.
Differences: Categorical's classes are 1-based (samples, log_prob's values, mode,
enumerate_support), as every position in ember; Gamma, Beta and Dirichlet are missing.
Like torch.distributions.]=],
  example = [=[
local D = ember.distributions
ember.manual_seed(0)
local d = D.Normal(ember.zeros(3), 1)
local x = d:rsample({5})
print(x.shape, d:log_prob(x).shape)                  -- {5, 3} {5, 3}
print(D.kl_divergence(d, D.Normal(1, 2)))]=],
}

add {
  name = "ember.distributions.Distribution",
  sig = "ember.distributions.Distribution",
  doc = [=[
The base class of the distributions. It holds the methods they share (sample, rsample,
log_prob, cdf, icdf, entropy, perplexity, expand, enumerate_support), each reading and
checking its arguments before the class's own formula, and the properties every
instance has:
  d.batch_shape, d.event_shape   ember.Size
  d.mean, d.mode, d.variance, d.stddev (sqrt of variance unless the class has its own)
  d.support, d.arg_constraints   constraints (see ember.distributions.constraints)
  d.has_rsample, d.has_enumerate_support   booleans
Properties are computed when read (a fresh tensor each time). It is not constructed
directly; tostring(d) is PyTorch's repr ("Normal(loc: 0.0, scale: 1.0)").
Like torch.distributions.Distribution.]=],
  example = [=[
local D = ember.distributions
local d = D.Normal(0, 1)
print(d.sample == D.Distribution.sample, d.batch_shape, tostring(d))]=],
}

add {
  name = "ember.distributions.Distribution:sample",
  sig = "d:sample([sample_shape]) -> tensor",
  doc = [=[
Draws samples of shape sample_shape .. batch_shape .. event_shape, without recording
for autograd. sample_shape is a list or ember.Size (d:sample({2, 3})), integers given
one by one (d:sample(2, 3)), or nothing (one sample per batch element). The dtype is
the parameters' (Categorical: int64 classes 1..K). The draws use ember's generator, so
ember.manual_seed makes them repeat. Bernoulli compares uniforms with probs,
Categorical uses ember.multinomial, Poisson draws exactly (products of uniforms below
rate 10, Hörmann's transformed rejection above, as PyTorch's sampler).
Like torch.distributions.Distribution.sample.]=],
  example = [=[
local D = ember.distributions
ember.manual_seed(1)
print(D.Categorical(ember.tensor({0.1, 0.9})):sample({6}))   -- classes 1 and 2
print(D.Bernoulli(ember.full({3}, 0.5)):sample(2).shape)      -- {2, 3}]=],
}

add {
  name = "ember.distributions.Distribution:rsample",
  sig = "d:rsample([sample_shape]) -> tensor",
  doc = [=[
Draws samples as sample does, by the reparameterisation trick: a function of the
parameters and of parameter-free noise (Normal: loc + scale * eps; MultivariateNormal:
loc + L eps; Exponential: -log1p(-u) / rate; ...), so gradients flow from the samples
to the parameters. Only classes with has_rsample (Normal, LogNormal, Uniform,
Exponential, Laplace, MultivariateNormal, and Independent over one of those) have it;
the others raise.
Like torch.distributions.Distribution.rsample.]=],
  example = [=[
local D = ember.distributions
local loc = ember.zeros(2, {requires_grad = true})
D.Normal(loc, 1):rsample({100}):mean(1):sum():backward()
print(loc.grad)                                  -- [1, 1]]=],
}

add {
  name = "ember.distributions.Distribution:log_prob",
  sig = "d:log_prob(value) -> tensor",
  doc = [=[
The log of the density (or of the probability mass) at value, a tensor or a number
(taking the distribution's dtype), broadcast against batch_shape: the result has
value's shape without event_shape. With validate_args the rightmost dims of value must
be event_shape, the rest broadcast with batch_shape, and every value must lie in the
support; otherwise the error names the class and the support. Categorical takes classes
1..K; OneHotCategorical one-hot vectors. A number is accepted where PyTorch wants a
tensor. Like torch.distributions.Distribution.log_prob.]=],
  example = [=[
local D = ember.distributions
print(D.Normal(0, 1):log_prob(ember.tensor({0.0, 1.0})))      -- -0.9189 -1.4189
print(D.Categorical(ember.tensor({0.25, 0.75})):log_prob(2))  -- log 0.75]=],
}

add {
  name = "ember.distributions.Distribution:cdf",
  sig = "d:cdf(value) -> tensor",
  doc = [=[
The cumulative distribution function at value (validated as in log_prob). Normal,
LogNormal, Uniform, Exponential and Laplace have it; the others raise.
Like torch.distributions.Distribution.cdf.]=],
  example = [=[
local D = ember.distributions
print(D.Normal(0, 1):cdf(ember.tensor({-1.96, 0.0, 1.96})))   -- 0.025 0.5 0.975]=],
}

add {
  name = "ember.distributions.Distribution:icdf",
  sig = "d:icdf(value) -> tensor",
  doc = [=[
The inverse of cdf: the value below which lies the probability value (not checked
against [0, 1], as in PyTorch: outside it the result is NaN or infinite). Normal,
LogNormal, Uniform, Exponential and Laplace have it.
Like torch.distributions.Distribution.icdf.]=],
  example = [=[
local D = ember.distributions
print(D.Exponential(2):icdf(ember.tensor({0.5})))   -- log(2) / 2]=],
}

add {
  name = "ember.distributions.Distribution:entropy",
  sig = "d:entropy() -> tensor",
  doc = [=[
The differential entropy (the entropy for discrete distributions) of each batch
element: a tensor of batch_shape. Poisson has none (as in PyTorch) and raises.
Like torch.distributions.Distribution.entropy.]=],
  example = [=[
local D = ember.distributions
print(D.Normal(0, ember.tensor({1.0, 2.0})):entropy())   -- 1.4189 2.1121]=],
}

add {
  name = "ember.distributions.Distribution:perplexity",
  sig = "d:perplexity() -> tensor",
  doc = [=[
exp(entropy()), of batch_shape.
Like torch.distributions.Distribution.perplexity.]=],
  example = [=[
local D = ember.distributions
print(D.Categorical(ember.ones(4)):perplexity())   -- 4]=],
}

add {
  name = "ember.distributions.Distribution:expand",
  sig = "d:expand(batch_shape) -> distribution",
  doc = [=[
A distribution of the same class whose parameters are d's expanded (views, not
copies) to batch_shape, which d's batch_shape must expand to as a tensor's sizes do
(right-aligned, only 1s grow). The parameters are not checked again; validate_args is
d's. batch_shape is a list, an ember.Size or integers one by one.
Like torch.distributions.Distribution.expand.]=],
  example = [=[
local D = ember.distributions
local d = D.Normal(ember.zeros(3), 1):expand({4, 3})
print(d.batch_shape, d:sample().shape)   -- {4, 3} {4, 3}]=],
}

add {
  name = "ember.distributions.Distribution:enumerate_support",
  sig = "d:enumerate_support([expand = true]) -> tensor",
  doc = [=[
Every value of a discrete distribution's support along dim 1, then batch_shape (size-1
dims with expand = false) and event_shape: Bernoulli 0 and 1, Categorical the classes
1..K (PyTorch: 0..K-1), OneHotCategorical the rows of the identity. expand may be
given by position or as {expand = false}. Other classes raise.
Like torch.distributions.Distribution.enumerate_support.]=],
  example = [=[
local D = ember.distributions
print(D.Categorical(ember.ones(2, 3)):enumerate_support())   -- [[1, 1], [2, 2], [3, 3]]]=],
}

add {
  name = "ember.distributions.Distribution:set_default_validate_args",
  sig = "ember.distributions.Distribution.set_default_validate_args(value)",
  doc = [=[
Sets whether distributions made from now on validate their parameters and the values
given to log_prob and cdf when their validate_args is not given (true at start, as
PyTorch without python -O). Called with a dot, as PyTorch's static method.
Like torch.distributions.Distribution.set_default_validate_args.]=],
  example = [=[
local D = ember.distributions
D.Distribution.set_default_validate_args(false)
print(D.Normal(0, -1))                  -- accepted: not checked
D.Distribution.set_default_validate_args(true)]=],
}

add {
  name = "ember.distributions.Normal",
  sig = "D.Normal(loc, scale [, {validate_args}]) -> distribution",
  doc = COMMON .. [=[

The normal distribution: mean and mode loc, stddev scale (> 0). rsample is
loc + scale * eps; log_prob, cdf (erf), icdf (erfinv), entropy.
Like torch.distributions.Normal.]=],
  example = [=[
local D = ember.distributions
local d = D.Normal(ember.tensor({0.0, 1.0}), 2)
print(d.batch_shape, d.variance, d:icdf(0.5))]=],
}

add {
  name = "ember.distributions.LogNormal",
  sig = "D.LogNormal(loc, scale [, {validate_args}]) -> distribution",
  doc = COMMON .. [=[

exp(X) for X ~ Normal(loc, scale), which d.base_dist holds; support: positive values.
mean exp(loc + scale^2 / 2), mode exp(loc - scale^2), log_prob, cdf (which takes 0, as
PyTorch's), icdf, entropy, rsample exp(base_dist:rsample()). PyTorch builds it as a
TransformedDistribution; ember writes those formulas out (the same values).
Like torch.distributions.LogNormal.]=],
  example = [=[
local D = ember.distributions
local d = D.LogNormal(0, 1)
print(d.mean, d:cdf(1.0), d:log_prob(1.0))   -- 1.6487 0.5 -0.9189]=],
}

add {
  name = "ember.distributions.Uniform",
  sig = "D.Uniform(low, high [, {validate_args}]) -> distribution",
  doc = COMMON .. [=[

The uniform distribution on [low, high) (low < high): rsample low + u * (high - low);
log_prob is -inf outside the support when not validating; cdf is clamped to [0, 1];
mode is NaN. Like torch.distributions.Uniform.]=],
  example = [=[
local D = ember.distributions
local d = D.Uniform(0, ember.tensor({1.0, 4.0}))
print(d.mean, d:entropy(), d:cdf(0.5))]=],
}

add {
  name = "ember.distributions.Exponential",
  sig = "D.Exponential(rate [, {validate_args}]) -> distribution",
  doc = COMMON .. [=[

The exponential distribution of rate (> 0): mean 1 / rate, support [0, inf);
rsample -log1p(-u) / rate, log_prob, cdf, icdf, entropy.
Like torch.distributions.Exponential.]=],
  example = [=[
local D = ember.distributions
local d = D.Exponential(ember.tensor({0.5, 2.0}))
print(d.mean, d:cdf(ember.tensor({1.0, 1.0})))]=],
}

add {
  name = "ember.distributions.Laplace",
  sig = "D.Laplace(loc, scale [, {validate_args}]) -> distribution",
  doc = COMMON .. [=[

The Laplace (double exponential) distribution: mean and mode loc, variance 2 scale^2;
rsample loc - scale * sign(u) * log1p(-|u|) for u uniform on [eps - 1, 1) as PyTorch
draws it; log_prob, cdf, icdf, entropy. Like torch.distributions.Laplace.]=],
  example = [=[
local D = ember.distributions
local d = D.Laplace(0, 1)
print(d.stddev, d:log_prob(0.0), d:icdf(0.75))   -- 1.4142 -0.6931 0.6931]=],
}

add {
  name = "ember.distributions.Bernoulli",
  sig = "D.Bernoulli(probs) | D.Bernoulli({logits = l}) [, {validate_args}] -> distribution",
  doc = [=[
1 with probability probs (in [0, 1]) and 0 otherwise; give probs or logits (log-odds),
not both (probs by position or either in the options table). The other is computed on
first use and kept (d.logits uses probs clamped to [eps, 1 - eps]). Samples are 0.0 and
1.0 in the parameter's dtype. log_prob and entropy are binary cross-entropies with
logits; mean probs, mode 1 above 0.5 (NaN at 0.5), variance probs (1 - probs),
enumerate_support {0, 1}, param_shape. No rsample, as in PyTorch.
Like torch.distributions.Bernoulli.]=],
  example = [=[
local D = ember.distributions
local d = D.Bernoulli({logits = ember.tensor({0.0, 2.0})})
print(d.probs, d:log_prob(ember.tensor({1.0, 0.0})), d:entropy())]=],
}

add {
  name = "ember.distributions.Categorical",
  sig = "D.Categorical(probs) | D.Categorical({logits = l}) [, {validate_args}] -> distribution",
  doc = [=[
One of K classes, with probabilities along the last dim of probs (non-negative, with a
non-zero sum; normalised) or logits (unnormalised log-probabilities; normalised by
logsumexp); the dims before the last are the batch. Classes are 1-based: sample, mode
and enumerate_support give 1..K and log_prob takes 1..K, where PyTorch uses 0..K-1.
Samples are int64 (ember.multinomial). mean and variance are NaN, as PyTorch's;
entropy, param_shape. Like torch.distributions.Categorical.]=],
  example = [=[
local D = ember.distributions
local d = D.Categorical(ember.tensor({1.0, 1.0, 2.0}))
print(d.probs, d.mode, d:log_prob(3))        -- [0.25, 0.25, 0.5] 3 log 0.5]=],
}

add {
  name = "ember.distributions.OneHotCategorical",
  sig = "D.OneHotCategorical(probs) | D.OneHotCategorical({logits = l}) [, {validate_args}]",
  doc = [=[
A Categorical whose samples are one-hot vectors of size K (event_shape {K}), in the
parameter's dtype; log_prob takes one-hot vectors (the position of each one is the
class). mean probs, variance probs (1 - probs), mode the one-hot of the likeliest
class, entropy, enumerate_support (the rows of the identity).
Like torch.distributions.OneHotCategorical.]=],
  example = [=[
local D = ember.distributions
ember.manual_seed(0)
local d = D.OneHotCategorical(ember.tensor({0.2, 0.8}))
print(d:sample({3}), d:log_prob(ember.tensor({0.0, 1.0})))]=],
}

add {
  name = "ember.distributions.Poisson",
  sig = "D.Poisson(rate [, {validate_args}]) -> distribution",
  doc = COMMON .. [=[

Counts k = 0, 1, ... with probability rate^k e^-rate / k! (rate >= 0). Samples are
whole numbers in the rate's dtype, drawn exactly: Knuth's products of uniforms below
rate 10, Hörmann's transformed rejection (PyTorch's constants) from 10 on, run on all
elements together. mean and variance rate, mode floor(rate), log_prob; no entropy,
cdf or rsample, as in PyTorch. Like torch.distributions.Poisson.]=],
  example = [=[
local D = ember.distributions
ember.manual_seed(0)
local d = D.Poisson(ember.tensor({0.5, 30.0}))
print(d:sample({4}), d:log_prob(ember.tensor({0.0, 30.0})))]=],
}

add {
  name = "ember.distributions.MultivariateNormal",
  sig = "D.MultivariateNormal(loc, covariance_matrix | {precision_matrix = P} | {scale_tril = L}\n"
     .. "                     [, {validate_args}]) -> distribution",
  doc = [=[
The normal distribution over vectors of size n = loc's last dim (event_shape {n}),
given exactly one of covariance_matrix (by position or by name), precision_matrix or
scale_tril, positive-definite or lower-triangular with a positive diagonal, [..., n, n];
the batch is loc's and the matrix's leading dims broadcast. Everything works from the
Cholesky factor L (ember.linalg.cholesky of the covariance; of the flipped precision):
rsample loc + L eps; log_prob with |L^-1 (x - loc)|^2 (ember.linalg.solve on the lower
triangle, as ember has no solve_triangular); entropy; the properties covariance_matrix,
precision_matrix, scale_tril (computed once), variance. A matrix whose size does not fit
loc is an error at construction (PyTorch fails later).
Like torch.distributions.MultivariateNormal.]=],
  example = [=[
local D = ember.distributions
local d = D.MultivariateNormal(ember.zeros(2), ember.tensor({{2.0, 0.5}, {0.5, 1.0}}))
print(d.event_shape, d.scale_tril, d:log_prob(ember.zeros(2)))]=],
}

add {
  name = "ember.distributions.Independent",
  sig = "D.Independent(base_distribution, reinterpreted_batch_ndims [, {validate_args}])",
  doc = [=[
Makes the rightmost reinterpreted_batch_ndims batch dims of base_distribution event
dims: log_prob and entropy sum over them (a diagonal Normal as one vector-valued
distribution). Samples, mean, mode and variance are the base's; has_rsample is the
base's; enumerate_support only with 0 dims reinterpreted. log_prob leaves validation to
the base, as PyTorch. d.base_dist, d.reinterpreted_batch_ndims.
Like torch.distributions.Independent.]=],
  example = [=[
local D = ember.distributions
local d = D.Independent(D.Normal(ember.zeros(4, 3), 1), 1)
print(d.batch_shape, d.event_shape, d:log_prob(ember.zeros(4, 3)).shape)   -- {4} {3} {4}]=],
}

add {
  name = "ember.distributions.kl_divergence",
  sig = "D.kl_divergence(p, q) -> tensor",
  doc = [=[
KL(p || q), of the broadcast batch shape, for the pairs PyTorch registers among these
classes: Normal, LogNormal, Laplace, Uniform, Exponential, Poisson, Bernoulli,
Categorical, OneHotCategorical, MultivariateNormal and Independent each with its own
class, and Normal-Laplace, Laplace-Normal, Uniform-Normal, Uniform-Exponential,
Exponential-Normal, Bernoulli-Poisson; pairs where q's support misses part of p's
(Normal or Laplace to Uniform or Exponential, Exponential-Uniform, Poisson-Bernoulli)
give inf. Other pairs raise, naming both classes; so do MultivariateNormals of
different sizes and Independents of different reinterpreted_batch_ndims.
Like torch.distributions.kl_divergence.]=],
  example = [=[
local D = ember.distributions
print(D.kl_divergence(D.Normal(0, 1), D.Normal(1, 1)))        -- 0.5
print(D.kl_divergence(D.Bernoulli(0.5), D.Bernoulli(0.25)))]=],
}

add {
  name = "ember.distributions.register_kl",
  sig = "D.register_kl(P, Q, fn) -> fn\nD.register_kl(P, Q) -> function(fn)",
  doc = [=[
Registers fn(p, q) as kl_divergence for p of class P and q of class Q (or of their
subclasses). Without fn it returns a function that registers its argument, as
PyTorch's decorator. A later registration of a pair replaces the earlier one. Lookup
tries p's class, then its parents, each against q's class and then its parents.
Like torch.distributions.kl.register_kl.]=],
  example = [=[
local D = ember.distributions
D.register_kl(D.Exponential, D.Laplace, function(p) return ember.full_like(p.rate, math.huge) end)
print(D.kl_divergence(D.Exponential(1), D.Laplace(0, 1)))   -- inf]=],
}

add {
  name = "ember.distributions.constraints",
  sig = "ember.distributions.constraints",
  doc = [=[
The sets parameters and values live in, as d.support and d.arg_constraints give them:
real, positive, nonnegative, unit_interval, boolean, simplex, real_vector,
nonnegative_integer, one_hot, positive_definite, lower_cholesky, and the makers
greater_than(b), greater_than_eq(b), less_than(b), interval(lo, hi),
integer_interval(lo, hi), independent(c, n) (bounds numbers or tensors). c:check(value)
is a bool tensor, one element per event (event_dim rightmost dims reduced);
tostring(c) is PyTorch's repr, quoted by validation errors; c.event_dim,
c.is_discrete. positive_definite checks symmetry and a positive smallest eigenvalue.
Like torch.distributions.constraints.]=],
  example = [=[
local C = ember.distributions.constraints
print(C.positive, C.positive:check(ember.tensor({-1.0, 0.0, 2.0})))   -- F F T
print(C.simplex:check(ember.tensor({{0.5, 0.5}, {0.9, 0.3}})))         -- T F]=],
}

return entries
