#!/usr/bin/env bash
# tensorboard_test.sh — ember.utils.tensorboard's event files read back with
# TensorBoard's own loaders (the PyPI tensorboard package in the venv
# $EMBER_PYENV, default /opt/ember-pyenv): every event of a known set of
# summaries (tensorboard_write.lua, checked by tensorboard_read.py), a
# training script's --tensorboard run, and the same calls made with PyTorch's
# SummaryWriter compared record by record (tensorboard_torch.py; PyTorch 2.x
# from scripts/bench/torch-python's environment where it exists, else
# Debian's python3 with torch 1.13). Absent tools skip with the reason.
set -u
cd "$(dirname "$0")/../.."
source tests/shell/tap.sh
EMBER=${EMBER:-build/ember}
PYENV=${EMBER_PYENV:-/opt/ember-pyenv}
PY="$PYENV/bin/python"
DATA=/usr/share/datasets/fashion-mnist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

# relays a python checker's TAP lines, renumbered into this script's count
relay() {   # prefix, command...
    local prefix=$1; shift
    local out rc line
    out=$(timeout 300 "$@" 2>&1); rc=$?
    local seen=0
    while IFS= read -r line; do
        case "$line" in
            "ok "*) seen=1; ok "$prefix${line#ok * - }" ;;
            "not ok "*) seen=1; n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $prefix${line#not ok * - }" ;;
            "#"*) echo "$line" ;;
        esac
    done <<< "$out"
    if [ $rc -ne 0 ] || [ $seen -eq 0 ]; then not_ok "${prefix}checker ran to the end" "rc=$rc" "$out"; fi
}

if [ ! -x "$PY" ] || ! "$PY" -c "import tensorboard" 2>/dev/null; then
    skip "event files read back by TensorBoard" "no tensorboard venv at $PYENV (pip install tensorboard there, or set EMBER_PYENV)"
    skip "training script --tensorboard" "no tensorboard venv at $PYENV"
    skip "records compared with PyTorch's SummaryWriter" "no tensorboard venv at $PYENV"
    echo "1..$n"
    exit 0
fi

out=$(timeout 120 "$EMBER" tests/shell/tensorboard_write.lua "$tmp/w" 2>&1); rc=$?
if [ $rc -eq 0 ]; then ok "tensorboard_write.lua wrote its summaries"
else not_ok "tensorboard_write.lua wrote its summaries" "rc=$rc" "$out"; fi
relay "" "$PY" tests/shell/tensorboard_read.py summaries "$tmp/w"

if [ -e "$DATA/train-images-idx3-ubyte.gz" ]; then
    out=$(timeout 300 "$EMBER" scripts/fashion_mnist_mlp.lua --epochs 2 --limit 1200 --checkpoint "$tmp/m.st" \
          --tensorboard "$tmp/mlp" --tensorboard-every 3 2>&1); rc=$?
    if [ $rc -eq 0 ]; then ok "mlp --tensorboard ran"; else not_ok "mlp --tensorboard ran" "rc=$rc" "$out"; fi
    relay "mlp: " "$PY" tests/shell/tensorboard_read.py train "$tmp/mlp" train/loss test/loss test/accuracy lr
else
    skip "fashion_mnist_mlp.lua --tensorboard" "Fashion-MNIST not installed (dataset-fashion-mnist)"
fi

# char_gpt on a generated text and a tiny model
for i in $(seq 1 300); do echo "the quick brown fox $i jumps over the lazy dog."; done > "$tmp/text.txt"
out=$(timeout 300 "$EMBER" scripts/char_gpt.lua "$tmp/text.txt" --layers 1 --heads 2 --d-model 32 --context 16 \
      --batch 8 --warmup 2 --steps 30 --log-every 5 --eval-every 10 --eval-batches 1 --out "$tmp/g.st" \
      --tensorboard "$tmp/gpt" 2>&1); rc=$?
if [ $rc -eq 0 ]; then ok "char_gpt --tensorboard ran"; else not_ok "char_gpt --tensorboard ran" "rc=$rc" "$out"; fi
relay "char_gpt: " "$PY" tests/shell/tensorboard_read.py train "$tmp/gpt" train/loss val/loss lr

# a current PyTorch where `scripts/install-deps.sh --bench` made its environment,
# else Debian's (1.13)
TORCHENV=${EMBER_TORCHENV:-/opt/ember-torch}
if [ -x "$TORCHENV/bin/python" ] && scripts/bench/torch-python -c "import torch" 2>/dev/null; then
    relay "PyTorch: " scripts/bench/torch-python tests/shell/tensorboard_torch.py "$PYENV" "$tmp/w"
elif /usr/bin/python3 -c "import torch" 2>/dev/null; then
    relay "PyTorch: " /usr/bin/python3 tests/shell/tensorboard_torch.py "$PYENV" "$tmp/w"
else
    skip "records compared with PyTorch's SummaryWriter" "no torch in $TORCHENV or for /usr/bin/python3"
fi

echo "1..$n"
[ $failed -eq 0 ]
