#!/usr/bin/env bash
# fuzz_test.sh — a bounded run of the random-program fuzzer over the Lua API
# (tests/fuzz/fuzz.lua), one TAP line per seed. A seed passes when its
# programs end without a crash, a sanitizer report, a non-string error or a
# malformed tensor; on a failure the TAP details give the seed and the
# iteration, the failing program (runnable Lua) and the report.
#
# The seeds are fixed (EMBER_FUZZ_SEEDS, default "1 2 3") and so is the
# count of programs per seed (EMBER_FUZZ_ITERS, default 1500), so CI repeats
# the same programs (or a prefix of them, when the time runs out first); the time budget (EMBER_FUZZ_SECONDS, split among the seeds)
# is 40 s under the sanitizers (SAN=1, make asan) and 12 s otherwise. Known
# engine bugs are skipped by the list KNOWN_BUGS in fuzz.lua.
#
# Longer, by hand (from the repository root, after make asan):
#   SAN=1 BUILD=build-asan EMBER_FUZZ_SECONDS=1800 EMBER_FUZZ_SEEDS="$RANDOM $RANDOM" \
#       bash tests/shell/fuzz_test.sh
# or one seed directly, with the environment below:
#   SEED=42 EMBER_FUZZ_SECONDS=600 build-asan/ember tests/fuzz/fuzz.lua
# A failure prints SEED=... ITER=...; repeat and shrink it with
#   SEED=42 ITER=17 TRACE=1 build-asan/ember tests/fuzz/fuzz.lua > prog.lua
#   build-asan/ember tests/fuzz/minimize.lua prog.lua
set -u
cd "$(dirname "$0")/../.."
. tests/shell/tap.sh
BUILD=${BUILD:-${EMBER_BUILD:-build}}
SAN=${SAN:-0}
EMBER=${EMBER:-$BUILD/ember}
export LUA_PATH=${LUA_PATH:-"$PWD/lua/?.lua;$PWD/lua/?/init.lua;;"}
export LUA_CPATH=${LUA_CPATH:-"$PWD/$BUILD/?.so;;"}
seeds=${EMBER_FUZZ_SEEDS:-"1 2 3"}
if [ "$SAN" = 1 ]; then budget=${EMBER_FUZZ_SECONDS:-40}; else budget=${EMBER_FUZZ_SECONDS:-12}; fi
# at most this many programs per seed, whatever the machine's speed: a
# faster machine must not wander past the programs checked when the seeds
# were chosen (the time budget may stop a slower one earlier)
iters=${EMBER_FUZZ_ITERS:-1500}
nseeds=$(echo $seeds | wc -w)
per_seed=$(awk -v b="$budget" -v n="$nseeds" 'BEGIN { printf "%.1f", b / n }')

# No allocation may be merely large: the fuzzer asks for sizes that fail
# at once (2^41 elements and up) or small ones, but products of hostile
# sizes (65504 x 255 x ...) reach the allocator; cap one allocation at
# 1 GiB (sanitizers) or the process at 6 GB of address space.
if [ "$SAN" = 1 ]; then
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=1}:max_allocation_size_mb=1024
    export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
else
    ulimit -v 6000000 2>/dev/null
fi

if [ ! -x "$EMBER" ]; then
    not_ok "fuzz: no ember executable at $EMBER"
    echo "1..$n"
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for seed in $seeds; do
    state=$tmp/state
    rm -f "$state"
    # the budget, plus time for a last slow program and the sanitizer's exit
    SEED=$seed ITERS=$iters EMBER_FUZZ_SECONDS=$per_seed FUZZ_STATE=$state \
        timeout -k 5 $((${per_seed%.*} + 60)) "$EMBER" tests/fuzz/fuzz.lua > "$tmp/out" 2>&1
    rc=$?
    summary=$(grep '^fuzz: ' "$tmp/out")
    if [ $rc -eq 0 ] && [ -n "$summary" ]; then
        ok "${summary#fuzz: }"
        continue
    fi
    # a failure: the fuzzer's own report, or (a crash) the program repeated
    # with TRACE=1, whose last line is the call that crashed
    details=("exit status $rc")
    if grep -q '^FAIL: ' "$tmp/out"; then
        details+=("$(grep -A200 '^FAIL: ' "$tmp/out" | head -80)")
    elif grep -q 'ERROR: LeakSanitizer' "$tmp/out" && [ -s "$state" ]; then
        # a leak is reported at exit, after all the programs: bisect the
        # iterations run (FROM..ITERS) for one program that leaks
        read -r s last < "$state"
        a=1 b=$last
        while [ "$a" -lt "$b" ]; do
            m=$(( (a + b) / 2 ))
            if SEED=$s FROM=$a ITERS=$m EMBER_FUZZ_SECONDS=100000 timeout -k 5 300 "$EMBER" tests/fuzz/fuzz.lua 2>&1 |
                grep -q 'ERROR: LeakSanitizer'; then b=$m; else a=$((m + 1)); fi
        done
        if SEED=$s ITER=$a timeout -k 5 120 "$EMBER" tests/fuzz/fuzz.lua 2>&1 | grep -q 'ERROR: LeakSanitizer'; then
            details+=("a leak at exit; the program SEED=$s ITER=$a leaks:")
        else
            # LeakSanitizer scans memory conservatively: what earlier
            # programs left around can hide a leak or decide where it shows
            details+=("a leak at exit, found in SEED=$s FROM=1 ITERS=$a but not in ITER=$a alone:")
        fi
        details+=("$(grep -A12 -m1 -E '^(Direct|Indirect) leak' "$tmp/out" | head -12)")
        SEED=$s ITER=$a TRACE=1 timeout -k 5 120 "$EMBER" tests/fuzz/fuzz.lua > "$tmp/trace" 2>&1
        details+=("the program:" "$(grep -vE '^    #|^ *$|^(==|SUMMARY|0x|Direct|Indirect)' "$tmp/trace" | tail -40)")
    else
        read -r s i < "$state" 2>/dev/null || { s=$seed; i=?; }
        details+=("crashed in SEED=$s ITER=$i; repeat: SEED=$s ITER=$i TRACE=1 $EMBER tests/fuzz/fuzz.lua")
        details+=("$(grep -E 'ERROR: |runtime error|SUMMARY|^    #[0-9] ' "$tmp/out" | head -12)")
        if [ "$i" != "?" ]; then
            SEED=$s ITER=$i TRACE=1 timeout -k 5 120 "$EMBER" tests/fuzz/fuzz.lua > "$tmp/trace" 2>&1
            details+=("the program:" "$(grep -vE '^    #|^ *$|^(==|SUMMARY|0x)' "$tmp/trace" | tail -40)")
        fi
    fi
    not_ok "fuzz: SEED=$seed" "${details[@]}"
done
echo "1..$n"
[ "$failed" -eq 0 ]
