-- einsum_spec.lua — einsum, tensordot, kron and cdist. Expected values: PyTorch 1.13
-- through tests/lua/fixtures/advindex_einsum.lua (scripts/fixtures/make_advindex_fixtures.py;
-- dims converted to 1-based), naive Lua loops, other ember ops, and finite
-- differences (gradcheck in float64).
local ember = require "ember"
local h = require "helpers"
local check, check_shape, err, has = h.check, h.check_shape, h.err, h.has
local fx = h.fixture("advindex_einsum.lua")

local D = function(v) return ember.tensor(v, {dtype = "float64"}) end

local function from_flat(spec) return h.from_flat(spec, "float64") end
local function check_flat(t, want, what) h.check_flat(t, want, what, 1e-10) end

local function call(c, ins)
  if c.op == "einsum" then return ember.einsum(c.eq, table.unpack(ins)) end
  if c.op == "tensordot" then return ember.tensordot(ins[1], ins[2], c.dims) end
  if c.op == "kron" then return ember.kron(ins[1], ins[2]) end
  return ember.cdist(ins[1], ins[2], c.p)
end

describe("einsum family: PyTorch fixtures", function()
  for _, c in ipairs(fx) do
    local what = c.op .. " " .. (c.eq or "") .. (c.p and (" p=" .. c.p) or "") ..
                 " " .. h.show(c.inputs[1].shape) .. (c.inputs[2] and (" " .. h.show(c.inputs[2].shape)) or "")
    it(what, function()
      local ins = {}
      for i, s in ipairs(c.inputs) do ins[i] = from_flat(s):requires_grad_() end
      local out = call(c, ins)
      check_shape(out, c.out_shape)
      check_flat(out, c.out, "values")
      if c.grads then
        local w = ember.arange(1, out:numel() + 1, {dtype = "float64"}):reshape(out.shape)
        ;(out * w):sum():backward()
        for i, g in ipairs(c.grads) do check_flat(ins[i].grad, g, "grad " .. i) end
      end
    end)
  end
end)

describe("einsum", function()
  it("agrees with a naive loop on a three-operand contraction", function()
    local a, b, c = ember.randn(2, 3, {dtype = "float64"}), ember.randn(3, 4, 2, {dtype = "float64"}),
                    ember.randn(2, 2, {dtype = "float64"})
    local got = ember.einsum("ij,jkl,lm->ikm", {a, b, c})
    local A, B, C = a:tolist(), b:tolist(), c:tolist()
    local want = {}
    for i = 1, 2 do
      want[i] = {}
      for k = 1, 4 do
        want[i][k] = {}
        for m = 1, 2 do
          local s = 0
          for j = 1, 3 do for l = 1, 2 do s = s + A[i][j] * B[j][k][l] * C[l][m] end end
          want[i][k][m] = s
        end
      end
    end
    check(got, want, 1e-12)
  end)

  it("matches matmul, trace, diagonal and sum", function()
    local a, b = ember.randn(3, 3, {dtype = "float64"}), ember.randn(3, 5, {dtype = "float64"})
    check(ember.einsum("ij,jk->ik", a, b), a:matmul(b):tolist(), 1e-12)
    check(ember.einsum("ii->", a), a:diagonal():sum():tolist(), 1e-12)
    check(ember.einsum("ii->i", a), a:diagonal():tolist(), 1e-12)
    check(ember.einsum("ij->j", b), b:sum(1):tolist(), 1e-12)
    check(ember.einsum("...j->...", b), b:sum(2):tolist(), 1e-12)
  end)

  it("gradcheck and gradgradcheck (float64)", function()
    local f = function(x, y) return ember.einsum("bij,bjk->bik", x, y) end
    local ok, report = ember.autograd.gradcheck(f, {ember.randn(2, 2, 3, {dtype = "float64"}):requires_grad_(),
                                                    ember.randn(2, 3, 2, {dtype = "float64"}):requires_grad_()})
    assert(ok, report)
    ok, report = ember.autograd.gradgradcheck(function(x) return ember.einsum("ii,ij->j", x, x) end,
      {ember.randn(3, 3, {dtype = "float64"}):requires_grad_()})
    assert(ok, report)
  end)

  it("refuses malformed equations clearly", function()
    local a = ember.randn(2, 3)
    has(err(ember.einsum, "ij,jk->ik", a), "more operand terms than the 1 operands given")
    has(err(ember.einsum, "ij", a, a), "1 operand terms but 2 operands")
    has(err(ember.einsum, "ijk", a), "operand 1 has 2 dimensions ([2,3]) but its subscripts 'ijk' name 3")
    has(err(ember.einsum, "ij,jk", a, ember.randn(4, 2)), "subscript 'j' has size 4 in operand 2 but 3 elsewhere")
    has(err(ember.einsum, "i1", a), "invalid subscript '1'")
    has(err(ember.einsum, "ij->ii", a), "output subscript 'i' appears more than once")
    has(err(ember.einsum, "ij->k", a), "output subscript 'k' does not appear in any operand")
    has(err(ember.einsum, "ii", a), "subscript 'i' is repeated in operand 1 for dimensions of sizes 2 and 3")
    has(err(ember.einsum, "ij,ij", a, ember.randn(2, 3, {dtype = "float64"})), "operands must have the same dtype")
    has(err(ember.einsum, "i..j", a), "ellipsis must be written '...'")
    has(err(ember.einsum, nil, a), "einsum: argument 1")
    has(err(ember.einsum, "ij"), "expected at least one operand")
  end)
end)

describe("tensordot, kron, cdist", function()
  it("tensordot by hand and its bad input", function()
    local a, b = ember.arange(6, {dtype = "float64"}):view(2, 3), ember.arange(6, {dtype = "float64"}):view(3, 2)
    check(ember.tensordot(a, b, 1), a:matmul(b):tolist())
    check(ember.tensordot(a, b, {{1, 2}, {2, 1}}), a:matmul(b):trace():item())
    check(ember.tensordot(a, b, {dims = {{2}, {1}}}), a:matmul(b):tolist())
    has(err(ember.tensordot, a, b, {{1}, {1}}), "differ in size (2 vs 3)")
    has(err(ember.tensordot, a, b, 3), "dims 3 must be between 0")
    has(err(ember.tensordot, a, b, {{1}, {1, 2}}), "the two dim lists differ in length")
  end)

  it("kron by hand", function()
    check(ember.kron(ember.tensor{1, 2}, ember.tensor{1, 10, 100}), {1, 10, 100, 2, 20, 200})
    check(ember.tensor{{1, 2}}:kron(ember.tensor{{1}, {-1}}), {{1, 2}, {-1, -2}})
  end)

  it("cdist by hand, batched, and with zero distances", function()
    local x = D{{0, 0}, {1, 1}}
    local y = D{{3, 4}, {1, 1}}
    check(ember.cdist(x, y), {{5, math.sqrt(2)}, {math.sqrt(13), 0}}, 1e-12)
    check(ember.cdist(x, y, 1), {{7, 2}, {5, 0}})
    check(ember.cdist(x, y, math.huge), {{4, 1}, {3, 0}})
    check(ember.cdist(x, y, {p = 0}), {{2, 2}, {2, 0}})
    check_shape(ember.cdist(ember.randn(3, 4, 2), ember.randn(3, 5, 2)), {3, 4, 5})
    -- the gradient at a zero distance is 0, as in PyTorch
    local a = x:clone():requires_grad_()
    ember.cdist(a, y):sum():backward()
    assert(not a.grad:isnan():any():item(), "no NaN in the gradient")
    local ok, report = ember.autograd.gradcheck(function(p, q) return ember.cdist(p, q, 3) end,
      {ember.randn(3, 2, {dtype = "float64"}):requires_grad_(), ember.randn(2, 2, {dtype = "float64"}):requires_grad_()})
    assert(ok, report)
    has(err(ember.cdist, ember.randn(2, 3), ember.randn(2, 4)), "must have the same size in the last dimension")
    has(err(ember.cdist, ember.randn(3), ember.randn(2, 3)), "at least 2 dimensions")
    has(err(ember.cdist, x, y, -1), "p must be a non-negative number")
  end)
end)
