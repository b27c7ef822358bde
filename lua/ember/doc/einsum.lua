-- lua/ember/doc/einsum.lua — docstrings of einsum, tensordot, kron, cdist and
-- index_put (lua/bind_einsum.c). Advanced indexing itself (t[{rows, cols}]) is
-- documented in the Tensor.__index entry of doc/tensor.lua. Format: see
-- lua/ember/doc/ember.lua. Dims and index values are 1-based.
local entries = {}

local function add(name, also, sig, doc, example)
  entries[#entries + 1] = {name = name, also = also, sig = sig, doc = doc, example = example}
end

add("ember.einsum", nil, "ember.einsum(equation, a, b, ...)\nember.einsum(equation, {a, b, ...})", [[
Einstein summation: each operand gets one letter (a-z, A-Z) per dim in `equation`
("ij,jk->ik"); letters in several operands are multiplied together, letters missing
from the output are summed. After "->" comes the output; without it the output is the
letters used exactly once, in alphabetical order (capitals first), as in PyTorch.
"..." stands for the dims not named (right-aligned, broadcast across operands; in
implicit mode they lead the output). A letter repeated within one operand takes its
diagonal ("ii->i"); size-1 dims broadcast. Spaces are ignored. Operands must share a
dtype and a device. Contracts left to right, two operands at a time with one batched
matmul each (never the full outer product); differentiable, and runs on any device.
Like torch.einsum.]], [[
local a, b = ember.randn(2, 3), ember.randn(3, 4)
print(ember.einsum("ij,jk->ik", a, b).shape)          -- ember.Size({2, 4})
print(ember.einsum("ii", ember.eye(3)))                 -- trace: tensor(3.)
print(ember.einsum("bij,bjk", {ember.randn(5, 2, 3), ember.randn(5, 3, 2)}).shape)
print(ember.einsum("...i,...i->...", ember.ones(2, 3), ember.ones(3)))  -- {3., 3.}]])

add("ember.tensordot", nil, "ember.tensordot(a, b, [dims = 2])\nember.tensordot(a, b, {{dims of a}, {dims of b}})", [[
Sums the products of a and b over pairs of dims: an integer d pairs the last d dims of
a with the first d dims of b; {{i1, i2, ...}, {j1, j2, ...}} pairs dim ik of a with
dim jk of b (1-based, negative from the end; sizes must match). The result has a's
remaining dims followed by b's. Also as {dims = ...}. Differentiable (a matmul of
permuted, reshaped operands). Like torch.tensordot.]], [[
local a, b = ember.randn(3, 4, 5), ember.randn(4, 5, 2)
print(ember.tensordot(a, b).shape)                        -- ember.Size({3, 2})
print(ember.tensordot(a, b, {{2}, {1}}).shape)            -- ember.Size({3, 5, 5, 2})]])

add("ember.kron", {"Tensor:kron"}, "ember.kron(a, b)\nTensor:kron(b)", [[
The Kronecker product: for a and b of the same number of dims (the one with fewer gets
leading 1s), the block tensor whose block i is a[i] * b; the result's size in each dim
is the product of theirs. Differentiable. Like torch.kron.]], [[
print(ember.kron(ember.tensor({{1, 2}, {3, 4}}), ember.eye(2, {dtype = "int64"})))]])

add("ember.cdist", nil, "ember.cdist(x1, x2, [p = 2])  or (x1, x2, {p =})", [[
The p-norm distances between each row of x1 [..., P, M] and each row of x2 [..., R, M]:
a [..., P, R] tensor (leading batch dims broadcast). p >= 0: 0 counts the differing
coordinates, math.huge takes the largest difference. For p = 2 with P or R above 25 it
uses the matmul form ||x||^2 + ||y||^2 - 2 x.y (as PyTorch does; slightly less exact).
Floating-point inputs; differentiable, with a gradient of 0 where a distance is 0 (as
in PyTorch). Like torch.cdist.]], [[
local x = ember.tensor({{0.0, 0.0}, {1.0, 1.0}})
local y = ember.tensor({{3.0, 4.0}})
print(ember.cdist(x, y))        -- {{5.}, {3.6056}}
print(ember.cdist(x, y, 1))     -- {{7.}, {5.}}]])

add("ember.index_put", {"Tensor:index_put", "Tensor:index_put_"},
  "ember.index_put(t, indices, values, [accumulate = false])\nTensor:index_put(indices, values, [accumulate])\n" ..
  "Tensor:index_put_(indices, values, [accumulate])   (also {accumulate =})", [[
Writes values at the positions named by indices, a table with one entry per leading
dim of t: an int64/int32 index tensor (1-based, negative from the end), a bool mask
(consuming as many dims as it has), or {} / false for a whole dim -- the same rules as
t[{...}] with tensors (see Tensor.__index). values (a tensor or a number) broadcast to
the shape t[indices] has. accumulate = false: on duplicate positions the last write
wins (on the CPU; unspecified on CUDA, as in PyTorch); true: duplicates add up.
index_put returns a new tensor and is differentiable: t gets the gradient with zeros
where values were written (accumulate: all of it), values get the gradient read back at
their positions. index_put_ writes into t and returns it. Like torch.index_put.]], [[
local t = ember.zeros(4)
local i = ember.tensor({2, 2, 4})
print(ember.index_put(t, {i}, ember.tensor({1.0, 2.0, 3.0})))         -- {0., 2., 0., 3.}
print(t:index_put_({i}, ember.tensor({1.0, 2.0, 3.0}), {accumulate = true}))  -- {0., 3., 0., 3.}]])

return entries
