#!/usr/bin/env bash
# print_complete_test.sh — the REPL's value printer (shell/print.c) and tab
# completion (shell/complete.c), through the executable (TAP).
# Piped input: results print as on a terminal but without colours, and
# ":complete TEXT" prints what Tab offers at the end of TEXT. A few checks
# need a pseudo-terminal (Tab itself, colours): they use python3's pexpect
# and are skipped without it.
# EMBER is the executable (tests/run.sh sets it); default build/ember.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export EMBER_HISTORY=$tmp/history
unset EMBER_INIT
. tests/shell/tap.sh
# repl INPUT: feeds the lines to the REPL; stdout in $tmp/out, stderr in $tmp/err
repl() {
    printf '%s\n' "$1" | "$EMBER" > "$tmp/out" 2> "$tmp/err"
}
# check NAME INPUT EXPECTED: the REPL's whole stdout for INPUT
check() {
    repl "$2"
    local out; out=$(cat "$tmp/out")
    if [ "$out" = "$3" ]; then ok "$1"
    else not_ok "$1" "input: $2" "stdout:" "$out" "expected:" "$3" "stderr: $(head -c 600 "$tmp/err")"; fi
}
# check_re NAME INPUT REGEX: the whole stdout matches the extended regex
check_re() {
    repl "$2"
    local out; out=$(cat "$tmp/out")
    if [[ "$out" =~ $3 ]]; then ok "$1"
    else not_ok "$1" "input: $2" "stdout:" "$out" "expected /$3/" "stderr: $(head -c 600 "$tmp/err")"; fi
}
lines() { printf '%s\n' "$@"; }

# ---- the printer: scalars and strings ---------------------------------------
check "a table prints on one line" $'x = {1, 2}\nx' "{1, 2}"
check "a string at the top level prints raw" '"abc"' "abc"
check "several values: tab separated, integers and floats apart" '1, 2.0, nil, true, false' \
    "$(printf '1\t2.0\tnil\ttrue\tfalse')"
check "named fields" '{a = 1, b = "x"}' '{a = 1, b = "x"}'
check "numbers inside tables as Lua writes them" '{1.0, 1/0, 0.1, 3, -0.5}' '{1.0, inf, 0.1, 3, -0.5}'
check "nested strings are quoted with escapes" '{"a\"b\n\t\\", "\1", "\0012", "\127"}' \
    '{"a\"b\n\t\\", "\1", "\0012", "\127"}'
check "UTF-8 stays, stray bytes are escaped" '{"é\255", "\xe2\x82"}' '{"é\255", "\226\130"}'
check "a string at the top level is not escaped" '"a\tb"' "$(printf 'a\tb')"

# ---- keys ----------------------------------------------------------------------
check "array part first, then numbers, then strings (sorted)" \
    '{[2.5] = 1, z = 1, [10] = 1, a = 1, 3, 4}' '{3, 4, [2.5] = 1, [10] = 1, a = 1, z = 1}'
check "keys that are not identifiers are bracketed" '{["a b"] = 1, ["end"] = 2, _x = 3}' \
    '{_x = 3, ["a b"] = 1, ["end"] = 2}'
check "holes end the array part" '{[1] = "a", [3] = "c", [0] = "z"}' '{"a", [0] = "z", [3] = "c"}'
check "other keys after strings, by type name" '{[true] = 1, [false] = 2, [-1] = 3, s = 4}' \
    '{[-1] = 3, s = 4, [false] = 2, [true] = 1}'

# ---- layout --------------------------------------------------------------------
check "80 columns fit on one line" '{("a"):rep(76)}' "{\"$(printf 'a%.0s' {1..76})\"}"
check "81 columns do not" '{("a"):rep(77)}' "$(lines '{' "  \"$(printf 'a%.0s' {1..77})\"" '}')"
x60=$(printf 'x%.0s' {1..60})
check "fields one per line, each on one line when it fits" '{a = {("x"):rep(60)}, b = {1, 2}}' \
    "$(lines '{' "  a = {\"$x60\"}," '  b = {1, 2}' '}')"
x69=$(printf 'x%.0s' {1..69}) x70=$(printf 'x%.0s' {1..70})
check "a field with its comma ending at column 80 stays on one line" '{a = {("x"):rep(69)}, b = 1}' \
    "$(lines '{' "  a = {\"$x69\"}," '  b = 1' '}')"
check "one column more and it is split too, indented by level" '{a = {("x"):rep(70)}, b = 1}' \
    "$(lines '{' '  a = {' "    \"$x70\"" '  },' '  b = 1' '}')"
check "empty tables" '{}, {{}, a = {}}' "$(printf '{}\t{{}, a = {}}')"

# ---- depth, size, cycles -----------------------------------------------------------
check "depth 4 is shown, depth 5 is {...}" '{a = {b = {c = {d = {e = 1}}}}}' '{a = {b = {c = {d = {...}}}}}'
check "depth 4 shown in full" '{a = {b = {c = {d = 1}}}}' '{a = {b = {c = {d = 1}}}}'
check "an empty table at depth 5 is {}" '{{{{{}}}}}' '{{{{{}}}}}'
check "150 fields: 100 shown, then a count" \
    $'t = {}\nfor i = 1, 150 do t[i] = i end\nt' \
    "$(echo '{'; for i in $(seq 1 100); do echo "  $i,"; done; echo '  ... (50 more)'; echo '}')"
check "the count covers array and named fields" \
    $'t = {}\nfor i = 1, 60 do t[i] = i; t[string.format("k%03d", i)] = i end\nt' \
    "$(echo '{'; for i in $(seq 1 60); do echo "  $i,"; done
       for i in $(seq 1 40); do printf '  k%03d = %d,\n' "$i" "$i"; done; echo '  ... (20 more)'; echo '}')"
repl $'t = {}\nt.self = t\nt\nprint(tostring(t))'
addr=$(sed -n 2p "$tmp/out")
if [ "$(sed -n 1p "$tmp/out")" = "{self = <cycle: $addr>}" ] && [[ "$addr" =~ ^table:\ 0x[0-9a-f]+$ ]]; then
    ok "a cycle is marked with the table's address"
else not_ok "a cycle is marked with the table's address" "$(cat "$tmp/out" "$tmp/err")"; fi
check "a shared table is not a cycle" $'s = {1}\n{s, s, {s}}' '{{1}, {1}, {{1}}}'
repl $'a = {}\nb = {a = a}\na.b = b\n{a}\nprint(tostring(a))'
addr=$(sed -n 2p "$tmp/out")
if [ "$(sed -n 1p "$tmp/out")" = "{{b = {a = <cycle: $addr>}}}" ]; then ok "a cycle through two tables"
else not_ok "a cycle through two tables" "$(cat "$tmp/out" "$tmp/err")"; fi

# ---- values with metatables ----------------------------------------------------------
check "__tostring at the top level and nested" \
    $'o = setmetatable({}, {__tostring = function() return "OBJ" end})\no\n{o, k = o}' \
    "$(lines 'OBJ' '{OBJ, k = OBJ}')"
check "an error in __tostring is shown, the session goes on" \
    $'e = setmetatable({}, {__tostring = function() error("bad", 0) end})\ne\n{e}\n1 + 1' \
    "$(lines '<error in __tostring: bad>' '{<error in __tostring: bad>}' 2)"
check "an error object that is not a string" \
    $'setmetatable({}, {__tostring = function() error({}) end})' \
    '<error in __tostring: (error object is a table value)>'
check "a multi-line __tostring inside a table is indented" \
    $'m = setmetatable({}, {__tostring = function() return "L1\\nL2" end})\n{key = m}' \
    "$(lines '{' '  key = L1' '        L2' '}')"
check "printing never calls __index, __pairs or __len" \
    $'n = 0\nc = setmetatable({1, x = 2}, {__index = function() n = n + 1 end, __pairs = function() n = n + 1 return next, {} end, __len = function() n = n + 1 return 0 end})\nc\n{c}\nn\nc.nothing\nn' \
    "$(lines '{1, x = 2}' '{{1, x = 2}}' 0 nil 1)"
repl $'io.stdout ~= nil, {io.stdout}\nprint(io.stdout)'
if [ "$(sed -n 1p "$tmp/out")" = "$(printf 'true\t{%s}' "$(sed -n 2p "$tmp/out")")" ]; then
    ok "userdata print through their __tostring"
else not_ok "userdata print through their __tostring" "$(cat "$tmp/out" "$tmp/err")"; fi
check_re "C functions are builtin" 'print' '^function: builtin: 0x[0-9a-f]+$'
printf 'local x = 1\n\nreturn function()\nend\n' > "$tmp/f.lua"
check_re "Lua functions show where they were defined" "dofile(\"$tmp/f.lua\")" \
    "^function: 0x[0-9a-f]+ \\($tmp/f.lua:3\\)\$"
check_re "functions inside tables" "{f = dofile(\"$tmp/f.lua\")}" \
    "^\\{f = function: 0x[0-9a-f]+ \\($tmp/f.lua:3\\)\\}\$"

# ---- modules and classes: one line, never walked ---------------------------------
# A module: a table package.loaded holds, or one whose fields are mostly
# functions and classes under names. A class: a table with its own __index
# or __name. Each prints as what it is, its name and its public names.
mod=$'M = {value = 3, _hidden = 1}; package.loaded.mymod = M; function M.beta() end; function M.alpha() end'
check "a module is one line: its name and its public names, sorted" "$mod"$'\nM' 'module mymod {alpha, beta, value}'
point=$'Point = {__name = "Point"}; Point.__index = Point; function Point.norm(p) end; function Point.new() end'
check "a class is one line: its __name and its public names" "$point"$'\nPoint' 'class Point {new, norm}'
check "a class without a name or public fields: its size" $'C = {}; C.__index = C\nC' 'class (1 field)'
check "a table of named functions is a module" $'{f = print, g = print, n = 1}' 'module {f, g, n}'
check "inside a table: the kind and the name only" "$mod"$'\n'"$point"$'\n{cls = Point, mod = M, n = 1, u = {f = print, g = print}}' \
    '{cls = class Point, mod = module mymod, n = 1, u = module (2 fields)}'
big=$'big = {}; package.loaded.big = big; for i = 1, 30 do big[string.format("name_%02d", i)] = i end'
check "names fill the line (80 columns), then the count of the rest" "$big"$'\nbig' \
    'module big {name_01, name_02, name_03, name_04, name_05, name_06, ... (24 more)}'
repl 'ember.nn'
if [ "$(wc -l < "$tmp/out")" -eq 1 ] && [ "$(wc -L < "$tmp/out")" -le 80 ] &&
   grep -qE '^module ember\.nn \{[A-Za-z].*, \.\.\. \([0-9]+ more\)\}$' "$tmp/out"; then
    ok "ember.nn is one line (it was 965)"
else not_ok "ember.nn is one line (it was 965)" "$(head -c 600 "$tmp/out")"; fi
repl $'ember\noptim\n_G\nember.nn.functional'
if [ "$(wc -l < "$tmp/out")" -eq 4 ] && [ "$(wc -L < "$tmp/out")" -le 80 ] &&
   [ "$(cut -d' ' -f1-2 "$tmp/out")" = "$(lines 'module ember' 'module ember.optim' 'module _G' 'module ember.nn.functional')" ]; then
    ok "ember, optim, _G, nn.functional: one line each"
else not_ok "ember, optim, _G, nn.functional: one line each" "$(head -c 600 "$tmp/out")"; fi
check_re "nn.Linear is its class line" 'ember.nn.Linear' '^class Linear \{.*forward.*\}$'
check_re "optim.SGD: a class whose fields are private" 'ember.optim.SGD' '^class SGD$'
check_re "modules inside a table are named, not walked" $'_ = nn\npackage.loaded' \
    $'^\\{\n  _G = module _G,\n.*  \\["ember\\.nn"\\] = module ember\\.nn,\n.*  utf8 = module utf8\n\\}$'
# plain data stays data: lists of functions, a function among values, tables
# with a metatable that only supplies defaults or weak keys
check_re "a list of functions is data" '{print, print}' \
    '^\{function: builtin: 0x[0-9a-f]+, function: builtin: 0x[0-9a-f]+\}$'
check_re "one function among values is data" '{f = print, x = 1}' '^\{f = function: builtin: 0x[0-9a-f]+, x = 1\}$'
check "a table with defaults through an __index function is data" \
    $'d = setmetatable({1, 2}, {__index = function() return 0 end})\nd' '{1, 2}'
check "a weak table is data" $'w = setmetatable({a = {1}}, {__mode = "k"})\nw' '{a = {1}}'
check "an object without __tostring: its fields, at the top and inside" \
    "$point"$'\np = setmetatable({x = 3, y = 4}, Point)\np\n{p}' "$(lines '{x = 3, y = 4}' '{{x = 3, y = 4}}')"

# ---- ember.Size ------------------------------------------------------------------
check "t.shape prints as torch.Size does" 'ember.zeros(2, 3).shape' 'ember.Size({2, 3})'
check "t:size() too, and a 0-d size" $'ember.zeros(4):size()\nember.tensor(1).shape' \
    "$(lines 'ember.Size({4})' 'ember.Size({})')"
check "a Size inside a table" '{s = ember.zeros(2, 1).shape}' '{s = ember.Size({2, 1})}'
check "ember.Size is a class" 'ember.Size' 'class ember.Size {numel}'
printf 'print(ember.zeros(2, 3).shape, ember.Size({5}))\n' > "$tmp/size.lua"
if [ "$("$EMBER" "$tmp/size.lua" 2>&1)" = "$(printf 'ember.Size({2, 3})\tember.Size({5})')" ]; then
    ok "print(t.shape) in a script shows ember.Size({2, 3})"
else not_ok "print(t.shape) in a script shows ember.Size({2, 3})" "$("$EMBER" "$tmp/size.lua" 2>&1)"; fi

# ---- tensors -------------------------------------------------------------------
check "a tensor at the top level prints as print shows it" 'ember.zeros(2, 2)' \
    "$(printf 'print(ember.zeros(2, 2))\n' | "$EMBER" 2>/dev/null)"
check "a tensor inside a table is a one-line summary" '{ember.zeros(3, 4), w = ember.ones(2, {dtype = "int64"})}' \
    '{tensor(float32, [3, 4], cpu), w = tensor(int64, [2], cpu)}'
check "a 0-d tensor inside a table" '{ember.tensor(1.5)}' '{tensor(float32, [], cpu)}'
repl 'ember.zeros(5000)'
if [ "$(wc -l < "$tmp/out")" -le 3 ] && grep -q '\.\.\.' "$tmp/out"; then ok "a large tensor is summarised"
else not_ok "a large tensor is summarised" "$(head -c 600 "$tmp/out")"; fi
check "a closed tensor inside a table does not stop the printer" \
    $'do local t <close> = ember.zeros(2); x = {t} end\nx\n1' \
    "$(lines '{tensor(<index: argument 1: the tensor was closed (by <close>)>)}' 1)"

# ---- completion: names ---------------------------------------------------------------
check "module functions" ':complete ember.ze' "$(lines ember.zeros ember.zeros_like)"
repl $'t = ember.zeros(2)\n:complete t:su'
if grep -qx 't:sub' "$tmp/out" && grep -qx 't:sum' "$tmp/out" && ! grep -qv '^t:su' "$tmp/out"; then
    ok "tensor methods after ':'"
else not_ok "tensor methods after ':'" "$(cat "$tmp/out")"; fi
check "tensor properties from __dir after '.'" $'t = ember.zeros(2)\n:complete t.sha' 't.shape'
check "properties are not methods" $'t = ember.zeros(2)\n:complete t:sha' ''
check "classes: nn.Lin" $'nn = ember.nn\n:complete nn.Lin' 'nn.Linear'
check "an nn.Linear instance: its class's methods" $'m = ember.nn.Linear(2, 3)\n:complete m:forw' 'm:forward'
check "an nn.Linear instance: Module's methods" $'m = ember.nn.Linear(2, 3)\n:complete m:zero_' 'm:zero_grad'
check "plot is pre-loaded: its functions" ':complete plot.li' "$(lines plot.line plot.live)"
check "a figure's methods" $'f = plot.figure()\n:complete f:sa' 'f:save'
check "plot is ember.plot" 'plot == ember.plot' 'true'
check "keywords and globals" ':complete re' "$(lines repeat require return)"
check "a keyword alone" ':complete whi' 'while'
check "string methods" $'s = "abc"\n:complete s:up' 's:upper'
check "a deeper path" $'nn = ember.nn\n:complete ember.nn.Line' 'ember.nn.Linear'
check "completing a lazy module's name does not load it" \
    $':complete ember.da\npackage.loaded["ember.data"] == nil' "$(lines ember.data true)"
check "completing inside a lazy module loads it (ember.data on first use)" \
    $':complete ember.data.DataL\npackage.loaded["ember.data"] ~= nil' "$(lines ember.data.DataLoader true)"
# nn, optim and plot are globals loaded on first use (start-up compiles none of them)
check "start-up loads none of nn, optim, plot" \
    'package.loaded["ember.nn"] == nil and package.loaded["ember.optim"] == nil and package.loaded["ember.plot"] == nil' 'true'
check "the lazy globals complete before their first use" $':complete nn.Line\n:complete opt' \
    "$(lines nn.Linear optim)"
check "a lazy global is the module, also under ember" $'nn.Linear ~= nil, nn == ember.nn, rawget(ember, "nn") == nn' \
    "$(printf 'true\ttrue\ttrue')"
check "a user's global of the same name wins" $'nn = 5\nnn' '5'
check "names with '_' only when asked for" $'q = {_hid = 1, vis = 2}\n:complete q.\n:complete q._' \
    "$(lines q.vis q._hid)"
check "after ':' only functions" $'q = {f = print, v = 1, g = function() end}\n:complete q:' "$(lines q:f q:g)"
check "__index tables are followed (class chains)" \
    $'Base = {hello = function() end}\nBase.__index = Base\nDerived = setmetatable({bye = print}, {__index = Base})\nDerived.__index = Derived\nobj = setmetatable({own = 1}, Derived)\n:complete obj.\n:complete obj:' \
    "$(lines obj.bye obj.hello obj.own obj:bye obj:hello)"
check "__dir names, then its metatable's __index" \
    $'u = setmetatable({}, {__dir = setmetatable({"alpha", "beta", 3}, {__index = {gamma = print}})})\n:complete u.\n:complete u:' \
    "$(lines u.alpha u.beta u.gamma u:gamma)"
check "globals through _G's metatable __index table" \
    $'setmetatable(_G, {__index = {zzfromindex = 1}});\n:complete zzfrom' 'zzfromindex'
check "after '?'" ':complete ?ember.ey' 'ember.eye'
check "after a closed string" ':complete x = "abc" .. ta' 'table'

# a counter proves completion never calls an __index function, and that
# the counter itself works
check "an __index function is never called" \
    $'n = 0\ng = setmetatable({}, {__index = function(t, k) n = n + 1 return {a = 1} end})\n:complete g.x\n:complete g.x.a\n:complete g:\nn\ng.x\nn' \
    "$(lines 0 '{a = 1}' 1)"
check "_G's __index function is never called" \
    $'n = 0\nsetmetatable(_G, {__index = function(t, k) if tostring(k):sub(1, 2) == "zz" then n = n + 1 end end});\n:complete zzq\n:complete zzq.a\n:complete zzq:b\nn\nzzq\nn' \
    "$(lines 0 nil 1)"

# bad or partial input: no candidates, no crash
check "bad input gives no candidates" \
    $':complete a..b\n:complete 1.\n:complete x:\n:complete a:b.c\n:complete .\n:complete ember..\n:complete ("x"):\n:complete 12\n"alive"' \
    'alive'

# ---- completion: commands and files ------------------------------------------------------
check "command names" ':complete :ti' ':time'
check "command names with a common prefix" ':complete :brea' "$(lines :break :breaks)"
check ":help takes command names" ':complete :help ti' 'time'
mkdir -p "$tmp/dir/sub"
touch "$tmp/dir/script.lua" "$tmp/dir/scratch.txt" "$tmp/dir/other.lua"
check "file names inside a string" ":complete dofile(\"$tmp/dir/scr" \
    "$(lines "$tmp/dir/scratch.txt" "$tmp/dir/script.lua")"
check "a unique file name" ":complete dofile(\"$tmp/dir/scri" "$tmp/dir/script.lua"
check "single quotes, and directories marked" ":complete x = '$tmp/dir/su" "$tmp/dir/sub/"
check "file names after :load" ":complete :load $tmp/dir/o" "$tmp/dir/other.lua"

# ---- on a terminal: Tab and colours ---------------------------------------------------------
if python3 -c 'import pexpect' 2> /dev/null; then
    EMBER="$EMBER" TMPD="$tmp" python3 - > "$tmp/pty" 2>&1 <<'EOF'
import os, re, pexpect
tmp = os.environ["TMPD"]
def spawn(color):
    # colours need a terminal that shows them: TERM=dumb turns them off
    env = dict(os.environ, TERM="xterm" if color else "dumb", INPUTRC="/dev/null",
               EMBER_HISTORY=tmp + "/history")
    env.pop("NO_COLOR", None)
    if not color:
        env["NO_COLOR"] = "1"
    p = pexpect.spawn(os.environ["EMBER"], env=env, encoding="utf-8", timeout=10, dimensions=(24, 200))
    p.expect_exact("> ")
    return p
def result(name, fn):
    try:
        fn()
        print("PASS " + name)
    except Exception as e:
        print("FAIL %s\t%s: %s" % (name, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
p = spawn(False)
def tab_lists():
    p.sendline("t = ember.zeros(2)"); p.expect_exact("> ")
    p.send("t:su\t\t")
    p.expect(r"t:sub\s+t:sub_\s+t:subtract\s+t:sum")
    p.sendcontrol("c"); p.expect_exact("> ")
def tab_dotted_no_space():
    p.send("emb\t"); p.expect_exact("ember")
    p.send(".ey\t"); p.expect_exact(".eye")
    p.send("(2):sum()\r"); p.expect(r"\r\ntensor\(2\.\)\r\n"); p.expect_exact("> ")
def tab_keyword_space():
    p.send("whi\t"); p.expect_exact("while ")
    p.send("false do end\r"); p.expect_exact("> ")
def tab_file():
    p.send('s = io.open("%s/dir/scri\t' % tmp)
    p.expect_exact('script.lua"')
    p.send("):read('a')\r"); p.expect_exact("> ")
    p.sendline("s"); p.expect(r"\r\n\r\n> ")   # the file is empty
def no_color():
    p.sendline('{1, "a", true}'); p.expect_exact("> ")
    assert "\x1b[" not in p.before, repr(p.before)
result("Tab lists the methods", tab_lists)
result("Tab after a dotted word adds no space", tab_dotted_no_space)
result("Tab after a keyword adds a space", tab_keyword_space)
result("Tab inside a string completes a file and closes the string", tab_file)
result("NO_COLOR: no escape sequences", no_color)
p.sendeof(); p.expect(pexpect.EOF)
q = spawn(True)
def colors():
    q.sendline('{1, "a", true, {}}'); q.expect(r"\n(?:\r|\x1b\[[0-9;?]*[a-zA-Z])*> ")
    out = re.sub(r"\x1b\[\?2004[hl]|\r", "", q.before).split("\n")[1]
    assert "\x1b[36m1\x1b[0m" in out and "\x1b[32m\"a\"\x1b[0m" in out and "\x1b[35mtrue\x1b[0m" in out, repr(out)
    assert re.sub(r"\x1b\[[0-9;]*m", "", out) == '{1, "a", true, {}}', repr(out)
result("colours on a terminal", colors)
q.sendeof(); q.expect(pexpect.EOF)
EOF
    while IFS= read -r line; do
        case "$line" in
            PASS\ *) ok "${line#PASS }" ;;
            FAIL\ *) rest=${line#FAIL }; not_ok "${rest%%$'\t'*}" "${rest#*$'\t'}" ;;
            *) echo "# $line" ;;
        esac
    done < "$tmp/pty"
else
    n=$((n + 1)); echo "ok $n - Tab and colours on a terminal # SKIP python3-pexpect is not installed"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
