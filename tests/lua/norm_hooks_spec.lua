-- norm_hooks_spec.lua — the older hook forms nn.utils.weight_norm / spectral_norm and
-- nn.utils.remove_weight_norm / remove_spectral_norm against PyTorch 2.15
-- (tests/lua/fixtures/norm_hooks.lua, scripts/fixtures/make_norm_hooks_fixtures.py): the
-- state_dict's names in PyTorch's order, a strict load of PyTorch's state, the same
-- outputs, power-iteration vectors (v first, then u) and gradients, the state after
-- remove_*, and the errors.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local U = nn.utils

local cases = h.fixture("norm_hooks.lua")

local function keys_in_order(sd)
  local out = {}
  for k in pairs(sd) do out[#out + 1] = k end
  return out
end

local function tensors(specs)
  local out = {}
  for k, s in pairs(specs) do out[k] = h.from_flat(s, "float64") end
  return out
end

local function close(what, got, spec, tol)
  assert.same(spec.shape, got.shape, what .. ": shape")
  h.check_flat(got, spec.v, what, tol)
end

describe("weight_norm and spectral_norm's hook forms against PyTorch 2.15", function()
  for _, c in ipairs(cases) do
    it(c.name .. ": names, outputs, power iteration, gradients and removal", function()
      local m = nn[c.kind](table.unpack(c.args)):double()
      U[c.fn](m, table.unpack(c.args_ember))
      m:train(c.training)
      assert.same(c.keys, keys_in_order(m:state_dict()))
      local r = m:load_state_dict(tensors(c.before))
      assert.same({}, r.missing_keys)
      assert.same({}, r.unexpected_keys)
      local x = h.from_flat(c.x, "float64"):requires_grad_()
      local y = m(x)
      close("y", y, c.y, 1e-10)
      assert.same(c.after_keys, keys_in_order(m:state_dict()))
      for k, spec in pairs(c.after) do close("after " .. k, m:state_dict()[k], spec, 1e-10) end
      local w = ember.arange(1, y:numel() + 1, {dtype = "float64"}):sin():reshape(y.shape)
      local loss = (y * w):sum()
      loss:backward()
      close("grad x", x.grad, c.grads.x, 1e-9)
      local seen = 0
      for n, p in m:named_parameters() do
        close("grad " .. n, p.grad, c.grads[n], 1e-9)
        seen = seen + 1
      end
      assert.equal(#c.grad_names - 1, seen)
      U["remove_" .. c.fn](m, c.args_ember[1])
      assert.same(c.removed_keys, keys_in_order(m:state_dict()))
      for k, spec in pairs(c.removed) do close("removed " .. k, m:state_dict()[k], spec, 1e-10) end
      local name = c.args_ember[1] or "weight"
      assert.is_true(m[name].requires_grad and m[name].is_leaf, "a parameter again")
    end)
  end

  it("weight_norm: the weight is g * v / ||v|| before the first forward, and follows g", function()
    local fc = nn.Linear(4, 3):double()
    local w0 = fc.weight:clone()
    U.weight_norm(fc)
    h.close_tensors("weight unchanged", fc.weight, w0, 1e-12)
    h.close_tensors("g", fc.weight_g, w0:norm(2, 2, true), 1e-12)          -- the row norms, [3, 1]
    ember.no_grad(function() fc.weight_g:mul_(2) end)
    local _ = fc(ember.ones(1, 4, {dtype = "float64"}))
    h.close_tensors("after g doubled", fc.weight, w0 * 2, 1e-12)
    local whole = U.weight_norm(nn.Linear(4, 3), {dim = false})
    assert.same({}, whole.weight_g.shape)                                  -- PyTorch's dim=None
  end)

  it("spectral_norm: sigma 1 after convergence; eval mode leaves u and v alone", function()
    ember.manual_seed(5)
    local fc = U.spectral_norm(nn.Linear(6, 5):double(), "weight", 30)
    local _ = fc(ember.ones(1, 6, {dtype = "float64"}))
    local s = ember.linalg.svdvals(fc.weight:detach())
    assert.is_true(math.abs(s[1]:item() - 1) < 1e-8, tostring(s))
    fc:eval()
    local u = fc.weight_u:clone()
    _ = fc(ember.ones(1, 6, {dtype = "float64"}))
    h.close_tensors("weight_u", fc.weight_u, u, 0)
  end)

  it("refuses a second hook, a missing one and bad arguments, at the caller's line", function()
    local fc = U.weight_norm(nn.Linear(2, 2))
    has(err(function() local _ = U.weight_norm(fc) end),
        "weight_norm: cannot register two weight_norm hooks on the same parameter weight", "norm_hooks_spec.lua:")
    has(err(function() local _ = U.remove_spectral_norm(fc) end),
        "remove_spectral_norm: spectral_norm of 'weight' not found in Linear", "norm_hooks_spec.lua:")
    has(err(function() local _ = U.remove_weight_norm(nn.Linear(2, 2)) end), "weight_norm of 'weight' not found")
    local sn = U.spectral_norm(nn.Linear(2, 2))
    has(err(function() local _ = U.spectral_norm(sn) end), "cannot register two spectral_norm hooks")
    has(err(function() local _ = U.spectral_norm(nn.Linear(2, 2), "weight", -1) end),
        "n_power_iterations must be an integer >= 0, got -1")
    has(err(function() local _ = U.weight_norm(nn.Linear(2, 2), "weight", 3) end), "weight_norm: dim must be")
    has(err(function() local _ = U.weight_norm(nn.Linear(2, 2), "scale") end), "has no parameter 'scale'")
  end)
end)
