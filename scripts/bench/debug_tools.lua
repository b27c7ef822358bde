-- scripts/bench/debug_tools.lua — what the debugging tools cost a training step when on:
-- a TransformerEncoderLayer step (d 128, 4 heads, batch 16 x 64, AdamW) plain, with
-- ember.debug.stop_on_nan (every result checked), with anomaly mode (a traceback per
-- recorded op, every gradient checked) and with ember.memory.record_history; best of 3
-- rounds of `steps` steps each. scripts/bench/debug_tools_torch.py times the same step
-- plain and under torch.autograd.detect_anomaly.
--   build/ember scripts/bench/debug_tools.lua [steps]
local steps = tonumber(arg and arg[1]) or 10
local step = dofile((arg[0]:match("^(.*/)") or "./") .. "timing.lua").transformer_step()

local modes = {
  {"plain", function() end, function() end},
  {"stop_on_nan", function() ember.debug.stop_on_nan(true) end, function() ember.debug.stop_on_nan(false) end},
  {"detect_anomaly", function() ember.autograd.set_detect_anomaly(true) end,
   function() ember.autograd.set_detect_anomaly(false) end},
  {"record_history", function() ember.memory.record_history(true) end,
   function() ember.memory.record_history(false) end},
}
for _ = 1, 3 do step() end
local best = {}
for _ = 1, 3 do   -- rounds, the modes taking turns
  for _, m in ipairs(modes) do
    m[2]()
    local t0 = ember.wall_time()
    for _ = 1, steps do step() end
    local dt = (ember.wall_time() - t0) / steps
    m[3]()
    best[m[1]] = math.min(best[m[1]] or math.huge, dt)
  end
end
for _, m in ipairs(modes) do
  print(("debug_step_ms %-15s %8.3f  (%.2f x plain)"):format(m[1], best[m[1]] * 1e3, best[m[1]] / best.plain))
end
