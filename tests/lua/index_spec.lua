-- index_spec.lua — the indexing family: index_select, gather, scatter,
-- scatter_add, index_add_, masked_select, nonzero, cat, stack, split, chunk,
-- sort, argsort, topk. Expected values are worked out by hand (index values
-- and dims are 1-based).
local ember = require "ember"

local h = require "helpers"
local is_nan, same, show, check, check_shape, err, has = h.is_nan, h.same, h.show, h.check, h.check_shape, h.err, h.has

local nan = 0 / 0

local I = function(v) return ember.tensor(v, {dtype = "int64"}) end

-- 1..24 as [2,3,4]: element (i,j,k) holds (i-1)*12 + (j-1)*4 + k
local function cube() return ember.arange(1, 25):reshape(2, 3, 4) end

describe("index_select", function()
    local t = ember.tensor({{1, 2, 3}, {4, 5, 6}})

    it("picks columns and rows, with repeats and negative indices", function()
        check(t:index_select(2, I({3, 1})), {{3, 1}, {6, 4}})
        check(t:index_select(1, I({2})), {{4, 5, 6}})
        check(t:index_select(2, I({-1, 2, 2})), {{3, 2, 2}, {6, 5, 5}})
        check(ember.index_select(t, -1, I({-3})), {{1}, {4}})
    end)

    it("takes a table of integers, an int32 index and a 0-d index", function()
        check(t:index_select(2, {2, 3}), {{2, 3}, {5, 6}})
        check(t:index_select(1, ember.tensor({2, 1}, {dtype = "int32"})), {{4, 5, 6}, {1, 2, 3}})
        check_shape(t:index_select(1, I(2)), {1, 3})
    end)

    it("keeps the dtype and works on non-contiguous input", function()
        local f = ember.tensor({{1.5, 2.5}, {3.5, 4.5}}, {dtype = "float64"})
        local r = f:t():index_select(1, I({2}))
        assert.equal("float64", r.dtype)
        check(r, {{2.5, 4.5}})
        check(cube():index_select(3, I({4, 1})), {{{4, 1}, {8, 5}, {12, 9}}, {{16, 13}, {20, 17}, {24, 21}}})
    end)

    it("gives an empty result for an empty index", function()
        check_shape(t:index_select(2, I({})), {2, 0})
    end)

    it("rejects bad indices", function()
        has(err(t.index_select, t, 2, I({1, 4})), "index_select: index 4 is out of bounds for dimension 2 with size 3")
        has(err(t.index_select, t, 2, I({0})), "index_select: index 0 is out of bounds for dimension 2 with size 3")
        has(err(t.index_select, t, 1, I({-3})), "index_select: index -3 is out of bounds for dimension 1 with size 2")
        has(err(t.index_select, t, 2, ember.tensor({1.0})), "index_select: expected an int64 index tensor, got float32")
        has(err(t.index_select, t, 2, I({{1}})), "index_select: expected a 1-D index tensor, got [1,1]")
        has(err(t.index_select, t, 3, I({1})), "index_select")
    end)
end)

describe("gather", function()
    local t = ember.tensor({{1, 2, 3}, {4, 5, 6}})

    it("gathers along each dim of a 2-D tensor", function()
        check(t:gather(2, I({{3, 1}, {2, 2}})), {{3, 1}, {5, 5}})
        check(t:gather(1, I({{2, 1, 2}})), {{4, 2, 6}})
        check(t:gather(1, I({{2, 1}, {1, 2}})), {{4, 2}, {1, 5}})
        check(ember.gather(t, 2, I({{-1}, {-3}})), {{3}, {4}})
    end)

    it("gathers along each dim of a 3-D tensor", function()
        local c = cube()
        check(c:gather(3, I({{{4}, {4}, {4}}, {{1}, {1}, {1}}})), {{{4}, {8}, {12}}, {{13}, {17}, {21}}})
        check(c:gather(2, I({{{3, 1, 2, 3}}, {{1, 1, 1, 1}}})), {{{9, 2, 7, 12}}, {{13, 14, 15, 16}}})
        check(c:gather(1, I({{{2, 1}}})), {{{13, 2}}})
    end)

    it("works on a transposed input and returns the index shape", function()
        -- t:t() is {{1,4},{2,5},{3,6}}
        check(t:t():gather(2, I({{2}, {1}, {2}})), {{4}, {2}, {6}})
        check_shape(t:gather(2, I({{}, {}})), {2, 0})
    end)

    it("rejects bad indices and shapes", function()
        has(err(t.gather, t, 2, I({{7}, {1}})), "gather: index 7 is out of bounds for dimension 2 with size 3")
        has(err(t.gather, t, 2, I({1, 2})), "gather: index [2] and input [2,3] must have the same number of dimensions")
        has(err(t.gather, t, 2, I({{1}, {1}, {1}})), "gather: index [3,1] is larger than input [2,3] in dimension 1")
        has(err(t.gather, t, 2, ember.tensor({{1.0}})), "gather: expected an int64 index tensor, got float32")
    end)
end)

describe("scatter", function()
    it("writes src at the indexed positions along each dim", function()
        local z = ember.zeros(2, 3)
        check(z:scatter(2, I({{3, 1}, {2, 1}}), ember.tensor({{10, 20}, {30, 40}})), {{20, 0, 10}, {40, 30, 0}})
        check(z, {{0, 0, 0}, {0, 0, 0}})   -- out of place
        check(ember.zeros(3, 2):scatter(1, I({{3, 1}}), ember.tensor({{7, 8}})), {{0, 8}, {0, 0}, {7, 0}})
        check(ember.scatter(ember.zeros(3), 1, I({-1}), ember.tensor({9})), {0, 0, 9})
    end)

    it("scatters a number", function()
        check(ember.zeros(2, 2):scatter(2, I({{2}, {1}}), 5), {{0, 5}, {5, 0}})
        local z = ember.zeros(2, 2, {dtype = "int64"})
        local r = z:scatter_(1, I({{2, 1}}), 7)
        assert.equal(z, r)
        check(z, {{0, 7}, {7, 0}})
    end)

    it("scatters in place through a view into its base", function()
        local base = ember.zeros(2, 3)
        base:t():scatter_(1, I({{3, 1}}), ember.tensor({{1, 2}}))
        -- base:t() is [3,2]: (3,1) and (1,2) of the view are base (1,3) and (2,1)
        check(base, {{0, 0, 1}, {2, 0, 0}})
    end)

    it("rejects bad input", function()
        local z = ember.zeros(2, 3)
        has(err(z.scatter, z, 2, I({{4}}), ember.tensor({{1}})), "scatter: index 4 is out of bounds for dimension 2 with size 3")
        has(err(z.scatter, z, 2, I({{1, 2}}), ember.tensor({{1}})), "scatter: index [1,2] must be no larger than src [1,1]")
        has(err(z.scatter, z, 2, I({1}), ember.tensor({1})), "same number of dimensions")
        local zi = ember.zeros(2, {dtype = "int64"})
        has(err(zi.scatter, zi, 1, I({1}), ember.tensor({1.5})),
            "scatter: source of dtype float32 cannot be written into a tensor of dtype int64")
        has(err(z.scatter, z, 2, ember.tensor({{1.0}}), ember.tensor({{1}})), "scatter: expected an int64 index tensor, got float32")
    end)
end)

describe("scatter_add", function()
    it("accumulates duplicate indices", function()
        check(ember.zeros(5):scatter_add(1, I({1, 3, 1, 1, 5}), ember.tensor({1, 2, 3, 4, 5})), {8, 0, 2, 0, 5})
        local z = ember.zeros(2, 3, {dtype = "int64"})
        z:scatter_add_(2, I({{2, 2, 2}, {1, 3, 1}}), I({{1, 2, 3}, {4, 5, 6}}))
        check(z, {{0, 6, 0}, {10, 0, 5}})
    end)

    it("works along each dim of a 3-D tensor", function()
        local idx = I({{{2, 2, 1}, {1, 1, 1}}, {{2, 2, 2}, {1, 2, 1}}})
        local r = ember.zeros(2, 2, 2):scatter_add(3, idx, ember.ones(2, 2, 3))
        check(r, {{{1, 2}, {3, 0}}, {{0, 3}, {2, 1}}})
        local r1 = ember.zeros(2, 1, 1):scatter_add(1, I({{{1}}, {{1}}, {{2}}}), ember.tensor({{{1}}, {{2}}, {{4}}}))
        check(r1, {{{3}}, {{4}}})
    end)

    it("adds to an existing tensor through a transposed view", function()
        local base = ember.ones(2, 3)
        base:t():scatter_add_(1, I({{1, 2}, {1, 2}}), ember.tensor({{1, 1}, {1, 1}}))
        check(base, {{3, 1, 1}, {1, 3, 1}})
    end)

    it("rejects bad input", function()
        local z = ember.zeros(3)
        has(err(z.scatter_add, z, 1, I({0}), ember.tensor({1})), "scatter_add: index 0 is out of bounds for dimension 1 with size 3")
        -- in a method call, self is not counted among the arguments
        has(err(function() return z:scatter_add(1, I({1}), 5) end), "scatter_add: argument 3: expected a tensor, got number")
    end)
end)

describe("index_add_", function()
    it("adds source slices at the indexed rows and columns", function()
        local z = ember.zeros(3, 2)
        z:index_add_(1, I({3, 1, 3}), ember.tensor({{1, 2}, {3, 4}, {5, 6}}))
        check(z, {{3, 4}, {0, 0}, {6, 8}})
        local w = ember.zeros(2, 3)
        check(w:index_add_(2, {2, -2}, ember.tensor({{1, 2}, {3, 4}})), {{0, 3, 0}, {0, 7, 0}})
        local o = ember.ones(2)
        check(o:index_add(1, I({2}), ember.tensor({5})), {1, 6})
        check(o, {1, 1})
    end)

    -- large enough for the threads to share the columns: every dtype and
    -- layout against a loop written here, repeated indices in order
    it("agrees with a plain loop along every dim, repeated indices too", function()
        ember.manual_seed(3)
        for _, dt in ipairs({"float32", "float64"}) do
            for dim = 1, 3 do
                local shape = {4, 5, 300}
                local n = 9
                local idx = {}
                for j = 1, n do idx[j] = (j * 7) % shape[dim] + 1 end   -- repeats
                idx[2] = -1
                local src_shape = {shape[1], shape[2], shape[3]}
                src_shape[dim] = n
                local self = ember.randn(shape, {dtype = dt})
                local src = ember.randn(src_shape, {dtype = dt})
                local want = self:tolist()
                local s = src:tolist()
                for a = 1, src_shape[1] do
                    for b = 1, src_shape[2] do
                        for c = 1, src_shape[3] do
                            local p = {a, b, c}
                            local k = idx[p[dim]]
                            p[dim] = k < 0 and k + shape[dim] + 1 or k
                            want[p[1]][p[2]][p[3]] = want[p[1]][p[2]][p[3]] + s[a][b][c]
                        end
                    end
                end
                local got = self:clone():index_add_(dim, I(idx), src)
                local tol = dt == "float32" and 1e-5 or 1e-12
                assert.is_true((got - ember.tensor(want, {dtype = dt})):abs():max():item() <= tol, dt .. " dim " .. dim)
                -- a strided self takes the general loop: the same values
                local t = self:clone():transpose(1, 2):contiguous():transpose(1, 2)
                assert.is_false(t:is_contiguous())
                assert.is_true((t:index_add_(dim, I(idx), src) - got):abs():max():item() == 0)
            end
        end
    end)

    it("writes nothing when an index is out of range", function()
        local z = ember.zeros(3, 40)
        has(err(z.index_add_, z, 1, I({1, 2, 9}), ember.ones(3, 40)), "index 9 is out of bounds")
        assert.are.equal(0, z:abs():sum():item())
    end)

    it("rejects bad input", function()
        local z = ember.zeros(3, 2)
        has(err(z.index_add_, z, 1, I({1, 2}), ember.ones(3, 2)),
            "index_add: source [3,2] does not match self [3,2] with dimension 1 replaced by the index length 2")
        has(err(z.index_add_, z, 1, I({4}), ember.ones(1, 2)), "index_add: index 4 is out of bounds for dimension 1 with size 3")
    end)
end)

describe("masked_select", function()
    local t = ember.tensor({{1, 2, 3}, {4, 5, 6}})

    it("selects with a broadcast mask, row-major", function()
        check(t:masked_select(ember.tensor({true, false, true})), {1, 3, 4, 6})
        check(ember.masked_select(ember.tensor({1, 2, 3}), ember.tensor({{true, false, true}, {false, true, false}})), {1, 3, 2})
        check(t:t():masked_select(ember.tensor({{true, true}, {false, false}, {false, true}})), {1, 4, 6})
    end)

    it("returns an empty 1-D tensor when nothing is selected", function()
        local r = t:masked_select(ember.tensor({false}))
        check_shape(r, {0})
        assert.equal("int64", r.dtype)
    end)

    it("rejects a non-bool mask and mismatched shapes", function()
        has(err(t.masked_select, t, I({1, 0, 1})), "masked_select: expected a bool mask, got int64")
        has(err(t.masked_select, t, ember.tensor({true, false})), "masked_select")
    end)
end)

describe("nonzero", function()
    it("returns 1-based coordinates, row-major", function()
        local r = ember.tensor({{0, 1}, {2, 0}}):nonzero()
        assert.equal("int64", r.dtype)
        check(r, {{1, 2}, {2, 1}})
        check(ember.nonzero(ember.tensor({0, 3, 0, 4})), {{2}, {4}})
        check(ember.tensor({0, nan, -1}):nonzero(), {{2}, {3}})
        check(ember.tensor({true, false, true}):nonzero(), {{1}, {3}})
        local c = ember.tensor({{{0, 0, 0}, {0, 0, 7}}, {{-1, 0, 0}, {0, 2.5, 0}}})
        check(c:nonzero(), {{1, 2, 3}, {2, 1, 1}, {2, 2, 2}})
    end)

    it("handles 0-d, empty and non-contiguous tensors", function()
        check_shape(ember.tensor(5):nonzero(), {1, 0})
        check_shape(ember.tensor(0):nonzero(), {0, 0})
        check_shape(ember.zeros(0, 3):nonzero(), {0, 2})
        check(ember.tensor({{0, 1}, {2, 0}}):t():nonzero(), {{1, 2}, {2, 1}})
        check(ember.tensor({{0, 0, 1}, {2, 0, 0}}):t():nonzero(), {{1, 2}, {3, 1}})
    end)

    it("of contiguous bool and uint8 masks (their scan of their own), against a count in Lua", function()
        check_shape(ember.tensor(true):nonzero(), {1, 0})
        check_shape(ember.tensor(false):nonzero(), {0, 0})
        check(ember.tensor({0, 2, 0, 255}, {dtype = "uint8"}):nonzero(), {{2}, {4}})
        -- [3, 5, 7] with a true where (i + 2j + 3k) % 5 == 0, listed row-major by hand-rolled loops
        local vals, want = {}, {}
        for i = 1, 3 do
            vals[i] = {}
            for j = 1, 5 do
                vals[i][j] = {}
                for k = 1, 7 do
                    local v = (i + 2 * j + 3 * k) % 5 == 0
                    vals[i][j][k] = v
                    if v then want[#want + 1] = {i, j, k} end
                end
            end
        end
        local m = ember.tensor(vals)
        check(m:nonzero(), want)
        check(m:to("uint8"):nonzero(), want)
        assert.equal(#want, m:sum():item())
        assert.equal(#want, m:masked_select(m):numel())
    end)
end)

describe("cat", function()
    it("concatenates along the first dim by default, or the given one", function()
        local a, b = ember.tensor({{1, 2}}), ember.tensor({{3, 4}})
        check(ember.cat({a, b}), {{1, 2}, {3, 4}})
        check(ember.cat({a, b}, 2), {{1, 2, 3, 4}})
        check(ember.cat({a, b, a}, -1), {{1, 2, 3, 4, 1, 2}})
        check(ember.cat({a}), {{1, 2}})
    end)

    it("promotes dtypes", function()
        local r = ember.cat({I({1, 2}), ember.tensor({0.5})})
        assert.equal("float32", r.dtype)
        check(r, {1, 2, 0.5})
        local r2 = ember.cat({ember.tensor({1}, {dtype = "int32"}), I({2})})
        assert.equal("int64", r2.dtype)
        assert.equal("float64", ember.cat({ember.tensor({1}), ember.tensor({2}, {dtype = "float64"})}).dtype)
    end)

    it("skips 1-D empty tensors and handles non-contiguous input", function()
        check(ember.cat({ember.zeros(0), ember.ones(1, 2)}), {{1, 1}})
        local t = ember.tensor({{1, 2, 3}, {4, 5, 6}})
        check(ember.cat({t:t(), t:t()}, 2), {{1, 4, 1, 4}, {2, 5, 2, 5}, {3, 6, 3, 6}})
        check_shape(ember.cat({ember.zeros(2, 0), ember.zeros(2, 3)}, 2), {2, 3})
    end)

    it("rejects mismatched shapes, ranks and 0-d tensors", function()
        local e = err(ember.cat, {ember.zeros(2, 3), ember.zeros(2, 4)}, 1)
        has(e, "cat: sizes must match except in dimension 1: got [2,3] at position 1 and [2,4] at position 2")
        has(err(ember.cat, {ember.zeros(2, 3), ember.zeros(3)}), "cat: tensors must have the same number of dimensions")
        has(err(ember.cat, {ember.tensor(1), ember.tensor(2)}), "cat: zero-dimensional tensor (at position 1) cannot be concatenated")
        has(err(ember.cat, {ember.zeros(2), 3}), "cat: argument 1: entry 2 is not a tensor (got number)")
        has(err(ember.cat, {}), "cat: argument 1: expected a non-empty table of tensors")
        has(err(ember.cat, {ember.zeros(2)}, 3), "cat: dimension 3 out of range")
    end)
end)

describe("stack", function()
    it("stacks along a new dim", function()
        local a, b = ember.tensor({1, 2}), ember.tensor({3, 4})
        check(ember.stack({a, b}), {{1, 2}, {3, 4}})
        check(ember.stack({a, b}, 2), {{1, 3}, {2, 4}})
        check(ember.stack({a, b}, -1), {{1, 3}, {2, 4}})
        check(ember.stack({ember.tensor(1), ember.tensor(2)}), {1, 2})
        check_shape(ember.stack({ember.zeros(2, 3), ember.zeros(2, 3), ember.zeros(2, 3)}, 2), {2, 3, 3})
    end)

    it("rejects tensors of different shapes", function()
        has(err(ember.stack, {ember.zeros(2), ember.zeros(3)}),
            "stack: expected all tensors of one shape, got [2] at position 1 and [3] at position 2")
    end)
end)

describe("split and chunk", function()
    it("splits into pieces of a size, the last smaller", function()
        local t = ember.arange(1, 6)
        local a, b, c, d = t:split(2)
        check(a, {1, 2}); check(b, {3, 4}); check(c, {5})
        assert.is_nil(d)
        local x, y = ember.split(t, {1, 4})
        check(x, {1}); check(y, {2, 3, 4, 5})
        local m = ember.tensor({{1, 2, 3}, {4, 5, 6}})
        local p, q = m:split(2, 2)
        check(p, {{1, 2}, {4, 5}}); check(q, {{3}, {6}})
    end)

    it("gives views that share memory with the source", function()
        local t = ember.arange(1, 6)
        local _, b = t:split(2)
        b:fill_(100)
        check(t, {1, 2, 100, 100, 5})
        local m = ember.zeros(2, 4)
        local _, right = m:chunk(2, 2)
        right:fill_(1)
        check(m, {{0, 0, 1, 1}, {0, 0, 1, 1}})
    end)

    it("chunks as PyTorch does, possibly into fewer pieces", function()
        local t = ember.arange(1, 6)
        local pieces = {t:chunk(4)}
        assert.equal(3, #pieces)
        check(pieces[1], {1, 2}); check(pieces[2], {3, 4}); check(pieces[3], {5})
        local a, b = ember.chunk(t, 2)
        check(a, {1, 2, 3}); check(b, {4, 5})
        assert.equal(3, select("#", ember.zeros(0):chunk(3)))
        assert.equal(1, select("#", ember.zeros(0):split(2)))
    end)

    it("rejects bad sizes", function()
        local t = ember.arange(1, 6)
        has(err(t.split, t, {2, 2}), "split: split sizes sum to 4, but dimension 1 of [5] has size 5")
        has(err(t.split, t, 0), "split: split size must be positive")
        has(err(function() return t:chunk(0) end), "chunk: argument 1: number of chunks must be in")
        has(err(t.split, ember.tensor(1), 1), "split")
    end)
end)

describe("sort", function()
    it("sorts ascending and descending with 1-based indices", function()
        local v, i = ember.tensor({3, 1, 2}):sort()
        check(v, {1, 2, 3}); check(i, {2, 3, 1})
        assert.equal("int64", i.dtype)
        v, i = ember.tensor({3, 1, 2}):sort(1, true)
        check(v, {3, 2, 1}); check(i, {1, 3, 2})
        v, i = ember.sort(I({5, -2, 7}), {descending = true})
        assert.equal("int64", v.dtype)
        check(v, {7, 5, -2}); check(i, {3, 1, 2})
    end)

    it("keeps ties in their original order when stable", function()
        local t = ember.tensor({2, 1, 2, 1, 2})
        local v, i = t:sort({stable = true})
        check(v, {1, 1, 2, 2, 2}); check(i, {2, 4, 1, 3, 5})
        v, i = t:sort({stable = true, descending = true})
        check(v, {2, 2, 2, 1, 1}); check(i, {1, 3, 5, 2, 4})
    end)

    it("puts NaN last ascending and first descending", function()
        local t = ember.tensor({3, nan, 1})
        local v, i = t:sort()
        check(v, {1, 3, nan}); check(i, {3, 1, 2})
        v, i = t:sort(1, true)
        check(v, {nan, 3, 1}); check(i, {2, 1, 3})
    end)

    it("sorts along any dim, also of non-contiguous tensors", function()
        local t = ember.tensor({{3, 1}, {0, 5}})
        local v, i = t:sort()
        check(v, {{1, 3}, {0, 5}}); check(i, {{2, 1}, {1, 2}})
        v, i = t:sort(1)
        check(v, {{0, 1}, {3, 5}}); check(i, {{2, 1}, {1, 2}})
        v, i = t:t():sort({dim = 2, descending = true})
        check(v, {{3, 0}, {5, 1}}); check(i, {{1, 2}, {2, 1}})
        local c = cube():sort(2, true)
        check(c:select(1, 1):select(2, 1), {9, 5, 1})
    end)

    it("handles 0-d and empty tensors", function()
        local v, i = ember.tensor(4):sort()
        assert.equal(4, v:item()); assert.equal(1, i:item())
        v, i = ember.zeros(0):sort()
        check_shape(v, {0}); check_shape(i, {0})
    end)

    it("argsort returns the indices", function()
        check(ember.tensor({3, 1, 2}):argsort(), {2, 3, 1})
        check(ember.argsort(ember.tensor({{3, 1, 2}}), 2, true), {{1, 3, 2}})
    end)

    it("rejects a bad dim", function()
        has(err(ember.sort, ember.tensor({1}), 2), "sort: argument 2: dimension 2 out of range")
    end)
end)

describe("topk", function()
    local t = ember.tensor({1, 5, 3, 4})

    it("returns the largest or smallest k, sorted", function()
        local v, i = t:topk(2)
        check(v, {5, 4}); check(i, {2, 4})
        v, i = t:topk(2, 1, false)
        check(v, {1, 3}); check(i, {1, 3})
        v, i = ember.topk(t, 3, {largest = false})
        check(v, {1, 3, 4}); check(i, {1, 3, 4})
        v, i = t:topk(0)
        check_shape(v, {0}); check_shape(i, {0})
    end)

    it("works along a given dim of a 2-D tensor", function()
        local m = ember.tensor({{1, 9}, {7, 3}, {5, 5}})
        local v, i = m:topk(1, 1)
        check(v, {{7, 9}}); check(i, {{2, 1}})
        v, i = m:topk(1)
        check(v, {{9}, {7}, {5}}); check(i, {{2}, {1}, {1}})
        assert.truthy(v:is_contiguous())
    end)

    it("rejects k larger than the dim", function()
        has(err(t.topk, t, 5), "topk: k (5) is out of range for dimension 1 of size 4")
        has(err(t.topk, t, -1), "topk: k (-1) is out of range")
    end)
end)
