-- Docs of lua/ember/composite/extra.lua: the scatter forms of the views, renorm, range,
-- scalar_tensor, frexp, index_reduce, put, nonzero_static, adjoint, angle, gradient, fill, the
-- top-level in-place forms and the anomaly-mode queries. Format: ember/help.lua. Those PyTorch
-- has as tensor methods are ember.X and Tensor:X (one function, one entry).
local entries = {}

local function add(e) entries[#entries + 1] = e end

add {
  name = "ember.slice_scatter",
  also = {"Tensor:slice_scatter"},
  sig = "ember.slice_scatter(input, src [, dim = 1 [, start [, stop [, step = 1]]]])\n"
    .. "  (or {dim =, start =, stop =, step =}; ['end'] = is stop's PyTorch name)\n"
    .. "Tensor:slice_scatter(src [, dim [, start [, stop [, step]]]])",
  doc = [[
A new tensor: input with the elements input:slice(dim, start, stop, step) reads replaced
by src, whose shape must be that slice's (src is cast to input's dtype). The range is
t:slice's: 1-based, stop inclusive, negative from the end, clamped to the dim; start
defaults to 1, stop to the last position, step must be positive. Differentiable for
input (zero where src went) and src. Like torch.slice_scatter, with 1-based dim and
positions and an inclusive stop (PyTorch's end = k, 0-based exclusive, is stop = k for
k >= 0).]],
  example = [=[
local x = ember.zeros(4, 2)
print(ember.slice_scatter(x, ember.ones(2, 2), 1, 2, 3))   -- rows 2 and 3 are ones
print(x:slice_scatter(ember.ones(4, 1), 2, -1))            -- the last column is ones]=],
}

add {
  name = "ember.select_scatter",
  also = {"Tensor:select_scatter"},
  sig = "ember.select_scatter(input, src, dim, index)\nTensor:select_scatter(src, dim, index)",
  doc = [[
A new tensor: input with input:select(dim, index) replaced by src, which has input's shape
without dim (cast to input's dtype). dim and index are 1-based (negative from the end).
Differentiable. Like torch.select_scatter.]],
  example = [=[
print(ember.select_scatter(ember.zeros(2, 3), ember.tensor({1., 2., 3.}), 1, 2))   -- {{0, 0, 0}, {1, 2, 3}}]=],
}

add {
  name = "ember.diagonal_scatter",
  also = {"Tensor:diagonal_scatter"},
  sig = "ember.diagonal_scatter(input, src [, offset = 0 [, dim1 = 1 [, dim2 = 2]]])\n"
    .. "  (or {offset =, dim1 =, dim2 =})\nTensor:diagonal_scatter(src [, offset [, dim1 [, dim2]]])",
  doc = [[
A new tensor: input with input:diagonal(offset, dim1, dim2) replaced by src, whose shape
must be that diagonal's (the other dims in order, then the diagonal; cast to input's
dtype). Differentiable. Like torch.diagonal_scatter, with 1-based dims.]],
  example = [=[
print(ember.diagonal_scatter(ember.zeros(3, 3), ember.ones(2), 1))   -- ones above the main diagonal]=],
}

add {
  name = "ember.renorm",
  also = {"Tensor:renorm", "Tensor:renorm_"},
  sig = "ember.renorm(input, p, dim, maxnorm)\nTensor:renorm(p, dim, maxnorm)\nTensor:renorm_(p, dim, maxnorm)",
  doc = [[
Each slice input:select(dim, i) whose p-norm exceeds maxnorm is scaled by
maxnorm / (norm + 1e-7); the others are kept. p > 0 (math.huge for the max norm), maxnorm
>= 0, input floating point with at least 2 dims (float16/bfloat16 norms in float32).
Differentiable (the scale's dependence on input included, as PyTorch). renorm_ writes into
self under ember's in-place rules. Like torch.renorm, with a 1-based dim.]],
  example = [=[
local w = ember.tensor({{3.0, 4.0}, {0.3, 0.4}})
print(w:renorm(2, 1, 1))   -- {{0.6, 0.8}, {0.3, 0.4}}: the first row had norm 5]=],
}

add {
  name = "ember.range",
  sig = "ember.range(start, stop [, step = 1] [, {dtype, device, requires_grad}])",
  doc = [[
The 1-D tensor start, start + step, ... up to and including stop: floor((stop - start) /
step) + 1 values, start + i * step computed in float64 and rounded once to dtype (default:
the default float dtype, even for integer arguments). step nonzero and pointing from
start to stop. Like torch.range, which PyTorch deprecates for arange (stop excluded); no
deprecation warning here.]],
  example = [=[
print(ember.range(1, 4))          -- tensor([1., 2., 3., 4.])
print(ember.range(1, 2, 0.25))    -- 1, 1.25, 1.5, 1.75, 2]=],
}

add {
  name = "ember.scalar_tensor",
  sig = "ember.scalar_tensor(s [, {dtype, device, requires_grad}])",
  doc = [[
A 0-d tensor holding the number or boolean s, of the default float dtype unless dtype is
given (an integer s too, as PyTorch). Like torch.scalar_tensor.]],
  example = [=[
print(ember.scalar_tensor(3))                        -- tensor(3.)
print(ember.scalar_tensor(3, {dtype = "int64"}))     -- tensor(3)]=],
}

add {
  name = "ember.frexp",
  also = {"Tensor:frexp"},
  sig = "ember.frexp(input) -> mantissa, exponent\nTensor:frexp()",
  doc = [[
Splits a floating-point input into mantissa (input's dtype, |mantissa| in [0.5, 1)) and
exponent (int32) with input = mantissa * 2^exponent exactly, subnormals included; 0, -0,
+-inf and NaN give themselves and exponent 0. The mantissa is differentiable (gradient
2^-exponent). Integer inputs are errors. Like torch.frexp; PyTorch's gradient divides by
an exp2 computed in float32, so it is inf or 0 where |exponent| > 127 (float64 inputs
below 2^-127 or above 2^127): ember's is 2^-exponent there too.]],
  example = [=[
local m, e = ember.frexp(ember.tensor({8.0, 0.3, -3.0}))
print(m, e)   -- [0.5, 0.6, -0.75]  [4, -1, 2]]=],
}

add {
  name = "ember.index_reduce",
  also = {"Tensor:index_reduce", "Tensor:index_reduce_"},
  sig = "ember.index_reduce(input, dim, index, source, reduce [, {include_self = true}])\n"
    .. "Tensor:index_reduce(dim, index, source, reduce [, {include_self}])\n"
    .. "Tensor:index_reduce_(dim, index, source, reduce [, {include_self}])",
  doc = [[
Reduces slice k of source along dim into slice index[k] of input with reduce = "prod",
"mean", "amax" or "amin", counting input's own value unless include_self = false
(positions no index names keep input's value). index: a 0-d or 1-D int64/int32 tensor or
a table of integers, 1-based, negative from the end (as index_add; PyTorch refuses
negative indices); source has input's dtype and shape except along dim, where it has one
slice per index. Integer "mean" floors. Differentiable for float dtypes (amax/amin share
the gradient among equal values; prod handles zeros). reduce may also be given as
{reduce =}. index_reduce_ writes into self. Like torch.index_reduce.]],
  example = [=[
local x = ember.ones(3)
print(x:index_reduce(1, {1, 1, 3}, ember.tensor({2., 3., 4.}), "prod"))   -- {6, 1, 4}
print(x:index_reduce(1, {1, 1}, ember.tensor({2., 4.}), "mean", {include_self = false}))   -- {3, 1, 1}]=],
}

add {
  name = "ember.put",
  also = {"Tensor:put", "Tensor:put_"},
  sig = "ember.put(input, index, source [, accumulate = false])\nTensor:put(index, source [, accumulate])\n"
    .. "Tensor:put_(index, source [, accumulate])   (also {accumulate =})",
  doc = [[
Writes source's elements at the flat positions index names in input read as 1-D
(row-major, whatever its strides): index is an int64 (or int32) tensor of any shape with
as many elements as source, 1-based, negative from the end. accumulate = true adds
(duplicates add up); false writes (on duplicates the last write wins on the CPU). source
has input's dtype. put is a new tensor and differentiable; put_ writes into self (in place
when self is contiguous). Like torch.put / Tensor.put_, with 1-based positions.]],
  example = [=[
local t = ember.zeros(2, 2)
print(t:put(ember.tensor({1, -1}), ember.tensor({5., 6.})))   -- {{5, 0}, {0, 6}}]=],
}

add {
  name = "ember.nonzero_static",
  also = {"Tensor:nonzero_static"},
  sig = "ember.nonzero_static(input, {size = n [, fill_value = 0]})\nTensor:nonzero_static({size = n [, fill_value]})",
  doc = [[
nonzero's [n, input:dim()] int64 result at a fixed number of rows: the first n rows of
input:nonzero() (1-based indices), then rows of fill_value up to n. size and fill_value
are keyword-only, as in PyTorch. fill_value is written as given (it is padding, not a
position, so it is not shifted); its default is 0, PyTorch's default -1 plus one as every
index in the result: 0 is the one value no 1-based position takes and every ember index
op refuses, where -1 would silently index the last element. A ported test `== -1` becomes
`:eq(0)`. Like torch.nonzero_static.]],
  example = [=[
print(ember.tensor({0, 3, 0, 4}):nonzero_static({size = 3}))   -- {{2}, {4}, {0}}]=],
}

add {
  name = "ember.adjoint",
  also = {"Tensor:adjoint"},
  sig = "ember.adjoint(input)\nTensor:adjoint()",
  doc = [[
A view of input with its last two dims swapped (the conjugate transpose, and ember's
tensors are real; the same as t.mT). input must have at least 2 dims. Like torch.adjoint.]],
  example = [=[
print(ember.zeros(2, 3, 4):adjoint().shape)   -- ember.Size({2, 4, 3})]=],
}

add {
  name = "ember.angle",
  also = {"Tensor:angle"},
  sig = "ember.angle(input)\nTensor:angle()",
  doc = [[
The argument of real numbers: pi where input < 0 (-inf too), 0 where input >= 0 (-0
included), NaN where NaN. Float results keep input's dtype; integer and bool inputs give
the default float dtype. The gradient is zero, as PyTorch's for real inputs. Like
torch.angle (ember has no complex dtypes).]],
  example = [=[
print(ember.angle(ember.tensor({-2.0, 0.0, 3.0})))   -- [3.1416, 0, 0]]=],
}

add {
  name = "ember.gradient",
  sig = "ember.gradient(input [, {spacing = 1, dim, edge_order = 1}]) -> one tensor per dim",
  doc = [[
Estimates the derivative of the samples in input along each dim (all dims, or dim: one
dim or a table of them, 1-based) by second-order central differences inside and
one-sided differences of order edge_order (1 or 2) at the edges; returns one tensor per
dim, as several values. spacing: a number (the same for every dim), a table of numbers
(one per dim), or a table of 1-D tensors holding the coordinates of the samples along each
dim (their length must be that dim's size; PyTorch does not check it). Each dim needs at
least edge_order + 1 samples. Integer inputs give floats. Differentiable in input and in
coordinate tensors. Like torch.gradient (its keyword arguments in the options table).]],
  example = [=[
local x = ember.arange(0, 3, 0.5, {dtype = "float64"})
print(ember.gradient(x * x, {spacing = 0.5, edge_order = 2}))   -- 2x: [0, 1, 2, 3, 4, 5]]=],
}

add {
  name = "ember.fill",
  sig = "ember.fill(input, value)",
  doc = [[
A new tensor of input's shape, dtype and device filled with value (a number, a boolean or
a 0-d tensor; cast to input's dtype, so 2.5 fills an int64 tensor with 2). A 0-d tensor
value gets the gradient (the sum); input's gradient is zero. Like torch.fill.]],
  example = [=[
print(ember.fill(ember.zeros(2, 2), 7))   -- all 7]=],
}

add {
  name = "ember.fill_",
  sig = "ember.fill_(t, value)",
  doc = [[
t:fill_(value): every element of t set to value, in place, returning t. value may also be
a 0-d tensor (PyTorch's fill_ takes one). Like torch.fill_.]],
  example = [=[
local t = ember.zeros(3)
ember.fill_(t, ember.tensor(2.0))
print(t)   -- [2, 2, 2]]=],
}

-- the top-level in-place forms: torch.X_(t, ...) is t.X_(...)
local TOP = {
  {"gcd_", "gcd_(t, other)", "local t = ember.tensor({12, 18})\nember.gcd_(t, ember.tensor({8, 12}))\nprint(t)   -- [4, 6]"},
  {"lcm_", "lcm_(t, other)", "local t = ember.tensor({4, 6})\nember.lcm_(t, ember.tensor({6, 4}))\nprint(t)   -- [12, 12]"},
  {"deg2rad_", "deg2rad_(t)", "local t = ember.tensor({180.0})\nember.deg2rad_(t)\nprint(t)   -- [3.1416]"},
  {"rad2deg_", "rad2deg_(t)", "local t = ember.tensor({math.pi})\nember.rad2deg_(t)\nprint(t)   -- [180]"},
  {"negative_", "negative_(t)", "local t = ember.tensor({1.0, -2.0})\nember.negative_(t)\nprint(t)   -- [-1, 2]"},
  {"i0_", "i0_(t)", "local t = ember.tensor({0.0, 1.0})\nember.i0_(t)\nprint(t)   -- [1, 1.2661]"},
  {"zero_", "zero_(t)", "local t = ember.ones(2)\nember.zero_(t)\nprint(t)   -- [0, 0]"},
  {"ldexp_", "ldexp_(t, other)", "local t = ember.tensor({1.0, 3.0})\nember.ldexp_(t, ember.tensor({3, -1}))\nprint(t)   -- [8, 1.5]"},
  {"sinc_", "sinc_(t)", "local t = ember.tensor({0.0, 0.5})\nember.sinc_(t)\nprint(t)   -- [1, 0.6366]"},
  {"index_put_", "index_put_(t, indices, values [, accumulate])",
   "local t = ember.zeros(3)\nember.index_put_(t, {ember.tensor({2})}, ember.tensor({5.0}))\nprint(t)   -- [0, 5, 0]"},
}
for _, e in ipairs(TOP) do
  local name = e[1]
  add {
    name = "ember." .. name,
    sig = "ember." .. e[2],
    doc = "t:" .. e[2]:gsub("^[%w_]+%(t,? ?", name .. "(") .. " under its name at the top level: written into\n"
      .. "t, which is returned, with the method's rules and errors. Like torch." .. name .. ".",
    example = e[3],
  }
end

add {
  name = "ember.is_anomaly_enabled",
  sig = "ember.is_anomaly_enabled()",
  doc = [[
Whether autograd's anomaly mode is on (ember.autograd.is_anomaly_enabled). Like
torch.is_anomaly_enabled.]],
  example = [=[
print(ember.is_anomaly_enabled())   -- false]=],
}

add {
  name = "ember.is_anomaly_check_nan_enabled",
  sig = "ember.is_anomaly_check_nan_enabled()",
  doc = [[
Whether anomaly mode checks the gradients for NaN
(ember.autograd.is_anomaly_check_nan_enabled). Like torch.is_anomaly_check_nan_enabled.]],
  example = [=[
print(ember.is_anomaly_check_nan_enabled())]=],
}

add {
  name = "ember.set_anomaly_enabled",
  sig = "ember.set_anomaly_enabled(enabled [, check_nan = true])",
  doc = [[
Turns anomaly mode on or off for the rest of the program
(ember.autograd.set_detect_anomaly). Like torch.set_anomaly_enabled.]],
  example = [=[
ember.set_anomaly_enabled(true)
print(ember.is_anomaly_enabled())   -- true
ember.set_anomaly_enabled(false)]=],
}

return entries
