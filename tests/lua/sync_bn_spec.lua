-- sync_bn_spec.lua — nn.SyncBatchNorm in one process (no process group: batch normalisation
-- of any [N, C, ...] input, equal to BatchNorm's), convert_sync_batchnorm, printing and
-- errors. Its statistics across ranks are tested under mpirun by tests/shell/sync_bn_ranks.lua
-- (ddp_test.sh).
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn

local function first_line(m) return (tostring(m):match("^[^\n]*")) end

describe("nn.SyncBatchNorm in one process", function()
  it("is BatchNorm: outputs, gradients and running statistics, in training and evaluation", function()
    for _, shape in ipairs{{6, 3}, {4, 3, 5}, {2, 3, 4, 4}, {2, 3, 2, 2, 2}} do
      ember.manual_seed(1)
      local x = ember.randn(shape, {dtype = "float64"})
      local bn = nn["BatchNorm" .. math.max(#shape - 2, 1) .. "d"](3):double()
      local sync = nn.SyncBatchNorm(3):double()
      local xb, xs = x:clone():requires_grad_(), x:clone():requires_grad_()
      bn(xb):pow(2):sum():backward()
      sync(xs):pow(2):sum():backward()
      h.close_tensors("input gradient", xs.grad, xb.grad, 1e-12)
      h.close_tensors("weight gradient", sync.weight.grad, bn.weight.grad, 1e-12)
      h.close_tensors("running_var", sync.running_var, bn.running_var, 1e-12)
      bn:eval()
      sync:eval()
      h.close_tensors("eval output", sync(x), bn(x), 1e-12)
    end
  end)

  it("prints as BatchNorm does, under its own name", function()
    assert.equals("SyncBatchNorm(4, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)",
                  first_line(nn.SyncBatchNorm(4)))
    assert.equals("SyncBatchNorm(2, eps=0.001, momentum=0.1, affine=false, track_running_stats=true)",
                  first_line(nn.SyncBatchNorm(2, 1e-3, {affine = false})))
  end)

  it("convert_sync_batchnorm swaps every BatchNorm for one sharing its tensors", function()
    local inner = nn.Sequential(nn.Linear(2, 4), nn.BatchNorm1d(4))
    local m = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3, {momentum = 0.2}), nn.ReLU(), inner)
    m:eval()
    local w, rm = m[2].weight, m[2].running_mean
    local keys_before = {}
    for k in pairs(m:state_dict()) do keys_before[#keys_before + 1] = k end
    table.sort(keys_before)
    assert.equals(m, nn.SyncBatchNorm.convert_sync_batchnorm(m))
    assert.equals(nn.SyncBatchNorm, getmetatable(m[2]))
    assert.equals(nn.SyncBatchNorm, getmetatable(inner[2]))
    assert.equals(w, m[2].weight)
    assert.equals(rm, m[2].running_mean)
    assert.equals(0.2, m[2].momentum)
    assert.is_false(m[2].training)
    local keys_after = {}
    for k in pairs(m:state_dict()) do keys_after[#keys_after + 1] = k end
    table.sort(keys_after)
    assert.same(keys_before, keys_after)
    -- a BatchNorm given directly comes back converted
    assert.equals(nn.SyncBatchNorm, getmetatable(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3d(2))))
  end)

  it("refuses bad arguments and inputs", function()
    has(err(function() local s = nn.SyncBatchNorm(0); return s end), "sync_bn_spec.lua:",
        "SyncBatchNorm: num_features must be an integer >= 1")
    has(err(nn.SyncBatchNorm, 3, {process_group = 1}), "SyncBatchNorm: process_group must be a process group")
    has(err(nn.SyncBatchNorm, 3, {bogus = 1}), "SyncBatchNorm: unknown option 'bogus'")
    local s = nn.SyncBatchNorm(3)
    has(err(function() return s(ember.ones(3)) end), "expected at least a 2-D input, got [3]")
    has(err(function() return s(ember.ones(2, 4)) end), "expected 3 channels (dim 2) of the input, got [2, 4]")
    has(err(nn.SyncBatchNorm.convert_sync_batchnorm, 5), "convert_sync_batchnorm: expected a module, got number")
  end)
end)
