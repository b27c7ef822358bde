-- script_options.lua — the command line of the training scripts (char_gpt.lua,
-- finetune_lora.lua), read one way, and their text file; loaded with dofile from the
-- script's folder.
--
--   local o, positional, given = options.parse(argv, {name = NAME, usage = USAGE,
--       kinds = {steps = "int", lr = "num", out = "str", plot = "flag"}, zero_ok = {seed = true},
--       defaults = {steps = 100, ...}})
--
-- "--some-option V" sets o.some_option; kinds: "int" (a whole number, positive unless
-- zero_ok names it), "num", "str", "flag" (no value). -h / --help prints the usage and
-- exits 0; a mistake prints "NAME: ..." on stderr and exits 1. positional lists the other
-- arguments in order; given[key] is true for each option on the command line.
local M = {}

--- options.fail(name, ...) prints "name: ..." on stderr and exits with status 1.
function M.fail(name, ...)
  io.stderr:write(name, ": ", ...)
  io.stderr:write("\n")
  os.exit(1)
end

--- options.read_text(name, path) -> the file's bytes; "name: cannot read the text: ..." and exit 1 when it cannot.
function M.read_text(name, path)
  local f, err = io.open(path, "rb")
  if not f then M.fail(name, "cannot read the text: ", err) end
  local s = f:read("a")
  f:close()
  return s
end

--- options.parse(argv, spec) -> o, positional, given (see the top of the file)
function M.parse(argv, spec)
  local function fail(...) M.fail(spec.name, ...) end
  local o, given, positional = {}, {}, {}
  for k, v in pairs(spec.defaults or {}) do o[k] = v end
  local zero_ok = spec.zero_ok or {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "-h" or a == "--help" then
      print(spec.usage)
      os.exit(0)
    elseif a:match("^%-%-.") then
      local key = a:sub(3):gsub("-", "_")
      local kind = spec.kinds[key]
      if not kind then fail("unknown option ", a, "\n", spec.usage) end
      if kind == "flag" then
        o[key] = true
      else
        local v = argv[i + 1]
        if v == nil then fail(a, " needs a value") end
        i = i + 1
        if kind == "int" then
          local n = math.tointeger(tonumber(v))
          if not n then fail(a, " needs a whole number, got '", v, "'") end
          if n < 0 or (n == 0 and not zero_ok[key]) then
            fail(a, " must be ", zero_ok[key] and "0 or more" or "positive", ", got ", v)
          end
          v = n
        elseif kind == "num" then
          local n = tonumber(v)
          if not n or n ~= n then fail(a, " needs a number, got '", v, "'") end
          v = n
        end
        o[key] = v
      end
      given[key] = true
    else
      positional[#positional + 1] = a
    end
    i = i + 1
  end
  return o, positional, given
end

return M
