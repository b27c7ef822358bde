-- rms_norm_spec.lua — F.rms_norm and nn.RMSNorm against PyTorch 2.15 (tests/lua/fixtures/
-- rms_norm_cases.*, written by scripts/fixtures/make_rms_norm_fixtures.py): values in float32,
-- float64 and the half dtypes, the default eps (machine epsilon), gradients in float64; the
-- module's parameters and the errors bad input gets, at the caller's line.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local F = nn.functional

local THIS_FILE = "rms_norm_spec.lua:"

describe("F.rms_norm against PyTorch", function()
  local cases = h.fixture("rms_norm_cases.lua")
  local t = ember.load(h.FIXTURES .. "rms_norm_cases.safetensors")
  for _, c in ipairs(cases) do
    it(c.name, function()
      local x = t[c.name .. ".x"]:to(c.dtype)
      local w = c.weight and t[c.name .. ".weight"]:to(c.dtype) or nil
      if c.grad then
        x:requires_grad_()
        if w then w:requires_grad_() end
      end
      local y = F.rms_norm(x, c.normalized_shape, w, c.eps)
      assert.are.equal(c.dtype, y.dtype)
      -- half dtypes: PyTorch's result exactly (one rounding of the float32 value)
      local tol = ({float64 = 1e-12, float32 = 2e-6, bfloat16 = 0, float16 = 0})[c.dtype]
      h.close_tensors(c.name .. " y", y, t[c.name .. ".y"], tol)
      if c.grad then
        local wt = ember.arange(1, y:numel() + 1, {dtype = "float64"}):sin():reshape(y.shape)
        ;(y * wt):sum():backward()
        h.close_tensors(c.name .. " grad x", x.grad, t[c.name .. ".grad_x"], 1e-12)
        if w then h.close_tensors(c.name .. " grad weight", w.grad, t[c.name .. ".grad_weight"], 1e-12) end
      end
      -- the module gives the same (its weight set to the case's)
      local m = nn.RMSNorm(c.normalized_shape, c.eps, c.weight, {dtype = c.dtype})
      if w then ember.no_grad(function() m.weight:copy_(w) end) end
      h.close_tensors(c.name .. " module", m(x:detach()), t[c.name .. ".y"], tol)
    end)
  end
end)

describe("nn.RMSNorm", function()
  it("has PyTorch's parameter and defaults", function()
    local m = nn.RMSNorm(6)
    local names = {}
    for n, p in m:named_parameters() do names[#names + 1] = n .. ":" .. table.concat(p.shape, "x") end
    assert.are.same({"weight:6"}, names)
    assert.is_nil(m.eps)
    h.check(m.weight, {1, 1, 1, 1, 1, 1})
    assert.is_nil(nn.RMSNorm(6, {elementwise_affine = false}).weight)
    has(tostring(nn.RMSNorm(6, 1e-6)), "RMSNorm([6], eps=1e-06, elementwise_affine=true)")
  end)

  it("by hand: x / sqrt(mean(x^2) + eps)", function()
    local y = F.rms_norm(ember.tensor({{3, 4}}, {dtype = "float64"}), 2, nil, 0.5)
    local r = math.sqrt((9 + 16) / 2 + 0.5)
    h.check(y, {{3 / r, 4 / r}}, 1e-15)
  end)

  it("refuses bad input at the caller's line", function()
    local e = err(function() local _ = nn.RMSNorm(4)(ember.randn(2, 5)) end)
    has(e, THIS_FILE); has(e, "RMSNorm([4]"); has(e, "[..., 4]"); has(e, "[2, 5]")
    e = err(function() local _ = F.rms_norm(ember.randn(2, 5), {3, 5}) end)
    has(e, THIS_FILE); has(e, "rms_norm: input [2, 5]"); has(e, "[..., 3, 5]")
    e = err(function() local _ = F.rms_norm(ember.randn(2, 5), 5, ember.ones(4)) end)
    has(e, THIS_FILE); has(e, "weight [4] must have normalized_shape [5]")
    e = err(function() local _ = F.rms_norm(ember.tensor({1, 2}), 2) end)
    has(e, "floating-point"); has(e, "int64")
    e = err(function() local _ = nn.RMSNorm(4, -1) end)
    has(e, THIS_FILE); has(e, "eps must be a non-negative number")
    e = err(function() local _ = nn.RMSNorm(4, {bias = true}) end)
    has(e, "unknown option 'bias'")
  end)
end)
