-- scripts/bench/profiler.lua — ember.profiler's accuracy and cost on a training step:
-- the step unprofiled (best of several), the same steps profiled, the ops' self times
-- summed, and the profiler's own time (left out of its figures).
--   build/ember scripts/bench/profiler.lua [steps]
local nn, F = ember.nn, ember.nn.functional
local steps = tonumber(arg and arg[1]) or 20
ember.manual_seed(0)
local d, T, B = 128, 64, 16
local layer = nn.TransformerEncoderLayer(d, 4, 4 * d, 0.0, {batch_first = true})
local head = nn.Linear(d, 65)
local params = layer:parameters()
for _, p in ipairs(head:parameters()) do params[#params + 1] = p end
local opt = ember.optim.AdamW(params, 1e-3)
local x = ember.randn(B, T, d)
local y = ember.randint(1, 66, {B * T})
local function step()
  opt:zero_grad()
  local logits = head(layer(x))
  local loss = F.cross_entropy(logits:reshape(B * T, 65), y)
  loss:backward()
  opt:step()
end
for _ = 1, 3 do step() end
local best = math.huge
for _ = 1, 3 do
  local t0 = ember.wall_time()
  for _ = 1, steps do step() end
  best = math.min(best, (ember.wall_time() - t0) / steps)
end
local prof = ember.profiler.profile(function() for _ = 1, steps do step() end end)
local ops = 0
for _, e in ipairs(prof:events()) do ops = ops + e.self end
print(("profiler_step_ms unprofiled %.3f"):format(best * 1e3))
print(("profiler_step_ms profiled %.3f (less the profiler's own %.3f)"):format(prof:wall_time() / steps * 1e3,
      prof:overhead() / steps * 1e3))
print(("profiler_ops_ms %.3f per step, %.1f %% of the unprofiled step"):format(ops / steps * 1e3,
      100 * ops / steps / best))
print(prof:key_averages():table({row_limit = 8}))
