-- Docs of the connectionist temporal classification loss: F.ctc_loss and nn.CTCLoss
-- (lua/ember/nn/ctc.lua). Format: ember/help.lua. A class entry also documents the class's
-- own init (the constructor), forward (what calling an instance does) and extra_repr.
local SHARED = [[
log_probs: [T, N, C] log-probabilities (F.log_softmax of the logits over the classes),
or [T, C] for one unbatched sample; float32 or float64 (float16 and bfloat16 are
refused, as PyTorch's kernels do; under ember.autocast the loss runs in float32).
targets: 1-based integer labels (PyTorch's labels + 1, as every class index in ember),
either padded [N, S] (row b holds target_lengths[b] labels, then anything: the padding
is never read) or concatenated [sum(target_lengths)]. Unbatched: [S] (exactly
target_length labels) or [1, S].
input_lengths, target_lengths: integer tensors of N entries (any shape, as PyTorch),
Lua lists of N integers, or one integer for one sample; 0 <= input_lengths[b] <= T.
blank: the blank class, 1-based: the default 1 is PyTorch's blank=0, and blank = k is
PyTorch's blank = k - 1.
reduction: "mean" (each loss divided by its target length, clamped to at least 1, then
the mean over the batch), "sum" or "none" ([N], or 0-d unbatched).
zero_infinity: the loss of a sample that no alignment fits (an input too short for its
target, say) is inf; zero_infinity = true makes it 0, and its gradient 0.
The loss is -log of the summed probability of every alignment, computed by the forward
(alpha) recursion in log space with ember ops, so autograd gives the gradient and it
runs on any device.
Differences from PyTorch: the gradient with respect to log_probs is the true one,
-(the posterior of each class at each frame); PyTorch's backward returns
exp(log_probs) - posterior, the gradient of the logits, which is right only after
log_softmax's backward (through log_softmax both give the same gradient of the
logits). log_probs of -inf (a class masked out) give finite gradients, where PyTorch's
are NaN. Labels outside 1..C or equal to blank are an error (PyTorch reads them
unchecked), and so are float targets (PyTorch truncates them). As in PyTorch, an
impossible sample's gradient is NaN at each of its frames unless zero_infinity is
true.]]

local class_also = require("ember.help")._class_also

return {
  {
    name = "ember.nn.functional.ctc_loss",
    sig = "F.ctc_loss(log_probs, targets, input_lengths, target_lengths [, blank = 1 [, reduction = \"mean\" "
       .. "[, zero_infinity = false]]]) -> loss",
    doc = "The connectionist temporal classification loss, as torch.nn.functional.ctc_loss.\n"
       .. "The options come positional or in one trailing table\n"
       .. "{blank =, reduction =, zero_infinity =}.\n"
       .. SHARED,
    example = [[local F = ember.nn.functional
local logits = ember.randn(50, 2, 20, {requires_grad = true})      -- T = 50, N = 2, C = 20
local targets = ember.tensor({{3, 7, 7, 12}, {5, 9, 1, 1}})         -- 1-based; row 2 padded
local loss = F.ctc_loss(logits:log_softmax(3), targets, {50, 42}, {4, 2})
loss:backward()
print(loss, logits.grad.shape)]],
  },
  {
    name = "ember.nn.CTCLoss",
    also = class_also("ember.nn.CTCLoss"),
    sig = "nn.CTCLoss([blank = 1 [, reduction = \"mean\" [, zero_infinity = false]]]) -> "
       .. "loss_fn(log_probs, targets, input_lengths, target_lengths)",
    doc = "The module form of F.ctc_loss (torch.nn.CTCLoss); constructor arguments positional or\n"
       .. "as one options table. tostring shows the settings that differ from the defaults (PyTorch\n"
       .. "prints none).\n" .. SHARED,
    example = [[local nn = ember.nn
local ctc = nn.CTCLoss({blank = 20, zero_infinity = true})       -- the last of 20 classes
local lp = ember.randn(30, 3, 20):log_softmax(3)
local targets = ember.tensor({4, 4, 8, 2, 11, 6})                  -- concatenated: 3 + 1 + 2
print(ctc(lp, targets, ember.tensor({30, 25, 3}), ember.tensor({3, 1, 2})))
print(ctc)]],
  },
}
