-- distributions_transformed_spec.lua — distributions.transforms, TransformedDistribution,
-- Weibull, Pareto, Binomial and Multinomial against PyTorch 2.15
-- (scripts/fixtures/make_distributions_transformed_fixtures.py): each transform's values,
-- inverse, log-det and sign; a tanh-squashed Normal's log_prob with its gradient, cdf and
-- icdf, and a decreasing map's; the families' densities and moments; the KL pairs. The
-- samplers against their exact probabilities (Binomial's two regimes, by total variation),
-- the cache's identity, and the errors.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local D = ember.distributions
local T = D.transforms
local FX = h.fixture("distributions_transformed.lua")

local function t(v) return ember.tensor(v, {dtype = "float64"}) end

local flat = h.flat

local function close(what, got, want, tol)
  if type(got) == "number" then got = t(got) end
  h.check_flat(got, flat(want), what, tol or 1e-13)
end

local TRANSFORMS = {
  exp = function() return T.ExpTransform() end,
  sigmoid = function() return T.SigmoidTransform() end,
  tanh = function() return T.TanhTransform() end,
  softplus = function() return T.SoftplusTransform() end,
  affine = function() return T.AffineTransform(0.5, -3.0) end,
  affine_tensor = function() return T.AffineTransform(t({1, 2, 3, 4, 5}), t({0.5, -1, 2, 3, -0.25})) end,
  power = function() return T.PowerTransform(2.5) end,
  power_tensor = function() return T.PowerTransform(t({0.5, -1, 2, 3, 1.5})) end,
  compose = function()
    return T.ComposeTransform({T.AffineTransform(0.3, 0.8), T.TanhTransform(), T.AffineTransform(1.0, 2.0)})
  end,
  affine_event = function() return T.AffineTransform(t({1, 2, 3}), t({0.5, -2, 4}), {event_dim = 1}) end,
  independent = function() return T.IndependentTransform(T.SigmoidTransform(), 1) end,
}

describe("distributions.transforms against PyTorch 2.15", function()
  for name, make in pairs(TRANSFORMS) do
    it(name .. ": y, its inverse, the log-det and the sign", function()
      local want = FX.transforms[name]
      local tr, x = make(), t(want.x)
      local y = tr(x)
      close("y", y, want.y)
      -- PyTorch keeps a number exponent as a float32 tensor, so its inverse power rounds
      -- 1/2.5 to float32 (2e-8 off); ember's inverse is x again (README, distributions)
      close("inverse", tr.inv(y), name == "power" and want.x or want.inv, 1e-12)
      close("log_abs_det_jacobian", tr:log_abs_det_jacobian(x, y), want.ladj, 1e-12)
      local s = tr.sign
      if ember.is_tensor(s) then close("sign", s, want.sign) else assert.are.equal(want.sign, s) end
      -- the inverse's log-det is the negative at the swapped points
      local neg = {}
      for i, v in ipairs(flat(want.ladj)) do neg[i] = -v end
      close("inverse log-det", tr.inv:log_abs_det_jacobian(y, x), neg, 1e-12)
    end)
  end

  it("softmax over the last dim (not bijective), and shapes", function()
    local sm = T.SoftmaxTransform()
    close("softmax", sm(t(FX.transforms.softmax.x)), FX.transforms.softmax.y)
    assert.is_false(sm.bijective)
    assert.are.same({2, 3}, T.AffineTransform(0, t({1, 2, 3})):forward_shape({2, 1}))
    has(err(function() return sm:forward_shape({}) end), "SoftmaxTransform: too few dimensions")
  end)

  it("inv is one object whose inv is the transform; equals compares maps", function()
    local e = T.ExpTransform()
    assert.is_true(rawequal(e.inv, e.inv))
    assert.is_true(rawequal(e.inv.inv, e))
    assert.is_true(e:equals(T.ExpTransform()))
    assert.is_false(e:equals(T.TanhTransform()))
    assert.is_true(T.AffineTransform(1, 2):equals(T.AffineTransform(1, 2)))
    assert.is_false(T.AffineTransform(1, 2):equals(T.AffineTransform(1, 3)))
    assert.is_true(T.ComposeTransform({e, T.AffineTransform(0, t({1, 2}))})
                    :equals(T.ComposeTransform({T.ExpTransform(), T.AffineTransform(0, t({1, 2}))})))
    assert.are.equal("ExpTransform()", tostring(e))
  end)

  it("cache_size 1 returns the x that made y, without computing the inverse", function()
    local tr = T.TanhTransform({cache_size = 1})
    local x = t({0.5, 40.0})          -- tanh(40) is 1.0 in float64: atanh would give inf
    local y = tr(x)
    assert.are.equal(1.0, y:tolist()[2])
    assert.is_true(rawequal(tr.inv(y), x))
    assert.is_true(rawequal(tr(x), y))
    assert.are.equal(math.huge, T.TanhTransform().inv(y):tolist()[2])
    assert.are.equal(1, tr.cache_size)
    assert.are.equal(0, tr:with_cache(0).cache_size)
  end)

  it("ComposeTransform's event dims come from its parts", function()
    local c = T.ComposeTransform({T.AffineTransform(0, t({1, 2}), {event_dim = 1}), T.ExpTransform()})
    assert.are.equal(1, c.domain.event_dim)
    assert.are.equal(1, c.codomain.event_dim)
    assert.are.equal(0, T.ComposeTransform({T.ExpTransform()}).domain.event_dim)
    -- the log-det sums over the event: log 1 + log 2 + the sum of x
    local x = t({{0.5, -1.0}})
    -- log 1 + log 2 from the scale, then exp's log-det: the sum of its input, 0.5 * 1 + -1 * 2
    close("compose log-det", c:log_abs_det_jacobian(x, c(x)), {math.log(2) + 0.5 - 2.0}, 1e-14)
    local id = T.identity_transform
    assert.is_true(rawequal(id(x), x))
  end)

  it("refuses bad arguments, naming them", function()
    has(err(function() return T.TanhTransform({cache_size = 2}) end), "TanhTransform: cache_size must be 0 or 1, got 2")
    has(err(function() return T.ComposeTransform({T.ExpTransform(), 3}) end), "ComposeTransform: parts[2] must be a transform")
    has(err(function() return T.AffineTransform(0, 1, {event_dim = -1}) end), "event_dim must be a non-negative integer")
    has(err(function() return T.AffineTransform("a", 1) end), "AffineTransform: loc must be a number or a tensor, got string")
    has(err(function() local _ = T.ExpTransform()(3) end), "ExpTransform: x must be a tensor, got number",
        "distributions_transformed_spec.lua:")
    has(err(function() return T.AbsTransform().sign end), "AbsTransform: sign")
    has(err(function() return T.AffineTransform(0, ember.ones(3)):forward_shape({2}) end),
        "AffineTransform: shapes [2] and [3] do not broadcast")
    has(err(function() return T.ComposeTransform(5) end), "ComposeTransform: parts must be a list of transforms, got number")
    has(err(function() return T.IndependentTransform(T.ExpTransform(), -1) end),
        "IndependentTransform: reinterpreted_batch_ndims must be a non-negative integer, got -1")
    has(err(function() return T.IndependentTransform(3, 1) end), "IndependentTransform: base_transform must be a transform")
  end)
end)

describe("TransformedDistribution against PyTorch 2.15", function()
  it("a tanh-squashed Normal: log_prob and its gradient, cdf, icdf", function()
    local want = FX.tanh_normal
    local loc, scale = t(FX.loc):requires_grad_(), t(FX.scale):requires_grad_()
    local pi = D.TransformedDistribution(D.Normal(loc, scale), {T.TanhTransform()})
    local lp = pi:log_prob(t(want.values))
    close("log_prob", lp, want.log_prob, 1e-12)
    lp:sum():backward()
    close("d/dloc", loc.grad, want.grad_loc, 1e-12)
    close("d/dscale", scale.grad, want.grad_scale, 1e-12)
    close("cdf", pi:cdf(t(want.values)), want.cdf, 1e-12)
    close("icdf", pi:icdf(t({0.1, 0.5, 0.8})), want.icdf, 1e-12)
    assert(h.same(pi.batch_shape, {3}), "shape " .. tostring(pi.batch_shape))
    assert(h.same(pi.event_shape, {}), "shape " .. tostring(pi.event_shape))
    assert.are.equal("Interval(lower_bound=-1.0, upper_bound=1.0)", tostring(pi.support))
    assert.is_true(pi.has_rsample)
  end)

  it("a decreasing map (exp, then a negative scale) turns the cdf around", function()
    local want = FX.decreasing
    local d = D.TransformedDistribution(D.Normal(t(FX.loc), t(FX.scale)), {T.ExpTransform(), T.AffineTransform(0, -2)})
    close("log_prob", d:log_prob(t(want.values)), want.log_prob, 1e-12)
    close("cdf", d:cdf(t(want.values)), want.cdf, 1e-12)
    close("icdf", d:icdf(t({0.1, 0.5, 0.8})), want.icdf, 1e-12)
  end)

  it("samples through the cache: log_prob of a saturated tanh stays finite (SAC)", function()
    ember.manual_seed(3)
    local mu = t({30.0}):requires_grad_()
    local pi = D.TransformedDistribution(D.Normal(mu, 1), {T.TanhTransform({cache_size = 1})})
    local a = pi:rsample()
    assert.are.equal(1.0, a:tolist()[1])
    local x = pi.transforms[1].inv(a):tolist()[1]     -- the pre-tanh draw, from the cache
    local lp = pi:log_prob(a)
    -- by hand: the Normal's log density less log(1 - tanh(x)^2) = 2 (log 2 - x - log(1 + e^-2x))
    local want = -0.5 * (x - 30) ^ 2 - 0.5 * math.log(2 * math.pi) - 2 * (math.log(2) - x - math.log(1 + math.exp(-2 * x)))
    assert.is_true(math.abs(lp:item() - want) < 1e-9, tostring(lp:item()) .. " vs " .. want)
    lp:backward()
    assert.is_true(mu.grad:isfinite():all():item())
  end)

  it("expands its base and moves batch dims to the event where the transforms need it", function()
    local d = D.TransformedDistribution(D.Normal(t({0, 1}), 1), {T.ExpTransform()})
    local e = d:expand({3, 2})
    assert(h.same(e.batch_shape, {3, 2}), "shape " .. tostring(e.batch_shape))
    assert(h.same(e:sample():size(), {3, 2}), "shape " .. tostring(e:sample():size()))
    local v = D.TransformedDistribution(D.Normal(t({0, 1}), 1), {T.IndependentTransform(T.ExpTransform(), 1)})
    assert(h.same(v.batch_shape, {}), "shape " .. tostring(v.batch_shape))
    assert(h.same(v.event_shape, {2}), "shape " .. tostring(v.event_shape))
    close("vector log_prob", v:log_prob(t({1.0, 2.0})),
          {D.LogNormal(t({0, 1}), 1):log_prob(t({1.0, 2.0})):sum():item()}, 1e-14)
  end)

  it("refuses what is not a distribution or a transform, and values outside the support", function()
    has(err(function() return D.TransformedDistribution(3, {T.ExpTransform()}) end),
        "TransformedDistribution: base_distribution must be a distribution, got number")
    has(err(function() return D.TransformedDistribution(D.Normal(0, 1), {T.ExpTransform(), "x"}) end),
        "transforms must be a transform or a list of transforms, got a string at position 2")
    has(err(function() return D.TransformedDistribution(D.Normal(0.0, 1), 5) end),
        "TransformedDistribution: transforms must be a transform or a list of transforms, got number")
    has(err(function() return D.TransformedDistribution(D.Normal(0.0, 1), T.SoftmaxTransform()) end),
        "base_distribution needs to have shape with size at least 1, but got []")
    local d = D.TransformedDistribution(D.Normal(0.0, 1), {T.ExpTransform()})
    has(err(function() local _ = d:log_prob(t({-1.0})) end), "to be within the support (GreaterThan(lower_bound=0.0))",
        "distributions_transformed_spec.lua:")
  end)
end)

describe("Weibull and Pareto against PyTorch 2.15", function()
  for _, c in ipairs({{"weibull", "Weibull", "concentration"}, {"pareto", "Pareto", "alpha"}}) do
    it(c[2] .. ": densities, quantiles, moments and entropy", function()
      local want = FX[c[1]]
      local d = D[c[2]](t(FX.scale), t(want[c[3]]))
      close("log_prob", d:log_prob(t(want.values)), want.log_prob, 1e-12)
      close("cdf", d:cdf(t(want.values)), want.cdf, 1e-12)
      close("icdf", d:icdf(t({0.1, 0.5, 0.8})), want.icdf, 1e-12)
      for _, k in ipairs({"mean", "mode", "variance"}) do close(k, d[k], want[k], 1e-12) end
      close("entropy", d:entropy(), want.entropy, 1e-12)
      assert.are.equal(c[2], getmetatable(d)._name)
      assert(h.same(d:sample({5}):size(), {5, 3}), "shape " .. tostring(d:sample({5}):size()))
    end)
  end

  it("draws with the right mean (Weibull(2, 3): 2 Gamma(4/3); Pareto(1, 4): 4/3)", function()
    ember.manual_seed(5)
    local n = 40000
    local w = D.Weibull(2.0, 3.0):sample({n})
    local wm = 2 * math.exp(ember.tensor(4 / 3, {dtype = "float64"}):lgamma():item())
    local wsd = math.sqrt(4 * math.exp(ember.tensor(5 / 3, {dtype = "float64"}):lgamma():item()) - wm ^ 2)
    assert.is_true(math.abs(w:mean():item() - wm) < 5 * wsd / math.sqrt(n))
    local p = D.Pareto(1.0, 4.0):sample({n})
    assert.is_true(p:min():item() >= 1)
    assert.is_true(math.abs(p:mean():item() - 4 / 3) < 5 * math.sqrt(2 / 9) / math.sqrt(n))
  end)

  it("refuses parameters outside their constraints", function()
    has(err(function() return D.Weibull(t({1.0}), t({-1.0})) end),
        "Weibull: expected parameter concentration", "GreaterThan(lower_bound=0.0)")
    has(err(function() return D.Pareto(0.0, 1.0) end), "Pareto: expected parameter scale")
    has(err(function() return D.Pareto(1.0, 2.0):log_prob(t({0.5})) end), "within the support")
  end)
end)

describe("Binomial and Multinomial against PyTorch 2.15", function()
  it("Binomial from probs: log_prob, entropy, moments, enumerate_support", function()
    local want = FX.binomial
    local b = D.Binomial(10, t({0.1, 0.5, 0.8}))
    close("log_prob", b:log_prob(t(want.values)), want.log_prob, 1e-12)
    close("entropy", b:entropy(), want.entropy, 1e-12)
    for _, k in ipairs({"mean", "mode", "variance"}) do close(k, b[k], want[k], 1e-13) end
    close("support", b:enumerate_support(false), want.support)
    assert(h.same(b:enumerate_support():size(), {11, 3}), "shape " .. tostring(b:enumerate_support():size()))
  end)

  it("Binomial from logits, with a tensor total_count", function()
    local want = FX.binomial
    local b = D.Binomial(t(want.logits_counts), {logits = t(want.logits)})
    close("log_prob", b:log_prob(t(want.logits_values)), want.logits_log_prob, 1e-12)
    close("mean", b.mean, want.logits_mean, 1e-13)
    close("mode", b.mode, want.logits_mode)
    -- an int64 count takes the parameter's dtype, as PyTorch's type_as
    assert.are.equal("float64", D.Binomial(ember.tensor({3, 4}), t({0.5, 0.5})).total_count.dtype)
  end)

  -- the sampler's two regimes (inversion below count * p = 10, BTRS above; p > 1/2 through
  -- 1 - p) against the exact probabilities: the total variation distance of 40000 draws
  for _, c in ipairs({{20, 0.3}, {200, 0.4}, {60, 0.9}, {5, 0.97}}) do
    it(string.format("Binomial(%d, %g) draws follow its probabilities", c[1], c[2]), function()
      ember.manual_seed(7)
      local n, p, draws = c[1], c[2], 40000
      local s = D.Binomial(n, t({p})):sample({draws}):reshape(-1)
      local counts = ember.zeros(n + 1, {dtype = "float64"}):index_add(1, s:to("int64") + 1, ember.ones(draws, {dtype = "float64"}))
      local tv, logc = 0, 0
      local got = counts:tolist()
      for k = 0, n do
        if k > 0 then logc = logc + math.log(n - k + 1) - math.log(k) end
        local pk = math.exp(logc + k * math.log(p) + (n - k) * math.log(1 - p))
        tv = tv + math.abs(got[k + 1] / draws - pk)
      end
      assert.is_true(tv / 2 < 0.02, "total variation " .. tv / 2)
      assert.are.equal(0, s:frac():abs():sum():item())
    end)
  end

  it("Binomial's edge parameters: p = 0, p = 1, count 0, NaN", function()
    local s = D.Binomial(t({5, 5, 0, 5}), t({0, 1, 0.5, 0 / 0}), {validate_args = false}):sample({3})
    local rows = s:tolist()
    for _, r in ipairs(rows) do
      assert.are.equal(0, r[1])
      assert.are.equal(5, r[2])
      assert.are.equal(0, r[3])
      assert.is_true(r[4] ~= r[4])
    end
  end)

  it("Multinomial: log_prob (a class of probability 0 not drawn), entropy, moments", function()
    local want = FX.multinomial
    local m = D.Multinomial(10, t(want.probs))
    close("log_prob", m:log_prob(t(want.values)), want.log_prob, 1e-12)
    close("entropy", m:entropy(), want.entropy, 1e-12)
    close("mean", m.mean, want.mean, 1e-13)
    close("variance", m.variance, want.variance, 1e-13)
    assert(h.same(m.batch_shape, {2}), "shape " .. tostring(m.batch_shape))
    assert(h.same(m.event_shape, {3}), "shape " .. tostring(m.event_shape))
  end)

  it("Multinomial draws sum to total_count with the right means", function()
    ember.manual_seed(9)
    local s = D.Multinomial(12, t({0.1, 0.2, 0.7})):sample({20000})
    assert(h.same(s:size(), {20000, 3}), "shape " .. tostring(s:size()))
    assert.are.equal(0, (s:sum(-1) - 12):abs():max():item())
    local mean = s:mean(1):tolist()
    for i, p in ipairs({0.1, 0.2, 0.7}) do
      assert.is_true(math.abs(mean[i] - 12 * p) < 5 * math.sqrt(12 * p * (1 - p) / 20000), "class " .. i)
    end
  end)

  it("refuse what PyTorch refuses", function()
    has(err(function() return D.Binomial(10, t({0.5}), {logits = t({0.0})}) end),
        "Binomial: either probs or logits must be specified, but not both")
    has(err(function() return D.Binomial(10, t({0.5})):log_prob(t({11.0})) end), "within the support")
    has(err(function() return D.Binomial(t({2.0, 3.0}), t({0.5, 0.5})):entropy() end),
        "inhomogeneous total_count is not supported by entropy")
    has(err(function() return D.Multinomial(2.5, t({0.5, 0.5})) end), "Multinomial: total_count must be an integer")
    has(err(function() return D.Multinomial(3, t({0.5, 0.5})):log_prob(t({2.0, 2.0})) end), "within the support")
  end)
end)

describe("the KL divergences PyTorch registers among them", function()
  it("Binomial, Pareto, and two TransformedDistributions of the same transforms", function()
    close("binomial", D.kl_divergence(D.Binomial(10, t({0.1, 0.5, 0.8})), D.Binomial(t({10, 8, 10}), t({0.3, 0.3, 0.3}))),
          FX.kl.binomial, 1e-12)
    close("pareto", D.kl_divergence(D.Pareto(t(FX.scale), t(FX.pareto.alpha)), D.Pareto(t({0.4, 2, 1}), t({1, 1, 1}))),
          FX.kl.pareto, 1e-12)
    local a = D.TransformedDistribution(D.Normal(t(FX.loc), t(FX.scale)), {T.ExpTransform()})
    local b = D.TransformedDistribution(D.Normal(t({0, 0, 0}), t({1, 1, 1})), {T.ExpTransform()})
    close("transformed", D.kl_divergence(a, b), FX.kl.transformed, 1e-12)
    has(err(function() return D.kl_divergence(a, D.TransformedDistribution(D.Normal(0.0, 1), {T.SigmoidTransform()})) end),
        "different transforms")
    local function vec(n) return D.TransformedDistribution(D.Normal(ember.zeros(n), 1), T.IndependentTransform(T.ExpTransform(), 1)) end
    has(err(function() return D.kl_divergence(vec(2), vec(3)) end), "different event shapes ([2] and [3])")
    has(err(function() return D.kl_divergence(D.Binomial(5, 0.5), D.Binomial(6, 0.5)) end),
        "q.total_count > p.total_count is not implemented")
  end)
end)
