-- ember.nn.init — in-place initialisers (run under no_grad, so parameters can be
-- initialised directly). They draw from ember's generator: ember.manual_seed(s)
-- makes them reproducible. Each returns the tensor.
--   nn.init.kaiming_uniform_(layer.weight, {a = math.sqrt(5)})
--   nn.init.zeros_(layer.bias)
local ember = require "ember"
local raise = require("ember.errors").raise

local init = {}

local function in_place(t, op, fn)
  if not ember.is_tensor(t) then raise("nn.init." .. op .. ": expected a tensor, got " .. type(t)) end
  ember.no_grad(function() fn(t) end)
  return t
end

--- nn.init.calculate_gain(nonlinearity [, param]) -> the recommended gain (PyTorch's table).
-- Example: nn.init.calculate_gain("relu")  -- sqrt(2)
function init.calculate_gain(nonlinearity, param)
  local linear = {linear = 1, identity = 1, sigmoid = 1, conv1d = 1, conv2d = 1, conv3d = 1,
                  conv_transpose1d = 1, conv_transpose2d = 1, conv_transpose3d = 1}
  if linear[nonlinearity] then return 1 end
  if nonlinearity == "tanh" then return 5 / 3 end
  if nonlinearity == "relu" then return math.sqrt(2) end
  if nonlinearity == "selu" then return 3 / 4 end
  if nonlinearity == "leaky_relu" then
    local slope = param or 0.01
    return math.sqrt(2 / (1 + slope * slope))
  end
  raise("nn.init.calculate_gain: unsupported nonlinearity " .. tostring(nonlinearity))
end

--- nn.init.calculate_fan_in_and_fan_out(t) -> fan_in, fan_out (t has at least 2 dims: [out, in, ...]).
function init.calculate_fan_in_and_fan_out(t)
  local shape = t.shape
  if #shape < 2 then
    raise("nn.init: fan in and fan out need a tensor with at least 2 dimensions, got shape ["
          .. table.concat(shape, ", ") .. "]")
  end
  local receptive = 1
  for i = 3, #shape do receptive = receptive * shape[i] end
  return shape[2] * receptive, shape[1] * receptive
end

--- nn.init.uniform_(t [, a = 0 [, b = 1]]) -> t filled with U(a, b).
function init.uniform_(t, a, b)
  return in_place(t, "uniform_", function(x) x:uniform_(a or 0, b or 1) end)
end

--- nn.init.normal_(t [, mean = 0 [, std = 1]]) -> t filled with N(mean, std^2).
function init.normal_(t, mean, std)
  return in_place(t, "normal_", function(x) x:normal_(mean or 0, std or 1) end)
end

--- nn.init.constant_(t, value) -> t filled with value.
function init.constant_(t, value)
  return in_place(t, "constant_", function(x) x:fill_(value) end)
end

--- nn.init.zeros_(t) -> t filled with 0.
function init.zeros_(t) return in_place(t, "zeros_", function(x) x:fill_(0) end) end

--- nn.init.ones_(t) -> t filled with 1.
function init.ones_(t) return in_place(t, "ones_", function(x) x:fill_(1) end) end

-- kaiming options: a number (the negative slope a) or {a = 0, mode = "fan_in", nonlinearity = "leaky_relu"}
local function kaiming_std(t, opts, op)
  if type(opts) == "number" then opts = {a = opts} end
  opts = opts or {}
  local mode = opts.mode or "fan_in"
  if mode ~= "fan_in" and mode ~= "fan_out" then
    raise("nn.init." .. op .. ": mode must be \"fan_in\" or \"fan_out\", got " .. tostring(mode))
  end
  local fan_in, fan_out = init.calculate_fan_in_and_fan_out(t)
  local fan = mode == "fan_in" and fan_in or fan_out
  local gain = init.calculate_gain(opts.nonlinearity or "leaky_relu", opts.a or 0)
  if fan == 0 then return 0 end
  return gain / math.sqrt(fan)
end

--- nn.init.kaiming_uniform_(t [, {a = 0, mode = "fan_in", nonlinearity = "leaky_relu"}]) -> t ~ U(-b, b), b = gain * sqrt(3 / fan).
-- Example: nn.init.kaiming_uniform_(w, {a = math.sqrt(5)})   -- PyTorch's Linear default: b = 1/sqrt(fan_in)
function init.kaiming_uniform_(t, opts)
  local bound = math.sqrt(3) * kaiming_std(t, opts, "kaiming_uniform_")
  return in_place(t, "kaiming_uniform_", function(x) x:uniform_(-bound, bound) end)
end

--- nn.init.kaiming_normal_(t [, {a = 0, mode = "fan_in", nonlinearity = "leaky_relu"}]) -> t ~ N(0, (gain / sqrt(fan))^2).
function init.kaiming_normal_(t, opts)
  local std = kaiming_std(t, opts, "kaiming_normal_")
  return in_place(t, "kaiming_normal_", function(x) x:normal_(0, std) end)
end

--- nn.init.xavier_uniform_(t [, gain = 1]) -> t ~ U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).
function init.xavier_uniform_(t, gain)
  if type(gain) == "table" then gain = gain.gain end
  local fan_in, fan_out = init.calculate_fan_in_and_fan_out(t)
  local bound = (gain or 1) * math.sqrt(6 / (fan_in + fan_out))
  return in_place(t, "xavier_uniform_", function(x) x:uniform_(-bound, bound) end)
end

--- nn.init.xavier_normal_(t [, gain = 1]) -> t ~ N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)).
function init.xavier_normal_(t, gain)
  if type(gain) == "table" then gain = gain.gain end
  local fan_in, fan_out = init.calculate_fan_in_and_fan_out(t)
  local std = (gain or 1) * math.sqrt(2 / (fan_in + fan_out))
  return in_place(t, "xavier_normal_", function(x) x:normal_(0, std) end)
end

return init
