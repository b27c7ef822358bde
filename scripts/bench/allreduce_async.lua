-- allreduce_async.lua — what an async all_reduce started and waited for at once costs beside the
-- blocking call (float32 sum, best of 5 timings of 20 calls), for a few sizes; rank 0 prints one
-- line a size. Over MPI an async collective goes through the communication thread (or runs at
-- the call with EMBER_MPI_THREADS=single), so the difference is the hand-over.
-- Run under mpirun: mpirun -n 2 build/ember scripts/bench/allreduce_async.lua
local dist = ember.distributed
dist.init_process_group()
for _, n in ipairs({256, 16384, 65536, 262144, 1048576}) do
  local t = ember.zeros(n)
  local function best(f)
    local b = math.huge
    for _ = 1, 5 do
      dist.barrier()
      local t0 = ember.wall_time()
      for _ = 1, 20 do f() end
      b = math.min(b, (ember.wall_time() - t0) / 20)
    end
    return b
  end
  local blocking = best(function() dist.all_reduce(t) end)
  local async = best(function() dist.all_reduce(t, {async_op = true}):wait() end)
  if dist.get_rank() == 0 then
    print(string.format("%9d bytes  blocking %9.3f us  async + wait %9.3f us", 4 * n, blocking * 1e6, async * 1e6))
  end
end
dist.destroy_process_group()
