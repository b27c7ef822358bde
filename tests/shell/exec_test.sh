#!/usr/bin/env bash
# exec_test.sh — the ember executable's command line and piped REPL (TAP).
# EMBER is the executable (tests/run.sh sets it); default build/ember.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/shell/tap.sh
# check NAME EXPECTED_RC EXPECTED_STDOUT -- command...: runs the command,
# compares its exit status and its whole stdout.
check() {
    local name=$1 want_rc=$2 want_out=$3
    shift 4
    "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
    local out; out=$(cat "$tmp/out")
    if [ "$rc" = "$want_rc" ] && [ "$out" = "$want_out" ]; then ok "$name"
    else not_ok "$name" "status $rc (expected $want_rc)" "stdout: $out" "expected: $want_out" \
                "stderr: $(head -c 600 "$tmp/err")"
    fi
}
# err_has NAME PATTERN: the last command's stderr matches the grep pattern
err_has() {
    if grep -qE -- "$2" "$tmp/err"; then ok "$1"
    else not_ok "$1" "stderr lacks /$2/:" "$(head -c 600 "$tmp/err")"; fi
}

check "-e runs a statement" 0 "2" -- "$EMBER" -e 'print(1+1)'
check "several -e run in order" 0 "$(printf 'a\nb')" -- "$EMBER" -e 'x = "a"' -e 'print(x)' -e 'print("b")'
check "-e with the argument attached" 0 "7" -- "$EMBER" '-eprint(7)'
"$EMBER" -v > "$tmp/out" 2>&1; rc=$?
if [ $rc = 0 ] && grep -qE '^ember [0-9]+\.[0-9]+\.[0-9]+ \(Lua 5\.4\.[0-9]+\)$' "$tmp/out"; then ok "-v: version line"
else not_ok "-v: version line" "status $rc" "$(cat "$tmp/out")"; fi
"$EMBER" -h > "$tmp/out" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q '^usage: ember' "$tmp/out" && grep -q -- '-e stat' "$tmp/out"; then ok "-h prints usage"
else not_ok "-h prints usage" "status $rc" "$(cat "$tmp/out")"; fi
"$EMBER" --help > "$tmp/out" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q '^usage: ember' "$tmp/out"; then ok "--help prints usage"
else not_ok "--help prints usage" "status $rc" "$(cat "$tmp/out")"; fi

check "unknown option exits 1" 1 "" -- "$EMBER" -x
err_has "unknown option: message and usage on stderr" "unrecognized option '-x'"
err_has "unknown option: usage" "^usage: ember"
check "-e without its argument exits 1" 1 "" -- "$EMBER" -e
err_has "-e without argument: message" "'-e' needs argument"

# scripts and arg
cat > "$tmp/args.lua" <<'EOF'
print(arg[0], arg[1], arg[2], #arg)
print(...)
print(arg[-1] ~= nil)
EOF
check "script gets arg[0], arg[1..] and ..." 0 "$(printf '%s\ta\tb c\t2\na\tb c\ntrue' "$tmp/args.lua")" \
    -- "$EMBER" "$tmp/args.lua" a "b c"
printf 'print(arg[-2], arg[-1], arg[0], arg[1])\n' > "$tmp/neg.lua"
check "arg[-2], arg[-1] hold the interpreter options" 0 "-e	x=1	$tmp/neg.lua	z" \
    -- "$EMBER" -e 'x=1' "$tmp/neg.lua" z
printf 'print(select("#", ...), ...)\n' > "$tmp/varargs.lua"
check "-- before the script: later options are script arguments" 0 "$(printf '1\t-v')" \
    -- "$EMBER" -- "$tmp/varargs.lua" -v
check "no script arguments: ... is empty" 0 "0" -- "$EMBER" "$tmp/varargs.lua"

cat > "$tmp/fail.lua" <<'EOF'
local function inner() error("boom in script") end
inner()
EOF
check "a script error exits 1" 1 "" -- "$EMBER" "$tmp/fail.lua"
err_has "the error message is on stderr" "fail.lua:1: boom in script"
err_has "with a stack traceback" "stack traceback"
check "a missing script exits 1" 1 "" -- "$EMBER" "$tmp/nonexistent.lua"
err_has "missing script: message" "cannot open"
check "an -e error exits 1" 1 "" -- "$EMBER" -e 'error("bad -e")'
err_has "-e error: message" "bad -e"
check "a syntax error exits 1" 1 "" -- "$EMBER" -e 'x = = 1'
check "os.exit status is kept" 3 "" -- "$EMBER" -e 'os.exit(3)'

printf 'print("from stdin", ...)\n' > "$tmp/stdin.lua"
check "- runs stdin as a script" 0 "$(printf 'from stdin\tq')" -- bash -c '"$0" - q < "$1"' "$EMBER" "$tmp/stdin.lua"

# -l
mkdir -p "$tmp/mods"
printf 'return {answer = 42}\n' > "$tmp/mods/mymod.lua"
check "-l requires a module into a global" 0 "42" \
    -- env LUA_PATH="$tmp/mods/?.lua" "$EMBER" -l mymod -e 'print(mymod.answer)'
check "-l g=mod names the global" 0 "42" \
    -- env LUA_PATH="$tmp/mods/?.lua" "$EMBER" -l m=mymod -e 'print(m.answer)'

# EMBER_INIT, -E
check "EMBER_INIT runs first" 0 "5" -- env EMBER_INIT='y = 5' "$EMBER" -e 'print(y)'
check "-E ignores EMBER_INIT" 0 "nil" -- env EMBER_INIT='y = 5' "$EMBER" -E -e 'print(y)'

# the ember module is pre-loaded
check "ember is a global and require returns it" 0 "true" \
    -- "$EMBER" -e 'print(require("ember") == ember and type(ember) == "table")'
check "tensors print through __tostring" 0 "$(printf 'tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]])')" \
    -- "$EMBER" -e 'print(ember.tensor({{1.5, 2}, {3, 4}}))'
"$EMBER" -e 'local x = ember.randn(3,4); print(x:matmul(x:t()):sum())' > "$tmp/out" 2> "$tmp/err"; rc=$?
if [ $rc = 0 ] && grep -qE '^tensor\(-?[0-9.e+-]+\)$|^-?[0-9.e+-]+$' "$tmp/out"; then ok "randn/matmul/sum print a number"
else not_ok "randn/matmul/sum print a number" "status $rc" "$(cat "$tmp/out" "$tmp/err")"; fi

# the REPL on a pipe: no prompts, values printed, errors do not end it
check "piped expression is printed" 0 "2" -- bash -c 'printf "1+1\n" | "$0"' "$EMBER"
check "piped print" 0 "2" -- bash -c 'echo "print(1+1)" | "$0"' "$EMBER"
check "several values, nil and strings" 0 "$(printf '1\tx\tnil\nhello')" \
    -- bash -c 'printf "1, \"x\", nil\n\"hello\"\n" | "$0"' "$EMBER"
check "statements print nothing" 0 "" -- bash -c 'printf "local a = 1\nx = 2\n" | "$0"' "$EMBER"
check "the session goes on after an error" 0 "$(printf '1\n3')" \
    -- bash -c 'printf "1\nerror(\"oops\")\n3\n" | "$0"' "$EMBER"
err_has "the error is reported with its message" "oops"
err_has "and a traceback" "stack traceback"
check "a syntax error does not end the session" 0 "4" \
    -- bash -c 'printf "x = = 1\n2+2\n" | "$0"' "$EMBER"
err_has "the syntax error is reported" "unexpected symbol"
check "a function over three lines" 0 "42" \
    -- bash -c 'printf "function f(a)\n  return a * 2\nend\nf(21)\n" | "$0"' "$EMBER"
check "a multi-line table expression" 0 "3" \
    -- bash -c 'printf "t = {\n1,\n2, 3}\n#t\n" | "$0"' "$EMBER"
check "=expr is return expr" 0 "6" -- bash -c 'printf "=2*3\n" | "$0"' "$EMBER"
check "globals persist between lines" 0 "10" -- bash -c 'printf "x = 10\nx\n" | "$0"' "$EMBER"
check "a tensor value prints" 0 "tensor([1, 2, 3])" \
    -- bash -c 'printf "ember.tensor({1, 2, 3})\n" | "$0"' "$EMBER"
check "input ending inside a statement is an error, not a hang" 0 "" \
    -- bash -c 'printf "function f()\n" | "$0"' "$EMBER"
err_has "unfinished statement: the compiler's message" "expected"
check "CRLF line ends" 0 "5" -- bash -c 'printf "2+3\r\n" | "$0"' "$EMBER"
version=$("$EMBER" -v)
check "-i after -e enters the REPL (and prints the version)" 0 "$(printf '%s\n8' "$version")" \
    -- bash -c 'printf "y * 2\n" | "$0" -e "y = 4" -i' "$EMBER"
check "-i after a script" 0 "$(printf '%s\n1\ta\n1' "$version")" \
    -- bash -c 'printf "#arg\n" | "$0" -i "$1" a' "$EMBER" "$tmp/varargs.lua"
check "-v with a script prints both" 0 "$(printf '%s\n0' "$version")" \
    -- "$EMBER" -v "$tmp/varargs.lua"

# ':' commands given bad input: a message, and the session goes on
repl_err() { # NAME INPUT PATTERN: the REPL still answers 1+1 after INPUT, stderr matches
    check "$1: the session goes on" 0 "2" -- bash -c 'printf "%s\n1+1\n" "$1" | "$0"' "$EMBER" "$2"
    err_has "$1: the message" "$3"
}
repl_err ":time with nothing to time" ":time" ":time: nothing to time"
repl_err ":time -n with a bad count" ":time -n x 1" ":time: -n needs a positive count"
repl_err ":load without a file" ":load" ":load: which file"
repl_err ":load of a missing file" ":load $tmp/missing.lua" "cannot open .*missing.lua"
repl_err ":! without a command" ":!" ":! needs a command"
repl_err ":pause with a bad argument" ":pause maybe" ":pause: expected on or off"
repl_err ":pm before any error" ":pm" ":pm: no error to inspect"
repl_err "an unknown command" ":frobnicate" "unknown command ':frobnicate'"
repl_err "a yield at the top level" "coroutine.yield(1)" "attempt to yield from outside a coroutine"
check ":vars lists what the user made, with a summary" 0 \
    "$(printf '  s                    string    "abc"\n  t                    userdata  tensor(float32, [2, 3], cpu)\n  tb                   table     2 fields')" \
    -- bash -c 'printf "t = ember.zeros(2, 3)\ns = \"abc\"\ntb = {1, x = 2}\n:vars\n" | "$0"' "$EMBER"
printf '%s\n' 'm = ember.nn.Linear(2, 3)' 'cls = ember.nn.Linear' 'mods = ember.nn' 'sz = ember.zeros(2, 3).shape' \
    'opt = ember.optim.SGD(m:parameters(), {lr = 0.1})' 'tb = {1, x = {2, 3}}' ':vars' | "$EMBER" > "$tmp/out" 2> "$tmp/err"
want_re='^  cls                  table     class Linear \{[^
]*\}
  m                    table     Linear\(in_features=2, out_features=3, [^
]*
  mods                 table     module ember\.nn \{[^
]*\}
  opt                  table     SGD ?\([^
]*
  sz                   table     ember\.Size\(\{2, 3\}\)
  tb                   table     2 fields$'
if [[ "$(cat "$tmp/out")" =~ $want_re ]] && [ "$(wc -L < "$tmp/out")" -le 80 ]; then
    ok ":vars: one line for a model, a class, a module, an optimizer, a Size"
else not_ok ":vars: one line for a model, a class, a module, an optimizer, a Size" "$(head -c 1500 "$tmp/out")" \
    "stderr: $(head -c 600 "$tmp/err")"; fi
check ":vars leaves out nn, optim and plot once used (the shell's, loaded on first use)" 0 \
    "$(printf '  k                    number    3')" \
    -- bash -c 'printf "k = #nn.Linear(2, 3):parameters() + (optim.SGD and 1 or 0)\n:vars\n" | "$0"' "$EMBER"
check ":vars lists a global of the user's that took one of those names" 0 \
    "$(printf '  nn                   number    5')" \
    -- bash -c 'printf "nn = 5\n:vars\n" | "$0"' "$EMBER"
check "-d with a bad suffix is a usage error" 1 "" -- "$EMBER" -dx "$tmp/varargs.lua"
err_has "-dx: the usage names it" "unrecognized option '-dx'"

echo "1..$n"
[ $failed = 0 ]
