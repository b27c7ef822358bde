-- ember.optim.swa_utils — torch.optim.swa_utils: AveragedModel (stochastic weight averaging,
-- and an exponential moving average of a model's weights with get_ema_multi_avg_fn, as
-- diffusion and self-supervised training keep), update_bn (BatchNorm statistics recomputed
-- for the averaged weights) and the SWALR schedule, with PyTorch's formulas.
--
--   local swa = ember.optim.swa_utils
--   local ema = swa.AveragedModel(model, {multi_avg_fn = swa.get_ema_multi_avg_fn(0.999)})
--   ... opt:step(); ema:update_parameters(model)
local ember = require "ember"
local errors = require "ember.errors"
local options = require("ember.args").options

local raisef = errors.raisef
local M = {}

local function check_decay(decay)
  if type(decay) ~= "number" or decay < 0 or decay > 1 then
    raisef("swa_utils: invalid decay value %s provided; please provide a value in [0, 1] range", tostring(decay))
  end
end

local function count_of(n) return ember.is_tensor(n) and n:item() or n end

--- swa_utils.get_ema_multi_avg_fn([decay = 0.999]) -> fn(ema_params, current_params, n): each ema
-- parameter becomes decay * ema + (1 - decay) * current (lerp for floats).
function M.get_ema_multi_avg_fn(decay)
  decay = decay == nil and 0.999 or decay
  check_decay(decay)
  return function(ema_list, current_list)
    ember.no_grad(function()
      for i, e in ipairs(ema_list) do
        if e:is_floating_point() then e:lerp_(current_list[i], 1 - decay)
        else e:copy_(e * decay + current_list[i] * (1 - decay)) end
      end
    end)
  end
end

--- swa_utils.get_swa_multi_avg_fn() -> fn(averaged_params, current_params, n): the running mean
-- of n + 1 models, averaged + (current - averaged) / (n + 1).
function M.get_swa_multi_avg_fn()
  return function(avg_list, current_list, n)
    local w = 1 / (count_of(n) + 1)
    ember.no_grad(function()
      for i, a in ipairs(avg_list) do
        if a:is_floating_point() then a:lerp_(current_list[i], w)
        else a:copy_(a + (current_list[i] - a) * w) end   -- integers: truncated, as PyTorch's
      end
    end)
  end
end

--- swa_utils.get_ema_avg_fn([decay = 0.999]) -> fn(ema, current, n) -> decay * ema + (1 - decay) * current.
function M.get_ema_avg_fn(decay)
  decay = decay == nil and 0.999 or decay
  check_decay(decay)
  return function(ema, current)
    return ember.no_grad(function() return ema * decay + current * (1 - decay) end)
  end
end

--- swa_utils.get_swa_avg_fn() -> fn(averaged, current, n) -> averaged + (current - averaged) / (n + 1).
function M.get_swa_avg_fn()
  return function(avg, current, n)
    return ember.no_grad(function() return avg + (current - avg) / (count_of(n) + 1) end)
  end
end

-- ---- AveragedModel -------------------------------------------------------------------------

local nn = require "ember.nn"
local AveragedModel = nn.Module:extend("AveragedModel")
M.AveragedModel = AveragedModel

local function check_fn(what, f)
  if f ~= nil and type(f) ~= "function" and not (getmetatable(f) or {}).__call then
    raisef("AveragedModel: %s must be a function, got %s", what, type(f))
  end
end

--- swa_utils.AveragedModel(model [, {device, avg_fn, multi_avg_fn, use_buffers = false}]) -> a module
-- holding a deep copy of model whose parameters (and buffers, with use_buffers) average the
-- model's over update_parameters calls: equal weights by default, or avg_fn(averaged, current,
-- n) per tensor, or multi_avg_fn(averaged list, current list, n) per dtype and device.
function AveragedModel:init(model, ...)
  local o = options("AveragedModel", {"device", "avg_fn", "multi_avg_fn", "use_buffers"}, ...)
  if not nn.is_module(model) then raisef("AveragedModel: model must be a module, got %s", type(model)) end
  check_fn("avg_fn", o.avg_fn)
  check_fn("multi_avg_fn", o.multi_avg_fn)
  if o.avg_fn ~= nil and o.multi_avg_fn ~= nil then
    raisef("AveragedModel: only one of avg_fn and multi_avg_fn should be provided")
  end
  if o.use_buffers ~= nil and type(o.use_buffers) ~= "boolean" then
    raisef("AveragedModel: use_buffers must be a boolean, got %s", type(o.use_buffers))
  end
  local copy = ember.deepcopy(model)
  if o.device ~= nil then copy = copy:to(o.device) end
  self.module = copy
  self:register_buffer("n_averaged", ember.tensor(0, {dtype = "int64", device = o.device}))
  self.avg_fn = o.avg_fn
  self.multi_avg_fn = o.multi_avg_fn
  self.use_buffers = o.use_buffers == true
end

function AveragedModel:forward(...) return self.module(...) end

-- parameters, then buffers when use_buffers
local function averaged_tensors(m, use_buffers)
  local out = {}
  for _, p in ipairs(m:parameters()) do out[#out + 1] = p end
  if use_buffers then for _, b in ipairs(m:buffers()) do out[#out + 1] = b end end
  return out
end

--- averaged:update_parameters(model): the first call copies model's tensors; each later one
--- averages them in; buffers follow model's (unless use_buffers averages them too).
function AveragedModel:update_parameters(model)
  if not nn.is_module(model) then
    raisef("AveragedModel: update_parameters: model must be a module, got %s", type(model))
  end
  local mine = averaged_tensors(self.module, self.use_buffers)
  local theirs = averaged_tensors(model, self.use_buffers)
  local n = math.min(#mine, #theirs)
  local first = self.n_averaged:item() == 0
  ember.no_grad(function()
    local a, m = {}, {}
    for i = 1, n do
      a[i] = mine[i]:detach()
      m[i] = theirs[i]:detach():to(a[i].device)
      if tostring(a[i].shape) ~= tostring(m[i].shape) then
        raisef("AveragedModel: update_parameters: tensor %d has shape %s in the average and %s in the model (not "
               .. "the same architecture)", i, errors.shape_str(a[i]), errors.shape_str(m[i]))
      end
      if first then a[i]:copy_(m[i]) end
    end
    if not first then
      if self.multi_avg_fn ~= nil or self.avg_fn == nil then
        -- grouped by device and dtype, as PyTorch's foreach kernels take them
        local groups, order = {}, {}
        for i = 1, n do
          local key = a[i].device .. "/" .. a[i].dtype
          if not groups[key] then groups[key] = {{}, {}}; order[#order + 1] = key end
          local g = groups[key]
          g[1][#g[1] + 1], g[2][#g[2] + 1] = a[i], m[i]
        end
        local fn = self.multi_avg_fn or M.get_swa_multi_avg_fn()
        for _, key in ipairs(order) do
          local g = groups[key]
          fn(g[1], g[2], self.n_averaged:to(g[1][1].device))
        end
      else
        for i = 1, n do a[i]:copy_(self.avg_fn(a[i], m[i], self.n_averaged:to(a[i].device))) end
      end
    end
    if not self.use_buffers then
      local bs, bm = self.module:buffers(), model:buffers()
      if #bs ~= #bm then
        raisef("AveragedModel: update_parameters: the models have %d and %d buffers", #bs, #bm)
      end
      for i, b in ipairs(bs) do b:detach():copy_(bm[i]:detach():to(b.device)) end
    end
    self.n_averaged:add_(1)
  end)
end

-- ---- update_bn -----------------------------------------------------------------------------

--- swa_utils.update_bn(loader, model [, device]): BatchNorm's running statistics recomputed from
--- one pass over loader (batches, or {inputs, ...} lists), as a cumulative average (momentum
--- nil), with model in training mode; each BatchNorm's momentum and the mode are restored.
function M.update_bn(loader, model, device)
  if not nn.is_module(model) then raisef("update_bn: model must be a module, got %s", type(model)) end
  if type(loader) ~= "function" and type(loader) ~= "table" then
    raisef("update_bn: loader must be a DataLoader, a list of batches or an iterator, got %s", type(loader))
  end
  local momenta, norms = {}, {}
  for _, m in ipairs(model:modules()) do
    if m._batch_norm_step ~= nil then
      m:reset_running_stats()
      norms[#norms + 1] = m
      momenta[#norms] = rawget(m, "momentum")
    end
  end
  if #norms == 0 then return end
  local was_training = model.training
  model:train()
  for _, m in ipairs(norms) do rawset(m, "momentum", nil) end
  local function run(input)
    if type(input) == "table" and not ember.is_tensor(input) then input = input[1] end
    if device ~= nil then input = input:to(device) end
    model(input)
  end
  local callable = type(loader) == "function" or (type(loader) == "table" and (getmetatable(loader) or {}).__call)
  local ok, err = pcall(ember.no_grad, function()
    if callable then
      for input in loader do run(input) end     -- a DataLoader (its first value: the inputs) or an iterator
    else
      for _, input in ipairs(loader) do run(input) end
    end
  end)
  for i, m in ipairs(norms) do rawset(m, "momentum", momenta[i]) end
  model:train(was_training)
  if not ok then error(err, 0) end
end

-- ---- SWALR ---------------------------------------------------------------------------------

M.SWALR = require("ember.optim.lr_scheduler").SWALR

return M
