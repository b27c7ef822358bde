-- grid_sample_spec.lua — F.grid_sample and F.affine_grid (lua/ember/nn/sampling.lua):
-- values and float64 gradients of input, grid and theta against PyTorch 2.15
-- (fixtures/grid_sample.lua, written by scripts/fixtures/make_grid_sample_fixtures.py) for
-- 4-D and 5-D inputs, every mode, padding and align_corners, points on the borders, far
-- outside and reflected many times; float16/bfloat16 against PyTorch's float32 result
-- rounded; ember's rule for NaN and infinite grid values (hand values); the grid's zero
-- gradient in nearest mode; autocast; the same fixtures on a CUDA device where one is
-- present (EMBER_CUDA=emu gives the emulated one); and what bad input gets.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local F = ember.nn.functional

local THIS_FILE = "grid_sample_spec.lua:"
local FIX = h.fixture("grid_sample.lua")
local NAN = 0 / 0

local function T(v, dtype) return ember.tensor(v, {dtype = dtype or "float64"}) end

describe("F.grid_sample and F.affine_grid against PyTorch (fixtures)", function()
  for _, c in ipairs(FIX.cases) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

describe("F.grid_sample in float16 and bfloat16", function()
  for _, c in ipairs(FIX.half) do
    it(c.dtype .. " " .. c.mode .. ": PyTorch's float32 result, rounded once", function()
      local x = h.from_spec(c.input):to(c.dtype)
      local g = h.from_spec(c.grid):to(c.dtype)
      local y = F.grid_sample(x, g, {mode = c.mode, padding_mode = "border", align_corners = false})
      assert.are.equal(c.dtype, y.dtype)
      h.check_shape(y, c.out.shape)
      -- one rounding apart at most: 2^-8 (bfloat16) or 2^-11 (float16) of the magnitude
      local ulp = c.dtype == "bfloat16" and 2 ^ -7 or 2 ^ -10
      local got, want = y:to("float32"):reshape(-1):tolist(), c.out.values
      for i, w in ipairs(want) do
        assert(math.abs(got[i] - w) <= ulp * math.max(1, math.abs(w)),
               string.format("value %d: %s, PyTorch %s", i, got[i], w))
      end
    end)
  end

  it("gradients reach half inputs and grids in their dtype", function()
    local x = ember.randn(1, 2, 4, 4, {dtype = "bfloat16"}):requires_grad_()
    local g = (ember.rand(1, 3, 3, 2) * 2 - 1):to("bfloat16"):requires_grad_()
    F.grid_sample(x, g, {align_corners = true}):sum():backward()
    assert.are.equal("bfloat16", x.grad.dtype)
    assert.are.equal("bfloat16", g.grad.dtype)
  end)
end)

-- ---- NaN and infinite grid values: ember's rule (PyTorch's kernels disagree) ----------------

describe("F.grid_sample with NaN and infinite grid values", function()
  -- 1..12 as [1, 1, 3, 4] (and [1, 1, 2, 3, 4] for 5-D); the finite points sit on pixel
  -- centres with align_corners, where every mode gives the pixel's value exactly
  local img4 = ember.arange(1, 13, {dtype = "float64"}):reshape(1, 1, 3, 4)
  local img5 = ember.arange(1, 25, {dtype = "float64"}):reshape(1, 1, 2, 3, 4)
  local modes = {"bilinear", "nearest", "bicubic"}
  local paddings = {"zeros", "border", "reflection"}

  local function grid4(bad)   -- points: (bad, 0), (0, bad), (-1/3, 0) = pixel (row 2, col 2)
    return T({{{{bad, 0}, {0, bad}, {-1 / 3, 0}}}})
  end
  local function grid5(bad)   -- points: (bad, 0, 0), (0, 0, bad), (1, -1, 1) = (d 2, h 1, w 4)
    return T({{{{{bad, 0, 0}, {0, 0, bad}, {1, -1, 1}}}}})
  end

  for _, mode in ipairs(modes) do
    for _, padding in ipairs(paddings) do
      it(string.format("NaN gives NaN, the other points their pixel, finite input gradients (%s, %s)", mode, padding),
         function()
        for _, case in ipairs({{img4, grid4, 6}, {img5, grid5, 16}}) do
          local x = case[1]:clone():requires_grad_()
          local g = case[2](NAN):requires_grad_()
          local y = F.grid_sample(x, g, {mode = mode, padding_mode = padding, align_corners = true}):reshape(-1)
          local v = y:tolist()
          assert(v[1] ~= v[1] and v[2] ~= v[2], "NaN points must give NaN, got " .. h.show(v))
          assert.are.equal(case[3], v[3])
          -- the gradient of the finite point only: the NaN points' weights reach no pixel
          local w = T({0, 0, 1})
          local gx, gg = ember.autograd.grad({(y * w):sum()}, {x, g})
          local want = ember.zeros_like(x):reshape(-1)
          want[case[3]] = 1
          h.close_tensors("input gradient", gx:reshape(-1), want, 0)
          -- the NaN points' own gradients may be NaN (0 * NaN, as PyTorch's); the finite one's not
          assert.is_false(gg:reshape(3, -1)[3]:isnan():any():item())
        end
      end)
    end
  end

  for _, mode in ipairs(modes) do
    it("an infinite coordinate with zeros padding reads 0 (" .. mode .. ")", function()
      for _, inf in ipairs({math.huge, -math.huge}) do
        for _, case in ipairs({{img4, grid4}, {img5, grid5}}) do
          local g = case[2](inf):requires_grad_()
          local y = F.grid_sample(case[1], g, {mode = mode, align_corners = false}):reshape(-1)
          local v = y:tolist()
          assert.are.equal(0, v[1])
          assert.are.equal(0, v[2])
          y:sum():backward()
          assert.is_false(g.grad:isnan():any():item())
        end
      end
    end)
    it("an infinite coordinate with reflection padding gives NaN (" .. mode .. ")", function()
      for _, case in ipairs({{img4, grid4}, {img5, grid5}}) do
        local y = F.grid_sample(case[1], case[2](math.huge), {mode = mode, padding_mode = "reflection"})
        local v = y:reshape(-1):tolist()
        assert(v[1] ~= v[1] and v[2] ~= v[2], h.show(v))
      end
    end)
  end

  it("an infinite coordinate with border padding: the edge (bilinear, nearest), NaN (bicubic, as PyTorch)", function()
    -- x = +inf at y = 0 (row 2 with align_corners): the last pixel of row 2, 8; y = -inf: row 1
    local g = T({{{{math.huge, 0}, {0, -math.huge}}}})
    -- (0, -inf): row 1 at column position 1.5, between 2 and 3; nearest takes the even one, 3
    assert.are.same({8, 2.5}, F.grid_sample(img4, g, "bilinear", "border", true):reshape(-1):tolist())
    assert.are.same({8, 3}, F.grid_sample(img4, g, "nearest", "border", true):reshape(-1):tolist())
    local v = F.grid_sample(img4, g, "bicubic", "border", true):reshape(-1):tolist()
    assert(v[1] ~= v[1] and v[2] ~= v[2], h.show(v))
  end)

  it("large finite coordinates are points far outside (zeros), at the edge (border), reflected (reflection)", function()
    local g = T({{{{1e30, 0}}}})
    assert.are.same({0}, F.grid_sample(img4, g, {align_corners = true}):reshape(-1):tolist())
    assert.are.same({8}, F.grid_sample(img4, g, {padding_mode = "border", align_corners = true}):reshape(-1):tolist())
    -- x = 13 (normalised) with 4 pixels and align_corners: position 21 reflects to 3 (period 6)
    assert.are.same({8}, F.grid_sample(img4, T({{{{13, 0}}}}), "bilinear", "reflection", true):reshape(-1):tolist())
  end)
end)

-- ---- gradients ------------------------------------------------------------------------------

describe("F.grid_sample gradients", function()
  it("nearest gives the grid a zero gradient, also through backward()", function()
    local x = ember.randn(2, 3, 4, 5, {dtype = "float64"})
    local g = (ember.rand(2, 3, 3, 2, {dtype = "float64"}) * 2.4 - 1.2):requires_grad_()
    local y = F.grid_sample(x, g, {mode = "nearest"})
    assert.is_true(y.requires_grad)
    y:sum():backward()
    h.close_tensors("grid gradient", g.grad, ember.zeros_like(g), 0)
  end)

  it("the grid's gradient in nearest mode stays 0 when the input holds inf", function()
    local x = T({{{{math.huge, 1}, {2, 3}}}})
    local g = T({{{{-0.5, -0.5}, {0.5, 0.5}}}}):requires_grad_()
    F.grid_sample(x, g, "nearest"):sum():backward()
    h.close_tensors("grid gradient", g.grad, ember.zeros_like(g), 0)
  end)

  it("an inf in the input away from a point's taps does not reach it (zeros padding)", function()
    -- the taps outside read an appended 0, not a masked pixel: no 0 * inf
    local x = T({{{{1, 2, math.huge}}}})
    local y = F.grid_sample(x, T({{{{-1, 0}}}}), {align_corners = false})   -- half on pixel 1, half outside
    assert.are.same({0.5}, y:reshape(-1):tolist())
  end)

  it("finite differences agree away from the kinks (bilinear, bicubic; reflection, border)", function()
    ember.manual_seed(3)
    local x = ember.randn(1, 2, 4, 5, {dtype = "float64"})
    -- positions 0.3 .. 0.7 of the way between pixel centres: no kink within the step
    local function between(hi)
      return ember.randint(0, hi, {1, 3, 2, 1}):to("float64") + 0.3 + ember.rand(1, 3, 2, 1, {dtype = "float64"}) * 0.4
    end
    local gx, gy = between(7), between(5)
    -- pixel positions -1 .. 6 along x and -1 .. 4 along y, normalised with align_corners
    local g = ember.cat({(gx - 1) / 2 - 1, (gy - 1) / 1.5 - 1}, 4)
    for _, mp in ipairs({{"bilinear", "reflection"}, {"bicubic", "border"}, {"bicubic", "zeros"}}) do
      h.gradcheck_ok(function(a, b) return F.grid_sample(a, b, mp[1], mp[2], true) end,
                     {x:clone():requires_grad_(), g:clone():requires_grad_()})
    end
  end)

  it("affine_grid's gradient to theta by finite differences", function()
    h.gradcheck_ok(function(t) return F.affine_grid(t, {2, 1, 3, 4}, false) end,
                   {ember.randn(2, 2, 3, {dtype = "float64", requires_grad = true})})
    h.gradcheck_ok(function(t) return F.affine_grid(t, {1, 1, 2, 2, 3}, true) end,
                   {ember.randn(1, 3, 4, {dtype = "float64", requires_grad = true})})
  end)
end)

describe("F.grid_sample under autocast", function()
  it("runs in float32 on the CPU, as PyTorch's CPU list", function()
    local x = ember.randn(1, 2, 4, 4, {dtype = "bfloat16"})
    local g = ember.rand(1, 2, 2, 2, {dtype = "bfloat16"}) * 2 - 1
    local y = ember.autocast("cpu", {dtype = "bfloat16"}, function() return F.grid_sample(x, g) end)
    assert.are.equal("float32", y.dtype)
    -- and float32 with float64 is refused outside autocast, as PyTorch
    has(err(F.grid_sample, ember.randn(1, 1, 2, 2), ember.zeros(1, 1, 1, 2, {dtype = "float64"})),
        "grid_sample: input (float32) and grid (float64) must have the same dtype")
  end)
end)

-- ---- on a CUDA device -----------------------------------------------------------------------

describe("F.grid_sample and F.affine_grid on a CUDA device", function()
  if not ember.cuda.is_available() then
    pending("no CUDA device (EMBER_CUDA=emu runs these on the emulated one)")
    return
  end
  for _, c in ipairs(FIX.cases) do
    if c.name:match("^grid_sample/[45]d/") or c.name:match("^stn/") or c.name:match("^affine_grid/") then
      it(c.name, function()
        local a = {}
        for i, spec in ipairs(c.inputs) do
          a[i] = h.from_spec(spec):to("cuda")
          if spec.grad then a[i]:requires_grad_() end
        end
        local fn = assert(load("local F, ember = ...; return function(a) return " .. c.call .. " end", "=" .. c.name,
                               "t"))(F, ember)
        local y = fn(a)
        assert.are.equal("cuda:0", y.device)
        h.compare(c.call .. " output", y:cpu(), c.out, c.tol)
        if c.grads then
          local xs, which = {}, {}
          for i, spec in ipairs(c.inputs) do if spec.grad then xs[#xs + 1] = a[i]; which[#which + 1] = i end end
          local loss = (y * h.from_spec(c.weights):to("cuda")):sum()
          local gs = {ember.autograd.grad({loss}, xs, {allow_unused = true})}
          for j, i in ipairs(which) do
            h.compare(c.call .. " gradient of input " .. i, gs[j]:cpu(), c.grads[i], c.tol)
          end
        end
      end)
    end
  end
end)

-- ---- bad input ------------------------------------------------------------------------------

describe("F.grid_sample and F.affine_grid refuse bad input at the caller's line", function()
  local x4, g4 = ember.randn(2, 3, 4, 5), ember.zeros(2, 3, 3, 2)
  local x5, g5 = ember.randn(2, 3, 2, 4, 5), ember.zeros(2, 1, 3, 3, 3)

  local function refused(text, f, ...)
    local a = table.pack(...)
    local msg = err(function() f(table.unpack(a, 1, a.n)) end)   -- no tail call: this line is the caller
    has(msg, THIS_FILE)
    has(msg, text)
  end

  it("wrong ranks", function()
    refused("grid_sample: input must be 4-D [N, C, H, W] or 5-D [N, C, D, H, W], got [3, 4, 5]", F.grid_sample,
            ember.randn(3, 4, 5), ember.zeros(3, 2, 2))
    refused("grid_sample: input must be 4-D [N, C, H, W] or 5-D [N, C, D, H, W], got [1, 1, 1, 2, 2, 2]",
            F.grid_sample, ember.randn(1, 1, 1, 2, 2, 2), ember.zeros(1, 1, 1, 1, 1, 4))
    refused("grid_sample: input [2, 3, 4, 5] is 4-D, so grid must be 4-D [N, H_out, W_out, 2], got [2, 1, 3, 3, 3]",
            F.grid_sample, x4, g5)
    refused("grid_sample: input [2, 3, 2, 4, 5] is 5-D, so grid must be 5-D [N, D_out, H_out, W_out, 3], "
            .. "got [2, 3, 3, 2]",
            F.grid_sample, x5, g4)
  end)

  it("mismatched batch and the wrong last grid dim", function()
    refused("grid_sample: input [2, 3, 4, 5] and grid [3, 3, 3, 2]: batch sizes differ (2 vs 3)", F.grid_sample, x4,
            ember.zeros(3, 3, 3, 2))
    refused("grid_sample: grid [2, 3, 3, 3] must end in a dim of 2 (x, y) for a 4-D input [2, 3, 4, 5]",
            F.grid_sample, x4, ember.zeros(2, 3, 3, 3))
    refused("grid_sample: grid [2, 1, 3, 3, 2] must end in a dim of 3 (x, y, z) for a 5-D input [2, 3, 2, 4, 5]",
            F.grid_sample, x5, ember.zeros(2, 1, 3, 3, 2))
    refused("grid_sample: input [2, 3, 0, 5]: the spatial dims must not be empty (dim 3 is 0)", F.grid_sample,
            ember.zeros(2, 3, 0, 5), g4)
  end)

  it("unknown modes and padding modes, and a non-boolean align_corners", function()
    refused("grid_sample: mode must be \"bilinear\", \"nearest\" or \"bicubic\", got \"trilinear\"", F.grid_sample,
            x5, g5, "trilinear")
    refused("grid_sample: mode must be \"bilinear\", \"nearest\" or \"bicubic\", got 3", F.grid_sample, x4, g4, 3)
    refused("grid_sample: padding_mode must be \"zeros\", \"border\" or \"reflection\", got \"reflect\"",
            F.grid_sample, x4, g4, {padding_mode = "reflect"})
    refused("grid_sample: align_corners must be a boolean, got number", F.grid_sample, x4, g4, "bilinear", "zeros", 1)
    refused("grid_sample: unknown option 'interpolation' (expected mode, padding_mode, align_corners)",
            F.grid_sample, x4, g4, {interpolation = "nearest"})
    refused("grid_sample: too many positional arguments", F.grid_sample, x4, g4, "bilinear", "zeros", true, 1)
    refused("grid_sample: got multiple values for argument 'mode'", F.grid_sample, x4, g4, "nearest",
            {mode = "bilinear"})
  end)

  it("bicubic on a 5-D input is tricubic, as PyTorch 2.15 (not refused)", function()
    local y = F.grid_sample(x5, g5, {mode = "bicubic"})
    h.check_shape(y, {2, 3, 1, 3, 3})
  end)

  it("non-float dtypes, mixed dtypes, non-tensors", function()
    refused("grid_sample: input must be a floating-point tensor (float32, float64, float16, bfloat16), got int64",
            F.grid_sample, ember.zeros(1, 1, 2, 2, {dtype = "int64"}), ember.zeros(1, 1, 1, 2))
    refused("grid_sample: grid must be a floating-point tensor (float32, float64, float16, bfloat16), got int32",
            F.grid_sample, ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 1, 2, {dtype = "int32"}))
    refused("grid_sample: grid must be a floating-point tensor (float32, float64, float16, bfloat16), got bool",
            F.grid_sample, ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 1, 2, {dtype = "bool"}))
    refused("grid_sample: input (float64) and grid (float32) must have the same dtype", F.grid_sample,
            ember.zeros(1, 1, 2, 2, {dtype = "float64"}), ember.zeros(1, 1, 1, 2))
    refused("grid_sample: input must be a tensor, got table", F.grid_sample, {1, 2}, g4)
    refused("grid_sample: grid must be a tensor, got nil", F.grid_sample, x4)
  end)

  it("affine_grid: theta and size that do not match", function()
    local th2, th3 = ember.zeros(2, 2, 3), ember.zeros(2, 3, 4)
    refused("affine_grid: size {2, 3, 4, 5} needs theta of shape [N, 2, 3] (a batch of 2-D affine matrices), "
            .. "got [2, 3, 4]",
            F.affine_grid, th3, {2, 3, 4, 5})
    refused("affine_grid: size {2, 3, 4, 5, 6} needs theta of shape [N, 3, 4] (a batch of 3-D affine matrices), "
            .. "got [2, 2, 3]",
            F.affine_grid, th2, {2, 3, 4, 5, 6})
    refused("affine_grid: size {2, 3, 4, 5} needs theta of shape [N, 2, 3]", F.affine_grid, ember.zeros(2, 3),
            {2, 3, 4, 5})
    refused("affine_grid: theta [2, 2, 3] holds 2 matrices but size {3, 1, 4, 5} asks for a batch of 3",
            F.affine_grid, th2, {3, 1, 4, 5})
    refused("affine_grid: size must have 4 entries {N, C, H, W} (2-D) or 5 {N, C, D, H, W} (3-D), got {2, 1, 4}",
            F.affine_grid, th2, {2, 1, 4})
    refused("affine_grid: size {2, 1, 0, 5} must be positive", F.affine_grid, th2, {2, 1, 0, 5})
    refused("affine_grid: size must hold integers, got 4.5 at position 3", F.affine_grid, th2, {2, 1, 4.5, 5})
    refused("affine_grid: size must be a list {N, C, H, W} or {N, C, D, H, W}, got number", F.affine_grid, th2, 4)
    refused("affine_grid: theta must be a floating-point tensor, got int64", F.affine_grid,
            ember.zeros(2, 2, 3, {dtype = "int64"}), {2, 1, 4, 5})
    refused("affine_grid: theta must be a tensor, got string", F.affine_grid, "theta", {2, 1, 4, 5})
    refused("affine_grid: align_corners must be a boolean, got string", F.affine_grid, th2, {2, 1, 4, 5}, "yes")
    refused("affine_grid: unknown option 'mode'", F.affine_grid, th2, {2, 1, 4, 5}, {mode = "bilinear"})
  end)

  it("affine_grid: a size nobody can hold is an error naming affine_grid", function()
    local msg = err(function() F.affine_grid(ember.zeros(1, 2, 3), {1, 1, 1 << 40, 1 << 40}) end)
    has(msg, THIS_FILE)
    has(msg, "affine_grid: ")
  end)
end)
