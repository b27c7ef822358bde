-- random_spec.lua — seeding, generator state, rand/randn/randint/randperm,
-- uniform_/normal_ and the *_like forms.
local ember = require "ember"

local function flat(t)
  local out = {}
  local function rec(x)
    if type(x) == "table" then for _, v in ipairs(x) do rec(v) end else out[#out + 1] = x end
  end
  rec(t:tolist())
  return out
end

local function mean_var(xs)
  local s = 0
  for _, x in ipairs(xs) do s = s + x end
  local m = s / #xs
  local v = 0
  for _, x in ipairs(xs) do v = v + (x - m) ^ 2 end
  return m, v / (#xs - 1)
end

local function same(a, b)
  local fa, fb = flat(a), flat(b)
  if #fa ~= #fb then return false end
  for i = 1, #fa do if fa[i] ~= fb[i] then return false end end
  return true
end

local function errmsg(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok)
  return tostring(err)
end

describe("seeding", function()
  it("the same seed gives the same numbers, another seed others", function()
    ember.manual_seed(42)
    local a = ember.rand(100)
    local n1 = ember.randn(3, 4)
    ember.manual_seed(42)
    local b = ember.rand(100)
    local n2 = ember.randn(3, 4)
    assert.is_true(same(a, b))
    assert.is_true(same(n1, n2))
    ember.manual_seed(43)
    assert.is_false(same(a, ember.rand(100)))
    -- consecutive calls continue the stream
    ember.manual_seed(42)
    ember.rand(100)
    assert.is_false(same(a, ember.rand(100)))
  end)

  it("initial_seed reports the seed", function()
    ember.manual_seed(1234)
    assert.are.equal(1234, ember.initial_seed())
  end)

  it("matches the Philox known answer for seed 0, counter 0", function()
    -- Random123 KAT: philox4x32-10(ctr 0, key 0) = 6627e8d5 e169c58d bc57ac4c 9b00dbd8
    ember.manual_seed(0)
    local r = flat(ember.rand(4, {dtype = "float32"}))
    local lanes = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}
    for i = 1, 4 do assert.are.equal((lanes[i] >> 8) / 2^24, r[i]) end
    ember.manual_seed(0)
    local d = flat(ember.rand(4, {dtype = "float64"}))
    for i = 1, 4 do assert.are.equal(lanes[i] / 2^32, d[i]) end
    ember.manual_seed(0)
    local k = flat(ember.randint(10, {4}))
    for i = 1, 4 do assert.are.equal((lanes[i] * 10) >> 32, k[i]) end
  end)

  it("an unseeded program repeats itself (fixed default seed)", function()
    -- a fresh process: the ember executable when the test runner names one
    -- (the sanitizer build must not load its module into a plain lua5.4)
    local cpath = package.cpath:gsub("'", "")
    local interp = os.getenv("EMBER") or "lua5.4"
    local cmd = "LUA_CPATH='" .. cpath .. "' " .. interp .. " -e " ..
      "'local e = require \"ember\"; io.write(e.initial_seed(), \" \", e.rand(1):item(), \" \", e.randint(1000, {1}):item())'"
    local function run()
      local p = assert(io.popen(cmd))
      local s = p:read("a")
      p:close()
      return s
    end
    local first = run()
    assert.truthy(first:match("^67280421310721 "), first)
    assert.are.equal(first, run())
  end)

  it("get_rng_state / set_rng_state replay", function()
    ember.manual_seed(7)
    ember.rand(5)
    local st = ember.get_rng_state()
    assert.are.equal(7, st.seed)
    assert.are.equal(2, st.offset)   -- 5 values use 2 counters of 4
    local a, b = ember.randn(10), ember.randint(0, 100, {10})
    ember.rand(3)
    ember.set_rng_state(st)
    assert.is_true(same(a, ember.randn(10)))
    assert.is_true(same(b, ember.randint(0, 100, {10})))
    ember.set_rng_state(st.seed, st.offset)
    assert.is_true(same(a, ember.randn(10)))
  end)

  it("rejects bad seeds and states", function()
    local msg = errmsg(ember.manual_seed, "x")
    assert.truthy(msg:find("ember.manual_seed: argument 1: expected an integer", 1, true), msg)
    msg = errmsg(ember.set_rng_state, {seed = 1})
    assert.truthy(msg:find("ember.set_rng_state: argument 1: field 'offset' is not an integer", 1, true), msg)
  end)
end)

describe("rand and uniform_", function()
  it("is in [0, 1) with mean 1/2 and variance 1/12", function()
    ember.manual_seed(1)
    local t = ember.rand(100000)
    assert.are.same({100000}, t.shape)
    assert.are.equal("float32", t.dtype)
    local xs = flat(t)
    local lo, hi = 1, 0
    for _, x in ipairs(xs) do lo = math.min(lo, x); hi = math.max(hi, x) end
    assert.is_true(lo >= 0 and hi < 1)
    local m, v = mean_var(xs)
    assert.is_true(math.abs(m - 0.5) < 0.005, m)
    assert.is_true(math.abs(v - 1 / 12) < 0.002, v)
  end)

  it("takes sizes as numbers or a table, and dtype/device options", function()
    assert.are.same({2, 3}, ember.rand(2, 3).shape)
    assert.are.same({2, 3}, ember.rand({2, 3}).shape)
    assert.are.same({}, ember.rand({}).shape)
    assert.are.same({0, 3}, ember.rand(0, 3).shape)
    local d = ember.rand(2, 3, {dtype = "float64"})
    assert.are.equal("float64", d.dtype)
    assert.are.equal("float16", ember.rand(4, {dtype = "float16"}).dtype)
    assert.are.equal("bfloat16", ember.randn(4, {dtype = "bfloat16"}).dtype)
    assert.are.equal("cpu", tostring(ember.rand(2, {device = "cpu"}).device))
    local h = flat(ember.rand(1000, {dtype = "float16"}))
    for _, x in ipairs(h) do assert.is_true(x >= 0 and x < 1) end
  end)

  it("uniform_ fills a range in place and returns self", function()
    ember.manual_seed(5)
    local t = ember.zeros(1000, {dtype = "float64"})
    local r = t:uniform_(-2, 3)
    assert.are.equal(t, r)
    local xs = flat(t)
    for _, x in ipairs(xs) do assert.is_true(x >= -2 and x < 3) end
    local m = mean_var(xs)
    assert.is_true(math.abs(m - 0.5) < 0.2, m)
  end)

  it("uniform_ on a non-contiguous view fills every element by position", function()
    ember.manual_seed(9)
    local ref = ember.rand(3, 4)
    local base = ember.zeros(4, 3)
    local v = base:t()
    ember.manual_seed(9)
    v:uniform_()
    assert.is_true(same(ref, v))
    assert.is_true(same(ref:t(), base))
  end)

  it("refuses uniform_ and normal_ on a tensor that requires grad, outside no_grad", function()
    local w = ember.ones(3, {requires_grad = true})
    for _, op in ipairs{"uniform_", "normal_"} do
      local ok, err = pcall(w[op], w)
      assert.is_false(ok)
      assert.truthy(err:find(op .. ": in-place operation on a tensor that requires grad (a leaf tensor)", 1, true), err)
    end
    assert.are.same({1, 1, 1}, w:tolist())   -- untouched
    ember.no_grad(function() w:uniform_(5, 6) end)
    for _, x in ipairs(w:tolist()) do assert.is_true(x >= 5 and x < 6) end
  end)

  it("rejects integer outputs and bad bounds", function()
    local msg = errmsg(ember.rand, 3, {dtype = "int64"})
    assert.truthy(msg:find("rand: expected a floating point dtype, got int64", 1, true), msg)
    msg = errmsg(function() return ember.zeros(3, {dtype = "int64"}):uniform_() end)
    assert.truthy(msg:find("uniform_: expected a floating point tensor, got int64", 1, true), msg)
    msg = errmsg(function() return ember.zeros(3):uniform_(2, 1) end)
    assert.truthy(msg:find("uniform_: expected finite bounds with from <= to", 1, true), msg)
    msg = errmsg(ember.rand, -1)
    assert.truthy(msg:find("negative", 1, true), msg)
    -- a width beyond the dtype's largest value gave inf and then `from` everywhere, silently
    -- (PyTorch: "uniform_ expects to-from <= std::numeric_limits<Double>::max()")
    msg = errmsg(function() return ember.zeros(3, {dtype = "float64"}):uniform_(-1.797e308, 1.797e308) end)
    assert.truthy(msg:find("uniform_: to - from must be at most float64's largest value", 1, true), msg)
    msg = errmsg(function() return ember.zeros(3):uniform_(-3e38, 3e38) end)
    assert.truthy(msg:find("uniform_: to - from must be at most float32's largest value", 1, true), msg)
    msg = errmsg(function() return ember.zeros(3, {dtype = "float16"}):uniform_(-70000, 1) end)
    assert.truthy(msg:find("uniform_: from=-70000 and to=1 must be within float16's range", 1, true), msg)
    -- the widest range that fits is drawn from, inside its bounds
    local h = ember.zeros(1000, {dtype = "float16"}):uniform_(-30000, 30000)
    assert.is_true(h:min():item() >= -30000 and h:max():item() < 30000 and h:abs():max():item() > 20000)
  end)
end)

describe("randn and normal_", function()
  it("has mean 0 and standard deviation 1", function()
    ember.manual_seed(2)
    local xs = flat(ember.randn(100000))
    local m, v = mean_var(xs)
    assert.is_true(math.abs(m) < 0.01, m)
    assert.is_true(math.abs(math.sqrt(v) - 1) < 0.01, v)
    local inside = 0
    for _, x in ipairs(xs) do if math.abs(x) < 1 then inside = inside + 1 end end
    assert.is_true(math.abs(inside / #xs - 0.6827) < 0.01, inside / #xs)
  end)

  it("normal_ takes mean and std and returns self", function()
    ember.manual_seed(3)
    local t = ember.empty(20000, {dtype = "float64"})
    assert.are.equal(t, t:normal_(10, 0.5))
    local m, v = mean_var(flat(t))
    assert.is_true(math.abs(m - 10) < 0.02, m)
    assert.is_true(math.abs(math.sqrt(v) - 0.5) < 0.02, v)
    local msg = errmsg(function() return t:normal_(0, -1) end)
    assert.truthy(msg:find("normal_: expected a finite mean and std >= 0", 1, true), msg)
  end)

  -- The mapping of engine/cpu/random.c's header, written again here with Lua's own
  -- arithmetic and libm's log, cos and sin: Philox 4x32-10 on the counter {lo(q), hi(q), 0, 0}
  -- with the seed as key, then Box-Muller on the lane pairs. The kernel's log and sincos are
  -- its own polynomials; the mapping allows them to differ in the last bits only.
  local function philox(q, seed)
    local M = 0xffffffff
    local c0, c1, c2, c3 = q & M, q >> 32, 0, 0
    local k0, k1 = seed & M, seed >> 32
    for r = 0, 9 do
      if r > 0 then k0, k1 = (k0 + 0x9E3779B9) & M, (k1 + 0xBB67AE85) & M end
      local p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2      -- < 2^64: exact modulo 2^64
      c0, c1, c2, c3 = ((p1 >> 32) ~ c1 ~ k0) & M, p1 & M, ((p0 >> 32) ~ c3 ~ k1) & M, p0 & M
    end
    return {c0, c1, c2, c3}
  end
  local function reference_normals(seed, offset, n)
    local out = {}
    for i = 0, n - 1 do
      local x = philox(offset + i // 4, seed)
      local l = i % 4 - i % 2                                  -- the pair's first lane
      local u1, u2 = (x[l + 1] + 1) * 2.0 ^ -32, x[l + 2] * 2.0 ^ -32
      local r, th = math.sqrt(-2 * math.log(u1)), 2 * math.pi * u2
      out[i + 1] = i % 2 == 0 and r * math.cos(th) or r * math.sin(th)
    end
    return out
  end

  it("follows the mapping: Philox lanes through Box-Muller (float64 within 1e-14, float32 one ulp)", function()
    for _, seed in ipairs({0, 1234, 0x123456789AB}) do
      ember.manual_seed(seed)
      local offset = ember.get_rng_state().offset
      local got = flat(ember.randn(4099, {dtype = "float64"}))
      local want = reference_normals(seed, offset, 4099)
      for i = 1, #want do
        assert(math.abs(got[i] - want[i]) <= 1e-14 * math.max(1, math.abs(want[i])),
               string.format("seed %d, element %d: %.17g against %.17g", seed, i, got[i], want[i]))
      end
      ember.manual_seed(seed)
      local g32 = flat(ember.randn(4099))
      for i = 1, #want do
        local w = string.unpack("f", string.pack("f", want[i]))          -- rounded to float32
        local ulp = 2.0 ^ (math.floor(math.log(math.abs(w), 2)) - 23)
        assert(math.abs(g32[i] - w) <= ulp, string.format("float32 element %d: %.9g against %.9g", i, g32[i], w))
      end
    end
  end)

  it("odd sizes work (the last Box-Muller pair half used)", function()
    ember.manual_seed(4)
    local a = flat(ember.randn(7))
    ember.manual_seed(4)
    local b = flat(ember.randn(8))
    for i = 1, 7 do assert.are.equal(b[i], a[i]) end
  end)
end)

describe("randint", function()
  it("covers [low, high) and hits every value", function()
    ember.manual_seed(11)
    local t = ember.randint(-3, 4, {10000})
    assert.are.equal("int64", t.dtype)
    local seen = {}
    for _, x in ipairs(flat(t)) do
      assert.is_true(math.type(x) == "integer" and x >= -3 and x < 4)
      seen[x] = (seen[x] or 0) + 1
    end
    for v = -3, 3 do assert.is_true((seen[v] or 0) > 1200, v) end
  end)

  it("randint(high, sizes) starts at 0; dtype option", function()
    local t = ember.randint(5, {3, 4})
    assert.are.same({3, 4}, t.shape)
    for _, x in ipairs(flat(t)) do assert.is_true(x >= 0 and x < 5) end
    assert.are.equal("int32", ember.randint(0, 5, {3}, {dtype = "int32"}).dtype)
    local f = ember.randint(0, 5, {100}, {dtype = "float32"})
    assert.are.equal("float32", f.dtype)
    for _, x in ipairs(flat(f)) do assert.are.equal(math.floor(x), x) end
    local u = flat(ember.randint(250, 256, {200}, {dtype = "uint8"}))
    for _, x in ipairs(u) do assert.is_true(x >= 250 and x <= 255) end
  end)

  it("wide ranges use 64 bits", function()
    local t = flat(ember.randint(0, 2^40, {1000}))
    local big = 0
    for _, x in ipairs(t) do
      assert.is_true(x >= 0 and x < 2^40)
      if x >= 2^39 then big = big + 1 end
    end
    assert.is_true(big > 400 and big < 600, big)
  end)

  it("rejects bad ranges and arguments", function()
    local msg = errmsg(ember.randint, 5, 5, {3})
    assert.truthy(msg:find("randint: expected low < high, got low=5, high=5", 1, true), msg)
    msg = errmsg(ember.randint, 0, 300, {3}, {dtype = "uint8"})
    assert.truthy(msg:find("randint: range [0, 300) does not fit dtype uint8", 1, true), msg)
    msg = errmsg(ember.randint, 0, 10)
    assert.truthy(msg:find("ember.randint: argument 3: expected a size table", 1, true), msg)
    msg = errmsg(ember.randint, 0.5, {3})
    assert.truthy(msg:find("ember.randint: argument 1: expected an integer", 1, true), msg)
  end)
end)

describe("randperm", function()
  it("is a permutation of 1..n", function()
    ember.manual_seed(8)
    local p = ember.randperm(1000)
    assert.are.equal("int64", p.dtype)
    assert.are.same({1000}, p.shape)
    local seen, moved = {}, 0
    for i, x in ipairs(flat(p)) do
      assert.is_nil(seen[x])
      assert.is_true(x >= 1 and x <= 1000)
      seen[x] = true
      if x ~= i then moved = moved + 1 end
    end
    assert.is_true(moved > 900)
    ember.manual_seed(8)
    assert.is_true(same(p, ember.randperm(1000)))
  end)

  it("small and empty cases, dtype option, errors", function()
    assert.are.same({}, ember.randperm(0):tolist())
    assert.are.same({1}, ember.randperm(1):tolist())
    local f = ember.randperm(5, {dtype = "float64"})
    assert.are.equal("float64", f.dtype)
    local s = flat(f)
    table.sort(s)
    assert.are.same({1, 2, 3, 4, 5}, s)
    local msg = errmsg(ember.randperm, -1)
    assert.truthy(msg:find("randperm: n must be non-negative", 1, true), msg)
    msg = errmsg(ember.randperm, 300, {dtype = "uint8"})
    assert.truthy(msg:find("randperm: n=300 is too large for dtype uint8", 1, true), msg)
  end)
end)

describe("*_like", function()
  it("rand_like / randn_like / randint_like follow the input", function()
    local t = ember.zeros(2, 3, {dtype = "float64"})
    local r = ember.rand_like(t)
    assert.are.same({2, 3}, r.shape)
    assert.are.equal("float64", r.dtype)
    assert.are.equal("float32", ember.randn_like(t, {dtype = "float32"}).dtype)
    local i = ember.randint_like(ember.zeros(4, {dtype = "int32"}), 3)
    assert.are.equal("int32", i.dtype)
    for _, x in ipairs(flat(i)) do assert.is_true(x >= 0 and x < 3) end
    local j = ember.randint_like(t, 5, 7)
    assert.are.equal("float64", j.dtype)
    for _, x in ipairs(flat(j)) do assert.is_true(x == 5 or x == 6) end
    local msg = errmsg(ember.rand_like, ember.zeros(2, {dtype = "int64"}))
    assert.truthy(msg:find("rand: expected a floating point dtype, got int64", 1, true), msg)
  end)
end)
