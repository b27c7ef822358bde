-- composite_extra_spec.lua — the PyTorch names ember composes in lua/ember/composite/extra.lua:
-- slice_scatter, select_scatter, diagonal_scatter, renorm(_), range, scalar_tensor, frexp,
-- index_reduce(_), put(_), nonzero_static, adjoint, angle, gradient, fill, fill_, the top-level
-- in-place forms (gcd_, lcm_, deg2rad_, rad2deg_, negative_, i0_, zero_, ldexp_, sinc_,
-- index_put_) and the anomaly-mode queries. Values, dtypes and float64 gradients against
-- PyTorch 2.15 (fixtures/composite_extra.lua, written by
-- scripts/fixtures/make_composite_extra_fixtures.py), the in-place rules, checks against
-- independent formulas, and what bad input gets.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

local THIS_FILE = "composite_extra_spec.lua:"

local FUNCTIONS = {"range", "scalar_tensor", "gradient", "fill", "fill_", "gcd_", "lcm_", "deg2rad_", "rad2deg_",
                   "negative_", "i0_", "zero_", "ldexp_", "sinc_", "index_put_", "is_anomaly_enabled",
                   "is_anomaly_check_nan_enabled", "set_anomaly_enabled"}
local BOTH = {"slice_scatter", "select_scatter", "diagonal_scatter", "renorm", "frexp", "index_reduce", "put",
              "nonzero_static", "adjoint", "angle"}
local METHODS = {"renorm_", "index_reduce_", "put_"}

local function f64(v) return ember.tensor(v, {dtype = "float64"}) end
local function i64(v) return ember.tensor(v, {dtype = "int64"}) end

describe("composite extra ops against PyTorch (fixtures)", function()
  for _, c in ipairs(h.fixture("composite_extra.lua")) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

describe("composite extra ops: names", function()
  it("are found on first use, in a fresh process, as a method too", function()
    local src = "local e = require 'ember'; local m, x = e.ones(2):frexp(); "
                .. "print(type(e.slice_scatter), type(e.Tensor.put_), m:numel(), x.dtype)"
    local out = h.run_fresh(src)
    assert(out:find("function%sfunction%s2%sint32"), out)
  end)
  it("ember.X for each; t:X only where PyTorch has the method", function()
    local t = ember.zeros(2)
    for _, n in ipairs(BOTH) do
      assert.are.equal("function", type(ember[n]), n)
      assert.are.equal("function", type(t[n]), "t:" .. n)
    end
    for _, n in ipairs(METHODS) do assert.are.equal("function", type(t[n]), "t:" .. n) end
    for _, n in ipairs(FUNCTIONS) do assert.are.equal("function", type(ember[n]), n) end
    for _, n in ipairs({"range", "scalar_tensor", "gradient", "fill"}) do
      has(err(function() local _ = t[n] end), "no field or method '" .. n .. "'")
    end
  end)
end)

describe("composite extra ops: semantics", function()
  it("slice_scatter's range is slice's (inclusive, 1-based) and leaves input alone", function()
    local x = ember.zeros(6)
    local r = ember.slice_scatter(x, ember.ones(2), 1, 2, 5, 3)   -- positions 2 and 5
    h.check(r, {0, 1, 0, 0, 1, 0})
    h.check(x, {0, 0, 0, 0, 0, 0})
    assert.are.same(x:slice(1, 2, 5, 3).shape, {2})
    h.check(ember.slice_scatter(x, ember.ones(6)), {1, 1, 1, 1, 1, 1})
  end)
  it("slice_scatter / select_scatter / diagonal_scatter put src where the view reads it back", function()
    local x = ember.arange(24.0):view(2, 3, 4)
    local s = ember.slice_scatter(x, ember.full({2, 3, 2}, -1.0), 3, 2, -1, 2)
    h.check(s:slice(3, 2, -1, 2), ember.full({2, 3, 2}, -1.0):tolist())
    local src = ember.arange(8.0):view(2, 4) + 100
    h.check(ember.select_scatter(x, src, 2, -1):select(2, -1), src:tolist())
    local d = ember.arange(2.0):view(2, 1) - 7
    local y = ember.diagonal_scatter(x, d, {offset = 2, dim1 = 3, dim2 = 2})
    h.check(y:diagonal(2, 3, 2), d:tolist())
    assert.are.equal(24 - 2, y:eq(x):sum():item())
  end)
  it("renorm: every slice's norm is at most maxnorm; renorm_ writes into self", function()
    local x = f64({{3, 4, 0}, {0.3, 0.4, 0}, {-6, 8, 0}})
    local r = ember.renorm(x, 2, 1, 1)
    h.check(r:norm(2, 2), {1, 0.5, 1}, 1e-6)
    local t = x:clone()
    assert.are.equal(t, t:renorm_(2, 1, 1))
    h.check(t, r:tolist())
    -- float16 / bfloat16: norms through float32, result in the input's dtype
    local hx = x:to("float16")
    local hr = hx:renorm(2, 1, 1)
    assert.are.equal("float16", hr.dtype)
    h.check(hr:to("float64"), r:tolist(), 2e-3)
  end)
  it("range includes its end; scalar_tensor is a 0-d default-dtype tensor", function()
    assert.are.equal(5, ember.range(0, 1, 0.25):numel())
    assert.are.equal(4, ember.arange(0, 1, 0.25):numel())
    local s = ember.scalar_tensor(2, {dtype = "float64", requires_grad = true})
    assert.are.equal(0, s:dim())
    assert.is_true(s.requires_grad)
    assert.are.equal("float32", ember.range(1, 3).dtype)
    assert.is_true(ember.range(1, 3, {requires_grad = true}).requires_grad)
  end)
  it("frexp: mantissa * 2^exponent is the input exactly; float16 and bfloat16 too", function()
    local x = ember.randn(200, {dtype = "float64"}) * ember.randn(200, {dtype = "float64"}):mul(30):exp2()
    local m, e = ember.frexp(x)
    assert.are.equal("int32", e.dtype)
    assert.are.equal(0, m:ldexp(e):ne(x):sum():item())
    local a = m:abs()
    assert.are.equal(0, a:lt(0.5):logical_or(a:ge(1)):sum():item())
    for _, dt in ipairs({"float16", "bfloat16"}) do
      local v = ember.tensor({1.5, -0.375, 1e-3, 0, 1000}):to(dt)
      local mm, ee = v:frexp()
      assert.are.equal(dt, mm.dtype)
      h.check(mm:to("float32"), {0.75, -0.75, 1e-3 / 2 ^ -9, 0, 1000 / 1024}, 1e-2)
      h.check(ee:to("int64"), {1, -1, -9, 0, 10})
      assert.are.equal(0, mm:to("float32"):ldexp(ee):ne(v:to("float32")):sum():item())
    end
  end)
  it("frexp's gradient is 2^-exponent, also where 2^exponent leaves float32's range", function()
    -- PyTorch divides by exponent.exp2(), an int32 exp2 computed in float32: inf and 0 there
    local x = f64({2 ^ -1022, 1e-310, 2 ^ -1074, 1.7e308, 3}):requires_grad_()
    local m, e = ember.frexp(x)
    local g = ember.autograd.grad({m:sum()}, {x})
    h.check(g, {2 ^ 1021, 2 ^ 1029, 2 ^ 1073, 2 ^ -1024, 0.25})
    h.check(e:to("int64"), {-1021, -1029, -1073, 1024, 2})
  end)
  it("index_reduce: index values are 1-based, negative from the end (as index_add); a table works", function()
    local x = ember.ones(4)
    local src = ember.tensor({2.0, 3.0})
    local want = ember.index_reduce(x, 1, i64({1, 4}), src, "prod")
    h.check(want, {2, 1, 1, 3})
    h.check(ember.index_reduce(x, 1, i64({1, -1}), src, "prod"), want:tolist())
    h.check(ember.index_reduce(x, 1, {1, 4}, src, "prod"), want:tolist())
    h.check(ember.index_reduce(x, 1, ember.tensor({1, 4}, {dtype = "int32"}), src, "prod"), want:tolist())
    local t = x:clone()
    assert.are.equal(t, t:index_reduce_(1, i64({2, 2}), src, "mean", {include_self = false}))
    h.check(t, {1, 2.5, 1, 1})
  end)
  it("index_reduce's gradient agrees with finite differences (mean, amin)", function()
    for _, reduce in ipairs({"mean", "amin", "prod"}) do
      h.gradcheck_ok(function(x, s) return ember.index_reduce(x, 2, i64({3, 1, 3}), s, reduce) end,
                     {ember.randn(2, 3, {dtype = "float64"}), ember.randn(2, 3, {dtype = "float64"})})
    end
  end)
  it("put_ writes into a contiguous self in place, and into a non-contiguous one", function()
    local t = ember.zeros(2, 3)
    local before = t
    t:put_(i64({1, -1}), ember.tensor({5.0, 6.0}))
    assert.are.equal(before, t)
    h.check(t, {{5, 0, 0}, {0, 0, 6}})
    local u = ember.zeros(3, 2)
    local v = u:t()
    v:put_(i64({2}), ember.tensor({7.0}))   -- v's flat position 2 is v[1][2] = u[2][1]
    h.check(u, {{0, 0}, {7, 0}, {0, 0}})
  end)
  it("nonzero_static: fill_value is written as given, default 0 (never a valid 1-based index)", function()
    local x = ember.tensor({0, 3, 0, 4})
    h.check(x:nonzero_static({size = 4}), {{2}, {4}, {0}, {0}})
    h.check(x:nonzero_static({size = 3, fill_value = -1}), {{2}, {4}, {-1}})
    assert.are.equal("int64", x:nonzero_static({size = 1}).dtype)
  end)
  it("adjoint is a view; angle has a zero gradient, also at infinities and NaN", function()
    local m = ember.zeros(2, 3)
    local a = m:adjoint()
    assert.is_true(a:is_view_of(m))
    assert.are.same({3, 2}, {a.shape[1], a.shape[2]})
    local x = f64({-2, math.huge, -math.huge, 0 / 0, 0}):requires_grad_()
    local g = ember.autograd.grad({ember.angle(x):nan_to_num():sum()}, {x})
    h.check(g, {0, 0, 0, 0, 0})
    assert.is_false(ember.angle(ember.tensor({1.0})).requires_grad)
  end)
  it("gradient: exact for quadratics inside (uniform spacing) and with edge_order 2 at the edges", function()
    local xs = ember.arange(0, 3, 0.5, {dtype = "float64"})
    local f = xs * xs
    local g = ember.gradient(f, {spacing = 0.5, edge_order = 2})
    h.check(g, (xs * 2):tolist(), 1e-12)
    local g1 = ember.gradient(f, {spacing = {xs}, edge_order = 2})
    h.check(g1, (xs * 2):tolist(), 1e-12)
    local n = select("#", ember.gradient(ember.ones(2, 3, 4)))
    assert.are.equal(3, n)
  end)
  it("fill gives a new tensor; its value tensor gets the gradient", function()
    local x = ember.ones(2, 2)
    local r = ember.fill(x, 5)
    h.check(x, {{1, 1}, {1, 1}})
    h.check(r, {{5, 5}, {5, 5}})
    local v = f64(2.0):requires_grad_()
    local g = ember.autograd.grad({ember.fill(ember.zeros(3, {dtype = "float64"}), v):sum()}, {v})
    h.check(g, 3)
  end)
  it("the top-level in-place forms return self, written", function()
    local t = ember.tensor({1.0, -2.0})
    assert.are.equal(t, ember.negative_(t))
    h.check(t, {-1, 2})
    assert.are.equal(t, ember.zero_(t))
    h.check(t, {0, 0})
    assert.are.equal(t, ember.fill_(t, 3))
    h.check(t, {3, 3})
  end)
  it("anomaly mode: set_anomaly_enabled and the queries", function()
    local was, was_nan = ember.is_anomaly_enabled(), ember.is_anomaly_check_nan_enabled()
    ember.set_anomaly_enabled(true, false)
    assert.is_true(ember.is_anomaly_enabled())
    assert.is_false(ember.is_anomaly_check_nan_enabled())
    ember.set_anomaly_enabled(true)
    assert.is_true(ember.is_anomaly_check_nan_enabled())
    ember.set_anomaly_enabled(false)
    assert.is_false(ember.is_anomaly_enabled())
    ember.set_anomaly_enabled(was, was_nan)
  end)
end)

describe("composite extra ops: in-place rules", function()
  local cases = {
    {"renorm_", function(t) return t:renorm_(2, 1, 1) end},
    {"index_reduce_", function(t) return t:index_reduce_(1, i64({1}), ember.ones(1, 2, {dtype = "float64"}), "amax") end},
    {"put_", function(t) return t:put_(i64({1}), f64({1})) end},
    {"fill_", function(t) return ember.fill_(t, f64(1)) end},
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " refuses a self that requires grad, allowed under no_grad", function()
      local t = ember.ones(2, 2, {dtype = "float64"}):requires_grad_()
      local e = err(c[2], t)
      has(e, c[1] .. ": in-place operation on a tensor that requires grad")
      ember.no_grad(function() c[2](t) end)
    end)
  end
  it("renorm_ refuses a result that cannot be written (integer self)", function()
    has(err(function() i64({{1, 2}}):renorm_(2, 1, 1) end), "renorm_: expected a floating point tensor")
  end)
end)

describe("composite extra ops: bad input", function()
  local o3, o23, o33 = ember.ones(3), ember.ones(2, 3), ember.ones(3, 3)
  local cases = {
    {function() local _ = ember.slice_scatter(o23, ember.ones(1, 3), 1, 1, 2) end,
     "slice_scatter: expected src to have a size equal to the slice of self. src size = [1, 3], slice size = [2, 3]"},
    {function() local _ = ember.slice_scatter(o23, o23, 3) end, "slice_scatter: dim 3 out of range"},
    {function() local _ = ember.slice_scatter(o23, o23, 1, 1, 2, 0) end, "slice_scatter: step must be positive, got 0"},
    {function() local _ = ember.slice_scatter(o23, o23, {stop = 2, ["end"] = 2}) end, "slice_scatter: got both end and stop"},
    {function() local _ = ember.slice_scatter(o23, o23, 1, 1.5) end, "slice_scatter: start must be an integer, got 1.5"},
    {function() local _ = ember.slice_scatter(o23, 1) end, "slice_scatter: src must be a tensor"},
    {function() local _ = ember.slice_scatter(o23, o23, {nope = 1}) end, "slice_scatter: unknown option 'nope'"},
    {function() local _ = ember.select_scatter(o23, o3, 1, 3) end,
     "select_scatter: index 3 out of range for tensor of size [2, 3] at dimension 1"},
    {function() local _ = ember.select_scatter(o23, o3, 1, 0) end, "select_scatter: index 0 out of range"},
    {function() local _ = ember.select_scatter(o23, ember.ones(2), 1, 1) end,
     "select_scatter: expected src to have a size equal to the slice of self. src size = [2], slice size = [3]"},
    {function() local _ = ember.diagonal_scatter(o33, ember.ones(2)) end,
     "diagonal_scatter: expected src to have a size equal to the slice of self. src size = [2], slice size = [3]"},
    {function() local _ = ember.diagonal_scatter(o3, o3) end, "diagonal_scatter: input must have at least 2 dimensions"},
    {function() local _ = ember.diagonal_scatter(o33, o3, 0, 1, 1) end,
     "diagonal_scatter: dim1 and dim2 cannot be the same dimension (1)"},
    {function() local _ = ember.renorm(i64({{1, 2}}), 2, 1, 1) end,
     "renorm: expected a floating point tensor, got int64"},
    {function() local _ = ember.renorm(o23, -1, 1, 1) end, "renorm: non-positive-norm not supported"},
    {function() local _ = ember.renorm(o23, 2, 1, -1) end, "renorm: expected maxnorm to be >= 0 but got -1"},
    {function() local _ = ember.renorm(o3, 2, 1, 1) end, "renorm: input needs at least 2 dimensions, got 1 dimensions"},
    {function() local _ = ember.renorm(o23, 2, 3, 1) end, "renorm: dim 3 out of range"},
    {function() local _ = ember.renorm(o23, "fro", 1, 1) end, "renorm: p must be a number"},
    {function() local _ = ember.range(1) end, "range: end must be a number, got a nil"},
    {function() local _ = ember.range(1, 4, 0) end, "range: step must be nonzero"},
    {function() local _ = ember.range(4, 1) end, "range: upper bound and lower bound inconsistent with step sign"},
    {function() local _ = ember.range(0, math.huge) end, "range: unsupported range"},
    {function() local _ = ember.range(1, 2, {dtype = "int7"}) end, "range: dtype must be a dtype name"},
    {function() local _ = ember.range(1, 2, {dtype = "int64", requires_grad = true}) end,
     "range: only tensors of floating point dtype can require gradients"},
    {function() local _ = ember.scalar_tensor("x") end, "scalar_tensor: expected a number or a boolean, got a string \"x\""},
    {function() local _ = ember.scalar_tensor(1, 2) end, "scalar_tensor: too many positional arguments"},
    {function() local _ = ember.frexp(i64({1})) end, "frexp: only supports floating-point dtypes, got int64"},
    {function() local _ = ember.frexp(3) end, "frexp: input must be a tensor"},
    {function() local _ = ember.index_reduce(o3, 1, i64({1}), o3:narrow(1, 1, 1), "sum") end,
     "index_reduce: Expected reduce to be one of prod, mean, amax or amin but got a string \"sum\""},
    {function() local _ = ember.index_reduce(o3, 1, i64({1, 2}), ember.ones(1), "prod") end,
     "index_reduce: Number of indices (2) should be equal to source.size(dim) (1)"},
    {function() local _ = ember.index_reduce(o3, 1, i64({1}), f64({1}), "prod") end,
     "index_reduce: self (float32) and source (float64) must have the same dtype"},
    {function() local _ = ember.index_reduce(o23, 1, i64({1}), ember.ones(1, 2), "prod") end,
     "index_reduce: source [1, 2] must have self's shape [2, 3] except at dim 1"},
    {function() local _ = ember.index_reduce(o3, 1, ember.tensor({1.0}), ember.ones(1), "prod") end,
     "index_reduce: index must be an int64 or int32 tensor, got float32"},
    {function() local _ = ember.index_reduce(o3, 1, i64({{1}}), ember.ones(1), "prod") end,
     "index_reduce: index must be 0-d or 1-D, got [1, 1]"},
    {function() local _ = ember.index_reduce(o3, 1, i64({4}), ember.ones(1), "prod") end,
     "index_reduce: index 4 is out of bounds for dimension 1 with size 3"},
    {function() local _ = ember.index_reduce(o3, 1, i64({0}), ember.ones(1), "prod") end, "index_reduce: index 0"},
    {function() local _ = ember.index_reduce(o3, 1, i64({1}), ember.ones(1), "prod", {include_self = 1}) end,
     "index_reduce: include_self must be a boolean, got 1"},
    {function() local _ = ember.index_reduce(o3, 1, i64({1}), ember.ones(1), "prod", true) end,
     "index_reduce: too many positional arguments"},
    {function() local _ = o3:index_reduce_(1, i64({4}), ember.ones(1), "amin") end,
     "index_reduce_: index 4 is out of bounds"},
    {function() local _ = o3:put(ember.tensor({1.0}), ember.ones(1)) end,
     "put: Expected an int64 (or int32) tensor for index, but got float32"},
    {function() local _ = o3:put(i64({1, 2}), ember.ones(3)) end,
     "put: Expected source and index to have the same number of elements, but got source.numel() = 3, index.numel() = 2"},
    {function() local _ = o3:put(i64({1}), f64({1})) end,
     "put: self and source expected to have the same dtype, but got self.dtype = float32 and source.dtype = float64"},
    {function() local _ = o3:put(i64({4}), ember.ones(1)) end, "put: index 4 is out of range"},
    {function() local _ = o3:put(i64({0}), ember.ones(1)) end, "put: index 0 is out of range"},
    {function() local _ = o3:put_(i64({-4}), ember.ones(1)) end, "put_: index -4 is out of range"},
    {function() local _ = o3:put(i64({1}), ember.ones(1), 1) end, "put: accumulate must be a boolean, got 1"},
    {function() local _ = ember.empty(0):put(i64({1}), ember.ones(1)) end, "put: cannot put into an empty tensor [0]"},
    {function() local _ = o3:nonzero_static() end, "nonzero_static: missing the size option ({size = n})"},
    {function() local _ = o3:nonzero_static(2) end, "nonzero_static: too many positional arguments"},
    {function() local _ = o3:nonzero_static({size = -1}) end,
     "nonzero_static: 'size' must be a non-negative integer, got -1"},
    {function() local _ = o3:nonzero_static({size = 2, fill_value = 0.5}) end,
     "nonzero_static: fill_value must be an integer, got 0.5"},
    {function() local _ = o3:adjoint() end,
     "adjoint: only supported on matrices or batches of matrices; got a 1-D tensor [3]"},
    {function() local _ = ember.angle({1}) end, "angle: input must be a tensor"},
    {function() local _ = ember.gradient(o3, {edge_order = 3}) end,
     "gradient: only supports edge_order = 1 and edge_order = 2, got 3"},
    {function() local _ = ember.gradient(ember.ones(2), {edge_order = 2}) end,
     "gradient: expected each dimension size to be at least edge_order + 1 (3), dim 1 of [2] has 2"},
    {function() local _ = ember.gradient(o23, {spacing = {2}}) end,
     "gradient: expected spacing to be a number or a table of 2 entries (one per dim of input), got a table of 1"},
    {function() local _ = ember.gradient(o23, {spacing = {ember.ones(2)}, dim = 2}) end,
     "gradient: spacing[1] must be a 1-D tensor of the 3 coordinates along dim 2, got [2]"},
    {function() local _ = ember.gradient(o23, {spacing = {ember.tensor(1.0)}, dim = 1}) end,
     "gradient: spacing[1] must be a 1-D tensor of the 2 coordinates along dim 1, got []"},
    {function() local _ = ember.gradient(o23, {spacing = "x"}) end,
     "gradient: spacing must be a number or a table of numbers or 1-D tensors, got a string \"x\""},
    {function() local _ = ember.gradient(o23, {dim = {1, -2}}) end,
     "gradient: dim 1 appears multiple times in the list of dims"},
    {function() local _ = ember.gradient(o23, {dim = 3}) end, "gradient: dim 3 out of range"},
    {function() local _ = ember.gradient(ember.tensor(1.0)) end, "gradient: input must have at least one dimension"},
    {function() local _ = ember.gradient(o23, 1) end, "gradient: too many positional arguments"},
    {function() local _ = ember.fill(o3, ember.ones(1)) end,
     "fill: only supports a 0-dimension value tensor, but got a tensor with 1 dimensions"},
    {function() local _ = ember.fill(o3, "x") end, "fill: value must be a number, a boolean or a 0-d tensor"},
    {function() local _ = ember.fill_(o3, ember.ones(2)) end, "fill_: only supports a 0-dimension value tensor"},
    {function() local _ = ember.fill_(ember.zeros(2), f64(1):requires_grad_()) end,
     "fill_: writing a tensor that requires grad in place is not supported by autograd; use the out-of-place form ember.fill"},
    {function() local _ = ember.gcd_(o3, o3) end, "gcd"},
    {function() local _ = ember.zero_(3) end, "zero_: self must be a tensor"},
    {function() local _ = ember.set_anomaly_enabled(1) end, "set_anomaly_enabled: enabled must be a boolean, got 1"},
    {function() local _ = ember.set_anomaly_enabled(true, 1) end, "set_anomaly_enabled: check_nan must be a boolean"},
  }
  for i, c in ipairs(cases) do
    it(i .. ": " .. c[2], function()
      local e = err(c[1])
      has(e, c[2])
      has(e, THIS_FILE)
    end)
  end
end)
