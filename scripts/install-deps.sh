#!/usr/bin/env bash
# install-deps.sh — installs ember's build, test and benchmark dependencies
# from Debian packages; does nothing when everything is already present.
#   scripts/install-deps.sh          what building and testing need
#   scripts/install-deps.sh --bench  also PyTorch (CPU) for the benchmark table
set -euo pipefail

packages=(
    build-essential pkg-config        # compiler, make, pkg-config
    lua5.4 liblua5.4-dev              # the embedded interpreter
    libreadline-dev                   # the shell
    libopenblas-dev                   # CPU GEMM
    libdnnl-dev                       # CPU convolution (oneDNN, opened at run time)
    zlib1g-dev libcjson-dev           # data files and checkpoints (later issues)
    lua-busted                        # Lua test runner
    python3 python3-pexpect           # shell tests over a pseudo-terminal
    gnuplot-nox                       # ember.plot's renderer
    dataset-fashion-mnist             # the training example's data
)
if [ "${1:-}" = "--bench" ]; then
    packages+=(python3-torch hyperfine    # PyTorch's CPU figures beside ours; start-up timing
               python3-matplotlib)        # matplotlib's plotting time beside ours
fi

missing=()
for p in "${packages[@]}"; do
    # "install ok installed" is dpkg's status of a package that is present
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
