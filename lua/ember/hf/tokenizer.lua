-- ember.hf.tokenizer — the Hugging Face tokenizers library's tokenizer.json, read offline.
--
-- load(dir) reads dir/tokenizer.json (or dir itself when it names a .json file) and returns a
-- Tokenizer: byte-level BPE as GPT-2, RoBERTa, Llama-3 and Qwen2 use it, and WordPiece as
-- BERT's. The pipeline is tokenizers': added tokens matched first (those with normalized =
-- false on the raw text, the others after the normalizer), the normalizer, the pre-tokenizer,
-- the model, truncation when asked, then the post-processor's special tokens (one text or a
-- pair), padding in batches. The per-character and per-word loops are C (lua/bind_tokenizer.c:
-- ember._tokenizer_*); the rest, reading the JSON into a plan, is here.
--
-- Ids: a token id is a position (the row of nn.Embedding it selects), and ember's positions
-- are 1-based, so every id ember gives or takes is the file's id + 1: encode returns them,
-- decode, id_to_token take them, token_to_id returns one. A file id k is row k + 1 of the
-- model's embedding matrix, the row PyTorch calls k. Type ids (0 for a pair's first text, 1
-- for its second in the file's terms) select rows of BERT's token_type_embeddings, so they
-- are + 1 too: 1 and 2, as ember.hf's BERT takes them.
local ember = require "ember"
local errors = require "ember.errors"
local args = require "ember.args"

local raise, raisef = errors.raise, errors.raisef

local M = {}

local Tokenizer = {}
Tokenizer.__index = Tokenizer
Tokenizer.__name = "ember.hf.Tokenizer"

-- the three pre-tokenizer patterns ember matches (by hand, in C), by their text
local PATTERNS = {
  ["'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"] = "gpt2",
  ["(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"] = "llama3",
  ["(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"] = "qwen2",
}

local function fail(path, fmt, ...)
  raise("ember.hf.tokenizer: " .. path .. ": " .. string.format(fmt, ...))
end

local function type_of(spec, path, what)
  if type(spec) ~= "table" or type(spec.type) ~= "string" then
    fail(path, "%s must be an object with a \"type\", got %s", what, type(spec))
  end
  return spec.type
end

-- A Sequence: its parts made by build(sub, path), applied in order (x -> f_n(... f_1(x))).
local function sequence(parts, path, build)
  local fs = {}
  for i, sub in ipairs(parts or {}) do fs[i] = build(sub, path) end
  return function(x)
    for _, f in ipairs(fs) do x = f(x) end
    return x
  end
end

-- ---- normalizers: each a function string -> string ---------------------------------------

local normalize = ember._tokenizer_normalize

local function plain_replace(s, from, to)
  if from == "" or not s:find(from, 1, true) then return s end
  local out, i = {}, 1
  while true do
    local a, b = s:find(from, i, true)
    if not a then break end
    out[#out + 1] = s:sub(i, a - 1)
    out[#out + 1] = to
    i = b + 1
  end
  out[#out + 1] = s:sub(i)
  return table.concat(out)
end

local WS_CLASS = "[\t\n\v\f\r ]"

local function build_normalizer(spec, path)
  local t = type_of(spec, path, "normalizer")
  if t == "Sequence" then
    return sequence(spec.normalizers, path, build_normalizer)
  elseif t == "BertNormalizer" then
    local clean, chinese, lower = spec.clean_text ~= false, spec.handle_chinese_chars ~= false, spec.lowercase ~= false
    local strip = spec.strip_accents
    if strip == nil then strip = lower end
    return function(s)
      if clean then s = normalize(s, "bert_clean") end
      if chinese then s = normalize(s, "bert_chinese") end
      if strip then s = normalize(s, "strip_accents_nfd") end
      if lower then s = normalize(s, "lowercase") end
      return s
    end
  elseif t == "NFC" then return function(s) return normalize(s, "nfc") end
  elseif t == "NFD" then return function(s) return normalize(s, "nfd") end
  elseif t == "Lowercase" then return function(s) return normalize(s, "lowercase") end
  elseif t == "StripAccents" then return function(s) return normalize(s, "strip_accents") end
  elseif t == "Prepend" then
    local p = spec.prepend or ""
    return function(s) return s == "" and s or p .. s end
  elseif t == "Replace" then
    local pat = spec.pattern or {}
    if type(pat.String) ~= "string" then
      fail(path, "normalizer Replace with a regex pattern is not supported (only {\"String\": ...})")
    end
    local content = spec.content or ""
    return function(s) return plain_replace(s, pat.String, content) end
  elseif t == "Strip" then
    local left, right = spec.strip_left ~= false, spec.strip_right ~= false
    return function(s)
      if left then s = s:gsub("^" .. WS_CLASS .. "+", "") end
      if right then s = s:gsub(WS_CLASS .. "+$", "") end
      return s
    end
  end
  fail(path, "normalizer type '%s' is not supported (BertNormalizer, NFC, NFD, Lowercase, StripAccents, "
              .. "Prepend, Replace, Strip, Sequence)", t)
end

-- ---- pre-tokenizers: a list of C steps ------------------------------------------------------

local function build_pretokenizer(spec, path, steps)
  local t = type_of(spec, path, "pre_tokenizer")
  if t == "Sequence" then
    for _, sub in ipairs(spec.pretokenizers or {}) do build_pretokenizer(sub, path, steps) end
  elseif t == "ByteLevel" then
    steps[#steps + 1] = {kind = "bytelevel", add_prefix_space = spec.add_prefix_space == true,
                         use_regex = spec.use_regex ~= false}
    steps.byte_level = true
  elseif t == "Split" then
    local pat = spec.pattern or {}
    local text = pat.Regex or pat.String
    local kind = pat.Regex and PATTERNS[pat.Regex]
    if not kind then
      fail(path, "Split pattern '%s' is not supported (ember matches the GPT-2, Llama-3 and Qwen2 patterns, "
                  .. "by their exact text)", tostring(text))
    end
    if spec.invert then fail(path, "Split with invert = true is not supported") end
    -- these patterns match every character, so a match merged with its neighbours that are
    -- not matches is the match alone
    local b = spec.behavior or "Isolated"
    local behaviors = {Isolated = "Isolated", MergedWithPrevious = "Isolated", MergedWithNext = "Isolated",
                       Removed = "Removed", Contiguous = "Contiguous"}
    if not behaviors[b] then fail(path, "Split behavior '%s' is not supported", tostring(b)) end
    steps[#steps + 1] = {kind = "split", pattern = kind, behavior = behaviors[b]}
  elseif t == "BertPreTokenizer" then
    steps[#steps + 1] = {kind = "bert"}
  elseif t == "WhitespaceSplit" then
    steps[#steps + 1] = {kind = "whitespace_split"}
  elseif t == "Metaspace" then
    local scheme = spec.prepend_scheme or (spec.add_prefix_space == false and "never" or "always")
    if scheme ~= "always" and scheme ~= "first" and scheme ~= "never" then
      fail(path, "Metaspace prepend_scheme '%s' is not one of always, first, never", tostring(scheme))
    end
    steps[#steps + 1] = {kind = "metaspace", replacement = spec.replacement or "\u{2581}", prepend_scheme = scheme,
                         split = spec.split ~= false}
  else
    fail(path, "pre_tokenizer type '%s' is not supported (ByteLevel, Split, BertPreTokenizer, WhitespaceSplit, "
                .. "Metaspace, Sequence)", t)
  end
  return steps
end

-- ---- decoders: each a function token list -> token list --------------------------------------

-- tokenizers' cleanup of the WordPiece decoder, in its order; every pattern starts with a
-- space and one of . ? ! , ' n d
local CLEANUP = {{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
                 {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}}
local function wordpiece_cleanup(s)
  if not s:find(" [%.%?!,'nd]") then return s end
  for _, r in ipairs(CLEANUP) do s = plain_replace(s, r[1], r[2]) end
  return s
end

local function build_decoder(spec, path)
  local t = type_of(spec, path, "decoder")
  if t == "Sequence" then
    return sequence(spec.decoders, path, build_decoder)
  elseif t == "ByteLevel" then
    return function(tokens)
      return {ember._tokenizer_utf8_lossy(ember._tokenizer_bytelevel_decode(tokens))}
    end
  elseif t == "WordPiece" then
    local prefix, cleanup = spec.prefix or "##", spec.cleanup ~= false
    return function(tokens)
      local out = {}
      for i, tok in ipairs(tokens) do
        if i > 1 then
          if tok:sub(1, #prefix) == prefix then tok = tok:sub(#prefix + 1) else tok = " " .. tok end
        end
        out[i] = cleanup and wordpiece_cleanup(tok) or tok
      end
      return out
    end
  elseif t == "ByteFallback" then
    return function(tokens)
      local out, bytes = {}, {}
      local function flush()
        if #bytes == 0 then return end
        local s = string.char(table.unpack(bytes))
        out[#out + 1] = utf8.len(s) and s or string.rep("\u{FFFD}", #bytes)
        bytes = {}
      end
      for _, tok in ipairs(tokens) do
        local hex = #tok == 6 and tok:match("^<0x(%x%x)>$")
        if hex then bytes[#bytes + 1] = tonumber(hex, 16) else flush(); out[#out + 1] = tok end
      end
      flush()
      return out
    end
  elseif t == "Fuse" then
    return function(tokens) return {table.concat(tokens)} end
  elseif t == "Replace" then
    local pat = spec.pattern or {}
    if type(pat.String) ~= "string" then fail(path, "decoder Replace with a regex pattern is not supported") end
    return function(tokens)
      local out = {}
      for i, tok in ipairs(tokens) do out[i] = plain_replace(tok, pat.String, spec.content or "") end
      return out
    end
  elseif t == "Strip" then
    local content, start, stop = spec.content or " ", spec.start or 0, spec.stop or 0
    return function(tokens)
      local out = {}
      for i, tok in ipairs(tokens) do
        for _ = 1, start do if tok:sub(1, #content) == content then tok = tok:sub(#content + 1) else break end end
        for _ = 1, stop do if #tok >= #content and tok:sub(-#content) == content then tok = tok:sub(1, -#content - 1) else break end end
        out[i] = tok
      end
      return out
    end
  elseif t == "Metaspace" then
    local repl = spec.replacement or "\u{2581}"
    local prepend = spec.prepend_scheme or (spec.add_prefix_space == false and "never" or "always")
    -- as tokenizers: the replacement is a space, except in the first token, where (unless
    -- the scheme is never) it is dropped
    return function(tokens)
      local out = {}
      for i, tok in ipairs(tokens) do
        out[i] = plain_replace(tok, repl, (i == 1 and prepend ~= "never") and "" or " ")
      end
      return out
    end
  end
  fail(path, "decoder type '%s' is not supported (ByteLevel, WordPiece, ByteFallback, Fuse, Replace, Strip, "
              .. "Metaspace, Sequence)", t)
end

-- ---- post-processors: the special tokens and type ids around one text or a pair ------------

-- A post-processor is {apply = function(a, b, special) -> ids, types; single = n, pair = n}: a
-- and b (nil for one text) are the file's ids of the two texts, special says whether to add
-- the special tokens, types are the file's type ids (0, 1); single and pair count the ids it
-- adds (tokenizers' added_tokens, what truncation leaves room for).

-- appends src to ids, each with type id ty
local function append(ids, types, src, ty)
  local n = #ids
  for i = 1, #src do ids[n + i] = src[i]; types[n + i] = ty end
end

-- tokenizers' default: the texts joined, a's type ids 0, b's 1 (or bty: RoBERTa's are all 0)
local function concat(a, b, bty)
  local ids, types = {}, {}
  append(ids, types, a, 0)
  if b then append(ids, types, b, bty or 1) end
  return ids, types
end

local PLAIN = {apply = function(a, b) return concat(a, b) end, single = 0, pair = 0}

local function special_pair(v, path, what)
  if type(v) ~= "table" or type(v[1]) ~= "string" or math.type(v[2]) ~= "integer" then
    fail(path, "post_processor %s must be [token, id]", what)
  end
  return v[2]
end

-- TemplateProcessing's single or pair: a list of {seq = "A" | "B" | ids of a special token, ty}
local function template(spec, which, path)
  local pieces = spec[which]
  if pieces == nil then return nil end
  if type(pieces) ~= "table" then fail(path, "TemplateProcessing: %s must be a list of pieces", which) end
  local items, added = {}, 0
  for _, piece in ipairs(pieces) do
    local p = type(piece) == "table" and (piece.Sequence or piece.SpecialToken)
    local ty = type(p) == "table" and p.type_id or 0
    if type(p) ~= "table" or math.type(ty) ~= "integer" then
      fail(path, "TemplateProcessing: a piece of %s is neither Sequence nor SpecialToken with an integer type_id", which)
    end
    if piece.Sequence then
      if p.id ~= "A" and (p.id ~= "B" or which == "single") then
        fail(path, "TemplateProcessing: %s names sequence '%s' (A%s)", which, tostring(p.id),
             which == "pair" and " or B" or "")
      end
      items[#items + 1] = {seq = p.id, ty = ty}
    else
      local st = (spec.special_tokens or {})[p.id]
      if type(st) ~= "table" or type(st.ids) ~= "table" then
        fail(path, "TemplateProcessing: special token '%s' has no ids in special_tokens", tostring(p.id))
      end
      items[#items + 1] = {seq = st.ids, ty = ty}
      added = added + #st.ids
    end
  end
  return items, added
end

local function build_post(spec, path)
  local t = type_of(spec, path, "post_processor")
  if t == "ByteLevel" then return nil
  elseif t == "Sequence" then
    local found
    for _, sub in ipairs(spec.processors or {}) do
      local p = build_post(sub, path)
      if p and found then
        fail(path, "post_processor Sequence with more than one processor that adds tokens is not supported")
      end
      found = found or p
    end
    return found
  elseif t == "BertProcessing" then
    local cls, sep = special_pair(spec.cls, path, "cls"), special_pair(spec.sep, path, "sep")
    return {single = 2, pair = 3, apply = function(a, b, special)
      if not special then return concat(a, b) end
      local ids, types = {cls}, {0}
      append(ids, types, a, 0)
      append(ids, types, {sep}, 0)
      if b then append(ids, types, b, 1); append(ids, types, {sep}, 1) end
      return ids, types
    end}
  elseif t == "RobertaProcessing" then
    -- every type id 0, as tokenizers' ("Roberta is weird")
    local cls, sep = special_pair(spec.cls, path, "cls"), special_pair(spec.sep, path, "sep")
    return {single = 2, pair = 4, apply = function(a, b, special)
      if not special then return concat(a, b, 0) end
      local ids, types = {cls}, {0}
      append(ids, types, a, 0)
      append(ids, types, {sep}, 0)
      if b then append(ids, types, {sep}, 0); append(ids, types, b, 0); append(ids, types, {sep}, 0) end
      return ids, types
    end}
  elseif t == "TemplateProcessing" then
    local single, n1 = template(spec, "single", path)
    local pair, n2 = template(spec, "pair", path)
    single = single or {}
    return {single = n1 or 0, pair = n2, apply = function(a, b, special)
      local items = b and pair or single
      local ids, types = {}, {}
      for _, it in ipairs(items) do
        if it.seq == "A" then append(ids, types, a, it.ty)
        elseif it.seq == "B" then append(ids, types, b, it.ty)
        elseif special then append(ids, types, it.seq, it.ty) end
      end
      return ids, types
    end}
  end
  fail(path, "post_processor type '%s' is not supported (TemplateProcessing, RobertaProcessing, BertProcessing, "
              .. "ByteLevel, Sequence)", t)
end

-- ---- added tokens ---------------------------------------------------------------------------

-- the UTF-8 forms of the White_Space characters beyond ASCII (regex's \s)
local WS_MULTI = {}
for _, cp in ipairs({0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008,
                     0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}) do
  WS_MULTI[utf8.char(cp)] = true
end

-- the character of s that ends just before byte i (nil at the start), its start
local function char_before(s, i)
  if i <= 1 then return nil end
  local j = i - 1
  while j > 1 and (s:byte(j) & 0xC0) == 0x80 do j = j - 1 end
  return s:sub(j, i - 1), j
end
local function char_at(s, i)
  if i > #s then return nil end
  local j = i + 1
  while j <= #s and (s:byte(j) & 0xC0) == 0x80 do j = j + 1 end
  return s:sub(i, j - 1), j
end
local function is_space(c) return c ~= nil and (c:find("^" .. WS_CLASS .. "$") ~= nil or WS_MULTI[c] == true) end
local function is_word(c)
  if c == nil then return false end
  if #c == 1 then return c:find("^[%w_]$") ~= nil end
  return ember._tokenizer_is_word(c)
end

-- a matcher over the added tokens of one kind: leftmost-longest, with lstrip/rstrip/single_word
local function build_matcher(tokens)
  if #tokens == 0 then return nil end
  local by_first, firsts = {}, {}
  for _, t in ipairs(tokens) do
    local b = t.content:sub(1, 1)
    if not by_first[b] then by_first[b] = {}; firsts[#firsts + 1] = "%" .. b end
    table.insert(by_first[b], t)
  end
  for _, l in pairs(by_first) do table.sort(l, function(a, b) return #a.content > #b.content end) end
  -- a character class of the first bytes (%-escaped: punctuation and letters alike are safe)
  local class = "[" .. table.concat(firsts):gsub("%%(%w)", "%1") .. "]"
  -- splits s into {text} and {token = t} pieces
  return function(s)
    local out, from, pos = {}, 1, 1
    while true do
      local p = s:find(class, pos)
      if not p then break end
      local hit
      for _, t in ipairs(by_first[s:sub(p, p)]) do
        if s:sub(p, p + #t.content - 1) == t.content then hit = t; break end
      end
      if not hit then
        pos = p + 1
      else
        local start, stop = p, p + #hit.content
        local ok = true
        if hit.single_word then
          ok = not is_word((char_before(s, start))) and not is_word((char_at(s, stop)))
        end
        if ok then
          if hit.lstrip then
            while start > from do
              local c, j = char_before(s, start)
              if not is_space(c) then break end
              start = j
            end
          end
          if hit.rstrip then
            while stop <= #s do
              local c, j = char_at(s, stop)
              if not is_space(c) then break end
              stop = j
            end
          end
          if start > from then out[#out + 1] = {text = s:sub(from, start - 1)} end
          out[#out + 1] = {token = hit}
          from = stop
        end
        pos = stop
      end
    end
    if from <= #s then out[#out + 1] = {text = s:sub(from)} end
    return out
  end
end

-- ---- loading --------------------------------------------------------------------------------

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("a")
  f:close()
  return s
end

--- load(dir) -> Tokenizer
function M.load(dir)
  if type(dir) ~= "string" then
    raisef("ember.hf.tokenizer: expected a folder holding tokenizer.json (or the file's path), got %s", type(dir))
  end
  errors.check_path("ember.hf.tokenizer", "dir", dir)
  local path = dir
  if not dir:find("%.json$") then path = dir:gsub("/+$", "") .. "/tokenizer.json" end
  local text, err = read_file(path)
  if not text then raisef("ember.hf.tokenizer: cannot read %s (%s)", path, err) end
  local j, jerr = ember._tokenizer_json(text)
  if j == nil then fail(path, "%s", jerr) end
  if type(j) ~= "table" or type(j.model) ~= "table" then fail(path, "not a tokenizer.json: no \"model\" object") end
  -- the file's "truncation" is not applied: ember truncates when a call asks, as transformers
  -- does (it replaces the file's setting on every call); tokenizers' own encode would apply it

  local m = j.model
  local mtype = m.type
  if mtype == nil then
    -- files from before "type" was written: a BPE has merges, a WordPiece a continuing prefix
    mtype = m.merges and "BPE" or (m.continuing_subword_prefix and "WordPiece") or nil
  end
  if mtype ~= "BPE" and mtype ~= "WordPiece" then
    fail(path, "model type '%s' is not supported (BPE, WordPiece)", tostring(mtype))
  end
  if type(m.vocab) ~= "table" then fail(path, "model.vocab must be an object of token: id") end
  if mtype == "BPE" and m.dropout ~= nil and m.dropout ~= 0 then
    fail(path, "BPE dropout %s is not supported (it samples at encode time; only null)", tostring(m.dropout))
  end

  local self = setmetatable({path = path}, Tokenizer)
  -- id (0-based, the file's) -> token, and token -> id, over the model and the added tokens
  local id_to_token, token_to_id = {}, {}
  for tok, id in pairs(m.vocab) do
    if math.type(id) ~= "integer" or id < 0 then fail(path, "model.vocab['%s'] is not a non-negative integer", tok) end
    id_to_token[id] = tok
    token_to_id[tok] = id
  end
  local unk
  if m.unk_token ~= nil then
    unk = m.vocab[m.unk_token]
    if unk == nil and mtype == "WordPiece" then
      fail(path, "model.unk_token '%s' is not in the vocabulary", tostring(m.unk_token))
    end
  end
  local ok, model = pcall(ember._tokenizer_model, {
    type = mtype, vocab = m.vocab, merges = m.merges, unk = unk, byte_fallback = m.byte_fallback == true,
    ignore_merges = m.ignore_merges == true, fuse_unk = m.fuse_unk == true,
    prefix = m.continuing_subword_prefix or (mtype == "WordPiece" and "##" or nil),
    suffix = m.end_of_word_suffix, max_chars = m.max_input_chars_per_word or 100})
  if not ok then fail(path, "%s", tostring(model)) end
  self._model = model

  -- added tokens
  local added, special, raw, normed = {}, {}, {}, {}
  for i, a in ipairs(j.added_tokens or {}) do
    if type(a) ~= "table" or type(a.content) ~= "string" or math.type(a.id) ~= "integer" or a.content == "" then
      fail(path, "added_tokens[%d] must have a non-empty \"content\" and an integer \"id\"", i)
    end
    local t = {content = a.content, id = a.id, special = a.special == true, lstrip = a.lstrip == true,
               rstrip = a.rstrip == true, single_word = a.single_word == true,
               normalized = a.normalized == nil and not a.special or a.normalized == true}
    added[#added + 1] = t
    id_to_token[a.id] = a.content
    token_to_id[a.content] = a.id
    if t.special then special[a.id] = true end
  end
  self._normalizer = j.normalizer and build_normalizer(j.normalizer, path)
  for _, t in ipairs(added) do
    if t.normalized and self._normalizer then
      local c = self._normalizer(t.content)
      if c ~= "" then
        normed[#normed + 1] = {content = c, id = t.id, lstrip = t.lstrip, rstrip = t.rstrip, single_word = t.single_word}
      end
    elseif t.normalized then
      normed[#normed + 1] = t
    else
      raw[#raw + 1] = t
    end
  end
  self._raw_matcher = build_matcher(raw)
  self._normed_matcher = build_matcher(normed)
  self._special = special
  self._id_to_token = id_to_token
  self._token_to_id = token_to_id
  local n, max_id = 0, -1
  for id in pairs(id_to_token) do n = n + 1; if id > max_id then max_id = id end end
  self.vocab_size = n
  self._max_id = max_id
  self._steps = j.pre_tokenizer and build_pretokenizer(j.pre_tokenizer, path, {}) or {}
  self._post = j.post_processor and build_post(j.post_processor, path)
  self._decoder = j.decoder and build_decoder(j.decoder, path)
  local pad = j.padding
  if type(pad) == "table" and math.type(pad.pad_id) == "integer" then self._pad_id = pad.pad_id + 1 end
  return self
end

-- ---- encoding -------------------------------------------------------------------------------

-- the file ids (0-based) of text, without special tokens of the post-processor, appended to out
local function encode_plain(self, text, out, n)
  text = ember._tokenizer_utf8_lossy(text)
  local pieces = self._raw_matcher and self._raw_matcher(text) or {{text = text}}
  for k, p in ipairs(pieces) do
    if p.token then
      n = n + 1
      out[n] = p.token.id
    else
      local s = p.text
      if self._normalizer then s = self._normalizer(s) end
      local sub = self._normed_matcher and self._normed_matcher(s) or {{text = s}}
      for _, q in ipairs(sub) do
        if q.token then
          n = n + 1
          out[n] = q.token.id
        elseif q.text ~= "" then
          n = self._model:encode(q.text, self._steps, out, n, 0, k == 1 and q == sub[1])
        end
      end
    end
  end
  return n
end

-- ---- truncation and padding ------------------------------------------------------------------

local STRATEGY = {[true] = "longest_first", longest_first = "longest_first", only_first = "only_first",
                  only_second = "only_second"}

local function side_of(v, what, op)
  if v == nil then return "right" end
  if v ~= "right" and v ~= "left" then raisef("%s: %s must be \"right\" or \"left\", got %s", op, what, tostring(v)) end
  return v
end

-- the options of encode, encode_batch and tok(...), read and checked once, by transformers'
-- rules: truncation = true is longest_first, and max_length alone (no padding, truncation not
-- given) truncates longest first
local function plan(self, o, op)
  local p = {special = o.add_special_tokens ~= false}
  local ml = o.max_length
  if ml ~= nil and (math.type(ml) ~= "integer" or ml < 0) then
    raisef("%s: max_length must be a non-negative integer, got %s", op, tostring(ml))
  end
  local padding = o.padding
  if padding == "do_not_pad" then padding = false end
  if padding ~= nil and padding ~= false and padding ~= true and padding ~= "longest" and padding ~= "max_length" then
    raisef("%s: padding must be true, false, \"longest\", \"max_length\" or \"do_not_pad\", got %s", op,
           tostring(padding))
  end
  local trunc = o.truncation
  if trunc == nil and ml ~= nil and not padding then trunc = true end
  if trunc ~= nil and trunc ~= false and trunc ~= "do_not_truncate" then
    p.strategy = STRATEGY[trunc]
    if not p.strategy then
      raisef("%s: truncation must be true, false, \"longest_first\", \"only_first\", \"only_second\" or "
             .. "\"do_not_truncate\", got %s", op, tostring(trunc))
    end
    if ml == nil then raisef("%s: truncation needs max_length (an integer; ember reads no model_max_length)", op) end
    p.max_length = ml
  end
  p.side = side_of(o.truncation_side, "truncation_side", op)
  local m = o.pad_to_multiple_of
  if m ~= nil and (math.type(m) ~= "integer" or m < 1) then
    raisef("%s: pad_to_multiple_of must be a positive integer, got %s", op, tostring(m))
  end
  if padding then
    if padding == "max_length" then
      if ml == nil then raisef("%s: padding = \"max_length\" needs max_length (an integer)", op) end
      p.pad_to = ml
    end
    if m and p.strategy and ml % m ~= 0 then
      raisef("%s: truncation to max_length %d and padding to a multiple of pad_to_multiple_of %d disagree "
             .. "(max_length must be a multiple of it)", op, ml, m)
    end
    p.multiple = m
    p.pad_id = o.pad_id or self._pad_id
    if math.type(p.pad_id) ~= "integer" then
      raisef("%s: padding needs pad_id (the tokenizer.json sets none): give {pad_id = ...}", op)
    end
    p.padding_side = side_of(o.padding_side, "padding_side", op)
  end
  return p
end

-- keeps n ids of list, the first n (side "right") or the last n (side "left"), in place
local function cut(list, n, side)
  local len = #list
  if n >= len then return end
  if side == "left" then table.move(list, len - n + 1, len, 1) end
  for i = len, n + 1, -1 do list[i] = nil end
end

-- tokenizers' truncate_encodings on the file ids of a and b (nil for one text), with room
-- left for the added special tokens
local function truncate(a, b, p, added, op)
  local max = p.max_length
  if added > max then
    -- tokenizers subtracts without a check and, the difference wrapping, does not truncate
    raisef("%s: max_length %d is less than the %d special tokens the post-processor adds to %s", op, max, added,
           b and "a pair" or "a text")
  end
  max = max - added
  if max == 0 then
    cut(a, 0)
    if b then cut(b, 0) end
    return
  end
  local total = #a + (b and #b or 0)
  if total <= max then return end
  if p.strategy == "longest_first" then
    if not b then return cut(a, max, p.side) end
    -- the shorter kept whole when the longer can absorb the cut, else both to about half
    local n1, n2 = #a, #b
    local swap = n1 > n2
    if swap then n1, n2 = n2, n1 end
    if n1 > max then n2 = n1 else n2 = math.max(n1, max - n1) end
    if n1 + n2 > max then n1 = max // 2; n2 = n1 + max % 2 end
    if swap then n1, n2 = n2, n1 end
    cut(a, n1, p.side)
    cut(b, n2, p.side)
    return
  end
  local first = p.strategy == "only_first"
  local target = first and a or b
  if not target then
    raisef("%s: truncation = \"only_second\" needs a text pair (one text has no second sequence to cut)", op)
  end
  local remove = total - max
  if #target <= remove then
    raisef("%s: truncation = \"%s\": the %s text's %d ids are too few to lose the %d that max_length %d asks%s "
           .. "(tokenizers keeps at least one)", op, p.strategy, first and "first" or "second", #target, remove,
           p.max_length, added > 0 and string.format(" with %d special tokens", added) or "")
  end
  cut(target, #target - remove, p.side)
end

-- the ids and type ids (ember's: the file's + 1) of a text or a pair, as p says
local function encode_one(self, text, pair, p, op)
  local a = {}
  encode_plain(self, text, a, 0)
  local b
  if pair then
    b = {}
    encode_plain(self, pair, b, 0)
  end
  local post = self._post or PLAIN
  if b and not post.pair then
    raisef("%s: the post-processor's TemplateProcessing has no pair template (it encodes one text)", op)
  end
  if p.strategy then truncate(a, b, p, p.special and (b and post.pair or post.single) or 0, op) end
  local ids, types = post.apply(a, b, p.special)
  for i = 1, #ids do
    ids[i] = ids[i] + 1
    types[i] = types[i] + 1
  end
  return ids, types
end

-- the ids and type ids of each input of a batch: a string, or a pair {text, text_pair}
local function encode_all(self, inputs, p, op, what)
  if inputs[1] == nil and next(inputs) ~= nil then
    raisef("%s: %s must be a list of strings or pairs {text, text_pair}, got a table with no [1] (options come "
           .. "after the texts)", op, what)
  end
  local all, all_types = {}, {}
  for i, x in ipairs(inputs) do
    local a, b = x, nil
    if type(x) == "table" then a, b = x[1], x[2] end
    if type(a) ~= "string" or (type(x) == "table" and (type(b) ~= "string" or #x ~= 2)) then
      local got = type(x)
      if got == "table" then
        local kinds = {}
        for k = 1, math.min(#x, 3) do kinds[k] = type(x[k]) end
        got = "{" .. table.concat(kinds, ", ") .. (#x > 3 and ", ..." or "") .. "}"
      end
      raisef("%s: %s[%d] must be a string or a pair {text, text_pair} of strings, got %s", op, what, i, got)
    end
    all[i], all_types[i] = encode_one(self, a, b, p, op)
  end
  return all, all_types
end

local function int64(rows, len)
  if #rows == 0 then return ember.zeros(0, len, {dtype = "int64"}) end
  return ember.tensor(rows, {dtype = "int64"})
end

-- the rows padded as p says: ids [B, L], attention_mask [B, L], type ids [B, L] (padding's
-- type id is tokenizers' 0, ember's 1)
local function pad_rows(rows, types, p, op)
  local longest = 0
  for _, r in ipairs(rows) do longest = math.max(longest, #r) end
  local len = p.pad_to or longest
  if longest > len then
    raisef("%s: max_length %d is shorter than the longest text's %d ids (give truncation = true to cut them)", op,
           len, longest)
  end
  if p.multiple and len % p.multiple ~= 0 then len = len + p.multiple - len % p.multiple end
  local out, masks, out_types = {}, {}, {}
  local left = p.padding_side == "left"
  for i, ids in ipairs(rows) do
    local row, mask, ty = {}, {}, {}
    local gap = len - #ids
    for k = 1, len do
      local at = left and k - gap or k
      if at >= 1 and at <= #ids then
        row[k], mask[k], ty[k] = ids[at], 1, types[i][at]
      else
        row[k], mask[k], ty[k] = p.pad_id, 0, 1
      end
    end
    out[i], masks[i], out_types[i] = row, mask, ty
  end
  return int64(out, len), int64(masks, len), int64(out_types, len)
end

local function check_self(self, op)
  if getmetatable(self) ~= Tokenizer then
    raisef("%s: call it as tok:%s(...) on a tokenizer from ember.hf.tokenizer, got %s", op, op:match("[%w_]+$"),
           type(self))
  end
end

local ENCODE_OPTS = {"add_special_tokens", "*", "truncation", "max_length", "truncation_side", "return_type_ids"}

local function encode(self, op, text, pair, ...)
  local o = args.options(op, ENCODE_OPTS, ...)
  local ids, types = encode_one(self, text, pair, plan(self, o, op), op)
  ids = ember.tensor(ids, {dtype = "int64"})
  if o.return_type_ids then return ids, ember.tensor(types, {dtype = "int64"}) end
  return ids
end

--- tok:encode(text [, text_pair] [, add_special_tokens] [, {truncation =, max_length =,
-- truncation_side =, return_type_ids =}]) -> int64 tensor of ids [, type ids]
function Tokenizer:encode(text, ...)
  local op = "Tokenizer:encode"
  check_self(self, op)
  if type(text) ~= "string" then raisef("%s: text must be a string, got %s", op, type(text)) end
  local pair = ...
  local n = select("#", ...)
  if type(pair) == "string" or (pair == nil and n > 1) then
    return encode(self, op, text, pair, select(2, ...))
  end
  return encode(self, op, text, nil, ...)
end

local BATCH_OPTS = {"add_special_tokens", "padding", "pad_id", "padding_side", "max_length", "*", "truncation",
                    "truncation_side", "pad_to_multiple_of", "return_type_ids"}

--- tok:encode_batch(inputs [, {add_special_tokens, padding, pad_id, padding_side, max_length,
-- truncation, truncation_side, pad_to_multiple_of, return_type_ids}]): inputs are strings or
-- pairs {text, text_pair} -> a list of 1-D tensors [, a list of type ids]; with padding, an ids
-- tensor [B, L] and its attention_mask [B, L] [, type ids [B, L]]
function Tokenizer:encode_batch(inputs, ...)
  local op = "Tokenizer:encode_batch"
  check_self(self, op)
  if type(inputs) ~= "table" then
    raisef("%s: texts must be a list of strings or pairs {text, text_pair}, got %s", op, type(inputs))
  end
  local o = args.options(op, BATCH_OPTS, ...)
  local p = plan(self, o, op)
  local all, all_types = encode_all(self, inputs, p, op, "texts")
  if p.padding_side then
    local ids, mask, types = pad_rows(all, all_types, p, op)
    if o.return_type_ids then return ids, mask, types end
    return ids, mask
  end
  local out, out_types = {}, {}
  for i, ids in ipairs(all) do
    out[i] = ember.tensor(ids, {dtype = "int64"})
    if o.return_type_ids then out_types[i] = ember.tensor(all_types[i], {dtype = "int64"}) end
  end
  if o.return_type_ids then return out, out_types end
  return out
end

local CALL_OPTS = {"text_pair", "*", "add_special_tokens", "padding", "truncation", "max_length", "pad_id",
                   "padding_side", "truncation_side", "pad_to_multiple_of", "return_tensors",
                   "return_attention_mask", "return_token_type_ids"}

--- tok(text [, text_pair] [, {padding, truncation, max_length, ...}]) -> {input_ids =,
-- attention_mask =, token_type_ids =}, each int64 [B, L] (B = 1 for one text), as transformers'
-- tokenizer(..., return_tensors = "pt")
function Tokenizer:__call(text, ...)
  local op = "Tokenizer(...)"
  local o = args.options(op, CALL_OPTS, ...)
  local pair = o.text_pair
  local inputs
  if type(text) == "string" then
    if pair ~= nil and type(pair) ~= "string" then
      raisef("%s: text_pair must be a string when text is one, got %s", op, type(pair))
    end
    inputs = {pair and {text, pair} or text}
  elseif type(text) == "table" and getmetatable(text) == nil then
    inputs = text
    if pair ~= nil then
      if type(pair) ~= "table" or getmetatable(pair) ~= nil then
        raisef("%s: text_pair must be a list of strings when text is a list, got %s", op, type(pair))
      end
      if #pair ~= #text then
        raisef("%s: text has %d texts and text_pair %d: they must pair up", op, #text, #pair)
      end
      inputs = {}
      for i = 1, #text do inputs[i] = {text[i], pair[i]} end
    end
  else
    raisef("%s: text must be a string or a list of strings (or of pairs {text, text_pair}), got %s", op, type(text))
  end
  if o.return_tensors ~= nil and o.return_tensors ~= "pt" then
    raisef("%s: return_tensors must be \"pt\" (ember's tensors) or nil, got %s", op, tostring(o.return_tensors))
  end
  local p = plan(self, o, op)
  local all, all_types = encode_all(self, inputs, p, op, "text")
  local ids, mask, types
  if p.padding_side then
    ids, mask, types = pad_rows(all, all_types, p, op)
  else
    for i = 2, #all do
      if #all[i] ~= #all[1] then
        raisef("%s: text[1] has %d ids and text[%d] %d: a [B, L] tensor needs padding = true "
               .. "(or truncation with max_length)", op, #all[1], i, #all[i])
      end
    end
    local len = #all > 0 and #all[1] or 0
    local ones = {}
    for i, r in ipairs(all) do
      ones[i] = {}
      for k = 1, #r do ones[i][k] = 1 end
    end
    ids, mask, types = int64(all, len), int64(ones, len), int64(all_types, len)
  end
  local out = {input_ids = ids}
  if o.return_token_type_ids ~= false then out.token_type_ids = types end
  if o.return_attention_mask ~= false then out.attention_mask = mask end
  return out
end

-- the ids of decode's argument as a Lua list (ember's, 1-based)
local function id_list(ids, op)
  if ember.is_tensor(ids) then
    if ids:dim() > 1 then raisef("%s: ids must be 1-D (one sequence), got shape %s", op, errors.shape_str(ids)) end
    if ember.is_floating_point(ids) or ids.dtype == "bool" then
      raisef("%s: ids must be an integer tensor, got dtype %s", op, ids.dtype)
    end
    return ids:reshape(-1):tolist()
  elseif type(ids) == "table" then
    return ids
  end
  raisef("%s: ids must be a tensor or a list of integers, got %s", op, type(ids))
end

--- tok:decode(ids [, skip_special_tokens] [, {skip_special_tokens = false}]) -> string
function Tokenizer:decode(ids, ...)
  check_self(self, "Tokenizer:decode")
  local op = "Tokenizer:decode"
  local o = args.options(op, {"skip_special_tokens"}, ...)
  local list = id_list(ids, op)
  local skip = o.skip_special_tokens == true
  local tokens = {}
  for i, id in ipairs(list) do
    if math.type(id) ~= "integer" then
      if math.type(id) == "float" and id == math.floor(id) then id = math.tointeger(id) else
        raisef("%s: ids[%d] must be an integer, got %s", op, i, tostring(id))
      end
    end
    local tok = self._id_to_token[id - 1]
    if tok == nil then
      raisef("%s: ids[%d] = %d is not a token id (ids are 1-based: 1 to %d)", op, i, id, self._max_id + 1)
    end
    if not (skip and self._special[id - 1]) then tokens[#tokens + 1] = tok end
  end
  if self._decoder then return table.concat(self._decoder(tokens)) end
  return table.concat(tokens, " ")
end

--- tok:pre_tokenize_str(text) -> the list of pieces the pre-tokenizer makes of text (as
-- tokenizers' tok.pre_tokenizer.pre_tokenize_str, without the offsets); byte-level pieces are
-- in the byte-to-unicode alphabet of the vocabulary
function Tokenizer:pre_tokenize_str(text)
  check_self(self, "Tokenizer:pre_tokenize_str")
  if type(text) ~= "string" then raisef("Tokenizer:pre_tokenize_str: text must be a string, got %s", type(text)) end
  return ember._tokenizer_pretokenize(ember._tokenizer_utf8_lossy(text), self._steps)
end

--- tok:normalize_str(text) -> text through the normalizer (tokenizers' tok.normalizer.normalize_str)
function Tokenizer:normalize_str(text)
  check_self(self, "Tokenizer:normalize_str")
  if type(text) ~= "string" then raisef("Tokenizer:normalize_str: text must be a string, got %s", type(text)) end
  text = ember._tokenizer_utf8_lossy(text)
  return self._normalizer and self._normalizer(text) or text
end

--- tok:token_to_id(token) -> the 1-based id, or nil when the token is unknown
function Tokenizer:token_to_id(token)
  check_self(self, "Tokenizer:token_to_id")
  if type(token) ~= "string" then raisef("Tokenizer:token_to_id: token must be a string, got %s", type(token)) end
  local id = self._token_to_id[token]
  return id and id + 1
end

--- tok:id_to_token(id) -> the token string of a 1-based id, or nil when no token has it
function Tokenizer:id_to_token(id)
  check_self(self, "Tokenizer:id_to_token")
  if math.type(id) ~= "integer" then raisef("Tokenizer:id_to_token: id must be an integer, got %s", tostring(id)) end
  return self._id_to_token[id - 1]
end

--- tok:get_vocab_size() -> the number of tokens, added tokens included (tok.vocab_size)
function Tokenizer:get_vocab_size()
  check_self(self, "Tokenizer:get_vocab_size")
  return self.vocab_size
end

function Tokenizer:__tostring()
  return string.format("ember.hf.Tokenizer(%s, vocab_size=%d)", self.path, self.vocab_size)
end

M.Tokenizer = Tokenizer
return M
