-- ember.func — torch.func: function transforms over ember's autograd. grad, grad_and_value,
-- vjp, jvp, jacrev, jacfwd, hessian and vmap take a function and return one;
-- functional_call runs a module with other tensors in place of its parameters and
-- buffers, stack_module_state stacks several models' for vmap (model ensembles).
--
--   local func = ember.func
--   local per_sample = func.vmap(func.grad(loss_fn), {in_dims = {nil, 1, 1}})(params, x, y)
--
-- Arguments and results may be pytrees: a tensor, or a table (a list or a name -> value
-- table, such as a parameter dict) of them, nested; other values pass through. Positions
-- are 1-based as everywhere in ember: argnums = 1 is the first argument, in_dims = 1 the
-- first dim (PyTorch's 0).
--
-- grad and the Jacobian transforms run ember's reverse-mode autograd on fresh leaves;
-- their results keep a graph where an argument was itself recorded (grad of grad, jacrev
-- of grad, MAML's inner step on parameters that require grad). vmap calls the function
-- once per batch element and stacks the results (README deviation 58): the same values
-- as PyTorch's batched rules, at the speed of a loop.
local ember = require "ember"
local errors = require "ember.errors"
local autograd = require "ember.autograd"

local raisef = errors.raisef
local M = {}

-- ---- pytrees ---------------------------------------------------------------------------------

-- a table's keys in a fixed order: 1..n first, then the rest sorted by their text
local function keys_of(t)
  local ks, n = {}, 0
  for i = 1, math.huge do
    if rawget(t, i) == nil then n = i - 1 break end
    ks[i] = i
  end
  local rest = {}
  for k in pairs(t) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then rest[#rest + 1] = k end
  end
  table.sort(rest, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(rest) do ks[#ks + 1] = k end
  return ks
end

local function is_tree_table(v)
  return type(v) == "table" and not ember.is_tensor(v) and getmetatable(v) == nil
end

-- the tensors of v in order, into leaves; returns v's structure (spec)
local function flatten(v, leaves)
  if ember.is_tensor(v) then
    leaves[#leaves + 1] = v
    return true
  end
  if not is_tree_table(v) then return {value = v} end
  local spec = {keys = keys_of(v), children = {}}
  for i, k in ipairs(spec.keys) do spec.children[i] = flatten(v[k], leaves) end
  return spec
end

-- the tree of spec with its tensors taken from leaves, from position pos[1] on
local function unflatten(spec, leaves, pos)
  if spec == true then
    pos[1] = pos[1] + 1
    return leaves[pos[1]]
  end
  if spec.keys == nil then return spec.value end
  local out = {}
  for i, k in ipairs(spec.keys) do out[k] = unflatten(spec.children[i], leaves, pos) end
  return out
end

local function tree_leaves(v)
  local leaves = {}
  local spec = flatten(v, leaves)
  return leaves, spec
end

local function tree_map(v, f)
  local leaves, spec = tree_leaves(v)
  local mapped = {}
  for i, t in ipairs(leaves) do mapped[i] = f(t, i) end
  return unflatten(spec, mapped, {0})
end

-- ---- grad and its relatives ------------------------------------------------------------------

-- argnums: a position or a list of positions among n arguments (1-based)
local function positions(op, argnums, n)
  local list = type(argnums) == "table" and argnums or {argnums}
  if #list == 0 then raisef("%s: argnums must be a position or a non-empty list of positions", op) end
  for _, a in ipairs(list) do
    if math.type(a) ~= "integer" then
      raisef("%s: argnums must be integers (1-based positions), got %s", op, tostring(a))
    end
    if a < 1 or a > n then
      raisef("%s: got argnums = %d but the function was called with %d positional argument%s", op, a, n,
             n == 1 and "" or "s")
    end
  end
  return list, type(argnums) ~= "table"
end

-- The arguments at positions as fresh differentiable inputs: each tensor of those
-- arguments becomes a leaf, or (when it is itself recorded) a view that keeps its graph.
-- Returns the new argument list, the inputs (per position, a flat list with its spec),
-- and whether any was recorded (the results must then be differentiable too).
local function differentiable_args(op, args, list)
  local new = {}
  for i = 1, args.n do new[i] = args[i] end
  local inputs, recorded = {}, false
  for j, a in ipairs(list) do
    local leaves, spec = tree_leaves(args[a])
    if #leaves == 0 then raisef("%s: argument %d (argnums) holds no tensor", op, a) end
    local xs = {}
    for k, x in ipairs(leaves) do
      if not x:is_floating_point() then
        raisef("%s: argument %d: only floating-point tensors can be differentiated, got %s", op, a, x.dtype)
      end
      if x.requires_grad and ember.is_grad_enabled() then
        recorded = true
        xs[k] = x:view(x.shape)
      else
        xs[k] = x:detach():requires_grad_()
      end
    end
    inputs[j] = {xs = xs, spec = spec}
    new[a] = unflatten(spec, xs, {0})
  end
  return new, inputs, recorded
end

-- func's result, with aux split off when has_aux (func then returns two values)
local function output_and_aux(op, r, has_aux)
  if has_aux and r.n < 2 then
    raisef("%s: has_aux = true needs the function to return two values (output, aux), got %d", op, r.n)
  end
  return r[1], r[2]
end

-- the gradient of sum <outs[i], grad_outs[i]> with respect to the inputs, zeros for the
-- inputs no output uses, as trees per position
local function gradients(outs, grad_outs, inputs, create)
  local all = {}
  for _, inp in ipairs(inputs) do for _, x in ipairs(inp.xs) do all[#all + 1] = x end end
  local os, gos = {}, {}
  for i, o in ipairs(outs) do
    if o.requires_grad then os[#os + 1] = o; gos[#gos + 1] = grad_outs[i] end
  end
  local gs = {}
  if #os > 0 then
    gs = {autograd.grad(os, all, {grad_outputs = gos, retain_graph = true, create_graph = create, allow_unused = true})}
  end
  local trees, k = {}, 0
  for j, inp in ipairs(inputs) do
    local g = {}
    for i, x in ipairs(inp.xs) do
      k = k + 1
      local gi = gs[k] or ember.zeros_like(x)
      g[i] = create and gi or gi:detach()
    end
    trees[j] = unflatten(inp.spec, g, {0})
  end
  return trees
end

local function per_position(trees, single)
  if single then return trees[1] end
  return trees
end

local function check_function(op, f)
  if type(f) ~= "function" and not (getmetatable(f) or {}).__call then
    raisef("%s: expected a function, got %s", op, type(f))
  end
end

local function transform_options(op, opts, names)
  opts = opts or {}
  if type(opts) ~= "table" then raisef("%s: options must be a table, got %s", op, type(opts)) end
  for k in pairs(opts) do
    if not names[k] then raisef("%s: unknown option '%s'", op, tostring(k)) end
  end
  return opts
end

local GRAD_OPTS = {argnums = true, has_aux = true}

-- The transforms that differentiate f with respect to the arguments at argnums (grad,
-- jacrev, ...): f runs on fresh differentiable inputs, and finish(out, inputs, recorded,
-- single, aux) makes the transform's results from its output
local function differentiating(op, f, opts, finish)
  check_function(op, f)
  opts = transform_options(op, opts, GRAD_OPTS)
  local argnums, has_aux = opts.argnums or 1, opts.has_aux
  return function(...)
    local args = table.pack(...)
    local list, single = positions(op, argnums, args.n)
    local new, inputs, recorded = differentiable_args(op, args, list)
    local r = ember.enable_grad(function() return table.pack(f(table.unpack(new, 1, args.n))) end)
    local out, aux = output_and_aux(op, r, has_aux)
    return finish(out, inputs, recorded, single, aux)
  end
end

local function grad_and_value(op, f, opts)
  return differentiating(op, f, opts, function(out, inputs, recorded, single, aux)
    if not ember.is_tensor(out) or out:numel() ~= 1 then
      raisef("%s: expected the function to return a tensor with one element, got %s", op,
             ember.is_tensor(out) and ("a tensor of shape " .. tostring(out.shape)) or type(out))
    end
    local trees = gradients({out}, {ember.ones_like(out)}, inputs, recorded)
    return per_position(trees, single), recorded and out or out:detach(), aux
  end)
end

--- func.grad(f [, {argnums = 1, has_aux = false}]) -> a function returning the gradient of f
--- (a tensor of one element) with respect to the arguments at argnums (and f's aux).
function M.grad(f, opts)
  local g = grad_and_value("func.grad", f, opts)
  return function(...)
    local grads, _, aux = g(...)
    if opts and opts.has_aux then return grads, aux end
    return grads
  end
end

--- func.grad_and_value(f [, {argnums = 1, has_aux = false}]) -> a function returning the gradient
--- and f's value (and aux).
function M.grad_and_value(f, opts)
  local g = grad_and_value("func.grad_and_value", f, opts)
  return function(...)
    local grads, value, aux = g(...)
    if opts and opts.has_aux then return grads, value, aux end
    return grads, value
  end
end

--- func.vjp(f, primals... [, {has_aux = false}]) -> f(primals...), vjp_fn (and aux):
--- vjp_fn(cotangents) gives the gradient of <f's output, cotangents> for each primal.
function M.vjp(f, ...)
  local op = "func.vjp"
  check_function(op, f)
  local args = table.pack(...)
  local opts = {}
  if args.n > 0 and is_tree_table(args[args.n]) and args[args.n].has_aux ~= nil then
    opts = args[args.n]
    args.n = args.n - 1
  end
  local list = {}
  for i = 1, args.n do list[i] = i end
  if args.n == 0 then raisef("%s: expected at least one primal", op) end
  local new, inputs, recorded = differentiable_args(op, args, list)
  local r = ember.enable_grad(function() return table.pack(f(table.unpack(new, 1, args.n))) end)
  local out, aux = output_and_aux(op, r, opts.has_aux)
  local outs = tree_leaves(out)
  if #outs == 0 then raisef("%s: the function returned no tensor", op) end
  local function vjp_fn(cotangents)
    local cs = tree_leaves(cotangents)
    if #cs ~= #outs then raisef("%s: vjp_fn: %d cotangents for %d outputs", op, #cs, #outs) end
    for i, o in ipairs(outs) do
      if tostring(o.shape) ~= tostring(cs[i].shape) then
        raisef("%s: vjp_fn: cotangent %d has shape %s, the output %s", op, i, tostring(cs[i].shape), tostring(o.shape))
      end
    end
    local trees = gradients(outs, cs, inputs, recorded)
    return table.unpack(trees, 1, #trees)
  end
  local value = recorded and out or tree_map(out, function(t) return t:detach() end)
  if opts.has_aux then return value, vjp_fn, aux end
  return value, vjp_fn
end

--- func.jvp(f, primals, tangents [, {has_aux = false}]) -> f(primals...), the directional
--- derivative J tangents (by the double-vjp trick: two reverse passes).
function M.jvp(f, primals, tangents, opts)
  local op = "func.jvp"
  check_function(op, f)
  opts = transform_options(op, opts, {has_aux = true})
  if not is_tree_table(primals) or not is_tree_table(tangents) then
    raisef("%s: primals and tangents must be lists (PyTorch's tuples), got %s and %s", op, type(primals), type(tangents))
  end
  local n = #primals
  if #tangents ~= n then raisef("%s: %d tangents for %d primals", op, #tangents, n) end
  local args = table.pack(table.unpack(primals, 1, n))
  local list = {}
  for i = 1, n do list[i] = i end
  local new, inputs, recorded = differentiable_args(op, args, list)
  local r = ember.enable_grad(function() return table.pack(f(table.unpack(new, 1, n))) end)
  local out, aux = output_and_aux(op, r, opts.has_aux)
  local outs, out_spec = tree_leaves(out)
  local all, vs = {}, {}
  for j, inp in ipairs(inputs) do
    local ts = tree_leaves(tangents[j])
    if #ts ~= #inp.xs then raisef("%s: tangent %d does not have the structure of primal %d", op, j, j) end
    for i, x in ipairs(inp.xs) do
      if tostring(ts[i].shape) ~= tostring(x.shape) then
        raisef("%s: tangent %d has shape %s, its primal %s", op, j, tostring(ts[i].shape), tostring(x.shape))
      end
      all[#all + 1] = x
      vs[#vs + 1] = ts[i]
    end
  end
  -- u -> J^T u is linear in u; its vjp with the tangents is J tangents
  local us, os = {}, {}
  for i, o in ipairs(outs) do
    us[i] = ember.zeros_like(o):requires_grad_()
    if o.requires_grad then os[#os + 1] = i end
  end
  local jv = {}
  if #os > 0 then
    local o2, u2 = {}, {}
    for k, i in ipairs(os) do o2[k] = outs[i]; u2[k] = us[i] end
    local jtu = ember.enable_grad(function()
      return {autograd.grad(o2, all, {grad_outputs = u2, create_graph = true, allow_unused = true})}
    end)
    local live, lv = {}, {}
    for i = 1, #all do
      if jtu[i] and jtu[i].requires_grad then live[#live + 1] = jtu[i]; lv[#lv + 1] = vs[i] end
    end
    if #live > 0 then
      jv = {autograd.grad(live, us, {grad_outputs = lv, create_graph = recorded, allow_unused = true})}
    end
  end
  local tangent_out = {}
  for i, o in ipairs(outs) do
    local t = jv[i] or ember.zeros_like(o)
    tangent_out[i] = recorded and t or t:detach()
  end
  local value = unflatten(out_spec, recorded and outs or tree_map(outs, function(t) return t:detach() end), {0})
  local jvp_out = unflatten(out_spec, tangent_out, {0})
  if opts.has_aux then return value, jvp_out, aux end
  return value, jvp_out
end

-- The Jacobian of f's output (a tensor, or a tree of them) with respect to the arguments at
-- argnums: for each output and input, a tensor of shape output.shape .. input.shape, one
-- reverse pass per output element.
local function jacobian(op, f, opts)
  local has_aux = opts and opts.has_aux
  return differentiating(op, f, opts, function(out, inputs, recorded, single, aux)
    local jac = tree_map(out, function(y)
      local m = y:numel()
      local rows = {}
      for j = 1, m do
        local e = ember.zeros(m, {dtype = y.dtype, device = y.device})
        e[j] = 1
        rows[j] = gradients({y}, {e:view(y.shape)}, inputs, recorded)
      end
      local trees = {}
      for p, inp in ipairs(inputs) do
        local js = {}
        for i, x in ipairs(inp.xs) do
          local shape = {}
          for _, s in ipairs(y.shape) do shape[#shape + 1] = s end
          for _, s in ipairs(x.shape) do shape[#shape + 1] = s end
          local parts = {}
          for j = 1, m do parts[j] = tree_leaves(rows[j][p])[i]:reshape(-1) end
          local J = m > 0 and ember.stack(parts) or ember.zeros(0, x:numel(), {dtype = x.dtype, device = x.device})
          js[i] = J:reshape(shape)
        end
        trees[p] = unflatten(inp.spec, js, {0})
      end
      return per_position(trees, single)
    end)
    if has_aux then return jac, aux end
    return jac
  end)
end

--- func.jacrev(f [, {argnums = 1, has_aux = false}]) -> a function returning f's Jacobian
--- (output.shape .. input.shape), by reverse mode.
function M.jacrev(f, opts) return jacobian("func.jacrev", f, opts) end

--- func.jacfwd(f [, {argnums = 1, has_aux = false}]) -> the same Jacobian (ember computes it by
--- reverse mode too: the same values, one pass per output element).
function M.jacfwd(f, opts) return jacobian("func.jacfwd", f, opts) end

--- func.hessian(f [, {argnums = 1}]) -> a function returning f's second derivatives
--- (input.shape .. input.shape for a scalar f): jacfwd(jacrev(f)).
function M.hessian(f, opts)
  opts = transform_options("func.hessian", opts, {argnums = true})
  return M.jacfwd(M.jacrev(f, {argnums = opts.argnums}), {argnums = opts.argnums})
end

-- ---- vmap ------------------------------------------------------------------------------------

local VMAP_OPTS = {in_dims = true, out_dims = true, randomness = true, chunk_size = true}
local RANDOMNESS = {error = true, different = true, same = true}

-- the batched dims of an argument as a tree matching it: dims (a number, nil or false for
-- every tensor of the argument, or a table shaped like it)
local function arg_dims(op, arg, dims, i)
  local leaves, spec = tree_leaves(arg)
  if dims == nil or dims == false or type(dims) == "number" then
    local out = {}
    for k = 1, #leaves do out[k] = dims or false end
    return leaves, spec, out
  end
  if not is_tree_table(dims) then
    raisef("%s: in_dims for argument %d must be a number, nil or a table like the argument, got %s", op, i, type(dims))
  end
  local out = {}
  -- the dim of each tensor: the entry at its place in dims, or the number above it
  local function walk(s, d)
    if s == true then
      if type(d) == "table" then
        raisef("%s: in_dims for argument %d does not match the argument's structure (a table where a tensor is)",
               op, i)
      end
      out[#out + 1] = d or false
      return
    end
    if s.keys == nil then return end
    for j, k in ipairs(s.keys) do walk(s.children[j], type(d) == "table" and d[k] or d) end
  end
  walk(spec, dims)
  return leaves, spec, out
end

local function normalize_dim(op, what, d, ndim)
  if math.type(d) ~= "integer" or d == 0 or d > ndim or d < -ndim then
    raisef("%s: %s %s is out of range for a tensor of %d dims (1-based dims; -1 is the last)", op, what,
           tostring(d), ndim)
  end
  return d < 0 and ndim + d + 1 or d
end

local function same_state(a, b) return a.seed == b.seed and a.offset == b.offset end

--- func.vmap(f [, {in_dims = 1, out_dims = 1, randomness = "error", chunk_size}]) -> a function
--- that maps f over dim in_dims of its arguments and stacks the results along out_dims.
function M.vmap(f, opts)
  local op = "func.vmap"
  check_function(op, f)
  opts = transform_options(op, opts, VMAP_OPTS)
  local in_dims = opts.in_dims == nil and 1 or opts.in_dims
  local out_dims = opts.out_dims == nil and 1 or opts.out_dims
  local randomness = opts.randomness or "error"
  if not RANDOMNESS[randomness] then
    raisef("%s: randomness must be 'error', 'different' or 'same', got %s", op, tostring(randomness))
  end
  if opts.chunk_size ~= nil and (math.type(opts.chunk_size) ~= "integer" or opts.chunk_size < 1) then
    raisef("%s: chunk_size must be a positive integer or nil, got %s", op, tostring(opts.chunk_size))
  end
  return function(...)
    local args = table.pack(...)
    local per_arg = {}
    local size
    for i = 1, args.n do
      -- a table: one entry per argument (nil or false: not mapped); a number: every argument
      local dims_i = in_dims
      if type(in_dims) == "table" then dims_i = in_dims[i] end
      local leaves, spec, dims = arg_dims(op, args[i], dims_i, i)
      for k, t in ipairs(leaves) do
        if dims[k] then
          dims[k] = normalize_dim(op, "in_dim", dims[k], t:dim())
          local s = t.shape[dims[k]]
          if size and s ~= size then
            raisef("%s: expected all tensors to have the same size in the mapped dimension, got sizes %d and %d "
                   .. "(argument %d)", op, size, s, i)
          end
          size = s
        end
      end
      per_arg[i] = {leaves = leaves, spec = spec, dims = dims}
    end
    if not size then
      raisef("%s: at least one argument must be mapped over (in_dims are all nil, or no tensor is given)", op)
    end
    local start = (randomness ~= "different") and ember.get_rng_state() or nil
    local results, out_spec = {}, nil
    for b = 1, size do
      if randomness == "same" then ember.set_rng_state(start) end
      local call = {}
      for i = 1, args.n do
        local a = per_arg[i]
        local xs = {}
        for k, t in ipairs(a.leaves) do xs[k] = a.dims[k] and t:select(a.dims[k], b) or t end
        call[i] = unflatten(a.spec, xs, {0})
      end
      local out = f(table.unpack(call, 1, args.n))
      if randomness == "error" and not same_state(start, ember.get_rng_state()) then
        raisef("%s: called a random operation while in randomness error mode; use randomness = 'same' or "
               .. "'different', or draw the random numbers outside vmap", op)
      end
      local leaves, spec = tree_leaves(out)
      if #leaves == 0 then raisef("%s: the function must return tensors, got %s", op, type(out)) end
      out_spec = out_spec or spec
      results[b] = leaves
    end
    local n_out = #results[1]
    local stacked = {}
    for k = 1, n_out do
      local parts = {}
      for b = 1, size do parts[b] = results[b][k] end
      local od = type(out_dims) == "table" and (out_dims[k] == nil and 1 or out_dims[k]) or out_dims
      od = normalize_dim(op, "out_dim", od, parts[1]:dim() + 1)
      stacked[k] = ember.stack(parts, od)
    end
    return unflatten(out_spec, stacked, {0})
  end
end

-- ---- modules ---------------------------------------------------------------------------------

-- the module and the member name at a dotted path ("layers.0.weight")
local function owner_of(op, module, path)
  local m, parts = module, {}
  for part in path:gmatch("[^.]+") do parts[#parts + 1] = part end
  for i = 1, #parts - 1 do
    local child = rawget(m, "_modules")[parts[i]]
    if child == nil then raisef("%s: '%s' names no submodule of the module (at '%s')", op, path, parts[i]) end
    m = child
  end
  return m, parts[#parts]
end

-- swaps the tensors of dict into module; returns the undo list
local function swap_in(op, module, dict, strict)
  local undo = {}
  local by_old = {}
  for name, t in pairs(dict) do
    if type(name) ~= "string" then raisef("%s: parameter names must be strings, got %s", op, type(name)) end
    if not ember.is_tensor(t) then raisef("%s: '%s' must be a tensor, got %s", op, name, type(t)) end
    local m, member = owner_of(op, module, name)
    local slot = rawget(m, "_parameters")[member] ~= nil and "_parameters"
                 or rawget(m, "_buffers")[member] ~= nil and "_buffers" or nil
    if slot == nil and strict then raisef("%s: unexpected key '%s' (strict = true)", op, name) end
    local old
    if slot then
      old = rawget(m, slot)[member]
      rawget(m, slot)[member] = t
      by_old[old] = t
    else
      old = rawget(m, member)
      rawset(m, member, t)
    end
    undo[#undo + 1] = {m, slot, member, old}
  end
  return undo, by_old
end

-- every parameter and buffer of module that was one of by_old's tensors (tied weights)
local function tie(module, by_old, undo)
  local function walk(m)
    for _, slot in ipairs({"_parameters", "_buffers"}) do
      local tbl = rawget(m, slot)
      for name, t in pairs(tbl) do
        local new = by_old[t]
        if new and not rawequal(new, t) then
          undo[#undo + 1] = {m, slot, name, t}
          tbl[name] = new
        end
      end
    end
    for _, child in pairs(rawget(m, "_modules")) do walk(child) end
  end
  walk(module)
end

local function restore(undo)
  for i = #undo, 1, -1 do
    local m, slot, member, old = table.unpack(undo[i], 1, 4)
    if slot then rawget(m, slot)[member] = old else rawset(m, member, old) end
  end
end

--- func.functional_call(module, parameters_and_buffers, args [, kwargs [, {tie_weights = true,
--- strict = false}]]) -> module(args...) with the tensors of parameters_and_buffers (a name ->
--- tensor table, or a list of them) in place of the module's, restored after.
function M.functional_call(module, dicts, args, kwargs, o)
  local op = "func.functional_call"
  local nn = require "ember.nn"
  if not nn.is_module(module) then raisef("%s: expected a module, got %s", op, type(module)) end
  if not is_tree_table(dicts) then raisef("%s: parameters_and_buffers must be a table of tensors, got %s", op, type(dicts)) end
  local list = dicts[1] ~= nil and dicts or {dicts}
  local merged = {}
  for _, d in ipairs(list) do
    for k, v in pairs(d) do
      if merged[k] ~= nil then raisef("%s: '%s' appears in more than one of the tables", op, tostring(k)) end
      merged[k] = v
    end
  end
  if o ~= nil and not is_tree_table(o) then raisef("%s: options must be a table, got %s", op, type(o)) end
  o = transform_options(op, o, {tie_weights = true, strict = true})
  -- args: one argument, or a list of them (a table argument goes inside a list)
  local call_args
  if ember.is_tensor(args) or not is_tree_table(args) then call_args = table.pack(args)
  else call_args = table.pack(table.unpack(args, 1, #args)) end
  if kwargs ~= nil then
    call_args.n = call_args.n + 1
    call_args[call_args.n] = kwargs
  end
  local undo, by_old = swap_in(op, module, merged, o.strict)
  if o.tie_weights ~= false then tie(module, by_old, undo) end
  local r = table.pack(pcall(module, table.unpack(call_args, 1, call_args.n)))
  restore(undo)
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

--- func.stack_module_state(models) -> params, buffers: name -> the models' tensors stacked along a
--- new first dim (parameters as new leaves that require grad), for vmap over an ensemble.
function M.stack_module_state(models)
  local op = "func.stack_module_state"
  if not is_tree_table(models) or #models == 0 then
    raisef("%s: expected a non-empty list of modules, got %s", op, is_tree_table(models) and "an empty list" or type(models))
  end
  local params, buffers = {}, {}
  for _, kind in ipairs({{"named_parameters", params}, {"named_buffers", buffers}}) do
    local first = {}
    for name, t in models[1][kind[1]](models[1]) do first[#first + 1] = {name, t} end
    for _, e in ipairs(first) do
      local parts = {}
      for i, m in ipairs(models) do
        local t
        for name, u in m[kind[1]](m) do if name == e[1] then t = u end end
        if t == nil then raisef("%s: model %d has no '%s'", op, i, e[1]) end
        parts[i] = t:detach()
      end
      local s = ember.stack(parts)
      if kind[2] == params and e[2].requires_grad then s = s:requires_grad_() end
      kind[2][e[1]] = s
    end
  end
  return params, buffers
end

-- ---- control flow (torch.cond, torch.while_loop), run eagerly as PyTorch's eager mode ----

local function scalar_pred(op, pred)
  if type(pred) == "boolean" then return pred end
  if ember.is_tensor(pred) then
    if pred:numel() ~= 1 then raisef("%s: pred must be a boolean or a tensor with one element, got shape %s", op,
                                     tostring(pred.shape)) end
    return pred:item() ~= 0 and pred:item() ~= false
  end
  raisef("%s: pred must be a boolean or a tensor with one element, got %s", op, type(pred))
end

--- ember.cond(pred, true_fn, false_fn, operands) -> true_fn(operands...) or false_fn(operands...).
function M.cond(pred, true_fn, false_fn, operands)
  local op = "cond"
  check_function(op, true_fn)
  check_function(op, false_fn)
  operands = operands or {}
  if not is_tree_table(operands) then raisef("%s: operands must be a list, got %s", op, type(operands)) end
  local fn = scalar_pred(op, pred) and true_fn or false_fn
  return fn(table.unpack(operands, 1, #operands))
end

--- ember.while_loop(cond_fn, body_fn, carried_inputs) -> the carried values once cond_fn is false.
function M.while_loop(cond_fn, body_fn, carried)
  local op = "while_loop"
  check_function(op, cond_fn)
  check_function(op, body_fn)
  if not is_tree_table(carried) then raisef("%s: carried_inputs must be a list, got %s", op, type(carried)) end
  local vals = {table.unpack(carried, 1, #carried)}
  while scalar_pred(op, cond_fn(table.unpack(vals, 1, #carried))) do
    local nxt = table.pack(body_fn(table.unpack(vals, 1, #carried)))
    if nxt.n ~= #carried then
      raisef("%s: body_fn returned %d values for %d carried inputs", op, nxt.n, #carried)
    end
    vals = {table.unpack(nxt, 1, nxt.n)}
  end
  return table.unpack(vals, 1, #carried)
end

return M
