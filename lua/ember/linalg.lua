-- ember.linalg: linear algebra as torch.linalg (loaded on first use of ember.linalg).
--
-- The factorisations and solves are C functions (lua/bind_lapack.c over
-- engine/linalg_decomp.c: LAPACK on the CPU, cuSOLVER on the GPU, with their
-- own gradients); the rest is composed here from them and other ember ops
-- (norms, lstsq, matrix_rank, matrix_power), which gives those gradients
-- and GPU support for free. Arguments follow PyTorch: positional in its
-- order, or keywords in a trailing options table.
local ember = require "ember"
local errors = require "ember.errors"

local raise = errors.raise
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

-- A is a tensor of 2 dims or more, of a dtype LAPACK takes (float32, float64),
-- or any float dtype when any_float (the norms composed of elementwise ops)
local function check_matrix(A, op, any_float)
  check_tensor(A, op)
  if A:dim() < 2 then
    raise(string.format("%s: The input tensor A must have at least 2 dimensions, got %d", op, A:dim()))
  end
  if not any_float then
    check_float(A, op)
  elseif not A:is_floating_point() then
    raise(string.format("%s: Expected a floating point tensor as input, got %s", op, A.dtype))
  end
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

function M.det(A)
  check_tensor(A, "linalg.det")
  return call(ember._linalg_det, A)
end

--- sign, logabsdet
function M.slogdet(A)
  check_tensor(A, "linalg.slogdet")
  return call(ember._linalg_slogdet, A)
end

function M.inv(A)
  check_tensor(A, "linalg.inv")
  return call(ember._linalg_inv, A)
end

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

function M.svdvals(A)
  check_tensor(A, "linalg.svdvals")
  return call(ember._linalg_svdvals, A)
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

function M.matrix_power(A, n)
  local op = "linalg.matrix_power"
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

return M
