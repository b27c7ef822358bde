-- ember.nn.sync_bn — nn.SyncBatchNorm (torch.nn.SyncBatchNorm): batch normalisation whose
-- training statistics are those of the whole batch across the ranks of a process group
-- (ember.distributed), and SyncBatchNorm.convert_sync_batchnorm(model), which swaps a
-- model's BatchNorm1d/2d/3d for it, sharing their parameters and buffers.
--
-- In training with more than one rank, forward and backward each take two all_reduces
-- (SUM) over the group:
--   forward   the channels' sums and counts, giving the global mean; then the sums of
--             squared deviations from it, giving the global (biased) variance — two passes,
--             so a large mean does not cancel the variance away;
--   backward  sum(dy) and sum(dy * xhat) per channel, so that
--             dx = weight * invstd * (dy - sum(dy) / N - xhat * sum(dy * xhat) / N)
--             with the sums and N over every rank (PyTorch's formula); weight's and bias's
--             gradients are each rank's own sums, which DDP then averages as any other.
-- Evaluation, a single rank or no process group: plain batch normalisation. The running
-- statistics are updated with the global mean and the unbiased global variance.
--
-- Loaded by layers.lua while that is still loading: ember.nn is required when used.
local ember = require "ember"
local errors = require "ember.errors"
local raise, shape_str = errors.raise, errors.shape_str
local options = require("ember.args").options
local Module = require("ember.nn.module").Module

local L = {}

local HALF = {float16 = true, bfloat16 = true}

local function nn() return require "ember.nn" end
local function dist() return ember.distributed end

local SyncBatchNorm = Module:extend("SyncBatchNorm")
L.SyncBatchNorm = SyncBatchNorm

--- nn.SyncBatchNorm(num_features [, eps = 1e-5 [, momentum = 0.1 [, affine = true [, track_running_stats = true [, process_group [, device [, dtype]]]]]]])
function SyncBatchNorm:init(num_features, ...)
  local o = options("SyncBatchNorm", {"eps", "momentum", "affine", "track_running_stats", "process_group", "device",
                                      "dtype"}, ...)
  -- BatchNorm1d's constructor checks and makes the parameters and buffers (its messages renamed)
  local ok, err = pcall(nn().BatchNorm1d.init, self, num_features, {eps = o.eps, momentum = o.momentum,
    affine = o.affine, track_running_stats = o.track_running_stats, device = o.device, dtype = o.dtype})
  if not ok then raise((tostring(err):gsub("^[^:\n]*:%d+: ", "", 1):gsub("BatchNorm1d", "SyncBatchNorm"))) end
  if o.process_group ~= nil and getmetatable(o.process_group) ~= ember.distributed.ProcessGroup then
    raise("SyncBatchNorm: process_group must be a process group (from ember.distributed.new_group, or group.WORLD), got "
          .. type(o.process_group))
  end
  self.process_group = o.process_group
end

function SyncBatchNorm:extra_repr() return nn().BatchNorm1d.extra_repr(self) end
function SyncBatchNorm:reset_parameters() return nn().BatchNorm1d.reset_parameters(self) end
function SyncBatchNorm:reset_running_stats() return nn().BatchNorm1d.reset_running_stats(self) end

-- the ranks taking part: the group's size, or 1 without a process group
local function world(self)
  local d = dist()
  if not d.is_initialized() then return 1 end
  return d.get_world_size(self.process_group)
end

-- every dim but the channels' (dim 2), and the sizes to view a [C] tensor against x
local function reduce_dims(x)
  local dims, view = {1}, {1, x.shape[2]}
  for d = 3, x.ndim do dims[#dims + 1] = d; view[#view + 1] = 1 end
  return dims, view
end

local function all_reduce(t, group)
  dist().all_reduce(t, {group = group})
  return t
end

local SyncFunction   -- made on first use (ember.autograd loads then)

local function sync_function()
  if SyncFunction then return SyncFunction end
  SyncFunction = require("ember.autograd").Function:extend("SyncBatchNorm")
  function SyncFunction.forward(ctx, input, weight, bias, st)
    -- statistics of half inputs in float32, as PyTorch's
    local x = HALF[input.dtype] and input:float() or input
    local dims, view = reduce_dims(x)
    local local_count = x:numel() // x.shape[2]
    -- pass 1: sums and counts -> the global mean
    local s = all_reduce(ember.cat({x:sum(dims), ember.full({1}, local_count, {dtype = x.dtype, device = x.device})}),
                         st.group)
    local C = x.shape[2]
    local n = s[C + 1]:item()
    local mean = s:narrow(1, 1, C) / n
    -- pass 2: squared deviations -> the global biased variance
    local centred = x - mean:view(view)
    local var = all_reduce((centred * centred):sum(dims), st.group) / n
    local invstd = (var + st.eps):rsqrt()
    local xhat = centred * invstd:view(view)
    local y = xhat
    if weight then y = y * weight:to(x.dtype):view(view) + bias:to(x.dtype):view(view) end
    if st.running_mean then
      local m = st.factor
      st.running_mean:mul_(1 - m):add_(mean:to(st.running_mean.dtype) * m)
      st.running_var:mul_(1 - m):add_((var * (n / math.max(n - 1, 1))):to(st.running_var.dtype) * m)
    end
    ctx:save_for_backward(xhat, invstd, weight)
    ctx.n, ctx.group = n, st.group
    return y:to(input.dtype)
  end
  function SyncFunction.backward(ctx, grad)
    local xhat, invstd, weight = table.unpack(ctx.saved_tensors)
    local dy = grad:to(xhat.dtype)
    local dims, view = reduce_dims(dy)
    local sum_dy, sum_dy_xhat = dy:sum(dims), (dy * xhat):sum(dims)
    local grad_weight = weight and sum_dy_xhat:to(weight.dtype) or nil
    local grad_bias = weight and sum_dy:to(weight.dtype) or nil
    local C = dy.shape[2]
    local g = all_reduce(ember.cat({sum_dy, sum_dy_xhat}), ctx.group)
    local mean_dy, mean_dy_xhat = (g:narrow(1, 1, C) / ctx.n):view(view), (g:narrow(1, C + 1, C) / ctx.n):view(view)
    local scale = invstd
    if weight then scale = scale * weight:to(invstd.dtype) end
    local dx = (dy - mean_dy - xhat * mean_dy_xhat) * scale:view(view)
    return dx:to(grad.dtype), grad_weight, grad_bias, nil
  end
  return SyncFunction
end

function SyncBatchNorm:forward(x)
  Module._check_input(self, x)
  if x.ndim < 2 then
    raise(string.format("SyncBatchNorm(%s): expected at least a 2-D input, got %s", self:extra_repr(), shape_str(x)))
  end
  if x.shape[2] ~= self.num_features then
    raise(string.format("SyncBatchNorm(%s): expected %d channels (dim 2) of the input, got %s", self:extra_repr(),
                        self.num_features, shape_str(x)))
  end
  local factor, use_batch, stats = nn().BatchNorm1d._batch_norm_step(self)
  if not (use_batch and world(self) > 1) then
    return nn().functional.batch_norm(x, stats and self.running_mean or nil, stats and self.running_var or nil,
                                      self.weight, self.bias, use_batch, factor, self.eps)
  end
  if not x:is_floating_point() then raise("SyncBatchNorm: expected a floating-point input, got " .. x.dtype) end
  local st = {group = self.process_group, eps = self.eps, factor = factor,
              running_mean = self.training and self.track_running_stats and self.running_mean or nil,
              running_var = self.training and self.track_running_stats and self.running_var or nil}
  return sync_function().apply(x, self.weight, self.bias, st)
end

--- nn.SyncBatchNorm.convert_sync_batchnorm(module [, process_group]) -> module with every BatchNorm1d/2d/3d
-- replaced by a SyncBatchNorm sharing its parameters, buffers and training flag (the module itself when it is one).
function SyncBatchNorm.convert_sync_batchnorm(module, process_group)
  local N = nn()
  if not N.is_module(module) then
    raise("SyncBatchNorm.convert_sync_batchnorm: expected a module, got " .. type(module))
  end
  local mt = getmetatable(module)
  if mt == N.BatchNorm1d or mt == N.BatchNorm2d or mt == N.BatchNorm3d then
    local sync = SyncBatchNorm(module.num_features, {eps = module.eps, momentum = module.momentum,
                                                     affine = module.affine,
                                                     track_running_stats = module.track_running_stats,
                                                     process_group = process_group})
    for _, kind in ipairs{{"_parameters", "_param_names"}, {"_buffers", "_buffer_names"}} do
      local from, to = rawget(module, kind[1]), rawget(sync, kind[1])
      for _, name in ipairs(rawget(module, kind[2])) do to[name] = from[name] end
    end
    sync.training = module.training
    return sync
  end
  for name, child in module:named_children() do
    local converted = SyncBatchNorm.convert_sync_batchnorm(child, process_group)
    if converted ~= child then rawget(module, "_modules")[name] = converted end
  end
  return module
end

return {layers = L}
