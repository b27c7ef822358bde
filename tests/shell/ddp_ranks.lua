-- ddp_ranks.lua — run by ddp_test.sh under mpirun with 2 ranks: nn.parallel.DistributedDataParallel
-- against one process training on the whole batch. The reference is computed on every rank, without
-- communication: the loss of the whole batch is the mean of the ranks' losses on their equal shares,
-- so 20 steps of DDP must end at the parameters of 20 single-process steps (float64, tight bounds).
-- Each group of checks ends with an all_reduce(MIN) of the pass flags; rank 0 prints one TAP line.
-- arg[1], when given, is a fixture of PyTorch's DDP over gloo (tests/lua/fixtures/ddp_torch.lua).
local dist = ember.distributed
local nn = ember.nn
local DDP = nn.parallel.DistributedDataParallel
dist.init_process_group()
local T = dofile((arg[0]:match("^(.*/)") or "./") .. "ranks_tap.lua")
local r, n, fail, group = T.rank, T.size, T.fail, T.group

-- the largest difference between two lists of tensors, relative to the larger magnitude
local function max_diff(a, b)
  local worst = 0
  for i = 1, #a do
    local d = (a[i] - b[i]):abs():max():item()
    local m = math.max(a[i]:abs():max():item(), 1e-300)
    worst = math.max(worst, d / m)
  end
  return worst
end

local function expect_close(got, want, tol, what)
  if #got ~= #want then return fail(string.format("%s: %d tensors, expected %d", what, #got, #want)) end
  local d = max_diff(got, want)
  if not (d <= tol) then fail(string.format("%s: relative difference %.3g > %.3g", what, d, tol)) end
end

local function clones(ts)
  local out = {}
  for i, t in ipairs(ts) do out[i] = t:detach():clone() end
  return out
end

local MLP = nn.Module:extend("MLP")
function MLP:init(d_in, d_hidden, d_out)
  self.fc1 = nn.Linear(d_in, d_hidden)
  self.fc2 = nn.Linear(d_hidden, d_hidden)
  self.fc3 = nn.Linear(d_hidden, d_out)
end
function MLP:forward(x) return self.fc3(self.fc2(self.fc1(x):tanh()):relu()) end

-- a model made from `seed` (float64)
local function mlp(seed, d_hidden)
  ember.manual_seed(seed)
  return MLP(6, d_hidden or 16, 3):double()
end

-- batch `step` of a fixed stream: inputs [rows, 6], class targets (1-based)
local function batch(step, rows)
  ember.manual_seed(1000 + step)
  local x = ember.randn(rows, 6, {dtype = "float64"})
  local y = ember.randint(1, 4, {rows})
  return x, y
end

local function share(t, q, parts)
  local rows = t.shape[1] // parts
  return t:narrow(1, q * rows + 1, rows)
end

local ce = nn.CrossEntropyLoss()

local OPTIMS = {
  SGD = function(ps) return ember.optim.SGD(ps, {lr = 0.1, momentum = 0.9}) end,
  AdamW = function(ps) return ember.optim.AdamW(ps, {lr = 0.01, weight_decay = 0.01}) end,
}

-- 20 steps of one process on the whole batch of 16 rows
local function reference(make_opt, steps, rows)
  local model = mlp(7)
  local opt = make_opt(model:parameters())
  for s = 1, steps do
    local x, y = batch(s, rows)
    opt:zero_grad()
    ce(model(x), y):backward()
    opt:step()
  end
  return model:parameters()
end

-- the same with DDP: each rank starts from its own initialisation (rank 0's wins) and trains on its share
local function with_ddp(make_opt, steps, rows, opts)
  local model = DDP(mlp(7 + 100 * r), opts)
  local opt = make_opt(model:parameters())
  for s = 1, steps do
    local x, y = batch(s, rows)
    opt:zero_grad()
    ce(model(share(x, r, n)), share(y, r, n)):backward()
    opt:step()
  end
  return model:parameters(), model
end

for _, name in ipairs({"SGD", "AdamW"}) do
  group("20 steps " .. name .. ": DDP on half batches = one process on the whole batch", function()
    local want = clones(reference(OPTIMS[name], 20, 16))
    local got = with_ddp(OPTIMS[name], 20, 16)
    expect_close(got, want, 1e-12, name)
    -- and the ranks agree exactly
    for i, p in ipairs(got) do
      local other = p:detach():clone()
      dist.broadcast(other, 0)
      if not ember.equal(other, p:detach()) then fail("parameter " .. i .. " differs from rank 0's") end
    end
  end)
end

group("the wrap broadcasts rank 0's parameters; names carry the module. prefix", function()
  local ref = mlp(7)
  local model = DDP(mlp(7 + 100 * r))
  expect_close(model:parameters(), ref:parameters(), 0, "after wrap")
  local names = {}
  for k in pairs(model:state_dict()) do names[#names + 1] = k end
  table.sort(names)
  local want = "module.fc1.bias module.fc1.weight module.fc2.bias module.fc2.weight module.fc3.bias module.fc3.weight"
  if table.concat(names, " ") ~= want then fail("state_dict keys: " .. table.concat(names, " ")) end
  -- the inner module's state dict loads into an unwrapped model
  local plain = mlp(3)
  plain:load_state_dict(model.module:state_dict())
  expect_close(plain:parameters(), ref:parameters(), 0, "module.state_dict into an unwrapped model")
end)

group("bucket_cap_mb: many small buckets give exactly the result of one bucket", function()
  local one, m1 = with_ddp(OPTIMS.AdamW, 10, 16, {bucket_cap_mb = 25})
  local many, m2 = with_ddp(OPTIMS.AdamW, 10, 16, {bucket_cap_mb = 0.0003})
  if #m1:bucket_sizes() ~= 1 then fail("25 MB: " .. #m1:bucket_sizes() .. " buckets, expected 1") end
  if #m2:bucket_sizes() < 4 then fail("0.0003 MB: only " .. #m2:bucket_sizes() .. " buckets") end
  -- reverse registration order: the first bucket starts with fc3's bias (3 elements)
  local sizes = m2:bucket_sizes()
  local total = 0
  for _, s in ipairs(sizes) do total = total + s end
  if total ~= m2:num_parameters() then fail("buckets hold " .. total .. " elements, the model " .. m2:num_parameters()) end
  for i = 1, #one do
    if not ember.equal(one[i]:detach(), many[i]:detach()) then fail("parameter " .. i .. " differs") end
  end
end)

group("no_sync: accumulated micro-batches, then one synchronised backward = the whole batch", function()
  -- reference: two micro-batches of 16 rows accumulated, one step
  local ref = mlp(7)
  local ropt = ember.optim.SGD(ref:parameters(), {lr = 0.1})
  local model = DDP(mlp(7 + 100 * r))
  local opt = ember.optim.SGD(model:parameters(), {lr = 0.1})
  for s = 1, 5 do
    local x1, y1 = batch(2 * s, 16)
    local x2, y2 = batch(2 * s + 1, 16)
    ropt:zero_grad()
    ce(ref(x1), y1):backward()
    ce(ref(x2), y2):backward()
    ropt:step()
    opt:zero_grad()
    model:no_sync(function() ce(model(share(x1, r, n)), share(y1, r, n)):backward() end)
    -- not averaged yet: each rank holds its own micro-batch's gradient
    local g = model.module.fc1.weight.grad:clone()
    local other = g:clone()
    dist.broadcast(other, 1)
    if r == 0 and ember.equal(g, other) then fail("step " .. s .. ": no_sync's backward communicated") end
    do
      local _ <close> = model:no_sync()
      if s == 1 then
        -- the guard form, and a forward after it is synchronised again
        local ok, err = pcall(model.no_sync, model, 42)
        if ok or not tostring(err):find("no_sync: expected a function or nothing, got number") then
          fail("no_sync(42): " .. tostring(err))
        end
      end
    end
    ce(model(share(x2, r, n)), share(y2, r, n)):backward()
    opt:step()
  end
  expect_close(model:parameters(), ref:parameters(), 1e-12, "after 5 accumulated steps")
end)

-- a model with a branch that a forward may skip
local Branchy = nn.Module:extend("Branchy")
function Branchy:init()
  self.trunk = nn.Linear(6, 8)
  self.a = nn.Linear(8, 3)
  self.b = nn.Linear(8, 3)
end
function Branchy:forward(x, use_b)
  local h = self.trunk(x):tanh()
  if use_b == "both" then return self.a(h) + self.b(h) end
  if use_b then return self.b(h) end
  return self.a(h)
end
local function branchy(seed)
  ember.manual_seed(seed)
  return Branchy():double()
end

group("find_unused_parameters: a branch no rank takes, and one only rank 1 takes", function()
  local model = DDP(branchy(3 + r), {find_unused_parameters = true})
  local ref = branchy(3)
  local x, y = batch(1, 16)
  -- 1: b is used by no rank: its .grad stays nil, the rest averaged
  ce(model(share(x, r, n)), share(y, r, n)):backward()
  ce(ref(x), y):backward()
  if model.module.b.weight.grad ~= nil then fail("b.weight.grad set though no rank used b") end
  expect_close({model.module.trunk.weight.grad, model.module.a.weight.grad},
               {ref.trunk.weight.grad, ref.a.weight.grad}, 1e-12, "used parameters")
  -- 2: rank q takes branch b when q is odd: the loss is the mean of the ranks' losses
  model:zero_grad()
  ref:zero_grad()
  ce(model(share(x, r, n), r % 2 == 1), share(y, r, n)):backward()
  local total
  for q = 0, n - 1 do
    local l = ce(ref(share(x, q, n), q % 2 == 1), share(y, q, n)) / n
    total = total and total + l or l
  end
  total:backward()
  local got, want = {}, {}
  for _, name in ipairs({"trunk", "a", "b"}) do
    got[#got + 1] = model.module[name].weight.grad
    want[#want + 1] = ref[name].weight.grad
  end
  expect_close(got, want, 1e-12, "some ranks use b")
end)

group("gradient_as_bucket_view: the same training; .grad are views of the bucket; unused .grad kept", function()
  local copies = with_ddp(OPTIMS.AdamW, 10, 16)
  local views, m = with_ddp(OPTIMS.AdamW, 10, 16, {gradient_as_bucket_view = true})
  for i = 1, #copies do
    if not ember.equal(copies[i]:detach(), views[i]:detach()) then fail("parameter " .. i .. " differs") end
  end
  local fc = m.module
  if not fc.fc1.weight.grad:is_view_of(fc.fc3.bias.grad) then fail("fc1.weight's and fc3.bias's .grad are apart") end
  -- zeroed in place, the views stay, and the next backward writes the bucket: one process's
  -- gradient on the whole batch from the same parameters
  ember.optim.SGD(m:parameters(), {lr = 0.1}):zero_grad(false)
  local x, y = batch(11, 16)
  ce(m(share(x, r, n)), share(y, r, n)):backward()
  if not fc.fc1.weight.grad:is_view_of(fc.fc3.bias.grad) then fail("the views were lost after zero_grad(false)") end
  local ref = mlp(1)
  ref:load_state_dict(fc:state_dict())
  ce(ref(x), y):backward()
  expect_close({fc.fc1.weight.grad, fc.fc2.bias.grad, fc.fc3.weight.grad},
               {ref.fc1.weight.grad, ref.fc2.bias.grad, ref.fc3.weight.grad}, 1e-12, "gradients in the views")
  -- a parameter no rank uses keeps its .grad (a view), as without views
  local b = DDP(branchy(3 + r), {find_unused_parameters = true, gradient_as_bucket_view = true})
  ce(b(share(x, r, n), "both"), share(y, r, n)):backward()
  local before = b.module.b.weight.grad:clone()
  ce(b(share(x, r, n), false), share(y, r, n)):backward()
  expect_close({b.module.b.weight.grad}, {before}, 0, "the unused branch's .grad")
  if not b.module.b.weight.grad:is_view_of(b.module.trunk.weight.grad) then fail("the unused .grad left its bucket") end
end)

group("without find_unused_parameters, an unused parameter is PyTorch's error with its names", function()
  local model = DDP(branchy(3))
  local x, y = batch(1, 16)
  local ok, err = pcall(function() ce(model(share(x, r, n)), share(y, r, n)):backward() end)
  local msg = tostring(err)
  if ok or not msg:find("Expected to have finished reduction in the prior iteration", 1, true) or
     not msg:find("find_unused_parameters = true", 1, true) or not msg:find("rank " .. r .. ": b.weight, b.bias", 1, true) then
    fail("no clear error: " .. msg)
  end
  if not msg:find("^[^:]*ddp_ranks.lua:%d+: DistributedDataParallel: Expected") then fail("position: " .. msg) end
  -- the wrapper is usable again: a forward that uses every parameter trains, averaged
  model:zero_grad()
  ce(model(share(x, r, n), "both"), share(y, r, n)):backward()
  local g = model.module.b.weight.grad:clone()
  local other = g:clone()
  dist.broadcast(other, 0)
  if not ember.equal(g, other) then fail("gradients not averaged after the error") end
end)

group("broadcast_buffers: rank 0's running statistics at wrap and before each forward", function()
  ember.manual_seed(5)
  local net = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4)):double()
  net[2].running_mean:fill_(r + 1)
  local model = DDP(net)
  local rm = net[2].running_mean:clone()
  if not ember.equal(rm, ember.ones(4, {dtype = "float64"})) then fail("running_mean after wrap: not rank 0's") end
  local x = batch(1, 16)
  model(share(x, r, n))              -- each rank updates its statistics from its own share
  local mine = net[2].running_mean:clone()
  model(share(x, r, n))              -- ... and the next forward starts from rank 0's again
  local zero = mine:clone()
  dist.broadcast(zero, 0)
  -- running_mean after the second forward = momentum update of rank 0's first-forward value
  local batch_mean = net[1](share(x, r, n)):mean(1):detach()
  local want = zero * 0.9 + batch_mean * 0.1
  expect_close({net[2].running_mean}, {want}, 1e-12, "second forward")
  local off = DDP(nn.Sequential(nn.BatchNorm1d(4)):double(), {broadcast_buffers = false})
  off.module[1].running_mean:fill_(r + 1)
  off:eval()
  off(ember.randn(4, 4, {dtype = "float64"}))
  if off.module[1].running_mean[1]:item() ~= r + 1 then fail("broadcast_buffers = false still broadcast") end
end)

group("ranks whose models differ get the same clear error (no hang)", function()
  local ok, err = pcall(DDP, mlp(7, r == 0 and 16 or 12))
  local msg = tostring(err)
  if ok or not msg:find("the ranks' models differ", 1, true) or
     not msg:find("parameter fc1.weight [16, 6] float64 on rank 0 but parameter fc1.weight [12, 6] float64 on rank 1",
                  1, true) then
    fail("shapes: " .. msg)
  end
  local m = mlp(7)
  if r == 1 then m.extra = nn.Parameter(ember.zeros(2, {dtype = "float64"})) end
  ok, err = pcall(DDP, m)
  msg = tostring(err)
  if ok or not msg:find("rank 0 has 6 parameters and buffers, rank 1 has 7", 1, true) then fail("count: " .. msg) end
  m = mlp(7)
  if r == 1 then m:float() end
  ok, err = pcall(DDP, m)
  msg = tostring(err)
  if ok or not msg:find("float64 on rank 0 but parameter", 1, true) or not msg:find("float32 on rank 1", 1, true) then
    fail("dtype: " .. msg)
  end
end)

if arg[1] then
  group("20 steps SGD and AdamW: the parameters PyTorch's DDP over gloo reaches", function()
    local fx = dofile(arg[1])
    for _, name in ipairs({"SGD", "AdamW"}) do
      local model = DDP(mlp(7 + 100 * r))
      -- after the wrap: every rank copies the same values
      for pname, p in model.module:named_parameters() do
        ember.no_grad(function() p:copy_(ember.tensor(fx.init[pname:gsub("%.", "_")], {dtype = "float64"})) end)
      end
      local opt = OPTIMS[name](model:parameters())
      for s = 1, #fx.batches do
        local x = ember.tensor(fx.batches[s].x, {dtype = "float64"})
        local y = ember.tensor(fx.batches[s].y, {dtype = "int64"})
        opt:zero_grad()
        ce(model(share(x, r, n)), share(y, r, n)):backward()
        opt:step()
      end
      local got, want = {}, {}
      for pname, p in model.module:named_parameters() do
        got[#got + 1] = p:detach()
        want[#want + 1] = ember.tensor(fx[name][pname:gsub("%.", "_")], {dtype = "float64"})
      end
      expect_close(got, want, 1e-10, name)
    end
  end)
end

T.finish()
dist.destroy_process_group()
