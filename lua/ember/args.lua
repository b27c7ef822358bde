-- ember.args — PyTorch's positional-then-keyword calls, read one way everywhere.
--
-- A Python call f(a, b, stride=2) is f(a, b, {stride = 2}) in Lua; f(a, b, 2, 1,
-- {bias = False}) mixes both. args.options reads the optional arguments of such a
-- call (the ones after the required arguments) into one table name -> value:
--   local o = args.options("Conv2d", {"stride", "padding", "*", "dtype"}, ...)
-- names lists PyTorch's parameters in order; those after "*" are keyword-only (as
-- after Python's *): accepted in the options table, never by position. The last
-- argument is the options table when it is a plain table (no metatable, so not a
-- tensor, module or optimizer) without a [1] (a size list such as {3, 3} has one);
-- the arguments before it are positional. Mistakes are errors at the caller's line:
-- an unknown option, too many positional arguments, and an argument given both by
-- position and in the table (Python's "got multiple values for argument").
local raise = require("ember.errors").raise

local M = {}

--- args.is_options(v) -> true when v is a plain options table (no metatable, no [1]).
function M.is_options(v)
  return type(v) == "table" and getmetatable(v) == nil and rawget(v, 1) == nil
end

-- names as given, and the positional ones: the names before "*"
local parsed = setmetatable({}, {__mode = "k"})
local function parse(names)
  local p = parsed[names]
  if p then return p end
  p = {known = {}, positional = {}, list = {}}
  local keyword_only = false
  for _, k in ipairs(names) do
    if k == "*" then
      keyword_only = true
    else
      p.known[k] = true
      p.list[#p.list + 1] = k
      if not keyword_only then p.positional[#p.positional + 1] = k end
    end
  end
  p.expected = table.concat(p.list, ", ")
  parsed[names] = p
  return p
end

--- args.options(op, names, ...) -> a table name -> value of the arguments after the
--- required ones: positional in the order of names (up to "*"), then an optional
--- trailing options table with names as keys.
function M.options(op, names, ...)
  local p = parse(names)
  local n = select("#", ...)
  while n > 0 and select(n, ...) == nil do n = n - 1 end
  local out = {}
  local opts = n > 0 and select(n, ...) or nil
  if M.is_options(opts) then
    n = n - 1
  else
    opts = nil
  end
  if n > #p.positional then
    raise(string.format("%s: too many positional arguments (%d after the required ones, at most %d%s%s); "
                          .. "give the others in an options table",
                        op, n, #p.positional, #p.positional > 0 and ": " or "", table.concat(p.positional, ", ")))
  end
  for i = 1, n do out[p.positional[i]] = (select(i, ...)) end
  if opts then
    for k, v in pairs(opts) do
      if not p.known[k] then
        raise(string.format("%s: unknown option '%s' (expected %s)", op, tostring(k),
                            #p.list > 0 and p.expected or "no options"))
      end
      if out[k] ~= nil then
        raise(string.format("%s: got multiple values for argument '%s' (by position and in the options table)", op, k))
      end
      out[k] = v
    end
  end
  return out
end

-- whether v can be called: a function, or a value whose metatable has __call (a module)
function M.is_callable(v)
  if type(v) == "function" then return true end
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__call ~= nil
end

-- g, a generator option, checked: nil (the default generator) or an ember.Generator;
-- anything else is refused in op's name.
function M.generator(op, g)
  if g == nil then return nil end
  local ember = require "ember"
  if getmetatable(g) ~= getmetatable(ember.default_generator) then
    require("ember.errors").raise(string.format("%s: option 'generator': expected an ember.Generator, got %s",
                                                op, ember.is_tensor(g) and "a tensor" or type(g)))
  end
  return g
end

-- f(...) drawing its random numbers from the generator option g (see M.generator)
function M.drawing(op, g, f, ...)
  if g == nil then return f(...) end
  return require("ember")._with_generator(M.generator(op, g), f, ...)
end

return M
