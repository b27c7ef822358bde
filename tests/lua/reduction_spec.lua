-- reduction_spec.lua — reductions by order and counting (engine/reduce_order.c):
-- median, nanmedian, mode, kthvalue, quantile, nanquantile, nansum, nanmean,
-- count_nonzero, aminmax, var_mean / std_mean, cummax / cummin, logcumsumexp,
-- unique, unique_consecutive, bincount, histc, searchsorted, bucketize, and
-- argsort's `stable`.
--
-- Expected values: PyTorch's (tests/lua/fixtures/reduction_cases.lua, written by
-- scripts/fixtures/make_reduction_fixtures.py), naive Lua loops, other ember ops,
-- and finite differences (gradcheck in float64).
local ember = require "ember"
local h = require "helpers"
local check, err, has = h.check, h.err, h.has

local THIS_FILE = "reduction_spec.lua:"
local NaN = 0 / 0

local function T(v, dt) return ember.tensor(v, {dtype = dt or "float64"}) end

-- ---- PyTorch fixtures -----------------------------------------------------------------

local function from_fixture(v)
  if type(v) ~= "table" then return v end
  if not v.shape then     -- an options table
    local o = {}
    for k, e in pairs(v) do o[k] = from_fixture(e) end
    return o
  end
  if #v.shape == 0 then return ember.tensor(v.data[1], {dtype = v.dtype}) end
  local t = ember.tensor(v.data, {dtype = v.dtype})
  return t:reshape(v.shape)
end

local function flat_values(t)
  if t.ndim == 0 then return {t:item()} end
  return t:reshape(-1):tolist()
end

local function describe_case(c)
  local parts = {}
  for i = 1, c.nargs do
    local a = c.args[i]
    parts[i] = type(a) == "table" and (a.shape and "tensor" or "{...}") or tostring(a)
  end
  return c.op .. "(" .. table.concat(parts, ", ") .. ") of " .. h.show(c.x.shape)
end

describe("reductions by order: PyTorch fixtures", function()
  local cases = h.fixture("reduction_cases.lua")
  it("has the cases", function() assert.is_true(#cases > 100) end)
  for n, c in ipairs(cases) do
    it(n .. ": " .. describe_case(c), function()
      local x = from_fixture(c.x)
      local args = {}
      for i = 1, c.nargs do args[i] = from_fixture(c.args[i]) end
      local got = table.pack(ember[c.op](x, table.unpack(args, 1, c.nargs)))
      assert.are.equal(#c.out, got.n, "number of results")
      for k, want in ipairs(c.out) do
        local g = got[k]
        h.check_shape(g, want.shape)
        assert.are.equal(want.dtype, g.dtype, "dtype of result " .. k)
        if c.values_only and k == 2 then
          -- PyTorch leaves which of equal elements unspecified: the index must point at the value
          local v, dim = got[1], args[1] or -1
          local picked = x:gather(dim, got[2]:unsqueeze(dim)):squeeze(dim)
          assert(h.same(flat_values(picked), flat_values(v)), "indices do not point at the values")
        else
          local tol = want.dtype == "float32" and 1e-6 or want.dtype == "float64" and 1e-12 or nil
          local ok = h.same(flat_values(g), want.data, tol)
          assert(ok, "result " .. k .. ": expected " .. h.show(want.data) .. ", got " .. h.show(flat_values(g)))
        end
      end
    end)
  end
end)

-- ---- hand-checked values -----------------------------------------------------------------

describe("median / nanmedian / kthvalue / mode", function()
  it("median takes the lower middle and agrees with a sort", function()
    ember.manual_seed(1)
    local x = ember.randn(5, 8, {dtype = "float64"})
    local v, i = x:median(2)
    local s = x:sort(2)
    check(v, s:select(2, 4):tolist())                  -- (8 - 1) // 2 + 1 = 4
    check(x:gather(2, i:unsqueeze(2)):squeeze(2), v:tolist())
    local v3 = x:median(1, true)
    h.check_shape(v3, {1, 8})
    assert.are.equal(s:reshape(-1):sort(1):tolist()[20], x:median():item())
  end)
  it("median propagates NaN, nanmedian skips it", function()
    local x = T{{3, NaN, 1, 2}, {NaN, NaN, NaN, NaN}}
    local v, i = x:median(2)
    assert(h.same(v:tolist(), {NaN, NaN}))
    check(i, {2, 1})                                   -- the first NaN
    v = x:nanmedian(2)
    assert(h.same(v:tolist(), {2, NaN}))
    assert(h.is_nan(x:median():item()))
    assert.are.equal(2, x:nanmedian():item())
    assert(h.is_nan(ember.tensor({}, {dtype = "float64"}):median():item()))
  end)
  it("0-d input and integer dtypes", function()
    local v, i = T(4.5):median(1)
    assert.are.equal(0, v.ndim); assert.are.equal(4.5, v:item()); assert.are.equal(1, i:item())
    v, i = ember.tensor({{7, 7, 2}, {1, 9, 9}}, {dtype = "int32"}):mode(2)
    assert.are.equal("int32", v.dtype); check(v, {7, 9}); check(i, {2, 3})
    v, i = ember.tensor({4, 1, 3}):kthvalue(3)
    assert.are.equal(4, v:item()); assert.are.equal(1, i:item())
  end)
  it("mode: the smallest of the most frequent values, by a naive count", function()
    ember.manual_seed(3)
    local x = ember.randint(0, 4, {6, 9})
    local v = x:mode(2)
    local rows = x:tolist()
    for r = 1, 6 do
      local count, best, bestc = {}, nil, -1
      for _, e in ipairs(rows[r]) do count[e] = (count[e] or 0) + 1 end
      for e = 0, 3 do
        if (count[e] or 0) > bestc then best, bestc = e, count[e] end
      end
      assert.are.equal(best, v:tolist()[r])
    end
  end)
end)

describe("quantile", function()
  local function naive(list, q, mode)
    table.sort(list)
    local r = q * (#list - 1)
    local lo, hi = math.floor(r), math.ceil(r)
    if mode == "lower" then return list[lo + 1] end
    if mode == "higher" then return list[hi + 1] end
    if mode == "midpoint" then return (list[lo + 1] + list[hi + 1]) / 2 end
    return list[lo + 1] + (r - lo) * (list[hi + 1] - list[lo + 1])
  end
  it("agrees with a naive sort and interpolation", function()
    ember.manual_seed(5)
    local x = ember.randn(4, 13, {dtype = "float64"})
    for _, mode in ipairs{"linear", "lower", "higher", "midpoint"} do
      for _, q in ipairs{0, 0.1, 0.37, 0.5, 0.99, 1} do
        local got = x:quantile(q, 2, {interpolation = mode}):tolist()
        local rows = x:tolist()
        for r = 1, 4 do
          assert(math.abs(got[r] - naive(rows[r], q, mode)) < 1e-12, mode .. " " .. q)
        end
      end
    end
  end)
  it("shapes: q tensor first, keepdim, all dims", function()
    local x = ember.randn(3, 5, {dtype = "float64"})
    local q = T{0.2, 0.8}
    h.check_shape(x:quantile(q, 2), {2, 3})
    h.check_shape(x:quantile(q, 2, true), {2, 3, 1})
    h.check_shape(x:quantile(0.5), {})
    h.check_shape(x:quantile(0.5, nil, true), {1, 1})
    h.check_shape(x:quantile(T(0.5)), {})
    h.check_shape(x:nanquantile(q), {2})
  end)
end)

describe("nan-ignoring and two-result reductions", function()
  it("nansum / nanmean / count_nonzero", function()
    local x = T{{1, NaN, 3}, {NaN, NaN, NaN}, {0, 2, 0}}
    check(x:nansum(2), {4, 0, 2})
    assert.are.equal(6, x:nansum():item())
    local m = x:nanmean(2):tolist()
    assert.are.equal(2, m[1]); assert(h.is_nan(m[2])); assert.are.equal(2 / 3, m[3])
    check(x:count_nonzero(2), {3, 3, 1})   -- NaN is not zero
    check(x:count_nonzero({1, 2}), 7)
    assert.are.equal("int64", x:count_nonzero().dtype)
    check(ember.tensor({1, 2, 3}):nansum(), 6)
  end)
  it("aminmax", function()
    local x = T{{4, -1, 2}, {0, 8, 3}}
    local mn, mx = x:aminmax()
    assert.are.equal(-1, mn:item()); assert.are.equal(8, mx:item())
    mn, mx = x:aminmax{dim = 2, keepdim = true}
    check(mn, {{-1}, {0}}); check(mx, {{4}, {8}})
  end)
  it("var_mean / std_mean with correction or unbiased", function()
    ember.manual_seed(7)
    local x = ember.randn(4, 6, {dtype = "float64"})
    local v, m = ember.var_mean(x, 2)
    check(v, x:var(2):tolist(), 1e-14); check(m, x:mean(2):tolist(), 1e-14)
    v, m = ember.var_mean(x, 2, true, {correction = 0})
    check(v, x:var(2, true, {correction = 0}):tolist(), 1e-14)
    h.check_shape(m, {4, 1})
    local s = ember.std_mean(x, {unbiased = false})
    check(s, x:std{correction = 0}:item(), 1e-14)
    s = ember.std_mean(x, false)
    check(s, x:std(false):item(), 1e-14)
    -- the divisor is N - correction
    local n, mean = 24, x:mean():item()
    local ss = 0
    for _, e in ipairs(x:reshape(-1):tolist()) do ss = ss + (e - mean) ^ 2 end
    assert(math.abs(x:var{correction = 2}:item() - ss / 22) < 1e-12)
    assert(math.abs(x:var{unbiased = true}:item() - ss / (n - 1)) < 1e-12)
  end)
end)

describe("cummax / cummin / logcumsumexp", function()
  it("against a naive running loop, along every dim", function()
    ember.manual_seed(9)
    local x = ember.randint(0, 4, {3, 4, 5}):double()
    for dim = 1, 3 do
      local v, i = x:cummax(dim)
      local xp = x:transpose(dim, 3):contiguous()
      local vp, ip = v:transpose(dim, 3):tolist(), i:transpose(dim, 3):tolist()
      local rows = xp:tolist()
      for a = 1, #rows do
        for b = 1, #rows[a] do
          local best, at = -math.huge, 0
          for k, e in ipairs(rows[a][b]) do
            if e >= best then best, at = e, k end
            assert.are.equal(best, vp[a][b][k]); assert.are.equal(at, ip[a][b][k])
          end
        end
      end
    end
  end)
  it("logcumsumexp equals log(cumsum(exp)) where that is finite", function()
    ember.manual_seed(10)
    local x = ember.randn(3, 7, {dtype = "float64"})
    check(x:logcumsumexp(2), x:exp():cumsum(2):log():tolist(), 1e-12)
    check(x:logcumsumexp(1), x:exp():cumsum(1):log():tolist(), 1e-12)
    check(ember.logcumsumexp(T{1000, 1000}, 1), {1000, 1000 + math.log(2)}, 1e-15)
    local e = err(function() local y = ember.tensor({1, 2}):logcumsumexp(1); return y end)
    has(e, "logcumsumexp: expected a floating point dtype, got int64"); has(e, THIS_FILE)
  end)
  it("keep the dtype; 0-d input", function()
    local v, i = ember.tensor({3, 1, 4}, {dtype = "int32"}):cummin(1)
    assert.are.equal("int32", v.dtype); check(v, {3, 1, 1}); check(i, {1, 2, 2})
    v, i = T(2):cummax(1)
    assert.are.equal(0, v.ndim); assert.are.equal(1, i:item())
    check(T(2):logcumsumexp(1), 2)
  end)
end)

describe("unique / unique_consecutive", function()
  it("values, inverse and counts agree with the input", function()
    ember.manual_seed(11)
    local x = ember.randint(0, 6, {4, 5})
    local v, inv, cnt = x:unique{return_inverse = true, return_counts = true}
    check(v:index_select(1, inv:reshape(-1)):reshape(4, 5), x:tolist())
    assert.are.equal(20, cnt:sum():item())
    local sorted = v:tolist()
    for k = 2, #sorted do assert(sorted[k - 1] < sorted[k]) end
    assert.are.equal(1, select("#", x:unique()))
    assert.are.equal(2, select("#", x:unique(true, false, true)))
  end)
  it("along a dim", function()
    local x = ember.tensor({{1, 2}, {0, 9}, {1, 2}, {0, 9}, {0, 1}})
    local v, inv, cnt = x:unique(true, true, true, 1)
    check(v, {{0, 1}, {0, 9}, {1, 2}}); check(inv, {3, 2, 3, 2, 1}); check(cnt, {1, 2, 2})
    v, inv, cnt = x:unique_consecutive(true, true, 1)
    check(v, x:tolist()); check(cnt, {1, 1, 1, 1, 1})
  end)
  it("empty input", function()
    local v, inv, cnt = ember.tensor({}, {dtype = "int64"}):unique(true, true, true)
    h.check_shape(v, {0}); h.check_shape(inv, {0}); h.check_shape(cnt, {0})
  end)
end)

describe("bincount / histc / searchsorted / bucketize", function()
  it("bincount by a naive count", function()
    ember.manual_seed(12)
    local x = ember.randint(1, 9, {50})          -- values 1..8: 1-based positions
    local c = x:bincount(nil, 10):tolist()
    local want = {}
    for k = 1, 10 do want[k] = 0 end
    for _, e in ipairs(x:tolist()) do want[e] = want[e] + 1 end   -- result[k] counts the value k
    assert(h.same(c, want))
    assert.are.equal("int64", x:bincount().dtype)
    assert.are.equal("float64", x:bincount(ember.ones(50, {dtype = "int64"})).dtype)
  end)
  it("histc by a naive count", function()
    ember.manual_seed(13)
    local x = ember.rand(100, {dtype = "float64"}) * 4 - 1
    local got = x:histc(6, -0.5, 2.5):tolist()
    local want = {0, 0, 0, 0, 0, 0}
    for _, e in ipairs(x:tolist()) do
      if e >= -0.5 and e <= 2.5 then
        local b = math.min(math.floor((e + 0.5) * 6 / 3), 5)
        want[b + 1] = want[b + 1] + 1
      end
    end
    assert(h.same(got, want))
  end)
  it("searchsorted: 1-based insertion positions, N-D, number values", function()
    local seq = T{1, 2, 2, 4}
    check(ember.searchsorted(seq, T{0, 2, 3, 5}), {1, 2, 4, 5})
    check(ember.searchsorted(seq, T{0, 2, 3, 5}, {right = true}), {1, 4, 4, 5})
    check(ember.searchsorted(seq, T{0, 2, 3, 5}, {side = "right"}), {1, 4, 4, 5})
    check(ember.searchsorted(seq, 2), 2)
    assert.are.equal("int32", ember.searchsorted(seq, 2, {out_int32 = true}).dtype)
    check(ember.bucketize(T{{0, 2}, {3, 9}}, seq), {{1, 2}, {4, 5}})
  end)
end)

describe("argsort and sort: stable", function()
  it("equal keys keep their order", function()
    local x = ember.tensor({2, 1, 2, 1, 2, 0, 1})
    check(x:argsort{stable = true}, {6, 2, 4, 7, 1, 3, 5})
    check(x:argsort(1, true, true), {1, 3, 5, 2, 4, 7, 6})
    local _, i = x:sort{dim = 1, stable = true}
    check(i, {6, 2, 4, 7, 1, 3, 5})
    check(T{NaN, 1, 0}:argsort(), {3, 2, 1})     -- NaN sorts last
  end)
end)

-- ---- gradients --------------------------------------------------------------------------

describe("reductions by order: gradcheck (float64)", function()
  local gc = h.gradcheck_ok
  it("median / nanmedian / kthvalue / mode", function()
    ember.manual_seed(20)
    local x = h.spread(3, 5)
    gc(function(a) return (a:median(2)) end, {x})
    gc(function(a) return (a:median(1, true)) end, {x})
    gc(function(a) return a:median() end, {x})
    gc(function(a) return a:nanmedian() end, {x})
    gc(function(a) return (a:kthvalue(2, 1)) end, {x})
    gc(function(a) return (a:mode(2)) end, {x})
    -- NaN is a constant here: the gradient goes to the picked element only
    local n = T{{1.5, NaN, 0.2, 3.1}, {0.7, 0.1, NaN, NaN}}
    n:requires_grad_(true)
    n:nanmedian(2):sum():backward()
    check(n.grad, {{1, 0, 0, 0}, {0, 1, 0, 0}})
  end)
  it("quantile, every interpolation", function()
    ember.manual_seed(21)
    local x = h.spread(3, 6)
    for _, mode in ipairs{"linear", "lower", "higher", "midpoint", "nearest"} do
      gc(function(a) return a:quantile(T{0.15, 0.5, 0.8}, 2, {interpolation = mode}) end, {x})
      gc(function(a) return a:nanquantile(0.3, nil, true, mode) end, {x})
    end
  end)
  it("cummax / cummin / logcumsumexp", function()
    ember.manual_seed(22)
    local x = h.spread(3, 5)
    gc(function(a) return (a:cummax(2)) end, {x})
    gc(function(a) return (a:cummin(1)) end, {x})
    gc(function(a) return a:logcumsumexp(2) end, {ember.randn(3, 5, {dtype = "float64"})})
    gc(function(a) return a:t():logcumsumexp(1) end, {ember.randn(3, 5, {dtype = "float64"})})
    local ok, report = ember.autograd.gradgradcheck(function(a) return a:logcumsumexp(2) end,
                                                    {ember.randn(2, 4, {dtype = "float64"})})
    assert(ok, report)
  end)
  it("nansum / nanmean / aminmax / var_mean / std_mean", function()
    ember.manual_seed(23)
    local x = h.spread(3, 4)
    gc(function(a) return a:nansum(2) end, {x})
    gc(function(a) return a:nanmean() end, {x})
    gc(function(a) local mn, mx = a:aminmax{dim = 1}; return mn * 2 + mx end, {x})
    gc(function(a) local v, m = ember.var_mean(a, 2); return v + m end, {x})
    gc(function(a) local s, m = ember.std_mean(a, {1, 2}, {correction = 0}); return s * m end, {x})
    local n = T{1, NaN, 2}
    n:requires_grad_(true)
    n:nanmean():backward()
    check(n.grad, {0.5, 0, 0.5})
  end)
end)

-- ---- bad input ---------------------------------------------------------------------------

describe("reductions by order: bad input", function()
  local x = ember.randn(3, 4, {dtype = "float64"})
  local function fails(text, f)
    local e = err(f)
    has(e, text)
    has(e, THIS_FILE)
  end
  it("k, q and dims out of range", function()
    fails("kthvalue: k (5) is out of range for dimension 2 of size 4 ([3,4]); expected 1 <= k <= 4",
          function() local v = x:kthvalue(5); return v end)
    fails("kthvalue: k (0) is out of range", function() local v = x:kthvalue(0, 2); return v end)
    fails("quantile: q must be in the range [0, 1], got 1.5", function() local v = x:quantile(1.5); return v end)
    fails("nanquantile: q must be in the range [0, 1], got -0.1",
          function() local v = x:nanquantile(T{0.5, -0.1}); return v end)
    fails("quantile: q (float32) must have the input's dtype (float64)",
          function() local v = x:quantile(ember.tensor({0.5})); return v end)
    fails("quantile: expected a float32 or float64 input, got int64",
          function() local v = ember.tensor({1, 2}):quantile(0.5); return v end)
    fails("interpolation must be \"linear\", \"lower\", \"higher\", \"midpoint\" or \"nearest\", got cubic", function() local v = x:quantile(0.5, 1, false, "cubic"); return v end)
    fails("dimension 3 out of range", function() local v = x:median(3); return v end)
    fails("dimension -3 out of range", function() local v = x:mode(-3); return v end)
    fails("dimension 5 out of range", function() local v = x:cummax(5); return v end)
    fails("missing dim (cummin works along one dimension)", function() local v = x:cummin(); return v end)
    fails("dimension 3 out of range", function() local v = x:unique(true, false, false, 3); return v end)
    fails("dimension 4 out of range", function() local v = x:count_nonzero{4}; return v end)
    fails("median: cannot compute over the empty dimension 1 of [0,2]",
          function() local v = ember.zeros(0, 2):median(1); return v end)
  end)
  it("bincount, histc, searchsorted", function()
    fails("bincount: values are 1-based positions (result[k] counts the value k), so they must be >= 1, got -1",
          function() local v = ember.tensor({1, -1, 2}):bincount(); return v end)
    fails("so they must be >= 1, got 0", function() local v = ember.tensor({1, 0, 2}):bincount(); return v end)
    fails("bincount: expected a 1-D tensor of positive integers (1-based values), got a float32 tensor [2]",
          function() local v = ember.tensor({1.5, 2}):bincount(); return v end)
    fails("bincount: expected a 1-D tensor", function() local v = ember.tensor({{1}}):bincount(); return v end)
    fails("bincount: weights [2] must be 1-D with the input's length ([3])",
          function() local v = ember.tensor({1, 0, 2}):bincount(ember.ones(2)); return v end)
    fails("bincount: minlength must be non-negative", function() local v = ember.tensor({1}):bincount(nil, -2); return v end)
    fails("histc: bins must be positive, got 0", function() local v = x:histc(0); return v end)
    fails("histc: max (0) must be larger than or equal to min (1)", function() local v = x:histc(4, 1, 0); return v end)
    fails("histc: expected a floating point dtype, got int64",
          function() local v = ember.tensor({1, 2}):histc(); return v end)
    fails("searchsorted: the sorted sequence [2,3] and the values [3,3] must have the same leading dims",
          function() local v = ember.searchsorted(ember.zeros(2, 3), ember.zeros(3, 3)); return v end)
    fails("side must be \"left\" or \"right\", got up",
          function() local v = ember.searchsorted(ember.zeros(3), 1, {side = "up"}); return v end)
    fails("side \"left\" contradicts right = true",
          function() local v = ember.searchsorted(ember.zeros(3), 1, {side = "left", right = true}); return v end)
    fails("searchsorted: sorter (float32 [3]) must be int64",
          function() local v = ember.searchsorted(ember.zeros(3), 1, {sorter = ember.zeros(3)}); return v end)
    fails("bucketize: boundaries must be 1-D, got [2,2]",
          function() local v = ember.bucketize(ember.zeros(3), ember.zeros(2, 2)); return v end)
  end)
  it("unknown options and wrong types", function()
    fails("median", function() local v = x:median{dims = 1}; return v end)
    fails("nanmean: expected a floating point dtype, got int64",
          function() local v = ember.tensor({1, 2}):nanmean(); return v end)
    fails("give either 'correction' or 'unbiased', not both",
          function() local v = ember.var_mean(x, {correction = 1, unbiased = true}); return v end)
  end)
end)

describe("an options table after nil positional arguments", function()
  it("is read, not lost (t:sum(nil, nil, nil, {dtype =})), and a bad slot below it is a clear error", function()
    local t = ember.tensor({{1, 2}, {3, 4}})
    local s = t:sum(nil, nil, nil, {dtype = "float64"})
    assert.are.equal("float64", s.dtype)
    assert.are.equal(10, s:item())
    local ok, err = pcall(t.sum, t, nil, {}, nil, {})
    assert.is_false(ok)
    assert.matches("sum: argument %d: expected a boolean, got table", err)
  end)
end)
