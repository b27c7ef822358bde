-- gemm_bf16_spec.lua — bfloat16 (and float16) GEMMs on the CPU: float32 sums of the
-- products, the result rounded once to the dtype. bfloat16 runs through oneDNN's
-- matmul (engine/cpu/dnnl_matmul.c), float16 through float32 copies (gemm.c).
--
-- Exact checks use small integers: their products and sums are exact in float32, so
-- the result must equal the exact sum (plain Lua loops) rounded once to the dtype,
-- to nearest, ties to even (round_to below). Random values check the same within one
-- unit in the last place of the dtype (plus float32's own rounding where
-- cancellation leaves a tiny result). Layouts: contiguous, transposed, with gaps
-- between rows, stepped slices, batches, broadcast batches, M/N/K of 1 and 0, and
-- alpha/beta (addmm); and the fused linear layer's forward and gradients.
local ember = require "ember"
local F = ember.nn.functional
local H = require "helpers"

local LOW = {"bfloat16", "float16"}
local BITS = {bfloat16 = 8, float16 = 11}   -- significant bits

-- the spacing of the dtype's values at x (normal range)
local function ulp_of(x, dt)
  local a = math.abs(x)
  if a == 0 then return 0 end
  local e = math.floor(math.log(a, 2))
  if 2.0 ^ e > a then e = e - 1 elseif 2.0 ^ (e + 1) <= a then e = e + 1 end
  return 2.0 ^ (e - BITS[dt] + 1)
end

-- x rounded to the dtype's significand, to nearest, ties to even (normal range)
local function round_to(x, dt)
  if x == 0 or x ~= x then return x end
  local ulp = ulp_of(x, dt)
  local q = math.abs(x) / ulp
  local f = math.floor(q)
  local r = q - f
  if r > 0.5 or (r == 0.5 and f % 2 == 1) then f = f + 1 end
  return (x < 0 and -1 or 1) * f * ulp
end

local ints, nest, transpose, ref_mm = H.lcg_ints, H.nest, H.transpose_flat, H.ref_mm

local function flat(t) return t:to("float64"):reshape(-1):tolist() end

local function check_exact(got, want, dt, what)
  assert.are.equal(dt, got.dtype)
  local g = flat(got)
  assert.are.equal(#want, #g, what .. ": element count")
  for i = 1, #want do
    local w = round_to(want[i], dt)
    if g[i] ~= w then
      error(string.format("%s (%s): element %d: expected %.9g (exact %.9g), got %.9g", what, dt, i, w, want[i], g[i]))
    end
  end
end

-- within one ulp of the double result, or float32's bound on its own sum
local function check_ulp(got, want, sums, dt, what)
  local g = flat(got)
  for i = 1, #want do
    local tol = ulp_of(want[i], dt) + 2 ^ -20 * sums[i]
    if math.abs(g[i] - want[i]) > tol then
      error(string.format("%s (%s): element %d: expected %.9g within %.3g, got %.9g", what, dt, i, want[i], tol, g[i]))
    end
  end
end

local function T(flatv, rows, cols, dt) return ember.tensor(nest(flatv, rows, cols), {dtype = dt}) end

-- the sizes seen by the kernels: 1s, odd sizes, and products big enough to be split
-- over threads (rows blocks with a shorter last one)
local SIZES = {{1, 1, 1}, {1, 7, 5}, {5, 9, 1}, {3, 1, 4}, {7, 13, 11}, {33, 65, 17}, {130, 40, 70}}

for _, dt in ipairs(LOW) do
  describe(dt .. " matmul on the CPU", function()
    it("equals the exact product rounded once: contiguous, transposed, with gaps, stepped", function()
      for n, s in ipairs(SIZES) do
        local M, K, N = s[1], s[2], s[3]
        local A, B = ints(M * K, 3 * n, 8), ints(K * N, 7 * n, 8)
        local want = ref_mm(A, B, M, K, N)
        local what = string.format("[%d,%d] @ [%d,%d]", M, K, K, N)
        local a, b = T(A, M, K, dt), T(B, K, N, dt)
        check_exact(ember.matmul(a, b), want, dt, what)
        -- column-major a and b (a transposed view of the transpose)
        local at, bt = T(transpose(A, M, K), K, M, dt):t(), T(transpose(B, K, N), N, K, dt):t()
        check_exact(ember.matmul(at, b), want, dt, what .. " a^T")
        check_exact(ember.matmul(a, bt), want, dt, what .. " b^T")
        check_exact(ember.matmul(at, bt), want, dt, what .. " a^T b^T")
        -- rows with gaps: the first K of K + 3 columns
        local wide = {}
        for i = 1, M do
          for j = 1, K + 3 do wide[(i - 1) * (K + 3) + j] = j <= K and A[(i - 1) * K + j] or 99 end
        end
        check_exact(ember.matmul(T(wide, M, K + 3, dt):slice(2, 1, K), b), want, dt, what .. " gaps")
        -- every other column of [K, 2N]: no unit stride, copied first
        local step = {}
        for i = 1, K do
          for j = 1, 2 * N do step[(i - 1) * 2 * N + j] = j % 2 == 1 and B[(i - 1) * N + (j + 1) // 2] or -99 end
        end
        check_exact(ember.matmul(a, T(step, K, 2 * N, dt):slice(2, 1, 2 * N, 2)), want, dt, what .. " stepped")
      end
    end)

    it("writes a transposed output through mm's out layout: (b^T a^T)^T", function()
      local M, K, N = 9, 21, 6
      local A, B = ints(M * K, 11, 8), ints(K * N, 12, 8)
      local want = ref_mm(transpose(B, K, N), transpose(A, M, K), N, K, M)
      local got = ember.matmul(T(B, K, N, dt):t(), T(A, M, K, dt):t())
      check_exact(got, want, dt, "b^T @ a^T")
    end)

    it("batches: 3-D @ 3-D, 3-D @ 2-D, 2-D @ 3-D (broadcast), 4-D broadcasts, transposed batches", function()
      for _, s in ipairs({{5, 40, 40, 40}, {3, 7, 5, 9}, {6, 1, 3, 1}}) do
        local Bn, M, K, N = s[1], s[2], s[3], s[4]
        local As, Bs, wants, wantf, wantb = {}, {}, {}, {}, {}
        local A2, B2 = ints(M * K, 99, 8), ints(K * N, 98, 8)
        for i = 1, Bn do
          As[i], Bs[i] = ints(M * K, 20 + i, 8), ints(K * N, 40 + i, 8)
          wants[i] = ref_mm(As[i], Bs[i], M, K, N)
          wantf[i] = ref_mm(As[i], B2, M, K, N)   -- a batch times one matrix
          wantb[i] = ref_mm(A2, Bs[i], M, K, N)   -- one matrix times a batch
        end
        local function stack(list, r, c) local t = {} for i = 1, #list do t[i] = nest(list[i], r, c) end return t end
        local function cat(list) local t = {} for _, l in ipairs(list) do table.move(l, 1, #l, #t + 1, t) end return t end
        local a3 = ember.tensor(stack(As, M, K), {dtype = dt})
        local b3 = ember.tensor(stack(Bs, K, N), {dtype = dt})
        local what = string.format("[%d,%d,%d] @ [%d,%d,%d]", Bn, M, K, Bn, K, N)
        check_exact(ember.matmul(a3, b3), cat(wants), dt, what)
        check_exact(ember.bmm(a3, b3), cat(wants), dt, what .. " bmm")
        check_exact(ember.matmul(a3, T(B2, K, N, dt)), cat(wantf), dt, what .. " @ 2-D")
        check_exact(ember.matmul(T(A2, M, K, dt), b3), cat(wantb), dt, "2-D @ " .. what)
        -- transposed batches: the layout attention's q @ k^T has
        local bT = {}
        for i = 1, Bn do bT[i] = transpose(Bs[i], K, N) end
        check_exact(ember.matmul(a3, ember.tensor(stack(bT, N, K), {dtype = dt}):transpose(2, 3)), cat(wants), dt,
                    what .. " b^T")
        -- [Bn, 1, M, K] @ [1, 2, K, N] -> [Bn, 2, M, N]: both broadcast
        local b4 = ember.tensor({stack({Bs[1], B2}, K, N)}, {dtype = dt})
        local want4 = {}
        for i = 1, Bn do
          table.move(ref_mm(As[i], Bs[1], M, K, N), 1, M * N, #want4 + 1, want4)
          table.move(wantf[i], 1, M * N, #want4 + 1, want4)
        end
        check_exact(ember.matmul(a3:unsqueeze(2), b4), want4, dt, what .. " 4-D broadcast")
      end
    end)

    it("addmm: alpha, beta, a broadcast bias, beta 0 ignoring NaN, and K = 0", function()
      local M, K, N = 7, 19, 5
      local A, B, Cv = ints(M * K, 61, 8), ints(K * N, 62, 8), ints(M * N, 63, 30)
      local P = ref_mm(A, B, M, K, N)
      local a, b, c = T(A, M, K, dt), T(B, K, N, dt), T(Cv, M, N, dt)
      local want = {}
      for i = 1, M * N do want[i] = 0.5 * Cv[i] + 2 * P[i] end
      check_exact(ember.addmm(c, a, b, {beta = 0.5, alpha = 2}), want, dt, "addmm beta 0.5 alpha 2")
      local bias = ints(N, 64, 30)
      for i = 1, M * N do want[i] = bias[(i - 1) % N + 1] + P[i] end
      check_exact(ember.addmm(ember.tensor(bias, {dtype = dt}), a, b), want, dt, "addmm bias")
      local nan = ember.full({M, N}, 0 / 0, {dtype = dt})
      for i = 1, M * N do want[i] = -P[i] end
      check_exact(ember.addmm(nan, a, b, {beta = 0, alpha = -1}), want, dt, "addmm beta 0")
      local empty = ember.addmm(c, ember.zeros(M, 0, {dtype = dt}), ember.zeros(0, N, {dtype = dt}), {beta = 0.5})
      for i = 1, M * N do want[i] = 0.5 * Cv[i] end
      check_exact(empty, want, dt, "addmm K = 0")
      check_exact(ember.matmul(ember.zeros(3, 0, {dtype = dt}), ember.zeros(0, 4, {dtype = dt})),
                  {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, dt, "K = 0")
      H.check_shape(ember.matmul(ember.zeros(0, 3, {dtype = dt}), ember.zeros(3, 4, {dtype = dt})), {0, 4})
    end)

    it("random values: within one unit in the last place of the double product", function()
      ember.manual_seed(5)
      for _, s in ipairs({{64, 96, 48}, {1, 130, 3}, {17, 5, 129}}) do
        local M, K, N = s[1], s[2], s[3]
        local a, b = ember.randn(M, K):to(dt), ember.randn(K, N):to(dt)
        local want, sums = ref_mm(flat(a), flat(b), M, K, N)
        check_ulp(ember.matmul(a, b), want, sums, dt, "randn")
        check_ulp(ember.matmul(a:t():contiguous():t(), b), want, sums, dt, "randn a^T")
      end
    end)

    it("the fused linear layer: forward with bias, and the gradients of x, w and b", function()
      local M, K, N = 37, 29, 23
      local X, W, Bv, G = ints(M * K, 71, 6), ints(N * K, 72, 6), ints(N, 73, 50), ints(M * N, 74, 4)
      local x = T(X, M, K, dt):requires_grad_()
      local w = T(W, N, K, dt):requires_grad_()
      local b = ember.tensor(Bv, {dtype = dt}):requires_grad_()
      local y = F.linear(x, w, b)
      local want = ref_mm(X, transpose(W, N, K), M, K, N)
      for i = 1, M * N do want[i] = want[i] + Bv[(i - 1) % N + 1] end
      check_exact(y, want, dt, "linear forward")
      local gs = {ember.autograd.grad((y * T(G, M, N, dt)):sum(), {x, w, b})}
      check_exact(gs[1], ref_mm(G, W, M, N, K), dt, "linear grad x")
      check_exact(gs[2], ref_mm(transpose(G, M, N), X, N, M, K), dt, "linear grad w")
      local gb = {}
      for j = 1, N do
        gb[j] = 0
        for i = 1, M do gb[j] = gb[j] + G[(i - 1) * N + j] end
      end
      check_exact(gs[3], gb, dt, "linear grad b")
    end)

    it("the fused GELU layer: within one unit in the last place of the exact GELU", function()
      local M, K, N = 9, 11, 13
      local X, W = ints(M * K, 81, 3), ints(N * K, 82, 3)
      local P = ref_mm(X, transpose(W, N, K), M, K, N)
      local want = {}
      for i = 1, M * N do
        local v = P[i] / 8
        want[i] = 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ^ 3)))
      end
      local zeros = {}
      for i = 1, M * N do zeros[i] = 0 end
      -- the weights scaled by 1/8 (exact) keep the inputs in GELU's curved part
      local y = F.linear(T(X, M, K, dt), T(W, N, K, dt) / 8, nil, {activation = "gelu_tanh"})
      check_ulp(y, want, zeros, dt, "linear gelu")
    end)

    it("refuses mismatched shapes with the op and the shapes in the message", function()
      local e = H.err(function() local y = ember.matmul(ember.zeros(2, 3, {dtype = dt}), ember.zeros(4, 5, {dtype = dt})); return y end)
      assert.is_truthy(e:find("inner dimensions", 1, true), e)
      assert.is_truthy(e:find("gemm_bf16_spec.lua", 1, true), e)
      e = H.err(function() local y = ember.bmm(ember.zeros(2, 2, 3, {dtype = dt}), ember.zeros(3, 3, 4, {dtype = dt})); return y end)
      assert.is_truthy(e:find("bmm", 1, true), e)
    end)
  end)
end
