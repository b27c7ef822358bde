-- distributed_ranks.lua — run by distributed_test.sh under mpirun with 2 and 4 ranks: every
-- collective of ember.distributed against values computed here in plain Lua, for every dtype,
-- empty, small and larger sizes, contiguous and transposed (non-contiguous) tensors. Each group of
-- checks ends with one all_reduce(MIN) of the pass flags, and rank 0 prints one TAP line for it;
-- the failures themselves go to stderr, prefixed by the rank.
local dist = ember.distributed
dist.init_process_group({backend = "mpi"})
local T = dofile((arg[0]:match("^(.*/)") or "./") .. "ranks_tap.lua")
local r, n, fail, group = T.rank, T.size, T.fail, T.group

local DTYPES = {"float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool", "float16", "bfloat16"}
local FLOATS = {float32 = true, float64 = true, float16 = true, bfloat16 = true}
-- shapes, and whether the tensor is a transposed view of its base
local SHAPES = {{{0}}, {{1}}, {{7}}, {{250, 4}}, {{5, 3}, true}, {{0, 3}, true}, {{2, 2, 3}}}

local function numel(shape) local k = 1 for _, s in ipairs(shape) do k = k * s end return k end

-- the value of element i (0-based, in the row-major order of the shape) on rank q
local function value(dtype, q, i)
  if dtype == "bool" then return (q + i) % 3 ~= 0 end
  return (q + 1) * (1 + i % 3)
end

-- a tensor of `shape` holding f(i) in row-major order; transposed: the same values, through a
-- non-contiguous view
local function make(shape, transposed, dtype, f)
  local k = numel(shape)
  local vals = {}
  for i = 0, k - 1 do vals[i + 1] = f(i) end
  local t = k > 0 and ember.tensor(vals, {dtype = dtype}) or ember.zeros(0, {dtype = dtype})
  if not transposed then return t:reshape(shape) end
  -- the transposed base holds value i at the element that is i in the view
  local a, b = shape[1], shape[2]
  local base = ember.zeros(b, a, {dtype = dtype})
  local view = base:t()
  if k > 0 then view:copy_(t:reshape(shape)) end
  assert(not view:is_contiguous() or k == 0)
  return view
end

local function flat(t)
  local out = {}
  local c = t:contiguous():reshape(-1)
  for i, v in ipairs(c:tolist()) do out[i] = v end
  return out
end

local function close(dtype, got, want)
  if dtype == "bool" then return got == want end
  local tol = dtype == "float16" and 1e-3 * math.abs(want) or dtype == "bfloat16" and 8e-3 * math.abs(want) or 1e-9
  return math.abs(got - want) <= tol
end

local function expect(t, dtype, want, what)
  local got = flat(t)
  if #got ~= #want then return fail(string.format("%s: %d elements, expected %d", what, #got, #want)) end
  for i = 1, #want do
    if not close(dtype, got[i], want[i]) then
      return fail(string.format("%s: element %d is %s, expected %s", what, i, tostring(got[i]), tostring(want[i])))
    end
  end
end

local function reduce_values(dtype, op, i)
  local acc
  for q = 0, n - 1 do
    local v = value(dtype, q, i)
    if acc == nil then acc = v
    elseif dtype == "bool" then
      if op == "sum" or op == "max" then acc = acc or v else acc = acc and v end
    elseif op == "sum" or op == "avg" then acc = acc + v
    elseif op == "max" then acc = math.max(acc, v)
    elseif op == "min" then acc = math.min(acc, v)
    else acc = acc * v end
  end
  if op == "avg" then acc = acc / n end
  if dtype == "uint8" then acc = acc % 256 end
  if dtype == "int8" then acc = (acc + 128) % 256 - 128 end            -- two's complement wrap
  if dtype == "int16" then acc = (acc + 32768) % 65536 - 32768 end
  return acc
end

local function describe(dtype, shape, transposed)
  return string.format("%s [%s]%s", dtype, table.concat(shape, ","), transposed and " transposed" or "")
end

for _, dtype in ipairs(DTYPES) do
  group("all_reduce sum/avg/max/min/product " .. dtype, function()
    for _, op in ipairs({"sum", "avg", "max", "min", "product"}) do
      for _, s in ipairs(SHAPES) do
        local shape, tr = s[1], s[2]
        local t = make(shape, tr, dtype, function(i) return value(dtype, r, i) end)
        local what = op .. " " .. describe(dtype, shape, tr)
        if op == "avg" and not FLOATS[dtype] then
          local ok, err = pcall(dist.all_reduce, t, {op = op})
          if ok or not tostring(err):find("AVG needs a floating%-point tensor") then fail(what .. ": no clear error: " .. tostring(err)) end
        else
          dist.all_reduce(t, {op = dist.ReduceOp[op:upper()]})
          local want = {}
          for i = 0, numel(shape) - 1 do want[i + 1] = reduce_values(dtype, op, i) end
          expect(t, dtype, want, what)
        end
      end
    end
  end)
end

group("all_reduce async: wait, is_completed, op given positionally", function()
  for _, s in ipairs(SHAPES) do
    local t = make(s[1], s[2], "float32", function(i) return value("float32", r, i) end)
    local w = dist.all_reduce(t, {async_op = true})
    if not w then return fail("no work object") end
    w:wait()
    if not w:is_completed() then fail("is_completed false after wait") end
    local want = {}
    for i = 0, numel(s[1]) - 1 do want[i + 1] = reduce_values("float32", "sum", i) end
    expect(t, "float32", want, "async " .. describe("float32", s[1], s[2]))
  end
  local m = ember.tensor({r})
  dist.all_reduce(m, "max")
  expect(m, "float32", {n - 1}, "positional op")
  -- several in flight at once, completed in reverse order
  local ts, ws = {}, {}
  for k = 1, 3 do
    ts[k] = ember.full({4}, k * (r + 1))
    ws[k] = dist.all_reduce(ts[k], {async_op = true})
  end
  for k = 3, 1, -1 do
    ws[k]:wait()
    expect(ts[k], "float32", {k * n * (n + 1) / 2, k * n * (n + 1) / 2, k * n * (n + 1) / 2, k * n * (n + 1) / 2},
           "in flight " .. k)
  end
  local w = dist.all_reduce(ember.ones(3), {async_op = true})
  while not w:is_completed() do end
  if not tostring(w):find("completed") then fail("tostring: " .. tostring(w)) end
end)

for _, dtype in ipairs(DTYPES) do
  group("broadcast, reduce, send/recv " .. dtype, function()
    local src = n - 1
    for _, s in ipairs(SHAPES) do
      local shape, tr = s[1], s[2]
      local t = make(shape, tr, dtype, function(i) return value(dtype, r, i) end)
      dist.broadcast(t, src)
      local want = {}
      for i = 0, numel(shape) - 1 do want[i + 1] = value(dtype, src, i) end
      expect(t, dtype, want, "broadcast " .. describe(dtype, shape, tr))
      -- reduce to rank 1: only it changes
      local u = make(shape, tr, dtype, function(i) return value(dtype, r, i) end)
      local w = dist.reduce(u, 1, {op = "max", async_op = true})
      w:wait()
      for i = 0, numel(shape) - 1 do want[i + 1] = r == 1 and reduce_values(dtype, "max", i) or value(dtype, r, i) end
      expect(u, dtype, want, "reduce " .. describe(dtype, shape, tr))
      -- a ring: send to the next rank, receive from the previous
      local out = make(shape, tr, dtype, function(i) return value(dtype, r, i) end)
      local into = make(shape, tr, dtype, function() return dtype == "bool" and false or 0 end)
      local prev = (r - 1) % n
      local sw = dist.isend(out, (r + 1) % n, {tag = 7})
      local got = dist.recv(into, prev, {tag = 7})
      sw:wait()
      if got ~= prev then fail("recv returned " .. tostring(got)) end
      for i = 0, numel(shape) - 1 do want[i + 1] = value(dtype, prev, i) end
      expect(into, dtype, want, "send/recv " .. describe(dtype, shape, tr))
    end
  end)
end

for _, dtype in ipairs(DTYPES) do
  group("all_gather, all_gather_into_tensor, reduce_scatter(_tensor) " .. dtype, function()
    for _, s in ipairs(SHAPES) do
      local shape, tr = s[1], s[2]
      local t = make(shape, tr, dtype, function(i) return value(dtype, r, i) end)
      local outs = {}
      for q = 1, n do outs[q] = make(shape, not tr and #shape == 2, dtype, function() return dtype == "bool" and false or 0 end) end
      dist.all_gather(outs, t)
      local want = {}
      for q = 0, n - 1 do
        for i = 0, numel(shape) - 1 do want[i + 1] = value(dtype, q, i) end
        expect(outs[q + 1], dtype, want, "all_gather block " .. q .. " " .. describe(dtype, shape, tr))
      end
      -- into one tensor, stacked [n, ...] and concatenated [n * d1, ...]
      local stacked_shape = {n, table.unpack(shape)}
      local cat_shape = {n * shape[1], table.unpack(shape, 2)}
      for _, big in ipairs({stacked_shape, cat_shape}) do
        local out = make(big, false, dtype, function() return dtype == "bool" and false or 0 end)
        dist.all_gather_into_tensor(out, t, {async_op = true}):wait()
        local all = {}
        for q = 0, n - 1 do for i = 0, numel(shape) - 1 do all[#all + 1] = value(dtype, q, i) end end
        expect(out, dtype, all, "all_gather_into_tensor [" .. table.concat(big, ",") .. "]")
      end
      -- reduce_scatter: rank q's input block b holds value(q, i) + b; rank r gets block r summed
      if dtype ~= "bool" then
        local ins = {}
        for b = 0, n - 1 do ins[b + 1] = make(shape, tr, dtype, function(i) return value(dtype, r, i) + b end) end
        local out = make(shape, tr, dtype, function() return 0 end)
        dist.reduce_scatter(out, ins)
        for i = 0, numel(shape) - 1 do
          local acc = 0
          for q = 0, n - 1 do acc = acc + value(dtype, q, i) + r end
          want[i + 1] = dtype == "uint8" and acc % 256 or acc
        end
        expect(out, dtype, want, "reduce_scatter " .. describe(dtype, shape, tr))
        local flatin = ember.cat(ins, 1)
        local out2 = make(shape, tr, dtype, function() return 0 end)
        dist.reduce_scatter_tensor(out2, flatin, {op = "max"})
        for i = 0, numel(shape) - 1 do want[i + 1] = value(dtype, n - 1, i) + r end
        expect(out2, dtype, want, "reduce_scatter_tensor max " .. describe(dtype, shape, tr))
      end
    end
  end)
end

group("barrier, async barrier", function()
  dist.barrier()
  local w = dist.barrier({async_op = true})
  w:wait()
  if not w:is_completed() then fail("barrier work not completed") end
end)

group("bad arguments: clear errors, same on every rank", function()
  local function raises(pattern, fn, ...)
    local ok, err = pcall(fn, ...)
    if ok or not tostring(err):find(pattern) then fail("expected /" .. pattern .. "/, got " .. tostring(err)) end
  end
  raises("src rank " .. n .. " out of range: ranks are 0%-based, 0%.%." .. (n - 1), dist.broadcast, ember.ones(2), n)
  raises("dst rank %-1 out of range", dist.reduce, ember.ones(2), -1)
  raises("the output list has 1 tensors, expected " .. n, dist.all_gather, {ember.ones(2)}, ember.ones(2))
  local outs = {}
  for q = 1, n do outs[q] = ember.ones(3) end
  raises("an output tensor is float32 %[3%], expected float32 %[2%]", dist.all_gather, outs, ember.ones(2))
  outs[1] = ember.ones(2, {dtype = "int64"})
  raises("expected float32", dist.all_gather, outs, ember.ones(2))
  raises("the output is float32 %[5%]", dist.all_gather_into_tensor, ember.ones(5), ember.ones(2))
  raises("a rank cannot send itself", dist.send, ember.ones(2), r)
  raises("op must be one of", dist.all_reduce, ember.ones(2), {op = "mean"})
  raises("unknown option 'async'", dist.all_reduce, ember.ones(2), {async = true})
  raises("must be a tensor", dist.all_reduce, {1, 2})
  raises("already initialised", dist.init_process_group)
end)

-- async collectives run on MPI's communication thread, in the order the program started them;
-- a blocking collective or point-to-point call waits for them first
group("async collectives keep program order with blocking ones and point-to-point", function()
  local works, ts = {}, {}
  for i = 1, 8 do
    ts[i] = ember.full({4096 * i}, i * (r + 1))
    works[i] = dist.all_reduce(ts[i], {async_op = true})
  end
  local b = ember.ones(3)
  dist.all_reduce(b)
  for i = 8, 1, -1 do works[i]:wait() end
  local ranks_sum = n * (n + 1) // 2
  for i = 1, 8 do
    local lo, hi = ts[i]:min():item(), ts[i]:max():item()
    if lo ~= i * ranks_sum or hi ~= lo then fail(string.format("bucket %d: %g..%g, want %d", i, lo, hi, i * ranks_sum)) end
  end
  expect(b, "float32", {n, n, n}, "the blocking all_reduce after them")
  -- rank 0 waits for a message while its own async all_reduce may still be queued, and rank 1
  -- runs that all_reduce blocking before it sends: the wait must let the thread go on
  local big = ember.ones(1 << 20)
  if r == 0 then
    local w = dist.all_reduce(big, {async_op = true})
    local got = ember.zeros(4)
    dist.irecv(got, 1):wait()
    w:wait()
    expect(got, "float32", {7, 7, 7, 7}, "the message sent after the peer's all_reduce")
  else
    dist.all_reduce(big)
    if r == 1 then dist.send(ember.ones(4) * 7, 0) end
  end
  if big[1]:item() ~= n or big[-1]:item() ~= n then fail("the 4 MB all_reduce: " .. big[1]:item()) end
  -- is_completed turns true by itself once the thread has run the collective
  local w = dist.all_reduce(ember.ones(16), {async_op = true})
  local deadline = ember.wall_time() + 10
  while not w:is_completed() and ember.wall_time() < deadline do end
  if not w:is_completed() then fail("is_completed still false after 10 s") end
end)

-- with the debug check, ranks calling with different shapes get an error instead of a hang
group("debug check: a shape mismatch across ranks is an error", function()
  dist.destroy_process_group()
  dist.init_process_group({debug = true})
  local ok, err = pcall(dist.all_reduce, ember.ones(r == 0 and 2 or 3))
  if ok or not tostring(err):find("ranks disagree") then fail("no mismatch error: " .. tostring(err)) end
  local t = ember.ones(2)
  dist.all_reduce(t)
  expect(t, "float32", {n, n}, "after the mismatch")
  dist.destroy_process_group()
  dist.init_process_group()
end)

T.finish()
dist.destroy_process_group()
