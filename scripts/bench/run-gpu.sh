#!/usr/bin/env bash
# scripts/bench/run-gpu.sh — the GPU benchmark table: ember beside PyTorch on
# the same GPU in the same run, and the ratio. Needs a GPU; run through
# `make bench-gpu`, or on the lent GPU machine through scripts/gpu-run.sh
# (EMBER then points at the bundled executable). Targets are in the README.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-$PWD/${BUILD:-build}/ember}
PY=${PYTHON:-python3}
FM=${FM_DATA:-/usr/share/datasets/fashion-mnist}
"$EMBER" -e 'assert(ember.cuda.is_available(), "bench-gpu: no GPU: " .. select(2, ember.cuda.is_available()))' || exit 1
"$EMBER" -e 'print("device: " .. ember.cuda.get_device_name())'
declare -A ours theirs units
while read -r name value unit; do ours[$name]=$value; units[$name]=$unit; done < <("$EMBER" scripts/bench/gpu_ops.lua)
if $PY -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    while read -r name value unit; do theirs[$name]=$value; done < <($PY scripts/bench/torch_gpu_ops.py)
fi
names="gpu_add_launch_us matmul4096_fp32_tflops matmul4096_tf32_tflops matmul8192_fp32_tflops matmul8192_tf32_tflops gpu_add256m_gbps gpu_copy256m_gbps gpu_add_vs_copy"
if [ -d "$FM" ]; then
    ck=$(mktemp -u)
    ours[fm_epoch_gpu_s]=$("$EMBER" scripts/fashion_mnist_mlp.lua --device cuda --epochs 2 --checkpoint "$ck" --data "$FM" | awk '/^epoch/ {print $9}' | sort -n | head -1)
    rm -f "$ck"
    units[fm_epoch_gpu_s]=s
    if [ -n "${theirs[gpu_add_launch_us]:-}" ]; then
        theirs[fm_epoch_gpu_s]=$($PY scripts/bench/fashion_mnist_torch.py "$FM" 2 cuda | awk '/^fm_epoch_s/ {print $2}')
    fi
    names="$names fm_epoch_gpu_s"
    ck=$(mktemp -u)
    ours[cnn_epoch_gpu_s]=$("$EMBER" scripts/fashion_mnist_cnn.lua --device cuda --epochs 2 --checkpoint "$ck" --data "$FM" | awk '/^epoch/ {print $9}' | sort -n | head -1)
    rm -f "$ck"
    units[cnn_epoch_gpu_s]=s
    if [ -n "${theirs[gpu_add_launch_us]:-}" ]; then
        theirs[cnn_epoch_gpu_s]=$($PY scripts/bench/fashion_mnist_torch.py "$FM" 2 cuda cnn | awk '/^fm_epoch_s/ {print $2}')
    fi
    names="$names cnn_epoch_gpu_s"
fi
# The character GPT at nanoGPT's shakespeare_char size, 50 steps: ember beside
# PyTorch eager (the ratio), and PyTorch with torch.compile noted beside it
GPT_TEXT=${GPT_TEXT:-data/shakespeare/shakespeare.txt}
if [ -s "$GPT_TEXT" ]; then
    size="--layers 6 --heads 6 --d-model 384 --context 256 --batch 64 --steps 50 --device cuda"
    ours[gpt_step_gpu_ms]=$("$EMBER" scripts/char_gpt.lua "$GPT_TEXT" --bench $size | awk '$1 == "gpt_step_ms" {print $2}')
    units[gpt_step_gpu_ms]=ms
    if [ -n "${theirs[gpu_add_launch_us]:-}" ]; then
        theirs[gpt_step_gpu_ms]=$($PY scripts/bench/char_gpt_torch.py "$GPT_TEXT" $size | awk '$1 == "gpt_step_ms" {print $2}')
        compiled=$($PY scripts/bench/char_gpt_torch.py "$GPT_TEXT" $size --compile 2>/dev/null | awk '$1 == "gpt_step_ms" {print $2}')
    fi
    names="$names gpt_step_gpu_ms"
fi
# mixed precision: the same three trainings under bfloat16 autocast (--amp bfloat16 beside
# torch.autocast("cuda", bfloat16)); target <= 0.8 x PyTorch eager with autocast,
# and the GPT step <= 1.0 x PyTorch with torch.compile (noted below the table)
if [ -d "$FM" ]; then
    for model in mlp cnn; do
        ck=$(mktemp -u)
        ours[${model}_epoch_bf16_gpu_s]=$("$EMBER" scripts/fashion_mnist_$model.lua --device cuda --epochs 2 --amp bfloat16 \
            --checkpoint "$ck" --data "$FM" | awk '/^epoch/ {print $9}' | sort -n | head -1)
        rm -f "$ck"
        units[${model}_epoch_bf16_gpu_s]=s
        if [ -n "${theirs[gpu_add_launch_us]:-}" ]; then
            theirs[${model}_epoch_bf16_gpu_s]=$($PY scripts/bench/fashion_mnist_torch.py "$FM" 2 cuda $model bfloat16 |
                awk '/^fm_epoch_s/ {print $2}')
        fi
        names="$names ${model}_epoch_bf16_gpu_s"
    done
fi
if [ -s "$GPT_TEXT" ]; then
    ours[gpt_step_bf16_gpu_ms]=$("$EMBER" scripts/char_gpt.lua "$GPT_TEXT" --bench $size --amp bfloat16 | awk '$1 == "gpt_step_ms" {print $2}')
    units[gpt_step_bf16_gpu_ms]=ms
    if [ -n "${theirs[gpu_add_launch_us]:-}" ]; then
        theirs[gpt_step_bf16_gpu_ms]=$($PY scripts/bench/char_gpt_torch.py "$GPT_TEXT" $size --amp bfloat16 | awk '$1 == "gpt_step_ms" {print $2}')
        compiled_bf16=$($PY scripts/bench/char_gpt_torch.py "$GPT_TEXT" $size --amp bfloat16 --compile 2>/dev/null |
                        awk '$1 == "gpt_step_ms" {print $2}')
    fi
    names="$names gpt_step_bf16_gpu_ms"
fi
# One AdamW step over GPT-2 small's parameters: ember's multi-tensor step beside
# PyTorch's fused AdamW (the ratio; foreach and per-parameter noted beside it)
while read -r name value unit; do ours[$name]=$value; units[$name]=$unit; done < <("$EMBER" scripts/bench/adamw_step.lua)
if [ -n "${theirs[gpu_add_launch_us]:-}" ]; then
    while read -r name value unit; do theirs[$name]=$value; done < <($PY scripts/bench/adamw_step_torch.py)
fi
names="$names adamw_step_gpu_ms adamw_step_per_param_gpu_ms"

# Linear + GELU (tanh) forward+backward in bfloat16 at [8192, 4096] x
# [4096, 4096] (the fused F.linear on cuBLASLt's epilogues); target ratio: PyTorch's
# time / ember's >= 0.95, i.e. ember's ms / PyTorch's ms <= 1.05
ours[linear_gelu_bf16_ms]=$("$EMBER" scripts/bench/linear_gelu_gpu.lua | awk '$1 == "linear_gelu_bf16_ms" {print $2}')
units[linear_gelu_bf16_ms]=ms
if [ -n "${theirs[gpu_add_launch_us]:-}" ]; then
    theirs[linear_gelu_bf16_ms]=$($PY scripts/bench/linear_gelu_torch.py | awk '$1 == "linear_gelu_bf16_ms" {print $2}')
fi
names="$names linear_gelu_bf16_ms"
# CUDA graphs: one training step of a Fashion-MNIST-sized MLP (AdamW capturable), eager and
# replayed from a CUDA graph, beside PyTorch's eager step and torch.cuda.graph replay
while read -r name value unit; do ours[${name%_ms}_gpu_ms]=$value; units[${name%_ms}_gpu_ms]=$unit; done \
    < <("$EMBER" scripts/bench/cuda_graph.lua)
if [ -n "${theirs[gpu_add_launch_us]:-}" ]; then
    while read -r name value unit; do n=${name#torch_}; theirs[${n%_ms}_gpu_ms]=$value; done \
        < <($PY scripts/bench/cuda_graph_torch.py)
fi
names="$names mlp_eager_step_gpu_ms mlp_graph_step_gpu_ms"
printf '%-26s %14s %14s %8s\n' benchmark ember pytorch ratio
for n in $names; do
    o=${ours[$n]:-} t=${theirs[$n]:-}
    r=$( [ -n "$o" ] && [ -n "$t" ] && awk -v a="$o" -v b="$t" 'BEGIN { printf "%.3f", a / b }' || echo -)
    printf '%-26s %14s %14s %8s  %s\n' "$n" "${o:--}" "${t:--}" "$r" "${units[$n]:-}"
done
[ -n "${compiled:-}" ] && echo "gpt_step_gpu_ms with torch.compile: $compiled ms"
[ -n "${compiled_bf16:-}" ] && echo "gpt_step_bf16_gpu_ms with torch.compile: $compiled_bf16 ms"
if [ -n "${theirs[adamw_step_foreach_gpu_ms]:-}" ]; then
    echo "adamw_step_gpu_ms with PyTorch's foreach AdamW: ${theirs[adamw_step_foreach_gpu_ms]} ms"
fi
