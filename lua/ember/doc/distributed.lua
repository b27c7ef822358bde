-- Docs of ember.distributed (process groups and collectives). Format: ember/help.lua.
-- The examples run in one process: init_process_group without mpirun makes a world of one.
local INIT = "local dist = ember.distributed\nif not dist.is_initialized() then dist.init_process_group() end\n"

local function entry(name, sig, doc, example)
  return {name = "ember.distributed." .. name, sig = sig, doc = doc, example = INIT .. example}
end

return {
  {
    name = "ember.distributed",
    sig = "local dist = ember.distributed",
    doc = [=[
Data-parallel processes and collectives, as torch.distributed. Start N processes with
`ember --nproc N script.lua` (ember runs itself under mpirun) or `mpirun -n N ember
script.lua` (across machines: mpirun's --hostfile); each calls init_process_group().
Ranks are 0-based, as in PyTorch: they number processes, they are not indices.
The MPI backend (OpenMPI, loaded on the first init_process_group: a session that does
not ask loads no MPI library) carries CPU tensors of every dtype, any strides (through
contiguous copies) and empty ones; float16/bfloat16 reductions run on float32 working
copies, rounded once at the end. CUDA tensors need the nccl backend, not built yet.
An uncaught error in a script of an initialised job prints "rank N: <error>" and ends
every rank (MPI_Abort); a killed rank makes mpirun end the others. Without mpirun, a
process is a world of one. EMBER_DISTRIBUTED_DEBUG=1 (or debug = true) compares each
collective's op, dtype and shape across ranks first: a mismatch is an error, not a hang.]=],
    example = INIT .. [=[
print(dist.get_rank(), dist.get_world_size())   -- 0  1 (a single process)]=],
  },
  entry("init_process_group", "dist.init_process_group([{backend = \"mpi\", rank =, world_size =, debug = false}])", [=[
Joins the job: rank and world size come from mpirun (OMPI_COMM_WORLD_RANK / _SIZE); rank
and world_size, and torchrun's RANK / WORLD_SIZE when set, are checked against them.
WORLD_SIZE > 1 without mpirun is an error (ember has no torchrun rendezvous). backend
"nccl" is refused until it is built. A second call before destroy_process_group is an
error. backend may also be given alone: init_process_group("mpi").]=], [=[
print(dist.is_initialized())                    -- true]=]),
  entry("is_initialized", "dist.is_initialized() -> boolean", [=[
Whether the default process group exists.]=], [=[
print(dist.is_initialized())                    -- true]=]),
  entry("is_available", "dist.is_available() -> boolean", [=[
True: the MPI backend is loaded on demand (init_process_group says why if it cannot be).]=], [=[
print(dist.is_available())                      -- true]=]),
  entry("get_rank", "dist.get_rank() -> integer", [=[
This process's rank, 0 .. world size - 1. An error before init_process_group.]=], [=[
print(dist.get_rank())                          -- 0]=]),
  entry("get_world_size", "dist.get_world_size() -> integer", [=[
The number of processes in the job. An error before init_process_group.]=], [=[
print(dist.get_world_size())                    -- 1]=]),
  entry("get_backend", "dist.get_backend() -> string", [=[
The backend's name: "mpi".]=], [=[
print(dist.get_backend())                       -- mpi]=]),
  entry("get_local_rank", "dist.get_local_rank() -> integer", [=[
The rank among the processes on this machine (0-based), from OMPI_COMM_WORLD_LOCAL_RANK
or LOCAL_RANK; 0 when neither is set. Picks the GPU of a rank.]=], [=[
print(dist.get_local_rank())                    -- 0]=]),
  entry("is_main_process", "dist.is_main_process() -> boolean", [=[
True on rank 0, and in a process without a process group: the one that prints progress
and writes checkpoints (ember.save_checkpoint already writes on rank 0 only).]=], [=[
if dist.is_main_process() then print("epoch 1 done") end]=]),
  entry("destroy_process_group", "dist.destroy_process_group()", [=[
Leaves the default process group; init_process_group may be called again (MPI itself
stays up until the process exits).]=], [=[
dist.destroy_process_group()
print(dist.is_initialized())                    -- false
dist.init_process_group()]=]),
  {
    name = "ember.distributed.ReduceOp",
    sig = "dist.ReduceOp.SUM | AVG | MAX | MIN | PRODUCT",
    doc = [=[
The reductions, as strings ("sum", "avg", "max", "min", "product"; a plain string works
too). AVG divides the sum by the world size and needs a floating-point dtype; on bool
tensors SUM and MAX are logical or, PRODUCT and MIN logical and, as in PyTorch.]=],
    example = INIT .. [=[
local t = ember.tensor({1.0, 4.0})
dist.all_reduce(t, {op = dist.ReduceOp.MAX})
print(t)                                        -- [1, 4]]=],
  },
  entry("all_reduce", "dist.all_reduce(t [, {op = ReduceOp.SUM, async_op = false}]) -> nil | work\ndist.all_reduce(t, op)", [=[
Every rank's t becomes the reduction over ranks of their t (same shape and dtype on every
rank). With async_op = true it returns at once with a work object: work:wait() completes
it (t holds the result after), work:is_completed() tells whether it is done; t must not
be used until then. Every collective has the same async form.]=], [=[
local t = ember.tensor({1.0, 2.0})
local work = dist.all_reduce(t, {async_op = true})
work:wait()
print(work:is_completed(), t)                   -- true  [1, 2] (a world of one)]=]),
  entry("reduce", "dist.reduce(t, dst [, {op = ReduceOp.SUM, async_op = false}])", [=[
Rank dst's t becomes the reduction over ranks; the other ranks' t are left as they were.]=], [=[
local t = ember.tensor({3, 5})
dist.reduce(t, 0, {op = "product"})
print(t)                                        -- [3, 5]]=]),
  entry("broadcast", "dist.broadcast(t, src [, {async_op = false}])", [=[
Every rank's t becomes rank src's t.]=], [=[
local t = ember.ones(2, 2):t()                  -- any strides
dist.broadcast(t, 0)
print(t:sum())                                  -- 4]=]),
  entry("all_gather", "dist.all_gather(list, t [, {async_op = false}])", [=[
list holds world-size tensors shaped and typed like t; list[r + 1] becomes rank r's t.]=], [=[
local out = {ember.zeros(2)}
dist.all_gather(out, ember.tensor({7.0, 8.0}))
print(out[1])                                   -- [7, 8]]=]),
  entry("all_gather_into_tensor", "dist.all_gather_into_tensor(out, t [, {async_op = false}])", [=[
out receives every rank's t in rank order: concatenated along dim 1 (out is
[world * n, ...] for t of [n, ...]) or stacked (out is [world, n, ...]).]=], [=[
local out = ember.zeros(dist.get_world_size(), 2)
dist.all_gather_into_tensor(out, ember.tensor({1.0, 2.0}))
print(out)                                      -- [[1, 2]]]=]),
  entry("reduce_scatter", "dist.reduce_scatter(out, list [, {op = ReduceOp.SUM, async_op = false}])", [=[
list holds world-size tensors shaped like out; rank r's out becomes the reduction over
ranks of their list[r + 1].]=], [=[
local out = ember.zeros(3)
dist.reduce_scatter(out, {ember.tensor({1.0, 2.0, 3.0})})
print(out)                                      -- [1, 2, 3]]=]),
  entry("reduce_scatter_tensor", "dist.reduce_scatter_tensor(out, input [, {op = ReduceOp.SUM, async_op = false}])", [=[
input holds world-size blocks shaped like out (concatenated along dim 1 or stacked);
rank r's out becomes the reduction over ranks of their block r + 1.]=], [=[
local out = ember.zeros(2)
dist.reduce_scatter_tensor(out, ember.tensor({5.0, 6.0}), {op = "avg"})
print(out)                                      -- [5, 6]]=]),
  entry("barrier", "dist.barrier([{async_op = false}])", [=[
Returns when every rank has called it.]=], [=[
dist.barrier()]=]),
  entry("send", "dist.send(t, dst [, {tag = 0}])", [=[
Sends t to rank dst (not this rank); returns when t may be changed again. The receiver
calls recv with this rank as src and the same tag, on a tensor of t's shape and dtype.]=], [=[
if dist.get_world_size() > 1 then
  if dist.get_rank() == 0 then dist.send(ember.ones(2), 1) else dist.recv(ember.zeros(2), 0) end
end]=]),
  entry("recv", "dist.recv(t, src [, {tag = 0}]) -> src", [=[
Receives into t from rank src (not this rank); returns src. There is no receive from any
source.]=], [=[
local buf = ember.zeros(2)
if dist.get_world_size() > 1 and dist.get_rank() == 1 then print(dist.recv(buf, 0)) end]=]),
  entry("isend", "dist.isend(t, dst [, {tag = 0}]) -> work", [=[
send that returns at once; work:wait() before changing t.]=], [=[
if dist.get_world_size() > 1 and dist.get_rank() == 0 then dist.isend(ember.ones(2), 1):wait() end]=]),
  entry("irecv", "dist.irecv(t, src [, {tag = 0}]) -> work", [=[
recv that returns at once; t holds the message after work:wait().]=], [=[
if dist.get_world_size() > 1 and dist.get_rank() == 1 then dist.irecv(ember.zeros(2), 0):wait() end]=]),
}
