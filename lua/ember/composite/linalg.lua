-- ember.composite.linalg — PyTorch's top-level linear-algebra names and their tensor
-- methods (torch.det, torch.inverse, torch.svd, torch.cholesky_solve, ...), mapped onto
-- ember.linalg (lua/ember/linalg.lua): most are its functions under an older name or
-- with older arguments (torch.svd's V rather than Vh, torch.qr's some, the argument
-- order of torch.lu_solve and torch.triangular_solve). A part of lua/ember/composite.lua.
local ember = require "ember"
local errors = require "ember.errors"
local linalg = require "ember.linalg"

local raise, check_tensor = errors.raise, errors.check_tensor
local options = require("ember.args").options
local H = linalg._helpers

local check_bools = H.check_bools

local both, functions = {}, {}

function both.det(A) return linalg.det(A) end

--- sign, logabsdet
function both.slogdet(A) return linalg.slogdet(A) end

function both.logdet(A)
  H.check_square(A, "logdet")
  local sign, logabs = linalg.slogdet(A)
  -- the logarithm of a negative determinant is NaN; of a zero one -inf (logabs)
  return ember.where(sign:lt(0), 0 / 0, logabs)
end

function both.inverse(A) return linalg.inv(A) end

function both.pinverse(A, ...)
  local o = options("pinverse", {"rcond"}, ...)
  check_tensor(A, "pinverse", "input")
  local rcond = o.rcond == nil and 1e-15 or o.rcond
  if type(rcond) ~= "number" then raise(string.format("pinverse: rcond must be a number, got %s", type(rcond))) end
  -- rcond is relative to the largest singular value, with no absolute tolerance
  return linalg.pinv(A, {atol = 0, rtol = rcond})
end

function both.matrix_power(A, n) return linalg.matrix_power(A, n) end

function both.matrix_exp(A) return linalg.matrix_exp(A) end

--- Q, R
function both.qr(A, ...)
  local o = options("qr", {"some"}, ...)
  check_bools(o, "qr", {"some"})
  return linalg.qr(A, o.some == false and "complete" or "reduced")
end

--- U, S, V (V, not linalg.svd's Vh)
function both.svd(A, ...)
  local o = options("svd", {"some", "compute_uv"}, ...)
  check_bools(o, "svd", {"some", "compute_uv"})
  if o.compute_uv == false then
    -- only S; U and V are zero matrices of their full sizes
    local m, n = H.check_matrices(A, "svd", "input")
    local S = linalg.svdvals(A)
    local function zeros(k)
      local shape = {table.unpack(A.shape, 1, A:dim() - 2)}
      shape[#shape + 1], shape[#shape + 2] = k, k
      return ember.zeros(shape, {dtype = A.dtype, device = A.device})
    end
    return zeros(m), S, zeros(n)
  end
  local U, S, Vh = linalg.svd(A, {full_matrices = o.some == false})
  return U, S, Vh.mT
end

function both.cholesky(A, ...)
  local o = options("cholesky", {"upper"}, ...)
  check_bools(o, "cholesky", {"upper"})
  return linalg.cholesky(A, {upper = o.upper == true})
end

-- X with A X = B for A = L L^T (U^T U when upper), by two triangular solves
local function cholesky_solve_plain(B, L, upper)
  local op = "cholesky_solve"
  if upper then return H.triangular(L, H.triangular(L.mT, B, false, true, false, op), true, true, false, op) end
  return H.triangular(L.mT, H.triangular(L, B, false, true, false, op), true, true, false, op)
end

-- PyTorch's gradient for L treats it as a full matrix in A = L L^T (its triangle is
-- not masked), which a composition of triangular solves (reading only the triangle)
-- would not give: a Function with PyTorch's formula.
local CholeskySolve

local function cholesky_solve_function()
  if CholeskySolve then return CholeskySolve end
  CholeskySolve = ember.autograd.Function:extend("CholeskySolve")
  function CholeskySolve.forward(ctx, B, L, upper)
    local X = cholesky_solve_plain(B, L, upper)
    ctx:save_for_backward(L, X)
    ctx.upper = upper
    return X
  end
  function CholeskySolve.backward(ctx, G)
    local L, X = table.unpack(ctx.saved_tensors)
    local Y = cholesky_solve_plain(G, L, ctx.upper)   -- A^-1 G, the gradient of B
    local C = Y:matmul(X.mT)
    C = C + C.mT
    return Y, ctx.upper and -L:matmul(C) or -C:matmul(L), nil
  end
  return CholeskySolve
end

function both.cholesky_solve(B, L, ...)
  local op = "cholesky_solve"
  local o = options(op, {"upper"}, ...)
  H.check_matrices(B, op, "B")
  H.check_square(L, op, "L")
  H.check_same_dtype(op, B, L, "B", "L")
  check_bools(o, op, {"upper"})
  H.check_equation(op, L, B, true)
  local batch = H.broadcast_batch(op, L, B)
  return cholesky_solve_function().apply(H.with_batch(B, batch), H.with_batch(L, batch), o.upper == true)
end

function both.cholesky_inverse(L, ...)
  local op = "cholesky_inverse"
  local o = options(op, {"upper"}, ...)
  local n = H.check_square(L, op, "L")
  check_bools(o, op, {"upper"})
  -- LAPACK's potri refuses a zero on the diagonal of the factor: info is the first j
  -- with L[j, j] = 0, found as the largest of the weights n, n-1, ..., 1 put on zeros
  local zero = L:diagonal(0, -2, -1):eq(0)
  local first = (zero:to("int64") * ember.arange(n, 0, -1, {dtype = "int64", device = L.device})):amax(-1)
  H.raise_info(op, ember.where(first:gt(0), n + 1 - first, 0), H.singular("inversion"))
  return both.cholesky_solve(H.eye_like(L, n), L, {upper = o.upper == true})
end

--- solution, cloned_coefficient
function both.triangular_solve(b, A, ...)
  local op = "triangular_solve"
  local o = options(op, {"upper", "transpose", "unitriangular"}, ...)
  H.check_matrices(b, op, "b")
  H.check_square(A, op, "A")
  H.check_same_dtype(op, b, A, "b", "A")
  check_bools(o, op, {"upper", "transpose", "unitriangular"})
  H.check_equation(op, A, b, true)
  local upper = o.upper ~= false
  local X
  if o.transpose then
    X = H.triangular(A.mT, b, not upper, true, o.unitriangular == true, op)
  else
    X = H.triangular(A, b, upper, true, o.unitriangular == true, op)
  end
  return X, A:clone()
end

function both.lu_solve(b, LU_data, LU_pivots) return linalg.lu_solve(LU_data, LU_pivots, b) end

--- LU, pivots [, infos]
function both.lu(A, ...)
  local o = options("lu", {"pivot", "get_infos"}, ...)
  check_bools(o, "lu", {"pivot", "get_infos"})
  local LU, piv, info = linalg.lu_factor_ex(A, {pivot = o.pivot ~= false})
  if o.get_infos then return LU, piv, info end
  return LU, piv
end

--- P, L, U
function functions.lu_unpack(LU_data, LU_pivots, ...)
  local op = "lu_unpack"
  local o = options(op, {"unpack_data", "unpack_pivots"}, ...)
  H.check_matrices(LU_data, op, "LU_data")
  check_bools(o, op, {"unpack_data", "unpack_pivots"})
  H.check_pivots(op, LU_data, LU_pivots)
  return H.lu_unpack(LU_data, LU_pivots, o.unpack_data ~= false, o.unpack_pivots ~= false)
end

function functions.chain_matmul(...)
  local n = select("#", ...)
  if n == 0 then raise("chain_matmul: expected one or more matrices") end
  local ms = {...}
  for i = 1, n do
    check_tensor(ms[i], "chain_matmul", "matrix " .. i)
    if ms[i]:dim() ~= 2 then
      raise(string.format("chain_matmul: matrix %d is %d-D, expected 2-D", i, ms[i]:dim()))
    end
  end
  if n == 1 then return ms[1]:clone() end
  return linalg.multi_dot(ms)
end

return {functions = functions, both = both, methods = {}}
