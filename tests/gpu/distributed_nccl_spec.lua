-- distributed_nccl_spec.lua (GPU) — the nccl backend in a world of one (no mpirun: MPI's
-- singleton bootstraps it): every collective on CUDA tensors of several dtypes, contiguous
-- or not, blocking and async, equals the same collective on CPU copies, which an nccl group
-- carries over MPI. With EMBER_GPU_TEST_DEVICE=cpu the group is "mpi" and both sides are
-- CPU tensors (that checks the test code).
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dist = ember.distributed
local dev, same = g.dev, g.same
local cuda_it = g.cuda_it(it, pending)
local BACKEND = g.on_cpu and "mpi" or "nccl"

local DTYPES = {"float32", "float64", "float16", "bfloat16", "int32", "int64", "int16", "int8", "uint8", "bool"}
local FLOATING = {float32 = true, float64 = true, float16 = true, bfloat16 = true}

-- values every dtype holds exactly (small integers, halves for floating types)
local function values(dtype, shape)
  local x = ember.randint(0, 6, shape, {dtype = "int64"}):to("float64")
  if FLOATING[dtype] then x = x * 0.5 - 1 end
  if dtype == "bool" then return x:gt(2) end
  return x:to(dtype)
end

-- fn(t_on_device) and fn(t_on_cpu) give tensors that must be equal
local function twin(name, fn)
  for _, dtype in ipairs(DTYPES) do
    for _, shape in ipairs({{5}, {3, 4}, {0}}) do
      local x = values(dtype, shape)
      local got, want = fn(dev(x)), fn(x:clone())
      for i = 1, #want do same(got[i], want[i], {what = ("%s %s %s [%d]"):format(name, dtype, x.shape[1], i)}) end
    end
  end
end

describe("the nccl backend, a world of one", function()
  setup(function() dist.init_process_group({backend = BACKEND}) end)
  teardown(function() if dist.is_initialized() then dist.destroy_process_group() end end)

  it("names itself and its rank", function()
    assert.are.equal(BACKEND, dist.get_backend())
    assert.are.equal(0, dist.get_rank())
    assert.are.equal(1, dist.get_world_size())
  end)

  it("all_reduce and reduce, every op, blocking and async, equal MPI's on the CPU", function()
    for _, op in ipairs({"sum", "max", "min", "product", "avg"}) do
      twin("all_reduce " .. op, function(t)
        if op == "avg" and not t:is_floating_point() then return {} end
        local nc = t:t()                     -- non-contiguous for 2-d
        dist.all_reduce(nc, {op = op})
        local a = t:clone()
        local work = dist.all_reduce(a, {op = op, async_op = true})
        work:wait()
        local r = t:clone()
        dist.reduce(r, 0, {op = op})
        return {t, a, r}
      end)
    end
  end)

  it("broadcast, all_gather and reduce_scatter equal MPI's on the CPU", function()
    twin("gather/scatter", function(t)
      local b = t:clone()
      dist.broadcast(b, 0)
      local list = {ember.zeros_like(t)}
      dist.all_gather(list, t)
      local out = ember.zeros({1, table.unpack(t.shape)}, {dtype = t.dtype, device = t.device})
      dist.all_gather_into_tensor(out, t, {async_op = true}):wait()
      local rs = ember.zeros_like(t)
      dist.reduce_scatter(rs, {t:clone()})
      local rst = ember.zeros_like(t)
      dist.reduce_scatter_tensor(rst, t:unsqueeze(1), {op = "max"})
      return {b, list[1], out[1], rs, rst}
    end)
  end)

  it("barrier, blocking and async; is_completed after synchronize", function()
    dist.barrier()
    dist.barrier({async_op = true}):wait()
    local t = dev(ember.ones(1000))
    local work = dist.all_reduce(t, {async_op = true})
    work:wait()
    g.synchronize()
    assert.is_true(work:is_completed())
    same(t, ember.ones(1000), {any_device = true})
  end)

  it("orders the collective after earlier kernels and later kernels after it", function()
    local t = dev(ember.zeros(1 << 20))
    t:add_(3)                                -- queued on the compute stream
    dist.all_reduce(t)
    local s = (t * 2):sum():item()           -- reads the result
    assert.are.equal(6 * (1 << 20), s)
  end)

  cuda_it("refuses a CUDA tensor of another GPU, and send to itself", function()
    local ok, err = pcall(dist.send, dev(ember.ones(2)), 0)
    assert.is_false(ok)
    assert.matches("a rank cannot send itself", err)
    if ember.cuda.device_count() < 2 then return end
    ok, err = pcall(dist.all_reduce, ember.ones(2, {device = "cuda:1"}))
    assert.is_false(ok)
    assert.matches("all_reduce: a float32 tensor on cuda:1, but this rank's GPU is cuda:0", err)
  end)

  it("a subgroup of {0} (ncclCommSplit): every collective equals MPI's on the CPU", function()
    local grp = dist.new_group({0})
    assert.are.equal(0, dist.get_rank(grp))
    assert.are.equal(1, dist.get_world_size(grp))
    twin("group", function(t)
      local a = t:clone()
      dist.all_reduce(a, {op = "max", group = grp})
      local w = t:clone()
      dist.all_reduce(w, {op = "sum", group = grp, async_op = true}):wait()
      local b = t:clone()
      dist.broadcast(b, 0, {group = grp})
      local r = t:clone()
      dist.reduce(r, 0, {group = grp})
      local list = {ember.zeros_like(t)}
      dist.all_gather(list, t, {group = grp})
      local out = ember.zeros({1, table.unpack(t.shape)}, {dtype = t.dtype, device = t.device})
      dist.all_gather_into_tensor(out, t, {group = grp})
      local rs = ember.zeros_like(t)
      dist.reduce_scatter(rs, {t:clone()}, {group = grp})
      local rst = ember.zeros_like(t)
      dist.reduce_scatter_tensor(rst, t:unsqueeze(1), {group = grp})
      return {a, w, b, r, list[1], out[1], rs, rst}
    end)
    dist.barrier({group = grp})
    dist.destroy_process_group(grp)
    local ok, err = pcall(dist.all_reduce, dev(ember.ones(2)), {group = grp})
    assert.is_false(ok)
    assert.matches("all_reduce: the process group was destroyed", err)
  end)

  cuda_it("recv from any source into a CUDA tensor: a clear error (NCCL has none)", function()
    local ok, err = pcall(dist.recv, dev(ember.zeros(2)))
    assert.is_false(ok)
    assert.matches("recv: receiving from any source %(src = nil%) into a CUDA tensor: NCCL has no any%-source receive", err)
    ok, err = pcall(dist.irecv, dev(ember.zeros(2)), nil, {tag = 0})
    assert.is_false(ok)
    assert.matches("NCCL has no any%-source receive", err)
  end)

  cuda_it("DistributedDataParallel on CUDA parameters: the gradients of one process", function()
    local nn = require "ember.nn"
    ember.manual_seed(3)
    local net = nn.Linear(4, 3):to(g.DEV)
    local ref = nn.Linear(4, 3):to(g.DEV)
    ref:load_state_dict(net:state_dict())
    local ddp = nn.parallel.DistributedDataParallel(net)
    local x = dev(ember.randn({5, 4}))
    ddp(x):sum():backward()
    ref(x):sum():backward()
    g.close(net.weight.grad, ref.weight.grad, {rtol = 1e-6, atol = 1e-6})
    g.close(net.bias.grad, ref.bias.grad, {rtol = 1e-6, atol = 1e-6})
  end)
end)
