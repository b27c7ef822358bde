-- missing_ops_spec.lua — the functions ember composes in Lua over its ops
-- (lua/ember/composite.lua: mv, addmv, addr, addbmm, baddbmm, vdot, inner, ger, gcd,
-- lcm, fmin, fmax, float_power, sinc, signbit, ldexp, nextafter, rad2deg, deg2rad, isreal,
-- positive) and nn.functional's sigmoid, tanh, softmax's dim option, pixel_shuffle /
-- pixel_unshuffle, soft_margin_loss, multi_margin_loss, local_response_norm and rrelu
-- with their modules: values, dtypes and gradients against PyTorch 2.15
-- (fixtures/missing_ops.lua, written by scripts/fixtures/make_missing_ops_fixtures.py),
-- the method and in-place forms, rrelu's random slopes, and what bad input gets.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local F = nn.functional

local THIS_FILE = "missing_ops_spec.lua:"

describe("composed ops against PyTorch (fixtures)", function()
  for _, c in ipairs(h.fixture("missing_ops.lua")) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

describe("composed ops: names", function()
  local functions = {"mv", "addmv", "addr", "addbmm", "baddbmm", "vdot", "inner", "ger", "gcd", "lcm", "fmin", "fmax",
                     "float_power", "sinc", "signbit", "ldexp", "nextafter", "rad2deg", "deg2rad", "isreal",
                     "positive"}
  local inplace = {"addmv_", "addr_", "addbmm_", "baddbmm_", "gcd_", "lcm_", "sinc_", "ldexp_", "rad2deg_",
                   "deg2rad_", "float_power_", "nextafter_"}
  it("each is a function of ember and a tensor method, found before anything loaded them", function()
    -- a fresh process: the first use is a method call, which must load the file itself
    local src = "local e = require 'ember'; local t = e.tensor({1.0, 2.0}); assert(t:deg2rad_() == t); "
                .. "print(type(t.addmv_), type(e.mv))"
    local out = h.run_fresh(src)
    assert(out:find("function%sfunction"), out)
    local t = ember.zeros(2)
    for _, n in ipairs(functions) do
      assert.are.equal("function", type(ember[n]), n)
      assert.are.equal("function", type(t[n]), "t:" .. n)
    end
    for _, n in ipairs(inplace) do assert.are.equal("function", type(t[n]), "t:" .. n) end
    has(err(function() local _ = t.addmv_nope end), "no field or method 'addmv_nope'")
  end)
end)

describe("composed ops: in-place forms", function()
  local m = ember.tensor({{1.0, 2.0}, {3.0, 4.0}})
  local v = ember.tensor({1.0, -1.0})
  it("X_ writes X's result into self and returns self", function()
    local pairs_ = {
      {"addmv", {m, v, {beta = 2, alpha = 3}}, ember.tensor({0.5, 1.5})},
      {"addr", {v, v}, ember.ones(2, 2)},
      {"baddbmm", {ember.ones(2, 2, 3), ember.ones(2, 3, 2)}, ember.ones(2, 2, 2)},
      {"addbmm", {ember.ones(2, 2, 3), ember.ones(2, 3, 2), {alpha = 2}}, ember.ones(2, 2)},
      {"sinc", {}, ember.tensor({0.0, 0.5})},
      {"rad2deg", {}, ember.tensor({1.0, 2.0})},
      {"deg2rad", {}, ember.tensor({90.0, 180.0})},
      {"ldexp", {ember.tensor({2, 3})}, ember.tensor({1.0, -1.5})},
      {"gcd", {ember.tensor({6, 9})}, ember.tensor({4, 12})},
      {"lcm", {ember.tensor({6, 9})}, ember.tensor({4, 12})},
      {"float_power", {3}, ember.tensor({2.0, 0.5}, {dtype = "float64"})},
    }
    for _, c in ipairs(pairs_) do
      local name, extra, self = c[1], c[2], c[3]
      local want = ember[name](self, table.unpack(extra))
      local before = self
      local got = self[name .. "_"](self, table.unpack(extra))
      assert(rawequal(got, before), name .. "_ returns self")
      assert(got:eq(want:to(got.dtype)):all():item(), name .. "_: " .. tostring(got) .. " vs " .. tostring(want))
    end
  end)
  it("refuse a result of another shape or a dtype self cannot hold", function()
    has(err(function() local _ = ember.ones(1):addmv_(m, v) end),
               "addmv_: output with shape [1] doesn't match the broadcast shape [2]")
    has(err(function() local _ = ember.tensor({1, 2}):sinc_() end),
               "sinc_: result type float32 can't be cast to the desired output type int64")
    has(err(function() local _ = ember.ones(2):float_power_(2) end),
               "float_power_: the base has dtype float32 but the result requires float64")
    local leaf = ember.ones(2, {requires_grad = true})
    local e = err(function() local _ = leaf:rad2deg_() end)
    has(e, "rad2deg_: in-place operation on a tensor that requires grad")
    has(e, THIS_FILE)
  end)
end)

-- the values of t as exact doubles, zeros with their sign ("-0") and NaN as "nan"
local function exact_values(t)
  local out = {}
  for i, v in ipairs(t:to("float64"):tolist()) do
    out[i] = v ~= v and "nan" or (v == 0 and (1 / v < 0 and "-0" or "0")) or string.format("%.17g", v)
  end
  return out
end

describe("nextafter", function()
  it("bit for bit as PyTorch 2.15 in each float dtype, at every edge of the format", function()
    for _, c in ipairs(h.fixture("nextafter.lua")) do
      local a = ember.tensor(c.a, {dtype = c.dtype})
      local b = ember.tensor(c.b, {dtype = c.dtype})
      local got = exact_values(ember.nextafter(a, b))
      local want = exact_values(ember.tensor(c.out, {dtype = "float64"}))
      for i = 1, #want do
        assert(got[i] == want[i], string.format("%s: nextafter(%.17g, %.17g) = %s, PyTorch %s", c.dtype, c.a[i], c.b[i],
                                                got[i], want[i]))
      end
    end
  end)
  it("float32 and float64 against the integer step of their bits", function()
    -- an independent rule: for finite nonzero x, the next value away from zero is the
    -- float whose bits are one more
    ember.manual_seed(12)
    for _, f in ipairs({{"float32", "<f", "<i4"}, {"float64", "<d", "<i8"}}) do
      local x = (ember.randn(200, {dtype = "float64"}) * ember.exp2(ember.randint(-60, 60, {200}):double())):to(f[1])
      local up, down = ember.nextafter(x, ember.full_like(x, math.huge)), ember.nextafter(x, ember.full_like(x, -math.huge))
      local xs, us, ds = x:double():tolist(), up:double():tolist(), down:double():tolist()
      for i, v in ipairs(xs) do
        local bits = string.unpack(f[3], string.pack(f[2], v))
        local away = string.unpack(f[2], string.pack(f[3], bits + 1))
        local toward = string.unpack(f[2], string.pack(f[3], bits - 1))
        local want_up, want_down = v > 0 and away or toward, v > 0 and toward or away
        assert(us[i] == want_up and ds[i] == want_down,
               string.format("%s: %.17g: up %.17g (want %.17g), down %.17g (want %.17g)", f[1], v, us[i], want_up,
                             ds[i], want_down))
      end
    end
  end)
  it("broadcasts, promotes as PyTorch, has the method and in-place forms", function()
    local r = ember.nextafter(ember.tensor({{1.0}, {2.0}}), ember.tensor({0.0, 5.0}))
    assert.are.same({2, 2}, r.shape)
    assert.are.same({"0.99999994039535522", "1.0000001192092896", "1.9999998807907104", "2.0000002384185791"},
                    exact_values(r:reshape(-1)))
    assert.are.equal("float64", ember.nextafter(ember.tensor({1.0}), ember.tensor({2.0}, {dtype = "float64"})).dtype)
    assert.are.equal("float32", ember.nextafter(ember.tensor({1}), ember.tensor({2.0})).dtype)
    assert.are.equal("float32", ember.nextafter(ember.tensor(1.0, {dtype = "float64"}), ember.tensor({2.0})).dtype)
    local t = ember.tensor({1.0, -1.0})
    assert(rawequal(t:nextafter_(ember.zeros(2)), t))
    assert.are.same({"0.99999994039535522", "-0.99999994039535522"}, exact_values(t))
    assert.are.same(exact_values(t:nextafter(ember.ones(2))), {"1", "-0.99999988079071045"})
  end)
  it("passes the gradient to input and none to other, as PyTorch", function()
    local x = ember.tensor({1.0, 3.0, math.huge}, {requires_grad = true})
    local y = ember.tensor({2.0, 0.0, 0.0}, {requires_grad = true})
    local r = ember.nextafter(x, y)
    assert.are.equal("NextafterBackward", tostring(r.grad_fn))
    local loss = (r * ember.tensor({2.0, 3.0, 4.0})):sum()
    loss:backward()
    assert.are.same({2, 3, 4}, x.grad:tolist())
    assert.are.same({0, 0, 0}, y.grad:tolist())
  end)
  it("refuses integer inputs and non-tensors", function()
    local e = err(function() local _ = ember.nextafter(ember.tensor({1}), ember.tensor({2})) end)
    has(e, "nextafter: expected floating-point tensors, got int64 and int64")
    has(e, THIS_FILE)
    has(err(function() local _ = ember.nextafter(ember.ones(2), 1) end), "nextafter: other must be a tensor, got number")
  end)
end)

describe("composed ops: gradients", function()
  it("sinc's gradient at 0 is 0, and finite differences elsewhere", function()
    local x = ember.tensor({0.0, 0.3, -1.7}, {dtype = "float64", requires_grad = true})
    ember.sinc(x):sum():backward()
    assert.are.equal(0, x.grad:tolist()[1])
    h.gradcheck_ok(function(t) return ember.sinc(t) end, {ember.tensor({0.3, -1.7, 2.5}, {dtype = "float64"})})
  end)
  it("gradcheck of the matrix family on non-contiguous inputs", function()
    ember.manual_seed(3)
    local function r(...) return ember.randn({...}, {dtype = "float64"}) end
    h.gradcheck_ok(function(i, a, b) return ember.addmv(i, a:t(), b, {beta = 0.3, alpha = 2}) end, {r(3), r(4, 3), r(4)})
    h.gradcheck_ok(function(i, a, b) return ember.addbmm(i, a:transpose(2, 3), b) end, {r(2, 5), r(3, 4, 2), r(3, 4, 5)})
    h.gradcheck_ok(function(a, b) return ember.inner(a, b:t()) end, {r(2, 3), r(3, 4)})
  end)
end)

describe("composed ops: bad input", function()
  local m, v = ember.ones(2, 3), ember.ones(3)
  local cases = {
    {function() local _ = ember.mv(m, ember.ones(4)) end, "mv: [2, 3] @ [4]: inner dimensions differ (3 vs 4)"},
    {function() local _ = ember.mv(v, v) end, "mv: mat must be 2-D, got [3] (1-D)"},
    {function() local _ = ember.mv(m, v:double()) end, "mv: expected tensors of the same dtype, got float32, float64"},
    {function() local _ = ember.addmv(ember.ones(3), m, v) end,
     "addmv: input of shape [3] does not broadcast to the product's shape [2]"},
    {function() local _ = ember.addmv(ember.ones(2), m, v, 1, 2) end, "addmv: too many positional arguments"},
    {function() local _ = ember.addmv(ember.ones(2), m, v, {gamma = 1}) end, "addmv: unknown option 'gamma'"},
    {function() local _ = ember.addmv(ember.ones(2), m, v, {beta = "x"}) end, "addmv: beta must be a number, got string"},
    {function() local _ = ember.addmv(ember.ones(2, {dtype = "int64"}), ember.ones(2, 3, {dtype = "int64"}),
                                   ember.ones(3, {dtype = "int64"}), {alpha = 0.5}) end,
     "addmv: beta and alpha must be integers for int64 inputs"},
    {function() local _ = ember.baddbmm(ember.ones(2, 2, 2), ember.ones(2, 2, 3), ember.ones(3, 3, 2)) end,
     "baddbmm: batch1 [2, 2, 3] and batch2 [3, 3, 2]: expected [b, n, m] and [b, m, p]"},
    {function() local _ = ember.addbmm(ember.ones(2, 2), ember.ones(2, 2), ember.ones(2, 2, 2)) end,
     "addbmm: batch1 must be 3-D, got [2, 2] (2-D)"},
    {function() local _ = ember.vdot(v, ember.ones(2)) end, "vdot: vectors of different sizes: [3] and [2]"},
    {function() local _ = ember.vdot(v, v:double()) end, "vdot: expected both vectors to have the same dtype"},
    {function() local _ = ember.inner(m, ember.ones(2, 2)) end, "inner: the last dimensions of [2, 3] and [2, 2] differ (3 vs 2)"},
    {function() local _ = ember.ger(m, v) end, "ger: input must be 1-D, got [2, 3] (2-D)"},
    {function() local _ = ember.gcd(v, v) end, "gcd: expected integer tensors, got float32 and float32"},
    {function() local _ = ember.lcm(ember.tensor({true}), ember.tensor({1})) end, "lcm: expected integer tensors, got bool"},
    {function() local _ = ember.gcd(ember.tensor({1}), 3) end, "gcd: other must be a tensor, got number"},
    {function() local _ = ember.fmin(v, 1) end, "fmin: other must be a tensor, got number"},
    {function() local _ = ember.float_power(2, 3) end, "float_power: expected a tensor as input or exponent, got two numbers"},
    {function() local _ = ember.float_power("a", v) end, "float_power: input must be a tensor, got string"},
    {function() local _ = ember.sinc({1}) end, "sinc: input must be a tensor, got table"},
    {function() local _ = ember.positive(ember.tensor({true})) end, "positive: not supported for bool tensors"},
  }
  for i, c in ipairs(cases) do
    it(i .. ": " .. c[2], function()
      local e = err(c[1])
      has(e, c[2])
      has(e, THIS_FILE)
    end)
  end
  it("fmin broadcasts and refuses shapes that do not", function()
    local e = err(function() local _ = ember.fmin(ember.ones(2), ember.ones(3)) end)
    has(e, "[2]")
    has(e, "[3]")
  end)
end)

describe("nn.functional additions", function()
  it("rrelu in training draws slopes in [lower, upper] with ember's generator", function()
    local x = -ember.ones(2000, {dtype = "float64"})
    ember.manual_seed(11)
    local y = F.rrelu(x, 0.1, 0.3, true)
    local slopes = -y
    assert(slopes:min():item() >= 0.1 and slopes:max():item() <= 0.3)
    assert(math.abs(slopes:mean():item() - 0.2) < 0.01, "mean slope " .. slopes:mean():item())
    assert(slopes:std():item() > 0.05, "the slopes vary")
    ember.manual_seed(11)
    assert(F.rrelu(x, {lower = 0.1, upper = 0.3, training = true}):eq(y):all():item(), "the same seed repeats them")
    -- positive inputs pass through; the gradient is the drawn slope
    local z = ember.tensor({-2.0, 3.0, -1.0}, {dtype = "float64", requires_grad = true})
    ember.manual_seed(5)
    local out = F.rrelu(z, 0.2, 0.4, true)
    out:sum():backward()
    local g, o = z.grad:tolist(), out:tolist()
    assert.are.equal(3, o[2])
    assert.are.equal(1, g[2])
    assert(math.abs(g[1] - o[1] / -2) < 1e-12 and math.abs(g[3] - o[3] / -1) < 1e-12)
  end)
  it("nn.RReLU follows train and eval", function()
    local m = nn.RReLU(0.1, 0.3)
    assert.are.equal("RReLU(lower=0.1, upper=0.3)", tostring(m):match("^[^\n]*"))
    local x = -ember.ones(500, {dtype = "float64"})
    assert(m(x):std():item() > 0.01)
    m:eval()
    h.check(m(ember.tensor({-1.0, 2.0})), {-0.2, 2}, 1e-6)
    has(err(function() local _ = nn.RReLU(0.5, 0.1) end), "RReLU: lower (0.5) must not be greater than upper (0.1)")
    has(err(function() local _ = F.rrelu(ember.tensor({1, 2})) end), "rrelu: expected a floating-point input")
  end)
  it("modules of the new functions match them", function()
    ember.manual_seed(2)
    local x = ember.randn(2, 8, 2, 2)
    assert(nn.PixelShuffle(2)(x):eq(F.pixel_shuffle(x, 2)):all():item())
    assert(nn.PixelUnshuffle(2)(nn.PixelShuffle(2)(x)):eq(x):all():item())
    assert(nn.LocalResponseNorm(3, 0.1)(x):eq(F.local_response_norm(x, 3, 0.1)):all():item())
    local y = ember.tensor({{1.0, -1.0}, {-1.0, 1.0}})
    local s = ember.tensor({{0.3, 2.0}, {-0.5, 1.0}})
    assert.are.equal(F.soft_margin_loss(s, y, {reduction = "sum"}):item(), nn.SoftMarginLoss({reduction = "sum"})(s, y):item())
    local cls = ember.tensor({2, 1})
    assert.are.equal(F.multi_margin_loss(s, cls, 2):item(), nn.MultiMarginLoss({p = 2})(s, cls):item())
    assert.are.equal("PixelShuffle(upscale_factor=2)", tostring(nn.PixelShuffle(2)):match("^[^\n]*"))
    assert.are.equal("LocalResponseNorm(3, alpha=0.0001, beta=0.75, k=1)", tostring(nn.LocalResponseNorm(3)):match("^[^\n]*"))
  end)
  local bad = {
    {function() local _ = F.softmax(ember.ones(2)) end, "softmax: dim is required"},
    {function() local _ = F.softmax(ember.ones(2), 1, {dim = 1}) end, "softmax: got multiple values for argument 'dim'"},
    {function() local _ = F.log_softmax(ember.ones(2), {axis = 1}) end, "log_softmax: unknown option 'axis'"},
    {function() local _ = F.sigmoid(3) end, "sigmoid: input must be a tensor, got number"},
    {function() local _ = F.pixel_shuffle(ember.ones(1, 4, 2, 2), 3) end,
     "pixel_shuffle: the channels of [1, 4, 2, 2] (4) must be divisible by upscale_factor^2 (9)"},
    {function() local _ = F.pixel_shuffle(ember.ones(4, 2), 2) end, "pixel_shuffle: expected at least 3 dimensions"},
    {function() local _ = F.pixel_shuffle(ember.ones(4, 2, 2), 1.5) end, "pixel_shuffle: upscale_factor must be a positive integer, got 1.5"},
    {function() local _ = F.pixel_unshuffle(ember.ones(1, 3, 2), 2) end,
     "pixel_unshuffle: the height and width of [1, 3, 2] must be divisible by downscale_factor (2)"},
    {function() local _ = F.soft_margin_loss(ember.ones(2), ember.ones(3)) end, "soft_margin_loss: input shape [2] and target shape [3] differ"},
    {function() local _ = F.multi_margin_loss(ember.ones(2, 3), ember.tensor({1, 4})) end,
     "multi_margin_loss: target values must be class indices in 1..3, got values in 1..4"},
    {function() local _ = F.multi_margin_loss(ember.ones(2, 3), ember.tensor({1.0, 2.0})) end,
     "multi_margin_loss: class-index targets must be an integer tensor"},
    {function() local _ = F.multi_margin_loss(ember.ones(2, 3), ember.tensor({1, 2}), 3) end, "multi_margin_loss: p must be 1 or 2, got 3"},
    {function() local _ = F.multi_margin_loss(ember.ones(2, 3), ember.tensor({1, 2}), {weight = ember.ones(2)}) end,
     "multi_margin_loss: weight must have one entry per class, shape [3], got [2]"},
    {function() local _ = F.local_response_norm(ember.ones(2, 3), 2) end, "local_response_norm: expected at least 3 dimensions"},
    {function() local _ = F.local_response_norm(ember.ones(2, 3, 2), 0) end, "local_response_norm: size must be a positive integer, got 0"},
  }
  for i, c in ipairs(bad) do
    it("bad input " .. i .. ": " .. c[2], function()
      local e = err(c[1])
      has(e, c[2])
      has(e, THIS_FILE)
    end)
  end
end)

describe("plot.plot", function()
  it("is plot.line under matplotlib's name, its errors naming plot.plot", function()
    local e = err(function() local _ = ember.plot.plot({1, 2, 3}, {show = false, colour = "red"}) end)
    has(e, "plot.plot: unknown option colour")
  end)
end)
