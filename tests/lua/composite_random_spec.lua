-- composite_random_spec.lua — lua/ember/composite/random.lua: the sampling functions
-- (normal, bernoulli, the fills exponential_, geometric_, log_normal_, cauchy_, random_,
-- bernoulli_), the windows, i0 and mvlgamma.
--
-- The deterministic ones against PyTorch 2.15 (fixtures/composite_random.lua, written by
-- scripts/fixtures/make_composite_random_fixtures.py). The random ones by their
-- distributions' own formulas: with a fixed seed and n draws the sample mean, variance
-- or frequency must lie within K standard errors of the true value (K = 6: the test is
-- deterministic, the bound wide enough for any seed in practice, and narrow enough that a
-- wrong formula — a rate for a scale, a variance for a standard deviation — fails).
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

local K = 6

-- the sample mean and (unbiased) variance of t, in float64
local function moments(t)
  t = t:to("float64")
  return t:mean():item(), t:var():item()
end

-- |got - want| within K standard errors se
local function near(what, got, want, se)
  assert(math.abs(got - want) <= K * se,
         string.format("%s: %.6g, expected %.6g within %d x %.3g", what, got, want, K, se))
end

-- the mean and variance of n draws match a distribution of mean mu, variance var and
-- fourth central moment mu4 (the variance of the sample variance is
-- (mu4 - (n - 3) / (n - 1) var^2) / n)
local function check_moments(what, t, mu, var, mu4)
  local n = t:numel()
  local m, v = moments(t)
  near(what .. " mean", m, mu, math.sqrt(var / n))
  near(what .. " variance", v, var, math.sqrt((mu4 - (n - 3) / (n - 1) * var * var) / n))
end

-- a fresh tensor of each float dtype
local FLOATS = {"float32", "float64", "float16", "bfloat16"}

-- f() twice from the same seed gives the same tensor
local function check_repeats(f)
  ember.manual_seed(1234)
  local a = f()
  ember.manual_seed(1234)
  local b = f()
  assert(a:eq(b):all():item(), "the same seed gave different draws")
  assert(not a:eq(f()):all():item() or a:numel() < 4, "a second draw repeated the first")
end

describe("composite random: PyTorch fixtures (windows, i0, mvlgamma)", function()
  for _, c in ipairs(h.fixture("composite_random.lua")) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

describe("composite random: names", function()
  it("are ember functions and tensor methods, found before anything loaded them", function()
    local src = "local e = require 'ember'; local t = e.zeros(3); assert(t:exponential_() == t); "
                .. "print(type(e.normal), type(e.kaiser_window), type(t.random_), type(t.i0_))"
    local out = h.run_fresh(src)
    assert(out:find("function%sfunction%sfunction%sfunction"), out)
    local t = ember.zeros(2)
    for _, n in ipairs({"normal", "bernoulli", "hann_window", "hamming_window", "blackman_window", "bartlett_window",
                        "kaiser_window", "i0", "mvlgamma"}) do
      assert.are.equal("function", type(ember[n]), n)
    end
    for _, n in ipairs({"bernoulli", "bernoulli_", "exponential_", "geometric_", "log_normal_", "cauchy_", "random_",
                        "i0", "i0_", "mvlgamma", "mvlgamma_"}) do
      assert.are.equal("function", type(t[n]), "t:" .. n)
    end
    assert.is_true(ember.special.i0 == ember.i0)
    assert.is_true(ember.special.multigammaln == ember.mvlgamma)
  end)
end)

describe("ember.normal", function()
  local n = 200000
  it("draws N(mean, std^2): numbers and a size", function()
    ember.manual_seed(11)
    local t = ember.normal(2, 3, {n})
    assert.are.equal("float32", t.dtype)
    h.check_shape(t, {n})
    check_moments("normal(2, 3)", t, 2, 9, 3 * 81)
    local d = ember.normal(-1, 0.5, {2, 3}, {dtype = "float64", device = "cpu", requires_grad = true})
    assert.are.equal("float64", d.dtype)
    h.check_shape(d, {2, 3})
    assert.is_true(d.requires_grad)
    h.check(ember.normal(5, 0, {3}), {5, 5, 5})
  end)
  it("takes a tensor mean and/or std that broadcast, keeping mean's dtype", function()
    ember.manual_seed(12)
    local mean = ember.tensor({-10.0, 0.0, 10.0}):repeat_interleave(n // 3)
    local t = ember.normal(mean, 2)
    check_moments("normal(tensor mean, 2) centred", t - mean, 0, 4, 3 * 16)
    local r = ember.normal(ember.zeros(3, 1), ember.ones(4, {dtype = "float64"}))
    h.check_shape(r, {3, 4})
    assert.are.equal("float32", r.dtype)   -- mean's dtype, as PyTorch
    local s = ember.normal(1.5, ember.full({n}, 0.5, {dtype = "float64"}))
    assert.are.equal("float64", s.dtype)
    check_moments("normal(1.5, tensor std)", s, 1.5, 0.25, 3 * 0.0625)
    local m = ember.normal(ember.full({n}, 1.0, {dtype = "float16"}))   -- std defaults to 1
    assert.are.equal("float16", m.dtype)
    check_moments("normal(tensor mean)", m, 1, 1, 3)
  end)
  it("repeats under manual_seed", function()
    check_repeats(function() return ember.normal(0, 1, {64}) end)
    check_repeats(function() return ember.normal(ember.zeros(8), ember.ones(8)) end)
  end)
  it("is differentiable in mean (1) and std ((result - mean) / std)", function()
    local mean = ember.tensor({1.0, -2.0, 3.0}, {dtype = "float64", requires_grad = true})
    local std = ember.tensor({{0.5}, {2.0}}, {dtype = "float64", requires_grad = true})
    local out = ember.normal(mean, std)
    h.check_shape(out, {2, 3})
    local w = ember.tensor({{1.0, 2.0, 3.0}, {-1.0, 0.5, 4.0}}, {dtype = "float64"})
    ;(out * w):sum():backward()
    h.close_tensors("mean's gradient", mean.grad, w:sum(1))
    local want = (w * (out:detach() - mean:detach()) / std:detach()):sum(2, true)
    h.close_tensors("std's gradient", std.grad, want, 1e-12)
    local m2 = ember.tensor({0.5}, {dtype = "float64", requires_grad = true})
    ember.normal(m2, 3.0):sum():backward()
    h.check(m2.grad, {1})
  end)
  it("refuses bad arguments", function()
    has(err(ember.normal, 0, -1, {3}), "normal: expected std >= 0.0, got std = -1")
    has(err(ember.normal, 0, 0 / 0, {3}), "normal: expected std >= 0.0")
    has(err(ember.normal, ember.zeros(2), ember.tensor({1.0, -1.0})), "normal: expected all elements of std >= 0.0")
    has(err(ember.normal, ember.zeros(2), -0.5), "normal: expected std >= 0.0")
    has(err(ember.normal, ember.zeros(3, {dtype = "int64"}), 1), "normal: expected a floating point mean, got int64")
    has(err(ember.normal, ember.zeros(3), ember.ones(4)), "normal: mean [3] and std [4] do not broadcast")
    has(err(ember.normal, 0, 1), "normal: a number mean and std need a size table")
    has(err(ember.normal, ember.zeros(2), 1, {3}), "normal: size and options are only for a number mean and std")
    has(err(ember.normal, 0, 1, {3}, {dtype = "int64"}), "normal: expected a floating point dtype, got int64")
    has(err(ember.normal, 0, 1, {-3}), "normal: size[1] must be a non-negative integer")
    has(err(ember.normal, "a", 1, {3}), "normal: mean must be a number, got string")
    has(err(ember.normal, 0, 1, {3}, {generator = 1}), "normal: option 'generator': expected an ember.Generator, got number")
  end)
end)

describe("bernoulli", function()
  local n = 100000
  it("draws 1 with the given probabilities, in input's dtype", function()
    ember.manual_seed(21)
    local p = ember.tensor({0.1, 0.5, 0.9}, {dtype = "float64"}):repeat_interleave(n)
    local b = ember.bernoulli(p)
    assert.are.equal("float64", b.dtype)
    for i, q in ipairs({0.1, 0.5, 0.9}) do
      local part = b[{{(i - 1) * n + 1, i * n}}]
      check_moments("bernoulli(" .. q .. ")", part, q, q * (1 - q), q * (1 - q) * (1 - 3 * q * (1 - q)))
    end
    assert.is_true(b:eq(0):logical_or(b:eq(1)):all():item())
    h.check(ember.bernoulli(ember.tensor({0.0, 1.0, 0.0, 1.0})), {0, 1, 0, 1})
  end)
  it("with a number p, for any dtype, as a function and a method", function()
    ember.manual_seed(22)
    local b = ember.bernoulli(ember.zeros(n, {dtype = "int64"}), 0.3)
    assert.are.equal("int64", b.dtype)
    check_moments("bernoulli(p = 0.3)", b, 0.3, 0.21, 0.21 * (1 - 3 * 0.21))
    local m = ember.zeros(2, 3, {dtype = "bool"}):bernoulli(1)
    assert.are.equal("bool", m.dtype)
    assert.is_true(m:all():item())
    assert.is_false(ember.ones(4):bernoulli({p = 0}):any():item())
  end)
  it("bernoulli_ fills self in place, with p a number (default 0.5) or a broadcast tensor", function()
    ember.manual_seed(23)
    local t = ember.empty(n, {dtype = "uint8"})
    assert.is_true(rawequal(t:bernoulli_(), t))
    check_moments("bernoulli_()", t, 0.5, 0.25, 0.0625)
    local f = ember.empty(2, n)
    f:bernoulli_(ember.tensor({{0.2}, {0.8}}))
    check_moments("bernoulli_(row 1)", f[1], 0.2, 0.16, 0.16 * (1 - 3 * 0.16))
    check_moments("bernoulli_(row 2)", f[2], 0.8, 0.16, 0.16 * (1 - 3 * 0.16))
    check_repeats(function() return ember.zeros(64):bernoulli_(0.5) end)
    check_repeats(function() return ember.bernoulli(ember.full({64}, 0.5)) end)
  end)
  it("gives no gradient", function()
    local p = ember.full({4}, 0.5, {requires_grad = true})
    assert.is_false(ember.bernoulli(p).requires_grad)
  end)
  it("refuses bad arguments", function()
    has(err(ember.bernoulli, ember.tensor({0.5, 1.5})), "bernoulli: expected all probabilities (input) in [0, 1]")
    has(err(ember.bernoulli, ember.tensor({0 / 0})), "bernoulli: expected all probabilities (input) in [0, 1]")
    has(err(ember.bernoulli, ember.tensor({1, 0})), "bernoulli: expected floating point probabilities (input), got int64")
    has(err(ember.bernoulli, ember.ones(2), 1.3), "bernoulli: expected p in [0, 1], got p = 1.3")
    has(err(ember.bernoulli, ember.ones(2), "x"), "bernoulli: p must be a number, got string")
    has(err(ember.bernoulli, 0.5), "bernoulli: input must be a tensor, got number")
    local t = ember.zeros(3)
    has(err(t.bernoulli_, t, -0.1), "bernoulli_: expected p in [0, 1], got p = -0.1")
    has(err(t.bernoulli_, t, ember.full({2}, 0.5)), "bernoulli_: p of shape [2] does not broadcast to self's shape [3]")
    has(err(t.bernoulli_, t, ember.tensor({1, 0, 1})), "bernoulli_: expected floating point probabilities (p), got int64")
    local g = ember.zeros(3, {requires_grad = true})
    has(err(g.bernoulli_, g, 0.5), "bernoulli_: in-place operation on a tensor that requires grad")
  end)
end)

describe("the in-place fills", function()
  local n = 200000
  it("exponential_: mean 1 / lambd, variance 1 / lambd^2, >= 0", function()
    ember.manual_seed(31)
    local t = ember.empty(n, {dtype = "float64"})
    assert.is_true(rawequal(t:exponential_(2.5), t))
    local l = 2.5
    check_moments("exponential_(2.5)", t, 1 / l, 1 / l ^ 2, 9 / l ^ 4)
    assert.is_true(t:min():item() >= 0)
    check_moments("exponential_()", ember.empty(n):exponential_(), 1, 1, 9)
    check_moments("exponential_({lambd = 4})", ember.empty(n):exponential_({lambd = 4}), 0.25, 1 / 16, 9 / 256)
    h.check(ember.empty(3):exponential_(math.huge), {0, 0, 0})
  end)
  it("geometric_: integers >= 1, mean 1 / p, variance (1 - p) / p^2", function()
    ember.manual_seed(32)
    local p = 0.2
    local t = ember.empty(n, {dtype = "int64"}):geometric_(p)
    assert.are.equal("int64", t.dtype)
    assert.is_true(t:min():item() >= 1)
    local q = 1 - p
    -- the fourth central moment of the geometric distribution: (1 - p)(p^2 - 9p + 9) / p^4
    check_moments("geometric_(0.2)", t, 1 / p, q / p ^ 2, q * (p * p - 9 * p + 9) / p ^ 4)
    local f = ember.empty(n):geometric_(0.7)
    assert.is_true(f:eq(f:floor()):all():item())
    -- P(X = 1) = p
    near("P(geometric(0.7) = 1)", f:eq(1):to("float64"):mean():item(), 0.7, math.sqrt(0.21 / n))
  end)
  it("log_normal_: log of the draws has the given mean and std", function()
    ember.manual_seed(33)
    local t = ember.empty(n, {dtype = "float64"}):log_normal_(-1, 0.5)
    assert.is_true(t:min():item() > 0)
    check_moments("log(log_normal_(-1, 0.5))", t:log(), -1, 0.25, 3 * 0.0625)
    -- the defaults mean 1, std 2: the median of the draws is e^1
    local d = ember.empty(n, {dtype = "float64"}):log_normal_()
    check_moments("log(log_normal_())", d:log(), 1, 4, 48)
  end)
  it("cauchy_: half the draws within sigma of the median", function()
    ember.manual_seed(34)
    local t = ember.empty(n, {dtype = "float64"}):cauchy_(3, 0.5)
    -- the sample median's standard error is pi sigma / (2 sqrt n)
    near("cauchy_ median", t:median():item(), 3, math.pi * 0.5 / (2 * math.sqrt(n)))
    local inside = t:sub(3):abs():le(0.5):to("float64"):mean():item()
    near("cauchy_ P(|x - median| <= sigma)", inside, 0.5, math.sqrt(0.25 / n))
    -- P(x <= median + 2 sigma) = 1/2 + atan(2) / pi
    local below = t:le(4):to("float64"):mean():item()
    local pr = 0.5 + math.atan(2) / math.pi
    near("cauchy_ P(x <= median + 2 sigma)", below, pr, math.sqrt(pr * (1 - pr) / n))
  end)
  it("keep dtype, shape and device and repeat under manual_seed", function()
    for _, d in ipairs(FLOATS) do
      for _, f in ipairs({function(t) return t:exponential_() end, function(t) return t:log_normal_() end,
                          function(t) return t:cauchy_() end, function(t) return t:geometric_(0.5) end,
                          function(t) return t:random_(10) end, function(t) return t:bernoulli_() end}) do
        local t = ember.zeros(3, 4, {dtype = d})
        local r = f(t)
        assert.is_true(rawequal(r, t))
        assert.are.equal(d, r.dtype)
        h.check_shape(r, {3, 4})
        assert.are.equal("cpu", r.device)
        check_repeats(function() return f(ember.zeros(16, {dtype = d})) end)
      end
    end
  end)
  it("refuse bad parameters, integer tensors where PyTorch does, and tensors autograd records", function()
    local t = ember.zeros(3)
    has(err(t.exponential_, t, 0), "exponential_: expected lambd > 0.0, got lambd = 0")
    has(err(t.exponential_, t, -1), "exponential_: expected lambd > 0.0")
    has(err(t.geometric_, t, 0), "geometric_: expected p in (0, 1), got p = 0")
    has(err(t.geometric_, t, 1), "geometric_: expected p in (0, 1), got p = 1")
    has(err(t.geometric_, t), "geometric_: p must be a number, got nil")
    has(err(t.log_normal_, t, 0, 0), "log_normal_: expected std > 0.0, got std = 0")
    has(err(t.cauchy_, t, 0, -1), "cauchy_: expected sigma > 0.0, got sigma = -1")
    has(err(t.cauchy_, t, "a"), "cauchy_: median must be a number, got string")
    local i = ember.zeros(3, {dtype = "int64"})
    has(err(i.exponential_, i), "exponential_: expected a floating point tensor, got int64")
    has(err(i.log_normal_, i), "log_normal_: expected a floating point tensor, got int64")
    has(err(i.cauchy_, i), "cauchy_: expected a floating point tensor, got int64")
    local b = ember.zeros(3, {dtype = "bool"})
    has(err(b.geometric_, b, 0.5), "geometric_: not supported for bool tensors")
    local g = ember.zeros(3, {requires_grad = true})
    for _, name in ipairs({"exponential_", "log_normal_", "cauchy_", "random_"}) do
      has(err(g[name], g), name .. ": in-place operation on a tensor that requires grad")
    end
    has(err((g * 2).exponential_, g * 2), "exponential_: in-place operation on a tensor that requires grad")
    -- under no_grad (initialisation) they are allowed
    ember.no_grad(function() g:exponential_() end)
    assert.is_true(g:min():item() >= 0)
    has(err(ember.Tensor.exponential_, 3), "exponential_: self must be a tensor, got number")
    -- a view whose elements share memory cannot be filled: copy_'s reason, under the op's name
    local e = ember.zeros(4, 1):expand(4, 3)
    has(err(e.random_, e), "random_: copy_: cannot write in place to [4,3]")
  end)
end)

describe("random_", function()
  local n = 100000
  -- uniform integers in [lo, hi]: all inside, integral, mean and variance of the discrete uniform
  local function check_uniform(what, t, lo, hi)
    local f = t:to("float64")
    assert(f:min():item() >= lo and f:max():item() <= hi, what .. ": a value outside [" .. lo .. ", " .. hi .. "]")
    assert(f:eq(f:floor()):all():item(), what .. ": a value that is not an integer")
    local m = (hi - lo + 1) * 1.0
    local var = (m * m - 1) / 12
    -- the fourth central moment of a discrete uniform of m values: (m^2 - 1)(3m^2 - 7) / 240
    check_moments(what, f, (lo + hi) / 2, var, (m * m - 1) * (3 * m * m - 7) / 240)
  end
  it("random_(to), random_(from, to) and the options table", function()
    ember.manual_seed(41)
    check_uniform("random_(10)", ember.empty(n, {dtype = "int32"}):random_(10), 0, 9)
    check_uniform("random_(-3, 4)", ember.empty(n):random_(-3, 4), -3, 3)
    check_uniform("random_({from = 5, to = 9})", ember.empty(n, {dtype = "float64"}):random_({from = 5, to = 9}), 5, 8)
    check_uniform("random_({to = 3})", ember.empty(n, {dtype = "uint8"}):random_({to = 3}), 0, 2)
    check_uniform("random_(100000, 300000)", ember.empty(n, {dtype = "int64"}):random_(100000, 300000), 100000, 299999)
  end)
  it("without bounds: PyTorch's range of each dtype", function()
    ember.manual_seed(42)
    check_uniform("uint8", ember.empty(n, {dtype = "uint8"}):random_(), 0, 255)
    check_uniform("bool", ember.empty(n, {dtype = "bool"}):random_(), 0, 1)
    check_uniform("float16", ember.empty(n, {dtype = "float16"}):random_(), 0, 2048)
    check_uniform("bfloat16", ember.empty(n, {dtype = "bfloat16"}):random_(), 0, 256)
    check_uniform("float32", ember.empty(n):random_(), 0, 2 ^ 24)
    check_uniform("int32", ember.empty(n, {dtype = "int32"}):random_(), 0, 2 ^ 31 - 1)
    -- the top is reached: 2^24 is in float32's range (PyTorch's to is 2^24 + 1)
    local small = ember.empty(4000):random_(2 ^ 24 - 1, 2 ^ 24 + 1)
    assert.is_true(small:eq(2 ^ 24):any():item() and small:eq(2 ^ 24 - 1):any():item())
    local big = ember.empty(n, {dtype = "float64"}):random_()
    assert.is_true(big:min():item() >= 0 and big:max():item() <= 2 ^ 53)
    near("float64 random_() mean / 2^53", big:mean():item() / 2 ^ 53, 0.5, math.sqrt(1 / 12 / n))
  end)
  it("int64: any bounds, exactly", function()
    ember.manual_seed(43)
    local all = ember.empty(n, {dtype = "int64"}):random_()
    assert.is_true(all:min():item() >= 0)
    near("int64 random_() mean / 2^63", all:to("float64"):mean():item() / 2 ^ 63, 0.5, math.sqrt(1 / 12 / n))
    local wide = ember.empty(n, {dtype = "int64"}):random_({from = math.mininteger})
    near("int64 random_({from = min}) mean / 2^63", wide:to("float64"):mean():item() / 2 ^ 63, 0, math.sqrt(1 / 3 / n))
    near("its share of negatives", wide:lt(0):to("float64"):mean():item(), 0.5, math.sqrt(0.25 / n))
    -- bounds that doubles cannot hold, near both ends of int64
    local top = ember.empty(3000, {dtype = "int64"}):random_({from = math.maxinteger - 2})
    local seen = {}
    for _, v in ipairs(top:tolist()) do
      assert(v >= math.maxinteger - 2, "below the range: " .. v)
      seen[v] = true
    end
    for v = math.maxinteger - 2, math.maxinteger do assert(seen[v], "never drawn: " .. v) end
    local lo = (1 << 62) + 1
    local mid = ember.empty(3000, {dtype = "int64"}):random_(lo, lo + 3)
    seen = {}
    for _, v in ipairs(mid:tolist()) do
      assert(v >= lo and v < lo + 3, "outside the range: " .. v)
      seen[v] = true
    end
    assert(seen[lo] and seen[lo + 1] and seen[lo + 2], "a value of the range never drawn")
    local bottom = ember.empty(3000, {dtype = "int64"}):random_(math.mininteger, math.mininteger + 2)
    assert.is_true(bottom:eq(math.mininteger):any():item() and bottom:eq(math.mininteger + 1):any():item())
    assert.is_true(bottom:le(math.mininteger + 1):all():item())
  end)
  it("is uniform over each value of a wide range (not only over coarse bins)", function()
    ember.manual_seed(44)
    -- 3 * 2^30 values: a multiply-shift of 32 random bits would draw the multiples of 3
    -- twice as often as the others; each residue must have 1/3 of the draws
    local t = ember.empty(n, {dtype = "int64"}):random_(3 * (1 << 30))
    for r = 0, 2 do
      near("residue " .. r .. " mod 3", t:remainder(3):eq(r):to("float64"):mean():item(), 1 / 3, math.sqrt(2 / 9 / n))
    end
    local u = ember.empty(n, {dtype = "int64"}):random_(-(1 << 40), 5 * (1 << 40) + 3)
    for r = 0, 2 do
      near("residue " .. r .. " mod 3 (wider)", u:remainder(3):eq(r):to("float64"):mean():item(), 1 / 3,
           math.sqrt(2 / 9 / n))
    end
    check_repeats(function() return ember.empty(64, {dtype = "int64"}):random_(-(1 << 40), 5 * (1 << 40) + 3) end)
  end)
  it("refuses empty ranges, bounds outside the dtype and non-integers", function()
    local f = ember.zeros(3)
    has(err(f.random_, f, 5, 3), "random_: expected from < to, got from = 5 >= to = 3")
    has(err(f.random_, f, 0), "random_: expected from < to, got from = 0 >= to = 0")
    has(err(f.random_, f, -5), "random_: expected from < to")
    has(err(f.random_, f, 1.5), "random_: to must be an integer, got 1.5")
    has(err(f.random_, f, 2 ^ 24 + 2), "random_: to - 1 = 16777217 is out of bounds for float32")
    has(err(f.random_, f, -(2 ^ 24) - 1, 0), "random_: from = -16777217 is out of bounds for float32")
    local u = ember.zeros(3, {dtype = "uint8"})
    has(err(u.random_, u, 300), "random_: to - 1 = 299 is out of bounds for uint8")
    has(err(u.random_, u, -1, 3), "random_: from = -1 is out of bounds for uint8")
    has(err(u.random_, u, {from = 256}), "random_: expected from <= 255 (the largest uint8), got from = 256")
    local b = ember.zeros(3, {dtype = "bool"})
    has(err(b.random_, b, 3), "random_: to - 1 = 2 is out of bounds for bool")
    local i = ember.zeros(3, {dtype = "int32"})
    has(err(i.random_, i, 2 ^ 31 + 1), "random_: to - 1 = 2147483648 is out of bounds for int32")
    has(err(i.random_, i, "x"), "random_: to must be an integer, got string")
    has(err(i.random_, i, 1, 2, 3), "random_: too many positional arguments")
  end)
end)

describe("the windows: options and bad input", function()
  it("take dtype, device and requires_grad", function()
    for _, name in ipairs({"hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"}) do
      local w = ember[name](5, {dtype = "float64", device = "cpu", requires_grad = true})
      assert.are.equal("float64", w.dtype)
      assert.are.equal("cpu", w.device)
      assert.is_true(w.requires_grad)
      assert.is_true(w.is_leaf)
      assert.are.equal(ember.get_default_dtype(), ember[name](3).dtype)
      -- the periodic window of n is the symmetric one of n + 1 without its last point
      h.close_tensors(name .. " periodic", ember[name](6, true, {dtype = "float64"}),
                      ember[name](7, false, {dtype = "float64"})[{{1, 6}}], 1e-15)
    end
  end)
  it("refuse a negative or non-integer length, integer dtypes and bad parameters", function()
    for _, name in ipairs({"hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"}) do
      has(err(ember[name], -1), name .. ": requires a non-negative window_length, got -1")
      has(err(ember[name], 2.5), name .. ": window_length must be an integer, got 2.5")
      has(err(ember[name], "x"), name .. ": window_length must be an integer, got string")
      has(err(ember[name], 4, {dtype = "int64"}), name .. ": expects a floating point dtype, got int64")
      has(err(ember[name], 4, 1), name .. ": periodic must be a boolean, got number")
      has(err(ember[name], 4, {window = 2}), name .. ": unknown option 'window'")
    end
    has(err(ember.hamming_window, 4, true, "a"), "hamming_window: alpha must be a number, got string")
    has(err(ember.kaiser_window, 4, true, "b"), "kaiser_window: beta must be a number, got string")
  end)
end)

describe("i0 and mvlgamma", function()
  it("i0: second derivatives through i1 (i1' = i0 - i1 / x)", function()
    local x = ember.tensor({-9.0, -2.5, 0.3, 4.0, 12.0}, {dtype = "float64", requires_grad = true})
    local g = ember.autograd.grad({ember.i0(x):sum()}, {x}, {create_graph = true})
    h.close_tensors("i0'", g, ember.special.i1(x:detach()), 1e-15)
    local gg = ember.autograd.grad({g:sum()}, {x})
    local d = x:detach()
    h.close_tensors("i0''", gg, ember.i0(d) - ember.special.i1(d) / d, 1e-14)
  end)
  it("i0_ and mvlgamma_ write into a float self; integers refused", function()
    local t = ember.tensor({0.0, 1.0}, {dtype = "float64"})
    assert.is_true(rawequal(t:i0_(), t))
    h.check(t, {1, ember.i0(ember.tensor(1.0, {dtype = "float64"})):item()}, 1e-15)
    local i = ember.tensor({1, 2})
    has(err(i.i0_, i), "i0_: result type float32 can't be cast to the desired output type int64")
    has(err(i.mvlgamma_, i, 2), "mvlgamma_: result type float32 can't be cast to the desired output type int64")
    local g = ember.ones(2, {requires_grad = true})
    has(err(g.i0_, g), "i0_: in-place operation on a tensor that requires grad")
  end)
  it("mvlgamma: bad p refused; integer input gives the default dtype", function()
    local x = ember.tensor({2.5, 3.0})
    has(err(ember.mvlgamma, x, 0), "mvlgamma: p must be >= 1, got 0")
    has(err(ember.mvlgamma, x, 1.5), "mvlgamma: p must be an integer, got 1.5")
    has(err(ember.mvlgamma, x), "mvlgamma: p must be an integer, got nil")
    has(err(ember.mvlgamma, 2.5, 2), "mvlgamma: input must be a tensor, got number")
    assert.are.equal("float32", ember.mvlgamma(ember.tensor({3, 4}), 2).dtype)
    has(err(ember.i0, "x"), "i0: input must be a tensor, got string")
  end)
end)

describe("poisson and binomial", function()
  it("draw with the right means and variances, repeatably from a generator", function()
    ember.manual_seed(12)
    local n = 20000
    local rates = ember.tensor({0.5, 4.0, 60.0}, {dtype = "float64"})
    local d = ember.poisson(rates:expand(n, 3):contiguous())
    assert.are.equal("float64", d.dtype)
    local m, v = d:mean(1):tolist(), d:var(1):tolist()
    for i, r in ipairs({0.5, 4.0, 60.0}) do
      assert.is_true(math.abs(m[i] - r) < 5 * math.sqrt(r / n), "mean " .. i)
      assert.is_true(math.abs(v[i] - r) < 0.08 * r, "variance " .. i)
    end
    assert.are.equal(0, d:frac():abs():sum():item())
    local b = ember.binomial(ember.full({n, 2}, 40.0, {dtype = "float64"}), ember.tensor({0.1, 0.6}, {dtype = "float64"}))
    local bm = b:mean(1):tolist()
    assert.is_true(math.abs(bm[1] - 4) < 5 * math.sqrt(3.6 / n) and math.abs(bm[2] - 24) < 5 * math.sqrt(9.6 / n))
    local g = ember.Generator()
    g:manual_seed(3)
    local a1 = ember.binomial(ember.full({8}, 30.0), ember.full({8}, 0.4), {generator = g})
    g:manual_seed(3)
    assert.is_true(a1:equal(ember.binomial(ember.full({8}, 30.0), ember.full({8}, 0.4), {generator = g})))
  end)

  it("take PyTorch's edge values and refuse what it refuses", function()
    local b = ember.binomial(ember.tensor({-3.0, 5.0, 5.0}), ember.tensor({0.5, 1.5, 0.0}))
    assert.are.same({0, 5, 0}, b:tolist())
    has(err(ember.poisson, ember.tensor({-1.0})), "poisson: invalid Poisson rate, expected rate to be non-negative")
    has(err(ember.poisson, ember.tensor({1, 2})), "poisson: input must be a floating-point tensor, got int64")
    has(err(ember.binomial, ember.tensor({1, 2}), ember.tensor({0.5, 0.5})),
        "binomial: count must be a floating-point tensor, got int64")
  end)
end)
