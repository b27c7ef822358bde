-- special_spec.lua — ember.special (lua/ember/special.lua), PyTorch's torch.special: the
-- functions written there (i0e, i1, i1e, erfcx, ndtr, log_ndtr, ndtri, entr, xlog1py, zeta,
-- spherical_bessel_j0) over wide ranges and at their edges, values and float64 gradients
-- against PyTorch 2.15 (fixtures/special_module.lua, written by
-- scripts/fixtures/make_special_module_fixtures.py), one call of each other name, second
-- derivatives, dtypes and what bad input gets.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local special = ember.special

local function f64(values, grad) return ember.tensor(values, {dtype = "float64", requires_grad = grad}) end

describe("ember.special against PyTorch (fixtures)", function()
  for _, c in ipairs(h.fixture("special_module.lua")) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

describe("ember.special: names", function()
  it("has PyTorch's names; the other names are ember's functions themselves", function()
    local same = {erf = "erf", erfc = "erfc", erfinv = "erfinv", expm1 = "expm1", exp2 = "exp2", log1p = "log1p",
                  logit = "logit", expit = "sigmoid", xlogy = "xlogy", digamma = "digamma", psi = "digamma",
                  polygamma = "polygamma", gammaln = "lgamma", sinc = "sinc", round = "round", softmax = "softmax",
                  log_softmax = "log_softmax", logsumexp = "logsumexp", multigammaln = "mvlgamma", i0 = "i0",
                  modified_bessel_i0 = "i0"}
    for name, target in pairs(same) do
      assert(rawequal(special[name], ember[target]), "ember.special." .. name .. " is not ember." .. target)
    end
    assert.is_true(rawequal(special.modified_bessel_i1, special.i1))
    for _, name in ipairs({"i0e", "i1", "i1e", "erfcx", "ndtr", "log_ndtr", "ndtri", "entr", "xlog1py", "zeta",
                           "spherical_bessel_j0"}) do
      assert.are.equal("function", type(special[name]), name)
    end
  end)
  it("loads first, before the composites, in a fresh process", function()
    local src = "local e = require 'ember'; print(e.special.ndtri(e.tensor({0.5})):item(), type(e.i0), "
                .. "e.special.i0 == e.i0)"
    local out = h.run_fresh(src)
    assert(out:find("^0%.0%s+function%s+true"), out)
  end)
end)

describe("ember.special: gradients", function()
  -- the gradient of each at a few points, and the gradient of the gradient against finite
  -- differences (the backward formulas are written with these functions, so recorded)
  local cases = {
    {"i0e", f64({-9.5, -1.0, 0.5, 3.0, 20.0})},
    -- (gradgradcheck's differences lose the small entries beside large ones: i1(20) is 4e7)
    {"i1", f64({-4.5, -1.0, 0.5, 3.0, 6.0})},
    {"i1e", f64({-9.5, -1.0, 0.5, 3.0, 20.0})},
    {"erfcx", f64({-3.0, -0.5, 0.0, 2.0, 30.0})},
    {"log_ndtr", f64({-30.0, -2.0, -0.5, 0.5, 4.0})},
    {"ndtri", f64({1e-6, 0.01, 0.3, 0.5, 0.9})},
    {"entr", f64({1e-3, 0.2, 0.7, 1.5, 10.0})},
  }
  local function gradgrad_ok(fn, inputs)
    local ok, report = ember.autograd.gradgradcheck(fn, inputs)
    assert(ok, report)
  end
  for _, c in ipairs(cases) do
    it(c[1] .. ": second derivatives", function() gradgrad_ok(special[c[1]], {c[2]}) end)
  end
  it("xlog1py and zeta (in q): second derivatives", function()
    gradgrad_ok(special.xlog1py, {f64({0.5, -2.0, 3.0}), f64({0.25, 4.0, -0.5})})
    local x = f64({2.0, 3.5, 5.0})
    gradgrad_ok(function(q) return special.zeta(x, q) end, {f64({0.5, 2.0, 7.0})})
  end)
  it("zeta has none in x: asking for it is an error", function()
    local x, q = f64({2.0, 3.0}, true), f64({1.0, 2.0})
    has(err(function() special.zeta(x, q):sum():backward() end), "zeta: the gradient with respect to x is not implemented")
  end)
  it("i1 and i1e: 1/2 at 0", function()
    for _, name in ipairs({"i1", "i1e"}) do
      local x = f64({0.0, -0.0}, true)
      special[name](x):sum():backward()
      h.check(x.grad, {0.5, 0.5})
    end
  end)
  it("ndtri's gradient is the reciprocal of ndtr's density at the result", function()
    local p = f64({1e-300, 1e-20, 0.02, 0.5, 0.999}, true)
    local x = special.ndtri(p)
    x:sum():backward()
    local xd = x:detach()
    local density = (xd:square() * -0.5):exp() / math.sqrt(2 * math.pi)
    h.close_tensors("ndtri'", p.grad, density:reciprocal(), 1e-14)
    -- and ndtr undoes ndtri, relative to p, far into the lower tail (where an ulp of x is
    -- |x| ulps of ndtr(x): 37 at p = 1e-300)
    h.close_tensors("ndtr(ndtri(p)) / p", special.ndtr(xd) / p:detach(), ember.ones(5, {dtype = "float64"}), 1e-12)
  end)
end)

describe("ember.special: dtypes and bad input", function()
  local unary = {"i0e", "i1", "i1e", "erfcx", "ndtr", "log_ndtr", "ndtri", "entr", "spherical_bessel_j0"}
  it("keep a float dtype; integers and bools give the default dtype", function()
    for _, name in ipairs(unary) do
      for _, d in ipairs({"float32", "float64", "float16", "bfloat16"}) do
        local y = special[name](ember.tensor({0.25, 0.5}, {dtype = d}))
        assert.are.equal(d, y.dtype, name .. " of " .. d)
      end
      assert.are.equal("float32", special[name](ember.tensor({0, 1})).dtype, name .. " of int64")
      assert.are.equal("float32", special[name](ember.tensor({true})).dtype, name .. " of bool")
      h.check_shape(special[name](ember.zeros(0, 3, {dtype = "float64"})), {0, 3})
      h.check_shape(special[name](ember.tensor(0.5)), {})
    end
    for _, name in ipairs({"xlog1py", "zeta"}) do
      assert.are.equal("float64", special[name](ember.tensor({2.0}), ember.tensor({1.0}, {dtype = "float64"})).dtype)
      assert.are.equal("float32", special[name](ember.tensor({2}), ember.tensor({1})).dtype)
      assert.are.equal("float16", special[name](ember.tensor({2.0}, {dtype = "float16"}), 1.5).dtype)
      h.check_shape(special[name](ember.ones(2, 1) * 2, ember.ones(3)), {2, 3})
      h.check_shape(special[name](ember.zeros(0, 1), ember.ones(3)), {0, 3})
    end
  end)
  it("refuse what is not a tensor", function()
    for _, name in ipairs(unary) do
      has(err(special[name], 1.5), name .. ": input must be a tensor, got number")
      has(err(special[name], "x"), name .. ": input must be a tensor, got string")
    end
    for _, name in ipairs({"xlog1py", "zeta"}) do
      has(err(special[name], 1, 2), name .. ": expected a tensor as input or other, got number and number")
      has(err(special[name], ember.ones(2), "y"), name .. ": other must be a tensor or a number, got string")
      has(err(special[name], {}, ember.ones(2)), name .. ": input must be a tensor or a number, got table")
    end
    has(err(special.zeta, ember.tensor({2.0}), ember.tensor({-20000.5})), "zeta: q = -20000.5 is below -10000")
  end)
end)
