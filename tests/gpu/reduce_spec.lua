-- reduce_spec.lua (GPU) — reductions (sum, mean, prod, amax/amin, max/min
-- with indices, argmax/argmin, all/any, var/std, norm, logsumexp), softmax
-- and log_softmax, cumsum and cumprod on the device under test against the
-- CPU backend: every dim, several dims, keepdim, non-contiguous and expanded
-- inputs, ties, NaN, infinities, empty and 0-d tensors, large inputs.
--
-- Float sums accumulate in double on both backends (backend.h), but in
-- another order; long float32 sums and scans are checked against a bound
-- proportional to the sum of the absolute values.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, close, same, agree, within = g.dev, g.close, g.same, g.agree, g.within
local nan, inf = 0 / 0, math.huge

local function R(...) return ember.randn(...) end

-- f(x) on the device and the CPU; a sum-like result within
-- rtol * absf(x) (absf: the same reduction of |x|)
local function agree_sum(f, absf, x, rtol, what)
  local got, want = f(dev(x)), f(x)
  within(got, want, absf(x:abs()):to("float64") * rtol + 1e-30, what)
end

describe("sum, mean, prod", function()
  local dims = {{}, {1}, {2}, {3}, {-1}, {{1, 3}}, {{2, 3}}, {{1, 2, 3}}}

  for _, d in ipairs(g.float_dtypes) do
    it("over every dim and dim set, keepdim, " .. d, function()
      ember.manual_seed(1)
      local x = R(5, 6, 7, {dtype = d})
      for _, dd in ipairs(dims) do
        for _, keep in ipairs({false, true}) do
          local args = #dd > 0 and {dd[1], keep} or {}
          local what = d .. " dims " .. tostring(dd[1]) .. " keepdim " .. tostring(keep)
          agree(function(t) return t:sum(table.unpack(args)), t:mean(table.unpack(args)) end, {x}, {what = what})
          -- products of up to 210 factors: float32 rounding adds up
          agree(function(t) return (t:abs() * 0.2 + 0.9):prod(table.unpack(args)) end, {x},
            {what = what, rtol = d == "float32" and 1e-4 or nil})
        end
      end
    end)
  end

  it("non-contiguous and expanded inputs", function()
    ember.manual_seed(2)
    local x = R(8, 9, 10)
    agree(function(t) return t:permute(3, 1, 2):sum(2), t:transpose(1, 3):mean({1, 2}) end, {x})
    agree(function(t) return t:slice(3, 1, 10, 3):sum(3), t:narrow(2, 2, 5):prod(1) end, {x})
    agree(function(t) return t:narrow(1, 1, 1):expand(6, 9, 10):sum(1), t[1]:unsqueeze(1):expand(4, 9, 10):mean() end, {x})
  end)

  it("integer and bool inputs sum to int64 exactly; the dtype option", function()
    ember.manual_seed(3)
    for _, d in ipairs({"int64", "int32", "uint8", "bool"}) do
      local x = ember.randint(0, d == "bool" and 2 or 200, {30, 40}):to(d)
      agree(function(t) return t:sum(), t:sum(1), t:sum(2, true), t:prod(2) end, {x}, {what = d})
    end
    local x = R(50, 60)
    agree(function(t) return t:sum({dtype = "float64"}), t:sum(1, {dtype = "float64"}), t:prod(2, {dtype = "float64"}) end, {x})
    local i = ember.randint(-5, 5, {20, 30}, {dtype = "int32"})
    agree(function(t) return t:sum({dtype = "float32"}), t:mean(2, {dtype = "float64"}) end, {i})
  end)

  it("large float32 sums: everything, rows and columns", function()
    ember.manual_seed(4)
    local x = R(1000003)
    agree_sum(function(t) return t:sum() end, function(a) return a:sum() end, x, 1e-6, "sum of all")
    agree_sum(function(t) return t:mean() end, function(a) return a:mean() end, x, 1e-6, "mean of all")
    local m = R(1000, 1001)
    agree_sum(function(t) return t:sum(2) end, function(a) return a:sum(2) end, m, 1e-6, "row sums")
    agree_sum(function(t) return t:sum(1) end, function(a) return a:sum(1) end, m, 1e-6, "column sums")
    agree_sum(function(t) return t:t():sum(1, true) end, function(a) return a:t():sum(1, true) end, m, 1e-6, "transposed")
    agree_sum(function(t) return t:sum({1, 2}) end, function(a) return a:sum({1, 2}) end, m, 1e-6, "both dims")
    -- many rows of one element and one row of many elements
    agree(function(t) return t:view(-1, 1):sum(2), t:view(1, -1):sum(2) end, {m})
  end)

  it("NaN, infinities, empty and 0-d tensors", function()
    local x = ember.tensor({{1, nan, 2}, {inf, 1, -inf}, {inf, inf, 3}, {0, -0.0, 5}})
    agree(function(t) return t:sum(2), t:mean(2), t:prod(2), t:sum() end, {x})
    agree(function(t) return t:sum(1), t:prod(1), t:mean(1), t:sum() end, {ember.empty(0, 4)})
    agree(function(t) return t:sum(2), t:prod(2), t:mean(2) end, {ember.empty(3, 0)})
    agree(function(t) return t:sum(), t:prod(), t:mean() end, {ember.tensor(2.5)})
  end)
end)

describe("max, min, argmax, argmin, amax, amin", function()
  it("values and first-of-ties indices along every dim, keepdim", function()
    ember.manual_seed(10)
    for _, d in ipairs({"float32", "float64", "int64", "int32", "uint8"}) do
      local x = ember.randint(0, 4, {6, 7, 8}):to(d)      -- many ties
      for _, dim in ipairs({1, 2, 3, -1}) do
        for _, keep in ipairs({false, true}) do
          agree(function(t)
            local mv, mi = t:max(dim, keep)
            local nv, ni = t:min(dim, keep)
            return mv, mi, nv, ni, t:argmax(dim, keep), t:argmin(dim, keep), t:amax(dim, keep), t:amin(dim, keep)
          end, {x}, {what = d .. " dim " .. dim})
        end
      end
      agree(function(t) return t:max(), t:min(), t:argmax(), t:argmin(), t:amax({1, 3}), t:amin({1, 2}, true) end, {x})
    end
  end)

  it("bool inputs and random floats on strided views", function()
    ember.manual_seed(11)
    agree(function(t) return t:amax(2), t:amin(1), t:argmax(2) end, {ember.rand(5, 9):gt(0.5)})
    agree(function(t)
      local v, i = t:t():max(2)
      return v, i, t:slice(2, 2, 20, 3):argmin(1), t:amax({1, 2})
    end, {R(30, 20)})
  end)

  it("NaN propagates and is where the index points", function()
    local x = ember.tensor({{1, nan, 3, nan}, {nan, 2, 2, 1}, {4, 5, 6, 6}, {-inf, -inf, inf, inf}})
    for _, d in ipairs(g.float_dtypes) do
      agree(function(t)
        local mv, mi = t:max(2)
        local nv, ni = t:min(2)
        return mv, mi, nv, ni, t:argmax(1), t:argmin(1), t:amax(1), t:amin(2), t:max(), t:argmax()
      end, {x:to(d)}, {what = d})
    end
  end)

  it("large inputs: the whole tensor, and rows of many elements", function()
    ember.manual_seed(12)
    local x = R(1000, 1003)
    agree(function(t)
      local v, i = t:max(2)
      local w, j = t:min(1)
      return t:max(), t:argmax(), t:argmin(), v, i, w, j
    end, {x})
  end)

  it("an empty dim errors the same way, other dims of an empty tensor work", function()
    local e = ember.empty(0, 3)
    local function message(f) return (g.err(f):gsub("^[^:]+:%d+: ", "")) end   -- without the position
    local m1 = message(function() return dev(e):max(1) end)
    local m2 = message(function() return e:max(1) end)
    assert.are.equal(m2, m1)
    agree(function(t) return t:amax(2), t:argmax(2) end, {e})
  end)
end)

describe("all, any", function()
  it("every dtype, dims, NaN counts as true", function()
    ember.manual_seed(20)
    for _, d in ipairs({"float32", "float64", "int64", "int32", "uint8", "bool"}) do
      local x = ember.rand(5, 6):gt(0.2):to(d)
      agree(function(t) return t:all(), t:any(), t:all(2), t:any(1, true), t:all({1, 2}) end, {x}, {what = d})
    end
    agree(function(t) return t:all(), t:any(2) end, {ember.tensor({{nan, 0}, {1, 2}})})
    agree(function(t) return t:all(), t:any(), t:all(1), t:any(1) end, {ember.empty(0, 3)})
    agree(function(t) return t:all(), t:any() end, {ember.zeros(100000)})
  end)
end)

describe("var, std, norm, logsumexp", function()
  for _, d in ipairs(g.float_dtypes) do
    it("var and std with corrections, dims and keepdim, " .. d, function()
      ember.manual_seed(30)
      local x = R(6, 7, 8, {dtype = d}) * 3 + 1
      for _, c in ipairs({0, 1, 2}) do
        agree(function(t)
          return t:var({correction = c}), t:std({correction = c}), t:var(2, {correction = c}),
                 t:std({1, 3}, true, {correction = c}), t:var(-1, true, {correction = c})
        end, {x}, {what = d .. " correction " .. c, rtol = d == "float32" and 2e-5 or nil})
      end
      agree(function(t) return t:var(false), t:std(true), t:transpose(1, 3):var(1) end, {x},
        {rtol = d == "float32" and 2e-5 or nil})
    end)

    it("norm of orders 1, 2, 3, 0.5, inf, -inf and fro, " .. d, function()
      ember.manual_seed(31)
      local x = R(5, 9, 4, {dtype = d})
      for _, p in ipairs({1, 2, 3, 0.5, inf, -inf, "fro"}) do
        agree(function(t)
          return t:norm(p), t:norm(p, 2), t:norm(p, {1, 3}, true), t:permute(3, 1, 2):norm(p, 3)
        end, {x}, {what = d .. " p " .. tostring(p), rtol = d == "float32" and 2e-5 or 1e-12})
      end
    end)

    it("logsumexp, stable for large values, with infinities, " .. d, function()
      ember.manual_seed(32)
      local x = R(4, 5, 6, {dtype = d}) * 10
      agree(function(t) return t:logsumexp(1), t:logsumexp(3, true), t:logsumexp({1, 2}), (t + 1000):logsumexp(2) end, {x})
      local s = ember.tensor({{-inf, -inf}, {inf, 1}, {-inf, 2}, {nan, 1}, {inf, inf}}):to(d)
      agree(function(t) return t:logsumexp(2) end, {s})
    end)
  end

  it("large float32 var, std and norm", function()
    ember.manual_seed(33)
    local x = R(300001) * 2 + 5
    agree(function(t) return t:var(), t:std(), t:norm(), t:norm(1), t:logsumexp(1) end, {x}, {rtol = 2e-5})
    local m = R(500, 700)
    agree(function(t) return t:var(1), t:std(2), t:norm(2, 1), t:logsumexp(1) end, {m}, {rtol = 2e-5, atol = 1e-5})
  end)
end)

describe("softmax, log_softmax", function()
  for _, d in ipairs(g.float_dtypes) do
    it("along every dim of a 3-D tensor, contiguous and not, " .. d, function()
      ember.manual_seed(40)
      local x = R(5, 6, 7, {dtype = d}) * 4
      for _, dim in ipairs({1, 2, 3, -1}) do
        agree(function(t) return t:softmax(dim), t:log_softmax(dim) end, {x}, {what = "dim " .. dim})
        agree(function(t) return t:permute(2, 3, 1):softmax(dim), t:transpose(1, 3):log_softmax(dim) end, {x},
          {what = "permuted, dim " .. dim})
      end
    end)

    it("rows of one, of many and of very many elements; masked entries, " .. d, function()
      ember.manual_seed(41)
      agree(function(t) return t:softmax(2), t:log_softmax(2) end, {R(7, 1, {dtype = d})})
      agree(function(t) return t:softmax(2), t:log_softmax(2) end, {R(3, 5000, {dtype = d}) * 10})
      agree(function(t) return t:softmax(1), t:log_softmax(1) end, {R(3000, 3, {dtype = d})})
      agree(function(t) return t:softmax(1), t:log_softmax(1) end, {R(70000, {dtype = d})}, {atol = 1e-9})
      local m = ember.tensor({{1, -inf, 2}, {-inf, -inf, -inf}, {inf, 0, 1}, {1000, 1000, -1000}, {nan, 1, 2}}):to(d)
      agree(function(t) return t:softmax(2), t:log_softmax(2) end, {m})
    end)
  end

  it("float16 input with a float32 dtype option, empty and 0-d tensors", function()
    ember.manual_seed(42)
    agree(function(t) return t:softmax(2, {dtype = "float32"}), t:log_softmax(1, {dtype = "float64"}) end,
      {R(4, 9):to("float16")})
    agree(function(t) return t:softmax(1), t:log_softmax(2) end, {ember.empty(0, 4)})
    agree(function(t) return t:softmax(1), t:log_softmax(-1) end, {ember.tensor(3.0)})
  end)
end)

describe("cumsum, cumprod", function()
  for _, d in ipairs(g.float_dtypes) do
    it("along every dim, contiguous and not, " .. d, function()
      ember.manual_seed(50)
      local x = R(5, 6, 7, {dtype = d})
      for _, dim in ipairs({1, 2, 3, -1}) do
        agree(function(t)
          return t:cumsum(dim), (t * 0.3 + 1):cumprod(dim), t:permute(3, 1, 2):cumsum(dim), t:slice(2, 1, 6, 2):cumprod(dim)
        end, {x}, {what = d .. " dim " .. dim, rtol = d == "float32" and 2e-5 or 1e-12, atol = d == "float32" and 1e-5 or 1e-12})
      end
    end)
  end

  it("long float32 scans", function()
    ember.manual_seed(51)
    local x = R(4, 20000)
    agree_sum(function(t) return t:cumsum(2) end, function(a) return a:cumsum(2) end, x, 1e-5, "rows")
    agree_sum(function(t) return t:t():cumsum(1) end, function(a) return a:t():cumsum(1) end, x, 1e-5, "columns")
    local y = R(300001)
    agree_sum(function(t) return t:cumsum(1) end, function(a) return a:cumsum(1) end, y, 1e-5, "300001")
    -- a product of up to 5000 factors: a float32 accumulator may drift by ~n ulp
    local p = ember.rand(3, 5000) * 0.02 + 0.995
    agree(function(t) return t:cumprod(2) end, {p}, {rtol = 1e-3})
  end)

  it("integer and bool scans are exact and give int64; the dtype option", function()
    ember.manual_seed(52)
    for _, d in ipairs({"int64", "int32", "uint8", "bool"}) do
      local x = ember.randint(0, d == "bool" and 2 or 5, {6, 300}):to(d)
      agree(function(t) return t:cumsum(2), t:cumsum(1), t:cumprod(1) end, {x}, {what = d})
    end
    agree(function(t) return t:cumsum(1, {dtype = "float64"}), t:cumprod(2, {dtype = "float64"}) end, {R(5, 6)})
  end)

  it("NaN and infinities, empty and 0-d tensors", function()
    agree(function(t) return t:cumsum(2), t:cumprod(2) end, {ember.tensor({{1, nan, 2}, {inf, -inf, 1}, {0, inf, 2}})})
    agree(function(t) return t:cumsum(1), t:cumprod(2) end, {ember.empty(0, 3)})
    agree(function(t) return t:cumsum(1), t:cumprod(1) end, {ember.tensor(2.5)})
  end)
end)
