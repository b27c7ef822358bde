-- Docs of ember.testing (lua/ember/testing.lua): PyTorch's torch.testing. Format: ember/help.lua.
return {
  {
    name = "ember.testing",
    sig = "local testing = ember.testing",
    doc = [=[
PyTorch's torch.testing, loaded on first use:
  testing.assert_close(actual, expected, opts)   raises unless the two are close
  testing.make_tensor(shape..., opts)            a random tensor for tests
  testing.assert_allclose(actual, expected, ...) the deprecated form of assert_close
Like torch.testing.]=],
    example = [=[
print(type(ember.testing.assert_close))   -- function]=],
  },
  {
    name = "ember.testing.assert_close",
    sig = "ember.testing.assert_close(actual, expected [, {rtol, atol, equal_nan = false, check_device = true,\n"
          .. "    check_dtype = true, check_layout = true, check_stride = false, allow_subclasses = true, msg}])",
    doc = [=[
Raises an error at the caller's line unless actual and expected are close: tensors,
numbers, booleans, nil, and Lua tables of them, compared element by element (a table
whose keys are 1..n as PyTorch's sequences, first its length; another as a mapping, first
its set of keys, then in sorted order). Two tensors must have the same shape and, unless
switched off, the same device, dtype (else both move to the CPU and to their promoted
dtype) and, with check_stride, the same strides; then every element must satisfy
  |actual - expected| <= atol + rtol * |expected|
as ember.isclose computes it (infinities only close to the same infinity; NaN only to
NaN with equal_nan). Numbers are compared the same way in double precision; a Lua
integer and a float differ in type unless check_dtype = false. rtol and atol are given
both or neither; the defaults are the looser of the two dtypes': float16 1e-3 / 1e-5,
bfloat16 1.6e-2 / 1e-5, float32 1.3e-6 / 1e-5, float64 1e-7 / 1e-7 (a Lua float counts
as float64), integers and bool 0 / 0 (an equality check). The message is PyTorch's, with
1-based indices written as Lua tables:
  Tensor-likes are not close!

  Mismatched elements: 2 / 3 (66.7%)
  Greatest absolute difference: 2.0 at index {2} (up to 1e-05 allowed)
  Greatest relative difference: 1.0 at index {2} (up to 1.3e-06 allowed)
followed by "The failure occurred for item [1]["w"]" inside tables; msg, a string,
replaces a failed comparison's message, or, a function, gets it and returns the one to
raise. Misuse (a lone rtol, inputs no comparison handles such as a tensor against a
number, a negative tolerance) raises "assert_close: ...". check_layout and
allow_subclasses are accepted for PyTorch's code: ember has one layout, one tensor type.
Like torch.testing.assert_close; its None is nil ("nil mismatch: 1 is not nil").]=],
    example = [=[
local x = ember.tensor({1.0, 0.1, 0.01})
ember.testing.assert_close(x:cos():acos(), x)     -- passes: within float32's tolerances
local ok, err = pcall(ember.testing.assert_close, ember.tensor({1.0, 4.0, 5.0}), ember.tensor({1.0, 2.0, 3.0}))
print(err)]=],
  },
  {
    name = "ember.testing.make_tensor",
    sig = "ember.testing.make_tensor(shape..., {dtype =, device =, low, high, requires_grad = false,\n"
          .. "    noncontiguous = false, exclude_zero = false})",
    doc = [=[
A tensor of the given shape (sizes, or one table of them) with values drawn uniformly
from [low, high) by ember's generator (ember.manual_seed makes it repeat): uniform_ for
the floating dtypes, randint for the integral ones. dtype and device must be given. The
defaults are bool [0, 2), uint8 [0, 10), the other integers [-9, 10), floating [-9, 9);
bounds outside the dtype's range are clamped to it (integral bounds then rounded up), NaN
bounds, low >= high and a range wholly outside the dtype's are errors (low == high for a
floating dtype gives that value, deprecated in PyTorch). noncontiguous: the values are
every second element of a last dim twice as long (ignored under 2 elements);
exclude_zero: zeros become 1 (integral) or the dtype's smallest normal number;
requires_grad (floating dtypes only) makes it a leaf that autograd records.
Like torch.testing.make_tensor, without memory_format (ember has no channels-last
layout); int64 bounds must lie within 2^53, as ember.randint's.]=],
    example = [=[
ember.manual_seed(0)
local t = ember.testing.make_tensor(2, 3, {dtype = "float32", device = "cpu", low = -1, high = 1})
print(t.shape, t:min():item() >= -1, t:max():item() < 1)
print(ember.testing.make_tensor({4}, {dtype = "int64", device = "cpu", noncontiguous = true}):is_contiguous())]=],
  },
  {
    name = "ember.testing.assert_allclose",
    sig = "ember.testing.assert_allclose(actual, expected [, rtol [, atol [, equal_nan = true [, msg]]]])",
    doc = [=[
PyTorch's deprecated (since 1.12, still in 2.x) form of assert_close: actual becomes a
tensor if it is not one, expected a tensor of actual's dtype; without rtol and atol the
defaults are float16 1e-3 / 1e-3, float32 1e-4 / 1e-5, float64 1e-5 / 1e-8 and 0 / 0
otherwise (bfloat16 too); NaN equals NaN by default, dtypes may differ (check_dtype =
false), and an empty msg means the generated one. Writes a deprecation note to stderr
once a process (PyTorch's FutureWarning).
Like torch.testing.assert_allclose; use ember.testing.assert_close.]=],
    example = [=[
ember.testing.assert_allclose(ember.tensor({1.0, 0/0}), {1.00001, 0/0})   -- passes
print(pcall(ember.testing.assert_allclose, ember.tensor({1.0}), {1.1}))]=],
  },
}
