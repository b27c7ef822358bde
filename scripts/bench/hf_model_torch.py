"""scripts/bench/hf_model_torch.py — transformers' side of the ember.hf rows
(scripts/bench/hf_model.lua): a GPT-2 small folder (124M parameters, float32,
random weights from seed 0, written by this script with save_pretrained when
the folder has no config.json), read with from_pretrained (best of 3), then a
forward pass of one sequence of T tokens under no_grad (best of 5).
Arguments: folder (default /tmp/ember-bench-gpt2), T (default 128).
Then greedy generation of 64 tokens after a 16-token prompt with the key/value cache
(generate(do_sample=False), best of 3).
Prints "hf_gpt2_load_s <s> s", "hf_gpt2_fwd<T>_ms <ms> ms" and "hf_gpt2_generate_tok_s <n> tokens/s"."""
import os
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from torch_ops import best   # best-of timing, as the other rows

DIR = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ember-bench-gpt2"
T = int(sys.argv[2]) if len(sys.argv) > 2 else 128

if not os.path.exists(os.path.join(DIR, "config.json")):
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config()).save_pretrained(DIR, safe_serialization=True)


model = None


def load():
    global model
    model = GPT2LMHeadModel.from_pretrained(DIR).eval()


print("hf_gpt2_load_s %.4g s" % best(3, load))
ids = torch.randint(0, 50257, (1, T), generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    model(ids)
    print("hf_gpt2_fwd%d_ms %.4g ms" % (T, best(5, lambda: model(ids)) * 1e3))

prompt = torch.randint(0, 50257, (1, 16), generator=torch.Generator().manual_seed(1))
NEW = 64
with torch.no_grad():
    gen = lambda: model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                                 max_new_tokens=NEW, min_new_tokens=NEW, pad_token_id=0)
    gen()
    print("hf_gpt2_generate_tok_s %.4g tokens/s" % (NEW / best(3, gen)))
