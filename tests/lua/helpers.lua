-- helpers.lua — assertions the Lua specs share (found through LUA_PATH,
-- which tests/run.sh points at tests/lua/).
local M = {}

function M.is_nan(x) return x ~= x end

-- Deep comparison of tolist() output with expected nested tables. NaN equals
-- NaN; numbers agree within tol relative to max(1, |want|) (exactly when nil).
function M.same(got, want, tol)
  if type(want) == "table" then
    if type(got) ~= "table" or #got ~= #want then return false end
    for i = 1, #want do
      if not M.same(got[i], want[i], tol) then return false end
    end
    return true
  end
  if type(want) == "number" then
    if type(got) ~= "number" then return false end
    if M.is_nan(want) then return M.is_nan(got) end
    if want == got then return true end
    if want == math.huge or want == -math.huge then return false end
    return math.abs(got - want) <= (tol or 0) * math.max(1, math.abs(want))
  end
  return got == want
end

-- The whole content of a file, in binary.
function M.read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

function M.show(v)
  if type(v) ~= "table" then return tostring(v) end
  local parts = {}
  for i = 1, #v do parts[i] = M.show(v[i]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- t's values equal want (nested tables), within tol when given
function M.check(t, want, tol)
  local ember = require "ember"
  assert(ember.is_tensor(t), "expected a tensor, got " .. type(t))
  local got = t:tolist()
  assert(M.same(got, want, tol), "expected " .. M.show(want) .. ", got " .. M.show(got))
end

function M.check_shape(t, want)
  assert(M.same(t.shape, want), "expected shape " .. M.show(want) .. ", got " .. M.show(t.shape))
end

-- the message of the error f(...) raises (the call must fail)
function M.err(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(e)
end

-- msg contains text (plain, not a pattern)
function M.has(msg, text)
  assert(msg:find(text, 1, true), "expected the message to contain '" .. text .. "', got: " .. msg)
end

-- A float64 tensor of the given sizes with distinct values far enough apart
-- (0.5, plus noise of 0.01) that a finite-difference step never changes which
-- element is the largest or where it sorts.
function M.spread(...)
  local ember = require "ember"
  local n = 1
  for _, s in ipairs({...}) do n = n * s end
  return (ember.randperm(n, {dtype = "float64"}) * 0.5 + ember.randn(n, {dtype = "float64"}) * 0.01):reshape(...)
end

return M
