-- ember.optim.lr_scheduler — learning-rate schedules (torch.optim.lr_scheduler).
--
--   local sched = optim.lr_scheduler.StepLR(opt, {step_size = 30, gamma = 0.1})
--   for epoch = 1, n do train(); sched:step() end
--   sched:get_last_lr()   --> {lr of group 1, ...}
--
-- As in PyTorch, constructing a scheduler records each group's initial_lr,
-- sets the lr of epoch 0 (one implicit step), and step() moves to the next
-- epoch. StepLR and LinearLR use PyTorch's chainable (recursive) form, which
-- multiplies the group's current lr, so a change made by hand or by another
-- scheduler carries on; CosineAnnealingLR uses the closed form
-- eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.
-- step(epoch) (deprecated in PyTorch) jumps to an epoch with the closed form.
--
-- state_dict() returns the scheduler's fields (PyTorch's layout: last_epoch,
-- base_lrs, _last_lr, _step_count and the hyper-parameters);
-- state_dict_flat() the same as a table of strings (exact numbers) for a
-- safetensors header, read back by load_state_dict_flat(). load_state_dict()
-- also takes the flat strings.
local flat = require "ember.optim.flat"

local M = {}

local raisef = require("ember.errors").raisef

local LRScheduler = {}
LRScheduler.__index = LRScheduler

local function copy_list(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  return c
end

-- Checks an option of the options table `opts` and returns it (or def).
local function option(name, opts, key, def, check)
  local v = opts[key]
  if v == nil then v = def end
  if type(v) ~= "number" then
    raisef("%s: %s must be a number, got %s", name, key, type(v))
  end
  if check and not check(v) then
    raisef("%s: invalid %s = %s", name, key, tostring(v))
  end
  return v
end

local function construct(cls, opt, opts)
  local name = cls._name
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then
    raisef("%s: argument 1: expected an optimizer, got %s", name, type(opt))
  end
  if opts ~= nil and type(opts) ~= "table" then
    raisef("%s: argument 2: expected an options table, got %s", name, type(opts))
  end
  opts = opts or {}
  for k in pairs(opts) do
    if not cls._options[k] then raisef("%s: unknown option '%s'", name, tostring(k)) end
  end
  local self = setmetatable({optimizer = opt}, cls)
  cls._init(self, opts)
  local last_epoch = opts.last_epoch or -1
  if math.type(last_epoch) ~= "integer" or last_epoch < -1 then
    raisef("%s: last_epoch must be an integer >= -1, got %s", name, tostring(last_epoch))
  end
  for i, group in ipairs(opt.param_groups) do
    if last_epoch == -1 then
      if group.initial_lr == nil then group.initial_lr = group.lr end
    elseif group.initial_lr == nil then
      raisef("%s: param_groups[%d] has no initial_lr, needed to resume at last_epoch = %d",
           name, i, last_epoch)
    end
  end
  self.base_lrs = {}
  for i, group in ipairs(opt.param_groups) do self.base_lrs[i] = group.initial_lr end
  self.last_epoch = last_epoch
  self._step_count = 0
  self:step()
  return self
end

local function class(name, options, init, get_lr, closed_form)
  local cls = setmetatable({}, {
    __index = LRScheduler,
    __call = function(c, opt, opts) return construct(c, opt, opts) end,
  })
  cls.__index = cls
  cls.__name = name
  cls._name = name
  options.last_epoch = true
  options.verbose = true
  cls._options = options
  cls._init = init
  cls.get_lr = get_lr
  cls._get_closed_form_lr = closed_form
  return cls
end

--- sched:step([epoch]): advances one epoch and sets each group's lr.
function LRScheduler:step(epoch)
  self._step_count = self._step_count + 1
  local lrs
  if epoch == nil then
    self.last_epoch = self.last_epoch + 1
    lrs = self:get_lr()
  else
    if math.type(epoch) ~= "integer" then
      raisef("%s: step: epoch must be an integer, got %s", self._name, tostring(epoch))
    end
    self.last_epoch = epoch
    lrs = self:_get_closed_form_lr()
  end
  for i, group in ipairs(self.optimizer.param_groups) do group.lr = lrs[i] end
  self._last_lr = {}
  for i, group in ipairs(self.optimizer.param_groups) do self._last_lr[i] = group.lr end
end

--- sched:get_last_lr() -> the lr of each group set by the last step().
function LRScheduler:get_last_lr()
  return copy_list(self._last_lr)
end

local function group_lrs(self)
  local out = {}
  for i, group in ipairs(self.optimizer.param_groups) do out[i] = group.lr end
  return out
end

function LRScheduler:state_dict()
  local sd = {}
  for k, v in pairs(self) do
    if k ~= "optimizer" then sd[k] = type(v) == "table" and copy_list(v) or v end
  end
  return sd
end

-- Accepts numbers or the strings of state_dict_flat (a checkpoint's metadata).
function LRScheduler:load_state_dict(sd)
  local name = self._name .. ": load_state_dict"
  if type(sd) ~= "table" then raisef("%s: expected a table, got %s", name, type(sd)) end
  local new = {}
  for k, v in pairs(sd) do
    if k ~= "optimizer" then
      if type(v) == "string" then v = flat.decode(v, name .. ": " .. k) end
      if self[k] == nil then raisef("%s: unknown field '%s'", name, tostring(k)) end
      if type(v) ~= type(self[k]) then
        raisef("%s: field '%s' should be a %s, got %s", name, k, type(self[k]), type(v))
      end
      new[k] = type(v) == "table" and copy_list(v) or v
    end
  end
  for _, k in ipairs({"last_epoch", "_step_count"}) do
    if new[k] ~= nil then new[k] = math.tointeger(new[k]) or raisef("%s: %s must be an integer", name, k) end
  end
  for k, v in pairs(new) do self[k] = v end
end

function LRScheduler:state_dict_flat()
  local meta = {}
  for k, v in pairs(self:state_dict()) do
    meta[k] = flat.encode(v, self._name .. ": state_dict_flat: " .. k)
  end
  return meta
end

function LRScheduler:load_state_dict_flat(meta)
  self:load_state_dict(meta)
end

---------------------------------------------------------------------------

local function positive_int(v) return math.type(v) == "integer" and v > 0 end

--- StepLR(opt, {step_size =, gamma = 0.1}): lr *= gamma every step_size epochs.
M.StepLR = class("StepLR", {step_size = true, gamma = true},
  function(self, opts)
    if opts.step_size == nil then raisef("StepLR: step_size is required") end
    self.step_size = option("StepLR", opts, "step_size", nil, positive_int)
    self.gamma = option("StepLR", opts, "gamma", 0.1, function(v) return v > 0 and v < math.huge end)
  end,
  function(self)
    if self.last_epoch == 0 or self.last_epoch % self.step_size ~= 0 then return group_lrs(self) end
    local out = group_lrs(self)
    for i, lr in ipairs(out) do out[i] = lr * self.gamma end
    return out
  end,
  function(self)
    local out = {}
    for i, base in ipairs(self.base_lrs) do
      out[i] = base * self.gamma ^ (self.last_epoch // self.step_size)
    end
    return out
  end)

local function cosine(self)
  local out = {}
  for i, base in ipairs(self.base_lrs) do
    out[i] = self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
  end
  return out
end

--- CosineAnnealingLR(opt, {T_max =, eta_min = 0})
M.CosineAnnealingLR = class("CosineAnnealingLR", {T_max = true, eta_min = true},
  function(self, opts)
    if opts.T_max == nil then raisef("CosineAnnealingLR: T_max is required") end
    self.T_max = option("CosineAnnealingLR", opts, "T_max", nil, function(v) return v > 0 and v < math.huge end)
    self.eta_min = option("CosineAnnealingLR", opts, "eta_min", 0, function(v) return v >= 0 and v < math.huge end)
  end,
  cosine, cosine)

--- LinearLR(opt, {start_factor = 1/3, end_factor = 1, total_iters = 5}):
--- the factor goes linearly from start_factor to end_factor over total_iters
--- epochs (a linear warm-up with the defaults).
M.LinearLR = class("LinearLR", {start_factor = true, end_factor = true, total_iters = true},
  function(self, opts)
    self.start_factor = option("LinearLR", opts, "start_factor", 1.0 / 3,
                               function(v) return v > 0 and v <= 1 end)
    self.end_factor = option("LinearLR", opts, "end_factor", 1.0,
                             function(v) return v >= 0 and v <= 1 end)
    self.total_iters = option("LinearLR", opts, "total_iters", 5, positive_int)
  end,
  function(self)
    local out = group_lrs(self)
    if self.last_epoch == 0 then
      for i, lr in ipairs(out) do out[i] = lr * self.start_factor end
    elseif self.last_epoch <= self.total_iters then
      local s, e = self.start_factor, self.end_factor
      local f = 1 + (e - s) / (self.total_iters * s + (self.last_epoch - 1) * (e - s))
      for i, lr in ipairs(out) do out[i] = lr * f end
    end
    return out
  end,
  function(self)
    local out = {}
    local s, e = self.start_factor, self.end_factor
    for i, base in ipairs(self.base_lrs) do
      out[i] = base * (s + (e - s) * math.min(self.total_iters, self.last_epoch) / self.total_iters)
    end
    return out
  end)

M.LRScheduler = LRScheduler

return M
