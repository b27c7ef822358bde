-- ember.optim — optimizers with torch.optim's semantics.
--
--   local opt = optim.SGD(model:parameters(), {lr = 0.1, momentum = 0.9})
--   local opt = optim.AdamW({{params = decay, weight_decay = 0.01},
--                            {params = no_decay, weight_decay = 0}}, {lr = 1e-3})
--   opt:zero_grad(); loss:backward(); opt:step()
--   opt.param_groups[1].lr = 0.01            -- groups are plain tables
--   optim.clip_grad_norm_(model:parameters(), 1.0)
--   optim.lr_scheduler.StepLR(opt, {step_size = 10, gamma = 0.1})
--
-- SGD, Adam and AdamW update a whole group in one multi-tensor engine op
-- (ember._sgd_multi_step_ / ember._adam_multi_step_, engine/optim.h): one
-- pass over every parameter, gradient and state tensor of a device and dtype
-- (one launch on CUDA), as PyTorch's foreach / fused optimizers. With
-- foreach = false (and fused not true) each parameter's update is its own
-- fused op (ember._sgd_step_ / ember._adam_step_); both give the same bits.
--
-- State: opt.state[p] is a table per parameter (SGD: momentum_buffer;
-- Adam/AdamW: step, exp_avg, exp_avg_sq), created on the parameter's first
-- step with zeros_like(p), so it follows the parameter's device and dtype.
--
-- Saving:
--   opt:state_dict() -> {state = {[i] = {...}}, param_groups = {{..., params = {i, ...}}},
--                        class = "AdamW"}
--     PyTorch's layout, parameters numbered 1, 2, ... over the groups in
--     order, and the optimizer's name. State tensors are the live ones (not
--     copies), as in PyTorch.
--   opt:load_state_dict(sd): copies the state (cast to each parameter's
--     dtype and device) and the groups' hyper-parameters. State another
--     optimizer saved is refused, naming both ("AdamW state loaded into
--     SGD"); a dict without class (PyTorch's) is taken when its groups fit.
--   opt:state_dict_flat() -> tensors, metadata: the same as two flat
--     tables for a safetensors file: tensors["state.<i>.<name>"], and
--     metadata strings "class", "state.<i>.step", "param_groups.<g>.<key>" (numbers
--     printed with 17 digits, lists as "[a,b]"; see ember.optim.flat).
--   opt:load_state_dict_flat(tensors, metadata): the inverse.
local ember = require "ember"
local errors = require "ember.errors"
local flat = require "ember.optim.flat"

local M = {}

-- Raises at the user's line: the first frame outside ember's Lua library, however deep in
-- the library the check runs.
local fail = errors.raisef

local function shallow_copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- Group values are numbers, booleans, strings, tensors and lists (betas):
-- lists are copied so a saved dict does not change with the optimizer.
local function copy_value(v)
  if type(v) == "table" and not ember.is_tensor(v) then return shallow_copy(v) end
  return v
end

---------------------------------------------------------------------------
-- Hyper-parameter checks. `where` names the optimizer and the group.

local function check_number(where, name, v, lo, lo_open, hi, hi_open, what)
  if type(v) ~= "number" then
    fail("%s: %s must be a number, got %s", where, name, ember.is_tensor(v) and "a tensor" or type(v))
  end
  local bad = v ~= v or (lo and (v < lo or (lo_open and v == lo))) or
              (hi and (v > hi or (hi_open and v == hi)))
  if bad then
    fail("%s: invalid %s: %s = %s (%s)", where, what or name, name, tostring(v),
         lo and hi and string.format("must be in %s%s, %s%s", lo_open and "(" or "[", lo, hi,
                                     hi_open and ")" or "]")
           or string.format("must be %s %s", lo_open and ">" or ">=", lo))
  end
end

local function check_boolean(where, name, v)
  if type(v) ~= "boolean" then
    fail("%s: %s must be a boolean, got %s", where, name, type(v))
  end
end

-- foreach and fused, as PyTorch's SGD, Adam and AdamW take them: nil (the
-- default: the multi-tensor step), or booleans. fused = true is the
-- multi-tensor step as well (one pass does the whole update); foreach =
-- false without fused = true steps each parameter on its own.
local FOREACH = {foreach = true, fused = true}

local function check_foreach(g, where)
  for _, k in ipairs({"foreach", "fused"}) do
    if g[k] ~= nil then check_boolean(where, k, g[k]) end
  end
  if g.foreach and g.fused then fail("%s: `fused` and `foreach` cannot be `true` together", where) end
end

local function use_multi(g)
  return g.fused == true or g.foreach ~= false
end

-- The group's parameters that have a gradient, with their state tables
-- (created empty on a parameter's first step).
local function with_grads(self, group)
  local ps, gs, sts = {}, {}, {}
  for _, p in ipairs(group.params) do
    local g = p.grad
    if g ~= nil then
      local st = self.state[p]
      if st == nil then
        st = {}
        self.state[p] = st
      end
      ps[#ps + 1], gs[#gs + 1], sts[#sts + 1] = p, g, st
    end
  end
  return ps, gs, sts
end

---------------------------------------------------------------------------
-- The optimizer base class.

local Optimizer = {}
Optimizer.__index = Optimizer
Optimizer._optional = {}      -- options a class stores without a default (SGD's foreach, ...)
Optimizer._scalar_state = {}  -- state entries other than step that are numbers (NAdam's mu_product)
Optimizer._state_shapes = {}  -- state entries not shaped like their parameter: name -> fn(p) -> sizes

-- PyTorch 2.x options ember does not implement, with the reason. PyTorch's default
-- (false) is accepted and dropped, so ported code that spells it out runs; any other
-- value is refused naming the option, never ignored.
local NOT_DIFFERENTIABLE = "ember's optimizer steps run under no_grad and record no autograd graph"
local UNSUPPORTED = {
  differentiable = NOT_DIFFERENTIABLE,
  capturable = "capturable steps are implemented for Adam and AdamW only",
}
Optimizer._unsupported = UNSUPPORTED

-- True when option k is one of the class's unsupported ones and v is its off value (the
-- caller drops it); an error naming it when v turns it on.
local function unsupported(cls, where, k, v)
  local why = cls._unsupported[k]
  if why == nil then return false end
  if v == false or v == nil then return true end
  fail("%s: %s = %s is not supported (%s)", where, tostring(k), tostring(v), why)
end

local function is_group(x)
  return type(x) == "table" and not ember.is_tensor(x) and x.params ~= nil
end

-- A tensor, a list of tensors or an iterator -> a list of tensors.
local function tensor_list(name, x, what)
  if ember.is_tensor(x) then return {x} end
  local out = {}
  if type(x) == "function" then
    for p in x do out[#out + 1] = p end
  elseif type(x) == "table" then
    for i = 1, #x do out[i] = x[i] end
  else
    fail("%s: %s must be a tensor, a list of tensors or an iterator, got %s", name, what, type(x))
  end
  for i, p in ipairs(out) do
    if not ember.is_tensor(p) then
      fail("%s: %s: element %d is a %s, not a tensor", name, what, i, type(p))
    end
  end
  return out
end

-- opt:add_param_group({params = ..., lr = ...}): the missing
-- hyper-parameters come from the optimizer's defaults.
function Optimizer:add_param_group(group)
  local name = self._name
  if not is_group(group) then
    fail("%s: add_param_group: expected a table with a params field", name)
  end
  local g = {}
  for k, v in pairs(group) do
    if k ~= "params" and not unsupported(self, name, k, v) then
      if self.defaults[k] == nil and not self._ignored[k] and not self._optional[k] then
        fail("%s: unknown option '%s'", name, tostring(k))
      end
      g[k] = copy_value(v)
    end
  end
  for k, v in pairs(self.defaults) do
    if g[k] == nil then g[k] = copy_value(v) end
  end
  g.params = tensor_list(name, group.params, "params")
  local seen = {}
  for _, other in ipairs(self.param_groups) do
    for _, p in ipairs(other.params) do seen[p] = true end
  end
  for i, p in ipairs(g.params) do
    if seen[p] then
      fail("%s: parameter %d of a group appears twice (in this group or another one)", name, i)
    end
    seen[p] = true
    local dt = p.dtype
    if dt ~= "float32" and dt ~= "float64" and not (self._half and (dt == "float16" or dt == "bfloat16")) then
      fail("%s: parameter %d has dtype %s; %s updates %s tensors", name, i, dt, name,
           self._half and "float32, float64, float16 and bfloat16" or "float32 and float64")
    end
    if not p.is_leaf then
      fail("%s: parameter %d is not a leaf tensor (it was computed by %s); optimize the tensors "
              .. "it was made from, or detach() it", name, i, tostring(p.grad_fn))
    end
  end
  self:_check_group(g, string.format("%s (group %d)", name, #self.param_groups + 1))
  self.param_groups[#self.param_groups + 1] = g
end

-- PyTorch's positional hyperparameters after params, in order (optim.SGD(params, 0.1, 0.9)
-- is SGD(params, lr = 0.1, momentum = 0.9)); the others are keywords only.
local POSITIONAL = {
  SGD = {"lr", "momentum", "dampening", "weight_decay", "nesterov"},
  Adam = {"lr", "betas", "eps", "weight_decay", "amsgrad"},
  AdamW = {"lr", "betas", "eps", "weight_decay", "amsgrad"},
  RMSprop = {"lr", "alpha", "eps", "weight_decay", "momentum", "centered", "capturable", "foreach", "maximize",
             "differentiable"},
  Adagrad = {"lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps", "foreach"},
  Adamax = {"lr", "betas", "eps", "weight_decay", "foreach"},
  NAdam = {"lr", "betas", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay"},
  RAdam = {"lr", "betas", "eps", "weight_decay", "decoupled_weight_decay"},
  Adadelta = {"lr", "rho", "eps", "weight_decay", "foreach"},
  ASGD = {"lr", "lambd", "alpha", "t0", "weight_decay", "foreach", "maximize", "differentiable", "capturable"},
  Rprop = {"lr", "etas", "step_sizes"},
  Adafactor = {"lr", "beta2_decay", "eps", "d", "weight_decay"},
  Muon = {"lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps", "ns_steps", "adjust_lr_fn"},
  LBFGS = {"lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change", "history_size", "line_search_fn"},
}

-- The hyperparameters of a constructor call (after params): positional in PyTorch's order,
-- then an options table (ember.args); an unknown one is an error naming it.
local function hyperparameters(cls, ...)
  local names, seen = {}, {}
  for _, k in ipairs(POSITIONAL[cls._name] or {}) do names[#names + 1] = k; seen[k] = true end
  names[#names + 1] = "*"
  for _, set in ipairs{cls._defaults, cls._ignored, cls._optional, cls._unsupported} do
    for k in pairs(set) do if not seen[k] then names[#names + 1] = k; seen[k] = true end end
  end
  return require("ember.args").options(cls._name, names, ...)
end

-- Shared constructor: params is a list of tensors or of group tables.
local function construct(cls, params, ...)
  local name = cls._name
  local opts = hyperparameters(cls, ...)
  local self = setmetatable({param_groups = {}, state = {}, defaults = {}}, cls)
  for k, v in pairs(cls._defaults) do self.defaults[k] = copy_value(v) end
  for k, v in pairs(opts) do
    if not unsupported(cls, name, k, v) then
      if cls._defaults[k] == nil and not cls._ignored[k] and not cls._optional[k] then
        fail("%s: unknown option '%s'", name, tostring(k))
      end
      if cls._defaults[k] ~= nil or cls._optional[k] then self.defaults[k] = copy_value(v) end
    end
  end
  local groups
  if type(params) == "table" and not ember.is_tensor(params) and is_group(params[1]) then
    groups = params
  else
    groups = {{params = params}}
  end
  for _, group in ipairs(groups) do self:add_param_group(group) end
  local n = 0
  for _, g in ipairs(self.param_groups) do n = n + #g.params end
  if n == 0 then fail("%s: got an empty parameter list", name) end
  return self
end

-- Defines a class: optim.Name(params, opts) constructs one.
local function class(name, defaults, ignored, check_group, step_param)
  local cls = setmetatable({}, {
    __index = Optimizer,
    __call = construct,
  })
  cls.__index = cls
  cls.__name = name
  cls._name = name
  cls._defaults = defaults
  cls._ignored = ignored
  cls._check_group = function(_, g, where) check_group(g, where) end
  cls._step_param = step_param
  cls._optional = {}
  cls._unsupported = UNSUPPORTED
  cls._scalar_state = {}
  cls.__tostring = Optimizer.__tostring
  return cls
end

-- opt:step([closure]): updates every parameter that has a gradient; a
-- closure (re-evaluating the loss, with grad mode on) is called first and
-- its result returned.
function Optimizer:step(closure)
  local loss
  if closure ~= nil then
    if type(closure) ~= "function" then
      fail("%s: step: argument 1: expected a closure, got %s", self._name, type(closure))
    end
    loss = ember.enable_grad(closure)
  end
  local _ <close> = ember.no_grad()
  for gi, group in ipairs(self.param_groups) do
    self:_check_group(group, string.format("%s (group %d)", self._name, gi))
    if not (self._step_group and self:_step_group(group)) then
      local ps, gs, sts = with_grads(self, group)
      for i, p in ipairs(ps) do self:_step_param(p, gs[i], sts[i], group) end
    end
  end
  return loss
end

-- opt:zero_grad([set_to_none = true]): drops every gradient (or fills them
-- with zeros when set_to_none is false).
function Optimizer:zero_grad(set_to_none)
  if set_to_none == nil then set_to_none = true end
  local _ <close> = ember.no_grad()
  for _, group in ipairs(self.param_groups) do
    for _, p in ipairs(group.params) do
      if set_to_none then
        p.grad = nil
      else
        local g = p.grad
        if g ~= nil then g:zero_() end
      end
    end
  end
end

function Optimizer:state_dict()
  local index, n = {}, 0
  local groups = {}
  for gi, group in ipairs(self.param_groups) do
    local packed = {}
    for k, v in pairs(group) do
      if k ~= "params" then packed[k] = copy_value(v) end
    end
    packed.params = {}
    for i, p in ipairs(group.params) do
      n = n + 1
      index[p] = n
      packed.params[i] = n
    end
    groups[gi] = packed
  end
  local state = {}
  for p, st in pairs(self.state) do
    local i = index[p]
    if i and next(st) ~= nil then state[i] = shallow_copy(st) end
  end
  return {state = state, param_groups = groups, class = self._name}
end

-- State saved by another optimizer has other hyper-parameters and other
-- buffers: name both rather than fail on the first missing number. Adam and
-- AdamW keep the same state and group keys (PyTorch loads one's state into
-- the other), so they count as one.
local STATE_FAMILY = {AdamW = "Adam"}
local function family(name) return STATE_FAMILY[name] or name end
function Optimizer:_check_class(sd, name)
  if sd.class ~= nil and family(sd.class) ~= family(self._name) then
    fail("%s: %s state loaded into %s (load it into an optim.%s)", name, tostring(sd.class), self._name,
         tostring(sd.class))
  end
end

function Optimizer:load_state_dict(sd)
  local name = self._name .. ": load_state_dict"
  if type(sd) ~= "table" or type(sd.param_groups) ~= "table" then
    fail("%s: expected a table {state = ..., param_groups = ...}", name)
  end
  self:_check_class(sd, name)
  local saved = sd.param_groups
  if #saved ~= #self.param_groups then
    fail("%s: the saved state has %d parameter group(s), this optimizer %d", name, #saved,
         #self.param_groups)
  end
  local by_index = {}
  for gi, group in ipairs(self.param_groups) do
    local sg = saved[gi]
    if type(sg) ~= "table" or type(sg.params) ~= "table" then
      fail("%s: saved parameter group %d has no params list", name, gi)
    end
    if #sg.params ~= #group.params then
      fail("%s: saved parameter group %d has %d parameter(s), this optimizer's %d", name, gi,
           #sg.params, #group.params)
    end
    for i, idx in ipairs(sg.params) do
      if math.type(idx) ~= "integer" and not (type(idx) == "number" and idx == math.floor(idx)) then
        fail("%s: saved parameter group %d: params[%d] is not an integer index", name, gi, i)
      end
      by_index[math.tointeger(idx)] = group.params[i]
    end
  end
  -- Build everything before changing anything, so a bad dict leaves the
  -- optimizer as it was.
  local new_state = {}
  for idx, st in pairs(sd.state or {}) do
    local i = math.tointeger(idx) or math.tointeger(tonumber(idx))
    local p = i and by_index[i]
    if p == nil then fail("%s: state for parameter %s, which no group lists", name, tostring(idx)) end
    local s = {}
    for k, v in pairs(st) do
      if ember.is_tensor(v) then
        if k == "step" or (self._scalar_state[k] and v.ndim == 0) then
          -- PyTorch keeps these as 0-d tensors, ember as numbers
          s[k] = math.tointeger(v:item()) or v:item()
        else
          local want = self._state_shapes[k] and self._state_shapes[k](p) or p.shape
          local same = #v.shape == #want
          for d = 1, #want do same = same and v.shape[d] == want[d] end
          if not same then
            fail("%s: state %d '%s' has shape [%s] but %s [%s]", name, i, k, table.concat(v.shape, ","),
                 self._state_shapes[k] and "its parameter's asks" or "its parameter", table.concat(want, ","))
          end
          s[k] = v:detach():to(p):clone()
        end
      else
        s[k] = copy_value(v)
      end
    end
    new_state[p] = s
  end
  local new_groups = {}
  for gi, group in ipairs(self.param_groups) do
    local g = {}
    local where = string.format("%s (saved group %d)", name, gi)
    for k, v in pairs(saved[gi]) do
      if k ~= "params" and not unsupported(self, where, k, v) then g[k] = copy_value(v) end
    end
    -- an option whose default is false (ember's spelling of PyTorch's None, as LBFGS's
    -- line_search_fn) is absent from a PyTorch dict that holds None
    for k, v in pairs(self.defaults) do
      if g[k] == nil and v == false then g[k] = false end
    end
    g.params = group.params
    local ok, err = pcall(self._check_group, self, g, where)
    if not ok then
      -- a dict that does not name its optimizer (PyTorch's): the likely cause
      error(string.format("%s (was the state saved by another optimizer than %s?)", err, self._name), 0)
    end
    new_groups[gi] = g
  end
  -- Replace the contents, not the tables: a scheduler holding
  -- opt.param_groups keeps seeing the optimizer's groups.
  for gi, group in ipairs(self.param_groups) do
    for k in pairs(group) do group[k] = nil end
    for k, v in pairs(new_groups[gi]) do group[k] = v end
  end
  self.state = new_state
end

-- The state of a state_dict, flattened for state_dict_flat: each tensor into tensors as
-- "state.<i>.<k>", the lists of tensors under list_state's keys (nil: none) as
-- "state.<i>.<k>.<j>", every other value encoded into meta (where prefixes encode's errors)
local function flatten_state(state, tensors, meta, where, list_state)
  for i, st in pairs(state) do
    for k, v in pairs(st) do
      local key = string.format("state.%d.%s", i, k)
      if ember.is_tensor(v) then
        tensors[key] = v
      elseif list_state and list_state[k] then
        for j, x in ipairs(v) do tensors[key .. "." .. j] = x end
      else
        meta[key] = flat.encode(v, where .. key)
      end
    end
  end
end

function Optimizer:state_dict_flat()
  local sd = self:state_dict()
  local tensors, meta = {}, {}
  flatten_state(sd.state, tensors, meta, self._name .. ": state_dict_flat: ")
  meta.class = sd.class
  meta.param_groups = string.format("%d", #sd.param_groups)
  for gi, g in ipairs(sd.param_groups) do
    for k, v in pairs(g) do
      local key = string.format("param_groups.%d.%s", gi, k)
      if ember.is_tensor(v) and v:numel() == 1 then v = v:item() end   -- a tensor lr (capturable), as a number
      meta[key] = flat.encode(v, self._name .. ": state_dict_flat: " .. key)
    end
  end
  return tensors, meta
end

function Optimizer:load_state_dict_flat(tensors, meta)
  local name = self._name .. ": load_state_dict_flat"
  if type(tensors) ~= "table" or type(meta) ~= "table" then
    fail("%s: expected two tables (tensors, metadata)", name)
  end
  local ngroups = math.tointeger(tonumber(meta.param_groups or ""))
  if not ngroups then fail("%s: the metadata has no 'param_groups' count", name) end
  local sd = {state = {}, param_groups = {}, class = meta.class}
  for gi = 1, ngroups do sd.param_groups[gi] = {} end
  local function state_of(i)
    local s = sd.state[i]
    if not s then s = {}; sd.state[i] = s end
    return s
  end
  for key, v in pairs(meta) do
    local gi, k = key:match("^param_groups%.(%d+)%.(.+)$")
    if gi then
      local g = sd.param_groups[tonumber(gi)]
      if not g then fail("%s: metadata '%s' names a group beyond the %d saved", name, key, ngroups) end
      g[k] = flat.decode(v, name .. ": " .. key)
      if k == "params" and type(g[k]) ~= "table" then g[k] = {g[k]} end
    else
      local i, sk = key:match("^state%.(%d+)%.(.+)$")
      if i then state_of(math.tointeger(tonumber(i)))[sk] = flat.decode(v, name .. ": " .. key) end
    end
  end
  for key, t in pairs(tensors) do
    local i, sk = key:match("^state%.(%d+)%.(.+)$")
    if not i then fail("%s: unexpected tensor '%s'", name, key) end
    state_of(math.tointeger(tonumber(i)))[sk] = t
  end
  local ok, err = pcall(self.load_state_dict, self, sd)
  if not ok then error((tostring(err):gsub("load_state_dict:", "load_state_dict_flat:", 1)), 2) end
end

function Optimizer:__tostring()
  local lines = {self._name .. " ("}
  for gi, g in ipairs(self.param_groups) do
    lines[#lines + 1] = string.format("Parameter Group %d", gi)
    local keys = {}
    for k in pairs(g) do if k ~= "params" then keys[#keys + 1] = k end end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local v = g[k]
      if type(v) == "table" then
        local parts = {}
        for i, x in ipairs(v) do parts[i] = tostring(x) end
        v = "(" .. table.concat(parts, ", ") .. ")"
      end
      lines[#lines + 1] = string.format("    %s: %s", k, tostring(v))
    end
  end
  lines[#lines + 1] = ")"
  return table.concat(lines, "\n")
end

---------------------------------------------------------------------------
-- SGD

local function check_sgd(g, where)
  check_number(where, "lr", g.lr, 0, false, nil, nil, "learning rate")
  check_number(where, "momentum", g.momentum, 0)
  check_number(where, "dampening", g.dampening)
  check_number(where, "weight_decay", g.weight_decay, 0)
  check_boolean(where, "nesterov", g.nesterov)
  check_boolean(where, "maximize", g.maximize)
  if g.nesterov and (g.momentum <= 0 or g.dampening ~= 0) then
    fail("%s: nesterov momentum requires momentum > 0 and dampening = 0 (got momentum = %s, "
            .. "dampening = %s)", where, tostring(g.momentum), tostring(g.dampening))
  end
  check_foreach(g, where)
end

local function sgd_param(_, p, grad, st, g)
  local first = false
  local buf = nil
  if g.momentum ~= 0 then
    buf = st.momentum_buffer
    if buf == nil then
      buf = ember.zeros_like(p)
      first = true
    end
  end
  ember._sgd_step_(p, grad, buf, g.lr, g.momentum, g.dampening, g.weight_decay, g.nesterov,
                   first, g.maximize)
  if buf ~= nil then st.momentum_buffer = buf end
end

-- foreach, which the composed optimizers take and drop (PyTorch's foreach and
-- for-loop implementations compute the same update); Adagrad's fused likewise
local IGNORED = {foreach = true}

-- The whole group in one multi-tensor step; false when the group steps per parameter.
local function sgd_group(self, g)
  if not use_multi(g) then return false end
  local ps, gs, sts = with_grads(self, g)
  if #ps == 0 then return true end
  local bufs, firsts
  if g.momentum ~= 0 then
    bufs, firsts = {}, {}
    for i, st in ipairs(sts) do
      firsts[i] = st.momentum_buffer == nil
      bufs[i] = st.momentum_buffer or ember.zeros_like(ps[i])
    end
  end
  ember._sgd_multi_step_(ps, gs, bufs, firsts, g.lr, g.momentum, g.dampening, g.weight_decay, g.nesterov,
                         g.maximize)
  if bufs then
    for i, st in ipairs(sts) do st.momentum_buffer = bufs[i] end
  end
  return true
end

--- optim.SGD(params, {lr = 1e-3, momentum = 0, dampening = 0,
---                    weight_decay = 0, nesterov = false, maximize = false, foreach = nil, fused = nil})
M.SGD = class("SGD", {lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0,
                      nesterov = false, maximize = false}, {}, check_sgd, sgd_param)
M.SGD._optional = FOREACH
M.SGD._unsupported = {differentiable = NOT_DIFFERENTIABLE}      -- PyTorch's SGD has no capturable
M.SGD._step_group = sgd_group
M.SGD._half = true

---------------------------------------------------------------------------
-- Adam and AdamW

-- lr, eps, betas and weight_decay: the checks Adam shares with Adamax, NAdam
-- and RAdam (ember.optim.optimizers)
local function check_adam_family(g, where, lr_checked)
  if not lr_checked then check_number(where, "lr", g.lr, 0, false, nil, nil, "learning rate") end
  check_number(where, "eps", g.eps, 0, false, nil, nil, "epsilon value")
  if type(g.betas) ~= "table" or #g.betas ~= 2 then
    fail("%s: betas must be a list of two numbers, e.g. {0.9, 0.999}", where)
  end
  check_number(where, "betas[1]", g.betas[1], 0, false, 1, true, "beta parameter")
  check_number(where, "betas[2]", g.betas[2], 0, false, 1, true, "beta parameter")
  check_number(where, "weight_decay", g.weight_decay, 0)
end

local check_tensor_lr     -- ember.optim.capturable's (set below, when it is loaded)

local function check_adam(g, where)
  local tensor_lr = ember.is_tensor(g.lr)
  check_adam_family(g, where, tensor_lr)
  check_boolean(where, "maximize", g.maximize)
  check_boolean(where, "amsgrad", g.amsgrad)
  check_foreach(g, where)
  check_boolean(where, "capturable", g.capturable)
  if g.decoupled_weight_decay ~= nil then check_boolean(where, "decoupled_weight_decay", g.decoupled_weight_decay) end
  if g.capturable and g.amsgrad then fail("%s: capturable = true does not cover amsgrad", where) end
  if tensor_lr then check_tensor_lr(g, where) end
end

-- A parameter's state on its first step (when st[first name] is nil): step = 0
-- and a tensor of zeros like p for each name. True when it made them.
local function zero_state(st, p, ...)
  if st[(...)] ~= nil then return false end
  st.step = 0
  for i = 1, select("#", ...) do st[select(i, ...)] = ember.zeros_like(p) end
  return true
end

-- AdamW's weight decay, or Adam's with decoupled_weight_decay = true (PyTorch 2.x's Adam
-- option; AdamW's own groups carry it too when PyTorch saved them)
local function decoupled(self, g) return self._decoupled or g.decoupled_weight_decay == true end

local helpers = {decoupled = decoupled, NOT_DIFFERENTIABLE = NOT_DIFFERENTIABLE,
                 class = class, construct = construct, check_number = check_number,
                 check_boolean = check_boolean, fail = fail, IGNORED = IGNORED,
                 tensor_list = tensor_list, Optimizer = Optimizer,
                 check_adam_family = check_adam_family, zero_state = zero_state, flatten_state = flatten_state}
require("ember.optim.optimizers")(M, helpers)
require("ember.optim.lbfgs")(M, helpers)
require("ember.optim.capturable")(M, helpers)
check_tensor_lr = helpers.check_tensor_lr

-- amsgrad has no fused step: it is composed from tensor ops
-- (ember.optim.optimizers); the common case keeps the one-pass engine step.
local function adam_param(self, p, grad, st, g)
  if g.amsgrad then return helpers.adam_amsgrad_param(self, p, grad, st, g) end
  if g.capturable then return helpers.adam_capturable_param(self, p, grad, st, g) end
  zero_state(st, p, "exp_avg", "exp_avg_sq")
  local step = st.step + 1
  ember._adam_step_(p, grad, st.exp_avg, st.exp_avg_sq, g.lr, g.betas[1], g.betas[2], g.eps,
                    g.weight_decay, helpers.decoupled(self, g), step, g.maximize)
  st.step = step
end

-- The whole group in one multi-tensor step (amsgrad has none: it steps per parameter).
local function adam_group(self, g)
  -- amsgrad and capturable step per parameter (capturable: the step count is a device tensor)
  if g.amsgrad or g.capturable or not use_multi(g) then return false end
  local ps, gs, sts = with_grads(self, g)
  if #ps == 0 then return true end
  local ms, vs, steps = {}, {}, {}
  for i, st in ipairs(sts) do
    zero_state(st, ps[i], "exp_avg", "exp_avg_sq")
    ms[i], vs[i], steps[i] = st.exp_avg, st.exp_avg_sq, st.step + 1
  end
  ember._adam_multi_step_(ps, gs, ms, vs, steps, g.lr, g.betas[1], g.betas[2], g.eps, g.weight_decay,
                          helpers.decoupled(self, g), g.maximize)
  for i, st in ipairs(sts) do st.step = steps[i] end
  return true
end

--- optim.Adam(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8,
---                     weight_decay = 0 (L2, added to the gradient), amsgrad = false, maximize = false,
---                     foreach = nil, fused = nil, decoupled_weight_decay = false (true: AdamW's decay)})
M.Adam = class("Adam", {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
                        amsgrad = false, maximize = false, capturable = false, decoupled_weight_decay = false},
               {}, check_adam, adam_param)
M.Adam._decoupled = false

--- optim.AdamW(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8,
---                      weight_decay = 1e-2 (decoupled: p *= 1 - lr*wd), amsgrad = false, maximize = false,
---                      foreach = nil, fused = nil})
M.AdamW = class("AdamW", {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 1e-2,
                          amsgrad = false, maximize = false, capturable = false}, {}, check_adam, adam_param)
M.AdamW._decoupled = true
M.AdamW._check_group = function(_, g, where)
  check_adam(g, where)
  if g.decoupled_weight_decay == false then
    fail("%s: decoupled_weight_decay = false is Adam's weight decay, not AdamW's (use optim.Adam)", where)
  end
end
-- AdamW's own groups may carry decoupled_weight_decay (PyTorch's AdamW saves it, true)
M.AdamW._optional = {foreach = true, fused = true, decoupled_weight_decay = true}
M.Adam._optional = FOREACH
for _, cls in ipairs({M.Adam, M.AdamW}) do
  cls._unsupported = {differentiable = NOT_DIFFERENTIABLE}
  cls._step_group = adam_group
  cls._half = true
end

M.Optimizer = Optimizer

---------------------------------------------------------------------------
-- Gradient clipping

--- optim.clip_grad_norm_(params, max_norm, {norm_type = 2, error_if_nonfinite = false, foreach = nil})
--- nn.utils.clip_grad_norm_ (lua/ember/nn/utils.lua), also under this name.
function M.clip_grad_norm_(...) return require("ember.nn.utils").clip_grad_norm_(...) end

M.lr_scheduler = require "ember.optim.lr_scheduler"

-- optim.swa_utils (AveragedModel, update_bn, SWALR), loaded on first use: it needs ember.nn
return setmetatable(M, {__index = function(t, k)
  if k ~= "swa_utils" then return nil end
  local v = require "ember.optim.swa_utils"
  rawset(t, k, v)
  return v
end})
