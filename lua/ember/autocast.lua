-- ember.autocast — mixed precision regions, as torch.autocast:
--
--   do
--     local _ <close> = ember.autocast("cuda", {dtype = "bfloat16"})
--     loss = F.cross_entropy(model(x), y)   -- matmuls in bfloat16, the loss in float32
--   end
--   loss:backward()                          -- each op's backward in its forward's dtype
--
--   ember.autocast("cpu", {dtype = "bfloat16"}, function() return model(x) end)
--
-- A region sets the state of one device type (enabled, dtype, the weight-cast cache) for
-- the thread; closing it restores the state it found, so regions nest (an inner
-- {enabled = false} turns autocast off inside). Each op applies PyTorch's policy where it
-- enters (lua/autocast.c): matmul, linear, conv, bmm, attention in the low-precision
-- dtype; softmax, log_softmax, the norms, the losses, sum, mean, pow, exp, log and the
-- like in float32; ops mixing dtypes promote to the widest. Without a dtype the device's
-- default is used: float16 on cuda, bfloat16 on cpu (PyTorch's defaults).
local ember = require "ember"
local errors = require "ember.errors"

local M = {}

local DEVICE_TYPES = {cpu = true, cuda = true}
local LOW = {float16 = true, half = true, bfloat16 = true}
local OPTIONS = {dtype = true, enabled = true, cache_enabled = true}

-- open guards, innermost last: they must close in that order (a <close> variable does)
local open_guards = {}

local Guard = {__name = "autocast"}
Guard.__index = Guard

local function check_device(device)
  if type(device) ~= "string" then
    errors.raisef("autocast: argument 1: expected a device type (\"cpu\" or \"cuda\"), got %s", type(device))
  end
  if not DEVICE_TYPES[device] then
    errors.raisef("autocast: unsupported device type '%s' (expected \"cpu\" or \"cuda\", without an index)",
                  device)
  end
end

local function check_options(opts)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    errors.raisef("autocast: argument 2: expected an options table, got %s", type(opts))
  end
  for k in pairs(opts) do
    if not OPTIONS[k] then
      errors.raisef("autocast: unknown option '%s' (dtype, enabled, cache_enabled)", tostring(k))
    end
  end
  for _, k in ipairs({"enabled", "cache_enabled"}) do
    if opts[k] ~= nil and type(opts[k]) ~= "boolean" then
      errors.raisef("autocast: %s must be a boolean, got %s", k, type(opts[k]))
    end
  end
  if opts.dtype ~= nil and not LOW[opts.dtype] then
    errors.raisef("autocast: dtype must be \"bfloat16\" or \"float16\", got %s", tostring(opts.dtype))
  end
  return opts
end

local function close(self)
  if self._closed then return end
  if open_guards[#open_guards] ~= self then
    errors.raisef("autocast: regions must close in the reverse order of opening (this one is not the innermost)")
  end
  open_guards[#open_guards] = nil
  self._closed = true
  local p = self._previous
  ember._autocast_set(self.device, p.enabled, p.dtype, p.cache)
  ember._autocast_exit()
end

Guard.__close = close
--- guard:close(): ends the region (what a <close> variable does at the end of its block)
Guard.close = close

local function open(device, opts)
  check_device(device)
  opts = check_options(opts)
  local enabled, dtype, cache = ember._autocast_state(device)
  local self = setmetatable({device = device, _previous = {enabled = enabled, dtype = dtype, cache = cache}},
                            Guard)
  local new_dtype = opts.dtype or (device == "cuda" and "float16" or "bfloat16")
  if new_dtype == "half" then new_dtype = "float16" end
  self.dtype = new_dtype
  self.enabled = opts.enabled ~= false
  ember._autocast_set(device, self.enabled, new_dtype, opts.cache_enabled ~= false)
  ember._autocast_enter()
  open_guards[#open_guards + 1] = self
  return self
end

local function run(device, opts, fn)
  local guard <close> = open(device, opts)
  return fn()
end

--- ember.autocast(device [, opts [, fn]]): a mixed precision region (see the top of this file)
function M.autocast(device, opts, fn)
  if type(opts) == "function" and fn == nil then opts, fn = nil, opts end
  if fn == nil then return open(device, opts) end
  if type(fn) ~= "function" then
    errors.raisef("autocast: argument 3: expected a function, got %s", type(fn))
  end
  return run(device, opts, fn)
end

return M
