-- ember.nn activation modules (nn.ELU, nn.Mish, ...); merged into ember.nn by nn/layers.lua.
-- Each wraps the function of the same name in ember.nn.functional. Constructors take
-- PyTorch's arguments positionally or as one options table:
--   nn.LeakyReLU(0.2)   nn.LeakyReLU({negative_slope = 0.2, inplace = true})
-- extra_repr shows the arguments as PyTorch does (inplace only when set).
local ember = require "ember"
local raise = require("ember.errors").raise
local base = require "ember.nn.module"
local F = require "ember.nn.functional"

local Module, Parameter = base.Module, base.Parameter
local check_input, boolean = Module._check_input, Module._boolean
local options = F._options

local M = {}

local function number_arg(v, default, name, what)
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v then raise(string.format("%s: %s must be a number, got %s", name, what, tostring(v))) end
  return v
end

local function g(v) return string.format("%g", v) end

-- A module class for F[fname]: args lists its constructor's arguments in PyTorch's order
-- as {name, default (nil: required), kind ("number" | "boolean" | "dim")}; the forward
-- passes them to F[fname] in the same order; repr(self) is the extra_repr.
local function activation(name, fname, args, repr)
  local cls = Module:extend(name)
  local names = {}
  for i, a in ipairs(args) do names[i] = a[1] end
  cls.init = function(self, ...)
    local o = options(name, names, ...)
    for _, a in ipairs(args) do
      local k, default, kind = a[1], a[2], a[3]
      local v = o[k]
      if v == nil and default == nil and kind ~= "boolean" then raise(string.format("%s: %s is required", name, k)) end
      if kind == "boolean" then
        v = boolean(v, false, name, k)
      elseif kind == "dim" then
        v = v == nil and default or v
        if math.type(v) ~= "integer" then
          raise(string.format("%s: %s must be an integer (1-based, negative from the end), got %s", name, k, tostring(v)))
        end
      else
        v = number_arg(v, default, name, k)
      end
      self[k] = v
    end
    if cls._check then cls._check(self) end
  end
  cls.extra_repr = function(self)
    local s = repr and repr(self) or ""
    if self.inplace then s = s == "" and "inplace=true" or s .. ", inplace=true" end
    return s
  end
  cls.forward = function(self, x)
    check_input(self, x)
    local vals = {}
    for i, a in ipairs(args) do vals[i] = self[a[1]] end
    return F[fname](x, table.unpack(vals, 1, #args))
  end
  return cls
end

local INPLACE = {"inplace", false, "boolean"}

-- A _check refusing a range whose lower end (field lo) is above its upper end (field hi).
local function ordered(name, lo, hi)
  return function(self)
    if self[lo] > self[hi] then
      raise(string.format("%s: %s (%g) must not be greater than %s (%g)", name, lo, self[lo], hi, self[hi]))
    end
  end
end

--- nn.ReLU([inplace = false]) -> max(x, 0) elementwise. Example: nn.ReLU()(ember.tensor{-1, 2})  -- [0, 2]
M.ReLU = activation("ReLU", "relu", {INPLACE})
--- nn.SiLU([inplace = false]) -> x * sigmoid(x). Example: nn.SiLU()(x)
M.SiLU = activation("SiLU", "silu", {INPLACE})
--- nn.Tanh() -> tanh(x). Example: nn.Tanh()(x)
M.Tanh = activation("Tanh", "tanh", {})
--- nn.Sigmoid() -> 1 / (1 + exp(-x)). Example: nn.Sigmoid()(x)
M.Sigmoid = activation("Sigmoid", "sigmoid", {})
--- nn.ReLU6([inplace = false]) -> min(max(x, 0), 6).
M.ReLU6 = activation("ReLU6", "relu6", {INPLACE})
--- nn.LeakyReLU([negative_slope = 0.01 [, inplace = false]]) -> x for x > 0, negative_slope * x otherwise.
M.LeakyReLU = activation("LeakyReLU", "leaky_relu", {{"negative_slope", 0.01, "number"}, INPLACE},
                         function(s) return "negative_slope=" .. g(s.negative_slope) end)
--- nn.ELU([alpha = 1 [, inplace = false]]) -> x for x > 0, alpha * (exp(x) - 1) otherwise.
M.ELU = activation("ELU", "elu", {{"alpha", 1, "number"}, INPLACE}, function(s) return "alpha=" .. g(s.alpha) end)
--- nn.SELU([inplace = false]) -> scale * elu(x, alpha) with the self-normalising constants.
M.SELU = activation("SELU", "selu", {INPLACE})
--- nn.CELU([alpha = 1 [, inplace = false]]) -> max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
M.CELU = activation("CELU", "celu", {{"alpha", 1, "number"}, INPLACE}, function(s) return "alpha=" .. g(s.alpha) end)
function M.CELU:_check() if self.alpha == 0 then raise("CELU: alpha must not be 0 (it divides x)") end end
--- nn.Mish([inplace = false]) -> x * tanh(softplus(x)).
M.Mish = activation("Mish", "mish", {INPLACE})
--- nn.Hardswish([inplace = false]) -> x * relu6(x + 3) / 6.
M.Hardswish = activation("Hardswish", "hardswish", {INPLACE})
--- nn.Hardsigmoid([inplace = false]) -> relu6(x + 3) / 6.
M.Hardsigmoid = activation("Hardsigmoid", "hardsigmoid", {INPLACE})
--- nn.Hardtanh([min_val = -1 [, max_val = 1 [, inplace = false]]]) -> x clamped to [min_val, max_val].
M.Hardtanh = activation("Hardtanh", "hardtanh", {{"min_val", -1, "number"}, {"max_val", 1, "number"}, INPLACE},
                        function(s) return "min_val=" .. g(s.min_val) .. ", max_val=" .. g(s.max_val) end)
M.Hardtanh._check = ordered("Hardtanh", "min_val", "max_val")
--- nn.Softplus([beta = 1 [, threshold = 20]]) -> log(1 + exp(beta x)) / beta, linear where beta x > threshold.
M.Softplus = activation("Softplus", "softplus", {{"beta", 1, "number"}, {"threshold", 20, "number"}},
                        function(s) return "beta=" .. g(s.beta) .. ", threshold=" .. g(s.threshold) end)
function M.Softplus:_check() if self.beta == 0 then raise("Softplus: beta must not be 0 (it divides the result)") end end
--- nn.Softsign() -> x / (1 + |x|).
M.Softsign = activation("Softsign", "softsign", {})
--- nn.Tanhshrink() -> x - tanh(x).
M.Tanhshrink = activation("Tanhshrink", "tanhshrink", {})
--- nn.Threshold(threshold, value [, inplace = false]) -> x where x > threshold, value elsewhere.
M.Threshold = activation("Threshold", "threshold", {{"threshold", nil, "number"}, {"value", nil, "number"}, INPLACE},
                         function(s) return "threshold=" .. g(s.threshold) .. ", value=" .. g(s.value) end)
--- nn.GLU([dim = -1]) -> a * sigmoid(b), a and b the halves of x along dim.
M.GLU = activation("GLU", "glu", {{"dim", -1, "dim"}}, function(s) return "dim=" .. s.dim end)
--- nn.LogSigmoid() -> log(sigmoid(x)), stable for any x.
M.LogSigmoid = activation("LogSigmoid", "logsigmoid", {})
--- nn.Softmin(dim) -> softmax(-x) along dim.
M.Softmin = activation("Softmin", "softmin", {{"dim", nil, "dim"}}, function(s) return "dim=" .. s.dim end)
--- nn.Hardshrink([lambd = 0.5]) -> x where |x| > lambd, 0 elsewhere.
M.Hardshrink = activation("Hardshrink", "hardshrink", {{"lambd", 0.5, "number"}}, function(s) return g(s.lambd) end)
--- nn.Softshrink([lambd = 0.5]) -> x -+ lambd outside [-lambd, lambd], 0 inside.
M.Softshrink = activation("Softshrink", "softshrink", {{"lambd", 0.5, "number"}}, function(s) return g(s.lambd) end)
function M.Softshrink:_check()
  if self.lambd < 0 then raise(string.format("Softshrink: lambd must be >= 0, got %g", self.lambd)) end
end

--- nn.RReLU([lower = 1/8 [, upper = 1/3 [, inplace = false]]]) -> x for x > 0, a * x otherwise.
-- In training mode each a is drawn uniformly from [lower, upper]; in eval mode a = (lower + upper) / 2.
M.RReLU = activation("RReLU", "rrelu", {{"lower", 1 / 8, "number"}, {"upper", 1 / 3, "number"}, INPLACE},
                     function(s) return "lower=" .. g(s.lower) .. ", upper=" .. g(s.upper) end)
M.RReLU._check = ordered("RReLU", "lower", "upper")
function M.RReLU:forward(x)
  check_input(self, x)
  return F.rrelu(x, self.lower, self.upper, self.training, self.inplace)
end
--- nn.PixelShuffle(upscale_factor) -> [*, C * r^2, H, W] rearranged to [*, C, H * r, W * r].
M.PixelShuffle = activation("PixelShuffle", "pixel_shuffle", {{"upscale_factor", nil, "number"}},
                            function(s) return "upscale_factor=" .. g(s.upscale_factor) end)
--- nn.PixelUnshuffle(downscale_factor) -> [*, C, H * r, W * r] rearranged to [*, C * r^2, H, W].
M.PixelUnshuffle = activation("PixelUnshuffle", "pixel_unshuffle", {{"downscale_factor", nil, "number"}},
                              function(s) return "downscale_factor=" .. g(s.downscale_factor) end)
--- nn.LocalResponseNorm(size [, alpha = 1e-4 [, beta = 0.75 [, k = 1]]]) -> F.local_response_norm over the channels (dim 2).
M.LocalResponseNorm = activation("LocalResponseNorm", "local_response_norm",
                                 {{"size", nil, "number"}, {"alpha", 1e-4, "number"}, {"beta", 0.75, "number"},
                                  {"k", 1, "number"}},
                                 function(s) return string.format("%d, alpha=%s, beta=%s, k=%s", s.size, g(s.alpha),
                                                                  g(s.beta), g(s.k)) end)

--- nn.PReLU([num_parameters = 1 [, init = 0.25]] [, {dtype =, device =}]) -> x for x > 0, weight * x otherwise.
-- weight [num_parameters] is learnable; with more than one it is per channel (dim 2 of the input).
M.PReLU = Module:extend("PReLU")
function M.PReLU:init(...)
  local o = options("PReLU", {"num_parameters", "init", "device", "dtype"}, ...)
  local np = o.num_parameters == nil and 1 or o.num_parameters
  if math.type(np) ~= "integer" or np < 1 then
    raise("PReLU: num_parameters must be a positive integer, got " .. tostring(np))
  end
  self.num_parameters = np
  self.init_value = number_arg(o.init, 0.25, "PReLU", "init")
  self.weight = Parameter(ember.full({np}, self.init_value, {dtype = o.dtype, device = o.device}))
end
function M.PReLU:reset_parameters()
  ember.no_grad(function() self.weight:fill_(self.init_value) end)
end
function M.PReLU:extra_repr() return "num_parameters=" .. self.num_parameters end
function M.PReLU:forward(x)
  check_input(self, x)
  return F.prelu(x, self.weight)
end

return M
