-- schedulers_spec.lua — ember.optim.lr_scheduler against torch 1.13's lr (and
-- momentum / beta1) sequences (scripts/fixtures/make_optim_fixtures.py ->
-- fixtures/optim_schedulers.lua); state_dict round trips; bad options.
local ember = require "ember"
local optim = ember.optim
local L = optim.lr_scheduler
local H = require "helpers"
local FX = require "fixtures.optim_schedulers"

-- the fixture's lambdas, by name
local LAMBDAS = {
  pow095 = function(e) return 0.95 ^ e end,
  inv = function(e) return 1.0 / (1 + 0.5 * e) end,
  mul = function(e) return e % 3 == 0 and 0.9 or 1.0 end,
  mul2 = function() return 0.97 end,
}

local function make_opt(kind)
  local a = ember.zeros(3, {dtype = "float64"}):requires_grad_()
  local b = ember.zeros(2, {dtype = "float64"}):requires_grad_()
  local groups = {{params = {a}, lr = 0.1}, {params = {b}, lr = 0.02}}
  if kind == "sgd" then return optim.SGD(groups, {lr = 1.0, momentum = 0.9}) end
  return optim.Adam(groups, {lr = 1.0})
end

local function make_sched(opt, cls, opts)
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  if cls == "LambdaLR" or cls == "MultiplicativeLR" then
    local f = o.lr_lambda
    if type(f) == "table" then
      local fs = {}
      for i, n in ipairs(f) do fs[i] = LAMBDAS[n] end
      o.lr_lambda = fs
    else
      o.lr_lambda = LAMBDAS[f]
    end
  end
  if cls == "SequentialLR" or cls == "ChainedScheduler" then
    local subs = {}
    for i, s in ipairs(o.subs) do subs[i] = make_sched(opt, s[1], s[2]) end
    o.subs = nil
    if cls == "ChainedScheduler" then return L.ChainedScheduler(subs) end
    o.schedulers = subs
  end
  return L[cls](opt, o)
end

local function momenta(opt)
  local out = {}
  for i, g in ipairs(opt.param_groups) do out[i] = g.betas and g.betas[1] or g.momentum end
  return out
end

local function close(got, want, what)
  assert.are.equal(#want, #got, what)
  for s = 1, #want do
    for i = 1, #want[s] do
      local a, b = got[s][i], want[s][i]
      assert(math.abs(a - b) <= 1e-13 * math.max(1, math.abs(b)),
             string.format("%s %d, group %d: got %.17g, torch %.17g", what, s, i, a, b))
    end
  end
end

local function run(opt, s, n)
  local lrs, moms = {}, {}
  for i = 1, n do
    opt:step()
    s:step()
    lrs[i], moms[i] = s:get_last_lr(), momenta(opt)
  end
  return lrs, moms
end

describe("schedulers match torch.optim.lr_scheduler", function()
  for _, case in ipairs(FX.cases) do
    it(case.name .. " (" .. case.cls .. ")", function()
      local opt = make_opt(case.kind)
      local s = make_sched(opt, case.cls, case.opts)
      local lrs, moms = run(opt, s, 30)
      table.insert(lrs, 1, s.get_last_lr and case.lrs[1])
      table.insert(moms, 1, case.momenta[1])
      close(lrs, case.lrs, "lr at step")
      close(moms, case.momenta, "momentum at step")
    end)
  end

  it("the value after construction matches too", function()
    for _, case in ipairs(FX.cases) do
      local opt = make_opt(case.kind)
      local s = make_sched(opt, case.cls, case.opts)
      close({s:get_last_lr()}, {case.lrs[1]}, case.name)
      close({momenta(opt)}, {case.momenta[1]}, case.name .. " momentum")
    end
  end)

  it("CosineAnnealingWarmRestarts takes fractional epochs in step(epoch)", function()
    for _, c in ipairs(FX.warm_restarts_epochs.cases) do
      local opt = make_opt("sgd")
      local s = L.CosineAnnealingWarmRestarts(opt, c.opts)
      local lrs = {s:get_last_lr()}
      for _, e in ipairs(FX.warm_restarts_epochs.epochs) do
        opt:step()
        s:step(e)
        lrs[#lrs + 1] = s:get_last_lr()
      end
      for _ = 1, 3 do
        s:step()
        lrs[#lrs + 1] = s:get_last_lr()
      end
      close(lrs, c.lrs, "T_0 = " .. c.opts.T_0)
    end
  end)

  it("ReduceLROnPlateau follows the metric", function()
    for _, c in ipairs(FX.plateau.cases) do
      local opt = make_opt("sgd")
      local s = L.ReduceLROnPlateau(opt, c.opts)
      local lrs = {}
      for i, m in ipairs(FX.plateau.metrics) do
        s:step(i % 2 == 0 and ember.tensor(m, {dtype = "float64"}) or m)
        lrs[i] = s:get_last_lr()
      end
      close(lrs, c.lrs, c.name)
    end
  end)
end)

describe("scheduler state_dict", function()
  for _, case in ipairs(FX.cases) do
    it(case.name .. ": resuming after 7 steps equals running straight through", function()
      local opt = make_opt(case.kind)
      local s = make_sched(opt, case.cls, case.opts)
      run(opt, s, 7)
      local sd, fsd, osd = s:state_dict(), s:state_dict_flat(), opt:state_dict()
      for k, v in pairs(fsd) do assert.are.equal("string", type(v), k) end
      for _, form in ipairs({"table", "flat"}) do
        local opt2 = make_opt(case.kind)
        local s2 = make_sched(opt2, case.cls, case.opts)
        opt2:load_state_dict(osd)
        if form == "table" then s2:load_state_dict(sd) else s2:load_state_dict_flat(fsd) end
        assert.are.same(s:get_last_lr(), s2:get_last_lr())
        local a = run(opt2, s2, 10)
        local want = {}
        for i = 1, 10 do want[i] = case.lrs[8 + i] end
        close(a, want, form .. " lr at step")
      end
    end)
  end

  it("leaves the lambdas out, as PyTorch does", function()
    local opt = make_opt("sgd")
    local s = L.LambdaLR(opt, {lr_lambda = LAMBDAS.pow095})
    local sd = s:state_dict()
    assert.is_nil(sd.lr_lambdas)
    assert.are.equal(0, sd.last_epoch)
  end)

  it("goes through a checkpoint with a composite scheduler", function()
    local opt = make_opt("sgd")
    local function sched(o)
      return L.SequentialLR(o, {schedulers = {L.LinearLR(o, {start_factor = 0.1, total_iters = 4}),
                                              L.ExponentialLR(o, {gamma = 0.9})}, milestones = {5}})
    end
    local s = sched(opt)
    run(opt, s, 3)
    local path = os.tmpname()
    ember.save_checkpoint(path, {optimizer = opt, scheduler = s})
    local want = run(opt, s, 6)
    local opt2 = make_opt("sgd")
    local s2 = sched(opt2)
    ember.load_checkpoint(path, {optimizer = opt2, scheduler = s2})
    os.remove(path)
    assert.are.same(want, (run(opt2, s2, 6)))
  end)
end)

describe("scheduler options", function()
  it("are checked with clear messages", function()
    local opt = make_opt("sgd")
    local adam = make_opt("adam")
    local cases = {
      {L.ReduceLROnPlateau, opt, {mode = "minimum"}, "ReduceLROnPlateau: invalid mode = minimum (expected one of \"min\", \"max\")"},
      {L.ReduceLROnPlateau, opt, {threshold_mode = "relative"}, "invalid threshold_mode = relative"},
      {L.ReduceLROnPlateau, opt, {factor = 1.0}, "ReduceLROnPlateau: invalid factor = 1.0"},
      {L.ReduceLROnPlateau, opt, {min_lr = {0.1}}, "expected 2 values for min_lr (one per parameter group), got 1"},
      {L.ReduceLROnPlateau, opt, {patiense = 3}, "ReduceLROnPlateau: unknown option 'patiense'"},
      {L.LambdaLR, opt, {lr_lambda = 0.5}, "LambdaLR: lr_lambda must be a function or a list of functions"},
      {L.LambdaLR, opt, {lr_lambda = {LAMBDAS.inv}}, "LambdaLR: expected 2 lr_lambdas (one per parameter group), got 1"},
      {L.MultiStepLR, opt, {milestones = {2.5}}, "MultiStepLR: milestones[1] must be an integer"},
      {L.ConstantLR, opt, {factor = 1.5}, "ConstantLR: invalid factor = 1.5"},
      {L.ExponentialLR, opt, {}, "ExponentialLR: gamma is required"},
      {L.PolynomialLR, opt, {total_iters = 0}, "PolynomialLR: invalid total_iters = 0"},
      {L.CosineAnnealingWarmRestarts, opt, {T_0 = 0}, "CosineAnnealingWarmRestarts: invalid T_0 = 0"},
      {L.CosineAnnealingWarmRestarts, opt, {T_0 = 2, T_mult = 1.5}, "invalid T_mult = 1.5"},
      {L.CyclicLR, opt, {base_lr = 0.1, max_lr = 1, mode = "sawtooth"}, "CyclicLR: invalid mode = sawtooth"},
      {L.CyclicLR, adam, {base_lr = 0.1, max_lr = 1}, "CyclicLR: the optimizer has no momentum to cycle"},
      {L.CyclicLR, opt, {max_lr = 1}, "CyclicLR: base_lr is required"},
      {L.OneCycleLR, opt, {max_lr = 0.1}, "OneCycleLR: give total_steps, or epochs and steps_per_epoch"},
      {L.OneCycleLR, opt, {max_lr = 0.1, total_steps = 10, anneal_strategy = "exp"}, "OneCycleLR: invalid anneal_strategy = exp"},
      {L.OneCycleLR, opt, {max_lr = 0.1, total_steps = -1}, "OneCycleLR: expected a positive integer total_steps"},
      {L.OneCycleLR, opt, {max_lr = 0.1, total_steps = 10, pct_start = 1.5}, "OneCycleLR: invalid pct_start = 1.5"},
      {L.SequentialLR, opt, {schedulers = {L.ExponentialLR(opt, {gamma = 0.9})}, milestones = {3}},
       "SequentialLR: expected 0 milestones (one fewer than the 1 schedulers), got 1"},
      {L.SequentialLR, opt, {schedulers = {L.ExponentialLR(adam, {gamma = 0.9})}, milestones = {}},
       "SequentialLR: all schedulers must belong to the same optimizer"},
    }
    for _, c in ipairs(cases) do
      H.has(H.err(c[1], c[2], c[3]), c[4])
    end
    H.has(H.err(L.ChainedScheduler, {5}), "ChainedScheduler: schedulers[1] is not a learning-rate scheduler")
    local p = L.ReduceLROnPlateau(opt)
    H.has(H.err(p.step, p, "x"), "ReduceLROnPlateau: step: argument 1: expected the metric")
    local oc = L.OneCycleLR(opt, {max_lr = 0.1, total_steps = 2})
    oc:step(); oc:step()
    H.has(H.err(oc.step, oc), "OneCycleLR: tried to step 4 times; the schedule has total_steps = 2")
    local w = L.CosineAnnealingWarmRestarts(opt, {T_0 = 3})
    H.has(H.err(w.step, w, -1), "CosineAnnealingWarmRestarts: step: expected a non-negative epoch")
  end)
end)
