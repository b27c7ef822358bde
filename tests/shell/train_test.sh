#!/usr/bin/env bash
# train_test.sh — the Fashion-MNIST training scripts, on a slice of the data:
# the loss falls, a resumed run ends in the same state as an uninterrupted
# one (byte-identical checkpoints), and bad arguments fail clearly. The MLP
# script gets every check; the CNN script (the same loop,
# scripts/fashion_mnist_common.lua) the loss and resume ones.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
SCRIPT=scripts/fashion_mnist_mlp.lua
DATA=/usr/share/datasets/fashion-mnist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }

if [ ! -e "$DATA/train-images-idx3-ubyte.gz" ]; then
    for t in "loss falls" "resume equals an uninterrupted run" "resume without a checkpoint" \
             "--plot without a terminal" "--plot on a terminal" "cnn: loss falls" "cnn: resume" \
             "amp bfloat16: loss falls" "amp float16: loss falls"; do
        n=$((n + 1)); echo "ok $n - $t # SKIP Fashion-MNIST not installed (dataset-fashion-mnist)"
    done
else
    out=$("$EMBER" $SCRIPT --epochs 2 --limit 3000 --checkpoint "$tmp/a.st" 2>&1)
    l1=$(echo "$out" | awk '/^epoch  1/ {print $5}')
    l2=$(echo "$out" | awk '/^epoch  2/ {print $5}')
    if [ -n "$l1" ] && [ -n "$l2" ] && awk -v a="$l1" -v b="$l2" 'BEGIN { exit !(b < a * 0.8) }'; then
        ok "loss falls ($l1 -> $l2)"
    else
        not_ok "loss falls" "$out"
    fi

    "$EMBER" $SCRIPT --epochs 3 --limit 3000 --checkpoint "$tmp/full.st" > "$tmp/full.log" 2>&1
    "$EMBER" $SCRIPT --epochs 3 --stop-after 2 --limit 3000 --checkpoint "$tmp/part.st" > "$tmp/part.log" 2>&1
    "$EMBER" $SCRIPT --epochs 3 --limit 3000 --checkpoint "$tmp/part.st" --resume > "$tmp/resume.log" 2>&1
    last_full=$(grep '^epoch  3' "$tmp/full.log" | awk '{print $5, $8}')
    last_resumed=$(grep '^epoch  3' "$tmp/resume.log" | awk '{print $5, $8}')
    if cmp -s "$tmp/full.st" "$tmp/part.st" && [ -n "$last_full" ] && [ "$last_full" = "$last_resumed" ]; then
        ok "resume equals an uninterrupted run (identical checkpoints, epoch 3: $last_full)"
    else
        not_ok "resume equals an uninterrupted run" "full: $last_full" "resumed: $last_resumed" "$(cat "$tmp/resume.log")"
    fi

    # --plot: without a terminal only the file (a PNG: its signature), no chart on stdout
    ember_abs=$(cd "$(dirname "$EMBER")" && pwd)/$(basename "$EMBER")
    out=$(cd "$tmp" && "$ember_abs" "$OLDPWD/$SCRIPT" --epochs 2 --limit 2000 --plot --checkpoint p.st 2>&1); rc=$?
    sig=$(head -c 8 "$tmp/loss.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')
    if [ $rc -eq 0 ] && [ "$sig" = 89504e470d0a1a0a ] && ! echo "$out" | grep -q -- '+-----' \
       && echo "$out" | grep -q "loss curves written to loss.png"; then
        ok "--plot without a terminal writes loss.png and draws nothing"
    else
        not_ok "--plot without a terminal writes loss.png and draws nothing" "rc=$rc sig=$sig" "$out"
    fi
    # on a terminal (script(1) gives it one): a chart after each epoch's line, and the file
    out=$(TERM=dumb COLUMNS=80 LINES=30 script -qec "$EMBER $SCRIPT --epochs 2 --limit 2000 --plot \
          --checkpoint $tmp/q.st --plot-file $tmp/curves.svg" /dev/null 2>&1); rc=$?
    charts=$(echo "$out" | grep -c "Fashion-MNIST MLP")
    order=$(echo "$out" | tr '\r' '\n' | grep -E "^epoch|Fashion-MNIST MLP" | sed -E 's/^epoch.*/E/; s/.*Fashion-MNIST MLP.*/C/' | tr -d '\n')
    if [ $rc -eq 0 ] && [ "$charts" -eq 2 ] && [ "$order" = ECEC ] && grep -q "<svg" "$tmp/curves.svg" \
       && grep -q ">test<" "$tmp/curves.svg"; then
        ok "--plot on a terminal draws the curves after each epoch and writes the file"
    else
        not_ok "--plot on a terminal draws the curves after each epoch and writes the file" \
               "rc=$rc charts=$charts order=$order" "$out"
    fi

    out=$("$EMBER" $SCRIPT --resume --checkpoint "$tmp/missing.st" 2>&1); rc=$?
    if [ $rc -ne 0 ] && echo "$out" | grep -q "missing.st"; then ok "resume without a checkpoint fails naming the file"
    else not_ok "resume without a checkpoint fails naming the file" "rc=$rc" "$out"; fi

    CNN=scripts/fashion_mnist_cnn.lua
    out=$("$EMBER" $CNN --epochs 2 --limit 1500 --checkpoint "$tmp/c.st" 2>&1)
    l1=$(echo "$out" | awk '/^epoch  1/ {print $5}')
    l2=$(echo "$out" | awk '/^epoch  2/ {print $5}')
    a2=$(echo "$out" | awk '/^epoch  2/ {print $8}')
    if [ -n "$l1" ] && [ -n "$l2" ] && awk -v a="$l1" -v b="$l2" -v c="$a2" 'BEGIN { exit !(b < a * 0.8 && c > 0.6) }'; then
        ok "cnn: loss falls ($l1 -> $l2, test accuracy $a2)"
    else
        not_ok "cnn: loss falls" "$out"
    fi
    "$EMBER" $CNN --epochs 2 --limit 600 --checkpoint "$tmp/cfull.st" > "$tmp/cfull.log" 2>&1
    "$EMBER" $CNN --epochs 2 --stop-after 1 --limit 600 --checkpoint "$tmp/cpart.st" > /dev/null 2>&1
    "$EMBER" $CNN --epochs 2 --limit 600 --checkpoint "$tmp/cpart.st" --resume > "$tmp/cresume.log" 2>&1
    last_full=$(grep '^epoch  2' "$tmp/cfull.log" | awk '{print $5, $8}')
    last_resumed=$(grep '^epoch  2' "$tmp/cresume.log" | awk '{print $5, $8}')
    if cmp -s "$tmp/cfull.st" "$tmp/cpart.st" && [ -n "$last_full" ] && [ "$last_full" = "$last_resumed" ]; then
        ok "cnn: resume equals an uninterrupted run (batch-norm buffers included; epoch 2: $last_full)"
    else
        not_ok "cnn: resume equals an uninterrupted run" "full: $last_full" "resumed: $last_resumed" \
               "$(cat "$tmp/cresume.log")"
    fi
fi

if [ -e "$DATA/train-images-idx3-ubyte.gz" ]; then
    # mixed precision: under autocast the loss still falls; float16 goes
    # through a GradScaler
    for dt in bfloat16 float16; do
        out=$("$EMBER" $SCRIPT --epochs 2 --limit 3000 --amp $dt --checkpoint "$tmp/amp.st" 2>&1)
        l1=$(echo "$out" | awk '/^epoch  1/ {print $5}')
        l2=$(echo "$out" | awk '/^epoch  2/ {print $5}')
        if [ -n "$l1" ] && [ -n "$l2" ] && awk -v a="$l1" -v b="$l2" 'BEGIN { exit !(b < a * 0.8) }'; then
            ok "amp $dt: loss falls ($l1 -> $l2)"
        else
            not_ok "amp $dt: loss falls" "$out"
        fi
    done
fi

out=$("$EMBER" $SCRIPT --amp float64 2>&1); rc=$?
if [ $rc -eq 1 ] && echo "$out" | grep -q "amp takes bfloat16 or float16, got float64"; then ok "bad --amp dtype"
else not_ok "bad --amp dtype" "rc=$rc" "$out"; fi

out=$("$EMBER" $SCRIPT --bogus 1 2>&1); rc=$?
if [ $rc -eq 1 ] && echo "$out" | grep -q "unknown option --bogus"; then ok "unknown option"
else not_ok "unknown option" "rc=$rc" "$out"; fi

out=$("$EMBER" $SCRIPT --epochs x 2>&1); rc=$?
if [ $rc -eq 1 ] && echo "$out" | grep -q "needs a number"; then ok "non-numeric value"
else not_ok "non-numeric value" "rc=$rc" "$out"; fi

echo "1..$n"
