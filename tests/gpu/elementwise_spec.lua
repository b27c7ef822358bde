-- elementwise_spec.lua (GPU) — fill, arange, casts between every dtype pair,
-- unary, binary (comparisons and integer ops included), where, masked_fill
-- and clamp on the device under test, each compared with the CPU backend on
-- the same inputs: broadcasting, type promotion, non-contiguous and
-- misaligned views, in-place ops, 0-d and empty tensors, NaN and infinities.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local DEV = g.DEV
local dev, close, same, agree = g.dev, g.close, g.same, g.agree
local nan, inf = 0 / 0, math.huge

local function floats(...) return ember.randn(...) end
local function ints(lo, hi, sizes, dtype) return ember.randint(lo, hi, sizes, {dtype = dtype or "int64"}) end

describe("fill, arange, linspace, eye", function()
  it("full, zeros and ones in every dtype", function()
    for _, d in ipairs(g.dtypes) do
      local v = d == "bool" and 1 or (d:match("^float") or d == "bfloat16") and -2.5 or 7
      same(ember.full({3, 5}, v, {dtype = d, device = DEV}), ember.full({3, 5}, v, {dtype = d}), {what = d})
      same(ember.zeros(4, {dtype = d, device = DEV}), ember.zeros(4, {dtype = d}), {what = d})
      same(ember.ones(2, 3, {dtype = d, device = DEV}), ember.ones(2, 3, {dtype = d}), {what = d})
    end
  end)

  it("fill_ on a non-contiguous view writes only the view", function()
    for _, d in ipairs({"float32", "float64", "int64", "uint8"}) do
      local base = ember.zeros(6, 8, {dtype = d})
      local db = dev(base)
      db:t():slice(1, 2, 8, 3):fill_(5)
      base:t():slice(1, 2, 8, 3):fill_(5)
      same(db, base, {what = d})
    end
  end)

  it("fill of a large, odd-sized, misaligned view", function()
    local base = ember.zeros(1000003)
    local db = dev(base)
    db:narrow(1, 2, 999999):fill_(1.5)
    base:narrow(1, 2, 999999):fill_(1.5)
    same(db:sum(), base:sum())
    same(db:narrow(1, 1, 4), base:narrow(1, 1, 4))
    same(db:narrow(1, 999998, 6), base:narrow(1, 999998, 6))
  end)

  it("arange, linspace and eye", function()
    same(ember.arange(10, {device = DEV}), ember.arange(10))
    same(ember.arange(1, 2, 0.1, {device = DEV}), ember.arange(1, 2, 0.1))
    same(ember.arange(5, -7, -3, {device = DEV, dtype = "int64"}), ember.arange(5, -7, -3, {dtype = "int64"}))
    same(ember.arange(0, 1, 0.125, {device = DEV, dtype = "float64"}), ember.arange(0, 1, 0.125, {dtype = "float64"}))
    same(ember.arange(100000, {device = DEV, dtype = "int32"}), ember.arange(100000, {dtype = "int32"}))
    close(ember.linspace(-1, 1, 17, {device = DEV}), ember.linspace(-1, 1, 17))
    same(ember.eye(3, 5, {device = DEV}), ember.eye(3, 5))
    same(ember.arange(0, {device = DEV}), ember.arange(0))
  end)
end)

describe("cast", function()
  -- values every destination can hold exactly (after truncation toward 0)
  local unsigned = {0, 0.25, 1, 2.5, 3.75, 100.5, 127, 200.25}
  local signed = {-100.5, -3.75, -1, -0.25, 0, 0.5, 1, 2.5, 100.75}
  local function source(src, dst)
    if src == "bool" then return ember.tensor({true, false, true, true, false}) end
    local neg = src ~= "uint8" and dst ~= "uint8" and dst ~= "bool"
    local vals = {}
    for _, v in ipairs(neg and signed or unsigned) do
      if v < 128 or (src ~= "int8" and dst ~= "int8") then     -- int8 holds up to 127
        vals[#vals + 1] = (src:match("^float") or src == "bfloat16") and v or math.floor(v)
      end
    end
    return ember.tensor(vals, {dtype = src})
  end

  for _, src in ipairs(g.dtypes) do
    it("from " .. src .. " to every dtype, contiguous and transposed", function()
      for _, dst in ipairs(g.dtypes) do
        local x = source(src, dst)
        same(dev(x):to(dst), x:to(dst), {what = src .. " -> " .. dst})
        -- strided, with a stride-0 dim
        local function strided(t) return t:reshape(1, -1):expand(3, -1):t():to(dst):contiguous() end
        same(strided(dev(x)), strided(x), {what = src .. " -> " .. dst .. " (strided)"})
      end
    end)
  end

  it("random floats round the same way to every float dtype", function()
    ember.manual_seed(1)
    local x = floats(1000, {dtype = "float64"}) * 100
    for _, dst in ipairs({"float32", "float16", "bfloat16"}) do
      close(dev(x):to(dst), x:to(dst), {what = "float64 -> " .. dst})
      close(dev(x):to("float32"):to(dst), x:to("float32"):to(dst), {what = "float32 -> " .. dst})
      close(dev(x):to(dst):to("float64"), x:to(dst):to("float64"), {what = dst .. " -> float64"})
    end
  end)

  it("special values: NaN and infinities to floats and bool", function()
    local x = ember.tensor({nan, inf, -inf, -0.0, 0, 1e30}, {dtype = "float64"})
    for _, dst in ipairs({"float32", "float16", "bfloat16", "bool"}) do
      same(dev(x):to(dst), x:to(dst), {what = dst})
    end
  end)

  it("copy_ into a strided view of another dtype, and across devices", function()
    ember.manual_seed(2)
    local src = floats(5, 4, {dtype = "float64"})
    local dst = ember.zeros(4, 10, {dtype = "float32"})
    local dd = dev(dst)
    dd:slice(2, 1, 10, 2):t():copy_(dev(src))
    dst:slice(2, 1, 10, 2):t():copy_(src)
    same(dd, dst)
    -- a CPU source into a device view, and a device source into a CPU tensor
    local d2 = dev(ember.zeros(3, 4, {dtype = "int32"}))
    d2:t():copy_(ember.arange(12):reshape(4, 3))
    same(d2, ember.arange(12):reshape(4, 3):t():to("int32"))
    local back = ember.zeros(3, 4, {dtype = "float64"})
    back:copy_(d2)
    -- copy_ keeps the destination's device: back stays on the CPU
    assert.are.equal("cpu", back.device)
    same(back, ember.arange(12):reshape(4, 3):t():to("float64"), {any_device = true})
  end)

  it("broadcast copy_ (expand in the copy)", function()
    local d = dev(ember.zeros(3, 4))
    d:copy_(dev(ember.tensor({1, 2, 3, 4})))
    same(d, ember.tensor({1, 2, 3, 4}):expand(3, 4):to("float32"))
  end)
end)

describe("unary", function()
  -- op, input maker (CPU tensor of dtype d)
  local R = function(d) return floats(7, 33, {dtype = d}) * 2 end
  local P = function(d) return ember.rand(7, 33, {dtype = d}) * 4 + 0.01 end
  local L = function(d) return ember.rand(7, 33, {dtype = d}) * 3 - 0.9 end   -- > -1 (log1p)
  local cases = {
    {"neg", R}, {"abs", R}, {"sign", R}, {"exp", R}, {"log", P}, {"log1p", L}, {"expm1", R},
    {"sqrt", P}, {"rsqrt", P}, {"sin", R}, {"cos", R}, {"tanh", R}, {"sigmoid", R}, {"relu", R},
    {"gelu", R}, {"silu", R}, {"floor", R}, {"ceil", R}, {"round", R}, {"reciprocal", P},
    {"square", R}, {"logical_not", R},
  }
  for _, d in ipairs(g.float_dtypes) do
    for _, c in ipairs(cases) do
      local name, make = c[1], c[2]
      it(name .. " " .. d .. ": contiguous, transposed, in place", function()
        ember.manual_seed(10)
        local x = make(d)
        agree(function(t) return t[name](t) end, {x})
        agree(function(t) return ember[name](t:t()) end, {x})
        if name ~= "logical_not" then
          agree(function(t) local v = t:t():slice(1, 2, 33, 3) v[name .. "_"](v) return t end, {x})
        end
      end)
    end
  end

  it("gelu with approximate = 'tanh'", function()
    ember.manual_seed(11)
    for _, d in ipairs(g.float_dtypes) do
      agree(function(t) return t:gelu({approximate = "tanh"}) end, {floats(500, {dtype = d}) * 3})
    end
  end)

  it("round is half to even; special values through every float op", function()
    agree(function(t) return t:round() end, {ember.tensor({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, 2.51})})
    local x = ember.tensor({nan, inf, -inf, 0, -0.0, 1e-30, -1e-30, 88.7, -88.7, 1e10, -1e10})
    for _, d in ipairs(g.float_dtypes) do
      for _, c in ipairs(cases) do
        agree(function(t) return t[c[1]](t) end, {x:to(d)}, {what = c[1] .. " " .. d})
      end
    end
  end)

  it("integer inputs: exact integer ops, float ops promote to float32", function()
    ember.manual_seed(12)
    for _, d in ipairs({"int64", "int32"}) do
      local x = ints(-50, 50, {6, 7}, d)
      for _, name in ipairs({"neg", "abs", "sign", "square", "floor", "ceil", "round", "logical_not"}) do
        agree(function(t) return t[name](t) end, {x}, {what = name .. " " .. d})
      end
      agree(function(t) return t:exp() end, {x:to("float64"):div(10):to(d)}, {what = "exp " .. d})
      agree(function(t) return t:sqrt() end, {x:abs()}, {what = "sqrt " .. d})
    end
    local u = ints(0, 256, {100}, "uint8")
    agree(function(t) return t:abs(), t:sign(), t:sigmoid(), t:logical_not() end, {u})
    agree(function(t) return t:logical_not(), t:sqrt(), t:sigmoid() end, {ember.tensor({true, false, true})})
  end)

  it("float16 and bfloat16 inputs compute through float32", function()
    ember.manual_seed(13)
    for _, d in ipairs({"float16", "bfloat16"}) do
      local x = floats(200):to(d)
      agree(function(t) return t:exp(), t:neg(), t:relu(), t:sigmoid(), t:abs() end, {x}, {what = d})
    end
  end)

  it("0-d and empty tensors", function()
    agree(function(t) return t:exp(), t:neg(), t:sqrt() end, {ember.tensor(2.25)})
    agree(function(t) return t:exp(), t:neg(), t:logical_not() end, {ember.empty(0, 5)})
    agree(function(t) return t:abs() end, {ember.empty(3, 0, {dtype = "int64"})})
  end)

  it("a large tensor and a misaligned view of it", function()
    ember.manual_seed(14)
    local x = floats(300007)
    agree(function(t) return t:exp():sum(), t:narrow(1, 2, 300001):tanh() end, {x}, {rtol = 1e-5, atol = 1e-5})
  end)
end)

describe("binary", function()
  local arith = {"add", "sub", "mul", "div", "maximum", "minimum"}
  local cmp = {"eq", "ne", "lt", "le", "gt", "ge"}

  it("arithmetic and comparisons in float32 and float64 with broadcasting", function()
    ember.manual_seed(20)
    for _, d in ipairs(g.float_dtypes) do
      local a, b = floats(3, 1, 5, {dtype = d}), floats(4, 1, {dtype = d})
      for _, op in ipairs(arith) do agree(function(x, y) return x[op](x, y) end, {a, b}, {what = op .. " " .. d}) end
      for _, op in ipairs(cmp) do agree(function(x, y) return x[op](x, y) end, {a, b}, {what = op .. " " .. d}) end
      -- equal elements for the comparisons
      local c1, c2 = ints(0, 3, {50}):to(d), ints(0, 3, {50}):to(d)
      for _, op in ipairs(cmp) do agree(function(x, y) return x[op](x, y) end, {c1, c2}, {what = op .. " ties"}) end
      agree(function(x, y) return x % y, x ^ 2, x:abs() ^ y end, {a, b:abs() + 0.5}, {what = "% ^ " .. d})
      agree(function(x, y) return x:pow(y) end, {a:abs() + 0.1, b}, {what = "pow " .. d})
      agree(function(x, y) return x:logical_and(y), x:logical_or(y) end, {a:gt(0):to(d), b:lt(0.5):to(d)})
    end
  end)

  it("integer arithmetic is exact: remainder and division signs, comparisons, promotion", function()
    ember.manual_seed(21)
    for _, d in ipairs({"int64", "int32"}) do
      local a = ints(-1000, 1000, {8, 9}, d)
      local b = ints(1, 30, {9}, d) * ints(0, 2, {9}, d):mul(2):sub(1)   -- non-zero, both signs
      agree(function(x, y)
        return x + y, x - y, x * y, x % y, x:remainder(y), x:maximum(y), x:minimum(y), x:div(y)
      end, {a, b}, {what = d})
      for _, op in ipairs(cmp) do agree(function(x, y) return x[op](x, y) end, {a, a:t():t()}, {what = op}) end
      agree(function(x) return x % 7, x % -7, x * 3, x - 5, x ^ 2, x:add(x, {alpha = 3}) end, {a}, {what = d})
      agree(function(x) return x * 2.5, x / 4, x + 0.5 end, {a}, {what = d .. " with float numbers"})
    end
    local u = ints(0, 256, {64}, "uint8")
    agree(function(x, y) return x + y, x * y, x:maximum(y), x:lt(y), x - y end, {u, ints(0, 256, {64}, "uint8")})
    local bl = ember.randint(0, 2, {32}):to("bool")
    agree(function(x, y) return x:logical_and(y), x:logical_or(y), x:eq(y), x + y, x * y end, {bl, bl:logical_not()})
  end)

  it("type promotion between dtypes and with numbers", function()
    ember.manual_seed(22)
    local vals = {
      float32 = floats(6), float64 = floats(6, {dtype = "float64"}), int64 = ints(-9, 9, {6}),
      int32 = ints(-9, 9, {6}, "int32"), uint8 = ints(0, 9, {6}, "uint8"),
      bool = ember.randint(0, 2, {6}):to("bool"),
    }
    for da, a in pairs(vals) do
      for db, b in pairs(vals) do
        agree(function(x, y) return x + y, x * y, x:lt(y), x:maximum(y) end, {a, b}, {what = da .. " with " .. db})
      end
      agree(function(x) return x + 1, x * 1.5, 2 - x, x:eq(1) end, {a}, {what = da .. " with numbers"})
      agree(function(x, s) return x + s end, {a, ember.tensor(2.5)}, {what = da .. " with a 0-d float tensor"})
      agree(function(x, s) return x * s end, {a, ember.tensor(3)}, {what = da .. " with a 0-d int tensor"})
    end
  end)

  it("NaN and infinities", function()
    local a = ember.tensor({nan, 1, nan, inf, -inf, 0, -0.0, 2})
    local b = ember.tensor({1, nan, nan, inf, inf, 0, 0, -inf})
    for _, d in ipairs(g.float_dtypes) do
      agree(function(x, y)
        return x + y, x - y, x * y, x / y, x:maximum(y), x:minimum(y), x:eq(y), x:ne(y), x:lt(y), x:ge(y), x % y
      end, {a:to(d), b:to(d)}, {what = d})
    end
  end)

  it("non-contiguous, expanded and misaligned operands", function()
    ember.manual_seed(23)
    local a, b = floats(40, 30), floats(30, 40)
    agree(function(x, y) return x + y:t(), x:t() * y, x:slice(1, 1, 38, 3) - y:t():slice(1, 2, 39, 3) end, {a, b})
    agree(function(x, y) return x:narrow(2, 1, 1):expand(40, 30) * y:t() end, {a, b})
    local big = floats(100003)
    agree(function(x) return x:narrow(1, 2, 100001) + x:narrow(1, 3, 100001) end, {big})
    agree(function(x) return x:narrow(1, 2, 100000):view(1000, 100):t() / 3 end, {big})
  end)

  it("in place: contiguous, into views, broadcast operand", function()
    ember.manual_seed(24)
    local a, b = floats(6, 8), floats(8)
    agree(function(x, y) x:add_(y) return x end, {a, b})
    agree(function(x, y) x:t():mul_(y:narrow(1, 1, 6)) return x end, {a, b})
    agree(function(x, y) x:slice(2, 1, 8, 2):sub_(y:slice(1, 1, 8, 2), {alpha = 2}) return x end, {a, b})
    agree(function(x, y) x:div_(y:abs() + 1):maximum_(y) return x end, {a, b})
    agree(function(x) x:pow_(2):remainder_(1.5) return x end, {a})
    agree(function(x, y) x:lt_(y) return x end, {a, b})
    local i = ints(-20, 20, {5, 5})
    agree(function(x) x:mul_(3):add_(x:t()) return x end, {i})
    agree(function(x) x:t():add_(1) return x end, {i})
  end)

  it("0-d and empty operands", function()
    agree(function(x, y) return x + y, x * y, x:lt(y) end, {ember.tensor(1.5), ember.tensor(-2.0)})
    agree(function(x, y) return x + y end, {ember.tensor(1.5), floats(3, 2)})
    agree(function(x, y) return x + y, x:eq(y) end, {ember.empty(0, 3), ember.empty(0, 3)})
    agree(function(x, y) return x * y end, {ember.empty(0, 1), ember.empty(1, 4)})
    agree(function(x, y) return x - y end, {ember.empty(2, 0, {dtype = "int64"}), ember.tensor(1)})
  end)

  it("a 0-d CPU tensor combines with a device tensor", function()
    local x = dev(ember.tensor({1, 2, 3}))
    local r = x + ember.tensor(2.0)
    assert.are.equal(g.devname, r.device)
    same(r, ember.tensor({3.0, 4.0, 5.0}), {any_device = true})
  end)
end)

describe("where, masked_fill, clamp", function()
  it("where with broadcasting, every value dtype", function()
    ember.manual_seed(30)
    local c = ember.rand(4, 1, 6):gt(0.5)
    for _, d in ipairs({"float32", "float64", "int64", "int32", "uint8", "bool"}) do
      local a, b = ints(0, 100, {5, 6}):to(d), ints(0, 100, {4, 5, 1}):to(d)
      agree(function(cc, x, y) return ember.where(cc, x, y), x:where(cc, y) end, {c, a, b}, {what = d})
    end
    agree(function(cc, x) return ember.where(cc, x, 0.5) end, {c, floats(6)})
    agree(function(cc, x, y) return ember.where(cc:t(), x:t(), y) end, {ember.rand(5, 3):gt(0.3), floats(5, 3), floats(1)})
  end)

  it("masked_fill and masked_fill_ with a broadcast mask, NaN and a 0-d tensor value", function()
    ember.manual_seed(31)
    local x, m = floats(4, 7), ember.rand(7):lt(0.4)
    agree(function(t, mm) return t:masked_fill(mm, -1), t:masked_fill(mm, nan), t:masked_fill(mm, ember.tensor(2.5)) end, {x, m})
    agree(function(t, mm) t:t():masked_fill_(mm:view(7, 1), 9) return t end, {x, m})
    agree(function(t, mm) return t:masked_fill(mm, 3) end, {ints(0, 10, {4, 7}), m})
  end)

  it("clamp with numbers, one bound, tensor bounds, integers, NaN, in place", function()
    ember.manual_seed(32)
    local x = floats(9, 11) * 2
    for _, d in ipairs(g.float_dtypes) do
      local t = x:to(d)
      agree(function(a) return a:clamp(-0.5, 0.7), a:clamp_min(0.1), a:clamp_max(-0.2), a:clamp(nil, 1) end, {t})
      agree(function(a, lo, hi) return a:clamp(lo, hi) end, {t, floats(11, {dtype = d}) - 1, floats(9, 1, {dtype = d}) + 1})
      agree(function(a) a:t():clamp_(-1, 1) return a end, {t})
    end
    agree(function(a) return a:clamp(nan, 1), a:clamp(0, nan) end, {ember.tensor({-1, 0.5, 3, nan})})
    agree(function(a) return a:clamp(-3, 4), a:clamp(1.5, 2.5), a:clamp_min(0) end, {ints(-10, 10, {30})})
    agree(function(a) return a:clamp(-1, 1) end, {ember.tensor(5.0)})
    agree(function(a) return a:clamp(-1, 1) end, {ember.empty(0)})
  end)
end)

describe("out= on the device", function()
  it("writes a result into an out on its device and refuses one on another", function()
    local a = ember.tensor({1.0, 2.0, 3.0}, {device = DEV})
    local o = ember.zeros(3, {device = DEV})
    assert.is_true(rawequal(o, ember.mul(a, 2, {out = o})))
    assert.are.same({2, 4, 6}, o:cpu():tolist())
    assert.is_true(rawequal(o, ember.sum(a:view(3, 1), 2, {out = o})))
    assert.are.same({1, 2, 3}, o:cpu():tolist())
    if g.on_cpu then return end   -- one device only: nothing to mix
    local ok, e = pcall(function() return ember.mul(a, 2, {out = ember.zeros(3)}) end)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("mul: argument 3: out is on cpu but the result is on " .. g.devname, 1, true),
                     tostring(e))
  end)
end)
