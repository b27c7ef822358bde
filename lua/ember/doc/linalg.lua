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

return entries
