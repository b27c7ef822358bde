-- ember.nn.parallel — data-parallel training over ember.distributed (PyTorch's torch.nn.parallel).
--
--   local dist = ember.distributed
--   dist.init_process_group()                         -- under `ember --nproc 4 train.lua` or mpirun
--   local model = ember.nn.parallel.DistributedDataParallel(Net())
--   local opt = ember.optim.AdamW(model:parameters(), {lr = 1e-3})
--   local loss = loss_fn(model(x_shard), y_shard)     -- each rank: its share of the batch
--   loss:backward()                                   -- gradients averaged over the ranks
--   opt:step()
--
-- How it works (PyTorch's Reducer): at wrap, rank 0's parameters and buffers are copied to every
-- rank, after a check that every rank has the same parameters and buffers (names, shapes, dtypes),
-- which fails with an error on every rank instead of hanging. The parameters that require grad
-- are grouped in reverse registration order (roughly the order backward produces their
-- gradients) into buckets of at most bucket_cap_mb, one flat tensor each. A post-accumulate hook
-- on every parameter copies its gradient into its bucket when backward has finished with it; a
-- full bucket starts an asynchronous all_reduce(AVG) at once, so communication overlaps the rest
-- of backward. Buckets start in order (MPI matches collectives by their order on each rank). A
-- callback queued on the backward pass waits for every bucket and writes the averages back into
-- the .grad tensors before backward returns.
--
-- Deviations from PyTorch:
--   * find_unused_parameters finds the unused parameters when backward ends (those whose hooks did
--     not fire), not by walking the graph after forward: buckets holding one start only then.
--   * Without find_unused_parameters, a parameter that got no gradient is an error at the end of
--     that backward (PyTorch: at the next forward), with PyTorch's message and the parameters' names.
--   * Every bucket is at most bucket_cap_mb (PyTorch makes the first one 1 MB).
--   * device_ids and output_device are checked, not acted on: a module lives on one device (the
--     one device_ids names, or the CPU with device_ids nil), and ember moves no inputs or outputs.
--   * static_graph is accepted and changes nothing: the hooks already serve the same graph each
--     iteration.
--   * gradient_as_bucket_view = true: after the first synchronised backward, each .grad is a view
--     of its bucket (backward accumulates straight into the bucket, and the average lands in
--     .grad in place: no copies, half the gradient memory), as PyTorch. A .grad set to nil
--     (zero_grad's default) is copied in once and made a view again.
local ember = require "ember"
local errors = require "ember.errors"
local Module = require("ember.nn.module").Module

local M = {}

local NAME = "DistributedDataParallel"

local function fail(fmt, ...) errors.raisef("%s: " .. fmt, NAME, ...) end

-- PyTorch's constructor arguments after the module, in order; dim, init_sync and
-- check_reduction keep their positions but only their defaults are supported
local NAMES = {"device_ids", "output_device", "dim", "broadcast_buffers", "init_sync", "process_group", "bucket_cap_mb",
               "find_unused_parameters", "check_reduction", "gradient_as_bucket_view", "static_graph"}

local function bool_opt(opts, k, default)
  local v = opts[k]
  if v == nil then return default end
  if type(v) ~= "boolean" then fail("%s must be a boolean, got %s", k, type(v)) end
  return v
end

local function check_options(...)
  local opts = require("ember.args").options(NAME, NAMES, ...)
  if opts.dim ~= nil and opts.dim ~= 1 then fail("dim must be 1 (the batch dim), got %s", tostring(opts.dim)) end
  if opts.init_sync == false then fail("init_sync = false is not supported") end
  if opts.check_reduction ~= nil then fail("check_reduction is deprecated in PyTorch and not supported") end
  return opts
end

-- A device named as PyTorch's device_ids entries are: an index (CUDA), "cuda:N", "cpu", a device.
local function device_name(v, what)
  if math.type(v) == "integer" then return "cuda:" .. v end
  if type(v) == "string" then return v == "cuda" and "cuda:0" or v end
  fail("%s must hold device indices or names, got %s", what, type(v))
end

-- device_ids / output_device against where the module's parameters are (PyTorch: a multi-device
-- or CPU module takes device_ids = nil; a single-device module [its device] or nil).
local function check_devices(module, opts)
  local placed
  for _, p in ipairs(module:parameters()) do
    local d = p.device == "cuda" and "cuda:0" or p.device
    if placed and d ~= placed then
      fail("the module's parameters are on %s and %s: DistributedDataParallel takes a module on one device", placed, d)
    end
    placed = d
  end
  local ids = opts.device_ids
  if ids ~= nil then
    if type(ids) ~= "table" or ember.is_tensor(ids) then fail("device_ids must be a list, got %s", type(ids)) end
    if #ids ~= 1 then
      fail("device_ids must hold exactly one device (the module's; one process per device), got %d", #ids)
    end
    local want = device_name(ids[1], "device_ids")
    if placed == "cpu" or want == "cpu" then
      fail("device_ids must be nil for a module on the CPU (as PyTorch), got {%s}", tostring(ids[1]))
    end
    if placed and want ~= placed then
      fail("device_ids names %s but the module's parameters are on %s: move the module with module:to(\"%s\")",
           want, placed, want)
    end
  end
  if opts.output_device ~= nil then
    local out = device_name(opts.output_device, "output_device")
    if placed and out ~= placed then
      fail("output_device %s differs from the module's device %s: ember moves no outputs", out, placed)
    end
  end
end

-- A tensor's description in the cross-rank check.
local function describe(kind, name, t)
  return string.format("%s %s [%s] %s", kind, name, table.concat(t.shape, ", "), t.dtype)
end

-- 31-bit FNV-1a of a string: what ranks compare first (exactly representable in float64)
local function hash(s)
  local h = 2166136261
  for i = 1, #s do h = ((h ~ s:byte(i)) * 16777619) & 0x7fffffff end
  return h
end

local DESC_BYTES = 240

-- the string s as a fixed-size uint8 tensor (for all_gather)
local function encode(s)
  local bytes = {}
  for i = 1, DESC_BYTES do bytes[i] = i <= #s and s:byte(i) or 0 end
  return ember.tensor(bytes, {dtype = "uint8"})
end

local function decode(t)
  local chars = {}
  for _, b in ipairs(t:tolist()) do
    if b == 0 then break end
    chars[#chars + 1] = string.char(b)
  end
  return table.concat(chars)
end

local function gather(dist, group, t)
  local list = {}
  for r = 1, dist.get_world_size(group) do list[r] = ember.empty_like(t) end
  dist.all_gather(list, t, {group = group})
  return list
end

-- Compares every rank's parameters and buffers with rank 0's: first the count and one hash of all
-- descriptions, then (only when they differ) the hash of each entry to find the first difference, and
-- the descriptions of that entry on every rank, so every rank raises the same message.
local function verify_same_model(dist, group, descs)
  local all = hash(table.concat(descs, ";"))
  local heads = gather(dist, group, ember.tensor({#descs, all}, {dtype = "float64"}))
  local most, same = 0, true
  for r, h in ipairs(heads) do heads[r] = h:tolist() end
  for _, v in ipairs(heads) do
    most = math.max(most, math.tointeger(v[1]))
    if v[1] ~= heads[1][1] or v[2] ~= heads[1][2] then same = false end
  end
  if same then return end
  local mine = {}
  for i = 1, most do mine[i] = descs[i] and hash(descs[i]) or -1 end
  local per = gather(dist, group, ember.tensor(mine, {dtype = "float64"}))
  local first, rank = nil, nil
  local base = per[1]:tolist()
  for r = 2, #per do
    local v = per[r]:tolist()
    for i = 1, most do
      if v[i] ~= base[i] and (not first or i < first) then first, rank = i, r - 1 end
    end
  end
  local texts = gather(dist, group, encode(descs[first] or "(nothing)"))
  local ranks = group and dist.get_process_group_ranks(group)
  local function global(q) return ranks and ranks[q + 1] or q end
  fail("the ranks' models differ: rank %d has %d parameters and buffers, rank %d has %d; entry %d is %s on rank %d " ..
       "but %s on rank %d (every rank must build the same model before wrapping it)", global(0),
       math.tointeger(heads[1][1]), global(rank), math.tointeger(heads[rank + 1][1]), first, decode(texts[1]),
       global(0), decode(texts[rank + 1]), global(rank))
end

-- Parameters (those requiring grad) in reverse registration order, cut into buckets of one dtype and
-- device and at most cap bytes (a larger parameter gets a bucket of its own).
local function make_buckets(params, cap)
  local buckets, current = {}, nil
  for i = #params, 1, -1 do
    local p = params[i].tensor
    local bytes = p:numel() * p:element_size()
    if not current or current.dtype ~= p.dtype or current.device ~= p.device or
       (current.bytes + bytes > cap and #current.params > 0) then
      current = {params = {}, offsets = {}, numel = 0, bytes = 0, dtype = p.dtype, device = p.device}
      buckets[#buckets + 1] = current
    end
    current.params[#current.params + 1] = params[i]
    current.offsets[#current.offsets + 1] = current.numel
    params[i].bucket, params[i].slot = #buckets, #current.params
    current.numel = current.numel + p:numel()
    current.bytes = current.bytes + bytes
  end
  for _, b in ipairs(buckets) do b.flat = ember.zeros(b.numel, {dtype = b.dtype, device = b.device}) end
  return buckets
end

-- Which DistributedDataParallel a module's hooks serve: wrapping a module again retires the older
-- wrapper's hooks (the engine keeps a hook as long as its parameter lives).
local ACTIVE = setmetatable({}, {__mode = "kv"})

local DDP = Module:extend(NAME)
M.DistributedDataParallel = DDP

--- nn.parallel.DistributedDataParallel(module [, device_ids, ...] [, {bucket_cap_mb = 25, find_unused_parameters = false,
-- broadcast_buffers = true, process_group = nil}) -> a module whose backward averages
-- the gradients over every rank of process_group (default: the default process group); at wrap
-- and before each forward its lowest rank's parameters / buffers are copied to the others.
function DDP:init(module, ...)
  Module.init(self)
  if not ember.nn.is_module(module) then fail("expected an nn.Module to wrap, got %s", type(module)) end
  local opts = check_options(...)
  check_devices(module, opts)
  bool_opt(opts, "static_graph", false)
  local dist = ember.distributed
  if not dist.is_initialized() then
    fail("the default process group is not initialised: call ember.distributed.init_process_group first")
  end
  local group = opts.process_group
  if group ~= nil and dist.get_world_size(group) < 0 then
    fail("this process (rank %d) is not in process_group (its ranks: %s): only its members may wrap a module " ..
         "over it", dist.get_rank(), table.concat(dist.get_process_group_ranks(group), ", "))
  end
  local cap = opts.bucket_cap_mb == nil and 25 or opts.bucket_cap_mb
  if type(cap) ~= "number" or not (cap > 0) then fail("bucket_cap_mb must be a positive number, got %s", tostring(cap)) end
  local s = {
    dist = dist,
    group = group,            -- nil: the default group
    root = group and dist.get_process_group_ranks(group)[1] or 0,   -- the group's lowest (global) rank
    find_unused = bool_opt(opts, "find_unused_parameters", false),
    grad_views = bool_opt(opts, "gradient_as_bucket_view", false),
    broadcast_buffers = bool_opt(opts, "broadcast_buffers", true),
    bucket_cap_mb = cap,
    require_sync = true,      -- false inside no_sync
    expect_hooks = false,     -- set by a forward that will be followed by a synchronised backward
    params = {},              -- {name =, tensor =, bucket =, slot =}
    buffers = {},
  }
  rawset(self, "_ddp", s)
  self.module = module
  local descs = {}
  for name, p in module:named_parameters() do
    descs[#descs + 1] = describe("parameter", name, p)
    if p.requires_grad then s.params[#s.params + 1] = {name = name, tensor = p, index = #s.params + 1} end
  end
  for name, b in module:named_buffers() do
    descs[#descs + 1] = describe("buffer", name, b)
    s.buffers[#s.buffers + 1] = b
  end
  for _, e in ipairs(s.params) do
    if e.tensor.device ~= "cpu" and dist.get_backend() ~= "nccl" then
      fail("parameter %s is on %s: the MPI backend carries CPU tensors; CUDA parameters need " ..
           "init_process_group({backend = \"nccl\"})", e.name, e.tensor.device)
    end
  end
  verify_same_model(dist, group, descs)
  ember.no_grad(function()
    for _, p in ipairs(module:parameters()) do dist.broadcast(p, s.root, {group = group}) end
    for _, b in ipairs(s.buffers) do dist.broadcast(b, s.root, {group = group}) end
  end)
  s.buckets = make_buckets(s.params, cap * 1024 * 1024)
  self:_reset()
  ACTIVE[module] = self
  local weak = setmetatable({ddp = self}, {__mode = "v"})
  for k, e in ipairs(s.params) do
    e.tensor:register_post_accumulate_grad_hook(function()
      local d = weak.ddp
      if d and ACTIVE[d.module] == d then d:_mark_ready(k) end
    end)
  end
end

-- Ready for the next backward: every bucket empty, nothing in flight.
function DDP:_reset()
  local s = rawget(self, "_ddp")
  for _, b in ipairs(s.buckets) do
    b.pending, b.work = #b.params, nil
    b.ready = {}
  end
  s.next_bucket, s.in_backward, s.expect_hooks = 1, false, false
  s.used = {}
end

-- Starts the buckets that are complete, in order; notes which ones in flight have finished
-- (over MPI they run on the backend's communication thread, over NCCL on its stream).
function DDP:_launch_ready()
  local s = rawget(self, "_ddp")
  for i = 1, s.next_bucket - 1 do
    local w = s.buckets[i].work
    if w and not s.buckets[i].done then s.buckets[i].done = w:is_completed() end
  end
  while s.next_bucket <= #s.buckets and s.buckets[s.next_bucket].pending == 0 do
    local b = s.buckets[s.next_bucket]
    b.done = false
    b.work = s.dist.all_reduce(b.flat, {op = "avg", async_op = true, group = s.group})
    s.next_bucket = s.next_bucket + 1
  end
end

-- the slice of a bucket's flat tensor that holds parameter e's gradient, shaped like it
local function view_of(b, e)
  local n = e.tensor:numel()
  return b.flat:narrow(1, b.offsets[e.slot] + 1, n):view(e.tensor.shape)
end

-- A parameter's gradient is final for this backward: into its bucket.
function DDP:_mark_ready(k)
  local s = rawget(self, "_ddp")
  if not s.expect_hooks then return end
  if not s.in_backward then
    s.in_backward = true
    ember.autograd.queue_callback(function() self:_finalize() end)
  end
  local e = s.params[k]
  local b = s.buckets[e.bucket]
  if b.ready[e.slot] then return end
  b.ready[e.slot] = true
  s.used[k] = true
  local g = e.tensor.grad
  local v = view_of(b, e)
  if g == nil then v:zero_()
  elseif not (s.grad_views and g:is_set_to(v)) then v:copy_(g) end   -- a view: backward wrote the bucket
  b.pending = b.pending - 1
  if b.pending == 0 then self:_launch_ready() end
end

-- The names of the parameters whose gradients this backward did not produce.
function DDP:_unready()
  local s = rawget(self, "_ddp")
  local names = {}
  for k, e in ipairs(s.params) do
    if not s.buckets[e.bucket].ready[e.slot] then names[#names + 1] = {k, e.name} end
  end
  return names
end

-- End of backward: every bucket started (unused parameters as zeros, with find_unused_parameters),
-- every all_reduce waited for, the averages written back into .grad.
function DDP:_finalize()
  local s = rawget(self, "_ddp")
  local unready = self:_unready()
  if #unready > 0 and not s.find_unused then
    for i = 1, s.next_bucket - 1 do s.buckets[i].work:wait() end
    self:_reset()
    local names, idx = {}, {}
    for i, u in ipairs(unready) do names[i], idx[i] = u[2], tostring(u[1]) end
    -- no position: backward's own error handling names the caller's line
    error(string.format("%s: Expected to have finished reduction in the prior iteration before starting a new one. This error " ..
         "indicates that your module has parameters that were not used in producing loss. You can enable unused " ..
         "parameter detection by passing find_unused_parameters = true to DistributedDataParallel, and by making " ..
         "sure all forward function outputs participate in calculating loss. Parameters which did not receive " ..
         "grad for rank %d: %s (indices %s)", NAME, s.dist.get_rank(), table.concat(names, ", "), table.concat(idx, ", ")), 0)
  end
  local used_anywhere
  local kept = {}   -- gradient_as_bucket_view: an unused parameter's .grad before its slot is zeroed
  if #unready > 0 then
    for _, u in ipairs(unready) do
      local e = s.params[u[1]]
      local b = s.buckets[e.bucket]
      local v = view_of(b, e)
      local g = e.tensor.grad
      if s.grad_views and g ~= nil and g:is_set_to(v) then kept[e.index] = g:clone() end
      v:zero_()
      b.ready[e.slot] = true
      b.pending = b.pending - 1
    end
    self:_launch_ready()
    -- whether some rank used each parameter: the ones no rank used keep their .grad as it was
    local flags = {}
    for k = 1, #s.params do flags[k] = s.used[k] and 1 or 0 end
    used_anywhere = ember.tensor(flags, {dtype = "int32"})
    s.dist.all_reduce(used_anywhere, {op = "max", group = s.group})
    used_anywhere = used_anywhere:tolist()
  end
  for _, b in ipairs(s.buckets) do
    b.work:wait()
    for _, e in ipairs(b.params) do
      local v = view_of(b, e)
      if not used_anywhere or used_anywhere[e.index] == 1 then
        local g = e.tensor.grad
        if s.grad_views then
          if g == nil or not g:is_set_to(v) then e.tensor.grad = v end
        elseif g == nil then
          e.tensor.grad = v:clone()
        else
          g:copy_(v)
        end
      elseif kept[e.index] then
        v:copy_(kept[e.index])   -- no rank used it: .grad (the view) as it was
      end
    end
  end
  self:_reset()
end

--- ddp:forward(...) -> the wrapped module's results; first copies rank 0's buffers to every rank
-- (broadcast_buffers), and arms the gradient hooks for the next backward unless inside no_sync.
function DDP:forward(...)
  local s = rawget(self, "_ddp")
  if s.in_backward then
    -- a backward that failed half-way: let its collectives finish before any new one starts
    for i = 1, s.next_bucket - 1 do s.buckets[i].work:wait() end
    self:_reset()
  end
  if s.broadcast_buffers and #s.buffers > 0 and s.dist.get_world_size(s.group) > 1 then
    ember.no_grad(function()
      for _, b in ipairs(s.buffers) do s.dist.broadcast(b, s.root, {group = s.group}) end
    end)
  end
  s.expect_hooks = ember.is_grad_enabled() and s.require_sync
  return self.module(...)
end

-- the guard of `local _ <close> = ddp:no_sync()`
local Guard = {}
Guard.__index = Guard
Guard.__close = function(g)
  if g.s then g.s.require_sync, g.s = g.was, nil end
end
Guard.close = Guard.__close

--- ddp:no_sync([fn, ...]) -> fn's results, or a guard for `local _ <close> = ddp:no_sync()`: forwards
-- run inside it are followed by backwards that only accumulate .grad locally; the first synchronised
-- backward after them averages the accumulated gradients.
-- Example: ddp:no_sync(function() loss_fn(ddp(x1), y1):backward() end); loss_fn(ddp(x2), y2):backward()
function DDP:no_sync(fn, ...)
  local s = rawget(self, "_ddp")
  if fn ~= nil and type(fn) ~= "function" then fail("no_sync: expected a function or nothing, got %s", type(fn)) end
  local guard = setmetatable({s = s, was = s.require_sync}, Guard)
  s.require_sync = false
  if fn == nil then return guard end
  local res = table.pack(pcall(fn, ...))
  guard:close()
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

--- ddp:bucket_sizes() -> list of the buckets' sizes in elements, in the order they are all-reduced.
function DDP:bucket_sizes()
  local out = {}
  for i, b in ipairs(rawget(self, "_ddp").buckets) do out[i] = b.numel end
  return out
end

function DDP:extra_repr()
  local s = rawget(self, "_ddp")
  return string.format("world_size=%d, buckets=%d, bucket_cap_mb=%s%s", s.dist.get_world_size(s.group), #s.buckets,
                       tostring(s.bucket_cap_mb), s.find_unused and ", find_unused_parameters=true" or "")
end

return M
