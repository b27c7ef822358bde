-- ops_table_spec.lua — every op of the elementwise table (engine/elementwise_ops.h, listed
-- for Lua by ember._ops()) on every backend present, against the CPU in float64: each float
-- dtype the op takes (float16/bfloat16 rounded inputs, compared with per-dtype tolerances),
-- integer and bool inputs where its dtype class takes them (integer-only ops against Lua's
-- integer arithmetic), the result dtype its class promises, the in-place form, the Lua
-- names its binding promises, its autocast class, and its gradient against finite
-- differences in float64 (on the device too, through a copy there and back).
--
-- The backends: the CPU always; the device under test (tests/gpu/gpu_helpers.lua) when
-- there is one, so tests/run.sh's second pass (EMBER_CUDA=emu) covers the CUDA kernels on
-- the emulated device and a GPU run covers them on the GPU. Without a GPU this file still
-- runs the CPU half.
--
-- An op added to the table fails here until DOMAINS below says where its inputs live.
local ember = require "ember"
local g = require "gpu_helpers"
local autograd = require "ember.autograd"

local OPS = ember._ops()

local DEVICES = {"cpu"}
if g.is_cuda and not g.skip_reason() then DEVICES[2] = g.DEV end

-- ---- inputs ------------------------------------------------------------------------------

-- Where each op's inputs live: one range {lo, hi} per argument for float values, and the
-- integer range as ints = {lo, hi} where it differs from the integers in [lo, hi] (none in
-- range: no integer inputs for a float op). int_valued: the float inputs are integers too
-- (comparisons meet ties, logical ops meet zeros). An argument with order = true is an
-- integer parameter (polygamma's n): integer-valued, and held fixed in the gradient checks,
-- which differentiate the other arguments only.
local function r(lo, hi, ints) return {lo, hi, ints = ints} end
local WIDE, POS, UNIT, DIVISOR = r(-3, 3), r(0.2, 5), r(-0.9, 0.9), r(0.5, 2, {1, 3})
local ORDER = {0, 3, order = true}
local SMALL_INTS = {args = {r(-2, 2), r(-2, 2)}, int_valued = true}
local DOMAINS = {
  neg = {WIDE}, abs = {WIDE}, sign = {WIDE}, exp = {WIDE}, log = {POS}, log1p = {r(-0.8, 4)},
  expm1 = {WIDE}, sqrt = {POS}, rsqrt = {POS}, sin = {WIDE}, cos = {WIDE}, tanh = {WIDE},
  sigmoid = {WIDE}, relu = {WIDE}, gelu = {WIDE}, silu = {WIDE}, floor = {WIDE}, ceil = {WIDE},
  round = {WIDE}, logical_not = {args = {r(-1, 1)}, int_valued = true}, reciprocal = {POS},
  square = {WIDE}, gelu_grad = {WIDE}, gelu_tanh = {WIDE}, gelu_tanh_grad = {WIDE}, exp2 = {WIDE}, log2 = {POS}, log10 = {POS}, erf = {WIDE},
  silu_grad = {WIDE}, sigmoid_grad = {WIDE}, erfc = {WIDE}, erfinv = {UNIT}, trunc = {WIDE}, tan = {r(-1.2, 1.2)}, sinh = {WIDE},
  cosh = {WIDE}, asin = {UNIT}, acos = {UNIT}, atan = {WIDE}, asinh = {WIDE}, acosh = {r(1.1, 5)},
  atanh = {UNIT}, bitwise_not = {r(-8, 8)}, digamma = {POS}, lgamma = {POS},

  add = {WIDE, WIDE}, sub = {WIDE, WIDE}, mul = {WIDE, WIDE}, div = {WIDE, DIVISOR},
  remainder = {WIDE, DIVISOR}, pow = {r(0.5, 2, {-3, 3}), r(-2, 2, {0, 3})}, maximum = {WIDE, WIDE},
  minimum = {WIDE, WIDE}, eq = SMALL_INTS, ne = SMALL_INTS, lt = SMALL_INTS, le = SMALL_INTS,
  gt = SMALL_INTS, ge = SMALL_INTS, logical_and = {args = {r(-1, 1), r(-1, 1)}, int_valued = true},
  logical_or = {args = {r(-1, 1), r(-1, 1)}, int_valued = true}, atan2 = {WIDE, WIDE},
  hypot = {WIDE, WIDE}, copysign = {WIDE, WIDE}, logaddexp = {WIDE, WIDE}, logaddexp2 = {WIDE, WIDE},
  fmod = {WIDE, DIVISOR}, div_trunc = {WIDE, DIVISOR}, div_floor = {WIDE, DIVISOR},
  bitwise_and = {r(-8, 8), r(-8, 8)}, bitwise_or = {r(-8, 8), r(-8, 8)}, bitwise_xor = {r(-8, 8), r(-8, 8)},
  bitwise_left_shift = {r(-8, 8), r(0, 5)}, bitwise_right_shift = {r(-8, 8), r(0, 5)},
  polygamma = {r(0.5, 5, {1, 5}), ORDER},
}

-- The integer-only ops' results in Lua's integer arithmetic (there is no float64 to compare
-- with); a right shift is arithmetic (floor division), as the engine's.
local INTEGER_REFERENCE = {
  bitwise_not = function(a, _, is_bool) return is_bool and (a == 0 and 1 or 0) or ~a end,   -- bool: logical_not
  bitwise_and = function(a, b) return a & b end,
  bitwise_or = function(a, b) return a | b end,
  bitwise_xor = function(a, b) return a ~ b end,
  bitwise_left_shift = function(a, b) return a << b end,
  bitwise_right_shift = function(a, b) return a // (1 << b) end,
}

-- argument shapes: a binary op's second argument broadcasts
local SHAPES = {{3, 4}, {4}}

local function domain(op)
  local d = DOMAINS[op.name]
  if d and not d.args then d = {args = d} end
  return d
end

-- float64 inputs on the CPU, one per argument
local function float_inputs(op, d)
  local xs = {}
  for i = 1, op.arity do
    local lo, hi = d.args[i][1], d.args[i][2]
    if d.int_valued or d.args[i].order then
      xs[i] = ember.randint(lo, hi + 1, SHAPES[i], {dtype = "float64"})
    else
      xs[i] = ember.rand(SHAPES[i], {dtype = "float64"}) * (hi - lo) + lo
    end
  end
  return xs
end

-- int64 inputs on the CPU, or nil when an argument's range holds no integer
local function int_inputs(op, d, dtype)
  local xs = {}
  for i = 1, op.arity do
    local range = d.args[i].ints or {math.ceil(d.args[i][1]), math.floor(d.args[i][2])}
    local lo, hi = range[1], range[2]
    if dtype == "uint8" then lo = math.max(lo, 0) end
    if dtype == "bool" then lo, hi = math.max(lo, 0), math.min(hi, 1) end
    if lo > hi then return nil end
    xs[i] = ember.randint(lo, hi + 1, SHAPES[i], {dtype = "int64"})
  end
  return xs
end

local function on(dev, xs, dtype)
  local out = {}
  for i, x in ipairs(xs) do
    out[i] = x:to(dtype)
    out[i] = dev == "cpu" and out[i]:clone() or out[i]:to(dev)
  end
  return out
end

-- ---- what the classes promise ------------------------------------------------------------

local FLOATS = {"float32", "float64", "float16", "bfloat16"}
local INTS = {"int64", "int32", "int16", "int8", "uint8", "bool"}
local TAKES_BOOL = {all = true, bitwise = true, to_bool = true, float = true}
local TAKES_FLOAT = {float = true, numeric = true, all = true, to_bool = true}

local function takes(op, dtype)
  local is_float = dtype:match("float") ~= nil
  if is_float then return TAKES_FLOAT[op.dtypes] == true end
  if dtype == "bool" then return TAKES_BOOL[op.dtypes] == true end
  return true
end

local function result_dtype(op, dtype)
  if op.dtypes == "to_bool" then return "bool" end
  if op.dtypes == "float" and not dtype:match("float") then return ember.get_default_dtype() end
  if op.name == "square" and dtype == "bool" then return "int64" end   -- square is pow(x, 2)
  return dtype
end

-- per result dtype (relative, absolute): each result is the op computed in float32 or
-- float64 (float16/bfloat16 in float32, rounded once), on inputs both sides share
local TOL = {float64 = {1e-12, 1e-12}, float32 = {1e-5, 1e-6}, float16 = {2e-3, 1e-4}, bfloat16 = {1e-2, 1e-3}}

local function call(op, xs) return op.fn(table.unpack(xs, 1, op.arity)) end

-- op as a function of the arguments the gradient checks vary (all but the order
-- parameters, which keep their values in xs), and those arguments' values
local function varied(op, d, xs, dev)
  local vary, values = {}, {}
  for i = 1, op.arity do
    if not d.args[i].order then vary[#vary + 1] = i; values[#values + 1] = xs[i] end
  end
  local fn = function(...)
    local args = {table.unpack(xs, 1, op.arity)}
    for k, x in ipairs({...}) do args[vary[k]] = x end
    if dev ~= "cpu" then
      for i = 1, op.arity do args[i] = args[i]:to(dev) end
      return call(op, args):to("cpu")
    end
    return call(op, args)
  end
  return fn, values
end

-- The float64 reference of op on inputs xs (any dtype, any device), or the exact integer
-- reference of an integer-only op: a CPU tensor.
local function reference(op, xs)
  local cpu = {}
  for i, x in ipairs(xs) do cpu[i] = x:cpu() end
  local exact = INTEGER_REFERENCE[op.name]
  if exact then
    local a, b = cpu[1]:to("int64"):tolist(), op.arity == 2 and cpu[2]:to("int64"):tolist()
    local function at(t, i, j) return type(t[1]) == "table" and t[i][j] or t[j] end
    local rows = {}
    for i = 1, SHAPES[1][1] do
      rows[i] = {}
      for j = 1, SHAPES[1][2] do rows[i][j] = exact(at(a, i, j), b and at(b, i, j), xs[1].dtype == "bool") end
    end
    return ember.tensor(rows, {dtype = "int64"})
  end
  for i = 1, #cpu do cpu[i] = cpu[i]:to("float64") end
  return call(op, cpu)
end

-- got (on dev) against the float64 reference want, at the tolerance of got's dtype; bool
-- and integer results exactly (integers: only where the reference is one, int64 on the CPU)
local function check(got, want, what)
  local d = got.dtype
  local t = TOL[d]
  local opts = {what = what, any_device = true}
  if t then
    opts.rtol, opts.atol = t[1], t[2]
    return g.close(got:cpu():to("float64"), want:to("float64"), opts)
  end
  return g.same(got:cpu():to("float64"), want:to("float64"), opts)
end

-- ---- the tests ---------------------------------------------------------------------------

describe("the elementwise op table", function()
  it("is listed for Lua, unary then binary, each row complete", function()
    assert(#OPS > 60, "ember._ops() lists only " .. #OPS .. " ops")
    local seen = {}
    for i, op in ipairs(OPS) do
      assert(type(op.name) == "string" and not seen[op.name], "row " .. i .. ": a name, once")
      seen[op.name] = true
      assert(op.arity == 1 or op.arity == 2, op.name .. ": arity")
      assert(i == 1 or op.arity >= OPS[i - 1].arity, op.name .. ": unary ops first")
      assert(TAKES_FLOAT[op.dtypes] or op.dtypes == "integer" or op.dtypes == "bitwise", op.name .. ": dtypes")
      assert(type(op.fn) == "function", op.name .. ": fn")
      assert((op.fn_ ~= nil) == (op.inplace ~= nil), op.name .. ": fn_ exactly when an in-place name")
      assert(op.backward == nil or op.backward:match("Backward$"), op.name .. ": backward")
    end
  end)

  it("has a domain in this file for every op, and none for an op it lacks", function()
    local missing, stale, names = {}, {}, {}
    for _, op in ipairs(OPS) do
      names[op.name] = true
      if not DOMAINS[op.name] then missing[#missing + 1] = op.name end
      if (op.dtypes == "integer" or op.dtypes == "bitwise") and not INTEGER_REFERENCE[op.name] then
        missing[#missing + 1] = op.name .. " (INTEGER_REFERENCE)"
      end
    end
    for name in pairs(DOMAINS) do if not names[name] then stale[#stale + 1] = name end end
    assert(#missing == 0, "ops of engine/elementwise_ops.h with no domain in ops_table_spec.lua: "
                          .. table.concat(missing, ", "))
    assert(#stale == 0, "domains of ops the table does not have: " .. table.concat(stale, ", "))
  end)

  it("gives Lua the names each op's binding promises", function()
    for _, op in ipairs(OPS) do
      local fn, fn_ = rawget(ember, op.name), op.inplace and rawget(ember, op.inplace)
      if op.binding == "internal" then
        assert(fn == nil, op.name .. ": internal, yet ember." .. op.name .. " exists")
      else
        assert(type(fn) == "function" and ember.Tensor[op.name] == fn, op.name .. ": ember." .. op.name
               .. " and Tensor:" .. op.name)
        assert(not op.inplace or (type(fn_) == "function" and ember.Tensor[op.inplace] == fn_),
               op.name .. ": the in-place " .. tostring(op.inplace))
        if not op.inplace then
          assert(rawget(ember, op.name .. "_") == nil, op.name .. ": no in-place name, yet " .. op.name .. "_")
        end
      end
    end
  end)

  for _, op in ipairs(OPS) do
    describe(op.name, function()
      local d = domain(op)

      for _, dev in ipairs(DEVICES) do
        it("matches float64 on " .. dev .. " in every dtype it takes", function()
          assert(d, "no domain for " .. op.name .. " (DOMAINS in ops_table_spec.lua)")
          ember.manual_seed(30)
          for _, dtype in ipairs(FLOATS) do
            if takes(op, dtype) and not INTEGER_REFERENCE[op.name] then
              local xs = on(dev, float_inputs(op, d), dtype)
              local got = call(op, xs)
              local what = ("%s(%s) on %s"):format(op.name, dtype, dev)
              assert(got.device == (dev == "cpu" and "cpu" or g.devname), what .. ": on " .. got.device)
              assert(got.dtype == result_dtype(op, dtype), what .. ": dtype " .. got.dtype)
              check(got, reference(op, xs), what)
            end
          end
          for _, dtype in ipairs(INTS) do
            local ints = takes(op, dtype) and int_inputs(op, d, dtype)
            if ints then
              local xs = on(dev, ints, dtype)
              local got = call(op, xs)
              local what = ("%s(%s) on %s"):format(op.name, dtype, dev)
              assert(got.dtype == result_dtype(op, dtype), what .. ": dtype " .. got.dtype)
              -- against float64 where no integer type wraps (a bool sum saturates): int64,
              -- and the narrower signed types where the reference lies in their range
              local want = reference(op, xs)
              local fits = dtype ~= "uint8" and dtype ~= "bool" and want.dtype ~= "bool" and want:numel() > 0
                and want:min():item() >= ember.iinfo(dtype).min and want:max():item() <= ember.iinfo(dtype).max
              if got.dtype:match("float") or op.dtypes == "to_bool" or dtype == "int64" or fits then
                check(got, want, what)
              end
              if dev ~= "cpu" then   -- the narrow integer types wrap as the CPU's do
                check(got, call(op, on("cpu", ints, dtype)), what .. " against the CPU")
              end
            end
          end
        end)

        if op.inplace then
          it("in place on " .. dev .. " writes what the op returns", function()
            ember.manual_seed(31)
            local dtype = TAKES_FLOAT[op.dtypes] and "float32" or "int64"
            local xs = dtype == "float32" and float_inputs(op, d) or int_inputs(op, d, dtype)
            xs = on(dev, xs, dtype)
            local want = call(op, xs)
            local self = xs[1]:clone()
            local r = op.fn_(self, table.unpack(xs, 2, op.arity))
            assert(rawequal(r, self), op.inplace .. " returns self")
            g.same(self:cpu(), want:to(dtype):cpu(), {what = op.inplace .. " on " .. dev, any_device = true})
          end)
        end

        if op.backward then
          it("has the gradient of finite differences on " .. dev .. " (float64)", function()
            ember.manual_seed(32)
            local ok, why = autograd.gradcheck(varied(op, d, float_inputs(op, d), dev))
            assert(ok, op.name .. " on " .. dev .. ": " .. tostring(why))
          end)
        end
      end

      if op.backward then
        it("has the second derivative of finite differences on the CPU (float64)", function()
          ember.manual_seed(33)
          local ok, why = autograd.gradgradcheck(varied(op, d, float_inputs(op, d), "cpu"))
          -- a gradient that does not depend on the inputs (neg, relu, floor, add, ...) records
          -- nothing: its derivative is zero, and there is nothing to compare
          if not ok and tostring(why):find("the first gradient does not require grad", 1, true) then return end
          assert(ok, op.name .. ": " .. tostring(why))
        end)
      end

      if op.binding == "generic" and (op.dtypes == "float" or op.dtypes == "numeric") then
        -- fp32_cuda: float32 in a CUDA region (PyTorch's CUDA list), the input's dtype in a
        -- CPU region (its CPU lists hold none of these ops)
        for _, dev in ipairs(DEVICES) do
          local low = dev == "cpu" and "bfloat16" or "float16"
          it("follows its autocast class (" .. op.autocast .. ") under ember.autocast on " .. dev, function()
            ember.manual_seed(34)
            local xs = on(dev, float_inputs(op, d), low)
            local kind = dev == "cpu" and "cpu" or "cuda"
            local got = ember.autocast(kind, {dtype = low}, function() return ember[op.name](table.unpack(xs)) end)
            local want = op.autocast == "fp32_cuda" and kind == "cuda" and "float32" or low
            assert(got.dtype == want, ("%s under autocast on %s: %s, expected %s"):format(op.name, dev, got.dtype, want))
          end)
        end
      end
    end)
  end
end)
