-- ember.linalg: linear algebra as torch.linalg (loaded on first use of ember.linalg).
--
-- The factorisations and solves are C functions (lua/bind_lapack.c over
-- engine/linalg_decomp.c: LAPACK on the CPU, cuSOLVER on the GPU, with their
-- own gradients); the rest is composed here from them and other ember ops
-- (norms, lstsq, matrix_rank, matrix_power, triangular solves, LU,
-- matrix_exp, the _ex forms), which gives those gradients and GPU support
-- for free. Arguments follow PyTorch: positional in its order, or keywords
-- in a trailing options table.
local ember = require "ember"
local errors = require "ember.errors"

local raise = errors.raise
local options = require("ember.args").options
local shape_str = errors.shape_str
local M = {}

-- Calls a C function, re-raising its error at the user's line.
local function call(f, ...)
  local r = table.pack(pcall(f, ...))
  if not r[1] then raise(r[2]) end
  return table.unpack(r, 2, r.n)
end

local function is_tensor(x) return ember.is_tensor(x) end

-- A trailing options table: a plain table with no array part.
local function is_opts(x) return type(x) == "table" and not is_tensor(x) and x[1] == nil end

-- Reads optional arguments given positionally (in names' order) or as one
-- trailing options table; unknown keywords are refused.
local function args(op, names, ...)
  local n = select("#", ...)
  local pos = {...}
  local out = {}
  local opts
  if n > 0 and is_opts(pos[n]) then
    opts = pos[n]
    n = n - 1
  end
  if n > #names then raise(string.format("%s: expected at most %d optional arguments, got %d", op, #names, n)) end
  for i = 1, n do out[names[i]] = pos[i] end
  if opts then
    local known = {}
    for _, k in ipairs(names) do known[k] = true end
    for k, v in pairs(opts) do
      if not known[k] then raise(string.format("%s: unexpected keyword '%s'", op, tostring(k))) end
      if out[k] ~= nil then raise(string.format("%s: '%s' given twice", op, k)) end
      out[k] = v
    end
  end
  return out
end

local function check_tensor(x, op, what)
  if not is_tensor(x) then
    raise(string.format("%s: %s must be a tensor, got %s", op, what or "A", type(x)))
  end
end

local function check_float(x, op)
  if x.dtype ~= "float32" and x.dtype ~= "float64" then
    raise(string.format("%s: Expected a float32 or float64 tensor as input, got %s", op, x.dtype))
  end
end

-- A (what names it: "A" unless given) is a tensor of 2 dims or more, of a dtype
-- LAPACK takes (float32, float64), or any float dtype when any_float (the norms
-- composed of elementwise ops); returns its last two sizes
local function check_matrix(A, op, any_float, what)
  what = what or "A"
  check_tensor(A, op, what)
  if A:dim() < 2 then
    raise(string.format("%s: The input tensor %s must have at least 2 dimensions, got %d", op, what, A:dim()))
  end
  if not any_float then
    check_float(A, op)
  elseif not A:is_floating_point() then
    raise(string.format("%s: Expected a floating point tensor as input, got %s", op, A.dtype))
  end
  return A.shape[A:dim() - 1], A.shape[A:dim()]
end

local function check_bool(v, op, name)
  if v ~= nil and type(v) ~= "boolean" then
    raise(string.format("%s: %s must be a boolean, got %s", op, name, type(v)))
  end
end

local function check_number(v, op, name)
  if v ~= nil and type(v) ~= "number" then
    raise(string.format("%s: %s must be a number, got %s", op, name, type(v)))
  end
end

-- ---- factorisations and solves -------------------------------------------------

-- linalg.<name>(A): the C half ember._linalg_<name> on A alone; anything after A is
-- refused, not dropped
local function of_matrix(name)
  local op, f = "linalg." .. name, ember["_linalg_" .. name]
  return function(A, ...)
    args(op, {}, ...)
    check_tensor(A, op)
    return call(f, A)
  end
end

M.det = of_matrix("det")
M.slogdet = of_matrix("slogdet")   -- sign, logabsdet
M.inv = of_matrix("inv")
M.svdvals = of_matrix("svdvals")

function M.solve(A, B, ...)
  local a = args("linalg.solve", {"left"}, ...)
  check_tensor(A, "linalg.solve")
  check_tensor(B, "linalg.solve", "B")
  check_bool(a.left, "linalg.solve", "left")
  return call(ember._linalg_solve, A, B, a.left ~= false)
end

function M.cholesky(A, ...)
  local a = args("linalg.cholesky", {"upper"}, ...)
  check_tensor(A, "linalg.cholesky")
  check_bool(a.upper, "linalg.cholesky", "upper")
  return call(ember._linalg_cholesky, A, a.upper == true)
end

--- Q, R
function M.qr(A, ...)
  local a = args("linalg.qr", {"mode"}, ...)
  check_tensor(A, "linalg.qr")
  if a.mode ~= nil and type(a.mode) ~= "string" then
    raise(string.format("linalg.qr: mode must be a string, got %s", type(a.mode)))
  end
  return call(ember._linalg_qr, A, a.mode or "reduced")
end

--- U, S, Vh
function M.svd(A, ...)
  local a = args("linalg.svd", {"full_matrices"}, ...)
  check_tensor(A, "linalg.svd")
  check_bool(a.full_matrices, "linalg.svd", "full_matrices")
  return call(ember._linalg_svd, A, a.full_matrices ~= false)
end

-- The arguments of eigh and eigvalsh: A checked, and the triangle read (UPLO, "L" by default).
local function eigh_args(op, A, ...)
  local a = args(op, {"UPLO"}, ...)
  check_tensor(A, op)
  if a.UPLO ~= nil and type(a.UPLO) ~= "string" then
    raise(string.format("%s: UPLO must be 'L' or 'U', got %s", op, type(a.UPLO)))
  end
  return a.UPLO or "L"
end

--- eigenvalues (ascending), eigenvectors
function M.eigh(A, ...)
  return call(ember._linalg_eigh, A, eigh_args("linalg.eigh", A, ...))
end

function M.eigvalsh(A, ...)
  return call(ember._linalg_eigvalsh, A, eigh_args("linalg.eigvalsh", A, ...))
end

local function tol_args(a, op)
  check_number(a.atol, op, "atol")
  check_number(a.rtol, op, "rtol")
  check_bool(a.hermitian, op, "hermitian")
  if a.atol ~= nil and not (a.atol >= 0) then raise(op .. ": atol must be non-negative") end
  if a.rtol ~= nil and not (a.rtol >= 0) then raise(op .. ": rtol must be non-negative") end
end

function M.pinv(A, ...)
  local a = args("linalg.pinv", {"atol", "rtol", "hermitian"}, ...)
  check_tensor(A, "linalg.pinv")
  tol_args(a, "linalg.pinv")
  return call(ember._linalg_pinv, A, a.atol, a.rtol, a.hermitian == true)
end

function M.cross(a, b, ...)
  local o = args("linalg.cross", {"dim"}, ...)
  check_tensor(a, "linalg.cross", "input")
  check_tensor(b, "linalg.cross", "other")
  if o.dim ~= nil and math.type(o.dim) ~= "integer" then
    raise(string.format("linalg.cross: dim must be an integer, got %s", tostring(o.dim)))
  end
  return call(ember._linalg_cross, a, b, o.dim or -1)
end

-- ---- composed ops --------------------------------------------------------------

local function eps_of(dtype) return dtype == "float64" and 2.220446049250313e-16 or 1.1920928955078125e-07 end

function M.matrix_rank(A, ...)
  local a = args("linalg.matrix_rank", {"atol", "rtol", "hermitian"}, ...)
  local op = "linalg.matrix_rank"
  check_matrix(A, op)
  tol_args(a, op)
  local s
  if a.hermitian then
    s = call(ember._linalg_eigvalsh, A, "L"):abs()
  else
    s = call(ember._linalg_svdvals, A)
  end
  local m, n = A.shape[A:dim() - 1], A.shape[A:dim()]
  local rtol = a.rtol or (a.atol == nil and eps_of(A.dtype) * math.max(m, n) or 0)
  local atol = a.atol or 0
  if s.shape[s:dim()] == 0 then return ember.zeros(table.unpack(s.shape, 1, s:dim() - 1), {dtype = "int64"}) end
  local tol = (s:amax(-1, true) * rtol):clamp_min(atol)
  return s:gt(tol):sum(-1, false, {dtype = "int64"})
end

function M.matrix_power(A, n, ...)
  local op = "linalg.matrix_power"
  args(op, {}, ...)
  check_tensor(A, op)
  if math.type(n) ~= "integer" then raise(string.format("%s: n must be an integer, got %s", op, tostring(n))) end
  local d = A:dim()
  if d < 2 or A.shape[d] ~= A.shape[d - 1] then
    raise(string.format("%s: A must be batches of square matrices, but they are %s by %s matrices", op,
      tostring(A.shape[d - 1]), tostring(A.shape[d])))
  end
  if n == 0 then
    local I = ember.eye(A.shape[d], {dtype = A.dtype, device = A.device})
    return I:expand(A.shape):clone()
  end
  local base = A
  if n < 0 then
    base = call(ember._linalg_inv, A)
    n = -n
  end
  -- binary powering: log2(n) squarings
  local result
  while n > 0 do
    if n % 2 == 1 then result = result and result:matmul(base) or base end
    n = n // 2
    if n > 0 then base = base:matmul(base) end
  end
  return result
end

--- solution, residuals, rank, singular_values
-- The solution is pinv(A) B with singular values at most rcond * largest
-- dropped (gelsd's semantics; differentiable through pinv). What else is
-- returned follows the driver as PyTorch does: gelsd and gelss give rank
-- and singular values, gelsy the rank, gels neither; residuals (||AX - B||^2
-- per column) when m > n and A has full rank, except for gelsy.
function M.lstsq(A, B, ...)
  local a = args("linalg.lstsq", {"rcond", "driver"}, ...)
  local op = "linalg.lstsq"
  check_matrix(A, op)
  check_tensor(B, op, "B")
  check_number(a.rcond, op, "rcond")
  local driver = a.driver or (A.device == "cpu" and "gelsy" or "gels")
  if driver ~= "gels" and driver ~= "gelsy" and driver ~= "gelsd" and driver ~= "gelss" then
    raise(string.format("%s: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got '%s'", op,
      tostring(driver)))
  end
  if B.dtype ~= A.dtype then
    raise(string.format("%s: Expected B to have the dtype of A (%s), got %s", op, A.dtype, B.dtype))
  end
  local d = A:dim()
  local m, n = A.shape[d - 1], A.shape[d]
  local vec = B:dim() == d - 1
  local Bm = vec and B:unsqueeze(-1) or B
  if Bm:dim() < 2 or Bm.shape[Bm:dim() - 1] ~= m then
    raise(string.format("%s: input.size(-2) should match other.size(-2): A %s, B %s", op,
      table.concat(A.shape, "x"), table.concat(B.shape, "x")))
  end
  local rcond = a.rcond
  if rcond == nil or rcond < 0 then rcond = eps_of(A.dtype) * math.max(m, n) end
  local X = call(ember._linalg_pinv, A, nil, rcond, false):matmul(Bm)
  local S = ember.no_grad(function() return call(ember._linalg_svdvals, A) end)
  local empty = ember.zeros(0, {dtype = A.dtype, device = A.device})
  local rank, sv = nil, empty
  local k = math.min(m, n)
  if driver ~= "gels" then
    if k == 0 then
      rank = ember.zeros(table.unpack(A.shape, 1, d - 2), {dtype = "int64"})
    else
      rank = S:gt(S:amax(-1, true) * rcond):sum(-1, false, {dtype = "int64"})
    end
    if driver ~= "gelsy" then sv = S end
  end
  if rank == nil then rank = ember.zeros(0, {dtype = "int64"}) end
  local residuals = empty
  local full = driver == "gels" or (rank:numel() == 0 or rank:eq(n):all():item())
  if m > n and driver ~= "gelsy" and full then
    residuals = (A:matmul(X) - Bm):square():sum(-2)
    if vec then residuals = residuals:squeeze(-1) end
  end
  if vec then X = X:squeeze(-1) end
  return X, residuals, rank, sv
end

-- ---- norms ----------------------------------------------------------------------

local function dims_list(dim, ndim, op)
  if dim == nil then return nil end
  if type(dim) == "number" then dim = {dim} end
  if type(dim) ~= "table" then raise(string.format("%s: dim must be an integer or a table of integers", op)) end
  local out = {}
  for i, v in ipairs(dim) do
    if math.type(v) ~= "integer" then raise(string.format("%s: dim must hold integers, got %s", op, tostring(v))) end
    if v < -math.max(ndim, 1) or v > math.max(ndim, 1) or v == 0 then
      raise(string.format("%s: dim %d out of range for a tensor of %d dimensions", op, v, ndim))
    end
    out[i] = v < 0 and v + ndim + 1 or v
  end
  return out
end

local function with_dtype(x, dtype, op)
  if dtype ~= nil then
    if dtype ~= "float32" and dtype ~= "float64" and dtype ~= ember.float32 and dtype ~= ember.float64 then
      raise(string.format("%s: dtype must be float32 or float64, got %s", op, tostring(dtype)))
    end
    x = x:to(dtype)
  end
  return x
end

-- A norm's arguments: its input, in float32 under autocast on CUDA devices
-- (PyTorch's CUDA list; its CPU lists leave norms in their input's dtype),
-- and the options ord, dim, keepdim, dtype.
local function norm_args(op, input, ...)
  return ember._autocast("fp32_cuda", input), args(op, {"ord", "dim", "keepdim", "dtype"}, ...)
end

function M.vector_norm(input, ...)
  local op = "linalg.vector_norm"
  local x, a = norm_args(op, input, ...)
  check_tensor(x, op, "input")
  local ord = a.ord == nil and 2 or a.ord
  if type(ord) ~= "number" then raise(string.format("%s: ord must be a number, got %s", op, tostring(ord))) end
  check_bool(a.keepdim, op, "keepdim")
  if x.dtype ~= "float32" and x.dtype ~= "float64" and x.dtype ~= "float16" and x.dtype ~= "bfloat16" then
    raise(string.format("%s: Expected a floating point tensor as input, got %s", op, x.dtype))
  end
  x = with_dtype(x, a.dtype, op)
  local dims = dims_list(a.dim, x:dim(), op)
  if x:numel() == 0 and ord < 0 then
    raise(string.format("%s: the norm of order %g of an empty tensor is not defined", op, ord))
  end
  return x:norm(ord, dims, a.keepdim == true)
end

-- sorts two dims, drops them, reduces, puts them back (keepdim)
local function matrix_dims(A, dim, op)
  local dims = dims_list(dim or {-2, -1}, A:dim(), op)
  if #dims ~= 2 then raise(string.format("%s: dim must be a 2-tuple, got %d dims", op, #dims)) end
  if dims[1] == dims[2] then raise(string.format("%s: dims must be different, got (%d, %d)", op, dims[1], dims[2])) end
  return dims[1], dims[2]
end

function M.matrix_norm(input, ...)
  local op = "linalg.matrix_norm"
  local A, a = norm_args(op, input, ...)
  local ord = a.ord == nil and "fro" or a.ord
  -- the singular values need LAPACK's dtypes; the other orders take any float
  check_matrix(A, op, ord ~= "nuc" and ord ~= 2 and ord ~= -2)
  check_bool(a.keepdim, op, "keepdim")
  A = with_dtype(A, a.dtype, op)
  local keep = a.keepdim == true
  local r, c = matrix_dims(A, a.dim, op)
  if ord == "fro" then return A:norm(2, {r, c}, keep) end
  if ord == "nuc" or ord == 2 or ord == -2 then
    -- the singular values of the matrices spanned by dims r, c
    local nd = A:dim()
    local perm = {}
    for i = 1, nd do if i ~= r and i ~= c then perm[#perm + 1] = i end end
    perm[#perm + 1] = r
    perm[#perm + 1] = c
    local S = call(ember._linalg_svdvals, A:permute(perm))
    local res
    if ord == "nuc" then res = S:sum(-1)
    elseif ord == 2 then res = S:amax(-1)
    else res = S:amin(-1) end
    if keep then
      local lo, hi = math.min(r, c), math.max(r, c)
      res = res:unsqueeze(lo):unsqueeze(hi)
    end
    return res
  end
  if ord == 1 or ord == -1 or ord == math.huge or ord == -math.huge then
    -- 1: the largest column sum (over rows r), inf: the largest row sum
    local sum_dim, max_dim = r, c
    if ord == math.huge or ord == -math.huge then sum_dim, max_dim = c, r end
    local s = A:abs():sum(sum_dim, true)
    local res = ord > 0 and s:amax(max_dim, true) or s:amin(max_dim, true)
    if not keep then res = res:squeeze(math.max(r, c)):squeeze(math.min(r, c)) end
    return res
  end
  raise(string.format("%s: Order %s not supported (expected 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2)", op,
    tostring(ord)))
end

function M.norm(input, ...)
  local op = "linalg.norm"
  local A, a = norm_args(op, input, ...)
  check_tensor(A, op)
  local dim = a.dim
  local ndims = dim == nil and A:dim() or (type(dim) == "table" and #dim or 1)
  if a.ord ~= nil and dim == nil and A:dim() ~= 1 and A:dim() ~= 2 then
    raise(string.format("%s: If dim is not specified but ord is, the input must be 1D or 2D. Got %dD.", op, A:dim()))
  end
  local opts = {keepdim = a.keepdim, dtype = a.dtype}
  if type(a.ord) == "string" or (a.ord ~= nil and ndims == 2) then
    opts.ord, opts.dim = a.ord, dim
    return M.matrix_norm(A, opts)
  end
  if a.ord == nil and dim ~= nil and ndims == 2 then
    opts.dim = dim
    return M.matrix_norm(A, opts)
  end
  opts.ord, opts.dim = a.ord, dim
  return M.vector_norm(A, opts)
end

-- ---- more of torch.linalg, composed -----------------------------------------------
--
-- There is no C binding for LAPACK's getrf or trsm, so LU and the triangular
-- solves are written here over ember ops: LU a pass per column, a triangular
-- solve LAPACK's solve on the triangle (which needs no row exchange there, see
-- upper_solve). Autograd records the ops, so all of it is differentiable.

local function check_bools(o, op, names)
  for _, k in ipairs(names) do check_bool(o[k], op, k) end
end

-- the LAPACK-dtype matrices of check_matrix, what naming A
local function check_matrices(A, op, what) return check_matrix(A, op, false, what) end

-- A is a batch of square float matrices; returns n
local function check_square(A, op, what)
  local m, n = check_matrices(A, op, what or "A")
  if m ~= n then
    raise(string.format("%s: %s must be batches of square matrices, but they are %d by %d matrices", op,
      what or "A", m, n))
  end
  return n
end

local function check_same_dtype(op, A, B, a, b)
  if A.dtype ~= B.dtype then
    raise(string.format("%s: Expected %s and %s to have the same dtype, but got %s and %s", op, a, b, A.dtype, B.dtype))
  end
end

-- the batch dims of A: its shape without the last two
local function batch_of(A) return {table.unpack(A.shape, 1, A:dim() - 2)} end

-- the shape of A's and B's batch dims broadcast together
local function broadcast_batch(op, A, B)
  local a, b = A:dim() - 2, B:dim() - 2
  local n = math.max(a, b)
  local out = {}
  for i = 1, n do
    local ia, ib = i - n + a, i - n + b
    local x = ia >= 1 and A.shape[ia] or 1
    local y = ib >= 1 and B.shape[ib] or 1
    if x ~= y and x ~= 1 and y ~= 1 then
      raise(string.format("%s: the batch dimensions of %s and %s do not broadcast", op, shape_str(A), shape_str(B)))
    end
    out[i] = x == 1 and y or x
  end
  return out
end

-- A expanded to the batch dims batch (its last two dims kept)
local function with_batch(A, batch)
  local shape = {table.unpack(batch)}
  shape[#shape + 1] = A.shape[A:dim() - 1]
  shape[#shape + 1] = A.shape[A:dim()]
  return A:expand(shape)
end

-- the identity of size n, broadcast over A's batch dims
local function eye_like(A, n)
  local shape = batch_of(A)
  shape[#shape + 1] = n
  shape[#shape + 1] = n
  return ember.eye(n, {dtype = A.dtype, device = A.device}):expand(shape)
end

-- zeros of A's batch shape, in dtype (an info of the _ex forms: int32)
local function batch_zeros(A, dtype)
  return ember.zeros(batch_of(A), {dtype = dtype or "int32", device = A.device})
end

-- back substitution row by row for U X = B
local function substitute(U, B)
  local n = U.shape[U:dim()]
  local rows = {}
  for i = n, 1, -1 do
    local r = B:narrow(-2, i, 1)
    if i < n then
      r = r - U:narrow(-2, i, 1):narrow(-1, i + 1, n - i):matmul(ember.cat({table.unpack(rows, i + 1, n)}, -2))
    end
    rows[i] = r / U:narrow(-2, i, 1):narrow(-1, i, 1)
  end
  return ember.cat(rows, -2)
end

-- X with U X = B, U [..., n, n] upper-triangular with its diagonal, B [..., n, k] of
-- the same batch shape.
local function upper_solve(U, B)
  if not U:diagonal(0, -2, -1):eq(0):any():item() then
    -- LU with partial pivoting exchanges no rows of an upper-triangular matrix (each
    -- column holds zeros below its nonzero diagonal entry), so L = I and LAPACK's
    -- solve is back substitution, as trsm's
    return call(ember._linalg_solve, U, B, true)
  end
  -- a zero on the diagonal: LAPACK's solve refuses the matrix, while PyTorch (trsm)
  -- divides by the zero; substitution gives the same inf and NaN. Its products stay in
  -- the inputs' dtype under autocast, as the solve's.
  return ember._without_autocast(substitute, U, B)
end

-- X with A X = B (left) or X A = B, reading only A's upper or lower triangle, and
-- taking its diagonal as ones when unit; batch dims broadcast. Shapes already checked.
local function triangular(A, B, upper, left, unit, op)
  if not left then return triangular(A.mT, B.mT, not upper, true, unit, op).mT end
  local batch = broadcast_batch(op, A, B)
  A, B = with_batch(A, batch), with_batch(B, batch)
  local n = A.shape[A:dim()]
  local T = upper and A:triu(unit and 1 or 0) or A:tril(unit and -1 or 0)
  if unit then T = T + eye_like(T, n) end
  if upper then return upper_solve(T, B) end
  -- reversing the rows and the columns makes a lower-triangular matrix upper-triangular
  return upper_solve(T:flip({-2, -1}), B:flip({-2})):flip({-2})
end

-- The sizes of A X = B (left) or X A = B agree: n of A [..., n, n] and B's rows (left)
-- or columns.
local function check_equation(op, A, B, left)
  local n = A.shape[A:dim()]
  local r, c = B.shape[B:dim() - 1], B.shape[B:dim()]
  if (left and r ~= n) or (not left and c ~= n) then
    raise(string.format("%s: Incompatible shapes of A and B for the equation %s (%dx%d and %dx%d)", op,
      left and "AX = B" or "XA = B", n, n, r, c))
  end
end

function M.solve_triangular(A, B, ...)
  local op = "linalg.solve_triangular"
  local o = options(op, {"*", "upper", "left", "unitriangular"}, ...)
  check_square(A, op)
  check_matrices(B, op, "B")
  check_same_dtype(op, A, B, "A", "B")
  if o.upper == nil then raise(op .. ": missing the required keyword argument 'upper'") end
  check_bools(o, op, {"upper", "left", "unitriangular"})
  local left = o.left ~= false
  check_equation(op, A, B, left)
  return triangular(A, B, o.upper, left, o.unitriangular == true, op)
end

-- ---- LU --------------------------------------------------------------------------------

-- LU with partial pivoting (pivot = false: without) of A [..., m, n] over ember ops:
-- one pass per column j of k = min(m, n), each about a dozen elementwise ops on the
-- whole [..., m, n] tensor: some 10 k m n operations where LAPACK's getrf does about
-- k m n (2/3 n^3 for a square matrix), plus k times the per-op cost; measured, 20 times
-- LAPACK's solve at n = 256 on the CPU. Returns LU, pivots [..., k] (int32, LAPACK's: row j was exchanged with row
-- pivots[j], 1-based) and info [...] (int32: the first j with U[j, j] = 0, else 0).
local function lu_core(A, pivot)
  local d = A:dim()
  local m, n = A.shape[d - 1], A.shape[d]
  local k = math.min(m, n)
  local int = {dtype = "int64", device = A.device}
  local row = ember.arange(1, m + 1, int):view(m, 1)
  local col = ember.arange(1, n + 1, int):view(1, n)
  local info_shape = batch_of(A)
  info_shape[#info_shape + 1] = 1
  info_shape[#info_shape + 1] = 1
  local info = ember.zeros(info_shape, int)
  local pivots = {}
  local LU = A
  for j = 1, k do
    if pivot then
      -- the row of the largest |entry| at or below the diagonal, the first of equals as
      -- LAPACK's idamax; rows j and p exchanged by a gather
      local p = LU:narrow(-1, j, 1):narrow(-2, j, m - j + 1):abs():argmax(-2, true) + (j - 1)
      local src = ember.where(row:eq(j), p, ember.where(row:eq(p), j, row))
      LU = LU:gather(-2, src:expand(LU.shape))
      pivots[j] = p
    end
    local djj = LU:narrow(-2, j, 1):narrow(-1, j, 1)
    local zero = djj:eq(0)
    info = ember.where(info:eq(0):logical_and(zero), j, info)
    -- the multipliers below the diagonal; with pivoting a zero pivot means a zero
    -- column, which LAPACK leaves unscaled (without, the division makes inf and NaN)
    local below = row:gt(j)
    local l = ember.where(below, LU:narrow(-1, j, 1) / (pivot and ember.where(zero, 1, djj) or djj), 0)
    local u = ember.where(col:gt(j), LU:narrow(-2, j, 1), 0)
    LU = ember.where(below:logical_and(col:eq(j)), l, LU - l * u)
  end
  local piv
  if pivot and k > 0 then
    piv = ember.cat(pivots, -1):squeeze(-2)
  else
    local shape = batch_of(A)
    shape[#shape + 1] = k
    piv = ember.arange(1, k + 1, int):expand(shape)
  end
  return LU, piv:to("int32"), info:view(batch_of(A)):to("int32")
end

-- Raises op's error for the first nonzero entry of info (the _ex forms' check_errors):
-- what(v) says what v means; a batch names its element (1-based).
local function raise_info(op, info, what)
  for b, v in ipairs(info:reshape(-1):tolist()) do
    if v ~= 0 then
      local where = info:dim() > 0 and string.format("(Batch element %d): ", b) or ""
      raise(string.format("%s: %s%s", op, where, what(v)))
    end
  end
end

local function lu_zero(v)
  return string.format("U[%d,%d] is zero and using it on lu_solve would result in a division by zero. If you "
    .. "still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
    .. "linalg.lu_factor_ex(A, pivot)", v, v)
end

-- the keyword-only options names of an LU function, checked, and A checked; then the
-- options and whether to pivot
local function lu_args(op, names, A, ...)
  local o = options(op, names, ...)
  check_matrices(A, op, "A")
  check_bools(o, op, names)
  return o, o.pivot ~= false
end

--- LU, pivots, info
function M.lu_factor_ex(A, ...)
  local op = "linalg.lu_factor_ex"
  local o, pivot = lu_args(op, {"*", "pivot", "check_errors"}, A, ...)
  local LU, piv, info = lu_core(A, pivot)
  if o.check_errors then raise_info(op, info, lu_zero) end
  return LU, piv, info
end

--- LU, pivots
function M.lu_factor(A, ...)
  local op = "linalg.lu_factor"
  local _, pivot = lu_args(op, {"*", "pivot"}, A, ...)
  local LU, piv, info = lu_core(A, pivot)
  raise_info(op, info, lu_zero)
  return LU, piv
end

-- The row order pivots [..., k] (LAPACK's exchanges) make of m rows: perm [..., m],
-- int64, with (P^T A)[i] = A[perm[i]] for A = P L U.
local function permutation(pivots, m)
  local k = pivots.shape[pivots:dim()]
  local pv = pivots:to("int64")
  local r = ember.arange(1, m + 1, {dtype = "int64", device = pivots.device})
  local shape = {table.unpack(pivots.shape, 1, pivots:dim() - 1)}
  shape[#shape + 1] = m
  local perm = r:expand(shape)
  for j = 1, k do
    local p = pv:narrow(-1, j, 1)
    perm = ember.where(r:eq(j), perm:gather(-1, p), ember.where(r:eq(p), perm:narrow(-1, j, 1), perm))
  end
  return perm
end

-- pivots is an int32 tensor of LU's batch shape and min(m, n) entries, each in 1..m
local function check_pivots(op, LU, pivots)
  check_tensor(pivots, op, "pivots")
  if pivots.dtype ~= "int32" then
    raise(string.format("%s: pivots should be a tensor of dtype int32, got %s", op, pivots.dtype))
  end
  local m, n = LU.shape[LU:dim() - 1], LU.shape[LU:dim()]
  local want = batch_of(LU)
  want[#want + 1] = math.min(m, n)
  local same = pivots:dim() == #want
  for i, s in ipairs(want) do if pivots.shape[i] ~= s then same = false end end
  if not same then
    raise(string.format("%s: expected pivots of shape [%s] for LU of shape %s, got %s", op, table.concat(want, ", "),
      shape_str(LU), shape_str(pivots)))
  end
  if pivots:numel() > 0 and (pivots:min():item() < 1 or pivots:max():item() > m) then
    raise(string.format("%s: pivots must be between 1 and LU.size(-2) = %d; did you pass the result of lu_factor?",
      op, m))
  end
end

-- X with A X = B, A^T X = B (adjoint), X A = B (not left) or X A^T = B, for A = P L U
-- given as LU and perm (permutation's); shapes checked.
local function lu_solve_core(LU, perm, B, left, adjoint, op)
  if not left then return lu_solve_core(LU, perm, B.mT, true, not adjoint, op).mT end
  local batch = broadcast_batch(op, LU, B)
  LU, B = with_batch(LU, batch), with_batch(B, batch)
  local shape = {table.unpack(batch)}
  shape[#shape + 1] = B.shape[B:dim() - 1]
  local rows = perm:expand(shape):unsqueeze(-1)
  if not adjoint then
    -- X = U^-1 L^-1 P^T B
    local PB = B:gather(-2, rows:expand(B.shape))
    return triangular(LU, triangular(LU, PB, false, true, true, op), true, true, false, op)
  end
  -- A^T = U^T L^T P^T: X = P L^-T U^-T B, P Y putting row i of Y at perm[i]
  local Y = triangular(LU.mT, triangular(LU.mT, B, false, true, false, op), true, true, true, op)
  local inverse = rows:squeeze(-1):argsort(-1):unsqueeze(-1)
  return Y:gather(-2, inverse:expand(B.shape))
end

function M.lu_solve(LU, pivots, B, ...)
  local op = "linalg.lu_solve"
  local o = options(op, {"*", "left", "adjoint"}, ...)
  local n = check_square(LU, op, "LU")
  check_pivots(op, LU, pivots)
  check_matrices(B, op, "B")
  check_same_dtype(op, LU, B, "LU", "B")
  check_bools(o, op, {"left", "adjoint"})
  local left = o.left ~= false
  check_equation(op, LU, B, left)
  return lu_solve_core(LU, permutation(pivots, n), B, left, o.adjoint == true, op)
end

-- P, L, U of A = P L U from lu_factor's LU and pivots; either pair left empty (as
-- PyTorch) when its flag is false.
local function lu_unpack(LU, pivots, data, perm)
  local d = LU:dim()
  local m, n = LU.shape[d - 1], LU.shape[d]
  local k = math.min(m, n)
  local P, L, U
  local empty = ember.zeros(0, {dtype = LU.dtype, device = LU.device})
  if perm then
    local p = permutation(pivots, m):unsqueeze(-2)   -- [..., 1, m]
    local r = ember.arange(1, m + 1, {dtype = "int64", device = LU.device}):view(m, 1)
    P = r:eq(p):to(LU.dtype)   -- P[r, c] = 1 where r = perm[c]
  else
    P = empty
  end
  if data then
    L = LU:narrow(-1, 1, k):tril(-1) + ember.eye(m, k, {dtype = LU.dtype, device = LU.device})
    U = LU:narrow(-2, 1, k):triu()
  else
    L, U = empty, empty
  end
  return P, L, U
end

--- P, L, U
function M.lu(A, ...)
  local _, pivot = lu_args("linalg.lu", {"*", "pivot"}, A, ...)
  local LU, piv = lu_core(A, pivot)
  local P, L, U = lu_unpack(LU, piv, true, pivot)
  return P, L, U
end

-- ---- the _ex forms -------------------------------------------------------------------

-- The C function f's results and no error, or nil and its message. An error that is
-- not the failure fails (what is found in it) is raised again under op's name.
local function try(op, name, fails, f, ...)
  local r = table.pack(pcall(f, ...))
  if r[1] then return table.unpack(r, 2, r.n) end
  local msg = tostring(r[2])
  if not msg:find(fails, 1, true) then raise((msg:gsub("^" .. name:gsub("%.", "%%.") .. ":", op .. ":", 1))) end
  return nil, msg
end

local function singular(what)
  return function(v)
    return string.format("The diagonal element %d is zero, the %s could not be completed because the input matrix "
      .. "is singular.", v, what)
  end
end

--- inverse, info
function M.inv_ex(A, ...)
  local op = "linalg.inv_ex"
  local o = options(op, {"*", "check_errors"}, ...)
  local n = check_square(A, op)
  check_bool(o.check_errors, op, "check_errors")
  local X = try(op, "linalg.inv", "singular", ember._linalg_inv, A)
  if X then return X, batch_zeros(A) end
  -- a singular matrix: what LAPACK computes (getrf, then getrs by the zero pivot)
  local LU, piv, info = lu_core(A, true)
  if o.check_errors then raise_info(op, info, singular("inversion")) end
  return lu_solve_core(LU, permutation(piv, n), eye_like(A, n), true, false, op), info
end

--- result, info
function M.solve_ex(A, B, ...)
  local op = "linalg.solve_ex"
  local o = options(op, {"*", "left", "check_errors"}, ...)
  local n = check_square(A, op)
  check_tensor(B, op, "B")
  check_bools(o, op, {"left", "check_errors"})
  local left = o.left ~= false
  local X = try(op, "linalg.solve", "singular", ember._linalg_solve, A, B, left)
  if X then return X, batch_zeros(A) end
  local LU, piv, info = lu_core(A, true)
  if o.check_errors then
    raise_info(op, info, function() return "The solver failed because the input matrix is singular." end)
  end
  -- B a vector (1-D, or A's batch shape and n) as linalg.solve reads it: shapes there
  -- were checked by the C call, which got as far as the factorization
  local vector = B:dim() == 1
  if B:dim() == A:dim() - 1 then
    vector = true
    for i = 1, B:dim() do if B.shape[i] ~= A.shape[i] then vector = false end end
  end
  local Bm = vector and B:unsqueeze(left and -1 or -2) or B
  local X2 = lu_solve_core(LU, permutation(piv, n), Bm, left, false, op)
  return vector and X2:squeeze(left and -1 or -2) or X2, info
end

--- L, info
function M.cholesky_ex(A, ...)
  local op = "linalg.cholesky_ex"
  local o = options(op, {"*", "upper", "check_errors"}, ...)
  local n = check_square(A, op)
  check_bools(o, op, {"upper", "check_errors"})
  local upper = o.upper == true
  local L = try(op, "linalg.cholesky", "positive-definite", ember._linalg_cholesky, A, upper)
  if L then return L, batch_zeros(A) end
  -- one matrix at a time, for LAPACK's info of each: the order of its first leading
  -- minor that is not positive-definite
  local flat = A:reshape(-1, n, n)
  local Ls, infos = {}, {}
  for b = 1, flat.shape[1] do
    local Lb, msg = try(op, "linalg.cholesky", "positive-definite", ember._linalg_cholesky, flat[b], upper)
    Ls[b] = Lb or ember.full({n, n}, 0 / 0, {dtype = A.dtype, device = A.device})
    infos[b] = Lb and 0 or math.tointeger(tonumber(msg:match("order (%d+)")))
  end
  local info = ember.tensor(infos, {dtype = "int32", device = A.device}):reshape(batch_of(A))
  if o.check_errors then
    raise_info(op, info, function(v)
      return string.format("The factorization could not be completed because the input is not positive-definite "
        .. "(the leading minor of order %d is not positive-definite).", v)
    end)
  end
  return ember.stack(Ls):reshape(A.shape), info
end

-- ---- products and small ones ------------------------------------------------------------

M.matmul = function(input, other) return ember.matmul(input, other) end

function M.vecdot(x, y, ...)
  local op = "linalg.vecdot"
  local o = options(op, {"*", "dim"}, ...)
  check_tensor(x, op, "x")
  check_tensor(y, op, "y")
  check_same_dtype(op, x, y, "x", "y")
  if not x:is_floating_point() then
    raise(string.format("%s: Expected a floating point tensor as input, got %s", op, x.dtype))
  end
  local dim = o.dim == nil and -1 or o.dim
  if math.type(dim) ~= "integer" then raise(string.format("%s: dim must be an integer, got %s", op, tostring(dim))) end
  -- PyTorch's is a matrix product, which autocast lowers on both device types
  x, y = ember._autocast("lower", x, y)
  return (x * y):sum(dim)
end

function M.diagonal(A, ...)
  local op = "linalg.diagonal"
  local o = options(op, {"*", "offset", "dim1", "dim2"}, ...)
  check_tensor(A, op, "A")
  for _, k in ipairs({"offset", "dim1", "dim2"}) do
    if o[k] ~= nil and math.type(o[k]) ~= "integer" then
      raise(string.format("%s: %s must be an integer, got %s", op, k, tostring(o[k])))
    end
  end
  return call(A.diagonal, A, o.offset or 0, o.dim1 or -2, o.dim2 or -1)
end

-- The order in which to multiply matrices of sizes p[1] x p[2], p[2] x p[3], ...:
-- split[i][j] is where the product of matrices i..j divides, by the textbook dynamic
-- programme over the number of scalar multiplications (PyTorch's, ties alike).
local function chain_order(p)
  local n = #p - 1
  local cost, split = {}, {}
  for i = 1, n do cost[i], split[i] = {[i] = 0}, {} end
  for len = 1, n - 1 do
    for i = 1, n - len do
      local j = i + len
      cost[i][j] = math.huge
      for s = i, j - 1 do
        local q = cost[i][s] + cost[s + 1][j] + p[i] * p[s + 1] * p[j + 1]
        if q < cost[i][j] then cost[i][j], split[i][j] = q, s end
      end
    end
  end
  return split
end

local function chain_product(ts, split, i, j)
  if i == j then return ts[i] end
  local s = split[i][j]
  return chain_product(ts, split, i, s):matmul(chain_product(ts, split, s + 1, j))
end

function M.multi_dot(tensors)
  local op = "linalg.multi_dot"
  if type(tensors) ~= "table" or ember.is_tensor(tensors) then
    raise(string.format("%s: expected a table of tensors, got %s", op, ember.is_tensor(tensors) and "a tensor"
      or type(tensors)))
  end
  local n = #tensors
  if n < 2 then raise(string.format("%s: expected at least 2 tensors but got %d", op, n)) end
  local ts = {}
  for i = 1, n do
    local t = tensors[i]
    check_tensor(t, op, "tensor " .. i)
    local d = t:dim()
    if (i == 1 or i == n) and d ~= 1 and d ~= 2 then
      raise(string.format("%s: the %s tensor must be 1D or 2D but got %dD", op, i == 1 and "first" or "last", d))
    elseif i > 1 and i < n and d ~= 2 then
      raise(string.format("%s: tensor %d must be 2D but got %dD", op, i, d))
    end
    if t.dtype ~= tensors[1].dtype then
      raise(string.format("%s: all tensors must have the same dtype, but tensor 1 is %s and tensor %d is %s", op,
        tensors[1].dtype, i, t.dtype))
    end
    ts[i] = t
  end
  local row, col = ts[1]:dim() == 1, ts[n]:dim() == 1
  if row then ts[1] = ts[1]:unsqueeze(1) end
  if col then ts[n] = ts[n]:unsqueeze(2) end
  local p = {ts[1].shape[1]}
  for i = 1, n do
    if i > 1 and ts[i].shape[1] ~= ts[i - 1].shape[2] then
      raise(string.format("%s: tensors %d and %d with shapes %s and %s cannot be multiplied", op, i - 1, i,
        shape_str(tensors[i - 1]), shape_str(tensors[i])))
    end
    p[i + 1] = ts[i].shape[2]
  end
  local r
  if n == 3 then
    -- PyTorch's rule for three: (AB)C unless A(BC) costs less
    local a, b, c, d = p[1], p[2], p[3], p[4]
    if a * c * (b + d) > b * d * (a + c) then r = ts[1]:matmul(ts[2]:matmul(ts[3]))
    else r = ts[1]:matmul(ts[2]):matmul(ts[3]) end
  else
    r = chain_product(ts, chain_order(p), 1, n)
  end
  if row then r = r:squeeze(1) end
  if col then r = r:squeeze(-1) end
  return r
end

function M.vander(x, ...)
  local op = "linalg.vander"
  local o = options(op, {"*", "N"}, ...)
  check_tensor(x, op, "x")
  if x:dim() < 1 then raise(op .. ": x must have at least one dimension, got a 0-d tensor") end
  if x.dtype == "bool" then raise(op .. ": bool tensors are not supported") end
  local N = o.N == nil and x.shape[x:dim()] or o.N
  if math.type(N) ~= "integer" then raise(string.format("%s: N must be an integer, got %s", op, tostring(N))) end
  if N <= 1 then raise(string.format("%s: N must be greater than 1, got %d", op, N)) end
  -- x^0 .. x^(N-1) as PyTorch makes them: a running product (exact for integers)
  local shape = {table.unpack(x.shape)}
  shape[#shape + 1] = N - 1
  local ones = ember.ones_like(x):unsqueeze(-1)
  return ember.cat({ones, x:unsqueeze(-1):expand(shape)}, -1):cumprod(-1)
end

function M.householder_product(A, tau)
  local op = "linalg.householder_product"
  local m, n = check_matrices(A, op, "A")
  check_tensor(tau, op, "tau")
  check_same_dtype(op, A, tau, "A", "tau")
  if tau:dim() ~= A:dim() - 1 then
    raise(string.format("%s: Expected tau to have one dimension less than A, got %s and %s", op, shape_str(tau),
      shape_str(A)))
  end
  for i = 1, A:dim() - 2 do
    if tau.shape[i] ~= A.shape[i] then
      raise(string.format("%s: Expected the batch dimensions of tau to be A's, got %s and %s", op, shape_str(tau),
        shape_str(A)))
    end
  end
  local k = tau.shape[tau:dim()]
  if m < n then raise(string.format("%s: A.shape[-2] must be at least A.shape[-1], got %d by %d", op, m, n)) end
  if n < k then raise(string.format("%s: A.shape[-1] (%d) must be at least tau.shape[-1] (%d)", op, n, k)) end
  -- Q = H_1 ... H_k I[:, 1..n], H_i = I - tau_i v_i v_i^T, v_i column i of A below the
  -- diagonal with a 1 on it; applied from H_k on, in A's dtype under autocast too
  local Q = ember._without_autocast(function()
    local row = ember.arange(1, m + 1, {dtype = "int64", device = A.device}):view(m, 1)
    local P = ember.eye(m, n, {dtype = A.dtype, device = A.device})
    for i = k, 1, -1 do
      local v = ember.where(row:lt(i), 0, ember.where(row:eq(i), 1, A:narrow(-1, i, 1)))
      local t = tau:narrow(-1, i, 1):unsqueeze(-1)
      P = P - (t * v):matmul(v.mT:matmul(P))
    end
    return P
  end)
  if k == 0 then
    -- the identity, still recorded as a function of A (a zero gradient), as PyTorch's
    return ember.where(ember.zeros(1, {dtype = "bool", device = A.device}), A, Q)
  end
  return Q
end

-- what lua/ember/composite/linalg.lua (torch's top-level names) shares
M._helpers = {check_bools = check_bools, check_square = check_square, check_matrices = check_matrices,
              check_same_dtype = check_same_dtype, check_equation = check_equation, check_pivots = check_pivots,
              triangular = triangular, broadcast_batch = broadcast_batch, with_batch = with_batch,
              eye_like = eye_like, raise_info = raise_info, singular = singular, lu_unpack = lu_unpack}

-- ---- matrix_exp, cond -------------------------------------------------------------------

-- the numerator and denominator coefficients of the [13/13] Padé approximant of exp, and
-- the largest 1-norm for which it is accurate to float64's unit roundoff (Higham 2005)
local PADE13 = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
                129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0,
                960960.0, 16380.0, 182.0, 1.0}
local THETA13 = 5.371920351148152

-- exp(A) for square float A [..., n, n] with elements
local function expm(A, n)
  -- scaling: A / 2^s with s per matrix, the smallest that brings its 1-norm under theta
  local s = ember.no_grad(function()
    local norm = A:abs():sum(-2, true):amax(-1, true)
    local e = (norm / THETA13):log2():ceil():clamp_min(0)
    return ember.where(e:isfinite(), e, 0)
  end)
  local X = A * ember.exp2(-s)
  local b = PADE13
  local I = eye_like(A, n)
  local X2 = X:matmul(X)
  local X4 = X2:matmul(X2)
  local X6 = X4:matmul(X2)
  local U = X:matmul(X6:matmul(X6 * b[14] + X4 * b[12] + X2 * b[10]) + X6 * b[8] + X4 * b[6] + X2 * b[4] + I * b[2])
  local V = X6:matmul(X6 * b[13] + X4 * b[11] + X2 * b[9]) + X6 * b[7] + X4 * b[5] + X2 * b[3] + I * b[1]
  local R = call(ember._linalg_solve, V - U, V + U, true)
  -- squaring: each matrix s times
  for i = 1, math.tointeger(s:max():item()) do
    R = ember.where(s:ge(i), R:matmul(R), R)
  end
  return R
end

function M.matrix_exp(A)
  local n = check_square(A, "linalg.matrix_exp")
  if A:numel() == 0 then return A:clone() end
  -- in A's dtype under autocast too, as PyTorch's (its products are not autocast's)
  return ember._without_autocast(expm, A, n)
end

local COND_ORDS = {[2] = true, [-2] = true, [1] = true, [-1] = true, [math.huge] = true, [-math.huge] = true,
                   fro = true, nuc = true}

function M.cond(A, p)
  local op = "linalg.cond"
  check_tensor(A, op, "A")
  if p ~= nil and not COND_ORDS[p] then raise(string.format("%s: got an invalid norm type: %s", op, tostring(p))) end
  local m, n = check_matrices(A, op, "A")
  if p == nil or p == 2 or p == -2 then
    if A:numel() == 0 then return batch_zeros(A, A.dtype) end
    local S = call(ember._linalg_svdvals, A)
    local hi, lo = S:narrow(-1, 1, 1):squeeze(-1), S:narrow(-1, S.shape[S:dim()], 1):squeeze(-1)
    if p == -2 then return lo / hi end
    return hi / lo
  end
  if m ~= n then
    raise(string.format("%s: with ord = %s, A must be batches of square matrices, but they are %d by %d matrices", op,
      tostring(p), m, n))
  end
  if A:numel() == 0 then return batch_zeros(A, A.dtype) end
  -- a singular matrix: an infinite inverse, so an infinite condition number
  local Ainv, info = M.inv_ex(A)
  Ainv = ember.where(info:gt(0):unsqueeze(-1):unsqueeze(-1), math.huge, Ainv)
  return M.matrix_norm(A, p) * M.matrix_norm(Ainv, p)
end

-- ---- matrix_sqrth and polar ------------------------------------------------------------------

-- X = V diag(sqrt(max(L, 0))) V^T from A = V diag(L) V^T (A's lower triangle, as eigh reads
-- it); backward solves the Sylvester equation X Z + Z X = G in the eigenbasis,
-- Z = V ((V^T G V) / (s_i + s_j)) V^T with s = sqrt(max(L, 0)), and returns Z's symmetric
-- part (PyTorch's matrix_sqrth backward)
local SqrtH
local function sqrth_function()
  if SqrtH then return SqrtH end
  SqrtH = require("ember.autograd").Function:extend("LinalgMatrixSqrthBackward")
  function SqrtH.forward(ctx, A)
    local L, V = M.eigh(A)
    local s = L:clamp_min(0):sqrt()
    ctx:save_for_backward(s, V)
    return (V * s:unsqueeze(-2)):matmul(V.mT)
  end
  function SqrtH.backward(ctx, G)
    local s, V = table.unpack(ctx.saved_tensors)
    local denom = s:unsqueeze(-1) + s:unsqueeze(-2)
    local Z = V:matmul((V.mT:matmul(G):matmul(V)) / denom):matmul(V.mT)
    return (Z + Z.mT) * 0.5     -- symmetric, as eigh's (A is read as a symmetric matrix)
  end
  return SqrtH
end

--- linalg.matrix_sqrth(A) -> X, the symmetric positive-semidefinite square root of the symmetric
-- A (its lower triangle is read; negative eigenvalues count as 0), X X = A, as torch's.
function M.matrix_sqrth(A)
  check_square(A, "linalg.matrix_sqrth")
  if A:numel() == 0 then return A:clone() end
  return sqrth_function().apply(A)
end

--- linalg.polar(A) -> U, H: A = U H with U's columns orthonormal and H symmetric positive-
-- semidefinite, for A [..., m, n] with m >= n (torch.linalg.polar). From the SVD A = W S V^T:
-- U = W V^T, H = V S V^T; the gradient is that of U = A H^-1, H = matrix_sqrth(A^T A), which
-- is defined wherever A has full column rank (the SVD's is not where singular values repeat).
function M.polar(A)
  local op = "linalg.polar"
  local m, n = check_matrices(A, op)
  if m < n then
    raise(string.format("%s: input must have at least as many rows as columns, but got %d by %d matrices", op, m, n))
  end
  local function from_svd(X)
    local W, S, Vh = M.svd(X, {full_matrices = false})
    return W:matmul(Vh), (Vh.mT * S:unsqueeze(-2)):matmul(Vh)
  end
  if A:numel() == 0 then
    local U, H = ember.zeros_like(A), ember.zeros(A.shape, {dtype = A.dtype, device = A.device}):narrow(-2, 1, n)
    return U, H
  end
  if not (A.requires_grad and ember.is_grad_enabled()) then return from_svd(A) end
  local U0, H0 = ember.no_grad(function() return from_svd(A) end)
  local H = M.matrix_sqrth(A.mT:matmul(A))
  local U = M.solve(H, A.mT, {left = true}).mT     -- A H^-1, H symmetric
  -- the SVD's values, the differentiable path's gradient
  return U0 + (U - U:detach()), H0 + (H - H:detach())
end

local function prod_of(A, first, last)
  local n = 1
  for d = first, last do n = n * A:size(d) end
  return n
end

--- linalg.tensorinv(A [, ind = 2]) -> X, the inverse of A seen as a map from its dims ind + 1.. to
-- its first ind dims (their products equal): X has shape A.shape[ind + 1..] .. A.shape[1..ind] and
-- tensordot(X, A, ind) is the identity, as torch.linalg.tensorinv.
function M.tensorinv(A, ind)
  local op = "linalg.tensorinv"
  check_tensor(A, op, "A")
  if ind == nil then ind = 2 end
  if math.type(ind) ~= "integer" or ind <= 0 then
    raise(string.format("%s: expected a strictly positive integer for ind, but got %s", op, tostring(ind)))
  end
  local left, right = prod_of(A, 1, math.min(ind, A:dim())), prod_of(A, ind + 1, A:dim())
  if left ~= right then
    raise(string.format("%s: expected A to satisfy prod(A.shape[ind + 1..]) == prod(A.shape[1..ind]) "
                        .. "(ind = %d, A %s), but got %d != %d", op, ind, errors.shape_str(A), right, left))
  end
  local shape = {}
  for d = ind + 1, A:dim() do shape[#shape + 1] = A:size(d) end
  for d = 1, math.min(ind, A:dim()) do shape[#shape + 1] = A:size(d) end
  return call(M.inv, A:reshape(left, right)):reshape(shape)
end

--- linalg.tensorsolve(A, B [, dims]) -> X with tensordot(A, X, X:dim()) == B, as torch.linalg.tensorsolve:
-- A's first B:dim() dims are B's shape, the rest X's (their products equal); dims (1-based) are
-- moved to A's end first.
function M.tensorsolve(A, B, dims)
  local op = "linalg.tensorsolve"
  check_tensor(A, op, "A")
  check_tensor(B, op, "B")
  if dims ~= nil then
    if type(dims) ~= "table" then raise(string.format("%s: dims must be a list of dims, got %s", op, type(dims))) end
    local to = {}
    for i = 1, #dims do to[i] = A:dim() - #dims + i end
    A = A:movedim(dims, to)
  end
  local nb = B:dim()
  if nb > A:dim() then
    raise(string.format("%s: B %s has more dims than A %s", op, errors.shape_str(B), errors.shape_str(A)))
  end
  local rows, cols = prod_of(A, 1, nb), prod_of(A, nb + 1, A:dim())
  if rows ~= cols or B:numel() ~= rows then
    raise(string.format("%s: expected A to satisfy prod(A.shape[B:dim() + 1..]) == prod(A.shape[1..B:dim()]) "
                        .. "== B:numel() (A %s, B %s), but got %d, %d and %d", op, errors.shape_str(A),
                        errors.shape_str(B), cols, rows, B:numel()))
  end
  local shape = {}
  for d = nb + 1, A:dim() do shape[#shape + 1] = A:size(d) end
  return call(M.solve, A:reshape(rows, cols), B:reshape(rows)):reshape(shape)
end

return M
