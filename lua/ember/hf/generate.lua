-- ember.hf.generate — text generation for the causal models of ember.hf (GPT-2 and the
-- Llama family), as transformers' generate(): the prompt runs once, then one token a step
-- through the model's key/value cache (ember.hf.DynamicCache), so nothing is recomputed.
--
--   model:generate(input_ids [, {attention_mask =, max_new_tokens = 20, do_sample =,
--                  temperature = 1, top_k =, top_p =, repetition_penalty =,
--                  eos_token_id =, pad_token_id =}]) -> ids [B, T + new]
--
-- Ids are ember's token ids (the vocabulary's ids plus one, ember.hf's rule). A batch of
-- prompts of different lengths is padded on the left with attention_mask 0 there, as for
-- transformers; positions come from the mask. Greedy unless sampling: do_sample defaults
-- to true when temperature (> 0), top_k or top_p is given, else false (transformers: always
-- false), and temperature 0 is greedy. The logits go through, in transformers' order, the
-- repetition penalty, then the temperature, top_k and top_p. A row that has produced an
-- eos_token_id continues with pad_token_id (default: the first eos) until all rows have.
local ember = require "ember"
local errors = require "ember.errors"
local common = require "ember.hf.common"

local M = {}

local names = {"attention_mask", "max_new_tokens", "do_sample", "temperature", "top_k", "top_p",
               "repetition_penalty", "eos_token_id", "pad_token_id"}

local function check_number(op, name, v, lo, lo_open)
  if v == nil then return end
  if type(v) ~= "number" or v ~= v or (lo_open and v <= lo) or (not lo_open and v < lo) then
    errors.raise(string.format("%s: %s must be a number %s %g, got %s", op, name, lo_open and ">" or ">=", lo,
                               tostring(v)))
  end
end

local function id_list(op, name, v, vocab)
  if v == nil then return {} end
  local list = type(v) == "table" and v or {v}
  for i, id in ipairs(list) do
    if math.type(id) ~= "integer" or id < 1 or id > vocab then
      errors.raise(string.format("%s: %s must be token ids in 1 .. %d (the vocabulary's ids plus one), got %s",
                                 op, name, vocab, tostring(list[i])))
    end
  end
  return list
end

-- scores [B, V] (float32) -> the scores with the repetition penalty applied: a token already
-- in the row's sequence has its score divided by p when positive, multiplied when negative
local function repetition_penalty(scores, seq, p)
  local seen = scores:gather(2, seq)
  local penalised = ember.where(seen:lt(0), seen * p, seen / p)
  return scores:scatter(2, seq, penalised)
end

-- keeps each row's k largest scores, -inf elsewhere
local function top_k_filter(scores, k)
  k = math.min(k, scores.shape[2])
  local top = scores:topk(k, 2)
  local kth = top:narrow(2, k, 1)
  return scores:masked_fill(scores:lt(kth), -math.huge)
end

-- keeps each row's smallest set of most likely tokens whose probability reaches p
-- (transformers' TopPLogitsWarper: the least likely tokens whose cumulative probability is
-- at most 1 - p are removed; the most likely token always stays)
local function top_p_filter(scores, p)
  local sorted, idx = scores:sort(2, false)          -- ascending
  local cum = sorted:softmax(2):cumsum(2)
  local remove = cum:le(1 - p)
  remove:narrow(2, remove.shape[2], 1):fill_(false)
  local drop = remove:scatter(2, idx, remove)
  return scores:masked_fill(drop, -math.huge)
end

--- generate(model, input_ids [, opts]) -> ids [B, T + new] (see the file's header)
function M.generate(model, input_ids, ...)
  local op = (model.cfg and model.cfg.model_type or "model") .. ":generate"
  local o = require("ember.args").options(op, names, ...)
  if not ember.is_tensor(input_ids) or input_ids.ndim ~= 2 or input_ids:is_floating_point()
     or input_ids.dtype == "bool" then
    errors.raise(op .. ": input_ids must be an integer tensor [batch, sequence] of token ids, got "
                 .. (ember.is_tensor(input_ids) and input_ids.dtype .. " [" .. table.concat(input_ids.shape, ", ") .. "]"
                     or type(input_ids)))
  end
  local B, T = input_ids.shape[1], input_ids.shape[2]
  if T == 0 then errors.raise(op .. ": input_ids has no tokens") end
  local vocab = model.cfg.vocab_size
  local new = o.max_new_tokens == nil and 20 or o.max_new_tokens
  if math.type(new) ~= "integer" or new < 0 then
    errors.raise(op .. ": max_new_tokens must be a non-negative integer, got " .. tostring(new))
  end
  check_number(op, "temperature", o.temperature, 0, false)
  check_number(op, "top_p", o.top_p, 0, true)
  if o.top_p and o.top_p > 1 then errors.raise(op .. ": top_p must be in (0, 1], got " .. o.top_p) end
  if o.top_k ~= nil and (math.type(o.top_k) ~= "integer" or o.top_k < 1) then
    errors.raise(op .. ": top_k must be a positive integer, got " .. tostring(o.top_k))
  end
  check_number(op, "repetition_penalty", o.repetition_penalty, 0, true)
  local eos = id_list(op, "eos_token_id", o.eos_token_id, vocab)
  local pad = o.pad_token_id
  if pad ~= nil then id_list(op, "pad_token_id", pad, vocab) end
  pad = pad or eos[1] or 1
  local do_sample = o.do_sample
  if do_sample == nil then
    do_sample = (o.temperature ~= nil and o.temperature > 0) or o.top_k ~= nil or o.top_p ~= nil
  elseif type(do_sample) ~= "boolean" then
    errors.raise(op .. ": do_sample must be a boolean, got " .. type(do_sample))
  end
  if o.temperature == 0 then do_sample = false end

  local dev = input_ids.device
  local mask = o.attention_mask
  if mask ~= nil then
    if not ember.is_tensor(mask) or mask.ndim ~= 2 or mask.shape[1] ~= B or mask.shape[2] ~= T then
      errors.raise(string.format("%s: attention_mask must have input_ids' shape [%d, %d]", op, B, T))
    end
    mask = mask:to(dev):to("int64")
  end

  return ember.no_grad(function()
    local cache = common.DynamicCache()
    local seq = input_ids:to("int64")
    -- positions from the mask (1-based): a padded slot gets 2, as transformers' 1 (0-based)
    local pos
    if mask then
      pos = mask:cumsum(2):masked_fill(mask:eq(0), 2)
    else
      pos = ember.arange(1, T + 1, {device = dev}):view(1, T):expand(B, T)
    end
    local next_pos = pos:narrow(2, T, 1) + 1
    local done = ember.zeros(B, {dtype = "bool", device = dev})
    local ids, p = seq, pos
    for _ = 1, new do
      local logits = model(ids, {attention_mask = mask, position_ids = p, cache = cache})
      local scores = logits:narrow(2, logits.shape[2], 1):squeeze(2):float()
      if o.repetition_penalty and o.repetition_penalty ~= 1 then
        scores = repetition_penalty(scores, seq, o.repetition_penalty)
      end
      local tok
      if do_sample then
        if o.temperature and o.temperature ~= 1 then scores = scores / o.temperature end
        if o.top_k then scores = top_k_filter(scores, o.top_k) end
        if o.top_p and o.top_p < 1 then scores = top_p_filter(scores, o.top_p) end
        tok = ember.multinomial(scores:softmax(2), 1)     -- the global generator (ember.manual_seed)
      else
        tok = scores:argmax(2, true)
      end
      if #eos > 0 then
        tok = ember.where(done:view(B, 1), ember.full({B, 1}, pad, {dtype = "int64", device = dev}), tok)
        for _, e in ipairs(eos) do done = done:logical_or(tok:view(B):eq(e)) end
      end
      seq = ember.cat({seq, tok}, 2)
      if #eos > 0 and done:all():item() then break end
      ids, p = tok, next_pos
      next_pos = next_pos + 1
      if mask then
        mask = ember.cat({mask, ember.ones(B, 1, {dtype = "int64", device = dev})}, 2)
      end
    end
    return seq
  end)
end

return M
