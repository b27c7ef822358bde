-- lazy_spec.lua — nn.LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm* and
-- LazyInstanceNorm*: the input size learnt from the first input (or from a state dict),
-- the same parameter tensors before and after (an optimizer made first still updates
-- them), the module becoming its real class, and the errors. PyTorch 2.15's behaviour for
-- the same calls (printing, shapes, state_dict keys) was read from torch and written here
-- by hand; its LazyInstanceNorm1d reads an unbatched input's length as the channels (and
-- then fails), ember reads the channels.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn

local function first_line(m) return (tostring(m):match("^[^\n]*")) end

describe("lazy modules", function()
  it("LazyLinear learns in_features from its first input and becomes a Linear", function()
    local m = nn.LazyLinear(3)
    assert.equals("LazyLinear(in_features=0, out_features=3, bias=true)", first_line(m))
    assert.is_true(m:has_uninitialized_params())
    assert.same({0}, m.weight.shape)
    local w = m.weight
    local y = m(ember.ones(2, 5))
    assert.same({2, 3}, y.shape)
    assert.equals("Linear(in_features=5, out_features=3, bias=true)", first_line(m))
    assert.equals(nn.Linear, getmetatable(m))
    assert.equals(w, m.weight)                        -- the same tensor, now [3, 5]
    assert.same({3, 5}, w.shape)
    assert.is_nil(m.has_uninitialized_params)
    -- PyTorch's initialisation: |w| <= 1/sqrt(5)
    assert.is_true(w:abs():max():item() <= 1 / math.sqrt(5))
  end)

  it("an optimizer made before the first forward updates the real parameters", function()
    local m = nn.LazyLinear(2)
    local opt = ember.optim.SGD(m:parameters(), {lr = 0.5})
    local x = ember.ones(1, 4)
    local y = m(x)
    local w0, b0 = m.weight:clone(), m.bias:clone()
    y:sum():backward()
    opt:step()
    -- d sum(x w^T + b) / dw = x = 1, / db = 1: each moves by -0.5
    h.check(m.weight - w0, {{-0.5, -0.5, -0.5, -0.5}, {-0.5, -0.5, -0.5, -0.5}})
    h.check(m.bias - b0, {-0.5, -0.5})
  end)

  it("convolutions learn in_channels, batched or not, with groups", function()
    local c = nn.LazyConv2d(8, 3)
    assert.equals("LazyConv2d(0, 8, kernel_size=[3, 3], stride=[1, 1])", first_line(c))
    assert.same({1, 8, 4, 4}, c(ember.ones(1, 4, 6, 6)).shape)
    assert.equals("Conv2d(4, 8, kernel_size=[3, 3], stride=[1, 1])", first_line(c))
    assert.same({8, 4, 3, 3}, c.weight.shape)
    local c1 = nn.LazyConv1d(4, 3, {groups = 2})
    c1(ember.ones(6, 10))                             -- unbatched [C, L]
    assert.same({4, 3, 3}, c1.weight.shape)         -- [out, in / groups, k]
    local t = nn.LazyConvTranspose2d(5, 3)
    t(ember.ones(1, 2, 4, 4))
    assert.same({2, 5, 3, 3}, t.weight.shape)       -- [in, out / groups, k, k]
    assert.equals(nn.ConvTranspose2d, getmetatable(t))
    local c3 = nn.LazyConv3d(2, 1, {bias = false})
    c3(ember.ones(1, 3, 2, 2, 2))
    assert.same({2, 3, 1, 1, 1}, c3.weight.shape)
    assert.is_nil(c3.bias)
  end)

  it("normalisations learn num_features, with their buffers", function()
    local b = nn.LazyBatchNorm2d()
    assert.equals("LazyBatchNorm2d(0, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)",
                  first_line(b))
    local keys = {}
    for k in pairs(b:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.same({"bias", "num_batches_tracked", "running_mean", "running_var", "weight"}, keys)
    b(ember.ones(2, 3, 4, 4))
    assert.same({3}, b.running_mean.shape)
    assert.equals(1, b.num_batches_tracked:item())
    h.check(b.weight, {1, 1, 1})
    local i = nn.LazyInstanceNorm1d({affine = true})
    i(ember.ones(3, 7))                               -- unbatched [C, L]: 3 channels
    assert.same({3}, i.weight.shape)
    local b1 = nn.LazyBatchNorm1d()
    b1(ember.ones(4, 6))
    assert.same({6}, b1.running_var.shape)
  end)

  it("keep dtype and device given at construction, or by to() before the first forward", function()
    local m = nn.LazyLinear(2, {dtype = "float64"})
    assert.equals("float64", m.weight.dtype)
    m(ember.ones(1, 3, {dtype = "float64"}))
    assert.equals("float64", m.weight.dtype)
    local m2 = nn.LazyLinear(2)
    m2:to("float64")
    m2(ember.ones(1, 3, {dtype = "float64"}))
    assert.equals("float64", m2.weight.dtype)
    assert.same({2, 3}, m2.weight.shape)
  end)

  it("load_state_dict gives a lazy module the state dict's sizes", function()
    local src = nn.Sequential(nn.Linear(7, 3), nn.BatchNorm1d(3))
    local dst = nn.Sequential(nn.LazyLinear(3), nn.LazyBatchNorm1d())
    dst:load_state_dict(src:state_dict())
    assert.equals("Linear(in_features=7, out_features=3, bias=true)", first_line(dst[1]))
    assert.is_true(ember.equal(dst[1].weight, src[1].weight))
    assert.same({3}, dst[2].running_mean.shape)
    local conv = nn.LazyConv2d(4, 3, {groups = 2})
    conv:load_state_dict(nn.Conv2d(6, 4, 3, {groups = 2}):state_dict())
    assert.equals(6, conv.in_channels)
    local convt = nn.LazyConvTranspose1d(4, 3)
    convt:load_state_dict(nn.ConvTranspose1d(5, 4, 3):state_dict())
    assert.equals(5, convt.in_channels)
  end)

  it("hooks registered on a lazy module stay", function()
    local m = nn.LazyLinear(2)
    local calls = 0
    m:register_forward_hook(function() calls = calls + 1 end)
    m(ember.ones(1, 3))
    m(ember.ones(1, 3))
    assert.equals(2, calls)
  end)

  it("refuse bad arguments in the lazy class's name, and inputs without a size", function()
    has(err(function() local c = nn.LazyConv2d(8); return c end), "lazy_spec.lua:",
        "LazyConv2d: kernel_size must be an integer or a list of 2 integers, got nil")
    has(err(function() local m = nn.LazyLinear(3); return m(ember.tensor(1.0)) end),
        "LazyLinear: expected an input of at least 1 dimension, got a 0-D tensor")
    has(err(function() local c = nn.LazyConv2d(8, 3); return c(ember.ones(4, 4)) end),
        "LazyConv2d: expected a 3-D (unbatched) or 4-D (batched) input, got a 2-D tensor")
    has(err(function() local m = nn.LazyLinear(3); return m(ember.ones(2, 0)) end),
        "LazyLinear: cannot infer in_features from the input (got 0)")
    has(err(function() local b = nn.LazyBatchNorm2d(); return b(ember.ones(2, 3)) end),
        "LazyBatchNorm2d: expected a 4-D input, got a 2-D tensor")
  end)
end)
