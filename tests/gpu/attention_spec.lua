-- attention_spec.lua (GPU) — fused scaled-dot-product attention
-- (kernels/attention.cu) on the device under test against the CPU backend on
-- the same inputs: outputs and the gradients of q, k and v through autograd;
-- float32 and float64; no mask, causal (Tq = Tk, Tq < Tk, Tq > Tk), bool and
-- float masks broadcast over batch, heads and query rows; lengths that are
-- not multiples of the kernels' tiles; head dims 16 to 128 (D ~= Dv too);
-- fully masked rows (NaN); dropout (the same seed gives the same mask on both
-- devices, and the mask is the rule of backend.h: the uniform of position
-- (b Tq + i) Tk + j below 1 - p); float16 / bfloat16 inputs against float32 on
-- the CPU; head dims above the kernels' limit; and peak memory O(T) at
-- T = 8192, D = 64.
--
-- float64 differs from the CPU only in summation order: tight tolerances.
-- float32 accumulates in float on both sides in different orders: relative
-- 2e-4, absolute 2e-5 of the largest value.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local nn = require("ember.nn")
local F = nn.functional

-- the engine's fused op; under EMBER_GPU_TEST_DEVICE=cpu, while the engine
-- has none, the composed F.scaled_dot_product_attention checks the test code
local sdpa = ember.scaled_dot_product_attention
if not sdpa then
  if g.on_cpu then
    sdpa = F.scaled_dot_product_attention
  else
    pending("ember.scaled_dot_product_attention is missing: nothing to test on the GPU")
    return
  end
end

local dev, close = g.dev, g.close
local cuda_it = g.cuda_it(it, pending)

local TOL = {
  float64 = {rtol = 1e-9, scale = 1e-10},
  float32 = {rtol = 2e-4, scale = 2e-5},
}

local function R(d, shape) return ember.randn(shape, {dtype = d}) end

local function with(o, what)
  local r = {}
  for k, v in pairs(o) do r[k] = v end
  r.what = what
  return r
end

-- A bool mask of the given shape from a fixed Lua stream (about a third
-- false); keep_first: every row keeps its first key, so no row is fully masked.
local function bool_mask(shape, seed, keep_first)
  local state = seed
  local function rnd()
    state = (state * 1103515245 + 12345) % 2147483648
    return state / 2147483648
  end
  local function build(dim)
    local t = {}
    for i = 1, shape[dim] do
      if dim == #shape then t[i] = (keep_first and i == 1) or rnd() > 0.35
      else t[i] = build(dim + 1) end
    end
    return t
  end
  return ember.tensor(build(1), {dtype = "bool"})
end

-- Runs sdpa(q, k, v, opts) on CPU leaves and on device leaves with the same
-- values, compares the output, backpropagates one random upstream gradient
-- through both and compares the gradients of q, k and v. opts.attn_mask is a
-- CPU tensor (copied to the device for the device run); seed: reseeds before
-- each run (dropout draws the same mask on both sides).
--
-- zero_dqk: the gradients of q and k are zero mathematically (one key: the
-- softmax is the constant 1, so dS = P (dP - rowsum(P dP)) cancels to 0, and
-- dq = scale dS k, dk = scale dS^T q). Both devices then give rounding noise,
-- and comparing noise with noise means nothing; instead each is checked to be
-- at rounding level: the terms that cancel are sums of Dv products gy v, so
-- |dq| <= 4 Dv eps scale (|gy| |v|^T) |k| and |dk| <= 4 Dv eps scale
-- (|gy| |v|^T)^T |q| (the size each would have without the cancellation,
-- times 4 Dv eps). A real error (a dropped or wrong rowsum term) gives
-- gradients of the size of those products, 1e4 (float32) to 1e13 (float64)
-- times the bound.
local EPS = {float32 = 2 ^ -23, float64 = 2 ^ -52}
local function at_rounding_level(grad, bound, what)
  local a = grad:detach():cpu():to("float64"):abs()
  local over = a:gt(bound):sum():item()
  if over > 0 then
    error(("%s: %d of %d elements above rounding level; largest %g, bound there %g"):format(
      what, over, a:numel(), a:max():item(), bound:max():item()), 2)
  end
end

local function agree(what, d, qs, ks, vs, opts, seed, zero_dqk)
  local q, k, v = R(d, qs), R(d, ks), R(d, vs)
  local cl = {q:clone():requires_grad_(), k:clone():requires_grad_(), v:clone():requires_grad_()}
  local dl = {g.leaf(q), g.leaf(k), g.leaf(v)}
  local oc, od = {}, {}
  for key, val in pairs(opts or {}) do
    oc[key] = val
    od[key] = dev(val)
  end
  if seed then ember.manual_seed(seed) end
  local yc = sdpa(cl[1], cl[2], cl[3], oc)
  if seed then ember.manual_seed(seed) end
  local yd = sdpa(dl[1], dl[2], dl[3], od)
  local tol = TOL[d]
  close(yd, yc, with(tol, what .. " " .. d .. ": output"))
  local gy = R(d, yc.shape)
  local lc, ld = (yc * gy):sum(), (yd * dev(gy)):sum()
  lc:backward()
  ld:backward()
  for i, name in ipairs({"q", "k", "v"}) do
    assert(cl[i].grad and dl[i].grad, ("%s %s: no gradient of %s"):format(what, d, name))
    local w = ("%s %s: gradient of %s"):format(what, d, name)
    if zero_dqk and name ~= "v" then
      local D, Dv = qs[#qs], vs[#vs]
      local sm = (opts and opts.scale) or 1 / math.sqrt(D)
      local a64 = function(t) return t:to("float64"):abs() end
      local gv = a64(gy):matmul(a64(v):transpose(-2, -1))   -- [.., Tq, Tk]
      local bound = (name == "q" and gv:matmul(a64(k)) or gv:transpose(-2, -1):matmul(a64(q)))
        * (4 * Dv * EPS[d] * sm)
      g.close(dl[i].grad, cl[i].grad, {what = w, no_values = true})
      at_rounding_level(dl[i].grad, bound, w .. " on the device")
      at_rounding_level(cl[i].grad, bound, w .. " on the CPU")
    else
      close(dl[i].grad, cl[i].grad, with(tol, w))
    end
  end
  return yd, yc
end

describe("scaled_dot_product_attention on the device", function()
  it("no mask: head dims 16, 64, 128, D ~= Dv, lengths that are not multiples of a tile", function()
    for _, d in ipairs(g.float_dtypes) do
      agree("D16", d, {2, 3, 37, 16}, {2, 3, 37, 16}, {2, 3, 37, 16})
      agree("D64", d, {2, 2, 70, 64}, {2, 2, 70, 64}, {2, 2, 70, 64})
      agree("D128", d, {1, 2, 65, 128}, {1, 2, 65, 128}, {1, 2, 65, 128})
      agree("D96 Dv40", d, {3, 33, 96}, {3, 51, 96}, {3, 51, 40})
      agree("D8 Dv72, Tq 1", d, {2, 1, 8}, {2, 90, 8}, {2, 90, 72})
      agree("one key", d, {2, 17, 32}, {2, 1, 32}, {2, 1, 32}, nil, nil, true)
      agree("no batch dims", d, {100, 24}, {129, 24}, {129, 24})
    end
  end)

  it("explicit scale", function()
    for _, d in ipairs(g.float_dtypes) do
      agree("scale 0.3", d, {2, 40, 32}, {2, 50, 32}, {2, 50, 32}, {scale = 0.3})
    end
  end)

  it("causal: Tq = Tk, Tq < Tk, Tq > Tk (top-left aligned), across several tiles", function()
    for _, d in ipairs(g.float_dtypes) do
      agree("causal square", d, {2, 2, 150, 64}, {2, 2, 150, 64}, {2, 2, 150, 64}, {is_causal = true})
      agree("causal Tq < Tk", d, {2, 45, 32}, {2, 131, 32}, {2, 131, 48}, {is_causal = true})
      agree("causal Tq > Tk", d, {2, 131, 32}, {2, 45, 32}, {2, 45, 32}, {is_causal = true})
      agree("causal D128", d, {1, 3, 97, 128}, {1, 3, 97, 128}, {1, 3, 97, 128}, {is_causal = true})
    end
  end)

  it("bool and float masks, broadcast over batch, heads and query rows", function()
    local N, H, Tq, Tk, D = 2, 3, 41, 75, 32
    local qs, ks = {N, H, Tq, D}, {N, H, Tk, D}
    for _, d in ipairs(g.float_dtypes) do
      agree("bool [Tq, Tk]", d, qs, ks, ks, {attn_mask = bool_mask({Tq, Tk}, 1, true)})
      agree("bool [N, 1, Tq, Tk]", d, qs, ks, ks, {attn_mask = bool_mask({N, 1, Tq, Tk}, 2, true)})
      agree("bool [N, 1, 1, Tk] (key padding)", d, qs, ks, ks, {attn_mask = bool_mask({N, 1, 1, Tk}, 3, true)})
      agree("bool [H, Tq, Tk]", d, qs, ks, ks, {attn_mask = bool_mask({H, Tq, Tk}, 4, true)})
      agree("bool full", d, qs, ks, ks, {attn_mask = bool_mask({N, H, Tq, Tk}, 5, true)})
      agree("float [Tq, Tk]", d, qs, ks, ks, {attn_mask = R(d, {Tq, Tk})})
      agree("float [N, H, 1, Tk]", d, qs, ks, ks, {attn_mask = R(d, {N, H, 1, Tk})})
      agree("float transposed [Tk, Tq]^T", d, qs, ks, ks, {attn_mask = R(d, {Tk, Tq}):transpose(1, 2)})
      -- (a mask and is_causal together are refused, as PyTorch)
    end
  end)

  it("fully masked rows give NaN outputs on both devices; the other rows agree", function()
    local Tq, Tk, D = 20, 30, 16
    for _, d in ipairs(g.float_dtypes) do
      local rows = {}
      for i = 1, Tq do
        local r = {}
        for j = 1, Tk do r[j] = not (i == 3 or i == 17) and (j + i) % 3 ~= 0 end
        rows[i] = r
      end
      local mask = ember.tensor(rows, {dtype = "bool"})
      local q, k, v = R(d, {2, Tq, D}), R(d, {2, Tk, D}), R(d, {2, Tk, D})
      local yc = sdpa(q, k, v, {attn_mask = mask})
      local yd = sdpa(dev(q), dev(k), dev(v), {attn_mask = dev(mask)})
      close(yd, yc, with(TOL[d], "masked rows " .. d))
      local row = yd:cpu()[{1, 3}]
      assert.is_true(row:ne(row):all():item(), "a fully masked row is NaN")
      -- the float mask form of the same, with -inf
      local fm = ember.zeros({Tq, Tk}, {dtype = d}):masked_fill(mask:logical_not(), -math.huge)
      close(sdpa(dev(q), dev(k), dev(v), {attn_mask = dev(fm)}), yc, with(TOL[d], "-inf float mask " .. d))
    end
  end)

  it("dropout: the same seed gives the same output and gradients on both devices", function()
    for _, d in ipairs(g.float_dtypes) do
      agree("dropout 0.3", d, {2, 2, 45, 32}, {2, 2, 70, 32}, {2, 2, 70, 32}, {dropout_p = 0.3}, 77)
      agree("dropout causal", d, {2, 70, 64}, {2, 70, 64}, {2, 70, 64}, {dropout_p = 0.1, is_causal = true}, 78)
      agree("dropout and mask", d, {2, 33, 16}, {2, 41, 16}, {2, 41, 16},
        {dropout_p = 0.5, attn_mask = bool_mask({33, 41}, 9, true)}, 79)
    end
  end)

  it("dropout keeps position (b Tq + i) Tk + j where the uniform drawn for it is below 1 - p", function()
    -- with v the identity (Tk = Dv) the output is the dropped-out matrix of
    -- probabilities itself: zero exactly where dropped
    local B, Tq, Tk, p = 3, 37, 70, 0.4
    for _, d in ipairs(g.float_dtypes) do
      local q, k = R(d, {B, Tq, 8}), R(d, {B, Tk, 8})
      local v = ember.eye(Tk, {dtype = d}):expand(B, Tk, Tk):contiguous()
      ember.manual_seed(5)
      local u = ember.rand({B, Tq, Tk}, {dtype = d == "float64" and "float64" or "float32"})
      local keep = u:lt(1 - p)
      ember.manual_seed(5)
      local yd = sdpa(dev(q), dev(k), dev(v), {dropout_p = p})
      local y = yd:cpu()
      g.same(y:ne(0), keep, {what = "keep mask " .. d, any_device = true})
      local probs = (q:matmul(k:transpose(2, 3)) * (1 / math.sqrt(8))):softmax(3)
      close(yd, probs * keep:to(d) * (1 / (1 - p)), with(TOL[d], "kept values " .. d))
    end
  end)

  it("strided inputs ([N, T, H, D] transposed to [N, H, T, D])", function()
    for _, d in ipairs(g.float_dtypes) do
      local q, k, v = R(d, {2, 50, 3, 32}), R(d, {2, 61, 3, 32}), R(d, {2, 61, 3, 32})
      local function f(a, b, c) return sdpa(a:transpose(2, 3), b:transpose(2, 3), c:transpose(2, 3), {is_causal = true}) end
      close(f(dev(q), dev(k), dev(v)), f(q, k, v), with(TOL[d], "strided " .. d))
    end
  end)
end)

describe("float16 and bfloat16 inputs (float32 accumulation)", function()
  local half_ok, half_why = true, nil
  if g.is_cuda then
    half_ok, half_why = pcall(sdpa, ember.zeros({1, 4, 16}, {dtype = "bfloat16", device = g.DEV}),
      ember.zeros({1, 4, 16}, {dtype = "bfloat16", device = g.DEV}),
      ember.zeros({1, 4, 16}, {dtype = "bfloat16", device = g.DEV}))
  end
  local run = (g.is_cuda and half_ok) and it or function(name)
    pending(name .. (g.on_cpu and " (skipped: GPU kernels only)" or (" (skipped: " .. tostring(half_why) .. ")")))
  end
  run("match the CPU in float32 on the rounded inputs", function()
    for _, hd in ipairs({"float16", "bfloat16"}) do
      for _, causal in ipairs({false, true}) do
        local q = R("float32", {2, 2, 77, 64}):to(hd)
        local k = R("float32", {2, 2, 77, 64}):to(hd)
        local v = R("float32", {2, 2, 77, 64}):to(hd)
        local want = sdpa(q:to("float32"), k:to("float32"), v:to("float32"), {is_causal = causal})
        local got = sdpa(dev(q), dev(k), dev(v), {is_causal = causal})
        assert.are.equal(hd, got.dtype)
        local tol = hd == "bfloat16" and 1.6e-2 or 2e-3
        close(got:to("float32"), want, {rtol = tol, scale = tol, what = hd .. (causal and " causal" or "")})
        -- gradients against float32 ones from the same rounded inputs
        local ql, kl, vl = g.leaf(q), g.leaf(k), g.leaf(v)
        local qc, kc, vc = q:to("float32"):requires_grad_(), k:to("float32"):requires_grad_(),
          v:to("float32"):requires_grad_()
        local gy = R("float32", want.shape):to(hd)
        local ld = (sdpa(ql, kl, vl, {is_causal = causal}) * dev(gy)):sum()
        local lc = (sdpa(qc, kc, vc, {is_causal = causal}) * gy:to("float32")):sum()
        ld:backward()
        lc:backward()
        for _, pair in ipairs({{ql, qc, "q"}, {kl, kc, "k"}, {vl, vc, "v"}}) do
          close(pair[1].grad:to("float32"), pair[2].grad, {rtol = 4 * tol, scale = 4 * tol, any_device = false,
            what = hd .. " gradient of " .. pair[3]})
        end
      end
    end
  end)
end)

describe("limits and memory", function()
  cuda_it("head dims above the kernels' limit fail clearly or agree with the CPU", function()
    local q, k, v = R("float32", {1, 9, 160}), R("float32", {1, 9, 160}), R("float32", {1, 9, 160})
    local ok, res = pcall(sdpa, dev(q), dev(k), dev(v))
    if ok then
      close(res, sdpa(q, k, v), with(TOL.float32, "D 160"))
    else
      g.has(tostring(res), "scaled_dot_product_attention")
      assert.is_truthy(tostring(res):find("128", 1, true), "the message names the limit: " .. tostring(res))
    end
  end)

  cuda_it("T = 8192, D = 64: peak memory of forward and backward stays O(T), not O(T^2)", function()
    local cuda, DEV = ember.cuda, g.DEV
    -- the emulated device runs kernels on the CPU: 2048 keeps a T x T matrix
    -- (16 MiB) twice the bound (8 MiB), so the check still tells O(T^2) apart
    local T, D = g.emulated and 2048 or 8192, 64
    local q = ember.randn({1, 1, T, D}, {device = DEV}):requires_grad_()
    local k = ember.randn({1, 1, T, D}, {device = DEV}):requires_grad_()
    local v = ember.randn({1, 1, T, D}, {device = DEV}):requires_grad_()
    collectgarbage()
    collectgarbage()
    cuda.synchronize(DEV)
    local base = cuda.memory_allocated(DEV)
    cuda.reset_peak_memory_stats(DEV)
    for _, causal in ipairs({false, true}) do
      local grads = {ember.autograd.grad({sdpa(q, k, v, {is_causal = causal}):sum()}, {q, k, v})}
      cuda.synchronize(DEV)
      assert.are.equal(3, #grads)
      grads = nil
      collectgarbage()
      collectgarbage()
    end
    local peak = cuda.max_memory_allocated(DEV) - base
    local tensor = T * D * 4            -- one [T, D] float32 tensor: 2 MiB
    local scores = T * T * 4            -- one [T, T] float32 matrix: 256 MiB
    assert.is_true(peak <= 16 * tensor,
      ("peak %.1f MiB above the inputs: expected O(T) (at most %.0f MiB; a T x T matrix is %.0f MiB)")
        :format(peak / 2 ^ 20, 16 * tensor / 2 ^ 20, scores / 2 ^ 20))
  end)
end)
