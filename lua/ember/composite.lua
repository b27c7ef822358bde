-- ember.composite — PyTorch functions written in Lua over the engine's ops: the
-- matrix-vector family (mv, addmv, addr, addbmm, baddbmm, vdot, inner, ger), gcd
-- and lcm, fmin/fmax, float_power, sinc, signbit, ldexp, nextafter, rad2deg/deg2rad, isreal
-- and positive. Autograd records the ops they are made of, so their gradients
-- follow, and they run on every device the composed ops run on.
--
-- Loaded on first use: a name that ember (or a tensor's method table) does not
-- define makes lua/ember.c require this file once; loading it installs every
-- function here and in the files of PARTS in the module and method tables, so a
-- new composite is written in its file alone (with its doc entry and test).
local ember = require "ember"
local raise = require("ember.errors").raise
local options = require("ember.args").options
local inplace = require "ember.composite.inplace"

local M = {}        -- ember.X
local methods = {}  -- t:X (the in-place forms only here)

local shape_str, check_tensor = require("ember.errors").shape_str, require("ember.errors").check_tensor

local function check_dim(t, n, op, what)
  check_tensor(t, op, what)
  if t:dim() ~= n then
    raise(string.format("%s: %s must be %d-D, got %s (%d-D)", op, what, n, shape_str(t), t:dim()))
  end
end

local integer_dtypes = {int64 = true, int32 = true, int16 = true, int8 = true, uint8 = true}
local float_dtypes = {float32 = true, float64 = true, float16 = true, bfloat16 = true}

-- beta * input + alpha * product, PyTorch's rule for the add* family: with beta = 0
-- input is not read (its NaN and infinities do not reach the result); input must
-- broadcast to the product's shape, which the result keeps.
local function scaled_sum(op, input, product, o)
  local beta, alpha = o.beta == nil and 1 or o.beta, o.alpha == nil and 1 or o.alpha
  for name, v in pairs({beta = beta, alpha = alpha}) do
    if type(v) ~= "number" then raise(string.format("%s: %s must be a number, got %s", op, name, type(v))) end
  end
  if not float_dtypes[product.dtype] and (math.type(beta) ~= "integer" or math.type(alpha) ~= "integer") then
    raise(string.format("%s: beta and alpha must be integers for %s inputs, got beta = %s, alpha = %s",
                        op, product.dtype, tostring(beta), tostring(alpha)))
  end
  local ishape, pshape = input.shape, product.shape
  local nd, np = #ishape, #pshape
  local fits = nd <= np
  for i = 1, math.min(nd, np) do
    local a, b = ishape[nd - i + 1], pshape[np - i + 1]
    if a ~= b and a ~= 1 then fits = false end
  end
  if not fits then
    raise(string.format("%s: input of shape %s does not broadcast to the product's shape %s", op,
                        shape_str(input), shape_str(product)))
  end
  if alpha ~= 1 then product = product * alpha end
  if beta == 0 then return product end
  if beta ~= 1 then input = input * beta end
  return input + product
end

-- the in-place form X_ of M[X]: self:X_(args...) == self:copy_(X(self, args...))
local function inplace_of(name)
  local f = M[name]
  methods[name .. "_"] = function(self, ...)
    inplace.check_target(name .. "_", self)
    return inplace.into(name .. "_", self, f(self, ...))
  end
end

-- ---- the matrix-vector family ------------------------------------------------------------

-- PyTorch's matrix products take operands of one dtype only
local function same_dtype(op, ...)
  local ts = {...}
  for i = 2, #ts do
    if ts[i].dtype ~= ts[1].dtype then
      local names = {}
      for j, t in ipairs(ts) do names[j] = t.dtype end
      raise(string.format("%s: expected tensors of the same dtype, got %s", op, table.concat(names, ", ")))
    end
  end
end

-- mat @ vec after the checks mv and addmv share
local function checked_mv(op, mat, vec)
  check_dim(mat, 2, op, "mat")
  check_dim(vec, 1, op, "vec")
  same_dtype(op, mat, vec)
  if mat.shape[2] ~= vec.shape[1] then
    raise(string.format("%s: %s @ %s: inner dimensions differ (%d vs %d)", op, shape_str(mat), shape_str(vec),
                        mat.shape[2], vec.shape[1]))
  end
  return mat:matmul(vec)
end

-- autocast: mv and addmv are in PyTorch's CUDA low-precision list and in none
-- of its CPU lists; the matmul inside runs without autocast, which would cast
-- it on the CPU too

--- ember.mv(mat, vec) -> mat @ vec for a 2-D mat [n, m] and a 1-D vec [m]: a 1-D [n].
function M.mv(mat, vec)
  mat, vec = ember._autocast("lower_cuda", mat, vec)
  return ember._without_autocast(checked_mv, "mv", mat, vec)
end

--- ember.addmv(input, mat, vec [, {beta = 1, alpha = 1}]) -> beta * input + alpha * (mat @ vec).
function M.addmv(input, mat, vec, ...)
  local o = options("addmv", {"*", "beta", "alpha"}, ...)
  check_tensor(input, "addmv", "input")
  input, mat, vec = ember._autocast("lower_cuda", input, mat, vec)
  local product = ember._without_autocast(checked_mv, "addmv", mat, vec)
  same_dtype("addmv", input, mat, vec)
  return scaled_sum("addmv", input, product, o)
end

--- ember.addr(input, vec1, vec2 [, {beta = 1, alpha = 1}]) -> beta * input + alpha * outer(vec1, vec2).
function M.addr(input, vec1, vec2, ...)
  local o = options("addr", {"*", "beta", "alpha"}, ...)
  check_tensor(input, "addr", "input")
  check_dim(vec1, 1, "addr", "vec1")
  check_dim(vec2, 1, "addr", "vec2")
  -- autocast: in PyTorch's CUDA low-precision list, in none of its CPU lists
  input, vec1, vec2 = ember._autocast("lower_cuda", input, vec1, vec2)
  return scaled_sum("addr", input, vec1:outer(vec2), o)
end

-- The arguments of baddbmm and addbmm (op): autocast's policy (in both device types'
-- low-precision lists, as bmm), the options {beta, alpha}, then input and the batches
-- checked; returns input, batch1, batch2 and the options
local function batch_args(op, input, b1, b2, ...)
  input, b1, b2 = ember._autocast("lower", input, b1, b2)
  local o = options(op, {"*", "beta", "alpha"}, ...)
  check_tensor(input, op, "input")
  check_dim(b1, 3, op, "batch1")
  check_dim(b2, 3, op, "batch2")
  same_dtype(op, input, b1, b2)
  if b1.shape[1] ~= b2.shape[1] or b1.shape[3] ~= b2.shape[2] then
    raise(string.format("%s: batch1 %s and batch2 %s: expected [b, n, m] and [b, m, p]", op, shape_str(b1),
                        shape_str(b2)))
  end
  return input, b1, b2, o
end

--- ember.baddbmm(input, batch1, batch2 [, {beta = 1, alpha = 1}]) -> beta * input + alpha * bmm(batch1, batch2).
function M.baddbmm(input, batch1, batch2, ...)
  local o
  input, batch1, batch2, o = batch_args("baddbmm", input, batch1, batch2, ...)
  return scaled_sum("baddbmm", input, batch1:bmm(batch2), o)
end

--- ember.addbmm(input, batch1, batch2 [, {beta = 1, alpha = 1}]) -> beta * input + alpha * sum over b of batch1[b] @ batch2[b].
function M.addbmm(input, batch1, batch2, ...)
  local o
  input, batch1, batch2, o = batch_args("addbmm", input, batch1, batch2, ...)
  -- one GEMM: [n, b*m] @ [b*m, p] sums the b products
  local b, n, m = batch1.shape[1], batch1.shape[2], batch1.shape[3]
  local p = batch2.shape[3]
  local lhs = batch1:permute(2, 1, 3):reshape(n, b * m)
  return scaled_sum("addbmm", input, lhs:matmul(batch2:reshape(b * m, p)), o)
end

--- ember.vdot(a, b) -> the dot product of two 1-D tensors of the same size and dtype (0-d).
function M.vdot(a, b)
  check_dim(a, 1, "vdot", "input")
  check_dim(b, 1, "vdot", "other")
  if a.dtype ~= b.dtype then
    raise(string.format("vdot: expected both vectors to have the same dtype, got %s and %s", a.dtype, b.dtype))
  end
  if a.shape[1] ~= b.shape[1] then
    raise(string.format("vdot: vectors of different sizes: %s and %s", shape_str(a), shape_str(b)))
  end
  return a:dot(b)
end

--- ember.inner(a, b) -> the sums of products over the last dimensions: shape a.shape[1..-2] .. b.shape[1..-2]; a * b when either is 0-d.
function M.inner(a, b)
  check_tensor(a, "inner", "input")
  check_tensor(b, "inner", "other")
  if a:dim() == 0 or b:dim() == 0 then return a * b end
  same_dtype("inner", a, b)
  local k = a.shape[a:dim()]
  if b.shape[b:dim()] ~= k then
    raise(string.format("inner: the last dimensions of %s and %s differ (%d vs %d)", shape_str(a), shape_str(b),
                        k, b.shape[b:dim()]))
  end
  -- two vectors: dot, as PyTorch (and autocast's policy with it: none lists dot)
  if a:dim() == 1 and b:dim() == 1 then return ember.dot(a, b) end
  -- PyTorch's inner is tensordot over the last dims, and autocast treats it so
  -- (promote on CUDA, the mm's low precision on the CPU)
  return ember.tensordot(a, b, {{a:dim()}, {b:dim()}})
end

--- ember.ger(vec1, vec2) -> outer(vec1, vec2) (PyTorch's older name).
function M.ger(vec1, vec2)
  check_dim(vec1, 1, "ger", "input")
  check_dim(vec2, 1, "ger", "vec2")
  return vec1:outer(vec2)
end

-- ---- integer functions -------------------------------------------------------------------

local function check_integers(op, a, b)
  check_tensor(a, op, "input")
  check_tensor(b, op, "other")
  for _, t in ipairs({a, b}) do
    if not integer_dtypes[t.dtype] then
      raise(string.format("%s: expected integer tensors, got %s and %s", op, a.dtype, b.dtype))
    end
  end
end

-- gcd of tensors already broadcast and promoted, by Euclid's algorithm on all
-- elements at once: a step per remainder, at most ~92 for int64 (Fibonacci).
local function euclid(a, b)
  a, b = a:abs(), b:abs()
  while b:ne(0):any():item() do
    local nz = b:ne(0)
    local r = a:remainder(ember.where(nz, b, 1))
    a = ember.where(nz, b, a)
    b = ember.where(nz, r, 0)
  end
  return a
end

-- a and b broadcast against each other in their promoted dtype
local function promoted(a, b)
  local zero = a:mul(0):add(b:mul(0))
  return a + zero, b + zero
end

--- ember.gcd(a, b) -> the greatest common divisor of integer tensors (broadcast), >= 0; gcd(0, 0) = 0.
function M.gcd(a, b)
  check_integers("gcd", a, b)
  return euclid(promoted(a, b))
end

--- ember.lcm(a, b) -> the least common multiple of integer tensors (broadcast), >= 0; 0 when either is 0.
function M.lcm(a, b)
  check_integers("lcm", a, b)
  a, b = promoted(a, b)
  local g = euclid(a, b)
  local zero = g:eq(0)
  return ember.where(zero, 0, a:floor_divide(ember.where(zero, 1, g)):mul(b):abs())
end

-- ---- elementwise -------------------------------------------------------------------------

local function binary_tensors(op, a, b)
  check_tensor(a, op, "input")
  check_tensor(b, op, "other")
end

-- minimum / maximum (which share a tie's gradient between both sides, as fmin and fmax
-- do in PyTorch) where neither is NaN, else the operand that is not NaN
local function nan_ignoring(op, a, b, pick)
  binary_tensors(op, a, b)
  return ember.where(b:isnan(), a, ember.where(a:isnan(), b, pick(a, b)))
end

--- ember.fmin(a, b) -> the elementwise minimum, ignoring NaN (NaN only where both are NaN).
function M.fmin(a, b) return nan_ignoring("fmin", a, b, ember.minimum) end

--- ember.fmax(a, b) -> the elementwise maximum, ignoring NaN (NaN only where both are NaN).
function M.fmax(a, b) return nan_ignoring("fmax", a, b, ember.maximum) end

local function to_double(v, op, what)
  if type(v) == "number" then return v end
  check_tensor(v, op, what)
  return v:to("float64")
end

--- ember.float_power(input, exponent) -> input ^ exponent computed in float64 (either may be a number).
function M.float_power(input, exponent)
  if type(input) == "number" and type(exponent) == "number" then
    raise("float_power: expected a tensor as input or exponent, got two numbers")
  end
  local x, e = to_double(input, "float_power", "input"), to_double(exponent, "float_power", "exponent")
  if type(x) == "number" then return ember.pow(x, e) end
  return x:pow(e)
end

methods.float_power_ = function(self, exponent)
  check_tensor(self, "float_power_", "self")
  if self.dtype ~= "float64" then
    raise(string.format("float_power_: the base has dtype %s but the result requires float64", self.dtype))
  end
  return inplace.into("float_power_", self, M.float_power(self, exponent))
end

-- x as the float dtype an integer or bool input becomes (the default dtype)
local function as_float(x, op)
  check_tensor(x, op, "input")
  if float_dtypes[x.dtype] then return x end
  return x:to(ember.get_default_dtype())
end

--- ember.sinc(x) -> sin(pi x) / (pi x), 1 at x = 0 (where its gradient is 0).
function M.sinc(x)
  x = as_float(x, "sinc")
  local zero = x:eq(0)
  -- the quotient at a safe stand-in for 0, so its backward (0 there) makes no NaN
  local px = ember.where(zero, 1, x) * math.pi
  return ember.where(zero, 1, px:sin() / px)
end

--- ember.signbit(x) -> bool: whether the sign bit is set (true for -0.0 and negative NaN).
function M.signbit(x)
  check_tensor(x, "signbit", "input")
  if x.dtype == "bool" or x.dtype == "uint8" then return ember.zeros_like(x, {dtype = "bool"}) end
  if integer_dtypes[x.dtype] then return x:lt(0) end
  return ember.copysign(ember.ones_like(x), x):lt(0)
end

--- ember.ldexp(x, e) -> x * 2^e (a float result).
function M.ldexp(x, e)
  binary_tensors("ldexp", x, e)
  return as_float(x, "ldexp") * ember.exp2(e)
end

-- The float formats: p bits of significand, and emin, the exponent of the smallest normal
-- number as frexp writes it (m 2^e with 0.5 <= |m| < 1); the smallest subnormal is
-- 2^(emin - p).
local FLOAT_FORMATS = {
  float64 = {p = 53, emin = -1021, max = 1.7976931348623157e308},
  float32 = {p = 24, emin = -125, max = 3.4028234663852886e38},
  float16 = {p = 11, emin = -13, max = 65504.0},
  bfloat16 = {p = 8, emin = -125, max = 3.3895313892515355e38},
}

-- the next value after x towards y in format f, both float64 tensors holding values of
-- that format: x plus or minus the spacing of the format at x, found from x's exponent.
-- Every step is exact in float64 (the formats' values and their spacings all are).
local function next_value(x, y, f)
  local ax = x:abs()
  -- e with 2^(e-1) <= |x| < 2^e: log2 may be an ulp off near a power of two, which the
  -- two comparisons with exact powers of two put right
  local e = ax:log2():floor() + 1
  e = e - ax:lt(ember.exp2(e - 1)):to("float64") + ax:ge(ember.exp2(e)):to("float64")
  local e_lo = e:clamp(f.emin)
  local up = ember.exp2(e_lo - f.p)   -- the spacing above |x|
  -- below a power of two the spacing is half, except at the smallest normal number
  local pow2 = ax:eq(ember.exp2(e - 1)):logical_and(e:gt(f.emin))
  local down = ember.where(pow2, up * 0.5, up)
  local rising = y:gt(x)
  local away = rising:eq(x:gt(0))   -- moving away from zero
  local step = ember.where(away, up, down)
  local r = x + ember.where(rising, step, -step)
  -- a step onto zero keeps x's sign (as C's nextafter)
  r = ember.where(r:eq(0), ember.copysign(ember.zeros_like(r), x), r)
  local tiny = ember.full_like(x, 2.0 ^ (f.emin - f.p))
  r = ember.where(x:eq(0), ember.where(rising, tiny, -tiny), r)
  r = ember.where(x:isinf(), ember.copysign(ember.full_like(r, f.max), x), r)
  r = ember.where(x:eq(y), y, r)
  return ember.where(x:isnan():logical_or(y:isnan()), 0 / 0, r)
end

local Nextafter

--- ember.nextafter(input, other) -> the next floating-point value after input towards other,
--- in their promoted float dtype (other where they are equal); its gradient flows to input.
function M.nextafter(a, b)
  binary_tensors("nextafter", a, b)
  local dtype = (a:mul(0) + b:mul(0)).dtype
  local f = FLOAT_FORMATS[dtype]
  if not f then
    raise(string.format("nextafter: expected floating-point tensors, got %s and %s", a.dtype, b.dtype))
  end
  if not Nextafter then
    Nextafter = ember.autograd.Function:extend("Nextafter")
    function Nextafter.forward(_, x, y, fmt, dt)
      x, y = ember.broadcast_tensors(x:to("float64"), y:to("float64"))
      return next_value(x, y, fmt):to(dt)
    end
    -- PyTorch's rule: the gradient passes to input unchanged, other's is zero
    function Nextafter.backward(_, grad) return grad, ember.zeros_like(grad), nil, nil end
  end
  return Nextafter.apply(a, b, f, dtype)
end

methods.nextafter_ = function(self, other)
  inplace.check_target("nextafter_", self)
  return inplace.into("nextafter_", self, M.nextafter(self, other))
end

--- ember.rad2deg(x) -> x * 180 / pi.
function M.rad2deg(x) return as_float(x, "rad2deg") * (180 / math.pi) end

--- ember.deg2rad(x) -> x * pi / 180.
function M.deg2rad(x) return as_float(x, "deg2rad") * (math.pi / 180) end

--- ember.isreal(x) -> bool tensor of x's shape, all true (ember has no complex dtypes).
function M.isreal(x)
  check_tensor(x, "isreal", "input")
  return ember.ones_like(x, {dtype = "bool"})
end

--- ember.positive(x) -> x itself (a view); refused for bool as PyTorch does.
function M.positive(x)
  check_tensor(x, "positive", "input")
  if x.dtype == "bool" then raise("positive: not supported for bool tensors") end
  return x:view(x.shape)
end

for _, name in ipairs({"addmv", "addr", "addbmm", "baddbmm", "gcd", "lcm", "sinc", "ldexp", "rad2deg", "deg2rad"}) do
  inplace_of(name)
end

-- installed once: each function in the module table and, as PyTorch has every one of
-- them as a tensor method too, in the method table, with the in-place forms
for name, f in pairs(M) do
  rawset(ember, name, f)
  rawset(ember.Tensor, name, f)
end
for name, f in pairs(methods) do rawset(ember.Tensor, name, f) end

-- The other files of composites. Each returns {functions = {...}, both = {...},
-- methods = {...}}: ember.X only, ember.X and t:X, t:X only.
local PARTS = {"ember.composite.shape", "ember.composite.aliases", "ember.composite.random", "ember.composite.linalg", "ember.composite.settings", "ember.composite.extra"}
for _, part in ipairs(PARTS) do
  local p = require(part)
  for name, f in pairs(p.functions or {}) do rawset(ember, name, f); M[name] = f end
  for name, f in pairs(p.both or {}) do rawset(ember, name, f); rawset(ember.Tensor, name, f); M[name] = f end
  for name, f in pairs(p.methods or {}) do rawset(ember.Tensor, name, f); methods[name] = f end
end

M.methods = methods
return M
