#!/usr/bin/env bash
# scripts/bench/instr.sh — instruction counts that noise cannot move, against
# a committed budget (scripts/bench/instr_budget.txt). Run through
#   make bench-instr          counts, compared with the budget: fails when a
#                             count is more than 5 % over its line
#   make bench-instr-update   writes the counts that fell below their lines
#                             into the budget (RAISE=1: also those above; say
#                             why in the commit)
# Each count is valgrind's (cachegrind, no cache simulation) "I refs" of the
# ember executable of a build made for it: BUILD (build-instr), compiled for
# x86-64-v3 (AVX2: valgrind 3.19 cannot decode AVX-512), one thread
# (EMBER_NUM_THREADS=1), OpenBLAS's Haswell kernels and oneDNN held to AVX2,
# an empty environment otherwise. Rows:
#   startup      ember -e '' (the whole process)
#   op, op_autograd, mlp_step, cnn_step: scripts/bench/instr_work.lua run with
#                two repeat counts; the difference divided by the difference
#                of the counts, so start-up and set-up cancel out
#   gpt_step     scripts/char_gpt.lua --bench (2 layers, 2 heads, d_model 64,
#                context 64, batch 8) on a generated text, the same way
# The counts depend on the Debian packages (Lua, OpenBLAS, oneDNN, glibc) and
# on gcc; budgets were set on Debian 12. The small rows are the fewest of three
# runs (Lua's string hashes are seeded from the clock: one run's op count moved
# by up to 4 %); the steps move by well under 1 %.
set -u
cd "$(dirname "$0")/../.."
mode=${1:-check}
BUILD=${BUILD:-build-instr}
EMBER=$PWD/$BUILD/ember
BUDGET=scripts/bench/instr_budget.txt
TOLERANCE=${TOLERANCE:-5}   # per cent over the budget that fails
if ! command -v valgrind >/dev/null; then
    echo "bench-instr: valgrind is not installed (Debian: valgrind)" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the text the GPT step trains on: fixed, so its alphabet and windows are too
for i in $(seq 400); do echo "line $i: the quick brown fox jumps over the lazy dog; THE FIVE BOXING WIZARDS JUMP QUICKLY."; done > "$tmp/text.txt"

# instructions of one run of the ember executable with these arguments
count() {
    env -i PATH=/usr/bin:/bin HOME="$tmp" LANG=C EMBER_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        OPENBLAS_CORETYPE=Haswell DNNL_MAX_CPU_ISA=AVX2 OMP_NUM_THREADS=1 EMBER_HISTORY=/dev/null \
        valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$EMBER" "$@" \
        > "$tmp/out" 2> "$tmp/err"
    local rc=$? refs
    refs=$(awk '/I *refs:/ { gsub(",", "", $NF); print $NF }' "$tmp/err")
    if [ $rc -ne 0 ] || [ -z "$refs" ]; then
        echo "bench-instr: ember $* failed under valgrind (status $rc):" >&2
        tail -20 "$tmp/err" >&2
        return 1
    fi
    echo "$refs"
}
# the fewest instructions of `runs` runs: Lua seeds its string hashes from the
# clock at start, which moves a small op's count by up to 4 % from run to run
count_min() { # runs args...
    local runs=$1 best="" c
    shift
    for _ in $(seq "$runs"); do
        c=$(count "$@") || return 1
        if [ -z "$best" ] || [ "$c" -lt "$best" ]; then best=$c; fi
    done
    echo "$best"
}
# per repeat: (count at n2 - count at n1) / (n2 - n1), each the fewest of `runs` runs
per() { # runs n1 n2 args... (@N stands for the repeat count)
    local runs=$1 n1=$2 n2=$3 a b
    shift 3
    a=$(count_min "$runs" $(sed "s/@N/$n1/g" <<<"$*")) || return 1
    b=$(count_min "$runs" $(sed "s/@N/$n2/g" <<<"$*")) || return 1
    echo $(((b - a) / (n2 - n1)))
}

declare -A got
got[startup]=$(count_min 3 -e '') || exit 1
got[op]=$(per 3 1000 3000 scripts/bench/instr_work.lua op @N) || exit 1
got[op_autograd]=$(per 3 1000 3000 scripts/bench/instr_work.lua op_autograd @N) || exit 1
got[mlp_step]=$(per 1 2 4 scripts/bench/instr_work.lua mlp @N) || exit 1
got[cnn_step]=$(per 1 2 4 scripts/bench/instr_work.lua cnn @N) || exit 1
got[gpt_step]=$(per 1 3 5 scripts/char_gpt.lua "$tmp/text.txt" --bench --steps @N --layers 2 --heads 2 \
                --d-model 64 --context 64 --batch 8 --eval-batches 1) || exit 1

declare -A budget
if [ -e "$BUDGET" ]; then
    while read -r name value _; do
        case $name in ''|'#'*) continue ;; esac
        budget[$name]=$value
    done < "$BUDGET"
fi

rows="startup op op_autograd mlp_step cnn_step gpt_step"
fail=0
printf '%-12s %14s %14s %8s\n' row instructions budget change
for r in $rows; do
    g=${got[$r]} b=${budget[$r]:-}
    if [ -z "$b" ]; then
        printf '%-12s %14d %14s %8s  no budget\n' "$r" "$g" - -
        [ "$mode" = check ] && fail=1
        continue
    fi
    pct=$(awk -v g="$g" -v b="$b" 'BEGIN { printf "%+.1f%%", (g - b) * 100 / b }')
    note=""
    if awk -v g="$g" -v b="$b" -v t="$TOLERANCE" 'BEGIN { exit !(g > b * (1 + t / 100)) }'; then
        note="  OVER the budget by more than $TOLERANCE %"
        fail=1
    elif awk -v g="$g" -v b="$b" -v t="$TOLERANCE" 'BEGIN { exit !(g < b * (1 - t / 100)) }'; then
        note="  under: lower the budget (make bench-instr-update)"
    fi
    printf '%-12s %14d %14d %8s%s\n' "$r" "$g" "$b" "$pct" "$note"
done

if [ "$mode" = update ]; then
    {
        echo "# instruction budgets of make bench-instr (scripts/bench/instr.sh says how they are"
        echo "# counted); make bench-instr-update lowers them, RAISE=1 raises them too"
        for r in $rows; do
            g=${got[$r]} b=${budget[$r]:-}
            if [ -z "$b" ] || [ "$g" -lt "$b" ] || [ "${RAISE:-0}" = 1 ]; then b=$g; fi
            echo "$r $b"
        done
    } > "$BUDGET.new"
    mv "$BUDGET.new" "$BUDGET"
    echo "bench-instr: $BUDGET written"
    exit 0
fi
if [ $fail = 1 ]; then
    echo "bench-instr: FAILED (a count is over its budget, or has none)"
    exit 1
fi
echo "bench-instr: every count within $TOLERANCE % of its budget"
