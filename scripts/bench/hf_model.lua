-- scripts/bench/hf_model.lua — ember's side of the ember.hf rows: a GPT-2 small folder
-- (scripts/bench/hf_model_torch.py writes it: 124M parameters, float32) read with
-- ember.hf.load (best of 3), then a forward pass of one sequence of T tokens under
-- no_grad (best of 5).
-- Usage: ember scripts/bench/hf_model.lua [folder [T]]   (default /tmp/ember-bench-gpt2, 128)
-- prints   hf_gpt2_load_s <s> s      hf_gpt2_fwd<T>_ms <ms> ms
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
