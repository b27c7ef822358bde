-- ember.amp — gradient scaling for mixed-precision training, as torch.amp.GradScaler:
--
--   local scaler = ember.amp.GradScaler()
--   scaler:scale(loss):backward()
--   scaler:step(optimizer)        -- unscales the gradients; skips the step on inf/NaN
--   scaler:update()               -- backs off the scale after inf/NaN, grows it after
--                                 -- growth_interval clean steps
--
-- The scale and the growth tracker live on the device of the first outputs scaled, and
-- update() changes them with tensor ops, without reading them back. unscale_ is one
-- multi-tensor pass over all the gradients of a device (ember._amp_unscale_multi_: multiply
-- by inv_scale, read on the device, and look for inf/NaN at once, the flag kept on the
-- device), with no host read; step() reads the flags back once to decide. Works on any
-- device (torch.cuda.amp.GradScaler of 1.13 disables itself without CUDA; 2.x's
-- torch.amp.GradScaler("cpu") does not).
local ember = require "ember"
local errors = require "ember.errors"

local M = {}

local READY, UNSCALED, STEPPED = "ready", "unscaled", "stepped"

local GradScaler = {__name = "GradScaler"}
GradScaler.__index = GradScaler
M.GradScaler = GradScaler

local OPTIONS = {init_scale = true, growth_factor = true, backoff_factor = true, growth_interval = true,
                 enabled = true}

local function number_option(o, key, default, ok, want)
  local v = o[key]
  if v == nil then return default end
  if type(v) ~= "number" or not ok(v) then
    errors.raisef("GradScaler: %s must be %s, got %s", key, want, tostring(v))
  end
  return v
end

local function new(_, device, opts)
  if type(device) == "table" and opts == nil then device, opts = nil, device end
  if device ~= nil and type(device) ~= "string" then
    errors.raisef("GradScaler: argument 1: expected a device name or an options table, got %s", type(device))
  end
  opts = opts or {}
  if type(opts) ~= "table" then errors.raisef("GradScaler: expected an options table, got %s", type(opts)) end
  for k in pairs(opts) do
    if not OPTIONS[k] then errors.raisef("GradScaler: unknown option '%s'", tostring(k)) end
  end
  local self = setmetatable({}, GradScaler)
  self._init_scale = number_option(opts, "init_scale", 65536.0, function(v) return v > 0 and v < math.huge end,
                                   "a positive finite number")
  self._growth_factor = number_option(opts, "growth_factor", 2.0, function(v) return v > 1 and v < math.huge end,
                                      "a finite number > 1")
  self._backoff_factor = number_option(opts, "backoff_factor", 0.5, function(v) return v > 0 and v < 1 end,
                                       "a number in (0, 1)")
  self._growth_interval = number_option(opts, "growth_interval", 2000,
                                        function(v) return math.type(v) == "integer" and v > 0 end,
                                        "a positive integer")
  if opts.enabled ~= nil and type(opts.enabled) ~= "boolean" then
    errors.raisef("GradScaler: enabled must be a boolean, got %s", type(opts.enabled))
  end
  self._enabled = opts.enabled ~= false
  self._device = device
  self._per_optimizer = setmetatable({}, {__mode = "k"})
  return self
end

setmetatable(GradScaler, {__call = new})

-- the scale ([1] float32, as PyTorch's) and the growth tracker ([1] int32), made on the
-- device of the first outputs scaled
local function lazy_init(self, device)
  if self._scale then return end
  device = self._device or device or "cpu"
  self._scale = ember.full({1}, self._init_scale, {dtype = "float32", device = device})
  self._growth_tracker = ember.full({1}, self._init_growth_tracker or 0, {dtype = "int32", device = device})
end

local function optimizer_state(self, optimizer)
  if type(optimizer) ~= "table" or type(optimizer.param_groups) ~= "table" then
    errors.raisef("GradScaler: expected an optimizer, got %s", type(optimizer))
  end
  local st = self._per_optimizer[optimizer]
  if not st then
    st = {stage = READY, found_inf = {}}
    self._per_optimizer[optimizer] = st
  end
  return st
end

--- scaler:scale(outputs) -> outputs multiplied by the scale (a tensor or a nested list).
function GradScaler:scale(outputs)
  if not self._enabled then return outputs end
  if ember.is_tensor(outputs) then
    lazy_init(self, outputs.device)
    local s = self._scale
    if s.device ~= outputs.device then s = s:to(outputs.device) end
    return outputs * s
  end
  if type(outputs) ~= "table" then
    errors.raisef("GradScaler:scale: expected a tensor or a list of tensors, got %s", type(outputs))
  end
  local r = {}
  for k, v in pairs(outputs) do r[k] = self:scale(v) end
  return r
end

--- scaler:unscale_(optimizer) divides the optimizer's gradients by the scale, in place.
function GradScaler:unscale_(optimizer)
  if not self._enabled then return end
  local st = optimizer_state(self, optimizer)
  if st.stage == UNSCALED then
    errors.raise("GradScaler:unscale_: unscale_() has already been called on this optimizer since the last update()")
  elseif st.stage == STEPPED then
    errors.raise("GradScaler:unscale_: unscale_() is being called after step()")
  end
  if not self._scale then
    errors.raise("GradScaler:unscale_: no scale yet: call scaler:scale(loss) before unscale_ / step")
  end
  local found, by_device = {}, {}
  for _, group in ipairs(optimizer.param_groups) do
    for _, p in ipairs(group.params) do
      local g = p.grad
      if g then
        if g.dtype == "float16" then
          errors.raise("GradScaler:unscale_: attempting to unscale float16 gradients (keep the parameters "
                       .. "the optimizer updates in float32, as PyTorch requires)")
        end
        local list = by_device[g.device]
        if not list then
          list = {}
          by_device[g.device] = list
        end
        list[#list + 1] = g
      end
    end
  end
  ember.no_grad(function()
    -- 1/scale in double, rounded to float32 (PyTorch's inv_scale tensor), on the device
    local inv = self._scale:to("float64"):reciprocal():to("float32")
    for dev, grads in pairs(by_device) do
      found[dev] = ember.zeros(1, {dtype = "float32", device = dev})
      ember._amp_unscale_multi_(grads, found[dev], inv.device == dev and inv or inv:to(dev))
    end
  end)
  st.found_inf = found
  st.stage = UNSCALED
end

--- scaler:step(optimizer) unscales (unless unscale_ ran) and steps, unless a gradient held
--- inf or NaN; returns what optimizer:step() returns (nil when skipped).
function GradScaler:step(optimizer, ...)
  if not self._enabled then return optimizer:step(...) end
  if select("#", ...) > 0 then
    errors.raise("GradScaler:step: closure use is not supported while GradScaler is enabled")
  end
  local st = optimizer_state(self, optimizer)
  if st.stage == STEPPED then
    errors.raise("GradScaler:step: step() has already been called since the last update()")
  end
  if st.stage == READY then self:unscale_(optimizer) end
  local any, total = false, 0
  for _, f in pairs(st.found_inf) do
    any = true
    total = total + f:item()
  end
  if not any then
    errors.raise("GradScaler:step: no inf checks were recorded for this optimizer (no parameter has a gradient)")
  end
  local ret
  if total == 0 then ret = optimizer:step() end
  st.stage = STEPPED
  return ret
end

--- scaler:update([new_scale]) backs the scale off after inf/NaN or grows it after
--- growth_interval clean steps (or sets new_scale), and readies every optimizer again.
function GradScaler:update(new_scale)
  if not self._enabled then return end
  if not self._scale then
    errors.raise("GradScaler:update: no scale yet: call scaler:scale(loss) first")
  end
  if new_scale ~= nil then
    if type(new_scale) == "number" then
      if not (new_scale > 0 and new_scale < math.huge) then
        errors.raisef("GradScaler:update: new_scale must be a positive finite number, got %s", tostring(new_scale))
      end
      self._scale:fill_(new_scale)
    elseif ember.is_tensor(new_scale) and new_scale:numel() == 1 then
      self._scale:copy_(new_scale:reshape({1}))
    else
      errors.raisef("GradScaler:update: new_scale must be a number or a one-element tensor, got %s", type(new_scale))
    end
  else
    local found
    for _, st in pairs(self._per_optimizer) do
      for _, f in pairs(st.found_inf) do
        local here = f.device == self._scale.device and f or f:to(self._scale.device)
        found = found and found + here or here
      end
    end
    if not found then
      errors.raise("GradScaler:update: no inf checks were recorded prior to update() (call step or unscale_)")
    end
    ember.no_grad(function()
      local s, t = self._scale, self._growth_tracker
      local inf = found:gt(0)
      local zero = ember.zeros_like(t)
      local tracker = ember.where(inf, zero, t + 1)
      local grow = tracker:ge(self._growth_interval)
      local grown = s * self._growth_factor
      grown = ember.where(grown:isfinite(), grown, s)            -- never grow into inf
      s:copy_(ember.where(inf, s * self._backoff_factor, ember.where(grow, grown, s)))
      t:copy_(ember.where(grow, zero, tracker))
    end)
  end
  self._per_optimizer = setmetatable({}, {__mode = "k"})
end

--- scaler:get_scale() -> the current scale as a number (1.0 when disabled).
function GradScaler:get_scale()
  if not self._enabled then return 1.0 end
  return self._scale and self._scale:item() or self._init_scale
end

--- scaler:is_enabled() -> whether the scaler scales.
function GradScaler:is_enabled() return self._enabled end

--- scaler:get_growth_factor(), set_growth_factor(v), get_backoff_factor(), set_backoff_factor(v),
--- get_growth_interval(), set_growth_interval(v).
function GradScaler:get_growth_factor() return self._growth_factor end
function GradScaler:set_growth_factor(v)
  self._growth_factor = number_option({growth_factor = v}, "growth_factor", nil,
                                      function(x) return x > 1 and x < math.huge end, "a finite number > 1")
end
function GradScaler:get_backoff_factor() return self._backoff_factor end
function GradScaler:set_backoff_factor(v)
  self._backoff_factor = number_option({backoff_factor = v}, "backoff_factor", nil,
                                       function(x) return x > 0 and x < 1 end, "a number in (0, 1)")
end
function GradScaler:get_growth_interval() return self._growth_interval end
function GradScaler:set_growth_interval(v)
  self._growth_interval = number_option({growth_interval = v}, "growth_interval", nil,
                                        function(x) return math.type(x) == "integer" and x > 0 end,
                                        "a positive integer")
end

--- scaler:state_dict() -> {scale, growth_factor, backoff_factor, growth_interval,
--- _growth_tracker} (PyTorch's keys; empty when disabled).
function GradScaler:state_dict()
  if not self._enabled then return {} end
  return {
    scale = self:get_scale(),
    growth_factor = self._growth_factor,
    backoff_factor = self._backoff_factor,
    growth_interval = self._growth_interval,
    _growth_tracker = self._growth_tracker and self._growth_tracker:item() or (self._init_growth_tracker or 0),
  }
end

--- scaler:load_state_dict(sd) restores what state_dict() saved.
function GradScaler:load_state_dict(sd)
  if not self._enabled then return end
  if type(sd) ~= "table" or next(sd) == nil then
    errors.raise("GradScaler:load_state_dict: the state dict is empty, possibly because it was saved from a "
                 .. "disabled GradScaler")
  end
  for _, k in ipairs({"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}) do
    if type(sd[k]) ~= "number" then
      errors.raisef("GradScaler:load_state_dict: entry '%s' must be a number, got %s", k, type(sd[k]))
    end
  end
  self._init_scale = sd.scale
  self:set_growth_factor(sd.growth_factor)
  self:set_backoff_factor(sd.backoff_factor)
  self:set_growth_interval(math.tointeger(sd.growth_interval) or sd.growth_interval)
  self._init_growth_tracker = sd._growth_tracker
  if self._scale then                        -- else lazy_init makes them from these values
    self._scale:fill_(sd.scale)
    self._growth_tracker:fill_(sd._growth_tracker)
  end
end

--- amp.autocast(...): ember.autocast (torch.amp.autocast is torch.autocast too)
function M.autocast(...) return ember.autocast(...) end

return M
