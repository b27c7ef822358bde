-- init_spec.lua — the structured initialisers of ember.nn.init: eye_ and dirac_ exactly,
-- orthogonal_ (W W^T = I, gain, shapes), sparse_ (zeros per column, spread), trunc_normal_
-- (bounds and moments against the truncated normal's, integrated numerically),
-- calculate_gain's table, reproducibility, and the errors bad input gets.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local init = ember.nn.init

local THIS_FILE = "init_spec.lua:"

local function max_abs(t) return t:abs():max():item() end

describe("nn.init.eye_ and dirac_", function()
  it("eye_ sets any 2-D tensor to the identity, on every float dtype", function()
    h.check(init.eye_(ember.empty(2, 3)), {{1, 0, 0}, {0, 1, 0}})
    h.check(init.eye_(ember.full({3, 2}, 7.0, {dtype = "float64"})), {{1, 0}, {0, 1}, {0, 0}})
    local p = ember.nn.Linear(3, 3).weight
    assert.are.equal(p, init.eye_(p))
    assert.is_true(p.requires_grad)
    h.check(p, {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}})
  end)
  it("dirac_ makes a convolution that keeps its input channels", function()
    local w = init.dirac_(ember.empty(3, 2, 3))
    local want = {{{0, 1, 0}, {0, 0, 0}}, {{0, 0, 0}, {0, 1, 0}}, {{0, 0, 0}, {0, 0, 0}}}
    h.check(w, want)
    ember.manual_seed(3)
    local x = ember.randn(1, 2, 5, 6)
    local w4 = init.dirac_(ember.empty(2, 2, 3, 3))
    h.check(ember.conv2d(x, w4, nil, 1, 1), x:tolist(), 1e-6)
    local w5 = init.dirac_(ember.empty(2, 2, 1, 2, 4))
    assert.are.equal(2, w5:sum():item())
    assert.are.equal(1, w5[{1, 1, 1, 2, 3}]:item())     -- centre: size // 2 + 1 (1-based)
  end)
  it("dirac_ with groups: each group maps its own channels", function()
    local w = init.dirac_(ember.empty(4, 2, 1), 2)
    h.check(w:reshape(4, 2), {{1, 0}, {0, 1}, {1, 0}, {0, 1}})
    local w2 = init.dirac_(ember.empty(6, 1, 3), {groups = 3})
    h.check(w2:reshape(6, 3), {{0, 1, 0}, {0, 0, 0}, {0, 1, 0}, {0, 0, 0}, {0, 1, 0}, {0, 0, 0}})
  end)
end)

describe("nn.init.orthogonal_", function()
  it("rows orthonormal (wide), columns orthonormal (tall), times gain", function()
    ember.manual_seed(1)
    local w = init.orthogonal_(ember.empty(4, 7, {dtype = "float64"}))
    assert.is_true(max_abs(w:matmul(w:t()) - ember.eye(4, {dtype = "float64"})) < 1e-12)
    local t = init.orthogonal_(ember.empty(9, 3, {dtype = "float64"}), 2)
    assert.is_true(max_abs(t:t():matmul(t) - ember.eye(3, {dtype = "float64"}) * 4) < 1e-12)
    local sq = init.orthogonal_(ember.empty(5, 5, {dtype = "float64"}), {gain = 0.5})
    assert.is_true(max_abs(sq:matmul(sq:t()) - ember.eye(5, {dtype = "float64"}) * 0.25) < 1e-12)
    assert.is_true(max_abs(sq:t():matmul(sq) - ember.eye(5, {dtype = "float64"}) * 0.25) < 1e-12)
  end)
  it("a conv weight is seen as [out, in * k...]; float32 to float precision", function()
    ember.manual_seed(2)
    local w = init.orthogonal_(ember.empty(4, 2, 3, 3)):reshape(4, 18)
    assert.is_true(max_abs(w:matmul(w:t()) - ember.eye(4)) < 1e-5)
  end)
  it("draws from ember's generator: the same seed gives the same matrix, not a constant one", function()
    ember.manual_seed(5)
    local a = init.orthogonal_(ember.empty(3, 3))
    ember.manual_seed(5)
    local b = init.orthogonal_(ember.empty(3, 3))
    h.check(a, b:tolist(), 0)
    local c = init.orthogonal_(ember.empty(3, 3))
    assert.is_true(max_abs(a - c) > 1e-3)
  end)
end)

describe("nn.init.sparse_", function()
  it("ceil(sparsity * rows) zeros in every column, N(0, std) elsewhere", function()
    ember.manual_seed(4)
    local w = init.sparse_(ember.empty(200, 6, {dtype = "float64"}), 0.25, 0.5)
    local zeros = w:eq(0):to("int64"):sum(1):tolist()
    for j = 1, 6 do assert.are.equal(50, zeros[j]) end
    local kept = w:masked_select(w:ne(0))
    assert.are.equal(900, kept:numel())
    local sd = kept:std():item()
    assert.is_true(math.abs(sd - 0.5) < 0.05, "std " .. sd)
    local default = init.sparse_(ember.empty(10, 3), 0.1)
    assert.are.same({1, 1, 1}, default:eq(0):to("int64"):sum(1):tolist())
    assert.is_true(max_abs(default) < 0.1)    -- std 0.01
  end)
end)

-- the mean and variance of N(mean, std^2) truncated to [a, b], by Simpson's rule on the density
local function truncated_moments(mean, std, a, b)
  local n = 20000
  local hstep = (b - a) / n
  local z, m1, m2 = 0, 0, 0
  for i = 0, n do
    local x = a + i * hstep
    local wgt = (i == 0 or i == n) and 1 or (i % 2 == 1 and 4 or 2)
    local p = math.exp(-0.5 * ((x - mean) / std) ^ 2) * wgt
    z, m1, m2 = z + p, m1 + p * x, m2 + p * x * x
  end
  local mu = m1 / z
  return mu, m2 / z - mu * mu
end

describe("nn.init.trunc_normal_", function()
  it("stays in [a, b] with the truncated normal's moments", function()
    for _, c in ipairs{{0, 1, -2, 2}, {1, 2, -1, 4}, {0, 0.02, -0.04, 0.04}, {0.5, 1, 0.8, 3}} do
      ember.manual_seed(9)
      local t = init.trunc_normal_(ember.empty(40000, {dtype = "float64"}), c[1], c[2], c[3], c[4])
      assert.is_true(t:min():item() >= c[3] and t:max():item() <= c[4], "bounds")
      local mu, var = truncated_moments(c[1], c[2], c[3], c[4])
      local sd = math.sqrt(var)
      local m, s = t:mean():item(), t:std():item()
      assert.is_true(math.abs(m - mu) < 4 * sd / math.sqrt(40000), string.format("mean %g, expected %g", m, mu))
      assert.is_true(math.abs(s - sd) < 0.02 * sd, string.format("std %g, expected %g", s, sd))
    end
  end)
  it("options-table form and defaults; float32 tensors", function()
    ember.manual_seed(10)
    local t = init.trunc_normal_(ember.empty(1000), {std = 0.5, a = -0.1})
    assert.is_true(t:min():item() >= -0.1 and t:max():item() <= 2)
    local d = init.trunc_normal_(ember.empty(5000))
    assert.is_true(d:min():item() >= -2 and d:max():item() <= 2)
    assert.is_true(math.abs(d:mean():item()) < 0.05)
  end)
  it("the host erf/erfinv it rests on", function()
    -- erf values to 1e-15 (Abramowitz and Stegun, table 7.1)
    h.check(ember.tensor({init._erf(0.5), init._erf(1), init._erf(2), init._erf(-1.5)}, {dtype = "float64"}),
            {0.5204998778130465, 0.8427007929497149, 0.9953222650189527, -0.9661051464753108}, 1e-15)
    for _, y in ipairs{-0.999, -0.3, 0.01, 0.7, 0.999999} do
      assert.is_true(math.abs(init._erf(init._erfinv(y)) - y) < 1e-14)
    end
  end)
end)

describe("nn.init.calculate_gain", function()
  it("covers PyTorch's table", function()
    for _, n in ipairs{"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                       "conv_transpose3d", "sigmoid"} do
      assert.are.equal(1, init.calculate_gain(n))
    end
    assert.are.equal(5 / 3, init.calculate_gain("tanh"))
    assert.are.equal(math.sqrt(2), init.calculate_gain("relu"))
    assert.are.equal(3 / 4, init.calculate_gain("selu"))
    assert.are.equal(math.sqrt(2 / (1 + 0.01 ^ 2)), init.calculate_gain("leaky_relu"))
    assert.are.equal(math.sqrt(2 / (1 + 0.2 ^ 2)), init.calculate_gain("leaky_relu", 0.2))
  end)
  it("errors", function()
    has(err(function() local g = init.calculate_gain("swish"); return g end), "unsupported nonlinearity swish")
    has(err(function() local g = init.calculate_gain("leaky_relu", true); return g end),
        "leaky_relu's negative slope must be a number, got true")
  end)
end)

describe("nn.init: bad input", function()
  it("names the initialiser, the shape and what was expected", function()
    local e = err(function() local t = init.eye_(ember.empty(2, 2, 2)); return t end)
    has(e, "nn.init.eye_: expected a 2-D tensor, got [2, 2, 2]")
    has(e, THIS_FILE)
    has(err(function() local t = init.dirac_(ember.empty(3, 3)); return t end), "nn.init.dirac_: expected a 3-, 4- or 5-D tensor, got [3, 3]")
    has(err(function() local t = init.dirac_(ember.empty(3, 1, 3), 2); return t end),
        "nn.init.dirac_: groups must be a positive integer dividing dim 1 of [3, 1, 3], got 2")
    has(err(function() local t = init.orthogonal_(ember.empty(4)); return t end),
        "nn.init.orthogonal_: expected a tensor with at least 2 dims, got [4]")
    has(err(function() local t = init.sparse_(ember.empty(2, 2, 2), 0.5); return t end), "nn.init.sparse_: expected a 2-D tensor")
    has(err(function() local t = init.sparse_(ember.empty(2, 2), 1.5); return t end), "sparsity must be a fraction in [0, 1], got 1.5")
    has(err(function() local t = init.trunc_normal_(ember.empty(2), 0, 1, 2, -2); return t end), "a (2) must be less than b (-2)")
    has(err(function() local t = init.trunc_normal_(ember.empty(2), 0, -1); return t end), "std must be > 0")
    has(err(function() local t = init.trunc_normal_({}); return t end), "nn.init.trunc_normal_: expected a tensor")
  end)
end)
