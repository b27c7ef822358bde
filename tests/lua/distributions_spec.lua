-- distributions_spec.lua — ember.distributions against PyTorch 2.x (fixtures/distributions.lua,
-- written by scripts/fixtures/make_distributions_fixtures.py): log_prob, cdf, icdf, entropy,
-- the properties and kl_divergence, values and float64 gradients.
local ember = require "ember"
local h = require "helpers"

describe("distributions against PyTorch (fixtures)", function()
  for _, c in ipairs(h.fixture("distributions.lua")) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

local D = ember.distributions
local err, has = h.err, h.has
local F64 = {dtype = "float64"}

local function t64(v) return ember.tensor(v, F64) end

-- every element of the bool tensor ok is true; what says what failed, with the values
local function all_true(ok, what, ...)
  local extra = {...}
  for i, v in ipairs(extra) do extra[i] = tostring(v) end
  assert(ok:all():item(), what .. "\n" .. table.concat(extra, "\n"))
end

describe("distributions: shapes and dtypes", function()
  local cases = {
    {"Normal", function() return D.Normal(ember.zeros(3, F64), 1) end, {3}, {}, "float64"},
    {"Normal of numbers", function() return D.Normal(0, 1) end, {}, {}, "float32"},
    {"LogNormal", function() return D.LogNormal(ember.zeros(2, 1), ember.ones(3)) end, {2, 3}, {}, "float32"},
    {"Uniform", function() return D.Uniform(t64({0, 1}), 3) end, {2}, {}, "float64"},
    {"Exponential", function() return D.Exponential(ember.ones(4)) end, {4}, {}, "float32"},
    {"Laplace", function() return D.Laplace(0, ember.ones(2, 2, F64)) end, {2, 2}, {}, "float64"},
    {"Bernoulli", function() return D.Bernoulli(ember.full({3}, 0.3)) end, {3}, {}, "float32"},
    {"Bernoulli logits", function() return D.Bernoulli({logits = ember.zeros(2, F64)}) end, {2}, {}, "float64"},
    {"Categorical", function() return D.Categorical(ember.ones(2, 5)) end, {2}, {}, "int64"},
    {"OneHotCategorical", function() return D.OneHotCategorical({logits = ember.zeros(5, F64)}) end, {}, {5},
     "float64"},
    {"Poisson", function() return D.Poisson(ember.full({2, 1}, 4.0)) end, {2, 1}, {}, "float32"},
    {"MultivariateNormal", function() return D.MultivariateNormal(ember.zeros(2, 3), ember.eye(3)) end, {2}, {3},
     "float32"},
    {"Independent", function() return D.Independent(D.Normal(ember.zeros(2, 3), 1), 1) end, {2}, {3}, "float32"},
  }
  for _, c in ipairs(cases) do
    local name, make, batch, event, dtype = c[1], c[2], c[3], c[4], c[5]
    it(name .. ": batch_shape, event_shape, sample and rsample shapes, dtype", function()
      local d = make()
      assert.are.equal("ember.Size", getmetatable(d.batch_shape).__name)
      assert(h.same(d.batch_shape, batch), "batch_shape " .. tostring(d.batch_shape))
      assert(h.same(d.event_shape, event), "event_shape " .. tostring(d.event_shape))
      local function want(...)
        local s = {...}
        for _, v in ipairs(batch) do s[#s + 1] = v end
        for _, v in ipairs(event) do s[#s + 1] = v end
        return s
      end
      h.check_shape(d:sample(), want())
      h.check_shape(d:sample({4}), want(4))
      h.check_shape(d:sample(2, 3), want(2, 3))
      h.check_shape(d:sample(ember.Size({2, 1})), want(2, 1))
      h.check_shape(d:sample({0}), want(0))
      assert.are.equal(dtype, d:sample({2}).dtype)
      if d.has_rsample then
        h.check_shape(d:rsample({4}), want(4))
        assert.are.equal(dtype, d:rsample().dtype)
      end
      local x = d:sample({3})
      h.check_shape(d:log_prob(x), {3, table.unpack(batch)})
      if name ~= "Poisson" then h.check_shape(d:entropy(), batch) end
      h.check_shape(d.mean, want())
      h.check_shape(d.variance, want())
    end)
    it(name .. ": the same seed gives the same samples", function()
      local d = make()
      ember.manual_seed(123)
      local a = d:sample({50})
      ember.manual_seed(123)
      local b = d:sample({50})
      assert(ember.equal(a, b), name .. ": samples differ under the same seed")
      local c2 = d:sample({50})
      assert(not ember.equal(a, c2), name .. ": the next samples repeat the first")
    end)
  end

  it("sample does not record for autograd; rsample does", function()
    local loc = ember.zeros(3, {requires_grad = true})
    local d = D.Normal(loc, 1)
    assert.is_false(d:sample().requires_grad)
    assert.is_true(d:rsample().requires_grad)
  end)
end)

-- Sample statistics within five standard errors of the distribution's own values (the
-- mean, variance, cdf and icdf that the fixtures check against PyTorch). The seed is fixed,
-- so each check is deterministic; n is large enough that a wrong formula (a wrong scale,
-- a shifted location, a sampler of the wrong shape) lands far outside.
local N = 200000

-- the sample mean of x (samples along dim 1) is within 5 standard errors of d.mean
local function check_mean(what, x, mean, var)
  local got = x:to("float64"):mean(1)
  local tol = (var:to("float64") / N):sqrt() * 5
  all_true((got - mean):abs():le(tol), what .. ": sample mean off", got, mean)
end

-- the sample variance is within 5 standard errors of d.variance, for a distribution of
-- kurtosis kurt (the standard error of a sample variance is sqrt((kurt - 1) / n) var)
local function check_var(what, x, var, kurt)
  local got = x:to("float64"):var(1)
  local tol = var:to("float64") * (5 * math.sqrt((kurt - 1) / N))
  all_true((got - var):abs():le(tol), what .. ": sample variance off", got, var)
end

-- the fraction of samples below the p-quantile d:icdf(p) is p, within 5 standard errors
local function check_quantiles(what, d, x)
  for _, p in ipairs({0.05, 0.25, 0.5, 0.75, 0.95}) do
    local q = d:icdf(ember.full(d.batch_shape, p, {dtype = d.mean.dtype}))
    local frac = x:le(q):to("float64"):mean(1)
    all_true((frac - p):abs():le(5 * math.sqrt(p * (1 - p) / N)), what .. ": fraction below the " .. p .. "-quantile",
             frac)
  end
end

describe("distributions: sample statistics", function()
  local continuous = {
    {"Normal", function() return D.Normal(t64({-1, 0, 2.5}), t64({0.5, 1, 3})) end, 3},
    {"Laplace", function() return D.Laplace(t64({-1, 0, 2.5}), t64({0.5, 1, 3})) end, 6},
    {"Uniform", function() return D.Uniform(t64({-1, 0, 2.5}), t64({0, 0.01, 10})) end, 1.8},
    {"Exponential", function() return D.Exponential(t64({0.5, 1, 4})) end, 9},
  }
  for _, c in ipairs(continuous) do
    local name, make, kurt = c[1], c[2], c[3]
    for _, method in ipairs({"sample", "rsample"}) do
      it(name .. ": " .. method .. "'s mean, variance and quantiles", function()
        ember.manual_seed(2024)
        local d = make()
        local x = d[method](d, {N})
        check_mean(name, x, d.mean, d.variance)
        check_var(name, x, d.variance, kurt)
        check_quantiles(name, d, x)
        if name == "Exponential" then assert(x:ge(0):all():item()) end
        if name == "Uniform" then all_true(x:ge(d.low):logical_and(x:lt(d.high)), "Uniform: a sample outside [low, high)") end
      end)
    end
  end

  it("LogNormal: log of the samples is the Normal; the quantiles are exp of its", function()
    ember.manual_seed(7)
    local d = D.LogNormal(t64({-1, 0, 1}), t64({0.25, 1, 0.5}))
    local x = d:sample({N})
    check_mean("LogNormal", x:log(), d.loc, d.scale ^ 2)
    check_var("LogNormal", x:log(), d.scale ^ 2, 3)
    check_quantiles("LogNormal", d, x)
    check_mean("LogNormal", x, d.mean, d.variance)
  end)

  it("Bernoulli: the frequency of 1 is probs, from probs and from logits", function()
    ember.manual_seed(3)
    local probs = t64({0, 0.02, 0.5, 0.9, 1})
    for _, d in ipairs({D.Bernoulli(probs), D.Bernoulli({logits = probs:logit()})}) do
      local x = d:sample({N})
      all_true(x:eq(0):logical_or(x:eq(1)), "Bernoulli: a sample is not 0 or 1")
      check_mean("Bernoulli", x, d.mean, d.variance)
    end
  end)

  it("Categorical and OneHotCategorical: class frequencies are probs (classes 1..K)", function()
    ember.manual_seed(5)
    local probs = t64({{0.1, 0.2, 0.7, 0}, {0.25, 0.25, 0.25, 0.25}})
    local d = D.Categorical(probs)
    local x = d:sample({N})
    assert(x:ge(1):logical_and(x:le(4)):all():item(), "Categorical: a class outside 1..4")
    local oh = ember.one_hot(x, 4):to("float64")
    check_mean("Categorical", oh, probs, probs * (1 - probs))
    local o = D.OneHotCategorical(probs)
    local y = o:sample({N})
    all_true(y:sum(-1):eq(1), "OneHotCategorical: a sample is not one-hot")
    check_mean("OneHotCategorical", y, o.mean, o.variance)
  end)

  it("Poisson: mean, variance and the frequency of each count near the mode (both samplers)", function()
    ember.manual_seed(11)
    local rate = t64({0, 0.5, 3, 9.5, 10, 40, 1e4})
    local d = D.Poisson(rate)
    local x = d:sample({N})
    all_true(x:ge(0):logical_and(x:eq(x:floor())), "Poisson: a sample is not a non-negative integer")
    assert(x:select(2, 1):eq(0):all():item(), "Poisson: rate 0 gave a nonzero count")
    check_mean("Poisson", x, d.mean, d.variance)
    local kurt = (rate:reciprocal() + 3):clamp(0, 1e6)
    local var = x:var(1)
    for i = 2, rate:numel() do
      local r = rate[i]:item()
      local tol = 5 * math.sqrt((kurt[i]:item() - 1) / N) * r
      assert(math.abs(var[i]:item() - r) <= tol, string.format("Poisson(%g): sample variance %g", r, var[i]:item()))
      for k = math.floor(r) - 1, math.floor(r) + 1 do
        if k >= 0 then
          local p = math.exp(d:log_prob(ember.full({rate:numel()}, k, F64))[i]:item())
          local freq = x:select(2, i):eq(k):to("float64"):mean():item()
          assert(math.abs(freq - p) <= 5 * math.sqrt(p * (1 - p) / N) + 1e-12,
                 string.format("Poisson(%g): frequency of %d is %g, pmf %g", r, k, freq, p))
        end
      end
    end
  end)

  it("MultivariateNormal: sample mean and covariance (each parameterisation)", function()
    local loc = t64({1, -2, 0.5})
    local cov = t64({{2, 0.6, -0.4}, {0.6, 1, 0.3}, {-0.4, 0.3, 0.8}})
    local L = ember.linalg.cholesky(cov)
    for _, d in ipairs({D.MultivariateNormal(loc, cov), D.MultivariateNormal(loc, {scale_tril = L}),
                        D.MultivariateNormal(loc, {precision_matrix = ember.linalg.inv(cov)})}) do
      ember.manual_seed(17)
      local x = d:rsample({N})
      check_mean("MultivariateNormal", x, loc, cov:diagonal())
      local centred = x - x:mean(1)
      local got = centred.mT:matmul(centred) / (N - 1)
      -- the standard error of a sample covariance entry: sqrt((s_ii s_jj + s_ij^2) / n)
      local d_ = cov:diagonal()
      local tol = ((d_:unsqueeze(2) * d_:unsqueeze(1) + cov ^ 2) / N):sqrt() * 5
      all_true((got - cov):abs():le(tol), "MultivariateNormal: sample covariance off", got, cov)
    end
  end)
end)

describe("distributions: rsample's gradient (the reparameterisation trick)", function()
  it("Normal: d mean(x) / d loc = 1 and d x / d scale = (x - loc) / scale", function()
    ember.manual_seed(1)
    local loc, scale = t64({0.5, -1}):requires_grad_(), t64({2, 0.5}):requires_grad_()
    local x = D.Normal(loc, scale):rsample({1000})
    x:mean(1):sum():backward()
    h.check(loc.grad, {1, 1}, 1e-12)
    h.close_tensors("d/dscale", scale.grad, ((x:detach() - loc:detach()) / scale:detach()):mean(1), 1e-12)
  end)

  it("Exponential: x * rate does not depend on rate, so d x / d rate = -x / rate", function()
    local rate = t64({0.5, 3}):requires_grad_()
    local x = D.Exponential(rate):rsample({100})
    x:sum():backward()
    h.close_tensors("d/drate", rate.grad, (-x:detach() / rate:detach()):sum(1), 1e-12)
  end)

  it("Uniform, Laplace, LogNormal, MultivariateNormal, Independent: d mean(x) / d location", function()
    local low = t64({0, 1}):requires_grad_()
    local u = D.Uniform(low, 5):rsample({10})
    u:mean(1):sum():backward()
    -- x = low + v (high - low) for v uniform on [0, 1): d x / d low = 1 - v
    h.close_tensors("Uniform d/dlow", low.grad, (1 - (u:detach() - low:detach()) / (5 - low:detach())):mean(1), 1e-12)
    local loc = t64({0, 1}):requires_grad_()
    D.Laplace(loc, 2):rsample({10}):mean(1):sum():backward()
    h.check(loc.grad, {1, 1}, 1e-12)
    loc.grad = nil
    local y = D.LogNormal(loc, 0.5):rsample({10})
    y:sum():backward()
    h.close_tensors("LogNormal d/dloc", loc.grad, y:detach():sum(1), 1e-12)   -- d exp(z) / d loc = exp(z)
    local mloc = t64({1, 2, 3}):requires_grad_()
    D.MultivariateNormal(mloc, ember.eye(3, F64)):rsample({7}):sum():backward()
    h.check(mloc.grad, {7, 7, 7}, 1e-12)
    local iloc = ember.zeros(2, 3, F64):requires_grad_()
    D.Independent(D.Normal(iloc, 1), 1):rsample({4}):sum():backward()
    h.check(iloc.grad, {{4, 4, 4}, {4, 4, 4}}, 1e-12)
  end)

  it("MultivariateNormal: d x / d scale_tril = eps (x = loc + L eps)", function()
    ember.manual_seed(9)
    local L = t64({{1, 0}, {0.5, 2}}):requires_grad_()
    local x = D.MultivariateNormal(ember.zeros(2, F64), {scale_tril = L}):rsample()
    x[1]:backward()
    ember.manual_seed(9)
    local eps = ember.randn(2, F64)
    h.close_tensors("d x1 / d L", L.grad, ember.stack({eps, ember.zeros(2, F64)}), 1e-12)
  end)
end)

describe("distributions: bad arguments", function()
  it("parameters outside their constraint, naming the class, the parameter and the constraint", function()
    local e = err(D.Normal, 0, -1)
    has(e, "Normal: expected parameter scale (tensor of shape [])")
    has(e, "GreaterThan(lower_bound=0.0)")
    has(err(D.Normal, ember.zeros(2), ember.tensor({1.0, 0.0})), "Normal: expected parameter scale (tensor of shape [2])")
    has(err(D.Normal, 0 / 0, 1), "Normal: expected parameter loc")
    has(err(D.LogNormal, 0, 0), "LogNormal: expected parameter scale")
    has(err(D.Laplace, 0, -2), "Laplace: expected parameter scale")
    has(err(D.Exponential, ember.tensor({1.0, -1.0})), "Exponential: expected parameter rate")
    has(err(D.Uniform, 1, 0), "Uniform: expected parameter low")
    has(err(D.Uniform, 1, 0), "LessThan(upper_bound=")
    e = err(D.Bernoulli, ember.tensor({0.5, 1.2}))
    has(e, "Bernoulli: expected parameter probs (tensor of shape [2])")
    has(e, "Interval(lower_bound=0.0, upper_bound=1.0)")
    has(err(D.Bernoulli, -0.1), "Bernoulli: expected parameter probs")
    has(err(D.Categorical, ember.tensor({-0.5, 1.0, 1.0})), "Categorical: expected parameter probs")
    has(err(D.Categorical, ember.tensor({-0.5, 1.0, 1.0})), "Simplex()")
    has(err(D.OneHotCategorical, ember.zeros(3)), "OneHotCategorical: expected parameter probs")
    has(err(D.Poisson, -1), "Poisson: expected parameter rate")
    has(err(D.Poisson, -1), "GreaterThanEq(lower_bound=0.0)")
    has(err(D.MultivariateNormal, ember.zeros(2), ember.tensor({{1.0, 2.0}, {2.0, 1.0}})),
        "MultivariateNormal: expected parameter covariance_matrix")
    has(err(D.MultivariateNormal, ember.zeros(2), {precision_matrix = ember.tensor({{1.0, 0.0}, {0.5, 1.0}})}),
        "PositiveDefinite()")
    has(err(D.MultivariateNormal, ember.zeros(2), {scale_tril = ember.tensor({{1.0, 1.0}, {0.0, 1.0}})}),
        "MultivariateNormal: expected parameter scale_tril")
    has(err(D.MultivariateNormal, ember.zeros(2), {scale_tril = ember.tensor({{1.0, 0.0}, {1.0, -1.0}})}), "LowerCholesky()")
  end)

  it("validate_args = false skips the checks (the results are then NaN), as PyTorch", function()
    local d = D.Normal(0, -1, {validate_args = false})
    assert(h.is_nan(d:log_prob(0.5):item()))
    assert(h.is_nan(D.Bernoulli(1.5, {validate_args = false}).logits:item()) == false)
    assert(h.is_nan(D.Uniform(0, 1, {validate_args = false}):log_prob(2):item()) == false)   -- -inf
    assert.are.equal(-math.huge, D.Uniform(0, 1, {validate_args = false}):log_prob(2):item())
    -- without the check a matrix that is not positive-definite fails in the factorisation
    has(err(D.MultivariateNormal, ember.zeros(2), ember.tensor({{1.0, 2.0}, {2.0, 1.0}}), {validate_args = false}),
        "MultivariateNormal: ")
    D.Distribution.set_default_validate_args(false)
    local ok, e = pcall(D.Exponential, -1)
    D.Distribution.set_default_validate_args(true)
    assert(ok, tostring(e))
    has(err(D.Exponential, -1), "Exponential: expected parameter rate")
    has(err(D.Distribution.set_default_validate_args, "no"), "set_default_validate_args: value must be a boolean")
  end)

  it("wrong argument kinds, counts and shapes", function()
    has(err(D.Normal, "x", 1), "Normal: loc must be a tensor or a number, got string")
    has(err(D.Normal, 0), "Normal: missing argument scale")
    has(err(D.Normal, 0, 1, {foo = 1}), "Normal: unknown option 'foo'")
    has(err(D.Normal, 0, 1, {validate_args = "yes"}), "Normal: validate_args must be a boolean or nil, got string")
    has(err(D.Normal, ember.zeros(2), ember.ones(3)), "Normal: the parameters cannot be broadcast together: loc [2], scale [3]")
    has(err(D.Uniform, ember.zeros(2, 2), ember.ones(3)), "Uniform: the parameters cannot be broadcast together")
    has(err(D.Bernoulli), "Bernoulli: either probs or logits must be specified, but not both")
    has(err(D.Bernoulli, 0.5, 0.1), "Bernoulli: either probs or logits")
    has(err(D.Bernoulli, {}), "Bernoulli: either probs or logits")
    has(err(D.Categorical, ember.tensor(0.5)), "Categorical: probs must be at least one-dimensional, got shape []")
    has(err(D.Categorical, 0.5), "Categorical: probs must be a tensor, got number")
    has(err(D.Normal, ember.tensor({0, 1}), 1), "Normal: loc must be a floating-point tensor, got int64")
    has(err(D.Categorical, ember.tensor({1, 2})), "Categorical: probs must be a floating-point tensor, got int64")
    has(err(D.MultivariateNormal, ember.zeros(2), ember.eye(2):to("int64")),
        "MultivariateNormal: covariance_matrix must be a floating-point tensor")
    has(err(D.OneHotCategorical, {logits = ember.tensor(1.0)}), "OneHotCategorical: logits must be at least one-dimensional")
    has(err(D.MultivariateNormal, ember.zeros(2)), "MultivariateNormal: exactly one of covariance_matrix or precision_matrix "
                                                  .. "or scale_tril may be specified, got none")
    has(err(D.MultivariateNormal, ember.zeros(2), ember.eye(2), {scale_tril = ember.eye(2)}),
        "got covariance_matrix and scale_tril")
    has(err(D.MultivariateNormal, ember.tensor(1.0), ember.eye(1)), "MultivariateNormal: loc must be at least one-dimensional")
    has(err(D.MultivariateNormal, ember.zeros(2), ember.ones(2)), "MultivariateNormal: covariance_matrix must be at least 2-dimensional")
    has(err(D.MultivariateNormal, ember.zeros(2), ember.ones(2, 3)), "MultivariateNormal: covariance_matrix must be square")
    has(err(D.MultivariateNormal, ember.zeros(3), ember.eye(2)),
        "MultivariateNormal: covariance_matrix of shape [2, 2] does not fit loc of shape [3] (event size 2 vs 3)")
    has(err(D.MultivariateNormal, ember.zeros(2, 2), ember.eye(2):expand(3, 2, 2)),
        "MultivariateNormal: the batch dims of covariance_matrix [3, 2, 2] and of loc [2, 2] cannot be broadcast")
    has(err(D.Independent, 5, 1), "Independent: base_distribution must be a distribution, got number")
    has(err(D.Independent, D.Normal(0, 1), 1),
        "Independent: expected reinterpreted_batch_ndims <= #base_distribution.batch_shape, actual 1 vs 0")
    has(err(D.Independent, D.Normal(ember.zeros(2), 1), -1), "Independent: reinterpreted_batch_ndims must be a non-negative integer")
    has(err(D.Independent, D.Normal(ember.zeros(2), 1)), "Independent: missing argument reinterpreted_batch_ndims")
    has(err(D.Distribution), "Distribution: an abstract base class")
  end)

  it("sample shapes and values that do not fit", function()
    local d = D.Normal(ember.zeros(3), 1)
    has(err(d.sample, d, -1), "Normal: sample: sample_shape must be a list of non-negative integers")
    has(err(d.sample, d, {1.5}), "Normal: sample: sample_shape must be a list of non-negative integers")
    has(err(d.rsample, d, "x"), "Normal: rsample: sample_shape must be")
    has(err(d.log_prob, d, "x"), "Normal: log_prob: the value argument must be a tensor or a number, got string")
    has(err(d.log_prob, d, ember.zeros(2)),
        "Normal: log_prob: value is not broadcastable with batch_shape+event_shape: [2] vs [3]")
    has(err(d.cdf, d, ember.zeros(4, 2)), "Normal: cdf: value is not broadcastable")
    local m = D.MultivariateNormal(ember.zeros(3), ember.eye(3))
    has(err(m.log_prob, m, ember.zeros(2)),
        "MultivariateNormal: log_prob: the right-most size of value must match event_shape: [2] vs [3]")
    h.check_shape(m:log_prob(ember.zeros(4, 1, 3)), {4, 1})
  end)

  it("values outside the support, with the support named", function()
    local e = err(function() return D.Bernoulli(0.5):log_prob(ember.tensor({0.5})) end)
    has(e, "Bernoulli: log_prob: expected value argument (tensor of shape [1]) to be within the support (Boolean())")
    has(err(function() return D.Categorical(ember.ones(3)):log_prob(0) end), "IntegerInterval(lower_bound=1, upper_bound=3)")
    has(err(function() return D.Categorical(ember.ones(3)):log_prob(4) end), "Categorical: log_prob: expected value argument")
    has(err(function() return D.Categorical(ember.ones(3)):log_prob(1.5) end), "Categorical: log_prob")
    has(err(function() return D.OneHotCategorical(ember.ones(3)):log_prob(ember.tensor({1.0, 1.0, 0.0})) end), "OneHot()")
    has(err(function() return D.Uniform(0, 1):log_prob(1.5) end), "Uniform: log_prob: expected value argument")
    has(err(function() return D.Uniform(0, 1):cdf(-1) end), "Uniform: cdf: expected value argument")
    has(err(function() return D.Exponential(1):log_prob(-1) end), "Exponential: log_prob")
    has(err(function() return D.Poisson(2):log_prob(1.5) end), "IntegerGreaterThan(lower_bound=0)")
    has(err(function() return D.LogNormal(0, 1):log_prob(0) end), "LogNormal: log_prob")
    has(err(function() return D.LogNormal(0, 1):cdf(-1) end), "LogNormal: cdf")
    has(err(function() return D.Normal(0, 1):log_prob(0 / 0) end), "Real()")
    has(err(function() return D.Independent(D.Normal(ember.zeros(2), 1), 1):log_prob(ember.tensor({0, 0 / 0})) end),
        "Normal: log_prob")
  end)

  it("what a class does not have", function()
    has(err(function() return D.Bernoulli(0.5):rsample() end), "Bernoulli: rsample is not implemented")
    has(err(function() return D.Poisson(2):entropy() end), "Poisson: entropy is not implemented for Poisson")
    has(err(function() return D.Poisson(2):cdf(1) end), "Poisson: cdf is not implemented for Poisson")
    has(err(function() return D.Bernoulli(0.5):icdf(0.5) end), "Bernoulli: icdf is not implemented")
    has(err(function() return D.Normal(0, 1):enumerate_support() end), "Normal: enumerate_support is not implemented")
    has(err(function() return D.Independent(D.Bernoulli(ember.ones(2) / 2), 1):enumerate_support() end),
        "Independent: enumerate_support is not implemented")
    has(err(function() return D.Bernoulli(0.5):enumerate_support("x") end), "enumerate_support: expand must be a boolean")
  end)
end)

describe("distributions: expand", function()
  local cases = {
    {"Normal", function() return D.Normal(t64({0, 1, 2}), 2) end, t64({0.5, -1, 3})},
    {"LogNormal", function() return D.LogNormal(t64({0, 1, 2}), 2) end, t64({0.5, 1, 3})},
    {"Uniform", function() return D.Uniform(t64({0, 1, 2}), 4) end, t64({0.5, 1, 3})},
    {"Exponential", function() return D.Exponential(t64({0.5, 1, 2})) end, t64({0.5, 1, 3})},
    {"Laplace", function() return D.Laplace(t64({0, 1, 2}), 2) end, t64({0.5, 1, 3})},
    {"Poisson", function() return D.Poisson(t64({0.5, 1, 2})) end, t64({0, 1, 3})},
    {"Bernoulli", function() return D.Bernoulli({logits = t64({0.5, 1, 2})}) end, t64({0, 1, 1})},
    {"Categorical", function() return D.Categorical(t64({{1, 2}, {3, 4}, {5, 6}})) end, ember.tensor({1, 2, 2})},
    {"OneHotCategorical", function() return D.OneHotCategorical(t64({{1, 2}, {3, 4}, {5, 6}})) end,
     t64({{1, 0}, {0, 1}, {0, 1}})},
    {"MultivariateNormal", function() return D.MultivariateNormal(t64({{0, 1}, {1, 0}, {2, 2}}), ember.eye(2, F64)) end,
     t64({{0.5, 1}, {1, 1}, {3, 2}})},
    {"Independent", function() return D.Independent(D.Normal(ember.zeros(3, 2, F64), 1), 1) end,
     t64({{0.5, 1}, {1, 1}, {3, 2}})},
  }
  for _, c in ipairs(cases) do
    it(c[1] .. ": expand(4, 3) keeps the class and the values, broadcast", function()
      local d, x = c[2](), c[3]
      local e = d:expand({4, 3})
      assert.are.equal(getmetatable(d), getmetatable(e))
      assert(h.same(e.batch_shape, {4, 3}), tostring(e.batch_shape))
      assert(h.same(e.event_shape, d.event_shape))
      local want = d:log_prob(x)
      h.close_tensors("log_prob", e:log_prob(x), want:expand(4, 3), 0)
      h.check_shape(e:sample({2}), {2, 4, 3, table.unpack(h.deep_copy(d.event_shape))})
      h.check_shape(d:expand(ember.Size({3})).mean, d.mean.shape)
      assert.are.equal(d._validate_args, e._validate_args)
      has(err(d.expand, d, {2, 4}), c[1] .. ": expand: cannot expand batch_shape [3] to [2, 4]")
    end)
  end
end)

describe("distributions: enumerate_support", function()
  it("Bernoulli: 0 and 1 along dim 1, expanded over the batch or not", function()
    local d = D.Bernoulli(ember.full({3}, 0.2, F64))
    local v = d:enumerate_support()
    assert.are.equal("float64", v.dtype)
    h.check(v, {{0, 0, 0}, {1, 1, 1}})
    h.check(d:enumerate_support(false), {{0}, {1}})
    h.check(d:enumerate_support({expand = false}), {{0}, {1}})
  end)
  it("Categorical: the classes 1..K; OneHotCategorical: the rows of the identity", function()
    local d = D.Categorical(ember.ones(2, 3))
    local v = d:enumerate_support()
    assert.are.equal("int64", v.dtype)
    h.check(v, {{1, 1}, {2, 2}, {3, 3}})
    -- every class has a log_prob of log(1/3)
    h.check(d:log_prob(v), {{-math.log(3), -math.log(3)}, {-math.log(3), -math.log(3)}, {-math.log(3), -math.log(3)}},
            1e-6)
    local o = D.OneHotCategorical(ember.ones(2, 3))
    h.check_shape(o:enumerate_support(), {3, 2, 3})
    h.check(o:enumerate_support(false), {{{1, 0, 0}}, {{0, 1, 0}}, {{0, 0, 1}}})
    h.check(D.Independent(D.Bernoulli(ember.full({2}, 0.5)), 0):enumerate_support(), {{0, 0}, {1, 1}})
  end)
end)

describe("distributions: properties, printing and the class table", function()
  it("tostring lists the parameters as PyTorch's repr", function()
    assert.are.equal("Normal(loc: 0.0, scale: 1.0)", tostring(D.Normal(0, 1)))
    assert.are.equal("Normal(loc: ember.Size({3}), scale: ember.Size({3}))", tostring(D.Normal(ember.zeros(3), 1)))
    assert.are.equal("Bernoulli(logits: 0.5)", tostring(D.Bernoulli({logits = 0.5})))
    assert.are.equal("Independent(Normal(loc: ember.Size({3}), scale: ember.Size({3})), 1)",
                     tostring(D.Independent(D.Normal(ember.zeros(3), 1), 1)))
    assert.are.equal("MultivariateNormal(loc: ember.Size({2}), covariance_matrix: ember.Size({2, 2}))",
                     tostring(D.MultivariateNormal(ember.zeros(2), ember.eye(2))))
    has(tostring(D.Bernoulli(ember.tensor({0.25}))), "Bernoulli(probs: tensor([0.2500]))")
  end)

  it("support, arg_constraints and has_rsample", function()
    assert.are.equal("Real()", tostring(D.Normal(0, 1).support))
    assert.are.equal("GreaterThan(lower_bound=0.0)", tostring(D.Normal(0, 1).arg_constraints.scale))
    assert.are.equal("IntegerInterval(lower_bound=1, upper_bound=4)", tostring(D.Categorical(ember.ones(4)).support))
    assert.are.equal("IndependentConstraint(Real(), 1)", tostring(D.MultivariateNormal(ember.zeros(2), ember.eye(2)).support))
    assert.are.equal("IndependentConstraint(GreaterThan(lower_bound=0.0), 1)",
                     tostring(D.Independent(D.LogNormal(ember.zeros(2), 1), 1).support))
    h.check(D.Uniform(0, 2).support:check(ember.tensor({-1, 0, 2, 3})), {false, true, true, false})
    assert.is_true(D.Normal(0, 1).has_rsample)
    assert.is_false(D.Bernoulli(0.5).has_rsample)
    assert.is_false(D.Independent(D.Poisson(ember.ones(2)), 1).has_rsample)
    assert.is_true(D.Independent(D.Normal(ember.zeros(2), 1), 1).has_rsample)
    assert.is_true(D.Categorical(ember.ones(2)).has_enumerate_support)
    assert.is_nil(D.Normal(0, 1).no_such_field)
  end)

  it("the parameter not given is computed once, with grad, even under no_grad", function()
    local p = ember.tensor({0.2, 0.7}, {requires_grad = true})
    local d = D.Bernoulli(p)
    local _ = d:sample()   -- no_grad inside
    local logits = ember.no_grad(function() return d.logits end)
    assert.is_true(logits.requires_grad)
    assert(rawequal(logits, d.logits))
    local c = D.Categorical({logits = ember.zeros(4)})
    h.check(c.probs, {0.25, 0.25, 0.25, 0.25}, 1e-7)
    assert(h.same(c.param_shape, {4}))
  end)

  it("numbers as log_prob values take the distribution's dtype", function()
    local lp = D.Normal(t64({0}), 1):log_prob(0)
    assert.are.equal("float64", lp.dtype)
    h.check(lp, {-0.5 * math.log(2 * math.pi)}, 1e-15)
    assert.are.equal(2, D.Categorical(ember.ones(3)):sample():dim() + 2)   -- a 0-d int64 class
  end)

  it("help finds the classes, their instances' methods and kl_divergence", function()
    local help = require "ember.help"
    assert.are.equal("ember.distributions.Normal", (help.lookup(D.Normal) or {}).name)
    assert.are.equal("ember.distributions.Normal", (help.lookup(D.Normal(0, 1)) or {}).name)
    assert.are.equal("ember.distributions.Distribution:log_prob", (help.lookup(D.Normal(0, 1).log_prob) or {}).name)
    assert.are.equal("ember.distributions.kl_divergence", (help.lookup(D.kl_divergence) or {}).name)
  end)
end)

describe("distributions: kl_divergence and register_kl", function()
  it("is 0 between a distribution and itself", function()
    for _, d in ipairs({D.Normal(t64({0, 1}), 2), D.Bernoulli(t64({0.3, 1})), D.Categorical(t64({{1, 2, 0}})),
                        D.MultivariateNormal(t64({1, 2}), t64({{2, 1}, {1, 2}})), D.Uniform(0, t64({1, 3})),
                        D.Exponential(t64({2})), D.Laplace(0, t64({2})), D.Poisson(t64({3})),
                        D.LogNormal(0, t64({1})), D.OneHotCategorical(t64({0.5, 0.5}))}) do
      h.check(D.kl_divergence(d, d):abs():max():reshape(1), {0}, 1e-12)
    end
  end)

  it("refuses pairs PyTorch does not register, and arguments that are not distributions", function()
    has(err(D.kl_divergence, D.Normal(0, 1), D.Bernoulli(0.5)),
        "kl_divergence: no KL(p || q) is implemented for p type Normal and q type Bernoulli")
    has(err(D.kl_divergence, D.Categorical(ember.ones(2)), D.OneHotCategorical(ember.ones(2))), "q type OneHotCategorical")
    has(err(D.kl_divergence, 1, D.Normal(0, 1)), "kl_divergence: p must be a distribution, got number")
    has(err(D.kl_divergence, D.Normal(0, 1)), "kl_divergence: q must be a distribution, got nil")
    has(err(D.kl_divergence, D.MultivariateNormal(ember.zeros(2), ember.eye(2)),
            D.MultivariateNormal(ember.zeros(3), ember.eye(3))),
        "kl_divergence: the two MultivariateNormals have different event shapes: [2] vs [3]")
    local a = D.Independent(D.Normal(ember.zeros(2, 2), 1), 1)
    local b = D.Independent(D.Normal(ember.zeros(2, 2), 1), 2)
    has(err(D.kl_divergence, a, b), "different reinterpreted_batch_ndims (1 vs 2)")
  end)

  it("register_kl adds a pair, as a call or as a decorator", function()
    local f = D.register_kl(D.Exponential, D.Bernoulli, function(p, q) return p.rate + q.probs end)
    assert.are.equal("function", type(f))
    h.check(D.kl_divergence(D.Exponential(2), D.Bernoulli(0.25)), 2.25)
    D.register_kl(D.Poisson, D.Normal)(function(p, q) return p.rate - q.loc end)
    h.check(D.kl_divergence(D.Poisson(3), D.Normal(1, 1)), 2)
    has(err(D.register_kl, D.Normal, 3), "register_kl: argument 2 must be a distribution class")
    has(err(D.register_kl, D.Normal(0, 1), D.Normal), "register_kl: argument 1 must be a distribution class")
    has(err(D.register_kl, D.Normal, D.Normal, 5), "register_kl: argument 3 must be a function")
  end)
end)

describe("distributions: random calls fail clearly", function()
  local function random_arg()
    local choices = {
      function() return ember.randn(3) end,
      function() return ember.rand(2, 3):to("float64") end,
      function() return ember.tensor(math.random() * 4 - 1) end,
      function() return ember.arange(3) end,
      function() return ember.tensor({true, false}) end,
      function() return ember.zeros(0, 3) end,
      function() return ember.eye(3) end,
      function() return math.random(-2, 4) end,
      function() return math.random() * 2 - 0.5 end,
      function() return "x" end,
      function() return {} end,
      function() return {2, 1} end,
      function() return nil end,
      function() return true end,
      function() return math.huge end,
      function() return {validate_args = false} end,
      function() return {logits = ember.randn(3)} end,
      function() return D.Normal(0, 1) end,
    }
    return choices[math.random(#choices)]()
  end
  local classes = {"Normal", "LogNormal", "Uniform", "Exponential", "Laplace", "Bernoulli", "Categorical",
                   "OneHotCategorical", "Poisson", "MultivariateNormal", "Independent"}
  local methods = {"sample", "rsample", "log_prob", "cdf", "icdf", "entropy", "perplexity", "expand",
                   "enumerate_support"}
  local function args(n)
    local a = {}
    for i = 1, n do a[i] = random_arg() end
    return a
  end
  local function try(prefix, f, a, n)
    local ok, e = pcall(f, table.unpack(a, 1, n))
    if ok then return e end
    local msg = tostring(e):gsub("^[^:]+:%d+: ", "")
    assert(msg:sub(1, #prefix + 2) == prefix .. ": ", prefix .. " raised an unclear error: " .. msg)
  end
  it("constructors, methods and kl_divergence", function()
    math.randomseed(42)
    ember.manual_seed(42)
    for _ = 1, 3000 do
      local name = classes[math.random(#classes)]
      local n = math.random(0, 3)
      local d = try(name, D[name], args(n), n)
      if d then
        local m = methods[math.random(#methods)]
        local k = math.random(0, 2)
        local a = args(k)
        table.insert(a, 1, d)
        try(name, d[m], a, k + 1)
        local oname = classes[math.random(#classes)]
        local other = try(oname, D[oname], args(2), 2)
        if other then try("kl_divergence", D.kl_divergence, {d, other}, 2) end
      end
    end
  end)
end)

describe("distributions on a CUDA device", function()
  if not ember.cuda.is_available() then
    pending("no CUDA device (EMBER_CUDA=emu runs these on the emulated one)")
    return
  end
  it("sample, log_prob, entropy, cdf and kl_divergence stay on the parameters' device", function()
    local dev = {device = "cuda"}
    local function z(...) return ember.zeros(..., dev) end
    ember.manual_seed(0)
    local cases = {
      D.Normal(z(3), 1), D.LogNormal(z(3), 1), D.Uniform(z(3), 2), D.Exponential(z(3) + 1), D.Laplace(z(3), 1),
      D.Bernoulli(z(3) + 0.3), D.Categorical(z(2, 3) + 1), D.OneHotCategorical(z(2, 3) + 1),
      D.Poisson(ember.tensor({0.5, 30}, dev)), D.MultivariateNormal(z(2), ember.eye(2, dev)),
      D.Independent(D.Normal(z(2, 3), 1), 1),
    }
    for _, d in ipairs(cases) do
      local x = d:sample({4})
      assert(x.device:find("^cuda"), d._name .. ": sample on " .. x.device)
      local cpu = d:log_prob(x):cpu()
      assert(cpu:isfinite():all():item(), d._name .. ": log_prob of its own samples")
      if d._name ~= "Poisson" then assert(d:entropy().device:find("^cuda"), d._name .. ": entropy") end
    end
    h.check(D.kl_divergence(cases[1], D.Normal(z(3) + 1, 2)):cpu(), {0.4431, 0.4431, 0.4431}, 1e-4)
    h.check(D.kl_divergence(cases[10], D.MultivariateNormal(z(2) + 1, ember.eye(2, dev) * 2)):cpu(), 0.6931, 1e-4)
    h.check(D.Normal(z(3), 1):cdf(z(3)):cpu(), {0.5, 0.5, 0.5})
  end)
end)
