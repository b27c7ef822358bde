#!/usr/bin/env bash
# scripts/gpu-bundle.sh — packs what the GPU machine needs into .gpu/bundle.tar.xz
# (an ignored folder that the device tool carries): the ember executable,
# ember.so and libember_cuda.so built here (same CUDA version, x86-64), the
# shared libraries they use that a bare machine lacks (Lua, readline,
# OpenBLAS, cJSON, ...; not glibc, not the CUDA libraries, which the GPU
# machine has: cuDNN's front library must come from the folder that holds its
# engine libraries, which gpu-run.sh finds there), and busted with its Lua modules for the test suites.
# Compressed, because OpenBLAS alone is 36 MB and the carry limit is 64 MiB.
#   bash scripts/gpu-bundle.sh            then, on the GPU machine:
#   bash scripts/gpu-run.sh bash tests/gpu/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -j"$(nproc)" BUILD="$BUILD" WITH_CUDA=1 all >/dev/null
out=.gpu
rm -rf "$out/stage"
mkdir -p "$out/stage/bin" "$out/stage/lib" "$out/stage/lua/share" "$out/stage/lua/lib"
cp "$BUILD/ember" "$BUILD/ember.so" "$BUILD/libember_cuda.so" "$out/stage/bin/"
for lib in $(ldd "$BUILD/ember" "$BUILD/libember_cuda.so" /usr/lib/x86_64-linux-gnu/lua/5.4/*.so \
             /usr/lib/x86_64-linux-gnu/lua/5.4/*/*.so 2>/dev/null | awk '/=> \// {print $3}' | sort -u); do
    case $(basename "$lib") in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libcublas*|libcudart*|libcuda.so*|libcudnn*|libcusolver*|libcusparse*|libnvJitLink*) continue ;;
    esac
    cp -L "$lib" "$out/stage/lib/"
done
cp -r /usr/share/lua/5.4/. "$out/stage/lua/share/"
cp -r /usr/lib/x86_64-linux-gnu/lua/5.4/. "$out/stage/lua/lib/"
cp /usr/bin/busted "$out/stage/bin/busted.lua"
tar -C "$out/stage" -cJf "$out/bundle.tar.xz" .
rm -rf "$out/stage"
echo "$out/bundle.tar.xz: $(du -h "$out/bundle.tar.xz" | cut -f1)"
