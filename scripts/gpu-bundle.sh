#!/usr/bin/env bash
# scripts/gpu-bundle.sh — packs what the GPU machine needs into .gpu/bundle.tar.xz
# (an ignored folder that the device tool carries): the ember executable,
# ember.so, libember_cuda.so and the distributed backends built here (same
# CUDA version, x86-64), OpenMPI's plugins, oneDNN, the
# shared libraries they use that a bare machine lacks (Lua,
# OpenBLAS, cJSON, ...; not glibc, not the CUDA libraries, which the GPU
# machine has: cuDNN's front library must come from the folder that holds its
# engine libraries, which gpu-run.sh finds there), and busted with its Lua modules for the test suites.
# Compressed, because OpenBLAS alone is 36 MB and the carry limit is 64 MiB.
#   bash scripts/gpu-bundle.sh            then, on the GPU machine:
#   bash scripts/gpu-run.sh bash tests/gpu/run.sh
#   (or scripts/gpu-session.sh's phases, logs under $OUT)
#   bash scripts/gpu-bundle.sh --data     also packs Fashion-MNIST (25 MiB, xz)
#   into .gpu/data, for the accuracy and epoch runs: carry it too (in a second
#   call when the total is over 64 MiB: the last lines say)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -j"$(nproc)" BUILD="$BUILD" WITH_CUDA=1 all >/dev/null
out=.gpu
rm -rf "$out/stage"
mkdir -p "$out/stage/bin" "$out/stage/lib" "$out/stage/lua/share" "$out/stage/lua/lib"
cp "$BUILD/ember" "$BUILD/ember.so" "$BUILD/libember_cuda.so" "$out/stage/bin/"
# the distributed backends (opened beside the engine) when built
comm_libs=()
for lib in libember_mpi.so libember_nccl.so; do
    if [ -e "$BUILD/$lib" ]; then cp "$BUILD/$lib" "$out/stage/bin/"; comm_libs+=("$BUILD/$lib"); fi
done
# OpenBLAS (engine/cpu/blas.c: GEMM and LAPACK) and oneDNN (the CPU
# convolutions the GPU twins compare with) are opened with dlopen, so ldd of
# ember does not list them
opened=()
for soname in libopenblas.so.0 libdnnl.so.2; do
    f=$(ldconfig -p | awk -v n="$soname" '$1 == n && /x86-64/ && !found {print $NF; found = 1}')   # no early exit: SIGPIPE under pipefail
    if [ -n "$f" ]; then opened+=("$f"); else echo "gpu-bundle: $soname not found (ldconfig -p); the bundle goes without it" >&2; fi
done
for lib in $(ldd "$BUILD/ember" "$BUILD/libember_cuda.so" ${comm_libs[@]+"${comm_libs[@]}"} ${opened[@]+"${opened[@]}"} \
             /usr/lib/x86_64-linux-gnu/lua/5.4/*.so \
             /usr/lib/x86_64-linux-gnu/lua/5.4/*/*.so 2>/dev/null | awk '/=> \// {print $3}' | sort -u) ${opened[@]+"${opened[@]}"}; do
    case $(basename "$lib") in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libcublas*|libcudart*|libcuda.so*|libcudnn*|libcusolver*|libcusparse*|libnvJitLink*|libnccl*|libOpenCL*) continue ;;
    esac
    cp -L "$lib" "$out/stage/lib/"
done
# OpenMPI's plugins, messages and launcher (a singleton process group, world
# size 1, needs no launcher); scripts/gpu-run.sh points OpenMPI at them
if [ ${#comm_libs[@]} -gt 0 ] && [ -d /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 ]; then
    mkdir -p "$out/stage/openmpi"
    cp -r /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 "$out/stage/openmpi/components"
    cp -r /usr/share/openmpi "$out/stage/openmpi/share"
    # mpirun (and orted) for jobs of several processes on that machine's cores
    if command -v orterun >/dev/null; then
        mkdir -p "$out/stage/openmpi/bin"
        cp "$(command -v orterun)" "$out/stage/openmpi/bin/mpirun"
        cp "$(command -v orted)" "$out/stage/openmpi/bin/orted"
    fi
    for lib in $(ldd "$out"/stage/openmpi/components/*.so 2>/dev/null | awk '/=> \// {print $3}' | sort -u); do
        case $(basename "$lib") in
            libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libcuda.so*|libcudart*) continue ;;
        esac
        [ -e "$out/stage/lib/$(basename "$lib")" ] || cp -L "$lib" "$out/stage/lib/"
    done
fi
cp -rL /usr/share/lua/5.4/. "$out/stage/lua/share/"   # -L: Debian links them to ../5.1
cp -rL /usr/lib/x86_64-linux-gnu/lua/5.4/. "$out/stage/lua/lib/"
cp /usr/bin/busted "$out/stage/bin/busted.lua"
# host debug information is most of ember's own files and not used there
# (symbols stay, for backtraces; the device code's line info is in the fatbin)
strip --strip-debug "$out"/stage/bin/ember "$out"/stage/bin/*.so
if [ "${1:-}" = --data ]; then
    # xz instead of the files' gzip (26.5 MB instead of 30.9); gpu-run.sh
    # turns them back into the .gz files the loaders read
    fm=${FM_DATA:-/usr/share/datasets/fashion-mnist}
    rm -rf "$out/data"
    mkdir -p "$out/data"
    for f in "$fm"/*-ubyte.gz; do
        gzip -dc "$f" | xz -9 -T0 > "$out/data/$(basename "$f" .gz).xz"
    done
    echo "$out/data: $(du -sh "$out/data" | cut -f1) (Fashion-MNIST from $fm)"
fi
tar -C "$out/stage" -cJf "$out/bundle.tar.xz" .
rm -rf "$out/stage"
echo "$out/bundle.tar.xz: $(du -h "$out/bundle.tar.xz" | cut -f1)"
# What a device call sends: the working tree (tracked and untracked-not-
# ignored files) and the paths it carries, at most 64 MiB together. When the
# bundle and the data do not fit in one call, the first call carries
# .gpu/bundle.tar.xz and a later one on the still warm machine carries
# .gpu/data: the machine keeps the bundle (and gpu-run.sh's unpacked copy).
tree=$({ git ls-files -z -co --exclude-standard | xargs -0 stat -c %s 2>/dev/null || true; } | awk '{s += $1} END {print s + 0}')
bundle=$(stat -c %s "$out/bundle.tar.xz")
data=0
if [ -d "$out/data" ]; then data=$(du -sb "$out/data" | cut -f1); fi
awk -v t="$tree" -v b="$bundle" -v d="$data" 'BEGIN {
    m = 2^20; lim = 64 * m
    printf "travels (of 64 MiB): the tree %.1f MiB + the bundle %.1f = %.1f", t / m, b / m, (t + b) / m
    if (d > 0) {
        printf "; + .gpu/data %.1f = %.1f", d / m, (t + b + d) / m
        if (t + b + d > lim) printf " (over: carry .gpu/bundle.tar.xz, then .gpu/data in a second call on the warm machine)"
    }
    printf "\n" }'
if [ $((tree + bundle)) -gt $((64 << 20)) ] || [ $((tree + data)) -gt $((64 << 20)) ]; then
    echo "gpu-bundle: the tree and the bundle (or the data) alone are over the device tool's 64 MiB" >&2
    exit 1
fi
