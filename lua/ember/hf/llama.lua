-- ember.hf.llama — the Llama family (transformers' LlamaForCausalLM, MistralForCausalLM,
-- Qwen2ForCausalLM) built from a model folder's tensors: RMSNorm before attention and MLP,
-- rotary position embeddings (rope types default, linear and llama3), grouped-query
-- attention (num_key_value_heads), a SwiGLU MLP, a final RMSNorm and lm_head (tied to
-- embed_tokens when config.tie_word_embeddings). The differences between the three:
--   llama    attention_bias puts biases on q, k, v and o_proj; mlp_bias on the MLP
--   qwen2    biases on q, k and v_proj always, none on o_proj; sliding-window layers from
--            layer_types, or use_sliding_window from layer max_window_layers on
--   mistral  sliding_window (when set) on every layer
-- Names are the file's: "model.layers.0.self_attn.q_proj.weight", "lm_head.weight".
local ember = require "ember"
local nn = ember.nn
local common = require "ember.hf.common"
local raise = require("ember.errors").raise

local M = {}

-- transformers' LlamaRMSNorm: normalised in float32, rounded to the input's dtype, then
-- times the weight (F.rms_norm multiplies before rounding; the same in float32)
local RMSNorm = nn.RMSNorm:extend("LlamaRMSNorm")
function RMSNorm:init(weight, eps)
  self.normalized_shape = {weight.shape[1]}
  self.eps = eps
  self.elementwise_affine = true
  self.weight = weight
end
function RMSNorm:forward(x)
  local y = nn.functional.rms_norm(x, self.normalized_shape, nil, self.eps)
  return self.weight * y
end

-- the inverse frequencies of the rotary embedding, float32 [head_dim / 2], computed as
-- transformers' rope init functions do (in float32)
local function inv_freq(cfg, ctx)
  local rp = cfg.rope
  local dim = cfg.head_dim
  local base = rp.rope_theta
  local exps = ember.arange(0, dim, 2):to("float32") / dim
  local inv = ember.full({dim // 2}, base, {dtype = "float32"}):pow(exps):reciprocal()
  local kind = rp.rope_type
  if kind == "default" then return inv end
  if kind == "linear" then return inv / rp.factor end
  if kind == "llama3" then
    local factor, lo, hi = rp.factor, rp.low_freq_factor, rp.high_freq_factor
    local old = rp.original_max_position_embeddings or cfg.max_position_embeddings
    local low_wavelen, high_wavelen = old / lo, old / hi
    local wavelen = inv:reciprocal() * (2 * math.pi)
    local scaled = ember.where(wavelen:gt(low_wavelen), inv / factor, inv)
    local smooth = (wavelen:reciprocal() * old - lo) / (hi - lo)
    local smoothed = scaled * (smooth:neg() + 1) / factor + scaled * smooth
    local medium = wavelen:lt(high_wavelen):logical_not():logical_and(wavelen:gt(low_wavelen):logical_not())
    return ember.where(medium, smoothed, scaled)
  end
  raise(string.format("%s: %s: rope type '%s' is not supported (supported: default, linear, llama3)", ctx.op,
                      ctx.config_path, tostring(kind)))
end

local function rotate_half(x)
  local half = x.shape[x.ndim] // 2
  local x1, x2 = x:split(half, -1)
  return ember.cat({x2:neg(), x1}, -1)
end

local Attention = nn.Module:extend("LlamaAttention")
function Attention:init(cfg, ctx, p, layer)
  local C, H, Hkv, D = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
  local function proj(name, out, inp, bias)
    return common.Linear(ctx.take(p .. name .. ".weight", {out, inp}), bias and ctx.take(p .. name .. ".bias", {out}) or nil)
  end
  self.q_proj = proj("q_proj", H * D, C, cfg.qkv_bias)
  self.k_proj = proj("k_proj", Hkv * D, C, cfg.qkv_bias)
  self.v_proj = proj("v_proj", Hkv * D, C, cfg.qkv_bias)
  self.o_proj = proj("o_proj", C, H * D, cfg.o_bias)
  self.num_heads, self.num_key_value_heads, self.head_dim = H, Hkv, D
  self.scaling = 1 / math.sqrt(D)
  self.attention_dropout = cfg.attention_dropout
  self.layer_idx = layer
end
function Attention:forward(x, cos, sin, masks, cache)
  local B, T = x.shape[1], x.shape[2]
  local D = self.head_dim
  local q = self.q_proj(x):view(B, T, -1, D):transpose(2, 3)
  local k = self.k_proj(x):view(B, T, -1, D):transpose(2, 3)
  local v = self.v_proj(x):view(B, T, -1, D):transpose(2, 3)
  q = q * cos + rotate_half(q) * sin
  k = k * cos + rotate_half(k) * sin
  if cache then k, v = cache:update(k, v, self.layer_idx) end
  local y = common.attend(q, k, v, masks, self.training and self.attention_dropout or 0, self.scaling)
  return self.o_proj(y)
end

local MLP = nn.Module:extend("LlamaMLP")
function MLP:init(cfg, ctx, p)
  local C, I, b = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
  local function proj(name, out, inp)
    return common.Linear(ctx.take(p .. name .. ".weight", {out, inp}), b and ctx.take(p .. name .. ".bias", {out}) or nil)
  end
  self.gate_proj = proj("gate_proj", I, C)
  self.up_proj = proj("up_proj", I, C)
  self.down_proj = proj("down_proj", C, I)
  self.act_fn = common.activation(cfg.hidden_act, ctx.config_path)
end
function MLP:forward(x) return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x)) end

local Layer = nn.Module:extend("LlamaDecoderLayer")
function Layer:init(cfg, ctx, p, sliding, layer)
  local C = cfg.hidden_size
  self.self_attn = Attention(cfg, ctx, p .. "self_attn.", layer)
  self.mlp = MLP(cfg, ctx, p .. "mlp.")
  self.input_layernorm = RMSNorm(ctx.take(p .. "input_layernorm.weight", {C}), cfg.rms_norm_eps)
  self.post_attention_layernorm = RMSNorm(ctx.take(p .. "post_attention_layernorm.weight", {C}), cfg.rms_norm_eps)
  self.sliding_window = sliding
end
function Layer:forward(x, cos, sin, masks, cache)
  x = x + self.self_attn(self.input_layernorm(x), cos, sin, masks, cache)
  return x + self.mlp(self.post_attention_layernorm(x))
end

local function add_body(body, cfg, ctx, p)
  local C = cfg.hidden_size
  local pad = math.tointeger(cfg.pad_token_id)
  body.embed_tokens = common.Embedding(ctx.take(p .. "embed_tokens.weight", {cfg.vocab_size, C}), pad and pad + 1)
  local layers = {}
  for i = 1, cfg.num_hidden_layers do
    layers[i] = Layer(cfg, ctx, string.format("%slayers.%d.", p, i - 1), cfg.sliding[i], i)
  end
  body.layers = nn.ModuleList(layers)
  body.norm = RMSNorm(ctx.take(p .. "norm.weight", {C}), cfg.rms_norm_eps)
end

local ForCausalLM = nn.Module:extend("LlamaForCausalLM")
M.LlamaForCausalLM = ForCausalLM
function ForCausalLM:init(cfg, ctx)
  common.causal_lm(self, cfg, ctx, "model", "LlamaModel", add_body, "embed_tokens", cfg.hidden_size)
  self.inv_freq = inv_freq(cfg, ctx)   -- float32 whatever the model's dtype, as transformers keeps it
end

--- model(input_ids [, {attention_mask =, output_hidden_states =, position_ids =, cache =}])
-- -> logits [B, T, vocab] [, hidden_states]
function ForCausalLM:forward(input_ids, ...)
  local op = self.cfg.class_name
  local B, T, o = common.forward_args(self, op, input_ids, ...)
  if o.token_type_ids ~= nil then raise(op .. ": token_type_ids is not an input of this model") end
  local cache, past = common.cache_arg(o, op)
  local cfg, body = self.cfg, self.model or self
  local dev = body.embed_tokens.weight.device
  if input_ids.device ~= dev then input_ids = input_ids:to(dev) end
  local x = body.embed_tokens(input_ids)
  -- cos and sin [B or 1, 1, T, head_dim] in the model's dtype, from float32 angles
  if self.inv_freq.device ~= dev then self.inv_freq = self.inv_freq:to(dev) end
  local pos = common.positions(o, B, T, past, dev, op):to("float32") - 1
  local freqs = pos:unsqueeze(-1) * self.inv_freq
  local emb = ember.cat({freqs, freqs}, -1):unsqueeze(2)
  local cos, sin = emb:cos():to(x.dtype), emb:sin():to(x.dtype)
  local masks = {}   -- by sliding window (false: none)
  local hidden
  x, hidden = common.stack(body.layers, x, o.output_hidden_states, body.norm, function(layer, y)
    local w = layer.sliding_window or false
    masks[w] = masks[w] or common.masks(o.attention_mask, B, T, past, dev, true, layer.sliding_window, op)
    return layer(y, cos, sin, masks[w], cache)
  end)
  return self.lm_head(x), hidden
end

local CLASS = {llama = "LlamaForCausalLM", mistral = "MistralForCausalLM", qwen2 = "Qwen2ForCausalLM"}

-- config.json's values with transformers' defaults; rope parameters from rope_parameters
-- (transformers 5.x) or rope_theta and rope_scaling (older files)
local function config(c, ctx)
  local cfg = {}
  for k, v in pairs(c) do cfg[k] = v end
  local kind = c.model_type
  cfg.class_name = CLASS[kind]
  cfg.num_key_value_heads = c.num_key_value_heads or c.num_attention_heads
  cfg.head_dim = c.head_dim or c.hidden_size // c.num_attention_heads
  cfg.rms_norm_eps = c.rms_norm_eps or 1e-6
  cfg.hidden_act = c.hidden_act or "silu"
  cfg.attention_dropout = c.attention_dropout or 0
  cfg.tie_word_embeddings = c.tie_word_embeddings == true
  cfg.max_position_embeddings = c.max_position_embeddings or 2048
  for _, k in ipairs{"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size"} do
    if math.type(c[k]) ~= "integer" then
      raise(string.format("%s: %s: %s must be an integer, got %s", ctx.op, ctx.config_path, k, tostring(c[k])))
    end
  end
  if cfg.num_attention_heads % cfg.num_key_value_heads ~= 0 then
    raise(string.format("%s: %s: num_attention_heads %d is not a multiple of num_key_value_heads %d", ctx.op,
                        ctx.config_path, cfg.num_attention_heads, cfg.num_key_value_heads))
  end
  if kind == "qwen2" then
    cfg.qkv_bias, cfg.o_bias, cfg.mlp_bias = true, false, false
  else
    cfg.qkv_bias = c.attention_bias == true
    cfg.o_bias, cfg.mlp_bias = cfg.qkv_bias, c.mlp_bias == true
  end
  local rp = {}
  for k, v in pairs(type(c.rope_parameters) == "table" and c.rope_parameters or c.rope_scaling or {}) do rp[k] = v end
  rp.rope_type = rp.rope_type or rp.type or "default"
  rp.rope_theta = rp.rope_theta or c.rope_theta or 10000.0
  if (c.partial_rotary_factor or rp.partial_rotary_factor or 1) ~= 1 then
    raise(string.format("%s: %s: partial_rotary_factor is not supported", ctx.op, ctx.config_path))
  end
  cfg.rope = rp
  -- which layers attend within a sliding window
  cfg.sliding = {}
  for i = 1, c.num_hidden_layers do
    local w
    if kind == "mistral" then
      w = math.tointeger(c.sliding_window)
    elseif kind == "qwen2" then
      local types = c.layer_types
      local sliding
      if type(types) == "table" then
        sliding = types[i] == "sliding_attention"
      else
        sliding = c.use_sliding_window == true and i - 1 >= (c.max_window_layers or 28)
      end
      if sliding then w = math.tointeger(c.sliding_window) end
    end
    cfg.sliding[i] = w
  end
  return cfg
end

--- model:generate(input_ids [, opts]) -> ids: text generation with a key/value cache
-- (ember.hf.generate's header has the options)
function ForCausalLM:generate(...) return require("ember.hf.generate").generate(self, ...) end

function M.build(c, ctx)
  return ForCausalLM(config(c, ctx), ctx)
end

return M
