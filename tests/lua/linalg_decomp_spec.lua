-- linalg_decomp_spec.lua — ember.linalg (decompositions, solves, norms).
-- Expected values come from independent computations: the defining
-- identities (A = QR, Q^T Q = I, U S Vh = A, A x = b, A V = V diag(L)),
-- hand-made triangular products for det, naive Lua loops, central finite
-- differences (gradcheck in float64 on well-conditioned inputs), and PyTorch
-- fixtures (tests/lua/fixtures/linalg_*.lua from
-- scripts/fixtures/make_linalg_fixtures.py).
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local L = ember.linalg
local gradcheck = ember.autograd.gradcheck

local function F64(t) return ember.tensor(t, {dtype = "float64"}) end
local function R(...)
  local args = {...}
  args[#args + 1] = {dtype = "float64"}
  return ember.randn(table.unpack(args))
end
-- a well-conditioned [..., n, n]: random plus n on the diagonal
local function wellcond(n, ...)
  local sizes = {...}
  sizes[#sizes + 1] = n
  sizes[#sizes + 1] = n
  return R(table.unpack(sizes)) + ember.eye(n, {dtype = "float64"}) * n
end
-- symmetric positive definite
local function spd(n, ...)
  local X = wellcond(n, ...)
  return X:matmul(X:transpose(-1, -2)) + ember.eye(n, {dtype = "float64"})
end
local function maxdiff(a, b) return (a - b):abs():max():item() end
local function near(a, b, tol) assert(maxdiff(a, b) <= (tol or 1e-10), "differ by " .. maxdiff(a, b)) end
local function I(n) return ember.eye(n, {dtype = "float64"}) end
local function T(x) return x:transpose(-1, -2) end

describe("linalg.det and slogdet", function()
  it("equal the product of the diagonal of a triangular matrix, and are multiplicative", function()
    local U = F64({{2, 7, -1}, {0, -3, 4}, {0, 0, 0.5}})
    near(L.det(U), F64(-3), 1e-12)
    local Lo = F64({{1.5, 0, 0}, {2, 4, 0}, {-1, 3, -2}})
    near(L.det(Lo), F64(-12), 1e-12)
    -- det(Lo U) = det(Lo) det(U); a row swap flips the sign
    near(L.det(Lo:matmul(U)), F64(36), 1e-10)
    local P = F64({{0, 1, 0}, {1, 0, 0}, {0, 0, 1}})
    near(L.det(P:matmul(U)), F64(3), 1e-12)
    local s, la = L.slogdet(P:matmul(Lo:matmul(U)))
    near(s, F64(-1), 0)
    near(la, F64(math.log(36)), 1e-10)
  end)

  it("are batched, give 0 / (0, -inf) for singular matrices, and work in float32", function()
    local A = wellcond(3, 4, 2)
    local d = L.det(A)
    h.check_shape(d, {4, 2})
    near(d[2][1], L.det(A[2][1]), 1e-10)
    local S = F64({{1, 2}, {2, 4}})
    assert(L.det(S):item() == 0)
    local s, la = L.slogdet(S)
    assert(s:item() == 0 and la:item() == -math.huge)
    local A32 = A:float()
    assert(A32.dtype == "float32" and L.det(A32).dtype == "float32")
    assert(maxdiff(L.det(A32):double(), d) < 1e-3 * d:abs():max():item())
  end)

  it("have gradients (gradcheck)", function()
    assert(gradcheck(L.det, {wellcond(3, 2)}))
    assert(gradcheck(function(A) local _, la = L.slogdet(A); return la end, {wellcond(3, 2)}))
  end)

  it("det's gradient at a singular matrix is its cofactor matrix", function()
    -- det is a polynomial: finite differences hold at singular points too
    local S = F64({{1, 2}, {2, 4}}):requires_grad_()
    L.det(S):backward()
    near(S.grad, F64({{4, -2}, {-2, 1}}), 1e-10)          -- cofactors of [[a, b], [c, d]]: [[d, -c], [-b, a]]
    local rank2 = F64({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})  -- singular
    assert(gradcheck(L.det, {rank2}))
    -- cofactor (1, 1) = 5*9 - 6*8 = -3, (2, 3) = -(1*8 - 2*7) = 6
    local x = rank2:clone():requires_grad_()
    L.det(x):backward()
    near(x.grad[1][1], F64(-3), 1e-10)
    near(x.grad[2][3], F64(6), 1e-10)
    -- rank 1 in 3x3: every cofactor is 0; a batch mixing singular and invertible matrices
    local batch = ember.stack({F64({{1, 1, 1}, {2, 2, 2}, {3, 3, 3}}), wellcond(3)}):requires_grad_()
    L.det(batch):sum():backward()
    near(batch.grad[1], ember.zeros(3, 3, {dtype = "float64"}), 1e-10)
    near(batch.grad[2], L.det(batch[2]:detach()) * T(L.inv(batch[2]:detach())), 1e-9)
    -- the gradient of the gradient there is refused, not wrong
    local y = rank2:clone():requires_grad_()
    has(err(function() local g = ember.autograd.grad(L.det(y), y, {create_graph = true}); return g end),
        "linalg.det: the gradient of the gradient at a singular matrix is not supported")
  end)

  it("refuse non-square, 1-D and integer inputs", function()
    has(err(L.det, R(2, 3)), "linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices")
    has(err(L.det, R(3)), "at least 2 dimensions")
    has(err(L.slogdet, ember.ones(2, 2, {dtype = "int64"})), "int64")
  end)
end)

describe("linalg.inv and solve", function()
  it("inv(A) A = I, batched and float32", function()
    local A = wellcond(4, 3)
    near(L.inv(A):matmul(A), I(4):expand(3, 4, 4), 1e-10)
    local A32 = A:float()
    assert(maxdiff(L.inv(A32):matmul(A32):double(), I(4)) < 1e-4)
  end)

  it("solve: A X = B with broadcast batches and a vector B; left = false solves X A = B", function()
    local A = wellcond(3, 2, 1)
    local B = R(4, 3, 2)
    local X = L.solve(A, B)
    h.check_shape(X, {2, 4, 3, 2})
    near(A:matmul(X), B:expand(2, 4, 3, 2), 1e-10)
    local b = R(3)
    local A2 = wellcond(3)
    local x = L.solve(A2, b)
    h.check_shape(x, {3})
    near(A2:matmul(x), b, 1e-10)
    -- a batch of vectors: B has A's batch shape plus n
    local Ab, bb = wellcond(3, 5), R(5, 3)
    local xb = L.solve(Ab, bb)
    h.check_shape(xb, {5, 3})
    near(Ab:matmul(xb:unsqueeze(-1)):squeeze(-1), bb, 1e-10)
    local C = R(2, 3)
    local Y = L.solve(A2, C, {left = false})
    near(Y:matmul(A2), C, 1e-10)
  end)

  it("solves a hand-made system", function()
    -- 2x + y = 5, x + 3y = 10  ->  x = 1, y = 3
    h.check(L.solve(F64({{2, 1}, {1, 3}}), F64({5, 10})), {1, 3}, 1e-12)
  end)

  it("have gradients (gradcheck)", function()
    assert(gradcheck(L.inv, {wellcond(3, 2)}))
    assert(gradcheck(L.solve, {wellcond(3, 2), R(2, 3, 2)}))
    assert(gradcheck(L.solve, {wellcond(3), R(2, 3, 1)}))   -- broadcast A
    assert(gradcheck(L.solve, {wellcond(3), R(3)}))
  end)

  it("name singular matrices and bad shapes as PyTorch does", function()
    local S = F64({{1, 2}, {2, 4}})
    has(err(L.inv, S), "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed " ..
      "because the input matrix is singular.")
    has(err(L.inv, S:expand(3, 2, 2)), "linalg.inv: (Batch element 1): The diagonal element 2 is zero")
    has(err(L.solve, S, F64({1, 2})), "input matrix is singular")
    has(err(L.solve, I(2), R(3)), "linalg.solve: Incompatible shapes of A and B for the equation AX = B ([2,2] and [3])")
    has(err(L.solve, I(2), R(3, 1)), "Incompatible shapes")
    has(err(L.solve, I(2), ember.ones(2)), "same dtype")
    has(err(L.inv, ember.ones(2, 3, {dtype = "float64"})), "but they are 2 by 3 matrices")
    has(err(L.inv, ember.eye(2, {dtype = "int32"})), "int32")
    -- the error points at the caller's line
    local ok, e = pcall(function() local y = L.inv(S); return y end)
    assert(not ok and e:find("linalg_decomp_spec.lua", 1, true), e)
  end)
end)

describe("linalg.cholesky", function()
  it("L L^T = A with L lower (upper: U^T U = A)", function()
    local A = spd(4, 3)
    local Lo = L.cholesky(A)
    near(Lo:matmul(T(Lo)), A, 1e-9)
    near(Lo:triu(1), ember.zeros(3, 4, 4, {dtype = "float64"}), 0)
    local U = L.cholesky(A, {upper = true})
    near(T(U):matmul(U), A, 1e-9)
    -- by hand: [[4, 2], [2, 5]] = [[2, 0], [1, 2]] [[2, 1], [0, 2]]
    h.check(L.cholesky(F64({{4, 2}, {2, 5}})), {{2, 0}, {1, 2}}, 1e-12)
  end)

  it("has a gradient (gradcheck through a symmetric input)", function()
    assert(gradcheck(function(X) return L.cholesky(X:matmul(T(X)) + I(3) * 3) end, {R(2, 3, 3)}))
    assert(gradcheck(function(X) return L.cholesky(X:matmul(T(X)) + I(3) * 3, true) end, {R(3, 3)}))
  end)

  it("names the minor that is not positive-definite", function()
    has(err(L.cholesky, F64({{1, 2}, {2, 1}})), "linalg.cholesky: The factorization could not be completed " ..
      "because the input is not positive-definite (the leading minor of order 2 is not positive-definite).")
    has(err(L.cholesky, F64({{1, 0, 0}, {0, 1, 0}, {0, 0, -1}}):expand(2, 3, 3)),
      "(Batch element 1): The factorization could not be completed because the input is not positive-definite " ..
      "(the leading minor of order 3")
    has(err(L.cholesky, R(2, 3)), "square")
  end)
end)

describe("linalg.qr", function()
  it("A = QR with orthonormal Q and upper-triangular R, every mode and shape", function()
    for _, shape in ipairs({{5, 3}, {3, 5}, {4, 4}}) do
      local A = R(2, shape[1], shape[2])
      local k = math.min(shape[1], shape[2])
      local Q, Rr = L.qr(A)
      h.check_shape(Q, {2, shape[1], k})
      h.check_shape(Rr, {2, k, shape[2]})
      near(Q:matmul(Rr), A, 1e-10)
      near(T(Q):matmul(Q), I(k):expand(2, k, k), 1e-10)
      near(Rr:tril(-1), ember.zeros(2, k, shape[2], {dtype = "float64"}), 0)
      local Qc, Rc = L.qr(A, "complete")
      h.check_shape(Qc, {2, shape[1], shape[1]})
      near(Qc:matmul(Rc), A, 1e-10)
      near(T(Qc):matmul(Qc), I(shape[1]):expand(2, shape[1], shape[1]), 1e-10)
      local Qr, Rm = L.qr(A, {mode = "r"})
      assert(Qr:numel() == 0)
      near(Rm:abs(), Rr:abs(), 1e-10)
    end
  end)

  it("has gradients for mode 'reduced' (gauge-free: Q R is unique with R's diagonal signs)", function()
    assert(gradcheck(function(A) return L.qr(A) end, {R(2, 5, 3)}))
    assert(gradcheck(function(A) return L.qr(A) end, {R(4, 4)}))
    assert(gradcheck(function(A) return L.qr(A) end, {R(3, 5)}))
  end)

  it("refuses the derivative of mode 'r', unknown modes and integers", function()
    local A = R(3, 3):requires_grad_()
    local _, Rm = L.qr(A, "r")
    has(err(function() Rm:sum():backward() end), "mode='r'")
    has(err(L.qr, R(3, 3), "full"), "unrecognized mode 'full'")
    has(err(L.qr, R(3, 3), 5), "linalg.qr: mode must be a string, got number")
    -- the C halves check their argument types too (robustness_spec calls them at random)
    has(err(ember._linalg_qr, R(3, 3), {}), "linalg.qr: argument 2: expected a string, got table")
    has(err(ember._linalg_eigh, I(2), true), "linalg.eigh: argument 2: expected a string, got boolean")
    has(err(L.qr, ember.ones(2, 3, {dtype = "int32"})), "int32")
  end)
end)

describe("linalg.svd and svdvals", function()
  it("U diag(S) Vh = A with orthonormal factors and sorted non-negative S", function()
    for _, shape in ipairs({{5, 3}, {3, 5}, {4, 4}}) do
      local A = R(3, shape[1], shape[2])
      local k = math.min(shape[1], shape[2])
      local U, S, Vh = L.svd(A, false)
      h.check_shape(S, {3, k})
      near((U * S:unsqueeze(-2)):matmul(Vh), A, 1e-10)
      near(T(U):matmul(U), I(k):expand(3, k, k), 1e-10)
      near(Vh:matmul(T(Vh)), I(k):expand(3, k, k), 1e-10)
      local s = S:tolist()
      for b = 1, 3 do for i = 2, k do assert(s[b][i - 1] >= s[b][i] and s[b][i] >= 0) end end
      local Uf, _, Vhf = L.svd(A)
      h.check_shape(Uf, {3, shape[1], shape[1]})
      h.check_shape(Vhf, {3, shape[2], shape[2]})
      near(T(Uf):matmul(Uf), I(shape[1]):expand(3, shape[1], shape[1]), 1e-10)
      near(L.svdvals(A), S, 1e-10)
    end
    -- by hand: diag(3, -2) has singular values 3, 2
    h.check(L.svdvals(F64({{3, 0}, {0, -2}})), {3, 2}, 1e-12)
  end)

  it("have gradients for gauge-invariant losses", function()
    assert(gradcheck(L.svdvals, {R(2, 4, 3)}))
    for _, shape in ipairs({{5, 3}, {3, 5}, {4, 4}}) do
      -- U diag(S) Vh and the projector U U^T do not depend on the signs of the vectors
      assert(gradcheck(function(A)
        local U, S, Vh = L.svd(A, false)
        return (U * S:unsqueeze(-2)):matmul(Vh), U:matmul(T(U)), T(Vh):matmul(Vh), S
      end, {R(shape[1], shape[2])}))
    end
    assert(gradcheck(function(A)
      local U, S, Vh = L.svd(A, true)
      local k = S.shape[S:dim()]
      return U:narrow(-1, 1, k):matmul(T(U:narrow(-1, 1, k))), S, T(Vh:narrow(-2, 1, k)):matmul(Vh:narrow(-2, 1, k))
    end, {R(4, 3)}))
  end)
end)

describe("linalg.eigh and eigvalsh", function()
  it("A V = V diag(L) with ascending L, from the triangle UPLO names", function()
    local A = spd(4, 2) - I(4) * 10
    local W, V = L.eigh(A)
    near(A:matmul(V), V * W:unsqueeze(-2), 1e-9)
    near(T(V):matmul(V), I(4):expand(2, 4, 4), 1e-10)
    local w = W:tolist()
    for b = 1, 2 do for i = 2, 4 do assert(w[b][i - 1] <= w[b][i]) end end
    near(L.eigvalsh(A), W, 1e-10)
    -- only one triangle is read: garbage in the other changes nothing
    local lower = A:tril() + A:triu(1) * 0 + ember.ones(4, 4, {dtype = "float64"}):triu(1) * 100
    near(L.eigvalsh(lower), W, 1e-9)
    local upper = A:triu() + ember.ones(4, 4, {dtype = "float64"}):tril(-1) * 100
    near(L.eigvalsh(upper, "U"), W, 1e-9)
    near(select(1, L.eigh(upper, {UPLO = "U"})), W, 1e-9)
    -- by hand: [[2, 1], [1, 2]] has eigenvalues 1, 3
    h.check(L.eigvalsh(F64({{2, 1}, {1, 2}})), {1, 3}, 1e-12)
  end)

  it("have gradients for gauge-invariant losses", function()
    local sym = function(X) return X + T(X) end
    assert(gradcheck(function(X) return L.eigvalsh(sym(X)) end, {R(2, 4, 4)}))
    assert(gradcheck(function(X)
      local W, V = L.eigh(sym(X))
      return W, V:matmul(W:unsqueeze(-1) * T(V)), V[{{}, {1}}]:matmul(T(V[{{}, {1}}]))
    end, {R(4, 4)}))
  end)

  it("refuse a bad UPLO and non-square input", function()
    has(err(L.eigh, I(2), "X"), "UPLO")
    has(err(L.eigvalsh, R(2, 3)), "square")
  end)
end)

describe("linalg.pinv, lstsq, matrix_rank", function()
  it("pinv satisfies the Moore-Penrose conditions; equals inv for invertible A", function()
    for _, shape in ipairs({{5, 3}, {3, 5}}) do
      local A = R(2, shape[1], shape[2])
      local P = L.pinv(A)
      near(A:matmul(P):matmul(A), A, 1e-10)
      near(P:matmul(A):matmul(P), P, 1e-10)
      near(A:matmul(P), T(A:matmul(P)), 1e-10)
    end
    local A = wellcond(3)
    near(L.pinv(A), L.inv(A), 1e-10)
    local S = spd(3)
    near(L.pinv(S, {hermitian = true}), L.inv(S), 1e-10)
    -- rank-deficient: [[1, 2], [2, 4]] = v v^T / 5 with v = (1, 2) * sqrt(5) ... pinv = A / 25
    near(L.pinv(F64({{1, 2}, {2, 4}})), F64({{1, 2}, {2, 4}}) / 25, 1e-12)
    near(L.pinv(F64({{1, 2}, {2, 4}}), {hermitian = true}), F64({{1, 2}, {2, 4}}) / 25, 1e-12)
    -- atol above every singular value: all dropped
    near(L.pinv(A, {atol = 1e6}), ember.zeros(3, 3, {dtype = "float64"}), 0)
  end)

  it("pinv has a gradient", function()
    assert(gradcheck(L.pinv, {R(4, 3)}))
    assert(gradcheck(L.pinv, {R(2, 3, 4)}))
    assert(gradcheck(function(X) return L.pinv(X + T(X) + I(3) * 6, {hermitian = true}) end, {R(3, 3)}))
  end)

  it("lstsq minimises ||AX - B|| (normal equations) and reports by driver", function()
    local A, B = R(6, 3), R(6, 2)
    local X, res, rank, sv = L.lstsq(A, B, {driver = "gelsd"})
    near(T(A):matmul(A:matmul(X) - B), ember.zeros(3, 2, {dtype = "float64"}), 1e-10)
    near(res, (A:matmul(X) - B):square():sum(1), 1e-10)
    assert(rank:item() == 3 and rank.dtype == "int64")
    near(sv, L.svdvals(A), 1e-12)
    local X2, res2, rank2, sv2 = L.lstsq(A, B)     -- gelsy on the CPU, as PyTorch
    near(X2, X, 1e-10)
    assert(res2:numel() == 0 and rank2:item() == 3 and sv2:numel() == 0)
    local _, res3, rank3, sv3 = L.lstsq(A, B, nil, "gels")
    assert(res3:numel() == 2 and rank3:numel() == 0 and sv3:numel() == 0)
    -- rank-deficient: no residuals, rank 1
    local D = F64({{1, 2}, {2, 4}, {3, 6}})
    local _, rr, rk = L.lstsq(D, F64({1, 2, 3}), {driver = "gelsd"})
    assert(rr:numel() == 0 and rk:item() == 1)
    assert(gradcheck(function(a, b) return (L.lstsq(a, b)) end, {R(5, 3), R(5, 2)}))
    has(err(L.lstsq, A, R(5, 2)), "linalg.lstsq")
    has(err(L.lstsq, A, B, {driver = "foo"}), "driver")
  end)

  it("matrix_rank counts the singular values above the tolerance", function()
    h.check(L.matrix_rank(F64({{1, 2}, {2, 4}})), 1)
    h.check(L.matrix_rank(wellcond(4, 2)), {4, 4})
    h.check(L.matrix_rank(F64({{1, 0}, {0, 1e-3}}), {atol = 1e-2}), 1)
    h.check(L.matrix_rank(F64({{1, 0}, {0, 1e-3}}), {rtol = 1e-2}), 1)
    h.check(L.matrix_rank(F64({{2, 1}, {1, 2}}), {hermitian = true}), 2)
  end)
end)

describe("linalg.matrix_power and cross", function()
  it("matrix_power multiplies out, with inv for negative powers", function()
    local A = wellcond(3, 2)
    near(L.matrix_power(A, 3), A:matmul(A):matmul(A), 1e-9)
    near(L.matrix_power(A, 0), I(3):expand(2, 3, 3), 0)
    near(L.matrix_power(A, -2):matmul(A:matmul(A)), I(3):expand(2, 3, 3), 1e-10)
    assert(gradcheck(function(X) return L.matrix_power(X, 5) end, {R(3, 3) * 0.5}))
    assert(gradcheck(function(X) return L.matrix_power(X, -2) end, {wellcond(3)}))
    has(err(L.matrix_power, R(2, 3), 2), "linalg.matrix_power: A must be batches of square matrices")
  end)

  it("cross: by hand, broadcast, along a dim, as ember.cross and t:cross", function()
    h.check(L.cross(F64({1, 0, 0}), F64({0, 1, 0})), {0, 0, 1})
    h.check(L.cross(F64({1, 2, 3}), F64({4, 5, 6})), {-3, 6, -3})
    local a, b = R(4, 3), R(1, 3)
    local c = L.cross(a, b)
    h.check_shape(c, {4, 3})
    near((c * a):sum(-1), ember.zeros(4, {dtype = "float64"}), 1e-12)
    local at = L.cross(T(a), T(b):expand(3, 4), {dim = 1})
    near(T(at), c, 1e-14)
    near(ember.cross(a, b:expand(4, 3)), c, 1e-14)
    near(a:cross(b:expand(4, 3), 2), c, 1e-14)
    h.check(ember.cross(ember.tensor({1, 0, 0}), ember.tensor({0, 1, 0})), {0, 0, 1})
    assert(gradcheck(L.cross, {R(2, 3), R(2, 3)}))
    has(err(L.cross, R(2), R(2)), "linalg.cross: inputs dimension 1 must have length 3. Got 2 and 2")
  end)
end)

describe("linalg norms", function()
  local A = F64({{1, -2, 3}, {-4, 5, -6}})
  it("vector_norm: ord, dim, keepdim, dtype", function()
    h.check(L.vector_norm(A), math.sqrt(91), 1e-12)
    h.check(L.vector_norm(A, 1), 21)
    h.check(L.vector_norm(A, math.huge), 6)
    h.check(L.vector_norm(A, -math.huge), 1)
    h.check(L.vector_norm(A, 0), 6)
    h.check(L.vector_norm(A, 3, 2), {(1 + 8 + 27) ^ (1 / 3), (64 + 125 + 216) ^ (1 / 3)}, 1e-12)
    h.check_shape(L.vector_norm(A, 2, {1, 2}, true), {1, 1})
    assert(L.vector_norm(A:float(), {dtype = "float64"}).dtype == "float64")
    assert(gradcheck(function(x) return L.vector_norm(x, 3, 2) end, {R(2, 3)}))
    has(err(L.vector_norm, ember.ones(3, {dtype = "int64"})), "int64")
  end)

  it("matrix_norm: every order, over any two dims", function()
    h.check(L.matrix_norm(A), math.sqrt(91), 1e-12)
    h.check(L.matrix_norm(A, 1), 9)                 -- largest column sum
    h.check(L.matrix_norm(A, -1), 5)
    h.check(L.matrix_norm(A, math.huge), 15)        -- largest row sum
    h.check(L.matrix_norm(A, -math.huge), 6)
    local S = L.svdvals(A):tolist()
    h.check(L.matrix_norm(A, "nuc"), S[1] + S[2], 1e-12)
    h.check(L.matrix_norm(A, 2), S[1], 1e-12)
    h.check(L.matrix_norm(A, -2), S[2], 1e-12)
    local B = R(3, 2, 4)
    near(L.matrix_norm(B, "nuc", {1, 3}), L.matrix_norm(B:permute(2, 1, 3), "nuc"), 1e-12)
    h.check_shape(L.matrix_norm(B, 1, {1, 3}, true), {1, 2, 1})
    h.check_shape(L.matrix_norm(B, "nuc", {1, 3}, true), {1, 2, 1})
    for _, ord in ipairs({"fro", "nuc", 1, -1, 2, -2, math.huge, -math.huge}) do
      assert(gradcheck(function(x) return L.matrix_norm(x, ord) end, {R(2, 3, 4)}), tostring(ord))
    end
    has(err(L.matrix_norm, A, 3), "Order 3 not supported")
    has(err(L.matrix_norm, R(3)), "at least 2 dimensions")
    -- the elementwise orders take a half dtype (no LAPACK), the singular values do not
    local Ab = ember.tensor({{3, 4}, {0, 0}}):bfloat16()
    h.check(L.matrix_norm(Ab), 5)
    assert.equal("bfloat16", L.matrix_norm(Ab, 1).dtype)
    has(err(L.matrix_norm, Ab, "nuc"), "Expected a float32 or float64 tensor as input, got bfloat16")
    has(err(L.matrix_norm, ember.tensor({{1, 2}, {3, 4}})), "Expected a floating point tensor as input, got int64")
  end)

  it("norm dispatches as torch.linalg.norm; ember.norm keeps working", function()
    h.check(L.norm(A), math.sqrt(91), 1e-12)
    h.check(L.norm(A, "nuc"), L.matrix_norm(A, "nuc"):item(), 1e-12)
    h.check(L.norm(A, 1), 9)                      -- 2-D with ord: matrix norm
    h.check(L.norm(F64({3, -4}), 1), 7)           -- 1-D: vector norm
    h.check(L.norm(A, 1, 2), {6, 15})
    assert(L.norm(R(2, 3, 4)):dim() == 0)
    has(err(L.norm, R(2, 3, 4), 2), "the input must be 1D or 2D")
    h.check(A:norm(), math.sqrt(91), 1e-12)
  end)
end)

describe("linalg against PyTorch (fixtures)", function()
  local ok, fx = pcall(dofile, "tests/lua/fixtures/linalg_decomp.lua")
  it("matches torch.linalg values and gradients", function()
    assert(ok, "fixture missing: run scripts/fixtures/make_linalg_fixtures.py")
    for _, c in ipairs(fx) do
      local A = F64(c.A)
      local f = L[c.op]
      local args = {A}
      if c.B then args[2] = F64(c.B) end
      for _, extra in ipairs(c.args or {}) do args[#args + 1] = extra end
      local got = f(table.unpack(args))
      h.check(got, c.out, 1e-9)
      if c.grad then
        local Ag = A:clone():requires_grad_()
        args[1] = Ag
        local y = f(table.unpack(args))
        local W = F64(c.w)
        local _ = (y * W):sum():backward()
        h.check(Ag.grad, c.grad, 1e-8)
      end
    end
  end)
end)

describe("linalg functions without optional arguments", function()
  it("refuse an extra argument instead of dropping it", function()
    local A = F64({{2, 0}, {0, 4}})
    has(err(L.det, A, 5), "linalg.det: expected at most 0 optional arguments, got 1")
    has(err(L.slogdet, A, true), "linalg.slogdet: expected at most 0 optional arguments, got 1")
    has(err(L.inv, A, {out = A}), "linalg.inv: unexpected keyword 'out'")
    has(err(L.svdvals, A, {full_matrices = false}), "linalg.svdvals: unexpected keyword 'full_matrices'")
    has(err(L.matrix_power, A, 2, 3), "linalg.matrix_power: expected at most 0 optional arguments, got 1")
    -- and still work without: det 8, inverse diag(0.5, 0.25), A^2 = diag(4, 16)
    assert.are.equal(8, L.det(A):item())
    assert.are.same({{0.5, 0}, {0, 0.25}}, L.inv(A):tolist())
    assert.are.same({{4, 0}, {0, 16}}, L.matrix_power(A, 2):tolist())
  end)
end)
