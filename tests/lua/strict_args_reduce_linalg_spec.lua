-- strict_args_reduce_linalg_spec.lua — the reductions, scans, the matmul family, cross and
-- scaled_dot_product_attention (lua/bind_reduce.c, bind_linalg.c, bind_lapack.c,
-- bind_attention.c) refuse what they do not read: a positional argument past their own,
-- or an options-table key they do not know, is an error naming the op at the caller's
-- line, never dropped. Those whose PyTorch function takes out= (and that return one tensor)
-- write into out and return it. Expected values are worked by hand.
local ember = require "ember"

local THIS = "strict_args_reduce_linalg_spec.lua:"

-- the error of f(...) as a string (nil when it succeeds)
local function err(f, ...)
  local ok, e = pcall(f, ...)
  if ok then return nil end
  return tostring(e)
end

-- e is an error naming op and this file (the caller's line), holding each of the other strings
local function refused(e, op, ...)
  assert.is_truthy(e, op .. ": expected an error")
  assert.is_truthy(e:find(op .. ":", 1, true), e)
  assert.is_truthy(e:find(THIS, 1, true), e)
  for _, s in ipairs({...}) do assert.is_truthy(e:find(s, 1, true), e) end
end

local function close(a, b, tol)
  if type(a) == "table" then
    assert.are.equal(#b, #a)
    for i = 1, #a do close(a[i], b[i], tol) end
  else
    assert.is_true(math.abs(a - b) <= (tol or 1e-5), tostring(a) .. " vs " .. tostring(b))
  end
end

local x = ember.tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}})
local v3 = ember.tensor({1.0, 3.0, 5.0})
local flags = ember.tensor({{true, false, true}, {true, true, true}})
local A = ember.tensor({{1.0, 2.0}, {3.0, 4.0}})
local B = ember.tensor({{5.0, 6.0}, {7.0, 8.0}})
local ex, ey = ember.tensor({1.0, 0.0, 0.0}), ember.tensor({0.0, 1.0, 0.0})
local seq = ember.tensor({1.0, 3.0, 5.0, 7.0})
local q = ember.ones(1, 2, 4)

-- Each row: the op's name as its messages give it, and f(...) calling it with every
-- positional argument it takes filled in, then the arguments given to f. So f() is a
-- valid call, f(5) has one positional argument too many, f({bogus = 1}) an unknown key.
local rows = {}
-- op(t, dim, keepdim, ...)
for _, op in ipairs({"sum", "mean", "prod", "amax", "amin", "logsumexp", "nansum", "nanmean", "max", "min", "argmax",
                     "argmin", "var", "std", "var_mean", "std_mean", "median", "nanmedian", "mode", "aminmax"}) do
  rows[#rows + 1] = {op, function(...) return ember[op](x, 2, false, ...) end}
end
for _, op in ipairs({"all", "any"}) do
  rows[#rows + 1] = {op, function(...) return ember[op](flags, 2, false, ...) end}
end
-- op(t, dim, ...)
for _, op in ipairs({"softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "count_nonzero"}) do
  rows[#rows + 1] = {op, function(...) return ember[op](x, 2, ...) end}
end
-- op(a, b, ...)
for _, op in ipairs({"matmul", "mm", "outer", "dot"}) do
  local a, b = A, B
  if op == "outer" or op == "dot" then a, b = ex, ey end
  rows[#rows + 1] = {op, function(...) return ember[op](a, b, ...) end}
end
for _, row in ipairs({
  {"max", function(...) return ember.max(x, x, ...) end},
  {"min", function(...) return ember.min(x, x, ...) end},
  {"norm", function(...) return ember.norm(x, 2, 2, false, ...) end},
  {"kthvalue", function(...) return ember.kthvalue(x, 1, 2, false, ...) end},
  {"quantile", function(...) return ember.quantile(x, 0.5, 2, false, "linear", ...) end},
  {"nanquantile", function(...) return ember.nanquantile(x, 0.5, 2, false, "linear", ...) end},
  {"unique", function(...) return ember.unique(x, true, false, false, 1, ...) end},
  {"unique_consecutive", function(...) return ember.unique_consecutive(x, false, false, 1, ...) end},
  {"bincount", function(...) return ember.bincount(ember.tensor({1, 2}), nil, 3, ...) end},
  {"histc", function(...) return ember.histc(x, 4, 0, 8, ...) end},
  {"searchsorted", function(...) return ember.searchsorted(seq, x, false, false, "left", nil, ...) end},
  {"bucketize", function(...) return ember.bucketize(x, seq, false, false, ...) end},
  {"bmm", function(...) return ember.bmm(A:unsqueeze(1), B:unsqueeze(1), ...) end},
  {"addmm", function(...) return ember.addmm(A, A, B, ...) end},
  {"cross", function(...) return ember.cross(ex, ey, 1, ...) end},
  {"scaled_dot_product_attention", function(...)
    return ember.scaled_dot_product_attention(q, q, q, nil, 0, false, nil, ...)
  end},
  -- the same C functions as methods (self not counted in the argument numbers)
  {"sum", function(...) return x:sum(2, false, ...) end},
  {"softmax", function(...) return x:softmax(2, ...) end},
  {"var", function(...) return x:var(2, false, ...) end},
  {"quantile", function(...) return x:quantile(0.5, 2, false, "linear", ...) end},
  {"matmul", function(...) return A:matmul(B, ...) end},
  {"addmm", function(...) return A:addmm(A, B, ...) end},
  {"cross", function(...) return ex:cross(ey, 1, ...) end},
}) do
  rows[#rows + 1] = row
end


describe("reductions, matmul family, cross and attention: arguments they do not take", function()
  for _, row in ipairs(rows) do
    local op, f = row[1], row[2]
    it(op .. " refuses one positional argument too many and an unknown option", function()
      refused(err(f, 5), op)
      refused(err(f, ember.ones(1)), op)
      refused(err(f, {bogus = 1}), op, "unknown option 'bogus'")
      refused(err(f, nil, {bogus = 1}), op)
    end)
    it(op .. " still takes its arguments, trailing nils and an empty options table", function()
      assert.is_truthy(f())
      assert.is_truthy(f(nil))
      assert.is_truthy(f(nil, nil))
      assert.is_truthy(f({}))
    end)
  end

  it("name the misspelt keyword instead of dropping it (keepdims for keepdim)", function()
    refused(err(function() return x:sum(2, {keepdims = true}) end), "sum", "unknown option 'keepdims'")
    refused(err(function() return x:amax({dim = 2, keepdims = true}) end), "amax", "unknown option 'keepdims'")
    refused(err(function() return x:var(2, {corection = 0}) end), "var", "unknown option 'corection'")
    refused(err(function() return x:max({dim = 2, dtype = "float64"}) end), "max", "unknown option 'dtype'")
    refused(err(function() return x:norm(2, 2, {dtype = "float64"}) end), "norm", "unknown option 'dtype'")
  end)

  it("refuse out= where the result is several tensors", function()
    local o = ember.zeros(2)
    refused(err(function() return ember.max(x, 2, {out = o}) end), "max", "unknown option 'out'")
    refused(err(function() return ember.median(x, 2, {out = o}) end), "median", "unknown option 'out'")
    refused(err(function() return ember.var_mean(x, 2, {out = o}) end), "var_mean", "unknown option 'out'")
    refused(err(function() return ember.aminmax(x, {dim = 2, out = o}) end), "aminmax", "unknown option 'out'")
    refused(err(function() return ember.cummax(x, 2, {out = o}) end), "cummax", "unknown option 'out'")
    assert.are.same({0, 0}, o:tolist())
  end)

  it("take out= as a keyword only, never by position", function()
    local o = ember.zeros(4)
    refused(err(function() return ember.histc(x, 4, 0, 8, o) end), "histc", "the keyword arguments (out) go in a trailing options table")
    refused(err(function() return ember.bucketize(x, seq, false, false, o) end), "bucketize", "the keyword arguments (out) go in a trailing options table")
    refused(err(function() return ember.matmul(A, B, o) end), "matmul", "one argument too many (a tensor)")
    refused(err(function() return ember.cross(ex, ey, 1, o) end), "cross", "one argument too many (a tensor)")
    assert.are.same({0, 0, 0, 0}, o:tolist())
  end)

  it("refuse a dim given twice to cross, and keep addmm's message for a number in its options' place", function()
    refused(err(function() return ember.cross(ex, ey, 1, {dim = 1}) end), "cross", "got multiple values for argument 'dim'")
    refused(err(function() return ember.addmm(A, A, B, 5) end), "addmm",
            "argument 4: expected an options table {beta=, alpha=}, got number")
  end)

  it("still read the keywords they take", function()
    assert.are.same({{6}, {15}}, ember.sum(x, {dim = 2, keepdim = true}):tolist())
    assert.are.equal("float64", x:sum(2, true, {dtype = "float64"}).dtype)
    assert.are.same({4, 0}, ember.var(ember.tensor({{1.0, 3.0, 5.0}, {2.0, 2.0, 2.0}}), 2, {correction = 1}):tolist())
    close(v3:var({correction = 0}):item(), 8 / 3)
    close(v3:std({unbiased = true}):item(), 2)
    local s, m = ember.var_mean(v3, {correction = 0})
    close({s:item(), m:item()}, {8 / 3, 3})
    assert.are.equal("float64", x:softmax(2, {dtype = "float64"}).dtype)
    assert.are.same({{1, 3, 6}, {4, 9, 15}}, x:cumsum({dim = 2}):tolist())
    assert.are.same({2, 5}, x:quantile(0.5, 2, {interpolation = "lower"}):tolist())
    assert.are.same({1, 3, 0, 1}, ember.histc(ember.tensor({1.0, 2.0, 2.0, 3.0, 7.0}), {bins = 4, min = 0, max = 8}):tolist())
    assert.are.same({1, 3, 4}, ember.searchsorted(seq, ember.tensor({0.0, 3.0, 6.0}), {right = true}):tolist())
    assert.are.same({{19, 22}, {43, 50}}, ember.addmm(ember.zeros(2, 2), A, B, {beta = 2, alpha = 1}):tolist())
    assert.are.same({{21, 24}, {45, 52}}, ember.addmm(ember.ones(2, 2), A, B, {beta = 2}):tolist())
    assert.are.same({0, 0, 1}, ember.cross(ex, ey, {dim = 1}):tolist())
    assert.are.same({0, 0, 1}, ember.cross(ex, ey, nil, {dim = 1}):tolist())
    assert.are.same({0, 0, 1}, ex:cross(ey):tolist())
    -- every row of v is ones: any weighting of them gives ones
    assert.are.same({{{1, 1, 1, 1}, {1, 1, 1, 1}}},
                    ember.scaled_dot_product_attention(q, q, q, {is_causal = true, scale = 0.5}):tolist())
  end)
end)

-- out= rows: the name, f(out) calling the op with {out = out}, the expected values worked by
-- hand, an out of the right shape (and dtype), and one of a wrong shape.
local function zeros(...) return ember.zeros(...) end
local nan = 0 / 0
local out_rows = {
  {"sum", function(o) return ember.sum(x, 2, {out = o}) end, {6, 15}, zeros(2), zeros(3)},
  {"mean", function(o) return ember.mean(x, 2, {out = o}) end, {2, 5}, zeros(2), zeros(3)},
  {"prod", function(o) return ember.prod(x, 2, {out = o}) end, {6, 120}, zeros(2), zeros(3)},
  {"amax", function(o) return ember.amax(x, 1, {out = o}) end, {4, 5, 6}, zeros(3), zeros(2)},
  {"amin", function(o) return ember.amin(x, 1, {out = o}) end, {1, 2, 3}, zeros(3), zeros(2)},
  {"all", function(o) return ember.all(flags, 2, {out = o}) end, {false, true},
   zeros(2, {dtype = "bool"}), zeros(3, {dtype = "bool"})},
  {"any", function(o) return ember.any(flags:logical_not(), 2, {out = o}) end, {true, false},
   zeros(2, {dtype = "bool"}), zeros(3, {dtype = "bool"})},
  -- log(e^0 + e^0) = log 2; log(e^1 + e^1) = 1 + log 2
  {"logsumexp", function(o) return ember.logsumexp(ember.tensor({{0.0, 0.0}, {1.0, 1.0}}), 2, {out = o}) end,
   {math.log(2), 1 + math.log(2)}, zeros(2), zeros(3)},
  {"nansum", function(o) return ember.nansum(ember.tensor({{1.0, nan, 2.0}}), 2, {out = o}) end, {3}, zeros(1), zeros(2)},
  {"nanmean", function(o) return ember.nanmean(ember.tensor({{1.0, nan, 2.0}}), 2, {out = o}) end, {1.5}, zeros(1), zeros(2)},
  {"max", function(o) return ember.max(ember.tensor({1.0, 5.0, 3.0}), ember.tensor({4.0, 2.0, 6.0}), {out = o}) end,
   {4, 5, 6}, zeros(3), zeros(2)},
  {"min", function(o) return ember.min(ember.tensor({1.0, 5.0, 3.0}), ember.tensor({4.0, 2.0, 6.0}), {out = o}) end,
   {1, 2, 3}, zeros(3), zeros(2)},
  {"argmax", function(o) return ember.argmax(ember.tensor({{1.0, 9.0, 3.0}, {7.0, 5.0, 6.0}}), 2, {out = o}) end,
   {2, 1}, zeros(2, {dtype = "int64"}), zeros(3, {dtype = "int64"})},
  {"argmin", function(o) return ember.argmin(ember.tensor({{1.0, 9.0, 3.0}, {7.0, 5.0, 6.0}}), 2, {out = o}) end,
   {1, 2}, zeros(2, {dtype = "int64"}), zeros(3, {dtype = "int64"})},
  -- {1, 3, 5}: mean 3, squares 4 + 0 + 4 = 8, over N - 1 = 2: 4; {2, 2, 2}: 0
  {"var", function(o) return ember.var(ember.tensor({{1.0, 3.0, 5.0}, {2.0, 2.0, 2.0}}), 2, {out = o}) end,
   {4, 0}, zeros(2), zeros(3)},
  {"std", function(o) return ember.std(ember.tensor({{1.0, 3.0, 5.0}, {2.0, 2.0, 2.0}}), 2, {out = o}) end,
   {2, 0}, zeros(2), zeros(3)},
  {"norm", function(o) return ember.norm(ember.tensor({{3.0, 4.0}, {6.0, 8.0}}), 2, 2, {out = o}) end,
   {5, 10}, zeros(2), zeros(3)},
  -- e^0 / (e^0 + e^log 3) = 1/4
  {"softmax", function(o) return ember.softmax(ember.tensor({{0.0, 0.0}, {0.0, math.log(3)}}), 2, {out = o}) end,
   {{0.5, 0.5}, {0.25, 0.75}}, zeros(2, 2), zeros(2, 3)},
  {"log_softmax", function(o) return ember.log_softmax(ember.tensor({{0.0, 0.0}, {0.0, math.log(3)}}), 2, {out = o}) end,
   {{math.log(0.5), math.log(0.5)}, {math.log(0.25), math.log(0.75)}}, zeros(2, 2), zeros(2, 3)},
  {"cumsum", function(o) return ember.cumsum(x, 2, {out = o}) end, {{1, 3, 6}, {4, 9, 15}}, zeros(2, 3), zeros(3, 2)},
  {"cumprod", function(o) return ember.cumprod(x, 2, {out = o}) end, {{1, 2, 6}, {4, 20, 120}}, zeros(2, 3), zeros(3, 2)},
  {"logcumsumexp", function(o) return ember.logcumsumexp(ember.tensor({0.0, 0.0, 0.0}), 1, {out = o}) end,
   {0, math.log(2), math.log(3)}, zeros(3), zeros(2)},
  -- medians of {1, 2, 3} and {4, 5, 6}; of {1, 3} with the NaN left out
  {"quantile", function(o) return ember.quantile(x, 0.5, 2, {out = o}) end, {2, 5}, zeros(2), zeros(3)},
  {"nanquantile", function(o) return ember.nanquantile(ember.tensor({{1.0, nan, 3.0}}), 0.5, 2, {out = o}) end,
   {2}, zeros(1), zeros(2)},
  -- bins [0, 2), [2, 4), [4, 6), [6, 8]
  {"histc", function(o) return ember.histc(ember.tensor({1.0, 2.0, 2.0, 3.0, 7.0}), 4, 0, 8, {out = o}) end,
   {1, 3, 0, 1}, zeros(4), zeros(3)},
  -- 1-based: the first place each value could be inserted keeping seq sorted
  {"searchsorted", function(o) return ember.searchsorted(seq, ember.tensor({0.0, 3.0, 6.0}), {out = o}) end,
   {1, 2, 4}, zeros(3, {dtype = "int64"}), zeros(2, {dtype = "int64"})},
  {"bucketize", function(o) return ember.bucketize(ember.tensor({0.0, 3.0, 6.0}), seq, {right = true, out = o}) end,
   {1, 3, 4}, zeros(3, {dtype = "int64"}), zeros(2, {dtype = "int64"})},
  -- {{1, 2}, {3, 4}} @ {{5, 6}, {7, 8}}: 1*5 + 2*7 = 19, 1*6 + 2*8 = 22, 3*5 + 4*7 = 43, 3*6 + 4*8 = 50
  {"matmul", function(o) return ember.matmul(A, B, {out = o}) end, {{19, 22}, {43, 50}}, zeros(2, 2), zeros(2, 3)},
  {"mm", function(o) return ember.mm(A, B, {out = o}) end, {{19, 22}, {43, 50}}, zeros(2, 2), zeros(3, 2)},
  {"bmm", function(o) return ember.bmm(A:unsqueeze(1), B:unsqueeze(1), {out = o}) end,
   {{{19, 22}, {43, 50}}}, zeros(1, 2, 2), zeros(2, 2)},
  {"outer", function(o) return ember.outer(ember.tensor({1.0, 2.0}), ember.tensor({3.0, 4.0, 5.0}), {out = o}) end,
   {{3, 4, 5}, {6, 8, 10}}, zeros(2, 3), zeros(3, 2)},
  {"dot", function(o) return ember.dot(ember.tensor({1.0, 2.0, 3.0}), ember.tensor({4.0, 5.0, 6.0}), {out = o}) end,
   32, ember.tensor(0.0), zeros(1, 2)},
  -- 2 * ones + A @ B
  {"addmm", function(o) return ember.addmm(ember.ones(2, 2), A, B, {beta = 2, out = o}) end,
   {{21, 24}, {45, 52}}, zeros(2, 2), zeros(2, 1, 2)},
  {"cross", function(o) return ember.cross(ex, ey, {out = o}) end, {0, 0, 1}, zeros(3), zeros(2)},
}

describe("out=", function()
  for _, row in ipairs(out_rows) do
    local op, f, want, out, wrong = row[1], row[2], row[3], row[4], row[5]
    it(op .. " writes into out and returns it, and refuses an out of the wrong shape", function()
      local r = f(out)
      assert.is_true(rawequal(r, out))
      local got = out:tolist()
      if type(want) == "table" and type(want[1]) == "boolean" then
        assert.are.same(want, got)
      else
        close(got, want)
      end
      local before = wrong:tolist()
      refused(err(f, wrong), op, "output with shape")
      assert.are.same(before, wrong:tolist())
    end)
  end

  it("serves the method spellings too, and refuses an out that is not a tensor", function()
    local o = ember.zeros(2)
    assert.is_true(rawequal(x:sum(2, {out = o}), o))
    assert.are.same({6, 15}, o:tolist())
    local m = ember.zeros(2, 2)
    assert.is_true(rawequal(A:matmul(B, {out = m}), m))
    assert.are.same({{19, 22}, {43, 50}}, m:tolist())
    refused(err(function() return ember.mean(x, 2, {out = 5}) end), "mean", "out must be a tensor, got number")
  end)

  it("casts to out's dtype where that is safe, and may be an input itself", function()
    local o = ember.zeros(2, {dtype = "float64"})
    ember.sum(x, 2, {out = o})
    assert.are.equal("float64", o.dtype)
    assert.are.same({6, 15}, o:tolist())
    local c = ember.tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}})
    ember.cumsum(c, 2, {out = c})
    assert.are.same({{1, 3, 6}, {4, 9, 15}}, c:tolist())
    local i = ember.zeros(2, {dtype = "int64"})
    refused(err(function() return ember.mean(x, 2, {out = i}) end), "mean", "can't be cast")
  end)
end)
