-- narrow_int_spec.lua (GPU) — int8 and int16 through the device's reductions, scans,
-- sorts, scatters and fills, against the CPU bit for bit (tests/lua/narrow_int_spec.lua
-- checks the CPU against hand-worked values; tests/gpu/ops_table_spec.lua every
-- elementwise op, elementwise_spec every cast). Inputs span each dtype's whole range, so
-- sums wrap where the result keeps the dtype (scatter_add, cumsum's int64 does not).
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev = g.dev
local cuda_it = g.cuda_it(it, pending)

local RANGE = {int8 = {-128, 128}, int16 = {-32768, 32768}}

local function same(got, want, what)
  assert.are.equal(want.dtype, got.dtype, what .. ": dtype")
  assert.are.same(want:tolist(), got:cpu():tolist(), what)
end

describe("int8 and int16 on the device", function()
  for _, dtype in ipairs({"int8", "int16"}) do
    local lo, hi = RANGE[dtype][1], RANGE[dtype][2]
    local function draws(...)
      return ember.randint(lo, hi, {...}, {dtype = dtype})
    end

    cuda_it(dtype .. ": reductions and scans equal the CPU's", function()
      ember.manual_seed(11)
      local x = draws(37, 53)
      local d = dev(x)
      same(d:sum(), x:sum(), "sum")
      same(d:sum(2), x:sum(2), "sum(2)")
      same(d:prod(1), x:prod(1), "prod(1)")
      same(d:amax(2), x:amax(2), "amax(2)")
      same(d:amin(1), x:amin(1), "amin(1)")
      local v, i = d:max(2)
      local wv, wi = x:max(2)
      same(v, wv, "max values")
      same(i, wi, "max indices")
      same(d:argmin(), x:argmin(), "argmin")
      same(d:cumsum(2), x:cumsum(2), "cumsum")
      same(d:cummax(1), x:cummax(1), "cummax")
      same(d:ne(0):all(2), x:ne(0):all(2), "all")
      same(d:count_nonzero(1), x:count_nonzero(1), "count_nonzero")
    end)

    cuda_it(dtype .. ": sorts and selections equal the CPU's", function()
      ember.manual_seed(12)
      local x = draws(9, 300)
      local d = dev(x)
      local v, i = d:sort(2, {stable = true})
      local wv, wi = x:sort(2, {stable = true})
      same(v, wv, "sort values")
      same(i, wi, "sort indices")
      v = d:sort(1, {descending = true})
      same(v, x:sort(1, {descending = true}), "sort descending")
      same(d:topk(5, 2), x:topk(5, 2), "topk")
      same(ember.unique(d), ember.unique(x), "unique")
      same(d:masked_select(d:gt(0)), x:masked_select(x:gt(0)), "masked_select")
      same(d:clamp(-100, 100), x:clamp(-100, 100), "clamp")
    end)

    cuda_it(dtype .. ": scatters wrap as the CPU's", function()
      ember.manual_seed(13)
      local src = draws(4000)
      local index = ember.randint(1, 6, {4000})
      local want = ember.zeros(5, {dtype = dtype}):scatter_add(1, index, src)
      same(dev(ember.zeros(5, {dtype = dtype})):scatter_add(1, dev(index), dev(src)), want, "scatter_add")
      want = ember.zeros(5, 3, {dtype = dtype}):index_add(1, index, src:view(-1, 1):expand(4000, 3):contiguous())
      local got = dev(ember.zeros(5, 3, {dtype = dtype})):index_add(1, dev(index),
                                                                     dev(src:view(-1, 1):expand(4000, 3):contiguous()))
      same(got, want, "index_add")
      for _, reduce in ipairs({"amax", "amin", "prod"}) do
        want = ember.ones(5, {dtype = dtype}):scatter_reduce(1, index, src, reduce)
        got = dev(ember.ones(5, {dtype = dtype})):scatter_reduce(1, dev(index), dev(src), reduce)
        same(got, want, "scatter_reduce " .. reduce)
      end
      same(dev(src):gather(1, dev(index)), src:gather(1, index), "gather")
    end)

    cuda_it(dtype .. ": fills and draws keep the dtype's range", function()
      same(ember.full({3}, lo, {dtype = dtype, device = g.DEV}), ember.full({3}, lo, {dtype = dtype}), "full")
      same(dev(ember.zeros(4, {dtype = dtype})):fill_(hi - 1), ember.zeros(4, {dtype = dtype}):fill_(hi - 1), "fill_")
      ember.manual_seed(14)
      local r = ember.randint(lo, hi, {5000}, {dtype = dtype, device = g.DEV})
      assert.are.equal(dtype, r.dtype)
      assert.is_true(r:min():item() >= lo and r:max():item() < hi)
      assert.is_true(r:min():item() < lo / 2 and r:max():item() > hi / 2)
    end)
  end
end)
