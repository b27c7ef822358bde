-- linalg_more_spec.lua — the torch.linalg functions composed in lua/ember/linalg.lua
-- (solve_triangular, multi_dot, vecdot, diagonal, matmul, cond, inv_ex, cholesky_ex,
-- solve_ex, vander, matrix_exp, lu_factor(_ex), lu, lu_solve, householder_product) and
-- PyTorch's top-level names of lua/ember/composite/linalg.lua (det, logdet, slogdet,
-- inverse, pinverse, matrix_power, matrix_exp, qr, svd, cholesky, cholesky_solve,
-- cholesky_inverse, triangular_solve, lu_solve, lu, lu_unpack, chain_matmul): values,
-- dtypes and float64 gradients against PyTorch 2.15 (fixtures/linalg_more.lua, written by
-- scripts/fixtures/make_linalg_more_fixtures.py), identities, and what bad input gets.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local L = ember.linalg

local THIS_FILE = "linalg_more_spec.lua:"

local function f64(t) return ember.tensor(t, {dtype = "float64"}) end

describe("linalg_more against PyTorch (fixtures)", function()
  for _, c in ipairs(h.fixture("linalg_more.lua")) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

describe("linalg_more: names", function()
  it("ember.linalg has each, ember and tensors the top-level ones, found before anything loaded them", function()
    -- a fresh process: the first use is a method call, which must load the part itself
    local src = "local e = require 'ember'; local t = e.eye(2); assert(t:det():item() == 1); "
                .. "print(type(t.cholesky_solve), type(e.chain_matmul), type(e.linalg.lu_factor))"
    local out = h.run_fresh(src)
    assert(out:find("function%sfunction%sfunction"), out)
    for _, n in ipairs({"solve_triangular", "multi_dot", "vecdot", "diagonal", "matmul", "cond", "inv_ex",
                        "cholesky_ex", "solve_ex", "vander", "matrix_exp", "lu_factor", "lu_factor_ex", "lu",
                        "lu_solve", "householder_product"}) do
      assert.are.equal("function", type(L[n]), "linalg." .. n)
    end
    local t = ember.zeros(2, 2)
    for _, n in ipairs({"det", "logdet", "slogdet", "inverse", "pinverse", "matrix_power", "matrix_exp", "qr", "svd",
                        "cholesky", "cholesky_solve", "cholesky_inverse", "triangular_solve", "lu_solve", "lu"}) do
      assert.are.equal("function", type(ember[n]), n)
      assert.are.equal("function", type(t[n]), "t:" .. n)
    end
    -- as PyTorch: functions only
    for _, n in ipairs({"lu_unpack", "chain_matmul"}) do
      assert.are.equal("function", type(ember[n]), n)
      has(err(function() local _ = t[n] end), "no field or method '" .. n .. "'")
    end
  end)
end)

describe("LU", function()
  it("P L U = A with unit lower L and upper U, batched, square, tall and wide", function()
    ember.manual_seed(3)
    for _, shape in ipairs({{2, 3, 5, 5}, {6, 3}, {3, 6}, {1, 1}}) do
      local A = ember.randn(shape, {dtype = "float64"})
      local P, Lw, U = L.lu(A)
      local k = math.min(shape[#shape - 1], shape[#shape])
      h.close_tensors("P L U", P:matmul(Lw):matmul(U), A, 1e-13)
      h.close_tensors("L's diagonal", Lw:diagonal(0, -2, -1), ember.ones_like(Lw:diagonal(0, -2, -1)), 0)
      h.close_tensors("L lower", Lw:triu(1), ember.zeros_like(Lw), 0)
      h.close_tensors("U upper", U:tril(-1), ember.zeros_like(U), 0)
      assert.are.equal(k, U.shape[#shape - 1])
      -- partial pivoting keeps every multiplier within [-1, 1]
      assert(Lw:abs():max():item() <= 1)
      local LU, piv, info = L.lu_factor_ex(A)
      assert.are.equal("int32", piv.dtype)
      assert.are.equal("int32", info.dtype)
      h.check_shape(info, {table.unpack(shape, 1, #shape - 2)})
      assert(info:eq(0):all():item())
      -- ember.lu_unpack gives the same factors back
      local P2, L2, U2 = ember.lu_unpack(LU, piv)
      h.close_tensors("P", P2, P, 0)
      h.close_tensors("L", L2, Lw, 0)
      h.close_tensors("U", U2, U, 0)
    end
  end)
  it("pivot = false: Doolittle's factors, P empty, pivots 1..k", function()
    local A = f64({{2, 1, 1}, {4, 3, 3}, {8, 7, 9}})
    local LU, piv = L.lu_factor(A, {pivot = false})
    h.check(LU, {{2, 1, 1}, {2, 1, 1}, {4, 3, 2}})
    h.check(piv, {1, 2, 3})
    local P, Lw, U = L.lu(A, {pivot = false})
    h.check_shape(P, {0})
    h.close_tensors("L U", Lw:matmul(U), A, 0)
  end)
  it("singular matrices: lu_factor refuses them, lu_factor_ex and ember.lu report info", function()
    local S = ember.stack({ember.eye(2), f64({{1, 2}, {2, 4}}):float()})
    local e = err(function() local _ = L.lu_factor(S) end)
    has(e, "linalg.lu_factor: (Batch element 2): U[2,2] is zero and using it on lu_solve would result in a "
      .. "division by zero")
    has(e, THIS_FILE)
    has(err(L.lu_factor_ex, S, {check_errors = true}), "linalg.lu_factor_ex: (Batch element 2): U[2,2] is zero")
    has(err(L.lu_factor, ember.zeros(3, 3)), "linalg.lu_factor: U[1,1] is zero")
    local _, _, info = L.lu_factor_ex(S)
    h.check(info, {0, 2})
    local _, _, info2 = ember.lu(S, {get_infos = true})
    h.check(info2, {0, 2})
  end)
  it("empty matrices and batches", function()
    local LU, piv = L.lu_factor(ember.zeros(0, 0))
    h.check_shape(LU, {0, 0})
    h.check_shape(piv, {0})
    local LU2, piv2, info2 = L.lu_factor_ex(ember.zeros(2, 0, 3))
    h.check_shape(LU2, {2, 0, 3})
    h.check_shape(piv2, {2, 0})
    h.check(info2, {0, 0})
    local LU3, piv3 = L.lu_factor(ember.zeros(0, 3, 3))
    h.check_shape(LU3, {0, 3, 3})
    h.check_shape(piv3, {0, 3})
  end)
  it("lu_solve solves A X = B and the adjoint, against linalg.solve", function()
    ember.manual_seed(5)
    local A = ember.randn(2, 4, 4, {dtype = "float64"})
    local B = ember.randn(2, 4, 3, {dtype = "float64"})
    local LU, piv = L.lu_factor(A)
    h.close_tensors("A X = B", L.lu_solve(LU, piv, B), L.solve(A, B), 1e-12)
    h.close_tensors("A^T X = B", L.lu_solve(LU, piv, B, {adjoint = true}), L.solve(A.mT, B), 1e-12)
    h.close_tensors("X A = B", L.lu_solve(LU, piv, B.mT, {left = false}), L.solve(A, B.mT, {left = false}), 1e-12)
  end)
  it("refuses bad pivots and shapes", function()
    local LU, piv = L.lu_factor(ember.randn(3, 3))
    has(err(L.lu_solve, LU, piv:long(), ember.ones(3, 1)), "linalg.lu_solve: pivots should be a tensor of dtype int32")
    has(err(L.lu_solve, LU, ember.tensor({0, 2, 3}, {dtype = "int32"}), ember.ones(3, 1)),
      "linalg.lu_solve: pivots must be between 1 and LU.size(-2) = 3")
    has(err(L.lu_solve, LU, ember.tensor({4, 2, 3}, {dtype = "int32"}), ember.ones(3, 1)), "pivots must be between")
    has(err(L.lu_solve, LU, piv:narrow(1, 1, 2), ember.ones(3, 1)),
      "linalg.lu_solve: expected pivots of shape [3] for LU of shape [3, 3], got [2]")
    has(err(L.lu_solve, LU, piv, ember.ones(2, 1)),
      "linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 2x1)")
    has(err(L.lu_solve, LU, piv, ember.ones(3, 2), {left = false}), "equation XA = B (3x3 and 3x2)")
    has(err(L.lu_solve, LU, piv, ember.ones(3)), "linalg.lu_solve: The input tensor B must have at least 2 dimensions")
    has(err(L.lu_solve, LU, piv, ember.ones(3, 1, {dtype = "float64"})),
      "linalg.lu_solve: Expected LU and B to have the same dtype, but got float32 and float64")
    has(err(L.lu_solve, ember.ones(3, 2), piv, ember.ones(3, 1)),
      "linalg.lu_solve: LU must be batches of square matrices, but they are 3 by 2 matrices")
    has(err(L.lu_solve, LU, piv, ember.ones(3, 1), {adjoint = 1}), "linalg.lu_solve: adjoint must be a boolean")
    has(err(L.lu_factor, ember.tensor({{1, 2}, {3, 4}})),
      "linalg.lu_factor: Expected a float32 or float64 tensor as input, got int64")
    has(err(L.lu_factor, ember.ones(3)), "linalg.lu_factor: The input tensor A must have at least 2 dimensions, got 1")
    has(err(L.lu, ember.ones(2, 2), true), "linalg.lu: too many positional arguments")
    has(err(ember.lu_unpack, LU, ember.tensor({1, 2, 3})), "lu_unpack: pivots should be a tensor of dtype int32")
    has(err(ember.lu_unpack, LU, ember.tensor({3, 2, 4}, {dtype = "int32"})), "lu_unpack: pivots must be between")
  end)
end)

describe("solve_triangular and triangular_solve", function()
  it("read only the triangle, broadcast batch dims, and agree with linalg.solve on it", function()
    ember.manual_seed(7)
    local A = ember.randn(2, 1, 4, 4, {dtype = "float64"}) + ember.eye(4, {dtype = "float64"}) * 4
    local B = ember.randn(3, 4, 2, {dtype = "float64"})
    local X = L.solve_triangular(A, B, {upper = true})
    h.check_shape(X, {2, 3, 4, 2})
    h.close_tensors("upper", X, L.solve(A:triu(), B), 1e-12)
    h.close_tensors("lower unit", L.solve_triangular(A, B, {upper = false, unitriangular = true}),
      L.solve(A:tril(-1) + ember.eye(4, {dtype = "float64"}), B), 1e-12)
    local sol, coef = ember.triangular_solve(B, A)
    h.close_tensors("triangular_solve", sol, X, 0)
    h.close_tensors("cloned coefficient", coef, A, 0)
    assert(not rawequal(coef, A))
  end)
  it("empty systems", function()
    h.check_shape(L.solve_triangular(ember.zeros(0, 0), ember.zeros(0, 3), {upper = true}), {0, 3})
    h.check_shape(L.solve_triangular(ember.zeros(2, 3, 3), ember.zeros(2, 3, 0), {upper = false}), {2, 3, 0})
  end)
  it("refuse what PyTorch refuses", function()
    local A = ember.eye(3)
    local e = err(function() local _ = L.solve_triangular(A, ember.ones(3, 1)) end)
    has(e, "linalg.solve_triangular: missing the required keyword argument 'upper'")
    has(e, THIS_FILE)
    has(err(L.solve_triangular, A, ember.ones(3, 1), true), "linalg.solve_triangular: too many positional arguments")
    has(err(L.solve_triangular, A, ember.ones(3), {upper = true}),
      "linalg.solve_triangular: The input tensor B must have at least 2 dimensions, got 1")
    has(err(L.solve_triangular, ember.ones(3, 2), ember.ones(3, 1), {upper = true}),
      "linalg.solve_triangular: A must be batches of square matrices, but they are 3 by 2 matrices")
    has(err(L.solve_triangular, A, ember.ones(2, 1), {upper = true}),
      "linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B (3x3 and 2x1)")
    has(err(L.solve_triangular, A:long(), ember.ones(3, 1):long(), {upper = true}),
      "linalg.solve_triangular: Expected a float32 or float64 tensor as input, got int64")
    has(err(L.solve_triangular, A, ember.ones(3, 1, {dtype = "float64"}), {upper = true}),
      "linalg.solve_triangular: Expected A and B to have the same dtype, but got float32 and float64")
    has(err(L.solve_triangular, ember.ones(2, 3, 3), ember.ones(3, 3, 1), {upper = true}),
      "linalg.solve_triangular: the batch dimensions of [2, 3, 3] and [3, 3, 1] do not broadcast")
    has(err(L.solve_triangular, A, ember.ones(3, 1), {upper = "yes"}),
      "linalg.solve_triangular: upper must be a boolean, got string")
    has(err(L.solve_triangular, "A", ember.ones(3, 1), {upper = true}),
      "linalg.solve_triangular: A must be a tensor, got string")
    has(err(ember.triangular_solve, ember.ones(3), A), "triangular_solve: The input tensor b must have at least 2")
    has(err(ember.triangular_solve, ember.ones(2, 1), A),
      "triangular_solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 2x1)")
  end)
end)

describe("the _ex forms", function()
  it("info is int32 of the batch shape, 0 where the factorization worked", function()
    local A = ember.stack({ember.eye(2, {dtype = "float64"}) * 2, f64({{1, 2}, {2, 4}})})
    local X, info = L.inv_ex(A)
    h.check(info, {0, 2})
    assert.are.equal("int32", info.dtype)
    h.check(X[1], {{0.5, 0}, {0, 0.5}})
    local _, info0 = L.inv_ex(ember.eye(3))
    h.check_shape(info0, {})
    assert.are.equal("int32", info0.dtype)
    local _, cinfo = L.cholesky_ex(ember.stack({ember.eye(2), -ember.eye(2)}))
    h.check(cinfo, {0, 1})
    local Y, sinfo = L.solve_ex(A, ember.ones(2, 2, {dtype = "float64"}))
    h.check(sinfo, {0, 2})
    h.check(Y[1], {0.5, 0.5})
  end)
  it("check_errors raises as the plain functions do, naming the batch element", function()
    local A = ember.stack({ember.eye(2), ember.zeros(2, 2)})
    local e = err(function() local _ = L.inv_ex(A, {check_errors = true}) end)
    has(e, "linalg.inv_ex: (Batch element 2): The diagonal element 1 is zero, the inversion could not be completed "
      .. "because the input matrix is singular.")
    has(e, THIS_FILE)
    has(err(L.cholesky_ex, A, {check_errors = true}), "linalg.cholesky_ex: (Batch element 2): The factorization could "
      .. "not be completed because the input is not positive-definite (the leading minor of order 1 is not "
      .. "positive-definite).")
    has(err(L.solve_ex, A, ember.ones(2, 2), {check_errors = true}),
      "linalg.solve_ex: (Batch element 2): The solver failed because the input matrix is singular.")
    has(err(L.inv_ex, ember.zeros(2, 2), {check_errors = true}), "linalg.inv_ex: The diagonal element 1 is zero")
  end)
  it("other bad input is an error under the _ex name", function()
    has(err(L.inv_ex, ember.ones(2, 3)), "linalg.inv_ex: A must be batches of square matrices, but they are 2 by 3")
    has(err(L.inv_ex, ember.eye(2):long()), "linalg.inv_ex: Expected a float32 or float64 tensor as input, got int64")
    has(err(L.cholesky_ex, ember.ones(2)), "linalg.cholesky_ex: The input tensor A must have at least 2 dimensions")
    has(err(L.solve_ex, ember.eye(3), ember.ones(2)), "linalg.solve_ex: Incompatible shapes of A and B")
    has(err(L.solve_ex, ember.eye(3), "B"), "linalg.solve_ex: B must be a tensor, got string")
    has(err(L.inv_ex, ember.eye(2), {check_errors = 1}), "linalg.inv_ex: check_errors must be a boolean")
    has(err(L.inv_ex, ember.eye(2), true), "linalg.inv_ex: too many positional arguments")
  end)
end)

describe("matrix_exp", function()
  it("matches closed forms to float64 precision", function()
    -- a rotation generator: [[cos t, sin t], [-sin t, cos t]]
    for _, t in ipairs({0.1, 2.5, 40.0}) do
      local R = L.matrix_exp(f64({{0, t}, {-t, 0}}))
      h.close_tensors("rotation " .. t, R, f64({{math.cos(t), math.sin(t)}, {-math.sin(t), math.cos(t)}}), 1e-13 * t)
    end
    -- a Jordan block: e^a [[1, b], [0, 1]]
    local J = L.matrix_exp(f64({{1.5, 7}, {0, 1.5}}))
    h.close_tensors("Jordan", J, f64({{math.exp(1.5), 7 * math.exp(1.5)}, {0, math.exp(1.5)}}), 1e-14)
    -- a diagonal matrix of large entries: its entries' exponentials (relative error)
    local D = L.matrix_exp(f64({{20, 0}, {0, -3}}))
    assert(math.abs(D[1][1]:item() / math.exp(20) - 1) < 1e-13)
    assert(math.abs(D[2][2]:item() / math.exp(-3) - 1) < 1e-13)
    -- exp(A) exp(-A) = I
    ember.manual_seed(9)
    local A = ember.randn(3, 5, 5, {dtype = "float64"}) * 2
    h.close_tensors("exp(A) exp(-A)", L.matrix_exp(A):matmul(L.matrix_exp(-A)),
      ember.eye(5, {dtype = "float64"}):expand(3, 5, 5), 1e-11)
  end)
  it("empty and refused input", function()
    h.check_shape(L.matrix_exp(ember.zeros(0, 0)), {0, 0})
    h.check_shape(L.matrix_exp(ember.zeros(0, 2, 2)), {0, 2, 2})
    has(err(L.matrix_exp, ember.ones(2, 3)),
      "linalg.matrix_exp: A must be batches of square matrices, but they are 2 by 3 matrices")
    has(err(L.matrix_exp, ember.eye(2):long()), "linalg.matrix_exp: Expected a float32 or float64 tensor")
    has(err(ember.matrix_exp, 3), "linalg.matrix_exp: A must be a tensor, got number")
  end)
end)

describe("small ones: errors", function()
  it("multi_dot and chain_matmul", function()
    has(err(L.multi_dot, {ember.ones(2)}), "linalg.multi_dot: expected at least 2 tensors but got 1")
    has(err(L.multi_dot, ember.ones(2)), "linalg.multi_dot: expected a table of tensors, got a tensor")
    has(err(L.multi_dot, {ember.ones(2, 3, 1), ember.ones(1, 2)}),
      "linalg.multi_dot: the first tensor must be 1D or 2D but got 3D")
    has(err(L.multi_dot, {ember.ones(2, 3), ember.ones(3), ember.ones(3)}),
      "linalg.multi_dot: tensor 2 must be 2D but got 1D")
    has(err(L.multi_dot, {ember.ones(2, 3), ember.ones(2, 2)}),
      "linalg.multi_dot: tensors 1 and 2 with shapes [2, 3] and [2, 2] cannot be multiplied")
    has(err(L.multi_dot, {ember.ones(2, 3), ember.ones(3, 2, {dtype = "float64"})}),
      "linalg.multi_dot: all tensors must have the same dtype, but tensor 1 is float32 and tensor 2 is float64")
    has(err(L.multi_dot, {ember.ones(2, 3), 5}), "linalg.multi_dot: tensor 2 must be a tensor, got number")
    has(err(ember.chain_matmul), "chain_matmul: expected one or more matrices")
    has(err(ember.chain_matmul, ember.ones(2, 3), ember.ones(3)), "chain_matmul: matrix 2 is 1-D, expected 2-D")
  end)
  it("vecdot, vander, cond, householder_product, diagonal", function()
    has(err(L.vecdot, ember.ones(2), ember.ones(2, {dtype = "float64"})),
      "linalg.vecdot: Expected x and y to have the same dtype, but got float32 and float64")
    has(err(L.vecdot, ember.tensor({1, 2}), ember.tensor({3, 4})),
      "linalg.vecdot: Expected a floating point tensor as input, got int64")
    has(err(L.vecdot, ember.ones(2), ember.ones(2), -1), "linalg.vecdot: too many positional arguments")
    has(err(L.vander, ember.ones(3), {N = 1}), "linalg.vander: N must be greater than 1, got 1")
    has(err(L.vander, ember.tensor(2.0)), "linalg.vander: x must have at least one dimension")
    has(err(L.cond, ember.eye(2), 3), "linalg.cond: got an invalid norm type: 3")
    has(err(L.cond, ember.eye(2), "x"), "linalg.cond: got an invalid norm type: x")
    has(err(L.cond, ember.ones(2, 3), 1),
      "linalg.cond: with ord = 1, A must be batches of square matrices, but they are 2 by 3 matrices")
    has(err(L.cond, ember.eye(2):long()), "linalg.cond: Expected a float32 or float64 tensor as input, got int64")
    has(err(L.householder_product, ember.ones(2, 3), ember.ones(2)),
      "linalg.householder_product: A.shape[-2] must be at least A.shape[-1], got 2 by 3")
    has(err(L.householder_product, ember.ones(3, 2), ember.ones(3)),
      "linalg.householder_product: A.shape[-1] (2) must be at least tau.shape[-1] (3)")
    has(err(L.householder_product, ember.ones(3, 2), ember.ones(2, 2)),
      "linalg.householder_product: Expected tau to have one dimension less than A")
    has(err(L.householder_product, ember.ones(2, 3, 2), ember.ones(3, 2)),
      "linalg.householder_product: Expected the batch dimensions of tau to be A's")
    has(err(L.householder_product, ember.ones(3, 2), ember.ones(2, {dtype = "float64"})),
      "linalg.householder_product: Expected A and tau to have the same dtype")
    has(err(L.diagonal, ember.ones(2, 2), 1), "linalg.diagonal: too many positional arguments")
    has(err(L.diagonal, ember.ones(2, 2), {dim1 = 1.5}), "linalg.diagonal: dim1 must be an integer")
  end)
  it("the top-level names", function()
    has(err(ember.logdet, ember.ones(2, 3)), "logdet: A must be batches of square matrices, but they are 2 by 3")
    has(err(ember.cholesky_solve, ember.ones(3, 1), ember.eye(2)),
      "cholesky_solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)")
    has(err(ember.cholesky_solve, ember.ones(2), ember.eye(2)),
      "cholesky_solve: The input tensor B must have at least 2 dimensions")
    has(err(ember.cholesky_solve, ember.ones(2, 1), ember.eye(2, {dtype = "float64"})),
      "cholesky_solve: Expected B and L to have the same dtype, but got float32 and float64")
    has(err(ember.cholesky_inverse, ember.ones(2, 3)),
      "cholesky_inverse: L must be batches of square matrices, but they are 2 by 3 matrices")
    local singular = ember.stack({ember.eye(2), f64({{1, 0}, {0, 0}}):float()})
    local e = err(function() local _ = ember.cholesky_inverse(singular) end)
    has(e, "cholesky_inverse: (Batch element 2): The diagonal element 2 is zero, the inversion could not be completed "
      .. "because the input matrix is singular.")
    has(e, THIS_FILE)
    has(err(ember.svd, ember.ones(2, 2), {compute_uv = "no"}), "svd: compute_uv must be a boolean")
    has(err(ember.qr, ember.ones(2, 2), 1), "qr: some must be a boolean")
    has(err(ember.pinverse, ember.ones(2, 2), "x"), "pinverse: rcond must be a number")
    has(err(ember.lu, ember.ones(2, 2), {pivots = true}), "lu: unknown option 'pivots'")
  end)
end)

describe("cholesky_solve's and cholesky_inverse's gradients", function()
  it("are PyTorch's, L taken as a full matrix; B's is A^-1 G", function()
    ember.manual_seed(11)
    local X0 = ember.randn(3, 3, {dtype = "float64"})
    local Lc = L.cholesky(X0:matmul(X0.mT) + ember.eye(3, {dtype = "float64"}) * 3):requires_grad_()
    local B = ember.randn(3, 2, {dtype = "float64", requires_grad = true})
    local G = ember.randn(3, 2, {dtype = "float64"})
    local X = ember.cholesky_solve(B, Lc)
    local gB, gL = ember.autograd.grad({(X * G):sum()}, {B, Lc})
    local A = Lc:detach():matmul(Lc:detach().mT)
    local Y = L.solve(A, G)
    h.close_tensors("B's gradient", gB, Y, 1e-12)
    local C = Y:matmul(X:detach().mT)
    h.close_tensors("L's gradient", gL, -(C + C.mT):matmul(Lc:detach()), 1e-12)
    -- cholesky_inverse's values
    h.close_tensors("cholesky_inverse", ember.cholesky_inverse(Lc), L.inv(A), 1e-12)
  end)
end)

describe("under autocast", function()
  it("the composed factorizations and solves keep their inputs' dtype, the products lower it (as PyTorch)", function()
    ember.manual_seed(13)
    local A = ember.randn(3, 3) + ember.eye(3) * 3
    local Z = A:triu()
    Z[2][2] = 0
    local B = ember.randn(3, 2)
    local calls = {
      function() return L.matrix_exp(A) end,
      function() return L.solve_triangular(Z, B, {upper = true}) end,
      function() return L.householder_product(A, ember.ones(2)) end,
      function() return (L.lu_factor(A)) end,
      function() return L.cond(A, 1) end,
    }
    local plain = {}
    for i, f in ipairs(calls) do plain[i] = f() end
    ember.autocast("cpu", {dtype = "bfloat16"}, function()
      for i, f in ipairs(calls) do
        local got = f()
        assert.are.equal("float32", got.dtype)
        assert(got:eq(plain[i]):logical_or(got:isnan()):all():item(), "call " .. i .. " changed under autocast")
      end
      assert.are.equal("bfloat16", L.vecdot(A, A).dtype)
      assert.are.equal("bfloat16", L.multi_dot({A, A, B}).dtype)
    end)
  end)
end)
