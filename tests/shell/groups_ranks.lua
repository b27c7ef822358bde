-- groups_ranks.lua — run by groups_test.sh under mpirun with 2 and 4 ranks: recv from any source,
-- and process subgroups (new_group): every collective within each group against values worked
-- out here by hand (the literal tables for 4 ranks) and in plain Lua loops over the members,
-- non-members, bad input, destroy, and the debug check per group. One TAP line per group of
-- checks (ranks_tap.lua).
local dist = ember.distributed
dist.init_process_group({backend = "mpi"})
local T = dofile((arg[0]:match("^(.*/)") or "./") .. "ranks_tap.lua")
local r, n, fail, check = T.rank, T.size, T.fail, T.group

local function eq(got, want, what)
  if got ~= want then fail(string.format("%s: got %s, expected %s", what, tostring(got), tostring(want))) end
end

local function list_eq(got, want, what)
  local g, w = {}, {}
  for i, v in ipairs(got) do g[i] = string.format("%g", v) end
  for i, v in ipairs(want) do w[i] = string.format("%g", v) end
  eq(table.concat(g, ","), table.concat(w, ","), what)
end

-- Lua integers make int64 tensors; the receivers here are float32
local function f32(list) return ember.tensor(list, {dtype = "float32"}) end

local function values(t) return t:contiguous():reshape(-1):tolist() end

-- error text of fn(), or nil when it did not raise
local function err_of(fn)
  local ok, e = pcall(fn)
  return not ok and tostring(e) or nil
end

local function raises(fn, pattern, what)
  local e = err_of(fn)
  if not e then return fail(what .. ": no error") end
  if not e:find(pattern) then fail(string.format("%s: error '%s' does not match '%s'", what, e, pattern)) end
end

-- ---- recv from any source -------------------------------------------------------------------

check("recv from any source: rank 0 gets every other rank's message, in arrival order", function()
  if r == 0 then
    local seen = {}
    for _ = 1, n - 1 do
      local t = ember.zeros(2)
      local src = dist.recv(t)
      local v = values(t)
      eq(v[1], src * 100 + 1, "payload 1 from " .. tostring(src))
      eq(v[2], src * 100 + 2, "payload 2 from " .. tostring(src))
      if seen[src] then fail("sender " .. src .. " twice") end
      seen[src] = true
    end
    for q = 1, n - 1 do if not seen[q] then fail("no message from rank " .. q) end end
  else
    dist.send(f32({r * 100 + 1, r * 100 + 2}), 0)
  end
end)

check("recv(t, {tag}) and irecv from any source: work:_source_rank() names the sender", function()
  if r == 0 then
    local seen = {}
    for _ = 1, n - 1 do
      local t = ember.zeros(3, {dtype = "int64"})
      local w = dist.irecv(t, nil, {tag = 7})
      w:wait()
      local src = w:_source_rank()
      list_eq(values(t), {src, src * 2, src * 3}, "irecv payload")
      seen[#seen + 1] = src
    end
    table.sort(seen)
    local want = {}
    for q = 1, n - 1 do want[q] = q end
    list_eq(seen, want, "irecv senders")
    for _ = 1, n - 1 do
      local t = ember.zeros(1)
      local src = dist.recv(t, {tag = 9})
      eq(t:item(), src + 0.5, "recv(t, {tag}) payload")
    end
    -- a named source still returns it
    local t = ember.zeros(1)
    eq(dist.recv(t, 1, {tag = 11}), 1, "recv(t, 1) returns 1")
    eq(t:item(), 42, "recv(t, 1) payload")
  else
    dist.send(ember.tensor({r, r * 2, r * 3}, {dtype = "int64"}), 0, {tag = 7})
    dist.send(ember.tensor({r + 0.5}), 0, {tag = 9})
    if r == 1 then dist.send(f32({42}), 0, {tag = 11}) end
  end
  local w = dist.barrier({async_op = true})
  w:wait()
  raises(function() return w:_source_rank() end, "Work._source_rank: this Work is not a receive's", "_source_rank of a barrier")
  raises(function() return dist.recv(ember.zeros(1), -1) end, "recv: src rank %-1 out of range", "recv(t, -1)")
  raises(function() dist.send(ember.zeros(1)) end, "send: dst must be an integer rank", "send without dst")
end)

-- ---- process groups ---------------------------------------------------------------------------

local GROUPS = n == 4 and {{0, 1}, {2, 3}, {1, 3}, {0, 2, 3}} or {{0, 1}, {1}}
-- for 4 ranks, by hand: the sum over members of (rank + 1)
local HAND_SUM = n == 4 and {3, 7, 6, 8} or {3, 2}

local groups = {}
check("new_group: every rank makes every group; rank, size and rank translation", function()
  for i, ranks in ipairs(GROUPS) do
    -- given unsorted: new_group sorts
    local shuffled = {}
    for j = #ranks, 1, -1 do shuffled[#shuffled + 1] = ranks[j] end
    local g = dist.new_group(shuffled)
    groups[i] = g
    list_eq(dist.get_process_group_ranks(g), ranks, "ranks of group " .. i)
    local mine = -1
    for j, q in ipairs(ranks) do
      if q == r then mine = j - 1 end
      eq(dist.get_global_rank(g, j - 1), q, "get_global_rank")
      eq(dist.get_group_rank(g, q), j - 1, "get_group_rank")
    end
    eq(dist.get_rank(g), mine, "get_rank(g) of group " .. i)
    eq(g:rank(), mine, "g:rank()")
    eq(dist.get_world_size(g), mine >= 0 and #ranks or -1, "get_world_size(g) of group " .. i)
    raises(function() return dist.get_global_rank(g, #ranks) end, "get_global_rank: group rank " .. #ranks ..
           " is not part of the group", "get_global_rank out of range")
    for q = 0, n - 1 do
      local member = false
      for _, m in ipairs(ranks) do member = member or m == q end
      if not member then
        raises(function() return dist.get_group_rank(g, q) end, "get_group_rank: global rank " .. q ..
               " is not part of the group", "get_group_rank of a non-member")
      end
    end
  end
  eq(dist.get_rank(dist.group.WORLD), r, "get_rank(WORLD)")
  eq(dist.get_world_size(dist.group.WORLD), n, "get_world_size(WORLD)")
  eq(dist.get_global_rank(dist.group.WORLD, n - 1), n - 1, "get_global_rank(WORLD)")
  local whole = dist.new_group()
  eq(dist.get_world_size(whole), n, "new_group() spans the world")
  dist.destroy_process_group(whole)
end)

local function member_of(ranks) for j, q in ipairs(ranks) do if q == r then return j - 1 end end end

check("all_reduce (sum, avg, max, async) within each group; non-members untouched, nil", function()
  for i, ranks in ipairs(GROUPS) do
    local g, me = groups[i], member_of(ranks)
    local sum, max = 0, 0
    for _, q in ipairs(ranks) do sum, max = sum + q + 1, math.max(max, q + 1) end
    eq(sum, HAND_SUM[i], "the plain-Lua sum agrees with the hand value")
    local t = ember.tensor({r + 1, 10 * (r + 1)})
    local ret = dist.all_reduce(t, {group = g})
    eq(ret, nil, "all_reduce returns nil")
    if me then list_eq(values(t), {HAND_SUM[i], 10 * HAND_SUM[i]}, "all_reduce sum in group " .. i)
    else list_eq(values(t), {r + 1, 10 * (r + 1)}, "non-member's tensor after all_reduce") end
    t = ember.tensor({r + 1.0}, {dtype = "float64"})
    dist.all_reduce(t, {op = "avg", group = g})
    eq(t:item(), me and sum / #ranks or r + 1, "all_reduce avg in group " .. i)
    t = ember.tensor({r + 1}, {dtype = "int32"})
    local w = dist.all_reduce(t, {op = "max", group = g, async_op = true})
    if me then w:wait() else eq(w, nil, "a non-member's async all_reduce gives nil") end
    eq(t:item(), me and max or r + 1, "all_reduce max in group " .. i)
  end
end)

check("broadcast from each member (global src) within each group", function()
  for i, ranks in ipairs(GROUPS) do
    local g, me = groups[i], member_of(ranks)
    for _, src in ipairs(ranks) do
      local t = ember.tensor({r + 1, r + 2})
      dist.broadcast(t, src, {group = g})
      list_eq(values(t), me and {src + 1, src + 2} or {r + 1, r + 2}, "broadcast from " .. src .. " in group " .. i)
    end
  end
end)

check("all_gather, all_gather_into_tensor: one block per member, in group-rank order", function()
  for i, ranks in ipairs(GROUPS) do
    local g, me = groups[i], member_of(ranks)
    local t = f32({r + 1, -(r + 1)})
    local list = {}
    for j = 1, #ranks do list[j] = ember.zeros(2) end
    dist.all_gather(list, t, {group = g})
    local flat, want = {}, {}
    for j, q in ipairs(ranks) do
      for _, v in ipairs(values(list[j])) do flat[#flat + 1] = v end
      want[#want + 1], want[#want + 2] = q + 1, -(q + 1)
    end
    if me then list_eq(flat, want, "all_gather in group " .. i)
    else list_eq(flat, (function() local z = {} for k = 1, 2 * #ranks do z[k] = 0 end return z end)(),
                 "a non-member's all_gather list") end
    local out = ember.zeros(#ranks * 2)
    dist.all_gather_into_tensor(out, t, {group = g})
    if me then list_eq(values(out), want, "all_gather_into_tensor in group " .. i) end
    if me and #ranks > 1 then
      raises(function() dist.all_gather({ember.zeros(2)}, t, {group = g}) end, "all_gather: the output list has 1 " ..
             "tensors, expected " .. #ranks .. " %(the group size%)", "all_gather with a world-size list")
    end
  end
end)

check("reduce_scatter, reduce_scatter_tensor, reduce (global dst) within each group", function()
  for i, ranks in ipairs(GROUPS) do
    local g, me = groups[i], member_of(ranks)
    local k = #ranks
    -- member block j of rank q: 10 * (q + 1) + j
    local ins, flat = {}, {}
    for j = 0, k - 1 do
      ins[j + 1] = ember.tensor({10 * (r + 1) + j})
      flat[j + 1] = 10 * (r + 1) + j
    end
    local want = me and 10 * HAND_SUM[i] + k * me
    local out = ember.tensor({-1})
    dist.reduce_scatter(out, ins, {group = g})
    eq(out:item(), want or -1, "reduce_scatter in group " .. i)
    out = ember.tensor({-1})
    dist.reduce_scatter_tensor(out, ember.tensor(flat), {group = g})
    eq(out:item(), want or -1, "reduce_scatter_tensor in group " .. i)
    local dst = ranks[#ranks]
    local t = ember.tensor({r + 1})
    dist.reduce(t, dst, {group = g})
    eq(t:item(), r == dst and HAND_SUM[i] or r + 1, "reduce to " .. dst .. " in group " .. i)
  end
end)

check("barrier and send/recv (global peers, any source) within each group", function()
  for i, ranks in ipairs(GROUPS) do
    local g, me = groups[i], member_of(ranks)
    eq(dist.barrier({group = g}), nil, "barrier")
    local k = #ranks
    if me and k > 1 then
      local to, from = ranks[(me + 1) % k + 1], ranks[(me - 1) % k + 1]
      local w = dist.isend(f32({r * 10 + i}), to, {group = g, tag = i})
      local t = ember.zeros(1)
      eq(dist.recv(t, from, {group = g, tag = i}), from, "recv returns the global src")
      w:wait()
      eq(t:item(), from * 10 + i, "ring payload in group " .. i)
      -- any source within the group: the lowest member gets one message from every other member
      if me == 0 then
        local seen = {}
        for _ = 2, k do
          local u = ember.zeros(1)
          local src = dist.recv(u, nil, {group = g, tag = 100 + i})
          eq(u:item(), src, "any-source payload in group " .. i)
          seen[#seen + 1] = src
        end
        table.sort(seen)
        list_eq(seen, {table.unpack(ranks, 2)}, "any-source senders (global ranks) in group " .. i)
      else
        dist.send(f32({r}), ranks[1], {group = g, tag = 100 + i})
      end
      local u = ember.zeros(1)
      if me == 0 then
        local wr = dist.irecv(u, nil, {group = g, tag = 200 + i})
        wr:wait()
        eq(wr:_source_rank(), ranks[2], "irecv's _source_rank is global in group " .. i)
      elseif me == 1 then
        dist.send(f32({r}), ranks[1], {group = g, tag = 200 + i})
      end
    elseif not me then
      -- a non-member: nothing runs, as in PyTorch
      local t = ember.tensor({5})
      eq(dist.recv(t, ranks[1], {group = g}), -1, "a non-member's recv returns -1")
      eq(dist.isend(t, ranks[1], {group = g}), nil, "a non-member's isend gives nil")
      eq(t:item(), 5, "a non-member's tensor")
    end
  end
end)

check("bad input: clear errors naming the op", function()
  local g = groups[1]
  raises(function() return dist.new_group({0, n}) end, "new_group: rank " .. n .. " out of range: ranks are 0%-based, 0%.%." ..
         n - 1 .. " for world size " .. n, "a rank out of range")
  raises(function() return dist.new_group({1, 0, 1}) end, "new_group: rank 1 is listed twice", "duplicates")
  raises(function() return dist.new_group("0,1") end, "new_group: ranks must be a list of integer ranks", "not a table")
  raises(function() return dist.new_group({0, 1.5}) end, "new_group: ranks%[2%] must be an integer rank %(0%-based%), got 1.5", "not integers")
  raises(function() return dist.new_group({0}, {backend = "gloo"}) end, "new_group: unknown backend 'gloo'", "bad backend")
  raises(function() return dist.new_group({0}, {backend = "nccl"}) end, "new_group: backend 'nccl' needs a default " ..
         "group made with backend 'nccl'", "nccl over an mpi world")
  raises(function() dist.all_reduce(ember.ones(1), {group = "g"}) end, "all_reduce: group must be a process group",
         "a string group")
  -- src/dst outside the group (every rank checks before communicating)
  local outside = n - 1     -- rank 1 (n = 2) or 3 (n = 4) is not in group {0, 1}... for n = 4
  if n == 4 then
    raises(function() dist.broadcast(ember.ones(1), 2, {group = g}) end, "broadcast: src rank 2 is not in the " ..
           "process group %(its ranks: 0, 1%); src is a global rank", "src outside the group")
    raises(function() dist.reduce(ember.ones(1), outside, {group = g}) end, "reduce: dst rank 3 is not in the process group",
           "dst outside the group")
    raises(function() dist.send(ember.ones(1), 3, {group = g}) end, "send: dst rank 3 is not in the process group", "send outside")
  end
  raises(function() dist.broadcast(ember.ones(1), n, {group = g}) end, "broadcast: src rank " .. n .. " out of range", "src out of range")
  -- a destroyed group
  local d = dist.new_group({0})
  dist.destroy_process_group(d)
  raises(function() dist.all_reduce(ember.ones(1), {group = d}) end, "all_reduce: the process group was destroyed", "a destroyed group")
  raises(function() return dist.get_rank(d) end, "get_rank: the process group was destroyed", "get_rank of a destroyed group")
  raises(function() dist.destroy_process_group(d) end, "destroy_process_group: the process group was already destroyed",
         "destroyed twice")
  eq(tostring(d), "ProcessGroup(destroyed)", "tostring of a destroyed group")
  eq(tostring(g), "ProcessGroup(ranks = {0, 1})", "tostring")
end)

if n == 4 then
  -- DDP over {0, 1} and {2, 3} at once: each pair must train as one process on the pair's whole batch
  -- (the mean of its two equal shares), from the model of the pair's lowest rank, and the other
  -- pair's different data must not leak in. The references are computed on every rank, alone.
  local nn = ember.nn
  local function mlp(seed)
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3)):double()
  end
  local function batch(pair, step)
    ember.manual_seed(100 * pair + step)
    return ember.randn(8, 5, {dtype = "float64"}), ember.randint(1, 4, {8})
  end
  local ce = nn.CrossEntropyLoss()
  local STEPS = 10
  local function train(model, pair, rows_of)
    local opt = ember.optim.SGD(model:parameters(), {lr = 0.2, momentum = 0.9})
    for step = 1, STEPS do
      local x, y = batch(pair, step)
      x, y = rows_of(x), rows_of(y)
      opt:zero_grad()
      ce(model(x), y):backward()
      opt:step()
    end
    local out = {}
    for i, p in ipairs(model:parameters()) do out[i] = p:detach():clone() end
    return out
  end
  check("DistributedDataParallel with process_group: two pairs of ranks train apart, as one process each", function()
    local pairs_ = {dist.new_group({0, 1}), dist.new_group({2, 3})}
    local pair = r < 2 and 1 or 2
    local g = pairs_[pair]
    local me = dist.get_rank(g)
    local ddp = nn.parallel.DistributedDataParallel(mlp(7 + r), {process_group = g})
    -- at wrap, the pair's lowest rank's parameters (rank 0 or 2)
    local lowest = mlp(7 + (pair - 1) * 2)
    for i, p in ipairs(ddp.module:parameters()) do
      if not ember.equal(p, lowest:parameters()[i]) then fail("parameter " .. i .. " at wrap is not the lowest rank's") end
    end
    local got = train(ddp, pair, function(t) return t:narrow(1, me * 4 + 1, 4) end)
    for q = 1, 2 do
      local want = train(mlp(7 + (q - 1) * 2), q, function(t) return t end)
      if q == pair then
        for i = 1, #want do
          local d = (got[i] - want[i]):abs():max():item()
          if not (d <= 1e-12) then fail(string.format("pair %d, parameter %d: differs by %.3g", q, i, d)) end
        end
      else
        local d = (got[1] - want[1]):abs():max():item()
        if d < 1e-6 then fail("pair " .. pair .. " ended at the other pair's parameters") end
      end
    end
    eq(tostring(ddp):find("world_size=2", 1, true) ~= nil, true, "extra_repr names the group's size")
    local other = pairs_[3 - pair]
    raises(function() return nn.parallel.DistributedDataParallel(mlp(1), {process_group = other}) end,
           "DistributedDataParallel: this process %(rank " .. r .. "%) is not in process_group", "wrap by a non-member")
    for _, pg in ipairs(pairs_) do dist.destroy_process_group(pg) end
  end)
end

check("debug checks per group: members compare, a mismatch is an error on every member", function()
  for _, g in ipairs(groups) do dist.destroy_process_group(g) end
  dist.destroy_process_group()
  dist.init_process_group({debug = true})
  local g = dist.new_group({0, 1})
  local other = dist.new_group(n == 4 and {2, 3} or {1})
  if r <= 1 then
    local t = ember.ones(2)
    dist.all_reduce(t, {group = g})
    list_eq(values(t), {2, 2}, "debug all_reduce in {0, 1}")
    -- rank 1 reduces a longer tensor: both members say so
    raises(function() dist.all_reduce(ember.ones(r + 1), {group = g}) end, "all_reduce #2: ranks disagree: rank 0 passed all_reduce%(float32 %[1%], sum%); rank 1 passed " ..
           "all_reduce%(float32 %[2%], sum%)",
           "mismatched shapes in {0, 1}")
  end
  if dist.get_rank(other) >= 0 then
    local t = ember.ones(1)
    dist.all_reduce(t, {group = other})
    eq(t:item(), dist.get_world_size(other), "debug all_reduce in the other group")
  end
end)

T.finish()
