-- Docs of ember.hf (Hugging Face model folders, offline). Format: ember/help.lua.
-- The examples make a tiny GPT-2 folder of their own (no layers: embeddings and ln_f).
local SETUP = [=[
local dir = os.tmpname(); os.remove(dir); os.execute("mkdir " .. dir)
local f = assert(io.open(dir .. "/config.json", "w"))
f:write('{"model_type": "gpt2", "n_embd": 4, "n_head": 1, "n_layer": 0, "n_positions": 8, "vocab_size": 10}')
f:close()
ember.save(dir .. "/model.safetensors", {["wte.weight"] = ember.randn(10, 4), ["wpe.weight"] = ember.randn(8, 4),
                                         ["ln_f.weight"] = ember.ones(4), ["ln_f.bias"] = ember.zeros(4)})
]=]
local CLEANUP = [=[
os.remove(dir .. "/config.json"); os.remove(dir .. "/model.safetensors"); os.remove(dir)]=]

return {
  {
    name = "ember.hf",
    sig = "local hf = ember.hf",
    doc = [=[
Hugging Face model folders read offline: hf.load(dir) builds a GPT-2, Llama / Mistral /
Qwen2 or BERT (masked LM) model from config.json and its safetensors weights, with the
file's parameter names; hf.tokenizer(dir) reads the folder's tokenizer. Loaded on first
use. Token ids are the vocabulary's ids plus one (ember's 1-based positions).]=],
    example = [=[
print(type(ember.hf.load))   -- function]=],
  },
  {
    name = "ember.hf.load",
    sig = "local model, info = ember.hf.load(dir, [{device =, dtype =}])",
    doc = [=[
Builds the model of a Hugging Face folder: config.json, and model.safetensors or the
shards model.safetensors.index.json lists. config.model_type picks the architecture:
gpt2 (GPT2LMHeadModel), llama, mistral and qwen2 (…ForCausalLM: RMSNorm, rotary
embeddings of rope types default, linear and llama3, grouped-query attention, sliding
windows), bert (BertForMaskedLM). Weights in float32, float16 or bfloat16; the model's
dtype is dtype, else config.json's, else the file's; device places it. Parameter names
are the file's ("transformer.h.0.attn.c_attn.weight",
"model.layers.0.self_attn.q_proj.weight",
"bert.encoder.layer.0.attention.self.query.weight"), so state_dict() saves a file
transformers reads; tied tensors (lm_head and the token embedding when
tie_word_embeddings, BERT's decoder) are one tensor listed under each name. The model is
in eval mode; train() turns the config's dropout on.
model(input_ids, [{attention_mask =, output_hidden_states =, position_ids =,
token_type_ids =, cache =}]) -> logits [B, T, vocab] [, hidden_states]: input_ids [B, T]
are the vocabulary's ids plus one (nn.Embedding's 1-based rows; logits[..., k] scores id
k - 1, so argmax feeds back as it is). attention_mask [B, T] is 1 for tokens and 0 for
padding, on either side; GPT-2 and the Llama family are causal. Positions count 1..T
from the first column whatever the padding, as transformers' forward (position_ids,
1-based, overrides); BERT's token_type_ids are 1-based (default 1). output_hidden_states
= true also returns transformers' hidden_states: the embeddings' output, then each
layer's, the last after the final norm (GPT-2, Llama). cache = ember.hf.DynamicCache()
(causal models) keeps each layer's keys and values, so the next call passes only new
tokens (positions and attention_mask then cover the cached tokens too).
model:generate(input_ids, [{attention_mask =, max_new_tokens = 20, do_sample =,
temperature =, top_k =, top_p =, repetition_penalty =, eos_token_id =, pad_token_id =}])
(causal models) -> the prompts and the new ids [B, T + new], as transformers' generate:
the prompt runs once, then a token a step through a key/value cache; prompts of
different lengths are left-padded with attention_mask 0; greedy unless sampling
(do_sample defaults to true when temperature > 0, top_k or top_p is given; temperature
0 is greedy); the repetition penalty, temperature, top_k and top_p apply in
transformers' order; a row that produced eos_token_id goes on with pad_token_id.
info.unexpected_keys lists the file's tensors the model does not use (GPT-2's attn.bias
masks of older files, ...).
Errors name the file and the tensor: no config.json, an unknown model_type, a tensor
missing or of another shape than config.json gives.]=],
    example = SETUP .. [=[
local model = ember.hf.load(dir)
local ids = ember.tensor({{1, 5, 3}, {2, 2, 1}})          -- vocabulary ids + 1
local logits = model(ids, {attention_mask = ember.tensor({{1, 1, 1}, {1, 1, 0}})})
print(logits.shape, model:state_dict()["wte.weight"].shape)   -- {2, 3, 10} {10, 4}
print(model:generate(ember.tensor({{1, 5}}), {max_new_tokens = 3}).shape)   -- {1, 5}
]=] .. CLEANUP,
  },
  {
    name = "ember.hf.DynamicCache",
    sig = "local cache = ember.hf.DynamicCache()",
    doc = [=[
An empty key/value cache for the cache option of GPT-2 and the Llama family
(transformers' DynamicCache): each call appends every layer's keys and values
[B, Hkv, T, D] and attends over all of them, so decoding passes one new token at a time;
its attention_mask is [B, cached + new]. cache:get_seq_length([layer]) is the number of
tokens held; cache:update(k, v, layer) appends (what the layers call). The results are
the full forward's (the same positions and masks).]=],
    example = SETUP .. [=[
local model = ember.hf.load(dir)
local cache = ember.hf.DynamicCache()
local logits = model(ember.tensor({{1, 5, 3}}), {cache = cache})   -- the prompt
local next_id = logits[{{}, -1}]:argmax(-1):view(1, 1)             -- an id + 1, as input_ids
logits = model(next_id, {cache = cache})                            -- one new token
print(cache:get_seq_length(), logits.shape)   -- 4  {1, 1, 10}
]=] .. CLEANUP,
  },
}
