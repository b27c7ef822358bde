-- swa_utils_spec.lua — ember.optim.swa_utils: SWALR's learning rates and AveragedModel's weights
-- against PyTorch 2.15 (scripts/fixtures/make_swa_fixtures.py); the equal-weight average by
-- hand; buffers followed or averaged; update_bn's statistics against the cumulative average
-- of the batches' own; the errors.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn, optim = ember.nn, ember.optim
local swa = optim.swa_utils
local FX = h.fixture("swa_utils.lua")

local function t(v) return ember.tensor(v, {dtype = "float64"}) end
local function close(what, got, want, tol) h.check_flat(got, h.flat(want), what, tol or 1e-13) end

describe("SWALR against PyTorch 2.15", function()
  for name, want in pairs(FX.swalr) do
    it(name .. ": the learning rate of each group over 8 steps", function()
      local p1, p2 = ember.zeros(1, {requires_grad = true}), ember.zeros(1, {requires_grad = true})
      local opt = optim.SGD({{params = {p1}, lr = 0.5}, {params = {p2}, lr = 0.1}}, {lr = 0.5})
      local strategy, epochs = name:match("^(%a+)(%d)$")
      local swa_lr = name == "linear3" and {0.05, 0.2} or 0.05
      local s = swa.SWALR(opt, swa_lr, {anneal_epochs = tonumber(epochs), anneal_strategy = strategy})
      local got = {{opt.param_groups[1].lr, opt.param_groups[2].lr}}
      for _ = 1, 8 do
        opt:step()
        s:step()
        got[#got + 1] = {opt.param_groups[1].lr, opt.param_groups[2].lr}
      end
      assert(h.same(h.flat(got), h.flat(want), 1e-15), "lrs " .. h.show(h.flat(got)) .. " vs " .. h.show(h.flat(want)))
      assert.are.same(s:get_last_lr(), got[#got])
    end)
  end

  it("refuses what PyTorch refuses", function()
    local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1})
    has(err(function() local _ = swa.SWALR(opt, 0.05, {anneal_strategy = "exp"}) end),
        "SWALR: anneal_strategy must be one of 'cos' or 'linear', instead got exp", "swa_utils_spec.lua:")
    has(err(function() local _ = swa.SWALR(opt, 0.05, {anneal_epochs = -1}) end), "anneal_epochs must be equal or greater than 0")
    has(err(function() local _ = swa.SWALR(opt, {0.1, 0.2}) end), "SWALR: expected 1 values for swa_lr, got 2")
    has(err(function() local _ = swa.SWALR(opt, "x") end), "SWALR: swa_lr must be a number or a list of numbers, got string")
  end)
end)

-- a Linear(2, 1) in float64 whose weights step as the fixture's do, averaged after each step
local function run(kw)
  local lin = nn.Linear(2, 1, {dtype = "float64"})
  ember.no_grad(function()
    lin.weight:copy_(t({{1.0, -2.0}}))
    lin.bias:fill_(0.5)
  end)
  local avg = swa.AveragedModel(lin, kw)
  for k = 0, 3 do
    avg:update_parameters(lin)
    ember.no_grad(function()
      lin.weight:add_(t({{0.25 * (k + 1), 1.0}}))
      lin.bias:mul_(-1.5)
    end)
  end
  return avg, lin
end

describe("AveragedModel against PyTorch 2.15", function()
  it("the equal-weight average, an EMA (multi_avg_fn) and avg_fn", function()
    for name, kw in pairs({swa = nil, ema = {multi_avg_fn = swa.get_ema_multi_avg_fn(0.9)},
                           ema_avg_fn = {avg_fn = swa.get_ema_avg_fn(0.75)}}) do
      local avg = run(kw)
      close(name .. " weight", avg.module.weight, FX.averaged[name].weight)
      close(name .. " bias", avg.module.bias, FX.averaged[name].bias)
      assert.are.equal(4, avg.n_averaged:item())
    end
    -- the equal-weight average by hand: the mean of the four weights the model held
    local avg = run(nil)
    close("by hand", avg.module.weight, {(1 + 1.25 + 1.75 + 2.5) / 4, (-2 - 1 + 0 + 1) / 4})
  end)

  it("is a module: it runs its copy, saves n_averaged, keeps the model untouched", function()
    local avg, lin = run(nil)
    local x = t({{1.0, 1.0}})
    close("forward", avg(x), (x:matmul(avg.module.weight.mT) + avg.module.bias):tolist())
    assert.is_false(rawequal(avg.module.weight, lin.weight))
    local keys = {}
    for k in pairs(avg:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({"module.bias", "module.weight", "n_averaged"}, keys)
  end)

  it("follows the model's buffers, or averages them with use_buffers", function()
    local net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    local follow = swa.AveragedModel(net)
    local both = swa.AveragedModel(net, {use_buffers = true})
    follow:update_parameters(net)
    both:update_parameters(net)
    net(ember.randn(8, 2))
    follow:update_parameters(net)
    both:update_parameters(net)
    close("followed", follow.module[2].running_mean, net[2].running_mean:tolist(), 1e-7)
    -- averaged: the mean of the initial zeros and the model's new running mean
    close("averaged", both.module[2].running_mean, (net[2].running_mean / 2):tolist(), 1e-7)
  end)

  it("refuses both averaging functions, and decays outside [0, 1]", function()
    local lin = nn.Linear(2, 1)
    has(err(function() local _ = swa.AveragedModel(lin, {avg_fn = swa.get_swa_avg_fn(),
                                                         multi_avg_fn = swa.get_swa_multi_avg_fn()}) end),
        "only one of avg_fn and multi_avg_fn should be provided")
    has(err(function() local _ = swa.get_ema_multi_avg_fn(1.5) end), "invalid decay value 1.5")
    has(err(function() local _ = swa.AveragedModel(3) end), "AveragedModel: model must be a module, got number")
    has(err(function() local _ = swa.AveragedModel(lin, {avg_fn = 3}) end), "AveragedModel: avg_fn must be a function, got number")
    has(err(function() local _ = swa.AveragedModel(lin, {use_buffers = 1}) end), "use_buffers must be a boolean, got number")
    local avg = swa.AveragedModel(lin)
    has(err(function() avg:update_parameters(3) end), "update_parameters: model must be a module, got number")
    avg:update_parameters(lin)
    has(err(function() avg:update_parameters(nn.Linear(3, 1)) end),
        "update_parameters: tensor 1 has shape [1, 2] in the average and [1, 3] in the model", "swa_utils_spec.lua:")
    local bn = swa.AveragedModel(nn.BatchNorm1d(2))
    has(err(function() bn:update_parameters(nn.Sequential(nn.BatchNorm1d(2), nn.BatchNorm1d(2))) end),
        "update_parameters: the models have 3 and 6 buffers")
    has(err(function() swa.update_bn(5, nn.BatchNorm1d(2)) end),
        "update_bn: loader must be a DataLoader, a list of batches or an iterator, got number", "swa_utils_spec.lua:")
    has(err(function() swa.update_bn({}, 5) end), "update_bn: model must be a module, got number")
  end)
end)

describe("update_bn", function()
  it("recomputes BatchNorm's statistics as the cumulative average over the loader", function()
    ember.manual_seed(3)
    local net = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    net:eval()
    local batches = {ember.randn(6, 3), ember.randn(6, 3), ember.randn(6, 3)}
    swa.update_bn(batches, net)
    -- by hand: the mean of the batches' means and of their unbiased variances
    local means, vars = {}, {}
    for i, b in ipairs(batches) do
      local z = net[1](b):detach()
      means[i], vars[i] = z:mean(1), z:var(1)
    end
    close("running_mean", net[2].running_mean, ((means[1] + means[2] + means[3]) / 3):tolist(), 1e-6)
    close("running_var", net[2].running_var, ((vars[1] + vars[2] + vars[3]) / 3):tolist(), 1e-6)
    assert.is_false(net.training)
    assert.are.equal(0.1, net[2].momentum)
    -- a DataLoader gives its inputs (the first value of each batch)
    local ds = ember.data.TensorDataset(ember.randn(12, 3), ember.zeros(12))
    swa.update_bn(ember.data.DataLoader(ds, {batch_size = 4}), net)
    assert.are.equal(3, net[2].num_batches_tracked:item())
  end)
end)
