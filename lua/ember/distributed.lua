-- ember.distributed — process groups and collectives, as torch.distributed:
--
--   local dist = ember.distributed
--   dist.init_process_group({backend = "mpi"})   -- under `ember --nproc 4 script.lua` or mpirun
--   local t = ember.ones(3) * (dist.get_rank() + 1)
--   dist.all_reduce(t)                           -- every rank: 1 + 2 + 3 + 4 = 10
--   if dist.is_main_process() then print(t) end
--
-- Ranks are 0-based, as in PyTorch: they are process numbers, not indices. The MPI backend
-- (OpenMPI, loaded on the first init_process_group) carries CPU tensors of every dtype and
-- any strides; float16/bfloat16 reductions run on float32 working copies (rounded once, at
-- the end). The nccl backend (NCCL, for CUDA tensors) is bootstrapped over MPI, which still
-- carries the CPU tensors of an nccl group.
local ember = require "ember"
local errors = require "ember.errors"

local C = ember._distributed()

local M = {}

--- ReduceOp: the reductions of all_reduce, reduce and reduce_scatter.
M.ReduceOp = {SUM = "sum", AVG = "avg", MAX = "max", MIN = "min", PRODUCT = "product"}
local OPS = {sum = true, avg = true, max = true, min = true, product = true}

-- calls a C function, raising its error at the user's line
local function call(fn, ...)
  local ok, a, b = pcall(fn, ...)
  if not ok then errors.raise(a) end
  return a, b
end

local function is_integer(v) return math.type(v) == "integer" or (type(v) == "number" and v == math.floor(v)) end

local function check_options(op, opts, known)
  if opts == nil then return {} end
  if type(opts) ~= "table" or ember.is_tensor(opts) then
    errors.raisef("%s: expected an options table, got %s", op, ember.is_tensor(opts) and "a tensor" or type(opts))
  end
  for k in pairs(opts) do
    if not known[k] then errors.raisef("%s: unknown option '%s'", op, tostring(k)) end
  end
  return opts
end

local function check_tensor(op, t, what)
  if not ember.is_tensor(t) then
    errors.raisef("%s: %s must be a tensor, got %s", op, what or "argument 1", type(t))
  end
end

local function check_rank_arg(op, name, r)
  if not is_integer(r) then errors.raisef("%s: %s must be an integer rank (0-based), got %s", op, name, tostring(r)) end
  -- C takes an int: a larger value must not wrap onto a valid rank
  if math.abs(r) > 0x7fffffff then errors.raisef("%s: %s rank %s out of range: ranks are 0-based", op, name, tostring(r)) end
  return math.tointeger(r)
end

local function reduce_op(op, v)
  if v == nil then return "sum" end
  local s = type(v) == "string" and v:lower() or nil
  if not OPS[s] then
    errors.raisef("%s: op must be one of ember.distributed.ReduceOp's SUM, AVG, MAX, MIN, PRODUCT, got %s", op,
                  tostring(v))
  end
  return s
end

local function async_flag(op, v)
  if v ~= nil and type(v) ~= "boolean" then errors.raisef("%s: async_op must be a boolean, got %s", op, type(v)) end
  return v == true
end

local function tensor_list(op, list, what)
  if type(list) ~= "table" or ember.is_tensor(list) then
    errors.raisef("%s: %s must be a list of tensors, got %s", op, what, ember.is_tensor(list) and "a tensor" or type(list))
  end
  for i = 1, #list do
    if not ember.is_tensor(list[i]) then errors.raisef("%s: %s[%d] is a %s, expected a tensor", op, what, i, type(list[i])) end
  end
  return list
end

-- ---- process groups

local Group = {__name = "ProcessGroup"}
Group.__index = Group

local function group_object(id) return setmetatable({_id = id}, Group) end

--- ProcessGroup: the class of the groups new_group returns (methods rank, size).
M.ProcessGroup = Group

--- group.WORLD: the default process group (every rank), as torch.distributed.group.WORLD.
M.group = {WORLD = group_object(0)}

-- the C id of a group option (nil: the default group)
local function group_id(op, g)
  if g == nil then return 0 end
  if getmetatable(g) ~= Group then
    errors.raisef("%s: group must be a process group (from ember.distributed.new_group, or group.WORLD), got %s",
                  op, ember.is_tensor(g) and "a tensor" or type(g))
  end
  return g._id
end

-- this rank's rank in g (-1: not a member), its size, its global ranks; an error for a destroyed group
local function group_info(op, g)
  local id = group_id(op, g)
  local ok, r, n, ranks = pcall(C.group_info, id)
  if not ok then errors.raisef("%s: %s", op, tostring(r):gsub("^process group: ", "")) end
  return r, n, ranks
end

function Group:rank() return (group_info("ProcessGroup:rank", self)) end
function Group:size() return select(2, group_info("ProcessGroup:size", self)) end
function Group.__tostring(g)
  local ok, _, _, ranks = pcall(C.group_info, g._id)
  if not ok then return "ProcessGroup(destroyed)" end
  return string.format("ProcessGroup(ranks = {%s})", table.concat(ranks, ", "))
end

local function env_int(name)
  local v = os.getenv(name)
  return v and math.tointeger(tonumber(v)) or nil
end

--- default_pg_timeout, default_pg_nccl_timeout: init_process_group's default timeouts in seconds (PyTorch's:
-- 30 minutes, 10 minutes for nccl).
M.default_pg_timeout = 1800
M.default_pg_nccl_timeout = 600

-- EMBER_DISTRIBUTED_DEBUG as TORCH_DISTRIBUTED_DEBUG: OFF, INFO or DETAIL (DETAIL: the checks over MPI)
local function debug_from_env()
  local v = os.getenv("EMBER_DISTRIBUTED_DEBUG")
  if v == nil or v == "" then return false end
  local u = v:upper()
  if u == "DETAIL" then return true end
  if u == "OFF" or u == "INFO" then return false end
  errors.raisef("init_process_group: EMBER_DISTRIBUTED_DEBUG=%s: expected OFF, INFO or DETAIL (as TORCH_DISTRIBUTED_DEBUG)", v)
end

--- init_process_group(opts): joins the job. opts: backend ("mpi", or "nccl" for CUDA tensors), rank and
-- world_size (optional: checked against the launcher's), timeout (seconds a call may wait for the other ranks
-- before the job ends with an error naming them; default_pg_timeout, or default_pg_nccl_timeout for nccl),
-- debug (compare every collective across ranks over MPI too; EMBER_DISTRIBUTED_DEBUG=DETAIL).
function M.init_process_group(opts)
  if type(opts) == "string" then opts = {backend = opts} end
  opts = check_options("init_process_group", opts, {backend = true, rank = true, world_size = true, debug = true,
                                                    timeout = true})
  local backend = opts.backend or "mpi"
  if type(backend) ~= "string" then errors.raisef("init_process_group: backend must be a string, got %s", type(backend)) end
  local timeout = opts.timeout
  if timeout == nil then timeout = backend == "nccl" and M.default_pg_nccl_timeout or M.default_pg_timeout end
  if type(timeout) ~= "number" or not (timeout > 0) or timeout == math.huge then
    errors.raisef("init_process_group: timeout must be a positive number of seconds, got %s", tostring(timeout))
  end
  local mpi_size = env_int("OMPI_COMM_WORLD_SIZE") or env_int("PMI_SIZE")
  local torch_size = env_int("WORLD_SIZE")
  if not mpi_size and torch_size and torch_size > 1 then
    errors.raisef("init_process_group: WORLD_SIZE=%d but this process was not started by mpirun (no " ..
                  "OMPI_COMM_WORLD_SIZE): ember's MPI backend finds its peers through mpirun, not torchrun's " ..
                  "rendezvous; launch with `ember --nproc %d script.lua` or `mpirun -n %d ember script.lua`",
                  torch_size, torch_size, torch_size)
  end
  local debug = opts.debug
  if debug == nil then debug = debug_from_env() end
  local rank, size = call(C.init, backend, debug, timeout)
  local function agree(name, given, actual)
    if given ~= nil and given ~= actual then
      pcall(C.destroy)
      errors.raisef("init_process_group: %s %s was asked for, but the launcher made this process %s %d", name,
                    tostring(given), name, actual)
    end
  end
  agree("world_size", opts.world_size, size)
  agree("world_size", torch_size, size)
  agree("rank", opts.rank, rank)
  agree("rank", env_int("RANK"), rank)
end

--- is_initialized(): whether the default process group exists.
function M.is_initialized() return C.is_initialized() end

--- is_available(): whether ember can run distributed (the MPI backend is loaded on demand).
function M.is_available() return true end

local function rank_size(op)
  local r, s = C.rank()
  if r < 0 then
    errors.raisef("%s: the default process group is not initialised: call ember.distributed.init_process_group first", op)
  end
  return r, s
end

--- get_rank([group]): this process's rank, 0-based (in the group: -1 when not a member).
function M.get_rank(group)
  if group == nil then return (rank_size("get_rank")) end
  rank_size("get_rank")
  return (group_info("get_rank", group))
end

--- get_world_size([group]): the number of processes (in the group: -1 when not a member, as PyTorch).
function M.get_world_size(group)
  if group == nil then return select(2, rank_size("get_world_size")) end
  rank_size("get_world_size")
  local r, n = group_info("get_world_size", group)
  return r < 0 and -1 or n
end

--- get_backend(): "mpi" or "nccl".
function M.get_backend()
  rank_size("get_backend")
  return select(3, C.rank())
end

--- get_local_rank(): the rank among the processes of this machine (0-based), from the launcher's variables.
function M.get_local_rank()
  return env_int("OMPI_COMM_WORLD_LOCAL_RANK") or env_int("LOCAL_RANK") or 0
end

--- is_main_process(): true on rank 0, and when no process group exists (a single process).
function M.is_main_process()
  local r = C.rank()
  return r <= 0
end

--- destroy_process_group([group]): destroys one group from new_group; with no group (or group.WORLD), every
-- group and the default one (a later init_process_group makes a new one).
function M.destroy_process_group(group)
  if group == nil then return call(C.destroy) end
  call(C.destroy_group, group_id("destroy_process_group", group))
end

--- new_group(ranks, {backend}): a process group over the given global ranks (nil or {}: every rank). Every
-- rank must call it, in the same order, members or not (it is collective over the world, as in PyTorch).
function M.new_group(ranks, opts)
  if ranks ~= nil and (type(ranks) ~= "table" or ember.is_tensor(ranks)) then
    errors.raisef("new_group: ranks must be a list of integer ranks (0-based) or nil, got %s",
                  ember.is_tensor(ranks) and "a tensor" or type(ranks))
  end
  opts = check_options("new_group", opts, {backend = true})
  local list = {}
  for i, r in ipairs(ranks or {}) do
    list[i] = check_rank_arg("new_group", ("ranks[%d]"):format(i), r)
  end
  if ranks ~= nil and #list ~= #ranks then errors.raisef("new_group: ranks must be a list (keys 1..n)") end
  if opts.backend ~= nil and type(opts.backend) ~= "string" then
    errors.raisef("new_group: backend must be a string, got %s", type(opts.backend))
  end
  rank_size("new_group")
  return group_object((call(C.new_group, list, opts.backend)))
end

--- get_process_group_ranks(group): the group's global ranks, ascending.
function M.get_process_group_ranks(group)
  if group == nil then errors.raisef("get_process_group_ranks: expected a process group, got nil") end
  return select(3, group_info("get_process_group_ranks", group))
end

--- get_global_rank(group, group_rank): the global rank of the group's rank group_rank.
function M.get_global_rank(group, group_rank)
  if group == nil then errors.raisef("get_global_rank: expected a process group, got nil") end
  local _, n, ranks = group_info("get_global_rank", group)
  local r = check_rank_arg("get_global_rank", "group_rank", group_rank)
  if r < 0 or r >= n then
    errors.raisef("get_global_rank: group rank %d is not part of the group (its ranks are 0..%d)", r, n - 1)
  end
  return ranks[r + 1]
end

--- get_group_rank(group, global_rank): the rank within the group of a global rank.
function M.get_group_rank(group, global_rank)
  if group == nil then errors.raisef("get_group_rank: expected a process group, got nil") end
  local _, _, ranks = group_info("get_group_rank", group)
  local r = check_rank_arg("get_group_rank", "global_rank", global_rank)
  for i, g in ipairs(ranks) do if g == r then return i - 1 end end
  errors.raisef("get_group_rank: global rank %d is not part of the group (its ranks: %s)", r,
                table.concat(ranks, ", "))
end

-- (tensor, opts-or-op) as PyTorch's positional op or an options table
local function op_opts(op, v, known)
  if type(v) == "string" then return {op = v} end
  return check_options(op, v, known)
end

local REDUCE_OPTS = {op = true, async_op = true, group = true}
local ASYNC_OPTS = {async_op = true, group = true}

-- A collective's options checked: its last arguments for C, the async flag and the group id
local function async_group(op, opts)
  opts = check_options(op, opts, ASYNC_OPTS)
  return async_flag(op, opts.async_op), group_id(op, opts.group)
end

-- A reduction's options (or its op alone, PyTorch's positional form) checked: its last
-- arguments for C, the reduction, the async flag and the group id
local function reduction_async_group(op, opts)
  opts = op_opts(op, opts, REDUCE_OPTS)
  return reduce_op(op, opts.op), async_flag(op, opts.async_op), group_id(op, opts.group)
end

--- all_reduce(t, {op = SUM, async_op = false}): t becomes the reduction of every rank's t.
-- all_reduce(t) alone is answered in C (C.all_reduce_front) without reaching this function.
local function all_reduce(t, opts)
  check_tensor("all_reduce", t)
  return (call(C.all_reduce, t, reduction_async_group("all_reduce", opts)))
end
M.all_reduce = C.all_reduce_front(all_reduce)

--- reduce(t, dst, {op = SUM, async_op = false}): rank dst's t becomes the reduction; the others' t stay.
function M.reduce(t, dst, opts)
  check_tensor("reduce", t)
  dst = check_rank_arg("reduce", "dst", dst)
  return (call(C.reduce, t, dst, reduction_async_group("reduce", opts)))
end

--- broadcast(t, src, {async_op = false}): every rank's t becomes rank src's.
function M.broadcast(t, src, opts)
  check_tensor("broadcast", t)
  src = check_rank_arg("broadcast", "src", src)
  return (call(C.broadcast, t, src, async_group("broadcast", opts)))
end

--- all_gather(list, t, {async_op = false}): list[r + 1] becomes rank r's t (list holds world-size tensors).
function M.all_gather(list, t, opts)
  tensor_list("all_gather", list, "the output list")
  check_tensor("all_gather", t, "argument 2")
  return (call(C.all_gather, list, t, async_group("all_gather", opts)))
end

-- The collectives from one tensor into another (out, then this rank's input), whose last
-- arguments for C come from `last`: async_group or reduction_async_group
local function tensor_to_tensor(op, last)
  return function(out, t, opts)
    check_tensor(op, out)
    check_tensor(op, t, "argument 2")
    return (call(C[op], out, t, last(op, opts)))
  end
end

--- all_gather_into_tensor(out, t, {async_op = false}): out holds every rank's t, concatenated along dim 1
-- ([size * n, ...]) or stacked ([size, n, ...]).
M.all_gather_into_tensor = tensor_to_tensor("all_gather_into_tensor", async_group)

--- reduce_scatter(out, list, {op = SUM, async_op = false}): out becomes the reduction over ranks of their
-- list[rank + 1].
function M.reduce_scatter(out, list, opts)
  check_tensor("reduce_scatter", out)
  tensor_list("reduce_scatter", list, "the input list")
  return (call(C.reduce_scatter, out, list, reduction_async_group("reduce_scatter", opts)))
end

--- reduce_scatter_tensor(out, input, {op = SUM, async_op = false}): input holds world-size blocks shaped like out.
M.reduce_scatter_tensor = tensor_to_tensor("reduce_scatter_tensor", reduction_async_group)

--- barrier({async_op = false}): returns when every rank has called it.
function M.barrier(opts)
  return (call(C.barrier, async_group("barrier", opts)))
end

local P2P_OPTS = {tag = true, group = true}

-- peer nil (recv only): any source, -1 for C
local function p2p(op, fn, t, peer, name, opts, async)
  check_tensor(op, t)
  if type(peer) == "table" and getmetatable(peer) == nil and not ember.is_tensor(peer) and opts == nil then
    peer, opts = nil, peer     -- recv(t, {tag = ..., group = ...}): from any source
  end
  local src_given = peer ~= nil
  if peer == nil and fn == C.send then errors.raisef("%s: dst must be an integer rank (0-based), got nil", op) end
  peer = peer == nil and -1 or check_rank_arg(op, name, peer)
  if peer < 0 and src_given then errors.raisef("%s: %s rank %d out of range: ranks are 0-based", op, name, peer) end
  opts = check_options(op, opts, P2P_OPTS)
  local tag = opts.tag or 0
  if not is_integer(tag) or tag < 0 then errors.raisef("%s: tag must be a non-negative integer, got %s", op, tostring(tag)) end
  return (call(fn, t, peer, math.tointeger(tag), async, group_id(op, opts.group)))
end

--- send(t, dst, {tag = 0, group}): sends t to rank dst (a global rank); returns when t may be reused.
function M.send(t, dst, opts) p2p("send", C.send, t, dst, "dst", opts, false) end

--- recv(t, [src], {tag = 0, group}): receives into t from rank src (a global rank), or from any rank when src is
-- nil; returns the sender's global rank (-1 on a rank outside the group).
function M.recv(t, src, opts)
  local sender = p2p("recv", C.recv, t, src, "src", opts, false)
  return sender
end

--- isend(t, dst, {tag = 0, group}): send, returning a Work at once.
function M.isend(t, dst, opts) return p2p("isend", C.send, t, dst, "dst", opts, true) end

--- irecv(t, [src], {tag = 0, group}): recv, returning a Work at once; after wait(), work:_source_rank() is the
-- sender's global rank.
function M.irecv(t, src, opts) return p2p("irecv", C.recv, t, src, "src", opts, true) end

-- used by the shell: ends every rank of the job after an uncaught error
M._abort = C.abort

return M
