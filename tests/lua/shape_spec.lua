-- shape_spec.lua — the shape and index ops (flip, roll, repeat,
-- diag, index_fill, scatter_reduce, meshgrid, ...). Expected values are worked
-- out by hand (or by naive Lua loops); gradients are checked against finite
-- differences in float64.
local ember = require "ember"
local H = require "helpers"
local gradcheck = ember.autograd.gradcheck

local function m23() return ember.arange(1, 7):view(2, 3) end   -- {{1,2,3},{4,5,6}}
-- a non-contiguous copy of m23's values: the transpose of a [3, 2] tensor
local function m23_nc() return ember.tensor({{1, 4}, {2, 5}, {3, 6}}):t() end

local function rnd(...) return ember.randn({...}, {dtype = "float64"}) end

describe("flip / roll / rot90", function()
  it("flip reverses the given dims, for every dtype and a non-contiguous input", function()
    H.check(m23():flip(1), {{4, 5, 6}, {1, 2, 3}})
    H.check(m23_nc():flip({1, 2}), {{6, 5, 4}, {3, 2, 1}})
    H.check(ember.flip(m23(), -1), {{3, 2, 1}, {6, 5, 4}})
    for _, dt in ipairs({"float32", "float64", "int32", "uint8", "bool"}) do
      local t = ember.tensor({1, 0, 1, 1}, {dtype = dt})
      assert.are.equal(dt, t:flip(1).dtype)
      H.check(t:flip(1):to("int64"), {1, 1, 0, 1})
    end
    local a = m23()
    local f = a:flip({})       -- no dims: a copy
    f[1][1] = 100
    assert.are.equal(1, a[1][1]:item())
    H.check(m23():fliplr(), {{3, 2, 1}, {6, 5, 4}})
    H.check(m23():flipud(), {{4, 5, 6}, {1, 2, 3}})
  end)

  it("roll shifts along dims, or over the flattened tensor", function()
    H.check(m23():roll(1), {{6, 1, 2}, {3, 4, 5}})
    H.check(m23():roll(1, 2), {{3, 1, 2}, {6, 4, 5}})
    H.check(m23():roll(-1, 2), {{2, 3, 1}, {5, 6, 4}})
    H.check(m23_nc():roll({1, 1}, {1, 2}), {{6, 4, 5}, {3, 1, 2}})
    H.check(ember.roll(m23(), 7, 2), {{3, 1, 2}, {6, 4, 5}})
    H.check(m23():roll({shifts = 3, dims = 2}), {{1, 2, 3}, {4, 5, 6}})
  end)

  it("rot90 rotates from the first towards the second dim", function()
    H.check(m23():rot90(), {{3, 6}, {2, 5}, {1, 4}})
    H.check(m23():rot90(2), {{6, 5, 4}, {3, 2, 1}})
    H.check(m23():rot90(-1), {{4, 1}, {5, 2}, {6, 3}})
    H.check(m23():rot90(1, {2, 1}), {{4, 1}, {5, 2}, {6, 3}})
    H.check(m23():rot90(4), {{1, 2, 3}, {4, 5, 6}})
  end)

  it("have gradients", function()
    assert.is_true(gradcheck(function(x) return x:flip(1, 3) end, {rnd(2, 3, 2)}))
    assert.is_true(gradcheck(function(x) return x:roll({1, -2}, {1, 2}) end, {rnd(3, 4)}))
    assert.is_true(gradcheck(function(x) return x:roll(5) end, {rnd(3, 4)}))
    assert.is_true(gradcheck(function(x) return x:rot90(3) end, {rnd(3, 4)}))
  end)

  it("refuse bad dims", function()
    H.has(H.err(function() local y = m23():flip(1, 1); return y end), "more than once")
    H.has(H.err(function() local y = m23():flip(3); return y end), "out of range")
    H.has(H.err(function() local y = m23():roll({1, 2}, 1); return y end), "same length")
    H.has(H.err(function() local y = m23():rot90(1, {1, 1}); return y end), "must differ")
    H.has(H.err(function() local y = ember.tensor({1, 2}):fliplr(); return y end), "at least 2")
  end)
end)

describe("repeat / tile / repeat_interleave", function()
  it("repeat tiles whole blocks, adding leading dims", function()
    H.check(ember.tensor({1, 2})["repeat"](ember.tensor({1, 2}), 2, 2), {{1, 2, 1, 2}, {1, 2, 1, 2}})
    H.check(m23_nc()["repeat"](m23_nc(), {1, 2}), {{1, 2, 3, 1, 2, 3}, {4, 5, 6, 4, 5, 6}})
    H.check_shape(m23()["repeat"](m23(), 2, 1, 1), {2, 2, 3})
    H.check_shape(m23()["repeat"](m23(), 0, 1), {0, 3})
    H.check(ember.tensor({true, false})["repeat"](ember.tensor({true, false}), 2), {true, false, true, false})
  end)

  it("tile pads the repeats with leading ones", function()
    H.check(m23():tile(2), {{1, 2, 3, 1, 2, 3}, {4, 5, 6, 4, 5, 6}})
    H.check(ember.tile(ember.tensor({1, 2}), {2, 1}), {{1, 2}, {1, 2}})
  end)

  it("repeat_interleave repeats each slice in place", function()
    H.check(ember.tensor({1, 2, 3}):repeat_interleave(2), {1, 1, 2, 2, 3, 3})
    H.check(m23():repeat_interleave(2), {1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6})
    H.check(m23_nc():repeat_interleave(2, 1), {{1, 2, 3}, {1, 2, 3}, {4, 5, 6}, {4, 5, 6}})
    H.check(m23():repeat_interleave(ember.tensor({1, 0, 2}), 2), {{1, 3, 3}, {4, 6, 6}})
    H.check(m23():repeat_interleave(ember.tensor({2, 1}), {dim = 1, output_size = 3}),
            {{1, 2, 3}, {1, 2, 3}, {4, 5, 6}})
    H.check(ember.repeat_interleave(ember.tensor({2, 0, 1})), {1, 1, 3})
  end)

  it("have gradients", function()
    assert.is_true(gradcheck(function(x) return x["repeat"](x, 2, 1, 3) end, {rnd(2, 2)}))
    assert.is_true(gradcheck(function(x) return x:tile(2) end, {rnd(3)}))
    assert.is_true(gradcheck(function(x) return x:repeat_interleave(3, 2) end, {rnd(2, 2)}))
    assert.is_true(gradcheck(function(x) return x:repeat_interleave(ember.tensor({2, 0, 1}), 1) end, {rnd(3, 2)}))
  end)

  it("refuse bad repeats", function()
    H.has(H.err(function() local y = m23()["repeat"](m23(), 2); return y end), "cannot be smaller")
    H.has(H.err(function() local y = m23()["repeat"](m23(), -1, 1); return y end), "non-negative")
    H.has(H.err(function() local y = m23():repeat_interleave(ember.tensor({1, 2}), 2); return y end),
          "one entry per slice")
    H.has(H.err(function() local y = m23():repeat_interleave(2, {dim = 1, output_size = 5}); return y end),
          "output_size")
    H.has(H.err(function() local y = ember.repeat_interleave(ember.tensor({1, -1})); return y end), "non-negative")
  end)
end)

describe("movedim / unbind / unflatten / swapaxes", function()
  it("movedim moves dims and keeps the others in order, as a view", function()
    local x = ember.zeros(2, 3, 4)
    H.check_shape(x:movedim(1, 3), {3, 4, 2})
    H.check_shape(ember.moveaxis(x, {1, 2}, {3, 1}), {3, 4, 2})
    H.check_shape(x:movedim(-1, 1), {4, 2, 3})
    local v = x:movedim(1, 3)
    v[1][1][2] = 5
    assert.are.equal(5, x[2][1][1]:item())
    H.check(m23():movedim(1, 2), {{1, 4}, {2, 5}, {3, 6}})
    H.has(H.err(function() local y = x:movedim({1, 1}, {2, 3}); return y end), "more than once")
    H.has(H.err(function() local y = x:movedim({1, 2}, {3}); return y end), "same number")
  end)

  it("unbind returns the slices as several views", function()
    local a, b = m23():unbind()
    H.check(a, {1, 2, 3}); H.check(b, {4, 5, 6})
    local c1, c2, c3 = ember.unbind(m23_nc(), 2)
    H.check(c1, {1, 4}); H.check(c3, {3, 6}); H.check(c2, {2, 5})
    H.has(H.err(function() local y = ember.tensor(1):unbind(); return y end), "0-d")
  end)

  it("unflatten splits a dim", function()
    H.check_shape(ember.zeros(2, 12):unflatten(2, {3, -1}), {2, 3, 4})
    H.check(ember.arange(1, 7):unflatten(1, {2, 3}), {{1, 2, 3}, {4, 5, 6}})
    H.has(H.err(function() local y = ember.zeros(2, 12):unflatten(2, {5, 2}); return y end), "do not multiply")
    H.has(H.err(function() local y = ember.zeros(2, 12):unflatten(2, {-1, -1}); return y end), "only one")
  end)

  it("swapaxes / swapdims transpose", function()
    H.check(m23():swapaxes(1, 2), {{1, 4}, {2, 5}, {3, 6}})
    H.check_shape(ember.swapdims(ember.zeros(2, 3, 4), 1, 3), {4, 3, 2})
  end)

  it("have gradients", function()
    assert.is_true(gradcheck(function(x) return x:movedim({1, 3}, {3, 1}) end, {rnd(2, 3, 4)}))
    assert.is_true(gradcheck(function(x) local a, b = x:unbind(2); return a * 2 + b end, {rnd(3, 2)}))
    assert.is_true(gradcheck(function(x) return x:unflatten(1, {2, 3}) end, {rnd(6, 2)}))
  end)
end)

describe("diagonal family", function()
  local sq = function() return ember.arange(1, 10):view(3, 3) end   -- {{1,2,3},{4,5,6},{7,8,9}}

  it("diagonal takes any offset of any two dims, as a view", function()
    H.check(sq():diagonal(), {1, 5, 9})
    H.check(sq():diagonal(1), {2, 6})
    H.check(sq():diagonal(-2), {7})
    H.check(sq():diagonal(5), {})
    H.check(m23_nc():diagonal({offset = 1}), {2, 6})
    local x = ember.arange(1, 13):view(2, 2, 3)
    -- x[i][j][k] = 6(i-1) + 3(j-1) + k; diagonal over dims 1 and 3: out[j][d] = x[d][j][d]
    H.check(x:diagonal(0, 1, 3), {{1, 8}, {4, 11}})
    H.check(ember.diagonal(x, {dim1 = 3, dim2 = 2}), {{1, 5}, {7, 11}})
    local v = sq():clone()
    v:diagonal():fill_(0)
    H.check(v, {{0, 2, 3}, {4, 0, 6}, {7, 8, 0}})
    H.has(H.err(function() local y = x:diagonal(0, 2, 2); return y end), "cannot be the same")
    H.has(H.err(function() local y = ember.tensor({1}):diagonal(); return y end), "at least 2")
  end)

  it("diag builds or reads a diagonal", function()
    H.check(ember.diag(ember.tensor({1, 2})), {{1, 0}, {0, 2}})
    H.check(ember.diag(ember.tensor({1, 2}), -1), {{0, 0, 0}, {1, 0, 0}, {0, 2, 0}})
    H.check(sq():diag(1), {2, 6})
    H.has(H.err(function() local y = ember.zeros(2, 2, 2):diag(); return y end), "1-D or 2-D")
  end)

  it("diag_embed, diagflat, trace", function()
    H.check(ember.diag_embed(ember.tensor({{1, 2}, {3, 4}})), {{{1, 0}, {0, 2}}, {{3, 0}, {0, 4}}})
    H.check(ember.diag_embed(ember.tensor({1, 2}), 1), {{0, 1, 0}, {0, 0, 2}, {0, 0, 0}})
    -- dims 1 and 3: out[i][b][j] = input[b][i] when i == j
    H.check(ember.diag_embed(ember.tensor({{1, 2}}), 0, 1, 3), {{{1, 0}}, {{0, 2}}})
    H.check(ember.diagflat(ember.tensor({{1, 2}})), {{1, 0}, {0, 2}})
    assert.are.equal(15, sq():trace():item())
    assert.are.equal("int64", sq():trace().dtype)
    assert.are.equal(6, ember.trace(m23_nc()):item())
    H.has(H.err(function() local y = ember.zeros(3):trace(); return y end), "2-D")
  end)

  it("have gradients (and second order through diagonal)", function()
    assert.is_true(gradcheck(function(x) return x:diagonal(1, 1, 3) end, {rnd(3, 2, 4)}))
    assert.is_true(gradcheck(function(x) return x:diagonal(-1) end, {rnd(3, 4)}))
    assert.is_true(gradcheck(function(x) return ember.diag(x, 1) end, {rnd(3)}))
    assert.is_true(gradcheck(function(x) return ember.diag(x, -1) end, {rnd(3, 3)}))
    assert.is_true(gradcheck(function(x) return ember.diag_embed(x, -1, 1, 3) end, {rnd(2, 3)}))
    assert.is_true(gradcheck(function(x) return ember.trace(x) end, {rnd(3, 3)}))
    assert.is_true(ember.autograd.gradgradcheck(function(x) return (x:diagonal() ^ 2):sum() end, {rnd(3, 3)}))
  end)
end)

describe("take / take_along_dim", function()
  it("take reads the flattened input at 1-based (or negative) positions", function()
    H.check(m23_nc():take(ember.tensor({{1, 6}, {-2, 3}})), {{1, 6}, {5, 3}})
    H.check(ember.take(m23(), {2}), {2})
    H.has(H.err(function() local y = m23():take({7}); return y end), "take")
  end)

  it("take_along_dim gathers with broadcasting", function()
    local x = ember.tensor({{10, 30, 20}, {60, 40, 50}})
    local i = x:argmax(2, true)
    H.check(x:take_along_dim(i, 2), {{30}, {60}})
    H.check(ember.take_along_dim(x, ember.tensor({{1}, {3}})), {10, 20})
    H.check(x:take_along_dim(ember.tensor({{2, 1}}), 2), {{30, 10}, {40, 60}})
    H.has(H.err(function() local y = x:take_along_dim(ember.tensor({1}), 2); return y end), "same number")
  end)

  it("have gradients", function()
    assert.is_true(gradcheck(function(x) return x:take(ember.tensor({1, 1, 5})) end, {rnd(2, 3)}))
    assert.is_true(gradcheck(function(x) return x:take_along_dim(ember.tensor({{2}, {1}}), 2) end, {rnd(2, 3)}))
  end)
end)

describe("index_fill / index_copy / masked_scatter", function()
  it("index_fill sets slices", function()
    H.check(m23():index_fill(2, ember.tensor({1, 3}), -1), {{-1, 2, -1}, {-1, 5, -1}})
    H.check(m23_nc():index_fill(1, {2}, ember.tensor(0)), {{1, 2, 3}, {0, 0, 0}})
    local a = m23()
    assert.are.equal(a, a:index_fill_(2, {-1}, 0))
    H.check(a, {{1, 2, 0}, {4, 5, 0}})
    H.has(H.err(function() local y = m23():index_fill(2, {4}, 0); return y end), "index_fill")
  end)

  it("index_copy writes source slices", function()
    local src = ember.tensor({{7, 8, 9}})
    H.check(m23():index_copy(1, ember.tensor({2}), src), {{1, 2, 3}, {7, 8, 9}})
    H.check(m23_nc():index_copy(2, ember.tensor({3, 1}), ember.tensor({{0, -1}, {-2, -3}})), {{-1, 2, 0}, {-3, 5, -2}})
    local a = m23()
    a:index_copy_(1, {1}, src)
    H.check(a, {{7, 8, 9}, {4, 5, 6}})
    H.has(H.err(function() local y = m23():index_copy(1, {1}, ember.tensor({{1, 2}})); return y end), "shape")
    H.has(H.err(function() local y = m23():index_copy(1, {1}, ember.tensor({{1., 2., 3.}})); return y end), "dtype")
  end)

  it("masked_scatter fills the true positions in order", function()
    local mask = ember.tensor({{true, false, true}, {false, true, false}})
    H.check(m23():masked_scatter(mask, ember.tensor({10, 20, 30, 40})), {{10, 2, 20}, {4, 30, 6}})
    H.check(m23_nc():masked_scatter(ember.tensor({false, true, false}), ember.tensor({{7, 8}})), {{1, 7, 3}, {4, 8, 6}})
    local a = m23()
    a:masked_scatter_(mask, ember.tensor({0, 0, 0}))
    H.check(a, {{0, 2, 0}, {4, 0, 6}})
    H.has(H.err(function() local y = m23():masked_scatter(mask, ember.tensor({1})); return y end), "fewer")
    H.has(H.err(function() local y = m23():masked_scatter(ember.tensor({true, false}), ember.tensor({1})); return y end),
          "broadcast")
  end)

  it("have gradients", function()
    assert.is_true(gradcheck(function(x) return x:index_fill(1, ember.tensor({2}), 3) end, {rnd(3, 2)}))
    assert.is_true(gradcheck(function(x, s) return x:index_copy(2, ember.tensor({3, 1}), s) end, {rnd(2, 3), rnd(2, 2)}))
    local mask = ember.tensor({{true, false}, {true, true}})
    assert.is_true(gradcheck(function(x, s) return x:masked_scatter(mask, s) end, {rnd(2, 2), rnd(5)}))
  end)
end)

-- naive scatter_reduce along dim 1 of 1-D tensors
local function naive_scatter_reduce(self, idx, src, reduce, include_self)
  local out, vals = {}, {}
  for i, v in ipairs(self) do vals[i] = include_self and {v} or {} end
  for j, k in ipairs(idx) do table.insert(vals[k], src[j]) end
  for i, v in ipairs(self) do
    local l = vals[i]
    if #l == 0 then out[i] = v
    elseif reduce == "sum" or reduce == "mean" then
      local s = 0
      for _, x in ipairs(l) do s = s + x end
      out[i] = reduce == "sum" and s or s / #l
    elseif reduce == "prod" then
      local p = 1
      for _, x in ipairs(l) do p = p * x end
      out[i] = p
    else
      local m = l[1]
      for _, x in ipairs(l) do if (reduce == "amax" and x > m) or (reduce == "amin" and x < m) then m = x end end
      out[i] = m
    end
  end
  return out
end

describe("scatter_reduce / scatter with reduce", function()
  local self_v, idx_v, src_v = {1, 2, 3, 4}, {1, 3, 1, 1, 3}, {5, -1, 0.5, 2, 7}

  it("matches a naive loop for every reduction, with and without self", function()
    for _, r in ipairs({"sum", "prod", "mean", "amax", "amin"}) do
      for _, inc in ipairs({true, false}) do
        local got = ember.tensor(self_v, {dtype = "float64"}):scatter_reduce(1, ember.tensor(idx_v),
          ember.tensor(src_v, {dtype = "float64"}), r, {include_self = inc})
        H.check(got, naive_scatter_reduce(self_v, idx_v, src_v, r, inc), 1e-12)
      end
    end
  end)

  it("works for integer and bool tensors (mean floors)", function()
    local s = ember.tensor({1, 2, 3}):scatter_reduce(1, ember.tensor({1, 1, 2}), ember.tensor({4, 5, 6}), "mean")
    H.check(s, {3, 4, 3})   -- (1+4+5)/3 = 3.33 -> 3, (2+6)/2 = 4
    H.check(ember.tensor({1, 2, 3}, {dtype = "int32"}):scatter_reduce(1, ember.tensor({3, 3}),
      ember.tensor({4, 5}, {dtype = "int32"}), "prod"), {1, 2, 60})
    H.check(ember.tensor({false, true}):scatter_reduce(1, ember.tensor({1, 2}), ember.tensor({true, false}), "amax"),
            {true, true})
    H.check(ember.tensor({1, 2, 3}):scatter_reduce(1, ember.tensor({2, 2}), ember.tensor({9, 0}), "amin",
      false), {1, 0, 3})
  end)

  it("reduces along a dim of a 2-D, non-contiguous tensor, in place too", function()
    local x = m23_nc():to("float64")
    local idx = ember.tensor({{1, 1}, {3, 2}})
    local src = ember.tensor({{10, 20}, {30, 40}}, {dtype = "float64"})
    H.check(x:scatter_reduce(2, idx, src, "amax"), {{20, 2, 3}, {4, 40, 30}})
    x:scatter_reduce_(2, idx, src, "sum", false)
    H.check(x, {{30, 2, 3}, {4, 40, 30}})
  end)

  it("scatter takes reduce = 'add' or 'multiply'", function()
    local idx = ember.tensor({1, 1, 2})
    H.check(ember.ones(3):scatter(1, idx, ember.tensor({2., 3., 4.}), "multiply"), {6, 4, 1})
    H.check(ember.ones(3):scatter(1, idx, ember.tensor({2., 3., 4.}), {reduce = "add"}), {6, 5, 1})
    local a = ember.ones(3)
    a:scatter_(1, idx, 2, "multiply")
    H.check(a, {4, 2, 1})
    H.has(H.err(function() local y = ember.ones(3):scatter(1, idx, ember.ones(3), "max"); return y end), "add")
  end)

  it("has gradients for every reduction", function()
    local idx = ember.tensor({1, 3, 1, 1, 3})
    for _, r in ipairs({"sum", "prod", "mean", "amax", "amin"}) do
      for _, inc in ipairs({true, false}) do
        local ok = gradcheck(function(x, s) return x:scatter_reduce(1, idx, s, r, inc) end,
          {H.spread(4), H.spread(6)})
        assert(ok, r .. " include_self=" .. tostring(inc))
      end
    end
    -- prod with a zero among the values reduced together
    assert.is_true(gradcheck(function(x, s) return x:scatter_reduce(1, idx, s, "prod") end,
      {ember.tensor({0, 2, 3, 4}, {dtype = "float64"}), ember.tensor({1.5, 2, -1, 0.5, 3}, {dtype = "float64"})}))
    assert.is_true(gradcheck(function(x, s) return x:scatter_reduce(1, idx, s, "prod") end,
      {ember.tensor({0, 2, 3, 4}, {dtype = "float64"}), ember.tensor({0, 2, -1, 0.5, 3}, {dtype = "float64"})}))
  end)

  it("refuses bad input", function()
    local x = ember.zeros(3)
    H.has(H.err(function() local y = x:scatter_reduce(1, ember.tensor({1}), ember.ones(1), "max"); return y end),
          "reduce must be")
    H.has(H.err(function() local y = x:scatter_reduce(1, ember.tensor({4}), ember.ones(1), "sum"); return y end),
          "scatter_reduce")
    H.has(H.err(function() local y = x:scatter_reduce(1, ember.tensor({4}), ember.ones(1), "amax"); return y end),
          "out of bounds")
    H.has(H.err(function() local y = x:scatter_reduce(1, ember.tensor({1}), ember.ones(1, {dtype = "float64"}), "sum"); return y end),
          "dtype")
    H.has(H.err(function() local y = x:scatter_reduce(1, ember.tensor({1}), ember.ones(1)); return y end), "required")
  end)
end)

describe("one_hot", function()
  it("sets position c for class c (1-based), int64", function()
    local o = ember.one_hot(ember.tensor({{1, 3}, {2, 2}}), 4)
    assert.are.equal("int64", o.dtype)
    H.check(o, {{{1, 0, 0, 0}, {0, 0, 1, 0}}, {{0, 1, 0, 0}, {0, 1, 0, 0}}})
    H.check(ember.one_hot(ember.tensor({2, 1})), {{0, 1}, {1, 0}})
    H.has(H.err(function() local y = ember.one_hot(ember.tensor({0, 1})); return y end), "at least 1")
    H.has(H.err(function() local y = ember.one_hot(ember.tensor({3}), 2); return y end), "at most num_classes")
    H.has(H.err(function() local y = ember.one_hot(ember.tensor({1.0}), 2); return y end), "int64")
  end)
end)

describe("meshgrid / cartesian_prod / block_diag / broadcasting / atleast", function()
  it("meshgrid with ij and xy indexing", function()
    local x, y = ember.tensor({1, 2}), ember.tensor({3, 4, 5})
    local gx, gy = ember.meshgrid(x, y)
    H.check(gx, {{1, 1, 1}, {2, 2, 2}}); H.check(gy, {{3, 4, 5}, {3, 4, 5}})
    gx, gy = ember.meshgrid({x, y}, {indexing = "xy"})
    H.check(gx, {{1, 2}, {1, 2}, {1, 2}}); H.check(gy, {{3, 3}, {4, 4}, {5, 5}})
    H.has(H.err(function() local a = ember.meshgrid(x, y, {indexing = "ab"}); return a end), "indexing")
    H.has(H.err(function() local a = ember.meshgrid(m23()); return a end), "0-d or 1-D")
  end)

  it("cartesian_prod lists every combination", function()
    H.check(ember.cartesian_prod(ember.tensor({1, 2}), ember.tensor({3, 4})), {{1, 3}, {1, 4}, {2, 3}, {2, 4}})
    H.check(ember.cartesian_prod(ember.tensor({1, 2})), {1, 2})
  end)

  it("block_diag places blocks on the diagonal, promoting dtypes", function()
    local b = ember.block_diag(ember.tensor({{1, 2}}), ember.tensor(3.5), ember.tensor({4, 5}))
    assert.are.equal("float32", b.dtype)
    H.check(b, {{1, 2, 0, 0, 0}, {0, 0, 3.5, 0, 0}, {0, 0, 0, 4, 5}})
    assert.is_true(gradcheck(function(a, c) return ember.block_diag(a, c) end, {rnd(2, 2), rnd(1, 3)}))
    H.has(H.err(function() local y = ember.block_diag(ember.zeros(1, 1, 1)); return y end), "at most 2")
  end)

  it("broadcast_tensors and broadcast_to give views", function()
    local a, b = ember.broadcast_tensors(ember.tensor({{1}, {2}}), ember.tensor({3, 4, 5}))
    H.check(a, {{1, 1, 1}, {2, 2, 2}}); H.check(b, {{3, 4, 5}, {3, 4, 5}})
    H.check(ember.tensor({1, 2}):broadcast_to(2, 2), {{1, 2}, {1, 2}})
    H.check(ember.broadcast_to(ember.tensor({1, 2}), {2, -1}), {{1, 2}, {1, 2}})
    H.has(H.err(function() local y = ember.broadcast_tensors(ember.zeros(2), ember.zeros(3)); return y end),
          "broadcast_tensors")
    H.has(H.err(function() local y = ember.zeros(3):broadcast_to(2); return y end), "broadcast_to")
  end)

  it("atleast_Nd adds dims as PyTorch does", function()
    H.check_shape(ember.atleast_1d(ember.tensor(1)), {1})
    H.check_shape(ember.atleast_2d(ember.tensor({1, 2})), {1, 2})
    H.check_shape(ember.atleast_3d(ember.tensor({1, 2})), {1, 2, 1})
    H.check_shape(ember.atleast_3d(m23()), {2, 3, 1})
    local a, b = ember.atleast_2d(ember.tensor(1), m23())
    H.check_shape(a, {1, 1}); H.check_shape(b, {2, 3})
  end)
end)

describe("new_* / logspace / tril_indices / tril and triu", function()
  it("new_* take self's dtype and device unless told", function()
    local x = ember.zeros(2, {dtype = "float64"})
    local z = x:new_zeros(2, 3)
    assert.are.equal("float64", z.dtype); H.check_shape(z, {2, 3})
    H.check(x:new_ones({2}, {dtype = "int32"}), {1, 1})
    assert.are.equal("int32", x:new_ones({2}, {dtype = "int32"}).dtype)
    H.check(x:new_full({2}, 7), {7, 7})
    H.check_shape(x:new_empty(4), {4})
    local t = x:new_tensor({1, 2})
    assert.are.equal("float64", t.dtype); H.check(t, {1, 2})
    assert.is_true(x:new_zeros(1, {requires_grad = true}).requires_grad)
  end)

  it("logspace", function()
    H.check(ember.logspace(0, 2, 3), {1, 10, 100}, 1e-6)
    H.check(ember.logspace(0, 3, 4, 2, {dtype = "float64"}), {1, 2, 4, 8}, 1e-12)
    H.check(ember.logspace(1, 0, 2, {base = 3}), {3, 1}, 1e-6)
  end)

  it("tril_indices / triu_indices give 1-based coordinates", function()
    H.check(ember.tril_indices(3, 3), {{1, 2, 2, 3, 3, 3}, {1, 1, 2, 1, 2, 3}})
    H.check(ember.tril_indices(3, 2, 1), {{1, 1, 2, 2, 3, 3}, {1, 2, 1, 2, 1, 2}})
    H.check(ember.triu_indices(2, 3), {{1, 1, 1, 2, 2}, {1, 2, 3, 2, 3}})
    H.check(ember.triu_indices(3, 3, -1), {{1, 1, 1, 2, 2, 2, 3, 3}, {1, 2, 3, 1, 2, 3, 2, 3}})
    -- the indices pick the same elements tril keeps
    local m = ember.arange(1, 13):view(3, 4)
    local i = ember.tril_indices(3, 4, -1)
    local kept = ember.tril(m, -1):sum():item()
    local picked = 0
    for k = 1, i.shape[2] do picked = picked + m[i[1][k]:item()][i[2][k]:item()]:item() end
    assert.are.equal(kept, picked)
    H.has(H.err(function() local y = ember.tril_indices(-1, 2); return y end), "non-negative")
  end)

  it("tril / triu take diagonal, in place too", function()
    H.check(m23():triu(1), {{0, 2, 3}, {0, 0, 6}})
    H.check(m23():tril({diagonal = -1}), {{0, 0, 0}, {4, 0, 0}})
    local a = m23_nc():contiguous()
    a:tril_(1)
    H.check(a, {{1, 2, 0}, {4, 5, 6}})
  end)
end)
