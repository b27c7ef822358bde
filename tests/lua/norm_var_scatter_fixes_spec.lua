-- norm_var_scatter_fixes_spec.lua — against PyTorch 2.15
-- (tests/lua/fixtures/norm_var_scatter.lua, scripts/fixtures/make_norm_var_scatter_fixtures.py):
-- layer_norm and group_norm backward with a strided weight (also on the recorded backward),
-- var and std gradients with correction >= n (PyTorch's formula: inf or NaN over all dims,
-- 2 (x - mean) / (n - correction) over a dim, with the signs of zeros), and scatter with a
-- boolean value, whose overflow error names scatter.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local F = ember.nn.functional

local fx = h.fixture("norm_var_scatter.lua")

-- equality of the flat lists, NaN equal to NaN, infinities and the sign of each zero
-- compared exactly; finite values within tol relative (ember rounds float16's gradient once
-- from float32, PyTorch at each step: 2.666 vs PyTorch's 2.668)
local function identical(what, got, want, tol)
  assert.equal(#want, #got, what .. ": length")
  for i, w in ipairs(want) do
    local g = got[i]
    local close = w ~= 0 and w == w and math.abs(w) ~= math.huge and math.abs(g - w) <= (tol or 0) * math.abs(w)
    local same = (w ~= w and g ~= g) or close or (w == g and (w ~= 0 or 1 / w == 1 / g))
    assert(same, string.format("%s[%d]: expected %s, got %s", what, i, h.show(w), h.show(g)))
  end
end

local function weights(n) return ember.arange(1, n + 1, {dtype = "float64"}):sin() end

local function run_norm(c)
  local x = ember.tensor(c.x, {dtype = "float64"}):reshape(c.x_shape):requires_grad_()
  local base = ember.tensor(c.base, {dtype = "float64"}):reshape(c.base_shape):requires_grad_()
  local w = c.view == "column" and base:select(2, 1) or base:t()
  assert.is_false(w:is_contiguous())
  local b = ember.tensor(c.b, {dtype = "float64"}):reshape(w.shape):requires_grad_()
  local y = c.kind == "layer_norm" and F.layer_norm(x, c.arg, w, b) or F.group_norm(x, c.arg, w, b)
  return x, base, b, y
end

describe("layer_norm and group_norm with a strided weight", function()
  for _, c in ipairs(fx.norm) do
    it(c.name .. ": outputs and gradients as PyTorch's", function()
      local x, base, b, y = run_norm(c)
      h.check_flat(y, c.y, "y", 1e-12)
      ;(y * weights(y:numel()):reshape(y.shape)):sum():backward()
      h.check_flat(x.grad, c.gx, "grad x", 1e-10)
      h.check_flat(base.grad, c.gbase, "grad weight's base", 1e-10)
      h.check_flat(b.grad, c.gb, "grad bias", 1e-10)
    end)

    it(c.name .. ": the recorded backward (create_graph) gives the same gradients", function()
      local x, base, b, y = run_norm(c)
      local loss = (y * weights(y:numel()):reshape(y.shape)):sum()
      local gx, gbase, gb = ember.autograd.grad(loss, {x, base, b}, {create_graph = true})
      h.check_flat(gx, c.gx, "grad x", 1e-10)
      h.check_flat(gbase, c.gbase, "grad weight's base", 1e-10)
      h.check_flat(gb, c.gb, "grad bias", 1e-10)
    end)
  end

  it("a weight of the wrong shape is still refused, naming the op", function()
    local x = ember.randn(4, 6)
    local w = ember.randn(6, 3):select(2, 1)
    has(err(F.layer_norm, x, {5}, w), "layer_norm")
    has(err(F.group_norm, ember.randn(2, 6, 3), 2, ember.randn(5, 2):select(2, 1)), "group_norm")
  end)
end)

describe("var and std with correction >= n", function()
  for _, c in ipairs(fx.var) do
    local title = string.format("%s %s of %s, dim %s, correction %d: value and gradient as PyTorch's", c.fn,
                                c.dtype, h.show(c.x), tostring(c.dim), c.correction)
    it(title, function()
      local x = ember.tensor(c.x, {dtype = c.dtype}):reshape(c.shape):requires_grad_()
      local y = c.dim and x[c.fn](x, c.dim, {correction = c.correction}) or x[c.fn](x, {correction = c.correction})
      local tol = c.dtype == "float16" and 5e-3 or 0
      identical("value", y:reshape(-1):tolist(), c.y, tol)
      y:sum():backward()
      identical("grad", x.grad:reshape(-1):tolist(), c.grad, tol)
    end)
  end

  it("var over a dim with correction beyond n: the gradient 2 (x - mean) / (n - c) differentiates again", function()
    -- n = 2, c = 3: d var / dx_i = -2 (x_i - mean); d/dx_j of sum_i(that * v_i) = -2 (v_j - mean(v))
    local x = ember.tensor({{1, 2}, {3, 5}}, {dtype = "float64", requires_grad = true})
    local y = x:var(2, {correction = 3})
    local g = ember.autograd.grad(y:sum(), {x}, {create_graph = true})
    h.check_flat(g, {1, -1, 2, -2}, "first", 0)
    local v = ember.tensor({{1, 0}, {0, 3}}, {dtype = "float64"})
    local gg = ember.autograd.grad((g * v):sum(), {x})
    h.check_flat(gg, {-1, 1, 3, -3}, "second", 0)
  end)

end)

describe("scatter with a boolean value", function()
  local idx = ember.tensor({{1, 2, 1}}, {dtype = "int64"})
  for _, c in ipairs(fx.scatter) do
    it(string.format("%s, value %s: as PyTorch's (in place too)", c.dtype, tostring(c.value)), function()
      local base = ember.full({2, 3}, c.fill, {dtype = c.dtype})
      h.check_flat(base:scatter(1, idx, c.value):to("float64"), c.out, "scatter", 0)
      local t = base:clone()
      assert.equal(t, t:scatter_(1, idx, c.value))
      h.check_flat(t:to("float64"), c.out, "scatter_", 0)
    end)
  end

  it("true with reduce 'add' adds 1 at (1,1), (2,2) and (1,3)", function()
    local u = ember.zeros(2, 3, {dtype = "uint8"})
    h.check_flat(u:scatter(1, idx, true, "add"), {1, 0, 1, 0, 1, 0}, "add", 0)
  end)

  it("a value that overflows the dtype: the error names scatter (or scatter_), not full", function()
    local u = ember.zeros(2, 3, {dtype = "uint8"})
    for _, args in ipairs({{"scatter", 300}, {"scatter_", 300}, {"scatter", 300, "add"}, {"scatter_", -1, "multiply"}}) do
      local e = err(u[args[1]], u, 1, idx, args[2], args[3])
      has(e, args[1] .. ": value " .. args[2] .. " cannot be converted to uint8 without overflow")
      assert.is_nil(e:find("full", 1, true))
    end
    h.check_flat(u, {0, 0, 0, 0, 0, 0}, "unchanged", 0)
  end)

  it("the error is raised at the caller's line", function()
    local u = ember.zeros(2, 3, {dtype = "uint8"})
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, e = pcall(function() return u:scatter(1, idx, 300) end)
    assert.is_false(ok)
    has(e, "norm_var_scatter_fixes_spec.lua:" .. line .. ":")
  end)

  it("a string value is refused, naming what is taken", function()
    local t = ember.zeros(2, 3)
    has(err(t.scatter, t, 1, idx, "x"), "scatter: argument 4: expected a tensor, a number or a boolean, got string")
  end)
end)
