-- tensor_spec.lua — the tensor userdata: creation, properties, views that
-- share memory, t[i] indexing, conversions and argument errors.
-- Expected values are written out by hand.
local ember = require "ember"

local errmsg = require("helpers").err

describe("creation", function()
  it("builds from nested tables with inferred dtype", function()
    local t = ember.tensor{{1, 2, 3}, {4, 5, 6}}
    assert.are.same({2, 3}, t.shape)
    assert.are.equal("int64", t.dtype)
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, t:tolist())
    assert.are.equal("float32", ember.tensor{1, 2.5}.dtype)
    assert.are.equal("bool", ember.tensor{true, false}.dtype)
    assert.are.same({true, false}, ember.tensor{true, false}:tolist())
  end)

  it("honours a dtype option and converts values", function()
    local t = ember.tensor({1.75, -2.5}, {dtype = "int32"})
    assert.are.equal("int32", t.dtype)
    assert.are.same({1, -2}, t:tolist())          -- truncation toward zero
    local h = ember.tensor({1.5, 2.25}, {dtype = ember.float16})
    assert.are.same({1.5, 2.25}, h:tolist())      -- exactly representable in half
    -- a value outside the dtype is refused, as torch.tensor refuses it; a cast wraps like a C cast
    local ok, e = pcall(ember.tensor, {255, 256, 257}, {dtype = "uint8"})
    assert.is_false(ok)
    assert.truthy(tostring(e):find("value 256 (element 2) cannot be converted to uint8 without overflow", 1, true))
    local u = ember.tensor({255, 256, 257}):to("uint8")
    assert.are.same({255, 0, 1}, u:tolist())
  end)

  it("makes 0-d tensors and empty tensors", function()
    local s = ember.tensor(3.5)
    assert.are.same({}, s.shape)
    assert.are.equal(3.5, s:item())
    assert.are.equal(3.5, s:tolist())
    local e = ember.tensor{}
    assert.are.same({0}, e.shape)
    assert.are.equal(0, e:numel())
    assert.are.same({0, 3}, ember.zeros(0, 3).shape)
  end)

  it("rejects ragged and non-numeric tables", function()
    assert.matches("ragged", errmsg(ember.tensor, {{1, 2}, {3}}))
    assert.matches("element %[2%]%[2%] is a string", errmsg(ember.tensor, {{1, 2}, {3, "a"}}))
    assert.matches("expected 2 elements at %[2%], got 1", errmsg(ember.tensor, {{1, 2}, {3}}))
    assert.matches("expected 2 elements at %[1%]%[2%], got 3", errmsg(ember.tensor, {{{1, 2}, {3, 4, 5}}}))
    assert.matches("element %[3%] is a table %(ragged nesting%)", errmsg(ember.tensor, {1, 2, {3}}))
    assert.matches("element %[1%]%[2%] is a boolean.*expected a table",
                   errmsg(ember.tensor, {{{1}, true}}))
    assert.matches("mixes booleans and numbers", errmsg(ember.tensor, {1, true}))
  end)

  it("zeros/ones/full/empty take sizes as numbers or a table", function()
    assert.are.same({{0, 0, 0}, {0, 0, 0}}, ember.zeros(2, 3):tolist())
    assert.are.same({{1, 1}}, ember.ones({1, 2}):tolist())
    assert.are.same({{7, 7}}, ember.full({1, 2}, 7):tolist())
    assert.are.equal("int64", ember.full({2}, 7).dtype)
    assert.are.equal("float32", ember.full({2}, 7.5).dtype)
    assert.are.equal("float64", ember.zeros(2, {dtype = "float64"}).dtype)
    assert.are.same({2, 3}, ember.empty(2, 3).shape)
  end)

  it("*_like copies shape, dtype and device", function()
    local t = ember.zeros(2, 3, {dtype = "int32"})
    local o = ember.ones_like(t)
    assert.are.same({2, 3}, o.shape)
    assert.are.equal("int32", o.dtype)
    assert.are.same({{5, 5, 5}, {5, 5, 5}}, ember.full_like(t, 5):tolist())
    assert.are.equal("float64", ember.zeros_like(t, {dtype = "float64"}).dtype)
  end)

  it("arange, linspace and eye", function()
    assert.are.same({0, 1, 2, 3, 4}, ember.arange(5):tolist())
    assert.are.equal("int64", ember.arange(5).dtype)
    assert.are.same({2, 4, 6}, ember.arange(2, 8, 2):tolist())
    assert.are.same({0, 0.25, 0.5, 0.75}, ember.arange(0, 1, 0.25):tolist())
    assert.are.same({5, 3, 1}, ember.arange(5, 0, -2):tolist())
    assert.are.same({0, 0.25, 0.5, 0.75, 1}, ember.linspace(0, 1, 5):tolist())
    assert.are.same({{1, 0, 0}, {0, 1, 0}}, ember.eye(2, 3):tolist())
    assert.matches("arange: step must be non%-zero", errmsg(ember.arange, 0, 1, 0))
    assert.matches("inconsistent signs", errmsg(ember.arange, 0, 5, -1))
  end)

  it("take requires_grad from every creation function", function()
    local rg = {requires_grad = true}
    local made = {
      ember.tensor(2.5, rg), ember.tensor({1.5}, rg), ember.linspace(0, 1, 3, rg), ember.eye(2, rg),
      ember.rand_like(ember.zeros(2), rg), ember.randn_like(ember.zeros(2), rg),
      ember.tensor(ember.ones(2), rg),
    }
    for i, t in ipairs(made) do
      assert.is_true(t.requires_grad, "creation " .. i)
      assert.is_true(t.is_leaf, "creation " .. i .. " is a leaf")
    end
    -- integer results cannot require grad, as in PyTorch
    assert.matches("ember.randint: .*floating point", errmsg(ember.randint, 5, {3}, rg))
    assert.matches("ember.randperm: .*floating point", errmsg(ember.randperm, 4, rg))
    assert.matches("ember.randint_like: .*floating point", errmsg(ember.randint_like, ember.zeros(2, {dtype = "int64"}), 5, rg))
    assert.is_false(ember.randperm(4).requires_grad)
  end)

  it("copies a tensor with ember.tensor: new storage, its options, no graph", function()
    local src = ember.tensor({1.0, 2.0}, {requires_grad = true})
    local y = src * 3
    local c = ember.tensor(y, {dtype = "float64", device = "cpu"})
    assert.are.equal("float64", c.dtype)
    assert.is_false(c.requires_grad)
    assert.is_true(c.is_leaf)
    assert.are.same({3, 6}, c:tolist())
    c[1] = 10
    assert.are.same({3, 6}, y:tolist())   -- a copy
    assert.matches("unknown device 'tpu'", errmsg(ember.tensor, src, {device = "tpu"}))
  end)

  it("names the argument and the expected type in errors", function()
    assert.are.equal("ember.zeros: argument 2: expected a number, got string",
      errmsg(ember.zeros, 2, "a"):match("ember%.zeros:.*"))
    assert.matches("ember.zeros: argument 1: expected an integer size", errmsg(ember.zeros, 2.5))
    assert.matches("negative dimension", errmsg(ember.zeros, -1, 2))
    assert.matches("unknown dtype 'float8'", errmsg(ember.zeros, 2, {dtype = "float8"}))
    assert.matches("unknown device 'tpu'", errmsg(ember.zeros, 2, {device = "tpu"}))
  end)
end)

describe("properties", function()
  it("shape, size, dim, numel, dtype, device, stride", function()
    local t = ember.zeros(2, 3, 4)
    assert.are.same({2, 3, 4}, t.shape)
    assert.are.same({2, 3, 4}, t:size())
    assert.are.equal(3, t:size(2))
    assert.are.equal(4, t:size(-1))
    assert.are.equal(3, t:dim())
    assert.are.equal(24, t:numel())
    assert.are.equal("float32", t.dtype)
    assert.are.equal("cpu", t.device)
    assert.are.same({12, 4, 1}, t:stride())
    assert.are.equal(2, #t)
    assert.matches("dimension 4 out of range", errmsg(t.size, t, 4))
    assert.matches("0%-d tensor has no length", errmsg(function() return #ember.tensor(1) end))
    -- a 0-d tensor has no dims to ask the size or stride of (as PyTorch)
    local s = ember.tensor(2.5)
    assert.are.same({}, s:size())
    assert.matches("size: argument 2: dim 1 out of range: the tensor is 0%-d", errmsg(s.size, s, 1))
    assert.matches("stride: argument 2: dim %-1 out of range: the tensor is 0%-d", errmsg(s.stride, s, -1))
  end)

  it("item needs exactly one element", function()
    assert.are.equal(5, ember.tensor{{5}}:item())
    assert.matches("item: a tensor with 2 elements %(%[2%]%)", errmsg(function() return ember.zeros(2):item() end))
  end)
end)

describe("ember.Size", function()
  it("t.shape and t:size() are a Size: indexable as a table, printed as torch prints", function()
    local t = ember.zeros(2, 3, 4)
    local s = t.shape
    assert.are.equal(ember.Size, getmetatable(s))
    assert.are.equal(ember.Size, getmetatable(t:size()))
    assert.are.equal("ember.Size({2, 3, 4})", tostring(s))
    assert.are.equal("ember.Size({2, 3, 4})", tostring(t:size()))
    assert.are.equal("ember.Size({})", tostring(ember.tensor(1.5).shape))
    assert.are.equal(2, s[1])
    assert.are.equal(4, s[3])
    assert.are.equal(3, #s)
    assert.is_nil(s[4])
    assert.is_nil(s[0])
    -- negative positions count from the end, as dims do
    assert.are.equal(4, s[-1])
    assert.are.equal(2, s[-3])
    assert.is_nil(s[-4])
    local seen = {}
    for i, v in ipairs(s) do seen[i] = v end
    assert.are.same({2, 3, 4}, seen)
    assert.are.same({2, 3, 4}, {table.unpack(s)})
    assert.are.equal("2x3x4", table.concat(s, "x"))
    assert.are.equal(3, t:size(2))   -- with a dim: an integer
    assert.are.equal("number", type(t:size(-1)))
  end)

  it("compares with == to a Size or a plain table of the same integers", function()
    local t = ember.zeros(2, 3)
    assert.is_true(t.shape == t.shape)
    assert.is_true(t.shape == t:size())
    assert.is_true(t.shape == ember.Size({2, 3}))
    assert.is_true(t.shape == ember.ones(2, 3).shape)
    assert.is_true(t.shape == {2, 3})
    assert.is_true({2, 3} == t.shape)
    assert.is_true(t.shape == {2.0, 3.0})
    assert.is_false(t.shape == {3, 2})
    assert.is_false(t.shape == {2, 3, 1})
    assert.is_false(t.shape == {2})
    assert.is_false(t.shape == ember.zeros(2, 3, 1).shape)
    assert.is_true(t.shape ~= {3, 2})
    assert.is_false(t.shape == 2)   -- Lua calls __eq between two tables only
    assert.is_false(t.shape == "ember.Size({2, 3})")
    assert.is_true(ember.tensor(1).shape == ember.Size())
    assert.is_true(ember.tensor(1).shape == {})
  end)

  it("ember.Size builds one; numel; a read is a new table", function()
    local s = ember.Size({5, 1, 2})
    assert.are.equal("ember.Size({5, 1, 2})", tostring(s))
    assert.are.equal(10, s:numel())
    assert.are.equal(1, ember.Size():numel())
    assert.are.equal(0, ember.Size({3, 0}):numel())
    assert.are.equal(24, ember.zeros(2, 3, 4).shape:numel())
    assert.is_true(ember.Size(ember.zeros(4).shape) == {4})
    assert.are.equal(ember.Size, getmetatable(ember.Size({})))
    local t = ember.zeros(2, 3)
    local a = t.shape
    a[1] = 7
    assert.are.same({2, 3}, t.shape)   -- changing a Size changes no tensor
    assert.is_false(rawequal(t.shape, t.shape))
  end)

  it("goes wherever a size table goes", function()
    local t = ember.arange(6):view(2, 3)
    local s = t.shape
    assert.are.same({2, 3}, ember.zeros(s).shape)
    assert.are.same({2, 3}, ember.ones(s, {dtype = "int64"}).shape)
    assert.are.same({2, 3}, ember.full(s, 7).shape)
    assert.are.same({2, 3}, ember.empty(s).shape)
    assert.are.same({2, 3}, ember.randn(s).shape)
    assert.are.same({2, 3}, ember.rand(s).shape)
    assert.are.same({3, 2}, t:view(ember.Size({3, 2})).shape)
    assert.are.same({6}, t:reshape(ember.Size({6})).shape)
    assert.are.same({2, 3}, ember.zeros(1, 3):expand(s).shape)
    assert.are.same({2, 3}, t:reshape(6):view(s).shape)
    assert.are.same({}, ember.zeros(ember.tensor(1).shape).shape)   -- a 0-d size
    assert.are.same({2, 3}, ember.tensor(s):tolist())   -- as a table of numbers
  end)

  it("rejects what is not a table of integers, naming the entry", function()
    assert.matches("ember.Size: expected a table of integers, got number", errmsg(ember.Size, 2, 3))
    assert.matches("ember.Size: expected a table of integers, got tensor", errmsg(ember.Size, ember.zeros(2)))
    assert.matches("ember.Size: entry 2 is not an integer %(got 2.5%)", errmsg(ember.Size, {1, 2.5}))
    assert.matches("ember.Size: entry 1 is not an integer %(got string%)", errmsg(ember.Size, {"a"}))
    assert.matches("ember.Size: 17 entries %(at most 16%)",
                   errmsg(ember.Size, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}))
    local s = ember.zeros(2).shape
    assert.matches("ember.Size:numel: expected a size as self, got no value: use s:numel%(%) %(a method call with ':'%)",
                   errmsg(function() return s.numel() end))
    s[1] = "x"
    assert.matches("ember.Size:numel: entry 1 is not an integer", errmsg(function() return s:numel() end))
  end)
end)

describe("a method called with '.'", function()
  it("says to use ':'", function()
    local x = ember.zeros(2, 3)
    assert.matches("size: argument 1: expected a tensor, got no value: use t:size%(%) %(a method call with ':'%)",
                   errmsg(function() return x.size() end))
    assert.matches("size: argument 1: expected a tensor, got number: use t:size%(%)",
                   errmsg(function() return x.size(1) end))
    assert.matches("view: argument 1: expected a tensor, got number: use t:view%(%)",
                   errmsg(function() return x.view(3, 2) end))
    assert.matches("numel: argument 1: expected a tensor, got no value: use t:numel%(%)",
                   errmsg(function() return x.numel() end))
  end)

  it("keeps the plain messages of a method call and of a closed tensor", function()
    local f = ember.Tensor.size
    local obj = {size = f}
    local msg = errmsg(function() return obj:size() end)
    assert.matches("size: self: expected a tensor, got table", msg)
    assert.is_nil(msg:find("use t:", 1, true))
    local closed
    do
      local t <close> = ember.zeros(2)
      closed = t
    end
    assert.matches("size: argument 1: the tensor was closed", errmsg(ember.Tensor.size, closed))
  end)
end)

describe("views share memory", function()
  it("diagonal with an offset: above, below, past the corner; writes reach the base", function()
    -- a = [[1 2 3 4] [5 6 7 8] [9 10 11 12]]
    local a = ember.arange(1, 13):view(3, 4)
    assert.are.same({1, 6, 11}, a:diagonal():tolist())
    assert.are.same({2, 7, 12}, a:diagonal(1):tolist())
    assert.are.same({4}, a:diagonal(3):tolist())
    assert.are.same({5, 10}, a:diagonal(-1):tolist())
    assert.are.same({9}, a:diagonal(-2):tolist())
    assert.are.same({}, a:diagonal(4):tolist())
    assert.are.same({}, a:diagonal(-3):tolist())
    a:diagonal(1):fill_(0)
    assert.are.same({{1, 0, 3, 4}, {5, 6, 0, 8}, {9, 10, 11, 0}}, a:tolist())
  end)

  local function base() return ember.arange(12):view(3, 4) end

  it("view / reshape", function()
    local t = base()
    local v = t:view(4, 3)
    v[1][1] = 100
    assert.are.equal(100, t[1][1]:item())
    assert.are.same({2, 6}, t:view(2, -1).shape)
    assert.matches("view: shape %[5%] is invalid for a tensor of 12 elements", errmsg(t.view, t, 5))
    -- a transposed tensor cannot be viewed flat; reshape copies
    local tt = t:t()
    assert.matches("view: size %[12%] is not compatible", errmsg(tt.view, tt, 12))
    local r = tt:reshape(12)
    assert.are.same({100, 4, 8, 1}, {r[1]:item(), r[2]:item(), r[3]:item(), r[4]:item()})
    assert.is_false(r:is_view_of(t))
    assert.is_true(t:reshape(2, 6):is_view_of(t))
    -- is_set_to: the same storage, offset, sizes and strides, not just shared storage
    assert.is_true(t:view(t.shape):is_set_to(t))
    assert.is_false(t:reshape(2, 6):is_set_to(t))
    assert.is_false(t:narrow(1, 2, 1):is_set_to(t:narrow(1, 1, 1)))
    assert.is_false(t:clone():is_set_to(t))
    assert.is_false(t:t():is_set_to(t))
    assert.has_error(function() t:is_set_to(3) end)
  end)

  it("transpose / t / permute", function()
    local t = base()
    local tr = t:t()
    assert.are.same({4, 3}, tr.shape)
    assert.are.same({1, 4}, tr:stride())
    assert.is_false(tr:is_contiguous())
    tr[2][3] = -1                       -- t[3][2]
    assert.are.equal(-1, t[3][2]:item())
    local p = ember.zeros(2, 3, 4):permute(3, 1, 2)
    assert.are.same({4, 2, 3}, p.shape)
    assert.are.same({1, 12, 4}, p:stride())
    assert.matches("permute: dimension 1 repeated", errmsg(function() return ember.zeros(2, 3):permute(1, 1) end))
    assert.matches("t: expected a tensor with at most 2 dimensions", errmsg(function() return ember.zeros(2, 2, 2):t() end))
  end)

  it("narrow / select / slice with a step", function()
    local t = base()
    assert.are.same({{1, 2}, {5, 6}, {9, 10}}, t:narrow(2, 2, 2):tolist())
    assert.are.same({4, 5, 6, 7}, t:select(1, 2):tolist())
    assert.are.same({3, 7, 11}, t:select(2, -1):tolist())
    local s = t:slice(2, 1, 4, 2)       -- columns 1 and 3 (inclusive stop)
    assert.are.same({{0, 2}, {4, 6}, {8, 10}}, s:tolist())
    s:fill_(0)
    assert.are.same({0, 1, 0, 3}, t[1]:tolist())
    assert.matches("narrow: start 5", errmsg(t.narrow, t, 2, 5, 1))
    assert.matches("select: index 4 out of range for dimension 1 of size 3", errmsg(t.select, t, 1, 4))
  end)

  it("expand, squeeze, unsqueeze, flatten, unfold", function()
    local c = ember.tensor{{1}, {2}}
    local e = c:expand(2, 3)
    assert.are.same({{1, 1, 1}, {2, 2, 2}}, e:tolist())
    assert.are.same({1, 0}, e:stride())
    assert.are.same({{1, 1, 1}, {2, 2, 2}}, c:expand(-1, 3):tolist())
    assert.matches("expand: cannot expand %[2,1%] to %[3,3%]", errmsg(c.expand, c, 3, 3))
    assert.are.same({2}, c:squeeze().shape)
    assert.are.same({2, 1}, c:squeeze(1).shape)
    assert.are.same({1, 2, 1}, c:unsqueeze(1).shape)
    assert.are.same({2, 1, 1}, c:unsqueeze(-1).shape)
    assert.are.same({24}, ember.zeros(2, 3, 4):flatten().shape)
    assert.are.same({2, 12}, ember.zeros(2, 3, 4):flatten(2).shape)
    local u = ember.arange(6):unfold(1, 2, 2)
    assert.are.same({{0, 1}, {2, 3}, {4, 5}}, u:tolist())
  end)

  it("contiguous, clone and copy_", function()
    local t = base()
    local tr = t:t()
    local c = tr:contiguous()
    assert.is_true(c:is_contiguous())
    assert.are.same(tr:tolist(), c:tolist())
    assert.is_true(t:contiguous():is_view_of(t))   -- no copy when already contiguous
    local k = t:clone()
    k[1][1] = 42
    assert.are.equal(0, t[1][1]:item())
    local dst = ember.zeros(2, 3)
    dst:copy_(ember.tensor{1, 2, 3})               -- broadcasts and casts int64 -> float32
    assert.are.same({{1, 2, 3}, {1, 2, 3}}, dst:tolist())
    assert.matches("copy_: source %[2%] cannot be broadcast to destination %[2,3%]",
      errmsg(dst.copy_, dst, ember.zeros(2)))
  end)
end)

describe("indexing", function()
  it("t[i] selects, t[i][j] reads and writes elements", function()
    local t = ember.tensor{{1, 2, 3}, {4, 5, 6}}
    assert.are.same({4, 5, 6}, t[2]:tolist())
    assert.are.equal(6, t[2][3]:item())
    assert.are.equal(6, t[-1][-1]:item())
    t[1][2] = 20
    assert.are.equal(20, t[1][2]:item())
    t[2] = 0                                        -- fills the row
    assert.are.same({{1, 20, 3}, {0, 0, 0}}, t:tolist())
    t[2] = ember.tensor{7, 8, 9}
    assert.are.same({7, 8, 9}, t[2]:tolist())
    assert.matches("index 3 out of range for dimension 1 of size 2", errmsg(function() return t[3] end))
    assert.matches("index must be an integer", errmsg(function() return t[1.5] end))
  end)

  it("t[{...}] takes integers and inclusive ranges with a step", function()
    local t = ember.arange(12):view(3, 4)
    assert.are.equal(6, t[{2, 3}]:item())
    assert.are.same({{1, 2}, {5, 6}}, t[{{1, 2}, {2, 3}}]:tolist())
    assert.are.same({{0, 2}, {8, 10}}, t[{{1, 3, 2}, {1, 4, 2}}]:tolist())
    assert.are.same({3, 7, 11}, t[{{}, -1}]:tolist())
    t[{{}, 1}] = -1
    assert.are.same({-1, -1, -1}, t[{{}, 1}]:tolist())
    assert.matches("3 indices for a tensor of 2 dimensions", errmsg(function() return t[{1, 1, 1}] end))
  end)

  it("bool masks and index tensors", function()
    local t = ember.tensor{1, 2, 3, 4}
    local m = ember.tensor{true, false, true, false}
    assert.are.same({1, 3}, t[m]:tolist())
    t[m] = 0
    assert.are.same({0, 2, 0, 4}, t:tolist())
    assert.are.same({4, 2}, t[ember.tensor{4, 2}]:tolist())
  end)
end)

describe("conversions", function()
  it("to(dtype), float(), long(), type()", function()
    local t = ember.tensor{1.5, -2.5}
    assert.are.equal("float64", t:to("float64").dtype)
    assert.are.same({1, -2}, t:long():tolist())
    assert.are.same({true, true}, t:bool():tolist())
    assert.are.equal("float32", t:type())
    assert.are.equal("int32", t:type("int32").dtype)
    assert.are.equal("float64", t:to{dtype = "float64"}.dtype)
    assert.matches("'gpu' is neither a dtype nor a device", errmsg(t.to, t, "gpu"))
  end)

  it("CUDA requests fail clearly on a machine without a GPU", function()
    local ok, why = ember.cuda.is_available()
    if ok then return end                          -- a GPU machine: covered by tests/gpu
    assert.is_false(ok)
    assert.is_string(why)
    assert.matches("no CUDA device", errmsg(ember.zeros, 2, {device = "cuda"}))
    assert.matches("no CUDA device", errmsg(function() return ember.zeros(2):cuda() end))
  end)
end)

describe("memory", function()
  it("<close> releases at once and a closed tensor errors clearly", function()
    local keep
    do
      local t <close> = ember.zeros(4)
      keep = t
    end
    assert.matches("closed", errmsg(function() return keep:numel() end))
  end)

  it("garbage collection frees large tensors under pressure", function()
    -- 200 x 16 MB would be 3.2 GB if nothing were collected
    for _ = 1, 200 do local _ = ember.zeros(4 * 1024 * 1024) end
    collectgarbage()
  end)
end)
