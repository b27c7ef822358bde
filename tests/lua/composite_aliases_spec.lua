-- composite_aliases_spec.lua — lua/ember/composite/aliases.lua: PyTorch's other names of
-- ember's ops and their in-place forms, rsub, the predicates and conjugations, type_as,
-- ndimension, cumsum_/cumprod_/addmm_/fill_diagonal_, sum_to_size, unravel_index and the
-- dtype helpers. Values, dtypes and gradients against PyTorch 2.x
-- (fixtures/composite_aliases.lua, written by scripts/fixtures/make_composite_aliases_fixtures.py),
-- the dtype helpers against ember's own ops, the in-place rules, and what bad input gets.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

local THIS_FILE = "composite_aliases_spec.lua:"
local FIX = h.fixture("composite_aliases.lua")
local DTYPES = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"}

describe("aliases and composites against PyTorch (fixtures)", function()
  for _, c in ipairs(FIX.cases) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

describe("names", function()
  local both = {"greater", "greater_equal", "less", "less_equal", "not_equal", "absolute", "is_signed", "is_nonzero",
                "is_same_size", "get_device", "is_complex", "is_conj", "is_neg", "conj", "conj_physical",
                "resolve_conj", "resolve_neg"}
  local functions = {"rsub", "is_floating_point", "unravel_index", "result_type", "promote_types", "can_cast",
                     "broadcast_shapes"}
  local methods = {"greater_", "greater_equal_", "less_", "less_equal_", "not_equal_", "absolute_", "multiply_",
                   "divide_", "true_divide_", "subtract_", "negative_", "conj_physical_", "ndimension", "type_as",
                   "cumsum_", "cumprod_", "addmm_", "fill_diagonal_", "sum_to_size"}

  it("are found before anything loaded them, as functions and methods", function()
    -- a fresh process: the first use is a method call, which must load the part itself
    local src = "local e = require 'ember'; local t = e.tensor({1.0, 2.0}); assert(t:greater_(1) == t); "
                .. "print(type(e.rsub), type(t.sum_to_size))"
    local out = h.run_fresh(src)
    assert(out:find("function%sfunction"), out)
    local t = ember.zeros(2)
    for _, n in ipairs(both) do
      assert.are.equal("function", type(ember[n]), n)
      assert.are.equal("function", type(t[n]), "t:" .. n)
    end
    for _, n in ipairs(functions) do assert.are.equal("function", type(ember[n]), n) end
    for _, n in ipairs(methods) do assert.are.equal("function", type(t[n]), "t:" .. n) end
    -- PyTorch has no Tensor.rsub and no torch.sum_to_size
    assert.is_nil(rawget(ember.Tensor, "rsub"))
    assert.is_nil(rawget(ember, "sum_to_size"))
  end)

  it("an alias is a function of its own, so help shows its entry and the original's for the original", function()
    local help = require "ember.help"
    assert.are_not.equal(ember.gt, ember.greater)
    assert.are.equal("ember.greater", (help.lookup(ember.greater)).name)
    assert.are.equal("ember.less", (help.lookup(ember.less)).name)
    local e = help.lookup(ember.gt)
    assert.is_truthy(e.name == "ember.gt" or e.name:find("gt"), e.name)
  end)

  it("an alias's error names the op and points at the caller's line", function()
    local e = err(function() local _ = ember.greater(ember.ones(2), "x") end)
    has(e, THIS_FILE)
    has(e, "gt:")
    has(err(function() local _ = ember.ones(2):subtract_("x") end), THIS_FILE)
  end)
end)

describe("the in-place aliases", function()
  it("write into self and return self, as the forms they stand for", function()
    local cases = {
      {"greater_", "gt_", {ember.tensor({0.5, 2.0, 9.0})}},
      {"greater_equal_", "ge_", {2.0}},
      {"less_", "lt_", {ember.tensor({2.0})}},
      {"less_equal_", "le_", {2}},
      {"not_equal_", "ne_", {ember.tensor({1.0, 2.0, 3.0})}},
      {"absolute_", "abs_", {}},
      {"multiply_", "mul_", {ember.tensor({2.0, -1.0, 0.5})}},
      {"divide_", "div_", {2, {rounding_mode = "trunc"}}},
      {"true_divide_", "div_", {4}},
      {"subtract_", "sub_", {1, {alpha = 3}}},
      {"negative_", "neg_", {}},
    }
    for _, c in ipairs(cases) do
      local a, b = ember.tensor({1.0, -2.0, 3.0}), ember.tensor({1.0, -2.0, 3.0})
      assert.is_true(rawequal(a[c[1]](a, table.unpack(c[3])), a), c[1])
      b[c[2]](b, table.unpack(c[3]))
      h.close_tensors(c[1], a, b, 0)
    end
  end)

  it("keep self's dtype: a comparison writes 1 and 0 into a float or integer self", function()
    local t = ember.tensor({1, 5, 3}, {dtype = "int32"})
    t:greater_(2.5)
    assert.are.equal("int32", t.dtype)
    h.check(t, {0, 1, 1})
    has(err(function() return ember.tensor({1, 2}):divide_(2) end), "can't be cast")
  end)
end)

describe("the dtype helpers", function()
  local function value(d)
    if d.kind == "tensor" then return ember.zeros(2, {dtype = d.dtype}) end
    if d.kind == "0d" then return ember.zeros({}, {dtype = d.dtype}) end
    return d.value
  end

  for _, name in ipairs({"promote_types", "can_cast"}) do
    it(name .. " is PyTorch's table over ember's dtypes", function()
      local rows = FIX.dtypes[name]
      assert.are.equal(64, #rows)
      for _, r in ipairs(rows) do assert.are.equal(r[3], ember[name](r[1], r[2]), r[1] .. ", " .. r[2]) end
    end)
  end

  it("result_type is PyTorch's for tensors with dims, 0-d tensors, integers, floats and booleans", function()
    assert.is_true(#FIX.dtypes.result_type > 300)
    for _, r in ipairs(FIX.dtypes.result_type) do
      local a, b = value(r[1]), value(r[2])
      assert.are.equal(r[3], ember.result_type(a, b), h.show({tostring(a), tostring(b)}))
    end
  end)

  it("result_type is the dtype ember's binary ops give, for every pair where + is defined", function()
    local operands = {2, 2.5, true, false, -7}
    for _, d in ipairs(DTYPES) do
      operands[#operands + 1] = ember.ones(3, {dtype = d})
      operands[#operands + 1] = ember.ones({}, {dtype = d})
      operands[#operands + 1] = ember.ones(0, 2, {dtype = d})
    end
    local checked = 0
    for _, a in ipairs(operands) do
      for _, b in ipairs(operands) do
        if ember.is_tensor(a) or ember.is_tensor(b) then
          for _, op in ipairs({function(x, y) return x + y end, function(x, y) return ember.mul(x, y) end,
                               function(x, y) return ember.maximum(x, y) end}) do
            local ok, r = pcall(op, a, b)
            if ok then
              checked = checked + 1
              assert.are.equal(r.dtype, ember.result_type(a, b), tostring(a) .. " and " .. tostring(b))
            end
          end
        end
      end
    end
    assert.is_true(checked > 1500, "only " .. checked .. " pairs ran")
    -- promote_types is the rule for two tensors with dims
    for _, x in ipairs(DTYPES) do
      for _, y in ipairs(DTYPES) do
        local r = ember.ones(2, {dtype = x}) + ember.ones(2, {dtype = y})
        assert.are.equal(r.dtype, ember.promote_types(x, y))
      end
    end
  end)

  it("result_type of two numbers follows the default dtype", function()
    assert.are.equal("float32", ember.result_type(1, 2.5))
    assert.are.equal("int64", ember.result_type(1, true))
    assert.are.equal("bool", ember.result_type(true, false))
    ember.set_default_dtype("float64")
    local ok, r = pcall(ember.result_type, 1, 2.5)
    local r2 = ember.result_type(ember.tensor({1}), 2.5)
    ember.set_default_dtype("float32")
    assert.is_true(ok, r)
    assert.are.equal("float64", r)
    assert.are.equal("float64", r2)
  end)

  it("broadcast_shapes gives an ember.Size, as broadcasting tensors does", function()
    local s = ember.broadcast_shapes({2, 1, 4}, {3, 1}, 4)
    assert.are.equal(ember.Size, getmetatable(s))
    assert.is_true(s == {2, 3, 4})
    local a, b = ember.broadcast_tensors(ember.zeros(2, 1, 4), ember.zeros(3, 1))
    assert.is_true(s == a.shape and s == b.shape)
    assert.is_true(ember.broadcast_shapes() == {})
    assert.is_true(ember.broadcast_shapes({0}, {1}) == {0})
    assert.is_true(ember.broadcast_shapes(ember.Size({5, 1}), {}) == {5, 1})
  end)

  it("refuse what is not a dtype, an operand or a shape", function()
    has(err(ember.promote_types, "float32", "complex64"), "promote_types: type2 must be a dtype name")
    has(err(ember.promote_types, 5, "float32"), "got number")
    has(err(ember.can_cast, "float32"), "can_cast: to must be a dtype name")
    has(err(ember.result_type, ember.ones(1), "x"), "result_type: tensor2 must be a tensor, a number or a boolean")
    has(err(ember.result_type, {}, 1), "result_type: tensor1")
    local e = err(function() local _ = ember.broadcast_shapes({2, 3}, {4}) end)
    has(e, "broadcast_shapes: shapes [2, 3] and [4] cannot be broadcast (dimension 2: 3 vs 4)")
    has(e, THIS_FILE)
    has(err(ember.broadcast_shapes, {2, -1}), "broadcast_shapes: shape 1: sizes must be integers >= 0, got -1")
    has(err(ember.broadcast_shapes, {2}, "x"), "broadcast_shapes: shape 2 must be a list of sizes, got string")
    has(err(ember.broadcast_shapes, {2.5}), "got 2.5")
  end)
end)

describe("predicates", function()
  it("is_floating_point and is_signed by dtype", function()
    local float = {float32 = true, float64 = true, float16 = true, bfloat16 = true}
    for _, d in ipairs(DTYPES) do
      local t = ember.zeros(1, {dtype = d})
      assert.are.equal(float[d] == true, ember.is_floating_point(t), d)
      assert.are.equal(t:is_floating_point(), ember.is_floating_point(t), d)
      assert.are.equal(d ~= "uint8" and d ~= "bool", ember.is_signed(t), d)
      assert.are.equal(ember.is_signed(t), t:is_signed(), d)
    end
    has(err(ember.is_floating_point, 3), "is_floating_point: input must be a tensor, got number")
    has(err(ember.is_signed, nil), "is_signed: input must be a tensor")
  end)

  it("is_nonzero of one element; more or none is an error", function()
    assert.is_false(ember.tensor({0.0}):is_nonzero())
    assert.is_false(ember.tensor(-0.0):is_nonzero())
    assert.is_true(ember.tensor({{0 / 0}}):is_nonzero())
    assert.is_true(ember.is_nonzero(ember.tensor(-3, {dtype = "int32"})))
    assert.is_true(ember.tensor({true}):is_nonzero())
    assert.is_false(ember.tensor(false):is_nonzero())
    has(err(ember.is_nonzero, ember.zeros(2)), "is_nonzero: Boolean value of Tensor with more than one value is ambiguous (shape [2])")
    has(err(ember.is_nonzero, ember.zeros(0)), "is_nonzero: Boolean value of Tensor with no values is ambiguous")
    has(err(ember.is_nonzero, 1), "is_nonzero: input must be a tensor")
  end)

  it("is_same_size compares shapes only", function()
    assert.is_true(ember.is_same_size(ember.ones(2, 3), ember.zeros(2, 3, {dtype = "int64"})))
    assert.is_false(ember.ones(2, 3):is_same_size(ember.ones(3, 2)))
    assert.is_false(ember.ones(1):is_same_size(ember.ones({})))
    has(err(ember.is_same_size, ember.ones(1), {1}), "is_same_size: other must be a tensor")
  end)

  it("get_device is -1 on the CPU and the index on CUDA", function()
    assert.are.equal(-1, ember.ones(2):get_device())
    assert.are.equal(-1, ember.get_device(ember.ones({})))
    if ember.cuda.is_available() then
      local g = ember.ones(2):cuda()
      assert.are.equal(0, g:get_device())
      assert.are.equal(tonumber(g.device:match("%d+$")), ember.get_device(g))
    end
    has(err(ember.get_device, "cpu"), "get_device: input must be a tensor")
  end)

  it("complex and lazy views: none; the conjugations return the tensor itself", function()
    local x = ember.tensor({1.0, -2.0})
    for _, n in ipairs({"is_complex", "is_conj", "is_neg"}) do
      assert.is_false(ember[n](x), n)
      assert.is_false(x[n](x), n)
    end
    for _, n in ipairs({"conj", "conj_physical", "resolve_conj", "resolve_neg"}) do
      assert.is_true(rawequal(ember[n](x), x), n)
      assert.is_true(rawequal(x[n](x), x), n)
      has(err(ember[n], 2), n .. ": input must be a tensor")
    end
    assert.is_true(rawequal(x:conj_physical_(), x))
    h.check(x, {1.0, -2.0})
  end)

  it("ndimension and type_as", function()
    assert.are.equal(0, ember.tensor(1.0):ndimension())
    assert.are.equal(3, ember.ones(1, 2, 3):ndimension())
    local x = ember.ones(2)
    assert.is_true(rawequal(x:type_as(ember.zeros(5)), x))
    local y = ember.tensor({1.5, -2.5}, {dtype = "float64"}):type_as(ember.zeros(1, {dtype = "int32"}))
    assert.are.equal("int32", y.dtype)
    h.check(y, {1, -2})
    if ember.cuda.is_available() then
      local g = x:type_as(ember.zeros(1, {dtype = "float64"}):cuda())
      assert.are.equal("float64", g.dtype)
      assert.is_true(g.is_cuda)
      assert.are.equal("cpu", g:type_as(x).device)
    end
    has(err(function() return x:type_as("float64") end), "type_as: other must be a tensor, got string")
    has(err(ember.Tensor.ndimension, 1), "ndimension: self must be a tensor")
  end)
end)

describe("rsub", function()
  it("is other - alpha * input, and refuses what sub refuses under its own name", function()
    h.check(ember.rsub(ember.tensor({1, 2}), ember.tensor({10, 20}), {alpha = 3}), {7, 14})
    has(err(ember.rsub, 5, ember.ones(2)), "rsub: input must be a tensor, got number")
    has(err(ember.rsub, ember.ones(2), "x"), "rsub: other must be a tensor or a number, got string")
    has(err(ember.rsub, ember.tensor({true}), ember.tensor({false})), "rsub: subtraction of bool tensors")
    has(err(ember.rsub, ember.tensor({1, 2}), 3, {alpha = 0.5}), "rsub: alpha must be an integer for a int64 result")
    has(err(ember.rsub, ember.ones(2), 3, {alpha = "x"}), "rsub: alpha must be a number, got string")
    has(err(ember.rsub, ember.ones(2), 3, {beta = 1}), "beta")
    has(err(ember.rsub, ember.ones(2), ember.ones(3)), "cannot be broadcast")
    -- a float number with integer input: a float result, where a float alpha is fine
    h.check(ember.rsub(ember.tensor({1, 2}), 2.5, {alpha = 0.5}), {2.0, 1.5})
  end)
end)

describe("the in-place forms", function()
  it("return self, written in place (views included)", function()
    local base = ember.zeros(3, 4)
    local v = base:t()
    assert.is_true(rawequal(v:fill_diagonal_(7), v))
    h.check(base, {{7, 0, 0, 0}, {0, 7, 0, 0}, {0, 0, 7, 0}})
    local row = ember.tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}})
    local second = row[2]
    assert.is_true(rawequal(second:cumsum_(1), second))
    h.check(row, {{1, 2, 3}, {4, 9, 15}})
    local s = ember.ones(2, 2)
    assert.is_true(rawequal(s:addmm_(ember.ones(2, 1), ember.ones(1, 2)), s))
  end)

  it("are refused on a tensor autograd records, and allowed under no_grad", function()
    local x = ember.ones(2, 2):requires_grad_()
    for _, f in ipairs({
      function() local _ = x:cumsum_(1) end, function() local _ = x:cumprod_(2) end,
      function() local _ = x:fill_diagonal_(0) end,
      function() local _ = x:addmm_(ember.ones(2, 2), ember.ones(2, 2)) end,
      function() local _ = ember.zeros(2, 2):addmm_(x, ember.ones(2, 2)) end,
    }) do
      local e = err(f)
      assert.is_truthy(e:find("requires grad in place", 1, true) or e:find("in-place operation on a tensor that requires grad", 1, true), e)
      has(e, THIS_FILE)
    end
    has(err(function() return x:cumsum_(1) end), "cumsum_:")
    has(err(function() return x:fill_diagonal_(0) end), "fill_diagonal_:")
    ember.no_grad(function() x:fill_diagonal_(3) end)
    h.check(x:detach(), {{3, 1}, {1, 3}})
  end)

  it("keep self's shape and a dtype the result casts to", function()
    has(err(function() return ember.ones(1, 2):addmm_(ember.ones(2, 3), ember.ones(3, 2)) end),
        "addmm_: output with shape [1, 2] doesn't match the broadcast shape [2, 2]")
    -- ember's addmm takes float tensors only, so no addmm_ result needs a cast self can't take
    has(err(function() return ember.ones(2, 2, {dtype = "int64"}):addmm_(ember.ones(2, 3), ember.ones(3, 2)) end),
        "addmm: expected a floating point input, got int64")
    local half = ember.zeros(1, 1, {dtype = "float16"})
    half:addmm_(ember.ones(1, 2), ember.ones(2, 1))
    assert.are.equal("float16", half.dtype)
    h.check(half, {{2}})
    has(err(function() return ember.ones(2, 2):addmm_(ember.ones(2, 3), ember.ones(2, 2)) end), "inner dimensions")
    has(err(function() return ember.Tensor.addmm_(3, ember.ones(1, 1), ember.ones(1, 1)) end),
        "addmm_: self must be a tensor")
    has(err(function() return ember.tensor({true, false}):cumsum_(1) end), "cumsum_: not supported for bool tensors")
    has(err(function() return ember.ones(3):cumprod_(1, {dtype = "float64"}) end),
        "cumprod_: dtype float64 differs from self's float32")
    has(err(function() return ember.ones(3):cumsum_(2) end), "out of range")
    has(err(function() return ember.ones(3):cumsum_(1, {bad = 1}) end), "bad")
    has(err(function() return ember.Tensor.cumsum_("x", 1) end), "cumsum_: self must be a tensor")
  end)

  it("fill_diagonal_ refuses tensors of one dim and unequal dims, and values that are not numbers", function()
    has(err(function() return ember.zeros(3):fill_diagonal_(1) end),
        "fill_diagonal_: expected a tensor of at least 2 dimensions, got [3]")
    has(err(function() return ember.zeros(2, 2, 3):fill_diagonal_(1) end),
        "fill_diagonal_: all dimensions of a tensor of more than 2 must be of equal length, got [2, 2, 3]")
    has(err(function() return ember.zeros(2, 2):fill_diagonal_("x") end),
        "fill_diagonal_: fill_value must be a number, got string")
    has(err(function() return ember.zeros(2, 2):fill_diagonal_(1, 1) end), "fill_diagonal_: wrap must be a boolean")
    has(err(function() return ember.zeros(2, 2):fill_diagonal_(1, true, 3) end), "fill_diagonal_")
    has(err(function() return ember.zeros(2, 2, {dtype = "uint8"}):fill_diagonal_(-1) end), "uint8")
  end)
end)

describe("sum_to_size", function()
  it("keeps gradients flowing and returns self when nothing is summed", function()
    local x = ember.ones(2, 3)
    assert.is_true(rawequal(x:sum_to_size(2, 3), x))
    assert.is_true(rawequal(x:sum_to_size({2, 3}), x))
    h.gradcheck_ok(function(t) return t:sum_to_size(1, 3) end, {h.spread(2, 3):requires_grad_()})
  end)

  it("refuses sizes the tensor does not broadcast from", function()
    local x = ember.ones(2, 3)
    has(err(function() return x:sum_to_size(2) end), "sum_to_size: size [2] is not expandable to size [2, 3]")
    has(err(function() return x:sum_to_size(1, 1, 3) end), "sum_to_size: size [1, 1, 3] is not expandable")
    has(err(function() return x:sum_to_size(-1, 3) end), "sum_to_size: size: sizes must be integers >= 0, got -1")
    has(err(function() return x:sum_to_size(2, nil) end), "got nil at position 2")
    has(err(function() return x:sum_to_size("x") end), "sum_to_size: size: sizes must be integers")
    has(err(function() return ember.Tensor.sum_to_size(1, 2) end), "sum_to_size: self must be a tensor")
  end)
end)

describe("unravel_index", function()
  it("returns one tensor per dim of shape: none for shape {}", function()
    assert.are.equal(0, select("#", ember.unravel_index(ember.tensor({1, -1}), {})))
    local r, c = ember.unravel_index(6, {2, 3})
    assert.are.equal(0, r:dim())
    assert.are.equal(2, r:item())
    assert.are.equal(3, c:item())
    -- the coordinates index the tensor: t[r][c] is the flat element
    local t = ember.arange(1, 13):reshape(3, 4)
    for i = 1, 12 do
      local a, b = ember.unravel_index(i, t.shape)
      assert.are.equal(i, t[a:item()][b:item()]:item())
    end
  end)

  it("refuses positions out of range, float indices and bad shapes", function()
    has(err(ember.unravel_index, ember.tensor({1, 7}), {2, 3}),
        "unravel_index: index 7 is out of bounds for shape [2, 3] (expected 1..6 or -6..-1)")
    has(err(ember.unravel_index, ember.tensor({0}), {2, 3}), "unravel_index: index 0 is out of bounds")
    has(err(ember.unravel_index, ember.tensor({-7}), {2, 3}), "index -7 is out of bounds")
    has(err(ember.unravel_index, ember.tensor({1.0}), {2, 3}),
        "unravel_index: expected indices of an integer dtype, got float32")
    has(err(ember.unravel_index, ember.tensor({true}), {2}), "got bool")
    has(err(ember.unravel_index, ember.tensor({1}), {2, 0}), "unravel_index: shape [2, 0] has no elements")
    has(err(ember.unravel_index, ember.tensor({1}), {2, -1}), "unravel_index: shape: sizes must be integers >= 0")
    has(err(ember.unravel_index, ember.tensor({1}), "x"), "unravel_index: shape must be a list of sizes")
    has(err(ember.unravel_index, 1.5, {2}), "unravel_index: indices must be a tensor, got number")
    has(err(ember.unravel_index, ember.tensor({1}), {1 << 62, 4}), "more elements than int64 holds")
  end)
end)

describe("torch.X for F.X", function()
  it("is F.X itself, with F's arguments", function()
    local F = ember.nn.functional
    for _, n in ipairs({"channel_shuffle", "pixel_shuffle", "pixel_unshuffle", "cosine_similarity", "pairwise_distance",
                        "celu", "selu", "rrelu", "prelu", "hardshrink", "threshold", "dropout", "alpha_dropout",
                        "feature_alpha_dropout", "bilinear"}) do
      assert.are.equal(F[n], ember[n], n)
    end
    -- torch.threshold(x, 0.5, -1): values not above 0.5 become -1
    h.check(ember.threshold(ember.tensor({0.25, 1.0}), 0.5, -1), {-1, 1})
    -- torch.dropout(x, p, train) with train false is x
    local x = ember.ones(3)
    assert.are.equal(x, ember.dropout(x, 0.5, false))
    local help = require "ember.help"
    assert.are.equal("ember.nn.functional.selu", (help.lookup(ember.selu)).name)
  end)
end)
