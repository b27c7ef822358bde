-- Docstrings of the functions and values of the `ember` module table that are
-- written in C (lua/*.c), plus ember.save_checkpoint / load_checkpoint. The
-- format is shared by every file of lua/ember/doc/: a list of entries
-- {name, also, sig, doc, example[, needs]}. Where ember.X and Tensor:X are the
-- same function value, the one entry here covers both spellings.
--
-- The elementwise families (unary math, binary arithmetic, comparisons) and
-- their in-place forms are built by the small functions below from one line
-- of data each, so that the dozens of near-identical entries stay consistent.

local entries = {}

local function add(e) entries[#entries + 1] = e end

-- ---- creation -----------------------------------------------------------------

add {
  name = "ember.tensor",
  sig = "ember.tensor(data, [opts])",
  doc = [[
Makes a new tensor from `data`: a (nested) table of numbers or booleans, a single
number or boolean (a 0-d tensor), or a tensor (copied). The dtype is inferred:
integers give int64, any float gives the default dtype (float32), booleans give bool,
an empty table gives the default dtype. Mixing booleans and numbers, and ragged
nesting, are errors.
opts: dtype (a name or ember.float64, ...), device ("cpu" | "cuda"), requires_grad
(false). A tensor argument is copied, detached from its graph, to its own dtype and
device unless opts say otherwise.
Like torch.tensor.]],
  example = [[
local a = ember.tensor({{1, 2}, {3, 4}})
print(a.dtype, a.shape[1], a.shape[2])     -- int64  2  2
local b = ember.tensor({1, 2}, {dtype = "float64", requires_grad = true})
print(b.requires_grad, ember.tensor(2.5):dim())   -- true  0]],
}

add {
  name = "ember.zeros",
  sig = "ember.zeros(size..., [opts])",
  doc = [[
Returns a tensor filled with 0. `size` is integers or one table of integers
(ember.zeros() and ember.zeros({}) give a 0-d tensor).
opts: dtype (default: the default dtype, float32), device ("cpu" | "cuda"),
requires_grad (false; float dtypes only). Like torch.zeros.]],
  example = [[
local t = ember.zeros(2, 3)
print(t.shape[1], t.shape[2], t:sum():item())   -- 2  3  0.0
print(ember.zeros({2}, {dtype = "int64"}))]],
}

add {
  name = "ember.ones",
  sig = "ember.ones(size..., [opts])",
  doc = [[
Returns a tensor filled with 1. `size` is integers or one table of integers.
opts: dtype (default float32), device ("cpu" | "cuda"), requires_grad (false).
Like torch.ones.]],
  example = [[
local w = ember.ones(2, 2, {requires_grad = true})
print(w:sum():item(), w.requires_grad)   -- 4.0  true]],
}

add {
  name = "ember.empty",
  sig = "ember.empty(size..., [opts])",
  doc = [[
Returns a tensor whose values are not initialised (whatever the memory held).
`size` is integers or one table of integers. opts: dtype (default float32), device,
requires_grad. Use it only when every element is written before it is read.
Like torch.empty.]],
  example = [[
local t = ember.empty(2, 3):fill_(7)
print(t:sum():item())   -- 42.0]],
}

add {
  name = "ember.full",
  sig = "ember.full(size, value, [opts])",
  doc = [[
Returns a tensor of shape `size` (a table of integers) filled with `value`.
The dtype follows the value unless given: an integer gives int64, a float the default
dtype, a boolean bool. opts: dtype, device, requires_grad. Like torch.full.]],
  example = [[
print(ember.full({2, 2}, 7))                       -- int64 7s
print(ember.full({3}, 0.5, {dtype = "float64"}))]],
}

add {
  name = "ember.zeros_like",
  sig = "ember.zeros_like(t, [opts])",
  doc = [[
Returns a tensor of zeros with t's shape, dtype and device.
opts: dtype, device, requires_grad override them. Like torch.zeros_like.]],
  example = [[
local x = ember.randn(2, 3)
local z = ember.zeros_like(x, {dtype = "int64"})
print(z.shape[2], z.dtype)   -- 3  int64]],
}

add {
  name = "ember.ones_like",
  sig = "ember.ones_like(t, [opts])",
  doc = [[
Returns a tensor of ones with t's shape, dtype and device.
opts: dtype, device, requires_grad override them. Like torch.ones_like.]],
  example = [[
print(ember.ones_like(ember.zeros(2, {dtype = "int64"})))   -- tensor([1, 1])]],
}

add {
  name = "ember.empty_like",
  sig = "ember.empty_like(t, [opts])",
  doc = [[
Returns an uninitialised tensor with t's shape, dtype and device.
opts: dtype, device, requires_grad override them. Like torch.empty_like.]],
  example = [[
local e = ember.empty_like(ember.zeros(4))
print(e:numel(), e.dtype)   -- 4  float32]],
}

add {
  name = "ember.full_like",
  sig = "ember.full_like(t, value, [opts])",
  doc = [[
Returns a tensor with t's shape, dtype and device filled with `value` (a number or a
boolean). opts: dtype, device, requires_grad override them. Like torch.full_like.]],
  example = [[
print(ember.full_like(ember.zeros(3), 2.5))   -- tensor([2.5000, 2.5000, 2.5000])]],
}

add {
  name = "ember.arange",
  sig = "ember.arange(stop, [opts])\nember.arange(start, stop, [step], [opts])",
  doc = [[
Returns the 1-D tensor start, start+step, ... up to but not including `stop`
(start defaults to 0, step to 1; step may be negative, never 0). The values are the
numbers themselves, not indices: arange(3) is 0, 1, 2, as in PyTorch.
All-integer arguments give int64, otherwise the default dtype.
opts: dtype, device, requires_grad. Like torch.arange.]],
  example = [[
print(ember.arange(5))            -- tensor([0, 1, 2, 3, 4])
print(ember.arange(1, 2, 0.25))   -- float32: 1.0 .. 1.75
print(ember.arange(5, 0, -2))     -- tensor([5, 3, 1])]],
}

add {
  name = "ember.linspace",
  sig = "ember.linspace(start, stop, steps, [opts])",
  doc = [[
Returns `steps` evenly spaced values from start to stop, both included.
opts: dtype (default float32), device. Like torch.linspace.]],
  example = [[
print(ember.linspace(0, 1, 5))   -- tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])]],
}

add {
  name = "ember.eye",
  sig = "ember.eye(n, [m], [opts])",
  doc = [[
Returns an n x m matrix (m defaults to n) with ones on the diagonal and zeros
elsewhere. opts: dtype (default float32), device. Like torch.eye.]],
  example = [[
print(ember.eye(2))
print(ember.eye(2, 3, {dtype = "int64"}))]],
}

add {
  name = "ember.is_tensor",
  sig = "ember.is_tensor(x)",
  doc = [[
Returns true when x is an ember tensor, false for anything else. Like torch.is_tensor.]],
  example = [[
print(ember.is_tensor(ember.zeros(1)), ember.is_tensor({1, 2}))   -- true  false]],
}

add {
  name = "ember.set_default_dtype",
  sig = "ember.set_default_dtype(dtype)",
  doc = [[
Sets the dtype that creation functions use for floating point values (initially
"float32"): zeros, ones, rand, randn, tensor({1.5}), arange with a float argument...
Only float dtypes are accepted ("float32", "float64", "float16", "bfloat16").
Like torch.set_default_dtype.]],
  example = [[
ember.set_default_dtype("float64")
print(ember.zeros(1).dtype)          -- float64
ember.set_default_dtype(ember.float32)]],
}

add {
  name = "ember.set_default_device",
  also = {"ember.get_default_device"},
  sig = "ember.set_default_device(device | nil)\nember.get_default_device() -> device name",
  doc = [[
Sets the device that creation functions use when given none (initially "cpu"; nil
sets it back): zeros, ones, empty, full, tensor, arange, linspace, logspace, eye, rand,
randn, randint, randperm, tril/triu_indices, and what is built from them, such as a
module's parameters. An explicit device option still wins, and the *_like forms keep
their tensor's device. Like torch.set_default_device; ember has no `with
torch.device(...)` form.]],
  example = [[
ember.set_default_device("cpu")
print(ember.get_default_device(), ember.zeros(2).device)   -- cpu  cpu
ember.set_default_device(nil)]],
}

add {
  name = "ember.get_default_dtype",
  sig = "ember.get_default_dtype()",
  doc = [[
Returns the name of the default floating point dtype (initially "float32").
Like torch.get_default_dtype.]],
  example = [[
print(ember.get_default_dtype())   -- float32]],
}

add {
  name = "ember.get_num_threads",
  sig = "ember.get_num_threads()",
  doc = [[
Returns how many CPU threads the CPU kernels may use (the caller and the
pool's workers): set_num_threads, else EMBER_NUM_THREADS or OMP_NUM_THREADS,
else the CPUs the process may run on. Fewer run while other programs keep
the cores busy (the pool shrinks its team when its workers do not get a
core, and grows it again when they do). Like torch.get_num_threads.]],
  example = [[
print(ember.get_num_threads() >= 1)   -- true]],
}

add {
  name = "ember.set_num_threads",
  sig = "ember.set_num_threads(n)",
  doc = [[
Sets how many CPU threads the CPU kernels (including matrix products) may
use, 1 to 1024. Results do not depend on it beyond rounding of sums split
differently. Like torch.set_num_threads.]],
  example = [[
local n = ember.get_num_threads()
ember.set_num_threads(1)
print(ember.get_num_threads())   -- 1
ember.set_num_threads(n)]],
}

-- ---- sizes -----------------------------------------------------------------------

add {
  name = "ember.Size",
  sig = "ember.Size(sizes)   -- sizes: a table of integers\nt.shape  t:size()",
  doc = [[
The sizes of a tensor, as torch.Size: t.shape and t:size() return one. A Size is a Lua
array of integers with ember.Size as metatable, so s[1], #s, ipairs(s) and
table.unpack(s) work, and it goes wherever a size table does (ember.zeros(t.shape),
t:view(s), t:expand(s), ...). s[-1] is the last entry, as for dims. Sizes compare
with ==, with each other and with plain tables: t.shape == {2, 3} is true when the
integers match (Lua calls __eq for two tables only: t.shape == 2 is false). tostring
and the shell print ember.Size({2, 3}). A Size is a new table on every read, so
changing one changes no tensor. ember.Size() is the size of a 0-d tensor.]],
  example = [[
local t = ember.zeros(2, 3)
print(t.shape)                                      -- ember.Size({2, 3})
print(t.shape == ember.Size({2, 3}), t.shape == {2, 3}, t.shape[-1])   -- true true 3
print(ember.ones(t.shape):sum(), getmetatable(t:size()) == ember.Size)]],
}

add {
  name = "ember.Size:numel",
  sig = "Size:numel()",
  doc = [[
The number of elements a tensor of this size holds: the product of the entries (1 for
ember.Size(), the size of a 0-d tensor). Like torch.Size.numel.]],
  example = [[
print(ember.zeros(2, 3, 4).shape:numel(), ember.Size():numel())   -- 24  1]],
}

-- ---- views and shape (shared with Tensor methods) -------------------------------

add {
  name = "ember.reshape",
  also = {"Tensor:reshape"},
  sig = "ember.reshape(t, size...)\nTensor:reshape(size...)",
  doc = [[
Returns t with a new shape, the same elements in row-major order. `size` is integers
or one table; one entry may be -1 (inferred). A view when t's strides allow it,
otherwise a copy. Like torch.reshape.]],
  example = [[
local x = ember.arange(6)
print(x:reshape(2, -1))
print(ember.reshape(x, {3, 2}).shape[1])   -- 3]],
}

add {
  name = "ember.transpose",
  also = {"Tensor:transpose"},
  sig = "ember.transpose(t, dim1, dim2)\nTensor:transpose(dim1, dim2)",
  doc = [[
Returns a view of t with dims dim1 and dim2 swapped. Dims are 1-based (negative
from the end). Like torch.transpose.]],
  example = [[
local x = ember.zeros(2, 3, 4)
local y = x:transpose(1, 3)
print(y.shape[1], y.shape[2], y.shape[3])   -- 4  3  2]],
}

add {
  name = "ember.permute",
  also = {"Tensor:permute"},
  sig = "ember.permute(t, dims...)\nTensor:permute(dims...)",
  doc = [[
Returns a view of t with its dims reordered: dim i of the result is dim dims[i] of t.
dims are 1-based, given as integers or one table, one per dim of t. Like torch.permute.]],
  example = [[
local x = ember.zeros(2, 3, 4)
print(table.concat(x:permute(3, 1, 2).shape, "x"))          -- 4x2x3
print(table.concat(ember.permute(x, {2, 3, 1}).shape, "x"))  -- 3x4x2]],
}

add {
  name = "ember.narrow",
  also = {"Tensor:narrow"},
  sig = "ember.narrow(t, dim, start, length)\nTensor:narrow(dim, start, length)",
  doc = [[
Returns a view of `length` elements of dim `dim` beginning at `start`. start is
1-based (negative counts from the end: -1 is the last). Like torch.narrow, with
1-based dim and start.]],
  example = [[
local x = ember.arange(6)
print(x:narrow(1, 2, 3))    -- tensor([1, 2, 3])
print(x:narrow(1, -2, 2))   -- tensor([4, 5])]],
}

add {
  name = "ember.select",
  also = {"Tensor:select"},
  sig = "ember.select(t, dim, index)\nTensor:select(dim, index)",
  doc = [[
Returns the view of t at position `index` of dim `dim`, with that dim removed.
dim and index are 1-based (negative from the end). t[i] selects along dim 1 the same
way, but gives a Lua number when t is 1-D.
Like torch.select.]],
  example = [[
local m = ember.tensor({{1, 2, 3}, {4, 5, 6}})
print(m:select(1, 2))    -- tensor([4, 5, 6])
print(m:select(2, -1))   -- tensor([3, 6])]],
}

add {
  name = "ember.squeeze",
  also = {"Tensor:squeeze"},
  sig = "ember.squeeze(t, [dim])\nTensor:squeeze([dim])",
  doc = [[
Returns a view of t without its dims of size 1 (all of them, or only `dim`, which is
1-based; a dim whose size is not 1 is left as it is). Like torch.squeeze.]],
  example = [[
local x = ember.zeros(1, 2, 1)
print(table.concat(x:squeeze().shape, "x"))    -- 2
print(table.concat(x:squeeze(1).shape, "x"))   -- 2x1]],
}

add {
  name = "ember.unsqueeze",
  also = {"Tensor:unsqueeze"},
  sig = "ember.unsqueeze(t, dim)\nTensor:unsqueeze(dim)",
  doc = [[
Returns a view of t with a new dim of size 1 at position `dim` (1-based, in
1..t:dim()+1; -1 appends at the end). Like torch.unsqueeze.]],
  example = [[
local v = ember.zeros(3)
print(table.concat(v:unsqueeze(1).shape, "x"))    -- 1x3
print(table.concat(v:unsqueeze(-1).shape, "x"))   -- 3x1]],
}

add {
  name = "Tensor:transpose_",
  also = {"Tensor:t_", "Tensor:swapaxes_", "Tensor:swapdims_", "Tensor:squeeze_", "Tensor:unsqueeze_"},
  sig = "Tensor:transpose_(dim1, dim2)  Tensor:swapaxes_(dim1, dim2)  Tensor:swapdims_(dim1, dim2)\n"
    .. "Tensor:t_()  Tensor:squeeze_([dim])  Tensor:unsqueeze_(dim)",
  doc = [[
The in-place view ops: t itself takes the shape and strides that transpose, t, squeeze
or unsqueeze would give, and is returned; no element moves. Every other view of the
same memory is unchanged. Refused on a tensor that requires grad while grad mode is on
(the in-place rule, deviation 10), and a tensor autograd saved before can no longer be
used by backward (it counts as modified). Like torch.Tensor.transpose_ and friends.]],
  example = [[
local x = ember.arange(6):reshape(2, 3)
x:t_()
print(x.shape, x:is_contiguous())      -- ember.Size({3, 2})  false
print(x:unsqueeze_(1).shape)           -- ember.Size({1, 3, 2})]],
}

add {
  name = "ember.flatten",
  also = {"Tensor:flatten"},
  sig = "ember.flatten(t, [start_dim], [end_dim])\nTensor:flatten([start_dim], [end_dim])",
  doc = [[
Returns t with dims start_dim..end_dim (1-based, inclusive; default all) merged into
one. A view when possible, otherwise a copy. Like torch.flatten.]],
  example = [[
local x = ember.zeros(2, 3, 4)
print(x:flatten():numel(), table.concat(x:flatten(2).shape, "x"))   -- 24  2x12]],
}

add {
  name = "ember.t",
  also = {"Tensor:t"},
  sig = "ember.t(t)\nTensor:t()",
  doc = [[
Returns the transpose of a tensor of at most 2 dims (a view); 0-d and 1-D tensors are
returned as they are. For more dims use transpose or permute. Like torch.t.]],
  example = [[
print(ember.tensor({{1, 2}, {3, 4}}):t())   -- {{1, 3}, {2, 4}}]],
}

add {
  name = "ember.clone",
  also = {"Tensor:clone"},
  sig = "ember.clone(t)\nTensor:clone()",
  doc = [[
Returns a copy of t with its own storage (same shape, dtype and device). Gradients
flow back through the copy. Like torch.clone.]],
  example = [[
local a = ember.zeros(2)
local b = a:clone()
b[1] = 5
print(a[1], b[1])   -- 0.0  5.0]],
}

add {
  name = "ember.numel",
  also = {"Tensor:numel", "Tensor:nelement"},
  sig = "ember.numel(t)\nTensor:numel()\nTensor:nelement()",
  doc = [[
Returns the number of elements of t (the product of its sizes; 1 for a 0-d tensor).
Like torch.numel.]],
  example = [[
print(ember.numel(ember.zeros(2, 3)), ember.zeros(4):nelement())   -- 6  4]],
}

-- ---- elementwise: unary -------------------------------------------------------

-- What an integer or bool input gives, for ops whose result is a float.
local FLOAT_RESULT = "Integer and bool inputs give the default float dtype (float32)."

-- name, aliases, meaning, float result?, example input
local unary_ops = {
  {"neg", {"negative"}, "Returns -t, elementwise (the same as the operator -t).", false,
   "{1, -2, 3}"},
  {"abs", {}, "Returns |t|, elementwise.", false, "{-1.5, 0, 2}"},
  {"sign", {}, "Returns -1, 0 or 1 by the sign of each element, in t's dtype.", false,
   "{-2.5, 0, 3}"},
  {"exp", {}, "Returns e^t, elementwise.", true, "{0, 1}"},
  {"log", {}, "Returns the natural logarithm of t, elementwise (log(0) = -inf, nan below 0).",
   true, "{1, 2.718281828}"},
  {"log1p", {}, "Returns log(1 + t), elementwise, accurate for small t.", true, "{0, 1e-8}"},
  {"expm1", {}, "Returns exp(t) - 1, elementwise, accurate for small t.", true, "{0, 1e-8}"},
  {"sqrt", {}, "Returns the square root of t, elementwise (nan below 0).", true, "{4, 9}"},
  {"rsqrt", {}, "Returns 1 / sqrt(t), elementwise.", true, "{4, 0.25}"},
  {"sin", {}, "Returns the sine of t (radians), elementwise.", true, "{0, math.pi / 2}"},
  {"cos", {}, "Returns the cosine of t (radians), elementwise.", true, "{0, math.pi}"},
  {"tanh", {}, "Returns the hyperbolic tangent of t, elementwise.", true, "{-1, 0, 1}"},
  {"sigmoid", {}, "Returns 1 / (1 + exp(-t)), elementwise.", true, "{-2, 0, 2}"},
  {"relu", {}, "Returns max(t, 0), elementwise, in t's dtype.", false, "{-1, 0, 2}"},
  {"silu", {}, "Returns t * sigmoid(t) (SiLU, also called swish), elementwise.", true,
   "{-1, 0, 1}"},
  {"floor", {}, "Rounds each element down to an integer value, in t's dtype.", false,
   "{-1.5, 0.5, 2.7}"},
  {"ceil", {}, "Rounds each element up to an integer value, in t's dtype.", false,
   "{-1.5, 0.5, 2.2}"},
  {"reciprocal", {}, "Returns 1 / t, elementwise (inf for 0).", true, "{2, 4}"},
  {"square", {}, "Returns t * t, elementwise, in t's dtype.", false, "{-3, 2}"},
  {"logical_not", {}, "Returns the bool tensor `t == 0` (true where t is zero or false).",
   false, "{0, 1, 2}"},
}

local function methods_of(name, aliases)
  local also = {}
  for _, a in ipairs(aliases) do also[#also + 1] = "ember." .. a end
  also[#also + 1] = "Tensor:" .. name
  for _, a in ipairs(aliases) do also[#also + 1] = "Tensor:" .. a end
  return also
end

local function torch_like(name, aliases)
  local names = {"torch." .. name}
  for _, a in ipairs(aliases) do names[#names + 1] = "torch." .. a end
  return "Like " .. table.concat(names, " / ") .. "."
end

local function sig_lines(name, aliases, fargs, margs)
  local lines = {}
  for _, n in ipairs({name, table.unpack(aliases)}) do
    lines[#lines + 1] = ("ember.%s(%s)"):format(n, fargs)
  end
  for _, n in ipairs({name, table.unpack(aliases)}) do
    lines[#lines + 1] = ("Tensor:%s(%s)"):format(n, margs)
  end
  return table.concat(lines, "\n")
end

-- The in-place twin "name_" of an op; `dtype_note` says what the result must fit.
local function add_inplace(name, fargs, margs, what, dtype_note, example)
  add {
    name = "ember." .. name .. "_",
    also = {"Tensor:" .. name .. "_"},
    sig = ("ember.%s_(%s)\nTensor:%s_(%s)"):format(name, fargs, name, margs),
    doc = ("In-place form of ember.%s: changes t and returns it.\nt becomes %s.\n%s"
      .. "Refused on a leaf tensor that requires grad (wrap updates in ember.no_grad)."):format(
      name, what, dtype_note),
    example = example,
  }
end

for _, u in ipairs(unary_ops) do
  local name, aliases, meaning, float_result, input = table.unpack(u)
  local doc = meaning
  if float_result then doc = doc .. "\n" .. FLOAT_RESULT end
  add {
    name = "ember." .. name,
    also = methods_of(name, aliases),
    sig = sig_lines(name, aliases, "t", ""),
    doc = doc .. "\n" .. torch_like(name, aliases),
    example = ("local t = ember.tensor(%s)\nprint(ember.%s(t))\nprint(t:%s())"):format(
      input, name, name),
  }
  add_inplace(name, "t", "", name .. "(t)",
    float_result and "t must have a float dtype (an integer tensor cannot hold the result).\n"
      or "",
    ("local t = ember.tensor(%s%s)\nt:%s_()\nprint(t)"):format(input,
      float_result and ", {dtype = \"float32\"}" or "", name))
end

add {
  name = "ember.round",
  also = {"Tensor:round"},
  sig = "ember.round(t, [{decimals = 0}])\nTensor:round([{decimals = 0}])",
  doc = [[
Rounds each element to the nearest integer value, halves to even (0.5 -> 0, 1.5 -> 2,
2.5 -> 2), in t's dtype. With decimals = d, rounds to d decimal places (negative d: to
tens, hundreds, ...), as round(t * 10^d) / 10^d. Like torch.round.]],
  example = [[
print(ember.round(ember.tensor({0.5, 1.5, 2.5, -1.7})))   -- tensor([0., 2., 2., -2.])
print(ember.round(ember.tensor({1.2345, 123.0}), {decimals = 2}))]],
}
add_inplace("round", "t", "", "round(t)", "",
  "local t = ember.tensor({0.4, 2.6})\nt:round_()\nprint(t)   -- tensor([0., 3.])")

add {
  name = "ember.gelu",
  also = {"Tensor:gelu"},
  sig = "ember.gelu(t, [{approximate = \"none\"}])\nTensor:gelu([{approximate = \"none\"}])",
  doc = [[
Returns GELU(t) = t * Phi(t) (Phi: the standard normal CDF, through erf), elementwise.
{approximate = "tanh"} uses 0.5 t (1 + tanh(sqrt(2/pi) (t + 0.044715 t^3))) instead.
]] .. FLOAT_RESULT .. "\nLike torch.nn.functional.gelu.",
  example = [[
local t = ember.tensor({-1.0, 0, 1})
print(ember.gelu(t))                         -- tensor([-0.1587, 0.0000, 0.8413])
print(t:gelu({approximate = "tanh"}))]],
}
add_inplace("gelu", "t, [opts]", "[opts]", "gelu(t) (same options)",
  "t must have a float dtype.\n",
  "local t = ember.tensor({-1.0, 1})\nt:gelu_()\nprint(t)")

-- ---- elementwise: binary ------------------------------------------------------

local OPERANDS = [[
a and b are tensors or Lua numbers (or booleans), at least one a tensor; shapes
broadcast and dtypes promote as in PyTorch, a Lua number counting as a weak scalar
(an int tensor + 1.5 gives float32, a float16 tensor + 1.5 stays float16).]]

-- name, aliases, meaning, Lua operator, example, in-place example
local binary_ops = {
  {"mul", {"multiply"}, "Returns a * b, elementwise.", "a * b",
   "local a = ember.tensor({1, 2, 3})\nprint(ember.mul(a, 2))\n"
     .. "print(a:mul(ember.tensor({10, 20, 30})))",
   "local t = ember.tensor({1.0, 2})\nt:mul_(3)\nprint(t)   -- tensor([3., 6.])"},
  {"remainder", {},
   "Returns the remainder of a / b with the sign of b (Python's %), elementwise.", "a % b",
   "print(ember.remainder(ember.tensor({5, -5}), 3))   -- tensor([2, 1])",
   "local t = ember.tensor({7.5, -1})\nt:remainder_(2)\nprint(t)   -- tensor([1.5000, 1.0000])"},
  {"pow", {}, "Returns a raised to the power b, elementwise.", "a ^ b",
   "local a = ember.tensor({1.0, 2, 3})\nprint(a:pow(2))\nprint(ember.pow(2, a))   -- 2^a",
   "local t = ember.tensor({4.0, 9})\nt:pow_(0.5)\nprint(t)   -- tensor([2., 3.])"},
  {"maximum", {}, "Returns the larger of a and b, elementwise (NaN wins).", nil,
   "print(ember.maximum(ember.tensor({1, 5}), ember.tensor({3, 2})))   -- tensor([3, 5])",
   "local t = ember.tensor({-1.0, 2})\nt:maximum_(0)\nprint(t)"},
  {"minimum", {}, "Returns the smaller of a and b, elementwise (NaN wins).", nil,
   "print(ember.minimum(ember.tensor({1, 5}), 3))   -- tensor([1, 3])",
   "local t = ember.tensor({-1.0, 2})\nt:minimum_(0)\nprint(t)"},
}

local function add_binary(name, aliases, meaning, operator, example, extra_doc)
  local doc = meaning
  if operator then doc = doc .. "\nThe operator `" .. operator .. "` does the same." end
  add {
    name = "ember." .. name,
    also = methods_of(name, aliases),
    sig = sig_lines(name, aliases, "a, b", "b"),
    doc = doc .. "\n" .. OPERANDS .. (extra_doc or "") .. "\n" .. torch_like(name, aliases),
    example = example,
  }
end

local INPLACE_FITS = "b broadcasts to t's shape; the result must fit t's dtype\n"
  .. "(an int tensor cannot take a float result).\n"

for _, b in ipairs(binary_ops) do
  local name, aliases, meaning, operator, example, example_ = table.unpack(b)
  add_binary(name, aliases, meaning, operator, example)
  add_inplace(name, "t, b", "b", ("%s(t, b)"):format(name), INPLACE_FITS, example_)
end

add {
  name = "ember.add",
  also = {"Tensor:add"},
  sig = "ember.add(a, b, [{alpha = 1}])\nTensor:add(b, [{alpha = 1}])",
  doc = [[
Returns a + alpha * b, elementwise (alpha defaults to 1). The operator `a + b` does
the same without alpha.
]] .. OPERANDS .. [[

alpha must be an integer when both operands are integers. Like torch.add.]],
  example = [[
local a = ember.tensor({1, 2, 3})
print(ember.add(a, 10))                      -- tensor([11, 12, 13])
print(a:add(ember.ones(3), {alpha = 0.5}))   -- tensor([1.5000, 2.5000, 3.5000])]],
}
add_inplace("add", "t, b, [{alpha = 1}]", "b, [{alpha = 1}]", "t + alpha * b", INPLACE_FITS,
  "local t = ember.zeros(2)\nt:add_(1, {alpha = 3})\nprint(t)   -- tensor([3., 3.])")

add {
  name = "ember.sub",
  also = {"ember.subtract", "Tensor:sub", "Tensor:subtract"},
  sig = "ember.sub(a, b, [{alpha = 1}])\nember.subtract(a, b, [{alpha = 1}])\n"
    .. "Tensor:sub(b, [{alpha = 1}])\nTensor:subtract(b, [{alpha = 1}])",
  doc = [[
Returns a - alpha * b, elementwise (alpha defaults to 1). The operator `a - b` does
the same without alpha.
]] .. OPERANDS .. [[

alpha must be an integer when both operands are integers. Like torch.sub.]],
  example = [[
local a = ember.tensor({5, 6})
print(ember.sub(a, 1), ember.sub(10, a))   -- tensor([4, 5])  tensor([5, 4])
print(a:subtract(a, {alpha = 2}))          -- tensor([-5, -6])]],
}
add_inplace("sub", "t, b, [{alpha = 1}]", "b, [{alpha = 1}]", "t - alpha * b", INPLACE_FITS,
  "local t = ember.ones(2)\nt:sub_(ember.tensor({1.0, 2}))\nprint(t)   -- tensor([0., -1.])")

add {
  name = "ember.div",
  also = {"ember.divide", "ember.true_divide", "Tensor:div", "Tensor:divide", "Tensor:true_divide"},
  sig = "ember.div(a, b, [{rounding_mode = nil | \"trunc\" | \"floor\"}])\nember.divide(a, b)\n"
    .. "ember.true_divide(a, b)\nTensor:div(b, [opts])\nTensor:divide(b)\nTensor:true_divide(b)",
  doc = [[
Returns a / b, elementwise, as true division: integer inputs give the default float
dtype. The operator `a / b` does the same. rounding_mode "trunc" rounds the quotient
toward zero and "floor" toward minus infinity (ember.floor_divide); both keep integer
dtypes, and an integer division by zero is an error on the CPU.
]] .. OPERANDS .. [[

Like torch.div.]],
  example = [[
print(ember.div(ember.tensor({1, 5}), 2))   -- tensor([0.5000, 2.5000])
print(ember.tensor({3.0}):divide(ember.tensor({4.0})))]],
}
add_inplace("div", "t, b", "b", "t / b", INPLACE_FITS
  .. "So t must have a float dtype.\n",
  "local t = ember.tensor({3.0, 6})\nt:div_(3)\nprint(t)   -- tensor([1., 2.])")

-- comparisons and logical ops
local predicates = {
  {"eq", "a == b", "Note that Lua's `a == b` on tensors compares identity, not values."},
  {"ne", "a ~= b"},
  {"lt", "a < b"},
  {"le", "a <= b"},
  {"gt", "a > b"},
  {"ge", "a >= b"},
}
for _, p in ipairs(predicates) do
  local name, cmp, note = p[1], p[2], p[3]
  add_binary(name, {}, ("Returns the bool tensor %s, elementwise."):format(cmp), nil,
    ("local a = ember.tensor({1, 2, 3})\nprint(ember.%s(a, 2))\n"
      .. "print(a:%s(ember.tensor({3, 2, 1})))")
      :format(name, name),
    note and ("\n" .. note))
  add_inplace(name, "t, b", "b",
    ("(%s) written as 1 / 0 in t's dtype"):format((cmp:gsub("^a", "t"))), "",
    ("local t = ember.tensor({1.0, 2, 3})\nt:%s_(2)\nprint(t)"):format(name))
end

for _, p in ipairs({{"logical_and", "and"}, {"logical_or", "or"}}) do
  local name, word = p[1], p[2]
  add_binary(name, {},
    ("Returns the bool tensor (a ~= 0) %s (b ~= 0), elementwise; any dtype is accepted.")
      :format(word), nil,
    ("print(ember.%s(ember.tensor({1, 0, 2}), ember.tensor({true, true, false})))"):format(name))
  add_inplace(name, "t, b", "b", ("(t ~= 0) %s (b ~= 0) written as 1 / 0 in t's dtype")
    :format(word), "",
    ("local t = ember.tensor({1.0, 0, 2})\nt:%s_(ember.tensor({0.0, 1, 1}))\nprint(t)")
      :format(name))
end

-- ---- clamp, where, masked_fill ---------------------------------------------------

add {
  name = "ember.clamp",
  also = {"ember.clip", "Tensor:clamp", "Tensor:clip"},
  sig = "ember.clamp(t, [min], [max])\nember.clip(t, [min], [max])\n"
    .. "Tensor:clamp([min], [max])\nTensor:clip([min], [max])",
  doc = [[
Returns t with each element limited to [min, max]. min and max are numbers, tensors
(broadcast against t) or nil for no bound; where t equals a bound the gradient goes to
t, and a NaN bound gives NaN.
A float bound on an integer tensor gives a float result. Like torch.clamp.]],
  example = [[
local t = ember.tensor({-3, 5, 7})
print(t:clamp(0, 6))                 -- tensor([0, 5, 6])
print(ember.clamp(t, nil, 0))        -- tensor([-3, 0, 0])]],
}
add {
  name = "ember.clamp_",
  also = {"ember.clip_", "Tensor:clamp_", "Tensor:clip_"},
  sig = "ember.clamp_(t, [min], [max])\nember.clip_(t, [min], [max])\n"
    .. "Tensor:clamp_([min], [max])\nTensor:clip_([min], [max])",
  doc = [[
In-place form of ember.clamp: limits t's elements to [min, max] and returns t.
The result must fit t's dtype (clamping an int tensor to 0.5 is an error).]],
  example = [[
local t = ember.tensor({1, 5, 9})
t:clamp_(2, 6)
print(t)   -- tensor([2, 5, 6])]],
}
add {
  name = "ember.clamp_min",
  also = {"Tensor:clamp_min"},
  sig = "ember.clamp_min(t, min)\nTensor:clamp_min(min)",
  doc = [[
Returns t with every element below `min` (a number or a tensor) raised to it; the same
as clamp(t, min). Like torch.clamp_min.]],
  example = [[
print(ember.tensor({-2, 3}):clamp_min(0))   -- tensor([0, 3])]],
}
add {
  name = "ember.clamp_min_",
  also = {"Tensor:clamp_min_"},
  sig = "ember.clamp_min_(t, min)\nTensor:clamp_min_(min)",
  doc = [[
In-place form of ember.clamp_min: raises t's elements below `min` to it and returns t.]],
  example = [[
local t = ember.tensor({-2.0, 3})
t:clamp_min_(0)
print(t)   -- tensor([0., 3.])]],
}
add {
  name = "ember.clamp_max",
  also = {"Tensor:clamp_max"},
  sig = "ember.clamp_max(t, max)\nTensor:clamp_max(max)",
  doc = [[
Returns t with every element above `max` (a number or a tensor) lowered to it; the same
as clamp(t, nil, max). Like torch.clamp_max.]],
  example = [[
print(ember.clamp_max(ember.tensor({-2, 3}), 1))   -- tensor([-2, 1])]],
}
add {
  name = "ember.clamp_max_",
  also = {"Tensor:clamp_max_"},
  sig = "ember.clamp_max_(t, max)\nTensor:clamp_max_(max)",
  doc = [[
In-place form of ember.clamp_max: lowers t's elements above `max` to it and returns t.]],
  example = [[
local t = ember.tensor({-2.0, 3})
t:clamp_max_(1)
print(t)   -- tensor([-2., 1.])]],
}

add {
  name = "ember.where",
  sig = "ember.where(cond, x, y)",
  doc = [[
Returns a tensor taking x where the bool tensor `cond` is true and y elsewhere. x and y
are tensors or numbers; the three broadcast together and x, y promote to a common dtype.
cond must be bool (compare first: t:gt(0)). The method form is x:where(cond, y), a
separate function (Tensor:where). Like torch.where(cond, x, y).]],
  example = [[
local t = ember.tensor({-1.0, 2, -3})
print(ember.where(t:gt(0), t, 0))   -- tensor([0., 2., 0.])]],
}

add {
  name = "ember.masked_fill",
  also = {"Tensor:masked_fill"},
  sig = "ember.masked_fill(t, mask, value)\nTensor:masked_fill(mask, value)",
  doc = [[
Returns a copy of t with `value` (a number, a boolean or a one-element tensor) where
the bool tensor `mask` (broadcast to t's shape) is true. Like torch.masked_fill.]],
  example = [[
local t = ember.zeros(3)
print(t:masked_fill(ember.tensor({true, false, true}), 7))   -- tensor([7., 0., 7.])]],
}
add {
  name = "ember.masked_fill_",
  also = {"Tensor:masked_fill_"},
  sig = "ember.masked_fill_(t, mask, value)\nTensor:masked_fill_(mask, value)",
  doc = [[
In-place form of ember.masked_fill: writes `value` into t where `mask` is true and
returns t. t[mask] = value does the same.]],
  example = [[
local t = ember.arange(4)
t:masked_fill_(t:gt(1), -1)
print(t)   -- tensor([0, 1, -1, -1])]],
}

-- ---- reductions ----------------------------------------------------------------

local DIMS = [[
`dim` is a 1-based dim (negative from the end) or a table of dims; none reduces over
all elements. keepdim (false) keeps the reduced dims with size 1. A trailing options
table may give dim and keepdim by name: t:sum{dim = 2, keepdim = true}.]]

add {
  name = "ember.sum",
  also = {"Tensor:sum"},
  sig = "ember.sum(t, [dim], [keepdim], [{dtype =}])\nTensor:sum([dim], [keepdim], [{dtype =}])",
  doc = [[
Returns the sum of t's elements, over `dim` or over all of them (a 0-d tensor).
]] .. DIMS .. [[

Integer and bool inputs sum to int64; {dtype = ...} chooses the result dtype.
Like torch.sum, with 1-based dims.]],
  example = [[
local m = ember.tensor({{1, 2}, {3, 4}})
print(m:sum())                   -- tensor(10)
print(ember.sum(m, 1))           -- tensor([4, 6])
print(m:sum(2, true).shape[2])   -- 1]],
}

add {
  name = "ember.mean",
  also = {"Tensor:mean"},
  sig = "ember.mean(t, [dim], [keepdim], [{dtype =}])\nTensor:mean([dim], [keepdim], [{dtype =}])",
  doc = [[
Returns the mean of t's elements, over `dim` or over all of them.
]] .. DIMS .. [[

t must be a float tensor, or {dtype = "float32"} (say) casts it first: the mean of an
int tensor without dtype is an error, as in PyTorch. Like torch.mean, with 1-based dims.]],
  example = [[
local m = ember.tensor({{1.0, 2}, {3, 4}})
print(m:mean(), ember.mean(m, 2))                        -- tensor(2.5000)  tensor([1.5, 3.5])
print(ember.tensor({1, 2}):mean({dtype = "float32"}))   -- tensor(1.5000)]],
}

add {
  name = "ember.prod",
  also = {"Tensor:prod"},
  sig = "ember.prod(t, [dim], [keepdim], [{dtype =}])\nTensor:prod([dim], [keepdim], [{dtype =}])",
  doc = [[
Returns the product of t's elements, over `dim` or over all of them.
]] .. DIMS .. [[

{dtype = ...} casts t first. Like torch.prod, with 1-based dims (and a list of dims
allowed).]],
  example = [[
local m = ember.tensor({{1, 2}, {3, 4}})
print(m:prod(), ember.prod(m, 1))   -- tensor(24)  tensor([3, 8])]],
}

add {
  name = "ember.amax",
  also = {"Tensor:amax"},
  sig = "ember.amax(t, [dim], [keepdim])\nTensor:amax([dim], [keepdim])",
  doc = [[
Returns the largest values of t over `dim` (or all elements), without indices.
]] .. DIMS .. "\nLike torch.amax, with 1-based dims.",
  example = [[
local m = ember.tensor({{1, 5}, {7, 2}})
print(m:amax(), ember.amax(m, 2))   -- tensor(7)  tensor([5, 7])]],
}

add {
  name = "ember.amin",
  also = {"Tensor:amin"},
  sig = "ember.amin(t, [dim], [keepdim])\nTensor:amin([dim], [keepdim])",
  doc = [[
Returns the smallest values of t over `dim` (or all elements), without indices.
]] .. DIMS .. "\nLike torch.amin, with 1-based dims.",
  example = [[
local m = ember.tensor({{1, 5}, {7, 2}})
print(m:amin(), ember.amin(m, 1))   -- tensor(1)  tensor([1, 2])]],
}

add {
  name = "ember.all",
  also = {"Tensor:all"},
  sig = "ember.all(t, [dim], [keepdim])\nTensor:all([dim], [keepdim])",
  doc = [[
Returns the bool tensor "every element is nonzero (true)", over `dim` or all elements;
a uint8 input gives uint8 (0 or 1), as PyTorch.
]] .. DIMS .. "\nLike torch.all.",
  example = [[
local m = ember.tensor({{1, 0}, {2, 3}})
print(m:all(), ember.all(m, 2))   -- tensor(False)  tensor([False, True])
print(m:gt(-1):all():item())      -- true]],
}

add {
  name = "ember.any",
  also = {"Tensor:any"},
  sig = "ember.any(t, [dim], [keepdim])\nTensor:any([dim], [keepdim])",
  doc = [[
Returns the bool tensor "some element is nonzero (true)", over `dim` or all elements;
a uint8 input gives uint8 (0 or 1), as PyTorch.
]] .. DIMS .. "\nLike torch.any.",
  example = [[
local m = ember.tensor({{0, 0}, {2, 0}})
print(m:any(), ember.any(m, 2))   -- tensor(True)  tensor([False, True])]],
}

add {
  name = "ember.logsumexp",
  also = {"Tensor:logsumexp"},
  sig = "ember.logsumexp(t, [dim], [keepdim])\nTensor:logsumexp([dim], [keepdim])",
  doc = [[
Returns log(sum(exp(t))) over `dim` (or all elements), computed without overflow.
]] .. DIMS .. "\nLike torch.logsumexp, with 1-based dims.",
  example = [[
print(ember.zeros(2, 2):logsumexp(2))   -- tensor([0.6931, 0.6931])  (log 2)
print(ember.logsumexp(ember.tensor({1000.0, 1000.0})))   -- about 1000.69, no overflow]],
}

add {
  name = "ember.max",
  also = {"Tensor:max"},
  sig = "ember.max(t)\nember.max(t, dim, [keepdim]) -> values, indices\nember.max(a, b)\n"
    .. "Tensor:max()\nTensor:max(dim, [keepdim]) -> values, indices\nTensor:max(b)",
  doc = [[
With no dim: the largest element of t as a 0-d tensor (an error for an empty tensor).
With a dim (1-based): two tensors, the largest values along dim and their 1-based
int64 indices (the first of ties); keepdim (false) keeps dim with size 1.
With a second tensor: the elementwise maximum (as ember.maximum). Like torch.max.]],
  example = [[
local m = ember.tensor({{3, 1}, {2, 5}})
print(m:max())                        -- tensor(5)
local values, indices = ember.max(m, 2)
print(values, indices)                -- tensor([3, 5])  tensor([1, 2])]],
}

add {
  name = "ember.min",
  also = {"Tensor:min"},
  sig = "ember.min(t)\nember.min(t, dim, [keepdim]) -> values, indices\nember.min(a, b)\n"
    .. "Tensor:min()\nTensor:min(dim, [keepdim]) -> values, indices\nTensor:min(b)",
  doc = [[
With no dim: the smallest element of t as a 0-d tensor (an error for an empty tensor).
With a dim (1-based): two tensors, the smallest values along dim and their 1-based
int64 indices (the first of ties); keepdim (false) keeps dim with size 1.
With a second tensor: the elementwise minimum (as ember.minimum). Like torch.min.]],
  example = [[
local m = ember.tensor({{3, 1}, {2, 5}})
local values, indices = m:min(1)
print(values, indices)                -- tensor([2, 1])  tensor([2, 1])
print(ember.min(m, ember.full({2, 2}, 2)))]],
}

add {
  name = "ember.argmax",
  also = {"Tensor:argmax"},
  sig = "ember.argmax(t, [dim], [keepdim])\nTensor:argmax([dim], [keepdim])",
  doc = [[
Returns the 1-based int64 indices of the largest values along `dim` (the first of
ties). With no dim, the 1-based index into the flattened tensor (a 0-d tensor).
Like torch.argmax, but indices and dims count from 1.]],
  example = [[
local m = ember.tensor({{3, 1}, {2, 5}})
print(m:argmax(), ember.argmax(m, 2))   -- tensor(4)  tensor([1, 2])]],
}

add {
  name = "ember.argmin",
  also = {"Tensor:argmin"},
  sig = "ember.argmin(t, [dim], [keepdim])\nTensor:argmin([dim], [keepdim])",
  doc = [[
Returns the 1-based int64 indices of the smallest values along `dim` (the first of
ties). With no dim, the 1-based index into the flattened tensor (a 0-d tensor).
Like torch.argmin, but indices and dims count from 1.]],
  example = [[
local m = ember.tensor({{3, 1}, {2, 5}})
print(m:argmin(), ember.argmin(m, 1, true))   -- tensor(2)  {{2, 1}}]],
}

local VAR_OPTS = [[
]] .. DIMS .. [[

The divisor is N - correction, correction 1 by default ({correction = 0}: population).
Older spellings: {unbiased = false} (correction 0) and a lone boolean:
ember.%s(t, false) is correction 0 over all elements.]]

add {
  name = "ember.var",
  also = {"Tensor:var"},
  sig = "ember.var(t, [dim], [keepdim], [{correction = 1}])\nember.var(t, unbiased)\n"
    .. "Tensor:var([dim], [keepdim], [{correction = 1}])\nTensor:var(unbiased)",
  doc = "Returns the variance of t over `dim` (or all elements).\n" .. VAR_OPTS:format("var")
    .. "\nLike torch.var (PyTorch 2), with 1-based dims.",
  example = [[
local t = ember.tensor({1.0, 2, 3, 4})
print(t:var(), ember.var(t, {correction = 0}))   -- tensor(1.6667)  tensor(1.2500)]],
}

add {
  name = "ember.std",
  also = {"Tensor:std"},
  sig = "ember.std(t, [dim], [keepdim], [{correction = 1}])\nember.std(t, unbiased)\n"
    .. "Tensor:std([dim], [keepdim], [{correction = 1}])\nTensor:std(unbiased)",
  doc = "Returns the standard deviation of t over `dim` (or all elements).\n"
    .. VAR_OPTS:format("std") .. "\nLike torch.std (PyTorch 2), with 1-based dims.",
  example = [[
local m = ember.tensor({{1.0, 3}, {2, 2}})
print(m:std(2), ember.std(m, false))   -- tensor([1.4142, 0.0000])  tensor(0.7071)]],
}

add {
  name = "ember.norm",
  also = {"Tensor:norm"},
  sig = "ember.norm(t, [p], [dim], [keepdim])\nTensor:norm([p], [dim], [keepdim])",
  doc = [[
Returns the p-norm (sum |t|^p)^(1/p) over `dim` (a dim or a table of dims) or over all
elements. p is a number (default 2), "fro" (the same as 2), math.huge (max |t|) or
-math.huge (min |t|). Options may be given by name: {p =, dim =, keepdim =}.
Like torch.norm.]],
  example = [[
local t = ember.tensor({{3.0, -4}, {0, 0}})
print(t:norm(), ember.norm(t, 1, 2))   -- tensor(5.)  tensor([7., 0.])
print(t:norm(math.huge))               -- tensor(4.)]],
}

add {
  name = "ember.softmax",
  also = {"Tensor:softmax"},
  sig = "ember.softmax(t, dim, [{dtype =}])\nTensor:softmax(dim, [{dtype =}])",
  doc = [[
Returns exp(t) / sum(exp(t)) along `dim` (required, 1-based; -1 is the last dim).
t must be a float tensor; {dtype = ...} casts it first. Like torch.softmax.]],
  example = [[
print(ember.tensor({1.0, 1, 2}):softmax(1))   -- tensor([0.2119, 0.2119, 0.5761])
print(ember.softmax(ember.zeros(2, 2), -1))]],
}

add {
  name = "ember.log_softmax",
  also = {"Tensor:log_softmax"},
  sig = "ember.log_softmax(t, dim, [{dtype =}])\nTensor:log_softmax(dim, [{dtype =}])",
  doc = [[
Returns log(softmax(t, dim)) along `dim` (required, 1-based), computed stably.
t must be a float tensor; {dtype = ...} casts it first. Like torch.log_softmax.]],
  example = [[
print(ember.log_softmax(ember.zeros(2), 1))   -- tensor([-0.6931, -0.6931])]],
}

add {
  name = "ember.cumsum",
  also = {"Tensor:cumsum"},
  sig = "ember.cumsum(t, dim, [{dtype =}])\nTensor:cumsum(dim, [{dtype =}])",
  doc = [[
Returns the running sums along `dim` (required, 1-based): element i is the sum of
elements 1..i. {dtype = ...} casts t first. Like torch.cumsum.]],
  example = [[
print(ember.tensor({1, 2, 3}):cumsum(1))   -- tensor([1, 3, 6])]],
}

add {
  name = "ember.cumprod",
  also = {"Tensor:cumprod"},
  sig = "ember.cumprod(t, dim, [{dtype =}])\nTensor:cumprod(dim, [{dtype =}])",
  doc = [[
Returns the running products along `dim` (required, 1-based): element i is the product
of elements 1..i. {dtype = ...} casts t first. Like torch.cumprod.]],
  example = [[
print(ember.cumprod(ember.tensor({{1, 2, 3}}), 2))   -- {{1, 2, 6}}]],
}

-- ---- indexing, joining, splitting, sorting -------------------------------------

add {
  name = "ember.index_select",
  also = {"Tensor:index_select"},
  sig = "ember.index_select(t, dim, index)\nTensor:index_select(dim, index)",
  doc = [[
Returns the slices of t at the 1-based positions `index` along `dim`, in that order
(a copy). index is an int64 tensor or a table of integers; repeats are allowed.
Like torch.index_select, with 1-based dim and indices.]],
  example = [[
local m = ember.tensor({{10, 20, 30}, {40, 50, 60}})
print(m:index_select(2, {3, 1}))                   -- {{30, 10}, {60, 40}}
print(ember.index_select(m, 1, ember.tensor({2})))  -- {{40, 50, 60}}]],
}

add {
  name = "ember.gather",
  also = {"Tensor:gather"},
  sig = "ember.gather(t, dim, index)\nTensor:gather(dim, index)",
  doc = [=[
Returns out with out[i][j] = t[i][index[i][j]] for dim 2 (likewise for other dims):
index is an int64 tensor of 1-based positions with t's number of dims; the result has
index's shape. Like torch.gather, with 1-based dim and indices.]=],
  example = [[
local m = ember.tensor({{10, 20, 30}, {40, 50, 60}})
print(m:gather(2, ember.tensor({{1, 1}, {3, 2}})))   -- {{10, 10}, {60, 50}}]],
}

add {
  name = "ember.scatter",
  also = {"Tensor:scatter"},
  sig = "ember.scatter(t, dim, index, src)\nTensor:scatter(dim, index, src)",
  doc = [=[
Returns a copy of t with the values of src written at the 1-based positions `index`
along `dim` (out[i][index[i][j]] = src[i][j] for dim 2). src is a tensor or a number.
index is an int64 tensor. The in-place form is the method Tensor:scatter_.
Like torch.scatter, with 1-based dim and indices.]=],
  example = [[
local idx = ember.tensor({{3}, {1}})
print(ember.zeros(2, 3):scatter(2, idx, 9))   -- {{0, 0, 9}, {9, 0, 0}}
print(ember.scatter(ember.zeros(2, 3), 2, idx, ember.ones(2, 1)))]],
}

add {
  name = "ember.scatter_add",
  also = {"Tensor:scatter_add"},
  sig = "ember.scatter_add(t, dim, index, src)\nTensor:scatter_add(dim, index, src)",
  doc = [[
Like ember.scatter, but adds the values of the tensor src at the positions (repeated
positions accumulate) instead of writing them. The in-place form is Tensor:scatter_add_.
Like torch.scatter_add, with 1-based dim and indices.]],
  example = [[
local counts = ember.zeros(3):scatter_add(1, ember.tensor({1, 1, 3}), ember.ones(3))
print(counts)   -- tensor([2., 0., 1.])]],
}

add {
  name = "ember.index_add",
  also = {"Tensor:index_add"},
  sig = "ember.index_add(t, dim, index, src)\nTensor:index_add(dim, index, src)",
  doc = [[
Returns a copy of t where slice index[k] along `dim` has slice k of src added to it
(repeated indices accumulate). index is an int64 tensor or a table of 1-based
integers. The in-place form is the method Tensor:index_add_.
Like torch.index_add, with 1-based dim and indices.]],
  example = [[
print(ember.index_add(ember.zeros(3, 2), 1, {1, 3, 1}, ember.ones(3, 2)))
-- {{2, 2}, {0, 0}, {1, 1}}]],
}

add {
  name = "ember.masked_select",
  also = {"Tensor:masked_select"},
  sig = "ember.masked_select(t, mask)\nTensor:masked_select(mask)",
  doc = [[
Returns a 1-D tensor of the elements of t where the bool tensor `mask` (broadcast to
t's shape) is true, in row-major order. t[mask] does the same.
Like torch.masked_select.]],
  example = [[
local m = ember.tensor({{10, 20}, {30, 40}})
print(m:masked_select(m:gt(15)))   -- tensor([20, 30, 40])]],
}

add {
  name = "ember.nonzero",
  also = {"Tensor:nonzero", "ember.argwhere", "Tensor:argwhere"},
  sig = "ember.nonzero(t)\nTensor:nonzero()\nember.argwhere(t)\nTensor:argwhere()",
  doc = [[
Returns an int64 tensor of shape [n, t:dim()] holding the 1-based indices of the n
nonzero (true) elements of t, in row-major order. Like torch.nonzero, but 1-based.
argwhere is the same (as torch.argwhere is torch.nonzero).]],
  example = [[
print(ember.tensor({0, 1, 0, 2}):nonzero())   -- {{2}, {4}}]],
}

add {
  name = "ember.cat",
  also = {"ember.concat"},
  sig = "ember.cat(tensors, [dim])\nember.concat(tensors, [dim])",
  doc = [[
Joins a non-empty table of tensors along `dim` (1-based, default 1); the other sizes
must agree. 1-D empty tensors are skipped, as in PyTorch. Like torch.cat.]],
  example = [[
print(ember.cat({ember.ones(2), ember.zeros(3)}))              -- 5 elements
print(ember.cat({ember.ones(1, 2), ember.zeros(1, 2)}, 2).shape[2])   -- 4]],
}

add {
  name = "ember.stack",
  sig = "ember.stack(tensors, [dim])",
  doc = [[
Joins a non-empty table of same-shape tensors along a new dim inserted at `dim`
(1-based, default 1). Like torch.stack.]],
  example = [[
local s = ember.stack({ember.ones(2), ember.zeros(2)}, 2)
print(s)   -- {{1, 0}, {1, 0}}]],
}

add {
  name = "ember.split",
  also = {"Tensor:split"},
  sig = "ember.split(t, size, [dim])\nember.split(t, sizes, [dim])\n"
    .. "Tensor:split(size, [dim])\nTensor:split(sizes, [dim])",
  doc = [[
Splits t along `dim` (1-based, default 1) into views and returns them as several
values: pieces of `size` elements (the last may be smaller), or pieces of the sizes in
the table `sizes` (which must add up to the dim's size). Like torch.split, but the
pieces are multiple return values, not a tuple: use {t:split(2)} for a table.]],
  example = [[
local a, b, c = ember.arange(5):split(2)
print(a, b, c)                                    -- [0, 1]  [2, 3]  [4]
print(select("#", ember.split(ember.arange(6), {1, 5})))   -- 2]],
}

add {
  name = "ember.chunk",
  also = {"Tensor:chunk"},
  sig = "ember.chunk(t, chunks, [dim])\nTensor:chunk(chunks, [dim])",
  doc = [[
Splits t along `dim` (1-based, default 1) into at most `chunks` views of equal size
(the last may be smaller), returned as several values. Like torch.chunk.]],
  example = [[
local a, b = ember.arange(5):chunk(2)
print(a, b)   -- tensor([0, 1, 2])  tensor([3, 4])]],
}

local SORT_ARGS = [[
dim is 1-based (default -1, the last); the arguments may also come in a trailing table
{dim =, descending =, stable =}.]]

add {
  name = "ember.sort",
  also = {"Tensor:sort"},
  sig = "ember.sort(t, [dim], [descending], [stable]) -> values, indices\n"
    .. "Tensor:sort([dim], [descending], [stable]) -> values, indices",
  doc = [[
Sorts t along `dim`, ascending unless descending is true; returns the sorted values
and the 1-based int64 positions they came from. stable (false) keeps the order of
equal elements.
]] .. SORT_ARGS .. "\nLike torch.sort, with 1-based dim and indices.",
  example = [[
local values, indices = ember.tensor({3, 1, 2}):sort()
print(values, indices)                                  -- [1, 2, 3]  [2, 3, 1]
print(ember.sort(ember.tensor({3, 1, 2}), {descending = true}))]],
}

add {
  name = "ember.argsort",
  also = {"Tensor:argsort"},
  sig = "ember.argsort(t, [dim], [descending], [stable])\n"
    .. "Tensor:argsort([dim], [descending], [stable])",
  doc = [[
Returns only the 1-based int64 indices that sort t along `dim` (see ember.sort).
]] .. SORT_ARGS .. "\nLike torch.argsort, with 1-based dim and indices.",
  example = [[
print(ember.tensor({3, 1, 2}):argsort())         -- tensor([2, 3, 1])
print(ember.argsort(ember.tensor({3, 1, 2}), 1, true))   -- tensor([1, 3, 2])]],
}

add {
  name = "ember.topk",
  also = {"Tensor:topk"},
  sig = "ember.topk(t, k, [dim], [largest], [sorted]) -> values, indices\n"
    .. "Tensor:topk(k, [dim], [largest], [sorted]) -> values, indices",
  doc = [[
Returns the k largest (or, with largest = false, smallest) elements along `dim`
(1-based, default -1) and their 1-based int64 indices, sorted unless sorted = false.
The arguments after k may come in a trailing table {dim =, largest =, sorted =}.
Like torch.topk, with 1-based dim and indices.]],
  example = [[
local values, indices = ember.tensor({3, 1, 2, 5}):topk(2)
print(values, indices)   -- tensor([5, 3])  tensor([4, 1])
print(ember.topk(ember.tensor({3, 1, 2, 5}), 1, {largest = false}))]],
}

-- ---- linear algebra -------------------------------------------------------------

add {
  name = "ember.matmul",
  also = {"Tensor:matmul"},
  sig = "ember.matmul(a, b)\nTensor:matmul(b)",
  doc = [[
Matrix product with PyTorch's rules: 1-D x 1-D is a dot product (0-d), 2-D x 2-D a
matrix product, 1-D operands are treated as a row / column and that dim dropped, and
more dims are batches that broadcast. Errors name both shapes. Like torch.matmul.]],
  example = [[
local a = ember.tensor({{1.0, 2}, {3, 4}})
print(a:matmul(ember.tensor({1.0, 1})))          -- tensor([3., 7.])
print(ember.matmul(ember.ones(5, 2, 3), ember.ones(3, 4)).shape[1])   -- 5]],
}

add {
  name = "ember.mm",
  also = {"Tensor:mm"},
  sig = "ember.mm(a, b)\nTensor:mm(b)",
  doc = [[
Product of two matrices, [n, k] @ [k, m] -> [n, m]; both must be 2-D (no
broadcasting). Like torch.mm.]],
  example = [[
local a = ember.tensor({{1.0, 2}, {3, 4}})
print(ember.mm(a, a))   -- {{7, 10}, {15, 22}}]],
}

add {
  name = "ember.bmm",
  also = {"Tensor:bmm"},
  sig = "ember.bmm(a, b)\nTensor:bmm(b)",
  doc = [[
Batched matrix product: [B, n, k] @ [B, k, m] -> [B, n, m]; both must be 3-D with the
same batch size. Like torch.bmm.]],
  example = [[
local r = ember.bmm(ember.ones(2, 1, 3), ember.ones(2, 3, 4))
print(table.concat(r.shape, "x"), r[1][1][1])   -- 2x1x4  3.0]],
}

add {
  name = "ember.addmm",
  also = {"Tensor:addmm"},
  sig = "ember.addmm(c, a, b, [{beta = 1, alpha = 1}])\n"
    .. "Tensor:addmm(a, b, [{beta = 1, alpha = 1}])",
  doc = [[
Returns beta * c + alpha * (a @ b) for matrices a [n, k] and b [k, m]; c broadcasts to
[n, m] (a bias vector of m elements works). Like torch.addmm.]],
  example = [[
local a = ember.tensor({{1.0, 2}, {3, 4}})
print(ember.addmm(ember.ones(2), a, a, {beta = 0.5, alpha = 2}))]],
}

add {
  name = "ember.outer",
  also = {"Tensor:outer"},
  sig = "ember.outer(a, b)\nTensor:outer(b)",
  doc = [[
Outer product of two 1-D tensors: out[i][j] = a[i] * b[j], shape [#a, #b].
Like torch.outer.]],
  example = [[
print(ember.outer(ember.tensor({1, 2}), ember.tensor({1, 10, 100})))]],
}

add {
  name = "ember.dot",
  also = {"Tensor:dot"},
  sig = "ember.dot(a, b)\nTensor:dot(b)",
  doc = [[
Dot product of two 1-D tensors of the same length, as a 0-d tensor. Like torch.dot.]],
  example = [[
print(ember.tensor({1.0, 2}):dot(ember.tensor({3.0, 4})):item())   -- 11.0]],
}

-- ---- random numbers ---------------------------------------------------------------

add {
  name = "ember.Generator",
  also = {"ember.default_generator", "ember.Generator:manual_seed", "ember.Generator:seed",
          "ember.Generator:initial_seed", "ember.Generator:get_state", "ember.Generator:set_state"},
  sig = "ember.Generator([device]) -> g\nember.default_generator\n"
    .. "g:manual_seed(seed) -> g   g:seed() -> seed   g:initial_seed() -> seed\n"
    .. "g:get_state() -> {seed =, offset =}   g:set_state(state | seed [, offset]) -> g   g.device",
  doc = [[
A random number generator of its own: give it as the generator option of the random
functions (ember.rand/randn/randint/randperm/multinomial/normal/bernoulli, the in-place
fills uniform_, normal_, bernoulli_, exponential_, geometric_, log_normal_, cauchy_,
random_) and they draw from it and advance it alone, leaving the default generator
(ember.manual_seed's) where it was. A new generator starts from PyTorch's default seed
67280421310721; g:manual_seed(s) gives the numbers the default generator gives after
ember.manual_seed(s) (ember's streams depend only on (seed, offset)), on every device:
a generator made for "cpu" also serves CUDA tensors, where PyTorch requires a matching
device. ember.default_generator is the default one (ember.manual_seed returns it); its
methods are ember.manual_seed, seed, initial_seed, get_rng_state and set_rng_state.
States are tables {seed =, offset =}, not PyTorch's byte tensors. Like torch.Generator.]],
  example = [[
local g = ember.Generator():manual_seed(42)
local a = ember.randn(3, {generator = g})      -- the default generator does not move
ember.manual_seed(42)
print(ember.equal(a, ember.randn(3)))          -- true: the same stream
print(ember.rand(2, {generator = ember.Generator():manual_seed(1)}))]],
}

add {
  name = "ember.manual_seed",
  sig = "ember.manual_seed(seed) -> ember.default_generator",
  doc = [[
Seeds the default random number generator (Philox, counter-based) with an integer and
resets its position: the same seed gives the same numbers on every run and every device.
Negative seeds wrap to unsigned 64 bits. Like torch.manual_seed. See ember.Generator for
generators of their own.]],
  example = [[
ember.manual_seed(42)
local a = ember.rand(3)
ember.manual_seed(42)
print(ember.rand(3):eq(a):all():item())   -- true]],
}

add {
  name = "ember.seed",
  sig = "ember.seed()",
  doc = [[
Seeds the generator from the clock and returns the seed (an integer below 2^53).
Like torch.seed.]],
  example = [[
local s = ember.seed()
print(s == ember.initial_seed())   -- true]],
}

add {
  name = "ember.initial_seed",
  sig = "ember.initial_seed()",
  doc = [[
Returns the seed the generator was last seeded with (by manual_seed, seed or
set_rng_state). Like torch.initial_seed.]],
  example = [[
ember.manual_seed(7)
print(ember.initial_seed())   -- 7]],
}

add {
  name = "ember.get_rng_state",
  sig = "ember.get_rng_state()",
  doc = [[
Returns the generator's state as a table {seed =, offset =} (the counter position).
Give it to ember.set_rng_state to replay the same numbers. Like torch.get_rng_state,
but a plain table rather than a byte tensor.]],
  example = [[
local state = ember.get_rng_state()
local a = ember.randn(2)
ember.set_rng_state(state)
print(ember.randn(2):eq(a):all():item())   -- true]],
}

add {
  name = "ember.set_rng_state",
  sig = "ember.set_rng_state(state)\nember.set_rng_state(seed, [offset])",
  doc = [[
Restores the generator from a table {seed =, offset =} as returned by
ember.get_rng_state, or from a seed and an offset (default 0: the same as
manual_seed(seed)). Like torch.set_rng_state.]],
  example = [[
ember.set_rng_state(42, 0)
local a = ember.rand(2)
ember.set_rng_state({seed = 42, offset = 0})
print(ember.rand(2):eq(a):all():item())   -- true]],
}

add {
  name = "ember.rand",
  sig = "ember.rand(size..., [opts])",
  doc = [[
Returns a tensor of random numbers uniform in [0, 1). `size` is integers or one table.
opts: dtype (default float32), device, requires_grad, generator (an ember.Generator to
draw from instead of the default one). Like torch.rand.]],
  example = [[
ember.manual_seed(0)
local u = ember.rand(2, 3)
print(u:min():item() >= 0, u:max():item() < 1)   -- true  true]],
}

add {
  name = "ember.randn",
  sig = "ember.randn(size..., [opts])",
  doc = [[
Returns a tensor of random numbers from the standard normal distribution (mean 0,
variance 1). `size` is integers or one table. opts: dtype (default float32), device,
requires_grad, generator. Like torch.randn.]],
  example = [[
local w = ember.randn(3, 2, {requires_grad = true})
print(w.shape[1], w.requires_grad)   -- 3  true]],
}

add {
  name = "ember.randint",
  sig = "ember.randint(high, size, [opts])\nember.randint(low, high, size, [opts])",
  doc = [[
Returns random integers uniform in [low, high) (low defaults to 0) in a tensor of shape
`size`, which must be a table. opts: dtype (default int64), device, requires_grad,
generator. Like torch.randint.]],
  example = [[
local r = ember.randint(1, 7, {10})     -- dice rolls
print(r:min():item() >= 1, r:max():item() <= 6)   -- true  true]],
}

add {
  name = "ember.randperm",
  sig = "ember.randperm(n, [opts])",
  doc = [[
Returns a random permutation of 1..n (1-based, so it can index a tensor directly).
opts: dtype (default int64), device, generator. Like torch.randperm, but of 1..n, not
0..n-1.]],
  example = [[
local p = ember.randperm(5)
print(p:sort())                      -- tensor([1, 2, 3, 4, 5]) ...
local x = ember.arange(5)
print(x:index_select(1, p):numel())  -- a shuffled copy: 5]],
}

add {
  name = "ember.rand_like",
  sig = "ember.rand_like(t, [opts])",
  doc = [[
Returns uniform [0, 1) random numbers with t's shape, dtype and device.
opts: dtype, device override them. Like torch.rand_like.]],
  example = [[
print(ember.rand_like(ember.zeros(2, {dtype = "float64"})).dtype)   -- float64]],
}

add {
  name = "ember.randn_like",
  sig = "ember.randn_like(t, [opts])",
  doc = [[
Returns standard normal random numbers with t's shape, dtype and device.
opts: dtype, device override them. Like torch.randn_like.]],
  example = [[
local noise = ember.randn_like(ember.zeros(2, 3))
print(noise.shape[2])   -- 3]],
}

add {
  name = "ember.randint_like",
  sig = "ember.randint_like(t, high, [opts])\nember.randint_like(t, low, high, [opts])",
  doc = [[
Returns random integers uniform in [low, high) (low defaults to 0) with t's shape,
dtype (a float t gets integer values stored as floats) and device. opts: dtype, device.
Like torch.randint_like.]],
  example = [[
print(ember.randint_like(ember.zeros(3, {dtype = "int64"}), 5, 8))]],
}

-- ---- autograd ----------------------------------------------------------------------

add {
  name = "ember.no_grad",
  sig = "ember.no_grad(fn, ...)\nlocal guard <close> = ember.no_grad()",
  doc = [[
Turns gradient recording off. With a function: calls fn(...) with recording off and
returns its results; the previous mode comes back even when fn raises (the error is
passed on). With no argument: turns recording off and returns a guard that restores
the previous mode when closed, for `local g <close> = ember.no_grad()`.
Inside a coroutine fn may yield: while it is suspended the rest of the program has
its own mode, and each resume turns recording off again for fn, as torch.no_grad()
does around a Python generator (the guard form, like Python's `with` block, stays
in force across a yield). Like torch.no_grad.]],
  example = [[
local w = ember.ones(2, {requires_grad = true})
local y = ember.no_grad(function() return w * 2 end)
print(y.requires_grad)                 -- false
do
  local guard <close> = ember.no_grad()
  print(ember.is_grad_enabled())       -- false
end
print(ember.is_grad_enabled())         -- true]],
}

add {
  name = "ember.enable_grad",
  sig = "ember.enable_grad(fn, ...)\nlocal guard <close> = ember.enable_grad()",
  doc = [[
Turns gradient recording on, the opposite of ember.no_grad, with the same two forms:
calls fn(...) with recording on and returns its results (fn may yield inside a
coroutine, as with ember.no_grad), or returns a <close> guard.
Useful inside a no_grad region. Like torch.enable_grad.]],
  example = [[
local w = ember.ones(2, {requires_grad = true})
ember.no_grad(function()
  local y = ember.enable_grad(function() return w * 2 end)
  print(y.requires_grad)   -- true
end)]],
}

add {
  name = "ember.set_grad_enabled",
  sig = "ember.set_grad_enabled(on)",
  doc = [[
Turns gradient recording on or off (on is a boolean) and returns the previous mode.
Like torch.set_grad_enabled (used as a function).]],
  example = [[
local was = ember.set_grad_enabled(false)
print(was, ember.is_grad_enabled())   -- true  false
ember.set_grad_enabled(was)]],
}

add {
  name = "ember.is_grad_enabled",
  sig = "ember.is_grad_enabled()",
  doc = [[
Returns whether operations are currently recorded for autograd. Like
torch.is_grad_enabled.]],
  example = [[
print(ember.is_grad_enabled())                                    -- true
print(ember.no_grad(function() return ember.is_grad_enabled() end))   -- false]],
}

add {
  name = "ember.detach",
  also = {"Tensor:detach"},
  sig = "ember.detach(t)\nTensor:detach()",
  doc = [[
Returns a tensor that shares t's storage but is cut off from the autograd graph: it
does not require grad and no gradient flows back through it. Like torch.detach.]],
  example = [[
local w = ember.ones(2, {requires_grad = true})
local d = (w * 2):detach()
print(d.requires_grad, d)   -- false  tensor([2., 2.])]],
}

-- ---- files -----------------------------------------------------------------------------

add {
  name = "ember.save",
  sig = "ember.save(path, tensors, [{metadata = {key = \"value\"}}])",
  doc = [[
Writes a table of tensors to a safetensors file (readable by PyTorch and NumPy tools).
Nested tables are flattened with "." ({layer = {weight = w}} is saved as
"layer.weight"); integer keys become decimal names. metadata: string keys and string
(or number, stored as text) values. The write is atomic: a temporary file beside the
file, fsynced, then renamed over it (unnamed while written where the file system has
O_TMPFILE, so even kill -9 mid-save leaves no temporary file; a later save removes any
left behind). A symbolic link is followed (its target is written, the link stays); a
character device or FIFO is written through, as torch.save does; a directory is
refused. Unlike torch.save, only data is stored, never code.
A table that also holds numbers, booleans or strings at any depth (an optimizer's
state_dict()) is saved whole: its tensors under the same dotted names, and its shape and
plain values in the metadata entry "ember.tree" (versioned JSON; the key is reserved);
ember.load gives such a table back as it was (integer keys, number types, empty tables).
Refused with the path to the value: functions, threads, other userdata, modules, keys that
are neither strings nor integers, cycles, nesting deeper than 64.]],
  example = [[
local path = os.tmpname()
ember.save(path, {w = ember.ones(2), layer = {b = ember.zeros(1)}}, {metadata = {epoch = 3}})
local t, meta = ember.load(path)
print(t["layer.b"], meta.epoch)   -- tensor([0.])  3
local fc = ember.nn.Linear(2, 1)
local opt = ember.optim.Adam(fc:parameters(), {lr = 0.01})
fc(ember.ones(1, 2)):sum():backward()
opt:step()
ember.save(path, opt:state_dict())
opt:load_state_dict(ember.load(path))
print(ember.load(path).state[1].step)   -- 1
os.remove(path)]],
}

add {
  name = "ember.load",
  sig = "local tensors, metadata = ember.load(path, [{device = \"cpu\", mmap = false}])",
  doc = [[
Reads a safetensors file; returns two tables: name -> tensor (flat: nested names stay
"a.b") and the metadata (string -> string). A file ember.save wrote from a table with
numbers, booleans or strings (metadata "ember.tree") comes back as that table instead, and
the metadata without that entry. opts: device to put the tensors on
(map_location = "cuda:0" is the same; weights_only = true is accepted, false refused).

mmap = true (torch.load's mmap=True) maps the file instead of reading it: each CPU
tensor is a view of the file's pages, read from disk when first touched, so a large
model opens without a second copy in memory. Writes to such a tensor (t:add_(1),
load_state_dict) are copy-on-write: they stay in the process and never reach the file.
The mapping lasts while any of its tensors (or their views) does. A tensor whose data
does not start at a multiple of its element size (possible in files from other writers;
ember.save aligns every tensor, as the reference writer does), an empty one, or a bool
tensor with bytes other than 0 and 1 is copied instead. With device = "cuda" each tensor
is copied from the mapping to the GPU. The header is checked against the file's size
before it is mapped; a file shortened or rewritten in place afterwards is the caller's
problem, as with safetensors' safe_open: untouched pages show the new bytes, and a
page past a new end kills the process with SIGBUS (ember.save renames a new file over
the old one, which leaves a mapping of the old file as it was). For torch.save files
mmap is accepted and the tensors are read.

PyTorch's torch.save files (.pt, .pth: a zip archive) are read as
torch.load(path, weights_only=True) reads them, and ember.load returns the one object
saved: a state_dict is a table name -> tensor whose pairs() walks the saved order, so
model:load_state_dict(ember.load("model.pt")) works, and an optimizer's state_dict loads
into opt:load_state_dict. dicts and OrderedDicts become tables, lists and tuples
sequences, None nil, dtypes and devices strings; tensors that shared a storage share
memory, Parameters and tensors that required grad are leaves that do. Tensors land on
the CPU unless device says otherwise. Only what torch's weights_only unpickler allows is
accepted: any other class or function in the file (os.system, a custom class) is
refused naming it, and never called. dtypes ember lacks (int8, int16, uint16, complex,
quantized), sparse tensors, the pre-1.6 format and TorchScript archives are errors
that say what to do. The format is told by the file's first bytes, not its name.
Loading never runs code. Errors name the file and what is wrong with it.]],
  example = [[
local path = os.tmpname()
ember.save(path, {x = ember.arange(3)})
local tensors, meta = ember.load(path)
print(tensors.x, next(meta))   -- tensor([0, 1, 2])  nil
os.remove(path)]],
}

add {
  name = "ember.safe_open",
  sig = "local f <close> = ember.safe_open(path, [{framework = \"pt\", device = \"cpu\"}])",
  doc = [[
safetensors' safe_open: reads and checks the header of a safetensors file and maps the
file, reading no tensor until asked. f:keys() lists the tensor names, sorted;
f:get_tensor(name) gives one tensor, a view of the mapping (copy-on-write, as
ember.load's mmap = true, which says when a tensor is copied instead), or its copy on
device; f:metadata() gives the "__metadata__" table, or nil when the file has none.
f:close() (or <close>, or the collector) closes the handle; tensors already taken stay
valid. Every get_tensor of one handle views the same mapping: an in-place write to one
tensor is seen by a later get_tensor of the same name, as in safetensors. framework
may be "pt" (or absent); safetensors' get_slice is not there: f:get_tensor(name):narrow
(...) is a view too, and only the pages it touches are read. A sharded checkpoint is a
safe_open per shard (its index JSON names the shard of each tensor).]],
  example = [[
local path = os.tmpname()
ember.save(path, {b = ember.ones(2), a = ember.zeros(3)}, {metadata = {format = "pt"}})
local f <close> = ember.safe_open(path)
print(table.concat(f:keys(), " "), f:metadata().format)   -- a b  pt
print(f:get_tensor("b"))                                   -- tensor([1., 1.])
os.remove(path)]],
}

add {
  name = "ember.read_idx",
  sig = "ember.read_idx(path)",
  doc = [[
Reads an IDX file (the format of MNIST and Fashion-MNIST, plain or gzip-compressed)
into a CPU tensor with the file's shape. Types: unsigned byte -> uint8, signed byte
and int16 -> int32, int32, float32, float64. Malformed or truncated files give an
error naming the file.]],
  example = [[
local path = os.tmpname()
local f = assert(io.open(path, "wb"))
-- magic 00 00 08 01 (unsigned bytes, 1 dim), size 3, then the data
f:write(string.pack(">I4>I4", 0x0801, 3), "\1\2\3")
f:close()
local t = ember.read_idx(path)
print(t, t.dtype)   -- tensor([1, 2, 3], dtype=uint8)  uint8
os.remove(path)]],
}

add {
  name = "ember.save_checkpoint",
  sig = "ember.save_checkpoint(path, {model =, optimizer =, scheduler =, epoch =, step =,"
    .. " extra =})",
  doc = [[
Saves a training run's whole state in one safetensors file (atomically, via
ember.save): the model's parameters ("model.<name>"), the optimizer's state, the
scheduler's, the random generator's state, the integer counters epoch and step, and
`extra` (a table of strings, numbers or booleans, read back as strings). Every field is
optional; an unknown field is an error. The file is written as ember.save writes (links
followed, devices and FIFOs written through): the old file stays whole until the new
one is renamed over it, and a save removes the temporary files that saves of the same
path killed mid-way left behind. Resume with ember.load_checkpoint.]],
  example = [[
local model = ember.nn.Linear(2, 1)
local opt = ember.optim.SGD(model:parameters(), {lr = 0.1})
local path = os.tmpname()
ember.save_checkpoint(path, {model = model, optimizer = opt, epoch = 3, extra = {note = "hi"}})
local info = ember.load_checkpoint(path, {model = model, optimizer = opt})
print(info.epoch, info.extra.note)   -- 3  hi
os.remove(path)]],
}

add {
  name = "ember.load_checkpoint",
  sig = "local info = ember.load_checkpoint(path, [{model =, optimizer =, scheduler =}])",
  doc = [[
Loads a file written by ember.save_checkpoint: restores the given model, optimizer and
scheduler in place, and the random generator, so a resumed run continues exactly.
Returns {epoch =, step =, extra =} (epoch and step nil when not saved; extra's values
are strings). A file that is not an ember checkpoint, or is damaged, is an error naming
the file and the problem; the whole file is checked before anything is restored, so
the model, optimizer, scheduler and generator are left as they were.]],
  example = [[
local model = ember.nn.Linear(2, 1)
local path = os.tmpname()
ember.save_checkpoint(path, {model = model, step = 100})
local fresh = ember.nn.Linear(2, 1)
local info = ember.load_checkpoint(path, {model = fresh})
print(info.step, fresh.weight:eq(model.weight):all():item())   -- 100  true
os.remove(path)]],
}

-- ---- triangles and sampling -----------------------------------------------------------

add {
  name = "ember.tril",
  also = {"Tensor:tril"},
  sig = "ember.tril(t, [diagonal]) or ember.tril(t, {diagonal =})\nTensor:tril([diagonal])",
  doc = [[
Returns a copy of t (at least 2 dims, any dtype) that keeps the lower triangle of the
last two dims and sets the rest to zero (false for bool): element [i][j] is kept when
j - i <= diagonal. diagonal (default 0, the main diagonal) > 0 keeps that many more
diagonals above it, < 0 drops diagonals below it. Leading dims are a batch.
Differentiable: the gradient is the same triangle of the incoming gradient. The
in-place form is Tensor:tril_. Like torch.tril.]],
  example = [[
print(ember.tril(ember.ones(3, 3)))     -- {{1, 0, 0}, {1, 1, 0}, {1, 1, 1}}
print(ember.arange(1, 7):view(2, 3):tril(1))   -- {{1, 2, 0}, {4, 5, 6}}
-- a causal attention mask: position i sees positions 1..i
print(ember.ones(3, 3, {dtype = "bool"}):tril())]],
}

add {
  name = "ember.triu",
  also = {"Tensor:triu"},
  sig = "ember.triu(t, [diagonal]) or ember.triu(t, {diagonal =})\nTensor:triu([diagonal])",
  doc = [[
Returns a copy of t (at least 2 dims, any dtype) that keeps the upper triangle of the
last two dims and sets the rest to zero (false for bool): element [i][j] is kept when
j - i >= diagonal. diagonal (default 0) > 0 drops diagonals above the main one, < 0
keeps that many more below it. Leading dims are a batch. Differentiable. The
in-place form is Tensor:triu_. Like torch.triu.]],
  example = [[
print(ember.triu(ember.ones(3, 3), 1))   -- {{0, 1, 1}, {0, 0, 1}, {0, 0, 0}}
-- the positions a causal mask hides, as an additive mask of -inf
local hide = ember.ones(3, 3, {dtype = "bool"}):triu(1)
print(ember.zeros(3, 3):masked_fill(hide, -math.huge))]],
}

add {
  name = "Tensor:tril_",
  also = {"Tensor:triu_"},
  sig = "Tensor:tril_([diagonal]) -> self\nTensor:triu_([diagonal]) -> self",
  doc = [[
In-place ember.tril / ember.triu: zeroes the other triangle of the last two dims of
t and returns t. Refused, as every in-place op, on a leaf that requires grad while
grad mode is on. Like torch.Tensor.tril_ / triu_.]],
  example = [[
local m = ember.ones(2, 3)
m:triu_()
print(m)   -- {{1, 1, 1}, {0, 1, 1}}]],
}

add {
  name = "ember.multinomial",
  also = {"Tensor:multinomial"},
  sig = "ember.multinomial(probs, num_samples, [replacement], [{replacement =, generator =}])\n"
    .. "Tensor:multinomial(num_samples, [replacement], [{replacement =, generator =}])",
  doc = [[
Draws num_samples 1-based category indices from each row of probs, a float tensor [C]
or [N, C] of non-negative finite weights (not necessarily summing to 1; each row needs
a positive sum). The result is int64 [num_samples] or [N, num_samples]. replacement
(default false): without it, the samples of a row are distinct, which needs at least
num_samples categories of non-zero weight. Categories of weight 0 are never drawn.
The numbers come from the default generator (ember.manual_seed makes them repeat, on
every device) or from the generator option's. Not differentiable. Like
torch.multinomial, with 1-based indices.]],
  example = [[
ember.manual_seed(0)
local w = ember.tensor({0.1, 0.0, 0.6, 0.3})
print(ember.multinomial(w, 4, true))   -- tensor([3, 4, 4, 3]); never 2
print(w:multinomial(3))                -- 3 distinct categories of 1, 3, 4
-- sampling the next token from logits
local logits = ember.randn(2, 5)
print(logits:softmax(-1):multinomial(1):view(-1))]],
}

-- ---- miscellany ---------------------------------------------------------------------

add {
  name = "ember.wall_time",
  sig = "ember.wall_time()",
  doc = [[
Returns monotonic wall-clock seconds (a float with sub-microsecond resolution), for
timing code. Prefer it to os.clock, which adds up the CPU time of every thread and so
misleads for multi-threaded kernels. Only differences between two calls mean anything.]],
  example = [[
local t0 = ember.wall_time()
ember.randn(64, 64):matmul(ember.randn(64, 64))
print(ember.wall_time() - t0 >= 0)   -- true]],
}

add {
  name = "ember.isatty",
  sig = "ember.isatty([fd])",
  doc = [[
Returns whether file descriptor fd (default 1, stdout; 2 is stderr) is a terminal, to
keep progress bars and colours out of pipes and files.]],
  example = [[
if ember.isatty() then print("on a terminal") else print("piped") end]],
}

add {
  name = "ember.float32",
  also = {"ember.float64", "ember.int64", "ember.int32", "ember.uint8",
          "ember.bool", "ember.float16", "ember.bfloat16", "ember.float", "ember.double",
          "ember.long", "ember.int", "ember.half"},
  sig = "ember.float32  ember.float64  ember.float16  ember.bfloat16\n"
    .. "ember.int64  ember.int32  ember.uint8  ember.bool\n"
    .. "ember.float  ember.double  ember.half  ember.long  ember.int",
  doc = [[
The dtype constants: each is the dtype's name as a string, so ember.float64 and
"float64" may be used interchangeably. ember.float, double, half, long and int are
PyTorch's aliases (float32, float64, float16, int64, int32). Options also accept the
alias "byte" (uint8). ember has no int8, int16 or complex dtypes.
(Tensor:float() and friends are conversion methods, not these constants.)]],
  example = [[
print(ember.float64, ember.long, ember.half)   -- float64  int64  float16
print(ember.zeros(2, {dtype = ember.int32}).dtype)   -- int32]],
}

add {
  name = "ember.__version__",
  sig = "ember.__version__",
  doc = [[
The version of ember, a string such as "0.1.0".]],
  example = [[
print(ember.__version__)]],
}


add {
  name = "ember.set_printoptions",
  sig = "ember.set_printoptions([precision [, threshold [, edgeitems [, linewidth [, profile [, sci_mode]]]]]])",
  doc = [[
How tensors print, for the whole process: digits after the point (precision, default 4),
the element count above which a print shows only the ends of each dim (threshold, 1000;
math.huge: never), the items kept at each end (edgeitems, 3), the line width (linewidth,
80), a profile setting the four at once ("default", "short": 2 digits and 2 edge items,
"full": no summary) before the others apply, and sci_mode (true / false forces
scientific / fixed notation; left out, it is chosen from the values, on every call).
The names go in an options table too. precision is 0 to 30.
Like torch.set_printoptions.]],
  example = [[
ember.set_printoptions({precision = 2})
print(ember.tensor({1.23456, 2}))   -- tensor([1.23, 2.00])
ember.set_printoptions({profile = "default"})]],
}

add {
  name = "ember.set_float32_matmul_precision",
  also = {"ember.get_float32_matmul_precision"},
  sig = "ember.set_float32_matmul_precision(precision)\nember.get_float32_matmul_precision()",
  doc = [[
"highest" keeps float32 matrix products in float32; "high" and "medium" let CUDA use
TF32 tensor cores: the setting is ember.backends.cuda.matmul.allow_tf32, and get reads
that flag back, also when it was set directly (PyTorch 2.15 refuses to answer once the
two ways are mixed). ember's CPU products are always float32, and
"medium" allows no more than "high" (PyTorch may also use bfloat16 products there).
Like torch.set_float32_matmul_precision.]],
  example = [[
ember.set_float32_matmul_precision("high")
print(ember.get_float32_matmul_precision(), ember.backends.cuda.matmul.allow_tf32)   -- high  true
ember.set_float32_matmul_precision("highest")]],
}

add {
  name = "ember.inference_mode",
  also = {"ember.is_inference_mode_enabled"},
  sig = "ember.inference_mode([mode = true,] [fn, ...])\nember.is_inference_mode_enabled() -> bool",
  doc = [[
torch.inference_mode: with mode true, ember.no_grad (fn's results, or a <close> guard
when there is no fn); with mode false, grad mode is left as it is. ember has no
inference tensors: what is made inside may enter autograd later, where PyTorch refuses.
is_inference_mode_enabled() tells whether the innermost region asked for inference mode.]],
  example = [[
local w = ember.ones(2, {requires_grad = true})
local y = ember.inference_mode(function() return w * 2 end)
print(y.requires_grad)   -- false
do
  local _ <close> = ember.inference_mode()
  print(ember.is_grad_enabled())   -- false
end]],
}

add {
  name = "ember.compile",
  sig = "ember.compile([model_or_fn] [, {fullgraph =, dynamic =, backend =, mode =, options =, disable =}])",
  doc = [[
Returns model_or_fn itself: ember has no compiler, so a script that calls torch.compile
runs as it would eagerly (PyTorch's backend "eager"). Without a model it returns a
function that returns its argument, as torch.compile(**options) returns a decorator.
The options are PyTorch's names, checked and otherwise unused. To replay a step's
kernels without launching each, see ember.cuda.CUDAGraph.]],
  example = [[
local model = ember.nn.Linear(4, 2)
print(ember.compile(model) == model, ember.compile(model, {mode = "max-autotune"}) == model)   -- true  true]],
}

return entries
