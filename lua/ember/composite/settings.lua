-- ember.composite.settings — PyTorch's process-wide switches that a ported script sets
-- at its top: set_printoptions, set/get_float32_matmul_precision, inference_mode,
-- use_deterministic_algorithms (and its debug-mode names) and compile. A part of ember.composite (loaded on first use of one of these names).
local ember = require "ember"
local raise = require("ember.errors").raise
local options = require("ember.args").options

local F = {}

-- torch.set_printoptions's profiles: precision, threshold, edgeitems, linewidth
local PROFILES = {
  default = {4, 1000, 3, 80},
  short = {2, 1000, 2, 80},
  full = {4, math.huge, 3, 80},
}

--- ember.set_printoptions([precision [, threshold [, edgeitems [, linewidth [, profile [, sci_mode]]]]]])
-- (or the same names in an options table): how tensors print, for the whole process.
function F.set_printoptions(...)
  local op = "ember.set_printoptions"
  local o = options(op, {"precision", "threshold", "edgeitems", "linewidth", "profile", "sci_mode"}, ...)
  local precision, threshold, edgeitems, linewidth = ember._printoptions()
  if o.profile ~= nil then
    local p = PROFILES[o.profile]
    if not p then
      raise(string.format('%s: profile must be "default", "short" or "full", got %s', op, tostring(o.profile)))
    end
    precision, threshold, edgeitems, linewidth = p[1], p[2], p[3], p[4]
  end
  for name, v in pairs({precision = o.precision, edgeitems = o.edgeitems, linewidth = o.linewidth}) do
    if math.type(v) ~= "integer" then raise(string.format("%s: %s must be an integer, got %s", op, name, tostring(v))) end
  end
  if o.threshold ~= nil and type(o.threshold) ~= "number" then
    raise(string.format("%s: threshold must be a number, got %s", op, type(o.threshold)))
  end
  -- as PyTorch, sci_mode is always set: left out, the notation follows the values again
  ember._printoptions(o.precision or precision, o.threshold or threshold, o.edgeitems or edgeitems,
                      o.linewidth or linewidth, o.sci_mode)
end

-- "medium" lets PyTorch use bfloat16 products too; ember's CUDA matmul has TF32 as its
-- only reduced-precision float32 mode, so medium and high both allow TF32
local medium = false

--- ember.set_float32_matmul_precision(p): "highest" (float32 products in float32), "high" or
-- "medium" (TF32 allowed on CUDA): ember.backends.cuda.matmul.allow_tf32 follows it.
function F.set_float32_matmul_precision(p)
  local op = "ember.set_float32_matmul_precision"
  if p ~= "highest" and p ~= "high" and p ~= "medium" then
    raise(string.format('%s: expected "highest", "high" or "medium", got %s', op,
                        type(p) == "string" and '"' .. p .. '"' or tostring(p)))
  end
  medium = p == "medium"
  ember.backends.cuda.matmul.allow_tf32 = p ~= "highest"
end

--- ember.get_float32_matmul_precision() -> "highest", "high" or "medium", read from allow_tf32 as PyTorch does.
function F.get_float32_matmul_precision()
  if not ember.backends.cuda.matmul.allow_tf32 then return "highest" end
  return medium and "medium" or "high"
end

-- whether the innermost inference_mode region asked for inference mode (is_inference_mode_enabled)
local inference = false

local Guard = {__name = "ember.InferenceModeGuard"}
Guard.__index = Guard
function Guard.__close(g)
  if g.closed then return end
  g.closed = true
  inference = g.was
  if g.grad then getmetatable(g.grad).__close(g.grad) end
end

--- ember.inference_mode([mode = true,] [fn, ...]): torch.inference_mode; with mode true it is
-- ember.no_grad (fn's results, or a <close> guard without fn); with mode false grad mode is left as it is.
-- ember.is_inference_mode_enabled() tells which the innermost region asked for.
function F.inference_mode(...)
  local args = table.pack(...)
  local mode, first = true, 1
  if type(args[1]) == "boolean" then mode, first = args[1], 2 end
  local fn = args[first]
  if fn ~= nil and type(fn) ~= "function" then
    raise(string.format("ember.inference_mode: expected a function (or nothing, for a <close> guard), got %s",
                        type(fn)))
  end
  local was = inference
  if fn == nil then
    local g = setmetatable({was = was, grad = mode and ember.no_grad() or nil}, Guard)
    inference = mode
    return g
  end
  inference = mode
  local r = table.pack(pcall(mode and ember.no_grad or function(f, ...) return f(...) end,
                             table.unpack(args, first, args.n)))
  inference = was
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

--- ember.is_inference_mode_enabled() -> true inside ember.inference_mode (mode true), as torch's.
function F.is_inference_mode_enabled() return inference end

-- ---- determinism ---------------------------------------------------------------------------

-- warn_only as last given (PyTorch keeps it apart from the mode); ember has a deterministic
-- form of every op, so in ember it changes nothing
local warn_only = false

--- ember.use_deterministic_algorithms(mode [, {warn_only = false}]): with mode true, the same
-- bits on every run of the same program on the same machine. The CUDA kernels that add with
-- atomics (scatter_add, index_add, scatter_reduce "sum" / "mean" / "prod", and the gradients
-- made of them: gather's, index_select's, embedding's, advanced indexing's) apply each
-- element's updates in index order, convolutions take only cuDNN's deterministic algorithms,
-- and empty() / empty_like() / new_empty() fill with NaN or the integer maximum
-- (ember.utils.deterministic.fill_uninitialized_memory). The CPU kernels are deterministic
-- either way. No ember op is left without a deterministic form, so none raises or warns
-- (PyTorch raises for some CUDA ops, or warns under warn_only).
-- Example: ember.use_deterministic_algorithms(true)
function F.use_deterministic_algorithms(mode, ...)
  local op = "ember.use_deterministic_algorithms"
  if type(mode) ~= "boolean" then raise(string.format("%s: mode must be a boolean, got %s", op, type(mode))) end
  local o = options(op, {"*", "warn_only"}, ...)
  if o.warn_only ~= nil and type(o.warn_only) ~= "boolean" then
    raise(string.format("%s: warn_only must be a boolean, got %s", op, type(o.warn_only)))
  end
  ember._deterministic.algorithms = mode
  warn_only = o.warn_only == true
end

--- ember.are_deterministic_algorithms_enabled() -> whether use_deterministic_algorithms(true) is in force.
function F.are_deterministic_algorithms_enabled() return ember._deterministic.algorithms end

--- ember.is_deterministic_algorithms_warn_only_enabled() -> the warn_only last given to use_deterministic_algorithms.
function F.is_deterministic_algorithms_warn_only_enabled() return warn_only end

local DEBUG_MODES = {default = 0, warn = 1, error = 2}

--- ember.set_deterministic_debug_mode(m): "default" / 0 (off), "warn" / 1 (on, warn_only),
-- "error" / 2 (on): use_deterministic_algorithms by another name, as PyTorch's.
function F.set_deterministic_debug_mode(m)
  local op = "ember.set_deterministic_debug_mode"
  local level = type(m) == "string" and DEBUG_MODES[m] or (math.type(m) == "integer" and m >= 0 and m <= 2 and m)
  if not level then
    raise(string.format('%s: expected "default", "warn" or "error" (or 0, 1, 2), got %s', op,
                        type(m) == "string" and '"' .. m .. '"' or tostring(m)))
  end
  F.use_deterministic_algorithms(level > 0, {warn_only = level == 1})
end

--- ember.get_deterministic_debug_mode() -> 0 (off), 1 (on, warn_only) or 2 (on).
function F.get_deterministic_debug_mode()
  if not ember._deterministic.algorithms then return 0 end
  return warn_only and 1 or 2
end

local callable = require("ember.args").is_callable

--- ember.compile([model_or_fn] [, {fullgraph, dynamic, backend, mode, options, disable}]) -> model_or_fn unchanged
-- (ember has no compiler; without a model, a function that returns its argument, for use as a decorator).
function F.compile(...)
  local op = "ember.compile"
  local args = table.pack(...)
  local model = callable(args[1]) and args[1] or nil
  if not model and args[1] ~= nil and not (type(args[1]) == "table" and getmetatable(args[1]) == nil) then
    raise(string.format("%s: expected a module or a function to compile, got %s", op, type(args[1])))
  end
  options(op, {"fullgraph", "dynamic", "backend", "mode", "options", "disable"},
          table.unpack(args, model and 2 or 1, args.n))
  if model then return model end
  return function(m)
    if not callable(m) then raise(string.format("%s: expected a module or a function to compile, got %s", op, type(m))) end
    return m
  end
end

-- torch.set_default_tensor_type's names: the dtype of each, and whether it is a CUDA type
local TENSOR_TYPES = {FloatTensor = "float32", DoubleTensor = "float64", HalfTensor = "float16",
                      BFloat16Tensor = "bfloat16"}

--- ember.set_default_tensor_type(t): the default dtype and device at once, from PyTorch's type
-- names ("torch.DoubleTensor", "torch.cuda.FloatTensor"), as torch.set_default_tensor_type
-- (deprecated there for set_default_dtype and set_default_device).
function F.set_default_tensor_type(t)
  local op = "ember.set_default_tensor_type"
  if type(t) ~= "string" then raise(string.format("%s: expected a type name such as 'torch.DoubleTensor', got %s", op,
                                                  type(t))) end
  local cuda, name = t:match("^torch%.(cuda%.)(%w+)$")
  if not name then name = t:match("^torch%.(%w+)$") end
  local dtype = name and TENSOR_TYPES[name]
  if not dtype then
    if name and name:match("Tensor$") then
      raise(string.format("%s: only floating-point types are supported as the default type, got %s", op, t))
    end
    raise(string.format("%s: invalid type: '%s' (expected a name such as 'torch.FloatTensor' or "
                        .. "'torch.cuda.DoubleTensor')", op, t))
  end
  ember.set_default_dtype(dtype)
  ember.set_default_device(cuda and "cuda" or "cpu")
end

return {functions = F}
