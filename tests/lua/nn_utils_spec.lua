-- nn_utils_spec.lua — ember.nn.utils against PyTorch 2.15
-- (tests/lua/fixtures/nn_utils_cases.*, scripts/fixtures/make_nn_utils_fixtures.py):
-- weight_norm and spectral_norm parametrizations (PyTorch's state_dict names in PyTorch's
-- order, a strict load of PyTorch's state, the same outputs, power-iteration vectors and
-- gradients), get_total_norm, clip_grads_with_norm_, clip_grad_value_,
-- parameters_to_vector / vector_to_parameters, remove_parametrizations, and the errors.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local U = nn.utils

local info = h.fixture("nn_utils_cases.lua")
local tensors = ember.load(h.FIXTURES .. "nn_utils_cases.safetensors")
local function group(c, kind) return h.fixture_group(tensors, c.name, kind) end

local function keys_in_order(sd)
  local out = {}
  for k in pairs(sd) do out[#out + 1] = k end
  return out
end

local function build(c)
  local m = nn[c.kind](table.unpack(c.args)):double()
  U.parametrizations[c.param](m, "weight", c.opts)
  m:train(c.training)
  return m
end

describe("parametrizations against PyTorch 2.15", function()
  for _, c in ipairs(info.cases) do
    it(c.name .. ": names, outputs, power iteration and gradients", function()
      local m = build(c)
      assert.same(c.keys, keys_in_order(m:state_dict()))
      local r = m:load_state_dict(group(c, "param"))
      assert.same({}, r.missing_keys)
      local x = group(c, "input").x:clone():requires_grad_()
      local y = m(x)
      h.close_tensors("y", y, group(c, "out").y, 1e-10)
      for k, t in pairs(group(c, "after")) do h.close_tensors("after " .. k, m:state_dict()[k], t, 1e-10) end
      local w = ember.arange(1, y:numel() + 1, {dtype = "float64"}):sin():reshape(y.shape)
      local loss = (y * w):sum()
      loss:backward()
      local grads = group(c, "grad")
      h.close_tensors("grad x", x.grad, grads.x, 1e-9)
      local seen = 0
      for n, p in m:named_parameters() do
        h.close_tensors("grad " .. n, p.grad, grads[n], 1e-9)
        seen = seen + 1
      end
      assert.equal(#c.grads - 1, seen)
    end)
  end

  it("weight_norm: weight = g * v / ||v||, g and v PyTorch's original0 and original1", function()
    local fc = nn.Linear(4, 3):double()
    local w0 = fc.weight:clone()
    U.parametrizations.weight_norm(fc)
    h.close_tensors("weight unchanged", fc.weight, w0, 1e-12)
    assert.same({3, 1}, fc.parametrizations.weight.original0.shape)
    assert.equal("ParametrizedLinear", getmetatable(fc).__name)
    assert.is_nil(rawget(fc, "_parameters").weight)
    -- assigning the weight goes through right_inverse
    fc.weight = w0 * 2
    h.close_tensors("assigned", fc.weight, w0 * 2, 1e-12)
    h.close_tensors("g", fc.parametrizations.weight.original0, (w0 * 2):norm(2, 2, true), 1e-12)
  end)

  it("spectral_norm: sigma 1 after convergence; eval mode leaves _u and _v alone", function()
    ember.manual_seed(4)
    local fc = U.parametrizations.spectral_norm(nn.Linear(6, 5):double(), {n_power_iterations = 20})
    local s = ember.linalg.svdvals(fc.weight:detach())
    assert.is_true(math.abs(s[1]:item() - 1) < 1e-8, tostring(s))
    fc:eval()
    local u = fc.parametrizations.weight["0"]._u:clone()
    local _ = fc.weight
    h.close_tensors("_u", fc.parametrizations.weight["0"]._u, u, 0)
  end)

  it("remove_parametrizations keeps the parametrized value (or the original) and the class", function()
    local fc = nn.Linear(4, 3):double()
    U.parametrizations.weight_norm(fc)
    local w = fc.weight:detach():clone()
    U.parametrize.remove_parametrizations(fc, "weight")
    assert.equal("Linear", getmetatable(fc).__name)
    assert.same({"bias", "weight"}, keys_in_order(fc:state_dict()))   -- registered again, last (PyTorch's order too)
    assert.is_true(fc.weight.requires_grad and fc.weight.is_leaf)
    h.close_tensors("weight", fc.weight, w, 1e-12)
    local sn = U.parametrizations.spectral_norm(nn.Linear(4, 3):double())
    local orig = sn.parametrizations.weight.original
    U.parametrize.remove_parametrizations(sn, "weight", false)
    assert.is_true(rawequal(orig, sn.weight))
    local wn = U.parametrizations.weight_norm(nn.Linear(4, 3))
    has(err(function() U.parametrize.remove_parametrizations(wn, "weight", false) end), "several originals")
  end)

  it("errors", function()
    has(err(function() U.parametrizations.weight_norm(nn.Linear(2, 2), "nope") end), "has no parameter 'nope'")
    has(err(function() U.parametrizations.weight_norm(nn.Linear(2, 2), "weight", {dim = 3}) end), "dim must be an integer dim in 1..2")
    local fc = U.parametrizations.weight_norm(nn.Linear(2, 2))
    has(err(function() U.parametrizations.weight_norm(fc) end), "(it is parametrized already)")
    has(err(function() U.parametrizations.spectral_norm(nn.Linear(2, 2), {n_power_iterations = -1}) end),
        "n_power_iterations must be an integer >= 0")
    has(err(function() U.parametrizations.spectral_norm(5) end), "expected a module")
    has(err(function() U.parametrize.remove_parametrizations(nn.Linear(2, 2), "weight") end), "has no parametrization on 'weight'")
  end)
end)

describe("parametrize.cached and unsafe, PyTorch's semantics", function()
  local P = U.parametrize
  -- a parametrization that counts its calls: 2 * x
  local Double = nn.Module:extend("Double")
  function Double:init() self.calls = 0 end
  function Double:forward(x)
    self.calls = self.calls + 1
    return x * 2
  end

  it("cached: one computation per name while it lives, the same tensor, gradients summed", function()
    local fc = nn.Linear(3, 2):double()
    local d = Double()
    P.register_parametrization(fc, "weight", d)
    local base = d.calls   -- the registration's check ran it once
    local w1, w2 = fc.weight, fc.weight
    assert.equal(base + 2, d.calls)
    assert.is_false(rawequal(w1, w2))
    local loss
    do
      local _ <close> = P.cached()
      local a, b = fc.weight, fc.weight
      assert.equal(base + 3, d.calls)
      assert.is_true(rawequal(a, b))
      do   -- nested: the inner end keeps the cache
        local _ <close> = P.cached()
        assert.is_true(rawequal(fc.weight, a))
      end
      assert.is_true(rawequal(fc.weight, a))
      assert.equal(base + 3, d.calls)
      loss = (a * 3):sum() + b:sum()
    end
    assert.is_false(rawequal(fc.weight, w1))   -- recomputed after the outermost end
    assert.equal(base + 4, d.calls)
    loss:backward()
    -- d loss / d original = (3 + 1) * 2 for every element
    local g = fc.parametrizations.weight.original.grad
    assert.same({{8, 8, 8}, {8, 8, 8}}, g:tolist())
  end)

  it("cached(fn, ...) returns fn's results and empties the cache even when fn fails", function()
    local fc = nn.Linear(2, 2)
    local d = Double()
    P.register_parametrization(fc, "weight", d)
    local x, y = P.cached(function(k) return fc.weight, fc.weight, k end, 7)
    assert.is_true(rawequal(x, y))
    local before = d.calls
    local ok = pcall(P.cached, function() local _ = fc.weight; error("boom") end)
    assert.is_false(ok)
    local _ = fc.weight
    assert.equal(before + 2, d.calls)   -- the failed call's read, then a fresh one outside
    has(err(function() P.cached(3) end), "cached: expected a function or nothing, got number")
  end)

  it("unsafe = false refuses a parametrization that changes the shape or dtype, as PyTorch", function()
    local T = nn.Module:extend("T")
    function T:forward(x) return x:t() end
    local D = nn.Module:extend("D")
    function D:forward(x) return x:double() end
    local e = err(function() P.register_parametrization(nn.Linear(4, 3), "weight", T()) end)
    has(e, "register_parametrization: the parametrization may not change the shape of the tensor "
           .. "(unless unsafe = true): [3, 4], got [4, 3]")
    has(e, "nn_utils_spec.lua:")
    has(err(function() P.register_parametrization(nn.Linear(4, 3), "weight", D()) end),
        "may not change the dtype of the tensor (unless unsafe = true): float32, got float64")
    -- unsafe: allowed, and reading gives the new shape
    local fc = P.register_parametrization(nn.Linear(4, 3), "weight", T(), {unsafe = true})
    assert.same({4, 3}, fc.weight.shape)
    assert.is_true(fc.parametrizations.weight.unsafe)
    -- a second parametrization is checked against module.weight as it reads now
    local sq = P.register_parametrization(nn.Linear(3, 3), "weight", Double())
    has(err(function() P.register_parametrization(sq, "weight", D()) end),
        "the parametrization may not change the dtype of module.weight (unless unsafe = true): float32, got float64")
    local Bad = nn.Module:extend("Bad")
    function Bad:forward(x) return x end
    function Bad:right_inverse(x) return x:reshape(-1) end
    has(err(function() P.register_parametrization(sq, "weight", Bad()) end),
        "its right_inverse may not change the shape of module.weight (unless unsafe = true): [3, 3], got [9]")
    P.register_parametrization(sq, "weight", Bad(), {unsafe = true})
    assert.is_true(sq.parametrizations.weight.unsafe)
  end)

  it("a right_inverse giving one tensor may never change the dtype; options are checked", function()
    local R = nn.Module:extend("R")
    function R:forward(x) return x:float() end
    function R:right_inverse(x) return x:double() end
    has(err(function() P.register_parametrization(nn.Linear(2, 2), "weight", R(), {unsafe = true}) end),
        "register_parametrization: when right_inverse returns one tensor it may not change the dtype: float32, got float64")
    has(err(function() P.register_parametrization(nn.Linear(2, 2), "weight", Double(), {unsave = true}) end),
        "register_parametrization: unknown option 'unsave'")
    has(err(function() P.register_parametrization(nn.Linear(2, 2), "weight", Double(), true) end),
        "register_parametrization")
    has(err(function() P.register_parametrization(nn.Linear(2, 2), "weight", Double(), {unsafe = 1}) end),
        "register_parametrization: unsafe must be a boolean, got number")
  end)
end)

describe("gradient utilities against PyTorch 2.15", function()
  local u = info.utils
  local function ts() return {tensors["utils.t1"]:clone(), tensors["utils.t2"]:clone(), tensors["utils.t3"]:clone()} end
  local function params_with_grads()
    local ps = {}
    for i, t in ipairs(ts()) do
      ps[i] = t:clone():requires_grad_()
      ps[i].grad = t:clone()
    end
    return ps
  end

  it("get_total_norm of orders 2, 1, inf, 0.5 and 3, both paths", function()
    for _, pair in ipairs(u.total_norm) do
      local key, want = pair[1], pair[2]
      local order = key == "inf" and math.huge or tonumber(key)
      for _, foreach in ipairs({true, false}) do
        local got = U.get_total_norm(ts(), {norm_type = order, foreach = foreach}):item()
        assert.is_true(math.abs(got - want) <= 1e-12 * math.abs(want), key .. ": " .. got .. " vs " .. want)
      end
    end
    assert.equal(0, U.get_total_norm({}):item())
    local nan = ember.tensor({0 / 0, 1.0})
    has(err(function() U.get_total_norm({nan}, {error_if_nonfinite = true}) end), "is non-finite")
  end)

  it("clip_grads_with_norm_ and clip_grad_value_", function()
    for _, foreach in ipairs({true, false}) do
      local ps = params_with_grads()
      local grads = {}
      for i, p in ipairs(ps) do grads[i] = p.grad end
      local total = U.get_total_norm(grads)
      assert.is_nil(U.clip_grads_with_norm_(ps, u.max_norm, total, {foreach = foreach}))
      for i, p in ipairs(ps) do h.close_tensors("clip_norm " .. i, p.grad, tensors["utils.clip_norm." .. i], 1e-12) end
    end
    local ps = params_with_grads()
    U.clip_grads_with_norm_(ps, 1e9, 3.0)           -- a number as the norm; the coefficient stays 1
    h.close_tensors("unchanged", ps[1].grad, tensors["utils.t1"], 0)
    ps = params_with_grads()
    assert.is_nil(U.clip_grad_value_(ps, u.clip_value))
    for i, p in ipairs(ps) do h.close_tensors("clip_value " .. i, p.grad, tensors["utils.clip_value." .. i], 0) end
    -- parameters without a gradient are skipped
    U.clip_grad_value_({ember.ones(2):requires_grad_()}, 1)
    U.clip_grads_with_norm_({ember.ones(2):requires_grad_()}, 1, 2)
    -- clip_grad_norm_ is the two together
    ps = params_with_grads()
    local total = U.clip_grad_norm_(ps, u.max_norm)
    assert.is_true(math.abs(total:item() - u.total_norm[1][2]) < 1e-12)
    for i, p in ipairs(ps) do h.close_tensors("clip_grad_norm_ " .. i, p.grad, tensors["utils.clip_norm." .. i], 1e-12) end
  end)

  it("parameters_to_vector and vector_to_parameters", function()
    local v = U.parameters_to_vector(ts())
    h.close_tensors("vector", v, tensors["utils.vector"], 0)
    local ps = {ember.zeros(3, 4, {dtype = "float64"}), ember.zeros(5, {dtype = "float64"}),
                ember.zeros(2, 2, 2, {dtype = "float64"})}
    U.vector_to_parameters(v, ps)
    for i, t in ipairs(ts()) do h.close_tensors("param " .. i, ps[i], t, 0) end
    -- autograd follows parameters_to_vector
    local p = ember.ones(2, 2):requires_grad_()
    local loss = (U.parameters_to_vector({p}) * 3):sum()
    loss:backward()
    h.check(p.grad, {{3, 3}, {3, 3}})
    has(err(function() U.vector_to_parameters({1}, ps) end), "argument 1: expected a tensor")
    has(err(function() U.vector_to_parameters(ember.zeros(3), ps) end), "the vector has 3 elements, the parameters 25")
    has(err(function() U.parameters_to_vector(nn.Linear(2, 2)) end), "a module (pass module:parameters())")
    has(err(function() U.clip_grad_value_(ts(), "x") end), "clip_value must be a number")
  end)
end)
