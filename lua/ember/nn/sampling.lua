-- ember.nn.sampling — F.grid_sample and F.affine_grid (spatial transformer networks), as
-- torch.nn.functional's. Composed from engine ops (elementwise, gather, matmul), so
-- autograd gives the gradients to input, grid and theta and every backend runs them.
--
-- grid_sample in outline: each grid point's coordinates are unnormalised to pixel
-- positions and padded (border: clipped, reflection: reflected then clipped), exactly as
-- PyTorch's CPU kernel does it (also where its gradient is 0: on and beyond the edges);
-- each point then reads K taps (1 for nearest, 2^d for (tri)linear, 4^d for bi/tricubic)
-- from the input flattened to [N, C, S] with one zero appended: a tap outside the input
-- reads that zero, so no mask multiplies the values (an inf in the input outside the
-- taps' reach cannot turn into NaN). Gathers read the taps (one per tap for nearest and
-- (tri)linear, one for all 4^d cubic taps); a weighted sum over the taps gives the output.
-- The gradient to the input is gather's (a scatter-add), the one to the grid flows
-- through the weights, as PyTorch's formulas.
--
-- Loaded by ember.nn.functional while that is still loading: nothing here requires it.
local ember = require "ember"
local errors = require "ember.errors"
local args = require "ember.args"

local raise, shape_str, check_tensor = errors.raise, errors.shape_str, errors.check_tensor

local M = {}

local MODES = {bilinear = true, nearest = true, bicubic = true}
local PADDINGS = {zeros = true, border = true, reflection = true}
local FLOATS = {float32 = true, float64 = true, float16 = true, bfloat16 = true}
local HALF = {float16 = true, bfloat16 = true}
local CUBIC_A = -0.75   -- PyTorch's (and OpenCV's) cubic convolution constant

local function list_str(t) return "{" .. table.concat(t, ", ") .. "}" end

-- value (no history) with c's history attached by a zero gradient: PyTorch's gradient
-- where the result does not move with c, without 0 * inf turning into NaN
local function with_zero_grad(value, c)
  if not c.requires_grad then return value end
  return ember.where(ember.ones_like(value, {dtype = "bool"}), value, c)
end

-- grid values g (in [-1, 1]) as pixel positions along a dim of n pixels
local function unnormalize(g, n, align)
  if align then return (g + 1) * ((n - 1) / 2) end
  return (g + 1) * (n / 2) - 0.5
end

-- c clipped to [0, n - 1]; the gradient is 1 strictly inside and 0 on and beyond the
-- edges (PyTorch's clip_coordinates_get_grad). NaN stays NaN.
local function clip(c, n)
  local inside = c:gt(0):logical_and(c:lt(n - 1))
  return ember.where(inside, c, c:detach():clamp(0, n - 1))
end

-- c reflected into the input (about -0.5 and n - 0.5, or 0 and n - 1 with align_corners)
-- then clipped, as PyTorch's vectorised CPU kernel: the gradient is +-1 by the parity of
-- the reflections, 0 where the result lands on an edge. inf and NaN give NaN.
local function reflect(c, n, align)
  local low, twice_span = -0.5, 2 * n
  if align then
    if n <= 1 then return with_zero_grad(ember.zeros_like(c:detach()), c) end
    low, twice_span = 0, 2 * (n - 1)
  end
  local t = low ~= 0 and c - low or c
  local a = ember.where(t:lt(0), -t, t)
  local k = (a:detach() / twice_span):trunc()
  local extra = a - k * twice_span
  local flipped = -extra + twice_span
  local r = ember.where(extra:gt(flipped), flipped, extra)
  if low ~= 0 then r = r + low end
  return clip(r, n)
end

-- the padding of a coordinate c along a dim of n pixels
local function pad(c, n, padding, align)
  if padding == "border" then return clip(c, n) end
  if padding == "reflection" then return reflect(c, n, align) end
  return c
end

-- the cubic convolution coefficients of the taps at distance 1 + t, t, 1 - t, 2 - t
local function cubic_coefficients(t)
  local A = CUBIC_A
  local function far(x) return ((x * A - 5 * A) * x + 8 * A) * x - 4 * A end
  local function near(x) return (x * (A + 2) - (A + 3)) * x * x + 1 end
  return {far(t + 1), near(t), near(-t + 1), far(-t + 2)}
end

-- whole-number positions p (float) as int64, those outside [lo, hi] (NaN, huge) as lo: no
-- float beyond int64's range reaches the conversion
local function to_index(p, lo, hi)
  return ember.where(p:ge(lo):logical_and(p:le(hi)), p, lo):to("int64")
end

-- u clamped to [lo, hi] (NaN stays NaN), its gradient passed inside: clamp's own backward
-- costs ten times this
local function clamp_grad(u, lo, hi)
  return ember.where(u:ge(lo):logical_and(u:le(hi)), u, u:detach():clamp(lo, hi))
end

-- The taps of one spatial dim for a coordinate u ([N, L], unnormalised) along a dim of n
-- pixels: their positions (int64 [N, T, L], 0-based; beyond 0 .. n - 1 for a tap
-- outside), their weights ([N, T, L] with the grid's history; for nearest none, but
-- where the position is NaN).
local function dim_taps(u, n, mode, padding, align)
  if padding == "zeros" then u = clamp_grad(u, -5, n + 4) end   -- inf: a point far outside, as 1e30
  if mode == "nearest" then
    local c = pad(u, n, padding, align):detach()
    return to_index(c:round(), -1, n):unsqueeze(2), nil, c:isnan()
  elseif mode == "bilinear" then
    local c = pad(u, n, padding, align)
    local f = c:detach():floor()
    local frac = c - f
    local i = to_index(f, -2, n)   -- -2: both taps outside
    return ember.stack({i, i + 1}, 2), ember.stack({-frac + 1, frac}, 2)
  end
  -- bicubic: the weights from the raw position, each tap's position padded on its own
  local f = u:detach():floor()
  local pos = {}
  for j = 1, 4 do pos[j] = pad(f + (j - 2), n, padding, align):detach() end
  return to_index(ember.stack(pos, 2), -1, n), ember.stack(cubic_coefficients(u - f), 2)
end

-- [N, C, *out] sampled from x ([N, C, *in], a float dtype the engine computes in) at the
-- grid g ([N, *out, d])
local function sample(x, g, mode, padding, align)
  local nd = x.ndim - 2
  local N, C = x.shape[1], x.shape[2]
  local out_shape, L = {N, C}, 1
  for i = 2, g.ndim - 1 do out_shape[#out_shape + 1] = g.shape[i]; L = L * g.shape[i] end
  local gf = g:reshape(N, L, nd)
  -- per dim, outermost (z or y) first: flat position = ((z * H) + y) * W + x
  local idx, w, ok, S, nan
  for k = nd, 1, -1 do
    local n = x.shape[2 + nd - k + 1]
    local u = unnormalize(gf:select(3, k), n, align)
    local ipos, wk, isnan = dim_taps(u, n, mode, padding, align)
    local inside = ipos:ge(0):logical_and(ipos:le(n - 1))
    if isnan then nan = nan and nan:logical_or(isnan) or isnan end
    if not idx then
      idx, w, ok, S = ipos, wk, inside, n
    else
      local T = ipos.shape[2]
      local K = idx.shape[2]
      idx = (idx:unsqueeze(3) * n + ipos:unsqueeze(2)):reshape(N, K * T, L)
      ok = ok:unsqueeze(3):logical_and(inside:unsqueeze(2)):reshape(N, K * T, L)
      if w then w = (w:unsqueeze(3) * wk:unsqueeze(2)):reshape(N, K * T, L) end
      S = S * n
    end
  end
  local K = idx.shape[2]
  -- taps outside read the zero appended at 1-based position S + 1
  idx = ember.where(ok, idx + 1, S + 1)
  local flat = ember.cat({x:reshape(N, C, S), ember.zeros(N, C, 1, {dtype = x.dtype, device = x.device})}, 3)
  local y
  if mode == "nearest" then
    -- 1, or NaN where a coordinate is NaN; the grid's gradient is 0
    local one = ember.ones(N, 1, L, {dtype = x.dtype, device = x.device}):masked_fill(nan:unsqueeze(2), 0 / 0)
    if g.requires_grad then one = with_zero_grad(one, gf:sum(3):unsqueeze(2)) end
    y = flat:gather(3, idx:expand(N, C, L)) * one
  elseif K <= 8 then
    -- (tri)linear: one gather and one product per tap, summed as they come (a sum over a
    -- dim of K, and the backward of K slices of one gathered tensor, cost more)
    w = w:unsqueeze(2)
    for k = 1, K do
      local v = flat:gather(3, idx:select(2, k):unsqueeze(2):expand(N, C, L)) * w:select(3, k)
      y = y and y + v or v
    end
  else
    idx = idx:reshape(N, 1, K * L):expand(N, C, K * L)
    y = (flat:gather(3, idx):reshape(N, C, K, L) * w:unsqueeze(2)):sum(3)
  end
  return y:reshape(out_shape)
end

local function check_sample_args(input, grid, mode, padding, align)
  local op = "grid_sample"
  check_tensor(input, op, "input")
  check_tensor(grid, op, "grid")
  if type(mode) ~= "string" or not MODES[mode] then
    raise(string.format("%s: mode must be \"bilinear\", \"nearest\" or \"bicubic\", got %s", op,
                        type(mode) == "string" and "\"" .. mode .. "\"" or tostring(mode)))
  end
  if type(padding) ~= "string" or not PADDINGS[padding] then
    raise(string.format("%s: padding_mode must be \"zeros\", \"border\" or \"reflection\", got %s", op,
                        type(padding) == "string" and "\"" .. padding .. "\"" or tostring(padding)))
  end
  if align ~= nil and type(align) ~= "boolean" then
    raise(string.format("%s: align_corners must be a boolean, got %s", op, type(align)))
  end
  if input.ndim ~= 4 and input.ndim ~= 5 then
    raise(string.format("%s: input must be 4-D [N, C, H, W] or 5-D [N, C, D, H, W], got %s", op, shape_str(input)))
  end
  local nd = input.ndim - 2
  local want = nd == 2 and "[N, H_out, W_out, 2]" or "[N, D_out, H_out, W_out, 3]"
  if grid.ndim ~= input.ndim then
    raise(string.format("%s: input %s is %d-D, so grid must be %d-D %s, got %s", op, shape_str(input), input.ndim,
                        input.ndim, want, shape_str(grid)))
  end
  if grid.shape[1] ~= input.shape[1] then
    raise(string.format("%s: input %s and grid %s: batch sizes differ (%d vs %d)", op, shape_str(input),
                        shape_str(grid), input.shape[1], grid.shape[1]))
  end
  if grid.shape[grid.ndim] ~= nd then
    raise(string.format("%s: grid %s must end in a dim of %d (%s) for a %d-D input %s", op, shape_str(grid), nd,
                        nd == 2 and "x, y" or "x, y, z", input.ndim, shape_str(input)))
  end
  for i = 3, input.ndim do
    if input.shape[i] == 0 then
      raise(string.format("%s: input %s: the spatial dims must not be empty (dim %d is 0)", op, shape_str(input), i))
    end
  end
  for _, p in ipairs({{input, "input"}, {grid, "grid"}}) do
    if not FLOATS[p[1].dtype] then
      raise(string.format("%s: %s must be a floating-point tensor (float32, float64, float16, bfloat16), got %s",
                          op, p[2], p[1].dtype))
    end
  end
  if input.device ~= grid.device then
    raise(string.format("%s: input and grid must be on the same device, got %s and %s", op, input.device, grid.device))
  end
end

-- fn()'s result; an error inside it (memory for a size nobody can hold, say) raised at the
-- caller's line as op's, with the engine's message
local function computed(op, fn)
  local ok, res = pcall(fn)
  if ok then return res end
  raise(string.format("%s: %s", op, tostring(res):gsub("^[^:]+:%d+: ", "")))
end

local grid_sample_names = {"mode", "padding_mode", "align_corners"}

--- F.grid_sample(input, grid [, mode = "bilinear" [, padding_mode = "zeros" [, align_corners = false]]]) -> output
function M.grid_sample(input, grid, ...)
  local o = args.options("grid_sample", grid_sample_names, ...)
  local mode, padding, align = o.mode or "bilinear", o.padding_mode or "zeros", o.align_corners
  check_sample_args(input, grid, mode, padding, align)
  -- autocast: PyTorch's CPU list runs grid_sampler in float32, its CUDA list promotes
  input, grid = ember._autocast(input.device == "cpu" and "fp32" or "promote", input, grid)
  if input.dtype ~= grid.dtype then
    raise(string.format("grid_sample: input (%s) and grid (%s) must have the same dtype", input.dtype, grid.dtype))
  end
  local dtype = input.dtype
  return computed("grid_sample", function()
    if HALF[dtype] then   -- positions and weights in float32, the result rounded once
      return sample(input:to("float32"), grid:to("float32"), mode, padding, align == true):to(dtype)
    end
    return sample(input, grid, mode, padding, align == true)
  end)
end

-- -1 .. 1 in n steps (the pixel centres with align_corners, else scaled by (n - 1) / n);
-- 0 for a single step (PyTorch's linspace_from_neg_one)
local function base_coords(n, align, dtype, device)
  if n <= 1 then return ember.zeros(n, {dtype = dtype, device = device}) end
  local r = ember.linspace(-1, 1, n, {dtype = dtype, device = device})
  if not align then r = r * (n - 1) / n end
  return r
end

-- affine_grid's grid, the arguments checked
local function affine(theta, size, align)
  local n = #size
  local dtype, device = theta.dtype, theta.device
  local t = HALF[dtype] and theta:to("float32") or theta
  local cdtype = t.dtype
  local parts, npoints = {}, 1
  local spatial = {}
  for i = 3, n do spatial[#spatial + 1] = size[i]; npoints = npoints * size[i] end
  -- base[..., k] is coordinate k (x first) of each output point, then a 1
  local nd = n - 2
  for k = 1, nd do
    local len = spatial[nd - k + 1]
    local view = {}
    for j = 1, nd do view[j] = 1 end
    view[nd - k + 1] = len
    parts[k] = base_coords(len, align, cdtype, device):reshape(view):expand(spatial)
  end
  parts[nd + 1] = ember.ones(spatial, {dtype = cdtype, device = device})
  local base = ember.stack(parts, nd + 1):reshape(1, npoints, nd + 1)
  local grid = base:matmul(t:transpose(2, 3))
  local shape = {size[1]}
  for i = 1, nd do shape[i + 1] = spatial[i] end
  shape[nd + 2] = nd
  grid = grid:reshape(shape)
  if HALF[dtype] then grid = grid:to(dtype) end
  return grid
end

--- F.affine_grid(theta, size [, align_corners = false]) -> grid
function M.affine_grid(theta, size, ...)
  local op = "affine_grid"
  local o = args.options(op, {"align_corners"}, ...)
  local align = o.align_corners
  if align ~= nil and type(align) ~= "boolean" then
    raise(string.format("%s: align_corners must be a boolean, got %s", op, type(align)))
  end
  check_tensor(theta, op, "theta")
  if type(size) ~= "table" then
    raise(string.format("%s: size must be a list {N, C, H, W} or {N, C, D, H, W}, got %s", op, type(size)))
  end
  local n = #size
  for i = 1, n do
    if math.type(size[i]) ~= "integer" then
      raise(string.format("%s: size must hold integers, got %s at position %d", op, tostring(size[i]), i))
    end
  end
  if n ~= 4 and n ~= 5 then
    raise(string.format("%s: size must have 4 entries {N, C, H, W} (2-D) or 5 {N, C, D, H, W} (3-D), got %s",
                        op, list_str(size)))
  end
  if not FLOATS[theta.dtype] then
    raise(string.format("%s: theta must be a floating-point tensor, got %s", op, theta.dtype))
  end
  local rows, cols = n - 2, n - 1
  if theta.ndim ~= 3 or theta.shape[2] ~= rows or theta.shape[3] ~= cols then
    raise(string.format("%s: size %s needs theta of shape [N, %d, %d] (a batch of %d-D affine matrices), got %s",
                        op, list_str(size), rows, cols, rows, shape_str(theta)))
  end
  for i = 1, n do
    if size[i] <= 0 then
      raise(string.format("%s: size %s must be positive", op, list_str(size)))
    end
  end
  if theta.shape[1] ~= size[1] then
    raise(string.format("%s: theta %s holds %d matrices but size %s asks for a batch of %d", op, shape_str(theta),
                        theta.shape[1], list_str(size), size[1]))
  end
  return computed(op, function() return affine(theta, size, align == true) end)
end

return {functional = {grid_sample = M.grid_sample, affine_grid = M.affine_grid}, layers = {}}
