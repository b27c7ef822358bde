-- advindex_spec.lua (GPU) — advanced indexing (t[{...}] with index tensors and
-- masks, assignment through them, index_put), einsum, tensordot, kron and cdist
-- on the device under test against the CPU backend, forward and backward. All
-- are compositions of engine ops, so this checks that those compositions hold
-- on the device (and that index tensors on the CPU are accepted for a device
-- tensor).
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, close, agree = g.dev, g.close, g.agree

local function R(...) return ember.randn(...) end
local function L(v) return ember.tensor(v, {dtype = "int64"}) end

-- f's results and the gradients of sum(out * w) for the inputs, on the CPU and
-- on the device, compared
local function agree_grad(f, inputs, opts)
  local function run(ins)
    local leaves = {}
    for i, x in ipairs(ins) do
      leaves[i] = ember.is_tensor(x) and x.dtype == "float64" and x:detach():requires_grad_() or x
    end
    local out = f(table.unpack(leaves))
    local w = ember.arange(1, out:numel() + 1, {dtype = "float64", device = out.device}):reshape(out.shape)
    ;(out * w):sum():backward()
    local r = {out}
    for _, x in ipairs(leaves) do
      if ember.is_tensor(x) and x.requires_grad then r[#r + 1] = x.grad end
    end
    return r
  end
  local want = run(inputs)
  local dins = {}
  for i, x in ipairs(inputs) do dins[i] = dev(x) end
  local got = run(dins)
  for i = 1, #want do close(got[i], want[i], opts) end
end

describe("advanced indexing on the device", function()
  it("reads with index tensors, masks, ints and ranges, and their gradients", function()
    ember.manual_seed(16)
    local x = R(4, 5, 6, {dtype = "float64"})
    local m = ember.rand(4, 5):gt(0.4)
    agree_grad(function(t, i) return t[{{}, i}] end, {x, L{5, 1, -1, 1}})
    agree_grad(function(t, i, j) return t[{i, {}, j}] end, {x, L{{1}, {4}}, L{6, 2, 2}})
    agree_grad(function(t, i, j) return t[{2, i, j}] end, {x, L{1, 3}, L{-2, 4}})
    agree_grad(function(t, mm) return t[{mm}] end, {x, m})
    agree_grad(function(t, i) return t[{{2, 4}, {}, i}] end, {x, L{1, 1, 1}})
    agree_grad(function(t, i) return t[i] end, {x, L{{2, 3}, {3, 3}}})
  end)

  it("index tensors on the CPU index a device tensor", function()
    local x = R(5, 3)
    close(dev(x)[{L{2, 5}, L{1, 3}}], x[{L{2, 5}, L{1, 3}}])
  end)

  it("writes: numbers, broadcast tensors, masks, accumulate", function()
    local function put(t, i, j, v)
      local c = t:clone()
      c[{i, {}, j}] = v
      return c
    end
    agree(put, {R(3, 4, 5), L{1, 3}, L{5, 2}, ember.randn(2, 1)})
    agree(function(t, mm) local c = t:clone(); c[mm] = 7; c[{{}, mm[1]}] = -1; return c end,
      {R(4, 4), ember.rand(4, 4):gt(0.5)})
    -- no duplicates here: which duplicate wins is unspecified on CUDA
    agree(function(t, i, v) return t:index_put({i}, v) end, {R(6, 2), L{6, 1, 3}, R(3, 2)})
    agree(function(t, i, v) return t:index_put({i}, v, true) end, {R(6, 2), L{6, 1, 6, 6}, R(4, 2)})
    agree_grad(function(t, i, v) return ember.index_put(t, {i}, v) end,
      {R(5, 3, {dtype = "float64"}), L{2, 4}, R(2, 3, {dtype = "float64"})})
    agree_grad(function(t, i, v) return ember.index_put(t, {{}, i}, v, {accumulate = true}) end,
      {R(5, 3, {dtype = "float64"}), L{1, 1, 3}, R(5, 3, {dtype = "float64"})})
  end)

  it("out-of-range indices raise and leave the session working", function()
    local x = dev(R(3, 3))
    local ok, e = pcall(function() local r = x[{L{4}}]; return r end)
    assert(not ok and tostring(e):find("index 4 is out of range for dimension 1 of size 3", 1, true), tostring(e))
    close(x[{L{1}}], x[{{1, 1}}])
  end)
end)

describe("einsum, tensordot, kron, cdist on the device", function()
  it("einsum equations forward and backward", function()
    ember.manual_seed(7)
    local D = function(...) local s = {...}; s[#s + 1] = {dtype = "float64"}; return R(table.unpack(s)) end
    agree_grad(function(a, b) return ember.einsum("ij,jk->ik", a, b) end, {D(3, 4), D(4, 5)})
    agree_grad(function(a, b) return ember.einsum("...ij,...jk", a, b) end, {D(2, 1, 3, 4), D(3, 4, 2)})
    agree_grad(function(a) return ember.einsum("bii->bi", a) end, {D(2, 3, 3)})
    agree_grad(function(a, b, c) return ember.einsum("bn,anm,bm->ba", a, b, c) end, {D(2, 3), D(4, 3, 5), D(2, 5)})
    agree(function(a, b) return ember.einsum("ij,jk", a, b) end, {R(30, 40), R(40, 20)}, {scale = 1e-5})
  end)

  it("tensordot, kron and cdist forward and backward", function()
    local D = function(...) local s = {...}; s[#s + 1] = {dtype = "float64"}; return R(table.unpack(s)) end
    agree_grad(function(a, b) return ember.tensordot(a, b, {{1, 3}, {2, 1}}) end, {D(3, 2, 4), D(4, 3, 2)})
    agree_grad(function(a, b) return ember.kron(a, b) end, {D(2, 3), D(3, 2)})
    agree_grad(function(a, b) return ember.cdist(a, b) end, {D(2, 5, 3), D(2, 4, 3)})
    agree_grad(function(a, b) return ember.cdist(a, b, 1.5) end, {D(5, 3), D(4, 3)})
    agree_grad(function(a, b) return ember.cdist(a, b) end, {D(40, 3), D(30, 3)})   -- the matmul form
    agree(function(a, b) return ember.cdist(a, b, math.huge), ember.cdist(a, b, 0) end, {R(6, 3), R(5, 3)})
  end)
end)
