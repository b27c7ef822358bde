-- ember.hf.bert — BERT with its masked-LM head (transformers' BertForMaskedLM) built from a
-- model folder's tensors: word + position + token-type embeddings and a LayerNorm, a
-- post-LayerNorm encoder, and cls.predictions (a dense + activation + LayerNorm transform,
-- then the decoder, tied to the word embeddings when config.tie_word_embeddings, whose bias
-- is cls.predictions.bias). A file that also holds the pooler (bert.pooler.dense) or the
-- next-sentence head (cls.seq_relationship), as BertForPreTraining's files do, gets those
-- modules too, so that state_dict() lists everything the file has; the forward returns the
-- masked-LM logits. Names are the file's: "bert.encoder.layer.0.attention.self.query.weight".
local ember = require "ember"
local nn = ember.nn
local common = require "ember.hf.common"
local raise = require("ember.errors").raise

local M = {}

local function linear(ctx, p, out, inp)
  return common.Linear(ctx.take(p .. ".weight", {out, inp}), ctx.take(p .. ".bias", {out}))
end

local function layer_norm(ctx, p, C, eps)
  return common.LayerNorm(ctx.take(p .. ".weight", {C}), ctx.take(p .. ".bias", {C}), eps)
end

local Embeddings = nn.Module:extend("BertEmbeddings")
function Embeddings:init(cfg, ctx, p)
  local C = cfg.hidden_size
  local pad = math.tointeger(cfg.pad_token_id)
  self.word_embeddings = common.Embedding(ctx.take(p .. "word_embeddings.weight", {cfg.vocab_size, C}), pad and pad + 1)
  self.position_embeddings = common.Embedding(ctx.take(p .. "position_embeddings.weight",
                                                       {cfg.max_position_embeddings, C}))
  self.token_type_embeddings = common.Embedding(ctx.take(p .. "token_type_embeddings.weight", {cfg.type_vocab_size, C}))
  self.LayerNorm = layer_norm(ctx, p .. "LayerNorm", C, cfg.layer_norm_eps)
  self.hidden_dropout_prob = cfg.hidden_dropout_prob
end
function Embeddings:forward(ids, types, pos)
  local x = self.word_embeddings(ids) + self.token_type_embeddings(types) + self.position_embeddings(pos)
  return common.dropout(self.LayerNorm(x), self.hidden_dropout_prob, self)
end

local SelfAttention = nn.Module:extend("BertSelfAttention")
function SelfAttention:init(cfg, ctx, p)
  local C = cfg.hidden_size
  self.query = linear(ctx, p .. "query", C, C)
  self.key = linear(ctx, p .. "key", C, C)
  self.value = linear(ctx, p .. "value", C, C)
  self.num_attention_heads, self.head_size = cfg.num_attention_heads, C // cfg.num_attention_heads
  self.dropout_p = cfg.attention_probs_dropout_prob
end
function SelfAttention:forward(x, masks)
  local B, T = x.shape[1], x.shape[2]
  local D = self.head_size
  local function heads(t) return t:view(B, T, -1, D):transpose(2, 3) end
  return common.attend(heads(self.query(x)), heads(self.key(x)), heads(self.value(x)), masks,
                       self.training and self.dropout_p or 0, 1 / math.sqrt(D))
end

-- dense, dropout, then LayerNorm of the sum with the block's input (BertSelfOutput, BertOutput)
local Output = nn.Module:extend("BertOutput")
function Output:init(cfg, ctx, p, inp)
  local C = cfg.hidden_size
  self.dense = linear(ctx, p .. "dense", C, inp)
  self.LayerNorm = layer_norm(ctx, p .. "LayerNorm", C, cfg.layer_norm_eps)
  self.hidden_dropout_prob = cfg.hidden_dropout_prob
end
function Output:forward(h, input)
  return self.LayerNorm(common.dropout(self.dense(h), self.hidden_dropout_prob, self) + input)
end

local Attention = nn.Module:extend("BertAttention")
function Attention:init(cfg, ctx, p)
  self.self = SelfAttention(cfg, ctx, p .. "self.")
  self.output = Output(cfg, ctx, p .. "output.", cfg.hidden_size)
end
function Attention:forward(x, masks) return self.output(self.self(x, masks), x) end

local Intermediate = nn.Module:extend("BertIntermediate")
function Intermediate:init(cfg, ctx, p)
  self.dense = linear(ctx, p .. "dense", cfg.intermediate_size, cfg.hidden_size)
  self.act = common.activation(cfg.hidden_act, ctx.config_path)
end
function Intermediate:forward(x) return self.act(self.dense(x)) end

local Layer = nn.Module:extend("BertLayer")
function Layer:init(cfg, ctx, p)
  self.attention = Attention(cfg, ctx, p .. "attention.")
  self.intermediate = Intermediate(cfg, ctx, p .. "intermediate.")
  self.output = Output(cfg, ctx, p .. "output.", cfg.intermediate_size)
end
function Layer:forward(x, masks)
  local a = self.attention(x, masks)
  return self.output(self.intermediate(a), a)
end

local Encoder = nn.Module:extend("BertEncoder")
function Encoder:init(cfg, ctx, p)
  local layers = {}
  for i = 1, cfg.num_hidden_layers do layers[i] = Layer(cfg, ctx, string.format("%slayer.%d.", p, i - 1)) end
  self.layer = nn.ModuleList(layers)
end

local Pooler = nn.Module:extend("BertPooler")
function Pooler:init(cfg, ctx, p) self.dense = linear(ctx, p .. "dense", cfg.hidden_size, cfg.hidden_size) end
function Pooler:forward(x) return self.dense(x[{{}, 1}]):tanh() end

local BertModel = nn.Module:extend("BertModel")
function BertModel:init(cfg, ctx, p)
  self.embeddings = Embeddings(cfg, ctx, p .. "embeddings.")
  self.encoder = Encoder(cfg, ctx, p .. "encoder.")
  if ctx.has(p .. "pooler.dense.weight") then self.pooler = Pooler(cfg, ctx, p .. "pooler.") end
end

local Transform = nn.Module:extend("BertPredictionHeadTransform")
function Transform:init(cfg, ctx, p)
  self.dense = linear(ctx, p .. "dense", cfg.hidden_size, cfg.hidden_size)
  self.act = common.activation(cfg.hidden_act, ctx.config_path)
  self.LayerNorm = layer_norm(ctx, p .. "LayerNorm", cfg.hidden_size, cfg.layer_norm_eps)
end
function Transform:forward(x) return self.LayerNorm(self.act(self.dense(x))) end

local Predictions = nn.Module:extend("BertLMPredictionHead")
function Predictions:init(cfg, ctx, p, word_embeddings)
  local V = cfg.vocab_size
  -- the decoder's bias is this tensor under two names; a file may hold either
  self.bias = ctx.take(p .. "bias", {V}, ctx.has(p .. "decoder.bias")) or ctx.take(p .. "decoder.bias", {V})
  if ctx.has(p .. "decoder.bias") then ctx.take(p .. "decoder.bias", {V}) end
  self.transform = Transform(cfg, ctx, p .. "transform.")
  local w = word_embeddings
  if not cfg.tie_word_embeddings then w = ctx.take(p .. "decoder.weight", {V, cfg.hidden_size}) end
  self.decoder = common.Linear(w, self.bias)
end
function Predictions:forward(x) return self.decoder(self.transform(x)) end

local Heads = nn.Module:extend("BertOnlyMLMHead")
function Heads:init(cfg, ctx, p, word_embeddings)
  self.predictions = Predictions(cfg, ctx, p .. "predictions.", word_embeddings)
  if ctx.has(p .. "seq_relationship.weight") then self.seq_relationship = linear(ctx, p .. "seq_relationship", 2, cfg.hidden_size) end
end

local ForMaskedLM = nn.Module:extend("BertForMaskedLM")
M.BertForMaskedLM = ForMaskedLM
function ForMaskedLM:init(cfg, ctx)
  self.cfg = cfg
  self.bert = BertModel(cfg, ctx, "bert.")
  self.cls = Heads(cfg, ctx, "cls.", self.bert.embeddings.word_embeddings.weight)
end

--- model(input_ids [, {attention_mask =, token_type_ids =, output_hidden_states =, position_ids =}])
-- -> logits [B, T, vocab] [, hidden_states]; token_type_ids are 1-based (1: the first segment,
-- the default)
function ForMaskedLM:forward(input_ids, ...)
  local op = "BertForMaskedLM"
  local B, T, o = common.forward_args(self, op, input_ids, ...)
  if o.cache ~= nil then raise(op .. ": cache is for causal models (BERT attends both ways)") end
  local cfg = self.cfg
  if T > cfg.max_position_embeddings then
    raise(string.format("%s: %d tokens is more than the model's %d positions (max_position_embeddings)", op, T,
                        cfg.max_position_embeddings))
  end
  local emb = self.bert.embeddings
  local dev = emb.word_embeddings.weight.device
  if input_ids.device ~= dev then input_ids = input_ids:to(dev) end
  local types = o.token_type_ids
  if types == nil then
    types = ember.ones(B, T, {dtype = "int64", device = dev})
  elseif not ember.is_tensor(types) or types.ndim ~= 2 or types.shape[1] ~= B or types.shape[2] ~= T then
    raise(string.format("%s: token_type_ids must be an integer tensor of input_ids' shape [%d, %d] (1-based)", op, B, T))
  elseif types.device ~= dev then
    types = types:to(dev)
  end
  local x = emb(input_ids, types, common.positions(o, B, T, 0, dev, op))
  local masks = common.masks(o.attention_mask, B, T, 0, dev, false, nil, op)
  local hidden
  x, hidden = common.stack(self.bert.encoder.layer, x, o.output_hidden_states, nil,
                           function(layer, y) return layer(y, masks) end)
  return self.cls.predictions(x), hidden
end

local function config(c, ctx)
  local cfg = {}
  for k, v in pairs(c) do cfg[k] = v end
  cfg.vocab_size = c.vocab_size or 30522
  cfg.hidden_size = c.hidden_size or 768
  cfg.num_hidden_layers = c.num_hidden_layers or 12
  cfg.num_attention_heads = c.num_attention_heads or 12
  cfg.intermediate_size = c.intermediate_size or 3072
  cfg.hidden_act = c.hidden_act or "gelu"
  cfg.hidden_dropout_prob = c.hidden_dropout_prob or 0.1
  cfg.attention_probs_dropout_prob = c.attention_probs_dropout_prob or 0.1
  cfg.max_position_embeddings = c.max_position_embeddings or 512
  cfg.type_vocab_size = c.type_vocab_size or 2
  cfg.layer_norm_eps = c.layer_norm_eps or 1e-12
  cfg.tie_word_embeddings = c.tie_word_embeddings ~= false
  if c.is_decoder then
    raise(string.format("%s: %s: is_decoder (BERT as a causal decoder) is not supported", ctx.op, ctx.config_path))
  end
  local pe = c.position_embedding_type or "absolute"
  if pe ~= "absolute" then
    raise(string.format("%s: %s: position_embedding_type '%s' is not supported (absolute only)", ctx.op,
                        ctx.config_path, tostring(pe)))
  end
  if cfg.hidden_size % cfg.num_attention_heads ~= 0 then
    raise(string.format("%s: %s: hidden_size %d is not a multiple of num_attention_heads %d", ctx.op,
                        ctx.config_path, cfg.hidden_size, cfg.num_attention_heads))
  end
  return cfg
end

function M.build(c, ctx) return ForMaskedLM(config(c, ctx), ctx) end

return M
