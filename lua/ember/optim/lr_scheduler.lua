-- ember.optim.lr_scheduler — learning-rate schedules (torch.optim.lr_scheduler).
--
--   local sched = optim.lr_scheduler.StepLR(opt, {step_size = 30, gamma = 0.1})
--   for epoch = 1, n do train(); sched:step() end
--   sched:get_last_lr()   --> {lr of group 1, ...}
--
-- As in PyTorch, constructing a scheduler records each group's initial_lr,
-- sets the lr of epoch 0 (one implicit step), and step() moves to the next
-- epoch. Each get_lr is PyTorch 1.13's: the chainable ones (StepLR,
-- MultiStepLR, LinearLR, ConstantLR, ExponentialLR, PolynomialLR,
-- MultiplicativeLR, CosineAnnealingLR) rescale the group's current lr, so a
-- change made by hand or by another scheduler (ChainedScheduler) carries on.
-- step(epoch) (deprecated in PyTorch) jumps to an epoch with the closed form
-- where there is one; CosineAnnealingWarmRestarts takes fractional epochs.
-- ReduceLROnPlateau steps on a metric: sched:step(val_loss).
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

local function check_optimizer(name, opt)
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then
    raisef("%s: argument 1: expected an optimizer, got %s", name, type(opt))
  end
end

-- A constructor's arguments checked: the optimizer, then PyTorch's arguments after it,
-- positional in the order of names or in a trailing options table (ember.args); returns
-- them as a table name -> value.
local function check_args(name, opt, names, ...)
  check_optimizer(name, opt)
  return require("ember.args").options(name, names, ...)
end

local function construct(cls, opt, ...)
  local name = cls._name
  local opts = check_args(name, opt, cls._names, ...)
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
  if cls._after_init then cls._after_init(self, opts) end
  return self
end

local function group_lrs(self)
  local out = {}
  for i, group in ipairs(self.optimizer.param_groups) do out[i] = group.lr end
  return out
end

-- sets each group's lr to lrs[i] and records them as the last lrs
local function set_lrs(self, lrs)
  for i, group in ipairs(self.optimizer.param_groups) do group.lr = lrs[i] end
  self._last_lr = group_lrs(self)
end

-- A scheduler class: parent's methods, and new(cls, ...) constructs one (cls(...)).
local function new_class(name, parent, new)
  local cls = setmetatable({}, {__index = parent, __call = new})
  cls.__index = cls
  cls.__name = name
  cls._name = name
  return cls
end

-- names: the arguments after the optimizer, in PyTorch's order (last_epoch and the
-- keyword verbose are added)
local function class(name, names, init, get_lr, closed_form)
  local cls = new_class(name, LRScheduler, construct)
  local all = {}
  for i, k in ipairs(names) do all[i] = k end
  for _, k in ipairs{"last_epoch", "*", "verbose"} do all[#all + 1] = k end
  cls._names = all
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
    if self._get_closed_form_lr then lrs = self:_get_closed_form_lr() else lrs = self:get_lr() end
  end
  set_lrs(self, lrs)
end

--- sched:get_last_lr() -> the lr of each group set by the last step().
function LRScheduler:get_last_lr()
  return copy_list(self._last_lr)
end

-- Not saved: the optimizer, the lambdas (functions, as PyTorch leaves
-- them out) and the wrapped schedulers (saved by their own state_dict).
local UNSAVED = {optimizer = true, lr_lambdas = true, _schedulers = true}

function LRScheduler:state_dict()
  local sd = {}
  for k, v in pairs(self) do
    if not UNSAVED[k] and type(v) ~= "function" then sd[k] = type(v) == "table" and copy_list(v) or v end
  end
  return sd
end

-- Accepts numbers or the strings of state_dict_flat (a checkpoint's metadata).
function LRScheduler:load_state_dict(sd)
  local name = self._name .. ": load_state_dict"
  if type(sd) ~= "table" then raisef("%s: expected a table, got %s", name, type(sd)) end
  local new = {}
  for k, v in pairs(sd) do
    if not UNSAVED[k] then
      if type(v) == "string" then v = flat.decode(v, name .. ": " .. k) end
      if self[k] == nil then raisef("%s: unknown field '%s'", name, tostring(k)) end
      if type(v) ~= type(self[k]) then
        raisef("%s: field '%s' should be a %s, got %s", name, k, type(self[k]), type(v))
      end
      new[k] = type(v) == "table" and copy_list(v) or v
    end
  end
  for _, k in ipairs(self._integer_fields or {"last_epoch", "_step_count"}) do
    if new[k] ~= nil then new[k] = math.tointeger(new[k]) or raisef("%s: %s must be an integer", name, k) end
  end
  for k, v in pairs(new) do self[k] = v end
end

function LRScheduler:state_dict_flat()
  local meta = {}
  for k, v in pairs(LRScheduler.state_dict(self)) do
    meta[k] = flat.encode(v, self._name .. ": state_dict_flat: " .. k)
  end
  return meta
end

function LRScheduler:load_state_dict_flat(meta)
  self:load_state_dict(meta)
end

---------------------------------------------------------------------------

local function positive_int(v) return math.type(v) == "integer" and v > 0 end
local function finite(v) return v == v and v > -math.huge and v < math.huge end

local function boolean_option(name, opts, key, def)
  local v = opts[key]
  if v == nil then v = def end
  if type(v) ~= "boolean" then raisef("%s: %s must be a boolean, got %s", name, key, type(v)) end
  return v
end

local function choice_option(name, opts, key, def, choices)
  local v = opts[key]
  if v == nil then v = def end
  for _, c in ipairs(choices) do
    if v == c then return v end
  end
  raisef("%s: invalid %s = %s (expected one of \"%s\")", name, key, tostring(v), table.concat(choices, "\", \""))
end

-- A number for every group, or one number for all (PyTorch's _format_param).
local function per_group(name, opt, opts, key, def)
  local v = opts[key]
  if v == nil then v = def end
  if v == nil then raisef("%s: %s is required", name, key) end
  local n = #opt.param_groups
  local out = {}
  if type(v) == "number" then
    for i = 1, n do out[i] = v end
  elseif type(v) == "table" then
    if #v ~= n then raisef("%s: expected %d values for %s (one per parameter group), got %d", name, n, key, #v) end
    for i = 1, n do
      if type(v[i]) ~= "number" then raisef("%s: %s[%d] must be a number, got %s", name, key, i, type(v[i])) end
      out[i] = v[i]
    end
  else
    raisef("%s: %s must be a number or a list of numbers, got %s", name, key, type(v))
  end
  return out
end

local function map_groups(self, f)
  local out = {}
  for i, group in ipairs(self.optimizer.param_groups) do out[i] = f(group.lr, i) end
  return out
end

local function map_base(self, f)
  local out = {}
  for i, base in ipairs(self.base_lrs) do out[i] = f(base, i) end
  return out
end

--- StepLR(opt, {step_size =, gamma = 0.1}): lr *= gamma every step_size epochs.
M.StepLR = class("StepLR", {"step_size", "gamma"},
  function(self, opts)
    if opts.step_size == nil then raisef("StepLR: step_size is required") end
    self.step_size = option("StepLR", opts, "step_size", nil, positive_int)
    self.gamma = option("StepLR", opts, "gamma", 0.1, function(v) return v > 0 and v < math.huge end)
  end,
  function(self)
    if self.last_epoch == 0 or self.last_epoch % self.step_size ~= 0 then return group_lrs(self) end
    return map_groups(self, function(lr) return lr * self.gamma end)
  end,
  function(self)
    return map_base(self, function(base) return base * self.gamma ^ (self.last_epoch // self.step_size) end)
  end)

-- PyTorch 1.13's recursive form: each epoch rescales the current lr, so it
-- composes with other schedulers (ChainedScheduler) as PyTorch's does.
local function cosine_recursive(self)
  local e, T, eta_min = self.last_epoch, self.T_max, self.eta_min
  if e == 0 then return group_lrs(self) end
  if self._step_count == 1 and e > 0 then
    return map_base(self, function(base)
      return eta_min + (base - eta_min) * (1 + math.cos(e * math.pi / T)) / 2
    end)
  end
  if (e - 1 - T) % (2 * T) == 0 then
    return map_groups(self, function(lr, i)
      return lr + (self.base_lrs[i] - eta_min) * (1 - math.cos(math.pi / T)) / 2
    end)
  end
  return map_groups(self, function(lr)
    return (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T)) * (lr - eta_min) + eta_min
  end)
end

local function cosine_closed(self)
  return map_base(self, function(base)
    return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
  end)
end

--- CosineAnnealingLR(opt, {T_max =, eta_min = 0})
M.CosineAnnealingLR = class("CosineAnnealingLR", {"T_max", "eta_min"},
  function(self, opts)
    if opts.T_max == nil then raisef("CosineAnnealingLR: T_max is required") end
    self.T_max = option("CosineAnnealingLR", opts, "T_max", nil, function(v) return v > 0 and v < math.huge end)
    self.eta_min = option("CosineAnnealingLR", opts, "eta_min", 0, function(v) return v >= 0 and v < math.huge end)
  end,
  cosine_recursive, cosine_closed)

--- LinearLR(opt, {start_factor = 1/3, end_factor = 1, total_iters = 5}):
--- the factor goes linearly from start_factor to end_factor over total_iters
--- epochs (a linear warm-up with the defaults).
M.LinearLR = class("LinearLR", {"start_factor", "end_factor", "total_iters"},
  function(self, opts)
    self.start_factor = option("LinearLR", opts, "start_factor", 1.0 / 3,
                               function(v) return v > 0 and v <= 1 end)
    self.end_factor = option("LinearLR", opts, "end_factor", 1.0,
                             function(v) return v >= 0 and v <= 1 end)
    self.total_iters = option("LinearLR", opts, "total_iters", 5, positive_int)
  end,
  function(self)
    if self.last_epoch == 0 then
      return map_groups(self, function(lr) return lr * self.start_factor end)
    elseif self.last_epoch <= self.total_iters then
      local s, e = self.start_factor, self.end_factor
      local f = 1 + (e - s) / (self.total_iters * s + (self.last_epoch - 1) * (e - s))
      return map_groups(self, function(lr) return lr * f end)
    end
    return group_lrs(self)
  end,
  function(self)
    local s, e = self.start_factor, self.end_factor
    return map_base(self, function(base)
      return base * (s + (e - s) * math.min(self.total_iters, self.last_epoch) / self.total_iters)
    end)
  end)

-- LambdaLR and MultiplicativeLR take one function for all groups or a list
-- of one per group. The functions are not saved by state_dict (PyTorch
-- saves plain functions as None); the new scheduler keeps its own.
local function lambdas(name, opt, opts)
  local f = opts.lr_lambda
  local n = #opt.param_groups
  local out = {}
  if type(f) == "function" then
    for i = 1, n do out[i] = f end
  elseif type(f) == "table" then
    if #f ~= n then raisef("%s: expected %d lr_lambdas (one per parameter group), got %d", name, n, #f) end
    for i = 1, n do
      if type(f[i]) ~= "function" then raisef("%s: lr_lambda[%d] must be a function, got %s", name, i, type(f[i])) end
      out[i] = f[i]
    end
  else
    raisef("%s: lr_lambda must be a function or a list of functions, got %s", name, type(f))
  end
  return out
end

local function lambda_value(self, i)
  local v = self.lr_lambdas[i](self.last_epoch)
  if type(v) ~= "number" then
    raisef("%s: lr_lambda[%d](%d) returned a %s, expected a number", self._name, i, self.last_epoch, type(v))
  end
  return v
end

--- LambdaLR(opt, {lr_lambda = f or {f1, f2, ...}}): lr = initial_lr * f(epoch).
M.LambdaLR = class("LambdaLR", {"lr_lambda"},
  function(self, opts) self.lr_lambdas = lambdas("LambdaLR", self.optimizer, opts) end,
  function(self)
    return map_base(self, function(base, i) return base * lambda_value(self, i) end)
  end)

--- MultiplicativeLR(opt, {lr_lambda = f or {...}}): lr *= f(epoch) from epoch 1 on.
M.MultiplicativeLR = class("MultiplicativeLR", {"lr_lambda"},
  function(self, opts) self.lr_lambdas = lambdas("MultiplicativeLR", self.optimizer, opts) end,
  function(self)
    if self.last_epoch > 0 then
      return map_groups(self, function(lr, i) return lr * lambda_value(self, i) end)
    end
    return group_lrs(self)
  end)

-- How many times epoch e appears in the milestones (PyTorch keeps a Counter).
local function count(list, e)
  local n = 0
  for _, m in ipairs(list) do if m == e then n = n + 1 end end
  return n
end

--- MultiStepLR(opt, {milestones = {...}, gamma = 0.1}): lr *= gamma at each milestone.
M.MultiStepLR = class("MultiStepLR", {"milestones", "gamma"},
  function(self, opts)
    local ms = opts.milestones
    if type(ms) ~= "table" then raisef("MultiStepLR: milestones must be a list of integers, got %s", type(ms)) end
    self.milestones = {}
    for i, m in ipairs(ms) do
      if math.type(m) ~= "integer" then
        raisef("MultiStepLR: milestones[%d] must be an integer, got %s", i, tostring(m))
      end
      self.milestones[i] = m
    end
    table.sort(self.milestones)
    self.gamma = option("MultiStepLR", opts, "gamma", 0.1, finite)
  end,
  function(self)
    local n = count(self.milestones, self.last_epoch)
    if n == 0 then return group_lrs(self) end
    return map_groups(self, function(lr) return lr * self.gamma ^ n end)
  end,
  function(self)
    local passed = 0
    for _, m in ipairs(self.milestones) do if m <= self.last_epoch then passed = passed + 1 end end
    return map_base(self, function(base) return base * self.gamma ^ passed end)
  end)

--- ConstantLR(opt, {factor = 1/3, total_iters = 5}): lr * factor until total_iters.
M.ConstantLR = class("ConstantLR", {"factor", "total_iters"},
  function(self, opts)
    self.factor = option("ConstantLR", opts, "factor", 1.0 / 3, function(v) return v >= 0 and v <= 1 end)
    self.total_iters = option("ConstantLR", opts, "total_iters", 5,
                              function(v) return math.type(v) == "integer" and v >= 0 end)
  end,
  function(self)
    if self.last_epoch == 0 then return map_groups(self, function(lr) return lr * self.factor end) end
    if self.last_epoch ~= self.total_iters then return group_lrs(self) end
    return map_groups(self, function(lr) return lr * (1.0 / self.factor) end)
  end,
  function(self)
    local after = self.last_epoch >= self.total_iters and 1 or 0
    return map_base(self, function(base) return base * (self.factor + after * (1 - self.factor)) end)
  end)

--- ExponentialLR(opt, {gamma =}): lr *= gamma every epoch.
M.ExponentialLR = class("ExponentialLR", {"gamma"},
  function(self, opts)
    if opts.gamma == nil then raisef("ExponentialLR: gamma is required") end
    self.gamma = option("ExponentialLR", opts, "gamma", nil, finite)
  end,
  function(self)
    if self.last_epoch == 0 then return group_lrs(self) end
    return map_groups(self, function(lr) return lr * self.gamma end)
  end,
  function(self)
    return map_base(self, function(base) return base * self.gamma ^ self.last_epoch end)
  end)

--- PolynomialLR(opt, {total_iters = 5, power = 1}): lr decays to 0 over total_iters epochs.
M.PolynomialLR = class("PolynomialLR", {"total_iters", "power"},
  function(self, opts)
    self.total_iters = option("PolynomialLR", opts, "total_iters", 5, positive_int)
    self.power = option("PolynomialLR", opts, "power", 1.0, finite)
  end,
  function(self)
    local e, T = self.last_epoch, self.total_iters
    if e == 0 or e > T then return group_lrs(self) end
    local f = ((1.0 - e / T) / (1.0 - (e - 1) / T)) ^ self.power
    return map_groups(self, function(lr) return lr * f end)
  end,
  function(self)
    return map_base(self, function(base)
      return base * (1.0 - math.min(self.total_iters, self.last_epoch) / self.total_iters) ^ self.power
    end)
  end)

---------------------------------------------------------------------------
-- CosineAnnealingWarmRestarts: its own step, which takes fractional epochs.

local CAWR = class("CosineAnnealingWarmRestarts", {"T_0", "T_mult", "eta_min"},
  function(self, opts)
    if opts.T_0 == nil then raisef("CosineAnnealingWarmRestarts: T_0 is required") end
    self.T_0 = option("CosineAnnealingWarmRestarts", opts, "T_0", nil, positive_int)
    self.T_i = self.T_0
    self.T_mult = option("CosineAnnealingWarmRestarts", opts, "T_mult", 1,
                         function(v) return math.type(v) == "integer" and v >= 1 end)
    self.eta_min = option("CosineAnnealingWarmRestarts", opts, "eta_min", 0, finite)
    self.T_cur = opts.last_epoch or -1
  end,
  function(self)
    return map_base(self, function(base)
      return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
    end)
  end)
CAWR._integer_fields = {"last_epoch", "_step_count", "T_0", "T_i", "T_mult"}

--- sched:step([epoch]): epoch may be fractional (epoch + batch / batches).
function CAWR:step(epoch)
  self._step_count = self._step_count + 1
  if epoch == nil and self.last_epoch < 0 then epoch = 0 end
  if epoch == nil then
    epoch = self.last_epoch + 1
    self.T_cur = self.T_cur + 1
    if self.T_cur >= self.T_i then
      self.T_cur = self.T_cur - self.T_i
      self.T_i = self.T_i * self.T_mult
    end
  else
    if type(epoch) ~= "number" or epoch ~= epoch then
      raisef("CosineAnnealingWarmRestarts: step: epoch must be a number, got %s", tostring(epoch))
    end
    if epoch < 0 then raisef("CosineAnnealingWarmRestarts: step: expected a non-negative epoch, got %s", epoch) end
    if epoch >= self.T_0 then
      if self.T_mult == 1 then
        self.T_cur = math.fmod(epoch, self.T_0)
      else
        local n = math.tointeger(math.floor(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult)))
        self.T_cur = epoch - self.T_0 * (self.T_mult ^ n - 1) / (self.T_mult - 1)
        self.T_i = self.T_0 * self.T_mult ^ n
        self.T_i = math.tointeger(self.T_i) or self.T_i
      end
    else
      self.T_i = self.T_0
      self.T_cur = epoch
    end
  end
  self.last_epoch = math.floor(epoch)
  set_lrs(self, self:get_lr())
end
M.CosineAnnealingWarmRestarts = CAWR

---------------------------------------------------------------------------
-- CyclicLR

local CYCLIC_OPTIONS = {"base_lr", "max_lr", "step_size_up", "step_size_down", "mode", "gamma", "scale_fn", "scale_mode",
                        "cycle_momentum", "base_momentum", "max_momentum"}

local function cyclic_scale(self, x)
  if self._scale_fn_custom then
    local v = self._scale_fn_custom(x)
    if type(v) ~= "number" then raisef("CyclicLR: scale_fn(%s) returned a %s, expected a number", x, type(v)) end
    return v
  end
  if self.mode == "triangular" then return 1.0 end
  if self.mode == "triangular2" then return 1 / (2.0 ^ (x - 1)) end
  return self.gamma ^ x
end

M.CyclicLR = class("CyclicLR", CYCLIC_OPTIONS,
  function(self, opts)
    local name, opt = "CyclicLR", self.optimizer
    local base_lrs = per_group(name, opt, opts, "base_lr")
    if (opts.last_epoch or -1) == -1 then
      for i, group in ipairs(opt.param_groups) do group.lr = base_lrs[i] end
    end
    self._cyclic_base_lrs = base_lrs
    self.max_lrs = per_group(name, opt, opts, "max_lr")
    local up = option(name, opts, "step_size_up", 2000, function(v) return v > 0 and v < math.huge end)
    local down = option(name, opts, "step_size_down", up, function(v) return v > 0 and v < math.huge end)
    self.total_size = up + down + 0.0
    self.step_ratio = up / self.total_size
    if opts.scale_fn ~= nil then
      if type(opts.scale_fn) ~= "function" then raisef("%s: scale_fn must be a function, got %s", name, type(opts.scale_fn)) end
      self._scale_fn_custom = opts.scale_fn
      self.mode = type(opts.mode) == "string" and opts.mode or "triangular"
      self.scale_mode = choice_option(name, opts, "scale_mode", "cycle", {"cycle", "iterations"})
    else
      self.mode = choice_option(name, opts, "mode", "triangular", {"triangular", "triangular2", "exp_range"})
      self.scale_mode = self.mode == "exp_range" and "iterations" or "cycle"
    end
    self.gamma = option(name, opts, "gamma", 1.0, finite)
    self.cycle_momentum = boolean_option(name, opts, "cycle_momentum", true)
    if self.cycle_momentum then
      if opt.defaults == nil or opt.defaults.momentum == nil then
        raisef("%s: the optimizer has no momentum to cycle; pass cycle_momentum = false", name)
      end
      local base_m = per_group(name, opt, opts, "base_momentum", 0.8)
      if (opts.last_epoch or -1) == -1 then
        for i, group in ipairs(opt.param_groups) do group.momentum = base_m[i] end
      end
      self.base_momentums = {}
      for i, group in ipairs(opt.param_groups) do self.base_momentums[i] = group.momentum end
      self.max_momentums = per_group(name, opt, opts, "max_momentum", 0.9)
    end
  end,
  function(self)
    local cycle = math.floor(1 + self.last_epoch / self.total_size)
    local x = 1.0 + self.last_epoch / self.total_size - cycle
    local scale_factor
    if x <= self.step_ratio then scale_factor = x / self.step_ratio
    else scale_factor = (x - 1) / (self.step_ratio - 1) end
    local at = self.scale_mode == "cycle" and cycle or self.last_epoch
    local lrs = {}
    for i, base in ipairs(self.base_lrs) do
      lrs[i] = base + (self.max_lrs[i] - base) * scale_factor * cyclic_scale(self, at)
    end
    if self.cycle_momentum then
      for i, group in ipairs(self.optimizer.param_groups) do
        local bm, mm = self.base_momentums[i], self.max_momentums[i]
        group.momentum = mm - (mm - bm) * scale_factor * cyclic_scale(self, at)
      end
    end
    return lrs
  end)
M.CyclicLR._after_init = function(self)
  self.base_lrs = self._cyclic_base_lrs
  self._cyclic_base_lrs = nil
end

---------------------------------------------------------------------------
-- OneCycleLR. The phases are kept as their end steps (the keys they anneal
-- between are fixed by three_phase), so the state saves as plain numbers.

local PHASES2 = {{"initial_lr", "max_lr", "max_momentum", "base_momentum"},
                 {"max_lr", "min_lr", "base_momentum", "max_momentum"}}
local PHASES3 = {{"initial_lr", "max_lr", "max_momentum", "base_momentum"},
                 {"max_lr", "initial_lr", "base_momentum", "max_momentum"},
                 {"initial_lr", "min_lr", "max_momentum", "max_momentum"}}

local function set_momentum(group, use_beta1, m)
  if use_beta1 then
    group.betas = {m, group.betas[2]}
  else
    group.momentum = m
  end
end

M.OneCycleLR = class("OneCycleLR", {"max_lr", "total_steps", "epochs", "steps_per_epoch", "pct_start",
                                    "anneal_strategy", "cycle_momentum", "base_momentum", "max_momentum",
                                    "div_factor", "final_div_factor", "three_phase"},
  function(self, opts)
    local name, opt = "OneCycleLR", self.optimizer
    local function pos_int(key)
      local v = opts[key]
      if math.type(v) ~= "integer" or v <= 0 then raisef("%s: expected a positive integer %s, got %s", name, key, tostring(v)) end
      return v
    end
    if opts.total_steps ~= nil then
      self.total_steps = pos_int("total_steps")
    elseif opts.epochs ~= nil or opts.steps_per_epoch ~= nil then
      self.total_steps = pos_int("epochs") * pos_int("steps_per_epoch")
    else
      raisef("%s: give total_steps, or epochs and steps_per_epoch", name)
    end
    self.pct_start = option(name, opts, "pct_start", 0.3, function(v) return v >= 0 and v <= 1 end)
    self.three_phase = boolean_option(name, opts, "three_phase", false)
    local T, pct = self.total_steps, self.pct_start
    if self.three_phase then
      self._phase_ends = {pct * T - 1, 2 * pct * T - 2, T - 1}
    else
      self._phase_ends = {pct * T - 1, T - 1}
    end
    self.anneal_strategy = choice_option(name, opts, "anneal_strategy", "cos", {"cos", "linear"})
    local div = option(name, opts, "div_factor", 25.0, function(v) return v > 0 and v < math.huge end)
    local final_div = option(name, opts, "final_div_factor", 1e4, function(v) return v > 0 and v < math.huge end)
    local max_lrs = per_group(name, opt, opts, "max_lr")
    if (opts.last_epoch or -1) == -1 then
      for i, group in ipairs(opt.param_groups) do
        group.initial_lr = max_lrs[i] / div
        group.max_lr = max_lrs[i]
        group.min_lr = group.initial_lr / final_div
      end
    end
    self.cycle_momentum = boolean_option(name, opts, "cycle_momentum", true)
    if self.cycle_momentum then
      local d = opt.defaults or {}
      if d.momentum == nil and d.betas == nil then
        raisef("%s: the optimizer has neither momentum nor betas to cycle; pass cycle_momentum = false", name)
      end
      self.use_beta1 = d.betas ~= nil
      local max_m = per_group(name, opt, opts, "max_momentum", 0.95)
      local base_m = per_group(name, opt, opts, "base_momentum", 0.85)
      if (opts.last_epoch or -1) == -1 then
        for i, group in ipairs(opt.param_groups) do
          set_momentum(group, self.use_beta1, max_m[i])
          group.max_momentum = max_m[i]
          group.base_momentum = base_m[i]
        end
      end
    end
  end,
  function(self)
    local step = self.last_epoch
    if step > self.total_steps then
      raisef("OneCycleLR: tried to step %d times; the schedule has total_steps = %d", step + 1, self.total_steps)
    end
    local phases = self.three_phase and PHASES3 or PHASES2
    local cos = self.anneal_strategy == "cos"
    local function anneal(a, b, pct)
      if cos then return b + (a - b) / 2.0 * (math.cos(math.pi * pct) + 1) end
      return (b - a) * pct + a
    end
    local lrs = {}
    for gi, group in ipairs(self.optimizer.param_groups) do
      local start = 0
      for i, ph in ipairs(phases) do
        local stop = self._phase_ends[i]
        if step <= stop or i == #phases then
          local pct = (step - start) / (stop - start)
          lrs[gi] = anneal(group[ph[1]], group[ph[2]], pct)
          if self.cycle_momentum then
            set_momentum(group, self.use_beta1, anneal(group[ph[3]], group[ph[4]], pct))
          end
          break
        end
        start = stop
      end
    end
    return lrs
  end)

---------------------------------------------------------------------------
-- SequentialLR and ChainedScheduler wrap schedulers made on one optimizer.
-- Their state_dict holds the wrapped ones' dicts in _schedulers; the flat
-- form prefixes their keys with "_schedulers.<i>.".

local Composite = setmetatable({}, {__index = LRScheduler})
Composite.__index = Composite

function Composite:state_dict()
  local sd = LRScheduler.state_dict(self)
  sd._schedulers = {}
  for i, s in ipairs(self._schedulers) do sd._schedulers[i] = s:state_dict() end
  return sd
end

function Composite:load_state_dict(sd)
  local name = self._name .. ": load_state_dict"
  if type(sd) ~= "table" then raisef("%s: expected a table, got %s", name, type(sd)) end
  local subs = sd._schedulers
  if type(subs) ~= "table" or #subs ~= #self._schedulers then
    raisef("%s: expected _schedulers with %d state dicts", name, #self._schedulers)
  end
  LRScheduler.load_state_dict(self, sd)
  for i, s in ipairs(self._schedulers) do s:load_state_dict(subs[i]) end
end

function Composite:state_dict_flat()
  local meta = LRScheduler.state_dict_flat(self)
  for i, s in ipairs(self._schedulers) do
    for k, v in pairs(s:state_dict_flat()) do meta[string.format("_schedulers.%d.%s", i, k)] = v end
  end
  return meta
end

function Composite:load_state_dict_flat(meta)
  if type(meta) ~= "table" then raisef("%s: load_state_dict_flat: expected a table", self._name) end
  local own, subs = {}, {}
  for i = 1, #self._schedulers do subs[i] = {} end
  for k, v in pairs(meta) do
    local i, sk = k:match("^_schedulers%.(%d+)%.(.+)$")
    if i then
      local sub = subs[tonumber(i)]
      if not sub then raisef("%s: load_state_dict_flat: '%s' names a scheduler beyond the %d wrapped", self._name, k, #self._schedulers) end
      sub[sk] = v
    else
      own[k] = v
    end
  end
  LRScheduler.load_state_dict(self, own)
  for i, s in ipairs(self._schedulers) do s:load_state_dict_flat(subs[i]) end
end

local function scheduler_list(name, schedulers, opt)
  if type(schedulers) ~= "table" or #schedulers == 0 then
    raisef("%s: schedulers must be a non-empty list of schedulers", name)
  end
  for i, s in ipairs(schedulers) do
    if type(s) ~= "table" or type(s.step) ~= "function" or type(s.optimizer) ~= "table" then
      raisef("%s: schedulers[%d] is not a learning-rate scheduler", name, i)
    end
    if s.optimizer ~= (opt or schedulers[1].optimizer) then
      raisef("%s: all schedulers must belong to the same optimizer, but schedulers[%d]'s is another", name, i)
    end
  end
  local out = {}
  for i, s in ipairs(schedulers) do out[i] = s end
  return out
end

--- SequentialLR(opt, {s1, s2, ...}, {m1, ...}) or SequentialLR(opt, {schedulers = {s1, s2, ...}, milestones = {m1, ...}}):
--- s1 until epoch m1, then s2 (restarted at its epoch 0), and so on.
local SequentialLR = new_class("SequentialLR", Composite, function(cls, opt, ...)
  local name = "SequentialLR"
  local opts = check_args(name, opt, {"schedulers", "milestones", "last_epoch", "*", "verbose"}, ...)
  local scheds = scheduler_list(name, opts.schedulers, opt)
  local ms = opts.milestones
  if type(ms) ~= "table" or #ms ~= #scheds - 1 then
    raisef("%s: expected %d milestones (one fewer than the %d schedulers), got %s", name, #scheds - 1, #scheds,
           type(ms) == "table" and tostring(#ms) or type(ms))
  end
  local milestones = {}
  for i, m in ipairs(ms) do
    if math.type(m) ~= "integer" or (i > 1 and m < ms[i - 1]) then
      raisef("%s: milestones must be increasing integers, got milestones[%d] = %s", name, i, tostring(m))
    end
    milestones[i] = m
  end
  local last_epoch = opts.last_epoch or -1
  local self = setmetatable({optimizer = opt, _schedulers = scheds, _milestones = milestones,
                             last_epoch = last_epoch + 1}, cls)
  for _, group in ipairs(opt.param_groups) do group.lr = group.initial_lr end
  for _, s in ipairs(scheds) do s.last_epoch = s.last_epoch - 1 end
  scheds[1]._step_count = 0
  scheds[1]:step()
  self._last_lr = scheds[1]:get_last_lr()
  return self
end)

function SequentialLR:step()
  self.last_epoch = self.last_epoch + 1
  local idx = 1
  for _, m in ipairs(self._milestones) do
    if m <= self.last_epoch then idx = idx + 1 end
  end
  local s = self._schedulers[idx]
  if idx > 1 and self._milestones[idx - 1] == self.last_epoch then
    s:step(0)
  else
    s:step()
  end
  self._last_lr = s:get_last_lr()
end
M.SequentialLR = SequentialLR

--- ChainedScheduler({s1, s2, ...}): step() steps every scheduler in turn.
local ChainedScheduler = new_class("ChainedScheduler", Composite, function(cls, schedulers)
  local scheds = scheduler_list("ChainedScheduler", schedulers)
  local self = setmetatable({optimizer = scheds[1].optimizer, _schedulers = scheds}, cls)
  self._last_lr = group_lrs(self)
  return self
end)

function ChainedScheduler:step()
  for _, s in ipairs(self._schedulers) do s:step() end
  self._last_lr = group_lrs(self)
end
M.ChainedScheduler = ChainedScheduler

---------------------------------------------------------------------------
-- ReduceLROnPlateau: driven by a metric, not by the epoch count.

local PLATEAU_OPTIONS = {"mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "min_lr", "eps",
                         "*", "verbose"}

--- ReduceLROnPlateau(opt, {mode = "min", factor = 0.1, patience = 10, threshold = 1e-4,
---                         threshold_mode = "rel", cooldown = 0, min_lr = 0, eps = 1e-8})
local Plateau = new_class("ReduceLROnPlateau", LRScheduler, function(cls, opt, ...)
  local name = "ReduceLROnPlateau"
  local opts = check_args(name, opt, PLATEAU_OPTIONS, ...)
  local self = setmetatable({optimizer = opt}, cls)
  self.factor = option(name, opts, "factor", 0.1, function(v) return v >= 0 and v < 1 end)
  self.min_lrs = per_group(name, opt, opts, "min_lr", 0)
  self.patience = option(name, opts, "patience", 10, function(v) return math.type(v) == "integer" and v >= 0 end)
  self.cooldown = option(name, opts, "cooldown", 0, function(v) return math.type(v) == "integer" and v >= 0 end)
  self.cooldown_counter = 0
  self.mode = choice_option(name, opts, "mode", "min", {"min", "max"})
  self.threshold = option(name, opts, "threshold", 1e-4, function(v) return v >= 0 and v < math.huge end)
  self.threshold_mode = choice_option(name, opts, "threshold_mode", "rel", {"rel", "abs"})
  self.eps = option(name, opts, "eps", 1e-8, function(v) return v >= 0 end)
  self.last_epoch = 0
  self.best = self.mode == "min" and math.huge or -math.huge
  self.num_bad_epochs = 0
  self._last_lr = group_lrs(self)
  return self
end)
Plateau._integer_fields = {"last_epoch", "cooldown_counter", "num_bad_epochs"}

function Plateau:_is_better(a, best)
  if self.mode == "min" and self.threshold_mode == "rel" then return a < best * (1.0 - self.threshold) end
  if self.mode == "min" then return a < best - self.threshold end
  if self.threshold_mode == "rel" then return a > best * (self.threshold + 1.0) end
  return a > best + self.threshold
end

--- sched:step(metric): reduces the lr by factor after patience epochs without improvement.
function Plateau:step(metric, epoch)
  local ember = require "ember"
  if ember.is_tensor(metric) then metric = metric:item() end
  if type(metric) ~= "number" then
    raisef("ReduceLROnPlateau: step: argument 1: expected the metric (a number or a 1-element tensor), got %s",
           type(metric))
  end
  if epoch == nil then epoch = self.last_epoch + 1 end
  self.last_epoch = epoch
  if self:_is_better(metric, self.best) then
    self.best = metric
    self.num_bad_epochs = 0
  else
    self.num_bad_epochs = self.num_bad_epochs + 1
  end
  if self.cooldown_counter > 0 then
    self.cooldown_counter = self.cooldown_counter - 1
    self.num_bad_epochs = 0
  end
  if self.num_bad_epochs > self.patience then
    for i, group in ipairs(self.optimizer.param_groups) do
      local old = group.lr
      local new = math.max(old * self.factor, self.min_lrs[i])
      if old - new > self.eps then group.lr = new end
    end
    self.cooldown_counter = self.cooldown
    self.num_bad_epochs = 0
  end
  self._last_lr = group_lrs(self)
end
M.ReduceLROnPlateau = Plateau

-- SWALR (torch.optim.swa_utils.SWALR): from each group's lr to its swa_lr over anneal_epochs
-- steps, by a cosine or a linear ramp, then swa_lr; PyTorch's recurrence on the group's
-- current lr (so a change made by hand carries on).
local function cos_anneal(t) return (1 - math.cos(math.pi * t)) / 2 end
local function linear_anneal(t) return t end
local ANNEAL = {cos = cos_anneal, linear = linear_anneal}

M.SWALR = class("SWALR", {"swa_lr", "anneal_epochs", "anneal_strategy"},
  function(self, opts)
    local lrs = opts.swa_lr
    local groups = self.optimizer.param_groups
    if type(lrs) == "table" then
      if #lrs ~= #groups then raisef("SWALR: expected %d values for swa_lr, got %d", #groups, #lrs) end
    else
      if type(lrs) ~= "number" then raisef("SWALR: swa_lr must be a number or a list of numbers, got %s", type(lrs)) end
      local one = lrs
      lrs = {}
      for i = 1, #groups do lrs[i] = one end
    end
    for i, group in ipairs(groups) do
      if type(lrs[i]) ~= "number" then raisef("SWALR: swa_lr[%d] must be a number, got %s", i, type(lrs[i])) end
      group.swa_lr = lrs[i]
    end
    local strategy = opts.anneal_strategy == nil and "cos" or opts.anneal_strategy
    if not ANNEAL[strategy] then
      raisef("SWALR: anneal_strategy must be one of 'cos' or 'linear', instead got %s", tostring(strategy))
    end
    self._anneal_strategy = strategy
    local epochs = opts.anneal_epochs == nil and 10 or opts.anneal_epochs
    if math.type(epochs) ~= "integer" or epochs < 0 then
      raisef("SWALR: anneal_epochs must be equal or greater than 0, got %s", tostring(epochs))
    end
    self.anneal_epochs = epochs
  end,
  function(self)
    local anneal = ANNEAL[self._anneal_strategy]
    local step = self._step_count - 1
    if self.anneal_epochs == 0 then step = math.max(1, step) end
    local width = math.max(1, self.anneal_epochs)
    local prev_alpha = anneal(math.max(0, math.min(1, (step - 1) / width)))
    local alpha = anneal(math.max(0, math.min(1, step / width)))
    local out = {}
    for i, group in ipairs(self.optimizer.param_groups) do
      -- the lr the ramp started from, recovered from the current one
      local lr = prev_alpha == 1 and group.swa_lr or (group.lr - prev_alpha * group.swa_lr) / (1 - prev_alpha)
      out[i] = group.swa_lr * alpha + lr * (1 - alpha)
    end
    return out
  end)

M.LRScheduler = LRScheduler

return M
