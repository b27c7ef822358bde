-- half_unary_spec.lua — every float unary op on float16 and bfloat16, at every one of
-- the 65536 values each dtype has, gives the float32 op's result rounded once: the CPU
-- computes the transcendental ones through a table of those results (engine/cpu/
-- unary.c), the others a chunk at a time in float32, and both must agree with
-- `op(x:float()):to(dtype)` to the bit (signed zeros and NaN positions included), for
-- contiguous, strided and in-place operands, and in GELU's backward; neg and abs, which
-- flip or clear the sign bit, the same.
local ember = require "ember"

-- the value of each 16-bit pattern of dtype d, exactly, as Lua numbers
local function all_values(d)
  local v = {}
  for b = 0, 65535 do
    local x
    if d == "bfloat16" then
      x = string.unpack("<f", string.pack("<I4", b << 16))   -- bfloat16 is float32's top half
    else
      local sign = (b >> 15) == 1 and -1 or 1
      local e, m = (b >> 10) & 31, b & 1023
      if e == 0 then x = sign * m * 2.0 ^ -24
      elseif e == 31 then x = m == 0 and sign * math.huge or 0 / 0
      else x = sign * (1 + m / 1024) * 2.0 ^ (e - 15) end
    end
    v[#v + 1] = x
  end
  return v
end

-- the inputs each op is defined on a wide part of (arguments outside a domain give NaN,
-- which is compared too)
local function values(d)
  return ember.tensor(all_values(d), {dtype = "float64"}):to(d)
end

-- bit-for-bit equality of two tensors of one half dtype: NaN where the other is NaN,
-- -0 where the other is -0
local function same_bits(got, want, what)
  assert.are.same(want.shape, got.shape)
  local g, w = got:to("float64"):reshape(-1):tolist(), want:to("float64"):reshape(-1):tolist()
  for i = 1, #w do
    local a, b = g[i], w[i]
    local same = (a ~= a and b ~= b) or (a == b and (a ~= 0 or 1 / a == 1 / b))
    if not same then
      error(string.format("%s: element %d: expected %s, got %s", what, i, tostring(b), tostring(a)), 2)
    end
  end
end

local unary = {}
for _, op in ipairs(ember._ops()) do
  if op.arity == 1 and op.dtypes == "float" and ember[op.name] then unary[#unary + 1] = op.name end
end

describe("unary ops on float16 and bfloat16", function()
  it("covers the float unary ops of the table", function()
    -- the ops whose half loops take the table (exp and the like) and the rest
    for _, name in ipairs({"exp", "log", "tanh", "sigmoid", "sin", "erfinv", "lgamma", "digamma", "sqrt"}) do
      assert.truthy(table.concat(unary, " "):find("%f[%w]" .. name .. "%f[^%w_]"), name)
    end
    assert.is_true(#unary >= 30)
  end)

  for _, d in ipairs({"bfloat16", "float16"}) do
    it(d .. ": every value, contiguous: op(x) is op(x:float()) rounded once", function()
      local x = values(d)
      for _, name in ipairs(unary) do
        local f = ember[name]
        same_bits(f(x), f(x:float()):to(d), d .. " " .. name)
      end
    end)

    it(d .. ": strided input, strided in-place output", function()
      local x = values(d):reshape(256, 256):t()          -- not contiguous
      for _, name in ipairs({"exp", "tanh", "gelu", "log1p", "sqrt"}) do
        local want = ember[name](x:float()):to(d)
        same_bits(ember[name](x), want, d .. " " .. name .. " (strided)")
        local y = x:t():clone():t()                         -- a copy, strided like x
        assert.is_false(y:is_contiguous())
        y[name .. "_"](y)
        same_bits(y, want, d .. " " .. name .. "_ (in place, strided)")
      end
    end)

    -- neg and abs work on the sign bit (numeric ops, outside the float list above)
    it(d .. ": neg and abs, every value, contiguous, strided and in place", function()
      local x = values(d)
      for _, name in ipairs({"neg", "abs"}) do
        local want = ember[name](x:float()):to(d)
        same_bits(ember[name](x), want, d .. " " .. name)
        local xs = x:reshape(256, 256):t()
        local ws = ember[name](xs:float()):to(d)
        same_bits(ember[name](xs), ws, d .. " " .. name .. " (strided)")
        local y = xs:clone()
        y[name .. "_"](y)
        same_bits(y, ws, d .. " " .. name .. "_ (in place)")
      end
      -- the sign of zero: -(+0) is -0, abs(-0) is +0
      local z = ember.tensor({0.0, -0.0}):to(d)
      assert.are.same({-math.huge, math.huge}, (1 / (-z):float()):tolist())
      assert.are.same({math.huge, math.huge}, (1 / z:abs():float()):tolist())
    end)

    it(d .. ": GELU's backward (gelu_grad) is float32's gradient rounded once", function()
      local x = values(d):reshape(256, 256)
      local finite = ember.isfinite(x)
      x = ember.where(finite, x, ember.zeros_like(x)):detach():requires_grad_()
      ember.nn.functional.gelu(x):backward(ember.ones_like(x))
      local xf = x:detach():float():requires_grad_()
      ember.nn.functional.gelu(xf):backward(ember.ones_like(xf))
      same_bits(x.grad, xf.grad:to(d), d .. " gelu backward")
    end)
  end
end)
