-- clamp_tensor_spec.lua — clamp, clamp_min and clamp_max with tensor bounds against PyTorch
-- 2.15 (fixtures/clamp_tensor.lua, written by scripts/fixtures/make_clamp_fixtures.py): the
-- values and the gradients of x and of each bound, where PyTorch 2.x splits the gradient
-- in halves between x and a bound it equals, gives x all of it when lo == hi == x or a NaN
-- is involved, and hi all of it when lo > hi; bounds that broadcast get their gradient summed.
local ember = require "ember"
local h = require "helpers"

local function T(v) return ember.tensor(v, {dtype = "float64"}) end

local function same(got, want, what)
  local w = T(want)
  assert.same(w.shape, got.shape, what)
  local gl, wl = got:reshape(-1):tolist(), w:reshape(-1):tolist()
  for i = 1, #wl do
    local a, b = gl[i], wl[i]
    assert(a == b or (a ~= a and b ~= b), string.format("%s[%d]: got %s, want %s", what, i, tostring(a), tostring(b)))
  end
end

describe("clamp with tensor bounds against PyTorch", function()
  for _, c in ipairs(h.fixture("clamp_tensor.lua")) do
    it(c.name, function()
      local x = T(c.x):requires_grad_()
      local lo = c.lo and T(c.lo):requires_grad_()
      local hi = c.hi and T(c.hi):requires_grad_()
      local y
      if c.fn == "clamp" then y = ember.clamp(x, lo, hi)
      elseif c.fn == "clamp_min" then y = x:clamp_min(lo)
      else y = x:clamp_max(hi) end
      same(y, c.y, "value")
      ;(y * T(c.g)):sum():backward()
      same(x.grad, c.gx, "x's gradient")
      if lo then same(lo.grad, c.glo, "min's gradient") end
      if hi then same(hi.grad, c.ghi, "max's gradient") end
    end)
  end

  it("float32 input with float64 bounds: the gradients come back in each input's dtype", function()
    local x = ember.tensor({1.0, 2.0, 3.0}, {dtype = "float32", requires_grad = true})
    local lo = T({1.0, 1.0, 1.0}):requires_grad_()
    local y = ember.clamp(x, lo)
    assert.equal("float64", y.dtype)
    y:sum():backward()
    assert.equal("float32", x.grad.dtype)
    same(x.grad:to("float64"), {0.5, 1, 1}, "x's gradient")
    same(lo.grad, {0.5, 0, 0}, "min's gradient")
  end)

  it("a bound that needs no gradient gets none, and the graph is one node", function()
    local x = T({0.0, 2.0}):requires_grad_()
    local y = ember.clamp(x, T({1.0, 1.0}), T({3.0, 3.0}))
    assert.equal("ClampBackward", y.grad_fn)
    y:sum():backward()
    same(x.grad, {0, 1}, "x's gradient")
  end)
end)
