-- positions_spec.lua — one rule for every value that is a position,
-- 1-based. bincount's result[k] counts the value k (PyTorch's counts from 0), and the ops
-- that take or give positions agree with each other on 1-based categories. Expected
-- values: hand counts, and the ops checked against one another (an off-by-one in any
-- of them breaks an equality).
local ember = require "ember"
local h = require "helpers"
local F = ember.nn.functional

local err, has, check = h.err, h.has, h.check

describe("positions are 1-based", function()
  it("bincount: result[k] counts the value k, length max(max value, minlength)", function()
    local y = ember.tensor({2, 1, 2, 4})
    check(y:bincount(), {1, 2, 0, 1})
    check(y:bincount(nil, 6), {1, 2, 0, 1, 0, 0})
    check(y:bincount(nil, 3), {1, 2, 0, 1})            -- minlength below the largest value
    check(y:bincount({minlength = 4}), {1, 2, 0, 1})     -- minlength == the largest value
    check(ember.tensor({3}):bincount(), {0, 0, 1})
    check(ember.zeros(0, {dtype = "int64"}):bincount(nil, 2), {0, 0})
    check(y:bincount(ember.tensor({0.5, 1.0, 1.5, 2.0}, {dtype = "float64"})), {1, 2, 0, 2})
    has(err(function() return ember.tensor({1, 0}):bincount() end),
        "bincount: values are 1-based positions (result[k] counts the value k), so they must be >= 1, got 0")
  end)

  it("one_hot, argmax, bincount and the class targets agree on categories 1..C", function()
    local y = ember.tensor({3, 1, 2, 3, 3})
    local oh = ember.one_hot(y, 3)
    check(oh[1], {0, 0, 1})
    check(oh:argmax(2), y:tolist())
    local _, idx = oh:max(2)
    check(idx, y:tolist())
    check(oh:sum(1), y:bincount():tolist())
    -- a logit that puts all its mass on class y[i] gives (nearly) zero cross-entropy
    local logits = oh:to("float64") * 50
    assert.is_true(F.cross_entropy(logits, y):item() < 1e-12)
    assert.is_true(F.nll_loss(logits:log_softmax(2), y):item() < 1e-12)
    -- rows y of the identity, picked by embedding, are one_hot(y)
    check(F.embedding(y, ember.eye(3)), oh:to("float32"):tolist())
  end)

  it("unique's inverse, sort, topk, gather, searchsorted and nonzero give positions of the same kind", function()
    local x = ember.tensor({30, 10, 20, 10})
    local values, inverse = ember.unique(x, {return_inverse = true})
    check(values, {10, 20, 30})
    check(inverse, {3, 1, 2, 1})
    check(values:index_select(1, inverse), x:tolist())   -- the inverse rebuilds x
    local s, order = x:sort()
    check(x:gather(1, order), s:tolist())
    local _, top = x:topk(1)
    check(top, {1})
    check(ember.searchsorted(values, ember.tensor({20})), {2})   -- 20 sits at position 2
    check(ember.tensor({0, 7, 0, 7}):nonzero(), {{2}, {4}})
    check(ember.tensor({0, 7, 0, 7}):argwhere(), {{2}, {4}})
    check(ember.tensor({{0, 1}, {1, 0}}):argwhere(), {{1, 2}, {2, 1}})
    local p = ember.randperm(4):sort()
    check(p, {1, 2, 3, 4})
    check(ember.tensor({0.0, 0.0, 1.0}):multinomial(1), {3})
  end)
end)
