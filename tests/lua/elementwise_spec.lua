-- elementwise_spec.lua — unary and binary elementwise ops, clamp, where and
-- masked_fill: values against Lua's math library (or hand-worked numbers),
-- dtype promotion, broadcasting, non-contiguous inputs, in-place ops and
-- error messages. PyTorch-generated numbers are marked as such.
local ember = require "ember"

local errmsg = require("helpers").err

-- flattens a nested table (tolist output) row-major
local function flat(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t; return out end
  for _, v in ipairs(t) do flat(v, out) end
  return out
end

local function isnan(x) return x ~= x end

-- elementwise comparison with a relative+absolute tolerance; NaN matches NaN
local function near(expected, got, tol)
  tol = tol or 1e-6
  local e, g = flat(expected), flat(got)
  assert.are.equal(#e, #g, "element count")
  for i = 1, #e do
    local a, b = e[i], g[i]
    if isnan(a) then
      assert.is_true(isnan(b), ("element %d: expected nan, got %s"):format(i, tostring(b)))
    elseif a == math.huge or a == -math.huge then
      assert.are.equal(a, b, ("element %d"):format(i))
    else
      assert.is_true(math.abs(a - b) <= tol * (1 + math.abs(a)),
        ("element %d: expected %.10g, got %.10g"):format(i, a, b))
    end
  end
end

local function map(xs, f)
  local r = {}
  for i, x in ipairs(xs) do r[i] = f(x) end
  return r
end

local function map2(xs, ys, f)
  local r = {}
  for i = 1, #xs do r[i] = f(xs[i], ys[i]) end
  return r
end

-- erf by its Taylor series (accurate to ~1e-12 for |x| <= 3)
local function erf(x)
  local sum, term, n = 0, x, 0
  repeat
    local add = term / (2 * n + 1)
    sum = sum + add
    n = n + 1
    term = -term * x * x / n
  until math.abs(add) < 1e-17 and n > 5
  return 2 / math.sqrt(math.pi) * sum
end

-- values exactly representable in float32
local xs = {-3, -1.25, -0.5, 0, 0.25, 0.5, 1, 2.75}
local pos = {0.125, 0.5, 1, 2.5, 10}

describe("unary float ops", function()
  local cases = {
    {"exp", math.exp, xs}, {"log", math.log, pos},
    {"log1p", function(x) return math.log(1 + x) end, pos},
    {"expm1", function(x) return math.exp(x) - 1 end, xs},
    {"sqrt", math.sqrt, pos}, {"rsqrt", function(x) return 1 / math.sqrt(x) end, pos},
    {"sin", math.sin, xs}, {"cos", math.cos, xs},
    {"tanh", function(x) return (math.exp(2 * x) - 1) / (math.exp(2 * x) + 1) end, xs},
    {"sigmoid", function(x) return 1 / (1 + math.exp(-x)) end, xs},
    {"silu", function(x) return x / (1 + math.exp(-x)) end, xs},
    {"gelu", function(x) return 0.5 * x * (1 + erf(x / math.sqrt(2))) end, xs},
    {"reciprocal", function(x) return 1 / x end, pos},
    {"square", function(x) return x * x end, xs},
    {"neg", function(x) return -x end, xs},
    {"abs", math.abs, xs},
    {"relu", function(x) return x < 0 and 0 or x end, xs},
    {"sign", function(x) return x > 0 and 1 or x < 0 and -1 or 0 end, xs},
    {"floor", math.floor, xs}, {"ceil", math.ceil, xs},
  }
  for _, c in ipairs(cases) do
    local name, f, input = c[1], c[2], c[3]
    it(name .. " matches Lua math in float32 and float64 (method and function)", function()
      local t = ember.tensor(input)
      local r = t[name](t)
      assert.are.equal("float32", r.dtype)
      near(map(input, f), r:tolist(), 2e-6)
      near(map(input, f), ember[name](t):tolist(), 2e-6)
      local d = ember.tensor(input, {dtype = "float64"})
      local rd = d[name](d)
      assert.are.equal("float64", rd.dtype)
      near(map(input, f), rd:tolist(), 1e-12)
    end)
  end

  it("gelu matches PyTorch's exact (erf) form", function()
    -- torch.nn.functional.gelu(torch.tensor([...], dtype=torch.float64))
    local t = ember.tensor({-3, -1, -0.5, 0, 0.5, 1, 3}, {dtype = "float64"})
    near({-0.00404969409489031, -0.15865525393145702, -0.15426876936299344, 0.0,
          0.34573123063700656, 0.841344746068543, 2.99595030590511}, t:gelu():tolist(), 1e-14)
  end)

  it("gelu with approximate = 'tanh'", function()
    local input = {-2, -0.5, 0, 1, 3}
    local k = math.sqrt(2 / math.pi)
    local expect = map(input, function(x)
      local u = k * (x + 0.044715 * x ^ 3)
      return 0.5 * x * (1 + (math.exp(2 * u) - 1) / (math.exp(2 * u) + 1))
    end)
    near(expect, ember.tensor(input, {dtype = "float64"}):gelu({approximate = "tanh"}):tolist(), 1e-12)
    assert.matches("approximate", errmsg(function() ember.tensor{1.0}:gelu({approximate = "x"}) end))
  end)

  it("round is half to even", function()
    local t = ember.tensor{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, 2.51}
    assert.are.same({-2, -2, -0, 0, 2, 2, 0, 3}, t:round():tolist())
  end)

  it("handles NaN, -0 and infinities like PyTorch", function()
    local nan = 0 / 0
    local t = ember.tensor({nan, -0.0, -2}, {dtype = "float64"})
    local r = t:relu():tolist()
    assert.is_true(isnan(r[1]))
    assert.are.equal(0, r[3])
    assert.are.same({0, 0, -1}, t:sign():tolist())   -- sign(nan) is 0 in PyTorch
    near({math.huge, -math.huge}, ember.tensor{0, -0.0}:reciprocal():tolist())
    assert.is_true(isnan(ember.tensor{-1.0}:log():tolist()[1]))
  end)

  it("integer inputs of float ops promote to float32", function()
    local t = ember.tensor{1, 2, 3}
    local r = t:exp()
    assert.are.equal("float32", r.dtype)
    near({math.exp(1), math.exp(2), math.exp(3)}, r:tolist())
    assert.are.equal("float32", ember.tensor({1, 4}, {dtype = "uint8"}):sqrt().dtype)
    assert.are.equal("float32", ember.tensor{true, false}:sigmoid().dtype)
  end)

  it("abs/neg/sign/relu/floor/ceil/round/square keep integer dtypes", function()
    local t = ember.tensor{-3, 0, 5}
    for _, name in ipairs{"abs", "neg", "sign", "relu", "floor", "ceil", "round", "square"} do
      assert.are.equal("int64", t[name](t).dtype, name)
    end
    assert.are.same({3, 0, 5}, t:abs():tolist())
    assert.are.same({3, 0, -5}, t:neg():tolist())
    assert.are.same({-1, 0, 1}, t:sign():tolist())
    assert.are.same({0, 0, 5}, t:relu():tolist())
    assert.are.same({9, 0, 25}, t:square():tolist())
    assert.are.same({-3, 0, 5}, t:floor():tolist())
    local i32 = ember.tensor({-7, 7}, {dtype = "int32"})
    assert.are.same({7, 7}, i32:abs():tolist())
    assert.are.equal("int32", i32:abs().dtype)
  end)

  it("integer ops wrap around", function()
    local u = ember.tensor({1, 0, 200}, {dtype = "uint8"})
    assert.are.same({255, 0, 56}, u:neg():tolist())             -- -1 mod 256, -200 mod 256
    assert.are.same({1, 0, 64}, u:square():tolist())            -- 40000 mod 256
    local i = ember.tensor{math.mininteger, 3}
    assert.are.same({math.mininteger, -3}, i:neg():tolist())    -- two's complement
    local i32 = ember.tensor({2147483647}, {dtype = "int32"})
    assert.are.same({1}, i32:square():tolist())                 -- (2^31-1)^2 mod 2^32
  end)

  it("bool tensors: logical_not, sign; neg and abs refuse", function()
    local b = ember.tensor{true, false}
    assert.are.same({false, true}, b:logical_not():tolist())
    assert.are.same({true, false}, b:sign():tolist())
    assert.are.equal("int64", b:square().dtype)
    assert.matches("neg: .*bool", errmsg(function() return b:neg() end))
    assert.matches("neg: .*bool", errmsg(function() return -b end))
    assert.matches("abs: .*bool", errmsg(function() return b:abs() end))
  end)

  it("logical_not gives bool for every dtype", function()
    assert.are.same({false, true, false}, ember.tensor{1.5, 0, -2}:logical_not():tolist())
    assert.are.same({true, false}, ember.tensor{0, 7}:logical_not():tolist())
    assert.are.equal("bool", ember.tensor{0.0}:logical_not().dtype)
  end)

  it("float16 and bfloat16 compute through float32 and keep their dtype", function()
    local h = ember.tensor({0.5, 1, 2}, {dtype = "float16"})
    local r = h:exp()
    assert.are.equal("float16", r.dtype)
    near(map({0.5, 1, 2}, math.exp), r:tolist(), 1e-3)
    local b = ember.tensor({1, 4}, {dtype = "bfloat16"})
    assert.are.equal("bfloat16", b:sqrt().dtype)
    assert.are.same({1, 2}, b:sqrt():tolist())
    assert.are.same({false, true, true}, h:gt(0.75):tolist())
  end)

  it("works on non-contiguous and 0-d and empty tensors", function()
    local t = ember.tensor{{1, 2, 3}, {4, 5, 6}}:float()
    local tt = t:t()                      -- [3,2], strided
    near({{1, 4}, {2, 5}, {3, 6}}, tt:neg():neg():tolist())
    near(map({1, 4, 2, 5, 3, 6}, math.exp), tt:exp():tolist())
    local s = ember.tensor(2.0):sqrt()
    assert.are.same({}, s.shape)
    near({math.sqrt(2)}, {s:item()})
    local e = ember.zeros(0, 3):exp()
    assert.are.same({0, 3}, e.shape)
  end)

  it("works on large tensors (threaded path)", function()
    local n = 200000
    local t = ember.arange(n):float()
    local r = t:neg()
    local l = r:tolist()
    assert.are.equal(n, #l)
    assert.are.equal(0, l[1])
    assert.are.equal(-(n - 1), l[n])
    assert.are.equal(-12345, l[12346])
  end)
end)

describe("in-place unary ops", function()
  it("modify self and return it", function()
    local t = ember.tensor{1.0, 4.0}
    local r = t:sqrt_()
    assert.are.equal(t, r)
    assert.are.same({1, 2}, t:tolist())
    t:neg_()
    assert.are.same({-1, -2}, t:tolist())
    t:abs_():exp_():log_()
    near({1, 2}, t:tolist())
  end)

  it("write through a view into the base tensor", function()
    local base = ember.tensor{{1, -2, 3}, {-4, 5, -6}}:float()
    local col = base:select(2, 2)          -- the second column: strided
    col:neg_()
    assert.are.same({{1, 2, 3}, {-4, -5, -6}}, base:tolist())
    base:t():relu_()
    assert.are.same({{1, 2, 3}, {0, 0, 0}}, base:tolist())
  end)

  it("refuse a float result into an integer tensor", function()
    local t = ember.tensor{1, 2}
    assert.matches("exp_: result type float32 can't be cast to the desired output type int64",
      errmsg(function() t:exp_() end))
    assert.are.same({1, 2}, t:tolist())
    t:neg_()
    assert.are.same({-1, -2}, t:tolist())
  end)

  it("logical_not_ keeps the tensor's dtype", function()
    local t = ember.tensor{1.5, 0}
    t:logical_not_()
    assert.are.equal("float32", t.dtype)
    assert.are.same({0, 1}, t:tolist())
  end)

  it("refuse to write to an expanded tensor", function()
    local e = ember.tensor{1.0}:expand(3)
    assert.matches("neg_: .*same memory", errmsg(function() e:neg_() end))
  end)
end)

describe("binary arithmetic", function()
  local a_vals = {-3, -1.25, 0, 0.5, 2.75, 7}
  local b_vals = {2, -0.5, 3, 0.25, -1.5, 4}
  local ops = {
    {"add", function(x, y) return x + y end},
    {"sub", function(x, y) return x - y end},
    {"mul", function(x, y) return x * y end},
    {"div", function(x, y) return x / y end},
    {"remainder", function(x, y) return x - y * math.floor(x / y) end},
    {"maximum", math.max}, {"minimum", math.min},
  }
  for _, c in ipairs(ops) do
    local name, f = c[1], c[2]
    it(name .. " matches Lua arithmetic (float32, float64, scalar on either side)", function()
      local a, b = ember.tensor(a_vals), ember.tensor(b_vals)
      near(map2(a_vals, b_vals, f), a[name](a, b):tolist())
      near(map2(a_vals, b_vals, f), ember[name](a, b):tolist())
      local ad, bd = a:double(), b:double()
      local r = ad[name](ad, bd)
      assert.are.equal("float64", r.dtype)
      near(map2(a_vals, b_vals, f), r:tolist(), 1e-14)
      -- tensor op number and number op tensor
      near(map(a_vals, function(x) return f(x, 1.5) end), ember[name](a, 1.5):tolist())
      near(map(b_vals, function(y) return f(1.5, y) end), ember[name](1.5, b):tolist())
      near(map(a_vals, function(x) return f(x, 1.5) end), ember[name](ad, 1.5):tolist(), 1e-14)
      near(map(b_vals, function(y) return f(1.5, y) end), ember[name](1.5, bd):tolist(), 1e-14)
    end)
  end

  it("pow for floats and integers", function()
    local a = ember.tensor{0.5, 2, 3}
    near({0.25, 4, 9}, a:pow(2):tolist())
    near({math.sqrt(0.5), math.sqrt(2), math.sqrt(3)}, a:pow(0.5):tolist())
    near({0.5 ^ 3, 8, 27}, a:pow(3):tolist())
    near({2 ^ 0.5, 4, 8}, ember.pow(2, a):tolist())
    near({0.5, 4, 27}, a:pow(ember.tensor{1, 2, 3}):tolist())
    local i = ember.tensor{2, -3, 5}
    assert.are.equal("int64", i:pow(2).dtype)
    assert.are.same({4, 9, 25}, i:pow(2):tolist())
    assert.are.same({8, -27, 125}, (i ^ 3):tolist())
    assert.are.equal("float32", i:pow(2.0).dtype)                -- a float number promotes
    -- negative integer exponents as tensors: 1/x truncated (PyTorch)
    assert.are.same({0, 1, 1, -1, 1}, ember.tensor{2, 3, 1, -1, -1}:pow(ember.tensor{-1, 0, -5, -3, -2}):tolist())
    assert.matches("pow: integers to negative integer powers",
      errmsg(function() return i:pow(-1) end))
    -- the exponents with loops of their own compute PyTorch's products (x*x*x, 1/(x*x),
    -- 1/sqrt(x)), checked bit for bit in float64 against the same products in Lua;
    -- x^0 is 1 even for NaN and x^1 keeps NaN and -0.0
    local xs = {0.3, -1.7, 2.5, 1e-3, 7}
    local d = ember.tensor(xs, {dtype = "float64"})
    local want = {[0] = function() return 1 end, [1] = function(x) return x end,
                  [2] = function(x) return x * x end, [3] = function(x) return x * x * x end,
                  [-1] = function(x) return 1 / x end, [-2] = function(x) return 1 / (x * x) end,
                  [0.5] = math.sqrt, [-0.5] = function(x) return 1 / math.sqrt(x) end}
    for e, f in pairs(want) do
      local got = d:pow(e):tolist()
      for k, x in ipairs(xs) do
        local w = f(x)
        assert(got[k] == w or (w ~= w and got[k] ~= got[k]), string.format("%s ^ %s: %s, want %s", x, e, got[k], w))
      end
    end
    assert.are.same({1, 1}, ember.tensor({0 / 0, 0}):pow(0):tolist())
    local nan1 = ember.tensor({0 / 0, -0.0}):pow(1):tolist()
    assert(nan1[1] ~= nan1[1] and 1 / nan1[2] == -math.huge, "x^1 keeps NaN and -0.0")
    -- wrap-around: 3^50 mod 2^64 (PyTorch: 6048575297968530377)
    assert.are.same({6048575297968530377}, ember.tensor{3}:pow(50):tolist())
  end)

  it("true division: integers divide to float32", function()
    local r = ember.tensor{7, -7, 1}:div(ember.tensor{2, 2, 0})
    assert.are.equal("float32", r.dtype)
    assert.are.same({3.5, -3.5, math.huge}, r:tolist())
    assert.are.equal("float32", (ember.tensor{1} / 2).dtype)
    assert.are.same({0.5}, (ember.tensor{1} / 2):tolist())
    local b = ember.tensor{true, false}
    local q = b / b
    assert.are.equal("float32", q.dtype)
    assert.are.equal(1, q:tolist()[1])
    assert.is_true(isnan(q:tolist()[2]))
  end)

  it("remainder takes the sign of the divisor", function()
    assert.are.same({2, 1, -1, -2}, ember.tensor{-7, 7, -7, 7}:remainder(ember.tensor{3, 3, -3, -3}):tolist())
    assert.are.same({-1, -2}, ember.tensor{-7.0, 7.0}:remainder(-3):tolist())
    assert.are.same({0.5, 1.5}, ember.tensor{-3.5, 3.5}:remainder(2):tolist())
    assert.are.same({2, 1}, (ember.tensor{-7, 7} % 3):tolist())
    assert.is_true(isnan(ember.tensor{5.0}:remainder(0):tolist()[1]))
    assert.are.same({0}, ember.tensor{math.mininteger}:remainder(-1):tolist())   -- no trap
    local u = ember.tensor({250, 7}, {dtype = "uint8"})
    assert.are.same({2, 1}, u:remainder(ember.tensor({8, 3}, {dtype = "uint8"})):tolist())
  end)

  it("a // b is floor_divide, as Python's // on PyTorch tensors", function()
    -- PyTorch 2.15: tensor([7, -7]) // 2 -> [3, -4]; 7.5 // tensor([2.]) -> [3.];
    -- tensor([7., -7.]) // tensor([2., 2.]) -> [3., -4.]
    assert.are.same({3, -4}, (ember.tensor{7, -7} // 2):tolist())
    assert.are.equal("int64", (ember.tensor{7, -7} // 2).dtype)
    assert.are.same({3}, (7.5 // ember.tensor{2.0}):tolist())
    assert.are.same({3, -4}, (ember.tensor{7.0, -7.0} // ember.tensor{2.0, 2.0}):tolist())
    assert.matches("integer division by zero", errmsg(function() return ember.tensor{5} // 0 end))
  end)

  it("integer remainder by zero is an error", function()
    assert.matches("remainder: integer division by zero",
      errmsg(function() return ember.tensor{5, 6}:remainder(ember.tensor{1, 0}) end))
    assert.matches("remainder: integer division by zero",
      errmsg(function() return ember.tensor({5}, {dtype = "int32"}) % 0 end))
    assert.matches("remainder_?: integer division by zero",
      errmsg(function() ember.tensor{5}:remainder_(0) end))
  end)

  it("maximum and minimum propagate NaN", function()
    local nan = 0 / 0
    local a, b = ember.tensor{1, nan, nan, 3}, ember.tensor{nan, 0, nan, 2}
    local mx, mn = ember.maximum(a, b):tolist(), ember.minimum(a, b):tolist()
    for i = 1, 3 do
      assert.is_true(isnan(mx[i]), "maximum " .. i)
      assert.is_true(isnan(mn[i]), "minimum " .. i)
    end
    assert.are.equal(3, mx[4])
    assert.are.equal(2, mn[4])
  end)

  it("integer arithmetic wraps around", function()
    local big = ember.tensor{math.maxinteger}
    assert.are.same({math.mininteger}, (big + 1):tolist())
    assert.are.same({-2}, (big * 2):tolist())
    local u = ember.tensor({1, 2}, {dtype = "uint8"})
    assert.are.same({255, 0}, (u - 2):tolist())
    local i32 = ember.tensor({2147483647}, {dtype = "int32"})
    assert.are.same({-2147483648}, (i32 + 1):tolist())
  end)

  it("a number that does not fit the integer dtype is refused, not wrapped", function()
    -- the number is cast to the tensor's dtype (it is a weak scalar): 1000 would become 232
    local u = ember.tensor({1, 2}, {dtype = "uint8"})
    assert.matches("add: value 1000 cannot be converted to uint8 without overflow", errmsg(function() return u + 1000 end))
    local i32 = ember.tensor({1}, {dtype = "int32"})
    assert.matches("add: value 4294967296 cannot be converted to int32 without overflow",
      errmsg(function() return i32 + 4294967296 end))
    assert.matches("mul: value 2147483648", errmsg(function() return i32 * (1 << 31) end))
    assert.matches("add_: value 1099511627776 cannot be converted to int32",
      errmsg(function() return i32:clone():add_(1 << 40) end))
    assert.matches("full: value 1099511627776 cannot be converted to int32",
      errmsg(function() return ember.full({1}, 2^40, {dtype = "int32"}) end))
    assert.matches("full: value %-1 cannot be converted to uint8", errmsg(function() return ember.full({1}, -1, {dtype = "uint8"}) end))
    assert.matches("full: value 1000000 cannot be converted to float16",
      errmsg(function() return ember.full({1}, 1e6, {dtype = "float16"}) end))
    assert.matches("masked_fill: value 1099511627776 cannot be converted to int32",
      errmsg(function() return i32:masked_fill(ember.tensor{true}, 1 << 40) end))
    assert.matches("fill_: value 4294967296", errmsg(function() return i32:clone():fill_(1 << 32) end))
    -- what still works: in range, floats (inf is a float value), float results
    assert.are.same({256, 257}, (u:to("int64") + 255):tolist())
    assert.are.same({1.5}, (i32 + 0.5):tolist())
    assert.are.same({math.huge}, (ember.tensor{1.0} + 1e308 * 10):tolist())
  end)

  it("comparisons with a number beyond the dtype's range compare the true values", function()
    local i32 = ember.tensor({0, 1}, {dtype = "int32"})
    assert.are.same({false, false}, i32:eq(1 << 40):tolist())     -- not 2^40 cast to int32 (0)
    assert.are.same({true, true}, i32:lt(2^40):tolist())
    assert.are.same({true, true}, i32:gt(-(1 << 40)):tolist())
    local u = ember.tensor({0, 255}, {dtype = "uint8"})
    assert.are.same({false, false}, u:eq(256):tolist())
    assert.are.same({true, true}, u:gt(-1):tolist())
  end)

  it("clamp bounds beyond the integer dtype's range clamp nothing on that side", function()
    local i32 = ember.tensor({-5, 0, 7}, {dtype = "int32"})
    assert.are.same({-5, 0, 7}, i32:clamp(-(1 << 40), 1 << 40):tolist())
    assert.are.same({-5, 0, 3}, i32:clamp(-(1 << 40), 3):tolist())
    assert.are.same({0, 0, 7}, i32:clamp(0, 1 << 40):tolist())
  end)

  it("add and sub take alpha", function()
    local a, b = ember.tensor{1, 2}, ember.tensor{10, 20}
    assert.are.same({21, 42}, a:add(b, {alpha = 2}):tolist())
    assert.are.same({-19, -38}, a:sub(b, {alpha = 2}):tolist())
    assert.are.same({-5, -4}, ember.tensor{1.0, 2.0}:sub(3, {alpha = 2}):tolist())
    assert.are.same({6, 7}, ember.add(a, 2.5, {alpha = 2}):tolist())
    assert.matches("add: .*alpha must be an integer",
      errmsg(function() return a:add(b, {alpha = 2.5}) end))
    local x = ember.tensor{1.0, 1.0}
    x:add_(ember.tensor{1.0, 2.0}, {alpha = -0.5})
    assert.are.same({0.5, 0}, x:tolist())
  end)
end)

describe("comparisons and logical ops", function()
  local a, b = ember.tensor{1, 2, 3}, ember.tensor{3, 2, 1}
  it("compare tensors and numbers to bool", function()
    assert.are.same({false, true, false}, a:eq(b):tolist())
    assert.are.same({true, false, true}, a:ne(b):tolist())
    assert.are.same({true, false, false}, a:lt(b):tolist())
    assert.are.same({true, true, false}, a:le(b):tolist())
    assert.are.same({false, false, true}, a:gt(b):tolist())
    assert.are.same({false, true, true}, a:ge(b):tolist())
    assert.are.same({false, false, true}, a:gt(2):tolist())
    assert.are.same({true, false, false}, ember.gt(2, a):tolist())
    assert.are.same({false, true, true}, a:ge(1.5):tolist())     -- int tensor vs float number
    assert.are.equal("bool", a:eq(b).dtype)
    local f = ember.tensor{0.5, 1.5}
    assert.are.same({false, true}, f:gt(ember.tensor{1, 1}):tolist())
    local nan = 0 / 0
    assert.are.same({false, true}, ember.tensor{nan, nan}:ne(ember.tensor{1.0, nan}):eq(ember.tensor{false, true}):tolist())
  end)

  it("a long float tensor against a number: every comparison, NaN, both float dtypes", function()
    -- 1001 elements (the vector loops and their tails); NaN compares false
    -- except ne
    local xs = {}
    for i = 1, 1001 do xs[i] = (i % 7) - 3 end
    xs[500], xs[1001] = 0 / 0, 0 / 0
    local want = {eq = function(v) return v == 0 end, ne = function(v) return v ~= 0 end,
                  lt = function(v) return v < 0 end, le = function(v) return v <= 0 end,
                  gt = function(v) return v > 0 end, ge = function(v) return v >= 0 end}
    for _, dt in ipairs({"float32", "float64"}) do
      local x = ember.tensor(xs, {dtype = dt})
      for name, f in pairs(want) do
        local got = x[name](x, 0):tolist()
        for i = 1, #xs do assert.are.equal(f(xs[i]), got[i], ("%s %s at %d"):format(dt, name, i)) end
      end
    end
  end)

  it("logical_and / logical_or on any dtypes", function()
    local x, y = ember.tensor{1.5, 0, 2}, ember.tensor{2, 2, 0}
    assert.are.same({true, false, false}, x:logical_and(y):tolist())
    assert.are.same({true, true, true}, x:logical_or(y):tolist())
    assert.are.same({false, true}, ember.logical_or(ember.tensor{false, false}, ember.tensor{false, true}):tolist())
    assert.are.equal("bool", x:logical_and(y).dtype)
  end)

  it("in-place comparisons keep the dtype", function()
    local x = ember.tensor{1, 2}
    x:eq_(ember.tensor{1, 3})
    assert.are.equal("int64", x.dtype)
    assert.are.same({1, 0}, x:tolist())
  end)
end)

describe("type promotion", function()
  local function dt(x) return x.dtype end
  it("follows PyTorch's table", function()
    local i64, i32 = ember.tensor{1}, ember.tensor({1}, {dtype = "int32"})
    local u8 = ember.tensor({1}, {dtype = "uint8"})
    local b = ember.tensor{true}
    local f32, f64 = ember.tensor{1.0}, ember.tensor({1.0}, {dtype = "float64"})
    assert.are.equal("float32", dt(i64 + 1.5))          -- int tensor + float number
    assert.are.equal("int64", dt(i64 + 1))
    assert.are.equal("int32", dt(i32 + 1))              -- numbers are weak
    assert.are.equal("uint8", dt(u8 + 1))
    assert.are.equal("int64", dt(i32 + i64))
    assert.are.equal("uint8", dt(u8 + b))
    assert.are.same({2}, (u8 + b):tolist())
    assert.are.equal("int64", dt(b + 1))                -- bool tensor + int number
    assert.are.equal("float32", dt(b + 1.5))
    assert.are.equal("float64", dt(f32 + f64))
    assert.are.equal("float32", dt(f32 + i64))
    assert.are.equal("float32", dt(f32 * 2.5))
    assert.are.equal("float64", dt(f64 + 1))
    assert.are.equal("int32", dt(i32 + ember.tensor(5)))      -- 0-d int64 tensor is weaker
    assert.are.equal("float64", dt(i32 + ember.tensor(2.5, {dtype = "float64"})))  -- higher category
    assert.are.equal("float32", dt(f32 + ember.tensor(2.5, {dtype = "float64"})))
  end)

  it("bool + bool and bool * bool stay bool; bool - bool is refused", function()
    local b = ember.tensor{true, false}
    assert.are.equal("bool", dt(b + b))
    assert.are.same({true, false}, (b + b):tolist())
    assert.are.same({true, false}, (b * b):tolist())
    assert.are.same({true, false}, ember.maximum(b, ember.tensor{false, false}):tolist())
    assert.matches("sub: .*bool", errmsg(function() return b - b end))
    assert.matches("remainder: .*bool", errmsg(function() return b:remainder(b) end))
  end)

  it("casts the scalar to the tensor's dtype", function()
    local f = ember.tensor{1.0}
    -- 0.1 is rounded to float32 before the add, as in PyTorch
    local r = (f:double() + 0.1):tolist()[1]
    assert.are.equal(1.1, r)
    assert.is_true(math.abs((f + 0.1):tolist()[1] - 1.1) < 1e-6)
  end)
end)

describe("broadcasting", function()
  it("[3,1] + [1,4] -> [3,4]", function()
    local a = ember.tensor{{1}, {2}, {3}}
    local b = ember.tensor{{10, 20, 30, 40}}
    local r = a + b
    assert.are.same({3, 4}, r.shape)
    assert.are.same({{11, 21, 31, 41}, {12, 22, 32, 42}, {13, 23, 33, 43}}, r:tolist())
    assert.are.same({{-9, -19, -29, -39}, {-8, -18, -28, -38}, {-7, -17, -27, -37}}, (a - b):tolist())
  end)

  it("leading dims and 0-d tensors", function()
    local a = ember.tensor{{1, 2}, {3, 4}}
    assert.are.same({{11, 22}, {13, 24}}, (a + ember.tensor{10, 20}):tolist())
    assert.are.same({{6, 7}, {8, 9}}, (a + ember.tensor(5)):tolist())
    assert.are.same({{4, 3}, {2, 1}}, (ember.tensor(5) - a):tolist())
    local s = ember.tensor(2.0) * ember.tensor(3.0)
    assert.are.same({}, s.shape)
    assert.are.equal(6, s:item())
  end)

  it("empty tensors", function()
    local r = ember.zeros(0, 3) + ember.ones(3)
    assert.are.same({0, 3}, r.shape)
    assert.are.same({0}, (ember.tensor{} + ember.tensor{}).shape)
  end)

  it("errors name the op and both shapes", function()
    local msg = errmsg(function() return ember.ones(2, 3) + ember.ones(4) end)
    assert.matches("add:", msg, 1, true)
    assert.matches("[2,3]", msg, 1, true)
    assert.matches("[4]", msg, 1, true)
    msg = errmsg(function() return ember.ones(2, 3):mul(ember.ones(2)) end)
    assert.matches("mul:", msg, 1, true)
    msg = errmsg(function() return ember.ones(2, 3):gt(ember.ones(5, 1, 2)) end)
    assert.matches("gt:", msg, 1, true)
    assert.matches("[5,1,2]", msg, 1, true)
  end)
end)

describe("non-contiguous inputs", function()
  it("transposed, sliced and expanded operands", function()
    local m = ember.tensor{{1, 2, 3}, {4, 5, 6}}
    local mt = m:t()                                    -- [3,2]
    assert.are.same({{2, 8}, {4, 10}, {6, 12}}, (mt + mt):tolist())
    assert.are.same({{1, 4}, {2, 5}, {3, 6}}, (mt * ember.ones(3, 2, {dtype = "int64"})):tolist())
    local f = m:float():t()
    near({{1, 16}, {4, 25}, {9, 36}}, (f * f):tolist())
    local every_other = ember.arange(1, 11):float():slice(1, 1, 10, 2)   -- 1,3,5,7,9
    near({2, 6, 10, 14, 18}, (every_other + every_other):tolist())
    near({1, 3 / 2, 5 / 3, 7 / 4, 9 / 5}, every_other:div(ember.arange(1, 6)):tolist())
    local e = ember.tensor{{1.0}, {2.0}}:expand(2, 3)
    near({{2, 3, 4}, {3, 4, 5}}, (e + ember.tensor{1, 2, 3}):tolist())
    -- bool result of a strided compare, compared again (bool promotes to int64)
    assert.are.same({{true, false}, {true, false}, {true, false}},
      mt:gt(ember.tensor{{3, 3}, {3, 3}, {3, 3}}):lt(ember.tensor{1, 1}):tolist())
  end)

  it("large strided operands (chunked and threaded path)", function()
    local n = 300
    local a = ember.arange(n * n):float():view(n, n)
    local r = a:t() + a                       -- r[i][j] = a[j][i] + a[i][j]
    local l = r:tolist()
    assert.are.equal((1 * n + 2) + (2 * n + 1), l[2][3])
    assert.are.equal(2 * (n * n - 1), l[n][n])
    local c = a:t():contiguous():sub(a:t())
    local z = c:abs():tolist()
    local s = 0
    for _, row in ipairs(z) do for _, v in ipairs(row) do s = s + v end end
    assert.are.equal(0, s)
  end)
end)

describe("in-place binary ops", function()
  it("return self and modify it", function()
    local a = ember.tensor{1.0, 2.0}
    assert.are.equal(a, a:add_(1))
    assert.are.same({2, 3}, a:tolist())
    a:mul_(ember.tensor{2.0, 3.0}):sub_(1):div_(2)
    assert.are.same({1.5, 4}, a:tolist())
    a:pow_(2)
    assert.are.same({2.25, 16}, a:tolist())
    a:maximum_(ember.tensor{3.0, 3.0})
    assert.are.same({3, 16}, a:tolist())
  end)

  it("broadcast the right operand to self's shape", function()
    local a = ember.zeros(2, 3)
    a:add_(ember.tensor{1, 2, 3})
    assert.are.same({{1, 2, 3}, {1, 2, 3}}, a:tolist())
    a:add_(ember.tensor{{10}, {20}})
    assert.are.same({{11, 12, 13}, {21, 22, 23}}, a:tolist())
    assert.matches("add_: output with shape %[3%] doesn't match the broadcast shape %[2,3%]",
      errmsg(function() ember.zeros(3):add_(ember.zeros(2, 3)) end))
  end)

  it("write through views to the base tensor", function()
    local base = ember.zeros(3, 4)
    local row = base:select(1, 2)
    row:add_(5)
    local col = base:select(2, 3)              -- strided
    col:sub_(ember.tensor{1, 2, 3})
    assert.are.same({{0, 0, -1, 0}, {5, 5, 3, 5}, {0, 0, -3, 0}}, base:tolist())
    base:t():mul_(2)
    assert.are.same({{0, 0, -2, 0}, {10, 10, 6, 10}, {0, 0, -6, 0}}, base:tolist())
  end)

  it("refuse to narrow the result dtype", function()
    local i = ember.tensor{1, 2}
    assert.matches("add_: result type float32 can't be cast to the desired output type int64",
      errmsg(function() i:add_(1.5) end))
    assert.matches("add_: result type float32 can't be cast to the desired output type int64",
      errmsg(function() i:add_(ember.tensor{1.0, 2.0}) end))
    assert.matches("div_: result type float32 can't be cast to the desired output type int64",
      errmsg(function() i:div_(2) end))
    assert.matches("add_: result type int64 can't be cast to the desired output type bool",
      errmsg(function() ember.tensor{true}:add_(ember.tensor{1}) end))
    assert.are.same({1, 2}, i:tolist())
    -- widening is fine: a float tensor += int tensor
    local f = ember.tensor{0.5}
    f:add_(ember.tensor{2})
    assert.are.same({2.5}, f:tolist())
    -- int32 += int64 computes in int64 and wraps into int32
    local i32 = ember.tensor({2147483647}, {dtype = "int32"})
    i32:add_(ember.tensor{1})
    assert.are.same({-2147483648}, i32:tolist())
  end)

  it("overlapping self and operand read the original values", function()
    local t = ember.tensor{1, 2, 3, 4}
    t:narrow(1, 2, 3):add_(t:narrow(1, 1, 3))     -- t[2:4] += t[1:3]
    assert.are.same({1, 3, 5, 7}, t:tolist())
  end)
end)

describe("clamp", function()
  it("clamps with min, max or both", function()
    local t = ember.tensor{-2, 0.5, 3}
    assert.are.same({0, 0.5, 1}, t:clamp(0, 1):tolist())
    assert.are.same({0, 0.5, 3}, t:clamp(0):tolist())
    assert.are.same({-2, 0.5, 1}, t:clamp(nil, 1):tolist())
    assert.are.same({0, 0.5, 1}, ember.clamp(t, 0, 1):tolist())
    assert.are.same({1, 1, 1}, t:clamp(3, 1):tolist())           -- min > max gives max
    assert.are.same({0, 0.5, 3}, t:clamp_min(0):tolist())
    assert.are.same({-2, 0.5, 1}, t:clamp_max(1):tolist())
    local nan = 0 / 0
    assert.is_true(isnan(ember.tensor{nan}:clamp(0, 1):tolist()[1]))
  end)

  it("integer tensors", function()
    local i = ember.tensor{-5, 3, 9}
    assert.are.equal("int64", i:clamp(0, 4).dtype)
    assert.are.same({0, 3, 4}, i:clamp(0, 4):tolist())
    assert.are.equal("float32", i:clamp(0.5).dtype)              -- fractional bound promotes
    assert.are.same({0.5, 3, 9}, i:clamp(0.5):tolist())
    local u = ember.tensor({0, 200}, {dtype = "uint8"})
    assert.are.same({10, 100}, u:clamp(10, 100):tolist())
  end)

  it("tensor bounds broadcast", function()
    local t = ember.tensor{{1, 5}, {7, -1}}
    assert.are.same({{2, 5}, {7, 0}}, t:clamp(ember.tensor{2, 0}, ember.tensor{{6}, {8}}):tolist())
  end)

  it("in place", function()
    local t = ember.tensor{-2.0, 0.5, 3.0}
    assert.are.equal(t, t:clamp_(0, 1))
    assert.are.same({0, 0.5, 1}, t:tolist())
    local i = ember.tensor{-5, 3}
    i:clamp_(0)
    assert.are.same({0, 3}, i:tolist())
    assert.matches("clamp_: result type float32 can't be cast", errmsg(function() i:clamp_(0.5) end))
  end)

  it("needs a bound", function()
    assert.matches("clamp: at least one of min and max", errmsg(function() ember.tensor{1.0}:clamp() end))
    assert.matches("clamp: argument 1: expected a number", errmsg(function() ember.tensor{1.0}:clamp("x") end))
  end)
end)

describe("ops on transposed views", function()
  -- every operand transposed the same way walks column-major (each run contiguous)
  local function tv(r, c)      -- [r, c] holding 1..r*c row-major, with transposed strides
    return ember.arange(1, r * c + 1):float():reshape(r, c):t():contiguous():t()
  end
  it("in place, and copies between them, give the elementwise results", function()
    local r, c = 37, 70
    local x = tv(r, c)
    assert.are.same({1, r}, x:stride())
    x:mul_(2):add_(tv(r, c)):sub_(1)            -- 3 v - 1
    local y = tv(r, c):clamp(0, 1e9)
    local z = tv(r, c)
    z:copy_(x)
    local xl, zl = x:tolist(), z:tolist()
    for i = 1, r do
      for j = 1, c do
        local v = (i - 1) * c + j
        assert.are.equal(3 * v - 1, xl[i][j])
        assert.are.equal(3 * v - 1, zl[i][j])
      end
    end
    assert.are.equal(r * c, y:max():item())
  end)
end)

describe("where", function()
  local cond = ember.tensor{true, false, true}
  it("selects between tensors and numbers", function()
    local x, y = ember.tensor{1, 2, 3}, ember.tensor{10, 20, 30}
    assert.are.same({1, 20, 3}, ember.where(cond, x, y):tolist())
    assert.are.same({1, 20, 3}, x:where(cond, y):tolist())     -- Tensor.where(cond, other)
    assert.are.same({1, 0, 3}, ember.where(cond, x, 0):tolist())
    assert.are.equal("int64", ember.where(cond, x, 0).dtype)
    local r = ember.where(cond, x, 1.5)
    assert.are.equal("float32", r.dtype)
    assert.are.same({1, 1.5, 3}, r:tolist())
    local two = ember.where(cond, 1, 2.5)                      -- two numbers: default float
    assert.are.equal("float32", two.dtype)
    assert.are.same({1, 2.5, 1}, two:tolist())
  end)

  it("broadcasts the condition and the values", function()
    local c = ember.tensor{{true}, {false}}
    local r = ember.where(c, ember.tensor{1, 2, 3}, ember.tensor{{-1}, {-2}})
    assert.are.same({{1, 2, 3}, {-2, -2, -2}}, r:tolist())
    local f = ember.where(ember.tensor{true, false}, ember.tensor({1, 2}, {dtype = "float64"}), ember.tensor{5, 6})
    assert.are.equal("float64", f.dtype)
    assert.are.same({1, 6}, f:tolist())
  end)

  it("a long contiguous tensor against a 0-d value on either side, 4- and 8-byte", function()
    -- 1003 elements: the vector loops and their tails
    local n, xs, cs = 1003, {}, {}
    for i = 1, n do xs[i] = i * 0.5; cs[i] = (i * 7) % 3 == 0 end
    local c = ember.tensor(cs)
    for _, dt in ipairs({"float32", "float64", "int32", "int64"}) do
      local x = ember.tensor(xs, {dtype = dt:match("int") and "float64" or dt}):to(dt)
      local z = ember.tensor(-3, {dtype = dt})
      local a, b = ember.where(c, x, z):tolist(), ember.where(c, z, x):tolist()
      local xl = x:tolist()
      for i = 1, n do
        assert.are.equal(cs[i] and xl[i] or -3, a[i])
        assert.are.equal(cs[i] and -3 or xl[i], b[i])
      end
    end
  end)

  it("both values broadcast scalars, and strided condition and values, for every element size", function()
    -- both stride 0 (the gradient of a sum meeting ReLU's 0-d zero), then a transposed
    -- condition and value (the loop of any strides), checked element by element
    local n, cs = 517, {}
    for i = 1, n do cs[i] = (i * 5) % 7 < 3 end
    local c = ember.tensor(cs)
    for _, dt in ipairs({"float64", "float32", "float16", "uint8"}) do
      local one = ember.tensor(1, {dtype = dt}):expand(n)
      local two = ember.tensor(2, {dtype = dt})
      local r = ember.where(c, one, two):tolist()
      for i = 1, n do assert.are.equal(cs[i] and 1 or 2, r[i]) end
    end
    local rows, cols, mv, xv = 9, 13, {}, {}
    for i = 1, rows do
      mv[i], xv[i] = {}, {}
      for j = 1, cols do mv[i][j] = (i + 2 * j) % 3 == 0; xv[i][j] = i * 100 + j end
    end
    local mt = ember.tensor(mv):t()                             -- [cols, rows], strided
    for _, dt in ipairs({"float64", "float32", "float16", "uint8"}) do
      local x = ember.tensor(xv, {dtype = "float64"}):remainder(256):to(dt):t()
      local r = ember.where(mt, x, ember.tensor(7, {dtype = dt})):tolist()
      for j = 1, cols do
        for i = 1, rows do assert.are.equal(mv[i][j] and (xv[i][j] % 256) or 7, r[j][i]) end
      end
    end
  end)

  it("needs a bool condition", function()
    assert.matches("where: expected a bool condition, got a uint8",
      errmsg(function() ember.where(ember.tensor({1, 0}, {dtype = "uint8"}), 1, 2) end))
    assert.matches("where: expected a bool condition, got a float32",
      errmsg(function() ember.where(ember.tensor{1.0}, 1, 2) end))
    assert.matches("where:", errmsg(function() ember.where(ember.tensor{true, false}, ember.ones(3), 0) end))
    assert.matches("where: argument 3: expected a tensor or a number",
      errmsg(function() ember.where(ember.tensor{true}, 1, "x") end))
  end)
end)

describe("masked_fill", function()
  it("fills where the mask is true", function()
    local t = ember.tensor{{1, 2}, {3, 4}}
    local m = ember.tensor{{true, false}, {false, true}}
    assert.are.same({{0, 2}, {3, 0}}, t:masked_fill(m, 0):tolist())
    assert.are.same({{1, 2}, {3, 4}}, t:tolist())               -- out of place
    assert.are.same({{9, 9}, {3, 4}}, t:masked_fill(ember.tensor{{true}, {false}}, 9)
      :masked_fill(ember.tensor{false, false}, 0):tolist())
    assert.are.same({{-1, 2}, {-1, 4}}, t:masked_fill(ember.tensor{true, false}:view(1, 2):t():t(), -1):tolist())
    local f = ember.tensor{1.0, 2.0}:masked_fill(ember.tensor{true, false}, -math.huge)
    assert.are.same({-math.huge, 2}, f:tolist())
    assert.are.same({1, 2}, ember.tensor{5, 2}:masked_fill(ember.tensor{true, false}, 1.7):tolist()) -- truncated
    assert.are.same({7, 2}, ember.tensor{5, 2}:masked_fill(ember.tensor{true, false}, ember.tensor(7)):tolist())
  end)

  it("in place, through a view", function()
    local base = ember.zeros(2, 3)
    base:t():masked_fill_(ember.tensor{true, false}, 4)        -- fills base's first row
    assert.are.same({{4, 4, 4}, {0, 0, 0}}, base:tolist())
    local t = ember.tensor{1.0, 2.0, 3.0}
    assert.are.equal(t, t:masked_fill_(t:gt(1.5), 0))
    assert.are.same({1, 0, 0}, t:tolist())
  end)

  it("needs a bool mask that broadcasts to the tensor", function()
    local t = ember.zeros(2, 3)
    assert.matches("masked_fill: expected a bool mask, got a int64",
      errmsg(function() t:masked_fill(ember.tensor{1, 0, 1}, 1) end))
    assert.matches("masked_fill_: mask %[2,2,3%] cannot be broadcast",
      errmsg(function() t:masked_fill_(ember.zeros(2, 2, 3):gt(0), 1) end))
    assert.matches("masked_fill:", errmsg(function() t:masked_fill(ember.tensor{true, false}, 1) end))
    assert.matches("masked_fill: argument 2: expected a number",
      errmsg(function() t:masked_fill(ember.tensor{true, false, true}, "x") end))
  end)
end)

describe("argument errors", function()
  it("name the op", function()
    assert.matches("add: argument 1: expected a tensor or a number",
      errmsg(function() return ember.tensor{1}:add("x") end))
    assert.matches("exp: argument 1: expected a tensor", errmsg(function() return ember.exp("x") end))
    assert.matches("add:", errmsg(function() return ember.add(1, 2) end))
    assert.matches("mul_:", errmsg(function() return ember.tensor{1}:mul_({}) end))
  end)
end)
