-- ember.nn layers: containers, Linear, activations, Dropout, Flatten,
-- Embedding, LayerNorm, RMSNorm, Softmax/LogSoftmax; the layers of convolutional
-- networks (convolutions, pooling, BatchNorm, ...) come from nn/conv_layers.lua. Constructors take PyTorch's
-- arguments, with keyword arguments in a trailing options table
-- (e.g. nn.Linear(3, 4, {bias = false, dtype = "float64"})).
local ember = require "ember"
local raise = require("ember.errors").raise
local base = require "ember.nn.module"
local F = require "ember.nn.functional"
local init = require "ember.nn.initializers"

local Module, Parameter, is_module = base.Module, base.Parameter, base.is_module
local shape_str = Module._shape_str
local check_input = Module._check_input

local options = require("ember.args").options

local L = {}

-- a size argument: an integer-valued number >= 0 (inf, NaN, 2.5, "3" and
-- floats past 2^63 are refused; the engine refuses sizes whose product overflows)
local function check_count(v, op, what)
  local i = type(v) == "number" and math.tointeger(v)
  if not i or i < 0 then
    raise(string.format("%s: %s must be a non-negative integer, got %s%s", op, what,
                        type(v) == "string" and string.format("%q", v) or tostring(v),
                        type(v) == "string" and " (a string)" or ""))
  end
  return i
end

local function empty(shape, opts)
  return ember.empty(shape, {dtype = opts.dtype, device = opts.device})
end

-- ---- containers ------------------------------------------------------------------

--- nn.Sequential(m1, m2, ...) -> a module applying its children in order: y = mN(...m2(m1(x))).
-- Children are named "0", "1", ... as in PyTorch, so parameters are "0.weight", "0.bias", ... and
-- state_dicts cross between the two unchanged; indexing is Lua's: seq[1] is the first child (the
-- one named "0"), seq[-1] the last, #seq the count.
-- Example: local model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
L.Sequential = Module:extend("Sequential")
L.Sequential.__numbered = true   -- children named by position from 0 (older ember files: from 1)
function L.Sequential:init(...)
  local mods = table.pack(...)
  if mods.n == 1 and type(mods[1]) == "table" and not is_module(mods[1]) then mods = mods[1]; mods.n = #mods end
  for i = 1, mods.n do self:add(mods[i]) end
end

--- seq:add(m) -> seq; appends a module (named by its position from 0: the third child is "2").
-- Example: nn.Sequential():add(nn.Linear(2, 2)):add(nn.Tanh())
function L.Sequential:add(m)
  if not is_module(m) then
    raise(string.format("Sequential: item %d must be a module, got %s", #self + 1, type(m)))
  end
  return self:add_module(string.format("%d", #self), m)
end
L.Sequential.append = L.Sequential.add

function L.Sequential:forward(x, ...)
  for _, m in self:named_children() do x = m(x, ...) end
  return x
end

-- The children at positions {start, stop [, step]} (inclusive, negative counting from the
-- end, as a tensor's ranges; {} is all of them, {i} the one): a list of modules.
local function children_in(self, r)
  local op = getmetatable(self).__name .. "[{start, stop [, step]}]"
  local n = #self
  local first = r[1]
  if type(first) == "table" and rawlen(r) == 1 then r = first end   -- seq[{{a, b}}], the tensor form
  local m = rawlen(r)
  local b = {1, n, 1}
  if m > 3 then raise(string.format("%s: a range has at most 3 entries {start, stop, step}, got %d", op, m)) end
  for j = 1, m do
    b[j] = math.type(r[j]) == "integer" and r[j] or raise(string.format("%s: range entry %d must be an integer, got %s",
                                                                          op, j, tostring(r[j])))
  end
  if m == 1 then b[2] = b[1] end
  local start = b[1] < 0 and b[1] + n + 1 or b[1]
  local stop = b[2] < 0 and b[2] + n + 1 or b[2]
  if start < 1 or start > n + 1 or stop > n or b[3] <= 0 then
    raise(string.format("%s: range {%d, %d, %d} out of bounds for %d modules", op, b[1], b[2], b[3], n))
  end
  local mods = {}
  for i = start, stop, b[3] do mods[#mods + 1] = self[i] end
  return mods
end

--- seq[{start, stop [, step]}] -> a Sequential of those children (PyTorch's seq[a:b]; inclusive, 1-based).
-- Negative positions count from the end, {} is all; the modules are shared, not copied;
-- the slice names its children "1", "2", ... again.
-- Example: local head = model[{1, 4}]   -- PyTorch's model[:4]
function L.Sequential:_slice(r) return L.Sequential(table.unpack(children_in(self, r))) end

--- nn.ModuleList({m1, m2, ...}) -> a list of modules whose parameters are registered; no forward.
-- Children are named "0", "1", ... as in PyTorch (parameters "0.weight", ...); list[i] is the i-th
-- (list[1] the one named "0") and #list the count; iterate with ipairs(list:children()).
-- Example: self.blocks = nn.ModuleList({Block(), Block()})
L.ModuleList = Module:extend("ModuleList")
L.ModuleList.__numbered = true
function L.ModuleList:init(mods)
  for _, m in ipairs(mods or {}) do self:append(m) end
end

--- list[{start, stop [, step]}] -> a ModuleList of those modules (PyTorch's list[a:b]; inclusive, 1-based).
function L.ModuleList:_slice(r) return L.ModuleList(children_in(self, r)) end

--- list:append(m) -> list; adds a module at the end.
function L.ModuleList:append(m)
  if not is_module(m) then raise(string.format("ModuleList: item %d must be a module, got %s", #self + 1, type(m))) end
  return self:add_module(string.format("%d", #self), m)
end

-- ---- Linear ------------------------------------------------------------------------

--- nn.Linear(in_features, out_features [, bias = true] [, {bias = true, dtype=, device=}]) -> y = x W^T + b.
-- W [out, in] and b [out] ~ U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's default: kaiming_uniform with a = sqrt(5)).
-- Input [..., in_features] -> output [..., out_features].
-- Example: local fc = nn.Linear(784, 10); local y = fc(ember.randn(32, 784))
L.Linear = Module:extend("Linear")
function L.Linear:init(in_features, out_features, ...)
  local opts = options("Linear", {"bias", "device", "dtype"}, ...)
  self.in_features = check_count(in_features, "Linear", "in_features")
  self.out_features = check_count(out_features, "Linear", "out_features")
  self.weight = Parameter(empty({self.out_features, self.in_features}, opts))
  if opts.bias ~= false then self.bias = Parameter(empty({self.out_features}, opts)) end
  self:reset_parameters()
end

--- linear:reset_parameters() — draws the weights and bias again (PyTorch's default init).
function L.Linear:reset_parameters()
  init.kaiming_uniform_(self.weight, {a = math.sqrt(5)})
  if self.bias then
    local bound = self.in_features > 0 and 1 / math.sqrt(self.in_features) or 0
    init.uniform_(self.bias, -bound, bound)
  end
end

function L.Linear:extra_repr()
  return string.format("in_features=%d, out_features=%d, bias=%s", self.in_features, self.out_features,
                       tostring(self.bias ~= nil))
end

function L.Linear:forward(x)
  check_input(self, x)
  local n = x.ndim
  if n == 0 or x.shape[n] ~= self.in_features then
    raise(string.format("Linear(%s): expected an input of shape [..., %d], got %s",
                        self:extra_repr(), self.in_features, shape_str(x)))
  end
  return F.linear(x, self.weight, self.bias)
end

-- ---- activations ---------------------------------------------------------------------

--- nn.GELU([approximate = "none"] | [{approximate = "none"}]) -> x * Phi(x); approximate = "tanh" uses the tanh form.
-- Example: nn.GELU({approximate = "tanh"})(x)
L.GELU = Module:extend("GELU")
function L.GELU:init(...)
  local opts = options("GELU", {"approximate"}, ...)
  self.approximate = opts.approximate or "none"
  if self.approximate ~= "none" and self.approximate ~= "tanh" then
    raise("GELU: approximate must be \"none\" or \"tanh\", got " .. tostring(self.approximate))
  end
end
function L.GELU:extra_repr()
  return self.approximate == "none" and "" or "approximate=\"" .. self.approximate .. "\""
end
function L.GELU:forward(x)
  check_input(self, x)
  return x:gelu({approximate = self.approximate})
end

--- nn.Softmax(dim) -> exp(x) / sum(exp(x)) along dim (1-based, negative from the end).
-- Example: nn.Softmax(-1)(logits)
L.Softmax = Module:extend("Softmax")
local function dim_arg(op, ...)
  local dim = options(op, {"dim"}, ...).dim
  if math.type(dim) ~= "integer" then raise(op .. ": dim must be an integer (1-based, negative from the end), got " .. tostring(dim)) end
  return dim
end
function L.Softmax:init(...)
  self.dim = dim_arg("Softmax", ...)
end
function L.Softmax:extra_repr() return "dim=" .. self.dim end
function L.Softmax:forward(x) check_input(self, x) return x:softmax(self.dim) end

--- nn.LogSoftmax(dim) -> log(softmax(x)) along dim, computed stably.
-- Example: nn.LogSoftmax(2)(logits)
L.LogSoftmax = Module:extend("LogSoftmax")
function L.LogSoftmax:init(...)
  self.dim = dim_arg("LogSoftmax", ...)
end
L.LogSoftmax.extra_repr = L.Softmax.extra_repr
function L.LogSoftmax:forward(x) check_input(self, x) return x:log_softmax(self.dim) end

-- ---- Dropout, Flatten ------------------------------------------------------------------

--- nn.Dropout([p = 0.5 [, inplace = false]]) -> in training mode, zeroes each element with probability p and
-- scales the rest by 1/(1-p); the identity after model:eval().
-- Example: local d = nn.Dropout(0.1); d:eval()
L.Dropout = Module:extend("Dropout")
F._dropout_methods(L.Dropout, "Dropout", "dropout")

--- nn.Flatten([start_dim = 2 [, end_dim = -1]]) -> x with dims start_dim..end_dim merged into one.
-- Example: nn.Flatten()(ember.zeros(32, 1, 28, 28)).shape  -- {32, 784}
L.Flatten = Module:extend("Flatten")
function L.Flatten:init(...)
  local o = options("Flatten", {"start_dim", "end_dim"}, ...)
  local start_dim, end_dim = o.start_dim, o.end_dim
  for i, d in ipairs{start_dim or 2, end_dim or -1} do
    if not (type(d) == "number" and math.tointeger(d)) then
      raise(string.format("Flatten: %s must be an integer dim, got %s", i == 1 and "start_dim" or "end_dim", tostring(d)))
    end
  end
  self.start_dim = math.tointeger(start_dim or 2)
  self.end_dim = math.tointeger(end_dim or -1)
end
function L.Flatten:extra_repr() return string.format("start_dim=%d, end_dim=%d", self.start_dim, self.end_dim) end
function L.Flatten:forward(x)
  check_input(self, x)
  return x:flatten(self.start_dim, self.end_dim)
end

-- ---- Embedding ----------------------------------------------------------------------------

--- nn.Embedding(num_embeddings, embedding_dim [, padding_idx] [, {padding_idx=, dtype=, device=}]) -> a lookup table of rows.
-- weight [num, dim] ~ N(0, 1). Input: integer tensor of 1-based indices, any shape;
-- output: input.shape .. {dim}. The row padding_idx (1-based; negative counts from the end)
-- starts as zeros and gets no gradient, as in PyTorch.
-- Example: local emb = nn.Embedding(1000, 64); emb(ember.tensor{{1, 5, 9}}).shape  -- {1, 3, 64}
L.Embedding = Module:extend("Embedding")
function L.Embedding:init(num_embeddings, embedding_dim, ...)
  local opts = options("Embedding", {"padding_idx", "*", "device", "dtype"}, ...)
  self.num_embeddings = check_count(num_embeddings, "Embedding", "num_embeddings")
  self.embedding_dim = check_count(embedding_dim, "Embedding", "embedding_dim")
  self.padding_idx = F._check_padding_idx(opts.padding_idx, self.num_embeddings, "Embedding")
  self.weight = Parameter(empty({self.num_embeddings, self.embedding_dim}, opts))
  self:reset_parameters()
end
function L.Embedding:reset_parameters()
  init.normal_(self.weight)
  if self.padding_idx then ember.no_grad(function() self.weight[self.padding_idx]:fill_(0) end) end
end
function L.Embedding:extra_repr()
  local s = string.format("%d, %d", self.num_embeddings, self.embedding_dim)
  return self.padding_idx and s .. ", padding_idx=" .. self.padding_idx or s
end
function L.Embedding:forward(idx)
  check_input(self, idx)
  return F._embedding(idx, self.weight, self.padding_idx, "Embedding(" .. self:extra_repr() .. ")")
end

--- nn.EmbeddingBag(num_embeddings, embedding_dim [, max_norm [, norm_type [, scale_grad_by_freq [, mode
---   [, sparse [, _weight [, include_last_offset [, padding_idx]]]]]]]] [, {..., dtype=, device=}])
-- Sums, means (the default) or maxima of bags of rows: forward(input [, offsets [, per_sample_weights]])
-- is F.embedding_bag with this module's weight (1-based offsets; see help(F.embedding_bag)).
-- Example: local bag = nn.EmbeddingBag(1000, 64, {mode = "sum"}); bag(ids, offsets).shape  -- {#offsets, 64}
L.EmbeddingBag = Module:extend("EmbeddingBag")
function L.EmbeddingBag:init(num_embeddings, embedding_dim, ...)
  local op = "EmbeddingBag"
  local opts = options(op, {"max_norm", "norm_type", "scale_grad_by_freq", "mode", "sparse", "_weight",
                            "include_last_offset", "padding_idx", "*", "device", "dtype"}, ...)
  self.num_embeddings = check_count(num_embeddings, op, "num_embeddings")
  self.embedding_dim = check_count(embedding_dim, op, "embedding_dim")
  if opts.max_norm ~= nil then raise(op .. ": max_norm is not supported") end
  if opts.scale_grad_by_freq then raise(op .. ": scale_grad_by_freq is not supported") end
  if opts.sparse then raise(op .. ": sparse gradients are not supported (sparse = false)") end
  self.mode = opts.mode or "mean"
  if self.mode ~= "sum" and self.mode ~= "mean" and self.mode ~= "max" then
    raise(string.format('%s: mode must be "sum", "mean" or "max", got %s', op, tostring(self.mode)))
  end
  self.include_last_offset = opts.include_last_offset == true
  self.padding_idx = F._check_padding_idx(opts.padding_idx, self.num_embeddings, op)
  if opts._weight ~= nil then
    local w = opts._weight
    if not ember.is_tensor(w) or w.ndim ~= 2 or w.shape[1] ~= self.num_embeddings or w.shape[2] ~= self.embedding_dim then
      raise(string.format("%s: _weight must be a [%d, %d] tensor", op, self.num_embeddings, self.embedding_dim))
    end
    self.weight = Parameter(w)
  else
    self.weight = Parameter(empty({self.num_embeddings, self.embedding_dim}, opts))
    self:reset_parameters()
  end
end
L.EmbeddingBag.reset_parameters = L.Embedding.reset_parameters
function L.EmbeddingBag:extra_repr()
  local s = string.format("%d, %d, mode='%s'", self.num_embeddings, self.embedding_dim, self.mode)
  if self.include_last_offset then s = s .. ", include_last_offset=true" end
  return self.padding_idx and s .. ", padding_idx=" .. self.padding_idx or s
end
function L.EmbeddingBag:forward(input, offsets, per_sample_weights)
  check_input(self, input)
  return F.embedding_bag(input, self.weight, {offsets = offsets, mode = self.mode,
    per_sample_weights = per_sample_weights, include_last_offset = self.include_last_offset,
    padding_idx = self.padding_idx})
end

-- ---- LayerNorm ------------------------------------------------------------------------------

-- a normalisation layer's normalized_shape (an integer or a non-empty list) as a list
local function norm_shape(op, normalized_shape)
  if type(normalized_shape) == "number" then normalized_shape = {normalized_shape} end
  if type(normalized_shape) ~= "table" or #normalized_shape == 0 then
    raise(op .. ": normalized_shape must be an integer or a non-empty list of integers")
  end
  local shape = {}
  for i, s in ipairs(normalized_shape) do shape[i] = check_count(s, op, "normalized_shape") end
  return shape
end

-- a normalisation layer's input: a tensor whose last dims are normalized_shape
local function check_norm_input(self, x)
  check_input(self, x)
  local ns, k = self.normalized_shape, #self.normalized_shape
  local ok = x.ndim >= k
  for i = 1, k do ok = ok and x.shape[x.ndim - k + i] == ns[i] end
  if not ok then
    raise(string.format("%s(%s): expected an input of shape [..., %s], got %s", getmetatable(self).__name,
                        self:extra_repr(), table.concat(ns, ", "), shape_str(x)))
  end
end

--- nn.LayerNorm(normalized_shape [, eps [, elementwise_affine [, bias]]] [, {eps = 1e-5, elementwise_affine = true, bias = true, dtype=, device=}])
-- Normalises over the last #normalized_shape dims (mean 0, biased variance 1), then
-- y * weight + bias (weight ones, bias zeros, both of shape normalized_shape).
-- Example: nn.LayerNorm(512)(x)   -- x [..., 512]
L.LayerNorm = Module:extend("LayerNorm")
function L.LayerNorm:init(normalized_shape, ...)
  local opts = options("LayerNorm", {"eps", "elementwise_affine", "bias", "device", "dtype"}, ...)
  local shape = norm_shape("LayerNorm", normalized_shape)
  self.normalized_shape = shape
  self.eps = opts.eps or 1e-5
  self.elementwise_affine = opts.elementwise_affine ~= false
  if self.elementwise_affine then
    self.weight = Parameter(ember.ones(shape, {dtype = opts.dtype, device = opts.device}))
    if opts.bias ~= false then self.bias = Parameter(ember.zeros(shape, {dtype = opts.dtype, device = opts.device})) end
  end
end
function L.LayerNorm:extra_repr()
  return string.format("[%s], eps=%g, elementwise_affine=%s", table.concat(self.normalized_shape, ", "), self.eps,
                       tostring(self.elementwise_affine))
end
function L.LayerNorm:forward(x)
  check_norm_input(self, x)
  return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
end

-- ---- RMSNorm ------------------------------------------------------------------------------

--- nn.RMSNorm(normalized_shape [, eps [, elementwise_affine]] [, {eps = nil, elementwise_affine = true, dtype=, device=}])
-- y = x / sqrt(mean(x^2) + eps) * weight over the last #normalized_shape dims (weight ones, of
-- shape normalized_shape); eps = nil is the machine epsilon of the arithmetic's dtype (see
-- F.rms_norm). Like torch.nn.RMSNorm (PyTorch 2.4+).
-- Example: nn.RMSNorm(512, 1e-6)(x)   -- x [..., 512]
L.RMSNorm = Module:extend("RMSNorm")
function L.RMSNorm:init(normalized_shape, ...)
  local opts = options("RMSNorm", {"eps", "elementwise_affine", "device", "dtype"}, ...)
  local shape = norm_shape("RMSNorm", normalized_shape)
  if opts.eps ~= nil and (type(opts.eps) ~= "number" or opts.eps < 0) then
    raise("RMSNorm: eps must be a non-negative number or nil, got " .. tostring(opts.eps))
  end
  self.normalized_shape = shape
  self.eps = opts.eps
  self.elementwise_affine = opts.elementwise_affine ~= false
  if self.elementwise_affine then
    self.weight = Parameter(ember.ones(shape, {dtype = opts.dtype, device = opts.device}))
  end
end
function L.RMSNorm:extra_repr()
  return string.format("[%s], eps=%s, elementwise_affine=%s", table.concat(self.normalized_shape, ", "),
                       self.eps and string.format("%g", self.eps) or "nil", tostring(self.elementwise_affine))
end
function L.RMSNorm:forward(x)
  check_norm_input(self, x)
  return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)
end

for k, v in pairs(require "ember.nn.conv_layers") do L[k] = v end
for k, v in pairs(require "ember.nn.transformer") do L[k] = v end
for k, v in pairs(require "ember.nn.activation") do L[k] = v end
for k, v in pairs(require "ember.nn.rnn") do L[k] = v end
for k, v in pairs(require "ember.nn.more_layers") do L[k] = v end
-- Parts holding functions and layers together (see functional.lua's end): their layers.
for _, part in ipairs{"ember.nn.sampling", "ember.nn.ctc", "ember.nn.extra", "ember.nn.lazy", "ember.nn.sync_bn"} do
  for k, v in pairs(require(part).layers or {}) do L[k] = v end
end

return L
