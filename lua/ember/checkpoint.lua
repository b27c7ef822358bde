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
-- scheduler's numbers go in the metadata. Saving is atomic (ember.save: a
-- temporary file renamed over the old one, leftovers of killed saves
-- removed by the next save). In a distributed job (ember.distributed) only
-- rank 0 writes; every rank can load.
--
-- Every error is raised at the caller's line (ember.errors.raise) and names the file.
-- A file is checked whole before anything is restored, and a failure while
-- restoring puts the optimizer and scheduler back as they were, so a bad
-- file leaves the training objects and the generator untouched.
local ember = require "ember"

local M = {}

local FORMAT = "ember-checkpoint-1"

-- Raises msg at the first caller outside ember's Lua library: the line that
-- called save_checkpoint or load_checkpoint, whichever helper found the problem.
local raise = require("ember.errors").raise

local function fail(fmt, ...)
  raise(string.format(fmt, ...))
end

local function describe(v)
  if type(v) == "string" then return string.format("the string %q", v) end
  if ember.is_tensor(v) then return "a tensor" end
  if type(v) == "number" then return "the number " .. tostring(v) end
  return "a " .. type(v)
end

-- v[name] without running into a userdata's or table's __index error
local function field(v, name)
  if type(v) ~= "table" and type(v) ~= "userdata" then return nil end
  local ok, f = pcall(function() return v[name] end)
  if ok then return f end
  return nil
end

-- The model, optimizer and scheduler are checked by the methods the
-- checkpoint calls on them, so any object with those methods serves.
local ROLES = {
  model = {what = "an nn.Module instance", save = "state_dict", load = "load_state_dict"},
  optimizer = {what = "an optimizer (ember.optim)", save = "state_dict_flat", load = "load_state_dict_flat"},
  scheduler = {what = "a learning-rate scheduler (ember.optim.lr_scheduler)", save = "state_dict_flat",
               load = "load_state_dict_flat"},
}

local function check_object(op, role, v, method)
  local r = ROLES[role]
  -- The methods alone do not tell the three apart (an optimizer has
  -- state_dict too, a scheduler state_dict_flat): a model is an nn.Module,
  -- an optimizer has param_groups, a scheduler holds its optimizer.
  local ok = type(field(v, method)) == "function"
  if ok and role == "model" then ok = ember.nn.is_module(v) end
  if ok and role == "optimizer" then ok = type(field(v, "param_groups")) == "table" end
  if ok and role == "scheduler" then ok = type(field(v, "optimizer")) == "table" and field(v, "param_groups") == nil end
  if not ok then
    local got = describe(v)
    if type(v) == "table" and not ember.is_tensor(v) then got = "a table without a " .. method .. " method" end
    fail("%s: argument 2: field '%s': expected %s (an object with a %s method), got %s", op, role, r.what, method,
         got)
  end
end

local function check_integer(op, name, v)
  if math.type(v) == "integer" then return v end
  if math.type(v) == "float" and v == math.floor(v) and math.tointeger(v) then return math.tointeger(v) end
  fail("%s: argument 2: field '%s': expected an integer, got %s", op, name, describe(v))
end

-- An options table: a plain table whose fields are all known.
local function check_table(op, argn, v, known, what)
  if type(v) ~= "table" or ember.is_tensor(v) then
    fail("%s: argument %d: expected %s, got %s", op, argn, what, describe(v))
  end
  for k in pairs(v) do
    if not known[k] then
      local names = {}
      for name in pairs(known) do names[#names + 1] = name end
      table.sort(names)
      fail("%s: argument %d: unknown field %s (expected %s)", op, argn,
           type(k) == "string" and ("'" .. k .. "'") or describe(k), table.concat(names, ", "))
    end
  end
end

-- Python's repr of the float: the shortest decimal that reads back as the same double.
local float_text = require("ember.serialize").float_repr

local SAVE_FIELDS = {model = true, optimizer = true, scheduler = true, epoch = true, step = true, extra = true}
local LOAD_FIELDS = {model = true, optimizer = true, scheduler = true}

local function check_path(op, path)
  if type(path) ~= "string" or path == "" then
    fail("%s: argument 1: expected a path (a non-empty string), got %s", op, describe(path))
  end
  require("ember.errors").check_path(op, "argument 1", path)
end

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

-- An error message without the "file:line: " its raiser put in front (the
-- position given is the API caller's).
local function message(err)
  return (tostring(err):gsub("^[^:\n]+:%d+: ", "", 1))
end

-- Calls f(...) and raises its error, prefixed, at the caller of the API.
local function call(prefix, f, ...)
  local res = table.pack(pcall(f, ...))
  if not res[1] then raise(prefix .. message(res[2])) end
  return table.unpack(res, 2, res.n)
end

--- ember.save_checkpoint(path, state): writes model, optimizer, scheduler,
--- epoch/step counters, extra string fields and the RNG state to path.
function M.save_checkpoint(path, state)
  local op = "save_checkpoint"
  check_path(op, path)
  check_table(op, 2, state, SAVE_FIELDS, "a table {model =, optimizer =, scheduler =, epoch =, step =, extra =}")
  for _, role in ipairs({"model", "optimizer", "scheduler"}) do
    if state[role] ~= nil then check_object(op, role, state[role], ROLES[role].save) end
  end
  local epoch = state.epoch ~= nil and check_integer(op, "epoch", state.epoch) or nil
  local step = state.step ~= nil and check_integer(op, "step", state.step) or nil
  local extra = {}
  if state.extra ~= nil then
    if type(state.extra) ~= "table" or ember.is_tensor(state.extra) then
      fail("%s: argument 2: field 'extra': expected a table of strings, numbers or booleans, got %s", op,
           describe(state.extra))
    end
    for k, v in pairs(state.extra) do
      if type(k) ~= "string" then
        fail("%s: argument 2: field 'extra': keys must be strings, got %s", op, describe(k))
      end
      if math.type(v) == "integer" then v = string.format("%d", v)
      elseif math.type(v) == "float" then v = float_text(v)
      elseif type(v) == "boolean" then v = tostring(v)
      elseif type(v) ~= "string" then
        fail("%s: argument 2: field 'extra': extra.%s is %s (expected a string, number or boolean)", op, k,
             describe(v))
      end
      extra[k] = v
    end
  end

  -- in a distributed job only rank 0 writes (every rank holds the same state); the
  -- others return after the same checks, so a bad call fails on every rank alike
  local dist = package.loaded["ember.distributed"]
  if dist and not dist.is_main_process() then return end

  local tensors, meta = {}, {format = FORMAT}
  if state.model ~= nil then
    copy_prefixed(tensors, "model.", call(op .. ": model: ", state.model.state_dict, state.model))
  end
  if state.optimizer ~= nil then
    local ot, om = call(op .. ": optimizer: ", state.optimizer.state_dict_flat, state.optimizer)
    copy_prefixed(tensors, "optimizer.", ot)
    copy_prefixed(meta, "optimizer.", om)
  end
  if state.scheduler ~= nil then
    copy_prefixed(meta, "scheduler.", call(op .. ": scheduler: ", state.scheduler.state_dict_flat, state.scheduler))
  end
  local rng = ember.get_rng_state()
  meta["rng.seed"] = string.format("%d", rng.seed)
  meta["rng.offset"] = string.format("%d", rng.offset)
  if epoch then meta.epoch = string.format("%d", epoch) end
  if step then meta.step = string.format("%d", step) end
  for k, v in pairs(extra) do meta["extra." .. k] = v end
  call(op .. ": ", ember.save, path, tensors, {metadata = meta})
end

-- An integer written by string.format("%d"), or nil.
local function parse_integer(s)
  if type(s) ~= "string" or not s:match("^%-?%d+$") then return nil end
  return math.tointeger(tonumber(s))
end

local META_KEYS = {format = true, ["rng.seed"] = true, ["rng.offset"] = true, epoch = true, step = true}
local META_PREFIXES = {"extra.", "optimizer.", "scheduler."}

local function has_prefix(t, prefix)
  for k in pairs(t) do
    if k:sub(1, #prefix) == prefix then return true end
  end
  return false
end

--- ember.load_checkpoint(path, {model=, optimizer=, scheduler=}): restores
--- what was saved into the given objects and the RNG; returns {epoch=, step=, extra=}.
function M.load_checkpoint(path, into)
  local op = "load_checkpoint"
  check_path(op, path)
  if into == nil then into = {} end
  check_table(op, 2, into, LOAD_FIELDS, "a table {model =, optimizer =, scheduler =}")
  for _, role in ipairs({"model", "optimizer", "scheduler"}) do
    if into[role] ~= nil then check_object(op, role, into[role], ROLES[role].load) end
  end

  local tensors, meta = call(op .. ": ", ember.load, path)
  local where = op .. ": " .. path .. ": "
  -- the whole file first: nothing is restored from a file that is wrong anywhere
  if meta.format ~= FORMAT then
    fail("%snot an ember checkpoint (metadata 'format' is %s, expected %q)", where,
         meta.format == nil and "missing" or string.format("%q", meta.format), FORMAT)
  end
  for name in pairs(tensors) do
    if name:sub(1, 6) ~= "model." and name:sub(1, 10) ~= "optimizer." then
      fail("%sunexpected tensor '%s' (a checkpoint holds model.* and optimizer.* tensors)", where, name)
    end
  end
  for key in pairs(meta) do
    local known = META_KEYS[key]
    for _, prefix in ipairs(META_PREFIXES) do known = known or key:sub(1, #prefix) == prefix end
    if not known then fail("%sunexpected metadata '%s'", where, key) end
  end
  local rng = {}
  for _, k in ipairs({"seed", "offset"}) do
    rng[k] = parse_integer(meta["rng." .. k])
    if not rng[k] then
      fail("%smetadata 'rng.%s' is %s, expected an integer", where, k,
           meta["rng." .. k] == nil and "missing" or string.format("%q", meta["rng." .. k]))
    end
  end
  local info = {extra = strip_prefixed(meta, "extra.")}
  for _, k in ipairs({"epoch", "step"}) do
    if meta[k] ~= nil then
      info[k] = parse_integer(meta[k])
      if not info[k] then fail("%smetadata '%s' is %q, expected an integer", where, k, meta[k]) end
    end
  end
  if into.optimizer ~= nil and meta["optimizer.param_groups"] == nil then
    fail("%sthe file holds no optimizer state (it was saved without an optimizer)", where)
  end
  if into.scheduler ~= nil and not has_prefix(meta, "scheduler.") then
    fail("%sthe file holds no scheduler state (it was saved without a scheduler)", where)
  end

  -- Restore: optimizer, scheduler, then the model (whose load_state_dict
  -- checks every name and shape before copying anything). If a step fails,
  -- the optimizer and scheduler get their earlier state back.
  local undo = {}
  local function restore(role, ...)
    local obj = into[role]
    if obj == nil then return end
    -- the state to go back to (optimizer and scheduler: the model is last)
    local before
    if role ~= "model" and type(field(obj, "state_dict")) == "function" and
       type(field(obj, "load_state_dict")) == "function" then
      before = obj:state_dict()
    end
    local ok, err = pcall(obj[ROLES[role].load], obj, ...)
    if not ok then
      for i = #undo, 1, -1 do pcall(undo[i]) end
      raise(string.format("%s%s: %s", where, role, message(err)))
    end
    if before ~= nil then undo[#undo + 1] = function() obj:load_state_dict(before) end end
  end
  restore("optimizer", strip_prefixed(tensors, "optimizer."), strip_prefixed(meta, "optimizer."))
  restore("scheduler", strip_prefixed(meta, "scheduler."))
  restore("model", strip_prefixed(tensors, "model."))
  ember.set_rng_state(rng)
  return info
end

return M
