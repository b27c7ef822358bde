-- ember.composite.extra — PyTorch names written over ember's ops: the scatter forms of the
-- views (slice_scatter, select_scatter, diagonal_scatter), renorm, range, scalar_tensor,
-- frexp, index_reduce, put, nonzero_static, adjoint, angle of real tensors, gradient (numerical
-- derivatives), fill, the top-level in-place forms torch has (ember.gcd_(t, u) is t:gcd_(u)),
-- and the anomaly-mode queries torch has at its top level.
--
-- A part of lua/ember/composite.lua (its PARTS): functions are ember.X only, both are ember.X
-- and t:X, methods t:X only, as PyTorch has them. Autograd records the ops they are made of,
-- so the differentiable ones get their gradients from those; each is composed from ember ops
-- (no element is read into Lua), so it runs on every device.
--
-- Positions are 1-based (the README's rule 1): slice_scatter's start..stop is t:slice's
-- inclusive range, select_scatter's index is select's, diagonal_scatter's dims are
-- diagonal's; index_reduce's and put's index values are 1-based (negative from the end, as
-- ember's index_add and index_put take them); nonzero_static's rows are nonzero's.
local ember = require "ember"
local errors = require "ember.errors"
local raise, check_tensor, shape_str = errors.raise, errors.check_tensor, errors.shape_str
local options = require("ember.args").options
local inplace = require "ember.composite.inplace"

local functions, both, methods = {}, {}, {}
local T = ember.Tensor

local FLOAT = {float32 = true, float64 = true, float16 = true, bfloat16 = true}
local HALF = {float16 = true, bfloat16 = true}

-- ---- shared checks -----------------------------------------------------------------------

local checks = require "ember.composite.checks"
local show, relay, public = checks.show, checks.relay, checks.public
local integer, number, boolean = checks.integer, checks.number, checks.boolean
local function wrap_dim(op, t, dim, what) return checks.wrap_dim(op, t, dim, what or "dim") end

local function same_shape(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

local function show_shape(s) return "[" .. table.concat(s, ", ") .. "]" end

-- r, which does not depend on x, linked to x in the graph with a zero gradient (PyTorch's
-- functions whose derivative is zeros: angle of a real tensor, fill's self). where's
-- unselected branch gets a zero gradient, and no arithmetic on x's values (inf * 0) is done.
local function zero_grad_link(r, x)
  if not (ember.is_grad_enabled() and x.requires_grad) then return r end
  return ember.where(ember.zeros(x.shape, {dtype = "bool", device = x.device}), x, r)
end

-- index (a tensor of int64/int32, or a table of integers) as a 1-D int64 tensor on device
local function index_vector(op, index, device)
  if type(index) == "table" and not ember.is_tensor(index) then
    for k, v in ipairs(index) do integer(op, "index[" .. k .. "]", v) end
    return ember.tensor(index, {dtype = "int64", device = device}):reshape(#index)
  end
  if not ember.is_tensor(index) then
    raise(string.format("%s: index must be an int64 or int32 tensor (or a table of integers), got %s", op, show(index)))
  end
  if index.dtype ~= "int64" and index.dtype ~= "int32" then
    raise(string.format("%s: index must be an int64 or int32 tensor, got %s", op, index.dtype))
  end
  if index:dim() > 1 then
    raise(string.format("%s: index must be 0-d or 1-D, got %s", op, shape_str(index)))
  end
  return index:to("int64"):reshape(index:numel())
end

-- ---- the scatter forms of the views -------------------------------------------------------

-- src, which must have the shape want (the slice's), in input's dtype
local function check_src(op, input, src, want)
  check_tensor(src, op, "src")
  if not same_shape(src.shape, want) then
    raise(string.format("%s: expected src to have a size equal to the slice of self. src size = %s, slice size = %s",
                        op, shape_str(src), show_shape(want)))
  end
  if src.device ~= input.device then
    raise(string.format("%s: src is on %s, input on %s", op, src.device, input.device))
  end
  return src.dtype == input.dtype and src or src:to(input.dtype)
end

local function slice_scatter(input, src, ...)
  local op = "slice_scatter"
  check_tensor(input, op, "input")
  local o = options(op, {"dim", "start", "end", "step", "*", "stop"}, ...)
  if o["end"] ~= nil and o.stop ~= nil then
    raise(op .. ": got both end and stop (the same argument: the last position, inclusive)")
  end
  local d = wrap_dim(op, input, o.dim == nil and 1 or o.dim)
  local stop = o["end"] == nil and o.stop or o["end"]
  if o.start ~= nil then integer(op, "start", o.start) end
  if stop ~= nil then integer(op, "end", stop) end
  local step = o.step == nil and 1 or integer(op, "step", o.step)
  if step <= 0 then raise(string.format("%s: step must be positive, got %d", op, step)) end
  -- the positions slice picks, by slice's own rules (clamping, negative from the end)
  local n = input.shape[d]
  local pos = ember.arange(1, n + 1, {device = input.device}):slice(1, o.start or 1, stop or n, step)
  local want = {}
  for i, s in ipairs(input.shape) do want[i] = i == d and pos:numel() or s end
  src = check_src(op, input, src, want)
  return input:index_copy(d, pos, src)
end

--- ember.slice_scatter(input, src [, dim = 1 [, start [, stop [, step = 1]]]]) -> input with
-- input:slice(dim, start, stop, step) replaced by src (a new tensor; differentiable).
both.slice_scatter = public("slice_scatter", slice_scatter)

local function select_scatter(input, src, dim, index)
  local op = "select_scatter"
  check_tensor(input, op, "input")
  local d = wrap_dim(op, input, dim)
  local i, n = integer(op, "index", index), input.shape[d]
  if i == 0 or i > n or i < -n then
    raise(string.format("%s: index %d out of range for tensor of size %s at dimension %d (expected 1..%d or -%d..-1)",
                        op, i, shape_str(input), d, n, n))
  end
  if i < 0 then i = i + n + 1 end
  local want = {}
  for k, s in ipairs(input.shape) do if k ~= d then want[#want + 1] = s end end
  src = check_src(op, input, src, want)
  return input:index_copy(d, ember.tensor({i}, {dtype = "int64", device = input.device}), src:unsqueeze(d))
end

--- ember.select_scatter(input, src, dim, index) -> input with input:select(dim, index) replaced by src.
both.select_scatter = public("select_scatter", select_scatter)

local function diagonal_scatter(input, src, ...)
  local op = "diagonal_scatter"
  check_tensor(input, op, "input")
  local o = options(op, {"offset", "dim1", "dim2"}, ...)
  local offset = o.offset == nil and 0 or integer(op, "offset", o.offset)
  if input:dim() < 2 then
    raise(string.format("%s: input must have at least 2 dimensions, got %s", op, shape_str(input)))
  end
  local d1 = wrap_dim(op, input, o.dim1 == nil and 1 or o.dim1, "dim1")
  local d2 = wrap_dim(op, input, o.dim2 == nil and 2 or o.dim2, "dim2")
  if d1 == d2 then raise(string.format("%s: dim1 and dim2 cannot be the same dimension (%d)", op, d1)) end
  local diag = input:diagonal(offset, d1, d2)
  src = check_src(op, input, src, diag.shape)
  -- the matrices in the last two dims, flattened: the diagonal's elements sit every C + 1
  local x = input:movedim({d1, d2}, {-2, -1})
  local xs = x.shape
  local R, C, L = xs[#xs - 1], xs[#xs], diag.shape[#diag.shape]
  local flat_shape = {}
  for k = 1, #xs - 2 do flat_shape[k] = xs[k] end
  flat_shape[#flat_shape + 1] = R * C
  local first = math.max(-offset, 0) * C + math.max(offset, 0) + 1
  local pos = ember.arange(first, first + L * (C + 1), C + 1, {device = input.device}):narrow(1, 1, L)
  local out = x:reshape(flat_shape):index_copy(#flat_shape, pos, src)
  return out:reshape(xs):movedim({-2, -1}, {d1, d2}):contiguous()
end

--- ember.diagonal_scatter(input, src [, offset = 0 [, dim1 = 1 [, dim2 = 2]]]) -> input with
-- input:diagonal(offset, dim1, dim2) replaced by src.
both.diagonal_scatter = public("diagonal_scatter", diagonal_scatter)

-- ---- renorm ------------------------------------------------------------------------------

local function renorm(input, p, dim, maxnorm)
  local op = "renorm"
  check_tensor(input, op, "input")
  if not FLOAT[input.dtype] then
    raise(string.format("%s: expected a floating point tensor, got %s", op, input.dtype))
  end
  number(op, "p", p)
  number(op, "maxnorm", maxnorm)
  if not (p > 0) then raise(string.format("%s: non-positive-norm not supported (p = %s)", op, tostring(p))) end
  if not (maxnorm >= 0) then
    raise(string.format("%s: expected maxnorm to be >= 0 but got %s", op, tostring(maxnorm)))
  end
  if input:dim() < 2 then
    raise(string.format("%s: input needs at least 2 dimensions, got %d dimensions", op, input:dim()))
  end
  local d = wrap_dim(op, input, dim)
  local dims = {}
  for k = 1, input:dim() do if k ~= d then dims[#dims + 1] = k end end
  -- PyTorch: the norms in float32 for the half dtypes, scale = maxnorm / (norm + 1e-7)
  -- where norm > maxnorm, else 1; the gradient follows the scale's dependence on input
  local x = HALF[input.dtype] and input:to("float32") or input
  local norm = x:norm(p, dims, true)
  local factor = ember.where(norm:gt(maxnorm), maxnorm / (norm + 1e-7), 1.0)
  if HALF[input.dtype] then factor = factor:to(input.dtype) end
  return input * factor
end

--- ember.renorm(input, p, dim, maxnorm) -> input with each slice along dim whose p-norm exceeds maxnorm scaled to norm maxnorm.
both.renorm = public("renorm", renorm)

--- t:renorm_(p, dim, maxnorm): renorm written into t.
methods.renorm_ = public("renorm_", function(self, p, dim, maxnorm)
  inplace.check_target("renorm_", self)
  return inplace.into("renorm_", self, renorm(self, p, dim, maxnorm))
end)

-- ---- range, scalar_tensor ----------------------------------------------------------------

local function creation_options(op, o)
  if o.dtype ~= nil and (type(o.dtype) ~= "string" or not (FLOAT[o.dtype] or o.dtype == "int64"
      or o.dtype == "int32" or o.dtype == "int16" or o.dtype == "int8" or o.dtype == "uint8" or o.dtype == "bool")) then
    raise(string.format("%s: dtype must be a dtype name, got %s", op, show(o.dtype)))
  end
  boolean(op, "requires_grad", o.requires_grad, false)
  return o.dtype or ember.get_default_dtype(), o.device or "cpu"
end

local function finish(op, r, o)
  if o.requires_grad then
    if not FLOAT[r.dtype] then
      raise(string.format("%s: only tensors of floating point dtype can require gradients, got %s", op, r.dtype))
    end
    r:requires_grad_(true)
  end
  return r
end

--- ember.range(start, stop [, step = 1] [, {dtype, device, requires_grad}]) -> the 1-D tensor
-- start, start + step, ... up to and including stop (torch.range, deprecated there).
functions.range = public("range", function(start, stop, ...)
  local op = "range"
  local o = options(op, {"step", "*", "dtype", "device", "requires_grad", "layout", "out"}, ...)
  if o.layout ~= nil or o.out ~= nil then raise(op .. ": the layout and out options are not supported by ember") end
  number(op, "start", start)
  number(op, "end", stop)
  local step = o.step == nil and 1 or number(op, "step", o.step)
  local dtype, device = creation_options(op, o)
  if step == 0 then raise(op .. ": step must be nonzero") end
  if start ~= start or stop ~= stop or step ~= step or math.abs(start) == math.huge or math.abs(stop) == math.huge then
    raise(string.format("%s: unsupported range: %s -> %s", op, tostring(start), tostring(stop)))
  end
  if (step > 0 and stop < start) or (step < 0 and stop > start) then
    raise(string.format("%s: upper bound and lower bound inconsistent with step sign (start %s, end %s, step %s)", op,
                        tostring(start), tostring(stop), tostring(step)))
  end
  local n = math.floor((stop - start) / step) + 1
  local r
  if not FLOAT[dtype] and math.type(start) == "integer" and math.type(step) == "integer" then
    r = ember.arange(n, {dtype = "int64", device = device}) * step + start
  else
    -- start + i * step in float64 (PyTorch's accumulate type on the CPU), then rounded once
    r = ember.arange(n, {dtype = "float64", device = device}) * step + start
  end
  return finish(op, r:to(dtype), o)
end)

--- ember.scalar_tensor(s [, {dtype, device, requires_grad}]) -> a 0-d tensor of s, in the default float dtype unless dtype is given.
functions.scalar_tensor = public("scalar_tensor", function(s, ...)
  local op = "scalar_tensor"
  local o = options(op, {"*", "dtype", "device", "requires_grad", "layout", "pin_memory"}, ...)
  if o.layout ~= nil then raise(op .. ": the layout option is not supported by ember") end
  if type(s) ~= "number" and type(s) ~= "boolean" then
    raise(string.format("%s: expected a number or a boolean, got %s", op, show(s)))
  end
  local dtype, device = creation_options(op, o)
  if type(s) == "boolean" and dtype ~= "bool" then s = s and 1 or 0 end
  return finish(op, ember.full({}, s, {dtype = dtype, device = device}), o)
end)

-- ---- frexp -------------------------------------------------------------------------------

local function frexp(input)
  local op = "frexp"
  check_tensor(input, op, "input")
  if not FLOAT[input.dtype] then
    raise(string.format("%s: only supports floating-point dtypes, got %s", op, input.dtype))
  end
  local x = HALF[input.dtype] and input:to("float32") or input
  local xd = x:detach()
  local ok = ember.isfinite(xd):logical_and(xd:ne(0))
  local a = ember.where(ok, xd:abs(), 1.0)
  -- 2^-e as two factors, each within range (2^-e alone over- or underflows for the largest
  -- and the subnormal numbers); the products are exact
  local function scaled(v, e)
    local h1 = (-e / 2):floor()
    return v * h1:exp2() * (-e - h1):exp2()
  end
  local e = a:log2():floor() + 1
  -- log2 may round across an integer: move e by one where |m| left [0.5, 1)
  local m0 = scaled(a, e)
  e = e + m0:ge(1):to(e.dtype) - m0:lt(0.5):to(e.dtype)
  e = ember.where(ok, e, 0.0)
  local m = ember.where(ok, scaled(x, e), x)
  if HALF[input.dtype] then m = m:to(input.dtype) end
  return m, e:to("int32")
end

--- ember.frexp(input) -> mantissa, exponent: input = mantissa * 2^exponent, |mantissa| in [0.5, 1), exponent int32.
both.frexp = public("frexp", frexp)

-- ---- index_reduce ------------------------------------------------------------------------

local REDUCE = {prod = true, mean = true, amax = true, amin = true}

local function index_reduce_args(op, input, dim, index, source, ...)
  check_tensor(input, op, "self")
  local o = options(op, {"reduce", "*", "include_self"}, ...)
  local d = wrap_dim(op, input:dim() == 0 and input:reshape(1) or input, dim)
  if not REDUCE[o.reduce] then
    raise(string.format("%s: Expected reduce to be one of prod, mean, amax or amin but got %s", op, show(o.reduce)))
  end
  local include_self = boolean(op, "include_self", o.include_self, true)
  check_tensor(source, op, "source")
  local idx = index_vector(op, index, input.device)
  if source.dtype ~= input.dtype then
    raise(string.format("%s: self (%s) and source (%s) must have the same dtype", op, input.dtype, source.dtype))
  end
  local ishape, sshape = input.shape, source.shape
  if #ishape == 0 then ishape = {1} end
  if #sshape == 0 then sshape = {1} end
  local fits = #ishape == #sshape
  for k = 1, #ishape do if k ~= d and ishape[k] ~= sshape[k] then fits = false end end
  if not fits then
    raise(string.format("%s: source %s must have self's shape %s except at dim %d", op, shape_str(source),
                        shape_str(input), d))
  end
  if idx:numel() ~= sshape[d] then
    raise(string.format("%s: Number of indices (%d) should be equal to source.size(dim) (%d)", op, idx:numel(),
                        sshape[d]))
  end
  -- scatter_reduce's index: index's values along d, for every element of source
  local view = {}
  for k = 1, #sshape do view[k] = k == d and idx:numel() or 1 end
  local full_index = idx:reshape(view):expand(sshape)
  return d, full_index, source:reshape(sshape), o.reduce, include_self
end

--- ember.index_reduce(input, dim, index, source, reduce [, {include_self = true}]) -> input with the
-- slices of source reduced into the slices index names along dim (reduce: "prod", "mean", "amax", "amin").
both.index_reduce = public("index_reduce", function(input, dim, index, source, ...)
  local d, full_index, src, reduce, include_self = index_reduce_args("index_reduce", input, dim, index, source, ...)
  local x = input:dim() == 0 and input:reshape(1) or input
  return x:scatter_reduce(d, full_index, src, reduce, include_self):reshape(input.shape)
end)

--- t:index_reduce_(dim, index, source, reduce [, {include_self = true}]): index_reduce written into t.
methods.index_reduce_ = public("index_reduce_", function(self, dim, index, source, ...)
  local d, full_index, src, reduce, include_self = index_reduce_args("index_reduce_", self, dim, index, source, ...)
  inplace.check_target("index_reduce_", self)
  local x = self:dim() == 0 and self:view(1) or self
  x:scatter_reduce_(d, full_index, src, reduce, include_self)
  return self
end)

-- ---- put ---------------------------------------------------------------------------------

local function put_args(op, input, index, source, ...)
  check_tensor(input, op, "self")
  local o = options(op, {"accumulate"}, ...)
  local accumulate = boolean(op, "accumulate", o.accumulate, false)
  check_tensor(index, op, "index")
  if index.dtype ~= "int64" and index.dtype ~= "int32" then
    raise(string.format("%s: Expected an int64 (or int32) tensor for index, but got %s", op, index.dtype))
  end
  check_tensor(source, op, "source")
  if source.dtype ~= input.dtype then
    raise(string.format("%s: self and source expected to have the same dtype, but got self.dtype = %s and "
                        .. "source.dtype = %s", op, input.dtype, source.dtype))
  end
  if source:numel() ~= index:numel() then
    raise(string.format("%s: Expected source and index to have the same number of elements, but got "
                        .. "source.numel() = %d, index.numel() = %d", op, source:numel(), index:numel()))
  end
  if input:numel() == 0 and index:numel() > 0 then
    raise(string.format("%s: cannot put into an empty tensor %s", op, shape_str(input)))
  end
  return {index:reshape(index:numel())}, source:reshape(source:numel()), accumulate
end

local function put(input, index, source, ...)
  local idx, src, accumulate = put_args("put", input, index, source, ...)
  return ember.index_put(input:reshape(input:numel()), idx, src, accumulate):view(input.shape)
end

--- ember.put(input, index, source [, accumulate = false]) -> input with source written at the flat
-- 1-based positions index (negative from the end) of input read as 1-D.
both.put = public("put", put)

--- t:put_(index, source [, accumulate = false]): put written into t.
methods.put_ = public("put_", function(self, index, source, ...)
  local idx, src, accumulate = put_args("put_", self, index, source, ...)
  inplace.check_target("put_", self)
  if self:is_contiguous() then
    self:view(self:numel()):index_put_(idx, src, accumulate)
    return self
  end
  return inplace.into("put_", self, ember.index_put(self:reshape(self:numel()), idx, src, accumulate):view(self.shape))
end)

-- ---- nonzero_static ----------------------------------------------------------------------

--- ember.nonzero_static(input, {size = n [, fill_value = 0]}) -> nonzero's first n rows, padded with
-- rows of fill_value to n rows.
both.nonzero_static = public("nonzero_static", function(input, ...)
  local op = "nonzero_static"
  check_tensor(input, op, "input")
  local o = options(op, {"*", "size", "fill_value"}, ...)
  if o.size == nil then raise(op .. ": missing the size option ({size = n})") end
  local size = integer(op, "size", o.size)
  if size < 0 then raise(string.format("%s: 'size' must be a non-negative integer, got %d", op, size)) end
  local fill = o.fill_value == nil and 0 or integer(op, "fill_value", o.fill_value)
  local nz = input:nonzero()
  local n, nd = nz.shape[1], nz.shape[2]
  if n >= size then return nz:narrow(1, 1, size):contiguous() end
  return ember.cat({nz, ember.full({size - n, nd}, fill, {dtype = "int64", device = input.device})}, 1)
end)

-- ---- adjoint, angle ----------------------------------------------------------------------

--- ember.adjoint(input) -> the view of input with its last two dims swapped (the conjugate transpose of real matrices).
both.adjoint = public("adjoint", function(input)
  check_tensor(input, "adjoint", "input")
  if input:dim() < 2 then
    raise(string.format("adjoint: only supported on matrices or batches of matrices; got a %d-D tensor %s",
                        input:dim(), shape_str(input)))
  end
  return input:transpose(-2, -1)
end)

--- ember.angle(input) -> the argument of real numbers: 0 for x >= 0, pi for x < 0, NaN for NaN (float result; zero gradient).
both.angle = public("angle", function(input)
  check_tensor(input, "angle", "input")
  local x = input:detach()
  if not FLOAT[x.dtype] then x = x:to(ember.get_default_dtype()) end
  local r = ember.where(x:isnan(), x, x:lt(0):to(x.dtype) * math.pi)
  return zero_grad_link(r, input)
end)

-- ---- gradient ----------------------------------------------------------------------------

-- the gradient of f along d with the scalar spacing h (PyTorch's gradient_helper_float)
local function gradient_scalar(f, d, h, edge_order)
  local n = f.shape[d]
  local center = (f:narrow(d, 3, n - 2) - f:narrow(d, 1, n - 2)) / h
  local prepend, append
  if edge_order == 1 then
    prepend = (f:narrow(d, 2, 1) - f:narrow(d, 1, 1)) / h
    append = (f:narrow(d, n, 1) - f:narrow(d, n - 1, 1)) / h
  else
    prepend = (-1.5 * f:narrow(d, 1, 1) + 2 * f:narrow(d, 2, 1) - 0.5 * f:narrow(d, 3, 1)) / h
    append = (0.5 * f:narrow(d, n - 2, 1) - 2 * f:narrow(d, n - 1, 1) + 1.5 * f:narrow(d, n, 1)) / h
  end
  return ember.cat({prepend, center / 2, append}, d)
end

-- the gradient of f along d at the coordinates x (PyTorch's gradient_helper)
local function gradient_coordinates(f, d, x, edge_order)
  local n = f.shape[d]
  local shape = {}
  for k = 1, f:dim() do shape[k] = k == d and n - 2 or 1 end
  local dx = x:diff()
  local dx1, dx2 = dx:narrow(1, 1, n - 2), dx:narrow(1, 2, n - 2)
  local a = (-dx2 / (dx1 * (dx1 + dx2))):reshape(shape)
  local b = ((dx2 - dx1) / (dx1 * dx2)):reshape(shape)
  local c = (dx1 / (dx2 * (dx1 + dx2))):reshape(shape)
  local center = a * f:narrow(d, 1, n - 2) + b * f:narrow(d, 2, n - 2) + c * f:narrow(d, 3, n - 2)
  local first, second = dx:select(1, 1), dx:select(1, math.min(2, n - 1))
  local last, before = dx:select(1, n - 1), dx:select(1, math.max(n - 2, 1))
  local prepend, append
  if edge_order == 1 then
    prepend = (f:narrow(d, 2, 1) - f:narrow(d, 1, 1)) / first
    append = (f:narrow(d, n, 1) - f:narrow(d, n - 1, 1)) / last
  else
    a = -(2.0 * first + second) / (first * (first + second))
    b = (first + second) / (first * second)
    c = (-first) / (second * (first + second))
    prepend = a * f:narrow(d, 1, 1) + b * f:narrow(d, 2, 1) + c * f:narrow(d, 3, 1)
    a = last / (before * (last + before))
    b = -(last + before) / (last * before)
    c = (2 * last + before) / (last * (last + before))
    append = a * f:narrow(d, n - 2, 1) + b * f:narrow(d, n - 1, 1) + c * f:narrow(d, n, 1)
  end
  return ember.cat({prepend, center, append}, d)
end

--- ember.gradient(input [, {spacing = 1, dim, edge_order = 1}]) -> one tensor per dim: the
-- derivative of input along it by central differences (one-sided of order edge_order at the edges).
functions.gradient = public("gradient", function(input, ...)
  local op = "gradient"
  check_tensor(input, op, "input")
  local o = options(op, {"*", "spacing", "dim", "edge_order"}, ...)
  local edge_order = o.edge_order == nil and 1 or integer(op, "edge_order", o.edge_order)
  if edge_order ~= 1 and edge_order ~= 2 then
    raise(string.format("%s: only supports edge_order = 1 and edge_order = 2, got %d", op, edge_order))
  end
  if input:dim() == 0 then raise(op .. ": input must have at least one dimension, got a 0-d tensor") end
  local dims, seen = {}, {}
  if o.dim == nil then
    for k = 1, input:dim() do dims[k] = k end
  elseif type(o.dim) == "table" and not ember.is_tensor(o.dim) then
    if #o.dim == 0 then raise(op .. ": dim must not be an empty table") end
    for k, v in ipairs(o.dim) do dims[k] = wrap_dim(op, input, v) end
  else
    dims[1] = wrap_dim(op, input, o.dim)
  end
  for _, d in ipairs(dims) do
    if seen[d] then raise(string.format("%s: dim %d appears multiple times in the list of dims", op, d)) end
    seen[d] = true
  end
  local spacing = {}
  local s = o.spacing == nil and 1 or o.spacing
  if type(s) == "number" then
    for k = 1, #dims do spacing[k] = s end
  elseif type(s) == "table" and not ember.is_tensor(s) then
    if #s ~= #dims then
      raise(string.format("%s: expected spacing to be a number or a table of %d entries (one per dim%s), "
                          .. "got a table of %d", op, #dims, o.dim == nil and " of input" or " in dim", #s))
    end
    for k, v in ipairs(s) do
      if ember.is_tensor(v) then
        local n = input.shape[dims[k]]
        if v:dim() ~= 1 or v:numel() ~= n then
          raise(string.format("%s: spacing[%d] must be a 1-D tensor of the %d coordinates along dim %d, got %s", op,
                              k, n, dims[k], shape_str(v)))
        end
        if v.dtype == "bool" then raise(string.format("%s: spacing[%d] must be a number tensor, got bool", op, k)) end
      elseif type(v) ~= "number" then
        raise(string.format("%s: spacing[%d] must be a number or a 1-D tensor, got %s", op, k, show(v)))
      end
      spacing[k] = v
    end
  else
    raise(string.format("%s: spacing must be a number or a table of numbers or 1-D tensors, got %s", op, show(s)))
  end
  for _, d in ipairs(dims) do
    if input.shape[d] < edge_order + 1 then
      raise(string.format("%s: expected each dimension size to be at least edge_order + 1 (%d), dim %d of %s has %d",
                          op, edge_order + 1, d, shape_str(input), input.shape[d]))
    end
  end
  local out = {}
  for k, d in ipairs(dims) do
    if ember.is_tensor(spacing[k]) then
      out[k] = gradient_coordinates(input, d, spacing[k], edge_order)
    else
      out[k] = gradient_scalar(input, d, spacing[k], edge_order)
    end
  end
  return table.unpack(out, 1, #dims)
end)

-- ---- fill --------------------------------------------------------------------------------

--- ember.fill(input, value) -> a tensor of input's shape, dtype and device filled with value (a number, a boolean or a 0-d tensor).
functions.fill = public("fill", function(input, value)
  local op = "fill"
  check_tensor(input, op, "input")
  local r
  if ember.is_tensor(value) then
    if value:dim() ~= 0 then
      raise(string.format("%s: only supports a 0-dimension value tensor, but got a tensor with %d dimensions", op,
                          value:dim()))
    end
    r = value:to(input.dtype):to(input.device):expand(input.shape):contiguous()
  elseif type(value) == "number" or type(value) == "boolean" then
    if input.dtype == "bool" and type(value) == "number" then value = value ~= 0 end
    if input.dtype ~= "bool" and type(value) == "boolean" then value = value and 1 or 0 end
    r = ember.full(input.shape, value, {dtype = input.dtype, device = input.device})
  else
    raise(string.format("%s: value must be a number, a boolean or a 0-d tensor, got %s", op, show(value)))
  end
  return zero_grad_link(r, input)
end)

--- ember.fill_(t, value): t:fill_(value), value a number, a boolean or a 0-d tensor.
functions.fill_ = public("fill_", function(self, value)
  check_tensor(self, "fill_", "self")
  if ember.is_tensor(value) then
    if value:dim() ~= 0 then
      raise(string.format("fill_: only supports a 0-dimension value tensor, but got a tensor with %d dimensions",
                          value:dim()))
    end
    inplace.check_target("fill_", self)
    if value.requires_grad and ember.is_grad_enabled() then
      raise("fill_: writing a tensor that requires grad in place is not supported by autograd; use the "
            .. "out-of-place form ember.fill")
    end
    return self:copy_(value:to(self.device):expand(self.shape))
  end
  return self:fill_(value)
end)

-- ---- the top-level in-place forms --------------------------------------------------------

-- ember.X_(t, ...) is t:X_(...), as torch.X_ is Tensor.X_
local function top_level(name)
  return function(self, ...)
    check_tensor(self, name, "self")
    return T[name](self, ...)   -- a tail call: the method's errors point at the caller's line
  end
end

for _, name in ipairs({"gcd_", "lcm_", "deg2rad_", "rad2deg_", "negative_", "i0_", "zero_", "ldexp_", "sinc_",
                       "index_put_"}) do
  functions[name] = top_level(name)
end

-- ---- anomaly mode ------------------------------------------------------------------------

--- ember.is_anomaly_enabled() -> whether anomaly mode is on (ember.autograd.is_anomaly_enabled).
function functions.is_anomaly_enabled() return ember.autograd.is_anomaly_enabled() end

--- ember.is_anomaly_check_nan_enabled() -> whether anomaly mode checks gradients for NaN.
function functions.is_anomaly_check_nan_enabled() return ember.autograd.is_anomaly_check_nan_enabled() end

--- ember.set_anomaly_enabled(enabled [, check_nan = true]): ember.autograd.set_detect_anomaly.
function functions.set_anomaly_enabled(enabled, ...)
  local o = options("set_anomaly_enabled", {"check_nan"}, ...)
  if type(enabled) ~= "boolean" then
    raise("set_anomaly_enabled: enabled must be a boolean, got " .. show(enabled))
  end
  boolean("set_anomaly_enabled", "check_nan", o.check_nan, true)
  return errors.call(ember.autograd.set_detect_anomaly, enabled, o.check_nan ~= false)
end

return {functions = functions, both = both, methods = methods}
