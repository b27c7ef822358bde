-- scripts/bench/hf_model.lua — ember's side of the ember.hf rows: a GPT-2 small folder
-- (scripts/bench/hf_model_torch.py writes it: 124M parameters, float32) read with
-- ember.hf.load (best of 3), then a forward pass of one sequence of T tokens under
-- no_grad (best of 5).
-- Usage: ember scripts/bench/hf_model.lua [folder [T]]   (default /tmp/ember-bench-gpt2, 128)
-- Then greedy generation of 64 tokens after a 16-token prompt (model:generate, with the
-- key/value cache; best of 3).
-- prints   hf_gpt2_load_s <s> s      hf_gpt2_fwd<T>_ms <ms> ms      hf_gpt2_generate_tok_s <n> tokens/s
local ember = require "ember"

local best = dofile((arg[0]:match("^(.*/)") or "./") .. "timing.lua").best
local dir, T = arg[1] or "/tmp/ember-bench-gpt2", tonumber(arg[2]) or 128

local model
print(string.format("hf_gpt2_load_s %.4g s", best(3, function()
  model = nil
  collectgarbage()
  model = ember.hf.load(dir)
end)))
local ids = ember.randint(1, 50258, {1, T})
ember.no_grad(function()
  model(ids)
  print(string.format("hf_gpt2_fwd%d_ms %.4g ms", T, best(5, function() model(ids) end) * 1e3))
end)
local prompt = ember.randint(1, 50258, {1, 16})
local NEW = 64
model:generate(prompt, {max_new_tokens = NEW})
print(string.format("hf_gpt2_generate_tok_s %.4g tokens/s",
                    NEW / best(3, function() model:generate(prompt, {max_new_tokens = NEW}) end)))
