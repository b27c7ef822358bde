-- hf_tok_fixtures.lua — what the tokenizer specs share: the committed tokenizers of
-- tests/lua/fixtures/hf_tok/, each loaded once, and the fixtures' 0-based ids as ember's.
local h = require "helpers"
local T = require "ember.hf.tokenizer"

local M = {}

local toks = {}
--- tok(name) -> the tokenizer of tests/lua/fixtures/hf_tok/<name>, loaded on first use
function M.tok(name)
  if not toks[name] then toks[name] = T.load(h.FIXTURES .. "hf_tok/" .. name) end
  return toks[name]
end

--- plus1(list) -> the fixture's ids (the file's, 0-based) as ember's 1-based ones
function M.plus1(list)
  local out = {}
  for i, v in ipairs(list) do out[i] = v + 1 end
  return out
end

return M
