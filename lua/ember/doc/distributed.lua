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
copies, rounded once at the end. backend "nccl" carries CUDA tensors over NCCL (the
toolkit's), one GPU per process (cuda:<local rank>), on a communication stream ordered
with the compute stream; MPI bootstraps it and still carries its CPU tensors (PyTorch's
nccl group refuses them). Over NCCL a blocking collective returns once it is queued:
later GPU work sees its result, the host does not wait (as in PyTorch).
An uncaught error in a script of an initialised job prints "rank N: <error>" and ends
every rank, each saying why. Collectives are numbered in their group (#1, #2, ...). With
the ranks on one machine (ember --nproc N, or mpirun on one host) they share a job board
(shared memory): before each collective every member checks that the others passed the
same op, dtype, shape, root and reduce op, so a mismatch is an error on every rank naming
what each passed, not a hang or wrong values; a rank that exits (or dies) while others
wait for it is named at once. A call that waits longer than init_process_group's
timeout ends the job with the op, its number and the ranks that did not arrive. Without
mpirun, a process is a world of one. EMBER_DISTRIBUTED_DEBUG=DETAIL (or debug = true)
runs the same check over MPI too (one small all_gather per collective: ranks on several
machines). EMBER_JOB_BOARD=off runs without the board.]=],
    example = INIT .. [=[
print(dist.get_rank(), dist.get_world_size())   -- 0  1 (a single process)]=],
  },
  entry("init_process_group", "dist.init_process_group([{backend = \"mpi\", rank =, world_size =, timeout =, debug = false}])", [=[
Joins the job: rank and world size come from mpirun (OMPI_COMM_WORLD_RANK / _SIZE); rank
and world_size, and torchrun's RANK / WORLD_SIZE when set, are checked against them.
WORLD_SIZE > 1 without mpirun is an error (ember has no torchrun rendezvous). backend
"nccl" (CUDA tensors; CPU tensors still go over MPI) also makes an NCCL communicator on
cuda:<local rank> (OMPI_COMM_WORLD_LOCAL_RANK or LOCAL_RANK), its id broadcast from rank 0
over MPI: without a GPU, a local rank beyond the GPU count, or an ember built without
NCCL (build/libember_nccl.so) it is an error naming the reason, on every rank. A CUDA
tensor on another GPU than the rank's is an error. A second call before
destroy_process_group is an error. backend may also be given alone:
init_process_group("mpi"). timeout: seconds any call may wait for the other ranks
(dist.default_pg_timeout, 1800; dist.default_pg_nccl_timeout, 600, for nccl, as PyTorch);
past it the job ends (a blocking MPI call cannot return an error: the watchdog ends the
process, as PyTorch's NCCL watchdog does; a collective still waiting for its members
raises the error instead).]=], [=[
print(dist.is_initialized())                    -- true]=]),
  entry("is_initialized", "dist.is_initialized() -> boolean", [=[
Whether the default process group exists.]=], [=[
print(dist.is_initialized())                    -- true]=]),
  entry("is_available", "dist.is_available() -> boolean", [=[
True: the MPI backend is loaded on demand (init_process_group says why if it cannot be).]=], [=[
print(dist.is_available())                      -- true]=]),
  entry("get_rank", "dist.get_rank([group]) -> integer", [=[
This process's rank, 0 .. world size - 1. With a group (from new_group): its rank within
the group, -1 when it is not a member (as PyTorch). An error before init_process_group
or for a destroyed group.]=], [=[
print(dist.get_rank())                          -- 0]=]),
  entry("get_world_size", "dist.get_world_size([group]) -> integer", [=[
The number of processes in the job; with a group, the group's size (-1 on a rank that is
not a member, as PyTorch). An error before init_process_group.]=], [=[
print(dist.get_world_size())                    -- 1]=]),
  entry("get_backend", "dist.get_backend() -> string", [=[
The backend's name: "mpi" or "nccl".]=], [=[
print(dist.get_backend())                       -- mpi]=]),
  entry("get_local_rank", "dist.get_local_rank() -> integer", [=[
The rank among the processes on this machine (0-based), from OMPI_COMM_WORLD_LOCAL_RANK
or LOCAL_RANK; 0 when neither is set. Picks the GPU of a rank.]=], [=[
print(dist.get_local_rank())                    -- 0]=]),
  entry("is_main_process", "dist.is_main_process() -> boolean", [=[
True on rank 0, and in a process without a process group: the one that prints progress
and writes checkpoints (ember.save_checkpoint already writes on rank 0 only).]=], [=[
if dist.is_main_process() then print("epoch 1 done") end]=]),
  entry("destroy_process_group", "dist.destroy_process_group([group])", [=[
With a group from new_group: destroys that group (every member must call it; using it
afterwards is an error). Without one (or with group.WORLD): destroys every group and
leaves the default process group; init_process_group may be called again (MPI itself
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
  entry("all_reduce", "dist.all_reduce(t [, {op = ReduceOp.SUM, async_op = false, group}]) -> nil | work\ndist.all_reduce(t, op)", [=[
Every rank's t becomes the reduction over ranks of their t (same shape and dtype on every
rank). Every collective takes group = g (from new_group): it then runs over g's members
only (AVG divides by g's size, lists hold g-size tensors in g's rank order, src and dst
stay global ranks and must be members); on a rank outside g it does nothing and returns
nil (PyTorch warns and returns None). With async_op = true it returns at once with a
work object: work:wait() completes it (t holds the result after), work:is_completed()
tells whether it is done; t must not be used until then. Every collective has the same
async form. Over NCCL (CUDA tensors)
wait() orders instead of blocking: later GPU work runs after the collective, and
is_completed() asks the GPU.]=], [=[
local t = ember.tensor({1.0, 2.0})
local work = dist.all_reduce(t, {async_op = true})
work:wait()
print(work:is_completed(), t)                   -- true  [1, 2] (a world of one)]=]),
  entry("reduce", "dist.reduce(t, dst [, {op = ReduceOp.SUM, async_op = false, group}])", [=[
Rank dst's t becomes the reduction over ranks; the other ranks' t are left as they were.]=], [=[
local t = ember.tensor({3, 5})
dist.reduce(t, 0, {op = "product"})
print(t)                                        -- [3, 5]]=]),
  entry("broadcast", "dist.broadcast(t, src [, {async_op = false, group}])", [=[
Every rank's t becomes rank src's t.]=], [=[
local t = ember.ones(2, 2):t()                  -- any strides
dist.broadcast(t, 0)
print(t:sum())                                  -- 4]=]),
  entry("all_gather", "dist.all_gather(list, t [, {async_op = false, group}])", [=[
list holds world-size tensors shaped and typed like t; list[r + 1] becomes rank r's t.]=], [=[
local out = {ember.zeros(2)}
dist.all_gather(out, ember.tensor({7.0, 8.0}))
print(out[1])                                   -- [7, 8]]=]),
  entry("all_gather_into_tensor", "dist.all_gather_into_tensor(out, t [, {async_op = false, group}])", [=[
out receives every rank's t in rank order: concatenated along dim 1 (out is
[world * n, ...] for t of [n, ...]) or stacked (out is [world, n, ...]).]=], [=[
local out = ember.zeros(dist.get_world_size(), 2)
dist.all_gather_into_tensor(out, ember.tensor({1.0, 2.0}))
print(out)                                      -- [[1, 2]]]=]),
  entry("reduce_scatter", "dist.reduce_scatter(out, list [, {op = ReduceOp.SUM, async_op = false, group}])", [=[
list holds world-size tensors shaped like out; rank r's out becomes the reduction over
ranks of their list[r + 1].]=], [=[
local out = ember.zeros(3)
dist.reduce_scatter(out, {ember.tensor({1.0, 2.0, 3.0})})
print(out)                                      -- [1, 2, 3]]=]),
  entry("reduce_scatter_tensor", "dist.reduce_scatter_tensor(out, input [, {op = ReduceOp.SUM, async_op = false, group}])", [=[
input holds world-size blocks shaped like out (concatenated along dim 1 or stacked);
rank r's out becomes the reduction over ranks of their block r + 1.]=], [=[
local out = ember.zeros(2)
dist.reduce_scatter_tensor(out, ember.tensor({5.0, 6.0}), {op = "avg"})
print(out)                                      -- [5, 6]]=]),
  entry("barrier", "dist.barrier([{async_op = false, group}])", [=[
Returns when every rank has called it (in an nccl group: a one-element all_reduce over
NCCL, after this rank's queued GPU work, which the host also waits for).]=], [=[
dist.barrier()]=]),
  entry("send", "dist.send(t, dst [, {tag = 0, group}])", [=[
Sends t to rank dst (not this rank); returns when t may be changed again. The receiver
calls recv with this rank as src and the same tag, on a tensor of t's shape and dtype.]=], [=[
if dist.get_world_size() > 1 then
  if dist.get_rank() == 0 then dist.send(ember.ones(2), 1) else dist.recv(ember.zeros(2), 0) end
end]=]),
  entry("recv", "dist.recv(t [, src] [, {tag = 0, group}]) -> sender", [=[
Receives into t from rank src (not this rank), or, with src nil or left out, from
whichever rank's message (with this tag) comes first (MPI_ANY_SOURCE); returns the
sender's global rank, as PyTorch 2. With a group, src is a global rank of a member; a
rank outside the group receives nothing and gets -1. A receive from any source needs a
CPU tensor: NCCL has none, so for CUDA tensors it is an error. NCCL has no tags: CUDA
tensors take tag 0 only (messages match in order).]=], [=[
local buf = ember.zeros(2)
if dist.get_world_size() > 1 and dist.get_rank() == 0 then
  for _ = 2, dist.get_world_size() do print("from", dist.recv(buf)) end   -- any source
elseif dist.get_world_size() > 1 then
  dist.send(ember.ones(2), 0)
end]=]),
  entry("isend", "dist.isend(t, dst [, {tag = 0, group}]) -> work", [=[
send that returns at once; work:wait() before changing t (nil on a rank outside group).]=], [=[
if dist.get_world_size() > 1 and dist.get_rank() == 0 then dist.isend(ember.ones(2), 1):wait() end]=]),
  entry("irecv", "dist.irecv(t [, src] [, {tag = 0, group}]) -> work", [=[
recv that returns at once; t holds the message after work:wait(). With src nil (any
source), work:_source_rank() after wait() is the sender's global rank (PyTorch's
Work._source_rank; before completion, or on another collective's work, an error).]=], [=[
if dist.get_world_size() > 1 and dist.get_rank() == 1 then
  local work = dist.irecv(ember.zeros(2))
  work:wait()
  print(work:_source_rank())
end]=]),
  -- process subgroups
  entry("new_group", "dist.new_group([ranks] [, {backend}]) -> group", [=[
A process group over some ranks, as torch.distributed.new_group: ranks is a list of
distinct global ranks (any order; sorted, they become the group's ranks 0, 1, ...); nil
or {} means every rank. Every rank must call new_group for every group, in the same
order, members or not: it is collective over the world (MPI_Comm_split; over NCCL,
ncclCommSplit). A non-member gets a group too: get_rank(group) is -1 there, and the
collectives called on it return nil without doing anything (PyTorch returns its
NON_GROUP_MEMBER and warns). backend: "mpi", or "nccl" (needs a default group over
nccl; CPU tensors still go over MPI); default: the default group's. Pass the group as
{group = g} to any collective, as process_group to DistributedDataParallel, and free it
with destroy_process_group(g). Ranks out of range, duplicates or a non-list are errors;
each collective's check (on the job board, and with EMBER_DISTRIBUTED_DEBUG=DETAIL over
MPI) runs among the group's members; new_group is numbered among the default group's.]=], [=[
local g = dist.new_group({0})
local t = ember.tensor({2.0})
dist.all_reduce(t, {group = g})
print(dist.get_rank(g), dist.get_world_size(g), t)   -- 0  1  [2]
dist.destroy_process_group(g)]=]),
  entry("group", "dist.group.WORLD", [=[
The default process group as a group object: every rank, group rank = global rank.]=], [=[
print(dist.get_world_size(dist.group.WORLD))     -- 1]=]),
  entry("ProcessGroup", "group:rank() -> integer  |  group:size() -> integer  |  tostring(group)", [=[
A group from new_group: rank() is get_rank(group), size() get_world_size(group) (-1 on a
non-member); tostring shows its global ranks.]=], [=[
local g = dist.new_group()
print(g:rank(), g:size(), g)                      -- 0  1  ProcessGroup(ranks = {0})
dist.destroy_process_group(g)]=]),
  entry("get_process_group_ranks", "dist.get_process_group_ranks(group) -> {ranks}", [=[
The group's global ranks, ascending (0-based values).]=], [=[
print(dist.get_process_group_ranks(dist.group.WORLD)[1])   -- 0]=]),
  entry("get_global_rank", "dist.get_global_rank(group, group_rank) -> integer", [=[
The global rank of the group's rank group_rank; an error when group_rank is not
0 .. size - 1.]=], [=[
print(dist.get_global_rank(dist.group.WORLD, 0))  -- 0]=]),
  entry("get_group_rank", "dist.get_group_rank(group, global_rank) -> integer", [=[
The rank within the group of a global rank; an error when it is not a member.]=], [=[
print(dist.get_group_rank(dist.group.WORLD, 0))   -- 0]=]),
  -- DistributedDataParallel and the engine hooks it stands on
  {
    name = "ember.nn.parallel",
    sig = "local parallel = ember.nn.parallel",
    doc = [=[
Data-parallel training (torch.nn.parallel): DistributedDataParallel over the default
process group of ember.distributed. The training scripts use it with --distributed
(scripts/fashion_mnist_mlp.lua, fashion_mnist_cnn.lua, char_gpt.lua: --batch-size or
--batch is the global batch, split evenly over the ranks; rank 0 prints and saves).]=],
    example = [=[
print(type(ember.nn.parallel.DistributedDataParallel))   -- table (a module class)]=],
  },
  {
    name = "ember.nn.parallel.DistributedDataParallel",
    sig = "nn.parallel.DistributedDataParallel(module [, {bucket_cap_mb = 25, find_unused_parameters = false,\n"
       .. "                                       broadcast_buffers = true, process_group, device_ids,\n"
       .. "                                       output_device, static_graph = false,\n"
       .. "                                       gradient_as_bucket_view = false}]) -> module",
    doc = [=[
Wraps module so that backward averages the gradients over every rank. At the wrap,
every rank's parameters and buffers are checked against rank 0's (names, shapes,
dtypes: a difference is the same clear error on every rank, not a hang), then rank 0's
values are broadcast. The parameters that require grad are cut, in reverse registration
order, into buckets of at most bucket_cap_mb megabytes; a post-accumulate hook copies each
gradient into its bucket as soon as backward has finished it, a full bucket is
all-reduced (AVG) asynchronously at once, in bucket order, while backward goes on, and a
callback at the end of backward waits for them and writes the averages into .grad. So
after loss:backward() every rank holds the same averaged gradients; step the optimizer
as usual. forward first broadcasts rank 0's buffers (broadcast_buffers, e.g. BatchNorm's
running statistics). find_unused_parameters: parameters that got no gradient in a
backward count as zeros (those no rank used keep their .grad); without it such a
parameter is PyTorch's "Expected to have finished reduction in the prior iteration..."
error at the end of that backward, naming the parameters. ddp.module is the wrapped
model; parameters() are its parameters; state_dict() keys carry PyTorch's "module."
prefix, so checkpoint ddp.module (as the training scripts do) to load the file into an
unwrapped model, or load a plain checkpoint with ddp.module:load_state_dict.
process_group = g (from new_group; only its members wrap): the buckets are averaged over
g's members, and the checks and broadcasts at wrap and before forward come from g's
lowest rank instead of rank 0; several groups can train apart in one job.
gradient_as_bucket_view = true: after the first synchronised backward every .grad is a
view of its bucket, so backward accumulates straight into the bucket and the average
lands in .grad without copies (half the gradient memory), as PyTorch; a .grad set to nil
(zero_grad's default) is copied in once and made a view again; zero_grad(false) keeps
the views. device_ids = {the module's device} (or nil) and output_device are checked
against where the module is: nil for a CPU module, as PyTorch; nothing is moved.
static_graph is accepted and changes nothing.
Deviations: unused parameters are found when backward ends, not by walking the graph
after forward; every bucket (the first too) is at most bucket_cap_mb; CUDA parameters
need the nccl backend. Needs init_process_group first; a world of one works.]=],
    example = INIT .. [=[
local model = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(3, 2))
local opt = ember.optim.SGD(model:parameters(), {lr = 0.1})
model(ember.randn(4, 3)):sum():backward()    -- each rank: its share of the batch
opt:step()
print(model.module.weight.grad.shape)         -- {2, 3}: averaged over the ranks]=],
  },
  {
    name = "ember.nn.parallel.DistributedDataParallel:forward",
    sig = "ddp(...) / ddp:forward(...) -> the module's results",
    doc = [=[
Calls the wrapped module. First broadcasts rank 0's buffers (broadcast_buffers), and
when grad mode is on and not inside no_sync, arms the hooks: the next backward averages
the gradients.]=],
    example = INIT .. [=[
local ddp = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(3, 2))
print(ddp(ember.ones(1, 3)).shape)           -- {1, 2}]=],
  },
  {
    name = "ember.nn.parallel.DistributedDataParallel:no_sync",
    sig = "ddp:no_sync(fn, ...) -> fn's results  |  local _ <close> = ddp:no_sync()",
    doc = [=[
Gradient accumulation without communication: backwards of forwards run inside no_sync
only add into each rank's .grad; the first synchronised backward after them averages
the accumulated gradients (PyTorch's no_sync context manager, as a function or a
to-be-closed guard).]=],
    example = INIT .. [=[
local ddp = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(3, 2))
ddp:no_sync(function() ddp(ember.randn(4, 3)):sum():backward() end)   -- local only
ddp(ember.randn(4, 3)):sum():backward()                                 -- averaged now]=],
  },
  {
    name = "ember.nn.parallel.DistributedDataParallel:bucket_sizes",
    sig = "ddp:bucket_sizes() -> {n1, n2, ...}",
    doc = [=[
The buckets' sizes in elements, in the order they are all-reduced (the last
parameters first).]=],
    example = INIT .. [=[
local ddp = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(3, 2))
print(ddp:bucket_sizes()[1])                 -- 8: bias and weight in one bucket]=],
  },
  {
    name = "Tensor:register_post_accumulate_grad_hook",
    sig = "Tensor:register_post_accumulate_grad_hook(fn) -> handle",
    doc = [=[
Calls fn(t) after a backward pass has added t's gradient into t.grad (once per pass;
t must be a leaf that requires grad), as PyTorch 2's hook of that name.
ember.autograd.grad accumulates nothing, so it runs no such hook. An error in fn
fails the backward. Returns a handle; handle:remove() stops the hook.]=],
    example = [=[
local w = ember.tensor({1.0, 2.0}, {requires_grad = true})
w:register_post_accumulate_grad_hook(function(p) print(p.grad) end)
local y = (w * 3):sum()
y:backward()                                 -- tensor([3., 3.])]=],
  },
  {
    name = "ember.autograd.queue_callback",
    sig = "ember.autograd.queue_callback(fn)",
    doc = [=[
From a hook during a backward pass: fn() runs once that pass has accumulated every
gradient, before backward returns (PyTorch's Variable._execution_engine.queue_callback).
An error in fn fails the backward; outside a backward pass it is an error.]=],
    example = [=[
local w = ember.tensor({1.0}, {requires_grad = true})
w:register_post_accumulate_grad_hook(function()
  ember.autograd.queue_callback(function() print("backward done") end)
end)
local y = (w * 2):sum()
y:backward()                                 -- backward done]=],
  },
}
