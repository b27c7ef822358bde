#!/usr/bin/env bash
# libs_test.sh — the shared objects the engine opens with dlopen at run time
# (the CUDA backend, the MPI and NCCL communication backends) load with every
# symbol resolved (RTLD_NOW). The engine opens them lazily, so a symbol a
# file declares but no file defines (a C++ definition of an extern "C"
# declaration) would otherwise show only on the first GPU or distributed run.
# Loading needs no GPU: the CUDA runtime is linked statically and opens the
# driver only when asked. A library that was not built is skipped.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
. tests/shell/tap.sh

for lib in libember_cuda.so libember_mpi.so libember_nccl.so; do
    path=$BUILD/$lib
    if [ ! -e "$path" ]; then
        n=$((n + 1)); echo "ok $n - $lib loads with every symbol resolved # SKIP not built"
        continue
    fi
    if ldd "$path" 2>/dev/null | grep -q 'libasan\|libubsan'; then
        # a sanitizer build loads only into a process whose runtime comes first
        n=$((n + 1)); echo "ok $n - $lib loads with every symbol resolved # SKIP sanitizer build"
        continue
    fi
    out=$(/usr/bin/python3 -c 'import ctypes, os, sys; ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_LOCAL)' \
          "$path" 2>&1)
    if [ $? -eq 0 ]; then ok "$lib loads with every symbol resolved"
    else not_ok "$lib loads with every symbol resolved" "$out"; fi
done
echo "1..$n"
[ "$failed" -eq 0 ]
