-- strict_args_shape_index_spec.lua — the shape, indexing and einsum bindings
-- (lua/bind_shape.c, bind_index.c, bind_einsum.c) refuse what they do not read:
-- a positional argument past the ones they take, and an option they do not know,
-- each an error naming the op at the caller's line, never dropped without a word.
-- Where PyTorch takes out= and the op returns one tensor, {out = t} writes the
-- result into t and returns t. Expected values are worked by hand.
local ember = require "ember"

-- f() fails with a message naming op (as "op:") and this file, the caller's;
-- what: the argument refused, for the message when f succeeds instead
local function refused(op, f, what)
  local ok, e = pcall(f)
  assert(not ok, op .. ": " .. what .. " was accepted")
  e = tostring(e)
  assert.is_truthy(e:find(op .. ":", 1, true), e)
  assert.is_truthy(e:find("strict_args_shape_index_spec.lua:", 1, true), e)
  return e
end

-- f() succeeds
local function accepted(f, what) assert.is_true((pcall(f)), what) end

local function f32(t) return ember.tensor(t, {dtype = "float32"}) end
local function i64(t) return ember.tensor(t, {dtype = "int64"}) end

-- x = [[1, 2, 3], [4, 5, 6]]
local function X() return ember.arange(1, 7, {dtype = "float32"}):view(2, 3) end

describe("the shape, index and einsum bindings", function()
  -- {op as the message names it, call(v): a valid call with v after its arguments}
  -- (a) v = an extra positional argument, (b) v = {bogus = 1}
  local x, v1, sq = X(), f32({1, 2}), ember.ones(3, 3)
  local idx21 = i64({{3}, {1}})
  local src21 = f32({{7}, {8}})
  local mask = ember.tensor({{true, false, true}, {false, true, false}})
  local rows = {
    {"flip", function(v) return x:flip({1}, v) end},
    {"fliplr", function(v) return x:fliplr(v) end},
    {"flipud", function(v) return ember.flipud(x, v) end},
    {"roll", function(v) return x:roll(1, 1, v) end},
    {"rot90", function(v) return ember.rot90(x, 1, {1, 2}, v) end},
    {"repeat", function(v) return x["repeat"](x, {1, 2}, v) end},
    {"tile", function(v) return ember.tile(x, {1, 2}, v) end},
    {"repeat_interleave", function(v) return x:repeat_interleave(2, 1, 4, v) end},
    {"movedim", function(v) return x:movedim(1, 2, v) end},
    {"movedim", function(v) return ember.moveaxis(x, 1, 2, v) end},
    {"unbind", function(v) return x:unbind(1, v) end},
    {"unflatten", function(v) return ember.unflatten(x, 2, {3, 1}, v) end},
    {"swapaxes", function(v) return x:swapaxes(1, 2, v) end},
    {"swapaxes", function(v) return ember.swapdims(x, 1, 2, v) end},
    {"diag", function(v) return ember.diag(x, 0, v) end},
    {"diagonal", function(v) return x:diagonal(0, 1, 2, v) end},
    {"diag_embed", function(v) return ember.diag_embed(v1, 0, -2, -1, v) end},
    {"diagflat", function(v) return v1:diagflat(0, v) end},
    {"trace", function(v) return x:trace(v) end},
    {"take", function(v) return ember.take(x, {1, 2}, v) end},
    {"take_along_dim", function(v) return x:take_along_dim(idx21, 2, v) end},
    {"index_fill", function(v) return ember.index_fill(x, 1, {1}, 0, v) end},
    {"index_fill_", function(v) return X():index_fill_(1, {1}, 0, v) end},
    {"index_copy", function(v) return ember.index_copy(x, 1, {1}, f32({{0, 0, 0}}), v) end},
    {"index_copy_", function(v) return X():index_copy_(1, {1}, f32({{0, 0, 0}}), v) end},
    {"masked_scatter", function(v) return ember.masked_scatter(x, mask, ember.zeros(6), v) end},
    {"masked_scatter_", function(v) return X():masked_scatter_(mask, ember.zeros(6), v) end},
    {"scatter_reduce", function(v) return ember.scatter_reduce(x, 2, idx21, src21, "sum", true, v) end},
    {"scatter_reduce_", function(v) return X():scatter_reduce_(2, idx21, src21, "sum", true, v) end},
    {"one_hot", function(v) return ember.one_hot(i64({1, 2}), 3, v) end},
    {"broadcast_to", function(v) return x:broadcast_to({2, 2, 3}, v) end},
    {"new_zeros", function(v) return x:new_zeros({2}, v) end},
    {"new_ones", function(v) return x:new_ones({2}, v) end},
    {"new_empty", function(v) return x:new_empty({2}, v) end},
    {"new_full", function(v) return x:new_full({2}, 7, v) end},
    {"new_tensor", function(v) return x:new_tensor({1, 2}, v) end},
    {"logspace", function(v) return ember.logspace(0, 2, 3, 10, v) end},
    {"tril_indices", function(v) return ember.tril_indices(3, 3, 0, v) end},
    {"triu_indices", function(v) return ember.triu_indices(3, 3, 0, v) end},
    {"index_select", function(v) return ember.index_select(x, 2, {1}, v) end},
    {"gather", function(v) return x:gather(2, idx21, v) end},
    {"scatter", function(v) return ember.scatter(x, 2, idx21, src21, "add", v) end},
    {"scatter_", function(v) return X():scatter_(2, idx21, 0, "add", v) end},
    {"scatter_add", function(v) return ember.scatter_add(x, 2, idx21, src21, v) end},
    {"scatter_add_", function(v) return X():scatter_add_(2, idx21, src21, v) end},
    {"index_add", function(v) return ember.index_add(x, 1, {1}, f32({{1, 1, 1}}), {alpha = 2}, v) end},
    {"index_add_", function(v) return X():index_add_(1, {1}, f32({{1, 1, 1}}), {alpha = 2}, v) end},
    {"masked_select", function(v) return ember.masked_select(x, mask, v) end},
    {"nonzero", function(v) return x:nonzero(v) end},
    {"argwhere", function(v) return ember.argwhere(x, v) end},
    {"cat", function(v) return ember.cat({x, x}, 1, v) end},
    {"cat", function(v) return ember.concat({x, x}, 1, v) end},
    {"stack", function(v) return ember.stack({x, x}, 1, v) end},
    {"split", function(v) return x:split(1, 1, v) end},
    {"chunk", function(v) return ember.chunk(x, 2, 1, v) end},
    {"sort", function(v) return x:sort(2, false, false, v) end},
    {"argsort", function(v) return ember.argsort(x, 2, false, false, v) end},
    {"topk", function(v) return x:topk(1, 2, true, true, v) end},
    {"tril", function(v) return ember.tril(sq, 0, v) end},
    {"triu", function(v) return sq:triu(0, v) end},
    {"tril_", function(v) return ember.ones(2, 2):tril_(0, v) end},
    {"triu_", function(v) return ember.ones(2, 2):triu_(0, v) end},
    {"tensordot", function(v) return ember.tensordot(x, sq, 1, v) end},
    {"tensordot", function(v) return ember.tensordot(x, sq, {{2}, {1}}, v) end},
    {"kron", function(v) return x:kron(v1, v) end},
    {"cdist", function(v) return ember.cdist(x, x, 2, v) end},
    {"index_put", function(v) return ember.index_put(x, {i64({1})}, 0, false, v) end},
    {"index_put_", function(v) return X():index_put_({i64({1})}, 0, false, v) end},
  }

  it("refuse an extra positional argument", function()
    for _, row in ipairs(rows) do
      refused(row[1], function() return row[2](5) end, "an extra number")
      refused(row[1], function() return row[2](x) end, "an extra tensor")
    end
  end)

  it("taking a list as one table or as arguments, refuse what follows the table", function()
    local lists = {
      {"flip", function(v) return ember.flip(x, {1}, v) end},
      {"repeat", function(v) return x["repeat"](x, {1, 2}, v) end},
      {"tile", function(v) return x:tile({1, 2}, v) end},
      {"broadcast_to", function(v) return ember.broadcast_to(x, {2, 2, 3}, v) end},
      {"meshgrid", function(v) return ember.meshgrid({v1, v1}, v) end},
      {"cartesian_prod", function(v) return ember.cartesian_prod({v1, v1}, v) end},
      {"block_diag", function(v) return ember.block_diag({v1, v1}, v) end},
      {"broadcast_tensors", function(v) return ember.broadcast_tensors({v1, v1}, v) end},
      {"atleast_1d", function(v) return ember.atleast_1d({v1, v1}, v) end},
      {"atleast_2d", function(v) return ember.atleast_2d({v1, v1}, v) end},
      {"atleast_3d", function(v) return ember.atleast_3d({v1, v1}, v) end},
      {"einsum", function(v) return ember.einsum("i,i->", {v1, v1}, v) end},
    }
    for _, row in ipairs(lists) do
      for _, v in ipairs({5, x, {bogus = 1}}) do
        local e = refused(row[1], function() return row[2](v) end, "an argument after the list")
        -- meshgrid reads an options table there (indexing)
        assert.is_truthy(e:find("unexpected argument", 1, true) or e:find("unknown option 'bogus'", 1, true), e)
      end
      accepted(function() return row[2](nil) end, row[1])
    end
    -- as arguments: the same ops take tensors (or integers) only, then nils
    for _, row in ipairs({
      {"meshgrid", function(v) return ember.meshgrid(v1, v1, v) end},
      {"cartesian_prod", function(v) return ember.cartesian_prod(v1, v1, v) end},
      {"block_diag", function(v) return ember.block_diag(v1, v1, v) end},
      {"broadcast_tensors", function(v) return ember.broadcast_tensors(v1, v1, v) end},
      {"atleast_2d", function(v) return ember.atleast_2d(v1, v1, v) end},
      {"einsum", function(v) return ember.einsum("i,i->", v1, v1, v) end},
      {"flip", function(v) return x:flip(1, v) end},
      {"broadcast_to", function(v) return x:broadcast_to(2, 3, v) end},
    }) do
      refused(row[1], function() return row[2](true) end, "a boolean after the list")
      accepted(function() return row[2](nil) end, row[1])
    end
  end)

  it("refuse an option they do not take", function()
    for _, row in ipairs(rows) do
      local e = refused(row[1], function() return row[2]({bogus = 1}) end, "{bogus = 1}")
      -- a table after the last positional argument is read as options or refused as one too many
      assert.is_truthy(e:find("unknown option 'bogus'", 1, true) or e:find("argument", 1, true), e)
    end
  end)

  it("refuse an option in the options table of the ops that read one", function()
    local opts = {
      {"flip", function(o) return x:flip(o) end},
      {"repeat", function(o) return x["repeat"](x, o) end},
      {"tile", function(o) return x:tile(o) end},
      {"broadcast_to", function(o) return x:broadcast_to(o) end},
      {"roll", function(o) return x:roll(1, o) end},
      {"rot90", function(o) return x:rot90(o) end},
      {"repeat_interleave", function(o) return x:repeat_interleave(2, o) end},
      {"diag", function(o) return ember.diag(x, o) end},
      {"diagonal", function(o) return x:diagonal(o) end},
      {"diag_embed", function(o) return v1:diag_embed(o) end},
      {"diagflat", function(o) return v1:diagflat(o) end},
      {"take", function(o) return ember.take(x, {1}, o) end},
      {"take_along_dim", function(o) return x:take_along_dim(idx21, o) end},
      {"index_copy", function(o) return ember.index_copy(x, 1, {1}, f32({{0, 0, 0}}), o) end},
      {"scatter_reduce", function(o) return ember.scatter_reduce(x, 2, idx21, src21, "sum", o) end},
      {"scatter_reduce_", function(o) return X():scatter_reduce_(2, idx21, src21, o) end},
      {"one_hot", function(o) return ember.one_hot(i64({1, 2}), o) end},
      {"meshgrid", function(o) return ember.meshgrid(v1, v1, o) end},
      {"new_zeros", function(o) return x:new_zeros(2, o) end},
      {"new_full", function(o) return x:new_full({2}, 7, o) end},
      {"new_tensor", function(o) return x:new_tensor({1}, o) end},
      {"logspace", function(o) return ember.logspace(0, 2, 3, o) end},
      {"tril_indices", function(o) return ember.tril_indices(3, 3, o) end},
      {"index_select", function(o) return ember.index_select(x, 2, {1}, o) end},
      {"gather", function(o) return ember.gather(x, 2, idx21, o) end},
      {"scatter", function(o) return ember.scatter(x, 2, idx21, src21, o) end},
      {"scatter_add", function(o) return ember.scatter_add(x, 2, idx21, src21, o) end},
      {"index_add", function(o) return ember.index_add(x, 1, {1}, f32({{1, 1, 1}}), o) end},
      {"masked_select", function(o) return ember.masked_select(x, mask, o) end},
      {"nonzero", function(o) return ember.nonzero(x, o) end},
      {"cat", function(o) return ember.cat({x, x}, o) end},
      {"stack", function(o) return ember.stack({x, x}, o) end},
      {"sort", function(o) return x:sort(o) end},
      {"topk", function(o) return x:topk(1, o) end},
      {"tril", function(o) return ember.tril(sq, o) end},
      {"tensordot", function(o) return ember.tensordot(x, sq, o) end},
      {"kron", function(o) return ember.kron(x, v1, o) end},
      {"cdist", function(o) return ember.cdist(x, x, o) end},
      {"index_put", function(o) return ember.index_put(x, {i64({1})}, 0, o) end},
    }
    for _, row in ipairs(opts) do
      local e = refused(row[1], function() return row[2]({bogus = 1}) end, "{bogus = 1}")
      assert.is_truthy(e:find(row[1] .. ": unknown option 'bogus'", 1, true), e)
    end
  end)

  it("refuse out= where the op has none, and given by position", function()
    local o = ember.zeros(2, 3)
    for _, row in ipairs({
      {"scatter_", function() return X():scatter_(2, idx21, src21, {out = o}) end},
      {"scatter_add_", function() return X():scatter_add_(2, idx21, src21, {out = o}) end},
      {"index_add_", function() return X():index_add_(1, {1}, f32({{1, 1, 1}}), {out = o}) end},
      {"scatter_reduce_", function() return X():scatter_reduce_(2, idx21, src21, "sum", {out = o}) end},
      {"sort", function() return x:sort({out = o}) end},
      {"topk", function() return x:topk(1, {out = o}) end},
      {"flip", function() return x:flip({out = o}) end},
      {"tril_indices", function() return ember.tril_indices(3, 3, {out = o}) end},
      {"cdist", function() return ember.cdist(x, x, {out = o}) end},
    }) do
      local e = refused(row[1], row[2], "out=")
      assert.is_truthy(e:find(row[1] .. ": unknown option 'out'", 1, true), e)
    end
    -- out is keyword-only: a tensor by position is not read as out
    local e = refused("diag", function() return ember.diag(x, 0, o) end, "a positional out")
    assert.is_truthy(e:find("diag: argument 3: unexpected argument (a tensor); the keyword arguments (out) go in a "
                            .. "trailing options table, e.g. {out = ...}", 1, true), e)
    e = refused("tril", function() return ember.tril(sq, 0, o) end, "a positional out")
    assert.is_truthy(e:find("the keyword arguments (out) go in a trailing options table", 1, true), e)
    e = refused("tensordot", function() return ember.tensordot(x, sq, 1, o) end, "a positional out")
    assert.is_truthy(e:find("the keyword arguments (out) go in a trailing options table", 1, true), e)
    e = refused("cat", function() return ember.cat({x, x}, 1, o) end, "a positional out")
    assert.is_truthy(e:find("the keyword arguments (out) go in a trailing options table", 1, true), e)
    assert.are.same({{0, 0, 0}, {0, 0, 0}}, o:tolist())   -- nothing written
  end)

  it("still take the keywords they read, and trailing nils", function()
    local y = X()
    assert.are.same({{3, 2, 1}, {6, 5, 4}}, y:flip(2, nil):tolist())
    assert.are.same({{4, 5, 6}, {1, 2, 3}}, y:flip({1}, nil):tolist())
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, y:flip({}):tolist())
    assert.are.same({2, 6}, y["repeat"](y, 1, 2, nil).shape)
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, y:tile({1, 1}, nil):tolist())
    assert.are.same({2, 3}, y:broadcast_to(2, 3, nil).shape)
    local gx, gy = ember.meshgrid(v1, f32({5, 6, 7}), {indexing = "xy"})
    assert.are.same({{1, 2}, {1, 2}, {1, 2}}, gx:tolist())
    assert.are.same({{5, 5}, {6, 6}, {7, 7}}, gy:tolist())
    gx = ember.meshgrid(v1, f32({5, 6, 7}), nil)
    assert.are.same({{1, 1, 1}, {2, 2, 2}}, gx:tolist())
    assert.are.same({{1, 3}, {1, 4}, {2, 3}, {2, 4}}, ember.cartesian_prod(v1, f32({3, 4}), nil):tolist())
    assert.are.same({2, 6}, y:diag({diagonal = 1}):tolist())
    assert.are.same({2, 6}, y:diag(1, nil):tolist())
    assert.are.same({{1}, {6}}, y:take_along_dim(i64({{1}, {3}}), {dim = 2}):tolist())
    assert.are.same({{1}, {6}}, y:take_along_dim(i64({{1}, {3}}), 2, nil):tolist())
    -- amax of {0} into x[1][1] = 1 and of {8} into x[2][3] = 6, with and without x's own values
    assert.are.same({{0, 2, 3}, {4, 5, 8}},
                    y:scatter_reduce(2, i64({{1}, {3}}), f32({{0}, {8}}), {reduce = "amax", include_self = false})
                     :tolist())
    assert.are.same({{1, 2, 3}, {4, 5, 8}},
                    y:scatter_reduce(2, i64({{1}, {3}}), f32({{0}, {8}}), "amax", true, nil):tolist())
    assert.are.same({{1, 2, 10}, {12, 5, 6}}, y:scatter(2, idx21, src21, "add", nil):tolist())
    assert.are.same({{1, 2, 21}, {32, 5, 6}}, y:scatter(2, idx21, src21, {reduce = "multiply"}):tolist())
    assert.are.same({{1, 2, 7}, {8, 5, 6}}, y:scatter(2, idx21, src21, nil):tolist())
    assert.are.same({{3, 4, 5}, {4, 5, 6}}, y:index_add(1, {1}, f32({{1, 1, 1}}), {alpha = 2}):tolist())
    assert.are.same({{1, 2, 3}, {1, 2, 3}}, ember.cat({y[1]:view(1, 3), y[1]:view(1, 3)}, 1, nil):tolist())
    assert.are.same({{1, 2}, {3, 4}}, ember.stack({v1, f32({3, 4})}, nil, nil):tolist())
    local s, i = y:sort(2, true, false, nil)
    assert.are.same({{3, 2, 1}, {6, 5, 4}}, s:tolist())
    assert.are.same({{3, 2, 1}, {3, 2, 1}}, i:tolist())
    assert.are.same({{1, 2, 0}, {4, 5, 6}}, y:tril(1, nil):tolist())
    assert.are.same({{0, 2, 3}, {0, 0, 6}}, y:triu({diagonal = 1}):tolist())
    assert.are.same({1, 2, 4}, ember.logspace(0, 2, 3, {base = 2}):tolist())
    assert.are.same({1, 2, 4}, ember.logspace(0, 2, 3, 2, nil):tolist())
    assert.are.same({{1, 1, 2}, {2, 3, 3}}, ember.triu_indices(3, 3, {offset = 1}):tolist())
    local nf = y:new_full({2}, 7, {dtype = "int64"})
    assert.are.same("int64", nf.dtype)
    assert.are.same({7, 7}, nf:tolist())
    assert.are.same("int64", y:new_zeros(2, {dtype = "int64"}).dtype)
    assert.are.same({1, 2}, y:new_tensor({1, 2}, nil):tolist())
    assert.are.same({{1, 4}, {2, 5}, {3, 6}}, ember.einsum("ij->ji", y, nil):tolist())
    assert.are.same({{14}, {32}}, ember.tensordot(y, f32({{1}, {2}, {3}}), {dims = 1}):tolist())
    assert.are.same({1, 10, 2, 20}, ember.kron(v1, f32({1, 10}), nil):tolist())
    local a, b = ember.split(y, 1, 1, nil)
    assert.are.same({{1, 2, 3}}, a:tolist())
    assert.are.same({{4, 5, 6}}, b:tolist())
    assert.are.same({{1, 2, 3}}, (y:chunk(2, 1, nil)):tolist())
    assert.are.same({4, 5, 6}, select(2, y:unbind(1, nil)):tolist())
  end)
end)

describe("out= of the shape, index and einsum ops", function()
  -- f(out) writes the result into out and returns it: expected there; a
  -- zeros(bad) out is refused with op's message and left as it was
  local function writes(op, f, out, expected, bad)
    local r = f(out)
    assert.is_true(rawequal(r, out), op)
    assert.are.same(expected, out:tolist())
    local wrong = ember.zeros(table.unpack(bad))
    local e = refused(op, function() return f(wrong) end, "a wrong-shape out")
    assert.is_truthy(e:find("doesn't match", 1, true), e)
    assert.are.same(ember.zeros(table.unpack(bad)):tolist(), wrong:tolist())
  end

  it("diag, take, take_along_dim, index_copy, scatter_reduce", function()
    local x = X()
    writes("diag", function(o) return ember.diag(x, {out = o}) end, ember.zeros(2), {1, 5}, {3})
    writes("diag", function(o) return ember.diag(x, 1, {out = o}) end, ember.zeros(2), {2, 6}, {2, 2})
    writes("diag", function(o) return ember.diag(f32({1, 2}), {diagonal = 0, out = o}) end, ember.zeros(2, 2),
           {{1, 0}, {0, 2}}, {2})
    writes("take", function(o) return ember.take(x, {1, 6, 3}, {out = o}) end, ember.zeros(3), {1, 6, 3}, {2})
    writes("take_along_dim", function(o) return ember.take_along_dim(x, i64({{3}, {1}}), 2, {out = o}) end,
           ember.zeros(2, 1), {{3}, {4}}, {2})
    writes("take_along_dim", function(o) return ember.take_along_dim(x, i64({{3}, {1}}), {dim = 2, out = o}) end,
           ember.zeros(2, 1), {{3}, {4}}, {1, 2})
    writes("index_copy", function(o) return ember.index_copy(x, 1, {2}, f32({{7, 8, 9}}), {out = o}) end,
           ember.zeros(2, 3), {{1, 2, 3}, {7, 8, 9}}, {3, 2})
    local idx, src = i64({{1, 1}, {3, 3}}), f32({{10, 20}, {30, 40}})
    writes("scatter_reduce", function(o) return ember.scatter_reduce(x, 2, idx, src, "sum", {out = o}) end,
           ember.zeros(2, 3), {{31, 2, 3}, {4, 5, 76}}, {3, 2})
    writes("scatter_reduce",
           function(o) return ember.scatter_reduce(x, 2, idx, src, {reduce = "sum", include_self = false, out = o}) end,
           ember.zeros(2, 3), {{30, 2, 3}, {4, 5, 70}}, {6})
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, x:tolist())   -- the input untouched
  end)

  it("index_select, gather, scatter, scatter_add, index_add, masked_select, nonzero", function()
    local x = X()
    writes("index_select", function(o) return ember.index_select(x, 2, {3, 1}, {out = o}) end,
           ember.zeros(2, 2), {{3, 1}, {6, 4}}, {2, 3})
    writes("gather", function(o) return ember.gather(x, 2, i64({{2}, {3}}), {out = o}) end,
           ember.zeros(2, 1), {{2}, {6}}, {1, 2})
    local idx, src = i64({{3}, {1}}), f32({{7}, {8}})
    writes("scatter", function(o) return ember.scatter(x, 2, idx, src, {out = o}) end,
           ember.zeros(2, 3), {{1, 2, 7}, {8, 5, 6}}, {3, 2})
    writes("scatter", function(o) return ember.scatter(x, 2, idx, 0, {out = o}) end,
           ember.zeros(2, 3), {{1, 2, 0}, {0, 5, 6}}, {6})
    writes("scatter", function(o) return ember.scatter(x, 2, idx, src, "add", {out = o}) end,
           ember.zeros(2, 3), {{1, 2, 10}, {12, 5, 6}}, {2, 2})
    writes("scatter", function(o) return ember.scatter(x, 2, idx, src, {reduce = "multiply", out = o}) end,
           ember.zeros(2, 3), {{1, 2, 21}, {32, 5, 6}}, {2, 4})
    writes("scatter_add", function(o) return ember.scatter_add(x, 2, idx, src, {out = o}) end,
           ember.zeros(2, 3), {{1, 2, 10}, {12, 5, 6}}, {3})
    writes("index_add", function(o) return ember.index_add(x, 1, {2}, f32({{1, 1, 1}}), {alpha = 2, out = o}) end,
           ember.zeros(2, 3), {{1, 2, 3}, {6, 7, 8}}, {2, 2})
    writes("index_add", function(o) return ember.index_add(x, 1, {1}, f32({{1, 1, 1}}), {out = o}) end,
           ember.zeros(2, 3), {{2, 3, 4}, {4, 5, 6}}, {1, 3})
    local mask = ember.tensor({{false, true, false}, {true, false, true}})
    writes("masked_select", function(o) return ember.masked_select(x, mask, {out = o}) end,
           ember.zeros(3), {2, 4, 6}, {2})
    writes("nonzero", function(o) return ember.nonzero(f32({{0, 1}, {2, 0}}), {out = o}) end,
           ember.zeros(2, 2, {dtype = "int64"}), {{1, 2}, {2, 1}}, {2, 3})
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, x:tolist())
  end)

  it("cat, concat, stack, tril, triu, tensordot, kron, logspace", function()
    local a, b = f32({{1, 2}}), f32({{3, 4}})
    writes("cat", function(o) return ember.cat({a, b}, {out = o}) end, ember.zeros(2, 2), {{1, 2}, {3, 4}}, {1, 4})
    writes("cat", function(o) return ember.cat({a, b}, 2, {out = o}) end, ember.zeros(1, 4), {{1, 2, 3, 4}}, {2, 2})
    writes("cat", function(o) return ember.concat({a, b}, nil, {out = o}) end, ember.zeros(2, 2),
           {{1, 2}, {3, 4}}, {4})
    writes("stack", function(o) return ember.stack({a[1], b[1]}, {out = o}) end, ember.zeros(2, 2),
           {{1, 2}, {3, 4}}, {4})
    writes("stack", function(o) return ember.stack({a[1], b[1]}, 2, {out = o}) end, ember.zeros(2, 2),
           {{1, 3}, {2, 4}}, {2, 1})
    local m = ember.arange(1, 10, {dtype = "float32"}):view(3, 3)
    writes("tril", function(o) return ember.tril(m, {out = o}) end, ember.zeros(3, 3),
           {{1, 0, 0}, {4, 5, 0}, {7, 8, 9}}, {3})
    writes("tril", function(o) return ember.tril(m, -1, {out = o}) end, ember.zeros(3, 3),
           {{0, 0, 0}, {4, 0, 0}, {7, 8, 0}}, {2, 3})
    writes("triu", function(o) return ember.triu(m, {diagonal = 1, out = o}) end, ember.zeros(3, 3),
           {{0, 2, 3}, {0, 0, 6}, {0, 0, 0}}, {3, 2})
    -- [[1, 2, 3], [4, 5, 6]] . [1, 2, 3]: 14, 32
    local x = X()
    writes("tensordot", function(o) return ember.tensordot(x, f32({1, 2, 3}), 1, {out = o}) end, ember.zeros(2),
           {14, 32}, {3})
    writes("tensordot", function(o) return ember.tensordot(x, f32({1, 2, 3}), {{2}, {1}}, {out = o}) end,
           ember.zeros(2), {14, 32}, {2, 1})
    writes("tensordot", function(o) return ember.tensordot(x, f32({1, 2, 3}), {dims = 1, out = o}) end,
           ember.zeros(2), {14, 32}, {1})
    writes("kron", function(o) return ember.kron(f32({1, 2}), f32({1, 10}), {out = o}) end, ember.zeros(4),
           {1, 10, 2, 20}, {2, 2})
    writes("logspace", function(o) return ember.logspace(0, 2, 3, {out = o}) end, ember.zeros(3), {1, 10, 100}, {4})
    writes("logspace", function(o) return ember.logspace(0, 2, 3, 2, {out = o}) end,
           ember.zeros(3, {dtype = "int64"}), {1, 2, 4}, {2})
    local o = ember.zeros(3, {dtype = "int64"})
    assert.is_true(rawequal(o, ember.logspace(0, 2, 3, {out = o})))
    assert.are.same("int64", o.dtype)
    assert.are.same({1, 10, 100}, o:tolist())
    local e = refused("logspace", function() return ember.logspace(0, 2, 3, {out = o, requires_grad = true}) end,
                      "requires_grad with out")
    assert.is_truthy(e:find("records no gradient", 1, true), e)
  end)
end)
