-- optim_sweep_spec.lua — every option torch.optim documents for each optimizer ember
-- has, against PyTorch 2.15 (scripts/fixtures/make_optim_sweep_fixtures.py ->
-- fixtures/optim_sweep.lua and fixtures/optim_sweep_sd.pt): the parameters after each
-- of 8 steps in float64 and float32, the final state, two parameter groups, a
-- parameter without a gradient on some steps; state_dict round trips, PyTorch's own
-- state_dict loaded mid-run; options ember does not have, and misspelt ones, refused.
local ember = require "ember"
local optim = ember.optim
local H = require "helpers"
local FX = H.fixture("optim_sweep.lua")
-- the Adafactor cases, made apart on the same problem (make_optim_adafactor_fixtures.py)
for _, c in ipairs(H.fixture("optim_sweep_adafactor.lua").cases) do FX.cases[#FX.cases + 1] = c end

local function params(dtype, n)
  local ps = {ember.tensor(FX.p0[1], {dtype = dtype}):requires_grad_(),
              ember.tensor(FX.p0[2], {dtype = dtype}):reshape(2, 2):requires_grad_(),
              ember.tensor(FX.p0[3], {dtype = dtype}):requires_grad_()}
  if n then for i = n + 1, #ps do ps[i] = nil end end
  return ps
end

-- the parameters from flattened rows (a trajectory's entry)
local function params_at(row, dtype)
  return {ember.tensor(row[1], {dtype = dtype}):requires_grad_(),
          ember.tensor(row[2], {dtype = dtype}):reshape(2, 2):requires_grad_(),
          ember.tensor(row[3], {dtype = dtype}):requires_grad_()}
end

local function make(case, ps, opts)
  opts = H.deep_copy(opts or case.opts)
  if case.groups == "two" then
    local g2 = H.deep_copy(case.opts2)
    g2.params = {ps[2]}
    return optim[case.cls]({{params = {ps[1], ps[3]}}, g2}, opts)
  end
  return optim[case.cls](ps, opts)
end

-- Steps first..last with the fixture's gradients (false: no gradient); the flattened rows.
local function run(opt, ps, first, last, dtype)
  local rows = {}
  for s = first, last do
    for k = 1, 3 do
      local g = FX.grads[s][k]
      ps[k].grad = g and ember.tensor(g, {dtype = dtype}):reshape(ps[k].shape) or nil
    end
    opt:step()
    rows[#rows + 1] = {ps[1]:detach():reshape(-1):tolist(), ps[2]:detach():reshape(-1):tolist(),
                       ps[3]:detach():reshape(-1):tolist()}
  end
  return rows
end

-- |got - want| <= tol(want) for every element; the worst case named otherwise
local function within(what, got, want, tol)
  if type(want) == "number" then
    local t = tol(want)
    if not (math.abs(got - want) <= t) then
      return false, string.format("%s: got %.17g, torch %.17g (|diff| %.3g > %.3g)", what, got, want,
                                  math.abs(got - want), t)
    end
    return true
  end
  if type(got) ~= "table" or #got ~= #want then
    return false, string.format("%s: got %s, torch a list of %d", what, tostring(got), #want)
  end
  for i = 1, #want do
    local ok, msg = within(what .. "[" .. i .. "]", got[i], want[i], tol)
    if not ok then return false, msg end
  end
  return true
end

-- The steps ember runs as one engine op (SGD; Adam and AdamW without amsgrad) do
-- PyTorch's arithmetic operation for operation, fusing a multiply-add where PyTorch's
-- CPU kernels do (add with alpha, addcmul, lerp): the same bits, float64 and float32.
local FUSED = {SGD = true, Adam = true, AdamW = true}
local function fused(case) return FUSED[case.cls] and not case.opts.amsgrad end
local EXACT = function() return 0 end

-- The others are composed of tensor ops, each rounding once; PyTorch's CPU kernels fuse
-- the multiply-add inside addcmul, addcdiv, lerp and add with alpha (one rounding where
-- ember's tensor ops have two). float64: within 1e-14 relative (most elements agree to
-- the bit), 1e-15 absolute for an element that is a cancellation of larger ones (RMSprop's
-- centered momentum buffer meets 4.4e-16).
local TOL64 = function(b) return math.max(1e-14 * math.abs(b), 1e-15) end
local function tol64(case) return fused(case) and EXACT or TOL64 end

-- float32: 8 steps of those extra roundings stay within 2^-20 relative (8 ulps), or
-- 2^-22 absolute (2 ulps of the parameters, which are of order 1) for an element near
-- zero (RMSprop with momentum meets 1.1e-7 at 0.0082; AMSGrad's exp_avg 10 ulps of a
-- cancellation).
local function tol32(case)
  if fused(case) then return EXACT end
  return function(b) return math.max(2 ^ -20 * math.abs(b), 2 ^ -22) end
end

-- a state value as plain numbers: 0-d tensors as numbers, others flattened, lists of them
-- (LBFGS's history) element by element
local function plain(v)
  if ember.is_tensor(v) then return v.ndim == 0 and v:item() or v:detach():reshape(-1):tolist() end
  if type(v) == "table" then
    local out = {}
    for i, x in ipairs(v) do out[i] = plain(x) end
    return out
  end
  return v
end

local function state_of(opt)
  local out = {}
  for i, st in pairs(opt:state_dict().state) do
    local row = {}
    for k, v in pairs(st) do row[k] = plain(v) end
    out[i] = row
  end
  return out
end

-- the state (as state_of gives it) against the fixture's: the same parameters, names and values
local function check_state(what, got, want, tol)
  for i, w in pairs(want) do
    local g = got[i]
    assert(g ~= nil, string.format("%s: no state for parameter %d", what, i))
    for k, v in pairs(w) do
      assert(g[k] ~= nil, string.format("%s: parameter %d has no state '%s'", what, i, k))
      assert(within(string.format("%s: state %d %s", what, i, k), g[k], v, tol))
    end
    for k in pairs(g) do
      assert(w[k] ~= nil, string.format("%s: parameter %d has state '%s' PyTorch does not", what, i, k))
    end
  end
  for i in pairs(got) do assert(want[i] ~= nil, string.format("%s: state for parameter %d PyTorch has none", what, i)) end
end

-- each dtype: its trajectory, state and tolerance in the fixture
local DTYPES = {
  {"float64", "traj64", "state64", tol64},
  {"float32", "traj32", "state32", tol32},
}

for _, d in ipairs(DTYPES) do
  local dtype, traj, state, tol = d[1], d[2], d[3], d[4]
  describe("optimizer options match PyTorch 2.15 (" .. dtype .. ")", function()
    for _, case in ipairs(FX.cases) do
      it(case.name .. " (" .. case.cls .. ")", function()
        local ps = params(dtype)
        local opt = make(case, ps)
        local rows = run(opt, ps, 1, FX.steps, dtype)
        for s = 1, FX.steps do assert(within("step " .. s, rows[s], case[traj][s], tol(case))) end
        -- step counts are exact; the other state values as the parameters
        check_state(case.name, state_of(opt), case[state], tol(case))
        for _, st in pairs(opt.state) do
          for k, v in pairs(st) do
            if ember.is_tensor(v) then assert.are.equal(dtype, v.dtype, case.name .. " " .. k) end
          end
        end
      end)

      -- the per-parameter engine op (foreach = false) gives the multi-tensor step's bits
      if fused(case) then
        it(case.name .. " with foreach = false", function()
          local ps = params(dtype)
          local opts = H.deep_copy(case.opts)
          opts.foreach = false
          local opt = make(case, ps, opts)
          local rows = run(opt, ps, 1, FX.steps, dtype)
          for s = 1, FX.steps do assert(within("step " .. s, rows[s], case[traj][s], EXACT)) end
        end)
      end
    end
  end)
end

-- NAdam's mu_product and ASGD's eta and mu are rounded to the default dtype, as PyTorch's
-- 0-d tensors of it: under set_default_dtype("float64") they keep every bit
describe("optimizer scalar state under a float64 default dtype", function()
  for _, case in ipairs(FX.cases) do
    if case.traj64d then
      it(case.name .. " (" .. case.cls .. ")", function()
        local old = ember.get_default_dtype()
        ember.set_default_dtype("float64")
        local ok, err = pcall(function()
          local ps = params("float64")
          local opt = make(case, ps)
          local rows = run(opt, ps, 1, FX.steps, "float64")
          for s = 1, FX.steps do assert(within("step " .. s, rows[s], case.traj64d[s], TOL64)) end
          check_state(case.name, state_of(opt), case.state64d, TOL64)
        end)
        ember.set_default_dtype(old)
        assert(ok, err)
      end)
    end
  end
end)

describe("optimizer state_dict mid-run", function()
  local torch_sd = ember.load(H.FIXTURES .. "optim_sweep_sd.pt")
  for k, sd in pairs(ember.load(H.FIXTURES .. "optim_sweep_adafactor_sd.pt")) do torch_sd[k] = sd end
  for _, case in ipairs(FX.cases) do
    it(case.name .. ": saved after 3 steps and loaded into a fresh optimizer, continues the same", function()
      local ps = params("float64")
      local opt = make(case, ps)
      run(opt, ps, 1, FX.save_at, "float64")
      local sd = opt:state_dict()
      local qs = {}
      for k = 1, 3 do qs[k] = ps[k]:detach():clone():requires_grad_() end
      -- other hyper-parameters: the loaded groups replace them
      local opt2 = make(case, qs, {lr = 0.5})
      opt2:load_state_dict(sd)
      local want = run(opt, ps, FX.save_at + 1, FX.steps, "float64")
      local got = run(opt2, qs, FX.save_at + 1, FX.steps, "float64")
      assert.are.same(want, got)
    end)

    it(case.name .. ": PyTorch's state_dict after 3 steps loads and continues PyTorch's trajectory", function()
      local sd = torch_sd[case.name]
      assert(sd, "no saved state for " .. case.name)
      local qs = params_at(case.traj64[FX.save_at], "float64")
      local opt = make(case, qs, {lr = 0.5})
      opt:load_state_dict(sd)
      local rows = run(opt, qs, FX.save_at + 1, FX.steps, "float64")
      for s = FX.save_at + 1, FX.steps do
        assert(within("step " .. s, rows[s - FX.save_at], case.traj64[s], tol64(case)))
      end
      check_state(case.name, state_of(opt), case.state64, tol64(case))
    end)
  end
end)

-- LBFGS: the closure computes f(x) = sum_i c_i (x_i - t_i)^2 + x_i^4 / 4 over p1's and p2's
-- elements and its gradient with the operations the generator uses, the loss summed
-- left to right on the host, so both sides see the same bits.
local function lbfgs_setup(case, ps)
  local opt = optim.LBFGS(ps, H.deep_copy(case.opts))
  local c = ember.tensor(FX.lbfgs_c, {dtype = "float64"})
  local t = ember.tensor(FX.lbfgs_t, {dtype = "float64"})
  local sign = case.opts.maximize and -1.0 or 1.0
  local function closure()
    local x = ember.cat({ps[1]:detach():reshape(-1), ps[2]:detach():reshape(-1)})
    local e = x - t
    local terms = (c * (e * e)) + ((x * x) * (x * x)) * 0.25
    local grad = ((c * 2.0) * e + (x * x) * x) * sign
    local loss = 0.0
    for _, v in ipairs(terms:tolist()) do loss = loss + v end
    ps[1].grad = grad:narrow(1, 1, 3):clone()
    ps[2].grad = grad:narrow(1, 4, 4):reshape(2, 2):clone()
    return loss * sign
  end
  return opt, closure
end

local function lbfgs_rows(ps) return {ps[1]:detach():reshape(-1):tolist(), ps[2]:detach():reshape(-1):tolist()} end

-- LBFGS's dot products and norms are reductions, whose summation order may differ from
-- PyTorch's in the last bit, and the iterations feed them back (and into line-search
-- decisions). The parameters and losses agree within 1e-14 relative (1e-15 absolute);
-- the state within 1e-10 relative, 1e-13 absolute for values near zero: the loosest is
-- the history's ro = 1/(y.s) near convergence, where y.s cancels (6.8e-12 relative seen).
local TOL_LBFGS = function(b) return math.max(1e-10 * math.abs(b), 1e-13) end
local TRAJ_LBFGS = TOL64

describe("LBFGS options match PyTorch 2.15 (float64)", function()
  local torch_sd = ember.load(H.FIXTURES .. "optim_sweep_sd.pt")
  for _, case in ipairs(FX.lbfgs) do
    it(case.name, function()
      local ps = params("float64", 2)
      local opt, closure = lbfgs_setup(case, ps)
      for s = 1, case.steps do
        local loss = opt:step(closure)
        assert(within("step " .. s, lbfgs_rows(ps), case.traj64[s], TRAJ_LBFGS))
        assert(within("loss at step " .. s, loss, case.loss[s], TRAJ_LBFGS))
      end
      check_state(case.name, state_of(opt), case.state64, TOL_LBFGS)
    end)

    it(case.name .. ": PyTorch's state_dict after 3 steps loads and continues", function()
      if case.steps <= FX.save_at then return end
      local row = case.traj64[FX.save_at]
      local ps = {ember.tensor(row[1], {dtype = "float64"}):requires_grad_(),
                  ember.tensor(row[2], {dtype = "float64"}):reshape(2, 2):requires_grad_()}
      local opt, closure = lbfgs_setup(case, ps)
      opt:load_state_dict(torch_sd[case.name])
      for s = FX.save_at + 1, case.steps do
        opt:step(closure)
        assert(within("step " .. s, lbfgs_rows(ps), case.traj64[s], TRAJ_LBFGS))
      end
      check_state(case.name, state_of(opt), case.state64, TOL_LBFGS)
    end)

    it(case.name .. ": saved after 3 steps and loaded into a fresh LBFGS, continues the same", function()
      local ps = params("float64", 2)
      local opt, closure = lbfgs_setup(case, ps)
      for _ = 1, FX.save_at do opt:step(closure) end
      local sd = opt:state_dict()
      local qs = {ps[1]:detach():clone():requires_grad_(), ps[2]:detach():clone():requires_grad_()}
      local opt2, closure2 = lbfgs_setup({opts = {lr = 0.5}}, qs)
      opt2:load_state_dict(sd)
      for _ = 1, 2 do
        opt:step(closure)
        opt2:step(closure2)
        assert.are.same(lbfgs_rows(ps), lbfgs_rows(qs))
      end
    end)
  end
end)

-- Each optimizer's PyTorch 2.15 options that ember does not implement: PyTorch's default
-- (false) is accepted, so ported code that spells it out runs; anything else is refused
-- naming the option. A misspelt option is refused naming it.
local UNSUPPORTED = {
  SGD = {"differentiable"},
  Adam = {"differentiable"},
  AdamW = {"differentiable"},
  RMSprop = {"differentiable", "capturable"},
  Adagrad = {"differentiable"},
  Adadelta = {"differentiable", "capturable"},
  Adamax = {"differentiable", "capturable"},
  NAdam = {"differentiable", "capturable"},
  RAdam = {"differentiable", "capturable"},
  ASGD = {"differentiable", "capturable"},
  Rprop = {"differentiable", "capturable"},
  LBFGS = {},
}

local NO_CAPTURABLE = {SGD = true, Adagrad = true, LBFGS = true}
-- PyTorch's fused is SGD's, Adam's, AdamW's and Adagrad's only
local NO_FUSED = {RMSprop = true, Adadelta = true, Adamax = true, NAdam = true, RAdam = true, ASGD = true,
                  Rprop = true, LBFGS = true}

describe("optimizer options ember does not have", function()
  for cls, names in pairs(UNSUPPORTED) do
    it(cls .. ": refused naming them; PyTorch's default accepted", function()
      local p = ember.zeros(2, {dtype = "float64"}):requires_grad_()
      for _, k in ipairs(names) do
        local msg = H.err(function() local o = optim[cls]({p}, {[k] = true}); return o end)
        H.has(msg, "optim_sweep_spec.lua:")
        H.has(msg, cls .. ": " .. k .. " = true is not supported")
        local o = optim[cls]({p}, {[k] = false})
        assert.are.equal(cls, o._name)
        -- and in a group of its own
        msg = H.err(function() local q = optim[cls]({{params = {p}, [k] = true}}); return q end)
        H.has(msg, k .. " = true is not supported")
      end
      for _, k in ipairs({"lr_decayy", "weight_decey", "momentun", "bettas"}) do
        local msg = H.err(function() local o = optim[cls]({p}, {[k] = 1}); return o end)
        H.has(msg, "optim_sweep_spec.lua:")
        H.has(msg, cls .. ": unknown option '" .. k .. "'")
      end
      -- an option PyTorch's class does not take at all is unknown, false or not
      for k, set in pairs({capturable = NO_CAPTURABLE, fused = NO_FUSED}) do
        if set[cls] then
          H.has(H.err(function() local o = optim[cls]({p}, {[k] = false}); return o end),
                cls .. ": unknown option '" .. k .. "'")
        end
      end
    end)
  end

  it("AdamW's decay is decoupled: decoupled_weight_decay = false is refused, true (PyTorch saves it) taken", function()
    local p = ember.zeros(2, {dtype = "float64"}):requires_grad_()
    H.has(H.err(function() local o = optim.AdamW({p}, {decoupled_weight_decay = false}); return o end),
          "AdamW (group 1): decoupled_weight_decay = false is Adam's weight decay, not AdamW's (use optim.Adam)")
    assert.are.equal("AdamW", optim.AdamW({p}, {decoupled_weight_decay = true})._name)
    H.has(H.err(function() local o = optim.Adam({p}, {decoupled_weight_decay = 1}); return o end),
          "Adam (group 1): decoupled_weight_decay must be a boolean, got number")
  end)

  it("a PyTorch state_dict that turns on such an option is refused naming it", function()
    local p = ember.zeros(2, {dtype = "float64"}):requires_grad_()
    local opt = optim.RMSprop({p})
    local sd = opt:state_dict()
    sd.class = nil
    sd.param_groups[1].differentiable = true
    local msg = H.err(function() opt:load_state_dict(sd) end)
    H.has(msg, "optim_sweep_spec.lua:")
    H.has(msg, "differentiable = true is not supported")
    sd.param_groups[1].differentiable = false
    opt:load_state_dict(sd)
  end)
end)
