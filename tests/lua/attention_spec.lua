-- attention_spec.lua — ember.scaled_dot_product_attention (the fused kernel,
-- its autograd node and its binding). Expected values come from the composed
-- math softmax(q k^T * scale + mask) v written here with other ember ops in
-- float64, from finite differences (gradcheck / gradgradcheck in float64),
-- and, for dropout, from the keep mask rebuilt with ember.rand and the
-- Philox rule of backend.h (the same seed and counter offset).
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

local A = ember.autograd
local sdpa = ember.scaled_dot_product_attention

local function R(...)
  local args = {...}
  args[#args + 1] = {dtype = "float64"}
  return ember.randn(table.unpack(args))
end

local function maxdiff(a, b) return (a:to("float64") - b:to("float64")):abs():max():item() end

-- bool [Tq, Tk]: key j hidden from query i (j > i, top-left aligned)
local function causal_hidden(Tq, Tk)
  return ember.arange(Tk):view(1, Tk):gt(ember.arange(Tq):view(Tq, 1))
end

-- the composed math in the inputs' dtype; keep: the dropout keep/(1-p) factor
local function reference(q, k, v, opts)
  opts = opts or {}
  local D = q.shape[#q.shape]
  local scale = opts.scale or 1 / math.sqrt(D)
  local s = q:matmul(k:transpose(-2, -1)) * scale
  local m = opts.attn_mask
  if m then
    if m.dtype == "bool" then s = s:masked_fill(m:logical_not(), -math.huge) else s = s + m end
  end
  if opts.is_causal then s = s:masked_fill(causal_hidden(q.shape[#q.shape - 1], k.shape[#k.shape - 1]), -math.huge) end
  local p = s:softmax(-1)
  if opts.keep then p = p * opts.keep end
  return p:matmul(v)
end

local function forward_case(q, k, v, opts, tol)
  local got = sdpa(q, k, v, opts)
  local want = reference(q, k, v, opts)
  assert.are.same(want.shape, got.shape)
  local d = maxdiff(got, want)
  assert(d < (tol or 1e-12), "max difference " .. d)
  return got
end

describe("scaled_dot_product_attention forward", function()
  before_each(function() ember.manual_seed(7) end)

  it("matches the composed math without a mask, 4-D and 3-D", function()
    forward_case(R(2, 3, 70, 16), R(2, 3, 130, 16), R(2, 3, 130, 16))
    forward_case(R(4, 65, 8), R(4, 65, 8), R(4, 65, 8))
  end)

  it("is causal top-left aligned with Tq = Tk and Tq ~= Tk", function()
    forward_case(R(2, 2, 100, 8), R(2, 2, 100, 8), R(2, 2, 100, 8), {is_causal = true})
    forward_case(R(1, 2, 150, 8), R(1, 2, 40, 8), R(1, 2, 40, 8), {is_causal = true})
    forward_case(R(1, 2, 40, 8), R(1, 2, 150, 8), R(1, 2, 150, 8), {is_causal = true})
    -- the first query sees only the first key: its output is v[1]
    local q, k, v = R(1, 5, 4), R(1, 5, 4), R(1, 5, 3)
    local o = sdpa(q, k, v, nil, 0, true)
    assert(maxdiff(o[1][1], v[1][1]) < 1e-15)
  end)

  it("takes bool and float masks broadcast over batch and heads", function()
    local q, k, v = R(2, 3, 33, 8), R(2, 3, 70, 8), R(2, 3, 70, 8)
    forward_case(q, k, v, {attn_mask = ember.rand(2, 1, 1, 70):gt(0.3)})    -- padding mask [N, 1, 1, Tk]
    forward_case(q, k, v, {attn_mask = ember.rand(33, 70):gt(0.2)})         -- [Tq, Tk]
    forward_case(q, k, v, {attn_mask = R(1, 3, 33, 70)})                    -- per head
    forward_case(q, k, v, {attn_mask = R(2, 1, 33, 1)})                     -- per query row
    -- a float mask with odd strides (a transposed view)
    forward_case(q, k, v, {attn_mask = R(70, 33):t()})
    -- positional form
    local m = ember.rand(2, 1, 1, 70):gt(0.5)
    m[1][1][1][1] = true
    m[2][1][1][1] = true
    assert(maxdiff(sdpa(q, k, v, m), reference(q, k, v, {attn_mask = m})) < 1e-12)
  end)

  it("broadcasts batch dims, takes Dv ~= D and a custom scale", function()
    forward_case(R(2, 1, 20, 8), R(1, 3, 30, 8), R(3, 30, 5))
    forward_case(R(3, 17, 8), R(3, 9, 8), R(3, 9, 12), {scale = 0.37})
    forward_case(R(1, 1, 8), R(1, 1, 8), R(1, 1, 8))                         -- T = 1
    forward_case(R(2, 129, 64), R(2, 193, 64), R(2, 193, 32), {is_causal = true})   -- T past whole tiles
  end)

  it("gives NaN for a fully masked row and keeps the other rows", function()
    local q, k, v = R(1, 4, 8), R(1, 6, 8), R(1, 6, 8)
    local m = ember.ones(4, 6, {dtype = "bool"})
    m[3] = ember.zeros(6, {dtype = "bool"})
    local o = sdpa(q, k, v, m)
    for c = 1, 8 do assert(h.is_nan(o[1][3][c]:item())) end
    assert(maxdiff(o[1][1], reference(q, k, v)[1][1]) < 1e-12)
  end)

  it("agrees between float32 and float64", function()
    local q, k, v = R(2, 4, 200, 32), R(2, 4, 300, 32), R(2, 4, 300, 32)
    local o64 = sdpa(q, k, v, nil, 0, true)
    local o32 = sdpa(q:float(), k:float(), v:float(), nil, 0, true)
    assert.are.equal("float32", o32.dtype)
    assert(maxdiff(o32, o64) < 2e-6)
    local m = R(200, 300)
    assert(maxdiff(sdpa(q:float(), k:float(), v:float(), m:float()), sdpa(q, k, v, m)) < 2e-6)
  end)

  it("has an options table with PyTorch's names", function()
    local q, k, v = R(2, 5, 4), R(2, 6, 4), R(2, 6, 4)
    assert(maxdiff(sdpa(q, k, v, {scale = 0.5, is_causal = true}),
                   reference(q, k, v, {scale = 0.5, is_causal = true})) < 1e-12)
    assert(maxdiff(sdpa(q, k, v, nil, 0, false, 0.5), reference(q, k, v, {scale = 0.5})) < 1e-12)
  end)
end)

describe("scaled_dot_product_attention gradients", function()
  before_each(function() ember.manual_seed(11) end)

  it("passes gradcheck for q, k, v with strided inputs", function()
    -- q arrives as [B, D, T] and is transposed, k is a slice with a step
    local f = function(qt, k2, v)
      return sdpa(qt:transpose(-2, -1), k2:slice(2, 1, 14, 2), v)
    end
    assert(A.gradcheck(f, {R(2, 4, 5), R(2, 14, 4), R(2, 7, 3)}))
  end)

  it("passes gradcheck causal, masked and broadcast", function()
    assert(A.gradcheck(function(q, k, v) return sdpa(q, k, v, nil, 0, true) end, {R(1, 2, 6, 4), R(1, 2, 6, 4), R(1, 2, 6, 3)}))
    assert(A.gradcheck(function(q, k, v) return sdpa(q, k, v, nil, 0, true) end, {R(1, 7, 3), R(1, 4, 3), R(1, 4, 2)}))
    local bm = ember.rand(2, 1, 1, 5):gt(0.3)
    bm[1][1][1][1] = true
    bm[2][1][1][1] = true
    assert(A.gradcheck(function(q, k, v) return sdpa(q, k, v, bm) end, {R(2, 2, 3, 4), R(2, 2, 5, 4), R(2, 2, 5, 3)}))
    local fm = R(3, 5)
    assert(A.gradcheck(function(q, k, v) return sdpa(q, k, v, {attn_mask = fm, scale = 0.7}) end,
                       {R(2, 1, 3, 4), R(2, 5, 4), R(1, 5, 2)}))
  end)

  it("matches the composed gradients on tiles past the kernel's block sizes", function()
    local q, k, v = R(2, 70, 16), R(2, 130, 16), R(2, 130, 8)
    local m = R(70, 130)
    for _, causal in ipairs({false, true}) do
      local opts = causal and {is_causal = true} or {attn_mask = m}
      local a = {q:clone():requires_grad_(), k:clone():requires_grad_(), v:clone():requires_grad_()}
      local b = {q:clone():requires_grad_(), k:clone():requires_grad_(), v:clone():requires_grad_()}
      local w = R(2, 70, 8);
      (sdpa(a[1], a[2], a[3], opts) * w):sum():backward();
      (reference(b[1], b[2], b[3], opts) * w):sum():backward()
      for i = 1, 3 do assert(maxdiff(a[i].grad, b[i].grad) < 1e-11, "input " .. i) end
    end
  end)

  it("gives the same gradients with one problem per thread item and with many problems", function()
    -- few problems split each one over tiles; many (>= 4 per thread) take one problem per item
    for _, B in ipairs({1, 96}) do
      local q, k, v = R(B, 40, 8), R(B, 70, 8), R(B, 70, 8)
      local a = {q:clone():requires_grad_(), k:clone():requires_grad_(), v:clone():requires_grad_()}
      local b = {q:clone():requires_grad_(), k:clone():requires_grad_(), v:clone():requires_grad_()}
      local w = R(B, 40, 8);
      (sdpa(a[1], a[2], a[3], {is_causal = true}) * w):sum():backward();
      (reference(b[1], b[2], b[3], {is_causal = true}) * w):sum():backward()
      for i = 1, 3 do assert(maxdiff(a[i].grad, b[i].grad) < 1e-11, "B " .. B .. " input " .. i) end
    end
  end)

  it("passes gradgradcheck (composed backward under create_graph)", function()
    assert(A.gradgradcheck(function(q, k, v) return sdpa(q, k, v, nil, 0, true) end,
                           {R(1, 3, 2), R(1, 4, 2), R(1, 4, 2)}))
    local fm = R(3, 4)
    assert(A.gradgradcheck(function(q, k, v) return sdpa(q, k, v, fm) end, {R(1, 3, 2), R(1, 4, 2), R(1, 4, 2)}))
  end)

  it("gives only the gradients asked for", function()
    local q, k, v = R(1, 4, 3):requires_grad_(), R(1, 5, 3), R(1, 5, 2):requires_grad_()
    sdpa(q, k, v):sum():backward()
    assert(q.grad and v.grad and not k.grad)
    assert.are.equal("ScaledDotProductAttentionBackward", sdpa(q, k, v).grad_fn)
  end)

  it("refuses a second backward without retain_graph and an in-place change of a saved input", function()
    local q = R(1, 4, 3):requires_grad_()
    local o = sdpa(q, R(1, 5, 3), R(1, 5, 2)):sum()
    o:backward()
    has(err(function() o:backward() end), "second time")
    local k = R(1, 5, 3)
    local o2 = sdpa(q * 1, k, R(1, 5, 2))
    local q2 = R(1, 4, 3):requires_grad_()
    local kk = R(1, 5, 3):requires_grad_()
    local kc = kk * 1
    local o3 = sdpa(q2, kc, R(1, 5, 2)):sum()
    ember.no_grad(function() kc:add_(1) end)
    has(err(function() o3:backward() end), "in-place")
    assert(o2)
  end)
end)

describe("scaled_dot_product_attention dropout", function()
  it("gives the same result for the same seed and keeps about 1 - p", function()
    local q, k, v = R(2, 3, 40, 8), R(2, 3, 50, 8), R(2, 3, 50, 8)
    ember.manual_seed(5)
    local a = sdpa(q, k, v, nil, 0.3)
    ember.manual_seed(5)
    local b = sdpa(q, k, v, nil, 0.3)
    assert.are.equal(0, maxdiff(a, b))
    ember.manual_seed(6)
    assert(maxdiff(sdpa(q, k, v, nil, 0.3), a) > 1e-3)
    -- with v = identity-like rows, out = P_drop: the share of nonzero weights is about 1 - p
    local vi = ember.eye(50, 50, {dtype = "float64"}):view(1, 1, 50, 50)
    ember.manual_seed(5)
    local pd = sdpa(R(2, 3, 40, 8), k, vi, nil, 0.3)
    local kept = pd:ne(0):to("float64"):mean():item()
    assert(math.abs(kept - 0.7) < 0.02, "kept " .. kept)
  end)

  it("equals the composed math with the keep mask rebuilt from the generator", function()
    for _, dt in ipairs({"float64", "float32"}) do
      local q, k, v = R(2, 3, 37, 8):to(dt), R(2, 3, 45, 8):to(dt), R(2, 3, 45, 6):to(dt)
      local p = 0.25
      ember.manual_seed(123)
      local got = sdpa(q, k, v, {dropout_p = p, is_causal = true})
      ember.manual_seed(123)
      local keep = ember.rand(2, 3, 37, 45, {dtype = dt}):lt(1 - p):to(dt) / (1 - p)
      local want = reference(q:double(), k:double(), v:double(), {is_causal = true, keep = keep:double()})
      assert(maxdiff(got, want) < (dt == "float64" and 1e-12 or 2e-6), dt)
    end
    -- with a padding mask that splits the problems into chunks
    local q, k, v = R(2, 3, 8, 4), R(2, 3, 10, 4), R(2, 3, 10, 4)
    local m = ember.rand(2, 1, 1, 10):gt(0.2)
    m[1][1][1][1] = true
    m[2][1][1][1] = true
    ember.manual_seed(9)
    local got = sdpa(q, k, v, m, 0.4)
    ember.manual_seed(9)
    local keep = ember.rand(2, 3, 8, 10, {dtype = "float64"}):lt(0.6):double() / 0.6
    assert(maxdiff(got, reference(q, k, v, {attn_mask = m, keep = keep})) < 1e-12)
    -- chunks that would start mid-counter (3 heads x 3 x 3 positions): the mask is made whole
    q, k, v = R(2, 3, 3, 4), R(2, 3, 3, 4), R(2, 3, 3, 4)
    m = ember.tensor({{{{true, false, true}}}, {{{true, true, false}}}})
    ember.manual_seed(10)
    got = sdpa(q, k, v, m, 0.4)
    ember.manual_seed(10)
    keep = ember.rand(2, 3, 3, 3, {dtype = "float64"}):lt(0.6):double() / 0.6
    assert(maxdiff(got, reference(q, k, v, {attn_mask = m, keep = keep})) < 1e-12)
  end)

  it("passes gradcheck and gradgradcheck with the seed reset before every evaluation", function()
    local f = function(q, k, v)
      ember.manual_seed(77)
      return sdpa(q, k, v, nil, 0.3, true)
    end
    assert(A.gradcheck(f, {R(1, 2, 6, 4), R(1, 2, 7, 4), R(1, 2, 7, 3)}))
    assert(A.gradgradcheck(f, {R(1, 3, 2), R(1, 4, 2), R(1, 4, 2)}))
  end)
end)

describe("scaled_dot_product_attention tiles and parts", function()
  before_each(function() ember.manual_seed(13) end)

  -- forward and gradients against the composed math in float64, for one problem
  -- (the backward cuts its keys into several parts) and for a few
  local function grad_case(B, Tq, Tk, D, Dv, opts, tol)
    local q, k, v = R(B, Tq, D), R(B, Tk, D), R(B, Tk, Dv)
    local a = {q:clone():requires_grad_(), k:clone():requires_grad_(), v:clone():requires_grad_()}
    local b = {q:clone():requires_grad_(), k:clone():requires_grad_(), v:clone():requires_grad_()}
    local w = R(B, Tq, Dv)
    local oa, ob = sdpa(a[1], a[2], a[3], opts), reference(b[1], b[2], b[3], opts)
    assert(maxdiff(oa, ob) < (tol or 1e-12), "forward");
    (oa * w):sum():backward();
    (ob * w):sum():backward()
    for i = 1, 3 do
      local d = maxdiff(a[i].grad, b[i].grad)
      assert(d < (tol or 1e-11), string.format("B %d Tq %d Tk %d D %d Dv %d input %d: %g", B, Tq, Tk, D, Dv, i, d))
    end
  end

  it("match the composed math on sizes off the tile sizes", function()
    grad_case(1, 300, 300, 64, 64, {is_causal = true})        -- several tiles and key parts
    grad_case(1, 257, 190, 5, 7, {is_causal = true})          -- Tq > Tk, D and Dv not a vector's width
    grad_case(1, 190, 257, 1, 1, {attn_mask = R(190, 257)})   -- D = 1, a float mask
    grad_case(1, 100, 130, 256, 32, {is_causal = true})       -- a large D
    grad_case(2, 65, 63, 17, 33, {scale = 0.3})
    grad_case(3, 1, 1, 16, 16, {is_causal = true})            -- T = 1
    grad_case(1, 1, 70, 8, 8, {})                             -- one query
    grad_case(1, 70, 1, 8, 8, {is_causal = true})             -- one key
    grad_case(1, 20, 30, 24, 40, {is_causal = true})          -- smaller than a tile
  end)

  it("match the composed gradients with dropout over several key parts", function()
    local q, k, v = R(1, 150, 16), R(1, 170, 16), R(1, 170, 12)
    local w = R(1, 150, 12)
    local p = 0.2
    local a = {q:clone():requires_grad_(), k:clone():requires_grad_(), v:clone():requires_grad_()}
    local b = {q:clone():requires_grad_(), k:clone():requires_grad_(), v:clone():requires_grad_()}
    ember.manual_seed(21)
    local oa = sdpa(a[1], a[2], a[3], {dropout_p = p, is_causal = true})
    ember.manual_seed(21)
    local keep = ember.rand(1, 150, 170, {dtype = "float64"}):lt(1 - p):double() / (1 - p)
    local ob = reference(b[1], b[2], b[3], {is_causal = true, keep = keep})
    assert(maxdiff(oa, ob) < 1e-12);
    (oa * w):sum():backward();
    (ob * w):sum():backward()
    for i = 1, 3 do assert(maxdiff(a[i].grad, b[i].grad) < 1e-11, "input " .. i) end
  end)

  it("agree between float32 and float64 forward and backward on a long sequence", function()
    local q, k, v, w = R(1, 600, 64), R(1, 600, 64), R(1, 600, 64), R(1, 600, 64)
    local function run(dt)
      local x = {q:to(dt):detach():requires_grad_(), k:to(dt):detach():requires_grad_(), v:to(dt):detach():requires_grad_()}
      local o = sdpa(x[1], x[2], x[3], {is_causal = true});
      (o * w:to(dt)):sum():backward()
      return {o, x[1].grad, x[2].grad, x[3].grad}
    end
    local r64, r32 = run("float64"), run("float32")
    for i = 1, 4 do
      local scale = r64[i]:abs():max():item()
      local d = maxdiff(r32[i], r64[i]) / scale
      assert(d < 1e-5, "output " .. i .. ": relative " .. d)
    end
  end)

  it("give the same gradients when only some are asked for", function()
    local q, k, v, w = R(1, 300, 16), R(1, 300, 16), R(1, 300, 8), R(1, 300, 8)
    local function run(need)
      local x = {q:clone(), k:clone(), v:clone()}
      for i = 1, 3 do if need[i] then x[i]:requires_grad_() end end
      (sdpa(x[1], x[2], x[3], {is_causal = true}) * w):sum():backward()
      return {x[1].grad, x[2].grad, x[3].grad}
    end
    local all = run({true, true, true})
    for _, need in ipairs({{false, true, true}, {true, false, false}, {false, false, true}, {false, true, false}}) do
      local some = run(need)
      for i = 1, 3 do
        if need[i] then assert.are.equal(0, maxdiff(some[i], all[i])) else assert.is_nil(some[i]) end
      end
    end
  end)

  it("give the same bits with any thread count", function()
    local n0 = ember.get_num_threads()
    for _, dt in ipairs({"float32", "float64"}) do
      local q, k, v, w = R(1, 700, 32):to(dt), R(1, 700, 32):to(dt), R(1, 700, 32):to(dt), R(1, 700, 32):to(dt)
      local function run(n)
        ember.set_num_threads(n)
        local x = {q:clone():requires_grad_(), k:clone():requires_grad_(), v:clone():requires_grad_()}
        local o = sdpa(x[1], x[2], x[3], {is_causal = true});
        (o * w):sum():backward()
        return {o, x[1].grad, x[2].grad, x[3].grad}
      end
      local one, two, three = run(1), run(2), run(3)
      ember.set_num_threads(n0)
      for i = 1, 4 do
        assert.are.equal(0, maxdiff(one[i], two[i]))
        assert.are.equal(0, maxdiff(one[i], three[i]))
      end
    end
    ember.set_num_threads(n0)
  end)
end)

describe("scaled_dot_product_attention errors", function()
  it("names the op and the shapes at the caller's line", function()
    local q, k, v = R(2, 4, 8), R(2, 5, 7), R(2, 5, 7)
    local e = err(function() return sdpa(q, k, v) end)
    has(e, "scaled_dot_product_attention: query [2,4,8] and key [2,5,7]")
    has(e, "attention_spec.lua:")
    has(err(sdpa, R(2, 4, 8), R(2, 5, 8), R(2, 6, 8)), "key [2,5,8] and value [2,6,8]")
    has(err(sdpa, R(8), R(2, 8), R(2, 8)), "at least 2 dims")
    has(err(sdpa, R(2, 4, 8), R(3, 5, 8), R(3, 5, 8)), "batch dims")
    has(err(sdpa, R(2, 4, 8), R(2, 5, 8), R(2, 5, 8), R(3, 5)), "attn_mask [3,5] does not broadcast")
    has(err(sdpa, R(2, 4, 8), R(2, 5, 8), R(2, 5, 8), ember.ones(4, 5, {dtype = "int64"})), "bool or the query's dtype")
    has(err(sdpa, R(2, 4, 8), R(2, 5, 8), R(2, 5, 8), nil, 1), "dropout_p must be in [0, 1)")
    has(err(sdpa, R(2, 4, 8), R(2, 5, 8):float(), R(2, 5, 8)), "one floating point dtype")
    has(err(sdpa, R(2, 4, 8), R(2, 5, 8), R(2, 5, 8), {bogus = 1}), "unknown option 'bogus'")
    has(err(sdpa, R(2, 4, 8), R(2, 5, 8), R(2, 5, 8), {scale = -1}), "scale must be a positive")
    has(err(sdpa, R(2, 4, 8), R(2, 5, 8), R(2, 5, 8), 5), "argument 4: attn_mask must be a tensor or nil, got number")
    has(err(sdpa, R(2, 4, 8), R(2, 5, 8), R(2, 5, 8), {is_causal = 1}), "is_causal must be a boolean, got number")
    has(err(sdpa, R(2, 4, 8), R(2, 5, 8), R(2, 5, 8), nil, "0.1"), "dropout_p must be a number, got string")
    has(err(sdpa, R(2, 4, 8), R(2, 5, 8), R(2, 5, 8), R(4, 5), 0, true), "not both")
    has(err(sdpa, R(2, 4, 8), R(2, 5, 8), R(2, 5, 8), R(4, 5):requires_grad_()), "attn_mask requires grad")
    has(err(sdpa, R(2, 4, 8), 3, R(2, 5, 8)), "scaled_dot_product_attention")
  end)
end)

describe("scaled_dot_product_attention memory", function()
  local function hwm_kb()
    local f = io.open("/proc/self/status")
    if not f then return nil end
    local s = f:read("a")
    f:close()
    return tonumber(s:match("VmHWM:%s*(%d+)"))
  end

  it("runs T = 8192 forward and backward without a T x T matrix", function()
    if not hwm_kb() then return end
    ember.manual_seed(3)
    local T, D = 8192, 64
    local q = ember.randn(1, T, D):requires_grad_()
    local k = ember.randn(1, T, D):requires_grad_()
    local v = ember.randn(1, T, D):requires_grad_()
    collectgarbage()
    local before = hwm_kb()
    local o = sdpa(q, k, v, nil, 0, true)
    o:sum():backward()
    local grown_mb = (hwm_kb() - before) / 1024
    assert(q.grad and k.grad and v.grad)
    assert(not h.is_nan(q.grad:sum():item()))
    -- a materialised score matrix alone would be 256 MB
    assert(grown_mb < 48, string.format("peak RSS grew by %.1f MB", grown_mb))
  end)
end)
