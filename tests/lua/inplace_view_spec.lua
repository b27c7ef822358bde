-- inplace_view_spec.lua — the in-place view ops t:t_(), transpose_ (swapaxes_, swapdims_),
-- squeeze_ and unsqueeze_: t takes the view's geometry (expected shapes, strides and
-- elements by hand, as PyTorch gives them), other views keep theirs, the in-place rule
-- for autograd, the version bump backward checks, and bad arguments.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

describe("in-place view ops", function()
  it("t_ and transpose_ swap sizes and strides and return t itself", function()
    local x = ember.arange(6):reshape(2, 3)
    local y = x:t_()
    assert.are.equal(x, y)
    assert.are.same({3, 2}, {x.shape[1], x.shape[2]})
    assert.are.same({1, 3}, {x:stride(1), x:stride(2)})
    assert.are.same({{0, 3}, {1, 4}, {2, 5}}, x:tolist())
    local z = ember.arange(24):reshape(2, 3, 4)
    assert.are.equal(z, z:transpose_(1, 3))
    assert.are.same({4, 3, 2}, {z.shape[1], z.shape[2], z.shape[3]})
    assert.are.same({1, 4, 12}, {z:stride(1), z:stride(2), z:stride(3)})
    assert.are.equal(13, z[2][1][2]:item())   -- element [2][1][2] of the transposed is [2][1][2] of z before: 12 + 1
    z:swapaxes_(-1, 1)
    z:swapdims_(2, 2)
    assert.are.same({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}}, z[1]:tolist())
    local v = ember.arange(3)
    v:t_()      -- 1-D: nothing changes, as PyTorch
    assert.are.same({0, 1, 2}, v:tolist())
  end)

  it("squeeze_ and unsqueeze_ change the dims, other views keep theirs", function()
    local base = ember.arange(6):reshape(1, 2, 1, 3)
    local other = base:view(6)
    local x = base:view(1, 2, 1, 3)
    x:squeeze_()
    assert.are.same({2, 3}, {x.shape[1], x.shape[2]})
    x:unsqueeze_(-1)
    assert.are.same({2, 3, 1}, {x.shape[1], x.shape[2], x.shape[3]})
    x:squeeze_(3)
    x:squeeze_(1)   -- size 2: left as it is
    assert.are.same({2, 3}, {x.shape[1], x.shape[2]})
    x:unsqueeze_(1)
    assert.are.same({1, 2, 3}, {x.shape[1], x.shape[2], x.shape[3]})
    assert.are.same({6}, {other.shape[1]})
    assert.are.same({1, 2, 1, 3}, {base.shape[1], base.shape[2], base.shape[3], base.shape[4]})
    -- still the same memory: a write through x shows in other
    x[1][2][3] = 50
    assert.are.equal(50, other[6]:item())
  end)

  it("follows the in-place rule for autograd, and backward sees the change", function()
    local w = ember.ones(2, 3, {requires_grad = true})
    has(err(w.t_, w), "t_: in-place operation on a tensor that requires grad")
    has(err(w.unsqueeze_, w, 1), "unsqueeze_: in-place operation on a tensor that requires grad")
    assert.are.same({2, 3}, {w.shape[1], w.shape[2]})
    ember.no_grad(function() w:t_() end)   -- allowed for updates, as other in-place ops
    assert.are.same({3, 2}, {w.shape[1], w.shape[2]})
    -- a tensor saved for backward, then transposed in place: backward refuses
    local a = ember.ones(2, 3)
    local p = ember.ones(3, 2, {requires_grad = true})
    local loss = a:matmul(p):sum()
    a:t_()
    has(err(loss.backward, loss), "modified by an in-place operation")
  end)

  it("refuses bad dims, naming the in-place op", function()
    local x = ember.zeros(2, 3)
    has(err(x.transpose_, x, 1, 5), "transpose_: argument 3: dimension 5 out of range")
    has(err(x.unsqueeze_, x, 4), "unsqueeze_: argument 2")
    has(err(x.squeeze_, x, 3), "squeeze_: argument 2")
    local c = ember.zeros(2, 2, 2)
    has(err(c.t_, c), "t_: expected a tensor with at most 2 dimensions, got [2,2,2]")
    has(err(x.t_, 5), "t_")
    assert.are.same({2, 3}, {x.shape[1], x.shape[2]})
  end)
end)
