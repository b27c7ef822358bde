-- strict_args_tensor_spec.lua — the functions of lua/tensor.c (creation, views,
-- access, conversions) refuse what they do not read: a positional argument past
-- the ones they take, and an option they do not know, are errors naming the op at
-- the caller's line, never dropped (x:t(1), ember.linspace(0, 1, 5, "float64")).
-- The factories take PyTorch's out=; the values expected there are worked by hand.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

local THIS = "strict_args_tensor_spec.lua:"

-- asserts that f() raises at a line of this file, the message starting with the op's
-- name ("strict_args_tensor_spec.lua:12: op: ...") and holding `want`
local function refuses(op, f, want)
  local e = err(f)
  has(e, op .. ":")
  has(e, THIS)
  assert.is_truthy(e:find(THIS .. "%d+: " .. op:gsub("%p", "%%%0") .. ": "), e)
  has(e, want)
end

local EXTRA = "one argument too many"
local BOGUS = "unknown option 'bogus'"

local function x23() return ember.arange(6, {dtype = "float32"}):view(2, 3) end

-- {op, call with one positional argument too many, call with {bogus = 1}}; each
-- call is a function of this file, so the error points here. The methods' rows.
local method_rows = {
  {"size", function(x) return x:size(1, 2) end, function(x) return x:size(1, {bogus = 1}) end},
  {"stride", function(x) return x:stride(1, 2) end, function(x) return x:stride(1, {bogus = 1}) end},
  {"dim", function(x) return x:dim(1) end, function(x) return x:dim({bogus = 1}) end},
  {"numel", function(x) return x:numel(1) end, function(x) return x:numel({bogus = 1}) end},
  {"numel", function(x) return x:nelement(1) end, function(x) return x:nelement({bogus = 1}) end},
  {"element_size", function(x) return x:element_size(1) end, function(x) return x:element_size({bogus = 1}) end},
  {"storage_offset", function(x) return x:storage_offset(1) end, function(x) return x:storage_offset({bogus = 1}) end},
  {"is_contiguous", function(x) return x:is_contiguous(1) end, function(x) return x:is_contiguous({bogus = 1}) end},
  {"is_floating_point", function(x) return x:is_floating_point(1) end,
   function(x) return x:is_floating_point({bogus = 1}) end},
  {"is_view_of", function(x) return x:is_view_of(x, 1) end, function(x) return x:is_view_of(x, {bogus = 1}) end},
  {"is_set_to", function(x) return x:is_set_to(x, 1) end, function(x) return x:is_set_to(x, {bogus = 1}) end},
  {"item", function(x) return x[1][1]:item(1) end, function(x) return x[1][1]:item({bogus = 1}) end},
  {"tolist", function(x) return x:tolist(1) end, function(x) return x:tolist({bogus = 1}) end},
  {"view", function(x) return x:view({3, 2}, 1) end, function(x) return x:view(3, 2, {bogus = 1}) end,
   "unexpected argument after a size table"},
  {"view", function(x) return x:view(x:t(), 1) end, function(x) return x:view(x:t(), {bogus = 1}) end},
  {"view_as", function(x) return x:view_as(x, 1) end, function(x) return x:view_as(x, {bogus = 1}) end},
  {"reshape", function(x) return x:reshape({3, 2}, 1) end, function(x) return x:reshape({3, 2}, {bogus = 1}) end,
   "unexpected argument after a size table"},
  {"reshape_as", function(x) return x:reshape_as(x, 1) end, function(x) return x:reshape_as(x, {bogus = 1}) end},
  {"t", function(x) return x:t(1) end, function(x) return x:t({bogus = 1}) end},
  {"transpose", function(x) return x:transpose(1, 2, 1) end, function(x) return x:transpose(1, 2, {bogus = 1}) end},
  {"permute", function(x) return x:permute({2, 1}, 1) end, function(x) return x:permute({2, 1}, {bogus = 1}) end},
  {"narrow", function(x) return x:narrow(2, 1, 2, 1) end, function(x) return x:narrow(2, 1, 2, {bogus = 1}) end},
  {"select", function(x) return x:select(1, 1, 1) end, function(x) return x:select(1, 1, {bogus = 1}) end},
  {"slice", function(x) return x:slice(2, 1, 2, 1, 1) end, function(x) return x:slice(2, 1, 2, 1, {bogus = 1}) end},
  {"expand", function(x) return x:expand({2, 3}, 1) end, function(x) return x:expand(2, 3, {bogus = 1}) end,
   "unexpected argument after a size table"},
  {"expand_as", function(x) return x:expand_as(x, 1) end, function(x) return x:expand_as(x, {bogus = 1}) end},
  {"squeeze", function(x) return x:squeeze(1, 1) end,
   function(x) return x:squeeze(1, {bogus = 1}) end, "too many positional arguments"},
  {"unsqueeze", function(x) return x:unsqueeze(1, 1) end,
   function(x) return x:unsqueeze(1, {bogus = 1}) end, "too many positional arguments"},
  {"flatten", function(x) return x:flatten(1, 2, 1) end,
   function(x) return x:flatten(1, 2, {bogus = 1}) end, "too many positional arguments"},
  {"unfold", function(x) return x:unfold(2, 2, 1, 1) end, function(x) return x:unfold(2, 2, 1, {bogus = 1}) end},
  {"t_", function(x) return x:t_(1) end, function(x) return x:t_({bogus = 1}) end},
  {"transpose_", function(x) return x:transpose_(1, 2, 1) end, function(x) return x:transpose_(1, 2, {bogus = 1}) end},
  {"transpose_", function(x) return x:swapaxes_(1, 2, 1) end, function(x) return x:swapaxes_(1, 2, {bogus = 1}) end},
  {"transpose_", function(x) return x:swapdims_(1, 2, 1) end, function(x) return x:swapdims_(1, 2, {bogus = 1}) end},
  {"squeeze_", function(x) return x:squeeze_(1, 1) end, function(x) return x:squeeze_(1, {bogus = 1}) end},
  {"unsqueeze_", function(x) return x:unsqueeze_(1, 1) end, function(x) return x:unsqueeze_(1, {bogus = 1}) end},
  {"contiguous", function(x) return x:contiguous(1) end, function(x) return x:contiguous({bogus = 1}) end},
  {"clone", function(x) return x:clone(1) end, function(x) return x:clone({bogus = 1}) end},
  {"copy_", function(x) return x:copy_(x, true, 1) end, function(x) return x:copy_(x, {bogus = 1}) end,
   "too many positional arguments (at most 1 after the required ones: non_blocking)"},
  {"fill_", function(x) return x:fill_(1, 1) end, function(x) return x:fill_(1, {bogus = 1}) end},
  {"zero_", function(x) return x:zero_(1) end, function(x) return x:zero_({bogus = 1}) end},
  {"to", function(x) return x:to(x, 1) end, function(x) return x:to(x, {bogus = 1}) end},
  {"to", function(x) return x:to({dtype = "float64"}, 1) end, function(x) return x:to("float64", {bogus = 1}) end},
  {"type", function(x) return x:type("float64", 1) end, function(x) return x:type("float64", {bogus = 1}) end},
  {"float", function(x) return x:float(1) end, function(x) return x:float({bogus = 1}) end},
  {"double", function(x) return x:double(1) end, function(x) return x:double({bogus = 1}) end},
  {"long", function(x) return x:long(1) end, function(x) return x:long({bogus = 1}) end},
  {"int", function(x) return x:int(1) end, function(x) return x:int({bogus = 1}) end},
  {"bool", function(x) return x:bool(1) end, function(x) return x:bool({bogus = 1}) end},
  {"byte", function(x) return x:byte(1) end, function(x) return x:byte({bogus = 1}) end},
  {"half", function(x) return x:half(1) end, function(x) return x:half({bogus = 1}) end},
  {"bfloat16", function(x) return x:bfloat16(1) end, function(x) return x:bfloat16({bogus = 1}) end},
  {"cpu", function(x) return x:cpu(1) end, function(x) return x:cpu({bogus = 1}) end},
  -- refused before any device is needed, so these run without a GPU too
  {"cuda", function(x) return x:cuda(0, true, 1) end, function(x) return x:cuda(0, {bogus = 1}) end,
   "too many positional arguments (at most 2 after the required ones: device, non_blocking)"},
}

-- the module functions' rows: the same, called with nothing bound
local function_rows = {
  {"ember.tensor", function() return ember.tensor({1, 2}, {}, 1) end,
   function() return ember.tensor({1, 2}, {bogus = 1}) end},
  {"ember.tensor", function() return ember.tensor({1, 2}, "float64") end,
   function() return ember.tensor(ember.ones(2), {pin_memory = true}) end, nil, "unknown option 'pin_memory'"},
  {"ember.zeros", function() return ember.zeros({2}, 1) end, function() return ember.zeros(2, {bogus = 1}) end,
   "unexpected argument after a size table"},
  {"ember.zeros", function() return ember.zeros({2}, 1) end,
   function() return ember.zeros(2, {out = ember.zeros(2), bogus = 1}) end, "unexpected argument after a size table"},
  {"ember.ones", function() return ember.ones({2}, 1) end, function() return ember.ones(2, {bogus = 1}) end,
   "unexpected argument after a size table"},
  {"ember.empty", function() return ember.empty({2}, 1) end, function() return ember.empty(2, {bogus = 1}) end,
   "unexpected argument after a size table"},
  {"ember.full", function() return ember.full({2}, 1, 1) end, function() return ember.full({2}, 1, {bogus = 1}) end},
  {"ember.zeros_like", function() return ember.zeros_like(x23(), "float64") end,
   function() return ember.zeros_like(x23(), {bogus = 1}) end},
  {"ember.ones_like", function() return ember.ones_like(x23(), 1) end,
   function() return ember.ones_like(x23(), {bogus = 1}) end},
  {"ember.empty_like", function() return ember.empty_like(x23(), 1) end,
   function() return ember.empty_like(x23(), {memory_format = "x", bogus = 1}) end, nil, "unknown option"},
  {"ember.full_like", function() return ember.full_like(x23(), 1, 1) end,
   function() return ember.full_like(x23(), 1, {bogus = 1}) end},
  {"ember.arange", function() return ember.arange(0, 4, 1, 1) end, function() return ember.arange(4, {bogus = 1}) end,
   "expected (end), (start, end) or (start, end, step), got 4 numbers"},
  {"ember.linspace", function() return ember.linspace(0, 1, 5, "float64") end,
   function() return ember.linspace(0, 1, 5, {bogus = 1}) end},
  {"ember.eye", function() return ember.eye(2, 3, 1) end, function() return ember.eye(2, {bogus = 1}) end},
  {"ember.eye", function() return ember.eye(2, nil, 1) end, function() return ember.eye(2, 3, {bogus = 1}) end},
  {"ember.is_tensor", function() return ember.is_tensor(1, 2) end, function() return ember.is_tensor(1, {bogus = 1}) end},
  {"ember.set_default_dtype", function() return ember.set_default_dtype("float32", 1) end,
   function() return ember.set_default_dtype("float32", {bogus = 1}) end},
  {"ember.get_default_dtype", function() return ember.get_default_dtype(1) end,
   function() return ember.get_default_dtype({bogus = 1}) end},
  {"ember.set_default_device", function() return ember.set_default_device("cpu", 1) end,
   function() return ember.set_default_device("cpu", {bogus = 1}) end},
  {"ember.get_default_device", function() return ember.get_default_device(1) end,
   function() return ember.get_default_device({bogus = 1}) end},
  {"ember.get_num_threads", function() return ember.get_num_threads(1) end,
   function() return ember.get_num_threads({bogus = 1}) end},
  {"ember.set_num_threads", function() return ember.set_num_threads(ember.get_num_threads(), 1) end,
   function() return ember.set_num_threads(ember.get_num_threads(), {bogus = 1}) end},
  {"ember.set_printoptions", function() return ember._printoptions(4, 1000, 3, 80, nil, 1) end,
   function() return ember._printoptions(4, 1000, 3, 80, nil, {bogus = 1}) end},
  {"reshape", function() return ember.reshape(x23(), {6}, 1) end, function() return ember.reshape(x23(), 6, {bogus = 1}) end,
   "unexpected argument after a size table"},
  {"transpose", function() return ember.transpose(x23(), 1, 2, 1) end,
   function() return ember.transpose(x23(), 1, 2, {bogus = 1}) end},
  {"permute", function() return ember.permute(x23(), {2, 1}, 1) end,
   function() return ember.permute(x23(), {2, 1}, {bogus = 1}) end},
  {"narrow", function() return ember.narrow(x23(), 1, 1, 1, 1) end,
   function() return ember.narrow(x23(), 1, 1, 1, {bogus = 1}) end},
  {"select", function() return ember.select(x23(), 1, 1, 1) end,
   function() return ember.select(x23(), 1, 1, {bogus = 1}) end},
  {"squeeze", function() return ember.squeeze(x23(), 1, 1) end,
   function() return ember.squeeze(x23(), nil, {bogus = 1}) end, "too many positional arguments"},
  {"unsqueeze", function() return ember.unsqueeze(x23(), 1, 1) end,
   function() return ember.unsqueeze(x23(), 1, {bogus = 1}) end, "too many positional arguments"},
  {"flatten", function() return ember.flatten(x23(), 1, 2, 1) end,
   function() return ember.flatten(x23(), 1, 2, {bogus = 1}) end, "too many positional arguments"},
  {"t", function() return ember.t(x23(), 1) end, function() return ember.t(x23(), {bogus = 1}) end},
  {"clone", function() return ember.clone(x23(), 1) end, function() return ember.clone(x23(), {bogus = 1}) end},
  {"numel", function() return ember.numel(x23(), 1) end, function() return ember.numel(x23(), {bogus = 1}) end},
  {"ember.Size", function() return ember.Size({2, 3}, 1) end, function() return ember.Size({2, 3}, {bogus = 1}) end,
   nil, "one argument too many (a table)"},
  {"ember.Size:numel", function() return ember.Size({2, 3}):numel(1) end,
   function() return ember.Size({2, 3}):numel({bogus = 1}) end, nil, "one argument too many (a table)"},
}

describe("lua/tensor.c's functions refuse what they do not read", function()
  it("as tensor methods: an extra positional argument and an unknown option, at the caller's line", function()
    for _, row in ipairs(method_rows) do
      local op, extra, bogus, want_extra, want_bogus = row[1], row[2], row[3], row[4], row[5]
      local x = x23()
      refuses(op, function() return extra(x) end, want_extra or EXTRA)
      refuses(op, function() return bogus(x) end, want_bogus or BOGUS)
      -- nothing was changed by a refused in-place call
      assert.are.same({{0, 1, 2}, {3, 4, 5}}, x:tolist())
    end
  end)

  it("as module functions: the same", function()
    for _, row in ipairs(function_rows) do
      local op, extra, bogus, want_extra, want_bogus = row[1], row[2], row[3], row[4], row[5]
      refuses(op, extra, want_extra or EXTRA)
      refuses(op, bogus, want_bogus or BOGUS)
    end
    -- the refused setters set nothing
    assert.are.equal("float32", ember.get_default_dtype())
    assert.are.equal("cpu", ember.get_default_device())
  end)

  it("name the argument as the caller counts it", function()
    local x = x23()
    local e = err(function() return x:t(1) end)
    has(e, "t: argument 1: one argument too many (a number)")
    e = err(function() return ember.t(x, 1) end)
    has(e, "t: argument 2: one argument too many (a number)")
    e = err(function() return x:narrow(2, 1, 2, "x") end)
    has(e, "narrow: argument 4: one argument too many (a string)")
    e = err(function() return ember.linspace(0, 1, 5, "float64") end)
    has(e, "ember.linspace: argument 4: one argument too many (a string); the keyword arguments "
           .. "(dtype, device, requires_grad, out) go in a trailing options table")
    e = err(function() return ember.zeros_like(x, {layout = "strided"}) end)
    has(e, "ember.zeros_like: unknown option 'layout'")
  end)

  it("to: one dtype and one device at most, the options table last, only dtype and device in it", function()
    local x = x23()
    local e = err(function() return x:to("float64", "float32") end)
    has(e, "to: argument 2: a second dtype")
    has(e, THIS)
    e = err(function() return x:to("cpu", "float64", "cpu") end)
    has(e, "to: argument 3: a second device")
    e = err(function() return x:to("float64", {dtype = "float32"}) end)
    has(e, "to: argument 2: a second dtype")
    e = err(function() return x:to("cpu", {device = "cpu"}) end)
    has(e, "to: argument 2: a second device")
    e = err(function() return x:to({dtype = "float64"}, "cpu") end)
    has(e, "to: argument 2: one argument too many (a string)")
    e = err(function() return x:to({dtype = "float64", memory_format = false}) end)
    has(e, "to: unknown option 'memory_format'")
    -- PyTorch's non_blocking and copy: booleans, by position or as keywords
    has(err(function() return x:to("float64", {non_blocking = 1}) end), "non_blocking must be a boolean")
    has(err(function() return x:to("cpu", true, true, false) end), "to: argument 4: a third boolean")
    has(err(function() return x:to("cpu", false, true, {copy = true}) end), "copy given twice")
    assert.are.equal("float64", x:to("float64", {non_blocking = true}).dtype)
    local same = x:to("float32", true)   -- nothing to change: x itself (writes show through)
    same:add_(1)
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, x:tolist())
    for _, c in ipairs({x:to("float32", false, true), x:to({copy = true}), x:to(x, {copy = true})}) do
      c:add_(10)   -- a new tensor: x keeps its values
      assert.are.same({{1, 2, 3}, {4, 5, 6}}, x:tolist())
      assert.are.same({{11, 12, 13}, {14, 15, 16}}, c:tolist())
    end
    -- the messages the rest of the library asserts are kept
    e = err(function() return x:to("gpu") end)
    has(e, "to: argument 1: 'gpu' is neither a dtype nor a device")
    e = err(function() return x:to(5) end)
    has(e, "to: argument 1: expected a dtype, a device or an options table, got number")
  end)
end)

describe("lua/tensor.c's functions still take what they read", function()
  it("trailing nils, empty options tables and the keywords they take", function()
    local x = x23()
    assert.are.equal(3, x:size(2, nil))
    assert.are.same({3, 1}, x:stride(nil, nil))
    assert.are.equal(2, x:dim(nil))
    assert.are.equal(6, x:numel({}))
    assert.are.same({{0, 3}, {1, 4}, {2, 5}}, x:t(nil):tolist())
    assert.are.same({{0, 1}, {2, 3}, {4, 5}}, x:view(3, 2, {}):tolist())
    assert.are.same({0, 1, 2, 3, 4, 5}, x:reshape({6}):tolist())
    assert.are.same({{1, 2}, {4, 5}}, x:narrow(2, 2, 2, nil):tolist())
    assert.are.same({3, 4, 5}, x:select(1, 2, nil):tolist())
    assert.are.same({{0, 2}, {3, 5}}, x:slice(2, 1, 3, 2, nil):tolist())
    assert.are.same({0, 1, 2, 3, 4, 5}, x:flatten(nil, nil, nil):tolist())
    assert.are.same({{0, 3}, {1, 4}, {2, 5}}, ember.permute(x, 2, 1):tolist())
    assert.are.same({1, 2, 3}, ember.squeeze(x:narrow(1, 1, 1) + 1, nil):tolist())
    assert.are.equal("float64", x:to("cpu", "float64", nil).dtype)
    assert.are.equal("float64", x:to("float64", "cpu").dtype)
    assert.are.equal("float64", x:to({dtype = "float64", device = "cpu"}).dtype)
    assert.are.equal("float64", x:to("cpu", {dtype = "float64"}).dtype)
    assert.are.equal("int64", x:to(ember.zeros(1, {dtype = "int64"}), nil).dtype)
    assert.are.equal("float32", x:type(nil))
    assert.are.equal("int32", x:type("int32", nil).dtype)
    local c = x:clone({})
    assert.are.same({{0, 1, 2}, {3, 4, 5}}, c:copy_(x, nil):tolist())
    assert.are.same({{7, 7, 7}, {7, 7, 7}}, c:fill_(7, nil):tolist())
    assert.are.same({{0, 0, 0}, {0, 0, 0}}, c:zero_(nil):tolist())
  end)

  it("the creation functions with their options and trailing nils", function()
    local x = x23()
    local t = ember.tensor({1, 2}, nil)
    assert.are.equal("int64", t.dtype)
    t = ember.tensor({1, 2}, {dtype = "float64", device = "cpu", requires_grad = true})
    assert.is_true(t.requires_grad)
    assert.are.same({1, 2}, ember.tensor(ember.tensor({1, 2}), {dtype = "int32"}):tolist())
    assert.are.same({7, 7}, ember.full({2}, 7, nil):tolist())
    assert.are.equal("float64", ember.full({2}, 7, {dtype = "float64", requires_grad = true}).dtype)
    assert.are.equal("int64", ember.zeros_like(x, {dtype = "int64", device = "cpu"}).dtype)
    assert.are.same({{1, 1, 1}, {1, 1, 1}}, ember.ones_like(x, nil):tolist())
    assert.are.same({2, 3}, ember.empty_like(x, {}).shape)
    assert.are.same({{2, 2, 2}, {2, 2, 2}}, ember.full_like(x, 2, nil):tolist())
    assert.are.same({0, 1, 2}, ember.arange(0, 3, nil):tolist())
    assert.are.same({0, 2}, ember.arange(0, 3, 2, nil, {dtype = "int32"}):tolist())
    assert.are.same({0, 0.5, 1}, ember.linspace(0, 1, 3, nil):tolist())
    assert.are.same({{1, 0}, {0, 1}}, ember.eye(2, nil, {dtype = "int64"}):tolist())
    assert.are.same({{1, 0, 0}, {0, 1, 0}}, ember.eye(2, 3, nil):tolist())
    assert.are.same({{1, 0}, {0, 1}}, ember.eye(2, {dtype = "int64"}):tolist())
    assert.are.same({{1, 0}, {0, 1}}, ember.eye(2):tolist())
    -- an options table followed by nils: read, not refused (nor dropped, as zeros_like did)
    assert.are.equal("float64", ember.tensor({1}, {dtype = "float64"}, nil).dtype)
    assert.are.equal("int64", ember.zeros_like(x, {dtype = "int64"}, nil).dtype)
    assert.are.equal("int64", ember.full_like(x, 1, {dtype = "int64"}, nil, nil).dtype)
    assert.are.equal("float64", ember.full({2}, 1, {dtype = "float64"}, nil).dtype)
    assert.are.equal("float64", ember.linspace(0, 1, 3, {dtype = "float64"}, nil).dtype)
    assert.are.equal("int64", ember.eye(2, {dtype = "int64"}, nil).dtype)
    assert.are.equal("int64", ember.eye(2, 3, {dtype = "int64"}, nil).dtype)
    assert.are.equal("float64", x:to({dtype = "float64"}, nil).dtype)
    assert.are.same({{0, 3}, {1, 4}, {2, 5}}, x:t({}, nil):tolist())
    assert.is_true(ember.is_tensor(x, nil))
    ember.set_default_dtype("float32", nil)
    ember.set_default_device("cpu", nil)
    ember.set_num_threads(ember.get_num_threads(nil), nil)
    assert.are.same({2, 3}, ember.Size({2, 3}, nil))
    assert.are.equal(6, ember.Size({2, 3}):numel(nil))
  end)
end)

describe("the factories' out=", function()
  it("writes the values into out and returns out itself", function()
    local out = ember.full({2, 3}, 9.0)
    assert.is_true(rawequal(out, ember.zeros(2, 3, {out = out})))
    assert.are.same({{0, 0, 0}, {0, 0, 0}}, out:tolist())
    assert.is_true(rawequal(out, ember.ones({2, 3}, {out = out})))
    assert.are.same({{1, 1, 1}, {1, 1, 1}}, out:tolist())
    assert.is_true(rawequal(out, ember.full({2, 3}, 2.5, {out = out})))
    assert.are.same({{2.5, 2.5, 2.5}, {2.5, 2.5, 2.5}}, out:tolist())
    assert.is_true(rawequal(out, ember.eye(2, 3, {out = out})))
    assert.are.same({{1, 0, 0}, {0, 1, 0}}, out:tolist())
    local sq = ember.full({3, 3}, 9.0)
    assert.is_true(rawequal(sq, ember.eye(3, {out = sq})))
    assert.are.same({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, sq:tolist())
    local e = ember.zeros(2, 3)
    assert.is_true(rawequal(e, ember.empty(2, 3, {out = e})))   -- its values are unspecified
    local v = ember.full({4}, 9.0)
    assert.is_true(rawequal(v, ember.arange(1, 8, 2, {out = v})))
    assert.are.same({1, 3, 5, 7}, v:tolist())
    assert.is_true(rawequal(v, ember.arange(4, {out = v})))
    assert.are.same({0, 1, 2, 3}, v:tolist())
    local l = ember.full({5}, 9.0, {dtype = "float64"})
    assert.is_true(rawequal(l, ember.linspace(-1, 1, 5, {out = l})))
    assert.are.same({-1, -0.5, 0, 0.5, 1}, l:tolist())
  end)

  it("makes the values in out's dtype when no dtype is given, as PyTorch", function()
    local i = ember.full({2, 2}, 9, {dtype = "int64"})
    ember.zeros(2, 2, {out = i})
    assert.are.equal("int64", i.dtype)
    assert.are.same({{0, 0}, {0, 0}}, i:tolist())
    ember.full({2, 2}, 3, {out = i})
    assert.are.same({{3, 3}, {3, 3}}, i:tolist())
    local f = ember.zeros(3, {dtype = "float64"})
    ember.arange(3, {out = f})
    assert.are.same({0, 1, 2}, f:tolist())
    assert.are.equal("float64", f.dtype)
  end)

  it("refuses a wrong shape, an unsafe cast, a non-tensor and requires_grad, at the caller's line", function()
    local out = ember.full({3}, 9.0)
    local cases = {
      {"ember.zeros", function() return ember.zeros(2, 2, {out = out}) end},
      {"ember.ones", function() return ember.ones(2, {out = out}) end},
      {"ember.empty", function() return ember.empty(4, {out = out}) end},
      {"ember.full", function() return ember.full({2}, 1.0, {out = out}) end},
      {"ember.arange", function() return ember.arange(5, {out = out}) end},
      {"ember.linspace", function() return ember.linspace(0, 1, 4, {out = out}) end},
      {"ember.eye", function() return ember.eye(2, {out = out}) end},
    }
    for _, c in ipairs(cases) do refuses(c[1], c[2], "doesn't match the broadcast shape") end
    assert.are.same({9, 9, 9}, out:tolist())   -- untouched
    refuses("ember.zeros", function() return ember.zeros(3, {dtype = "float32", out = ember.zeros(3, {dtype = "int64"})}) end,
            "can't be cast to the desired output type int64")
    refuses("ember.arange", function() return ember.arange(3, {out = 5}) end, "out must be a tensor, got number")
    refuses("ember.full", function() return ember.full({3}, 1.0, {out = out, requires_grad = true}) end,
            "requires_grad = true does not go with out")
    assert.are.same({9, 9, 9}, out:tolist())
  end)
end)
