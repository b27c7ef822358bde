-- ember.distributions.discrete — Bernoulli, Categorical, OneHotCategorical, Geometric,
-- Poisson, Binomial and Multinomial, with PyTorch's formulas (torch/distributions/*.py).
--
-- Categorical's classes are 1-based, as every position in ember: samples,
-- mode and enumerate_support give 1..K and log_prob takes 1..K (PyTorch: 0..K-1).
-- Bernoulli and the categoricals keep the parameter they were given (probs or
-- logits) and compute the other on first use, caching it in the instance.
local ember = require "ember"
local B = require "ember.distributions.base"
local C = B.constraints
local F = ember.nn.functional

local class, raisef = B.class, B.raisef
local M = {}

local PROB_ARGS = {"probs", "logits"}

-- exactly one of probs and logits; its name
local function which_param(name, o)
  if (o.probs == nil) == (o.logits == nil) then
    raisef("%s: either probs or logits must be specified, but not both", name)
  end
  return o.probs ~= nil and "probs" or "logits"
end

-- a property computed once from the other parameter, with grad on (as PyTorch's
-- lazy_property): inside sample's no_grad it still records for later use
local function lazy(name, compute)
  return function(self)
    local v = ember.enable_grad(function() return compute(self) end)
    rawset(self, name, v)
    return v
  end
end

-- probs clamped into [eps, 1 - eps] of their dtype (PyTorch's clamp_probs)
local function clamp_probs(probs)
  local eps = B.EPS[probs.dtype] or B.EPS.float32
  return probs:clamp(eps, 1 - eps)
end

-- expands the parameters the instance holds (probs and/or logits) to shape
local function expand_probs(self, new, shape)
  for _, k in ipairs(PROB_ARGS) do
    local v = rawget(self, k)
    if v then rawset(new, k, v:expand(shape)) end
  end
  rawset(new, "_param", rawget(new, "probs") or rawget(new, "logits"))
end

local function param_shape(self) return self._param.shape end

-------------------------------------------------------------------------------
-- Bernoulli(probs | logits): 1 with probability probs, else 0

local Bernoulli = class("Bernoulli", nil, PROB_ARGS)
Bernoulli.has_enumerate_support = true
M.Bernoulli = Bernoulli

-- one probability per batch element, as probs or logits (Bernoulli, Geometric); which one
-- was given and its tensor
local function init_binary(self, name, ...)
  local o = B.options(name, PROB_ARGS, {}, ...)
  local k = which_param(name, o)
  local ts, number = B.broadcast_all(name, {k}, {o[k]})
  rawset(self, k, ts[1])
  rawset(self, "_param", ts[1])
  B.set_dtype(self, ts[1])
  B.init(self, number and {} or ts[1].shape, {}, o.validate_args)
  return k, ts[1]
end

function Bernoulli:_init(...) init_binary(self, "Bernoulli", ...) end

local P = Bernoulli._props
P.arg_constraints = function() return {probs = C.unit_interval, logits = C.real} end
P.support = function() return C.boolean end
P.param_shape = param_shape
P.probs = lazy("probs", function(self) return self.logits:sigmoid() end)
P.logits = lazy("logits", function(self)
  local ps = clamp_probs(self.probs)
  return ps:log() - (-ps):log1p()
end)
P.mean = function(self) return self.probs end
P.mode = function(self)
  local probs = self.probs
  return ember.where(probs:eq(0.5), 0 / 0, probs:ge(0.5):to(probs.dtype))
end
P.variance = function(self) return self.probs * (1 - self.probs) end

function Bernoulli:_expand(shape)
  local new = B.expanded(self, shape)
  expand_probs(self, new, shape)
  return new
end

function Bernoulli:_sample(shape)
  shape = self:_extended_shape(shape)
  local probs = self.probs
  return ember.rand(shape, {dtype = probs.dtype, device = probs.device}):lt(probs:expand(shape)):to(probs.dtype)
end

function Bernoulli:_log_prob(value)
  local logits = self.logits
  if not value:is_floating_point() then value = value:to(logits.dtype) end
  logits, value = ember.broadcast_tensors(logits, value)
  return -F.binary_cross_entropy_with_logits(logits, value, {reduction = "none"})
end

function Bernoulli:_entropy()
  return F.binary_cross_entropy_with_logits(self.logits, self.probs, {reduction = "none"})
end

function Bernoulli:_enumerate_support(expand)
  return B.enumerate(self, ember.arange(2, {dtype = self._dtype, device = self._device}), expand)
end

-------------------------------------------------------------------------------
-- Categorical(probs | logits): class i in 1..K with probability probs[..., i]

local Categorical = class("Categorical", nil, PROB_ARGS)
Categorical.has_enumerate_support = true
M.Categorical = Categorical

-- probs (or logits) normalised along the last dim; the dims before it are the batch
local function init_categorical(self, name, o)
  local k = which_param(name, o)
  local t = o[k]
  B.check_param_tensor(name, k, t, 1)
  if k == "probs" then t = t / t:sum(-1, true) else t = t - t:logsumexp(-1, true) end
  rawset(self, k, t)
  rawset(self, "_param", t)
  rawset(self, "_num_events", t.shape[t:dim()])
  B.set_dtype(self, t)
  return B.slice(t.shape, 1, t:dim() - 1)
end

function Categorical:_init(...)
  local o = B.options("Categorical", PROB_ARGS, {}, ...)
  B.init(self, init_categorical(self, "Categorical", o), {}, o.validate_args)
end

local function categorical_props(P_)
  P_.arg_constraints = function() return {probs = C.simplex, logits = C.real_vector} end
  P_.param_shape = param_shape
end

P = Categorical._props
categorical_props(P)
P.support = function(self) return C.integer_interval(1, self._num_events) end
P.probs = lazy("probs", function(self) return self.logits:softmax(-1) end)
P.logits = lazy("logits", function(self) return clamp_probs(self.probs):log() end)
local function nan_full(self)
  return ember.full(self:_extended_shape({}), 0 / 0, {dtype = self._dtype, device = self._device})
end
P.mean = nan_full
P.variance = nan_full
P.mode = function(self) return self.probs:argmax(-1) end

function Categorical:_expand(shape)
  local new = B.expanded(self, shape)
  expand_probs(self, new, B.concat(shape, {self._num_events}))
  rawset(new, "_num_events", self._num_events)
  return new
end

-- multinomial draws each batch row's samples at once: (rows, n) -> (n, rows)
function Categorical:_sample(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local out_shape = self:_extended_shape(shape)
  local probs = self.probs
  if n == 0 or probs:numel() == 0 then return ember.zeros(out_shape, {dtype = "int64", device = self._device}) end
  local ok, r = pcall(ember.multinomial, probs:reshape(-1, self._num_events), n, true)
  if not ok then raisef("%s: sample: %s", self._name, (tostring(r):gsub("^[^:]*:%d+: ", ""))) end
  return r:t():reshape(out_shape)
end

function Categorical:_log_prob(value)
  value = value:to("int64"):unsqueeze(-1)
  local log_pmf
  value, log_pmf = ember.broadcast_tensors(value, self.logits)
  local ok, r = pcall(log_pmf.gather, log_pmf, -1, value:narrow(-1, 1, 1))
  if not ok then   -- only without validate_args: with it the support check comes first
    raisef("%s: log_prob: a class outside 1..%d (%s)", self._name, self._num_events, tostring(r))
  end
  return r:squeeze(-1)
end

function Categorical:_entropy()
  local logits = self.logits:clamp(B.FLOAT_MIN[self.logits.dtype] or B.FLOAT_MIN.float32)
  return -(logits * self.probs):sum(-1)
end

function Categorical:_enumerate_support(expand)
  return B.enumerate(self, ember.arange(1, self._num_events + 1, {dtype = "int64", device = self._device}), expand)
end

-------------------------------------------------------------------------------
-- OneHotCategorical(probs | logits): a Categorical's class as a one-hot vector

local OneHotCategorical = class("OneHotCategorical", nil, PROB_ARGS)
OneHotCategorical.has_enumerate_support = true
M.OneHotCategorical = OneHotCategorical

-- the given parameter is kept beside the Categorical that does the work, so that
-- validation and tostring name it as this class's
local function set_categorical(self, cat)
  rawset(cat, "_name", "OneHotCategorical")   -- its errors (a sample from unchecked probs) name this class
  rawset(self, "_categorical", cat)
  for _, k in ipairs(PROB_ARGS) do rawset(self, k, rawget(cat, k)) end
  B.set_dtype(self, cat._param)
end

function OneHotCategorical:_init(...)
  local o = B.options("OneHotCategorical", PROB_ARGS, {}, ...)
  local cat = setmetatable({}, Categorical)
  B.init(cat, init_categorical(cat, "OneHotCategorical", o), {}, false)
  set_categorical(self, cat)
  B.init(self, cat.batch_shape, {cat._num_events}, o.validate_args)
end

P = OneHotCategorical._props
categorical_props(P)
P.support = function() return C.one_hot end
P.probs = function(self) return self._categorical.probs end
P.logits = function(self) return self._categorical.logits end
P._param = function(self) return self._categorical._param end
P.mean = function(self) return self.probs end
P.variance = function(self) return self.probs * (1 - self.probs) end
P.mode = function(self)
  local probs = self.probs
  return ember.one_hot(probs:argmax(-1), probs.shape[probs:dim()]):to(probs.dtype)
end

OneHotCategorical._expand = B.expand_with("_categorical", set_categorical)

function OneHotCategorical:_sample(shape)
  local cat = self._categorical
  return ember.one_hot(cat:_sample(shape), cat._num_events):to(self._dtype)
end

function OneHotCategorical:_log_prob(value)
  local _, indices = value:max(-1)
  return self._categorical:_log_prob(indices)
end

function OneHotCategorical:_entropy() return self._categorical:_entropy() end

function OneHotCategorical:_enumerate_support(expand)
  local n = self.event_shape[1]
  return B.enumerate(self, ember.eye(n, {dtype = self._dtype, device = self._device}), expand)
end

-------------------------------------------------------------------------------
-- Geometric(probs | logits): the number of failures before the first success, 0, 1, 2, ...

local Geometric = class("Geometric", nil, PROB_ARGS)
M.Geometric = Geometric

function Geometric:_init(...)
  local k, t = init_binary(self, "Geometric", ...)
  -- beyond unit_interval, as PyTorch checks it: a success must be possible
  if self._validate_args and k == "probs" and not t:gt(0):all():item() then
    B.raisef("Geometric: expected parameter probs (tensor of shape %s) to be in (0, 1], but found invalid "
             .. "values:\n%s", require("ember.errors").shape_str(t), tostring(t))
  end
end

P = Geometric._props
P.arg_constraints = function() return {probs = C.unit_interval, logits = C.real} end
P.support = function() return C.nonnegative_integer end
P.param_shape = param_shape
P.probs = Bernoulli._props.probs
P.logits = Bernoulli._props.logits
P.mean = function(self) return self.probs:reciprocal() - 1 end
P.mode = function(self) return ember.zeros_like(self.probs) end
P.variance = function(self) return (self.probs:reciprocal() - 1) / self.probs end
Geometric._expand = Bernoulli._expand

-- floor(log u / log(1 - p)), u uniform on [tiny, 1)
function Geometric:_sample(shape)
  shape = self:_extended_shape(shape)
  local probs = self.probs
  local u = ember.empty(shape, {dtype = probs.dtype, device = probs.device}):uniform_(B.TINY[probs.dtype], 1)
  return (u:log() / (-probs):log1p()):floor()
end

function Geometric:_log_prob(value)
  local probs = self.probs
  local v, p = ember.broadcast_tensors(value:to(probs.dtype), probs)
  -- p = 1 with value 0: log1p(-1) * 0 would be NaN; PyTorch takes p there as 0
  p = ember.where(p:eq(1):logical_and(v:eq(0)), 0.0, p)
  return v * (-p):log1p() + probs:log()
end

function Geometric:_entropy()
  return F.binary_cross_entropy_with_logits(self.logits, self.probs, {reduction = "none"}) / self.probs
end

-------------------------------------------------------------------------------
-- Poisson(rate)

local Poisson = B.params_class("Poisson", {"rate"})
M.Poisson = Poisson

P = Poisson._props
P.arg_constraints = function() return {rate = C.nonnegative} end
P.support = function() return C.nonnegative_integer end
P.mean = function(self) return self.rate end
P.mode = function(self) return self.rate:floor() end
P.variance = function(self) return self.rate end

-- Knuth's method where 0 < rate < 10: count the uniforms whose running product stays
-- above exp(-rate). All elements step together; each stops at its own count.
local function poisson_small(lam, mask, out, gen)
  local n, F64 = lam:numel(), {dtype = "float64", device = lam.device, generator = gen}
  local enlam = (-lam):exp()
  local prod = ember.ones(n, {dtype = "float64", device = lam.device})
  local active = mask
  while active:any():item() do
    prod = prod * ember.rand(n, F64)
    active = active:logical_and(prod:gt(enlam))
    out = out + active:to("float64")
  end
  return out
end

-- Hörmann's transformed rejection, the loop of Poisson's PTRS and Binomial's BTRS: each
-- pass draws U - 1/2 and V uniform for every element, the candidate k = floor((2a / us + b)
-- U + c) with us = 1/2 - |U|, and keeps it where pending and accept(k, us, V), until none
-- is pending
local function transformed_rejection(shape, a, b, c, accept, pending, out, gen)
  local F64 = {dtype = "float64", device = out.device, generator = gen}
  while pending:any():item() do
    local U = ember.rand(shape, F64) - 0.5
    local V = ember.rand(shape, F64)
    local us = 0.5 - U:abs()
    local k = ((2 * a / us + b) * U + c):floor()
    local take = pending:logical_and(accept(k, us, V))
    out = ember.where(take, k, out)
    pending = pending:logical_and(take:logical_not())
  end
  return out
end

-- PTRS (Hörmann, 1993) where rate >= 10, with the constants and tests of PyTorch's sampler
local function poisson_large(lam, mask, out, gen)
  local slam, loglam = lam:sqrt(), lam:log()
  local b = 0.931 + 2.53 * slam
  local a = -0.059 + 0.02483 * b
  local log_invalpha = (1.1239 + 1.1328 / (b - 3.4)):log()
  local vr = 0.9277 - 3.6224 / (b - 2)
  return transformed_rejection(lam:numel(), a, b, lam + 0.43, function(k, us, V)
    local quick = us:ge(0.07):logical_and(V:le(vr))
    local rejected = k:lt(0):logical_or(us:lt(0.013):logical_and(V:gt(us)))
    local lhs = V:log() + log_invalpha - (a / (us * us) + b):log()
    local rhs = -lam + k * loglam - (k + 1):lgamma()
    return quick:logical_or(rejected:logical_not():logical_and(lhs:le(rhs)))
  end, mask, out, gen)
end

-- exact draws of Poisson(rate) in float64 (rate 0 gives 0), from gen (nil: the default
-- generator); ember.poisson draws through it too
local function poisson_draws(rate, gen)
  local lam = rate:reshape(-1):to("float64")
  local out = ember.zeros(lam:numel(), {dtype = "float64", device = lam.device})
  out = poisson_small(lam, lam:gt(0):logical_and(lam:lt(10)), out, gen)
  out = poisson_large(lam, lam:ge(10), out, gen)
  return out:reshape(rate.shape)
end
M._poisson_draws = poisson_draws

function Poisson:_sample(shape)
  shape = self:_extended_shape(shape)
  return poisson_draws(self.rate:expand(shape)):to(self._dtype)
end

-- value * log(rate) is xlogy written out (0 where both are 0): PyTorch's gradient in
-- value is log(rate) also at value = 0, where ember's xlogy gives 0
function Poisson:_log_prob(value)
  local rate
  rate, value = ember.broadcast_tensors(self.rate, value)
  local xlogy = ember.where(value:eq(0):logical_and(rate:eq(0)), 0, value * rate:log())
  return xlogy - rate - (value + 1):lgamma()
end


-------------------------------------------------------------------------------
-- Binomial(total_count, probs | logits): successes in total_count Bernoulli(probs) trials

local BIN_ARGS = {"total_count", "probs", "logits"}
local Binomial = class("Binomial", nil, BIN_ARGS)
Binomial.has_enumerate_support = true
M.Binomial = Binomial

function Binomial:_init(...)
  local o = B.options("Binomial", BIN_ARGS, {}, ...)
  local k = which_param("Binomial", o)
  local n = o.total_count == nil and 1 or o.total_count
  if ember.is_tensor(n) and not n:is_floating_point() then   -- counts: any dtype, as PyTorch's
    n = n:to(ember.is_tensor(o[k]) and o[k].dtype or ember.get_default_dtype())
  end
  local ts, numbers = B.broadcast_all("Binomial", {"total_count", k}, {n, o[k]})
  -- total_count takes the parameter's dtype (PyTorch's type_as)
  rawset(self, "total_count", ts[1]:to(ts[2].dtype))
  rawset(self, k, ts[2])
  rawset(self, "_param", ts[2])
  B.set_dtype(self, ts[2])
  B.init(self, numbers and {} or ts[2].shape, {}, o.validate_args)
end

P = Binomial._props
P.arg_constraints = function()
  return {total_count = C.nonnegative_integer, probs = C.unit_interval, logits = C.real}
end
P.param_shape = param_shape
P.support = function(self) return C.integer_interval(0, self.total_count) end
P.probs = lazy("probs", function(self) return self.logits:sigmoid() end)
P.logits = lazy("logits", function(self)
  local ps = clamp_probs(self.probs)
  return ps:log() - (-ps):log1p()
end)
P.mean = function(self) return self.total_count * self.probs end
P.mode = function(self)
  local n = self.total_count
  return ember.minimum(((n + 1) * self.probs):floor(), n)
end
P.variance = function(self) return self.total_count * self.probs * (1 - self.probs) end

function Binomial:_expand(shape)
  local new = B.expanded(self, shape)
  expand_probs(self, new, shape)
  rawset(new, "total_count", self.total_count:expand(shape))
  return new
end

-- Stirling's series of log k! beyond its first terms, tabulated below 10 (PyTorch's
-- stirling_approx_tail, from TensorFlow's binomial sampler)
local STIRLING_TAIL = {0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                       0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                       0.00925546218271273, 0.00833056343336287}

local function stirling_tail(k)
  local table_ = ember.tensor(STIRLING_TAIL, {dtype = "float64", device = k.device})
  local small = table_:index_select(1, k:clamp(0, 9):to("int64"):reshape(-1) + 1):reshape(k.shape)
  local kp1sq = (k + 1) * (k + 1)
  return ember.where(k:lt(10), small, (1 / 12 - (1 / 360 - 1 / 1260 / kp1sq) / kp1sq) / (k + 1))
end

-- Hörmann's BTRS (transformed rejection with squeeze, 1993) where count * p >= 10, p <= 1/2,
-- with PyTorch's constants
local function binomial_btrs(n, p, pending, out, gen)
  local stddev = (n * p * (1 - p)):sqrt()
  local b = stddev * 2.53 + 1.15
  local a = b * 0.0248 + p * 0.01 - 0.0873
  local v_r = 0.92 - 4.2 / b
  local r = p / (1 - p)
  local alpha = (5.1 / b + 2.83) * stddev
  local m = ((n + 1) * p):floor()
  local head = (m + 0.5) * ((m + 1) / (r * (n - m + 1))):log() + stirling_tail(m) + stirling_tail(n - m)
  return transformed_rejection(n.shape, a, b, n * p + 0.5, function(k, us, V)
    local valid = k:ge(0):logical_and(k:le(n))
    local kc = ember.minimum(k:clamp_min(0), n)    -- the bound's logs stay finite where k is refused
    local lv = (V * alpha / (a / (us * us) + b)):log()
    local bound = head + (n + 1) * ((n - m + 1) / (n - kc + 1)):log() + (kc + 0.5) * (r * (n - kc + 1) / (kc + 1)):log()
                  - stirling_tail(kc) - stirling_tail(n - kc)
    return valid:logical_and(us:ge(0.07):logical_and(V:le(v_r)):logical_or(lv:le(bound)))
  end, pending, out, gen)
end

-- where count * p < 10: the number of geometric waiting times (ceil(log U / log(1 - p)))
-- that fit in count trials
local function binomial_inversion(n, p, pending, out, gen)
  local F64 = {dtype = "float64", device = n.device, generator = gen}
  local logq = (-p):log1p()
  local sum = ember.zeros(n.shape, {dtype = "float64", device = n.device})
  local count = ember.zeros_like(sum)
  while pending:any():item() do
    sum = sum + ember.where(pending, (ember.rand(n.shape, F64):log() / logq):ceil(), 0)
    pending = pending:logical_and(sum:le(n))
    count = count + pending:to("float64")
  end
  return ember.where(out:isnan(), out, count)
end

-- exact draws of Binomial(n, p) in float64, by PyTorch's sample_binomial: 0 where n <= 0
-- or p <= 0, n where p >= 1, n - a draw with 1 - p above 1/2, NaN for a NaN p
local function sample_binomial(n, p, gen)
  local flip = p:gt(0.5)
  local q = ember.where(flip, 1 - p, p)
  local regular = n:gt(0):logical_and(p:gt(0)):logical_and(p:lt(1))
  local large = (n * q):ge(10)
  local out = ember.where(p:isnan(), 0 / 0, ember.zeros_like(p))
  local inv = binomial_inversion(n, q, regular:logical_and(large:logical_not()), out, gen)
  local draws = binomial_btrs(n, q, regular:logical_and(large), inv, gen)
  draws = ember.where(flip:logical_and(regular), n - draws, draws)
  return ember.where(p:ge(1), n, draws)
end
M._binomial_draws = sample_binomial

function Binomial:_sample(shape)
  shape = self:_extended_shape(shape)
  local n = self.total_count:expand(shape):to("float64")
  local p = self.probs:expand(shape):to("float64")
  return sample_binomial(n, p):to(self._dtype)
end

-- max(x, 0), with half the gradient on each side at 0 (PyTorch's _clamp_by_zero)
local function clamp_by_zero(x) return (x:clamp_min(0) + x - x:clamp_max(0)) / 2 end

-- k logit - n max(logit, 0) - n log1p(e^-|logit|) + log C(n, k): PyTorch's stable form
function Binomial:_log_prob(value)
  local n, logits = self.total_count, self.logits
  local normalize = n * clamp_by_zero(logits) + n * (-logits:abs()):exp():log1p() - (n + 1):lgamma()
  return value * logits - normalize - (value + 1):lgamma() - (n - value + 1):lgamma()
end

-- one total_count for every element (PyTorch refuses inhomogeneous counts here)
local function homogeneous_count(self, what)
  local n = self.total_count
  local hi, lo = n:max():item(), n:min():item()
  if hi ~= lo then raisef("%s: inhomogeneous total_count is not supported by %s", self._name, what) end
  return math.tointeger(hi) or hi
end

function Binomial:_enumerate_support(expand)
  local n = homogeneous_count(self, "enumerate_support")
  return B.enumerate(self, ember.arange(n + 1, {dtype = self._dtype, device = self._device}), expand)
end

function Binomial:_entropy()
  homogeneous_count(self, "entropy")
  local lp = self:log_prob(self:_enumerate_support(false))
  return -(lp:exp() * lp):sum(1)
end

-------------------------------------------------------------------------------
-- Multinomial(total_count, probs | logits): counts of total_count Categorical draws

local Multinomial = class("Multinomial", nil, BIN_ARGS)
M.Multinomial = Multinomial

function Multinomial:_init(...)
  local o = B.options("Multinomial", BIN_ARGS, {}, ...)
  local n = o.total_count == nil and 1 or o.total_count
  if math.type(n) ~= "integer" then
    raisef("Multinomial: total_count must be an integer (PyTorch supports no inhomogeneous total_count), got %s",
           type(n) == "number" and tostring(n) or type(n))
  end
  local k = which_param("Multinomial", o)
  local cat = Categorical({[k] = o[k], validate_args = o.validate_args})
  rawset(self, "total_count", n)
  rawset(self, "_categorical", cat)
  B.set_dtype(self, cat._param)
  B.init(self, cat.batch_shape, {cat._num_events}, o.validate_args)
end

-- Binomial(total_count, the same probs): the marginal of each count
local function binomial_of(self)
  local b = rawget(self, "_binomial")
  if not b then
    local cat = self._categorical
    local k = rawget(cat, "probs") and "probs" or "logits"
    b = Binomial({total_count = self.total_count, [k] = cat[k], validate_args = false})
    rawset(self, "_binomial", b)
  end
  return b
end

P = Multinomial._props
P.arg_constraints = function() return {probs = C.simplex, logits = C.real_vector} end
P.probs = function(self) return self._categorical.probs end
P.logits = function(self) return self._categorical.logits end
P.param_shape = function(self) return self._categorical.param_shape end
P.support = function(self) return C.multinomial(self.total_count) end
P.mean = function(self) return self.probs * self.total_count end
P.variance = function(self) return self.probs * (1 - self.probs) * self.total_count end

function Multinomial:_expand(shape)
  local new = B.expanded(self, shape)
  rawset(new, "total_count", self.total_count)
  rawset(new, "_categorical", self._categorical:_expand(shape))
  return new
end

-- total_count class draws per sample, counted into their classes
function Multinomial:_sample(shape)
  local draws = self._categorical:_sample(B.concat({self.total_count}, shape))
  local dims = {}
  for i = 2, draws:dim() do dims[#dims + 1] = i end
  dims[#dims + 1] = 1
  draws = draws:permute(dims)
  local counts = ember.zeros(self:_extended_shape(shape), {dtype = "int64", device = self._device})
  counts:scatter_add_(-1, draws, ember.ones_like(draws))
  return counts:to(self._dtype)
end

function Multinomial:_log_prob(value)
  local logits
  logits, value = ember.broadcast_tensors(self.logits, value)
  -- a class of probability 0 that was not drawn contributes nothing (not 0 * -inf)
  logits = ember.where(value:eq(0):logical_and(logits:eq(-math.huge)), 0, logits)
  return (value:sum(-1) + 1):lgamma() - (value + 1):lgamma():sum(-1) + (logits * value):sum(-1)
end

function Multinomial:_entropy()
  local n = self.total_count
  local term1 = self._categorical:entropy() * n - ember.tensor(n + 1, {dtype = "float64"}):lgamma():item()
  local bin = binomial_of(self)
  local support = bin:_enumerate_support(false)
  support = support:narrow(1, 2, support.shape[1] - 1)
  local probs = bin:log_prob(support):exp()
  local term2 = (probs * (support + 1):lgamma()):sum(1):sum(-1)
  return term1 + term2
end

return M
