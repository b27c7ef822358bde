-- ember.distributions.multivariate — MultivariateNormal and Independent.
--
-- MultivariateNormal works from the lower Cholesky factor L of the covariance
-- (PyTorch's _unbroadcasted_scale_tril): rsample is loc + L eps, log_prob needs
-- the Mahalanobis term |L^-1 (x - loc)|^2, from ember.linalg.solve_triangular.
local ember = require "ember"
local B = require "ember.distributions.base"
local C = B.constraints

local class, raisef, concat, slice = B.class, B.raisef, B.concat, B.slice
local shape_str = require("ember.errors").shape_str
local M = {}

local LOG_2PI = math.log(2 * math.pi)

-- a linalg call whose failure (a matrix that is not positive-definite) names the class
local function linalg(name, f, ...)
  local r = table.pack(pcall(f, ...))
  if not r[1] then raisef("%s: %s", name, (tostring(r[2]):gsub("^[^:]*:%d+: ", ""))) end
  return table.unpack(r, 2, r.n)
end

-- L^-1 b for lower-triangular L (batch dims broadcast). Only L's lower triangle is
-- read, as by PyTorch's solve_triangular(upper=False): the gradient of the entries
-- above the diagonal is 0.
local function solve_lower(L, b) return ember.linalg.solve_triangular(L, b, {upper = false}) end
M.solve_lower = solve_lower

-- |L^-1 x|^2 over the last dim of x, L's batch broadcast against x's
local function mahalanobis(L, x)
  return solve_lower(L, x:unsqueeze(-1)):squeeze(-1):pow(2):sum(-1)
end
M.mahalanobis = mahalanobis

-- the squared Frobenius norm of each matrix: trace(X X^T)
local function trace_xxt(x) return x:pow(2):sum(-1):sum(-1) end
M.trace_xxt = trace_xxt

local function eye_like(t, n) return ember.eye(n, {dtype = t.dtype, device = t.device}) end

-- the lower Cholesky factor of P^-1: flipping P's rows and columns turns the upper
-- factor of P^-1 into a lower one (PyTorch's _precision_to_scale_tril)
local function precision_to_scale_tril(name, P)
  local Lf = linalg(name, ember.linalg.cholesky, P:flip({-2, -1}))
  local L_inv = Lf:flip({-2, -1}).mT
  return solve_lower(L_inv, eye_like(P, P.shape[P:dim()]))
end

-------------------------------------------------------------------------------
-- MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril)

local MATRICES = {"covariance_matrix", "precision_matrix", "scale_tril"}
local MVN_ARGS = {"loc", "covariance_matrix", "precision_matrix", "scale_tril"}
local MVN_NAME = "MultivariateNormal"
local MultivariateNormal = class(MVN_NAME, nil, MVN_ARGS)
MultivariateNormal.has_rsample = true
M.MultivariateNormal = MultivariateNormal

function MultivariateNormal:_init(...)
  local o = B.options(MVN_NAME, MVN_ARGS, {"loc"}, ...)
  local loc = o.loc
  B.check_param_tensor(MVN_NAME, "loc", loc, 1)
  local given = {}
  for _, k in ipairs(MATRICES) do if o[k] ~= nil then given[#given + 1] = k end end
  if #given ~= 1 then
    raisef("%s: exactly one of covariance_matrix or precision_matrix or scale_tril may be specified, got %s",
           MVN_NAME, #given == 0 and "none" or table.concat(given, " and "))
  end
  local k = given[1]
  local m = o[k]
  B.check_param_tensor(MVN_NAME, k, m, 2)
  local d = m:dim()
  local n = loc.shape[loc:dim()]
  if m.shape[d] ~= m.shape[d - 1] then
    raisef("%s: %s must be square (its last two dims), got shape %s", MVN_NAME, k, shape_str(m))
  end
  if m.shape[d] ~= n then
    raisef("%s: %s of shape %s does not fit loc of shape %s (event size %d vs %d)", MVN_NAME, k, shape_str(m),
           shape_str(loc), m.shape[d], n)
  end
  local batch = B.broadcast_shapes(slice(m.shape, 1, d - 2), slice(loc.shape, 1, loc:dim() - 1))
  if not batch then
    raisef("%s: the batch dims of %s %s and of loc %s cannot be broadcast together", MVN_NAME, k, shape_str(m),
           shape_str(loc))
  end
  rawset(self, k, m:expand(concat(batch, {n, n})))
  rawset(self, "loc", loc:expand(concat(batch, {n})))
  B.set_dtype(self, loc)
  B.init(self, batch, {n}, o.validate_args)
  local L = m
  if k == "covariance_matrix" then
    L = linalg(MVN_NAME, ember.linalg.cholesky, m)
  elseif k == "precision_matrix" then
    L = precision_to_scale_tril(MVN_NAME, m)
  end
  rawset(self, "_unbroadcasted_scale_tril", L)
end

-- a matrix of each batch element, from L, computed once (with grad on, as PyTorch's
-- lazy_property)
local function lazy_matrix(name, compute)
  return function(self)
    local v = ember.enable_grad(function()
      local n = self.event_shape[1]
      return compute(self._unbroadcasted_scale_tril, n):expand(concat(self.batch_shape, {n, n}))
    end)
    rawset(self, name, v)
    return v
  end
end

local P = MultivariateNormal._props
P.arg_constraints = function()
  return {loc = C.real_vector, covariance_matrix = C.positive_definite, precision_matrix = C.positive_definite,
          scale_tril = C.lower_cholesky}
end
P.support = function() return C.real_vector end
P.mean = function(self) return self.loc end
P.mode = function(self) return self.loc end
P.variance = function(self)
  return self._unbroadcasted_scale_tril:pow(2):sum(-1):expand(concat(self.batch_shape, self.event_shape))
end
P.scale_tril = lazy_matrix("scale_tril", function(L) return L end)
P.covariance_matrix = lazy_matrix("covariance_matrix", function(L) return L:matmul(L.mT) end)
-- (L L^T)^-1 = L^-T L^-1 (PyTorch's cholesky_inverse, whose gradient reaches all of L)
P.precision_matrix = lazy_matrix("precision_matrix", function(L, n)
  local L_inv = ember.linalg.solve(L, eye_like(L, n))
  return L_inv.mT:matmul(L_inv)
end)

function MultivariateNormal:_expand(shape)
  local new = B.expanded(self, shape)
  local n = self.event_shape[1]
  rawset(new, "loc", self.loc:expand(concat(shape, {n})))
  rawset(new, "_unbroadcasted_scale_tril", self._unbroadcasted_scale_tril)
  for _, k in ipairs(MATRICES) do
    local v = rawget(self, k)
    if v then rawset(new, k, v:expand(concat(shape, {n, n}))) end
  end
  return new
end

function MultivariateNormal:_rsample(shape)
  local eps = ember.randn(self:_extended_shape(shape), {dtype = self._dtype, device = self._device})
  return self.loc + self._unbroadcasted_scale_tril:matmul(eps:unsqueeze(-1)):squeeze(-1)
end

local function half_log_det(L) return L:diagonal(0, -2, -1):log():sum(-1) end
M.half_log_det = half_log_det

function MultivariateNormal:_log_prob(value)
  local L = self._unbroadcasted_scale_tril
  local m = mahalanobis(L, value - self.loc)
  return -0.5 * (self.event_shape[1] * LOG_2PI + m) - half_log_det(L)
end

function MultivariateNormal:_entropy()
  local H = 0.5 * self.event_shape[1] * (1.0 + LOG_2PI) + half_log_det(self._unbroadcasted_scale_tril)
  if #self.batch_shape == 0 then return H end
  return H:expand(self.batch_shape)
end

-------------------------------------------------------------------------------
-- Independent(base_distribution, reinterpreted_batch_ndims): the rightmost batch
-- dims of base_distribution become event dims (log_prob and entropy sum over them)

local IND_ARGS = {"base_distribution", "reinterpreted_batch_ndims"}
local Independent = class("Independent", nil, {})
M.Independent = Independent

local function set_independent(self, base_dist, n)
  B.set_base(self, base_dist)
  rawset(self, "reinterpreted_batch_ndims", n)
  rawset(self, "has_enumerate_support", n == 0 and base_dist.has_enumerate_support)
end

function Independent:_init(...)
  local o = B.options("Independent", IND_ARGS, IND_ARGS, ...)
  local base_dist, n = o.base_distribution, o.reinterpreted_batch_ndims
  if not B.is_distribution(base_dist) then
    raisef("Independent: base_distribution must be a distribution, got %s", type(base_dist))
  end
  if math.type(n) ~= "integer" or n < 0 then
    raisef("Independent: reinterpreted_batch_ndims must be a non-negative integer, got %s", tostring(n))
  end
  local nb = #base_dist.batch_shape
  if n > nb then
    raisef("Independent: expected reinterpreted_batch_ndims <= #base_distribution.batch_shape, actual %d vs %d", n, nb)
  end
  local shape = concat(base_dist.batch_shape, base_dist.event_shape)
  local event_dim = n + #base_dist.event_shape
  set_independent(self, base_dist, n)
  B.init(self, slice(shape, 1, #shape - event_dim), slice(shape, #shape - event_dim + 1, #shape), o.validate_args)
end

function Independent:__tostring()
  return string.format("Independent(%s, %d)", tostring(self.base_dist), self.reinterpreted_batch_ndims)
end

-- as PyTorch, log_prob leaves validation to base_dist (with its own validate_args)
Independent._defers_validation = true

P = Independent._props
P.support = function(self)
  local n = self.reinterpreted_batch_ndims
  return n > 0 and C.independent(self.base_dist.support, n) or self.base_dist.support
end
P.mean = function(self) return self.base_dist.mean end
P.mode = function(self) return self.base_dist.mode end
P.variance = function(self) return self.base_dist.variance end

function Independent:_expand(shape)
  local new = B.expanded(self, shape)
  local n = self.reinterpreted_batch_ndims
  set_independent(new, self.base_dist:_expand(concat(shape, slice(self.event_shape, 1, n))), n)
  return new
end

function Independent:_sample(shape) return self.base_dist:_sample(shape) end
function Independent:_rsample(shape) return self.base_dist:_rsample(shape) end

function Independent:_log_prob(value)
  return B.sum_rightmost(self.base_dist:log_prob(value), self.reinterpreted_batch_ndims)
end

function Independent:_entropy()
  return B.sum_rightmost(self.base_dist:entropy(), self.reinterpreted_batch_ndims)
end

function Independent:_enumerate_support(expand) return self.base_dist:_enumerate_support(expand) end

return M
