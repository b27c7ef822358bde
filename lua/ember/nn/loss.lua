-- ember.nn losses: modules wrapping ember.nn.functional. Each takes
-- {reduction = "mean" | "sum" | "none"} (default "mean") in its options table
-- and is called as loss_fn(input, target).
local ember = require "ember"
local raise = require("ember.errors").raise
local base = require "ember.nn.module"
local F = require "ember.nn.functional"

local Module = base.Module
local Loss = {}

local function loss_class(name, fn, keys)
  local cls = Module:extend(name)
  cls.init = function(self, opts)
    opts = opts or {}
    if type(opts) ~= "table" then raise(name .. ": expected an options table, got " .. type(opts)) end
    for k in pairs(opts) do
      if k ~= "reduction" and not keys[k] then raise(name .. ": unknown option '" .. tostring(k) .. "'") end
    end
    self.reduction = F.check_reduction(opts.reduction, name)
    for k in pairs(keys) do
      -- tensor options (weights) are buffers, so they follow module:to() and state_dict()
      if ember.is_tensor(opts[k]) then self:register_buffer(k, opts[k]) else self[k] = opts[k] end
    end
  end
  cls.extra_repr = function(self)
    return self.reduction == "mean" and "" or "reduction=\"" .. self.reduction .. "\""
  end
  cls.forward = function(self, input, target)
    local o = {reduction = self.reduction}
    for k in pairs(keys) do o[k] = self[k] end
    return fn(input, target, o)
  end
  return cls
end

--- nn.MSELoss([{reduction = "mean"}]) -> loss_fn(input, target) = mean((input - target)^2).
-- Example: local loss = nn.MSELoss()(pred, y)
Loss.MSELoss = loss_class("MSELoss", F.mse_loss, {})

--- nn.NLLLoss([{weight = nil, ignore_index = -100, reduction = "mean"}]) -> loss_fn(logp, target) = -mean(logp[i, target[i]]).
-- logp: log-probabilities [N, C] or [C]; target: 1-based class indices (int64) [N] or [].
-- weight: [C] per-class weights (the mean divides by the targets' summed weights).
-- Rows whose target equals ignore_index are left out (also from the mean's count).
-- Example: nn.NLLLoss()(nn.LogSoftmax(2)(logits), y)
Loss.NLLLoss = loss_class("NLLLoss", F.nll_loss, {weight = true, ignore_index = true})

--- nn.CrossEntropyLoss([{weight = nil, ignore_index = -100, label_smoothing = 0, reduction = "mean"}]) -> loss_fn(logits, target).
-- log_softmax + NLL in one numerically stable step. target: 1-based class indices (int64 [N])
-- or class probabilities (float [N, C]). See ember.nn.functional.cross_entropy.
-- Example: local loss = nn.CrossEntropyLoss({label_smoothing = 0.1})(model(x), y)
Loss.CrossEntropyLoss = loss_class("CrossEntropyLoss", F.cross_entropy, {weight = true, ignore_index = true, label_smoothing = true})

--- nn.BCEWithLogitsLoss([{weight=, pos_weight=, reduction = "mean"}]) -> loss_fn(logits, y), binary cross entropy on logits.
-- Numerically stable (no sigmoid then log). pos_weight weighs positives, per class (last dim).
-- Example: nn.BCEWithLogitsLoss({pos_weight = ember.tensor{3.0}})(logits, y)
Loss.BCEWithLogitsLoss = loss_class("BCEWithLogitsLoss", F.binary_cross_entropy_with_logits, {weight = true, pos_weight = true})

return Loss
