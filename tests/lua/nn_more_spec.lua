-- nn_more_spec.lua — the layers of lua/ember/nn/more_layers.lua (padding layers,
-- CosineSimilarity, PairwiseDistance, Softmax2d, ChannelShuffle, Unfold, Fold,
-- UpsamplingNearest2d/Bilinear2d, Dropout1d/3d, AlphaDropout, FeatureAlphaDropout, Bilinear,
-- InstanceNorm3d, AdaptiveMaxPool3d, MaxUnpool1d/3d, ParameterList, ParameterDict) and the
-- nn.functional forms added with them: values and float64 gradients against PyTorch 2.15
-- (fixtures/nn_more.lua, written by scripts/fixtures/make_nn_more_fixtures.py), the random
-- dropouts' structure and alpha dropout's two values, printing, state_dict names, the
-- containers' behaviour, the in-place forms, and what bad input gets.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local F = nn.functional

local THIS_FILE = "nn_more_spec.lua:"
local FIX = h.fixture("nn_more.lua")

local function T(v) return ember.tensor(v, {dtype = "float64"}) end
local function first_line(m) return (tostring(m):match("^[^\n]*")) end

describe("more nn layers and functions against PyTorch (fixtures)", function()
  for _, c in ipairs(FIX.cases) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

-- ---- printing ------------------------------------------------------------------------------

describe("more nn layers: printing", function()
  it("extra_repr shows the arguments as the neighbouring layers do", function()
    local want = {
      {nn.ZeroPad1d(2), "ZeroPad1d([2, 2])"},
      {nn.ZeroPad2d({1, 2, 3, 4}), "ZeroPad2d([1, 2, 3, 4])"},
      {nn.ZeroPad3d(1), "ZeroPad3d([1, 1, 1, 1, 1, 1])"},
      {nn.ConstantPad1d(2, 3.5), "ConstantPad1d(padding=[2, 2], value=3.5)"},
      {nn.ConstantPad2d({1, 0, 2, 0}, {value = 1}), "ConstantPad2d(padding=[1, 0, 2, 0], value=1)"},
      {nn.ConstantPad3d(0, -2), "ConstantPad3d(padding=[0, 0, 0, 0, 0, 0], value=-2)"},
      {nn.ReflectionPad1d({2, 1}), "ReflectionPad1d([2, 1])"},
      {nn.ReflectionPad3d(1), "ReflectionPad3d([1, 1, 1, 1, 1, 1])"},
      {nn.ReplicationPad2d(1), "ReplicationPad2d([1, 1, 1, 1])"},
      {nn.CircularPad2d(1), "CircularPad2d([1, 1, 1, 1])"},
      {nn.CosineSimilarity(), "CosineSimilarity()"},
      {nn.PairwiseDistance(), "PairwiseDistance()"},
      {nn.Softmax2d(), "Softmax2d()"},
      {nn.ChannelShuffle(3), "ChannelShuffle(groups=3)"},
      {nn.Unfold(2), "Unfold(kernel_size=2, dilation=1, padding=0, stride=1)"},
      {nn.Unfold({2, 3}, {dilation = 2, padding = 1, stride = {1, 2}}),
       "Unfold(kernel_size=[2, 3], dilation=2, padding=1, stride=[1, 2])"},
      {nn.Fold({4, 5}, 2), "Fold(output_size=[4, 5], kernel_size=2, dilation=1, padding=0, stride=1)"},
      {nn.UpsamplingNearest2d(nil, 2), "UpsamplingNearest2d(scale_factor=2, mode=\"nearest\")"},
      {nn.UpsamplingBilinear2d({3, 4}), "UpsamplingBilinear2d(size=[3, 4], mode=\"bilinear\")"},
      {nn.Dropout1d(), "Dropout1d(p=0.5)"},
      {nn.Dropout3d(0.2, true), "Dropout3d(p=0.2, inplace=true)"},
      {nn.AlphaDropout(0.3), "AlphaDropout(p=0.3)"},
      {nn.FeatureAlphaDropout(), "FeatureAlphaDropout(p=0.5)"},
      {nn.Bilinear(2, 3, 4), "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=true)"},
      {nn.Bilinear(2, 3, 4, false), "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=false)"},
      {nn.InstanceNorm3d(3), "InstanceNorm3d(3, eps=1e-05, momentum=0.1, affine=false, track_running_stats=false)"},
      {nn.AdaptiveMaxPool3d(2), "AdaptiveMaxPool3d(output_size=2)"},
      {nn.AdaptiveMaxPool3d({2, nil, 3}, true), "AdaptiveMaxPool3d(output_size=[2, nil, 3])"},
      {nn.MaxUnpool1d(2), "MaxUnpool1d(kernel_size=2, stride=2, padding=0)"},
      {nn.MaxUnpool3d(2, {stride = 1}), "MaxUnpool3d(kernel_size=2, stride=1, padding=0)"},
    }
    for _, w in ipairs(want) do
      assert.are.equal(w[2], first_line(w[1]))
    end
  end)

  it("the parameter containers list their parameters", function()
    local pl = nn.ParameterList({ember.ones(2), ember.zeros(2, 3)})
    assert.are.equal("ParameterList(\n  (0): Parameter(shape=[2], dtype=float32)\n"
                     .. "  (1): Parameter(shape=[2, 3], dtype=float32)\n)\nTotal parameters: 8", tostring(pl))
    local pd = nn.ParameterDict({b = ember.ones(2), a = ember.ones(3, {dtype = "float64"})})
    assert.are.equal("ParameterDict(\n  (a): Parameter(shape=[3], dtype=float64)\n"
                     .. "  (b): Parameter(shape=[2], dtype=float32)\n)\nTotal parameters: 5", tostring(pd))
  end)
end)

-- ---- state dicts -----------------------------------------------------------------------------

describe("more nn layers: state_dict names are PyTorch's", function()
  local function model()
    local m = nn.Module()
    m.pl = nn.ParameterList({ember.ones(2), ember.zeros(3)})
    m.pd = nn.ParameterDict({b = ember.ones(2), a = ember.ones(3)})
    m.bil = nn.Bilinear(2, 3, 4)
    m.inorm = nn.InstanceNorm3d(3, {affine = true, track_running_stats = true})
    m.bil2 = nn.Bilinear(2, 2, 1, false)
    return m
  end

  it("in PyTorch's order", function()
    local keys = {}
    for k in pairs(model():state_dict()) do keys[#keys + 1] = k end
    assert.are.same(FIX.state_dict_keys, keys)
  end)

  it("load into a fresh model, values and all", function()
    local a, b = model(), model()
    ember.no_grad(function() for _, p in ipairs(a:parameters()) do p:copy_(ember.randn(p.shape)) end end)
    local r = b:load_state_dict(a:state_dict())
    assert.are.same({}, r.missing_keys)
    for k, v in pairs(a:state_dict()) do assert(b:state_dict()[k]:equal(v), k) end
  end)
end)

-- ---- the parameter containers ----------------------------------------------------------------

describe("nn.ParameterList", function()
  it("registers tensors as parameters named 0, 1, ...; indexing is 1-based", function()
    local w = nn.Parameter(ember.ones(2))
    local pl = nn.ParameterList({w, ember.zeros(3)})
    assert.are.equal(2, #pl)
    assert(rawequal(pl[1], w), "a parameter is kept as it is")
    assert.is_true(pl[2].requires_grad and pl[2].is_leaf)
    assert(rawequal(pl[-1], pl[2]))
    assert.is_nil(pl[3])
    local names = {}
    for n in pl:named_parameters() do names[#names + 1] = n end
    assert.are.same({"0", "1"}, names)
  end)

  it("append, extend, replace by index, ipairs, and the optimizer sees them", function()
    local pl = nn.ParameterList()
    assert(rawequal(pl:append(ember.ones(1)), pl))
    pl:extend({ember.ones(2), ember.ones(3)}):extend(nn.ParameterList({ember.ones(4)}))
    local sizes = {}
    for i, p in ipairs(pl) do sizes[i] = p:numel() end
    assert.are.same({1, 2, 3, 4}, sizes)
    pl[2] = ember.full({2}, 5.0)
    assert.are.equal(5, pl[2][1]:item())
    assert.are.equal(10, pl:num_parameters())
    assert.are.equal(4, #pl:parameters())
    local loss = pl[1]:sum() + pl[2]:sum()
    loss:backward()
    h.check(pl[2].grad, {1, 1})
  end)

  it("refuses non-tensors and positions past the end", function()
    local pl = nn.ParameterList({ember.ones(1)})
    local e = err(function() pl:append(3) end)
    has(e, "ParameterList: item 2 must be a tensor, got number"); has(e, THIS_FILE)
    has(err(function() pl[3] = ember.ones(1) end), "ParameterList: index 3 out of range for 1 parameters")
    has(err(function() nn.ParameterList(5) end), "ParameterList: expected a list of tensors, got number")
    has(err(function() pl:extend(nn.Linear(1, 1)) end), "ParameterList: expected a list of tensors, got a module")
  end)
end)

describe("nn.ParameterDict", function()
  it("keys sorted from a table, in order from a list of pairs; get, set, remove", function()
    local d = nn.ParameterDict({b = ember.ones(2), a = ember.ones(3)})
    assert.are.same({"a", "b"}, d:keys())
    local e = nn.ParameterDict({{"z", ember.ones(1)}, {"y", ember.ones(2)}})
    assert.are.same({"z", "y"}, e:keys())
    d.c = ember.zeros(4)
    d["d"] = nn.Parameter(ember.zeros(1))
    assert.are.equal(4, #d)
    assert.is_true(d.c.requires_grad)
    assert.is_true(d:contains("c"))
    assert.is_false(d:contains("zz"))
    assert.are.equal(7, d:get("zz", 7))
    assert(rawequal(d:get("c"), d.c))
    d.c = nil
    assert.are.same({"a", "b", "d"}, d:keys())
    assert.are.equal(1, d:pop("d"):numel())
    local seen = {}
    for k, p in pairs(d) do seen[#seen + 1] = k .. p:numel() end
    assert.are.same({"a3", "b2"}, seen)
    assert.are.equal(2, #d:values())
    d:update(e)
    assert.are.same({"a", "b", "z", "y"}, d:keys())
    d:clear()
    assert.are.equal(0, #d)
  end)

  it("refuses keys that are not strings or name its methods, and non-tensor values", function()
    local d = nn.ParameterDict()
    has(err(function() d.keys = ember.ones(1) end),
        "ParameterDict: the key 'keys' is the name of a method of ParameterDict; choose another")
    has(err(function() d[3] = ember.ones(1) end), "ParameterDict: keys must be strings, got a number")
    has(err(function() d:update({x = 3}) end), "ParameterDict: the value for 'x' must be a tensor, got number")
    has(err(function() d:update({3}) end), "ParameterDict:update: item 1 must be a {name, tensor} pair")
    has(err(function() d:pop("q") end), "ParameterDict:pop: no key 'q'")
  end)
end)

-- ---- the random dropouts -----------------------------------------------------------------------

describe("channel dropout (dropout1d, dropout2d, dropout3d)", function()
  it("zeroes whole channels and scales the rest by 1/(1-p), batched and unbatched", function()
    ember.manual_seed(5)
    -- fn, shape, the number of spatial dims (the last ones)
    for _, c in ipairs{{F.dropout1d, {8, 16, 3}, 1}, {F.dropout1d, {16, 3}, 1}, {F.dropout3d, {8, 16, 2, 1, 2}, 3},
                        {F.dropout3d, {16, 2, 1, 2}, 3}, {F.dropout2d, {8, 16, 3}, 1}} do
      local y = c[1](ember.ones(c[2]), 0.25)
      local per_channel = y:flatten(-c[3], -1)
      local vals = per_channel:amax(-1)
      assert(per_channel:amin(-1):eq(vals):all():item(), "a channel mixes values")
      assert(vals:eq(0):logical_or((vals - 4 / 3):abs():lt(1e-6)):all():item(), "values other than 0 and 1/(1-p)")
      local kept = vals:gt(0):float():mean():item()
      assert(kept > 0.5 and kept < 0.95, "kept fraction " .. kept)
    end
  end)

  it("is the identity when not training or p is 0; zeros when p is 1; in place when asked", function()
    local x = ember.randn(2, 3, 4)
    assert(rawequal(F.dropout1d(x, 0.5, false), x))
    local z = ember.ones(1, 1, 1, 1)
    assert(rawequal(F.dropout3d(z, 0), z))
    h.check(F.dropout1d(ember.ones(1, 2, 2), 1), {{{0, 0}, {0, 0}}})
    local y = ember.ones(2, 4)
    assert(rawequal(F.dropout1d(y, 0.5, true, true), y))
    assert(y:eq(0):logical_or(y:eq(2)):all():item())
  end)

  it("the modules drop in training and pass through after eval()", function()
    local x = ember.ones(4, 8, 5)
    local m = nn.Dropout1d(0.5)
    assert.is_false(m(x):equal(x))
    m:eval()
    assert(rawequal(m(x), x))
    local m3 = nn.Dropout3d(0.5)
    m3:eval()
    local z = ember.ones(1, 2, 1, 1, 1)
    assert(rawequal(m3(z), z))
  end)
end)

describe("alpha dropout", function()
  it("gives PyTorch's two values (dropped, kept), in the right proportion", function()
    ember.manual_seed(7)
    for _, c in ipairs(FIX.alpha_dropout) do
      local x = ember.full({2, 4000}, c.x, {dtype = "float64"})
      local y = F[c.fn](x, c.p, true)
      local dropped = (y - c.dropped):abs():lt(1e-12)
      local kept = (y - c.kept):abs():lt(1e-12)
      assert(dropped:logical_or(kept):all():item(), c.fn .. ": a value that is neither")
      local frac = dropped:double():mean():item()
      -- 8000 draws (a 2-D input has one element per channel): within 4 standard deviations
      assert(math.abs(frac - c.p) < 0.03, c.fn .. " p " .. c.p .. ": dropped " .. frac)
      if c.fn == "feature_alpha_dropout" then
        local yc = F[c.fn](ember.full({4, 50, 3}, c.x, {dtype = "float64"}), c.p, true)
        assert(yc:amin(3):eq(yc:amax(3)):all():item(), "a channel mixes values")
      end
    end
  end)

  it("passes the gradient a to the kept entries and none to the dropped", function()
    ember.manual_seed(3)
    local x = ember.randn(50, {dtype = "float64"}):requires_grad_()
    local y = F.alpha_dropout(x, 0.5, true)
    y:sum():backward()
    local a = 1 / math.sqrt((1.7580993408473766 ^ 2 * 0.5 + 1) * 0.5)
    local g = x.grad
    assert(g:eq(0):logical_or((g - a):abs():lt(1e-12)):all():item())
    -- kept: y = a x + b, so the kept entries' y - a x are one constant
    local kept = g:gt(0)
    local b = (y - x * a):detach():masked_select(kept)
    assert((b - b[1]):abs():max():item() < 1e-12)
  end)

  it("defaults to training = false as PyTorch's functions; the modules follow train/eval", function()
    local x = ember.randn(3, 4)
    assert(rawequal(F.alpha_dropout(x), x))
    assert(rawequal(F.feature_alpha_dropout(x, 0.5), x))
    assert(rawequal(F.alpha_dropout(x, 0, true), x))
    h.check(F.alpha_dropout(ember.ones(2), 1, true), {0, 0})
    local m = nn.AlphaDropout(0.5)
    assert.is_false(m(x):equal(x))
    m:eval()
    assert(rawequal(m(x), x))
    local fm = nn.FeatureAlphaDropout(0.5)
    assert.is_false(fm(ember.ones(4, 6, 2)):equal(ember.ones(4, 6, 2)))
    local y = ember.ones(3, 5)
    assert(rawequal(F.alpha_dropout(y, 0.5, true, true), y))
  end)
end)

-- ---- Bilinear ---------------------------------------------------------------------------------

describe("nn.Bilinear", function()
  it("draws weight and bias from U(-1/sqrt(in1), 1/sqrt(in1)), as PyTorch", function()
    ember.manual_seed(1)
    local m = nn.Bilinear(16, 3, 40, {dtype = "float64"})
    assert.are.same({40, 16, 3}, m.weight.shape)
    assert.are.same({40}, m.bias.shape)
    assert.are.equal("float64", m.weight.dtype)
    for _, p in ipairs{m.weight, m.bias} do
      assert(p:abs():max():item() <= 0.25)
    end
    assert(m.weight:abs():max():item() > 0.2, "the whole range is used")
    local before = m.weight:clone()
    m:reset_parameters()
    assert.is_false(m.weight:equal(before))
  end)

  it("loads a PyTorch state dict by its names", function()
    local m = nn.Bilinear(2, 3, 1)
    m:load_state_dict({weight = ember.ones(1, 2, 3), bias = ember.full({1}, 0.5)})
    h.check(m(ember.ones(2), ember.ones(3)), {6.5})
  end)
end)

-- ---- the in-place forms --------------------------------------------------------------------------

describe("the in-place activations F.X_", function()
  it("overwrite x with F.X's values and return x", function()
    local forms = {
      {"relu_", {}, F.relu, {}}, {"elu_", {0.5}, F.elu, {0.5}}, {"leaky_relu_", {0.2}, F.leaky_relu, {0.2}},
      {"hardtanh_", {-0.5, 0.5}, F.hardtanh, {-0.5, 0.5}}, {"selu_", {}, F.selu, {}},
      {"celu_", {{alpha = 2}}, F.celu, {2}}, {"threshold_", {0.1, 20}, F.threshold, {0.1, 20}},
      {"rrelu_", {0.1, 0.3}, F.rrelu, {0.1, 0.3}},
    }
    for _, c in ipairs(forms) do
      local x = T({-2, -0.5, 0, 0.25, 3})
      local want = c[3](x, table.unpack(c[4]))
      local got = F[c[1]](x, table.unpack(c[2]))
      assert(rawequal(got, x), c[1] .. " returns x")
      assert(x:equal(want), c[1] .. ": " .. tostring(x) .. " vs " .. tostring(want))
    end
  end)

  it("are refused on a tensor autograd records, and name themselves in errors", function()
    local x = ember.randn(3):requires_grad_()
    local e = err(function() F.elu_(x) end)
    has(e, "elu_: in-place operation on a tensor that requires grad; use the out-of-place form F.elu"); has(e, THIS_FILE)
    has(err(function() F.relu_(x * 2) end), "relu_:")
    has(err(function() F.hardtanh_(ember.tensor({1, 2})) end), "hardtanh_: expected a floating-point input, got int64")
    has(err(function() F.hardtanh_(ember.randn(2), 2, 1) end), "hardtanh_: min_val (2) must not be greater than max_val (1)")
    has(err(function() F.celu_(ember.randn(2), 0) end), "celu_: alpha must not be 0")
    has(err(function() F.threshold_(ember.randn(2), "a", 1) end), "threshold_: threshold and value must be numbers")
    has(err(function() F.selu_(ember.randn(2), true) end), "selu_: too many positional arguments")
    has(err(function() F.leaky_relu_("x") end), "leaky_relu_: input must be a tensor, got string")
    -- under no_grad, as PyTorch, a parameter may be changed in place
    local p = nn.Parameter(T({-1, 1}))
    ember.no_grad(function() F.leaky_relu_(p, 0.5) end)
    h.check(p, {-0.5, 1})
  end)
end)

-- ---- bad input -----------------------------------------------------------------------------------

describe("more nn layers and functions: bad input", function()
  local cases = {
    {function() local _ = nn.ZeroPad2d({1, 2}) end,
     "ZeroPad2d: padding must be an integer or a list of 4 integers (left, right, top, bottom), got a list of 2"},
    {function() local _ = nn.ZeroPad1d(1.5) end, "ZeroPad1d: padding must be an integer or a list of 2 integers"},
    {function() local _ = nn.ReflectionPad1d({1, "a"}) end, "ReflectionPad1d: padding must hold integers, got a"},
    {function() local _ = nn.ConstantPad2d(1) end, "ConstantPad2d: value is required"},
    {function() local _ = nn.ConstantPad1d(1, "x") end, "ConstantPad1d: value must be a number, got x"},
    {function() local _ = nn.ZeroPad1d(1, 2) end, "ZeroPad1d: too many positional arguments"},
    {function() local _ = nn.CircularPad1d(1)(ember.ones(4)) end,
     "CircularPad1d([1, 1]): expected a 2-D (unbatched) or 3-D (batched) input, got [4]"},
    {function() local _ = nn.ReflectionPad2d(1)(ember.ones(2, 3, 4, 5, 6)) end,
     "ReflectionPad2d([1, 1, 1, 1]): pad: mode \"reflect\" pads the last 1-3 dims"},
    {function() local _ = nn.ReflectionPad1d(4)(ember.ones(1, 4)) end,
     "ReflectionPad1d([4, 4]): pad: reflect padding {4, 4} of dim 2 must be less than its size 4"},
    {function() local _ = nn.ZeroPad2d(1)(ember.ones(3)) end, "ZeroPad2d([1, 1, 1, 1]): pad: 4 pad values pad 2 dims"},
    {function() local _ = nn.ZeroPad1d(1)("x") end, "ZeroPad1d: expected a tensor as input, got string"},
    {function() local _ = nn.CosineSimilarity(1.5) end, "CosineSimilarity: dim must be an integer"},
    {function() local _ = nn.CosineSimilarity()(ember.ones(2, 3), ember.ones(2, 4)) end,
     "cosine_similarity: x1 [2, 3] and x2 [2, 4] cannot be broadcast together"},
    {function() local _ = nn.PairwiseDistance({keepdim = 1}) end, "PairwiseDistance: keepdim must be a boolean, got 1"},
    {function() local _ = nn.Softmax2d()(ember.ones(2, 3)) end,
     "Softmax2d: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got [2, 3]"},
    {function() local _ = nn.ChannelShuffle(0) end, "ChannelShuffle: groups must be an integer >= 1, got 0"},
    {function() local _ = F.channel_shuffle(ember.ones(2, 6, 3), 4) end,
     "channel_shuffle: the channels of [2, 6, 3] (6) must be divisible by groups (4)"},
    {function() local _ = F.channel_shuffle(ember.ones(2, 6), 2) end,
     "channel_shuffle: expected an input with more than 2 dims [N, C, *], got [2, 6]"},
    {function() local _ = F.channel_shuffle(ember.ones(2, 6, 1), 1.5) end,
     "channel_shuffle: groups must be a positive integer, got 1.5"},
    {function() local _ = nn.Unfold({2, 2, 2}) end, "Unfold: kernel_size must be an integer or a list of 2 integers"},
    {function() local _ = nn.Fold({4, 4}, 2, {padding = -1}) end, "Fold: padding must be integers >= 0, got -1"},
    {function() local _ = nn.Fold(0, 2) end, "Fold: output_size must be integers >= 1, got 0"},
    {function() local _ = nn.Unfold(2)(ember.ones(4)) end, "unfold: expected a [N, C, H, W] or [C, H, W] input, got [4]"},
    {function() local _ = nn.UpsamplingBilinear2d(nil, 2)(ember.ones(1, 2, 3)) end,
     "interpolate: mode \"bilinear\" needs a 4-D input, got [1, 2, 3]"},
    {function() local _ = nn.UpsamplingNearest2d(1, 2, 3) end, "UpsamplingNearest2d: too many positional arguments"},
    {function() local _ = nn.Dropout1d(2) end, "Dropout1d: p must be a probability in [0, 1], got 2"},
    {function() local _ = F.dropout1d(ember.ones(2, 3, 4, 5)) end,
     "dropout1d: expected a [N, C, L] or [C, L] input, got [2, 3, 4, 5]"},
    {function() local _ = F.dropout3d(ember.ones(3, 4, 2)) end,
     "dropout3d: expected a [N, C, D, H, W] or [C, D, H, W] input, got [3, 4, 2]"},
    {function() local _ = F.alpha_dropout(ember.ones(2), 1.5, true) end,
     "alpha_dropout: p must be a probability in [0, 1], got 1.5"},
    {function() local _ = F.feature_alpha_dropout(ember.ones(3), 0.5, true) end,
     "feature_alpha_dropout: expected an input with at least 2 dims [N, C, ...], got [3]"},
    {function() local _ = F.alpha_dropout("x") end, "alpha_dropout: input must be a tensor, got string"},
    {function() local _ = nn.Bilinear(2, -1, 3) end, "Bilinear: in2_features must be an integer >= 0, got -1"},
    {function() local _ = nn.Bilinear(2, 3, 4)(ember.ones(5, 2), ember.ones(5, 4)) end,
     "bilinear: input1 [5, 2] and input2 [5, 4] do not fit weight [4, 2, 3] (expected [..., 2] and [..., 3])"},
    {function() local _ = F.bilinear(ember.ones(2, 3), ember.ones(3, 4), ember.ones(5, 3, 4)) end,
     "bilinear: input1 [2, 3] and input2 [3, 4] must have the same dims but the last"},
    {function() local _ = F.bilinear(ember.ones(3), ember.ones(4), ember.ones(3, 4)) end,
     "bilinear: weight must be 3-D [out, in1, in2], got [3, 4]"},
    {function() local _ = F.bilinear(ember.ones(3), ember.ones(4), ember.ones(5, 3, 4), ember.ones(4)) end,
     "bilinear: bias must have shape [5] (weight [5, 3, 4]), got [4]"},
    {function() local _ = F.bilinear(ember.ones(3), ember.ones(4, {dtype = "float64"}), ember.ones(5, 3, 4)) end,
     "bilinear: the inputs, weight and bias must have one dtype, got float32 and float64"},
    {function() local _ = F.bilinear(ember.ones(3), nil, ember.ones(5, 3, 4)) end, "bilinear: input2 must be a tensor, got nil"},
    {function() local _ = nn.InstanceNorm3d(3)(ember.ones(2, 3, 4)) end,
     "InstanceNorm3d(3, eps=1e-05, momentum=0.1, affine=false, track_running_stats=false): expected a 4-D (unbatched) "
     .. "or 5-D (batched) input, got [2, 3, 4]"},
    {function() local _ = nn.InstanceNorm3d(3, {affine = true})(ember.ones(2, 2, 2, 2, 2)) end,
     "expected the input's channels (dim 2) to match num_features (3), got [2, 2, 2, 2, 2]"},
    {function() local _ = nn.InstanceNorm3d(0) end, "InstanceNorm3d: num_features must be an integer >= 1, got 0"},
    {function() local _ = nn.InstanceNorm3d(3, {eps = -1}) end, "InstanceNorm3d: eps must be a number >= 0, got -1"},
    {function() local _ = nn.AdaptiveMaxPool3d("x") end, "AdaptiveMaxPool3d: output_size must be an integer or a list"},
    {function() local _ = nn.AdaptiveMaxPool3d(1)(ember.ones(2, 2)) end,
     "AdaptiveMaxPool3d(output_size=1): adaptive_max_pool3d: expected a 4-D (unbatched) or 5-D (batched) input"},
    {function() local _ = nn.MaxUnpool1d({2, 2}) end, "MaxUnpool1d: kernel_size must be an integer or a list of 1 integers"},
    {function() local _ = nn.MaxUnpool3d(2, {padding = -1}) end, "MaxUnpool3d: padding must be integers >= 0, got -1"},
    {function() local _ = F.max_unpool1d(ember.ones(1, 1, 2), ember.tensor({{{1, 9}}}), 2) end,
     "max_unpool1d: index 9 out of range for output planes of 4 = 4 positions (indices are 1-based)"},
    {function() local _ = F.max_unpool3d(ember.ones(1, 1, 1, 1, 1), ember.tensor({{{{{0}}}}}), 2) end,
     "max_unpool3d: index 0 out of range for output planes of 2 x 2 x 2 = 8 positions"},
    {function() local _ = F.max_unpool3d(ember.ones(1, 1, 2), ember.ones(1, 1, 2), 2) end,
     "max_unpool3d: expected a [N, C, D, H, W] or [C, D, H, W] input, got [1, 1, 2]"},
    {function() local _ = F.max_unpool1d(ember.ones(1, 1, 2), ember.ones(1, 1, 2), 2) end,
     "max_unpool1d: indices must be an int64 tensor of the input's shape [1, 1, 2], got float32 [1, 1, 2]"},
    {function() local _ = F.max_unpool1d(ember.ones(1, 1, 2), ember.tensor({{{1, 2}}}), 2, {output_size = {9}}) end,
     "max_unpool1d: output_size [9] must be between [2] and [6] (exclusive) for input [1, 1, 2]"},
    {function() local _ = F.max_pool2d_with_indices(ember.ones(4), 2) end,
     "max_pool2d_with_indices: expected a 3-D (unbatched) or 4-D (batched) input, got [4]"},
    {function() local _ = F.max_pool1d_with_indices(ember.ones(1, 4), 2, {strides = 1}) end,
     "max_pool1d_with_indices: unknown option"},
    {function() local _ = F.adaptive_max_pool3d_with_indices(ember.ones(2), 1) end, "adaptive_max_pool3d_with_indices: "},
    {function() local _ = F.upsample(ember.ones(1, 1, 2)) end, "upsample: give exactly one of size and scale_factor"},
    {function() local _ = F.upsample_bilinear(ember.ones(1, 1, 2), 4) end,
     "upsample_bilinear: mode \"bilinear\" needs a 4-D input, got [1, 1, 2]"},
    {function() local _ = F.upsample_nearest(ember.ones(1, 1, 2), 4, 2) end,
     "upsample_nearest: give exactly one of size and scale_factor"},
  }
  for i, c in ipairs(cases) do
    it(string.format("%d: %s", i, c[2]:sub(1, 60)), function()
      local e = err(c[1])
      has(e, c[2])
      has(e, THIS_FILE)
    end)
  end
end)
