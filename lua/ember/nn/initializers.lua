-- ember.nn.init — in-place initialisers (run under no_grad, so parameters can be
-- initialised directly). The random ones draw from the default generator
-- (ember.manual_seed(s) makes them reproducible) or from the ember.Generator given as
-- their generator option, as PyTorch 2's. Each returns the tensor.
--   nn.init.kaiming_uniform_(layer.weight, {a = math.sqrt(5)})
--   nn.init.zeros_(layer.bias)
local ember = require "ember"
local raise = require("ember.errors").raise
-- PyTorch's optional arguments, positional or in a trailing options table
local args = require "ember.args"
local options = args.options

local init = {}

-- fn(t) without recording, drawing from generator g (nil: the default generator)
local function in_place(t, op, fn, g)
  if not ember.is_tensor(t) then raise("nn.init." .. op .. ": expected a tensor, got " .. type(t)) end
  args.drawing("nn.init." .. op, g, ember.no_grad, function() fn(t) end)
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
    if param ~= nil and (type(param) ~= "number" or param ~= param) then
      raise("nn.init.calculate_gain: leaky_relu's negative slope must be a number, got " .. tostring(param))
    end
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
function init.uniform_(t, ...)
  local o = options("nn.init.uniform_", {"a", "b", "generator"}, ...)
  local a, b = o.a, o.b
  return in_place(t, "uniform_", function(x) x:uniform_(a or 0, b or 1) end, o.generator)
end

--- nn.init.normal_(t [, mean = 0 [, std = 1]]) -> t filled with N(mean, std^2).
function init.normal_(t, ...)
  local o = options("nn.init.normal_", {"mean", "std", "generator"}, ...)
  local mean, std = o.mean, o.std
  return in_place(t, "normal_", function(x) x:normal_(mean or 0, std or 1) end, o.generator)
end

--- nn.init.constant_(t, value) -> t filled with value.
function init.constant_(t, ...)
  local value = options("nn.init.constant_", {"val"}, ...).val
  return in_place(t, "constant_", function(x) x:fill_(value) end)
end

--- nn.init.zeros_(t) -> t filled with 0.
function init.zeros_(t) return in_place(t, "zeros_", function(x) x:fill_(0) end) end

--- nn.init.ones_(t) -> t filled with 1.
function init.ones_(t) return in_place(t, "ones_", function(x) x:fill_(1) end) end

-- kaiming options: (a = 0, mode = "fan_in", nonlinearity = "leaky_relu"), positional or in a table
local function kaiming_std(t, op, ...)
  local opts = options("nn.init." .. op, {"a", "mode", "nonlinearity", "generator"}, ...)
  local mode = opts.mode or "fan_in"
  if mode ~= "fan_in" and mode ~= "fan_out" then
    raise("nn.init." .. op .. ": mode must be \"fan_in\" or \"fan_out\", got " .. tostring(mode))
  end
  local fan_in, fan_out = init.calculate_fan_in_and_fan_out(t)
  local fan = mode == "fan_in" and fan_in or fan_out
  local gain = init.calculate_gain(opts.nonlinearity or "leaky_relu", opts.a or 0)
  if fan == 0 then return 0, opts.generator end
  return gain / math.sqrt(fan), opts.generator
end

--- nn.init.kaiming_uniform_(t [, {a = 0, mode = "fan_in", nonlinearity = "leaky_relu"}]) -> t ~ U(-b, b), b = gain * sqrt(3 / fan).
-- Example: nn.init.kaiming_uniform_(w, {a = math.sqrt(5)})   -- PyTorch's Linear default: b = 1/sqrt(fan_in)
function init.kaiming_uniform_(t, ...)
  local std, g = kaiming_std(t, "kaiming_uniform_", ...)
  local bound = math.sqrt(3) * std
  return in_place(t, "kaiming_uniform_", function(x) x:uniform_(-bound, bound) end, g)
end

--- nn.init.kaiming_normal_(t [, {a = 0, mode = "fan_in", nonlinearity = "leaky_relu"}]) -> t ~ N(0, (gain / sqrt(fan))^2).
function init.kaiming_normal_(t, ...)
  local std, g = kaiming_std(t, "kaiming_normal_", ...)
  return in_place(t, "kaiming_normal_", function(x) x:normal_(0, std) end, g)
end

--- nn.init.xavier_uniform_(t [, gain = 1]) -> t ~ U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).
function init.xavier_uniform_(t, ...)
  local o = options("nn.init.xavier_uniform_", {"gain", "generator"}, ...)
  local fan_in, fan_out = init.calculate_fan_in_and_fan_out(t)
  local bound = (o.gain or 1) * math.sqrt(6 / (fan_in + fan_out))
  return in_place(t, "xavier_uniform_", function(x) x:uniform_(-bound, bound) end, o.generator)
end

--- nn.init.xavier_normal_(t [, gain = 1]) -> t ~ N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)).
function init.xavier_normal_(t, ...)
  local o = options("nn.init.xavier_normal_", {"gain", "generator"}, ...)
  local fan_in, fan_out = init.calculate_fan_in_and_fan_out(t)
  local std = (o.gain or 1) * math.sqrt(2 / (fan_in + fan_out))
  return in_place(t, "xavier_normal_", function(x) x:normal_(0, std) end, o.generator)
end

-- ---- structured initialisers ------------------------------------------------------------
-- Built from host values (plain Lua), then copied into the tensor: they run once per
-- parameter, so speed does not matter, and the host code needs no op the engine lacks.

local function shape_of(t) return "[" .. table.concat(t.shape, ", ") .. "]" end

-- fills t (any device and float dtype) with the flat list of host numbers vals
local function fill_from(t, vals)
  local src = ember.tensor(vals, {dtype = "float64"}):reshape(t.shape)
  t:copy_(src:to(t.dtype):to(t.device))
end

--- nn.init.eye_(t) -> the 2-D t set to the identity (ones on the diagonal, zeros elsewhere; any shape [n, m]).
-- Example: nn.init.eye_(ember.empty(2, 3))
function init.eye_(t)
  if not ember.is_tensor(t) or t.ndim ~= 2 then
    raise("nn.init.eye_: expected a 2-D tensor, got " .. (ember.is_tensor(t) and shape_of(t) or type(t)))
  end
  return in_place(t, "eye_", function(x) x:copy_(ember.eye(x.shape[1], x.shape[2], {dtype = x.dtype, device = x.device})) end)
end

--- nn.init.dirac_(t [, groups = 1]) -> the 3-, 4- or 5-D convolution weight t set to the identity (Dirac delta).
-- Each of the groups maps its input channel c to output channel c at the kernel's centre,
-- so a convolution with it keeps (as many as fit of) the input channels.
function init.dirac_(t, ...)
  local groups = options("nn.init.dirac_", {"groups"}, ...).groups
  groups = groups == nil and 1 or groups
  if not ember.is_tensor(t) or t.ndim < 3 or t.ndim > 5 then
    raise("nn.init.dirac_: expected a 3-, 4- or 5-D tensor, got " .. (ember.is_tensor(t) and shape_of(t) or type(t)))
  end
  if math.type(groups) ~= "integer" or groups < 1 or t.shape[1] % groups ~= 0 then
    raise(string.format("nn.init.dirac_: groups must be a positive integer dividing dim 1 of %s, got %s", shape_of(t),
                        tostring(groups)))
  end
  local shape = t.shape
  local per_group = shape[1] // groups
  local n = 1
  local strides = {}
  for i = #shape, 1, -1 do strides[i] = n; n = n * shape[i] end
  local vals = {}
  for i = 1, n do vals[i] = 0 end
  for g = 0, groups - 1 do
    for d = 0, math.min(per_group, shape[2]) - 1 do
      local off = (g * per_group + d) * strides[1] + d * strides[2]
      for k = 3, #shape do off = off + (shape[k] // 2) * strides[k] end
      vals[off + 1] = 1
    end
  end
  return in_place(t, "dirac_", function(x) if n > 0 then fill_from(x, vals) end end)
end

-- the m x n host matrix a (rows of numbers, m >= n) -> its Q factor [m x n] with a
-- positive diagonal of R (unique); modified Gram-Schmidt, each column orthogonalised twice
local function gram_schmidt(a, m, n)
  local q = {}
  for j = 1, n do
    local v = {}
    for i = 1, m do v[i] = a[i][j] end
    for _ = 1, 2 do
      for k = 1, j - 1 do
        local qk, dot = q[k], 0
        for i = 1, m do dot = dot + qk[i] * v[i] end
        for i = 1, m do v[i] = v[i] - dot * qk[i] end
      end
    end
    local norm = 0
    for i = 1, m do norm = norm + v[i] * v[i] end
    norm = math.sqrt(norm)
    if norm == 0 then raise("nn.init.orthogonal_: the random matrix was singular; call it again") end
    for i = 1, m do v[i] = v[i] / norm end
    q[j] = v
  end
  return q   -- q[j] is column j
end

--- nn.init.orthogonal_(t [, gain = 1]) -> t (at least 2-D, seen as [rows, numel / rows]) set to a random (semi-)orthogonal matrix times gain.
-- As PyTorch: the Q factor of a QR decomposition of a standard normal matrix, with R's
-- diagonal made positive; rows orthonormal when rows <= cols, columns orthonormal otherwise.
-- Example: local w = nn.init.orthogonal_(ember.empty(3, 5)); print(w:matmul(w:t()))   -- the identity
function init.orthogonal_(t, ...)
  local o = options("nn.init.orthogonal_", {"gain", "generator"}, ...)
  local gain = o.gain == nil and 1 or o.gain
  if not ember.is_tensor(t) or t.ndim < 2 then
    raise("nn.init.orthogonal_: expected a tensor with at least 2 dims, got " .. (ember.is_tensor(t) and shape_of(t) or type(t)))
  end
  if type(gain) ~= "number" then raise("nn.init.orthogonal_: gain must be a number, got " .. tostring(gain)) end
  local rows = t.shape[1]
  local cols = rows > 0 and t:numel() // rows or 0
  if rows == 0 or cols == 0 then return t end
  local tall = rows >= cols
  local m, n = tall and rows or cols, tall and cols or rows
  local a = ember.randn(m, n, {dtype = "float64", generator = args.generator("nn.init.orthogonal_", o.generator)}):tolist()
  local q = gram_schmidt(a, m, n)
  local vals = {}
  -- tall: t[i][j] = q[j][i]; wide: t = Q^T, t[i][j] = q[i][j]
  for i = 1, rows do
    for j = 1, cols do vals[(i - 1) * cols + j] = gain * (tall and q[j][i] or q[i][j]) end
  end
  return in_place(t, "orthogonal_", function(x) fill_from(x, vals) end)
end

--- nn.init.sparse_(t, sparsity [, std = 0.01]) -> the 2-D t drawn from N(0, std^2), then in each column ceil(sparsity * rows) random entries set to 0.
-- Example: nn.init.sparse_(ember.empty(10, 4), 0.3)   -- 3 zeros per column
function init.sparse_(t, ...)
  local o = options("nn.init.sparse_", {"sparsity", "std", "generator"}, ...)
  local sparsity, std = o.sparsity, o.std
  if not ember.is_tensor(t) or t.ndim ~= 2 then
    raise("nn.init.sparse_: expected a 2-D tensor, got " .. (ember.is_tensor(t) and shape_of(t) or type(t)))
  end
  if type(sparsity) ~= "number" or not (sparsity >= 0 and sparsity <= 1) then
    raise("nn.init.sparse_: sparsity must be a fraction in [0, 1], got " .. tostring(sparsity))
  end
  std = std == nil and 0.01 or std
  if type(std) ~= "number" or std < 0 then raise("nn.init.sparse_: std must be a number >= 0, got " .. tostring(std)) end
  local rows, cols = t.shape[1], t.shape[2]
  local zeros = math.ceil(sparsity * rows)
  local g = args.generator("nn.init.sparse_", o.generator)
  local mask = {}
  for i = 1, rows do mask[i] = {} for j = 1, cols do mask[i][j] = false end end
  for j = 1, cols do
    local perm = rows > 0 and ember.randperm(rows, {generator = g}):tolist() or {}
    for k = 1, zeros do mask[perm[k]][j] = true end
  end
  return in_place(t, "sparse_", function(x)
    x:normal_(0, std)
    if rows > 0 and cols > 0 then x:masked_fill_(ember.tensor(mask, {device = x.device}), 0) end
  end, g)
end

-- erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1 3 5 ... (2n+1)): positive terms,
-- no cancellation; |x| >= 6 is +-1 to double precision
local function erf(x)
  if x ~= x then return x end
  if x >= 6 then return 1 end
  if x <= -6 then return -1 end
  local term, sum, n = x, x, 0
  while math.abs(term) > 1e-17 * math.abs(sum) do
    n = n + 1
    term = term * 2 * x * x / (2 * n + 1)
    sum = sum + term
  end
  return 2 / math.sqrt(math.pi) * math.exp(-x * x) * sum
end
init._erf = erf

-- the inverse of erf on (-1, 1) by Newton's method from a rough start (+-inf at +-1)
local function erfinv(y)
  if y <= -1 then return -math.huge end
  if y >= 1 then return math.huge end
  if y == 0 then return 0 end
  -- Giles' single-precision approximation as the start
  local w = -math.log((1 - y) * (1 + y))
  local x
  if w < 5 then
    w = w - 2.5
    local p = 2.81022636e-08
    for _, c in ipairs{3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                       -0.00417768164, 0.246640727, 1.50140941} do p = c + p * w end
    x = p * y
  else
    w = math.sqrt(w) - 3
    local p = -0.000200214257
    for _, c in ipairs{0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                       0.00943887047, 1.00167406, 2.83297682} do p = c + p * w end
    x = p * y
  end
  for _ = 1, 4 do
    local d = 2 / math.sqrt(math.pi) * math.exp(-x * x)
    if d == 0 then break end
    x = x - (erf(x) - y) / d
  end
  return x
end
init._erfinv = erfinv

--- nn.init.trunc_normal_(t [, mean = 0 [, std = 1 [, a = -2 [, b = 2]]]]) -> t drawn from N(mean, std^2) truncated to [a, b].
-- PyTorch's inverse-CDF method: u uniform between the CDF values of a and b, then
-- mean + std sqrt(2) erfinv(2u - 1), clamped to [a, b]. Options-table form: {mean=, std=, a=, b=}.
-- Example: nn.init.trunc_normal_(ember.empty(3, 4), 0, 0.02, -0.04, 0.04)
function init.trunc_normal_(t, ...)
  local o = options("nn.init.trunc_normal_", {"mean", "std", "a", "b", "generator"}, ...)
  local mean, std, a, b = o.mean, o.std, o.a, o.b
  mean, std = mean == nil and 0 or mean, std == nil and 1 or std
  a, b = a == nil and -2 or a, b == nil and 2 or b
  if not ember.is_tensor(t) then raise("nn.init.trunc_normal_: expected a tensor, got " .. type(t)) end
  for _, v in ipairs{{mean, "mean"}, {std, "std"}, {a, "a"}, {b, "b"}} do
    if type(v[1]) ~= "number" or v[1] ~= v[1] then
      raise("nn.init.trunc_normal_: " .. v[2] .. " must be a number, got " .. tostring(v[1]))
    end
  end
  if std <= 0 then raise("nn.init.trunc_normal_: std must be > 0, got " .. tostring(std)) end
  if not (a < b) then raise(string.format("nn.init.trunc_normal_: a (%g) must be less than b (%g)", a, b)) end
  local function cdf(x) return (1 + erf(x / math.sqrt(2))) / 2 end
  local l, u = cdf((a - mean) / std), cdf((b - mean) / std)
  local n = t:numel()
  if n == 0 then return t end
  local us = ember.rand(n, {dtype = "float64", generator = args.generator("nn.init.trunc_normal_", o.generator)}):tolist()
  local vals = {}
  for i = 1, n do
    local y = (2 * l - 1) + (2 * u - 2 * l) * us[i]
    local x = mean + std * math.sqrt(2) * erfinv(y)
    vals[i] = math.min(math.max(x, a), b)
  end
  return in_place(t, "trunc_normal_", function(x) fill_from(x, vals) end)
end

-- PyTorch's deprecated names without the trailing underscore (torch.nn.init.uniform, ...):
-- the same functions as the underscore forms (PyTorch's also warn that they are deprecated).
for _, k in ipairs{"uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
                   "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"} do
  init[k] = init[k .. "_"]
end

return init
