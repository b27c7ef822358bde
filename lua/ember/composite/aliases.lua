-- ember.composite.aliases — PyTorch's other names of ember's ops (greater, less_equal,
-- absolute, rsub, the in-place multiply_/divide_/... forms), the predicates on a tensor
-- (is_nonzero, is_signed, is_complex, get_device, ...), the conjugation functions that are
-- the identity on real tensors, cumsum_/cumprod_/addmm_/fill_diagonal_, sum_to_size,
-- unravel_index, and the dtype helpers (result_type, promote_types, can_cast,
-- broadcast_shapes). A part of ember.composite: loaded with it, on first use.
local ember = require "ember"
local errors = require "ember.errors"
local raise, check_tensor, shape_str = errors.raise, errors.check_tensor, errors.shape_str
local options = require("ember.args").options
local inplace = require "ember.composite.inplace"

local functions = {}  -- ember.X
local both = {}       -- ember.X and t:X
local methods = {}    -- t:X

local T = ember.Tensor

-- ---- other names -------------------------------------------------------------------------

-- Another name of a C function, as a function of its own: help then finds this name's entry
-- for it and the original's for the original (one shared value would show either entry),
-- and errors.call keeps an error pointing at the caller's line.
local function alias(f)
  return function(...) return errors.call(f, ...) end
end

-- PyTorch's name = ember's, as a function and a method, and its in-place form: the C one
-- writes 1/0 (comparisons) or the result into self, keeping its dtype, with PyTorch's checks
local OTHER_NAMES = {greater = "gt", greater_equal = "ge", less = "lt", less_equal = "le", not_equal = "ne",
                     absolute = "abs"}
-- the same for names the C module already binds (multiply, divide, ...), whose in-place form
-- is all that is missing: divide_ takes {rounding_mode = "trunc" | "floor"} as div_ does,
-- true_divide_ is div_ (ember.true_divide is the C alias of div), subtract_ takes {alpha}
local OTHER_INPLACE_NAMES = {multiply = "mul", divide = "div", true_divide = "div", subtract = "sub",
                             negative = "neg"}
for name, of in pairs(OTHER_NAMES) do both[name] = alias(ember[of]) end
for _, names in ipairs({OTHER_NAMES, OTHER_INPLACE_NAMES}) do
  for name, of in pairs(names) do methods[name .. "_"] = alias(T[of .. "_"]) end
end

-- ---- the dtype helpers -------------------------------------------------------------------

local DTYPES = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"}
local KNOWN, FLOAT = {}, {float32 = true, float64 = true, float16 = true, bfloat16 = true}
for _, d in ipairs(DTYPES) do KNOWN[d] = true end

local function check_dtype(op, d, what)
  if not KNOWN[d] then
    local got = type(d) == "string" and "'" .. d .. "'" or type(d)
    raise(string.format("%s: %s must be a dtype name (%s), got %s", op, what, table.concat(DTYPES, ", "), got))
  end
end

-- What stands for x in the engine's own promotion rule: x's dtype and x's rank among the
-- operands (a tensor with dims, a 0-d tensor, a number of x's kind), and no elements.
local function stand_in(op, x, what)
  if ember.is_tensor(x) then
    if x:dim() == 0 then return ember.zeros({}, {dtype = x.dtype}) end
    return ember.empty(0, {dtype = x.dtype})
  end
  if math.type(x) == "integer" then return 0 end
  if math.type(x) == "float" then return 0.0 end
  if type(x) == "boolean" then return false end
  raise(string.format("%s: %s must be a tensor, a number or a boolean, got %s", op, what, type(x)))
end

--- ember.result_type(a, b) -> the dtype of a binary op's result on a and b (tensors, numbers, booleans).
function functions.result_type(a, b)
  local x, y = stand_in("result_type", a, "tensor1"), stand_in("result_type", b, "tensor2")
  -- The rule is the engine's (em_result_type), asked through an add of the stand-ins, so it
  -- is the one every binary op follows. Two numbers: the first as a 0-d tensor of its
  -- kind's default dtype promotes with the second as two numbers do.
  if not ember.is_tensor(x) and not ember.is_tensor(y) then x = ember.tensor(x) end
  return (x + y).dtype
end

--- ember.promote_types(type1, type2) -> the dtype that tensors of type1 and type2 promote to.
function functions.promote_types(type1, type2)
  check_dtype("promote_types", type1, "type1")
  check_dtype("promote_types", type2, "type2")
  return functions.result_type(ember.empty(0, {dtype = type1}), ember.empty(0, {dtype = type2}))
end

--- ember.can_cast(from, to) -> whether an op may write a from-typed result into a to-typed tensor.
function functions.can_cast(from, to)
  check_dtype("can_cast", from, "from")
  check_dtype("can_cast", to, "to")
  return inplace.can_cast(from, to)
end

-- v as a list of sizes: an integer (a 1-D shape) or a list (or ember.Size) of n (default #v)
-- integers >= 0
local function size_list(op, what, v, n)
  if math.type(v) == "integer" then v = {v} end
  if type(v) ~= "table" then raise(string.format("%s: %s must be a list of sizes, got %s", op, what, type(v))) end
  local out = {}
  for i = 1, n or #v do
    local s = v[i]
    if math.type(s) ~= "integer" or s < 0 then
      raise(string.format("%s: %s: sizes must be integers >= 0, got %s at position %d", op, what, tostring(s), i))
    end
    out[i] = s
  end
  return out
end

local function sizes_str(s) return "[" .. table.concat(s, ", ") .. "]" end

--- ember.broadcast_shapes(...) -> the ember.Size that tensors of these shapes broadcast to.
function functions.broadcast_shapes(...)
  local args = table.pack(...)
  local shapes, rank = {}, 0
  for i = 1, args.n do
    shapes[i] = size_list("broadcast_shapes", "shape " .. i, args[i])
    rank = math.max(rank, #shapes[i])
  end
  local out = {}
  for k = 1, rank do   -- the k-th dim from the end
    local size, from = 1, nil
    for i, s in ipairs(shapes) do
      local v = s[#s - k + 1]
      if v ~= nil and v ~= 1 then
        if size ~= 1 and v ~= size then
          raise(string.format("broadcast_shapes: shapes %s and %s cannot be broadcast (dimension %d: %d vs %d)",
                              sizes_str(shapes[from]), sizes_str(s), rank - k + 1, size, v))
        end
        size, from = v, i
      end
    end
    out[rank - k + 1] = size
  end
  return ember.Size(out)
end

-- ---- predicates and the identities of real tensors ---------------------------------------

--- ember.is_floating_point(input) -> whether input's dtype is a float dtype.
function functions.is_floating_point(input)
  check_tensor(input, "is_floating_point", "input")
  return FLOAT[input.dtype] == true
end

--- ember.is_signed(input) -> whether input's dtype holds negative numbers (all but uint8 and bool).
function both.is_signed(input)
  check_tensor(input, "is_signed", "input")
  return input.dtype ~= "uint8" and input.dtype ~= "bool"
end

--- ember.is_nonzero(input) -> whether the one element of input is not zero (NaN is not zero).
function both.is_nonzero(input)
  check_tensor(input, "is_nonzero", "input")
  local n = input:numel()
  if n ~= 1 then
    raise(string.format("is_nonzero: Boolean value of Tensor with %s is ambiguous (shape %s)",
                        n == 0 and "no values" or "more than one value", shape_str(input)))
  end
  local v = input:item()
  if type(v) == "boolean" then return v end
  return v ~= 0
end

--- ember.is_same_size(input, other) -> whether the two tensors have the same shape.
function both.is_same_size(input, other)
  check_tensor(input, "is_same_size", "input")
  check_tensor(other, "is_same_size", "other")
  return input.shape == other.shape
end

--- ember.get_device(input) -> the CUDA device index of input, -1 on the CPU.
function both.get_device(input)
  check_tensor(input, "get_device", "input")
  return tonumber(input.device:match("^cuda:(%d+)$")) or -1
end

-- ember has no complex dtypes and no lazy conjugate or negative views: these answer false
-- and the conjugations are self, as PyTorch's are on real tensors
local function never(op)
  return function(input)
    check_tensor(input, op, "input")
    return false
  end
end

local function identity(op)
  return function(input)
    check_tensor(input, op, "input")
    return input
  end
end

both.is_complex = never("is_complex")
both.is_conj = never("is_conj")
both.is_neg = never("is_neg")
both.conj = identity("conj")
both.conj_physical = identity("conj_physical")
both.resolve_conj = identity("resolve_conj")
both.resolve_neg = identity("resolve_neg")
methods.conj_physical_ = identity("conj_physical_")

--- t:ndimension() -> t:dim().
function methods.ndimension(self)
  check_tensor(self, "ndimension", "self")
  return self:dim()
end

--- t:type_as(other) -> t with other's dtype, on the CPU or CUDA as other is (t itself if so already).
function methods.type_as(self, other)
  check_tensor(self, "type_as", "self")
  check_tensor(other, "type_as", "other")
  -- PyTorch's self.type(other.type()): the type names the device's kind, not its index, so a
  -- tensor already on some GPU stays there and one moving to CUDA goes to the current device
  local device = self.device
  if (device == "cpu") ~= (other.device == "cpu") then device = other.device == "cpu" and "cpu" or "cuda" end
  if device == self.device and other.dtype == self.dtype then return self end
  return self:to(device, other.dtype)
end

-- ---- rsub --------------------------------------------------------------------------------

--- ember.rsub(input, other [, {alpha = 1}]) -> other - alpha * input (other a tensor or a number).
function functions.rsub(input, other, ...)
  local o = options("rsub", {"*", "alpha"}, ...)
  check_tensor(input, "rsub", "input")
  if not ember.is_tensor(other) and type(other) ~= "number" then
    raise(string.format("rsub: other must be a tensor or a number, got %s", type(other)))
  end
  local alpha = o.alpha == nil and 1 or o.alpha
  if type(alpha) ~= "number" then raise(string.format("rsub: alpha must be a number, got %s", type(alpha))) end
  local dtype = functions.result_type(input, other)
  if dtype == "bool" then raise("rsub: subtraction of bool tensors is not supported; use logical_xor() instead") end
  if not FLOAT[dtype] and math.type(alpha) ~= "integer" then
    raise(string.format("rsub: alpha must be an integer for a %s result, got %s", dtype, tostring(alpha)))
  end
  return errors.call(ember.sub, other, input, {alpha = alpha})
end

-- ---- in-place forms ----------------------------------------------------------------------

-- cumsum_ and cumprod_: f along dim, computed in self's dtype (PyTorch's in-place forms
-- take a dtype only equal to self's, and have no bool kernel)
local function cumulative_(op, f, self, dim, ...)
  inplace.check_target(op, self)
  local o = options(op, {"*", "dtype"}, ...)
  if o.dtype ~= nil and o.dtype ~= self.dtype then
    raise(string.format("%s: dtype %s differs from self's %s (an in-place result keeps self's dtype)", op,
                        tostring(o.dtype), self.dtype))
  end
  if self.dtype == "bool" then raise(op .. ": not supported for bool tensors") end
  return inplace.into(op, self, errors.call(f, self, dim, {dtype = self.dtype}))
end

--- t:cumsum_(dim) -> t holding its cumulative sums along dim.
function methods.cumsum_(self, dim, ...) return cumulative_("cumsum_", ember.cumsum, self, dim, ...) end

--- t:cumprod_(dim) -> t holding its cumulative products along dim.
function methods.cumprod_(self, dim, ...) return cumulative_("cumprod_", ember.cumprod, self, dim, ...) end

--- t:addmm_(mat1, mat2 [, {beta = 1, alpha = 1}]) -> t holding beta * t + alpha * (mat1 @ mat2).
function methods.addmm_(self, mat1, mat2, ...)
  inplace.check_target("addmm_", self)
  return inplace.into("addmm_", self, errors.call(ember.addmm, self, mat1, mat2, ...))
end

--- t:fill_diagonal_(fill_value [, wrap = false]) -> t with its main diagonal set to fill_value.
function methods.fill_diagonal_(self, fill_value, ...)
  local op = "fill_diagonal_"
  check_tensor(self, op, "self")
  local o = options(op, {"wrap"}, ...)
  local wrap = o.wrap
  if wrap == nil then wrap = false end
  if type(fill_value) ~= "number" and type(fill_value) ~= "boolean" then
    raise(string.format("%s: fill_value must be a number, got %s", op, type(fill_value)))
  end
  if type(wrap) ~= "boolean" then raise(string.format("%s: wrap must be a boolean, got %s", op, type(wrap))) end
  local shape, d = self.shape, self:dim()
  if d < 2 then raise(string.format("%s: expected a tensor of at least 2 dimensions, got %s", op, shape_str(self))) end
  for i = 3, d do
    if shape[i] ~= shape[1] then
      raise(string.format("%s: all dimensions of a tensor of more than 2 must be of equal length, got %s", op,
                          shape_str(self)))
    end
  end
  inplace.check_target(op, self)
  -- In row-major order the diagonal elements are every step-th one from the first, step
  -- being 1 + n + n^2 + ... (one more in every dim). A tall matrix has min(h, w) of them;
  -- with wrap the pattern goes on below (numpy's rule, a row left out each time).
  local step = 0
  for i = d, 2, -1 do step = (step + 1) * shape[i] end
  step = step + 1
  local numel = self:numel()
  local limit = (wrap or d > 2) and numel or math.min(shape[1], shape[2]) * step
  local p = ember.arange(numel, {device = self.device})
  local mask = p:remainder(step):eq(0):logical_and(p:lt(limit)):reshape(shape)
  return errors.call(self.masked_fill_, self, mask, fill_value)
end

-- ---- sums and positions ------------------------------------------------------------------

--- t:sum_to_size(size...) -> t summed to size, a shape t broadcasts from (t itself if equal).
function methods.sum_to_size(self, ...)
  local op = "sum_to_size"
  check_tensor(self, op, "self")
  local size
  if select("#", ...) == 1 and type((...)) == "table" then size = size_list(op, "size", (...))
  else size = size_list(op, "size", {...}, select("#", ...)) end
  local shape, lead = self.shape, self:dim() - #size
  local dims = {}
  for i = 1, lead do dims[#dims + 1] = i end
  for k = 1, #size do
    local have = shape[lead + k]
    if lead < 0 or (size[k] ~= have and size[k] ~= 1) then
      raise(string.format("%s: size %s is not expandable to size %s", op, sizes_str(size), shape_str(self)))
    end
    if size[k] ~= have then dims[#dims + 1] = lead + k end
  end
  if #dims == 0 then return self end
  return self:sum(dims, true):reshape(size)
end

--- ember.unravel_index(indices, shape) -> one tensor of coordinates per dim of shape, 1-based.
function functions.unravel_index(indices, shape)
  local op = "unravel_index"
  if math.type(indices) == "integer" then indices = ember.tensor(indices) end
  check_tensor(indices, op, "indices")
  if FLOAT[indices.dtype] or indices.dtype == "bool" then
    raise(string.format("%s: expected indices of an integer dtype, got %s", op, indices.dtype))
  end
  local sizes = size_list(op, "shape", shape)
  local n = 1
  for _, s in ipairs(sizes) do
    if s ~= 0 and n > math.maxinteger // s then
      raise(string.format("%s: shape %s has more elements than int64 holds", op, sizes_str(sizes)))
    end
    n = n * s
  end
  local flat = indices:to("int64")
  if flat:numel() > 0 then
    if n == 0 then raise(string.format("%s: shape %s has no elements for indices to point at", op, sizes_str(sizes))) end
    -- 1-based positions, negative ones counting from the end: 1..n and -n..-1
    local lo, hi = flat:min():item(), flat:max():item()
    local bad = lo < -n and lo or hi > n and hi or flat:eq(0):any():item() and 0 or nil
    if bad then
      raise(string.format("%s: index %d is out of bounds for shape %s (expected 1..%d or -%d..-1)", op, bad,
                          sizes_str(sizes), n, n))
    end
  end
  flat = ember.where(flat:lt(0), flat + n, flat - 1)   -- 0-based
  local coords = {}
  for k = #sizes, 1, -1 do
    local s = math.max(sizes[k], 1)   -- 0 only with no indices: nothing to divide
    coords[k] = flat:remainder(s) + 1
    flat = flat:floor_divide(s)
  end
  return table.unpack(coords, 1, #sizes)
end

-- ---- torch.X for nn.functional's X ------------------------------------------------------

-- PyTorch has these at the top level with F's positional order (not the losses: torch's
-- take the reduction as an enum number), so ember.X is F.X itself: the same function,
-- found in help under F's entry.
local F = ember.nn.functional
for _, name in ipairs({"channel_shuffle", "pixel_shuffle", "pixel_unshuffle", "cosine_similarity",
                       "pairwise_distance", "celu", "selu", "rrelu", "prelu", "hardshrink", "threshold", "dropout",
                       "alpha_dropout", "feature_alpha_dropout", "bilinear", "rms_norm"}) do
  functions[name] = F[name]
end
-- and the two of them PyTorch has as tensor methods too: t:prelu(weight), t:hardshrink([lambd])
methods.prelu, methods.hardshrink = F.prelu, F.hardshrink

--- t:new([sizes or data or tensor] [, {device}]) -> PyTorch's legacy constructor: of t's dtype and device,
-- t:new() an empty tensor, t:new(2, 3) or t:new(size) an uninitialised one of those sizes, t:new({1, 2})
-- one holding the data, t:new(u) u itself (which must have t's dtype and device).
function methods.new(t, ...)
  local op = "new"
  check_tensor(t, op, "self")
  local args = table.pack(...)
  local o = {}
  if args.n > 0 and type(args[args.n]) == "table" and getmetatable(args[args.n]) == nil
      and not ember.is_tensor(args[args.n]) and args[args.n][1] == nil and next(args[args.n]) ~= nil then
    o = options(op, {"device"}, args[args.n])
    args.n = args.n - 1
  end
  local topts = {dtype = t.dtype, device = o.device or t.device}
  local a = args[1]
  if args.n == 0 then return ember.empty(0, topts) end
  if ember.is_tensor(a) then
    if args.n > 1 or a.dtype ~= t.dtype or a.device ~= topts.device then
      raise(string.format("new: expected a tensor of dtype %s on %s, got %s on %s", t.dtype, topts.device,
                          a.dtype, a.device))
    end
    return a
  end
  if type(a) == "table" and (getmetatable(a) or {}).__name ~= "ember.Size" then
    if args.n > 1 then raise("new: data (a table) takes no other arguments") end
    return ember.tensor(a, topts)
  end
  local sizes = {}
  for i = 1, args.n do sizes[i] = args[i] end
  if type(a) == "table" then sizes = a end
  return ember.empty(sizes, topts)
end

--- ember.igamma(input, other) -> ember.special.gammainc(input, other), the regularized lower incomplete
-- gamma function P(input, other); t:igamma(other) and t:igamma_(other) (in place) too. igammac: Q = 1 - P.
function both.igamma(input, other) return ember.special.gammainc(input, other) end
function both.igammac(input, other) return ember.special.gammaincc(input, other) end
local function igamma_into(op, self, r)
  check_tensor(self, op, "self")
  if r.dtype ~= self.dtype then
    raise(string.format("%s: result type %s can't be cast to the desired output type %s", op, r.dtype, self.dtype))
  end
  return errors.call(self.copy_, self, r)
end
function methods.igamma_(self, other) return igamma_into("igamma_", self, ember.special.gammainc(self, other)) end
function methods.igammac_(self, other) return igamma_into("igammac_", self, ember.special.gammaincc(self, other)) end

--- t:const_data_ptr() -> t:data_ptr(), PyTorch's name for a pointer not written through.
function methods.const_data_ptr(t) return t:data_ptr() end

-- the elementwise Lua callbacks: t's values (flat, row-major) through fn, written back
local function map_values(op, t, fn, others)
  check_tensor(t, op, "self")
  if t.device ~= "cpu" then raise(string.format("%s: works on CPU tensors only (as PyTorch's), got one on %s", op, t.device)) end
  if type(fn) ~= "function" and not (getmetatable(fn) or {}).__call then
    raise(string.format("%s: expected a callable, got %s", op, type(fn)))
  end
  local lists = {}
  for i, u in ipairs(others) do
    check_tensor(u, op, "argument " .. i)
    lists[i] = u:to(t.device):broadcast_to(t.shape):reshape(-1):tolist()
  end
  local vals = t:reshape(-1):tolist()
  for k = 1, #vals do
    if #lists == 0 then vals[k] = fn(vals[k])
    elseif #lists == 1 then vals[k] = fn(vals[k], lists[1][k])
    else vals[k] = fn(vals[k], lists[1][k], lists[2][k]) end
  end
  if #vals > 0 then errors.call(t.copy_, t, ember.tensor(vals, {dtype = t.dtype}):view(t.shape)) end
  return t
end

--- t:apply_(fn) -> t, each element replaced by fn(element) (a Lua function; CPU tensors only), as
-- PyTorch's (and Lua Torch's apply). Slow: one Lua call per element.
-- Example: x:apply_(function(v) return v * v end)
function methods.apply_(t, fn) return map_values("apply_", t, fn, {}) end

--- t:map_(other, fn) -> t, each element replaced by fn(element, other's element) (other broadcast to t).
function methods.map_(t, other, fn) return map_values("map_", t, fn, {other}) end

--- t:map2_(x, y, fn) -> t, each element replaced by fn(element, x's element, y's element).
function methods.map2_(t, x, y, fn) return map_values("map2_", t, fn, {x, y}) end

--- t:narrow_copy(dim, start, length) -> a contiguous copy of t:narrow(dim, start, length), as torch's.
function both.narrow_copy(t, dim, start, length)
  check_tensor(t, "narrow_copy", "input")
  return t:narrow(dim, start, length):clone()
end

-- ---- finfo, iinfo and the constants -----------------------------------------------------

-- torch.finfo's figures of each float dtype, from its format: p mantissa bits (eps = 2^-p),
-- the largest exponent emax (max = (2 - eps) 2^emax) and the smallest emin (tiny = 2^emin);
-- resolution is 10^-digits, digits = floor(p log10 2)
local FLOAT_FORMAT = {
  float32 = {bits = 32, p = 23, emax = 127, emin = -126, resolution = 1e-06},
  float64 = {bits = 64, p = 52, emax = 1023, emin = -1022, resolution = 1e-15},
  float16 = {bits = 16, p = 10, emax = 15, emin = -14, resolution = 0.001},
  bfloat16 = {bits = 16, p = 7, emax = 127, emin = -126, resolution = 0.01},
}
local INT_RANGE = {
  int64 = {bits = 64, min = math.mininteger, max = math.maxinteger},
  int32 = {bits = 32, min = -2147483648, max = 2147483647},
  int16 = {bits = 16, min = -32768, max = 32767},
  int8 = {bits = 8, min = -128, max = 127},
  uint8 = {bits = 8, min = 0, max = 255},
}

local function info_object(name, fields, order)
  local parts = {}
  for i, k in ipairs(order) do
    parts[i] = k == "dtype" and "dtype=" .. fields.dtype or string.format("%s=%g", k, fields[k])
  end
  local text = name .. "(" .. table.concat(parts, ", ") .. ")"
  return setmetatable({}, {
    __index = fields,
    __newindex = function(_, k) raise(string.format("%s: its fields are read-only (assigned '%s')", name, tostring(k))) end,
    __tostring = function() return text end,
    __name = "ember." .. name,
  })
end

local function info_dtype(op, dtype)
  if dtype == nil and op == "finfo" then return ember.get_default_dtype() end
  if ember.is_tensor(dtype) then
    raise(string.format("ember.%s: expected a dtype name, got a tensor (use ember.%s(t.dtype))", op, op))
  end
  check_dtype("ember." .. op, dtype, "its argument")
  return dtype
end

--- ember.finfo([dtype = default dtype]) -> bits, eps, max, min, tiny, smallest_normal, resolution, dtype
-- of a float dtype, as torch.finfo (read-only fields; prints as PyTorch's repr).
-- Example: x:masked_fill(mask, ember.finfo(x.dtype).min)
function functions.finfo(dtype)
  dtype = info_dtype("finfo", dtype)
  local f = FLOAT_FORMAT[dtype]
  if not f then
    raise(string.format("ember.finfo: expected a float dtype, got %s (ember.iinfo is for integer dtypes)", dtype))
  end
  local eps, tiny = 2.0 ^ -f.p, 2.0 ^ f.emin
  local max = (2 - eps) * 2.0 ^ f.emax
  return info_object("finfo", {bits = f.bits, eps = eps, max = max, min = -max, tiny = tiny, smallest_normal = tiny,
                               resolution = f.resolution, dtype = dtype},
                     {"resolution", "min", "max", "eps", "smallest_normal", "tiny", "dtype"})
end

--- ember.iinfo(dtype) -> bits, min, max (Lua integers), dtype of an integer dtype, as torch.iinfo.
-- Example: ember.iinfo("int64").max   -- 9223372036854775807
function functions.iinfo(dtype)
  dtype = info_dtype("iinfo", dtype)
  local r = INT_RANGE[dtype]
  if not r then
    raise(string.format("ember.iinfo: expected an integer dtype (int64, int32, int16, int8, uint8), got %s%s", dtype,
                        FLOAT_FORMAT[dtype] and " (ember.finfo is for float dtypes)" or ""))
  end
  return info_object("iinfo", {bits = r.bits, min = r.min, max = r.max, dtype = dtype}, {"min", "max", "dtype"})
end

--- ember.inf, ember.nan, ember.pi, ember.e: torch's constants (math.huge, 0/0, math.pi, exp(1)).
functions.inf = math.huge
functions.nan = -(0.0 / 0.0)       -- 0/0 has its sign bit set on x86: printed "-nan"
functions.pi = math.pi
functions.e = math.exp(1)

-- ---- as_tensor, asarray ------------------------------------------------------------------

-- whether tensor t already has the dtype and device the options ask for ("cuda" is the
-- current CUDA device, as in PyTorch: read through an empty tensor made there)
local function in_place(t, o)
  if o.dtype ~= nil and o.dtype ~= t.dtype then return false end
  return o.device == nil or ember.empty(0, {device = o.device}).device == t.device
end

local function moved(t, o) return t:to({dtype = o.dtype or t.dtype, device = o.device or t.device}) end

--- ember.deepcopy(obj) -> Python's copy.deepcopy: a copy of a module (or a table, or a tensor)
-- sharing nothing mutable with obj; what is shared inside obj (a tied weight) stays shared.
-- Example: local ema = ember.deepcopy(model)
function functions.deepcopy(obj)
  return require("ember.nn.module").deepcopy(obj)
end

--- ember.as_tensor(data [, dtype [, device]]) -> data itself when it is a tensor of that dtype and
-- device (memory shared), a converted copy when it is another tensor (recorded for autograd),
-- ember.tensor(data, {dtype, device}) for numbers and tables. As torch.as_tensor.
-- Example: local y = ember.as_tensor({1, 2, 3}, {dtype = "int64"})
function functions.as_tensor(data, ...)
  local o = options("ember.as_tensor", {"dtype", "device"}, ...)
  if ember.is_tensor(data) then return in_place(data, o) and data or moved(data, o) end
  return ember.tensor(data, {dtype = o.dtype, device = o.device})
end

--- ember.asarray(obj [, {dtype, device, copy, requires_grad}]) -> torch.asarray: a tensor obj itself
-- when no dtype or device change is asked (copy = true: a new tensor; copy = false: an error when
-- a change is asked); requires_grad, given, is set on the result (obj itself, as PyTorch does);
-- tables and numbers as ember.tensor.
function functions.asarray(obj, ...)
  local op = "ember.asarray"
  local o = options(op, {"*", "dtype", "device", "copy", "requires_grad"}, ...)
  for _, k in ipairs({"copy", "requires_grad"}) do
    if o[k] ~= nil and type(o[k]) ~= "boolean" then
      raise(string.format("%s: %s must be a boolean, got %s", op, k, type(o[k])))
    end
  end
  if not ember.is_tensor(obj) then
    if o.copy == false then raise(op .. ": copy = false, but a table or a number is always copied into a new tensor") end
    return ember.tensor(obj, {dtype = o.dtype, device = o.device, requires_grad = o.requires_grad})
  end
  local r = obj
  if not in_place(obj, o) then
    if o.copy == false then
      raise(string.format("%s: copy = false, but a %s tensor on %s cannot be aliased as %s on %s", op, obj.dtype,
                          obj.device, o.dtype or obj.dtype, o.device or obj.device))
    end
    r = moved(obj, o)
  elseif o.copy then
    r = obj:detach():clone()
  end
  if o.requires_grad and not FLOAT[r.dtype] then
    raise(string.format("%s: only floating point tensors can require gradients, got %s", op, r.dtype))
  end
  if o.requires_grad ~= nil then r:requires_grad_(o.requires_grad) end
  return r
end

-- ---- ember.device ------------------------------------------------------------------------

-- a device object is an empty table: its type and index live here, so that no
-- assignment can change them (each one reaches __newindex)
local device_fields = setmetatable({}, {__mode = "k"})
local Device = {__name = "ember.device"}   -- the C side knows device objects by this name
function Device.__index(d, k) return device_fields[d][k] end
function Device.__tostring(d) return d.index and d.type .. ":" .. d.index or d.type end
function Device.__eq(a, b) return a.type == b.type and a.index == b.index end
function Device.__concat(a, b) return tostring(a) .. tostring(b) end
function Device.__newindex(_, k)
  raise(string.format("ember.device: its fields are read-only (assigned '%s')", tostring(k)))
end

--- ember.device(name [, index]) -> a device object as torch.device: d.type ("cpu" or "cuda"), d.index
-- (nil unless given), tostring(d) ("cuda:1"). Every argument that takes a device name takes it
-- (t:to(d), {device = d}, module:to(d), ember.set_default_device(d), ...); t.device stays a string.
-- Example: local device = ember.device(ember.cuda.is_available() and "cuda" or "cpu")
function functions.device(name, index)
  local op = "ember.device"
  if getmetatable(name) == Device then
    if index ~= nil then raise(op .. ": an index goes with a device type, not with a device object") end
    return name
  end
  if type(name) ~= "string" then
    raise(string.format('%s: expected a device name ("cpu", "cuda", "cuda:N"), got %s', op, type(name)))
  end
  local kind, num = name:match("^(%a+):(%d+)$")
  kind = kind or name
  if kind ~= "cpu" and kind ~= "cuda" then
    raise(string.format('%s: expected "cpu", "cuda" or "cuda:N", got "%s"', op, name))
  end
  if num and index ~= nil then
    raise(string.format('%s: "%s" names an index already; pass the type alone with index %s', op, name, tostring(index)))
  end
  if index ~= nil and (math.type(index) ~= "integer" or index < 0) then
    raise(string.format("%s: index must be an integer >= 0, got %s", op, tostring(index)))
  end
  local d = setmetatable({}, Device)
  device_fields[d] = {type = kind, index = num and math.tointeger(tonumber(num)) or index}
  return d
end

return {functions = functions, both = both, methods = methods}
