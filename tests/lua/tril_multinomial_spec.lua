-- tril_multinomial_spec.lua — ember.tril / ember.triu (and tril_ / triu_) and
-- ember.multinomial. Expected triangles come from hand-written matrices and
-- from a Lua loop over tolist() straight from the definition (keep [i][j]
-- when j - i <= d, or >= d); gradients from gradcheck in float64 and by hand.
-- Sampling is checked against the distribution it should follow: exact
-- properties (range, zero weights, distinct draws) and frequencies over many
-- draws within a few standard errors of the hand formulas, with fixed seeds
-- so that the statistical checks cannot flake.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

local A = ember.autograd

-- the triangle of a nested list (2-D, or a batch of 2-D) from the definition
local function ref_triangle(list, d, upper)
  if type(list[1][1]) == "table" then
    local out = {}
    for b = 1, #list do out[b] = ref_triangle(list[b], d, upper) end
    return out
  end
  local out = {}
  for i = 1, #list do
    out[i] = {}
    for j = 1, #list[i] do
      local keep = upper and (j - i >= d) or (not upper and j - i <= d)
      local v = list[i][j]
      local zero = type(v) == "boolean" and false or 0
      out[i][j] = keep and v or zero
    end
  end
  return out
end

local function check_against_ref(t, d)
  h.check(ember.tril(t, d), ref_triangle(t:tolist(), d, false))
  h.check(ember.triu(t, d), ref_triangle(t:tolist(), d, true))
end

describe("tril / triu", function()
  local m = ember.tensor({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}, {dtype = "float32"})

  it("give the hand triangles of a square matrix", function()
    h.check(m:tril(), {{1, 0, 0}, {4, 5, 0}, {7, 8, 9}})
    h.check(m:triu(), {{1, 2, 3}, {0, 5, 6}, {0, 0, 9}})
    h.check(m:tril(1), {{1, 2, 0}, {4, 5, 6}, {7, 8, 9}})
    h.check(m:tril(-1), {{0, 0, 0}, {4, 0, 0}, {7, 8, 0}})
    h.check(m:triu(1), {{0, 2, 3}, {0, 0, 6}, {0, 0, 0}})
    h.check(m:triu(-1), {{1, 2, 3}, {4, 5, 6}, {0, 8, 9}})
    h.check(ember.tril(m, {diagonal = -2}), {{0, 0, 0}, {0, 0, 0}, {7, 0, 0}})
    h.check(ember.triu(m, {diagonal = 2}), {{0, 0, 3}, {0, 0, 0}, {0, 0, 0}})
  end)

  it("keep all or nothing for diagonals past the matrix", function()
    h.check(m:tril(5), m:tolist())
    h.check(m:tril(-3), {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}})
    h.check(m:triu(3), {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}})
    h.check(m:triu(-100), m:tolist())
    h.check(m:tril(math.maxinteger), m:tolist())
    h.check(m:triu(math.mininteger), m:tolist())
    h.check(m:tril(math.mininteger), {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}})
  end)

  it("handle wide and tall matrices", function()
    local wide = ember.arange(1, 9):view(2, 4)
    h.check(wide:tril(), {{1, 0, 0, 0}, {5, 6, 0, 0}})
    h.check(wide:tril(2), {{1, 2, 3, 0}, {5, 6, 7, 8}})
    h.check(wide:triu(), {{1, 2, 3, 4}, {0, 6, 7, 8}})
    h.check(wide:triu(-1), {{1, 2, 3, 4}, {5, 6, 7, 8}})
    h.check(wide:triu(3), {{0, 0, 0, 4}, {0, 0, 0, 0}})
    local tall = ember.arange(1, 9):view(4, 2)
    h.check(tall:tril(), {{1, 0}, {3, 4}, {5, 6}, {7, 8}})
    h.check(tall:tril(-2), {{0, 0}, {0, 0}, {5, 0}, {7, 8}})
    h.check(tall:triu(), {{1, 2}, {0, 4}, {0, 0}, {0, 0}})
    h.check(tall:triu(-1), {{1, 2}, {3, 4}, {0, 6}, {0, 0}})
    for d = -5, 5 do
      check_against_ref(wide, d)
      check_against_ref(tall, d)
    end
  end)

  it("work on every matrix of a batch", function()
    ember.manual_seed(3)
    local x = ember.randn(2, 3, 4, 5)
    for d = -4, 4 do check_against_ref(x, d) end
    local y = ember.tril(x, 1)
    h.check_shape(y, {2, 3, 4, 5})
    h.check(y[2][3], ref_triangle(x[2][3]:tolist(), 1, false))
  end)

  it("read non-contiguous inputs", function()
    local base = ember.arange(1, 13):view(3, 4)
    local tt = base:t()   -- [4, 3], not contiguous
    assert.is_false(tt:is_contiguous())
    h.check(tt:tril(), {{1, 0, 0}, {2, 6, 0}, {3, 7, 11}, {4, 8, 12}})
    h.check(tt:triu(1), {{0, 5, 9}, {0, 0, 10}, {0, 0, 0}, {0, 0, 0}})
    local x = ember.randn(3, 4, 5):permute(3, 1, 2)   -- [5, 3, 4]
    assert.is_false(x:is_contiguous())
    for d = -2, 2 do check_against_ref(x, d) end
    local every_other = ember.arange(1, 25, {dtype = "float64"}):view(4, 6):slice(2, 1, 6, 2)
    check_against_ref(every_other, 0)
  end)

  it("keep the dtype: integers and bool", function()
    for _, dt in ipairs({"int64", "int32", "uint8", "float64", "float16", "bfloat16"}) do
      local x = ember.arange(1, 10):view(3, 3):to(dt)
      local y = x:tril(-1)
      assert.equal(dt, y.dtype)
      h.check(y, {{0, 0, 0}, {4, 0, 0}, {7, 8, 0}})
      assert.equal(dt, x:triu().dtype)
    end
    local b = ember.ones(2, 3, {dtype = "bool"})
    h.check(b:tril(), {{true, false, false}, {true, true, false}})
    h.check(b:triu(1), {{false, true, true}, {false, false, true}})
    assert.equal("bool", b:tril().dtype)
  end)

  it("give empty results for empty matrices", function()
    h.check_shape(ember.tril(ember.ones(3, 0)), {3, 0})
    h.check_shape(ember.triu(ember.ones(2, 0, 4)), {2, 0, 4})
  end)

  it("pass the incoming gradient's triangle back", function()
    ember.manual_seed(5)
    for _, d in ipairs({-2, -1, 0, 1, 3}) do
      local x = ember.randn(2, 3, 4, {dtype = "float64", requires_grad = true})
      assert.is_true(A.gradcheck(function(a) return ember.tril(a, d) end, {x}))
      assert.is_true(A.gradcheck(function(a) return a:triu(d) end, {x}))
      assert.is_true(A.gradgradcheck(function(a) return a:tril(d) * a end, {x}))
    end
    -- by hand: d(sum(w * tril(x, 1)))/dx = tril(w, 1) written out
    local x = ember.randn(3, 3, {requires_grad = true})
    local w = ember.tensor({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}, {dtype = "float32"})
    local y = x:tril(1)
    assert.is_true(y.requires_grad)
    local loss = (y * w):sum()
    loss:backward()
    h.check(x.grad, {{1, 2, 0}, {4, 5, 6}, {7, 8, 9}})
    local z = ember.randn(2, 3, {requires_grad = true})
    ember.triu(z, 1):sum():backward()
    h.check(z.grad, {{0, 1, 1}, {0, 0, 1}})
  end)

  it("work in place with tril_ / triu_", function()
    local a = ember.arange(1, 10, {dtype = "float32"}):view(3, 3)
    assert.equal(a, a:tril_())
    h.check(a, {{1, 0, 0}, {4, 5, 0}, {7, 8, 9}})
    local b = ember.arange(1, 10):view(3, 3)
    b:triu_(1)
    h.check(b, {{0, 2, 3}, {0, 0, 6}, {0, 0, 0}})
    -- through a non-contiguous view, into its base
    local base = ember.arange(1, 7):view(2, 3)
    base:t():tril_({diagonal = -1})
    h.check(base, {{0, 2, 3}, {0, 0, 6}})
    local bb = ember.ones(2, 2, 2, {dtype = "bool"})
    bb:tril_()
    h.check(bb, {{{true, false}, {true, true}}, {{true, false}, {true, true}}})
  end)

  it("reject bad input with messages naming the op", function()
    local e = err(ember.tril, ember.ones(3))
    has(e, "tril"); has(e, "at least 2 dimensions"); has(e, "[3]")
    e = err(ember.triu, ember.tensor(1.5))
    has(e, "triu"); has(e, "at least 2 dimensions")
    has(err(function() return ember.ones(4):tril_() end), "tril_: expected a tensor with at least 2 dimensions")
    has(err(ember.tril, ember.ones(2, 2), 0.5), "tril")
    has(err(ember.tril, ember.ones(2, 2), {diagonal = "x"}), "diagonal must be an integer, got string")
    has(err(ember.triu, ember.ones(2, 2), 1, 2), "unexpected argument")
    local leaf = ember.ones(2, 2, {requires_grad = true})
    e = err(function() return leaf:triu_() end)
    has(e, "triu_: in-place operation on a tensor that requires grad")
    has(err(function() return ember.ones(1, 3):expand(3, 3):tril_() end), "tril_")
  end)
end)

-- ---- multinomial ----------------------------------------------------------------------------

-- counts[k] of each value of a flat list
local function counts_of(list, n)
  local c = {}
  for k = 1, n do c[k] = 0 end
  for _, v in ipairs(list) do c[v] = c[v] + 1 end
  return c
end

-- the frequency k/total is within z standard errors of p
local function near(k, total, p, z, what)
  local se = math.sqrt(math.max(p * (1 - p), 1e-12) / total)
  local f = k / total
  assert(math.abs(f - p) <= z * se,
         string.format("%s: frequency %.5f, expected %.5f (%.1f standard errors off)", what, f, p,
                       math.abs(f - p) / se))
end

local function flat(t) return t:reshape(-1):tolist() end

describe("multinomial", function()
  it("repeats itself after manual_seed", function()
    local p = ember.tensor({{0.2, 0.3, 0.5}, {0.7, 0.2, 0.1}})
    for _, repl in ipairs({true, false}) do
      ember.manual_seed(42)
      local a = ember.multinomial(p, 3, repl)
      local a2 = ember.multinomial(p, 3, repl)
      ember.manual_seed(42)
      local b = p:multinomial(3, {replacement = repl})
      h.check(b, a:tolist())
      -- the generator moves on: a second draw continues the stream, as a replay shows
      h.check(ember.multinomial(p, 3, repl), a2:tolist())
    end
    local state = ember.get_rng_state()
    local c = ember.multinomial(ember.ones(50), 10, true)
    ember.set_rng_state(state)
    h.check(ember.multinomial(ember.ones(50), 10, true), c:tolist())
  end)

  it("gives int64 results of the right shapes, 1-based", function()
    ember.manual_seed(1)
    local s = ember.multinomial(ember.tensor({0.25, 0.25, 0.5}), 7, true)
    assert.equal("int64", s.dtype)
    h.check_shape(s, {7})
    h.check_shape(ember.multinomial(ember.ones(4, 6), 2), {4, 2})
    h.check_shape(ember.ones(4, 6):multinomial(1), {4, 1})
    h.check_shape(ember.multinomial(ember.ones(5, {dtype = "float64"}), 5), {5})
    h.check_shape(ember.multinomial(ember.ones(0, 3), 2), {0, 2})
    local big = ember.multinomial(ember.rand(3, 10) + 0.01, 200, true)
    h.check_shape(big, {3, 200})
    assert.equal(1, big:min():item())
    assert.equal(10, big:max():item())
    local wo = ember.multinomial(ember.rand(3, 10) + 0.01, 10)
    assert.is_true(wo:min():item() >= 1 and wo:max():item() <= 10)
    -- float16 / bfloat16 weights, and a non-contiguous probs
    h.check_shape(ember.multinomial(ember.ones(2, 4, {dtype = "float16"}), 3), {2, 3})
    h.check_shape(ember.multinomial(ember.ones(4, 2, {dtype = "bfloat16"}):t(), 3, true), {2, 3})
  end)

  it("draws rows with one category only that category", function()
    local p = ember.tensor({{0, 0, 5}, {1, 0, 0}, {0, 2, 0}}, {dtype = "float32"})
    h.check(ember.multinomial(p, 4, true), {{3, 3, 3, 3}, {1, 1, 1, 1}, {2, 2, 2, 2}})
    h.check(ember.multinomial(p, 1), {{3}, {1}, {2}})
  end)

  it("never draws categories of weight zero", function()
    ember.manual_seed(11)
    for _, w in ipairs({{0, 1, 0, 1, 0}, {1, 1, 0, 0}, {0, 0, 3}, {1e-300, 0, 1e-300}, {1e300, 0, 1e300}}) do
      local p = ember.tensor(w, {dtype = "float64"})
      for _, v in ipairs(flat(ember.multinomial(p, 5000, true))) do
        assert(w[v] > 0, "drew category " .. v .. " of weight 0")
      end
      local npos = 0
      for _, x in ipairs(w) do if x > 0 then npos = npos + 1 end end
      for _ = 1, 200 do
        for _, v in ipairs(flat(ember.multinomial(p, npos))) do assert(w[v] > 0) end
      end
    end
    -- many categories and samples: the comparison runs in pieces
    local n = 2000
    local w = ember.arange(n):remainder(2):float()   -- odd positions (1-based even) weigh 1
    local s = flat(ember.multinomial(w, 10000, true))
    local seen = {}
    for _, v in ipairs(s) do
      assert(v >= 1 and v <= n and v % 2 == 0, "drew category " .. v)
      seen[v] = true
    end
    local distinct = 0
    for _ in pairs(seen) do distinct = distinct + 1 end
    assert(distinct > 900, "only " .. distinct .. " categories seen")
  end)

  it("draws distinct categories per row without replacement", function()
    ember.manual_seed(9)
    local p = ember.rand(50, 8) + 0.05
    for _, row in ipairs(ember.multinomial(p, 8):tolist()) do
      local seen = {}
      for _, v in ipairs(row) do
        assert(not seen[v], "category " .. v .. " twice in a row")
        seen[v] = true
      end
    end
    -- exactly as many draws as non-zero categories: the non-zero ones, each once
    local w = ember.tensor({{0, 3, 0, 1, 2}, {5, 5, 0, 0, 0}}, {dtype = "float64"})
    local s = ember.multinomial(w, 2):tolist()
    table.sort(s[2])
    h.check(ember.tensor(s[2]), {1, 2})
    local r = ember.multinomial(w[1], 3):tolist()
    table.sort(r)
    h.check(ember.tensor(r), {2, 4, 5})
  end)

  it("matches the normalised weights with replacement", function()
    ember.manual_seed(2024)
    local w = {1, 2, 0, 3, 4}
    local N = 20000
    local c = counts_of(flat(ember.multinomial(ember.tensor(w, {dtype = "float32"}), N, true)), 5)
    for k = 1, 5 do near(c[k], N, w[k] / 10, 4, "category " .. k) end
    assert.equal(0, c[3])
    -- the same through many rows of one draw each (the batched path)
    local rows = ember.tensor(w, {dtype = "float64"}):view(1, 5):expand(N, 5)
    c = counts_of(flat(ember.multinomial(rows, 1, true)), 5)
    for k = 1, 5 do near(c[k], N, w[k] / 10, 4, "batched category " .. k) end
    -- all weights positive (ranks are categories directly), several rows
    local w2 = ember.tensor({{3, 1, 2}, {1, 1, 8}}, {dtype = "float32"})
    local s2 = ember.multinomial(w2, N, true):tolist()
    local c1, c2 = counts_of(s2[1], 3), counts_of(s2[2], 3)
    for k = 1, 3 do
      near(c1[k], N, ({3, 1, 2})[k] / 6, 4, "row 1 category " .. k)
      near(c2[k], N, ({1, 1, 8})[k] / 10, 4, "row 2 category " .. k)
    end
  end)

  it("follows sampling without replacement: first draws and ordered pairs", function()
    ember.manual_seed(77)
    local p = {0.1, 0.2, 0.3, 0.4}
    local N = 20000
    local probs = ember.tensor(p, {dtype = "float64"}):view(1, 4):expand(N, 4)
    local s = ember.multinomial(probs, 2):tolist()
    local first, pair, second = {0, 0, 0, 0}, {}, {0, 0, 0, 0}
    for i = 1, 4 do pair[i] = {0, 0, 0, 0} end
    for _, row in ipairs(s) do
      local a, b = row[1], row[2]
      assert(a ~= b)
      first[a] = first[a] + 1
      second[b] = second[b] + 1
      pair[a][b] = pair[a][b] + 1
    end
    for i = 1, 4 do
      near(first[i], N, p[i], 4, "first draw " .. i)
      -- P(second = j) = sum_{i ~= j} p_i p_j / (1 - p_i)
      local q = 0
      for k = 1, 4 do if k ~= i then q = q + p[k] * p[i] / (1 - p[k]) end end
      near(second[i], N, q, 4, "second draw " .. i)
      for j = 1, 4 do
        if i ~= j then near(pair[i][j], N, p[i] * p[j] / (1 - p[i]), 4, "pair " .. i .. "," .. j) end
      end
    end
    -- unnormalised weights give the same law
    local s2 = flat(ember.multinomial(ember.tensor({1, 2, 3, 4}, {dtype = "float32"}):view(1, 4):expand(N, 4), 1))
    local c = counts_of(s2, 4)
    for i = 1, 4 do near(c[i], N, p[i], 4, "unnormalised first draw " .. i) end
  end)

  it("does not record a graph", function()
    local p = ember.tensor({1, 2, 3}, {dtype = "float32", requires_grad = true})
    local s = p:multinomial(2)
    assert.is_false(s.requires_grad)
    assert.is_nil(s.grad_fn)
  end)

  it("rejects bad distributions and arguments as PyTorch does", function()
    local e = err(ember.multinomial, ember.tensor({0.5, -0.1, 0.6}), 1)
    has(e, "multinomial: invalid distribution"); has(e, "element < 0")
    has(err(ember.multinomial, ember.tensor({0.5, 0 / 0}), 1, true), "`nan`")
    has(err(ember.multinomial, ember.tensor({0.5, math.huge}), 1, true), "`inf`")
    e = err(ember.multinomial, ember.tensor({{1, 1}, {0, 0}}, {dtype = "float32"}), 1, true)
    has(e, "multinomial: invalid distribution (sum of probabilities <= 0)"); has(e, "row 2")
    has(err(ember.multinomial, ember.zeros(3), 1), "sum of probabilities <= 0")
    e = err(ember.multinomial, ember.tensor({0, 1, 0}, {dtype = "float32"}), 2)
    has(e, "multinomial: invalid distribution (with replacement=False"); has(e, "has 1")
    has(err(ember.multinomial, ember.ones(3), 4),
        "cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    has(err(ember.multinomial, ember.ones(3), 0), "cannot sample n_sample <= 0 samples")
    has(err(ember.multinomial, ember.ones(2, 2, 2), 1), "prob_dist must be 1 or 2 dim")
    has(err(ember.multinomial, ember.tensor(1.0), 1), "prob_dist must be 1 or 2 dim")
    has(err(ember.multinomial, ember.tensor({1, 2}), 1), "floating-point")
    has(err(ember.multinomial, ember.ones(2), 1, {generator = {}}), "option 'generator'")
    has(err(ember.multinomial, ember.ones(2), 1, true, 5), "unexpected argument")
    has(err(ember.multinomial, ember.ones(2), "x"), "multinomial")
    -- with replacement, many draws from few categories are fine
    h.check_shape(ember.multinomial(ember.tensor({0, 1}, {dtype = "float32"}), 5, true), {5})
  end)
end)
