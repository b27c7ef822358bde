-- index_spec.lua (GPU) — index_select, gather, scatter, scatter_add,
-- index_add, masked_fill/masked_select, nonzero, indexing with t[...], cat,
-- stack, split/chunk, sort (stable, descending, NaN), argsort and topk on the
-- device under test against the CPU backend; out-of-range indices raise a
-- Lua error (on a GPU possibly at the next synchronisation) and leave the
-- session working.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local DEV = g.DEV
local dev, close, same, agree = g.dev, g.close, g.same, g.agree
local cuda_it = g.cuda_it(it, pending)
local nan, inf = 0 / 0, math.huge

local function R(...) return ember.randn(...) end
local function idx(lo, hi, sizes) return ember.randint(lo, hi + 1, sizes) end   -- 1-based, inclusive

-- a [rows, n] int64 tensor whose rows are permutations of 1..n (no duplicates)
local function perms(rows, n)
  local t = {}
  for i = 1, rows do t[i] = ember.randperm(n) end
  return ember.stack(t)
end

describe("index_select, gather, t[index]", function()
  it("index_select along every dim, every dtype, repeated and unordered indices", function()
    ember.manual_seed(1)
    local x = R(5, 6, 7) * 10
    for _, d in ipairs(g.dtypes) do
      local xd = x:to(d)
      for dim = 1, 3 do
        local i = idx(1, x.shape[dim], {9})
        agree(function(t, ii) return t:index_select(dim, ii), ember.index_select(t, -4 + dim, ii) end, {xd, i},
          {what = d .. " dim " .. dim})
      end
    end
    -- a table of indices is made on the input's device (as PyTorch makes t[[3, 1, 3]]'s)
    agree(function(t) return t:index_select(2, {3, 1, 3}), t:index_add(2, {3, 1, 3}, t:index_select(2, {1, 2, 3})) end, {x})
    agree(function(t) return t:clone():index_add_(1, {-1, 2}, t:narrow(1, 1, 2)) end, {x})
    -- negative indices count from the end, as on the CPU
    agree(function(t, ii) return t:index_select(3, ii), t:gather(2, ii:view(1, 4, 1):expand(5, 4, 7)) end,
      {x, ember.tensor({-1, -6, 2, -3})})
    agree(function(t, ii) return t:scatter_add(1, ii, t), t:index_add(3, ii[1][1], t) end,
      {x, ember.randint(-5, 0, {5, 6, 7})})
    agree(function(t, ii) return t:index_select(1, ii) end, {x, ember.tensor({}, {dtype = "int64"})})
  end)

  it("index_select of non-contiguous inputs and large rows", function()
    ember.manual_seed(2)
    local x = R(40, 50)
    agree(function(t, ii) return t:t():index_select(1, ii), t:slice(2, 1, 50, 3):index_select(2, ii:narrow(1, 1, 5)) end,
      {x, idx(1, 17, {30})})
    local big = R(300, 4001)
    agree(function(t, ii) return t:index_select(1, ii), t:index_select(2, ii) end, {big, idx(1, 300, {257})})
    agree(function(t) return t[ember.tensor({3, 1, 2})], t[2], t[{2, {3, 9}}] end, {x})
  end)

  it("gather along every dim, with an index smaller than the input", function()
    ember.manual_seed(3)
    local x = R(4, 5, 6)
    for _, d in ipairs({"float32", "float64", "int64", "int32", "bool"}) do
      for dim = 1, 3 do
        local shape = {3, 4, 5}
        shape[dim] = 7
        local i = idx(1, x.shape[dim], shape)
        agree(function(t, ii) return t:gather(dim, ii), t:gather(dim, ii:transpose(1, 3):contiguous():transpose(1, 3)) end, {x:to(d), i}, {what = d .. " dim " .. dim})
      end
    end
    agree(function(t, ii) return t:transpose(1, 3):gather(2, ii:transpose(1, 3)) end, {x, idx(1, 5, {4, 5, 6})})
    agree(function(t, ii) return t:gather(1, ii) end, {R(3), idx(1, 3, {0})})
  end)
end)

describe("scatter, scatter_add, index_add", function()
  it("scatter without duplicate targets, a tensor or a number source, every dim", function()
    ember.manual_seed(10)
    local x = R(5, 6)
    for _, d in ipairs({"float32", "float64", "int64", "int32", "uint8", "bool"}) do
      local xd, src = (x * 10):abs():to(d), (R(5, 6) * 10):abs():to(d)
      agree(function(t, ii, s) return t:scatter(2, ii, s), t:scatter(2, ii:narrow(2, 1, 3), 7) end,
        {xd, perms(5, 6), src}, {what = d .. " dim 2"})
      agree(function(t, ii, s) return t:scatter(1, ii, s) end, {xd, perms(6, 5):t(), src}, {what = d .. " dim 1"})
      agree(function(t, ii, s) t:t():scatter_(1, ii, s:t()) return t end, {xd, perms(5, 6):t(), src}, {what = d .. " in place"})
    end
  end)

  it("scatter_add and index_add with duplicate targets", function()
    ember.manual_seed(11)
    for _, d in ipairs({"float32", "float64", "int64", "int32"}) do
      local x, src = (R(6, 8) * 10):to(d), (R(6, 20) * 10):to(d)
      local i = idx(1, 8, {6, 20})
      -- atomic additions land in any order: float32 sums may differ in the last bits
      local tol = d == "float32" and 5e-5 or nil
      agree(function(t, ii, s) return t:scatter_add(2, ii, s) end, {x, i, src}, {what = d .. " scatter_add", atol = tol})
      agree(function(t, ii, s) t:scatter_add_(1, ii, s) return t end, {x, idx(1, 6, {4, 8}), src:narrow(2, 1, 8)},
        {what = d .. " scatter_add_ dim 1", atol = tol})
      local j = idx(1, 8, {25})
      agree(function(t, jj, s) return t:index_add(2, jj, s) end, {x, j, (R(6, 25) * 10):to(d)}, {what = d .. " index_add", atol = tol})
      agree(function(t, jj, s) t:t():index_add_(2, jj, s) return t end, {x, idx(1, 6, {30}), (R(8, 30) * 10):to(d)},
        {what = d .. " index_add_ into a view", atol = tol})
    end
  end)

  it("many additions onto few targets (atomics)", function()
    ember.manual_seed(12)
    local src = R(200000)
    local i = idx(1, 3, {200000})
    local got = dev(ember.zeros(3)):index_add(1, dev(i), dev(src))
    local want = ember.zeros(3):index_add(1, i, src)
    local bound = ember.zeros(3):index_add(1, i, src:abs()) * 1e-5
    g.within(got, want, bound)
    agree(function(s, ii) return ember.zeros(2, 3, {dtype = "int64", device = s.device}):scatter_add(2, ii, s) end,
      {ember.randint(-5, 5, {2, 100000}), idx(1, 3, {2, 100000})})
  end)
end)

describe("masks and nonzero", function()
  it("masked_select with a broadcast mask, t[mask], t[mask] = v", function()
    ember.manual_seed(20)
    local x, m = R(6, 7), ember.rand(6, 7):gt(0.6)
    agree(function(t, mm) return t:masked_select(mm), t[mm], t:masked_select(mm[1]), t:t():masked_select(mm:t()) end, {x, m})
    agree(function(t, mm) t[mm] = 5 return t end, {x, m})
    agree(function(t, mm) return t:masked_select(mm) end, {x, ember.zeros(6, 7):to("bool")})
    agree(function(t, mm) return t:masked_select(mm) end, {ember.randint(0, 9, {50}), ember.rand(50):gt(0.5)})
  end)

  it("nonzero of every dtype and shape, none, all, and a large sparse tensor", function()
    ember.manual_seed(21)
    for _, d in ipairs({"float32", "float64", "int64", "int32", "uint8", "bool"}) do
      local x = ember.rand(4, 5, 6):gt(0.7):to(d)
      agree(function(t) return t:nonzero(), t:transpose(1, 3):nonzero() end, {x}, {what = d})
    end
    agree(function(t) return t:nonzero() end, {ember.tensor({0, nan, -0.0, 1})})
    agree(function(t) return t:nonzero() end, {ember.zeros(3, 4)})
    agree(function(t) return t:nonzero() end, {ember.ones(3, 4)})
    agree(function(t) return t:nonzero() end, {ember.tensor(2.0)})
    agree(function(t) return t:nonzero() end, {ember.rand(1000003):gt(0.999)})
  end)
end)

describe("cat, stack, split, chunk", function()
  it("cat along every dim, with empty tensors and promotion", function()
    ember.manual_seed(30)
    local a, b, c = R(3, 4, 5), R(3, 2, 5), R(3, 1, 5)
    agree(function(x, y, z) return ember.cat({x, y, z}, 2), ember.cat({x, x}, 1), ember.cat({x, x:narrow(3, 2, 3)}, 3) end, {a, b, c})
    agree(function(x, y) return ember.cat({x:transpose(1, 3), y:transpose(1, 3)}, 2) end, {a, b})
    agree(function(x, e) return ember.cat({x, e}, 1), ember.cat({e, x, e}) end, {R(2, 3), ember.empty(0)})
    agree(function(x, y) return ember.cat({x, y}) end, {R(4), ember.randint(0, 5, {3})})
    agree(function(x, y) return ember.cat({x, y}, 1) end, {ember.randint(0, 5, {2, 3}, {dtype = "int32"}), ember.rand(2, 3):gt(0.5)})
  end)

  it("stack at every position; split and chunk into views", function()
    ember.manual_seed(31)
    local a, b = R(3, 4), R(3, 4)
    for dim = 1, 3 do
      agree(function(x, y) return ember.stack({x, y, x}, dim) end, {a, b}, {what = "dim " .. dim})
    end
    agree(function(x) return x:split(2, 2) end, {R(3, 7)})
    agree(function(x) return x:split({1, 4, 2}, 2) end, {R(3, 7)})
    agree(function(x) return x:chunk(3, 1) end, {R(8, 2)})
    -- a piece is a view: writing it writes the device tensor
    local d = dev(ember.zeros(4, 6))
    local p1, p2 = d:split(3, 2)
    p2:fill_(2)
    same(d, ember.cat({ember.zeros(4, 3), ember.full({4, 3}, 2)}, 2))
    assert.are.equal(g.devname, p1.device)
  end)
end)

describe("sort, argsort, topk", function()
  it("stable sort with many ties, ascending and descending, every dim", function()
    ember.manual_seed(40)
    for _, d in ipairs({"float32", "float64", "int64", "int32", "uint8", "bool"}) do
      local x = ember.randint(0, d == "bool" and 2 or 5, {6, 7, 8}):to(d)
      for dim = 1, 3 do
        for _, desc in ipairs({false, true}) do
          agree(function(t)
            local v, i = t:sort({dim = dim, descending = desc, stable = true})
            return v, i, t:argsort({dim = dim, descending = desc, stable = true})
          end, {x}, {what = ("%s dim %d descending %s"):format(d, dim, tostring(desc))})
        end
      end
    end
  end)

  it("an unstable sort gives the same values, and its indices point at them", function()
    ember.manual_seed(41)
    local x = ember.randint(0, 10, {20, 300}):to("float32")
    local dx = dev(x)
    for _, desc in ipairs({false, true}) do
      local v, i = dx:sort(2, desc)
      local wv = x:sort(2, desc)
      same(v, wv)
      same(dx:gather(2, i), wv)
      same(i:sort(2), ember.arange(1, 301):expand(20, 300):contiguous(), {any_device = true})
    end
  end)

  it("NaN sorts as the largest value; infinities and -0", function()
    local x = ember.tensor({{3, nan, -inf, 1, inf, nan, -0.0, 0, 2}})
    for _, d in ipairs(g.float_dtypes) do
      agree(function(t)
        local v, i = t:sort({dim = 2, stable = true})
        local w, j = t:sort({dim = 2, descending = true, stable = true})
        return v, i, w, j
      end, {x:to(d)}, {what = d})
    end
  end)

  it("long rows, many rows, non-contiguous input, 0-d and empty", function()
    ember.manual_seed(42)
    agree(function(t) return t:sort({dim = 1, stable = true}) end, {R(100003)})
    agree(function(t) return t:sort({dim = 2, descending = true, stable = true}) end, {R(3, 5000)})
    agree(function(t) return t:sort({dim = 2, stable = true}) end, {R(5000, 3)})
    agree(function(t) return t:t():sort({dim = 2, stable = true}) end, {R(70, 90)})
    agree(function(t) return t:sort({dim = 2, stable = true}) end, {ember.randint(-1000000, 1000000, {4, 3001})})
    agree(function(t) return t:sort() end, {ember.tensor(4.0)})
    agree(function(t) return t:sort(1) end, {ember.empty(0)})
    agree(function(t) return t:sort(2) end, {ember.empty(3, 0)})
  end)

  it("topk: largest and smallest, every dim, sorted, distinct values", function()
    ember.manual_seed(43)
    local x = R(6, 7, 8)
    for dim = 1, 3 do
      for _, k in ipairs({1, 3, x.shape[dim]}) do
        agree(function(t)
          local v1, i1 = t:topk(k, dim)
          local v2, i2 = t:topk(k, {dim = dim, largest = false})
          return v1, i1, v2, i2
        end, {x}, {what = ("dim %d k %d"):format(dim, k)})
      end
    end
    agree(function(t) return t:topk(0, 2) end, {x})
    agree(function(t) return t:topk(10, 1) end, {R(100003)})
    agree(function(t) return t:t():topk(5, 2, true, true) end, {R(300, 40)})
    agree(function(t) return t:topk(700, 2) end, {R(3, 5000)})
    -- ties: the values agree
    local tie = ember.randint(0, 3, {5, 40}):to("float64")
    local v = dev(tie):topk(7, 2)
    same(v, (tie:topk(7, 2)))
  end)
end)

describe("out-of-range indices", function()
  -- On a GPU the kernel skips a bad index and records it; the error comes at
  -- the next synchronisation (at once with EMBER_CUDA_SYNC=1). The CPU
  -- backend raises at once and words it "out of bounds".
  local WORD = g.is_cuda and "out of range" or "out of bounds"

  local function raises_then_recovers(name, f)
    local ok1, e1 = pcall(f)
    local ok2, e2 = pcall(g.synchronize)
    assert.is_false(ok1 and ok2, name .. ": no error was raised")
    local msg = tostring(ok1 and e2 or e1)
    g.has(msg, name, WORD)
    -- the error is reported once, and the session goes on
    g.synchronize()
    local x = dev(ember.arange(1, 7):to("float32"):view(2, 3))
    same(x:index_select(2, dev(ember.tensor({3, 1}))), ember.tensor({{3, 1}, {6, 4}}):to("float32"))
    same(x:sum(), ember.tensor(21.0))
    g.synchronize()
  end

  it("index_select then synchronize raises, naming the op; the session still works", function()
    local x = dev(R(4, 5))
    raises_then_recovers("index_select", function() return x:index_select(2, dev(ember.tensor({1, 6}))) end)
    raises_then_recovers("index_select", function() return x:index_select(1, dev(ember.tensor({0}))) end)
    raises_then_recovers("index_select", function() return x:index_select(1, dev(ember.tensor({-5}))) end)
  end)

  it("gather, scatter, scatter_add and index_add do the same", function()
    local x = dev(R(4, 5))
    local bad = dev(ember.tensor({{1, 9}, {2, 3}}))
    raises_then_recovers("gather", function() return x:gather(2, bad) end)
    raises_then_recovers("scatter", function() return x:scatter(2, bad, 1.5) end)
    raises_then_recovers("scatter_add", function() return x:scatter_add(2, bad, dev(ember.ones(2, 2))) end)
    raises_then_recovers("index_add", function() return x:index_add(1, dev(ember.tensor({5})), dev(ember.ones(1, 5))) end)
  end)

  cuda_it("with EMBER_CUDA_SYNC=1 the op itself raises", function()
    -- a fresh process: the variable is read when the backend loads
    local cpath = package.cpath:gsub("'", "")
    local interp = os.getenv("EMBER") or "lua5.4"
    local script = 'local e = require "ember"; local x = e.randn(4, 5, {device = "' .. DEV .. '"}); '
      .. 'local ok, m = pcall(x.index_select, x, 2, e.tensor({1, 6}, {device = "' .. DEV .. '"})); '
      .. 'io.write(tostring(ok), "|", tostring(m), "|"); e.cuda.synchronize(); '
      .. 'io.write(e.ones(3, {device = "' .. DEV .. '"}):sum():item())'
    local p = assert(io.popen("EMBER_CUDA_SYNC=1 LUA_CPATH='" .. cpath .. "' " .. interp .. " -e '" .. script .. "' 2>&1"))
    local out = p:read("a")
    p:close()
    g.has(out, "false|", "index_select", "out of range", "|3")
  end)

  it("a cross_entropy target outside the classes", function()
    local F = require("ember.nn").functional
    local x = dev(R(3, 4))
    local name = "cross_entropy"
    local ok1, e1 = pcall(F.cross_entropy, x, dev(ember.tensor({1, 5, 2})))
    local ok2, e2 = pcall(g.synchronize)
    assert.is_false(ok1 and ok2)
    g.has(tostring(ok1 and e2 or e1), name, "out of range")
    g.synchronize()
    close(F.cross_entropy(x, dev(ember.tensor({1, 4, 2}))), F.cross_entropy(x:cpu(), ember.tensor({1, 4, 2})))
  end)
end)
