-- ember.nn.Module — the base class of layers, losses and models.
--
-- Writing your own module:
--   local nn = ember.nn
--   local MLP = nn.Module:extend("MLP")
--   function MLP:init(d_in, d_hidden, d_out)
--     MLP.super.init(self)                       -- optional: new() already set the module up
--     self.fc1 = nn.Linear(d_in, d_hidden)       -- a child module: registered as "fc1"
--     self.fc2 = nn.Linear(d_hidden, d_out)
--     self.scale = nn.Parameter(ember.ones(d_out))   -- a parameter: registered as "scale"
--   end
--   function MLP:forward(x) return self.fc2(self.fc1(x):relu()) * self.scale end
--   local m = MLP(784, 256, 10)                  -- instances: call the class
--   local y = m(x)                               -- calls m:forward(x)
--
-- Registration rules for `self.name = value` (the order of assignment is kept):
--   * a Module                          -> a child module
--   * a leaf tensor with requires_grad  -> a parameter (nn.Parameter(t) makes one)
--   * a tensor assigned to a buffer name (see register_buffer) -> that buffer
--   * nil                               -> removes the parameter / child / buffer
--   * anything else (numbers, strings, tensors without requires_grad, results of
--     computations) is a plain field.
-- A tensor that does not require grad cannot replace a parameter (as in PyTorch);
-- set the field to nil first, or use register_parameter.
--
-- Conventions and deviations from PyTorch:
--   * parameters(), children() and modules() return lists (Lua arrays);
--     named_parameters(), named_children(), named_modules() and named_buffers()
--     return iterators for a generic `for`:  for name, p in m:named_parameters() do ... end
--   * Order: a module's own parameters (in registration order), then each child's,
--     depth first — PyTorch's order. named_parameters() lists a tensor shared by two
--     modules once (PyTorch's remove_duplicate = true); state_dict() lists it under
--     each of its names, as PyTorch does (a tied lm_head.weight beside tok_emb.weight).
--   * Names are PyTorch's: the children of Sequential and ModuleList are named "0",
--     "1", ... (seq[1] is still the first child: integer indexing is by position,
--     1-based), so state_dicts cross between PyTorch and ember unchanged.
--     load_state_dict also takes the files ember wrote before, which numbered those
--     children from 1 (see load_state_dict).
--   * zero_grad() sets every .grad to nil (PyTorch's set_to_none default).
--   * to(...) replaces each parameter tensor by the converted one (a new tensor
--     with the same requires_grad), so make optimizers after moving a model.
local ember = require "ember"
local raise = require("ember.errors").raise

local Module = {__name = "Module", __is_module_class = true}

local function type_name(m) return getmetatable(m).__name or "Module" end

--- nn.is_module(v) -> true when v is a module instance (not a class).
local function is_module(v)
  if type(v) ~= "table" or rawget(v, "_modules") == nil then return false end
  local mt = getmetatable(v)
  return mt ~= nil and mt.__is_module_class == true
end
Module.is_module = is_module

local function remove_name(list, name)
  for i = 1, #list do
    if list[i] == name then table.remove(list, i) return end
  end
end

-- Forgets `name` in every registry (a field changes kind, or is set to nil).
local function unregister(self, name)
  local stores = {{"_parameters", "_param_names"}, {"_modules", "_module_names"}, {"_buffers", "_buffer_names"}}
  for _, s in ipairs(stores) do
    local store = rawget(self, s[1])
    if store[name] ~= nil then
      store[name] = nil
      remove_name(rawget(self, s[2]), name)
    end
  end
  local np = rawget(self, "_non_persistent")
  if np then np[name] = nil end
end

local function register(self, store_key, names_key, name, value)
  local store = rawget(self, store_key)
  if store[name] == nil then
    unregister(self, name)
    rawset(self, name, nil)
    table.insert(rawget(self, names_key), name)
  end
  store[name] = value
end

-- Field lookup on instances: parameters, children and buffers first, then
-- the class (and its parents). An integer key i is the i-th child by position
-- (1-based, negative counts from the end): seq[1] is the child named "0".
local function instance_index(self, k)
  local v = rawget(self, "_parameters")[k]
  if v ~= nil then return v end
  v = rawget(self, "_modules")[k]
  if v ~= nil then return v end
  v = rawget(self, "_buffers")[k]
  if v ~= nil then return v end
  if math.type(k) == "integer" and getmetatable(self).__numbered then
    -- Sequential and ModuleList: the k-th child (names are "0", "1", ...), as PyTorch's seq[k - 1]
    local names = rawget(self, "_module_names")
    if k < 0 then k = #names + k + 1 end
    local n = names[k]
    return n ~= nil and rawget(self, "_modules")[n] or nil
  end
  if type(k) == "table" then
    -- a range: Sequential and ModuleList slice (their _slice), as PyTorch's seq[a:b]
    local slice = getmetatable(self)._slice
    if slice then return slice(self, k) end
    raise(string.format("%s: a table index ({start, stop}) slices a Sequential or a ModuleList; a %s has no slicing",
                        type_name(self), type_name(self)))
  end
  return getmetatable(self)[k]
end

-- the tensors nn.Buffer made, and whether they persist (weak keys: a mark lives as long
-- as its tensor)
local buffer_marks = setmetatable({}, {__mode = "k"})

local function instance_newindex(self, k, v)
  if type(k) ~= "string" then
    raise(type_name(self) .. ": module fields need string names, got " .. type(k))
  end
  local mark = v ~= nil and buffer_marks[v]
  if mark then
    self:register_buffer(k, v, mark.persistent)
  elseif is_module(v) then
    register(self, "_modules", "_module_names", k, v)
  elseif ember.is_tensor(v) and v.requires_grad and v.is_leaf then
    register(self, "_parameters", "_param_names", k, v)
  elseif rawget(self, "_buffers")[k] ~= nil and (v == nil or ember.is_tensor(v)) then
    if v == nil then unregister(self, k) else rawget(self, "_buffers")[k] = v end
  elseif rawget(self, "_parameters")[k] ~= nil then
    if v ~= nil then
      raise(string.format("%s: cannot assign %s to parameter '%s' (expected a leaf tensor with requires_grad, "
        .. "e.g. nn.Parameter(t), or nil)", type_name(self), ember.is_tensor(v) and "a tensor that does not require grad" or type(v), k))
    end
    unregister(self, k)
  elseif rawget(self, "_modules")[k] ~= nil then
    if v ~= nil then
      raise(string.format("%s: cannot assign a %s to child module '%s' (expected a module or nil)", type_name(self), type(v), k))
    end
    unregister(self, k)
  else
    rawset(self, k, v)
  end
end

local function new(cls, ...)
  local obj = {
    _parameters = {}, _param_names = {},
    _modules = {}, _module_names = {},
    _buffers = {}, _buffer_names = {},
    training = true,
  }
  setmetatable(obj, cls)
  obj:init(...)
  return obj
end

Module.__index = instance_index
Module.__newindex = instance_newindex
-- m(...): forward, between the hooks of register_forward_pre_hook and
-- register_forward_hook when the module has any (lists kept in _forward_pre_hooks and
-- _forward_hooks, nil when empty, so a module without hooks calls forward directly)
local function run_pre_hooks(self, pre, args)
  for _, h in ipairs(pre and table.move(pre, 1, #pre, 1, {}) or {}) do
    local r = h.fn(self, args)
    -- PyTorch: a result that is not a tuple becomes the one argument
    if r ~= nil then
      if type(r) == "table" and getmetatable(r) == nil then args = table.pack(table.unpack(r, 1, r.n or #r))
      else args = table.pack(r) end
    end
  end
  return args
end

local function run_forward_hooks(self, post, args, out)
  for _, h in ipairs(post and table.move(post, 1, #post, 1, {}) or {}) do
    local r = table.pack(h.fn(self, args, table.unpack(out, 1, out.n)))
    if r.n > 0 and r[1] ~= nil then out = r end
  end
  return out
end

local function call_hooks(self, pre, post, ...)
  local args = run_pre_hooks(self, pre, table.pack(...))
  local out = table.pack(self:forward(table.unpack(args, 1, args.n)))
  out = run_forward_hooks(self, post, args, out)
  return table.unpack(out, 1, out.n)
end

-- ---- backward hooks (register_full_backward_pre_hook, register_full_backward_hook) ---------
-- As PyTorch's BackwardHook: the arguments that require grad pass through an identity
-- autograd function before forward, the results that require grad through another after
-- it (and after the forward hooks). The results' node runs first in backward: it hands
-- grad_output to the pre-hooks (which may replace it) and keeps it; the arguments' node
-- then has grad_input and runs the full hooks (which may replace it). When no argument
-- requires grad, the full hooks run at the results' node with every grad_input nil.
local hook_functions   -- {inputs = Function, outputs = Function}, made on first use

local function identity_function(name, on_backward)
  local cls = require("ember.autograd").Function:extend(name)
  function cls.forward(ctx, state, ...)
    ctx:set_materialize_grads(false)   -- nil, not zeros, for what got no gradient
    ctx.state = state
    return ...
  end
  function cls.backward(ctx, ...) return nil, on_backward(ctx.state, ...) end
  return cls
end

-- r, a hook's result standing for a list of n gradients (a table, or one tensor when
-- n is 1), checked against the list it replaces; nil when the hook returned nothing
-- raised inside a backward pass: the binding that started the pass adds the caller's line
local function fail_in_backward(msg) error(msg, 0) end

local function hook_grads(r, old, op)
  if r == nil then return nil end
  if ember.is_tensor(r) then r = {r, n = 1} end
  if type(r) ~= "table" or getmetatable(r) ~= nil then
    fail_in_backward(string.format("%s returned a %s; expected nil or a table of %d gradients", op, type(r), old.n))
  end
  local n = r.n or #r
  local dropped = false
  for i = n + 1, old.n do dropped = dropped or old[i] ~= nil end
  if n > old.n or dropped then
    fail_in_backward(string.format("%s returned %d gradients, but expected %d", op, n, old.n))
  end
  for i = 1, old.n do
    if r[i] ~= nil and not ember.is_tensor(r[i]) then
      fail_in_backward(string.format("%s returned a %s as gradient %d; expected a tensor or nil", op, type(r[i]), i))
    end
  end
  return table.pack(table.unpack(r, 1, old.n))
end

local function run_full_hooks(state, grad_input)
  for _, h in ipairs(state.full) do
    local r = h.fn(state.module, grad_input, state.grad_output)
    if state.no_inputs then
      local any = false
      for i = 1, (type(r) == "table" and (r.n or #r)) or 0 do any = any or r[i] ~= nil end
      if ember.is_tensor(r) or any then
        fail_in_backward("backward hook: a module whose inputs do not require grad has no grad_input to replace; "
              .. "its hooks must return nil")
      end
    else
      grad_input = hook_grads(r, grad_input, "backward hook") or grad_input
    end
  end
  return grad_input
end

-- the gradients reaching the wrapped tensors, placed at their positions among n values
local function spread(where, n, ...)
  local full = {n = n}
  for j, k in ipairs(where) do full[k] = (select(j, ...)) end
  return full
end

local function gather(where, full)
  local out = {}
  for j, k in ipairs(where) do out[j] = full[k] end
  return table.unpack(out, 1, #where)
end

local function make_hook_functions()
  hook_functions = {
    outputs = identity_function("BackwardHookFunction", function(state, ...)
      local grad_output = spread(state.out_where, state.nout, ...)
      for _, h in ipairs(state.pre) do
        grad_output = hook_grads(h.fn(state.module, grad_output), grad_output, "backward pre-hook") or grad_output
      end
      state.grad_output = grad_output
      if state.no_inputs then run_full_hooks(state, {n = state.nin}) end
      return gather(state.out_where, grad_output)
    end),
    inputs = identity_function("BackwardHookFunction", function(state, ...)
      return gather(state.in_where, run_full_hooks(state, spread(state.in_where, state.nin, ...)))
    end),
  }
end

-- passes the values of list that are tensors requiring grad through fn; returns their positions
local function wrap(fn, state, list)
  local where, tensors = {}, {}
  for k = 1, list.n do
    local v = list[k]
    if ember.is_tensor(v) and v.requires_grad then
      where[#where + 1] = k
      tensors[#tensors + 1] = v
    end
  end
  if #where > 0 then
    local wrapped = table.pack(fn.apply(state, table.unpack(tensors, 1, #tensors)))
    for j, k in ipairs(where) do list[k] = wrapped[j] end
  end
  return where
end

local function call_with_backward_hooks(self, bpre, bfull, ...)
  local fpre, fpost = rawget(self, "_forward_pre_hooks"), rawget(self, "_forward_hooks")
  if not ember.is_grad_enabled() then return call_hooks(self, fpre, fpost, ...) end
  if not hook_functions then make_hook_functions() end
  local state = {module = self, pre = table.move(bpre or {}, 1, #(bpre or {}), 1, {}),
                 full = table.move(bfull or {}, 1, #(bfull or {}), 1, {})}
  -- the forward pre-hooks run first, as in PyTorch, so the wrapped arguments are theirs
  local args = run_pre_hooks(self, fpre, table.pack(...))
  state.nin = args.n
  state.in_where = wrap(hook_functions.inputs, state, args)
  state.no_inputs = #state.in_where == 0
  local out = table.pack(self:forward(table.unpack(args, 1, args.n)))
  out = run_forward_hooks(self, fpost, args, out)
  state.nout = out.n
  state.out_where = wrap(hook_functions.outputs, state, out)
  return table.unpack(out, 1, out.n)
end

Module.__call = function(self, ...)
  local pre, post = rawget(self, "_forward_pre_hooks"), rawget(self, "_forward_hooks")
  local bpre, bfull = rawget(self, "_backward_pre_hooks"), rawget(self, "_backward_hooks")
  if bpre or bfull then return call_with_backward_hooks(self, bpre, bfull, ...) end
  if pre or post then return call_hooks(self, pre, post, ...) end
  return self:forward(...)
end
Module.__len = function(self) return #rawget(self, "_module_names") end

--- nn.Module:extend(name) -> a new module class deriving from this one.
-- Define :init(...) (the constructor) and :forward(...) on it; call the class to
-- make instances. The parent class is cls.super.
-- Example: local Net = nn.Module:extend("Net"); function Net:forward(x) return x * 2 end; local n = Net()
function Module:extend(name)
  local cls = {__name = name or "Module", super = self}
  for _, f in ipairs{"__index", "__newindex", "__call", "__len", "__tostring"} do cls[f] = self[f] end
  return setmetatable(cls, {__index = self, __call = new})
end

--- module:init(...) — the constructor; Module.init sets nothing up that new() has not.
-- Subclasses call their parent's init: Net.super.init(self, ...).
function Module:init() end

--- module:forward(...) — the computation; module(...) calls it. Subclasses define it.
function Module:forward()
  raise(type_name(self) .. ": forward() is not implemented (define " .. type_name(self) .. ":forward)")
end

--- module:extra_repr() -> the text inside the parentheses of tostring(module), e.g. "in_features=3, out_features=4, bias=true".
function Module:extra_repr() return "" end

--- module:register_parameter(name, t) — registers t (a tensor, or nil) as a parameter, even one without requires_grad.
-- Example: self:register_parameter("bias", nil)
function Module:register_parameter(name, t)
  if t == nil then unregister(self, name) return end
  if not ember.is_tensor(t) then raise(type_name(self) .. ": register_parameter('" .. name .. "') expects a tensor, got " .. type(t)) end
  register(self, "_parameters", "_param_names", name, t)
end

-- The handle register_forward_hook and register_forward_pre_hook return (PyTorch's
-- RemovableHandle): handle:remove() takes the hook out; removing twice does nothing.
local Handle = {__name = "ember.nn.RemovableHandle"}
Handle.__index = Handle

function Handle:remove()
  local list = rawget(self.module, self.field)
  for i, h in ipairs(list or {}) do
    if h == self.entry then
      table.remove(list, i)
      break
    end
  end
  if list and #list == 0 then rawset(self.module, self.field, nil) end
end

local function add_hook(self, field, op, hook, ...)
  if type(hook) ~= "function" then raise(string.format("%s: hook must be a function, got %s", op, type(hook))) end
  local keys = field:find("backward") and {"*", "prepend"} or {"*", "prepend", "with_kwargs", "always_call"}
  local o = require("ember.args").options(op, keys, ...)
  for _, k in ipairs({"prepend", "with_kwargs", "always_call"}) do
    if o[k] ~= nil and type(o[k]) ~= "boolean" then
      raise(string.format("%s: %s must be a boolean, got %s", op, k, type(o[k])))
    end
  end
  -- Lua calls have no keyword arguments to hand a hook, and a hook after a failed
  -- forward is not run
  if o.with_kwargs then raise(op .. ": with_kwargs = true is not supported (Lua calls have no keyword arguments)") end
  if o.always_call then raise(op .. ": always_call = true is not supported") end
  local list = rawget(self, field)
  if not list then
    list = {}
    rawset(self, field, list)
  end
  local entry = {fn = hook}
  table.insert(list, o.prepend and 1 or #list + 1, entry)
  return setmetatable({module = self, field = field, entry = entry}, Handle)
end

-- The hook registrations, each -> a handle with :remove(); options {prepend = false}.
--   m:register_forward_pre_hook(hook): hook(m, args) runs before each m(...), args the
--     packed arguments (args.n of them); it may return new arguments: a plain table of
--     them, or one value.
--   m:register_forward_hook(hook): hook(m, args, output...) runs after each m(...) with its
--     results; it may return new ones.
--   m:register_full_backward_pre_hook(hook): hook(m, grad_output) runs in backward when the
--     gradients of m's results are known; grad_output has one place per result
--     (grad_output.n; nil where a result got no gradient or is not a tensor). It may return
--     a replacement: a table of as many, or one tensor.
--   m:register_full_backward_hook(hook): hook(m, grad_input, grad_output) runs in backward
--     once the gradients of m's arguments are known: grad_input has one place per argument
--     (nil for one that is not a tensor requiring grad). It may return a replacement
--     grad_input (a table, or one tensor). When no argument requires grad, it runs when
--     grad_output is known, with grad_input all nil, and must return nil.
-- Example: local h = m:register_forward_hook(function(mod, args, out) acts[#acts + 1] = out:detach() end)
for name, field in pairs{register_forward_pre_hook = "_forward_pre_hooks", register_forward_hook = "_forward_hooks",
                         register_full_backward_pre_hook = "_backward_pre_hooks",
                         register_full_backward_hook = "_backward_hooks"} do
  Module[name] = function(self, hook, ...) return add_hook(self, field, name, hook, ...) end
end

--- module:register_buffer(name, t [, persistent = true]) — a tensor that is part of the state (to(), and
-- state_dict unless persistent is false) but not a parameter. persistent may also be given as
-- {persistent = false}, PyTorch's keyword: such a buffer follows to() and named_buffers() but is
-- neither saved by state_dict nor expected by load_state_dict (a causal mask, a cache).
-- Example: self:register_buffer("running_mean", ember.zeros(10)); self:register_buffer("mask", m, false)
function Module:register_buffer(name, t, persistent)
  if t ~= nil and not ember.is_tensor(t) then raise(type_name(self) .. ": register_buffer('" .. tostring(name) .. "') expects a tensor, got " .. type(t)) end
  if type(persistent) == "table" then persistent = persistent.persistent end
  if persistent ~= nil and type(persistent) ~= "boolean" then
    raise(type_name(self) .. ": register_buffer('" .. tostring(name) .. "'): persistent must be a boolean, got " .. type(persistent))
  end
  if t == nil then unregister(self, name) return end
  register(self, "_buffers", "_buffer_names", name, t)
  local np = rawget(self, "_non_persistent")
  if np == nil then np = {}; rawset(self, "_non_persistent", np) end
  np[name] = (persistent == false) or nil
end

--- module:add_module(name, m) — registers m as a child under name (same as self[name] = m).
function Module:add_module(name, m)
  if not is_module(m) then raise(type_name(self) .. ": add_module('" .. tostring(name) .. "') expects a module, got " .. type(m)) end
  register(self, "_modules", "_module_names", tostring(name), m)
  return self
end

--- module:named_children() -> iterator over (name, child) in registration order.
-- Example: for name, child in model:named_children() do print(name, child) end
function Module:named_children()
  local names, mods, i = rawget(self, "_module_names"), rawget(self, "_modules"), 0
  return function()
    i = i + 1
    local n = names[i]
    if n then return n, mods[n] end
  end
end

--- module:children() -> list of the direct child modules.
function Module:children()
  local out = {}
  for _, m in self:named_children() do out[#out + 1] = m end
  return out
end

-- (prefix, module) pairs, self first, depth first; each module once when dedup, else
-- under every path that reaches it (a module that contains itself is not entered again).
local function collect_modules(self, prefix, out, seen, dedup)
  if seen[self] then return end
  seen[self] = true
  out[#out + 1] = {prefix, self}
  for name, m in self:named_children() do
    collect_modules(m, prefix == "" and name or prefix .. "." .. name, out, seen, dedup)
  end
  if not dedup then seen[self] = nil end
end

local function list_iter(list)
  local i = 0
  return function()
    i = i + 1
    local e = list[i]
    if e then return e[1], e[2] end
  end
end

-- The options of named_modules / named_parameters / named_buffers: PyTorch's positional
-- (prefix, recurse, remove_duplicate) or one table {prefix =, recurse =, remove_duplicate =}.
local function member_opts(self, op, a, b, c)
  local o = a
  if type(a) ~= "table" then o = {prefix = a, recurse = b, remove_duplicate = c} end
  for k, v in pairs(o) do
    if k == "prefix" then
      if type(v) ~= "string" then raise(string.format("%s:%s: prefix must be a string, got %s", type_name(self), op, type(v))) end
    elseif k == "recurse" or k == "remove_duplicate" then
      if type(v) ~= "boolean" then raise(string.format("%s:%s: %s must be a boolean, got %s", type_name(self), op, k, type(v))) end
    else
      raise(string.format("%s:%s: unknown option '%s' (expected prefix, recurse, remove_duplicate)", type_name(self), op, tostring(k)))
    end
  end
  return o.prefix or "", o.recurse ~= false, o.remove_duplicate ~= false
end

--- module:named_modules([{prefix = "", remove_duplicate = true}]) -> iterator over (name, module):
-- the module itself (name "" or prefix) then all descendants, depth first. A module reachable
-- under two names is listed once, unless remove_duplicate is false (PyTorch's arguments).
function Module:named_modules(opts)
  local prefix, _, dedup = member_opts(self, "named_modules", opts or {})
  local out = {}
  collect_modules(self, prefix, out, {}, dedup)
  return list_iter(out)
end

--- module:modules() -> list of the module and all its descendants (depth first).
function Module:modules()
  local out = {}
  for _, m in self:named_modules() do out[#out + 1] = m end
  return out
end

local function collect_tensors(self, store_key, names_key, prefix, recurse, dedup)
  local out, seen, mods = {}, {}, {}
  if recurse then collect_modules(self, prefix, mods, {}, dedup) else mods[1] = {prefix, self} end
  for _, e in ipairs(mods) do
    local mp, m = e[1], e[2]
    local store = rawget(m, store_key)
    for _, n in ipairs(rawget(m, names_key)) do
      local t = store[n]
      if not (dedup and seen[t]) then
        seen[t] = true
        out[#out + 1] = {mp == "" and n or mp .. "." .. n, t}
      end
    end
  end
  return out
end

-- The tensors of collect_tensors without their names, each once.
local function tensors_of(self, store_key, names_key, recurse)
  local out = {}
  for _, e in ipairs(collect_tensors(self, store_key, names_key, "", recurse ~= false, true)) do out[#out + 1] = e[2] end
  return out
end

--- module:named_parameters([prefix [, recurse [, remove_duplicate]]]) -> iterator over (name, parameter),
-- names like "fc1.weight" or "0.bias" (PyTorch's: Sequential/ModuleList children from 0). The options
-- may also come as one table {prefix = "", recurse = true, remove_duplicate = true}. A parameter
-- shared by two modules (tied weights) is listed once, under its first name, unless
-- remove_duplicate is false; recurse = false lists the module's own parameters only.
-- Example: for name, p in model:named_parameters() do print(name, p.shape) end
function Module:named_parameters(...)
  return list_iter(collect_tensors(self, "_parameters", "_param_names", member_opts(self, "named_parameters", ...)))
end

--- module:parameters([recurse = true]) -> list of all parameters (own first, then children's, depth first), each once.
-- Example: local opt = ember.optim.SGD(model:parameters(), {lr = 0.1})
function Module:parameters(recurse)
  return tensors_of(self, "_parameters", "_param_names", recurse)
end

--- module:named_buffers([prefix [, recurse [, remove_duplicate]]]) -> iterator over (name, buffer); the options as named_parameters'.
function Module:named_buffers(...)
  return list_iter(collect_tensors(self, "_buffers", "_buffer_names", member_opts(self, "named_buffers", ...)))
end

--- module:buffers([recurse = true]) -> list of all buffers, each once.
function Module:buffers(recurse)
  return tensors_of(self, "_buffers", "_buffer_names", recurse)
end

--- module:num_parameters() -> the total number of parameter elements.
function Module:num_parameters()
  local n = 0
  for _, p in ipairs(self:parameters()) do n = n + p:numel() end
  return n
end

--- module:apply(fn) -> module; calls fn(m) on every descendant, then on the module itself (PyTorch's order).
-- Example: model:apply(function(m) if m.weight then nn.init.zeros_(m.weight) end end)
function Module:apply(fn)
  for _, m in self:named_children() do m:apply(fn) end
  fn(self)
  return self
end

--- module:train([mode = true]) -> module; sets training mode (Dropout active) on the module and all descendants.
function Module:train(mode)
  if mode == nil then mode = true end
  if type(mode) ~= "boolean" then raise(type_name(self) .. ": train(mode) expects a boolean, got " .. type(mode)) end
  for _, m in ipairs(self:modules()) do rawset(m, "training", mode) end
  return self
end

--- module:eval() -> module; same as train(false).
function Module:eval() return self:train(false) end

--- module:requires_grad_([flag = true]) -> module; sets requires_grad on every parameter (freezing with false).
function Module:requires_grad_(flag)
  if flag == nil then flag = true end
  for _, p in ipairs(self:parameters()) do p:requires_grad_(flag) end
  return self
end

--- module:zero_grad() — sets the .grad of every parameter to nil.
function Module:zero_grad()
  for _, p in ipairs(self:parameters()) do p.grad = nil end
end

local function same_placement(a, b) return a.dtype == b.dtype and a.device == b.device end

--- module:to(dtype_or_device [, ...]) -> module; converts parameters, their gradients and buffers in place.
-- Dtype conversions apply to floating-point tensors only, as in PyTorch.
-- Each parameter is replaced by a new tensor: create optimizers afterwards.
-- Example: model:to("float64"); model:to("cuda"); model:to{dtype = "float64", device = "cpu"}
function Module:to(...)
  local args = table.pack(...)
  -- where a float tensor would go: gives the device, and rejects integer dtypes
  local ok, probe = pcall(function() return ember.empty(0):to(table.unpack(args, 1, args.n)) end)
  -- the probe's own position (this file) is no use to the caller
  if not ok then raise(type_name(self) .. ":to: " .. tostring(probe):gsub("^[^:\n]+:%d+: ", "", 1)) end
  if not probe:is_floating_point() then
    raise(type_name(self) .. ":to: modules convert to floating-point dtypes only, got " .. probe.dtype)
  end
  local moved = {}   -- old tensor -> new one, so tensors shared between modules stay shared
  local function convert(t)
    if moved[t] then return moved[t] end
    local r
    if t:is_floating_point() then r = t:detach():to(table.unpack(args, 1, args.n))
    else r = t:detach():to(probe.device) end   -- integer tensors only change device
    if same_placement(r, t) then r = t end
    moved[t] = r
    return r
  end
  for _, m in ipairs(self:modules()) do
    local params, bufs = rawget(m, "_parameters"), rawget(m, "_buffers")
    for _, n in ipairs(rawget(m, "_param_names")) do
      local p = params[n]
      local np = convert(p)
      if np ~= p then
        np:requires_grad_(p.requires_grad)
        local g = p.grad
        if g then np.grad = g:to(np.dtype):to(np.device) end
        params[n] = np
      end
    end
    for _, n in ipairs(rawget(m, "_buffer_names")) do
      local b = bufs[n]
      bufs[n] = convert(b)
    end
  end
  return self
end

--- module:float() / double() / cpu() / cuda() -> module; shorthands for to(...).
function Module:float() return self:to("float32") end
function Module:double() return self:to("float64") end
function Module:cpu() return self:to("cpu") end
function Module:cuda() return self:to("cuda") end

-- (name, tensor, legacy name) of every entry of the state dict, in PyTorch's order: each
-- module's parameters, then its persistent buffers, then its children's entries, depth
-- first; a module or tensor reachable under two names is listed under each. The legacy
-- name is the one older ember used, when the children of Sequential and
-- ModuleList were numbered from 1 (the containers' classes set __numbered).
local function state_entries(self, prefix, legacy, out, path)
  path[self] = true
  local params = rawget(self, "_parameters")
  for _, n in ipairs(rawget(self, "_param_names")) do out[#out + 1] = {prefix .. n, params[n], legacy .. n} end
  local bufs, np = rawget(self, "_buffers"), rawget(self, "_non_persistent")
  for _, n in ipairs(rawget(self, "_buffer_names")) do
    if not (np and np[n]) then out[#out + 1] = {prefix .. n, bufs[n], legacy .. n} end
  end
  local numbered = getmetatable(self).__numbered
  for n, c in self:named_children() do
    if not path[c] then
      local old = n
      if numbered and n:match("^%d+$") then old = string.format("%d", math.tointeger(tonumber(n)) + 1) end
      state_entries(c, prefix .. n .. ".", legacy .. old .. ".", out, path)
    end
  end
  path[self] = nil
end

-- pairs() over a state dict: its names in the order they were listed, then any added since
local function ordered_pairs(t)
  local keys = getmetatable(t).__keys
  local listed = {}
  for _, k in ipairs(keys) do listed[k] = true end
  local i, rest, in_rest = 0, nil, false
  return function()
    while not in_rest do
      i = i + 1
      local k = keys[i]
      if k == nil then in_rest = true break end
      local v = rawget(t, k)
      if v ~= nil then return k, v end
    end
    while true do
      local k, v = next(t, rest)
      rest = k
      if k == nil or not listed[k] then return k, v end
    end
  end, t, nil
end
Module._ordered_pairs = ordered_pairs

--- module:state_dict([{prefix = "", keep_vars = false}]) -> table name -> tensor (detached, sharing memory)
-- of all parameters and persistent buffers, under PyTorch's names: "0.weight" for the first child of a
-- Sequential, and a tensor shared by two modules (a tied lm_head.weight) under each of its names.
-- pairs() walks it in PyTorch's order (each module's parameters, its buffers, then its children);
-- it is a plain table otherwise. keep_vars = true keeps the parameters themselves (not detached).
-- Example: ember.save("model.safetensors", model:state_dict())
function Module:state_dict(opts)
  opts = opts or {}
  if type(opts) ~= "table" then raise(type_name(self) .. ":state_dict: expected an options table {prefix =, keep_vars =}, got " .. type(opts)) end
  local prefix = opts.prefix or ""
  if type(prefix) ~= "string" then raise(type_name(self) .. ":state_dict: prefix must be a string, got " .. type(prefix)) end
  local entries = {}
  state_entries(self, prefix, prefix, entries, {})
  local sd, keys = {}, {}
  for _, e in ipairs(entries) do
    keys[#keys + 1] = e[1]
    sd[e[1]] = opts.keep_vars and e[2] or e[2]:detach()
  end
  return setmetatable(sd, {__pairs = ordered_pairs, __keys = keys})
end

local function shape_str(t)
  return "[" .. table.concat(t.shape, ", ") .. "]"
end
Module._shape_str = shape_str

-- a size or a list of sizes as extra_repr writes it: "[3, 3]" for a list, a string quoted,
-- the value itself otherwise (numbers, nil)
function Module._show(v)
  if type(v) == "table" then
    local parts = {}
    for i = 1, #v do parts[i] = v[i] == nil and "nil" or tostring(v[i]) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end

-- the class name of a module ("Conv2d"), for messages
Module._type_name = type_name

-- a layer's integer argument (a size or a count), at least lo (default 0);
-- what the convolution and transformer layers check their arguments with
local function count_arg(v, op, what, lo)
  local i = type(v) == "number" and math.tointeger(v)
  if not i or i < (lo or 0) then
    raise(string.format("%s: %s must be an integer >= %d, got %s", op, what, lo or 0, tostring(v)))
  end
  return i
end
Module._count = count_arg

-- a layer's boolean argument (default when nil)
local function boolean_arg(v, default, op, what)
  if v == nil then return default end
  if type(v) ~= "boolean" then raise(string.format("%s: %s must be a boolean, got %s", op, what, tostring(v))) end
  return v
end
Module._boolean = boolean_arg

-- what a forward got instead of a tensor, for its error: a PackedSequence (with what to do
-- about it), else the Lua type
local function not_tensor(x)
  local mt = getmetatable(x)
  if type(mt) == "table" and rawget(mt, "__name") == "PackedSequence" then
    return "a PackedSequence (only nn.RNN, nn.LSTM and nn.GRU take one; "
           .. "nn.utils.rnn.pad_packed_sequence turns it into a padded tensor)"
  end
  return type(x)
end
Module._not_tensor = not_tensor

-- a forward's check that its input is a tensor; the error names the layer's class
local function check_input(self, x)
  if not ember.is_tensor(x) then
    raise(string.format("%s: expected a tensor as input, got %s", tostring(getmetatable(self).__name), not_tensor(x)))
  end
end
Module._check_input = check_input

-- (name, value) pairs in insertion order from what ModuleDict's and ParameterDict's update
-- take: another dict of the class cls, a list of {name, value} pairs, or a table
-- name -> value (in sorted key order, as PyTorch sorts a dict's items). what names the
-- values in the errors ("module", "tensor").
local function dict_entries(values, op, cls, what)
  local out = {}
  if getmetatable(values) == cls then
    for k, v in values:items() do out[#out + 1] = {k, v} end
  elseif type(values) ~= "table" or getmetatable(values) ~= nil then   -- tensors and modules have one
    raise(string.format("%s: expected a table name -> %s or a list of {name, %s} pairs, got %s", op, what, what,
                        is_module(values) and "a module" or ember.is_tensor(values) and "a tensor" or type(values)))
  elseif #values > 0 then
    for i, pair in ipairs(values) do
      if type(pair) ~= "table" or getmetatable(pair) ~= nil or #pair ~= 2 then
        raise(string.format("%s: item %d must be a {name, %s} pair", op, i, what))
      end
      out[i] = {pair[1], pair[2]}
    end
  else
    for k, v in pairs(values) do
      if type(k) ~= "string" then raise(op .. ": keys must be strings, got a " .. type(k)) end
      out[#out + 1] = {k, v}
    end
    table.sort(out, function(x, y) return x[1] < y[1] end)
  end
  return out
end

-- The init and update methods of a dict class (ModuleDict, ParameterDict): update adds or
-- replaces the entries dict_entries reads, each through set(self, name, value, class name),
-- in order, and returns self.
function Module._dict_methods(cls, what, set)
  local name = cls.__name
  function cls:init(values)
    if values ~= nil then self:update(values) end
  end
  function cls:update(values)
    for _, e in ipairs(dict_entries(values, name .. ":update", cls, what)) do set(self, e[1], e[2], name) end
    return self
  end
end

-- a key's numbers blanked: "stem.1.weight" -> "stem.#.weight"
local function skeleton(k)
  local parts = {}
  for part in (k .. "."):gmatch("(.-)%.") do parts[#parts + 1] = part:match("^%d+$") and "#" or part end
  return table.concat(parts, ".")
end

-- When the unexpected keys are missing keys with other numbers, says so: the usual cause
-- is a state dict whose containers are numbered otherwise than the model's.
local function numbering_note(missing, unexpected)
  if #missing == 0 or #unexpected == 0 then return nil end
  local by_skeleton = {}
  for _, m in ipairs(missing) do
    local sk = skeleton(m)
    by_skeleton[sk] = by_skeleton[sk] or m
  end
  local example_u, example_m
  for _, u in ipairs(unexpected) do
    local m = by_skeleton[skeleton(u)]
    if m == nil or u == m then return nil end
    if example_u == nil then example_u, example_m = u, m end
  end
  return string.format("the missing and unexpected keys differ only in their numbers (the state dict's '%s' "
    .. "would be the model's '%s'): ember names the children of Sequential and ModuleList from 0, as PyTorch "
    .. "does; a file from an older ember, numbered from 1, is renamed when all its numbered keys fit that "
    .. "(this one mixes the two numberings, or a module numbers its own children)", example_u, example_m)
end

--- module:load_state_dict(sd [, strict = true] [, {strict = true}]) -> {missing_keys = {...}, unexpected_keys = {...}, renumbered = bool}
-- Copies the tensors of sd into the parameters and persistent buffers in place (converting dtype
-- and device). With strict (the default), missing or unexpected keys are an error; shape
-- mismatches always are. Nothing is copied when it fails. Names are PyTorch's (see state_dict),
-- so a PyTorch state dict loads as it is. Two leniencies:
--   * a tensor with several names (tied weights) needs only one of them in sd (safetensors'
--     save_model and older ember files list it once); when several are there, the last copied wins;
--   * a state dict saved by an older ember, which numbered the children of Sequential and
--     ModuleList from 1, is renamed (renumbered = true in the result): it is recognised when some of
--     its keys name the model's tensors only with every container number shifted by one, and none
--     only without the shift.
-- A strict load whose missing and unexpected keys differ only in their numbers says so in the error.
-- Example: model:load_state_dict(ember.load("model.safetensors"))
function Module:load_state_dict(sd, ...)
  local opts = require("ember.args").options("load_state_dict", {"strict"}, ...)
  if opts.strict ~= nil and type(opts.strict) ~= "boolean" then
    raise("load_state_dict: strict must be a boolean, got " .. type(opts.strict))
  end
  local strict = opts.strict ~= false
  local name = type_name(self)
  if type(sd) ~= "table" or ember.is_tensor(sd) then raise("load_state_dict: expected a table name -> tensor, got " .. type(sd)) end
  -- lazy modules (nn/lazy.lua) take their input sizes from the state dict's tensors first
  for mname, m in self:named_modules() do
    if m._materialize_from_state then m:_materialize_from_state(sd, mname == "" and "" or mname .. ".") end
  end
  local entries = {}
  state_entries(self, "", "", entries, {})
  local own, order, old_names = {}, {}, {}
  for _, e in ipairs(entries) do
    if own[e[1]] == nil then order[#order + 1] = e[1] end
    own[e[1]] = e[2]
    old_names[e[3]] = e[1]
  end
  -- an old ember file: keys that fit only the old numbering, none that fit only the new
  local only_new, only_old = 0, 0
  for k in pairs(sd) do
    if type(k) == "string" then
      if own[k] ~= nil and old_names[k] == nil then only_new = only_new + 1 end
      if old_names[k] ~= nil and own[k] == nil then only_old = only_old + 1 end
    end
  end
  local renumbered = only_old > 0 and only_new == 0
  if renumbered then
    local renamed = {}
    for k, v in pairs(sd) do renamed[type(k) == "string" and old_names[k] or k] = v end
    sd = renamed
  end
  local missing, unexpected, problems = {}, {}, {}
  local given = {}   -- tensors that one of their names in sd fills
  for _, n in ipairs(order) do
    if sd[n] ~= nil then given[own[n]] = true end
  end
  for _, n in ipairs(order) do
    local v = sd[n]
    if v == nil then
      if not given[own[n]] then missing[#missing + 1] = n end
    elseif not ember.is_tensor(v) then
      problems[#problems + 1] = string.format("the value for '%s' is a %s, not a tensor", n, type(v))
    elseif #v.shape ~= #own[n].shape or shape_str(v) ~= shape_str(own[n]) then
      problems[#problems + 1] = string.format("size mismatch for %s: the state dict has shape %s, the model %s",
                                              n, shape_str(v), shape_str(own[n]))
    end
  end
  for k in pairs(sd) do
    if own[k] == nil then unexpected[#unexpected + 1] = tostring(k) end
  end
  table.sort(unexpected)
  local parts = {}
  if strict and #missing > 0 then parts[#parts + 1] = "missing keys: " .. table.concat(missing, ", ") end
  if strict and #unexpected > 0 then parts[#parts + 1] = "unexpected keys: " .. table.concat(unexpected, ", ") end
  if strict then parts[#parts + 1] = numbering_note(missing, unexpected) end
  for _, p in ipairs(problems) do parts[#parts + 1] = p end
  if #parts > 0 then
    raise("load_state_dict: error(s) loading the state dict into " .. name .. ": " .. table.concat(parts, "; "))
  end
  ember.no_grad(function()
    for _, n in ipairs(order) do
      if sd[n] ~= nil then own[n]:copy_(sd[n]) end
    end
  end)
  return {missing_keys = missing, unexpected_keys = unexpected, renumbered = renumbered}
end

-- 1234567 -> "1,234,567"
local function thousands(n)
  local s = tostring(math.tointeger(n) or n)
  local sign, digits = s:match("^(-?)(%d+)$")
  if not digits then return s end
  digits = digits:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
  return sign .. digits
end
Module._thousands = thousands

local function count_label(n) return thousands(n) .. (n == 1 and " param" or " params") end

local function own_count(m)
  local n = 0
  for _, pn in ipairs(rawget(m, "_param_names")) do n = n + rawget(m, "_parameters")[pn]:numel() end
  return n
end

local function indent(s)
  return (s:gsub("\n", "\n  "))
end

-- PyTorch's repr: Name(extra) for leaves, Name(\n  (child): ...\n) for containers.
-- Leaves with parameters get "  -- N params"; containers get it after ")".
-- Modules without an extra_repr of their own list their parameters' shapes.
local function repr(m)
  local extra = m:extra_repr() or ""
  local lines = {}
  if extra ~= "" then for l in (extra .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end end
  if m.extra_repr == Module.extra_repr then
    for _, pn in ipairs(rawget(m, "_param_names")) do
      local p = rawget(m, "_parameters")[pn]
      lines[#lines + 1] = string.format("(%s): Parameter(shape=%s, dtype=%s)", pn, shape_str(p), p.dtype)
    end
  end
  local nchild = 0
  for n, c in m:named_children() do
    lines[#lines + 1] = "(" .. n .. "): " .. indent(repr(c))
    nchild = nchild + 1
  end
  local s = type_name(m) .. "("
  if #lines == 1 and nchild == 0 and extra ~= "" then
    s = s .. lines[1]
  elseif #lines > 0 then
    s = s .. "\n  " .. table.concat(lines, "\n  ") .. "\n"
  end
  s = s .. ")"
  local n = nchild == 0 and own_count(m) or m:num_parameters()
  if n > 0 then s = s .. "  -- " .. count_label(n) end
  return s
end

--- tostring(module) -> the module tree like PyTorch's repr, with parameter counts and a total line.
-- Example: print(model)
Module.__tostring = function(self)
  local s = repr(self):gsub("  %-%- [%d,]+ params?$", "")
  local total, trainable = 0, 0
  for _, p in ipairs(self:parameters()) do
    total = total + p:numel()
    if p.requires_grad then trainable = trainable + p:numel() end
  end
  local last = "Total parameters: " .. thousands(total)
  if trainable ~= total then last = last .. " (" .. thousands(trainable) .. " trainable)" end
  return s .. "\n" .. last
end

setmetatable(Module, {__call = new})

--- nn.Parameter(t [, requires_grad = true]) -> a leaf tensor sharing t's memory, with requires_grad set.
-- Assigning it to a module field registers it as a parameter.
-- Example: self.scale = nn.Parameter(ember.ones(10))
local function Parameter(t, requires_grad)
  if not ember.is_tensor(t) then raise("Parameter: expected a tensor, got " .. type(t)) end
  if requires_grad == nil then requires_grad = true end
  return t:detach():requires_grad_(requires_grad)
end

--- nn.Buffer([t] [, {persistent = true}]) -> a tensor sharing t's memory (and its
-- requires_grad) that, assigned to a module field, registers as a buffer (persistent:
-- saved by state_dict), as PyTorch 2.5's nn.Buffer. Without t, an empty tensor.
local function Buffer(t, ...)
  if t == nil then t = ember.empty(0) end
  if not ember.is_tensor(t) then raise("Buffer: expected a tensor, got " .. type(t)) end
  local persistent = require("ember.args").options("Buffer", {"*", "persistent"}, ...).persistent
  if persistent ~= nil and type(persistent) ~= "boolean" then
    raise("Buffer: persistent must be a boolean, got " .. type(persistent))
  end
  local b = t:detach()
  if t.requires_grad then b:requires_grad_() end
  buffer_marks[b] = {persistent = persistent ~= false}
  return b
end

-- ---- deep copies ------------------------------------------------------------------------

-- Python's copy.deepcopy of a module (or a table or tensor): a copy of v sharing nothing
-- mutable with it: modules and plain tables are copied, tensors cloned (parameters stay
-- leaves with requires_grad), and what is shared inside v stays shared inside the copy (a
-- tied weight stays tied). Classes and other objects with a metatable that are not modules
-- (functions too) are shared, as deepcopy of a class would be pointless.
local function deepcopy(v, memo)
  memo = memo or {}
  if memo[v] ~= nil then return memo[v] end
  if ember.is_tensor(v) then
    local c = v:detach():clone()
    if v.requires_grad then c:requires_grad_(true) end
    if v.is_leaf and v.grad ~= nil then c.grad = v.grad:clone() end
    memo[v] = c
    return c
  end
  if type(v) ~= "table" then return v end
  local mt = getmetatable(v)
  if mt ~= nil and not is_module(v) then return v end
  local c = {}
  memo[v] = c
  for k, x in next, v do rawset(c, deepcopy(k, memo), deepcopy(x, memo)) end
  return setmetatable(c, mt)
end

return {Module = Module, Parameter = Parameter, Buffer = Buffer, is_module = is_module, deepcopy = deepcopy}
