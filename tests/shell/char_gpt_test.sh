#!/usr/bin/env bash
# char_gpt_test.sh — scripts/char_gpt.lua on a small text and a tiny model
# (seconds): the loss falls, a resumed run ends in the same state as an
# uninterrupted one (byte-identical checkpoints, the same loss lines), --sample
# prints N characters of the text's alphabet, --bench prints its two lines,
# --plot writes the curves, and bad options fail clearly (TAP).
# EMBER is the executable (tests/run.sh sets it); default build/ember.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
case $EMBER in /*) ;; *) EMBER=$PWD/$EMBER ;; esac
SCRIPT=$PWD/scripts/char_gpt.lua
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/shell/tap.sh

# the text: a few licences (any text serves); else a generated one
text=$tmp/text.txt
text_file "$text" 60000
TINY=(--layers 1 --heads 2 --d-model 32 --context 16 --batch 16 --warmup 5 --log-every 10 --eval-every 10
      --eval-batches 2)

if [ ! -x "$EMBER" ]; then
    for t in "loss falls" "resume equals an uninterrupted run" "--sample" "--bench" "--plot" "bad options"; do
        n=$((n + 1)); echo "ok $n - $t # SKIP no ember executable at $EMBER"
    done
    echo "1..$n"
    exit 0
fi

# --- the loss falls (train and validation; the first line is the mean of steps 1-10, near ln(vocabulary))
out=$("$EMBER" "$SCRIPT" "$text" "${TINY[@]}" --steps 80 --lr 3e-3 --out "$tmp/a.st" 2>&1); rc=$?
first=$(echo "$out" | awk '/^step +10\/80  loss/ {print $4}')
last=$(echo "$out" | awk '/^step +80\/80  loss/ {print $4}')
vfirst=$(echo "$out" | awk '/^step +10\/80  validation/ {print $5}')
vlast=$(echo "$out" | awk '/^step +80\/80  validation/ {print $5}')
if [ $rc -eq 0 ] && [ -n "$first" ] && [ -n "$last" ] && [ -n "$vfirst" ] && [ -n "$vlast" ] &&
   awk -v a="$first" -v b="$last" -v c="$vfirst" -v d="$vlast" 'BEGIN { exit !(b < a - 0.5 && d < c - 0.3) }'; then
    ok "loss falls (train $first -> $last, validation $vfirst -> $vlast)"
else
    not_ok "loss falls" "rc=$rc" "$out"
fi
if echo "$out" | grep -Eq '^step +10/80  loss [0-9.]+  lr [0-9.e+-]+  [0-9.]+ ms/step  [0-9]+ tokens/s$'; then
    ok "loss lines carry lr, ms/step and tokens/s"
else
    not_ok "loss lines carry lr, ms/step and tokens/s" "$out"
fi

# --- --resume continues exactly (with dropout: the generator is restored too)
ARGS=("$text" "${TINY[@]}" --steps 40 --dropout 0.1)
"$EMBER" "$SCRIPT" "${ARGS[@]}" --out "$tmp/full.st" > "$tmp/full.log" 2>&1
"$EMBER" "$SCRIPT" "${ARGS[@]}" --out "$tmp/part.st" --stop-after 20 > "$tmp/part.log" 2>&1
"$EMBER" "$SCRIPT" "${ARGS[@]}" --out "$tmp/part.st" --resume > "$tmp/resume.log" 2>&1; rc=$?
# the loss lines of steps 30 and 40 without their timings
losses() { grep -E '^step +(30|40)/40' "$1" | sed -E 's/  [0-9.]+ ms\/step.*//'; }
full=$(losses "$tmp/full.log"); resumed=$(losses "$tmp/resume.log")
if [ $rc -eq 0 ] && cmp -s "$tmp/full.st" "$tmp/part.st" && [ -n "$full" ] && [ "$full" = "$resumed" ] &&
   grep -q "resumed from .*part.st after step 20" "$tmp/resume.log"; then
    ok "resume equals an uninterrupted run (identical checkpoints and loss lines)"
else
    not_ok "resume equals an uninterrupted run" "rc=$rc" "full:" "$full" "resumed:" "$resumed" \
           "$(cat "$tmp/resume.log")"
fi

# --- --sample: N characters, all of the text's alphabet; the same for the same seed
"$EMBER" "$SCRIPT" --sample 120 --out "$tmp/a.st" --temperature 0.8 --top-k 5 > "$tmp/s1" 2> "$tmp/s1.err"; rc=$?
"$EMBER" "$SCRIPT" --sample 120 --out "$tmp/a.st" --temperature 0.8 --top-k 5 > "$tmp/s2" 2>&1
size=$(wc -c < "$tmp/s1")
# the bytes of the sample (its last newline aside) that the text lacks
cat > "$tmp/foreign.lua" <<'LUA'
local function read(p) local f = assert(io.open(p, "rb")); local s = f:read("a"); f:close(); return s end
local text, sample = read(arg[1]), read(arg[2]):sub(1, -2)
local seen, n = {}, 0
for i = 1, #text do seen[text:byte(i)] = true end
for i = 1, #sample do if not seen[sample:byte(i)] then n = n + 1 end end
print(n)
LUA
foreign=$("$EMBER" "$tmp/foreign.lua" "$text" "$tmp/s1")
if [ $rc -eq 0 ] && [ "$size" -eq 121 ] && [ "$foreign" -eq 0 ] && cmp -s "$tmp/s1" "$tmp/s2"; then
    ok "--sample 120 prints 120 characters of the text's alphabet ($(head -c 40 "$tmp/s1" | tr '\n' ' ')...)"
else
    not_ok "--sample 120 prints 120 characters of the text's alphabet" "rc=$rc size=$size foreign=$foreign" \
           "$(cat "$tmp/s1" "$tmp/s1.err")"
fi
out=$("$EMBER" "$SCRIPT" --sample 30 --out "$tmp/a.st" --prompt "the " 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "${out:0:4}" = "the " ] && [ "${#out}" -eq 34 ]; then
    ok "--prompt is printed before its continuation"
else
    not_ok "--prompt is printed before its continuation" "rc=$rc" "$out"
fi

# --- --bench: the two lines the benchmark table reads
out=$("$EMBER" "$SCRIPT" "$text" "${TINY[@]}" --steps 6 --bench 2>&1); rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -Eq '^gpt_step_ms [0-9.]+ ms$' && echo "$out" | grep -Eq '^gpt_val_loss [0-9.]+$'; then
    ok "--bench prints gpt_step_ms and gpt_val_loss"
else
    not_ok "--bench prints gpt_step_ms and gpt_val_loss" "rc=$rc" "$out"
fi

# --- --amp bfloat16 (CPU autocast): the loss falls as in float32
out=$("$EMBER" "$SCRIPT" "$text" "${TINY[@]}" --steps 40 --lr 3e-3 --amp bfloat16 --out "$tmp/amp.st" 2>&1); rc=$?
first=$(echo "$out" | awk '/^step +10\/40  loss/ {print $4}')
last=$(echo "$out" | awk '/^step +40\/40  loss/ {print $4}')
if [ $rc -eq 0 ] && [ -n "$first" ] && [ -n "$last" ] && awk -v a="$first" -v b="$last" 'BEGIN {exit !(b < a - 0.3)}'; then
    ok "--amp bfloat16 trains: loss $first -> $last"
else
    not_ok "--amp bfloat16 trains" "rc=$rc first=$first last=$last" "$out"
fi

# --- --plot without a terminal: the file only
if command -v gnuplot >/dev/null 2>&1; then
    out=$(cd "$tmp" && "$EMBER" "$SCRIPT" "$text" "${TINY[@]}" --steps 20 --plot --out p.st 2>&1); rc=$?
    sig=$(head -c 8 "$tmp/loss.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')
    if [ $rc -eq 0 ] && [ "$sig" = 89504e470d0a1a0a ] && echo "$out" | grep -q "loss curves written to loss.png"; then
        ok "--plot writes loss.png"
    else
        not_ok "--plot writes loss.png" "rc=$rc sig=$sig" "$out"
    fi
else
    ok "--plot writes loss.png # SKIP gnuplot not installed"
fi

# --- bad options fail with a clear message and status 1
bad "unknown option" "unknown option --bogus" "$text" --bogus 1
bad "non-numeric value" "--steps needs a whole number" "$text" --steps x
bad "option without its value" "--lr needs a value" "$text" --lr
bad "heads not dividing d_model" "not divisible by --heads 3" "$text" --d-model 32 --heads 3
bad "an unknown --amp dtype" "--amp must be bfloat16 or float16, got fp8" "$text" --amp fp8
bad "no text" "a TEXT_FILE to train on is needed" --steps 3
bad "a missing text file" "cannot read the text" "$tmp/missing.txt"
printf 'to be or not to be, that is the question\n' > "$tmp/short.txt"
bad "a text too short for the context" "too few for --context 16" "$tmp/short.txt" --context 16
bad "--resume without a checkpoint names it" "no checkpoint .*nothing.st" "$text" --resume --out "$tmp/nothing.st"
bad "--resume into another model size fails clearly" "--resume: load_checkpoint: .*a.st" "$text" "${TINY[@]}" \
    --d-model 48 --resume --out "$tmp/a.st"
bad "--sample without a checkpoint names it" "no checkpoint .*nothing.st" --sample 5 --out "$tmp/nothing.st"
bad "--cuda-graph on the CPU" "--cuda-graph needs --device cuda" "$text" --steps 2 --cuda-graph
if ! "$EMBER" -e 'os.exit(ember.cuda.is_available() and 0 or 1)' >/dev/null 2>&1; then
    bad "--device cuda without CUDA" "--device cuda: " "$text" --steps 2 --device cuda
    bad "--cuda-graph without CUDA" "--device cuda: " "$text" --steps 2 --device cuda --cuda-graph
fi

echo "1..$n"
