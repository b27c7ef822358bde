-- ember.utils.checkpoint — activation checkpointing, as torch.utils.checkpoint:
--
--   local y = checkpoint(fn, x, w, 3)                   -- fn(x, w, 3), intermediates not kept
--   local y = checkpoint(block, x, {use_reentrant = false, preserve_rng_state = true})
--   local y = checkpoint_sequential(model, 4, x)         -- 4 segments of an nn.Sequential
--
-- (Not ember.save_checkpoint / ember.load_checkpoint, which write and read training-state
-- files: this trades compute for memory inside one step.)
--
-- The non-reentrant variant (use_reentrant = false, the default): the forward runs fn with
-- grad mode on, finds the leaves that require grad the recorded graph reads (the parameters
-- of modules and closures fn uses), then drops that graph: only the arguments are kept, and
-- one node CheckpointBackward stands for fn, with the arguments and those leaves as its
-- inputs. Its backward runs fn again with grad on (the random generator and the autocast
-- state as the forward had them) and hands the recomputed graph's gradients to the
-- arguments and the leaves through the outer pass, so `.grad` is accumulated once, by that
-- pass, as without checkpointing, and autograd.grad(loss, params) and backward's inputs=
-- see the parameters. The reentrant variant (use_reentrant = true) is PyTorch's older one:
-- its backward runs a backward pass of its own through the recomputation, which writes the
-- parameters' .grad directly; it needs an argument that requires grad, and
-- autograd.grad / inputs= cannot reach the parameters through it.
local ember = require "ember"
local errors = require "ember.errors"
local args = require "ember.args"
local autograd = require "ember.autograd"

local M = {}

local OPTION_NAMES = {"*", "use_reentrant", "preserve_rng_state", "determinism_check", "debug"}

local function callable(f)
  if type(f) == "function" then return true end
  local mt = getmetatable(f)
  return mt ~= nil and type(mt) == "table" and mt.__call ~= nil
end

local function check_options(op, o)
  for _, k in ipairs{"use_reentrant", "preserve_rng_state"} do
    if o[k] ~= nil and type(o[k]) ~= "boolean" then
      errors.raisef("%s: %s must be a boolean, got %s", op, k, type(o[k]))
    end
  end
  if o.determinism_check ~= nil and o.determinism_check ~= "default" and o.determinism_check ~= "none" then
    errors.raisef("%s: determinism_check must be \"default\" or \"none\", got %s", op, tostring(o.determinism_check))
  end
  if o.debug ~= nil and o.debug ~= false then
    errors.raisef("%s: debug = true is not provided", op)
  end
  return o.use_reentrant == true, o.preserve_rng_state ~= false, o.determinism_check ~= "none"
end

-- the autocast state of both device types, to run the recomputation as the forward ran
local function autocast_state()
  local s = {}
  for _, d in ipairs{"cpu", "cuda"} do
    local enabled, dtype, cache = ember._autocast_state(d)
    s[d] = {enabled = enabled, dtype = dtype, cache_enabled = cache}
  end
  return s
end

local function is_low(dtype) return dtype == "float16" or dtype == "bfloat16" end

-- fn(...) with grad on, the forward's random state and autocast state; the generator and
-- the autocast state are the caller's again afterwards
local function rerun(state, fn, ...)
  local rng_now = state.rng and ember.get_rng_state()
  if state.rng then ember.set_rng_state(state.rng) end
  local lifted = ember._autocast_lift()   -- a backward pass suspends autocast
  local ok, res = pcall(function(...)
    local ac = state.autocast
    local g1 <close> = ember.autocast("cpu", {enabled = ac.cpu.enabled,
                                              dtype = is_low(ac.cpu.dtype) and ac.cpu.dtype or nil,
                                              cache_enabled = ac.cpu.cache_enabled})
    local g2 <close> = ember.autocast("cuda", {enabled = ac.cuda.enabled,
                                               dtype = is_low(ac.cuda.dtype) and ac.cuda.dtype or nil,
                                               cache_enabled = ac.cuda.cache_enabled})
    local g3 <close> = ember.enable_grad()
    return table.pack(fn(...))
  end, ...)
  ember._autocast_resuspend(lifted)
  if state.rng then ember.set_rng_state(rng_now) end
  if not ok then error(res, 0) end
  return res
end

-- fail inside a backward pass: the binding that started it adds the caller's line
local function fail_plain(fmt, ...) error(string.format(fmt, ...), 0) end

-- the recomputed outputs that require grad and the gradients backward got for them
-- (nil for outputs that got none)
local function with_gradients(outs, ...)
  local roots, grads = {}, {}
  for i = 1, outs.n do
    local g = select(i, ...)
    local o = outs[i]
    if g ~= nil and ember.is_tensor(o) and o.requires_grad then
      roots[#roots + 1] = o
      grads[#grads + 1] = g
    end
  end
  return roots, grads
end

-- the recomputed outputs against the forward's (PyTorch's determinism_check = "default"
-- compares the saved tensors' metadata; ember compares the outputs')
local function check_recomputed(meta, outs)
  for k, m in pairs(meta) do
    local o = outs[k]
    local got = ember.is_tensor(o) and {shape = errors.shape_str(o), dtype = o.dtype, device = o.device}
    if not got or got.shape ~= m.shape or got.dtype ~= m.dtype or got.device ~= m.device then
      fail_plain("checkpoint: the recomputation of fn gave %s as result %d where the forward gave a tensor of "
                 .. "shape %s, %s, on %s: fn must compute the same thing when run again",
                 got and string.format("a tensor of shape %s, %s, on %s", got.shape, got.dtype, got.device)
                 or (o == nil and "nothing" or "a " .. type(o)), k, m.shape, m.dtype, m.device)
    end
  end
end

-- ---- non-reentrant -----------------------------------------------------------------------

local Region = autograd.Function:extend("Checkpoint")

-- forward(ctx, state, args..., leaves...): the outputs fn already computed, detached
function Region.forward(ctx, state, ...)
  local outs = state.outs
  state.outs = nil
  local nondiff = {}
  state.out_meta = {}   -- what the recomputation must give again (determinism_check = "default")
  for k = 1, outs.n do
    local o = outs[k]
    if ember.is_tensor(o) then
      state.out_meta[k] = {shape = errors.shape_str(o), dtype = o.dtype, device = o.device}
      local d = o:detach()
      if not o.requires_grad then nondiff[#nondiff + 1] = d end
      outs[k] = d
    end
  end
  ctx:save_for_backward(...)
  ctx:mark_non_differentiable(table.unpack(nondiff))
  ctx:set_materialize_grads(false)
  ctx.state = state
  return table.unpack(outs, 1, outs.n)
end

function Region.backward(ctx, ...)
  local state = ctx.state
  local nargs = state.nargs
  if ember.is_grad_enabled() then
    fail_plain("checkpoint: a backward with create_graph (double backward) through a checkpoint is not provided")
  end
  local saved = ctx.saved_tensors
  -- the arguments again: tensors from the saved ones, detached, as leaves of the recomputation;
  -- wanted_at: each wanted tensor's position among the node's inputs (state is input 1)
  local call, wanted, wanted_at = {}, {}, {}
  local k = 0
  for i = 1, nargs do
    if state.is_tensor[i] then
      k = k + 1
      local t = saved[k]
      local d = t:detach()
      if t.requires_grad then
        d:requires_grad_()
        wanted[#wanted + 1] = d
        wanted_at[#wanted] = 1 + k
      end
      call[i] = d
    else
      call[i] = state.values[i]
    end
  end
  local nleaves = state.nleaves
  for j = 1, nleaves do
    wanted[#wanted + 1] = saved[k + j]
    wanted_at[#wanted] = 1 + k + j
  end
  local outs = rerun(state, state.fn, table.unpack(call, 1, nargs))
  if state.check then check_recomputed(state.out_meta, outs) end
  local roots, grads = with_gradients(outs, ...)
  local res = {}
  if #roots > 0 and #wanted > 0 then
    local got = table.pack(autograd.grad(roots, wanted, {grad_outputs = grads, allow_unused = true}))
    for j = 1, #wanted do res[wanted_at[j]] = got[j] end
  end
  return table.unpack(res, 1, 1 + k + nleaves)
end

local function nonreentrant(op, fn, a, preserve, check)
  local tensors = {}
  local is_tensor, values = {}, {}
  for i = 1, a.n do
    if ember.is_tensor(a[i]) then
      tensors[#tensors + 1] = a[i]
      is_tensor[i] = true
    else
      values[i] = a[i]
    end
  end
  local state = {fn = fn, nargs = a.n, is_tensor = is_tensor, values = values, check = check,
                 rng = preserve and ember.get_rng_state() or nil, autocast = autocast_state()}
  local since = ember._autograd_clock()
  local outs = table.pack(fn(table.unpack(a, 1, a.n)))
  local live = {}
  for i = 1, outs.n do
    if ember.is_tensor(outs[i]) and outs[i].requires_grad then live[#live + 1] = outs[i] end
  end
  if #live == 0 then return table.unpack(outs, 1, outs.n) end
  local leaves = errors.call(ember._autograd_region_leaves, op, live, since, tensors)
  state.nleaves = #leaves
  state.outs = outs
  local inputs = {}
  for i = 1, #tensors do inputs[i] = tensors[i] end
  for j = 1, #leaves do inputs[#inputs + 1] = leaves[j] end
  live, leaves = nil, nil
  -- arguments: state (not a tensor), then every tensor argument and leaf
  return Region.apply(state, table.unpack(inputs, 1, #inputs))
end

-- ---- reentrant ------------------------------------------------------------------------------

local Reentrant = autograd.Function:extend("CheckpointReentrant")

function Reentrant.forward(ctx, state, ...)
  ctx.state = state
  ctx:save_for_backward(...)
  ctx:set_materialize_grads(false)
  local outs = table.pack(state.fn(state.call(...)))
  return table.unpack(outs, 1, outs.n)
end

function Reentrant.backward(ctx, ...)
  local state = ctx.state
  if ember.is_grad_enabled() then
    fail_plain("checkpoint: a backward with create_graph (double backward) through a checkpoint is not provided")
  end
  local saved = ctx.saved_tensors
  local detached = {}
  for i, t in ipairs(saved) do
    local d = t:detach()
    if t.requires_grad then d:requires_grad_() end
    detached[i] = d
  end
  local outs = rerun(state, function(...) return state.fn(state.call(...)) end, table.unpack(detached, 1, #saved))
  local roots, grads = with_gradients(outs, ...)
  if #roots > 0 then autograd.backward(roots, grads) end
  local res = {}
  for i, d in ipairs(detached) do res[i + 1] = d.grad end
  return table.unpack(res, 1, 1 + #saved)
end

local function reentrant(op, fn, a, preserve)
  local tensors, pos = {}, {}
  local any = false
  for i = 1, a.n do
    if ember.is_tensor(a[i]) then
      tensors[#tensors + 1] = a[i]
      pos[#pos + 1] = i
      any = any or a[i].requires_grad
    end
  end
  if not any then
    -- PyTorch warns and records nothing: no gradient reaches fn's parameters
    errors.raisef("%s: use_reentrant = true needs an argument that requires grad (none does, so fn's "
                  .. "parameters would get no gradient); use use_reentrant = false", op)
  end
  local state = {fn = fn, rng = preserve and ember.get_rng_state() or nil, autocast = autocast_state()}
  -- the full argument list from the tensors: non-tensor arguments kept as they are
  state.call = function(...)
    local full = {}
    for i = 1, a.n do full[i] = a[i] end
    for j = 1, #pos do full[pos[j]] = select(j, ...) end
    return table.unpack(full, 1, a.n)
  end
  return Reentrant.apply(state, table.unpack(tensors, 1, #tensors))
end

-- ---- the API -----------------------------------------------------------------------------------

--- checkpoint(fn, ... [, {use_reentrant = false, preserve_rng_state = true}]) -> fn(...),
--- with fn's intermediates recomputed in backward instead of kept
function M.checkpoint(fn, ...)
  local op = "checkpoint"
  if not callable(fn) then
    errors.raisef("%s: argument 1 must be a function (or a module, anything callable), got %s", op, type(fn))
  end
  local a = table.pack(...)
  local o = {}
  if a.n > 0 and args.is_options(a[a.n]) then
    o = args.options(op, OPTION_NAMES, a[a.n])
    a[a.n] = nil
    a.n = a.n - 1
  end
  local use_reentrant, preserve, check = check_options(op, o)
  if not ember.is_grad_enabled() then return fn(table.unpack(a, 1, a.n)) end
  if use_reentrant then return reentrant(op, fn, a, preserve) end
  return nonreentrant(op, fn, a, preserve, check)
end

--- checkpoint_sequential(functions, segments, input [, {use_reentrant=, preserve_rng_state=}])
--- -> the output of functions applied in order; the first segments - 1 chunks checkpointed
function M.checkpoint_sequential(functions, segments, input, ...)
  local op = "checkpoint_sequential"
  local o = args.options(op, OPTION_NAMES, ...)
  local use_reentrant, preserve, check = check_options(op, o)
  local list = {}
  local mt = type(functions) == "table" and getmetatable(functions)
  if mt and type(mt) == "table" and mt.__len and mt.__call then
    for i = 1, #functions do list[i] = functions[i] end      -- an nn.Sequential: its children
  elseif type(functions) == "table" and not mt then
    for i = 1, #functions do list[i] = functions[i] end
  else
    local got = ember.is_tensor(functions) and "ember.Tensor" or type(functions)
    errors.raisef("%s: argument 1 must be an nn.Sequential or a list of modules or functions, got %s", op, got)
  end
  if #list == 0 then errors.raisef("%s: functions is empty", op) end
  for i, f in ipairs(list) do
    if not callable(f) then errors.raisef("%s: functions[%d] is a %s, not callable", op, i, type(f)) end
  end
  if math.type(segments) ~= "integer" then
    errors.raisef("%s: segments must be an integer, got %s", op,
                  type(segments) == "number" and tostring(segments) or type(segments))
  end
  if segments < 1 or segments > #list then
    errors.raisef("%s: segments must be between 1 and the number of functions (%d), got %d", op, #list, segments)
  end
  local function run(first, last)
    return function(x)
      for i = first, last do x = list[i](x) end
      return x
    end
  end
  local size = #list // segments
  local stop = 0
  local copts = {use_reentrant = use_reentrant, preserve_rng_state = preserve,
                 determinism_check = check and "default" or "none"}
  for start = 1, size * (segments - 1), size do
    stop = start + size - 1
    input = M.checkpoint(run(start, stop), input, copts)
  end
  return run(stop + 1, #list)(input)
end

return M
