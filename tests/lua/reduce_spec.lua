-- reduce_spec.lua — reductions (sum, mean, prod, max/min, amax/amin, argmax,
-- all/any, var/std, norm, logsumexp), softmax/log_softmax and cumsum/cumprod.
-- Expected values are worked out by hand or with an independent formula in
-- Lua (loops over the same numbers, math.exp/math.log); dims and returned
-- indices are 1-based.
local ember = require "ember"

local nan = 0 / 0
local inf = math.huge
local h = require "helpers"
local is_nan, same, show, check, check_shape, err, has = h.is_nan, h.same, h.show, h.check, h.check_shape, h.err, h.has

local function close(t, want) check(t, want, 1e-5) end

local F = function(v) return ember.tensor(v, {dtype = "float32"}) end
local D = function(v) return ember.tensor(v, {dtype = "float64"}) end

-- a [r, c] float64 matrix with irregular values, and the same numbers in Lua
local function matrix(r, c)
    local rows = {}
    for i = 1, r do
        rows[i] = {}
        for j = 1, c do rows[i][j] = ((i * 7 + j * 3) % 11) - 5 + j / 8 end
    end
    return D(rows), rows
end

describe("sum", function()
    local m = ember.tensor({{1, 2, 3}, {4, 5, 6}})

    it("reduces everything, one dim, or a list of dims", function()
        check(m:sum(), 21)
        check_shape(m:sum(), {})
        check(m:sum(1), {5, 7, 9})
        check(m:sum(2), {6, 15})
        check(m:sum(-1), {6, 15})
        check(m:sum({1, 2}), 21)
        check(m:sum({-1, 1}), 21)
        check(ember.sum(m, 2), {6, 15})
    end)

    it("keeps reduced dims with keepdim", function()
        check(m:sum(2, true), {{6}, {15}})
        check(m:sum(1, true), {{5, 7, 9}})
        check_shape(m:sum({1, 2}, true), {1, 1})
        check_shape(ember.zeros(2, 3, 4):sum({1, 3}, true), {1, 3, 1})
        check_shape(ember.zeros(2, 3, 4):sum({1, 3}), {3})
    end)

    it("takes an options table", function()
        check(m:sum({dim = 2, keepdim = true}), {{6}, {15}})
        check(m:sum(1, {keepdim = true}), {{5, 7, 9}})
        local r = m:sum(2, {dtype = "float64"})
        assert.equal("float64", r.dtype)
        check(r, {6, 15})
        -- the float input is cast to int first, element by element
        check(F({1.7, 2.9}):sum({dtype = "int64"}), 3)
    end)

    it("sums integers and bools into int64 and keeps float dtypes", function()
        assert.equal("int64", m:sum().dtype)
        assert.equal("int64", ember.tensor({1, 2}, {dtype = "int32"}):sum().dtype)
        assert.equal("int64", ember.tensor({1, 2}, {dtype = "uint8"}):sum().dtype)
        local b = ember.tensor({true, false, true, true})
        assert.equal("int64", b:sum().dtype)
        check(b:sum(), 3)
        check(ember.tensor({200, 100}, {dtype = "uint8"}):sum(), 300)
        assert.equal("float32", F({1, 2}):sum().dtype)
        assert.equal("float64", D({1, 2}):sum().dtype)
        local h = F({1.5, 2.5, 3}):half():sum()
        assert.equal("float16", h.dtype)
        check(h, 7)
    end)

    it("accumulates float32 in double: 2^24 ones sum exactly", function()
        check(ember.ones(4096, 4096):sum(), 16777216)
        check(ember.ones(16777218):sum(), 16777218)   -- float32 accumulation would stop at 2^24
    end)

    it("works on larger matrices along either dim (rows and columns)", function()
        for _, size in ipairs({{37, 53}, {300, 7}, {5, 400}}) do
            local r, c = size[1], size[2]
            local t, v = matrix(r, c)
            local rows, cols, all = {}, {}, 0
            for i = 1, r do
                rows[i] = 0
                for j = 1, c do
                    rows[i] = rows[i] + v[i][j]
                    cols[j] = (cols[j] or 0) + v[i][j]
                    all = all + v[i][j]
                end
            end
            check(t:sum(2), rows, 1e-12)
            check(t:sum(1), cols, 1e-12)
            check(t:sum(), all, 1e-12)
            check(t:t():sum(1), rows, 1e-12)
            check(t:t():sum(2), cols, 1e-12)
            check(t:float():sum(1), cols, 1e-5)
        end
    end)

    it("reduces the middle dim of a 3-D tensor", function()
        local t = ember.arange(1, 25):reshape(2, 3, 4)   -- (i,j,k) = (i-1)*12 + (j-1)*4 + k
        check(t:sum(2), {{15, 18, 21, 24}, {51, 54, 57, 60}})
        check(t:sum({1, 3}), {10 + 58, 26 + 74, 42 + 90})
        check(t:permute(3, 1, 2):sum(3), {{15, 51}, {18, 54}, {21, 57}, {24, 60}})
    end)

    it("handles non-contiguous inputs (transposed, stepped slices, expanded)", function()
        local t = ember.arange(1, 13):reshape(3, 4)
        check(t:t():sum(1), {10, 26, 42})
        check(t:t():sum(2), {15, 18, 21, 24})
        check(t:slice(2, 1, 4, 2):sum(2), {1 + 3, 5 + 7, 9 + 11})
        check(t:slice(1, 1, 3, 2):sum(1), {1 + 9, 2 + 10, 3 + 11, 4 + 12})
        check(ember.tensor({1, 2, 3}):expand(4, 3):sum(1), {4, 8, 12})
        check(ember.tensor({1, 2, 3}):expand(4, 3):sum(), 24)
    end)

    it("splits large full reductions and large strided ones correctly", function()
        local n = 200000
        check(ember.arange(1, n + 1, {dtype = "float64"}):sum(), n * (n + 1) / 2)
        check(ember.arange(1, n + 1):sum(), n * (n + 1) // 2)
        -- odd numbers 1, 3, ..., 2n-1 sum to n^2
        check(ember.arange(1, 2 * n + 1, {dtype = "float64"}):slice(1, 1, -1, 2):sum(), n * n)
        local big = ember.arange(0, 3 * n, {dtype = "float64"}):reshape(n, 3)
        check(big:sum(1), {3 * (n - 1) * n / 2, 3 * (n - 1) * n / 2 + n, 3 * (n - 1) * n / 2 + 2 * n})
    end)

    it("gives 0 over empty tensors and empty dims", function()
        check(ember.zeros(0):sum(), 0)
        check(ember.zeros(0, 3):sum(1), {0, 0, 0})
        check_shape(ember.zeros(0, 3):sum(2), {0})
        check(ember.zeros(3, 0):sum(2, true), {{0}, {0}, {0}})
    end)

    it("works on 0-d tensors", function()
        local s = ember.tensor(5)
        check(s:sum(), 5)
        check(s:sum(1), 5)
        check(s:sum(-1, true), 5)
        check_shape(s:sum(1, true), {})
    end)

    it("over a short last dim, contiguous or not, float32 and float64, against sums in Lua", function()
        -- rows under 32 elements take their own loop; 31 and 33 sit on either side of it
        for _, c in ipairs({1, 3, 8, 31, 33}) do
            local x, rows = matrix(40, c)
            for _, dt in ipairs({"float64", "float32"}) do
                local t = x:to(dt)
                local views = {t, t:t():contiguous():t(), t:index_select(1, ember.arange(40, 1, -2))}
                local picked = {}
                for i = 40, 1, -2 do picked[#picked + 1] = i end
                for v, view in ipairs(views) do
                    local got = view:sum(-1):tolist()
                    for k = 1, #got do
                        local i = v == 3 and picked[k] or k
                        local want = 0
                        for j = 1, c do want = want + rows[i][j] end
                        assert(math.abs(got[k] - want) <= 1e-5 * (1 + math.abs(want)),
                               string.format("c=%d %s view %d row %d: %s, want %s", c, dt, v, i, got[k], want))
                    end
                end
            end
        end
    end)

    it("reports bad dims naming the op and the dim", function()
        has(err(m.sum, m, 3), "sum")
        has(err(m.sum, m, 3), "dimension 3 out of range")
        has(err(function() return m:sum(0) end), "sum: argument 1: dimension 0")
        has(err(function() return m:sum({1, -2}) end), "sum: dim 1 appears multiple times")
        has(err(function() return m:sum({2, 2}) end), "dim 2 appears multiple times")
        has(err(function() return m:sum("x") end), "sum")
        has(err(function() return m:sum(1, "yes") end), "expected a boolean")
        has(err(function() return m:amax({}, {dtype = "float64"}) end), "amax")
    end)
end)

describe("mean and prod", function()
    it("averages floats over dims", function()
        local t = F({{1, 2, 3}, {4, 5, 6}})
        check(t:mean(), 3.5)
        check(t:mean(1), {2.5, 3.5, 4.5})
        check(t:mean(2, true), {{2}, {5}})
        check(D({{1, 2}, {3, 5}}):t():mean(1), {1.5, 4})
        assert.equal("float16", t:half():mean().dtype)
        close(t:half():mean(), 3.5)
        check(ember.tensor({1, 2, 4}):mean({dtype = "float64"}), 7 / 3, 1e-15)
    end)

    it("gives NaN for an empty mean", function()
        check(ember.zeros(0):mean(), nan)
        check(ember.zeros(0, 2):mean(1), {nan, nan})
    end)

    it("refuses integer tensors like PyTorch", function()
        local e = err(function() return ember.tensor({1, 2}):mean() end)
        has(e, "mean: expected a floating point dtype, got int64")
        has(err(function() return ember.tensor({true}):mean() end), "got bool")
    end)

    it("multiplies, with int64 results for integers and 1 for empty", function()
        check(ember.tensor({1, 2, 3, 4}):prod(), 24)
        assert.equal("int64", ember.tensor({1, 2}, {dtype = "int32"}):prod().dtype)
        check(ember.tensor({{1, 2}, {3, 4}}):prod(1), {3, 8})
        check(ember.tensor({{1, 2}, {3, 4}}):prod(2, true), {{2}, {12}})
        close(F({0.5, 4, 3}):prod(), 6)
        check(ember.zeros(0):prod(), 1)
        check(ember.zeros(2, 0):prod(2), {1, 1})
    end)
end)

describe("max and min", function()
    local t = ember.tensor({{3, 7, 7}, {9, 1, 9}})

    it("return the value over everything as a 0-d tensor", function()
        check(t:max(), 9)
        check(t:min(), 1)
        check_shape(t:max(), {})
        check(ember.max(t), 9)
    end)

    it("return values and 1-based indices along a dim, first of ties", function()
        local v, i = t:max(2)
        check(v, {7, 9})
        check(i, {2, 1})
        assert.equal("int64", i.dtype)
        v, i = t:min(1)
        check(v, {3, 1, 7})
        check(i, {1, 2, 1})
        v, i = t:max(-1, true)
        check(v, {{7}, {9}})
        check(i, {{2}, {1}})
        v, i = ember.ones(5):max(1)
        check(i, 1)
    end)

    it("work on transposed input and on 0-d tensors", function()
        local v, i = t:t():max(1)
        check(v, {7, 9})
        check(i, {2, 1})
        v, i = ember.tensor(4.5):max(1)
        check(v, 4.5)
        check(i, 1)
    end)

    it("with a tensor argument are the elementwise maximum / minimum", function()
        check(t:max(ember.tensor({5, 5, 5})), {{5, 7, 7}, {9, 5, 9}})
        check(ember.min(t, ember.tensor({5, 5, 5})), {{3, 5, 5}, {5, 1, 5}})
    end)

    it("propagate NaN, indexing the first NaN", function()
        local x = F({{1, nan, 3, nan}, {4, 2, 8, 0}})
        local v, i = x:max(2)
        check(v, {nan, 8})
        check(i, {2, 3})
        v, i = x:min(2)
        check(v, {nan, 0})
        check(i, {2, 4})
        check(x:max(), nan)
        check(x:amin(1), {1, nan, 3, nan})
        check(x:argmax(), 2)
    end)

    it("find the extreme of large inputs in threads and columns", function()
        local n = 200000
        local a = ember.arange(0, n, {dtype = "float64"})
        check(a:max(), n - 1)
        check(a:argmax(), n)
        check(a:argmin(), 1)
        check(ember.ones(n):argmax(), 1)
        local c = ember.arange(0, 40 * 300, {dtype = "float32"}):reshape(300, 40)
        local v, i = c:max(1)
        local want_v, want_i = {}, {}
        for j = 1, 40 do want_v[j] = 299 * 40 + j - 1; want_i[j] = 300 end
        check(v, want_v)
        check(i, want_i)
        v, i = c:min(1)
        for j = 1, 40 do want_v[j] = j - 1; want_i[j] = 1 end
        check(v, want_v)
        check(i, want_i)
    end)

    it("refuse empty reductions", function()
        has(err(function() return ember.zeros(0):max() end), "max: cannot reduce the empty tensor")
        has(err(function() return ember.zeros(0, 3):max(1) end), "max: cannot reduce over an empty dimension")
        has(err(function() return ember.zeros(0, 3):amax(1) end), "amax: cannot reduce over an empty dimension")
        check_shape(ember.zeros(0, 3):amax(2), {0})
        has(err(function() return t:max(3) end), "max")
        has(err(function() return t:max(nil, true) end), "keepdim needs a dim")
    end)
end)

describe("amax, amin, argmax, argmin", function()
    local c = ember.arange(1, 25):reshape(2, 3, 4)

    it("reduce several dims at once", function()
        check(c:amax({2, 3}), {12, 24})
        check(c:amin({1, 3}), {1, 5, 9})
        check(c:amax({1, 2}, true), {{{21, 22, 23, 24}}})
        check(c:amax(), 24)
        check(ember.tensor({true, false}):amax(), true)
        assert.equal("int32", ember.tensor({1, 5}, {dtype = "int32"}):amax().dtype)
    end)

    it("argmax over the flattened tensor is a 0-d 1-based index", function()
        local t = ember.tensor({{3, 9, 2}, {9, 0, 1}})
        check(t:argmax(), 2)
        check_shape(t:argmax(), {})
        check(t:argmin(), 5)
        check(t:t():argmax(), 2)     -- t:t() flattened is 3, 9, 9, 0, 2, 1
        check(ember.argmax(t), 2)
    end)

    it("argmax along a dim", function()
        local t = ember.tensor({{3, 9, 2}, {9, 0, 1}})
        check(t:argmax(1), {2, 1, 1})
        check(t:argmax(2), {2, 1})
        check(t:argmax(2, true), {{2}, {1}})
        check(t:argmin(-1), {3, 2})
        check(ember.tensor(7):argmax(), 1)
    end)
end)

describe("all and any", function()
    local b = ember.tensor({{true, false}, {true, true}})

    it("reduce to bool over dims", function()
        check(b:all(), false)
        check(b:any(), true)
        check(b:all(2), {false, true})
        check(b:all(1), {true, false})
        check(b:any(1, true), {{true, true}})
        assert.equal("bool", b:all().dtype)
    end)

    it("treat non-zero numbers (and NaN) as true", function()
        check(F({1, 2, -0.5}):all(), true)
        check(ember.tensor({0, 0, 3}):any(), true)
        check(ember.tensor({0, 0, 3}):all(), false)
        check(F({nan}):all(), true)
        check(ember.tensor({{0, 1}, {0, 0}}):t():any(2), {false, true})
    end)

    it("give true / false over empty tensors", function()
        check(ember.zeros(0):all(), true)
        check(ember.zeros(0):any(), false)
    end)
end)

describe("var and std", function()
    -- {1, 2, 3, 4}: mean 2.5, squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5
    local x = D({1, 2, 3, 4})

    it("use correction 1 by default and take a correction option", function()
        check(x:var(), 5 / 3, 1e-15)
        check(x:var({correction = 0}), 1.25, 1e-15)
        check(x:var(1, false, {correction = 2}), 2.5, 1e-15)
        check(x:std(), math.sqrt(5 / 3), 1e-15)
        check(x:std({correction = 0}), math.sqrt(1.25), 1e-15)
    end)

    it("accept unbiased as an option or a lone boolean", function()
        check(x:var({unbiased = false}), 1.25, 1e-15)
        check(x:var(false), 1.25, 1e-15)
        check(x:var(true), 5 / 3, 1e-15)
        has(err(function() return x:var({unbiased = true, correction = 0}) end), "either")
    end)

    it("reduce over dims with keepdim", function()
        local m = F({{1, 3}, {2, 6}, {3, 9}})
        -- columns: {1,2,3} var 1; {3,6,9} var 9
        close(m:var(1), {1, 9})
        -- rows: {1,3} var 2, {2,6} var 8, {3,9} var 18
        close(m:var(2, true), {{2}, {8}, {18}})
        close(m:t():std(1), {math.sqrt(2), math.sqrt(8), math.sqrt(18)})
        close(m:var({1, 2}, {correction = 0}), (1 + 9 + 4 + 36 + 9 + 81) / 6 - 4 ^ 2)
    end)

    it("give NaN when there are too few elements", function()
        check(D({5}):var(), nan)
        check(ember.zeros(0):var(), nan)
    end)

    it("need floating point input", function()
        has(err(function() return ember.tensor({1, 2}):var() end), "var: expected a floating point dtype, got int64")
        has(err(function() return ember.tensor({1, 2}):std() end), "std: expected a floating point dtype")
    end)
end)

describe("norm", function()
    local v = F({3, -4})

    it("computes p-norms", function()
        close(v:norm(), 5)
        close(v:norm(2), 5)
        close(v:norm("fro"), 5)
        close(v:norm(1), 7)
        close(v:norm(math.huge), 4)
        close(v:norm(-math.huge), 3)
        close(v:norm(3), (27 + 64) ^ (1 / 3))
        close(F({0, 2, 0, -1}):norm(0), 2)
    end)

    it("reduces over dims", function()
        local m = F({{3, 4}, {6, 8}})
        close(m:norm(2, 2), {5, 10})
        close(m:norm(1, 1, true), {{9, 12}})
        close(m:t():norm(math.huge, 1), {4, 8})
        close(m:norm({p = 1, dim = 2}), {7, 14})
    end)

    it("rejects integer input and unknown norms", function()
        has(err(function() return ember.tensor({3, 4}):norm() end), "norm: expected a floating point dtype")
        has(err(function() return v:norm("nuc") end), "norm")
    end)
end)

describe("logsumexp", function()
    it("matches log(sum(exp(x)))", function()
        close(F({1, 2, 3}):logsumexp(1), math.log(math.exp(1) + math.exp(2) + math.exp(3)))
        local m = D({{0, 1}, {2, 2}})
        check(m:logsumexp(2), {math.log(1 + math.exp(1)), 2 + math.log(2)}, 1e-14)
        check(m:logsumexp(1, true), {{math.log(1 + math.exp(2)), math.log(math.exp(1) + math.exp(2))}}, 1e-14)
        check(m:t():logsumexp(1), {math.log(1 + math.exp(1)), 2 + math.log(2)}, 1e-14)
    end)

    it("stays finite for large values and handles infinities", function()
        close(F({1000, 1000}):logsumexp(1), 1000 + math.log(2))
        close(F({-1000, -1000}):logsumexp(1), -1000 + math.log(2))
        check(F({-inf, -inf}):logsumexp(1), -inf)
        check(F({{-inf, -inf}, {0, -inf}}):logsumexp(2), {-inf, 0})
        check(F({inf, 1}):logsumexp(1), inf)
        check(ember.zeros(0):logsumexp(1), -inf)
    end)

    it("promotes integers to the default float dtype", function()
        local r = ember.tensor({0, 0}):logsumexp(1)
        assert.equal("float32", r.dtype)
        close(r, math.log(2))
    end)
end)

describe("softmax and log_softmax", function()
    local function softmax_ref(xs)
        local m, s, out = -inf, 0, {}
        for _, x in ipairs(xs) do m = math.max(m, x) end
        for _, x in ipairs(xs) do s = s + math.exp(x - m) end
        for i, x in ipairs(xs) do out[i] = math.exp(x - m) / s end
        return out
    end

    it("follows exp(x) / sum(exp(x))", function()
        local e1, e2, e3 = math.exp(1), math.exp(2), math.exp(3)
        local s = e1 + e2 + e3
        close(F({1, 2, 3}):softmax(1), {e1 / s, e2 / s, e3 / s})
        check(D({1, 2, 3}):softmax(-1), {e1 / s, e2 / s, e3 / s}, 1e-14)
        check(D({1, 2, 3}):log_softmax(1), {1 - math.log(s), 2 - math.log(s), 3 - math.log(s)}, 1e-14)
        close(ember.softmax(F({1, 2, 3}), 1), {e1 / s, e2 / s, e3 / s})
    end)

    it("works along any dim, also on non-contiguous input", function()
        local m = D({{1, 5}, {2, 3}, {0, 0}})
        local c1, c2 = softmax_ref({1, 2, 0}), softmax_ref({5, 3, 0})
        check(m:softmax(1), {{c1[1], c2[1]}, {c1[2], c2[2]}, {c1[3], c2[3]}}, 1e-14)
        local r1 = softmax_ref({1, 5})
        check(m:softmax(2):select(1, 1), r1, 1e-14)
        check(m:t():softmax(2), {c1, c2}, 1e-14)
        check(m:t():log_softmax(1)[1], {math.log(r1[1]), math.log(softmax_ref({2, 3})[1]), math.log(0.5)}, 1e-14)
        local wide = F({{1, 2, 3, 4}, {4, 3, 2, 1}}):slice(2, 1, 4, 2)   -- {{1,3},{4,2}}
        close(wide:softmax(2), {softmax_ref({1, 3}), softmax_ref({4, 2})})
    end)

    it("is accurate over a wide range and gives exact zeros for -inf", function()
        local xs = {}
        for i = 1, 200 do xs[i] = -(i - 1) * 0.37 + ((i * 7) % 5) * 0.01 end
        xs = F(xs):tolist()     -- the float32 inputs, so only the kernel's error counts
        local want = softmax_ref(xs)
        local got = F(xs):softmax(1):tolist()
        for i = 1, 200 do
            -- x - max is rounded to float32 first (as in PyTorch): that costs |x - max| ulps
            local tol = 1e-6 + math.abs(xs[i] - xs[1]) * 2 ^ -23
            assert(math.abs(got[i] - want[i]) <= tol * want[i] + 1e-37,
                   "element " .. i .. ": " .. got[i] .. " vs " .. want[i])
        end
        check(F({0, -inf, 1, -inf}):softmax(1):select(1, 2), 0)
        check(F({{0, 0}, {-inf, 0}}):softmax(1), {{1, 0.5}, {0, 0.5}})
    end)

    it("works along a leading dim of wide contiguous tensors", function()
        -- [3, 600] float32 and [2, 3, 5] float64 along dim 1 / 2
        local rows = {{}, {}, {}}
        for j = 1, 600 do rows[1][j] = j % 7; rows[2][j] = -(j % 5); rows[3][j] = 0 end
        local got = F(rows):softmax(1):tolist()
        local lg = F(rows):log_softmax(1):tolist()
        for _, j in ipairs({1, 2, 300, 511, 512, 513, 600}) do
            local ref = softmax_ref({rows[1][j], rows[2][j], rows[3][j]})
            for i = 1, 3 do
                assert(math.abs(got[i][j] - ref[i]) < 1e-6, "softmax column " .. j)
                assert(math.abs(lg[i][j] - math.log(ref[i])) < 1e-5, "log_softmax column " .. j)
            end
        end
        local c = ember.arange(1, 31, {dtype = "float64"}):reshape(2, 3, 5)
        local r = c:softmax(2):tolist()
        for i = 1, 2 do
            for k = 1, 5 do
                local xs = {}
                for j = 1, 3 do xs[j] = (i - 1) * 15 + (j - 1) * 5 + k end
                local ref = softmax_ref(xs)
                for j = 1, 3 do assert(math.abs(r[i][j][k] - ref[j]) < 1e-14) end
            end
        end
    end)

    it("is stable for large inputs and handles float16", function()
        close(F({1000, 1000}):softmax(1), {0.5, 0.5})
        close(F({1000, 0}):log_softmax(1), {0, -1000})
        local h = F({1, 2, 3}):half():softmax(1)
        assert.equal("float16", h.dtype)
        check(h, softmax_ref({1, 2, 3}), 2e-3)
    end)

    it("handles 0-d, empty input, NaN and all -inf rows", function()
        check(F(3):softmax(1), 1)
        check(F(3):log_softmax(1), 0)
        check_shape(ember.zeros(0, 3):softmax(2), {0, 3})
        check(F({1, nan}):softmax(1), {nan, nan})
        check(F({-inf, -inf}):softmax(1), {nan, nan})
    end)

    it("needs a dim and a float tensor", function()
        has(err(function() return F({1, 2}):softmax() end), "softmax: argument 1: missing dim")
        has(err(function() return F({1, 2}):log_softmax() end), "log_softmax")
        has(err(function() return F({1, 2}):softmax(2) end), "softmax")
        has(err(function() return ember.tensor({1, 2}):softmax(1) end), "softmax: expected a floating point dtype, got int64")
        close(ember.tensor({1, 2}):softmax(1, {dtype = "float32"}), softmax_ref({1, 2}))
    end)
end)

describe("cumsum and cumprod", function()
    it("scan along a dim", function()
        check(ember.tensor({1, 2, 3, 4}):cumsum(1), {1, 3, 6, 10})
        check(ember.tensor({1, 2, 3, 4}):cumprod(1), {1, 2, 6, 24})
        local m = ember.tensor({{1, 2, 3}, {4, 5, 6}})
        check(m:cumsum(2), {{1, 3, 6}, {4, 9, 15}})
        check(m:cumsum(1), {{1, 2, 3}, {5, 7, 9}})
        check(m:cumprod(1), {{1, 2, 3}, {4, 10, 18}})
        check(m:cumsum(-1), {{1, 3, 6}, {4, 9, 15}})
        check(ember.cumsum(m, 1), {{1, 2, 3}, {5, 7, 9}})
    end)

    it("gives int64 for integers and bools, keeps floats", function()
        assert.equal("int64", ember.tensor({1, 2}, {dtype = "int32"}):cumsum(1).dtype)
        local b = ember.tensor({true, false, true})
        assert.equal("int64", b:cumsum(1).dtype)
        check(b:cumsum(1), {1, 1, 2})
        assert.equal("float32", F({1, 2}):cumsum(1).dtype)
        close(F({0.5, 0.25, 2}):cumprod(1), {0.5, 0.125, 0.25})
        assert.equal("float64", F({1, 2}):cumsum(1, {dtype = "float64"}).dtype)
    end)

    it("works on non-contiguous input and wide blocks", function()
        local m = ember.tensor({{1, 2, 3}, {4, 5, 6}})
        check(m:t():cumsum(1), {{1, 4}, {3, 9}, {6, 15}})
        check(m:t():cumsum(2), {{1, 5}, {2, 7}, {3, 9}})
        local c = ember.arange(1, 25):reshape(2, 3, 4)
        check(c:cumsum(2), {{{1, 2, 3, 4}, {6, 8, 10, 12}, {15, 18, 21, 24}},
                            {{13, 14, 15, 16}, {30, 32, 34, 36}, {51, 54, 57, 60}}})
        local w = ember.ones(3, 40):cumsum(1)
        local want = {}
        for i = 1, 3 do want[i] = {} for j = 1, 40 do want[i][j] = i end end
        check(w, want)
        check(F({{1, 2, 3, 4}}):slice(2, 1, 4, 2):cumsum(2), {{1, 4}})
    end)

    it("handles 0-d and empty tensors", function()
        check(ember.tensor(5):cumsum(1), 5)
        check_shape(ember.zeros(0, 2):cumsum(1), {0, 2})
    end)

    it("needs a valid dim", function()
        has(err(function() return ember.tensor({1, 2}):cumsum() end), "cumsum: argument 1: missing dim")
        has(err(function() return ember.tensor({1, 2}):cumprod(2) end), "cumprod")
    end)
end)
