-- ranks_tap.lua — the TAP reporting of the rank programs run under mpirun (distributed_ranks.lua,
-- ddp_ranks.lua), loaded with dofile after init_process_group:
--   local T = dofile((arg[0]:match("^(.*/)") or "./") .. "ranks_tap.lua")
--   T.group(name, fn)   runs fn (T.fail(msg) records a failure; an error is one too), then one
--                       all_reduce(MIN) of the pass flags; rank 0 prints one TAP line, every rank
--                       writes its failures to stderr prefixed by the rank
--   T.finish()          rank 0 prints the plan
local dist = ember.distributed
local T = {rank = dist.get_rank(), size = dist.get_world_size()}
local count, failures = 0, {}

function T.fail(msg) failures[#failures + 1] = msg end

function T.group(name, fn)
  failures = {}
  local ok, err = pcall(fn)
  if not ok then T.fail("error: " .. tostring(err)) end
  local flag = ember.tensor({#failures == 0 and 1 or 0}, {dtype = "int32"})
  dist.all_reduce(flag, {op = dist.ReduceOp.MIN})
  for _, f in ipairs(failures) do io.stderr:write(string.format("# rank %d: %s: %s\n", T.rank, name, f)) end
  count = count + 1
  if T.rank == 0 then
    print(string.format("%s %d - %s (%d ranks)", flag:item() == 1 and "ok" or "not ok", count, name, T.size))
  end
end

function T.finish()
  if T.rank == 0 then print("1.." .. count) end
end

return T
