#!/usr/bin/env bash
# scripts/gpu-run.sh CMD... — runs CMD on the GPU machine with the bundle of
# scripts/gpu-bundle.sh unpacked (into $EMBER_GPU_DIR, default
# /tmp/ember-gpu) and the environment pointing at it: EMBER (the
# executable), EMBER_BUILD (its folder), BUSTED (busted run by the ember
# executable, since the machine has no Lua), LUA_PATH/LUA_CPATH, and the
# loader path. Example: bash scripts/gpu-run.sh bash tests/gpu/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${EMBER_GPU_DIR:-/tmp/ember-gpu}
if [ ! -x "$dest/bin/ember" ] || [ .gpu/bundle.tar.xz -nt "$dest/bin/ember" ]; then
    mkdir -p "$dest"
    tar -C "$dest" -xJf .gpu/bundle.tar.xz
fi
# cuDNN 9: the toolkit's folder when it holds the engine libraries, else the
# one PyTorch's wheel (nvidia-cudnn-*) brings
cuda_lib=${CUDA_HOME:-/usr/local/cuda}/lib64
cudnn_lib=
if ! ls "$cuda_lib"/libcudnn_cnn.so.9* >/dev/null 2>&1; then
    cudnn_lib=$(python3 -c 'import glob, os, nvidia
for p in nvidia.__path__:
    for f in glob.glob(os.path.join(p, "**", "libcudnn_cnn.so.9*"), recursive=True):
        print(os.path.dirname(f)); raise SystemExit' 2>/dev/null || true)
fi
export LD_LIBRARY_PATH="$dest/lib${cudnn_lib:+:$cudnn_lib}:$cuda_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export EMBER_BUILD="$dest/bin" EMBER="$dest/bin/ember" EMBER_CUDA_LIB="$dest/bin/libember_cuda.so"
export BUSTED="$dest/bin/ember $dest/bin/busted.lua"
export LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;$PWD/tests/lua/?.lua;$PWD/tests/gpu/?.lua;$dest/lua/share/?.lua;$dest/lua/share/?/init.lua;;"
export LUA_CPATH="$dest/bin/?.so;$dest/lua/lib/?.so;;"
exec "$@"
