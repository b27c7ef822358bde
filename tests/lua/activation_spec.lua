-- activation_spec.lua — the activations of ember.nn.functional and their modules
-- (nn/activation.lua): values and gradients against PyTorch 1.13 at awkward points
-- (kinks, thresholds, large |x|; tests/lua/fixtures/nnf_activation.lua, written by
-- scripts/fixtures/make_nnf_fixtures.py), gradcheck in float64 on non-contiguous
-- inputs, the modules (arguments, extra_repr, PReLU's parameter), inplace, and the
-- errors bad input gets.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local F = nn.functional
local gradcheck = ember.autograd.gradcheck

local THIS_FILE = "activation_spec.lua:"

describe("activations against PyTorch (fixtures)", function()
  for _, c in ipairs(h.fixture("nnf_activation.lua")) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

-- ---- gradcheck (float64, non-contiguous inputs, away from the kinks) ---------------------

describe("activations: gradcheck", function()
  local function gc(fn, x) h.gradcheck_ok(fn, {x}) end
  -- values of |x| in [0.05, 4.55] with both signs, none within 0.05 of a kink
  local function sample(seed)
    ember.manual_seed(seed)
    local m = ember.rand(4, 3, {dtype = "float64"}) * 4.5 + 0.05
    local s = ember.rand(4, 3, {dtype = "float64"}):lt(0.5):to("float64") * 2 - 1
    local x = m * s
    -- stay off the kinks at +-3, +-0.5, +-1, 6 and the softplus threshold
    return x:masked_fill(x:sub(3):abs():lt(0.05), 2.2):masked_fill(x:add(3):abs():lt(0.05), -2.2)
            :masked_fill(x:abs():sub(0.5):abs():lt(0.05), 0.7):masked_fill(x:abs():sub(1):abs():lt(0.05), 1.3)
  end
  local fns = {
    relu = function(x) return F.relu(x) end, relu6 = function(x) return F.relu6(x * 2) end,
    leaky_relu = function(x) return F.leaky_relu(x, 0.2) end, elu = function(x) return F.elu(x, 0.7) end,
    selu = F.selu, celu = function(x) return F.celu(x, 1.5) end, gelu = F.gelu,
    gelu_tanh = function(x) return F.gelu(x, "tanh") end, silu = F.silu, mish = F.mish,
    hardswish = F.hardswish, hardsigmoid = F.hardsigmoid, hardtanh = function(x) return F.hardtanh(x, -2, 2.5) end,
    softplus = function(x) return F.softplus(x, 2, 3) end, softsign = F.softsign, tanhshrink = F.tanhshrink,
    threshold = function(x) return F.threshold(x, 0.3, -1) end, logsigmoid = F.logsigmoid,
    hardshrink = function(x) return F.hardshrink(x, 0.8) end, softshrink = function(x) return F.softshrink(x, 0.8) end,
    glu = function(x) return F.glu(x, 2) end, softmax = function(x) return F.softmax(x, 1) end,
    log_softmax = function(x) return F.log_softmax(x, -1) end, softmin = function(x) return F.softmin(x, 2) end,
  }
  local names = {}
  for k in pairs(fns) do names[#names + 1] = k end
  table.sort(names)
  for i, name in ipairs(names) do
    it(name, function()
      gc(function(x) return fns[name](x:t()) end, sample(100 + i))
    end)
  end
  it("prelu: input and weight", function()
    ember.manual_seed(7)
    local ok, report = gradcheck(function(x, w) return F.prelu(x:transpose(2, 3), w) end,
                                 {sample(8):reshape(2, 3, 2), ember.tensor({0.3, -0.7}, {dtype = "float64"})})
    assert(ok, report)
  end)
  it("logsigmoid and softplus keep finite gradients at large |x|", function()
    local x = ember.tensor({-1e4, -800, 800, 1e4}, {dtype = "float32", requires_grad = true})
    local y = F.logsigmoid(x) + F.softplus(x) + F.mish(x)
    y:sum():backward()
    for _, v in ipairs(x.grad:tolist()) do assert(v == v and math.abs(v) < math.huge, "gradient " .. v) end
    for _, v in ipairs(y:tolist()) do assert(v == v and math.abs(v) < math.huge, "value " .. v) end
    h.check(F.logsigmoid(ember.tensor({-1e4, 1e4})), {-1e4, 0}, 1e-6)
  end)
end)

-- ---- modules -----------------------------------------------------------------------------

describe("activation modules", function()
  local x = ember.tensor({{-4.0, -1.0, -0.2, 0.0}, {0.3, 1.0, 2.5, 7.0}}, {dtype = "float64"})
  local cases = {
    {nn.ReLU6(), F.relu6(x), "ReLU6()"},
    {nn.LeakyReLU(0.2), F.leaky_relu(x, 0.2), "LeakyReLU(negative_slope=0.2)"},
    {nn.LeakyReLU(), F.leaky_relu(x), "LeakyReLU(negative_slope=0.01)"},
    {nn.ELU({alpha = 0.5}), F.elu(x, 0.5), "ELU(alpha=0.5)"},
    {nn.SELU(), F.selu(x), "SELU()"},
    {nn.CELU(2), F.celu(x, 2), "CELU(alpha=2)"},
    {nn.Mish(), F.mish(x), "Mish()"},
    {nn.Hardswish(), F.hardswish(x), "Hardswish()"},
    {nn.Hardsigmoid(), F.hardsigmoid(x), "Hardsigmoid()"},
    {nn.Hardtanh(-2, 2), F.hardtanh(x, -2, 2), "Hardtanh(min_val=-2, max_val=2)"},
    {nn.Softplus({beta = 2}), F.softplus(x, 2), "Softplus(beta=2, threshold=20)"},
    {nn.Softsign(), F.softsign(x), "Softsign()"},
    {nn.Tanhshrink(), F.tanhshrink(x), "Tanhshrink()"},
    {nn.Threshold(0.1, 20), F.threshold(x, 0.1, 20), "Threshold(threshold=0.1, value=20)"},
    {nn.GLU(), F.glu(x), "GLU(dim=-1)"},
    {nn.GLU(1), F.glu(x, 1), "GLU(dim=1)"},
    {nn.LogSigmoid(), F.logsigmoid(x), "LogSigmoid()"},
    {nn.Softmin(2), F.softmin(x, 2), "Softmin(dim=2)"},
    {nn.Hardshrink(), F.hardshrink(x), "Hardshrink(0.5)"},
    {nn.Softshrink(1), F.softshrink(x, 1), "Softshrink(1)"},
    {nn.SELU(true), F.selu(x), "SELU(inplace=true)"},
    {nn.LeakyReLU({negative_slope = 0.1, inplace = true}), F.leaky_relu(x, 0.1), "LeakyReLU(negative_slope=0.1, inplace=true)"},
    {nn.ReLU(), F.relu(x), "ReLU()"},
    {nn.ReLU(true), F.relu(x), "ReLU(inplace=true)"},
    {nn.SiLU({inplace = true}), F.silu(x), "SiLU(inplace=true)"},
    {nn.Tanh(), x:tanh(), "Tanh()"},
    {nn.Sigmoid(), x:sigmoid(), "Sigmoid()"},
  }
  for _, c in ipairs(cases) do
    it(c[3], function()
      local m, want, repr = c[1], c[2], c[3]
      assert.are.equal(repr, tostring(m):match("^[^\n]*"))
      h.check(m(x:clone()), want:tolist(), 0)
      assert.are.equal(0, #m:parameters())
    end)
  end
  it("hand-computed values", function()
    local v = ember.tensor({-2.0, 0.0, 2.0}, {dtype = "float64"})
    h.check(nn.ReLU6()(ember.tensor({-1.0, 3.0, 9.0})), {0, 3, 6})
    h.check(nn.Hardtanh()(v), {-1, 0, 1})
    h.check(nn.Softsign()(v), {-2 / 3, 0, 2 / 3}, 1e-15)
    h.check(nn.ELU()(v), {math.exp(-2) - 1, 0, 2}, 1e-15)
    h.check(nn.Hardsigmoid()(v), {1 / 6, 0.5, 5 / 6}, 1e-15)
    h.check(nn.Hardswish()(v), {-2 / 6, 0, 10 / 6}, 1e-15)
    h.check(nn.Softplus()(v), {math.log(1 + math.exp(-2)), math.log(2), math.log(1 + math.exp(2))}, 1e-15)
    h.check(nn.GLU()(ember.tensor({{1.0, 2.0, 0.0, 0.0}})), {{0.5, 1.0}})
  end)
  it("PReLU: a learnable weight per channel (dim 2), PyTorch's init and repr", function()
    local m = nn.PReLU(3, {dtype = "float64"})
    assert.are.equal("PReLU(num_parameters=3)", tostring(m):match("^[^\n]*"))
    h.check(m.weight, {0.25, 0.25, 0.25})
    local names = {}
    for name in m:named_parameters() do names[#names + 1] = name end
    assert.are.same({"weight"}, names)
    local inp = ember.tensor({{{-1.0, 2.0}, {-2.0, -4.0}, {3.0, -8.0}}}, {dtype = "float64"})
    ember.no_grad(function() m.weight:copy_(ember.tensor({0.5, 2.0, -1.0}, {dtype = "float64"})) end)
    local y = m(inp)
    h.check(y, {{{-0.5, 2.0}, {-4.0, -8.0}, {3.0, 8.0}}})
    y:sum():backward()
    h.check(m.weight.grad, {-1, -6, -8})
    local one = nn.PReLU({init = 0.1})
    h.check(one(ember.tensor({-10.0, 10.0})), {-1, 10}, 1e-6)
    assert.are.equal(1, one.weight:numel())
  end)
  it("inplace overwrites the input and returns it; refused on a tensor that requires grad", function()
    local v = ember.tensor({-1.0, 0.5, 9.0})
    local out = F.relu6(v, true)
    assert.are.equal(v, out)
    h.check(v, {0, 0.5, 6})
    local w = ember.tensor({-1.0, 2.0})
    nn.LeakyReLU(0.5, true)(w)
    h.check(w, {-0.5, 2})
    -- PyTorch's nn.ReLU(inplace=True), as torchvision's models write it
    local r = ember.tensor({-1.0, 2.0})
    assert.are.equal(r, nn.ReLU({inplace = true})(r))
    h.check(r, {0, 2})
    local s = ember.tensor({-1.0, 2.0})
    nn.SiLU(true)(s)
    h.check(s, {-1 / (1 + math.exp(1)), 2 / (1 + math.exp(-2))}, 1e-6)
    local kept = ember.tensor({-1.0, 2.0})
    nn.ReLU()(kept)
    h.check(kept, {-1, 2})
    local u = ember.tensor({-1.0, 2.0})
    F.elu(u, {inplace = true})
    h.check(u, {math.exp(-1) - 1, 2}, 1e-6)
    local leaf = ember.tensor({-1.0, 2.0}, {requires_grad = true})
    has(err(function() local y = F.relu(leaf, true); return y end), "relu: inplace = true")
    has(err(function() local y = F.hardtanh(leaf, {inplace = true}); return y end), "requires grad")
  end)
end)

-- ---- bad input ---------------------------------------------------------------------------

describe("activations: bad input", function()
  local x = ember.randn(2, 3)
  it("glu on an odd dim names the dim and the shape", function()
    local e = err(function() local y = F.glu(x); return y end)
    has(e, "glu: halving dim 2 of input [2, 3] needs an even size, got 3")
    has(e, THIS_FILE)
    has(err(function() local y = nn.GLU(1)(ember.randn(3, 2)); return y end), "dim 1 of input [3, 2]")
    has(err(function() local y = F.glu(x, 3); return y end), "glu: dim must be an integer in 1..2")
    has(err(function() local y = F.glu(ember.tensor(1.0)); return y end), "glu: expected an input with at least 1 dim")
  end)
  it("bad option values", function()
    has(err(function() local y = F.hardtanh(x, 2, 1); return y end), "hardtanh: min_val (2) must not be greater than max_val (1)")
    has(err(function() local y = nn.Hardtanh(2, 1); return y end), "Hardtanh: min_val (2)")
    has(err(function() local y = F.leaky_relu(x, "a"); return y end), "leaky_relu: negative_slope must be a number, got a")
    has(err(function() local y = F.softshrink(x, -1); return y end), "softshrink: lambd must be >= 0, got -1")
    has(err(function() local y = nn.Softshrink(-1); return y end), "Softshrink: lambd must be >= 0")
    has(err(function() local y = F.celu(x, 0); return y end), "celu: alpha must not be 0")
    has(err(function() local y = F.softplus(x, 0); return y end), "softplus: beta must not be 0")
    has(err(function() local y = F.gelu(x, {approximate = "fast"}); return y end), "gelu: approximate must be \"none\" or \"tanh\", got fast")
    has(err(function() local y = F.elu(x, {alpah = 1}); return y end), "elu: unknown option 'alpah'")
    has(err(function() local y = F.threshold(x, 0.5); return y end), "threshold: threshold and value must be numbers")
    has(err(function() local y = F.softmax(x); return y end), "softmax: dim is required")
    has(err(function() local y = F.softmin(x, 3); return y end), "softmin: dim must be an integer in 1..2")
    has(err(function() local y = nn.Softmin(); return y end), "Softmin: dim is required")
    has(err(function() local y = nn.LeakyReLU(0.1, "yes"); return y end), "LeakyReLU: inplace must be a boolean")
    has(err(function() local y = nn.ReLU("yes"); return y end), "ReLU: inplace must be a boolean")
    has(err(function() local y = nn.ReLU({inplce = true}); return y end), "ReLU: unknown option 'inplce'")
    has(err(function() local y = nn.Tanh(1); return y end), "Tanh")
    has(err(function() local y = nn.PReLU(0); return y end), "PReLU: num_parameters must be a positive integer, got 0")
  end)
  it("wrong types and shapes", function()
    has(err(function() local y = F.relu6(ember.tensor({1, 2})); return y end), "hardtanh: expected a floating-point input, got int64 [2]")
    has(err(function() local y = F.mish("x"); return y end), "mish: input must be a tensor, got string")
    has(err(function() local y = nn.ELU()(3); return y end), "ELU: expected a tensor as input, got number")
    local e = err(function() local y = F.prelu(x, ember.ones(2)); return y end)
    has(e, "prelu: weight must have 1 entry or one per channel (dim 2 of input [2, 3]: 3), got [2]")
    has(e, THIS_FILE)
    has(err(function() local y = nn.PReLU(4)(x); return y end), "one per channel")
  end)
end)

describe("softmax family: dtype", function()
  it("converts the input first, positionally or as {dtype =}", function()
    local x = ember.tensor({{1.0, 2.0, 3.0}})
    local a = F.softmax(x, 2, "float64")
    assert.are.equal("float64", a.dtype)
    local s = 0
    for _, v in ipairs{1, 2, 3} do s = s + math.exp(v) end
    h.check(a, {{math.exp(1) / s, math.exp(2) / s, math.exp(3) / s}}, 1e-7)
    assert.are.equal("float64", F.log_softmax(x, -1, {dtype = "float64"}).dtype)
    assert.are.equal("float64", F.softmin(x, 2, {dtype = "float64"}).dtype)
    h.check(F.softmin(x, 2, {dtype = "float64"}), {{math.exp(3) / s, math.exp(2) / s, math.exp(1) / s}}, 1e-7)
  end)
end)
