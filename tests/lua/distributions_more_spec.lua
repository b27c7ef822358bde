-- distributions_more_spec.lua — Cauchy, HalfNormal, HalfCauchy, Gumbel, Geometric, Gamma, Chi2,
-- StudentT, Beta and Dirichlet against PyTorch 2.15
-- (scripts/fixtures/make_distributions_more_fixtures.py): log_prob (and -inf outside the
-- half distributions' support without validation), cdf, icdf, entropy, mean, mode, variance,
-- the KL divergences PyTorch registers among them and Normal; samples' statistics and
-- rsample's gradient to the parameters; the validation errors.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local D = ember.distributions
local FX = h.fixture("distributions_more.lua")

local function t(v) return ember.tensor(v, {dtype = "float64"}) end

local function build(name, validate)
  local o = validate == false and {validate_args = false} or nil
  if name:match("^Half") then return D[name](t(FX.scale), o) end
  return D[name](t(FX.loc), t(FX.scale), o)
end

local flat = h.flat

local function close(what, got, want) h.check_flat(got, flat(want), what, 1e-13) end

describe("Cauchy, HalfNormal, HalfCauchy, Gumbel against PyTorch 2.15", function()
  for name, want in pairs(FX.cases) do
    it(name .. ": densities, quantiles and moments", function()
      local d = build(name)
      local half = name:match("^Half")
      close("log_prob", d:log_prob(t(half and {0.3, 0.0, 2.5} or FX.values)), want.log_prob)
      local absv = {}
      for i, v in ipairs(FX.values) do absv[i] = math.abs(v) end
      close("cdf", d:cdf(t(absv)), want.cdf)
      close("icdf", d:icdf(t(FX.probs)), want.icdf)
      close("entropy", d:entropy(), want.entropy)
      for _, k in ipairs({"mean", "mode", "variance"}) do close(k, d[k], want[k]) end
      if half then
        close("log_prob outside the support", build(name, false):log_prob(t({-0.5, -1, -2})), want.log_prob_out)
        has(err(function() local _ = d:log_prob(t({-0.5, 1, 1})) end), name, "support", "distributions_more_spec.lua:")
      end
    end)
  end

  it("the KL divergences", function()
    local l2, s2 = t(FX.loc2), t(FX.scale2)
    local pairs_ = {
      Cauchy_Cauchy = {D.Cauchy(t(FX.loc), t(FX.scale)), D.Cauchy(l2, s2)},
      Gumbel_Gumbel = {D.Gumbel(t(FX.loc), t(FX.scale)), D.Gumbel(l2, s2)},
      HalfNormal_HalfNormal = {D.HalfNormal(t(FX.scale)), D.HalfNormal(s2)},
      Gumbel_Normal = {D.Gumbel(t(FX.loc), t(FX.scale)), D.Normal(l2, s2)},
      Normal_Gumbel = {D.Normal(t(FX.loc), t(FX.scale)), D.Gumbel(l2, s2)},
    }
    for k, pq in pairs(pairs_) do close(k, D.kl_divergence(pq[1], pq[2]), FX.kl[k]) end
  end)

  it("samples: their medians and quartiles, and rsample's gradient reaches loc and scale", function()
    ember.manual_seed(5)
    for _, name in ipairs({"Cauchy", "Gumbel", "HalfNormal", "HalfCauchy"}) do
      local d = build(name)
      local x = d:sample({20000})
      assert.are.same({20000, 3}, x.shape)
      -- the empirical quartiles against icdf's (n = 20000: a quartile's error is ~0.01 in probability)
      for _, p in ipairs({0.25, 0.5, 0.75}) do
        local got = d:cdf(x:sort(1):select(1, math.floor(p * 20000)))
        assert(got:sub(p):abs():max():item() < 0.02, name .. " quantile " .. p .. ": " .. tostring(got))
      end
    end
    local loc, scale = t({0.5}):requires_grad_(), t({2}):requires_grad_()
    local x = D.Gumbel(loc, scale):rsample({5})
    x:sum():backward()
    assert.are.equal(5, loc.grad:item())                       -- d x / d loc = 1
    h.close_tensors("d x / d scale", scale.grad, ((x:detach() - 0.5) / 2):sum():view(1), 1e-12)   -- (x - loc) / scale
  end)

  it("Geometric: log_prob (p = 1 at 0 included), entropy, moments, KL, samples", function()
    local G = FX.geometric
    local g = D.Geometric(t(G.probs))
    close("log_prob", g:log_prob(t(G.values)), G.log_prob)
    close("entropy", g:entropy(), G.entropy)
    for _, k in ipairs({"mean", "mode", "variance"}) do close(k, g[k], G[k]) end
    close("kl", D.kl_divergence(g, D.Geometric({logits = t(G.logits2)})), G.kl)
    ember.manual_seed(6)
    local x = D.Geometric(t({0.3})):sample({40000})
    -- mean 1 / p - 1 = 2.333, standard deviation sqrt(7.78): the mean of 40000 within 0.05
    assert(math.abs(x:mean():item() - 7 / 3) < 0.05, tostring(x:mean()))
    assert.are.equal(0, (x - x:floor()):abs():max():item())
    has(err(function() local _ = D.Geometric(0) end), "Geometric: expected parameter probs", "(0, 1]",
        "distributions_more_spec.lua:")
  end)

  it("Gamma, Chi2 and StudentT: densities, cdf, entropy, moments, KL", function()
    local G, S = FX.gamma, FX.studentt
    local g = D.Gamma(t(G.concentration), t(G.rate))
    close("log_prob", g:log_prob(t(G.values)), G.log_prob)
    h.check_flat(g:cdf(t(G.values)), G.cdf, "cdf", 2e-12)                 -- through gammainc
    close("entropy", g:entropy(), G.entropy)
    for _, k in ipairs({"mean", "mode", "variance"}) do close(k, g[k], G[k]) end
    close("kl", D.kl_divergence(g, D.Gamma(t(G.rate), t(G.concentration))), G.kl)
    local c = D.Chi2(t(G.concentration))
    close("chi2 log_prob", c:log_prob(t(G.values)), G.chi2_log_prob)
    close("chi2 entropy", c:entropy(), G.chi2_entropy)
    close("chi2 mode", c.mode, G.chi2_mode)
    local st = D.StudentT(t(S.df), t(FX.loc), t(FX.scale))
    close("studentt log_prob", st:log_prob(t(FX.values)), S.log_prob)
    close("studentt entropy", st:entropy(), S.entropy)
    close("studentt mean", st.mean, S.mean)
    close("studentt variance", st.variance, S.variance)
    assert.are.same({}, D.StudentT(3.0).batch_shape)                        -- loc 0, scale 1 by default
  end)

  it("gamma draws: their moments, and PyTorch's implicit gradient d x / d alpha", function()
    ember.manual_seed(8)
    for _, a in ipairs({0.3, 1.0, 4.5, 50.0}) do
      local x = D.Gamma(t({a}), t({1.0})):sample({40000})
      -- mean a, variance a: the mean of 40000 within 4 standard errors
      assert(math.abs(x:mean():item() - a) < 4 * math.sqrt(a / 40000), a .. ": " .. tostring(x:mean()))
    end
    local GG = FX.gamma_grad
    local alpha = t(GG.alpha):view(-1, 1):expand(#GG.alpha, #GG.x):contiguous()
    local x = t(GG.x):view(1, -1):expand(#GG.alpha, #GG.x):contiguous()
    local want = {}
    for _, row in ipairs(GG.grad) do for _, v in ipairs(row) do want[#want + 1] = v end end
    h.check_flat(require("ember.distributions.continuous")._standard_gamma_grad(alpha, x), want,
                 "standard_gamma_grad", 1e-10)
    -- StudentT through a Chi2 draw: variance scale^2 df / (df - 2) = 4 * 5 / 3
    local st = D.StudentT(t({5.0}), t({1.0}), t({2.0})):rsample({40000})
    assert(math.abs(st:var():item() - 20 / 3) < 0.4, tostring(st:var()))
    -- the reparameterised gradient: E[d x / d alpha] = d E[x] / d alpha = 1 / rate
    local conc = t({2.5}):requires_grad_()
    D.Gamma(conc, t({2.0})):rsample({40000}):mean():backward()
    assert(math.abs(conc.grad:item() - 0.5) < 0.01, tostring(conc.grad))
  end)

  it("Beta and Dirichlet: densities, entropy, moments, KL", function()
    local Bf, Df, G = FX.beta, FX.dirichlet, FX.gamma
    local b = D.Beta(t(G.concentration), t(G.rate))
    close("beta log_prob", b:log_prob(t(Bf.values)), Bf.log_prob)
    close("beta entropy", b:entropy(), Bf.entropy)
    for _, k in ipairs({"mean", "mode", "variance"}) do close("beta " .. k, b[k], Bf[k]) end
    close("beta kl", D.kl_divergence(b, D.Beta(t(G.rate), t(G.concentration))), Bf.kl)
    local d = D.Dirichlet(t(Df.concentration))
    assert.are.same({2}, d.batch_shape)
    assert.are.same({3}, d.event_shape)
    close("dirichlet log_prob", d:log_prob(t(Df.values)), Df.log_prob)
    close("dirichlet entropy", d:entropy(), Df.entropy)
    for _, k in ipairs({"mean", "mode", "variance"}) do close("dirichlet " .. k, d[k], Df[k]) end
    close("dirichlet kl", D.kl_divergence(d, D.Dirichlet(t(Df.concentration):flip(-1))), Df.kl)
  end)

  it("Dirichlet draws: on the simplex, their means, and PyTorch's implicit gradient", function()
    ember.manual_seed(9)
    local c = t({0.5, 2, 3})
    local x = D.Dirichlet(c):sample({40000})
    h.close_tensors("sums", x:sum(-1), ember.ones(40000, {dtype = "float64"}), 1e-12)
    h.close_tensors("means", x:mean(1), c / 5.5, 0.01)
    local beta = D.Beta(t({2.0}), t({3.0})):sample({40000})
    assert(math.abs(beta:mean():item() - 0.4) < 0.01)
    local DG = FX.dirichlet_grad
    local got = require("ember.distributions.continuous")._dirichlet_grad(t(DG.x), t(DG.alpha), t(DG.total))
    h.check_flat(got, DG.grad, "dirichlet_grad", 1e-9)
    -- reparameterised: d E[x_1] / d alpha_1 = beta / total^2 = 3 / 25 for Beta(2, 3)
    local a = t({2.0}):requires_grad_()
    D.Beta(a, t({3.0})):rsample({40000}):mean():backward()
    assert(math.abs(a.grad:item() - 3 / 25) < 0.01, tostring(a.grad))
  end)

  it("refuse bad parameters, naming them", function()
    has(err(function() local _ = D.Cauchy(0, -1) end), "Cauchy: expected parameter scale")
    has(err(function() local _ = D.HalfNormal(0) end), "HalfNormal: expected parameter scale")
  end)
end)
