-- reduction_spec.lua (GPU) — reductions by order and counting (median,
-- nanmedian, kthvalue, mode, quantile, nanquantile, nansum, nanmean,
-- count_nonzero, aminmax, var_mean / std_mean, cummax / cummin,
-- logcumsumexp, unique, unique_consecutive, bincount, histc, searchsorted,
-- bucketize) on the device under test against the CPU backend: every dim,
-- ties, NaN, infinities, integer dtypes, long lines (the chunked scan paths of
-- the cummax / cummin / logcumsumexp kernels) and the gradients.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, agree, within = g.dev, g.agree, g.within
local nan, inf = 0 / 0, math.huge

-- values with many ties (small integers) as dtype d
local function ties(seed, d, ...)
  ember.manual_seed(seed)
  return ember.randint(0, 5, {...}):to(d)
end

describe("median, nanmedian, kthvalue, mode", function()
  for _, d in ipairs{"float32", "float64", "int64", "int32"} do
    it("every dim, keepdim, ties, " .. d, function()
      local x = ties(1, d, 4, 6, 7)
      for dim = -1, 3 do
        if dim ~= 0 then
          for _, keep in ipairs{false, true} do
            local what = d .. " dim " .. dim
            agree(function(t) return t:median(dim, keep) end, {x}, {what = what})
            agree(function(t) return t:kthvalue(3, dim, keep) end, {x}, {what = what})
            agree(function(t) return t:mode(dim, keep) end, {x}, {what = what})
          end
        end
      end
      agree(function(t) return t:median() end, {x})
    end)
  end
  it("NaN: median propagates, nanmedian skips", function()
    local x = ember.tensor({{1, nan, 3, 2}, {nan, nan, nan, nan}, {5, 4, nan, 0}}, {dtype = "float64"})
    agree(function(t) return t:median(2) end, {x})
    agree(function(t) return t:nanmedian(2) end, {x})
    agree(function(t) return t:median(), t:nanmedian() end, {x})
    agree(function(t) return t:mode(2) end, {x})
  end)
  it("long lines", function()
    ember.manual_seed(2)
    local x = ember.randn(3, 5000)
    agree(function(t) return t:median(2) end, {x})
    agree(function(t) return t:kthvalue(1234, 2) end, {x})
    agree(function(t) return t:mode(2) end, {ties(3, "float32", 3, 5000)})
  end)
end)

describe("quantile, nanquantile", function()
  for _, d in ipairs(g.float_dtypes) do
    it("every interpolation, q tensor, dims, NaN, " .. d, function()
      ember.manual_seed(4)
      local x = ember.randn(5, 9, {dtype = d})
      x[2][3] = nan
      local q = ember.tensor({0, 0.1, 0.5, 0.77, 1}, {dtype = d})
      for _, mode in ipairs{"linear", "lower", "higher", "midpoint", "nearest"} do
        agree(function(t) return t:quantile(dev(q), 2, {interpolation = mode}) end, {x}, {what = mode})
        agree(function(t) return t:nanquantile(0.3, 1, true, mode) end, {x}, {what = mode})
        agree(function(t) return t:nanquantile(0.6, nil, false, mode) end, {x}, {what = mode})
      end
    end)
  end
end)

describe("nansum, nanmean, count_nonzero, aminmax, var_mean, std_mean", function()
  it("match the CPU", function()
    ember.manual_seed(5)
    local x = ember.randn(6, 7, {dtype = "float64"})
    x[1][1] = nan
    x[3][4] = nan
    agree(function(t) return t:nansum(), t:nansum(2), t:nanmean(1, true) end, {x})
    agree(function(t) return t:count_nonzero(), t:count_nonzero({1, 2}), t:count_nonzero(2) end, {ties(6, "int32", 5, 5)})
    agree(function(t) return t:aminmax() end, {ember.randn(4, 5)})
    agree(function(t) return t:aminmax{dim = 1, keepdim = true} end, {ember.randn(4, 5)})
    local y = ember.randn(4, 5, {dtype = "float64"})
    agree(function(t) return ember.var_mean(t, 2) end, {y})
    agree(function(t) return ember.std_mean(t, {1, 2}, true, {correction = 0}) end, {y})
  end)
end)

describe("cummax, cummin, logcumsumexp", function()
  for _, d in ipairs{"float32", "float64", "int64", "int32", "uint8", "bool"} do
    it("every dim, ties, " .. d, function()
      local x = ties(7, d, 5, 6, 7)
      for dim = 1, 3 do
        agree(function(t) return t:cummax(dim) end, {x}, {what = d .. " dim " .. dim})
        agree(function(t) return t:cummin(dim) end, {x}, {what = d .. " dim " .. dim})
      end
    end)
  end
  it("NaN and infinities", function()
    local x = ember.tensor({{1, nan, 3, nan, -inf, 2}, {-inf, -inf, inf, 0, inf, 1}}, {dtype = "float64"})
    agree(function(t) return t:cummax(2) end, {x})
    agree(function(t) return t:cummin(2) end, {x})
    agree(function(t) return t:logcumsumexp(2) end, {x})
  end)
  it("long lines and columns (the chunked scan paths)", function()
    ember.manual_seed(8)
    for _, shape in ipairs{{2, 100000}, {100000, 2}, {3000, 70}, {70, 3000}} do
      local x = ember.randn(shape[1], shape[2], {dtype = "float64"})
      for dim = 1, 2 do
        local what = ("[%d, %d] dim %d"):format(shape[1], shape[2], dim)
        agree(function(t) return t:cummax(dim) end, {x}, {what = what})
        agree(function(t) return t:cummin(dim) end, {x}, {what = what})
        within(dev(x):logcumsumexp(dim), x:logcumsumexp(dim), 1e-12 * (x:abs():amax() + 20), what)
      end
      local f = x:float()
      within(dev(f):logcumsumexp(1), f:logcumsumexp(1), 1e-5 * (f:abs():amax():double() + 20), "float32")
    end
  end)
end)

describe("unique, unique_consecutive, bincount, histc, searchsorted, bucketize", function()
  it("unique and unique_consecutive, with and without dim", function()
    local x = ties(9, "int64", 8, 3)
    agree(function(t) return t:unique(true, true, true) end, {x})
    agree(function(t) return t:unique(true, true, true, 1) end, {x})
    agree(function(t) return t:unique(true, true, true, 2) end, {x})
    agree(function(t) return t:unique_consecutive(true, true) end, {x})
    agree(function(t) return t:unique_consecutive(true, true, 1) end, {x})
    agree(function(t) return t:unique(true, true, true) end, {ties(10, "float32", 1000)})
  end)
  it("bincount and histc", function()
    local x = ties(11, "int64", 300) + 1    -- bincount's values are 1-based positions
    agree(function(t) return t:bincount(), t:bincount(nil, 9) end, {x})
    agree(function(t, w) return t:bincount(w) end, {x, ember.rand(300, {dtype = "float64"})})
    ember.manual_seed(12)
    local y = ember.randn(1000)
    agree(function(t) return t:histc(17, -1, 1.5), t:histc(5) end, {y})
  end)
  it("searchsorted and bucketize", function()
    ember.manual_seed(13)
    local seq = ember.randn(50):sort()
    local v = ember.randn(7, 9)
    agree(function(s, t) return ember.searchsorted(s, t), ember.searchsorted(s, t, {right = true}) end, {seq, v})
    local seq2 = ember.randn(4, 30):sort(2)
    agree(function(s, t) return ember.searchsorted(s, t, {side = "right", out_int32 = true}) end,
      {seq2, ember.randn(4, 11)})
    agree(function(t, b) return ember.bucketize(t, b) end, {ties(14, "float32", 40), ember.tensor({0, 1, 1, 3})})
    local raw = ember.randn(20)
    agree(function(s, t, o) return ember.searchsorted(s, t, {sorter = o}) end, {raw, v, raw:argsort()})
  end)
end)

describe("gradients on the device", function()
  local function grads(f, x)
    local a = x:detach():clone():requires_grad_()   -- on x's own device
    f(a):sum():backward()
    return a.grad
  end
  it("match the CPU's", function()
    ember.manual_seed(15)
    local x = ember.randn(4, 6, {dtype = "float64"})
    local fs = {
      function(t) return (t:median(2)) end,
      function(t) return t:nanmedian() end,
      function(t) return (t:kthvalue(2, 1)) end,
      function(t) return (t:mode(2)) end,
      function(t) return t:quantile(0.35, 2) end,
      function(t) return (t:cummax(2)) * 1.5 end,
      function(t) return (t:cummin(1)) end,
      function(t) return t:logcumsumexp(2) * t end,
      function(t) return t:nansum(1) + t:nanmean(2):sum() end,
      function(t) local v, m = ember.var_mean(t, 2); return v * m end,
    }
    for k, f in ipairs(fs) do
      agree(function(t) return grads(f, t) end, {x}, {what = "function " .. k})
    end
  end)
end)
