-- ember.testing — PyTorch's torch.testing: assert_close, make_tensor and the deprecated
-- assert_allclose, read from torch/testing/_comparison.py and _creation.py (PyTorch 2.15).
--
--   ember.testing.assert_close(actual, expected [, {rtol, atol, equal_nan, check_device,
--                              check_dtype, check_layout, check_stride, msg}])
--   ember.testing.make_tensor(shape..., {dtype, device, low, high, requires_grad,
--                             noncontiguous, exclude_zero})
--
-- assert_close works as PyTorch's in two passes: the inputs are first paired up (tensors,
-- numbers, booleans, nils, recursing through Lua tables as PyTorch recurses through
-- sequences and mappings), which raises on a structure that does not match; then the pairs
-- are compared in order and the first failure is raised, with PyTorch's message (indices
-- 1-based). A failed comparison reads as PyTorch's AssertionError; a misuse of the function
-- (PyTorch's ValueError and TypeError) starts with "assert_close: ".
local ember = require "ember"
local errors = require "ember.errors"
local args = require "ember.args"
local raise = errors.raise

local M = {}

-- ---- numbers as Python writes them ----------------------------------------------------

local py_float = require("ember.serialize").float_repr

-- a number or boolean as the messages write it: integers plainly, floats as Python's repr
local function show(v)
  if type(v) == "boolean" then return tostring(v) end
  if math.type(v) == "integer" then return string.format("%d", v) end
  return py_float(v)
end

-- a table key as Lua code writes it inside brackets: 1, "a"
local function show_key(k)
  if type(k) == "string" then return string.format("%q", k) end
  if type(k) == "number" then return show(k) end
  return tostring(k)
end

-- a list (an index, a stride, table keys) as a Lua table constructor: {1, 3}, {"a", 2}
local function show_list(list)
  local parts = {}
  for i, k in ipairs(list) do parts[i] = show_key(k) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- ---- options ----------------------------------------------------------------------------

local CLOSE_NAMES = {"*", "allow_subclasses", "rtol", "atol", "equal_nan", "check_device", "check_dtype",
                     "check_layout", "check_stride", "msg"}
-- the boolean options and their defaults, in PyTorch's order (so a message names the first)
local CLOSE_FLAGS = {{"allow_subclasses", true}, {"equal_nan", false}, {"check_device", true}, {"check_dtype", true},
                     {"check_layout", true}, {"check_stride", false}}

local function check_boolean(op, o, name)
  if type(o[name]) ~= "boolean" then
    raise(string.format("%s: option '%s' must be a boolean, got %s", op, name, type(o[name])))
  end
end

-- rtol / atol, when given: a number >= 0 (PyTorch's isclose refuses a negative one)
local function check_tolerance(op, o, name)
  local v = o[name]
  if v == nil then return end
  if type(v) ~= "number" or not (v >= 0) then
    raise(string.format("%s: %s must be a number greater than or equal to zero, got %s", op, name,
                        type(v) == "number" and show(v) or type(v)))
  end
end

-- assert_close's options with their defaults, checked
local function close_options(op, ...)
  local o = args.options(op, CLOSE_NAMES, ...)
  for _, flag in ipairs(CLOSE_FLAGS) do
    local name = flag[1]
    if o[name] == nil then o[name] = flag[2] end
    check_boolean(op, o, name)
  end
  check_tolerance(op, o, "rtol")
  check_tolerance(op, o, "atol")
  if o.msg ~= nil and type(o.msg) ~= "string" and type(o.msg) ~= "function" then
    raise(string.format("%s: option 'msg' must be a string or a function of the generated message, got %s", op,
                        type(o.msg)))
  end
  return o
end

-- ---- pairing the inputs up (PyTorch's originate_pairs) ----------------------------------

-- PyTorch's _DTYPE_PRECISIONS, {rtol, atol}; other dtypes (integers, bool) compare exactly.
-- A Lua integer counts as int64, a float as float64 (PyTorch's NumberPair).
local PRECISIONS = {float16 = {1e-3, 1e-5}, bfloat16 = {1.6e-2, 1e-5}, float32 = {1.3e-6, 1e-5},
                    float64 = {1e-7, 1e-7}}

-- the loosest default tolerances of the two dtypes (PyTorch's default_tolerances)
local function default_tolerances(precisions, d1, d2)
  local p1, p2 = precisions[d1] or {0.0, 0.0}, precisions[d2] or {0.0, 0.0}
  return math.max(p1[1], p2[1]), math.max(p1[2], p2[2])
end

local function number_dtype(v) return math.type(v) == "integer" and "int64" or "float64" end

-- a failure: its message and the item it occurred for (PyTorch's ErrorMeta)
local function failure(text, id) return {text = text, id = id} end

-- the message of f with " ... item [1]["a"]" when it occurred inside tables, as PyTorch's
-- ErrorMeta.to_error; msg (a string or a function of the message) replaces it
local function failure_message(op, f, msg)
  if type(msg) == "string" then return msg end
  local text = f.text
  if #f.id > 0 then
    local parts = {}
    for i, k in ipairs(f.id) do parts[i] = "[" .. show_key(k) .. "]" end
    text = text .. "\n\nThe failure occurred for item " .. table.concat(parts)
  end
  if msg then
    text = msg(text)
    if type(text) ~= "string" then
      raise(string.format("%s: option 'msg' must return a string, got %s", op, type(text)))
    end
  end
  return text
end

-- "sequence" for a table whose keys are 1..n (an empty one too), "mapping" for another plain
-- table or ember.Size, nil for anything else
local function table_kind(v)
  if type(v) ~= "table" or ember.is_tensor(v) then return nil end
  local mt = getmetatable(v)
  if mt ~= nil and mt ~= ember.Size then return nil end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  for i = 1, n do
    if rawget(v, i) == nil then return "mapping" end
  end
  return "sequence"
end

-- the type named in "No comparison pair ..." messages
local function type_name(v)
  if ember.is_tensor(v) then return "ember.Tensor" end
  if type(v) == "number" then return math.type(v) end
  local mt = type(v) == "table" and getmetatable(v)
  if mt and type(mt.__name) == "string" then return mt.__name end
  return type(v)
end

-- keys in a fixed order: numbers ascending, then strings, then the rest by their text
local KEY_RANK = {number = 1, string = 2}
local function key_less(a, b)
  local ra, rb = KEY_RANK[type(a)] or 3, KEY_RANK[type(b)] or 3
  if ra ~= rb then return ra < rb end
  if ra < 3 then return a < b end
  return tostring(a) < tostring(b)
end

local function sorted_keys(set)
  local out = {}
  for k in pairs(set) do out[#out + 1] = k end
  table.sort(out, key_less)
  return out
end

-- the tolerances of a pair: both given, or the defaults of the two dtypes
local function pair_tolerances(o, d1, d2, id)
  if (o.rtol == nil) ~= (o.atol == nil) then
    return nil, nil, failure(string.format("Both 'rtol' and 'atol' must be either specified or omitted, but got no %s.",
                                           o.rtol == nil and "rtol" or "atol"), id)
  end
  if o.rtol ~= nil then return o.rtol, o.atol end
  return default_tolerances(PRECISIONS, d1, d2)
end

local function with_key(id, k)
  local out = table.move(id, 1, #id, 1, {})
  out[#out + 1] = k
  return out
end

-- appends the pairs of actual and expected to pairs; returns a failure when they cannot be
-- paired (the structures differ, or no pair type takes them)
local function originate(actual, expected, o, id, pairs_)
  local ka, ke = table_kind(actual), table_kind(expected)
  if ka == "sequence" and ke == "sequence" then
    local na, ne = #actual, #expected
    if na ~= ne then
      return failure(string.format("The length of the sequences mismatch: %d != %d", na, ne), id)
    end
    for i = 1, na do
      local f, misuse = originate(actual[i], expected[i], o, with_key(id, i), pairs_)
      if f then return f, misuse end
    end
    return nil
  elseif ka and ke then
    local missing, additional = {}, {}
    for k in pairs(expected) do if rawget(actual, k) == nil then missing[k] = true end end
    for k in pairs(actual) do if rawget(expected, k) == nil then additional[k] = true end end
    if next(missing) ~= nil or next(additional) ~= nil then
      return failure("The keys of the mappings do not match:\n"
                     .. "Missing keys in the actual mapping: " .. show_list(sorted_keys(missing)) .. "\n"
                     .. "Additional keys in the actual mapping: " .. show_list(sorted_keys(additional)), id)
    end
    local keys = {}
    for k in pairs(actual) do keys[k] = true end
    for _, k in ipairs(sorted_keys(keys)) do
      local f, misuse = originate(actual[k], expected[k], o, with_key(id, k), pairs_)
      if f then return f, misuse end
    end
    return nil
  end
  local p = {actual = actual, expected = expected, id = id}
  if actual == nil or expected == nil then
    p.kind = "nil"
  elseif type(actual) == "boolean" and type(expected) == "boolean" then
    p.kind = "boolean"
  elseif type(actual) == "number" and type(expected) == "number" then
    p.kind = "number"
  elseif ember.is_tensor(actual) and ember.is_tensor(expected) then
    p.kind = "tensor"
  else
    return failure(string.format("No comparison pair was able to handle inputs of type %s and %s.", type_name(actual),
                                 type_name(expected)), id), true
  end
  if p.kind == "number" or p.kind == "tensor" then
    local d1 = p.kind == "number" and number_dtype(actual) or actual.dtype
    local d2 = p.kind == "number" and number_dtype(expected) or expected.dtype
    local f
    p.rtol, p.atol, f = pair_tolerances(o, d1, d2, id)
    if f then return f, true end
  end
  pairs_[#pairs_ + 1] = p
  return nil
end

-- ---- comparing ---------------------------------------------------------------------------

-- PyTorch's _make_mismatch_msg: the header, extra lines, and the two differences, each with
-- its index when given and its tolerance unless both tolerances are 0 (an equality check)
local function mismatch_message(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol)
  local equality = rtol == 0 and atol == 0
  local function diff_line(kind, diff, idx, tol)
    local line
    if idx then
      line = string.format("Greatest %s difference: %s at index %s", kind, show(diff), show_list(idx))
    else
      line = string.format("%s difference: %s", kind:sub(1, 1):upper() .. kind:sub(2), show(diff))
    end
    if not equality then line = line .. string.format(" (up to %s allowed)", show(tol)) end
    return line
  end
  return string.format("%s are not %s!\n\n%s\n%s\n%s", identifier, equality and "equal" or "close", extra,
                       diff_line("absolute", abs_diff, abs_idx, atol), diff_line("relative", rel_diff, rel_idx, rtol))
end

-- PyTorch's make_scalar_mismatch_msg, for numbers and 0-d tensors (booleans count 1 and 0)
local function scalar_message(actual, expected, rtol, atol)
  local a = type(actual) == "boolean" and (actual and 1 or 0) or actual
  local e = type(expected) == "boolean" and (expected and 1 or 0) or expected
  local abs_diff = math.abs(a - e)
  local rel_diff = e == 0 and math.huge or abs_diff / math.abs(e)
  return mismatch_message("Scalars", string.format("Expected %s but got %s.", show(expected), show(actual)), abs_diff,
                          nil, atol, rel_diff, nil, rtol)
end

-- flat position i (1-based) in shape as an index per dim (1-based)
local function unravel(i, shape)
  local idx = {}
  i = i - 1
  for d = #shape, 1, -1 do
    idx[d] = i % shape[d] + 1
    i = i // shape[d]
  end
  return idx
end

-- PyTorch's make_tensor_mismatch_msg: how many elements differ, and the greatest absolute and
-- relative differences among them (integers compared as int64) with their first positions
local function tensor_message(a, e, matches, rtol, atol)
  local n = matches:numel()
  local wrong = n - matches:sum():item()
  local extra = string.format("Mismatched elements: %d / %d (%.1f%%)", wrong, n, wrong / n * 100)
  local af, ef, mf = a:reshape(-1), e:reshape(-1), matches:reshape(-1)
  if not af:is_floating_point() then af, ef = af:to("int64"), ef:to("int64") end
  local abs_diff = (af - ef):abs():masked_fill(mf, 0)
  local max_abs, abs_at = abs_diff:max(1)
  local rel_diff = (abs_diff / ef:abs()):masked_fill(mf, 0)
  local max_rel, rel_at = rel_diff:max(1)
  return mismatch_message("Tensor-likes", extra, max_abs:item(), unravel(abs_at:item(), a.shape), atol,
                          max_rel:item(), unravel(rel_at:item(), a.shape), rtol)
end

local function attribute_failure(name, a, e, id)
  return failure(string.format("The values for attribute '%s' do not match: %s != %s.", name, a, e), id)
end

local function same_list(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

-- PyTorch's TensorLikePair.compare: the attributes, then the values after moving both to
-- the CPU (devices differ) and to their promoted dtype (dtypes differ)
local function compare_tensors(p, o)
  local a, e, id = p.actual, p.expected, p.id
  if not same_list(a.shape, e.shape) then return attribute_failure("shape", tostring(a.shape), tostring(e.shape), id) end
  if o.check_stride and not same_list(a:stride(), e:stride()) then
    return attribute_failure("stride()", show_list(a:stride()), show_list(e:stride()), id)
  end
  local da, de = tostring(a.device), tostring(e.device)
  if o.check_device and da ~= de then return attribute_failure("device", da, de, id) end
  if o.check_dtype and a.dtype ~= e.dtype then return attribute_failure("dtype", a.dtype, e.dtype, id) end
  local _ <close> = ember.no_grad()
  a, e = a:detach(), e:detach()
  if da ~= de then a, e = a:to("cpu"), e:to("cpu") end
  if a.dtype ~= e.dtype then
    local common = ember.promote_types(a.dtype, e.dtype)
    a, e = a:to(common), e:to(common)
  end
  if a:numel() == 0 then return nil end
  -- PyTorch's isclose measures bool tensors in the default dtype when a tolerance is given
  local ca, ce = a, e
  if a.dtype == "bool" and (p.rtol ~= 0 or p.atol ~= 0) then
    ca, ce = a:to(ember.get_default_dtype()), e:to(ember.get_default_dtype())
  end
  local matches = ember.isclose(ca, ce, {rtol = p.rtol, atol = p.atol, equal_nan = o.equal_nan})
  if matches:all():item() then return nil end
  if a:dim() == 0 then return failure(scalar_message(a:item(), e:item(), p.rtol, p.atol), id) end
  return failure(tensor_message(a, e, matches, p.rtol, p.atol), id)
end

-- PyTorch's NumberPair.compare; check_dtype tells integers from floats
local function compare_numbers(p, o)
  local a, e = p.actual, p.expected
  if o.check_dtype and math.type(a) ~= math.type(e) then
    return failure(string.format("The (d)types do not match: %s != %s.", math.type(a), math.type(e)), p.id)
  end
  if a == e then return nil end
  if o.equal_nan and a ~= a and e ~= e then return nil end
  local abs_diff = math.abs(a - e)
  if abs_diff < math.huge and abs_diff <= p.atol + p.rtol * math.abs(e) then return nil end
  return failure(scalar_message(a, e, p.rtol, p.atol), p.id)
end

local function compare(p, o)
  if p.kind == "tensor" then return compare_tensors(p, o) end
  if p.kind == "number" then return compare_numbers(p, o) end
  if p.kind == "boolean" then
    if p.actual ~= p.expected then
      return failure(string.format("Booleans mismatch: %s is not %s", tostring(p.actual), tostring(p.expected)), p.id)
    end
    return nil
  end
  if p.actual ~= nil or p.expected ~= nil then
    local function s(v) return type(v) == "number" and show(v) or tostring(v) end
    return failure(string.format("nil mismatch: %s is not %s", s(p.actual), s(p.expected)), p.id)
  end
  return nil
end

-- pairs actual and expected up, then compares the pairs; raises the first failure
local function check_close(op, actual, expected, o)
  local pairs_ = {}
  local f, misuse = originate(actual, expected, o, {}, pairs_)
  if f then
    -- PyTorch raises these before any comparison, and msg does not replace them
    local text = failure_message(op, f, nil)
    raise(misuse and op .. ": " .. text or text)
  end
  for _, p in ipairs(pairs_) do
    f = compare(p, o)
    if f then raise(failure_message(op, f, o.msg)) end
  end
end

--- testing.assert_close(actual, expected [, {rtol, atol, equal_nan = false, check_device = true,
--- check_dtype = true, check_layout = true, check_stride = false, msg}]): raises unless
--- actual and expected are close (see ember/doc/testing.md).
function M.assert_close(...)
  if select("#", ...) < 2 then
    raise("assert_close: missing required argument" .. (select("#", ...) == 0 and "s 'actual' and" or "")
          .. " 'expected'")
  end
  local actual, expected = ...
  check_close("assert_close", actual, expected, close_options("assert_close", select(3, ...)))
end

-- ---- assert_allclose (deprecated in PyTorch 1.12, still in 2.15) --------------------------

-- The FutureWarnings PyTorch gives, each written to stderr once a process.
local warned = {}
local function warn_once(key, text)
  if warned[key] then return end
  warned[key] = true
  io.stderr:write(text, "\n")
end

-- assert_allclose's own defaults: looser, and 0 for every other dtype (bfloat16 too)
local ALLCLOSE_PRECISIONS = {float16 = {1e-3, 1e-3}, float32 = {1e-4, 1e-5}, float64 = {1e-5, 1e-8}}

-- ember.tensor(v, opts), its error raised as op's
local function as_tensor(op, what, v, opts)
  if ember.is_tensor(v) then return v end
  local ok, t
  if opts then ok, t = pcall(ember.tensor, v, opts) else ok, t = pcall(ember.tensor, v) end
  if not ok then
    raise(string.format("%s: cannot make a tensor of %s: %s", op, what, tostring(t):gsub("^[^:\n]*:%d+: ", "")))
  end
  return t
end

--- testing.assert_allclose(actual, expected [, rtol [, atol [, equal_nan = true [, msg]]]]):
--- PyTorch's deprecated form of assert_close (see ember/doc/testing.md).
function M.assert_allclose(...)
  if select("#", ...) < 2 then raise("assert_allclose: missing required arguments 'actual' and 'expected'") end
  local actual, expected = ...
  local o = args.options("assert_allclose", {"rtol", "atol", "equal_nan", "msg"}, select(3, ...))
  warn_once("assert_allclose", "assert_allclose: deprecated since PyTorch 1.12 and to be removed; "
            .. "use ember.testing.assert_close instead")
  if o.msg ~= nil and type(o.msg) ~= "string" then
    raise("assert_allclose: msg must be a string, got " .. type(o.msg))
  end
  actual = as_tensor("assert_allclose", "actual", actual)
  expected = as_tensor("assert_allclose", "expected", expected, {dtype = actual.dtype})
  local rtol, atol = o.rtol, o.atol
  if rtol == nil and atol == nil then
    rtol, atol = default_tolerances(ALLCLOSE_PRECISIONS, actual.dtype, expected.dtype)
  end
  local equal_nan = o.equal_nan
  if equal_nan == nil then equal_nan = true end
  local msg = o.msg
  if msg == "" then msg = nil end
  check_close("assert_allclose", actual, expected,
              close_options("assert_allclose", {rtol = rtol, atol = atol, equal_nan = equal_nan, check_device = true,
                                                 check_dtype = false, check_stride = false, msg = msg}))
end

-- ---- make_tensor ------------------------------------------------------------------------

local FLOAT_MAX = {float16 = 65504.0, bfloat16 = 3.3895313892515355e38, float32 = 3.4028234663852886e38,
                   float64 = 1.7976931348623157e308}
-- the smallest positive normal number (finfo(dtype).tiny), exclude_zero's replacement
local FLOAT_TINY = {float16 = 6.103515625e-05, bfloat16 = 1.1754943508222875e-38, float32 = 1.1754943508222875e-38,
                    float64 = 2.2250738585072014e-308}
-- [lowest, highest) a draw of each integral dtype may take: iinfo's range, whose top
-- randint cannot reach for int64 (PyTorch's bound there is iinfo.max itself)
local INT_RANGE = {bool = {0, 2}, uint8 = {0, 256}, int8 = {-128, 128}, int16 = {-32768, 32768},
                   int32 = {-2147483648, 2147483648}, int64 = {math.mininteger, math.maxinteger}}

local MAKE_NAMES = {"*", "dtype", "device", "low", "high", "requires_grad", "noncontiguous", "exclude_zero"}

-- PyTorch's modify_low_high: the defaults, checked against each other and the dtype's range,
-- clamped to it; integral bounds rounded up (randint's high is exclusive)
local function draw_bounds(dtype, low, high, lowest, highest, default_low, default_high)
  for _, b in ipairs({{"low", low}, {"high", high}}) do
    if b[2] ~= nil and type(b[2]) ~= "number" then
      raise(string.format("make_tensor: %s must be a number, got %s", b[1], type(b[2])))
    end
  end
  if low == nil then low = default_low end
  if high == nil then high = default_high end
  local floating = FLOAT_MAX[dtype] ~= nil
  if low ~= low or high ~= high then
    raise(string.format("make_tensor: `low` and `high` cannot be NaN, but got low=%s and high=%s", show(low), show(high)))
  elseif low == high and floating then
    warn_once("make_tensor low==high", "make_tensor: passing low == high for a floating dtype is deprecated in "
              .. "PyTorch since 2.1; use ember.full instead")
  elseif low >= high then
    raise(string.format("make_tensor: `low` must be less than `high`, but got %s >= %s", show(low), show(high)))
  elseif high < lowest or low >= highest then
    raise(string.format("make_tensor: The value interval specified by `low` and `high` is [%s, %s), but %s only "
                        .. "supports [%s, %s)", show(low), show(high), dtype, show(lowest), show(highest)))
  end
  low, high = math.min(math.max(low, lowest), highest), math.min(math.max(high, lowest), highest)
  if not floating then
    low, high = math.ceil(low), math.ceil(high)
    if math.abs(low) > 2 ^ 53 or math.abs(high) > 2 ^ 53 then
      raise(string.format("make_tensor: integer bounds beyond 2^53 are not supported (ember.randint draws them "
                          .. "exactly as doubles), got [%s, %s)", show(low), show(high)))
    end
  end
  return low, high
end

-- the shape of make_tensor(2, 3, ...) or make_tensor({2, 3}, ...), checked
local function make_shape(list, n)
  if n == 1 and type(list[1]) == "table" then list, n = list[1], #list[1] end
  local shape = {}
  for i = 1, n do
    local s = list[i]
    local n = math.type(s) and math.tointeger(s)
    if not n or n < 0 then
      raise(string.format("make_tensor: size %d must be a non-negative integer, got %s", i,
                          type(s) == "number" and show(s) or type(s)))
    end
    shape[i] = n
  end
  return shape
end

-- f(...)'s result; its error raised again as make_tensor's
local function as_make_tensor(f, ...)
  local ok, r = pcall(f, ...)
  if not ok then raise("make_tensor: " .. tostring(r):gsub("^[^:\n]*:%d+: ", "")) end
  return r
end

--- testing.make_tensor(shape..., {dtype, device, low, high, requires_grad = false,
--- noncontiguous = false, exclude_zero = false}) -> a tensor of values drawn uniformly from
--- [low, high) (see ember/doc/testing.md).
function M.make_tensor(...)
  local n = select("#", ...)
  local last = n > 0 and select(n, ...) or nil
  local o = {}
  if args.is_options(last) then
    o = args.options("make_tensor", MAKE_NAMES, last)
    n = n - 1
  end
  local shape = make_shape(table.pack(...), n)
  local missing = {}
  for _, name in ipairs({"dtype", "device"}) do
    if o[name] == nil then missing[#missing + 1] = "'" .. name .. "'" end
  end
  if #missing > 0 then
    raise(string.format("make_tensor: missing required keyword-only argument%s %s", #missing > 1 and "s" or "",
                        table.concat(missing, " and ")))
  end
  local dtype, device = o.dtype, o.device
  if FLOAT_MAX[dtype] == nil and INT_RANGE[dtype] == nil then
    raise(string.format("make_tensor: the requested dtype '%s' is not supported (expected float32, float64, float16, "
                        .. "bfloat16, int64, int32, int16, int8, uint8 or bool)", tostring(dtype)))
  end
  if type(device) == "table" and (getmetatable(device) or {}).__name == "ember.device" then device = tostring(device) end
  if type(device) ~= "string" then raise("make_tensor: device must be a string, got " .. type(device)) end
  for _, name in ipairs({"requires_grad", "noncontiguous", "exclude_zero"}) do
    if o[name] == nil then o[name] = false end
    check_boolean("make_tensor", o, name)
  end
  if o.requires_grad and INT_RANGE[dtype] then
    raise(string.format("make_tensor: `requires_grad=True` is not supported for boolean and integral dtypes, but got "
                        .. "dtype=%s", dtype))
  end
  local numel = 1
  for _, s in ipairs(shape) do numel = numel * s end
  -- a last dim twice as long, of which every second element is kept: a view with strides
  -- other than the contiguous ones and an offset, holding distinct values
  local noncontiguous = o.noncontiguous and numel > 1
  if noncontiguous then shape[#shape] = shape[#shape] * 2 end
  local result
  local creation = {dtype = dtype, device = device}
  if FLOAT_MAX[dtype] then
    local max = FLOAT_MAX[dtype]
    local low, high = draw_bounds(dtype, o.low, o.high, -max, max, -9, 9)
    result = as_make_tensor(ember.empty, shape, creation)
    -- uniform_ needs high - low to be finite: draw from half the range and double it
    if high - low >= max then
      result:uniform_(low / 2, high / 2):mul_(2)
    else
      result:uniform_(low, high)
    end
  else
    local range = INT_RANGE[dtype]
    local low, high = draw_bounds(dtype, o.low, o.high, range[1], range[2],
                                  dtype == "bool" and 0 or -9, dtype == "bool" and 2 or 10)
    result = as_make_tensor(ember.randint, low, high, shape, creation)
  end
  if noncontiguous then result = result:slice(-1, 2, shape[#shape], 2) end
  if o.exclude_zero then
    result:masked_fill_(result:eq(0), INT_RANGE[dtype] and 1 or FLOAT_TINY[dtype])
  end
  if FLOAT_MAX[dtype] then result.requires_grad = o.requires_grad end
  return result
end

return M
