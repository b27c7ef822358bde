#!/usr/bin/env bash
# scripts/gpu-bare-check.sh [CMD...] — tries the GPU machine's way of running
# ember here, before device time is spent on it: the bundle of
# scripts/gpu-bundle.sh unpacked and run through scripts/gpu-run.sh in a
# private mount namespace where what the GPU machine lacks is hidden (Lua,
# busted and its modules, OpenMPI, oneDNN, OpenBLAS, readline: empty files
# and folders mounted over them). With no GPU here the suites run against
# the CPU backend (EMBER_GPU_TEST_DEVICE=cpu), so this checks the bundle and
# the harness, not the kernels. Needs root (unshare, mount).
#   bash scripts/gpu-bundle.sh && bash scripts/gpu-bare-check.sh
#   bash scripts/gpu-bare-check.sh CMD ...   (default: bash tests/gpu/run.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -e .gpu/bundle.tar.xz ] || { echo "gpu-bare-check: no .gpu/bundle.tar.xz: run scripts/gpu-bundle.sh first" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "gpu-bare-check: needs root (unshare -m, mount --bind)" >&2; exit 2; }
if [ $# -eq 0 ]; then set -- bash tests/gpu/run.sh; fi

hide=(/usr/bin/lua5.4 /usr/bin/lua /usr/bin/busted /usr/bin/mpirun /usr/bin/orted /usr/share/lua
      /usr/lib/x86_64-linux-gnu/lua /usr/lib/x86_64-linux-gnu/openmpi /usr/share/openmpi
      /usr/lib/x86_64-linux-gnu/openblas-pthread)
for f in /usr/lib/x86_64-linux-gnu/liblua5.4* /usr/lib/x86_64-linux-gnu/libmpi* \
         /usr/lib/x86_64-linux-gnu/libopen-pal* /usr/lib/x86_64-linux-gnu/libopen-rte* \
         /usr/lib/x86_64-linux-gnu/libdnnl* /usr/lib/x86_64-linux-gnu/libreadline* \
         /usr/lib/x86_64-linux-gnu/libcjson*; do
    hide+=("$f")
done
empty=$(mktemp -d)
trap 'rm -rf "$empty"' EXIT
mkdir "$empty/dir"
touch "$empty/file"
export EMBER_GPU_TEST_DEVICE=${EMBER_GPU_TEST_DEVICE:-cpu} EMBER_GPU_DIR=${EMBER_GPU_DIR:-$empty/unpacked}
export GPU_BARE_HIDE="${hide[*]}" GPU_BARE_EMPTY=$empty
exec unshare -m bash -c '
    set -e
    for p in $GPU_BARE_HIDE; do
        [ -e "$p" ] || continue   # (a dangling link cannot be mounted over)
        if [ -d "$p" ]; then mount --bind "$GPU_BARE_EMPTY/dir" "$p"; else mount --bind "$GPU_BARE_EMPTY/file" "$p"; fi
    done
    mount --bind "$GPU_BARE_EMPTY/dir" "$PWD/build" 2>/dev/null || true
    exec bash scripts/gpu-run.sh "$@"' gpu-bare-check "$@"
