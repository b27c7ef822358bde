-- Docs of ember.autocast (mixed precision regions). Format: ember/help.lua.
return {
  {
    name = "ember.autocast",
    also = {"ember.amp.autocast"},
    sig = "ember.autocast(device, [{dtype =, enabled = true, cache_enabled = true}], [fn]) -> guard | fn's results",
    doc = [=[
A mixed precision region on one device type ("cuda" or "cpu"), as torch.autocast. Without
fn it returns a guard: `local _ <close> = ember.autocast("cuda", {dtype = "bfloat16"})`
ends the region with the block (or call guard:close()); with fn it runs fn inside the
region and returns fn's results, ending the region also when fn raises. dtype is
"bfloat16" or "float16" (default: float16 on cuda, bfloat16 on cpu, as PyTorch).
Regions nest: an inner one changes the dtype or, with enabled = false, turns autocast
off; closing it restores what it found. Guards must close innermost first.

Inside a region each op follows PyTorch's lists for tensors on that device type:
matmul, mm, bmm, addmm, baddbmm, addbmm, linear, conv*, scaled_dot_product_attention,
einsum and prelu (and on cuda tensors mv, addmv and addr) run in the low-precision dtype;
the losses (cross_entropy, nll_loss, mse_loss, l1_loss, kl_div,
binary_cross_entropy_with_logits, the margin and embedding losses, poisson_nll_loss),
prod and cdist run in float32; on cuda tensors softmax, log_softmax, layer, group and
rms norm, interpolate, sum, cumsum, cumprod, norms, logsumexp, pow, exp, log, log1p,
expm1, rsqrt, reciprocal, tan, sinh, cosh, asin, acos, erfinv, softplus, normalize,
cosine_similarity and the composed losses run in float32 too, while on the CPU
(PyTorch's CPU lists) they run in their input's dtype; cat, stack, addcmul, addcdiv,
atan2, cross, dot, tensordot, index_put and scatter_add take their inputs' widest dtype;
other ops, mean, var, the activations (elu, mish, logsigmoid ... too, though made of
exp and softplus here) and batch_norm among them, run in their inputs' dtype (binary
ops promote as always; the norms take a low-precision input with float32 parameters).
An explicit dtype = (sum, softmax, cumsum, ...) is run as given.
binary_cross_entropy raises in a CUDA region, as PyTorch's does (use
binary_cross_entropy_with_logits); on the CPU it runs in float32.
The same policy applies to the engine's C functions (em_matmul, em_sum, ...) for a C
program linking libember.
float64 and integer tensors are never cast. Casts are differentiable: the backward of
a region runs each op in the dtype its forward used and gradients reach float32 weights
as float32. A backward pass never casts, even inside a region.

Within a region the low-precision cast of a weight (a leaf that requires grad) is made
once and reused (cache_enabled = false turns that off). Unlike PyTorch the cached cast
is dropped when the weight is changed in place or a backward pass has run, so a loop
with optimizer steps inside one region never reads stale weights.]=],
    example = [=[
local F = ember.nn.functional
local x, w, b = ember.randn(4, 8), ember.randn(3, 8, {requires_grad = true}), ember.randn(3)
local loss
do
  local _ <close> = ember.autocast("cpu", {dtype = "bfloat16"})
  local logits = F.linear(x, w, b)
  print(logits.dtype)                                   -- bfloat16
  loss = F.cross_entropy(logits, ember.tensor({1, 2, 3, 1}))
  print(loss.dtype)                                     -- float32
end
loss:backward()
print(w.grad.dtype)                                     -- float32
print(ember.autocast("cpu", function() return x:matmul(w:t()).dtype end))]=],
  },
  {
    name = "ember.is_autocast_enabled",
    sig = "ember.is_autocast_enabled([device = \"cuda\"]) -> boolean",
    doc = [=[
Whether autocast is on for the device type in this thread (torch.is_autocast_enabled).]=],
    example = [=[
print(ember.is_autocast_enabled("cpu"))                 -- false
print(ember.autocast("cpu", function() return ember.is_autocast_enabled("cpu") end))]=],
  },
  {
    name = "ember.get_autocast_dtype",
    sig = "ember.get_autocast_dtype(device) -> dtype name",
    doc = [=[
The low-precision dtype autocast uses on the device type: the innermost region's, or the
default (float16 on cuda, bfloat16 on cpu) outside regions.]=],
    example = [=[
print(ember.get_autocast_dtype("cpu"))                  -- bfloat16]=],
  },
  {
    name = "ember.clear_autocast_cache",
    sig = "ember.clear_autocast_cache()",
    doc = [=[
Drops the cached low-precision casts of weights (the outermost region's exit does this
too), as torch.clear_autocast_cache.]=],
    example = [=[
ember.clear_autocast_cache()]=],
  },
}
