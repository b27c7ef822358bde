-- special_fns_spec.lua — digamma, lgamma and polygamma(n, x): values against mpmath over a
-- wide range (in ulps, float64 and float32), PyTorch 2.15's values at the poles and
-- infinities and in float16/bfloat16, gradients and second derivatives against mpmath and
-- PyTorch's autograd (fixtures/special_fns_cases.lua, from
-- scripts/fixtures/make_special_fixtures.py), the function, method and in-place spellings,
-- dtype promotion and bad input. The device's kernels are checked against the CPU by
-- tests/gpu/ops_table_spec.lua, and here on the device under test when there is one.
local ember = require "ember"
local g = require "gpu_helpers"

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local cases = dofile(here .. "fixtures/special_fns_cases.lua")

local MANTISSA = {float64 = 52, float32 = 23, float16 = 10, bfloat16 = 7}
local MIN_EXP = {float64 = -1022, float32 = -126, float16 = -14, bfloat16 = -126}
local MAX = {float32 = 3.4028234663852886e38, float16 = 65504.0, bfloat16 = 3.3895313892515355e38}

-- the spacing of dtype's values at |v| (the subnormal spacing below the normal range)
local function ulp(v, dtype)
  v = math.abs(v)
  local e = v > 0 and math.floor(math.log(v, 2)) or MIN_EXP[dtype]
  if v > 0 and 2.0 ^ e > v then e = e - 1 elseif v > 0 and 2.0 ^ (e + 1) <= v then e = e + 1 end
  return 2.0 ^ (math.max(e, MIN_EXP[dtype]) - MANTISSA[dtype])
end

local function call(fn, n, x)
  if fn == "polygamma" then return ember.polygamma(n, x) end
  return ember[fn](x)
end

local function describe_value(v)
  if v ~= v then return "nan" end
  if v == 0 then return 1 / v > 0 and "0.0" or "-0.0" end
  return ("%.17g"):format(v)
end

-- the same value, NaN matching NaN and -0.0 told from 0.0
local function identical(a, b)
  if a ~= a or b ~= b then return a ~= a and b ~= b end
  if a == 0 and b == 0 then return 1 / a == 1 / b end
  return a == b
end

-- Where ember differs from PyTorch on purpose (README's differences list): the value it gives
-- instead, or nil. polygamma(1, x) at a negative integer or -inf is the limit +inf from both
-- sides, where PyTorch's trigamma gives pi^2 / sin(pi x)^2 rounded (finite) or NaN; polygamma(n
-- >= 2, +inf) is the limit 0 (signed as (-1)^(n+1)), where PyTorch's Cephes zeta gives NaN.
local function deviation(fn, n, x)
  if fn ~= "polygamma" then return nil end
  if n == 1 and x < 0 and x == math.floor(x) then return math.huge end
  if n >= 2 and x == math.huge then return n % 2 == 1 and 0.0 or -0.0 end
  return nil
end

-- float64 tolerances in ulps of the case's scale (the generator's comment says what scale is):
-- lgamma is libm's (CUDA's on the device, documented to 4 ulp away from its negative roots);
-- digamma and trigamma are within about 2; near a pole psi^(n) grows as cot(pi x)^(n+1),
-- which multiplies the ulp or two of cot's error by n + 1
local function ulps(fn, n)
  if fn == "lgamma" or fn == "digamma" or n <= 1 then return 4 end
  return 4 + 2 * (n + 1)
end

local function check_values(c, got, dev)
  local where = ("%s(n=%d, %s) on %s"):format(c.fn, c.n, c.dtype, dev)
  for i, x in ipairs(c.x) do
    local v, ref, torch_v = got[i], c.mp[i], c.torch[i]
    local at = (" at x = %s: got %s"):format(describe_value(x), describe_value(v))
    local instead = deviation(c.fn, c.n, x)
    if instead ~= nil then
      assert(identical(v, instead), where .. at .. ", expected " .. describe_value(instead)
             .. " (the limit; PyTorch gives " .. describe_value(torch_v) .. ")")
    elseif ref ~= ref or c.dtype == "float16" or c.dtype == "bfloat16" then
      -- poles, infinities, NaN, and the half dtypes: PyTorch's value (halves within an ulp)
      local ok = identical(v, torch_v) or (c.dtype:match("16") and torch_v == torch_v and
                 math.abs(torch_v) < math.huge and math.abs(v - torch_v) <= ulp(torch_v, c.dtype))
      assert(ok, where .. at .. ", PyTorch gives " .. describe_value(torch_v))
    else
      local want, tol = ref, nil
      if c.dtype == "float64" then
        tol = ulps(c.fn, c.n) * ulp(c.scale[i], "float64")
      else
        -- float32: computed in double and rounded once, so within an ulp of float
        if math.abs(ref) > MAX[c.dtype] then want = ref > 0 and math.huge or -math.huge end
        tol = ulp(c.scale[i], c.dtype) + 1e-7 * ulp(c.scale[i], c.dtype)
      end
      local ok = identical(v, want) or (math.abs(want) < math.huge and math.abs(v - want) <= tol)
      assert(ok, ("%s%s, mpmath %s (%.2f ulp of the scale %s, %d allowed)"):format(where, at,
             describe_value(ref), math.abs(v - ref) / ulp(c.scale[i], c.dtype), describe_value(c.scale[i]),
             c.dtype == "float64" and ulps(c.fn, c.n) or 1))
    end
  end
end

describe("special functions: values", function()
  for _, c in ipairs(cases) do
    if c.x and not c.grad then
      it(("%s(n=%d) in %s against mpmath and PyTorch 2.15"):format(c.fn, c.n, c.dtype), function()
        local x = ember.tensor(c.x, {dtype = c.dtype})
        check_values(c, call(c.fn, c.n, x):to("float64"):tolist(), "cpu")
      end)
    end
  end

  local device_it = it
  if not g.is_cuda or g.skip_reason() then
    device_it = function(name) pending(name .. " (no device: " .. tostring(g.skip_reason() or "CPU only") .. ")") end
  end
  device_it("the device's values follow the same rules: the sweep in float64 and float32 on " .. g.DEV, function()
    for _, c in ipairs(cases) do
      if c.x and not c.grad and (c.dtype == "float64" or c.dtype == "float32") then
        local x = ember.tensor(c.x, {dtype = c.dtype}):to(g.DEV)
        check_values(c, call(c.fn, c.n, x):cpu():to("float64"):tolist(), g.DEV)
      end
    end
  end)
end)

describe("special functions: gradients", function()
  for _, c in ipairs(cases) do
    if c.grad then
      it(("%s(n=%d): first and second derivative against mpmath and PyTorch's autograd"):format(c.fn, c.n), function()
        local x = ember.tensor(c.x, {dtype = "float64", requires_grad = true})
        local w = ember.tensor(c.w, {dtype = "float64"})
        local y = call(c.fn, c.n, x)
        local gx = ember.autograd.grad({(y * w):sum()}, {x}, {create_graph = true})
        assert(gx.requires_grad, "the first gradient records (create_graph)")
        local ggx = ember.autograd.grad({gx:sum()}, {x})
        local got_g, got_gg = gx:tolist(), ggx:tolist()
        for i = 1, #c.x do
          for _, k in ipairs({{got_g[i], c.g_mp[i], c.g[i], "first"}, {got_gg[i], c.gg_mp[i], c.gg[i], "second"}}) do
            local v, mp, pt, which = k[1], k[2], k[3], k[4]
            local what = ("%s(n=%d) %s derivative at x = %s: got %s"):format(c.fn, c.n, which, c.x[i],
                                                                          describe_value(v))
            -- to the last few digits of mpmath; PyTorch's trigamma sums only 6 terms before its
            -- asymptotic series, so PyTorch's own values are off by up to about 5e-10
            assert(math.abs(v - mp) <= 1e-13 * math.abs(mp), what .. ", mpmath " .. describe_value(mp))
            assert(math.abs(v - pt) <= 1e-8 * math.abs(pt), what .. ", PyTorch " .. describe_value(pt))
          end
        end
      end)
    end
  end

  it("polygamma's order gets no gradient, and x the one of polygamma(n+1, x)", function()
    local x = ember.tensor({0.7, 3.0}, {dtype = "float64", requires_grad = true})
    local y = x:polygamma(2)
    assert.are.equal("DigammaBackward", x:digamma().grad_fn)
    assert.are.equal("LgammaBackward", x:lgamma().grad_fn)
    assert.are.equal("PolygammaBackward", y.grad_fn)
    y:sum():backward()
    local want = ember.polygamma(3, ember.tensor({0.7, 3.0}, {dtype = "float64"})):tolist()
    local got = x.grad:tolist()
    for i = 1, 2 do assert.are.equal(want[i], got[i]) end
  end)
end)

describe("special functions: spellings and dtypes", function()
  local x = ember.tensor({0.3, 1.5, 4.0, -2.5}, {dtype = "float64"})

  it("ember.fn(x), x:fn() and the in-place x:fn_() agree, and in-place returns self", function()
    for _, name in ipairs({"digamma", "lgamma"}) do
      local want = ember[name](x):tolist()
      assert.are.same(want, x[name](x):tolist())
      local y = x:clone()
      assert(rawequal(y[name .. "_"](y), y), name .. "_ returns self")
      assert.are.same(want, y:tolist())
    end
    for n = 0, 3 do
      local want = ember.polygamma(n, x):tolist()
      assert.are.same(want, x:polygamma(n):tolist())
      local y = x:clone()
      assert(rawequal(y:polygamma_(n), y), "polygamma_ returns self")
      assert.are.same(want, y:tolist())
    end
    assert.are.same(ember.digamma(x):tolist(), ember.polygamma(0, x):tolist())
  end)

  it("integer and bool inputs promote to the default float dtype, as in PyTorch", function()
    local got = {ember.digamma(ember.tensor({1, 2, 3})), ember.lgamma(ember.tensor({1, 2, 3}, {dtype = "int32"})),
                 ember.polygamma(1, ember.tensor({1, 2, 3})), ember.digamma(ember.tensor({true, false}))}
    assert(cases.promoted, "the fixture lists the promoted cases")
    for i, want in ipairs(cases.promoted) do
      assert.are.equal(want.dtype, got[i].dtype)
      local v = got[i]:to("float64"):tolist()
      for k = 1, #want.values do
        assert(identical(v[k], want.values[k]) or math.abs(v[k] - want.values[k]) <= 1e-6 * math.abs(want.values[k]),
               ("promoted case %d, element %d: %s, PyTorch %s"):format(i, k, v[k], want.values[k]))
      end
    end
  end)

  it("keeps float16 and bfloat16", function()
    for _, dt in ipairs({"float16", "bfloat16"}) do
      local h = ember.tensor({0.5, 2.0}, {dtype = dt})
      assert.are.equal(dt, ember.digamma(h).dtype)
      assert.are.equal(dt, h:lgamma().dtype)
      assert.are.equal(dt, h:polygamma(1).dtype)
    end
  end)

  it("refuses a bad order n, with the function's name, at the caller's line", function()
    local function err(f)
      local ok, msg = pcall(f)
      assert(not ok, "expected an error")
      return tostring(msg)
    end
    local line = debug.getinfo(1, "l").currentline
    local m = err(function() return ember.polygamma(-1, x) end)
    assert(m:find("polygamma: argument 1: n must be a non-negative integer, got -1", 1, true), m)
    assert(m:find("special_fns_spec.lua:" .. (line + 1), 1, true), m)
    m = err(function() return ember.polygamma(1.5, x) end)
    assert(m:find("polygamma: argument 1: n must be a non-negative integer, got 1.5", 1, true), m)
    m = err(function() return ember.polygamma(2.0, x) end)   -- PyTorch's n is an int: 2.0 is refused too
    assert(m:find("n must be a non-negative integer, got 2.0", 1, true), m)
    -- a method's arguments count from the first after self, as in Lua's own messages
    m = err(function() return x:polygamma(-2) end)
    assert(m:find("polygamma: argument 1: n must be a non-negative integer, got -2", 1, true), m)
    m = err(function() return x:polygamma_(-1) end)
    assert(m:find("polygamma_: argument 1: n must be a non-negative integer, got -1", 1, true), m)
    m = err(function() return ember.polygamma(x, x) end)
    assert(m:find("polygamma: argument 2: expected an integer (the order n)", 1, true), m)
    m = err(function() return ember.polygamma(1) end)
    assert(m:find("polygamma: argument 2: expected a tensor", 1, true), m)
    m = err(function() return ember.polygamma("1", x) end)
    assert(m:find("polygamma: argument 1: expected an integer (the order n), got string", 1, true), m)
  end)

  it("refuses in place on an integer tensor (the float result cannot be cast back)", function()
    local i = ember.tensor({1, 2, 3})
    for _, f in ipairs({function() return i:digamma_() end, function() return i:lgamma_() end,
                        function() return i:polygamma_(1) end}) do
      local ok, msg = pcall(f)
      assert(not ok and tostring(msg):find("result type float32 can't be cast to the desired output type int64",
                                           1, true), tostring(msg))
    end
  end)
end)
