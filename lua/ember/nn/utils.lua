-- ember.nn.utils — torch.nn.utils of PyTorch 2.x: gradient clipping (clip_grad_norm_,
-- clip_grad_value_, and 2.6's split of clip_grad_norm_ into get_total_norm and
-- clip_grads_with_norm_), parameters_to_vector / vector_to_parameters, and the
-- parametrizations weight_norm and spectral_norm (nn.utils.parametrizations, PyTorch's
-- names in the state_dict: parametrizations.weight.original0 / original1, and
-- parametrizations.weight.original with the power iteration's _u / _v buffers), and their
-- older hook forms nn.utils.weight_norm / spectral_norm (weight_g / weight_v, weight_orig /
-- weight_u / weight_v) with remove_weight_norm / remove_spectral_norm; fusing a batch norm
-- into the convolution or Linear before it (fuse_conv_bn_eval, fuse_linear_bn_eval and their
-- _weights functions).
--
-- Deviations: dims are 1-based (weight_norm's default dim is 1, PyTorch's 0; dim = false is
-- the whole tensor, PyTorch's None or -1, so -1 here is the last dim as everywhere in
-- ember); vector_to_parameters copies into the parameters (PyTorch points their .data at
-- views of the vector).
local ember = require "ember"
local errors = require "ember.errors"
local base = require "ember.nn.module"

local fail = errors.raisef
local Module, is_module = base.Module, base.is_module

local U = {}

-- a tensor, a list of tensors or an iterator of tensors (what PyTorch's "parameters" takes)
local function tensor_list(name, x, what)
  if ember.is_tensor(x) then return {x} end
  local out = {}
  if type(x) == "function" then
    for p in x do out[#out + 1] = p end
  elseif type(x) == "table" and not is_module(x) then
    for i = 1, #x do out[i] = x[i] end
  else
    fail("%s: %s must be a tensor, a list of tensors or an iterator, got %s", name, what,
         is_module(x) and "a module (pass module:parameters())" or type(x))
  end
  for i, p in ipairs(out) do
    if not ember.is_tensor(p) then fail("%s: %s: element %d is a %s, not a tensor", name, what, i, type(p)) end
  end
  return out
end
U._tensor_list = tensor_list

local function grads_of(params)
  local grads = {}
  for _, p in ipairs(params) do
    local g = p.grad
    if g ~= nil then grads[#grads + 1] = g end
  end
  return grads
end

local function norm_type_arg(name, v)
  if v == nil then return 2.0 end
  if v == "inf" then return math.huge end
  if v == "-inf" then return -math.huge end
  if type(v) ~= "number" then fail("%s: norm_type must be a number (or math.huge), got %s", name, type(v)) end
  return v
end

local function opts_arg(name, opts, argn)
  if opts == nil then return {} end
  if type(opts) ~= "table" or ember.is_tensor(opts) then fail("%s: argument %d: expected an options table", name, argn) end
  if opts.foreach ~= nil and type(opts.foreach) ~= "boolean" then
    fail("%s: foreach must be a boolean, got %s", name, type(opts.foreach))
  end
  return opts
end

-- get_total_norm's work, its messages under the caller's name
local function total_norm(name, ts, opts)
  local norm_type = norm_type_arg(name, opts.norm_type)
  if #ts == 0 then return ember.tensor(0.0) end
  local _ <close> = ember.no_grad()
  local total
  if opts.foreach ~= false and norm_type > 0 then
    total = ember._multi_norm(ts, norm_type)
  else
    local norms = {}
    for i, t in ipairs(ts) do norms[i] = ember.linalg.vector_norm(t, norm_type):to(ts[1]) end
    total = ember.linalg.vector_norm(ember.stack(norms), norm_type)
  end
  if opts.error_if_nonfinite then
    local v = total:item()
    if v ~= v or v == math.huge or v == -math.huge then
      fail("%s: the total norm of order %s of the gradients is non-finite (%s), so it cannot be clipped; set "
           .. "error_if_nonfinite = false to scale by it anyway", name, tostring(norm_type), tostring(v))
    end
  end
  return total
end

-- clip_grads_with_norm_'s work: the gradients times min(1, max_norm / (total + 1e-6))
local function scale_grads(grads, max_norm, total, foreach)
  if #grads == 0 then return end
  local _ <close> = ember.no_grad()
  if foreach ~= false then
    ember._multi_scale_(grads, total:to(grads[1].device), max_norm)
    return
  end
  local coef = (max_norm / (total + 1e-6)):clamp(nil, 1.0)
  for _, g in ipairs(grads) do g:mul_(coef:to(g)) end
end

local function max_norm_arg(name, v)
  if type(v) ~= "number" then fail("%s: argument 2: max_norm must be a number, got %s", name, type(v)) end
  return v
end

--- nn.utils.get_total_norm(tensors [, {norm_type = 2, error_if_nonfinite = false, foreach = nil}]) -> 0-d tensor
-- The norm of the tensors' norms: the norm of order norm_type of all their elements together
-- (math.huge: the largest absolute value), as torch.nn.utils.get_total_norm (PyTorch 2.6).
-- It takes the tensors themselves: pass the gradients to clip. An empty list gives 0.
-- Example: local total = nn.utils.get_total_norm({w.grad, b.grad})
function U.get_total_norm(tensors, opts)
  local name = "get_total_norm"
  return total_norm(name, tensor_list(name, tensors, "argument 1"), opts_arg(name, opts, 2))
end

--- nn.utils.clip_grads_with_norm_(parameters, max_norm, total_norm [, {foreach = nil}])
-- Scales the gradients of parameters in place by min(1, max_norm / (total_norm + 1e-6)), with
-- total_norm given (a 0-d tensor or a number), as torch.nn.utils.clip_grads_with_norm_ (2.6).
-- Parameters without a gradient are skipped. Returns nothing.
-- Example: nn.utils.clip_grads_with_norm_(params, 1.0, nn.utils.get_total_norm(grads))
function U.clip_grads_with_norm_(parameters, max_norm, total, opts)
  local name = "clip_grads_with_norm_"
  local params = tensor_list(name, parameters, "argument 1")
  max_norm_arg(name, max_norm)
  if type(total) == "number" then total = ember.tensor(total)
  elseif not ember.is_tensor(total) then
    fail("%s: argument 3: total_norm must be a tensor or a number, got %s", name, type(total))
  end
  scale_grads(grads_of(params), max_norm, total, opts_arg(name, opts, 4).foreach)
end

--- nn.utils.clip_grad_norm_(parameters, max_norm [, {norm_type = 2, error_if_nonfinite = false, foreach = nil}]) -> total norm
-- get_total_norm of the gradients, then clip_grads_with_norm_; returns the norm before clipping.
-- Example: nn.utils.clip_grad_norm_(model:parameters(), 1.0)
-- For norm_type > 0 (inf included) it is two multi-tensor ops (ember._multi_norm, ember._multi_scale_:
-- one pass each over all the gradients of a device and dtype, accumulated in float64, the coefficient
-- computed on the device); foreach = false, or another norm_type, composes per-tensor ops. No value
-- comes back to the host (no device synchronisation) unless error_if_nonfinite asks for the check.
function U.clip_grad_norm_(parameters, max_norm, opts)
  local name = "clip_grad_norm_"
  local params = tensor_list(name, parameters, "argument 1")
  max_norm_arg(name, max_norm)
  opts = opts_arg(name, opts, 3)
  local grads = grads_of(params)
  local total = total_norm(name, grads, opts)
  scale_grads(grads, max_norm, total, opts.foreach)
  return total
end

--- nn.utils.clip_grad_value_(parameters, clip_value [, {foreach = nil}])
-- Clamps every gradient in place to [-clip_value, clip_value]; returns nothing.
-- Example: nn.utils.clip_grad_value_(model:parameters(), 0.5)
function U.clip_grad_value_(parameters, clip_value, opts)
  local name = "clip_grad_value_"
  local params = tensor_list(name, parameters, "argument 1")
  if type(clip_value) ~= "number" then
    fail("%s: argument 2: clip_value must be a number, got %s", name, type(clip_value))
  end
  opts_arg(name, opts, 3)
  local _ <close> = ember.no_grad()
  for _, g in ipairs(grads_of(params)) do g:clamp_(-clip_value, clip_value) end
end

--- nn.utils.parameters_to_vector(parameters) -> 1-D tensor
-- The parameters flattened and concatenated, in order (a new tensor that autograd tracks).
-- They must share a device. Example: local vec = nn.utils.parameters_to_vector(model:parameters())
function U.parameters_to_vector(parameters)
  local name = "parameters_to_vector"
  local params = tensor_list(name, parameters, "argument 1")
  if #params == 0 then fail("%s: argument 1: no parameters (cat of an empty list)", name) end
  local flat = {}
  for i, p in ipairs(params) do
    if p.device ~= params[1].device then
      fail("%s: parameter %d is on %s, the first on %s (all must share a device)", name, i, p.device, params[1].device)
    end
    flat[i] = p:reshape(-1)
  end
  return ember.cat(flat)
end

--- nn.utils.vector_to_parameters(vec, parameters)
-- Copies consecutive slices of the 1-D tensor vec into the parameters, in order (their shapes
-- taken from them). PyTorch makes each parameter's .data a view of vec; ember copies, so the
-- parameters stay the same tensors (optimizers keep them) and do not alias vec.
-- Example: nn.utils.vector_to_parameters(vec, model:parameters())
function U.vector_to_parameters(vec, parameters)
  local name = "vector_to_parameters"
  if not ember.is_tensor(vec) then fail("%s: argument 1: expected a tensor, got %s", name, type(vec)) end
  if vec.ndim ~= 1 then fail("%s: argument 1: expected a 1-D tensor, got %d dims", name, vec.ndim) end
  local params = tensor_list(name, parameters, "argument 2")
  local total = 0
  for _, p in ipairs(params) do total = total + p:numel() end
  if total ~= vec:numel() then
    fail("%s: the vector has %d elements, the parameters %d", name, vec:numel(), total)
  end
  local _ <close> = ember.no_grad()
  local at = 1
  for _, p in ipairs(params) do
    local n = p:numel()
    if n > 0 then p:copy_(vec:slice(1, at, at + n - 1):reshape(p.shape)) end
    at = at + n
  end
end

-- ---- parametrizations ---------------------------------------------------------------------

-- a 1-based dim of a tensor with ndim dims (negative from the end), or nil
local function dim_arg(name, dim, ndim, what)
  if dim == nil then return nil end
  if math.type(dim) ~= "integer" or dim == 0 or dim > ndim or dim < -ndim then
    fail("%s: %s must be an integer dim in 1..%d (negative from the end)%s, got %s", name, what or "dim", ndim,
         what and "" or " or nil", tostring(dim))
  end
  return dim < 0 and ndim + dim + 1 or dim
end

-- ||w|| over every dim but dim, kept as size-1 dims (PyTorch's norm_except_dim); the whole norm when dim is nil
local function norm_except_dim(w, dim)
  if dim == nil then return w:norm() end
  local dims = {}
  for d = 1, w.ndim do if d ~= dim then dims[#dims + 1] = d end end
  if #dims == 0 then return w:abs() end
  return ember.linalg.vector_norm(w, 2, dims, true)
end

-- What a parametrized module holds: module.parametrizations (a ModuleDict) maps each
-- parametrized name to a ParametrizationList, whose "original" (or "original0", "original1",
-- ... when right_inverse gives several tensors) are the parameters and whose children "0",
-- "1", ... are the parametrizations, applied in order.
local ParametrizationList = Module:extend("ParametrizationList")
function ParametrizationList:init() end
function ParametrizationList:forward()
  local mods = self:children()
  local first = mods[1]
  local x
  if rawget(self, "_parameters").original ~= nil or rawget(self, "_buffers").original ~= nil then
    x = first(self.original)
  else
    local args, i = {}, 0
    while true do
      local t = self["original" .. i]
      if t == nil then break end
      args[#args + 1] = t
      i = i + 1
    end
    x = first(table.unpack(args))
  end
  for k = 2, #mods do x = mods[k](x) end
  return x
end

-- parametrize.cached(): while its depth is above 0, the first read of a parametrized
-- name computes it and later reads return that tensor (PyTorch's _cache, keyed by
-- module and name); the cache empties when the outermost cached() ends.
local cache_depth = 0
local cache = setmetatable({}, {__mode = "k"})   -- module -> name -> tensor

local function parametrized_value(self, name, list)
  if cache_depth == 0 then return list() end
  local per_module = cache[self]
  if per_module == nil then
    per_module = {}
    cache[self] = per_module
  end
  local t = per_module[name]
  if t == nil then
    t = list()
    per_module[name] = t
  end
  return t
end

-- The class of a parametrized instance: cls's methods, and an __index that computes a
-- parametrized name from its ParametrizationList (PyTorch's Parametrized<cls> classes).
local parametrized_classes = setmetatable({}, {__mode = "k"})
local function parametrized_class(cls)
  if rawget(cls, "__parametrized") then return cls end
  local pc = parametrized_classes[cls]
  if pc then return pc end
  pc = cls:extend("Parametrized" .. (cls.__name or "Module"))
  pc.__parametrized = true
  local plain_index = cls.__index
  pc.__index = function(self, k)
    local pl = rawget(self, "_modules").parametrizations
    if pl ~= nil and type(k) == "string" then
      local list = rawget(pl, "_modules")[k]
      if list ~= nil then return parametrized_value(self, k, list) end
    end
    if type(plain_index) == "function" then return plain_index(self, k) end
    return plain_index[k]
  end
  -- assignments to a parametrized name go through right_inverse (PyTorch's setter)
  local plain_newindex = cls.__newindex
  pc.__newindex = function(self, k, v)
    local pl = rawget(self, "_modules").parametrizations
    if pl ~= nil and type(k) == "string" and rawget(pl, "_modules")[k] ~= nil then
      U._set_original(rawget(pl, "_modules")[k], v, k)
      return
    end
    return plain_newindex(self, k, v)
  end
  parametrized_classes[cls] = pc
  return pc
end

local function is_parametrized(module, name)
  local pl = rawget(module, "_modules").parametrizations
  if pl == nil then return false end
  if name == nil then return true end
  return rawget(pl, "_modules")[name] ~= nil
end

-- value through the parametrizations' right_inverse, last to first, into the originals
function U._set_original(list, value, name)
  local mods = list:children()
  local v = table.pack(value)
  for k = #mods, 1, -1 do
    local ri = mods[k].right_inverse
    if ri then v = table.pack(ri(mods[k], table.unpack(v, 1, v.n))) end
  end
  ember.no_grad(function()
    if v.n == 1 then
      list.original:copy_(v[1])
    else
      for i = 1, v.n do list["original" .. (i - 1)]:copy_(v[i]) end
    end
  end)
  return name
end

-- PyTorch's checks when unsafe is off: what registering gives must keep the dtype and the
-- shape of what was there (what names the tensor checked)
local function check_same(op, want, got, what, of)
  if not ember.is_tensor(got) then fail("%s: %s must return a tensor, got %s", op, of, type(got)) end
  if got.dtype ~= want.dtype then
    fail("%s: %s may not change the dtype of %s (unless unsafe = true): %s, got %s", op, of, what, want.dtype,
         got.dtype)
  end
  if errors.shape_str(got) ~= errors.shape_str(want) then
    fail("%s: %s may not change the shape of %s (unless unsafe = true): %s, got %s", op, of, what,
         errors.shape_str(want), errors.shape_str(got))
  end
end

--- nn.utils.parametrize.register_parametrization(module, name, parametrization [, {unsafe = false}]) -> module
-- Replaces the parameter (or buffer) name of module by parametrization(original): reading
-- module[name] computes it, gradients reach the original. The first parametrization of a
-- name stores the tensor through the parametrization's right_inverse when it has one (a
-- list of tensors becomes original0, original1, ...) and as "original" otherwise; more
-- parametrizations of the same name are applied after it. Names in the state_dict are
-- PyTorch's: parametrizations.<name>.original[i] and parametrizations.<name>.<k>.<buffer>.
-- Unless unsafe, the parametrized tensor (and right_inverse's result, for a parametrization
-- added to others) must keep the dtype and shape of module[name], checked here as PyTorch.
-- Example: nn.utils.parametrize.register_parametrization(lin, "weight", MyParam())
local function register_parametrization(module, name, parametrization, ...)
  local op = "register_parametrization"
  local o = require("ember.args").options(op, {"*", "unsafe"}, ...)
  local unsafe = o.unsafe == true
  if o.unsafe ~= nil and type(o.unsafe) ~= "boolean" then fail("%s: unsafe must be a boolean, got %s", op, type(o.unsafe)) end
  if not is_module(module) then fail("%s: argument 1: expected a module, got %s", op, type(module)) end
  if type(name) ~= "string" then fail("%s: argument 2: expected a name (a string), got %s", op, type(name)) end
  if not is_module(parametrization) then
    fail("%s: argument 3: the parametrization must be a module, got %s", op, type(parametrization))
  end
  if is_parametrized(module, name) then
    local list = rawget(rawget(module, "_modules").parametrizations, "_modules")[name]
    if not unsafe then
      local y = module[name]
      local x = parametrization(y)
      check_same(op, y, x, "module." .. name, "the parametrization")
      if parametrization.right_inverse then
        check_same(op, y, ember.no_grad(function() return parametrization:right_inverse(x) end), "module." .. name,
                   "its right_inverse")
      end
    end
    list:append(parametrization)
    rawset(list, "unsafe", rawget(list, "unsafe") or unsafe)
    return module
  end
  local params, bufs = rawget(module, "_parameters"), rawget(module, "_buffers")
  local original, is_param = params[name], true
  if original == nil then original, is_param = bufs[name], false end
  if original == nil then
    fail("%s: module %s has no parameter or buffer named '%s'", op, getmetatable(module).__name or "Module", name)
  end
  local list = ParametrizationList()
  local stored
  if parametrization.right_inverse then
    stored = table.pack(ember.no_grad(function() return parametrization:right_inverse(original) end))
  else
    stored = table.pack(original)
  end
  local function as_original(t)
    if not ember.is_tensor(t) then fail("%s: right_inverse must return tensors, got a %s", op, type(t)) end
    if t == original then return original end
    local c = t:detach()
    if is_param then c = c:requires_grad_(original.requires_grad) end
    return c
  end
  if stored.n == 1 and ember.is_tensor(stored[1]) and stored[1].dtype ~= original.dtype then
    fail("%s: when right_inverse returns one tensor it may not change the dtype: %s, got %s", op, original.dtype,
         stored[1].dtype)
  end
  rawset(list, "unsafe", unsafe)
  if stored.n == 1 then
    if is_param then list:register_parameter("original", as_original(stored[1]))
    else list:register_buffer("original", as_original(stored[1])) end
  else
    for i = 1, stored.n do
      local t = as_original(stored[i])
      if is_param then list:register_parameter("original" .. (i - 1), t)
      else list:register_buffer("original" .. (i - 1), t) end
    end
  end
  list:add_module("0", parametrization)
  if not unsafe then check_same(op, original, list(), "the tensor", "the parametrization") end
  -- the name leaves the module's own tensors; parametrizations (a ModuleDict) comes last
  if is_param then module:register_parameter(name, nil) else module:register_buffer(name, nil) end
  local pl = rawget(module, "_modules").parametrizations
  if pl == nil then
    pl = require("ember.nn.layers").ModuleDict()
    module:add_module("parametrizations", pl)
  end
  pl:add_module(name, list)
  setmetatable(module, parametrized_class(getmetatable(module)))
  return module
end

function ParametrizationList:append(m)
  return self:add_module(string.format("%d", #self), m)
end

--- nn.utils.parametrize.remove_parametrizations(module, name [, leave_parametrized = true]) -> module
-- Takes the parametrizations of name away: the parameter becomes the current parametrized
-- value (leave_parametrized) or the original again. With no parametrization left, the module
-- gets its own class back.
local function remove_parametrizations(module, name, leave_parametrized)
  local op = "remove_parametrizations"
  if not is_module(module) then fail("%s: argument 1: expected a module, got %s", op, type(module)) end
  if not is_parametrized(module, name) then
    fail("%s: module %s has no parametrization on '%s'", op, getmetatable(module).__name or "Module", tostring(name))
  end
  if leave_parametrized == nil then leave_parametrized = true end
  local pl = rawget(module, "_modules").parametrizations
  local list = rawget(pl, "_modules")[name]
  local original = rawget(list, "_parameters").original
  local is_param = rawget(list, "_buffers").original == nil
  local value
  if leave_parametrized then
    value = ember.no_grad(function() return list() end):detach()
  elseif original ~= nil then
    value = original
  else
    fail("%s: '%s' has several originals (original0, original1, ...): remove it with leave_parametrized = true", op, name)
  end
  pl[name] = nil
  if #pl == 0 then
    module.parametrizations = nil
    setmetatable(module, getmetatable(module).super)
  end
  if is_param then
    local requires_grad = original == nil or original.requires_grad
    module:register_parameter(name, value == original and original or value:requires_grad_(requires_grad))
  else
    module:register_buffer(name, value)
  end
  return module
end

local CacheGuard = {__name = "ember.nn.utils.parametrize.CacheGuard"}
CacheGuard.__index = CacheGuard
CacheGuard.__close = function(g)
  if g.closed then return end
  g.closed = true
  cache_depth = cache_depth - 1
  if cache_depth == 0 then
    for k in pairs(cache) do cache[k] = nil end
  end
end

--- nn.utils.parametrize.cached() -> a guard for `local _ <close> = ...`, or cached(fn, ...) ->
-- fn(...)'s results: while it lives, each parametrized tensor is computed at its first read
-- and that result is reused (PyTorch's `with parametrize.cached():`, for a forward that
-- reads a weight several times); the cache is emptied when the outermost one ends.
local function cached(fn, ...)
  if fn ~= nil and type(fn) ~= "function" and not (getmetatable(fn) or {}).__call then
    fail("cached: expected a function or nothing, got %s", type(fn))
  end
  cache_depth = cache_depth + 1
  local g = setmetatable({}, CacheGuard)
  if fn == nil then return g end
  local _ <close> = g
  return fn(...)
end

U.parametrize = {
  register_parametrization = register_parametrization,
  cached = cached,
  remove_parametrizations = remove_parametrizations,
  is_parametrized = is_parametrized,
  ParametrizationList = ParametrizationList,
}

-- weight = g * v / ||v|| (norms over every dim but dim)
local function weight_norm_value(g, v, dim) return v * (g / norm_except_dim(v, dim)) end

local WeightNorm = Module:extend("_WeightNorm")
function WeightNorm:init(dim) self.dim = dim end
function WeightNorm:forward(g, v) return weight_norm_value(g, v, self.dim) end
function WeightNorm:right_inverse(w) return norm_except_dim(w, self.dim), w end
function WeightNorm:extra_repr() return "dim=" .. tostring(self.dim) end

local function check_named(op, module, name)
  if not is_module(module) then fail("%s: argument 1: expected a module, got %s", op, type(module)) end
  if type(name) ~= "string" then fail("%s: name must be a string, got %s", op, type(name)) end
  local t = rawget(module, "_parameters")[name]
  if t == nil then
    fail("%s: module %s has no parameter '%s'%s", op, getmetatable(module).__name or "Module", name,
         is_parametrized(module, name) and " (it is parametrized already)" or "")
  end
  return t
end

local function named_opts(op, name, opts)
  if type(name) == "table" and opts == nil then return "weight", name end
  opts = opts or {}
  if type(opts) ~= "table" then fail("%s: expected an options table, got %s", op, type(opts)) end
  return name or "weight", opts
end

--- nn.utils.parametrizations.weight_norm(module [, name = "weight" [, {dim = 1}]]) -> module
-- Reparametrizes module[name] as g * v / ||v||, the norm over every dim but dim (1-based;
-- dim = false for the whole tensor, PyTorch's dim=None), as
-- torch.nn.utils.parametrizations.weight_norm: g is parametrizations.<name>.original0 (the
-- norms, size 1 but at dim), v is parametrizations.<name>.original1 (the weight).
-- Example: local fc = nn.utils.parametrizations.weight_norm(nn.Linear(20, 40))
local function weight_norm(module, name, opts)
  local op = "weight_norm"
  name, opts = named_opts(op, name, opts)
  local w = check_named(op, module, name)
  local dim = opts.dim
  if dim == false then dim = nil elseif dim == nil then dim = 1 end
  dim = dim_arg(op, dim, w.ndim, "dim")
  return register_parametrization(module, name, WeightNorm(dim))
end

-- the weight as a matrix: dim first, the rest flattened
local function weight_matrix(w, dim)
  if dim ~= 1 then
    local order = {dim}
    for d = 1, w.ndim do if d ~= dim then order[#order + 1] = d end end
    w = w:permute(order)
  end
  return w:flatten(2)
end

local function normalize(x, eps) return x / x:norm():clamp_min(eps) end

local SpectralNorm = Module:extend("_SpectralNorm")
function SpectralNorm:init(weight, n_power_iterations, dim, eps)
  self.dim = dim
  self.eps = eps
  self.n_power_iterations = n_power_iterations
  if weight.ndim > 1 then
    local _ <close> = ember.no_grad()
    local wm = weight_matrix(weight:detach(), dim)
    local h, w = wm.shape[1], wm.shape[2]
    local topts = {dtype = wm.dtype, device = wm.device}
    self:register_buffer("_u", normalize(ember.randn({h}, topts), eps))
    self:register_buffer("_v", normalize(ember.randn({w}, topts), eps))
    self:_power_method(wm, 15)
  end
end
function SpectralNorm:_power_method(wm, n)
  local _ <close> = ember.no_grad()
  for _ = 1, n do
    self._u:copy_(normalize(wm:matmul(self._v), self.eps))
    self._v:copy_(normalize(wm:t():matmul(self._u), self.eps))
  end
end
function SpectralNorm:forward(weight)
  if weight.ndim == 1 then return normalize(weight, self.eps) end
  local wm = weight_matrix(weight, self.dim)
  if self.training then self:_power_method(wm:detach(), self.n_power_iterations) end
  local u, v = self._u:clone(), self._v:clone()
  local sigma = (u * wm:matmul(v)):sum()
  return weight / sigma
end
function SpectralNorm:right_inverse(value) return value end
function SpectralNorm:extra_repr()
  return string.format("n_power_iterations=%d, dim=%d, eps=%g", self.n_power_iterations, self.dim, self.eps)
end

-- spectral_norm's n_power_iterations, eps and dim (1-based; default 1, or 2 for the
-- ConvTranspose layers), checked
local function spectral_options(op, module, w, o)
  local n = o.n_power_iterations or 1
  if math.type(n) ~= "integer" or n < 0 then
    fail("%s: n_power_iterations must be an integer >= 0, got %s", op, tostring(n))
  end
  local eps = o.eps or 1e-12
  if type(eps) ~= "number" or not (eps >= 0) then fail("%s: eps must be a number >= 0, got %s", op, tostring(eps)) end
  local cls_name = getmetatable(module).__name or ""
  local dim = dim_arg(op, o.dim or (cls_name:match("^ConvTranspose") and 2 or 1), math.max(w.ndim, 1), "dim")
  return n, eps, dim
end

--- nn.utils.parametrizations.spectral_norm(module [, name = "weight" [, {n_power_iterations = 1, eps = 1e-12, dim =}]]) -> module
-- Reparametrizes module[name] as W / sigma(W), sigma the largest singular value of W seen as a
-- matrix (dim first, 1-based; default 1, or 2 for the ConvTranspose layers) estimated by power
-- iteration, as torch.nn.utils.parametrizations.spectral_norm: the vectors are the buffers
-- parametrizations.<name>.0._u and ._v (drawn from N(0, 1), then 15 iterations); each read of
-- module[name] in training mode runs n_power_iterations more; in eval mode it uses them as they are.
-- The state_dict holds parametrizations.<name>.original (the weight) and those buffers.
-- Example: local fc = nn.utils.parametrizations.spectral_norm(nn.Linear(20, 40))
local function spectral_norm(module, name, opts)
  local op = "spectral_norm"
  name, opts = named_opts(op, name, opts)
  local w = check_named(op, module, name)
  local n, eps, dim = spectral_options(op, module, w, opts)
  return register_parametrization(module, name, SpectralNorm(w, n, dim, eps))
end

U.parametrizations = {weight_norm = weight_norm, spectral_norm = spectral_norm}

-- ---- the older hook forms ------------------------------------------------------------------
-- torch.nn.utils.weight_norm / spectral_norm (deprecated in PyTorch for the parametrizations
-- above, but what the checkpoints of most vocoders and GANs hold): the original tensors are
-- parameters and buffers of the module under PyTorch's names (<name>_g and <name>_v;
-- <name>_orig, <name>_u and <name>_v), and a forward pre-hook sets module[name] to the
-- weight computed from them before each forward. hooks[module][name] is the registration.
local hooks = setmetatable({}, {__mode = "k"})

local function hook_of(module, name)
  local per = hooks[module]
  return per and per[name]
end

-- rec.compute(module, power) gives module[name]; initial is module[name] until the first forward
local function add_hook(module, name, rec, initial)
  rec.handle = module:register_forward_pre_hook(function(m) rawset(m, name, rec.compute(m, m.training)) end)
  hooks[module] = hooks[module] or {}
  hooks[module][name] = rec
  rawset(module, name, initial)
  return module
end

local function check_no_hook(op, kind, module, name)
  local rec = hook_of(module, name)
  if rec and rec.kind == kind then fail("%s: cannot register two %s hooks on the same parameter %s", op, kind, name) end
end

-- module[name] a parameter again, holding value (tensors listed in drop leave the module)
local function restore_parameter(module, name, value, drop)
  for _, k in ipairs(drop) do
    if rawget(module, "_buffers")[k] ~= nil then module:register_buffer(k, nil) else module:register_parameter(k, nil) end
  end
  rawset(module, name, nil)
  module:register_parameter(name, value:detach():requires_grad_(true))
  return module
end

local function take_hook(op, kind, module, name)
  if not is_module(module) then fail("%s: argument 1: expected a module, got %s", op, type(module)) end
  name = name or "weight"
  local rec = hook_of(module, name)
  if rec == nil or rec.kind ~= kind then
    fail("%s: %s of '%s' not found in %s", op, kind, tostring(name), getmetatable(module).__name or "Module")
  end
  rec.handle:remove()
  hooks[module][name] = nil
  return name, rec
end

-- a dim argument given positionally or as {dim = }; false is the whole tensor (PyTorch's None)
local function hook_args(name, rest, names)
  if type(name) == "table" and rest[1] == nil then return "weight", name end
  local o = {}
  if type(rest[1]) == "table" then o = rest[1]
  else for i, k in ipairs(names) do o[k] = rest[i] end end
  return name or "weight", o
end

--- nn.utils.weight_norm(module [, name = "weight" [, dim = 1]]) -> module
-- The older form of weight normalisation (torch.nn.utils.weight_norm): module[name] is
-- replaced by the parameters <name>_g (its norms over every dim but dim, 1-based; dim = false
-- for the norm of the whole tensor, PyTorch's None) and <name>_v (the direction), which the
-- state_dict holds, and is recomputed as g * v / ||v|| before each forward. dim may also come
-- as {dim = }. nn.utils.remove_weight_norm undoes it.
-- Example: local conv = nn.utils.weight_norm(nn.Conv1d(80, 512, 7))
function U.weight_norm(module, name, ...)
  local op = "weight_norm"
  local o
  name, o = hook_args(name, {...}, {"dim"})
  check_no_hook(op, "weight_norm", module, name)
  local w = check_named(op, module, name)
  local dim = o.dim
  if dim == false then dim = nil elseif dim == nil then dim = 1 end
  dim = dim_arg(op, dim, math.max(w.ndim, 1), "dim")
  local g = ember.no_grad(function() return norm_except_dim(w, dim):detach() end)
  module:register_parameter(name, nil)
  module:register_parameter(name .. "_g", g:requires_grad_(w.requires_grad))
  module:register_parameter(name .. "_v", w)
  local rec = {kind = "weight_norm"}
  rec.compute = function(m) return weight_norm_value(m[name .. "_g"], m[name .. "_v"], dim) end
  return add_hook(module, name, rec, rec.compute(module))
end

--- nn.utils.remove_weight_norm(module [, name = "weight"]) -> module
-- Takes nn.utils.weight_norm's hook away: module[name] becomes a parameter again, holding
-- g * v / ||v||.
function U.remove_weight_norm(module, name)
  local rec
  name, rec = take_hook("remove_weight_norm", "weight_norm", module, name)
  local w = ember.no_grad(function() return rec.compute(module) end)
  return restore_parameter(module, name, w, {name .. "_g", name .. "_v"})
end

--- nn.utils.spectral_norm(module [, name = "weight" [, n_power_iterations = 1 [, eps = 1e-12 [, dim]]]]) -> module
-- The older form of spectral normalisation (torch.nn.utils.spectral_norm): module[name]
-- becomes the parameter <name>_orig with the buffers <name>_u and <name>_v (the power
-- iteration's vectors, drawn from N(0, 1) and normalised), and before each forward
-- module[name] is set to W / sigma(W), sigma from u and v after n_power_iterations steps in
-- training mode (none in eval mode). W is seen as a matrix with dim first (1-based; default
-- 1, or 2 for the ConvTranspose layers). The optional arguments may also come as a table.
-- nn.utils.remove_spectral_norm undoes it.
-- Example: local d = nn.utils.spectral_norm(nn.Conv2d(3, 64, 4, 2, 1))
function U.spectral_norm(module, name, ...)
  local op = "spectral_norm"
  local o
  name, o = hook_args(name, {...}, {"n_power_iterations", "eps", "dim"})
  check_no_hook(op, "spectral_norm", module, name)
  local w = check_named(op, module, name)
  local n, eps, dim = spectral_options(op, module, w, o)
  local u, v = ember.no_grad(function()
    local wm = weight_matrix(w:detach(), dim)
    local topts = {dtype = w.dtype, device = w.device}
    return normalize(ember.randn({wm.shape[1]}, topts), eps), normalize(ember.randn({wm.shape[2]}, topts), eps)
  end)
  module:register_parameter(name, nil)
  module:register_parameter(name .. "_orig", w)
  module:register_buffer(name .. "_u", u)
  module:register_buffer(name .. "_v", v)
  local rec = {kind = "spectral_norm"}
  rec.compute = function(m, power)
    local weight, bu, bv = m[name .. "_orig"], m[name .. "_u"], m[name .. "_v"]
    local wm = weight_matrix(weight, dim)
    if power then
      ember.no_grad(function()
        for _ = 1, n do      -- v first, then u: the older form's order
          bv:copy_(normalize(wm:t():matmul(bu), eps))
          bu:copy_(normalize(wm:matmul(bv), eps))
        end
      end)
    end
    if n > 0 then bu, bv = bu:clone(), bv:clone() end
    return weight / bu:dot(wm:matmul(bv))
  end
  return add_hook(module, name, rec, w:detach())
end

--- nn.utils.remove_spectral_norm(module [, name = "weight"]) -> module
-- Takes nn.utils.spectral_norm's hook away: module[name] becomes a parameter again, holding
-- W / sigma(W) from the current u and v (no power iteration).
function U.remove_spectral_norm(module, name)
  local rec
  name, rec = take_hook("remove_spectral_norm", "spectral_norm", module, name)
  local w = ember.no_grad(function() return rec.compute(module, false) end)
  return restore_parameter(module, name, w, {name .. "_orig", name .. "_u", name .. "_v"})
end


-- ---- fusing a batch norm into the layer before it ------------------------------------------

-- the running statistics and affine parameters of bn, checked
local function bn_parts(op, bn)
  if not is_module(bn) then fail("%s: expected a batch norm module, got %s", op, type(bn)) end
  if bn.running_mean == nil or bn.running_var == nil then
    fail("%s: the batch norm has no running statistics (track_running_stats = false)", op)
  end
  return bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
end

local function check_eval(op, layer, bn)
  if not is_module(layer) then fail("%s: argument 1: expected a module, got %s", op, type(layer)) end
  if layer.training or (is_module(bn) and bn.training) then
    fail("%s: fusion only for eval (call :eval() on both modules first)", op)
  end
end

-- b, or zeros like rm when b is nil; its dtype (the weight's when b is nil)
local function bias_or_zeros(b, rm, w) return b or ember.zeros_like(rm), (b or w).dtype end

--- nn.utils.fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b [, transpose = false]) -> weight, bias
-- The weight and bias of one convolution doing conv then batch norm (in eval mode), as
-- torch.nn.utils.fuse_conv_bn_weights: w * bn_w / sqrt(bn_rv + bn_eps) along the output
-- channels (dim 2 of the weight for a transposed convolution), (conv_b - bn_rm) times the
-- same plus bn_b; conv_b, bn_w and bn_b may be nil (0, 1, 0). Both are parameters, requiring
-- grad as conv_w and conv_b do, in their dtypes.
-- Example: local w, b = nn.utils.fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean,
--   bn.running_var, bn.eps, bn.weight, bn.bias)
function U.fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose)
  local b, bdtype = bias_or_zeros(conv_b, bn_rm, conv_w)
  bn_w = bn_w or ember.ones_like(bn_rm)
  bn_b = bn_b or ember.zeros_like(bn_rm)
  local rsqrt = (bn_rv + bn_eps):rsqrt()
  local shape = {-1, 1}
  if transpose then shape = {1, -1} end
  for _ = 3, conv_w.ndim do shape[#shape + 1] = 1 end
  local w = (conv_w * (bn_w * rsqrt):reshape(shape)):to(conv_w.dtype)
  local fb = ((b - bn_rm) * rsqrt * bn_w + bn_b):to(bdtype)
  return base.Parameter(w, conv_w.requires_grad), base.Parameter(fb, b.requires_grad)
end

--- nn.utils.fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b) -> weight, bias
-- The weight and bias of one Linear doing linear then batch norm (in eval mode), as
-- torch.nn.utils.fuse_linear_bn_weights: each output row scaled by bn_w / sqrt(bn_rv + bn_eps),
-- the bias (linear_b - bn_rm) times it plus bn_b (linear_b may be nil).
-- Example: local w, b = nn.utils.fuse_linear_bn_weights(fc.weight, fc.bias, bn.running_mean,
--   bn.running_var, bn.eps, bn.weight, bn.bias)
function U.fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
  local b, bdtype = bias_or_zeros(linear_b, bn_rm, linear_w)
  bn_w = bn_w or ember.ones_like(bn_rm)
  bn_b = bn_b or ember.zeros_like(bn_rm)
  local scale = bn_w * (bn_rv + bn_eps):rsqrt()
  local w = linear_w * scale:unsqueeze(-1):to(linear_w.dtype)
  local fb = ((b - bn_rm) * scale + bn_b):to(bdtype)
  return base.Parameter(w, linear_w.requires_grad), base.Parameter(fb, b.requires_grad)
end

-- a copy of layer with the fused weight and bias
local function fused_copy(layer, w, b)
  local f = base.deepcopy(layer)
  f:register_parameter("weight", w)
  f:register_parameter("bias", b)
  return f
end

--- nn.utils.fuse_conv_bn_eval(conv, bn [, transpose = false]) -> a new convolution
-- A copy of conv (in eval mode, as bn) whose weight and bias do what conv followed by bn
-- does, as torch.nn.utils.fuse_conv_bn_eval (the weights from fuse_conv_bn_weights; conv is
-- left as it was). transpose: conv is a transposed convolution.
-- Example: local fused = nn.utils.fuse_conv_bn_eval(conv:eval(), bn:eval())
function U.fuse_conv_bn_eval(conv, bn, transpose)
  local op = "fuse_conv_bn_eval"
  check_eval(op, conv, bn)
  local rm, rv, eps, bw, bb = bn_parts(op, bn)
  return fused_copy(conv, U.fuse_conv_bn_weights(conv.weight, conv.bias, rm, rv, eps, bw, bb, transpose))
end

--- nn.utils.fuse_linear_bn_eval(linear, bn) -> a new Linear
-- A copy of linear (in eval mode, as bn) whose weight and bias do what linear followed by
-- bn does, as torch.nn.utils.fuse_linear_bn_eval; bn has linear's out_features features,
-- or one.
-- Example: local fused = nn.utils.fuse_linear_bn_eval(fc:eval(), bn:eval())
function U.fuse_linear_bn_eval(linear, bn)
  local op = "fuse_linear_bn_eval"
  check_eval(op, linear, bn)
  local rm, rv, eps, bw, bb = bn_parts(op, bn)
  if bn.num_features ~= linear.out_features and bn.num_features ~= 1 then
    fail("%s: linear.out_features (%d) must equal bn.num_features (%d), or bn have one feature", op,
         linear.out_features, bn.num_features)
  end
  return fused_copy(linear, U.fuse_linear_bn_weights(linear.weight, linear.bias, rm, rv, eps, bw, bb))
end

--- nn.utils.clip_grad_norm(parameters, max_norm [, ...]) -> total norm: PyTorch's deprecated
-- name of clip_grad_norm_, the same function.
U.clip_grad_norm = U.clip_grad_norm_

--- nn.utils.stateless.functional_call: PyTorch's older name of torch.func.functional_call
-- (ember.func.functional_call, the same function).
U.stateless = setmetatable({}, {__index = function(t, k)
  if k ~= "functional_call" then return nil end
  local f = require("ember.func").functional_call
  rawset(t, k, f)
  return f
end})

return U
