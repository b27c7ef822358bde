-- ember.optim.flat — numbers, booleans and lists of numbers as strings, so
-- optimizer and scheduler state fits in a safetensors header's __metadata__
-- (a table of strings) and comes back bit for bit.
--   number   -> "%.17g" ("0.10000000000000001"); a float that prints as an
--               integer gets ".0" so it decodes as a float again
--   boolean  -> "true" / "false"
--   list     -> "[v1,v2,...]" of numbers
--   string   -> itself
-- Decoding never runs code (no load()).
local M = {}

local function encode_number(v)
  if math.type(v) == "integer" then return string.format("%d", v) end
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" end
  if v == -math.huge then return "-inf" end
  local s = string.format("%.17g", v)
  if s:match("^-?%d+$") then s = s .. ".0" end
  return s
end

local function decode_number(s)
  if s == "nan" then return 0 / 0 end
  if s == "inf" then return math.huge end
  if s == "-inf" then return -math.huge end
  return tonumber(s)
end

function M.encode(v, what)
  local t = type(v)
  if t == "number" then return encode_number(v) end
  if t == "boolean" then return tostring(v) end
  if t == "string" then return v end
  if t == "table" then
    local parts = {}
    for i, x in ipairs(v) do
      if type(x) ~= "number" then
        error(string.format("%s: element %d of the list is a %s; only lists of numbers can be saved",
                            what, i, type(x)), 3)
      end
      parts[i] = encode_number(x)
    end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  error(string.format("%s: a %s cannot be saved (numbers, booleans, strings and lists of numbers can)",
                      what, t), 3)
end

function M.decode(s, what)
  if type(s) ~= "string" then return s end
  if s == "true" then return true end
  if s == "false" then return false end
  local inner = s:match("^%[(.*)%]$")
  if inner then
    local out = {}
    for item in inner:gmatch("[^,]+") do
      local x = decode_number(item)
      if x == nil then error(string.format("%s: bad number '%s' in list '%s'", what, item, s), 3) end
      out[#out + 1] = x
    end
    return out
  end
  local x = decode_number(s)
  if x ~= nil then return x end
  return s
end

return M
