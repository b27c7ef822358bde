-- conv_nn_spec.lua — convolutional networks in ember.nn: the functional ops against
-- PyTorch 1.13 (tests/lua/fixtures/conv_*_ops.lua: outputs, gradients, running stats,
-- written by scripts/fixtures/make_conv_fixtures.py), gradcheck of the ops composed in
-- Lua on non-contiguous inputs, the modules (PyTorch's parameter names, shapes, default
-- initialisation, extra_repr), state_dict round trips and loading PyTorch's state_dict
-- of a small CNN (tests/lua/fixtures/conv_cnn.*) with the same outputs, BatchNorm's
-- train/eval behaviour and running statistics, and the errors bad input gets.
local ember = require "ember"
local h = require "helpers"
local check, err, has = h.check, h.err, h.has
local nn = ember.nn
local F = nn.functional

local THIS_FILE = "conv_nn_spec.lua:"

local function T(v) return ember.tensor(v, {dtype = "float64"}) end

describe("nn.functional against PyTorch (fixtures)", function()
  for _, file in ipairs{"conv_engine_ops.lua", "conv_composed_ops.lua"} do
    for _, c in ipairs(h.fixture(file)) do
      it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
    end
  end
end)

-- ---- gradcheck of the ops composed in Lua, on non-contiguous inputs -------------------

describe("nn.functional composed ops: gradcheck (float64, non-contiguous inputs)", function()
  local gc = h.gradcheck_ok
  -- x arrives contiguous from gradcheck; each fn transposes it so the op sees strides
  it("pad, every mode", function()
    ember.manual_seed(11)
    for _, mode in ipairs{"constant", "reflect", "replicate", "circular"} do
      gc(function(x) return F.pad(x:transpose(3, 4), {2, 1, -1, 2}, mode) end, {ember.randn(1, 2, 4, 3)})
    end
    gc(function(x) return F.pad(x:transpose(2, 3), {1, 1, 0, 2, 1, 0}, {value = 0.5}) end, {ember.randn(2, 3, 2)})
  end)
  it("interpolate: nearest, linear, bilinear (both align_corners), trilinear", function()
    ember.manual_seed(12)
    gc(function(x) return F.interpolate(x:transpose(3, 4), {scale_factor = 1.5}) end, {ember.randn(1, 2, 3, 4)})
    gc(function(x) return F.interpolate(x:transpose(2, 3), {size = 7, mode = "linear"}) end, {ember.randn(1, 4, 2)})
    for _, ac in ipairs{false, true} do
      gc(function(x) return F.interpolate(x:transpose(3, 4), {size = {5, 2}, mode = "bilinear", align_corners = ac}) end,
         {ember.randn(1, 2, 3, 4)})
    end
    gc(function(x) return F.interpolate(x:transpose(4, 5), {size = {3, 3, 2}, mode = "trilinear"}) end,
       {ember.randn(1, 1, 2, 2, 3)})
  end)
  it("unfold and fold", function()
    ember.manual_seed(13)
    gc(function(x) return F.unfold(x:transpose(3, 4), {2, 3}, {dilation = {1, 2}, padding = 1, stride = {2, 1}}) end,
       {ember.randn(1, 2, 6, 5)})
    gc(function(c) return F.fold(c:transpose(2, 3), {4, 5}, 2, {padding = {1, 0}, stride = {2, 1}}) end,
       {ember.randn(1, 12, 8)})
  end)
  it("max_unpool2d, dropout2d (eval) and instance_norm", function()
    ember.manual_seed(14)
    local x0 = ember.randn(1, 2, 4, 6, {dtype = "float64"})
    local _, idx = F.max_pool2d(x0, 2, {return_indices = true})
    gc(function(y) return F.max_unpool2d(y, idx, 2) end, {F.max_pool2d(x0, 2)})
    gc(function(x, w, b) return F.instance_norm(x:transpose(3, 4), {weight = w, bias = b}) end,
       {ember.randn(2, 3, 3, 4), ember.randn(3), ember.randn(3)})
  end)
end)

describe("nn.functional composed ops: behaviour", function()
  it("fold is the adjoint of unfold: <unfold(x), y> = <x, fold(y)>", function()
    ember.manual_seed(15)
    local x = ember.randn(2, 3, 5, 6, {dtype = "float64"})
    local opts = {dilation = {2, 1}, padding = {1, 2}, stride = {1, 2}}
    local cols = F.unfold(x, {2, 3}, opts)
    local y = ember.randn(cols.shape, {dtype = "float64"})
    local lhs = (cols * y):sum():item()
    local rhs = (x * F.fold(y, {5, 6}, {2, 3}, opts)):sum():item()
    assert(math.abs(lhs - rhs) < 1e-9 * math.max(1, math.abs(lhs)), lhs .. " vs " .. rhs)
  end)

  it("dropout2d drops whole channels and scales the rest", function()
    ember.manual_seed(16)
    local y = F.dropout2d(ember.ones(8, 16, 3, 3), 0.25)
    local sums = y:sum({3, 4}):reshape(-1):tolist()
    local zeros = 0
    for _, s in ipairs(sums) do
      assert(math.abs(s) < 1e-6 or math.abs(s - 9 / 0.75) < 1e-4, "channel sum " .. s)
      if s == 0 then zeros = zeros + 1 end
    end
    assert(zeros > 10 and zeros < 60, zeros .. " of 128 channels dropped at p = 0.25")
    local x = ember.randn(2, 3, 4)
    assert.is_true(rawequal(F.dropout2d(x, 0.5, false), x))
  end)

  it("constant pad: values by hand, on the direct path (no gradient) and through the cats", function()
    local x = ember.tensor({{1.0, 2.0}, {3.0, 4.0}})
    local function both(pad, want, ...)
      check(F.pad(x, pad, ...), want)                                        -- the padded tensor at once
      local g = x:clone():requires_grad_()
      check(F.pad(g, pad, ...), want)                                        -- per dim, recorded
    end
    both({1, 2}, {{0, 1, 2, 0, 0}, {0, 3, 4, 0, 0}})
    both({1, 0, 0, 1}, {{-1, 1, 2}, {-1, 3, 4}, {-1, -1, -1}}, {value = -1})
    both({-1, 1}, {{2, 0}, {4, 0}})                                          -- a negative pad crops
    both({0, 1, 1, 1}, {{0, 0, 0}, {1, 2, 0}, {3, 4, 0}, {0, 0, 0}})
    check(F.pad(x:t(), {0, 1}), {{1, 3, 0}, {2, 4, 0}})                      -- a transposed input
    local i = F.pad(ember.tensor({{5, 6}}, {dtype = "int64"}), {1, 1}, {value = 7})
    assert.equal("int64", i.dtype)
    check(i, {{7, 5, 6, 7}})
    h.check_shape(F.pad(ember.zeros(0, 2), {1, 1}), {0, 4})
  end)

  it("reflect, replicate and circular pad: values by hand, written at once (no gradient) and per dim", function()
    local x = ember.tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}, {7.0, 8.0, 9.0}}):view(1, 3, 3)
    local function both(input, pad, mode, want)
      check(F.pad(input, pad, mode), want)                                   -- edges copied inside the result
      local g = input:clone():requires_grad_()
      check(F.pad(g, pad, mode), want)                                       -- index_select per dim, recorded
    end
    both(x, {1, 2, 2, 1}, "reflect", {{{8, 7, 8, 9, 8, 7}, {5, 4, 5, 6, 5, 4}, {2, 1, 2, 3, 2, 1},
                                       {5, 4, 5, 6, 5, 4}, {8, 7, 8, 9, 8, 7}, {5, 4, 5, 6, 5, 4}}})
    both(x, {2, 0, 1, 1}, "replicate", {{{1, 1, 1, 2, 3}, {1, 1, 1, 2, 3}, {4, 4, 4, 5, 6},
                                         {7, 7, 7, 8, 9}, {7, 7, 7, 8, 9}}})
    both(x, {1, 1, 0, 2}, "circular", {{{3, 1, 2, 3, 1}, {6, 4, 5, 6, 4}, {9, 7, 8, 9, 7},
                                        {3, 1, 2, 3, 1}, {6, 4, 5, 6, 4}}})
    both(x:transpose(2, 3), {0, 1, 1, 0}, "reflect", {{{2, 5, 8, 5}, {1, 4, 7, 4}, {2, 5, 8, 5}, {3, 6, 9, 6}}})
    both(ember.tensor({{{1.0, 2.0, 3.0, 4.0}}}, {dtype = "float64"}), {3, 2}, "reflect", {{{4, 3, 2, 1, 2, 3, 4, 3, 2}}})
    both(x, {0, 0, 1, 0}, "circular", {{{7, 8, 9}, {1, 2, 3}, {4, 5, 6}, {7, 8, 9}}})
    assert.equal("float64", F.pad(ember.zeros(1, 1, 2, {dtype = "float64"}), {1, 1}, "replicate").dtype)
  end)

  it("pad and interpolate keep dtype and work under no_grad", function()
    local x = ember.ones(1, 1, 2, 2)
    local y = ember.no_grad(function() return F.pad(x, {1, 1, 1, 1}, "replicate") end)
    check(y, {{{{1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}}}})
    assert.equal("float32", F.interpolate(x, {size = 3, mode = "bilinear"}).dtype)
  end)
end)

-- ---- modules ---------------------------------------------------------------------------

local function names_of(m, buffers)
  local out = {}
  for name, t in m:named_parameters() do out[#out + 1] = name .. h.show(t.shape) end
  if buffers then for name, t in m:named_buffers() do out[#out + 1] = name .. h.show(t.shape) .. t.dtype end end
  return out
end

describe("conv layers: names, shapes, init, extra_repr", function()
  it("Conv1d/2d/3d and ConvTranspose1d/2d have PyTorch's parameter names and shapes", function()
    assert.same({"weight{8, 3, 3, 3}", "bias{8}"}, names_of(nn.Conv2d(3, 8, 3)))
    assert.same({"weight{6, 2, 5}"}, names_of(nn.Conv1d(4, 6, 5, {groups = 2, bias = false})))
    assert.same({"weight{4, 2, 1, 2, 3}", "bias{4}"}, names_of(nn.Conv3d(2, 4, {1, 2, 3})))
    assert.same({"weight{6, 3, 3}", "bias{6}"}, names_of(nn.ConvTranspose1d(6, 6, 3, {groups = 2})))
    assert.same({"weight{8, 4, 2, 2}", "bias{4}"}, names_of(nn.ConvTranspose2d(8, 4, 2, 2)))
    assert.equal("float64", nn.Conv2d(1, 1, 1, {dtype = "float64"}).weight.dtype)
  end)

  it("initialise as PyTorch: weight ~ U(+-1/sqrt(fan_in)) (kaiming a = sqrt(5)), bias likewise", function()
    ember.manual_seed(21)
    for _, case in ipairs{{nn.Conv2d(16, 32, 5), 16 * 25}, {nn.Conv1d(8, 64, 3, {groups = 2}), 4 * 3},
                          {nn.ConvTranspose2d(8, 64, 3), 64 * 9}, {nn.ConvTranspose2d(8, 64, 3, {groups = 4}), 16 * 9}} do
      local m, fan_in = case[1], case[2]
      local bound = 1 / math.sqrt(fan_in)
      local w = m.weight:double()
      assert(w:abs():max():item() <= bound + 1e-7, "weight beyond the bound")
      assert(w:abs():max():item() > 0.9 * bound, "weight far inside the bound")
      assert(math.abs(w:std():item() - bound / math.sqrt(3)) < 0.1 * bound, "weight std")
      assert(m.bias:abs():max():item() <= bound + 1e-7, "bias beyond the bound")
    end
  end)

  it("print their arguments as PyTorch (lists in ember's [a, b] form)", function()
    assert.equal("1, 32, kernel_size=[3, 3], stride=[1, 1], padding=[1, 1]", nn.Conv2d(1, 32, 3, {padding = 1}):extra_repr())
    assert.equal("4, 6, kernel_size=[3], stride=[2], dilation=[2], groups=2, bias=false, padding_mode=\"circular\"",
                 nn.Conv1d(4, 6, 3, {stride = 2, dilation = 2, groups = 2, bias = false, padding_mode = "circular"}):extra_repr())
    assert.equal("2, 2, kernel_size=[3, 3], stride=[1, 1], padding=\"same\"", nn.Conv2d(2, 2, 3, {padding = "same"}):extra_repr())
    assert.equal("6, 3, kernel_size=[3, 3], stride=[2, 2], padding=[1, 1], output_padding=[1, 1]",
                 nn.ConvTranspose2d(6, 3, 3, 2, 1, 1):extra_repr())
    assert.equal("kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=false", nn.MaxPool2d(2):extra_repr())
    assert.equal("kernel_size=[3, 2], stride=1, padding=1, dilation=1, ceil_mode=true",
                 nn.MaxPool2d({3, 2}, 1, 1, 1, false, true):extra_repr())
    assert.equal("kernel_size=3, stride=2, padding=0", nn.AvgPool1d(3, 2):extra_repr())
    assert.equal("output_size=[nil, 7]", nn.AdaptiveAvgPool2d({nil, 7}):extra_repr())
    assert.equal("4, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true", nn.BatchNorm2d(4):extra_repr())
    assert.equal("4, eps=0.001, momentum=nil, affine=false, track_running_stats=true",
                 nn.BatchNorm1d(4, 1e-3, nil, false):extra_repr())
    assert.equal("3, eps=1e-05, momentum=0.1, affine=false, track_running_stats=false", nn.InstanceNorm2d(3):extra_repr())
    assert.equal("2, 6, eps=1e-05, affine=true", nn.GroupNorm(2, 6):extra_repr())
    assert.equal("p=0.2", nn.Dropout2d(0.2):extra_repr())
    assert.equal("scale_factor=2, mode=\"bilinear\"", nn.Upsample({scale_factor = 2, mode = "bilinear"}):extra_repr())
    assert.equal("dim=2, unflattened_size=[2, 5]", nn.Unflatten(2, {2, 5}):extra_repr())
    assert.equal("start_dim=2, end_dim=-1", nn.Flatten():extra_repr())
  end)

  it("BatchNorm: weight 1, bias 0, buffers running_mean 0, running_var 1, num_batches_tracked int64 0", function()
    local bn = nn.BatchNorm2d(3)
    assert.same({"weight{3}", "bias{3}", "running_mean{3}float32", "running_var{3}float32",
                 "num_batches_tracked{}int64"}, names_of(bn, true))
    check(bn.weight, {1, 1, 1}); check(bn.bias, {0, 0, 0})
    check(bn.running_mean, {0, 0, 0}); check(bn.running_var, {1, 1, 1})
    assert.equal(0, bn.num_batches_tracked:item())
    assert.same({}, names_of(nn.BatchNorm1d(3, {affine = false, track_running_stats = false}), true))
    assert.same({"weight{6}", "bias{6}"}, names_of(nn.GroupNorm(3, 6), true))
    assert.same({}, names_of(nn.InstanceNorm1d(3), true))
    -- to() converts the float buffers and keeps num_batches_tracked int64
    bn:to("float64")
    assert.equal("float64", bn.running_var.dtype)
    assert.equal("int64", bn.num_batches_tracked.dtype)
  end)

  it("forward shapes of every layer", function()
    local x = ember.randn(2, 3, 8, 8)
    h.check_shape(nn.Conv2d(3, 5, 3, {stride = 2, padding = 1})(x), {2, 5, 4, 4})
    h.check_shape(nn.Conv2d(3, 5, 3, {padding = "same", padding_mode = "reflect"})(x), {2, 5, 8, 8})
    h.check_shape(nn.Conv2d(3, 5, {3, 1}, {padding = {1, 0}, padding_mode = "replicate"})(x), {2, 5, 8, 8})
    h.check_shape(nn.Conv2d(3, 5, 3)(x[1]), {5, 6, 6})
    h.check_shape(nn.Conv1d(3, 4, 3)(ember.randn(2, 3, 10)), {2, 4, 8})
    h.check_shape(nn.Conv3d(3, 4, 3, {padding = 1})(ember.randn(1, 3, 4, 4, 4)), {1, 4, 4, 4, 4})
    local up = nn.ConvTranspose2d(3, 2, 3, {stride = 2, padding = 1})
    h.check_shape(up(x), {2, 2, 15, 15})
    h.check_shape(up(x, {16, 16}), {2, 2, 16, 16})
    h.check_shape(up(x, {2, 2, 16, 15}), {2, 2, 16, 15})
    h.check_shape(nn.ConvTranspose1d(3, 2, 4, 2)(ember.randn(1, 3, 5)), {1, 2, 12})
    h.check_shape(nn.MaxPool2d(2)(x), {2, 3, 4, 4})
    local y, idx = nn.MaxPool2d(2, {return_indices = true})(x)
    h.check_shape(nn.MaxUnpool2d(2)(y, idx), {2, 3, 8, 8})
    h.check_shape(nn.MaxPool1d(3, 2, 1)(ember.randn(1, 2, 9)), {1, 2, 5})
    h.check_shape(nn.AvgPool2d(3, {stride = 2, padding = 1})(x), {2, 3, 4, 4})
    h.check_shape(nn.AdaptiveAvgPool2d({nil, 3})(x), {2, 3, 8, 3})
    h.check_shape(nn.AdaptiveMaxPool2d(2)(x), {2, 3, 2, 2})
    h.check_shape(nn.AdaptiveAvgPool1d(4)(ember.randn(2, 3, 9)), {2, 3, 4})
    h.check_shape(nn.GroupNorm(1, 3)(x), {2, 3, 8, 8})
    h.check_shape(nn.InstanceNorm2d(3)(x[1]), {3, 8, 8})
    h.check_shape(nn.Upsample({scale_factor = 2})(x), {2, 3, 16, 16})
    h.check_shape(nn.Unflatten(-1, {2, -1})(x), {2, 3, 8, 2, 4})
    h.check_shape(nn.Sequential(nn.Flatten(), nn.Unflatten(2, {3, 8, 8}))(x), {2, 3, 8, 8})
  end)

  it("InstanceNorm2d matches F.instance_norm and tracks stats when asked", function()
    ember.manual_seed(22)
    local x = ember.randn(2, 3, 4, 4, {dtype = "float64"}) * 2 + 1
    local m = nn.InstanceNorm2d(3, {affine = true, track_running_stats = true, dtype = "float64"})
    check(m(x), F.instance_norm(x, {weight = m.weight, bias = m.bias}):tolist(), 1e-12)
    -- the running mean moved 10% towards the mean of the per-sample means
    check(m.running_mean, (x:mean({3, 4}):mean(1) * 0.1):tolist(), 1e-12)
    m:eval()
    local rm, rv = m.running_mean, m.running_var
    local want = (x - rm:reshape(1, 3, 1, 1)) / (rv:reshape(1, 3, 1, 1) + 1e-5):sqrt()
    check(m(x), want:tolist(), 1e-10)
  end)
end)

-- ---- BatchNorm train / eval against PyTorch ---------------------------------------------

local cnn = h.fixture("conv_cnn.lua")

describe("BatchNorm2d train/eval against PyTorch", function()
  for _, c in ipairs(cnn.batchnorm_steps) do
    local label = c.momentum and ("momentum " .. c.momentum) or "momentum nil (cumulative average)"
    it("two training steps then eval, " .. label, function()
      local bn = nn.BatchNorm2d(3, {momentum = c.momentum or false, dtype = "float64"})
      for k = 1, 2 do h.compare("train step " .. k, bn(h.from_spec(c.inputs[k])), c.outputs[k], 1e-10) end
      h.compare("running_mean", bn.running_mean, c.running_mean, 1e-12)
      h.compare("running_var", bn.running_var, c.running_var, 1e-12)
      assert.equal(c.num_batches_tracked, bn.num_batches_tracked:item())
      bn:eval()
      h.compare("eval", bn(h.from_spec(c.inputs[3])), c.outputs[3], 1e-10)
      assert.equal(2, bn.num_batches_tracked:item())    -- eval does not count
    end)
  end

  it("without running stats uses the batch statistics in eval too", function()
    local bn = nn.BatchNorm1d(2, {track_running_stats = false, affine = false, dtype = "float64"})
    bn:eval()
    local y = bn(T{{1, 10}, {3, 30}})
    check(y, {{-1, -1}, {1, 1}}, 1e-4)
  end)

  it("momentum = nil positionally is the cumulative average", function()
    local bn = nn.BatchNorm1d(1, 1e-5, nil, false)
    bn(ember.tensor({{1.0}, {3.0}}))        -- mean 2
    bn(ember.tensor({{5.0}, {7.0}}))        -- mean 6
    check(bn.running_mean, {4}, 1e-6)        -- (2 + 6) / 2
  end)
end)

-- ---- the small CNN: PyTorch's state_dict, same outputs ------------------------------------

local SmallCNN = nn.Module:extend("SmallCNN")
function SmallCNN:init()
  self.conv1 = nn.Conv2d(3, 4, 3, {padding = 1})
  self.bn1 = nn.BatchNorm2d(4)
  self.pool1 = nn.MaxPool2d(2)
  self.conv2 = nn.Conv2d(4, 6, 3, {padding = 1, bias = false})
  self.gn = nn.GroupNorm(2, 6)
  self.pool2 = nn.AvgPool2d(2)
  self.flatten = nn.Flatten()
  self.fc = nn.Linear(24, 5)
  self.up = nn.ConvTranspose2d(6, 3, 3, {stride = 2, padding = 1, output_padding = 1})
end
function SmallCNN:forward(x)
  local h1 = self.pool1(self.bn1(self.conv1(x)):relu())
  local h2 = self.pool2(self.gn(self.conv2(h1)):relu())
  return self.fc(self.flatten(h2)), self.up(h2)
end

describe("a small CNN with PyTorch's state_dict", function()
  local function loaded()
    local m = SmallCNN()
    local sd = ember.load(h.FIXTURES .. "conv_cnn.safetensors")
    local res = m:load_state_dict(sd)
    assert.same({}, res.missing_keys)
    assert.same({}, res.unexpected_keys)
    return m
  end

  it("has PyTorch's state_dict keys", function()
    local keys = {}
    for k in pairs(SmallCNN():state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.same(cnn.state_dict_keys, keys)
  end)

  it("gives PyTorch's outputs in eval mode", function()
    local m = loaded():eval()
    local logits, up = m(h.from_spec(cnn.input))
    h.compare("logits", logits, cnn.eval_logits, 2e-5)
    h.compare("up", up, cnn.eval_up, 2e-5)
  end)

  it("gives PyTorch's outputs, running stats and gradient in train mode", function()
    local m = loaded()
    local logits, up = m(h.from_spec(cnn.input))
    h.compare("logits", logits, cnn.train_logits, 2e-5)
    h.compare("up", up, cnn.train_up, 2e-5)
    h.compare("bn1.running_mean", m.bn1.running_mean, cnn.bn1_after.running_mean, 1e-5)
    h.compare("bn1.running_var", m.bn1.running_var, cnn.bn1_after.running_var, 1e-5)
    h.compare("bn1.num_batches_tracked", m.bn1.num_batches_tracked, cnn.bn1_after.num_batches_tracked, 0)
    local loss = (logits * logits):sum() + up:sum()
    loss:backward()
    h.compare("conv1.weight.grad", m.conv1.weight.grad, cnn.train_grad_conv1_weight, 1e-4)
  end)

  it("round-trips its state_dict through a file, buffers included", function()
    ember.manual_seed(23)
    local a = SmallCNN()
    a(ember.randn(4, 3, 8, 8))            -- moves bn1's running stats
    a:eval()
    local file = os.tmpname()
    finally(function() os.remove(file) end)
    ember.save(file, a:state_dict())
    local b = SmallCNN():eval()
    b:load_state_dict(ember.load(file))
    assert.equal(1, b.bn1.num_batches_tracked:item())
    check(b.bn1.running_var, a.bn1.running_var:tolist(), 0)
    local x = ember.randn(2, 3, 8, 8)
    local la, ua = a(x)
    local lb, ub = b(x)
    check(lb, la:tolist(), 0)
    check(ub, ua:tolist(), 0)
  end)
end)

-- ---- bad input ---------------------------------------------------------------------------

-- (the calls are not tail calls: a tail call leaves no frame of this file to point at)
describe("conv layers and functions explain bad input at the caller's line", function()
  local function at_this_line(msg) has(msg, THIS_FILE) end

  it("functional ops", function()
    local x = ember.randn(1, 2, 4, 4)
    local e = err(function() local _ = F.pad(x, {1, 1}, "mirror") end)
    has(e, "pad: mode must be"); at_this_line(e)
    e = err(function() local _ = F.pad(ember.randn(2, 4), {4, 0}, "reflect") end)
    has(e, "pad: reflect padding {4, 0} of dim 2 must be less than its size 4 (input [2, 4])"); at_this_line(e)
    e = err(function() local _ = F.pad(ember.randn(2, 4), {0, 5}, "circular") end)
    has(e, "pad: circular padding {0, 5} of dim 2 must be at most its size 4")
    e = err(function() local _ = F.pad(x[1], {1, 1, 1, 1, 1, 1}, "replicate") end)
    has(e, "6 pad values need a 4-D or 5-D input, got [2, 4, 4]"); at_this_line(e)
    e = err(function() local _ = F.pad(x, {1, -6}) end)
    has(e, "pad: pad {1, -6} of dim 4 of [1, 2, 4, 4] leaves a negative size -1"); at_this_line(e)
    e = err(function() local _ = F.pad(x, {1, 2, 3}) end)
    has(e, "pad: pad must be a list of (before, after) pairs")
    e = err(function() local _ = F.interpolate(x, {size = 8, scale_factor = 2}) end)
    has(e, "interpolate: give exactly one of size and scale_factor"); at_this_line(e)
    e = err(function() local _ = F.interpolate(x, {size = 8, mode = "linear"}) end)
    has(e, "interpolate: mode \"linear\" needs a 3-D input, got [1, 2, 4, 4]")
    e = err(function() local _ = F.interpolate(x, {size = 8, align_corners = true}) end)
    has(e, "align_corners can only be set with the interpolating modes")
    e = err(function() local _ = F.interpolate(x, {size = {8, 8, 8}}) end)
    has(e, "interpolate: size must be an integer or a list of 2 integers, got a list of 3")
    e = err(function() local _ = F.interpolate(x, {sise = 8}) end)
    has(e, "interpolate: unknown option 'sise'")
    e = err(function() local _ = F.unfold(x, 5) end)
    has(e, "unfold: a spatial size [4, 4] with kernel_size [5, 5]"); at_this_line(e)
    e = err(function() local _ = F.unfold(ember.randn(4, 4), 2) end)
    has(e, "unfold: expected a [N, C, H, W] or [C, H, W] input, got [4, 4]")
    e = err(function() local _ = F.fold(ember.randn(1, 12, 10), {4, 5}, 2) end)
    has(e, "fold: input [1, 12, 10] with output_size [4, 5], kernel_size [2, 2]"); has(e, "12 blocks (3 x 4)")
    at_this_line(e)
    e = err(function() local _ = F.max_unpool2d(ember.randn(1, 1, 2, 2), ember.tensor({{{{1, 2}, {3, 17}}}}), 2) end)
    has(e, "max_unpool2d: index 17 out of range for output planes of 4 x 4 = 16 positions"); at_this_line(e)
    e = err(function() local _ = F.max_unpool2d(ember.randn(1, 1, 2, 2), ember.ones(1, 1, 2, 2), 2) end)
    has(e, "max_unpool2d: indices must be an int64 tensor of the input's shape [1, 1, 2, 2], got float32")
    e = err(function() local _ = F.dropout2d(ember.randn(2, 3), 0.5) end)
    has(e, "dropout2d: expected a [N, C, H, W] (or [N, C, L]) input, got [2, 3]")
    e = err(function() local _ = F.instance_norm(x, {weight = ember.ones(3)}) end)
    has(e, "instance_norm: weight must be a tensor of shape [2] for input [1, 2, 4, 4], got [3]"); at_this_line(e)
    e = err(function() local _ = F.conv2d(x, ember.randn(3, 5, 3, 3)) end)
    has(e, "conv2d"); at_this_line(e)
  end)

  it("modules: constructors and forward", function()
    local e = err(function() local _ = nn.Conv2d(3, 8, 3)(ember.randn(2, 4, 8, 8)) end)
    has(e, "Conv2d(3, 8, kernel_size=[3, 3], stride=[1, 1]): conv2d:"); has(e, "[2,4,8,8]"); at_this_line(e)
    e = err(function() local _ = nn.Conv2d(3, 8, 3)(ember.randn(8, 8)) end)
    has(e, "Conv2d: expected a 4-D (batched) or 3-D (unbatched) input, got [8, 8]"); at_this_line(e)
    e = err(function() local _ = nn.Conv2d(3, 8, 3, {groups = 2}) end)
    has(e, "Conv2d: in_channels (3) and out_channels (8) must be divisible by groups (2)"); at_this_line(e)
    e = err(function() local _ = nn.Conv2d(3, 8, {3, 3, 3}) end)
    has(e, "Conv2d: kernel_size must be an integer or a list of 2 integers, got a list of 3")
    e = err(function() local _ = nn.Conv2d(3, 8, 3, {padding = "same", stride = 2}) end)
    has(e, "Conv2d: padding = \"same\" needs stride 1")
    e = err(function() local _ = nn.Conv2d(3, 8, 3, {padding_mode = "mirror"}) end)
    has(e, "Conv2d: padding_mode must be")
    e = err(function() local _ = nn.Conv2d(3, 8, 3, {strides = 2}) end)
    has(e, "Conv2d: unknown option 'strides'")
    e = err(function() local _ = nn.ConvTranspose2d(3, 2, 3, {stride = 2})(ember.randn(1, 3, 4, 4), {20, 20}) end)
    has(e, "ConvTranspose2d: requested an output size of [20, 20], but valid sizes range from 9 to 10"); at_this_line(e)
    e = err(function() local _ = nn.BatchNorm2d(3)(ember.randn(4, 3, 5)) end)
    has(e, "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true): expected a 4-D input, got [4, 3, 5]")
    at_this_line(e)
    e = err(function() local _ = nn.BatchNorm1d(3)(ember.randn(4, 3, 5, 5)) end)
    has(e, "expected a 2-D or 3-D input, got [4, 3, 5, 5]")
    e = err(function() local _ = nn.BatchNorm2d(3)(ember.randn(4, 5, 2, 2)) end)
    has(e, "BatchNorm2d(3, "); has(e, "batch_norm"); at_this_line(e)
    e = err(function() local _ = nn.GroupNorm(4, 6) end)
    has(e, "GroupNorm: num_channels (6) must be divisible by num_groups (4)"); at_this_line(e)
    e = err(function() local _ = nn.MaxPool2d(2)(ember.randn(3)) end)
    has(e, "MaxPool2d(kernel_size=2"); has(e, "max_pool2d"); at_this_line(e)
    e = err(function() local _ = nn.Unflatten(2, {3, 4})(ember.randn(2, 10)) end)
    has(e, "Unflatten(dim=2, unflattened_size=[3, 4]): sizes [3, 4] do not multiply to dim 2's size 10"); at_this_line(e)
    e = err(function() local _ = nn.Dropout2d(2) end)
    has(e, "Dropout2d: p must be a probability in [0, 1], got 2")
  end)
end)
