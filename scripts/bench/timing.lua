-- scripts/bench/timing.lua — what the Lua benchmark scripts share, loaded
-- with dofile from the script's own folder (see ops.lua):
--   best(repeats, fn)  the lowest wall time of fn over the repeats, in
--                      seconds (the run least disturbed by the machine)
local wall = require("ember").wall_time   -- monotonic (os.clock is CPU time)

local function best(repeats, fn)
  local b = math.huge
  for _ = 1, repeats do
    local t0 = wall()
    fn()
    local dt = wall() - t0
    if dt < b then b = dt end
  end
  return b
end

return {best = best}
