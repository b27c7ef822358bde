-- Docs of ember.hf.tokenizer (lua/ember/hf/tokenizer.lua): the tokenizers library's
-- tokenizer.json read offline, and the Tokenizer it returns. Format: ember/help.lua.
-- The examples write a small WordPiece tokenizer.json of their own.
local SETUP = [=[
local dir = os.tmpname(); os.remove(dir); os.execute("mkdir -p " .. dir)
local f = io.open(dir .. "/tokenizer.json", "w")
f:write([[{"version": "1.0", "added_tokens": [
  {"id": 0, "content": "[UNK]", "special": true, "normalized": false},
  {"id": 1, "content": "[CLS]", "special": true, "normalized": false},
  {"id": 2, "content": "[SEP]", "special": true, "normalized": false}],
 "normalizer": {"type": "BertNormalizer", "lowercase": true},
 "pre_tokenizer": {"type": "BertPreTokenizer"},
 "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]},
 "decoder": {"type": "WordPiece", "prefix": "##"},
 "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
           "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "hello": 3, "world": 4, "!": 5,
                     "##s": 6, "##!": 7}}}]])
f:close()
local tok = ember.hf.tokenizer(dir)
]=]

local IDS = [=[
Ids are 1-based: a token id is a position, the row of nn.Embedding it selects, and ember's
positions count from 1 (README, "Porting from PyTorch"), so every id ember gives or takes
is the file's id + 1. The tokenizers library's id k is ember's k + 1, the row PyTorch
calls k.]=]

return {
  {
    name = "ember.hf.tokenizer",
    sig = "ember.hf.tokenizer(dir) -> tokenizer",
    doc = [=[
Reads dir/tokenizer.json (or dir itself when it names a .json file), the file of the
Hugging Face tokenizers library (what AutoTokenizer's fast tokenizers save), without
Python or the network. Supported: byte-level BPE as GPT-2, RoBERTa, Llama-3 and Qwen2 use
it, BPE over characters with byte fallback as Llama-2's, and WordPiece as BERT's, with
their parts:
  model          BPE (vocab, merges as "a b" or [a, b], byte_fallback, ignore_merges,
                 unk_token, fuse_unk, continuing_subword_prefix, end_of_word_suffix;
                 dropout null) and WordPiece (unk_token, "##", max_input_chars_per_word)
  added_tokens   matched before the rest, leftmost-longest, with lstrip, rstrip,
                 single_word and normalized; special ones dropped by skip_special_tokens
  normalizer     BertNormalizer, NFC, NFD, Lowercase, StripAccents, Prepend, Replace
                 (a string pattern), Strip, Sequence
  pre_tokenizer  ByteLevel (add_prefix_space, use_regex), Split with the GPT-2, Llama-3
                 or Qwen2 pattern (recognised by its exact text: these are matched by
                 hand, not by a regex engine), BertPreTokenizer, WhitespaceSplit,
                 Metaspace (Llama-2's older files), Sequence
  post_processor TemplateProcessing (single), RobertaProcessing, BertProcessing,
                 ByteLevel, Sequence
  decoder        ByteLevel, WordPiece, ByteFallback, Fuse, Strip, Replace, Metaspace,
                 Sequence
Anything else (a Unigram or WordLevel model, another Split pattern, NFKC, ...) is an error
naming it, as are a missing or malformed file and merges naming tokens not in the
vocabulary. Character classes, NFD/NFC and lowercase come from tables of Unicode 14.0
(Python's unicodedata; the library's Rust crates may know newer characters).
Text that is not valid UTF-8 is read with each bad sequence as U+FFFD (Python's
errors="replace"). The pair forms of the post-processors (two sequences) are not provided.
]=] .. IDS,
    example = SETUP .. [=[
print(tok)                           -- ember.hf.Tokenizer(.../tokenizer.json, vocab_size=8)
print(tok:encode("Hello World!"))    -- [CLS] hello world ! [SEP]: 2, 4, 5, 6, 3]=],
  },
  {
    name = "ember.hf.Tokenizer:encode",
    sig = "tok:encode(text, [add_special_tokens]) -> int64 tensor   (or {add_special_tokens = true})",
    doc = [=[
The ids of text as a 1-D int64 tensor, as tokenizers' tok.encode(text).ids and
transformers' tokenizer.encode(text), plus 1 each: added tokens, normalizer,
pre-tokenizer, model, then the post-processor's special tokens (bos, [CLS] ... [SEP])
unless add_special_tokens is false. Ember never truncates.
]=] .. IDS,
    example = SETUP .. [=[
print(tok:encode("hello world"))                               -- 2, 4, 5, 3
print(tok:encode("hello world", {add_special_tokens = false})) -- 4, 5]=],
  },
  {
    name = "ember.hf.Tokenizer:decode",
    sig = "tok:decode(ids, [skip_special_tokens]) -> string   (or {skip_special_tokens = false})",
    doc = [=[
The text of ids (a 1-D integer tensor or a Lua list of ember's 1-based ids) through the
tokenizer's decoder, as tokenizers' tok.decode. skip_special_tokens (default false, as
transformers' decode; the tokenizers library's own default is true) leaves out the special
added tokens. An id that names no token is an error (the library skips it).]=],
    example = SETUP .. [=[
local ids = tok:encode("Hello world!")
print(tok:decode(ids))                                  -- [CLS] hello world! [SEP]
print(tok:decode(ids, {skip_special_tokens = true}))    -- hello world!]=],
  },
  {
    name = "ember.hf.Tokenizer:encode_batch",
    sig = "tok:encode_batch(texts, [{add_special_tokens, padding, pad_id, padding_side, max_length}])\n"
       .. "  -> list of tensors | ids [B, L], attention_mask [B, L]",
    doc = [=[
Encodes each string of the list texts. Without padding: a list of 1-D int64 tensors.
With padding = true (or "longest"): one int64 tensor [B, L] of the ids, padded with pad_id
(the tokenizer.json's padding.pad_id + 1 when it sets one, else required) on the right, or
on the left with padding_side = "left", and the attention mask [B, L] (1 for a token, 0
for padding); padding = "max_length" pads to max_length (a text longer than that is an
error: ember does not truncate).]=],
    example = SETUP .. [=[
local ids, mask = tok:encode_batch({"hello", "hello world!"}, {padding = true, pad_id = 1})
print(ids)
print(mask)]=],
  },
  {
    name = "ember.hf.Tokenizer:token_to_id",
    sig = "tok:token_to_id(token) -> id or nil",
    doc = "The 1-based id of a token string (the vocabulary's or an added token's); nil when none.",
    example = SETUP .. [=[
print(tok:token_to_id("hello"))   -- 4 (3 in the file)]=],
  },
  {
    name = "ember.hf.Tokenizer:id_to_token",
    sig = "tok:id_to_token(id) -> token or nil",
    doc = "The token string of a 1-based id; nil when no token has it.",
    example = SETUP .. [=[
print(tok:id_to_token(4))   -- hello]=],
  },
  {
    name = "ember.hf.Tokenizer:get_vocab_size",
    sig = "tok:get_vocab_size() -> integer   (also tok.vocab_size)",
    doc = [=[
The number of tokens, added tokens included (tokenizers' get_vocab_size()): the ids run
from 1 to it when the file's ids have no gaps, so it is the row count of the model's
embedding.]=],
    example = SETUP .. [=[
print(tok.vocab_size, tok:get_vocab_size())   -- 8   8]=],
  },
  {
    name = "ember.hf.Tokenizer:pre_tokenize_str",
    sig = "tok:pre_tokenize_str(text) -> list of strings",
    doc = [=[
The pieces the pre-tokenizer alone makes of text, as tokenizers'
tok.pre_tokenizer.pre_tokenize_str(text) without the offsets (byte-level pieces are in
the vocabulary's byte-to-unicode alphabet: a space is "Ġ").]=],
    example = SETUP .. [=[
print(table.concat(tok:pre_tokenize_str("Hello, world!"), " | "))   -- Hello | , | world | !]=],
  },
  {
    name = "ember.hf.Tokenizer:normalize_str",
    sig = "tok:normalize_str(text) -> string",
    doc = "text through the tokenizer's normalizer (tokenizers' tok.normalizer.normalize_str).",
    example = SETUP .. [=[
print(tok:normalize_str("Héllo Wörld"))   -- hello world]=],
  },
}
