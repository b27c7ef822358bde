-- ember.composite.random — PyTorch's sampling functions written over ember's generator
-- (normal, bernoulli and the in-place fills exponential_, geometric_, log_normal_, cauchy_,
-- random_, bernoulli_), the window functions (hann, hamming, blackman, bartlett, kaiser),
-- and the special functions that are also ember.X: i0 (the kaiser window's) and mvlgamma.
-- A part of ember.composite: loaded with it, on first use.
--
-- Every draw comes from ember.rand / ember.randn / ember.randint, so ember.manual_seed
-- repeats it and it runs on every device those run on. The continuous draws are made in
-- float64 (ember's uniform float64 has 2^-32 resolution: the largest exponential draw is
-- 32 log 2) and cast to the target's dtype.
local ember = require "ember"
local errors = require "ember.errors"
local raise, check_tensor, shape_str = errors.raise, errors.check_tensor, errors.shape_str
local args = require "ember.args"
local options = args.options
local inplace = require "ember.composite.inplace"

local functions = {}  -- ember.X
local both = {}       -- ember.X and t:X
local methods = {}    -- t:X

local FLOAT = {float32 = true, float64 = true, float16 = true, bfloat16 = true}

-- the implementations of i0 (and the other Bessel functions) live in ember.special, which
-- loads ember.composite itself: asked for when first called, not when this file loads
local function special() return require "ember.special" end

-- ---- arguments ---------------------------------------------------------------------------

local function check_number(op, what, v)
  if type(v) ~= "number" then raise(string.format("%s: %s must be a number, got %s", op, what, type(v))) end
  return v
end

local function check_integer(op, what, v)
  local i = math.tointeger(v)
  if i == nil then
    raise(string.format("%s: %s must be an integer, got %s", op, what,
                        type(v) == "number" and tostring(v) or type(v)))
  end
  return i
end

-- a size table {d1, d2, ...} of non-negative integers
local function check_size(op, size)
  if type(size) ~= "table" then raise(string.format("%s: size must be a table of integers, got %s", op, type(size))) end
  for i, s in ipairs(size) do
    if math.tointeger(s) == nil or s < 0 then
      raise(string.format("%s: size[%d] must be a non-negative integer, got %s", op, i, tostring(s)))
    end
  end
  return size
end

-- ---- in-place writes ---------------------------------------------------------------------

-- self, checked as the target of the in-place op (ember.composite.inplace's rules) and, when
-- float_only, as a float tensor
local function fill_target(op, self, float_only)
  inplace.check_target(op, self)
  if float_only and not FLOAT[self.dtype] then
    raise(string.format("%s: expected a floating point tensor, got %s", op, self.dtype))
  end
end

-- self:copy_(values) where values were made for self (so of its shape): self. An error of
-- copy_ (self an expanded view, say) is raised at the caller's line, under op's name.
local function write(op, self, values)
  local ok, msg = pcall(ember.no_grad, self.copy_, self, values)
  if not ok then raise(op .. ": " .. tostring(msg):gsub("^[^:]*:%d+: ", "", 1)) end
  return self
end

-- the in-place form of an elementwise f: f(self, ...) written into self, whose dtype must
-- hold the (float) result
local function elementwise_inplace(name, f)
  local op = name .. "_"
  return function(self, ...)
    inplace.check_target(op, self)
    return inplace.into(op, self, f(self, ...))
  end
end

-- uniform numbers in [0, 1), float64, of t's shape, on its device
local function uniform_like(t)
  return ember.rand(t.shape, {dtype = "float64", device = t.device})
end

-- ---- normal ------------------------------------------------------------------------------

-- mean and std as tensors, or one of them as a number: the result's dtype and device and
-- the shape both broadcast to
local function normal_tensors(mean, std)
  local mt, st = ember.is_tensor(mean), ember.is_tensor(std)
  local first = mt and mean or std
  local dtype = first.dtype   -- mean's dtype when mean is a tensor, as PyTorch
  if not FLOAT[dtype] then
    raise(string.format("normal: expected a floating point %s, got %s", mt and "mean" or "std", dtype))
  end
  if mt and st and mean.device ~= std.device then
    raise(string.format("normal: mean is on %s but std on %s", mean.device, std.device))
  end
  if st then
    if std.dtype == "bool" then raise("normal: std must be a float or integer tensor, got bool") end
    -- PyTorch reads every std (NaN fails too)
    if std:numel() > 0 and not ember.no_grad(function() return std:ge(0):all():item() end) then
      raise("normal: expected all elements of std >= 0.0")
    end
  end
  local shape
  if mt and st then
    local ok, zero = pcall(function() return mean:detach():mul(0) + std:detach():mul(0) end)
    if not ok then
      raise(string.format("normal: mean %s and std %s do not broadcast", shape_str(mean), shape_str(std)))
    end
    shape = zero.shape
  else
    shape = first.shape
  end
  return shape, dtype, first.device
end

-- a number std: >= 0 (NaN is not)
-- f(...) drawing from o.generator (nil: the default generator), and o.generator checked
local function drawing(op, o, f, ...) return args.drawing(op, o.generator, f, ...) end
local function generator_of(op, o) return args.generator(op, o.generator) end

local function check_std(std)
  check_number("normal", "std", std)
  if not (std >= 0) then raise(string.format("normal: expected std >= 0.0, got std = %s", tostring(std))) end
end

--- ember.normal(mean, std [, size] [, {generator, dtype, device, requires_grad}]) -> normal draws.
-- Tensors mean and/or std broadcast to the result's shape (a number std defaults to 1);
-- both numbers need a size. The result is mean + std * randn: differentiable in a tensor
-- mean (gradient 1) and std (gradient (result - mean) / std), as PyTorch's.
function functions.normal(mean, std, ...)
  local mt, st = ember.is_tensor(mean), ember.is_tensor(std)
  if mt or st then
    if not mt then check_number("normal", "mean", mean) end
    if std == nil then std = 1.0 end
    if not st then check_std(std) end
    local first = ...
    if select("#", ...) > 1 or (first ~= nil and (type(first) ~= "table" or #first > 0 or ember.is_tensor(first))) then
      raise("normal: size and options are only for a number mean and std (the tensors give the shape; {generator = g} may be given)")
    end
    local g = generator_of("normal", options("normal", {"*", "generator"}, ...))
    local shape, dtype, device = normal_tensors(mean, std)
    local z = ember.randn(shape, {dtype = dtype, device = device, generator = g})
    local r = z * std + mean
    if r.dtype ~= dtype then r = r:to(dtype) end
    return r
  end
  check_number("normal", "mean", mean)
  check_std(std)
  local size = ...
  if size == nil then raise("normal: a number mean and std need a size table, as ember.normal(0, 1, {2, 3})") end
  local o = options("normal", {"size", "*", "generator", "dtype", "device", "requires_grad"}, ...)
  check_size("normal", o.size)
  local dtype = o.dtype or ember.get_default_dtype()
  if not FLOAT[dtype] then raise(string.format("normal: expected a floating point dtype, got %s", tostring(dtype))) end
  local r = ember.randn(o.size, {dtype = dtype, device = o.device, generator = generator_of("normal", o)})
  if std ~= 1 then r = r * std end
  if mean ~= 0 then r = r + mean end
  if o.requires_grad then r:requires_grad_() end
  return r
end

-- ---- bernoulli ---------------------------------------------------------------------------

-- p as a number in [0, 1]
local function check_probability(op, p)
  check_number(op, "p", p)
  if not (p >= 0 and p <= 1) then raise(string.format("%s: expected p in [0, 1], got p = %s", op, tostring(p))) end
  return p
end

-- p as a float tensor of probabilities, every one in [0, 1] (NaN is not)
local function check_probabilities(op, p, what)
  if not FLOAT[p.dtype] then raise(string.format("%s: expected floating point probabilities (%s), got %s", op, what, p.dtype)) end
  if p:numel() > 0 and not ember.no_grad(function() return p:ge(0):logical_and(p:le(1)):all():item() end) then
    raise(string.format("%s: expected all probabilities (%s) in [0, 1]", op, what))
  end
end

-- 1 where a uniform draw falls below p (shape of like; p a number or a tensor broadcast to it)
local function draws_below(like, p)
  local u = uniform_like(like)
  if ember.is_tensor(p) then p = p:detach() end
  return u:lt(p)
end

--- ember.bernoulli(input [, p]) -> 0/1 draws in input's dtype and shape: with probabilities
--- input (a float tensor), or with probability p (a number) for every element.
function both.bernoulli(input, ...)
  check_tensor(input, "bernoulli", "input")
  local o = options("bernoulli", {"p", "*", "generator"}, ...)
  if o.p == nil then
    check_probabilities("bernoulli", input, "input")
    return drawing("bernoulli", o, draws_below, input, input):to(input.dtype)
  end
  return drawing("bernoulli", o, draws_below, input, check_probability("bernoulli", o.p)):to(input.dtype)
end

-- t:bernoulli_([p = 0.5]): p a number, or a float tensor that broadcasts to t's shape
function methods.bernoulli_(self, ...)
  fill_target("bernoulli_", self, false)
  local o = options("bernoulli_", {"p", "*", "generator"}, ...)
  local p = o.p == nil and 0.5 or o.p
  if ember.is_tensor(p) then
    check_probabilities("bernoulli_", p, "p")
    local ok, expanded = pcall(p.expand, p, self.shape)
    if not ok then
      raise(string.format("bernoulli_: p of shape %s does not broadcast to self's shape %s", shape_str(p),
                          shape_str(self)))
    end
    p = expanded
  else
    check_probability("bernoulli_", p)
  end
  return write("bernoulli_", self, drawing("bernoulli_", o, draws_below, self, p))
end

-- ---- the in-place fills ------------------------------------------------------------------

-- a parameter that must be > 0 (a number)
local function check_positive(op, what, v)
  check_number(op, what, v)
  if not (v > 0) then raise(string.format("%s: expected %s > 0.0, got %s = %s", op, what, what, tostring(v))) end
  return v
end

-- t:exponential_([lambd = 1]): -log(1 - u) / lambd
function methods.exponential_(self, ...)
  fill_target("exponential_", self, true)
  local o = options("exponential_", {"lambd", "*", "generator"}, ...)
  local lambd = check_positive("exponential_", "lambd", o.lambd == nil and 1 or o.lambd)
  return write("exponential_", self, drawing("exponential_", o, uniform_like, self):neg():log1p():div(-lambd))
end

-- t:geometric_(p): the number of Bernoulli(p) trials up to the first success, >= 1:
-- ceil(log(1 - u) / log(1 - p)), whose distribution function is 1 - (1 - p)^k
function methods.geometric_(self, ...)
  fill_target("geometric_", self, false)
  if self.dtype == "bool" then raise("geometric_: not supported for bool tensors") end
  local o = options("geometric_", {"p", "*", "generator"}, ...)
  local p = o.p
  check_number("geometric_", "p", p)
  if not (p > 0 and p < 1) then raise(string.format("geometric_: expected p in (0, 1), got p = %s", tostring(p))) end
  -- u = 0 gives 0: the one value below the support, moved to 1
  local k = drawing("geometric_", o, uniform_like, self):neg():log1p():div(math.log(1 - p)):ceil():clamp_min(1)
  return write("geometric_", self, k)
end

-- log_normal_'s and cauchy_'s start: self checked, then the options: a location and a
-- scale (> 0), each with its default, and a generator. Returns the options, location, scale.
local function location_scale(op, self, loc, loc_default, scale, scale_default, ...)
  fill_target(op, self, true)
  local o = options(op, {loc, scale, "*", "generator"}, ...)
  local l = check_number(op, loc, o[loc] == nil and loc_default or o[loc])
  return o, l, check_positive(op, scale, o[scale] == nil and scale_default or o[scale])
end

-- t:log_normal_([mean = 1 [, std = 2]]): exp of normal draws of that mean and std
function methods.log_normal_(self, ...)
  local o, mean, std = location_scale("log_normal_", self, "mean", 1, "std", 2, ...)
  local z = ember.randn(self.shape, {dtype = "float64", device = self.device, generator = generator_of("log_normal_", o)})
  return write("log_normal_", self, (z * std + mean):exp())
end

-- t:cauchy_([median = 0 [, sigma = 1]]): median + sigma tan(pi (u - 1/2))
function methods.cauchy_(self, ...)
  local o, median, sigma = location_scale("cauchy_", self, "median", 0, "sigma", 1, ...)
  return write("cauchy_", self, ((drawing("cauchy_", o, uniform_like, self) - 0.5) * math.pi):tan() * sigma + median)
end

-- ---- poisson, binomial: the distributions' exact samplers ------------------------------------

local function discrete_samplers() return require "ember.distributions.discrete" end

local function float_input(op, t, what)
  check_tensor(t, op, what)
  if not t:is_floating_point() then
    raise(string.format("%s: %s must be a floating-point tensor, got %s", op, what, t.dtype))
  end
end

--- ember.poisson(rates [, {generator}]) -> a draw of Poisson(rate) for each element, in the rates'
-- dtype (Knuth's products below rate 10, Hörmann's PTRS from 10 on, as PyTorch's).
function functions.poisson(rates, ...)
  local op = "poisson"
  float_input(op, rates, "input")
  local o = options(op, {"generator"}, ...)
  if rates:numel() > 0 and rates:detach():lt(0):any():item() then
    raise("poisson: invalid Poisson rate, expected rate to be non-negative")
  end
  return discrete_samplers()._poisson_draws(rates:detach(), generator_of(op, o)):to(rates.dtype)
end

--- ember.binomial(count, prob [, {generator}]) -> a draw of Binomial(count, prob) for each element
-- (count and prob broadcast; count <= 0 or prob <= 0 give 0, prob >= 1 gives count).
function functions.binomial(count, prob, ...)
  local op = "binomial"
  float_input(op, count, "count")
  float_input(op, prob, "prob")
  local o = options(op, {"generator"}, ...)
  local n, p = ember.broadcast_tensors(count:detach():to("float64"), prob:detach():to("float64"))
  return discrete_samplers()._binomial_draws(n, p, generator_of(op, o)):to(count.dtype)
end

-- ---- random_ -----------------------------------------------------------------------------

-- PyTorch's bounds of random_ per dtype (inclusive): without arguments [0, top]; from and
-- to - 1 must lie in [bottom, top]. The float dtypes' are the integers they hold exactly.
local RANDOM_RANGE = {
  int64 = {math.mininteger, math.maxinteger}, int32 = {-(1 << 31), (1 << 31) - 1}, int16 = {-32768, 32767},
  int8 = {-128, 127}, uint8 = {0, 255},
  bool = {0, 1}, float64 = {-(1 << 53), 1 << 53}, float32 = {-(1 << 24), 1 << 24},
  float16 = {-(1 << 11), 1 << 11}, bfloat16 = {-(1 << 8), 1 << 8},
}

-- n int64 draws hi * 2^32 + lo, hi uniform in [hi_from, hi_to) and lo in [0, 2^32): randint's
-- multiply-shift is exact for a power-of-two range up to 2^32, so these are uniform over
-- [hi_from 2^32, hi_to 2^32) when hi_to - hi_from is a power of two
local function two_words(hi_from, hi_to, n, device)
  local o = {device = device}
  return ember.randint(hi_from, hi_to, {n}, o) * (1 << 32) + ember.randint(0, 1 << 32, {n}, o)
end

-- n int64 draws uniform in [0, 2^bits), bits <= 63
local function random_bits(bits, n, device)
  if bits <= 32 then return ember.randint(0, 1 << bits, {n}, {device = device}) end
  return two_words(0, 1 << (bits - 32), n, device)
end

-- draw(n) again where accept(v) is false, until it holds everywhere (exact rejection sampling:
-- each accepted value is uniform over the accepted set)
local function redraw_until(v, draw, accept)
  local bad = accept(v):logical_not()
  while bad:any():item() do
    v = v:masked_scatter(bad, draw(bad:sum():item()))
    bad = accept(v):logical_not()
  end
  return v
end

-- n int64 integers uniform in [lo, hi] (Lua integers, lo <= hi, any int64 values)
local function uniform_integers(lo, hi, n, device)
  local span = hi - lo   -- wraps past 2^63: then read as unsigned (math.ult)
  if math.ult(span, 1 << 16) then
    -- randint's bias here is below 2^-16 of a probability; its bounds must be exact doubles
    return ember.randint(0, span + 1, {n}, {device = device}) + lo
  end
  if span < 0 then   -- wider than 2^63: draw any int64 and keep those in range
    local function draw(m) return two_words(-(1 << 31), 1 << 31, m, device) end
    return redraw_until(draw(n), draw, function(v) return v:ge(lo):logical_and(v:le(hi)) end)
  end
  local bits = 0
  while bits < 63 and (span >> bits) ~= 0 do bits = bits + 1 end
  local function draw(m) return random_bits(bits, m, device) end
  return redraw_until(draw(n), draw, function(v) return v:le(span) end) + lo
end

-- t:random_([from,] to): integers uniform in [from, to); t:random_() over the dtype's range
function methods.random_(self, ...)
  fill_target("random_", self, false)
  local o = options("random_", {"from", "to", "*", "generator"}, ...)
  local first, second = ...
  if o.from ~= nil and o.to == nil and type(first) ~= "table" and (second == nil or type(second) == "table") then
    o.from, o.to = nil, o.from   -- random_(to), from 0
  end
  local range = RANDOM_RANGE[self.dtype]
  local lo = o.from == nil and 0 or check_integer("random_", "from", o.from)
  local hi
  if o.to == nil then
    hi = range[2]
  else
    local to = check_integer("random_", "to", o.to)
    if lo >= to then raise(string.format("random_: expected from < to, got from = %d >= to = %d", lo, to)) end
    hi = to - 1
  end
  if lo > hi then raise(string.format("random_: expected from <= %d (the largest %s), got from = %d", hi, self.dtype, lo)) end
  if lo < range[1] then raise(string.format("random_: from = %d is out of bounds for %s (from %d)", lo, self.dtype, range[1])) end
  if hi > range[2] then
    raise(string.format("random_: to - 1 = %d is out of bounds for %s (up to %d)", hi, self.dtype, range[2]))
  end
  return write("random_", self, drawing("random_", o, uniform_integers, lo, hi, self:numel(), self.device):view(self.shape))
end

-- ---- window functions --------------------------------------------------------------------

-- window_length and the options every window takes (names: its own parameters first); the
-- options and the positions k = 0..n-1 (float64, on the device) with the denominator N - 1
-- of PyTorch's formulas (N = n + 1 for a periodic window, which drops the last point)
local function window_args(op, n, names, ...)
  local o = options(op, names, ...)
  n = check_integer(op, "window_length", n)
  if n < 0 then raise(string.format("%s: requires a non-negative window_length, got %d", op, n)) end
  local dtype = o.dtype or ember.get_default_dtype()
  if not FLOAT[dtype] then raise(string.format("%s: expects a floating point dtype, got %s", op, tostring(dtype))) end
  if o.periodic ~= nil and type(o.periodic) ~= "boolean" then
    raise(string.format("%s: periodic must be a boolean, got %s", op, type(o.periodic)))
  end
  local periodic = o.periodic ~= false
  local k = ember.arange(n, {dtype = "float64", device = o.device})
  return o, k, periodic and n or n - 1, dtype
end

-- the window w (float64, computed where n > 1) in the asked dtype; 1 for a window of one point
local function window_result(o, w, n, dtype)
  if n == 1 then w = ember.ones_like(w) end
  w = w:to(dtype)
  if o.requires_grad then w:requires_grad_() end
  return w
end

local WINDOW_OPTIONS = {"*", "dtype", "device", "requires_grad"}
local function window_names(...)
  local names = {"periodic", ...}
  for _, k in ipairs(WINDOW_OPTIONS) do names[#names + 1] = k end
  return names
end
local HANN, HAMMING, KAISER = window_names(), window_names("alpha", "beta"), window_names("beta")

-- alpha - beta cos(2 pi k / (N - 1))
local function cosine_window(k, last, alpha, beta)
  return (k * (2 * math.pi / math.max(last, 1))):cos() * -beta + alpha
end

--- ember.hann_window(window_length [, periodic = true] [, {dtype, device, requires_grad}])
function functions.hann_window(n, ...)
  local o, k, last, dtype = window_args("hann_window", n, HANN, ...)
  return window_result(o, cosine_window(k, last, 0.5, 0.5), k:numel(), dtype)
end

--- ember.hamming_window(window_length [, periodic = true [, alpha = 0.54 [, beta = 0.46]]] [, {...}])
function functions.hamming_window(n, ...)
  local o, k, last, dtype = window_args("hamming_window", n, HAMMING, ...)
  local alpha = check_number("hamming_window", "alpha", o.alpha == nil and 0.54 or o.alpha)
  local beta = check_number("hamming_window", "beta", o.beta == nil and 0.46 or o.beta)
  return window_result(o, cosine_window(k, last, alpha, beta), k:numel(), dtype)
end

--- ember.blackman_window(window_length [, periodic = true] [, {...}]): 0.42 - 0.5 cos + 0.08 cos(2x)
function functions.blackman_window(n, ...)
  local o, k, last, dtype = window_args("blackman_window", n, HANN, ...)
  local x = k * (2 * math.pi / math.max(last, 1))
  return window_result(o, x:cos() * -0.5 + (x * 2):cos() * 0.08 + 0.42, k:numel(), dtype)
end

--- ember.bartlett_window(window_length [, periodic = true] [, {...}]): 1 - |2k / (N - 1) - 1|
function functions.bartlett_window(n, ...)
  local o, k, last, dtype = window_args("bartlett_window", n, HANN, ...)
  return window_result(o, (k * (2 / math.max(last, 1)) - 1):abs():neg() + 1, k:numel(), dtype)
end

--- ember.kaiser_window(window_length [, periodic = true [, beta = 12]] [, {...}]):
--- i0(beta sqrt(1 - ((k - a) / a)^2)) / i0(beta), a = (N - 1) / 2
function functions.kaiser_window(n, ...)
  local o, k, last, dtype = window_args("kaiser_window", n, KAISER, ...)
  local beta = check_number("kaiser_window", "beta", o.beta == nil and 12 or o.beta)
  local a = math.max(last, 1) / 2
  local r = ((k - a) / a):square():neg():add(1):clamp_min(0):sqrt()
  local i0 = special().i0
  local w = i0(r * beta) / i0(ember.full_like(r, beta))
  return window_result(o, w, k:numel(), dtype)
end

-- ---- special functions that are ember.X too ----------------------------------------------

--- ember.i0(x) -> the modified Bessel function of the first kind of order 0 (ember.special's).
function both.i0(x) return special()._i0(x) end
methods.i0_ = elementwise_inplace("i0", both.i0)

--- ember.mvlgamma(x, p) -> the multivariate log-gamma function of dimension p:
--- sum over j = 0..p-1 of lgamma(x - j/2), plus p (p - 1) / 4 log(pi).
function both.mvlgamma(x, ...)
  check_tensor(x, "mvlgamma", "input")
  local p = options("mvlgamma", {"p"}, ...).p
  p = check_integer("mvlgamma", "p", p)
  if p < 1 then raise(string.format("mvlgamma: p must be >= 1, got %d", p)) end
  if not FLOAT[x.dtype] then x = x:to(ember.get_default_dtype()) end
  local r = x:lgamma()
  for j = 1, p - 1 do r = r + (x - j / 2):lgamma() end
  return r + p * (p - 1) / 4 * math.log(math.pi)
end
methods.mvlgamma_ = elementwise_inplace("mvlgamma", both.mvlgamma)

return {functions = functions, both = both, methods = methods}
