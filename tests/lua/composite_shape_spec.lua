-- composite_shape_spec.lua — PyTorch's stacking, splitting and array utilities ember composes
-- in Lua (lua/ember/composite/shape.lua): hstack, vstack, row_stack, dstack, column_stack,
-- concatenate, tensor_split, hsplit, vsplit, dsplit, split_with_sizes, ravel, msort, diff,
-- isin, trapezoid, trapz, cumulative_trapezoid, cov, corrcoef, dist, vander, histogram.
-- Values, dtypes and float64 gradients against PyTorch 2.15 (fixtures/composite_shape.lua,
-- written by scripts/fixtures/make_composite_shape_fixtures.py), which results are views,
-- checks against independent formulas, and what bad input gets.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

local THIS_FILE = "composite_shape_spec.lua:"

local FUNCTIONS = {"hstack", "vstack", "row_stack", "dstack", "column_stack", "concatenate", "isin", "trapezoid",
                   "trapz", "cumulative_trapezoid", "vander"}
local BOTH = {"tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes", "ravel", "msort", "diff", "cov",
              "corrcoef", "dist", "histogram"}

describe("composite shape ops against PyTorch (fixtures)", function()
  for _, c in ipairs(h.fixture("composite_shape.lua")) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

describe("composite shape ops: names", function()
  it("are found on first use, in a fresh process, as a method too", function()
    local src = "local e = require 'ember'; local a, b = e.arange(4):tensor_split(2); "
                .. "print(type(e.hstack), type(e.Tensor.diff), a:numel(), b:numel())"
    local out = h.run_fresh(src)
    assert(out:find("function%sfunction%s2%s2"), out)
  end)
  it("ember.X for each; t:X only where PyTorch has the method", function()
    local t = ember.zeros(2)
    for _, n in ipairs(BOTH) do
      assert.are.equal("function", type(ember[n]), n)
      assert.are.equal("function", type(t[n]), "t:" .. n)
    end
    for _, n in ipairs(FUNCTIONS) do
      assert.are.equal("function", type(ember[n]), n)
      has(err(function() local _ = t[n] end), "no field or method '" .. n .. "'")
    end
  end)
  it("concatenate is cat (and concat)", function()
    assert.are.equal(ember.cat, ember.concatenate)
    h.check(ember.concatenate({ember.tensor({1, 2}), ember.tensor({3})}), {1, 2, 3})
  end)
end)

describe("composite shape ops: views", function()
  local x = ember.arange(12.0):view(3, 4)
  it("the pieces of tensor_split, hsplit, vsplit, dsplit and split_with_sizes share the input's storage", function()
    local calls = {
      {ember.tensor_split(x, 3, 2)}, {ember.tensor_split(x, {2})}, {ember.tensor_split(x, ember.tensor({2, 3}))},
      {x:hsplit(2)}, {x:vsplit({3})}, {ember.dsplit(x:view(1, 3, 4), 2)}, {x:split_with_sizes({1, 3}, 2)},
    }
    for i, ps in ipairs(calls) do
      assert(#ps >= 2, "call " .. i)
      for k, p in ipairs(ps) do assert.is_true(p:is_view_of(x), "call " .. i .. " piece " .. k) end
    end
    local y = ember.zeros(6)
    local _, b = y:tensor_split({3})
    b:fill_(1)
    h.check(y, {0, 0, 1, 1, 1, 1})
  end)
  it("ravel: a view of a contiguous tensor, a copy of another", function()
    assert.is_true(x:ravel():is_view_of(x))
    local r = x:t():ravel()
    assert.is_false(r:is_view_of(x))
    h.check(r, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11})
  end)
  it("tensor_split's positions are 1-based starts of pieces, as narrow's start", function()
    local t = ember.arange(1, 8)   -- 1..7
    local a, b, c = t:tensor_split({3, 6})
    h.check(a, {1, 2})
    h.check(b, {3, 4, 5})
    h.check(c, {6, 7})
    h.check(b, t:narrow(1, 3, 3):tolist())
    local p, q = t:tensor_split({-2})   -- the last two start at position -2
    h.check(p, {1, 2, 3, 4, 5})
    h.check(q, {6, 7})
    assert.are.equal(2, select("#", t:tensor_split({8})))
    h.check((select(2, t:tensor_split({8}))), {})
  end)
end)

describe("composite shape ops: independent checks", function()
  it("isin agrees with comparing every pair", function()
    ember.manual_seed(3)
    local e = ember.randint(-20, 20, {7, 9})
    local s = ember.randint(-20, 20, {15})
    local want = e:reshape(-1, 1):eq(s:reshape(1, -1)):any(2):reshape(7, 9)
    assert.is_true(ember.isin(e, s):eq(want):all():item())
    assert.is_true(ember.isin(e, s, {invert = true}):eq(want:logical_not()):all():item())
    local f = ember.randn(50):mul(3):round()
    local g = ember.randn(30):mul(3):round()
    local wf = f:reshape(-1, 1):eq(g:reshape(1, -1)):any(2)
    assert.is_true(ember.isin(f, g):eq(wf):all():item())
  end)
  it("trapezoid and cumulative_trapezoid integrate x^2 on a grid exactly enough", function()
    local x = ember.linspace(0, 1, 1001, {dtype = "float64"})
    local y = x * x
    -- the trapezoid rule's error for x^2 is h^2 / 6 on [0, 1]
    local want = 1 / 3 + (1 / 1000) ^ 2 / 6
    assert.is_true(math.abs(ember.trapezoid(y, x):item() - want) < 1e-12)
    assert.is_true(math.abs(ember.trapezoid(y, {dx = 1 / 1000}):item() - want) < 1e-12)
    local c = ember.cumulative_trapezoid(y, x)
    assert.are.equal(1000, c:numel())
    assert.is_true(math.abs(c[-1]:item() - want) < 1e-12)
  end)
  it("cov matches the sample covariance written out, corrcoef its normalization", function()
    local x = ember.tensor({{1.0, 2.0, 4.0, 7.0}, {0.5, -1.0, 2.0, 3.0}}, {dtype = "float64"})
    local xs = x:tolist()
    local function mean(r) return (r[1] + r[2] + r[3] + r[4]) / 4 end
    local function cv(a, b)
      local ma, mb, s = mean(a), mean(b), 0
      for i = 1, 4 do s = s + (a[i] - ma) * (b[i] - mb) end
      return s / 3
    end
    local want = {{cv(xs[1], xs[1]), cv(xs[1], xs[2])}, {cv(xs[2], xs[1]), cv(xs[2], xs[2])}}
    h.check(x:cov(), want, 1e-12)
    local r = want[1][2] / math.sqrt(want[1][1] * want[2][2])
    h.check(x:corrcoef(), {{1, r}, {r, 1}}, 1e-12)
  end)
  it("histogram: every value lands in the bin its edges say, and the counts add up", function()
    ember.manual_seed(5)
    local x = ember.randn(1000)
    local hist, edges = ember.histogram(x, 13)
    assert.are.equal(1000, hist:sum():item())
    local e, v = edges:tolist(), x:tolist()
    local count = {}
    for k = 1, 13 do count[k] = 0 end
    for _, val in ipairs(v) do
      local k = 13
      for j = 1, 13 do if val < e[j + 1] then k = j; break end end
      count[k] = count[k] + 1
    end
    h.check(hist, count)
    assert.is_false(hist.requires_grad)
    local xr = ember.randn(5, {dtype = "float64"}):requires_grad_()
    local hr = xr:histogram(2)
    assert.is_false(hr.requires_grad)
  end)
  it("diff of prepend and append is the difference of their join", function()
    local x, p = ember.randn(3, 4), ember.randn(3, 1)
    h.close_tensors("diff", x:diff({prepend = p}), ember.cat({p, x}, 2):diff(), 0)
  end)
end)

describe("composite shape ops: bad input", function()
  local o3, o23 = ember.ones(3), ember.ones(2, 3)
  local i64 = function(v) return ember.tensor(v, {dtype = "int64"}) end
  local cases = {
    {function() local _ = ember.hstack({}) end, "hstack: expected a non-empty table of tensors, got a table"},
    {function() local _ = ember.hstack(o3) end, "hstack: expected a non-empty table of tensors, got a tensor [3]"},
    {function() local _ = ember.vstack({o3, 3}) end, "vstack: tensors[2] must be a tensor, got number"},
    {function() local _ = ember.hstack({o3, ember.ones(3, 1)}) end, "hstack: tensors must have the same number of dimensions"},
    {function() local _ = ember.vstack({o3, ember.ones(2)}) end, "vstack: sizes must match"},
    {function() local _ = ember.row_stack({o3, ember.ones(2)}) end, "row_stack: sizes must match"},
    {function() local _ = ember.dstack({o23, ember.ones(3, 3)}) end, "dstack: sizes must match"},
    {function() local _ = ember.column_stack({o3, ember.ones(2)}) end, "column_stack: sizes must match"},
    {function() local _ = ember.tensor_split(o3, 0) end, "tensor_split: number of sections must be positive, got 0"},
    {function() local _ = ember.tensor_split(ember.tensor(1.0), 2) end,
     "tensor_split: expected a tensor of at least 1 dimension, got a 0-d tensor"},
    {function() local _ = ember.tensor_split(o3, {0}) end, "tensor_split: indices are 1-based positions"},
    {function() local _ = ember.tensor_split(o3, {1.5}) end, "tensor_split: indices[1] must be an integer, got 1.5"},
    {function() local _ = ember.tensor_split(o3, ember.tensor({1.0})) end,
     "tensor_split: a tensor of indices or sections must be int64, got float32"},
    {function() local _ = ember.tensor_split(o3, i64({{1}})) end,
     "tensor_split: a tensor of indices or sections must be 0-d (sections) or 1-D (indices), got [1, 1]"},
    {function() local _ = ember.tensor_split(o3, "x") end,
     "tensor_split: indices_or_sections must be an integer, a table of positions or an int64 tensor, got a string"},
    {function() local _ = o3:tensor_split(2, 2) end,
     "tensor_split: dimension 2 out of range (expected 1..1 or -1..-1 for a tensor of 1 dimensions)"},
    {function() local _ = o3:tensor_split(2, {dim = 1, x = 1}) end, "tensor_split: unknown option 'x'"},
    {function() local _ = ember.ones(2, 4):hsplit(3) end,
     "hsplit: cannot split dimension 2 of [2, 4] (size 4) into 3 equal pieces"},
    {function() local _ = ember.ones(2, 4):hsplit(0) end, "hsplit: cannot split dimension 2 of [2, 4] (size 4) into 0"},
    {function() local _ = ember.hsplit(ember.tensor(1.0), 1) end,
     "hsplit: expected a tensor of at least 1 dimension, got a 0-d tensor"},
    {function() local _ = o3:vsplit(1) end, "vsplit: expected a tensor of at least 2 dimensions, got [3]"},
    {function() local _ = o23:dsplit(1) end, "dsplit: expected a tensor of at least 3 dimensions, got [2, 3]"},
    {function() local _ = ember.ones(4):hsplit(i64({1})) end,
     "hsplit: indices_or_sections must be an integer or a table of positions, got a tensor [1]"},
    {function() local _ = o3:split_with_sizes({1, 1}) end,
     "split_with_sizes: split sizes must add up to the size of dimension 1 of [3] (3), got 2"},
    {function() local _ = o3:split_with_sizes({4, -1}) end,
     "split_with_sizes: split sizes must be non-negative, got -1 at position 2"},
    {function() local _ = o3:split_with_sizes(3) end, "split_with_sizes: split_sizes must be a table of sizes, got 3"},
    {function() local _ = ember.ravel(3) end, "ravel: input must be a tensor, got number"},
    {function() local _ = ember.msort("x") end, "msort: input must be a tensor, got string"},
    {function() local _ = ember.diff(ember.tensor(1.0)) end, "diff: expected a tensor of at least 1 dimension"},
    {function() local _ = o3:diff(-1) end, "diff: n (the order) must be non-negative, got -1"},
    {function() local _ = o3:diff(1.5) end, "diff: n must be an integer, got 1.5"},
    {function() local _ = o23:diff({prepend = o3}) end,
     "diff: prepend [3] must have the shape of input [2, 3] except along dimension 2"},
    {function() local _ = o23:diff({dim = 2, append = ember.ones(1, 3)}) end,
     "diff: append [1, 3] must have the shape of input [2, 3] except along dimension 2"},
    {function() local _ = o3:diff({prepend = 1}) end, "diff: prepend must be a tensor, got number"},
    {function() local _ = o3:diff(1, 2) end, "diff: dimension 2 out of range"},
    {function() local _ = ember.isin(1, 2) end, "isin: expected a tensor as elements or test_elements, got two numbers"},
    {function() local _ = ember.isin(ember.tensor({true}), ember.tensor({true})) end, "isin: bool tensors are not supported"},
    {function() local _ = ember.isin(o3, "x") end, "isin: test_elements must be a tensor, got string"},
    {function() local _ = ember.isin(o3, o3, {invert = 1}) end, "isin: invert must be a boolean, got 1"},
    {function() local _ = ember.isin(o3, o3, {nope = 1}) end, "isin: unknown option 'nope'"},
    {function() local _ = ember.trapezoid(ember.tensor(1.0)) end,
     "trapezoid: y must have at least 1 dimension, got a 0-d tensor"},
    {function() local _ = ember.trapezoid(o3, o3, {dx = 1}) end,
     "trapezoid: give the sample points x or the spacing dx, not both"},
    {function() local _ = ember.trapezoid(o3, 2) end,
     "trapezoid: x must be a tensor of sample points; give a constant spacing as {dx = 2}"},
    {function() local _ = ember.trapezoid(o3, {dx = "a"}) end, "trapezoid: dx must be a number, got a string"},
    {function() local _ = ember.trapezoid(o23, ember.ones(2)) end,
     "trapezoid: there must be one x value for each sample point: x [2], y [2, 3] along dimension 2"},
    {function() local _ = ember.trapezoid(ember.tensor({true, false})) end, "trapezoid: bool inputs are not supported"},
    {function() local _ = ember.trapz(o3, {dim = 2}) end, "trapz: dimension 2 out of range"},
    {function() local _ = ember.cumulative_trapezoid(o23, ember.ones(2)) end,
     "cumulative_trapezoid: there must be one x value for each sample point"},
    {function() local _ = ember.cov(ember.ones(2, 2, 2)) end,
     "cov: expected input to have at most 2 dimensions (variables, observations), got [2, 2, 2]"},
    {function() local _ = ember.cov(ember.tensor({true})) end, "cov: bool input is not supported"},
    {function() local _ = o3:cov({fweights = ember.ones(3)}) end, "cov: fweights must have an integer dtype, got float32"},
    {function() local _ = o3:cov({aweights = i64({1, 1, 1})}) end,
     "cov: aweights must have a floating-point dtype, got int64"},
    {function() local _ = o3:cov({fweights = i64({1, 1})}) end,
     "cov: fweights must have one weight per observation (3), got 2"},
    {function() local _ = o3:cov({fweights = i64({1, -1, 1})}) end, "cov: fweights cannot be negative"},
    {function() local _ = o3:cov({fweights = i64({0, 0, 0})}) end, "cov: the weights add up to zero"},
    {function() local _ = o3:cov({aweights = ember.ones(1, 3)}) end, "cov: aweights must have at most 1 dimension, got [1, 3]"},
    {function() local _ = o3:cov({correction = 0.5}) end, "cov: correction must be an integer, got 0.5"},
    {function() local _ = o3:cov(1) end, "cov: too many positional arguments"},
    {function() local _ = ember.corrcoef(ember.ones(2, 2, 2)) end, "corrcoef: expected input to have at most 2 dimensions"},
    {function() local _ = ember.corrcoef(ember.tensor({true})) end, "corrcoef: bool input is not supported"},
    {function() local _ = ember.dist(i64({1, 2}), i64({1, 2})) end,
     "dist: expected a floating-point tensor, got int64 and int64"},
    {function() local _ = o3:dist(o3, "fro") end, "dist: p must be a number, got a string"},
    {function() local _ = o23:dist(ember.ones(2)) end, "dist: "},
    {function() local _ = ember.vander(ember.ones(2, 2)) end, "vander: x must be 1-D, got [2, 2]"},
    {function() local _ = ember.vander(o3, -1) end, "vander: N must be non-negative, got -1"},
    {function() local _ = ember.vander(o3, 2, 1) end, "vander: increasing must be a boolean, got 1"},
    {function() local _ = ember.histogram(i64({1, 2})) end, "histogram: input must be float32 or float64, got int64"},
    {function() local _ = o3:histogram(0) end, "histogram: bins must be positive, got 0"},
    {function() local _ = ember.tensor({1.0, 0 / 0}):histogram() end, "is not finite"},
    {function() local _ = ember.tensor({1.0, math.huge}):histogram() end, "histogram: the range [1.0, inf] is not finite"},
    {function() local _ = o3:histogram(2, {range = {2, 1}}) end, "histogram: the range's min 2 exceeds its max 1"},
    {function() local _ = o3:histogram(2, {range = {1}}) end, "histogram: range must be a table of two numbers {min, max}"},
    {function() local _ = o3:histogram(ember.tensor({0.0, 1.0}, {dtype = "float64"})) end,
     "histogram: bins (edges) must have input's dtype float32, got float64"},
    {function() local _ = o3:histogram(ember.tensor({0.0})) end, "histogram: bins (edges) must hold at least 2 edges, got 1"},
    {function() local _ = o3:histogram(ember.ones(2, 2)) end, "histogram: bins (edges) must be 1-D, got [2, 2]"},
    {function() local _ = o3:histogram(2, {weight = ember.ones(2)}) end,
     "histogram: weight [2] must have one element per element of input [3]"},
    {function() local _ = o3:histogram(2, {weight = i64({1, 1, 1})}) end,
     "histogram: weight must have input's dtype float32, got int64"},
    {function() local _ = o3:histogram(ember.tensor({0.0, 1.0}), {range = {0, 1}}) end,
     "histogram: range applies to a number of bins, not to given bin edges"},
    {function() local _ = o3:histogram(2, {density = "yes"}) end, "histogram: density must be a boolean"},
  }
  for i, c in ipairs(cases) do
    it(i .. ": " .. c[2], function()
      local e = err(c[1])
      has(e, c[2])
      has(e, THIS_FILE)
    end)
  end
end)
