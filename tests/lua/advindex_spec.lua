-- advindex_spec.lua — indexing with tensors inside t[{...}] (PyTorch's advanced
-- indexing), assignment through them, ember.index_put / t:index_put_.
-- Expected values: PyTorch 1.13 through tests/lua/fixtures/advindex_cases.lua
-- (scripts/fixtures/make_advindex_fixtures.py, indices converted to 1-based), hand
-- calculation, naive Lua loops, and finite differences (gradcheck, float64).
local ember = require "ember"
local h = require "helpers"
local check, check_shape, err, has = h.check, h.check_shape, h.err, h.has
local fx = h.fixture("advindex_cases.lua")

local D = function(v) return ember.tensor(v, {dtype = "float64"}) end
local L = function(v) return ember.tensor(v, {dtype = "int64"}) end

local from_flat = h.from_flat

-- the fixture's key as ember's index table
local function make_key(key)
  local k = {}
  for i, e in ipairs(key) do
    if e.kind == "int" then k[i] = e.v
    elseif e.kind == "range" then k[i] = e.v
    elseif e.kind == "all" then k[i] = {}
    elseif e.kind == "mask" then k[i] = from_flat(e, "bool")
    elseif e.kind == "idx0" then k[i] = ember.tensor(e.v[1], {dtype = e.dtype}):reshape({})
    else k[i] = from_flat(e, e.dtype) end
  end
  return k
end

local function arange(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return ember.arange(n, {dtype = "float64"}):reshape(shape)
end

local function check_flat(t, want, what) h.check_flat(t, want, what, 1e-12) end

describe("advanced indexing: PyTorch fixtures", function()
  for _, c in ipairs(fx.read) do
    it("read: " .. c.name, function()
      local x = arange(c.shape):requires_grad_()
      local out = x[make_key(c.key)]
      check_shape(out, c.out_shape)
      check_flat(out, c.out, "values")
      local w = ember.arange(1, out:numel() + 1, {dtype = "float64"}):reshape(out.shape)
      ;(out * w):sum():backward()
      check_flat(x.grad, c.grad, "grad")
    end)
  end
  for _, c in ipairs(fx.write) do
    it("write: " .. c.name, function()
      local x = arange(c.shape)
      x[make_key(c.key)] = c.number or from_flat(c.value, "float64")
      check_flat(x, c.out, "result")
    end)
  end
  for _, c in ipairs(fx.put) do
    it("index_put: " .. c.name, function()
      local idx = make_key(c.key)
      for _, tag in ipairs({"set", "acc"}) do
        local want = c[tag]
        local x = arange(c.shape):requires_grad_()
        local v = from_flat(c.values, "float64"):requires_grad_()
        local out = ember.index_put(x, idx, v, {accumulate = tag == "acc"})
        check_flat(out, want.out, tag .. " result")
        local w = ember.arange(1, out:numel() + 1, {dtype = "float64"}):reshape(out.shape)
        ;(out * w):sum():backward()
        check_flat(x.grad, want.grad_x, tag .. " grad of self")
        check_flat(v.grad, want.grad_v, tag .. " grad of values")
        -- the in-place method gives the same result
        local y = arange(c.shape)
        local r = y:index_put_(idx, from_flat(c.values, "float64"), tag == "acc")
        assert.are.equal(y, r)
        check_flat(y, want.out, tag .. " in place")
      end
    end)
  end
end)

describe("advanced indexing by hand", function()
  local m = ember.arange(12):view(3, 4)

  it("picks elements by row and column index tensors", function()
    check(m[{L{1, 3}, L{2, 4}}], {1, 11})
    check(m[{L{-1}, L{1}}], {8})
    check(m[{{}, L{4, 1}}], {{3, 0}, {7, 4}, {11, 8}})
    -- integers select first, as in PyTorch: [2] row, then the index
    check(m[{2, L{1, 1, 4}}], {4, 4, 7})
    -- int32 and 0-d index tensors
    check(m[{ember.tensor({3, 1}, {dtype = "int32"})}], {{8, 9, 10, 11}, {0, 1, 2, 3}})
    check(m[{L(2):reshape({}), L{1, 2}}], {4, 5})
  end)

  it("a naive loop agrees on a broadcast pair of index tensors", function()
    local x = arange({4, 5, 3})
    local r, c = L{{1}, {4}, {2}}, L{3, 1}
    local got = x[{r, {}, c}]            -- non-adjacent: the index dims go first
    check_shape(got, {3, 2, 5})
    local want = {}
    for i = 1, 3 do
      want[i] = {}
      for j = 1, 2 do
        want[i][j] = {}
        local ri, cj = ({1, 4, 2})[i], ({3, 1})[j]
        for k = 1, 5 do want[i][j][k] = ((ri - 1) * 5 + (k - 1)) * 3 + (cj - 1) end
      end
    end
    check(got, want)
  end)

  it("bool masks consume as many dims as they have", function()
    local x = arange({2, 3, 2})
    local mask = ember.tensor{{true, false, false}, {false, false, true}}
    check(x[{mask}], {{0, 1}, {10, 11}})
    check(x[mask], {{0, 1}, {10, 11}})                     -- the whole key too
    check(x[{{}, ember.tensor{false, true, true}, 2}], {{3, 5}, {9, 11}})
    -- a 0-d bool adds a dim of size 1 (true) or 0 (false)
    check_shape(x[{ember.tensor(true)}], {1, 2, 3, 2})
    check_shape(x[{ember.tensor(false)}], {0, 2, 3, 2})
  end)

  it("a mask of the tensor's whole shape: values in row-major order, transposed operands, its gradient", function()
    local x = arange({2, 3})                               -- {{0, 1, 2}, {3, 4, 5}}
    check(x[ember.tensor{{false, true, true}, {true, false, false}}], {1, 2, 3})
    -- x:t() is {{0, 3}, {1, 4}, {2, 5}}: row-major over the view, not over memory
    check(x:t()[ember.tensor{{true, true}, {false, true}, {true, false}}], {0, 3, 4, 2})
    local m = ember.tensor{{true, false, true}, {false, true, false}}:t()   -- a transposed mask
    check(arange({3, 2})[m], {0, 3, 4})
    check_shape(x[ember.zeros(2, 3, {dtype = "bool"})], {0})
    local w = arange({2, 3}):requires_grad_()
    local sel = w[ember.tensor{{true, false, true}, {false, false, true}}]
    sel:mul(ember.tensor({1.0, 2.0, 3.0}, {dtype = "float64"})):sum():backward()
    check(w.grad, {{1, 0, 2}, {0, 0, 3}})
  end)

  it("t[idx] and t[mask] keep working", function()
    local t = ember.tensor{1, 2, 3, 4}
    check(t[L{4, 2}], {4, 2})
    check(t[ember.tensor{true, false, true, false}], {1, 3})
    check(m[L{{1}, {3}}], {{{0, 1, 2, 3}}, {{8, 9, 10, 11}}})
    -- all-integer keys give a 0-d tensor, as PyTorch
    assert.are.equal(0, m[{2, 3}]:dim())
    assert.are.equal(6, m[{2, 3}]:item())
  end)

  it("assignment writes numbers and broadcast tensors; duplicates: last write wins", function()
    local x = ember.zeros(3, 4)
    x[{L{1, 3}, L{2, 4}}] = 5
    check(x, {{0, 5, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 5}})
    x[{{}, L{1}}] = ember.tensor{{1}, {2}, {3}}
    check(x[{{}, 1}], {1, 2, 3})
    x[{{2, 3}, L{3, 4}}] = ember.tensor{7, 8}
    check(x, {{1, 5, 0, 0}, {2, 0, 7, 8}, {3, 0, 7, 8}})
    local y = ember.zeros(3)
    y[L{2, 2, 2}] = ember.tensor{1, 2, 3}
    check(y, {0, 3, 0})
    local z = ember.zeros(2, 2)
    z[ember.tensor{true, false}] = 4                        -- a mask over the rows
    check(z, {{4, 4}, {0, 0}})
    local b = ember.zeros(2, 3)
    b[ember.tensor{{true, false, true}, {false, false, true}}] = ember.tensor{1, 2, 3}
    check(b, {{1, 0, 2}, {0, 0, 3}})
    local i = ember.zeros(3, {dtype = "int64"})
    i[L{3}] = 1 << 60                                      -- exact past 2^53
    assert.are.equal(1 << 60, i[3]:item())
  end)

  it("writes into a view reach the tensor", function()
    local x = ember.zeros(4, 3)
    local v = x:t()                                         -- non-contiguous: copy-back path
    v[{L{1, 3}, L{2, 4}}] = 9
    check(x, {{0, 0, 0}, {9, 0, 0}, {0, 0, 0}, {0, 0, 9}})
  end)

  it("index_put accumulates duplicates", function()
    local x = ember.zeros(2, 3)
    local r = x:index_put({L{1, 1, 2}, L{3, 3, 1}}, ember.tensor{1, 2, 4}, {accumulate = true})
    check(r, {{0, 0, 3}, {4, 0, 0}})
    check(x, {{0, 0, 0}, {0, 0, 0}})
    x:index_put_({L{2}}, 7)
    check(x, {{0, 0, 0}, {7, 7, 7}})
    x:index_put_({{}, L{2}}, ember.tensor{{1}, {1}}, {accumulate = true})
    check(x, {{0, 1, 0}, {7, 8, 7}})
  end)
end)

describe("advanced indexing: autograd", function()
  it("reading accumulates duplicate gradients; gradcheck", function()
    local x = ember.randn(3, 4, {dtype = "float64"}):requires_grad_()
    local y = x[{L{1, 1, 3}, L{2, 2, -1}}]
    y:sum():backward()
    check(x.grad, {{0, 2, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 1}})
    local ok, report = ember.autograd.gradcheck(function(a) return a[{{}, L{{3, 1}, {1, 2}}}] end,
      {ember.randn(2, 3, {dtype = "float64"}):requires_grad_()})
    assert(ok, report)
    ok, report = ember.autograd.gradgradcheck(function(a) return a[{L{2, 1}, {}, L{1, 2}}] * a[{L{1, 1}, {}, L{2, 2}}] end,
      {ember.randn(2, 3, 2, {dtype = "float64"}):requires_grad_()})
    assert(ok, report)
  end)

  it("index_put: gradients to self (zeros where written) and to values", function()
    local f = function(a, v) return ember.index_put(a, {L{2, 3}, L{1, 1}}, v) end
    local ok, report = ember.autograd.gradcheck(f, {ember.randn(3, 2, {dtype = "float64"}):requires_grad_(),
                                                    ember.randn(2, {dtype = "float64"}):requires_grad_()})
    assert(ok, report)
    local g = function(a, v) return ember.index_put(a * a, {L{2, 2}}, v * v, true) end
    ok, report = ember.autograd.gradgradcheck(g, {ember.randn(3, 2, {dtype = "float64"}):requires_grad_(),
                                                  ember.randn(2, {dtype = "float64"}):requires_grad_()})
    assert(ok, report)
  end)

  it("assignment into a tensor that requires grad is refused", function()
    local x = ember.zeros(3):requires_grad_()
    has(err(function() x[{L{1}}] = 1 end), "in-place operation on a tensor that requires grad")
  end)
end)

describe("advanced indexing: bad input", function()
  local m = ember.arange(12):view(3, 4)
  it("names the dim, the index and the size when out of range", function()
    has(err(function() local r = m[{{}, L{5}}]; return r end), "index 5 is out of range for dimension 2 of size 4")
    has(err(function() local r = m[{L{-4}}]; return r end), "index -4 is out of range for dimension 1 of size 3")
    has(err(function() local r = m[{L{0}}]; return r end), "index 0 is out of range for dimension 1 of size 3")
    has(err(function() m[{L{1}, L{9}}] = 1 end), "index 9 is out of range for dimension 2 of size 4")
    has(err(function() local r = m[L{4}]; return r end), "index 4 is out of range")
  end)
  it("refuses shapes that do not broadcast, wrong masks and float indices", function()
    has(err(function() local r = m[{L{1, 2}, L{1, 2, 3}}]; return r end),
        "could not be broadcast together with shapes [2], [3]")
    has(err(function() local r = m[{ember.tensor{true, false}}]; return r end),
        "the shape of the mask [2] (index entry 1) does not match the shape of the indexed tensor [3,4]")
    has(err(function() local r = m[{{}, ember.tensor{1.0}}]; return r end), "must be int64, int32 or bool, got float32")
    has(err(function() local r = m[ember.tensor{1.5}]; return r end), "must be int64, int32 or bool, got float32")
    has(err(function() local r = m[{L{1}, L{1}, L{1}}]; return r end), "3 indices for a tensor of 2 dimensions")
    has(err(function() m[{L{1, 2}}] = ember.zeros(3, 4) end), "cannot be broadcast to the indexing result of shape [2,4]")
    has(err(function() m[{L{1}}] = "x" end), "expected a number or a tensor as the value")
    has(err(ember.index_put, m, {1}, 1), "index 1 must be a tensor")
    has(err(ember.index_put, m, L{1}, 1), "a table of index tensors")
    -- the error points at the caller's line
    local e = err(function() local r = m[{L{7}}]; return r end)
    assert(e:find("advindex_spec.lua:%d+:"), e)
  end)
end)
