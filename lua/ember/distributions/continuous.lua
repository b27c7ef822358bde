-- ember.distributions.continuous — the univariate continuous distributions:
-- Normal, LogNormal, Uniform, Exponential, Laplace, Cauchy, HalfNormal,
-- HalfCauchy, Gumbel, with PyTorch's formulas
-- (torch/distributions/*.py), so values and gradients agree with it. Each
-- samples by the reparameterisation trick (loc + scale * eps, ...) over ember's
-- generator, so gradients flow from rsample's values to the parameters.
local ember = require "ember"
local B = require "ember.distributions.base"
local C = B.constraints

local class = B.class
local F = ember.nn.functional
local M = {}

local LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))

local function noise(self, kind, shape)
  return ember[kind](self:_extended_shape(shape), {dtype = self._dtype, device = self._device})
end

-------------------------------------------------------------------------------
-- Normal(loc, scale)

local NORMAL_ARGS = {"loc", "scale"}

-- a location-scale family on the real line (Normal, Laplace, Cauchy, Gumbel): its class
-- (with rsample), in M, with loc real, scale positive and mode loc; and its properties
local function location_scale(name)
  local cls = B.params_class(name, NORMAL_ARGS)
  cls.has_rsample = true
  M[name] = cls
  local props = cls._props
  props.arg_constraints = function() return {loc = C.real, scale = C.positive} end
  props.support = function() return C.real end
  props.mode = function(self) return self.loc end
  return cls, props
end

local Normal, P = location_scale("Normal")
P.mean = function(self) return self.loc end
P.stddev = function(self) return self.scale end
P.variance = function(self) return self.scale ^ 2 end

function Normal:_rsample(shape)
  return self.loc + noise(self, "randn", shape) * self.scale
end

function Normal:_log_prob(value)
  local var = self.scale ^ 2
  return -((value - self.loc) ^ 2) / (2 * var) - self.scale:log() - LOG_SQRT_2PI
end

function Normal:_cdf(value)
  return 0.5 * (1 + ((value - self.loc) * self.scale:reciprocal() / math.sqrt(2)):erf())
end

function Normal:_icdf(value)
  return self.loc + self.scale * (2 * value - 1):erfinv() * math.sqrt(2)
end

function Normal:_entropy()
  return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale:log()
end

-------------------------------------------------------------------------------
-- LogNormal(loc, scale): exp of a Normal(loc, scale), its base_dist (PyTorch's
-- TransformedDistribution with an ExpTransform, written out)

local LogNormal = class("LogNormal", nil, NORMAL_ARGS)
LogNormal.has_rsample = true
-- cdf takes 0 (PyTorch checks log(value) against the Normal's support, which -inf is in)
LogNormal._cdf_support = C.nonnegative
M.LogNormal = LogNormal

local function set_base(self, base_dist)
  rawset(self, "base_dist", base_dist)
  rawset(self, "loc", base_dist.loc)
  rawset(self, "scale", base_dist.scale)
  B.set_dtype(self, base_dist.loc)
end

function LogNormal:_init(...)
  local o = B.options("LogNormal", NORMAL_ARGS, NORMAL_ARGS, ...)
  local ts = B.broadcast_all("LogNormal", NORMAL_ARGS, {o.loc, o.scale})
  set_base(self, Normal(ts[1], ts[2], {validate_args = false}))
  B.init(self, self.base_dist.batch_shape, {}, o.validate_args)
  rawset(self.base_dist, "_validate_args", o.validate_args)
end

P = LogNormal._props
P.arg_constraints = function() return {loc = C.real, scale = C.positive} end
P.support = function() return C.positive end
P.mean = function(self) return (self.loc + self.scale ^ 2 / 2):exp() end
P.mode = function(self) return (self.loc - self.scale:square()):exp() end
P.variance = function(self)
  local scale_sq = self.scale ^ 2
  return scale_sq:expm1() * (2 * self.loc + scale_sq):exp()
end

LogNormal._expand = B.expand_with("base_dist", set_base)

function LogNormal:_rsample(shape) return self.base_dist:_rsample(shape):exp() end

-- log p(y) = log p_base(log y) - log y  (the Jacobian of exp)
function LogNormal:_log_prob(value)
  local x = value:log()
  return -x + self.base_dist:_log_prob(x)
end

function LogNormal:_cdf(value) return self.base_dist:_cdf(value:log()) end
function LogNormal:_icdf(value) return self.base_dist:_icdf(value):exp() end
function LogNormal:_entropy() return self.base_dist:_entropy() + self.loc end

-------------------------------------------------------------------------------
-- Uniform(low, high): the half-open interval [low, high)

local Uniform = B.params_class("Uniform", {"low", "high"})
Uniform.has_rsample = true
M.Uniform = Uniform

P = Uniform._props
P.arg_constraints = function(self) return {low = C.less_than(self.high), high = C.greater_than(self.low)} end
P.support = function(self) return C.interval(self.low, self.high) end
P.mean = function(self) return (self.high + self.low) / 2 end
P.mode = function(self) return self.high * (0 / 0) end
P.stddev = function(self) return (self.high - self.low) / 12 ^ 0.5 end
P.variance = function(self) return (self.high - self.low) ^ 2 / 12 end

function Uniform:_rsample(shape)
  return self.low + noise(self, "rand", shape) * (self.high - self.low)
end

function Uniform:_log_prob(value)
  local lb = self.low:le(value):to(self.low.dtype)
  local ub = self.high:gt(value):to(self.low.dtype)
  return (lb * ub):log() - (self.high - self.low):log()
end

function Uniform:_cdf(value)
  return ((value - self.low) / (self.high - self.low)):clamp(0, 1)
end

function Uniform:_icdf(value) return value * (self.high - self.low) + self.low end
function Uniform:_entropy() return (self.high - self.low):log() end

-------------------------------------------------------------------------------
-- Exponential(rate)

local Exponential = B.params_class("Exponential", {"rate"})
Exponential.has_rsample = true
M.Exponential = Exponential

P = Exponential._props
P.arg_constraints = function() return {rate = C.positive} end
P.support = function() return C.nonnegative end
P.mean = function(self) return self.rate:reciprocal() end
P.mode = function(self) return ember.zeros_like(self.rate) end
P.stddev = function(self) return self.rate:reciprocal() end
P.variance = function(self) return self.rate ^ -2 end

-- -log(1 - u) for u uniform on [0, 1) is a standard exponential, finite everywhere
function Exponential:_rsample(shape)
  return -(-noise(self, "rand", shape)):log1p() / self.rate
end

function Exponential:_log_prob(value) return self.rate:log() - self.rate * value end
function Exponential:_cdf(value) return 1 - (-self.rate * value):exp() end
function Exponential:_icdf(value) return -(-value):log1p() / self.rate end
function Exponential:_entropy() return 1.0 - self.rate:log() end

-------------------------------------------------------------------------------
-- Laplace(loc, scale)

local Laplace
Laplace, P = location_scale("Laplace")
P.mean = function(self) return self.loc end
P.stddev = function(self) return 2 ^ 0.5 * self.scale end
P.variance = function(self) return 2 * self.scale ^ 2 end

-- u uniform on [eps - 1, 1), as PyTorch draws it: log1p(-|u|) stays finite
function Laplace:_rsample(shape)
  local u = ember.empty(self:_extended_shape(shape), {dtype = self._dtype, device = self._device})
  u:uniform_(B.EPS[self._dtype] - 1, 1)
  return self.loc - self.scale * u:sign() * (-u:abs()):log1p()
end

function Laplace:_log_prob(value)
  return -(2 * self.scale):log() - (value - self.loc):abs() / self.scale
end

function Laplace:_cdf(value)
  local d = value - self.loc
  return 0.5 - 0.5 * d:sign() * (-d:abs() / self.scale):expm1()
end

function Laplace:_icdf(value)
  local term = value - 0.5
  return self.loc - self.scale * term:sign() * (-2 * term:abs()):log1p()
end

function Laplace:_entropy() return 1 + (2 * self.scale):log() end

-------------------------------------------------------------------------------
-- Cauchy(loc, scale)

local Cauchy
Cauchy, P = location_scale("Cauchy")
P.mean = function(self) return ember.full_like(self.loc, 0 / 0) end       -- undefined, as PyTorch's NaN
P.variance = function(self) return ember.full_like(self.loc, math.huge) end

-- tan(pi (u - 1/2)) for u uniform on [0, 1) is a standard Cauchy (PyTorch's cauchy_)
function Cauchy:_rsample(shape)
  return self.loc + ((noise(self, "rand", shape) - 0.5) * math.pi):tan() * self.scale
end

function Cauchy:_log_prob(value)
  return -math.log(math.pi) - self.scale:log() - (((value - self.loc) / self.scale) ^ 2):log1p()
end
function Cauchy:_cdf(value) return ((value - self.loc) / self.scale):atan() / math.pi + 0.5 end
function Cauchy:_icdf(value) return ((value - 0.5) * math.pi):tan() * self.scale + self.loc end
function Cauchy:_entropy() return math.log(4 * math.pi) + self.scale:log() end

-------------------------------------------------------------------------------
-- HalfNormal(scale) and HalfCauchy(scale): |X| of a Normal(0, scale) or Cauchy(0, scale), its
-- base_dist (PyTorch's TransformedDistribution with an AbsTransform, written out)

local function half(name, base_cls, mean, variance)
  local cls = class(name, nil, {"scale"})
  cls.has_rsample = true
  function cls:_init(...)
    local o = B.options(name, {"scale"}, {"scale"}, ...)
    B.init_params(self, {"scale"}, {o.scale}, o.validate_args)
    rawset(self, "base_dist", base_cls(0, self.scale, {validate_args = false}))
  end
  cls._expand = B.expand_with("base_dist", function(new, base)
    rawset(new, "base_dist", base)
    rawset(new, "scale", base.scale)
  end)
  local Q = cls._props
  Q.arg_constraints = function() return {scale = C.positive} end
  Q.support = function() return C.nonnegative end
  Q.mean = mean
  Q.mode = function(self) return ember.zeros_like(self.scale) end
  Q.variance = variance
  function cls:_rsample(shape) return self.base_dist:_rsample(shape):abs() end
  -- the base's density doubled on [0, inf), -inf below
  function cls:_log_prob(value)
    local lp = self.base_dist:_log_prob(value) + math.log(2)
    return ember.where(value:ge(0), lp, -math.huge)
  end
  function cls:_cdf(value) return 2 * self.base_dist:_cdf(value) - 1 end
  function cls:_icdf(prob) return self.base_dist:_icdf((prob + 1) / 2) end
  -- folding the density onto [0, inf) doubles it: the entropy falls by log 2
  function cls:_entropy() return self.base_dist:_entropy() - math.log(2) end
  return cls
end

--- HalfNormal(scale): the absolute value of a Normal(0, scale).
M.HalfNormal = half("HalfNormal", Normal, function(self) return self.scale * math.sqrt(2 / math.pi) end,
                    function(self) return self.scale ^ 2 * (1 - 2 / math.pi) end)

--- HalfCauchy(scale): the absolute value of a Cauchy(0, scale).
M.HalfCauchy = half("HalfCauchy", Cauchy, function(self) return ember.full_like(self.scale, math.huge) end,
                    function(self) return ember.full_like(self.scale, math.huge) end)

-------------------------------------------------------------------------------
-- Gumbel(loc, scale): loc - scale log(-log U), U uniform (PyTorch's TransformedDistribution
-- of a Uniform(tiny, 1 - eps), written out)

local EULER = 0.57721566490153286061

local Gumbel
Gumbel, P = location_scale("Gumbel")
P.mean = function(self) return self.loc + self.scale * EULER end
P.stddev = function(self) return self.scale * (math.pi / math.sqrt(6)) end
P.variance = function(self) return (self.scale * (math.pi / math.sqrt(6))) ^ 2 end

function Gumbel:_rsample(shape)
  local u = ember.empty(self:_extended_shape(shape), {dtype = self._dtype, device = self._device})
  u:uniform_(B.TINY[self._dtype], 1 - B.EPS[self._dtype])
  return self.loc - self.scale * (-u:log()):log()
end

function Gumbel:_log_prob(value)
  local y = (self.loc - value) / self.scale
  return (y - y:exp()) - self.scale:log()
end
function Gumbel:_cdf(value) return (-((self.loc - value) / self.scale):exp()):exp() end
function Gumbel:_icdf(value) return self.loc - self.scale * (-value:log()):log() end
function Gumbel:_entropy() return self.scale:log() + (1 + EULER) end

-------------------------------------------------------------------------------
-- Gamma(concentration, rate), Chi2(df) = Gamma(df / 2, 1 / 2), StudentT(df, loc, scale).
-- Standard gamma draws by Marsaglia and Tsang's rejection method (PyTorch's sample_gamma:
-- alpha < 1 boosted by u^(1 / alpha)), every pending element redrawn together until none is
-- left; their gradient to alpha the implicit one, -(dF/dalpha) / f at the draw, by PyTorch's
-- approximations (standard_gamma_grad_one: a series below x = 0.8, Rice's saddle point
-- expansion for alpha > 8, a bivariate rational fit elsewhere).


-- standard gamma draws of shape alpha (a tensor), in float64
local function gamma_draws(alpha)
  local n, F64 = alpha:numel(), {dtype = "float64", device = alpha.device}
  local a = alpha:to("float64"):reshape(-1)
  local small = a:lt(1)
  local boost = ember.where(small, ember.rand(n, F64):neg():add(1):pow(a:reciprocal()), 1.0)
  local d = ember.where(small, a + 1, a) - 1 / 3
  local c = (d * 9):sqrt():reciprocal()
  local out = ember.zeros(n, F64)
  local pending = a:gt(0)
  while pending:any():item() do
    local x = ember.randn(n, F64)
    local y = x * c + 1
    local v = y ^ 3
    local u = 1 - ember.rand(n, F64)
    local xsq = x * x
    local ok = y:gt(0):logical_and(u:lt(1 - xsq * xsq * 0.0331)
      :logical_or(u:log():lt(xsq * 0.5 + d * (1 - v + v:clamp_min(1e-300):log()))))
    local take = pending:logical_and(ok)
    out = ember.where(take, d * v, out)
    pending = pending:logical_and(take:logical_not())
  end
  out = ember.where(a:eq(0), 0.0, out * boost)   -- alpha 0: 0, as PyTorch
  return out:view(alpha.shape)
end

local RICE_UV = {
  {0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084},
  {0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623},
  {0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
   -1.5247877e-07},
}

-- d x / d alpha for standard gamma draws x of shape alpha (float64 tensors)
local function gamma_grad(alpha, x)
  -- below 0.8: the series of the cdf and its alpha derivative
  local xs = x:clamp(1e-300, 0.8)
  local numer, denom = ember.ones_like(xs), alpha:clone()
  local s1, s2 = numer / denom, numer / (denom * denom)
  for i = 1, 5 do
    numer = numer * (-xs / i)
    denom = denom + 1
    s1 = s1 + numer / denom
    s2 = s2 + numer / (denom * denom)
  end
  local pow_xa = xs:pow(alpha)
  local pdf = xs:pow(alpha - 1) * (-xs):exp()
  local cdf_alpha = (xs:log() - ember.digamma(alpha)) * (pow_xa * s1) - pow_xa * s2
  local series = -cdf_alpha / pdf
  series = ember.where(series:isnan(), 0.0, series)
  -- alpha > 8: Rice's saddle point expansion (and its near-mean form within 10 % of alpha)
  local a8, xr = alpha:clamp_min(8), x:clamp_min(1e-300)
  local near = (1 + a8 * 24 * (1 + a8 * 12)) * (a8 * a8 * 1440 + xr * 6 * (53 - xr * 120) - xr * xr * 65 / a8
               + a8 * (107 + xr * 3600)) / (a8 * a8 * a8 * a8 * 1244160)
  local sq = (a8 * 8):sqrt()
  local diff = ember.where((a8 - xr):eq(0), 1e-300, a8 - xr)
  local term2 = sq / diff
  local term3 = (xr - a8 - a8 * (xr / a8):log()):clamp_min(1e-300):pow(-1.5)
  local term23 = ember.where(xr:lt(a8), term2 - term3, term2 + term3)
  local term1 = (xr / a8):log() * term23 - (a8:reciprocal() * 2):sqrt() * (a8 + xr) / (diff * diff)
  local stirling = 1 + (a8 * 12):reciprocal() * (1 + (a8 * 24):reciprocal())
  local rice = ember.where(xr:ge(a8 * 0.9):logical_and(xr:le(a8 * 1.1)), near, -stirling * xr * term1 / sq)
  -- elsewhere: exp(p(u, v) / q(u, v)), u = log(x / alpha), v = log(alpha)
  local u, v = (xr / alpha):log(), alpha:log()
  local c = {}
  for i = 1, 8 do c[i] = u * (u * RICE_UV[3][i] + RICE_UV[2][i]) + RICE_UV[1][i] end
  local p = c[1] + v * (c[2] + v * (c[3] + v * c[4]))
  local q = c[5] + v * (c[6] + v * (c[7] + v * c[8]))
  local fit = (p / q):exp()
  return ember.where(x:lt(0.8), series, ember.where(alpha:gt(8), rice, fit))
end

local StandardGamma   -- autograd Function: draws forward, the implicit gradient backward
local function standard_gamma(alpha)
  if not StandardGamma then
    StandardGamma = ember.autograd.Function:extend("StandardGamma")
    function StandardGamma.forward(ctx, a)
      local x = gamma_draws(a):to(a.dtype)
      ctx:save_for_backward(a, x)
      return x
    end
    function StandardGamma.backward(ctx, g)
      local a, x = table.unpack(ctx.saved_tensors)
      return g * gamma_grad(a:to("float64"), x:to("float64")):to(a.dtype)
    end
  end
  return StandardGamma.apply(alpha)
end
M._standard_gamma, M._standard_gamma_grad = standard_gamma, gamma_grad

local Gamma = B.params_class("Gamma", {"concentration", "rate"})
Gamma.has_rsample = true
M.Gamma = Gamma

P = Gamma._props
P.arg_constraints = function() return {concentration = C.positive, rate = C.positive} end
P.support = function() return C.nonnegative end
P.mean = function(self) return self.concentration / self.rate end
P.mode = function(self) return ((self.concentration - 1) / self.rate):clamp_min(0) end
P.variance = function(self) return self.concentration / self.rate ^ 2 end

function Gamma:_rsample(shape)
  shape = self:_extended_shape(shape)
  local v = standard_gamma(self.concentration:expand(shape)) / self.rate:expand(shape)
  -- PyTorch clamps the draw (not its gradient) above the dtype's tiny
  return v + (v:detach():clamp_min(B.TINY[v.dtype]) - v:detach())
end

function Gamma:_log_prob(value)
  local a, r = self.concentration, self.rate
  return ember.xlogy(a, r) + ember.xlogy(a - 1, value) - r * value - a:lgamma()
end
function Gamma:_cdf(value) return ember.special.gammainc(self.concentration, self.rate * value) end
function Gamma:_entropy()
  local a = self.concentration
  return a - self.rate:log() + a:lgamma() + (1 - a) * ember.digamma(a)
end

--- Chi2(df): Gamma(df / 2, 1 / 2), its own class with a df field.
local Chi2 = class("Chi2", nil, {"df"})
Chi2.has_rsample = true
M.Chi2 = Chi2
function Chi2:_init(...)
  local o = B.options("Chi2", {"df"}, {"df"}, ...)
  B.init_params(self, {"df"}, {o.df}, o.validate_args)
  rawset(self, "_gamma", Gamma(self.df * 0.5, ember.full_like(self.df, 0.5), {validate_args = false}))
end
Chi2._expand = B.expand_with("_gamma", function(new, g)
  rawset(new, "_gamma", g)
  rawset(new, "df", g.concentration * 2)
end)
P = Chi2._props
P.arg_constraints = function() return {df = C.positive} end
P.support = function() return C.nonnegative end
P.concentration = function(self) return self._gamma.concentration end
P.rate = function(self) return self._gamma.rate end
P.mean = function(self) return self.df end
P.mode = function(self) return (self.df - 2):clamp_min(0) end
P.variance = function(self) return self.df * 2 end
function Chi2:_rsample(shape) return self._gamma:_rsample(shape) end
function Chi2:_log_prob(value) return self._gamma:_log_prob(value) end
function Chi2:_cdf(value) return self._gamma:_cdf(value) end
function Chi2:_entropy() return self._gamma:_entropy() end

local StudentT = B.params_class("StudentT", {"df", "loc", "scale"})
StudentT.has_rsample = true
M.StudentT = StudentT
-- PyTorch's StudentT(df, loc = 0, scale = 1)
local plain_init = StudentT._init
function StudentT:_init(df, ...)
  local args = table.pack(...)
  if args.n == 0 or (args.n == 1 and type(args[1]) == "table" and not ember.is_tensor(args[1])) then
    local o = args[1]
    return plain_init(self, df, 0.0, 1.0, o)
  elseif args.n == 1 or (args.n == 2 and type(args[2]) == "table" and not ember.is_tensor(args[2])) then
    return plain_init(self, df, args[1], 1.0, args[2])
  end
  return plain_init(self, df, ...)
end
P = StudentT._props
P.arg_constraints = function() return {df = C.positive, loc = C.real, scale = C.positive} end
P.support = function() return C.real end
P.mean = function(self) return ember.where(self.df:gt(1), self.loc, 0 / 0) end
P.mode = function(self) return self.loc end
P.variance = function(self)
  local df = self.df
  local v = ember.where(df:gt(2), self.scale ^ 2 * df / (df - 2), math.huge)
  return ember.where(df:le(1), 0 / 0, v)
end

function StudentT:_rsample(shape)
  shape = self:_extended_shape(shape)
  local x = ember.randn(shape, {dtype = self._dtype, device = self._device})
  local z = Chi2(self.df, {validate_args = false}):rsample(B.slice(shape, 1, #shape - #self.batch_shape))
  return self.loc + self.scale * x * (z / self.df):rsqrt()
end

function StudentT:_log_prob(value)
  local df = self.df
  local y = (value - self.loc) / self.scale
  local z = self.scale:log() + df:log() * 0.5 + 0.5 * math.log(math.pi) + (df * 0.5):lgamma()
            - ((df + 1) * 0.5):lgamma()
  return -(df + 1) * 0.5 * (y ^ 2 / df):log1p() - z
end

function StudentT:_entropy()
  local df = self.df
  local lbeta = (df * 0.5):lgamma() + math.log(math.sqrt(math.pi)) - ((df + 1) * 0.5):lgamma()
  local dpsi = ember.digamma((df + 1) * 0.5) - ember.digamma(df * 0.5)
  return self.scale:log() + (df + 1) * 0.5 * dpsi + df:log() * 0.5 + lbeta
end


-------------------------------------------------------------------------------
-- Dirichlet(concentration) and Beta(concentration1, concentration0). Draws: gamma draws
-- normalised over the last dim; rsample's gradient the implicit one by PyTorch's
-- dirichlet_grad_one (Taylor series near 0 and 1, a saddle point expansion for both
-- parameters above 6, a bivariate rational fit elsewhere) and _Dirichlet_backward.

-- c[k][i][j][m]: PyTorch's dirichlet_grad_one table (1-based)
local DIRICHLET_C = {
  {
    {
      {1.003668233, -0.01061107488, -0.0657888334, 0.01201642863},
      {0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033},
      {-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013},
    },
    {
      {0.221950385, -0.3187676331, 0.01799915743, 0.01074823814},
      {-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057},
      {0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05},
    },
    {
      {-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565},
      {0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181},
      {0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05},
    },
  },
  {
    {
      {1, -0.02924021934, -0.04438342661, 0.007285809825},
      {0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521},
      {-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149},
    },
    {
      {0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273},
      {0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956},
      {-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05},
    },
    {
      {0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05},
      {0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05},
      {-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06},
    },
  },
}


-- d x / d alpha of a Beta(alpha, beta) draw x near 0 (PyTorch's _beta_grad_alpha_small)
local function beta_grad_alpha_small(x, alpha, beta)
  local factor = ember.digamma(alpha) - ember.digamma(alpha + beta) - x:log()
  local numer = ember.ones_like(x)
  local series = numer / alpha * (factor + alpha:reciprocal())
  for i = 1, 10 do
    numer = numer * (i - beta) * x / i
    local denom = alpha + i
    series = series + numer / denom * (factor + denom:reciprocal())
  end
  local r = x * (1 - x):pow(-beta) * series
  return ember.where(r:isnan(), 0.0, r)
end

-- its derivative in beta near 0 (_beta_grad_beta_small)
local function beta_grad_beta_small(x, alpha, beta)
  local factor = ember.digamma(alpha + beta) - ember.digamma(beta)
  local numer, betas, dbetas = ember.ones_like(x), ember.ones_like(x), ember.zeros_like(x)
  local series = factor / alpha
  for i = 1, 8 do
    numer = numer * (-x / i)
    dbetas = dbetas * (beta - i) + betas
    betas = betas * (beta - i)
    series = series + numer / (alpha + i) * (dbetas + factor * betas)
  end
  local r = -(1 - x):pow(1 - beta) * series
  return ember.where(r:isnan(), 0.0, r)
end

-- both parameters above 6 (_beta_grad_alpha_mid)
local function beta_grad_alpha_mid(x, alpha, beta)
  local total = alpha + beta
  local mean = alpha / total
  local std = (alpha * beta / (total + 1)):sqrt() / total
  local b2 = beta * beta
  local poly = x * b2 * b2 * 47 + alpha * ((x * (beta * 27 + 16) * 20 + 43) * b2 * beta + alpha * (
               (beta * 180 - x * 90 + 59) * b2 * 3 + alpha * ((beta * (1 - x) * 1620 - x * 455 + 453) * beta + alpha * (
               (1 - x) * (beta * 135 - 11) * 8))))
  local pre_num = (alpha * 12 + 1) * (beta * 12 + 1) / (total * total)
  local pre_den = alpha * alpha * alpha * b2 * (total * 12 + 1) * 12960
  local near = pre_num / (1 - x) * poly / pre_den
  local prefactor = -x / (alpha * beta * 2 / total):sqrt()
  local function st(v) return 1 + v:reciprocal() / 12 + (v * v):reciprocal() / 288 end
  local stirling = st(alpha) * st(beta) / st(total)
  local t1_num = alpha * alpha * (x - 1) * 2 + alpha * beta * (x - 1) - x * b2
  local axbx = alpha * (x - 1) + beta * x
  local t1 = t1_num / ((alpha * 2 / beta):sqrt() * total:pow(1.5) * axbx * axbx)
  local t2 = (alpha / (total * x)):log() * 0.5
  local t3 = (alpha * beta * 8 / total):sqrt() / (beta * x + alpha * (x - 1))
  local t4 = (beta * (beta / (total * (1 - x))):log() + alpha * (alpha / (total * x)):log()):pow(-1.5)
  local far = stirling * prefactor * (t1 + t2 * (t3 + ember.where(x:lt(mean), t4, -t4)))
  return ember.where(x:ge(mean - std * 0.1):logical_and(x:le(mean + std * 0.1)), near, far)
end

-- d x_i / d alpha_i of a Dirichlet draw, elementwise in x, alpha and total = the sum of alpha
-- (PyTorch's dirichlet_grad_one), float64
local function dirichlet_grad(x, alpha, total)
  local beta = total - alpha
  local boundary = total * x * (1 - x)
  local xs = x:clamp(1e-300, 1 - 2 ^ -53)
  local small_a = beta_grad_alpha_small(xs, alpha, beta)
  local small_b = -beta_grad_beta_small(1 - xs, beta, alpha)
  local mid = beta_grad_alpha_mid(xs, alpha:clamp_min(6), beta:clamp_min(6))
  local u = xs:log()
  local a = alpha:log() - u
  local b = total:log() - a
  local pow_u, pow_a = {1, u, u * u}, {1, a, a * a}
  local p, q = 0, 0
  for i = 1, 3 do
    for j = 1, 3 do
      local ua = pow_u[i] * pow_a[j]
      local c0, c1 = DIRICHLET_C[1][i][j], DIRICHLET_C[2][i][j]
      p = p + ua * (b * (b * (b * c0[4] + c0[3]) + c0[2]) + c0[1])
      q = q + ua * (b * (b * (b * c1[4] + c1[3]) + c1[2]) + c1[1])
    end
  end
  local fit = p / q * (xs * (ember.digamma(total) - ember.digamma(alpha)) / beta)
  local r = ember.where(alpha:gt(6):logical_and(beta:gt(6)), mid, fit)
  r = ember.where(x:ge(0.5):logical_and(boundary:lt(0.75)), small_b, r)
  return ember.where(x:le(0.5):logical_and(boundary:lt(2.5)), small_a, r)
end

local DirichletSample
local function dirichlet_sample(concentration)
  if not DirichletSample then
    DirichletSample = ember.autograd.Function:extend("DirichletSample")
    function DirichletSample.forward(ctx, c)
      local g = gamma_draws(c)
      local x = (g / g:sum(-1, true)):to(c.dtype)
      ctx:save_for_backward(c, x)
      return x
    end
    -- PyTorch's _Dirichlet_backward
    function DirichletSample.backward(ctx, grad)
      local c, x = table.unpack(ctx.saved_tensors)
      local c64, x64 = c:to("float64"), x:to("float64")
      local total = c64:sum(-1, true):expand_as(c64)
      local dx = dirichlet_grad(x64, c64, total)
      local g64 = grad:to("float64")
      return (dx * (g64 - (x64 * g64):sum(-1, true))):to(c.dtype)
    end
  end
  return DirichletSample.apply(concentration)
end
M._dirichlet_grad = dirichlet_grad

local Dirichlet = class("Dirichlet", nil, {"concentration"})
Dirichlet.has_rsample = true
M.Dirichlet = Dirichlet

function Dirichlet:_init(...)
  local o = B.options("Dirichlet", {"concentration"}, {"concentration"}, ...)
  local c = o.concentration
  B.check_param_tensor("Dirichlet", "concentration", c, 1)
  B.check_float("Dirichlet", "concentration", c)
  rawset(self, "concentration", c)
  B.set_dtype(self, c)
  B.init(self, B.slice(c.shape, 1, c:dim() - 1), {c.shape[c:dim()]}, o.validate_args)
end
function Dirichlet:_expand(shape)
  local new = B.expanded(self, shape)
  local full = {}
  for i, v in ipairs(shape) do full[i] = v end
  full[#full + 1] = self.event_shape[1]
  rawset(new, "concentration", self.concentration:expand(full))
  return new
end

P = Dirichlet._props
P.arg_constraints = function() return {concentration = C.independent(C.positive, 1)} end
P.support = function() return C.simplex end
P.mean = function(self) return self.concentration / self.concentration:sum(-1, true) end
P.mode = function(self)
  local c = self.concentration
  local cm1 = (c - 1):clamp_min(0)
  local mode = cm1 / cm1:sum(-1, true)
  -- where every concentration is below 1, a vertex: PyTorch's one_hot of mode's argmax (its
  -- first NaN there); with some at 1 exactly, 0 / 0 stays NaN, as PyTorch's
  local vertex = F.one_hot(mode:argmax(-1), c.shape[c:dim()]):to(mode.dtype)
  return ember.where(c:lt(1):all(-1, true), vertex, mode)
end
P.variance = function(self)
  local c = self.concentration
  local c0 = c:sum(-1, true)
  return c * (c0 - c) / (c0 ^ 2 * (c0 + 1))
end

function Dirichlet:_rsample(shape)
  local full = self:_extended_shape(shape)
  return dirichlet_sample(self.concentration:expand(full))
end

function Dirichlet:_log_prob(value)
  local c = self.concentration
  return ember.xlogy(c - 1, value):sum(-1) + c:sum(-1):lgamma() - c:lgamma():sum(-1)
end

function Dirichlet:_entropy()
  local c = self.concentration
  local k, a0 = c.shape[c:dim()], c:sum(-1)
  return c:lgamma():sum(-1) - a0:lgamma() - (k - a0) * ember.digamma(a0) - ((c - 1) * ember.digamma(c)):sum(-1)
end

local Beta = class("Beta", nil, {"concentration1", "concentration0"})
Beta.has_rsample = true
M.Beta = Beta

function Beta:_init(...)
  local o = B.options("Beta", {"concentration1", "concentration0"}, {"concentration1", "concentration0"}, ...)
  local ts, number = B.broadcast_all("Beta", {"concentration1", "concentration0"}, {o.concentration1, o.concentration0})
  rawset(self, "_dirichlet", Dirichlet(ember.stack({ts[1], ts[2]}, -1), {validate_args = false}))
  B.set_dtype(self, ts[1])
  rawset(self, "concentration1", ts[1])
  rawset(self, "concentration0", ts[2])
  B.init(self, number and {} or ts[1].shape, {}, o.validate_args)
end
Beta._expand = B.expand_with("_dirichlet", function(new, d)
  rawset(new, "_dirichlet", d)
  rawset(new, "concentration1", d.concentration:select(-1, 1))
  rawset(new, "concentration0", d.concentration:select(-1, 2))
end)

P = Beta._props
P.arg_constraints = function() return {concentration1 = C.positive, concentration0 = C.positive} end
P.support = function() return C.unit_interval end
P.mean = function(self) return self.concentration1 / (self.concentration1 + self.concentration0) end
P.mode = function(self) return self._dirichlet.mode:select(-1, 1) end
P.variance = function(self)
  local total = self.concentration1 + self.concentration0
  return self.concentration1 * self.concentration0 / (total ^ 2 * (total + 1))
end

function Beta:_rsample(shape) return self._dirichlet:rsample(shape):select(-1, 1) end
function Beta:_log_prob(value)
  return self._dirichlet:log_prob(ember.stack({value, 1 - value}, -1))
end
function Beta:_entropy() return self._dirichlet:entropy() end

return M
