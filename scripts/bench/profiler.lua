-- scripts/bench/profiler.lua — ember.profiler's accuracy and cost on a training step:
-- the step unprofiled (best of several), the same steps profiled, the ops' self times
-- summed, and the profiler's own time (left out of its figures).
--   build/ember scripts/bench/profiler.lua [steps]
local steps = tonumber(arg and arg[1]) or 20
local step = dofile((arg[0]:match("^(.*/)") or "./") .. "timing.lua").transformer_step()
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
