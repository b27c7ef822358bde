-- ember.autograd — gradients on demand and numerical gradient checks.
--   ember.autograd.grad(outputs, inputs, {grad_outputs=, retain_graph=,
--                       create_graph=, allow_unused=})  -> one gradient per input
--   ember.autograd.backward(tensors, grad_tensors, {retain_graph=, create_graph=, inputs=})
--                       backward from several tensors at once, into the leaves' .grad
--   ember.autograd.gradcheck(fn, inputs, {eps=, atol=, rtol=})  -> true, or false and a report
--   ember.autograd.gradgradcheck(fn, inputs, {eps=, atol=, rtol=}) -> the same for second derivatives
--   ember.autograd.queue_callback(fn)  from a hook: fn() when the running backward pass ends
--   ember.autograd.Function        custom forward/backward in Lua (Function:extend(name))
--   ember.autograd.functional      jacobian, hessian, vjp, jvp, hvp, vhp
local ember = require "ember"
local errors = require "ember.errors"

local M = {}

M.grad = ember._autograd_grad

local options = require("ember.args").options
local backward_names = {"grad_tensors", "retain_graph", "create_graph", "*", "inputs"}

--- backward(tensors, grad_tensors, retain_graph, create_graph, {inputs=}): one backward pass
-- from every tensor of the list (or one tensor), each with its gradient from grad_tensors (a
-- tensor or list; nil for single-element tensors), summed into the leaves' .grad, as PyTorch's
-- torch.autograd.backward; with inputs= only those tensors' .grad are written.
function M.backward(tensors, grad_tensors, ...)
  -- grad_tensors may be a list with holes ({nil, g}), which has no [1] like an
  -- options table: a table with a string key is the options
  local gt = grad_tensors
  if type(gt) == "table" and getmetatable(gt) == nil then
    for k in pairs(gt) do
      if type(k) == "string" then return M.backward(tensors, nil, gt) end
    end
  end
  local o = options("autograd.backward", backward_names, nil, ...)
  o.grad_tensors = grad_tensors
  local ts = tensors
  if ember.is_tensor(ts) then ts = {ts} end
  if type(ts) ~= "table" or #ts == 0 then
    errors.raise("autograd.backward: tensors must be a tensor or a non-empty list of tensors, got "
                 .. (type(ts) == "table" and "an empty list" or type(tensors)))
  end
  local gs = o.grad_tensors
  if ember.is_tensor(gs) then gs = {gs} end
  if gs ~= nil then
    local given = 0
    for k in pairs(gs) do
      if math.type(k) ~= "integer" or k < 1 then
        errors.raise("autograd.backward: grad_tensors must be a tensor or a list of tensors")
      end
      if k > given then given = k end
    end
    if given > #ts then
      errors.raise(("autograd.backward: %d grad_tensors given for %d tensors"):format(given, #ts))
    end
    -- a list with holes (nil for a single-element tensor) becomes ones of each shape
    local full = {}
    for i = 1, #ts do
      local g = gs[i]
      if g == nil then
        if ts[i]:numel() ~= 1 then
          errors.raise(("autograd.backward: grad_tensors[%d] is nil, but tensors[%d] has shape %s: "
                        .. "a gradient can be implied only for a single-element tensor"):format(i, i,
                        errors.shape_str(ts[i])))
        end
        g = ember.ones_like(ts[i])
      end
      full[i] = g
    end
    gs = full
  end
  errors.call(ember._autograd_backward, ts, gs, {retain_graph = o.retain_graph, create_graph = o.create_graph,
                                    inputs = ember.is_tensor(o.inputs) and {o.inputs} or o.inputs})
end

--- set_detect_anomaly(mode [, check_nan = true]): anomaly mode on or off, as PyTorch's
-- torch.autograd.set_detect_anomaly. While it is on, every op that records a node keeps
-- the Lua traceback of its call, and a backward pass stops at the first node that fails or
-- (with check_nan) returns a gradient holding a NaN, with an error naming the node and that
-- traceback. It slows every recorded op (a traceback each); for debugging only.
function M.set_detect_anomaly(mode, check_nan)
  if type(mode) ~= "boolean" then
    errors.raise("set_detect_anomaly: mode must be a boolean, got " .. type(mode))
  end
  if check_nan ~= nil and type(check_nan) ~= "boolean" then
    errors.raise("set_detect_anomaly: check_nan must be a boolean, got " .. type(check_nan))
  end
  ember._set_anomaly(mode, check_nan ~= false)
end

--- is_anomaly_enabled() -> whether anomaly mode is on
function M.is_anomaly_enabled()
  local on, nan = ember._set_anomaly(false)
  ember._set_anomaly(on, nan)
  return on
end
--- is_anomaly_check_nan_enabled() -> whether anomaly mode checks gradients for NaN
function M.is_anomaly_check_nan_enabled()
  local on, nan = ember._set_anomaly(false)
  ember._set_anomaly(on, nan)
  return on and nan
end

local Guard = {__name = "ember.AnomalyGuard"}
Guard.__index = Guard
Guard.__close = function(g)
  if not g.closed then
    g.closed = true
    ember._set_anomaly(g.was, g.was_nan)
  end
end

--- detect_anomaly([{check_nan = true}]) -> a guard for `local _ <close> = ...`, or
--- detect_anomaly(fn, ... [, {check_nan = true}]) -> fn(...)'s results: anomaly mode on
-- while the guard lives or fn runs, then as it was (PyTorch's `with detect_anomaly():`).
function M.detect_anomaly(fn, ...)
  local n = select("#", ...)
  local opts = n > 0 and select(n, ...) or nil
  if type(fn) == "table" and getmetatable(fn) == nil and n == 0 then opts, fn = fn, nil end
  if type(opts) ~= "table" or getmetatable(opts) ~= nil or rawget(opts, 1) ~= nil then
    opts = nil
  else
    n = n - 1
  end
  local check_nan = true
  for k, v in pairs(opts or {}) do
    if k ~= "check_nan" then errors.raisef("detect_anomaly: unknown option '%s' (expected check_nan)", tostring(k)) end
    if type(v) ~= "boolean" then errors.raise("detect_anomaly: check_nan must be a boolean, got " .. type(v)) end
    check_nan = v
  end
  if fn ~= nil and type(fn) ~= "function" and not (getmetatable(fn) or {}).__call then
    errors.raise("detect_anomaly: expected a function or an options table, got " .. type(fn))
  end
  local was, was_nan = ember._set_anomaly(true, check_nan)
  local g = setmetatable({was = was, was_nan = was_nan}, Guard)
  if fn == nil then return g end
  local _ <close> = g
  return fn(table.unpack({...}, 1, n))
end

--- queue_callback(fn): called during a backward pass (from a hook), runs fn() once that pass has
-- accumulated every gradient, before backward returns (PyTorch's
-- Variable._execution_engine.queue_callback); an error in fn fails the backward.
M.queue_callback = ember._queue_callback

local function as_list(x)
  if ember.is_tensor(x) then return {x} end
  return x
end

-- The sum of every output weighted by fixed random numbers: one scalar whose
-- gradient checks all outputs at once.
local function scalarize(outs, weights)
  local total = nil
  for i, o in ipairs(outs) do
    local term = (o * weights[i]):sum()
    total = total and total + term or term
  end
  return total
end

-- fresh float64 leaves that require grad, one per input (a tensor or a list)
local function float64_leaves(inputs, who)
  local xs = {}
  for i, x in ipairs(as_list(inputs)) do
    assert(ember.is_tensor(x), who .. ": input " .. i .. " is not a tensor")
    xs[i] = x:detach():to("float64"):clone():requires_grad_()
  end
  return xs
end

-- gradcheck's and gradgradcheck's step and tolerances: eps, atol, rtol
local function tolerances(opts)
  opts = opts or {}
  return opts.eps or 1e-6, opts.atol or 1e-5, opts.rtol or 1e-3
end

-- float64 standard normal numbers shaped like each tensor of ts
local function randn_like_each(ts)
  local out = {}
  for i, t in ipairs(ts) do out[i] = ember.randn(t.shape, {dtype = "float64"}) end
  return out
end

-- Compares analytic[i], the gradient of value() with respect to xs[i] (nil:
-- zero), with central differences of value() over each element of xs[i].
-- Returns true, or false and a message that starts with who.
local function compare_with_differences(who, xs, analytic, value, eps, atol, rtol)
  for i, x in ipairs(xs) do
    local n = x:numel()
    local flat = x:detach():reshape(-1)   -- shares memory with x
    local got = (analytic[i] and analytic[i]:reshape(-1) or ember.zeros(n, {dtype = "float64"})):tolist()
    local values = flat:tolist()
    for k = 1, n do
      local orig = values[k]
      local function at(v)
        flat[k] = v
        local r = value()
        flat[k] = orig
        return r
      end
      local numeric = (at(orig + eps) - at(orig - eps)) / (2 * eps)
      if math.abs(got[k] - numeric) > atol + rtol * math.abs(numeric) then
        return false, string.format("%s: input %d, element %d: autograd %.10g, finite differences %.10g",
                                    who, i, k, got[k], numeric)
      end
    end
  end
  return true
end

-- Compares autograd's gradient with central finite differences, in float64.
-- fn takes the inputs (tensors) and returns a tensor or a list of tensors.
function M.gradcheck(fn, inputs, opts)
  local eps, atol, rtol = tolerances(opts)
  local xs = float64_leaves(inputs, "gradcheck")
  local outs = as_list(fn(table.unpack(xs)))
  local weights = randn_like_each(outs)
  local analytic = {M.grad({scalarize(outs, weights)}, xs, {allow_unused = true})}
  local function value()
    return ember.no_grad(function() return scalarize(as_list(fn(table.unpack(xs))), weights):item() end)
  end
  return compare_with_differences("gradcheck", xs, analytic, value, eps, atol, rtol)
end

-- Second derivatives against finite differences of the first gradient, in
-- float64: with s(x) the outputs weighted by fixed random numbers and w_i
-- fixed random directions, phi(x) = sum_i <grad_i s(x), w_i>; its gradient by
-- double backward (create_graph) is compared with central differences of
-- phi, each computed from a fresh first-order backward.
function M.gradgradcheck(fn, inputs, opts)
  local eps, atol, rtol = tolerances(opts)
  local xs = float64_leaves(inputs, "gradgradcheck")
  local weights
  local function grads(create)
    local outs = as_list(fn(table.unpack(xs)))
    weights = weights or randn_like_each(outs)
    return {M.grad({scalarize(outs, weights)}, xs, {create_graph = create, allow_unused = true})}
  end
  local ws = randn_like_each(xs)
  local function phi(gs)
    local total = nil
    for i = 1, #xs do
      if gs[i] then
        local term = (gs[i] * ws[i]):sum()
        total = total and total + term or term
      end
    end
    return total
  end
  local total = phi(grads(true))
  if not total or not total.requires_grad then return false, "gradgradcheck: the first gradient does not require grad" end
  local analytic = {M.grad({total}, xs, {allow_unused = true})}
  return compare_with_differences("gradgradcheck", xs, analytic, function() return phi(grads(false)):item() end,
                                  eps, atol, rtol)
end

-- ---- custom functions ----------------------------------------------------------------------
-- A Function class has forward(ctx, ...) and backward(ctx, grad_outputs...). apply runs
-- forward with recording off, then (when grad mode is on and a tensor argument requires
-- grad) ember._autograd_function records one node whose backward calls the class's
-- backward. The C half keeps the saved tensors (checked for in-place changes, freed after
-- a backward without retain_graph); the ctx table keeps only what the user puts in it.

local Ctx = {}

function Ctx.__index(ctx, k)
  if k == "saved_tensors" then
    local saved = rawget(ctx, "_unpacked")
    if not saved then
      errors.raise("autograd.Function: ctx.saved_tensors is only readable in backward")
    end
    return saved
  end
  return Ctx[k]
end

--- ctx:save_for_backward(...) keeps tensors for backward (read back as ctx.saved_tensors).
function Ctx:save_for_backward(...)
  local list = table.pack(...)
  for i = 1, list.n do
    if list[i] ~= nil and not ember.is_tensor(list[i]) then
      errors.raisef("save_for_backward: argument %d is a %s; only tensors (or nil) can be saved "
                    .. "(store other values as fields of ctx)", i, type(list[i]))
    end
  end
  rawset(self, "_to_save", list)
end

--- ctx:mark_dirty(...) declares the inputs forward modified in place (and returns).
function Ctx:mark_dirty(...) rawset(self, "_dirty", {...}) end

--- ctx:mark_non_differentiable(...) declares outputs that have no gradient.
function Ctx:mark_non_differentiable(...) rawset(self, "_nondiff", {...}) end

--- ctx:set_materialize_grads(on): when false, backward gets nil for outputs with no gradient.
function Ctx:set_materialize_grads(on) rawset(self, "_materialize", on and true or false) end

local Function = {__name = "Function"}
Function.__index = Function

-- raised inside a backward pass: the binding that started the pass adds the caller's line
local function fail_plain(fmt, ...) error(string.format(fmt, ...), 0) end

local function check_backward_results(name, res, is_tensor_arg, nargs)
  if res.n ~= nargs then
    fail_plain("autograd.Function %s: backward returned %d gradients; expected %d (one per argument of "
                  .. "forward, nil where there is none)", name, res.n, nargs)
  end
  for i = 1, nargs do
    local g = res[i]
    if g ~= nil and g ~= false then
      if not ember.is_tensor(g) then
        fail_plain("autograd.Function %s: backward returned a %s as gradient %d; expected a tensor or nil",
                      name, type(g), i)
      end
      if not is_tensor_arg[i] then
        fail_plain("autograd.Function %s: backward returned a gradient for argument %d, which is not a "
                      .. "tensor (return nil there)", name, i)
      end
    end
  end
end

local function apply(cls, ...)
  local name = rawget(cls, "__name") or "Function"
  if type(cls.forward) ~= "function" or type(cls.backward) ~= "function" then
    errors.raisef("autograd.Function %s: define both %s.forward(ctx, ...) and %s.backward(ctx, ...)", name, name, name)
  end
  local nargs = select("#", ...)
  local args = table.pack(...)
  local ctx = setmetatable({needs_input_grad = {}, _materialize = true, _name = name}, Ctx)
  local record, is_tensor_arg = false, {}
  local grad_on = ember.is_grad_enabled()
  for i = 1, nargs do
    is_tensor_arg[i] = ember.is_tensor(args[i])
    local need = grad_on and is_tensor_arg[i] and args[i].requires_grad or false
    ctx.needs_input_grad[i] = need
    record = record or need
  end
  local outs = table.pack(ember.no_grad(cls.forward, ctx, ...))
  if not record then return table.unpack(outs, 1, outs.n) end
  local tensor_outputs, where = {}, {}
  for k = 1, outs.n do
    if ember.is_tensor(outs[k]) then
      tensor_outputs[#tensor_outputs + 1] = outs[k]
      where[#where + 1] = k
    end
  end
  -- the engine keeps the tensors saved; slots[i] is the engine slot of save_for_backward's
  -- argument i (nil arguments take none)
  local saved, slots = {}, {}
  local to_save = rawget(ctx, "_to_save")
  for i = 1, to_save and to_save.n or 0 do
    if to_save[i] ~= nil then
      saved[#saved + 1] = to_save[i]
      slots[i] = #saved
    end
  end
  rawset(ctx, "_to_save", nil)
  -- the closure below lives as long as the node, which the outputs own: it must not hold
  -- the outputs (nor the arguments), or the registry reference would keep them for ever
  local nsaved_list = to_save and to_save.n or 0
  local nouts = outs.n
  local backward = cls.backward
  local spec = {
    name = name .. "Backward",
    inputs = args,
    outputs = tensor_outputs,
    dirty = rawget(ctx, "_dirty") or {},
    nondiff = rawget(ctx, "_nondiff") or {},
    saved = saved,
    materialize = rawget(ctx, "_materialize"),
  }
  rawset(ctx, "_dirty", nil)
  rawset(ctx, "_nondiff", nil)
  spec.backward = function(grads, saved_now)
    local unpacked = {}
    for i = 1, nsaved_list do
      if slots[i] then unpacked[i] = saved_now[slots[i]] end
    end
    rawset(ctx, "_unpacked", unpacked)
    local gouts = {}
    for j, k in ipairs(where) do gouts[k] = grads[j] end
    local res = table.pack(backward(ctx, table.unpack(gouts, 1, nouts)))
    rawset(ctx, "_unpacked", nil)
    check_backward_results(name, res, is_tensor_arg, nargs)
    for i = 1, nargs do
      if res[i] == false then res[i] = nil end
    end
    return res
  end
  local ok, err = pcall(ember._autograd_function, spec)
  if not ok then errors.raise((tostring(err):gsub("^[^:]+:%d+: ", ""))) end   -- at the user's line
  -- outputs the engine replaced (an input returned as it is comes back as a new tensor)
  for j, k in ipairs(where) do outs[k] = spec.outputs[j] end
  return table.unpack(outs, 1, outs.n)
end

--- autograd.Function:extend(name) -> a new custom-function class; give it forward(ctx, ...)
--- and backward(ctx, grad_outputs...), then call Class.apply(...) or Class(...).
function Function:extend(name)
  if type(name) ~= "string" then
    errors.raisef("autograd.Function:extend: expected a class name (a string), got %s", type(name))
  end
  local cls = setmetatable({__name = name}, {__index = self, __call = function(c, ...) return apply(c, ...) end,
                                            __tostring = function() return "autograd.Function " .. name end})
  cls.apply = function(...) return apply(cls, ...) end
  return cls
end

M.Function = Function

-- once_differentiable's guard: DelayedError(name, r, g...) returns r, recorded as a function
-- of the incoming gradients g (those that require grad), so differentiating r raises
local DelayedError = Function:extend("DelayedError")
function DelayedError.forward(ctx, name, r)
  ctx.name = name
  return r
end
function DelayedError.backward(ctx)
  fail_plain("autograd.Function %s: trying to differentiate twice a backward marked once_differentiable", ctx.name)
end

--- autograd.once_differentiable(backward) -> backward that runs with recording off; a
--- gradient of its results (double backward) is an error instead of a silent zero.
function M.once_differentiable(fn)
  if type(fn) ~= "function" then
    errors.raisef("once_differentiable: expected a function, got %s", type(fn))
  end
  return function(ctx, ...)
    local live = {}
    if ember.is_grad_enabled() then
      for i = 1, select("#", ...) do
        local g = select(i, ...)
        if ember.is_tensor(g) and g.requires_grad then live[#live + 1] = g end
      end
    end
    local res = table.pack(ember.no_grad(fn, ctx, ...))
    if #live > 0 then
      local name = tostring(rawget(ctx, "_name") or "")
      for i = 1, res.n do
        if ember.is_tensor(res[i]) and res[i]:is_floating_point() then
          res[i] = DelayedError.apply(name, res[i], table.unpack(live))
        end
      end
    end
    return table.unpack(res, 1, res.n)
  end
end

-- ---- autograd.functional --------------------------------------------------------------------

local F = {}
M.functional = F

-- inputs as given (a tensor or a list of tensors) -> list, and whether it was one tensor
local function tensor_args(x, op, what)
  if ember.is_tensor(x) then return {x}, true end
  if type(x) ~= "table" then errors.raisef("%s: expected a tensor or a list of tensors as %s, got %s", op, what, type(x)) end
  for i, t in ipairs(x) do
    if not ember.is_tensor(t) then errors.raisef("%s: entry %d of %s is not a tensor", op, i, what) end
  end
  return x, false
end

-- the inputs as tensors that require grad, recorded from here: fresh leaves, or (create_graph
-- with an input that requires grad) a view that keeps the input's own history, so the
-- results can be differentiated again with respect to the caller's tensors
local function leaves(xs, create)
  local r = {}
  for i, x in ipairs(xs) do
    if create and x.requires_grad then r[i] = x:view(x.shape)
    else r[i] = x:detach():requires_grad_() end
  end
  return r
end

local function call(func, xs, op)
  local outs = table.pack(func(table.unpack(xs)))
  if outs.n == 0 then errors.raisef("%s: the function returned nothing; expected tensors", op) end
  for i = 1, outs.n do
    if not ember.is_tensor(outs[i]) then
      errors.raisef("%s: the function's result %d is a %s; expected tensors", op, i, type(outs[i]))
    end
  end
  return outs
end

-- func called on inputs (a tensor or a list) made fresh leaves: the leaves,
-- whether inputs was one tensor, and func's results (checked by call)
local function call_on_leaves(func, inputs, op, create)
  local xs0, single = tensor_args(inputs, op, "inputs")
  local xs = leaves(xs0, create)
  return xs, single, call(func, xs, op)
end

-- gradient of each output's weighted sum (weights v) w.r.t. xs; zeros where unused
local function vjp_list(outs, vs, xs, create, strict, op)
  local needs = {}
  for i = 1, #outs do needs[i] = outs[i].requires_grad end
  local os, gs = {}, {}
  for i = 1, #outs do
    if needs[i] then os[#os + 1] = outs[i]; gs[#gs + 1] = vs[i] end
  end
  local res = {}
  if #os > 0 then
    res = {M.grad(os, xs, {grad_outputs = gs, retain_graph = true, create_graph = create, allow_unused = true})}
  end
  for i, x in ipairs(xs) do
    if res[i] == nil then
      if strict then
        errors.raisef("%s: the output does not depend on input %d (strict = true)", op, i)
      end
      res[i] = ember.zeros_like(x)
    end
  end
  return res
end

-- v (a tensor or a list) checked against the tensors it pairs with, one for one, shape for shape
local function check_v(v, like, op, what)
  local vs = tensor_args(v, op, "v")
  if #vs ~= #like then errors.raisef("%s: %d tensors given as v for %d %s", op, #vs, #like, what) end
  for i = 1, #like do
    if tostring(vs[i].shape) ~= tostring(like[i].shape) then
      errors.raisef("%s: v %d has shape %s; expected %s (%s %d)", op, i, tostring(vs[i].shape),
                    tostring(like[i].shape), what, i)
    end
  end
  return vs
end

-- v, or ones when v is left out (allowed only for one tensor of one element)
local function v_or_ones(v, like, op, what)
  if v ~= nil then return check_v(v, like, op, what) end
  if #like ~= 1 or like[1]:numel() ~= 1 then
    errors.raisef("%s: v can be omitted only for a single %s with one element", op, what:sub(1, -2))
  end
  return {ember.ones_like(like[1])}
end

local function result(list, single)
  if single then return list[1] end
  return list
end

local function detach_unless(t, create) return create and t or t:detach() end

-- the gradients gs that depend on the inputs (the others are constant zeros) and their v
local function requiring(gs, vs)
  local live, vv = {}, {}
  for i, g in ipairs(gs) do
    if g.requires_grad then live[#live + 1] = g; vv[#vv + 1] = vs[i] end
  end
  return live, vv
end

-- the first n entries of list, detached unless create_graph
local function detach_all(list, n, create)
  local r = {}
  for i = 1, n do r[i] = detach_unless(list[i], create) end
  return r
end

--- functional.vjp(func, inputs, [v], {create_graph, strict}) -> outputs, v^T J (as torch).
function F.vjp(func, inputs, v, opts)
  opts = opts or {}
  local op = "autograd.functional.vjp"
  local xs, single, outs = call_on_leaves(func, inputs, op, opts.create_graph)
  local vs = v_or_ones(v, {table.unpack(outs, 1, outs.n)}, op, "outputs")
  local g = vjp_list(outs, vs, xs, opts.create_graph, opts.strict, op)
  return result(detach_all(outs, outs.n, opts.create_graph), outs.n == 1),
         result(detach_all(g, #g, opts.create_graph), single)
end

--- functional.jvp(func, inputs, [v], {create_graph, strict}) -> outputs, J v (by the
--- double-vjp trick: two backward passes).
function F.jvp(func, inputs, v, opts)
  opts = opts or {}
  local op = "autograd.functional.jvp"
  local xs, _, outs = call_on_leaves(func, inputs, op, opts.create_graph)
  local vs = v_or_ones(v, xs, op, "inputs")
  -- u -> J^T u is linear in u; its vjp with v is J v
  local us = {}
  for i = 1, outs.n do us[i] = ember.zeros_like(outs[i]):requires_grad_() end
  local live, vv = requiring(vjp_list(outs, us, xs, true, opts.strict, op), vs)
  local jv = {}
  if #live > 0 then
    jv = {M.grad(live, us, {grad_outputs = vv, create_graph = opts.create_graph, allow_unused = true})}
  end
  for i = 1, outs.n do jv[i] = jv[i] or ember.zeros_like(outs[i]) end
  return result(detach_all(outs, outs.n, opts.create_graph), outs.n == 1),
         result(detach_all(jv, outs.n, opts.create_graph), outs.n == 1)
end

--- functional.jacobian(func, inputs, {create_graph, strict}) -> d outputs / d inputs, each
--- of shape output.shape .. input.shape (a tensor, a list per input, or a list per output
--- of lists per input, as torch).
function F.jacobian(func, inputs, opts)
  opts = opts or {}
  local op = "autograd.functional.jacobian"
  local xs, single_in, outs = call_on_leaves(func, inputs, op, opts.create_graph)
  local per_out = {}
  for o = 1, outs.n do
    local y = outs[o]
    local m = y:numel()
    local rows = {}
    for i = 1, #xs do rows[i] = {} end
    for j = 1, m do
      local e = ember.zeros(m, {dtype = y.dtype, device = y.device})
      e[j] = 1
      local g = vjp_list({y}, {e:view(y.shape)}, xs, opts.create_graph, opts.strict, op)
      for i = 1, #xs do rows[i][j] = g[i]:reshape(-1) end
    end
    local js = {}
    for i, x in ipairs(xs) do
      local shape = {}
      for _, s in ipairs(y.shape) do shape[#shape + 1] = s end
      for _, s in ipairs(x.shape) do shape[#shape + 1] = s end
      local J = m > 0 and ember.stack(rows[i]) or ember.zeros(0, x:numel(), {dtype = x.dtype, device = x.device})
      js[i] = detach_unless(J:reshape(shape), opts.create_graph)
    end
    per_out[o] = result(js, single_in)
  end
  return result(per_out, outs.n == 1)
end

-- the gradient of a scalar func as a function of the inputs (recorded, to differentiate again)
local function gradient_of(func, op, strict, value)
  return function(...)
    local xs = {...}
    local outs = call(func, xs, op)
    if outs.n ~= 1 or outs[1]:numel() ~= 1 then
      errors.raisef("%s: the function must return a single tensor with one element", op)
    end
    value[1] = outs[1]
    local g = vjp_list({outs[1]}, {ember.ones_like(outs[1])}, xs, true, strict, op)
    return table.unpack(g, 1, #xs)
  end
end

--- functional.hessian(func, inputs, {create_graph, strict}) -> second derivatives of a
--- scalar function (input.shape .. input.shape; a list of lists for several inputs).
function F.hessian(func, inputs, opts)
  opts = opts or {}
  local op = "autograd.functional.hessian"
  tensor_args(inputs, op, "inputs")
  return F.jacobian(gradient_of(func, op, opts.strict, {}), inputs, opts)
end

--- functional.hvp(func, inputs, v, {create_graph, strict}) -> func(inputs), H v (forward-over-
--- reverse by the double-vjp trick).
function F.hvp(func, inputs, v, opts)
  opts = opts or {}
  local op = "autograd.functional.hvp"
  tensor_args(inputs, op, "inputs")
  local value = {}
  local _, hv = F.jvp(gradient_of(func, op, opts.strict, value), inputs, v, opts)
  return detach_unless(value[1], opts.create_graph), hv
end

--- functional.vhp(func, inputs, v, {create_graph, strict}) -> func(inputs), v^T H.
function F.vhp(func, inputs, v, opts)
  opts = opts or {}
  local op = "autograd.functional.vhp"
  local xs0, single = tensor_args(inputs, op, "inputs")
  local xs = leaves(xs0, true)
  local value = {}
  local g = {gradient_of(func, op, opts.strict, value)(table.unpack(xs))}
  local live, vv = requiring(g, check_v(v, xs, op, "inputs"))
  local h
  if #live > 0 then
    h = vjp_list(live, vv, xs, opts.create_graph, opts.strict, op)
  else
    h = {}
    for i = 1, #xs do h[i] = ember.zeros_like(xs[i]) end
  end
  return detach_unless(value[1], opts.create_graph), result(detach_all(h, #h, opts.create_graph), single)
end

return M
