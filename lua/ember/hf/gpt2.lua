-- ember.hf.gpt2 — GPT-2 (transformers' GPT2LMHeadModel) built from a model folder's tensors.
-- Pre-LayerNorm blocks, Conv1D weights [in, out] as the file stores them, learned positions,
-- the activation config.activation_function names (gelu_new: the tanh form), a final
-- LayerNorm and lm_head, tied to wte unless config.tie_word_embeddings is false. Names are
-- the file's: "transformer.h.0.attn.c_attn.weight", or without "transformer." when the file
-- has none (GPT2Model's files); lm_head.weight is then a name of wte's tensor.
local ember = require "ember"
local nn = ember.nn
local common = require "ember.hf.common"
local raise = require("ember.errors").raise

local M = {}

local Attention = nn.Module:extend("GPT2Attention")
function Attention:init(cfg, ctx, p, layer)
  local C = cfg.n_embd
  self.c_attn = common.Conv1D(ctx.take(p .. "c_attn.weight", {C, 3 * C}), ctx.take(p .. "c_attn.bias", {3 * C}))
  self.c_proj = common.Conv1D(ctx.take(p .. "c_proj.weight", {C, C}), ctx.take(p .. "c_proj.bias", {C}))
  self.n_head, self.head_dim = cfg.n_head, C // cfg.n_head
  local scale = cfg.scale_attn_weights == false and 1.0 or 1 / math.sqrt(self.head_dim)
  if cfg.scale_attn_by_inverse_layer_idx then scale = scale / layer end
  self.scaling = scale
  self.attn_pdrop, self.resid_pdrop = cfg.attn_pdrop, cfg.resid_pdrop
  self.layer_idx = layer
end
function Attention:forward(x, masks, cache)
  local B, T, C = x.shape[1], x.shape[2], x.shape[3]
  local H, D = self.n_head, self.head_dim
  local q, k, v = self.c_attn(x):split(C, 3)
  local function heads(t) return t:reshape(B, T, H, D):transpose(2, 3) end
  q, k, v = heads(q), heads(k), heads(v)
  if cache then k, v = cache:update(k, v, self.layer_idx) end
  local y = common.attend(q, k, v, masks, self.training and self.attn_pdrop or 0, self.scaling)
  return common.dropout(self.c_proj(y), self.resid_pdrop, self)
end

local MLP = nn.Module:extend("GPT2MLP")
function MLP:init(cfg, ctx, p)
  local C, I = cfg.n_embd, cfg.n_inner
  self.c_fc = common.Conv1D(ctx.take(p .. "c_fc.weight", {C, I}), ctx.take(p .. "c_fc.bias", {I}))
  self.c_proj = common.Conv1D(ctx.take(p .. "c_proj.weight", {I, C}), ctx.take(p .. "c_proj.bias", {C}))
  self.act = common.activation(cfg.activation_function, ctx.config_path)
  self.resid_pdrop = cfg.resid_pdrop
end
function MLP:forward(x)
  return common.dropout(self.c_proj(self.act(self.c_fc(x))), self.resid_pdrop, self)
end

local Block = nn.Module:extend("GPT2Block")
function Block:init(cfg, ctx, p, layer)
  local C, eps = cfg.n_embd, cfg.layer_norm_epsilon
  self.ln_1 = common.LayerNorm(ctx.take(p .. "ln_1.weight", {C}), ctx.take(p .. "ln_1.bias", {C}), eps)
  self.attn = Attention(cfg, ctx, p .. "attn.", layer)
  self.ln_2 = common.LayerNorm(ctx.take(p .. "ln_2.weight", {C}), ctx.take(p .. "ln_2.bias", {C}), eps)
  self.mlp = MLP(cfg, ctx, p .. "mlp.")
end
function Block:forward(x, masks, cache)
  x = x + self.attn(self.ln_1(x), masks, cache)
  return x + self.mlp(self.ln_2(x))
end

-- GPT2Model's modules, registered on `body` (the transformer child, or the model itself)
local function add_body(body, cfg, ctx, p)
  local C = cfg.n_embd
  body.wte = common.Embedding(ctx.take(p .. "wte.weight", {cfg.vocab_size, C}))
  body.wpe = common.Embedding(ctx.take(p .. "wpe.weight", {cfg.n_positions, C}))
  local blocks = {}
  for i = 1, cfg.n_layer do blocks[i] = Block(cfg, ctx, string.format("%sh.%d.", p, i - 1), i) end
  body.h = nn.ModuleList(blocks)
  body.ln_f = common.LayerNorm(ctx.take(p .. "ln_f.weight", {C}), ctx.take(p .. "ln_f.bias", {C}),
                               cfg.layer_norm_epsilon)
end

local LMHead = nn.Module:extend("GPT2LMHeadModel")
M.GPT2LMHeadModel = LMHead

function LMHead:init(cfg, ctx)
  common.causal_lm(self, cfg, ctx, "transformer", "GPT2Model", add_body, "wte", cfg.n_embd)
end

--- model(input_ids [, {attention_mask =, output_hidden_states =, position_ids =, token_type_ids =, cache =}])
-- -> logits [B, T, vocab] [, hidden_states]
function LMHead:forward(input_ids, ...)
  local op = "GPT2LMHeadModel"
  local B, T, o = common.forward_args(self, op, input_ids, ...)
  local cache, past = common.cache_arg(o, op)
  local cfg, body = self.cfg, self.transformer or self
  if past + T > cfg.n_positions then
    raise(string.format("%s: %d tokens is more than the model's %d positions (n_positions)", op, past + T,
                        cfg.n_positions))
  end
  local dev = body.wte.weight.device
  if input_ids.device ~= dev then input_ids = input_ids:to(dev) end
  local x = body.wte(input_ids) + body.wpe(common.positions(o, B, T, past, dev, op))
  if o.token_type_ids ~= nil then x = x + body.wte(o.token_type_ids:to(dev)) end
  x = common.dropout(x, cfg.embd_pdrop, self)
  local masks = common.masks(o.attention_mask, B, T, past, dev, true, nil, op)
  local hidden
  x, hidden = common.stack(body.h, x, o.output_hidden_states, body.ln_f,
                           function(block, y) return block(y, masks, cache) end)
  return self.lm_head(x), hidden
end

-- config.json's names (GPT2Config's attribute_map gives hidden_size etc. as aliases)
local function config(c)
  local cfg = {}
  for k, v in pairs(c) do cfg[k] = v end
  cfg.n_embd = c.n_embd or c.hidden_size or 768
  cfg.n_head = c.n_head or c.num_attention_heads or 12
  cfg.n_layer = c.n_layer or c.num_hidden_layers or 12
  cfg.n_positions = c.n_positions or c.max_position_embeddings or 1024
  cfg.vocab_size = c.vocab_size or 50257
  cfg.n_inner = c.n_inner or 4 * cfg.n_embd
  cfg.layer_norm_epsilon = c.layer_norm_epsilon or 1e-5
  cfg.activation_function = c.activation_function or "gelu_new"
  cfg.resid_pdrop = c.resid_pdrop or 0.1
  cfg.embd_pdrop = c.embd_pdrop or 0.1
  cfg.attn_pdrop = c.attn_pdrop or 0.1
  cfg.tie_word_embeddings = c.tie_word_embeddings ~= false
  return cfg
end

--- model:generate(input_ids [, opts]) -> ids: text generation with a key/value cache
-- (ember.hf.generate's header has the options)
function LMHead:generate(...) return require("ember.hf.generate").generate(self, ...) end

function M.build(c, ctx)
  local cfg = config(c)
  if c.add_cross_attention then
    raise(string.format("%s: %s: add_cross_attention (GPT-2 as a decoder of an encoder) is not supported", ctx.op,
                        ctx.config_path))
  end
  if cfg.n_embd % cfg.n_head ~= 0 then
    raise(string.format("%s: %s: n_embd %d is not a multiple of n_head %d", ctx.op, ctx.config_path, cfg.n_embd,
                        cfg.n_head))
  end
  return LMHead(cfg, ctx)
end

return M
