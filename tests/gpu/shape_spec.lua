-- shape_spec.lua (GPU) — the shape and index ops on the device
-- under test against the CPU backend: the compositions (flip, roll, repeat,
-- diagonal, index_fill, masked_scatter, one_hot, ...) and scatter_reduce's
-- own kernels (multiply, amax, amin; atomics on the GPU), with repeated
-- indices, every dtype, and a bad index raising an error.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local agree = g.agree

describe("shape ops on the device", function()
  it("flip, roll, rot90, repeat, tile, repeat_interleave, every dtype", function()
    ember.manual_seed(3)
    local x = ember.randn(4, 5, 3) * 10
    for _, d in ipairs(g.dtypes) do
      local xd = x:to(d)
      agree(function(t)
        return t:flip(1, 3), t:roll({2, -1}, {2, 3}), t:roll(4), t:rot90(1, {1, 3}), t["repeat"](t, 2, 1, 2, 1),
               t:tile(2), t:repeat_interleave(2, 2), t:repeat_interleave(ember.tensor({1, 0, 2, 1}, {device = t.device}), 1)
      end, {xd}, {what = d})
    end
  end)

  it("diagonal, diag_embed, diag, trace, take, take_along_dim, one_hot, tril_indices", function()
    local x = ember.randn(3, 4, 5)
    agree(function(t) return t:diagonal(1, 1, 3), ember.diag_embed(t, -1, 1, 3), t[1]:diag(2), t[2]:trace(),
      t:take(ember.tensor({1, -1, 7}, {device = t.device})),
      t:take_along_dim(ember.tensor({{{2}}, {{1}}, {{5}}}, {device = t.device}), 3) end, {x})
    agree(function(c) return ember.one_hot(c, 6) end, {ember.randint(1, 7, {4, 3})})
    g.same(ember.tril_indices(4, 5, 1, {device = g.DEV}), ember.tril_indices(4, 5, 1))
  end)

  it("index_fill, index_copy, masked_scatter", function()
    local x = ember.randn(5, 6)
    local m = ember.rand(5, 6):gt(0.5)
    -- index tensors on the input's device, as PyTorch requires
    agree(function(t, mm, s) return t:index_fill(2, ember.tensor({1, 6, 1}, {device = t.device}), 2.5),
      t:index_copy(1, ember.tensor({5, 2}, {device = t.device}), s[{{1, 2}}]), t:masked_scatter(mm, s:reshape(-1)) end,
      {x, m, ember.randn(5, 6)})
  end)

  it("scatter_reduce with repeated indices, every reduction and dtype", function()
    ember.manual_seed(4)
    local self = ember.randn(6, 4) * 4
    local src = ember.randn(20, 4) * 4
    local idx = ember.randint(1, 7, {20, 4})
    for _, d in ipairs({"float32", "float64", "int64", "int32", "uint8", "bool", "float16", "bfloat16"}) do
      for _, r in ipairs({"sum", "prod", "mean", "amax", "amin"}) do
        if not (d == "bool" and r == "mean") then
          for _, inc in ipairs({true, false}) do
            -- a half-precision sum over repeated indices depends on the order
            -- the device's atomics land in (a GPU's, or the emulator's seed):
            -- each addition may round by half an ulp of the running sum, which
            -- stays below the sum of the magnitudes (6 rows of at most 20 terms)
            local o = {what = d .. " " .. r}
            if (d == "float16" or d == "bfloat16") and (r == "sum" or r == "mean") then
              local eps = d == "float16" and 2 ^ -10 or 2 ^ -7
              o.atol = 20 * (src:abs():max():item() + self:abs():max():item()) * eps
            end
            agree(function(t, i, s) return t:scatter_reduce(1, i, s, r, inc) end,
              {self:to(d), idx, (r == "prod" and src / 4 or src):to(d)}, o)
          end
        end
      end
    end
  end)

  it("as_strided: a view of the device's storage, and its gradient through the copy path", function()
    local x = ember.arange(1, 13, {dtype = "float64"})
    agree(function(t) return t:as_strided({4, 3}, {2, 1}, 1) end, {x})
    local function grad_of(t)
      local w = t:detach():clone():requires_grad_()
      local v = w:as_strided({3, 2}, {1, 1})
      local loss = (v * v):sum()
      loss:backward()
      return v, w.grad
    end
    agree(grad_of, {x})
  end)

  it("a bad index is an error", function()
    local t = g.dev(ember.zeros(3))
    assert.has_error(function()
      local y = t:scatter_reduce(1, g.dev(ember.tensor({4})), g.dev(ember.ones(1)), "amax")
      g.synchronize()
      return y
    end)
  end)
end)
