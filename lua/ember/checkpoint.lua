-- ember.checkpoint — a training run's whole state in one safetensors file:
-- the model's parameters, the optimizer's state, the scheduler, counters and
-- the random generator, so a resumed run continues exactly.
--
--   ember.save_checkpoint(path, {model = m, optimizer = opt, scheduler = s,
--                                epoch = 3, step = 1407, extra = {k = "v"}})
--   local info = ember.load_checkpoint(path, {model = m, optimizer = opt, scheduler = s})
--   -- info.epoch, info.step, info.extra
--
-- In the file, model tensors are named "model.<name>", optimizer tensors
-- "optimizer.<name>"; counters, the generator state and the optimizer's and
-- scheduler's numbers go in the metadata. Saving is atomic (ember.save).
local ember = require "ember"

local M = {}

local FORMAT = "ember-checkpoint-1"

local function copy_prefixed(into, prefix, from)
  for k, v in pairs(from or {}) do into[prefix .. k] = v end
end

-- Splits "prefix.rest" entries of a flat table back out.
local function strip_prefixed(from, prefix)
  local out = {}
  for k, v in pairs(from) do
    if k:sub(1, #prefix) == prefix then out[k:sub(#prefix + 1)] = v end
  end
  return out
end

--- ember.save_checkpoint(path, state): writes model, optimizer, scheduler,
--- epoch/step counters, extra string fields and the RNG state to path.
function M.save_checkpoint(path, state)
  assert(type(path) == "string", "save_checkpoint: argument 1: expected a path")
  assert(type(state) == "table", "save_checkpoint: argument 2: expected a table {model=, optimizer=, ...}")
  local tensors, meta = {}, {format = FORMAT}
  if state.model then copy_prefixed(tensors, "model.", state.model:state_dict()) end
  if state.optimizer then
    local ot, om = state.optimizer:state_dict_flat()
    copy_prefixed(tensors, "optimizer.", ot)
    copy_prefixed(meta, "optimizer.", om)
  end
  if state.scheduler then
    copy_prefixed(meta, "scheduler.", state.scheduler:state_dict_flat())
  end
  local rng = ember.get_rng_state()
  meta["rng.seed"] = string.format("%d", rng.seed)
  meta["rng.offset"] = string.format("%d", rng.offset)
  if state.epoch then meta.epoch = string.format("%d", state.epoch) end
  if state.step then meta.step = string.format("%d", state.step) end
  for k, v in pairs(state.extra or {}) do meta["extra." .. k] = tostring(v) end
  ember.save(path, tensors, {metadata = meta})
end

--- ember.load_checkpoint(path, {model=, optimizer=, scheduler=}): restores
--- what was saved into the given objects and the RNG; returns {epoch=, step=, extra=}.
function M.load_checkpoint(path, into)
  into = into or {}
  local tensors, meta = ember.load(path)
  if meta.format ~= FORMAT then
    error(string.format("load_checkpoint: %s: not an ember checkpoint (format %s)", path, tostring(meta.format)), 2)
  end
  if into.model then into.model:load_state_dict(strip_prefixed(tensors, "model.")) end
  if into.optimizer then
    into.optimizer:load_state_dict_flat(strip_prefixed(tensors, "optimizer."), strip_prefixed(meta, "optimizer."))
  end
  if into.scheduler then
    into.scheduler:load_state_dict_flat(strip_prefixed(meta, "scheduler."))
  end
  ember.set_rng_state({seed = math.tointeger(tonumber(meta["rng.seed"])), offset = math.tointeger(tonumber(meta["rng.offset"]))})
  return {
    epoch = meta.epoch and math.tointeger(tonumber(meta.epoch)),
    step = meta.step and math.tointeger(tonumber(meta.step)),
    extra = strip_prefixed(meta, "extra."),
  }
end

return M
