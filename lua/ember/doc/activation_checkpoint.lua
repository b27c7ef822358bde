-- Docs of ember.utils.checkpoint (activation checkpointing).
-- Format: ember/help.lua.
return {
  {
    name = "ember.utils.checkpoint",
    sig = "local ck = ember.utils.checkpoint",
    doc = [=[
Activation checkpointing, as torch.utils.checkpoint: checkpoint and
checkpoint_sequential run part of a model without keeping its intermediate tensors
for backward, and run it again during backward: less memory for more compute. Loaded on
first use. Not to be confused with ember.save_checkpoint / ember.load_checkpoint, which
write and read a training run's state to a file.]=],
    example = [=[
print(type(ember.utils.checkpoint.checkpoint))   -- function]=],
  },
  {
    name = "ember.utils.checkpoint.checkpoint",
    sig = "checkpoint(fn, ... [, {use_reentrant = false, preserve_rng_state = true,\n"
       .. "                       determinism_check = \"default\"}]) -> what fn(...) returns",
    doc = [=[
Calls fn(...) (a function, a module, anything callable) and keeps only its arguments
for backward; backward runs fn again with grad on and backpropagates through that
run. The gradients of the arguments and of every parameter fn uses (a module's, a
closure's leaf tensors) are the ones running fn plainly gives, bit for bit when the
recomputation draws the same random numbers (dropout): with preserve_rng_state (the
default) the generator's state at the call is restored for the recomputation (ember has
one generator for every device, so this covers CUDA), and the recomputation runs under
the autocast state the call had. fn may take non-tensor arguments and return several
values, tensors or not. Under no_grad, or when nothing fn returns requires grad, it
just calls fn. A checkpoint inside a checkpointed fn works.

use_reentrant = false (the default) is PyTorch's non-reentrant variant: one node,
CheckpointBackward, stands for fn; its inputs are the tensor arguments and the leaves
fn's graph reads, so the parameters' .grad is accumulated once by the running backward
pass, autograd.grad(loss, params) and backward's inputs= reach them, the arguments need
not require grad, and a backward with retain_graph can run twice (fn is recomputed each
time). A tensor that requires grad, computed outside fn and captured by it rather than
passed as an argument, is an error (pass it as an argument). use_reentrant = true is
PyTorch's reentrant variant: backward runs a backward pass of its own through the
recomputation, writing the parameters' .grad directly; it needs an argument that
requires grad. Neither variant supports a backward with create_graph through the
checkpoint (an error). determinism_check = "default" (or "none") checks that the
recomputation returns tensors of the forward's shapes, dtypes and devices, else the
backward fails naming the result. The options table is the last argument when it is a
plain table without [1]: if fn's own last argument is such a table, pass {} after it.]=],
    example = [=[
local ck = ember.utils.checkpoint
local block = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 4))
local x = ember.randn(2, 4):requires_grad_()
local y = ck.checkpoint(block, x)
y:sum():backward()
print(y.grad_fn, block[1].weight.grad.shape)   -- CheckpointBackward  ember.Size({8, 4})]=],
  },
  {
    name = "ember.utils.checkpoint.checkpoint_sequential",
    sig = "checkpoint_sequential(functions, segments, input\n"
       .. "                      [, {use_reentrant = false, preserve_rng_state = true}]) -> output",
    doc = [=[
Runs functions (an nn.Sequential, or a list of modules or functions, each taking one
value) in order on input, as torch.utils.checkpoint.checkpoint_sequential: the list is
cut into segments chunks of #functions // segments (the last one takes the rest); the
first segments - 1 chunks are checkpointed, the last runs plainly (its output is needed
for the loss anyway). segments is an integer from 1 to #functions.]=],
    example = [=[
local ck = ember.utils.checkpoint
local model = ember.nn.Sequential(ember.nn.Linear(4, 4), ember.nn.Tanh(), ember.nn.Linear(4, 4),
                                  ember.nn.Tanh())
local out = ck.checkpoint_sequential(model, 2, ember.randn(3, 4))
out:sum():backward()
print(model[1].weight.grad ~= nil)   -- true]=],
  },
}
