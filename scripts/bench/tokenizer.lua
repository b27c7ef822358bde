-- scripts/bench/tokenizer.lua — ember.hf.tokenizer's speed beside the tokenizers library's
-- (scripts/bench/tokenizer_hf.py, run in the same invocation when scripts/bench/torch-python
-- has it): encode and decode of one text, best of 3, for each tokenizer folder given.
-- Usage: ember scripts/bench/tokenizer.lua [TEXT [DIR...]]
--   TEXT  default data/shakespeare/shakespeare.txt (scripts/install-deps.sh --data)
--   DIR   default the fixtures' gpt2, llama3 and bert tokenizers (tests/lua/fixtures/hf_tok/)
-- prints per tokenizer: tok_<name>_encode_ms, tok_<name>_decode_ms, the library's figures
-- and the ratio ember / tokenizers (and the load time and the number of ids)
local ember = require "ember"
local T = require "ember.hf.tokenizer"

local here = arg[0]:match("^(.*/)") or "./"
local best = dofile(here .. "timing.lua").best
local root = here .. "../../"
local text_path = arg[1] or root .. "data/shakespeare/shakespeare.txt"
local dirs = {}
for i = 2, #arg do dirs[#dirs + 1] = arg[i] end
if #dirs == 0 then
  for _, n in ipairs({"gpt2", "llama3", "bert"}) do dirs[#dirs + 1] = root .. "tests/lua/fixtures/hf_tok/" .. n end
end

local f = assert(io.open(text_path, "rb"), "no text " .. text_path .. " (scripts/install-deps.sh --data fetches it)")
local text = f:read("a")
f:close()
print(string.format("text %s: %d bytes", text_path, #text))

-- the library's figures, one line "name encode_ms decode_ms n_ids" per folder
local theirs = {}
local py = here .. "torch-python"
local cmd = string.format("%s %s %q %s 2>/dev/null", py, here .. "tokenizer_hf.py", text_path,
                          table.concat((function() local q = {} for i, d in ipairs(dirs) do q[i] = string.format("%q", d) end return q end)(), " "))
local p = io.popen(cmd)
if p then
  for line in p:lines() do
    local name, e, d, n = line:match("^(%S+) (%S+) (%S+) (%d+)$")
    if name then theirs[name] = {encode = tonumber(e), decode = tonumber(d), n = tonumber(n)} end
  end
  p:close()
end

for _, dir in ipairs(dirs) do
  local name = dir:gsub("/+$", ""):match("([^/]+)$")
  local t0 = ember.wall_time()
  local tok = T.load(dir)
  local load_ms = (ember.wall_time() - t0) * 1e3
  local ids
  local enc = best(3, function() ids = tok:encode(text, {add_special_tokens = false}) end)
  local dec = best(3, function() tok:decode(ids) end)
  local n = ids:numel()
  print(string.format("tok_%s_load_ms %.4g ms", name, load_ms))
  print(string.format("tok_%s_encode_ms %.4g ms  (%d ids, %.3g MB/s)", name, enc * 1e3, n, #text / enc / 1e6))
  print(string.format("tok_%s_decode_ms %.4g ms", name, dec * 1e3))
  local h = theirs[name]
  if h then
    print(string.format("tok_%s_encode_ms_tokenizers %.4g ms  (%d ids; ember/tokenizers %.2f)", name, h.encode, h.n,
                        enc * 1e3 / h.encode))
    print(string.format("tok_%s_decode_ms_tokenizers %.4g ms  (ember/tokenizers %.2f)", name, h.decode,
                        dec * 1e3 / h.decode))
  else
    print(string.format("tok_%s: no tokenizers figures (scripts/bench/torch-python lacks the tokenizers library)", name))
  end
end
