-- linalg_tensor_spec.lua — linalg.tensorinv and linalg.tensorsolve: the defining identities
-- (tensordot(X, A, ind) is the identity; tensordot(A, X, X:dim()) is B), PyTorch's shapes,
-- a case by hand, dims, and the errors.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local linalg = ember.linalg

local function randn(...) ember.manual_seed(41) return ember.randn({...}, {dtype = "float64"}) end

describe("linalg.tensorinv", function()
  it("inverts A as a map between its first ind dims and the rest", function()
    local A = randn(4, 6, 8, 3)
    local X = linalg.tensorinv(A)                            -- ind = 2
    assert.are.same({8, 3, 4, 6}, X.shape)
    local I = ember.eye(24, {dtype = "float64"}):view(8, 3, 8, 3)
    h.close_tensors("X . A", ember.tensordot(X, A, 2), I, 1e-10)
    local B = randn(6, 2, 3)
    assert.are.same({2, 3, 6}, linalg.tensorinv(B, 1).shape)
    -- by hand: a diagonal map
    local D = ember.tensor({{2, 0}, {0, 4}}, {dtype = "float64"})
    assert.are.same({{0.5, 0}, {0, 0.25}}, linalg.tensorinv(D, 1):tolist())
  end)

  it("refuses an ind that does not split A into equal halves", function()
    has(err(function() local _ = linalg.tensorinv(ember.zeros(2, 3, 4), 1) end),
        "linalg.tensorinv: expected A to satisfy", "but got 12 != 2", "linalg_tensor_spec.lua:")
    has(err(function() local _ = linalg.tensorinv(ember.zeros(2, 2), 0) end), "strictly positive integer for ind")
  end)
end)

describe("linalg.tensorsolve", function()
  it("solves tensordot(A, X, X:dim()) = B", function()
    local A = randn(2, 3, 6)
    local B = randn(2, 3)
    local X = linalg.tensorsolve(A, B)
    assert.are.same({6}, X.shape)
    h.close_tensors("A . X", ember.tensordot(A, X, 1), B, 1e-10)
    -- dims: A's dims 1 and 3 moved to the end first (PyTorch's documented example, dims = (0, 2))
    local A2 = randn(6, 4, 4, 3, 2)
    local B2 = randn(4, 3, 2)
    local X2 = linalg.tensorsolve(A2, B2, {1, 3})
    assert.are.same({6, 4}, X2.shape)
    h.close_tensors("A2 . X2", ember.tensordot(A2:movedim({1, 3}, {4, 5}), X2, 2), B2, 1e-9)
    -- by hand
    local x = linalg.tensorsolve(ember.tensor({{2, 0}, {0, 4}}, {dtype = "float64"}), ember.tensor({1, 1}, {dtype = "float64"}))
    assert.are.same({0.5, 0.25}, x:tolist())
  end)

  it("refuses shapes that do not agree", function()
    has(err(function() local _ = linalg.tensorsolve(ember.zeros(2, 3, 4), ember.zeros(2, 3)) end),
        "linalg.tensorsolve: expected A to satisfy", "linalg_tensor_spec.lua:")
    has(err(function() local _ = linalg.tensorsolve(ember.zeros(2, 2), ember.zeros(2, 2, 2)) end),
        "linalg.tensorsolve: B [2, 2, 2] has more dims than A [2, 2]", "linalg_tensor_spec.lua:")
    has(err(function() local _ = linalg.tensorsolve(ember.zeros(2, 2), ember.zeros(2), 1) end),
        "linalg.tensorsolve: dims must be a list of dims, got number", "linalg_tensor_spec.lua:")
  end)
end)
