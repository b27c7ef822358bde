-- ember.nn's further layers of torch.nn: the padding layers (ZeroPad, ConstantPad,
-- ReflectionPad, ReplicationPad, CircularPad, 1d/2d/3d), CosineSimilarity, PairwiseDistance,
-- Softmax2d, ChannelShuffle, Unfold, Fold, UpsamplingNearest2d, UpsamplingBilinear2d,
-- Dropout1d, Dropout3d, AlphaDropout, FeatureAlphaDropout, Bilinear, InstanceNorm3d,
-- AdaptiveMaxPool3d, MaxUnpool1d/3d, and the parameter containers ParameterList and
-- ParameterDict. PyTorch's constructor arguments (positional, or one trailing options
-- table), defaults, parameter names and initialisation; dims are 1-based (CosineSimilarity's
-- default dim 2 is PyTorch's dim=1). Merged into ember.nn by ember/nn/layers.lua.
local ember = require "ember"
local errors = require "ember.errors"
local raise = errors.raise
local base = require "ember.nn.module"
local F = require "ember.nn.functional"
local init = require "ember.nn.initializers"
local conv = require "ember.nn.conv_layers"   -- the classes InstanceNorm3d, AdaptiveMaxPool3d and the Upsampling* extend

local Module, Parameter, is_module = base.Module, base.Parameter, base.is_module
local shape_str = Module._shape_str
local check_input, count, boolean = Module._check_input, Module._count, Module._boolean
local options, sizes = F._options, F._sizes

local L = {}

local name_of, show = Module._type_name, Module._show

local function number_arg(v, default, op, what)
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v then raise(string.format("%s: %s must be a number, got %s", op, what, tostring(v))) end
  return v
end

-- msg without the user's position that raise() put in front of it (raise adds it again)
local function without_where(msg)
  msg = tostring(msg)
  local info = debug.getinfo(errors.user_level(), "Sl")
  local where = info and info.currentline and string.format("%s:%d: ", info.short_src, info.currentline)
  if where and msg:sub(1, #where) == where then return msg:sub(#where + 1) end
  return msg
end

-- Calls fn(...); its error is raised again at the user's line, prefixed by the module
-- and its arguments (the function's message already names it and the shapes).
local function call(self, fn, ...)
  local res = table.pack(pcall(fn, ...))
  if not res[1] then raise(name_of(self) .. "(" .. self:extra_repr() .. "): " .. without_where(res[2])) end
  return table.unpack(res, 2, res.n)
end

-- ---- padding ------------------------------------------------------------------------

-- A padding layer's padding: an integer (every side) or a list of 2 * nd integers in
-- F.pad's order (last dim first: left, right, top, bottom, front, back); negative crops.
local function padding_arg(v, nd, op)
  local n = 2 * nd
  local out = {}
  local int = type(v) == "number" and math.tointeger(v)
  if int then
    for i = 1, n do out[i] = int end
    return out
  end
  if type(v) ~= "table" or ember.is_tensor(v) or #v ~= n then
    raise(string.format("%s: padding must be an integer or a list of %d integers (%s), got %s", op, n,
                        ({"left, right", "left, right, top, bottom", "left, right, top, bottom, front, back"})[nd],
                        type(v) == "table" and (ember.is_tensor(v) and "a tensor" or "a list of " .. #v) or tostring(v)))
  end
  for i = 1, n do
    out[i] = type(v[i]) == "number" and math.tointeger(v[i])
    if not out[i] then raise(string.format("%s: padding must hold integers, got %s", op, tostring(v[i]))) end
  end
  return out
end

-- The padding layers share their methods; each class says its mode, its rank and whether
-- it takes a value (ConstantPadNd): cls._mode, cls._nd, cls._value.
local function pad_init(self, padding, ...)
  local cls, op = getmetatable(self), name_of(self)
  local o = options(op, cls._value and {"value"} or {}, ...)
  self.padding = padding_arg(padding, cls._nd, op)
  if cls._value then
    if o.value == nil then raise(op .. ": value is required (the number the padding holds)") end
    self.value = number_arg(o.value, nil, op, "value")
  end
end

-- PyTorch's text: the padding alone, or "padding=..., value=..." for ConstantPadNd
local function pad_repr(self)
  if getmetatable(self)._value then return string.format("padding=%s, value=%g", show(self.padding), self.value) end
  return show(self.padding)
end

local function pad_forward(self, x)
  local cls = getmetatable(self)
  check_input(self, x)
  if cls._mode == "circular" and x.ndim ~= cls._nd + 1 and x.ndim ~= cls._nd + 2 then
    -- PyTorch's CircularPadNd checks the rank itself (F.pad would pad fewer dims of another)
    raise(string.format("%s(%s): expected a %d-D (unbatched) or %d-D (batched) input, got %s", name_of(self),
                        pad_repr(self), cls._nd + 1, cls._nd + 2, shape_str(x)))
  end
  return call(self, F.pad, x, self.padding, cls._mode, self.value)
end

-- mode is F.pad's ("constant" for ZeroPad, value 0 then)
local function pad_class(name, nd, mode, with_value)
  local cls = Module:extend(name)
  cls._nd, cls._mode, cls._value = nd, mode, with_value
  cls.init, cls.extra_repr, cls.forward = pad_init, pad_repr, pad_forward
  return cls
end

--- nn.ZeroPad1d(padding) -> F.pad(x, padding) as a layer; padding an integer or {left, right}.
L.ZeroPad1d = pad_class("ZeroPad1d", 1, "constant", false)
--- nn.ZeroPad2d(padding) -> F.pad(x, padding); padding an integer or {left, right, top, bottom}.
L.ZeroPad2d = pad_class("ZeroPad2d", 2, "constant", false)
--- nn.ZeroPad3d(padding) -> F.pad(x, padding); padding an integer or {left, right, top, bottom, front, back}.
L.ZeroPad3d = pad_class("ZeroPad3d", 3, "constant", false)
--- nn.ConstantPad1d(padding, value) -> F.pad(x, padding, "constant", value).
L.ConstantPad1d = pad_class("ConstantPad1d", 1, "constant", true)
--- nn.ConstantPad2d(padding, value) -> F.pad(x, padding, "constant", value).
L.ConstantPad2d = pad_class("ConstantPad2d", 2, "constant", true)
--- nn.ConstantPad3d(padding, value) -> F.pad(x, padding, "constant", value).
L.ConstantPad3d = pad_class("ConstantPad3d", 3, "constant", true)
--- nn.ReflectionPad1d(padding) -> F.pad(x, padding, "reflect") of [N, C, L] or [C, L].
L.ReflectionPad1d = pad_class("ReflectionPad1d", 1, "reflect", false)
--- nn.ReflectionPad2d(padding) -> F.pad(x, padding, "reflect") of [N, C, H, W] or [C, H, W].
L.ReflectionPad2d = pad_class("ReflectionPad2d", 2, "reflect", false)
--- nn.ReflectionPad3d(padding) -> F.pad(x, padding, "reflect") of [N, C, D, H, W] or [C, D, H, W].
L.ReflectionPad3d = pad_class("ReflectionPad3d", 3, "reflect", false)
--- nn.ReplicationPad1d(padding) -> F.pad(x, padding, "replicate").
L.ReplicationPad1d = pad_class("ReplicationPad1d", 1, "replicate", false)
--- nn.ReplicationPad2d(padding) -> F.pad(x, padding, "replicate").
L.ReplicationPad2d = pad_class("ReplicationPad2d", 2, "replicate", false)
--- nn.ReplicationPad3d(padding) -> F.pad(x, padding, "replicate").
L.ReplicationPad3d = pad_class("ReplicationPad3d", 3, "replicate", false)
--- nn.CircularPad1d(padding) -> F.pad(x, padding, "circular").
L.CircularPad1d = pad_class("CircularPad1d", 1, "circular", false)
--- nn.CircularPad2d(padding) -> F.pad(x, padding, "circular").
L.CircularPad2d = pad_class("CircularPad2d", 2, "circular", false)
--- nn.CircularPad3d(padding) -> F.pad(x, padding, "circular").
L.CircularPad3d = pad_class("CircularPad3d", 3, "circular", false)

-- ---- distances, Softmax2d, ChannelShuffle ---------------------------------------------

--- nn.CosineSimilarity([dim = 2 [, eps = 1e-8]]) -> F.cosine_similarity(x1, x2, dim, eps) as a layer.
L.CosineSimilarity = Module:extend("CosineSimilarity")
function L.CosineSimilarity:init(...)
  local o = options("CosineSimilarity", {"dim", "eps"}, ...)
  self.dim = o.dim == nil and 2 or o.dim
  if math.type(self.dim) ~= "integer" then
    raise("CosineSimilarity: dim must be an integer (1-based, negative from the end), got " .. tostring(self.dim))
  end
  self.eps = number_arg(o.eps, 1e-8, "CosineSimilarity", "eps")
end
function L.CosineSimilarity:forward(x1, x2)
  check_input(self, x1)
  return F.cosine_similarity(x1, x2, self.dim, self.eps)
end

--- nn.PairwiseDistance([p = 2 [, eps = 1e-6 [, keepdim = false]]]) -> F.pairwise_distance(x1, x2, p, eps, keepdim) as a layer.
-- The norm's order is the field norm, as PyTorch's.
L.PairwiseDistance = Module:extend("PairwiseDistance")
function L.PairwiseDistance:init(...)
  local op = "PairwiseDistance"
  local o = options(op, {"p", "eps", "keepdim"}, ...)
  self.norm = number_arg(o.p, 2, op, "p")
  self.eps = number_arg(o.eps, 1e-6, op, "eps")
  self.keepdim = boolean(o.keepdim, false, op, "keepdim")
end
function L.PairwiseDistance:forward(x1, x2)
  check_input(self, x1)
  return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
end

--- nn.Softmax2d() -> softmax over the channels (dim -3) of [N, C, H, W] or [C, H, W].
L.Softmax2d = Module:extend("Softmax2d")
function L.Softmax2d:forward(x)
  check_input(self, x)
  if x.ndim ~= 3 and x.ndim ~= 4 then
    raise("Softmax2d: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got " .. shape_str(x))
  end
  return x:softmax(-3)
end

--- nn.ChannelShuffle(groups) -> F.channel_shuffle(x, groups) as a layer.
L.ChannelShuffle = Module:extend("ChannelShuffle")
function L.ChannelShuffle:init(groups)
  self.groups = count(groups, "ChannelShuffle", "groups", 1)
end
function L.ChannelShuffle:extra_repr() return "groups=" .. self.groups end
function L.ChannelShuffle:forward(x)
  check_input(self, x)
  return F.channel_shuffle(x, self.groups)
end

-- ---- Unfold, Fold ---------------------------------------------------------------------

-- the block arguments of Unfold and Fold (kernel_size, dilation, padding, stride), checked
-- and kept as given (numbers or lists of 2), as F.unfold and F.fold take them
local function block_init(self, op, kernel_size, ...)
  local o = options(op, {"dilation", "padding", "stride"}, ...)
  self.kernel_size = kernel_size
  self.dilation, self.padding, self.stride = o.dilation or 1, o.padding or 0, o.stride or 1
  for _, k in ipairs{"kernel_size", "dilation", "padding", "stride"} do
    sizes(self[k], 2, op, k, k == "padding" and 0 or 1)
  end
end

local function block_repr(self)
  return string.format("kernel_size=%s, dilation=%s, padding=%s, stride=%s", show(self.kernel_size),
                       show(self.dilation), show(self.padding), show(self.stride))
end

--- nn.Unfold(kernel_size [, dilation = 1 [, padding = 0 [, stride = 1]]]) -> F.unfold as a layer.
L.Unfold = Module:extend("Unfold")
function L.Unfold:init(kernel_size, ...) block_init(self, "Unfold", kernel_size, ...) end
L.Unfold.extra_repr = block_repr
function L.Unfold:forward(x)
  check_input(self, x)
  return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)
end

--- nn.Fold(output_size, kernel_size [, dilation = 1 [, padding = 0 [, stride = 1]]]) -> F.fold as a layer.
L.Fold = Module:extend("Fold")
function L.Fold:init(output_size, kernel_size, ...)
  sizes(output_size, 2, "Fold", "output_size", 1)
  self.output_size = output_size
  block_init(self, "Fold", kernel_size, ...)
end
function L.Fold:extra_repr() return "output_size=" .. show(self.output_size) .. ", " .. block_repr(self) end
function L.Fold:forward(x)
  check_input(self, x)
  return F.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)
end

-- ---- Bilinear -------------------------------------------------------------------------

--- nn.Bilinear(in1_features, in2_features, out_features [, bias = true] [, {bias =, dtype =, device =}]) -> y = x1^T W x2 + b.
-- weight [out, in1, in2] and bias [out] ~ U(-1/sqrt(in1), 1/sqrt(in1)), as PyTorch.
L.Bilinear = Module:extend("Bilinear")
function L.Bilinear:init(in1_features, in2_features, out_features, ...)
  local op = "Bilinear"
  local o = options(op, {"bias", "device", "dtype"}, ...)
  self.in1_features = count(in1_features, op, "in1_features")
  self.in2_features = count(in2_features, op, "in2_features")
  self.out_features = count(out_features, op, "out_features")
  local topts = {dtype = o.dtype, device = o.device}
  self.weight = Parameter(ember.empty({self.out_features, self.in1_features, self.in2_features}, topts))
  if boolean(o.bias, true, op, "bias") then self.bias = Parameter(ember.empty({self.out_features}, topts)) end
  self:reset_parameters()
end
--- bilinear:reset_parameters() — weight and bias ~ U(-1/sqrt(in1_features), 1/sqrt(in1_features)).
function L.Bilinear:reset_parameters()
  local bound = self.in1_features > 0 and 1 / math.sqrt(self.in1_features) or 0
  init.uniform_(self.weight, -bound, bound)
  if self.bias then init.uniform_(self.bias, -bound, bound) end
end
function L.Bilinear:extra_repr()
  return string.format("in1_features=%d, in2_features=%d, out_features=%d, bias=%s", self.in1_features,
                       self.in2_features, self.out_features, tostring(self.bias ~= nil))
end
function L.Bilinear:forward(x1, x2)
  check_input(self, x1)
  return F.bilinear(x1, x2, self.weight, self.bias)
end

-- ---- dropout ----------------------------------------------------------------------------

--- nn.Dropout1d([p = 0.5 [, inplace = false]]) -> F.dropout1d in training mode, the identity after eval().
L.Dropout1d = Module:extend("Dropout1d")
F._dropout_methods(L.Dropout1d, "Dropout1d", "dropout1d")
--- nn.Dropout3d([p = 0.5 [, inplace = false]]) -> F.dropout3d in training mode, the identity after eval().
L.Dropout3d = Module:extend("Dropout3d")
F._dropout_methods(L.Dropout3d, "Dropout3d", "dropout3d")
--- nn.AlphaDropout([p = 0.5 [, inplace = false]]) -> F.alpha_dropout in training mode, the identity after eval().
L.AlphaDropout = Module:extend("AlphaDropout")
F._dropout_methods(L.AlphaDropout, "AlphaDropout", "alpha_dropout")
--- nn.FeatureAlphaDropout([p = 0.5 [, inplace = false]]) -> F.feature_alpha_dropout in training mode.
L.FeatureAlphaDropout = Module:extend("FeatureAlphaDropout")
F._dropout_methods(L.FeatureAlphaDropout, "FeatureAlphaDropout", "feature_alpha_dropout")

-- ---- MaxUnpool1d, MaxUnpool3d -------------------------------------------------------------

-- MaxUnpool1d and MaxUnpool3d share their methods; cls._nd is the rank of the window
local function unpool_init(self, kernel_size, ...)
  local op, nd = name_of(self), getmetatable(self)._nd
  local o = options(op, {"stride", "padding"}, ...)
  self.kernel_size, self.stride, self.padding = kernel_size, o.stride or kernel_size, o.padding or 0
  for _, k in ipairs{"kernel_size", "stride", "padding"} do sizes(self[k], nd, op, k, k == "padding" and 0 or 1) end
end

local function unpool_repr(self)
  return string.format("kernel_size=%s, stride=%s, padding=%s", show(self.kernel_size), show(self.stride),
                       show(self.padding))
end

local function unpool_forward(self, x, indices, output_size)
  check_input(self, x)
  return F["max_unpool" .. getmetatable(self)._nd .. "d"](x, indices, self.kernel_size,
    {stride = self.stride, padding = self.padding, output_size = output_size})
end

local function unpool_class(name, nd)
  local cls = Module:extend(name)
  cls._nd = nd
  cls.init, cls.extra_repr, cls.forward = unpool_init, unpool_repr, unpool_forward
  return cls
end

--- nn.MaxUnpool1d(kernel_size [, stride = kernel_size [, padding = 0]]) -> F.max_unpool1d as a layer; forward(x, indices [, output_size]).
L.MaxUnpool1d = unpool_class("MaxUnpool1d", 1)
--- nn.MaxUnpool3d(kernel_size [, stride = kernel_size [, padding = 0]]) -> F.max_unpool3d as a layer; forward(x, indices [, output_size]).
L.MaxUnpool3d = unpool_class("MaxUnpool3d", 3)

-- ---- ParameterList, ParameterDict -----------------------------------------------------------

-- v as a parameter of a container (op names it): a leaf tensor with requires_grad is kept as
-- it is (so it stays shared), another tensor becomes nn.Parameter(v), as PyTorch converts
-- a plain tensor
local function as_parameter(v, op, what)
  if not ember.is_tensor(v) then raise(string.format("%s: %s must be a tensor, got %s", op, what, type(v))) end
  if v.requires_grad and v.is_leaf then return v end
  return Parameter(v)
end

local module_index, module_newindex = Module.__index, Module.__newindex

--- nn.ParameterList([parameters]) -> a list of parameters registered as "0", "1", ... (PyTorch's names).
-- list[i] is the i-th (1-based, negative from the end), #list the count, ipairs(list) walks
-- them; list[i] = t replaces one. Tensors that are not parameters become nn.Parameter(t).
L.ParameterList = Module:extend("ParameterList")
function L.ParameterList:init(values)
  if values ~= nil then self:extend(values) end
end

-- the name of position i (1-based, negative from the end), or nil past the ends
local function list_name(self, i)
  local names = rawget(self, "_param_names")
  if i < 0 then i = #names + i + 1 end
  return names[i]
end

L.ParameterList.__index = function(self, k)
  if math.type(k) == "integer" then
    local name = list_name(self, k)
    return name ~= nil and rawget(self, "_parameters")[name] or nil
  end
  return module_index(self, k)
end
L.ParameterList.__newindex = function(self, k, v)
  if math.type(k) ~= "integer" then return module_newindex(self, k, v) end
  local name = list_name(self, k)
  if name == nil then
    raise(string.format("ParameterList: index %d out of range for %d parameters (append adds one)", k, #self))
  end
  self:register_parameter(name, as_parameter(v, "ParameterList", "item " .. k))
end
L.ParameterList.__len = function(self) return #rawget(self, "_param_names") end

--- list:append(t) -> list; adds t (made a parameter) at the end.
function L.ParameterList:append(t)
  local i = #self
  self:register_parameter(string.format("%d", i), as_parameter(t, "ParameterList", "item " .. (i + 1)))
  return self
end

--- list:extend(values) -> list; appends each tensor of a list (or of another ParameterList).
function L.ParameterList:extend(values)
  if type(values) ~= "table" or ember.is_tensor(values) or (is_module(values) and getmetatable(values) ~= L.ParameterList) then
    raise("ParameterList: expected a list of tensors, got " .. (is_module(values) and "a module" or type(values)))
  end
  for _, t in ipairs(values) do self:append(t) end
  return self
end

--- nn.ParameterDict([parameters]) -> parameters registered under string keys.
-- parameters: a table name -> tensor (added in sorted key order, as PyTorch sorts a dict)
-- or a list of {name, tensor} pairs (added in that order). d[name] / d.name gets one,
-- d[name] = t adds or replaces one, d[name] = nil removes it; #d counts them; pairs(d) and
-- d:items() walk (name, parameter) in insertion order.
L.ParameterDict = Module:extend("ParameterDict")

local function dict_set(self, k, v, op)
  if type(k) ~= "string" then raise(op .. ": keys must be strings, got a " .. type(k)) end
  if v == nil then return module_newindex(self, k, nil) end
  if rawget(self, "_parameters")[k] == nil and L.ParameterDict[k] ~= nil then
    raise(string.format("%s: the key '%s' is the name of a method of ParameterDict; choose another", op, k))
  end
  self:register_parameter(k, as_parameter(v, op, "the value for '" .. k .. "'"))
end

--- d:update(values) -> d; adds or replaces entries (a table name -> tensor, a list of {name, tensor}, or a ParameterDict).
Module._dict_methods(L.ParameterDict, "tensor", dict_set)

--- d:keys() -> the list of names, in insertion order.
function L.ParameterDict:keys()
  return table.move(rawget(self, "_param_names"), 1, #self, 1, {})
end

--- d:values() -> the list of parameters, in insertion order.
function L.ParameterDict:values()
  local out = {}
  for _, p in self:items() do out[#out + 1] = p end
  return out
end

--- d:items() -> an iterator over (name, parameter), in insertion order.
function L.ParameterDict:items()
  return self:named_parameters({recurse = false, remove_duplicate = false})
end

--- d:contains(name) -> true when name is a key (PyTorch's `name in d`).
function L.ParameterDict:contains(k) return type(k) == "string" and rawget(self, "_parameters")[k] ~= nil end

--- d:get(name [, default]) -> the parameter under name, or default when there is none.
function L.ParameterDict:get(k, default)
  if self:contains(k) then return rawget(self, "_parameters")[k] end
  return default
end

--- d:pop(name) -> the parameter under name, removed from d (an error when absent).
function L.ParameterDict:pop(k)
  if not self:contains(k) then raise("ParameterDict:pop: no key '" .. tostring(k) .. "'") end
  local p = rawget(self, "_parameters")[k]
  module_newindex(self, k, nil)
  return p
end

--- d:clear() — removes every entry.
function L.ParameterDict:clear()
  for _, k in ipairs(self:keys()) do module_newindex(self, k, nil) end
end

L.ParameterDict.__len = L.ParameterList.__len
L.ParameterDict.__pairs = function(self) return self:items() end
L.ParameterDict.__newindex = function(self, k, v)
  if ember.is_tensor(v) or (v == nil and type(k) == "string" and self:contains(k)) then
    return dict_set(self, k, v, "ParameterDict")
  end
  return module_newindex(self, k, v)
end

-- ---- the layers that extend those of conv_layers.lua --------------------------------------

-- fn(self, ...) with an error in the name of the class parent raised in the name of self's
local function as_class(self, parent, fn, ...)
  local res = table.pack(pcall(fn, self, ...))
  if res[1] then return table.unpack(res, 2, res.n) end
  raise((without_where(res[2]):gsub("^" .. parent, name_of(self), 1)))
end

local InstanceNorm2d, AdaptiveMaxPool2d, Upsample = conv.InstanceNorm2d, conv.AdaptiveMaxPool2d, conv.Upsample

--- nn.InstanceNorm3d(num_features [, eps = 1e-5 [, momentum = 0.1 [, affine = false [, track_running_stats = false]]]])
-- Instance normalisation of [N, C, D, H, W] or [C, D, H, W]: InstanceNorm2d's over D, H, W.
L.InstanceNorm3d = InstanceNorm2d:extend("InstanceNorm3d")
function L.InstanceNorm3d:init(...) as_class(self, "InstanceNorm2d", InstanceNorm2d.init, ...) end
function L.InstanceNorm3d:forward(x)
  check_input(self, x)
  if x.ndim ~= 4 and x.ndim ~= 5 then
    raise(string.format("InstanceNorm3d(%s): expected a 4-D (unbatched) or 5-D (batched) input, got %s",
                        self:extra_repr(), shape_str(x)))
  end
  local c = x.shape[x.ndim - 3]
  if c ~= self.num_features and (self.affine or self.track_running_stats) then
    raise(string.format("InstanceNorm3d(%s): expected the input's channels (dim %d) to match num_features (%d), got %s",
                        self:extra_repr(), x.ndim - 3, self.num_features, shape_str(x)))
  end
  -- the statistics over (D, H, W) are those over (D, H * W): InstanceNorm2d's forward
  return as_class(self, "InstanceNorm2d", InstanceNorm2d.forward, x:flatten(-2, -1)):reshape(x.shape)
end

--- nn.AdaptiveMaxPool3d(output_size [, return_indices = false]) -> max pooling to a fixed 3-D output size.
L.AdaptiveMaxPool3d = AdaptiveMaxPool2d:extend("AdaptiveMaxPool3d")
function L.AdaptiveMaxPool3d:init(...) as_class(self, "AdaptiveMaxPool2d", AdaptiveMaxPool2d.init, ...) end
function L.AdaptiveMaxPool3d:forward(x)
  check_input(self, x)
  return call(self, F.adaptive_max_pool3d, x, self.output_size, self.return_indices)
end

--- nn.UpsamplingNearest2d([size [, scale_factor]]) -> nn.Upsample with mode "nearest".
L.UpsamplingNearest2d = Upsample:extend("UpsamplingNearest2d")
function L.UpsamplingNearest2d:init(...)
  local o = options("UpsamplingNearest2d", {"size", "scale_factor"}, ...)
  Upsample.init(self, {size = o.size, scale_factor = o.scale_factor, mode = "nearest"})
end

--- nn.UpsamplingBilinear2d([size [, scale_factor]]) -> nn.Upsample with mode "bilinear" and align_corners = true.
L.UpsamplingBilinear2d = Upsample:extend("UpsamplingBilinear2d")
function L.UpsamplingBilinear2d:init(...)
  local o = options("UpsamplingBilinear2d", {"size", "scale_factor"}, ...)
  Upsample.init(self, {size = o.size, scale_factor = o.scale_factor, mode = "bilinear", align_corners = true})
end

return L
