-- ember.nn.lazy — PyTorch's lazy modules: nn.LazyLinear, LazyConv1d/2d/3d,
-- LazyConvTranspose1d/2d/3d, LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d. Each is
-- made without its input size (in_features, in_channels or num_features) and learns it
-- from its first input, or from the state dict load_state_dict gives it.
--
-- How, as PyTorch's LazyModuleMixin: the constructor builds the module it will become
-- once, with a stand-in input size, to check the arguments and learn the names, dtypes
-- and devices of its parameters and buffers; it then registers empty tensors under those
-- names (PyTorch's UninitializedParameter). The first forward builds the real module and
-- gives each empty tensor the real one's data (t.data = ...), so the parameters stay the
-- same tensors, and an optimizer made before the first forward updates them; then the
-- module becomes an instance of the real class (tostring, forward and all).
--
-- Loaded by layers.lua while that is still loading: ember.nn is required only when a
-- lazy module is made.
local ember = require "ember"
local raise = require("ember.errors").raise
local Module = require("ember.nn.module").Module

local L = {}

-- the fields of a module the class system keeps, not copied from the real module
local INTERNAL = {_parameters = true, _param_names = true, _modules = true, _module_names = true,
                  _buffers = true, _buffer_names = true, _non_persistent = true, training = true}

local function nn() return require "ember.nn" end

local function copy_fields(to, from)
  for k, v in pairs(from) do
    if type(k) == "string" and not INTERNAL[k] then rawset(to, k, v) end
  end
end

-- the real module of input size n, its tensors given to self's, and self made one of them
local function materialize(self, n)
  local spec = rawget(self, "_lazy")
  if math.type(n) ~= "integer" or n < 1 then
    raise(string.format("%s: cannot infer %s from the input (got %s)", spec.name, spec.field, tostring(n)))
  end
  local real = nn()[spec.base](n, table.unpack(spec.args, 1, spec.args.n))
  ember.no_grad(function()
    for _, kind in ipairs{{"_parameters", "_param_names"}, {"_buffers", "_buffer_names"}} do
      local mine, theirs = rawget(self, kind[1]), rawget(real, kind[1])
      for _, name in ipairs(rawget(real, kind[2])) do
        local cur, r = mine[name], theirs[name]
        -- the stand-in's dtype and device win: self:to(...) may have moved it since
        if cur ~= nil and r ~= nil then cur.data = r:detach():to(cur.dtype):to(cur.device) end
      end
    end
  end)
  rawset(self, "_lazy", nil)
  copy_fields(self, real)
  setmetatable(self, getmetatable(real))
end

-- spec: name, base (its class in ember.nn), field (the size it learns), stand_in(args) -> a
-- size the base accepts, from_input(self, x) -> size, from_state(self, sd, prefix) -> size or nil
local function lazy_class(spec)
  local cls = Module:extend(spec.name)
  function cls:init(...)
    local args = table.pack(...)
    -- the base's argument checks, named as the lazy class
    local ok, template = pcall(nn()[spec.base], spec.stand_in(args), ...)
    if not ok then
      raise((tostring(template):gsub("^[^:\n]*:%d+: ", "", 1):gsub("^" .. spec.base .. "([:(])", spec.name .. "%1", 1)))
    end
    copy_fields(self, template)
    rawset(self, spec.field, 0)   -- printed as PyTorch prints a lazy module
    for _, name in ipairs(rawget(template, "_param_names")) do
      local p = rawget(template, "_parameters")[name]
      self:register_parameter(name, p and nn().Parameter(ember.empty(0, {dtype = p.dtype, device = p.device}),
                                                         p.requires_grad))
    end
    local non_persistent = rawget(template, "_non_persistent") or {}
    for _, name in ipairs(rawget(template, "_buffer_names")) do
      local b = rawget(template, "_buffers")[name]
      self:register_buffer(name, ember.empty(0, {dtype = b.dtype, device = b.device}), not non_persistent[name])
    end
    rawset(self, "_lazy", {name = spec.name, base = spec.base, field = spec.field, args = args,
                           from_state = spec.from_state})
  end
  function cls:extra_repr() return nn()[spec.base].extra_repr(self) end
  --- m:has_uninitialized_params() -> true until the first forward (or load_state_dict).
  function cls:has_uninitialized_params() return true end
  --- m:initialize_parameters(x) — learns the input size from x and becomes the real module.
  function cls:initialize_parameters(x)
    if not ember.is_tensor(x) then raise(spec.name .. ": expected a tensor input, got " .. type(x)) end
    materialize(self, spec.from_input(self, x))
  end
  function cls:forward(x, ...)
    self:initialize_parameters(x)
    return self:forward(x, ...)
  end
  -- for load_state_dict: the input size the state dict's tensors show, then the real module
  function cls:_materialize_from_state(sd, prefix)
    local n = spec.from_state(self, sd, prefix)
    if n then materialize(self, n) end
  end
  return cls
end

-- the size of x along dim (1-based), for an input of one of the ranks `ranks` allows;
-- ranks[r] is the dim the size is read from
local function size_at(name, x, ranks, what)
  local d = ranks[x.ndim]
  if not d then
    raise(string.format("%s: expected %s input, got a %d-D tensor", name, what, x.ndim))
  end
  return x.shape[d]
end

local function shape_of(sd, key, dim)
  local t = sd[key]
  return ember.is_tensor(t) and t.ndim >= dim and t.shape[dim] or nil
end

--- nn.LazyLinear(out_features [, bias = true] [, {device, dtype}]) -> an nn.Linear whose in_features is its first input's last size.
L.LazyLinear = lazy_class{
  name = "LazyLinear", base = "Linear", field = "in_features",
  stand_in = function() return 1 end,
  from_input = function(_, x)
    if x.ndim < 1 then raise("LazyLinear: expected an input of at least 1 dimension, got a 0-D tensor") end
    return x.shape[x.ndim]
  end,
  from_state = function(_, sd, prefix) return shape_of(sd, prefix .. "weight", 2) end,
}

for nd = 1, 3 do
  local ranks = {[nd + 1] = 1, [nd + 2] = 2}
  local what = string.format("a %d-D (unbatched) or %d-D (batched)", nd + 1, nd + 2)
  for _, transposed in ipairs{false, true} do
    local base = (transposed and "ConvTranspose" or "Conv") .. nd .. "d"
    local name = "Lazy" .. base
    --- nn.LazyConv1d/2d/3d(out_channels, kernel_size, ...) and nn.LazyConvTranspose1d/2d/3d(...) -> the convolution whose in_channels is its first input's channels.
    L[name] = lazy_class{
      name = name, base = base, field = "in_channels",
      -- groups divides out_channels, so out_channels is a valid in_channels too
      stand_in = function(args) return args[1] end,
      from_input = function(_, x) return size_at(name, x, ranks, what) end,
      from_state = function(self, sd, prefix)
        local k = shape_of(sd, prefix .. "weight", transposed and 1 or 2)
        return k and (transposed and k or k * self.groups)
      end,
    }
  end
  for _, kind in ipairs{"BatchNorm", "InstanceNorm"} do
    local base = kind .. nd .. "d"
    local name = "Lazy" .. base
    -- BatchNorm1d takes [N, C] and [N, C, L]; the instance norms also their unbatched [C, ...]
    local norm_ranks = kind == "BatchNorm" and (nd == 1 and {[2] = 2, [3] = 2} or {[nd + 2] = 2})
                       or {[nd + 1] = 1, [nd + 2] = 2}
    local norm_what = kind == "BatchNorm" and (nd == 1 and "a 2-D or 3-D" or string.format("a %d-D", nd + 2)) or what
    --- nn.LazyBatchNorm1d/2d/3d([eps [, momentum [, affine [, track_running_stats]]]]) and nn.LazyInstanceNorm1d/2d/3d(...) -> the normalisation whose num_features is its first input's channels.
    L[name] = lazy_class{
      name = name, base = base, field = "num_features",
      stand_in = function() return 1 end,
      from_input = function(_, x) return size_at(name, x, norm_ranks, norm_what) end,
      from_state = function(_, sd, prefix)
        return shape_of(sd, prefix .. "running_mean", 1) or shape_of(sd, prefix .. "weight", 1)
      end,
    }
  end
end

return {layers = L}
