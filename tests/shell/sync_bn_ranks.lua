-- sync_bn_ranks.lua — run by ddp_test.sh under mpirun with 2 ranks: nn.SyncBatchNorm against
-- nn.BatchNorm on the whole batch, computed on every rank without communication. Each rank
-- holds an equal share of the batch; the loss is the sum over the whole batch of y * c (c a
-- fixed tensor), so SyncBatchNorm's output, its input's gradient and its running statistics
-- must equal BatchNorm's on the rank's rows, and the ranks' weight and bias gradients must
-- add up to BatchNorm's (float64, tight bounds).
local dist = ember.distributed
local nn = ember.nn
dist.init_process_group()
local T = dofile((arg[0]:match("^(.*/)") or "./") .. "ranks_tap.lua")
local r, n, fail = T.rank, T.size, T.fail

local function close(got, want, what, tol)
  local d = (got - want):abs():max():item()
  local m = math.max(want:abs():max():item(), 1)
  if not (d <= (tol or 1e-12) * m) then fail(string.format("%s: difference %.3g", what, d)) end
end

-- this rank's share of t along dim 1
local function share(t)
  local rows = t.shape[1] // n
  return t:narrow(1, r * rows + 1, rows)
end

local function check(what, shape, opts)
  ember.manual_seed(7)   -- the same data on every rank
  local x = ember.randn(shape, {dtype = "float64"}) * 3 + 5
  local c = ember.randn(shape, {dtype = "float64"})
  local C = shape[2]
  local bn = nn["BatchNorm" .. (#shape - 2 == 0 and 1 or #shape - 2) .. "d"](C, opts):double()
  local sync = nn.SyncBatchNorm(C, opts):double()
  if bn.weight then
    ember.no_grad(function()
      bn.weight:copy_(ember.linspace(0.5, 2, C, {dtype = "float64"}))
      bn.bias:copy_(ember.linspace(-1, 1, C, {dtype = "float64"}))
      sync.weight:copy_(bn.weight)
      sync.bias:copy_(bn.bias)
    end)
  end
  for step = 1, 2 do
    local xf = (x + step):requires_grad_()
    local yf = bn(xf)
    ;(yf * c):sum():backward()
    local xs = share(x + step):clone():requires_grad_()
    local ys = sync(xs)
    ;(ys * share(c)):sum():backward()
    close(ys, share(yf), what .. ": output, step " .. step)
    close(xs.grad, share(xf.grad), what .. ": input gradient, step " .. step)
  end
  if bn.running_mean then
    close(sync.running_mean, bn.running_mean, what .. ": running_mean")
    close(sync.running_var, bn.running_var, what .. ": running_var")
    if sync.num_batches_tracked:item() ~= 2 then fail(what .. ": num_batches_tracked") end
  end
  if bn.weight then
    local gw, gb = sync.weight.grad:clone(), sync.bias.grad:clone()
    dist.all_reduce(gw)
    dist.all_reduce(gb)
    close(gw, bn.weight.grad, what .. ": weight gradient summed over the ranks")
    close(gb, bn.bias.grad, what .. ": bias gradient summed over the ranks")
  end
  -- eval: the running statistics, no communication needed
  sync:eval()
  bn:eval()
  close(sync(share(x)), share(bn(x)), what .. ": eval output")
end

T.group("SyncBatchNorm against BatchNorm2d on the whole batch", function()
  check("[8, 3, 4, 5]", {8, 3, 4, 5})
end)
T.group("SyncBatchNorm of [N, C] and [N, C, L] inputs", function()
  check("[6, 4]", {6, 4})
  check("[4, 2, 7]", {4, 2, 7})
end)
T.group("SyncBatchNorm without affine, and with momentum = false (cumulative)", function()
  check("affine = false", {8, 3, 2, 2}, {affine = false})
  check("momentum = false", {8, 3, 2, 2}, {momentum = false})
end)
T.group("convert_sync_batchnorm keeps training a CNN as one process on the whole batch", function()
  local function model()
    ember.manual_seed(3)
    return nn.Sequential(nn.Conv2d(2, 4, 3, {padding = 1}), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 5 * 5, 3)):double()
  end
  ember.manual_seed(11)
  local x = ember.randn(8, 2, 5, 5, {dtype = "float64"})
  local y = ember.randint(1, 4, {8})
  local ref = model()
  local ddp = nn.parallel.DistributedDataParallel(nn.SyncBatchNorm.convert_sync_batchnorm(model()))
  local opt_ref = ember.optim.SGD(ref:parameters(), {lr = 0.1})
  local opt = ember.optim.SGD(ddp:parameters(), {lr = 0.1})
  for _ = 1, 3 do
    opt_ref:zero_grad()
    nn.functional.cross_entropy(ref(x), y):backward()
    opt_ref:step()
    opt:zero_grad()
    nn.functional.cross_entropy(ddp(share(x)), share(y)):backward()
    opt:step()
  end
  local a, b = ref:parameters(), ddp.module:parameters()
  for i = 1, #a do close(b[i], a[i], "parameter " .. i .. " after 3 steps", 1e-10) end
  close(ddp.module[2].running_mean, ref[2].running_mean, "running_mean after 3 steps")
end)
T.finish()
