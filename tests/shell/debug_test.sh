#!/usr/bin/env bash
# debug_test.sh — the debugger, driven through piped input (TAP): stops at
# breakpoint() and at file:line breakpoints (conditions, hit counts, lines
# without code), step/next/finish (across calls, tail calls, coroutines),
# frames, locals and upvalues read and assigned, display, list, post-mortem,
# quit, and the REPL's :break commands. Without a terminal no "(dbg) " prompt
# is shown, so stdout is what the debugger and the script print.
# EMBER is the executable (tests/run.sh sets it); default build/ember.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
case $EMBER in /*) ;; *) EMBER=$PWD/$EMBER ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/shell/tap.sh
cd "$tmp"
# check NAME INPUT EXPECTED_STDOUT -- command...: pipes INPUT (printf
# format) into the command, compares its whole stdout.
check() {
    local name=$1 input=$2 want=$3
    shift 4
    # shellcheck disable=SC2059
    printf "$input" | "$@" > out 2> err; rc=$?
    local got; got=$(cat out)
    if [ "$got" = "$want" ]; then ok "$name"
    else not_ok "$name" "status $rc" "stdout:" "$got" "expected:" "$want" "stderr: $(head -c 600 err)"
    fi
}
# err_has NAME PATTERN: the last command's stderr matches the grep pattern
err_has() {
    if grep -qE -- "$2" err; then ok "$1"
    else not_ok "$1" "stderr lacks /$2/:" "$(head -c 600 err)"; fi
}
status_is() {   # NAME EXPECTED: the last command's exit status
    if [ "$rc" = "$2" ]; then ok "$1"; else not_ok "$1" "status $rc, expected $2"; fi
}

# ---- the scripts ------------------------------------------------------------

cat > t_bp.lua <<'EOF'
local function scale(v)
  local x = v * 2
  breakpoint()
  return x
end
print("result", scale(5))
EOF

cat > t_step.lua <<'EOF'
local calls = 0
local function inner(a)
  local b = a + 1
  return b
end
local function outer(n)
  local m = inner(n)
  print("inner gave", m)
  return m * 2
end
local r = outer(1)
print("r", r)
EOF

cat > t_move.lua <<'EOF'
local total = 0
local function add(v)
  -- add v to the total

  total = total + v
end
add(1)
add(2)
print("total", total)
EOF

cat > t_nest.lua <<'EOF'
local function outer()
  local function helper(x)

    return x * 3
  end
  local y = helper(2)
  return y
end
print(outer())
EOF

cat > t_loop.lua <<'EOF'
local acc = 0
for i = 1, 5 do
  acc = acc + i
end
print("acc", acc)
EOF

cat > t_tail.lua <<'EOF'
local trace = {}
local function leaf(n)
  local r = n + 1
  return r
end
local function mid(n)
  return leaf(n * 10)
end
local function top(n)
  local v = mid(n)
  return v
end
print("out", top(1))
EOF

cat > t_co.lua <<'EOF'
local results = {}
local function producer(n)
  for i = 1, n do
    coroutine.yield(i * i)
  end
  return "done"
end
local co = coroutine.create(producer)
local sum = 0
while true do
  local ok, v = coroutine.resume(co, 3)
  if v == "done" then break end
  sum = sum + v
end
print("sum", sum)
EOF

cat > t_up.lua <<'EOF'
local count = 10
local function bump()
  count = count + 1
  breakpoint()
  return count
end
print("bump", bump())
print("count", count)
EOF

cat > t_pm.lua <<'EOF'
local function divide(a, b)
  local note = "dividing"
  if b == 0 then error("division by zero") end
  return a / b
end
local results = {}
for i = 2, 0, -1 do
  results[#results + 1] = divide(10, i)
end
EOF

cat > t_quit.lua <<'EOF'
count = 0
for i = 1, 3 do
  pcall(function()
    breakpoint()
    count = count + 1
  end)
end
EOF

mkdir -p sub
cat > sub/t_deep.lua <<'EOF'
local v = 1
-- a comment
v = v + 1
print("v", v)
EOF

# ---- breakpoint() -------------------------------------------------------------

check "breakpoint(): stops at the next line, locals, a local assigned" \
    'locals\nx = 42\nc\n' \
    "stopped at t_bp.lua:4 (in function 'scale')
    4 ->   return x
v = 5
x = 10
result	42" -- "$EMBER" t_bp.lua

check "an error in evaluated code keeps the prompt" \
    'p nosuch.field\np v + 1\nc\n' \
    "stopped at t_bp.lua:4 (in function 'scale')
    4 ->   return x
6
result	10" -- "$EMBER" t_bp.lua
err_has "an error in evaluated code is printed" "attempt to index a nil value"

check "upvalues listed and assigned" \
    'upvalues\ncount = 100\nc\n' \
    "stopped at t_up.lua:5 (in function 'bump')
    5 ->   return count
count = 11
bump	100
count	100" -- "$EMBER" t_up.lua

# locals and upvalues list one line per value for modules, classes and
# objects (a model, an optimizer, a Size): never the tables behind them
cat > t_vals.lua <<'EOF'
local nn = ember.nn
local model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
local opt = ember.optim.SGD(model:parameters(), {lr = 0.1})
local cls = nn.Linear
local Point = {__name = "Point"}
Point.__index = Point
function Point.norm(p) return math.sqrt(p.x ^ 2 + p.y ^ 2) end
local p = setmetatable({x = 3, y = 4}, Point)
local data = {xs = {1, 2, 3}, name = "run", t = ember.zeros(2, 3)}
local shape = data.t.shape
local function f() return nn, model end
breakpoint()
print("done", select("#", f()))
EOF
printf 'locals\nc\n' | "$EMBER" t_vals.lua > out 2> err; rc=$?
want_re='^stopped at t_vals\.lua:13 \(in main chunk\)
   13 -> print\("done", select\("#", f\(\)\)\)
nn = module ember\.nn \{[A-Za-z0-9_, ]+, \.\.\. \([0-9]+ more\)\}
model = Sequential\(\(0\): Linear\(in_features=4, out_features=8, bias=true\)[^
]*
opt = SGD ?\([^
]*
cls = class Linear \{[a-z_, ]*forward[^
]*\}
Point = class Point \{norm\}
p = Point \{x = 3, y = 4\}
data = \{name = "run", t = tensor\(float32, \[2, 3\], cpu\), xs = \{1, 2, 3\}\}
shape = ember\.Size\(\{2, 3\}\)
f = function: 0x[0-9a-f]+ \(t_vals\.lua:11\)
done	2$'
if [[ "$(cat out)" =~ $want_re ]] && [ "$(wc -L < out)" -le 80 ]; then
    ok "locals: one line per module, class and object, plain data in full"
else not_ok "locals: one line per module, class and object, plain data in full" "status $rc" "$(head -c 2000 out)" \
    "stderr: $(head -c 600 err)"; fi
printf 's\nupvalues\nc\n' | "$EMBER" t_vals.lua > out 2> err; rc=$?
want_re='
nn = module ember\.nn \{[^
]*\}
model = Sequential\([^
]*
done	2$'
if [[ "$(cat out)" =~ $want_re ]] && [ "$(wc -l < out)" -eq 7 ]; then ok "upvalues: the same one line per module and object"
else not_ok "upvalues: the same one line per module and object" "status $rc" "$(head -c 2000 out)" \
    "stderr: $(head -c 600 err)"; fi

# ---- -d, file:line breakpoints, stepping -------------------------------------------

check "-d stops at the first line; break file:line; step into; next; bt" \
    'break t_step.lua:7\nc\ns\nbt\nn\nn\nn\nn\nc\n' \
    "stopped at t_step.lua:1 (in main chunk)
    1 -> local calls = 0
breakpoint 1 at t_step.lua:7
breakpoint 1: stopped at t_step.lua:7 (in function 'outer')
    7 ->   local m = inner(n)
stopped at t_step.lua:3 (in function 'inner')
    3 ->   local b = a + 1
*  0  t_step.lua:3 in function 'inner'
   1  t_step.lua:7 in function 'outer'
   2  t_step.lua:11 in main chunk
stopped at t_step.lua:4 (in function 'inner')
    4 ->   return b
stopped at t_step.lua:8 (in function 'outer')
    8 ->   print(\"inner gave\", m)
inner gave	2
stopped at t_step.lua:9 (in function 'outer')
    9 ->   return m * 2
stopped at t_step.lua:12 (in main chunk)
   12 -> print(\"r\", r)
r	4" -- "$EMBER" -d t_step.lua

check "next steps over a call; an empty line repeats it" \
    'break t_step.lua:7\nc\nn\n\n\nc\n' \
    "stopped at t_step.lua:1 (in main chunk)
    1 -> local calls = 0
breakpoint 1 at t_step.lua:7
breakpoint 1: stopped at t_step.lua:7 (in function 'outer')
    7 ->   local m = inner(n)
stopped at t_step.lua:8 (in function 'outer')
    8 ->   print(\"inner gave\", m)
inner gave	2
stopped at t_step.lua:9 (in function 'outer')
    9 ->   return m * 2
stopped at t_step.lua:12 (in main chunk)
   12 -> print(\"r\", r)
r	4" -- "$EMBER" -d t_step.lua

check "finish prints the return values and stops in the caller" \
    'break t_step.lua:3\nc\nfinish\nc\n' \
    "stopped at t_step.lua:1 (in main chunk)
    1 -> local calls = 0
breakpoint 1 at t_step.lua:3
breakpoint 1: stopped at t_step.lua:3 (in function 'inner')
    3 ->   local b = a + 1
function 'inner' returned 2
stopped at t_step.lua:7 (in function 'outer')
    7 ->   local m = inner(n)
inner gave	2
r	4" -- "$EMBER" -d t_step.lua

check "up selects the caller: its locals, its line" \
    'break t_step.lua:3\nc\nup\nlocals\nbt\ndown\nc\n' \
    "stopped at t_step.lua:1 (in main chunk)
    1 -> local calls = 0
breakpoint 1 at t_step.lua:3
breakpoint 1: stopped at t_step.lua:3 (in function 'inner')
    3 ->   local b = a + 1
frame 1: t_step.lua:7 (in function 'outer')
    7 ->   local m = inner(n)
n = 1
   0  t_step.lua:3 in function 'inner'
*  1  t_step.lua:7 in function 'outer'
   2  t_step.lua:11 in main chunk
frame 0: t_step.lua:3 (in function 'inner')
    3 ->   local b = a + 1
inner gave	2
r	4" -- "$EMBER" -d t_step.lua

check "list: the lines around the current one" \
    'break t_step.lua:8\nc\nlist\nc\n' \
    "stopped at t_step.lua:1 (in main chunk)
    1 -> local calls = 0
breakpoint 1 at t_step.lua:8
breakpoint 1: stopped at t_step.lua:8 (in function 'outer')
    8 ->   print(\"inner gave\", m)
    3      local b = a + 1
    4      return b
    5    end
    6    local function outer(n)
    7      local m = inner(n)
    8 ->   print(\"inner gave\", m)
    9      return m * 2
   10    end
   11    local r = outer(1)
   12    print(\"r\", r)
inner gave	2
r	4" -- "$EMBER" -d t_step.lua

check "a line without code moves to the next line with code, and says so" \
    'break t_move.lua:3\nbreaks\nc\np v\nc\nc\n' \
    "stopped at t_move.lua:1 (in main chunk)
    1 -> local total = 0
breakpoint 1 moved from t_move.lua:3 to line 5
1   t_move.lua:3 (at line 5)  enabled  hits 0
breakpoint 1: stopped at t_move.lua:5 (in function 'add')
    5 ->   total = total + v
1
breakpoint 1: stopped at t_move.lua:5 (in function 'add')
    5 ->   total = total + v
total	3" -- "$EMBER" -d t_move.lua

check "a line inside a nested function moves within that function" \
    'break t_nest.lua:3\nc\np x\nc\n' \
    "stopped at t_nest.lua:8 (in main chunk)
    8 -> end
breakpoint 1 moved from t_nest.lua:3 to line 4
breakpoint 1: stopped at t_nest.lua:4 (in function 'helper')
    4 ->     return x * 3
2
6" -- "$EMBER" -d t_nest.lua

check "a condition: stops only where it holds" \
    'break t_loop.lua:3 if i == 4\nc\np i, acc\nc\n' \
    "stopped at t_loop.lua:1 (in main chunk)
    1 -> local acc = 0
breakpoint 1 at t_loop.lua:3
breakpoint 1: stopped at t_loop.lua:3 (in main chunk)
    3 ->   acc = acc + i
4	6
acc	15" -- "$EMBER" -d t_loop.lua

check "hits N: stops from the Nth hit on; disable" \
    'break t_loop.lua:3 hits 2\nc\np i\nc\np i\nbreaks\ndisable 1\nc\n' \
    "stopped at t_loop.lua:1 (in main chunk)
    1 -> local acc = 0
breakpoint 1 at t_loop.lua:3
breakpoint 1: stopped at t_loop.lua:3 (in main chunk)
    3 ->   acc = acc + i
2
breakpoint 1: stopped at t_loop.lua:3 (in main chunk)
    3 ->   acc = acc + i
3
1   t_loop.lua:3  enabled  hits 3, stops from 2
acc	15" -- "$EMBER" -d t_loop.lua

check "display: shown at each stop until undisplay" \
    'break t_loop.lua:3\nc\ndisplay acc * 10\nc\nundisplay 1\nc\ndelete\nc\n' \
    "stopped at t_loop.lua:1 (in main chunk)
    1 -> local acc = 0
breakpoint 1 at t_loop.lua:3
breakpoint 1: stopped at t_loop.lua:3 (in main chunk)
    3 ->   acc = acc + i
1: acc * 10 = 0
breakpoint 1: stopped at t_loop.lua:3 (in main chunk)
    3 ->   acc = acc + i
1: acc * 10 = 10
breakpoint 1: stopped at t_loop.lua:3 (in main chunk)
    3 ->   acc = acc + i
deleted 1 breakpoint
acc	15" -- "$EMBER" -d t_loop.lua

check "a file named by a path suffix: pending, then placed (and moved) when it runs" \
    'break t_deep.lua:2\nc\nc\n' \
    "stopped at sub/t_deep.lua:1 (in main chunk)
    1 -> local v = 1
breakpoint 1 pending at t_deep.lua:2 (no such file here; it is placed when code from a file ending in t_deep.lua runs)
breakpoint 1 moved from t_deep.lua:2 to line 3
breakpoint 1: stopped at sub/t_deep.lua:3 (in main chunk)
    3 -> v = v + 1
v	2" -- "$EMBER" -d sub/t_deep.lua

check "a suffix matches only at a '/': eep.lua is not t_deep.lua" \
    'break eep.lua:3\nc\n' \
    "stopped at sub/t_deep.lua:1 (in main chunk)
    1 -> local v = 1
breakpoint 1 pending at eep.lua:3 (no such file here; it is placed when code from a file ending in eep.lua runs)
v	2" -- "$EMBER" -d sub/t_deep.lua

# ---- tail calls and coroutines ------------------------------------------------------

check "next over 'return f(x)' stops in the caller, not in f" \
    'break t_tail.lua:7\nc\nn\nc\n' \
    "stopped at t_tail.lua:1 (in main chunk)
    1 -> local trace = {}
breakpoint 1 at t_tail.lua:7
breakpoint 1: stopped at t_tail.lua:7 (in function 'mid')
    7 ->   return leaf(n * 10)
stopped at t_tail.lua:11 (in function 'top')
   11 ->   return v
out	11" -- "$EMBER" -d t_tail.lua

check "finish in a tail-called function stops when the logical frame returns" \
    'break t_tail.lua:3\nc\nbt\nfinish\nc\n' \
    "stopped at t_tail.lua:1 (in main chunk)
    1 -> local trace = {}
breakpoint 1 at t_tail.lua:3
breakpoint 1: stopped at t_tail.lua:3 (in function <t_tail.lua:2>, tail-called)
    3 ->   local r = n + 1
*  0  t_tail.lua:3 in function <t_tail.lua:2>, tail-called
   1  t_tail.lua:10 in function 'top'
   2  t_tail.lua:13 in main chunk
function <t_tail.lua:2> returned 11
stopped at t_tail.lua:10 (in function 'top')
   10 ->   local v = mid(n)
out	11" -- "$EMBER" -d t_tail.lua

check "a breakpoint in a coroutine; next at a yield stops in the resumer" \
    'break t_co.lua:4\nc\nlocals\nn\nc\nc\nc\n' \
    "stopped at t_co.lua:1 (in main chunk)
    1 -> local results = {}
breakpoint 1 at t_co.lua:4
breakpoint 1: stopped at t_co.lua:4 (in function <t_co.lua:2>)
    4 ->     coroutine.yield(i * i)
n = 3
i = 1
stopped at t_co.lua:12 (in main chunk)
   12 ->   if v == \"done\" then break end
breakpoint 1: stopped at t_co.lua:4 (in function <t_co.lua:2>)
    4 ->     coroutine.yield(i * i)
breakpoint 1: stopped at t_co.lua:4 (in function <t_co.lua:2>)
    4 ->     coroutine.yield(i * i)
sum	14" -- "$EMBER" -d t_co.lua

check "step into coroutine.resume of a coroutine made before the breakpoint" \
    'break t_co.lua:11\nc\ns\ndelete\nc\n' \
    "stopped at t_co.lua:1 (in main chunk)
    1 -> local results = {}
breakpoint 1 at t_co.lua:11
breakpoint 1: stopped at t_co.lua:11 (in main chunk)
   11 ->   local ok, v = coroutine.resume(co, 3)
stopped at t_co.lua:3 (in function <t_co.lua:2>)
    3 ->   for i = 1, n do
deleted 1 breakpoint
sum	14" -- "$EMBER" -d t_co.lua

# ---- post-mortem (run.c keeps the dead coroutine; --pm opens it) -------------------

check "post-mortem: the raising frame, its locals, the caller's" \
    'bt\nlocals\nup\np i, #results\nc\n' \
    "post-mortem: t_pm.lua:3: division by zero
stopped at t_pm.lua:3 (in function 'divide')
    3 ->   if b == 0 then error(\"division by zero\") end
*  0  t_pm.lua:3 in function 'divide'
   1  t_pm.lua:8 in main chunk
a = 10
b = 0
note = \"dividing\"
frame 1: t_pm.lua:8 (in main chunk)
    8 ->   results[#results + 1] = divide(10, i)
0	2" -- "$EMBER" --pm t_pm.lua
status_is "post-mortem: the script still fails" 1

check ":pm in the shell after an error; step just leaves" \
    'dofile("t_pm.lua")\n:pm\np b\nn\nprint("after")\n' \
    "post-mortem: t_pm.lua:3: division by zero
stopped at t_pm.lua:3 (in function 'divide')
    3 ->   if b == 0 then error(\"division by zero\") end
0
post-mortem: the thread has ended; leaving the debugger
after" -- "$EMBER"

# ---- quit ---------------------------------------------------------------------------

check "quit aborts the running code (a pcall does not catch it); the shell goes on" \
    'dofile("t_quit.lua")\nq\nprint("count", count)\n' \
    "stopped at t_quit.lua:5 (in function <t_quit.lua:3>)
    5 ->     count = count + 1
count	0" -- "$EMBER"

# needs run.c to leave a debugger quit alone (no post-mortem, no traceback)
check "quit under -d: the run ends without a post-mortem" \
    'q\n' \
    "stopped at t_step.lua:1 (in main chunk)
    1 -> local calls = 0" -- "$EMBER" -d t_step.lua
status_is "quit under -d: exit status 1" 1

# ---- the REPL's commands ---------------------------------------------------------------

check ":break, :breaks, :disable, :delete from the shell" \
    ':break t_loop.lua:3 if i == 2\n:breaks\ndofile("t_loop.lua")\np i\nc\n:disable 1\n:breaks\n:delete 1\n:breaks\n' \
    "breakpoint 1 at t_loop.lua:3
1   t_loop.lua:3  enabled  hits 0  if i == 2
breakpoint 1: stopped at t_loop.lua:3 (in main chunk)
    3 ->   acc = acc + i
2
acc	15
1   t_loop.lua:3  disabled  hits 1  if i == 2
no breakpoints" -- "$EMBER"

check ":break refuses bad input" \
    ':break nofile\n:break t_loop.lua:99\n:break t_loop.lua:3 if i ==\n:disable 7\n:break t_loop.lua:3 hits x\n:breaks\n' \
    "no breakpoints" -- "$EMBER"
err_has ":break without a line" "'nofile' is not file:line"
err_has ":break past the last line" "no code at or after line 99 in t_loop.lua"
err_has ":break with a bad condition" "bad condition"
err_has ":disable of a missing breakpoint" "no breakpoint 7"
err_has ":break with a bad hit count" "hits needs a positive count"

check "a breakpoint in a function never called does not stop" \
    ':break t_step.lua:3\n:disable 1\n:enable 1\ndofile("t_loop.lua")\n' \
    "breakpoint 1 at t_step.lua:3
acc	15" -- "$EMBER"

echo "1..$n"
[ "$failed" -eq 0 ]
