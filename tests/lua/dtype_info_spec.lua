-- dtype_info_spec.lua — ember.finfo / ember.iinfo / ember.inf, nan, pi, e (torch's), and
-- int64 values past 2^53 written exactly by the fills (full, full_like, new_full, fill_,
-- masked_fill, index_fill, scatter's value) and clamp's bounds, which had gone through a
-- double. Expected values: the printed figures of
-- PyTorch 2.15 (torch.finfo / torch.iinfo reprs, quoted), and for finfo also what the
-- engine's own conversions show (1 + eps is the next float after 1, max * (1 + eps)
-- overflows), so a wrong table entry fails twice.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

describe("ember.finfo and ember.iinfo", function()
  it("print as PyTorch 2.15's reprs", function()
    local want = {
      float32 = "finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=float32)",
      float64 = "finfo(resolution=1e-15, min=-1.79769e+308, max=1.79769e+308, eps=2.22045e-16, smallest_normal=2.22507e-308, tiny=2.22507e-308, dtype=float64)",
      float16 = "finfo(resolution=0.001, min=-65504, max=65504, eps=0.000976562, smallest_normal=6.10352e-05, tiny=6.10352e-05, dtype=float16)",
      bfloat16 = "finfo(resolution=0.01, min=-3.38953e+38, max=3.38953e+38, eps=0.0078125, smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=bfloat16)",
    }
    for d, text in pairs(want) do assert.are.equal(text, tostring(ember.finfo(d))) end
    assert.are.equal(want.float32, tostring(ember.finfo()))
    assert.are.equal("iinfo(min=-9.22337e+18, max=9.22337e+18, dtype=int64)", tostring(ember.iinfo("int64")))
    assert.are.equal("iinfo(min=-2.14748e+09, max=2.14748e+09, dtype=int32)", tostring(ember.iinfo("int32")))
    assert.are.equal("iinfo(min=0, max=255, dtype=uint8)", tostring(ember.iinfo("uint8")))
  end)

  it("hold PyTorch's figures to the last bit", function()
    -- repr() of each field in PyTorch 2.15
    local f = ember.finfo("float32")
    assert.are.equal(32, f.bits)
    assert.are.equal(1.1920928955078125e-07, f.eps)
    assert.are.equal(3.4028234663852886e+38, f.max)
    assert.are.equal(-3.4028234663852886e+38, f.min)
    assert.are.equal(1.1754943508222875e-38, f.tiny)
    assert.are.equal(f.tiny, f.smallest_normal)
    assert.are.equal("float32", f.dtype)
    f = ember.finfo("float64")
    assert.are.equal(2.220446049250313e-16, f.eps)
    assert.are.equal(1.7976931348623157e+308, f.max)
    assert.are.equal(2.2250738585072014e-308, f.tiny)
    f = ember.finfo("float16")
    assert.are.same({16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001}, {f.bits, f.eps, f.max, f.tiny, f.resolution})
    f = ember.finfo("bfloat16")
    assert.are.same({16, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38, 0.01},
                    {f.bits, f.eps, f.max, f.tiny, f.resolution})
    local i = ember.iinfo("int64")
    assert.are.same({64, math.mininteger, math.maxinteger, "int64"}, {i.bits, i.min, i.max, i.dtype})
    assert.is_true(math.type(i.max) == "integer")
    assert.are.same({32, -2147483648, 2147483647}, {ember.iinfo("int32").bits, ember.iinfo("int32").min, ember.iinfo("int32").max})
  end)

  it("agree with the engine's conversions", function()
    for _, d in ipairs({"float32", "float64", "float16", "bfloat16"}) do
      local f = ember.finfo(d)
      local function as(v) return ember.tensor({v}, {dtype = "float64"}):to(d):to("float64"):item() end
      assert.are.equal(1 + f.eps, as(1 + f.eps), d .. ": 1 + eps is a " .. d)
      assert.are.equal(1, as(1 + f.eps / 2), d .. ": half of eps rounds back to 1 (to even)")
      assert.are.equal(f.max, as(f.max), d .. ": max is a " .. d)
      assert.are.equal(math.huge, as(f.max * (1 + f.eps)), d .. ": past max overflows")
      assert.are.equal(f.tiny, as(f.tiny), d .. ": tiny is a " .. d)
    end
    local top = ember.tensor({ember.iinfo("int64").max})
    assert.are.equal(math.mininteger, (top + 1):item())      -- int64 wraps past max
    assert.are.equal(0, ember.tensor({ember.iinfo("uint8").max}, {dtype = "uint8"}):add(1):item())
  end)

  it("are read-only, and refuse the other kind of dtype, at the caller's line", function()
    local e = err(function() ember.finfo("float32").eps = 1 end)
    has(e, "finfo: its fields are read-only (assigned 'eps')", "dtype_info_spec.lua:")
    e = err(function() local _ = ember.finfo("int64") end)
    has(e, "ember.finfo: expected a float dtype, got int64 (ember.iinfo is for integer dtypes)", "dtype_info_spec.lua:")
    e = err(function() local _ = ember.iinfo("float16") end)
    has(e, "ember.iinfo: expected an integer dtype (int64, int32, int16, int8, uint8), got float16 (ember.finfo is for float dtypes)")
    has(err(function() local _ = ember.iinfo("bool") end), "got bool")
    has(err(function() local _ = ember.iinfo() end), "ember.iinfo: its argument must be a dtype name")
    has(err(function() local _ = ember.finfo("float") end), "ember.finfo: its argument must be a dtype name")
    has(err(function() local _ = ember.finfo(ember.ones(1)) end), "use ember.finfo(t.dtype)")
  end)

  it("finfo(dtype).min masks attention scores as PyTorch ports write it", function()
    local scores = ember.tensor({{1.0, 2.0}, {3.0, 4.0}}, {dtype = "float16"})
    local masked = scores:masked_fill(ember.tensor({{false, true}, {false, false}}), ember.finfo(scores.dtype).min)
    assert.are.same({{1, -65504}, {3, 4}}, masked:float():tolist())
    local p = masked:float():softmax(2)
    assert.are.equal(0, p[1][2]:item())
  end)
end)

describe("ember.inf, nan, pi, e", function()
  it("are torch's constants", function()
    assert.are.equal(math.huge, ember.inf)
    assert.is_true(ember.nan ~= ember.nan)
    assert.are.equal("nan", tostring(ember.nan))
    assert.are.equal(3.141592653589793, ember.pi)
    assert.are.equal(2.718281828459045, ember.e)
  end)
end)

describe("int64 values past 2^53 in the fills", function()
  -- 2^53 + 1 has no double; through one it would become 2^53
  local big = 9007199254740993

  it("full, full_like, new_full and fill_ write them exactly", function()
    assert.are.same({big, big}, ember.full({2}, big):tolist())
    assert.are.same({big}, ember.full({1}, big, {dtype = "int64"}):tolist())
    assert.are.same({math.maxinteger}, ember.full({1}, math.maxinteger):tolist())
    assert.are.same({math.mininteger}, ember.full({1}, math.mininteger):tolist())
    local z = ember.zeros(2, {dtype = "int64"})
    assert.are.same({-big, -big}, ember.full_like(z, -big):tolist())
    assert.are.same({{big}}, z:new_full({1, 1}, big):tolist())
    assert.are.same({big, big}, z:clone():fill_(big):tolist())
    -- float dtypes still round as a double does
    assert.are.equal(9007199254740992.0, ember.full({1}, big, {dtype = "float64"}):item())
  end)

  it("index_fill, scatter's value and clamp's bounds take them exactly, in place or not", function()
    local t = ember.zeros(2, 2, {dtype = "int64"})
    assert.are.same({{big, big}, {0, 0}}, t:index_fill(1, ember.tensor({1}), big):tolist())
    local u = t:clone()
    u:index_fill_(2, ember.tensor({2}), math.maxinteger)
    assert.are.same({{0, math.maxinteger}, {0, math.maxinteger}}, u:tolist())
    assert.are.same({{big, 0}, {0, big}}, t:scatter(1, ember.tensor({{1, 2}}), big):tolist())
    u = t:clone()
    u:scatter_(1, ember.tensor({{2, 1}}), math.mininteger)
    assert.are.same({{0, math.mininteger}, {math.mininteger, 0}}, u:tolist())
    assert.are.same({{big, big}}, ember.zeros(1, 2, {dtype = "int64"}):scatter(2, ember.tensor({{1, 2}}), big,
                                                                                  {reduce = "add"}):tolist())
    assert.are.same({{big, big}, {big, big}}, t:clamp(big):tolist())
    assert.are.same({{-big, -big}, {-big, -big}}, t:clamp(nil, -big):tolist())
    assert.are.same({big, 5}, ember.tensor({big + 2, 5}):clamp_max(big):tolist())
    assert.are.same({big, big + 2}, ember.tensor({5, big + 2}):clamp_min(big):tolist())
    u = t:clone()
    u:clamp_(big)
    assert.are.same({{big, big}, {big, big}}, u:tolist())
  end)

  it("masked_fill / masked_fill_ write iinfo's max and min exactly, with PyTorch's shape rules", function()
    local t = ember.tensor({{1, 2}, {3, 4}})
    local m = ember.tensor({true, false})
    assert.are.same({{math.maxinteger, 2}, {math.maxinteger, 4}}, t:masked_fill(m, ember.iinfo("int64").max):tolist())
    local u = t:clone()
    u:masked_fill_(m, ember.iinfo("int64").min)
    assert.are.same({{math.mininteger, 2}, {math.mininteger, 4}}, u:tolist())
    assert.are.same({{big, 2}, {big, 4}}, t:masked_fill(m, big):tolist())
    local e = err(function() t:masked_fill_(ember.ones(3, 2):bool(), big) end)
    has(e, "masked_fill_: shapes [2,2] and [3,2] cannot be broadcast", "dtype_info_spec.lua:")
  end)
end)
