-- nn_extra_spec.lua — the functions and layers of lua/ember/nn/extra.lua: lp_pool1d/2d/3d
-- and nn.LPPool1d/2d/3d, pdist, gumbel_softmax, triplet_margin_with_distance_loss and
-- nn.TripletMarginWithDistanceLoss, multilabel_margin_loss and nn.MultiLabelMarginLoss;
-- and nn.init's deprecated names without the underscore. Values and float64 gradients
-- against PyTorch 2.15 (fixtures/nn_extra.lua, written by
-- scripts/fixtures/make_nn_extra_fixtures.py); gumbel_softmax's formula against PyTorch
-- given PyTorch's noise, and ember's draw through ember.manual_seed; printing; bad input.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local F = nn.functional

local THIS_FILE = "nn_extra_spec.lua:"
local FIX = h.fixture("nn_extra.lua")

local function T(v) return ember.tensor(v, {dtype = "float64"}) end
local function first_line(m) return (tostring(m):match("^[^\n]*")) end

describe("nn extra functions and layers against PyTorch (fixtures)", function()
  for _, c in ipairs(FIX.cases) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

-- ---- gumbel_softmax ------------------------------------------------------------------------

-- The formula, written here independently of ember's: softmax((logits + g) / tau) along
-- dim, and with hard the one-hot of its argmax plus (soft - soft:detach()).
local function gumbel_formula(logits, g, tau, hard, dim)
  local z = (logits + g) / tau
  local d = dim < 0 and dim + math.max(z.ndim, 1) + 1 or dim
  local e = (z - z:amax(d, true):detach()):exp()
  local soft = e / e:sum(d, true)
  if not hard then return soft end
  local idx = soft:detach():argmax(d, true)
  local one_hot = ember.zeros_like(soft):scatter(d, idx, 1)
  return one_hot + (soft - soft:detach())
end

describe("F.gumbel_softmax", function()
  it("matches PyTorch's formula given PyTorch's Gumbel noise (values and gradients)", function()
    for i, c in ipairs(FIX.gumbel) do
      local logits = h.from_spec(c.logits):requires_grad_()
      local out = gumbel_formula(logits, h.from_spec(c.gumbels), c.tau, c.hard, c.dim)
      h.compare("gumbel case " .. i .. " output", out, c.out, 1e-12)
      local g = ember.autograd.grad({(out * h.from_spec(c.weights)):sum()}, {logits})
      h.compare("gumbel case " .. i .. " gradient", g, c.grad, 1e-12)
    end
  end)

  it("draws its noise as -log of an exponential draw from ember's generator (manual_seed)", function()
    for i, c in ipairs(FIX.gumbel) do
      local logits = h.from_spec(c.logits)
      ember.manual_seed(40 + i)
      local g = -ember.empty_like(logits):exponential_():log()
      local x1 = logits:clone():requires_grad_()
      local want = gumbel_formula(x1, g, c.tau, c.hard, c.dim)
      ember.manual_seed(40 + i)
      local x2 = logits:clone():requires_grad_()
      local got = F.gumbel_softmax(x2, c.tau, c.hard, nil, c.dim)
      h.close_tensors("gumbel case " .. i .. " values", got, want, 1e-12)
      local w = h.from_spec(c.weights)
      local g1 = ember.autograd.grad({(want * w):sum()}, {x1})
      local g2 = ember.autograd.grad({(got * w):sum()}, {x2})
      h.close_tensors("gumbel case " .. i .. " gradient", g2, g1, 1e-12)
    end
  end)

  it("gives rows summing to 1; hard: one-hot rows with the soft sample's gradient", function()
    local logits = ember.randn(64, 7, {dtype = "float64"})
    for _, tau in ipairs{0.3, 1, 4} do
      local soft = F.gumbel_softmax(logits, {tau = tau})
      h.close_tensors("row sums", soft:sum(2), ember.ones(64, {dtype = "float64"}), 1e-12)
      assert.is_true(soft:min():item() >= 0)
      local hard = F.gumbel_softmax(logits, tau, true)
      assert.are.same({64, 7}, hard.shape)
      h.close_tensors("one-hot sums", hard:sum(2), ember.ones(64, {dtype = "float64"}), 1e-12)
      assert.are.equal(64, hard:eq(1):sum():item())
      assert.are.equal(64 * 7, hard:eq(1):logical_or(hard:eq(0)):sum():item())
    end
    -- straight through: same noise, same gradient as the soft sample
    local w = ember.randn(64, 7, {dtype = "float64"})
    local xs, xh = logits:clone():requires_grad_(), logits:clone():requires_grad_()
    ember.manual_seed(5)
    local soft = F.gumbel_softmax(xs, 0.5, false)
    ember.manual_seed(5)
    local hard = F.gumbel_softmax(xh, 0.5, true)
    -- the hard sample is the one-hot of the soft one's argmax
    h.close_tensors("hard = one_hot(argmax soft)", hard:detach(),
                    ember.zeros_like(soft):scatter(2, soft:detach():argmax(2, true), 1), 0)
    local gs = ember.autograd.grad({(soft * w):sum()}, {xs})
    local gh = ember.autograd.grad({(hard * w):sum()}, {xh})
    h.close_tensors("straight-through gradient", gh, gs, 1e-12)
  end)

  it("takes dim and the deprecated eps; keeps shape and dtype; 1-D and 0-d logits", function()
    local x = ember.randn(3, 4, 5)
    local y = F.gumbel_softmax(x, {dim = 2, hard = true, eps = 1e-5})
    assert.are.same({3, 4, 5}, y.shape)
    assert.are.equal("float32", y.dtype)
    h.close_tensors("sums along dim 2", y:sum(2), ember.ones(3, 5), 1e-6)
    assert.are.same({6}, F.gumbel_softmax(ember.randn(6)).shape)
    assert.are.equal(1, F.gumbel_softmax(ember.tensor(0.3), 1, true):item())
  end)
end)

-- ---- printing, modules, aliases ---------------------------------------------------------------

describe("nn extra layers: printing and modules", function()
  it("extra_repr shows the arguments as PyTorch's (nil for a stride not given)", function()
    local want = {
      {nn.LPPool1d(2, 3), "LPPool1d(norm_type=2, kernel_size=3, stride=nil, ceil_mode=false)"},
      {nn.LPPool1d(2, 3, 1, true), "LPPool1d(norm_type=2, kernel_size=3, stride=1, ceil_mode=true)"},
      {nn.LPPool2d(1.5, {2, 3}, {stride = {1, 2}}), "LPPool2d(norm_type=1.5, kernel_size=[2, 3], stride=[1, 2], ceil_mode=false)"},
      {nn.LPPool3d(math.huge, 2), "LPPool3d(norm_type=inf, kernel_size=2, stride=nil, ceil_mode=false)"},
      {nn.MultiLabelMarginLoss(), "MultiLabelMarginLoss()"},
      {nn.MultiLabelMarginLoss({reduction = "sum"}), "MultiLabelMarginLoss(reduction=\"sum\")"},
      {nn.TripletMarginWithDistanceLoss({distance_function = F.pairwise_distance}), "TripletMarginWithDistanceLoss()"},
      {nn.TripletMarginWithDistanceLoss({margin = 0.5, swap = true, reduction = "none",
                                         distance_function = F.pairwise_distance}),
       "TripletMarginWithDistanceLoss(margin=0.5, swap=true, reduction=\"none\")"},
    }
    for _, w in ipairs(want) do assert.are.equal(w[2], first_line(w[1])) end
  end)

  it("TripletMarginWithDistanceLoss holds a module distance (PyTorch's default PairwiseDistance) as a child", function()
    local m = nn.TripletMarginWithDistanceLoss()
    assert.are.equal("TripletMarginWithDistanceLoss(\n  (distance_function): PairwiseDistance()\n)",
                     (tostring(m):gsub("\nTotal parameters: 0$", "")))
    assert.are.equal(1, #m:children())
    local cos = nn.CosineSimilarity()
    assert.are.equal(cos, nn.TripletMarginWithDistanceLoss({distance_function = cos}):children()[1])
    local a, p, n = ember.randn(3, 4), ember.randn(3, 4), ember.randn(3, 4)
    h.close_tensors("module = F", m(a, p, n), F.triplet_margin_with_distance_loss(a, p, n), 0)
  end)

  it("nn.init's names without the underscore are the same functions (PyTorch's deprecated aliases)", function()
    for _, k in ipairs{"uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
                       "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"} do
      assert.is_function(nn.init[k], k)
      assert.are.equal(nn.init[k .. "_"], nn.init[k], k)
    end
    assert.is_nil(rawget(nn.init, "zeros"))   -- PyTorch has no init.zeros / init.ones either
    local t = nn.init.constant(ember.empty(2, 2), 0.5)
    h.close_tensors("init.constant", t, ember.full({2, 2}, 0.5), 0)
    ember.manual_seed(3)
    local u1 = nn.init.uniform(ember.empty(5), -1, 1)
    ember.manual_seed(3)
    h.close_tensors("init.uniform", u1, nn.init.uniform_(ember.empty(5), -1, 1), 0)
  end)
end)

-- ---- edge cases computed by hand ------------------------------------------------------------

describe("nn extra: values by hand", function()
  it("lp_pool: the p-norm of each window; norm_type = math.huge is the max |x|", function()
    local x = T({{{3, -4, 1, 2}}})
    h.close_tensors("p = 2", F.lp_pool1d(x, 2, 2), T({{{5, math.sqrt(5)}}}), 1e-15)
    h.close_tensors("p = inf", F.lp_pool1d(x, math.huge, 2), T({{{4, 2}}}), 0)
    h.close_tensors("p = -inf", F.lp_pool1d(x, -math.huge, 2), T({{{3, 1}}}), 0)
  end)

  it("pdist: the upper triangle, i < j with i outer", function()
    local x = T({{0, 0}, {3, 4}, {6, 8}, {0, 1}})
    h.close_tensors("pdist", F.pdist(x), T({5, 10, 1, 5, math.sqrt(18), math.sqrt(36 + 49)}), 1e-15)
    assert.are.same({0}, F.pdist(T({{1, 2}})).shape)
    assert.are.same({0}, F.pdist(ember.zeros(0, 3)).shape)
  end)

  it("multilabel_margin_loss: a row's targets end at its first 0 (PyTorch's -1)", function()
    local x = T({{0.1, 0.2, 0.4, 0.8}})
    -- targets 4 and 1; the 2 after the 0 is ignored: (0.4 + 0.6 + 1.1 + 1.3) / 4
    h.close_tensors("loss", F.multilabel_margin_loss(x, ember.tensor({{4, 1, 0, 2}})), T(0.85), 1e-15)
    -- int32 targets are taken as well
    h.close_tensors("int32", F.multilabel_margin_loss(x, ember.tensor({{4, 1, 0, 2}}, {dtype = "int32"})), T(0.85),
                    1e-15)
    -- no targets: 0
    h.close_tensors("none", F.multilabel_margin_loss(x, ember.tensor({{0, 1, 2, 3}})), T(0), 0)
  end)
end)

-- ---- bad input -------------------------------------------------------------------------------

describe("nn extra: bad input gets a clear error at the caller's line", function()
  local function at_caller(f, ...)
    local e = err(f, ...)
    has(e, THIS_FILE)
    return e
  end

  it("lp_pool", function()
    local x = ember.randn(1, 2, 6)
    has(at_caller(function() local _ = F.lp_pool1d(x, 0, 2) end), "lp_pool1d: norm_type must be a non-zero number")
    has(at_caller(function() local _ = F.lp_pool1d(x, "2", 2) end), "norm_type must be a non-zero number")
    has(at_caller(function() local _ = F.lp_pool1d(x, 0 / 0, 2) end), "norm_type must be a non-zero number")
    has(at_caller(function() local _ = F.lp_pool1d(ember.randn(6), 2, 2) end),
        "lp_pool1d: expected a 2-D (unbatched [C, ...]) or 3-D (batched [N, C, ...]) input, got [6]")
    has(at_caller(function() local _ = F.lp_pool2d(ember.randn(2, 6), 2, 2) end), "lp_pool2d: expected a 3-D")
    has(at_caller(function() local _ = F.lp_pool1d(ember.ones(1, 2, 6, {dtype = "int64"}), 2, 2) end),
        "lp_pool1d: expected a floating-point input, got int64")
    has(at_caller(function() local _ = F.lp_pool1d(x, 2, 0) end), "kernel_size")
    has(at_caller(function() local _ = F.lp_pool1d(x, 2, 2, 0) end), "stride")
    has(at_caller(function() local _ = F.lp_pool1d(x, 2, 7) end), "lp_pool1d")
    has(at_caller(function() local _ = F.lp_pool2d(ember.randn(1, 5, 5), 2, {2, 2, 2}) end), "kernel_size")
    has(at_caller(function() local _ = F.lp_pool1d(x, 2, 2, {padding = 1}) end), "unknown option 'padding'")
    has(at_caller(function() local _ = F.lp_pool1d(x, 2, 2, 2, "yes") end), "ceil_mode must be a boolean")
    has(at_caller(function() local _ = F.lp_pool1d("x", 2, 2) end), "lp_pool1d: input must be a tensor, got string")
    has(at_caller(function() local _ = nn.LPPool2d(0, 2) end), "LPPool2d: norm_type must be a non-zero number")
    has(at_caller(function() local _ = nn.LPPool2d(2, -1) end), "LPPool2d")
    has(at_caller(function() local _ = nn.LPPool1d(2, 2)(ember.randn(4)) end), "lp_pool1d: expected a 2-D")
  end)

  it("pdist", function()
    has(at_caller(function() local _ = F.pdist(ember.randn(3)) end), "pdist: expected a 2-D input [N, M], got [3]")
    has(at_caller(function() local _ = F.pdist(ember.randn(2, 3, 4)) end), "pdist: expected a 2-D input")
    has(at_caller(function() local _ = F.pdist(ember.randn(3, 2), -1) end), "pdist: p must be a non-negative number, got -1")
    has(at_caller(function() local _ = F.pdist(ember.randn(3, 2), "2") end), "pdist: p must be a number")
    has(at_caller(function() local _ = F.pdist(ember.ones(3, 2, {dtype = "int64"})) end),
        "pdist: expected a floating-point input, got int64")
    has(at_caller(function() local _ = F.pdist(ember.randn(3, 2), {q = 1}) end), "unknown option 'q'")
  end)

  it("gumbel_softmax", function()
    local x = ember.randn(2, 3)
    has(at_caller(function() local _ = F.gumbel_softmax(ember.ones(3, {dtype = "int64"})) end),
        "gumbel_softmax: expected a floating-point logits, got int64")
    has(at_caller(function() local _ = F.gumbel_softmax(x, "1") end), "gumbel_softmax: tau must be a number")
    has(at_caller(function() local _ = F.gumbel_softmax(x, 1, 1) end), "gumbel_softmax: hard must be a boolean")
    has(at_caller(function() local _ = F.gumbel_softmax(x, {dim = 3}) end),
        "gumbel_softmax: dim must be an integer in 1..2 or -2..-1 for logits [2, 3], got 3")
    has(at_caller(function() local _ = F.gumbel_softmax(x, {dim = 0}) end), "dim must be an integer")
    has(at_caller(function() local _ = F.gumbel_softmax(x, {temperature = 1}) end), "unknown option 'temperature'")
  end)

  it("triplet_margin_with_distance_loss", function()
    local a, p, n = ember.randn(3, 4), ember.randn(3, 4), ember.randn(3, 4)
    local op = "triplet_margin_with_distance_loss"
    has(at_caller(function() local _ = F.triplet_margin_with_distance_loss(a, p, n, {margin = 0}) end),
        op .. ": margin must be greater than 0, got 0")
    has(at_caller(function() local _ = F.triplet_margin_with_distance_loss(a, p, n, {reduction = "avg"}) end),
        op .. ": reduction must be")
    has(at_caller(function() local _ = F.triplet_margin_with_distance_loss(a, ember.randn(4), n) end),
        op .. ": anchor, positive and negative must have the same number of dims, got anchor [3, 4], positive [4]")
    has(at_caller(function() local _ = F.triplet_margin_with_distance_loss(a, p, n, {distance_function = 3}) end),
        op .. ": distance_function must be a function or a module, got number")
    has(at_caller(function()
      local _ = F.triplet_margin_with_distance_loss(a, p, n, {distance_function = function() return 1 end})
    end), op .. ": distance_function(anchor, positive) must return a tensor, got number")
    has(at_caller(function() local _ = F.triplet_margin_with_distance_loss(a, p, n, {swap = "yes"}) end),
        op .. ": swap must be a boolean")
    has(at_caller(function() local _ = F.triplet_margin_with_distance_loss(a, p, n, 1) end), "too many positional")
    has(at_caller(function() local _ = F.triplet_margin_with_distance_loss(a, p, "n") end),
        op .. ": negative must be a tensor, got string")
    has(at_caller(function() local _ = nn.TripletMarginWithDistanceLoss({margin = -1}) end),
        "TripletMarginWithDistanceLoss: margin must be greater than 0, got -1")
    has(at_caller(function() local _ = nn.TripletMarginWithDistanceLoss({distance_function = {}}) end),
        "TripletMarginWithDistanceLoss: distance_function must be a function or a module")
    has(at_caller(function() local _ = nn.TripletMarginWithDistanceLoss()(a, p) end),
        "TripletMarginWithDistanceLoss: expected 3 tensors (anchor, positive, negative), got 2 arguments")
  end)

  it("multilabel_margin_loss", function()
    local x, y = ember.randn(2, 4), ember.tensor({{1, 2, 0, 0}, {4, 0, 0, 0}})
    local op = "multilabel_margin_loss"
    has(at_caller(function() local _ = F.multilabel_margin_loss(x, ember.tensor({{1, 5, 0, 0}, {4, 0, 0, 0}})) end),
        op .. ": target values must be class indices in 1..4, or 0 to end a row's list; got values in 0..5")
    has(at_caller(function() local _ = F.multilabel_margin_loss(x, ember.tensor({{1, -1, 0, 0}, {4, 0, 0, 0}})) end),
        "got values in -1..4")
    has(at_caller(function() local _ = F.multilabel_margin_loss(x, y:to("float32")) end),
        op .. ": target must be an integer tensor of class indices (int64), got float32")
    has(at_caller(function() local _ = F.multilabel_margin_loss(x, y:narrow(2, 1, 3)) end),
        op .. ": target [2, 3] must have the input's shape [2, 4]")
    has(at_caller(function() local _ = F.multilabel_margin_loss(ember.randn(2, 3, 4), ember.ones(2, 3, 4, {dtype = "int64"})) end),
        op .. ": expected a non-empty input [C] or [N, C] (N may be 0), got [2, 3, 4]")
    has(at_caller(function() local _ = F.multilabel_margin_loss(ember.randn(2, 0), ember.ones(2, 0, {dtype = "int64"})) end),
        "got [2, 0]")
    has(at_caller(function() local _ = F.multilabel_margin_loss(x:to("int64"), y) end),
        op .. ": expected a floating-point input, got int64")
    has(at_caller(function() local _ = F.multilabel_margin_loss(x, y, {reduction = "max"}) end), "reduction must be")
    has(at_caller(function() local _ = F.multilabel_margin_loss(x, y, {reduce = true}) end), "reduce is deprecated")
    has(at_caller(function() local _ = nn.MultiLabelMarginLoss({reduction = "all"}) end),
        "MultiLabelMarginLoss: reduction must be")
    has(at_caller(function() local _ = nn.MultiLabelMarginLoss()(x) end),
        "MultiLabelMarginLoss: expected 2 tensors (input, target), got 1 arguments")
  end)
end)

-- ---- random arguments ------------------------------------------------------------------------

describe("nn extra: random (mostly wrong) arguments fail clearly, never crash", function()
  local dtypes = {"float32", "float64", "int64", "bool", "float16"}
  local function random_tensor()
    local dt = dtypes[math.random(#dtypes)]
    local shapes = {{}, {0, 3}, {3, 4}, {2, 3, 4}, {6}, {1, 2, 3, 4}, {2, 1, 3, 3, 3}}
    local s = shapes[math.random(#shapes)]
    return ember.randn(s):mul(3):to(dt)
  end
  local function random_arg()
    local choices = {
      random_tensor, random_tensor, random_tensor,
      function() return math.random(-4, 4) end,
      function() return math.random() * 4 - 2 end,
      function() return "x" end,
      function() return {} end,
      function() return {math.random(-3, 3), math.random(-3, 3)} end,
      function() return nil end,
      function() return true end,
      function() return math.huge end,
      function() return {reduction = "sum"} end,
      function() return {dim = math.random(-3, 3)} end,
      function() return -1 end,
    }
    return choices[math.random(#choices)]()
  end
  local fns = {}
  for _, k in ipairs{"lp_pool1d", "lp_pool2d", "lp_pool3d", "pdist", "gumbel_softmax",
                     "triplet_margin_with_distance_loss", "multilabel_margin_loss"} do
    fns[#fns + 1] = {"F." .. k, F[k]}
  end
  for _, k in ipairs{"LPPool1d", "LPPool2d", "LPPool3d", "TripletMarginWithDistanceLoss", "MultiLabelMarginLoss"} do
    fns[#fns + 1] = {"nn." .. k, function(...) return nn[k](...) end}
    -- a module built with good arguments, called with random ones
    local good = {LPPool1d = {2, 2}, LPPool2d = {2, 2}, LPPool3d = {2, 2}}
    fns[#fns + 1] = {"nn." .. k .. "()", function(...) return nn[k](table.unpack(good[k] or {}))(...) end}
  end
  for seed = 1, 4 do
    it("seed " .. seed, function()
      math.randomseed(seed)
      for _ = 1, 400 do
        local f = fns[math.random(#fns)]
        local n = math.random(0, 4)
        local a = {}
        for i = 1, n do a[i] = random_arg() end
        local ok, e = pcall(f[2], table.unpack(a, 1, n))
        if not ok then
          local msg = tostring(e):gsub("^[^:]+:%d+: ", "")
          assert(msg:match("^[%w_%.]+: "), f[1] .. " raised an unclear error: " .. tostring(e))
        end
      end
    end)
  end
end)
