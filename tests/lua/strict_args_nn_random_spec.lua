-- strict_args_nn_random_spec.lua — the functions of bind_elementwise.c (those outside the
-- op table), bind_nn.c, bind_random.c and bind_autograd.c refuse what they do not read: one
-- positional argument too many, or an option they do not take, is an error naming the op
-- at the caller's line, never a silent wrong answer. Those that take PyTorch's out= write
-- into out and return it; expected values are worked by hand.
local ember = require "ember"

local THIS = "strict_args_nn_random_spec.lua:"

-- asserts that f() fails with a message holding the op's name ("op:") and this file's
-- line; returns the message
local function refuses(op, f, what)
  local ok, e = pcall(f)
  assert.is_false(ok, op .. ": " .. what .. " was accepted")
  e = tostring(e)
  assert.is_truthy(e:find(op .. ":", 1, true), e)
  assert.is_truthy(e:find(THIS, 1, true), e)
  return e
end

-- the values of t (a flat list) against the numbers of expected, each within 1e-6
local function near(expected, t)
  local got = t:view(-1):tolist()
  assert.are.equal(#expected, #got)
  for i = 1, #expected do
    assert.is_true(math.abs(got[i] - expected[i]) <= 1e-6 * math.max(1, math.abs(expected[i])),
                   ("entry %d: expected %s, got %s"):format(i, expected[i], got[i]))
  end
end

local function f64(values) return ember.tensor(values, {dtype = "float64"}) end

-- shared inputs: made once, each row reads them (in place rows work on clones)
local x = f64({-2.0, 0.5, 3.0})
local p = f64({0.25, 0.5, 0.75})
local mask = ember.tensor({true, false, true})
local img = ember.ones(1, 1, 4, 4)          -- N, C, H, W
local w33 = ember.ones(1, 1, 3, 3)

-- {op name in the message, function(extra): the valid call with the extra value appended}
local rows = {
  -- bind_elementwise.c
  {"round", function(e) return ember.round(x, 1, e) end},
  {"round_", function(e) return x:clone():round_(1, e) end},
  {"gelu", function(e) return x:gelu(e) end},
  {"gelu_", function(e) return x:clone():gelu_(e) end},
  {"clamp", function(e) return x:clamp(-1, 1, e) end},
  {"clamp_min", function(e) return x:clamp_min(0, e) end},
  {"clamp_max", function(e) return x:clamp_max(0, e) end},
  {"clamp_", function(e) return x:clone():clamp_(-1, 1, e) end},
  {"clamp_min_", function(e) return x:clone():clamp_min_(0, e) end},
  {"clamp_max_", function(e) return x:clone():clamp_max_(0, e) end},
  {"masked_fill", function(e) return x:masked_fill(mask, 0, e) end},
  {"masked_fill_", function(e) return x:clone():masked_fill_(mask, 0, e) end},
  {"frac", function(e) return ember.frac(x, e) end},
  {"frac_", function(e) return x:clone():frac_(e) end},
  {"logit", function(e) return ember.logit(p, 1e-6, e) end},
  {"logit_", function(e) return p:clone():logit_(1e-6, e) end},
  {"nan_to_num", function(e) return ember.nan_to_num(x, 0, 1, -1, e) end},
  {"nan_to_num_", function(e) return x:clone():nan_to_num_(0, 1, -1, e) end},
  {"isnan", function(e) return ember.isnan(x, e) end},
  {"isinf", function(e) return x:isinf(e) end},
  {"isfinite", function(e) return x:isfinite(e) end},
  {"isposinf", function(e) return ember.isposinf(x, e) end},
  {"isneginf", function(e) return ember.isneginf(x, e) end},
  {"sgn", function(e) return ember.sgn(x, e) end},
  {"sgn_", function(e) return x:clone():sgn_(e) end},
  {"floor_divide", function(e) return ember.floor_divide(x, 2, e) end},
  {"floor_divide_", function(e) return x:clone():floor_divide_(2, e) end},
  {"xlogy", function(e) return ember.xlogy(x, p, e) end},
  {"xlogy_", function(e) return x:clone():xlogy_(p, e) end},
  {"logical_xor", function(e) return ember.logical_xor(mask, mask, e) end},
  {"logical_xor_", function(e) return mask:clone():logical_xor_(mask, e) end},
  {"heaviside", function(e) return ember.heaviside(x, p, e) end},
  {"heaviside_", function(e) return x:clone():heaviside_(p, e) end},
  {"lerp", function(e) return ember.lerp(x, p, 0.5, e) end},
  {"lerp_", function(e) return x:clone():lerp_(p, 0.5, e) end},
  {"addcmul", function(e) return ember.addcmul(x, p, p, 2, e) end},
  {"addcmul_", function(e) return x:clone():addcmul_(p, p, 2, e) end},
  {"addcdiv", function(e) return ember.addcdiv(x, p, p, 2, e) end},
  {"addcdiv_", function(e) return x:clone():addcdiv_(p, p, 2, e) end},
  {"isclose", function(e) return ember.isclose(x, p, 1e-5, 1e-8, false, e) end},
  {"allclose", function(e) return ember.allclose(x, p, 1e-5, 1e-8, false, e) end},
  {"equal", function(e) return ember.equal(x, p, e) end},
  {"polygamma", function(e) return ember.polygamma(1, p, e) end},
  {"polygamma", function(e) return p:polygamma(1, e) end},
  {"polygamma_", function(e) return p:clone():polygamma_(1, e) end},
  {"where", function(e) return ember.where(mask, x, p, e) end},
  {"where", function(e) return x:where(mask, p, e) end},
  -- bind_nn.c
  {"conv2d", function(e) return ember.conv2d(img, w33, nil, 1, 1, 1, 1, e) end},
  {"conv_transpose2d", function(e) return ember.conv_transpose2d(img, w33, nil, 1, 0, 0, 1, 1, e) end},
  {"max_pool2d", function(e) return ember.max_pool2d(img, 2, 2, 0, 1, false, false, e) end},
  {"avg_pool2d", function(e) return ember.avg_pool2d(img, 2, 2, 0, false, true, nil, e) end},
  {"adaptive_avg_pool1d", function(e) return ember.adaptive_avg_pool1d(ember.ones(1, 1, 4), 2, e) end},
  {"adaptive_avg_pool2d", function(e) return ember.adaptive_avg_pool2d(img, 2, e) end},
  {"adaptive_avg_pool3d", function(e) return ember.adaptive_avg_pool3d(ember.ones(1, 1, 2, 2, 2), 1, e) end},
  {"adaptive_max_pool2d", function(e) return ember.adaptive_max_pool2d(img, 2, false, e) end},
  {"batch_norm", function(e) return ember.batch_norm(img, nil, nil, nil, nil, true, 0.1, 1e-5, e) end},
  {"group_norm", function(e) return ember.group_norm(img, 1, nil, nil, 1e-5, e) end},
  {"layer_norm", function(e) return ember.layer_norm(img, 4, nil, nil, 1e-5, e) end},
  {"linear", function(e) return ember._linear(ember.ones(2, 3), ember.ones(4, 3), nil, nil, e) end},
  -- bind_random.c
  {"Generator", function(e) return ember.Generator("cpu", e) end},
  {"manual_seed", function(e) return ember.manual_seed(5, e) end},
  {"seed", function(e) return ember.seed(e) end},
  {"initial_seed", function(e) return ember.initial_seed(e) end},
  {"get_rng_state", function(e) return ember.get_rng_state(e) end},
  {"set_rng_state", function(e) return ember.set_rng_state(ember.get_rng_state(), e) end},
  {"set_rng_state", function(e) return ember.set_rng_state(5, 0, e) end},
  {"Generator:manual_seed", function(e) return ember.Generator():manual_seed(5, e) end},
  {"Generator:seed", function(e) return ember.Generator():seed(e) end},
  {"Generator:initial_seed", function(e) return ember.Generator():initial_seed(e) end},
  {"Generator:get_state", function(e) return ember.Generator():get_state(e) end},
  {"Generator:set_state", function(e) local g = ember.Generator(); return g:set_state(g:get_state(), e) end},
  {"randint", function(e) return ember.randint(0, 5, {3}, {}, e) end, positional_only = true},
  {"randperm", function(e) return ember.randperm(3, {}, e) end, positional_only = true},
  {"rand_like", function(e) return ember.rand_like(x, e) end},
  {"randn_like", function(e) return ember.randn_like(x, e) end},
  {"randint_like", function(e) return ember.randint_like(x, 0, 5, e) end},
  {"uniform_", function(e) return x:clone():uniform_(0, 1, e) end},
  {"normal_", function(e) return x:clone():normal_(0, 1, e) end},
  {"multinomial", function(e) return ember.multinomial(p, 2, true, e) end},
  {"multinomial", function(e) return p:multinomial(2, true, e) end},
  -- bind_autograd.c
  {"detach", function(e) return x:detach(e) end},
  {"detach", function(e) return ember.detach(x, e) end},
  {"requires_grad_", function(e) return x:clone():requires_grad_(true, e) end},
  {"retain_grad", function(e) return (x:clone():requires_grad_() * 2):retain_grad(e) end},
  {"register_hook", function(e) return x:clone():requires_grad_():register_hook(function() end, e) end},
  {"register_post_accumulate_grad_hook", function(e)
    return x:clone():requires_grad_():register_post_accumulate_grad_hook(function() end, e)
  end},
  {"queue_callback", function(e)   -- from a hook, during backward
    local y = ember.ones(1, {requires_grad = true}) * 2
    y:register_hook(function() ember.autograd.queue_callback(function() end, e) end)
    y:sum():backward()
  end},
  {"backward", function(e) return (x:clone():requires_grad_() * 2):sum():backward(nil, false, false, nil, e) end},
  {"no_grad", function(e) return ember.no_grad(nil, e) end, positional_only = true},
  {"enable_grad", function(e) return ember.enable_grad(nil, e) end, positional_only = true},
  {"set_grad_enabled", function(e) return ember.set_grad_enabled(ember.is_grad_enabled(), e) end},
  {"is_grad_enabled", function(e) return ember.is_grad_enabled(e) end},
  {"autograd.grad", function(e)
    local w = ember.ones(2, {requires_grad = true})
    return ember.autograd.grad((w * 2):sum(), w, e)
  end},
}

describe("an argument a function does not read", function()
  it("one positional argument too many is an error naming the op, at the caller's line", function()
    for _, row in ipairs(rows) do
      local op, f = row[1], row[2]
      -- the call itself is valid: only the extra value makes it fail
      local ok, e = pcall(f, nil)
      assert.is_true(ok, op .. ": " .. tostring(e))
      refuses(op, function() local r = f(5); return r end, "an extra positional argument")
      refuses(op, function() local r = f(ember.zeros(1)); return r end, "an extra tensor")
    end
  end)

  it("an option it does not take is an error naming the op, at the caller's line", function()
    for _, row in ipairs(rows) do
      local op, f = row[1], row[2]
      if not row.positional_only then
        local e = refuses(op, function() local r = f({bogus = 1}); return r end, "{bogus = 1}")
        assert.is_truthy(e:find("bogus", 1, true), e)
      end
    end
    -- options PyTorch has but these functions do not read: refused, not ignored
    local g = ember.Generator()
    refuses("rand_like", function() return ember.rand_like(x, {generator = g}) end, "rand_like's generator")
    refuses("randint_like", function() return ember.randint_like(x, 5, {generator = g}) end, "randint_like's generator")
    local w = ember.ones(2, {requires_grad = true})
    refuses("autograd.grad", function()
      return ember.autograd.grad((w * 2):sum(), w, {materialize_grads = true})
    end, "materialize_grads")
    refuses("autograd.grad", function() return ember.autograd.grad((w * 2):sum(), w, ember.tensor(1.0)) end,
            "grad_outputs by position")
    refuses("isnan", function() return ember.isnan(x, {out = ember.zeros(3, {dtype = "bool"})}) end, "isnan's out")
    refuses("masked_fill_", function() return x:clone():masked_fill_(mask, 0, {out = x}) end, "an in-place op's out")
    refuses("clamp_", function() return x:clone():clamp_(0, {out = x}) end, "clamp_'s out")
    -- out is a keyword: by position it is refused, never taken for the next positional argument
    local e = refuses("round", function() return ember.round(x, 1, ember.zeros(3)) end, "out by position")
    assert.is_truthy(e:find("the keyword arguments (out) go in a trailing options table", 1, true), e)
    refuses("addcmul", function() return ember.addcmul(x, p, p, 1, ember.zeros(3)) end, "out by position")
    refuses("multinomial", function() return ember.multinomial(p, 1, true, ember.Generator()) end,
            "generator by position")
    -- the message counts a method's arguments after self, as Lua's own do
    e = refuses("clamp", function() return x:clamp(-1, 1, 5) end, "an extra number")
    assert.is_truthy(e:find("clamp: argument 3: unexpected argument (a number); the keyword arguments (out)", 1, true), e)
  end)
end)

describe("calls these functions take", function()
  it("still work: their keywords, positional forms and trailing nils", function()
    near({-2, 0, 3}, x:round(nil))   -- half to even
    near({-2, 0.5, 3}, x:round(1, nil))
    near({1.2, -2.6}, f64({1.234, -2.567}):round({decimals = 1}))
    -- round_ and gelu_ with their defaults spelt out take the in-place kernel's path
    near({2, -2, 3}, f64({1.5, -2.5, 3.2}):round_(0))
    near({2, -2, 3}, f64({1.5, -2.5, 3.2}):round_({decimals = 0}))
    near(x:gelu():tolist(), x:clone():gelu_({approximate = "none"}))
    near(x:gelu({approximate = "tanh"}):tolist(), x:clone():gelu_({approximate = "tanh"}))
    near({-1, 0.5, 1}, x:clamp(-1, 1, nil))
    near({-2, 0.5, 1}, x:clamp(nil, 1))
    near({0, 0.5, 3}, x:clamp(0))
    near({-1, 0.5, 1}, x:clip(-1, 1))
    near({0, 0.5, 3}, x:clone():clamp_min_(0, nil))
    near({-2, 0, 0}, x:clone():clamp_max_(0))
    near({-2, 0.5, 3}, ember.nan_to_num(x, {nan = 0, posinf = 1}))
    near({0, 0}, ember.logit(f64({0.5, 0.5}), {eps = 1e-6}))
    near({1 + 2 * 0.0625, 1 + 2 * 0.25}, ember.addcmul(f64({1, 1}), f64({0.25, 0.5}), f64({0.25, 0.5}), {value = 2}))
    assert.is_true(ember.allclose(x, x:clone(), {rtol = 0, atol = 0, equal_nan = true}))
    assert.is_true(ember.allclose(x, x:clone(), 0, 0, true, nil))
    assert.is_true(ember.equal(x, x:clone(), nil))
    near({-1, 0, 1}, ember.floor_divide(f64({-2, 0.5, 3}), 2, nil))
    local g = ember.Generator({device = "cpu"})
    g:manual_seed(11)
    local a = ember.rand(3, {generator = g})
    g:set_state(11, 0)
    assert.is_true(ember.equal(a, ember.rand(3, {generator = g})))
    assert.are.equal(11, g:initial_seed())
    ember.set_rng_state(12, 0, nil)
    local b = x:clone():uniform_(0, 1, {generator = nil})
    ember.set_rng_state({seed = 12, offset = 0})
    assert.is_true(ember.equal(b, x:clone():uniform_({from = 0, to = 1})))
    assert.are.equal("float32", ember.rand_like(x, {dtype = "float32"}).dtype)
    assert.are.same({3}, ember.randint_like(x, 5, nil).shape)
    local m = ember.multinomial(f64({0, 1, 0}), 2, {replacement = true, generator = g})
    assert.are.same({2, 2}, m:tolist())
    local leaf = ember.ones(2):requires_grad_(true, nil)
    assert.is_false(ember.ones(2):requires_grad_(false).requires_grad)
    local y = (leaf * 3):sum()
    y:backward(nil, {retain_graph = true})
    y:backward()
    near({6, 6}, leaf.grad)
    assert.are.same({7}, {ember.no_grad(function(v) return v end, 7)})
    do local guard <close> = ember.no_grad(nil) assert.is_false(ember.is_grad_enabled()) end
    assert.is_true(ember.set_grad_enabled(true, nil))
    near({2, 2}, ember.autograd.grad((leaf * 2):sum(), leaf, {retain_graph = false}))
    near({0.5}, ember.adaptive_avg_pool1d(f64({0, 1}):view(1, 1, 2), 1, nil))
  end)
end)

describe("out=", function()
  -- runs the call into out, checks the result is out, and a wrong-shape out is refused
  local function into(op, out, call, wrong)
    local r = call(out)
    assert.is_true(rawequal(r, out), op .. " did not return out")
    local e = refuses(op, function() local r2 = call(wrong); return r2 end, "a wrong-shape out")
    assert.is_truthy(e:find("shape", 1, true), e)
    return out
  end
  local function zeros(n, dtype) return ember.zeros(n, {dtype = dtype or "float64"}) end

  it("writes the elementwise results into out", function()
    local z5 = zeros(5)
    near({1.2, -2.6, 3}, into("round", zeros(3), function(o)
      return ember.round(f64({1.234, -2.567, 3.0}), {decimals = 1, out = o}) end, z5))
    near({1.2, -2.6}, into("round", zeros(2), function(o) return ember.round(f64({1.234, -2.567}), 1, {out = o}) end, z5))
    near({-1, 0.5, 1}, into("clamp", zeros(3), function(o) return ember.clamp(x, -1, 1, {out = o}) end, z5))
    -- the options table may stand in the place of max
    near({0, 0.5, 3}, into("clamp", zeros(3), function(o) return x:clamp(0, {out = o}) end, z5))
    near({-2, 0.5, 1}, into("clamp", zeros(3), function(o) return x:clamp(nil, 1, {out = o}) end, z5))
    near({0, 0.5, 3}, into("clamp_min", zeros(3), function(o) return ember.clamp_min(x, 0, {out = o}) end, z5))
    near({-2, 0.5, 1}, into("clamp_max", zeros(3), function(o) return ember.clamp_max(x, 1, {out = o}) end, z5))
    near({0.5, -0.25}, into("frac", zeros(2), function(o) return ember.frac(f64({1.5, -2.25}), {out = o}) end, z5))
    -- logit(p) = log(p / (1 - p)): 0 at 1/2, log 3 at 3/4
    near({0, math.log(3)}, into("logit", zeros(2), function(o) return ember.logit(f64({0.5, 0.75}), {out = o}) end, z5))
    near({0, math.log(3)}, into("logit", zeros(2), function(o)
      return ember.logit(f64({0.5, 0.75}), 1e-6, {out = o}) end, z5))
    local special = f64({0 / 0, math.huge, -math.huge, 1})
    near({0, 9, -9, 1}, into("nan_to_num", zeros(4), function(o)
      return ember.nan_to_num(special, 0, 9, -9, {out = o}) end, z5))
    near({0, 9, -9, 1}, into("nan_to_num", zeros(4), function(o)
      return ember.nan_to_num(special, {posinf = 9, neginf = -9, nan = 0, out = o}) end, z5))
    local b5 = zeros(5, "bool")
    assert.are.same({false, true, false, false}, into("isposinf", zeros(4, "bool"), function(o)
      return ember.isposinf(special, {out = o}) end, b5):tolist())
    assert.are.same({false, false, true, false}, into("isneginf", zeros(4, "bool"), function(o)
      return ember.isneginf(special, {out = o}) end, b5):tolist())
    near({-1, 1, 1}, into("sgn", zeros(3), function(o) return ember.sgn(x, {out = o}) end, z5))
    -- floor(-7 / 2) = -4
    near({3, -4}, into("floor_divide", zeros(2), function(o) return ember.floor_divide(f64({7, -7}), 2, {out = o}) end, z5))
    -- xlogy(0, y) = 0; 2 log 4
    near({0, 2 * math.log(4)}, into("xlogy", zeros(2), function(o)
      return ember.xlogy(f64({0, 2}), f64({5, 4}), {out = o}) end, z5))
    assert.are.same({false, true, true}, into("logical_xor", zeros(3, "bool"), function(o)
      return ember.logical_xor(ember.tensor({true, false, true}), ember.tensor({true, true, false}), {out = o})
    end, b5):tolist())
    near({0, 0.5, 1}, into("heaviside", zeros(3), function(o)
      return ember.heaviside(f64({-1, 0, 2}), f64({0.5}), {out = o}) end, z5))
    -- 0 + 0.25 (10 - 0), 10 + 0.25 (20 - 10)
    near({2.5, 12.5}, into("lerp", zeros(2), function(o)
      return ember.lerp(f64({0, 10}), f64({10, 20}), 0.25, {out = o}) end, z5))
    -- 1 + 0.5 * 2 * 4, 1 + 0.5 * 3 * 5
    near({5, 8.5}, into("addcmul", zeros(2), function(o)
      return ember.addcmul(f64({1, 1}), f64({2, 3}), f64({4, 5}), {value = 0.5, out = o}) end, z5))
    -- 1 + 2 * 2 / 4, 1 + 2 * 3 / 5
    near({2, 2.2}, into("addcdiv", zeros(2), function(o)
      return ember.addcdiv(f64({1, 1}), f64({2, 3}), f64({4, 5}), 2, {out = o}) end, z5))
    -- trigamma(1) = pi^2 / 6, trigamma(2) = pi^2 / 6 - 1
    near({math.pi ^ 2 / 6, math.pi ^ 2 / 6 - 1}, into("polygamma", zeros(2), function(o)
      return ember.polygamma(1, f64({1, 2}), {out = o}) end, z5))
    near({-2, 0.5, 3}, into("where", zeros(3), function(o)
      return ember.where(mask, x, p, {out = o}) end, z5))
    near({-2, 0.5, 3}, into("where", zeros(3), function(o) return x:where(mask, p, {out = o}) end, z5))
    near({0, 0.5, 0}, into("where", zeros(3), function(o) return ember.where(mask, 0, p, {out = o}) end, z5))
  end)

  it("takes out's dtype where the result casts to it safely, and refuses the rest", function()
    local o = ember.zeros(3, {dtype = "float64"})
    ember.clamp(ember.tensor({-5, 1, 7}), 0, 5, {out = o})   -- int64 into float64
    near({0, 1, 5}, o)
    local e = refuses("frac", function() return ember.frac(x, {out = ember.zeros(3, {dtype = "int64"})}) end,
                      "an unsafe cast")
    assert.is_truthy(e:find("can't be cast", 1, true), e)
    refuses("where", function() return ember.where(mask, x, p, {out = 5}) end, "a number as out")
    local w = f64({1, 2}):requires_grad_()
    local keep = zeros(2)
    e = refuses("lerp", function() return ember.lerp(w, f64({3, 4}), 0.5, {out = keep}) end, "out with a gradient")
    assert.is_truthy(e:find("records no gradient", 1, true), e)
    near({0, 0}, keep)
  end)

  it("writes the random factories' draws into out, in out's dtype", function()
    -- the same generator state gives the same draws with or without out
    local o = zeros({2, 2})
    ember.manual_seed(3)
    local r = ember.rand(2, 2, {out = o})
    assert.is_true(rawequal(r, o))
    ember.manual_seed(3)
    local expect = ember.rand(2, 2, {dtype = "float64"})
    assert.is_true(ember.equal(o, expect))
    for _, v in ipairs(o:view(-1):tolist()) do assert.is_true(v >= 0 and v < 1) end
    ember.manual_seed(4)
    o = ember.zeros(3, {dtype = "float64"})
    assert.is_true(rawequal(ember.randn({3}, {out = o}), o))
    ember.manual_seed(4)
    assert.is_true(ember.equal(o, ember.randn(3, {dtype = "float64"})))
    refuses("rand", function() return ember.rand(2, 2, {out = ember.zeros(3)}) end, "a wrong-shape out")
    refuses("randn", function() return ember.randn(2, {out = ember.zeros(3)}) end, "a wrong-shape out")
    -- randint's draws lie in [low, high)
    o = ember.zeros(6, {dtype = "int64"})
    assert.is_true(rawequal(ember.randint(2, 5, {6}, {out = o}), o))
    for _, v in ipairs(o:tolist()) do assert.is_true(v >= 2 and v < 5, tostring(v)) end
    refuses("randint", function() return ember.randint(5, {6}, {out = ember.zeros(2, {dtype = "int64"})}) end,
            "a wrong-shape out")
    -- randperm(4): 1..4 in some order
    o = ember.zeros(4, {dtype = "int64"})
    assert.is_true(rawequal(ember.randperm(4, {out = o}), o))
    local seen = o:tolist()
    table.sort(seen)
    assert.are.same({1, 2, 3, 4}, seen)
    refuses("randperm", function() return ember.randperm(4, {out = ember.zeros(3, {dtype = "int64"})}) end,
            "a wrong-shape out")
    -- all the mass on category 2
    o = ember.zeros(3, {dtype = "int64"})
    assert.is_true(rawequal(ember.multinomial(f64({0, 1, 0}), 3, true, {out = o}), o))
    assert.are.same({2, 2, 2}, o:tolist())
    refuses("multinomial", function()
      return ember.multinomial(f64({0, 1, 0}), 3, true, {out = ember.zeros(2, {dtype = "int64"})})
    end, "a wrong-shape out")
    -- requires_grad marks out, as PyTorch's factories do
    o = ember.zeros(2)
    ember.rand(2, {out = o, requires_grad = true})
    assert.is_true(o.requires_grad)
  end)
end)
