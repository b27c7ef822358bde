-- ember.distributions.transformed — TransformedDistribution (a base distribution pushed
-- through transforms: y = t_n(...t_1(x)), log p(y) = log p(x) - the log-dets along the
-- way), and two families PyTorch defines that way, Weibull and Pareto.
--
--   local D, T = ember.distributions, ember.distributions.transforms
--   local pi = D.TransformedDistribution(D.Normal(mu, std), {T.TanhTransform({cache_size = 1})})
--   local a = pi:rsample()                -- in (-1, 1), gradients reach mu and std
--   local lp = pi:log_prob(a)             -- the cached x: no atanh of a rounded 1
local ember = require "ember"
local B = require "ember.distributions.base"
local T = require "ember.distributions.transforms"
local C = B.constraints

local class, raisef, concat, slice, list = B.class, B.raisef, B.concat, B.slice, B.list
local M = {}

local function same(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

-------------------------------------------------------------------------------
-- TransformedDistribution(base_distribution, transforms)

local TD_ARGS = {"base_distribution", "transforms"}
local TransformedDistribution = class("TransformedDistribution", nil, {})
M.TransformedDistribution = TransformedDistribution

local function set_parts(self, base_dist, transforms)
  B.set_base(self, base_dist)
  rawset(self, "transforms", transforms)
end

--- base.init_transformed(self, name, base_dist, transforms, validate): what
--- TransformedDistribution's constructor does, for the classes built on it (Weibull, ...)
function M.init_transformed(self, name, base_dist, transforms, validate)
  if not B.is_distribution(base_dist) then
    raisef("%s: base_distribution must be a distribution, got %s", name, type(base_dist))
  end
  if T.is_transform(transforms) then transforms = {transforms} end
  if type(transforms) ~= "table" then
    raisef("%s: transforms must be a transform or a list of transforms, got %s", name, type(transforms))
  end
  local ts = {}
  for i, t in ipairs(transforms) do
    if not T.is_transform(t) then
      raisef("%s: transforms must be a transform or a list of transforms, got a %s at position %d", name, type(t), i)
    end
    ts[i] = t
  end
  local transform = T.ComposeTransform(ts)
  -- the base reshaped to what the transforms take: expanded where they broadcast, its
  -- rightmost batch dims made event dims where they need a bigger event
  local base_shape = concat(base_dist.batch_shape, base_dist.event_shape)
  local base_event_dim = #base_dist.event_shape
  local dom_ed, cod_ed = transform.domain.event_dim, transform.codomain.event_dim
  if #base_shape < dom_ed then
    raisef("%s: base_distribution needs to have shape with size at least %d, but got %s", name, dom_ed,
           B.show(base_shape))
  end
  local forward_shape = transform:forward_shape(base_shape)
  local expanded = transform:inverse_shape(forward_shape)
  if not same(base_shape, expanded) then
    base_dist = base_dist:expand(slice(expanded, 1, #expanded - base_event_dim))
  end
  if dom_ed > base_event_dim then
    base_dist = require("ember.distributions.multivariate").Independent(base_dist, dom_ed - base_event_dim)
  end
  set_parts(self, base_dist, ts)
  local event_dim = math.max(cod_ed, base_event_dim + cod_ed - dom_ed)
  local cut = #forward_shape - event_dim
  B.init(self, slice(forward_shape, 1, cut), slice(forward_shape, cut + 1, #forward_shape), validate)
end

function TransformedDistribution:_init(...)
  local o = B.options("TransformedDistribution", TD_ARGS, TD_ARGS, ...)
  M.init_transformed(self, "TransformedDistribution", o.base_distribution, o.transforms, o.validate_args)
end

function TransformedDistribution:__tostring()
  return self._name .. "()"
end

local P = TransformedDistribution._props
P.support = function(self)
  local ts = self.transforms
  if #ts == 0 then return self.base_dist.support end
  local s = ts[#ts].codomain
  local n = #self.event_shape
  return n > s.event_dim and C.independent(s, n - s.event_dim) or s
end

function TransformedDistribution:_expand(shape)
  local full = concat(shape, self.event_shape)
  for i = #self.transforms, 1, -1 do full = self.transforms[i]:inverse_shape(full) end
  local new = B.expanded(self, shape)
  local base_batch = slice(full, 1, #full - #self.base_dist.event_shape)
  set_parts(new, self.base_dist:expand(base_batch), self.transforms)
  return new
end

local function forward(self, x)
  for _, t in ipairs(self.transforms) do x = t(x) end
  return x
end

function TransformedDistribution:_sample(shape) return forward(self, self.base_dist:_sample(shape)) end
function TransformedDistribution:_rsample(shape) return forward(self, self.base_dist:_rsample(shape)) end

-- log p(y) = log p_base(x) - sum of log |det dt_i/dx| along the way back, each summed
-- over the event dims it does not already cover
function TransformedDistribution:_log_prob(value)
  local event_dim = #self.event_shape
  local lp = 0
  local y = value
  for i = #self.transforms, 1, -1 do
    local t = self.transforms[i]
    local x = t.inv(y)
    event_dim = event_dim + t.domain.event_dim - t.codomain.event_dim
    lp = lp - B.sum_rightmost(t:log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
    y = x
  end
  return lp + B.sum_rightmost(self.base_dist:log_prob(y), event_dim - #self.base_dist.event_shape)
end

-- a decreasing composition turns the base's cdf u into 1 - u
local function monotonize(self, value)
  local sign = 1
  for _, t in ipairs(self.transforms) do sign = sign * t.sign end
  if sign == 1 then return value end
  return (value - 0.5) * sign + 0.5
end

function TransformedDistribution:_cdf(value)
  for i = #self.transforms, 1, -1 do value = self.transforms[i].inv(value) end
  if self._validate_args then self.base_dist:_validate_sample("cdf", value) end
  return monotonize(self, self.base_dist:cdf(value))
end

-- cdf's values are checked by the base, after the inverse transforms
TransformedDistribution._cdf_support = C.real

function TransformedDistribution:_icdf(value)
  return forward(self, self.base_dist:icdf(monotonize(self, value)))
end

-------------------------------------------------------------------------------
-- Weibull(scale, concentration): scale * E^(1/concentration), E ~ Exponential(1)

local function params(self, name, names, ...)
  local o = B.options(name, names, names, ...)
  local values = {}
  for i, k in ipairs(names) do values[i] = o[k] end
  local ts = B.broadcast_all(name, names, values)
  for i, k in ipairs(names) do rawset(self, k, ts[i]) end
  return ts, o.validate_args
end

local function exponential(rate)
  return require("ember.distributions.continuous").Exponential(rate, {validate_args = false})
end

local Weibull = class("Weibull", TransformedDistribution, {"scale", "concentration"})
M.Weibull = Weibull

function Weibull:_init(...)
  local ts, validate = params(self, "Weibull", {"scale", "concentration"}, ...)
  local scale, conc = ts[1], ts[2]
  local transforms = {T.PowerTransform(conc:reciprocal()), T.AffineTransform(0, scale)}
  -- parameters checked first, as Distribution.__init__ does before the transforms run
  M.init_transformed(self, "Weibull", exponential(ember.ones_like(scale)), transforms, false)
  B.init(self, list(self.batch_shape), {}, validate)
end

function Weibull:__tostring() return B.Distribution.__tostring(self) end

local W = Weibull._props
W.arg_constraints = function() return {scale = C.positive, concentration = C.positive} end
W.support = function() return C.positive end
W.mean = function(self) return self.scale * (self.concentration:reciprocal() + 1):lgamma():exp() end
W.mode = function(self)
  local k = self.concentration
  return self.scale * ((k - 1) / k):pow(k:reciprocal())
end
W.variance = function(self)
  local k = self.concentration
  local kr = k:reciprocal()
  return self.scale:pow(2) * ((kr * 2 + 1):lgamma():exp() - ((kr + 1):lgamma() * 2):exp())
end

function Weibull:_entropy()
  local euler = 0.57721566490153286061
  local kr = self.concentration:reciprocal()
  return (1 - kr) * euler + (self.scale * kr):log() + 1
end

function Weibull:_expand(shape)
  local new = TransformedDistribution._expand(self, shape)
  rawset(new, "scale", self.scale:expand(shape))
  rawset(new, "concentration", self.concentration:expand(shape))
  rawset(new, "transforms", {T.PowerTransform(new.concentration:reciprocal()), T.AffineTransform(0, new.scale)})
  return new
end

-------------------------------------------------------------------------------
-- Pareto(scale, alpha): scale * exp(E / alpha), E ~ Exponential(1)

local Pareto = class("Pareto", TransformedDistribution, {"scale", "alpha"})
M.Pareto = Pareto

local function pareto_transforms(scale) return {T.ExpTransform(), T.AffineTransform(0, scale)} end

function Pareto:_init(...)
  local ts, validate = params(self, "Pareto", {"scale", "alpha"}, ...)
  M.init_transformed(self, "Pareto", exponential(ts[2]), pareto_transforms(ts[1]), false)
  B.init(self, list(self.batch_shape), {}, validate)
end

function Pareto:__tostring() return B.Distribution.__tostring(self) end

local PP = Pareto._props
PP.arg_constraints = function() return {scale = C.positive, alpha = C.positive} end
-- the support depends on scale: value >= scale (PyTorch's constraints.greater_than_eq(scale))
PP.support = function(self) return C.greater_than_eq(self.scale) end
-- inf for alpha <= 1 (the clamp makes it 1 / 0), as PyTorch's
PP.mean = function(self)
  local a = self.alpha:clamp_min(1)
  return a * self.scale / (a - 1)
end
PP.mode = function(self) return self.scale end
-- inf for alpha <= 2
PP.variance = function(self)
  local a = self.alpha:clamp_min(2)
  return self.scale:pow(2) * a / ((a - 1):pow(2) * (a - 2))
end

function Pareto:_entropy() return (self.scale / self.alpha):log() + (self.alpha:reciprocal() + 1) end

function Pareto:_expand(shape)
  local new = TransformedDistribution._expand(self, shape)
  rawset(new, "scale", self.scale:expand(shape))
  rawset(new, "alpha", self.alpha:expand(shape))
  rawset(new, "transforms", pareto_transforms(new.scale))
  return new
end

return M
