-- ember.nn.functional — the computations behind the layers and losses, as plain
-- functions of tensors (PyTorch's torch.nn.functional). Composed from engine ops,
-- so autograd records them and they run on any backend.
--   local F = ember.nn.functional
--   local loss = F.cross_entropy(logits, targets, {label_smoothing = 0.1})
local ember = require "ember"
local raise = require("ember.errors").raise
-- ember.autocast's policy for the functions composed here (the ops bound in C
-- apply theirs at their entry, lua/autocast.c, which says which lists): the
-- losses PyTorch's lists name run in float32 on every device; softplus, the
-- normalisations and the losses composed of other ops (gaussian_nll_loss,
-- multilabel_soft_margin_loss) in float32 on CUDA devices only, as PyTorch's
-- CPU autocast leaves them in their input's dtype; prelu in the
-- low-precision dtype.
local autocast = ember._autocast
local args = require "ember.args"
-- the optional arguments of a call: PyTorch's positional order, then an options table
local options = args.options

local F = {}

local shape_str, check_tensor = require("ember.errors").shape_str, require("ember.errors").check_tensor

local reductions = {mean = true, sum = true, none = true}

--- F.check_reduction(reduction, op) -> reduction; "mean" when nil, an error naming op when unknown.
function F.check_reduction(reduction, op)
  if reduction == nil then return "mean" end
  if not reductions[reduction] then
    raise(string.format("%s: reduction must be \"mean\", \"sum\" or \"none\", got %s", op, tostring(reduction)))
  end
  return reduction
end

-- A loss's optional arguments (PyTorch's order in names, reduction among them) read by
-- options(); returns them and the checked reduction. PyTorch's deprecated size_average and
-- reduce keep their positions in names but are refused.
local function loss_args(op, names, ...)
  local o = options(op, names, ...)
  for _, k in ipairs{"size_average", "reduce"} do
    if o[k] ~= nil then
      raise(string.format("%s: %s is deprecated in PyTorch and not supported: use reduction = \"mean\", \"sum\" or \"none\"",
                          op, k))
    end
  end
  return o, F.check_reduction(o.reduction, op)
end
F._loss_args = loss_args

-- The start of a loss of input and target: autocast's policy cls applied to both, the
-- optional arguments read by loss_args, then check(input, target, op), which returns the
-- pair the loss uses. Returns input, target, the reduction and the options.
local function loss_start(op, cls, names, check, input, target, ...)
  input, target = autocast(cls, input, target)
  local o, reduction = loss_args(op, names, ...)
  input, target = check(input, target, op)
  return input, target, reduction, o
end

-- loss_start's check for the losses that check the rest themselves: both are tensors
local function both_tensors(input, target, op)
  check_tensor(input, op, "input")
  check_tensor(target, op, "target")
  return input, target
end

local function reduce(loss, reduction)
  if reduction == "mean" then return loss:mean() end
  if reduction == "sum" then return loss:sum() end
  return loss
end
F._reduce = reduce   -- for the parts in their own files (this file's end)

local function is_integer_dtype(d) return d == "int64" or d == "int32" or d == "uint8" or d == "int16" or d == "int8" end

--- F.linear(x, weight [, bias] [, {bias =, activation = "none"}]) -> act(x @ weight^T + bias).
-- x [..., in], weight [out, in], bias [out]; one fused op (cuBLASLt epilogues on the GPU).
-- activation = "gelu_tanh" fuses F.gelu(y, {approximate = "tanh"}).
-- Example: F.linear(ember.randn(2, 3), ember.randn(4, 3))   -- [2, 4]
local linear_acts = {none = true, gelu_tanh = true}
local linear_names = {"bias", "*", "activation"}
function F.linear(x, weight, ...)
  local bias, act = ..., "none"
  if select("#", ...) > 1 or args.is_options(bias) then
    local o = options("linear", linear_names, ...)
    bias, act = o.bias, o.activation or "none"
    if act == "gelu" then
      raise("linear: activation \"gelu\" (the exact erf form) has no fused form: use \"gelu_tanh\", "
            .. "or F.gelu(F.linear(x, w, b))")
    end
    if not linear_acts[act] then
      raise("linear: activation must be \"none\" or \"gelu_tanh\", got " .. tostring(act))
    end
  end
  check_tensor(x, "linear", "input")
  check_tensor(weight, "linear", "weight")
  if bias ~= nil then check_tensor(bias, "linear", "bias") end
  if x.ndim >= 1 and weight.ndim == 2 and x.shape[x.ndim] ~= weight.shape[2] then
    raise(string.format("linear: input %s and weight %s: expected an input of shape [..., %d]", shape_str(x),
                        shape_str(weight), weight.shape[2]))
  end
  local ok, y = pcall(ember._linear, x, weight, bias, act)
  if not ok then raise(y) end
  return y
end

local dropout_names = {"p", "training", "inplace"}

-- The arguments of a dropout function (p, training, inplace) read by options(), p checked;
-- training defaults to train_default (true for the dropouts, false for the alpha dropouts,
-- as PyTorch's signatures)
local function dropout_args(op, train_default, ...)
  local o = options(op, dropout_names, ...)
  local p = o.p == nil and 0.5 or o.p
  if type(p) ~= "number" or not (p >= 0 and p <= 1) then
    raise(op .. ": p must be a probability in [0, 1], got " .. tostring(p))
  end
  local training = o.training
  if training == nil then training = train_default end
  return p, training, o.inplace
end

-- PyTorch's _dropout_impl: with feature (x at least 2-D), one draw per (n, c) (the noise
-- is [N, C, 1, ...]), else one per element; kept entries are scaled by 1/(1-p), or, with
-- alpha (alpha dropout, for SELU networks), kept entries become a x + b and dropped ones
-- b - alpha' a, which keeps mean 0 and variance 1. p == 1 zeroes x, as PyTorch.
local ALPHA_PRIME = 1.7580993408473766   -- SELU's scale * alpha: SELU tends to -alpha' for x -> -inf
local function dropout_impl(x, p, inplace, feature, alpha)
  if p == 1 then return inplace and x:mul_(0) or x * 0 end
  local shape = x.shape
  if feature then
    shape = {x.shape[1], x.shape[2]}
    for i = 3, x.ndim do shape[i] = 1 end
  end
  local rdtype = x.dtype == "float64" and "float64" or "float32"
  local kept = ember.rand(shape, {dtype = rdtype, device = x.device}):lt(1 - p):to(x.dtype)
  if not alpha then
    local scale = kept * (1 / (1 - p))
    return inplace and x:mul_(scale) or x * scale
  end
  local a = 1 / math.sqrt((ALPHA_PRIME * ALPHA_PRIME * p + 1) * (1 - p))
  local b = (kept - 1) * (ALPHA_PRIME * a) + ALPHA_PRIME * a * p
  local scale = kept * a
  return inplace and x:mul_(scale):add_(b) or x * scale + b
end

--- F.dropout(x [, p = 0.5 [, training = true [, inplace = false]]]) -> x with elements zeroed with probability p, the rest scaled by 1/(1-p).
-- Identity when not training or p == 0. Uses ember's generator (ember.manual_seed).
-- Example: F.dropout(x, 0.1, model.training)
function F.dropout(x, ...)
  local p, training, inplace = dropout_args("dropout", true, ...)
  check_tensor(x, "dropout", "input")
  if not training or p == 0 or x:numel() == 0 then return x end
  return dropout_impl(x, p, inplace, false, false)
end

-- The methods of the dropout layers (nn.Dropout, Dropout1d/2d/3d, AlphaDropout,
-- FeatureAlphaDropout; cls, named op), set on cls: the constructor (p = 0.5, inplace =
-- false), extra_repr, and a forward calling F[fname](x, p, training, inplace).
function F._dropout_methods(cls, op, fname)
  local check_input = require("ember.nn.module").Module._check_input
  function cls:init(...)
    local o = options(op, {"p", "inplace"}, ...)
    local p = o.p == nil and 0.5 or o.p
    if type(p) ~= "number" or p < 0 or p > 1 then raise(op .. ": p must be a probability in [0, 1], got " .. tostring(p)) end
    if o.inplace ~= nil and type(o.inplace) ~= "boolean" then
      raise(op .. ": inplace must be a boolean, got " .. type(o.inplace))
    end
    self.p, self.inplace = p, o.inplace == true
  end
  function cls:extra_repr() return "p=" .. self.p .. (self.inplace and ", inplace=true" or "") end
  function cls:forward(x)
    check_input(self, x)
    return F[fname](x, self.p, self.training, self.inplace)
  end
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
function F.embedding(idx, weight, ...)
  local o = options("embedding", {"padding_idx"}, ...)
  local num = ember.is_tensor(weight) and weight.ndim == 2 and weight.shape[1] or 0
  return F._embedding(idx, weight, F._check_padding_idx(o.padding_idx, num, "embedding"), "embedding")
end

--- F.embedding_bag(input, weight [, offsets [, max_norm [, norm_type [, scale_grad_by_freq [, mode [, sparse
---   [, per_sample_weights [, include_last_offset [, padding_idx]]]]]]]]] [, {...}]) -> [B, D]
-- Sums, means or maxima of bags of weight's rows (PyTorch's, with its arguments): input is 1-D with offsets (1-based positions where the bags start:
-- PyTorch's offsets plus one; offsets[1] must be 1), or 2-D [B, N] (a bag per row, no offsets).
-- mode "mean" (the default), "sum" or "max"; per_sample_weights (input's shape, mode "sum" only)
-- scale the rows; entries equal to padding_idx take no part (a mean counts the others); an empty
-- bag gives zeros. include_last_offset: offsets has B + 1 entries, the last one ending the last
-- bag (it must be the number of entries plus one). max's gradient goes to the first row
-- holding the maximum, per column, as PyTorch's.
-- max_norm, scale_grad_by_freq and sparse are accepted only at their defaults.
-- Example: F.embedding_bag(ember.tensor{1, 2, 4, 5, 4}, w, ember.tensor{1, 3}, {mode = "sum"})
local bag_names = {"offsets", "max_norm", "norm_type", "scale_grad_by_freq", "mode", "sparse",
                   "per_sample_weights", "include_last_offset", "padding_idx"}
function F.embedding_bag(input, weight, ...)
  local op = "embedding_bag"
  local o = options(op, bag_names, ...)
  check_tensor(input, op, "input")
  check_tensor(weight, op, "weight")
  if weight.ndim ~= 2 then raise(op .. ": weight must be 2-D [num_embeddings, dim], got " .. shape_str(weight)) end
  if not is_integer_dtype(input.dtype) then raise(op .. ": input must be an integer tensor, got " .. input.dtype) end
  if o.max_norm ~= nil then raise(op .. ": max_norm is not supported (renormalise the weight yourself)") end
  if o.scale_grad_by_freq then raise(op .. ": scale_grad_by_freq is not supported") end
  if o.sparse then raise(op .. ": sparse gradients are not supported (sparse = false)") end
  local mode = o.mode or "mean"
  if mode ~= "sum" and mode ~= "mean" and mode ~= "max" then
    raise(string.format('%s: mode must be "sum", "mean" or "max", got %s', op, tostring(mode)))
  end
  local psw = o.per_sample_weights
  if psw ~= nil then
    check_tensor(psw, op, "per_sample_weights")
    if mode ~= "sum" then
      raise(string.format('%s: per_sample_weights is only supported for mode "sum", got mode "%s"', op, mode))
    end
    if shape_str(psw) ~= shape_str(input) then
      raise(string.format("%s: per_sample_weights %s must have input's shape %s", op, shape_str(psw), shape_str(input)))
    end
  end
  local offsets, n, B = o.offsets, nil, nil
  if input.ndim == 2 then
    if offsets ~= nil then raise(op .. ": offsets must be nil when input is 2-D (each row is a bag)") end
    B, n = input.shape[1], input:numel()
    offsets = ember.arange(0, B) * input.shape[2] + 1
    input = input:reshape(-1)
    if psw then psw = psw:reshape(-1) end
  elseif input.ndim == 1 then
    if offsets == nil then raise(op .. ": a 1-D input needs offsets (1-based positions where the bags start)") end
    check_tensor(offsets, op, "offsets")
    if offsets.ndim ~= 1 or not is_integer_dtype(offsets.dtype) then
      raise(string.format("%s: offsets must be a 1-D integer tensor, got %s %s", op, offsets.dtype, shape_str(offsets)))
    end
    n = input.shape[1]
    offsets = offsets:cpu():to("int64")
    if o.include_last_offset then
      -- CSR's form: the last offset is the number of entries (plus one, 1-based); PyTorch leaves
      -- other values undefined (its float32 and float64 kernels differ), so they are refused
      local k = offsets.shape[1]
      if k == 0 or offsets[k]:item() ~= n + 1 then
        raise(string.format("%s: with include_last_offset the last offset must be %d (the number of entries plus "
          .. "one), got %s", op, n + 1, k == 0 and "no offsets" or tostring(offsets[k]:item())))
      end
      offsets = offsets:narrow(1, 1, k - 1)
    end
    B = offsets.shape[1]
    if B > 0 then
      local first = offsets[1]:item()
      if first ~= 1 then
        raise(string.format("%s: offsets[1] must be 1 (the first bag starts at the first entry), got %d", op, first))
      end
      if B > 1 and (offsets:narrow(1, 2, B - 1) - offsets:narrow(1, 1, B - 1)):lt(0):any():item() then
        raise(op .. ": offsets must not decrease")
      end
      local last = offsets[B]:item()
      if last > n + 1 then raise(string.format("%s: offsets must be in 1..%d, got %d", op, n + 1, last)) end
    end
  else
    raise(op .. ": input must be 1-D (with offsets) or 2-D [bags, entries], got " .. shape_str(input))
  end
  local D, dev = weight.shape[2], weight.device
  local out_shape = {B, D}
  if B == 0 or n == 0 then return ember.zeros(out_shape, {dtype = weight.dtype, device = dev}) end
  -- the bag of every entry (1-based): a 1 at each bag's start, summed along the entries; bags that
  -- start past the end (empty ones at the tail) mark nothing, empty bags in between skip a number
  local starts = offsets:masked_select(offsets:le(n))
  local bag = ember.zeros(n, {dtype = "int64"}):index_add(1, starts, ember.ones(starts.shape[1], {dtype = "int64"}))
  bag = bag:cumsum(1):to(dev)
  input = input:to(dev)
  if o.padding_idx ~= nil then
    local pad = F._check_padding_idx(o.padding_idx, weight.shape[1], op)
    local keep = input:ne(pad):nonzero():reshape(-1)
    input, bag = input:index_select(1, keep), bag:index_select(1, keep)
    if psw then psw = psw:index_select(1, keep) end
  end
  local m = input.shape[1]
  local rows = F._embedding(input, weight, nil, op)             -- [m, D]
  local zeros = ember.zeros(out_shape, {dtype = weight.dtype, device = dev})
  if m == 0 then return zeros end
  if mode == "max" then
    -- the first entry of each bag holding the column's maximum, picked with gather so that
    -- the gradient goes to it alone
    local at = bag:unsqueeze(2):expand(m, D)
    local top = zeros:scatter_reduce(1, at, rows:detach(), "amax", {include_self = false})
    local hit = rows:detach():eq(top:gather(1, at))
    local pos = ember.arange(1, m + 1, {device = dev}):unsqueeze(2):expand(m, D)
    local none = ember.full(out_shape, m + 1, {dtype = "int64", device = dev})
    local first = none:scatter_reduce(1, at, ember.where(hit, pos, m + 1), "amin", {include_self = true})
    local filled = first:le(m)
    return rows:gather(1, first:clamp(1, m)) * filled:to(weight.dtype)
  end
  if psw then rows = rows * psw:to(dev):to(weight.dtype):unsqueeze(2) end
  local sums = zeros:index_add(1, bag, rows)
  if mode == "sum" then return sums end
  local counts = ember.zeros(B, {dtype = weight.dtype, device = dev}):index_add(1, bag, ember.ones(m, {dtype = weight.dtype, device = dev}))
  return sums / counts:clamp_min(1):unsqueeze(2)
end

-- ---- losses ------------------------------------------------------------------

--- F.mse_loss(input, target [, {reduction = "mean"}]) -> mean squared error.
-- input and target must have the same shape (PyTorch only warns; a silent broadcast is usually a bug).
-- Example: F.mse_loss(pred, y)
local mse_names = {"size_average", "reduce", "reduction"}
function F.mse_loss(input, target, ...)
  local reduction
  input, target, reduction = loss_start("mse_loss", "fp32", mse_names, both_tensors, input, target, ...)
  if shape_str(input) ~= shape_str(target) then
    raise(string.format("mse_loss: input shape %s and target shape %s differ (reshape one of them)",
                        shape_str(input), shape_str(target)))
  end
  -- square rather than d * d: the same values, and a backward of one product (g 2d) where
  -- mul's two products were added (mse_loss's backward at 2.7x PyTorch's time)
  return reduce((input - target):square(), reduction)
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
local nll_names = {"weight", "size_average", "ignore_index", "reduce", "reduction"}
function F.nll_loss(logp, target, ...)
  local reduction, opts
  logp, target, reduction, opts = loss_start("nll_loss", "fp32", nll_names, both_tensors, logp, target, ...)
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
local cross_entropy_names = {"weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing"}
function F.cross_entropy(input, target, ...)
  local op = "cross_entropy"
  local reduction, opts
  input, target, reduction, opts = loss_start(op, "fp32", cross_entropy_names, both_tensors, input, target, ...)
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
local bce_logits_names = {"weight", "size_average", "reduce", "reduction", "pos_weight"}
function F.binary_cross_entropy_with_logits(x, y, ...)
  local op = "binary_cross_entropy_with_logits"
  local reduction, opts
  x, y, reduction, opts = loss_start(op, "fp32", bce_logits_names, both_tensors, x, y, ...)
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

-- ---- convolution, pooling and normalisation -------------------------------------------
-- The engine ops, as they are: an error then names the caller's line, not this file's.
F.conv1d, F.conv2d, F.conv3d = ember.conv1d, ember.conv2d, ember.conv3d
F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d =
  ember.conv_transpose1d, ember.conv_transpose2d, ember.conv_transpose3d
F.max_pool1d, F.max_pool2d, F.max_pool3d = ember.max_pool1d, ember.max_pool2d, ember.max_pool3d
F.avg_pool1d, F.avg_pool2d, F.avg_pool3d = ember.avg_pool1d, ember.avg_pool2d, ember.avg_pool3d
F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d =
  ember.adaptive_avg_pool1d, ember.adaptive_avg_pool2d, ember.adaptive_avg_pool3d
F.adaptive_max_pool1d, F.adaptive_max_pool2d = ember.adaptive_max_pool1d, ember.adaptive_max_pool2d
F.adaptive_max_pool3d = ember.adaptive_max_pool3d
F.batch_norm, F.group_norm, F.layer_norm = ember.batch_norm, ember.group_norm, ember.layer_norm

F._options = options

-- machine epsilon of the float dtypes (torch.finfo(dtype).eps)
local FINFO_EPS = {float64 = 2.220446049250313e-16, float32 = 1.1920928955078125e-07,
                   float16 = 0.0009765625, bfloat16 = 0.0078125}

--- F.rms_norm(input, normalized_shape [, weight [, eps]]) -> input / sqrt(mean(input^2) + eps) * weight.
-- The mean is over the last #normalized_shape dims (a number or a list), which must equal
-- normalized_shape; weight (optional) has shape normalized_shape. eps = nil is the machine
-- epsilon of the dtype the arithmetic runs in: float32's for float32, float16 and bfloat16
-- (computed in float32, weight included, and rounded once, as PyTorch 2.15's CPU kernel),
-- float64's for float64. Like torch.nn.functional.rms_norm (PyTorch 2.4+).
-- Example: F.rms_norm(ember.randn(2, 8), 8, ember.ones(8), 1e-6)
function F.rms_norm(x, normalized_shape, ...)
  local o = options("rms_norm", {"weight", "eps"}, ...)
  check_tensor(x, "rms_norm", "input")
  if not x:is_floating_point() then raise("rms_norm: input must be a floating-point tensor, got " .. x.dtype) end
  local ns = type(normalized_shape) == "number" and {normalized_shape} or normalized_shape
  if type(ns) ~= "table" or #ns == 0 then
    raise("rms_norm: normalized_shape must be an integer or a non-empty list of integers, got "
          .. tostring(normalized_shape))
  end
  local k, ok = #ns, x.ndim >= #ns
  for i = 1, k do ok = ok and x.shape[x.ndim - k + i] == ns[i] end
  if not ok then
    raise(string.format("rms_norm: input %s: expected an input of shape [..., %s] (normalized_shape)",
                        shape_str(x), table.concat(ns, ", ")))
  end
  local w, eps = o.weight, o.eps
  -- PyTorch's CUDA list runs rms_norm in float32 (the result too); its CPU lists do not hold it
  x, w = autocast("fp32_cuda", x, w)
  if w ~= nil then
    check_tensor(w, "rms_norm", "weight")
    if shape_str(w) ~= "[" .. table.concat(ns, ", ") .. "]" then
      raise(string.format("rms_norm: weight %s must have normalized_shape [%s]", shape_str(w), table.concat(ns, ", ")))
    end
  end
  local opmath = x.dtype == "float64" and "float64" or "float32"
  if eps == nil then eps = FINFO_EPS[opmath] end
  if type(eps) ~= "number" or eps < 0 then raise("rms_norm: eps must be a non-negative number, got " .. tostring(eps)) end
  local dims = {}
  for i = 1, k do dims[i] = x.ndim - k + i end
  local xf = x.dtype == opmath and x or x:to(opmath)
  local y = xf * (xf * xf):mean(dims, true):add(eps):rsqrt()
  if w ~= nil then y = y * (w.dtype == opmath and w or w:to(opmath)) end
  return y.dtype == x.dtype and y or y:to(x.dtype)
end
F._finfo_eps = FINFO_EPS

local function list_str(t) return "[" .. table.concat(t, ", ") .. "]" end

-- A size argument for n dims: a number (every dim) or a list of n numbers, each an
-- integer >= lo. Returns a list of n integers.
local function sizes(v, n, op, what, lo)
  local out = {}
  if type(v) == "number" then
    for i = 1, n do out[i] = v end
  elseif type(v) == "table" and not ember.is_tensor(v) and #v == n then
    for i = 1, n do out[i] = v[i] end
  else
    raise(string.format("%s: %s must be an integer or a list of %d integers, got %s", op, what, n,
                        type(v) == "table" and (ember.is_tensor(v) and "a tensor" or "a list of " .. #v) or tostring(v)))
  end
  for i = 1, n do
    local k = type(out[i]) == "number" and math.tointeger(out[i])
    if not k or k < lo then
      raise(string.format("%s: %s must be integers >= %d, got %s", op, what, lo, tostring(out[i])))
    end
    out[i] = k
  end
  return out
end
F._sizes = sizes

local function check_input(x, op, ranks, what)
  if not ember.is_tensor(x) then raise(string.format("%s: input must be a tensor, got %s", op, type(x))) end
  if ranks and not ranks[x.ndim] then
    raise(string.format("%s: expected %s input, got %s", op, what, shape_str(x)))
  end
end

local function index_tensor(list, device)
  return ember.tensor(list, {dtype = "int64", device = device})
end

-- ---- padding ------------------------------------------------------------------------

-- source position (1-based) of output position j of a padded dim, or nil outside
-- (constant mode); l is the (possibly negative) padding before the dim of size n
local source = {
  reflect = function(i, n)
    if i < 1 then return 2 - i end
    if i > n then return 2 * n - i end
    return i
  end,
  replicate = function(i, n) return math.min(math.max(i, 1), n) end,
  circular = function(i, n) return (i - 1) % n + 1 end,
}

local function pad_constant(x, dim, l, r, value)
  local n = x.shape[dim]
  if l < 0 then x = x:narrow(dim, 1 - l, n + l); n = n + l end
  if r < 0 then x = x:narrow(dim, 1, n + r) end
  if l <= 0 and r <= 0 then return x end
  local parts = {}
  local function block(k)
    local shape = {}
    for i, s in ipairs(x.shape) do shape[i] = i == dim and k or s end
    return ember.full(shape, value, {dtype = x.dtype, device = x.device})
  end
  if l > 0 then parts[#parts + 1] = block(l) end
  parts[#parts + 1] = x
  if r > 0 then parts[#parts + 1] = block(r) end
  return ember.cat(parts, dim)
end

local function pad_map(x, dim, l, r, mode)
  local n = x.shape[dim]
  local idx, map = {}, source[mode]
  for j = 1, n + l + r do idx[j] = map(j - l, n) end
  return x:index_select(dim, index_tensor(idx, x.device))
end

-- x padded by amounts >= 0 into one new tensor of the padded shape: x copied into
-- its middle, then, last dim first, each dim's edges copied from values already in
-- place (so corners come from the edges of the dims before, as padding dim after dim
-- gives). The cats or index_selects per dim wrote every element once per padded dim
-- (1.7x PyTorch's time in constant mode, 3x in the others).
local function pad_into(x, shape, pad, k, mode, value)
  local opts = {dtype = x.dtype, device = x.device}
  local y = mode == "constant" and ember.full(shape, value, opts) or ember.empty(shape, opts)
  local function middle(t, from)   -- t narrowed to x's extent along the dims of pairs from..k
    for i = from, k do
      local dim = x.ndim - i + 1
      t = t:narrow(dim, math.tointeger(pad[2 * i - 1]) + 1, x.shape[dim])
    end
    return t
  end
  middle(y, 1):copy_(x)
  if mode == "constant" then return y end
  for i = 1, k do
    local dim = x.ndim - i + 1
    local l, r, n = math.tointeger(pad[2 * i - 1]), math.tointeger(pad[2 * i]), x.shape[dim]
    -- along dim, v holds the left edge at [1, l], x's values at [l + 1, l + n], the right edge after
    local v = middle(y, i + 1)
    local function mirror(t) return t.shape[dim] > 1 and t:flip(dim) or t end
    if l > 0 then
      local from = mode == "reflect" and mirror(v:narrow(dim, l + 2, l))
                   or mode == "replicate" and v:narrow(dim, l + 1, 1)
                   or v:narrow(dim, n + 1, l)                          -- circular: x's last l
      v:narrow(dim, 1, l):copy_(from)
    end
    if r > 0 then
      local from = mode == "reflect" and mirror(v:narrow(dim, l + n - r, r))
                   or mode == "replicate" and v:narrow(dim, l + n, 1)
                   or v:narrow(dim, l + 1, r)                          -- circular: x's first r
      v:narrow(dim, l + n + 1, r):copy_(from)
    end
  end
  return y
end

--- F.pad(x, pad [, mode = "constant" [, value = 0]]) -> x padded; pad = {left, right, top, bottom, ...}
-- pad lists (before, after) pairs from the LAST dim backwards, as PyTorch; negative
-- amounts crop. mode: "constant" (fills value), "reflect", "replicate", "circular";
-- the non-constant modes pad the last 1-3 dims of a batched or unbatched input.
-- Example: F.pad(ember.ones(1, 1, 2, 2), {1, 1, 0, 2})   -- [1, 1, 4, 4]
function F.pad(x, pad, ...)
  local op = "pad"
  local o = options(op, {"mode", "value"}, ...)
  local mode = o.mode or "constant"
  check_input(x, op)
  if type(pad) ~= "table" or ember.is_tensor(pad) or #pad % 2 ~= 0 then
    raise(string.format("%s: pad must be a list of (before, after) pairs, an even number of integers, got %s",
                        op, type(pad) == "table" and "a list of " .. #pad or tostring(pad)))
  end
  local k = #pad // 2
  if k > x.ndim then
    raise(string.format("%s: %d pad values pad %d dims, more than the input %s has", op, #pad, k, shape_str(x)))
  end
  for i = 1, #pad do
    if math.type(pad[i]) ~= "integer" and not (type(pad[i]) == "number" and math.tointeger(pad[i])) then
      raise(string.format("%s: pad values must be integers, got %s", op, tostring(pad[i])))
    end
  end
  if mode ~= "constant" and not source[mode] then
    raise(op .. ": mode must be \"constant\", \"reflect\", \"replicate\" or \"circular\", got " .. tostring(mode))
  end
  if mode == "constant" then
    local value = o.value or 0
    if type(value) ~= "number" then raise(op .. ": value must be a number, got " .. type(value)) end
  else
    if o.value ~= nil and o.value ~= 0 then raise(op .. ": value is only for mode \"constant\", got mode \"" .. mode .. "\"") end
    if k > 3 or x.ndim < k + 1 or x.ndim > k + 2 then
      raise(string.format("%s: mode \"%s\" pads the last 1-3 dims of a [N, C, ...] or [C, ...] input: %d pad values "
                          .. "need a %d-D or %d-D input, got %s", op, mode, #pad, k + 1, k + 2, shape_str(x)))
    end
  end
  -- every dim's amounts checked before any work
  local shape, grows = {}, true
  for i, s in ipairs(x.shape) do shape[i] = s end
  for i = 1, k do
    local dim = x.ndim - i + 1
    local l, r = math.tointeger(pad[2 * i - 1]), math.tointeger(pad[2 * i])
    local n = x.shape[dim]
    if n + l + r < 0 then
      raise(string.format("%s: pad {%d, %d} of dim %d of %s leaves a negative size %d", op, l, r, dim, shape_str(x), n + l + r))
    end
    if mode ~= "constant" and (l ~= 0 or r ~= 0) then
      if mode == "reflect" and (l >= n or r >= n) then
        raise(string.format("%s: reflect padding {%d, %d} of dim %d must be less than its size %d (input %s)",
                            op, l, r, dim, n, shape_str(x)))
      elseif mode == "circular" and (l > n or r > n) then
        raise(string.format("%s: circular padding {%d, %d} of dim %d must be at most its size %d (input %s)",
                            op, l, r, dim, n, shape_str(x)))
      elseif n == 0 then
        raise(string.format("%s: mode \"%s\" cannot pad dim %d of size 0 (input %s)", op, mode, dim, shape_str(x)))
      end
    end
    grows = grows and l >= 0 and r >= 0
    shape[dim] = n + l + r
  end
  if grows and x:numel() > 0 and not (x.requires_grad and ember.is_grad_enabled()) then
    return pad_into(x, shape, pad, k, mode, o.value or 0)
  end
  -- crops, or a gradient to record: one cat (constant) or index_select (the others) per dim
  local y = x
  for i = 1, k do
    local dim = x.ndim - i + 1
    local l, r = math.tointeger(pad[2 * i - 1]), math.tointeger(pad[2 * i])
    if mode == "constant" then
      y = pad_constant(y, dim, l, r, o.value or 0)
    elseif l ~= 0 or r ~= 0 then
      y = pad_map(y, dim, l, r, mode)
    end
  end
  return y
end

-- ---- interpolate --------------------------------------------------------------------

local function f32(v) return (string.unpack("f", string.pack("f", v))) end

-- PyTorch's nearest source index (computed in float32 there, so here too)
local function nearest_index(dst, n_in, n_out, scale, exact)
  if n_out == n_in then return dst + 1 end
  if not exact and n_out == 2 * n_in then return dst // 2 + 1 end
  local s = f32(scale and scale > 0 and 1 / scale or n_in / n_out)
  local src = exact and math.floor(f32(f32(dst + 0.5) * s)) or math.floor(f32(dst * s))
  return math.min(src, n_in - 1) + 1
end

-- x with dim resampled from n_in to n_out entries by linear interpolation
local function linear_dim(x, dim, n_out, align_corners, scale)
  local n_in = x.shape[dim]
  local s
  if align_corners then
    s = n_out > 1 and (n_in - 1) / (n_out - 1) or 0
  else
    s = (scale and scale > 0) and 1 / scale or n_in / n_out
  end
  local i0, i1, w0, w1 = {}, {}, {}, {}
  for d = 0, n_out - 1 do
    local src
    if align_corners then src = s * d else src = math.max(s * (d + 0.5) - 0.5, 0) end
    local a = math.floor(src)
    local lam = math.min(math.max(src - a, 0), 1)
    i0[d + 1] = a + 1
    i1[d + 1] = a + 1 + (a < n_in - 1 and 1 or 0)
    w0[d + 1], w1[d + 1] = 1 - lam, lam
  end
  local wshape = {}
  for i = 1, x.ndim do wshape[i] = i == dim and n_out or 1 end
  local wopts = {dtype = x.dtype, device = x.device}
  local x0 = x:index_select(dim, index_tensor(i0, x.device))
  local x1 = x:index_select(dim, index_tensor(i1, x.device))
  return x0 * ember.tensor(w0, wopts):reshape(wshape) + x1 * ember.tensor(w1, wopts):reshape(wshape)
end

local linear_rank = {linear = 3, bilinear = 4, trilinear = 5}

--- F.interpolate(x, {size=, scale_factor=, mode = "nearest", align_corners=, recompute_scale_factor=}) -> x resized.
-- x is [N, C, d1, ...] with 1-3 spatial dims; give size (the output's spatial sizes) or
-- scale_factor (output = floor(input * factor)), a number or one per dim. Modes as
-- PyTorch: "nearest" (source floor(dst * in / out)), "nearest-exact", and "linear" (3-D),
-- "bilinear" (4-D), "trilinear" (5-D) with align_corners (default false). Positional
-- form: F.interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor).
-- Example: F.interpolate(ember.randn(1, 3, 8, 8), {scale_factor = 2, mode = "bilinear"})  -- [1, 3, 16, 16]
function F.interpolate(x, ...)
  local op = "interpolate"
  local o = options(op, {"size", "scale_factor", "mode", "align_corners", "recompute_scale_factor"}, ...)
  check_input(x, op, {[3] = true, [4] = true, [5] = true}, "a [N, C, d1 (, d2 (, d3))] (3-D to 5-D)")
  x = autocast("fp32_cuda", x)   -- the upsample ops are in PyTorch's CUDA float32 list
  local mode = o.mode or "nearest"
  local nd = x.ndim - 2
  if mode ~= "nearest" and mode ~= "nearest-exact" and not linear_rank[mode] then
    raise(op .. ": mode must be \"nearest\", \"nearest-exact\", \"linear\", \"bilinear\" or \"trilinear\", got " .. tostring(mode))
  end
  if linear_rank[mode] and linear_rank[mode] ~= x.ndim then
    raise(string.format("%s: mode \"%s\" needs a %d-D input, got %s", op, mode, linear_rank[mode], shape_str(x)))
  end
  if o.align_corners ~= nil and not linear_rank[mode] then
    raise(op .. ": align_corners can only be set with the interpolating modes linear, bilinear and trilinear, got mode \"" .. mode .. "\"")
  end
  if (o.size == nil) == (o.scale_factor == nil) then
    raise(op .. ": give exactly one of size and scale_factor")
  end
  local out, scales = {}, {}
  if o.size ~= nil then
    out = sizes(o.size, nd, op, "size", 0)
  else
    local sf = o.scale_factor
    if type(sf) == "number" then sf = {} for i = 1, nd do sf[i] = o.scale_factor end end
    if type(sf) ~= "table" or #sf ~= nd then
      raise(string.format("%s: scale_factor must be a number or a list of %d numbers, got %s", op, nd, tostring(o.scale_factor)))
    end
    for i = 1, nd do
      if type(sf[i]) ~= "number" or not (sf[i] > 0) or sf[i] == math.huge then
        raise(string.format("%s: scale_factor must be positive and finite, got %s", op, tostring(sf[i])))
      end
      out[i] = math.floor(x.shape[i + 2] * sf[i])
      scales[i] = not o.recompute_scale_factor and sf[i] or nil
    end
  end
  for i = 1, nd do
    if out[i] <= 0 or x.shape[i + 2] <= 0 then
      raise(string.format("%s: input %s and output sizes %s must be positive", op, shape_str(x), list_str(out)))
    end
  end
  -- the output must fit in memory before the per-position tables below are built (their
  -- length is an output size, so a size nobody can hold would loop for ever)
  local full = {x.shape[1], x.shape[2], table.unpack(out, 1, nd)}
  local fits, why = pcall(ember.empty, full, {dtype = x.dtype, device = x.device})
  if not fits then
    raise(string.format("%s: the output %s cannot be made: %s", op, list_str(full),
                        tostring(why):gsub("^[^:]+:%d+: ", "")))
  end
  fits, why = nil, nil
  local y = x
  for i = nd, 1, -1 do   -- the last dim first: PyTorch's order of the sums
    local dim = i + 2
    if linear_rank[mode] then
      y = linear_dim(y, dim, out[i], o.align_corners == true, scales[i])
    elseif out[i] ~= x.shape[dim] or scales[i] then
      local idx = {}
      for d = 0, out[i] - 1 do idx[d + 1] = nearest_index(d, x.shape[dim], out[i], scales[i], mode == "nearest-exact") end
      y = y:index_select(dim, index_tensor(idx, x.device))
    end
  end
  return y
end

-- ---- unfold / fold --------------------------------------------------------------------

local block_names = {"dilation", "padding", "stride"}

local function block_params(op, kernel_size, o)
  local k = sizes(kernel_size, 2, op, "kernel_size", 1)
  local d = sizes(o.dilation or 1, 2, op, "dilation", 1)
  local p = sizes(o.padding or 0, 2, op, "padding", 0)
  local s = sizes(o.stride or 1, 2, op, "stride", 1)
  return k, d, p, s
end

-- the number of blocks along each of the 2 dims of an [h, w] plane (padding included)
local function block_counts(op, plane, k, d, p, s)
  local L = {}
  for i = 1, 2 do
    L[i] = (plane[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1
  end
  if L[1] < 1 or L[2] < 1 then
    raise(string.format("%s: a spatial size %s with kernel_size %s, dilation %s, padding %s gives %s blocks; "
                        .. "each must be at least 1", op, list_str(plane), list_str(k), list_str(d), list_str(p),
                        list_str(L)))
  end
  return L
end

-- [N, C, H, W] (padded already) -> [N, C * kh * kw, L] by strided views
local function im2col(x, k, d, s)
  local u = x:unfold(3, d[1] * (k[1] - 1) + 1, s[1]):unfold(4, d[2] * (k[2] - 1) + 1, s[2])
  u = u:slice(5, 1, -1, d[1]):slice(6, 1, -1, d[2])       -- [N, C, oh, ow, kh, kw]
  local n, c, oh, ow = u.shape[1], u.shape[2], u.shape[3], u.shape[4]
  return u:permute(1, 2, 5, 6, 3, 4):reshape(n, c * k[1] * k[2], oh * ow)
end

--- F.unfold(x, kernel_size [, {dilation = 1, padding = 0, stride = 1}]) -> the sliding blocks as columns.
-- x [N, C, H, W] (or [C, H, W]) -> [N, C * kh * kw, L], L the number of blocks; column l holds
-- block l (row-major over the block grid), rows ordered by channel, then kernel row-major.
-- Positional form: F.unfold(x, kernel_size, dilation, padding, stride). Zero padding.
-- Example: F.unfold(ember.randn(1, 3, 4, 4), 2).shape   -- {1, 12, 9}
function F.unfold(x, kernel_size, ...)
  local op = "unfold"
  local o = options(op, block_names, ...)
  check_input(x, op, {[3] = true, [4] = true}, "a [N, C, H, W] or [C, H, W]")
  local k, d, p, s = block_params(op, kernel_size, o)
  local batched = x.ndim == 4
  if not batched then x = x:unsqueeze(1) end
  block_counts(op, {x.shape[3], x.shape[4]}, k, d, p, s)
  if p[1] > 0 or p[2] > 0 then x = F.pad(x, {p[2], p[2], p[1], p[1]}) end
  local cols = im2col(x, k, d, s)
  return batched and cols or cols:squeeze(1)
end

--- F.fold(cols, output_size, kernel_size [, {dilation = 1, padding = 0, stride = 1}]) -> the blocks summed into an image.
-- The adjoint of F.unfold: cols [N, C * kh * kw, L] (or [C * kh * kw, L]) -> [N, C, H, W] with
-- output_size = {H, W}; overlapping entries add up. Positional form:
-- F.fold(cols, output_size, kernel_size, dilation, padding, stride).
-- Example: F.fold(ember.ones(1, 4, 9), {4, 4}, 2)   -- the 4x4 image of overlap counts
function F.fold(cols, output_size, kernel_size, ...)
  local op = "fold"
  local o = options(op, block_names, ...)
  check_input(cols, op, {[2] = true, [3] = true}, "a [N, C * kh * kw, L] or [C * kh * kw, L]")
  local out = sizes(output_size, 2, op, "output_size", 1)
  local k, d, p, s = block_params(op, kernel_size, o)
  local batched = cols.ndim == 3
  if not batched then cols = cols:unsqueeze(1) end
  local kk = k[1] * k[2]
  local L = block_counts(op, out, k, d, p, s)
  local n, rows, l = cols.shape[1], cols.shape[2], cols.shape[3]
  if rows % kk ~= 0 or l ~= L[1] * L[2] then
    raise(string.format("%s: input %s with output_size %s, kernel_size %s, dilation %s, padding %s and stride %s "
                        .. "needs a dim 2 divisible by %d and %d blocks (%d x %d) in dim 3", op, shape_str(cols),
                        list_str(out), list_str(k), list_str(d), list_str(p), list_str(s), kk, L[1] * L[2], L[1], L[2]))
  end
  local c = rows // kk
  local hp, wp = out[1] + 2 * p[1], out[2] + 2 * p[2]
  -- where each column entry lands in the padded plane: the blocks of an image of positions
  local where = im2col(ember.arange(1, hp * wp + 1, {dtype = "int64", device = cols.device}):reshape(1, 1, hp, wp),
                       k, d, s):reshape(-1)
  local img = ember.zeros({n, c, hp * wp}, {dtype = cols.dtype, device = cols.device})
  img = img:index_add(3, where, cols:reshape(n, c, kk * l)):reshape(n, c, hp, wp)
  if p[1] > 0 then img = img:narrow(3, p[1] + 1, out[1]) end
  if p[2] > 0 then img = img:narrow(4, p[2] + 1, out[2]) end
  return batched and img or img:squeeze(1)
end

-- ---- channel dropout, alpha dropout, max_unpool1d/2d/3d, instance_norm -------------------

-- Channel dropout of x, whose rank must be a key of ranks: "batched" for [N, C, ...],
-- "unbatched" for [C, ...]; what describes the ranks for the error
local function channel_dropout(op, x, ranks, what, ...)
  local p, training, inplace = dropout_args(op, true, ...)
  check_input(x, op, ranks, what)
  if not training or p == 0 or x:numel() == 0 then return x end
  if ranks[x.ndim] == "batched" then return dropout_impl(x, p, inplace, true, false) end
  local y = dropout_impl(x:unsqueeze(1), p, inplace, true, false)
  return inplace and x or y:squeeze(1)
end

--- F.dropout1d(x [, p = 0.5 [, training = true [, inplace = false]]]) -> x with whole channels zeroed with probability p.
-- x [N, C, L] or unbatched [C, L]: one draw per channel; kept channels are scaled by 1/(1-p).
-- Example: F.dropout1d(ember.ones(2, 4, 3), 0.5)
function F.dropout1d(x, ...)
  return channel_dropout("dropout1d", x, {[2] = "unbatched", [3] = "batched"}, "a [N, C, L] or [C, L]", ...)
end

--- F.dropout2d(x [, p = 0.5 [, training = true [, inplace = false]]]) -> x with whole channels zeroed with probability p.
-- x [N, C, H, W] (or [N, C, L], as PyTorch 1.13): one draw per (n, c); kept channels are
-- scaled by 1/(1-p). Identity when not training or p == 0.
-- Example: F.dropout2d(features, 0.2, model.training)
function F.dropout2d(x, ...)
  -- a 3-D input is [N, C, L] (PyTorch's behaviour, with a warning there), not an unbatched [C, H, W]
  return channel_dropout("dropout2d", x, {[3] = "batched", [4] = "batched"}, "a [N, C, H, W] (or [N, C, L])", ...)
end

--- F.dropout3d(x [, p = 0.5 [, training = true [, inplace = false]]]) -> x with whole channels zeroed with probability p.
-- x [N, C, D, H, W] or unbatched [C, D, H, W]: one draw per channel.
-- Example: F.dropout3d(ember.ones(2, 4, 2, 2, 2), 0.5)
function F.dropout3d(x, ...)
  return channel_dropout("dropout3d", x, {[4] = "unbatched", [5] = "batched"}, "a [N, C, D, H, W] or [C, D, H, W]", ...)
end

--- F.alpha_dropout(x [, p = 0.5 [, training = false [, inplace = false]]]) -> x with dropout that keeps SELU's mean and variance.
-- Example: F.alpha_dropout(ember.randn(4, 8), 0.2, true)
function F.alpha_dropout(x, ...)
  local op = "alpha_dropout"
  local p, training, inplace = dropout_args(op, false, ...)
  check_input(x, op)
  if not training or p == 0 or x:numel() == 0 then return x end
  return dropout_impl(x, p, inplace, false, true)
end

--- F.feature_alpha_dropout(x [, p = 0.5 [, training = false [, inplace = false]]]) -> alpha dropout of whole channels.
-- x [N, C, ...] (at least 2-D): one draw per (n, c).
-- Example: F.feature_alpha_dropout(ember.randn(2, 4, 3), 0.2, true)
function F.feature_alpha_dropout(x, ...)
  local op = "feature_alpha_dropout"
  local p, training, inplace = dropout_args(op, false, ...)
  check_input(x, op)
  if x.ndim < 2 then raise(string.format("%s: expected an input with at least 2 dims [N, C, ...], got %s", op, shape_str(x))) end
  if not training or p == 0 or x:numel() == 0 then return x end
  return dropout_impl(x, p, inplace, true, true)
end

-- F.max_unpool1d/2d/3d: the partial inverse of max_poolNd over nd spatial dims
local function max_unpool(nd, x, indices, kernel_size, ...)
  local op = "max_unpool" .. nd .. "d"
  local o = options(op, {"stride", "padding", "output_size"}, ...)
  local dims = ({"L", "H, W", "D, H, W"})[nd]
  check_input(x, op, {[nd + 1] = true, [nd + 2] = true}, string.format("a [N, C, %s] or [C, %s]", dims, dims))
  if not ember.is_tensor(indices) or shape_str(indices) ~= shape_str(x) or indices.dtype ~= "int64" then
    raise(string.format("%s: indices must be an int64 tensor of the input's shape %s, got %s", op, shape_str(x),
                        ember.is_tensor(indices) and indices.dtype .. " " .. shape_str(indices) or type(indices)))
  end
  local k = sizes(kernel_size, nd, op, "kernel_size", 1)
  local s = sizes(o.stride or kernel_size, nd, op, "stride", 1)
  local p = sizes(o.padding or 0, nd, op, "padding", 0)
  local batched = x.ndim == nd + 2
  if not batched then x, indices = x:unsqueeze(1), indices:unsqueeze(1) end
  local out, lo_out, hi_out = {}, {}, {}
  for i = 1, nd do
    out[i] = (x.shape[i + 2] - 1) * s[i] - 2 * p[i] + k[i]
    lo_out[i], hi_out[i] = out[i] - s[i], out[i] + s[i]
  end
  if o.output_size ~= nil then
    local want = o.output_size
    if type(want) == "table" and #want == nd + 2 then want = {table.unpack(want, 3, nd + 2)} end
    want = sizes(want, nd, op, "output_size", 0)
    for i = 1, nd do
      if want[i] <= lo_out[i] or want[i] >= hi_out[i] then
        raise(string.format("%s: output_size %s must be between %s and %s (exclusive) for input %s", op,
                            list_str(want), list_str(lo_out), list_str(hi_out), shape_str(x)))
      end
    end
    out = want
  end
  local n, c = x.shape[1], x.shape[2]
  local plane = 1
  for i = 1, nd do plane = plane * out[i] end
  local flat = indices:reshape(n, c, -1)
  if flat:numel() > 0 then
    local lo, hi = flat:min():item(), flat:max():item()
    if lo < 1 or hi > plane then
      raise(string.format("%s: index %d out of range for output planes of %s = %d positions (indices are 1-based)",
                          op, lo < 1 and lo or hi, table.concat(out, " x "), plane))
    end
  end
  local y = ember.zeros({n, c, plane}, {dtype = x.dtype, device = x.device})
  y = y:scatter(3, flat, x:reshape(n, c, -1)):reshape(n, c, table.unpack(out, 1, nd))
  return batched and y or y:squeeze(1)
end

--- F.max_unpool1d(x, indices, kernel_size [, {stride = kernel_size, padding = 0, output_size=}]) -> the partial inverse of max_pool1d.
-- Example: local y, i = F.max_pool1d(x, 2, {return_indices = true}); local back = F.max_unpool1d(y, i, 2)
function F.max_unpool1d(x, indices, kernel_size, ...) return max_unpool(1, x, indices, kernel_size, ...) end

--- F.max_unpool2d(x, indices, kernel_size [, {stride = kernel_size, padding = 0, output_size=}]) -> the partial inverse of max_pool2d.
-- Puts each value of x [N, C, h, w] at its 1-based position in its output plane (indices
-- as max_pool2d returns them), zeros elsewhere. The output plane is
-- (h - 1) * stride - 2 * padding + kernel_size per dim unless output_size ({H, W}, or
-- {N, C, H, W}) says otherwise. Positional: F.max_unpool2d(x, indices, k, stride, padding, output_size).
-- Example: local y, i = F.max_pool2d(x, 2, {return_indices = true}); local back = F.max_unpool2d(y, i, 2)
function F.max_unpool2d(x, indices, kernel_size, ...) return max_unpool(2, x, indices, kernel_size, ...) end

--- F.max_unpool3d(x, indices, kernel_size [, {stride = kernel_size, padding = 0, output_size=}]) -> the partial inverse of max_pool3d.
-- Example: local y, i = F.max_pool3d(x, 2, {return_indices = true}); local back = F.max_unpool3d(y, i, 2)
function F.max_unpool3d(x, indices, kernel_size, ...) return max_unpool(3, x, indices, kernel_size, ...) end

--- F.instance_norm(x [, running_mean [, running_var [, weight [, bias [, use_input_stats = true [, momentum = 0.1 [, eps = 1e-5]]]]]]]) -> x normalised per sample and channel.
-- x [N, C, ...]: each (n, c) plane gets mean 0 and biased variance 1, then * weight[c] +
-- bias[c]. As PyTorch, it is batch_norm on x seen as [1, N * C, ...]; running stats (when
-- given and use_input_stats) are updated in place with the mean over the batch of the
-- per-sample statistics; use_input_stats = false normalises with the running stats.
-- Options-table form: F.instance_norm(x, {running_mean=, weight=, eps=, ...}).
-- Example: F.instance_norm(ember.randn(2, 3, 8, 8))
function F.instance_norm(x, ...)
  local op = "instance_norm"
  local o = options(op, {"running_mean", "running_var", "weight", "bias", "use_input_stats", "momentum", "eps"}, ...)
  check_input(x, op)
  if x.ndim < 3 then raise(string.format("%s: expected a [N, C, ...] input with at least one spatial dim, got %s", op, shape_str(x))) end
  local use_input_stats = o.use_input_stats ~= false
  local n, c = x.shape[1], x.shape[2]
  for _, name in ipairs{"running_mean", "running_var", "weight", "bias"} do
    local t = o[name]
    if t ~= nil and (not ember.is_tensor(t) or t.ndim ~= 1 or t.shape[1] ~= c) then
      raise(string.format("%s: %s must be a tensor of shape [%d] for input %s, got %s", op, name, c, shape_str(x),
                          ember.is_tensor(t) and shape_str(t) or type(t)))
    end
  end
  if not use_input_stats and (o.running_mean == nil or o.running_var == nil) then
    raise(op .. ": use_input_stats = false needs running_mean and running_var")
  end
  local function per_sample(t) return t and t:unsqueeze(1):expand(n, c):reshape(n * c) end
  local rm, rv = per_sample(o.running_mean), per_sample(o.running_var)
  local shape = {1, n * c}
  for i = 3, x.ndim do shape[i] = x.shape[i] end
  local ok, y = pcall(ember.batch_norm, x:reshape(shape), rm and rm:detach(), rv and rv:detach(),
                      per_sample(o.weight), per_sample(o.bias), use_input_stats, o.momentum or 0.1, o.eps or 1e-5)
  if not ok then raise(op .. ": " .. tostring(y)) end
  if use_input_stats and rm then
    ember.no_grad(function()
      o.running_mean:copy_(rm:view(n, c):mean(1))
      o.running_var:copy_(rv:view(n, c):mean(1))
    end)
  end
  return y:view(x.shape)
end

-- ---- activations ------------------------------------------------------------------------
-- Each takes PyTorch's arguments after x positionally or as one options table:
-- F.leaky_relu(x, 0.2) or F.leaky_relu(x, {negative_slope = 0.2, inplace = true}).
-- Kinks get PyTorch's subgradients (where() picks the branch PyTorch's backward picks),
-- and no branch that where() discards can overflow, so its zero gradient stays zero.

-- v as a number option (default when nil), or an error naming op and the option
local function number_opt(v, default, op, name)
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v then
    raise(string.format("%s: %s must be a number, got %s", op, name, type(v) == "number" and "nan" or tostring(v)))
  end
  return v
end

local function check_float(x, op)
  check_input(x, op)
  if not x:is_floating_point() then
    raise(string.format("%s: expected a floating-point input, got %s %s", op, x.dtype, shape_str(x)))
  end
end

-- The optional arguments of a function of a floating-point tensor x, read by options()
-- (names as it takes them) before x is checked
local function float_args(op, names, x, ...)
  local o = options(op, names, ...)
  check_float(x, op)
  return o
end

-- y, or x overwritten with y when inplace (refused, as every in-place op, on a tensor
-- that requires grad while grad mode is on)
local function result(x, y, inplace, op)
  if not inplace then return y end
  local ok, e = pcall(x.copy_, x, y)
  if not ok then raise(string.format("%s: inplace = true: %s", op, tostring(e))) end
  return x
end

-- log(1 + exp(z)) for any z: relu(z) + log1p(exp(-|z|)), with -|z| written as
-- z - 2 relu(z) so that the subgradients of the two relus cancel at 0 (slope 1/2 there)
local function softplus1(z)
  local r = z:relu()
  return r + (z - r * 2):exp():log1p()
end

--- F.relu(x [, inplace = false]) -> max(x, 0).
function F.relu(x, ...)
  local o = options("relu", {"inplace"}, ...)
  check_input(x, "relu")
  if o.inplace then return result(x, x:relu(), true, "relu") end
  return x:relu()
end

--- F.relu6(x [, inplace = false]) -> min(max(x, 0), 6).
function F.relu6(x, ...)
  local o = options("relu6", {"inplace"}, ...)
  return F.hardtanh(x, 0, 6, o.inplace)
end

--- F.hardtanh(x [, min_val = -1 [, max_val = 1 [, inplace = false]]]) -> x clamped to [min_val, max_val].
-- The gradient is 1 strictly inside, 0 outside and on the bounds (as PyTorch).
function F.hardtanh(x, ...)
  local op = "hardtanh"
  local o = float_args(op, {"min_val", "max_val", "inplace"}, x, ...)
  local lo, hi = number_opt(o.min_val, -1, op, "min_val"), number_opt(o.max_val, 1, op, "max_val")
  if lo > hi then raise(string.format("%s: min_val (%g) must not be greater than max_val (%g)", op, lo, hi)) end
  local inside = x:gt(lo):logical_and(x:lt(hi))
  return result(x, ember.where(inside, x, x:detach():clamp(lo, hi)), o.inplace, op)
end

--- F.leaky_relu(x [, negative_slope = 0.01 [, inplace = false]]) -> x for x > 0, negative_slope * x otherwise.
function F.leaky_relu(x, ...)
  local op = "leaky_relu"
  local o = float_args(op, {"negative_slope", "inplace"}, x, ...)
  local s = number_opt(o.negative_slope, 0.01, op, "negative_slope")
  if x.dtype == "float32" or x.dtype == "float64" then
    -- x times a slope tensor (1 or s, no gradient of its own): the same values as the
    -- where below (x * 1 is x), and a backward of one product where the where's two
    -- branches took 2x PyTorch's time. Half dtypes keep the where: PyTorch multiplies
    -- them by s in float32, which a half slope tensor would not.
    local one = ember.ones({}, {dtype = x.dtype, device = x.device})
    return result(x, x * ember.where(x:gt(0), one, s), o.inplace, op)
  end
  return result(x, ember.where(x:gt(0), x, x * s), o.inplace, op)
end

-- alpha * (exp(x / alpha) - 1) for x <= 0, x above (elu with scale 1 / celu).
-- elu, selu, celu, mish and logsigmoid are single kernels in PyTorch, in none of
-- autocast's lists: their parts (expm1, softplus, in CUDA's float32 list) must not
-- cast, so these run without autocast (ember._without_autocast)
local function elu_parts(x, alpha, inv)
  local pos = x:gt(0)
  local neg = (x:masked_fill(pos, 0) * inv):expm1() * alpha
  return ember.where(pos, x, neg)
end
local function elu_core(x, alpha, inv) return ember._without_autocast(elu_parts, x, alpha, inv) end

--- F.elu(x [, alpha = 1 [, inplace = false]]) -> x for x > 0, alpha * (exp(x) - 1) otherwise.
function F.elu(x, ...)
  local op = "elu"
  local o = float_args(op, {"alpha", "inplace"}, x, ...)
  local alpha = number_opt(o.alpha, 1, op, "alpha")
  return result(x, elu_core(x, alpha, 1), o.inplace, op)
end

local SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

--- F.selu(x [, inplace = false]) -> scale * elu(x, alpha), alpha = 1.6733, scale = 1.0507 (self-normalising).
function F.selu(x, ...)
  local op = "selu"
  local o = float_args(op, {"inplace"}, x, ...)
  return result(x, elu_core(x, SELU_ALPHA, 1) * SELU_SCALE, o.inplace, op)
end

--- F.celu(x [, alpha = 1 [, inplace = false]]) -> max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
function F.celu(x, ...)
  local op = "celu"
  local o = float_args(op, {"alpha", "inplace"}, x, ...)
  local alpha = number_opt(o.alpha, 1, op, "alpha")
  if alpha == 0 then raise(op .. ": alpha must not be 0 (it divides x)") end
  return result(x, elu_core(x, alpha, 1 / alpha), o.inplace, op)
end

--- F.gelu(x [, approximate = "none"]) -> x * Phi(x); approximate = "tanh" for the tanh formula.
function F.gelu(x, ...)
  local op = "gelu"
  local o = float_args(op, {"approximate"}, x, ...)
  local a = o.approximate or "none"
  if a ~= "none" and a ~= "tanh" then raise(op .. ": approximate must be \"none\" or \"tanh\", got " .. tostring(a)) end
  return x:gelu({approximate = a})
end

--- F.silu(x [, inplace = false]) -> x * sigmoid(x).
function F.silu(x, ...)
  local op = "silu"
  local o = float_args(op, {"inplace"}, x, ...)
  return result(x, x:silu(), o.inplace, op)
end

--- F.mish(x [, inplace = false]) -> x * tanh(softplus(x)).
function F.mish(x, ...)
  local op = "mish"
  local o = float_args(op, {"inplace"}, x, ...)
  return result(x, ember._without_autocast(function() return x * softplus1(x):tanh() end), o.inplace, op)
end

--- F.hardswish(x [, inplace = false]) -> x * relu6(x + 3) / 6.
function F.hardswish(x, ...)
  local op = "hardswish"
  local o = float_args(op, {"inplace"}, x, ...)
  -- PyTorch 2.x's backward: 0 up to -3, (2x + 3) / 6 strictly between, 1 from 3 on
  local mid = ember.where(x:lt(3), x * (x + 3) / 6, x)
  return result(x, ember.where(x:le(-3), 0, mid), o.inplace, op)
end

--- F.hardsigmoid(x [, inplace = false]) -> relu6(x + 3) / 6.
function F.hardsigmoid(x, ...)
  local op = "hardsigmoid"
  local o = float_args(op, {"inplace"}, x, ...)
  local inside = x:gt(-3):logical_and(x:lt(3))
  return result(x, ember.where(inside, x / 6 + 0.5, x:detach():ge(3):to(x.dtype)), o.inplace, op)
end

--- F.softplus(x [, beta = 1 [, threshold = 20]]) -> log(1 + exp(beta x)) / beta; x itself where beta x > threshold.
function F.softplus(x, ...)
  x = autocast("fp32_cuda", x)
  local op = "softplus"
  local o = float_args(op, {"beta", "threshold"}, x, ...)
  local beta = number_opt(o.beta, 1, op, "beta")
  local th = number_opt(o.threshold, 20, op, "threshold")
  if beta == 0 then raise(op .. ": beta must not be 0 (it divides the result)") end
  local bx = x * beta
  return ember.where(bx:gt(th), x, softplus1(bx) / beta)
end

--- F.softsign(x) -> x / (1 + |x|).
function F.softsign(x)
  check_float(x, "softsign")
  return x / (x:abs() + 1)
end

--- F.tanhshrink(x) -> x - tanh(x).
function F.tanhshrink(x)
  check_float(x, "tanhshrink")
  return x - x:tanh()
end

--- F.threshold(x, threshold, value [, inplace = false]) -> x where x > threshold, value elsewhere.
function F.threshold(x, threshold, value, ...)
  local op = "threshold"
  local o = options(op, {"inplace"}, ...)
  check_input(x, op)
  if type(threshold) ~= "number" or type(value) ~= "number" then
    raise(string.format("%s: threshold and value must be numbers, got %s and %s", op, type(threshold), type(value)))
  end
  return result(x, ember.where(x:gt(threshold), x, value), o.inplace, op)
end

-- a 1-based dim (negative from the end) of x as a positive number, or an error naming op
local function check_dim(x, dim, op)
  local d = type(dim) == "number" and math.tointeger(dim)
  local n = math.max(x.ndim, 1)
  if not d or d == 0 or d > n or d < -n then
    raise(string.format("%s: dim must be an integer in 1..%d or -%d..-1 for input %s, got %s", op, n, n,
                        shape_str(x), tostring(dim)))
  end
  return d < 0 and d + n + 1 or d
end

--- F.glu(x [, dim = -1]) -> a * sigmoid(b), a and b the two halves of x along dim.
function F.glu(x, ...)
  local op = "glu"
  local o = float_args(op, {"dim"}, x, ...)
  if x.ndim == 0 then raise(op .. ": expected an input with at least 1 dim, got a 0-d tensor") end
  local d = check_dim(x, o.dim or -1, op)
  local n = x.shape[d]
  if n % 2 ~= 0 then
    raise(string.format("%s: halving dim %d of input %s needs an even size, got %d", op, d, shape_str(x), n))
  end
  return x:narrow(d, 1, n // 2) * x:narrow(d, n // 2 + 1, n // 2):sigmoid()
end

--- F.logsigmoid(x) -> log(sigmoid(x)) = -softplus(-x), without overflow for any x.
function F.logsigmoid(x)
  check_float(x, "logsigmoid")
  return ember._without_autocast(function() return -softplus1(-x) end)
end

local function softmax_family(x, dim, op, o)
  check_input(x, op)
  if dim == nil then raise(op .. ": dim is required (1-based, negative from the end)") end
  check_dim(x, dim, op)
  if o.dtype ~= nil then x = x:to(o.dtype) end
  return x
end

-- dim is PyTorch's first optional argument: F.softmax(x, 2), F.softmax(x, 2, "float64")
-- and F.softmax(x, {dim = 2, dtype = "float64"}) are the same call
local softmax_names = {"dim", "dtype"}

--- F.softmax(x, dim [, dtype]) -> exp(x) / sum(exp(x)) along dim; dtype converts x first.
function F.softmax(x, ...)
  local o = options("softmax", softmax_names, ...)
  return softmax_family(x, o.dim, "softmax", o):softmax(o.dim)
end

--- F.log_softmax(x, dim [, dtype]) -> log(softmax(x, dim)), computed stably.
function F.log_softmax(x, ...)
  local o = options("log_softmax", softmax_names, ...)
  return softmax_family(x, o.dim, "log_softmax", o):log_softmax(o.dim)
end

--- F.softmin(x, dim [, dtype]) -> softmax(-x, dim).
function F.softmin(x, ...)
  local o = options("softmin", softmax_names, ...)
  return (-softmax_family(x, o.dim, "softmin", o)):softmax(o.dim)
end

--- F.sigmoid(x) -> 1 / (1 + exp(-x)) (x:sigmoid()).
function F.sigmoid(x)
  check_input(x, "sigmoid")
  return x:sigmoid()
end

--- F.tanh(x) -> tanh(x) (x:tanh()).
function F.tanh(x)
  check_input(x, "tanh")
  return x:tanh()
end

--- F.rrelu(x [, lower = 1/8 [, upper = 1/3 [, training = false [, inplace = false]]]]) -> x for x > 0, a * x otherwise.
-- Training draws each a uniformly from [lower, upper] with ember's generator (ember.manual_seed
-- repeats it); otherwise a = (lower + upper) / 2 everywhere.
function F.rrelu(x, ...)
  local op = "rrelu"
  local o = float_args(op, {"lower", "upper", "training", "inplace"}, x, ...)
  local lo, hi = number_opt(o.lower, 1 / 8, op, "lower"), number_opt(o.upper, 1 / 3, op, "upper")
  if lo > hi then raise(string.format("%s: lower (%g) must not be greater than upper (%g)", op, lo, hi)) end
  local slope = (lo + hi) / 2
  if o.training then slope = ember.rand(x.shape, {dtype = x.dtype, device = x.device}) * (hi - lo) + lo end
  return result(x, ember.where(x:gt(0), x, x * slope), o.inplace, op)
end

--- F.prelu(x, weight) -> x for x > 0, weight * x otherwise; weight has 1 entry or one per channel (dim 2).
function F.prelu(x, weight)
  x, weight = autocast("lower", x, weight)
  local op = "prelu"
  check_float(x, op)
  check_tensor(weight, op, "weight")
  local n = weight:numel()
  local c = x.ndim >= 2 and x.shape[2] or 1
  if weight.ndim > 1 or (n ~= 1 and n ~= c) then
    raise(string.format("%s: weight must have 1 entry or one per channel (dim 2 of input %s: %d), got %s", op,
                        shape_str(x), c, shape_str(weight)))
  end
  local w = weight
  if n > 1 then
    local shape = {}
    for i = 1, x.ndim do shape[i] = i == 2 and c or 1 end
    w = weight:reshape(shape)
  else
    w = weight:reshape({})
  end
  return ember.where(x:gt(0), x, w * x)
end

--- F.hardshrink(x [, lambd = 0.5]) -> x where |x| > lambd, 0 elsewhere.
function F.hardshrink(x, ...)
  local op = "hardshrink"
  local o = float_args(op, {"lambd"}, x, ...)
  local l = number_opt(o.lambd, 0.5, op, "lambd")
  return ember.where(x:abs():gt(l), x, 0)
end

--- F.softshrink(x [, lambd = 0.5]) -> x - lambd above lambd, x + lambd below -lambd, 0 between.
function F.softshrink(x, ...)
  local op = "softshrink"
  local o = float_args(op, {"lambd"}, x, ...)
  local l = number_opt(o.lambd, 0.5, op, "lambd")
  if l < 0 then raise(string.format("%s: lambd must be >= 0, got %g", op, l)) end
  return ember.where(x:gt(l), x - l, ember.where(x:lt(-l), x + l, 0))
end

-- ---- distances --------------------------------------------------------------------------

-- the broadcast shape of a and b, or an error naming op and both shapes
local function broadcast_shape(a, b, op, an, bn)
  local n = math.max(a.ndim, b.ndim)
  local out = {}
  for i = 1, n do
    local sa = a.shape[a.ndim - n + i] or 1
    local sb = b.shape[b.ndim - n + i] or 1
    if sa ~= sb and sa ~= 1 and sb ~= 1 then
      raise(string.format("%s: %s %s and %s %s cannot be broadcast together (dim %d: %d vs %d)", op, an,
                          shape_str(a), bn, shape_str(b), i, sa, sb))
    end
    out[i] = sa == 1 and sb or sa
  end
  return out
end

--- F.normalize(x [, p = 2 [, dim = 2 [, eps = 1e-12]]]) -> x / max(||x||_p along dim, eps).
function F.normalize(x, ...)
  x = autocast("fp32_cuda", x)
  local op = "normalize"
  local o = float_args(op, {"p", "dim", "eps"}, x, ...)
  local p = number_opt(o.p, 2, op, "p")
  local eps = number_opt(o.eps, 1e-12, op, "eps")
  local d = check_dim(x, o.dim or 2, op)
  return x / x:norm(p, d, true):clamp_min(eps)
end

--- F.cosine_similarity(x1, x2 [, dim = 2 [, eps = 1e-8]]) -> x1 . x2 / (||x1|| ||x2||) along dim (inputs broadcast).
function F.cosine_similarity(x1, x2, ...)
  x1, x2 = autocast("fp32_cuda", x1, x2)
  local op = "cosine_similarity"
  local o = options(op, {"dim", "eps"}, ...)
  check_float(x1, op)
  check_float(x2, op)
  local shape = broadcast_shape(x1, x2, op, "x1", "x2")
  x1, x2 = x1:expand(shape), x2:expand(shape)
  local eps = number_opt(o.eps, 1e-8, op, "eps")
  local d = check_dim(x1, o.dim or 2, op)
  -- as PyTorch 2.x: each vector is divided by its own norm, whose value is clamped at eps
  -- while its gradient passes as if unclamped (PyTorch clamps in place under no_grad)
  local function unit(v)
    local n = v:norm(2, d, true)
    local nd = n:detach()
    return v / (n + (nd:clamp_min(eps) - nd))
  end
  return (unit(x1) * unit(x2)):sum(d)
end

--- F.pairwise_distance(x1, x2 [, p = 2 [, eps = 1e-6 [, keepdim = false]]]) -> ||x1 - x2 + eps||_p over the last dim.
function F.pairwise_distance(x1, x2, ...)
  local op = "pairwise_distance"
  local o = options(op, {"p", "eps", "keepdim"}, ...)
  check_float(x1, op)
  check_float(x2, op)
  broadcast_shape(x1, x2, op, "x1", "x2")
  local p = number_opt(o.p, 2, op, "p")
  local eps = number_opt(o.eps, 1e-6, op, "eps")
  local diff = x1 - x2 + eps
  if diff.ndim == 0 then diff = diff:reshape(1) end
  return diff:norm(p, diff.ndim, o.keepdim == true)
end

-- ---- more losses ------------------------------------------------------------------------
-- Each takes PyTorch's optional arguments after its tensors, positional or in an options
-- table ({reduction = "mean" | "sum" | "none", ...}).

local function same_shape(a, b, op, an, bn)
  if shape_str(a) ~= shape_str(b) then
    raise(string.format("%s: %s shape %s and %s shape %s differ (they must be equal)", op, an, shape_str(a), bn,
                        shape_str(b)))
  end
end

local function pair(input, target, op)
  check_float(input, op)
  check_tensor(target, op, "target")
  same_shape(input, target, op, "input", "target")
  if target.dtype ~= input.dtype then target = target:to(input.dtype) end
  return input, target
end

-- loss_start's check for two inputs compared with each other: both floating point
local function both_floats(x1, x2, op)
  check_float(x1, op)
  check_float(x2, op)
  return x1, x2
end

--- F.l1_loss(input, target [, {reduction = "mean"}]) -> |input - target|, reduced.
local l1_loss_names = {"size_average", "reduce", "reduction"}
function F.l1_loss(input, target, ...)
  local reduction
  input, target, reduction = loss_start("l1_loss", "fp32", l1_loss_names, pair, input, target, ...)
  return reduce((input - target):abs(), reduction)
end

--- F.smooth_l1_loss(input, target [, {beta = 1, reduction = "mean"}]) -> 0.5 d^2 / beta where |d| < beta, |d| - beta / 2 elsewhere.
local smooth_l1_loss_names = {"size_average", "reduce", "reduction", "beta"}
function F.smooth_l1_loss(input, target, ...)
  local op = "smooth_l1_loss"
  local reduction, o
  input, target, reduction, o = loss_start(op, "fp32", smooth_l1_loss_names, pair, input, target, ...)
  local beta = number_opt(o.beta, 1, op, "beta")
  if beta < 0 then raise(string.format("%s: beta must be >= 0, got %g", op, beta)) end
  local d = input - target
  local a = d:abs()
  if beta == 0 then return reduce(a, reduction) end
  return reduce(ember.where(a:lt(beta), d * d * (0.5 / beta), a - 0.5 * beta), reduction)
end

--- F.huber_loss(input, target [, {delta = 1, reduction = "mean"}]) -> 0.5 d^2 where |d| < delta, delta (|d| - delta / 2) elsewhere.
local huber_loss_names = {"reduction", "delta"}
function F.huber_loss(input, target, ...)
  local op = "huber_loss"
  local reduction, o
  input, target, reduction, o = loss_start(op, "fp32", huber_loss_names, pair, input, target, ...)
  local delta = number_opt(o.delta, 1, op, "delta")
  if delta <= 0 then raise(string.format("%s: delta must be > 0, got %g", op, delta)) end
  local d = input - target
  local a = d:abs()
  return reduce(ember.where(a:lt(delta), d * d * 0.5, (a - 0.5 * delta) * delta), reduction)
end

-- an elementwise weight option: nil, or a tensor broadcastable to the input's shape
local function check_weight(w, input, op, name)
  if w == nil then return end
  check_tensor(w, op, name)
  local shape = broadcast_shape(input, w, op, "input", name)
  if #shape ~= input.ndim or shape_str(input) ~= list_str(shape) then
    raise(string.format("%s: %s %s must broadcast to the input's shape %s", op, name, shape_str(w), shape_str(input)))
  end
end

-- log(v) clamped at -100 (PyTorch's BCE), 0 -> -100 with a zero gradient there
local function clamped_log(v)
  local pos = v:gt(0)
  return ember.where(pos, ember.where(pos, v, 1):log():clamp_min(-100), -100)
end

--- F.binary_cross_entropy(input, target [, {weight =, reduction = "mean"}]) -> -(t log(x) + (1 - t) log(1 - x)), logs clamped at -100.
local binary_cross_entropy_names = {"weight", "size_average", "reduce", "reduction"}
function F.binary_cross_entropy(input, target, ...)
  local op = "binary_cross_entropy"
  local reduction, o
  -- PyTorch refuses it for CUDA tensors in a CUDA region (its AutocastCUDA kernel); on
  -- the CPU its list runs it in float32
  local function on_cuda(x) return ember.is_tensor(x) and x.is_cuda end
  if ember.is_autocast_enabled("cuda") and (on_cuda(input) or on_cuda(target)) then
    raise(op .. ": unsafe to autocast (a CUDA region): many models use a sigmoid right before it; combine "
          .. "the two with F.binary_cross_entropy_with_logits or nn.BCEWithLogitsLoss, which are safe to "
          .. "autocast (PyTorch refuses it too)")
  end
  input, target, reduction, o = loss_start(op, "fp32", binary_cross_entropy_names, pair, input, target, ...)
  check_weight(o.weight, input, op, "weight")
  if input:numel() > 0 then
    local lo, hi = input:min():item(), input:max():item()
    if not (lo >= 0 and hi <= 1) then
      raise(string.format("%s: input values must be probabilities in [0, 1], got values in [%g, %g]", op, lo, hi))
    end
  end
  local loss = -(target * clamped_log(input) + (1 - target) * clamped_log(1 - input))
  if o.weight then loss = loss * o.weight end
  return reduce(loss, reduction)
end

--- F.kl_div(input, target [, {reduction = "mean", log_target = false}]) -> target * (log(target) - input), reduced.
-- input holds log-probabilities; reduction "batchmean" divides the sum by the batch size (dim 1),
-- "mean" by the element count (as PyTorch; "batchmean" is the KL divergence).
local kl_div_names = {"size_average", "reduce", "reduction", "log_target"}
function F.kl_div(input, target, ...)
  input, target = autocast("fp32", input, target)
  local op = "kl_div"
  local o = options(op, kl_div_names, ...)
  local batchmean = o.reduction == "batchmean"
  if batchmean then o.reduction = "sum" end
  local reduction
  o, reduction = loss_args(op, kl_div_names, o)
  input, target = pair(input, target, op)
  local loss
  if o.log_target then
    loss = target:exp() * (target - input)
  else
    -- xlogy(t, t) - t * input: 0 where t == 0, as PyTorch
    local pos = target:gt(0)
    local tlogt = ember.where(pos, target * ember.where(pos, target, 1):log(), 0)
    loss = tlogt - target * input
  end
  loss = reduce(loss, reduction)
  if batchmean and input.ndim > 0 then loss = loss / input.shape[1] end
  return loss
end

--- F.poisson_nll_loss(input, target [, {log_input = true, full = false, eps = 1e-8, reduction = "mean"}]) -> the Poisson negative log-likelihood.
-- log_input: exp(input) - target * input; else input - target * log(input + eps). full adds
-- Stirling's term target log(target) - target + log(2 pi target) / 2 where target > 1.
local poisson_nll_loss_names = {"log_input", "full", "size_average", "eps", "reduce", "reduction"}
function F.poisson_nll_loss(input, target, ...)
  local op = "poisson_nll_loss"
  local reduction, o
  input, target, reduction, o = loss_start(op, "fp32", poisson_nll_loss_names, pair, input, target, ...)
  local eps = number_opt(o.eps, 1e-8, op, "eps")
  local loss
  if o.log_input ~= false then
    loss = input:exp() - target * input
  else
    loss = input - target * (input + eps):log()
  end
  if o.full then
    local big = target:gt(1)
    local t = ember.where(big, target, 2)
    local stirling = t * t:log() - t + (t * (2 * math.pi)):log() * 0.5
    loss = loss + ember.where(big, stirling, 0)
  end
  return reduce(loss, reduction)
end

--- F.gaussian_nll_loss(input, target, var [, {full = false, eps = 1e-6, reduction = "mean"}]) -> 0.5 (log(var) + (input - target)^2 / var).
-- var: input's shape, input's shape without the last dim, or that with a last dim of 1
-- (one variance shared by the last dim). Its values are clamped at eps (the gradient
-- passes as if not, as PyTorch). full adds 0.5 log(2 pi).
local gaussian_nll_loss_names = {"full", "eps", "reduction"}
function F.gaussian_nll_loss(input, target, var, ...)
  input, target, var = autocast("fp32_cuda", input, target, var)
  local op = "gaussian_nll_loss"
  local o, reduction = loss_args(op, gaussian_nll_loss_names, ...)
  input, target = pair(input, target, op)
  check_float(var, op)
  if shape_str(var) ~= shape_str(input) then
    local n = input.ndim
    local lead = {}
    for i = 1, n - 1 do lead[i] = input.shape[i] end
    local ls = list_str(lead)
    if n > 0 and shape_str(var) == ls then
      var = var:unsqueeze(-1)
    elseif not (n > 0 and var.ndim == n and var.shape[n] == 1 and shape_str(var:select(n, 1)) == ls) then
      raise(string.format("%s: var shape %s does not fit input shape %s (expected %s, %s or the input's shape with a last dim of 1)",
                          op, shape_str(var), shape_str(input), shape_str(input), ls))
    end
  end
  local eps = number_opt(o.eps, 1e-6, op, "eps")
  if var:numel() > 0 and var:min():item() < 0 then raise(op .. ": var has negative entries") end
  local vd = var:detach()
  var = var + (vd:clamp_min(eps) - vd)
  local d = input - target
  local loss = (var:log() + d * d / var) * 0.5
  if o.full then loss = loss + 0.5 * math.log(2 * math.pi) end
  return reduce(loss, reduction)
end

-- the label tensor y of a pairwise loss: 1-D [N] for 2-D inputs, 0-d for 1-D ones
local function check_labels(y, x, op, n_dims_ok)
  check_tensor(y, op, "target")
  if not n_dims_ok[x.ndim] then
    raise(string.format("%s: expected 1-D [D] or 2-D [N, D] inputs, got %s", op, shape_str(x)))
  end
  local want = x.ndim == 2 and "[" .. x.shape[1] .. "]" or "[]"
  if shape_str(y) ~= want then
    raise(string.format("%s: target shape %s does not fit input shape %s (expected %s)", op, shape_str(y),
                        shape_str(x), want))
  end
  return y:to(x.dtype)
end

--- F.cosine_embedding_loss(x1, x2, y [, {margin = 0, reduction = "mean"}]) -> 1 - cos(x1, x2) where y = 1, max(0, cos - margin) where y = -1.
local cosine_embedding_loss_names = {"margin", "size_average", "reduce", "reduction"}
function F.cosine_embedding_loss(x1, x2, y, ...)
  local op = "cosine_embedding_loss"
  local reduction, o
  x1, x2, reduction, o = loss_start(op, "fp32", cosine_embedding_loss_names, both_floats, x1, x2, ...)
  same_shape(x1, x2, op, "input1", "input2")
  y = check_labels(y, x1, op, {[1] = true, [2] = true})
  local margin = number_opt(o.margin, 0, op, "margin")
  local d = x1.ndim
  local EPS = 1e-12
  local prod = (x1 * x2):sum(d)
  local m1 = (x1 * x1):sum(d) + EPS
  local m2 = (x2 * x2):sum(d) + EPS
  local cos = prod / (m1 * m2):sqrt()
  local loss = ember.where(y:eq(1), 1 - cos, 0) + ember.where(y:eq(-1), (cos - margin):clamp_min(0), 0)
  return reduce(loss, reduction)
end

--- F.margin_ranking_loss(x1, x2, y [, {margin = 0, reduction = "mean"}]) -> max(0, -y (x1 - x2) + margin).
local margin_ranking_loss_names = {"margin", "size_average", "reduce", "reduction"}
function F.margin_ranking_loss(x1, x2, y, ...)
  local op = "margin_ranking_loss"
  local reduction, o
  x1, x2, reduction, o = loss_start(op, "fp32", margin_ranking_loss_names, both_floats, x1, x2, ...)
  check_tensor(y, op, "target")
  same_shape(x1, x2, op, "input1", "input2")
  same_shape(x1, y, op, "input1", "target")
  local margin = number_opt(o.margin, 0, op, "margin")
  return reduce((-y:to(x1.dtype) * (x1 - x2) + margin):clamp_min(0), reduction)
end

--- F.hinge_embedding_loss(x, y [, {margin = 1, reduction = "mean"}]) -> x where y = 1, max(0, margin - x) where y = -1.
local hinge_embedding_loss_names = {"margin", "size_average", "reduce", "reduction"}
function F.hinge_embedding_loss(x, y, ...)
  x = autocast("fp32", x)
  local op = "hinge_embedding_loss"
  local o, reduction = loss_args(op, hinge_embedding_loss_names, ...)
  x, y = pair(x, y, op)
  local margin = number_opt(o.margin, 1, op, "margin")
  local loss = ember.where(y:ne(1), (margin - x):clamp_min(0), 0) + ember.where(y:ne(-1), x, 0)
  return reduce(loss, reduction)
end

--- F.triplet_margin_loss(anchor, positive, negative [, {margin = 1, p = 2, eps = 1e-6, swap = false, reduction = "mean"}]) -> max(0, d(a, p) - d(a, n) + margin).
-- d is F.pairwise_distance; swap uses min(d(a, n), d(p, n)) as the negative distance.
local triplet_margin_loss_names = {"margin", "p", "eps", "swap", "size_average", "reduce", "reduction"}
function F.triplet_margin_loss(anchor, positive, negative, ...)
  anchor, positive, negative = autocast("fp32", anchor, positive, negative)
  local op = "triplet_margin_loss"
  local o, reduction = loss_args(op, triplet_margin_loss_names, ...)
  for _, v in ipairs{{anchor, "anchor"}, {positive, "positive"}, {negative, "negative"}} do
    check_float(v[1], op)
    if v[1].ndim ~= 1 and v[1].ndim ~= 2 then
      raise(string.format("%s: %s must be 1-D [D] or 2-D [N, D], got %s", op, v[2], shape_str(v[1])))
    end
  end
  same_shape(anchor, positive, op, "anchor", "positive")
  same_shape(anchor, negative, op, "anchor", "negative")
  local margin = number_opt(o.margin, 1, op, "margin")
  local p = number_opt(o.p, 2, op, "p")
  local eps = number_opt(o.eps, 1e-6, op, "eps")
  local d_pos = F.pairwise_distance(anchor, positive, p, eps)
  local d_neg = F.pairwise_distance(anchor, negative, p, eps)
  if o.swap then d_neg = ember.minimum(d_neg, F.pairwise_distance(positive, negative, p, eps)) end
  return reduce((d_pos - d_neg + margin):clamp_min(0), reduction)
end

--- F.multilabel_soft_margin_loss(input, target [, {weight =, reduction = "mean"}]) -> the mean over classes of the per-class logistic losses.
-- input [N, C] logits, target [N, C] in {0, 1}; weight [C] weighs the classes. "none" gives [N].
local multilabel_soft_margin_loss_names = {"weight", "size_average", "reduce", "reduction"}
function F.multilabel_soft_margin_loss(input, target, ...)
  local op = "multilabel_soft_margin_loss"
  local reduction, o
  input, target, reduction, o = loss_start(op, "fp32_cuda", multilabel_soft_margin_loss_names, pair, input, target,
                                          ...)
  if input.ndim ~= 2 then raise(string.format("%s: expected a 2-D input [N, C], got %s", op, shape_str(input))) end
  check_weight(o.weight, input, op, "weight")
  local loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
  if o.weight then loss = loss * o.weight end
  return reduce(loss:sum(2) / input.shape[2], reduction)
end

--- F.soft_margin_loss(input, target [, {reduction = "mean"}]) -> log(1 + exp(-target * input)), reduced (target in {-1, 1}).
local soft_margin_loss_names = {"size_average", "reduce", "reduction"}
function F.soft_margin_loss(input, target, ...)
  local reduction
  input, target, reduction = loss_start("soft_margin_loss", "fp32", soft_margin_loss_names, pair, input, target,
                                       ...)
  return reduce(softplus1(-(target * input)), reduction)
end

--- F.multi_margin_loss(input, target [, {p = 1, margin = 1, weight =, reduction = "mean"}]) -> the multi-class hinge loss.
-- input [N, C] (or [C]), target [N] (or 0-d) of 1-based class indices; per sample
-- sum over i ~= y of weight[y] * max(0, margin - x[y] + x[i])^p / C.
local multi_margin_loss_names = {"p", "margin", "weight", "size_average", "reduce", "reduction"}
function F.multi_margin_loss(input, target, ...)
  input, target = autocast("fp32", input, target)
  local op = "multi_margin_loss"
  local o, reduction = loss_args(op, multi_margin_loss_names, ...)
  check_float(input, op)
  local p = number_opt(o.p, 1, op, "p")
  if p ~= 1 and p ~= 2 then raise(string.format("%s: p must be 1 or 2, got %g", op, p)) end
  local margin = number_opt(o.margin, 1, op, "margin")
  check_tensor(target, op, "target")
  if input.ndim ~= 1 and input.ndim ~= 2 then
    raise(string.format("%s: expected a 1-D or 2-D input, got %s", op, shape_str(input)))
  end
  local x = input.ndim == 1 and input:unsqueeze(1) or input
  local y = target.ndim == 0 and target:reshape(1) or target
  check_index_target(x, y, op)
  local C = x.shape[2]
  if y:numel() > 0 and (y:min():item() < 1 or y:max():item() > C) then
    raise(string.format("%s: target values must be class indices in 1..%d, got values in %d..%d", op, C,
                        y:min():item(), y:max():item()))
  end
  y = y:reshape(x.shape[1], 1)
  local picked = x:gather(2, y)
  local m = (x - picked + margin):clamp(0)
  if p == 2 then m = m * m end
  if o.weight ~= nil then
    check_class_weight(o.weight, C, op)
    m = m * o.weight:to(x.dtype):index_select(1, y:reshape(-1)):unsqueeze(2)
  end
  -- the target's own column does not count
  local own = ember.one_hot(y:reshape(-1), C):bool()
  local loss = m:masked_fill(own, 0):sum(2) / C
  if input.ndim == 1 then loss = loss:reshape({}) end
  return reduce(loss, reduction)
end

-- x [*, C, H, W] checked for the factor r (its option name what) and the rank, then
-- reshaped to lead .. split(C, H, W), permuted by perm (over those five) and reshaped to
-- lead .. out(C, H, W); check(C, H, W) raises the op's divisibility error
local function pixel_rearrange(x, op, r, what, check, split, perm, out)
  check_input(x, op)
  if math.type(r) ~= "integer" or r < 1 then
    raise(string.format("%s: %s must be a positive integer, got %s", op, what, tostring(r)))
  end
  local n = x.ndim
  if n < 3 then raise(string.format("%s: expected at least 3 dimensions [*, C, H, W], got %s", op, shape_str(x))) end
  local c, hgt, wid = x.shape[n - 2], x.shape[n - 1], x.shape[n]
  check(c, hgt, wid)
  local lead = {}
  for i = 1, n - 3 do lead[i] = x.shape[i] end
  local sizes, order, final = {table.unpack(lead)}, {}, {table.unpack(lead)}
  for i = 1, #lead do order[i] = i end
  for _, v in ipairs(split(c, hgt, wid)) do sizes[#sizes + 1] = v end
  for _, v in ipairs(perm) do order[#order + 1] = #lead + v end
  for _, v in ipairs(out(c, hgt, wid)) do final[#final + 1] = v end
  return x:reshape(sizes):permute(order):reshape(final)
end

--- F.pixel_shuffle(x, upscale_factor) -> [*, C * r^2, H, W] rearranged to [*, C, H * r, W * r].
function F.pixel_shuffle(x, ...)
  local op = "pixel_shuffle"
  local r = options(op, {"upscale_factor"}, ...).upscale_factor
  return pixel_rearrange(x, op, r, "upscale_factor", function(c)
    if c % (r * r) ~= 0 then
      raise(string.format("%s: the channels of %s (%d) must be divisible by upscale_factor^2 (%d)", op,
                          shape_str(x), c, r * r))
    end
  end, function(c, hgt, wid) return {c // (r * r), r, r, hgt, wid} end, {1, 4, 2, 5, 3},
  function(c, hgt, wid) return {c // (r * r), hgt * r, wid * r} end)
end

--- F.pixel_unshuffle(x, downscale_factor) -> [*, C, H * r, W * r] rearranged to [*, C * r^2, H, W] (pixel_shuffle's inverse).
function F.pixel_unshuffle(x, ...)
  local op = "pixel_unshuffle"
  local r = options(op, {"downscale_factor"}, ...).downscale_factor
  return pixel_rearrange(x, op, r, "downscale_factor", function(_, hgt, wid)
    if hgt % r ~= 0 or wid % r ~= 0 then
      raise(string.format("%s: the height and width of %s must be divisible by downscale_factor (%d)", op,
                          shape_str(x), r))
    end
  end, function(c, hgt, wid) return {c, hgt // r, r, wid // r, r} end, {1, 3, 5, 2, 4},
  function(c, hgt, wid) return {c * r * r, hgt // r, wid // r} end)
end

--- F.local_response_norm(x, size [, alpha = 1e-4 [, beta = 0.75 [, k = 1]]]) -> x / (k + alpha * mean of x^2 over size neighbouring channels)^beta.
-- x is [N, C, *] (at least 3-D); the window over channels is zero-padded, size // 2 before
-- and (size - 1) // 2 after each channel, and its mean always divides by size (as PyTorch).
function F.local_response_norm(x, ...)
  local op = "local_response_norm"
  local o = float_args(op, {"size", "alpha", "beta", "k"}, x, ...)
  if x.ndim < 3 then raise(string.format("%s: expected at least 3 dimensions [N, C, *], got %s", op, shape_str(x))) end
  local size = o.size
  if math.type(size) ~= "integer" or size < 1 then
    raise(string.format("%s: size must be a positive integer, got %s", op, tostring(size)))
  end
  local alpha, beta = number_opt(o.alpha, 1e-4, op, "alpha"), number_opt(o.beta, 0.75, op, "beta")
  local k = number_opt(o.k, 1, op, "k")
  local C = x.shape[2]
  local sq = x * x
  local shape = x.shape
  local before, after = {table.unpack(shape)}, {table.unpack(shape)}
  before[2], after[2] = size // 2, (size - 1) // 2
  local padded = ember.cat({ember.zeros(before, {dtype = x.dtype, device = x.device}), sq,
                            ember.zeros(after, {dtype = x.dtype, device = x.device})}, 2)
  local window = padded:narrow(2, 1, C)
  for j = 2, size do window = window + padded:narrow(2, j, C) end
  return x / (window * (alpha / size) + k):pow(beta)
end

--- F.channel_shuffle(x, groups) -> x [N, C, *] with its channels regrouped: seen as [N, groups, C / groups, *], the two channel dims swapped.
-- Output channel j * groups + i is input channel i * (C / groups) + j (0-based i, j), as
-- PyTorch's (ShuffleNet's shuffle). x has more than 2 dims; C must be divisible by groups.
-- Example: F.channel_shuffle(ember.arange(6):reshape(1, 6, 1), 2)   -- channels 0 3 1 4 2 5
function F.channel_shuffle(x, ...)
  local op = "channel_shuffle"
  local groups = options(op, {"groups"}, ...).groups
  check_input(x, op)
  local g = type(groups) == "number" and math.tointeger(groups)
  if not g or g < 1 then raise(op .. ": groups must be a positive integer, got " .. tostring(groups)) end
  if x.ndim < 3 then
    raise(string.format("%s: expected an input with more than 2 dims [N, C, *], got %s", op, shape_str(x)))
  end
  local n, c = x.shape[1], x.shape[2]
  if c % g ~= 0 then
    raise(string.format("%s: the channels of %s (%d) must be divisible by groups (%d)", op, shape_str(x), c, g))
  end
  local rest = 1
  for i = 3, x.ndim do rest = rest * x.shape[i] end
  return x:reshape(n, g, c // g, rest):transpose(2, 3):reshape(x.shape)
end
--- F.native_channel_shuffle(x, groups) -> F.channel_shuffle(x, groups) (PyTorch's other name of it).
F.native_channel_shuffle = F.channel_shuffle

--- F.bilinear(x1, x2, weight [, bias]) -> y[..., o] = sum over i, j of x1[..., i] weight[o, i, j] x2[..., j], plus bias[o].
-- x1 [..., in1] and x2 [..., in2] have the same leading dims (none for 1-D inputs); weight
-- [out, in1, in2], bias [out]. What nn.Bilinear computes.
-- Example: F.bilinear(ember.randn(8, 3), ember.randn(8, 4), ember.randn(5, 3, 4))   -- [8, 5]
function F.bilinear(x1, x2, weight, ...)
  local op = "bilinear"
  local bias = options(op, {"bias"}, ...).bias
  check_tensor(x1, op, "input1")
  check_tensor(x2, op, "input2")
  check_tensor(weight, op, "weight")
  if weight.ndim ~= 3 then raise(op .. ": weight must be 3-D [out, in1, in2], got " .. shape_str(weight)) end
  local out, in1, in2 = weight.shape[1], weight.shape[2], weight.shape[3]
  local n = x1.ndim
  local same_lead = n >= 1 and x2.ndim == n
  for i = 1, n - 1 do same_lead = same_lead and x1.shape[i] == x2.shape[i] end
  if not same_lead then
    raise(string.format("%s: input1 %s and input2 %s must have the same dims but the last (at least 1)", op,
                        shape_str(x1), shape_str(x2)))
  end
  if x1.shape[n] ~= in1 or x2.shape[n] ~= in2 then
    raise(string.format("%s: input1 %s and input2 %s do not fit weight %s (expected [..., %d] and [..., %d])", op,
                        shape_str(x1), shape_str(x2), shape_str(weight), in1, in2))
  end
  if bias ~= nil then
    check_tensor(bias, op, "bias")
    if bias.ndim ~= 1 or bias.shape[1] ~= out then
      raise(string.format("%s: bias must have shape [%d] (weight %s), got %s", op, out, shape_str(weight), shape_str(bias)))
    end
  end
  for _, t in ipairs{x2, weight, bias} do
    if t.dtype ~= x1.dtype then
      raise(string.format("%s: the inputs, weight and bias must have one dtype, got %s and %s", op, x1.dtype, t.dtype))
    end
  end
  local lead, b = {}, 1
  for i = 1, n - 1 do lead[i] = x1.shape[i]; b = b * x1.shape[i] end
  -- x1 times weight as one matmul, [b, in1] @ [in1, out * in2]; then each of the out rows
  -- of in2 dotted with x2
  local w = weight:permute(2, 1, 3):reshape(in1, out * in2)
  local t = x1:reshape(b, in1):matmul(w):reshape(b, out, in2)
  local y = (t * x2:reshape(b, 1, in2)):sum(3)
  if bias ~= nil then y = y + bias end
  lead[n] = out
  return y:reshape(lead)
end

-- ---- PyTorch's other names: in-place activations, *_with_indices, upsample ------------------

-- fn(...)'s results; an error it raises in the name of inner is raised again in the name of
-- op, the form of inner that was called (F.elu_ of F.elu, F.upsample of F.interpolate)
local function as_op(op, inner, fn, ...)
  local r = table.pack(pcall(fn, ...))
  if r[1] then return table.unpack(r, 2, r.n) end
  local msg = r[2]
  if type(msg) == "string" then
    local s, e = msg:find(inner .. ": ", 1, true)
    -- the name at the start, or after the position ("file:12: elu: ...")
    if s == 1 or (s and msg:sub(s - 2, s - 1) == ": ") then raise(op .. ": " .. msg:sub(e + 1)) end
  end
  error(msg, 0)
end

-- The in-place form F.<name>_(x, ...) of the activation F.<name>: F.<name>(x, ..., inplace = true).
-- names lists its optional arguments, those of F.<name> before inplace (PyTorch's order).
-- As every in-place op, it is refused on a tensor that autograd records.
local function inplace_form(name, names)
  local op = name .. "_"
  return function(x, ...)
    local o = options(op, names, ...)
    check_input(x, op)
    if x.requires_grad and ember.is_grad_enabled() then
      raise(string.format("%s: in-place operation on a tensor that requires grad; use the out-of-place form F.%s",
                          op, name))
    end
    local args = {}
    for i, k in ipairs(names) do args[i] = o[k] end
    args[#names + 1] = true
    return as_op(op, name, F[name], x, table.unpack(args, 1, #names + 1))
  end
end

--- F.relu_(x) -> x, overwritten with max(x, 0) (x:relu_()).
function F.relu_(x)
  check_input(x, "relu_")
  return x:relu_()
end
--- F.elu_(x [, alpha = 1]) -> x, overwritten with F.elu(x, alpha).
F.elu_ = inplace_form("elu", {"alpha"})
--- F.leaky_relu_(x [, negative_slope = 0.01]) -> x, overwritten with F.leaky_relu(x, negative_slope).
F.leaky_relu_ = inplace_form("leaky_relu", {"negative_slope"})
--- F.hardtanh_(x [, min_val = -1 [, max_val = 1]]) -> x, overwritten with F.hardtanh(x, min_val, max_val).
F.hardtanh_ = inplace_form("hardtanh", {"min_val", "max_val"})
--- F.selu_(x) -> x, overwritten with F.selu(x).
F.selu_ = inplace_form("selu", {})
--- F.celu_(x [, alpha = 1]) -> x, overwritten with F.celu(x, alpha).
F.celu_ = inplace_form("celu", {"alpha"})
--- F.threshold_(x, threshold, value) -> x, overwritten with F.threshold(x, threshold, value).
F.threshold_ = inplace_form("threshold", {"threshold", "value"})
--- F.rrelu_(x [, lower = 1/8 [, upper = 1/3 [, training = false]]]) -> x, overwritten with F.rrelu(x, lower, upper, training).
F.rrelu_ = inplace_form("rrelu", {"lower", "upper", "training"})

-- F.max_poolNd_with_indices: max_poolNd with return_indices = true whatever it is given
-- (PyTorch's ignore theirs too)
local max_pool_names = {"stride", "padding", "dilation", "ceil_mode", "return_indices"}
local function max_pool_with_indices(nd, x, kernel_size, ...)
  local pool = "max_pool" .. nd .. "d"
  local op = pool .. "_with_indices"
  local o = options(op, max_pool_names, ...)
  return as_op(op, pool, ember[pool], x, kernel_size, {stride = o.stride, padding = o.padding, dilation = o.dilation,
                                                         ceil_mode = o.ceil_mode, return_indices = true})
end

--- F.max_pool1d_with_indices(x, kernel_size [, stride [, padding [, dilation [, ceil_mode]]]]) -> values, indices (F.max_pool1d's, with return_indices).
function F.max_pool1d_with_indices(x, kernel_size, ...) return max_pool_with_indices(1, x, kernel_size, ...) end
--- F.max_pool2d_with_indices(x, kernel_size [, stride [, padding [, dilation [, ceil_mode]]]]) -> values, indices.
function F.max_pool2d_with_indices(x, kernel_size, ...) return max_pool_with_indices(2, x, kernel_size, ...) end
--- F.max_pool3d_with_indices(x, kernel_size [, stride [, padding [, dilation [, ceil_mode]]]]) -> values, indices.
function F.max_pool3d_with_indices(x, kernel_size, ...) return max_pool_with_indices(3, x, kernel_size, ...) end

-- F.adaptive_max_poolNd_with_indices: adaptive_max_poolNd with return_indices = true
local function adaptive_with_indices(nd, x, output_size, ...)
  local pool = "adaptive_max_pool" .. nd .. "d"
  local op = pool .. "_with_indices"
  options(op, {"return_indices"}, ...)   -- accepted and ignored, as PyTorch's
  return as_op(op, pool, ember[pool], x, output_size, true)
end

--- F.adaptive_max_pool1d_with_indices(x, output_size) -> values, indices (F.adaptive_max_pool1d's, with return_indices).
function F.adaptive_max_pool1d_with_indices(x, output_size, ...) return adaptive_with_indices(1, x, output_size, ...) end
--- F.adaptive_max_pool2d_with_indices(x, output_size) -> values, indices.
function F.adaptive_max_pool2d_with_indices(x, output_size, ...) return adaptive_with_indices(2, x, output_size, ...) end
--- F.adaptive_max_pool3d_with_indices(x, output_size) -> values, indices.
function F.adaptive_max_pool3d_with_indices(x, output_size, ...) return adaptive_with_indices(3, x, output_size, ...) end

--- F.upsample(x [, size [, scale_factor [, mode = "nearest" [, align_corners]]]]) -> F.interpolate(x, ...) (PyTorch's deprecated name).
function F.upsample(x, ...)
  local o = options("upsample", {"size", "scale_factor", "mode", "align_corners"}, ...)
  return as_op("upsample", "interpolate", F.interpolate, x, o)
end

--- F.upsample_nearest(x [, size [, scale_factor]]) -> F.interpolate(x, {size =, scale_factor =, mode = "nearest"}).
function F.upsample_nearest(x, ...)
  local o = options("upsample_nearest", {"size", "scale_factor"}, ...)
  return as_op("upsample_nearest", "interpolate", F.interpolate, x,
               {size = o.size, scale_factor = o.scale_factor, mode = "nearest"})
end

--- F.upsample_bilinear(x [, size [, scale_factor]]) -> F.interpolate(x, {..., mode = "bilinear", align_corners = true}).
function F.upsample_bilinear(x, ...)
  local o = options("upsample_bilinear", {"size", "scale_factor"}, ...)
  return as_op("upsample_bilinear", "interpolate", F.interpolate, x,
               {size = o.size, scale_factor = o.scale_factor, mode = "bilinear", align_corners = true})
end

-- ---- attention ----------------------------------------------------------------------

F.scaled_dot_product_attention = ember.scaled_dot_product_attention
F.one_hot = ember.one_hot

-- ---- parts in their own files ------------------------------------------------------------
-- Each returns {functional = {...}, layers = {...}}; layers.lua takes the layers. A part must
-- not require ember.nn.functional (or ember.nn, ember.nn.layers) when it loads: this file is
-- still loading then. Inside its functions it may.
for _, part in ipairs{"ember.nn.sampling", "ember.nn.ctc", "ember.nn.extra"} do
  for k, v in pairs(require(part).functional or {}) do F[k] = v end
end

return F
