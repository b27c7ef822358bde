#!/usr/bin/env bash
# distributed_faults_test.sh — faulty `ember --nproc 2` jobs end promptly, on every rank, with a
# message naming the op, its number and the ranks (TAP): ranks that end normally while
# another waits (return, os.exit(0), no init_process_group, a skipped DDP backward), collectives
# that never match (all_reduce against broadcast, a recv from a rank that never sends, a rank
# computing), ranks that disagree (dtype, reduce op, shape), DDP's errors with one "ember: "
# prefix, EMBER_DISTRIBUTED_DEBUG=DETAIL without the job board, and a plain mpirun job. Every
# job runs under `timeout 60` with init_process_group({timeout = 2}), so a hang fails in
# seconds. EMBER is the executable (tests/run.sh sets it); default build/ember.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
BUILD=$(dirname "$EMBER")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/shell/tap.sh

. tests/shell/mpi.sh
mpi_setup "distributed fault tests" 60

# job NAME: runs $tmp/NAME.lua with 2 ranks; rc, took, $tmp/out, $tmp/err
job() {
    local start=$SECONDS
    timeout 60 "$EMBER" --nproc 2 "$tmp/$1.lua" > "$tmp/out" 2> "$tmp/err"; rc=$?
    took=$((SECONDS - start))
}
# has PATTERN (grep -E on stderr)
has() { grep -qE -- "$1" "$tmp/err"; }
# check NAME CONDITION...: ok when the job failed (not by timeout), quickly, and every pattern matched
check() {
    local name=$1 p good=1
    shift
    [ $rc != 0 ] && [ $rc != 124 ] && [ $took -le 15 ] || good=0
    for p in "$@"; do has "$p" || good=0; done
    if [ $good = 1 ]; then ok "$name (${took}s)"
    else not_ok "$name" "status $rc after ${took}s" "$(cat "$tmp/out")" "$(head -c 2500 "$tmp/err")"; fi
}

prelude='local dist = ember.distributed
dist.init_process_group({timeout = 2})
local r = dist.get_rank()
local function spin(s) local t0 = ember.wall_time() while ember.wall_time() - t0 < s do end end'
# the exits must be seen at once: a timeout far beyond the 15 s a check allows
prelude30=${prelude/timeout = 2/timeout = 30}

# ---- a rank that ends normally while the other waits: named at once, both ranks non-zero
for how in "os.exit(0)" "return"; do
    cat > "$tmp/leave.lua" <<LUA
$prelude30
dist.all_reduce(ember.ones(3))
if r == 1 then $how end
dist.all_reduce(ember.ones(3))
print("not reached")
LUA
    job leave
    check "rank 1 ends with $how while rank 0 waits: named at once, not at its 30 s timeout" \
        "^ember: rank 0: .*leave.lua:7: all_reduce #2 \(float32 \[3\], sum\) cannot complete: rank 1 exited \(status 0\); its last collective was all_reduce\(float32 \[3\], sum\) #1$" \
        "^ember: rank 1: stopped: rank 0 failed: all_reduce #2"
    if grep -q "not reached" "$tmp/out"; then not_ok "$how: nothing printed after the failure" "$(cat "$tmp/out")"; fi
done

cat > "$tmp/noinit.lua" <<'LUA'
if os.getenv("OMPI_COMM_WORLD_RANK") == "1" then return end
local dist = ember.distributed
dist.init_process_group({timeout = 30})
print("not reached")
LUA
job noinit
check "a rank that never calls init_process_group: the other's init names it (not at its 30 s timeout)" \
    "^ember: rank 0: init_process_group cannot complete: rank 1 exited \(status 0\) without calling init_process_group$" \
    "^ember: rank 1: stopped: rank 0 failed: init_process_group cannot complete"

cat > "$tmp/ddpskip.lua" <<LUA
$prelude30
local ddp = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(2, 2))
for step = 1, 3 do
  if not (r == 1 and step == 2) then ddp(ember.ones(4, 2)):sum():backward() end
end
LUA
job ddpskip
check "a rank that skips one DDP backward: the other's last backward names it (not at its 30 s timeout)" \
    "^ember: rank 0: .*all_reduce #[0-9]+ \(float32 \[6\], avg\) cannot complete: rank 1 exited \(status 0\)" \
    "^ember: rank 1: stopped: rank 0 failed"

# ---- collectives that never match: the timeout, naming what the other rank does
cat > "$tmp/sleeper.lua" <<LUA
$prelude
dist.all_reduce(ember.ones(3))
if r == 1 then spin(30) end
dist.all_reduce(ember.ones(3))
LUA
job sleeper
check "a computing rank: all_reduce #2 times out after 2 s naming it" \
    "^ember: rank 0: .*sleeper.lua:7: all_reduce #2 \(float32 \[3\], sum\) timed out after 2 s: rank 1 did not arrive \(it is not in a distributed call; its last collective was all_reduce\(float32 \[3\], sum\) #1\)$" \
    "^ember: rank 1: stopped: rank 0 failed: all_reduce #2 \(float32 \[3\], sum\) timed out after 2 s"

cat > "$tmp/norecv.lua" <<LUA
$prelude
if r == 0 then dist.recv(ember.zeros(3), 1) else spin(30) end
LUA
job norecv
check "a recv from a rank that never sends: times out naming it" \
    "^ember: rank 0: recv\(float32 \[3\], from 1, tag 0\) timed out after 2 s: rank 1 did not send \(it is not in a distributed call\)$" \
    "^ember: rank 1: stopped: rank 0 failed: recv"

cat > "$tmp/cross.lua" <<LUA
$prelude
if r == 0 then dist.all_reduce(ember.ones(3)) else dist.broadcast(ember.ones(3), 0) end
print("not reached")
LUA
job cross
check "all_reduce on rank 0, broadcast on rank 1: both say so, naming each" \
    "^ember: rank 0: .*cross.lua:5: all_reduce #1: ranks disagree: rank 0 passed all_reduce\(float32 \[3\], sum\); rank 1 passed broadcast\(float32 \[3\], src 0\)$" \
    "^ember: rank 1: .*cross.lua:5: broadcast #1: ranks disagree: rank 0 passed all_reduce\(float32 \[3\], sum\); rank 1 passed broadcast\(float32 \[3\], src 0\)$"

# ---- ranks that disagree: an error on each rank before any value is written or printed
cat > "$tmp/dtype.lua" <<LUA
$prelude
local t = ember.tensor({1, 2, 3}, {dtype = r == 0 and "int32" or "float32"})
dist.all_reduce(t)
print(r, t)
LUA
job dtype
check "int32 on one rank, float32 on the other: an error on both, no values" \
    "^ember: rank 0: .*all_reduce #1: ranks disagree: rank 0 passed all_reduce\(int32 \[3\], sum\); rank 1 passed all_reduce\(float32 \[3\], sum\)$" \
    "^ember: rank 1: .*all_reduce #1: ranks disagree: rank 0 passed all_reduce\(int32 \[3\], sum\)"
if [ -s "$tmp/out" ]; then not_ok "dtype mismatch: nothing printed" "$(cat "$tmp/out")"; else ok "dtype mismatch: nothing printed"; fi

cat > "$tmp/redop.lua" <<LUA
$prelude
local t = ember.tensor({r + 2.0})
dist.all_reduce(t, {op = r == 0 and "sum" or "max"})
print(r, t:item())
LUA
job redop
check "sum on one rank, max on the other: an error on both" \
    "^ember: rank 0: .*all_reduce #1: ranks disagree: rank 0 passed all_reduce\(float32 \[1\], sum\); rank 1 passed all_reduce\(float32 \[1\], max\)$" \
    "^ember: rank 1: .*all_reduce #1: ranks disagree"

cat > "$tmp/shape.lua" <<LUA
$prelude
local t = ember.ones(r == 0 and 3 or 5)
dist.broadcast(t, 0)
print(r, t)
LUA
job shape
check "a shape mismatch: ember's message on both ranks, not MPI's, and no garbage printed" \
    "^ember: rank 0: .*broadcast #1: ranks disagree: rank 0 passed broadcast\(float32 \[3\], src 0\); rank 1 passed broadcast\(float32 \[5\], src 0\)$" \
    "^ember: rank 1: .*broadcast #1: ranks disagree"
if [ -s "$tmp/out" ] || has "MPI_ERR|ORTE|MPI_ABORT|mpirun"; then not_ok "shape mismatch: no output, no MPI text" "$(cat "$tmp/out" "$tmp/err")"
else ok "shape mismatch: no output, no MPI text"; fi

# ---- DDP's mismatch error: one "ember: " prefix per line, one line per rank
cat > "$tmp/ddpdiff.lua" <<LUA
$prelude
ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(2, r == 0 and 2 or 3))
LUA
job ddpdiff
check "DDP's models-differ error: 'ember: rank N:' once on each rank" \
    "^ember: rank 0: .*DistributedDataParallel: the ranks' models differ" \
    "^ember: rank 1: .*DistributedDataParallel: the ranks' models differ"
if has "ember: ember:" || grep -v "^ember: rank [01]: \|^stack traceback:\|^	" "$tmp/err" | grep -q .; then
    not_ok "DDP's error: no doubled prefix, no stray line" "$(cat "$tmp/err")"
else ok "DDP's error: no doubled prefix, no stray line"; fi

# ---- without the board (EMBER_JOB_BOARD=off): DETAIL's check over MPI names each rank; timeouts still end the job
EMBER_JOB_BOARD=off EMBER_DISTRIBUTED_DEBUG=DETAIL job dtype
check "EMBER_DISTRIBUTED_DEBUG=DETAIL without the board: the MPI check names each rank" \
    "^ember: rank 0: .*all_reduce #1: ranks disagree: rank 0 passed all_reduce\(int32 \[3\], sum\); rank 1 passed all_reduce\(float32 \[3\], sum\)$" \
    "^ember: rank 1: .*all_reduce #1: ranks disagree"
EMBER_JOB_BOARD=off job sleeper
check "without the board, the timeout still ends the job" \
    "^ember: rank 0: all_reduce #2 \(float32 \[3\], sum\) timed out after 2 s: the ranks it waits for are not known"
cat > "$tmp/badenv.lua" <<'LUA'
ember.distributed.init_process_group()
LUA
EMBER_DISTRIBUTED_DEBUG=bogus job badenv
check "EMBER_DISTRIBUTED_DEBUG=bogus: a clear error" \
    "init_process_group: EMBER_DISTRIBUTED_DEBUG=bogus: expected OFF, INFO or DETAIL"

# ---- a plain mpirun (no launcher): init_process_group makes the board
start=$SECONDS
"${MPIRUN[@]}" -n 2 "$EMBER" "$tmp/leave.lua" > "$tmp/out" 2> "$tmp/err"; rc=$?
took=$((SECONDS - start))
check "plain mpirun: a rank that returns is named too" \
    "^ember: rank 0: .*all_reduce #2 \(float32 \[3\], sum\) cannot complete: rank 1 exited \(status 0\)"
[ -z "$(find /dev/shm -maxdepth 1 -name 'ember-job-*' -newer "$tmp/leave.lua" 2>/dev/null)" ] &&
    ok "no job board left in /dev/shm" || not_ok "no job board left in /dev/shm" "$(ls /dev/shm)"

echo "1..$n"
[ "$failed" -eq 0 ]
