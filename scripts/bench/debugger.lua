-- scripts/bench/debugger.lua — what the debugger costs a training loop.
--
--   build/ember scripts/bench/debugger.lua [--steps N]
--
-- Runs the same training-like loop (a small MLP trained with AdamW through
-- ember.nn and ember.optim, plus a few Lua helper calls per step: many
-- small tensor ops and Lua calls, the case where a hook would hurt most)
-- in three child processes:
--   plain        ember debugger.lua --child
--   debugger     ember -d debugger.lua --child, `continue` at the first
--                stop: the debugger is on, no breakpoint is set
--   breakpoint   the same with `break debugger.lua:N` first, N a line of
--                a function that the loop never calls
-- and prints each time (best of several repeats) and the ratios against
-- the targets (<= 1.05x with none set, <= 1.3x with one set elsewhere).
-- A pure-Lua call loop (recursive fib) is timed the same way, for
-- information: it is the worst case for any call hook.
local ember = require "ember"
local nn, optim = ember.nn, ember.optim

-- A function the loop never calls: the breakpoint goes on its first line.
local function never_called(x)
  local y = x * 2
  return y
end

local function make_model()
  ember.manual_seed(1)
  local model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
  local opt = optim.AdamW(model:parameters(), {lr = 1e-3})
  return model, opt, nn.CrossEntropyLoss()
end

local function batch(i)
  local x = ember.randn(32, 64)
  local y = ember.randint(1, 11, {32})
  return x, y, i
end

local function train(model, opt, criterion, steps)
  local total = 0
  for i = 1, steps do
    local x, y = batch(i)
    local loss = criterion(model(x), y)
    opt:zero_grad()
    loss:backward()
    opt:step()
    if i % 50 == 0 then total = total + loss:item() end
  end
  return total
end

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

local best = dofile((arg[0]:match("^(.*/)") or "./") .. "timing.lua").best

local function child(steps)
  local model, opt, criterion = make_model()
  train(model, opt, criterion, 20)   -- warm up
  local t = best(5, function() train(model, opt, criterion, steps) end)
  local f = best(5, function() return fib(27) end)
  print(string.format("RESULT train %.6f fib %.6f", t, f))
end

local function parse(argv)
  local opts = {steps = 1500}
  local i = 1
  while i <= #argv do
    if argv[i] == "--child" then opts.child = true
    elseif argv[i] == "--steps" and tonumber(argv[i + 1]) then
      opts.steps = math.tointeger(tonumber(argv[i + 1])) or 1500
      i = i + 1
    else
      io.stderr:write("debugger.lua: usage: ember scripts/bench/debugger.lua [--steps N]\n")
      os.exit(1)
    end
    i = i + 1
  end
  return opts
end

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Runs a child and returns its train and fib times.
local function run_child(exe, script, steps, flags, input)
  local cmd = string.format("%s %s %s --child --steps %d", shell_quote(exe), flags, shell_quote(script), steps)
  if input then cmd = string.format("printf %s | %s", shell_quote(input), cmd) end
  local p = assert(io.popen(cmd .. " 2>&1", "r"))
  local out = p:read("a")
  p:close()
  local t, f = out:match("RESULT train (%S+) fib (%S+)")
  if not t then error("child failed: " .. cmd .. "\n" .. out) end
  return tonumber(t), tonumber(f), out
end

local function main(argv)
  local opts = parse(argv)
  if opts.child then return child(opts.steps) end
  local exe = arg[-1] or "ember"
  local script = arg[0]
  local line = debug.getinfo(never_called, "S").linedefined + 1
  local file = script
  local plain_t, plain_f = run_child(exe, script, opts.steps, "", nil)
  local dbg_t, dbg_f = run_child(exe, script, opts.steps, "-d", "continue\n")
  local bp_t, bp_f, out = run_child(exe, script, opts.steps, "-d",
                                    string.format("break %s:%d\ncontinue\n", file, line))
  if not out:find("breakpoint 1 at " .. file .. ":" .. line, 1, true) then
    error("the breakpoint was not set:\n" .. out)
  end
  local function row(name, t, base, target)
    local ratio = t / base
    print(string.format("  %-38s %8.1f ms  %5.2fx%s", name, t * 1e3, ratio,
                        target and string.format("  (target <= %.2fx: %s)", target,
                                                 ratio <= target and "met" or "MISSED") or ""))
  end
  print(string.format("training loop, %d steps (MLP 64-128-64-10, batch 32, AdamW), best of 5:", opts.steps))
  row("plain", plain_t, plain_t)
  row("under the debugger, no breakpoint", dbg_t, plain_t, 1.05)
  row("one breakpoint in an uncalled function", bp_t, plain_t, 1.3)
  print("pure-Lua calls, fib(27) (no target: the worst case for a call hook):")
  row("plain", plain_f, plain_f)
  row("under the debugger, no breakpoint", dbg_f, plain_f)
  row("one breakpoint in an uncalled function", bp_f, plain_f)
end

main({...})
