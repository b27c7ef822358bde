-- linalg_spec.lua (GPU) — matmul (every operand rank, broadcast batch dims),
-- mm, bmm, addmm, outer and dot on the device under test against the CPU
-- backend: float32 and float64, transposed, strided and expanded operands,
-- empty dims, integer and half operands, and the TF32 switch.
--
-- Errors are measured against the largest element of the result: a GEMM
-- sums K products in an order of its own (float32 within 1e-5, float64
-- within 1e-12 of that scale; with TF32, within 1e-2).
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, close, same, agree = g.dev, g.close, g.same, g.agree
local matmul_flags = ember.backends.cuda.matmul

local SCALE = {float32 = 1e-5, float64 = 1e-12, float16 = 2e-3, bfloat16 = 1e-2}

local function R(...) return ember.randn(...) end

local function gemm_agree(f, inputs, dtype, what)
  agree(f, inputs, {scale = SCALE[dtype], rtol = 0, what = what})
end

-- large results compared in the engine: |got - want| <= scale * max |want|
local function close_large(got, want, scale, what)
  local bound = want:abs():max():to("float64") * scale
  g.within(got, want, bound, what)
end

describe("matmul", function()
  for _, d in ipairs(g.float_dtypes) do
    it("2-D shapes, transposed and strided operands, " .. d, function()
      ember.manual_seed(1)
      for _, s in ipairs({{1, 1, 1}, {3, 5, 2}, {17, 33, 9}, {64, 128, 32}, {1, 300, 1}, {200, 1, 150}, {129, 257, 65}}) do
        local m, k, n = s[1], s[2], s[3]
        local a, b = R(m, k, {dtype = d}), R(k, n, {dtype = d})
        local what = ("%s %dx%dx%d"):format(d, m, k, n)
        gemm_agree(function(x, y) return x:matmul(y), ember.mm(x, y), x:t():t():mm(y) end, {a, b}, d, what)
        gemm_agree(function(x, y) return x:t():contiguous():t():matmul(y) end, {a, b}, d, what .. " a transposed")
        gemm_agree(function(x, y) return x:matmul(y:t():contiguous():t()) end, {a, b}, d, what .. " b transposed")
        gemm_agree(function(x, y) return y:t():matmul(x:t()) end, {a, b}, d, what .. " (ab)^T")
      end
      local a, b = R(20, 40, {dtype = d}), R(40, 60, {dtype = d})
      gemm_agree(function(x, y) return x:slice(2, 1, 40, 2):matmul(y:slice(1, 2, 40, 2):slice(2, 1, 60, 3)) end, {a, b}, d, "strided")
      gemm_agree(function(x, y) return x:narrow(1, 3, 7):matmul(y:narrow(2, 2, 11)) end, {a, b}, d, "offset")
      gemm_agree(function(x, y) return x:narrow(2, 1, 1):expand(20, 40):matmul(y) end, {a, b}, d, "expanded")
    end)

    it("1-D operands and dot, outer, " .. d, function()
      ember.manual_seed(2)
      local v, w, m = R(37, {dtype = d}), R(37, {dtype = d}), R(37, 5, {dtype = d})
      gemm_agree(function(x, y, z)
        return x:matmul(y), x:dot(y), x:matmul(z), z:t():matmul(x), ember.outer(x, y), x:slice(1, 1, 35, 2):dot(y:slice(1, 2, 36, 2))
      end, {v, w, m}, d)
    end)

    it("batched with broadcast batch dims, " .. d, function()
      ember.manual_seed(3)
      gemm_agree(function(x, y) return x:matmul(y), ember.bmm(x, y) end, {R(4, 6, 7, {dtype = d}), R(4, 7, 5, {dtype = d})}, d, "bmm")
      gemm_agree(function(x, y) return x:matmul(y) end, {R(2, 1, 6, 7, {dtype = d}), R(3, 7, 5, {dtype = d})}, d, "broadcast")
      gemm_agree(function(x, y) return x:matmul(y), y:transpose(2, 3):matmul(x:t()) end,
        {R(6, 7, {dtype = d}), R(3, 7, 5, {dtype = d})}, d, "2-D with 3-D")
      gemm_agree(function(x, y) return x:matmul(y), x:matmul(y[1][1]), x:matmul(y[1][1]:select(2, 1)) end,
        {R(2, 3, 6, 7, {dtype = d}), R(2, 1, 7, 4, {dtype = d})}, d, "4-D with 4-D, 2-D and 1-D")
      gemm_agree(function(x, y) return x:permute(2, 1, 3):matmul(y:permute(3, 2, 1)) end,
        {R(6, 4, 7, {dtype = d}), R(5, 7, 4, {dtype = d})}, d, "permuted batches")
      gemm_agree(function(x, y) return x:narrow(1, 1, 1):expand(5, 6, 7):matmul(y) end,
        {R(2, 6, 7, {dtype = d}), R(5, 7, 3, {dtype = d})}, d, "expanded batch (stride 0)")
    end)
  end

  it("large float32 and float64 products", function()
    ember.manual_seed(4)
    for _, d in ipairs(g.float_dtypes) do
      local a, b = R(512, 1024, {dtype = d}), R(1024, 768, {dtype = d})
      close_large(dev(a):matmul(dev(b)), a:matmul(b), SCALE[d], d)
      close_large(dev(b):t():matmul(dev(a):t()), b:t():matmul(a:t()), SCALE[d], d .. " transposed")
    end
  end)

  it("empty dims: M, N or K of size 0", function()
    for _, d in ipairs(g.float_dtypes) do
      agree(function(x, y) return x:matmul(y) end, {R(0, 4, {dtype = d}), R(4, 3, {dtype = d})})
      agree(function(x, y) return x:matmul(y) end, {R(3, 4, {dtype = d}), R(4, 0, {dtype = d})})
      agree(function(x, y) return x:matmul(y), y:t():matmul(x:t()) end, {R(3, 0, {dtype = d}), R(0, 5, {dtype = d})})
      agree(function(x, y) return ember.bmm(x, y) end, {R(0, 2, 3, {dtype = d}), R(0, 3, 4, {dtype = d})})
      agree(function(x, y) return x:dot(y) end, {R(0, {dtype = d}), R(0, {dtype = d})})
    end
  end)

  it("integer, half and mixed-dtype operands", function()
    ember.manual_seed(5)
    agree(function(x, y) return x:matmul(y) end, {ember.randint(-9, 9, {5, 7}), ember.randint(-9, 9, {7, 3})})
    agree(function(x, y) return x:matmul(y) end, {ember.randint(-9, 9, {2, 5, 7}, {dtype = "int32"}), ember.randint(-9, 9, {7, 3}, {dtype = "int32"})})
    for _, d in ipairs({"float16", "bfloat16"}) do
      gemm_agree(function(x, y) return x:matmul(y) end, {R(9, 30):to(d), R(30, 11):to(d)}, d, d)
    end
    gemm_agree(function(x, y) return x:matmul(y) end, {R(4, 6), R(6, 3, {dtype = "float64"})}, "float64", "float32 @ float64")
  end)
end)

describe("addmm", function()
  for _, d in ipairs(g.float_dtypes) do
    it("beta and alpha, broadcast bias, transposed operands, " .. d, function()
      ember.manual_seed(10)
      local c, a, b = R(8, 6, {dtype = d}), R(8, 5, {dtype = d}), R(5, 6, {dtype = d})
      gemm_agree(function(z, x, y)
        return ember.addmm(z, x, y), ember.addmm(z, x, y, {beta = 0.5, alpha = -2}), ember.addmm(z[1], x, y),
               ember.addmm(z, x, y, {beta = 0}), ember.addmm(z[1]:view(1, 6), x, y),
               z:addmm(x:t():contiguous():t(), y:t():contiguous():t(), {beta = 2})
      end, {c, a, b}, d)
    end)
  end

  it("beta = 0 ignores NaN in the input, as in PyTorch", function()
    local nan = 0 / 0
    agree(function(z, x, y) return ember.addmm(z, x, y, {beta = 0}) end,
      {ember.tensor({{nan, 1}, {2, nan}}), R(2, 3), R(3, 2)}, {scale = SCALE.float32, rtol = 0})
  end)
end)

describe("TF32", function()
  it("allow_tf32 defaults to false and reads back what was set", function()
    assert.is_false(matmul_flags.allow_tf32)
    matmul_flags.allow_tf32 = true
    assert.is_true(matmul_flags.allow_tf32)
    matmul_flags.allow_tf32 = false
    assert.is_false(matmul_flags.allow_tf32)
  end)

  it("float32 results with TF32 on stay within 1e-2 of the CPU; float64 is untouched", function()
    ember.manual_seed(20)
    local a, b = R(256, 512), R(512, 384)
    local ad, bd = R(64, 128, {dtype = "float64"}), R(128, 32, {dtype = "float64"})
    matmul_flags.allow_tf32 = true
    local ok, err = pcall(function()
      close_large(dev(a):matmul(dev(b)), a:matmul(b), 1e-2, "tf32")
      close_large(dev(a):t():t():matmul(dev(b):t():contiguous():t()), a:matmul(b), 1e-2, "tf32 transposed")
      close_large(dev(ad):matmul(dev(bd)), ad:matmul(bd), SCALE.float64, "float64 with tf32 on")
      local x, y = R(3, 40, 50), R(3, 50, 20)
      close_large(dev(x):bmm(dev(y)), x:bmm(y), 1e-2, "tf32 batched")
    end)
    matmul_flags.allow_tf32 = false
    assert(ok, err)
    -- off again: full float32 accuracy
    close_large(dev(a):matmul(dev(b)), a:matmul(b), SCALE.float32, "tf32 off")
  end)
end)

describe("errors are the same on every device", function()
  it("shape mismatches name the shapes", function()
    for _, f in ipairs({
      function(dv) return ember.zeros(2, 3, {device = dv}):matmul(ember.zeros(4, 5, {device = dv})) end,
      function(dv) return ember.bmm(ember.zeros(2, 2, 3, {device = dv}), ember.zeros(3, 3, 2, {device = dv})) end,
      function(dv) return ember.zeros(3, {device = dv}):dot(ember.zeros(4, {device = dv})) end,
      function(dv) return ember.mm(ember.zeros(3, {device = dv}), ember.zeros(3, 2, {device = dv})) end,
    }) do
      assert.are.equal(g.err(f, "cpu"), g.err(f, g.DEV))
    end
  end)
end)
