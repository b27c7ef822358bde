#!/usr/bin/env bash
# distributed_test.sh — ember.distributed under mpirun (TAP): every collective with 2 and 4
# ranks (distributed_ranks.lua), `ember --nproc`, a raising and a killed rank ending the job
# with a message naming the rank, checkpoints written by rank 0 only, and a normal start-up
# that loads no MPI library. Every mpirun runs under `timeout`, so a hang fails instead of
# blocking. EMBER is the executable (tests/run.sh sets it); default build/ember.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
BUILD=$(dirname "$EMBER")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/shell/tap.sh

. tests/shell/mpi.sh
mpi_setup "distributed tests" 60

# every collective: rank 0 prints one TAP line per group of checks
for np in 2 4; do
    relay_ranks "collectives with $np ranks" 25 "${MPIRUN[@]}" -n $np "$EMBER" tests/shell/distributed_ranks.lua
done
# the same without the communication thread (async collectives run at the call)
EMBER_MPI_THREADS=single relay_ranks "collectives with 2 ranks, EMBER_MPI_THREADS=single" 25 \
    "${MPIRUN[@]}" -x EMBER_MPI_THREADS -n 2 "$EMBER" tests/shell/distributed_ranks.lua

# --nproc: ember starts mpirun itself; arguments reach the script
cat > "$tmp/hello.lua" <<'LUA'
local dist = ember.distributed
dist.init_process_group()
local t = ember.tensor({dist.get_rank() + 1})
dist.all_reduce(t)
print(string.format("rank %d of %d: sum %d, arg %s, main %s", dist.get_rank(), dist.get_world_size(), t:item(), arg[1],
                    tostring(dist.is_main_process())))
LUA
timeout 60 "$EMBER" --nproc 3 "$tmp/hello.lua" xyz > "$tmp/out" 2> "$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(sort "$tmp/out")" = "$(printf 'rank 0 of 3: sum 6, arg xyz, main true\nrank 1 of 3: sum 6, arg xyz, main false\nrank 2 of 3: sum 6, arg xyz, main false')" ]
then ok "--nproc 3 script arg: three ranks, the script's arguments"
else not_ok "--nproc 3 script arg" "status $rc" "$(cat "$tmp/out")" "$(head -c 1500 "$tmp/err")"; fi
timeout 60 "$EMBER" -e 'x = 1' --nproc=2 "$tmp/hello.lua" a > "$tmp/out" 2> "$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(grep -c 'of 2: sum 3, arg a' "$tmp/out")" = 2 ]; then ok "--nproc=2 after another option"
else not_ok "--nproc=2 after another option" "status $rc" "$(cat "$tmp/out")" "$(head -c 1500 "$tmp/err")"; fi
"$EMBER" --nproc x "$tmp/hello.lua" > "$tmp/out" 2> "$tmp/err"; rc=$?
if [ $rc = 1 ] && grep -q "expected a number of processes (1 or more), got 'x'" "$tmp/err"; then ok "--nproc x: clear error"
else not_ok "--nproc x: clear error" "status $rc" "$(cat "$tmp/err")"; fi
OMPI_COMM_WORLD_SIZE=2 "$EMBER" --nproc 2 "$tmp/hello.lua" > "$tmp/out" 2> "$tmp/err"; rc=$?
if [ $rc = 1 ] && grep -q "already a rank of an mpirun job" "$tmp/err"; then ok "--nproc inside mpirun: clear error"
else not_ok "--nproc inside mpirun: clear error" "status $rc" "$(cat "$tmp/err")"; fi

# a rank that raises ends every rank (the others wait in all_reduce) with the rank and the error
cat > "$tmp/raise.lua" <<'LUA'
local dist = ember.distributed
dist.init_process_group()
if dist.get_rank() == 1 then error("boom on one") end
local t = ember.ones(3)
dist.all_reduce(t)
print("not reached")
LUA
start=$SECONDS
timeout 30 "$EMBER" --nproc 4 "$tmp/raise.lua" > "$tmp/out" 2> "$tmp/err"; rc=$?
took=$((SECONDS - start))
if [ $rc != 0 ] && [ $rc != 124 ] && grep -q "ember: rank 1: .*raise.lua:3: boom on one" "$tmp/err" && [ $took -le 20 ] &&
   ! grep -q "not reached" "$tmp/out"
then ok "a raising rank ends the job: 'rank 1: <error>' (${took}s)"
else not_ok "a raising rank ends the job" "status $rc after ${took}s" "$(head -c 1500 "$tmp/err")"; fi

# a killed rank: the ranks waiting for it see its process gone and name it
cat > "$tmp/kill.lua" <<'LUA'
local dist = ember.distributed
dist.init_process_group()
if dist.get_rank() == 1 then os.execute("kill -9 " .. io.open("/proc/self/stat"):read("n")) end
local t = ember.ones(3)
dist.all_reduce(t)
dist.barrier()
print("not reached")
LUA
start=$SECONDS
timeout 30 "$EMBER" --nproc 4 "$tmp/kill.lua" > "$tmp/out" 2> "$tmp/err"; rc=$?
took=$((SECONDS - start))
if [ $rc != 0 ] && [ $rc != 124 ] && grep -q "ember: rank [023]: .*all_reduce #1 (float32 \[3\], sum) cannot complete: rank 1 died" "$tmp/err" &&
   [ $took -le 20 ] && ! grep -q "not reached" "$tmp/out"
then ok "a killed rank ends the job: the others name rank 1 (${took}s)"
else not_ok "a killed rank ends the job" "status $rc after ${took}s" "$(head -c 1500 "$tmp/err")"; fi

# checkpoints: only rank 0 writes; every rank loads it
cat > "$tmp/ckpt.lua" <<'LUA'
local dist = ember.distributed
dist.init_process_group()
local dir = arg[1]
local m = ember.nn.Linear(2, 2)
ember.save_checkpoint(dir .. "/rank" .. dist.get_rank() .. ".safetensors", {model = m, step = 5})
ember.save_checkpoint(dir .. "/shared.safetensors", {model = m, step = 7})
dist.barrier()
local info = ember.load_checkpoint(dir .. "/shared.safetensors", {model = m})
print("rank " .. dist.get_rank() .. " step " .. info.step)
LUA
mkdir "$tmp/ck"
timeout 60 "$EMBER" --nproc 2 "$tmp/ckpt.lua" "$tmp/ck" > "$tmp/out" 2> "$tmp/err"; rc=$?
files=$(cd "$tmp/ck" && ls | tr '\n' ' ')
if [ $rc = 0 ] && [ "$files" = "rank0.safetensors shared.safetensors " ] && [ "$(grep -c 'step 7' "$tmp/out")" = 2 ]
then ok "checkpoints: rank 0 writes, no temporary left, both ranks load"
else not_ok "checkpoints: rank 0 writes" "status $rc, files: $files" "$(cat "$tmp/out")" "$(head -c 1500 "$tmp/err")"; fi

# start-up unchanged: no MPI library unless a process group is asked for
LD_DEBUG=libs "$EMBER" -e 'local d = ember.distributed; assert(d.is_main_process())' > "$tmp/out" 2>&1; rc=$?
if [ $rc = 0 ] && ! grep -qi "libmpi\|libember_mpi\|open-pal" "$tmp/out"; then ok "start-up and require of ember.distributed load no MPI library"
else not_ok "no MPI library at start-up" "status $rc" "$(grep -i mpi "$tmp/out" | head -5)"; fi
"$EMBER" -e 'local d = ember.distributed; d.init_process_group(); for l in io.lines("/proc/self/maps") do if l:find("libmpi") then print("mapped") return end end' > "$tmp/out" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q "^mapped$" "$tmp/out"; then ok "init_process_group without mpirun: a world of one, libmpi mapped then"
else not_ok "singleton init" "status $rc" "$(head -c 800 "$tmp/out")"; fi

echo "1..$n"
[ "$failed" -eq 0 ]
