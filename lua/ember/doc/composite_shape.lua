-- Docs of the stacking, splitting and array utilities composed in Lua
-- (lua/ember/composite/shape.lua). Format: ember/help.lua. Those PyTorch has as tensor
-- methods are ember.X and Tensor:X (one function, one entry); the others are ember.X only.
-- Positions (tensor_split, hsplit, vsplit, dsplit) are 1-based starts of pieces.
local entries = {}

local function add(e) entries[#entries + 1] = e end

add {
  name = "ember.hstack",
  sig = "ember.hstack(tensors)",
  doc = [[
Joins a non-empty table of tensors column-wise: 0-d ones become 1-D, then cat along dim
1 when the first is 1-D, else dim 2. dtypes promote as in cat.
Like torch.hstack.]],
  example = [[
print(ember.hstack({ember.tensor({1, 2}), ember.tensor({3})}))   -- [1, 2, 3]
print(ember.hstack({ember.ones(2, 1), ember.zeros(2, 2)}).shape)   -- {2, 3}]],
}

add {
  name = "ember.vstack",
  sig = "ember.vstack(tensors)",
  doc = [[
Joins a non-empty table of tensors row-wise: each made at least 2-D (a 1-D [n] becomes
[1, n]), then cat along dim 1.
Like torch.vstack.]],
  example = [=[
print(ember.vstack({ember.tensor({1, 2}), ember.tensor({3, 4})}))   -- [[1, 2], [3, 4]]]=],
}

add {
  name = "ember.row_stack",
  sig = "ember.row_stack(tensors)",
  doc = [[
vstack's other name.
Like torch.row_stack.]],
  example = [[
print(ember.row_stack({ember.tensor({1, 2}), ember.ones(1, 2, {dtype = "int64"})}))]],
}

add {
  name = "ember.dstack",
  sig = "ember.dstack(tensors)",
  doc = [[
Joins a non-empty table of tensors depth-wise: each made at least 3-D (a 1-D [n] becomes
[1, n, 1], a 2-D [m, n] becomes [m, n, 1]), then cat along dim 3.
Like torch.dstack.]],
  example = [[
print(ember.dstack({ember.tensor({1, 2}), ember.tensor({3, 4})}).shape)   -- {1, 2, 2}]],
}

add {
  name = "ember.column_stack",
  sig = "ember.column_stack(tensors)",
  doc = [[
Joins a non-empty table of tensors as columns: 0-d and 1-D tensors become columns [n,
1], the others stay as they are; cat along dim 2.
Like torch.column_stack.]],
  example = [=[
print(ember.column_stack({ember.tensor({1, 2}), ember.tensor({3, 4})}))   -- [[1, 3], [2, 4]]]=],
}

add {
  name = "ember.concatenate",
  sig = "ember.concatenate(tensors [, dim])",
  doc = [[
cat's other name (as ember.concat): joins a non-empty table of tensors along dim
(1-based, default 1).
Like torch.concatenate.]],
  example = [=[
print(ember.concatenate({ember.ones(1, 2), ember.zeros(1, 2)}, 2))   -- [[1, 1, 0, 0]]]=],
}

add {
  name = "ember.tensor_split",
  also = {"Tensor:tensor_split"},
  sig = "ember.tensor_split(t, indices_or_sections [, dim])\n"
    .. "Tensor:tensor_split(indices_or_sections [, dim])",
  doc = [[
Splits t along dim (1-based, default 1; also {dim =}) into `sections` pieces when given
an integer (n // sections elements each, one more in the first n % sections), or at the
positions of a table or of a 1-D int64 tensor (a 0-d int64 tensor is a number of
sections). Positions are 1-based starts of pieces (PyTorch's 0-based indices + 1, as
narrow's start; negative from the end; past the end they clamp, and a position before
the previous one gives an empty piece). The pieces are views of t, returned as several
values (put braces around the call for a table).
Like torch.tensor_split, with 1-based dim and positions.]],
  example = [[
local x = ember.arange(7)
print(x:tensor_split(3))          -- [0, 1, 2]  [3, 4]  [5, 6]
print(x:tensor_split({2, 5}))     -- [0]  [1, 2, 3]  [4, 5, 6]: pieces start at 1, 2 and 5]],
}

add {
  name = "ember.hsplit",
  also = {"Tensor:hsplit"},
  sig = "ember.hsplit(t, indices_or_sections)\nTensor:hsplit(indices_or_sections)",
  doc = [[
Splits t along dim 2 (dim 1 for a 1-D t) into `sections` equal pieces (the size must
divide), or at the positions of a table. Positions are 1-based starts of pieces
(PyTorch's 0-based indices + 1, as narrow's start; negative from the end; past the end
they clamp, and a position before the previous one gives an empty piece). The pieces are
views of t, returned as several values (put braces around the call for a table).
Like torch.hsplit, with 1-based positions.]],
  example = [=[
local a, b = ember.arange(6):view(2, 3):hsplit({3})
print(a, b)   -- [[0, 1], [3, 4]]  [[2], [5]]]=],
}

add {
  name = "ember.vsplit",
  also = {"Tensor:vsplit"},
  sig = "ember.vsplit(t, indices_or_sections)\nTensor:vsplit(indices_or_sections)",
  doc = [[
Splits t (at least 2-D) along dim 1 into `sections` equal pieces or at the positions of
a table (1-based starts of pieces). The pieces are views of t, returned as several
values (put braces around the call for a table).
Like torch.vsplit, with 1-based positions.]],
  example = [=[
local a, b = ember.arange(6):view(3, 2):vsplit({2})
print(a, b)   -- [[0, 1]]  [[2, 3], [4, 5]]]=],
}

add {
  name = "ember.dsplit",
  also = {"Tensor:dsplit"},
  sig = "ember.dsplit(t, indices_or_sections)\nTensor:dsplit(indices_or_sections)",
  doc = [[
Splits t (at least 3-D) along dim 3 into `sections` equal pieces or at the positions of
a table (1-based starts of pieces). The pieces are views of t, returned as several
values (put braces around the call for a table).
Like torch.dsplit, with 1-based positions.]],
  example = [[
local a, b = ember.ones(2, 2, 4):dsplit(2)
print(a.shape, b.shape)   -- {2, 2, 2} twice]],
}

add {
  name = "ember.split_with_sizes",
  also = {"Tensor:split_with_sizes"},
  sig = "ember.split_with_sizes(t, split_sizes [, dim])\nTensor:split_with_sizes(split_sizes [, dim])",
  doc = [[
Splits t along dim (1-based, default 1; also {dim =}) into pieces of the sizes in the
table split_sizes: non-negative, adding up to the dim's size. The pieces are views of t,
returned as several values (put braces around the call for a table).
Like torch.split_with_sizes.]],
  example = [=[
local a, b, c = ember.arange(5):split_with_sizes({2, 0, 3})
print(a, b, c)   -- [0, 1]  []  [2, 3, 4]]=],
}

add {
  name = "ember.ravel",
  also = {"Tensor:ravel"},
  sig = "ember.ravel(t)\nTensor:ravel()",
  doc = [[
t flattened to 1-D (a 0-d t gives [1]): a view when t is contiguous, else a contiguous
copy.
Like torch.ravel.]],
  example = [=[
local x = ember.arange(6):view(2, 3)
print(x:ravel():is_view_of(x), x:t():ravel())   -- true  [0, 3, 1, 4, 2, 5]]=],
}

add {
  name = "ember.msort",
  also = {"Tensor:msort"},
  sig = "ember.msort(t)\nTensor:msort()",
  doc = [[
t sorted ascending along dim 1 (the values only: sort(t, 1)'s first result).
Differentiable.
Like torch.msort.]],
  example = [=[
print(ember.tensor({{3, 1}, {1, 2}}):msort())   -- [[1, 1], [3, 2]]]=],
}

add {
  name = "ember.diff",
  also = {"Tensor:diff"},
  sig = "ember.diff(t [, n = 1 [, dim = -1 [, prepend [, append]]]])\n"
    .. "Tensor:diff([n = 1 [, dim = -1 [, prepend [, append]]]])",
  doc = [[
The n-th forward difference along dim: out[i] = t[i + 1] - t[i], applied n times (for
bool, logical_xor); each pass is one element shorter, down to empty. prepend and append
(tensors of t's number of dims and of its sizes except along dim) are joined before and
after t first, with the dtypes promoted. Arguments by position or in a trailing table.
Like torch.diff, with a 1-based dim.]],
  example = [=[
local t = ember.tensor({1, 4, 9, 16})
print(t:diff(), t:diff(2))   -- [3, 5, 7]  [2, 2]
print(t:diff({prepend = ember.tensor({0})}))   -- [1, 3, 5, 7]]=],
}

add {
  name = "ember.isin",
  sig = "ember.isin(elements, test_elements [, {assume_unique = false, invert = false}])",
  doc = [[
A bool tensor of elements' shape: whether each element equals one of test_elements
(either may be a number; a number as elements gives a 0-d result). The two are compared
in their promoted dtype; NaN is never found. invert negates the result; assume_unique is
a hint for speed in PyTorch and changes nothing here. Bool tensors are refused, as in
PyTorch. Sorts test_elements: O((n + m) log m).
Like torch.isin.]],
  example = [[
print(ember.isin(ember.tensor({1, 2, 3, 4}), ember.tensor({2, 4})))   -- [false, true, false, true]
print(ember.isin(3, ember.tensor({1, 3})))   -- true]],
}

add {
  name = "ember.trapezoid",
  sig = "ember.trapezoid(y [, x] [, {dx = 1, dim = -1}])",
  doc = [[
The integral of y along dim by the trapezoid rule: the sum of (y[i] + y[i+1]) / 2 times
the spacing. No samples along dim give zeros (in y's dtype). x (sample points, a tensor)
goes by position; dx (a constant spacing, default 1) and dim (1-based, default -1) only
in the options table; x and dx are exclusive. A 1-D x lies along dim and needs one point
per sample; an x of other dims has its differences along dim broadcast against y's.
Integer y gives a float result; bool is refused. Differentiable in y and x.
Like torch.trapezoid, with a 1-based dim.]],
  example = [[
print(ember.trapezoid(ember.tensor({1.0, 2.0, 3.0})))                          -- 4
print(ember.trapezoid(ember.tensor({1.0, 2.0, 3.0}), ember.tensor({0.0, 1.0, 3.0})))   -- 6.5]],
}

add {
  name = "ember.trapz",
  sig = "ember.trapz(y [, x] [, {dx = 1, dim = -1}])",
  doc = [[
trapezoid's other name. x (sample points, a tensor) goes by position; dx (a constant
spacing, default 1) and dim (1-based, default -1) only in the options table; x and dx
are exclusive. A 1-D x lies along dim and needs one point per sample; an x of other dims
has its differences along dim broadcast against y's. Integer y gives a float result;
bool is refused. Differentiable in y and x.
Like torch.trapz, with a 1-based dim.]],
  example = [[
print(ember.trapz(ember.tensor({1.0, 2.0, 3.0}), {dx = 2}))   -- 8]],
}

add {
  name = "ember.cumulative_trapezoid",
  sig = "ember.cumulative_trapezoid(y [, x] [, {dx = 1, dim = -1}])",
  doc = [[
The running integral of y along dim by the trapezoid rule: one value fewer than y has
along dim, the last equal to trapezoid's. x (sample points, a tensor) goes by position;
dx (a constant spacing, default 1) and dim (1-based, default -1) only in the options
table; x and dx are exclusive. A 1-D x lies along dim and needs one point per sample; an
x of other dims has its differences along dim broadcast against y's. Integer y gives a
float result; bool is refused. Differentiable in y and x.
Like torch.cumulative_trapezoid, with a 1-based dim.]],
  example = [=[
print(ember.cumulative_trapezoid(ember.tensor({1.0, 2.0, 3.0})))   -- [1.5, 4]]=],
}

add {
  name = "ember.cov",
  also = {"Tensor:cov"},
  sig = "ember.cov(input [, {correction = 1, fweights =, aweights =}])\n"
    .. "Tensor:cov([{correction = 1, fweights =, aweights =}])",
  doc = [[
The covariance matrix of the variables of input: rows are variables, columns
observations (a 1-D input is one variable and gives a 0-d result). correction (an
integer; 1 is Bessel's) is subtracted from the number of observations; fweights (integer
frequencies) and aweights (float weights), 1-D with one non-negative entry per
observation, weight them. With no degrees of freedom left the division by zero gives inf
or NaN (PyTorch also warns; ember does not). All options keyword-only. Differentiable in
input and aweights.
Like torch.cov; PyTorch zeroes its input in place for one observation with one kind of
weights, ember leaves it alone.]],
  example = [=[
print(ember.tensor({{1, 2, 3}, {2, 0, 5}}):cov())   -- [[1, 1.5], [1.5, 6.3333]]]=],
}

add {
  name = "ember.corrcoef",
  also = {"Tensor:corrcoef"},
  sig = "ember.corrcoef(input)\nTensor:corrcoef()",
  doc = [[
The Pearson correlation coefficients of the rows of input (variables; columns are
observations): cov divided by the standard deviations, clipped to [-1, 1]. A row of
constant values gives NaN; a 1-D input gives 1.
Like torch.corrcoef.]],
  example = [=[
print(ember.tensor({{1.0, 2.0, 3.0}, {3.0, 1.0, 2.0}}):corrcoef())   -- [[1, -0.5], [-0.5, 1]]]=],
}

add {
  name = "ember.dist",
  also = {"Tensor:dist"},
  sig = "ember.dist(input, other [, p = 2])\nTensor:dist(other [, p = 2])",
  doc = [[
The p-norm of input - other (broadcast) as a 0-d tensor: p = 0 counts the nonzero
differences, math.huge and -math.huge give the largest and smallest |difference|. One of
the two must be floating-point. Differentiable except for p = 0, whose result does not
require grad (PyTorch's backward raises there).
Like torch.dist.]],
  example = [[
print(ember.tensor({1.0, 2.0}):dist(ember.tensor({4.0, 6.0})))      -- 5
print(ember.dist(ember.tensor({1.0, 2.0}), ember.tensor({4.0, 6.0}), 1))   -- 7]],
}

add {
  name = "ember.vander",
  sig = "ember.vander(x [, N [, increasing = false]])",
  doc = [[
The Vandermonde matrix of the 1-D x: [#x, N] (N defaults to #x), columns x^(N-1) .. x^0,
or x^0 .. x^(N-1) when increasing. Integer and bool x give int64 (PyTorch's promotion).
Running products, as PyTorch's; differentiable (PyTorch's own backward fails).
Like torch.vander.]],
  example = [=[
print(ember.vander(ember.tensor({1, 2, 3})))   -- [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
print(ember.vander(ember.tensor({2.0}), 3, true))   -- [[1, 2, 4]]]=],
}

add {
  name = "ember.histogram",
  also = {"Tensor:histogram"},
  sig = "ember.histogram(input [, bins = 100] [, {range =, weight =, density = false}]) -> hist, bin_edges\n"
    .. "Tensor:histogram([bins = 100] [, {range =, weight =, density = false}]) -> hist, bin_edges",
  doc = [[
A histogram of input's elements; returns hist, bin_edges. bins is a number of equal bins
between range = {min, max} (default: the data's minimum and maximum, [0, 1] for no data,
widened by 0.5 each way when equal; it must be finite), or a 1-D tensor of
non-decreasing edges (of input's dtype, at least 2). Bin k holds edges[k] <= v <
edges[k+1], the last bin also its right edge; values outside and NaN count nowhere.
weight (input's dtype and number of elements) adds its values instead of ones; density
divides by the total and the bin widths. float32 and float64 only. The edges are
PyTorch's, bit for bit (its linspace). Not differentiable: the results do not require
grad (PyTorch's backward raises).
Like torch.histogram.]],
  example = [[
local hist, edges = ember.tensor({1.0, 2.0, 1.0}):histogram(2)
print(hist, edges)   -- [2, 1]  [1, 1.5, 2]
print((ember.histogram(ember.tensor({0.5, 2.5}), ember.tensor({0.0, 1.0, 3.0}), {density = true})))]],
}

return entries
