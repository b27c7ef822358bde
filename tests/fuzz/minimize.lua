-- minimize.lua — shrinks a crashing program printed by fuzz.lua (TRACE=1) to
-- the lines the crash needs, by removing one line at a time and keeping the
-- removal when the crash stays the same (the same sanitizer report kind and
-- top frame, or the same signal).
--
--   SEED=6 ITER=71 TRACE=1 build-asan/ember tests/fuzz/fuzz.lua > prog.lua
--   build-asan/ember tests/fuzz/minimize.lua prog.lua [interpreter]
--
-- The interpreter defaults to the one running this script (the sanitizer
-- build's ember above; set ASAN_OPTIONS as tests/run.sh does). Prints the
-- minimal program.
local input, interp = arg[1], arg[2]
if not input then
  io.stderr:write("usage: minimize.lua program.lua [interpreter]\n")
  os.exit(2)
end
if not interp then
  local i = -1
  while arg[i - 1] do i = i - 1 end
  interp = arg[i]
end

local lines = {}
for line in io.lines(input) do
  -- only the program: the fuzzer's own lines start with '#' or 'fuzz:'
  if not line:match("^#") and not line:match("^fuzz:") and not line:match("^FAIL") then lines[#lines + 1] = line end
end

local tmp = os.tmpname()

-- What the crash looks like: the sanitizer's first report line (without
-- addresses) and the first frame inside ember, or the exit status.
local function signature(prog)
  local f = assert(io.open(tmp, "w"))
  f:write(table.concat(prog, "\n"), "\n")
  f:close()
  local p = io.popen(string.format("%s %s 2>&1; echo \"exit=$?\"", interp, tmp))
  local out = p:read("a")
  p:close()
  local kind = out:match("ERROR: %w+Sanitizer: ([%w%-]+)") or out:match("runtime error: ([^\n]-) 0x")
            or out:match("runtime error: ([^\n]*)")
  local frame = out:match("#%d+ 0x%x+ in (em_[%w_]+)") or out:match("#%d+ 0x%x+ in ([%w_]+) [%w/]+%.c")
  local status = out:match("exit=(%d+)")
  if not kind and (status == "0" or status == "1") then return nil end
  return (kind or ("exit " .. status)) .. " in " .. tostring(frame)
end

local want = signature(lines)
if not want then
  io.stderr:write("the program does not crash\n")
  os.exit(1)
end
io.stderr:write("crash: ", want, "\n")
-- the first lines set the program up; the last one is the crashing call
local i = #lines - 1
while i >= 1 do
  local line = lines[i]
  if line:match("^r = ") or line:match("^v%[") or line:match("^%-%- skipped") then
    table.remove(lines, i)
    if signature(lines) ~= want then table.insert(lines, i, line) end
  end
  i = i - 1
end
os.remove(tmp)
print(table.concat(lines, "\n"))
