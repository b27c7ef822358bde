-- ember.distributions.constraints — the sets a distribution's parameters and values
-- live in (torch.distributions.constraints): c:check(value) is a bool tensor saying,
-- element by element (one element per event for event_dim > 0), whether value is in
-- the set; tostring(c) is PyTorch's repr ("GreaterThan(lower_bound=0.0)"), which the
-- validation errors quote.
--
-- Category positions are 1-based in ember, so integer_interval is used as
-- integer_interval(1, K) where PyTorch has integer_interval(0, K - 1).
local ember = require "ember"

local Constraint = {__name = "Constraint"}
Constraint.__index = Constraint
Constraint.__tostring = function(c) return c._repr end

function Constraint:check(value) return self._check(value) end

local M = {Constraint = Constraint}

local function new(repr, check, event_dim, is_discrete, fields)
  local c = setmetatable(fields or {}, Constraint)
  c._repr, c._check, c.event_dim, c.is_discrete = repr, check, event_dim or 0, is_discrete or false
  return c
end

-- A bound as PyTorch prints it: floats with a decimal point (0.0), tensors as tensors.
local function bound_str(b)
  if ember.is_tensor(b) then return tostring(b) end
  if math.type(b) == "integer" or b == math.floor(b) and math.abs(b) < 1e15 then
    return string.format("%.1f", b)
  end
  return string.format("%.17g", b)
end

local function is_integral(v) return (v % 1):eq(0) end

M.real = new("Real()", function(v) return v:eq(v) end)
M.boolean = new("Boolean()", function(v) return v:eq(0):logical_or(v:eq(1)) end, 0, true)

function M.greater_than(lower)
  return new("GreaterThan(lower_bound=" .. bound_str(lower) .. ")", function(v) return v:gt(lower) end, 0, false,
             {lower_bound = lower})
end

function M.greater_than_eq(lower)
  return new("GreaterThanEq(lower_bound=" .. bound_str(lower) .. ")", function(v) return v:ge(lower) end, 0, false,
             {lower_bound = lower})
end

function M.less_than(upper)
  return new("LessThan(upper_bound=" .. bound_str(upper) .. ")", function(v) return v:lt(upper) end, 0, false,
             {upper_bound = upper})
end

function M.interval(lower, upper)
  return new("Interval(lower_bound=" .. bound_str(lower) .. ", upper_bound=" .. bound_str(upper) .. ")",
             function(v) return v:ge(lower):logical_and(v:le(upper)) end, 0, false,
             {lower_bound = lower, upper_bound = upper})
end

-- an integer bound as PyTorch prints it: a number plainly, a tensor as a tensor
local function int_bound_str(b) return ember.is_tensor(b) and tostring(b) or string.format("%d", b) end

-- bounds are integers or tensors (Binomial's total_count)
function M.integer_interval(lower, upper)
  return new(string.format("IntegerInterval(lower_bound=%s, upper_bound=%s)", int_bound_str(lower),
                           int_bound_str(upper)),
             function(v) return is_integral(v):logical_and(v:ge(lower)):logical_and(v:le(upper)) end, 0, true,
             {lower_bound = lower, upper_bound = upper})
end

-- base's check, all-reduced over the n rightmost dims (those become one event)
function M.independent(base, n)
  return new(string.format("IndependentConstraint(%s, %d)", tostring(base), n), function(v)
    local r = base:check(v)
    if n == 0 then return r end
    return r:flatten(r:dim() - n + 1):all(-1)
  end, base.event_dim + n, base.is_discrete, {base_constraint = base, reinterpreted_batch_ndims = n})
end

-- counts >= 0 over the last dim adding up to at most upper (PyTorch's constraints.multinomial)
function M.multinomial(upper)
  return new(string.format("Multinomial(upper_bound=%d)", upper), function(v)
    return v:ge(0):all(-1):logical_and(v:sum(-1):le(upper))
  end, 1, true, {upper_bound = upper})
end

M.positive = M.greater_than(0.0)
M.nonnegative = M.greater_than_eq(0.0)
M.unit_interval = M.interval(0.0, 1.0)
M.real_vector = M.independent(M.real, 1)
M.nonnegative_integer = new("IntegerGreaterThan(lower_bound=0)",
                            function(v) return is_integral(v):logical_and(v:ge(0)) end, 0, true, {lower_bound = 0})

M.simplex = new("Simplex()", function(v)
  return v:ge(0):all(-1):logical_and((v:sum(-1) - 1):abs():lt(1e-6))
end, 1)

M.one_hot = new("OneHot()", function(v)
  return v:eq(0):logical_or(v:eq(1)):all(-1):logical_and(v:sum(-1):eq(1))
end, 1, true)

-- PyTorch: symmetric (within 1e-6) and cholesky_ex succeeds; here the smallest
-- eigenvalue must be positive, which is what a successful Cholesky factorisation says
M.positive_definite = new("PositiveDefinite()", function(v)
  local symmetric = v:isclose(v.mT, {atol = 1e-6}):all(-1):all(-1)
  local ok, ev = pcall(ember.linalg.eigvalsh, v)
  if not ok then return symmetric:logical_and(false) end
  return symmetric:logical_and(ev:amin(-1):gt(0))
end, 2)

M.lower_cholesky = new("LowerCholesky()", function(v)
  local lower = v:tril():eq(v):all(-1):all(-1)
  return lower:logical_and(v:diagonal(0, -2, -1):gt(0):all(-1))
end, 2)

return M
