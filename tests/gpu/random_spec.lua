-- random_spec.lua (GPU) — one seed gives the same numbers on the device
-- under test as on the CPU (engine/cpu/random.c fixes the mapping from
-- Philox counters to values): rand, randn, randint (one- and two-lane
-- ranges), randperm, uniform_/normal_ on strided views, the *_like forms,
-- dropout, and the generator state after each draw.
--
-- Uniform and integer draws must match exactly. Normal draws go through
-- log, cos and sin, which random.c allows to differ in their last bits
-- between backends: float64 within 1e-14, float32 within one unit in the
-- last place (the double value may round to the other neighbour).
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local DEV = g.DEV
local same, close = g.same, g.close
local F = require("ember.nn").functional

local NORMAL_TOL = {
  float32 = {rtol = 2 ^ -23 * 1.01, atol = 1e-38},
  float64 = {rtol = 1e-14, atol = 1e-14},
  float16 = {rtol = 2 ^ -10 * 1.01, atol = 1e-7},
  bfloat16 = {rtol = 2 ^ -7 * 1.01, atol = 1e-30},
}

-- draw() run twice from the same seed: once on the CPU, once on the device;
-- the generator must also end in the same state
local function both(seed, draw)
  ember.manual_seed(seed)
  local want = table.pack(draw("cpu"))
  local state_cpu = ember.get_rng_state()
  ember.manual_seed(seed)
  local got = table.pack(draw(DEV))
  local state_dev = ember.get_rng_state()
  assert.are.equal(state_cpu.seed, state_dev.seed)
  assert.are.equal(state_cpu.offset, state_dev.offset, "generator offset after the draw")
  return got, want
end

-- large results: compared in the engine (the CPU backend is the reference)
local function same_large(got, want)
  assert.are.equal(g.devname, got.device)
  assert.are.equal(want.dtype, got.dtype)
  local diff = got:cpu():ne(want):sum():item()
  assert.are.equal(0, diff, ("%d of %d elements differ"):format(diff, want:numel()))
end

describe("uniform", function()
  for _, d in ipairs(g.dtypes) do
    if d:match("^float") or d == "bfloat16" then
      it("rand in " .. d .. " is exact for odd sizes", function()
        for _, n in ipairs({1, 3, 4, 5, 1001}) do
          local got, want = both(7, function(dv) return ember.rand(n, {dtype = d, device = dv}) end)
          same(got[1], want[1], {what = d .. " n=" .. n})
        end
        local got, want = both(8, function(dv) return ember.rand(3, 5, 7, {dtype = d, device = dv}) end)
        same(got[1], want[1])
      end)
    end
  end

  it("a million float32 values, and the counter carried across calls", function()
    local got, want = both(9, function(dv)
      local a = ember.rand(1000003, {device = dv})
      local b = ember.rand(17, {device = dv, dtype = "float64"})
      local c = ember.rand(6, {device = dv})
      return a, b, c
    end)
    same_large(got[1], want[1])
    same(got[2], want[2])
    same(got[3], want[3])
  end)

  it("uniform_ on strided views numbers elements by their position in the view", function()
    for _, d in ipairs({"float32", "float64"}) do
      local got, want = both(10, function(dv)
        local base = ember.zeros(6, 9, {dtype = d, device = dv})
        base:t():slice(1, 2, 9, 2):uniform_(-3, 5)
        base:narrow(1, 6, 1):uniform_()
        return base
      end)
      same(got[1], want[1], {what = d})
    end
  end)

  it("the interval stays half-open where rounding would reach the upper bound", function()
    local got, want = both(11, function(dv)
      return ember.empty(1000, {device = dv}):uniform_(1, 1 + 2 ^ -23),
             ember.empty(1000, {device = dv, dtype = "float16"}):uniform_(0, 2 ^ -24),
             ember.empty(10, {device = dv}):uniform_(2, 2)
    end)
    for i = 1, 3 do same(got[i], want[i], {what = "draw " .. i}) end
    assert.are.equal(0, got[1]:ge(1 + 2 ^ -23):sum():item())
  end)

  it("rand_like follows the tensor's device and dtype", function()
    local got, want = both(12, function(dv)
      return ember.rand_like(ember.zeros(4, 5, {dtype = "float64", device = dv}))
    end)
    same(got[1], want[1])
  end)
end)

describe("normal", function()
  for _, d in ipairs({"float32", "float64", "float16", "bfloat16"}) do
    it("randn in " .. d .. " agrees (odd sizes, mean and std)", function()
      for _, n in ipairs({1, 2, 3, 5, 999}) do
        local got, want = both(20, function(dv) return ember.randn(n, {dtype = d, device = dv}) end)
        close(got[1], want[1], {rtol = NORMAL_TOL[d].rtol, atol = NORMAL_TOL[d].atol, what = d .. " n=" .. n})
      end
      local got, want = both(21, function(dv)
        return ember.empty(4, 6, {dtype = d, device = dv}):normal_(3, 0.5),
               ember.randn_like(ember.zeros(3, 3, {dtype = d, device = dv}))
      end)
      local tol = NORMAL_TOL[d]
      close(got[1], want[1], {rtol = tol.rtol, atol = tol.atol * 3})
      close(got[2], want[2], tol)
    end)
  end

  it("normal_ on a transposed view", function()
    local got, want = both(22, function(dv)
      local base = ember.zeros(5, 8, {dtype = "float64", device = dv})
      base:t():normal_(-1, 2)
      return base
    end)
    close(got[1], want[1], NORMAL_TOL.float64)
  end)

  it("100003 float32 values", function()
    local got, want = both(23, function(dv) return ember.randn(100003, {device = dv}) end)
    close(got[1], want[1], NORMAL_TOL.float32)
  end)
end)

describe("integers", function()
  it("randint with small, negative and one-value ranges, every integer dtype and float", function()
    for _, d in ipairs({"int64", "int32", "uint8", "float32", "float64"}) do
      local got, want = both(30, function(dv)
        return ember.randint(10, {7, 3}, {dtype = d, device = dv}),
               ember.randint(d == "uint8" and 3 or -5, 5, {1001}, {dtype = d, device = dv}),
               ember.randint(4, 5, {6}, {dtype = d, device = dv})
      end)
      for i = 1, 3 do same(got[i], want[i], {what = d .. " draw " .. i}) end
    end
  end)

  it("ranges wider than 2^32 use two lanes per value", function()
    local got, want = both(31, function(dv)
      return ember.randint(0, 2 ^ 40, {1003}, {device = dv}),
             ember.randint(-2 ^ 62, 2 ^ 62, {9}, {device = dv}),
             ember.randint(0, 2 ^ 32 + 1, {5}, {device = dv}),
             ember.randint(0, 2 ^ 32, {5}, {device = dv})
    end)
    for i = 1, 4 do same(got[i], want[i], {what = "draw " .. i}) end
  end)

  it("randint_like and randint_ style draws into strided views", function()
    local got, want = both(32, function(dv)
      local t = ember.zeros(3, 4, {dtype = "int32", device = dv})
      return ember.randint_like(t, 100), ember.randint_like(t:t(), -7, 7)
    end)
    same(got[1], want[1])
    same(got[2], want[2])
  end)

  it("randperm is the same permutation", function()
    for _, n in ipairs({0, 1, 2, 10, 1000}) do
      local got, want = both(33, function(dv) return ember.randperm(n, {device = dv}) end)
      same(got[1], want[1], {what = "n=" .. n})
    end
    local got, want = both(34, function(dv) return ember.randperm(200, {device = dv, dtype = "int32"}) end)
    same(got[1], want[1])
  end)
end)

describe("dropout-style use", function()
  it("F.dropout keeps and scales the same elements", function()
    local x = ember.randn(64, 33)
    for _, p in ipairs({0.1, 0.5, 0.9}) do
      local got, want = both(40, function(dv)
        local xx = dv == "cpu" and x or g.dev(x)
        return F.dropout(xx, p, true)
      end)
      close(got[1], want[1], {what = "p=" .. p})
      same(got[1]:eq(0), want[1]:eq(0), {what = "mask, p=" .. p})
    end
  end)

  it("nn.Dropout in training mode, in float64, on a non-contiguous input", function()
    local nn = require("ember.nn")
    local x = ember.randn(20, 30, {dtype = "float64"})
    local got, want = both(41, function(dv)
      local xx = dv == "cpu" and x or g.dev(x)
      local m = nn.Dropout(0.3)
      m:train()
      return m(xx:t())
    end)
    same(got[1], want[1])
  end)

  it("a mask drawn as rand(...):lt(p) is identical", function()
    local got, want = both(42, function(dv) return ember.rand(128, 129, {device = dv}):lt(0.25) end)
    same(got[1], want[1])
  end)
end)

describe("generator state", function()
  it("set_rng_state replays a draw on either device", function()
    ember.manual_seed(50)
    ember.rand(13)
    local s = ember.get_rng_state()
    local a = ember.randn(37, {dtype = "float64", device = DEV})
    ember.set_rng_state(s)
    local b = ember.randn(37, {dtype = "float64"})
    close(a, b, NORMAL_TOL.float64)
    ember.set_rng_state(s)
    same(ember.randn(37, {dtype = "float64", device = DEV}), a)
  end)

  it("an empty draw does not move the generator", function()
    ember.manual_seed(51)
    local before = ember.get_rng_state().offset
    local t = ember.rand(0, 4, {device = DEV})
    assert.are.equal(0, t:numel())
    assert.are.equal(before, ember.get_rng_state().offset)
  end)
end)
