-- ember.errors — errors that point at the user's line.
--
-- error(msg, level) needs the number of frames between the check and the
-- user's call, and that number changes whenever the library's call paths do
-- (a constructor reached through __call, a forward through a container).
-- raise() finds the frame instead: the first one, going up, that is neither
-- a C function nor code of the library itself (a file under the folder that
-- holds ember/*.lua), so the message starts with the user's file:line.
local M = {}

-- the folder ember/*.lua was loaded from, as it appears in chunk names
local lib_prefix = debug.getinfo(1, "S").source:match("^(@.*[/\\])ember[/\\]errors%.lua$")

local function internal(info)
  if info.what == "C" then return true end
  return lib_prefix ~= nil and info.source:sub(1, #lib_prefix) == lib_prefix
end

-- The level to give error(), called in the function that calls user_level,
-- for the first frame outside ember; 2 (that function's caller) when there
-- is none.
function M.user_level()
  local level = 3   -- 1: user_level, 2: the function asking, 3: its caller
  while true do
    local info = debug.getinfo(level, "S")
    if not info then return 2 end
    if not internal(info) then return level - 1 end
    level = level + 1
  end
end

--- errors.raise(msg) raises msg as a Lua error positioned at the user's
-- line: the first calling frame that is not inside ember's Lua library.
function M.raise(msg)
  error(msg, M.user_level())
end

--- errors.call(f, ...) calls f (a C function of the binding, called from the
-- library) and returns its results; an error it raises is raised again at
-- the user's line instead of the library's.
function M.call(f, ...)
  local r = table.pack(pcall(f, ...))
  if r[1] then return table.unpack(r, 2, r.n) end
  local msg = r[2]
  if type(msg) == "string" and lib_prefix then
    local where = "^" .. lib_prefix:sub(2):gsub("%p", "%%%0") .. "[^:]*:%d+: "
    msg = msg:gsub(where, "", 1)
  end
  error(msg, M.user_level())
end

--- errors.raisef(fmt, ...) is raise(string.format(fmt, ...)).
function M.raisef(fmt, ...)
  error(string.format(fmt, ...), M.user_level())
end

--- errors.check_path(op, what, path) raises "<op>: <what>: file name
-- contains a zero byte ..." when the string path cannot name a file as
-- given (a C file name ends at a zero byte: "dir/a\0b" would be "dir/a").
-- The check itself is the binding's, ember._path_problem, which ember.save
-- and the other C functions taking a path share.
function M.check_path(op, what, path)
  local problem = require("ember")._path_problem(path)
  if problem then M.raise(string.format("%s: %s: %s", op, what, problem)) end
end

--- errors.shape_str(t) is t's shape as error messages write it: "[2, 3]".
function M.shape_str(t) return "[" .. table.concat(t.shape, ", ") .. "]" end

--- errors.check_tensor(v, op, what) raises "<op>: <what> must be a tensor,
-- got <type>" unless v is a tensor.
function M.check_tensor(v, op, what)
  if not require("ember").is_tensor(v) then
    M.raise(string.format("%s: %s must be a tensor, got %s", op, what, type(v)))
  end
end

return M
