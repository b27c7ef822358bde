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
  post_processor TemplateProcessing (single and pair, with their type ids),
                 RobertaProcessing, BertProcessing, ByteLevel, Sequence (ByteLevel and
                 at most one of the others)
  decoder        ByteLevel, WordPiece, ByteFallback, Fuse, Strip, Replace, Metaspace,
                 Sequence
Anything else (a Unigram or WordLevel model, another Split pattern, NFKC, ...) is an error
naming it, as are a missing or malformed file and merges naming tokens not in the
vocabulary. Character classes, NFD/NFC and lowercase come from tables of Unicode 14.0
(Python's unicodedata; the library's Rust crates may know newer characters).
Text that is not valid UTF-8 is read with each bad sequence as U+FFFD (Python's
errors="replace"). The file's truncation setting is not applied (transformers replaces it
on each call): calls truncate when asked. tok(...) is transformers' tokenizer(...).
]=] .. IDS,
    example = SETUP .. [=[
print(tok)                           -- ember.hf.Tokenizer(.../tokenizer.json, vocab_size=8)
print(tok:encode("Hello World!"))    -- [CLS] hello world ! [SEP]: 2, 4, 5, 6, 3]=],
  },
  {
    name = "ember.hf.Tokenizer:encode",
    sig = "tok:encode(text, [text_pair], [add_special_tokens], [{truncation =, max_length =,\n"
       .. "  truncation_side =, return_type_ids =}]) -> int64 tensor [, type ids]",
    doc = [=[
The ids of text (or of the pair text, text_pair) as a 1-D int64 tensor, as tokenizers'
tok.encode(text, pair).ids and transformers' tokenizer.encode(text, pair), plus 1 each:
added tokens, normalizer, pre-tokenizer, model, truncation, then the post-processor's
special tokens (bos, [CLS] A [SEP] B [SEP], RoBERTa's <s> A </s></s> B </s>, the
template's pair) unless add_special_tokens is false. With return_type_ids = true the
type ids follow as a second tensor: 1 for the first text, 2 for the second (tokenizers'
0 and 1 plus 1, the rows of BERT's token_type_embeddings; RoBERTa's are all 1).
Truncation is tokenizers': truncation = true (or "longest_first") with max_length cuts
the longer text first, then both to about half; "only_first" and "only_second" cut one
text, an error when it cannot lose enough (tokenizers keeps at least one id of it) or
when there is no second text. The special tokens count: max_length is the final length,
an error when it is less than they are (tokenizers leaves the text whole there).
truncation_side "left" keeps the end. max_length alone truncates (transformers' rule).
There is no stride (overflowing tokens are not returned).
]=] .. IDS,
    example = SETUP .. [=[
print(tok:encode("hello world"))                               -- 2, 4, 5, 3
print(tok:encode("hello world", {add_special_tokens = false})) -- 4, 5
local ids, types = tok:encode("hello world", "hello", {return_type_ids = true})
print(ids)     -- [CLS] hello world [SEP] hello [SEP]: 2, 4, 5, 3, 4, 3
print(types)   -- 1, 1, 1, 1, 2, 2
print(tok:encode("hello world hello", {truncation = true, max_length = 4}))   -- 2, 4, 5, 3]=],
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
    sig = "tok:encode_batch(inputs, [{add_special_tokens, padding, pad_id, padding_side,\n"
       .. "  max_length, truncation, truncation_side, pad_to_multiple_of, return_type_ids}])\n"
       .. "  -> list of tensors | ids [B, L], attention_mask [B, L]   [, type ids]",
    doc = [=[
Encodes each input: a string, or a pair {text, text_pair}; truncation and its options as
tok:encode's. Without padding: a list of 1-D int64 tensors. With padding = true (or
"longest"): one int64 tensor [B, L] of the ids, padded with pad_id (the tokenizer.json's
padding.pad_id + 1 when it sets one, else required) on the right, or on the left with
padding_side = "left", and the attention mask [B, L] (1 for a token, 0 for padding);
padding = "max_length" pads to max_length (a text longer than that is an error unless
truncation is asked); pad_to_multiple_of rounds L up. return_type_ids = true adds the
type ids as a last value (a list, or [B, L] with padding's 1).]=],
    example = SETUP .. [=[
local ids, mask = tok:encode_batch({"hello", "hello world!"}, {padding = true, pad_id = 1})
print(ids)
print(mask)
local pairs = {{"hello", "world"}, {"hello world", "world world world"}}
ids, mask = tok:encode_batch(pairs, {padding = "max_length", max_length = 6, pad_id = 1,
                                     truncation = true})
print(ids)   -- the second pair cut to hello [SEP] world world: longest first]=],
  },
  {
    name = "ember.hf.Tokenizer.__call",
    sig = "tok(text, [text_pair], [{padding, truncation, max_length, add_special_tokens, pad_id,\n"
       .. "  padding_side, truncation_side, pad_to_multiple_of, return_tensors = \"pt\",\n"
       .. "  return_attention_mask, return_token_type_ids}])\n"
       .. "  -> {input_ids =, attention_mask =, token_type_ids =}",
    doc = [=[
transformers' tokenizer(text, text_pair, ..., return_tensors = "pt"): a table of int64
tensors [B, L], B = 1 for one string. text is a string or a list of strings (or of
pairs {text, text_pair}); text_pair a string or a list of as many. The options are
encode_batch's, with transformers' defaults: no padding (then the rows must come out the
same length), padding = true pads to the longest, "max_length" to max_length; truncation
= true, "longest_first", "only_first", "only_second"; max_length alone truncates.
token_type_ids are 1 and 2 (transformers' 0 and 1 plus 1: ember's BERT takes them as
they are, padding's are 1); the mask is 0 and 1. truncation_side is an option here (an
attribute of the tokenizer in transformers); return_attention_mask = false or
return_token_type_ids = false leave that key out. pad_id as encode_batch's (transformers
reads pad_token from tokenizer_config.json, which ember does not).]=],
    example = SETUP .. [=[
local enc = tok({"hello world", "hello"}, {"world!", "world"}, {padding = true, pad_id = 1})
print(enc.input_ids)        -- [CLS] hello world [SEP] world ! [SEP] / ... [SEP] padding
print(enc.token_type_ids)
print(enc.attention_mask)
print(tok("hello world").input_ids:size())   -- [1, 4]]=],
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
