-- ember.serialize — what ember.save and ember.load do with a table that holds more than
-- tensors: numbers, booleans and strings beside them, at any depth (an optimizer's
-- state_dict(), a training run's counters). The C binding (lua/bind_io.c) hands such a
-- table here; a table of tensors alone never comes here and is saved as before.
--
-- The file is still a plain safetensors file: each tensor under its dotted name (as a
-- table of tensors gets: {state = {[1] = {exp_avg = t}}} -> "state.1.exp_avg"), so other
-- readers see the tensors, and one metadata entry, "ember.tree", holding the whole table
-- as JSON, versioned:
--   {"ember.tree": 1, "root": NODE}
--   NODE = ["table", [[KEY, NODE], ...]]    KEY: a JSON string (a string key) or a JSON
--                                           integer (an integer key), in a stable order
--        | ["tensor", "dotted.name"]        a tensor of the file
--        | ["int", -12]                     a Lua integer (exact, 64 bits)
--        | ["float", "0.1"]                 a Lua float as Python's repr writes it (the shortest
--                                           text that reads back as the same double, "2.0",
--                                           "1e-05"); "inf", "-inf", "nan", "-0.0"
--        | ["bool", true]
--        | ["str", "text"]                  a string of valid UTF-8
--        | ["bytes", "00ff"]                any other string, in hexadecimal
-- ember.load gives such a file back as the table it was (integer keys as integers,
-- empty tables kept); files without "ember.tree" (older ones, other writers', tables of
-- tensors) load flat as before. A later format would write another number after
-- "ember.tree"; this reader refuses numbers it does not know, naming them.
--
-- Refused, with the path to the value in the message: functions, threads, userdata other
-- than tensors, nn.Module instances (save their state_dict()), keys that are neither
-- strings nor integers, a table that contains itself (a cycle), and nesting deeper than
-- MAX_DEPTH. A table reached twice (not a cycle) is saved twice and loads as two tables;
-- a tensor reached twice is saved under each name.
local ember = require "ember"

local M = {}

local VERSION = 1
local KEY = "ember.tree"
local MAX_DEPTH = 64   -- the C binding's limit for tables of tensors, too
M.KEY, M.VERSION, M.MAX_DEPTH = KEY, VERSION, MAX_DEPTH

local function fail(op, argn, fmt, ...)
  error(string.format("%s: argument %d: " .. fmt, op, argn, ...), 0)
end

-- ---- JSON -----------------------------------------------------------------------------

local ESC = {['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r",
             ["\t"] = "\\t"}
local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c) return ESC[c] or string.format("\\u%04x", c:byte()) end) .. '"'
end

-- The digits and decimal exponent of the shortest decimal that reads back as a (a finite
-- double > 0): "125", 2 for 1.25e2. The nearest p-digit decimal is tried first; at a power
-- of two the gap below a is half the gap above, so a neighbour of it can read back when it
-- does not, and Python's repr then takes that neighbour.
local function shortest_digits(a)
  for p = 1, 17 do
    local s = string.format("%." .. (p - 1) .. "e", a)
    local mantissa, e = s:match("^([%d.]+)e([-+]%d+)$")
    local digits, exp = mantissa:gsub("%.", ""), tonumber(e)
    if tonumber(s) == a then return digits, exp end
    for _, step in ipairs({-1, 1}) do
      local n = math.tointeger(tonumber(digits)) + step
      local scale = exp - (p - 1)
      if tonumber(n .. "e" .. scale) == a then
        local d = tostring(n)
        return d, scale + #d - 1
      end
    end
  end
  error("float_repr: no decimal reads back as " .. string.format("%a", a))
end

-- repr(x) of a Python float: the shortest round-trip digits, written in positional notation
-- when the exponent is in [-5, 16) ("0.0001", "2.0", "1000000000000000.0") and as
-- "1e-05", "1.5e+16" otherwise.
local function float_repr(x)
  if x ~= x then return "nan" end
  if x == math.huge then return "inf" end
  if x == -math.huge then return "-inf" end
  if x == 0 then return 1 / x < 0 and "-0.0" or "0.0" end
  local sign = x < 0 and "-" or ""
  local digits, exp = shortest_digits(math.abs(x))
  digits = digits:gsub("0+$", "")
  if digits == "" then digits = "0" end
  local point = exp + 1   -- digits before the decimal point
  if point <= -4 or point > 16 then
    local mantissa = #digits > 1 and digits:sub(1, 1) .. "." .. digits:sub(2) or digits
    return string.format("%s%se%s%02d", sign, mantissa, exp < 0 and "-" or "+", math.abs(exp))
  elseif point <= 0 then
    return sign .. "0." .. string.rep("0", -point) .. digits
  elseif point >= #digits then
    return sign .. digits .. string.rep("0", point - #digits) .. ".0"
  end
  return sign .. digits:sub(1, point) .. "." .. digits:sub(point + 1)
end

M.float_repr = float_repr

local function float_of(s)
  if s == "nan" then return 0 / 0 end
  if s == "inf" then return math.huge end
  if s == "-inf" then return -math.huge end
  if type(s) ~= "string" or not s:match("^%-?[%d.]+[eE]?[-+]?%d*$") then return nil end
  if s:match("^%-?%d+$") then s = s .. ".0" end   -- "-0", "1": floats, not integers
  local v = tonumber(s)
  return math.type(v) == "float" and v or nil
end

-- A small JSON reader (what the writer below writes, and any JSON): objects as tables,
-- arrays as lists with .n, integers as Lua integers when they fit.
local function json_decode(text)
  local pos = 1
  local function bad(what)
    error(string.format("malformed JSON at byte %d: %s", pos, what), 0)
  end
  local function skip() pos = text:find("[^ \t\r\n]", pos) or #text + 1 end
  local value
  local function str()
    local out = {}
    pos = pos + 1
    while true do
      local i = text:find('["\\]', pos)
      if not i then bad("an unterminated string") end
      out[#out + 1] = text:sub(pos, i - 1)
      if text:sub(i, i) == '"' then pos = i + 1 break end
      local c = text:sub(i + 1, i + 1)
      local simple = ({b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", ['"'] = '"', ["\\"] = "\\", ["/"] = "/"})[c]
      if simple then
        out[#out + 1] = simple
        pos = i + 2
      elseif c == "u" then
        local hex = text:sub(i + 2, i + 5)
        if not hex:match("^%x%x%x%x$") then bad("a bad \\u escape") end
        local cp = tonumber(hex, 16)
        pos = i + 6
        if cp >= 0xD800 and cp <= 0xDBFF and text:sub(pos, pos + 1) == "\\u" then
          local lo = tonumber(text:sub(pos + 2, pos + 5), 16)
          if lo and lo >= 0xDC00 and lo <= 0xDFFF then
            cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00)
            pos = pos + 6
          end
        end
        out[#out + 1] = utf8.char(cp)
      else
        bad("a bad escape")
      end
    end
    return table.concat(out)
  end
  -- past an object's or array's opening bracket: true (and past close) when it is empty
  local function opened(close)
    pos = pos + 1
    skip()
    if text:sub(pos, pos) ~= close then return false end
    pos = pos + 1
    return true
  end
  -- past what follows an entry: true at the closing bracket close, false at a ','
  local function closed(close)
    skip()
    local d = text:sub(pos, pos)
    pos = pos + 1
    if d == close then return true end
    if d ~= "," then bad("expected ',' or '" .. close .. "'") end
    return false
  end
  function value(depth)
    if depth > MAX_DEPTH + 8 then bad("nesting too deep") end
    skip()
    local c = text:sub(pos, pos)
    if c == "{" then
      local t = {}
      if opened("}") then return t end
      repeat
        skip()
        if text:sub(pos, pos) ~= '"' then bad("expected a key") end
        local k = str()
        skip()
        if text:sub(pos, pos) ~= ":" then bad("expected ':'") end
        pos = pos + 1
        t[k] = value(depth + 1)
      until closed("}")
      return t
    elseif c == "[" then
      local t = {n = 0}
      if opened("]") then return t end
      repeat
        t.n = t.n + 1
        t[t.n] = value(depth + 1)
      until closed("]")
      return t
    elseif c == '"' then
      return str()
    elseif text:sub(pos, pos + 3) == "true" then pos = pos + 4 return true
    elseif text:sub(pos, pos + 4) == "false" then pos = pos + 5 return false
    elseif text:sub(pos, pos + 3) == "null" then pos = pos + 4 return nil
    else
      local num = text:match("^%-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      if not num or num == "" or num == "-" then bad("unexpected " .. (c == "" and "end" or "'" .. c .. "'")) end
      pos = pos + #num
      return math.tointeger(tonumber(num)) or tonumber(num)
    end
  end
  local v = value(0)
  skip()
  if pos <= #text then bad("text after the value") end
  return v
end
M._json_decode = json_decode
M._json_string = json_string

-- ---- saving ---------------------------------------------------------------------------

local function key_text(k)
  if type(k) == "string" then return k end
  return string.format("%d", k)
end

local function show_path(path)
  if path == "" then return "the table" end
  if #path > 60 then path = "..." .. path:sub(-57) end
  return '"' .. path .. '"'
end

local function describe(v)
  if type(v) == "userdata" then
    local mt = getmetatable(v)
    local name = type(mt) == "table" and rawget(mt, "__name")
    return "a userdata" .. (type(name) == "string" and " (" .. name .. ")" or "") .. ", not a tensor"
  end
  return "a " .. type(v)
end

-- keys in a stable order: integers ascending, then strings
local function sorted_keys(t, op, argn, path)
  local ints, strs = {}, {}
  for k in next, t do
    if math.type(k) == "integer" then ints[#ints + 1] = k
    elseif type(k) == "string" then strs[#strs + 1] = k
    else
      fail(op, argn, "%s has a key that is %s (keys must be strings or integers)", show_path(path),
           type(k) == "number" and "the number " .. float_repr(k) or describe(k))
    end
  end
  table.sort(ints)
  table.sort(strs)
  for _, s in ipairs(strs) do ints[#ints + 1] = s end
  return ints
end

-- NODE text of v; tensors go into flat under their dotted names
local function encode(v, path, flat, on_path, depth, op, argn)
  if ember.is_tensor(v) then
    if path == "" then fail(op, argn, "a tensor needs a name") end
    if flat[path] ~= nil then
      fail(op, argn, "the name \"%s\" is given twice (after flattening nested tables)", path)
    end
    flat[path] = v
    return '["tensor",' .. json_string(path) .. "]"
  end
  local t = type(v)
  if math.type(v) == "integer" then return string.format('["int",%d]', v) end
  if t == "number" then return '["float","' .. float_repr(v) .. '"]' end
  if t == "boolean" then return v and '["bool",true]' or '["bool",false]' end
  if t == "string" then
    if utf8.len(v) then return '["str",' .. json_string(v) .. "]" end
    return '["bytes","' .. v:gsub(".", function(c) return string.format("%02x", c:byte()) end) .. '"]'
  end
  if t == "table" then
    if on_path[v] then
      fail(op, argn, "%s is %s again, which contains it (a cycle)", show_path(path),
           on_path[v] == "" and "the table given" or "the table at " .. show_path(on_path[v]))
    end
    if depth >= MAX_DEPTH then fail(op, argn, "tables nested more than %d deep at %s", MAX_DEPTH, show_path(path)) end
    if ember.nn.is_module(v) then
      fail(op, argn, "%s is an nn.Module (save its state_dict() instead)", show_path(path))
    end
    on_path[v] = path
    local parts = {}
    for _, k in ipairs(sorted_keys(v, op, argn, path)) do
      local sub = path == "" and key_text(k) or path .. "." .. key_text(k)
      parts[#parts + 1] = "[" .. (type(k) == "string" and json_string(k) or string.format("%d", k)) .. ","
                          .. encode(rawget(v, k), sub, flat, on_path, depth + 1, op, argn) .. "]"
    end
    on_path[v] = nil
    return '["table",[' .. table.concat(parts, ",") .. "]]"
  end
  fail(op, argn, "%s is %s (expected a tensor, number, boolean, string or table)", show_path(path), describe(v))
end

--- serialize.flatten(tree) -> flat name -> tensor, the "ember.tree" metadata text.
-- Raises "save: argument 2: ..." for what cannot be saved.
function M.flatten(tree, op, argn)
  op, argn = op or "save", argn or 2
  local flat = {}
  local root = encode(tree, "", flat, {}, 0, op, argn)
  return flat, string.format('{"%s":%d,"root":%s}', KEY, VERSION, root)
end

--- serialize.save(path, tree, opts [, argn = 2]): ember.save for a table holding numbers, booleans or
--- strings; argn: the tree's place in the caller's arguments, for the errors.
function M.save(path, tree, opts, argn)
  local flat, text = M.flatten(tree, "save", argn)
  local meta = {}
  if opts ~= nil and opts.metadata ~= nil then
    if type(opts.metadata) ~= "table" then
      fail("save", 3, "metadata must be a table of strings, got a %s", type(opts.metadata))
    end
    for k, v in pairs(opts.metadata) do meta[k] = v end
    if meta[KEY] ~= nil then
      fail("save", 3, "metadata \"%s\" is reserved (ember.save writes it for tables that hold numbers, booleans "
           .. "or strings)", KEY)
    end
  end
  meta[KEY] = text
  local ok, e = pcall(ember._save_raw, path, flat, {metadata = meta})
  -- the position is this file's: the binding puts the caller's in front
  if not ok then error((tostring(e):gsub("^[^:\n]+:%d+: ", "", 1)), 0) end
end

-- ---- loading --------------------------------------------------------------------------

--- serialize.unflatten(tensors, text, path) -> the table ember.save was given.
function M.unflatten(tensors, text, path)
  local where = "load: " .. path .. ": metadata '" .. KEY .. "': "
  local ok, doc = pcall(json_decode, text)
  if not ok then error(where .. doc, 0) end
  if type(doc) ~= "table" or math.type(doc[KEY]) ~= "integer" then
    error(where .. "not an ember tree (no format number)", 0)
  end
  if doc[KEY] ~= VERSION then
    error(string.format("%sformat %d, which this ember does not read (it reads %d): the file comes from a newer "
                        .. "ember", where, doc[KEY], VERSION), 0)
  end
  local used = {}
  local function node(n, at)
    local bad = function(what) error(string.format("%sat %s: %s", where, at == "" and "the root" or "'" .. at .. "'", what), 0) end
    if type(n) ~= "table" or type(n[1]) ~= "string" then bad("not a node") end
    local kind, v = n[1], n[2]
    if kind == "table" then
      if type(v) ~= "table" then bad("a table node without entries") end
      local t = {}
      for i = 1, v.n or #v do
        local e = v[i]
        if type(e) ~= "table" or (type(e[1]) ~= "string" and math.type(e[1]) ~= "integer") then
          bad("entry " .. i .. " is not a [key, node] pair")
        end
        local k = e[1]
        if t[k] ~= nil then bad("the key '" .. key_text(k) .. "' appears twice") end
        t[k] = node(e[2], at == "" and key_text(k) or at .. "." .. key_text(k))
      end
      return t
    elseif kind == "tensor" then
      local tensor = type(v) == "string" and tensors[v]
      if not tensor then bad("names the tensor '" .. tostring(v) .. "', which the file does not hold") end
      used[v] = true
      return tensor
    elseif kind == "int" then
      if math.type(v) ~= "integer" then bad("an int node without an integer") end
      return v
    elseif kind == "float" then
      local f = float_of(v)
      if not f then bad("a float node without a number") end
      return f
    elseif kind == "bool" then
      if type(v) ~= "boolean" then bad("a bool node without a boolean") end
      return v
    elseif kind == "str" then
      if type(v) ~= "string" then bad("a str node without a string") end
      return v
    elseif kind == "bytes" then
      if type(v) ~= "string" or #v % 2 ~= 0 or v:find("[^%x]") then bad("a bytes node without hexadecimal") end
      return (v:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end))
    end
    bad("an unknown node kind '" .. kind .. "'")
  end
  local tree = node(doc.root, "")
  for name in pairs(tensors) do
    if not used[name] then
      error(string.format("%sthe file holds the tensor '%s', which the tree does not place", where, name), 0)
    end
  end
  return tree
end

return M
