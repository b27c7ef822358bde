-- hf_generate_spec.lua — model:generate of ember.hf's causal models: greedy decoding equal
-- to transformers' generate() token for token (prompts left-padded, a repetition penalty,
-- mistral's sliding window crossed; fixtures by scripts/fixtures/make_hf_generate_fixtures.py),
-- the same as decoding without the cache, ending at eos_token_id (checked by hand on those
-- sequences), and sampling: every token from the allowed set, frequencies as the softmax.
local ember = require "ember"

local DIR = "tests/lua/fixtures/hf/"
local fx = ember.load(DIR .. "generate.safetensors")
local models = {}
local function model(name)
  models[name] = models[name] or ember.hf.load(DIR .. name)
  return models[name]
end
local function case(name, c)
  local p = name .. "." .. c .. "."
  -- the file's ids are 0-based; ember's are those plus one
  return fx[p .. "input_ids"] + 1, fx[p .. "attention_mask"], fx[p .. "output"] + 1
end

describe("ember.hf generate", function()
  for _, name in ipairs({"gpt2", "llama", "qwen2", "mistral"}) do
    it(name .. ": greedy decoding equals transformers'", function()
      for _, c in ipairs({"greedy", "penalty", "single"}) do
        local ids, mask, want = case(name, c)
        local got = model(name):generate(ids, {attention_mask = mask, max_new_tokens = want.shape[2] - ids.shape[2],
                                               repetition_penalty = c == "penalty" and 1.5 or nil})
        assert.are.same(want:tolist(), got:tolist(), name .. " " .. c)
      end
    end)
  end

  it("decodes as the whole sequence run again at each step would (the cache changes nothing)", function()
    local m = model("llama")
    local ids, mask = case("llama", "greedy")
    local got = m:generate(ids, {attention_mask = mask, max_new_tokens = 5})
    local seq, msk = ids, mask
    local B, T = ids.shape[1], ids.shape[2]
    for _ = 1, 5 do
      local pos = msk:cumsum(2):masked_fill(msk:eq(0), 2)
      local logits = m(seq, {attention_mask = msk, position_ids = pos})
      local tok = logits:narrow(2, seq.shape[2], 1):squeeze(2):argmax(2, true)
      seq = ember.cat({seq, tok}, 2)
      msk = ember.cat({msk, ember.ones(B, 1, {dtype = "int64"})}, 2)
    end
    assert.are.same(seq:tolist(), got:tolist())
    assert.are.equal(T + 5, got.shape[2])
  end)

  it("grows the cache's keys and values in place while decoding", function()
    local m = model("gpt2")
    local cache = ember.hf.DynamicCache()
    ember.no_grad(function()
      m(ember.tensor({{5, 9, 13}}), {cache = cache})
      local buf = cache._kbuf[1]
      assert.is_true(buf.shape[3] >= 16)      -- room for more tokens
      local first = cache.keys[1]:clone()
      m(ember.tensor({{7}}), {cache = cache})
      m(ember.tensor({{8}}), {cache = cache})
      assert.is_true(rawequal(buf, cache._kbuf[1]))  -- the same buffer, written after its tokens
      assert.are.equal(5, cache:get_seq_length())
      assert.is_true(cache.keys[1]:narrow(3, 1, 3):equal(first))
    end)
  end)

  it("ends a row at eos_token_id and pads it until every row has ended", function()
    local ids, mask, want = case("gpt2", "greedy")
    local w = want:tolist()
    -- the new tokens (file ids): row 1 16 42 90 25 25 ..., row 2 42 42 42 42 42 42 45 25
    local eos = w[1][10]                     -- ember id of file token 25
    assert.are.equal(26, eos)
    local got = model("gpt2"):generate(ids, {attention_mask = mask, max_new_tokens = 8, eos_token_id = eos,
                                             pad_token_id = 1}):tolist()
    local row1 = {table.unpack(w[1], 1, 10)}
    for _ = 11, 14 do row1[#row1 + 1] = 1 end -- padded after its eos
    assert.are.same(row1, got[1])
    assert.are.same(w[2], got[2])            -- row 2 reaches eos at the last step
    -- a single row stops as soon as it produces eos
    local sid, smask, swant = case("gpt2", "single")
    local s = swant:tolist()[1]
    local stop = s[6]                        -- its second new token
    local out = model("gpt2"):generate(sid, {attention_mask = smask, max_new_tokens = 12, eos_token_id = stop})
    assert.are.same({table.unpack(s, 1, 6)}, out:tolist()[1])
  end)

  it("samples only among the top_k tokens, and top_k = 1 is greedy", function()
    local m = model("qwen2")
    local ids, mask, want = case("qwen2", "greedy")
    ember.manual_seed(1)
    assert.are.same(want:tolist(), m:generate(ids, {attention_mask = mask, max_new_tokens = 8, top_k = 1}):tolist())
    assert.are.same(want:tolist(), m:generate(ids, {attention_mask = mask, max_new_tokens = 8, temperature = 0}):tolist())
    local got = m:generate(ids, {attention_mask = mask, max_new_tokens = 8, top_k = 3, temperature = 2})
    -- each new token is among the 3 best of the logits for the prefix before it
    local T = ids.shape[2]
    for j = T + 1, got.shape[2] do
      local prefix = got:narrow(2, 1, j - 1)
      local msk = ember.cat({mask, ember.ones(2, j - 1 - T, {dtype = "int64"})}, 2)
      local logits = m(prefix, {attention_mask = msk, position_ids = msk:cumsum(2):masked_fill(msk:eq(0), 2)})
      local _, top = logits:narrow(2, j - 1, 1):squeeze(2):topk(3, 2)
      for b = 1, 2 do
        local tok = got:tolist()[b][j]
        local ok = false
        for _, t in ipairs(top:tolist()[b]) do ok = ok or t == tok end
        assert.is_true(ok, ("row %d token %d: %d not in the top 3"):format(b, j, tok))
      end
    end
  end)

  it("draws with the softmax of the scores over the temperature, within top_p", function()
    local m = model("gpt2")
    local ids = ember.tensor({{5, 9, 13}})
    local logits = m(ids):narrow(2, 3, 1):view(-1)
    local N = 4000
    ember.manual_seed(7)
    local draws = m:generate(ids:expand(N, 3):contiguous(), {max_new_tokens = 1, temperature = 0.7})
    local counts = ember.bincount(draws:narrow(2, 4, 1):reshape(N), {minlength = logits.shape[1]}):double() / N
    local want = (logits:double() / 0.7):softmax(1)
    -- binomial standard error at most 0.008 at N = 4000: 5 of them
    assert.is_true((counts:narrow(1, 1, want.shape[1]) - want):abs():max():item() < 0.04)
    -- top_p: only the smallest set of tokens reaching p, from the most likely
    local sorted, order = want:sort(1, true)
    local k = 1
    while sorted:narrow(1, 1, k):sum():item() < 0.5 do k = k + 1 end
    local allowed = {}
    for i = 1, k do allowed[order:tolist()[i]] = true end
    local tp = m:generate(ids:expand(200, 3):contiguous(), {max_new_tokens = 1, temperature = 0.7, top_p = 0.5})
    for _, row in ipairs(tp:tolist()) do assert.is_true(allowed[row[4]], "token " .. row[4] .. " outside top_p") end
  end)

  it("names its mistakes", function()
    local m = model("gpt2")
    local ids = ember.tensor({{5, 9}})
    local function err(o, x)
      local ok, e = pcall(function() return m:generate(x or ids, o) end)
      assert.is_false(ok)
      return e
    end
    assert.matches("top_p must be a number > 0", err({top_p = 0}))
    assert.matches("top_k must be a positive integer", err({top_k = 0}))
    assert.matches("temperature must be a number >= 0", err({temperature = -1}))
    assert.matches("eos_token_id must be token ids in 1 .. %d+", err({eos_token_id = 0}))
    assert.matches("max_new_tokens must be a non%-negative integer", err({max_new_tokens = 1.5}))
    assert.matches("attention_mask must have input_ids' shape %[1, 2%]", err({attention_mask = ember.ones(1, 3)}))
    assert.matches("input_ids must be an integer tensor", err({}, ember.ones(1, 2)))
    assert.matches("unknown option 'max_length'", err({max_length = 5}))
    assert.matches("hf_generate_spec.lua:%d+:", err({top_k = 0}))
  end)
end)
