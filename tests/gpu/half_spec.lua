-- half_spec.lua (GPU) — float16 and bfloat16 on the device: each op family computes in the
-- low-precision dtype on the device what float32 computes on the CPU from the same rounded
-- inputs, values and gradients, within the dtype's tolerance (norm-wise: relative to the
-- reference's largest magnitude, as outputs that cancel carry the rounding of their terms).
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local F = ember.nn.functional
local LOW = {"bfloat16", "float16"}
-- PyTorch's assert_close rtol for the dtype, times 2: the device's float32 accumulation
-- order differs from the CPU's, which can move a result across one more rounding boundary
local RTOL = {bfloat16 = 3.2e-2, float16 = 2e-3}

local function close(lo, hi, d, slack, what)
  assert.are.equal(d, lo.dtype, what .. ": dtype")
  local a, b = lo:detach():cpu():to("float64"), hi:detach():to("float64")
  assert(#a.shape == #b.shape and a:numel() == b:numel(), what .. ": shape")
  if a:numel() == 0 then return end
  local err, scale = (a - b):abs():amax():item(), b:abs():amax():item()
  local tol = 1e-5 + RTOL[d] * slack * scale
  assert(err <= tol, string.format("%s [%s]: error %.3g above %.3g", what, d, err, tol))
end

-- fn on device copies in dtype d against fn on the CPU in float32, same rounded inputs;
-- then the gradients of sum(y * w)
local function twin(what, inputs, fn, opts)
  opts = opts or {}
  for _, d in ipairs(LOW) do
    local lo, hi = {}, {}
    for i, t in ipairs(inputs) do
      if ember.is_tensor(t) and t:is_floating_point() then
        local r = t:to(d)
        lo[i] = g.dev(r):requires_grad_(not opts.no_grad)
        hi[i] = r:float():requires_grad_(not opts.no_grad)
      else
        lo[i], hi[i] = g.dev(t), t
      end
    end
    local ylo, yhi = fn(table.unpack(lo)), fn(table.unpack(hi))
    close(ylo, yhi, d, 1, what)
    if not opts.no_grad then
      local w = ember.randn(yhi.shape):to(d)
      local llo, lhi = (ylo * g.dev(w)):sum(), (yhi * w:float()):sum()
      llo:backward()
      lhi:backward()
      for i = 1, #inputs do
        if ember.is_tensor(lo[i]) and lo[i].requires_grad then
          -- gradients pass through several roundings of the backward's intermediates
          close(lo[i].grad, hi[i].grad, d, 4, what .. " gradient " .. i)
        end
      end
    end
  end
end

local function R(...) return ember.randn(...) end
local function idx(t) return ember.tensor(t, {dtype = "int64"}) end

describe("float16/bfloat16 on the device vs float32 on the CPU", function()
  before_each(function() ember.manual_seed(5) end)

  it("elementwise, reductions, softmax", function()
    twin("gelu", {R(6, 9)}, function(x) return F.gelu(x) end)
    twin("mul broadcast", {R(6, 9), R(9)}, function(x, y) return x * y end)
    twin("strided add", {R(9, 6), R(6, 9)}, function(x, y) return x:t() + y end)
    twin("sum", {R(6, 200)}, function(x) return x:sum(2) end)
    twin("var", {R(6, 200)}, function(x) return x:var(2) end)
    twin("logsumexp", {R(6, 50)}, function(x) return x:logsumexp(2) end)
    twin("softmax", {R(6, 50) * 3}, function(x) return F.softmax(x, 2) end)
    twin("cumsum", {R(4, 20)}, function(x) return x:cumsum(2) end)
  end)

  it("index ops and matmul", function()
    -- index tensors are inputs too: twin hands each run its own, on that run's device, as
    -- PyTorch wants the index on the input's device
    twin("gather", {R(4, 6), idx({{1, 2}, {2, 3}, {1, 1}, {6, 5}})}, function(x, i) return x:gather(2, i) end)
    twin("index_add", {R(4, 6), R(4, 2), idx({1, 3})}, function(x, s, i) return x:index_add(2, i, s) end)
    twin("embedding", {R(10, 4), idx({{1, 2}, {3, 10}})}, function(w, i) return F.embedding(i, w) end)
    twin("mm", {R(16, 64), R(64, 8)}, function(a, b) return a:mm(b) end)
    twin("bmm", {R(3, 8, 16), R(3, 16, 5)}, function(a, b) return a:bmm(b) end)
  end)

  it("conv, pooling, norms", function()
    twin("conv2d", {R(2, 3, 9, 9), R(4, 3, 3, 3), R(4)}, function(x, w, b) return ember.conv2d(x, w, b, 2, 1) end)
    twin("conv1d", {R(2, 3, 10), R(4, 3, 3)}, function(x, w) return ember.conv1d(x, w) end)
    twin("conv_transpose2d", {R(2, 3, 5, 5), R(3, 4, 3, 3)}, function(x, w) return ember.conv_transpose2d(x, w, nil, 2) end)
    twin("max_pool2d", {R(2, 3, 8, 8)}, function(x) return ember.max_pool2d(x, 3, 2, 1) end)
    twin("avg_pool2d", {R(2, 3, 8, 8)}, function(x) return ember.avg_pool2d(x, 3, 2, 1) end)
    twin("adaptive_avg_pool2d", {R(2, 3, 7, 7)}, function(x) return ember.adaptive_avg_pool2d(x, 3) end)
    twin("batch_norm", {R(4, 3, 5, 5), R(3), R(3)}, function(x, w, b) return ember.batch_norm(x, nil, nil, w, b, true) end)
    twin("layer_norm", {R(4, 3, 64) + 50, R(64), R(64)}, function(x, w, b) return ember.layer_norm(x, {64}, w, b) end)
    twin("group_norm", {R(4, 4, 5), R(4), R(4)}, function(x, w, b) return ember.group_norm(x, 2, w, b) end)
  end)

  it("attention and losses", function()
    twin("sdpa", {R(2, 2, 5, 16), R(2, 2, 6, 16), R(2, 2, 6, 16)},
         function(q, k, v) return ember.scaled_dot_product_attention(q, k, v) end)
    twin("sdpa causal", {R(2, 2, 6, 16), R(2, 2, 6, 16), R(2, 2, 6, 16)},
         function(q, k, v) return ember.scaled_dot_product_attention(q, k, v, nil, 0, true) end)
    twin("cross_entropy", {R(4, 6), idx({1, 2, 6, 3})}, function(x, t) return F.cross_entropy(x, t) end)
    twin("mse_loss", {R(4, 6), R(4, 6)}, function(x, y) return F.mse_loss(x, y) end)
  end)

  it("casts round to nearest even as on the CPU", function()
    local x = ember.tensor({1 + 2^-8, 1 + 3 * 2^-8, 65520, 3 * 2^-25, 2^-25, 0 / 0, -math.huge}, {dtype = "float32"})
    for _, d in ipairs(LOW) do
      local want, got = x:to(d):to("float64"):tolist(), g.dev(x):to(d):cpu():to("float64"):tolist()
      for i = 1, #want do
        assert(want[i] == got[i] or (want[i] ~= want[i] and got[i] ~= got[i]),
               string.format("%s value %d: device %s, CPU %s", d, i, tostring(got[i]), tostring(want[i])))
      end
    end
  end)
end)
