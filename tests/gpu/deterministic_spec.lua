-- deterministic_spec.lua (GPU) — ember.use_deterministic_algorithms on the device: the
-- kernels that add with atomics (scatter_add, index_add, scatter_reduce "prod", and the
-- gradients made of them) apply each element's updates in index order, which is the CPU's
-- order, so the device's float results equal the CPU's bit for bit; convolutions run with
-- cuDNN's deterministic algorithms and with allow_tf32 off. The emulated device runs blocks
-- and threads in a shuffled order (EMBER_CUDA_EMU_SEED), so there the atomic kernels give
-- other bits, which the first test checks to show that its input can tell the two apart.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, same = g.dev, g.same
local cuda_it = g.cuda_it(it, pending)

-- f() under use_deterministic_algorithms(true), the mode restored after
local function deterministic(f)
  ember.use_deterministic_algorithms(true)
  local r = table.pack(pcall(f))
  ember.use_deterministic_algorithms(false)
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

-- values of many magnitudes, so that the order of a sum changes its rounding
local function spread(n, dtype)
  ember.manual_seed(7)
  local x = ember.randn(n, {dtype = "float64"}) * ember.rand(n, {dtype = "float64"}):mul(12):sub(6):exp2()
  return x:to(dtype)
end

describe("use_deterministic_algorithms on the device", function()
  it("scatter_add sums each element's updates in index order: the CPU's bits", function()
    for _, dtype in ipairs({"float32", "float64", "float16", "bfloat16"}) do
      local src = spread(6000, dtype)
      local index = ember.arange(6000):remainder(3):add(1)        -- three targets, 2000 updates each
      local want = ember.zeros(3, {dtype = dtype}):scatter_add(1, index, src)
      local got = deterministic(function()
        return dev(ember.zeros(3, {dtype = dtype})):scatter_add(1, dev(index), dev(src))
      end)
      same(got, want, {what = "scatter_add " .. dtype})
      -- and the same again: one run's bits are every run's
      same(deterministic(function() return dev(ember.zeros(3, {dtype = dtype})):scatter_add(1, dev(index), dev(src)) end),
           want, {what = "scatter_add " .. dtype .. ", a second run"})
    end
  end)

  cuda_it("the input tells the orders apart: the atomic kernel's float32 sum has other bits", function()
    if not g.emulated then
      pending("on a real GPU the atomic order is the hardware's; the bits may or may not differ")
      return
    end
    local src = spread(6000, "float32")
    local index = ember.arange(6000):remainder(3):add(1)
    local want = ember.zeros(3):scatter_add(1, index, src)
    local atomic = dev(ember.zeros(3)):scatter_add(1, dev(index), dev(src)):cpu()
    assert.is_false(ember.equal(atomic, want), "the shuffled atomic order gave the CPU's bits: the test cannot tell")
    assert.is_true(ember.allclose(atomic, want, 1e-4, 1e-4))
  end)

  it("index_add on dense rows, on a transposed output, and with repeated rows", function()
    ember.manual_seed(3)
    local src = spread(400 * 6, "float32"):view(400, 6)
    local index = ember.randint(1, 6, {400})
    local want = ember.zeros(5, 6):index_add(1, index, src)
    same(deterministic(function() return dev(ember.zeros(5, 6)):index_add(1, dev(index), dev(src)) end), want,
         {what = "index_add, rows"})
    local wt = ember.zeros(6, 5):t():index_add(1, index, src)
    same(deterministic(function() return dev(ember.zeros(6, 5)):t():index_add(1, dev(index), dev(src)) end), wt,
         {what = "index_add into a transposed output"})
    local s2 = spread(6 * 400, "float64"):view(6, 400)
    local w2 = ember.zeros(6, 5, {dtype = "float64"}):index_add(2, index, s2, {alpha = 0.5})
    same(deterministic(function()
      return dev(ember.zeros(6, 5, {dtype = "float64"})):index_add(2, dev(index), dev(s2), {alpha = 0.5})
    end), w2, {what = "index_add along dim 2 with alpha"})
  end)

  it("scatter_reduce: prod in index order, amax / amin and integer sums unchanged", function()
    ember.manual_seed(5)
    local src = ember.rand(3000, {dtype = "float64"}):add(0.5)
    local index = ember.randint(1, 4, {3000})
    for _, reduce in ipairs({"prod", "sum", "mean", "amax", "amin"}) do
      local want = ember.ones(3, {dtype = "float64"}):scatter_reduce(1, index, src, reduce)
      same(deterministic(function()
        return dev(ember.ones(3, {dtype = "float64"})):scatter_reduce(1, dev(index), dev(src), reduce)
      end), want, {what = "scatter_reduce " .. reduce})
    end
    local isrc = ember.randint(-1000, 1000, {3000})
    same(deterministic(function() return dev(ember.zeros(3, {dtype = "int64"})):scatter_add(1, dev(index), dev(isrc)) end),
         ember.zeros(3, {dtype = "int64"}):scatter_add(1, index, isrc), {what = "int64 scatter_add"})
  end)

  it("gradients made of scatter_add: gather, index_select, embedding", function()
    ember.manual_seed(9)
    local w = spread(50 * 8, "float32"):view(50, 8)
    local ids = ember.randint(1, 6, {700})                 -- five rows hit 140 times each
    local gy = spread(700 * 8, "float32"):view(700, 8)
    local function grads(device)
      local leaf = (device and dev(w) or w:clone()):requires_grad_()
      local mv = function(t) return device and dev(t) or t end
      ember.nn.functional.embedding(mv(ids), leaf):backward(mv(gy))
      local a = leaf.grad
      leaf.grad = nil
      leaf:index_select(1, mv(ids)):backward(mv(gy))
      local b = leaf.grad
      leaf.grad = nil
      leaf:gather(1, mv(ids:view(-1, 1):expand(700, 8)):contiguous()):backward(mv(gy))
      return a, b, leaf.grad
    end
    local wa, wb, wc = grads(false)
    local ga, gb, gc = deterministic(function() return grads(true) end)
    same(ga, wa, {what = "embedding's gradient"})
    same(gb, wb, {what = "index_select's gradient"})
    same(gc, wc, {what = "gather's gradient"})
  end)

  it("a bad index is still the caller's error, naming it", function()
    local e = g.err(function()
      deterministic(function()
        local r = dev(ember.zeros(3)):scatter_add(1, dev(ember.tensor({1, 7, 2})), dev(ember.ones(3)))
        g.synchronize()
        return r:cpu()
      end)
    end)
    g.has(e, "scatter_add", "7")
  end)

  it("convolutions with cuDNN's deterministic algorithms, and allow_tf32 off", function()
    ember.manual_seed(2)
    local x, w = ember.randn(2, 3, 9, 9, {dtype = "float64"}), ember.randn(4, 3, 3, 3, {dtype = "float64"})
    local gy = ember.randn(2, 4, 9, 9, {dtype = "float64"})
    local function run(xx, ww, gg)
      local xl, wl = xx:clone():requires_grad_(), ww:clone():requires_grad_()
      local y = ember.nn.functional.conv2d(xl, wl, nil, 1, 1)
      y:backward(gg)
      return y:detach(), xl.grad, wl.grad
    end
    local wy, wgx, wgw = run(x, w, gy)
    local was = ember.backends.cudnn.deterministic
    ember.backends.cudnn.deterministic = true
    local ok, y, gx, gw = pcall(run, dev(x), dev(w), dev(gy))
    ember.backends.cudnn.deterministic = was
    assert(ok, y)
    g.close(y, wy, {what = "conv forward"})
    g.close(gx, wgx, {what = "conv input gradient"})
    g.close(gw, wgw, {what = "conv weight gradient"})
    -- float32 with FMA arithmetic (no TF32), under use_deterministic_algorithms
    local tf = ember.backends.cudnn.allow_tf32
    ember.backends.cudnn.allow_tf32 = false
    local ok2, y2, gx2, gw2 = pcall(deterministic, function() return run(dev(x:float()), dev(w:float()), dev(gy:float())) end)
    ember.backends.cudnn.allow_tf32 = tf
    assert(ok2, y2)
    local fy, fgx, fgw = run(x:float(), w:float(), gy:float())
    g.close(y2, fy, {what = "float32 conv forward", rtol = 1e-5, atol = 1e-5})
    g.close(gx2, fgx, {what = "float32 conv input gradient", rtol = 1e-5, atol = 1e-5})
    g.close(gw2, fgw, {what = "float32 conv weight gradient", rtol = 1e-5, atol = 1e-4})
  end)
end)
