-- fuse_bn_spec.lua — nn.utils.fuse_conv_bn_eval / fuse_linear_bn_eval and their _weights
-- functions, and ember.deepcopy (which the fusing copies are made with). Expected values:
-- what the two layers do one after the other in eval mode, through ember's own convolution,
-- linear and batch norm (an independent path: the fused layer is one convolution), and a
-- one-feature case worked by hand.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local U = nn.utils

-- a batch norm with running statistics and affine parameters away from their defaults
local function trained_bn(cls, n)
  ember.manual_seed(21)
  local bn = nn[cls](n):double()
  ember.no_grad(function()
    bn.running_mean:copy_(ember.randn(n, {dtype = "float64"}))
    bn.running_var:copy_(ember.rand(n, {dtype = "float64"}) + 0.5)
    bn.weight:copy_(ember.randn(n, {dtype = "float64"}))
    bn.bias:copy_(ember.randn(n, {dtype = "float64"}))
  end)
  return bn:eval()
end

describe("fusing a batch norm into the layer before it", function()
  it("fuse_conv_bn_eval: one convolution doing conv then bn; conv left as it was", function()
    for _, bias in ipairs({true, false}) do
      ember.manual_seed(22)
      local conv = nn.Conv2d(3, 4, 3, {padding = 1, bias = bias}):double():eval()
      local bn = trained_bn("BatchNorm2d", 4)
      local w0 = conv.weight:clone()
      local fused = U.fuse_conv_bn_eval(conv, bn)
      local x = ember.randn(2, 3, 5, 5, {dtype = "float64"})
      h.close_tensors("fused (bias " .. tostring(bias) .. ")", fused(x), bn(conv(x)), 1e-12)
      h.close_tensors("conv untouched", conv.weight, w0, 0)
      assert.is_true(fused.weight.requires_grad and fused.weight.is_leaf)
      assert.are.equal(bias, fused.bias.requires_grad)       -- PyTorch's: the zeros it adds do not
      assert.are.equal("Conv2d", getmetatable(fused).__name)
    end
  end)

  it("fuse_conv_bn_eval with transpose = true: a transposed convolution's output channels", function()
    ember.manual_seed(23)
    local conv = nn.ConvTranspose2d(3, 4, 2, {stride = 2}):double():eval()
    local bn = trained_bn("BatchNorm2d", 4)
    local x = ember.randn(1, 3, 3, 3, {dtype = "float64"})
    h.close_tensors("fused", U.fuse_conv_bn_eval(conv, bn, true)(x), bn(conv(x)), 1e-12)
  end)

  it("fuse_linear_bn_eval: one Linear doing linear then bn", function()
    ember.manual_seed(24)
    local fc = nn.Linear(5, 3):double():eval()
    local bn = trained_bn("BatchNorm1d", 3)
    local x = ember.randn(4, 5, {dtype = "float64"})
    h.close_tensors("fused", U.fuse_linear_bn_eval(fc, bn)(x), bn(fc(x)), 1e-12)
  end)

  it("the _weights functions by hand: one feature", function()
    -- w = 2, b = 1; bn: mean 3, var 3, eps 1, weight 4, bias 5: scale 4 / sqrt(4) = 2,
    -- fused w = 4, fused b = (1 - 3) * 2 + 5 = 1
    local t = function(v) return ember.tensor(v, {dtype = "float64"}) end
    local w, b = U.fuse_linear_bn_weights(t({{2}}), t({1}), t({3}), t({3}), 1, t({4}), t({5}))
    assert.are.same({{4}}, w:tolist())
    assert.are.same({1}, b:tolist())
    w, b = U.fuse_conv_bn_weights(t({{{2}}}), nil, t({3}), t({3}), 1, t({4}), t({5}))
    assert.are.same({{{4}}}, w:tolist())
    assert.are.same({-1}, b:tolist())                         -- (0 - 3) * 2 + 5
  end)

  it("refuses modules in training mode and a batch norm without running statistics", function()
    local conv, bn = nn.Conv2d(2, 2, 1), nn.BatchNorm2d(2)
    has(err(function() local _ = U.fuse_conv_bn_eval(conv, bn:eval()) end),
        "fuse_conv_bn_eval: fusion only for eval", "fuse_bn_spec.lua:")
    has(err(function() local _ = U.fuse_conv_bn_eval(conv:eval(), nn.BatchNorm2d(2, {track_running_stats = false}):eval()) end),
        "no running statistics")
    has(err(function() local _ = U.fuse_linear_bn_eval(nn.Linear(2, 3):eval(), nn.BatchNorm1d(2):eval()) end),
        "linear.out_features (3) must equal bn.num_features (2)")
  end)
end)

describe("ember.deepcopy", function()
  it("copies modules, keeps ties, parameters and gradients, and shares nothing mutable", function()
    local a = nn.Linear(3, 3)
    local m = nn.Sequential(a, nn.ReLU(), a)                  -- one layer twice
    a.weight.grad = ember.ones(3, 3)
    local c = ember.deepcopy(m)
    assert.is_true(rawequal(c[1], c[3]))
    assert.is_false(rawequal(c[1], a))
    assert.is_true(c[1].weight.requires_grad and c[1].weight.is_leaf)
    assert.are.same(a.weight:tolist(), c[1].weight:tolist())
    assert.are.same(ember.ones(3, 3):tolist(), c[1].weight.grad:tolist())
    ember.no_grad(function() c[1].weight:zero_() end)
    assert.is_true(a.weight:abs():sum():item() > 0)
    assert.are.equal(9, #c[1]:state_dict().weight:reshape(-1):tolist())
    assert.are.equal(5, ember.deepcopy(5))
    local t = ember.deepcopy({x = ember.ones(2), n = 3})
    assert.are.same({1, 1}, t.x:tolist())
  end)
end)
