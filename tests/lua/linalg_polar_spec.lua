-- linalg_polar_spec.lua — linalg.polar and linalg.matrix_sqrth against PyTorch 2.15
-- (scripts/fixtures/make_linalg_polar_fixtures.py): the factors and the root, and their
-- gradients under a weighted sum (an orthogonal matrix, whose singular values all repeat,
-- included: the SVD's gradient is undefined there, the polar decomposition's is not); the
-- defining identities; the errors.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local L = ember.linalg
local FX = h.fixture("linalg_polar.lua")

local function t(v) return ember.tensor(v, {dtype = "float64"}) end
local function close(what, got, want, tol) h.check_flat(got, h.flat(want), what, tol or 1e-12) end

describe("linalg.polar against PyTorch 2.15", function()
  for name, c in pairs(FX.polar) do
    it(name .. ": U, H and the gradient", function()
      local A = t(c.A):requires_grad_()
      local U, H = L.polar(A)
      close("U", U, c.U)
      close("H", H, c.H)
      local loss = (U * t(c.wu)):sum() + (H * t(c.wh)):sum()
      loss:backward()
      close("dA", A.grad, c.grad, 1e-10)
      -- the identities: A = U H, U^T U = I, H symmetric
      close("U H", U:matmul(H), c.A)
      local n = H.shape[H:dim()]
      local I = ember.eye(n, {dtype = "float64"}):expand(H.shape)
      close("U^T U", U.mT:matmul(U), I:tolist())
      close("H = H^T", H.mT, H:tolist())
    end)
  end

  it("refuses wide matrices and vectors, and takes empty ones", function()
    has(err(function() local _ = L.polar(ember.zeros(2, 3)) end),
        "linalg.polar: input must have at least as many rows as columns, but got 2 by 3 matrices", "linalg_polar_spec.lua:")
    has(err(function() local _ = L.polar(ember.zeros(3)) end), "linalg.polar: The input tensor A must have at least 2 dimensions")
    local U, H = L.polar(ember.zeros(0, 0))
    assert(h.same(U.shape, {0, 0}) and h.same(H.shape, {0, 0}))
  end)
end)

describe("linalg.matrix_sqrth against PyTorch 2.15", function()
  for name, c in pairs(FX.sqrth) do
    it(name .. ": the root and its gradient", function()
      local A = t(c.A):requires_grad_()
      local X = L.matrix_sqrth(A)
      close("X", X, c.X)
      local loss = (X * t(c.w)):sum()
      loss:backward()
      close("dA", A.grad, c.grad, 1e-10)
    end)
  end

  it("X X = A for a positive-definite A, in float32 too; refuses non-square matrices", function()
    local A = t(FX.sqrth.spd.A)
    local X = L.matrix_sqrth(A)
    close("X X", X:matmul(X), FX.sqrth.spd.A)
    local X32 = L.matrix_sqrth(A:float())
    assert.are.equal("float32", X32.dtype)
    close("float32", X32, FX.sqrth.spd.X, 1e-5)
    has(err(function() local _ = L.matrix_sqrth(ember.zeros(2, 3)) end),
        "linalg.matrix_sqrth: A must be batches of square matrices, but they are 2 by 3 matrices")
  end)
end)
