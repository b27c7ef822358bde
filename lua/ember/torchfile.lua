-- ember.torchfile — PyTorch's torch.save files (.pt / .pth) for ember.load,
-- read as torch.load(path, weights_only=True) reads them.
--
-- The format (PyTorch >= 1.6): a zip archive "<name>/data.pkl" (a pickle,
-- protocol 2), "<name>/data/<key>" (each storage's raw bytes), "byteorder",
-- "version", ... A tensor is pickled as a call of
-- torch._utils._rebuild_tensor_v2(persistent_load(("storage", torch.FloatStorage,
-- key, location, numel)), offset, size, stride, requires_grad, hooks), so
-- tensors viewing one storage name the same key.
--
-- Why the pickle machine is Lua, over a C zip reader (engine/zipfile.c): a
-- pickle from a hostile file must never run code, crash, read out of bounds
-- or hang. Here every read is a bounds-checked string operation, every error
-- a Lua error, and the machine is one loop without recursion, so what is left
-- to verify is which opcodes and globals it accepts, all in this file. C
-- keeps what Lua cannot do well: the zip container, inflate, CRC-32, and the
-- raw storage bytes (read straight into tensors, never through Lua strings).
-- The pickle is small (about 100 bytes a tensor), so Lua's speed is no cost.
--
-- What is accepted is torch's weights_only unpickler
-- (torch/_weights_only_unpickler.py): its opcodes (protocol 2, no more) and
-- its allow-listed globals; everything else is refused naming the opcode or
-- the global, and nothing named in the file is ever called, only looked up
-- in the tables below. Values become:
--   tensor, Parameter        ember tensor (a view of its storage's tensor:
--                            tensors that share a storage share memory;
--                            requires_grad kept); a dtype ember lacks, a
--                            quantized, sparse or meta tensor is an error
--   dict, OrderedDict,       table; pairs() walks the keys in the saved order
--   Counter                  (a metatable with __pairs); the state_dict's
--                            _metadata attribute is dropped
--   list, tuple, torch.Size  sequence (1-based positions)
--   set                      table item -> true
--   None                     nil (a dict entry of None is absent; a list
--                            holding None has a hole)
--   int, float, bool, str    integer, float, boolean, string
--   bytes, bytearray         string
--   torch.dtype, device      string ("float32", "cuda:0")
-- Python ints beyond 64 bits and complex numbers are errors.
--
-- A hostile pickle costs at most work and memory in proportion to its size:
-- every opcode reads at least one byte, the only copies (set(), Counter(),
-- torch.Size(), bytes()) are charged against a budget of a few times the
-- pickle's length, and each storage is read once, with a size the zip reader
-- has checked against the file.
local ember = require "ember"
local errors = require "ember.errors"

local M = {}

local byte, sub, find, unpack, format = string.byte, string.sub, string.find, string.unpack, string.format

-- ---- ordered dicts -------------------------------------------------------------------

-- The saved key order of each loaded dict (weak: it goes with the table).
local ORDER = setmetatable({}, {__mode = "k"})

-- pairs(d): the saved keys in their order, then any key added since (in next's order).
local function ordered_pairs(d)
  local keys, i, done, tail = ORDER[d] or {}, 0, {}, nil
  return function()
    while tail == nil do
      i = i + 1
      local k = keys[i]
      if k == nil then tail = false break end
      local v = rawget(d, k)
      if v ~= nil and not done[k] then
        done[k] = true
        return k, v
      end
    end
    local k, v = tail or nil, nil
    repeat
      k, v = next(d, k)
    until k == nil or not done[k]
    tail = k
    return k, v
  end, d, nil
end

local DICT_MT = {__pairs = ordered_pairs}

-- ---- what the file may name ----------------------------------------------------------

-- torch's storage classes and the dtype of their elements
local STORAGE_DTYPES = {
  FloatStorage = "float32", DoubleStorage = "float64", HalfStorage = "float16", BFloat16Storage = "bfloat16",
  LongStorage = "int64", IntStorage = "int32", ShortStorage = "int16", CharStorage = "int8", ByteStorage = "uint8",
  BoolStorage = "bool", ComplexFloatStorage = "complex64", ComplexDoubleStorage = "complex128",
  QInt8Storage = "qint8", QUInt8Storage = "quint8", QInt32Storage = "qint32", QUInt4x2Storage = "quint4x2",
  QUInt2x4Storage = "quint2x4",
}
local TENSOR_CLASSES = {"Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool"}
-- torch's dtypes (str(dtype) minus "torch."); those ember has map to themselves
local TORCH_DTYPES = {
  "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool", "complex32",
  "complex64", "complex128", "bcomplex32", "qint8", "quint8", "qint32", "quint4x2", "quint2x4", "bits1x8",
  "bits2x4", "bits4x2", "bits8", "bits16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
  "float8_e8m0fnu", "float4_e2m1fn_x2", "uint16", "uint32", "uint64",
}
for b = 1, 7 do
  TORCH_DTYPES[#TORCH_DTYPES + 1] = "uint" .. b
  TORCH_DTYPES[#TORCH_DTYPES + 1] = "int" .. b
end
local DTYPE_SIZE = {float32 = 4, float64 = 8, float16 = 2, bfloat16 = 2, int64 = 8, int32 = 4, int16 = 2, int8 = 1,
                    uint8 = 1, bool = 1}
local EMBER_DTYPES = {}
for d in pairs(DTYPE_SIZE) do EMBER_DTYPES[d] = true end

-- Every global the weights_only unpickler allows, by "module.name": {what = ...}.
local GLOBALS = {}
local function allow(name, what, extra)
  local g = extra or {}
  g.name, g.what = name, what
  GLOBALS[name] = g
end
allow("collections.OrderedDict", "dict")
allow("collections.Counter", "dict")
allow("builtins.set", "set")
allow("builtins.bytearray", "bytearray")
allow("builtins.complex", "complex")
allow("_codecs.encode", "encode")
allow("torch.nn.parameter.Parameter", "parameter")
allow("torch.serialization._get_layout", "layout")
allow("torch.Size", "size")
allow("torch.Tensor", "tensor_class")
allow("torch.device", "device")
for _, d in ipairs(TORCH_DTYPES) do allow("torch." .. d, "dtype", {dtype = d}) end
for _, c in ipairs(TENSOR_CLASSES) do
  for _, m in ipairs({"torch.", "torch.cuda."}) do allow(m .. c .. "Tensor", "tensor_class") end
  if c ~= "Bool" then
    for _, m in ipairs({"torch.sparse.", "torch.cuda.sparse."}) do allow(m .. c .. "Tensor", "tensor_class") end
  end
end
for cls, d in pairs(STORAGE_DTYPES) do
  allow("torch." .. cls, "storage_class", {dtype = d})
  if not cls:find("^Q") then allow("torch.cuda." .. cls, "storage_class", {dtype = d}) end
end
allow("torch.storage.UntypedStorage", "storage_class", {dtype = "uint8", untyped = true})
allow("torch.storage.TypedStorage", "storage_class", {typed = true})
for _, q in ipairs({"per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric",
                    "per_channel_affine_float_qparams"}) do
  allow("torch." .. q, "qscheme")
end
for _, f in ipairs({"_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_parameter",
                    "_rebuild_parameter_with_state", "_rebuild_qtensor", "_rebuild_sparse_tensor",
                    "_rebuild_meta_tensor_no_storage", "_rebuild_wrapper_subclass",
                    "_rebuild_device_tensor_from_numpy", "_rebuild_device_tensor_from_cpu_tensor"}) do
  allow("torch._utils." .. f, "rebuild", {fn = f})
end
allow("torch._tensor._rebuild_from_type_v2", "rebuild", {fn = "_rebuild_from_type_v2"})
local IS_GLOBAL = {}
for _, g in pairs(GLOBALS) do IS_GLOBAL[g] = true end

-- Python 2 names, as pickle's fix_imports (torch._utils.IMPORT_MAPPING / NAME_MAPPING)
local IMPORT_MAPPING = {__builtin__ = "builtins", copy_reg = "copyreg", Queue = "queue", ["repr"] = "reprlib",
                        _abcoll = "collections.abc", UserDict = "collections", UserList = "collections",
                        UserString = "collections", whichdb = "dbm", StringIO = "io", cStringIO = "io"}
local NAME_MAPPING = {["__builtin__.xrange"] = "builtins.range", ["__builtin__.reduce"] = "functools.reduce",
                      ["__builtin__.intern"] = "sys.intern", ["__builtin__.unichr"] = "builtins.chr",
                      ["__builtin__.unicode"] = "builtins.str", ["__builtin__.long"] = "builtins.int",
                      ["__builtin__.basestring"] = "builtins.str"}
local BLOCKED_MODULES = {sys = true, os = true, posix = true, nt = true}

-- The opcodes of pickle's protocols 0-5 (for naming a refused one).
local OPNAMES = {
  [0x28] = "MARK", [0x2e] = "STOP", [0x30] = "POP", [0x31] = "POP_MARK", [0x32] = "DUP", [0x46] = "FLOAT",
  [0x49] = "INT", [0x4a] = "BININT", [0x4b] = "BININT1", [0x4c] = "LONG", [0x4d] = "BININT2", [0x4e] = "NONE",
  [0x50] = "PERSID", [0x51] = "BINPERSID", [0x52] = "REDUCE", [0x53] = "STRING", [0x54] = "BINSTRING",
  [0x55] = "SHORT_BINSTRING", [0x56] = "UNICODE", [0x58] = "BINUNICODE", [0x61] = "APPEND", [0x62] = "BUILD",
  [0x63] = "GLOBAL", [0x64] = "DICT", [0x7d] = "EMPTY_DICT", [0x65] = "APPENDS", [0x67] = "GET",
  [0x68] = "BINGET", [0x69] = "INST", [0x6a] = "LONG_BINGET", [0x6c] = "LIST", [0x5d] = "EMPTY_LIST",
  [0x6f] = "OBJ", [0x70] = "PUT", [0x71] = "BINPUT", [0x72] = "LONG_BINPUT", [0x73] = "SETITEM",
  [0x74] = "TUPLE", [0x29] = "EMPTY_TUPLE", [0x75] = "SETITEMS", [0x47] = "BINFLOAT", [0x80] = "PROTO",
  [0x81] = "NEWOBJ", [0x82] = "EXT1", [0x83] = "EXT2", [0x84] = "EXT4", [0x85] = "TUPLE1", [0x86] = "TUPLE2",
  [0x87] = "TUPLE3", [0x88] = "NEWTRUE", [0x89] = "NEWFALSE", [0x8a] = "LONG1", [0x8b] = "LONG4",
  [0x42] = "BINBYTES", [0x43] = "SHORT_BINBYTES", [0x8c] = "SHORT_BINUNICODE", [0x8d] = "BINUNICODE8",
  [0x8e] = "BINBYTES8", [0x8f] = "EMPTY_SET", [0x90] = "ADDITEMS", [0x91] = "FROZENSET", [0x92] = "NEWOBJ_EX",
  [0x93] = "STACK_GLOBAL", [0x94] = "MEMOIZE", [0x95] = "FRAME", [0x96] = "BYTEARRAY8",
  [0x97] = "NEXT_BUFFER", [0x98] = "READONLY_BUFFER",
}

-- ---- the loader ----------------------------------------------------------------------

-- A value of the file shown in a message: short, printable.
local function show(v)
  if type(v) == "string" then
    local s = format("%q", #v > 60 and sub(v, 1, 60) .. "..." or v)
    return (s:gsub("\\\n", "\\n"))
  end
  return tostring(v)
end

local NONE = setmetatable({}, {__name = "None", __tostring = function() return "None" end})

-- What a value becomes where the user sees it (in a container, or the result):
-- None is nil, a dtype its name, another global its "module.name".
local function user_value(v)
  if v == NONE then return nil end
  if IS_GLOBAL[v] then return v.what == "dtype" and v.dtype or v.name end
  return v
end


-- One load: the archive, its storages, and the pickle machine's state.
local Loader = {}
Loader.__index = Loader

function Loader:fail(fmt, ...)
  errors.raise(format("load: %s: ", self.path) .. format(fmt, ...))
end

-- Runs a C function of the binding; its error (already "load: <path>: ..."
-- where it comes from the zip reader) is raised at the user's line.
function Loader:call(what, f, ...)
  local ok, r = pcall(f, ...)
  if ok then return r end
  r = tostring(r)
  if r:find("load: " .. self.path .. ": ", 1, true) == 1 then errors.raise(r) end
  self:fail("%s: %s", what, r)
end

function Loader:charge(n)
  self.budget = self.budget - n
  if self.budget < 0 then
    self:fail("data.pkl copies more data than its size allows (a decompression bomb?)")
  end
end

-- kinds of the containers the machine made: "list", "tuple", "dict", "set"
function Loader:kind(v)
  if v == NONE or v == nil then return "None" end
  if ember.is_tensor(v) then return "tensor" end
  if IS_GLOBAL[v] then return "global " .. v.name end
  return self.kinds[v] or math.type(v) or type(v)
end

local function is_int(v) return math.type(v) == "integer" end

-- A tuple of n integers (sizes or strides): a list of them.
function Loader:int_tuple(v, what, lo)
  local k = self.kinds[v]
  if k ~= "tuple" and k ~= "list" then self:fail("%s: expected a tuple of integers, got %s", what, self:kind(v)) end
  local n = self.lengths[v]
  if n > 16 then self:fail("%s: %d dimensions (ember has at most 16)", what, n) end
  for i = 1, n do
    local x = v[i]
    if not is_int(x) or x < lo then self:fail("%s: entry %d is %s, expected an integer >= %d", what, i, show(x), lo) end
  end
  return v, n
end

-- The storage tensor of a persistent id, read once, as dtype.
function Loader:storage(pid, dtype, what)
  local key = pid.key
  local cached = self.storages[key]
  if cached then
    if cached.dtype ~= dtype then
      self:fail("%s: storage %s is used as %s and as %s", what, show(key), cached.dtype, dtype)
    end
    return cached.tensor, cached.numel
  end
  local name = self.prefix .. "data/" .. key
  local i = self.index[name]
  if not i then self:fail("%s: storage %s: the archive has no member %s", what, show(key), show(name)) end
  local nbytes = self.sizes[i]
  local esz = DTYPE_SIZE[dtype]
  local numel
  if pid.untyped then
    if nbytes ~= pid.numel then
      self:fail("%s: storage %s holds %d bytes, its record says %d", what, show(key), nbytes, pid.numel)
    end
    if nbytes % esz ~= 0 then
      self:fail("%s: storage %s holds %d bytes, not a whole number of %s elements", what, show(key), nbytes, dtype)
    end
    numel = nbytes // esz
  else
    numel = pid.numel
    if nbytes // esz ~= numel or nbytes % esz ~= 0 then
      self:fail("%s: storage %s holds %d bytes, not the %d x %d bytes of its %d %s elements", what, show(key),
                nbytes, numel, esz, numel, dtype)
    end
  end
  local t = self:call(what, self.zip.tensor, self.zip, i, dtype, numel, self.big_endian)
  if self.device then t = self:call(what, t.to, t, self.device) end
  self.storages[key] = {tensor = t, dtype = dtype, numel = numel}
  return t, numel
end

-- torch._utils._rebuild_tensor{,_v2,_v3}: a view of a storage.
function Loader:rebuild_tensor(storage, offset, size, stride, requires_grad, dtype)
  local what = "a tensor"
  if self.kinds[storage] ~= "storage" then self:fail("%s: expected a storage, got %s", what, self:kind(storage)) end
  local sz, n = self:int_tuple(size, "a tensor's size", 0)
  what = format("a tensor of size [%s]", table.concat(sz, ", ", 1, n))
  local st, ns = self:int_tuple(stride, what .. ": its stride", 0)
  if ns ~= n then self:fail("%s: %d strides for %d sizes", what, ns, n) end
  if not is_int(offset) or offset < 0 then self:fail("%s: storage offset %s is not an integer >= 0", what, show(offset)) end
  if requires_grad ~= nil and type(requires_grad) ~= "boolean" then
    self:fail("%s: requires_grad is %s, not a boolean", what, self:kind(requires_grad))
  end
  dtype = dtype or storage.dtype
  if dtype == nil then self:fail("%s: its storage has no dtype (a TypedStorage record)", what) end
  if not EMBER_DTYPES[dtype] then
    self:fail("%s has dtype torch.%s, which ember does not have (it has float32, float64, float16, bfloat16, "
              .. "int64, int32, int16, int8, uint8, bool)", what, dtype)
  end
  if storage.untyped == false and dtype ~= storage.dtype then
    self:fail("%s: dtype %s on a %s storage", what, dtype, storage.dtype)
  end
  local base, numel = self:storage(storage, dtype, what)
  -- the view must lie inside the storage: checked here for the message (the
  -- engine checks again); no sum or product may wrap around
  local elements, last = 1, offset
  for i = 1, n do
    if sz[i] == 0 then elements = 0 end
  end
  for i = 1, n do
    if elements > 0 and sz[i] > 1 then
      if st[i] > 0 and (sz[i] - 1) > (math.maxinteger - last) // st[i] then last = math.maxinteger break end
      last = last + (sz[i] - 1) * st[i]
    end
    if elements > 0 and sz[i] > math.maxinteger // elements then self:fail("%s: too many elements", what) end
    elements = elements * sz[i]
  end
  if elements > 0 and last >= numel then
    self:fail("%s, stride [%s], offset %d reaches element %s of its storage %s, which holds %d", what,
              table.concat(st, ", ", 1, n), offset, last == math.maxinteger and "2^63" or tostring(last + 1),
              show(storage.key), numel)
  end
  local t = self:call(what, ember._as_strided, base, {table.unpack(sz, 1, n)}, {table.unpack(st, 1, n)}, offset)
  if requires_grad then self:set_requires_grad(t, what) end
  return t
end

function Loader:set_requires_grad(t, what)
  if t.dtype ~= "float32" and t.dtype ~= "float64" and t.dtype ~= "float16" and t.dtype ~= "bfloat16" then
    self:fail("%s: requires_grad on a tensor of dtype %s (only floating-point tensors can)", what, t.dtype)
  end
  t:requires_grad_(true)
end

-- A Parameter: a new leaf sharing the tensor's memory.
function Loader:parameter(data, requires_grad, what)
  if not ember.is_tensor(data) then self:fail("%s: expected a tensor, got %s", what, self:kind(data)) end
  if requires_grad ~= nil and type(requires_grad) ~= "boolean" then
    self:fail("%s: requires_grad is %s, not a boolean", what, self:kind(requires_grad))
  end
  local p = data:detach()
  if requires_grad ~= false then self:set_requires_grad(p, what) end
  return p
end

local REFUSED_REBUILDS = {
  _rebuild_qtensor = "a quantized tensor: ember has no quantized dtypes",
  _rebuild_sparse_tensor = "a sparse tensor: ember has no sparse layouts (save t.to_dense() instead)",
  _rebuild_meta_tensor_no_storage = "a meta tensor (it has no values to load)",
  _rebuild_wrapper_subclass = "a tensor subclass (DTensor, FakeTensor, ...): ember reads plain tensors",
  _rebuild_device_tensor_from_numpy = "a tensor saved through NumPy (not allowed without numpy globals)",
}

-- A copy of a sequence (charged to the budget).
function Loader:copy_seq(v, what)
  local k = self.kinds[v]
  if k ~= "list" and k ~= "tuple" then self:fail("%s: expected a list or tuple, got %s", what, self:kind(v)) end
  local n = self.lengths[v]
  self:charge(n)
  return table.move(v, 1, n, 1, {}), n
end

-- bytes of a str under a codec: latin-1 (what protocol 2 writes bytes with) and UTF-8
function Loader:encode(s, codec, what)
  if type(s) ~= "string" then self:fail("%s: expected a string, got %s", what, self:kind(s)) end
  codec = type(codec) == "string" and codec:lower():gsub("_", "-") or codec
  self:charge(#s)
  if codec == "utf-8" or codec == "utf8" then return s end
  if codec == "latin1" or codec == "latin-1" or codec == "iso-8859-1" or codec == "ascii" then
    local out, limit = {}, codec == "ascii" and 127 or 255
    for _, c in utf8.codes(s, true) do
      if c > limit then self:fail("%s: character U+%04X cannot be encoded as %s", what, c, codec) end
      out[#out + 1] = string.char(c)
    end
    return table.concat(out)
  end
  self:fail("%s: codec %s is not supported (latin-1, utf-8, ascii)", what, show(codec))
end

function Loader:new_dict()
  local d = setmetatable({}, DICT_MT)
  ORDER[d] = {}
  self.kinds[d] = "dict"
  return d
end

function Loader:dict_set(d, k, v, what)
  if k == NONE or k == nil then self:fail("%s: a dict key None (Lua tables cannot hold it)", what) end
  if k ~= k then self:fail("%s: a dict key NaN (Lua tables cannot hold it)", what) end
  if self.kinds[d] == "set" then
    rawset(d, k, true)
    return
  end
  k, v = user_value(k), user_value(v)
  if v ~= nil and rawget(d, k) == nil then
    local order = ORDER[d]
    order[#order + 1] = k
  end
  rawset(d, k, v)
end

-- A list or tuple of the n items. A tuple may also be the arguments of a call
-- (REDUCE) or a storage record, which need the globals themselves: those are
-- kept in self.raw[tuple].
function Loader:new_seq(kind, items, n)
  local raw
  for i = 1, n do
    local v = items[i]
    if IS_GLOBAL[v] and not raw then raw = table.move(items, 1, n, 1, {}) end
    items[i] = user_value(v)
    if raw and raw[i] == NONE then raw[i] = nil end
  end
  self.kinds[items] = kind
  self.lengths[items] = n    -- # is unreliable once a None left a hole
  if raw then self.raw[items] = raw end
  return items
end

-- REDUCE / NEWOBJ: what calling an allowed global with args gives.
function Loader:apply(g, args, newobj)
  local what = format("%s(...)", g.name)
  local ak = self.kinds[args]
  if ak ~= "tuple" then self:fail("%s: the arguments are %s, not a tuple", what, self:kind(args)) end
  local nargs = self.lengths[args]
  args = self.raw[args] or args
  local w = g.what
  if w == "dict" then
    local d = self:new_dict()
    if nargs > 0 then
      local src = args[1]
      local sk = self.kinds[src]
      if sk == "dict" then
        for k, v in ordered_pairs(src) do self:charge(1) self:dict_set(d, k, v, what) end
      elseif sk == "list" or sk == "tuple" then
        for i = 1, self.lengths[src] do
          self:charge(1)
          local pair = src[i]
          if self.kinds[pair] ~= "tuple" and self.kinds[pair] ~= "list" then
            self:fail("%s: item %d is %s, not a (key, value) pair", what, i, self:kind(pair))
          end
          self:dict_set(d, pair[1], pair[2], what)
        end
      else
        self:fail("%s: expected a dict or a list of pairs, got %s", what, self:kind(src))
      end
    end
    return d
  elseif w == "set" then
    local s = {}
    self.kinds[s] = "set"
    if nargs > 0 then
      local items, n = self:copy_seq(args[1], what)
      for i = 1, n do self:dict_set(s, items[i], true, what) end
    end
    return s
  elseif w == "bytearray" then
    if nargs == 0 then return "" end
    if nargs == 1 and type(args[1]) == "string" then
      self:charge(#args[1])
      return args[1]
    end
    return self:encode(args[1], args[2], what)
  elseif w == "encode" then
    return self:encode(args[1], args[2] or "utf-8", what)
  elseif w == "size" then
    if nargs == 0 then return self:new_seq("tuple", {}, 0) end
    local items, n = self:copy_seq(args[1], what)
    return self:new_seq("tuple", items, n)
  elseif w == "device" then
    local kind, index = args[1], args[2]
    if type(kind) ~= "string" then self:fail("%s: expected a device name, got %s", what, self:kind(kind)) end
    if index ~= nil and not is_int(index) then self:fail("%s: device index %s", what, show(index)) end
    return index and format("%s:%d", kind, index) or kind
  elseif w == "layout" then
    if type(args[1]) ~= "string" then self:fail("%s: expected a layout name", what) end
    return args[1]
  elseif w == "parameter" then
    return self:parameter(args[1], args[2], "torch.nn.Parameter")
  elseif w == "complex" then
    self:fail("a complex number: ember has no complex type")
  elseif w == "rebuild" and not newobj then
    return self:rebuild(g.fn, args, nargs)
  end
  self:fail("%s %s is not supported (torch allows it, but ember has nothing it could make)",
            newobj and "creating a" or "calling", g.name)
end

function Loader:rebuild(fn, a, n)
  local what = "torch._utils." .. fn
  if REFUSED_REBUILDS[fn] then self:fail("%s", REFUSED_REBUILDS[fn]) end
  if fn == "_rebuild_tensor" then
    if n ~= 4 then self:fail("%s: %d arguments, expected 4", what, n) end
    return self:rebuild_tensor(a[1], a[2], a[3], a[4], false)
  elseif fn == "_rebuild_tensor_v2" then
    if n < 6 or n > 7 then self:fail("%s: %d arguments, expected 6 or 7", what, n) end
    return self:rebuild_tensor(a[1], a[2], a[3], a[4], a[5])
  elseif fn == "_rebuild_tensor_v3" then
    if n < 7 or n > 8 then self:fail("%s: %d arguments, expected 7 or 8", what, n) end
    local d = a[7]
    if not (IS_GLOBAL[d] and d.what == "dtype") then self:fail("%s: expected a dtype, got %s", what, self:kind(d)) end
    return self:rebuild_tensor(a[1], a[2], a[3], a[4], a[5], d.dtype)
  elseif fn == "_rebuild_parameter" or fn == "_rebuild_parameter_with_state" then
    if n ~= (fn == "_rebuild_parameter" and 3 or 4) then self:fail("%s: %d arguments", what, n) end
    return self:parameter(a[1], a[2], what)
  elseif fn == "_rebuild_device_tensor_from_cpu_tensor" then
    if n ~= 4 then self:fail("%s: %d arguments, expected 4", what, n) end
    local data, d = a[1], a[2]
    if not ember.is_tensor(data) then self:fail("%s: expected a tensor, got %s", what, self:kind(data)) end
    if not (IS_GLOBAL[d] and d.what == "dtype") then self:fail("%s: expected a dtype, got %s", what, self:kind(d)) end
    if not EMBER_DTYPES[d.dtype] then self:fail("%s: dtype torch.%s, which ember does not have", what, d.dtype) end
    local t = self:call(what, data.to, data, d.dtype)
    if t == data then t = data:detach() end
    if a[4] then self:set_requires_grad(t, what) end
    return t
  elseif fn == "_rebuild_from_type_v2" then
    -- (func, new_type, args, state): a tensor subclass or a tensor with
    -- attributes; func makes the tensor, the attributes (state) are dropped
    if n ~= 4 then self:fail("%s: %d arguments, expected 4", what, n) end
    local f, cls, args = a[1], a[2], a[3]
    if not (IS_GLOBAL[f] and f.what == "rebuild") then self:fail("%s: expected a rebuild function, got %s", what, self:kind(f)) end
    if not (IS_GLOBAL[cls] and (cls.what == "tensor_class" or cls.what == "parameter")) then
      self:fail("%s: expected a tensor class, got %s", what, self:kind(cls))
    end
    return self:apply(f, args, false)
  end
  self:fail("%s is not supported", what)
end

-- The persistent id of a storage: ("storage", storage class, key, location, numel).
function Loader:persistent(pid)
  if self.kinds[pid] ~= "tuple" then
    self:fail("data.pkl: persistent id %s is not a tuple (only storages can be loaded)", self:kind(pid))
  end
  if pid[1] ~= "storage" then
    self:fail("data.pkl: only persistent ids of storages can be loaded, got %s", show(pid[1]))
  end
  local n = self.lengths[pid]
  pid = self.raw[pid] or pid
  local cls, key, numel = pid[2], pid[3], pid[5]
  if n ~= 5 then self:fail("data.pkl: a storage record with %d fields (expected 5)", n) end
  if not (IS_GLOBAL[cls] and cls.what == "storage_class") then
    self:fail("data.pkl: a storage record names %s, not a storage class", self:kind(cls))
  end
  if type(key) ~= "string" then self:fail("data.pkl: a storage key is %s, not a string", self:kind(key)) end
  if not is_int(numel) or numel < 0 then self:fail("data.pkl: storage %s: size %s", show(key), show(numel)) end
  local s = {key = key, numel = numel, dtype = cls.dtype, untyped = cls.untyped or false}
  self.kinds[s] = "storage"
  return s
end

-- ---- the pickle machine --------------------------------------------------------------

function Loader:unpickle(data)
  local pos, len = 1, #data
  local stack, sp = {}, 0
  local marks, nmarks = {}, 0
  local memo = {}
  local kinds, lengths = self.kinds, self.lengths
  local start

  local function fail(fmt, ...)
    self:fail("data.pkl: " .. fmt .. " (opcode at byte %d)", ...)
  end
  -- fail() with the opcode's position appended
  local function err(fmt, ...)
    local args = table.pack(...)
    args[args.n + 1] = start - 1
    fail(fmt, table.unpack(args, 1, args.n + 1))
  end
  local function need(n)
    if len - pos + 1 < n then err("truncated pickle (%d bytes needed, %d left)", n, len - pos + 1) end
  end
  local function floor() return nmarks > 0 and marks[nmarks] or 0 end
  local function pop()
    if sp <= floor() then err("pickle stack underflow") end
    local v = stack[sp]
    stack[sp] = nil
    sp = sp - 1
    return v
  end
  local function top()
    if sp <= floor() then err("pickle stack underflow") end
    return stack[sp]
  end
  local function push(v)
    sp = sp + 1
    stack[sp] = v
  end
  -- the items since the last MARK, removed from the stack, and their count
  local function pop_mark()
    if nmarks == 0 then err("no MARK before this opcode") end
    local m = marks[nmarks]
    nmarks = nmarks - 1
    local n = sp - m
    local items = table.move(stack, m + 1, sp, 1, {})
    for i = sp, m + 1, -1 do stack[i] = nil end
    sp = m
    return items, n
  end
  local function line()
    local e = find(data, "\n", pos, true)
    if not e then err("truncated pickle (a GLOBAL without its newline)") end
    local s = sub(data, pos, e - 1)
    pos = e + 1
    return s
  end
  -- the operand of the memo opcodes: 1 byte, or 4 (the LONG_ forms)
  local function memo_index(short)
    local i
    if short then
      need(1)
      i = byte(data, pos)
      pos = pos + 1
    else
      need(4)
      i = unpack("<I4", data, pos)
      pos = pos + 4
    end
    return i
  end
  -- the top of the stack, which opcode name needs to be of kind; refusal formats the error
  -- from name and the kind found
  local function target(name, kind, refusal)
    local v = top()
    if kinds[v] ~= kind then err(refusal, name, self:kind(v)) end
    return v
  end
  local function list_target(name) return target(name, "list", "%s to %s (only lists can be appended to)") end
  local function dict_target(name) return target(name, "dict", "%s on %s (only dicts)") end
  local function append(l, v)
    local n = lengths[l] + 1
    l[n] = user_value(v)
    lengths[l] = n
  end

  while true do
    if pos > len then
      start = pos
      err("truncated pickle (it ends without a STOP opcode)")
    end
    start = pos
    local op = byte(data, pos)
    pos = pos + 1
    if op == 0x80 then                                -- PROTO
      need(1)
      local p = byte(data, pos)
      pos = pos + 1
      if p > 5 then err("pickle protocol %d (at most 5 exists)", p) end
    elseif op == 0x2e then                            -- STOP
      return user_value(pop())
    elseif op == 0x63 then                            -- GLOBAL
      local module, name = line(), line()
      local full = module .. "." .. name
      if NAME_MAPPING[full] then
        full = NAME_MAPPING[full]
        module = full:match("^(.*)%.")
      elseif IMPORT_MAPPING[module] then
        module = IMPORT_MAPPING[module]
        full = module .. "." .. name
      end
      if BLOCKED_MODULES[module] then
        err("GLOBAL %s is refused: module %s is never allowed (ember never runs code from a file)", show(full),
            module)
      end
      local g = GLOBALS[full]
      if not g then
        err("GLOBAL %s is not allowed (torch.load with weights_only=True refuses it too; "
            .. "ember never runs code from a file)", show(full))
      end
      push(g)
    elseif op == 0x52 or op == 0x81 then               -- REDUCE, NEWOBJ
      local args = pop()
      local f = pop()
      local name = op == 0x52 and "REDUCE" or "NEWOBJ"
      if not IS_GLOBAL[f] then err("%s calls %s, not an allowed global", name, self:kind(f)) end
      push(self:apply(f, args, op == 0x81))
    elseif op == 0x62 then                            -- BUILD
      local state = pop()
      local inst = top()
      if kinds[inst] == "dict" and getmetatable(inst) == DICT_MT then
        -- an OrderedDict's __dict__ (a state_dict's _metadata): dropped
        if state ~= NONE and kinds[state] ~= "dict" then err("BUILD of a dict with %s", self:kind(state)) end
      else
        err("BUILD on %s (only an OrderedDict's attributes can be set)", self:kind(inst))
      end
    elseif op == 0x61 then                            -- APPEND
      local v = pop()
      append(list_target("APPEND"), v)
    elseif op == 0x65 then                            -- APPENDS
      local items, n = pop_mark()
      local l = list_target("APPENDS")
      for i = 1, n do append(l, items[i]) end
    elseif op == 0x73 then                            -- SETITEM
      local v = pop()
      local k = pop()
      self:dict_set(dict_target("SETITEM"), k, v, "SETITEM")
    elseif op == 0x75 then                            -- SETITEMS
      local items, n = pop_mark()
      if n % 2 ~= 0 then err("SETITEMS with an odd number (%d) of keys and values", n) end
      local d = dict_target("SETITEMS")
      for i = 1, n, 2 do self:dict_set(d, items[i], items[i + 1], "SETITEMS") end
    elseif op == 0x28 then                            -- MARK
      nmarks = nmarks + 1
      marks[nmarks] = sp
    elseif op == 0x74 then                            -- TUPLE
      local items, n = pop_mark()
      push(self:new_seq("tuple", items, n))
    elseif op == 0x85 or op == 0x86 or op == 0x87 then -- TUPLE1..3
      local n = op - 0x84
      local items = {}
      for i = n, 1, -1 do items[i] = pop() end
      push(self:new_seq("tuple", items, n))
    elseif op == 0x4e then push(NONE)                 -- NONE
    elseif op == 0x88 then push(true)                 -- NEWTRUE
    elseif op == 0x89 then push(false)                -- NEWFALSE
    elseif op == 0x29 then push(self:new_seq("tuple", {}, 0))   -- EMPTY_TUPLE
    elseif op == 0x5d then push(self:new_seq("list", {}, 0))    -- EMPTY_LIST
    elseif op == 0x7d then push(self:new_dict())                -- EMPTY_DICT
    elseif op == 0x8f then                            -- EMPTY_SET
      local s = {}
      kinds[s] = "set"
      push(s)
    elseif op == 0x4a then need(4) push((unpack("<i4", data, pos))) pos = pos + 4   -- BININT
    elseif op == 0x4b then need(1) push(byte(data, pos)) pos = pos + 1              -- BININT1
    elseif op == 0x4d then need(2) push((unpack("<I2", data, pos))) pos = pos + 2   -- BININT2
    elseif op == 0x47 then need(8) push((unpack(">d", data, pos))) pos = pos + 8    -- BINFLOAT
    elseif op == 0x58 or op == 0x55 then              -- BINUNICODE, SHORT_BINSTRING
      local n
      if op == 0x58 then
        need(4)
        n = unpack("<I4", data, pos)
        pos = pos + 4
      else
        need(1)
        n = byte(data, pos)
        pos = pos + 1
      end
      need(n)
      local s = sub(data, pos, pos + n - 1)
      pos = pos + n
      if not utf8.len(s, 1, -1, true) then err("a string that is not valid UTF-8") end
      push(s)
    elseif op == 0x51 then                            -- BINPERSID
      push(self:persistent(pop()))
    elseif op == 0x68 or op == 0x6a then              -- BINGET, LONG_BINGET
      local i = memo_index(op == 0x68)
      local v = memo[i]
      if v == nil then err("memo entry %d is read before it is written", i) end
      push(v)
    elseif op == 0x71 or op == 0x72 then              -- BINPUT, LONG_BINPUT
      memo[memo_index(op == 0x71)] = top()
    elseif op == 0x8a then                            -- LONG1
      need(1)
      local n = byte(data, pos)
      pos = pos + 1
      need(n)
      local v = 0
      if n > 0 then
        -- two's complement, little-endian; beyond 8 bytes only sign extension fits
        local fill = byte(data, pos + n - 1) >= 0x80 and 0xff or 0
        for i = 9, n do
          if byte(data, pos + i - 1) ~= fill then err("an integer wider than 64 bits (%d bytes)", n) end
        end
        local k = n < 8 and n or 8
        v = unpack("<i" .. k, data, pos)
        if n > 8 and (v < 0) ~= (fill == 0xff) then err("an integer wider than 64 bits (%d bytes)", n) end
      end
      pos = pos + n
      push(v)
    else
      local name = OPNAMES[op]
      err("pickle opcode %s (0x%02x) is not allowed (torch.load with weights_only=True refuses it too)",
          name or "unknown", op)
    end
  end
end

-- ---- ember.load's entry ----------------------------------------------------------------

local PICKLE_MAX = 100000000

local LEGACY = "PyTorch's legacy format (torch.save before PyTorch 1.6, or a bare pickle) is not supported: "
  .. "re-save it in PyTorch 1.6 or later, e.g. torch.save(torch.load(old, weights_only=True), new)"

--- torchfile.load(path, device, kind) -> the object torch.save stored (ember.load's
-- path for PyTorch files; kind is "zip" or "pickle", from the file's first bytes).
function M.load(path, device, kind)
  local self = setmetatable({path = path, device = device, kinds = setmetatable({}, {__mode = "k"}),
                             lengths = setmetatable({}, {__mode = "k"}), raw = {}, storages = {}}, Loader)
  if kind == "pickle" then self:fail("%s", LEGACY) end
  local zip <close> = self:call("opening the archive", ember._zip_open, path)
  self.zip = zip
  local names, sizes = zip:members()
  self.sizes = sizes
  local index, pkl = {}, nil
  for i, name in ipairs(names) do
    index[name] = i
    local prefix = name:match("^([^/]*/)data%.pkl$")
    if prefix then
      if pkl then self:fail("two data.pkl in the archive (%s and %s)", show(names[pkl]), show(name)) end
      pkl, self.prefix = i, prefix
    end
  end
  self.index = index
  for _, name in ipairs(names) do
    if name:match("^[^/]*/constants%.pkl$") or name:match("^[^/]*/code/") then
      self:fail("a TorchScript archive (torch.jit.save): ember reads torch.save files; in PyTorch, "
                .. "torch.save(torch.jit.load(path).state_dict(), new) makes one")
    end
  end
  if not pkl then self:fail("a zip archive without data.pkl: not a file torch.save wrote") end
  local order = index[self.prefix .. "byteorder"]
  if order then
    local b = self:call("byteorder", zip.read, zip, order)
    if b == "big" then self.big_endian = true
    elseif b ~= "little" then self:fail("byteorder is %s (expected little or big)", show(b)) end
  end
  -- a real data.pkl takes about 100 bytes a tensor; a deflated one may claim
  -- 1032 times its size, which is not allocated on a claim
  if sizes[pkl] > PICKLE_MAX then
    self:fail("data.pkl is %d bytes, more than the %d-byte limit", sizes[pkl], PICKLE_MAX)
  end
  local data = self:call("data.pkl", zip.read, zip, pkl)
  self.budget = 4 * #data + 65536
  return self:unpickle(data)
end

M._NONE = NONE
return M
