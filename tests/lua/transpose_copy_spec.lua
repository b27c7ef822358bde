-- transpose_copy_spec.lua — copies between a contiguous tensor and a view whose last two
-- dims are swapped (x:t():contiguous(), copy_ from or into a transposed view, an in-place
-- op on one), which the CPU backend does by blocks: every element checked against its index formula, for sizes
-- that are and are not multiples of the blocks, every element size, batches, offsets
-- and leading dims wider than the matrix.
local ember = require "ember"

-- x[i][j]... of arange(n):view(sizes) is its row-major position (0-based) as a number
local function arange_view(sizes, dtype)
  local n = 1
  for _, s in ipairs(sizes) do n = n * s end
  return ember.arange(0, n, {dtype = "int64"}):to(dtype):view(sizes)
end

-- every element of t (a 2-D or 3-D tensor) equals f(indices...), 1-based indices
local function check_all(t, f)
  local l = t:tolist()
  local bad = 0
  local function walk(v, idx)
    if type(v) ~= "table" then
      if v ~= f(table.unpack(idx)) then bad = bad + 1 end
      return
    end
    for i, w in ipairs(v) do
      idx[#idx + 1] = i
      walk(w, idx)
      idx[#idx] = nil
    end
  end
  walk(l, {})
  assert.are.equal(0, bad, "elements differing from the index formula")
end

describe("a transposed view copied into a contiguous tensor", function()
  for _, dtype in ipairs{"float32", "float64", "int64", "int32", "bfloat16", "float16", "uint8"} do
    it("holds every element, " .. dtype, function()
      for _, rc in ipairs{{16, 16}, {37, 53}, {64, 40}, {100, 17}, {15, 200}} do
        local r, c = rc[1], rc[2]
        local x = arange_view({r, c}, dtype)   -- x[i][j] = (i-1) c + (j-1)
        local y = x:t():contiguous()           -- y[j][i] = x[i][j]
        assert.is_true(y:is_contiguous())
        assert.are.same({c, r}, {y.shape[1], y.shape[2]})
        -- values up to 3400 are exact in bfloat16 only below 256: compare the dtype's own rounding
        local xr = x:tolist()
        check_all(y, function(j, i) return xr[i][j] end)
        if dtype ~= "bfloat16" and dtype ~= "float16" and dtype ~= "uint8" then
          check_all(y, function(j, i) return (i - 1) * c + (j - 1) end)
        end
      end
    end)
  end

  it("holds every element of a batch, of a narrowed source and of a source at an offset", function()
    local x = arange_view({3, 40, 50}, "float32")
    check_all(x:transpose(2, 3):contiguous(), function(b, j, i) return (b - 1) * 2000 + (i - 1) * 50 + (j - 1) end)
    -- the batch dim moved inwards: permute(2, 3, 1) of [40, 3, 50]
    local p = arange_view({40, 3, 50}, "float64"):permute(2, 3, 1)   -- p[b][k][i] = x0[i][b][k]
    check_all(p:contiguous(), function(b, k, i) return (i - 1) * 150 + (b - 1) * 50 + (k - 1) end)
    -- columns 5..104 of a [200, 300] matrix, transposed: the source's column stride is 1, its row stride 300
    local w = arange_view({200, 300}, "float32"):narrow(2, 5, 100):t()
    check_all(w:contiguous(), function(j, i) return (i - 1) * 300 + (j + 3) end)
    -- matrices 2..4 of a batch of 5
    local o = arange_view({5, 64, 48}, "int64"):transpose(2, 3):narrow(1, 2, 3)
    check_all(o:contiguous(), function(b, j, i) return b * 3072 + (i - 1) * 48 + (j - 1) end)
  end)

  it("is what copy_ writes, into contiguous and strided destinations", function()
    local x = arange_view({33, 65}, "float32")
    local d = ember.zeros(65, 33)
    d:copy_(x:t())
    check_all(d, function(j, i) return (i - 1) * 65 + (j - 1) end)
    local wide = ember.zeros(65, 40)
    wide:narrow(2, 1, 33):copy_(x:t())   -- a strided destination takes the general path
    check_all(wide:narrow(2, 1, 33), function(j, i) return (i - 1) * 65 + (j - 1) end)
    -- the mirror image: a contiguous source into a transposed destination
    local back = ember.zeros(33, 65)
    back:t():copy_(arange_view({65, 33}, "float32"))   -- back[i][j] = src[j][i] = (j-1) 33 + (i-1)
    check_all(back, function(i, j) return (j - 1) * 33 + (i - 1) end)
    local b3 = ember.zeros(2, 40, 30, {dtype = "float64"})
    b3:transpose(2, 3):copy_(arange_view({2, 30, 40}, "float64"))
    check_all(b3, function(b, i, j) return (b - 1) * 1200 + (j - 1) * 40 + (i - 1) end)
    -- an op in place on a transposed view writes its result back through it
    local cl = arange_view({40, 50}, "float32")
    cl:t():clamp_(100, 1000)
    check_all(cl, function(i, j) return math.min(math.max((i - 1) * 50 + (j - 1), 100), 1000) end)
    -- a float64 source into a float32 destination converts on the general path
    local c = ember.zeros(65, 33)
    c:copy_(arange_view({33, 65}, "float64"):t())
    check_all(c, function(j, i) return (i - 1) * 65 + (j - 1) end)
  end)
end)

-- An op reading a large transposed operand into a contiguous output copies that operand by
-- blocks first (engine/cpu/iter.c, worth_staging; 65536 elements and up). The values are
-- the op's on the elements the view names, checked against the index formula.
describe("an elementwise op on a large transposed operand", function()
  it("unary, binary with a contiguous or a second transposed operand, in place, batched", function()
    local x = arange_view({300, 256}, "float32")         -- x[i][j] = (i-1) 256 + (j-1)
    check_all(x:t():mul(2), function(j, i) return 2 * ((i - 1) * 256 + (j - 1)) end)
    check_all(x:t():neg(), function(j, i) return -((i - 1) * 256 + (j - 1)) end)
    local y = arange_view({256, 300}, "float32")          -- y[j][i] = (j-1) 300 + (i-1)
    check_all(x:t() + y, function(j, i) return (i - 1) * 256 + (j - 1) + (j - 1) * 300 + (i - 1) end)
    check_all(y - x:t(), function(j, i) return (j - 1) * 300 + (i - 1) - ((i - 1) * 256 + (j - 1)) end)
    local z = arange_view({300, 256}, "float32")
    check_all(x:t() * 0 + z:t(), function(j, i) return (i - 1) * 256 + (j - 1) end)
    local acc = ember.ones(256, 300)                       -- in place: acc += x^T
    acc:add_(x:t())
    check_all(acc, function(j, i) return 1 + (i - 1) * 256 + (j - 1) end)
    local b = arange_view({3, 200, 120}, "float64"):transpose(2, 3)   -- [3, 120, 200]
    check_all(b:add(1), function(k, j, i) return (k - 1) * 24000 + (i - 1) * 120 + (j - 1) + 1 end)
    local h = arange_view({300, 256}, "int64"):remainder(1024):to("float16")   -- exact in float16
    check_all(h:t():remainder(7), function(j, i) return ((i - 1) * 256 + (j - 1)) % 1024 % 7 end)
  end)

  it("x:add_(x:t()) adds the values from before the op (NumPy's answer for overlapping operands)", function()
    local x = arange_view({300, 300}, "float64")         -- x[i][j] = (i-1) 300 + (j-1)
    x:add_(x:t())
    check_all(x, function(i, j) return (i - 1) * 300 + (j - 1) + (j - 1) * 300 + (i - 1) end)
  end)
end)
