-- ember.nn's connectionist temporal classification loss: F.ctc_loss and nn.CTCLoss
-- (torch.nn.functional.ctc_loss, torch.nn.CTCLoss). Merged into ember.nn.functional and
-- ember.nn by functional.lua and layers.lua, which load this file while they are still
-- loading: it must not require them (nor ember.nn) when it loads.
--
-- The loss is -log p(target | input), p summed over every alignment of the target with the
-- input frames (labels separated by blanks, repeated frames merged). It is composed of
-- engine ops, so autograd gives its gradient and it runs on any device: the forward (alpha)
-- recursion over time, in log space, on the extended label sequence (a blank before, between
-- and after the labels: L = 2 S + 1 states), all samples at once on [N, L] tensors, each
-- sample's states frozen once its input has ended.
--
-- Log-probabilities of impossible states are a finite NEG (-1e30), not -inf: the recursion
-- combines states with logaddexp, whose gradient exp(a - y) is NaN when a = y = -inf; with
-- NEG it is a number, and it is exactly 0 wherever such a state meets a possible one
-- (exp(NEG - y) = 0), so no NaN enters values or gradients. log_probs below NEG (-inf) count
-- as NEG. A sample whose log-likelihood ends below NEG / 2 has no alignment: its loss is inf.
local ember = require "ember"
local errors = require "ember.errors"
local raise, shape_str, check_tensor = errors.raise, errors.shape_str, errors.check_tensor
local args = require "ember.args"
local base = require "ember.nn.module"

local Module = base.Module

local NEG = -1e30
local INT_DTYPES = {int64 = true, int32 = true, int16 = true, int8 = true, uint8 = true}
local NAMES = {"blank", "reduction", "zero_infinity"}

-- x as an integer when it is a number with an integer value (5 and 5.0), else nil
local function int_of(x) return type(x) == "number" and math.tointeger(x) or nil end

-- F.check_reduction (functional.lua is loaded by the time a loss is computed)
local function check_reduction(reduction, op) return require("ember.nn.functional").check_reduction(reduction, op) end

local function check_blank(blank, op)
  if blank == nil then return 1 end
  local b = int_of(blank)
  if not b then
    raise(string.format("%s: blank must be an integer (a 1-based class index), got %s", op, tostring(blank)))
  end
  return b
end

local function check_zero_infinity(z, op)
  if z == nil then return false end
  if type(z) ~= "boolean" then
    raise(string.format("%s: zero_infinity must be a boolean, got %s", op, tostring(z)))
  end
  return z
end

-- input_lengths / target_lengths: an integer tensor (any shape, n elements, as PyTorch reads
-- it), a Lua list of n integers, or one integer (one sample). Returns the values as a list.
local function lengths_list(v, n, op, what)
  local list
  if ember.is_tensor(v) then
    if not INT_DTYPES[v.dtype] then
      raise(string.format("%s: %s must be an integer tensor, got %s", op, what, v.dtype))
    end
    list = v:reshape(-1):to("int64"):to("cpu"):tolist()
  elseif type(v) == "number" then
    list = {int_of(v) or raise(string.format("%s: %s must be an integer, got %s", op, what, tostring(v)))}
  elseif type(v) == "table" and getmetatable(v) == nil then
    list = {}
    for i = 1, #v do
      local x = int_of(v[i])
      if not x then
        raise(string.format("%s: %s must hold integers, got %s at position %d", op, what, tostring(v[i]), i))
      end
      list[i] = x
    end
    for k in pairs(v) do
      if math.type(k) ~= "integer" or k < 1 or k > #v then
        raise(string.format("%s: %s must be a list of integers (1..n), got a table with key %s", op, what, tostring(k)))
      end
    end
  else
    raise(string.format("%s: %s must be an integer tensor or a list of integers, got %s", op, what, type(v)))
  end
  if #list ~= n then
    raise(string.format("%s: %s must have one entry per sample (batch size %d), got %d", op, what, n, #list))
  end
  return list
end

-- PyTorch's backward gives NaN for every class at every frame (t < input length) of a sample
-- with no alignment, when zero_infinity is false. Autograd through the recursion gives 0
-- there (the loss is a constant inf); this node adds the NaN: forward returns zeros [N],
-- backward a gradient that is NaN where mask ([T, N, C], bool) is true and 0 elsewhere.
local impossible_grad
local function impossible_grad_fn()
  if impossible_grad then return impossible_grad end
  local Function = require("ember.autograd").Function
  impossible_grad = Function:extend("CtcLossImpossible")
  function impossible_grad.forward(ctx, lp, mask)
    ctx.mask, ctx.shape, ctx.dtype = mask, lp.shape, lp.dtype
    return ember.zeros({lp.shape[2]}, {dtype = lp.dtype, device = lp.device})
  end
  function impossible_grad.backward(ctx, _)
    local mask = ctx.mask
    local z = ember.zeros(ctx.shape, {dtype = ctx.dtype, device = mask.device})
    return z:masked_fill(mask, 0 / 0), nil
  end
  return impossible_grad
end

-- the labels [N, Smax] (int64, blank at the positions past each target's length) of padded
-- [N, S] or concatenated [sum(target_lengths)] targets, checked
local function labels(targets, tl, N, C, blank, smax, device, op)
  local valid = ember.arange(smax, {dtype = "int64", device = device}):reshape(1, smax)
                  :lt(ember.tensor(tl, {dtype = "int64", device = device}):reshape(N, 1))
  local lab
  if targets.ndim == 2 then
    lab = targets:narrow(2, 1, smax):to("int64")
  else
    -- position of label k of sample b in the concatenation: offset[b] + k (1-based)
    local offs, pos = {}, 0
    for b = 1, N do offs[b] = pos; pos = pos + tl[b] end
    local idx = ember.tensor(offs, {dtype = "int64", device = device}):reshape(N, 1)
                + ember.arange(1, smax + 1, {dtype = "int64", device = device}):reshape(1, smax)
    idx = idx:masked_fill(valid:logical_not(), 1)
    lab = targets:to("int64"):index_select(1, idx:reshape(-1)):reshape(N, smax)
  end
  local bad = valid:logical_and(lab:lt(1):logical_or(lab:gt(C)):logical_or(lab:eq(blank)))
  if bad:any():item() then
    local v = lab:masked_select(bad):to("cpu"):tolist()[1]
    if v == blank then
      raise(string.format("%s: targets hold the blank class %d; labels must be classes 1..%d other than blank "
                          .. "(1-based: PyTorch's labels + 1)", op, blank, C))
    end
    raise(string.format("%s: target label %d out of range for %d classes (labels are 1-based, 1..%d, "
                        .. "PyTorch's + 1; blank = %d)", op, v, C, C, blank))
  end
  return lab:masked_fill(valid:logical_not(), blank)
end

--- F.ctc_loss(log_probs, targets, input_lengths, target_lengths [, blank = 1 [, reduction = "mean" [, zero_infinity = false]]]) -> loss
local function ctc(log_probs, targets, input_lengths, target_lengths, ...)
  local op = "ctc_loss"
  check_tensor(log_probs, op, "log_probs")
  check_tensor(targets, op, "targets")
  local o = args.options(op, NAMES, ...)
  local reduction = check_reduction(o.reduction, op)
  local blank = check_blank(o.blank, op)
  local zero_infinity = check_zero_infinity(o.zero_infinity, op)
  log_probs = ember._autocast("fp32", log_probs)

  local batched = log_probs.ndim == 3
  if log_probs.ndim ~= 2 and not batched then
    raise(string.format("%s: log_probs must be [T, N, C] (or [T, C] unbatched), got %s", op, shape_str(log_probs)))
  end
  if log_probs.dtype ~= "float32" and log_probs.dtype ~= "float64" then
    raise(string.format("%s: log_probs must be float32 or float64 (as PyTorch's CPU and CUDA kernels), got %s",
                        op, log_probs.dtype))
  end
  local lp = batched and log_probs or log_probs:unsqueeze(2)
  local T, N, C = lp.shape[1], lp.shape[2], lp.shape[3]
  if T == 0 or N == 0 or C == 0 then
    raise(string.format("%s: log_probs must not be empty, got %s", op, shape_str(log_probs)))
  end
  if blank < 1 or blank > C then
    raise(string.format("%s: blank must be a class index in 1..%d (1-based: PyTorch's blank + 1), got %d", op, C, blank))
  end
  if not INT_DTYPES[targets.dtype] then
    raise(string.format("%s: targets must be an integer tensor of 1-based labels, got %s", op, targets.dtype))
  end
  if targets.ndim ~= 1 and targets.ndim ~= 2 then
    raise(string.format("%s: targets must be [N, S] (padded) or [sum(target_lengths)] (concatenated), got %s",
                        op, shape_str(targets)))
  end
  local il = lengths_list(input_lengths, N, op, "input_lengths")
  local tl = lengths_list(target_lengths, N, op, "target_lengths")
  local smax, tmax, tmin, total = 0, 0, T, 0
  for b = 1, N do
    if il[b] < 0 or il[b] > T then
      raise(string.format("%s: input_lengths[%d] = %d must be in 0..%d (the %d frames of log_probs %s)",
                          op, b, il[b], T, T, shape_str(log_probs)))
    end
    if tl[b] < 0 then raise(string.format("%s: target_lengths[%d] = %d must not be negative", op, b, tl[b])) end
    smax, tmax, tmin, total = math.max(smax, tl[b]), math.max(tmax, il[b]), math.min(tmin, il[b]), total + tl[b]
  end
  if targets.ndim == 2 then
    if targets.shape[1] ~= N then
      raise(string.format("%s: padded targets %s must have one row per sample (batch size %d)", op, shape_str(targets), N))
    end
    if targets.shape[2] < smax then
      raise(string.format("%s: padded targets %s are shorter than the longest target length %d", op, shape_str(targets), smax))
    end
  elseif targets.shape[1] ~= total then
    raise(string.format("%s: concatenated targets %s must hold sum(target_lengths) = %d labels", op,
                        shape_str(targets), total))
  end

  local device, dtype = lp.device, lp.dtype
  if targets.device ~= device then targets = targets:to(device) end
  local function full(shape, v, dt) return ember.full(shape, v, {dtype = dt or dtype, device = device}) end
  local L = 2 * smax + 1

  -- the extended labels [N, L] (blank, l1, blank, l2, ..., blank) and where a state may be
  -- entered from two states back (a label different from the label before it)
  local ext, skip_add
  if smax > 0 then
    local lab = labels(targets, tl, N, C, blank, smax, device, op)
    local blanks = full({N, smax}, blank, "int64")
    ext = ember.cat({ember.stack({blanks, lab}, 3):reshape(N, 2 * smax), full({N, 1}, blank, "int64")}, 2)
    local differs = ember.cat({full({N, 1}, false, "bool"), lab:narrow(2, 2, smax - 1):ne(lab:narrow(2, 1, smax - 1))}, 2)
    local skip = ember.cat({ember.stack({full({N, smax}, false, "bool"), differs}, 3):reshape(N, 2 * smax),
                            full({N, 1}, false, "bool")}, 2)
    skip_add = full({N, L}, NEG):masked_fill(skip, 0)
  else
    ext = full({N, 1}, blank, "int64")
  end

  -- emissions [T, N, L]: log_probs of each state's class
  local E = lp:gather(3, ext:unsqueeze(1):expand(T, N, L)):clamp_min(NEG)

  -- alpha before the first frame: all the probability in state 1
  local alpha = L > 1 and ember.cat({full({N, 1}, 0), full({N, L - 1}, NEG)}, 2) or full({N, 1}, 0)
  local pad = L > 1 and full({N, 2}, NEG)
  local il_t = tmin < tmax and ember.tensor(il, {dtype = "int64", device = device}):reshape(N, 1)
  for t = 1, tmax do
    local x = alpha
    if L > 1 then
      local P = ember.cat({pad, alpha}, 2)                           -- [N, L + 2]
      x = x:logaddexp(P:narrow(2, 2, L))                             -- from the state before
      x = x:logaddexp(P:narrow(2, 1, L) + skip_add)                  -- from two states back
    end
    x = x + E:select(1, t)
    if t > tmin then x = ember.where(il_t:ge(t), x, alpha) end   -- samples whose input has ended keep theirs
    alpha = x
  end

  -- the log-likelihood: the last blank or the last label, at each sample's last frame
  local tl_t = ember.tensor(tl, {dtype = "int64", device = device}):reshape(N, 1)
  local ll = alpha:gather(2, tl_t * 2 + 1)
  if smax > 0 then
    local last = alpha:gather(2, (tl_t * 2):clamp_min(1)) + full({N, 1}, 0):masked_fill(tl_t:eq(0), NEG)
    ll = ll:logaddexp(last)
  end
  ll = ll:reshape(N)
  local impossible = ll:lt(NEG / 2)
  local loss = ember.where(impossible, full({N}, zero_infinity and 0 or math.huge), -ll)

  if not zero_infinity and lp.requires_grad and ember.is_grad_enabled() and impossible:any():item() then
    local frames = ember.arange(1, T + 1, {dtype = "int64", device = device}):reshape(T, 1, 1)
      :le(ember.tensor(il, {dtype = "int64", device = device}):reshape(1, N, 1))
    local mask = frames:logical_and(impossible:reshape(1, N, 1)):expand(T, N, C)
    loss = loss + impossible_grad_fn().apply(lp, mask)
  end

  if reduction == "mean" then
    return (loss / ember.tensor(tl, {dtype = dtype, device = device}):clamp_min(1)):mean()
  elseif reduction == "sum" then
    return loss:sum()
  end
  return batched and loss or loss:reshape({})
end


-- ---- nn.CTCLoss -------------------------------------------------------------------------------

local CTCLoss = Module:extend("CTCLoss")

--- nn.CTCLoss([blank = 1 [, reduction = "mean" [, zero_infinity = false]]]) -> loss_fn(log_probs, targets, input_lengths, target_lengths)
function CTCLoss:init(...)
  local o = args.options("CTCLoss", NAMES, ...)
  self.reduction = check_reduction(o.reduction, "CTCLoss")
  self.blank = check_blank(o.blank, "CTCLoss")
  if self.blank < 1 then
    raise(string.format("CTCLoss: blank must be a class index >= 1 (1-based: PyTorch's blank + 1), got %d", self.blank))
  end
  self.zero_infinity = check_zero_infinity(o.zero_infinity, "CTCLoss")
end

function CTCLoss:forward(...)
  local n = select("#", ...)
  if n ~= 4 then
    raise(string.format("CTCLoss: expected 4 arguments (log_probs, targets, input_lengths, target_lengths), got %d", n))
  end
  local log_probs, targets, input_lengths, target_lengths = ...
  return ctc(log_probs, targets, input_lengths, target_lengths,
             {blank = self.blank, reduction = self.reduction, zero_infinity = self.zero_infinity})
end

function CTCLoss:extra_repr()
  local parts = {}
  if self.blank ~= 1 then parts[#parts + 1] = "blank=" .. self.blank end
  if self.reduction ~= "mean" then parts[#parts + 1] = "reduction=\"" .. self.reduction .. "\"" end
  if self.zero_infinity then parts[#parts + 1] = "zero_infinity=true" end
  return table.concat(parts, ", ")
end

return {functional = {ctc_loss = ctc}, layers = {CTCLoss = CTCLoss}}
