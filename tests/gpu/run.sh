#!/usr/bin/env bash
# tests/gpu/run.sh — the GPU suites only (make test-gpu). Unlike make test,
# where they skip without a GPU, this fails when no CUDA device can be used,
# saying why, so a GPU run cannot pass by skipping everything.
#   BUILD=dir                   where the build lives (default build)
#   EMBER_GPU_TEST_DEVICE=cpu   run the suites against the CPU backend: needs
#                               no GPU (checks the test code itself)
#   EMBER_GPU_TEST_DEVICE=cuda:N  test another device (default cuda = cuda:0)
#   EMBER_CUDA_SYNC=1           synchronise after every kernel (errors pinned
#                               to their op)
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}

if [ ! -e "$BUILD/ember.so" ]; then
    echo "tests/gpu/run.sh: $BUILD/ember.so is missing: build first (make)" >&2
    exit 2
fi

if [ "${EMBER_GPU_TEST_DEVICE:-cuda}" != cpu ]; then
    # the suites' own rule (gpu_helpers.skip_reason) decides
    # asked of ember itself, the one Lua every machine with a build has
    case $BUILD in /*) build_dir=$BUILD ;; *) build_dir=$PWD/$BUILD ;; esac
    why=$(LUA_CPATH="$build_dir/?.so;;" \
          LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;$PWD/tests/gpu/?.lua;;" \
          "$build_dir/ember" -e 'io.write(require("gpu_helpers").skip_reason() or "")' 2>&1) || true
    if [ -n "$why" ]; then
        echo "tests/gpu/run.sh: cannot run the GPU suites: $why" >&2
        echo "  (make test-gpu needs a CUDA device and $BUILD/libember_cuda.so, built by make WITH_CUDA=1;" >&2
        echo "   EMBER_GPU_TEST_DEVICE=cpu runs the suites against the CPU backend instead)" >&2
        exit 1
    fi
fi

ONLY=gpu BUILD=$BUILD exec bash tests/run.sh
