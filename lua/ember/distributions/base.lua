-- ember.distributions.base — Distribution, the base class, and what the
-- distributions share: the class builder, reading and broadcasting parameters,
-- checking them against their constraints (PyTorch's validate_args), shapes.
--
-- The public methods (sample, rsample, log_prob, cdf, icdf, entropy, expand, ...)
-- live here once: they read and check their arguments, then call the class's
-- private part (_rsample, _log_prob, ...), so every class parses sample_shape and
-- validates values the same way. Properties (d.mean, d.variance, d.batch_shape, ...)
-- are getters in each class's _props, found by the instances' __index; lazily
-- computed ones (Bernoulli's probs from logits, ...) store their value in the instance.
local ember = require "ember"
local errors = require "ember.errors"
local constraints = require "ember.distributions.constraints"

local raise, shape_str = errors.raise, errors.shape_str

local M = {}

-- torch.finfo's eps and min, which PyTorch's clamp_probs and Categorical.entropy use
M.EPS = {float32 = 1.1920928955078125e-07, float64 = 2.220446049250313e-16, float16 = 0.0009765625,
         bfloat16 = 0.0078125}
-- torch.finfo's tiny: the smallest normal number (Gumbel's and Geometric's uniform draws start there,
-- Gamma's draws are clamped above it)
M.TINY = {float64 = 2.2250738585072014e-308, float32 = 1.1754943508222875e-38, float16 = 6.103515625e-05,
          bfloat16 = 1.1754943508222875e-38}
M.FLOAT_MIN = {float32 = -3.4028234663852886e38, float64 = -1.7976931348623157e308, float16 = -65504.0,
               bfloat16 = -3.3895313892515355e38}

local function raisef(fmt, ...) raise(string.format(fmt, ...)) end
M.raisef = raisef

-- ---- shapes: plain Lua lists inside, ember.Size outside ----------------------------------

local function list(shape)
  local out = {}
  for i = 1, #shape do out[i] = shape[i] end
  return out
end
M.list = list

-- the lists a, b, ... one after the other
local function concat(...)
  local out = {}
  for _, s in ipairs({...}) do
    for i = 1, #s do out[#out + 1] = s[i] end
  end
  return out
end
M.concat = concat

-- s[i..j] of a list (j may be below i: empty)
local function slice(s, i, j)
  local out = {}
  for k = i, j do out[#out + 1] = s[k] end
  return out
end
M.slice = slice

local function show(s) return "[" .. table.concat(list(s), ", ") .. "]" end
M.show = show

-- PyTorch's broadcast_shapes of two lists, or nil when they do not broadcast
local function broadcast_shapes(a, b)
  local n = math.max(#a, #b)
  local out = {}
  for i = 1, n do
    local x, y = a[#a - n + i] or 1, b[#b - n + i] or 1
    if x ~= y and x ~= 1 and y ~= 1 then return nil end
    out[i] = x == 1 and y or x
  end
  return out
end
M.broadcast_shapes = broadcast_shapes

-- A shape argument (sample_shape, batch_shape): nothing, a list or ember.Size, or
-- integers given one by one; each a non-negative integer.
local function shape_arg(where, what, ...)
  local n = select("#", ...)
  local first = ...
  if n == 0 or (n == 1 and first == nil) then return {} end
  local s
  if n == 1 and type(first) == "table" and not ember.is_tensor(first) then
    s = list(first)
  else
    s = {...}
  end
  for i = 1, math.max(#s, n == 1 and 0 or n) do
    local v = s[i]
    if type(v) ~= "number" or v ~= math.floor(v) or v < 0 or v == math.huge then
      raisef("%s: %s must be a list of non-negative integers (or an ember.Size), got %s at position %d", where, what,
             type(v) == "number" and tostring(v) or type(v), i)
    end
    s[i] = math.tointeger(v)
  end
  return s
end
M.shape_arg = shape_arg

-- Sums the dim rightmost dims of value (PyTorch's _sum_rightmost).
function M.sum_rightmost(value, dim)
  if dim == 0 then return value end
  return value:flatten(value:dim() - dim + 1):sum(-1)
end

-- ---- the class builder ---------------------------------------------------------------------

-- Field lookup on instances: the class's methods and fields, then its property getters.
local function instance_index(self, k)
  local cls = getmetatable(self)
  local v = cls[k]
  if v ~= nil then return v end
  local get = cls._props[k]
  if get then return get(self) end
  return nil
end

local Distribution = {__name = "Distribution", _name = "Distribution", _props = {}, _arg_names = {},
                      has_rsample = false, has_enumerate_support = false}
Distribution.__index = instance_index
M.instance_index = instance_index
M.Distribution = Distribution

-- PyTorch validates by default (Distribution._validate_args = __debug__)
local default_validate = true

local function construct(cls, ...)
  if cls == Distribution then raise("Distribution: an abstract base class; construct a distribution such as Normal") end
  local self = setmetatable({}, cls)
  cls._init(self, ...)
  return self
end

local function tostring_of(self)
  local parts = {}
  for _, name in ipairs(getmetatable(self)._arg_names) do
    local v = rawget(self, name)
    if ember.is_tensor(v) then
      local s
      if v:numel() == 1 and v:dim() == 0 then
        local x = v:item()
        s = (math.type(x) == "float" and x == math.floor(x) and math.abs(x) < 1e15) and string.format("%.1f", x)
            or tostring(x)
      elseif v:numel() == 1 then
        s = tostring(v:detach())
      else
        s = tostring(v.shape)
      end
      parts[#parts + 1] = name .. ": " .. s
    end
  end
  return getmetatable(self)._name .. "(" .. table.concat(parts, ", ") .. ")"
end
Distribution.__tostring = tostring_of

setmetatable(Distribution, {__call = construct})

--- base.class(name, parent, arg_names) -> a new distribution class: called as
--- Name(...) it makes an instance and runs Name._init(self, ...). arg_names: the
--- parameters in PyTorch's order (tostring lists those the instance holds).
function M.class(name, parent, arg_names)
  parent = parent or Distribution
  local cls = {__name = name, _name = name, _arg_names = arg_names or {}}
  cls.__index = instance_index
  cls.__tostring = parent.__tostring
  cls._props = setmetatable({}, {__index = parent._props})
  return setmetatable(cls, {__index = parent, __call = construct})
end

-- v is an instance of root or of a class derived from it (classes chain to their parents
-- through their metatables' __index)
function M.is_instance(v, root)
  if type(v) ~= "table" then return false end
  local c = getmetatable(v)
  for _ = 1, 32 do
    if type(c) ~= "table" then return false end
    if c == root then return true end
    local mt = getmetatable(c)
    c = mt and mt.__index
  end
  return false
end

-- v is an instance of a distribution class
function M.is_distribution(v) return M.is_instance(v, Distribution) end

-- ---- parameters ------------------------------------------------------------------------------

-- The validate_args option: nil (the default), true or false.
local function validate_flag(name, v)
  if v == nil then return default_validate end
  if type(v) ~= "boolean" then raisef("%s: validate_args must be a boolean or nil, got %s", name, type(v)) end
  return v
end

local arg_lists = setmetatable({}, {__mode = "k"})

--- base.options(name, names, ...) -> the constructor's arguments by name: names in
--- PyTorch's order, then validate_args, by position or in a trailing options table.
--- Those in required must be given. o.validate_args is resolved to a boolean.
function M.options(name, names, required, ...)
  local all = arg_lists[names]
  if not all then
    all = list(names)
    all[#all + 1] = "validate_args"
    arg_lists[names] = all
  end
  local o = require("ember.args").options(name, all, ...)
  for _, k in ipairs(required) do
    if o[k] == nil then raisef("%s: missing argument %s", name, k) end
  end
  o.validate_args = validate_flag(name, o.validate_args)
  return o
end

--- base.broadcast_all(name, names, values) -> the values as tensors broadcast together
--- (PyTorch's broadcast_all): numbers become tensors of the first tensor's dtype and
--- device (the default dtype when all are numbers); also whether all were numbers.
function M.broadcast_all(name, names, values)
  local first, all_numbers = nil, true
  for i, k in ipairs(names) do
    local v = values[i]
    if ember.is_tensor(v) then
      M.check_float(name, k, v)
      first = first or v
      all_numbers = false
    elseif type(v) ~= "number" then
      raisef("%s: %s must be a tensor or a number, got %s", name, k, type(v))
    end
  end
  local opts = first and {dtype = first.dtype, device = first.device} or {dtype = ember.get_default_dtype()}
  local ts = {}
  for i = 1, #names do
    local v = values[i]
    ts[i] = ember.is_tensor(v) and v or ember.tensor(v, opts)
  end
  if #ts == 1 then return ts, all_numbers end
  local ok, out = pcall(function() return {ember.broadcast_tensors(table.unpack(ts))} end)
  if not ok then
    local shapes = {}
    for i, k in ipairs(names) do shapes[i] = k .. " " .. shape_str(ts[i]) end
    raisef("%s: the parameters cannot be broadcast together: %s", name, table.concat(shapes, ", "))
  end
  return out, all_numbers
end

-- Parameters are floating-point: PyTorch takes integer tensors too, but then fails in
-- the first sampler or formula that needs floats; here the constructor says so.
function M.check_float(name, what, v)
  if not v:is_floating_point() then
    raisef("%s: %s must be a floating-point tensor, got %s", name, what, v.dtype)
  end
end

-- v is a floating-point tensor of at least n dims (PyTorch's "must be at least
-- n-dimensional")
function M.check_param_tensor(name, what, v, n)
  if not ember.is_tensor(v) then raisef("%s: %s must be a tensor, got %s", name, what, type(v)) end
  M.check_float(name, what, v)
  if v:dim() < n then
    raisef("%s: %s must be at least %s, got shape %s", name, what, n == 1 and "one-dimensional" or n .. "-dimensional",
           shape_str(v))
  end
end

-- Sets the shapes and the validation flag, then (with validation) checks each parameter
-- the instance holds against arg_constraints, as Distribution.__init__ does.
function M.init(self, batch_shape, event_shape, validate)
  rawset(self, "batch_shape", ember.Size(list(batch_shape)))
  rawset(self, "event_shape", ember.Size(list(event_shape or {})))
  rawset(self, "_validate_args", validate)
  if not validate then return end
  local cons = self.arg_constraints
  local _ <close> = ember.no_grad()
  for _, k in ipairs(getmetatable(self)._arg_names) do
    local v, c = rawget(self, k), cons[k]
    if ember.is_tensor(v) and c and not c:check(v):all():item() then
      raisef("%s: expected parameter %s (tensor of shape %s) to satisfy the constraint %s, but found invalid values:\n%s",
             self._name, k, shape_str(v), tostring(c), tostring(v))
    end
  end
end

-- the dtype and device samples and converted numbers take: the first parameter's
function M.set_dtype(self, t)
  rawset(self, "_dtype", t.dtype)
  rawset(self, "_device", t.device)
end

--- base.init_params(self, names, values, validate): the parameters of a distribution
--- whose parameters all have its batch shape (Normal, Uniform, ...): broadcast
--- together and stored under their names; batch_shape is theirs ([] when all were numbers).
function M.init_params(self, names, values, validate)
  local ts, numbers = M.broadcast_all(self._name, names, values)
  for i, k in ipairs(names) do rawset(self, k, ts[i]) end
  M.set_dtype(self, ts[1])
  M.init(self, numbers and {} or ts[1].shape, {}, validate)
end

-- a distribution built around another (Independent, TransformedDistribution): base_dist,
-- and the base's rsample, dtype and device
function M.set_base(self, base_dist)
  rawset(self, "base_dist", base_dist)
  rawset(self, "has_rsample", base_dist.has_rsample)
  rawset(self, "_dtype", base_dist._dtype)
  rawset(self, "_device", base_dist._device)
end

-- new instance of self's class, for expand: shapes set, validation as self's, unchecked
function M.expanded(self, batch_shape, event_shape)
  local new = setmetatable({}, getmetatable(self))
  rawset(new, "_dtype", self._dtype)
  rawset(new, "_device", self._device)
  M.init(new, batch_shape, event_shape or self.event_shape, false)
  rawset(new, "_validate_args", self._validate_args)
  return new
end

-- expand for the classes whose parameters all have the batch shape
local function expand_params(self, shape)
  local new = M.expanded(self, shape)
  for _, k in ipairs(getmetatable(self)._arg_names) do
    local v = rawget(self, k)
    if ember.is_tensor(v) then rawset(new, k, v:expand(shape)) end
  end
  return new
end

--- base.params_class(name, arg_names) -> a class whose parameters (arg_names, all
--- required, tensors or numbers) are broadcast together and make its batch shape:
--- Normal, Uniform, Exponential, Laplace, Poisson. _init and _expand are set.
function M.params_class(name, arg_names)
  local cls = M.class(name, nil, arg_names)
  function cls:_init(...)
    local o = M.options(name, arg_names, arg_names, ...)
    local values = {}
    for i, k in ipairs(arg_names) do values[i] = o[k] end
    M.init_params(self, arg_names, values, o.validate_args)
  end
  cls._expand = expand_params
  return cls
end

--- base.expand_with(field, set) -> an _expand for a class built around another
--- distribution self[field] (LogNormal's base_dist, ...): set(new, expanded inner)
function M.expand_with(field, set)
  return function(self, shape)
    local new = M.expanded(self, shape)
    set(new, self[field]:_expand(shape))
    return new
  end
end

-- ---- the public methods ------------------------------------------------------------------

local function not_implemented(self, what)
  raisef("%s: %s is not implemented for %s", self._name, what, self._name)
end

-- sample_shape + batch_shape + event_shape
function Distribution:_extended_shape(sample_shape)
  return concat(sample_shape, self.batch_shape, self.event_shape)
end

function Distribution:rsample(...)
  local shape = shape_arg(self._name .. ": rsample", "sample_shape", ...)
  if not self.has_rsample then
    raisef("%s: rsample is not implemented (%s has no reparameterised sampler; use sample)", self._name, self._name)
  end
  return self:_rsample(shape)
end

function Distribution:sample(...)
  local shape = shape_arg(self._name .. ": sample", "sample_shape", ...)
  local _ <close> = ember.no_grad()
  return self:_sample(shape)
end

-- without a sampler of its own a class samples by rsample, under no_grad
function Distribution:_sample(shape)
  if not self.has_rsample then not_implemented(self, "sample") end
  return self:_rsample(shape)
end

-- value as a tensor (a number or a bool tensor becomes one of the distribution's dtype)
-- whose rightmost dims are event_shape and the rest broadcast with batch_shape (PyTorch
-- checks the shape only with validate_args, and fails in the formula otherwise: here the
-- error is clear)
local function value_arg(self, op, value)
  if type(value) == "number" then return ember.tensor(value, {dtype = self._dtype, device = self._device}) end
  if not ember.is_tensor(value) then
    raisef("%s: %s: the value argument must be a tensor or a number, got %s", self._name, op, type(value))
  end
  -- a bool value (Bernoulli's outcomes, a mask) counts as 0 and 1 of the parameters' dtype
  if value.dtype == "bool" then value = value:to(self._dtype) end
  local vs, es = value.shape, self.event_shape
  local start = #vs - #es
  local ok = start >= 0
  for i = 1, #es do ok = ok and vs[start + i] == es[i] end
  if not ok then
    raisef("%s: %s: the right-most size of value must match event_shape: %s vs %s", self._name, op, show(vs), show(es))
  end
  local expected = concat(self.batch_shape, es)
  for i = 1, math.min(#vs, #expected) do
    local a, b = vs[#vs - i + 1], expected[#expected - i + 1]
    if a ~= 1 and b ~= 1 and a ~= b then
      raisef("%s: %s: value is not broadcastable with batch_shape+event_shape: %s vs %s", self._name, op, show(vs),
             show(expected))
    end
  end
  return value
end

-- PyTorch's _validate_sample (its shape part is value_arg's): every value must lie in
-- the support
function Distribution:_validate_sample(op, value)
  local support = op == "cdf" and self._cdf_support or self.support
  local _ <close> = ember.no_grad()
  if not support:check(value):all():item() then
    raisef("%s: %s: expected value argument (tensor of shape %s) to be within the support (%s) of the distribution "
           .. "%s, but found invalid values:\n%s", self._name, op, show(value.shape), tostring(support), tostring(self),
           tostring(value))
  end
end

function Distribution:log_prob(value)
  value = value_arg(self, "log_prob", value)
  if self._validate_args and not self._defers_validation then self:_validate_sample("log_prob", value) end
  return self:_log_prob(value)
end

function Distribution:cdf(value)
  value = value_arg(self, "cdf", value)
  if self._validate_args then self:_validate_sample("cdf", value) end
  return self:_cdf(value)
end

-- icdf's argument is a probability: not checked against the support (as in PyTorch)
function Distribution:icdf(value)
  return self:_icdf(value_arg(self, "icdf", value))
end

function Distribution:entropy() return self:_entropy() end

function Distribution:perplexity() return self:entropy():exp() end

-- batch_shape must expand to shape as a tensor's sizes do (right-aligned; only 1s grow)
function Distribution:expand(...)
  local shape = shape_arg(self._name .. ": expand", "batch_shape", ...)
  local bs = self.batch_shape
  local fits = #shape >= #bs
  for i = 1, fits and #bs or 0 do
    local have = bs[#bs - i + 1]
    if have ~= 1 and have ~= shape[#shape - i + 1] then fits = false end
  end
  if not fits then raisef("%s: expand: cannot expand batch_shape %s to %s", self._name, show(bs), show(shape)) end
  return self:_expand(shape)
end

function Distribution:enumerate_support(...)
  local o = require("ember.args").options(self._name .. ": enumerate_support", {"expand"}, ...)
  if o.expand ~= nil and type(o.expand) ~= "boolean" then
    raisef("%s: enumerate_support: expand must be a boolean, got %s", self._name, type(o.expand))
  end
  if not self.has_enumerate_support then not_implemented(self, "enumerate_support") end
  return self:_enumerate_support(o.expand ~= false)
end

function Distribution.set_default_validate_args(value)
  if type(value) ~= "boolean" then
    raisef("Distribution: set_default_validate_args: value must be a boolean, got %s", type(value))
  end
  default_validate = value
end

for _, k in ipairs({"_rsample", "_log_prob", "_cdf", "_icdf", "_entropy", "_expand", "_enumerate_support"}) do
  Distribution[k] = function(self) not_implemented(self, k:sub(2)) end
end

-- ---- properties every distribution has -------------------------------------------------------

local P = Distribution._props
P.stddev = function(self) return self.variance:sqrt() end
P.arg_constraints = function() return {} end
for _, k in ipairs({"mean", "mode", "variance", "support"}) do
  P[k] = function(self) not_implemented(self, k) end
end

-- values of enumerate_support: n values along dim 1, then one size-1 dim per batch dim
-- (expanded to batch_shape when asked)
function M.enumerate(self, values, expand)
  local n = values.shape[1]
  local shape = {n}
  for i = 1, #self.batch_shape do shape[i + 1] = 1 end
  for i = 2, values:dim() do shape[#shape + 1] = values.shape[i] end
  values = values:reshape(shape)
  if expand then
    local full = concat({n}, self.batch_shape, slice(values.shape, #self.batch_shape + 2, values:dim()))
    values = values:expand(full)
  end
  return values
end

M.constraints = constraints
return M
