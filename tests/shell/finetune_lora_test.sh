#!/usr/bin/env bash
# finetune_lora_test.sh — scripts/finetune_lora.lua on a tiny GPT-2 folder made here (random
# weights, the GPT-2 test tokenizer of tests/lua/fixtures/hf_tok/gpt2) and a few kB of text
# (seconds): the held-out loss falls, the adapter folder is written and loads back with
# ember.lora.load to the same outputs, gradient accumulation with bf16 autocast trains,
# --sample prints a continuation, --tensorboard writes an event file, and bad arguments
# fail clearly (TAP). EMBER is the executable (tests/run.sh sets it); default build/ember.
set -u
cd "$(dirname "$0")/../.."
EMBER=${EMBER:-build/ember}
case $EMBER in /*) ;; *) EMBER=$PWD/$EMBER ;; esac
SCRIPT=$PWD/scripts/finetune_lora.lua
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/shell/tap.sh

if [ ! -x "$EMBER" ]; then
    for t in "loss falls" "adapter loads back" "accum + bf16" "--sample" "--tensorboard" "bad options"; do
        n=$((n + 1)); echo "ok $n - $t # SKIP no ember executable at $EMBER"
    done
    echo "1..$n"
    exit 0
fi

# the text: a few licences (any text serves); else a generated one
text=$tmp/text.txt
text_file "$text" 20000

# the model folder: GPT-2, 2 layers of width 32, the tokenizer's vocabulary
model=$tmp/model
mkdir -p "$model"
cp tests/lua/fixtures/hf_tok/gpt2/tokenizer.json "$model/"
cat > "$tmp/make_model.lua" <<'LUA'
local dir = arg[1]
local V, C, P = ember.hf.tokenizer(dir):get_vocab_size(), 32, 64
local f = assert(io.open(dir .. "/config.json", "w"))
f:write(string.format('{"model_type": "gpt2", "n_embd": %d, "n_head": 4, "n_layer": 2, "n_positions": %d, '
                      .. '"vocab_size": %d}', C, P, V))
f:close()
ember.manual_seed(1)
local t = {["wte.weight"] = ember.randn(V, C) * 0.1, ["wpe.weight"] = ember.randn(P, C) * 0.02,
           ["ln_f.weight"] = ember.ones(C), ["ln_f.bias"] = ember.zeros(C)}
local shapes = {{"attn.c_attn", C, 3 * C}, {"attn.c_proj", C, C}, {"mlp.c_fc", C, 4 * C}, {"mlp.c_proj", 4 * C, C}}
for l = 0, 1 do
  local p = "h." .. l .. "."
  for _, ln in ipairs({"ln_1", "ln_2"}) do t[p .. ln .. ".weight"], t[p .. ln .. ".bias"] = ember.ones(C), ember.zeros(C) end
  for _, s in ipairs(shapes) do
    t[p .. s[1] .. ".weight"], t[p .. s[1] .. ".bias"] = ember.randn(s[2], s[3]) * 0.1, ember.zeros(s[3])
  end
end
ember.save(dir .. "/model.safetensors", t)
LUA
"$EMBER" "$tmp/make_model.lua" "$model" || { echo "Bail out! cannot make the model folder"; exit 1; }

TINY=(--context 32 --batch 8 --r 4 --targets c_attn,c_fc --warmup 2)

# --- the loss falls; the adapter folder is written
out=$("$EMBER" "$SCRIPT" "$model" "$text" "${TINY[@]}" --steps 20 --lr 2e-2 --out "$tmp/adapter" 2>&1); rc=$?
before=$(echo "$out" | awk '/^eval loss before .* after/ {print $4}')
after=$(echo "$out" | awk '/^eval loss before .* after/ {print $6}')
if [ $rc -eq 0 ] && [ -n "$before" ] && [ -n "$after" ] &&
   awk -v a="$before" -v b="$after" 'BEGIN { exit !(b < a - 0.1) }' &&
   [ "$(echo "$out" | grep -cE '^step +[0-9]+/20  loss [0-9.]+  lr [0-9.e+-]+  [0-9]+ ms/step$')" -eq 20 ]; then
    ok "the held-out loss falls ($before -> $after) and every step prints its loss"
else
    not_ok "the held-out loss falls" "rc=$rc before=$before after=$after" "$out"
fi
if [ -f "$tmp/adapter/adapter_config.json" ] && [ -f "$tmp/adapter/adapter_model.safetensors" ] &&
   grep -q '"peft_type": "LORA"' "$tmp/adapter/adapter_config.json" &&
   grep -q '"target_modules": \[' "$tmp/adapter/adapter_config.json"; then
    ok "the adapter folder has PEFT's two files"
else
    not_ok "the adapter folder has PEFT's two files" "$(ls -la "$tmp/adapter" 2>&1)"
fi

# --- the adapter loads back and changes the model's outputs
cat > "$tmp/check.lua" <<'LUA'
local model_dir, adapter = arg[1], arg[2]
local ids = ember.tensor({{5, 9, 200, 31, 7}})
local base = ember.hf.load(model_dir)(ids)
local peft = ember.lora.load((ember.hf.load(model_dir)), adapter)
local y = peft(ids)
local merged = peft:merge_and_unload()
print(string.format("moved %.4f merged %.2e", (y - base):abs():max():item(), (merged(ids) - y):abs():max():item()))
LUA
res=$("$EMBER" "$tmp/check.lua" "$model" "$tmp/adapter" 2>&1); rc=$?
if [ $rc -eq 0 ] && echo "$res" | awk '{ exit !($2 > 0.01 && $4 < 1e-4) }'; then
    ok "ember.lora.load reads the adapter back; it changes the outputs ($res)"
else
    not_ok "ember.lora.load reads the adapter back" "rc=$rc" "$res"
fi

# --- gradient accumulation with bf16 autocast trains too
out=$("$EMBER" "$SCRIPT" "$model" "$text" "${TINY[@]}" --steps 12 --lr 2e-2 --batch 4 --accum 2 --bf16 \
      --out "$tmp/bf16" 2>&1); rc=$?
before=$(echo "$out" | awk '/^eval loss before .* after/ {print $4}')
after=$(echo "$out" | awk '/^eval loss before .* after/ {print $6}')
if [ $rc -eq 0 ] && [ -n "$after" ] && awk -v a="$before" -v b="$after" 'BEGIN { exit !(b < a) }' &&
   echo "$out" | grep -q "256 per step (2 x 4 x 32)"; then
    ok "--accum 2 --bf16 trains ($before -> $after)"
else
    not_ok "--accum 2 --bf16 trains" "rc=$rc" "$out"
fi

# --- --sample prints the prompt and a continuation; --tensorboard writes an event file
out=$("$EMBER" "$SCRIPT" "$model" "$text" "${TINY[@]}" --steps 3 --out "$tmp/s" --sample 12 --prompt "The license" \
      --tensorboard "$tmp/tb" 2>&1); rc=$?
sample=$(echo "$out" | sed -n '/^--- sample ---$/,$p' | sed 1d)
if [ $rc -eq 0 ] && [ "${sample:0:11}" = "The license" ] && [ "${#sample}" -gt 11 ]; then
    ok "--sample continues --prompt (${sample:0:40}...)"
else
    not_ok "--sample continues --prompt" "rc=$rc" "$out"
fi
if ls "$tmp"/tb/events.out.tfevents.* >/dev/null 2>&1; then
    ok "--tensorboard writes an event file"
else
    not_ok "--tensorboard writes an event file" "$(ls -la "$tmp/tb" 2>&1)"
fi

# --- bad arguments fail with a clear message and status 1
bad "unknown option" "unknown option --bogus" "$model" "$text" --bogus 1
bad "no text" "a MODEL_DIR and a TEXT_FILE are needed" "$model"
bad "a missing text file" "cannot read the text" "$model" "$tmp/missing.txt"
bad "a folder without a model" "config.json: no such file" "$tmp" "$text"
bad "a context longer than the model's positions" "--context 65 is more than the model's 64 positions" \
    "$model" "$text" --context 65
bad "targets the model lacks" "target modules q_proj not found" "$model" "$text" --targets q_proj
bad "a non-numeric rank" "--r needs a whole number" "$model" "$text" --r x
printf 'short text\n' > "$tmp/short.txt"
bad "a text too short" "too few for --context 32" "$model" "$tmp/short.txt" --context 32

echo "1..$n"
