#!/usr/bin/env bash
# gpu_bundle_test.sh — the bundle a lent GPU machine runs (scripts/gpu-bundle.sh),
# run the GPU machine's way (scripts/gpu-bare-check.sh: Lua, busted, OpenMPI,
# OpenBLAS, oneDNN and readline hidden), so that a library ember comes to open
# with dlopen but the bundle lacks shows here and not in the GPU session's
# few minutes. With no GPU the twins run against the CPU backend: this checks
# the bundle and the harness, not the kernels. The whole GPU suite that way
# is `bash scripts/gpu-bundle.sh && bash scripts/gpu-bare-check.sh` (minutes);
# here: OpenBLAS's GEMM and LAPACK and oneDNN's convolution from the bundle,
# one GPU twin that needs them, and the shell on a terminal without readline.
# Skipped without root or mount namespaces (both scripts need them), on a
# sanitizer build, or without the CUDA backend built.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
. tests/shell/tap.sh

names=("the bundle builds" "OpenBLAS and oneDNN load from the bundle"
       "a GPU twin passes against the CPU, bare" "the shell's prompt on a terminal, bare")
skip_all() {   # the tests not yet reported, skipped for reason $1
    for name in "${names[@]:$n}"; do n=$((n + 1)); echo "ok $n - $name # SKIP $1"; done
    echo "1..$n"
    exit $((failed > 0))
}
[ "$BUILD" = build ] || skip_all "the bundle is made from build/ (BUILD=$BUILD)"
[ -e build/libember_cuda.so ] || skip_all "the CUDA backend is not built"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (unshare -m, mount --bind)"
unshare -m true 2>/dev/null || skip_all "no mount namespaces here (unshare -m failed)"
command -v xz >/dev/null || skip_all "xz is not installed (scripts/install-deps.sh installs it)"

out=$(bash scripts/gpu-bundle.sh 2>&1)
if [ $? -eq 0 ]; then ok "the bundle builds"; else not_ok "the bundle builds" "$out"; skip_all "no bundle"; fi

# a GEMM (OpenBLAS), a solve (its LAPACK) and a convolution (oneDNN), CPU tensors
prog='local a = ember.randn(64, 64, {dtype = "float64"})
local b = ember.randn(64, 3, {dtype = "float64"})
local x = ember.linalg.solve(a, b)
assert((a:matmul(x) - b):abs():max():item() < 1e-8, "solve")
local y = ember.nn.functional.conv2d(ember.ones(1, 1, 5, 5), ember.ones(1, 1, 3, 3))
assert(y:sum():item() == 81, "conv2d")
print("bare ok")'
out=$(bash scripts/gpu-bare-check.sh bash -c '"$EMBER" -e "$1"' bare "$prog" 2>&1)
if [ $? -eq 0 ] && grep -q "^bare ok$" <<<"$out"; then ok "OpenBLAS and oneDNN load from the bundle"
else not_ok "OpenBLAS and oneDNN load from the bundle" "$out"; fi

# shellcheck disable=SC2016  # expanded inside the namespace, where gpu-run.sh sets BUSTED
out=$(bash scripts/gpu-bare-check.sh bash -c '$BUSTED -o TAP tests/gpu/linear_fused_spec.lua' 2>&1)
if [ $? -eq 0 ] && grep -q "^1\.\.[1-9]" <<<"$out" && ! grep -q "^not ok" <<<"$out"; then
    ok "a GPU twin passes against the CPU, bare"
else not_ok "a GPU twin passes against the CPU, bare" "$(grep -A3 '^not ok' <<<"$out" | head -20)$(tail -5 <<<"$out")"; fi

if /usr/bin/python3 -c 'import pexpect' 2>/dev/null; then
    out=$(bash scripts/gpu-bare-check.sh python3 tests/gpu/shell_test.py 2>&1)
    if [ $? -eq 0 ] && grep -q "^ok 1 " <<<"$out"; then ok "the shell's prompt on a terminal, bare"
    else not_ok "the shell's prompt on a terminal, bare" "$out"; fi
else
    n=$((n + 1)); echo "ok $n - the shell's prompt on a terminal, bare # SKIP pexpect is not installed"
fi
echo "1..$n"
[ "$failed" -eq 0 ]
