-- activation_checkpoint_spec.lua (GPU) — ember.utils.checkpoint on the device under
-- test: a checkpointed MLP block and nn.TransformerEncoderLayer with dropout give the
-- gradients the same modules give without checkpointing, bit for bit (the recomputation
-- draws the same dropout masks on the device: ember's one Philox generator serves every
-- device), checkpoint_sequential, a float16 autocast region recomputed in float16, and
-- preserve_rng_state = false drawing other masks, and (memory statistics: CUDA only) that
-- a checkpointed forward keeps nothing of fn but its output.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local nn = ember.nn
local ck = ember.utils.checkpoint
local DEV = g.DEV
local devtype = g.on_cpu and "cpu" or "cuda"
local cuda_it = g.cuda_it(it, pending)

local h = require "checkpoint_helpers"
local gradients, assert_same, differs = h.gradients, h.assert_same, h.differs

local function mlp(dtype)
  ember.manual_seed(3)
  return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Dropout(0.25), nn.Linear(16, 16), nn.Tanh(),
                       nn.Dropout(0.25), nn.Linear(16, 6)):to(dtype):to(DEV)
end

for _, dtype in ipairs({"float64", "float32"}) do
  describe("checkpoint on " .. DEV .. " (" .. dtype .. ")", function()
    it("gives an MLP block with dropout its gradients without checkpointing, bit for bit", function()
      local model = mlp(dtype)
      local x = g.leaf(ember.randn(5, 6, {dtype = dtype}))
      local plain = gradients(model, x, 11, function(v) return (model(v) * v):sum() end)
      local ckd = gradients(model, x, 11, function(v) return (ck.checkpoint(model, v) * v):sum() end)
      assert.equal(g.devname, ckd[1].device)
      assert_same(plain, ckd)
    end)

    it("gives nn.TransformerEncoderLayer with dropout the same gradients, bit for bit", function()
      ember.manual_seed(5)
      local layer = nn.TransformerEncoderLayer(8, 2, {dim_feedforward = 16, dropout = 0.2, batch_first = true})
      layer:to(dtype):to(DEV)
      local x = g.leaf(ember.randn(2, 5, 8, {dtype = dtype}))
      local w = g.dev(ember.randn(2, 5, 8, {dtype = dtype}))
      local plain = gradients(layer, x, 21, function(v) return (layer(v) * w):sum() end)
      local ckd = gradients(layer, x, 21, function(v) return (ck.checkpoint(layer, v) * w):sum() end)
      assert_same(plain, ckd)
      assert.equal(#layer:parameters(), #ckd)
    end)

    it("draws other masks in the recomputation with preserve_rng_state = false", function()
      local model = mlp(dtype)
      local x = g.leaf(ember.randn(5, 6, {dtype = dtype}))
      local plain = gradients(model, x, 11, function(v) return (model(v) * v):sum() end)
      local fresh = gradients(model, x, 11, function(v)
        return (ck.checkpoint(model, v, {preserve_rng_state = false}) * v):sum()
      end)
      assert.is_true(differs(plain, fresh))
    end)

    it("checkpoint_sequential in 3 segments gives the same gradients", function()
      local model = mlp(dtype)
      local x = g.leaf(ember.randn(4, 6, {dtype = dtype}))
      local plain = gradients(model, x, 17, function(v) return (model(v) * v):sum() end)
      local ckd = gradients(model, x, 17, function(v) return (ck.checkpoint_sequential(model, 3, v) * v):sum() end)
      assert_same(plain, ckd)
    end)
  end)
end

describe("checkpoint on " .. DEV .. " under autocast", function()
  it("recomputes a float16 region in float16", function()
    local model = mlp("float32")
    local x = g.leaf(ember.randn(4, 6))
    local function step(use)
      return function(v)
        local y
        do
          local _ <close> = ember.autocast(devtype, {dtype = "float16"})
          y = use and ck.checkpoint(model, v) or model(v)
        end
        assert.equal("float16", y.dtype)
        return y:float():pow(2):sum()
      end
    end
    assert_same(gradients(model, x, 9, step(false)), gradients(model, x, 9, step(true)))
  end)
end)

describe("checkpoint on " .. DEV .. ": memory", function()
  cuda_it("keeps only the output of a checkpointed forward, where a plain one keeps its activations", function()
    ember.manual_seed(1)
    local model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Dropout(0.25), nn.Linear(256, 256), nn.Tanh(),
                                nn.Linear(256, 64)):to(DEV)
    local x = g.leaf(ember.randn(32, 64))
    local function kept(use)
      collectgarbage(); collectgarbage()
      local base = ember.cuda.memory_allocated()
      local y = use and ck.checkpoint(model, x) or model(x)
      collectgarbage(); collectgarbage()   -- the tensors fn made and nothing holds are freed
      local extra = ember.cuda.memory_allocated() - base
      return extra, y
    end
    local with, y = kept(true)
    -- the output, 32 x 64 float32: the arguments were there before, nothing else stays
    assert.equal(32 * 64 * 4, with)
    y = nil
    local without = kept(false)
    -- four 32 x 256 activations at least (Linear, GELU, dropout, Linear, Tanh keep theirs)
    assert.is_true(without >= 32 * 64 * 4 + 4 * 32 * 256 * 4, tostring(without))
  end)
end)
