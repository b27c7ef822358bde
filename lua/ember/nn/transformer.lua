-- ember.nn layers of transformers: MultiheadAttention, TransformerEncoderLayer /
-- TransformerEncoder, TransformerDecoderLayer / TransformerDecoder, Transformer, and the
-- small containers they need (Identity, ModuleDict). PyTorch's constructor arguments,
-- parameter names, shapes and default initialisation, so PyTorch state_dicts load (the
-- stacks name their layers "layers.1", "layers.2", ... where PyTorch has "layers.0", ...).
-- Optional arguments come positionally in PyTorch's order or as one trailing options table:
--   nn.MultiheadAttention(512, 8, {batch_first = true})
--   mha(x, x, x, {key_padding_mask = pad, need_weights = false})
-- Masks follow PyTorch's modules: a bool mask is true where attention is NOT allowed; a
-- float mask is added to the scores (-inf forbids). (F.scaled_dot_product_attention's bool
-- mask is the other way round: true where attention is allowed, as in PyTorch.)
-- Merged into ember.nn by ember/nn/layers.lua.
local ember = require "ember"
local raise = require("ember.errors").raise
local base = require "ember.nn.module"
local F = require "ember.nn.functional"
local init = require "ember.nn.initializers"

local Module, Parameter, is_module = base.Module, base.Parameter, base.is_module
local shape_str = Module._shape_str
local options = F._options

local L = {}

-- ember.nn.layers requires this file while it loads, so its classes are looked up when a
-- module is built, not when this file loads
local function layers() return require "ember.nn.layers" end
local function Linear(...) return layers().Linear(...) end
local function LayerNorm(...) return layers().LayerNorm(...) end
local function Dropout(...) return layers().Dropout(...) end
local function ModuleList(...) return layers().ModuleList(...) end

local function name_of(self) return tostring(getmetatable(self).__name) end

local count = Module._count
local boolean = Module._boolean

local function probability(v, op, what)
  if type(v) ~= "number" or not (v >= 0 and v <= 1) then
    raise(string.format("%s: %s must be a probability in [0, 1], got %s", op, what, tostring(v)))
  end
  return v
end

local function check_tensor(v, op, what)
  if not ember.is_tensor(v) then raise(string.format("%s: expected a tensor as %s, got %s", op, what, type(v))) end
end

-- ---- Identity, ModuleDict -------------------------------------------------------------

--- nn.Identity(...) -> a module returning its input unchanged (arguments are ignored, as in PyTorch).
-- Example: nn.Identity()(ember.ones(2))   -- the same tensor
L.Identity = Module:extend("Identity")
function L.Identity:init() end
function L.Identity:forward(x) return x end

--- nn.ModuleDict([modules]) -> modules registered under string keys; no forward.
-- modules: a table name -> module (added in sorted key order) or a list of {name, module}
-- pairs (added in that order). d["name"] / d.name gets one, d["name"] = m adds or replaces
-- one, d["name"] = nil removes it; #d counts them; pairs(d), d:items() iterate (name, module)
-- in insertion order.
-- Example: local heads = nn.ModuleDict({cls = nn.Linear(8, 3), reg = nn.Linear(8, 1)})
L.ModuleDict = Module:extend("ModuleDict")

local function dict_set(self, k, m, op)
  if type(k) ~= "string" then raise(op .. ": keys must be strings, got a " .. type(k)) end
  if not is_module(m) then raise(string.format("%s: the value for '%s' must be a module, got %s", op, k, type(m))) end
  if rawget(self, "_modules")[k] == nil and L.ModuleDict[k] ~= nil then
    raise(string.format("%s: the key '%s' is the name of a method of ModuleDict; choose another", op, k))
  end
  self:add_module(k, m)
end

--- d:update(modules) -> d; adds or replaces entries (a table name -> module, a list of {name, module}, or a ModuleDict).
-- Example: d:update({extra = nn.Identity()})
Module._dict_methods(L.ModuleDict, "module", dict_set)

--- d:keys() -> the list of names, in insertion order.
-- Example: for _, k in ipairs(d:keys()) do print(k) end
function L.ModuleDict:keys()
  local out = {}
  for k in self:named_children() do out[#out + 1] = k end
  return out
end

--- d:values() -> the list of modules, in insertion order.
function L.ModuleDict:values() return self:children() end

--- d:items() -> an iterator over (name, module), in insertion order.
-- Example: for name, m in d:items() do print(name, m) end
function L.ModuleDict:items() return self:named_children() end

--- d:contains(name) -> true when name is a key (PyTorch's `name in d`).
function L.ModuleDict:contains(k) return type(k) == "string" and rawget(self, "_modules")[k] ~= nil end

--- d:pop(name) -> the module under name, removed from d (an error when absent).
function L.ModuleDict:pop(k)
  local m = type(k) == "string" and rawget(self, "_modules")[k] or nil
  if m == nil then raise("ModuleDict:pop: no key '" .. tostring(k) .. "'") end
  self[k] = nil
  return m
end

--- d:clear() — removes every entry.
function L.ModuleDict:clear()
  for _, k in ipairs(self:keys()) do self[k] = nil end
end

L.ModuleDict.__pairs = function(self) return self:named_children() end
-- d[k] = module goes through the same checks as update (a key naming a method would hide it)
local module_newindex = Module.__newindex
L.ModuleDict.__newindex = function(self, k, v)
  if is_module(v) then dict_set(self, k, v, "ModuleDict") else module_newindex(self, k, v) end
end

-- ---- masks ------------------------------------------------------------------------------

local function is_float(t) return t:is_floating_point() end

-- a bool mask "true = forbidden" or a float mask as an additive float mask of dtype
local function additive(mask, dtype)
  if mask.dtype == "bool" then
    return ember.zeros(mask.shape, {dtype = dtype, device = mask.device}):masked_fill(mask, -math.huge)
  end
  return mask.dtype == dtype and mask or mask:to(dtype)
end

-- true above the diagonal of a [L, S] matrix: the keys after each query (causal masking,
-- aligned at the top left as F.scaled_dot_product_attention's is_causal)
local function causal_bool(Lq, S, device)
  local i = ember.arange(Lq, {device = device}):view(Lq, 1)
  local j = ember.arange(S, {device = device}):view(1, S)
  return j:gt(i)
end

-- ---- MultiheadAttention ---------------------------------------------------------------------

--- nn.MultiheadAttention(embed_dim, num_heads [, dropout = 0 [, bias = true [, add_bias_kv = false
--   [, add_zero_attn = false [, kdim = embed_dim [, vdim = embed_dim [, batch_first = false]]]]]]]) -> module
-- (or the options in one table, with dtype= and device=). PyTorch's parameters: in_proj_weight
-- [3E, E] (or q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight [E, vdim] when kdim or
-- vdim differ from E), in_proj_bias [3E], out_proj (a Linear E -> E), bias_k, bias_v [1, 1, E].
-- Example: local mha = nn.MultiheadAttention(16, 4, {batch_first = true})
L.MultiheadAttention = Module:extend("MultiheadAttention")
local mha_names = {"dropout", "bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim", "batch_first", "device", "dtype"}

function L.MultiheadAttention:init(embed_dim, num_heads, ...)
  local op = "MultiheadAttention"
  local o = options(op, mha_names, ...)
  self.embed_dim = count(embed_dim, op, "embed_dim", 1)
  self.num_heads = count(num_heads, op, "num_heads", 1)
  if self.embed_dim % self.num_heads ~= 0 then
    raise(string.format("%s: embed_dim (%d) must be divisible by num_heads (%d)", op, self.embed_dim, self.num_heads))
  end
  self.head_dim = self.embed_dim // self.num_heads
  self.kdim = o.kdim == nil and self.embed_dim or count(o.kdim, op, "kdim", 1)
  self.vdim = o.vdim == nil and self.embed_dim or count(o.vdim, op, "vdim", 1)
  self._qkv_same_embed_dim = self.kdim == self.embed_dim and self.vdim == self.embed_dim
  self.dropout = probability(o.dropout or 0, op, "dropout")
  self.batch_first = boolean(o.batch_first, false, op, "batch_first")
  self.add_zero_attn = boolean(o.add_zero_attn, false, op, "add_zero_attn")
  local bias = boolean(o.bias, true, op, "bias")
  local add_bias_kv = boolean(o.add_bias_kv, false, op, "add_bias_kv")
  local topts = {dtype = o.dtype, device = o.device}
  local E = self.embed_dim
  if self._qkv_same_embed_dim then
    self.in_proj_weight = Parameter(ember.empty({3 * E, E}, topts))
  else
    self.q_proj_weight = Parameter(ember.empty({E, E}, topts))
    self.k_proj_weight = Parameter(ember.empty({E, self.kdim}, topts))
    self.v_proj_weight = Parameter(ember.empty({E, self.vdim}, topts))
  end
  if bias then self.in_proj_bias = Parameter(ember.empty({3 * E}, topts)) end
  self.out_proj = Linear(E, E, {bias = bias, dtype = o.dtype, device = o.device})
  if add_bias_kv then
    self.bias_k = Parameter(ember.empty({1, 1, E}, topts))
    self.bias_v = Parameter(ember.empty({1, 1, E}, topts))
  end
  self:reset_parameters()
end

--- mha:reset_parameters() — PyTorch's initialisation: xavier_uniform_ projection weights, zero
-- in_proj_bias and out_proj.bias, xavier_normal_ bias_k / bias_v; out_proj.weight as a Linear's.
-- Example: nn.MultiheadAttention(8, 2):reset_parameters()
function L.MultiheadAttention:reset_parameters()
  if self._qkv_same_embed_dim then
    init.xavier_uniform_(self.in_proj_weight)
  else
    init.xavier_uniform_(self.q_proj_weight)
    init.xavier_uniform_(self.k_proj_weight)
    init.xavier_uniform_(self.v_proj_weight)
  end
  if self.in_proj_bias then
    init.zeros_(self.in_proj_bias)
    init.zeros_(self.out_proj.bias)
  end
  if self.bias_k then
    init.xavier_normal_(self.bias_k)
    init.xavier_normal_(self.bias_v)
  end
end

function L.MultiheadAttention:extra_repr()
  local s = string.format("embed_dim=%d, num_heads=%d", self.embed_dim, self.num_heads)
  if self.dropout ~= 0 then s = s .. ", dropout=" .. self.dropout end
  if not self.in_proj_bias then s = s .. ", bias=false" end
  if self.bias_k then s = s .. ", add_bias_kv=true" end
  if self.add_zero_attn then s = s .. ", add_zero_attn=true" end
  if not self._qkv_same_embed_dim then s = s .. string.format(", kdim=%d, vdim=%d", self.kdim, self.vdim) end
  if self.batch_first then s = s .. ", batch_first=true" end
  return s
end

local mha_forward_names = {"key_padding_mask", "need_weights", "attn_mask", "average_attn_weights", "is_causal"}

-- the query, key and value as [N, T, features] (batch first), and whether they had a batch dim
local function mha_inputs(self, query, key, value, op)
  check_tensor(query, op, "query")
  check_tensor(key, op, "key")
  check_tensor(value, op, "value")
  local batched = query.ndim == 3
  if query.ndim ~= 2 and query.ndim ~= 3 then
    raise(string.format("%s: expected a query of shape [L, N, E], [N, L, E] (batch_first) or [L, E] (unbatched), got %s",
                        op, shape_str(query)))
  end
  if key.ndim ~= query.ndim or value.ndim ~= query.ndim then
    raise(string.format("%s: query, key and value must all be %s; got %s, %s and %s", op,
                        batched and "3-D (batched)" or "2-D (unbatched)", shape_str(query), shape_str(key), shape_str(value)))
  end
  local q, k, v = query, key, value
  if not batched then
    q, k, v = q:unsqueeze(1), k:unsqueeze(1), v:unsqueeze(1)
  elseif not self.batch_first then
    q, k, v = q:transpose(1, 2), k:transpose(1, 2), v:transpose(1, 2)
  end
  local layout = not batched and "[T, features]" or self.batch_first and "[N, T, features]" or "[T, N, features]"
  if q.shape[3] ~= self.embed_dim or k.shape[3] ~= self.kdim or v.shape[3] ~= self.vdim then
    raise(string.format("%s: expected query, key and value of %s with %d, %d and %d features; got %s, %s and %s",
                        op, layout, self.embed_dim, self.kdim, self.vdim, shape_str(query), shape_str(key), shape_str(value)))
  end
  if k.shape[1] ~= v.shape[1] or k.shape[2] ~= v.shape[2] or k.shape[1] ~= q.shape[1] then
    raise(string.format("%s: query, key and value must share the batch size, and key and value the sequence length "
                        .. "(%s); got %s, %s and %s", op, layout, shape_str(query), shape_str(key), shape_str(value)))
  end
  return q, k, v, batched
end

local function check_mask_dtype(mask, op, what)
  check_tensor(mask, op, what)
  if mask.dtype ~= "bool" and not is_float(mask) then
    raise(string.format("%s: %s must be a bool or floating-point tensor, got %s", op, what, mask.dtype))
  end
end

-- attn_mask and key_padding_mask (checked) merged into one additive mask that broadcasts
-- to [N, H, L, S], or nil
local function mha_mask(self, attn_mask, kpm, N, Lq, S, batched, dtype, op)
  local H = self.num_heads
  local mask
  if attn_mask ~= nil then
    check_mask_dtype(attn_mask, op, "attn_mask")
    if attn_mask.ndim == 2 then
      if attn_mask.shape[1] ~= Lq or attn_mask.shape[2] ~= S then
        raise(string.format("%s: the 2-D attn_mask has shape %s, but should be [%d, %d] (target length, source length)",
                            op, shape_str(attn_mask), Lq, S))
      end
      mask = additive(attn_mask, dtype):view(1, 1, Lq, S)
    elseif attn_mask.ndim == 3 then
      local want = batched and N * H or H
      if attn_mask.shape[1] ~= want or attn_mask.shape[2] ~= Lq or attn_mask.shape[3] ~= S then
        raise(string.format("%s: the 3-D attn_mask has shape %s, but should be [%d, %d, %d] (%s, target length, "
                            .. "source length)", op, shape_str(attn_mask), want, Lq, S,
                            batched and "batch size * num_heads" or "num_heads"))
      end
      mask = additive(attn_mask, dtype):reshape(N, H, Lq, S)
    else
      raise(string.format("%s: attn_mask must be 2-D [L, S] or 3-D [N * num_heads, L, S], got %s", op, shape_str(attn_mask)))
    end
  end
  if kpm ~= nil then
    check_mask_dtype(kpm, op, "key_padding_mask")
    local ok = batched and kpm.ndim == 2 and kpm.shape[1] == N and kpm.shape[2] == S
               or not batched and kpm.ndim == 1 and kpm.shape[1] == S
    if not ok then
      raise(string.format("%s: key_padding_mask has shape %s, but should be %s (batch size, source length)", op,
                          shape_str(kpm), batched and string.format("[%d, %d]", N, S) or string.format("[%d]", S)))
    end
    local m = additive(kpm, dtype):reshape(N, 1, 1, S)
    mask = mask and mask + m or m
  end
  return mask
end

-- k, v [N, S, E] with bias_k / bias_v appended as one more position
local function append_bias_kv(self, k, v)
  local N = k.shape[1]
  k = ember.cat({k, self.bias_k:expand(N, 1, self.embed_dim)}, 2)
  v = ember.cat({v, self.bias_v:expand(N, 1, self.embed_dim)}, 2)
  return k, v
end

-- the mask with `extra` more source positions, all allowed
local function pad_mask(mask, extra)
  if mask == nil or extra == 0 then return mask end
  local shape = {}
  for i, s in ipairs(mask.shape) do shape[i] = s end
  shape[4] = extra
  return ember.cat({mask, ember.zeros(shape, {dtype = mask.dtype, device = mask.device})}, 4)
end

-- [N, T, E] -> [N, H, T, head_dim]
local function split_heads(x, H)
  local N, T, E = x.shape[1], x.shape[2], x.shape[3]
  return x:reshape(N, T, H, E // H):transpose(2, 3)
end

-- the three input projections (one GEMM when query, key and value are one tensor)
local function project(self, query, key, value, q, k, v)
  local E = self.embed_dim
  local b = self.in_proj_bias
  local bq, bk, bv
  if b then bq, bk, bv = b:narrow(1, 1, E), b:narrow(1, E + 1, E), b:narrow(1, 2 * E + 1, E) end
  if self._qkv_same_embed_dim then
    local w = self.in_proj_weight
    if rawequal(query, key) and rawequal(key, value) then
      return F.linear(q, w, b):chunk(3, -1)
    end
    return F.linear(q, w:narrow(1, 1, E), bq), F.linear(k, w:narrow(1, E + 1, E), bk),
           F.linear(v, w:narrow(1, 2 * E + 1, E), bv)
  end
  return F.linear(q, self.q_proj_weight, bq), F.linear(k, self.k_proj_weight, bk), F.linear(v, self.v_proj_weight, bv)
end

--- mha:forward(query, key, value [, key_padding_mask [, need_weights = true [, attn_mask
--   [, average_attn_weights = true [, is_causal = false]]]]]) -> attn_output, attn_weights
-- (or the options in one table). See the doc entry (help(nn.MultiheadAttention)).
function L.MultiheadAttention:forward(query, key, value, ...)
  local op = "MultiheadAttention(" .. self:extra_repr() .. ")"
  local o = options(op, mha_forward_names, ...)
  local need_weights = boolean(o.need_weights, true, op, "need_weights")
  local average = boolean(o.average_attn_weights, true, op, "average_attn_weights")
  local is_causal = boolean(o.is_causal, false, op, "is_causal")
  local q, k, v, batched = mha_inputs(self, query, key, value, op)
  local N, Lq, S, E, H = q.shape[1], q.shape[2], k.shape[2], self.embed_dim, self.num_heads
  local dtype = query.dtype
  local mask = mha_mask(self, o.attn_mask, o.key_padding_mask, N, Lq, S, batched, dtype, op)
  -- is_causal is a hint when attn_mask is given (PyTorch: attn_mask is then the causal mask)
  local causal = is_causal and o.attn_mask == nil

  q, k, v = project(self, query, key, value, q, k, v)
  local extra = 0
  if self.bias_k then
    k, v = append_bias_kv(self, k, v)
    extra = 1
  end
  q, k, v = split_heads(q, H), split_heads(k, H), split_heads(v, H)
  if self.add_zero_attn then
    local shape = {N, H, 1, E // H}
    k = ember.cat({k, ember.zeros(shape, {dtype = k.dtype, device = k.device})}, 3)
    v = ember.cat({v, ember.zeros(shape, {dtype = v.dtype, device = v.device})}, 3)
    extra = extra + 1
  end
  if causal and (mask ~= nil or extra > 0 or need_weights) then
    local c = additive(causal_bool(Lq, S, q.device), dtype):view(1, 1, Lq, S)
    mask = mask and mask + c or c
    causal = false
  end
  mask = pad_mask(mask, extra)
  local p = self.training and self.dropout or 0

  local out, weights
  -- the fused op gives no gradient for the mask: a float mask that needs one takes the
  -- composed path (PyTorch differentiates through it)
  if need_weights or (mask ~= nil and mask.requires_grad) then
    local scores = q:matmul(k:transpose(-2, -1)) * (1 / math.sqrt(E // H))
    if mask then scores = scores + mask end
    weights = scores:softmax(-1)
    if p > 0 then weights = F.dropout(weights, p, true) end
    out = weights:matmul(v)
    if not need_weights then weights = nil end
  else
    out = F.scaled_dot_product_attention(q, k, v, {attn_mask = mask, dropout_p = p, is_causal = causal})
  end
  out = self.out_proj(out:transpose(2, 3):reshape(N, Lq, E))
  if not batched then
    out = out:squeeze(1)
  elseif not self.batch_first then
    out = out:transpose(1, 2)
  end
  if weights then
    if average then weights = weights:mean(2) end
    if not batched then weights = weights:squeeze(1) end
  end
  return out, weights
end

-- ---- the transformer layers -------------------------------------------------------------------

local activations = {
  relu = function(x) return x:relu() end,
  gelu = function(x) return x:gelu() end,
}

-- a string "relu" / "gelu", a function x -> y or a module; returns the function to call
-- and the module to register (nil for strings and functions)
local function check_activation(act, op)
  if act == nil then act = "relu" end
  if type(act) == "string" then
    local f = activations[act]
    if not f then raise(string.format("%s: activation should be \"relu\" or \"gelu\", not \"%s\"", op, act)) end
    return f, nil
  end
  if type(act) == "function" then return act, nil end
  if is_module(act) then return nil, act end
  raise(op .. ": activation must be \"relu\", \"gelu\", a function or a module, got " .. type(act))
end

local layer_names = {"dim_feedforward", "dropout", "activation", "layer_norm_eps", "batch_first", "norm_first",
                     "bias", "device", "dtype"}

-- what the encoder and decoder layers share: the feed-forward block, norms and dropouts
local function layer_init(self, op, d_model, nhead, o, nnorm)
  local d = count(d_model, op, "d_model", 1)
  local ff = count(o.dim_feedforward or 2048, op, "dim_feedforward", 1)
  local p = probability(o.dropout or 0.1, op, "dropout")
  local eps = o.layer_norm_eps or 1e-5
  if type(eps) ~= "number" or not (eps > 0) then raise(op .. ": layer_norm_eps must be a positive number, got " .. tostring(eps)) end
  local bias = boolean(o.bias, true, op, "bias")
  local batch_first = boolean(o.batch_first, false, op, "batch_first")
  local topts = {dtype = o.dtype, device = o.device}
  local lopts = {bias = bias, dtype = o.dtype, device = o.device}
  local act_fn, act_module = check_activation(o.activation, op)
  local function mha()
    return L.MultiheadAttention(d, nhead, {dropout = p, bias = bias, batch_first = batch_first,
                                           dtype = topts.dtype, device = topts.device})
  end
  self.self_attn = mha()
  if nnorm == 3 then self.multihead_attn = mha() end
  self.linear1 = Linear(d, ff, lopts)
  self.dropout = Dropout(p)
  self.linear2 = Linear(ff, d, lopts)
  self.norm_first = boolean(o.norm_first, false, op, "norm_first")
  for i = 1, nnorm do
    self["norm" .. i] = LayerNorm(d, {eps = eps, bias = bias, dtype = o.dtype, device = o.device})
  end
  for i = 1, nnorm do self["dropout" .. i] = Dropout(p) end
  if act_module then self.activation = act_module else self._act = act_fn end
  self.batch_first = batch_first
  self._activation_name = type(o.activation) == "string" and o.activation or (o.activation == nil and "relu") or nil
end

local function layer_repr(self)
  local parts = {}
  if self._activation_name and self._activation_name ~= "relu" then
    parts[#parts + 1] = string.format("activation=%q", self._activation_name)
  end
  if self.norm_first then parts[#parts + 1] = "norm_first=true" end
  if self.batch_first then parts[#parts + 1] = "batch_first=true" end
  return table.concat(parts, ", ")
end

-- the class of the encoder or the decoder layer (nnorm LayerNorms: 2 or 3) without its forward
local function layer_class(name, nnorm)
  local cls = Module:extend(name)
  function cls:init(d_model, nhead, ...)
    layer_init(self, name, d_model, nhead, options(name, layer_names, ...), nnorm)
  end
  cls.extra_repr = layer_repr
  return cls
end

-- the feed-forward block, last_dropout the layer's dropout after it (dropout2 or dropout3)
local function feed_forward(self, x, last_dropout)
  local act = self._act or self.activation
  return last_dropout(self.linear2(self.dropout(act(self.linear1(x)))))
end

local function check_layer_input(self, x, op, what)
  check_tensor(x, op, what)
  local d = self.linear1.in_features
  if (x.ndim ~= 2 and x.ndim ~= 3) or x.shape[x.ndim] ~= d then
    raise(string.format("%s: expected %s of shape %s or [T, %d] (unbatched), got %s", op, what,
                        self.batch_first and string.format("[N, T, %d]", d) or string.format("[T, N, %d]", d), d,
                        shape_str(x)))
  end
end

--- nn.TransformerEncoderLayer(d_model, nhead [, dim_feedforward = 2048 [, dropout = 0.1
--   [, activation = "relu" [, layer_norm_eps = 1e-5 [, batch_first = false [, norm_first = false
--   [, bias = true]]]]]]]) -> module (or the options in one table, with dtype= and device=)
-- Self-attention then a feed-forward block, each with a residual connection and LayerNorm.
-- Example: local layer = nn.TransformerEncoderLayer(16, 4, {dim_feedforward = 32, batch_first = true})
L.TransformerEncoderLayer = layer_class("TransformerEncoderLayer", 2)

local enc_layer_names = {"src_mask", "src_key_padding_mask", "is_causal"}

--- layer:forward(src [, src_mask [, src_key_padding_mask [, is_causal = false]]]) -> output, src's shape
-- (or the options in one table).
function L.TransformerEncoderLayer:forward(src, ...)
  local op = "TransformerEncoderLayer"
  local o = options(op, enc_layer_names, ...)
  check_layer_input(self, src, op, "src")
  local function sa(x)
    local y = self.self_attn(x, x, x, {attn_mask = o.src_mask, key_padding_mask = o.src_key_padding_mask,
                                       need_weights = false, is_causal = o.is_causal})
    return self.dropout1(y)
  end
  local x = src
  if self.norm_first then
    x = x + sa(self.norm1(x))
    x = x + feed_forward(self, self.norm2(x), self.dropout2)
  else
    x = self.norm1(x + sa(x))
    x = self.norm2(x + feed_forward(self, x, self.dropout2))
  end
  return x
end

--- nn.TransformerDecoderLayer(d_model, nhead [, dim_feedforward = 2048 [, dropout = 0.1
--   [, activation = "relu" [, layer_norm_eps = 1e-5 [, batch_first = false [, norm_first = false
--   [, bias = true]]]]]]]) -> module (or the options in one table, with dtype= and device=)
-- Self-attention, attention over the memory, then a feed-forward block.
-- Example: local layer = nn.TransformerDecoderLayer(16, 4, {dim_feedforward = 32})
L.TransformerDecoderLayer = layer_class("TransformerDecoderLayer", 3)

local dec_layer_names = {"tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask",
                         "tgt_is_causal", "memory_is_causal"}

--- layer:forward(tgt, memory [, tgt_mask [, memory_mask [, tgt_key_padding_mask [, memory_key_padding_mask
--   [, tgt_is_causal = false [, memory_is_causal = false]]]]]]) -> output, tgt's shape (or the options in one table).
function L.TransformerDecoderLayer:forward(tgt, memory, ...)
  local op = "TransformerDecoderLayer"
  local o = options(op, dec_layer_names, ...)
  check_layer_input(self, tgt, op, "tgt")
  check_layer_input(self, memory, op, "memory")
  local function sa(x)
    return self.dropout1(self.self_attn(x, x, x, {attn_mask = o.tgt_mask, key_padding_mask = o.tgt_key_padding_mask,
                                                  need_weights = false, is_causal = o.tgt_is_causal}))
  end
  local function ca(x)
    return self.dropout2(self.multihead_attn(x, memory, memory, {attn_mask = o.memory_mask,
                                                                 key_padding_mask = o.memory_key_padding_mask,
                                                                 need_weights = false, is_causal = o.memory_is_causal}))
  end
  local x = tgt
  if self.norm_first then
    x = x + sa(self.norm1(x))
    x = x + ca(self.norm2(x))
    x = x + feed_forward(self, self.norm3(x), self.dropout3)
  else
    x = self.norm1(x + sa(x))
    x = self.norm2(x + ca(x))
    x = self.norm3(x + feed_forward(self, x, self.dropout3))
  end
  return x
end

-- ---- the stacks -------------------------------------------------------------------------------

local function stack_init(self, op, layer, layer_cls, num_layers, ...)
  if not (is_module(layer) and getmetatable(layer) == layer_cls) then
    raise(string.format("%s: expected a %s as the layer, got %s", op, layer_cls.__name,
                        is_module(layer) and name_of(layer) or type(layer)))
  end
  local n = count(num_layers, op, "num_layers", 0)
  local o
  if is_module((...)) then o = {norm = ...} else o = options(op, {"norm"}, ...) end
  local layers = ModuleList()
  for _ = 1, n do layers:append(base.deepcopy(layer)) end
  self.layers = layers
  self.num_layers = n
  if o.norm ~= nil then
    if not is_module(o.norm) then raise(op .. ": norm must be a module, got " .. type(o.norm)) end
    self.norm = o.norm
  end
end

--- nn.TransformerEncoder(encoder_layer, num_layers [, norm]) -> num_layers deep copies of
-- encoder_layer applied in turn (children layers.0, layers.1, ..., PyTorch's names), then norm when given.
-- Example: local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, {dim_feedforward = 32}), 2)
L.TransformerEncoder = Module:extend("TransformerEncoder")
function L.TransformerEncoder:init(encoder_layer, num_layers, ...)
  stack_init(self, "TransformerEncoder", encoder_layer, L.TransformerEncoderLayer, num_layers, ...)
end

--- enc:forward(src [, mask [, src_key_padding_mask [, is_causal = false]]]) -> output (or the options in one table).
function L.TransformerEncoder:forward(src, ...)
  local o = options("TransformerEncoder", {"mask", "src_key_padding_mask", "is_causal"}, ...)
  local x = src
  for _, layer in ipairs(self.layers:children()) do
    x = layer(x, {src_mask = o.mask, src_key_padding_mask = o.src_key_padding_mask, is_causal = o.is_causal})
  end
  if self.norm then x = self.norm(x) end
  return x
end

--- nn.TransformerDecoder(decoder_layer, num_layers [, norm]) -> num_layers deep copies of
-- decoder_layer applied in turn (children layers.1, layers.2, ...), then norm when given.
-- Example: local dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(16, 4, {dim_feedforward = 32}), 2)
L.TransformerDecoder = Module:extend("TransformerDecoder")
function L.TransformerDecoder:init(decoder_layer, num_layers, ...)
  stack_init(self, "TransformerDecoder", decoder_layer, L.TransformerDecoderLayer, num_layers, ...)
end

--- dec:forward(tgt, memory [, tgt_mask [, memory_mask [, tgt_key_padding_mask [, memory_key_padding_mask
--   [, tgt_is_causal [, memory_is_causal]]]]]]) -> output (or the options in one table).
function L.TransformerDecoder:forward(tgt, memory, ...)
  local o = options("TransformerDecoder", dec_layer_names, ...)
  local x = tgt
  for _, layer in ipairs(self.layers:children()) do x = layer(x, memory, o) end
  if self.norm then x = self.norm(x) end
  return x
end

-- ---- Transformer ----------------------------------------------------------------------------------

--- nn.Transformer([d_model = 512 [, nhead = 8 [, num_encoder_layers = 6 [, num_decoder_layers = 6
--   [, dim_feedforward = 2048 [, dropout = 0.1 [, activation = "relu" [, custom_encoder [, custom_decoder
--   [, layer_norm_eps = 1e-5 [, batch_first = false [, norm_first = false [, bias = true]]]]]]]]]]]]])
-- -> the encoder-decoder model of "Attention is all you need" (or the options in one table).
-- Example: local model = nn.Transformer({d_model = 16, nhead = 2, num_encoder_layers = 1, num_decoder_layers = 1, dim_feedforward = 32})
L.Transformer = Module:extend("Transformer")
local transformer_names = {"d_model", "nhead", "num_encoder_layers", "num_decoder_layers", "dim_feedforward",
                           "dropout", "activation", "custom_encoder", "custom_decoder", "layer_norm_eps",
                           "batch_first", "norm_first", "bias", "device", "dtype"}

function L.Transformer:init(...)
  local op = "Transformer"
  local o = options(op, transformer_names, ...)
  local d = count(o.d_model or 512, op, "d_model", 1)
  local nhead = o.nhead or 8
  local lo = {dim_feedforward = o.dim_feedforward, dropout = o.dropout, activation = o.activation,
              layer_norm_eps = o.layer_norm_eps, batch_first = o.batch_first, norm_first = o.norm_first,
              bias = o.bias, device = o.device, dtype = o.dtype}
  local nopts = {eps = o.layer_norm_eps or 1e-5, bias = o.bias, dtype = o.dtype, device = o.device}
  -- the encoder or the decoder (part): o's custom_<part> when given, else a stack of
  -- num_<part>_layers new layers with a final LayerNorm
  local function build(part, stack_cls, layer_cls)
    local custom = o["custom_" .. part]
    if custom ~= nil then
      if not is_module(custom) then raise(op .. ": custom_" .. part .. " must be a module") end
      return custom
    end
    local num = "num_" .. part .. "_layers"
    return stack_cls(layer_cls(d, nhead, lo), count(o[num] or 6, op, num), LayerNorm(d, nopts))
  end
  self.encoder = build("encoder", L.TransformerEncoder, L.TransformerEncoderLayer)
  self.decoder = build("decoder", L.TransformerDecoder, L.TransformerDecoderLayer)
  self.d_model, self.nhead = d, nhead
  self.batch_first = boolean(o.batch_first, false, op, "batch_first")
  -- PyTorch's _reset_parameters: every matrix xavier_uniform_
  for _, p in ipairs(self:parameters()) do
    if p.ndim > 1 then init.xavier_uniform_(p) end
  end
end

local transformer_forward_names = {"src_mask", "tgt_mask", "memory_mask", "src_key_padding_mask",
                                   "tgt_key_padding_mask", "memory_key_padding_mask", "src_is_causal",
                                   "tgt_is_causal", "memory_is_causal"}

--- model:forward(src, tgt [, src_mask [, tgt_mask [, memory_mask [, src_key_padding_mask
--   [, tgt_key_padding_mask [, memory_key_padding_mask]]]]]]) -> output [T, N, d_model] (or
-- [N, T, d_model] with batch_first); or the options in one table (with src_is_causal=, tgt_is_causal=, ...).
function L.Transformer:forward(src, tgt, ...)
  local op = "Transformer"
  local o = options(op, transformer_forward_names, ...)
  check_tensor(src, op, "src")
  check_tensor(tgt, op, "tgt")
  local bdim = self.batch_first and 1 or 2
  if src.ndim ~= tgt.ndim or (src.ndim == 3 and src.shape[bdim] ~= tgt.shape[bdim]) then
    raise(string.format("%s: the batch size of src and tgt must be equal; got %s and %s", op, shape_str(src), shape_str(tgt)))
  end
  if src.shape[src.ndim] ~= self.d_model or tgt.shape[tgt.ndim] ~= self.d_model then
    raise(string.format("%s: the feature size of src and tgt must be d_model (%d); got %s and %s", op, self.d_model,
                        shape_str(src), shape_str(tgt)))
  end
  local memory = self.encoder(src, {mask = o.src_mask, src_key_padding_mask = o.src_key_padding_mask,
                                    is_causal = o.src_is_causal})
  return self.decoder(tgt, memory, {tgt_mask = o.tgt_mask, memory_mask = o.memory_mask,
                                    tgt_key_padding_mask = o.tgt_key_padding_mask,
                                    memory_key_padding_mask = o.memory_key_padding_mask,
                                    tgt_is_causal = o.tgt_is_causal, memory_is_causal = o.memory_is_causal})
end


--- nn.Transformer.generate_square_subsequent_mask(sz [, device [, dtype]] [, {dtype = default, device = "cpu"}]) -> [sz, sz]
-- float mask: -inf above the diagonal (the future), 0 on and below it.
-- Example: nn.Transformer.generate_square_subsequent_mask(3)
function L.Transformer.generate_square_subsequent_mask(sz, ...)
  local op = "Transformer.generate_square_subsequent_mask"
  if is_module(sz) then return L.Transformer.generate_square_subsequent_mask(...) end   -- model:generate_...(sz)
  local n = count(sz, op, "sz")
  local opts = options(op, {"device", "dtype"}, ...)
  local dtype = opts.dtype or ember.get_default_dtype()
  return ember.zeros({n, n}, {dtype = dtype, device = opts.device}):masked_fill(causal_bool(n, n, opts.device), -math.huge)
end

return L
