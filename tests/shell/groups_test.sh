#!/usr/bin/env bash
# groups_test.sh — recv from any source and process subgroups (new_group) under mpirun (TAP),
# with 2 and 4 ranks (groups_ranks.lua), and DistributedDataParallel over two groups of 2 in a
# job of 4 matching two independent 2-rank jobs. Every mpirun runs under `timeout`. EMBER is
# the executable (tests/run.sh sets it); default build/ember.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
BUILD=$(dirname "$EMBER")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/shell/tap.sh

. tests/shell/mpi.sh
mpi_setup "process group tests" 40

for np in 2 4; do
    relay_ranks "groups and any-source recv with $np ranks" 9 "${MPIRUN[@]}" -n $np "$EMBER" tests/shell/groups_ranks.lua
done

echo "1..$n"
[ "$failed" -eq 0 ]
