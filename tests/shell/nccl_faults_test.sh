#!/usr/bin/env bash
# nccl_faults_test.sh — the NCCL watchdog (the fault rules of distributed_faults_test.sh on the nccl backend), on the emulated
# device in a world of one (TAP): NCCL work that never finishes (EMBER_CUDA_EMU_NCCL_HANG) ends the
# process at init_process_group's timeout, naming the op, its number and the timeout, whether the
# host waits for it in a copy, a blocking barrier or destroy_process_group; an asynchronous NCCL
# error (EMBER_CUDA_EMU_NCCL_ERROR) ends it at once naming the op and the error; with
# EMBER_NCCL_ASYNC_ERROR_HANDLING=2 the communicator is aborted but the program goes on, and
# is_completed, wait and later collectives fail naming why. Each job runs under `timeout 60`.
# EMBER is the executable (tests/run.sh sets it); default build/ember.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
BUILD=$(dirname "$EMBER")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/shell/tap.sh

. tests/shell/mpi.sh
mpi_setup "NCCL fault tests" 60
if [ ! -e "$BUILD/libember_cuda_emu.so" ] || [ ! -e "$BUILD/libember_nccl_emu.so" ]; then
    echo "ok 1 - NCCL fault tests # SKIP no $BUILD/libember_cuda_emu.so or $BUILD/libember_nccl_emu.so"
    exit 0
fi
export EMBER_CUDA=emu

# job NAME [VAR=value...]: runs $tmp/NAME.lua on the emulated device with those variables;
# rc, took, $tmp/out, $tmp/err
job() {
    local name=$1 start=$SECONDS
    shift
    env "$@" timeout 60 "$EMBER" "$tmp/$name.lua" > "$tmp/out" 2> "$tmp/err"; rc=$?
    took=$((SECONDS - start))
}
has() { grep -qE -- "$1" "$tmp/err"; }
# check NAME MIN MAX PATTERN...: the job ended with status 1 (not by timeout) after MIN..MAX
# seconds, every pattern matched on stderr, and it never printed "not reached"
check() {
    local name=$1 min=$2 max=$3 p good=1
    shift 3
    [ $rc = 1 ] && [ $took -ge "$min" ] && [ $took -le "$max" ] || good=0
    grep -q "not reached" "$tmp/out" && good=0
    for p in "$@"; do has "$p" || good=0; done
    if [ $good = 1 ]; then ok "$name (${took}s)"
    else not_ok "$name" "status $rc after ${took}s" "$(cat "$tmp/out")" "$(head -c 2500 "$tmp/err")"; fi
}

prelude='local dist = ember.distributed
dist.init_process_group({backend = "nccl", timeout = 2})
local t = ember.ones(4, {device = "cuda"})'

cat > "$tmp/copy.lua" <<EOF
$prelude
dist.all_reduce(t)
dist.all_reduce(t)          -- never finishes on the GPU
print(t:cpu())              -- the host waits here, as on a GPU
print("not reached")
EOF
job copy EMBER_CUDA_EMU_NCCL_HANG=2
check "a stuck all_reduce: the host waiting in a copy ends at the 2 s timeout naming it" 2 10 \
    "^ember: rank 0: all_reduce #2 \(float32 \[4\], sum\) timed out after 2 s: NCCL has not finished it on the GPU" \
    "the NCCL communicator was aborted"

cat > "$tmp/barrier.lua" <<EOF
$prelude
dist.barrier()              -- blocks the host until the GPU is through it
print("not reached")
EOF
job barrier EMBER_CUDA_EMU_NCCL_HANG=1
check "a stuck barrier ends at the timeout naming it" 2 10 "^ember: rank 0: barrier #1 timed out after 2 s"

cat > "$tmp/destroy.lua" <<EOF
$prelude
local w = dist.broadcast(t, 0, {async_op = true})
dist.destroy_process_group()  -- waits for NCCL's work
print("not reached")
EOF
job destroy EMBER_CUDA_EMU_NCCL_HANG=1
check "stuck async work that destroy_process_group waits for ends at the timeout" 2 10 \
    "^ember: rank 0: broadcast #1 \(float32 \[4\], src 0\) timed out after 2 s"

cat > "$tmp/async.lua" <<EOF
local dist = ember.distributed
dist.init_process_group({backend = "nccl", timeout = 30})
local t = ember.ones(4, {device = "cuda"})
dist.all_reduce(t)
local w = dist.all_reduce(t, {op = "max", async_op = true})
while true do local x = ember.ones(8) + 1 end   -- the host computes, never waits
EOF
job async EMBER_CUDA_EMU_NCCL_ERROR=2
check "an asynchronous NCCL error ends the job at once (not at its 30 s timeout), naming the op and the error" 0 10 \
    "^ember: rank 0: all_reduce #2 \(float32 \[4\], max\) failed on the GPU: NCCL error: unhandled system error" \
    "a connection to a peer failed" "the NCCL communicator was aborted"

cat > "$tmp/cleanup.lua" <<EOF
local dist = ember.distributed
dist.init_process_group({backend = "nccl", timeout = 1})
local t = ember.ones(4, {device = "cuda"})
local u = ember.ones(3, {device = "cuda"})
local a = dist.all_reduce(t, {async_op = true})   -- never finishes on the GPU
local b = dist.all_reduce(u, {async_op = true})   -- queued behind it
local ok, err
local start = os.time()
repeat ok, err = pcall(a.is_completed, a) until not ok or err or os.time() - start > 20  -- done: wrong
print("is_completed: " .. tostring(err))
ok, err = pcall(b.wait, b)
print("wait: " .. tostring(err))
ok, err = pcall(dist.all_reduce, t)
print("all_reduce: " .. tostring(err))
print("sum " .. u:cpu():sum():item())             -- the abort ended the stuck work: no hang
dist.destroy_process_group()
print("destroyed")
EOF
job cleanup EMBER_CUDA_EMU_NCCL_HANG=1 EMBER_NCCL_ASYNC_ERROR_HANDLING=2
out=$(cat "$tmp/out")
if [ $rc = 0 ] && [ $took -le 10 ] &&
   grep -qE "^ember: rank 0: all_reduce #1 \(float32 \[4\], sum\) timed out after 1 s.*the program goes on" "$tmp/err" &&
   grep -qE "^is_completed: .*is_completed: the NCCL communicator was aborted: all_reduce #1 .*timed out after 1 s" "$tmp/out" &&
   grep -qE "^wait: .*wait: the NCCL communicator was aborted: all_reduce #1" "$tmp/out" &&
   grep -qE "^all_reduce: .*all_reduce: the NCCL communicator was aborted" "$tmp/out" &&
   grep -q "^destroyed" "$tmp/out"; then
    ok "EMBER_NCCL_ASYNC_ERROR_HANDLING=2: aborted, the program goes on; is_completed, wait and all_reduce fail naming why (${took}s)"
else
    not_ok "EMBER_NCCL_ASYNC_ERROR_HANDLING=2: the program goes on, and later calls fail" "status $rc after ${took}s" \
        "$out" "$(head -c 2500 "$tmp/err")"
fi

# The watchdog aborts the communicator just before its _exit, and the abort
# lets the stuck work finish: the program's thread, waiting on it, must stop
# there instead of printing (or saving) what it computed, or ending the
# process first with status 0. A shim that makes _exit take 1.5 s widens that
# window from microseconds to one every run would show.
if command -v cc >/dev/null 2>&1; then
    cat > "$tmp/slow_exit.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>
void _exit(int status)
{
    struct timespec ts = {1, 500000000};
    nanosleep(&ts, NULL);
    void (*real)(int) = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
    real(status);
    for (;;) pause();
}
EOF
    if cc -shared -fPIC -o "$tmp/slow_exit.so" "$tmp/slow_exit.c" -ldl 2> "$tmp/cc.err"; then
        slow=(LD_PRELOAD="$tmp/slow_exit.so" ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0")
        for name in copy barrier destroy; do
            [ $name = copy ] && hang=2 || hang=1
            job $name EMBER_CUDA_EMU_NCCL_HANG=$hang "${slow[@]}"
            [ -s "$tmp/out" ] && rc="$rc-and-printed"
            check "a slow exit: the program's thread, let go by the abort in $name.lua, prints nothing and the status is 1" \
                2 10 "timed out after 2 s"
        done
    else
        not_ok "the _exit shim compiles" "$(cat "$tmp/cc.err")"
    fi
else
    ok "a slow exit: the program's thread stops # SKIP no C compiler for the _exit shim"
fi

cat > "$tmp/fine.lua" <<EOF
$prelude
for i = 1, 50 do dist.all_reduce(t) end
local w = dist.all_reduce(t, {async_op = true})
w:wait()
dist.barrier()
print(t:cpu():sum():item())
dist.destroy_process_group()
EOF
job fine
if [ $rc = 0 ] && grep -qx "4.0\|4" "$tmp/out" && [ ! -s "$tmp/err" ]; then ok "work that finishes is never named (${took}s)"
else not_ok "work that finishes is never named" "status $rc" "$(cat "$tmp/out")" "$(head -c 2500 "$tmp/err")"; fi

echo "1..$n"
[ "$failed" -eq 0 ]
