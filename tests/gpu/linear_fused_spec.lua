-- linear_fused_spec.lua (GPU) — F.linear's fused op on the device (cuBLASLt with the
-- BIAS / GELU_AUX_BIAS / BGRADB epilogues, or its unfused fallback) against the CPU
-- backend on the same inputs: values and the gradients of sum(y * weights), float32,
-- float64 and the half dtypes (these against the CPU's float32 composition), sizes
-- whose leading dims are multiples of 8 (Lt's epilogues) and sizes that are not (the
-- fallback), with and without bias, 2-D and batched inputs, and the half matmul.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local F = ember.nn.functional

-- y and the gradients wrt x, w (and b) of sum(y * weights) for F.linear on inputs as given
local function run(x, w, b, act)
  local leaves = {x:requires_grad_(), w:requires_grad_(), b and b:requires_grad_() or nil}
  local y = F.linear(leaves[1], leaves[2], leaves[3], {activation = act})
  local wt = ember.linspace(-1, 1, y:numel(), {dtype = "float64"}):reshape(y.shape):to(y.dtype)
  if y.device ~= "cpu" then wt = wt:to(y.device) end
  local gs = {ember.autograd.grad((y * wt):sum(), b and leaves or {leaves[1], leaves[2]})}
  return y:detach(), gs
end

local function compare(dtype, xs, ws, with_bias, act, tol)
  local x = ember.randn(xs, {dtype = "float64"})
  local w = ember.randn(ws, {dtype = "float64"}) * (1 / math.sqrt(ws[2]))
  local b = with_bias and ember.randn({ws[1]}, {dtype = "float64"}) or nil
  local ref_dtype = (dtype == "float16" or dtype == "bfloat16") and "float32" or dtype
  local y0, g0 = run(x:to(ref_dtype), w:to(ref_dtype), b and b:to(ref_dtype), act)
  local y1, g1 = run(g.dev(x:to(dtype)), g.dev(w:to(dtype)), b and g.dev(b:to(dtype)), act)
  assert.are.equal(dtype, y1.dtype)
  local rtol, atol = table.unpack(tol)
  g.close(y1:to("cpu"):to(ref_dtype), y0, {rtol = rtol, atol = atol, any_device = true, what = "y"})
  for i = 1, #g0 do
    g.close(g1[i]:to("cpu"):to(ref_dtype), g0[i], {rtol = rtol, atol = atol * 4, any_device = true,
                                                   what = "gradient " .. i})
  end
end

local TOL = {float32 = {1e-4, 1e-4}, float64 = {1e-11, 1e-11}, bfloat16 = {3e-2, 3e-2}, float16 = {5e-3, 5e-3}}

describe("F.linear fused on the device against the CPU", function()
  for _, dtype in ipairs({"float32", "float64", "bfloat16", "float16"}) do
    for _, act in ipairs({"none", "gelu_tanh"}) do
      it(dtype .. ", " .. act .. ", aligned sizes [64, 32] x [48, 32], bias", function()
        compare(dtype, {64, 32}, {48, 32}, true, act, TOL[dtype])
      end)
      it(dtype .. ", " .. act .. ", odd sizes [7, 5] x [3, 5] (Lt's unfused fallback), bias", function()
        compare(dtype, {7, 5}, {3, 5}, true, act, TOL[dtype])
      end)
      it(dtype .. ", " .. act .. ", batched [2, 8, 16] x [24, 16], no bias", function()
        compare(dtype, {2, 8, 16}, {24, 16}, false, act, TOL[dtype])
      end)
    end
  end

  it("float32 with TF32 on stays within TF32's rounding", function()
    ember.backends.cuda.matmul.allow_tf32 = true
    local ok, e = pcall(compare, "float32", {64, 128}, {32, 128}, true, "gelu_tanh", {5e-3, 5e-3})
    ember.backends.cuda.matmul.allow_tf32 = false
    assert(ok, e)
  end)

  it("the heuristic cache: the same shape twice, then another alignment (a sliced input)", function()
    local x = ember.randn(33, 16)
    local w, b = ember.randn(8, 16), ember.randn(8)
    local want = F.linear(x, w, b, {activation = "gelu_tanh"})
    local dx, dw, db = g.dev(x), g.dev(w), g.dev(b)
    for _ = 1, 2 do
      g.close(F.linear(dx, dw, db, {activation = "gelu_tanh"}):to("cpu"), want, {rtol = 1e-4, atol = 1e-5,
                                                                              any_device = true})
    end
    -- rows 2.. start 16 floats in: the operand is aligned differently
    g.close(F.linear(dx:narrow(1, 2, 32), dw, db, {activation = "gelu_tanh"}):to("cpu"), want:narrow(1, 2, 32),
            {rtol = 1e-4, atol = 1e-5, any_device = true})
  end)

  it("half matmul runs in the half dtype (float32 accumulation) and matches the CPU", function()
    for _, dtype in ipairs({"bfloat16", "float16"}) do
      local a, b = ember.randn(3, 40, 24), ember.randn(24, 16)
      local want = a:matmul(b)
      local got = g.dev(a:to(dtype)):matmul(g.dev(b:to(dtype)))
      assert.are.equal(dtype, got.dtype)
      local ref = a:to(dtype):float():matmul(b:to(dtype):float())
      g.close(got:to("cpu"):float(), ref, {rtol = 2e-2, atol = 2e-2, any_device = true})
      -- a broadcast batch (plain cuBLAS) too
      local bb = ember.randn(1, 24, 16)
      g.close(g.dev(a:to(dtype)):matmul(g.dev(bb:to(dtype))):to("cpu"):float(),
              a:to(dtype):float():matmul(bb:to(dtype):float()), {rtol = 2e-2, atol = 2e-2, any_device = true})
      assert(want.dtype == "float32")
    end
  end)

  it("mixed devices are an error", function()
    if g.on_cpu then return end
    local e = g.err(function() local y = F.linear(g.dev(ember.ones(2, 3)), ember.ones(4, 3)); return y end)
    g.has(e, "linear")
  end)
end)
