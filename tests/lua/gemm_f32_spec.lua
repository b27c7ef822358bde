-- gemm_f32_spec.lua — large float32 products on the CPU, which go through
-- oneDNN's brgemm matmul first (engine/cpu/dnnl_matmul.c; OpenBLAS when oneDNN
-- declines or EMBER_DNNL=0). Small integers make every product and sum exact in
-- float32, so each result must equal the exact sum (plain Lua loops) exactly,
-- whichever library ran it. Sizes are past gemm.c's DNNL_F32_MIN (2^20
-- multiply-adds) and not multiples of the kernels' block widths; layouts:
-- contiguous, transposed, rows with gaps, batches, a broadcast batch, alpha and
-- beta (addmm), and the linear layer's forward and both gradients.
local ember = require "ember"
local F = ember.nn.functional

local H = require "helpers"
local ints, nest, transpose, ref_mm = H.lcg_ints, H.nest, H.transpose_flat, H.ref_mm

local function check_exact(got, want, what)
  assert.are.equal("float32", got.dtype, what)
  local g = got:to("float64"):reshape(-1):tolist()
  assert.are.equal(#want, #g, what .. ": element count")
  for i = 1, #want do
    if g[i] ~= want[i] then
      error(string.format("%s: element %d: expected %.9g, got %.9g", what, i, want[i], g[i]), 2)
    end
  end
end

local function T(flat, rows, cols) return ember.tensor(nest(flat, rows, cols), {dtype = "float32"}) end

local M, K, N = 130, 97, 90          -- 1.13M multiply-adds
local A, B = ints(M * K, 11, 8), ints(K * N, 23, 8)
local want = ref_mm(A, B, M, K, N)

describe("large float32 matmul on the CPU", function()
  it("is exact on small integers: contiguous, transposed, with gaps", function()
    local a, b = T(A, M, K), T(B, K, N)
    check_exact(ember.matmul(a, b), want, "a @ b")
    local at, bt = T(transpose(A, M, K), K, M):t(), T(transpose(B, K, N), N, K):t()
    check_exact(ember.matmul(at, b), want, "a^T view @ b")
    check_exact(ember.matmul(a, bt), want, "a @ b^T view")
    check_exact(ember.matmul(at, bt), want, "a^T view @ b^T view")
    local wide = {}
    for i = 1, M do
      for j = 1, K + 5 do wide[(i - 1) * (K + 5) + j] = j <= K and A[(i - 1) * K + j] or 77 end
    end
    check_exact(ember.matmul(T(wide, M, K + 5):narrow(2, 1, K), b), want, "rows with gaps @ b")
  end)

  it("is exact for batches and a broadcast batch", function()
    local A2 = ints(M * K, 31, 8)
    local want2 = ref_mm(A2, B, M, K, N)
    local a = ember.stack({T(A, M, K), T(A2, M, K)})
    local b = T(B, K, N)
    local both = {}
    for i = 1, #want do both[i] = want[i] end
    for i = 1, #want2 do both[#want + i] = want2[i] end
    check_exact(ember.matmul(a, b), both, "[2, M, K] @ [K, N] (broadcast b)")
    check_exact(ember.bmm(a, ember.stack({b, b})), both, "bmm [2, M, K] @ [2, K, N]")
  end)

  it("is exact with alpha and beta (addmm)", function()
    local Cin = ints(M * N, 41, 8)
    local c = T(Cin, M, N)
    local got = ember.addmm(c, T(A, M, K), T(B, K, N), {beta = 0.5, alpha = 2})
    local w = {}
    for i = 1, #want do w[i] = 0.5 * Cin[i] + 2 * want[i] end
    check_exact(got, w, "addmm beta 0.5, alpha 2")
  end)

  it("gives the linear layer's output and both gradients exactly", function()
    -- x [M, K], weight [N, K] (so x @ weight^T), bias [N]; the loss is sum(y * g)
    local Wt = transpose(B, K, N)                  -- weight [N, K]
    local bias = ints(N, 53, 8)
    local G = ints(M * N, 59, 4)
    local x = T(A, M, K):requires_grad_()
    local w = T(Wt, N, K):requires_grad_()
    local bb = ember.tensor(bias, {dtype = "float32", requires_grad = true})
    local y = F.linear(x, w, bb)
    local wy = {}
    for i = 1, M do
      for j = 1, N do wy[(i - 1) * N + j] = want[(i - 1) * N + j] + bias[j] end
    end
    check_exact(y, wy, "linear forward")
    local loss = (y * T(G, M, N)):sum()
    loss:backward()
    check_exact(x.grad, ref_mm(G, Wt, M, N, K), "dx = g @ weight")
    check_exact(w.grad, ref_mm(transpose(G, M, N), A, N, M, K), "dweight = g^T @ x")
  end)

  it("is within float32's rounding bound of the float64 product on random values", function()
    -- |error| <= K eps sum |a||b| for any summation order
    local a, b = ember.randn(M, K), ember.randn(K, N)
    local r = ember.matmul(a, b):to("float64")
    local exact = ember.matmul(a:to("float64"), b:to("float64"))
    local bound = ember.matmul(a:abs():to("float64"), b:abs():to("float64")) * (K * 2 ^ -23)
    assert.is_true(((r - exact):abs() - bound):max():item() <= 0)
  end)
end)
