#!/usr/bin/env bash
# tests/run.sh — runs every suite and prints one closing line
# "N passed, N failed[, N skipped]". Every suite speaks TAP: lines
# "ok ...", "not ok ...", with "# SKIP" marking a skipped test.
#   BUILD=dir   where the build lives (default build; absolute or relative)
#   BUSTED=cmd  how to run busted (default busted)
#   SAN=1       the build has sanitizers: run Lua through the ember executable
#   ONLY=gpu    only the GPU suites (tests/gpu/, used by tests/gpu/run.sh)
# The GPU suites run twice: on a GPU if there is one (else each file reports
# one skipped test), then on the emulated device (EMBER_CUDA=emu) when
# build/libember_cuda_emu.so exists.
# The GPU suites run everywhere: without a GPU each file reports one skipped
# test; EMBER_GPU_TEST_DEVICE=cpu runs them against the CPU backend.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
case $BUILD in /*) build_dir=$BUILD ;; *) build_dir=$PWD/$BUILD ;; esac
export EMBER_BUILD=$build_dir
# ours first; what the caller had (a machine without Lua: busted's modules
# from scripts/gpu-run.sh's bundle) after
export LUA_CPATH="$build_dir/?.so;${LUA_CPATH:-;}"
export LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;$PWD/tests/lua/?.lua;$PWD/tests/gpu/?.lua;${LUA_PATH:-;}"
export EMBER=$build_dir/ember
# busted as a command (scripts/gpu-run.sh: the bundle's, run by ember)
BUSTED=${BUSTED:-busted}
ONLY=${ONLY:-}
passed=0 failed=0 skipped=0
log=$(mktemp)

count() { # name, tap file, exit status
    local name=$1 file=$2 rc=$3 p f s
    p=$(grep -E '^ok ' "$file" | grep -vc '# SKIP')
    s=$(grep -E '^ok .*# SKIP' "$file" | wc -l)
    f=$(grep -cE '^not ok ' "$file")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        # a suite that died without reporting a failure counts as one
        f=1
        echo "not ok - $name exited with status $rc" >> "$file"
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    printf '%-34s %4d passed, %d failed, %d skipped\n' "$name" "$p" "$f" "$s"
    if [ "$f" -gt 0 ]; then grep -E '^not ok |^#' "$file" | head -60 | sed 's/^/    /'; fi
}

if [ "${SAN:-0}" = 1 ]; then
    # allocator_may_return_null: a huge request must reach the engine's own
    # "out of memory" error path, as in a normal build.
    # intercept_tls_get_addr=0: LeakSanitizer's scan of the thread-local
    # storage of libraries opened with dlopen (oneDNN, libgomp) crashes at
    # exit otherwise (google/sanitizers#1322)
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1:intercept_tls_get_addr=0
    export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi

# Lua tests (busted); under the sanitizers through the ember executable,
# whose ember module is built in.
run_specs() { # folder name, spec files...
    local group=$1 spec
    shift
    for spec in "$@"; do
        [ -e "$spec" ] || continue
        if [ "${SAN:-0}" = 1 ]; then
            # specs that start MPI in-process (any that makes a process group, and help's
            # examples of it): OpenMPI's allocations kept until exit come from its plugins,
            # whose frames only the slow unwinder gets through to libmpi, where
            # tests/lsan.supp matches them
            local asan=$ASAN_OPTIONS
            if grep -q init_process_group "$spec" || [ "${spec##*/}" = help_spec.lua ]; then
                asan=$asan:fast_unwind_on_malloc=0
            fi
            ASAN_OPTIONS=$asan "$EMBER" /usr/bin/busted -o TAP "$spec" > "$log" 2>&1; rc=$?
        else
            $BUSTED -o TAP "$spec" > "$log" 2>&1; rc=$?
        fi
        count "$group/$(basename "$spec" .lua)" "$log" $rc
    done
}

if [ "$ONLY" != gpu ]; then
    # engine tests in C
    for t in "$BUILD"/tests/*; do
        [ -x "$t" ] || continue
        "$t" > "$log" 2>&1; rc=$?
        count "c/$(basename "$t")" "$log" $rc
    done

    run_specs lua tests/lua/*_spec.lua
fi

# GPU tests: the same busted runs, then the GPU shell checks (python3 of
# the PATH: the GPU machine's; standard library only)
run_specs gpu tests/gpu/*_spec.lua
# ... and the GPU suites again on the emulated device (kernels/emu/: the CUDA
# backend's own kernels run on the CPU, with checks a GPU does not give),
# wherever it was built; not on the GPU machine's run (ONLY=gpu)
if [ "$ONLY" != gpu ] && [ -e "$build_dir/libember_cuda_emu.so" ]; then
    export EMBER_CUDA=emu
    run_specs gpu-emu tests/gpu/*_spec.lua
    for t in tests/gpu/*_test.py; do
        [ -e "$t" ] || continue
        python3 "$t" > "$log" 2>&1; rc=$?
        count "gpu-emu/$(basename "$t")" "$log" $rc
    done
    unset EMBER_CUDA
fi
for t in tests/gpu/*_test.py; do
    [ -e "$t" ] || continue
    python3 "$t" > "$log" 2>&1; rc=$?
    count "gpu/$(basename "$t")" "$log" $rc
done

if [ "$ONLY" != gpu ]; then
    # executable tests: each script prints TAP
    for t in tests/shell/*_test.sh tests/shell/*_test.py; do
        [ -e "$t" ] || continue
        case "$t" in
            *.py) /usr/bin/python3 "$t" > "$log" 2>&1; rc=$? ;;
            *) bash "$t" > "$log" 2>&1; rc=$? ;;
        esac
        count "shell/$(basename "$t")" "$log" $rc
    done
fi

rm -f "$log"
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
