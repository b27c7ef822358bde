-- hostile_torch.lua — torch.save archives built byte by byte, good and damaged, for
-- torchfile_spec (ember.load of PyTorch files) and the fuzzer. Nothing here is
-- committed as a file: the zip container, the pickle and the storages are all
-- written by the functions below. Cases are {name =, bytes =, want =}, as in
-- hostile.lua: the load must fail with an error naming the file and holding
-- `want` (plain text).
local M = {}

-- ---- zip ---------------------------------------------------------------------------

local CRC = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do c = (c & 1) ~= 0 and (0xEDB88320 ~ (c >> 1)) or (c >> 1) end
  CRC[i] = c
end
function M.crc32(s)
  local c = 0xFFFFFFFF
  for i = 1, #s do c = CRC[(c ~ s:byte(i)) & 0xFF] ~ (c >> 8) end
  return c ~ 0xFFFFFFFF
end

-- Raw deflate data of s as stored blocks (valid deflate, no compression).
function M.deflate_stored(s)
  local out, i = {}, 1
  repeat
    local piece = s:sub(i, i + 65534)
    i = i + #piece
    local final = i > #s and 1 or 0
    out[#out + 1] = string.pack("<BI2I2", final, #piece, (~#piece) & 0xFFFF) .. piece
  until i > #s
  return table.concat(out)
end

-- A zip archive of members {name =, data =, [deflate = true], and overrides of what
-- the central directory says: crc, csize, usize, method, flags, local_offset,
-- local_name; body: the bytes stored, instead of data's}. opts: zip64 (the zip64 end records, as torch.save writes them),
-- count (the member count claimed), cd_offset, comment, eocd_comment_len.
function M.zip(members, opts)
  opts = opts or {}
  local parts, central, offset = {}, {}, 0
  for _, m in ipairs(members) do
    local body = m.body or (m.deflate and M.deflate_stored(m.data) or m.data)
    local crc = m.crc or M.crc32(m.data)
    local method = m.method or (m.deflate and 8 or 0)
    local lname = m.local_name or m.name
    local lh = string.pack("<I4I2I2I2I2I2I4I4I4I2I2", 0x04034b50, 20, m.flags or 0, method, 0, 0, crc, #body,
                           #m.data, #lname, 0) .. lname
    central[#central + 1] = string.pack("<I4I2I2I2I2I2I2I4I4I4I2I2I2I2I2I4I4", 0x02014b50, 20, 20, m.flags or 0,
                                        method, 0, 0, crc, m.csize or #body, m.usize or #m.data, #m.name, 0, 0, 0,
                                        0, 0, m.local_offset or offset) .. m.name
    parts[#parts + 1] = lh .. body
    offset = offset + #lh + #body
  end
  local cd = table.concat(central)
  local count = opts.count or #members
  local cd_offset = opts.cd_offset or offset
  local tail = ""
  if opts.zip64 then
    local r = string.pack("<I4I8I2I2I4I4I8I8I8I8", 0x06064b50, 44, 45, 45, 0, 0, count, count, #cd, cd_offset)
    local loc = string.pack("<I4I4I8I4", 0x07064b50, 0, offset + #cd, 1)
    tail = r .. loc
  end
  local comment = opts.comment or ""
  local eocd = string.pack("<I4I2I2I2I2I4I4I2", 0x06054b50, 0, 0, opts.zip64 and 0xFFFF or count,
                           opts.zip64 and 0xFFFF or count, opts.zip64 and 0xFFFFFFFF or #cd,
                           opts.zip64 and 0xFFFFFFFF or cd_offset, opts.eocd_comment_len or #comment) .. comment
  return table.concat(parts) .. cd .. tail .. eocd
end

-- ---- pickle ------------------------------------------------------------------------

local P = {}
M.P = P
function P.str(s) return "X" .. string.pack("<I4", #s) .. s end
function P.int(i)
  if i >= 0 and i < 256 then return "K" .. string.char(i) end
  if i >= -2 ^ 31 and i < 2 ^ 31 then return "J" .. string.pack("<i4", i) end
  return "\x8a\x08" .. string.pack("<i8", i)
end
function P.global(module, name) return "c" .. module .. "\n" .. name .. "\n" end
function P.tuple(...) return "(" .. table.concat({...}) .. "t" end
-- _rebuild_tensor_v2(storage(key, class, numel), offset, size, stride, requires_grad, OrderedDict())
function P.tensor(key, class, numel, offset, size, stride, requires_grad)
  local sz, st = {}, {}
  for i, s in ipairs(size) do sz[i] = P.int(s) end
  for i, s in ipairs(stride) do st[i] = P.int(s) end
  local storage = P.tuple(P.str("storage"), P.global("torch", class), P.str(key), P.str("cpu"), P.int(numel)) .. "Q"
  return P.global("torch._utils", "_rebuild_tensor_v2")
      .. P.tuple(storage, P.int(offset), P.tuple(table.unpack(sz)), P.tuple(table.unpack(st)),
                 requires_grad and "\x88" or "\x89", P.global("collections", "OrderedDict") .. ")R")
      .. "R"
end
-- {k = v, ...} as an OrderedDict (pairs of pickled key and value, in order)
function P.odict(pairs_)
  local items = {}
  for _, kv in ipairs(pairs_) do items[#items + 1] = kv[1] .. kv[2] end
  return P.global("collections", "OrderedDict") .. ")R(" .. table.concat(items) .. "u"
end
function P.file(body) return "\x80\x02" .. body .. "." end

-- A torch.save archive: "archive/data.pkl" holding pickle, "archive/data/<key>" each
-- storage, "archive/byteorder". opts: byteorder (default "little"), zip (the opts of M.zip),
-- extra (more members), edit(members) (changes the member list before it is written).
function M.torch_file(pickle, storages, opts)
  opts = opts or {}
  local members = {{name = "archive/data.pkl", data = pickle}}
  if opts.byteorder ~= false then
    members[#members + 1] = {name = "archive/byteorder", data = opts.byteorder or "little"}
  end
  local keys = {}
  for k in pairs(storages or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do members[#members + 1] = {name = "archive/data/" .. k, data = storages[k]} end
  for _, m in ipairs(opts.extra or {}) do members[#members + 1] = m end
  if opts.edit then opts.edit(members) end
  local z = opts.zip or {}
  if z.zip64 == nil then z.zip64 = true end
  return M.zip(members, z)
end

-- The good file the cases below damage: {w = float32 [2, 3] 1..6, v = w[2] (a view),
-- n = int64 [2] {-7, 9}}.
M.GOOD_PICKLE = P.file(P.odict({
  {P.str("w"), P.tensor("0", "FloatStorage", 6, 0, {2, 3}, {3, 1}, false)},
  {P.str("v"), P.tensor("0", "FloatStorage", 6, 3, {3}, {1}, false)},
  {P.str("n"), P.tensor("1", "LongStorage", 2, 0, {2}, {1}, false)},
}))
M.GOOD_STORAGES = {["0"] = string.pack("<ffffff", 1, 2, 3, 4, 5, 6), ["1"] = string.pack("<i8i8", -7, 9)}
function M.good() return M.torch_file(M.GOOD_PICKLE, M.GOOD_STORAGES) end

-- ---- the cases ---------------------------------------------------------------------

-- The container: the zip itself.
function M.zip_cases()
  local cases = {}
  local function add(name, bytes, want) cases[#cases + 1] = {name = name, bytes = bytes, want = want} end
  local good = M.good()
  local no_eocd = "no end of central directory record"
  for _, k in ipairs({4, 30, 100, #good // 2, #good - 23, #good - 22, #good - 1}) do
    add("cut at byte " .. k, good:sub(1, k), "")
  end
  add("only the local header signature", "PK\3\4", no_eocd)
  add("empty archive", M.zip({}), "a zip archive without data.pkl")
  add("EOCD comment length past the end", M.zip({{name = "a/data.pkl", data = P.file("N")}}, {eocd_comment_len = 5}),
      no_eocd)
  add("central directory past the end", M.zip({{name = "a/data.pkl", data = P.file("N")}}, {cd_offset = 1 << 30}),
      "the central directory lies outside the file")
  add("more members claimed than the directory holds",
      M.zip({{name = "a/data.pkl", data = P.file("N")}}, {count = 1000}), "more members claimed")
  add("fewer members claimed", M.zip({{name = "a/data.pkl", data = P.file("N")}, {name = "a/x", data = "y"}},
      {count = 1}), "the central directory holds more than the members it counts")
  add("zip64 fields without the zip64 records", (function()
    local z = M.zip({{name = "a/data.pkl", data = P.file("N")}})
    return z:sub(1, -11) .. string.pack("<I4I4I2", 0xFFFFFFFF, 0xFFFFFFFF, 0)
  end)(), "the zip64 locator is missing")
  add("local header offset into the directory", M.torch_file(P.file("N"), nil, {edit = function(ms)
    ms[1].local_offset = 200
  end}), "")
  add("local header offset past everything", M.torch_file(P.file("N"), nil, {edit = function(ms)
    ms[1].local_offset = 0xFFFFFF00
  end}), "the data lies outside the file")
  add("local header names another member", M.torch_file(P.file("N"), nil, {edit = function(ms)
    ms[1].local_name = "archive/data.pkX"
  end}), "the local header names another member")
  add("stored member with two sizes", M.torch_file(P.file("N"), nil, {edit = function(ms)
    ms[1].usize = 1000
  end}), "a stored member's two sizes differ")
  add("member size past the directory", M.torch_file(P.file("N"), nil, {edit = function(ms)
    ms[1].csize, ms[1].usize = 100000, 100000
  end}), "the data lies outside the file")
  add("deflate bomb claim", M.torch_file(P.file("N"), nil, {edit = function(ms)
    ms[1].deflate, ms[1].usize = true, 0xFFFFFFFE
  end}), "claims more than deflate can hold")
  add("data.pkl past the size limit", M.zip({{name = "a/data.pkl", data = string.rep("N", 100000), deflate = true,
                                               usize = 100000001, crc = 0}}),
      "data.pkl is 100000001 bytes, more than the 100000000-byte limit")
  add("bzip2 member", M.torch_file(P.file("N"), nil, {edit = function(ms) ms[1].method = 12 end}),
      "compression method 12")
  add("encrypted member", M.torch_file(P.file("N"), nil, {edit = function(ms) ms[1].flags = 1 end}),
      "encrypted members are not supported")
  add("two members of one name", M.torch_file(P.file("N"), nil, {extra = {{name = "archive/byteorder", data = "big"}}}),
      "two members are named archive/byteorder")
  add("a NUL in a name", M.torch_file(P.file("N"), nil, {extra = {{name = "archive/a\0b", data = ""}}}),
      "a member name holds a NUL byte")
  add("CRC mismatch", M.torch_file(P.file("N"), nil, {edit = function(ms) ms[1].crc = 12345 end}),
      "CRC-32 mismatch (corrupt data) in archive/data.pkl")
  add("deflate data cut short", M.torch_file(P.file("N"), nil, {edit = function(ms)
    ms[1].deflate = true
    ms[1].csize = 4
  end}), "the deflate data ends early")
  add("deflate inflating to more than declared", M.torch_file(P.file("N"), nil, {edit = function(ms)
    ms[1].deflate, ms[1].usize, ms[1].crc = true, 2, 0
  end}), "inflates to more than its declared size")
  add("deflate inflating to less than declared", M.torch_file(P.file("N"), nil, {edit = function(ms)
    ms[1].deflate, ms[1].usize, ms[1].crc = true, 9, 0
  end}), "inflates to less than its declared size")
  add("corrupt deflate data", M.torch_file(P.file("N"), nil, {edit = function(ms)
    ms[1].method, ms[1].body = 8, "\7\0\0\0"    -- block type 3: reserved
  end}), "corrupt deflate data")
  add("no local header where the directory points", M.torch_file(P.file("N"), nil, {edit = function(ms)
    ms[2].local_offset = 5
  end}), "no local header where the directory points")
  add("no data.pkl", M.zip({{name = "archive/other", data = "x"}}), "a zip archive without data.pkl")
  add("two data.pkl", M.zip({{name = "a/data.pkl", data = P.file("N")}, {name = "b/data.pkl", data = P.file("N")}}),
      "two data.pkl in the archive")
  add("TorchScript", M.torch_file(P.file("N"), nil, {extra = {{name = "archive/constants.pkl", data = P.file("N")}}}),
      "a TorchScript archive")
  add("byteorder neither", M.torch_file(P.file("N"), nil, {byteorder = "middle"}), 'byteorder is "middle"')
  return cases
end

-- The pickle machine and the tensors it builds (each in an otherwise good archive).
function M.pickle_cases()
  local cases = {}
  local function add(name, pickle, want, storages)
    cases[#cases + 1] = {name = name, bytes = M.torch_file(pickle, storages or M.GOOD_STORAGES), want = want}
  end
  local t = P.tensor
  add("empty pickle", "", "truncated pickle (it ends without a STOP opcode)")
  add("no STOP", "\x80\x02N", "ends without a STOP opcode")
  add("STOP on an empty stack", "\x80\x02.", "pickle stack underflow")
  add("REDUCE on an empty stack", "\x80\x02R.", "pickle stack underflow")
  add("POP below a MARK", "\x80\x02N(a.", "pickle stack underflow")
  add("TUPLE without MARK", "\x80\x02Nt.", "no MARK before this opcode")
  add("memo read before written", "\x80\x02h\5.", "memo entry 5 is read before it is written")
  add("memo far out of range", "\x80\x02j\255\255\255\255.", "memo entry 4294967295 is read before it is written")
  add("BINPUT on an empty stack", "\x80\x02q\0.", "pickle stack underflow")
  add("string longer than the pickle", "\x80\x02X\255\255\255\127", "truncated pickle (2147483647 bytes needed")
  add("BININT cut", "\x80\x02J\1\2", "truncated pickle (4 bytes needed, 2 left)")
  add("BINFLOAT cut", "\x80\x02G\1", "truncated pickle (8 bytes needed, 1 left)")
  add("LONG1 cut", "\x80\x02\x8a\9\1", "truncated pickle (9 bytes needed, 1 left)")
  add("LONG1 beyond 64 bits", "\x80\x02\x8a\9\0\0\0\0\0\0\0\0\1.", "an integer wider than 64 bits (9 bytes)")
  add("LONG1 2^63", "\x80\x02\x8a\9\0\0\0\0\0\0\0\128\0.", "an integer wider than 64 bits (9 bytes)")
  add("invalid UTF-8", "\x80\x02" .. P.str("\255\254") .. ".", "a string that is not valid UTF-8")
  add("protocol 6", "\x80\6N.", "pickle protocol 6")
  add("GLOBAL without newline", "\x80\x02cos\nsystem", "a GLOBAL without its newline")
  add("os.system", P.file(P.global("os", "system") .. P.tuple(P.str("touch /tmp/ember-pwned")) .. "R"),
      'GLOBAL "os.system" is refused: module os is never allowed')
  add("posix.system", P.file(P.global("posix", "system") .. P.tuple(P.str("id")) .. "R"), 'GLOBAL "posix.system"')
  add("builtins.eval", P.file(P.global("builtins", "eval") .. P.tuple(P.str("1")) .. "R"),
      'GLOBAL "builtins.eval" is not allowed')
  add("__builtin__.eval (Python 2 name)", P.file(P.global("__builtin__", "eval") .. P.tuple(P.str("1")) .. "R"),
      'GLOBAL "builtins.eval" is not allowed')
  add("a custom class", P.file(P.global("__main__", "Foo") .. ")\x81"), 'GLOBAL "__main__.Foo" is not allowed')
  add("STACK_GLOBAL", "\x80\x04" .. P.str("os") .. P.str("system") .. "\x93.", "STACK_GLOBAL (0x93) is not allowed")
  add("INST", "\x80\x02(ios\nsystem\n.", "INST (0x69) is not allowed")
  add("FRAME", "\x80\x04\x95\1\0\0\0\0\0\0\0N.", "FRAME (0x95) is not allowed")
  add("unknown opcode", "\x80\x02\255.", "pickle opcode unknown (0xff)")
  add("REDUCE of a non-global", P.file(P.str("x") .. ")R"), "REDUCE calls string, not an allowed global")
  add("REDUCE with a list of arguments", P.file(P.global("collections", "OrderedDict") .. "]R"),
      "the arguments are list, not a tuple")
  add("calling a tensor class", P.file(P.global("torch", "FloatTensor") .. P.tuple(P.int(3)) .. "R"),
      "calling torch.FloatTensor is not supported")
  add("complex", P.file(P.global("builtins", "complex") .. P.tuple("G" .. string.pack(">d", 1), "G" .. string.pack(">d", 2)) .. "R"),
      "a complex number: ember has no complex type")
  add("BUILD on a list", P.file("]}b"), "BUILD on list")
  add("APPEND to a dict", P.file("}Na"), "APPEND to dict (only lists can be appended to)")
  add("SETITEM on a list", P.file("]NNs"), "SETITEM on list (only dicts)")
  add("SETITEMS with an odd count", P.file("}(NNNu"), "SETITEMS with an odd number (3)")
  add("dict key None", P.file("}NK\1s"), "a dict key None")
  add("dict key NaN", P.file("}G" .. string.pack(">d", 0 / 0) .. "K\1s"), "a dict key NaN")
  add("bytes of a bad codec", P.file(P.global("_codecs", "encode") .. P.tuple(P.str("x"), P.str("rot13")) .. "R"),
      'codec "rot13" is not supported')
  add("latin-1 bytes of U+263A", P.file(P.global("_codecs", "encode") .. P.tuple(P.str("\226\152\186"), P.str("latin1")) .. "R"),
      "character U+263A cannot be encoded as latin1")
  -- persistent ids and storages
  add("persistent id not a tuple", P.file(P.str("x") .. "Q"), "persistent id string is not a tuple")
  add("persistent id not a storage", P.file(P.tuple(P.str("module"), P.int(1)) .. "Q"),
      'only persistent ids of storages can be loaded, got "module"')
  add("storage record with 3 fields", P.file(P.tuple(P.str("storage"), P.int(1), P.int(2)) .. "Q"),
      "a storage record with 3 fields")
  add("storage class not a class", P.file(P.tuple(P.str("storage"), P.int(1), P.str("0"), P.str("cpu"), P.int(6)) .. "Q"),
      "a storage record names integer, not a storage class")
  add("storage of negative size", P.file(P.tuple(P.str("storage"), P.global("torch", "FloatStorage"), P.str("0"),
                                                 P.str("cpu"), P.int(-1)) .. "Q"), 'storage "0": size -1')
  add("storage missing", P.file(t("9", "FloatStorage", 6, 0, {6}, {1})),
      'storage "9": the archive has no member "archive/data/9"')
  add("storage larger than its member", P.file(t("0", "FloatStorage", 7, 0, {7}, {1})),
      'storage "0" holds 24 bytes, not the 7 x 4 bytes of its 7 float32 elements')
  add("storage used with two dtypes", P.file(P.tuple(t("0", "FloatStorage", 6, 0, {6}, {1}),
                                                     t("0", "IntStorage", 6, 0, {6}, {1}))),
      'storage "0" is used as float32 and as int32')
  add("view past the end", P.file(t("0", "FloatStorage", 6, 0, {2, 4}, {4, 1})),
      'a tensor of size [2, 4], stride [4, 1], offset 0 reaches element 8 of its storage "0", which holds 6')
  add("offset past the end", P.file(t("0", "FloatStorage", 6, 6, {1}, {1})), "offset 6 reaches element 7")
  add("huge offset", P.file(t("0", "FloatStorage", 6, math.maxinteger, {1}, {1})), "reaches element")
  add("stride overflow", P.file(t("0", "FloatStorage", 6, 0, {3, 2}, {math.maxinteger, 1})), "reaches element 2^63")
  add("element count overflow", P.file(t("0", "FloatStorage", 6, 0, {1 << 40, 1 << 40}, {0, 0})), "too many elements")
  add("negative size", P.file(t("0", "FloatStorage", 6, 0, {-1}, {1})), "entry 1 is -1, expected an integer >= 0")
  add("negative stride", P.file(t("0", "FloatStorage", 6, 5, {2}, {-1})), "entry 1 is -1, expected an integer >= 0")
  add("negative offset", P.file(t("0", "FloatStorage", 6, -1, {1}, {1})), "storage offset -1 is not an integer >= 0")
  add("17 dims", P.file(t("0", "FloatStorage", 6, 0, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                          {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})), "17 dimensions (ember has at most 16)")
  add("strides and sizes differ", P.file(t("0", "FloatStorage", 6, 0, {2, 3}, {1})), "1 strides for 2 sizes")
  add("size not a tuple", P.file(P.global("torch._utils", "_rebuild_tensor") ..
                                 P.tuple(P.tuple(P.str("storage"), P.global("torch", "FloatStorage"), P.str("0"),
                                                 P.str("cpu"), P.int(6)) .. "Q", P.int(0), P.int(6), P.tuple(P.int(1)))
                                 .. "R"), "a tensor's size: expected a tuple of integers, got integer")
  add("rebuild with 2 arguments", P.file(P.global("torch._utils", "_rebuild_tensor_v2") .. P.tuple("N", "N") .. "R"),
      "_rebuild_tensor_v2: 2 arguments, expected 6 or 7")
  add("rebuild of a non-storage", P.file(P.global("torch._utils", "_rebuild_tensor") .. P.tuple("N", P.int(0), ")", ")") .. "R"),
      "a tensor: expected a storage, got None")
  add("complex storage", P.file(t("0", "ComplexFloatStorage", 24, 0, {3}, {1})),
      "has dtype torch.complex64, which ember does not have")
  add("quantized storage", P.file(t("0", "QInt8Storage", 24, 0, {24}, {1})), "has dtype torch.qint8")
  add("requires_grad on int64", P.file(t("1", "LongStorage", 2, 0, {2}, {1}, true)),
      "requires_grad on a tensor of dtype int64 (only floating-point tensors can)")
  add("quantized tensor", P.file(P.global("torch._utils", "_rebuild_qtensor") .. ")R"), "a quantized tensor")
  add("sparse tensor", P.file(P.global("torch._utils", "_rebuild_sparse_tensor") .. ")R"), "a sparse tensor")
  add("meta tensor", P.file(P.global("torch._utils", "_rebuild_meta_tensor_no_storage") .. ")R"), "a meta tensor")
  -- what a small pickle may not make cost: copies charged against its length
  local copies = {"\x80\x02]q\0(" .. string.rep("K\1", 20000) .. "e]"}
  for _ = 1, 400 do copies[#copies + 1] = P.global("builtins", "set") .. "(h\0tRa" end
  add("many copies of a big list", table.concat(copies) .. ".", "copies more data than its size allows")
  return cases
end

return M
