-- optimizers_spec.lua — ember.optim's RMSprop, Adagrad, Adamax, NAdam, RAdam,
-- Adadelta, Rprop, LBFGS, and SGD/Adam/AdamW with nesterov, dampening, amsgrad and
-- maximize, against parameter trajectories made by torch 1.13
-- (scripts/fixtures/make_optim_fixtures.py -> fixtures/optim_optimizers.lua);
-- state_dict round trips; bad options.
local ember = require "ember"
local optim = ember.optim
local H = require "helpers"
local FX = require "fixtures.optim_optimizers"

local function params()
  return {ember.tensor(FX.p0[1], {dtype = "float64"}):requires_grad_(),
          ember.tensor(FX.p0[2], {dtype = "float64"}):reshape(2, 2):requires_grad_()}
end

local deep_copy = H.deep_copy

local function make(case, ps)
  if case.opts2 then
    local g2 = deep_copy(case.opts2)
    g2.params = {ps[2]}
    return optim[case.cls]({{params = {ps[1]}}, g2}, deep_copy(case.opts))
  end
  return optim[case.cls](ps, deep_copy(case.opts))
end

-- Runs steps first..last of the fixture's gradients; returns the flattened rows.
local function run(opt, ps, first, last)
  local rows = {}
  for s = first, last do
    ps[1].grad = ember.tensor(FX.grads[s][1], {dtype = "float64"})
    ps[2].grad = ember.tensor(FX.grads[s][2], {dtype = "float64"}):reshape(2, 2)
    opt:step()
    rows[#rows + 1] = {ps[1]:detach():tolist(), ps[2]:detach():reshape(-1):tolist()}
  end
  return rows
end

local function close(got, want, rtol)
  for s = 1, #got do
    for k = 1, 2 do
      for i = 1, #want[s][k] do
        local a, b = got[s][k][i], want[s][k][i]
        if math.abs(a - b) > rtol * math.max(1, math.abs(b)) then
          return false, string.format("step %d, parameter %d, element %d: got %.17g, torch %.17g", s, k, i, a, b)
        end
      end
    end
  end
  return true
end

describe("optimizers match torch.optim (float64)", function()
  for _, case in ipairs(FX.cases) do
    it(case.name .. " (" .. case.cls .. ")", function()
      local ps = params()
      local opt = make(case, ps)
      local ok, msg = close(run(opt, ps, 1, #FX.grads), case.traj, 1e-12)
      assert(ok, msg)
    end)
  end
end)

describe("optimizers state_dict", function()
  for _, case in ipairs(FX.cases) do
    it(case.name .. ": resuming after 4 steps from a saved state equals running straight through", function()
      local ps = params()
      local opt = make(case, ps)
      run(opt, ps, 1, 4)
      local sd = opt:state_dict()
      local tensors, meta = opt:state_dict_flat()
      local path = os.tmpname()
      ember.save(path, tensors, {metadata = meta})
      local at4 = {ps[1]:detach():tolist(), ps[2]:detach():tolist()}
      local copies = {}
      for _, form in ipairs({"table", "file"}) do
        local qs = {ember.tensor(at4[1], {dtype = "float64"}):requires_grad_(),
                    ember.tensor(at4[2], {dtype = "float64"}):requires_grad_()}
        local opt2 = make({cls = case.cls, opts = {lr = 123}, opts2 = case.opts2 and {lr = 7}}, qs)
        -- state_dict holds the live state tensors (as PyTorch's): load before stepping on
        if form == "table" then
          opt2:load_state_dict(sd)
        else
          local t2, m2 = ember.load(path)
          opt2:load_state_dict_flat(t2, m2)
        end
        copies[form] = {opt2, qs}
      end
      local want = run(opt, ps, 5, #FX.grads)
      for form, c in pairs(copies) do
        local ok, msg = close(run(c[1], c[2], 5, #FX.grads), want, 0)
        assert(ok, form .. ": " .. tostring(msg))
      end
      os.remove(path)
    end)
  end

  it("uses PyTorch's state names", function()
    local names = {
      RMSprop = {opts = {momentum = 0.5, centered = true}, keys = {"step", "square_avg", "momentum_buffer", "grad_avg"}},
      Adagrad = {opts = {}, keys = {"step", "sum"}},
      Adamax = {opts = {}, keys = {"step", "exp_avg", "exp_inf"}},
      NAdam = {opts = {}, keys = {"step", "mu_product", "exp_avg", "exp_avg_sq"}},
      RAdam = {opts = {}, keys = {"step", "exp_avg", "exp_avg_sq"}},
      Adadelta = {opts = {}, keys = {"step", "square_avg", "acc_delta"}},
      Rprop = {opts = {}, keys = {"step", "prev", "step_size"}},
      Adam = {opts = {amsgrad = true}, keys = {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}},
    }
    for cls, c in pairs(names) do
      local ps = params()
      local opt = optim[cls](ps, c.opts)
      run(opt, ps, 1, 1)
      local st = opt:state_dict().state[1]
      local n = 0
      for _ in pairs(st) do n = n + 1 end
      assert.are.equal(#c.keys, n, cls)
      for _, k in ipairs(c.keys) do assert(st[k] ~= nil, cls .. " has no " .. k) end
      assert.are.equal(1, st.step)
    end
  end)
end)

describe("optimizers in float32", function()
  it("keep float32 state and follow the float64 trajectory closely", function()
    for _, case in ipairs(FX.cases) do
      local ps = {ember.tensor(FX.p0[1], {dtype = "float32"}):requires_grad_(),
                  ember.tensor(FX.p0[2], {dtype = "float32"}):reshape(2, 2):requires_grad_()}
      local opt = make(case, ps)
      local rows = {}
      for s = 1, 3 do
        ps[1].grad = ember.tensor(FX.grads[s][1], {dtype = "float32"})
        ps[2].grad = ember.tensor(FX.grads[s][2], {dtype = "float32"}):reshape(2, 2)
        opt:step()
        rows[s] = {ps[1]:detach():tolist(), ps[2]:detach():reshape(-1):tolist()}
      end
      for _, st in pairs(opt.state) do
        for k, v in pairs(st) do
          if ember.is_tensor(v) then assert.are.equal("float32", v.dtype, case.name .. " " .. k) end
        end
      end
      local ok, msg = close(rows, case.traj, 1e-4)
      assert(ok, case.name .. ": " .. tostring(msg))
    end
  end)
end)

describe("optimizer options", function()
  local function p() return ember.tensor({1.0, 2.0}, {dtype = "float64"}):requires_grad_() end
  it("reject bad values with the option's name", function()
    local cases = {
      {optim.RMSprop, {lr = -0.1}, "RMSprop (group 1): invalid learning rate: lr = -0.1"},
      {optim.RMSprop, {alpha = -1}, "RMSprop (group 1): invalid alpha value: alpha = -1"},
      {optim.RMSprop, {momentum = -0.5}, "invalid momentum value: momentum = -0.5"},
      {optim.RMSprop, {centered = 1}, "RMSprop (group 1): centered must be a boolean, got number"},
      {optim.Adagrad, {lr_decay = -1}, "Adagrad (group 1): invalid lr_decay value"},
      {optim.Adagrad, {initial_accumulator_value = -1}, "invalid initial_accumulator_value"},
      {optim.Adagrad, {eps = -1}, "Adagrad (group 1): invalid epsilon value"},
      {optim.Adamax, {betas = {0.9, 1.0}}, "Adamax (group 1): invalid beta parameter: betas[2] = 1.0 (must be in [0, 1))"},
      {optim.NAdam, {betas = {-0.1, 0.9}}, "NAdam (group 1): invalid beta parameter: betas[1] = -0.1"},
      {optim.NAdam, {momentum_decay = -1}, "NAdam (group 1): invalid momentum_decay value"},
      {optim.NAdam, {decoupled_weight_decay = 1}, "NAdam (group 1): decoupled_weight_decay must be a boolean, got number"},
      {optim.RAdam, {maximize = "no"}, "RAdam (group 1): maximize must be a boolean, got string"},
      {optim.RAdam, {betas = {0.9}}, "RAdam (group 1): betas must be a list of two numbers"},
      {optim.RAdam, {weight_decay = -1}, "RAdam (group 1): invalid weight_decay"},
      {optim.Adadelta, {rho = 1.5}, "Adadelta (group 1): invalid rho value: rho = 1.5 (must be in [0, 1])"},
      {optim.Rprop, {etas = {1.5, 1.2}}, "Rprop (group 1): invalid eta values"},
      {optim.Rprop, {etas = 0.5}, "Rprop (group 1): etas must be a list of two numbers"},
      {optim.Rprop, {step_sizes = {1, 0.1}}, "Rprop (group 1): invalid step_sizes"},
      {optim.Rprop, {weight_decay = 0.1}, "Rprop: unknown option 'weight_decay'"},
      {optim.Adam, {amsgrad = "yes"}, "Adam (group 1): amsgrad must be a boolean, got string"},
      {optim.AdamW, {betas = {1.0, 0.999}}, "AdamW (group 1): invalid beta parameter: betas[1] = 1.0"},
      {optim.LBFGS, {lr = -1}, "LBFGS (group 1): invalid learning rate: lr = -1"},
      {optim.LBFGS, {line_search_fn = "armijo"}, "LBFGS (group 1): line_search_fn must be nil or \"strong_wolfe\""},
      {optim.LBFGS, {history_size = 0}, "LBFGS (group 1): invalid history_size"},
      {optim.Adafactor, {beta2_decay = 0.5}, "Adafactor (group 1): invalid beta2_decay: 0.5 (must be <= 0)"},
      {optim.Adafactor, {eps = 1e-3}, "Adafactor (group 1): eps must be a pair {eps1 (nil or false: the dtype's eps), eps2}"},
      {optim.Adafactor, {eps = {"a", 1e-3}}, "Adafactor (group 1): eps must be a pair"},
      {optim.Adafactor, {eps = {-1, 1e-3}}, "Adafactor (group 1): invalid epsilon1: eps[1] = -1 (must be >= 0)"},
      {optim.Adafactor, {eps = {false, -1}}, "Adafactor (group 1): invalid epsilon2: eps[2] = -1 (must be >= 0)"},
      {optim.Adafactor, {d = 0.5}, "Adafactor (group 1): invalid clipping threshold d: d = 0.5 (must be >= 1)"},
      {optim.Adafactor, {weight_decay = -1}, "Adafactor (group 1): invalid weight_decay value"},
      {optim.Adafactor, {maximize = 1}, "Adafactor (group 1): maximize must be a boolean, got number"},
      {optim.Adamax, {maximize = 1}, "Adamax (group 1): maximize must be a boolean, got number"},
    }
    for _, c in ipairs(cases) do
      H.has(H.err(c[1], {p()}, c[2]), c[3])
    end
  end)

  it("read the group's values at every step", function()
    local x = p()
    local opt = optim.RMSprop({x}, {lr = 0.1})
    x.grad = ember.tensor({1.0, 1.0}, {dtype = "float64"})
    opt.param_groups[1].lr = 0
    opt:step()
    assert.are.same({1.0, 2.0}, x:detach():tolist())
    opt.param_groups[1].lr = -1
    H.has(H.err(opt.step, opt), "RMSprop (group 1): invalid learning rate")
  end)

  it("skip parameters without gradients and accept a closure", function()
    local a, b = p(), p()
    local opt = optim.Adamax({a, b}, {lr = 0.1})
    local loss = opt:step(function()
      opt:zero_grad()
      local l = (a * a):sum()
      l:backward()
      return l
    end)
    assert.are.equal(5, loss:item())
    assert.are.same({1.0, 2.0}, b:detach():tolist())
    assert(a:detach():tolist()[1] < 1.0)
    assert.is_nil(opt.state[b])
  end)
end)

-- Rosenbrock's function written with ember ops (the fixture's closure).
local function rosenbrock(x)
  local x1, x2 = x:narrow(1, 1, 1), x:narrow(1, 2, 1)
  local a, b = 1 - x1, x2 - x1 * x1
  return (a * a + 100 * (b * b)):sum()
end

-- x (a float64 leaf from x0), an LBFGS over it with the case's options, and the closure
-- that evaluates Rosenbrock's function at x with fresh gradients
local function lbfgs_setup(case, x0)
  local x = ember.tensor(x0, {dtype = "float64"}):requires_grad_()
  local opt = optim.LBFGS({x}, deep_copy(case.opts))
  local function closure()
    opt:zero_grad()
    local l = rosenbrock(x)
    l:backward()
    return l
  end
  return x, opt, closure
end

describe("LBFGS", function()
  for _, case in ipairs(FX.lbfgs) do
    it(case.name .. " matches torch.optim.LBFGS on Rosenbrock's function", function()
      local x, opt, closure = lbfgs_setup(case, case.x0)
      for s = 1, #case.x do
        local loss = opt:step(closure)
        local got = x:detach():tolist()
        for i = 1, 2 do
          assert(math.abs(got[i] - case.x[s][i]) <= 1e-9 * math.max(1, math.abs(case.x[s][i])),
                 string.format("step %d x[%d]: got %.17g, torch %.17g", s, i, got[i], case.x[s][i]))
        end
        assert(math.abs(loss:item() - case.loss[s]) <= 1e-9 * math.max(1, case.loss[s]), "loss at step " .. s)
        assert.are.equal(case.func_evals[s], opt.state[x].func_evals)
      end
    end)
  end

  it("state_dict round trip continues the same trajectory", function()
    local case = FX.lbfgs[2]
    local function setup(x0) return lbfgs_setup(case, x0) end
    local x, opt, closure = setup(case.x0)
    for _ = 1, 3 do opt:step(closure) end
    local sd = opt:state_dict()
    local tensors, meta = opt:state_dict_flat()
    local path = os.tmpname()
    ember.save(path, tensors, {metadata = meta})
    local y, opt2, closure2 = setup(x:detach():tolist())
    opt2:load_state_dict(sd)
    local z, opt3, closure3 = setup(x:detach():tolist())
    local t3, m3 = ember.load(path)
    os.remove(path)
    opt3:load_state_dict_flat(t3, m3)
    for _ = 1, 3 do
      opt:step(closure)
      opt2:step(closure2)
      opt3:step(closure3)
    end
    assert.are.same(x:detach():tolist(), y:detach():tolist())
    assert.are.same(x:detach():tolist(), z:detach():tolist())
  end)

  it("needs a closure and one parameter group", function()
    local x = ember.tensor({1.0}, {dtype = "float64"}):requires_grad_()
    local opt = optim.LBFGS({x})
    H.has(H.err(opt.step, opt), "LBFGS: step: a closure")
    H.has(H.err(optim.LBFGS, {{params = {x}}, {params = {ember.zeros(1, {dtype = "float64"}):requires_grad_()}}}),
          "LBFGS doesn't support per-parameter options")
  end)
end)

describe("optimizer errors", function()
  it("point at the caller's line, however deep in the library the check runs", function()
    local p = ember.zeros(2, {dtype = "float64"}):requires_grad_()
    local cases = {
      {optim.Adam, {lr = -1}, "invalid learning rate"},
      {optim.SGD, {momentum = -1}, "invalid momentum"},
      {optim.RMSprop, {alpha = -1}, "invalid alpha"},
      {optim.Rprop, {etas = {2, 1}}, "invalid eta values"},
      {optim.LBFGS, {history_size = 0}, "invalid history_size"},
    }
    for _, c in ipairs(cases) do
      local msg = H.err(function() local o = c[1]({p}, c[2]); return o end)
      H.has(msg, "optimizers_spec.lua:", c[3])
    end
    local opt = optim.LBFGS({p})
    H.has(H.err(function() local r = opt:step(function() return "loss" end); return r end),
          "optimizers_spec.lua:", "the closure returned a string")
  end)
end)
