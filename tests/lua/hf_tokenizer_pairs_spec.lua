-- hf_tokenizer_pairs_spec.lua — ember.hf.tokenizer's text pairs, truncation and padding
-- against the tokenizers library and transformers (tests/lua/fixtures/hf_tok_pairs.lua,
-- written by scripts/fixtures/make_tokenizer_pair_fixtures.py from the committed tokenizers
-- of tests/lua/fixtures/hf_tok/): tok:encode(a, b) with every truncation strategy and side
-- around the special tokens' count, encode_batch of strings and pairs truncated and padded,
-- and tok(...) as transformers' tokenizer(..., return_tensors = "pt"); the type ids feeding
-- ember's BERT; and the errors bad arguments get, at the caller's line.
local ember = require "ember"
local h = require "helpers"
local T = require "ember.hf.tokenizer"
local shared = require "hf_tok_fixtures"
local err, has = h.err, h.has

local fx = h.fixture("hf_tok_pairs.lua")

local tok, plus1 = shared.tok, shared.plus1

local function at_this_line(msg) has(msg, "hf_tokenizer_pairs_spec.lua:") end

-- a string of 0s and 1s (type ids, masks) as a list, plus add
local function digits(s, add)
  local out = {}
  for i = 1, #s do out[i] = s:byte(i) - 48 + add end
  return out
end

local function rows(list, f, add)
  local out = {}
  for i, r in ipairs(list) do out[i] = f(r, add) end
  return out
end

-- what ember's message says for each of the fixture's error kinds
local ERRORS = {
  below_special = "special tokens the post-processor adds to",
  no_second = "truncation = \"only_second\" needs a text pair",
  too_short = "are too few to lose the",
  -- transformers cannot make the tensor; ember refuses before, where padding = "max_length" is
  -- shorter than a text
  ragged = {"a [B, L] tensor needs padding = true", "is shorter than the longest text's"},
}

-- a case's description for a failure message
local function describe_case(c)
  local parts = {}
  for _, k in ipairs({"t", "tok", "p", "single", "sp", "ml", "tr", "side"}) do
    if c[k] ~= nil then parts[#parts + 1] = k .. "=" .. tostring(c[k]) end
  end
  return table.concat(parts, " ")
end

local function expect_error(what, kind, f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, what .. ": expected tokenizers' error '" .. kind .. "', got a result")
  local want = ERRORS[kind]
  if type(want) == "string" then want = {want} end
  for _, w in ipairs(want) do
    if tostring(e):find(w, 1, true) then return end
  end
  error(what .. ": expected '" .. table.concat(want, "' or '") .. "', got " .. tostring(e), 2)
end

describe("ember.hf.tokenizer pairs: tok:encode(a, b) as tokenizers' encode, truncated", function()
  local by_tok = {}
  for _, c in ipairs(fx.encode) do
    by_tok[c.t] = by_tok[c.t] or {}
    table.insert(by_tok[c.t], c)
  end
  for _, name in ipairs({"bert", "roberta", "gpt2", "llama3", "qwen2", "llama2"}) do
    it(name .. ": " .. #by_tok[name] .. " cases (pairs, single texts, each strategy and side)", function()
      local t = tok(name)
      for _, c in ipairs(by_tok[name]) do
        local a, b = fx.pairs[c.p][1], fx.pairs[c.p][2]
        if c.single then b = nil end
        local opts = {add_special_tokens = c.sp, truncation = c.tr, max_length = c.ml, truncation_side = c.side,
                      return_type_ids = true}
        local what = describe_case(c)
        if c.err then
          expect_error(what, c.err, t.encode, t, a, b, opts)
        else
          local ids, types = t:encode(a, b, opts)
          assert.same(plus1(c.ids), ids:tolist(), what)
          assert.same(digits(c.types, 1), types:tolist(), what)
          assert.equal("int64", types.dtype)
        end
      end
    end)
  end

  it("the call forms: a pair by position, add_special_tokens by position, no type ids unless asked", function()
    local t = tok("bert")
    local a, b = fx.pairs[1][1], fx.pairs[1][2]
    local ids, none = t:encode(a, b)
    assert.is_nil(none)
    local want = ids:tolist()
    assert.same(want, t(a, b).input_ids[1]:tolist())
    local plain = t:encode(a, b, false):tolist()
    assert.same(plain, t:encode(a, b, {add_special_tokens = false}):tolist())
    assert.equal(#want - 3, #plain)
    assert.same(t:encode(a, false):tolist(), t:encode(a, nil, false):tolist())
    assert.same(t:encode(a):tolist(), t:encode(a, nil):tolist())
    -- max_length alone truncates (transformers' rule), longest first
    assert.same(t:encode(a, b, {truncation = true, max_length = 7}):tolist(), t:encode(a, b, {max_length = 7}):tolist())
  end)
end)

describe("ember.hf.tokenizer pairs: encode_batch truncated and padded as tokenizers'", function()
  for i, c in ipairs(fx.batch) do
    it(string.format("%d: %s %s %s", i, c.tok, tostring(c.opts.padding), c.opts.truncation), function()
      local ids, mask, types = tok(c.tok):encode_batch(c.inputs, c.opts)
      assert.same(rows(c.ids, plus1), ids:tolist())
      assert.same(rows(c.mask, digits, 0), mask:tolist())
      assert.same(rows(c.types, digits, 1), types:tolist())
    end)
  end

  it("unpadded: a list of tensors, and with return_type_ids a list of their type ids", function()
    local t = tok("roberta")
    local inputs = {{"a b", "c"}, "d e f"}
    local list, types = t:encode_batch(inputs, {return_type_ids = true})
    assert.same(t:encode("a b", "c"):tolist(), list[1]:tolist())
    assert.same(t:encode("d e f"):tolist(), list[2]:tolist())
    assert.same(select(2, t:encode("a b", "c", {return_type_ids = true})):tolist(), types[1]:tolist())
    assert.is_nil(select(2, t:encode_batch(inputs)))
    local ids, mask, none = t:encode_batch(inputs, {padding = true, pad_id = 2})
    assert.is_nil(none)
    assert.same({2, 7}, {ids.shape[1], mask.shape[2]})
  end)
end)

describe("ember.hf.tokenizer pairs: tok(...) as transformers' tokenizer(..., return_tensors = \"pt\")", function()
  for i, c in ipairs(fx.call) do
    it(string.format("%d: %s %s", i, c.tok, type(c.text) == "string" and "one text" or "a batch"), function()
      local t = tok(c.tok)
      if c.err then
        expect_error(describe_case(c), c.err, t, c.text, c.text_pair, c.opts)
        return
      end
      local enc = t(c.text, c.text_pair, c.opts)
      assert.same(rows(c.ids, plus1), enc.input_ids:tolist())
      assert.same(rows(c.mask, digits, 0), enc.attention_mask:tolist())
      assert.same(rows(c.types, digits, 1), enc.token_type_ids:tolist())
      for _, k in ipairs({"input_ids", "attention_mask", "token_type_ids"}) do
        assert.equal("int64", enc[k].dtype)
        assert.equal(2, enc[k]:dim())
      end
    end)
  end

  it("return_attention_mask and return_token_type_ids = false leave those out; empty batches", function()
    local t = tok("bert")
    local enc = t({"a", "b"}, {return_attention_mask = false, return_token_type_ids = false, return_tensors = "pt"})
    assert.same({"input_ids"}, (function() local k = {} for n in pairs(enc) do k[#k + 1] = n end return k end)())
    enc = t({})
    assert.same({0, 0}, {enc.input_ids.shape[1], enc.input_ids.shape[2]})
    enc = t({}, {padding = "max_length", max_length = 4, pad_id = 1})
    assert.same({0, 4}, {enc.attention_mask.shape[1], enc.attention_mask.shape[2]})
    -- an empty text with no special tokens: [1, 0]
    enc = tok("gpt2")("")
    assert.same({1, 0}, {enc.input_ids.shape[1], enc.input_ids.shape[2]})
  end)

  it("token_type_ids select rows of BERT's token_type_embeddings (1-based: 1 the first text, 2 the second)",
     function()
    local dir = os.tmpname() .. "_d"
    os.execute("mkdir -p '" .. dir .. "'")
    local f = assert(io.open(dir .. "/tokenizer.json", "w"))
    -- ids below the tiny BERT's vocabulary of 110
    f:write([[{"added_tokens": [{"id": 0, "content": "[PAD]", "special": true},
      {"id": 1, "content": "[UNK]", "special": true}, {"id": 2, "content": "[CLS]", "special": true},
      {"id": 3, "content": "[SEP]", "special": true}],
     "normalizer": {"type": "BertNormalizer", "lowercase": true}, "pre_tokenizer": {"type": "BertPreTokenizer"},
     "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
     "model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2,
       "[SEP]": 3, "hello": 40, "world": 41, "!": 42}}}]])
    f:close()
    local t = T.load(dir)
    os.remove(dir .. "/tokenizer.json")
    os.remove(dir)
    local enc = t({"hello world", "hello"}, {"world !", "world"}, {padding = true, pad_id = 1})
    assert.same({{1, 1, 1, 1, 2, 2, 2}, {1, 1, 1, 2, 2, 1, 1}}, enc.token_type_ids:tolist())
    local model = ember.hf.load(h.FIXTURES .. "hf/bert")
    local got = model(enc.input_ids, {attention_mask = enc.attention_mask, token_type_ids = enc.token_type_ids})
    local by_hand = model(enc.input_ids, {attention_mask = enc.attention_mask,
                                          token_type_ids = ember.tensor({{1, 1, 1, 1, 2, 2, 2}, {1, 1, 1, 2, 2, 1, 1}})})
    assert.equal(0, (got - by_hand):abs():max():item())
    local first_only = model(enc.input_ids, {attention_mask = enc.attention_mask})
    assert(((got - first_only):abs():max():item()) > 1e-4, "the second text's type ids changed nothing")
  end)
end)

describe("ember.hf.tokenizer pairs: errors at the caller's line", function()
  local t = tok("bert")
  local a, b = fx.pairs[4][1], fx.pairs[4][2]

  it("truncation's options", function()
    local msg = err(function() t:encode(a, b, {truncation = "sideways", max_length = 5}) end)
    at_this_line(msg)
    has(msg, "Tokenizer:encode: truncation must be true, false, \"longest_first\", \"only_first\", \"only_second\" "
             .. "or \"do_not_truncate\", got sideways")
    msg = err(function() t:encode(a, {truncation = true}) end)
    at_this_line(msg); has(msg, "Tokenizer:encode: truncation needs max_length (an integer; ember reads no model_max_length)")
    msg = err(function() t:encode(a, {max_length = -1}) end)
    at_this_line(msg); has(msg, "Tokenizer:encode: max_length must be a non-negative integer, got -1")
    msg = err(function() t:encode(a, {max_length = 2.5}) end)
    at_this_line(msg); has(msg, "max_length must be a non-negative integer, got 2.5")
    msg = err(function() t:encode(a, {max_length = 5, truncation_side = "up"}) end)
    at_this_line(msg); has(msg, "Tokenizer:encode: truncation_side must be \"right\" or \"left\", got up")
    msg = err(function() t:encode(a, b, {truncation = true, max_length = 2}) end)
    at_this_line(msg)
    has(msg, "Tokenizer:encode: max_length 2 is less than the 3 special tokens the post-processor adds to a pair")
    msg = err(function() t:encode(a, {truncation = true, max_length = 1}) end)
    at_this_line(msg); has(msg, "max_length 1 is less than the 2 special tokens the post-processor adds to a text")
    msg = err(function() t:encode(a, {truncation = "only_second", max_length = 3}) end)
    at_this_line(msg); has(msg, "Tokenizer:encode: truncation = \"only_second\" needs a text pair (one text has no second")
    msg = err(function() t:encode("a", b, {truncation = "only_first", max_length = 10}) end)
    at_this_line(msg)
    has(msg, "Tokenizer:encode: truncation = \"only_first\": the first text's 1 ids are too few to lose the 5 that "
             .. "max_length 10 asks with 3 special tokens (tokenizers keeps at least one)")
    msg = err(function() t:encode(a, b, {stride = 2}) end)
    at_this_line(msg); has(msg, "Tokenizer:encode: unknown option 'stride'")
  end)

  it("padding's options, and max_length shorter than a text without truncation", function()
    local msg = err(function() t:encode_batch({a, b}, {padding = "max_length", max_length = 4, pad_id = 1}) end)
    at_this_line(msg)
    has(msg, "Tokenizer:encode_batch: max_length 4 is shorter than the longest text's 13 ids (give truncation = true")
    msg = err(function() t:encode_batch({a}, {padding = "max_length", pad_id = 1}) end)
    at_this_line(msg); has(msg, "padding = \"max_length\" needs max_length (an integer)")
    msg = err(function() t:encode_batch({a}, {padding = "both", pad_id = 1}) end)
    at_this_line(msg); has(msg, "padding must be true, false, \"longest\", \"max_length\" or \"do_not_pad\", got both")
    msg = err(function() t:encode_batch({a}, {padding = true, pad_id = 1, pad_to_multiple_of = 0}) end)
    at_this_line(msg); has(msg, "pad_to_multiple_of must be a positive integer, got 0")
    msg = err(function() t({a}, {padding = true, truncation = true, max_length = 10, pad_to_multiple_of = 4, pad_id = 1}) end)
    at_this_line(msg)
    has(msg, "Tokenizer(...): truncation to max_length 10 and padding to a multiple of pad_to_multiple_of 4 disagree")
    msg = err(function() t({a}, {padding = true, pad_id = 1, padding_side = "middle"}) end)
    at_this_line(msg); has(msg, "Tokenizer(...): padding_side must be \"right\" or \"left\", got middle")
    msg = err(function() tok("gpt2")({a, b}, {padding = true}) end)
    at_this_line(msg); has(msg, "Tokenizer(...): padding needs pad_id (the tokenizer.json sets none)")
  end)

  it("the inputs of encode_batch and tok(...)", function()
    local msg = err(function() t:encode_batch({a, {b}}) end)
    at_this_line(msg)
    has(msg, "Tokenizer:encode_batch: texts[2] must be a string or a pair {text, text_pair} of strings, got {string}")
    msg = err(function() t:encode_batch({{a, 3}}) end)
    at_this_line(msg); has(msg, "texts[1] must be a string or a pair {text, text_pair} of strings, got {string, number}")
    msg = err(function() t:encode_batch("x") end)
    at_this_line(msg); has(msg, "Tokenizer:encode_batch: texts must be a list of strings or pairs {text, text_pair}, got string")
    msg = err(function() t({padding = true}) end)
    at_this_line(msg); has(msg, "Tokenizer(...): text must be a list of strings or pairs {text, text_pair}, got a table with no [1]")
    msg = err(function() t:encode_batch({padding = true}) end)
    at_this_line(msg); has(msg, "Tokenizer:encode_batch: texts must be a list of strings or pairs")
    msg = err(function() t(5) end)
    at_this_line(msg); has(msg, "Tokenizer(...): text must be a string or a list of strings (or of pairs")
    msg = err(function() t(a, {b}) end)
    at_this_line(msg); has(msg, "Tokenizer(...): text_pair must be a string when text is one, got table")
    msg = err(function() t({a}, b) end)
    at_this_line(msg); has(msg, "Tokenizer(...): text_pair must be a list of strings when text is a list, got string")
    msg = err(function() t({a, a}, {b}) end)
    at_this_line(msg); has(msg, "Tokenizer(...): text has 2 texts and text_pair 1: they must pair up")
    msg = err(function() t({a, 7}) end)
    at_this_line(msg); has(msg, "Tokenizer(...): text[2] must be a string or a pair")
    msg = err(function() t(a, {return_tensors = "np"}) end)
    at_this_line(msg); has(msg, "Tokenizer(...): return_tensors must be \"pt\" (ember's tensors) or nil, got np")
    msg = err(function() t({a, "a"}) end)
    at_this_line(msg); has(msg, "Tokenizer(...): text[1] has 13 ids and text[2] 3: a [B, L] tensor needs padding = true")
    msg = err(function() t(a, {padding_sid = "left"}) end)
    at_this_line(msg); has(msg, "Tokenizer(...): unknown option 'padding_sid'")
  end)

  it("a TemplateProcessing without a pair template, and two processors that add tokens", function()
    local json = h.read_file(h.FIXTURES .. "hf_tok/llama2/tokenizer.json")
    local dir = os.tmpname() .. "_d"
    os.execute("mkdir -p '" .. dir .. "'")
    local function write(text)
      local f = assert(io.open(dir .. "/tokenizer.json", "wb"))
      f:write(text)
      f:close()
    end
    local j = ember._tokenizer_json(json)
    local pair_at = json:find('"pair"', 1, true)
    assert(pair_at and j.post_processor.pair)
    write((json:gsub('"pair": %[.-%],%s*"special_tokens"', '"special_tokens"', 1)))
    local single = T.load(dir)
    assert.same(tok("llama2"):encode(a):tolist(), single:encode(a):tolist())
    local msg = err(function() single:encode(a, b) end)
    at_this_line(msg)
    has(msg, "Tokenizer:encode: the post-processor's TemplateProcessing has no pair template (it encodes one text)")
    write([[{"post_processor": {"type": "Sequence", "processors": [
        {"type": "BertProcessing", "sep": ["b", 1], "cls": ["a", 0]},
        {"type": "RobertaProcessing", "sep": ["b", 1], "cls": ["a", 0]}]},
      "model": {"type": "WordPiece", "unk_token": "a", "vocab": {"a": 0, "b": 1}}}]])
    msg = err(function() T.load(dir) end)
    at_this_line(msg)
    has(msg, "post_processor Sequence with more than one processor that adds tokens is not supported")
    os.remove(dir .. "/tokenizer.json")
    os.remove(dir)
  end)

  it("random arguments: every failure a Lua error naming the call, never a crash", function()
    local values = {true, false, 0, -3, 2.5, 7, "x", "left", "max_length", "only_second", {}, {"a"}, {{"a", "b"}},
                    {1, 2}, ember.zeros(2), math.huge}
    local keys = {"padding", "truncation", "max_length", "pad_id", "padding_side", "truncation_side",
                  "pad_to_multiple_of", "add_special_tokens", "return_tensors", "return_type_ids"}
    math.randomseed(7)
    local function pick(l) return l[math.random(#l)] end
    for _ = 1, 300 do
      local o = {}
      for _ = 1, math.random(0, 3) do o[pick(keys)] = pick(values) end
      local text = pick({a, {a, b}, {{a, b}, a}, pick(values)})
      local calls = {
        {"Tokenizer(...)", function() return t(text, o.return_type_ids == nil and o or {}) end},
        {"Tokenizer:encode_batch", function() o.return_tensors = nil; return t:encode_batch(text, o) end},
        {"Tokenizer:encode", function() o.return_tensors = nil; o.pad_id = nil; o.padding = nil
          o.padding_side = nil; o.pad_to_multiple_of = nil; return t:encode(a, pick({b, nil}), o) end},
      }
      local c = pick(calls)
      local ok, e = pcall(c[2])
      if not ok then
        assert(type(e) == "string" and e:find(c[1] .. ":", 1, true), "not an error of " .. c[1] .. ": " .. tostring(e))
      end
    end
  end)
end)
