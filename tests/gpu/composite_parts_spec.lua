-- composite_parts_spec.lua (GPU) — the functions composed in Lua on 2026-11-30
-- (lua/ember/composite/*.lua, ember.special, the new ember.linalg functions, nn's
-- more_layers, ember.distributions, ember.testing) on the device under test against
-- the CPU on the same inputs: one or more of each family, results on the device, values
-- and gradients as on the CPU. Their values against PyTorch are the CPU specs' business.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, agree = g.dev, g.agree
local cuda_it = g.cuda_it(it, pending)
local F = ember.nn.functional

local function f64(...) return ember.tensor(..., {dtype = "float64"}) end

describe("composite parts on the device", function()
  it("stacking, splitting and array utilities", function()
    ember.manual_seed(11)
    local a, b = ember.randn(3, 4, {dtype = "float64"}), ember.randn(3, 4, {dtype = "float64"})
    agree(function(x, y) return ember.hstack({x, y}), ember.vstack({x, y}), ember.dstack({x, y}) end, {a, b})
    agree(function(x) return x:tensor_split(3, 2) end, {a})
    agree(function(x) return ember.diff(x, 2, 2) end, {a})
    agree(function(x) return ember.cov(x), ember.corrcoef(x) end, {a})
    agree(function(x, y) return ember.isin(x, y) end, {ember.tensor({1, 2, 3, 4}), ember.tensor({2, 4, 9})})
    agree(function(x) return ember.histogram(x:flatten(), 5) end, {a})
  end)

  it("aliases, dtype helpers and in-place forms", function()
    local x = f64({{1, -2, 3}, {4, 5, -6}, {7, 8, 9}})
    agree(function(t) return ember.greater(t, 2), ember.absolute(t), ember.rsub(t, 1) end, {x})
    agree(function(t) return t:clone():fill_diagonal_(0), t:clone():cumsum_(2) end, {x})
    agree(function(t) return ember.ones(2):type_as(t) end, {x:float()}, {any_device = true})
    -- int64 values past 2^53, written exactly on the device too
    local big = 9007199254740993
    agree(function(t, m)
      return t:masked_fill(m, ember.iinfo("int64").max), ember.full_like(t, big), t:clone():fill_(-big), t:new_full({2}, big)
    end, {ember.tensor({{1, 2}, {3, 4}}), ember.tensor({true, false})})
    agree(function(t, i)
      return t:index_fill(1, i, big), t:scatter(1, i:view(1, 1), -big), t:clamp(big), t:clone():clamp_(nil, -big)
    end, {ember.tensor({{1, 2}, {3, 4}}), ember.tensor({2})})
    local d = dev(x)
    assert.are.equal(g.on_cpu and -1 or 0, d:get_device())
    -- as_tensor / asarray: the device tensor itself, "cuda" naming the current device
    assert.is_true(rawequal(ember.as_tensor(d, {device = g.on_cpu and "cpu" or "cuda"}), d))
    assert.is_true(rawequal(ember.asarray(d, {device = g.devname}), d))
    assert.are.equal(g.devname, ember.as_tensor({1, 2}, {device = g.devname}).device)
    -- ember.device objects where device names go
    local dd = ember.device(g.devname)
    assert.are.equal(g.devname, ember.ones(2):to(dd).device)
    assert.are.equal(g.devname, ember.zeros(2, {device = dd}).device)
    if not g.on_cpu then
      assert.are.equal("cuda:0", ember.ones(2):cuda(ember.device("cuda", 0)).device)
      assert.are.equal("cuda:0", ember.ones(2):cuda("cuda:0").device)
      ember.cuda.synchronize(ember.device("cuda"))
    end
    assert.are.equal("float64", ember.result_type(d, 1))
  end)

  cuda_it("pinned memory: t:pin_memory and DataLoader(pin_memory = true), copied to the device", function()
    local x = ember.arange(12, {dtype = "float64"}):view(3, 4):t()
    local p = x:pin_memory()
    assert.is_true(p:is_pinned() and p:is_contiguous() and p[2]:is_pinned())
    assert.is_false(x:is_pinned())
    assert.are.equal(p:data_ptr(), p:pin_memory():data_ptr())         -- pinned already: itself
    g.same(dev(p), x)
    g.same(p:to(g.devname), x)
    local data = ember.data
    local loader = data.DataLoader(data.TensorDataset(ember.arange(1, 6), ember.arange(5):float()), 2,
                                   {pin_memory = true})
    local n = 0
    for a, b in loader do
      n = n + 1
      assert.is_true(a:is_pinned() and b:is_pinned())
      g.same(b:to(g.devname), a:float():sub(1))
    end
    assert.are.equal(3, n)
    g.has(g.err(function() local _ = dev(x):pin_memory() end), "pin_memory: only CPU tensors can be pinned, got one on cuda:0")
  end)

  it("random draws land on the device with the dtype asked for", function()
    ember.manual_seed(3)
    local mean = dev(ember.zeros(1000, {dtype = "float64"}))
    local n = ember.normal(mean, 2.0)
    assert.are.equal(g.devname, n.device)
    assert.is_true(math.abs(n:std():item() - 2) < 0.2)
    local t = dev(ember.zeros(500))
    t:bernoulli_(0.25)
    assert.are.equal(g.devname, t.device)
    assert.is_true(math.abs(t:mean():item() - 0.25) < 0.08)
    g.close(ember.hann_window(8, {dtype = "float64", device = g.devname}), ember.hann_window(8, {dtype = "float64"}),
            {what = "hann_window"})
  end)

  it("special functions and their gradients", function()
    local x = f64({0.1, 0.5, 2.0, 7.5})
    agree(function(t) return ember.special.i0e(t), ember.special.i1(t), ember.special.ndtri(t / 8), ember.i0(t) end,
          {x})
    local lx = g.leaf(x)
    ember.special.i1(lx):sum():backward()
    local cx = x:clone():requires_grad_()
    ember.special.i1(cx):sum():backward()
    g.close(lx.grad, cx.grad, {what = "i1 grad"})
  end)

  it("linear algebra composed in Lua", function()
    ember.manual_seed(5)
    local A = ember.randn(3, 4, 4, {dtype = "float64"}) + ember.eye(4, {dtype = "float64"}) * 4
    local B = ember.randn(3, 4, 2, {dtype = "float64"})
    agree(function(m, r) return ember.linalg.solve_triangular(m, r, {upper = true}) end, {A, B})
    agree(function(m, r)
      local lu, piv = ember.linalg.lu_factor(m)
      return lu, piv, ember.linalg.lu_solve(lu, piv, r)
    end, {A, B})
    agree(function(m) return ember.linalg.matrix_exp(m * 0.1), ember.logdet(m:matmul(m.mT)) end, {A})
  end)

  it("nn layers of more_layers", function()
    ember.manual_seed(9)
    local x = ember.randn(2, 3, 5, 5, {dtype = "float64"})
    local pad = ember.nn.ReflectionPad2d({1, 2, 0, 1})
    agree(function(t) return pad(t) end, {x})
    agree(function(t) return F.pad(t, {2, 1, 1, 3}, "replicate"), F.pad(t, {0, 3, 2, 1}, "circular") end, {x})
    local bil = ember.nn.Bilinear(3, 4, 2, {dtype = "float64"})
    local u, v = ember.randn(6, 3, {dtype = "float64"}), ember.randn(6, 4, {dtype = "float64"})
    local want = bil(u, v)
    bil:to(g.devname)
    g.close(bil(dev(u), dev(v)), want, {what = "Bilinear"})
    agree(function(p, q) return F.cosine_similarity(p, q), ember.nn.PairwiseDistance()(p, q) end,
          {u, ember.randn(6, 3, {dtype = "float64"})})
  end)

  it("distributions: log_prob, entropy and samples on the device", function()
    local loc, scale = f64({0.0, 1.0, -2.0}), f64({1.0, 0.5, 2.0})
    local value = f64({0.3, 1.2, -1.0})
    agree(function(m, s, x)
      local d = ember.distributions.Normal(m, s)
      return d:log_prob(x), d:entropy(), d:cdf(x)
    end, {loc, scale, value})
    local probs = dev(f64({0.2, 0.3, 0.5}))
    ember.manual_seed(1)
    local draws = ember.distributions.Categorical(probs):sample({2000})
    assert.are.equal(g.devname, draws.device)
    local c = ember.bincount(draws:cpu(), {minlength = 3})
    assert.is_true(math.abs(c[3]:item() / 2000 - 0.5) < 0.05)
  end)

  it("the gamma family: log_prob, cdf, entropy, draws and their implicit gradients on the device", function()
    local D = ember.distributions
    local a, r, v = f64({0.5, 2.0, 20.0}), f64({1.0, 2.0, 0.5}), f64({0.3, 1.0, 30.0})
    agree(function(aa, rr, x)
      local gd = D.Gamma(aa, rr)
      local bd = D.Beta(aa, rr)
      return gd:log_prob(x), gd:cdf(x), gd:entropy(), bd:log_prob(x / 31), D.StudentT(aa, 0.0, rr):log_prob(x),
             D.Dirichlet(ember.stack({aa, rr}, -1)):entropy()
    end, {a, r, v})
    ember.manual_seed(4)
    local conc = g.leaf(f64({2.5}))
    local x = D.Gamma(conc, dev(f64({2.0}))):rsample({20000})
    assert.are.equal(g.devname, x.device)
    x:mean():backward()
    assert.is_true(math.abs(conc.grad:item() - 0.5) < 0.02, tostring(conc.grad))   -- 1 / rate
    local p = D.Dirichlet(dev(f64({0.5, 2, 3}))):sample({20000})
    assert.is_true((p:sum(-1):cpu() - 1):abs():max():item() < 1e-12)
    assert.is_true(math.abs(p:mean(1)[3]:item() - 3 / 5.5) < 0.02)
  end)

  it("transforms, TransformedDistribution, Weibull, Binomial and Multinomial on the device", function()
    local D, T = ember.distributions, ember.distributions.transforms
    local m, s, v = f64({0.0, 1.0, -2.0}), f64({1.0, 0.5, 2.0}), f64({0.3, -0.9, 0.95})
    agree(function(mm, ss, x)
      local pi = D.TransformedDistribution(D.Normal(mm, ss), {T.AffineTransform(0.5, 2.0), T.TanhTransform()})
      local w = D.Weibull(ss, ss + 1)
      local b = D.Binomial(10, {logits = mm})
      return pi:log_prob(x), pi:cdf(x), w:log_prob(x:abs()), w.mean, b:log_prob(x:abs():mul(10):round()),
             b:entropy(), D.Multinomial(5, ember.stack({ss, ss:flip(1)}, -1)):log_prob(ember.stack({x:abs():mul(5):round(),
             5 - x:abs():mul(5):round()}, -1))
    end, {m, s, v})
    ember.manual_seed(6)
    local draws = D.Binomial(dev(f64({30.0, 200.0})), dev(f64({0.2, 0.7}))):sample({4000})
    assert.are.equal(g.devname, draws.device)
    local mean = draws:mean(1):cpu():tolist()
    assert.is_true(math.abs(mean[1] - 6) < 0.15 and math.abs(mean[2] - 140) < 0.5, table.concat(mean, ", "))
    local counts = D.Multinomial(7, dev(f64({0.1, 0.9}))):sample({100})
    assert.are.equal(0, (counts:sum(-1):cpu() - 7):abs():max():item())
  end)

  it("testing.assert_close compares device tensors and refuses mixed devices", function()
    local x = dev(f64({1.0, 2.0}))
    ember.testing.assert_close(x, x + 1e-9)
    if not g.on_cpu then
      local ok, e = pcall(ember.testing.assert_close, x, f64({1.0, 2.0}))
      assert.is_false(ok)
      assert.truthy(tostring(e):find("device", 1, true), tostring(e))
    end
  end)

  cuda_it("apply_ and map_ refuse a tensor on the device, as PyTorch's", function()
    local x = dev(f64({1.0, 2.0}))
    local ok, e = pcall(function() return x:apply_(function(v) return v end) end)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("apply_: works on CPU tensors only (as PyTorch's), got one on cuda", 1, true), tostring(e))
    ok, e = pcall(function() return x:map_(x, function(a) return a end) end)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("map_: works on CPU tensors only", 1, true), tostring(e))
  end)
end)
