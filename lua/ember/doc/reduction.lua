-- Docstrings of the reductions by order and counting (lua/bind_reduce.c over
-- engine/reduce_order.c): median, nanmedian, mode, kthvalue, quantile,
-- nanquantile, nansum, nanmean, count_nonzero, aminmax, var_mean, std_mean,
-- cummax, cummin, logcumsumexp, unique, unique_consecutive, bincount, histc,
-- searchsorted, bucketize. Format: lua/ember/doc/ember.lua's header. The older
-- reductions (sum, var, std, ...) are documented in doc/ember.lua.

local entries = {}

local function add(e) entries[#entries + 1] = e end

local DIM_OPTS = [[
dim is 1-based (negative counts from the end); the optional arguments may also come in
a trailing table by name, e.g. {dim = 2, keepdim = true}.]]

add {
  name = "ember.median",
  also = {"Tensor:median"},
  sig = "ember.median(t) -> 0-d tensor\n"
    .. "ember.median(t, dim, [keepdim]) -> values, indices\n"
    .. "Tensor:median([dim], [keepdim])",
  doc = [[
The median: of an even number of elements the lower of the two middle ones (no
averaging). Without dim, of all elements (a 0-d tensor; NaN for an empty float tensor);
with dim, of each line along dim, with the 1-based int64 index of the element taken.
A NaN makes the median NaN (its index is then that of the line's first NaN); see
ember.nanmedian to skip NaN. Differentiable: the gradient goes to the element taken.
]] .. DIM_OPTS .. "\nLike torch.median.",
  example = [=[
local x = ember.tensor({{1, 5, 2, 8}, {3, 3, 0, 1}})
print(x:median())                 -- tensor(2)
local v, i = x:median(2)
print(v, i)                       -- [2, 1]  [3, 4]]=],
}

add {
  name = "ember.nanmedian",
  also = {"Tensor:nanmedian"},
  sig = "ember.nanmedian(t) -> 0-d tensor\n"
    .. "ember.nanmedian(t, dim, [keepdim]) -> values, indices\n"
    .. "Tensor:nanmedian([dim], [keepdim])",
  doc = [[
ember.median, ignoring NaN: the lower middle of the values that are not NaN (NaN only
where a line is all NaN).
]] .. DIM_OPTS .. "\nLike torch.nanmedian.",
  example = [=[
local x = ember.tensor({{1, 0/0, 3, 2}, {0/0, 4, 0/0, 0/0}})
print(x:nanmedian(2))             -- [2, 4]  [4, 2]
print(x:median(2))                -- [nan, nan]  [2, 1]]=],
}

add {
  name = "ember.kthvalue",
  also = {"Tensor:kthvalue"},
  sig = "ember.kthvalue(t, k, [dim], [keepdim]) -> values, indices\n"
    .. "Tensor:kthvalue(k, [dim], [keepdim])",
  doc = [[
The k-th smallest element (k from 1 to the size of dim) of each line along dim
(default -1, the last), with its 1-based index. NaN counts as larger than every number.
Differentiable.
]] .. DIM_OPTS .. "\nLike torch.kthvalue.",
  example = [=[
local v, i = ember.tensor({{4, 1, 3}, {0, 9, 5}}):kthvalue(2)
print(v, i)                       -- [3, 5]  [3, 3]]=],
}

add {
  name = "ember.mode",
  also = {"Tensor:mode"},
  sig = "ember.mode(t, [dim], [keepdim]) -> values, indices\n"
    .. "Tensor:mode([dim], [keepdim])",
  doc = [[
The most frequent value of each line along dim (default -1), the smallest one when
several are equally frequent, with the 1-based index of its last occurrence (PyTorch
leaves which occurrence unspecified). NaNs are all different from each other.
Differentiable (the gradient goes to that occurrence).
]] .. DIM_OPTS .. "\nLike torch.mode.",
  example = [=[
local v, i = ember.tensor({{1, 2, 2, 3, 3}, {7, 7, 0, 1, 0}}):mode(2)
print(v, i)                       -- [2, 0]  [3, 5]]=],
}

add {
  name = "ember.quantile",
  also = {"Tensor:quantile"},
  sig = "ember.quantile(t, q, [dim], [keepdim], [interpolation]) -> tensor\n"
    .. "Tensor:quantile(q, [dim], [keepdim], [interpolation])",
  doc = [[
The q-th quantiles of each line along dim, or of all elements when dim is nil. q is a
number in [0, 1], or a 0-d or 1-D tensor of them with t's dtype (a 1-D q puts the
quantiles in a new first dim). t must be float32 or float64. Between the two sorted
elements around position q (n - 1), interpolation chooses: "linear" (default), "lower",
"higher", "midpoint", "nearest" (ties to even, as PyTorch). A NaN in a line makes its
quantiles NaN (see ember.nanquantile). Differentiable (through the sort and the
interpolation).
]] .. DIM_OPTS .. "\nThe options table also takes interpolation. Like torch.quantile.",
  example = [=[
local x = ember.tensor({{1, 2, 3, 4}, {10, 0, 5, 5}}, {dtype = "float64"})
print(x:quantile(0.5, 2))                                   -- [2.5, 5]
print(x:quantile(0.5, 2, {interpolation = "lower"}))        -- [2, 5]
print(x:quantile(ember.tensor({0.25, 0.75}, {dtype = "float64"})))   -- [1.75, 5]]=],
}

add {
  name = "ember.nanquantile",
  also = {"Tensor:nanquantile"},
  sig = "ember.nanquantile(t, q, [dim], [keepdim], [interpolation]) -> tensor\n"
    .. "Tensor:nanquantile(q, [dim], [keepdim], [interpolation])",
  doc = [[
ember.quantile over the values that are not NaN (NaN where a line is all NaN).
Like torch.nanquantile.]],
  example = [=[
local x = ember.tensor({1, 0/0, 3, 2}, {dtype = "float64"})
print(x:nanquantile(0.5), x:quantile(0.5))                  -- 2  nan]=],
}

add {
  name = "ember.nansum",
  also = {"Tensor:nansum"},
  sig = "ember.nansum(t, [dims], [keepdim], [{dtype=}])\nTensor:nansum([dims], [keepdim])",
  doc = [[
ember.sum with NaN counted as zero. dims: a dim or a table of dims (nil: all).
Like torch.nansum.]],
  example = [=[
print(ember.tensor({{1, 0/0}, {2, 3}}):nansum(2))           -- [1, 5]]=],
}

add {
  name = "ember.nanmean",
  also = {"Tensor:nanmean"},
  sig = "ember.nanmean(t, [dims], [keepdim], [{dtype=}])\nTensor:nanmean([dims], [keepdim])",
  doc = [[
The mean of the values that are not NaN (NaN where there are none). Floating dtypes.
Like torch.nanmean.]],
  example = [=[
print(ember.tensor({{1, 0/0}, {2, 3}}):nanmean(2))          -- [1, 2.5]]=],
}

add {
  name = "ember.count_nonzero",
  also = {"Tensor:count_nonzero"},
  sig = "ember.count_nonzero(t, [dims])\nTensor:count_nonzero([dims])",
  doc = [[
The number of non-zero elements (int64) over dims (a dim or a table of dims; nil: all).
NaN counts as non-zero. Like torch.count_nonzero.]],
  example = [=[
local x = ember.tensor({{0, 1, 2}, {0, 0, 3}})
print(x:count_nonzero(), x:count_nonzero(1))                -- 3  [0, 1, 2]]=],
}

add {
  name = "ember.aminmax",
  also = {"Tensor:aminmax"},
  sig = "ember.aminmax(t, [dim], [keepdim]) -> min, max\nTensor:aminmax([dim], [keepdim])",
  doc = [[
ember.amin and ember.amax in one call, over all elements or along dim; also
{dim =, keepdim =}. Differentiable. Like torch.aminmax.]],
  example = [=[
local mn, mx = ember.tensor({{4, -1}, {0, 8}}):aminmax{dim = 2}
print(mn, mx)                     -- [-1, 0]  [4, 8]]=],
}

add {
  name = "ember.var_mean",
  sig = "ember.var_mean(t, [dims], [keepdim], [{correction =, unbiased =}]) -> var, mean",
  doc = [[
ember.var and ember.mean of the same dims in one call. The divisor of the variance is
N - correction (default 1); {unbiased = false} or a lone boolean argument is the old
spelling (correction 0 or 1). Differentiable. Like torch.var_mean.]],
  example = [=[
local x = ember.tensor({1, 2, 3, 4}, {dtype = "float64"})
print(ember.var_mean(x))                          -- 1.6667  2.5
print(ember.var_mean(x, {correction = 0}))        -- 1.25  2.5]=],
}

add {
  name = "ember.std_mean",
  sig = "ember.std_mean(t, [dims], [keepdim], [{correction =, unbiased =}]) -> std, mean",
  doc = [[
ember.std and ember.mean in one call; arguments as ember.var_mean. Like torch.std_mean.]],
  example = [=[
local x = ember.tensor({{1, 3}, {5, 9}}, {dtype = "float64"})
print(ember.std_mean(x, 2, false, {unbiased = false}))       -- [1, 2]  [2, 7]]=],
}

add {
  name = "ember.cummax",
  also = {"Tensor:cummax"},
  sig = "ember.cummax(t, dim) -> values, indices\nTensor:cummax(dim)",
  doc = [[
The running maximum along dim and the 1-based index where it was reached (the later
one of equal values, as PyTorch). A NaN, once met, stays (pointing at the latest NaN).
The dtype is kept. Differentiable. Like torch.cummax.]],
  example = [=[
local v, i = ember.tensor({1, 3, 2, 3, 5}):cummax(1)
print(v, i)                       -- [1, 3, 3, 3, 5]  [1, 2, 2, 4, 5]]=],
}

add {
  name = "ember.cummin",
  also = {"Tensor:cummin"},
  sig = "ember.cummin(t, dim) -> values, indices\nTensor:cummin(dim)",
  doc = [[
The running minimum along dim and its 1-based index; as ember.cummax. Like torch.cummin.]],
  example = [=[
local v, i = ember.tensor({4, 2, 3, 1}):cummin(1)
print(v, i)                       -- [4, 2, 2, 1]  [1, 2, 2, 4]]=],
}

add {
  name = "ember.logcumsumexp",
  also = {"Tensor:logcumsumexp"},
  sig = "ember.logcumsumexp(t, dim, [{dtype=}])\nTensor:logcumsumexp(dim)",
  doc = [[
log(cumsum(exp(t))) along dim, computed without overflow (a running log-add-exp).
Floating dtypes. Differentiable (twice). Like torch.logcumsumexp.]],
  example = [=[
local x = ember.tensor({0, 0, 1000}, {dtype = "float64"})
print(x:logcumsumexp(1))          -- [0, 0.6931, 1000]]=],
}

add {
  name = "ember.unique",
  also = {"Tensor:unique"},
  sig = "ember.unique(t, [sorted], [return_inverse], [return_counts], [dim]) -> values, [inverse], [counts]\n"
    .. "Tensor:unique([sorted], [return_inverse], [return_counts], [dim])",
  doc = [[
The distinct elements of t in ascending order (always sorted; `sorted` is accepted for
PyTorch's signature), or with dim the distinct slices along dim, in lexicographic order.
return_inverse adds, for each element (slice) of t, the 1-based index of its value in
the result (t's shape; with dim, a 1-D tensor); return_counts adds how often each
value occurs. The results come as separate return values, in that order. Also
{sorted =, return_inverse =, return_counts =, dim =}. Like torch.unique.]],
  example = [=[
local x = ember.tensor({3, 1, 3, 2})
local v, inv, cnt = x:unique{return_inverse = true, return_counts = true}
print(v, inv, cnt)                -- [1, 2, 3]  [3, 1, 3, 2]  [1, 1, 2]
local rows = ember.tensor({{1, 2}, {0, 5}, {1, 2}})
print(rows:unique(true, false, false, 1))     -- [[0, 5], [1, 2]]]=],
}

add {
  name = "ember.unique_consecutive",
  also = {"Tensor:unique_consecutive"},
  sig = "ember.unique_consecutive(t, [return_inverse], [return_counts], [dim]) -> values, [inverse], [counts]\n"
    .. "Tensor:unique_consecutive([return_inverse], [return_counts], [dim])",
  doc = [[
Merges runs of equal neighbouring elements (slices along dim), without sorting;
results as ember.unique. Like torch.unique_consecutive.]],
  example = [=[
local v, cnt = ember.tensor({1, 1, 2, 2, 1}):unique_consecutive{return_counts = true}
print(v, cnt)                     -- [1, 2, 1]  [2, 2, 1]]=],
}

add {
  name = "ember.bincount",
  also = {"Tensor:bincount"},
  sig = "ember.bincount(t, [weights], [minlength]) -> tensor\nTensor:bincount([weights], [minlength])",
  doc = [[
How often each value 1, 2, ..., max(t) occurs in t, a 1-D tensor of positive integers:
values are positions, 1-based as every index in ember (class labels, one_hot, argmax),
so entry k counts the value k (PyTorch's bincount counts from 0; a 0 here is an error).
The result has max(max(t), minlength) entries; int64, or with weights (1-D, t's length)
the sums of the weights: float32 for float32 weights, float64 otherwise.]],
  example = [=[
local x = ember.tensor({1, 2, 2, 4})
print(x:bincount())                                                -- [1, 2, 0, 1]
print(x:bincount(ember.tensor({0.5, 1, 1, 2}), 6))     -- [0.5, 2, 0, 2, 0, 0]]=],
}

add {
  name = "ember.histc",
  also = {"Tensor:histc"},
  sig = "ember.histc(t, [bins], [min], [max]) -> tensor\nTensor:histc([bins], [min], [max])",
  doc = [[
A histogram of t's elements in `bins` (default 100) equal bins from min to max; with
min == max (the default 0, 0) the data's minimum and maximum. Elements outside the
range are left out, max itself falls into the last bin. The result has t's dtype
(floating dtypes only). NaN is left out (PyTorch's CPU histc puts it in an arbitrary
bin). Like torch.histc.]],
  example = [=[
print(ember.tensor({0, 0.25, 0.5, 1, 1.5}):histc(4, 0, 1))          -- [1, 1, 1, 1]]=],
}

add {
  name = "ember.searchsorted",
  sig = "ember.searchsorted(sorted_sequence, values, [{right =, side =, sorter =, out_int32 =}])",
  doc = [[
Where values would be inserted into sorted_sequence to keep it sorted: the 1-based
position, from 1 to n + 1 (PyTorch's 0-based result + 1). sorted_sequence is 1-D, or
[..., n] with values [..., m] sharing the leading dims (searched per row). values may
be a number (a 0-d result). right = true (or side = "right") gives the position after
equal elements instead of before. sorter: 1-based int64 indices that sort an unsorted
sequence (as ember.argsort returns). int64 result, int32 with out_int32. Works by a
broadcast comparison: numel(values) x n work and memory.
Like torch.searchsorted.]],
  example = [=[
local seq = ember.tensor({1, 3, 3, 5})
print(ember.searchsorted(seq, ember.tensor({0, 3, 4, 6})))                 -- [1, 2, 4, 5]
local v = ember.tensor({0, 3, 4, 6})
print(ember.searchsorted(seq, v, {right = true}))     -- [1, 4, 4, 5]]=],
}

add {
  name = "ember.bucketize",
  sig = "ember.bucketize(values, boundaries, [{right =, out_int32 =}])",
  doc = [[
The 1-based bucket of each value among the 1-D sorted boundaries: i such that
boundaries[i - 1] < v <= boundaries[i] (with right, boundaries[i - 1] <= v <
boundaries[i]), from 1 to n + 1; ember.searchsorted(boundaries, values). values may be
a number. Like torch.bucketize (result + 1).]],
  example = [=[
local b = ember.tensor({1, 2, 3})
print(ember.bucketize(ember.tensor({0, 1, 2.5, 9}), b))     -- [1, 1, 3, 4]]=],
}

return entries
