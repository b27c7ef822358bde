-- hf_tokenizer_spec.lua — ember.hf.tokenizer against the tokenizers library
-- (tests/lua/fixtures/hf_tok*, written by scripts/fixtures/make_tokenizer_fixtures.py):
-- the pre-tokenizer's pieces, the normalizer's text and the ids of seven tokenizers
-- (GPT-2-, RoBERTa-, Llama-3-, Qwen2-style byte-level BPE, a BERT-style WordPiece, and
-- Llama-2-style character BPE with byte fallback, with a normalizer or a Metaspace
-- pre-tokenizer) on hostile strings, with and without special tokens, their decode with and
-- without skip_special_tokens, the large texts (the first 1.1 MB of Shakespeare and the
-- license texts of /usr/share/common-licenses: the ids and a checksum of the decode),
-- decode(encode(s)) == s for byte-level on valid UTF-8, ids being 1-based, encode_batch's
-- padding (pairs and truncation: hf_tokenizer_pairs_spec.lua), and the errors bad files and
-- arguments get, at the caller's line.
local ember = require "ember"
local h = require "helpers"
local T = require "ember.hf.tokenizer"
local shared = require "hf_tok_fixtures"
local err, has = h.err, h.has

local fx = h.fixture("hf_tok_cases.lua")
local idfile = ember.load(h.FIXTURES .. "hf_tok_ids.safetensors")
local NAMES = {"gpt2", "roberta", "llama3", "qwen2", "bert", "llama2", "metaspace"}
local BYTE_LEVEL = {gpt2 = true, roberta = true, llama3 = true, qwen2 = true}

local tok, plus1 = shared.tok, shared.plus1

local function at_this_line(msg) has(msg, "hf_tokenizer_spec.lua:") end

-- the first position where two lists differ, nil when equal
local function first_diff(a, b)
  for i = 1, math.max(#a, #b) do
    if a[i] ~= b[i] then return i end
  end
end

local function same_ids(what, got, want)
  local i = first_diff(got, want)
  if i then
    local lo = math.max(1, i - 3)
    local function part(l) return table.concat({table.unpack(l, lo, math.min(#l, i + 3))}, " ") end
    error(string.format("%s: ids differ at %d of %d (want %d): got ... %s ..., want ... %s ...",
                        what, i, #got, #want, part(got), part(want)), 2)
  end
end

-- the 2-byte little-endian ids of the fixture's U8 tensor, + 1
local function u16_ids(t)
  local b = t:tolist()
  local out = {}
  for i = 1, #b, 2 do out[#out + 1] = b[i] + 256 * b[i + 1] + 1 end
  return out
end

-- the generator's checksum: sum of byte * (i mod 65521 + 1) mod 2^31, i from 0
local function checksum(s)
  local sum, i, n = 0, 1, #s
  while i <= n do
    local j = math.min(n, i + 4095)
    local bytes = {s:byte(i, j)}
    for k = 1, #bytes do sum = sum + bytes[k] * ((i + k - 2) % 65521 + 1) end
    sum = sum % 2147483648
    i = j + 1
  end
  return sum
end

local function lossy(s) return ember._tokenizer_utf8_lossy(s) end

describe("ember.hf.tokenizer: the tokenizers library's ids and decode on hostile strings", function()
  for _, c in ipairs(fx.cases) do
    for _, name in ipairs(NAMES) do
      it(name .. ": " .. c.name, function()
        local r = c.results[name]
        local t = tok(name)
        assert.same(r.pieces, t:pre_tokenize_str(lossy(c.text)))
        assert.equal(r.normalized, t:normalize_str(c.text))
        local ids = t:encode(c.text)
        assert.equal("int64", ids.dtype)
        assert.equal(1, ids:dim())
        same_ids("with special tokens", ids:tolist(), plus1(r.ids))
        same_ids("without", t:encode(c.text, {add_special_tokens = false}):tolist(), plus1(r.ids_plain))
        same_ids("without (by position)", t:encode(c.text, false):tolist(), plus1(r.ids_plain))
        assert.equal(r.decoded, t:decode(ids))
        assert.equal(r.decoded_skip, t:decode(ids, {skip_special_tokens = true}))
        -- a Lua list decodes as the tensor does
        assert.equal(r.decoded_skip, t:decode(ids:tolist(), true))
        -- decode(encode(s)) == s where nothing changes the text on the way (roberta adds a
        -- prefix space to each piece between added tokens, qwen2 normalizes to NFC, <|tool|>
        -- takes the spaces around it: lstrip and rstrip)
        if BYTE_LEVEL[name] and name ~= "roberta" and c.name ~= "added_flags" and utf8.len(c.text) then
          local want = c.text
          if name == "qwen2" then want = ember._tokenizer_normalize(want, "nfc") end
          assert.equal(want, t:decode(t:encode(c.text, {add_special_tokens = false})))
        end
      end)
    end
  end
end)

describe("ember.hf.tokenizer: large texts", function()
  it("the first 100 kB of Shakespeare (stored in the fixture): every tokenizer's ids, and decode", function()
    local text = string.char(table.unpack(idfile["text.shakespeare_head"]:tolist()))
    assert.equal(fx.head_bytes, #text)
    for _, name in ipairs(NAMES) do
      local got = tok(name):encode(text, {add_special_tokens = false})
      same_ids(name, got:tolist(), u16_ids(idfile[name .. ".shakespeare_head"]))
      if name == "gpt2" or name == "llama3" then assert.equal(text, tok(name):decode(got)) end
    end
  end)

  for _, big in ipairs(fx.large) do
    it(big.name .. " (" .. big.bytes .. " bytes): gpt2, llama3 and bert ids, and decode", function()
      local path = big.path:sub(1, 1) == "/" and big.path or (h.FIXTURES .. "../../../" .. big.path)
      if not h.exists(path) then
        pending("no " .. path .. " (scripts/install-deps.sh --data fetches the Shakespeare text)")
        return
      end
      local text = h.read_file(path)
      if big.name == "shakespeare" then text = text:sub(1, fx.shakespeare_bytes) end
      if #text ~= big.bytes or checksum(text) ~= big.checksum then
        pending(path .. " is not the text the fixture was made from (another version)")
        return
      end
      for _, name in ipairs({"gpt2", "llama3", "bert"}) do
        local got = tok(name):encode(text, {add_special_tokens = false})
        same_ids(name, got:tolist(), u16_ids(idfile[name .. "." .. big.name]))
        local d = tok(name):decode(got)
        assert.equal(big.decoded[name].bytes, #d)
        assert.equal(big.decoded[name].checksum, checksum(d))
        if BYTE_LEVEL[name] then assert.equal(lossy(text), d) end
      end
    end)
  end
end)

describe("ember.hf.tokenizer: ids, vocabulary, batches", function()
  it("ids are 1-based: the file's id + 1, as nn.Embedding rows", function()
    local t = tok("llama3")
    assert.equal(1, t:token_to_id("<|begin_of_text|>"))       -- id 0 in the file
    assert.equal("<|begin_of_text|>", t:id_to_token(1))
    assert.is_nil(t:token_to_id("no such token"))
    assert.is_nil(t:id_to_token(0))
    for _, name in ipairs(NAMES) do
      local v = fx.vocab[name]
      assert.equal(v.size, tok(name).vocab_size)
      assert.equal(v.size, tok(name):get_vocab_size())
      for _, a in ipairs(v.added) do
        assert.equal(a[2] + 1, tok(name):token_to_id(a[1]))
        assert.equal(a[1], tok(name):id_to_token(a[2] + 1))
      end
    end
    local ids = t:encode("Hi")
    assert.equal(1, ids[1]:item())
    -- every id indexes an embedding of vocab_size rows
    local emb = ember.nn.Embedding(t.vocab_size, 4)
    local big = t:encode(fx.cases[9].text .. "<|tool|><|eot_id|>")
    assert.same({big.shape[1], 4}, {emb(big).shape[1], emb(big).shape[2]})
    for _, name in ipairs(NAMES) do
      local tk = tok(name)
      for id = 1, tk.vocab_size do
        local s = tk:id_to_token(id)
        assert(s ~= nil, name .. ": no token for id " .. id)
        assert.equal(id, tk:token_to_id(s))
      end
    end
  end)

  it("encode_batch: a list of tensors, or padded ids and the attention mask", function()
    local t = tok("bert")
    local texts = {"hello world", "a", "the king's men are here"}
    local list = t:encode_batch(texts)
    assert.equal(3, #list)
    for i = 1, 3 do same_ids("batch " .. i, list[i]:tolist(), t:encode(texts[i]):tolist()) end
    local pad = t:token_to_id("[PAD]")
    local ids, mask = t:encode_batch(texts, {padding = true, pad_id = pad})
    local n3 = #list[3]:tolist()
    assert.same({3, n3}, {ids.shape[1], ids.shape[2]})
    local rows, m = ids:tolist(), mask:tolist()
    assert.same(t:encode("a"):tolist(), {table.unpack(rows[2], 1, 3)})
    assert.equal(pad, rows[2][4])
    assert.same({1, 1, 1, 0}, {table.unpack(m[2], 1, 4)})
    local lids, lmask = t:encode_batch(texts, {padding = "max_length", max_length = n3 + 2, pad_id = pad,
                                               padding_side = "left"})
    assert.equal(n3 + 2, lids.shape[2])
    assert.same(t:encode("a"):tolist(), {table.unpack(lids:tolist()[2], n3)})
    assert.equal(0, lmask:tolist()[2][1])
  end)

  it("the Unicode tables' version is Python's unicodedata's", function()
    assert.equal("14.0.0", ember._tokenizer_unicode_version())
  end)
end)

describe("ember.hf.tokenizer: errors at the caller's line", function()
  local tmp = os.tmpname()
  local dir = tmp .. "_d"
  os.execute("mkdir -p '" .. dir .. "'")
  local function write(text)
    local f = assert(io.open(dir .. "/tokenizer.json", "wb"))
    f:write(text)
    f:close()
  end
  local gpt2_json = h.read_file(h.FIXTURES .. "hf_tok/gpt2/tokenizer.json")
  local llama_json = h.read_file(h.FIXTURES .. "hf_tok/llama3/tokenizer.json")

  it("a missing file or folder", function()
    local msg = err(function() T.load(dir .. "/nowhere") end)
    at_this_line(msg); has(msg, "ember.hf.tokenizer: cannot read " .. dir .. "/nowhere/tokenizer.json")
    msg = err(function() T.load(42) end)
    at_this_line(msg); has(msg, "expected a folder holding tokenizer.json")
  end)

  it("malformed JSON, or JSON that is not a tokenizer", function()
    write('{"model": {"type": "BPE", ')
    local msg = err(function() T.load(dir) end)
    at_this_line(msg); has(msg, "tokenizer.json: invalid JSON near byte")
    write('[1, 2]')
    msg = err(function() T.load(dir) end)
    at_this_line(msg); has(msg, "not a tokenizer.json")
    write((gpt2_json:gsub('"merges": %[', '"merges": [["Ġt", "zzzq"], ', 1)))
    msg = err(function() T.load(dir) end)
    at_this_line(msg); has(msg, "model.merges[1]: token 'zzzq' is not in the vocabulary")
  end)

  it("an unsupported model, pattern, pre-tokenizer or normalizer", function()
    write((gpt2_json:gsub('"type": "BPE"', '"type": "Unigram"', 1)))
    local msg = err(function() T.load(dir) end)
    at_this_line(msg); has(msg, "model type 'Unigram' is not supported (BPE, WordPiece)")
    write((llama_json:gsub("\\\\p{N}{1,3}", "\\\\p{N}{1,4}", 1)))
    msg = err(function() T.load(dir) end)
    at_this_line(msg); has(msg, "Split pattern '(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,4}")
    has(msg, "is not supported")
    -- the first ByteLevel of the file is its pre-tokenizer's
    write((gpt2_json:gsub('"type": "ByteLevel"', '"type": "Digits"', 1)))
    msg = err(function() T.load(dir) end)
    at_this_line(msg); has(msg, "pre_tokenizer type 'Digits' is not supported")
    write((gpt2_json:gsub('"normalizer": null', '"normalizer": {"type": "NFKC"}', 1)))
    msg = err(function() T.load(dir) end)
    at_this_line(msg); has(msg, "normalizer type 'NFKC' is not supported")
    write((gpt2_json:gsub('"dropout": null', '"dropout": 0.1', 1)))
    msg = err(function() T.load(dir) end)
    at_this_line(msg); has(msg, "BPE dropout 0.1 is not supported")
  end)

  it("bad arguments to encode, decode and encode_batch", function()
    local t = tok("gpt2")
    local msg = err(function() t:encode(5) end)
    at_this_line(msg); has(msg, "Tokenizer:encode: text must be a string, got number")
    msg = err(function() t:encode("x", {add_specials = true}) end)
    at_this_line(msg); has(msg, "Tokenizer:encode: unknown option 'add_specials'")
    msg = err(function() t.encode("x") end)
    at_this_line(msg); has(msg, "call it as tok:encode(...)")
    msg = err(function() t:decode({1, 0}) end)
    at_this_line(msg); has(msg, "Tokenizer:decode: ids[2] = 0 is not a token id (ids are 1-based: 1 to 2000)")
    msg = err(function() t:decode(ember.zeros(2, 2, {dtype = "int64"})) end)
    at_this_line(msg); has(msg, "ids must be 1-D")
    msg = err(function() t:decode(ember.ones(2)) end)
    at_this_line(msg); has(msg, "ids must be an integer tensor, got dtype float32")
    msg = err(function() t:decode("abc") end)
    at_this_line(msg); has(msg, "ids must be a tensor or a list of integers, got string")
    msg = err(function() t:encode_batch({"a", "b"}, {padding = true}) end)
    at_this_line(msg); has(msg, "padding needs pad_id")
    msg = err(function() t:encode_batch({"a", 3}) end)
    at_this_line(msg); has(msg, "texts[2] must be a string or a pair {text, text_pair} of strings, got number")
  end)

  os.remove(tmp)
end)
