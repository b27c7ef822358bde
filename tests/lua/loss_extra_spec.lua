-- loss_extra_spec.lua — the losses of ember.nn.functional beyond MSE and cross entropy
-- (l1, smooth_l1, huber, BCE, KL, Poisson and Gaussian NLL, the margin and embedding
-- losses, multilabel soft margin, weighted NLL) and the distances (normalize,
-- cosine_similarity, pairwise_distance): values with every reduction and gradients
-- against PyTorch 1.13 (tests/lua/fixtures/nnf_loss.lua, written by
-- scripts/fixtures/make_nnf_fixtures.py), gradcheck in float64, the loss modules, and
-- the errors bad input gets.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local F = nn.functional

local THIS_FILE = "loss_extra_spec.lua:"

describe("losses and distances against PyTorch (fixtures)", function()
  for _, c in ipairs(h.fixture("nnf_loss.lua")) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

-- ---- gradcheck (float64, non-contiguous inputs) ---------------------------------------------

describe("losses: gradcheck", function()
  local gc = h.gradcheck_ok
  local function R(...) return ember.randn(...):to("float64") end
  local y34 = ember.tensor({{1, -1, 1}, {-1, -1, 1}, {1, 1, -1}, {-1, 1, 1}}, {dtype = "float64"})
  it("elementwise losses, every reduction", function()
    ember.manual_seed(21)
    local t = R(3, 4)
    for _, r in ipairs{"none", "mean", "sum"} do
      local o = {reduction = r}
      gc(function(x) return F.l1_loss(x:t(), t, o) end, {R(4, 3)})
      gc(function(x) return F.smooth_l1_loss(x:t(), t, {beta = 0.5, reduction = r}) end, {R(4, 3)})
      gc(function(x) return F.huber_loss(x:t(), t, {delta = 0.7, reduction = r}) end, {R(4, 3)})
      gc(function(x, y) return F.binary_cross_entropy(x:t(), y, o) end,
         {ember.rand(4, 3, {dtype = "float64"}) * 0.9 + 0.05, ember.rand(3, 4, {dtype = "float64"})})
      gc(function(x, y, pw) return F.binary_cross_entropy_with_logits(x:t(), y, {pos_weight = pw, reduction = r}) end,
         {R(4, 3), ember.rand(3, 4, {dtype = "float64"}), ember.rand(4, {dtype = "float64"}) + 0.5})
      gc(function(x, y) return F.kl_div(x:t(), y, {reduction = r}) end,
         {R(4, 3):log_softmax(1), ember.rand(3, 4, {dtype = "float64"}) + 0.1})
      gc(function(x) return F.poisson_nll_loss(x:t(), t:abs(), {full = true, reduction = r}) end, {R(4, 3)})
      gc(function(x, v) return F.gaussian_nll_loss(x:t(), t, v, {reduction = r}) end,
         {R(4, 3), ember.rand(3, {dtype = "float64"}) + 0.2})
      gc(function(x, y) return F.hinge_embedding_loss(x:t(), y34:t(), {margin = 0.5, reduction = r}) end,
         {R(4, 3)})
      gc(function(x) return F.multilabel_soft_margin_loss(x:t(), y34:t():gt(0):to("float64"), o) end, {R(4, 3)})
    end
  end)
  it("pairwise losses and distances", function()
    ember.manual_seed(22)
    local lab = ember.tensor({1, -1, 1})
    gc(function(a, b) return F.cosine_embedding_loss(a:t(), b, lab, {margin = -0.5}) end, {R(4, 3), R(3, 4)})
    gc(function(a, b) return F.margin_ranking_loss(a, b, ember.tensor({1.0, -1.0, 1.0, -1.0}, {dtype = "float64"}), {margin = 0.1}) end,
       {R(4), R(4)})
    gc(function(a, p, n) return F.triplet_margin_loss(a:t(), p, n, {swap = true, p = 1.5, margin = 3}) end,
       {R(4, 3), R(3, 4), R(3, 4)})
    gc(function(a) return F.normalize(a:t(), {p = 3, dim = 1}) end, {R(4, 3)})
    gc(function(a, b) return F.cosine_similarity(a:t(), b, -1) end, {R(4, 3), R(3, 4)})
    gc(function(a, b) return F.pairwise_distance(a:t(), b, 2, 1e-6, true) end, {R(4, 3), R(3, 4)})
    gc(function(lp, w) return F.nll_loss(lp:t(), ember.tensor({1, 3, 2, 4}), {weight = w}) end,
       {R(4, 4):log_softmax(1), ember.rand(4, {dtype = "float64"}) + 0.5})
  end)
end)

-- ---- hand-computed values ---------------------------------------------------------------------

describe("losses: hand-computed values", function()
  local function T(v) return ember.tensor(v, {dtype = "float64"}) end
  it("elementwise", function()
    h.check(F.l1_loss(T{1, 2, 3}, T{2, 2, 5}), 1, 1e-15)
    h.check(F.smooth_l1_loss(T{0, 0}, T{0.5, 3}, {reduction = "none"}), {0.125, 2.5}, 1e-15)
    h.check(F.huber_loss(T{0, 0}, T{0.5, 3}, {delta = 2, reduction = "sum"}), 0.125 + 2 * (3 - 1), 1e-15)
    h.check(F.binary_cross_entropy(T{0.25, 0}, T{1, 1}, {reduction = "none"}), {-math.log(0.25), 100}, 1e-15)
    h.check(F.kl_div(T{{math.log(0.5), math.log(0.5)}}, T{{1, 0}}, {reduction = "batchmean"}), math.log(2), 1e-15)
    h.check(F.poisson_nll_loss(T{0}, T{2}, {reduction = "sum"}), 1, 1e-15)
    h.check(F.gaussian_nll_loss(T{1}, T{3}, T{2}), 0.5 * (math.log(2) + 2), 1e-15)
  end)
  it("pairwise", function()
    h.check(F.cosine_similarity(T{{1, 0}}, T{{1, 1}}), {1 / math.sqrt(2)}, 1e-12)
    h.check(F.pairwise_distance(T{{0, 0}}, T{{3, 4}}, 2, 0), {5}, 1e-15)
    h.check(F.normalize(T{{3, 4}}), {{0.6, 0.8}}, 1e-15)
    h.check(F.margin_ranking_loss(T{1, 2}, T{2, 1}, T{1, 1}, {reduction = "none"}), {1, 0})
    h.check(F.hinge_embedding_loss(T{0.3, 0.3}, T{1, -1}, {reduction = "none"}), {0.3, 0.7}, 1e-15)
    h.check(F.triplet_margin_loss(T{{0, 0}}, T{{3, 4}}, T{{6, 8}}, {eps = 0}), 0, 0)
    h.check(F.cosine_embedding_loss(T{{1, 0}, {1, 0}}, T{{0, 1}, {1, 0}}, ember.tensor({1, -1}), {reduction = "none"}),
            {1, 1}, 1e-11)
  end)
end)

-- ---- modules ------------------------------------------------------------------------------------

describe("loss modules", function()
  ember.manual_seed(23)
  local x, y = ember.randn(3, 4, {dtype = "float64"}), ember.randn(3, 4, {dtype = "float64"})
  local p = x:sigmoid()
  local lab = ember.tensor({1, -1, 1})
  local cases = {
    {"L1Loss", nn.L1Loss(), {x, y}, F.l1_loss(x, y)},
    {"SmoothL1Loss", nn.SmoothL1Loss({beta = 0.5, reduction = "sum"}), {x, y}, F.smooth_l1_loss(x, y, {beta = 0.5, reduction = "sum"})},
    {"HuberLoss", nn.HuberLoss({delta = 2}), {x, y}, F.huber_loss(x, y, {delta = 2})},
    {"BCELoss", nn.BCELoss({weight = ember.ones(4, {dtype = "float64"}) * 2}), {p, y:sigmoid()},
     F.binary_cross_entropy(p, y:sigmoid()) * 2},
    {"KLDivLoss", nn.KLDivLoss({reduction = "batchmean"}), {x:log_softmax(2), y:softmax(2)},
     F.kl_div(x:log_softmax(2), y:softmax(2), {reduction = "batchmean"})},
    {"PoissonNLLLoss", nn.PoissonNLLLoss({full = true}), {x, y:abs()}, F.poisson_nll_loss(x, y:abs(), {full = true})},
    {"GaussianNLLLoss", nn.GaussianNLLLoss({reduction = "none"}), {x, y, p}, F.gaussian_nll_loss(x, y, p, {reduction = "none"})},
    {"CosineEmbeddingLoss", nn.CosineEmbeddingLoss({margin = 0.2}), {x, y, lab}, F.cosine_embedding_loss(x, y, lab, {margin = 0.2})},
    {"MarginRankingLoss", nn.MarginRankingLoss({margin = 0.1}), {x, y, y:sign()}, F.margin_ranking_loss(x, y, y:sign(), {margin = 0.1})},
    {"HingeEmbeddingLoss", nn.HingeEmbeddingLoss(), {x, y:sign()}, F.hinge_embedding_loss(x, y:sign())},
    {"TripletMarginLoss", nn.TripletMarginLoss({swap = true}), {x, y, p}, F.triplet_margin_loss(x, y, p, {swap = true})},
    {"MultiLabelSoftMarginLoss", nn.MultiLabelSoftMarginLoss(), {x, y:gt(0):to("float64")},
     F.multilabel_soft_margin_loss(x, y:gt(0):to("float64"))},
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local got = c[2](table.unpack(c[3]))
      h.check(got, c[4]:tolist(), 1e-14)
      assert.are.equal(c[1], tostring(c[2]):match("^(%w+)%("))
    end)
  end
  it("reprs show a non-default reduction; tensor options are buffers", function()
    assert.are.equal("L1Loss(reduction=\"sum\")", tostring(nn.L1Loss({reduction = "sum"})):match("^[^\n]*"))
    assert.are.equal("KLDivLoss(reduction=\"batchmean\")", tostring(nn.KLDivLoss({reduction = "batchmean"})):match("^[^\n]*"))
    local m = nn.BCELoss({weight = ember.ones(3)})
    local names = {}
    for name in m:named_buffers() do names[#names + 1] = name end
    assert.are.same({"weight"}, names)
  end)
  it("module errors", function()
    has(err(function() local m = nn.HuberLoss({deltaa = 1}); return m end), "HuberLoss: unknown option 'deltaa'")
    has(err(function() local m = nn.L1Loss({reduction = "avg"}); return m end), "L1Loss: reduction must be")
    has(err(function() local m = nn.MSELoss({reduction = "batchmean"}); return m end), "MSELoss: reduction must be")
    local e = err(function() local l = nn.TripletMarginLoss()(x, y); return l end)
    has(e, "TripletMarginLoss: expected 3 tensors (three inputs), got 2 arguments")
    has(e, THIS_FILE)
  end)
end)

-- ---- bad input ----------------------------------------------------------------------------------

describe("losses: bad input", function()
  local x, y = ember.randn(2, 3), ember.randn(3, 2)
  it("shape mismatches name both shapes", function()
    for _, name in ipairs{"l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "poisson_nll_loss",
                          "hinge_embedding_loss", "multilabel_soft_margin_loss"} do
      local e = err(function() local l = F[name](x, y); return l end)
      has(e, name .. ": input shape [2, 3] and target shape [3, 2] differ")
      has(e, THIS_FILE)
    end
    has(err(function() local l = F.binary_cross_entropy(x:sigmoid(), y:sigmoid()); return l end), "input shape [2, 3] and target shape [3, 2]")
    has(err(function() local l = F.cosine_embedding_loss(x, y, ember.tensor({1, 1})); return l end), "input1 shape [2, 3] and input2 shape [3, 2]")
    has(err(function() local l = F.cosine_embedding_loss(x, x, ember.tensor({1, 1, 1})); return l end),
        "target shape [3] does not fit input shape [2, 3] (expected [2])")
    has(err(function() local l = F.margin_ranking_loss(x, x, ember.ones(3)); return l end), "input1 shape [2, 3] and target shape [3]")
    has(err(function() local l = F.triplet_margin_loss(x, x, y); return l end), "anchor shape [2, 3] and negative shape [3, 2]")
    has(err(function() local l = F.triplet_margin_loss(ember.randn(2, 2, 2), x, x); return l end), "anchor must be 1-D [D] or 2-D [N, D], got [2, 2, 2]")
    has(err(function() local l = F.gaussian_nll_loss(x, x, ember.ones(3)); return l end),
        "gaussian_nll_loss: var shape [3] does not fit input shape [2, 3]")
    has(err(function() local l = F.binary_cross_entropy(x:sigmoid(), x:sigmoid(), {weight = ember.ones(2)}); return l end),
        "binary_cross_entropy: input [2, 3] and weight [2] cannot be broadcast together")
    has(err(function() local l = F.cosine_similarity(x, y); return l end), "x1 [2, 3] and x2 [3, 2] cannot be broadcast together")
    has(err(function() local l = F.pairwise_distance(x, ember.randn(4)); return l end), "x1 [2, 3] and x2 [4] cannot be broadcast")
    has(err(function() local l = F.multilabel_soft_margin_loss(ember.randn(4), ember.ones(4)); return l end), "expected a 2-D input [N, C], got [4]")
  end)
  it("bad reduction and option values", function()
    for _, name in ipairs{"l1_loss", "huber_loss", "binary_cross_entropy", "poisson_nll_loss"} do
      has(err(function() local l = F[name](x:sigmoid(), x:sigmoid(), {reduction = "avg"}); return l end),
          name .. ": reduction must be \"mean\", \"sum\" or \"none\", got avg")
    end
    has(err(function() local l = F.kl_div(x, x, {reduction = "max"}); return l end), "kl_div: reduction must be")
    has(err(function() local l = F.smooth_l1_loss(x, x, {beta = -1}); return l end), "smooth_l1_loss: beta must be >= 0, got -1")
    has(err(function() local l = F.huber_loss(x, x, {delta = 0}); return l end), "huber_loss: delta must be > 0, got 0")
    has(err(function() local l = F.huber_loss(x, x, {beta = 1}); return l end), "huber_loss: unknown option 'beta' (expected reduction, delta)")
    has(err(function() local l = F.binary_cross_entropy(x, x:sigmoid()); return l end), "binary_cross_entropy: input values must be probabilities in [0, 1]")
    has(err(function() local l = F.gaussian_nll_loss(x, x, -ember.ones(2, 3)); return l end), "gaussian_nll_loss: var has negative entries")
    has(err(function() local l = F.l1_loss(x, x, "sum"); return l end), "l1_loss: size_average is deprecated in PyTorch and not supported")
    has(err(function() local l = F.l1_loss(ember.tensor({1, 2}), ember.tensor({1, 2})); return l end), "l1_loss: expected a floating-point input, got int64")
  end)
end)
