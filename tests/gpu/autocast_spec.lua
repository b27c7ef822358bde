-- autocast_spec.lua (GPU) — ember.autocast on the device under test: the op policy
-- gives the same dtypes as on the CPU, a region's forward and gradients match the CPU
-- running the same region (both compute the low-precision ops from the same rounded
-- inputs, accumulating in float32, so they agree within the dtype's rounding), and a
-- region on one device type leaves the other's tensors alone.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local F = ember.nn.functional
local dev = g.dev
local devtype = g.on_cpu and "cpu" or "cuda"
local cuda_it = g.cuda_it(it, pending)

local function on_dev(opts, fn) return ember.autocast(devtype, opts, fn) end
local function on_cpu(opts, fn) return ember.autocast("cpu", opts, fn) end

for _, dtype in ipairs({"bfloat16", "float16"}) do
  describe("autocast " .. dtype, function()
    local opts = {dtype = dtype}
    -- low precision results from the same rounded inputs: relative error of a
    -- few units of the dtype's last place, plus the accumulation order
    local tol = dtype == "bfloat16" and {rtol = 2e-2, atol = 2e-2} or {rtol = 4e-3, atol = 4e-3}

    it("gives each op the policy's dtype on the device", function()
      local x, w = dev(ember.randn(4, 6)), dev(ember.randn(5, 6))
      on_dev(opts, function()
        assert.equal(dtype, x:matmul(w:t()).dtype)
        assert.equal(dtype, F.linear(x, w, dev(ember.randn(5))).dtype)
        assert.equal(dtype, F.conv2d(x:view(1, 1, 4, 6), dev(ember.randn(2, 1, 3, 3))).dtype)
        assert.equal(dtype, F.scaled_dot_product_attention(x:view(1, 4, 6), x:view(1, 4, 6), x:view(1, 4, 6)).dtype)
        assert.equal("float32", x:softmax(2).dtype)
        assert.equal("float32", F.layer_norm(x, {6}).dtype)
        assert.equal("float32", x:sum().dtype)
        assert.equal("float32", F.cross_entropy(x, dev(ember.tensor({1, 2, 3, 4}))).dtype)
      end)
    end)

    it("an MLP step's loss and gradients match the CPU's region", function()
      ember.manual_seed(11)
      local x, y = ember.randn(16, 32), ember.randint(1, 9, {16})
      local w1, b1 = ember.randn(64, 32) * 0.2, ember.randn(64) * 0.1
      local w2, b2 = ember.randn(8, 64) * 0.2, ember.randn(8) * 0.1
      local function run(device_of, region)
        local ps = {device_of(w1), device_of(b1), device_of(w2), device_of(b2)}
        for _, p in ipairs(ps) do p.requires_grad = true end
        local loss = region(opts, function()
          local hdn = F.gelu(F.linear(device_of(x), ps[1], ps[2]))
          return F.cross_entropy(F.linear(hdn, ps[3], ps[4]), device_of(y))
        end)
        loss:backward()
        return loss, ps
      end
      local want_loss, want = run(function(t) return t:clone() end, on_cpu)
      local got_loss, got = run(dev, on_dev)
      assert.equal("float32", got_loss.dtype)
      g.close(got_loss, want_loss, tol)
      for i = 1, 4 do
        assert.equal("float32", got[i].grad.dtype)
        g.close(got[i].grad, want[i].grad, {rtol = tol.rtol, scale = tol.atol})
      end
    end)

    it("a conv + batch norm + pooling block matches the CPU's region", function()
      ember.manual_seed(12)
      local x = ember.randn(2, 3, 8, 8)
      local w = ember.randn(4, 3, 3, 3) * 0.3
      local function run(device_of, region)
        local wt = device_of(w); wt.requires_grad = true
        -- the block's output in the low-precision dtype on both device types, summed
        -- outside the region (sum's policy differs: float32 on CUDA, the input's
        -- dtype on the CPU, as PyTorch's lists)
        local pooled = region(opts, function()
          local c = F.conv2d(device_of(x), wt, nil, {padding = 1})
          local bn = F.batch_norm(c, nil, nil, nil, nil, true)
          return F.max_pool2d(F.relu(bn), 2)
        end)
        local out = pooled:sum()
        out:backward()
        return out, wt.grad
      end
      local want, want_g = run(function(t) return t:clone() end, on_cpu)
      local got, got_g = run(dev, on_dev)
      g.close(got, want, {rtol = tol.rtol, atol = tol.atol * 10})
      g.close(got_g, want_g, {rtol = tol.rtol, scale = tol.atol})
    end)
  end)
end

cuda_it("a cuda region leaves CPU tensors alone and a cpu region leaves CUDA tensors alone", function()
  local xc, xd = ember.randn(3, 3), dev(ember.randn(3, 3))
  ember.autocast("cuda", nil, function()
    assert.equal("float32", xc:matmul(xc).dtype)
    assert.equal("float16", xd:matmul(xd).dtype)
    -- mv is in the CUDA list only: cast on the device, left alone on the CPU
    assert.equal("float16", ember.mv(xd, xd[1]).dtype)
    assert.equal("float32", ember.mv(xc, xc[1]).dtype)
    -- tensordot promotes on CUDA (float32 stays), and is cast down in a CPU region
    assert.equal("float32", ember.tensordot(xd, xd, 1).dtype)
  end)
  ember.autocast("cpu", nil, function()
    assert.equal("bfloat16", ember.tensordot(xc, xc, 1).dtype)
    assert.equal("float32", ember.tensordot(xd, xd, 1).dtype)
  end)
  ember.autocast("cpu", nil, function()
    assert.equal("bfloat16", xc:matmul(xc).dtype)
    assert.equal("float32", xd:matmul(xd).dtype)
  end)
end)

-- PyTorch's CUDA fp32 list on a low-precision input: exp, sum, softmax, layer_norm,
-- logsumexp and pow come back in float32; an explicit dtype= is run as given; var
-- and mse_loss's parts (mean, pow) do not cast again, so var keeps the input's dtype.
-- A CPU region leaves the same ops in bfloat16 (PyTorch's CPU lists).
cuda_it("a cuda region runs the fp32 list in float32 from a float16 input, compositions uncast", function()
  local h = dev(ember.randn(4, 6)):half()
  ember.autocast("cuda", nil, function()
    assert.equal("float32", h:exp().dtype)
    assert.equal("float32", h:sum().dtype)
    assert.equal("float32", h:softmax(2).dtype)
    assert.equal("float32", F.layer_norm(h, {6}).dtype)
    assert.equal("float32", h:logsumexp(2).dtype)
    assert.equal("float32", (h ^ 2).dtype)
    assert.equal("float16", h:sum(1, {dtype = "float16"}).dtype)
    assert.equal("float16", h:softmax(2, {dtype = "float16"}).dtype)
    assert.equal("float16", h:var().dtype)
    assert.equal("float16", h:abs().dtype)
  end)
  local b = ember.randn(4, 6):bfloat16()
  ember.autocast("cpu", nil, function()
    assert.equal("bfloat16", b:exp().dtype)
    assert.equal("bfloat16", b:sum().dtype)
    assert.equal("float32", b:prod().dtype)
  end)
end)

cuda_it("binary_cross_entropy refuses CUDA tensors in a cuda region, at the caller's line, as PyTorch", function()
  local p = dev(ember.rand(4)):half()
  local ok, err = pcall(function()
    ember.autocast("cuda", nil, function()
      local loss = F.binary_cross_entropy(p, p)   -- the line the error names
      return loss
    end)
  end)
  assert.is_false(ok)
  local line = debug.getinfo(1, "l").currentline - 5
  assert.matches("autocast_spec%.lua:" .. line .. ": binary_cross_entropy: unsafe to autocast %(a CUDA region%)", err)
  assert.matches("F%.binary_cross_entropy_with_logits", err)
  -- outside the region, and for CPU tensors inside it, it runs (float32 from the CPU's list)
  assert.equal("float16", F.binary_cross_entropy(p, p).dtype)
  local c = ember.rand(4):half()
  ember.autocast("cuda", nil, function() assert.equal("float16", F.binary_cross_entropy(c, c).dtype) end)
end)

-- PyTorch 2.15's CUDA lists (tests/lua/fixtures/autocast_cuda.lua, from PyTorch's own
-- AutocastCUDA kernels run on fake CUDA tensors by scripts/fixtures/make_autocast_fixtures.py):
-- each op's result dtype under a region of dtype d, from inputs of dtype d or float32.
-- Against the CPU backend (EMBER_GPU_TEST_DEVICE=cpu) the CPU's table applies.
local calls = require "autocast_calls"
local expected = dofile(g.on_cpu and "tests/lua/fixtures/autocast_cpu.lua" or "tests/lua/fixtures/autocast_cuda.lua")
for _, d in ipairs({"bfloat16", "float16"}) do
  it("the result dtypes of PyTorch 2.15's " .. devtype .. " lists under a " .. d .. " region", function()
    local function low(...) return dev((ember.rand(...) * 0.5 + 0.25):to(d)) end
    local function f32(...) return dev(ember.rand(...)) end
    local wrong = calls.mismatches(expected, devtype, d, low, f32, dev(ember.tensor({2, 3, 1})))
    assert(#wrong == 0, table.concat(wrong, "\n"))
  end)
end
