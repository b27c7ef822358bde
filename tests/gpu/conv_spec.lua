-- conv_spec.lua (GPU) — convolutions (cuDNN), pooling and normalisation on
-- the device under test against the CPU backend on the same inputs: forward
-- results, gradients through autograd (and second-order gradients of conv
-- and batch norm), running statistics, contiguous and strided inputs, 1-D to
-- 3-D, a plane of more than 2^31 elements (GPU only: int64 positions), and
-- a small CNN (conv, batch norm, relu, pool, linear) whose loss, gradients
-- and parameters after two SGD steps match the CPU's.
--
-- float64 is compared tightly (cuDNN's double algorithms and our kernels
-- differ from the CPU only in summation order). float32 convs may use TF32
-- tensor cores (PyTorch's default for convs, torch.backends.cudnn.allow_tf32),
-- which keeps 10 mantissa bits of each product: their tolerance is relative
-- to the largest value of the result. Pooling and normalisation in float32
-- use no TF32.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, close, same = g.dev, g.close, g.same
local nn = require("ember.nn")
local F = nn.functional
local A = ember.autograd

local TOL = {
  conv = {
    float64 = {rtol = 1e-9, atol = 1e-10},
    float32 = {rtol = 5e-3, scale = 5e-3},      -- TF32
  },
  exact = {                                     -- pooling, normalisation
    float64 = {rtol = 1e-10, atol = 1e-11},
    float32 = {rtol = 2e-4, atol = 2e-5},
  },
}

local function R(d, ...)
  local s = table.pack(...)
  s[s.n + 1] = {dtype = d}
  return ember.randn(table.unpack(s, 1, s.n + 1))
end

local function copy_opts(o, what)
  local r = {}
  for k, v in pairs(o) do r[k] = v end
  r.what = what
  return r
end

-- An input that must not require grad (running statistics updated in place).
local function plain(t) return {plain = t} end

-- Runs f on CPU leaves and on device leaves with the same values (inputs
-- made by make(d) for each dtype: a list, with holes for nil arguments when
-- it carries n as table.pack's), compares every output, backpropagates one
-- random upstream gradient per output through both and compares the
-- gradient of every float input. Returns nothing; fails with the reason.
local function grads_agree(kind, what, f, make, dtypes)
  for _, d in ipairs(dtypes or g.float_dtypes) do
    ember.manual_seed(1234)
    local inputs = make(d)
    local n = inputs.n or #inputs
    local cl, dl = {}, {}
    for i = 1, n do
      local x = inputs[i]
      if type(x) == "table" and x.plain then
        cl[i], dl[i] = x.plain:clone(), dev(x.plain)
      elseif ember.is_tensor(x) and x:is_floating_point() then
        cl[i] = x:detach():clone():requires_grad_()
        dl[i] = g.leaf(x)
      else
        cl[i], dl[i] = x, dev(x)
      end
    end
    local yc = table.pack(f(table.unpack(cl, 1, n)))
    local yd = table.pack(f(table.unpack(dl, 1, n)))
    local tol = TOL[kind][d]
    local lc, ld = nil, nil
    for k = 1, yc.n do
      if ember.is_tensor(yc[k]) then
        if yc[k]:is_floating_point() then
          close(yd[k], yc[k], copy_opts(tol, ("%s %s: output %d"):format(what, d, k)))
          if yc[k].requires_grad then
            local gy = ember.randn(yc[k].shape, {dtype = yc[k].dtype})
            local tc, td = (yc[k] * gy):sum(), (yd[k] * dev(gy)):sum()
            lc, ld = lc and lc + tc or tc, ld and ld + td or td
          end
        else
          same(yd[k], yc[k], {what = ("%s %s: output %d"):format(what, d, k)})
        end
      end
    end
    if lc then
      lc:backward()
      ld:backward()
      for i = 1, n do
        if ember.is_tensor(cl[i]) and cl[i].requires_grad then
          if cl[i].grad == nil then
            assert(dl[i].grad == nil, ("%s %s: input %d has a gradient on the device only"):format(what, d, i))
          else
            assert(dl[i].grad, ("%s %s: input %d has no gradient on the device"):format(what, d, i))
            close(dl[i].grad, cl[i].grad, copy_opts(tol, ("%s %s: gradient of input %d"):format(what, d, i)))
          end
        end
      end
    end
  end
end

-- The gradient of phi = sum(w_i * grad_i), grad_i the first gradients of
-- sum(f * gy) (create_graph), on both sides: second-order gradients.
local function grad2_agree(kind, what, f, make, dtypes)
  for _, d in ipairs(dtypes or {"float64"}) do
    ember.manual_seed(99)
    local inputs = make(d)
    local results = {}
    local gy, ws
    for side = 1, 2 do
      local xs = {}
      for i, x in ipairs(inputs) do
        xs[i] = side == 1 and x:detach():clone():requires_grad_() or g.leaf(x)
      end
      local y = f(table.unpack(xs))
      gy = gy or ember.randn(y.shape, {dtype = d})
      local first = {A.grad({(y * (side == 1 and gy or dev(gy))):sum()}, xs, {create_graph = true, allow_unused = true})}
      if not ws then
        ws = {}
        for i, x in ipairs(inputs) do ws[i] = ember.randn(x.shape, {dtype = d}) end
      end
      local phi
      for i = 1, #xs do
        if first[i] then
          local term = (first[i] * (side == 1 and ws[i] or dev(ws[i]))):sum()
          phi = phi and phi + term or term
        end
      end
      results[side] = {first = first, second = {A.grad({phi}, xs, {allow_unused = true})}}
    end
    local tol = TOL[kind][d]
    for i = 1, #inputs do
      local c1, d1 = results[1].first[i], results[2].first[i]
      if c1 then close(d1:detach(), c1:detach(), copy_opts(tol, ("%s %s: first gradient %d"):format(what, d, i))) end
      local c2, d2 = results[1].second[i], results[2].second[i]
      assert((c2 == nil) == (d2 == nil), ("%s %s: second gradient %d exists on one side only"):format(what, d, i))
      if c2 then close(d2, c2, copy_opts(tol, ("%s %s: second gradient %d"):format(what, d, i))) end
    end
  end
end

-- ---- convolution ---------------------------------------------------------------

describe("conv", function()
  it("conv1d/2d/3d forward and backward: stride, padding, dilation, groups, bias", function()
    local cases = {
      -- ns, N, C, I, K, k, options
      {1, 2, 3, {11}, 4, {3}, {}},
      {1, 3, 4, {17}, 6, {5}, {stride = 2, padding = 2, dilation = 2, groups = 2}},
      {2, 2, 3, {9, 8}, 5, {3, 3}, {}},
      {2, 2, 4, {10, 9}, 6, {3, 2}, {stride = {2, 1}, padding = {1, 0}, dilation = {1, 2}, groups = 2}},
      {2, 3, 6, {8, 8}, 6, {3, 3}, {padding = 1, groups = 6}},               -- depthwise
      {2, 2, 8, {7, 7}, 16, {1, 1}, {}},                                     -- 1x1
      {2, 1, 3, {12, 12}, 4, {5, 5}, {stride = 3, padding = 2}},
      {3, 2, 2, {5, 6, 4}, 3, {3, 3, 2}, {}},
      {3, 1, 4, {6, 5, 7}, 4, {2, 3, 3}, {stride = {1, 2, 1}, padding = 1, dilation = {2, 1, 1}, groups = 2}},
    }
    for n, cs in ipairs(cases) do
      local ns, N, C, I, K, k, o = table.unpack(cs)
      local conv = ember["conv" .. ns .. "d"]
      for _, with_bias in ipairs({true, false}) do
        grads_agree("conv", ("case %d%s"):format(n, with_bias and "" or " (no bias)"), function(x, w, b)
          return conv(x, w, b, o)
        end, function(d)
          local xs = {N, C}
          for _, v in ipairs(I) do xs[#xs + 1] = v end
          local ws = {K, C // (o.groups or 1)}
          for _, v in ipairs(k) do ws[#ws + 1] = v end
          return table.pack(R(d, table.unpack(xs)), R(d, table.unpack(ws)), with_bias and R(d, K) or nil)
        end)
      end
    end
  end)

  it("positional arguments, padding 'same' (odd and even kernels) and 'valid', unbatched input", function()
    grads_agree("conv", "positional", function(x, w, b) return ember.conv2d(x, w, b, 2, 1, 1, 1) end,
      function(d) return {R(d, 2, 3, 7, 7), R(d, 4, 3, 3, 3), R(d, 4)} end)
    grads_agree("conv", "same odd", function(x, w) return ember.conv2d(x, w, nil, {padding = "same"}) end,
      function(d) return {R(d, 2, 3, 7, 6), R(d, 4, 3, 3, 5)} end)
    grads_agree("conv", "same even", function(x, w) return ember.conv1d(x, w, nil, {padding = "same", dilation = 1}) end,
      function(d) return {R(d, 2, 3, 10), R(d, 2, 3, 4)} end)
    grads_agree("conv", "same dilated", function(x, w) return ember.conv2d(x, w, nil, {padding = "same", dilation = 2}) end,
      function(d) return {R(d, 1, 2, 9, 9), R(d, 3, 2, 3, 3)} end)
    grads_agree("conv", "valid", function(x, w) return ember.conv3d(x, w, nil, {padding = "valid"}) end,
      function(d) return {R(d, 1, 2, 5, 5, 5), R(d, 2, 2, 2, 2, 2)} end)
    grads_agree("conv", "unbatched", function(x, w, b) return ember.conv2d(x, w, b, {padding = 1}) end,
      function(d) return {R(d, 3, 6, 5), R(d, 2, 3, 3, 3), R(d, 2)} end)
    grads_agree("conv", "unbatched 1d", function(x, w) return ember.conv1d(x, w) end,
      function(d) return {R(d, 3, 9), R(d, 5, 3, 2)} end)
  end)

  it("strided (non-contiguous) inputs and weights", function()
    grads_agree("conv", "transposed input", function(x, w, b)
      return ember.conv2d(x:transpose(3, 4), w, b, {stride = {2, 1}, padding = 1, dilation = {1, 2}})
    end, function(d) return {R(d, 2, 3, 8, 9), R(d, 4, 3, 3, 3), R(d, 4)} end)
    grads_agree("conv", "channels-last input, transposed weight", function(x, w)
      return ember.conv2d(x:permute(1, 4, 2, 3), w:transpose(3, 4), nil, {groups = 2})
    end, function(d) return {R(d, 2, 6, 7, 4), R(d, 6, 2, 3, 2)} end)
    grads_agree("conv", "sliced input", function(x, w)
      return ember.conv1d(x[{{}, {}, {2, 12, 2}}], w, nil, {padding = 1})
    end, function(d) return {R(d, 3, 2, 13), R(d, 3, 2, 3)} end)
    grads_agree("conv", "3-D permuted", function(x, w)
      return ember.conv3d(x:transpose(3, 5), w, nil, {padding = {1, 0, 1}})
    end, function(d) return {R(d, 1, 3, 4, 5, 6), R(d, 2, 3, 3, 2, 3)} end)
  end)

  it("conv_transpose1d/2d/3d with output_padding, groups, dilation", function()
    grads_agree("conv", "transpose1d", function(x, w, b) return ember.conv_transpose1d(x, w, b, 2, 1, 1, 1, 1) end,
      function(d) return {R(d, 2, 3, 7), R(d, 3, 4, 3), R(d, 4)} end)
    grads_agree("conv", "transpose1d groups dilation", function(x, w)
      return ember.conv_transpose1d(x, w, nil, 2, 0, 1, 2, 2)
    end, function(d) return {R(d, 2, 4, 5), R(d, 4, 3, 3)} end)
    grads_agree("conv", "transpose2d", function(x, w, b)
      return ember.conv_transpose2d(x, w, b, {stride = 2, padding = 1, output_padding = 1, groups = 2})
    end, function(d) return {R(d, 2, 4, 5, 6), R(d, 4, 3, 3, 3), R(d, 6)} end)
    grads_agree("conv", "transpose2d asymmetric", function(x, w)
      return ember.conv_transpose2d(x, w, nil, {stride = {3, 2}, padding = {0, 1}, output_padding = {2, 1}, dilation = {1, 2}})
    end, function(d) return {R(d, 1, 2, 4, 5), R(d, 2, 3, 2, 3)} end)
    grads_agree("conv", "transpose3d", function(x, w, b)
      return ember.conv_transpose3d(x, w, b, {stride = 2, output_padding = {1, 0, 1}})
    end, function(d) return {R(d, 1, 2, 3, 4, 3), R(d, 2, 3, 2, 2, 2), R(d, 3)} end)
    grads_agree("conv", "transpose2d strided input", function(x, w)
      return ember.conv_transpose2d(x:transpose(3, 4), w, nil, {stride = 2})
    end, function(d) return {R(d, 2, 3, 4, 5), R(d, 3, 2, 3, 3)} end)
  end)

  it("second-order gradients (conv and conv_transpose are twice differentiable)", function()
    grad2_agree("conv", "conv2d", function(x, w, b) return ember.conv2d(x, w, b, {stride = 2, padding = 1}) end,
      function(d) return {R(d, 2, 3, 6, 5), R(d, 4, 3, 3, 3), R(d, 4)} end)
    grad2_agree("conv", "conv1d groups", function(x, w) return ember.conv1d(x, w, nil, {groups = 2, dilation = 2}) end,
      function(d) return {R(d, 2, 4, 9), R(d, 2, 2, 3)} end)
    grad2_agree("conv", "conv_transpose2d", function(x, w)
      return ember.conv_transpose2d(x, w, nil, {stride = 2, output_padding = 1})
    end, function(d) return {R(d, 1, 2, 3, 4), R(d, 2, 3, 3, 3)} end)
  end)

  it("bigger problems: many channels, a batch that cuDNN's algorithms treat differently", function()
    grads_agree("conv", "64->128 3x3", function(x, w, b) return ember.conv2d(x, w, b, {padding = 1}) end,
      function(d) return {R(d, 8, 64, 16, 16), R(d, 128, 64, 3, 3) * 0.05, R(d, 128)} end)
    grads_agree("conv", "7x7/2 stem", function(x, w) return ember.conv2d(x, w, nil, {stride = 2, padding = 3}) end,
      function(d) return {R(d, 4, 3, 64, 64), R(d, 16, 3, 7, 7) * 0.1} end)
    -- the same shapes again: the cached algorithm is reused
    grads_agree("conv", "64->128 3x3 again", function(x, w, b) return ember.conv2d(x, w, b, {padding = 1}) end,
      function(d) return {R(d, 8, 64, 16, 16), R(d, 128, 64, 3, 3) * 0.05, R(d, 128)} end)
  end)

  it("empty batches and empty channels give the CPU's shapes and values", function()
    for _, d in ipairs(g.float_dtypes) do
      local x, w = R(d, 0, 3, 5, 5), R(d, 4, 3, 3, 3)
      local yc = ember.conv2d(x, w)
      close(ember.conv2d(dev(x), dev(w)), yc)
      local xe, we = R(d, 2, 0, 5), R(d, 3, 0, 2)
      local ok_c, rc = pcall(ember.conv1d, xe, we)
      local ok_d, rd = pcall(ember.conv1d, dev(xe), dev(we))
      assert.are.equal(ok_c, ok_d, "an empty-channel conv1d must fail or pass on both sides: " .. tostring(ok_c and rd or rc))
      if ok_c then close(rd, rc) end
    end
  end)
end)

-- ---- pooling -------------------------------------------------------------------

-- distinct values so that the position of a maximum is not a matter of ties
local function distinct(d, ...)
  local x = R(d, ...)
  return x + ember.arange(x:numel(), {dtype = d}):reshape(x.shape) * 1e-3
end

describe("max pooling", function()
  it("1d/2d/3d values and 1-based indices; gradients", function()
    local cases = {
      {1, {2, 3, 13}, 3, {}},
      {1, {2, 2, 12}, 4, {stride = 3, padding = 2, dilation = 2}},
      {2, {2, 3, 9, 8}, 2, {}},
      {2, {2, 2, 11, 10}, 3, {stride = 2, padding = 1}},
      {2, {1, 3, 10, 9}, {3, 2}, {stride = {2, 1}, padding = {1, 1}, dilation = {2, 1}, ceil_mode = true}},
      {2, {2, 2, 7, 7}, 3, {stride = 2, ceil_mode = true}},
      {3, {1, 2, 6, 7, 5}, 2, {}},
      {3, {2, 1, 7, 6, 6}, {3, 2, 3}, {stride = 2, padding = 1, ceil_mode = true}},
    }
    for n, cs in ipairs(cases) do
      local ns, shape, k, o = table.unpack(cs)
      local pool = ember["max_pool" .. ns .. "d"]
      local oi = copy_opts(o)
      oi.return_indices = true
      grads_agree("exact", "max case " .. n, function(x) return pool(x, k, oi) end,
        function(d) return {distinct(d, table.unpack(shape))} end)
      grads_agree("exact", "max case " .. n .. " (no indices)", function(x) return pool(x, k, o) end,
        function(d) return {distinct(d, table.unpack(shape))} end)
    end
  end)

  it("positional arguments and strided input", function()
    grads_agree("exact", "positional", function(x) return ember.max_pool2d(x:transpose(3, 4), 3, 2, 1, 1, true, true) end,
      function(d) return {distinct(d, 2, 2, 6, 7)} end)
    grads_agree("exact", "channels last", function(x) return ember.max_pool2d(x:permute(1, 4, 2, 3), 2) end,
      function(d) return {distinct(d, 2, 8, 6, 3)} end)
    grads_agree("exact", "unbatched", function(x) return ember.max_pool1d(x, 2, {return_indices = true}) end,
      function(d) return {distinct(d, 3, 9)} end)
  end)

  it("NaN wins (the first NaN), ties go to the first maximum, -inf windows", function()
    for _, d in ipairs(g.float_dtypes) do
      local x = ember.tensor({{{1, 5, 5, 2, 0 / 0, 3, 0 / 0, 7, -math.huge, -math.huge, 4, 4}}}, {dtype = d})
      local yc, ic = ember.max_pool1d(x, 2, {return_indices = true})
      local yd, id = ember.max_pool1d(dev(x), 2, {return_indices = true})
      close(yd, yc)
      same(id, ic)
      yc, ic = ember.max_pool1d(x, 4, {stride = 1, return_indices = true})
      yd, id = ember.max_pool1d(dev(x), 4, {stride = 1, return_indices = true})
      close(yd, yc)
      same(id, ic)
      local x2 = ember.full({1, 1, 4, 4}, -math.huge, {dtype = d})
      yc, ic = ember.max_pool2d(x2, 2, {padding = 1, return_indices = true})
      yd, id = ember.max_pool2d(dev(x2), 2, {padding = 1, return_indices = true})
      close(yd, yc)
      same(id, ic)
    end
  end)
end)

describe("average pooling", function()
  it("count_include_pad, ceil_mode and divisor_override in 1d/2d/3d; gradients", function()
    local cases = {
      {1, {2, 3, 11}, 3, {}},
      {1, {2, 2, 10}, 4, {stride = 3, padding = 2, ceil_mode = true}},
      {1, {2, 2, 10}, 4, {stride = 3, padding = 2, ceil_mode = true, count_include_pad = false}},
      {2, {2, 3, 9, 8}, 2, {}},
      {2, {2, 2, 11, 10}, 3, {stride = 2, padding = 1}},
      {2, {2, 2, 11, 10}, 3, {stride = 2, padding = 1, count_include_pad = false}},
      {2, {1, 3, 7, 9}, {3, 2}, {stride = {2, 3}, padding = {1, 1}, ceil_mode = true}},
      {2, {1, 3, 7, 9}, {3, 2}, {stride = {2, 3}, padding = {1, 1}, ceil_mode = true, count_include_pad = false}},
      {2, {2, 2, 8, 8}, 3, {padding = 1, divisor_override = 5}},
      {3, {1, 2, 6, 7, 5}, 2, {}},
      {3, {2, 1, 7, 6, 6}, {3, 2, 3}, {stride = 2, padding = 1, ceil_mode = true, count_include_pad = false}},
      {3, {1, 2, 5, 5, 5}, 3, {stride = 2, padding = 1, divisor_override = 7}},
    }
    for n, cs in ipairs(cases) do
      local ns, shape, k, o = table.unpack(cs)
      local pool = ember["avg_pool" .. ns .. "d"]
      grads_agree("exact", "avg case " .. n, function(x) return pool(x, k, o) end,
        function(d) return {R(d, table.unpack(shape))} end)
    end
  end)

  it("positional arguments, strided and unbatched input", function()
    grads_agree("exact", "positional", function(x) return ember.avg_pool2d(x:transpose(3, 4), 3, 2, 1, true, false) end,
      function(d) return {R(d, 1, 2, 6, 5)} end)
    grads_agree("exact", "unbatched", function(x) return ember.avg_pool2d(x, 2) end,
      function(d) return {R(d, 3, 6, 4)} end)
  end)
end)

describe("adaptive pooling", function()
  it("adaptive_avg_pool1d/2d/3d and adaptive_max_pool1d/2d with indices; gradients", function()
    grads_agree("exact", "avg1d", function(x) return ember.adaptive_avg_pool1d(x, 4) end,
      function(d) return {R(d, 2, 3, 10)} end)
    grads_agree("exact", "avg1d upsampling", function(x) return ember.adaptive_avg_pool1d(x, 7) end,
      function(d) return {R(d, 2, 3, 3)} end)
    grads_agree("exact", "avg2d", function(x) return ember.adaptive_avg_pool2d(x, {3, 5}) end,
      function(d) return {R(d, 2, 3, 7, 11)} end)
    grads_agree("exact", "avg2d global", function(x) return ember.adaptive_avg_pool2d(x, 1) end,
      function(d) return {R(d, 4, 8, 6, 6)} end)
    grads_agree("exact", "avg2d keep a size", function(x) return ember.adaptive_avg_pool2d(x, {nil, 2}) end,
      function(d) return {R(d, 2, 3, 5, 7)} end)
    grads_agree("exact", "avg3d", function(x) return ember.adaptive_avg_pool3d(x, {2, 3, 2}) end,
      function(d) return {R(d, 1, 2, 5, 7, 4)} end)
    grads_agree("exact", "max1d", function(x) return ember.adaptive_max_pool1d(x, 3, true) end,
      function(d) return {distinct(d, 2, 3, 10)} end)
    grads_agree("exact", "max2d", function(x) return ember.adaptive_max_pool2d(x, {3, 4}, true) end,
      function(d) return {distinct(d, 1, 2, 7, 5)} end)
    grads_agree("exact", "max2d strided", function(x) return ember.adaptive_max_pool2d(x:transpose(3, 4), 2) end,
      function(d) return {distinct(d, 2, 2, 9, 6)} end)
  end)
end)

-- ---- normalisation -------------------------------------------------------------

describe("batch_norm", function()
  -- shapes chosen for each reduction path: S < 32 (column kernel), S >= 32
  -- (a block per channel), few channels with many elements (split sets)
  local shapes = {
    {6, 5},                 -- BatchNorm1d [N, C]
    {300, 7},               -- many rows, S = 1
    {4, 3, 10},             -- [N, C, L]
    {3, 4, 6, 7},           -- 2-D, S = 42
    {32, 3, 32, 32},        -- few channels, 32768 elements each
    {2, 3, 3, 4, 5},        -- 3-D
  }
  it("training: output, batch statistics into the running stats, gradients", function()
    for n, shape in ipairs(shapes) do
      for _, affine in ipairs({true, false}) do
        grads_agree("exact", ("training %d%s"):format(n, affine and "" or " (no affine)"), function(x, w, b, rm, rv)
          local y = ember.batch_norm(x, rm, rv, w, b, true, 0.2, 1e-4)
          return y, rm, rv
        end, function(d)
          local C = shape[2]
          local x = R(d, table.unpack(shape)) * 2 + 3
          return table.pack(x, affine and R(d, C) or nil, affine and R(d, C) or nil,
                            plain(R(d, C)), plain(R(d, C):abs() + 0.5))
        end)
      end
    end
  end)

  it("training without running stats, strided input, large mean", function()
    grads_agree("exact", "no running stats", function(x, w, b) return ember.batch_norm(x:transpose(3, 4), nil, nil, w, b, true) end,
      function(d) return {R(d, 3, 2, 5, 4), R(d, 2), R(d, 2)} end)
    grads_agree("exact", "large mean", function(x) return ember.batch_norm(x, nil, nil, nil, nil, true, 0.1, 1e-5) end,
      function(d) return {R(d, 8, 4, 9) + 1000} end, {"float64"})
  end)

  it("eval mode uses and keeps the running statistics", function()
    for n, shape in ipairs(shapes) do
      grads_agree("exact", "eval " .. n, function(x, w, b, rm, rv)
        return ember.batch_norm(x, rm, rv, w, b, false, 0.1, 1e-5), rm, rv
      end, function(d)
        local C = shape[2]
        return {R(d, table.unpack(shape)), R(d, C), R(d, C), plain(R(d, C)), plain(R(d, C):abs() + 0.5)}
      end)
    end
  end)

  it("second-order gradients", function()
    grad2_agree("exact", "batch_norm", function(x, w, b) return ember.batch_norm(x, nil, nil, w, b, true) end,
      function(d) return {R(d, 4, 3, 5), R(d, 3), R(d, 3)} end)
  end)
end)

describe("group_norm and layer_norm", function()
  it("group_norm: groups, instance norm, one group, with and without affine; gradients", function()
    local cases = {
      {{2, 6, 3, 2}, 3},
      {{4, 8, 5}, 8},                 -- instance norm
      {{3, 4, 7, 7}, 1},
      {{2, 12}, 4},                   -- no spatial dims
      {{2, 6, 2, 3, 4}, 2},           -- 3-D
      {{1, 64, 64, 64}, 1},           -- one big set: split over blocks
      {{2, 32, 40, 40}, 4},
    }
    for n, cs in ipairs(cases) do
      local shape, G = cs[1], cs[2]
      for _, affine in ipairs({true, false}) do
        grads_agree("exact", ("group_norm %d%s"):format(n, affine and "" or " (no affine)"), function(x, w, b)
          return ember.group_norm(x, G, w, b, 1e-5)
        end, function(d)
          local C = shape[2]
          return table.pack(R(d, table.unpack(shape)) * 3 + 1, affine and R(d, C) or nil, affine and R(d, C) or nil)
        end)
      end
    end
    grads_agree("exact", "group_norm strided", function(x, w, b) return ember.group_norm(x:transpose(3, 4), 2, w, b) end,
      function(d) return {R(d, 2, 4, 2, 3), R(d, 4), R(d, 4)} end)
  end)

  it("layer_norm over rows of 64 to 4096 elements, and over several dims", function()
    for _, C in ipairs({64, 100, 1000, 4096}) do
      grads_agree("exact", "layer_norm " .. C, function(x, w, b) return ember.layer_norm(x, C, w, b) end,
        function(d) return {R(d, 37, C) * 2 + 1, R(d, C), R(d, C)} end)
    end
    grads_agree("exact", "layer_norm no affine", function(x) return ember.layer_norm(x, {4, 5}) end,
      function(d) return {R(d, 3, 4, 5)} end)
    grads_agree("exact", "layer_norm 2 dims", function(x, w, b) return ember.layer_norm(x, {4, 5}, w, b, 1e-3) end,
      function(d) return {R(d, 3, 4, 5), R(d, 4, 5), R(d, 4, 5)} end)
    grads_agree("exact", "layer_norm strided", function(x, w, b) return ember.layer_norm(x:t(), 3, w, b) end,
      function(d) return {R(d, 3, 4), R(d, 3), R(d, 3)} end)
    grads_agree("exact", "layer_norm few long rows", function(x, w) return ember.layer_norm(x, 50000, w) end,
      function(d) return {R(d, 2, 50000), R(d, 50000)} end)
    grads_agree("exact", "layer_norm many rows", function(x, w, b) return ember.layer_norm(x, 64, w, b) end,
      function(d) return {R(d, 4096, 64), R(d, 64), R(d, 64)} end)
  end)

  it("F.* names are the same functions", function()
    for _, name in ipairs({"conv1d", "conv2d", "conv3d", "conv_transpose2d", "max_pool2d", "avg_pool2d",
                           "adaptive_avg_pool2d", "batch_norm", "group_norm", "layer_norm"}) do
      assert.is_function(F[name], name)
    end
  end)
end)

-- ---- sizes past 2^31 -------------------------------------------------------------

describe("int64 positions", function()
  local cuda_it = g.cuda_it(it, pending)
  -- one plane of 2^31 + 4097 float32 (8 GiB): positions and sums past 2^31;
  -- expected values from the definitions, worked out here in Lua integers.
  -- The plane and batch norm's output of the same size are alive together:
  -- a device with less total memory than two planes and 1 GiB to spare
  -- cannot run it (the emulated device has 1 GiB unless
  -- EMBER_CUDA_EMU_MEMORY says more), and the test is pending there.
  local name = "pooling and batch norm over a plane of more than 2^31 elements"
  local plane = ((1 << 31) + 4097) * 4
  local need = 2 * plane + (1 << 30)
  local total = g.is_cuda and select(2, ember.cuda.mem_get_info(g.DEV)) or nil
  if total and total < need then
    pending(("%s (skipped: needs %.1f GiB of device memory, %s has %.2f GiB in total)")
      :format(name, need / 2 ^ 30, g.DEV, total / 2 ^ 30))
    return
  end
  cuda_it(name, function()
    local n = (1 << 31) + 4097
    local x = ember.zeros(1, 1, n, {device = g.DEV})
    x[{1, 1, 7}] = 2
    x[{1, 1, n - 5}] = 3
    local O = 65536
    local y, idx = ember.adaptive_max_pool1d(x, O, true)
    local yl, il = y:reshape(-1):cpu(), idx:reshape(-1):cpu()
    assert.are.equal(2, yl[1]:item())
    assert.are.equal(7, il[1]:item())
    assert.are.equal(0, yl[2]:item())
    assert.are.equal(n // O + 1, il[2]:item())        -- the first position of window 2 (all zeros)
    assert.are.equal(3, yl[O]:item())
    assert.are.equal(n - 5, il[O]:item())
    y, idx, yl, il = nil, nil, nil, nil
    local a = ember.adaptive_avg_pool1d(x, O):reshape(-1):cpu()
    local last = n - (O - 1) * n // O                  -- window O: [floor((O-1) n / O), n)
    assert.near(3 / last, a[O]:item(), 1e-6 * 3 / last)
    a = nil
    local z = ember.batch_norm(x, nil, nil, nil, nil, true, 0.1, 1e-5)
    local mean = 5 / n
    local var = 13 / n - mean * mean
    local want = (3 - mean) / math.sqrt(var + 1e-5)
    local got = z[{1, 1, n - 5}]:item()
    assert(math.abs(got - want) <= 1e-3 * math.abs(want), ("batch_norm: got %g, expected %g"):format(got, want))
    got = z[{1, 1, n}]:item()
    want = -mean / math.sqrt(var + 1e-5)
    assert(math.abs(got - want) <= 1e-3 * math.abs(want) + 1e-6, ("batch_norm: got %g, expected %g"):format(got, want))
    x, z = nil, nil
    collectgarbage()
    collectgarbage()
    ember.cuda.empty_cache(g.DEV)
  end)
end)

-- ---- a small CNN ------------------------------------------------------------------

describe("a small CNN", function()
  -- conv(3->8, 3x3, pad 1) - batch_norm (training, running stats) - relu -
  -- max_pool 2 - conv(8->16, 3x3, stride 2) - group_norm - relu -
  -- adaptive_avg_pool 2 - linear -> 10 classes, cross-entropy
  local function params(d)
    ember.manual_seed(5)
    return {
      w1 = R(d, 8, 3, 3, 3) * 0.3, b1 = R(d, 8) * 0.1,
      g1 = R(d, 8) * 0.1 + 1, h1 = R(d, 8) * 0.1,
      w2 = R(d, 16, 8, 3, 3) * 0.15, b2 = R(d, 16) * 0.1,
      g2 = R(d, 16) * 0.1 + 1, h2 = R(d, 16) * 0.1,
      wl = R(d, 10, 64) * 0.1, bl = R(d, 10) * 0.1,
    }
  end
  local order = {"w1", "b1", "g1", "h1", "w2", "b2", "g2", "h2", "wl", "bl"}

  -- h1: the first convolution's output, given (the rest of the network from there)
  local function forward(p, x, rm, rv, h1)
    local h = h1 or ember.conv2d(x, p.w1, p.b1, {padding = 1})
    h = ember.batch_norm(h, rm, rv, p.g1, p.h1, true, 0.1, 1e-5):relu()
    h = ember.max_pool2d(h, 2)
    h = ember.conv2d(h, p.w2, p.b2, {stride = 2})
    h = ember.group_norm(h, 4, p.g2, p.h2):relu()
    h = ember.adaptive_avg_pool2d(h, 2):reshape(x.shape[1], 64)
    return F.linear(h, p.wl, p.bl)
  end

  it("loss, gradients, running stats and two SGD steps match the CPU", function()
    for _, d in ipairs(g.float_dtypes) do
      local tol = d == "float64" and {rtol = 1e-8, atol = 1e-10} or {rtol = 1e-2, scale = 1e-2}
      ember.manual_seed(6)
      local x = R(d, 6, 3, 12, 12)
      local target = ember.randint(1, 11, {6})
      local sides = {}
      for side = 1, 2 do
        local p0 = params(d)
        local p, rm, rv = {}, nil, nil
        for _, k in ipairs(order) do
          p[k] = side == 1 and p0[k]:clone():requires_grad_() or g.leaf(p0[k])
        end
        rm = ember.zeros(8, {dtype = d})
        rv = ember.ones(8, {dtype = d})
        if side == 2 then rm, rv = dev(rm), dev(rv) end
        local xs, ts = side == 1 and x or dev(x), side == 1 and target or dev(target)
        local out = {losses = {}, grads = {}}
        for step = 1, 2 do
          for _, k in ipairs(order) do p[k].grad = nil end
          local loss = F.cross_entropy(forward(p, xs, rm, rv), ts)
          loss:backward()
          out.losses[step] = loss:detach()
          out.grads[step] = {}
          for _, k in ipairs(order) do out.grads[step][k] = p[k].grad:clone() end
          if side == 1 then
            -- per channel, sum |dL/dh| over the first convolution's output h:
            -- the scale of the terms whose sum is b1's gradient (below)
            local pd = {}
            for _, k in ipairs(order) do pd[k] = p[k]:detach() end
            local h1 = ember.conv2d(xs, pd.w1, pd.b1, {padding = 1}):requires_grad_()
            F.cross_entropy(forward(pd, xs, nil, nil, h1), ts):backward()
            out.dh_abs = out.dh_abs or {}
            out.dh_abs[step] = h1.grad:to("float64"):abs():transpose(1, 2):reshape(8, -1):sum(2)
          end
          ember.no_grad(function()
            for _, k in ipairs(order) do p[k]:sub_(p[k].grad * 0.1) end
          end)
        end
        out.params, out.rm, out.rv = p, rm, rv
        sides[side] = out
      end
      local c, gd = sides[1], sides[2]
      for step = 1, 2 do
        close(gd.losses[step], c.losses[step], copy_opts(tol, ("%s loss of step %d"):format(d, step)))
        for _, k in ipairs(order) do
          local what = ("%s step %d gradient of %s"):format(d, step, k)
          if k == "b1" then
            -- b1 feeds batch norm in training mode, which subtracts the batch
            -- mean: the gradient of b1 is zero mathematically, and both
            -- devices give rounding noise. Each must be at rounding level:
            -- the sum of n = 6*12*12 terms dL/dh that cancel, within
            -- 4 n eps sum |dL/dh| (a wrong batch norm gradient gives the
            -- size of sum |dL/dh| itself, 1e3 (float32) to 1e12 (float64)
            -- times more).
            local eps = d == "float64" and 2 ^ -52 or 2 ^ -23
            local bound = c.dh_abs[step] * (4 * 6 * 12 * 12 * eps)
            close(gd.grads[step][k], c.grads[step][k], {what = what, no_values = true})
            for side, gr in pairs({device = gd.grads[step][k], cpu = c.grads[step][k]}) do
              local a = gr:cpu():to("float64"):abs()
              local over = a:gt(bound):sum():item()
              assert(over == 0, ("%s on the %s: %d of %d above rounding level (largest %g, bound %g)")
                :format(what, side, over, a:numel(), a:max():item(), bound:max():item()))
            end
          else
            close(gd.grads[step][k], c.grads[step][k], copy_opts(tol, what))
          end
        end
      end
      for _, k in ipairs(order) do
        close(gd.params[k]:detach(), c.params[k]:detach(), copy_opts(tol, d .. " parameter " .. k .. " after two steps"))
      end
      close(gd.rm, c.rm, copy_opts(tol, d .. " running_mean"))
      close(gd.rv, c.rv, copy_opts(tol, d .. " running_var"))
    end
  end)
end)
