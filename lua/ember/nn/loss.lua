-- ember.nn losses: modules wrapping ember.nn.functional. Each takes PyTorch's
-- constructor arguments, positional or in a trailing options table, among them
-- reduction = "mean" | "sum" | "none" (default "mean"), and is called as
-- loss_fn(input, target).
local ember = require "ember"
local raise = require("ember.errors").raise
local base = require "ember.nn.module"
local F = require "ember.nn.functional"

local Module = base.Module
local Loss = {}

-- names: PyTorch's constructor parameters in order (reduction and the deprecated
-- size_average and reduce among them); nargs: how many tensors forward takes (2 unless
-- given); batchmean: the reduction "batchmean" is allowed too (KLDivLoss)
local function loss_class(name, fn, names, nargs, batchmean)
  local cls = Module:extend(name)
  local keys = {}
  for _, k in ipairs(names) do
    if k ~= "reduction" and k ~= "size_average" and k ~= "reduce" and k ~= "*" then keys[k] = true end
  end
  cls.init = function(self, ...)
    local opts = F._options(name, names, ...)
    local is_batchmean = batchmean and opts.reduction == "batchmean"
    if is_batchmean then opts.reduction = nil end
    local _, reduction = F._loss_args(name, names, opts)
    self.reduction = is_batchmean and "batchmean" or reduction
    for k in pairs(keys) do
      -- tensor options (weights) are buffers, so they follow module:to() and state_dict()
      if ember.is_tensor(opts[k]) then self:register_buffer(k, opts[k]) else self[k] = opts[k] end
    end
  end
  cls.extra_repr = function(self)
    return self.reduction == "mean" and "" or "reduction=\"" .. self.reduction .. "\""
  end
  cls.forward = function(self, ...)
    local o = {reduction = self.reduction}
    for k in pairs(keys) do o[k] = self[k] end
    local n = nargs or 2
    local args = table.pack(...)
    if args.n ~= n then
      raise(string.format("%s: expected %d tensors (%s), got %d arguments", name, n,
                          n == 2 and "input, target" or "three inputs", args.n))
    end
    args[n + 1] = o
    return fn(table.unpack(args, 1, n + 1))
  end
  return cls
end

--- nn.MSELoss([{reduction = "mean"}]) -> loss_fn(input, target) = mean((input - target)^2).
-- Example: local loss = nn.MSELoss()(pred, y)
Loss.MSELoss = loss_class("MSELoss", F.mse_loss, {"size_average", "reduce", "reduction"})

--- nn.NLLLoss([{weight = nil, ignore_index = -100, reduction = "mean"}]) -> loss_fn(logp, target) = -mean(logp[i, target[i]]).
-- logp: log-probabilities [N, C] or [C]; target: 1-based class indices (int64) [N] or [].
-- weight: [C] per-class weights (the mean divides by the targets' summed weights).
-- Rows whose target equals ignore_index are left out (also from the mean's count).
-- Example: nn.NLLLoss()(nn.LogSoftmax(2)(logits), y)
Loss.NLLLoss = loss_class("NLLLoss", F.nll_loss, {"weight", "size_average", "ignore_index", "reduce", "reduction"})

--- nn.CrossEntropyLoss([{weight = nil, ignore_index = -100, label_smoothing = 0, reduction = "mean"}]) -> loss_fn(logits, target).
-- log_softmax + NLL in one numerically stable step. target: 1-based class indices (int64 [N])
-- or class probabilities (float [N, C]). See ember.nn.functional.cross_entropy.
-- Example: local loss = nn.CrossEntropyLoss({label_smoothing = 0.1})(model(x), y)
Loss.CrossEntropyLoss = loss_class("CrossEntropyLoss", F.cross_entropy, {"weight", "size_average", "ignore_index", "reduce", "reduction",
                                                                      "label_smoothing"})

--- nn.BCEWithLogitsLoss([{weight=, pos_weight=, reduction = "mean"}]) -> loss_fn(logits, y), binary cross entropy on logits.
-- Numerically stable (no sigmoid then log). pos_weight weighs positives, per class (last dim).
-- Example: nn.BCEWithLogitsLoss({pos_weight = ember.tensor{3.0}})(logits, y)
Loss.BCEWithLogitsLoss = loss_class("BCEWithLogitsLoss", F.binary_cross_entropy_with_logits, {"weight", "size_average", "reduce", "reduction", "pos_weight"})

--- nn.L1Loss([{reduction = "mean"}]) -> loss_fn(input, target) = |input - target|, reduced.
Loss.L1Loss = loss_class("L1Loss", F.l1_loss, {"size_average", "reduce", "reduction"})

--- nn.SmoothL1Loss([{beta = 1, reduction = "mean"}]) -> loss_fn(input, target): quadratic below beta, linear above.
Loss.SmoothL1Loss = loss_class("SmoothL1Loss", F.smooth_l1_loss, {"size_average", "reduce", "reduction", "beta"})

--- nn.HuberLoss([{delta = 1, reduction = "mean"}]) -> loss_fn(input, target): quadratic below delta, delta-linear above.
Loss.HuberLoss = loss_class("HuberLoss", F.huber_loss, {"reduction", "delta"})

--- nn.BCELoss([{weight =, reduction = "mean"}]) -> loss_fn(p, y): binary cross entropy of probabilities.
Loss.BCELoss = loss_class("BCELoss", F.binary_cross_entropy, {"weight", "size_average", "reduce", "reduction"})

--- nn.KLDivLoss([{reduction = "mean", log_target = false}]) -> loss_fn(logp, target); reduction may be "batchmean".
Loss.KLDivLoss = loss_class("KLDivLoss", F.kl_div, {"size_average", "reduce", "reduction", "log_target"}, 2, true)

--- nn.PoissonNLLLoss([{log_input = true, full = false, eps = 1e-8, reduction = "mean"}]) -> loss_fn(input, target).
Loss.PoissonNLLLoss = loss_class("PoissonNLLLoss", F.poisson_nll_loss, {"log_input", "full", "size_average", "eps", "reduce", "reduction"})

--- nn.GaussianNLLLoss([{full = false, eps = 1e-6, reduction = "mean"}]) -> loss_fn(input, target, var).
Loss.GaussianNLLLoss = loss_class("GaussianNLLLoss", F.gaussian_nll_loss, {"*", "full", "eps", "reduction"}, 3)

--- nn.CosineEmbeddingLoss([{margin = 0, reduction = "mean"}]) -> loss_fn(x1, x2, y), y in {1, -1}.
Loss.CosineEmbeddingLoss = loss_class("CosineEmbeddingLoss", F.cosine_embedding_loss, {"margin", "size_average", "reduce", "reduction"}, 3)

--- nn.MarginRankingLoss([{margin = 0, reduction = "mean"}]) -> loss_fn(x1, x2, y) = max(0, -y (x1 - x2) + margin).
Loss.MarginRankingLoss = loss_class("MarginRankingLoss", F.margin_ranking_loss, {"margin", "size_average", "reduce", "reduction"}, 3)

--- nn.HingeEmbeddingLoss([{margin = 1, reduction = "mean"}]) -> loss_fn(x, y), y in {1, -1}.
Loss.HingeEmbeddingLoss = loss_class("HingeEmbeddingLoss", F.hinge_embedding_loss, {"margin", "size_average", "reduce", "reduction"})

--- nn.TripletMarginLoss([{margin = 1, p = 2, eps = 1e-6, swap = false, reduction = "mean"}]) -> loss_fn(anchor, positive, negative).
Loss.TripletMarginLoss = loss_class("TripletMarginLoss", F.triplet_margin_loss,
                                    {"margin", "p", "eps", "swap", "size_average", "reduce", "reduction"}, 3)

--- nn.MultiLabelSoftMarginLoss([{weight =, reduction = "mean"}]) -> loss_fn(logits [N, C], y [N, C]).
Loss.MultiLabelSoftMarginLoss = loss_class("MultiLabelSoftMarginLoss", F.multilabel_soft_margin_loss, {"weight", "size_average", "reduce", "reduction"})

--- nn.SoftMarginLoss([{reduction = "mean"}]) -> loss_fn(input, y) = log(1 + exp(-y * input)), y in {1, -1}.
Loss.SoftMarginLoss = loss_class("SoftMarginLoss", F.soft_margin_loss, {"size_average", "reduce", "reduction"})

--- nn.MultiMarginLoss([{p = 1, margin = 1, weight =, reduction = "mean"}]) -> loss_fn(input [N, C], y [N] 1-based classes).
Loss.MultiMarginLoss = loss_class("MultiMarginLoss", F.multi_margin_loss,
                                  {"p", "margin", "weight", "size_average", "reduce", "reduction"})

return Loss
