-- Docstrings of ember.linalg (lua/ember/linalg.lua over lua/bind_lapack.c and
-- engine/linalg_decomp.c: LAPACK on the CPU, cuSOLVER on the GPU) and of
-- ember.cross / Tensor:cross. Format: lua/ember/doc/ember.lua's header.

local entries = {}

local function add(e) entries[#entries + 1] = e end

local BATCH = "\nBatched over the leading dims; float32 and float64 (integer inputs are refused);\n"
  .. "differentiable (gradients as PyTorch's)."

add {
  name = "ember.linalg.det",
  sig = "ember.linalg.det(A) -> tensor [...]",
  doc = "The determinant of square A [..., n, n] (through LU; 0 for a singular matrix).\n"
    .. "The gradient is det(A) A^-T, and the cofactor matrix (through the SVD) where A is\n"
    .. "singular; a gradient of that gradient at a singular A is an error." .. BATCH
    .. "\nLike torch.linalg.det.",
  example = [=[
print(ember.linalg.det(ember.tensor({{2., 1}, {1, 3}})))   -- tensor(5.)]=],
}

add {
  name = "ember.linalg.slogdet",
  sig = "ember.linalg.slogdet(A) -> sign, logabsdet",
  doc = "The sign (-1, 0 or 1) and log |det A| of square A: (0, -inf) for a singular matrix." .. BATCH
    .. "\nLike torch.linalg.slogdet.",
  example = [=[
local s, la = ember.linalg.slogdet(ember.tensor({{0., 2}, {3, 0}}))
print(s, la)     -- tensor(-1.)  tensor(1.7918)]=],
}

add {
  name = "ember.linalg.inv",
  sig = "ember.linalg.inv(A) -> tensor",
  doc = "The inverse of square A. A singular matrix is an error naming the zero pivot (\"linalg.inv:\n"
    .. "The diagonal element 2 is zero, ...\"). " .. BATCH .. "\nLike torch.linalg.inv.",
  example = [=[
print(ember.linalg.inv(ember.tensor({{2., 0}, {0, 4}})))]=],
}

add {
  name = "ember.linalg.solve",
  sig = "ember.linalg.solve(A, B, [left]) / ember.linalg.solve(A, B, {left = true})",
  doc = [[
X with A X = B (left = false: X A = B). A [..., n, n]; B [..., n, k], or a vector: 1-D, or
with A's batch shape plus n (X is then a vector too). Batch dims broadcast. Singular A and
incompatible shapes are errors.]] .. BATCH .. "\nLike torch.linalg.solve.",
  example = [=[
print(ember.linalg.solve(ember.tensor({{2., 1}, {1, 3}}), ember.tensor({5., 10})))   -- [1, 3]]=],
}

add {
  name = "ember.linalg.cholesky",
  sig = "ember.linalg.cholesky(A, [upper]) / ember.linalg.cholesky(A, {upper = false})",
  doc = "Lower-triangular L with A = L L^T (upper: U = L^T, A = U^T U) for symmetric\n"
    .. "positive-definite A (its lower triangle is read). An indefinite A is an error\n"
    .. "naming the leading minor.\n"
    .. BATCH:sub(2) .. "\nLike torch.linalg.cholesky.",
  example = [=[
print(ember.linalg.cholesky(ember.tensor({{4., 2}, {2, 5}})))   -- [[2, 0], [1, 2]]]=],
}

add {
  name = "ember.linalg.qr",
  sig = "ember.linalg.qr(A, [mode]) -> Q, R   mode: \"reduced\" (default), \"complete\", \"r\"",
  doc = [[
A = Q R with Q's columns orthonormal and R upper-triangular: Q [..., m, k], R [..., k, n],
k = min(m, n) ("reduced"); Q [..., m, m], R [..., m, n] ("complete"); "r": R only
(Q empty).
The gradient exists for "reduced" (and "complete" with m <= n); "r" refuses it.]] .. BATCH .. "\nLike torch.linalg.qr.",
  example = [=[
local A = ember.randn(4, 3, {dtype = "float64"})
local Q, R = ember.linalg.qr(A)
print((Q:matmul(R) - A):abs():max():item() < 1e-12)   -- true]=],
}

add {
  name = "ember.linalg.svd",
  sig = "ember.linalg.svd(A, [full_matrices]) -> U, S, Vh",
  doc = [[
A = U diag(S) Vh with S descending and non-negative. full_matrices (default true): U
[..., m, m], Vh [..., n, n]; false: U [..., m, k], Vh [..., k, n]. Singular vectors are
unique up to sign: differentiate losses that do not depend on the signs (the gradient is
PyTorch's; it is not defined for repeated singular values).]] .. BATCH .. "\nLike torch.linalg.svd.",
  example = [=[
local U, S, Vh = ember.linalg.svd(ember.tensor({{3., 0}, {0, -2}}))
print(S)    -- [3, 2]]=],
}

add {
  name = "ember.linalg.svdvals",
  sig = "ember.linalg.svdvals(A) -> S",
  doc = "The singular values of A, descending (gradient U diag(gS) Vh)." .. BATCH
    .. "\nLike torch.linalg.svdvals.",
  example = [=[
print(ember.linalg.svdvals(ember.tensor({{3., 0}, {0, -2}})))   -- [3, 2]]=],
}

add {
  name = "ember.linalg.eigh",
  sig = "ember.linalg.eigh(A, [UPLO]) -> eigenvalues, eigenvectors   UPLO: \"L\" (default) or \"U\"",
  doc = "Eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric A; only the\n"
    .. "triangle UPLO names is read. Eigenvectors are unique up to sign." .. BATCH .. "\nLike torch.linalg.eigh.",
  example = [=[
local w, V = ember.linalg.eigh(ember.tensor({{2., 1}, {1, 2}}))
print(w)   -- [1, 3]]=],
}

add {
  name = "ember.linalg.eigvalsh",
  sig = "ember.linalg.eigvalsh(A, [UPLO]) -> eigenvalues",
  doc = "The eigenvalues of symmetric A, ascending." .. BATCH .. "\nLike torch.linalg.eigvalsh.",
  example = [=[
print(ember.linalg.eigvalsh(ember.tensor({{2., 1}, {1, 2}})))   -- [1, 3]]=],
}

add {
  name = "ember.linalg.pinv",
  sig = "ember.linalg.pinv(A, {atol =, rtol =, hermitian = false})",
  doc = [[
The Moore-Penrose pseudo-inverse, through the SVD (hermitian: the eigendecomposition).
Singular values at most max(atol, rtol * largest) count as 0; defaults as PyTorch (rtol =
eps * max(m, n) when neither is given). The gradient is PyTorch's pinv formula (constant
rank).]] .. BATCH .. "\nLike torch.linalg.pinv.",
  example = [=[
print(ember.linalg.pinv(ember.tensor({{1., 2}, {2, 4}})))   -- A / 25]=],
}

add {
  name = "ember.linalg.lstsq",
  sig = "ember.linalg.lstsq(A, B, [rcond], [driver]) -> solution, residuals, rank, singular_values",
  doc = [[
The least-squares solution of A X = B (B [..., m, k] or a vector [..., m]). Every driver
computes X = pinv(A) B with singular values at most rcond * largest dropped (gelsd's
semantics; differentiable through pinv); rcond default eps * max(m, n). The other results
follow PyTorch's driver ("gelsy" default on the CPU, "gels" on CUDA): gelsd and gelss give
rank and singular values, gelsy the rank only, gels neither; residuals (||A X - B||^2 per
column) when m > n and A has full rank, never for gelsy. Like torch.linalg.lstsq.]],
  example = [=[
local A = ember.tensor({{1., 0}, {0, 1}, {1, 1}})
local X, res, rank = ember.linalg.lstsq(A, ember.tensor({1., 1, 3}), {driver = "gelsd"})
print(X, res, rank)   -- [1.3333, 1.3333]  0.3333  2]=],
}

add {
  name = "ember.linalg.matrix_rank",
  sig = "ember.linalg.matrix_rank(A, {atol =, rtol =, hermitian = false}) -> int64",
  doc = "The number of singular values above max(atol, rtol * largest) (tolerances as\npinv). Batched. "
    .. "Like torch.linalg.matrix_rank.",
  example = [=[
print(ember.linalg.matrix_rank(ember.tensor({{1., 2}, {2, 4}})))   -- tensor(1)]=],
}

add {
  name = "ember.linalg.matrix_power",
  sig = "ember.linalg.matrix_power(A, n) -> tensor",
  doc = "A^n for an integer n by repeated squaring; n = 0 gives I, n < 0 powers inv(A). Batched,\n"
    .. "differentiable. Like torch.linalg.matrix_power.",
  example = [=[
print(ember.linalg.matrix_power(ember.tensor({{1., 1}, {0, 1}}), 3))   -- [[1, 3], [0, 1]]]=],
}

add {
  name = "ember.linalg.cross",
  sig = "ember.linalg.cross(a, b, [dim]) / ember.linalg.cross(a, b, {dim = -1})",
  doc = "The cross product along dim (size 3 there; 1-based, default the last); other dims\n"
    .. "broadcast. Differentiable. Like torch.linalg.cross.",
  example = [=[
print(ember.linalg.cross(ember.tensor({1., 0, 0}), ember.tensor({0., 1, 0})))   -- [0, 0, 1]]=],
}

add {
  name = "ember.cross",
  also = {"Tensor:cross"},
  sig = "ember.cross(a, b, [dim]) / a:cross(b, [dim]) / ember.cross(a, b, {dim =})",
  doc = "The cross product along dim (1-based); without dim, along the first dim of size 3, as\n"
    .. "torch.cross. Broadcasts; differentiable; integers allowed.",
  example = [=[
print(ember.tensor({1, 2, 3}):cross(ember.tensor({4, 5, 6})))   -- [-3, 6, -3]]=],
}

add {
  name = "ember.linalg.vector_norm",
  sig = "ember.linalg.vector_norm(x, [ord], [dim], [keepdim], {dtype =})",
  doc = "The ord-norm (default 2; inf, -inf, 0 and any p) of x over dim (a dim or a table; default\n"
    .. "all). dtype casts first. Differentiable. Like torch.linalg.vector_norm.",
  example = [=[
print(ember.linalg.vector_norm(ember.tensor({3., -4})), ember.linalg.vector_norm(ember.tensor({3., -4}), math.huge))]=],
}

add {
  name = "ember.linalg.matrix_norm",
  sig = "ember.linalg.matrix_norm(A, [ord], [dim], [keepdim], {dtype =})",
  doc = [[
ord: "fro" (default), "nuc" (sum of singular values), 2 / -2 (largest / smallest singular
value), 1 / -1 (largest / smallest column sum of |A|), inf / -inf (row sums). dim: the two
dims of the matrices (default {-2, -1}). Differentiable. Like torch.linalg.matrix_norm.]],
  example = [=[
local A = ember.tensor({{1., -2}, {3, 4}})
print(ember.linalg.matrix_norm(A, 1), ember.linalg.matrix_norm(A, math.huge))   -- 6  7]=],
}

add {
  name = "ember.linalg.norm",
  sig = "ember.linalg.norm(A, [ord], [dim], [keepdim], {dtype =})",
  doc = [[
A vector or matrix norm as torch.linalg.norm decides: a string ord or two dims give
matrix_norm; one dim or a 1-D input vector_norm; no ord and no dim the 2-norm of all
elements (ord with no dim needs a 1-D or 2-D input). ember.norm / Tensor:norm stay as
they were.]],
  example = [=[
print(ember.linalg.norm(ember.tensor({{3., 0}, {0, 4}})))   -- 5]=],
}

-- ---- composed in lua/ember/linalg.lua: triangular solves, LU, the _ex forms, ... ----------

local COMPOSED = "\nComposed of ember ops: batched, differentiable, on every device."

add {
  name = "ember.linalg.solve_triangular",
  sig = "ember.linalg.solve_triangular(A, B, {upper =, left = true, unitriangular = false}) -> X",
  doc = [[
X with A X = B (left = false: X A = B) for triangular A [..., n, n]: only the triangle
upper names is read (and not the diagonal when unitriangular, which takes it as ones); B
[..., n, k] (left) or [..., k, n], at least 2-D; batch dims broadcast. upper is a
required keyword. A zero on the diagonal gives inf and NaN, not an error (as PyTorch).
The gradient of A is on its triangle only. Runs as LAPACK's solve of the triangle (which
exchanges no rows there), or by substitution when the diagonal holds a zero.]] .. COMPOSED
    .. "\nLike torch.linalg.solve_triangular.",
  example = [=[
local A = ember.tensor({{2., 1}, {0, 4}})
print(ember.linalg.solve_triangular(A, ember.tensor({{3.}, {4}}), {upper = true}))   -- [[1], [1]]]=],
}

add {
  name = "ember.linalg.lu_factor",
  sig = "ember.linalg.lu_factor(A, {pivot = true}) -> LU, pivots",
  doc = [[
The LU decomposition with partial pivoting of A [..., m, n], compactly: LU holds L's
multipliers below the diagonal and U on and above it; pivots [..., min(m, n)] int32 are
LAPACK's, 1-based (row j was exchanged with row pivots[j]), as PyTorch's. A zero on U's
diagonal is an error (use lu_factor_ex). No LAPACK getrf is bound: it is a loop over the
min(m, n) columns, about a dozen ember ops each on the whole matrix (some 15 times
LAPACK's flops, plus min(m, n) times the per-op cost: 50 ms at n = 256 on the CPU).
pivot = false factors without exchanges, on every device (PyTorch: CUDA only).]] .. COMPOSED
    .. "\nLike torch.linalg.lu_factor.",
  example = [=[
local LU, pivots = ember.linalg.lu_factor(ember.tensor({{1., 2}, {3, 4}}))
print(LU, pivots)   -- [[3, 4], [0.3333, 0.6667]]  [2, 2]]=],
}

add {
  name = "ember.linalg.lu_factor_ex",
  sig = "ember.linalg.lu_factor_ex(A, {pivot = true, check_errors = false}) -> LU, pivots, info",
  doc = "lu_factor without the error: info [...] (int32) is LAPACK's, the first j with U[j, j] = 0\n"
    .. "(0 when there is none); check_errors = true raises lu_factor's error instead." .. COMPOSED
    .. "\nLike torch.linalg.lu_factor_ex.",
  example = [=[
local LU, pivots, info = ember.linalg.lu_factor_ex(ember.tensor({{1., 2}, {2, 4}}))
print(info)   -- tensor(2, dtype=int32)]=],
}

add {
  name = "ember.linalg.lu",
  sig = "ember.linalg.lu(A, {pivot = true}) -> P, L, U",
  doc = [[
A = P L U for A [..., m, n]: P [..., m, m] a permutation matrix, L [..., m, k] unit
lower-triangular, U [..., k, n] upper-triangular, k = min(m, n). With pivot = false P
is empty. Through lu_factor (its cost).]] .. COMPOSED .. "\nLike torch.linalg.lu.",
  example = [=[
local P, L, U = ember.linalg.lu(ember.tensor({{1., 2}, {3, 4}}))
print(P:matmul(L):matmul(U))   -- A back]=],
}

add {
  name = "ember.linalg.lu_solve",
  sig = "ember.linalg.lu_solve(LU, pivots, B, {left = true, adjoint = false}) -> X",
  doc = [[
X with A X = B for A given by lu_factor's LU and pivots (int32); adjoint: A^T X = B;
left = false: X A = B (X A^T = B with adjoint). Batch dims of LU and B broadcast; the
gradients of LU and B are PyTorch's.]] .. COMPOSED .. "\nLike torch.linalg.lu_solve.",
  example = [=[
local LU, pivots = ember.linalg.lu_factor(ember.tensor({{2., 1}, {1, 3}}))
print(ember.linalg.lu_solve(LU, pivots, ember.tensor({{5.}, {10}})))   -- [[1], [3]]]=],
}

add {
  name = "ember.linalg.inv_ex",
  sig = "ember.linalg.inv_ex(A, {check_errors = false}) -> inverse, info",
  doc = [[
linalg.inv without the error: info [...] (int32) is LAPACK's, the first zero pivot of
A's LU (0 for an invertible matrix); the inverse of a singular matrix holds PyTorch's inf
and NaN (from the factors, as LAPACK's getrs). check_errors = true raises instead,
naming the batch element (1-based).]] .. BATCH .. "\nLike torch.linalg.inv_ex.",
  example = [=[
local X, info = ember.linalg.inv_ex(ember.tensor({{1., 2}, {2, 4}}))
print(info)   -- tensor(2, dtype=int32)]=],
}

add {
  name = "ember.linalg.cholesky_ex",
  sig = "ember.linalg.cholesky_ex(A, {upper = false, check_errors = false}) -> L, info",
  doc = [[
linalg.cholesky without the error: info [...] (int32) is the order of the first leading
minor that is not positive-definite (0 when A is). Where info > 0 the factor holds NaN
(PyTorch's holds LAPACK's partial factorization). check_errors = true raises instead.]]
    .. BATCH .. "\nLike torch.linalg.cholesky_ex.",
  example = [=[
local L, info = ember.linalg.cholesky_ex(ember.tensor({{1., 2}, {2, 1}}))
print(info)   -- tensor(2, dtype=int32)]=],
}

add {
  name = "ember.linalg.solve_ex",
  sig = "ember.linalg.solve_ex(A, B, {left = true, check_errors = false}) -> result, info",
  doc = "linalg.solve without the error for a singular A: info as inv_ex's, the result PyTorch's\n"
    .. "inf and NaN there. check_errors = true raises instead." .. BATCH .. "\nLike torch.linalg.solve_ex.",
  example = [=[
local X, info = ember.linalg.solve_ex(ember.tensor({{2., 0}, {0, 4}}), ember.tensor({2., 2}))
print(X, info)   -- [1, 0.5]  0]=],
}

add {
  name = "ember.linalg.matrix_exp",
  also = {"ember.matrix_exp", "Tensor:matrix_exp"},
  sig = "ember.linalg.matrix_exp(A) / ember.matrix_exp(A) / A:matrix_exp()",
  doc = [[
The exponential of square A [..., n, n]: scaling and squaring with the [13/13] Padé
approximant (Higham 2005), each matrix of a batch scaled by its own 2^s (its 1-norm
brought under 5.37), accurate to float64's precision. The gradient is that of the ops
(PyTorch's is through the exponential of a block matrix; they agree to about 1e-12).]]
    .. COMPOSED .. "\nLike torch.linalg.matrix_exp.",
  example = [=[
print(ember.linalg.matrix_exp(ember.tensor({{0., 1}, {0, 0}})))   -- [[1, 1], [0, 1]]]=],
}

add {
  name = "ember.linalg.cond",
  sig = "ember.linalg.cond(A, [p]) -> tensor [...]",
  doc = [[
The condition number of A in the norm p: nil, 2 (largest over smallest singular value,
any m x n), -2 (smallest over largest), or for square A "fro", "nuc", inf, -inf, 1, -1
(norm(A, p) * norm(inv(A), p); inf for a singular matrix). Empty matrices give 0.
Differentiable (PyTorch's own backward fails for the orders other than 2 and -2).]]
    .. COMPOSED .. "\nLike torch.linalg.cond.",
  example = [=[
print(ember.linalg.cond(ember.tensor({{2., 0}, {0, 0.5}})))   -- 4]=],
}

add {
  name = "ember.linalg.multi_dot",
  sig = "ember.linalg.multi_dot({A1, A2, ...}) -> tensor",
  doc = [[
The product of two or more matrices in the order that needs fewest multiplications
(dynamic programming, as PyTorch). The first may be a 1-D row vector and the last a 1-D
column vector (their dims are dropped from the result); the others are 2-D; one dtype
(integers allowed).]] .. COMPOSED .. "\nLike torch.linalg.multi_dot.",
  example = [=[
print(ember.linalg.multi_dot({ember.ones(2), ember.ones(2, 3), ember.ones(3)}))   -- tensor(6.)]=],
}

add {
  name = "ember.chain_matmul",
  sig = "ember.chain_matmul(A1, A2, ...) -> tensor",
  doc = "The product of one or more 2-D matrices, through linalg.multi_dot (one matrix: a copy).\n"
    .. "Deprecated in PyTorch. Like torch.chain_matmul.",
  example = [=[
print(ember.chain_matmul(ember.ones(2, 3), ember.ones(3, 4), ember.ones(4, 1)))   -- [[12], [12]]]=],
}

add {
  name = "ember.linalg.vecdot",
  sig = "ember.linalg.vecdot(x, y, {dim = -1}) -> tensor",
  doc = "The dot product of x and y (broadcast) along dim (keyword-only; 1-based, negative from the\n"
    .. "end): sum(x * y, dim). Float dtypes, both the same." .. COMPOSED .. "\nLike torch.linalg.vecdot.",
  example = [=[
print(ember.linalg.vecdot(ember.tensor({{1., 2}, {3, 4}}), ember.tensor({1., 1})))   -- [3, 7]]=],
}

add {
  name = "ember.linalg.diagonal",
  sig = "ember.linalg.diagonal(A, {offset = 0, dim1 = -2, dim2 = -1}) -> view",
  doc = "A:diagonal(offset, dim1, dim2) with the defaults on the last two dims (keyword-only; dims\n"
    .. "1-based). Like torch.linalg.diagonal.",
  example = [=[
print(ember.linalg.diagonal(ember.arange(9.):reshape(3, 3), {offset = 1}))   -- [1, 5]]=],
}

add {
  name = "ember.linalg.matmul",
  sig = "ember.linalg.matmul(input, other) -> tensor",
  doc = "ember.matmul under torch.linalg's name. Like torch.linalg.matmul.",
  example = [=[
print(ember.linalg.matmul(ember.ones(2, 3), ember.ones(3)))   -- [3, 3]]=],
}

add {
  name = "ember.linalg.vander",
  sig = "ember.linalg.vander(x, {N = x.shape[-1]}) -> tensor [..., n, N]",
  doc = "The Vandermonde matrix of x [..., n]: columns x^0, x^1, ..., x^(N-1) (increasing powers,\n"
    .. "unlike ember.vander's default), as a running product; N > 1. Integer x gives integers."
    .. COMPOSED .. "\nLike torch.linalg.vander.",
  example = [=[
print(ember.linalg.vander(ember.tensor({1, 2, 3})))   -- [[1, 1, 1], [1, 2, 4], [1, 3, 9]]]=],
}

add {
  name = "ember.linalg.householder_product",
  sig = "ember.linalg.householder_product(A, tau) -> Q [..., m, n]",
  doc = [[
The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T with v_i column i of A
[..., m, n] below the diagonal and 1 on it (geqrf's form); tau [..., k], m >= n >= k.
A loop over the k reflectors.]] .. COMPOSED .. "\nLike torch.linalg.householder_product.",
  example = [=[
print(ember.linalg.householder_product(ember.zeros(2, 2), ember.tensor({2., 0})))   -- [[-1, 0], [0, 1]]]=],
}

-- ---- PyTorch's top-level names (lua/ember/composite/linalg.lua) ---------------------------

local function top(name, args, doc, example, fn_only)
  local sig = "ember." .. name .. "(" .. args .. ")"
  local also
  if not fn_only then
    also = {"Tensor:" .. name}
    sig = sig .. "\nTensor:" .. name .. "(" .. args:gsub("^[%w_]+,? ?", "") .. ")"
  end
  add {name = "ember." .. name, also = also, sig = sig, doc = doc, example = example}
end

top("det", "A", "linalg.det(A). Like torch.det.", "print(ember.tensor({{2., 1}, {1, 3}}):det())   -- 5")
top("logdet", "A", "log det A: NaN for a negative determinant, -inf for a zero one (through slogdet; its\n"
  .. "gradient). Like torch.logdet.", "print(ember.logdet(ember.tensor({{2., 0}, {0, 3}})))   -- log 6 = 1.7918")
top("slogdet", "A", "sign, logabsdet as linalg.slogdet. Like torch.slogdet.",
  "print(ember.slogdet(ember.tensor({{0., 2}, {3, 0}})))   -- -1  1.7918")
top("inverse", "A", "linalg.inv(A). Like torch.inverse.", "print(ember.tensor({{2., 0}, {0, 4}}):inverse())")
top("pinverse", "A, [rcond = 1e-15]", "linalg.pinv(A, {atol = 0, rtol = rcond}): singular values at most rcond\n"
  .. "times the largest count as 0. Like torch.pinverse.",
  "-- rcond above float32's rounding, so that the second singular value (0) is dropped\n"
  .. "print(ember.pinverse(ember.tensor({{1., 2}, {2, 4}}), 1e-6))   -- A / 25")
top("matrix_power", "A, n", "linalg.matrix_power(A, n). Like torch.matrix_power.",
  "print(ember.tensor({{1., 1}, {0, 1}}):matrix_power(3))   -- [[1, 3], [0, 1]]")
top("qr", "A, [some = true]", "Q, R = linalg.qr(A, some and \"reduced\" or \"complete\"). Recent PyTorch\n"
  .. "releases have removed it. Like torch.qr.",
  "local Q, R = ember.qr(ember.tensor({{3., 0}, {4, 5}}))\nprint(R)")
top("svd", "A, [some = true], [compute_uv = true]", [[
U, S, V with A = U diag(S) V^T: V, not linalg.svd's Vh. some = true: U [..., m, k], V
[..., n, k]; false: U [..., m, m], V [..., n, n]. compute_uv = false: S, and U and V
zero-filled [..., m, m] and [..., n, n]. Like torch.svd.]],
  "local U, S, V = ember.svd(ember.tensor({{3., 0}, {0, -2}}))\nprint(S, U:matmul(ember.diag(S)):matmul(V.mT))")
top("cholesky", "A, [upper = false]", "linalg.cholesky(A, {upper = upper}). Recent PyTorch releases have\n"
  .. "removed it. Like torch.cholesky.", "print(ember.cholesky(ember.tensor({{4., 2}, {2, 5}})))   -- [[2, 0], [1, 2]]")
top("cholesky_solve", "B, L, [upper = false]", [[
X with A X = B for A = L L^T (upper: U^T U) given its Cholesky factor; only L's triangle
is read, but the gradient of L is PyTorch's, which takes L as a full matrix in L L^T.
Batch dims broadcast. Like torch.cholesky_solve.]],
  "local L = ember.linalg.cholesky(ember.tensor({{4., 2}, {2, 5}}))\n"
  .. "print(ember.cholesky_solve(ember.tensor({{6.}, {7}}), L))   -- [[1], [1]]")
top("cholesky_inverse", "L, [upper = false]", [[
The inverse of A = L L^T (upper: U^T U) from its Cholesky factor (cholesky_solve of the
identity, its gradient); a zero on L's diagonal is an error, as LAPACK's potri.
Like torch.cholesky_inverse.]],
  "print(ember.cholesky_inverse(ember.tensor({{2., 0}, {1, 1}})))   -- inv([[4, 2], [2, 2]])")
top("triangular_solve", "b, A, [upper = true], [transpose = false], [unitriangular = false]", [[
solution, cloned_coefficient: X with A X = b (transpose: A^T X = b) reading A's upper or
lower triangle (linalg.solve_triangular), and a copy of A. Note the order b, A.
Like torch.triangular_solve.]],
  "print(ember.triangular_solve(ember.tensor({{3.}, {4}}), ember.tensor({{2., 1}, {0, 4}})))")
top("lu_solve", "b, LU_data, LU_pivots", "linalg.lu_solve(LU_data, LU_pivots, b): note the order. Like torch.lu_solve.",
  "local LU, p = ember.linalg.lu_factor(ember.tensor({{2., 1}, {1, 3}}))\n"
  .. "print(ember.lu_solve(ember.tensor({{5.}, {10}}), LU, p))   -- [[1], [3]]")
top("lu", "A, [pivot = true], [get_infos = false]", "LU, pivots (and info with get_infos) as\n"
  .. "linalg.lu_factor_ex; never an error for a singular matrix. Like torch.lu.",
  "local LU, pivots = ember.tensor({{1., 2}, {3, 4}}):lu()\nprint(pivots)   -- [2, 2]")
top("lu_unpack", "LU_data, LU_pivots, [unpack_data = true], [unpack_pivots = true]", [[
P, L, U from lu_factor's LU and pivots (A = P L U); unpack_data = false leaves L and U
empty, unpack_pivots = false P. Like torch.lu_unpack.]],
  "local P, L, U = ember.lu_unpack(ember.linalg.lu_factor(ember.tensor({{1., 2}, {3, 4}})))\nprint(P)", true)

return entries
