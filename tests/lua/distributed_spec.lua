-- ember.distributed in one process: errors before init_process_group, a world of one without
-- mpirun, double init, bad backends and arguments. The collectives across ranks are tested
-- under mpirun by tests/shell/distributed_test.sh.
local ember = require "ember"
local dist = ember.distributed

describe("ember.distributed without a process group", function()
  it("says what to call first", function()
    assert.is_false(dist.is_initialized())
    assert.is_true(dist.is_main_process())
    assert.has_error(function() local r = dist.get_rank(); return r end,
                     "get_rank: the default process group is not initialised: call ember.distributed.init_process_group first")
    local ok, err = pcall(dist.all_reduce, ember.ones(2))
    assert.is_false(ok)
    assert.matches("all_reduce: the default process group is not initialised", err)
    assert.has_error(function() local x = dist.destroy_process_group(); return x end,
                     "destroy_process_group: the default process group is not initialised")
  end)

  it("refuses a sampler without the group's rank", function()
    local ok, err = pcall(ember.data.DistributedSampler, {1, 2})
    assert.is_false(ok)
    assert.matches("process group, which is not initialised", err)
  end)

  it("refuses unknown backends, nccl without a GPU, and WORLD_SIZE without mpirun", function()
    local ok, err = pcall(dist.init_process_group, {backend = "gloo"})
    assert.is_false(ok)
    assert.matches("unknown backend 'gloo' %(expected 'mpi' or 'nccl'%)", err)
    if not ember.cuda.is_available() then
      -- without a GPU, nccl says so at init, and leaves no group behind
      ok, err = pcall(dist.init_process_group, "nccl")
      assert.is_false(ok)
      assert.matches("init_process_group: backend 'nccl' carries CUDA tensors and needs a GPU: no CUDA device", err)
      assert.is_false(dist.is_initialized())
    end
    ok, err = pcall(dist.init_process_group, {backend = "mpi", bogus = 1})
    assert.matches("unknown option 'bogus'", err)
    assert.is_false(dist.is_initialized())
  end)
end)

describe("a world of one (no mpirun)", function()
  it("initialises, runs every collective as the identity, and refuses a second init", function()
    dist.init_process_group({backend = "mpi"})
    finally(function() if dist.is_initialized() then dist.destroy_process_group() end end)
    assert.are.equal(0, dist.get_rank())
    assert.are.equal(1, dist.get_world_size())
    assert.are.equal("mpi", dist.get_backend())
    local ok, err = pcall(dist.init_process_group)
    assert.matches("already initialised %(rank 0 of 1 over mpi%)", err)
    local t = ember.tensor({{1.5, 2}, {3, 4}}, {dtype = "float16"}):t()
    dist.all_reduce(t, {op = "avg"})
    assert.is_true(ember.equal(t, ember.tensor({{1.5, 3}, {2, 4}}, {dtype = "float16"})))
    local out = ember.zeros(1, 2, 2, {dtype = "float16"})
    dist.all_gather_into_tensor(out, t)
    assert.is_true(ember.equal(out[1], t))
    ok, err = pcall(dist.broadcast, t, 1)
    assert.matches("broadcast: src rank 1 out of range: ranks are 0%-based, 0%.%.0 for world size 1", err)
    ok, err = pcall(dist.send, t, 0)
    assert.matches("a rank cannot send itself", err)
    ok, err = pcall(dist.all_reduce, ember.ones(3, {dtype = "int64"}), {op = "avg"})
    assert.matches("ReduceOp.AVG needs a floating%-point tensor, got int64", err)
    ok, err = pcall(dist.all_reduce, ember.ones(3):expand(2, 3))
    assert.is_false(ok)
    local w = dist.barrier({async_op = true})
    assert.is_true(w:wait())
    assert.are.equal("Work(completed)", tostring(w))
    -- the error points at the caller's line
    ok, err = pcall(function() dist.reduce(ember.ones(2), 5) end)
    assert.matches("distributed_spec.lua:%d+: reduce: dst rank 5 out of range", err)
    dist.destroy_process_group()
    assert.is_false(dist.is_initialized())
    dist.init_process_group()     -- again, after destroy
    assert.is_true(dist.is_initialized())
  end)
end)
