-- lua/ember/doc/shape.lua — docstrings of the shape and index ops
-- (lua/bind_shape.c, scatter's reduce in lua/bind_index.c). Format: see
-- lua/ember/doc/ember.lua. Dims and index values are 1-based.
local entries = {}

local function add(name, also, sig, doc, example)
  entries[#entries + 1] = {name = name, also = also, sig = sig, doc = doc, example = example}
end

add("ember.flip", {"Tensor:flip"}, "ember.flip(t, dims...) or ember.flip(t, {dims})\nTensor:flip(dims...)", [[
Returns a copy of t with the order of elements reversed along each of dims (repeated
dims are an error). Any dtype; differentiable. Like torch.flip.]], [[
print(ember.arange(1, 7):view(2, 3):flip(2))   -- {{3, 2, 1}, {6, 5, 4}}]])

add("ember.fliplr", {"Tensor:fliplr", "ember.flipud", "Tensor:flipud"}, "ember.fliplr(t)  ember.flipud(t)", [[
fliplr flips dim 2 (t needs at least 2 dims), flipud flips dim 1.
Like torch.fliplr / flipud.]], [[
print(ember.tensor({{1, 2}, {3, 4}}):fliplr(), ember.tensor({1, 2}):flipud())]])

add("ember.roll", {"Tensor:roll"}, "ember.roll(t, shifts, [dims]) or (t, {shifts =, dims =})", [[
Rolls t by shifts along dims (numbers or tables of the same length): elements that roll
past the end come back at the start. Without dims, rolls the flattened tensor and
restores the shape. Returns a copy; differentiable. Like torch.roll.]], [[
print(ember.arange(1, 7):view(2, 3):roll(1, 2))   -- {{3, 1, 2}, {6, 4, 5}}
print(ember.arange(1, 5):roll(-1))                -- {2, 3, 4, 1}]])

add("ember.rot90", {"Tensor:rot90"}, "ember.rot90(t, [k], [dims]) or (t, {k =, dims =})", [[
Rotates t by 90 degrees k times (default 1; negative turns the other way) in the plane
of dims (default {1, 2}), from the first dim towards the second. Like torch.rot90.]], [[
print(ember.tensor({{1, 2}, {3, 4}}):rot90())   -- {{2, 4}, {1, 3}}]])

add("Tensor:repeat", nil, "t[\"repeat\"](t, sizes...)  (repeat is a Lua keyword)", [[
Repeats t along each dim sizes[i] times (whole copies side by side); sizes may have more
entries than t has dims (new leading dims). As `repeat` is a Lua keyword, call it as
t["repeat"](t, ...) or use t:tile(...), which is the same when sizes has at least t:dim()
entries. Differentiable. Like torch.Tensor.repeat.]], [[
local t = ember.tensor({1, 2})
print(t["repeat"](t, 2, 2))   -- {{1, 2, 1, 2}, {1, 2, 1, 2}}]])

add("ember.tile", {"Tensor:tile"}, "ember.tile(t, reps...)  Tensor:tile(reps...)", [[
Like repeat, but reps with fewer entries than t's dims are padded with leading 1s.
Like torch.tile.]], [[
print(ember.arange(1, 5):view(2, 2):tile(2))   -- {{1, 2, 1, 2}, {3, 4, 3, 4}}]])

add("ember.repeat_interleave", {"Tensor:repeat_interleave"},
  "ember.repeat_interleave(t, repeats, [dim], {output_size =})\nember.repeat_interleave(repeats)", [[
Repeats each slice of t along dim (default: over the flattened t) in place: repeats is
an integer or an int tensor with one count per slice. output_size, if given, must
equal the result's size along dim. With a repeats tensor alone, returns the 1-based
positions 1..n each repeated repeats[i] times. Differentiable. Like
torch.repeat_interleave.]], [[
print(ember.tensor({1, 2}):repeat_interleave(2))                  -- {1, 1, 2, 2}
print(ember.repeat_interleave(ember.tensor({2, 0, 1})))           -- {1, 1, 3}]])

add("ember.movedim", {"Tensor:movedim", "ember.moveaxis", "Tensor:moveaxis"},
  "ember.movedim(t, source, destination)", [[
Returns a view of t with the dims in source (a dim or a table) moved to the positions in
destination; the other dims keep their order. Like torch.movedim.]], [[
print(ember.zeros(2, 3, 4):movedim(1, 3).shape)   -- ember.Size({3, 4, 2})]])

add("ember.unbind", {"Tensor:unbind"}, "ember.unbind(t, [dim]) -> t1, t2, ...", [[
Returns the slices of t along dim (default 1) as several views. Like torch.unbind.]], [[
local a, b = ember.tensor({{1, 2}, {3, 4}}):unbind()
print(a, b)]])

add("ember.unflatten", {"Tensor:unflatten"}, "ember.unflatten(t, dim, sizes)", [[
Splits dim into sizes (a table; one entry may be -1), a view where the strides allow.
Like torch.unflatten.]], [[
print(ember.zeros(2, 12):unflatten(2, {3, -1}).shape)   -- ember.Size({2, 3, 4})]])

add("ember.swapaxes", {"Tensor:swapaxes", "ember.swapdims", "Tensor:swapdims"}, "ember.swapaxes(t, dim0, dim1)", [[
transpose under NumPy's name: a view with the two dims exchanged. Like torch.swapaxes.]], [[
print(ember.zeros(2, 3):swapaxes(1, 2).shape)   -- ember.Size({3, 2})]])

add("ember.diagonal", nil, "ember.diagonal(t, [offset], [dim1], [dim2]) or (t, {offset =, dim1 =, dim2 =})", [[
A view of the diagonal `offset` (0 the main one, > 0 above, < 0 below) of the matrices
in dims dim1 and dim2 (default 1 and 2), which are removed and become the last dim.
Differentiable (twice too). Like torch.diagonal.]], [[
local m = ember.arange(1, 10):view(3, 3)
print(m:diagonal(), m:diagonal(1))   -- {1, 5, 9}  {2, 6}]])

add("ember.diag", {"Tensor:diag"}, "ember.diag(t, [diagonal])", [[
A 1-D t gives the square matrix with t on diagonal `diagonal`; a 2-D t gives (a copy
of) that diagonal. Like torch.diag.]], [[
print(ember.diag(ember.tensor({1, 2})))   -- {{1, 0}, {0, 2}}]])

add("ember.diag_embed", {"Tensor:diag_embed"}, "ember.diag_embed(t, [offset], [dim1], [dim2])", [[
Puts the last dim of t on diagonal `offset` of new dims dim1, dim2 (default -2, -1) of
a zero tensor with one more dim. Differentiable. Like torch.diag_embed.]], [[
print(ember.diag_embed(ember.tensor({{1, 2}, {3, 4}})).shape)   -- ember.Size({2, 2, 2})]])

add("ember.diagflat", {"Tensor:diagflat"}, "ember.diagflat(t, [offset])", [[
The flattened t on diagonal `offset` of a square matrix. Like torch.diagflat.]], [[
print(ember.diagflat(ember.tensor({{1, 2}})))]])

add("ember.trace", {"Tensor:trace"}, "ember.trace(t)", [[
The sum of the main diagonal of a 2-D t (integers sum to int64). Like torch.trace.]], [[
print(ember.arange(1, 10):view(3, 3):trace())   -- 15]])

add("ember.take", {"Tensor:take"}, "ember.take(t, index)", [[
Reads t as if flattened at the 1-based (negative: from the end) positions in index
(a tensor or a table); the result has index's shape. Like torch.take.]], [[
print(ember.tensor({{1, 2}, {3, 4}}):take({4, 1}))   -- {4, 1}]])

add("ember.take_along_dim", {"Tensor:take_along_dim"}, "ember.take_along_dim(t, indices, [dim])", [[
gather along dim after broadcasting t and indices in the other dims; without dim, over
the flattened t. Pairs with argmax/argsort/topk results. Like torch.take_along_dim.]], [[
local x = ember.tensor({{10, 30, 20}, {60, 40, 50}})
print(x:take_along_dim(x:argmax(2, true), 2))   -- {{30}, {60}}]])

add("ember.index_fill", {"Tensor:index_fill", "Tensor:index_fill_"}, "ember.index_fill(t, dim, index, value)\nTensor:index_fill_(dim, index, value)", [[
Sets the slices of t along dim at the 1-based index (tensor or table) to value (a
number or a 0-d tensor). index_fill_ works in place. Like torch.index_fill.]], [[
print(ember.zeros(2, 3):index_fill(2, {1, 3}, 7))   -- {{7, 0, 7}, {7, 0, 7}}]])

add("ember.index_copy", {"Tensor:index_copy", "Tensor:index_copy_"}, "ember.index_copy(t, dim, index, source)", [[
Copies the slices of source (t's shape with dim of the index's length, t's dtype) into
t along dim at the 1-based index. index_copy_ works in place; differentiable. Like
torch.index_copy.]], [[
print(ember.zeros(2, 2):index_copy(1, {2}, ember.tensor({{1., 2.}})))   -- {{0, 0}, {1, 2}}]])

add("ember.masked_scatter", {"Tensor:masked_scatter", "Tensor:masked_scatter_"}, "ember.masked_scatter(t, mask, source)", [[
Writes source's elements, in order, at the true positions of the bool mask (broadcast
with t); source needs at least as many elements as the mask has true ones and t's
dtype. Like torch.masked_scatter.]], [[
local m = ember.tensor({true, false, true})
print(ember.zeros(3):masked_scatter(m, ember.tensor({1., 2.})))   -- {1, 0, 2}]])

add("ember.scatter_reduce", {"Tensor:scatter_reduce", "Tensor:scatter_reduce_"},
  "ember.scatter_reduce(t, dim, index, src, reduce, [include_self]) or (..., {reduce =, include_self =})", [[
Reduces the src values that index sends to each position of t (as scatter does, 1-based)
with reduce = "sum", "prod", "mean", "amax" or "amin", together with t's own value
unless include_self = false (default true). Integer "mean" floors. src has t's dtype.
Differentiable for float dtypes (amax/amin share the gradient among equal values).
t:scatter(dim, index, src, reduce) also takes reduce = "add" or "multiply". Like
torch.scatter_reduce.]], [[
local t = ember.zeros(3)
print(t:scatter_reduce(1, ember.tensor({1, 1, 3}), ember.tensor({5., 2., 7.}), "amax", false))   -- {5, 0, 7}]])

add("ember.one_hot", {"ember.nn.functional.one_hot"}, "ember.one_hot(t, [num_classes])\nF.one_hot(t, [num_classes])", [[
int64 one-hot vectors of the 1-based int64 class values in t: class c sets position c
of a new last dim of size num_classes (default -1: the largest value). Like
torch.nn.functional.one_hot, with ember's 1-based classes.]], [[
print(ember.one_hot(ember.tensor({1, 3}), 3))   -- {{1, 0, 0}, {0, 0, 1}}]])

add("ember.meshgrid", nil, "ember.meshgrid(t1, t2, ..., [{indexing =}]) -> g1, g2, ...", [[
Grids (expanded views) of 0-d/1-D tensors of one dtype: g_i varies along dim i.
indexing "ij" (default) or "xy" (the first two dims swapped). Like torch.meshgrid.]], [[
local gx, gy = ember.meshgrid(ember.tensor({1, 2}), ember.tensor({3, 4, 5}))
print(gx.shape, gy)]])

add("ember.cartesian_prod", nil, "ember.cartesian_prod(t1, t2, ...)", [[
Every combination of the elements of 1-D tensors, one per row. Like torch.cartesian_prod.]], [[
print(ember.cartesian_prod(ember.tensor({1, 2}), ember.tensor({3, 4})))]])

add("ember.block_diag", nil, "ember.block_diag(t1, t2, ...)", [[
A block-diagonal matrix of 0-, 1- or 2-D tensors (promoted to one dtype).
Differentiable. Like torch.block_diag.]], [[
print(ember.block_diag(ember.ones(1, 1), ember.tensor({{2, 3}})))]])

add("ember.broadcast_tensors", nil, "ember.broadcast_tensors(t1, t2, ...) -> v1, v2, ...", [[
Views of the tensors expanded to their common broadcast shape.
Like torch.broadcast_tensors.]], [[
local a, b = ember.broadcast_tensors(ember.zeros(2, 1), ember.zeros(3))
print(a.shape, b.shape)]])

add("ember.broadcast_to", {"Tensor:broadcast_to"}, "ember.broadcast_to(t, shape)", [[
A view of t expanded to shape (-1 keeps a size). Like torch.broadcast_to.]], [[
print(ember.tensor({1, 2}):broadcast_to(2, 2))]])

add("ember.atleast_1d", {"ember.atleast_2d", "ember.atleast_3d"}, "ember.atleast_1d(t, ...)  atleast_2d  atleast_3d", [[
Views with at least 1, 2 or 3 dims, as NumPy/PyTorch add them ([n] -> [1, n] -> [1, n, 1];
[m, n] -> [m, n, 1]); several tensors give several results. Like torch.atleast_1d.]], [[
print(ember.atleast_3d(ember.tensor({1, 2})).shape)   -- ember.Size({1, 2, 1})]])

add("Tensor:new_zeros", {"Tensor:new_ones", "Tensor:new_empty", "Tensor:new_full", "Tensor:new_tensor"},
  "t:new_zeros(size..., [opts])  new_ones  new_empty\nt:new_full(size, value, [opts])  t:new_tensor(data, [opts])", [[
New tensors with t's dtype and device unless opts (dtype, device, requires_grad) say
otherwise. Like torch.Tensor.new_zeros and friends.]], [[
local x = ember.zeros(2, {dtype = "float64"})
print(x:new_ones(2, 2).dtype, x:new_full({2}, 7), x:new_tensor({1, 2}))]])

add("ember.logspace", nil, "ember.logspace(start, end, steps, [base], [opts])", [[
steps values base^x for x evenly spaced from start to end (base default 10; also
opts.base). opts: dtype, device, requires_grad. Like torch.logspace.]], [[
print(ember.logspace(0, 2, 3))   -- {1, 10, 100}]])

add("ember.tril_indices", {"ember.triu_indices"}, "ember.tril_indices(row, col, [offset], [opts])", [[
The 1-based [2, N] coordinates (rows, then columns) of the lower (triu_indices: upper)
triangle of a row x col matrix, diagonal `offset` included, row by row. opts: dtype
(int64), device. Like torch.tril_indices.]], [[
print(ember.tril_indices(3, 3))   -- {{1, 2, 2, 3, 3, 3}, {1, 1, 2, 1, 2, 3}}]])

return entries
