-- ember.distributions.kl — kl_divergence(p, q) and register_kl, with the pairs
-- torch.distributions.kl registers among the classes ember has, written with
-- PyTorch's formulas (the infinite cases too: a q whose support misses part of p's).
--
-- Lookup: p's class, then its parents, each against q's class and its parents;
-- the first registered pair wins (PyTorch orders matches the same way when one
-- is more specific on both sides, and warns when it must choose).
local ember = require "ember"
local B = require "ember.distributions.base"
local C = require "ember.distributions.continuous"
local D = require "ember.distributions.discrete"
local MV = require "ember.distributions.multivariate"
local TD = require "ember.distributions.transformed"

local F = ember.nn.functional
local raisef = B.raisef
local M = {}

local registry = {}   -- registry[P][Q] = function(p, q)

-- the class and its parents, nearest first
local function lineage(cls)
  local out = {}
  while type(cls) == "table" and #out < 32 do
    out[#out + 1] = cls
    if cls == B.Distribution then break end
    local mt = getmetatable(cls)
    cls = mt and mt.__index
  end
  return out
end

local function is_distribution_class(v)
  if type(v) ~= "table" or rawget(v, "_props") == nil then return false end
  local l = lineage(v)
  return l[#l] == B.Distribution
end

local function register(P, Q, fn)
  registry[P] = registry[P] or {}
  registry[P][Q] = fn
  return fn
end

function M.register_kl(P, Q, fn)
  for i, c in ipairs({P, Q}) do
    if not is_distribution_class(c) then
      raisef("register_kl: argument %d must be a distribution class (such as Normal), got %s", i, type(c))
    end
  end
  if fn == nil then return function(f) return M.register_kl(P, Q, f) end end
  if type(fn) ~= "function" then raisef("register_kl: argument 3 must be a function, got %s", type(fn)) end
  return register(P, Q, fn)
end

function M.kl_divergence(p, q)
  for _, a in ipairs({{"p", p}, {"q", q}}) do
    if not B.is_distribution(a[2]) then
      raisef("kl_divergence: %s must be a distribution, got %s", a[1], type(a[2]))
    end
  end
  for _, cp in ipairs(lineage(getmetatable(p))) do
    local row = registry[cp]
    if row then
      for _, cq in ipairs(lineage(getmetatable(q))) do
        if row[cq] then
          if not B.broadcast_shapes(p.batch_shape, q.batch_shape) then
            raisef("kl_divergence: the batch shapes of p and q cannot be broadcast together: %s and %s",
                   B.show(p.batch_shape), B.show(q.batch_shape))
          end
          return row[cq](p, q)
        end
      end
    end
  end
  raisef("kl_divergence: no KL(p || q) is implemented for p type %s and q type %s", p._name, q._name)
end

local kl = M.kl_divergence
local INF = math.huge

local function infinite_like(t) return ember.full_like(t, INF) end

-- ---- pairs of the same class ------------------------------------------------------------

register(D.Bernoulli, D.Bernoulli, function(p, q)
  local t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
  t1 = ember.where(q.probs:eq(0), INF, t1)
  t1 = ember.where(p.probs:eq(0), 0, t1)
  local t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
  t2 = ember.where(q.probs:eq(1), INF, t2)
  t2 = ember.where(p.probs:eq(1), 0, t2)
  return t1 + t2
end)

local function kl_categorical(p, q)
  local t = p.probs * (p.logits - q.logits)
  t = ember.where(q.probs:eq(0), INF, t)
  t = ember.where(p.probs:eq(0), 0, t)
  return t:sum(-1)
end
register(D.Categorical, D.Categorical, kl_categorical)
register(D.OneHotCategorical, D.OneHotCategorical, function(p, q) return kl_categorical(p._categorical, q._categorical) end)

local function kl_normal(p, q)
  local var_ratio = (p.scale / q.scale) ^ 2
  local t1 = ((p.loc - q.loc) / q.scale) ^ 2
  return 0.5 * (var_ratio + t1 - 1 - var_ratio:log())
end
register(C.Normal, C.Normal, kl_normal)
-- two LogNormals are the same exp of their Normals: the KL of the Normals
register(C.LogNormal, C.LogNormal, function(p, q) return kl_normal(p.base_dist, q.base_dist) end)
register(C.HalfNormal, C.HalfNormal, function(p, q) return kl_normal(p.base_dist, q.base_dist) end)

-- Chyzak and Nielsen (arXiv 1905.10965), as PyTorch's
register(C.Cauchy, C.Cauchy, function(p, q)
  return ((p.scale + q.scale) ^ 2 + (p.loc - q.loc) ^ 2):log() - (4 * p.scale * q.scale):log()
end)

local EULER = 0.57721566490153286061
local function kl_gamma(p, q)
  local t1 = q.concentration * (p.rate / q.rate):log()
  local t2 = q.concentration:lgamma() - p.concentration:lgamma()
  local t3 = (p.concentration - q.concentration) * p.concentration:digamma()
  local t4 = (q.rate - p.rate) * (p.concentration / p.rate)
  return t1 + t2 + t3 + t4
end
register(C.Gamma, C.Gamma, kl_gamma)
-- PyTorch's Chi2 is a Gamma subclass, so its pairs are Gamma's
register(C.Chi2, C.Chi2, function(p, q) return kl_gamma(p._gamma, q._gamma) end)
register(C.Chi2, C.Gamma, function(p, q) return kl_gamma(p._gamma, q) end)
register(C.Gamma, C.Chi2, function(p, q) return kl_gamma(p, q._gamma) end)
register(C.Beta, C.Beta, function(p, q)
  local sp, sq = p.concentration1 + p.concentration0, q.concentration1 + q.concentration0
  local t1 = q.concentration1:lgamma() + q.concentration0:lgamma() + sp:lgamma()
  local t2 = p.concentration1:lgamma() + p.concentration0:lgamma() + sq:lgamma()
  local t3 = (p.concentration1 - q.concentration1) * p.concentration1:digamma()
  local t4 = (p.concentration0 - q.concentration0) * p.concentration0:digamma()
  return t1 - t2 + t3 + t4 + (sq - sp) * sp:digamma()
end)
register(C.Dirichlet, C.Dirichlet, function(p, q)
  local sp, sq = p.concentration:sum(-1), q.concentration:sum(-1)
  local t1 = sp:lgamma() - sq:lgamma()
  local t2 = (p.concentration:lgamma() - q.concentration:lgamma()):sum(-1)
  local t4 = p.concentration:digamma() - sp:digamma():unsqueeze(-1)
  return t1 - t2 + ((p.concentration - q.concentration) * t4):sum(-1)
end)
register(D.Geometric, D.Geometric, function(p, q)
  return -p:entropy() - (-q.probs):log1p() / p.probs - q.logits
end)
register(C.Gumbel, C.Gumbel, function(p, q)
  local ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
  return -ct1:log() - ct2 + ct3 + ct1 * EULER + (ct2 + (1 + ct1):lgamma() - ct3):exp() - (1 + EULER)
end)
register(C.Gumbel, C.Normal, function(p, q)
  local r = p.scale / q.scale
  local t1 = (r / math.sqrt(2 * math.pi)):log()
  local t2 = (r * (math.pi * 0.5)) ^ 2 / 3
  local t3 = ((p.loc + p.scale * EULER - q.loc) / q.scale) ^ 2 * 0.5
  return -t1 + t2 + t3 - (EULER + 1)
end)
register(C.Normal, C.Gumbel, function(p, q)
  local m, v, l = p.loc / q.scale, (p.scale / q.scale) ^ 2, q.loc / q.scale
  return -v:log() * 0.5 + (m - l) + (-m + v * 0.5 + l):exp() - 0.5 * (1 + math.log(2 * math.pi))
end)

register(MV.MultivariateNormal, MV.MultivariateNormal, function(p, q)
  local n, m = p.event_shape[1], q.event_shape[1]
  if n ~= m then
    raisef("kl_divergence: the two MultivariateNormals have different event shapes: [%d] vs [%d]", n, m)
  end
  local pL, qL = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
  local half_term1 = MV.half_log_det(qL) - MV.half_log_det(pL)
  local term2 = MV.trace_xxt(MV.solve_lower(qL, pL))
  local term3 = MV.mahalanobis(qL, q.loc - p.loc)
  return half_term1 + 0.5 * (term2 + term3 - n)
end)

register(C.Uniform, C.Uniform, function(p, q)
  local result = ((q.high - q.low) / (p.high - p.low)):log()
  return ember.where(q.low:gt(p.low):logical_or(q.high:lt(p.high)), INF, result)
end)

register(C.Exponential, C.Exponential, function(p, q)
  local rate_ratio = q.rate / p.rate
  return -rate_ratio:log() + rate_ratio - 1
end)

register(C.Laplace, C.Laplace, function(p, q)
  local scale_ratio = p.scale / q.scale
  local loc_abs_diff = (p.loc - q.loc):abs()
  local t1 = -scale_ratio:log()
  local t2 = loc_abs_diff / q.scale
  local t3 = scale_ratio * (-loc_abs_diff / p.scale):exp()
  return t1 + t2 + t3 - 1
end)

register(D.Poisson, D.Poisson, function(p, q)
  return p.rate * (p.rate:log() - q.rate:log()) - (p.rate - q.rate)
end)

register(MV.Independent, MV.Independent, function(p, q)
  local n, m = p.reinterpreted_batch_ndims, q.reinterpreted_batch_ndims
  if n ~= m then
    raisef("kl_divergence: no KL(p || q) is implemented for Independent distributions with different "
           .. "reinterpreted_batch_ndims (%d vs %d)", n, m)
  end
  return B.sum_rightmost(kl(p.base_dist, q.base_dist), n)
end)

register(D.Binomial, D.Binomial, function(p, q)
  if p.total_count:lt(q.total_count):any():item() then
    raisef("kl_divergence: KL between Binomials where q.total_count > p.total_count is not implemented")
  end
  local k = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs):log1p() - (-q.probs):log1p())
  return ember.where(p.total_count:gt(q.total_count), INF, k)
end)

register(TD.Pareto, TD.Pareto, function(p, q)
  local alpha_ratio = q.alpha / p.alpha
  local r = q.alpha * (p.scale / q.scale):log() - alpha_ratio:log() + alpha_ratio - 1
  return ember.where(p.scale:lt(q.scale), INF, r)
end)

-- the same transforms of two bases: the bases' divergence
register(TD.TransformedDistribution, TD.TransformedDistribution, function(p, q)
  local same = #p.transforms == #q.transforms
  for i = 1, same and #p.transforms or 0 do same = same and p.transforms[i]:equals(q.transforms[i]) end
  if not same then
    raisef("kl_divergence: no KL(p || q) is implemented for TransformedDistributions with different transforms")
  end
  if B.show(p.event_shape) ~= B.show(q.event_shape) then
    raisef("kl_divergence: no KL(p || q) is implemented for TransformedDistributions with different event shapes "
           .. "(%s and %s)", B.show(p.event_shape), B.show(q.event_shape))
  end
  return kl(p.base_dist, q.base_dist)
end)

-- ---- pairs of different classes -----------------------------------------------------------

register(C.Normal, C.Laplace, function(p, q)
  local loc_diff = p.loc - q.loc
  local scale_ratio = p.scale / q.scale
  local loc_diff_scale_ratio = loc_diff / p.scale
  local t1 = scale_ratio:log()
  local t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * loc_diff_scale_ratio ^ 2):exp()
  local t3 = loc_diff * (math.sqrt(0.5) * loc_diff_scale_ratio):erf()
  return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))
end)

register(C.Uniform, C.Normal, function(p, q)
  local common_term = p.high - p.low
  local t1 = (math.sqrt(math.pi * 2) * q.scale / common_term):log()
  local t2 = common_term ^ 2 / 12
  local t3 = ((p.high + p.low - 2 * q.loc) / 2) ^ 2
  return t1 + 0.5 * (t2 + t3) / q.scale ^ 2
end)

register(C.Uniform, C.Exponential, function(p, q)
  local result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate):log()
  return ember.where(p.low:lt(0), INF, result)
end)

register(C.Exponential, C.Normal, function(p, q)
  local var_normal = q.scale ^ 2
  local rate_sqr = p.rate ^ 2
  local t1 = 0.5 * (rate_sqr * var_normal * 2 * math.pi):log()
  local t2 = rate_sqr:reciprocal()
  local t3 = q.loc / p.rate
  local t4 = q.loc ^ 2 * 0.5
  return t1 - 1 + (t2 - t3 + t4) / var_normal
end)

register(C.Laplace, C.Normal, function(p, q)
  local var_normal = q.scale ^ 2
  local scale_sqr_var_ratio = p.scale ^ 2 / var_normal
  local t1 = 0.5 * (2 * scale_sqr_var_ratio / math.pi):log()
  local t2 = 0.5 * p.loc ^ 2
  local t3 = p.loc * q.loc
  local t4 = 0.5 * q.loc ^ 2
  return -t1 + scale_sqr_var_ratio + (t2 - t3 + t4) / var_normal - 1
end)

register(D.Bernoulli, D.Poisson, function(p, q)
  return -p:entropy() - (p.probs * q.rate:log() - q.rate)
end)

-- q's support misses part of p's: infinite, in p's batch shape
for _, c in ipairs({{C.Normal, C.Uniform, "loc"}, {C.Normal, C.Exponential, "loc"}, {C.Laplace, C.Uniform, "loc"},
                    {C.Laplace, C.Exponential, "loc"}, {C.Exponential, C.Uniform, "rate"},
                    {D.Poisson, D.Bernoulli, "rate"}}) do
  local param = c[3]
  register(c[1], c[2], function(p) return infinite_like(p[param]) end)
end

return M
