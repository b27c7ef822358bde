-- ember.autocast: regions, nesting, the per-op dtype policy, gradients and the weight cache.
-- Expected values come from hand values (numbers that bfloat16/float16 cannot hold) and from
-- the same computation written with explicit casts, never from autocast itself.
local ember = require "ember"
local h = require "helpers"
local F = ember.nn.functional

local function region(opts, fn) return ember.autocast("cpu", opts, fn) end

-- a and b hold the same values (the largest difference when not)
local function same(a, b, tol)
  assert.same(a.shape, b.shape)
  local d = (a:double() - b:double()):abs():max():item()
  assert(d <= (tol or 0), "largest difference " .. d)
end

describe("ember.autocast regions", function()
  it("is off by default, on inside a region, and restored after it", function()
    assert.is_false(ember.is_autocast_enabled("cpu"))
    assert.is_false(ember.is_autocast_enabled("cuda"))
    assert.is_false(ember.is_autocast_enabled())     -- PyTorch's default device: cuda
    do
      local _ <close> = ember.autocast("cpu")
      assert.is_true(ember.is_autocast_enabled("cpu"))
      assert.is_false(ember.is_autocast_enabled("cuda"))
      assert.equal("bfloat16", ember.get_autocast_dtype("cpu"))
    end
    assert.is_false(ember.is_autocast_enabled("cpu"))
  end)

  it("defaults to float16 on cuda and bfloat16 on cpu, as PyTorch", function()
    assert.equal("bfloat16", ember.get_autocast_dtype("cpu"))
    assert.equal("float16", ember.get_autocast_dtype("cuda"))
    local g = ember.autocast("cuda")
    assert.equal("float16", ember.get_autocast_dtype("cuda"))
    assert.is_true(ember.is_autocast_enabled("cuda"))
    g:close()
    assert.is_false(ember.is_autocast_enabled("cuda"))
  end)

  it("nests: an inner region changes the dtype or turns autocast off, the outer state comes back", function()
    local x, w = ember.randn(2, 3), ember.randn(3, 3)
    region({dtype = "bfloat16"}, function()
      assert.equal("bfloat16", x:matmul(w).dtype)
      region({dtype = "float16"}, function()
        assert.equal("float16", ember.get_autocast_dtype("cpu"))
        assert.equal("float16", x:matmul(w).dtype)
      end)
      region({enabled = false}, function()
        assert.is_false(ember.is_autocast_enabled("cpu"))
        assert.equal("float32", x:matmul(w).dtype)
      end)
      assert.equal("bfloat16", ember.get_autocast_dtype("cpu"))
      assert.equal("bfloat16", x:matmul(w).dtype)
    end)
    assert.equal("float32", x:matmul(w).dtype)
  end)

  it("the function form returns fn's results and restores the state when fn raises", function()
    local a, b, c = region(nil, function() return 1, nil, "three" end)
    assert.equal(1, a); assert.is_nil(b); assert.equal("three", c)
    local ok, err = pcall(region, {dtype = "bfloat16"}, function() error("boom") end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("boom", 1, true))
    assert.is_false(ember.is_autocast_enabled("cpu"))
    -- autocast(device, fn) without options
    assert.equal("bfloat16", ember.autocast("cpu", function() return ember.ones(2, 2):mm(ember.ones(2, 2)) end).dtype)
  end)

  it("a <close> region is ended by an error inside it", function()
    local ok = pcall(function()
      local _ <close> = ember.autocast("cpu")
      error("inside")
    end)
    assert.is_false(ok)
    assert.is_false(ember.is_autocast_enabled("cpu"))
  end)

  it("closing twice is harmless; closing out of order is an error that names the rule", function()
    local g = ember.autocast("cpu")
    g:close(); g:close()
    assert.is_false(ember.is_autocast_enabled("cpu"))
    local outer = ember.autocast("cpu")
    local inner = ember.autocast("cpu", {dtype = "float16"})
    h.err(function() outer:close() end, "reverse order of opening")
    inner:close(); outer:close()
    assert.is_false(ember.is_autocast_enabled("cpu"))
  end)

  it("refuses bad arguments with errors at the caller's line", function()
    h.err(function() local g = ember.autocast("tpu"); return g end, "unsupported device type 'tpu'")
    h.err(function() local g = ember.autocast("cuda:0"); return g end, "without an index")
    h.err(function() local g = ember.autocast(1); return g end, "expected a device type")
    h.err(function() local g = ember.autocast("cpu", {dtype = "float32"}); return g end,
          "dtype must be \"bfloat16\" or \"float16\", got float32")
    h.err(function() local g = ember.autocast("cpu", {dtype = "int8"}); return g end, "dtype must be")
    h.err(function() local g = ember.autocast("cpu", {enable = true}); return g end, "unknown option 'enable'")
    h.err(function() local g = ember.autocast("cpu", {enabled = 1}); return g end, "enabled must be a boolean")
    h.err(function() local g = ember.autocast("cpu", "bf16"); return g end, "expected an options table")
    h.err(function() local g = ember.autocast("cpu", {}, 3); return g end, "expected a function")
    h.err(function() local d = ember.get_autocast_dtype("gpu"); return d end, "expected a device type")
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, err = pcall(function() local g = ember.autocast("cpu", {dtype = "float64"}); return g end)
    assert.is_false(ok)
    assert.truthy(err:find("autocast_spec.lua:" .. line, 1, true), err)
    assert.is_false(ember.is_autocast_enabled("cpu"))
  end)
end)

describe("ember.autocast op policy", function()
  local x = ember.randn(4, 6)
  local w = ember.randn(5, 6)
  local b = ember.randn(5)

  -- op name -> function of (x [4,6] float32, w [5,6], b [5]) and its result dtype under a
  -- bfloat16 region: PyTorch's lists
  local cases = {
    {"matmul", function() return x:matmul(w:t()) end, "bfloat16"},
    {"mm", function() return ember.mm(x, w:t()) end, "bfloat16"},
    {"bmm", function() return x:view(1, 4, 6):bmm(w:t():reshape(1, 6, 5)) end, "bfloat16"},
    {"addmm", function() return ember.addmm(b, x, w:t()) end, "bfloat16"},
    {"linear", function() return F.linear(x, w, b) end, "bfloat16"},
    {"linear without bias", function() return F.linear(x, w) end, "bfloat16"},
    {"linear 3-D", function() return F.linear(x:view(2, 2, 6), w, b) end, "bfloat16"},
    {"einsum", function() return ember.einsum("ij,kj->ik", x, w) end, "bfloat16"},
    {"conv2d", function() return F.conv2d(x:view(1, 1, 4, 6), w:narrow(1, 1, 2):reshape(1, 1, 2, 6)) end, "bfloat16"},
    {"conv1d", function() return F.conv1d(x:view(1, 4, 6), ember.randn(2, 4, 3)) end, "bfloat16"},
    {"attention", function()
      return F.scaled_dot_product_attention(x:view(1, 4, 6), x:view(1, 4, 6), x:view(1, 4, 6))
    end, "bfloat16"},
    {"prelu", function() return F.prelu(x, ember.tensor({0.25})) end, "bfloat16"},
    {"softmax", function() return x:softmax(2) end, "float32"},
    {"log_softmax", function() return F.log_softmax(x, 2) end, "float32"},
    {"layer_norm", function() return F.layer_norm(x, {6}) end, "float32"},
    {"group_norm", function() return F.group_norm(x:view(2, 2, 6), 2) end, "float32"},
    {"batch_norm", function() return F.batch_norm(x, nil, nil, nil, nil, true) end, "float32"},
    {"cross_entropy", function() return F.cross_entropy(x, ember.tensor({1, 2, 3, 4})) end, "float32"},
    {"mse_loss", function() return F.mse_loss(x, x * 2) end, "float32"},
    {"l1_loss", function() return F.l1_loss(x, x * 2) end, "float32"},
    {"sum", function() return x:sum() end, "float32"},
    {"mean", function() return x:mean(1) end, "float32"},
    {"prod", function() return x:prod(2) end, "float32"},
    {"cumsum", function() return x:cumsum(2) end, "float32"},
    {"norm", function() return ember.linalg.vector_norm(x) end, "float32"},
    {"logsumexp", function() return x:logsumexp(2) end, "float32"},
    {"exp", function() return x:exp() end, "float32"},
    {"log", function() return x:abs():log() end, "float32"},
    {"pow", function() return x:pow(2) end, "float32"},
    {"^", function() return x ^ 2 end, "float32"},
    {"softplus", function() return F.softplus(x) end, "float32"},
    {"normalize", function() return F.normalize(x) end, "float32"},
    {"relu (no policy)", function() return F.relu(x) end, "float32"},
    {"add (no policy)", function() return x + x end, "float32"},
  }

  for _, c in ipairs(cases) do
    it(c[1] .. " gives " .. c[3] .. " from float32 inputs", function()
      local y = region({dtype = "bfloat16"}, c[2])
      if type(y) == "table" and not ember.is_tensor(y) then y = y[1] end
      assert.equal(c[3], y.dtype)
    end)
  end

  -- PyTorch's CPU lists (tests/lua/fixtures/autocast_cpu.lua, written by
  -- scripts/fixtures/make_autocast_fixtures.py): each op's result dtype under a CPU
  -- region of dtype d, from inputs of dtype d ("low": is the op cast up to float32?) or
  -- float32 ("f32": is it cast down to d?); ember's calls of the same ops by name are in
  -- autocast_calls.lua
  local calls = require "autocast_calls"
  local expected = dofile("tests/lua/fixtures/autocast_cpu.lua")
  for _, d in ipairs({"bfloat16", "float16"}) do
    it("the result dtypes of PyTorch 2.15's CPU lists under a " .. d .. " region", function()
      local function low(...) return (ember.rand(...) * 0.5 + 0.25):to(d) end
      local function f32(...) return ember.rand(...) end
      local wrong = calls.mismatches(expected, "cpu", d, low, f32, ember.tensor({2, 3, 1}))
      assert(#wrong == 0, table.concat(wrong, "; "))
    end)
  end

  it("a composite's parts do not cast again, and autocast comes back after its error", function()
    region(nil, function()
      -- mv is in no CPU list; the matmul it is made of is
      assert.equal("float32", ember.mv(x, w[1]).dtype)
      h.has(h.err(function() return ember.mv(x, ember.randn(5)) end), "mv: ")
      h.has(h.err(ember._without_autocast, 3), "function expected")
      assert.equal("bfloat16", x:matmul(w:t()).dtype)     -- still casting after the error
    end)
  end)

  it("promote ops and binary ops take the widest input", function()
    local xb = x:bfloat16()
    region(nil, function()
      assert.equal("float32", ember.cat({xb, x}).dtype)
      assert.equal("bfloat16", ember.cat({xb, xb}).dtype)
      assert.equal("float32", ember.stack({x, xb}).dtype)
      assert.equal("float32", ember.addcmul(x, xb, xb).dtype)
      assert.equal("float32", ember.atan2(xb, x).dtype)
      assert.equal("float32", (xb + x).dtype)
      assert.equal("float32", xb:matmul(w:t()):float().dtype)
      -- float16 with bfloat16 promotes to float32
      assert.equal("float32", ember.cat({xb, x:half()}).dtype)
    end)
  end)

  it("leaves float64 and integer tensors alone", function()
    local xd, wd = x:double(), w:double()
    region(nil, function()
      assert.equal("float64", xd:matmul(wd:t()).dtype)
      assert.equal("float64", xd:softmax(2).dtype)
      assert.equal("int64", ember.tensor({{1, 2}, {3, 4}}):matmul(ember.tensor({{1, 0}, {0, 1}})).dtype)
      assert.equal("int64", ember.tensor({1, 2, 3}):sum().dtype)
    end)
  end)

  it("casts only tensors on the region's device type", function()
    ember.autocast("cuda", nil, function()
      assert.equal("float32", x:matmul(w:t()).dtype)
      assert.equal("float32", x:softmax(2).dtype)
    end)
  end)

  it("the caller's list given to cat is not changed", function()
    local list = {x, x}
    region(nil, function()
      local _ = ember.cat(list)
    end)
    assert.equal(x, list[1])
    assert.equal("float32", list[1].dtype)
  end)

  it("batch_norm has no policy: a bfloat16 input stays bfloat16 beside float32 parameters", function()
    -- PyTorch 2.15: conv2d then BatchNorm2d under CPU bfloat16 autocast give bfloat16
    local bn = ember.nn.BatchNorm2d(2)
    local y = region(nil, function()
      return bn(F.conv2d(ember.randn(2, 3, 4, 4), ember.randn(2, 3, 1, 1)))
    end)
    assert.equal("bfloat16", y.dtype)
    assert.equal("float32", bn.running_mean.dtype)
  end)

  it("batch_norm's running statistics are still updated in place", function()
    local rm, rv = ember.zeros(6), ember.ones(6)
    local xb = ember.randn(8, 6):bfloat16()
    region(nil, function() return F.batch_norm(xb, rm, rv, nil, nil, true, 0.5) end)
    -- running_mean = 0.5 * batch mean of the (float32) input
    same(rm, xb:float():mean(1) * 0.5, 1e-6)
  end)
end)

describe("ember.autocast values and gradients", function()
  it("computes in bfloat16: 1 + 2^-9 rounds to 1 inside, not outside (hand values)", function()
    local a = ember.tensor({{1 + 2 ^ -9}})
    local one = ember.tensor({{1.0}})
    assert.equal(1 + 2 ^ -9, a:matmul(one):item())
    local y = region(nil, function() return a:matmul(one) end)
    assert.equal(1.0, y:item())
    -- float16 holds 1 + 2^-9 (10 mantissa bits) but not 1 + 2^-12
    local c = ember.tensor({{1 + 2 ^ -12}})
    assert.equal(1.0, region({dtype = "float16"}, function() return c:matmul(one) end):item())
    assert.equal(1 + 2 ^ -9, region({dtype = "float16"}, function() return a:matmul(one) end):item())
  end)

  it("a region's forward and backward equal the same ops with explicit casts", function()
    ember.manual_seed(7)
    local x = ember.randn(8, 16)
    local target = ember.randint(1, 5, {8})
    local w1, b1 = ember.randn(32, 16) * 0.3, ember.randn(32) * 0.1
    local w2, b2 = ember.randn(4, 32) * 0.3, ember.randn(4) * 0.1
    local function params()
      local ps = {w1:clone(), b1:clone(), w2:clone(), b2:clone()}
      for _, p in ipairs(ps) do p.requires_grad = true end
      return ps
    end
    local A = params()
    local loss_a = region(nil, function()
      local hdn = F.relu(F.linear(x, A[1], A[2]))
      return F.cross_entropy(F.linear(hdn, A[3], A[4]), target)
    end)
    loss_a:backward()
    local B = params()
    local bf = function(t) return t:bfloat16() end
    local hdn = F.relu(F.linear(bf(x), bf(B[1]), bf(B[2])))
    local logits = F.linear(hdn, bf(B[3]), bf(B[4]))
    local loss_b = F.cross_entropy(logits:float(), target)
    loss_b:backward()
    assert.equal("float32", loss_a.dtype)
    assert.equal(loss_b:item(), loss_a:item())
    for i = 1, 4 do
      assert.equal("float32", A[i].grad.dtype)
      same(A[i].grad, B[i].grad)
    end
  end)

  it("a weight used twice in a region gets both gradients (its cast is cached and shared)", function()
    local w = ember.tensor({{0.5, -1.0}, {2.0, 0.25}}, {requires_grad = true})
    local x = ember.tensor({{1.0, 2.0}})
    local y = region(nil, function() return x:matmul(w):matmul(w):sum() end)
    y:backward()
    -- y = x W W 1; dy/dW = x^T (W 1)^T + (x W)^T 1^T, exact in bfloat16 for these values
    local W1 = {0.5 - 1.0, 2.0 + 0.25}             -- W 1
    local xW = {1 * 0.5 + 2 * 2.0, 1 * -1.0 + 2 * 0.25}
    local expect = ember.tensor({{1 * W1[1] + xW[1], 1 * W1[2] + xW[1]},
                                 {2 * W1[1] + xW[2], 2 * W1[2] + xW[2]}})
    same(w.grad, expect)
  end)

  it("a weight changed in place inside a region is cast again (no stale cached cast)", function()
    local w = ember.tensor({{1.0}}, {requires_grad = true})
    local x = ember.tensor({{3.0}})
    region(nil, function()
      assert.equal(3.0, x:matmul(w):item())
      ember.no_grad(function() w:add_(1) end)
      assert.equal(6.0, x:matmul(w):item())
    end)
  end)

  it("steps with backward and an optimizer inside one region use fresh casts every step", function()
    local w = ember.tensor({{1.0, 2.0}}, {requires_grad = true})
    local x = ember.tensor({{1.0}, {1.0}})
    local opt = ember.optim.SGD({w}, {lr = 0.5})
    local losses = {}
    region(nil, function()
      for i = 1, 3 do
        opt:zero_grad()
        local loss = w:matmul(x):sum()      -- w1 + w2; gradient 1 for each
        loss:backward()
        opt:step()
        losses[i] = loss:item()
      end
    end)
    assert.same({3.0, 2.0, 1.0}, losses)
  end)

  it("a cast made under no_grad is not reused once grad mode is back", function()
    local w = ember.tensor({{2.0}}, {requires_grad = true})
    local x = ember.tensor({{3.0}})
    region(nil, function()
      ember.no_grad(function() return x:matmul(w) end)
      local y = x:matmul(w):sum()
      y:backward()
    end)
    assert.equal(3.0, w.grad:item())
  end)

  it("a backward inside a region runs in the forward's dtypes (not cast again)", function()
    local w = ember.randn(3, 3, {requires_grad = true})
    local x = ember.randn(2, 3)
    local inside = region(nil, function()
      local y = x:matmul(w):float():pow(2):sum()
      y:backward()
      return w.grad:clone()
    end)
    w.grad = nil
    local y = region(nil, function() return x:matmul(w):float():pow(2):sum() end)
    y:backward()
    same(inside, w.grad)
  end)

  it("a custom Function's backward is not cast", function()
    local seen
    local Probe = ember.autograd.Function:extend("Probe")
    function Probe.forward(ctx, a) return a * 1 end
    function Probe.backward(ctx, g)
      seen = g:matmul(ember.ones(1, 1)).dtype
      return g
    end
    local a = ember.ones(1, 1, {requires_grad = true})
    region(nil, function()
      local y = Probe.apply(a)
      y:sum():backward()
    end)
    assert.equal("float32", seen)
  end)

  it("ember.amp.autocast is ember.autocast (torch.amp.autocast)", function()
    local y = ember.amp.autocast("cpu", {dtype = "float16"}, function() return ember.ones(2, 2):mm(ember.ones(2, 2)) end)
    assert.equal("float16", y.dtype)
    assert.is_false(ember.is_autocast_enabled("cpu"))
  end)

  it("clear_autocast_cache is callable inside and outside a region", function()
    ember.clear_autocast_cache()
    region(nil, function() ember.clear_autocast_cache() end)
  end)
end)
