#!/usr/bin/env bash
# ddp_test.sh — nn.parallel.DistributedDataParallel under mpirun with 2 ranks (TAP): the groups of
# tests/shell/ddp_ranks.lua (20 steps against one process on the whole batch and against PyTorch's
# DDP over gloo, no_sync, find_unused_parameters, buckets, buffers, differing models), those of
# tests/shell/sync_bn_ranks.lua (nn.SyncBatchNorm against BatchNorm on the whole batch), and the
# training scripts' --distributed. Every mpirun runs under `timeout`, so a hang fails instead of
# blocking. EMBER is the executable (tests/run.sh sets it); default build/ember.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
BUILD=$(dirname "$EMBER")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/shell/tap.sh

. tests/shell/mpi.sh
mpi_setup "DistributedDataParallel tests" 120

relay_ranks "DDP with 2 ranks" 10 "${MPIRUN[@]}" -n 2 "$EMBER" tests/shell/ddp_ranks.lua tests/lua/fixtures/ddp_torch.lua
relay_ranks "SyncBatchNorm with 2 ranks" 4 "${MPIRUN[@]}" -n 2 "$EMBER" tests/shell/sync_bn_ranks.lua

# the training scripts' --distributed: every rank trains, rank 0 alone prints and checkpoints
case $EMBER in /*) ;; *) EMBER=$PWD/$EMBER ;; esac
ROOT=$PWD
if [ -e /usr/share/datasets/fashion-mnist ]; then
    (cd "$tmp" && timeout 300 "$EMBER" --nproc 2 "$ROOT/scripts/fashion_mnist_mlp.lua" --distributed --epochs 1 \
        --limit 2000 --checkpoint "$tmp/fm.st" > "$tmp/fm.out" 2> "$tmp/fm.err"); rc=$?
    if [ $rc = 0 ] && [ "$(grep -c 'epoch  1/1  train loss' "$tmp/fm.out")" = 1 ] && [ -e "$tmp/fm.st" ]
    then ok "fashion_mnist_mlp --distributed with 2 ranks: trains, one epoch line, a checkpoint"
    else not_ok "fashion_mnist_mlp --distributed" "status $rc" "$(cat "$tmp/fm.out")" "$(tail -c 1500 "$tmp/fm.err")"; fi
    # the checkpoint resumes without --distributed (the unwrapped model's names), one more epoch
    (cd "$tmp" && timeout 300 "$EMBER" "$ROOT/scripts/fashion_mnist_mlp.lua" --epochs 2 --limit 2000 \
        --checkpoint "$tmp/fm.st" --resume > "$tmp/fm2.out" 2> "$tmp/fm2.err"); rc=$?
    if [ $rc = 0 ] && grep -q "resumed from .* after epoch 1" "$tmp/fm2.out" && grep -q '^epoch  2/2' "$tmp/fm2.out"
    then ok "fashion_mnist_mlp: a --distributed checkpoint resumes in one process"
    else not_ok "--distributed checkpoint resumes in one process" "status $rc" "$(cat "$tmp/fm2.out" "$tmp/fm2.err" | tail -c 1500)"; fi
    (cd "$tmp" && timeout 60 "$EMBER" --nproc 2 "$ROOT/scripts/fashion_mnist_mlp.lua" --distributed --batch-size 127 \
        --limit 500 > "$tmp/fm3.out" 2> "$tmp/fm3.err"); rc=$?
    if [ $rc != 0 ] && [ $rc != 124 ] && grep -q -- "--batch-size 127 does not split evenly over 2 ranks" "$tmp/fm3.err"
    then ok "fashion_mnist_mlp --distributed: an indivisible batch is a clear error"
    else not_ok "indivisible batch" "status $rc" "$(tail -c 1500 "$tmp/fm3.err")"; fi
else
    for t in "fashion_mnist_mlp --distributed" "--distributed checkpoint resumes" "indivisible batch"; do
        ok "$t # SKIP Fashion-MNIST not installed (dataset-fashion-mnist)"
    done
fi

# char_gpt: one log, and a resumed distributed run equals an uninterrupted one
head -c 30000 /usr/share/common-licenses/GPL-3 > "$tmp/text.txt" 2>/dev/null ||
    for i in $(seq 1 600); do echo "the quick brown fox $i jumps over the lazy dog."; done > "$tmp/text.txt"
GPT=("$ROOT/scripts/char_gpt.lua" "$tmp/text.txt" --layers 1 --heads 2 --d-model 32 --context 16 --batch 16
     --warmup 5 --log-every 10 --eval-every 10 --eval-batches 2 --steps 30 --distributed)
(cd "$tmp" && timeout 120 "$EMBER" --nproc 2 "${GPT[@]}" --out "$tmp/full.st" > "$tmp/g1" 2> "$tmp/g1.err"
 timeout 120 "$EMBER" --nproc 2 "${GPT[@]}" --out "$tmp/part.st" --stop-after 20 > "$tmp/g2" 2> "$tmp/g2.err"
 timeout 120 "$EMBER" --nproc 2 "${GPT[@]}" --out "$tmp/part.st" --resume > "$tmp/g3" 2> "$tmp/g3.err"); rc=$?
last_full=$(grep "^step    30/30" "$tmp/g1" | sed 's/  [0-9.]* ms\/step.*//')
last_resumed=$(grep "^step    30/30" "$tmp/g3" | sed 's/  [0-9.]* ms\/step.*//')
if [ $rc = 0 ] && [ "$(grep -c "^step    30/30  validation" "$tmp/g1")" = 1 ] && [ -n "$last_full" ] &&
   [ "$last_full" = "$last_resumed" ] && [ "$(grep -c '^resumed from' "$tmp/g3")" = 1 ]
then ok "char_gpt --distributed with 2 ranks: one log; a resumed run ends where an uninterrupted one does"
else not_ok "char_gpt --distributed" "status $rc" "full: $last_full" "resumed: $last_resumed" "$(tail -c 1000 "$tmp/g1.err" "$tmp/g3.err")"; fi

echo "1..$n"
[ "$failed" -eq 0 ]
