-- out_keyword_spec.lua — the keywords of the op table's functions: PyTorch's out=
-- (ember.add(a, b, {out = c})) writes into c and returns it, with PyTorch's checks;
-- arguments the op does not take (x:add_(y, 3): alpha is a keyword) are errors at the
-- caller's line, not dropped. Expected values are worked by hand.
local ember = require "ember"

local THIS = "out_keyword_spec.lua:"

-- the error of f() as a string (nil when f succeeds)
local function err(f)
  local ok, e = pcall(f)
  if ok then return nil end
  return tostring(e)
end

describe("out=", function()
  it("writes the result into out and returns out itself", function()
    local a = ember.tensor({1.0, 2.0, 3.0})
    local b = ember.tensor({10.0, 20.0, 30.0})
    local c = ember.zeros(3)
    local r = ember.add(a, b, {out = c})
    assert.is_true(rawequal(r, c))
    assert.are.same({11, 22, 33}, c:tolist())
    ember.add(a, b, {alpha = 2, out = c})
    assert.are.same({21, 42, 63}, c:tolist())
    ember.sub(b, a, {out = c})
    assert.are.same({9, 18, 27}, c:tolist())
    ember.mul(a, 2, {out = c})
    assert.are.same({2, 4, 6}, c:tolist())
    ember.div(b, a, {rounding_mode = "floor", out = c})
    assert.are.same({10, 10, 10}, c:tolist())
    ember.div(ember.tensor({7.0, -7.0, 1.0}), 2, {rounding_mode = "trunc", out = c})
    assert.are.same({3, -3, 0}, c:tolist())
  end)

  it("serves the unary ops, and casts to out's dtype where PyTorch allows", function()
    local x = ember.tensor({0.0, 1.0}, {dtype = "float32"})
    local y = ember.zeros(2, {dtype = "float64"})
    ember.exp(x, {out = y})
    assert.are.equal("float64", y.dtype)
    assert.are.equal(1, y[1]:item())
    assert.is_true(math.abs(y[2]:item() - 2.718281828459045) < 1e-6)
    local i = ember.tensor({1, 2, 3}, {dtype = "int64"})
    local f = ember.zeros(3, {dtype = "float32"})
    ember.add(i, i, {out = f})   -- int64 into float32: a safe cast
    assert.are.same({2, 4, 6}, f:tolist())
    ember.neg(i, {out = i})      -- out the input itself
    assert.are.same({-1, -2, -3}, i:tolist())
  end)

  it("gives the right answer when out is an input seen through another view", function()
    local q = ember.arange(1, 10, {dtype = "float64"}):view(3, 3)
    -- q^T * q elementwise, by hand: q[i][j] = 3 (i - 1) + j
    local expected = {}
    for i = 1, 3 do
      expected[i] = {}
      for j = 1, 3 do expected[i][j] = (3 * (j - 1) + i) * (3 * (i - 1) + j) end
    end
    ember.mul(q:t(), q, {out = q})
    assert.are.same(expected, q:tolist())
  end)

  it("refuses a wrong shape, an unsafe cast, a non-tensor, and a result that needs gradients", function()
    local a, b = ember.ones(2, 2), ember.full({2, 2}, 2.0)
    local e = err(function() return ember.mul(a, b, {out = ember.zeros(3)}) end)
    assert.is_truthy(e and e:find("mul: output with shape [3] doesn't match the broadcast shape [2,2]", 1, true), e)
    assert.is_truthy(e:find(THIS, 1, true), e)
    e = err(function() return ember.mul(a, b, {out = ember.zeros(2, 2, {dtype = "int64"})}) end)
    assert.is_truthy(e and e:find("can't be cast to the desired output type int64", 1, true), e)
    e = err(function() return ember.exp(a, {out = 5}) end)
    assert.is_truthy(e and e:find("exp: argument 2: out must be a tensor, got number", 1, true), e)
    local w = ember.ones(2, 2, {requires_grad = true})
    local out = ember.full({2, 2}, 9.0)
    e = err(function() return ember.mul(w, b, {out = out}) end)
    assert.is_truthy(e and e:find("records no gradient", 1, true), e)
    assert.are.same({{9, 9}, {9, 9}}, out:tolist())   -- untouched
    ember.no_grad(function() ember.mul(w, b, {out = out}) end)
    assert.are.same({{2, 2}, {2, 2}}, out:tolist())
    -- a leaf that requires grad is not written to, as in PyTorch
    e = err(function() return ember.add(a, b, {out = w}) end)
    assert.is_truthy(e and e:find("leaf", 1, true), e)
  end)
end)

describe("arguments an op does not take", function()
  it("are errors naming the op, the keywords and the caller's line", function()
    local x, z = ember.ones(2), ember.full({2}, 2.0)
    local e = err(function() return x:add_(z, 3) end)
    -- a method's arguments are counted after self, as Lua's own messages count them
    assert.is_truthy(e and e:find("add_: argument 2: one argument too many (a number); the keyword arguments "
                                  .. "(alpha) go in a trailing options table, e.g. {alpha = ...}", 1, true), e)
    assert.is_truthy(e:find(THIS, 1, true), e)
    assert.are.same({1, 1}, x:tolist())   -- nothing written
    e = err(function() return ember.add(x, z, 3) end)
    assert.is_truthy(e and e:find("add: argument 3: one argument too many (a number); the keyword arguments "
                                  .. "(alpha, out)", 1, true), e)
    e = err(function() return x:mul(z, 2) end)
    assert.is_truthy(e and e:find("mul: argument 2: one argument too many (a number); the keyword arguments (out)", 1, true), e)
    e = err(function() return x:exp_(1) end)
    assert.is_truthy(e and e:find("exp_: argument 1: one argument too many (a number)", 1, true), e)
    e = err(function() return ember.div(x, z, "floor") end)
    assert.is_truthy(e and e:find("(rounding_mode, out)", 1, true), e)
    e = err(function() return ember.exp(x, {bogus = 1}) end)
    assert.is_truthy(e and e:find("exp: unknown option 'bogus'", 1, true), e)
    e = err(function() return x:mul_(z, {out = z}) end)
    assert.is_truthy(e and e:find("mul_: unknown option 'out'", 1, true), e)
  end)

  it("allow trailing nils and the keywords each op takes", function()
    local x, z = ember.ones(2), ember.full({2}, 2.0)
    assert.are.same({3, 3}, x:add(z, nil):tolist())
    assert.are.same({3, 3}, x:add(z, {}, nil):tolist())
    assert.are.same({5, 5}, ember.add(x, z, {alpha = 2}, nil):tolist())
    assert.are.same({2, 2}, ember.ones(3, 3):diag({diagonal = 1}, nil):add(1):tolist())
    local o = ember.zeros(2)
    ember.exp(ember.zeros(2), {out = o}, nil)
    assert.are.same({1, 1}, o:tolist())
    assert.are.same({5, 5}, x:add(z, {alpha = 2}):tolist())
    x:sub_(z, {alpha = 0.5})
    assert.are.same({0, 0}, x:tolist())
    assert.are.same({2, 2}, ember.full({2}, 5.0):div(z, {rounding_mode = "trunc"}):tolist())
    assert.are.same({-3, -3}, ember.full({2}, -5.0):div(z, {rounding_mode = "floor"}):tolist())
  end)
end)

describe("dim as a keyword", function()
  it("is read by cat, stack, split, chunk and unbind, as torch.cat(ts, dim=1) is written", function()
    local a = ember.tensor({{1.0, 2.0}, {3.0, 4.0}})
    local b = ember.tensor({{5.0, 6.0}, {7.0, 8.0}})
    assert.are.same({{1, 2, 5, 6}, {3, 4, 7, 8}}, ember.cat({a, b}, {dim = 2}):tolist())
    assert.are.same({{{1, 5}, {2, 6}}, {{3, 7}, {4, 8}}}, ember.stack({a, b}, {dim = 3}):tolist())
    local o = ember.zeros(4, 2)
    assert.is_true(rawequal(o, ember.cat({a, b}, {dim = 1, out = o})))
    assert.are.same({{1, 2}, {3, 4}, {5, 6}, {7, 8}}, o:tolist())
    local p, q = a:split(1, {dim = 2})
    assert.are.same({{1}, {3}}, p:tolist())
    assert.are.same({{2}, {4}}, q:tolist())
    local c1, c2 = a:chunk(2, {dim = 1})
    assert.are.same({{1, 2}}, c1:tolist())
    assert.are.same({{3, 4}}, c2:tolist())
    local u1, u2 = a:unbind({dim = 2})
    assert.are.same({1, 3}, u1:tolist())
    assert.are.same({2, 4}, u2:tolist())
    local e = err(function() return ember.cat({a, b}, 2, {dim = 1}) end)
    assert.is_truthy(e and e:find("cat: argument 2: got multiple values for argument 'dim'", 1, true), e)
    e = err(function() return ember.cat({a, b}, 1, o) end)
    assert.is_truthy(e and e:find("the keyword arguments (out) go in a trailing options table", 1, true), e)
  end)
end)
