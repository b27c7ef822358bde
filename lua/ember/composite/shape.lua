-- ember.composite.shape — PyTorch's stacking, splitting and array utilities, written over
-- ember's ops: hstack, vstack, row_stack, dstack, column_stack, concatenate; tensor_split,
-- hsplit, vsplit, dsplit, split_with_sizes; ravel, msort, diff, isin; trapezoid, trapz,
-- cumulative_trapezoid; cov, corrcoef, dist, vander; histogram.
--
-- A part of lua/ember/composite.lua (its PARTS): functions are ember.X only, both are
-- ember.X and t:X, as PyTorch has them. Autograd records the ops they are made of, so
-- the differentiable ones get their gradients from those; the pieces of the splits and
-- ravel of a contiguous tensor are views, as in PyTorch.
--
-- Positions are 1-based (the README's rule 1): the indices of tensor_split, hsplit,
-- vsplit and dsplit are the positions where pieces start, PyTorch's 0-based index + 1,
-- as narrow's start is.
local ember = require "ember"
local errors = require "ember.errors"
local raise, check_tensor, shape_str = errors.raise, errors.check_tensor, errors.shape_str
local options = require("ember.args").options

local functions, both, methods = {}, {}, {}

local float_dtypes = {float32 = true, float64 = true, float16 = true, bfloat16 = true}
local integer_dtypes = {int64 = true, int32 = true, int16 = true, int8 = true, uint8 = true}

-- ---- shared checks -----------------------------------------------------------------------

local checks = require "ember.composite.checks"
local show, relay, public, integer, boolean = checks.show, checks.relay, checks.public, checks.integer, checks.boolean
local wrap_dim = checks.wrap_dim

-- t without its last element along d and t without its first (views; both empty when t
-- has none there), the operands of every difference along d
local function neighbours(t, d)
  local m = t.shape[d]
  local k = math.max(m - 1, 0)
  return t:narrow(d, 1, k), t:narrow(d, math.min(2, m + 1), k)
end

-- t's shape without dim d
local function shape_without(t, d)
  local s = {}
  for i, v in ipairs(t.shape) do if i ~= d then s[#s + 1] = v end end
  return s
end

-- ---- stacking ----------------------------------------------------------------------------

-- t with at least k (1 to 3) dims: atleast_1d/2d/3d (a 1-D [n] becomes [1, n] and
-- [1, n, 1], a 2-D [m, n] becomes [m, n, 1])
local ATLEAST = {ember.atleast_1d, ember.atleast_2d, ember.atleast_3d}
local function at_least(t, k) return ATLEAST[k](t) end

-- the table of tensors, each through lift (at_least, or column_stack's rule)
local function lifted(op, tensors, lift)
  if type(tensors) ~= "table" or ember.is_tensor(tensors) or #tensors == 0 then
    raise(string.format("%s: expected a non-empty table of tensors, got %s", op, show(tensors)))
  end
  local out = {}
  for i, t in ipairs(tensors) do
    check_tensor(t, op, "tensors[" .. i .. "]")
    out[i] = lift(t)
  end
  return out
end

--- ember.hstack(tensors) -> the tensors joined column-wise: along dim 1 when the first is 1-D (or 0-d), else dim 2.
functions.hstack = public("hstack", function(tensors)
  local ts = lifted("hstack", tensors, function(t) return at_least(t, 1) end)
  return ember.cat(ts, ts[1]:dim() == 1 and 1 or 2)
end)

local function vstack(tensors)
  return ember.cat(lifted("vstack", tensors, function(t) return at_least(t, 2) end), 1)
end

--- ember.vstack(tensors) -> the tensors, each at least 2-D, joined along dim 1 (row-wise).
functions.vstack = public("vstack", vstack)

--- ember.row_stack(tensors) -> vstack's other name.
functions.row_stack = public("row_stack", vstack)

--- ember.dstack(tensors) -> the tensors, each at least 3-D, joined along dim 3 (depth-wise).
functions.dstack = public("dstack", function(tensors)
  return ember.cat(lifted("dstack", tensors, function(t) return at_least(t, 3) end), 3)
end)

--- ember.column_stack(tensors) -> 0-d and 1-D tensors as columns [n, 1], the others as they are, joined along dim 2.
functions.column_stack = public("column_stack", function(tensors)
  return ember.cat(lifted("column_stack", tensors, function(t)
    if t:dim() <= 1 then return t:reshape(t:numel(), 1) end
    return t
  end), 2)
end)

--- ember.concatenate(tensors [, dim]) -> cat's other name (as ember.concat).
functions.concatenate = ember.cat

-- ---- splitting ---------------------------------------------------------------------------

-- the pieces of t along d between the 0-based cut positions cuts (PyTorch's slice bounds,
-- already within 0..size; a cut before the previous one gives an empty piece), as views
local function pieces(t, d, cuts)
  local out, n, start = {}, t.shape[d], 0
  for k = 1, #cuts + 1 do
    local stop = cuts[k] or n
    out[k] = t:narrow(d, start + 1, math.max(stop - start, 0))
    start = stop
  end
  return table.unpack(out)
end

-- the cuts of n elements into `sections` pieces whose sizes differ by one at most, the
-- larger first (PyTorch's rule)
local function section_cuts(op, n, sections)
  sections = integer(op, "sections", sections)
  if sections <= 0 then raise(string.format("%s: number of sections must be positive, got %d", op, sections)) end
  local size, extra, cuts = n // sections, n % sections, {}
  for k = 1, sections - 1 do cuts[k] = k * size + math.min(k, extra) end
  return cuts
end

-- the cuts at the 1-based positions `indices` (where pieces start; negative from the end)
-- of n elements: PyTorch's 0-based index is position - 1 (position + n for a negative one),
-- clamped to 0..n as a slice bound is
local function index_cuts(op, n, indices)
  local cuts = {}
  for k, v in ipairs(indices) do
    local i = integer(op, "indices[" .. k .. "]", v)
    if i == 0 then raise(string.format("%s: indices are 1-based positions (negative from the end), got 0", op)) end
    cuts[k] = math.max(0, math.min(n, i > 0 and i - 1 or n + i))
  end
  return cuts
end

--- ember.tensor_split(t, indices_or_sections [, dim]) -> views of t along dim (default 1), as several values:
--- `sections` pieces (sizes differ by one at most), or pieces starting at the 1-based positions `indices`.
both.tensor_split = public("tensor_split", function(t, ios, ...)
  local op = "tensor_split"
  check_tensor(t, op, "input")
  local o = options(op, {"dim"}, ...)
  if t:dim() == 0 then raise(op .. ": expected a tensor of at least 1 dimension, got a 0-d tensor") end
  local d = wrap_dim(op, t, o.dim == nil and 1 or o.dim)
  local n = t.shape[d]
  if ember.is_tensor(ios) then
    if ios.dtype ~= "int64" then
      raise(string.format("%s: a tensor of indices or sections must be int64, got %s", op, ios.dtype))
    end
    if ios:dim() > 1 then
      raise(string.format("%s: a tensor of indices or sections must be 0-d (sections) or 1-D (indices), got %s",
                          op, shape_str(ios)))
    end
    ios = ios:dim() == 0 and ios:item() or ios:tolist()
  end
  if type(ios) == "number" then return pieces(t, d, section_cuts(op, n, ios)) end
  if type(ios) ~= "table" then
    raise(string.format("%s: indices_or_sections must be an integer, a table of positions or an int64 tensor, got %s",
                        op, show(ios)))
  end
  return pieces(t, d, index_cuts(op, n, ios))
end)

-- hsplit, vsplit and dsplit: t split along d (a dim t must have) into `sections` equal
-- pieces or at the 1-based positions of a table
local function split_at(op, t, ios, d, min_dims)
  check_tensor(t, op, "input")
  if t:dim() < min_dims then
    raise(string.format("%s: expected a tensor of at least %d dimension%s, got %s", op, min_dims,
                        min_dims > 1 and "s" or "", t:dim() == 0 and "a 0-d tensor" or shape_str(t)))
  end
  local n = t.shape[d]
  if type(ios) == "number" then
    local s = integer(op, "sections", ios)
    if s <= 0 or n % s ~= 0 then
      raise(string.format("%s: cannot split dimension %d of %s (size %d) into %d equal pieces", op, d, shape_str(t),
                          n, s))
    end
    return pieces(t, d, section_cuts(op, n, s))
  end
  if type(ios) ~= "table" or ember.is_tensor(ios) then
    raise(string.format("%s: indices_or_sections must be an integer or a table of positions, got %s", op, show(ios)))
  end
  return pieces(t, d, index_cuts(op, n, ios))
end

--- ember.hsplit(t, indices_or_sections) -> t split along dim 2 (dim 1 for a 1-D t): equal pieces or at 1-based positions.
both.hsplit = public("hsplit", function(t, ios)
  check_tensor(t, "hsplit", "input")
  return split_at("hsplit", t, ios, t:dim() == 1 and 1 or 2, 1)
end)

--- ember.vsplit(t, indices_or_sections) -> t (at least 2-D) split along dim 1.
both.vsplit = public("vsplit", function(t, ios) return split_at("vsplit", t, ios, 1, 2) end)

--- ember.dsplit(t, indices_or_sections) -> t (at least 3-D) split along dim 3.
both.dsplit = public("dsplit", function(t, ios) return split_at("dsplit", t, ios, 3, 3) end)

--- ember.split_with_sizes(t, split_sizes [, dim]) -> views of t along dim (default 1) of the sizes given, which
--- must be non-negative and add up to the dim's size.
both.split_with_sizes = public("split_with_sizes", function(t, sizes, ...)
  local op = "split_with_sizes"
  check_tensor(t, op, "input")
  local o = options(op, {"dim"}, ...)
  local d = wrap_dim(op, t, o.dim == nil and 1 or o.dim)
  if type(sizes) ~= "table" or ember.is_tensor(sizes) then
    raise(string.format("%s: split_sizes must be a table of sizes, got %s", op, show(sizes)))
  end
  local cuts, total = {}, 0
  for k, v in ipairs(sizes) do
    local s = integer(op, "split_sizes[" .. k .. "]", v)
    if s < 0 then raise(string.format("%s: split sizes must be non-negative, got %d at position %d", op, s, k)) end
    total = total + s
    cuts[k] = total
  end
  if total ~= t.shape[d] then
    raise(string.format("%s: split sizes must add up to the size of dimension %d of %s (%d), got %d", op, d,
                        shape_str(t), t.shape[d], total))
  end
  if #sizes == 0 then return end   -- no sizes for an empty dim: no pieces
  cuts[#cuts] = nil   -- the last piece ends at the end
  return pieces(t, d, cuts)
end)

-- the storage positions (elements) of a view of sizes and strides from offset, an int64
-- tensor of those sizes
local function storage_positions(sizes, strides, offset, device)
  local pos = ember.full({}, offset, {dtype = "int64", device = device})
  local n = #sizes
  for k = 1, n do
    local shape = {}
    for j = 1, n do shape[j] = j == k and sizes[k] or 1 end
    pos = pos + (ember.arange(sizes[k], {dtype = "int64", device = device}) * strides[k]):view(shape)
  end
  return pos
end

local function int_list(op, what, v)
  if type(v) == "table" and not ember.is_tensor(v) then
    local out = {}
    for k = 1, #v do
      out[k] = integer(op, what .. "[" .. k .. "]", v[k])
      if out[k] < 0 then raise(string.format("%s: %s must be >= 0, got %d at position %d", op, what, out[k], k)) end
    end
    return out
  end
  raise(string.format("%s: %s must be a list of integers, got %s", op, what, show(v)))
end

--- ember.as_strided(t, size, stride [, storage_offset]) -> the view of t's storage with these sizes
--- and strides (in elements, >= 0) from storage_offset (default t's), as torch.as_strided. Of a
--- tensor that records a gradient, a copy of those elements (through index_select, so the
--- gradient adds up where elements repeat) rather than a view; each of its elements must be
--- one of t's.
both.as_strided = public("as_strided", function(t, size, stride, storage_offset)
  local op = "as_strided"
  check_tensor(t, op, "input")
  size, stride = int_list(op, "size", size), int_list(op, "stride", stride)
  if #size ~= #stride then
    raise(string.format("%s: mismatch in length of strides and shape (%d sizes, %d strides)", op, #size, #stride))
  end
  local offset = storage_offset == nil and t:storage_offset() or integer(op, "storage_offset", storage_offset)
  local view = ember._as_strided_view(t, size, stride, offset)
  if not (t.requires_grad and ember.is_grad_enabled()) then return view end
  -- t's element (1-based, row-major) at each storage position it covers, 0 elsewhere
  local owner = ember.zeros(ember._storage_numel(t), {dtype = "int64", device = t.device})
  local tsizes, tstrides = {}, {}
  for k = 1, t:dim() do tsizes[k], tstrides[k] = t:size(k), t:stride(k) end
  local tpos = storage_positions(tsizes, tstrides, t:storage_offset(), t.device):reshape(-1)
  owner:scatter_(1, tpos + 1, ember.arange(1, t:numel() + 1, {dtype = "int64", device = t.device}))
  local want = owner:index_select(1, storage_positions(size, stride, offset, t.device):reshape(-1) + 1)
  if want:numel() > 0 and want:min():item() == 0 then
    raise(string.format("%s: view of size %s with strides %s reaches storage elements that %s does not hold "
                        .. "(needed to record its gradient)", op, show(size), show(stride), shape_str(t)))
  end
  return t:reshape(-1):index_select(1, want):view(size)
end)

-- ---- uninitialised tensors of a given layout ------------------------------------------------

-- the storage elements a view of these sizes and strides reaches (0 for an empty view)
local function storage_extent(size, stride)
  local n = 1
  for k = 1, #size do
    if size[k] == 0 then return 0 end
    n = n + (size[k] - 1) * stride[k]
  end
  return n
end

local CREATION = {"*", "dtype", "device", "requires_grad", "layout", "pin_memory"}

-- the dtype and device of a new tensor (like's where the options give none), and the
-- options' requires_grad; layout and pin_memory are ember's only ones (strided, false)
local function creation(op, o, like)
  if o.layout ~= nil and o.layout ~= "strided" then
    raise(string.format("%s: layout %s is not supported by ember (only strided)", op, tostring(o.layout)))
  end
  if o.pin_memory then raise(op .. ": pin_memory is not supported by ember") end
  return {dtype = o.dtype or (like and like.dtype), device = o.device or (like and like.device)}
end

local function strided_empty(op, size, stride, o, like)
  size, stride = int_list(op, "size", size), int_list(op, "stride", stride)
  if #size ~= #stride then
    raise(string.format("%s: dimensionality of sizes (%d) must match dimensionality of strides (%d)", op, #size,
                        #stride))
  end
  local base = ember.empty(storage_extent(size, stride), creation(op, o, like))
  local t = ember._as_strided_view(base, size, stride, 0)
  if o.requires_grad then t:requires_grad_() end
  return t
end

--- ember.empty_strided(size, stride [, {dtype, device, requires_grad}]) -> an uninitialised tensor
--- of these sizes whose elements lie at these strides (elements may repeat: stride 0), as
--- torch.empty_strided.
functions.empty_strided = public("empty_strided", function(size, stride, ...)
  return strided_empty("empty_strided", size, stride, options("empty_strided", CREATION, ...))
end)

--- t:new_empty_strided(size, stride [, {dtype, device, requires_grad}]) -> empty_strided in t's dtype and
--- device unless given.
methods.new_empty_strided = public("new_empty_strided", function(self, size, stride, ...)
  check_tensor(self, "new_empty_strided", "self")
  return strided_empty("new_empty_strided", size, stride, options("new_empty_strided", CREATION, ...), self)
end)

--- ember.empty_permuted(size, physical_layout [, {dtype, device, requires_grad}]) -> an uninitialised
--- tensor of these sizes laid out in memory in the order of physical_layout (a permutation of
--- 1..#size, the outermost dim first; PyTorch's 0-based), as torch.empty_permuted.
functions.empty_permuted = public("empty_permuted", function(size, layout, ...)
  local op = "empty_permuted"
  local o = options(op, CREATION, ...)
  size, layout = int_list(op, "size", size), int_list(op, "physical_layout", layout)
  if #layout ~= #size then
    raise(string.format("%s: Number of dimensions in size does not match the length of the physical_layout; "
                        .. "i.e. len(size) = %d is not equal to len(physical_layout) = %d", op, #size, #layout))
  end
  local seen, physical, inverse = {}, {}, {}
  for k, d in ipairs(layout) do
    if d < 1 or d > #size or seen[d] then
      raise(string.format("%s: physical_layout must be a permutation of 1..%d, got %s", op, #size, show(layout)))
    end
    seen[d] = true
    physical[k] = size[d]
    inverse[d] = k
  end
  local t = ember.empty(physical, creation(op, o)):permute(inverse)
  if o.requires_grad then t:requires_grad_() end
  return t
end)

--- ember.unsafe_chunk / unsafe_split / unsafe_split_with_sizes: PyTorch's forms of chunk, split and
--- split_with_sizes without the views' checks on in-place use; here the same functions.
both.unsafe_chunk = public("unsafe_chunk", function(...) return ember.chunk(...) end)
both.unsafe_split = public("unsafe_split", function(...) return ember.split(...) end)
both.unsafe_split_with_sizes = public("unsafe_split_with_sizes", function(...) return both.split_with_sizes(...) end)

-- ---- array utilities ---------------------------------------------------------------------

--- ember.ravel(t) -> t flattened to 1-D: a view when t is contiguous, else a contiguous copy.
both.ravel = public("ravel", function(t)
  check_tensor(t, "ravel", "input")
  return t:contiguous():view(-1)
end)

--- ember.msort(t) -> t sorted along dim 1 (ascending; the values only).
both.msort = public("msort", function(t)
  check_tensor(t, "msort", "input")
  return (ember.sort(t, 1))
end)

-- The table of the arguments prepend / append of diff: a tensor of t's number of dims
-- whose sizes match t's except along d.
local function check_margin(t, d, m, what)
  check_tensor(m, "diff", what)
  local same = m:dim() == t:dim()
  for i = 1, t:dim() do
    if i ~= d and m.shape[i] ~= t.shape[i] then same = false end
  end
  if not same then
    raise(string.format("diff: %s %s must have the shape of input %s except along dimension %d", what,
                        shape_str(m), shape_str(t), d))
  end
end

--- ember.diff(t [, n = 1 [, dim = -1 [, prepend [, append]]]]) -> the n-th forward difference along dim
--- (t[i+1] - t[i]; logical_xor for bool), of prepend, t and append joined along dim.
both.diff = public("diff", function(t, ...)
  local o = options("diff", {"n", "dim", "prepend", "append"}, ...)
  check_tensor(t, "diff", "input")
  if t:dim() == 0 then raise("diff: expected a tensor of at least 1 dimension, got a 0-d tensor") end
  local n = integer("diff", "n", o.n == nil and 1 or o.n)
  if n < 0 then raise(string.format("diff: n (the order) must be non-negative, got %d", n)) end
  local d = wrap_dim("diff", t, o.dim == nil and -1 or o.dim)
  if o.prepend ~= nil or o.append ~= nil then
    local parts = {}
    if o.prepend ~= nil then check_margin(t, d, o.prepend, "prepend"); parts[1] = o.prepend end
    parts[#parts + 1] = t
    if o.append ~= nil then check_margin(t, d, o.append, "append"); parts[#parts + 1] = o.append end
    t = ember.cat(parts, d)
  end
  for _ = 1, n do
    if t.shape[d] == 0 then break end
    local before, after = neighbours(t, d)
    t = t.dtype == "bool" and after:logical_xor(before) or after - before
  end
  return t
end)

--- ember.isin(elements, test_elements [, {assume_unique = false, invert = false}]) -> bool tensor of elements'
--- shape: whether each element is among test_elements (either may be a number).
functions.isin = public("isin", function(elements, test, ...)
  local op = "isin"
  local o = options(op, {"*", "assume_unique", "invert"}, ...)
  boolean(op, "assume_unique", o.assume_unique, false)   -- a hint for speed in PyTorch; the result is the same
  local invert = boolean(op, "invert", o.invert, false)
  for _, arg in ipairs({{"elements", elements}, {"test_elements", test}}) do
    local what, v = arg[1], arg[2]
    if type(v) ~= "number" then check_tensor(v, op, what) end
    if ember.is_tensor(v) and v.dtype == "bool" then raise(op .. ": bool tensors are not supported (as in PyTorch)") end
  end
  local found
  if type(elements) == "number" and type(test) == "number" then
    raise(op .. ": expected a tensor as elements or test_elements, got two numbers")
  elseif type(test) == "number" then
    found = elements:eq(test)
  elseif type(elements) == "number" then
    found = test:eq(elements):any()
  else
    -- each element looked up in the sorted test elements in their common dtype; NaN equals
    -- nothing, so it is left out of them (searchsorted needs it out too)
    local dtype = (ember.zeros(0, {dtype = elements.dtype}) + ember.zeros(0, {dtype = test.dtype})).dtype
    local e, s = elements:detach():to(dtype), test:detach():reshape(-1):to(dtype)
    s = s:masked_select(s:isnan():logical_not())
    if s:numel() == 0 then
      found = ember.zeros_like(e, {dtype = "bool"})
    else
      local sorted = ember.sort(s)
      local flat = e:reshape(-1)
      local at = ember.searchsorted(sorted, flat):clamp(1, sorted:numel())
      found = sorted:index_select(1, at):eq(flat):reshape(e.shape)
    end
  end
  return invert and found:logical_not() or found
end)

-- ---- integration -------------------------------------------------------------------------

-- the arguments of trapezoid, trapz and cumulative_trapezoid: (y [, x], {dx =, dim = -1})
local function integration_args(op, y, ...)
  local o = options(op, {"x", "*", "dx", "dim"}, ...)
  check_tensor(y, op, "y")
  if y:dim() == 0 then raise(op .. ": y must have at least 1 dimension, got a 0-d tensor") end
  local d = wrap_dim(op, y, o.dim == nil and -1 or o.dim)
  if o.x ~= nil then
    if o.dx ~= nil then raise(op .. ": give the sample points x or the spacing dx, not both") end
    if type(o.x) == "number" then
      raise(op .. ": x must be a tensor of sample points; give a constant spacing as {dx = " .. o.x .. "}")
    end
    check_tensor(o.x, op, "x")
  elseif o.dx ~= nil and type(o.dx) ~= "number" then
    raise(string.format("%s: dx must be a number, got %s", op, show(o.dx)))
  end
  return o, d
end

local function refuse_bool(op, y, x)
  if y.dtype == "bool" or (x and x.dtype == "bool") then
    raise(op .. ": bool inputs are not supported (as in PyTorch)")
  end
end

-- the spacings of the sample points x along d, shaped to broadcast against y's differences
-- (PyTorch's rule: a 1-D x lies along d, an x of fewer dims gains leading dims of size 1)
local function spacings(op, y, x, d)
  if x:dim() == 1 then
    if x.shape[1] ~= y.shape[d] then
      raise(string.format("%s: there must be one x value for each sample point: x %s, y %s along dimension %d",
                          op, shape_str(x), shape_str(y), d))
    end
    local sizes = {}
    for i = 1, y:dim() do sizes[i] = 1 end
    sizes[d] = x.shape[1]
    x = x:view(sizes)
  elseif x:dim() < y:dim() then
    local sizes = {}
    for i = 1, y:dim() - x:dim() do sizes[i] = 1 end
    for _, s in ipairs(x.shape) do sizes[#sizes + 1] = s end
    x = x:view(sizes)
  end
  local before, after = neighbours(x, d)
  return after - before
end

-- the integral along d of y by the trapezoid rule
local function trapezoid(op, y, ...)
  local o, d = integration_args(op, y, ...)
  -- no samples: zero, in y's dtype (PyTorch and NumPy's answer)
  if y.shape[d] == 0 then return ember.zeros(shape_without(y, d), {dtype = y.dtype, device = y.device}) end
  refuse_bool(op, y, o.x)
  if o.x ~= nil then
    local before, after = neighbours(y, d)
    return ((before + after) * spacings(op, y, o.x, d)):sum(d) / 2
  end
  -- one spacing: dx (the sum less half the two ends), PyTorch's formula and its rounding
  return (y:sum(d) - (y:select(d, 1) + y:select(d, -1)) * 0.5) * (o.dx == nil and 1 or o.dx)
end

--- ember.trapezoid(y [, x] [, {dx = 1, dim = -1}]) -> the integral of y along dim by the trapezoid rule, at the
--- sample points x or with the constant spacing dx.
functions.trapezoid = public("trapezoid", function(...) return trapezoid("trapezoid", ...) end)

--- ember.trapz(y [, x] [, {dx = 1, dim = -1}]) -> trapezoid's other name.
functions.trapz = public("trapz", function(...) return trapezoid("trapz", ...) end)

--- ember.cumulative_trapezoid(y [, x] [, {dx = 1, dim = -1}]) -> the running integral of y along dim by the
--- trapezoid rule: one value fewer than y has along dim.
functions.cumulative_trapezoid = public("cumulative_trapezoid", function(y, ...)
  local op = "cumulative_trapezoid"
  local o, d = integration_args(op, y, ...)
  refuse_bool(op, y, o.x)
  local before, after = neighbours(y, d)
  if o.x ~= nil then return ((before + after) * spacings(op, y, o.x, d)):cumsum(d) / 2 end
  return ((before + after) * ((o.dx == nil and 1 or o.dx) / 2)):cumsum(d)
end)

-- ---- statistics --------------------------------------------------------------------------

-- a weights tensor of cov: at most 1-D, one weight per observation, none negative
local function check_weights(w, what, n, kind_ok, kind)
  check_tensor(w, "cov", what)
  if w:dim() > 1 then raise(string.format("cov: %s must have at most 1 dimension, got %s", what, shape_str(w))) end
  if not kind_ok[w.dtype] then raise(string.format("cov: %s must have %s dtype, got %s", what, kind, w.dtype)) end
  if w:numel() ~= n then
    raise(string.format("cov: %s must have one weight per observation (%d), got %d", what, n, w:numel()))
  end
  if n > 0 and w:min():lt(0):item() then raise(string.format("cov: %s cannot be negative", what)) end
end

local function cov(input, ...)
  local o = options("cov", {"*", "correction", "fweights", "aweights"}, ...)
  check_tensor(input, "cov", "input")
  if input:dim() > 2 then
    raise(string.format("cov: expected input to have at most 2 dimensions (variables, observations), got %s",
                        shape_str(input)))
  end
  if input.dtype == "bool" then raise("cov: bool input is not supported (as in PyTorch)") end
  local correction = integer("cov", "correction", o.correction == nil and 1 or o.correction)
  local x = input:dim() < 2 and input:reshape(1, -1) or input
  local n = x.shape[2]
  local fw, aw = o.fweights, o.aweights
  if fw ~= nil then check_weights(fw, "fweights", n, integer_dtypes, "an integer") end
  if aw ~= nil then check_weights(aw, "aweights", n, float_dtypes, "a floating-point") end
  local w = fw
  if aw ~= nil then w = w and w * aw or aw end
  local avg, norm
  if w == nil then
    avg = x:sum(2) / n
    norm = n - correction
  else
    local w_sum = w:sum()
    if w_sum:eq(0):item() then raise("cov: the weights add up to zero, so they cannot be normalized") end
    avg = (x * w):sum(2) / w_sum
    if correction == 0 then
      norm = w_sum
    elseif aw == nil then
      norm = w_sum - correction
    elseif fw == nil and n == 1 and correction == 1 then
      norm = 0   -- PyTorch's exact answer where rounding would leave a tiny positive number
    else
      norm = w_sum - (w * aw):sum() * correction / w_sum
    end
  end
  -- no degrees of freedom left: dividing by zero gives infinities and NaN (PyTorch also warns)
  if (type(norm) == "number" and norm <= 0) or (ember.is_tensor(norm) and norm:le(0):item()) then norm = 0 end
  local centred
  if n == 1 and (fw == nil) ~= (aw == nil) then
    -- PyTorch's exact answer for one weighted observation: the mean is that observation
    centred = ember.zeros_like(x, {dtype = float_dtypes[x.dtype] and x.dtype or "float32"})
  else
    centred = x - avg:unsqueeze(2)
  end
  local c = centred:mm((w and centred * w or centred):t())
  return (c / norm):squeeze()
end

--- ember.cov(input [, {correction = 1, fweights =, aweights =}]) -> the covariance matrix of the variables (rows)
--- of a 2-D input, observations in columns (a 1-D input is one variable: 0-d result).
both.cov = public("cov", cov)

--- ember.corrcoef(input) -> the Pearson correlation coefficients of the rows of input (cov normalized), in [-1, 1].
both.corrcoef = public("corrcoef", function(input)
  check_tensor(input, "corrcoef", "input")
  if input:dim() > 2 then
    raise(string.format("corrcoef: expected input to have at most 2 dimensions, got %s", shape_str(input)))
  end
  local c = cov(input)
  if c:dim() == 0 then return c / c end   -- one variable: 1, or NaN where its variance is 0, inf or NaN
  local sd = c:diagonal():sqrt()
  c = c / sd:view(-1, 1)
  c = c / sd:view(1, -1)
  -- rounding may step outside [-1, 1]
  return c:clip(-1, 1)
end)

--- ember.dist(input, other [, p = 2]) -> the p-norm of input - other (broadcast), a 0-d tensor.
both.dist = public("dist", function(input, other, ...)
  local o = options("dist", {"p"}, ...)
  check_tensor(input, "dist", "input")
  check_tensor(other, "dist", "other")
  local p = o.p == nil and 2 or o.p
  if type(p) ~= "number" then raise(string.format("dist: p must be a number, got %s", show(p))) end
  if not float_dtypes[input.dtype] and not float_dtypes[other.dtype] then
    raise(string.format("dist: expected a floating-point tensor, got %s and %s", input.dtype, other.dtype))
  end
  return (input - other):norm(p)
end)

--- ember.vander(x [, N [, increasing = false]]) -> the Vandermonde matrix [#x, N] of the 1-D x: columns
--- x^(N-1) .. x^0 (x^0 .. x^(N-1) when increasing); integer and bool x give int64.
functions.vander = public("vander", function(x, ...)
  local o = options("vander", {"N", "increasing"}, ...)
  check_tensor(x, "vander", "x")
  if x:dim() ~= 1 then raise(string.format("vander: x must be 1-D, got %s", x:dim() == 0 and "a 0-d tensor" or shape_str(x))) end
  local rows = x.shape[1]
  local N = integer("vander", "N", o.N == nil and rows or o.N)
  if N < 0 then raise(string.format("vander: N must be non-negative, got %d", N)) end
  local increasing = boolean("vander", "increasing", o.increasing, false)
  if not float_dtypes[x.dtype] then x = x:to("int64") end   -- PyTorch's cumprod promotes so
  local ones = ember.ones_like(x):unsqueeze(2)
  local result
  if N == 0 then
    result = ones:narrow(2, 1, 0)
  elseif N == 1 then
    result = ones
  else
    -- running products of x, as PyTorch (its gradient is cumprod's, exact at zeros)
    result = ember.cat({ones, x:unsqueeze(2):expand(rows, N - 1):cumprod(2)}, 2)
  end
  return increasing and result or result:flip(2)
end)

-- ---- histogram ---------------------------------------------------------------------------

-- a * b + c rounded once, as the fused multiply-add PyTorch's linspace kernel compiles to:
-- the product split exactly into two doubles (Dekker), the sum into two (Knuth), rounded
-- at the end (right but in rare double-rounding ties)
local function fma(a, b, c)
  local function split(v)
    local t = 134217729.0 * v   -- 2^27 + 1
    local hi = t - (t - v)
    return hi, v - hi
  end
  local p = a * b
  local ah, al = split(a)
  local bh, bl = split(b)
  local pe = ((ah * bh - p) + ah * bl + al * bh) + al * bl
  local s = p + c
  local bb = s - p
  local se = (p - (s - bb)) + (c - bb)
  return s + (pe + se)
end

-- v rounded to float32
local function f32(v) return (string.unpack("<f", string.pack("<f", v))) end

-- n + 1 edges from lo to hi in dtype, each as PyTorch's CPU linspace makes it: the first
-- half lo + step * i, the second hi - step * (n - i), with one rounding (a fused
-- multiply-add), the step (hi - lo) / n in dtype
local function linspace_edges(lo, hi, n, dtype, device)
  local vals = {}
  if dtype == "float64" then
    local step = (hi - lo) / n
    for i = 0, n do
      vals[i + 1] = i < (n + 1) // 2 and fma(step, i, lo) or fma(-step, n - i, hi)
    end
  else
    lo, hi = f32(lo), f32(hi)
    local step = f32(f32(hi - lo) / n)
    for i = 0, n do
      -- float32 * small integer is exact in a double: one rounding of the sum is the fma's
      vals[i + 1] = f32(i < (n + 1) // 2 and step * i + lo or hi - step * (n - i))
    end
  end
  return ember.tensor(vals, {dtype = dtype, device = device})
end

-- the outer edges of histogram's equal bins: range, or the data's minimum and maximum
-- ([0, 1] for no data), widened by 0.5 each way when equal
local function outer_edges(input, range)
  local lo, hi = 0, 1
  if range ~= nil then
    if type(range) ~= "table" or ember.is_tensor(range) or #range ~= 2 or type(range[1]) ~= "number"
        or type(range[2]) ~= "number" then
      raise(string.format("histogram: range must be a table of two numbers {min, max}, got %s", show(range)))
    end
    lo, hi = range[1], range[2]
  elseif input:numel() > 0 then
    lo, hi = input:min():item(), input:max():item()
  end
  if lo ~= lo or hi ~= hi or lo == math.huge or lo == -math.huge or hi == math.huge or hi == -math.huge then
    raise(string.format("histogram: the range [%s, %s] is not finite", tostring(lo), tostring(hi)))
  end
  if lo > hi then raise(string.format("histogram: the range's min %s exceeds its max %s", tostring(lo), tostring(hi))) end
  if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end
  return lo, hi
end

--- ember.histogram(input [, bins = 100] [, {range =, weight =, density = false}]) -> hist, bin_edges: a
--- histogram of input's elements in `bins` equal bins over range (default the data's), or between the edges of
--- the 1-D tensor bins. float32 / float64 only; not differentiable.
both.histogram = public("histogram", function(input, ...)
  local op = "histogram"
  local o = options(op, {"bins", "*", "range", "weight", "density"}, ...)
  check_tensor(input, op, "input")
  if input.dtype ~= "float32" and input.dtype ~= "float64" then
    raise(string.format("histogram: input must be float32 or float64, got %s", input.dtype))
  end
  local density = boolean(op, "density", o.density, false)
  local flat = input:detach():reshape(-1)
  local bins = o.bins == nil and 100 or o.bins
  local edges
  if ember.is_tensor(bins) then
    if o.range ~= nil then raise("histogram: range applies to a number of bins, not to given bin edges") end
    if bins.dtype ~= input.dtype then
      raise(string.format("histogram: bins (edges) must have input's dtype %s, got %s", input.dtype, bins.dtype))
    end
    if bins:dim() ~= 1 then raise(string.format("histogram: bins (edges) must be 1-D, got %s", shape_str(bins))) end
    if bins:numel() < 2 then
      raise(string.format("histogram: bins (edges) must hold at least 2 edges, got %d", bins:numel()))
    end
    edges = bins:detach():clone()
  else
    local n = integer(op, "bins", bins)
    if n <= 0 then raise(string.format("histogram: bins must be positive, got %d", n)) end
    local lo, hi = outer_edges(flat, o.range)
    edges = linspace_edges(lo, hi, n, input.dtype, input.device)
  end
  local nb = edges:numel() - 1
  local w
  if o.weight ~= nil then
    check_tensor(o.weight, op, "weight")
    if o.weight.dtype ~= input.dtype then
      raise(string.format("histogram: weight must have input's dtype %s, got %s", input.dtype, o.weight.dtype))
    end
    if o.weight:numel() ~= flat:numel() then
      raise(string.format("histogram: weight %s must have one element per element of input %s",
                          shape_str(o.weight), shape_str(input)))
    end
    w = o.weight:detach():reshape(-1)
  else
    w = ember.ones_like(flat)
  end
  -- bin k holds edges[k] <= v < edges[k + 1], the last bin also its right edge; values
  -- outside the edges (and NaN) count nowhere
  local inside = flat:ge(edges[1]):logical_and(flat:le(edges[nb + 1]))
  local bin = (ember.searchsorted(edges, flat, {right = true}) - 1):clamp(1, nb)
  local hist = ember.zeros(nb, {dtype = input.dtype, device = input.device})
      :index_add(1, bin, ember.where(inside, w, 0))
  if density then
    local before, after = neighbours(edges, 1)
    hist = hist / hist:sum():item() / (after - before)
  end
  return hist, edges
end)

return {functions = functions, both = both, methods = methods}
