-- ember.hf.common — what the architectures of ember.hf share: layers made from the file's
-- tensors (no random initialisation first), the activations transformers names in its
-- configs, the attention masks as transformers 5.x builds them, and attention over them.
--
-- The layers are ember.nn's classes (nn.Linear, nn.Embedding, nn.LayerNorm, nn.RMSNorm)
-- with a constructor taking the tensors, so they print, convert and train as those do;
-- Conv1D is GPT-2's transposed linear layer (weight [in, out], transformers' Conv1D).
local ember = require "ember"
local nn = ember.nn
local F = nn.functional
local raise = require("ember.errors").raise

local M = {}

-- ---- layers from tensors -------------------------------------------------------------

--- Linear(weight [out, in], bias [out] or nil): nn.Linear over the given tensors.
M.Linear = nn.Linear:extend("Linear")
function M.Linear:init(weight, bias)
  self.in_features, self.out_features = weight.shape[2], weight.shape[1]
  self.weight = weight
  self.bias = bias
end

--- Conv1D(weight [in, out], bias [out]): y = x @ weight + bias (transformers' Conv1D,
-- GPT-2's layers, whose weights the file stores transposed from nn.Linear's).
M.Conv1D = nn.Module:extend("Conv1D")
function M.Conv1D:init(weight, bias)
  self.nx, self.nf = weight.shape[1], weight.shape[2]
  self.weight = weight
  self.bias = bias
end
function M.Conv1D:extra_repr() return string.format("nf=%d, nx=%d", self.nf, self.nx) end
function M.Conv1D:forward(x)
  if not ember.is_tensor(x) or x.ndim == 0 or x.shape[x.ndim] ~= self.nx then
    raise(string.format("Conv1D(%s): expected an input of shape [..., %d], got %s", self:extra_repr(), self.nx,
                        ember.is_tensor(x) and "[" .. table.concat(x.shape, ", ") .. "]" or type(x)))
  end
  return F.linear(x, self.weight:t(), self.bias)
end

--- Embedding(weight [num, dim] [, padding_idx]): nn.Embedding over the given tensor
-- (1-based indices; padding_idx 1-based, its row gets no gradient).
M.Embedding = nn.Embedding:extend("Embedding")
function M.Embedding:init(weight, padding_idx)
  self.num_embeddings, self.embedding_dim = weight.shape[1], weight.shape[2]
  if padding_idx and (padding_idx < 1 or padding_idx > self.num_embeddings) then padding_idx = nil end
  self.padding_idx = padding_idx
  self.weight = weight
end

--- LayerNorm(weight, bias, eps): nn.LayerNorm over the given tensors.
M.LayerNorm = nn.LayerNorm:extend("LayerNorm")
function M.LayerNorm:init(weight, bias, eps)
  self.normalized_shape = {weight.shape[1]}
  self.eps = eps
  self.elementwise_affine = true
  self.weight = weight
  self.bias = bias
end

-- ---- causal language models ----------------------------------------------------------------

--- causal_lm(self, cfg, ctx, child, body_name, add_body, embed, hidden_size): the body of a
-- ...ForCausalLM (GPT2Model, LlamaModel: add_body(module, cfg, ctx, prefix) registers its
-- modules) as the child `child` when the file's names start with it, else on self (files of
-- the bare model); then lm_head, tied to the body's `embed` table unless
-- cfg.tie_word_embeddings is false (then the file's lm_head.weight).
function M.causal_lm(self, cfg, ctx, child, body_name, add_body, embed, hidden_size)
  self.cfg = cfg
  if ctx.has(child .. "." .. embed .. ".weight") then
    local Body = nn.Module:extend(body_name)
    function Body:init() add_body(self, cfg, ctx, child .. ".") end
    self[child] = Body()
  else
    add_body(self, cfg, ctx, "")
  end
  local body = rawget(self, "_modules")[child] or self
  local w = body[embed].weight
  if not cfg.tie_word_embeddings then w = ctx.take("lm_head.weight", {cfg.vocab_size, hidden_size}) end
  self.lm_head = M.Linear(w)
end

-- ---- activations (transformers' ACT2FN names) -------------------------------------------

local ACT = {
  gelu = function(x) return F.gelu(x) end,
  gelu_new = function(x) return F.gelu(x, {approximate = "tanh"}) end,
  gelu_pytorch_tanh = function(x) return F.gelu(x, {approximate = "tanh"}) end,
  gelu_fast = function(x) return F.gelu(x, {approximate = "tanh"}) end,
  quick_gelu = function(x) return x * (x * 1.702):sigmoid() end,
  relu = function(x) return x:relu() end,
  silu = function(x) return x:silu() end,
  swish = function(x) return x:silu() end,
  tanh = function(x) return x:tanh() end,
}

--- activation(name, where) -> the function transformers' ACT2FN[name] computes.
function M.activation(name, where)
  local f = ACT[name]
  if not f then
    local known = {}
    for k in pairs(ACT) do known[#known + 1] = k end
    table.sort(known)
    raise(string.format("ember.hf.load: %s: activation '%s' is not supported (supported: %s)", where,
                        tostring(name), table.concat(known, ", ")))
  end
  return f
end

-- ---- attention -------------------------------------------------------------------------

-- The attention_mask option: nil, or a [B, S] tensor of 1 (a token) and 0 (padding),
-- integer, bool or float (S: the cached tokens and input_ids'); returned as bool, or nil
-- when it hides nothing.
local function key_mask(mask, B, T, past, op)
  if mask == nil then return nil end
  if not ember.is_tensor(mask) then raise(op .. ": attention_mask must be a tensor, got " .. type(mask)) end
  local S = past + T
  if mask.ndim ~= 2 or mask.shape[1] ~= B or mask.shape[2] ~= S then
    if past == 0 then
      raise(string.format("%s: attention_mask [%s] must have input_ids' shape [%d, %d]", op,
                          table.concat(mask.shape, ", "), B, T))
    end
    raise(string.format("%s: attention_mask [%s] must have shape [%d, %d]: the cache's %d tokens and input_ids' %d",
                        op, table.concat(mask.shape, ", "), B, S, past, T))
  end
  local m = mask.dtype == "bool" and mask or mask:ne(0)
  if m:all():item() then return nil end
  return m
end

--- masks(attention_mask, B, T, past, device, causal, sliding_window, op) -> a table for
-- attend(): {is_causal = true} or {} when nothing but causality hides keys, else
-- {mask = bool [B, 1, T, S] (true: the key takes part), keep = [B, 1, T, 1] or nil}, for T
-- queries after `past` cached tokens (S = past + T keys). As transformers 5.x: key j is
-- seen from query i when it is not padding, j <= past + i (causal) and
-- past + i - j < sliding_window. A query that sees no key (left padding's first rows) gets
-- an attention output of zeros, as PyTorch's scaled_dot_product_attention gives such rows:
-- the row is opened to every key, so that nothing is NaN, and keep zeroes its output.
function M.masks(attention_mask, B, T, past, device, causal, sliding_window, op)
  local S = past + T
  local keys = key_mask(attention_mask, B, T, past, op)
  if sliding_window and sliding_window >= S then sliding_window = nil end
  if keys == nil and not causal then return {} end
  if keys == nil and not sliding_window then
    if past == 0 then return {is_causal = true} end
    if T == 1 then return {} end            -- one new query sees every key
  end
  if keys and keys.device ~= device then keys = keys:to(device) end
  local m
  if causal then
    m = ember.ones(T, S, {dtype = "bool", device = device}):tril(past)
    if sliding_window then
      m = m:logical_and(ember.ones(T, S, {dtype = "bool", device = device}):triu(past - sliding_window + 1))
    end
    m = m:view(1, 1, T, S)
  end
  if keys then
    local k = keys:view(B, 1, 1, S)
    m = m and m:logical_and(k) or k:expand(B, 1, T, S)
  end
  local seen = m:any(-1, true)                    -- [B, 1, T, 1]
  if seen:all():item() then return {mask = m} end
  return {mask = m:logical_or(seen:logical_not()), keep = seen}
end

-- ---- the key/value cache ------------------------------------------------------------------

--- DynamicCache() -> an empty cache of keys and values (transformers' DynamicCache): a
-- causal model given {cache = c} appends each layer's keys and values [B, Hkv, T, D] to it
-- and attends over everything it holds, so the next call passes only the new tokens.
local Cache = {__name = "DynamicCache"}
Cache.__index = Cache
function M.DynamicCache() return setmetatable({keys = {}, values = {}}, Cache) end

--- cache:get_seq_length([layer = 1]) -> the number of tokens cached (in that layer).
function Cache:get_seq_length(layer)
  local k = self.keys[layer or 1]
  return k and k.shape[3] or 0
end

-- buf [B, H, cap, D] holding n tokens, grown to hold n + t (capacity doubled, so a token
-- costs O(1) copies amortised), then x [B, H, t, D] written after them in place
local function append(buf, n, x)
  local t = x.shape[3]
  if not buf or buf.shape[3] < n + t or buf.dtype ~= x.dtype or buf.device ~= x.device then
    local cap = math.max(2 * (buf and buf.shape[3] or 0), n + t, 16)
    local grown = ember.empty(x.shape[1], x.shape[2], cap, x.shape[4], {dtype = x.dtype, device = x.device})
    if n > 0 then grown:narrow(3, 1, n):copy_(buf:narrow(3, 1, n)) end
    buf = grown
  end
  buf:narrow(3, n + 1, t):copy_(x)
  return buf
end

--- cache:update(k, v, layer) -> the layer's keys and values with k and v appended (dim 3).
-- Without gradients (generation), k and v are written into buffers that grow in place; a
-- cache used while recording concatenates, so gradients flow to every step's keys.
function Cache:update(k, v, layer)
  local ok, ov = self.keys[layer], self.values[layer]
  self._kbuf, self._vbuf = self._kbuf or {}, self._vbuf or {}
  if ember.is_grad_enabled() and (k.requires_grad or v.requires_grad) then
    if ok then k, v = ember.cat({ok, k}, 3), ember.cat({ov, v}, 3) end
    self.keys[layer], self.values[layer] = k, v
    self._kbuf[layer], self._vbuf[layer] = nil, nil
    return k, v
  end
  local n = ok and ok.shape[3] or 0
  -- the buffers, or (after a concatenating update) the cached tensors themselves
  local kb = self._kbuf[layer] or (ok and ok:contiguous())
  local vb = self._vbuf[layer] or (ov and ov:contiguous())
  kb, vb = append(kb, n, k), append(vb, n, v)
  self._kbuf[layer], self._vbuf[layer] = kb, vb
  k, v = kb:narrow(3, 1, n + k.shape[3]), vb:narrow(3, 1, n + v.shape[3])
  self.keys[layer], self.values[layer] = k, v
  return k, v
end

--- cache_arg(o, op) -> the cache option (nil or a DynamicCache) and the tokens it holds.
function M.cache_arg(o, op)
  local c = o.cache
  if c == nil then return nil, 0 end
  if getmetatable(c) ~= Cache then
    raise(op .. ": cache must be an ember.hf.DynamicCache(), got " .. (type(c) == "table" and "a table" or type(c)))
  end
  return c, c:get_seq_length()
end

--- attend(q [B, H, T, D], k, v [B, Hkv, S, D], masks, dropout_p, scale) -> [B, T, H * D].
-- Grouped-query attention (Hkv dividing H) shares each key/value head among H / Hkv
-- consecutive query heads, as transformers' repeat_kv, through broadcasting (no copies).
function M.attend(q, k, v, m, dropout_p, scale)
  local B, H, T, D = q.shape[1], q.shape[2], q.shape[3], q.shape[4]
  local Hkv = k.shape[2]
  local opts = {attn_mask = m.mask, is_causal = m.is_causal, dropout_p = dropout_p, scale = scale}
  local out
  if Hkv == H then
    out = F.scaled_dot_product_attention(q, k, v, opts)
  else
    local g = H // Hkv
    if opts.attn_mask then opts.attn_mask = opts.attn_mask:unsqueeze(2) end
    out = F.scaled_dot_product_attention(q:view(B, Hkv, g, T, D), k:unsqueeze(3), v:unsqueeze(3), opts)
    out = out:reshape(B, H, T, D)
  end
  if m.keep then out = out * m.keep:to(out.dtype) end
  return out:transpose(2, 3):reshape(B, T, H * D)
end

--- dropout(x, p, module): F.dropout in training mode (p from the config), x otherwise.
function M.dropout(x, p, module)
  if module.training and p and p > 0 then return F.dropout(x, p, true) end
  return x
end

--- stack(layers, x, output_hidden_states, norm, step) -> x, hidden_states: x through each
-- layer of the ModuleList (step(layer, x) -> x), then norm (nil: none). hidden_states (when
-- asked) is transformers' list: x, then each layer's output, the last one after norm.
function M.stack(layers, x, want_hidden, norm, step)
  local hidden = want_hidden and {x} or nil
  for _, layer in ipairs(layers:children()) do
    x = step(layer, x)
    if hidden then hidden[#hidden + 1] = x end
  end
  if norm then
    x = norm(x)
    if hidden then hidden[#hidden] = x end
  end
  return x, hidden
end

-- ---- forward arguments -----------------------------------------------------------------

local forward_names = {"attention_mask", "output_hidden_states", "position_ids", "token_type_ids", "cache"}

--- forward_args(self, input_ids, ...) -> B, T, the options table. Checks input_ids (an
-- integer [B, T] tensor of 1-based token ids: the file's vocabulary ids plus one).
function M.forward_args(self, op, input_ids, ...)
  local o = require("ember.args").options(op, forward_names, ...)
  if not ember.is_tensor(input_ids) then raise(op .. ": input_ids must be a tensor, got " .. type(input_ids)) end
  if input_ids.ndim ~= 2 or input_ids:is_floating_point() or input_ids.dtype == "bool" then
    raise(string.format("%s: input_ids must be an integer tensor [batch, sequence] of token ids (the vocabulary's "
                        .. "ids plus one), got %s [%s]", op, input_ids.dtype, table.concat(input_ids.shape, ", ")))
  end
  return input_ids.shape[1], input_ids.shape[2], o
end

--- positions(o, B, T, past, device, op) -> int64 [B or 1, T] of 1-based positions:
-- position_ids when given, else past + 1 .. past + T (transformers' forward counts from the
-- first column whatever the padding; generation derives them from the mask itself).
function M.positions(o, B, T, past, device, op)
  local p = o.position_ids
  if p == nil then return ember.arange(past + 1, past + T + 1, {device = device}):view(1, T) end
  if not ember.is_tensor(p) or p:is_floating_point() or not (p.ndim == 1 or p.ndim == 2)
     or p.shape[p.ndim] ~= T or (p.ndim == 2 and p.shape[1] ~= B and p.shape[1] ~= 1) then
    raise(string.format("%s: position_ids must be an integer tensor [%d, %d], [1, %d] or [%d] of 1-based positions",
                        op, B, T, T, T))
  end
  if p.ndim == 1 then p = p:view(1, T) end
  return p.device == device and p or p:to(device)
end

return M
