#!/usr/bin/env bash
# ddp_test.sh — nn.parallel.DistributedDataParallel under mpirun with 2 ranks (TAP): the groups of
# tests/shell/ddp_ranks.lua (20 steps against one process on the whole batch and against PyTorch's
# DDP over gloo, no_sync, find_unused_parameters, buckets, buffers, differing models), and the
# training scripts' --distributed. Every mpirun runs under `timeout`, so a hang fails instead of
# blocking. EMBER is the executable (tests/run.sh sets it); default build/ember.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
BUILD=$(dirname "$EMBER")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/shell/tap.sh

if ! command -v mpirun >/dev/null 2>&1 || [ ! -e "$BUILD/libember_mpi.so" ]; then
    echo "ok 1 - DistributedDataParallel tests # SKIP no mpirun or no $BUILD/libember_mpi.so (Debian: openmpi-bin libopenmpi-dev)"
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0
MPIRUN=(timeout 120 mpirun --oversubscribe)

"${MPIRUN[@]}" -n 2 "$EMBER" tests/shell/ddp_ranks.lua tests/lua/fixtures/ddp_torch.lua > "$tmp/out" 2> "$tmp/err"; rc=$?
while read -r line; do
    case "$line" in
        "ok "*) ok "${line#ok [0-9]* - }" ;;
        "not ok "*) not_ok "${line#not ok [0-9]* - }" "$(grep "^#" "$tmp/err" | head -20)" ;;
    esac
done < "$tmp/out"
plan=$(grep -cE '^(ok|not ok) ' "$tmp/out")
if [ $rc = 0 ] && grep -q "^1\.\.$plan\$" "$tmp/out" && [ "$plan" -ge 10 ]; then ok "DDP with 2 ranks: all groups ran, exit 0"
else not_ok "DDP with 2 ranks: all groups ran, exit 0" "status $rc, $plan groups" "$(tail -c 1500 "$tmp/err")"; fi

echo "1..$n"
[ "$failed" -eq 0 ]
