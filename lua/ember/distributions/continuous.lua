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

local function half(name, base_cls, mean, variance, entropy_shift)
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
  function cls:_entropy() return self.base_dist:_entropy() - entropy_shift end
  return cls
end

--- HalfNormal(scale): the absolute value of a Normal(0, scale).
M.HalfNormal = half("HalfNormal", Normal, function(self) return self.scale * math.sqrt(2 / math.pi) end,
                    function(self) return self.scale ^ 2 * (1 - 2 / math.pi) end, math.log(2))

--- HalfCauchy(scale): the absolute value of a Cauchy(0, scale).
M.HalfCauchy = half("HalfCauchy", Cauchy, function(self) return ember.full_like(self.scale, math.huge) end,
                    function(self) return ember.full_like(self.scale, math.huge) end, math.log(2))

-------------------------------------------------------------------------------
-- Gumbel(loc, scale): loc - scale log(-log U), U uniform (PyTorch's TransformedDistribution
-- of a Uniform(tiny, 1 - eps), written out)

local EULER = 0.57721566490153286061

local Gumbel
Gumbel, P = location_scale("Gumbel")
P.mean = function(self) return self.loc + self.scale * EULER end
P.stddev = function(self) return self.scale * (math.pi / math.sqrt(6)) end
P.variance = function(self) return (self.scale * (math.pi / math.sqrt(6))) ^ 2 end

local TINY = {float64 = 2.2250738585072014e-308, float32 = 1.1754943508222875e-38,
              float16 = 6.103515625e-05, bfloat16 = 1.1754943508222875e-38}

function Gumbel:_rsample(shape)
  local u = ember.empty(self:_extended_shape(shape), {dtype = self._dtype, device = self._device})
  u:uniform_(TINY[self._dtype], 1 - B.EPS[self._dtype])
  return self.loc - self.scale * (-u:log()):log()
end

function Gumbel:_log_prob(value)
  local y = (self.loc - value) / self.scale
  return (y - y:exp()) - self.scale:log()
end
function Gumbel:_cdf(value) return (-((self.loc - value) / self.scale):exp()):exp() end
function Gumbel:_icdf(value) return self.loc - self.scale * (-value:log()):log() end
function Gumbel:_entropy() return self.scale:log() + (1 + EULER) end

return M
