-- Docs of lua/ember/nn/extra.lua: power-average pooling (F.lp_pool1d/2d/3d, nn.LPPool1d/2d/3d),
-- F.pdist, F.gumbel_softmax, F.triplet_margin_with_distance_loss and
-- nn.TripletMarginWithDistanceLoss, F.multilabel_margin_loss and nn.MultiLabelMarginLoss; and
-- nn.init's deprecated names without the underscore whose main entries live in activation.lua
-- (eye, dirac, orthogonal, sparse; the others are also-names of their entries in nn.lua);
-- the lazy modules of lua/ember/nn/lazy.lua, and nn.SyncBatchNorm (lua/ember/nn/sync_bn.lua).
-- Format: ember/help.lua. A class entry also documents the class's own init (the
-- constructor), forward (what calling an instance does) and extra_repr.
local entries = {}
local function add(e) entries[#entries + 1] = e end

local class_also = require("ember.help")._class_also

-- ---- power-average pooling ------------------------------------------------------------------

local LP_DOC = [=[
Power-average pooling over %s windows, as torch.nn.functional.lp_pool%dd: for each window,
(sum of x^p)^(1/p), computed as PyTorch does, (sign(s) * relu(|s|) * k)^(1/p) with s the
windows' average of x^p (avg_pool%dd, no padding) and k the window's size: a window whose sum
is 0 gets a zero gradient, and with ceil_mode a window cut short by the input's edge is scaled
by k / (its size), as PyTorch's. norm_type = p is any non-zero number; math.huge gives the
max of |x| (max_pool%dd of |x|), -math.huge the min. Odd or fractional p on negative inputs
gives NaN, as in PyTorch. x is [C, %s] or [N, C, %s], floating point. stride defaults to
kernel_size; sizes are a number or a list of %d.]=]

local LP = {
  {1, "1-D", "L", "L"},
  {2, "2-D", "H, W", "H, W"},
  {3, "3-D", "D, H, W", "D, H, W"},
}
for _, v in ipairs(LP) do
  local nd = v[1]
  local doc = string.format(LP_DOC, v[2], nd, nd, nd, v[3], v[4], nd)
  local shape = nd == 1 and "1, 2, 8" or nd == 2 and "1, 2, 4, 4" or "1, 1, 4, 4, 4"
  add {
    name = "ember.nn.functional.lp_pool" .. nd .. "d",
    sig = "F.lp_pool" .. nd .. "d(x, norm_type, kernel_size [, stride = kernel_size [, ceil_mode = false]])"
       .. "\n  -> tensor",
    doc = doc .. "\nThe optional arguments are positional or one options table; the module is nn.LPPool"
       .. nd .. "d.",
    example = "local F = ember.nn.functional\n"
       .. (nd == 1 and "print(F.lp_pool1d(ember.tensor({{{3.0, -4.0, 1.0, 2.0}}}), 2, 2))   -- 5, sqrt(5)"
           or "print(F.lp_pool" .. nd .. "d(ember.randn(" .. shape .. "), 2, 2).shape)"),
  }
  add {
    name = "ember.nn.LPPool" .. nd .. "d",
    also = class_also("ember.nn.LPPool" .. nd .. "d"),
    sig = "nn.LPPool" .. nd .. "d(norm_type, kernel_size [, stride [, ceil_mode = false]]) -> module",
    doc = "F.lp_pool" .. nd .. "d as a module (no parameters). The arguments are positional or one\n"
       .. "options table and are checked when it is built; tostring shows them as PyTorch's repr\n"
       .. "does (stride=nil when not given: the kernel's).",
    example = "local nn = ember.nn\nlocal pool = nn.LPPool" .. nd .. "d(2, 2)\nprint(pool)\nprint(pool(ember.randn("
       .. shape .. ")).shape)",
  }
end

-- ---- pdist, gumbel_softmax ----------------------------------------------------------------

add {
  name = "ember.nn.functional.pdist",
  sig = "F.pdist(x [, p = 2]) -> tensor [N (N - 1) / 2]",
  doc = [=[
The p-norm distance between every pair of rows of x [N, M] (floating point), as
torch.nn.functional.pdist: pairs (i, j) with i < j, i outer, in PyTorch's order (the upper
triangle of F.cdist's matrix read row by row). p >= 0: 0 counts the differing elements,
math.huge is the largest absolute difference. The gradients are PyTorch's: 0 for a pair of
equal rows (distance 0) and, for p < 1, for each element that does not differ; with p =
math.huge each tied largest element gets the full gradient. N < 2 gives an empty [0].]=],
  example = [=[
local F = ember.nn.functional
print(F.pdist(ember.tensor({{0.0, 0.0}, {3.0, 4.0}, {6.0, 8.0}})))   -- 5, 10, 5]=],
}

add {
  name = "ember.nn.functional.gumbel_softmax",
  sig = "F.gumbel_softmax(logits [, tau = 1 [, hard = false [, eps [, dim = -1]]]]) -> tensor",
  doc = [=[
A sample of the Gumbel-softmax (concrete) distribution, as torch.nn.functional.gumbel_softmax:
softmax((logits + g) / tau, dim) with g = -log(e), e drawn from Exponential(1) by ember's
generator (ember.manual_seed makes it reproducible; the numbers differ from PyTorch's). hard =
true returns the one-hot of each sample's argmax along dim, with the soft sample's gradient
(straight through: y_hard - y_soft:detach() + y_soft). eps is accepted and ignored, as in
PyTorch (deprecated there). dim is 1-based (negative from the end). The optional arguments
are positional or one options table.]=],
  example = [=[
local F = ember.nn.functional
local logits = ember.randn(2, 4)
print(F.gumbel_softmax(logits, {tau = 0.5}):sum(2))   -- ones
print(F.gumbel_softmax(logits, 1, true))                -- one-hot rows]=],
}

-- ---- losses ---------------------------------------------------------------------------------

add {
  name = "ember.nn.functional.triplet_margin_with_distance_loss",
  sig = "F.triplet_margin_with_distance_loss(anchor, positive, negative\n"
     .. "  [, {distance_function = F.pairwise_distance, margin = 1, swap = false, reduction = \"mean\"}])\n"
     .. "  -> tensor",
  doc = [=[
max(0, margin + d(anchor, positive) - d(anchor, negative)), reduced, as
torch.nn.functional.triplet_margin_with_distance_loss. d = distance_function(x1, x2) is any
function or module returning a tensor of distances (default F.pairwise_distance); swap uses
min(d(anchor, negative), d(positive, negative)) as the negative distance. margin must be > 0.
The three inputs must have the same number of dims. The options are keyword-only, as in
PyTorch: they go in the options table.]=],
  example = [=[
local F = ember.nn.functional
local a, p, n = ember.randn(4, 8), ember.randn(4, 8), ember.randn(4, 8)
local cosine = function(x1, x2) return 1 - F.cosine_similarity(x1, x2) end
print(F.triplet_margin_with_distance_loss(a, p, n, {distance_function = cosine, margin = 0.5}))]=],
}

add {
  name = "ember.nn.TripletMarginWithDistanceLoss",
  also = class_also("ember.nn.TripletMarginWithDistanceLoss"),
  sig = "nn.TripletMarginWithDistanceLoss([{distance_function =, margin = 1, swap = false,\n"
     .. "                                    reduction = \"mean\"}]) -> loss_fn(anchor, positive, negative)",
  doc = [=[
F.triplet_margin_with_distance_loss as a module; the options are keyword-only (one options
table). As in PyTorch, the default distance is an nn.PairwiseDistance() held as a child
module, and a module given as distance_function is a child too (it moves with :to() and
shows in tostring); a plain function is kept as it is. margin must be > 0.]=],
  example = [=[
local nn = ember.nn
local loss_fn = nn.TripletMarginWithDistanceLoss({swap = true, margin = 2})
print(loss_fn(ember.randn(3, 4), ember.randn(3, 4), ember.randn(3, 4)))]=],
}

add {
  name = "ember.nn.functional.multilabel_margin_loss",
  sig = "F.multilabel_margin_loss(input, target [, {reduction = \"mean\"}]) -> tensor",
  doc = [=[
The multi-class multi-label hinge loss, as torch.nn.functional.multilabel_margin_loss.
input [N, C] or [C] (floating point; N may be 0); target of the same shape (an integer
tensor) lists each row's target classes as 1-based indices, ended by the row's first 0: in
PyTorch they are 0-based and ended by -1, so ember's target is PyTorch's + 1, the ember way
of every class-index target (nn.CrossEntropyLoss, nn.MultiMarginLoss). Entries after the 0
are ignored but must still be in 0..C, as PyTorch checks them too. Per row, over its targets
j (repeats count again) and the classes i not among them:
sum max(0, 1 - (x[j] - x[i])) / C. reduction "none" gives [N] ([] for a 1-D input); "mean"
of an empty batch is NaN (PyTorch returns an unset value there).]=],
  example = [=[
local F = ember.nn.functional
local x = ember.tensor({{0.1, 0.2, 0.4, 0.8}})
print(F.multilabel_margin_loss(x, ember.tensor({{4, 1, 0, 2}})))   -- 0.85: classes 4 and 1]=],
}

add {
  name = "ember.nn.MultiLabelMarginLoss",
  also = class_also("ember.nn.MultiLabelMarginLoss"),
  sig = "nn.MultiLabelMarginLoss([{reduction = \"mean\"}]) -> loss_fn(input, target)",
  doc = [=[
F.multilabel_margin_loss as a module: target holds 1-based class indices, each row's list
ended by its first 0 (PyTorch's -1). size_average and reduce (deprecated in PyTorch) are
refused.]=],
  example = [=[
local nn = ember.nn
print(nn.MultiLabelMarginLoss()(ember.randn(2, 3), ember.tensor({{3, 1, 0}, {2, 0, 0}})))]=],
}

-- ---- lazy modules (lua/ember/nn/lazy.lua) ----------------------------------------------------

local function lazy_also(names)
  local also = {}
  for _, n in ipairs(names) do
    if n ~= "LazyLinear" and n ~= "LazyConv2d" and n ~= "LazyBatchNorm2d" then also[#also + 1] = "ember.nn." .. n end
    for _, a in ipairs(class_also("ember.nn." .. n, {"ember.nn." .. n .. ":has_uninitialized_params",
                                                     "ember.nn." .. n .. ":initialize_parameters"})) do
      also[#also + 1] = a
    end
  end
  return also
end

local LAZY_DOC = "Made without its input size, which it learns from its first input (or from the state dict "
  .. "load_state_dict gives it), then it is the real module: same tensors, its class, its printing. Until "
  .. "then its parameters and buffers are empty tensors (PyTorch's UninitializedParameter), "
  .. "has_uninitialized_params() is true and tostring shows the size as 0; an optimizer made before the "
  .. "first forward updates the real parameters, since they stay the same tensors. "
  .. "m:initialize_parameters(x) learns the size from x without running forward. Like torch.nn's."

local lazy_linear = {"LazyLinear"}
add {
  name = "ember.nn.LazyLinear",
  also = lazy_also(lazy_linear),
  sig = "nn.LazyLinear(out_features [, bias = true] [, {device, dtype}]) -> becomes nn.Linear",
  doc = "nn.Linear with in_features taken from the first input's last size. " .. LAZY_DOC,
  example = [=[
local nn = ember.nn
local m = nn.LazyLinear(3)
local opt = ember.optim.SGD(m:parameters(), {lr = 0.1})
print(m(ember.randn(2, 5)).shape, m.weight.shape)   -- {2, 3}  {3, 5}]=],
}
local lazy_conv = {}
for _, k in ipairs{"Conv", "ConvTranspose"} do
  for nd = 1, 3 do lazy_conv[#lazy_conv + 1] = "Lazy" .. k .. nd .. "d" end
end
add {
  name = "ember.nn.LazyConv2d",
  also = lazy_also(lazy_conv),
  sig = "nn.LazyConv1d/2d/3d(out_channels, kernel_size, ...) -> becomes nn.Conv1d/2d/3d\n"
    .. "nn.LazyConvTranspose1d/2d/3d(out_channels, kernel_size, ...) -> becomes nn.ConvTranspose1d/2d/3d",
  doc = "The convolutions with in_channels taken from the first input's channels (dim 2 of a batched "
    .. "input, dim 1 of an unbatched one); the other arguments are the real class's. " .. LAZY_DOC,
  example = [=[
local nn = ember.nn
local c = nn.LazyConv2d(8, 3)
c(ember.randn(1, 4, 6, 6))
print(c.in_channels, c.weight.shape)   -- 4  {8, 4, 3, 3}]=],
}
local lazy_norm = {}
for _, k in ipairs{"BatchNorm", "InstanceNorm"} do
  for nd = 1, 3 do lazy_norm[#lazy_norm + 1] = "Lazy" .. k .. nd .. "d" end
end
add {
  name = "ember.nn.LazyBatchNorm2d",
  also = lazy_also(lazy_norm),
  sig = "nn.LazyBatchNorm1d/2d/3d([{eps, momentum, affine, track_running_stats}]) -> becomes nn.BatchNorm*\n"
    .. "nn.LazyInstanceNorm1d/2d/3d([{...}]) -> becomes nn.InstanceNorm*",
  doc = "The normalisations with num_features taken from the first input's channels (an unbatched "
    .. "instance-norm input's dim 1; PyTorch reads its length there and fails). " .. LAZY_DOC,
  example = [=[
local nn = ember.nn
local b = nn.LazyBatchNorm2d()
b(ember.randn(2, 3, 4, 4))
print(b.num_features, b.running_mean.shape)   -- 3  {3}]=],
}

-- ---- SyncBatchNorm (lua/ember/nn/sync_bn.lua) -------------------------------------------------

add {
  name = "ember.nn.SyncBatchNorm",
  also = class_also("ember.nn.SyncBatchNorm", {"ember.nn.SyncBatchNorm:reset_parameters",
                                               "ember.nn.SyncBatchNorm:reset_running_stats",
                                               "ember.nn.SyncBatchNorm:convert_sync_batchnorm",
                                               "ember.nn.SyncBatchNorm.convert_sync_batchnorm"}),
  sig = "nn.SyncBatchNorm(num_features [, eps = 1e-5 [, momentum = 0.1 [, affine = true [, "
    .. "track_running_stats = true [, process_group]]]]] [, {device, dtype}])\n"
    .. "nn.SyncBatchNorm.convert_sync_batchnorm(module [, process_group]) -> module",
  doc = "Batch normalisation of an [N, C, ...] input whose training statistics are the whole batch's "
    .. "across the ranks of process_group (default: every rank of ember.distributed): two all_reduces "
    .. "in forward (the mean, then the variance) and one in backward, with PyTorch's gradient. In "
    .. "evaluation, with one rank or without a process group it is BatchNorm. The running statistics "
    .. "take the global mean and unbiased variance. convert_sync_batchnorm replaces every "
    .. "BatchNorm1d/2d/3d of a model by one sharing its parameters, buffers and training flag (call it "
    .. "before wrapping the model in DistributedDataParallel). Like torch.nn.SyncBatchNorm.",
  example = [=[
local nn = ember.nn
local model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
nn.SyncBatchNorm.convert_sync_batchnorm(model)
print(model[2])   -- SyncBatchNorm(8, ...): BatchNorm in one process]=],
}

-- the docs reflowed to lines of at most 88 columns (help's limit is 90)
local function reflow(text)
  local words, out, line = {}, {}, ""
  for w in text:gmatch("%S+") do words[#words + 1] = w end
  for _, w in ipairs(words) do
    if line == "" then
      line = w
    elseif #line + 1 + #w > 88 then
      out[#out + 1] = line
      line = w
    else
      line = line .. " " .. w
    end
  end
  out[#out + 1] = line
  return table.concat(out, "\n")
end
for _, e in ipairs(entries) do e.doc = reflow(e.doc) end

return entries
