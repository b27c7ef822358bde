-- ember.nn.extra — more of torch.nn.functional and torch.nn: power-average pooling
-- (lp_pool1d/2d/3d, nn.LPPool1d/2d/3d), pdist, gumbel_softmax,
-- triplet_margin_with_distance_loss (nn.TripletMarginWithDistanceLoss) and
-- multilabel_margin_loss (nn.MultiLabelMarginLoss). Composed from ember ops, so autograd
-- records them and they run on every backend.
--
-- functional.lua and layers.lua merge this file's two tables while they are still loading,
-- so nothing here requires ember.nn.functional, ember.nn or ember.nn.layers when the file
-- loads; the functions require them when called.
local ember = require "ember"
local errors = require "ember.errors"
local base = require "ember.nn.module"
local options = require("ember.args").options

local raise, shape_str, check_tensor = errors.raise, errors.shape_str, errors.check_tensor
local Module = base.Module
local autocast = ember._autocast

local Fx, Lx = {}, {}

local function functional() return require "ember.nn.functional" end

local function check_float(x, op, what)
  check_tensor(x, op, what or "input")
  if not x:is_floating_point() then
    raise(string.format("%s: expected a floating-point %s, got %s %s", op, what or "input", x.dtype, shape_str(x)))
  end
end

-- a wrong argument v as an error message shows it: numbers, booleans and strings as they
-- are, a tensor by its dtype and shape, anything else by its type
local function shown(v)
  if type(v) == "number" then return v ~= v and "nan" or tostring(v) end
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) == "boolean" or v == nil then return tostring(v) end
  if ember.is_tensor(v) then return "a tensor (" .. v.dtype .. " " .. shape_str(v) .. ")" end
  return "a " .. type(v)
end

-- v as a number option (default when nil), or an error naming op and the option
local function number_opt(v, default, op, name)
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v then raise(string.format("%s: %s must be a number, got %s", op, name, shown(v))) end
  return v
end

local function bool_opt(v, default, op, name) return require("ember.composite.checks").boolean(op, name, v, default) end

-- fn(...) with an engine error raised again at the user's line, prefixed by op unless
-- the message already starts with it
local function call(op, fn, ...)
  local r = table.pack(pcall(fn, ...))
  if r[1] then return table.unpack(r, 2, r.n) end
  local msg = tostring(r[2]):gsub("^[^:]*:%d+: ", "", 1)
  if msg:sub(1, #op + 1) ~= op .. ":" then msg = op .. ": " .. msg end
  raise(msg)
end

-- "[3, 3]" for lists, the value itself otherwise (as the pooling layers print)
local function show(v)
  if type(v) == "table" then
    local parts = {}
    for i = 1, #v do parts[i] = tostring(v[i]) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return tostring(v)
end

-- ---- power-average pooling -------------------------------------------------------------

local function check_norm_type(p, op)
  if type(p) ~= "number" or p ~= p or p == 0 then
    raise(string.format("%s: norm_type must be a non-zero number (math.huge: max |x|, -math.huge: min |x|), got %s",
                        op, shown(p)))
  end
end

-- the checked window of lp_poolNd: kernel sizes (a list), stride as given (kernel_size when nil)
local function lp_window(op, nd, kernel_size, stride)
  local sizes = functional()._sizes
  local k = sizes(kernel_size, nd, op, "kernel_size", 1)
  if stride ~= nil then sizes(stride, nd, op, "stride", 1) end
  return k, stride == nil and kernel_size or stride
end

local function lp_pool(nd, x, norm_type, kernel_size, ...)
  local op = "lp_pool" .. nd .. "d"
  local o = options(op, {"stride", "ceil_mode"}, ...)
  check_float(x, op)
  check_norm_type(norm_type, op)
  if x.ndim ~= nd + 1 and x.ndim ~= nd + 2 then
    raise(string.format("%s: expected a %d-D (unbatched [C, ...]) or %d-D (batched [N, C, ...]) input, got %s", op,
                        nd + 1, nd + 2, shape_str(x)))
  end
  local k, stride = lp_window(op, nd, kernel_size, o.stride)
  local ceil_mode = bool_opt(o.ceil_mode, false, op, "ceil_mode")
  -- as PyTorch: the infinite norms are max pools of |x| (ties: the max pool's gradient)
  if norm_type == math.huge then
    return call(op, ember["max_pool" .. nd .. "d"], x:abs(), kernel_size, stride, 0, 1, ceil_mode)
  elseif norm_type == -math.huge then
    return -call(op, ember["max_pool" .. nd .. "d"], -x:abs(), kernel_size, stride, 0, 1, ceil_mode)
  end
  local out = call(op, ember["avg_pool" .. nd .. "d"], x:pow(norm_type), kernel_size, stride, 0, ceil_mode)
  local n = 1
  for _, s in ipairs(k) do n = n * s end
  -- PyTorch's sign(out) * relu(|out|): a window whose sum is 0 gets a zero gradient (relu's
  -- backward masks the infinite slope of pow(1/p) at 0)
  return (out:sign() * out:abs():relu()):mul(n):pow(1 / norm_type)
end

--- F.lp_pool1d(x, norm_type, kernel_size [, stride = kernel_size [, ceil_mode = false]]) -> (sum over windows of x^p)^(1/p).
function Fx.lp_pool1d(x, norm_type, kernel_size, ...) return lp_pool(1, x, norm_type, kernel_size, ...) end
--- F.lp_pool2d(x, norm_type, kernel_size [, stride = kernel_size [, ceil_mode = false]]) -> power-average pooling over 2-D windows.
function Fx.lp_pool2d(x, norm_type, kernel_size, ...) return lp_pool(2, x, norm_type, kernel_size, ...) end
--- F.lp_pool3d(x, norm_type, kernel_size [, stride = kernel_size [, ceil_mode = false]]) -> power-average pooling over 3-D windows.
function Fx.lp_pool3d(x, norm_type, kernel_size, ...) return lp_pool(3, x, norm_type, kernel_size, ...) end

local function lp_pool_class(name, nd)
  local cls = Module:extend(name)
  local fn_name = "lp_pool" .. nd .. "d"
  function cls:init(norm_type, kernel_size, ...)
    local o = options(name, {"stride", "ceil_mode"}, ...)
    check_norm_type(norm_type, name)
    lp_window(name, nd, kernel_size, o.stride)
    self.norm_type = norm_type
    self.kernel_size = kernel_size
    self.stride = o.stride
    self.ceil_mode = bool_opt(o.ceil_mode, false, name, "ceil_mode")
  end
  function cls:extra_repr()
    return string.format("norm_type=%s, kernel_size=%s, stride=%s, ceil_mode=%s", show(self.norm_type),
                         show(self.kernel_size), show(self.stride), tostring(self.ceil_mode))
  end
  function cls:forward(x)
    Module._check_input(self, x)
    return Fx[fn_name](x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)
  end
  return cls
end

--- nn.LPPool1d(norm_type, kernel_size [, stride = kernel_size [, ceil_mode = false]]) -> F.lp_pool1d as a module.
Lx.LPPool1d = lp_pool_class("LPPool1d", 1)
--- nn.LPPool2d(norm_type, kernel_size [, stride = kernel_size [, ceil_mode = false]]) -> F.lp_pool2d as a module.
Lx.LPPool2d = lp_pool_class("LPPool2d", 2)
--- nn.LPPool3d(norm_type, kernel_size [, stride = kernel_size [, ceil_mode = false]]) -> F.lp_pool3d as a module.
Lx.LPPool3d = lp_pool_class("LPPool3d", 3)

-- ---- pdist -----------------------------------------------------------------------------

--- F.pdist(x [, p = 2]) -> the p-norm distances between the rows of x [N, M], [N (N - 1) / 2].
-- Row pairs (i, j), i < j, i outer (PyTorch's order). Gradients are PyTorch's: 0 where
-- the distance is 0 and, for p < 1, where an element difference is 0; p = math.huge gives
-- every tied element the full gradient.
function Fx.pdist(x, ...)
  local op = "pdist"
  local o = options(op, {"p"}, ...)
  x = autocast("fp32", x)
  check_float(x, op)
  if x.ndim ~= 2 then raise(string.format("%s: expected a 2-D input [N, M], got %s", op, shape_str(x))) end
  local p = number_opt(o.p, 2, op, "p")
  if p < 0 then raise(string.format("%s: p must be a non-negative number, got %s", op, shown(p))) end
  local n = x.shape[1]
  local idx = ember.triu_indices(n, n, 1, {device = x.device})
  local diff = x:index_select(1, idx:select(1, 1)) - x:index_select(1, idx:select(1, 2))   -- [P, M]
  if p == 0 then
    -- the count of differing elements; no gradient, but the result stays in the graph
    local none = ember.zeros_like(diff, {dtype = "bool"})
    return diff:ne(0):to(diff.dtype):sum(2) + ember.where(none, diff, 0):sum(2)
  end
  local a = diff:abs()
  if p == math.huge then
    local ad = a:detach()
    local m = ad:amax(2, true)
    local tied = ad:eq(m):logical_and(ad:isfinite())
    -- the value is the max; each element equal to it gets the gradient sign(diff)
    return m:squeeze(2) + ember.where(tied, a - ad, 0):sum(2)
  end
  if p == 1 then return a:sum(2) end
  -- |diff|^p with a zero (not NaN) gradient where diff is 0, and the root with a zero
  -- gradient where the sum is 0 (where() sends no gradient to the branch it drops)
  local s
  if p == 2 then
    s = (diff * diff):sum(2)
  else
    local zero = a:eq(0)
    s = ember.where(zero, 0, ember.where(zero, 1, a):pow(p)):sum(2)
  end
  local s0 = s:eq(0)
  local safe = ember.where(s0, 1, s)
  return ember.where(s0, 0, p == 2 and safe:sqrt() or safe:pow(1 / p))
end

-- ---- gumbel_softmax ----------------------------------------------------------------------

--- F.gumbel_softmax(logits [, tau = 1 [, hard = false [, eps [, dim = -1]]]]) -> softmax((logits + g) / tau, dim), g ~ Gumbel(0, 1).
-- hard: the one-hot of the argmax, with the soft sample's gradient (straight through).
-- eps is accepted and ignored (deprecated in PyTorch). Draws from ember's generator.
function Fx.gumbel_softmax(logits, ...)
  local op = "gumbel_softmax"
  local o = options(op, {"tau", "hard", "eps", "dim"}, ...)
  check_float(logits, op, "logits")
  local tau = number_opt(o.tau, 1, op, "tau")
  local hard = bool_opt(o.hard, false, op, "hard")
  number_opt(o.eps, 1e-10, op, "eps")
  local dim = o.dim == nil and -1 or o.dim
  local n = math.max(logits.ndim, 1)
  local d = type(dim) == "number" and math.tointeger(dim) or nil
  if not d or d == 0 or d > n or d < -n then
    raise(string.format("%s: dim must be an integer in 1..%d or -%d..-1 for logits %s, got %s", op, n, n,
                        shape_str(logits), shown(dim)))
  end
  local gumbels = -ember.empty_like(logits):exponential_():log()
  local y = ((logits + gumbels) / tau):softmax(d)
  if not hard then return y end
  local _, index = y:max(d, true)
  local y_hard = ember.zeros_like(logits):scatter(d, index, 1)
  return y_hard - y:detach() + y
end

-- ---- triplet_margin_with_distance_loss ---------------------------------------------------

local is_callable = require("ember.args").is_callable

local function reduce(loss, reduction) return functional()._reduce(loss, reduction) end

local twd_names = {"*", "distance_function", "margin", "swap", "reduction"}

local function twd_margin(v, op)
  local margin = number_opt(v, 1, op, "margin")
  if margin <= 0 then raise(string.format("%s: margin must be greater than 0, got %s", op, shown(margin))) end
  return margin
end

--- F.triplet_margin_with_distance_loss(anchor, positive, negative [, {distance_function = F.pairwise_distance, margin = 1, swap = false, reduction = "mean"}]) -> max(0, margin + d(a, p) - d(a, n)).
-- distance_function(x1, x2) -> a tensor of distances (a function or a module);
-- swap: the negative distance is min(d(a, n), d(p, n)).
function Fx.triplet_margin_with_distance_loss(anchor, positive, negative, ...)
  local op = "triplet_margin_with_distance_loss"
  local o = options(op, twd_names, ...)
  local reduction = functional().check_reduction(o.reduction, op)
  local margin = twd_margin(o.margin, op)
  local swap = bool_opt(o.swap, false, op, "swap")
  check_tensor(anchor, op, "anchor")
  check_tensor(positive, op, "positive")
  check_tensor(negative, op, "negative")
  if anchor.ndim ~= positive.ndim or positive.ndim ~= negative.ndim then
    raise(string.format("%s: anchor, positive and negative must have the same number of dims, got anchor %s, "
                          .. "positive %s and negative %s", op, shape_str(anchor), shape_str(positive),
                        shape_str(negative)))
  end
  local dist = o.distance_function
  if dist == nil then
    dist = functional().pairwise_distance
  elseif not is_callable(dist) then
    raise(string.format("%s: distance_function must be a function or a module, got %s", op, type(dist)))
  end
  local function d(x1, x2, what)
    local v = dist(x1, x2)
    if not ember.is_tensor(v) then
      raise(string.format("%s: distance_function(%s) must return a tensor, got %s", op, what, type(v)))
    end
    return v
  end
  local d_pos = d(anchor, positive, "anchor, positive")
  local d_neg = d(anchor, negative, "anchor, negative")
  if swap then d_neg = ember.minimum(d_neg, d(positive, negative, "positive, negative")) end
  local loss = call(op, function() return (d_pos + margin - d_neg):clamp_min(0) end)
  return reduce(loss, reduction)
end

--- nn.TripletMarginWithDistanceLoss([{distance_function = nn.PairwiseDistance(), margin = 1, swap = false, reduction = "mean"}]) -> loss_fn(anchor, positive, negative).
-- The arguments are keyword-only, as in PyTorch. A module distance_function is a child.
Lx.TripletMarginWithDistanceLoss = Module:extend("TripletMarginWithDistanceLoss")
function Lx.TripletMarginWithDistanceLoss:init(...)
  local name = "TripletMarginWithDistanceLoss"
  local o = options(name, twd_names, ...)
  self.reduction = functional().check_reduction(o.reduction, name)
  self.margin = twd_margin(o.margin, name)
  self.swap = bool_opt(o.swap, false, name, "swap")
  local dist = o.distance_function
  if dist == nil then
    dist = require("ember.nn.layers").PairwiseDistance()
  elseif not is_callable(dist) then
    raise(string.format("%s: distance_function must be a function or a module, got %s", name, type(dist)))
  end
  self.distance_function = dist
end
function Lx.TripletMarginWithDistanceLoss:extra_repr()
  local parts = {}
  if self.margin ~= 1 then parts[#parts + 1] = "margin=" .. tostring(self.margin) end
  if self.swap then parts[#parts + 1] = "swap=true" end
  if self.reduction ~= "mean" then parts[#parts + 1] = "reduction=\"" .. self.reduction .. "\"" end
  return table.concat(parts, ", ")
end
function Lx.TripletMarginWithDistanceLoss:forward(...)
  local args = table.pack(...)
  if args.n ~= 3 then
    raise(string.format("TripletMarginWithDistanceLoss: expected 3 tensors (anchor, positive, negative), got %d arguments",
                        args.n))
  end
  return Fx.triplet_margin_with_distance_loss(args[1], args[2], args[3], {distance_function = self.distance_function,
                                              margin = self.margin, swap = self.swap, reduction = self.reduction})
end

-- ---- multilabel_margin_loss ----------------------------------------------------------------

local function is_integer_dtype(d) return d == "int64" or d == "int32" or d == "uint8" or d == "int16" or d == "int8" end

local mlm_names = {"size_average", "reduce", "reduction"}

--- F.multilabel_margin_loss(input, target [, {reduction = "mean"}]) -> the multi-class multi-label hinge loss.
-- input [N, C] or [C]; target of the same shape holds each row's 1-based class indices,
-- ended by the first 0 (PyTorch: 0-based, ended by -1). Per row, over its targets j and
-- the classes i not among them: sum max(0, 1 - (x[j] - x[i])) / C.
function Fx.multilabel_margin_loss(input, target, ...)
  local op = "multilabel_margin_loss"
  input, target = autocast("fp32", input, target)
  local _, reduction = functional()._loss_args(op, mlm_names, ...)
  check_float(input, op)
  check_tensor(target, op, "target")
  if not is_integer_dtype(target.dtype) then
    raise(string.format("%s: target must be an integer tensor of class indices (int64), got %s", op, target.dtype))
  end
  if input.ndim > 2 or (input.ndim == 2 and input.shape[2] == 0) or (input.ndim == 1 and input.shape[1] == 0) then
    raise(string.format("%s: expected a non-empty input [C] or [N, C] (N may be 0), got %s", op, shape_str(input)))
  end
  if shape_str(input) ~= shape_str(target) then
    raise(string.format("%s: target %s must have the input's shape %s", op, shape_str(target), shape_str(input)))
  end
  local x = input.ndim == 2 and input or input:reshape(1, -1)
  local y = target:reshape(x.shape[1], x.shape[2]):to("int64")
  local N, C = x.shape[1], x.shape[2]
  if y:numel() > 0 then
    local lo, hi = y:min():item(), y:max():item()
    if lo < 0 or hi > C then
      raise(string.format("%s: target values must be class indices in 1..%d, or 0 to end a row's list; got values "
                            .. "in %d..%d", op, C, lo, hi))
    end
  end
  -- the targets before a row's first 0 count
  local valid = y:lt(1):to("int64"):cumsum(2):eq(0)
  local K = N > 0 and math.max(valid:sum(2):max():item(), 1) or 1
  local is_target = ember.zeros(N, C + 1, {dtype = "int64", device = x.device})
                         :scatter(2, ember.where(valid, y, C + 1), 1):narrow(2, 1, C):bool()
  valid = valid:narrow(2, 1, K)
  local picked = x:gather(2, ember.where(valid, y:narrow(2, 1, K), 1))      -- [N, K]
  local z = (1 - picked):unsqueeze(3) + x:unsqueeze(2)                   -- [N, K, C]
  local mask = valid:unsqueeze(3):logical_and(is_target:logical_not():unsqueeze(2)):logical_and(z:gt(0))
  local loss = ember.where(mask, z, 0):sum({2, 3}) / C
  if input.ndim < 2 then loss = loss:reshape({}) end
  return reduce(loss, reduction)
end

--- nn.MultiLabelMarginLoss([{reduction = "mean"}]) -> loss_fn(input, target): F.multilabel_margin_loss as a module.
Lx.MultiLabelMarginLoss = Module:extend("MultiLabelMarginLoss")
function Lx.MultiLabelMarginLoss:init(...)
  local _, reduction = functional()._loss_args("MultiLabelMarginLoss", mlm_names, ...)
  self.reduction = reduction
end
function Lx.MultiLabelMarginLoss:extra_repr()
  return self.reduction == "mean" and "" or "reduction=\"" .. self.reduction .. "\""
end
function Lx.MultiLabelMarginLoss:forward(...)
  local args = table.pack(...)
  if args.n ~= 2 then
    raise(string.format("MultiLabelMarginLoss: expected 2 tensors (input, target), got %d arguments", args.n))
  end
  return Fx.multilabel_margin_loss(args[1], args[2], {reduction = self.reduction})
end

return {functional = Fx, layers = Lx}
