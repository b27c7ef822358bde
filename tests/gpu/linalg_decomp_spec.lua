-- linalg_decomp_spec.lua (GPU) — ember.linalg's factorisations and solves
-- (cuSOLVER) on the device under test against the CPU backend (LAPACK), on
-- the same inputs: float32 and float64, batched. Factors that are unique only
-- up to signs (Q, U, V, eigenvectors) are compared through gauge-free
-- quantities (Q R, U S Vh, projectors); gradients of losses built from those.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local L = ember.linalg
local agree = g.agree
local TOL = {float32 = 1e-3, float64 = 1e-9}

local function R(d, ...)
  local s = {...}
  s[#s + 1] = {dtype = d}
  return ember.randn(table.unpack(s))
end
local function wellcond(d, n, b) return R(d, b, n, n) + ember.eye(n, {dtype = d}) * n end
local function T(x) return x:transpose(-1, -2) end

for _, d in ipairs(g.float_dtypes) do
  local o = {atol = TOL[d], rtol = TOL[d]}
  describe("linalg on the device, " .. d, function()
    it("det, slogdet, inv, solve (broadcast, vector B)", function()
      ember.manual_seed(1)
      local A = wellcond(d, 4, 3)
      agree(function(a) return L.det(a), L.inv(a) end, {A}, o)
      agree(function(a) return L.slogdet(a) end, {A}, o)
      agree(function(a, b) return L.solve(a, b) end, {A, R(d, 2, 1, 4, 2)}, o)
      agree(function(a, b) return L.solve(a, b) end, {A[1], R(d, 4)}, o)
    end)

    it("cholesky, qr, svd, eigh through gauge-free quantities", function()
      ember.manual_seed(2)
      local X = wellcond(d, 4, 2)
      local S = X:matmul(T(X))
      agree(function(a) return L.cholesky(a), L.cholesky(a, {upper = true}) end, {S}, o)
      for _, shape in ipairs({{5, 3}, {3, 5}, {4, 4}}) do
        local A = R(d, 2, shape[1], shape[2])
        agree(function(a)
          local Q, Rr = L.qr(a)
          local Qc = L.qr(a, "complete")
          return Q:matmul(Rr), Rr:abs(), Qc:matmul(T(Qc))
        end, {A}, o)
        agree(function(a)
          local U, s, Vh = L.svd(a, false)
          local Uf, _, Vhf = L.svd(a)
          return s, (U * s:unsqueeze(-2)):matmul(Vh), Uf:matmul(T(Uf)), T(Vhf):matmul(Vhf), L.svdvals(a)
        end, {A}, o)
      end
      agree(function(a)
        local W, V = L.eigh(a)
        return W, V:matmul(W:unsqueeze(-1) * T(V)), L.eigvalsh(a, "U")
      end, {S}, o)
    end)

    it("pinv, lstsq, matrix_rank, norms", function()
      ember.manual_seed(3)
      local A = R(d, 2, 5, 3)
      agree(function(a) return L.pinv(a), L.matrix_rank(a), L.matrix_norm(a, "nuc"), L.matrix_norm(a, 2) end, {A}, o)
      agree(function(a, b) local x, r, k, s = L.lstsq(a, b, {driver = "gelsd"}); return x, r, k, s end,
        {A, R(d, 2, 5, 2)}, o)
    end)

    it("gradients agree", function()
      ember.manual_seed(4)
      local function grads(f)
        return function(a)
          local x = a:detach():requires_grad_()
          local y = f(x)
          local w = ember.ones(y.shape, {dtype = y.dtype, device = y.device})
          return ember.autograd.grad({(y * w):sum()}, {x})
        end
      end
      local A = wellcond(d, 3, 2)
      agree(grads(L.det), {A}, o)
      agree(grads(L.inv), {A}, o)
      agree(grads(function(a) return L.cholesky(a:matmul(T(a))) end), {A}, o)
      agree(grads(function(a) local Q, Rr = L.qr(a); return Q:matmul(Rr) + Rr:abs():sum() end), {R(d, 5, 3)}, o)
      agree(grads(L.svdvals), {R(d, 4, 3)}, o)
      agree(grads(function(a) return L.eigvalsh(a + T(a)) end), {R(d, 4, 4)}, o)
      agree(grads(L.pinv), {R(d, 4, 3)}, o)
    end)

    it("reports singular and indefinite inputs as the CPU does", function()
      local Sg = ember.tensor({{1, 2}, {2, 4}}, {dtype = d})
      g.has(g.err(L.inv, g.dev(Sg)), "The diagonal element 2 is zero")
      g.has(g.err(L.cholesky, g.dev(ember.tensor({{1, 2}, {2, 1}}, {dtype = d}))),
        "the leading minor of order 2 is not positive-definite")
    end)
  end)
end
