-- ember.debug — stop where a NaN or an infinity first appears.
--
--   ember.debug.stop_on_nan(true)    (the shell's :nan on)
--
-- While on, every floating-point tensor an op returns to Lua is checked; at the first op
-- whose result holds a NaN or an infinity while none of its tensor arguments did, the
-- debugger of the ember shell stops at the Lua line that called the op, saying which op
-- and the shapes of its result and inputs (`continue` goes on; later ops fed by that
-- value do not stop again). Without the shell's debugger (plain lua5.4) it is an error
-- there. Backward ops are checked by anomaly mode (ember.autograd.detect_anomaly), which
-- this turns on with it: a NaN made by a backward node is an error naming the node and
-- the traceback of its forward call. Each check is an extra reduction per op (on a CUDA
-- device queued, and read at the next synchronisation, where the stop names the op and
-- its line): for finding a bug, not for training runs.
local ember = require "ember"
local errors = require "ember.errors"

local M = {}

local saved_anomaly

--- stop_on_nan(on) -> whether it was on
function M.stop_on_nan(on)
  if type(on) ~= "boolean" then errors.raise("debug.stop_on_nan: on must be a boolean, got " .. type(on)) end
  local was = ember._stop_on_nan(on)
  if on and not was then
    local prev_on, prev_nan = ember._set_anomaly(true, true)
    saved_anomaly = {prev_on, prev_nan}
  elseif not on and was and saved_anomaly then
    ember._set_anomaly(saved_anomaly[1], saved_anomaly[2])
    saved_anomaly = nil
  end
  return was
end

--- is_stopping_on_nan() -> whether stop_on_nan is on
function M.is_stopping_on_nan()
  local was = ember._stop_on_nan(false)
  ember._stop_on_nan(was)
  return was
end

return M
