-- hostile.lua — damaged and malicious files for the loaders' specs
-- (io_spec: ember.load, checkpoint_spec: ember.load_checkpoint, data_spec:
-- ember.read_idx and the Fashion-MNIST loader). Every file is generated
-- here, byte by byte; none is committed. Each case is {name =, bytes =,
-- want =}: the load must fail with an error naming the file and holding
-- `want` (plain text).
local M = {}

-- ---- safetensors ------------------------------------------------------------------

local function st(json, data)
  return string.pack("<I8", #json) .. json .. (data or "")
end
M.safetensors_file = st

local function entry(name, dtype, shape, b, e)
  return string.format('"%s": {"dtype": "%s", "shape": [%s], "data_offsets": [%s, %s]}', name, dtype, shape, b, e)
end

-- A valid file with two tensors and metadata, and the byte offsets where its
-- parts begin: the boundaries truncation cuts at.
function M.safetensors_good()
  local json = '{"__metadata__": {"format": "pt"}, ' .. entry("a", "F32", "2, 2", 0, 16) .. ", "
            .. entry("b", "I64", "1", 16, 24) .. "}"
  local data = string.pack("<ffff<i8", 1, 2, 3, 4, -7)
  local bytes = st(json, data)
  local cuts = {0, 1, 4, 7, 8, 9, 8 + #json // 2, 8 + #json - 1, 8 + #json, 8 + #json + 1, 8 + #json + 15,
                8 + #json + 16, #bytes - 1}
  return bytes, cuts
end

function M.safetensors_cases()
  local cases = {}
  local function add(name, bytes, want) cases[#cases + 1] = {name = name, bytes = bytes, want = want} end
  local good, cuts = M.safetensors_good()
  for _, k in ipairs(cuts) do
    add("cut at byte " .. k, good:sub(1, k), "truncated file")
  end
  add("zero-length file", "", "truncated file (0 bytes")
  -- the 8-byte length
  add("length 2^63", string.pack("<I8", 1 << 63) .. "{}", "larger than the 100000000-byte limit")
  add("length 2^64-1 (-1 as signed)", string.pack("<i8", -1) .. "{}", "larger than the 100000000-byte limit")
  add("length -8 as signed", string.pack("<i8", -8) .. "{}", "larger than the 100000000-byte limit")
  add("length past the end", string.pack("<I8", 4096) .. "{}", "truncated file (header says 4096 bytes, file has 2")
  add("length 0", string.pack("<I8", 0), "too short")
  add("length 1", string.pack("<I8", 1) .. "{", "too short")
  -- malformed JSON
  add("unclosed object", st('{"a": {"dtype": "F32"'), "not valid JSON")
  add("trailing comma", st('{"a": 1,}'), "not valid JSON")
  add("single quotes", st("{'a': 1}"), "not valid JSON")
  add("comment", st('{/* x */}'), "not valid JSON")
  add("NaN", st('{"a": NaN}'), "not valid JSON")
  add("bytes after the JSON", st('{} {}'), "unexpected bytes after the JSON header")
  add("deep nesting", st('{"a": ' .. string.rep("[", 100000) .. string.rep("]", 100000) .. "}"), "not valid JSON")
  add("deep objects", st(string.rep('{"a": ', 5000) .. "1" .. string.rep("}", 5000)), "not valid JSON")
  add("root is a list", st("[1, 2]"), "not a JSON object")
  add("root is a string", st('"x"'), "not a JSON object")
  add("root is a number", st("12345678"), "not a JSON object")
  add("raw NUL in a string", st('{"a": {"dtype": "F32\0", "shape": [1], "data_offsets": [0, 4]}}', "abcd"),
      "control byte 0x00")
  add("NUL padding", st('{}\0\0\0\0\0\0'), "control byte 0x00")
  add("invalid UTF-8", st('{"\xff": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}', "x"), "not valid UTF-8")
  -- strings holding NUL (cJSON would cut them short)
  add("dtype with \\u0000", st('{' .. entry("a", "F32\\u0000", "1", 0, 4) .. '}', "abcd"),
      'dtype "F32\\u0000" holds a NUL character')
  add("name with \\u0000", st('{' .. entry("a\\u0000b", "F32", "1", 0, 4) .. '}', "abcd"),
      'tensor name "a\\u0000b" holds a NUL character')
  add("metadata with \\u0000", st('{"__metadata__": {"k": "v\\u0000w"}}'), 'metadata value "v\\u0000w" holds a NUL')
  -- duplicate keys
  add("duplicate tensor", st('{' .. entry("a", "U8", "1", 0, 1) .. ", " .. entry("a", "U8", "1", 1, 2) .. '}', "xy"),
      'tensor "a" appears twice')
  add("duplicate field", st('{"a": {"dtype": "U8", "dtype": "F64", "shape": [1], "data_offsets": [0, 1]}}', "x"),
      'field "dtype" appears twice')
  add("duplicate metadata key", st('{"__metadata__": {"k": "1", "k": "2"}}'), 'metadata key "k" appears twice')
  add("duplicate __metadata__", st('{"__metadata__": {}, "__metadata__": {}}'), '"__metadata__" appears twice')
  -- wrong types
  add("entry is a number", st('{"a": 5}'), "expected an object")
  add("entry is a list", st('{"a": ["F32", [1], [0, 4]]}', "abcd"), "expected an object")
  add("dtype is a number", st('{"a": {"dtype": 32, "shape": [1], "data_offsets": [0, 4]}}', "abcd"),
      'non-string "dtype"')
  add("dtype missing", st('{"a": {"shape": [1], "data_offsets": [0, 4]}}', "abcd"), '"dtype"')
  add("shape is a string", st('{"a": {"dtype": "F32", "shape": "1", "data_offsets": [0, 4]}}', "abcd"),
      'non-list "shape"')
  add("shape of strings", st('{' .. entry("a", "F32", '"1"', 0, 4) .. '}', "abcd"), "not a non-negative integer")
  add("shape of floats", st('{' .. entry("a", "F32", "1.5", 0, 4) .. '}', "abcd"), "not a non-negative integer")
  add("offsets are strings", st('{' .. entry("a", "F32", "1", '"0"', '"4"') .. '}', "abcd"),
      "two non-negative integers")
  add("three offsets", st('{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}}', "abcd"),
      "two non-negative integers")
  add("unknown field", st('{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "x": 1}}', "abcd"),
      'unknown field "x"')
  add("metadata not an object", st('{"__metadata__": [1]}'), '"__metadata__" is not an object')
  add("metadata value a number", st('{"__metadata__": {"k": 1}}'), 'metadata "k" is not a string')
  -- dtypes and sizes
  add("unknown dtype", st('{' .. entry("a", "F8_E4M3", "1", 0, 1) .. '}', "x"), 'unsupported dtype "F8_E4M3"')
  add("dtype too small for the bytes", st('{' .. entry("a", "F32", "3", 0, 8) .. '}', "abcdefgh"),
      "F32 [3] needs 12 bytes but data_offsets [0, 8] hold 8")
  add("dtype too large for the bytes", st('{' .. entry("a", "F64", "2", 0, 8) .. '}', "abcdefgh"), "needs 16 bytes")
  add("negative dim", st('{' .. entry("a", "F32", "-1", 0, 4) .. '}', "abcd"), "negative dimension -1")
  add("minimum int64 dim", st('{' .. entry("a", "F32", "-9223372036854775808", 0, 4) .. '}', "abcd"),
      "negative dimension")
  add("dim 2^53+", st('{' .. entry("a", "U8", "9007199254740993", 0, 1) .. '}', "x"), "too large")
  add("dim 1e300", st('{' .. entry("a", "U8", "1e300", 0, 1) .. '}', "x"), "too large")
  add("17 dims", st('{' .. entry("a", "U8", string.rep("1, ", 16) .. "1", 0, 1) .. '}', "x"), "17 dimensions")
  -- products that overflow int64 (and uint64)
  add("numel overflows", st('{' .. entry("a", "F32", "4294967296, 4294967296", 0, 0) .. '}'), "too many elements")
  add("bytes overflow", st('{' .. entry("a", "F64", "3037000500, 3037000500", 0, 0) .. '}'), "too many elements")
  add("overflow before a zero", st('{' .. entry("a", "U8", "4294967296, 4294967296, 0", 0, 0) .. '}'),
      "too many elements")
  add("2^63 bytes of U8", st('{' .. entry("a", "U8", "4294967296, 2147483648", 0, 0) .. '}'), "needs 9223372036854775808 bytes")
  -- offsets
  add("end past the data", st('{' .. entry("a", "U8", "100", 0, 100) .. '}', "abc"),
      'truncated file: tensor "a" ends at byte 100 of the data section, which has 3')
  add("huge offsets", st('{' .. entry("a", "U8", "1", 9007199254740990, 9007199254740991) .. '}', "x"),
      "ends at byte 9007199254740991")
  add("offsets beyond 2^53", st('{' .. entry("a", "U8", "1", 0, "1e20") .. '}', "x"), "two non-negative integers")
  add("negative offset", st('{' .. entry("a", "U8", "1", -1, 0) .. '}', "x"), "two non-negative integers")
  add("end before begin", st('{' .. entry("a", "U8", "0", 4, 0) .. '}', "abcd"), "end before they begin")
  add("overlap", st('{' .. entry("a", "U8", "2", 0, 2) .. ", " .. entry("b", "U8", "2", 1, 3) .. '}', "abc"),
      "overlaps the previous tensor")
  add("same bytes twice", st('{' .. entry("a", "U8", "2", 0, 2) .. ", " .. entry("b", "U8", "2", 0, 2) .. '}', "ab"),
      "overlaps")
  add("hole", st('{' .. entry("a", "U8", "1", 0, 1) .. ", " .. entry("b", "U8", "1", 2, 3) .. '}', "abc"),
      "a hole in the data section: bytes 1 to 2")
  add("extra data", st('{' .. entry("a", "U8", "1", 0, 1) .. '}', "abc"),
      "the data section has 3 bytes but the tensors cover 1")
  return cases
end

-- ---- IDX ---------------------------------------------------------------------------

-- An IDX file: type code, dims, then raw data bytes.
function M.idx_file(code, dims, data)
  local parts = {string.char(0, 0, code, #dims)}
  for _, d in ipairs(dims) do parts[#parts + 1] = string.pack(">I4", d) end
  parts[#parts + 1] = data or ""
  return table.concat(parts)
end

-- A valid file: uint8 [3, 4, 5] with values i % 251.
function M.idx_good()
  local vals = {}
  for i = 1, 60 do vals[i] = string.char((i * 7) % 251) end
  return M.idx_file(0x08, {3, 4, 5}, table.concat(vals))
end

function M.idx_cases()
  local cases = {}
  local function add(name, bytes, want) cases[#cases + 1] = {name = name, bytes = bytes, want = want} end
  local good = M.idx_good()
  -- every header boundary: inside the magic, inside each size, at the data
  for k = 0, 3 do add("cut in the magic at " .. k, good:sub(1, k), "truncated header (" .. k .. " of 4 magic bytes)") end
  for k = 4, 15 do
    add("cut in the sizes at " .. k, good:sub(1, k), "truncated header (" .. (k - 4) .. " of 12 size bytes)")
  end
  add("cut at the data", good:sub(1, 16), "truncated (expected 60 data bytes, got 0)")
  add("cut in the data", good:sub(1, 45), "truncated (expected 60 data bytes, got 29)")
  add("one byte short", good:sub(1, -2), "truncated (expected 60 data bytes, got 59)")
  add("a byte too many", good .. "x", "unexpected bytes after the 60 data bytes")
  add("zero-length file", "", "truncated header (0 of 4 magic bytes)")
  add("bad magic", "\1\0\8\1" .. string.pack(">I4", 1) .. "x", "not an IDX file (magic starts 01 00")
  add("unknown type", M.idx_file(0x0A, {1}, "x"), "unknown IDX data type 0x0a")
  add("0 dims", "\0\0\8\0", "0 dimensions (expected 1..16)")
  add("255 dims", "\0\0\8\255" .. string.rep("\0\0\0\1", 255), "255 dimensions")
  add("negative size", M.idx_file(0x08, {2, 0xffffffff}), "size 4294967295 of dimension 2 is negative")
  add("size 2^31", M.idx_file(0x08, {0x80000000}), "negative as a signed 32-bit integer")
  add("product overflows int64", M.idx_file(0x0E, {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff}),
      "more than the 16 GiB limit")
  add("claim beyond the file", M.idx_file(0x08, {1000, 1000, 1000}, "abc"),
      "truncated (expected 1000000000 data bytes, got 3)")
  add("partial last value", M.idx_file(0x0C, {2}, "\0\0\0\1\0\0"), "truncated (expected 8 data bytes, got 6)")
  return cases
end

-- The gzip form of bytes, made by the gzip command (nil without one).
function M.gzip(bytes, dir)
  if os.execute("command -v gzip >/dev/null 2>&1") ~= true then return nil end
  local p = dir .. "/gzip-input"
  local f = assert(io.open(p, "wb"))
  f:write(bytes)
  f:close()
  local pipe = assert(io.popen("gzip -nc '" .. p .. "'"))
  local gz = pipe:read("a")
  pipe:close()
  os.remove(p)
  return gz
end

function M.idx_gzip_cases(dir)
  local good = M.idx_good()
  local gz = M.gzip(good, dir)
  if not gz then return nil end
  local cases = {}
  local function add(name, bytes, want) cases[#cases + 1] = {name = name, bytes = bytes, want = want} end
  -- every prefix of the compressed file (from 3 bytes on it is gzip)
  for k = 3, #gz - 1 do add("gzip cut at byte " .. k, gz:sub(1, k), "read_idx") end
  add("gzip without its trailer", gz:sub(1, -9), "truncated or corrupt gzip file")
  add("gzip trailer cut in half", gz:sub(1, -5), "truncated or corrupt gzip file")
  add("gzip with a wrong CRC", gz:sub(1, -9) .. string.char(gz:byte(-8) ~ 1) .. gz:sub(-7),
      "corrupt gzip data (incorrect data check)")
  add("gzip with a wrong length", gz:sub(1, -2) .. string.char(gz:byte(-1) ~ 0x40),
      "corrupt gzip data (incorrect length check)")
  add("gzip with junk after it", gz .. "junk", "unexpected bytes after the end of the gzip data")
  add("gzip with a stray byte after it", gz .. "\0", "unexpected bytes after the end of the gzip data")
  add("gzip of a file with a byte too many", M.gzip(good .. "x", dir), "unexpected bytes after the 60 data bytes")
  add("gzip of a truncated file", M.gzip(good:sub(1, 40), dir), "truncated (expected 60 data bytes, got 24)")
  add("bad deflate data", gz:sub(1, 10) .. string.rep("\255", 20), "corrupt gzip data")
  return cases, gz
end

-- Writes bytes to path.
function M.write(path, bytes)
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
end

-- Runs every case through load(path): each must fail with a message that
-- names the file and holds the case's text. Returns a list of problems.
function M.check_all(cases, dir, load, prefix)
  local problems = {}
  for i, c in ipairs(cases) do
    local p = string.format("%s/hostile-%d", dir, i)
    M.write(p, c.bytes)
    local ok, err = pcall(load, p)
    err = tostring(err)
    if ok then
      problems[#problems + 1] = c.name .. ": loaded without an error"
    elseif not err:find(prefix .. p, 1, true) or not err:find(c.want, 1, true) then
      problems[#problems + 1] = string.format("%s: expected '%s%s: ...%s...', got: %s", c.name, prefix, p, c.want, err)
    end
    os.remove(p)
  end
  return problems
end

return M
