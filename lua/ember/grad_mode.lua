-- ember.grad_mode — ember.no_grad(fn, ...) and ember.enable_grad(fn, ...) called inside a
-- coroutine, where fn may yield (bind_autograd.c sends such calls here; elsewhere a plain
-- protected call serves).
--
-- The grad mode is global, and a coroutine suspended inside fn must not leave it set for the
-- code that runs meanwhile. So fn runs in a coroutine of its own: each resume sets the mode,
-- each yield (passed on to the caller's coroutine) and each way out puts back the mode of
-- whoever resumed, as torch.no_grad() does around each step of a Python generator. fn's
-- pending <close> variables run with fn's mode when fn fails, and when the caller's
-- coroutine is closed while fn is suspended.
local ember = require "ember"

local set = ember.set_grad_enabled

-- runs co's pending <close> variables (after an error, or when abandoned) under mode on;
-- returns what coroutine.close does (a coroutine stopped by an error is "dead" but keeps
-- them until closed)
local function finish(on, co)
  local was = set(on)
  local ok, e = coroutine.close(co)
  set(was)
  return ok, e
end

local function step(on, co, ...)
  local was = set(on)
  local res = table.pack(coroutine.resume(co, ...))
  set(was)
  return res
end

return function(on, fn, ...)
  local co = coroutine.create(fn)
  local _ <close> = setmetatable({}, {__close = function() finish(on, co) end})
  local res = step(on, co, ...)
  while true do
    if not res[1] then
      local _, e = finish(on, co)
      error(e == nil and res[2] or e, 0)
    end
    if coroutine.status(co) == "dead" then return table.unpack(res, 2, res.n) end
    res = step(on, co, coroutine.yield(table.unpack(res, 2, res.n)))
  end
end
