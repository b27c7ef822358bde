#!/usr/bin/env bash
# scripts/gpu-run.sh CMD... — runs CMD on the GPU machine with the bundle of
# scripts/gpu-bundle.sh unpacked (into $EMBER_GPU_DIR, default
# /tmp/ember-gpu) and the environment pointing at it: EMBER (the
# executable), BUILD and EMBER_BUILD (its folder), BUSTED (busted run by the ember
# executable, since the machine has no Lua), LUA_PATH/LUA_CPATH, and the
# loader path. Example: bash scripts/gpu-run.sh bash tests/gpu/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${EMBER_GPU_DIR:-/tmp/ember-gpu}
if [ ! -x "$dest/bin/ember" ] || [ .gpu/bundle.tar.xz -nt "$dest/bin/ember" ]; then
    mkdir -p "$dest"
    tar -C "$dest" -xJf .gpu/bundle.tar.xz
fi
# cuDNN 9 and NCCL: the toolkit's folder when it holds them, else the folders
# PyTorch's wheels (nvidia-cudnn-*, nvidia-nccl-*) bring
cuda_lib=${CUDA_HOME:-/usr/local/cuda}/lib64
wheel_dir() { # library file pattern: the folder of the first match in the nvidia wheels
    python3 -c 'import glob, os, sys, nvidia
for p in nvidia.__path__:
    for f in glob.glob(os.path.join(p, "**", sys.argv[1]), recursive=True):
        print(os.path.dirname(f)); raise SystemExit' "$1" 2>/dev/null || true
}
extra_lib=
for pattern in 'libcudnn_cnn.so.9*' 'libnccl.so.2*'; do
    if ! ls "$cuda_lib"/$pattern >/dev/null 2>&1; then
        dir=$(wheel_dir "$pattern")
        if [ -n "$dir" ]; then extra_lib=${extra_lib:+$extra_lib:}$dir; fi
    fi
done
# Fashion-MNIST as gpu-bundle.sh --data packed it (xz), back into the .gz
# files the loaders read, once; FM_DATA points at them
if ls .gpu/data/*-ubyte.xz >/dev/null 2>&1; then
    for f in .gpu/data/*-ubyte.xz; do
        gz=$dest/data/$(basename "$f" .xz).gz
        if [ ! -e "$gz" ] || [ "$f" -nt "$gz" ]; then
            mkdir -p "$dest/data"
            python3 -c 'import gzip, lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, gzip.open(sys.argv[2] + ".part", "wb", compresslevel=1) as o:
    shutil.copyfileobj(i, o, 1 << 20)' "$f" "$gz" && mv "$gz.part" "$gz"
        fi
    done
    export FM_DATA=${FM_DATA:-$dest/data}
fi
export LD_LIBRARY_PATH="$dest/lib${extra_lib:+:$extra_lib}:$cuda_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export BUILD="$dest/bin" EMBER_BUILD="$dest/bin" EMBER="$dest/bin/ember" EMBER_CUDA_LIB="$dest/bin/libember_cuda.so"
# OpenMPI from the bundle: a singleton group (the NCCL suite's world size 1),
# isolated, since a singleton otherwise starts OpenMPI's orted, which the
# bundle does not carry
if [ -d "$dest/openmpi" ]; then
    export OMPI_MCA_mca_base_component_path="$dest/openmpi/components" OPAL_PKGDATADIR="$dest/openmpi/share"
    export OMPI_MCA_ess_singleton_isolated=1
    # the bundle's mpirun for several processes (scripts/gpu-session.sh ddp);
    # as root it needs OpenMPI's consent
    export PATH="$dest/openmpi/bin:$PATH"
    if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
fi
export BUSTED="$dest/bin/ember $dest/bin/busted.lua"
export LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;$PWD/tests/lua/?.lua;$PWD/tests/gpu/?.lua;$dest/lua/share/?.lua;$dest/lua/share/?/init.lua;;"
export LUA_CPATH="$dest/bin/?.so;$dest/lua/lib/?.so;;"
exec "$@"
