-- ember.composite.checks — the argument checks and error relaying the parts of
-- lua/ember/composite.lua share, so their messages read alike: "op: what must be an
-- integer, got a tensor [2, 3] (float32)", "op: dimension 4 out of range (...)".
-- Used by the parts; not a part itself.
local ember = require "ember"
local errors = require "ember.errors"
local raise, shape_str = errors.raise, errors.shape_str

local M = {}

-- v as an error message shows it
function M.show(v)
  if ember.is_tensor(v) then return "a tensor " .. shape_str(v) .. " (" .. v.dtype .. ")" end
  if type(v) == "number" or type(v) == "boolean" then return tostring(v) end
  if type(v) == "string" then return string.format("a string %q", v) end
  return "a " .. type(v)
end
local show = M.show

-- impl(...) with any error raised inside named as op's and placed at the user's line: an
-- op it is made of reports "cat: sizes must match ...", the caller of hstack reads
-- "hstack: sizes must match ...".
function M.relay(op, impl, ...)
  local r = table.pack(pcall(impl, ...))
  if r[1] then return table.unpack(r, 2, r.n) end
  local msg = tostring(r[2]):gsub("^[^:\n]*:%d+: ", "", 1):gsub("^[%w_%.]+: ", op .. ": ", 1)
  raise(msg)
end

-- the public function op: impl with its errors named as op's
function M.public(op, impl)
  return function(...) return M.relay(op, impl, ...) end
end

function M.integer(op, what, v)
  local i = math.type(v) and math.tointeger(v)
  if not i then raise(string.format("%s: %s must be an integer, got %s", op, what, show(v))) end
  return i
end

function M.number(op, what, v)
  if type(v) ~= "number" then raise(string.format("%s: %s must be a number, got %s", op, what, show(v))) end
  return v
end

function M.boolean(op, what, v, default)
  if v == nil then return default end
  if type(v) ~= "boolean" then raise(string.format("%s: %s must be a boolean, got %s", op, what, show(v))) end
  return v
end

-- dim (1-based, negative from the end) of t as a positive dim; what names it in errors
-- (default "dimension")
function M.wrap_dim(op, t, dim, what)
  what = what or "dimension"
  local d, n = M.integer(op, what, dim), t:dim()
  if n == 0 then raise(string.format("%s: %s %d out of range for a 0-d tensor (it has no dimensions)", op, what, d)) end
  if d == 0 or d > n or d < -n then
    raise(string.format("%s: %s %d out of range (expected 1..%d or -%d..-1 for a tensor of %d dimensions)",
                        op, what, d, n, n, n))
  end
  return d < 0 and d + n + 1 or d
end

return M
