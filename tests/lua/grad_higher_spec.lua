-- grad_higher_spec.lua — gradients of gradients (create_graph) through the
-- ops whose backward puts the gradient back where it was read (narrow,
-- select, slice, diagonal, unfold, index_select, gather, max/min along a
-- dim, sort, topk), and the gradients of cumprod, scatter and scatter_add.
-- Expected values are worked out by hand (in the comments) or are central
-- finite differences: of the function for first derivatives, of the first
-- gradient for second ones.
local ember = require "ember"
local h = require "helpers"
local err, has, check = h.err, h.has, h.check

local A = ember.autograd
local gradcheck = A.gradcheck

local function D(t) return ember.tensor(t, {dtype = "float64"}) end
local function leaf(t) return ember.tensor(t, {dtype = "float64", requires_grad = true}) end
local function R(...)
  local args = {...}
  args[#args + 1] = {dtype = "float64"}
  return ember.randn(table.unpack(args))
end
local function I(t) return ember.tensor(t, {dtype = "int64"}) end

local gradgradcheck = A.gradgradcheck

local function first(name, fn, inputs, opts)
  it("gradcheck: " .. name, function()
    ember.manual_seed(4321)
    local ok, report = gradcheck(fn, inputs(), opts)
    assert(ok, report)
  end)
end

local function second(name, fn, inputs, opts)
  it("gradgradcheck: " .. name, function()
    ember.manual_seed(8765)
    local ok, report = gradgradcheck(fn, inputs(), opts)
    assert(ok, report)
  end)
end

-- distinct values, far enough apart that a finite-difference step never
-- changes which element is the largest or where it sorts
local spread = h.spread

describe("double backward through views", function()
  first("narrow select slice-with-step", function(x)
    return {x:narrow(2, 2, 2):sin(), x:select(1, 3), x:slice(2, 1, 4, 2):exp()}
  end, function() return {R(3, 4)} end)
  second("narrow", function(x) return (x:narrow(2, 2, 2) ^ 3):sum() end, function() return {R(3, 4)} end)
  second("select", function(x)
    return x:select(1, 2):sin():sum() * x:select(2, 3):sum() + (x:select(1, 1) ^ 3):sum()
  end,
    function() return {R(3, 4)} end)
  second("slice with a step", function(x) return (x:slice(2, 1, 5, 2) ^ 3):sum() + x:slice(1, 2, 3):cos():sum() end,
    function() return {R(3, 5)} end)
  second("diagonal", function(x) return (x:diagonal() ^ 3):sum() + (x:t():diagonal():sin() * x:diagonal()):sum() end,
    function() return {R(3, 4)} end)
  second("unfold with overlapping windows", function(x) return (x:unfold(1, 3, 1) ^ 3):sum() end,
    function() return {R(6)} end)
  second("unfold with gaps between windows, on a middle dim", function(x)
    return (x:unfold(2, 2, 3):sin() * 2):sum()
  end, function() return {R(2, 7, 3)} end)
  second("views of non-contiguous input", function(x)
    return (x:t():narrow(1, 2, 2) ^ 3):sum() + x:t():slice(2, 1, 3, 2):sin():sum()
  end, function() return {R(3, 4)} end)

  it("third derivative of narrow: d^3/dx^3 sum(narrow(x)^4) = 24 x where selected", function()
    local x = leaf({1, 2, 3, 4})
    local g = A.grad((x:narrow(1, 2, 2) ^ 4):sum(), x, {create_graph = true})     -- 4x^3
    check(g, {0, 32, 108, 0})
    local g2 = A.grad(g:sum(), x, {create_graph = true})                            -- 12x^2
    check(g2, {0, 48, 108, 0})
    local g3 = A.grad(g2:sum(), x)                                                  -- 24x
    check(g3, {0, 48, 72, 0})
  end)

  it("the placement into zeros is itself differentiable: its gradient is the view", function()
    -- u = d/dx sum(narrow(x) * v) puts v into zeros; d/dv sum(u * w) = w's narrowed part
    local x = R(2, 4):requires_grad_()
    local v = leaf({{1, 2}, {3, 4}})
    local u = A.grad((x:narrow(2, 2, 2) * v):sum(), x, {create_graph = true})
    check(u, {{0, 1, 2, 0}, {0, 3, 4, 0}})
    assert.are.equal("NarrowBackwardBackward", u.grad_fn)
    local w = D({{10, 20, 30, 40}, {50, 60, 70, 80}})
    check(A.grad((u * w):sum(), v), {{20, 30}, {60, 70}})

    local y = R(3, 3):requires_grad_()
    local dv = leaf({5, 6, 7})
    local ud = A.grad((y:diagonal() * dv):sum(), y, {create_graph = true})
    check(ud, {{5, 0, 0}, {0, 6, 0}, {0, 0, 7}})
    local wd = D({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
    check(A.grad((ud * wd):sum(), dv), {1, 5, 9})

    local s = R(5):requires_grad_()
    local sv = leaf({1, 2, 3})
    local us = A.grad((s:slice(1, 1, 5, 2) * sv):sum(), s, {create_graph = true})
    check(us, {1, 0, 2, 0, 3})
    check(A.grad((us * D({1, 2, 3, 4, 5})):sum(), sv), {1, 3, 5})
  end)

  it("unfold: overlapping windows add up, and back again", function()
    local x = leaf({1, 2, 3, 4, 5, 6})
    -- windows of 3 every 2: [1 2 3] [3 4 5]; element 3 is in both
    local y = x:unfold(1, 3, 2)
    local g = A.grad((y * y):sum(), x, {create_graph = true})     -- 2x times the number of windows
    check(g, {2, 4, 12, 8, 10, 0})
    check(A.grad(g:sum(), x), {2, 2, 4, 2, 2, 0})
    local v = leaf({{1, 2, 3}, {4, 5, 6}})
    local u = A.grad((x:unfold(1, 3, 2) * v):sum(), x, {create_graph = true})
    check(u, {1, 2, 7, 5, 6, 0})
    check(A.grad((u * D({1, 10, 100, 1000, 10000, 100000})):sum(), v), {{1, 10, 100}, {100, 1000, 10000}})
  end)
end)

describe("double backward through index_select and gather", function()
  first("index_select and gather with repeated indices, non-contiguous input", function(x)
    return x:index_select(2, I({3, 1, 3})):sin() + x:gather(1, I({{1, 2, 3}, {1, 1, 1}})):sum(1, true)
  end, function() return {R(4, 3):t()} end)
  second("index_select with repeated indices", function(x)
    return (x:index_select(1, I({3, 1, 3, 2})) ^ 3):sum()
  end, function() return {R(3, 2)} end)
  second("gather with repeated indices and a smaller index", function(x)
    local a, b = x:gather(2, I({{1, 1}, {3, 2}, {4, 4}})), x:gather(1, I({{3, 1, 2, 3}}))
    return (a:sin() * a):sum() + (b ^ 3):sum() + a:sum() * b:sum()
  end, function() return {R(3, 4)} end)

  it("the gradient placement is differentiable: index_add's gradient is index_select", function()
    local x = R(3, 2):requires_grad_()
    local v = leaf({{1, 2}, {3, 4}, {5, 6}})
    -- rows 3, 1, 3 of x are read: row 3 gets rows 1 and 3 of v, row 1 gets row 2
    local u = A.grad((x:index_select(1, I({3, 1, 3})) * v):sum(), x, {create_graph = true})
    check(u, {{3, 4}, {0, 0}, {6, 8}})
    check(A.grad((u * D({{1, 2}, {3, 4}, {5, 6}})):sum(), v), {{5, 6}, {1, 2}, {5, 6}})

    local gv = leaf({{1, 2}, {3, 4}})
    local ug = A.grad((x:gather(2, I({{2, 2}, {1, 2}})) * gv):sum(), x, {create_graph = true})
    check(ug, {{0, 3}, {3, 4}, {0, 0}})
    check(A.grad((ug * D({{1, 2}, {3, 4}, {5, 6}})):sum(), gv), {{2, 2}, {3, 4}})
  end)
end)

describe("double backward through max, min, sort and topk values", function()
  second("max along a dim", function(x) return (x:max(2) ^ 3):sum() end, function() return {spread(3, 4)} end)
  second("min along a dim with keepdim", function(x)
    local v = x:min(1, true)
    return (v:sin() * v):sum()
  end, function() return {spread(3, 4)} end)
  second("sort values", function(x) return (x:sort(2) ^ 3 * D({1, 2, 3, 4})):sum() end,
    function() return {spread(2, 4)} end)
  second("sort descending along dim 1 of a transposed tensor", function(x)
    return (x:t():sort(1, true):cos() * D({{1}, {2}, {3}})):sum()
  end, function() return {spread(2, 3)} end)
  second("topk values", function(x) return (x:topk(2, 2) ^ 3):sum() + (x:topk(1, 1, false) ^ 2):sum() end,
    function() return {spread(3, 4)} end)

  it("by hand: d^2/dx^2 sum(max(x)^3) = 6 max at the argmax", function()
    local x = leaf({{1, 5, 2}, {7, 3, 4}})
    local g = A.grad((x:max(2) ^ 3):sum(), x, {create_graph = true})    -- 3 m^2 at the argmax
    check(g, {{0, 75, 0}, {147, 0, 0}})
    check(A.grad(g:sum(), x), {{0, 30, 0}, {42, 0, 0}})
    local s = leaf({3, 1, 2})
    local gs = A.grad((s:sort(1) * D({1, 10, 100})):sum(), s, {create_graph = true})
    check(gs, {100, 1, 10})
  end)
end)

describe("cumprod gradients", function()
  first("positive input", function(x) return x:cumprod(2) end,
    function() return {ember.rand(3, 5, {dtype = "float64"}) + 0.5} end)
  first("mixed signs along dim 1 and -1 of a 3-D tensor", function(x) return x:cumprod(1) + x:cumprod(-1) end,
    function() return {R(3, 2, 4)} end)
  first("non-contiguous input", function(x) return x:cumprod(2) end, function() return {R(5, 3):t()} end)
  first("a strided slice", function(x) return x:slice(2, 1, 6, 2):cumprod(2) end, function() return {R(2, 6)} end)
  first("a long row (several doubling steps)", function(x) return x:cumprod(1) end,
    function() return {ember.rand(37, {dtype = "float64"}) * 0.5 + 0.75} end)
  first("one zero in a row", function(x) return x:cumprod(2) end,
    function() return {D({{2, 3, 0, 4, -1}, {0.5, -2, 1.5, 0, 3}})} end)
  first("two zeros in a row, adjacent and apart", function(x) return x:cumprod(2) end,
    function() return {D({{2, 0, 0, 3, 1.5}, {0, 2, -1, 0, 3}})} end)
  first("a dim of size 1", function(x) return x:cumprod(2) end, function() return {R(3, 1)} end)

  it("by hand, with zeros: d sum(cumprod(x)) / dx_k = sum_{j>=k} prod_{i<=j, i~=k} x_i", function()
    local function grad_of(t) local x = leaf(t); return A.grad(x:cumprod(1):sum(), x) end
    check(grad_of({2, 3, 4}), {1 + 3 + 12, 2 + 8, 6})
    check(grad_of({2, 3, 0, 4}), {4, 2, 30, 0})      -- only x3 = 0: 1+3, 2, 2*3+2*3*4, 0
    check(grad_of({2, 0, 0, 3}), {1, 2, 0, 0})
    check(grad_of({2, 0, 3, 0, 5}), {1, 8, 0, 0, 0})
    check(grad_of({0, 2, 3}), {9, 0, 0})
    check(grad_of({0, 0}), {1, 0})
    local x = leaf({{1, 2}, {0, 3}, {4, 5}})            -- along dim 1, one zero in column 1
    check(A.grad(x:cumprod(1):sum(), x), {{1 + 0 + 0, 1 + 3 + 15}, {1 + 4, 2 + 10}, {0, 6}})
  end)

  second("positive input", function(x) return (x:cumprod(2) ^ 2):sum() end,
    function() return {ember.rand(2, 4, {dtype = "float64"}) + 0.5} end)
  second("one zero", function(x) return (x:cumprod(1) * D({1, -2, 3, 0.5, 2})):sum() end,
    function() return {D({1.5, -2, 0, 3, 0.5})} end)
  second("two zeros", function(x) return (x:cumprod(2):sin()):sum() end,
    function() return {D({{1.5, 0, 2, 0, 0.5}, {0, 0, 2, -1, 1}})} end)
  second("non-contiguous input, along dim 1", function(x) return (x:t():cumprod(1) ^ 2):sum() end,
    function() return {R(3, 4)} end)

  it("by hand, second derivatives at zeros (where dividing by x would go wrong)", function()
    -- f = x1 + x1 x2 + x1 x2 x3: d2f/dx1dx2 = 1 + x3, d2f/dx1dx3 = x2, d2f/dx2dx3 = x1
    local x = leaf({0, 2, 3})
    local g = A.grad(x:cumprod(1):sum(), x, {create_graph = true})
    check(g, {1 + 2 + 6, 0, 0})
    check(A.grad(g:sum(), x), {4 + 2, 4 + 0, 2 + 0})
    local y = leaf({2, 0, 0})
    local gy = A.grad(y:cumprod(1):sum(), y, {create_graph = true})
    check(gy, {1, 2, 0})
    check(A.grad(gy:sum(), y), {1 + 0, 1 + 2, 0 + 2})
    -- third order: sum of the gradient = 1 + x1 + x2 + x1 x2 + x1 x3 + x2 x3, whose
    -- gradient (1 + x2 + x3, 1 + x1 + x3, x1 + x2) sums to 2 + 2 (x1 + x2 + x3)
    local z = leaf({0, 0, 0})
    local g1 = A.grad(z:cumprod(1):sum(), z, {create_graph = true})
    local g2 = A.grad(g1:sum(), z, {create_graph = true})
    check(g2, {1, 1, 0})
    check(A.grad(g2:sum(), z), {2, 2, 2})
  end)
end)

describe("scatter and scatter_add gradients", function()
  -- along dim 1 each column names distinct rows, so no position is written twice
  local idx = I({{3, 1, 2, 3}, {1, 2, 3, 2}})
  first("scatter: self and src", function(s, src) return s:scatter(1, idx, src) end,
    function() return {R(3, 4), R(2, 4)} end)
  first("scatter: src larger than the index", function(s, src) return s:scatter(1, idx, src):sin() end,
    function() return {R(3, 4), R(3, 5)} end)
  first("scatter: a number", function(s) return s:scatter(2, I({{2}, {1}, {3}}), 7) * s end,
    function() return {R(3, 4)} end)
  first("scatter_add with repeated indices, non-contiguous self", function(s, src)
    return s:scatter_add(2, I({{1, 1, 3}, {2, 2, 2}}), src)
  end, function() return {R(3, 2):t(), R(2, 3)} end)
  first("ember.scatter_add of a 3-D tensor", function(s, src)
    return ember.scatter_add(s, 3, I({{{2, 1}}, {{1, 1}}}), src)
  end, function() return {R(2, 2, 2), R(2, 1, 2)} end)
  second("scatter", function(s, src) return (s:scatter(1, idx, src) ^ 3):sum() end,
    function() return {R(3, 4), R(2, 4)} end)
  second("scatter_add", function(s, src) return (s:scatter_add(2, I({{1, 1, 3}, {2, 2, 2}}), src):sin() * s):sum() end,
    function() return {R(2, 3), R(2, 3)} end)

  it("by hand: scatter zeroes self's gradient where it wrote and reads src's from there", function()
    local s = leaf({1, 2, 3})
    local src = leaf({10, 20})
    local out = s:scatter(1, I({3, 1}), src)
    check(out, {20, 2, 10})
    assert.are.equal("ScatterBackward", out.grad_fn)
    local gs, gsrc = A.grad((out * D({1, 2, 3})):sum(), {s, src})
    check(gs, {0, 2, 0})
    check(gsrc, {3, 1})
    -- src bigger than the index: its unread part gets zeros
    local big = leaf({{1, 2, 3}, {4, 5, 6}})
    local m = ember.zeros(2, 2, {dtype = "float64"})
    local g = A.grad((m:scatter(2, I({{2, 1}}), big) * D({{1, 2}, {3, 4}})):sum(), big)
    check(g, {{2, 1, 0}, {0, 0, 0}})
  end)

  it("by hand: scatter_add passes self's gradient through and gathers src's", function()
    local s = leaf({1, 2, 3})
    local src = leaf({10, 20, 30, 40})
    local out = s:scatter_add(1, I({3, 1, 3, 3}), src)
    check(out, {21, 2, 83})
    assert.are.equal("ScatterAddBackward", out.grad_fn)
    local gs, gsrc = A.grad((out * D({1, 2, 3})):sum(), {s, src})
    check(gs, {1, 2, 3})
    check(gsrc, {3, 1, 3, 3})
  end)

  it("src of another dtype gets its gradient in its own dtype", function()
    local s = ember.zeros(3, {dtype = "float64", requires_grad = true})
    local src = ember.tensor({1, 2}, {dtype = "float32", requires_grad = true})
    local out = s:scatter_add(1, I({2, 2}), src)
    assert.are.equal("float64", out.dtype)
    local g = A.grad((out * D({1, 5, 9})):sum(), src)
    assert.are.equal("float32", g.dtype)
    check(g, {5, 5})
  end)

  it("only src requires grad", function()
    local src = leaf({{1, 2}})
    local out = ember.zeros(2, 2, {dtype = "float64"}):scatter(1, I({{2, 1}}), src)
    check(out, {{0, 2}, {1, 0}})
    check(A.grad((out * D({{1, 2}, {3, 4}})):sum(), src), {{3, 2}})
  end)
end)

describe("what used to be refused", function()
  it("gradients of gradients through views, indexing and sorting now work", function()
    local x = leaf({{3, 1, 2}, {6, 5, 4}})
    local function gg(f)
      local g = A.grad(f(x), x, {create_graph = true})
      assert.is_true(g.requires_grad)
      return A.grad((g * g):sum(), x)
    end
    -- f = sum(v^2) over picked values v: g = 2v at the picks, sum(g^2) = 4 sum v^2, its gradient 8v there
    check(gg(function(t) return (t:narrow(2, 1, 2) ^ 2):sum() end), {{24, 8, 0}, {48, 40, 0}})
    check(gg(function(t) return (t:select(1, 2) ^ 2):sum() end), {{0, 0, 0}, {48, 40, 32}})
    check(gg(function(t) return (t:slice(2, 1, 3, 2) ^ 2):sum() end), {{24, 0, 16}, {48, 0, 32}})
    check(gg(function(t) return (t:narrow(2, 1, 2):diagonal() ^ 2):sum() end), {{24, 0, 0}, {0, 40, 0}})
    check(gg(function(t) return (t:unfold(2, 2, 1) ^ 2):sum() end),        -- middle column in two windows
      {{24, 32, 16}, {48, 160, 32}})
    check(gg(function(t) return (t:index_select(2, I({3})) ^ 2):sum() end), {{0, 0, 16}, {0, 0, 32}})
    check(gg(function(t) return (t:gather(2, I({{1}, {2}})) ^ 2):sum() end), {{24, 0, 0}, {0, 40, 0}})
    check(gg(function(t) return (t:max(2) ^ 2):sum() end), {{24, 0, 0}, {48, 0, 0}})
    check(gg(function(t) return (t:min(1) ^ 2):sum() end), {{24, 8, 16}, {0, 0, 0}})
    check(gg(function(t) return (t:sort(2) ^ 2):sum() end), {{24, 8, 16}, {48, 40, 32}})
    check(gg(function(t) return (t:topk(1, 2) ^ 2):sum() end), {{24, 0, 0}, {48, 0, 0}})
  end)

  it("cumprod, scatter and scatter_add accept inputs that require grad", function()
    local x = leaf({1, 2, 3})
    assert.are.equal("CumprodBackward", x:cumprod(1).grad_fn)
    assert.are.equal("ScatterBackward", x:scatter(1, I({1}), D({5})).grad_fn)
    assert.are.equal("ScatterBackward", x:scatter(1, I({1}), 2.0).grad_fn)
    assert.are.equal("ScatterAddBackward", x:scatter_add(1, I({1}), D({5})).grad_fn)
  end)
end)

describe("0-d and empty inputs", function()
  it("second derivatives of s^3 through ops on a 0-d tensor: 3 s^2 then 6 s", function()
    for _, pick in ipairs({
      function(s) return s:index_select(1, I({1})) end,
      function(s) return s:gather(1, I({1})) end,
      function(s) return s:max(1) end,
      function(s) return s:cumprod(1) end,
    }) do
      local s = ember.tensor(2.0, {dtype = "float64"}):requires_grad_()
      local g = A.grad((pick(s) ^ 3):sum(), s, {create_graph = true})
      check(g, 12)
      check(A.grad(g:sum(), s), 12)
    end
  end)

  it("scatter into and from 0-d tensors", function()
    local s = ember.tensor(2.0, {dtype = "float64"}):requires_grad_()
    local src = leaf({5})
    local gs, gsrc = A.grad(s:scatter(1, I({1}), src) * 3, {s, src})
    check(gs, 0)
    check(gsrc, {3})
    local v = ember.tensor(5.0, {dtype = "float64"}):requires_grad_()
    local out = ember.zeros(3, {dtype = "float64"}):scatter_add(1, ember.tensor(2), v)
    check(out, {0, 5, 0})
    local gv = A.grad((out * D({1, 2, 3})):sum(), v)
    assert.are.same({}, gv.shape)
    check(gv, 2)
  end)

  it("empty windows and empty rows", function()
    local x = leaf({1, 2, 3})
    check(A.grad((x:unfold(1, 0, 1) ^ 2):sum() + x:sum(), x), {1, 1, 1})
    local e = ember.zeros(0, 3, {dtype = "float64", requires_grad = true})
    h.check_shape(A.grad(e:cumprod(1):sum(), e), {0, 3})
    h.check_shape(A.grad(e:cumprod(2):sum(), e), {0, 3})
  end)
end)

describe("bad input still fails clearly", function()
  it("in-place scatter on tensors that require grad is refused", function()
    local x = leaf({1, 2, 3})
    has(err(x.scatter_, x, 1, I({1}), D({5})), "scatter: in-place operation on a tensor that requires grad")
    has(err(x.scatter_add_, x, 1, I({1}), D({5})), "in-place operation on a tensor that requires grad")
    local t = ember.zeros(3, {dtype = "float64"})
    has(err(t.scatter_, t, 1, I({1}), leaf({5})), "writing a tensor that requires grad in place")
  end)

  it("scatter's argument errors come first when an input requires grad", function()
    local x = leaf({{1, 2}, {3, 4}})
    has(err(x.scatter, x, 2, I({{3}}), D({{1}})), "scatter: index 3 is out of bounds for dimension 2 with size 2")
    has(err(x.scatter_add, x, 2, I({{1, 2}}), D({{1}})), "scatter_add: index [1,2] must be no larger than src [1,1]")
    has(err(x.scatter, x, 2, I({1}), D({1})), "same number of dimensions")
    has(err(x.scatter, x, 2, D({{1}}), D({{1}})), "expected an int64 index tensor")
    has(err(x.scatter, x, 2, I({{1}}), "a"), "expected a tensor, a number or a boolean")
  end)

  it("cumprod with a bad dim names itself", function()
    local x = leaf({{1, 2}, {3, 4}})
    has(err(x.cumprod, x, 3), "cumprod")
    has(err(x.cumprod, x), "missing dim")
  end)

  it("a saved index or input changed in place is caught in the second backward", function()
    local x = leaf({1, 2, 3})
    local i = I({3, 1})
    local g = A.grad((x:index_select(1, i) ^ 2):sum(), x, {create_graph = true})
    i:fill_(2)
    has(err(A.grad, g:sum(), x), "modified by an in-place operation")
    local y = x * 1
    local c = y:cumprod(1)
    y:detach():add_(1)
    has(err(function() c:sum():backward() end), "modified by an in-place operation")
  end)

  it("a second pass through freed saved tensors says so", function()
    local x = leaf({{1, 2}, {3, 4}})
    local g = A.grad((x:gather(2, I({{2}, {1}})) ^ 3):sum(), x, {create_graph = true})
    local s = g:sum()
    A.grad(s, x)
    has(err(A.grad, s, x), "backward through the graph a second time")
  end)
end)

-- Ops whose backward reads their own output (saved without a grad_fn, to
-- avoid a cycle) must hand it back as a function of the input when the
-- backward is recorded. Hand formulas: exp'' = exp, tanh'' = -2 tanh (1 -
-- tanh^2), sigmoid'' = s (1 - s) (1 - 2 s), sqrt'' = -x^(-3/2) / 4, and for
-- prod of two numbers the mixed second derivative is 1.
describe("second derivatives through ops that save their output", function()
  local xs = {0.5, -1.25, 2.0}
  local function second_diag(fn)
    local x = leaf(xs)
    local g = A.grad(fn(x):sum(), x, {create_graph = true})
    assert.is_true(g.requires_grad)
    return A.grad(g:sum(), x)
  end
  local function each(f) local r = {} for i, v in ipairs(xs) do r[i] = f(v) end return r end
  it("exp, tanh, sigmoid", function()
    check(second_diag(function(x) return x:exp() end), each(math.exp), 1e-12)
    check(second_diag(function(x) return x:tanh() end),
          each(function(v) local t = math.tanh(v) return -2 * t * (1 - t * t) end), 1e-12)
    check(second_diag(function(x) return x:sigmoid() end),
          each(function(v) local s = 1 / (1 + math.exp(-v)) return s * (1 - s) * (1 - 2 * s) end), 1e-12)
  end)
  it("sqrt on positive inputs", function()
    local x = leaf({0.25, 4.0})
    local g = A.grad(x:sqrt():sum(), x, {create_graph = true})
    check(A.grad(g:sum(), x), {-0.25 * 0.25 ^ -1.5, -0.25 * 4 ^ -1.5}, 1e-12)
  end)
  it("prod and softmax", function()
    local p = leaf({3.0, 5.0})
    local g = A.grad(p:prod(), p, {create_graph = true})       -- [p2, p1]
    check(A.grad(g:sum(), p), {1, 1}, 1e-12)
  end)
  second("softmax", function(x) return (x:softmax(1) * D{1, 2, 3}):sum() end, function() return {R(3)} end)
  second("log_softmax", function(x) return (x:log_softmax(2) ^ 2):sum() end, function() return {R(2, 2)} end)
  second("exp of a product", function(x) return (x:exp() * x):sum() end, function() return {R(4)} end)
end)
