-- ember.distributions.transforms — torch.distributions.transforms: invertible maps
-- y = t(x) with the log of the absolute value of their Jacobian's determinant, from which
-- TransformedDistribution (transformed.lua) makes densities: a SAC policy's tanh of a
-- Normal, a log-normal as exp of a normal, a Weibull as a power of an Exponential.
--
--   local T = ember.distributions.transforms
--   local t = T.ComposeTransform({T.AffineTransform(1, 2), T.TanhTransform()})
--   local y = t(x)                        -- forward; t.inv(y) is x again
--   t:log_abs_det_jacobian(x, y)          -- log |dy/dx|, summed over event dims
--
-- Each transform has PyTorch's domain and codomain (constraints), bijective, sign (+1 or -1
-- where monotone), event_dim, forward_shape / inverse_shape, inv (the inverse transform,
-- whose inv is the transform again) and cache_size (0, or 1: the last x and y are kept, so
-- t.inv(t(x)) returns x itself, which TanhTransform needs where atanh(y) would round to
-- inf). Formulas are PyTorch's, so values and gradients agree with it.
local ember = require "ember"
local B = require "ember.distributions.base"
local C = B.constraints
local options = require("ember.args").options

local raisef, list = B.raisef, B.list
local F = ember.nn.functional

local M = {}

-- ---- the base class -----------------------------------------------------------------------

local Transform = {__name = "Transform", _name = "Transform"}

-- fields: the class's, then its property getters (domain, codomain, inv, ...), as the
-- distributions' instances find theirs
local index = B.instance_index

Transform.__index = index
Transform._props = {}
Transform.__tostring = function(self) return self._name .. "()" end
M.Transform = Transform

local function check_cache_size(name, n)
  if n == nil then return 0 end
  if n ~= 0 and n ~= 1 then raisef("%s: cache_size must be 0 or 1, got %s", name, tostring(n)) end
  return math.tointeger(n)
end

-- A transform class: called as Name(...) it runs Name._init(self, ...) on a new instance.
local function class(name, parent)
  parent = parent or Transform
  local cls = {__name = name, _name = name, __index = index, __tostring = parent.__tostring, __call = parent.__call}
  cls._props = setmetatable({}, {__index = parent._props})
  return setmetatable(cls, {__index = parent, __call = function(c, ...)
    local self = setmetatable({}, c)
    c._init(self, ...)
    return self
  end})
end

-- whether v is a transform (an instance of one of these classes)
local function is_transform(v) return B.is_instance(v, Transform) end
M.is_transform = is_transform

local function check_value(self, what, v)
  if not ember.is_tensor(v) then raisef("%s: %s must be a tensor, got %s", self._name, what, type(v)) end
  return v
end

-- compute(self, arg), through the cache when cache_size is 1: the last pair, found by the
-- argument's identity under key, the result under other
local function cached(self, arg, key, other, compute)
  if self._cache_size == 0 then return compute(self, arg) end
  if rawequal(arg, rawget(self, key)) then return rawget(self, other) end
  local r = compute(self, arg)
  rawset(self, key, arg)
  rawset(self, other, r)
  return r
end

-- y = t(x)
function Transform.__call(self, x) return cached(self, check_value(self, "x", x), "_cached_x", "_cached_y", self._call) end

-- x = t^-1(y)
function Transform:_inv_call(y) return cached(self, check_value(self, "y", y), "_cached_y", "_cached_x", self._inverse) end

local function not_implemented(self, what) raisef("%s: %s is not implemented", self._name, what) end

function Transform:_call() not_implemented(self, "the forward map") end
function Transform:_inverse() not_implemented(self, "the inverse map") end
function Transform:_ladj() not_implemented(self, "log_abs_det_jacobian") end

--- t:log_abs_det_jacobian(x, y) -> log |det dy/dx| at x (y = t(x)), summed over event dims.
function Transform:log_abs_det_jacobian(x, y)
  return self:_ladj(check_value(self, "x", x), check_value(self, "y", y))
end

--- t:forward_shape(shape) -> the shape of t(x) for x of that shape (elementwise: the same).
function Transform:forward_shape(shape) return self:_forward_shape(list(shape)) end
--- t:inverse_shape(shape) -> the shape of t.inv(y) for y of that shape.
function Transform:inverse_shape(shape) return self:_inverse_shape(list(shape)) end
function Transform:_forward_shape(shape) return shape end
function Transform:_inverse_shape(shape) return shape end

--- t:equals(other) -> whether other is the same map (PyTorch's ==): the same class and
-- parameters.
function Transform:equals(other)
  return getmetatable(self) == getmetatable(other) and self:_same_params(other)
end
function Transform:_same_params() return true end

-- numbers or tensors holding the same values
local function same_value(a, b)
  if rawequal(a, b) then return true end
  if ember.is_tensor(a) ~= ember.is_tensor(b) then
    local t, v = ember.is_tensor(a) and a or b, ember.is_tensor(a) and b or a
    return t:eq(v):all():item()
  end
  if not ember.is_tensor(a) then return a == b end
  return B.broadcast_shapes(list(a.shape), list(b.shape)) ~= nil and a:eq(b):all():item()
end
M._same_value = same_value

-- a copy with another cache_size (PyTorch's with_cache)
function Transform:with_cache(cache_size)
  cache_size = check_cache_size(self._name, cache_size == nil and 1 or cache_size)
  if cache_size == self._cache_size then return self end
  return self:_with_cache(cache_size)
end

function Transform:_with_cache(cache_size)
  local fields = {}
  for k, v in pairs(self) do
    if k ~= "_cached_x" and k ~= "_cached_y" and k ~= "_inv" then fields[k] = v end
  end
  fields._cache_size = cache_size
  return setmetatable(fields, getmetatable(self))
end

-- properties a class may set as plain fields instead (ExpTransform's bijective = true, ...)
local P = Transform._props
P.bijective = function() return false end
P.sign = function(self) not_implemented(self, "sign (the transform is not monotone)") end
P.domain = function() return C.real end
P.codomain = function() return C.real end
P.event_dim = function(self) return self.domain.event_dim end
P.cache_size = function(self) return self._cache_size end
-- the inverse: one object per transform, whose inv is the transform again
P.inv = function(self)
  local inv = rawget(self, "_inv")
  if not inv then
    inv = setmetatable({_base = self}, M._InverseTransform)
    rawset(self, "_inv", inv)
  end
  return inv
end

-- ---- the inverse of a transform -----------------------------------------------------------

local Inverse = class("_InverseTransform")
M._InverseTransform = Inverse
Inverse.__tostring = function(self) return tostring(self._base) .. ".inv" end
function Inverse.__call(self, x) return self._base:_inv_call(check_value(self, "x", x)) end
function Inverse:_ladj(x, y) return -self._base:_ladj(y, x) end
function Inverse:_forward_shape(shape) return self._base:inverse_shape(shape) end
function Inverse:_inverse_shape(shape) return self._base:forward_shape(shape) end
function Inverse:_with_cache(cache_size) return self._base:with_cache(cache_size).inv end
function Inverse:_same_params(other) return self._base:equals(other._base) end
P = Inverse._props
P.domain = function(self) return self._base.codomain end
P.codomain = function(self) return self._base.domain end
P.bijective = function(self) return self._base.bijective end
P.sign = function(self) return self._base.sign end
P.inv = function(self) return self._base end
P.cache_size = function(self) return self._base._cache_size end

-- ---- elementwise transforms ---------------------------------------------------------------

-- a class whose only option is cache_size, with its maps and constraints
local function simple(name, fields)
  local cls = class(name)
  function cls:_init(...)
    local o = options(name, {"cache_size"}, ...)
    rawset(self, "_cache_size", check_cache_size(name, o.cache_size))
  end
  for k, v in pairs(fields) do
    if k == "domain" or k == "codomain" then cls._props[k] = function() return v end else cls[k] = v end
  end
  M[name] = cls
  return cls
end

--- ExpTransform([cache_size = 0]): y = exp(x).
simple("ExpTransform", {
  codomain = C.positive, bijective = true, sign = 1,
  _call = function(_, x) return x:exp() end,
  _inverse = function(_, y) return y:log() end,
  _ladj = function(_, x) return x end,
})

-- PyTorch clamps sigmoid's values inside (tiny, 1 - eps) of x's dtype, so that the
-- inverse and log_prob stay finite
local function clipped_sigmoid(x)
  return x:sigmoid():clamp(B.TINY[x.dtype], 1 - B.EPS[x.dtype])
end

--- SigmoidTransform([cache_size = 0]): y = sigmoid(x), clipped inside (0, 1) as PyTorch's.
simple("SigmoidTransform", {
  codomain = C.unit_interval, bijective = true, sign = 1,
  _call = function(_, x) return clipped_sigmoid(x) end,
  _inverse = function(_, y)
    y = y:clamp(B.TINY[y.dtype], 1 - B.EPS[y.dtype])
    return y:log() - (-y):log1p()
  end,
  _ladj = function(_, x) return -F.softplus(-x) - F.softplus(x) end,
})

--- TanhTransform([cache_size = 0]): y = tanh(x); with cache_size 1, t.inv(t(x)) is x itself.
simple("TanhTransform", {
  codomain = C.interval(-1.0, 1.0), bijective = true, sign = 1,
  _call = function(_, x) return x:tanh() end,
  _inverse = function(_, y) return y:atanh() end,
  -- log(1 - tanh(x)^2) in PyTorch's stable form, 2 (log 2 - x - softplus(-2x))
  _ladj = function(_, x) return (math.log(2) - x - F.softplus(-2 * x)) * 2 end,
})

--- SoftplusTransform([cache_size = 0]): y = log(1 + exp(x)).
simple("SoftplusTransform", {
  codomain = C.positive, bijective = true, sign = 1,
  _call = function(_, x) return F.softplus(x) end,
  _inverse = function(_, y) return (-y):expm1():neg():log() + y end,
  _ladj = function(_, x) return -F.softplus(-x) end,
})

--- AbsTransform([cache_size = 0]): y = |x| (not bijective: its inverse gives y).
simple("AbsTransform", {
  codomain = C.positive,
  _call = function(_, x) return x:abs() end,
  _inverse = function(_, y) return y end,
})

-- ---- transforms with parameters ------------------------------------------------------------

local function number_or_tensor(name, what, v)
  if type(v) ~= "number" and not ember.is_tensor(v) then
    raisef("%s: %s must be a number or a tensor, got %s", name, what, type(v))
  end
  return v
end

local function shape_of(v) return ember.is_tensor(v) and list(v.shape) or {} end

-- PyTorch's broadcast_shapes over lists, erroring with the transform's name
local function broadcast(name, ...)
  local out = {}
  for _, s in ipairs({...}) do
    local b = B.broadcast_shapes(out, s)
    if not b then raisef("%s: shapes %s and %s do not broadcast", name, B.show(out), B.show(s)) end
    out = b
  end
  return out
end

--- PowerTransform(exponent [, cache_size = 0]): y = x^exponent on positive x.
local Power = class("PowerTransform")
M.PowerTransform = Power
Power.bijective = true
function Power:_init(...)
  local o = options("PowerTransform", {"exponent", "cache_size"}, ...)
  rawset(self, "exponent", number_or_tensor("PowerTransform", "exponent", o.exponent))
  rawset(self, "_cache_size", check_cache_size("PowerTransform", o.cache_size))
end
Power._props.domain = function() return C.positive end
Power._props.codomain = function() return C.positive end
Power._props.sign = function(self)
  local e = self.exponent
  if ember.is_tensor(e) then return e:sign() end
  return e > 0 and 1 or e < 0 and -1 or 0
end
function Power:_call(x) return x:pow(self.exponent) end
function Power:_inverse(y)
  local e = self.exponent
  return y:pow(ember.is_tensor(e) and e:reciprocal() or 1 / e)
end
function Power:_ladj(x, y) return (y * self.exponent / x):abs():log() end
function Power:_forward_shape(shape) return broadcast(self._name, shape, shape_of(self.exponent)) end
Power._inverse_shape = Power._forward_shape
function Power:_same_params(other) return same_value(self.exponent, other.exponent) end
Power.__tostring = function(self) return "PowerTransform(exponent=" .. tostring(self.exponent) .. ")" end

--- AffineTransform(loc, scale [, event_dim = 0 [, cache_size = 0]]): y = loc + scale x;
-- event_dim > 0 treats the rightmost dims as one event (the log-det sums over them).
local Affine = class("AffineTransform")
M.AffineTransform = Affine
Affine.bijective = true
function Affine:_init(...)
  local name = "AffineTransform"
  local o = options(name, {"loc", "scale", "event_dim", "cache_size"}, ...)
  rawset(self, "loc", number_or_tensor(name, "loc", o.loc))
  rawset(self, "scale", number_or_tensor(name, "scale", o.scale))
  local ed = o.event_dim == nil and 0 or o.event_dim
  if math.type(ed) ~= "integer" or ed < 0 then
    raisef("%s: event_dim must be a non-negative integer, got %s", name, tostring(ed))
  end
  rawset(self, "_event_dim", ed)
  rawset(self, "_cache_size", check_cache_size(name, o.cache_size))
end
P = Affine._props
P.event_dim = function(self) return self._event_dim end
P.domain = function(self) return self._event_dim == 0 and C.real or C.independent(C.real, self._event_dim) end
P.codomain = P.domain
P.sign = function(self)
  local s = self.scale
  if ember.is_tensor(s) then return s:sign() end
  return s > 0 and 1 or s < 0 and -1 or 0
end
function Affine:_call(x) return x * self.scale + self.loc end
function Affine:_inverse(y) return (y - self.loc) / self.scale end
function Affine:_ladj(x)
  local shape, s = list(x.shape), self.scale
  local r = ember.is_tensor(s) and s:abs():log()
            or ember.full_like(x, math.log(math.abs(s)))
  local ed = self._event_dim
  if ed > 0 then
    local rs = list(r.shape)
    local keep = B.slice(rs, 1, #rs - ed)
    keep[#keep + 1] = -1
    r = r:reshape(keep):sum(-1)
    shape = B.slice(shape, 1, #shape - ed)
  end
  return r:expand(shape)
end
function Affine:_forward_shape(shape) return broadcast(self._name, shape, shape_of(self.loc), shape_of(self.scale)) end
Affine._inverse_shape = Affine._forward_shape
function Affine:_same_params(other)
  return self._event_dim == other._event_dim and same_value(self.loc, other.loc) and same_value(self.scale, other.scale)
end
Affine.__tostring = function(self)
  return string.format("AffineTransform(loc=%s, scale=%s)", tostring(self.loc), tostring(self.scale))
end

--- SoftmaxTransform([cache_size = 0]): x -> softmax over the last dim (not bijective: its
-- inverse is log, up to a constant).
local Softmax = simple("SoftmaxTransform", {
  domain = C.real_vector, codomain = C.simplex,
  _call = function(_, x)
    local p = (x - x:amax(-1, true)):exp()
    return p / p:sum(-1, true)
  end,
  _inverse = function(_, y) return y:log() end,
})
function Softmax:_forward_shape(shape)
  if #shape < 1 then raisef("SoftmaxTransform: too few dimensions on input (a vector event needs one)") end
  return list(shape)
end
Softmax._inverse_shape = Softmax._forward_shape

-- ---- composing ----------------------------------------------------------------------------

local function check_transform(name, what, t)
  if not is_transform(t) then raisef("%s: %s must be a transform, got %s", name, what, type(t)) end
  return t
end

--- ComposeTransform(parts [, cache_size = 0]): parts applied in order, parts[1] first.
local Compose = class("ComposeTransform")
M.ComposeTransform = Compose
-- a list of transforms (empty included) as the first argument, rather than an options table
local function is_list(v) return type(v) == "table" and not is_transform(v) and (v[1] ~= nil or next(v) == nil) end

function Compose:_init(...)
  local name = "ComposeTransform"
  local first = ...
  local o
  if is_list(first) then
    o = options(name, {"cache_size"}, select(2, ...))
    o.parts = first
  else
    o = options(name, {"parts", "cache_size"}, ...)
  end
  if type(o.parts) ~= "table" or is_transform(o.parts) then
    raisef("%s: parts must be a list of transforms, got %s", name, type(o.parts))
  end
  local parts = {}
  for i, t in ipairs(o.parts) do parts[i] = check_transform(name, "parts[" .. i .. "]", t) end
  local cache = check_cache_size(name, o.cache_size)
  if cache == 1 then
    for i, t in ipairs(parts) do parts[i] = t:with_cache(1) end
  end
  rawset(self, "parts", parts)
  rawset(self, "_cache_size", cache)
end
function Compose:_with_cache(cache_size) return Compose(self.parts, cache_size) end
P = Compose._props
P.bijective = function(self)
  for _, t in ipairs(self.parts) do if not t.bijective then return false end end
  return true
end
P.sign = function(self)
  local s = 1
  for _, t in ipairs(self.parts) do s = s * t.sign end
  return s
end
-- the domain's event_dim is the largest any part needs, counted back from the end (as
-- PyTorch's), and the codomain's counted forward from the start
P.domain = function(self)
  local parts = self.parts
  if #parts == 0 then return C.real end
  local d = parts[1].domain
  local ed = parts[#parts].codomain.event_dim
  for i = #parts, 1, -1 do
    ed = math.max(ed + parts[i].domain.event_dim - parts[i].codomain.event_dim, parts[i].domain.event_dim)
  end
  return ed > d.event_dim and C.independent(d, ed - d.event_dim) or d
end
P.codomain = function(self)
  local parts = self.parts
  if #parts == 0 then return C.real end
  local c = parts[#parts].codomain
  local ed = parts[1].domain.event_dim
  for i = 1, #parts do
    ed = math.max(ed + parts[i].codomain.event_dim - parts[i].domain.event_dim, parts[i].codomain.event_dim)
  end
  return ed > c.event_dim and C.independent(c, ed - c.event_dim) or c
end
P.inv = function(self)
  local inv = rawget(self, "_inv")
  if not inv then
    local parts = {}
    for i = #self.parts, 1, -1 do parts[#parts + 1] = self.parts[i].inv end
    inv = Compose(parts)
    rawset(inv, "_inv", self)
    rawset(self, "_inv", inv)
  end
  return inv
end
function Compose:_call(x)
  for _, t in ipairs(self.parts) do x = t(x) end
  return x
end
function Compose:_inverse(y)
  for i = #self.parts, 1, -1 do y = self.parts[i].inv(y) end
  return y
end
function Compose:_ladj(x, y)
  local parts = self.parts
  if #parts == 0 then return ember.zeros_like(x) end
  local xs = {x}
  for i = 1, #parts - 1 do xs[i + 1] = parts[i](xs[i]) end
  xs[#parts + 1] = y
  local ed = self.domain.event_dim
  local total
  for i, t in ipairs(parts) do
    local term = B.sum_rightmost(t:log_abs_det_jacobian(xs[i], xs[i + 1]), ed - t.domain.event_dim)
    total = total and total + term or term
    ed = ed + t.codomain.event_dim - t.domain.event_dim
  end
  return total
end
function Compose:_forward_shape(shape)
  for _, t in ipairs(self.parts) do shape = t:forward_shape(shape) end
  return list(shape)
end
function Compose:_inverse_shape(shape)
  for i = #self.parts, 1, -1 do shape = self.parts[i]:inverse_shape(shape) end
  return list(shape)
end
function Compose:_same_params(other)
  if #self.parts ~= #other.parts then return false end
  for i, t in ipairs(self.parts) do if not t:equals(other.parts[i]) then return false end end
  return true
end
Compose.__tostring = function(self)
  local s = {}
  for i, t in ipairs(self.parts) do s[i] = "    " .. tostring(t) end
  return "ComposeTransform(\n" .. table.concat(s, ",\n") .. "\n)"
end

--- IndependentTransform(base_transform, reinterpreted_batch_ndims [, cache_size = 0]): base_transform
-- with its rightmost dims as one event (the log-det sums over them).
local Ind = class("IndependentTransform")
M.IndependentTransform = Ind
function Ind:_init(...)
  local name = "IndependentTransform"
  local o = options(name, {"base_transform", "reinterpreted_batch_ndims", "cache_size"}, ...)
  local n = o.reinterpreted_batch_ndims
  if math.type(n) ~= "integer" or n < 0 then
    raisef("%s: reinterpreted_batch_ndims must be a non-negative integer, got %s", name, tostring(n))
  end
  local cache = check_cache_size(name, o.cache_size)
  local base = check_transform(name, "base_transform", o.base_transform)
  rawset(self, "base_transform", cache == 1 and base:with_cache(1) or base)
  rawset(self, "reinterpreted_batch_ndims", n)
  rawset(self, "_cache_size", cache)
end
function Ind:_with_cache(c) return Ind(self.base_transform, self.reinterpreted_batch_ndims, c) end
P = Ind._props
P.domain = function(self) return C.independent(self.base_transform.domain, self.reinterpreted_batch_ndims) end
P.codomain = function(self) return C.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims) end
P.bijective = function(self) return self.base_transform.bijective end
P.sign = function(self) return self.base_transform.sign end
function Ind:_call(x) return self.base_transform(x) end
function Ind:_inverse(y) return self.base_transform.inv(y) end
function Ind:_ladj(x, y)
  return B.sum_rightmost(self.base_transform:log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)
end
function Ind:_forward_shape(shape) return self.base_transform:forward_shape(shape) end
function Ind:_inverse_shape(shape) return self.base_transform:inverse_shape(shape) end
function Ind:_same_params(other)
  return self.reinterpreted_batch_ndims == other.reinterpreted_batch_ndims
         and self.base_transform:equals(other.base_transform)
end
Ind.__tostring = function(self)
  return string.format("IndependentTransform(%s, %d)", tostring(self.base_transform), self.reinterpreted_batch_ndims)
end

M.identity_transform = Compose({})

return M
