-- optim_muon_spec.lua — optim.Muon against PyTorch 2.15 (scripts/fixtures/
-- make_optim_muon_fixtures.py -> fixtures/optim_muon.lua): a tall and a wide parameter over
-- 5 steps of fixed gradients, in float64 and float32, for Nesterov and plain momentum, each
-- adjust_lr_fn, other Newton-Schulz coefficients and steps; the momentum buffers; the
-- errors. The orthogonalisation runs in bfloat16 on both sides, whose matrix products
-- round differently (PyTorch's addmm rounds once, after the add), so each step's update
-- agrees to bfloat16's precision: the parameters within 0.02 * lr per step (measured: under
-- 0.01 * lr), far below what a wrong option changes (one of them fails by 0.2 * lr and more).
local ember = require "ember"
local optim = ember.optim
local H = require "helpers"
local FX = H.fixture("optim_muon.lua")

local function params(dtype)
  return {ember.tensor(FX.p0[1], {dtype = dtype}):reshape(3, 2):requires_grad_(),
          ember.tensor(FX.p0[2], {dtype = dtype}):reshape(2, 4):requires_grad_()}
end

local function run(case, dtype)
  local ps = params(dtype)
  local opt = optim.Muon(ps, H.deep_copy(case.opts))
  local rows = {}
  for s = 1, FX.steps do
    for k = 1, 2 do ps[k].grad = ember.tensor(FX.grads[s][k], {dtype = dtype}):reshape(ps[k].shape) end
    opt:step()
    rows[s] = {ps[1]:detach():reshape(-1):tolist(), ps[2]:detach():reshape(-1):tolist()}
  end
  return rows, opt, ps
end

local function worst(got, want)
  local w = 0
  for k = 1, #want do
    for i = 1, #want[k] do w = math.max(w, math.abs(got[k][i] - want[k][i])) end
  end
  return w
end

describe("optim.Muon against PyTorch 2.15", function()
  for _, case in ipairs(FX.cases) do
    for _, d in ipairs({{"float64", "traj64"}, {"float32", "traj32"}}) do
      it(case.name .. " (" .. d[1] .. ")", function()
        local rows, opt, ps = run(case, d[1])
        for s = 1, FX.steps do
          local w = worst(rows[s], case[d[2]][s])
          assert(w <= 0.02 * case.opts.lr * s, string.format("step %d: off by %.3g (lr %g)", s, w, case.opts.lr))
        end
        if d[1] == "float64" then
          for k = 1, 2 do
            local got = opt.state[ps[k]].momentum_buffer:reshape(-1):tolist()
            assert(H.same(got, case.bufs64[k], 1e-12), "momentum_buffer " .. k)   -- no bfloat16 in the buffer
          end
        end
      end)
    end
  end

  it("refuses parameters that are not matrices and bad options, naming them", function()
    local v = ember.ones(3, {requires_grad = true})
    H.has(H.err(function() local _ = optim.Muon({v}) end), "Muon only supports 2-D parameters, parameter 1 has shape [3]",
          "optim_muon_spec.lua:")
    local w = ember.ones(2, 2, {requires_grad = true})
    H.has(H.err(function() local _ = optim.Muon({w}, {adjust_lr_fn = "x"}) end), "adjust_lr_fn x is not supported")
    H.has(H.err(function() local _ = optim.Muon({w}, {ns_steps = 100}) end), "ns_steps must be an integer in [0, 100)")
    H.has(H.err(function() local _ = optim.Muon({w}, {ns_coefficients = {1, 2}}) end), "ns_coefficients")
    H.has(H.err(function() local _ = optim.Muon({w}, 0.1, -1) end), "weight decay")
  end)
end)
