-- half_spec.lua — float16 and bfloat16 as full dtypes on the CPU: the rounding of the
-- conversions (hand-computed bit patterns and PyTorch's), every op family forward and
-- backward against the same op in float32 on the same rounded inputs, and PyTorch 1.13's
-- own bfloat16/float16 results (tests/lua/fixtures/half_ops.lua, written by
-- scripts/fixtures/make_half_fixtures.py).
local ember = require "ember"
local F = ember.nn.functional
local H = require "helpers"

local LOW = {"bfloat16", "float16"}
-- PyTorch's assert_close defaults for the dtype
local RTOL = {bfloat16 = 1.6e-2, float16 = 1e-3}
local ATOL = 1e-5

-- the float64 values of a float32 tensor made from numbers, cast to dtype d
local function rounded(values, d)
  return ember.tensor(values, {dtype = "float32"}):to(d):to("float64"):tolist()
end

local function bits_equal(got, want)
  for i = 1, #want do
    local g, w = got[i], want[i]
    local same = (g ~= g and w ~= w) or (g == w and (g ~= 0 or 1 / g == 1 / w))
    assert(same, string.format("value %d: expected %s, got %s", i, tostring(w), tostring(g)))
  end
end

describe("float16/bfloat16 rounding", function()
  local nan = 0 / 0
  it("bfloat16 rounds to nearest, ties to even, keeps NaN, inf and subnormals", function()
    local x = {1 + 2^-8, 1 + 3 * 2^-8, 1 + 2^-8 + 2^-20, -(1 + 2^-8), 1 + 2^-7 + 2^-8,
               3.4028234663852886e38, 3.3895313892515355e38, -3.4028234663852886e38,
               2^-133, 2^-134, 3 * 2^-134, 2^-126, nan, math.huge, -math.huge, -0.0}
    local want = {1, 1 + 2^-6, 1 + 2^-7, -1, 1 + 2^-6,
                  math.huge, 3.3895313892515355e38, -math.huge,
                  2^-133, 0, 2^-132, 2^-126, nan, math.huge, -math.huge, -0.0}
    bits_equal(rounded(x, "bfloat16"), want)
  end)

  it("float16 rounds to nearest, ties to even, overflows to inf and rounds subnormals", function()
    local x = {1 + 2^-11, 1 + 3 * 2^-11, 1 + 2^-11 + 2^-20, 65504, 65519, 65520, 1e5, -1e5,
               2^-24, 2^-25, 2^-25 + 2^-40, 3 * 2^-25, 2^-14, 2^-14 - 2^-25, 2^-26, -2^-26,
               nan, math.huge, -0.0}
    local want = {1, 1 + 2^-9, 1 + 2^-10, 65504, 65504, math.huge, math.huge, -math.huge,
                  2^-24, 0, 2^-24, 2^-23, 2^-14, 2^-14, 0, -0.0,
                  nan, math.huge, -0.0}
    bits_equal(rounded(x, "float16"), want)
  end)

  it("matches PyTorch's float32 -> bfloat16/float16 conversions", function()
    local c = H.fixture("half_ops.lua").conversions
    for _, d in ipairs(LOW) do bits_equal(rounded(c.input, d), c[d]) end
  end)

  it("round-trips every float16 and bfloat16 value exactly through float32", function()
    -- all 65536 bit patterns: widening is exact, so narrowing gives the same values back
    for _, d in ipairs(LOW) do
      local n = 4096
      local x = ember.arange(0, n, {dtype = "float32"}):mul(2^-12):sub(0.5):mul(2 ^ (d == "float16" and 17 or 120))
      local once = x:to(d)
      local twice = once:to("float32"):to(d)
      assert.is_true(once:to("float64"):eq(twice:to("float64")):all():item() or false)
    end
  end)
end)

-- ---- op families against float32 ------------------------------------------------------

-- The worst error of lo against hi (float32 on the same rounded inputs), norm-wise: relative
-- to the reference's largest magnitude, as an output that cancels to near zero carries
-- the rounding of its larger terms.
local function close(lo, hi, d, slack, what)
  local a, b = lo:detach():to("float64"), hi:detach():to("float64")
  assert(H.same(lo.shape, hi.shape), what .. ": shape " .. H.show(lo.shape) .. " vs " .. H.show(hi.shape))
  if a:numel() == 0 then return end
  local err = (a - b):abs():amax():item()
  local scale = b:abs():amax():item()
  local tol = ATOL + RTOL[d] * (slack or 1) * scale
  assert(err <= tol, string.format("%s [%s]: error %.3g above %.3g (scale %.3g)", what, d, err, tol, scale))
end

-- inputs: makers of float32 tensors (or non-float values); fn(inputs...) -> tensor.
-- Runs fn on the inputs rounded to d (requiring grad) and on the same values in
-- float32, compares the results (dtype d expected) and the gradients of sum(y * g).
local function against_f32(what, inputs, fn, opts)
  opts = opts or {}
  for _, d in ipairs(LOW) do
    local base = {}
    for i, mk in ipairs(inputs) do base[i] = type(mk) == "function" and mk() or mk end
    local function args(dt)
      local r = {}
      for i, t in ipairs(base) do
        if ember.is_tensor(t) and t:is_floating_point() then
          r[i] = t:to(d):to(dt)
          if not opts.no_grad then r[i]:requires_grad_(true) end
        else
          r[i] = t
        end
      end
      return r
    end
    local lo, hi = args(d), args("float32")
    local ylo, yhi = fn(table.unpack(lo)), fn(table.unpack(hi))
    assert.are.equal(opts.dtype or d, ylo.dtype)
    close(ylo, yhi, d, opts.slack, what)
    if not opts.no_grad then
      local g = ember.randn(yhi.shape):to(d)
      ylo:backward(g)
      yhi:backward(g:to("float32"))
      for i = 1, #lo do
        if ember.is_tensor(lo[i]) and lo[i].requires_grad then
          assert(lo[i].grad, what .. ": no gradient for input " .. i)
          assert.are.equal(d, lo[i].grad.dtype)
          close(lo[i].grad, hi[i].grad, d, opts.gslack or 4, what .. " gradient " .. i)
        end
      end
    end
  end
end

local function rn(...) local s = {...} return function() return ember.randn(table.unpack(s)) end end
local function pos(...) local s = {...} return function() return ember.rand(table.unpack(s)) + 0.5 end end
local function idx(t) return ember.tensor(t, {dtype = "int64"}) end

describe("float16/bfloat16 ops against float32 on the same inputs", function()
  before_each(function() ember.manual_seed(17) end)

  -- Gradients pass through several roundings (the output's gradient, then each
  -- intermediate of a composed backward), hence gslack 4 by default.
  it("unary ops and activations", function()
    for _, u in ipairs({"neg", "abs", "exp", "tanh", "sigmoid", "relu", "sin", "cos", "erf", "expm1",
                        "square", "atan", "sinh"}) do
      against_f32(u, {rn(5, 7)}, function(x) return x[u](x) end)
    end
    for _, u in ipairs({"log", "sqrt", "rsqrt", "reciprocal", "log1p", "log2"}) do
      against_f32(u, {pos(5, 7)}, function(x) return x[u](x) end)
    end
    for _, a in ipairs({"gelu", "silu", "mish", "elu", "selu", "softplus", "hardswish", "leaky_relu",
                        "logsigmoid", "hardtanh", "softsign"}) do
      against_f32("F." .. a, {rn(5, 7)}, function(x) return F[a](x) end)
    end
  end)

  it("binary and ternary ops, contiguous, strided and broadcast", function()
    for _, b in ipairs({"add", "sub", "mul", "maximum", "minimum", "atan2"}) do
      against_f32(b, {rn(4, 6), rn(6)}, function(x, y) return x[b](x, y) end)                   -- broadcast
      against_f32(b .. " strided", {rn(6, 4), rn(4, 6)}, function(x, y) return x:t()[b](x:t(), y) end)
    end
    against_f32("div", {rn(4, 6), pos(4, 1)}, function(x, y) return x / y end)
    against_f32("pow", {pos(4, 6), rn(6)}, function(x, y) return x:pow(y) end)
    against_f32("scalar", {rn(4, 6)}, function(x) return x * 2.5 + 1 end)
    against_f32("where", {rn(4, 6), rn(6)}, function(x, y) return ember.where(x:gt(0), x, y) end)
    against_f32("clamp", {rn(4, 6)}, function(x) return x:clamp(-0.5, 0.5) end)
    against_f32("lerp", {rn(4, 6), rn(4, 6)}, function(x, y) return x:lerp(y, 0.3) end)
    against_f32("addcmul", {rn(4, 6), rn(4, 6), rn(6)}, function(x, y, z) return x:addcmul(y, z, {value = 0.5}) end)
    for _, c in ipairs({"eq", "lt", "ge"}) do
      against_f32(c, {rn(4, 6), rn(6)}, function(x, y) return x[c](x, y) end, {no_grad = true, dtype = "bool"})
    end
  end)

  it("unary ops are the float32 op rounded once, bit for bit, in every layout", function()
    for _, dt in ipairs({"bfloat16", "float16"}) do
      local base = (ember.randn(6, 8) * 2):to(dt)
      local pos = (ember.rand(6, 8) + 0.25):to(dt)
      for _, c in ipairs({{"contiguous", base, pos}, {"transposed", base:t(), pos:t()},
                          {"strided", base:narrow(2, 2, 4), pos:narrow(2, 3, 4)}}) do
        local x, p = c[2], c[3]
        for _, op in ipairs({"neg", "abs", "exp", "tanh", "sigmoid", "relu", "sin", "erf", "expm1", "square",
                             "floor", "sign", "logical_not"}) do
          local got, want = x[op](x), x:float()[op](x:float())
          if want.dtype ~= "bool" then want = want:to(dt) end
          assert.are.equal(want.dtype, got.dtype, dt .. " " .. op .. " " .. c[1])
          assert.is_true(ember.equal(got, want), dt .. " " .. op .. " " .. c[1])
        end
        for _, op in ipairs({"log", "sqrt", "rsqrt", "reciprocal", "log1p"}) do
          assert.is_true(ember.equal(p[op](p), p:float()[op](p:float()):to(dt)), dt .. " " .. op .. " " .. c[1])
        end
      end
    end
  end)

  it("binary ops are the float32 op rounded once, bit for bit, in every layout", function()
    local ARITH = {
      add = function(a, b) return a + b end, sub = function(a, b) return a - b end,
      mul = function(a, b) return a * b end, div = function(a, b) return a / b end,
    }
    local OTHER = {maximum = true, minimum = true, atan2 = true, eq = true, lt = true, ge = true}
    for _, dt in ipairs({"bfloat16", "float16"}) do
      local function h(t) return t:to(dt) end
      local function f(v) return type(v) == "number" and v or v:float() end
      local base, other = h(ember.randn(6, 8) * 3), h(ember.randn(6, 8) * 3)
      local cases = {
        {"same shape", base, other}, {"row broadcast", base, h(ember.randn(8))},
        {"column broadcast", base, h(ember.randn(6, 1))}, {"transposed", base:t(), other:t()},
        {"strided slices", base:narrow(2, 2, 4), other:narrow(2, 3, 4)}, {"0-d half", base, h(ember.tensor(0.7))},
        {"Lua number right", base, 1.0048828125}, {"Lua number left", 0.1, base},
        {"int tensor", base, ember.arange(1, 9)},
      }
      for _, c in ipairs(cases) do
        local a, b = c[2], c[3]
        local function check(name, got, want)
          if want.dtype ~= "bool" then want = want:to(dt) end
          assert.are.equal(want.dtype, got.dtype, dt .. " " .. name .. " " .. c[1])
          assert.is_true(ember.equal(got, want), dt .. " " .. name .. " " .. c[1])
        end
        for name, fn in pairs(ARITH) do check(name, fn(a, b), fn(f(a), f(b))) end
        if type(a) ~= "number" and type(b) ~= "number" then
          for name in pairs(OTHER) do check(name, ember[name](a, b), ember[name](f(a), f(b))) end
        end
      end
      -- hand values: 1 + 2^-9 is under half of bfloat16's spacing at 1 (2^-7) and rounds to 1;
      -- a Lua number stays float32: 3 x 1.0048828125 = 3.0146484375 rounds to 3.015625 (spacing 2^-6)
      if dt == "bfloat16" then
        assert.are.equal(1, (h(ember.ones(3)) + 2^-9)[1]:item())
        assert.are.equal(3.015625, (h(ember.tensor({3})) * 1.0048828125)[1]:item())
        assert.are.equal(1 + 2^-7, (h(ember.ones(1)) + 0.75 * 2^-7)[1]:item())
      end
    end
  end)

  it("reductions and scans", function()
    -- sums of up to 50 terms round once at the end (float32 accumulation)
    for _, r in ipairs({"sum", "mean", "amax", "amin", "logsumexp", "var", "std", "norm"}) do
      against_f32(r, {rn(6, 50)}, function(x) return x[r](x, 2) end)
      against_f32(r .. " strided", {rn(50, 6)}, function(x) return x:t()[r](x:t(), 2) end)
    end
    against_f32("sum all", {rn(6, 50)}, function(x) return x:sum() end)
    against_f32("mean all", {rn(6, 50)}, function(x) return x:mean() end)
    against_f32("prod", {rn(4, 6)}, function(x) return (x * 0.2 + 1):prod(2) end)
    against_f32("max dim", {rn(4, 6)}, function(x) local v = x:max(2) return v end)
    against_f32("cumsum", {rn(4, 6)}, function(x) return x:cumsum(2) end)
    against_f32("cumprod", {rn(4, 6)}, function(x) return (x * 0.2 + 1):cumprod(2) end)
    against_f32("sort", {rn(4, 6)}, function(x) local v = x:sort(2) return v end)
    against_f32("topk", {rn(4, 6)}, function(x) local v = x:topk(3, 2) return v end)
    local wide = function() return ember.randn(4, 30) * 3 end
    against_f32("softmax", {wide}, function(x) return F.softmax(x, 2) end)
    against_f32("log_softmax", {wide}, function(x) return F.log_softmax(x, 2) end)
    against_f32("argmax", {rn(4, 6)}, function(x) return x:argmax(2) end, {no_grad = true, dtype = "int64"})
  end)

  it("index, gather, scatter, masked ops and embedding", function()
    against_f32("index_select", {rn(4, 6)}, function(x) return x:index_select(2, idx({1, 3, 3})) end)
    against_f32("gather", {rn(4, 6)}, function(x) return x:gather(2, idx({{1, 2}, {2, 3}, {1, 1}, {6, 5}})) end)
    against_f32("scatter_add", {rn(4, 6), rn(4, 2)}, function(x, s)
      return x:scatter_add(2, idx({{1, 2}, {2, 3}, {1, 1}, {6, 5}}), s) end)
    against_f32("scatter", {rn(4, 6), rn(4, 2)}, function(x, s)
      return x:scatter(2, idx({{1, 2}, {2, 3}, {1, 4}, {6, 5}}), s) end)
    against_f32("index_add", {rn(4, 6), rn(4, 2)}, function(x, s) return x:index_add(2, idx({1, 3}), s) end)
    against_f32("masked_fill", {rn(4, 6)}, function(x) return x:masked_fill(x:gt(0), 1.5) end)
    against_f32("masked_select", {rn(4, 6)}, function(x) return x:masked_select(x:gt(0)) end)
    against_f32("advanced index", {rn(4, 6)}, function(x) return x[{idx({1, 3, 1})}] end)
    against_f32("embedding", {rn(10, 4)}, function(w) return F.embedding(idx({{1, 2}, {3, 10}}), w) end)
    against_f32("cat", {rn(2, 3), rn(4, 3)}, function(a, b) return ember.cat({a, b}, 1) end)
  end)

  it("matmul, bmm, linear, einsum (float32 accumulation)", function()
    against_f32("mm", {rn(8, 40), rn(40, 5)}, function(a, b) return a:mm(b) end)
    against_f32("mm strided", {rn(40, 8), rn(5, 40)}, function(a, b) return a:t():mm(b:t()) end)
    against_f32("matmul broadcast", {rn(3, 8, 16), rn(16, 5)}, function(a, b) return a:matmul(b) end)
    against_f32("bmm", {rn(3, 8, 16), rn(3, 16, 5)}, function(a, b) return a:bmm(b) end)
    against_f32("linear", {rn(4, 16), rn(5, 16), rn(5)}, function(x, w, b) return F.linear(x, w, b) end)
    against_f32("einsum", {rn(3, 4), rn(4, 5)}, function(a, b) return ember.einsum("ij,jk->ik", a, b) end)
    against_f32("addmm", {rn(5), rn(4, 8), rn(8, 5)}, function(c, a, b) return ember.addmm(c, a, b) end)
  end)

  it("convolutions 1-3d, grouped and transposed", function()
    against_f32("conv1d", {rn(2, 3, 10), rn(4, 3, 3), rn(4)}, function(x, w, b) return ember.conv1d(x, w, b) end)
    against_f32("conv2d", {rn(2, 3, 9, 9), rn(4, 3, 3, 3), rn(4)},
                function(x, w, b) return ember.conv2d(x, w, b, 2, 1) end)
    against_f32("conv2d strided input", {rn(2, 3, 9, 9), rn(4, 3, 3, 3)},
                function(x, w) return ember.conv2d(x:transpose(3, 4), w) end)
    against_f32("conv2d groups", {rn(2, 4, 8, 8), rn(4, 2, 3, 3)},
                function(x, w) return ember.conv2d(x, w, nil, 1, 1, 1, 2) end)
    against_f32("conv3d", {rn(1, 2, 5, 5, 5), rn(3, 2, 3, 3, 3)}, function(x, w) return ember.conv3d(x, w) end)
    against_f32("conv_transpose1d", {rn(2, 3, 5), rn(3, 4, 3)}, function(x, w) return ember.conv_transpose1d(x, w) end)
    against_f32("conv_transpose2d", {rn(2, 3, 5, 5), rn(3, 4, 3, 3), rn(4)},
                function(x, w, b) return ember.conv_transpose2d(x, w, b, 2) end)
    against_f32("conv_transpose3d", {rn(1, 2, 3, 3, 3), rn(2, 2, 2, 2, 2)},
                function(x, w) return ember.conv_transpose3d(x, w) end)
  end)

  it("pooling: max, average, adaptive", function()
    against_f32("max_pool1d", {rn(2, 3, 8)}, function(x) return ember.max_pool1d(x, 2) end)
    against_f32("max_pool2d", {rn(2, 3, 8, 8)}, function(x) return ember.max_pool2d(x, 3, 2, 1) end)
    against_f32("max_pool3d", {rn(1, 2, 4, 4, 4)}, function(x) return ember.max_pool3d(x, 2) end)
    against_f32("avg_pool1d", {rn(2, 3, 8)}, function(x) return ember.avg_pool1d(x, 2) end)
    against_f32("avg_pool2d", {rn(2, 3, 8, 8)}, function(x) return ember.avg_pool2d(x, 3, 2, 1) end)
    against_f32("avg_pool2d strided", {rn(2, 3, 8, 8)}, function(x) return ember.avg_pool2d(x:transpose(3, 4), 2) end)
    against_f32("adaptive_avg_pool2d", {rn(2, 3, 7, 7)}, function(x) return ember.adaptive_avg_pool2d(x, 3) end)
    against_f32("adaptive_max_pool2d", {rn(2, 3, 7, 7)}, function(x) return ember.adaptive_max_pool2d(x, 3) end)
  end)

  it("max pooling picks the same elements and indices as float32", function()
    for _, d in ipairs(LOW) do
      local x = ember.randn(2, 3, 8, 8):to(d)
      local v, i = ember.max_pool2d(x, 2, nil, 0, 1, false, true)
      local v32, i32 = ember.max_pool2d(x:float(), 2, nil, 0, 1, false, true)
      assert.is_true(v:float():eq(v32):all():item())
      assert.is_true(i:eq(i32):all():item())
    end
  end)

  it("batch, layer, group and instance norm", function()
    against_f32("batch_norm", {rn(4, 3, 5, 5), rn(3), rn(3)},
                function(x, w, b) return ember.batch_norm(x, nil, nil, w, b, true) end)
    against_f32("batch_norm eval", {rn(4, 3, 5), rn(3), rn(3)}, function(x, w, b)
      return ember.batch_norm(x, ember.zeros(3):to(x.dtype), ember.ones(3):to(x.dtype), w, b, false) end)
    against_f32("layer_norm", {rn(4, 3, 16), rn(16), rn(16)},
                function(x, w, b) return ember.layer_norm(x, {16}, w, b) end)
    against_f32("layer_norm strided", {rn(16, 4)}, function(x) return ember.layer_norm(x:t(), {16}) end)
    against_f32("group_norm", {rn(4, 4, 5), rn(4), rn(4)},
                function(x, w, b) return ember.group_norm(x, 2, w, b) end)
    against_f32("instance_norm", {rn(2, 3, 5, 5)}, function(x) return F.instance_norm(x) end)
  end)

  it("normalises an input with a large offset from float32 statistics", function()
    -- a mean rounded to bfloat16 (100 +- 0.25) would shift every centred value by up to a
    -- quarter of the spread; kept in float32 the gradient matches float32's
    against_f32("layer_norm offset", {function() return ember.randn(4, 64) + 100 end},
                function(x) return ember.layer_norm(x, {64}) end)
    against_f32("batch_norm offset", {function() return ember.randn(16, 3) * 0.5 + 100 end},
                function(x) return ember.batch_norm(x, nil, nil, nil, nil, true) end)
  end)

  it("batch norm of a low-precision input with float32 parameters (PyTorch's mixed dtypes)", function()
    -- the input's dtype out, float32 statistics and parameter gradients; the values are
    -- float32 batch norm's on the same rounded input, rounded once (hand check on top)
    for _, d in ipairs(LOW) do
      local x = ember.tensor({{1, 2}, {3, 6}}, {dtype = d, requires_grad = true})
      local w = ember.tensor({2.0, 1.0}, {requires_grad = true})
      local b = ember.tensor({0.0, 1.0}, {requires_grad = true})
      local rm, rv = ember.zeros(2), ember.ones(2)
      local y = ember.batch_norm(x, rm, rv, w, b, true, 0.5)
      assert.are.equal(d, y.dtype)
      -- column 1: mean 2, biased var 1 -> x_hat -+1/sqrt(1 + 1e-5); column 2: mean 4, var 4
      local r1, r2 = 1 / math.sqrt(1 + 1e-5), 2 / math.sqrt(4 + 1e-5)
      H.check(y:double(), {{-2 * r1, 1 - r2}, {2 * r1, 1 + r2}}, RTOL[d])
      H.check(rm, {1, 2}, 0)                  -- 0.5 * 0 + 0.5 * mean
      H.check(rv, {1.5, 4.5}, 1e-6)           -- 0.5 * 1 + 0.5 * unbiased var (2, 8)
      assert.are.equal("float32", rm.dtype)
      y:backward(ember.tensor({{1, 0}, {0, 1}}, {dtype = d}))
      assert.are.equal(d, x.grad.dtype)
      assert.are.equal("float32", w.grad.dtype)
      assert.are.equal("float32", b.grad.dtype)
      H.check(b.grad, {1, 1}, 0)
      H.check(w.grad, {-r1, r2}, 1e-6)
      -- against float32 batch norm on the same input
      local xf = x:detach():float():requires_grad_(true)
      local wf, bf = w:detach():requires_grad_(true), b:detach():requires_grad_(true)
      local yf = ember.batch_norm(xf, nil, nil, wf, bf, true)
      assert.is_true(y:eq(yf:to(d)):all():item())
      yf:backward(ember.tensor({{1, 0}, {0, 1}}))
      assert.is_true(x.grad:eq(xf.grad:to(d)):all():item())
      -- mixed parameters (some float32, some the input's dtype) are refused
      H.has(H.err(function() return ember.batch_norm(x, nil, nil, w, b:to(d), true) end),
            "batch_norm: bias (" .. d .. ") must be float32 as the other parameters are, or all of them the "
            .. "input's dtype " .. d)
    end
  end)


  it("layer norm and group norm of a low-precision input with float32 parameters", function()
    -- as batch norm: the input's dtype out, float32 parameter gradients, the values
    -- float32's on the same rounded input rounded once (PyTorch's CPU kernels take
    -- these mixed dtypes; autocast leaves both norms in the input's dtype on the CPU)
    for _, d in ipairs(LOW) do
      -- one row [1, 3]: mean 2, biased var 1 -> x_hat -+1/sqrt(1 + 1e-5)
      local x = ember.tensor({{1, 3}}, {dtype = d, requires_grad = true})
      local w = ember.tensor({2.0, 1.0}, {requires_grad = true})
      local b = ember.tensor({0.5, 1.0}, {requires_grad = true})
      local r = 1 / math.sqrt(1 + 1e-5)
      local y = ember.layer_norm(x, {2}, w, b)
      assert.are.equal(d, y.dtype)
      H.check(y:double(), {{0.5 - 2 * r, 1 + r}}, RTOL[d])
      y:backward(ember.tensor({{1, 1}}, {dtype = d}))
      assert.are.equal(d, x.grad.dtype)
      assert.are.equal("float32", w.grad.dtype)
      H.check(w.grad, {-r, r}, 1e-6)
      H.check(b.grad, {1, 1}, 0)
      -- group norm of [1, 2, 1] with 1 group: the same numbers, per channel parameters
      local xg = ember.tensor({{{1}, {3}}}, {dtype = d})
      local yg = ember.group_norm(xg, 1, w:detach(), b:detach())
      assert.are.equal(d, yg.dtype)
      H.check(yg:double():reshape(2), {0.5 - 2 * r, 1 + r}, RTOL[d])
      -- against the float32 op on the same input, bit for bit after one rounding
      local xr = ember.randn(3, 4, 5):to(d)
      local wr, br = ember.randn(5), ember.randn(5)
      assert.is_true(ember.layer_norm(xr, {5}, wr, br):eq(ember.layer_norm(xr:float(), {5}, wr, br):to(d)):all():item())
      local wc, bc = ember.randn(4), ember.randn(4)
      assert.is_true(ember.group_norm(xr, 2, wc, bc):eq(ember.group_norm(xr:float(), 2, wc, bc):to(d)):all():item())
      -- mixed parameters are refused
      H.has(H.err(function() return ember.layer_norm(x, {2}, w, b:to(d)) end),
            "layer_norm: bias (" .. d .. ") must be float32 as the other parameters are, or all of them the "
            .. "input's dtype " .. d)
      H.has(H.err(function() return ember.group_norm(xg, 1, w:to(d), b) end),
            "group_norm: weight (" .. d .. ") must be float32")
    end
  end)
  it("batch norm updates low-precision running statistics", function()
    for _, d in ipairs(LOW) do
      local rm, rv = ember.zeros(3, {dtype = d}), ember.ones(3, {dtype = d})
      local x = (ember.randn(8, 3) * 2 + 1):to(d)
      ember.batch_norm(x, rm, rv, nil, nil, true, 0.5)
      local xf = x:double()
      H.check(rm:double(), (xf:mean(1) * 0.5):tolist(), RTOL[d] * 2)
      H.check(rv:double(), (xf:var(1) * 0.5 + 0.5):tolist(), RTOL[d] * 2)
      assert.are.equal(d, rm.dtype)
    end
  end)

  it("losses", function()
    local t = idx({1, 2, 6, 3})
    against_f32("cross_entropy", {rn(4, 6)}, function(x) return F.cross_entropy(x, t) end)
    against_f32("cross_entropy smoothing", {rn(4, 6)},
                function(x) return F.cross_entropy(x, t, {label_smoothing = 0.1}) end)
    against_f32("nll_loss", {rn(4, 6)}, function(x) return F.nll_loss(F.log_softmax(x, 2), t) end)
    against_f32("mse_loss", {rn(4, 6), rn(4, 6)}, function(x, y) return F.mse_loss(x, y) end)
    against_f32("l1_loss", {rn(4, 6), rn(4, 6)}, function(x, y) return F.l1_loss(x, y) end)
    against_f32("smooth_l1_loss", {rn(4, 6), rn(4, 6)}, function(x, y) return F.smooth_l1_loss(x, y) end)
    against_f32("huber_loss", {rn(4, 6), rn(4, 6)}, function(x, y) return F.huber_loss(x, y) end)
    against_f32("bce_with_logits", {rn(4, 6), function() return ember.rand(4, 6) end},
                function(x, y) return F.binary_cross_entropy_with_logits(x, y) end)
    against_f32("binary_cross_entropy", {rn(4, 6), function() return ember.rand(4, 6) end},
                function(x, y) return F.binary_cross_entropy(x:sigmoid(), y) end)
    against_f32("kl_div", {rn(4, 6), function() return ember.rand(4, 6) end},
                function(x, y) return F.kl_div(F.log_softmax(x, 2), y, {reduction = "batchmean"}) end)
  end)

  it("attention, interpolation, padding, normalize", function()
    against_f32("sdpa", {rn(2, 2, 5, 8), rn(2, 2, 6, 8), rn(2, 2, 6, 8)},
                function(q, k, v) return ember.scaled_dot_product_attention(q, k, v) end)
    against_f32("sdpa causal", {rn(2, 2, 5, 8), rn(2, 2, 5, 8), rn(2, 2, 5, 8)},
                function(q, k, v) return ember.scaled_dot_product_attention(q, k, v, nil, 0, true) end)
    local mask = ember.randn(5, 6)
    against_f32("sdpa float mask", {rn(2, 5, 8), rn(2, 6, 8), rn(2, 6, 8)},
                function(q, k, v) return ember.scaled_dot_product_attention(q, k, v, mask:to(q.dtype)) end)
    against_f32("sdpa bool mask", {rn(2, 5, 8), rn(2, 6, 8), rn(2, 6, 8)},
                function(q, k, v) return ember.scaled_dot_product_attention(q, k, v, mask:gt(-1)) end)
    against_f32("interpolate nearest", {rn(1, 2, 4, 4)}, function(x) return F.interpolate(x, {scale_factor = 2}) end)
    -- bilinear weights are sums of a few rounded products
    against_f32("interpolate bilinear", {rn(1, 2, 4, 4)},
                function(x) return F.interpolate(x, {scale_factor = 2, mode = "bilinear"}) end, {slack = 4})
    against_f32("pad", {rn(1, 2, 4, 4)}, function(x) return F.pad(x, {1, 1, 1, 1}) end)
    against_f32("normalize", {rn(4, 6)}, function(x) return F.normalize(x) end)
  end)

  it("random creation, dropout and casts keep the dtype", function()
    for _, d in ipairs(LOW) do
      local r = ember.rand(1000, {dtype = d})
      assert.are.equal(d, r.dtype)
      assert.is_true(r:amax():item() <= 1 and r:amin():item() >= 0)
      assert.are.equal(d, ember.randn(10, {dtype = d}).dtype)
      assert.are.equal(d, ember.empty(10, {dtype = d}):uniform_().dtype)
      local x = ember.ones(2000, {dtype = d}):requires_grad_(true)
      local y = F.dropout(x, 0.5)
      assert.are.equal(d, y.dtype)
      y:sum():backward()
      assert.are.equal(d, x.grad.dtype)
      -- kept elements are scaled by exactly 2, dropped ones are 0, in the output and gradient
      assert.is_true(y:eq(0):logical_or(y:eq(2)):all():item())
      assert.is_true(x.grad:eq(y):all():item())
      H.check(ember.tensor({1.5, -2.25, 300}, {dtype = d}):to("int64"), {1, -2, 300})
      H.check(ember.arange(0, 4, {dtype = d}):double(), {0, 1, 2, 3})
    end
  end)

  it("trains a small CNN and a transformer layer in low precision", function()
    for _, d in ipairs(LOW) do
      local m = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.BatchNorm2d(4), ember.nn.ReLU(),
                                    ember.nn.MaxPool2d(2))
      m:to(d)
      local y = m(ember.randn(2, 3, 8, 8):to(d))
      y:sum():backward()
      for _, p in ipairs(m:parameters()) do assert.are.equal(d, p.grad.dtype) end
      local t = ember.nn.TransformerEncoderLayer(8, 2, 16, 0.0)
      t:to(d)
      local z = t(ember.randn(2, 3, 8):to(d))
      assert.are.equal(d, z.dtype)
      z:sum():backward()
    end
  end)
end)

describe("float16/bfloat16 bad input", function()
  it("refuses mixed dtypes with clear errors", function()
    local x = ember.randn(1, 2, 5, 5):bfloat16()
    local e = H.err(function() local y = ember.conv2d(x, ember.randn(3, 2, 3, 3)); return y end)
    H.has(e, "conv2d")
    H.has(e, "bfloat16")
    -- (a float32 weight is PyTorch's mixed case, taken: see the norms' test above)
    e = H.err(function() local y = ember.layer_norm(x, {5}, ember.ones(5, {dtype = "float64"})); return y end)
    H.has(e, "layer_norm")
    H.has(e, "float64")
    e = H.err(function() local y = ember.max_pool2d(ember.ones(1, 1, 4, 4, {dtype = "int64"}), 2); return y end)
    H.has(e, "int64")
    e = H.err(function()
      local y = ember.scaled_dot_product_attention(ember.randn(2, 3, 4):half(), ember.randn(2, 3, 4), ember.randn(2, 3, 4))
      return y
    end)
    H.has(e, "float16")
  end)
end)

describe("bfloat16 sums of contiguous runs (float32 lanes, as PyTorch accumulates them)", function()
  -- the exact sum of the bfloat16 values (float64 holds it: 8-bit significands, few terms)
  -- and the result must be one of the two bfloat16 values around it
  local function within_one_unit(got, exact, what)
    for i = 1, exact:numel() do
      local e, g = exact:view(-1)[i]:item(), got:view(-1)[i]:item()
      local unit = e == 0 and 2^-133 or 2^(math.floor(math.log(math.abs(e), 2)) - 7)
      assert(math.abs(g - e) <= unit, string.format("%s: element %d is %.9g, the exact sum %.9g", what, i, g, e))
    end
  end
  it("match the exact sum to a unit in the last place, across lane and block edges", function()
    ember.manual_seed(3)
    for _, n in ipairs({1, 7, 63, 64, 65, 127, 512, 1000, 1024, 1025, 3000}) do
      local x = ember.randn(3, n):bfloat16()
      local s = x:sum(2)
      assert.are.equal("bfloat16", s.dtype)
      within_one_unit(s, x:double():sum(2), "sum(2) of " .. n)
      within_one_unit(x:sum(), x:double():sum(), "sum() of " .. 3 * n)
      within_one_unit(x:mean(2), x:double():mean(2), "mean(2) of " .. n)
    end
  end)
  it("carry infinities and NaN, and sum with dtype = float64 in float64", function()
    local x = ember.zeros(4, 200):bfloat16()
    x[1][150] = math.huge
    x[2][3] = -math.huge
    x[3][70] = 0 / 0
    x[4][1], x[4][100] = math.huge, -math.huge
    local s = x:sum(2)
    assert.are.equal(math.huge, s[1]:item())
    assert.are.equal(-math.huge, s[2]:item())
    assert.is_true(s[3]:item() ~= s[3]:item())
    assert.is_true(s[4]:item() ~= s[4]:item())
    -- 128 terms of 2^-9 beside 256: below bfloat16's spacing there (2), kept by a float64 sum
    local y = ember.full({1, 129}, 2^-9):bfloat16()
    y[1][1] = 256
    assert.are.equal(256 + 128 * 2^-9, y:sum(2, {dtype = "float64"})[1]:item())
  end)
end)

-- ---- PyTorch 1.13's CPU results ------------------------------------------------------------

describe("float16/bfloat16 results match PyTorch", function()
  local fx = H.fixture("half_ops.lua")
  local calls = {
    sum = function(x) return x:sum(2) end,
    sum_all = function(x) return x:sum() end,
    mean = function(x) return x:mean(2) end,
    softmax = function(x) return F.softmax(x, 2) end,
    log_softmax = function(x) return F.log_softmax(x, 2) end,
    matmul = function(a, b) return a:matmul(b) end,
    conv2d = function(x, w, b) return ember.conv2d(x, w, b, 2, 1) end,
    layer_norm = function(x, w, b) return ember.layer_norm(x, {32}, w, b) end,
    avg_pool2d = function(x) return ember.avg_pool2d(x, 3, 2, 1) end,
  }
  -- Both sides accumulate in float32 and round once; a different summation order can
  -- move a result across a rounding boundary: one unit in the last place (2^-7 for
  -- bfloat16, 2^-10 for float16, relative to the largest output) is allowed.
  local ULP = {bfloat16 = 2^-7, float16 = 2^-10}
  -- torch 1.13's CPU bfloat16 matmul and layer_norm round partial sums and intermediates
  -- to bfloat16 (measured: 1.5 units in the last place of the largest output away from the
  -- float32 result rounded once, which is what ember gives): four units there.
  local ULPS = {matmul = 4, layer_norm = 4}
  for _, c in ipairs(fx.cases) do
    it(c.name .. " " .. c.dtype, function()
      local ins = {}
      for i, s in ipairs(c.inputs) do
        ins[i] = H.from_flat(s, "float64"):to(c.dtype):requires_grad_(c.grads ~= nil)
      end
      local y = calls[c.name](table.unpack(ins))
      assert.are.equal(c.dtype, y.dtype)
      local want = H.from_flat(c.out, "float64")
      local function within(got, ref, what)
        local err = (got:detach():double() - ref):abs():amax():item()
        local tol = (ULPS[c.name] or 1) * ULP[c.dtype] * math.max(ref:abs():amax():item(), 1e-30)
        assert(err <= tol, string.format("%s: error %.3g above %.3g", what, err, tol))
      end
      within(y, want, "output")
      if c.grads then
        (y * H.from_flat(c.weight, "float64"):to(c.dtype)):sum():backward()
        -- gradients are products of rounded intermediates: two units in the last place
        for i, g in ipairs(c.grads) do
          local ref = H.from_flat(g, "float64")
          local err = (ins[i].grad:double() - ref):abs():amax():item()
          assert(err <= 2 * (ULPS[c.name] or 1) * ULP[c.dtype] * ref:abs():amax():item(),
                 string.format("gradient %d: error %.3g", i, err))
        end
      end
    end)
  end
end)

describe("float16/bfloat16 fills", function()
  for _, d in ipairs(LOW) do
    it(d .. ": fill_, full and zeros write the rounded value, contiguous and strided", function()
      -- 1 + 2^-12 rounds to 1 in both; -2.25 is exact in both
      bits_equal(ember.full({2, 3}, 1 + 2^-12, {dtype = d}):to("float64"):reshape(-1):tolist(), {1, 1, 1, 1, 1, 1})
      local z = ember.ones(3, 4, {dtype = d})
      z:t():narrow(1, 2, 2):fill_(-2.25)   -- columns 2 and 3 through a transposed view
      H.check(z:to("float64"), {{1, -2.25, -2.25, 1}, {1, -2.25, -2.25, 1}, {1, -2.25, -2.25, 1}})
      local big = ember.zeros(300, 257, {dtype = d})   -- past the pool's threshold
      assert.are.equal(0, big:to("float64"):abs():sum():item())
      big:fill_(0.5)
      assert.are.equal(300 * 257 * 0.5, big:to("float64"):sum():item())
    end)
  end
end)
