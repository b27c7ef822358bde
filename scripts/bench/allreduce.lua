-- allreduce.lua — ember.distributed.all_reduce's time (float32 sum, blocking) for each size in
-- bytes given after the repetition count, best of `reps` timings; rank 0 prints "bytes seconds"
-- lines, the format of build/bench_allreduce (the plain MPI_Allreduce loop it is compared with).
-- Run under mpirun: mpirun -n 2 build/ember scripts/bench/allreduce.lua 5 1024 4096 ...
local dist = ember.distributed
dist.init_process_group()
local reps = math.tointeger(tonumber(arg[1])) or 5
for a = 2, #arg do
  local bytes = math.tointeger(tonumber(arg[a]))
  local t = ember.zeros(bytes // 4)
  -- small sizes: repeat inside one timing so the clock's grain stays small
  local inner = bytes < (1 << 20) and 100 or 1
  local best = math.huge
  local took = ember.zeros(1, {dtype = "float64"})
  for _ = 1, reps do
    dist.barrier()
    local t0 = ember.wall_time()
    for _ = 1, inner do dist.all_reduce(t) end
    took[1] = (ember.wall_time() - t0) / inner
    dist.all_reduce(took, {op = "max"})   -- the slowest rank's time, as the C loop takes
    best = math.min(best, took[1]:item())
  end
  if dist.get_rank() == 0 then print(string.format("%d %.9f", bytes, best)) end
end
dist.destroy_process_group()
