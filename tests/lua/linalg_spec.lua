-- linalg_spec.lua — matmul, mm, bmm, addmm, outer, dot.
-- Expected values come from a plain triple loop over Lua tables (ref_mm)
-- or from hand calculation.
local ember = require "ember"

-- nested Lua table of the given shape, element k (row-major, 1-based) = f(k)
local function build(shape, f)
  local k = 0
  local function rec(d)
    local t = {}
    for i = 1, shape[d] do
      if d == #shape then k = k + 1; t[i] = f(k) else t[i] = rec(d + 1) end
    end
    return t
  end
  return rec(1)
end

local function ref_mm(a, b)
  local out = {}
  for i = 1, #a do
    out[i] = {}
    for j = 1, #b[1] do
      local s = 0
      for k = 1, #b do s = s + a[i][k] * b[k][j] end
      out[i][j] = s
    end
  end
  return out
end

local function assert_close(got, want, tol, path)
  path = path or ""
  if type(want) == "table" then
    assert.are.equal(#want, #got, "length at " .. path)
    for i = 1, #want do assert_close(got[i], want[i], tol, path .. "[" .. i .. "]") end
  else
    local ok = math.abs(got - want) <= (tol or 1e-5) * math.max(1, math.abs(want))
    assert(ok, string.format("at %s: got %.17g, expected %.17g", path, got, want))
  end
end

local function shape_of(t) return t.shape end

local function errmsg(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok)
  return tostring(err)
end

describe("matmul values", function()
  it("multiplies 2x2 matrices (by hand)", function()
    local a = ember.tensor({{1, 2}, {3, 4}}, {dtype = "float32"})
    local b = ember.tensor({{5, 6}, {7, 8}}, {dtype = "float32"})
    local c = a:matmul(b)
    assert.are.same({{19, 22}, {43, 50}}, c:tolist())
    assert.are.equal("float32", c.dtype)
    assert.are.same({{19, 22}, {43, 50}}, ember.matmul(a, b):tolist())
    assert.are.same({{19, 22}, {43, 50}}, ember.mm(a, b):tolist())
  end)

  it("multiplies [2,3] @ [3,4]", function()
    local A = build({2, 3}, function(k) return k end)
    local B = build({3, 4}, function(k) return k - 6 end)
    local c = ember.tensor(A, {dtype = "float32"}):matmul(ember.tensor(B, {dtype = "float32"}))
    assert.are.same({2, 4}, shape_of(c))
    assert.are.same(ref_mm(A, B), c:tolist())
  end)

  it("1-D @ 1-D is a 0-d dot product", function()
    local a = ember.tensor({1, 2, 3}, {dtype = "float32"})
    local b = ember.tensor({4, 5, 6}, {dtype = "float32"})
    local c = a:matmul(b)
    assert.are.same({}, shape_of(c))
    assert.are.equal(32, c:item())
    local d = a:dot(b)
    assert.are.same({}, shape_of(d))
    assert.are.equal(32, d:item())
    assert.are.equal(32, ember.dot(a, b):item())
  end)

  it("2-D @ 1-D and 1-D @ 2-D drop the added dim", function()
    local m = ember.tensor({{1, 2, 3}, {4, 5, 6}}, {dtype = "float32"})
    local v3 = ember.tensor({1, 0, -1}, {dtype = "float32"})
    local v2 = ember.tensor({1, 2}, {dtype = "float32"})
    local r = m:matmul(v3)
    assert.are.same({2}, shape_of(r))
    assert.are.same({-2, -2}, r:tolist())
    local l = v2:matmul(m)
    assert.are.same({3}, shape_of(l))
    assert.are.same({9, 12, 15}, l:tolist())
  end)

  it("1-D @ 3-D and 3-D @ 1-D", function()
    local A = build({2, 3, 4}, function(k) return k end)
    local a = ember.tensor(A, {dtype = "float64"})
    local v4 = ember.tensor({1, -1, 2, 0}, {dtype = "float64"})
    local r = a:matmul(v4)
    assert.are.same({2, 3}, shape_of(r))
    for i = 1, 2 do for j = 1, 3 do
      local row = A[i][j]
      assert.are.equal(row[1] - row[2] + 2 * row[3], r:tolist()[i][j])
    end end
    local v3 = ember.tensor({1, 2, 3}, {dtype = "float64"})
    local l = v3:matmul(a)
    assert.are.same({2, 4}, shape_of(l))
    for i = 1, 2 do
      assert.are.same(ref_mm({{1, 2, 3}}, A[i])[1], l:tolist()[i])
    end
  end)

  it("broadcasts batch dims: [2,1,3,4] @ [5,4,2] -> [2,5,3,2]", function()
    local A = build({2, 1, 3, 4}, function(k) return (k % 7) - 3 end)
    local B = build({5, 4, 2}, function(k) return (k % 5) - 2 end)
    local c = ember.tensor(A, {dtype = "float32"}):matmul(ember.tensor(B, {dtype = "float32"}))
    assert.are.same({2, 5, 3, 2}, shape_of(c))
    local got = c:tolist()
    for i = 1, 2 do for j = 1, 5 do
      assert.are.same(ref_mm(A[i][1], B[j]), got[i][j])
    end end
  end)

  it("batched @ 2-D (the linear-layer case) and 2-D @ batched", function()
    local A = build({3, 2, 4}, function(k) return k / 4 end)
    local W = build({4, 5}, function(k) return (k % 3) - 1 end)
    local c = ember.tensor(A, {dtype = "float64"}):matmul(ember.tensor(W, {dtype = "float64"}))
    assert.are.same({3, 2, 5}, shape_of(c))
    for i = 1, 3 do assert_close(c:tolist()[i], ref_mm(A[i], W), 1e-12) end
    -- each matrix transposed: no row folding possible, batched instead
    local AT = build({3, 4, 2}, function(k) return k / 4 end)
    local at = ember.tensor(AT, {dtype = "float64"}):transpose(2, 3)
    local ct = at:matmul(ember.tensor(W, {dtype = "float64"}))
    for i = 1, 3 do
      local m = {}
      for r = 1, 2 do m[r] = {} for k = 1, 4 do m[r][k] = AT[i][k][r] end end
      assert_close(ct:tolist()[i], ref_mm(m, W), 1e-12)
    end
    local M = build({2, 3}, function(k) return k end)
    local B = build({4, 3, 2}, function(k) return k % 4 end)
    local d = ember.tensor(M, {dtype = "float64"}):matmul(ember.tensor(B, {dtype = "float64"}))
    assert.are.same({4, 2, 2}, shape_of(d))
    for i = 1, 4 do assert.are.same(ref_mm(M, B[i]), d:tolist()[i]) end
  end)

  it("bmm multiplies matching batches", function()
    local A = build({3, 2, 4}, function(k) return k % 5 end)
    local B = build({3, 4, 3}, function(k) return (k % 4) - 1 end)
    local c = ember.bmm(ember.tensor(A, {dtype = "float32"}), ember.tensor(B, {dtype = "float32"}))
    assert.are.same({3, 2, 3}, shape_of(c))
    for i = 1, 3 do assert.are.same(ref_mm(A[i], B[i]), c:tolist()[i]) end
  end)

  it("outer", function()
    local a = ember.tensor({1, 2, 3}, {dtype = "float32"})
    local b = ember.tensor({4, 5}, {dtype = "float32"})
    local c = a:outer(b)
    assert.are.same({{4, 5}, {8, 10}, {12, 15}}, c:tolist())
    assert.are.same({{4, 5}, {8, 10}, {12, 15}}, ember.outer(a, b):tolist())
  end)

  it("addmm: beta * c + alpha * a @ b, c broadcast", function()
    local a = ember.tensor({{1, 2}, {3, 4}}, {dtype = "float32"})
    local b = ember.tensor({{5, 6}, {7, 8}}, {dtype = "float32"})
    local c = ember.tensor({1, -1}, {dtype = "float32"})
    local r = ember.addmm(c, a, b, {beta = 2, alpha = 0.5})
    assert.are.same({{2 + 9.5, -2 + 11}, {2 + 21.5, -2 + 25}}, r:tolist())
    assert.are.same({{20, 21}, {44, 49}}, c:addmm(a, b):tolist())
    local full = ember.tensor({{1, 1}, {1, 1}}, {dtype = "float32"})
    assert.are.same({{20, 23}, {44, 51}}, ember.addmm(full, a, b):tolist())
  end)

  it("addmm with beta = 0 ignores NaN in the input", function()
    local a = ember.tensor({{1, 2}, {3, 4}}, {dtype = "float64"})
    local nan = ember.full({2, 2}, 0 / 0, {dtype = "float64"})
    assert.are.same({{7, 10}, {15, 22}}, ember.addmm(nan, a, a, {beta = 0}):tolist())
  end)
end)

describe("matmul operand layouts", function()
  local A = build({4, 3}, function(k) return k end)
  local B = build({3, 5}, function(k) return (k % 4) - 1.5 end)
  local want = ref_mm(A, B)

  it("transposed (column-major) operands", function()
    local at = ember.tensor({{1, 4, 7, 10}, {2, 5, 8, 11}, {3, 6, 9, 12}}, {dtype = "float32"}):t()
    assert.is_false(at:is_contiguous())
    local b = ember.tensor(B, {dtype = "float32"})
    assert.are.same(want, at:matmul(b):tolist())
    local bt = ember.tensor(B, {dtype = "float32"}):t():contiguous():t()
    assert.is_false(bt:is_contiguous())
    assert.are.same(want, at:matmul(bt):tolist())
    -- (B^T A^T)^T == A B
    assert.are.same(want, bt:t():matmul(at:t()):t():tolist())
  end)

  it("rows sliced with a step (leading dimension gaps)", function()
    local src = {}   -- A's rows at 1, 3, 5, 7
    for i = 1, 4 do src[2 * i - 1] = A[i]; src[2 * i] = {0, 0, 0} end
    local s = ember.tensor(src, {dtype = "float64"}):slice(1, 1, -1, 2)
    assert.are.same({4, 3}, s.shape)
    assert.is_false(s:is_contiguous())
    assert.are.same(want, s:matmul(ember.tensor(B, {dtype = "float64"})):tolist())
  end)

  it("stepped along both dims (no BLAS layout: copied)", function()
    local src = {}
    for i = 1, 8 do src[i] = {} for j = 1, 6 do src[i][j] = -100 end end
    for i = 1, 4 do for j = 1, 3 do src[2 * i - 1][2 * j - 1] = A[i][j] end end
    local s = ember.tensor(src, {dtype = "float32"}):slice(1, 1, -1, 2):slice(2, 1, -1, 2)
    assert.are.same({4, 3}, s.shape)
    assert.are.same(want, s:matmul(ember.tensor(B, {dtype = "float32"})):tolist())
  end)

  it("expanded (stride 0) operands", function()
    local row = ember.tensor({{1, 2, 3}}, {dtype = "float32"}):expand(4, 3)
    local r = row:matmul(ember.tensor(B, {dtype = "float32"}))
    local w = ref_mm({{1, 2, 3}}, B)[1]
    assert.are.same({w, w, w, w}, r:tolist())
    local m = ember.tensor(A, {dtype = "float32"})
    local bx = ember.tensor(B, {dtype = "float32"}):unsqueeze(1):expand(6, 3, 5)
    local c = m:matmul(bx)
    assert.are.same({6, 4, 5}, c.shape)
    for i = 1, 6 do assert.are.same(want, c:tolist()[i]) end
  end)

  it("permuted batch dims", function()
    local P = build({2, 4, 3, 3}, function(k) return (k * 7) % 11 - 5 end)
    local p = ember.tensor(P, {dtype = "float64"}):permute(2, 1, 3, 4)   -- [4,2,3,3], batch not flat
    local q = ember.tensor(build({3, 2}, function(k) return k end), {dtype = "float64"})
    local r = p:matmul(q)
    assert.are.same({4, 2, 3, 2}, r.shape)
    for i = 1, 4 do for j = 1, 2 do
      assert.are.same(ref_mm(P[j][i], q:tolist()), r:tolist()[i][j])
    end end
    local r2 = p:matmul(p)
    for i = 1, 4 do for j = 1, 2 do
      assert.are.same(ref_mm(P[j][i], P[j][i]), r2:tolist()[i][j])
    end end
  end)

  it("many small matrices (batch-parallel path) and a larger one", function()
    local X = build({300, 8, 8}, function(k) return (k % 13) - 6 end)
    local x = ember.tensor(X, {dtype = "float32"})
    local c = ember.bmm(x, x):tolist()
    for _, i in ipairs({1, 2, 150, 299, 300}) do assert.are.same(ref_mm(X[i], X[i]), c[i]) end
    local Y = build({70, 65}, function(k) return ((k * 31) % 17) / 8 - 1 end)
    local Z = build({65, 66}, function(k) return ((k * 7) % 19) / 8 - 1 end)
    local r = ember.tensor(Y, {dtype = "float64"}):matmul(ember.tensor(Z, {dtype = "float64"}))
    assert_close(r:tolist(), ref_mm(Y, Z), 1e-12)
  end)

  it("empty operands", function()
    local e = ember.zeros(0, 3):matmul(ember.ones(3, 4))
    assert.are.same({0, 4}, e.shape)
    local z = ember.ones(2, 0):matmul(ember.ones(0, 3))
    assert.are.same({{0, 0, 0}, {0, 0, 0}}, z:tolist())
    local b = ember.bmm(ember.ones(0, 2, 3), ember.ones(0, 3, 4))
    assert.are.same({0, 2, 4}, b.shape)
    assert.are.equal(0, ember.ones(0):dot(ember.ones(0)):item())
    local c = ember.full({2, 3}, 2.0)
    assert.are.same({{6, 6, 6}, {6, 6, 6}}, ember.addmm(c, ember.ones(2, 0), ember.ones(0, 3), {beta = 3}):tolist())
  end)
end)

describe("matmul dtypes", function()
  it("float64 keeps double precision", function()
    local A = build({3, 3}, function(k) return 1 / k end)
    local B = build({3, 2}, function(k) return math.sqrt(k) end)
    local c = ember.tensor(A, {dtype = "float64"}):matmul(ember.tensor(B, {dtype = "float64"}))
    assert.are.equal("float64", c.dtype)
    assert_close(c:tolist(), ref_mm(A, B), 1e-14)
  end)

  it("float32 with float64 promotes to float64", function()
    local a = ember.tensor({{1, 2}}, {dtype = "float32"})
    local b = ember.tensor({{0.1}, {0.2}}, {dtype = "float64"})
    local c = a:matmul(b)
    assert.are.equal("float64", c.dtype)
    assert_close(c:tolist(), {{0.1 + 0.4}}, 1e-15)
  end)

  it("float16 and bfloat16 compute through float32", function()
    local a = ember.tensor({{1, 2}, {3, 4}}, {dtype = "float16"})
    local c = a:matmul(a)
    assert.are.equal("float16", c.dtype)
    assert.are.same({{7, 10}, {15, 22}}, c:tolist())
    local b = ember.tensor({{1, 2}, {3, 4}}, {dtype = "bfloat16"})
    local d = b:mm(b)
    assert.are.equal("bfloat16", d.dtype)
    assert.are.same({{7, 10}, {15, 22}}, d:tolist())
  end)

  it("integer tensors multiply exactly", function()
    local a = ember.tensor({{1, 2}, {3, 4}})
    local c = a:matmul(a)
    assert.are.equal("int64", c.dtype)
    assert.are.same({{7, 10}, {15, 22}}, c:tolist())
    local big = ember.tensor({{1 << 40, 1}}):matmul(ember.tensor({{3}, {1}}))
    assert.are.same({{3 * (1 << 40) + 1}}, big:tolist())
    assert.are.equal("int64", big.dtype)
    assert.are.equal(32, ember.tensor({1, 2, 3}):dot(ember.tensor({4, 5, 6})):item())
    assert.are.same({{4, 5}, {8, 10}}, ember.tensor({1, 2}):outer(ember.tensor({4, 5})):tolist())
  end)
end)

describe("matmul errors", function()
  it("inner dimensions differ", function()
    local msg = errmsg(ember.matmul, ember.ones(2, 3), ember.ones(4, 5))
    assert.truthy(msg:find("matmul: [2,3] @ [4,5]: inner dimensions differ (3 vs 4)", 1, true), msg)
    msg = errmsg(ember.matmul, ember.ones(3), ember.ones(4))
    assert.truthy(msg:find("matmul: [3] @ [4]: inner dimensions differ (3 vs 4)", 1, true), msg)
    msg = errmsg(ember.mm, ember.ones(2, 3), ember.ones(2, 3))
    assert.truthy(msg:find("mm: [2,3] @ [2,3]: inner dimensions differ", 1, true), msg)
  end)

  it("0-d operands", function()
    local msg = errmsg(ember.matmul, ember.tensor(2.0), ember.ones(3))
    assert.truthy(msg:find("matmul: both arguments need at least 1 dimension", 1, true), msg)
  end)

  it("batch dims that do not broadcast", function()
    local msg = errmsg(ember.matmul, ember.ones(2, 3, 4), ember.ones(3, 4, 5))
    assert.truthy(msg:find("matmul: [2,3,4] @ [3,4,5]: batch dimensions [2] and [3] cannot be broadcast", 1, true), msg)
  end)

  it("wrong ranks for mm, bmm, dot, outer, addmm", function()
    local msg = errmsg(ember.mm, ember.ones(2, 3, 4), ember.ones(4, 5))
    assert.truthy(msg:find("mm: expected 2-D tensors, got [2,3,4] and [4,5]", 1, true), msg)
    msg = errmsg(ember.bmm, ember.ones(3, 4), ember.ones(4, 5))
    assert.truthy(msg:find("bmm: expected 3-D tensors", 1, true), msg)
    msg = errmsg(ember.bmm, ember.ones(2, 3, 4), ember.ones(3, 4, 5))
    assert.truthy(msg:find("bmm: [2,3,4] @ [3,4,5]: batch sizes differ (2 vs 3)", 1, true), msg)
    msg = errmsg(ember.dot, ember.ones(2, 2), ember.ones(4))
    assert.truthy(msg:find("dot: expected 1-D tensors", 1, true), msg)
    msg = errmsg(ember.dot, ember.ones(3), ember.ones(4))
    assert.truthy(msg:find("dot: [3] @ [4]: sizes differ (3 vs 4)", 1, true), msg)
    msg = errmsg(ember.outer, ember.ones(2, 2), ember.ones(4))
    assert.truthy(msg:find("outer: expected 1-D tensors", 1, true), msg)
    msg = errmsg(ember.addmm, ember.ones(3), ember.ones(2, 2), ember.ones(2, 2))
    assert.truthy(msg:find("addmm: input [3] cannot be broadcast to the product's shape [2,2]", 1, true), msg)
    msg = errmsg(ember.addmm, ember.ones(2, 2), ember.ones(2), ember.ones(2, 2))
    assert.truthy(msg:find("addmm: expected 2-D matrices", 1, true), msg)
  end)

  it("non-float dtypes", function()
    local b = ember.tensor({{true, false}, {false, true}})
    local msg = errmsg(ember.matmul, b, b)
    assert.truthy(msg:find("matmul: expected floating point tensors, got bool", 1, true), msg)
    msg = errmsg(ember.matmul, b, ember.ones(2, 2))
    assert.truthy(msg:find("matmul: expected floating point tensors, got bool and float32", 1, true), msg)
    local i = ember.tensor({{1, 2}, {3, 4}})
    msg = errmsg(ember.addmm, i, i, i)
    assert.truthy(msg:find("addmm: expected floating point tensors, got int64", 1, true), msg)
  end)

  it("non-tensor arguments", function()
    local msg = errmsg(ember.matmul, ember.ones(2, 2), 3)
    assert.truthy(msg:find("matmul: argument 2: expected a tensor, got number", 1, true), msg)
    msg = errmsg(function() return ember.ones(2, 2):mm({1, 2}) end)
    assert.truthy(msg:find("mm: argument 1: expected a tensor", 1, true), msg)
    msg = errmsg(ember.addmm, ember.ones(2, 2), ember.ones(2, 2), ember.ones(2, 2), 5)
    assert.truthy(msg:find("addmm: argument 4: expected an options table", 1, true), msg)
  end)
end)
