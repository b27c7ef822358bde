#!/usr/bin/env bash
# gpu_test.sh — the shell's :gpu command (TAP), through the fake NVML
# (tests/nvml/fake_nvml.c; make test builds it as <build>/testlib/libfake_nvml.so)
# with the CUDA backend pointed away, so the table is the same on every
# machine; then without NVML.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
build=${EMBER_BUILD:-build}
case $build in /*) ;; *) build=$PWD/$build ;; esac   # tests/run.sh: absolute
FAKE=$build/testlib/libfake_nvml.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/shell/tap.sh
export EMBER_CUDA_LIB=/nonexistent/libember_cuda.so

# gpu NAME NVML_LIBRARY INPUT: pipes INPUT into the shell
gpu() {
    printf '%s\n' "$3" | EMBER_NVML_LIBRARY=$2 timeout 30 "$EMBER" > "$tmp/out" 2> "$tmp/err"
}
same() { # name, expected output
    if [ "$(cat "$tmp/out")" = "$2" ]; then ok "$1"
    else not_ok "$1" "got:" "$(cat "$tmp/out")" "expected:" "$2" "stderr: $(head -c 600 "$tmp/err")"; fi
}

if [ ! -f "$FAKE" ]; then
    echo "not ok 1 - no $FAKE (make test builds it)"
    exit 1
fi

gpu ":gpu" "$FAKE" ":gpu"
same ":gpu prints the table of the fake's two GPUs" "$(cat <<'T'
NVIDIA driver 535.999.01 (NVML)
GPU  name                     ember     mem used / total       util  mem%  temp  power / limit
  0  Fake GPU A100            -          1.0 GiB / 40.0 GiB     37%   21%   45C   123W / 400W
  1  Fake GPU H100            -          3.0 GiB / 80.0 GiB     12%    3%   61C    99W / N/A
ember: CUDA not in use in this session (no allocator figures)
T
)"
if [ ! -s "$tmp/err" ]; then ok ":gpu: nothing on stderr"; else not_ok ":gpu: nothing on stderr" "$(cat "$tmp/err")"; fi

gpu "without NVML" /nonexistent/libnvidia-ml.so.1 ":gpu"
same ":gpu without NVML: one line saying why, then ember's part" "$(cat <<'T'
no GPU table: NVML is not available (/nonexistent/libnvidia-ml.so.1 not found: /nonexistent/libnvidia-ml.so.1: cannot open shared object file: No such file or directory)
ember: CUDA not in use in this session (no allocator figures)
T
)"

gpu "session goes on" /nonexistent/libnvidia-ml.so.1 "$(printf ':gpu\nprint(6 * 7)')"
if tail -n 1 "$tmp/out" | grep -qx 42; then ok "the session goes on after :gpu without NVML"
else not_ok "the session goes on after :gpu without NVML" "$(cat "$tmp/out")"; fi

gpu "help" "$FAKE" ":help"
if grep -qE '^  :gpu +the GPUs \(NVML' "$tmp/out"; then ok ":help lists :gpu"
else not_ok ":help lists :gpu" "$(cat "$tmp/out")"; fi

gpu "complete" "$FAKE" ":complete :g"
if grep -qx ':gpu' "$tmp/out"; then ok "Tab completes :g to :gpu"
else not_ok "Tab completes :g to :gpu" "$(cat "$tmp/out")"; fi

# start-up leaves NVML alone: only :gpu (or a monitoring call) opens it
gpu "maps" "$FAKE" "$(printf 'for l in io.lines("/proc/self/maps") do if l:find("libfake_nvml", 1, true) then print("loaded") break end end\n:gpu\nfor l in io.lines("/proc/self/maps") do if l:find("libfake_nvml", 1, true) then print("loaded after :gpu") break end end')"
if ! grep -qx loaded "$tmp/out" && grep -qx "loaded after :gpu" "$tmp/out"; then ok "start-up does not load NVML; :gpu does"
else not_ok "start-up does not load NVML; :gpu does" "$(cat "$tmp/out")"; fi

echo "1..$n"
[ "$failed" -eq 0 ]
