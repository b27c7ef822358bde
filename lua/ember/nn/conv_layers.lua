-- ember.nn layers of convolutional networks: Conv1d/2d/3d, ConvTranspose1d/2d/3d,
-- max/average/adaptive pooling, BatchNorm1d/2d/3d, GroupNorm, InstanceNorm1d/2d,
-- Dropout2d, Upsample, Unflatten, MaxUnpool2d. PyTorch's constructor arguments,
-- parameter and buffer names, shapes and default initialisation; the optional
-- arguments come positionally in PyTorch's order or as one trailing options table:
--   nn.Conv2d(1, 32, 3, {padding = 1})  ==  nn.Conv2d(1, 32, 3, 1, 1)
-- Size arguments are a number (every spatial dim) or a list ({3, 3}).
-- Merged into ember.nn by ember/nn/layers.lua.
local ember = require "ember"
local raise = require("ember.errors").raise
local base = require "ember.nn.module"
local F = require "ember.nn.functional"
local init = require "ember.nn.initializers"

local Module, Parameter = base.Module, base.Parameter
local shape_str = Module._shape_str
local check_input = Module._check_input
local options, sizes = F._options, F._sizes

local L = {}

local name_of, show = Module._type_name, Module._show

local function all_equal(list, v)
  for _, x in ipairs(list) do if x ~= v then return false end end
  return true
end

local count = Module._count

-- Calls an engine op; its error is raised again at the user's line (the op's message
-- already names the op and the shapes), prefixed by the module.
local function call(self, fn, ...)
  local res = table.pack(pcall(fn, ...))
  if not res[1] then raise(name_of(self) .. "(" .. self:extra_repr() .. "): " .. tostring(res[2])) end
  return table.unpack(res, 2, res.n)
end

local function check_rank(self, x, ranks, what)
  check_input(self, x)
  if not ranks[x.ndim] then
    raise(string.format("%s: expected %s input, got %s", name_of(self), what, shape_str(x)))
  end
end

-- ---- convolutions -------------------------------------------------------------------

local padding_modes = {zeros = true, reflect = true, replicate = true, circular = true}

-- the shared constructor of Conv*d and ConvTranspose*d
local function conv_init(self, nd, transposed, in_channels, out_channels, kernel_size, names, ...)
  local op = name_of(self)
  local o = options(op, names, ...)
  self.in_channels = count(in_channels, op, "in_channels", 1)
  self.out_channels = count(out_channels, op, "out_channels", 1)
  self.kernel_size = sizes(kernel_size, nd, op, "kernel_size", 1)
  self.stride = sizes(o.stride or 1, nd, op, "stride", 1)
  if type(o.padding) == "string" then
    if transposed or (o.padding ~= "same" and o.padding ~= "valid") then
      raise(string.format("%s: padding must be %s, got \"%s\"", op,
                          transposed and "an integer or a list" or "an integer, a list, \"same\" or \"valid\"", o.padding))
    end
    if o.padding == "same" and not all_equal(self.stride, 1) then
      raise(op .. ": padding = \"same\" needs stride 1, got " .. show(self.stride))
    end
    self.padding = o.padding
  else
    self.padding = sizes(o.padding or 0, nd, op, "padding", 0)
  end
  self.dilation = sizes(o.dilation or 1, nd, op, "dilation", 1)
  self.output_padding = sizes(o.output_padding or 0, nd, op, "output_padding", 0)
  self.groups = count(o.groups or 1, op, "groups", 1)
  if self.in_channels % self.groups ~= 0 or self.out_channels % self.groups ~= 0 then
    raise(string.format("%s: in_channels (%d) and out_channels (%d) must be divisible by groups (%d)", op,
                        self.in_channels, self.out_channels, self.groups))
  end
  self.padding_mode = o.padding_mode or "zeros"
  if not padding_modes[self.padding_mode] or (transposed and self.padding_mode ~= "zeros") then
    raise(string.format("%s: padding_mode must be %s, got %s", op,
                        transposed and "\"zeros\"" or "\"zeros\", \"reflect\", \"replicate\" or \"circular\"",
                        tostring(self.padding_mode)))
  end
  local shape = transposed and {self.in_channels, self.out_channels // self.groups}
                            or {self.out_channels, self.in_channels // self.groups}
  for i = 1, nd do shape[i + 2] = self.kernel_size[i] end
  local topts = {dtype = o.dtype, device = o.device}
  self.weight = Parameter(ember.empty(shape, topts))
  if o.bias ~= false then self.bias = Parameter(ember.empty({self.out_channels}, topts)) end
  self._nd, self._transposed = nd, transposed
  self:reset_parameters()
end

local conv_names = {"stride", "padding", "dilation", "groups", "bias", "padding_mode", "device", "dtype"}
local conv_t_names = {"stride", "padding", "output_padding", "groups", "bias", "dilation", "padding_mode", "device", "dtype"}

local function conv_reset(self)
  init.kaiming_uniform_(self.weight, {a = math.sqrt(5)})
  if self.bias then
    local fan_in = init.calculate_fan_in_and_fan_out(self.weight)
    local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
    init.uniform_(self.bias, -bound, bound)
  end
end

-- PyTorch's text: the arguments that differ from their defaults
local function conv_repr(self)
  local s = string.format("%d, %d, kernel_size=%s, stride=%s", self.in_channels, self.out_channels,
                          show(self.kernel_size), show(self.stride))
  if type(self.padding) == "string" or not all_equal(self.padding, 0) then s = s .. ", padding=" .. show(self.padding) end
  if not all_equal(self.dilation, 1) then s = s .. ", dilation=" .. show(self.dilation) end
  if not all_equal(self.output_padding, 0) then s = s .. ", output_padding=" .. show(self.output_padding) end
  if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
  if self.bias == nil then s = s .. ", bias=false" end
  if self.padding_mode ~= "zeros" then s = s .. ", padding_mode=" .. show(self.padding_mode) end
  return s
end

-- the F.pad amounts (last dim first) that padding_mode applies before a convolution
-- without padding
local function explicit_padding(self)
  local pad, nd = {}, self._nd
  for i = nd, 1, -1 do
    local before, after
    if self.padding == "valid" then
      before, after = 0, 0
    elseif self.padding == "same" then
      local total = self.dilation[i] * (self.kernel_size[i] - 1)
      before = total // 2
      after = total - before
    else
      before, after = self.padding[i], self.padding[i]
    end
    pad[#pad + 1], pad[#pad + 2] = before, after
  end
  return pad
end

local function conv_forward(self, x)
  check_rank(self, x, {[self._nd + 1] = true, [self._nd + 2] = true},
             string.format("a %d-D (batched) or %d-D (unbatched)", self._nd + 2, self._nd + 1))
  local fn = F["conv" .. self._nd .. "d"]
  if self.padding_mode ~= "zeros" then
    local ok, xp = pcall(F.pad, x, explicit_padding(self), self.padding_mode)
    -- F.pad's message without its position (raise puts the caller's)
    if not ok then raise(name_of(self) .. "(" .. conv_repr(self) .. "): " .. tostring(xp):gsub("^[^:\n]*:%d+: ", "", 1)) end
    return call(self, fn, xp, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
  end
  return call(self, fn, x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
end

-- output_padding that makes a transposed convolution's output output_size (PyTorch's
-- _output_padding): output_size lists the spatial sizes, or all sizes
local function output_padding_for(self, x, output_size)
  local nd = self._nd
  local op = name_of(self)
  if type(output_size) ~= "table" then raise(op .. ": output_size must be a list of sizes, got " .. type(output_size)) end
  local want = {}
  local skip = #output_size - nd
  if skip ~= 0 and skip ~= x.ndim - nd then
    raise(string.format("%s: output_size must have %d or %d entries, got %d", op, nd, x.ndim, #output_size))
  end
  for i = 1, nd do want[i] = output_size[i + skip] end
  local res = {}
  for i = 1, nd do
    local lo = (x.shape[x.ndim - nd + i] - 1) * self.stride[i] - 2 * self.padding[i]
               + self.dilation[i] * (self.kernel_size[i] - 1) + 1
    local hi = lo + self.stride[i] - 1
    if type(want[i]) ~= "number" or want[i] < lo or want[i] > hi then
      raise(string.format("%s: requested an output size of %s, but valid sizes range from %d to %d (for an input of %s)",
                          op, show(want), lo, hi, shape_str(x)))
    end
    res[i] = want[i] - lo
  end
  return res
end

local function conv_t_forward(self, x, output_size)
  check_rank(self, x, {[self._nd + 1] = true, [self._nd + 2] = true},
             string.format("a %d-D (batched) or %d-D (unbatched)", self._nd + 2, self._nd + 1))
  local output_padding = self.output_padding
  if output_size ~= nil then output_padding = output_padding_for(self, x, output_size) end
  return call(self, F["conv_transpose" .. self._nd .. "d"], x, self.weight, self.bias, self.stride, self.padding, output_padding,
              self.groups, self.dilation)
end

local function conv_class(name, nd, transposed)
  local cls = Module:extend(name)
  local names = transposed and conv_t_names or conv_names
  function cls:init(in_channels, out_channels, kernel_size, ...)
    conv_init(self, nd, transposed, in_channels, out_channels, kernel_size, names, ...)
  end
  cls.reset_parameters = conv_reset
  cls.extra_repr = conv_repr
  cls.forward = transposed and conv_t_forward or conv_forward
  return cls
end

--- nn.Conv1d(in_channels, out_channels, kernel_size [, stride = 1 [, padding = 0 [, dilation = 1 [, groups = 1 [, bias = true [, padding_mode = "zeros"]]]]]]) -> a 1-D convolution.
-- weight [out, in / groups, k], bias [out]; input [N, C_in, L] or [C_in, L].
-- Example: nn.Conv1d(16, 33, 3, {stride = 2})(ember.randn(20, 16, 50)).shape  -- {20, 33, 24}
L.Conv1d = conv_class("Conv1d", 1, false)
--- nn.Conv2d(in_channels, out_channels, kernel_size [, {stride = 1, padding = 0, dilation = 1, groups = 1, bias = true, padding_mode = "zeros", dtype=, device=}]) -> a 2-D convolution.
-- weight [out, in / groups, kh, kw] ~ kaiming_uniform(a = sqrt(5)), bias [out] ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
-- as PyTorch. padding: a size, "same" or "valid"; padding_mode "reflect", "replicate" and
-- "circular" pad with F.pad first. Input [N, C_in, H, W] or [C_in, H, W].
-- Example: nn.Conv2d(1, 32, 3, {padding = 1})(ember.randn(8, 1, 28, 28)).shape  -- {8, 32, 28, 28}
L.Conv2d = conv_class("Conv2d", 2, false)
--- nn.Conv3d(in_channels, out_channels, kernel_size [, {stride, padding, dilation, groups, bias, padding_mode}]) -> a 3-D convolution.
-- Example: nn.Conv3d(2, 4, 3)(ember.randn(1, 2, 5, 5, 5)).shape  -- {1, 4, 3, 3, 3}
L.Conv3d = conv_class("Conv3d", 3, false)
--- nn.ConvTranspose1d(in_channels, out_channels, kernel_size [, stride [, padding [, output_padding [, groups [, bias [, dilation]]]]]]) -> a transposed 1-D convolution.
-- weight [in, out / groups, k]; forward(x [, output_size]) picks output_padding for output_size.
-- Example: nn.ConvTranspose1d(4, 2, 3, {stride = 2})(ember.randn(1, 4, 5)).shape  -- {1, 2, 11}
L.ConvTranspose1d = conv_class("ConvTranspose1d", 1, true)
--- nn.ConvTranspose2d(in_channels, out_channels, kernel_size [, {stride, padding, output_padding, groups, bias, dilation}]) -> a transposed 2-D convolution.
-- weight [in, out / groups, kh, kw] (fan_in from out / groups * kh * kw, as PyTorch);
-- forward(x [, output_size]) picks output_padding for output_size.
-- Example: nn.ConvTranspose2d(8, 4, 2, {stride = 2})(ember.randn(1, 8, 7, 7)).shape  -- {1, 4, 14, 14}
L.ConvTranspose2d = conv_class("ConvTranspose2d", 2, true)
--- nn.ConvTranspose3d(in_channels, out_channels, kernel_size [, {...}]) -> a transposed 3-D convolution.
-- Example: nn.ConvTranspose3d(2, 1, 2, {stride = 2})(ember.randn(1, 2, 2, 2, 2)).shape  -- {1, 1, 4, 4, 4}
L.ConvTranspose3d = conv_class("ConvTranspose3d", 3, true)

-- ---- pooling ------------------------------------------------------------------------

-- sizes as given (a number or a list) for the text of extra_repr
local function keep(v, op, what, nd, lo)
  sizes(v, nd, op, what, lo)   -- checks only
  return v
end

-- A pooling layer's window, from its constructor's kernel_size and options o: kernel_size,
-- stride (the kernel's by default) and padding (0), each checked and kept as given
local function keep_window(self, name, nd, kernel_size, o)
  self.kernel_size = keep(kernel_size, name, "kernel_size", nd, 1)
  self.stride = keep(o.stride == nil and kernel_size or o.stride, name, "stride", nd, 1)
  self.padding = keep(o.padding or 0, name, "padding", nd, 0)
end

-- the window's part of extra_repr
local function window_repr(self)
  return string.format("kernel_size=%s, stride=%s, padding=%s", show(self.kernel_size), show(self.stride),
                       show(self.padding))
end

local function max_pool_class(name, nd)
  local cls = Module:extend(name)
  local fn_name = "max_pool" .. nd .. "d"
  function cls:init(kernel_size, ...)
    local o = options(name, {"stride", "padding", "dilation", "return_indices", "ceil_mode"}, ...)
    keep_window(self, name, nd, kernel_size, o)
    self.dilation = keep(o.dilation or 1, name, "dilation", nd, 1)
    self.return_indices = o.return_indices == true
    self.ceil_mode = o.ceil_mode == true
  end
  function cls:extra_repr()
    return string.format("%s, dilation=%s, ceil_mode=%s", window_repr(self), show(self.dilation),
                         tostring(self.ceil_mode))
  end
  function cls:forward(x)
    check_input(self, x)
    return call(self, F[fn_name], x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                self.return_indices)
  end
  return cls
end

--- nn.MaxPool1d(kernel_size [, stride = kernel_size [, padding = 0 [, dilation = 1 [, return_indices = false [, ceil_mode = false]]]]]) -> max over windows.
-- Example: nn.MaxPool1d(2)(ember.randn(1, 3, 8)).shape  -- {1, 3, 4}
L.MaxPool1d = max_pool_class("MaxPool1d", 1)
--- nn.MaxPool2d(kernel_size [, {stride = kernel_size, padding = 0, dilation = 1, return_indices = false, ceil_mode = false}]) -> max over windows.
-- With return_indices, also the 1-based positions of the maxima in each input plane (for MaxUnpool2d).
-- Example: nn.MaxPool2d(2)(ember.randn(1, 3, 8, 8)).shape  -- {1, 3, 4, 4}
L.MaxPool2d = max_pool_class("MaxPool2d", 2)
--- nn.MaxPool3d(kernel_size [, {stride, padding, dilation, return_indices, ceil_mode}]) -> max over 3-D windows.
-- Example: nn.MaxPool3d(2)(ember.randn(1, 1, 4, 4, 4)).shape  -- {1, 1, 2, 2, 2}
L.MaxPool3d = max_pool_class("MaxPool3d", 3)

local function avg_pool_class(name, nd)
  local cls = Module:extend(name)
  local fn_name = "avg_pool" .. nd .. "d"
  local names = {"stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"}
  if nd == 1 then names[5] = nil end
  function cls:init(kernel_size, ...)
    local o = options(name, names, ...)
    keep_window(self, name, nd, kernel_size, o)
    self.ceil_mode = o.ceil_mode == true
    self.count_include_pad = o.count_include_pad ~= false
    self.divisor_override = o.divisor_override
  end
  cls.extra_repr = window_repr
  function cls:forward(x)
    check_input(self, x)
    if nd == 1 then
      return call(self, F[fn_name], x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)
    end
    return call(self, F[fn_name], x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                self.divisor_override)
  end
  return cls
end

--- nn.AvgPool1d(kernel_size [, stride = kernel_size [, padding = 0 [, ceil_mode = false [, count_include_pad = true]]]]) -> mean over windows.
-- Example: nn.AvgPool1d(2)(ember.randn(1, 3, 8)).shape  -- {1, 3, 4}
L.AvgPool1d = avg_pool_class("AvgPool1d", 1)
--- nn.AvgPool2d(kernel_size [, {stride = kernel_size, padding = 0, ceil_mode = false, count_include_pad = true, divisor_override=}]) -> mean over windows.
-- Example: nn.AvgPool2d(2)(ember.randn(1, 3, 8, 8)).shape  -- {1, 3, 4, 4}
L.AvgPool2d = avg_pool_class("AvgPool2d", 2)
--- nn.AvgPool3d(kernel_size [, {...}]) -> mean over 3-D windows.
-- Example: nn.AvgPool3d(2)(ember.randn(1, 1, 4, 4, 4)).shape  -- {1, 1, 2, 2, 2}
L.AvgPool3d = avg_pool_class("AvgPool3d", 3)

local function adaptive_class(name, fn_name, with_indices)
  local cls = Module:extend(name)
  function cls:init(output_size, ...)
    if type(output_size) ~= "number" and type(output_size) ~= "table" then
      raise(name .. ": output_size must be an integer or a list (nil entries keep the input size), got " .. type(output_size))
    end
    self.output_size = output_size
    if with_indices then
      local o = options(name, {"return_indices"}, ...)
      self.return_indices = o.return_indices == true
    end
  end
  function cls:extra_repr() return "output_size=" .. show(self.output_size) end
  function cls:forward(x)
    check_input(self, x)
    if with_indices then return call(self, F[fn_name], x, self.output_size, self.return_indices) end
    return call(self, F[fn_name], x, self.output_size)
  end
  return cls
end

--- nn.AdaptiveAvgPool1d(output_size) -> mean pooling to a fixed output length.
-- Example: nn.AdaptiveAvgPool1d(4)(ember.randn(1, 3, 10)).shape  -- {1, 3, 4}
L.AdaptiveAvgPool1d = adaptive_class("AdaptiveAvgPool1d", "adaptive_avg_pool1d")
--- nn.AdaptiveAvgPool2d(output_size) -> mean pooling to a fixed output size; {nil, 7} keeps the height.
-- Example: nn.AdaptiveAvgPool2d(1)(ember.randn(2, 64, 7, 7)).shape  -- {2, 64, 1, 1}
L.AdaptiveAvgPool2d = adaptive_class("AdaptiveAvgPool2d", "adaptive_avg_pool2d")
--- nn.AdaptiveAvgPool3d(output_size) -> mean pooling to a fixed 3-D output size.
-- Example: nn.AdaptiveAvgPool3d(1)(ember.randn(1, 2, 3, 4, 5)).shape  -- {1, 2, 1, 1, 1}
L.AdaptiveAvgPool3d = adaptive_class("AdaptiveAvgPool3d", "adaptive_avg_pool3d")
--- nn.AdaptiveMaxPool1d(output_size [, return_indices = false]) -> max pooling to a fixed output length.
-- Example: nn.AdaptiveMaxPool1d(2)(ember.randn(1, 3, 9)).shape  -- {1, 3, 2}
L.AdaptiveMaxPool1d = adaptive_class("AdaptiveMaxPool1d", "adaptive_max_pool1d", true)
--- nn.AdaptiveMaxPool2d(output_size [, return_indices = false]) -> max pooling to a fixed output size.
-- Example: nn.AdaptiveMaxPool2d({2, 3})(ember.randn(1, 3, 9, 9)).shape  -- {1, 3, 2, 3}
L.AdaptiveMaxPool2d = adaptive_class("AdaptiveMaxPool2d", "adaptive_max_pool2d", true)

--- nn.MaxUnpool2d(kernel_size [, stride = kernel_size [, padding = 0]]) -> F.max_unpool2d as a module.
-- forward(x, indices [, output_size]). Example: see F.max_unpool2d.
L.MaxUnpool2d = Module:extend("MaxUnpool2d")
function L.MaxUnpool2d:init(kernel_size, ...)
  keep_window(self, "MaxUnpool2d", 2, kernel_size, options("MaxUnpool2d", {"stride", "padding"}, ...))
end
L.MaxUnpool2d.extra_repr = window_repr
function L.MaxUnpool2d:forward(x, indices, output_size)
  check_input(self, x)
  return F.max_unpool2d(x, indices, self.kernel_size, {stride = self.stride, padding = self.padding,
                                                       output_size = output_size})
end

-- ---- normalisation ------------------------------------------------------------------

-- _NormBase: the parameters and buffers of BatchNorm and InstanceNorm
local function norm_init(self, num_features, o, defaults)
  local op = name_of(self)
  self.num_features = count(num_features, op, "num_features", 1)
  self.eps = o.eps or 1e-5
  self.momentum = o.momentum
  if o.affine == nil then self.affine = defaults.affine else self.affine = o.affine end
  if o.track_running_stats == nil then self.track_running_stats = defaults.track_running_stats
  else self.track_running_stats = o.track_running_stats end
  if type(self.eps) ~= "number" or self.eps < 0 then raise(op .. ": eps must be a number >= 0, got " .. tostring(self.eps)) end
  if self.momentum ~= nil and type(self.momentum) ~= "number" then
    raise(op .. ": momentum must be a number or nil (a cumulative average), got " .. type(self.momentum))
  end
  local topts = {dtype = o.dtype, device = o.device}
  -- a bad dtype or device (a number given by position, say) is the layer's error
  local ok, e = pcall(ember.zeros, 0, topts)
  if not ok then raise(op .. ": " .. tostring(e):gsub("^[^:\n]*:%d+: ", "", 1):gsub("^ember%.zeros: argument 2: ", "", 1)) end
  if self.affine then
    self.weight = Parameter(ember.ones(self.num_features, topts))
    self.bias = Parameter(ember.zeros(self.num_features, topts))
  end
  if self.track_running_stats then
    self:register_buffer("running_mean", ember.zeros(self.num_features, topts))
    self:register_buffer("running_var", ember.ones(self.num_features, topts))
    self:register_buffer("num_batches_tracked", ember.zeros({}, {dtype = "int64", device = o.device}))
  end
end

-- momentum: a number, or nil for the cumulative average; nil is told apart from
-- "not given" (0.1) by the options table's key or the argument count
local function norm_options(op, names, ...)
  local o = options(op, names, ...)
  local n, first = select("#", ...), ...
  local given
  if n == 1 and type(first) == "table" and first[1] == nil then
    given = false
    for k in pairs(first) do if k == "momentum" then given = true end end
    -- {momentum = nil} cannot be seen: nn.BatchNorm2d(C, {momentum = false}) also means nil
    if first.momentum == false then given = true end
  else
    for i, k in ipairs(names) do if k == "momentum" then given = n >= i end end
  end
  if o.momentum == false then o.momentum = nil end
  if not given then o.momentum = 0.1 end
  return o
end

local norm_names = {"eps", "momentum", "affine", "track_running_stats", "device", "dtype"}

--- bn:reset_running_stats() — running_mean 0, running_var 1, num_batches_tracked 0.
local function reset_running_stats(self)
  if self.track_running_stats then
    ember.no_grad(function()
      self.running_mean:zero_()
      self.running_var:fill_(1)
      self.num_batches_tracked:zero_()
    end)
  end
end

local function reset_parameters(self)
  reset_running_stats(self)
  if self.affine then
    init.ones_(self.weight)
    init.zeros_(self.bias)
  end
end

local function norm_repr(self)
  return string.format("%d, eps=%g, momentum=%s, affine=%s, track_running_stats=%s", self.num_features, self.eps,
                       self.momentum == nil and "nil" or string.format("%g", self.momentum), tostring(self.affine),
                       tostring(self.track_running_stats))
end

-- one forward's bookkeeping (also SyncBatchNorm's): counts the batch in training, and returns
-- the running statistics' update factor (momentum, or 1 / batches for momentum = false),
-- whether the batch's statistics normalise, and whether the running ones are used or updated
local function batch_norm_step(self)
  local factor = self.momentum or 0
  if self.training and self.track_running_stats then
    ember.no_grad(function() self.num_batches_tracked:add_(1) end)
    if self.momentum == nil then factor = 1 / self.num_batches_tracked:item() end
  end
  return factor, self.training or not self.track_running_stats, not self.training or self.track_running_stats
end

local function batch_norm_forward(self, x)
  self:_check_input_dim(x)
  local factor, use_batch, stats = batch_norm_step(self)
  return call(self, F.batch_norm, x, stats and self.running_mean or nil, stats and self.running_var or nil,
              self.weight, self.bias, use_batch, factor, self.eps)
end

local function batch_norm_class(name, ranks, what)
  local cls = Module:extend(name)
  function cls:init(num_features, ...)
    norm_init(self, num_features, norm_options(name, norm_names, ...), {affine = true, track_running_stats = true})
  end
  function cls:_check_input_dim(x)
    check_input(self, x)
    if not ranks[x.ndim] then
      raise(string.format("%s(%s): expected %s input, got %s", name, norm_repr(self), what, shape_str(x)))
    end
  end
  cls.reset_running_stats = reset_running_stats
  cls.reset_parameters = reset_parameters
  cls.extra_repr = norm_repr
  cls.forward = batch_norm_forward
  cls._batch_norm_step = batch_norm_step
  return cls
end

--- nn.BatchNorm1d(num_features [, {eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true, dtype=, device=}]) -> batch normalisation of [N, C] or [N, C, L].
-- In training, normalises with the batch's mean and biased variance per channel and updates
-- running_mean / running_var (unbiased) with momentum; momentum = false (PyTorch's None) uses the
-- cumulative average 1 / num_batches_tracked. After eval(), normalises with the running stats.
-- Example: nn.BatchNorm1d(64)(ember.randn(32, 64)).shape  -- {32, 64}
L.BatchNorm1d = batch_norm_class("BatchNorm1d", {[2] = true, [3] = true}, "a 2-D or 3-D")
--- nn.BatchNorm2d(num_features [, {eps, momentum, affine, track_running_stats}]) -> batch normalisation of [N, C, H, W].
-- weight 1, bias 0; buffers running_mean 0, running_var 1, num_batches_tracked (int64) 0 — all in state_dict.
-- Example: local bn = nn.BatchNorm2d(32); bn(ember.randn(8, 32, 14, 14)); bn:eval()
L.BatchNorm2d = batch_norm_class("BatchNorm2d", {[4] = true}, "a 4-D")
--- nn.BatchNorm3d(num_features [, {...}]) -> batch normalisation of [N, C, D, H, W].
-- Example: nn.BatchNorm3d(4)(ember.randn(2, 4, 3, 3, 3)).shape  -- {2, 4, 3, 3, 3}
L.BatchNorm3d = batch_norm_class("BatchNorm3d", {[5] = true}, "a 5-D")

local function instance_norm_class(name, ranks, what)
  local cls = Module:extend(name)
  function cls:init(num_features, ...)
    norm_init(self, num_features, norm_options(name, norm_names, ...), {affine = false, track_running_stats = false})
  end
  cls.reset_running_stats = reset_running_stats
  cls.reset_parameters = reset_parameters
  cls.extra_repr = norm_repr
  function cls:forward(x)
    check_input(self, x)
    if not ranks[x.ndim] then
      raise(string.format("%s(%s): expected %s input, got %s", name, norm_repr(self), what, shape_str(x)))
    end
    local batched = ranks[x.ndim] == "batched"
    if not batched then x = x:unsqueeze(1) end
    if x.shape[2] ~= self.num_features and self.affine then
      raise(string.format("%s(%s): expected input's size at dim 2 to match num_features (%d), got %s", name,
                          norm_repr(self), self.num_features, shape_str(x)))
    end
    local ok, y = pcall(F.instance_norm, x, self.running_mean, self.running_var, self.weight, self.bias,
                        self.training or not self.track_running_stats, self.momentum or 0.1, self.eps)
    if not ok then raise(name .. "(" .. norm_repr(self) .. "): " .. tostring(y)) end
    return batched and y or y:squeeze(1)
  end
  return cls
end

--- nn.InstanceNorm1d(num_features [, {eps = 1e-5, momentum = 0.1, affine = false, track_running_stats = false}]) -> per-sample, per-channel normalisation of [N, C, L] or [C, L].
-- Example: nn.InstanceNorm1d(3)(ember.randn(2, 3, 10)).shape  -- {2, 3, 10}
L.InstanceNorm1d = instance_norm_class("InstanceNorm1d", {[2] = "unbatched", [3] = "batched"}, "a 2-D or 3-D")
--- nn.InstanceNorm2d(num_features [, {...}]) -> per-sample, per-channel normalisation of [N, C, H, W] or [C, H, W].
-- Example: nn.InstanceNorm2d(3, {affine = true})(ember.randn(2, 3, 8, 8)).shape  -- {2, 3, 8, 8}
L.InstanceNorm2d = instance_norm_class("InstanceNorm2d", {[3] = "unbatched", [4] = "batched"}, "a 3-D or 4-D")

--- nn.GroupNorm(num_groups, num_channels [, {eps = 1e-5, affine = true, dtype=, device=}]) -> normalisation over groups of channels.
-- Input [N, C, ...]: the channels fall into num_groups groups, each normalised per sample
-- (mean 0, biased variance 1), then * weight[c] + bias[c] (weight 1, bias 0).
-- Example: nn.GroupNorm(4, 32)(ember.randn(2, 32, 8, 8)).shape  -- {2, 32, 8, 8}
L.GroupNorm = Module:extend("GroupNorm")
function L.GroupNorm:init(num_groups, num_channels, ...)
  local o = options("GroupNorm", {"eps", "affine", "device", "dtype"}, ...)
  self.num_groups = count(num_groups, "GroupNorm", "num_groups", 1)
  self.num_channels = count(num_channels, "GroupNorm", "num_channels", 1)
  if self.num_channels % self.num_groups ~= 0 then
    raise(string.format("GroupNorm: num_channels (%d) must be divisible by num_groups (%d)", self.num_channels,
                        self.num_groups))
  end
  self.eps = o.eps or 1e-5
  self.affine = o.affine ~= false
  if self.affine then
    self.weight = Parameter(ember.ones(self.num_channels, {dtype = o.dtype, device = o.device}))
    self.bias = Parameter(ember.zeros(self.num_channels, {dtype = o.dtype, device = o.device}))
  end
end
--- gn:reset_parameters() — weight 1, bias 0.
function L.GroupNorm:reset_parameters()
  if self.affine then init.ones_(self.weight); init.zeros_(self.bias) end
end
function L.GroupNorm:extra_repr()
  return string.format("%d, %d, eps=%g, affine=%s", self.num_groups, self.num_channels, self.eps, tostring(self.affine))
end
function L.GroupNorm:forward(x)
  check_input(self, x)
  return call(self, F.group_norm, x, self.num_groups, self.weight, self.bias, self.eps)
end

-- ---- Dropout2d, Upsample, Unflatten -------------------------------------------------------

--- nn.Dropout2d([p = 0.5 [, inplace = false]]) -> in training, zeroes whole channels of [N, C, H, W] with probability p (the rest * 1/(1-p)).
-- Example: local d = nn.Dropout2d(0.2); d:eval()
L.Dropout2d = Module:extend("Dropout2d")
F._dropout_methods(L.Dropout2d, "Dropout2d", "dropout2d")

--- nn.Upsample([{size=, scale_factor=, mode = "nearest", align_corners=, recompute_scale_factor=}]) -> F.interpolate as a module.
-- Positional form: nn.Upsample(size, scale_factor, mode, align_corners).
-- Example: nn.Upsample({scale_factor = 2, mode = "bilinear"})(ember.randn(1, 3, 4, 4)).shape  -- {1, 3, 8, 8}
L.Upsample = Module:extend("Upsample")
function L.Upsample:init(...)
  local o = options("Upsample", {"size", "scale_factor", "mode", "align_corners", "recompute_scale_factor"}, ...)
  self.size, self.scale_factor, self.mode = o.size, o.scale_factor, o.mode or "nearest"
  self.align_corners, self.recompute_scale_factor = o.align_corners, o.recompute_scale_factor
end
function L.Upsample:extra_repr()
  local s = self.scale_factor ~= nil and "scale_factor=" .. show(self.scale_factor) or "size=" .. show(self.size)
  return s .. ", mode=" .. show(self.mode)
end
function L.Upsample:forward(x)
  check_input(self, x)
  return F.interpolate(x, {size = self.size, scale_factor = self.scale_factor, mode = self.mode,
                           align_corners = self.align_corners, recompute_scale_factor = self.recompute_scale_factor})
end

--- nn.Unflatten(dim, unflattened_size) -> x with dim (1-based) split into the sizes unflattened_size (one may be -1).
-- Example: nn.Unflatten(2, {2, 5})(ember.randn(3, 10)).shape  -- {3, 2, 5}
L.Unflatten = Module:extend("Unflatten")
function L.Unflatten:init(dim, unflattened_size)
  if math.type(dim) ~= "integer" then raise("Unflatten: dim must be an integer (1-based, negative from the end), got " .. tostring(dim)) end
  if type(unflattened_size) ~= "table" or #unflattened_size == 0 then
    raise("Unflatten: unflattened_size must be a non-empty list of sizes, got " .. tostring(unflattened_size))
  end
  for _, s in ipairs(unflattened_size) do
    if math.type(s) ~= "integer" or (s < 0 and s ~= -1) then
      raise("Unflatten: unflattened_size must hold integers >= 0 (or one -1), got " .. show(unflattened_size))
    end
  end
  self.dim, self.unflattened_size = dim, unflattened_size
end
function L.Unflatten:extra_repr() return string.format("dim=%d, unflattened_size=%s", self.dim, show(self.unflattened_size)) end
function L.Unflatten:forward(x)
  check_input(self, x)
  local d = self.dim < 0 and x.ndim + 1 + self.dim or self.dim
  if d < 1 or d > x.ndim then
    raise(string.format("Unflatten(%s): dim out of range for an input of %s", self:extra_repr(), shape_str(x)))
  end
  local shape = {}
  for i = 1, d - 1 do shape[#shape + 1] = x.shape[i] end
  local known, free = 1, false
  for _, s in ipairs(self.unflattened_size) do
    shape[#shape + 1] = s
    if s == -1 then free = true else known = known * s end
  end
  for i = d + 1, x.ndim do shape[#shape + 1] = x.shape[i] end
  if (not free and known ~= x.shape[d]) or (free and (known == 0 or x.shape[d] % known ~= 0)) then
    raise(string.format("Unflatten(%s): sizes %s do not multiply to dim %d's size %d of the input %s", self:extra_repr(),
                        show(self.unflattened_size), d, x.shape[d], shape_str(x)))
  end
  return x:reshape(shape)
end

return L
