-- ember.nn.functional — the computations behind the layers and losses, as plain
-- functions of tensors (PyTorch's torch.nn.functional). Composed from engine ops,
-- so autograd records them and they run on any backend.
--   local F = ember.nn.functional
--   local loss = F.cross_entropy(logits, targets, {label_smoothing = 0.1})
local ember = require "ember"
local raise = require("ember.errors").raise

local F = {}

local function shape_str(t) return "[" .. table.concat(t.shape, ", ") .. "]" end

local function check_tensor(v, op, what)
  if not ember.is_tensor(v) then
    raise(string.format("%s: %s must be a tensor, got %s", op, what, type(v)))
  end
end

local reductions = {mean = true, sum = true, none = true}

--- F.check_reduction(reduction, op) -> reduction; "mean" when nil, an error naming op when unknown.
function F.check_reduction(reduction, op)
  if reduction == nil then return "mean" end
  if not reductions[reduction] then
    raise(string.format("%s: reduction must be \"mean\", \"sum\" or \"none\", got %s", op, tostring(reduction)))
  end
  return reduction
end

local function reduce(loss, reduction)
  if reduction == "mean" then return loss:mean() end
  if reduction == "sum" then return loss:sum() end
  return loss
end

local function is_integer_dtype(d) return d == "int64" or d == "int32" or d == "uint8" or d == "int16" or d == "int8" end

--- F.linear(x, weight [, bias]) -> x @ weight^T + bias; x [..., in], weight [out, in], bias [out].
-- Example: F.linear(ember.randn(2, 3), ember.randn(4, 3))   -- [2, 4]
function F.linear(x, weight, bias)
  if x.ndim == 2 and bias then return ember.addmm(bias, x, weight:t()) end
  local y = x:matmul(weight:t())
  if bias then y = y + bias end
  return y
end

--- F.dropout(x [, p = 0.5 [, training = true]]) -> x with elements zeroed with probability p, the rest scaled by 1/(1-p).
-- Identity when not training or p == 0. Uses ember's generator (ember.manual_seed).
-- Example: F.dropout(x, 0.1, model.training)
function F.dropout(x, p, training)
  p = p or 0.5
  if training == nil then training = true end
  if type(p) ~= "number" or p < 0 or p > 1 then
    raise("dropout: p must be a probability in [0, 1], got " .. tostring(p))
  end
  if not training or p == 0 then return x end
  if p == 1 then return x * 0 end
  local keep = 1 - p
  local rdtype = x:is_floating_point() and (x.dtype == "float64" and "float64" or "float32") or "float32"
  local mask = ember.rand(x.shape, {dtype = rdtype, device = x.device}):lt(keep)
  return x * (mask:to(x.dtype) * (1 / keep))
end

--- F.layer_norm(x, normalized_shape [, weight [, bias [, eps = 1e-5]]]) -> x normalised over its last #normalized_shape dims.
-- Biased variance (correction 0) as in PyTorch. Example: F.layer_norm(x, {x.shape[#x.shape]})
function F.layer_norm(x, normalized_shape, weight, bias, eps)
  eps = eps or 1e-5
  local k = #normalized_shape
  local dims = {}
  for i = 1, k do dims[i] = -i end
  local mean = x:mean(dims, true)
  local xc = x - mean
  local var = (xc * xc):mean(dims, true)
  local y = xc * (var + eps):rsqrt()
  if weight then y = y * weight end
  if bias then y = y + bias end
  return y
end

-- The rows of weight picked by idx; the row padding_idx (1-based, or nil)
-- gets no gradient. op names the caller in errors.
function F._embedding(idx, weight, padding_idx, op)
  if not ember.is_tensor(idx) then raise(string.format("%s: indices must be a tensor, got %s", op, type(idx))) end
  if not ember.is_tensor(weight) or weight.ndim ~= 2 then
    raise(string.format("%s: weight must be a 2-D tensor [num, dim], got %s", op,
                        ember.is_tensor(weight) and shape_str(weight) or type(weight)))
  end
  if not is_integer_dtype(idx.dtype) then
    raise(string.format("%s: indices must be an integer tensor (1-based row numbers), got %s", op, idx.dtype))
  end
  local flat = idx:reshape(-1)
  if flat.dtype ~= "int64" then flat = flat:to("int64") end
  local ok, rows = pcall(weight.index_select, weight, 1, flat)
  if not ok then
    raise(string.format("%s: index out of range for %d rows (indices are 1-based, 1..%d): %s",
                        op, weight.shape[1], weight.shape[1], tostring(rows)))
  end
  if padding_idx ~= nil and rows.requires_grad then
    -- the same values, but the padding rows' copies are detached: no gradient reaches that row
    rows = ember.where(flat:eq(padding_idx):unsqueeze(2), rows:detach(), rows)
  end
  local shape = {}
  for i, s in ipairs(idx.shape) do shape[i] = s end
  shape[#shape + 1] = weight.shape[2]
  return rows:reshape(shape)
end

-- A padding_idx option for a table of num rows: nil, or an integer in 1..num or -num..-1
-- (counting from the end); returns it as a positive row number.
function F._check_padding_idx(p, num, op)
  if p == nil then return nil end
  local i = type(p) == "number" and math.tointeger(p)
  if not i or i == 0 or i > num or i < -num then
    raise(string.format("%s: padding_idx must be an integer in 1..%d or -%d..-1, got %s", op, num, num, tostring(p)))
  end
  return i < 0 and num + 1 + i or i
end

--- F.embedding(idx, weight [, {padding_idx = nil}]) -> the rows of weight picked by idx (1-based integer indices of any shape).
-- The result has shape idx.shape .. {weight.shape[2]}; the row padding_idx gets no gradient.
-- Example: F.embedding(ember.tensor{{1, 3}}, w)
function F.embedding(idx, weight, opts)
  if opts ~= nil and type(opts) ~= "table" then raise("embedding: expected an options table {padding_idx=}, got " .. type(opts)) end
  opts = opts or {}
  local num = ember.is_tensor(weight) and weight.ndim == 2 and weight.shape[1] or 0
  return F._embedding(idx, weight, F._check_padding_idx(opts.padding_idx, num, "embedding"), "embedding")
end

-- ---- losses ------------------------------------------------------------------

--- F.mse_loss(input, target [, {reduction = "mean"}]) -> mean squared error.
-- input and target must have the same shape (PyTorch only warns; a silent broadcast is usually a bug).
-- Example: F.mse_loss(pred, y)
function F.mse_loss(input, target, opts)
  opts = opts or {}
  local reduction = F.check_reduction(opts.reduction, "mse_loss")
  check_tensor(input, "mse_loss", "input")
  check_tensor(target, "mse_loss", "target")
  if shape_str(input) ~= shape_str(target) then
    raise(string.format("mse_loss: input shape %s and target shape %s differ (reshape one of them)",
                        shape_str(input), shape_str(target)))
  end
  local d = input - target
  return reduce(d * d, reduction)
end

-- Checks class-index targets against an input whose class dim is 2:
-- target.shape must be input.shape without dim 2.
local function check_index_target(input, target, op)
  if not is_integer_dtype(target.dtype) then
    raise(string.format("%s: class-index targets must be an integer tensor (int64), got %s", op, target.dtype))
  end
  local want = {}
  for i, s in ipairs(input.shape) do if i ~= 2 then want[#want + 1] = s end end
  if table.concat(want, ",") ~= table.concat(target.shape, ",") then
    raise(string.format("%s: input %s needs class-index targets of shape [%s], got %s",
                        op, shape_str(input), table.concat(want, ", "), shape_str(target)))
  end
end

-- -logp[i, target_i, ...] for log-probabilities with classes on dim 2, and the
-- mask of ignored positions (target == ignore_index). Ignored positions give 0.
local function pick_nll(logp, target, ignore_index, op)
  if target.dtype ~= "int64" then target = target:to("int64") end
  local ignored = target:eq(ignore_index)
  local safe = target:masked_fill(ignored, 1)   -- any valid class for ignored rows
  local ok, picked = pcall(logp.gather, logp, 2, safe:unsqueeze(2))
  if not ok then
    local c = logp.shape[2]
    raise(string.format("%s: target class index out of range for %d classes (class indices are 1-based, 1..%d; ignore_index = %s): %s",
                        op, c, c, tostring(ignore_index), tostring(picked)))
  end
  return (-picked:squeeze(2)):masked_fill(ignored, 0), ignored
end

-- mean over the positions not ignored (NaN when all are, as in PyTorch)
local function reduce_kept(loss, ignored, reduction)
  if reduction == "none" then return loss end
  if reduction == "sum" then return loss:sum() end
  local kept = ignored:logical_not():sum():to(loss.dtype)
  return loss:sum() / kept
end

-- [C] input with a 0-d target -> [1, C] and [1]; returns a function undoing it on 'none' results
local function batch1(input, target)
  if input.ndim == 1 then
    return input:unsqueeze(1), target:reshape(1), function(l) return l.ndim == 1 and l:reshape({}) or l end
  end
  return input, target, function(l) return l end
end

-- A per-class weight option: nil, or a 1-D tensor with one entry per class.
local function check_class_weight(weight, C, op)
  if weight == nil then return end
  check_tensor(weight, op, "weight")
  if weight.ndim ~= 1 or weight.shape[1] ~= C then
    raise(string.format("%s: weight must have one entry per class, shape [%d], got %s", op, C, shape_str(weight)))
  end
end

--- F.nll_loss(logp, target [, {weight = nil, ignore_index = -100, reduction = "mean"}]) -> negative log-likelihood.
-- logp: log-probabilities [N, C] (or [C], or [N, C, d1, ...]); target: 1-based class indices
-- (int64) of shape [N] ([] or [N, d1, ...]). weight: [C] per-class weights; each term is
-- -weight[target] * logp[target], and the mean divides by the summed weights of the targets
-- not equal to ignore_index (as PyTorch).
-- Example: F.nll_loss(logits:log_softmax(2), y)
function F.nll_loss(logp, target, opts)
  opts = opts or {}
  local reduction = F.check_reduction(opts.reduction, "nll_loss")
  check_tensor(logp, "nll_loss", "input")
  check_tensor(target, "nll_loss", "target")
  if logp.ndim == 0 then raise("nll_loss: input must have a class dimension, got a 0-d tensor") end
  check_class_weight(opts.weight, logp.shape[logp.ndim == 1 and 1 or 2], "nll_loss")
  local undo
  logp, target, undo = batch1(logp, target)
  check_index_target(logp, target, "nll_loss")
  local loss, ignored = pick_nll(logp, target, opts.ignore_index or -100, "nll_loss")
  if opts.weight == nil then return undo(reduce_kept(loss, ignored, reduction)) end
  -- the weight of each target (0 where ignored); pick_nll has checked the indices
  local safe = target:to("int64"):masked_fill(ignored, 1)
  local w = opts.weight:to(loss.dtype):index_select(1, safe:reshape(-1)):reshape(target.shape):masked_fill(ignored, 0)
  loss = loss * w
  if reduction == "none" then return undo(loss) end
  if reduction == "sum" then return loss:sum() end
  return loss:sum() / w:sum()
end

--- F.cross_entropy(logits, target [, {weight = nil, ignore_index = -100, label_smoothing = 0, reduction = "mean"}]) -> the loss.
-- logits: [N, C] (or [C], or [N, C, d1, ...]), unnormalised. target: 1-based class indices
-- (int64, shape [N]) or class probabilities (float, same shape as logits). weight: [C] per-class
-- weights (the mean then divides by the summed weights of the targets, as in PyTorch).
-- label_smoothing eps mixes in the uniform distribution: (1-eps) * nll + eps * mean over classes of -logp.
-- Class indices go through one fused, numerically stable engine op (log-softmax and the pick in
-- one pass, and a backward that never builds a one-hot); probabilities through log_softmax.
-- Example: F.cross_entropy(model(x), y, {label_smoothing = 0.1})
function F.cross_entropy(input, target, opts)
  opts = opts or {}
  local op = "cross_entropy"
  local reduction = F.check_reduction(opts.reduction, op)
  check_tensor(input, op, "input")
  check_tensor(target, op, "target")
  if input.ndim == 0 then raise(op .. ": input must have a class dimension, got a 0-d tensor") end
  if not input:is_floating_point() then raise(op .. ": input must be floating point (logits), got " .. input.dtype) end
  local eps = opts.label_smoothing or 0
  if type(eps) ~= "number" or eps < 0 or eps > 1 then
    raise(op .. ": label_smoothing must be in [0, 1], got " .. tostring(eps))
  end
  local cdim = input.ndim == 1 and 1 or 2
  local C = input.shape[cdim]
  local weight = opts.weight
  check_class_weight(weight, C, op)

  if target:is_floating_point() then
    if shape_str(target) ~= shape_str(input) then
      raise(string.format("%s: class-probability targets must have the input's shape %s, got %s",
                          op, shape_str(input), shape_str(target)))
    end
    local logp = input:log_softmax(cdim)
    if eps > 0 then target = target * (1 - eps) + eps / C end
    if weight then
      local wshape = {}
      for i = 1, input.ndim do wshape[i] = i == cdim and C or 1 end
      target = target * weight:reshape(wshape)
    end
    return reduce(-(logp * target):sum(cdim), reduction)
  end

  if input.ndim == 1 then
    if target.ndim ~= 0 then
      raise(string.format("%s: input %s needs a 0-d class-index target, got %s", op, shape_str(input), shape_str(target)))
    end
  else
    check_index_target(input, target, op)
  end
  if not is_integer_dtype(target.dtype) then
    raise(string.format("%s: class-index targets must be an integer tensor (int64), got %s", op, target.dtype))
  end
  local ok, loss = pcall(ember._cross_entropy, input, target, weight, opts.ignore_index or -100, eps, reduction)
  if not ok then raise(loss) end
  return loss
end

--- F.binary_cross_entropy_with_logits(x, y [, {weight=, pos_weight=, reduction = "mean"}]) -> the loss.
-- Numerically stable: max(x, 0) - x*y + log(1 + exp(-|x|)); pos_weight (broadcast along the
-- last dim) weighs the positive term. y has x's shape, values in [0, 1].
-- Example: F.binary_cross_entropy_with_logits(logits, labels:float())
function F.binary_cross_entropy_with_logits(x, y, opts)
  opts = opts or {}
  local op = "binary_cross_entropy_with_logits"
  local reduction = F.check_reduction(opts.reduction, op)
  check_tensor(x, op, "input")
  check_tensor(y, op, "target")
  if shape_str(x) ~= shape_str(y) then
    raise(string.format("%s: target shape %s must equal the input shape %s", op, shape_str(y), shape_str(x)))
  end
  if not y:is_floating_point() then y = y:to(x.dtype) end
  -- log(1 + exp(-|x|)) with |x| written as 2 relu(x) - x: the kinks of relu and
  -- |.| at 0 then cancel in the gradient (sigmoid(0) - y), whatever their subgradient.
  local r = x:relu()
  local log1p_exp = (x - r * 2):exp():log1p()
  local loss
  if opts.pos_weight then
    -- (1 - y) x + (1 + (pw - 1) y) log(1 + exp(-x)), with log(1 + exp(-x)) = relu(-x) + log1p_exp
    local lw = (opts.pos_weight - 1) * y + 1
    loss = (1 - y) * x + lw * (r - x + log1p_exp)
  else
    loss = r - x * y + log1p_exp       -- max(x, 0) - x y + log(1 + exp(-|x|))
  end
  if opts.weight then loss = loss * opts.weight end
  return reduce(loss, reduction)
end

return F
