-- Docstrings of the convolution, pooling and normalisation functions written in C
-- (lua/bind_nn.c): ember.conv2d and the rest, which are also nn.functional's F.conv2d
-- and so on (the same function values). Format: see doc/ember.lua.

local entries = {}

local function add(e) entries[#entries + 1] = e end

local ARGS = [[
Arguments after the required ones follow PyTorch's order, or come as one trailing
options table with PyTorch's keyword names. A size is a number (every spatial dim) or a
table with one entry per spatial dim.]]

for ns = 1, 3 do
  local shape = ({"[N, C, L]", "[N, C, H, W]", "[N, C, D, H, W]"})[ns]
  local ex_in = ({"ember.randn(2, 3, 10)", "ember.randn(2, 3, 8, 8)", "ember.randn(1, 2, 4, 5, 5)"})[ns]
  local ex_w = ({"ember.randn(4, 3, 3)", "ember.randn(4, 3, 3, 3)", "ember.randn(3, 2, 3, 3, 3)"})[ns]
  add {
    name = "ember.conv" .. ns .. "d",
    also = {"ember.nn.functional.conv" .. ns .. "d"},
    sig = "ember.conv" .. ns .. "d(input, weight, [bias, stride = 1, padding = 0, dilation = 1, groups = 1])",
    doc = [[
Cross-correlation of input ]] .. shape .. [[ (or unbatched, without N) with weight
[C_out, C / groups, kernel...], plus bias [C_out]. padding may be "same" (stride 1; an
odd total pads one more at the end, as PyTorch) or "valid". Differentiable to any order
in input, weight and bias. CPU: oneDNN for float32 (loaded on first use), im2col + GEMM
for float64 and as the fallback; CUDA: cuDNN.
]] .. ARGS .. [[ Like torch.nn.functional.conv]] .. ns .. [[d.]],
    example = [[
local x, w = ]] .. ex_in .. [[, ]] .. ex_w .. [[

local y = ember.conv]] .. ns .. [[d(x, w, nil, {padding = 1})
print(y.shape)]],
  }
  add {
    name = "ember.conv_transpose" .. ns .. "d",
    also = {"ember.nn.functional.conv_transpose" .. ns .. "d"},
    sig = "ember.conv_transpose" .. ns .. "d(input, weight, [bias, stride = 1, padding = 0, "
       .. "output_padding = 0,\n    groups = 1, dilation = 1])",
    doc = [[
Transposed convolution (the gradient of conv]] .. ns .. [[d with respect to its input):
input ]] .. shape .. [[, weight [C_in, C_out / groups, kernel...], bias [C_out]. The output
size is (I - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1;
output_padding must be smaller than stride or dilation.
]] .. ARGS .. [[ Like torch.nn.functional.conv_transpose]] .. ns .. [[d.]],
    example = [[
local x, w = ]] .. ex_in .. [[, ]] .. ex_w .. [[:transpose(1, 2)
print(ember.conv_transpose]] .. ns .. [[d(x, w, nil, {stride = 2, output_padding = 1}).shape)]],
  }
  add {
    name = "ember.max_pool" .. ns .. "d",
    also = {"ember.nn.functional.max_pool" .. ns .. "d"},
    sig = "ember.max_pool" .. ns .. "d(input, kernel_size, [stride = kernel_size, padding = 0, dilation = 1,\n"
       .. "    ceil_mode = false, return_indices = false])  -> output [, indices]",
    doc = [[
The largest value of each window of input ]] .. shape .. [[ (or unbatched). padding
(at most half the kernel) adds -inf; ceil_mode counts a last partial window if it
starts inside the input or its left padding. With return_indices, also returns the
1-based row-major position of each maximum within its input plane (int64; the first
of equal maxima; NaN wins).
]] .. ARGS .. "\n" .. [[Like torch.nn.functional.max_pool]] .. ns .. [[d.]],
    example = [[
local y, idx = ember.max_pool]] .. ns .. [[d(]] .. ex_in .. [[, 2, {return_indices = true})
print(y.shape, idx.dtype)]],
  }
  add {
    name = "ember.avg_pool" .. ns .. "d",
    also = {"ember.nn.functional.avg_pool" .. ns .. "d"},
    sig = "ember.avg_pool" .. ns .. "d(input, kernel_size, [stride = kernel_size, padding = 0, ceil_mode = false,\n"
       .. "    count_include_pad = true, divisor_override])",
    doc = [[
The mean of each window of input ]] .. shape .. [[. count_include_pad counts the zero
padding in the divisor (PyTorch's rule: the window clipped to the padded input);
divisor_override replaces the divisor.
]] .. ARGS .. "\n" .. [[Like torch.nn.functional.avg_pool]] .. ns .. [[d.]],
    example = [[
print(ember.avg_pool]] .. ns .. [[d(]] .. ex_in .. [[, 2, {padding = 1, count_include_pad = false}).shape)]],
  }
  add {
    name = "ember.adaptive_avg_pool" .. ns .. "d",
    also = {"ember.nn.functional.adaptive_avg_pool" .. ns .. "d"},
    sig = "ember.adaptive_avg_pool" .. ns .. "d(input, output_size)",
    doc = [[
Average pooling to a given output size: output element o of a dim of size I averages
input positions floor(o I / O) to ceil((o + 1) I / O) - 1 (0-based). An entry of nil in
an output_size table keeps that input size. Like torch.nn.functional.adaptive_avg_pool]] .. ns .. [[d.]],
    example = [[
print(ember.adaptive_avg_pool]] .. ns .. [[d(]] .. ex_in .. [[, 1).shape)]],
  }
  add {
    name = "ember.adaptive_max_pool" .. ns .. "d",
    also = {"ember.nn.functional.adaptive_max_pool" .. ns .. "d"},
    sig = "ember.adaptive_max_pool" .. ns .. "d(input, output_size, [return_indices = false])"
       .. "  -> output [, indices]",
    doc = [[
Max pooling over the adaptive windows of adaptive_avg_pool]] .. ns .. [[d; indices as
max_pool]] .. ns .. [[d's. Like torch.nn.functional.adaptive_max_pool]] .. ns .. [[d.]],
    example = [[
local y, idx = ember.adaptive_max_pool]] .. ns .. [[d(]] .. ex_in .. [[, 3, true)
print(y.shape)]],
  }
end

add {
  name = "ember.batch_norm",
  also = {"ember.nn.functional.batch_norm"},
  sig = "ember.batch_norm(input, running_mean, running_var, [weight, bias, training = false,\n"
     .. "    momentum = 0.1, eps = 1e-5])",
  doc = [[
Normalises each channel of input [N, C, ...]. Training: with the batch's mean and
biased variance, and running_mean / running_var (when given) updated in place:
r = (1 - momentum) r + momentum s, with the unbiased variance for running_var.
Otherwise: with the running statistics. weight and bias [C] are optional.
Differentiable to any order.
]] .. ARGS .. "\n" .. [[Like torch.nn.functional.batch_norm.]],
  example = [[
local x = ember.randn(8, 3, 4, 4)
local rm, rv = ember.zeros(3), ember.ones(3)
local y = ember.batch_norm(x, rm, rv, nil, nil, true)
print(y:mean(), rm)]],
}

add {
  name = "ember.group_norm",
  also = {"ember.nn.functional.group_norm"},
  sig = "ember.group_norm(input, num_groups, [weight, bias, eps = 1e-5])",
  doc = [[
Normalises input [N, C, ...] over each group of C / num_groups channels of each sample
(biased variance), then scales and shifts each channel by weight and bias [C].
Like torch.nn.functional.group_norm.]],
  example = [[
print(ember.group_norm(ember.randn(2, 6, 5), 3, ember.ones(6), ember.zeros(6)).shape)]],
}

add {
  name = "ember.layer_norm",
  also = {"ember.nn.functional.layer_norm"},
  sig = "ember.layer_norm(input, normalized_shape, [weight, bias, eps = 1e-5])",
  doc = [[
Normalises input over its last #normalized_shape dims (which must equal
normalized_shape; a number is one dim), biased variance, then weight and bias of
shape normalized_shape. One fused kernel forward and backward.
Like torch.nn.functional.layer_norm.]],
  example = [[
local x = ember.randn(4, 10)
print(ember.layer_norm(x, 10):mean(2))]],
}

add {
  name = "ember.nn.functional.rms_norm",
  sig = "F.rms_norm(input, normalized_shape, [weight, eps])",
  doc = [[
input / sqrt(mean(input^2) + eps) * weight, the mean over the last #normalized_shape
dims (which must equal normalized_shape; a number is one dim); weight (optional) has
shape normalized_shape. eps = nil is the machine epsilon of the arithmetic's dtype:
float16 and bfloat16 inputs are computed in float32 (weight included) and rounded once,
so their default eps is float32's (1.19e-7), as PyTorch 2.15's kernel does (its docs
say the input dtype's); float64 uses float64's. Composed of ember ops, so it has
gradients on every backend. Like torch.nn.functional.rms_norm (PyTorch 2.4+).]],
  example = [[
local F = ember.nn.functional
local y = F.rms_norm(ember.tensor({{3.0, 4.0}}), 2, nil, 0)
print(y)   -- 0.8485, 1.1314: x / sqrt(12.5)]],
}

return entries
