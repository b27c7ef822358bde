-- lua/ember/doc/tensor.lua — docstrings of the tensor methods that are not also
-- ember.* functions, of the tensor properties (t.shape, t.grad, ...), and of
-- indexing and operators. Format: see the other files of lua/ember/doc/.
return {
  {
    name = "ember.Tensor",
    sig = "ember.Tensor            the method table of every tensor\nt:method(...)  t.property",
    doc = [=[
A tensor is a view (sizes, strides, offset, dtype) on reference-counted storage on a
device ("cpu" or "cuda"). Methods are called with ':' (t:sum(2)), properties read with
'.' (t.shape, t.dtype, t.device, t.grad, t.requires_grad). ember.Tensor holds the
methods, as torch.Tensor does; most are also module functions (ember.sum(t, 2)).
Dims and indices are 1-based; -1 is the last. Tensors are made by ember.tensor,
ember.zeros, ember.randn, ... and freed when collected or at once with
`local t <close> = ...`. help(t) for a tensor value shows this text; ?Tensor:sum
shows one method.]=],
    example = [=[
local t = ember.arange(1, 7):view(2, 3)
print(t.shape[1], t.shape[2], t:sum(2))]=],
  },
  -- ---- properties --------------------------------------------------------------
  {
    name = "Tensor.shape",
    sig = "t.shape",
    doc = [=[
The sizes of the tensor as an ember.Size (as torch.Size): a new table of integers, one
per dimension (empty for a 0-d tensor), indexable (s[1], s[-1], #s, ipairs) and
comparable with == to another Size or a plain table of the same integers. It prints
as ember.Size({2, 3}). Same as t:size(). Read-only: changing it changes no tensor.]=],
    example = [=[
local t = ember.zeros(2, 3)
print(t.shape[1], t.shape[2], #t.shape)   -- 2  3  2
print(t.shape, t.shape == {2, 3})         -- ember.Size({2, 3})  true]=],
  },
  {
    name = "Tensor.dtype",
    sig = "t.dtype",
    doc = [=[
The element type as a string: "float32", "float64", "float16", "bfloat16", "int64",
"int32", "uint8" or "bool". Equal to the constants ember.float32, ember.int64, ...
Read-only; convert with t:to(dtype) or t:float(), t:long(), ...]=],
    example = [=[
print(ember.zeros(2).dtype)                    -- float32
print(ember.tensor({1, 2}).dtype == ember.int64) -- true]=],
  },
  {
    name = "Tensor.device",
    sig = "t.device",
    doc = [=[
Where the tensor's storage lives, as a string: "cpu" or "cuda:N" (N counts from 0, as
in PyTorch). Read-only; move a tensor with t:to(device), t:cuda() or t:cpu().]=],
    example = [=[
print(ember.ones(3).device)   -- cpu]=],
  },
  {
    name = "Tensor.ndim",
    sig = "t.ndim",
    doc = [=[
The number of dimensions (0 for a scalar tensor). Same as t:dim(). Read-only.]=],
    example = [=[
print(ember.zeros(2, 3, 4).ndim, ember.tensor(1.5).ndim)   -- 3  0]=],
  },
  {
    name = "Tensor.is_cuda",
    sig = "t.is_cuda",
    doc = [=[
true when the tensor lives on a CUDA device, false on the CPU. Read-only.]=],
    example = [=[
print(ember.zeros(2).is_cuda)   -- false]=],
  },
  {
    name = "Tensor.is_cpu",
    also = {"Tensor.itemsize", "Tensor.nbytes"},
    sig = "t.is_cpu   t.itemsize   t.nbytes",
    doc = [=[
is_cpu: true on the CPU. itemsize: bytes per element of t's dtype. nbytes: bytes of t's
elements (numel * itemsize; a view counts its own elements). Read-only, as PyTorch's.]=],
    example = [=[
local t = ember.zeros(3, 5)
print(t.is_cpu, t.itemsize, t.nbytes)   -- true  4  60]=],
  },
  {
    name = "Tensor.data",
    sig = "t.data\nt.data = src",
    doc = [=[
Read: a tensor on t's memory that autograd does not see (no requires_grad, no history;
t:detach()), so t.data:normal_(0, 0.02) initialises a parameter in place even in grad
mode. Assigned: t takes src's memory, dtype, shape and strides and stays the same tensor
(its requires_grad, .grad and every reference to it, an optimizer's too), as PyTorch's
.data assignment. Refused for a tensor autograd computed and, when t requires grad, for
non-floating-point src. Unlike PyTorch, writes through t.data count as writes to t for
autograd's check of saved tensors (one version counter per memory).]=],
    example = [=[
local lin = ember.nn.Linear(4, 3)
lin.weight.data:normal_(0, 0.02)
lin.bias.data = ember.zeros(3)
print(lin.bias, lin.bias.requires_grad)   -- zeros, true]=],
  },
  {
    name = "Tensor.requires_grad",
    sig = "t.requires_grad\nt.requires_grad = bool",
    doc = [=[
Whether autograd records operations on this tensor. Readable on every tensor; results
of recorded ops have it true. Assigning works like t:requires_grad_(bool): only
floating point tensors can be set to true, and a non-leaf cannot be set to false
(use t:detach()). Assigning a non-boolean raises an error.]=],
    example = [=[
local w = ember.zeros(3)
w.requires_grad = true
print(w.requires_grad, (w * 2).requires_grad)   -- true  true]=],
  },
  {
    name = "Tensor.is_leaf",
    sig = "t.is_leaf",
    doc = [=[
true for a tensor not produced by a recorded operation: every tensor that does not
require grad, and tensors that require grad because the user asked for it. Leaves that
require grad get their gradient in t.grad after backward(). Read-only.]=],
    example = [=[
local x = ember.ones(2, {requires_grad = true})
print(x.is_leaf, (x * 2).is_leaf)   -- true  false]=],
  },
  {
    name = "Tensor.grad_fn",
    sig = "t.grad_fn",
    doc = [=[
The name of the backward node that made this tensor, as a string such as "MulBackward"
or "SumBackward", or nil for a leaf. PyTorch gives a node object; here it is only its
name, for inspection. Read-only.]=],
    example = [=[
local x = ember.ones(2, {requires_grad = true})
print((x * 3):sum().grad_fn, x.grad_fn)   -- SumBackward  nil]=],
  },
  {
    name = "Tensor.grad",
    sig = "t.grad\nt.grad = g | nil",
    doc = [=[
The gradient accumulated by backward() (a tensor of t's shape), or nil before any
backward. Only leaves that require grad, and non-leaves after t:retain_grad(), receive
one; backward() adds to an existing grad, so clear it between steps (t.grad = nil, or
an optimizer's zero_grad). Assigning a tensor requires the same shape, dtype and
device, else an error names the mismatch.]=],
    example = [=[
local x = ember.tensor({1.0, 2.0}, {requires_grad = true})
local y = (x * x):sum()
y:backward()
print(x.grad)      -- tensor([2., 4.])
x.grad = nil
print(x.grad)      -- nil]=],
  },
  {
    name = "Tensor.T",
    also = {"Tensor.mT", "Tensor.H", "Tensor.mH"},
    sig = "t.T\nt.mT\nt.H\nt.mH",
    doc = [=[
Transposed views, as PyTorch 2.x's. t.T reverses every dim (a matrix's transpose; for
more than 2 dims PyTorch warns that this use is deprecated: t.mT or t:permute(...) say
what is meant). t.mT swaps the last two dims of a tensor of 2 or more (a batch of
matrices). t.H and t.mH are the conjugate transposes: ember has no complex dtypes, so
they are t.T and t.mT, with t.H only for matrices. A 0-d tensor is returned as it is;
t.mT, t.mH of a 1-D tensor and t.H of other than 2 dims are errors, as in PyTorch.]=],
    example = [=[
local m = ember.tensor({{1, 2, 3}, {4, 5, 6}})
print(m.T.shape[1], m.mT.shape[1])                      -- 3 3
print(ember.zeros(2, 3, 4).T.shape[1], ember.zeros(2, 3, 4).mT.shape[2])   -- 4 4]=],
  },

  -- ---- indexing and operators ----------------------------------------------------
  {
    name = "Tensor.__index",
    also = {"Tensor.__newindex"},
    sig = "t[i]\nt[{i, j, ...}]\nt[mask]\nt[index]\nt[...] = value",
    doc = [=[
Indexing, 1-based; negative numbers count from the end (-1 is the last).
t[i]: selects along dim 1; a number when t is 1-D, else a view of one fewer dim.
t[{...}]: one entry per leading dim: an integer selects (drops the dim); a range
  table {start, stop[, step]} keeps an inclusive range (negative start/stop count from
  the end, step > 0); {i} keeps index i as a range of one; {} keeps the whole dim.
  When every dim is selected by an integer the result is a Lua number/boolean.
Advanced indexing (PyTorch's x[a, :, b]), a copy: entries of t[{...}] may also be
  tensors. An int64/int32 index tensor (1-based values, negative from the end) indexes
  one dim; a bool mask of k dims consumes k dims (as its nonzero()); a 0-d int tensor
  selects like an integer; a 0-d bool adds a dim of size 1 (true) or 0 (false). Index
  tensors broadcast together; where they index adjacent dims the broadcast dims replace
  them in place, otherwise they go first. Integers select before (as in PyTorch, they
  are not counted as index tensors). Example: x [2,3,4], x[{{}, idx}] with idx [5]
  gives [2,5,4]; x[{rows, {}, cols}] with rows [2,1], cols [3] gives [2,3,3].
  Gradients flow to t (duplicate indices accumulate).
t[mask]: as t[{mask}]: a bool tensor of t's shape gives the selected elements as a 1-D
  copy; a mask over t's leading dims gives [count, trailing sizes...].
t[index]: as t[{index}]: an int64/int32 tensor picks rows along dim 1 (a copy of shape
  index's shape followed by t's trailing sizes).
Reads through integers and ranges only are views sharing t's storage.
Assignment: t[i] = v and t[{...}] = v fill the view with a number/boolean or copy a
tensor into it (broadcast); t[mask] = number fills where mask is true. With index
tensors (t[idx] = v, t[{rows, cols}] = v) v is a number or a tensor broadcast to the
indexed shape, written into t (through views too); on duplicate indices the last write
wins (on the CPU; on CUDA which one is unspecified, as in PyTorch). To sum duplicates,
or to get gradients, use ember.index_put / t:index_put_. Assigning into a tensor that
requires grad is an error.
An unknown string key is an error naming it ("tensor has no field or method 'shap'"),
as PyTorch's AttributeError; setting any field but requires_grad and grad is an
error. Out of range indices raise "index: index 5 is out of range for dimension 2 of
size 4"; index tensors that do not broadcast, a mask whose shape differs from the dims
it covers and float index tensors are errors too.]=],
    example = [=[
local t = ember.arange(12):reshape(3, 4)
print(t[2])                  -- tensor([4, 5, 6, 7])
print(t[{2, -1}])            -- 7
print(t[{{}, {2, 3}}].shape[2]) -- 2
print(t[t:gt(9)])            -- tensor([10, 11])
print(t[ember.tensor({3, 1})][1][1]) -- 8
print(t[{ember.tensor({1, 3}), ember.tensor({2, -1})}])  -- tensor([ 1, 11])
print(t[{{}, ember.tensor({4, 1})}].shape[2])           -- 2
t[{ember.tensor({1, 2}), ember.tensor({1, 1})}] = 100   -- t[1][1], t[2][1]
t[{1, {}}] = 0               -- zero row 1
t[t:gt(10)] = -1
print(t:sum():item())        -- 43]=],
  },
  {
    name = "Tensor.__add",
    also = {"Tensor.__sub", "Tensor.__mul", "Tensor.__div", "Tensor.__mod", "Tensor.__pow",
            "Tensor.__unm", "Tensor.__len", "Tensor.__tostring"},
    sig = "a + b   a - b   a * b   a / b   a % b   a ^ b   -a\n#t\ntostring(t)",
    doc = [=[
Arithmetic operators work elementwise with broadcasting and type promotion, each side
a tensor, a number or a boolean: + add, - sub, * mul, / div (true division: integer
tensors give a float result), % remainder (sign of the divisor, like Python's %),
^ pow, unary - neg. A number keeps the tensor's dtype where it can (int tensor * 2 stays
int64; int tensor * 2.5 becomes float).
#t is the size of dim 1 (an error for a 0-d tensor).
tostring(t) (and print(t)) gives PyTorch's text: 4 decimals, long tensors summarised.
Comparisons == < <= are NOT elementwise: == compares identity of the Lua values and <
raises an error; use t:eq(u), t:lt(u), ... There is no // (use (a / b):floor()).]=],
    example = [=[
local a = ember.tensor({1, 2, 3})
print(a + 1, 2 * a, a / 2)   -- int64, int64, float32 results
print(-a, a % 2, a ^ 2)
print(#a, tostring(a))       -- 3  tensor([1, 2, 3])]=],
  },

  -- ---- information ---------------------------------------------------------------
  {
    name = "Tensor:size",
    sig = "Tensor:size([dim])",
    doc = [=[
With no argument, the sizes as an ember.Size (the same as t.shape). With a dim (1-based,
negative from the end) the size of that dimension as an integer. A dim out of range
raises an error, as does any dim of a 0-d tensor (it has none). A method: t:size(),
with ':' (t.size() is an error saying so).]=],
    example = [=[
local t = ember.zeros(2, 3)
print(t:size(1), t:size(-1), #t:size())   -- 2  3  2
print(t:size(), t:size() == t.shape)      -- ember.Size({2, 3})  true]=],
  },
  {
    name = "Tensor:stride",
    sig = "Tensor:stride([dim])",
    doc = [=[
The strides, in elements: a table with one entry per dimension, or the stride of one
dim (1-based, negative from the end). A transpose or expand changes strides without
copying (an expanded dim has stride 0).]=],
    example = [=[
local t = ember.zeros(2, 3)
print(t:stride(1), t:stride(2), t:t():stride(1))   -- 3  1  1]=],
  },
  {
    name = "Tensor:dim",
    sig = "Tensor:dim()",
    doc = [=[
The number of dimensions, as t.ndim.]=],
    example = [=[
print(ember.zeros(4, 5):dim())   -- 2]=],
  },
  {
    name = "Tensor:element_size",
    sig = "Tensor:element_size()",
    doc = [=[
The size of one element in bytes: 4 for float32/int32, 8 for float64/int64, 2 for
float16/bfloat16, 1 for uint8/bool.]=],
    example = [=[
print(ember.zeros(2):element_size(), ember.zeros(2, {dtype = "int64"}):element_size())
-- 4  8]=],
  },
  {
    name = "Tensor:storage_offset",
    sig = "Tensor:storage_offset()",
    doc = [=[
Where the view starts in its storage, counted in elements from 0 (as in PyTorch; this
is an offset, not an index).]=],
    example = [=[
local t = ember.arange(6):reshape(2, 3)
print(t:storage_offset(), t[2]:storage_offset())   -- 0  3]=],
  },
  {
    name = "Tensor:is_contiguous",
    sig = "Tensor:is_contiguous()",
    doc = [=[
true when the elements lie in storage in row-major order with no gaps, so that
t:view(...) can reshape it freely. Transposes and many slices are not contiguous;
t:contiguous() makes a contiguous copy.]=],
    example = [=[
local t = ember.zeros(2, 3)
print(t:is_contiguous(), t:t():is_contiguous())   -- true  false]=],
  },
  {
    name = "Tensor:is_floating_point",
    sig = "Tensor:is_floating_point()",
    doc = [=[
true for float32, float64, float16 and bfloat16 tensors, false for integer and bool.]=],
    example = [=[
print(ember.zeros(1):is_floating_point(), ember.tensor({1}):is_floating_point())
-- true  false]=],
  },
  {
    name = "Tensor:is_view_of",
    sig = "Tensor:is_view_of(other)",
    doc = [=[
true when t and other share the same storage (one is a view of the other, or both
views of one tensor), so writing to one changes the other. ember only: PyTorch has no
such method (compare untyped_storage().data_ptr()). Errors if other is not a tensor.]=],
    example = [=[
local t = ember.zeros(2, 3)
print(t[1]:is_view_of(t), t:clone():is_view_of(t))   -- true  false]=],
  },
  {
    name = "Tensor:is_set_to",
    sig = "Tensor:is_set_to(other)",
    doc = [=[
true when t and other are the same memory seen the same way: one storage, the same
offset, dtype, sizes and strides (as torch.Tensor.is_set_to). Two views of one tensor
that differ in shape or start are not set to each other; use is_view_of for "shares
storage". Errors if other is not a tensor.]=],
    example = [=[
local t = ember.zeros(2, 3)
print(t:view(2, 3):is_set_to(t), t:view(3, 2):is_set_to(t), t[1]:is_set_to(t))   -- true  false  false]=],
  },
  {
    name = "Tensor:item",
    sig = "Tensor:item()",
    doc = [=[
The value of a one-element tensor (any shape) as a Lua value: a float number for
floating dtypes, an integer for integer dtypes, a boolean for bool. A tensor with more
or fewer than one element raises an error naming its size. Copies from the GPU.]=],
    example = [=[
print(ember.tensor({{2.5}}):item())              -- 2.5
print(ember.tensor({1, 2, 3}):sum():item())      -- 6]=],
  },
  {
    name = "Tensor:tolist",
    sig = "Tensor:tolist()",
    doc = [=[
The values as nested Lua tables (row-major, 1-based): numbers for float dtypes,
integers for integer dtypes, booleans for bool. A 0-d tensor gives a plain value, as
in PyTorch.]=],
    example = [=[
local l = ember.tensor({{1, 2}, {3, 4}}):tolist()
print(l[2][1], #l)                     -- 3  2
print(ember.tensor(true):tolist())     -- true]=],
  },

  -- ---- views ---------------------------------------------------------------------
  {
    name = "Tensor:view",
    sig = "Tensor:view(size...)\nTensor:view(other)",
    doc = [=[
A view with a new shape over the same storage (no copy). size: integers or one table
(t.shape works); one size may be -1 and is inferred. Given a tensor, takes its shape
(like view_as). The element count must match, and the strides must allow it: a
non-contiguous tensor may raise "use reshape". view(dtype) is not supported.]=],
    example = [=[
local t = ember.arange(6)
print(t:view(2, 3).shape[1], t:view({3, -1}).shape[2])   -- 2  2
t:view(2, 3)[{1, 1}] = 9
print(t[1])   -- 9 (same storage)]=],
  },
  {
    name = "Tensor:view_as",
    sig = "Tensor:view_as(other)",
    doc = [=[
t:view(other.shape): a view of t with the shape of tensor other, same conditions as
view.]=],
    example = [=[
local t = ember.arange(6)
print(t:view_as(ember.zeros(3, 2)).shape[1])   -- 3]=],
  },
  {
    name = "Tensor:reshape_as",
    sig = "Tensor:reshape_as(other)",
    doc = [=[
t:reshape(other.shape): a tensor of t's values with the shape of other; a view when the
strides allow, else a copy.]=],
    example = [=[
local t = ember.arange(6):reshape(2, 3):t()
print(t:reshape_as(ember.zeros(6)))   -- tensor([0, 3, 1, 4, 2, 5])]=],
  },
  {
    name = "Tensor:slice",
    sig = "Tensor:slice(dim, [start], [stop], [step])",
    doc = [=[
A view of the elements start..stop (inclusive, 1-based, like string.sub) of dim, every
step-th. start defaults to 1, stop to the size of dim, step to 1 (must be positive).
Negative start/stop count from the end; out of range bounds are clamped, an empty range
gives a dim of size 0. ember only; PyTorch writes t[start:stop:step] (0-based, stop
excluded).]=],
    example = [=[
local t = ember.arange(1, 11)          -- 1..10
print(t:slice(1, 2, 5))                -- tensor([2, 3, 4, 5])
print(t:slice(1, -3))                  -- tensor([ 8,  9, 10])
print(t:slice(1, 1, -1, 3))            -- tensor([ 1,  4,  7, 10])]=],
  },
  {
    name = "Tensor:expand",
    sig = "Tensor:expand(size...)",
    doc = [=[
A view repeating size-1 dims to the given sizes without copying (stride 0). size:
integers or one table; -1 keeps a dim's size; new leading dims may be added (not -1).
Only size-1 dims can grow; otherwise an error names the dims. Write to the result only
after :clone() or :contiguous(), since expanded elements share memory.]=],
    example = [=[
local r = ember.tensor({1, 2, 3}):expand(2, -1)
print(r)   -- tensor([[1, 2, 3], [1, 2, 3]])]=],
  },
  {
    name = "Tensor:expand_as",
    sig = "Tensor:expand_as(other)",
    doc = [=[
t:expand(other.shape): broadcast t to the shape of tensor other, as a view.]=],
    example = [=[
local col = ember.tensor({{1}, {2}})
print(col:expand_as(ember.zeros(2, 3)):sum():item())   -- 9]=],
  },
  {
    name = "Tensor:unfold",
    sig = "Tensor:unfold(dim, size, step)",
    doc = [=[
A view of all windows of length `size` taken every `step` along dim (1-based): dim
gets (n - size) // step + 1 entries and a new last dim of length size is added. No
copy. size must not exceed the dim's length; step must be positive.]=],
    example = [=[
local w = ember.arange(1, 8):unfold(1, 3, 2)   -- windows of 1..7
print(w.shape[1], w.shape[2])                  -- 3  3
print(w[2])                                    -- tensor([3, 4, 5])]=],
  },
  {
    name = "Tensor:diagonal",
    sig = "Tensor:diagonal([offset = 0])",
    doc = [=[
A 1-D view of a diagonal of a 2-D tensor: the main one, or offset above it (offset > 0)
or below it (offset < 0); an offset past the corner gives an empty view, as PyTorch.
Writing to it writes t; gradients flow back to the diagonal's elements. Other tensors
raise "expected a 2-D tensor". Unlike PyTorch there are no dim1/dim2 arguments.]=],
    example = [=[
local m = ember.arange(9):reshape(3, 3)
print(m:diagonal())     -- tensor([0, 4, 8])
print(m:diagonal(1))    -- tensor([1, 5])
print(m:diagonal(-2))   -- tensor([6])]=],
  },
  {
    name = "Tensor:contiguous",
    sig = "Tensor:contiguous()",
    doc = [=[
t itself when it is already contiguous, else a row-major copy of it (recorded by
autograd). Use before view() on a transposed or sliced tensor.]=],
    example = [=[
local t = ember.arange(6):reshape(2, 3):t()
local c = t:contiguous()
print(c:is_contiguous(), c:view(6)[2])   -- true  3]=],
  },

  -- ---- in-place writes -----------------------------------------------------------
  {
    name = "Tensor:copy_",
    sig = "Tensor:copy_(src)",
    doc = [=[
Copies the values of tensor src into t in place, broadcasting src to t's shape and
converting dtype (and device). Returns t. An error if src cannot be broadcast. Refused
on a tensor that requires grad while grad mode is on.]=],
    example = [=[
local t = ember.zeros(2, 3)
t:copy_(ember.tensor({1, 2, 3}))
print(t[2])   -- tensor([1., 2., 3.])]=],
  },
  {
    name = "Tensor:fill_",
    sig = "Tensor:fill_(value)",
    doc = [=[
Sets every element to value (a number or a boolean) in place; returns t. On a tensor
that requires grad it is refused unless inside ember.no_grad.]=],
    example = [=[
local t = ember.empty(2, 2):fill_(7)
print(t:sum():item())   -- 28.0]=],
  },
  {
    name = "Tensor:zero_",
    sig = "Tensor:zero_()",
    doc = [=[
Sets every element to 0 in place; returns t. Same autograd rule as fill_ (the error
message names fill_).]=],
    example = [=[
local t = ember.ones(3):zero_()
print(t)   -- tensor([0., 0., 0.])]=],
  },
  {
    name = "Tensor:index_add_",
    sig = "Tensor:index_add_(dim, index, src)",
    doc = [=[
In place: for each k, adds slice k of src along dim to slice index[k] of t along dim
(1-based). index: a 1-D int64 tensor or a table of integers; repeated indices add up.
src has t's shape except size #index along dim. Returns t. Out of range indices raise
an error. PyTorch's alpha argument is not supported (scale src first).]=],
    example = [=[
local t = ember.zeros(3, 2)
t:index_add_(1, {1, 3, 1}, ember.ones(3, 2))
print(t)   -- tensor([[2., 2.], [0., 0.], [1., 1.]])]=],
  },
  {
    name = "Tensor:scatter_",
    sig = "Tensor:scatter_(dim, index, src)\nTensor:scatter_(dim, index, value)",
    doc = [=[
In place: writes src (a tensor) or a number into t at the positions given by the
integer tensor index along dim, 1-based. For a 2-D t and dim = 2:
t[i][index[i][j]] = src[i][j]. index must be a tensor (not a table). Returns t; where
an index repeats, which write wins is unspecified. Out-of-bounds indices raise errors.]=],
    example = [=[
local t = ember.zeros(2, 3)
t:scatter_(2, ember.tensor({{3}, {1}}), ember.tensor({{5.0}, {6.0}}))
print(t)   -- tensor([[0., 0., 5.], [6., 0., 0.]])]=],
  },
  {
    name = "Tensor:scatter_add_",
    sig = "Tensor:scatter_add_(dim, index, src)",
    doc = [=[
In place, like scatter_ but adds: t[...index[i][j]...] += src[i][j] along dim, so
repeated indices accumulate. src must be a tensor; index an integer tensor (1-based).
Returns t.]=],
    example = [=[
local t = ember.zeros(3)
t:scatter_add_(1, ember.tensor({1, 1, 3}), ember.tensor({1.0, 2.0, 4.0}))
print(t)   -- tensor([3., 0., 4.])]=],
  },
  {
    name = "Tensor:uniform_",
    sig = "Tensor:uniform_([from], [to], [{generator =}])",
    doc = [=[
Fills t in place with numbers drawn uniformly from [from, to) (defaults 0 and 1); returns
t. Floating point tensors only; from <= to, both finite. Draws from the default generator
(ember.manual_seed's) or the generator option's (an ember.Generator).]=],
    example = [=[
ember.manual_seed(0)
local t = ember.empty(100):uniform_(-1, 1)
print(t:min():item() >= -1, t:max():item() < 1)   -- true  true]=],
  },
  {
    name = "Tensor:normal_",
    sig = "Tensor:normal_([mean], [std], [{generator =}])",
    doc = [=[
Fills t in place with numbers drawn from a normal distribution (defaults mean 0, std 1;
std >= 0); returns t. Floating point tensors only. Draws from the default generator
(ember.manual_seed's) or the generator option's (an ember.Generator).]=],
    example = [=[
ember.manual_seed(0)
local t = ember.empty(1000):normal_(5, 2)
print(math.abs(t:mean():item() - 5) < 0.5)   -- true]=],
  },

  -- ---- selection -------------------------------------------------------------------
  {
    name = "Tensor:where",
    sig = "Tensor:where(condition, other)",
    doc = [=[
Elementwise: t where the bool tensor condition is true, else other (a tensor or a
number), all broadcast together. Same as ember.where(condition, t, other) (note the
different argument order). A condition that is not bool raises an error.]=],
    example = [=[
local x = ember.tensor({1.0, -2.0, 3.0})
print(x:where(x:gt(0), 0))   -- tensor([1., 0., 3.])]=],
  },

  -- ---- conversions -----------------------------------------------------------------
  {
    name = "Tensor:to",
    sig = "Tensor:to(dtype)\nTensor:to(device)\nTensor:to(device, dtype)\n"
      .. "Tensor:to(other)\nTensor:to({dtype = ..., device = ...})",
    doc = [=[
Converts to another dtype and/or device: strings are recognized as dtype names
("float64", ember.int64, ...) or devices ("cpu", "cuda", "cuda:1"); an options table
gives dtype and device; a tensor gives its dtype and device. Returns t itself when
nothing changes, else a copy (recorded by autograd). An unknown string raises
"'x' is neither a dtype nor a device". PyTorch's non_blocking/copy are not supported.]=],
    example = [=[
local t = ember.tensor({1, 2})
print(t:to("float64").dtype, t:to({dtype = "float32"}).dtype)   -- float64  float32
print(t:to("cpu").device, t:to(ember.zeros(1)).dtype)          -- cpu  float32]=],
  },
  {
    name = "Tensor:type",
    sig = "Tensor:type()\nTensor:type(dtype)",
    doc = [=[
With no argument, the dtype name as a string (PyTorch returns "torch.FloatTensor"; here
it is "float32", like t.dtype). With a dtype name, t converted to it, as t:to(dtype).]=],
    example = [=[
local t = ember.tensor({1, 2})
print(t:type(), t:type("float64").dtype)   -- int64  float64]=],
  },
  {
    name = "Tensor:float",
    sig = "Tensor:float()",
    doc = [=[
t converted to float32 (t itself if it already is). Recorded by autograd.]=],
    example = [=[
print(ember.tensor({1, 2}):float())   -- tensor([1., 2.])]=],
  },
  {
    name = "Tensor:double",
    sig = "Tensor:double()",
    doc = [=[
t converted to float64 (t itself if it already is). Recorded by autograd.]=],
    example = [=[
print(ember.tensor({1, 2}):double().dtype)   -- float64]=],
  },
  {
    name = "Tensor:half",
    sig = "Tensor:half()",
    doc = [=[
t converted to float16 (t itself if it already is).]=],
    example = [=[
print(ember.tensor({1.5, 2.0}):half().dtype)   -- float16]=],
  },
  {
    name = "Tensor:bfloat16",
    sig = "Tensor:bfloat16()",
    doc = [=[
t converted to bfloat16 (t itself if it already is).]=],
    example = [=[
print(ember.tensor({1.5, 2.0}):bfloat16().dtype)   -- bfloat16]=],
  },
  {
    name = "Tensor:long",
    sig = "Tensor:long()",
    doc = [=[
t converted to int64 (t itself if it already is). Floats are truncated toward zero.]=],
    example = [=[
print(ember.tensor({1.7, -1.7}):long())   -- tensor([ 1, -1])]=],
  },
  {
    name = "Tensor:int",
    sig = "Tensor:int()",
    doc = [=[
t converted to int32 (t itself if it already is). Floats are truncated toward zero.]=],
    example = [=[
print(ember.tensor({2.9}):int().dtype)   -- int32]=],
  },
  {
    name = "Tensor:byte",
    sig = "Tensor:byte()",
    doc = [=[
t converted to uint8 (t itself if it already is).]=],
    example = [=[
print(ember.tensor({1, 200}):byte().dtype)   -- uint8]=],
  },
  {
    name = "Tensor:bool",
    sig = "Tensor:bool()",
    doc = [=[
t converted to bool: non-zero values become true (t itself if already bool).]=],
    example = [=[
print(ember.tensor({0, 3, -1}):bool())   -- tensor([False,  True,  True])]=],
  },
  {
    name = "Tensor:cpu",
    sig = "Tensor:cpu()",
    doc = [=[
t on the CPU: t itself if it is already there, else a copy from the GPU.]=],
    example = [=[
local t = ember.ones(2)
print(t:cpu().device, t:cpu():is_view_of(t))   -- cpu  true]=],
  },
  {
    name = "Tensor:cuda",
    sig = "Tensor:cuda([index])",
    doc = [=[
t on CUDA device `index` (0-based as in PyTorch, default 0): a copy, or t itself if it is
already there. Without a usable GPU it raises "no CUDA device: ...". Same as
t:to("cuda:" .. index).]=],
    needs = "cuda",
    example = [=[
local g = ember.ones(2):cuda()
print(g.device, g.is_cuda)   -- cuda:0  true]=],
  },

  -- ---- autograd ----------------------------------------------------------------------
  {
    name = "Tensor:backward",
    sig = "Tensor:backward([gradient [, retain_graph [, create_graph [, inputs]]]])\n"
       .. "  or Tensor:backward([gradient], {retain_graph =, create_graph =, inputs =})",
    doc = [=[
Computes the gradient of t with respect to every leaf that requires grad and adds it to
their .grad. gradient (a tensor of t's shape) is required unless t has one element.
retain_graph (default: create_graph) keeps the graph for another backward;
create_graph (false) records the backward itself, for higher-order gradients; inputs
(a tensor or a list) writes only those tensors' .grad. Each by position, as PyTorch's,
or by name in an options table; an unknown name is an error. Returns
nothing. Errors: t does not require grad, a second backward through a freed graph,
an error raised by a hook.]=],
    example = [=[
local x = ember.tensor({1.0, 2.0}, {requires_grad = true})
local y = x * x
y:backward(ember.ones(2))
print(x.grad)   -- tensor([2., 4.])]=],
  },
  {
    name = "Tensor:requires_grad_",
    sig = "Tensor:requires_grad_([on])",
    doc = [=[
Sets t.requires_grad in place (on defaults to true) and returns t. Only floating point
tensors can require grad; a non-leaf cannot be switched off (use t:detach()).]=],
    example = [=[
local w = ember.randn(3, 2):requires_grad_()
print(w.requires_grad, w.is_leaf)   -- true  true]=],
  },
  {
    name = "Tensor:retain_grad",
    sig = "Tensor:retain_grad()",
    doc = [=[
Asks backward() to keep the gradient of a non-leaf tensor in its .grad (non-leaves do
not get one otherwise). No effect on leaves. Returns nothing. An error if t does not
require grad.]=],
    example = [=[
local x = ember.ones(3, {requires_grad = true})
local y = x * 2
y:retain_grad()
y:sum():backward()
print(y.grad)   -- tensor([1., 1., 1.])]=],
  },
  {
    name = "Tensor:register_hook",
    sig = "Tensor:register_hook(fn) -> handle",
    doc = [=[
Calls fn(grad) each time a gradient for t is computed in a backward pass. fn may
return nil (keep grad) or a tensor that replaces it (for a leaf, before it is added to
.grad). An error inside fn aborts the backward with "hook: ...". t must require grad.
Returns a handle (PyTorch's RemovableHandle): handle:remove() stops the hook; dropping
the handle without calling remove() keeps the hook, as in PyTorch.]=],
    example = [=[
local x = ember.tensor({1.0, 2.0}, {requires_grad = true})
local h = x:register_hook(function(g) return g * 10 end)
local y = (x * 3):sum()
y:backward()
print(x.grad)   -- tensor([30., 30.])
h:remove()]=],
  },
}
