-- conv_spec.lua — the engine's convolutions, pooling and normalisation
-- (ember.conv*, ember.*pool*, ember.batch_norm / group_norm / layer_norm).
-- Expected values come from naive loops written here (one output element at
-- a time, straight from the definitions), from hand calculation, and from
-- central finite differences (gradcheck / gradgradcheck in float64). The
-- PyTorch fixtures for the same ops live in conv_nn_spec.lua.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

-- t equals want (a tensor or nested tables) within tol
local function check(t, want, tol)
  if ember.is_tensor(want) then want = want:tolist() end
  h.check(t, want, tol)
end

local A = ember.autograd

local function R(...)
  local args = {...}
  args[#args + 1] = {dtype = "float64"}
  return ember.randn(table.unpack(args))
end

local function fill(n, v)
  local t = {}
  for i = 1, n do t[i] = v end
  return t
end

-- row-major strides of a shape
local function strides(shape)
  local s, acc = {}, 1
  for d = #shape, 1, -1 do s[d] = acc; acc = acc * shape[d] end
  return s
end

-- calls f(pos) for every position (1-based table) of a box of `sizes`
local function each(sizes, f)
  local n = 1
  for _, s in ipairs(sizes) do n = n * s end
  if n == 0 then return end
  local pos = fill(#sizes, 1)
  for _ = 1, n do
    f(pos)
    for d = #sizes, 1, -1 do
      pos[d] = pos[d] + 1
      if pos[d] <= sizes[d] then break end
      pos[d] = 1
    end
  end
end

local function flat(t) return t:reshape(-1):tolist() end

-- y[n, k, o] = b[k] + sum_{c in group(k), j} x[n, c, o*s - p + j*d] w[k, c', j]  (0-based positions)
local function naive_conv(x, w, b, s, p, d, groups)
  local xs, ws = x.shape, w.shape
  local ns = #xs - 2
  local N, C, K = xs[1], xs[2], ws[1]
  local Cg, Kg = C // groups, K // groups
  local O, I, k = {}, {}, {}
  for i = 1, ns do
    I[i], k[i] = xs[i + 2], ws[i + 2]
    O[i] = (I[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1
  end
  local xf, wf, bf = flat(x), flat(w), b and flat(b)
  local xst, wst = strides(xs), strides(ws)
  local shape = {N, K}
  for i = 1, ns do shape[i + 2] = O[i] end
  local out = {}
  each(shape, function(pos)
    local n, kk = pos[1], pos[2]
    local g = (kk - 1) // Kg
    local acc = bf and bf[kk] or 0
    for cl = 1, Cg do
      local c = g * Cg + cl
      each(k, function(j)
        local xi = (n - 1) * xst[1] + (c - 1) * xst[2]
        for i = 1, ns do
          local q = (pos[i + 2] - 1) * s[i] - p[i] + (j[i] - 1) * d[i]
          if q < 0 or q >= I[i] then return end
          xi = xi + q * xst[i + 2]
        end
        local wi = (kk - 1) * wst[1] + (cl - 1) * wst[2]
        for i = 1, ns do wi = wi + (j[i] - 1) * wst[i + 2] end
        acc = acc + xf[xi + 1] * wf[wi + 1]
      end)
    end
    out[#out + 1] = acc
  end)
  return ember.tensor(out, {dtype = "float64"}):reshape(shape)
end

-- conv_transpose: x [N, Cin, I], w [Cin, Cout/g, k]; every input element
-- scatters x * w into y[n, co, o*s - p + j*d]
local function naive_conv_transpose(x, w, b, s, p, op, d, groups)
  local xs, ws = x.shape, w.shape
  local ns = #xs - 2
  local N, Cin, Coutg = xs[1], xs[2], ws[2]
  local Cing, Cout = Cin // groups, Coutg * groups
  local O, k = {}, {}
  for i = 1, ns do
    k[i] = ws[i + 2]
    O[i] = (xs[i + 2] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1
  end
  local shape = {N, Cout}
  for i = 1, ns do shape[i + 2] = O[i] end
  local yst, wst = strides(shape), strides(ws)
  local out = fill(N * Cout * (function() local m = 1 for i = 1, ns do m = m * O[i] end return m end)(), 0)
  local xf, wf = flat(x), flat(w)
  local xi = 0
  each(xs, function(pos)
    xi = xi + 1
    local n, ci = pos[1], pos[2]
    local g = (ci - 1) // Cing
    for col = 1, Coutg do
      local co = g * Coutg + col
      each(k, function(j)
        local yi = (n - 1) * yst[1] + (co - 1) * yst[2]
        for i = 1, ns do
          local q = (pos[i + 2] - 1) * s[i] - p[i] + (j[i] - 1) * d[i]
          if q < 0 or q >= O[i] then return end
          yi = yi + q * yst[i + 2]
        end
        local wi = (ci - 1) * wst[1] + (col - 1) * wst[2]
        for i = 1, ns do wi = wi + (j[i] - 1) * wst[i + 2] end
        out[yi + 1] = out[yi + 1] + xf[xi] * wf[wi + 1]
      end)
    end
  end)
  local y = ember.tensor(out, {dtype = "float64"}):reshape(shape)
  if b then
    local bs = {1, Cout}
    for i = 1, ns do bs[i + 2] = 1 end
    y = y + b:reshape(bs)
  end
  return y
end

local function rep(v, ns)
  if type(v) == "table" then return v end
  return fill(ns, v)
end

describe("conv forward against naive loops", function()
  local cases = {
    {"conv2d plain", {2, 3, 6, 5}, {4, 3, 3, 3}, {}},
    {"conv2d stride 2 pad 1 bias", {2, 3, 7, 6}, {4, 3, 3, 2}, {bias = true, stride = 2, padding = 1}},
    {"conv2d dilation 2, uneven stride", {1, 2, 9, 8}, {3, 2, 3, 3}, {dilation = 2, stride = {1, 2}, padding = {2, 1}}},
    {"conv2d groups 2", {2, 4, 5, 5}, {6, 2, 3, 3}, {groups = 2, padding = 1, bias = true}},
    {"conv2d depthwise", {2, 3, 5, 6}, {6, 1, 3, 3}, {groups = 3, padding = 1}},
    {"conv1d", {3, 2, 11}, {4, 2, 4}, {stride = 3, padding = 2, dilation = 2, bias = true}},
    {"conv3d", {1, 2, 4, 5, 4}, {2, 2, 2, 3, 2}, {stride = {1, 2, 1}, padding = 1}},
    {"conv2d 1x1", {2, 5, 3, 4}, {7, 5, 1, 1}, {bias = true}},
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      ember.manual_seed(11)
      local x, w = R(table.unpack(c[2])), R(table.unpack(c[3]))
      local o = c[4]
      local ns = #c[2] - 2
      local b = o.bias and R(c[3][1]) or nil
      local f = ember["conv" .. ns .. "d"]
      local y = f(x, w, b, {stride = o.stride, padding = o.padding, dilation = o.dilation, groups = o.groups})
      local want = naive_conv(x, w, b, rep(o.stride or 1, ns), rep(o.padding or 0, ns), rep(o.dilation or 1, ns),
                              o.groups or 1)
      check(y, want, 1e-10)
      -- positional arguments as PyTorch's
      local y2 = f(x, w, b, o.stride or 1, o.padding or 0, o.dilation or 1, o.groups or 1)
      check(y2, want, 1e-10)
      -- float32 agrees to float32 precision
      local y32 = f(x:float(), w:float(), b and b:float(), {stride = o.stride, padding = o.padding,
                                                           dilation = o.dilation, groups = o.groups})
      assert.equal("float32", y32.dtype)
      check(y32:double(), want, 1e-4)
    end)
  end

  it("an unbatched input gives an unbatched result", function()
    local x, w = R(3, 6, 5), R(4, 3, 3, 3)
    local y = ember.conv2d(x, w, nil, {padding = 1})
    h.check_shape(y, {4, 6, 5})
    check(y, naive_conv(x:unsqueeze(1), w, nil, {1, 1}, {1, 1}, {1, 1}, 1):squeeze(1), 1e-10)
  end)

  it("padding 'same' (odd total: one more on the right, as PyTorch) and 'valid'", function()
    local x, w = R(1, 2, 6, 7), R(3, 2, 4, 3)
    local y = ember.conv2d(x, w, nil, {padding = "same"})
    h.check_shape(y, {1, 3, 6, 7})
    -- kernel 4 spans 3 beyond one: pad 1 before and 2 after; padded by hand
    local xp = ember.zeros(1, 2, 9, 9, {dtype = "float64"})
    xp[{{}, {}, {2, 7}, {2, 8}}] = x
    check(y, naive_conv(xp, w, nil, {1, 1}, {0, 0}, {1, 1}, 1), 1e-10)
    local yd = ember.conv2d(x, w, nil, {padding = "same", dilation = 2})
    h.check_shape(yd, {1, 3, 6, 7})
    check(ember.conv2d(x, w, nil, 1, "valid"), naive_conv(x, w, nil, {1, 1}, {0, 0}, {1, 1}, 1), 1e-10)
  end)

  it("a hand-computed 1-D case", function()
    -- x = 1 2 3 4, w = 1 0 -1, padding 1: y_o = x_{o-1} - x_{o+1} (zeros outside)
    local x = ember.tensor({{{1, 2, 3, 4}}}, {dtype = "float64"})
    local w = ember.tensor({{{1, 0, -1}}}, {dtype = "float64"})
    check(ember.conv1d(x, w, nil, 1, 1), {{{-2, -2, -2, 3}}})
    check(ember.conv_transpose1d(x, w, nil, 1, 1), {{{2, 2, 2, -3}}})
  end)

  it("empty batches and channels", function()
    local y = ember.conv2d(ember.zeros(0, 3, 5, 5), ember.ones(2, 3, 3, 3))
    h.check_shape(y, {0, 2, 3, 3})
    local z = ember.conv2d(ember.zeros(2, 0, 5, 5), ember.ones(2, 0, 3, 3), ember.ones(2))
    check(z, ember.ones(2, 2, 3, 3))
  end)
end)

describe("conv_transpose forward against naive loops", function()
  local cases = {
    {"2d stride 2 output_padding 1", {2, 3, 4, 3}, {3, 2, 3, 3}, {stride = 2, padding = 1, output_padding = 1, bias = true}},
    {"2d groups and dilation", {1, 4, 3, 4}, {4, 3, 2, 3}, {groups = 2, dilation = 2, stride = {2, 1}}},
    {"1d", {2, 3, 5}, {3, 2, 4}, {stride = 3, padding = 2, output_padding = 2}},
    {"3d", {1, 2, 2, 3, 2}, {2, 2, 2, 2, 3}, {stride = 2, padding = {0, 1, 1}}},
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      ember.manual_seed(12)
      local x, w = R(table.unpack(c[2])), R(table.unpack(c[3]))
      local o = c[4]
      local ns = #c[2] - 2
      local groups = o.groups or 1
      local b = o.bias and R(c[3][2] * groups) or nil
      local y = ember["conv_transpose" .. ns .. "d"](x, w, b, {stride = o.stride, padding = o.padding,
                                                               output_padding = o.output_padding, groups = o.groups,
                                                               dilation = o.dilation})
      check(y, naive_conv_transpose(x, w, b, rep(o.stride or 1, ns), rep(o.padding or 0, ns),
                                    rep(o.output_padding or 0, ns), rep(o.dilation or 1, ns), groups), 1e-10)
    end)
  end
end)

describe("conv gradients", function()
  local function ok(fn, inputs, opts)
    ember.manual_seed(21)
    local good, report = A.gradcheck(fn, inputs, opts)
    assert(good, report)
  end
  it("conv2d: input, weight and bias, strided input, stride/padding/dilation", function()
    ok(function(x, w, b) return ember.conv2d(x:transpose(3, 4), w, b, {stride = {2, 1}, padding = 1, dilation = {1, 2}}) end,
       {R(2, 2, 5, 6), R(3, 2, 3, 2), R(3)})
  end)
  it("conv2d with groups", function()
    ok(function(x, w) return ember.conv2d(x, w, nil, {groups = 2, padding = 1}) end, {R(1, 4, 4, 3), R(4, 2, 3, 3)})
  end)
  it("conv2d with padding 'same' and an even kernel", function()
    ok(function(x, w) return ember.conv2d(x, w, nil, 1, "same") end, {R(1, 2, 4, 5), R(2, 2, 2, 3)})
  end)
  it("conv1d and conv3d", function()
    ok(function(x, w, b) return ember.conv1d(x, w, b, 2, 1) end, {R(2, 2, 7), R(3, 2, 3), R(3)})
    ok(function(x, w) return ember.conv3d(x, w, nil, 1, {1, 0, 1}) end, {R(1, 2, 3, 3, 3), R(2, 2, 2, 2, 2)})
  end)
  it("conv_transpose2d with output_padding and groups", function()
    ok(function(x, w, b) return ember.conv_transpose2d(x, w, b, {stride = 2, padding = 1, output_padding = 1, groups = 2}) end,
       {R(1, 4, 3, 3), R(4, 1, 3, 3), R(2)})
  end)
  it("conv_transpose1d", function()
    ok(function(x, w) return ember.conv_transpose1d(x, w, nil, 2, 0, 1, 1, 2) end, {R(2, 2, 4), R(2, 3, 3)})
  end)

  local function ok2(fn, inputs)
    ember.manual_seed(22)
    local good, report = A.gradgradcheck(fn, inputs)
    assert(good, report)
  end
  it("conv2d is twice differentiable (input, weight, bias)", function()
    ok2(function(x, w, b) return ember.conv2d(x, w, b, {stride = 2, padding = 1, groups = 2}) end,
        {R(1, 2, 4, 4), R(2, 1, 3, 3), R(2)})
  end)
  it("conv_transpose2d and conv1d are twice differentiable", function()
    ok2(function(x, w) return ember.conv_transpose2d(x, w, nil, {stride = 2, output_padding = 1}) end,
        {R(1, 2, 2, 3), R(2, 1, 2, 2)})
    ok2(function(x, w) return (ember.conv1d(x, w, nil, 1, 1) ^ 2):sum() end, {R(1, 2, 5), R(2, 2, 3)})
  end)
  it("the gradient of a weight shared by two convs accumulates", function()
    local x = R(1, 1, 4, 4)
    local w = R(1, 1, 3, 3):requires_grad_()
    local y = ember.conv2d(x, w):sum() + ember.conv2d(x, w, nil, 1, 1):sum()
    y:backward()
    -- d/dw_j of sum_o x[o + j] is the sum of the x values each tap sees
    local want = ember.zeros(1, 1, 3, 3, {dtype = "float64"})
    for a = 1, 3 do
      for c = 1, 3 do
        local valid = x[{1, 1, {a, a + 1}, {c, c + 1}}]:sum():item()
        local padded = x[{1, 1, {math.max(1, a - 1), math.min(4, a + 2)}, {math.max(1, c - 1), math.min(4, c + 2)}}]
        want[{1, 1, a, c}] = valid + padded:sum():item()
      end
    end
    check(w.grad, want, 1e-10)
  end)
  it("the bias's gradient is gy summed over all dims but the channels, with or without the weight's", function()
    -- float32 [16, 32, 10, 10] -> 32 goes to oneDNN (the bias summed in the
    -- weight gradient's pass), float64 to the reference loops; frozen
    -- weights take the separate sum
    for _, dt in ipairs({"float32", "float64"}) do
      for _, train_w in ipairs({true, false}) do
        ember.manual_seed(5)
        local x = ember.randn(16, 32, 10, 10, {dtype = dt})
        local w = ember.randn(32, 32, 3, 3, {dtype = dt}):requires_grad_(train_w)
        local b = ember.randn(32, {dtype = dt}):requires_grad_()
        local gy = ember.randn(16, 32, 10, 10, {dtype = dt})
        local y = ember.conv2d(x, w, b, 1, 1)
        -- the forward adds b[k] to every position of channel k
        local y0 = ember.conv2d(x, w:detach(), nil, 1, 1)
        check((y - y0):detach():amax({1, 3, 4}), b:detach(), 1e-5)
        check((y - y0):detach():amin({1, 3, 4}), b:detach(), 1e-5)
        y:backward(gy)
        local want = {}
        for k = 1, 32 do
          local s = 0
          for _, v in ipairs(gy[{{}, k}]:reshape(-1):tolist()) do s = s + v end
          want[k] = s
        end
        check(b.grad, want, dt == "float32" and 1e-3 or 1e-9)
        assert.equal(train_w, w.grad ~= nil)
      end
    end
  end)
end)

-- ---- pooling --------------------------------------------------------------------------

-- PyTorch's output size rule
local function pooled(I, k, p, s, d, ceil)
  local o = (I + 2 * p - d * (k - 1) - 1 + (ceil and s - 1 or 0)) // s + 1
  if ceil and (o - 1) * s >= I + p then o = o - 1 end
  return o
end

-- naive 2-D pooling of x [N, C, H, W]: max (values, 1-based plane indices) or avg
local function naive_pool2d(x, kind, k, s, p, d, ceil, include_pad, divisor)
  local N, C, H, W = table.unpack(x.shape)
  local OH, OW = pooled(H, k[1], p[1], s[1], d[1], ceil), pooled(W, k[2], p[2], s[2], d[2], ceil)
  local xv = x:tolist()
  local out, idx = {}, {}
  for n = 1, N do
    for c = 1, C do
      for oh = 0, OH - 1 do
        for ow = 0, OW - 1 do
          local best, at, sum, count = -math.huge, 0, 0, 0
          for i = 0, k[1] - 1 do
            for j = 0, k[2] - 1 do
              local r, q = oh * s[1] - p[1] + i * d[1], ow * s[2] - p[2] + j * d[2]
              if r >= 0 and r < H and q >= 0 and q < W then
                local v = xv[n][c][r + 1][q + 1]
                if v > best or (v ~= v and best == best) then best, at = v, r * W + q + 1 end
                sum, count = sum + v, count + 1
              end
            end
          end
          if kind == "max" then
            out[#out + 1], idx[#idx + 1] = best, at
          else
            -- count_include_pad: the window clipped to the padded input
            local h0, w0 = oh * s[1] - p[1], ow * s[2] - p[2]
            local h1, w1 = math.min(h0 + k[1], H + p[1]), math.min(w0 + k[2], W + p[2])
            local n_pad = (h1 - h0) * (w1 - w0)
            out[#out + 1] = sum / (divisor or (include_pad and n_pad or count))
          end
        end
      end
    end
  end
  local y = ember.tensor(out, {dtype = "float64"}):reshape(N, C, OH, OW)
  return y, kind == "max" and ember.tensor(idx, {dtype = "int64"}):reshape(N, C, OH, OW) or nil
end

local spread = h.spread

describe("pooling", function()
  local cases = {
    {"kernel 2", {2, 3, 6, 6}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
    {"kernel 3 stride 2 pad 1 ceil", {1, 2, 7, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
    {"uneven kernel and stride", {2, 1, 9, 7}, {3, 2}, {2, 3}, {1, 0}, {1, 1}, false},
    {"ceil_mode drops a window starting in the right padding", {1, 1, 5, 5}, {2, 2}, {2, 2}, {1, 1}, {1, 1}, true},
  }
  for _, c in ipairs(cases) do
    it("max_pool2d " .. c[1], function()
      local x = spread(table.unpack(c[2]))
      local y, idx = ember.max_pool2d(x, c[3], c[4], c[5], c[6], c[7], true)
      local wy, widx = naive_pool2d(x, "max", c[3], c[4], c[5], c[6], c[7])
      check(y, wy, 0)
      assert.same(widx:tolist(), idx:tolist())
    end)
    it("avg_pool2d " .. c[1], function()
      local x = R(table.unpack(c[2]))
      for _, inc in ipairs({true, false}) do
        local y = ember.avg_pool2d(x, c[3], {stride = c[4], padding = c[5], ceil_mode = c[7], count_include_pad = inc})
        check(y, (naive_pool2d(x, "avg", c[3], c[4], c[5], {1, 1}, c[7], inc)), 1e-12)
      end
      check(ember.avg_pool2d(x, c[3], c[4], c[5], c[7], true, 3),
            (naive_pool2d(x, "avg", c[3], c[4], c[5], {1, 1}, c[7], true, 3)), 1e-12)
    end)
  end

  it("max_pool2d with dilation", function()
    local x = spread(1, 2, 8, 9)
    local y, idx = ember.max_pool2d(x, 3, {stride = 2, padding = 1, dilation = 2, return_indices = true})
    local wy, widx = naive_pool2d(x, "max", {3, 3}, {2, 2}, {1, 1}, {2, 2}, false)
    check(y, wy, 0)
    assert.same(widx:tolist(), idx:tolist())
  end)

  it("max_pool: NaN wins, and the first of equal maxima is returned", function()
    local x = ember.tensor({{{1, 5, 5, 2}, {0 / 0, 1, 3, 3}}}, {dtype = "float64"})
    local y, idx = ember.max_pool1d(x, 2, {return_indices = true})
    assert.is_true(h.is_nan(y[{1, 2, 1}]:item()))
    check(y[{{}, 1}], {{5, 5}})
    assert.same({{{2, 3}, {1, 3}}}, idx:tolist())
  end)

  it("max_pool1d and max_pool3d by hand", function()
    local x = ember.tensor({{{3, 1, 4, 1, 5, 9, 2}}}, {dtype = "float64"})
    check(ember.max_pool1d(x, 3, 2), {{{4, 5, 9}}})
    check(ember.max_pool1d(x, 3, 2, 1), {{{3, 4, 9, 9}}})
    local v = ember.arange(1, 28, {dtype = "float64"}):reshape(1, 1, 3, 3, 3)
    check(ember.max_pool3d(v, 2, 1), {{{{{14, 15}, {17, 18}}, {{23, 24}, {26, 27}}}}})
    check(ember.avg_pool1d(x, 2), {{{2, 2.5, 7}}})
  end)

  it("adaptive pooling windows [floor(o I / O), ceil((o+1) I / O))", function()
    local x = ember.tensor({{{1, 2, 3, 4, 5, 6, 7}}}, {dtype = "float64"})
    -- I = 7, O = 3: windows [0,3) [2,5) [4,7)
    check(ember.adaptive_avg_pool1d(x, 3), {{{2, 4, 6}}})
    local m, i = ember.adaptive_max_pool1d(x, 3, true)
    check(m, {{{3, 5, 7}}})
    assert.same({{{3, 5, 7}}}, i:tolist())
    -- O > I: windows overlap and repeat elements
    check(ember.adaptive_avg_pool1d(x[{{}, {}, {1, 2}}], 3), {{{1, 1.5, 2}}})
    local x2 = R(2, 3, 5, 7)
    local y = ember.adaptive_avg_pool2d(x2, {2, 3})
    h.check_shape(y, {2, 3, 2, 3})
    check(y[{{}, {}, 2, 3}], x2[{{}, {}, {3, 5}, {5, 7}}]:mean({3, 4}), 1e-12)
    check(ember.adaptive_avg_pool2d(x2, 1):reshape(2, 3), x2:mean({3, 4}), 1e-12)
    -- nil keeps that dim
    h.check_shape(ember.adaptive_avg_pool2d(x2, {nil, 2}), {2, 3, 5, 2})
  end)

  local function ok(fn, inputs)
    ember.manual_seed(31)
    local good, report = A.gradcheck(fn, inputs)
    assert(good, report)
  end
  it("gradients: max (strided input), avg (both pad counts, ceil), adaptive", function()
    ok(function(x) return ember.max_pool2d(x:transpose(3, 4), 3, 2, 1, 1, true) end, {spread(2, 2, 6, 7)})
    ok(function(x) return ember.max_pool1d(x, 2, 1, 0, 2) end, {spread(1, 2, 7)})
    ok(function(x) return ember.avg_pool2d(x:transpose(3, 4), 3, 2, 1, true, false) end, {R(1, 2, 6, 5)})
    ok(function(x) return ember.avg_pool2d(x, 2, 1, 1, false, true, 3) end, {R(1, 2, 4, 3)})
    ok(function(x) return ember.adaptive_avg_pool2d(x, {3, 2}) end, {R(2, 1, 5, 7)})
    ok(function(x) return ember.adaptive_max_pool2d(x, {3, 4}) end, {spread(1, 2, 7, 5)})
    ok(function(x) return ember.avg_pool3d(x, 2, 1) end, {R(1, 1, 3, 3, 3)})
  end)
  it("second derivatives of avg and max pooling", function()
    ember.manual_seed(32)
    assert(A.gradgradcheck(function(x) return ember.avg_pool2d(x, 3, 2, 1) ^ 2 end, {R(1, 1, 5, 5)}))
    assert(A.gradgradcheck(function(x) return ember.max_pool2d(x, 2) ^ 2 end, {spread(1, 1, 4, 4)}))
  end)
  it("max_pool's gradient goes to the argmax, summed where windows share it", function()
    local x = ember.tensor({{{1, 9, 2, 0, 3}}}, {dtype = "float64", requires_grad = true})
    ember.max_pool1d(x, 2, 1):sum():backward()
    check(x.grad, {{{0, 2, 1, 0, 1}}})
  end)
end)

-- ---- normalisation ----------------------------------------------------------------------

-- mean and biased variance of each channel of x [N, C, ...] in plain Lua
local function channel_stats(x)
  local N, C = x.shape[1], x.shape[2]
  local v = x:reshape(N, C, -1):tolist()
  local mean, var = {}, {}
  for c = 1, C do
    local s, n = 0, 0
    for i = 1, N do for _, e in ipairs(v[i][c]) do s, n = s + e, n + 1 end end
    mean[c] = s / n
    local q = 0
    for i = 1, N do for _, e in ipairs(v[i][c]) do q = q + (e - mean[c]) ^ 2 end end
    var[c] = q / n
  end
  return mean, var, #v[1][1] * N
end

describe("normalisation", function()
  it("batch_norm in training: batch statistics, running stats with momentum and the unbiased variance", function()
    ember.manual_seed(41)
    local x = R(4, 3, 2, 5) * 3 + 100   -- a large mean: statistics must not lose precision
    local w, b = R(3), R(3)
    local rm, rv = ember.zeros(3, {dtype = "float64"}), ember.ones(3, {dtype = "float64"})
    local y = ember.batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5)
    local mean, var, n = channel_stats(x)
    local want = x:clone()
    for c = 1, 3 do
      want[{{}, c}] = (x[{{}, c}] - mean[c]) / math.sqrt(var[c] + 1e-5) * w[c] + b[c]
      assert.near(0.9 * 0 + 0.1 * mean[c], rm[c]:item(), 1e-9)
      assert.near(0.9 * 1 + 0.1 * var[c] * n / (n - 1), rv[c]:item(), 1e-9)
    end
    check(y, want, 1e-9)
    -- a second step uses the updated running stats as the base
    local x2 = R(4, 3, 2, 5)
    local m1, v1 = rm:clone(), rv:clone()
    ember.batch_norm(x2, rm, rv, nil, nil, true, 0.3)
    local mean2, var2 = channel_stats(x2)
    for c = 1, 3 do
      assert.near(0.7 * m1[c]:item() + 0.3 * mean2[c], rm[c]:item(), 1e-9)
      assert.near(0.7 * v1[c]:item() + 0.3 * var2[c] * n / (n - 1), rv[c]:item(), 1e-9)
    end
  end)

  it("batch_norm in eval mode uses the running statistics and changes nothing", function()
    local x = R(2, 3, 4)
    local rm, rv = ember.tensor({1, -2, 0.5}, {dtype = "float64"}), ember.tensor({4, 0.25, 1}, {dtype = "float64"})
    local w, b = ember.tensor({2, 1, -1}, {dtype = "float64"}), ember.tensor({0, 1, 3}, {dtype = "float64"})
    local y = ember.batch_norm(x, rm, rv, w, b, false, 0.1, 0)
    check(y[{{}, 1}], (x[{{}, 1}] - 1) / 2 * 2, 1e-12)
    check(y[{{}, 2}], (x[{{}, 2}] + 2) / 0.5 + 1, 1e-12)
    check(y[{{}, 3}], -(x[{{}, 3}] - 0.5) + 3, 1e-12)
    check(rm, {1, -2, 0.5})
    -- 2-D input [N, C] (BatchNorm1d)
    local x2 = R(5, 3)
    local m2 = channel_stats(x2)
    check(ember.batch_norm(x2, nil, nil, nil, nil, true):mean(1), {0, 0, 0}, 1e-12)
    assert.near(m2[1], x2[{{}, 1}]:mean():item(), 1e-12)
  end)

  it("group_norm and layer_norm against plain formulas", function()
    local x = R(2, 6, 3, 2) * 2 + 5
    local w, b = R(6), R(6)
    local y = ember.group_norm(x, 3, w, b, 1e-5)
    local g = x:reshape(2, 3, -1)
    local mu = g:mean(3, true)
    local var = ((g - mu) ^ 2):mean(3, true)
    local want = ((g - mu) / (var + 1e-5):sqrt()):reshape(2, 6, 3, 2) * w:reshape(1, 6, 1, 1) + b:reshape(1, 6, 1, 1)
    check(y, want, 1e-10)
    local z = R(3, 4, 5)
    local lw, lb = R(4, 5), R(4, 5)
    local lm = z:mean({2, 3}, true)
    local lv = ((z - lm) ^ 2):mean({2, 3}, true)
    check(ember.layer_norm(z, {4, 5}, lw, lb), (z - lm) / (lv + 1e-5):sqrt() * lw + lb, 1e-10)
    local zm = z:mean(3, true)
    check(ember.layer_norm(z, 5), (z - zm) / (((z - zm) ^ 2):mean(3, true) + 1e-5):sqrt(), 1e-10)
  end)

  local function ok(fn, inputs)
    ember.manual_seed(51)
    local good, report = A.gradcheck(fn, inputs)
    assert(good, report)
    good, report = A.gradgradcheck(fn, inputs)
    assert(good, report)
  end
  it("batch_norm gradients, first and second order (training, strided input)", function()
    ok(function(x, w, b) return ember.batch_norm(x:transpose(3, 4), nil, nil, w, b, true) end, {R(3, 2, 3, 2), R(2), R(2)})
    ok(function(x) return ember.batch_norm(x, nil, nil, nil, nil, true, 0.1, 1e-3) end, {R(4, 3)})
  end)
  it("batch_norm gradients in eval mode", function()
    local rm, rv = R(2), R(2):abs() + 0.5
    ok(function(x, w, b) return ember.batch_norm(x, rm, rv, w, b, false) end, {R(2, 2, 3), R(2), R(2)})
  end)
  it("group_norm and layer_norm gradients, first and second order", function()
    ok(function(x, w, b) return ember.group_norm(x:transpose(3, 4), 2, w, b) end, {R(2, 4, 2, 3), R(4), R(4)})
    ok(function(x, w, b) return ember.layer_norm(x:t(), 3, w, b) end, {R(3, 4), R(3), R(3)})
    ok(function(x) return ember.layer_norm(x, {2, 3}) end, {R(2, 2, 3)})
  end)
end)

describe("bad input names the op and the shapes, at the caller's line", function()
  local x, w = ember.randn(2, 3, 5, 5), ember.randn(4, 3, 3, 3)
  local here = "conv_spec.lua:"
  local cases = {
    {function() return ember.conv2d(x, ember.randn(4, 2, 3, 3)) end, "conv2d: input [2,3,5,5] has 3 channels"},
    {function() return ember.conv2d(ember.randn(2, 4, 5, 5), ember.randn(3, 2, 3, 3), nil, {groups = 2}) end,
     "groups 2 must divide the output channels 3"},
    {function() return ember.conv2d(x, ember.randn(4, 3, 7, 7)) end, "larger than the padded input"},
    {function() return ember.conv2d(x, w, nil, 0) end, "stride must be positive"},
    {function() return ember.conv2d(x, w, nil, 1, -1) end, "padding must be non-negative"},
    {function() return ember.conv2d(x, w, nil, 1, 0, 0) end, "dilation must be positive"},
    {function() return ember.conv2d(ember.randn(5, 5), w) end, "expected a 3-D (unbatched) or 4-D (batched) input, got [5,5]"},
    {function() return ember.conv2d(x, ember.randn(4, 3, 3)) end, "expected a 4-D weight"},
    {function() return ember.conv2d(x, w, ember.randn(3)) end, "bias of shape [4]"},
    {function() return ember.conv2d(x, w:double()) end, "same dtype"},
    {function() return ember.conv2d(x:long(), w) end, "floating point"},
    {function() return ember.conv2d(x, w, nil, {paddin = 1}) end, "unknown option 'paddin'"},
    {function() return ember.conv2d(x, w, 3) end, "argument 3: bias must be a tensor or nil, got number"},
    {function() return ember.conv2d(x, w, nil, 1, 0, 1, 0) end, "conv2d: groups must be positive, got 0"},
    {function() return ember.conv2d(x, ember.randn(4, 3, 0, 3)) end, "weight [4,3,0,3] has an empty kernel"},
    {function() return ember.conv_transpose2d(x, ember.randn(3, 2, 3, 3), nil, 1, "same") end,
     "padding \"same\" is not supported for transposed convolutions"},
    {function() return ember.conv_transpose2d(ember.randn(1, 3, 1, 1), ember.randn(3, 2, 1, 1), nil, 1, 1) end,
     "the output size -1 in spatial dim 1 is not positive"},
    {function() return ember.batch_norm(x, ember.zeros(3), nil, nil, nil, true) end,
     "give both running_mean and running_var, or neither"},
    {function() return ember.batch_norm(x, nil, nil, nil, nil, true, 0.1, -1) end, "eps must be non-negative, got -1"},
    {function() return ember.adaptive_avg_pool2d(ember.randn(1, 2, 0, 4), 2) end,
     "input [1,2,0,4] has an empty spatial dim 1"},
    {function() return ember.layer_norm(x, {}) end, "normalized_shape must have 1 to 16 entries"},
    {function() return ember.layer_norm(x, {"a"}) end, "normalized_shape entry 1 must be an integer"},
    {function() return ember.max_pool2d(x, 2, {ceil_mode = 1}) end, "ceil_mode must be a boolean, got number"},
    {function() return ember.batch_norm(x, nil, nil, nil, nil, true, "0.1") end, "momentum must be a number, got string"},
    {function() return ember.conv2d(x, w, nil, {padding = "half"}) end, "\"same\" or \"valid\""},
    {function() return ember.conv2d(x, w, nil, {stride = {1, 2, 3}}) end, "2 entries"},
    {function() return ember.conv_transpose2d(x, ember.randn(3, 2, 3, 3), nil, {stride = 2, output_padding = 2}) end,
     "output_padding"},
    {function() return ember.conv_transpose2d(x, ember.randn(4, 2, 3, 3)) end, "expected weight.shape[1] = 4"},
    {function() return ember.max_pool2d(x, 2, 1, 2) end, "at most half the kernel size"},
    {function() return ember.max_pool2d(x, 7) end, "larger than the padded input"},
    {function() return ember.max_pool2d(x, 0) end, "kernel_size must be positive"},
    {function() return ember.max_pool2d(x) end, "kernel_size is required"},
    {function() return ember.avg_pool2d(ember.randn(5), 2) end, "expected a 3-D (unbatched) or 4-D (batched) input"},
    {function() return ember.avg_pool2d(x, 2, 2, 0, false, true, 0) end, "divisor_override must be positive"},
    {function() return ember.adaptive_avg_pool2d(x, -1) end, "output_size must be non-negative"},
    {function() return ember.batch_norm(ember.randn(1, 3), nil, nil, nil, nil, true) end,
     "expected more than 1 value per channel when training, got input [1,3]"},
    {function() return ember.batch_norm(x, ember.zeros(4), ember.ones(4)) end, "expected running_mean of shape [3]"},
    {function() return ember.batch_norm(x, nil, nil) end, "running_mean and running_var must be given"},
    {function() return ember.group_norm(x, 2) end, "num_groups 2 must be positive and divide the channels 3"},
    {function() return ember.layer_norm(x, {4}) end, "must end with normalized_shape [4]"},
    {function() return ember.layer_norm(x, 5, ember.ones(4)) end, "expected weight of shape [5]"},
  }
  for i, c in ipairs(cases) do
    it("case " .. i .. ": " .. c[2], function()
      local msg = err(c[1])
      has(msg, here)
      has(msg, c[2])
    end)
  end
end)
