-- Docs of ember.nn: Module and its methods, the layers, the losses,
-- ember.nn.functional, ember.nn.init and ember.nn.utils. Format: ember/help.lua.
-- A class entry also documents the class's own init (the constructor), forward
-- (what calling an instance does) and extra_repr (the text inside tostring's parentheses).
local class_also = require("ember.help")._class_also

return {
  -- ---- the module ------------------------------------------------------------------
  {
    name = "ember.nn",
    sig = "local nn = ember.nn",
    doc = [=[
Neural-network building blocks, like torch.nn, with ember's 1-based conventions.
Classes (call a class to make an instance, call an instance to run its forward):
  nn.Module            the base class; nn.Module:extend("Name") defines your own
  containers           nn.Sequential, nn.ModuleList, nn.ModuleDict, nn.Identity,
                       nn.ParameterList, nn.ParameterDict
  layers               nn.Linear, nn.Bilinear, nn.Embedding, nn.LayerNorm, nn.RMSNorm,
                       nn.Dropout, nn.Dropout1d/3d, nn.AlphaDropout,
                       nn.FeatureAlphaDropout, nn.Flatten, nn.Unflatten,
                       nn.CosineSimilarity, nn.PairwiseDistance
  convolutional nets   nn.Conv1d/2d/3d, nn.ConvTranspose1d/2d/3d, nn.MaxPool1d/2d/3d,
                       nn.AvgPool1d/2d/3d, nn.AdaptiveAvgPool1d/2d/3d,
                       nn.AdaptiveMaxPool1d/2d/3d, nn.MaxUnpool1d/2d/3d,
                       nn.LPPool1d/2d/3d,
                       nn.BatchNorm1d/2d/3d, nn.SyncBatchNorm, nn.GroupNorm,
                       nn.InstanceNorm1d/2d/3d,
                       nn.Dropout2d, nn.Upsample, nn.UpsamplingNearest2d,
                       nn.UpsamplingBilinear2d, nn.Unfold, nn.Fold, nn.ChannelShuffle,
                       nn.Softmax2d, the padding layers nn.ZeroPad1d/2d/3d,
                       nn.ConstantPad*, nn.ReflectionPad*, nn.ReplicationPad*,
                       nn.CircularPad*
  lazy modules         nn.LazyLinear, nn.LazyConv1d/2d/3d, nn.LazyConvTranspose1d/2d/3d,
                       nn.LazyBatchNorm1d/2d/3d, nn.LazyInstanceNorm1d/2d/3d
  transformers         nn.MultiheadAttention, nn.TransformerEncoderLayer,
                       nn.TransformerEncoder, nn.TransformerDecoderLayer,
                       nn.TransformerDecoder, nn.Transformer
  activations          nn.ReLU, nn.SiLU, nn.GELU, nn.Tanh, nn.Sigmoid, nn.Softmax,
                       nn.LogSoftmax
  losses               nn.MSELoss, nn.CrossEntropyLoss, nn.NLLLoss, nn.BCEWithLogitsLoss,
                       nn.CTCLoss, nn.MultiLabelMarginLoss,
                       nn.TripletMarginWithDistanceLoss
                       and the others of torch.nn
Functions: nn.Parameter(t), nn.Buffer(t), nn.is_module(v), nn.utils.clip_grad_norm_.
Submodules: nn.functional (the layers and losses as functions), nn.init (initialisers).
Names are PyTorch's (Sequential/ModuleList children "0", "1", ...), so state_dicts
cross both ways; seq[1] is the first child. Differences from PyTorch:
class indices (CrossEntropyLoss targets, Embedding inputs) are 1-based; keyword
arguments go in a trailing options table: nn.Linear(3, 4, {bias = false});
parameters() and children() return lists, named_*() return iterators.]=],
    example = [=[
local nn = ember.nn
local model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
local x, y = ember.randn(5, 4), ember.tensor({1, 3, 2, 2, 1})
local loss = nn.CrossEntropyLoss()(model(x), y)
loss:backward()
print(model)]=],
  },

  -- ---- Module ----------------------------------------------------------------------
  {
    name = "ember.nn.Module",
    sig = "nn.Module:extend(name) -> a new module class\nCls(...) -> an instance (calls Cls:init(...))",
    doc = [=[
The base class of layers, losses and models (torch.nn.Module). Define a class with
extend, give it :init(...) (the constructor) and :forward(...), then call the class to
make instances; m(x) calls m:forward(x).
Assigning to a field registers it: a module becomes a child, a leaf tensor with
requires_grad (nn.Parameter(t)) a parameter, a tensor under a register_buffer name a
buffer; nil removes it; anything else is a plain field. The order of assignment is the
order of parameters() and state_dict(). A tensor without requires_grad cannot replace a
parameter (set the field to nil first, or use register_parameter).
tostring(m) prints the tree with parameter counts and a total, like PyTorch's repr.]=],
    example = [=[
local nn = ember.nn
local MLP = nn.Module:extend("MLP")
function MLP:init(d_in, d_out)
  self.fc1 = nn.Linear(d_in, 16)
  self.fc2 = nn.Linear(16, d_out)
end
function MLP:forward(x) return self.fc2(self.fc1(x):relu()) end
local m = MLP(4, 2)
print(m(ember.randn(3, 4)).shape[2])   -- 2
print(m)]=],
  },
  {
    name = "ember.nn.Module:extend",
    also = {"ember.data.Dataset:extend"},
    sig = "Cls:extend(name) -> a subclass of Cls",
    doc = [=[
Makes a new class deriving from Cls (nn.Module, any module class, or data.Dataset).
Define init and forward (modules) or len and get (datasets) on it; the parent is
Sub.super for modules, so an init can call Sub.super.init(self, ...). Calling the class
makes an instance and runs its init with the arguments.]=],
    example = [=[
local nn = ember.nn
local Double = nn.Module:extend("Double")
function Double:forward(x) return x * 2 end
print(Double()(ember.tensor({1.0, 2.0})))   -- [2, 4]]=],
  },
  {
    name = "ember.nn.Module:init",
    sig = "module:init(...)",
    doc = [=[
The constructor, called with the class's arguments when an instance is made. Module's
own init does nothing (the instance is already set up); subclasses define theirs and may
call the parent's: Sub.super.init(self, ...).]=],
    example = [=[
local nn = ember.nn
local Scale = nn.Module:extend("Scale")
function Scale:init(k) self.k = k end
function Scale:forward(x) return x * self.k end
print(Scale(3)(ember.ones(2)))   -- [3, 3]]=],
  },
  {
    name = "ember.nn.Module:forward",
    sig = "module:forward(...) -> outputs\nmodule(...)",
    doc = [=[
The computation of a module; calling the instance calls it. Module's own forward raises
"forward() is not implemented": each class defines it.]=],
    example = [=[
local nn = ember.nn
local fc = nn.Linear(3, 2)
local x = ember.randn(4, 3)
print(fc:forward(x):eq(fc(x)):all():item())   -- true]=],
  },
  {
    name = "ember.nn.Module:extra_repr",
    sig = "module:extra_repr() -> string",
    doc = [=[
The text tostring(module) puts inside the parentheses, e.g.
"in_features=3, out_features=4, bias=true". Module's own returns ""; a class without its
own extra_repr lists its parameters' shapes instead. Override it in your classes.]=],
    example = [=[
local nn = ember.nn
print(nn.Linear(3, 4):extra_repr())   -- in_features=3, out_features=4, bias=true]=],
  },
  {
    name = "ember.nn.Module:register_parameter",
    sig = "module:register_parameter(name, t)",
    doc = [=[
Registers the tensor t as a parameter called name, even one without requires_grad;
t = nil removes the parameter. Plain assignment (self.name = nn.Parameter(t)) is the
usual way; this is for tensors that should not require grad, or for removing.]=],
    example = [=[
local nn = ember.nn
local fc = nn.Linear(3, 2)
fc:register_parameter("bias", nil)
print(#fc:parameters())   -- 1]=],
  },
  {
    name = "ember.nn.Module:register_buffer",
    sig = "module:register_buffer(name, t [, persistent = true])",
    doc = [=[
Registers the tensor t as a buffer: part of the module's state (state_dict, to(),
named_buffers) but not a parameter, so optimizers do not update it. Later assignments
self.name = tensor replace the buffer; t = nil removes it. persistent = false (or
{persistent = false}, PyTorch's keyword) keeps it out of state_dict and load_state_dict.]=],
    example = [=[
local nn = ember.nn
local m = nn.Module()
m:register_buffer("running_mean", ember.zeros(3))
print(m:state_dict().running_mean)]=],
  },
  {
    name = "ember.nn.Module:register_forward_hook",
    also = {"ember.nn.Module:register_forward_pre_hook"},
    sig = "module:register_forward_hook(hook [, {prepend = false}]) -> handle\n"
      .. "module:register_forward_pre_hook(hook [, {prepend = false}]) -> handle",
    doc = [=[
Hooks run by every module(...) call: a pre-hook as hook(module, args) before forward,
args the packed arguments (args.n of them), returning nil or new arguments (a plain
table of them, or one value); a forward hook as hook(module, args, output...) after
it, returning nil or new results. Hooks run in the order registered (prepend = true
puts one first). handle:remove() takes it out. with_kwargs and always_call are
refused: Lua calls have no keyword arguments. Like torch.nn.Module's; a forward with
several results (an LSTM's output and state) hands them all to the hook.]=],
    example = [=[
local nn = ember.nn
local model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
local acts = {}
local h = model[2]:register_forward_hook(function(m, args, out) acts.relu = out:detach() end)
model(ember.randn(5, 4))
print(acts.relu.shape)   -- ember.Size({5, 3})
h:remove()]=],
  },
  {
    name = "ember.nn.Module:register_full_backward_hook",
    also = {"ember.nn.Module:register_full_backward_pre_hook"},
    sig = "module:register_full_backward_hook(hook [, {prepend = false}]) -> handle\n"
      .. "module:register_full_backward_pre_hook(hook [, {prepend = false}]) -> handle",
    doc = [=[
Hooks run in backward for the gradients of a module(...) call, as torch.nn.Module's. A
pre-hook, hook(module, grad_output), runs once the gradients of the call's results are
known; a full hook, hook(module, grad_input, grad_output), once those of its arguments
are. grad_output has a place per result and grad_input one per argument (.n of them), nil
where there is no gradient: a result nobody used, an argument that is not a tensor
requiring grad (PyTorch gives zeros for a tensor argument that does not require grad).
A hook may return a replacement list (a table of as many, n = k for trailing nils, or one
tensor). When no argument requires grad, the full hooks run at the results with
grad_input all nil and must return nil. Registered in grad mode only; pre-hooks run
before full hooks, each list in order (prepend = true puts one first); the forward
hooks see the same call first. handle:remove() takes a hook out.]=],
    example = [=[
local nn = ember.nn
local lin = nn.Linear(3, 2)
local h = lin:register_full_backward_hook(function(m, grad_input, grad_output)
  print(grad_output[1].shape, grad_input[1].shape)   -- ember.Size({4, 2})  ember.Size({4, 3})
end)
lin(ember.randn(4, 3, {requires_grad = true})):sum():backward()
h:remove()]=],
  },
  {
    name = "ember.nn.Module:add_module",
    sig = "module:add_module(name, child) -> module",
    doc = [=[
Registers child (a module) under name, the same as module[name] = child; name may be a
number (it is turned into a string). Raises an error when child is not a module.]=],
    example = [=[
local nn = ember.nn
local m = nn.Module()
m:add_module("fc", nn.Linear(2, 2))
print(#m:children())   -- 1]=],
  },
  {
    name = "ember.nn.Module:named_children",
    sig = "for name, child in module:named_children() do ... end",
    doc = "An iterator over the direct children as (name, module), in registration order.",
    example = [=[
local nn = ember.nn
local seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
for name, child in seq:named_children() do print(name, child:extra_repr()) end]=],
  },
  {
    name = "ember.nn.Module:children",
    sig = "module:children() -> list of modules",
    doc = "The direct child modules, as a Lua list (PyTorch returns an iterator).",
    example = [=[
local nn = ember.nn
local seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
print(#seq:children())   -- 2]=],
  },
  {
    name = "ember.nn.Module:named_modules",
    sig = "for name, m in module:named_modules([{prefix =, remove_duplicate = true}]) do ... end",
    doc = [=[
An iterator over the module itself (name "", or prefix) and all its descendants, depth
first, with dotted names ("0", "block.fc"). A module reachable twice is listed once,
unless remove_duplicate is false (then under each of its names, as PyTorch's).]=],
    example = [=[
local nn = ember.nn
local seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
for name, m in seq:named_modules() do print(name == "" and "(root)" or name) end]=],
  },
  {
    name = "ember.nn.Module:modules",
    sig = "module:modules() -> list of modules",
    doc = "The module and all its descendants (depth first), as a list.",
    example = [=[
local nn = ember.nn
print(#nn.Sequential(nn.Linear(2, 3), nn.ReLU()):modules())   -- 3]=],
  },
  {
    name = "ember.nn.Module:named_parameters",
    sig = "for name, p in module:named_parameters([prefix [, recurse [, remove_duplicate]]]) do ... end",
    doc = [=[
An iterator over (name, parameter): the module's own parameters in registration order,
then each child's, depth first, with PyTorch's dotted names like "fc1.weight" or
"0.bias" (Sequential and ModuleList children are numbered from 0, as in PyTorch). A
tensor shared by two modules (tied weights) is listed once, under its first name, unless
remove_duplicate is false; recurse = false lists the module's own only. The options may
also come as one table {prefix =, recurse =, remove_duplicate =}.]=],
    example = [=[
local nn = ember.nn
local seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
for name, p in seq:named_parameters() do print(name, table.concat(p.shape, "x")) end]=],
  },
  {
    name = "ember.nn.Module:parameters",
    sig = "module:parameters() -> list of tensors",
    doc = [=[
All parameters as a list, in named_parameters() order (own first, then the children's,
depth first); what optimizers take.]=],
    example = [=[
local nn = ember.nn
local model = nn.Linear(3, 2)
local opt = ember.optim.SGD(model:parameters(), {lr = 0.1})
print(#model:parameters())   -- 2 (weight, bias)]=],
  },
  {
    name = "ember.nn.Module:named_buffers",
    sig = "for name, b in module:named_buffers([prefix [, recurse [, remove_duplicate]]]) do ... end",
    doc = [=[
An iterator over (name, buffer) of the module and its descendants, dotted names; the
options as named_parameters'. Non-persistent buffers are listed too.]=],
    example = [=[
local nn = ember.nn
local m = nn.Module()
m:register_buffer("count", ember.zeros(1))
for name, b in m:named_buffers() do print(name, b) end]=],
  },
  {
    name = "ember.nn.Module:buffers",
    sig = "module:buffers([recurse = true]) -> list of tensors",
    doc = "All buffers as a list, in named_buffers() order, each once.",
    example = [=[
local nn = ember.nn
print(#nn.BatchNorm1d(4):buffers())   -- 3 (running_mean, running_var, num_batches_tracked)]=],
  },
  {
    name = "ember.nn.Module:num_parameters",
    sig = "module:num_parameters() -> integer",
    doc = "The total number of elements of all parameters (shared tensors counted once).",
    example = [=[
local nn = ember.nn
print(nn.Linear(784, 10):num_parameters())   -- 7850]=],
  },
  {
    name = "ember.nn.Module:apply",
    sig = "module:apply(fn) -> module",
    doc = [=[
Calls fn(m) on every descendant and then on the module itself (PyTorch's order), e.g. to
initialise weights. Returns the module.]=],
    example = [=[
local nn = ember.nn
local model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
model:apply(function(m) if m.bias then nn.init.zeros_(m.bias) end end)
print(model[1].bias)   -- zeros]=],
  },
  {
    name = "ember.nn.Module:train",
    sig = "module:train([mode = true]) -> module",
    doc = [=[
Sets the training flag (module.training) of the module and all its descendants; Dropout
is active only in training mode. mode must be a boolean. Returns the module.]=],
    example = [=[
local nn = ember.nn
local model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
model:train(false)
print(model[2].training)   -- false
model:train()]=],
  },
  {
    name = "ember.nn.Module:eval",
    sig = "module:eval() -> module",
    doc = "Evaluation mode: the same as module:train(false). Dropout becomes the identity.",
    example = [=[
local nn = ember.nn
local d = nn.Dropout(0.5):eval()
print(d(ember.ones(4)))   -- unchanged: [1, 1, 1, 1]]=],
  },
  {
    name = "ember.nn.Module:requires_grad_",
    sig = "module:requires_grad_([flag = true]) -> module",
    doc = "Sets requires_grad on every parameter; requires_grad_(false) freezes the module.",
    example = [=[
local nn = ember.nn
local fc = nn.Linear(2, 2):requires_grad_(false)
print(fc.weight.requires_grad)   -- false]=],
  },
  {
    name = "ember.nn.Module:zero_grad",
    sig = "module:zero_grad()",
    doc = [=[
Sets the .grad of every parameter to nil (PyTorch's set_to_none default), so the next
backward starts from nothing instead of accumulating.]=],
    example = [=[
local nn = ember.nn
local fc = nn.Linear(2, 1)
fc(ember.ones(1, 2)):sum():backward()
fc:zero_grad()
print(fc.weight.grad)   -- nil]=],
  },
  {
    name = "ember.nn.Module:to",
    sig = "module:to(dtype | device | tensor | {dtype =, device =}) -> module",
    doc = [=[
Converts the parameters (with their gradients) and buffers in place, taking the same
arguments as Tensor:to. Dtype changes apply to floating-point tensors only (integer
buffers only change device), as in PyTorch; converting to an integer dtype is an error.
Each changed parameter is replaced by a new tensor, so create optimizers after moving a
model. Returns the module.]=],
    example = [=[
local nn = ember.nn
local fc = nn.Linear(2, 2):to("float64")
print(fc.weight.dtype)   -- float64]=],
  },
  {
    name = "ember.nn.Module:float",
    also = {"ember.nn.Module:double", "ember.nn.Module:cpu", "ember.nn.Module:cuda"},
    sig = "module:float() / module:double() / module:cpu() / module:cuda() -> module",
    doc = [=[
Shorthands for module:to("float32"), to("float64"), to("cpu") and to("cuda").
cuda() needs a CUDA device (ember.cuda.is_available()).]=],
    example = [=[
local nn = ember.nn
local fc = nn.Linear(2, 2):double()
print(fc.weight.dtype)   -- float64
fc:float()
print(fc.weight.dtype)   -- float32]=],
  },
  {
    name = "ember.nn.Module:state_dict",
    sig = "module:state_dict([{prefix = \"\", keep_vars = false}]) -> {[name] = tensor}",
    doc = [=[
A table from parameter and persistent buffer names to tensors: detached, sharing memory
with the module's. The names are PyTorch's ("0.weight" for a Sequential's first child,
"fc.bias"), and a tensor shared by two modules (a tied lm_head.weight) is listed under
each of its names, as PyTorch's state_dict, so files cross between the two unchanged.
pairs(sd) walks it in PyTorch's order (each module's parameters, its buffers, then its
children). ember.save(path, sd) writes it as safetensors.]=],
    example = [=[
local nn = ember.nn
local sd = nn.Linear(3, 2):state_dict()
print(sd.weight.shape[1], sd.weight.shape[2], sd.bias.shape[1])   -- 2 3 2
local path = os.tmpname()
ember.save(path, sd)
os.remove(path)]=],
  },
  {
    name = "ember.nn.Module:load_state_dict",
    sig = "module:load_state_dict(sd [, {strict = true}])\n  -> {missing_keys = {...}, unexpected_keys = {...}, renumbered = bool}",
    doc = [=[
Copies the tensors of sd into the parameters and persistent buffers in place, converting
dtype and device. With strict (the default) a missing or unexpected key is an error; a
shape mismatch or a non-tensor value always is. Nothing is copied when it fails. A
PyTorch state dict loads as it is. A tensor with several names (tied weights) needs only
one of them. A file from an older ember, whose Sequential/ModuleList children
were numbered from 1, is recognised (keys that fit only with every such number shifted by
one) and loaded (renumbered = true); when missing and unexpected keys differ only in
their numbers, the error says so.]=],
    example = [=[
local nn = ember.nn
local a, b = nn.Linear(3, 2), nn.Linear(3, 2)
b:load_state_dict(a:state_dict())
print(a.weight:eq(b.weight):all():item())   -- true
local r = b:load_state_dict({weight = a.weight}, {strict = false})
print(r.missing_keys[1])          -- bias]=],
  },
  {
    name = "ember.nn.Module:is_module",
    also = {"ember.nn.is_module"},
    sig = "nn.is_module(v) -> boolean",
    doc = "True when v is a module instance (not a class, not a plain table).",
    example = [=[
local nn = ember.nn
print(nn.is_module(nn.Linear(2, 2)), nn.is_module(nn.Linear), nn.is_module({}))
-- true false false]=],
  },
  {
    name = "ember.nn.Parameter",
    sig = "nn.Parameter(t [, requires_grad = true]) -> tensor",
    doc = [=[
A leaf tensor sharing t's memory with requires_grad set (t:detach():requires_grad_()).
Assigning it to a module field registers it as a parameter. ember has no separate
Parameter type: the result is an ordinary tensor.]=],
    example = [=[
local nn = ember.nn
local m = nn.Module()
m.scale = nn.Parameter(ember.ones(3))
print(#m:parameters(), m.scale.requires_grad)   -- 1 true]=],
  },
  {
    name = "ember.nn.Buffer",
    sig = "nn.Buffer([t] [, {persistent = true}]) -> tensor",
    doc = [=[
A tensor sharing t's memory (and its requires_grad) that, assigned to a module field,
registers as a buffer: module.name = nn.Buffer(t) is module:register_buffer("name", t).
persistent = false keeps it out of state_dict. Without t, an empty tensor. Like
torch.nn.Buffer (PyTorch 2.5); the result is an ordinary tensor.]=],
    example = [=[
local nn = ember.nn
local m = nn.Module()
m.running_mean = nn.Buffer(ember.zeros(3))
m.mask = nn.Buffer(ember.ones(2, 2), {persistent = false})
for name in pairs(m:state_dict()) do print(name) end   -- running_mean]=],
  },

  -- ---- containers ------------------------------------------------------------------
  {
    name = "ember.nn.Sequential",
    also = {"ember.nn.Sequential:init", "ember.nn.Sequential:forward"},
    sig = "nn.Sequential(m1, m2, ...) or nn.Sequential({m1, m2, ...}) -> module",
    doc = [=[
Applies its children in order: seq(x) = mN(...m2(m1(x))). Extra arguments of the call
are passed to every child. Children are named "0", "1", ... as in PyTorch, so parameter
names are "0.weight", "2.bias"; indexing is Lua's: seq[i] is the i-th child (seq[1] the
one named "0"; negative i counts from the end) and #seq the count.
seq[{start, stop [, step]}] slices (PyTorch's seq[a:b]): a new Sequential of the children
at those positions, an inclusive 1-based range as a tensor's (seq[{1, 4}] is PyTorch's
seq[:4], seq[{-2, -1}] the last two); the modules are shared, and the slice names them
"0", "1", ... again.]=],
    example = [=[
local nn = ember.nn
local model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
print(model(ember.randn(3, 4)).shape[2], #model, model[-1].out_features)   -- 2 3 2
local features = model[{1, 2}]                -- PyTorch's model[:2]
print(#features, features(ember.randn(3, 4)).shape[2])                 -- 2 8]=],
  },
  {
    name = "ember.nn.Sequential:add",
    also = {"ember.nn.Sequential:append"},
    sig = "seq:add(m) -> seq\nseq:append(m) -> seq",
    doc = "Appends the module m, named by its position from 0 (\"3\" for the fourth). Returns seq.",
    example = [=[
local nn = ember.nn
local seq = nn.Sequential():add(nn.Linear(2, 2)):add(nn.Tanh())
print(#seq)   -- 2]=],
  },
  {
    name = "ember.nn.ModuleList",
    also = {"ember.nn.ModuleList:init"},
    sig = "nn.ModuleList([{m1, m2, ...}]) -> module",
    doc = [=[
A list of modules whose parameters are registered (named "0", "1", ... as in PyTorch); it
has no forward. list[i] (1-based: list[1] is the one named "0") and #list work; iterate
with ipairs(list:children()). list[{start, stop [, step]}] is a ModuleList of those
modules (inclusive, 1-based; PyTorch's list[a:b]).]=],
    example = [=[
local nn = ember.nn
local blocks = nn.ModuleList({nn.Linear(4, 4), nn.Linear(4, 4)})
local x = ember.randn(2, 4)
for _, b in ipairs(blocks:children()) do x = b(x):relu() end
print(#blocks, #blocks:parameters())   -- 2 4]=],
  },
  {
    name = "ember.nn.ModuleList:append",
    sig = "list:append(m) -> list",
    doc = "Adds the module m at the end. Returns the list.",
    example = [=[
local nn = ember.nn
local list = nn.ModuleList()
list:append(nn.Linear(2, 2))
print(#list)   -- 1]=],
  },
  {
    name = "ember.nn.ModuleDict",
    also = {"ember.nn.ModuleDict:init"},
    sig = "nn.ModuleDict([modules]) -> module\n"
       .. "  modules: a table name -> module (added in sorted key order), a list of {name, module}\n"
       .. "  pairs (added in that order) or another ModuleDict",
    doc = [=[
Modules registered under string keys (torch.nn.ModuleDict); it has no forward. d["name"]
and d.name get one, d["name"] = m adds or replaces one (a replaced entry keeps its
place), d["name"] = nil removes it, #d counts them; pairs(d) and d:items() iterate
(name, module) in insertion order. Keys that name a method of ModuleDict ("keys",
"update", ...) are refused. Parameters are named "key.weight", ...]=],
    example = [=[
local nn = ember.nn
local heads = nn.ModuleDict({{"cls", nn.Linear(8, 3)}, {"reg", nn.Linear(8, 1)}})
local h = ember.randn(2, 8)
for name, head in pairs(heads) do print(name, head(h).shape) end
print(#heads, heads.cls.out_features)   -- 2 3]=],
  },
  {
    name = "ember.nn.ModuleDict:update",
    sig = "d:update(modules) -> d",
    doc = [=[
Adds or replaces entries from a table name -> module (sorted key order), a list of
{name, module} pairs or another ModuleDict.]=],
    example = [=[
local nn = ember.nn
local d = nn.ModuleDict():update({act = nn.ReLU()})
print(d:keys()[1])   -- act]=],
  },
  {
    name = "ember.nn.ModuleDict:keys",
    also = {"ember.nn.ModuleDict:values", "ember.nn.ModuleDict:items"},
    sig = "d:keys() -> list of names\nd:values() -> list of modules\n"
       .. "d:items() -> iterator over (name, module)",
    doc = "The entries in insertion order: keys and values as lists, items for a generic for.",
    example = [=[
local nn = ember.nn
local d = nn.ModuleDict({{"a", nn.ReLU()}, {"b", nn.Tanh()}})
print(table.concat(d:keys(), ","), #d:values())   -- a,b 2
for name, m in d:items() do print(name, m) end]=],
  },
  {
    name = "ember.nn.ModuleDict:contains",
    also = {"ember.nn.ModuleDict:pop", "ember.nn.ModuleDict:clear"},
    sig = "d:contains(name) -> boolean\nd:pop(name) -> module\nd:clear()",
    doc = [=[
contains: whether name is a key (PyTorch's `name in d`). pop: removes the entry and
returns its module (an error when there is none). clear: removes every entry.]=],
    example = [=[
local nn = ember.nn
local d = nn.ModuleDict({a = nn.ReLU(), b = nn.Tanh()})
local m = d:pop("a")
print(d:contains("a"), d:contains("b"))   -- false true
d:clear()
print(#d)   -- 0]=],
  },
  {
    name = "ember.nn.Identity",
    also = {"ember.nn.Identity:init", "ember.nn.Identity:forward"},
    sig = "nn.Identity(...) -> module",
    doc = [=[
Returns its input unchanged; constructor arguments are ignored (as in PyTorch). A
placeholder where a layer is optional.]=],
    example = [=[
local nn = ember.nn
local x = ember.randn(3)
print(nn.Identity()(x) == x)   -- true]=],
  },

  -- ---- layers ----------------------------------------------------------------------
  {
    name = "ember.nn.Linear",
    also = class_also("ember.nn.Linear"),
    sig = "nn.Linear(in_features, out_features [, {bias = true, dtype =, device =}]) -> module",
    doc = [=[
y = x W^T + b, with weight W [out_features, in_features] and bias b [out_features]
(no bias with bias = false). Input [..., in_features] -> output [..., out_features];
another last dim is an error naming both shapes. Initialised like PyTorch:
W, b ~ U(-1/sqrt(in_features), 1/sqrt(in_features)).]=],
    example = [=[
local nn = ember.nn
local fc = nn.Linear(784, 10)
local y = fc(ember.randn(32, 784))
print(y.shape[1], y.shape[2])   -- 32 10
print(nn.Linear(3, 4, {bias = false, dtype = "float64"}))]=],
  },
  {
    name = "ember.nn.Linear:reset_parameters",
    sig = "linear:reset_parameters()",
    doc = [=[
Draws the weight and bias again with PyTorch's default: kaiming_uniform_ with
a = sqrt(5) for the weight, U(-1/sqrt(in), 1/sqrt(in)) for the bias.]=],
    example = [=[
local nn = ember.nn
ember.manual_seed(0)
local fc = nn.Linear(3, 2)
local before = fc.weight:clone()
fc:reset_parameters()
print(fc.weight:eq(before):all():item())   -- false]=],
  },
  {
    name = "ember.nn.Embedding",
    also = class_also("ember.nn.Embedding"),
    sig = "nn.Embedding(num_embeddings, embedding_dim [, {padding_idx =, dtype =, device =}]) -> module",
    doc = [=[
A lookup table: weight [num_embeddings, embedding_dim] ~ N(0, 1). The input is an integer
tensor of 1-based row numbers, any shape; the output has shape input.shape .. {dim}.
An index outside 1..num_embeddings is an error (PyTorch's indices are 0-based).
padding_idx (1-based; negative counts from the end) names a row that starts as zeros
and gets no gradient, as in PyTorch.]=],
    example = [=[
local nn = ember.nn
local emb = nn.Embedding(1000, 64)
local out = emb(ember.tensor({{1, 5, 9}}))
print(out.shape[1], out.shape[2], out.shape[3])   -- 1 3 64]=],
  },
  {
    name = "ember.nn.EmbeddingBag",
    also = class_also("ember.nn.EmbeddingBag"),
    sig = "nn.EmbeddingBag(num, dim [, {mode = \"mean\", include_last_offset =, padding_idx =, _weight =}])",
    doc = [=[
Sums, means (the default) or maxima of bags of rows of weight [num, dim] ~ N(0, 1):
bag(input [, offsets [, per_sample_weights]]) is F.embedding_bag with this weight, so
offsets are 1-based positions where the bags start (PyTorch's plus one). padding_idx's
row starts as zeros and takes no part. max_norm, scale_grad_by_freq and sparse are
refused unless at their defaults.]=],
    example = [=[
local nn = ember.nn
local bag = nn.EmbeddingBag(10, 4, {mode = "sum"})
local out = bag(ember.tensor({1, 2, 4, 5, 4}), ember.tensor({1, 3}))
print(out.shape[1], out.shape[2])   -- 2 4]=],
  },
  {
    name = "ember.nn.Embedding:reset_parameters",
    sig = "embedding:reset_parameters()",
    doc = "Draws the weight again from N(0, 1) (nn.init.normal_).",
    example = [=[
local nn = ember.nn
local emb = nn.Embedding(4, 2)
emb:reset_parameters()
print(emb.weight.shape[1])   -- 4]=],
  },
  {
    name = "ember.nn.LayerNorm",
    also = class_also("ember.nn.LayerNorm"),
    sig = "nn.LayerNorm(normalized_shape [, {eps = 1e-5, elementwise_affine = true,\n"
       .. "             bias = true, dtype =, device =}]) -> module",
    doc = [=[
Normalises over the last #normalized_shape dims (mean 0, biased variance 1, eps added to
the variance), then multiplies by weight (ones) and adds bias (zeros), both of shape
normalized_shape. normalized_shape is an integer or a list of integers. No weight and
bias with elementwise_affine = false; no bias with bias = false. An input whose last
dims differ from normalized_shape is an error.]=],
    example = [=[
local nn = ember.nn
local ln = nn.LayerNorm(4)
local y = ln(ember.randn(2, 4))
print(y:mean(2))   -- about 0 per row]=],
  },
  {
    name = "ember.nn.RMSNorm",
    also = class_also("ember.nn.RMSNorm"),
    sig = "nn.RMSNorm(normalized_shape [, eps [, elementwise_affine]] [, {eps = nil,\n"
       .. "             elementwise_affine = true, dtype =, device =}]) -> module",
    doc = [=[
Root-mean-square normalisation over the last #normalized_shape dims:
x / sqrt(mean(x^2) + eps) * weight, weight ones of shape normalized_shape (none with
elementwise_affine = false). eps = nil (the default) is the machine epsilon of the
arithmetic's dtype (see F.rms_norm). An input whose last dims differ from
normalized_shape is an error. Like torch.nn.RMSNorm (PyTorch 2.4+).]=],
    example = [=[
local nn = ember.nn
local norm = nn.RMSNorm(4, 1e-6)
local y = norm(ember.randn(2, 4))
print(y:pow(2):mean(2))   -- about 1 per row]=],
  },
  {
    name = "ember.nn.Dropout",
    also = class_also("ember.nn.Dropout"),
    sig = "nn.Dropout([p = 0.5]) -> module",
    doc = [=[
In training mode, zeroes each element with probability p and scales the others by
1/(1-p); after module:eval() it is the identity. Draws from ember's generator
(ember.manual_seed). p must be in [0, 1].]=],
    example = [=[
local nn = ember.nn
local d = nn.Dropout(0.25)
print(d(ember.ones(8)))   -- some zeros, the rest 1.3333
d:eval()
print(d(ember.ones(8)))   -- all ones]=],
  },
  {
    name = "ember.nn.Flatten",
    also = class_also("ember.nn.Flatten"),
    sig = "nn.Flatten([start_dim = 2 [, end_dim = -1]]) -> module",
    doc = [=[
Merges dims start_dim..end_dim (1-based, negative from the end) into one, keeping the
batch dim 1 by default: [N, C, H, W] -> [N, C*H*W].]=],
    example = [=[
local nn = ember.nn
print(nn.Flatten()(ember.zeros(32, 1, 28, 28)).shape[2])   -- 784]=],
  },

  -- ---- layers of convolutional networks (ember/nn/conv_layers.lua) -------------------
  {
    name = "ember.nn.Conv2d",
    also = class_also("ember.nn.Conv2d", {"ember.nn.Conv1d", "ember.nn.Conv3d", "ember.nn.Conv1d:init",
                      "ember.nn.Conv1d:forward", "ember.nn.Conv1d:extra_repr", "ember.nn.Conv3d:init",
                      "ember.nn.Conv3d:forward", "ember.nn.Conv3d:extra_repr"}),
    sig = "nn.Conv2d(in_channels, out_channels, kernel_size [, stride = 1 [, padding = 0\n"
       .. "          [, dilation = 1 [, groups = 1 [, bias = true [, padding_mode = \"zeros\"]]]]]]) -> module\n"
       .. "nn.Conv2d(in_channels, out_channels, kernel_size, {stride =, padding =, dilation =, groups =,\n"
       .. "          bias =, padding_mode =, dtype =, device =})\n"
       .. "nn.Conv1d(...), nn.Conv3d(...): the same for 1 and 3 spatial dims",
    doc = [=[
A convolution layer (ember.conv2d with its own weight and bias), PyTorch's arguments,
names, shapes and initialisation: weight [out, in / groups, kh, kw] ~ kaiming_uniform
with a = sqrt(5), bias [out] ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in / groups
* kh * kw. Sizes are a number (every spatial dim) or a list {kh, kw}. padding may be
"same" (stride 1) or "valid"; padding_mode "reflect", "replicate" or "circular" pads with
F.pad before an unpadded convolution. Input [N, C_in, H, W] or unbatched [C_in, H, W].
Errors name the layer and the shapes. tostring prints the arguments that differ from
the defaults, as PyTorch (lists as [3, 3]).]=],
    example = [=[
local nn = ember.nn
local conv = nn.Conv2d(1, 32, 3, {padding = 1})
print(conv(ember.randn(8, 1, 28, 28)).shape)   -- {8, 32, 28, 28}
print(nn.Conv1d(16, 33, 3, 2))                 -- stride 2
print(nn.Conv3d(2, 4, 3, {bias = false}).weight.shape)]=],
  },
  {
    name = "ember.nn.Conv2d:reset_parameters",
    also = {"ember.nn.Conv1d:reset_parameters", "ember.nn.Conv3d:reset_parameters",
            "ember.nn.ConvTranspose1d:reset_parameters", "ember.nn.ConvTranspose2d:reset_parameters",
            "ember.nn.ConvTranspose3d:reset_parameters"},
    sig = "conv:reset_parameters()",
    doc = [=[
Draws weight and bias again with PyTorch's default: kaiming_uniform_ with a = sqrt(5)
for the weight, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias (fan_in from the
weight's dims 2.. as nn.init.calculate_fan_in_and_fan_out gives it).]=],
    example = [=[
local conv = ember.nn.Conv2d(3, 8, 3)
conv:reset_parameters()
print(conv.bias:abs():max():item() <= 1 / math.sqrt(27))   -- true]=],
  },
  {
    name = "ember.nn.ConvTranspose2d",
    also = class_also("ember.nn.ConvTranspose2d", {"ember.nn.ConvTranspose1d", "ember.nn.ConvTranspose3d",
                      "ember.nn.ConvTranspose1d:init", "ember.nn.ConvTranspose1d:forward",
                      "ember.nn.ConvTranspose1d:extra_repr", "ember.nn.ConvTranspose3d:init",
                      "ember.nn.ConvTranspose3d:forward", "ember.nn.ConvTranspose3d:extra_repr"}),
    sig = "nn.ConvTranspose2d(in_channels, out_channels, kernel_size [, stride = 1 [, padding = 0\n"
       .. "    [, output_padding = 0 [, groups = 1 [, bias = true [, dilation = 1]]]]]]) -> module\n"
       .. "  (or the optional arguments in one options table); ConvTranspose1d, ConvTranspose3d alike\n"
       .. "convt(x [, output_size]) -> tensor",
    doc = [=[
A transposed convolution layer (ember.conv_transpose2d): weight [in, out / groups, kh,
kw], bias [out], initialised as PyTorch (fan_in = out / groups * kh * kw). forward may
take output_size (the spatial sizes, or all sizes) to choose the output_padding that
gives it, as PyTorch's; an unreachable size is an error naming the valid range.]=],
    example = [=[
local nn = ember.nn
local up = nn.ConvTranspose2d(8, 4, 3, {stride = 2, padding = 1})
local x = ember.randn(1, 8, 7, 7)
print(up(x).shape)             -- {1, 4, 13, 13}
print(up(x, {14, 14}).shape)   -- {1, 4, 14, 14}]=],
  },
  {
    name = "ember.nn.MaxPool2d",
    also = class_also("ember.nn.MaxPool2d", {"ember.nn.MaxPool1d", "ember.nn.MaxPool3d",
                      "ember.nn.MaxPool1d:init", "ember.nn.MaxPool1d:forward", "ember.nn.MaxPool1d:extra_repr",
                      "ember.nn.MaxPool3d:init", "ember.nn.MaxPool3d:forward", "ember.nn.MaxPool3d:extra_repr"}),
    sig = "nn.MaxPool2d(kernel_size [, stride = kernel_size [, padding = 0 [, dilation = 1\n"
       .. "    [, return_indices = false [, ceil_mode = false]]]]]) -> module\n"
       .. "  (or the optional arguments in one options table); MaxPool1d, MaxPool3d alike",
    doc = [=[
ember.max_pool2d as a layer. With return_indices the layer returns the maxima and their
1-based positions in each input plane (what nn.MaxUnpool2d takes).]=],
    example = [=[
local nn = ember.nn
print(nn.MaxPool2d(2)(ember.randn(1, 3, 8, 8)).shape)                  -- {1, 3, 4, 4}
print(nn.MaxPool1d(3, {stride = 2, ceil_mode = true}))]=],
  },
  {
    name = "ember.nn.AvgPool2d",
    also = class_also("ember.nn.AvgPool2d", {"ember.nn.AvgPool1d", "ember.nn.AvgPool3d",
                      "ember.nn.AvgPool1d:init", "ember.nn.AvgPool1d:forward", "ember.nn.AvgPool1d:extra_repr",
                      "ember.nn.AvgPool3d:init", "ember.nn.AvgPool3d:forward", "ember.nn.AvgPool3d:extra_repr"}),
    sig = "nn.AvgPool2d(kernel_size [, stride = kernel_size [, padding = 0 [, ceil_mode = false\n"
       .. "    [, count_include_pad = true [, divisor_override]]]]]) -> module\n"
       .. "  (or one options table); AvgPool1d (no divisor_override), AvgPool3d alike",
    doc = "ember.avg_pool2d as a layer: the mean over each window.",
    example = [=[
local nn = ember.nn
print(nn.AvgPool2d(2)(ember.ones(1, 1, 4, 4)))   -- all ones, [1, 1, 2, 2]]=],
  },
  {
    name = "ember.nn.AdaptiveAvgPool2d",
    also = class_also("ember.nn.AdaptiveAvgPool2d", {"ember.nn.AdaptiveAvgPool1d", "ember.nn.AdaptiveAvgPool3d",
                      "ember.nn.AdaptiveAvgPool1d:init", "ember.nn.AdaptiveAvgPool1d:forward",
                      "ember.nn.AdaptiveAvgPool1d:extra_repr", "ember.nn.AdaptiveAvgPool3d:init",
                      "ember.nn.AdaptiveAvgPool3d:forward", "ember.nn.AdaptiveAvgPool3d:extra_repr"}),
    sig = "nn.AdaptiveAvgPool2d(output_size) -> module; AdaptiveAvgPool1d, AdaptiveAvgPool3d alike",
    doc = [=[
Mean pooling to a fixed output size, whatever the input's (ember.adaptive_avg_pool2d).
output_size is a number or a list; a nil entry keeps that input size ({nil, 7}).]=],
    example = [=[
local nn = ember.nn
print(nn.AdaptiveAvgPool2d(1)(ember.randn(2, 64, 7, 7)).shape)   -- {2, 64, 1, 1}]=],
  },
  {
    name = "ember.nn.AdaptiveMaxPool2d",
    also = class_also("ember.nn.AdaptiveMaxPool2d", {"ember.nn.AdaptiveMaxPool1d",
                      "ember.nn.AdaptiveMaxPool1d:init", "ember.nn.AdaptiveMaxPool1d:forward",
                      "ember.nn.AdaptiveMaxPool1d:extra_repr"}),
    sig = "nn.AdaptiveMaxPool2d(output_size [, return_indices = false]) -> module; AdaptiveMaxPool1d alike",
    doc = "Max pooling to a fixed output size (ember.adaptive_max_pool2d); indices are 1-based.",
    example = [=[
local nn = ember.nn
local y, idx = nn.AdaptiveMaxPool2d({2, 3}, true)(ember.randn(1, 3, 9, 9))
print(y.shape, idx.dtype)   -- {1, 3, 2, 3} int64]=],
  },
  {
    name = "ember.nn.MaxUnpool2d",
    also = class_also("ember.nn.MaxUnpool2d"),
    sig = "nn.MaxUnpool2d(kernel_size [, stride = kernel_size [, padding = 0]]) -> module\n"
       .. "unpool(x, indices [, output_size]) -> tensor",
    doc = "F.max_unpool2d as a layer: the partial inverse of nn.MaxPool2d with return_indices.",
    example = [=[
local nn = ember.nn
local x = ember.randn(1, 1, 4, 4)
local y, idx = nn.MaxPool2d(2, {return_indices = true})(x)
print(nn.MaxUnpool2d(2)(y, idx).shape)   -- {1, 1, 4, 4}: the maxima in place, zeros elsewhere]=],
  },
  {
    name = "ember.nn.BatchNorm2d",
    also = class_also("ember.nn.BatchNorm2d", {"ember.nn.BatchNorm1d", "ember.nn.BatchNorm3d",
                      "ember.nn.BatchNorm1d:init", "ember.nn.BatchNorm1d:forward", "ember.nn.BatchNorm1d:extra_repr",
                      "ember.nn.BatchNorm3d:init", "ember.nn.BatchNorm3d:forward", "ember.nn.BatchNorm3d:extra_repr"}),
    sig = "nn.BatchNorm2d(num_features [, eps = 1e-5 [, momentum = 0.1 [, affine = true\n"
       .. "    [, track_running_stats = true]]]]) -> module\n"
       .. "nn.BatchNorm2d(num_features, {eps =, momentum =, affine =, track_running_stats =, dtype =, device =})\n"
       .. "nn.BatchNorm1d(...) for [N, C] or [N, C, L], nn.BatchNorm3d(...) for [N, C, D, H, W]",
    doc = [=[
Batch normalisation per channel (ember.batch_norm), PyTorch's behaviour: in training
mode it normalises with the batch's mean and biased variance and updates the buffers
running_mean (0) and running_var (1, from the unbiased variance) with momentum, and adds
1 to num_batches_tracked (int64); after eval() it normalises with the running stats.
momentum = nil (positionally) or false (in the options table) is PyTorch's None: the
cumulative average, factor 1 / num_batches_tracked. With track_running_stats = false it
always uses the batch's statistics and has no buffers. weight 1 and bias 0 (affine).
Buffers are in state_dict with PyTorch's names. BatchNorm2d wants a 4-D input.]=],
    example = [=[
local nn = ember.nn
local bn = nn.BatchNorm2d(3)
local y = bn(ember.randn(8, 3, 4, 4) * 2 + 1)
print(bn.running_mean, bn.num_batches_tracked:item())   -- moved 10% towards the batch mean, 1
bn:eval()
print(bn(ember.randn(2, 3, 4, 4)).shape)]=],
  },
  {
    name = "ember.nn.BatchNorm2d:reset_running_stats",
    also = {"ember.nn.BatchNorm1d:reset_running_stats", "ember.nn.BatchNorm3d:reset_running_stats",
            "ember.nn.InstanceNorm1d:reset_running_stats", "ember.nn.InstanceNorm2d:reset_running_stats"},
    sig = "bn:reset_running_stats()",
    doc = "running_mean 0, running_var 1, num_batches_tracked 0 (when tracked).",
    example = [=[
local bn = ember.nn.BatchNorm1d(2)
bn(ember.randn(4, 2) + 3)
bn:reset_running_stats()
print(bn.running_mean)   -- [0, 0]]=],
  },
  {
    name = "ember.nn.BatchNorm2d:reset_parameters",
    also = {"ember.nn.BatchNorm1d:reset_parameters", "ember.nn.BatchNorm3d:reset_parameters",
            "ember.nn.InstanceNorm1d:reset_parameters", "ember.nn.InstanceNorm2d:reset_parameters"},
    sig = "bn:reset_parameters()",
    doc = "reset_running_stats(), then weight 1 and bias 0 (when affine).",
    example = [=[
local bn = ember.nn.BatchNorm2d(2)
bn:reset_parameters()
print(bn.weight)   -- [1, 1]]=],
  },
  {
    name = "ember.nn.InstanceNorm2d",
    also = class_also("ember.nn.InstanceNorm2d", {"ember.nn.InstanceNorm1d", "ember.nn.InstanceNorm1d:init",
                      "ember.nn.InstanceNorm1d:forward", "ember.nn.InstanceNorm1d:extra_repr"}),
    sig = "nn.InstanceNorm2d(num_features [, eps = 1e-5 [, momentum = 0.1 [, affine = false\n"
       .. "    [, track_running_stats = false]]]]) -> module (or one options table)\n"
       .. "nn.InstanceNorm1d(...) for [N, C, L] or [C, L]",
    doc = [=[
F.instance_norm as a layer: each sample's channel normalised on its own. Input [N, C, H,
W] or unbatched [C, H, W]. With track_running_stats it keeps running stats (averaged
over the batch) and uses them after eval(), as PyTorch.]=],
    example = [=[
local nn = ember.nn
local y = nn.InstanceNorm2d(3)(ember.randn(2, 3, 8, 8) * 5)
print(y[1][1]:std():item())   -- about 1]=],
  },
  {
    name = "ember.nn.GroupNorm",
    also = class_also("ember.nn.GroupNorm", {"ember.nn.GroupNorm:reset_parameters"}),
    sig = "nn.GroupNorm(num_groups, num_channels [, eps = 1e-5 [, affine = true]]) -> module\n"
       .. "  (or {eps =, affine =, dtype =, device =})",
    doc = [=[
ember.group_norm as a layer: the channels of [N, C, ...] fall into num_groups groups,
each normalised per sample, then * weight + bias (weight 1, bias 0, shape [C]).
num_channels must be divisible by num_groups. reset_parameters() sets weight 1, bias 0.]=],
    example = [=[
local nn = ember.nn
print(nn.GroupNorm(4, 32)(ember.randn(2, 32, 8, 8)).shape)   -- {2, 32, 8, 8}]=],
  },
  {
    name = "ember.nn.Dropout2d",
    also = class_also("ember.nn.Dropout2d"),
    sig = "nn.Dropout2d([p = 0.5]) -> module",
    doc = [=[
F.dropout2d as a layer: in training, zeroes whole channels of [N, C, H, W] with
probability p (one draw per sample and channel) and scales the rest by 1/(1-p); the
identity after eval().]=],
    example = [=[
local nn = ember.nn
ember.manual_seed(3)
local y = nn.Dropout2d(0.5)(ember.ones(1, 4, 2, 2))
print(y:sum({3, 4}))   -- each channel 0 or 8]=],
  },
  {
    name = "ember.nn.Upsample",
    also = class_also("ember.nn.Upsample"),
    sig = "nn.Upsample({size =, scale_factor =, mode = \"nearest\", align_corners =,\n"
       .. "             recompute_scale_factor =}) -> module\n"
       .. "nn.Upsample(size, scale_factor, mode, align_corners)",
    doc = "F.interpolate as a layer, with the arguments fixed at construction.",
    example = [=[
local nn = ember.nn
local up = nn.Upsample({scale_factor = 2, mode = "bilinear"})
print(up(ember.randn(1, 3, 4, 4)).shape)   -- {1, 3, 8, 8}]=],
  },
  {
    name = "ember.nn.Unflatten",
    also = class_also("ember.nn.Unflatten"),
    sig = "nn.Unflatten(dim, unflattened_size) -> module",
    doc = [=[
Splits dim (1-based, negative from the end) into the sizes of the list unflattened_size,
whose product must be that dim's size (one entry may be -1). The inverse of nn.Flatten.]=],
    example = [=[
local nn = ember.nn
print(nn.Unflatten(2, {2, 5})(ember.randn(3, 10)).shape)   -- {3, 2, 5}]=],
  },

  -- ---- further layers (ember/nn/more_layers.lua) --------------------------------------
  {
    name = "ember.nn.ZeroPad2d",
    also = class_also("ember.nn.ZeroPad2d", {"ember.nn.ZeroPad1d", "ember.nn.ZeroPad3d", "ember.nn.ConstantPad1d",
      "ember.nn.ConstantPad2d", "ember.nn.ConstantPad3d", "ember.nn.ReflectionPad1d", "ember.nn.ReflectionPad2d",
      "ember.nn.ReflectionPad3d", "ember.nn.ReplicationPad1d", "ember.nn.ReplicationPad2d",
      "ember.nn.ReplicationPad3d", "ember.nn.CircularPad1d", "ember.nn.CircularPad2d", "ember.nn.CircularPad3d"}),
    sig = "nn.ZeroPad1d(padding), nn.ZeroPad2d(padding), nn.ZeroPad3d(padding) -> module\n"
       .. "nn.ConstantPad1d/2d/3d(padding, value) -> module\n"
       .. "nn.ReflectionPad1d/2d/3d(padding), nn.ReplicationPad1d/2d/3d(padding),\n"
       .. "nn.CircularPad1d/2d/3d(padding) -> module",
    doc = [=[
F.pad as layers: ZeroPad and ConstantPad pad with 0 or value ("constant"), ReflectionPad
mirrors without the edge ("reflect"), ReplicationPad repeats the edge ("replicate"),
CircularPad wraps around ("circular"). padding is an integer (every side of the last
1, 2 or 3 dims) or a list of 2, 4 or 6 integers in F.pad's order, the last dim first:
{left, right[, top, bottom[, front, back]]}; negative amounts crop. The reflect,
replicate and circular layers take [N, C, ...] or unbatched [C, ...] inputs with 1, 2 or
3 spatial dims; ZeroPad and ConstantPad pad the last dims of any input, as PyTorch's.
tostring shows the padding as the full list.
Like torch.nn.ZeroPad2d (and the others); a list must have exactly 2, 4 or 6 entries,
where PyTorch takes any length.]=],
    example = [=[
local nn = ember.nn
local x = ember.arange(1, 5, {dtype = "float32"}):reshape(1, 1, 4)
print(nn.ReflectionPad1d(2)(x))            -- 3 2 1 2 3 4 3 2
print(nn.ConstantPad1d({1, 0}, 9)(x))      -- 9 1 2 3 4
print(nn.ZeroPad2d({1, 1, 0, 1}))]=],
  },
  {
    name = "ember.nn.CosineSimilarity",
    also = class_also("ember.nn.CosineSimilarity"),
    sig = "nn.CosineSimilarity([dim = 2 [, eps = 1e-8]]) -> module\ncos(x1, x2) -> tensor",
    doc = [=[
F.cosine_similarity(x1, x2, dim, eps) as a layer. dim is 1-based: the default 2 is
PyTorch's dim=1. Like torch.nn.CosineSimilarity.]=],
    example = [=[
local nn = ember.nn
print(nn.CosineSimilarity()(ember.tensor({{1.0, 0.0}}), ember.tensor({{1.0, 1.0}})))   -- [0.7071]]=],
  },
  {
    name = "ember.nn.PairwiseDistance",
    also = class_also("ember.nn.PairwiseDistance"),
    sig = "nn.PairwiseDistance([p = 2 [, eps = 1e-6 [, keepdim = false]]]) -> module\ndist(x1, x2) -> tensor",
    doc = [=[
F.pairwise_distance(x1, x2, p, eps, keepdim) as a layer: ||x1 - x2 + eps||_p over the
last dim. The order p is kept in the field norm, as PyTorch's.
Like torch.nn.PairwiseDistance.]=],
    example = [=[
local nn = ember.nn
print(nn.PairwiseDistance(1)(ember.tensor({{0.0, 0.0}}), ember.tensor({{3.0, 4.0}})))   -- [7]]=],
  },
  {
    name = "ember.nn.Softmax2d",
    also = class_also("ember.nn.Softmax2d"),
    sig = "nn.Softmax2d() -> module",
    doc = [=[
Softmax over the channels of [N, C, H, W] or [C, H, W] (dim -3) at every position; other
ranks are an error. Like torch.nn.Softmax2d.]=],
    example = [=[
local nn = ember.nn
print(nn.Softmax2d()(ember.zeros(1, 2, 1, 1)):reshape(-1))   -- [0.5, 0.5]]=],
  },
  {
    name = "ember.nn.ChannelShuffle",
    also = class_also("ember.nn.ChannelShuffle"),
    sig = "nn.ChannelShuffle(groups) -> module",
    doc = "F.channel_shuffle(x, groups) as a layer. Like torch.nn.ChannelShuffle.",
    example = [=[
local nn = ember.nn
print(nn.ChannelShuffle(2)(ember.arange(4):reshape(1, 4, 1)):reshape(-1))   -- [0, 2, 1, 3]]=],
  },
  {
    name = "ember.nn.Unfold",
    also = class_also("ember.nn.Unfold"),
    sig = "nn.Unfold(kernel_size [, dilation = 1 [, padding = 0 [, stride = 1]]]) -> module\n"
       .. "  (or {dilation =, padding =, stride =})",
    doc = [=[
F.unfold as a layer (im2col): [N, C, H, W] -> [N, C * kh * kw, L]. The sizes are numbers
or lists of 2 and are shown as given. Like torch.nn.Unfold.]=],
    example = [=[
local nn = ember.nn
print(nn.Unfold(2, {stride = 2})(ember.randn(1, 3, 4, 4)).shape)   -- {1, 12, 4}]=],
  },
  {
    name = "ember.nn.Fold",
    also = class_also("ember.nn.Fold"),
    sig = "nn.Fold(output_size, kernel_size [, dilation = 1 [, padding = 0 [, stride = 1]]]) -> module",
    doc = [=[
F.fold as a layer (col2im, the adjoint of nn.Unfold): [N, C * kh * kw, L] -> [N, C,
output_size...], overlapping entries summed. Like torch.nn.Fold.]=],
    example = [=[
local nn = ember.nn
print(nn.Fold({3, 3}, 2)(ember.ones(1, 4, 4)))   -- how many 2x2 blocks cover each pixel]=],
  },
  {
    name = "ember.nn.UpsamplingNearest2d",
    also = {"ember.nn.UpsamplingNearest2d:init", "ember.nn.UpsamplingBilinear2d",
            "ember.nn.UpsamplingBilinear2d:init"},
    sig = "nn.UpsamplingNearest2d([size [, scale_factor]]) -> module\n"
       .. "nn.UpsamplingBilinear2d([size [, scale_factor]]) -> module   (or {size =, scale_factor =})",
    doc = [=[
nn.Upsample with mode "nearest", and with mode "bilinear" and align_corners = true (the
corner pixels line up). Give size or scale_factor. Like torch.nn.UpsamplingNearest2d and
torch.nn.UpsamplingBilinear2d (which PyTorch calls deprecated in favour of nn.Upsample).]=],
    example = [=[
local nn = ember.nn
local x = ember.tensor({{{{0.0, 1.0}}}})
print(nn.UpsamplingNearest2d(nil, 2)(x))          -- [[[[0, 0, 1, 1], [0, 0, 1, 1]]]]
print(nn.UpsamplingBilinear2d({1, 3})(x))         -- [[[[0, 0.5, 1]]]]]=],
  },
  {
    name = "ember.nn.Dropout1d",
    also = class_also("ember.nn.Dropout1d", {"ember.nn.Dropout3d", "ember.nn.Dropout3d:init",
                      "ember.nn.Dropout3d:forward", "ember.nn.Dropout3d:extra_repr"}),
    sig = "nn.Dropout1d([p = 0.5 [, inplace = false]]) -> module\nnn.Dropout3d([p = 0.5 [, inplace = false]]) -> module",
    doc = [=[
F.dropout1d and F.dropout3d as layers: in training, whole channels of [N, C, L] ([C, L])
or [N, C, D, H, W] ([C, D, H, W]) are zeroed with probability p and the rest scaled by
1/(1-p); the identity after eval(). Like torch.nn.Dropout1d and torch.nn.Dropout3d.]=],
    example = [=[
local nn = ember.nn
ember.manual_seed(4)
local d = nn.Dropout1d(0.5)
print(d(ember.ones(1, 4, 3)):sum(3))   -- each channel 0 or 6
d:eval()
print(d)]=],
  },
  {
    name = "ember.nn.AlphaDropout",
    also = class_also("ember.nn.AlphaDropout", {"ember.nn.FeatureAlphaDropout", "ember.nn.FeatureAlphaDropout:init",
                      "ember.nn.FeatureAlphaDropout:forward", "ember.nn.FeatureAlphaDropout:extra_repr"}),
    sig = "nn.AlphaDropout([p = 0.5 [, inplace = false]]) -> module\n"
       .. "nn.FeatureAlphaDropout([p = 0.5 [, inplace = false]]) -> module",
    doc = [=[
F.alpha_dropout and F.feature_alpha_dropout as layers, active in training mode only (the
identity after eval()), for self-normalising (SELU) networks. Like torch.nn.AlphaDropout
and torch.nn.FeatureAlphaDropout.]=],
    example = [=[
local nn = ember.nn
local d = nn.AlphaDropout(0.2)
print(d(ember.zeros(8)))   -- -1.2362 where dropped, 0.3090 elsewhere]=],
  },
  {
    name = "ember.nn.Bilinear",
    also = class_also("ember.nn.Bilinear", {"ember.nn.Bilinear:reset_parameters"}),
    sig = "nn.Bilinear(in1_features, in2_features, out_features [, bias = true]\n"
       .. "            [, {bias =, dtype =, device =}]) -> module\nbil(x1, x2) -> tensor",
    doc = [=[
y = x1^T W x2 + b, F.bilinear with weight [out, in1, in2] and bias [out], both drawn from
U(-1/sqrt(in1), 1/sqrt(in1)) as PyTorch (reset_parameters draws them again).
x1 [..., in1] and x2 [..., in2] share their leading dims. Like torch.nn.Bilinear.]=],
    example = [=[
local nn = ember.nn
local bil = nn.Bilinear(3, 4, 5)
print(bil(ember.randn(8, 3), ember.randn(8, 4)).shape)   -- {8, 5}
print(bil)]=],
  },
  {
    name = "ember.nn.InstanceNorm3d",
    also = {"ember.nn.InstanceNorm3d:init", "ember.nn.InstanceNorm3d:forward"},
    sig = "nn.InstanceNorm3d(num_features [, eps = 1e-5 [, momentum = 0.1 [, affine = false\n"
       .. "    [, track_running_stats = false]]]]) -> module (or one options table)",
    doc = [=[
nn.InstanceNorm2d for [N, C, D, H, W] or unbatched [C, D, H, W]: each sample's channel
normalised over D, H and W. Like torch.nn.InstanceNorm3d; with affine or
track_running_stats, a channel count other than num_features is an error.]=],
    example = [=[
local nn = ember.nn
local y = nn.InstanceNorm3d(2)(ember.randn(1, 2, 3, 3, 3) * 4)
print(y[1][2]:std():item())   -- about 1]=],
  },
  {
    name = "ember.nn.AdaptiveMaxPool3d",
    also = {"ember.nn.AdaptiveMaxPool3d:init", "ember.nn.AdaptiveMaxPool3d:forward"},
    sig = "nn.AdaptiveMaxPool3d(output_size [, return_indices = false]) -> module",
    doc = [=[
Max pooling to a fixed 3-D output size (F.adaptive_max_pool3d); a nil entry of
output_size keeps that input size; indices are 1-based. Like torch.nn.AdaptiveMaxPool3d.]=],
    example = [=[
local nn = ember.nn
print(nn.AdaptiveMaxPool3d({1, nil, 2})(ember.randn(1, 2, 4, 3, 6)).shape)   -- {1, 2, 1, 3, 2}]=],
  },
  {
    name = "ember.nn.MaxUnpool1d",
    also = class_also("ember.nn.MaxUnpool1d", {"ember.nn.MaxUnpool3d"}),
    sig = "nn.MaxUnpool1d(kernel_size [, stride = kernel_size [, padding = 0]]) -> module; MaxUnpool3d alike\n"
       .. "unpool(x, indices [, output_size]) -> tensor",
    doc = [=[
F.max_unpool1d and F.max_unpool3d as layers: the partial inverses of nn.MaxPool1d and
nn.MaxPool3d with return_indices (1-based indices). Like torch.nn.MaxUnpool1d and
torch.nn.MaxUnpool3d.]=],
    example = [=[
local nn = ember.nn
local y, idx = nn.MaxPool1d(2, {return_indices = true})(ember.tensor({{{1.0, 3.0, 2.0, 0.0}}}))
print(nn.MaxUnpool1d(2)(y, idx))   -- [[[0, 3, 2, 0]]]]=],
  },
  {
    name = "ember.nn.ParameterList",
    also = class_also("ember.nn.ParameterList", {"ember.nn.ParameterList:append", "ember.nn.ParameterList:extend"}),
    sig = "nn.ParameterList([tensors]) -> module\nlist:append(t) -> list; list:extend(tensors) -> list\n"
       .. "list[i], list[i] = t, #list, ipairs(list)",
    doc = [=[
Parameters held in a list and registered under PyTorch's names "0", "1", ..., so
parameters(), named_parameters() and state_dict() see them ("plist.0", ...). list[i] is
the i-th (1-based: list[1] is "0"; negative counts from the end), list[i] = t replaces
it, #list counts them. A leaf tensor with requires_grad is kept as it is (shared); another
tensor becomes nn.Parameter(t). No forward. Like torch.nn.ParameterList; it holds tensors
only, and has no slicing.]=],
    example = [=[
local nn = ember.nn
local pl = nn.ParameterList({ember.ones(2), ember.zeros(3)})
pl:append(ember.randn(4))
print(#pl, pl[3].shape)   -- 3 {4}
for name, p in pl:named_parameters() do print(name, p.shape) end]=],
  },
  {
    name = "ember.nn.ParameterDict",
    also = class_also("ember.nn.ParameterDict", {"ember.nn.ParameterDict:update", "ember.nn.ParameterDict:keys",
      "ember.nn.ParameterDict:values", "ember.nn.ParameterDict:items", "ember.nn.ParameterDict:contains",
      "ember.nn.ParameterDict:get", "ember.nn.ParameterDict:pop", "ember.nn.ParameterDict:clear"}),
    sig = "nn.ParameterDict([tensors]) -> module\n"
       .. "d:update(tensors), d:keys(), d:values(), d:items(), d:contains(k), d:get(k [, default]),\n"
       .. "d:pop(k), d:clear(); d[k], d[k] = t, d[k] = nil, #d, pairs(d)",
    doc = [=[
Parameters under string keys, registered under those names (state_dict "pdict.key").
tensors: a table name -> tensor (added in sorted key order, as PyTorch sorts a dict), a
list of {name, tensor} pairs (added in order) or a ParameterDict. A key naming a method
(keys, pop, ...) is refused. Tensors become parameters as in nn.ParameterList. keys(),
values() and items() follow insertion order. Like torch.nn.ParameterDict; it holds
tensors only (no popitem, setdefault, fromkeys, copy).]=],
    example = [=[
local nn = ember.nn
local d = nn.ParameterDict({scale = ember.ones(3), shift = ember.zeros(3)})
d.extra = ember.randn(2)
print(#d, table.concat(d:keys(), " "))   -- 3 scale shift extra
print(d)]=],
  },

  -- ---- layers of transformers (ember/nn/transformer.lua) ----------------------------
  {
    name = "ember.nn.MultiheadAttention",
    also = class_also("ember.nn.MultiheadAttention"),
    sig = "nn.MultiheadAttention(embed_dim, num_heads [, dropout = 0 [, bias = true\n"
       .. "    [, add_bias_kv = false [, add_zero_attn = false [, kdim = embed_dim [, vdim = embed_dim\n"
       .. "    [, batch_first = false]]]]]]]) -> module   (or the options in a table, with dtype=, device=)\n"
       .. "mha(query, key, value [, key_padding_mask [, need_weights = true [, attn_mask\n"
       .. "    [, average_attn_weights = true [, is_causal = false]]]]]) -> attn_output, attn_weights\n"
       .. "mha(query, key, value, {key_padding_mask =, need_weights =, attn_mask =, ...})",
    doc = [=[
Multi-head attention (torch.nn.MultiheadAttention), PyTorch's parameters so state_dicts
load: in_proj_weight [3E, E] (xavier_uniform_), in_proj_bias [3E] (zeros), out_proj (a
Linear E -> E, bias zeros); q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight
[E, vdim] instead of in_proj_weight when kdim or vdim differ from E; bias_k, bias_v
[1, 1, E] with add_bias_kv. embed_dim must be divisible by num_heads.
query [L, N, E], key [S, N, kdim], value [S, N, vdim] ([N, L, E], ... with batch_first;
[L, E], ... unbatched) -> attn_output like query, and attn_weights [N, L, S] (averaged
over the heads) or [N, num_heads, L, S] (average_attn_weights = false); nil when
need_weights is false, which takes the fused F.scaled_dot_product_attention path.
Masks: attn_mask [L, S] or [N * num_heads, L, S]; key_padding_mask [N, S] ([S]
unbatched). A bool mask is true where attention is NOT allowed (PyTorch's convention
here; F.scaled_dot_product_attention's bool mask is the opposite); a float mask is
added to the scores. is_causal without attn_mask applies the causal mask (key j hidden
from query i when j > i); with attn_mask it is a hint that attn_mask is causal.
Dropout (training mode) applies to the attention weights. Bad shapes are errors naming
the expected shape.]=],
    example = [=[
local nn = ember.nn
local mha = nn.MultiheadAttention(16, 4, {batch_first = true})
local x = ember.randn(2, 5, 16)
local pad = ember.tensor({{false, false, false, true, true}, {false, false, false, false, false}})
local out, w = mha(x, x, x, {key_padding_mask = pad})
print(out.shape, w.shape)   -- {2, 5, 16} {2, 5, 5}
local y = mha(x, x, x, {need_weights = false, is_causal = true})]=],
  },
  {
    name = "ember.nn.MultiheadAttention:reset_parameters",
    sig = "mha:reset_parameters()",
    doc = [=[
Draws the parameters again as PyTorch does: xavier_uniform_ projection weights,
in_proj_bias and out_proj.bias zero, xavier_normal_ bias_k and bias_v, out_proj.weight
as a Linear's (kaiming_uniform_ with a = sqrt(5)).]=],
    example = [=[
local mha = ember.nn.MultiheadAttention(8, 2)
mha:reset_parameters()
print(mha.in_proj_bias:abs():sum():item())   -- 0]=],
  },
  {
    name = "ember.nn.TransformerEncoderLayer",
    also = class_also("ember.nn.TransformerEncoderLayer"),
    sig = "nn.TransformerEncoderLayer(d_model, nhead [, dim_feedforward = 2048 [, dropout = 0.1\n"
       .. "    [, activation = \"relu\" [, layer_norm_eps = 1e-5 [, batch_first = false\n"
       .. "    [, norm_first = false [, bias = true]]]]]]]) -> module   (or the options in a table,\n"
       .. "    with dtype=, device=)\n"
       .. "layer(src [, src_mask [, src_key_padding_mask [, is_causal = false]]]) -> output\n"
       .. "layer(src, {src_mask =, src_key_padding_mask =, is_causal =})",
    doc = [=[
A transformer encoder block (torch.nn.TransformerEncoderLayer): self-attention and a
feed-forward block linear2(dropout(activation(linear1(x)))), each with dropout, a
residual connection and a LayerNorm: x = norm1(x + sa(x)); x = norm2(x + ff(x)), or
with norm_first x = x + sa(norm1(x)); x = x + ff(norm2(x)). PyTorch's submodules
(self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2) and parameter
names. activation: "relu", "gelu", a function or a module. src [T, N, d_model]
([N, T, d_model] with batch_first, or [T, d_model]); the masks as for
nn.MultiheadAttention (bool: true = not allowed). Returns src's shape.]=],
    example = [=[
local nn = ember.nn
local layer = nn.TransformerEncoderLayer(16, 4, {dim_feedforward = 32, batch_first = true,
                                                norm_first = true, activation = "gelu"})
local y = layer(ember.randn(2, 7, 16), {is_causal = true})
print(y.shape)   -- {2, 7, 16}]=],
  },
  {
    name = "ember.nn.TransformerDecoderLayer",
    also = class_also("ember.nn.TransformerDecoderLayer"),
    sig = "nn.TransformerDecoderLayer(d_model, nhead [, dim_feedforward = 2048 [, dropout = 0.1\n"
       .. "    [, activation = \"relu\" [, layer_norm_eps = 1e-5 [, batch_first = false\n"
       .. "    [, norm_first = false [, bias = true]]]]]]]) -> module   (or the options in a table)\n"
       .. "layer(tgt, memory [, tgt_mask [, memory_mask [, tgt_key_padding_mask\n"
       .. "    [, memory_key_padding_mask [, tgt_is_causal [, memory_is_causal]]]]]]) -> output\n"
       .. "layer(tgt, memory, {tgt_mask =, memory_mask =, ...})",
    doc = [=[
A transformer decoder block (torch.nn.TransformerDecoderLayer): self-attention over tgt,
attention from tgt to memory (multihead_attn), then the feed-forward block, each with
dropout, a residual connection and a LayerNorm (norm1, norm2, norm3; before each block
with norm_first). Submodules self_attn, multihead_attn, linear1, dropout, linear2,
norm1..3, dropout1..3, as PyTorch. tgt [T, N, d_model], memory [S, N, d_model] (batch
first with batch_first). Returns tgt's shape.]=],
    example = [=[
local nn = ember.nn
local layer = nn.TransformerDecoderLayer(16, 4, {dim_feedforward = 32})
local y = layer(ember.randn(5, 2, 16), ember.randn(9, 2, 16), {tgt_is_causal = true})
print(y.shape)   -- {5, 2, 16}]=],
  },
  {
    name = "ember.nn.TransformerEncoder",
    also = {"ember.nn.TransformerEncoder:init", "ember.nn.TransformerEncoder:forward"},
    sig = "nn.TransformerEncoder(encoder_layer, num_layers [, norm]) -> module\n"
       .. "enc(src [, mask [, src_key_padding_mask [, is_causal]]]) -> output\n"
       .. "enc(src, {mask =, src_key_padding_mask =, is_causal =})",
    doc = [=[
num_layers deep copies of encoder_layer (independent parameters, starting equal)
applied in turn, then norm (a module, e.g. nn.LayerNorm) when given. The copies are the
children layers.1, layers.2, ... (PyTorch: layers.0, ...: rename the keys when loading
a PyTorch state_dict).]=],
    example = [=[
local nn = ember.nn
local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, {dim_feedforward = 32}), 2,
                                  nn.LayerNorm(16))
print(enc(ember.randn(7, 3, 16)).shape, #enc.layers)   -- {7, 3, 16} 2]=],
  },
  {
    name = "ember.nn.TransformerDecoder",
    also = {"ember.nn.TransformerDecoder:init", "ember.nn.TransformerDecoder:forward"},
    sig = "nn.TransformerDecoder(decoder_layer, num_layers [, norm]) -> module\n"
       .. "dec(tgt, memory [, tgt_mask [, memory_mask [, tgt_key_padding_mask\n"
       .. "    [, memory_key_padding_mask [, tgt_is_causal [, memory_is_causal]]]]]]) -> output\n"
       .. "dec(tgt, memory, {tgt_mask =, ...})",
    doc = [=[
num_layers deep copies of decoder_layer applied in turn (children layers.1, ...), each
given the same memory and masks, then norm when given.]=],
    example = [=[
local nn = ember.nn
local dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(16, 4, {dim_feedforward = 32}), 2)
print(dec(ember.randn(5, 2, 16), ember.randn(9, 2, 16)).shape)   -- {5, 2, 16}]=],
  },
  {
    name = "ember.nn.Transformer",
    also = {"ember.nn.Transformer:init", "ember.nn.Transformer:forward"},
    sig = "nn.Transformer([d_model = 512 [, nhead = 8 [, num_encoder_layers = 6\n"
       .. "    [, num_decoder_layers = 6 [, dim_feedforward = 2048 [, dropout = 0.1\n"
       .. "    [, activation = \"relu\" [, custom_encoder [, custom_decoder [, layer_norm_eps = 1e-5\n"
       .. "    [, batch_first = false [, norm_first = false [, bias = true]]]]]]]]]]]]])\n"
       .. "    -> module   (or the options in a table)\n"
       .. "model(src, tgt [, src_mask [, tgt_mask [, memory_mask [, src_key_padding_mask\n"
       .. "    [, tgt_key_padding_mask [, memory_key_padding_mask]]]]]]) -> output\n"
       .. "model(src, tgt, {src_mask =, tgt_mask =, ..., src_is_causal =, tgt_is_causal =})",
    doc = [=[
The encoder-decoder transformer (torch.nn.Transformer): encoder, a TransformerEncoder
with a final LayerNorm, and decoder, a TransformerDecoder with one (or custom_encoder /
custom_decoder). Every parameter matrix starts xavier_uniform_, as in PyTorch. src
[S, N, d_model], tgt [T, N, d_model] (batch first with batch_first) -> [T, N, d_model].]=],
    example = [=[
local nn = ember.nn
local model = nn.Transformer({d_model = 16, nhead = 2, num_encoder_layers = 1,
                              num_decoder_layers = 1, dim_feedforward = 32})
local mask = nn.Transformer.generate_square_subsequent_mask(4)
print(model(ember.randn(6, 2, 16), ember.randn(4, 2, 16), {tgt_mask = mask}).shape)]=],
  },
  {
    name = "ember.nn.Transformer:generate_square_subsequent_mask",
    also = {"ember.nn.Transformer.generate_square_subsequent_mask"},
    sig = "nn.Transformer.generate_square_subsequent_mask(sz [, {dtype =, device =}]) -> tensor [sz, sz]",
    doc = [=[
The causal mask as a float tensor (the default dtype unless given): -inf above the
diagonal (position j hidden from position i when j > i), 0 on and below it. A plain
function: model:generate_square_subsequent_mask(sz) works too.]=],
    example = [=[
print(ember.nn.Transformer.generate_square_subsequent_mask(3))]=],
  },

  -- ---- activations -----------------------------------------------------------------
  {
    name = "ember.nn.ReLU",
    also = {"ember.nn.ReLU:forward"},
    sig = "nn.ReLU() -> module",
    doc = "max(x, 0) elementwise (Tensor:relu as a module).",
    example = [=[
local nn = ember.nn
print(nn.ReLU()(ember.tensor({-1.0, 2.0})))   -- [0, 2]]=],
  },
  {
    name = "ember.nn.SiLU",
    also = {"ember.nn.SiLU:forward"},
    sig = "nn.SiLU() -> module",
    doc = "x * sigmoid(x) elementwise (also called swish; Tensor:silu as a module).",
    example = [=[
local nn = ember.nn
print(nn.SiLU()(ember.tensor({-1.0, 0.0, 1.0})))]=],
  },
  {
    name = "ember.nn.Tanh",
    also = {"ember.nn.Tanh:forward"},
    sig = "nn.Tanh() -> module",
    doc = "tanh(x) elementwise.",
    example = [=[
local nn = ember.nn
print(nn.Tanh()(ember.tensor({0.0, 1.0})))   -- [0, 0.7616]]=],
  },
  {
    name = "ember.nn.Sigmoid",
    also = {"ember.nn.Sigmoid:forward"},
    sig = "nn.Sigmoid() -> module",
    doc = "1 / (1 + exp(-x)) elementwise.",
    example = [=[
local nn = ember.nn
print(nn.Sigmoid()(ember.tensor({0.0})))   -- [0.5]]=],
  },
  {
    name = "ember.nn.GELU",
    also = class_also("ember.nn.GELU"),
    sig = "nn.GELU([{approximate = \"none\"}]) -> module",
    doc = [=[
x * Phi(x) elementwise, Phi the standard normal CDF; approximate = "tanh" uses the tanh
formula. Any other approximate is an error.]=],
    example = [=[
local nn = ember.nn
local x = ember.tensor({-1.0, 0.0, 1.0})
print(nn.GELU()(x), nn.GELU({approximate = "tanh"})(x))]=],
  },
  {
    name = "ember.nn.Softmax",
    also = class_also("ember.nn.Softmax"),
    sig = "nn.Softmax(dim) -> module",
    doc = [=[
exp(x) / sum(exp(x)) along dim (1-based, negative from the end; required, an integer).]=],
    example = [=[
local nn = ember.nn
print(nn.Softmax(-1)(ember.tensor({{1.0, 1.0}})))   -- [[0.5, 0.5]]]=],
  },
  {
    name = "ember.nn.LogSoftmax",
    also = class_also("ember.nn.LogSoftmax"),
    sig = "nn.LogSoftmax(dim) -> module",
    doc = "log(softmax(x)) along dim (1-based, negative from the end), computed stably.",
    example = [=[
local nn = ember.nn
local logp = nn.LogSoftmax(2)(ember.randn(3, 5))
print(logp:exp():sum(2))   -- ones]=],
  },

  -- ---- losses ----------------------------------------------------------------------
  {
    name = "ember.nn.MSELoss",
    also = class_also("ember.nn.MSELoss"),
    sig = "nn.MSELoss([{reduction = \"mean\"}]) -> module\nloss_fn(input, target) -> tensor",
    doc = [=[
Mean squared error (input - target)^2, averaged ("mean"), summed ("sum") or kept
elementwise ("none"). input and target must have the same shape: unlike PyTorch, a shape
difference is an error instead of a broadcast. See ember.nn.functional.mse_loss.]=],
    example = [=[
local nn = ember.nn
local loss_fn = nn.MSELoss()
print(loss_fn(ember.tensor({1.0, 2.0}), ember.tensor({1.0, 4.0})))   -- 2]=],
  },
  {
    name = "ember.nn.CrossEntropyLoss",
    also = class_also("ember.nn.CrossEntropyLoss"),
    sig = "nn.CrossEntropyLoss([{weight =, ignore_index = -100, label_smoothing = 0,\n"
       .. "                     reduction = \"mean\"}]) -> module\nloss_fn(logits, target) -> tensor",
    doc = [=[
log_softmax and negative log-likelihood in one numerically stable step. logits [N, C]
(or [C], or [N, C, d1, ...]); target: 1-based class indices (int64 [N]) or class
probabilities (float, logits' shape). weight [C] weighs the classes; targets equal to
ignore_index are left out; label_smoothing mixes in the uniform distribution.
A weight tensor is kept as a buffer, so it follows module:to(). Unknown options are
errors. See ember.nn.functional.cross_entropy.]=],
    example = [=[
local nn = ember.nn
local loss_fn = nn.CrossEntropyLoss({label_smoothing = 0.1})
local logits = ember.randn(4, 3, {requires_grad = true})
local loss = loss_fn(logits, ember.tensor({1, 3, 2, 3}))
loss:backward()
print(loss:item() > 0, logits.grad.shape[1])   -- true 4]=],
  },
  {
    name = "ember.nn.NLLLoss",
    also = class_also("ember.nn.NLLLoss"),
    sig = "nn.NLLLoss([{weight =, ignore_index = -100, reduction = \"mean\"}]) -> module\n"
       .. "loss_fn(logp, target) -> tensor",
    doc = [=[
Negative log-likelihood: -mean of logp[i, target[i]]. logp: log-probabilities [N, C]
(or [C]); target: 1-based class indices (int64) [N] (or a 0-d tensor). weight: [C]
per-class weights (the mean then divides by the targets' summed weights). Targets equal to
ignore_index are left out, also from the mean's count. See ember.nn.functional.nll_loss.]=],
    example = [=[
local nn = ember.nn
local logp = ember.tensor({{-1.0, -2.0}, {-0.5, -3.0}})
print(nn.NLLLoss()(logp, ember.tensor({2, 1})))   -- (2 + 0.5) / 2 = 1.25]=],
  },
  {
    name = "ember.nn.BCEWithLogitsLoss",
    also = class_also("ember.nn.BCEWithLogitsLoss"),
    sig = "nn.BCEWithLogitsLoss([{weight =, pos_weight =, reduction = \"mean\"}]) -> module\n"
       .. "loss_fn(logits, y) -> tensor",
    doc = [=[
Binary cross entropy on logits, computed stably (no sigmoid then log). y has the shape
of logits, with values in [0, 1]; a shape difference is an error (PyTorch broadcasts).
weight multiplies each element's loss; pos_weight weighs the positive term, per class
along the last dim. See ember.nn.functional.binary_cross_entropy_with_logits.]=],
    example = [=[
local nn = ember.nn
local loss_fn = nn.BCEWithLogitsLoss({pos_weight = ember.tensor({3.0})})
print(loss_fn(ember.tensor({0.0, 2.0}), ember.tensor({1.0, 0.0})))]=],
  },

  -- ---- ember.nn.functional ---------------------------------------------------------
  {
    name = "ember.nn.functional",
    sig = "local F = ember.nn.functional",
    doc = [=[
The computations behind the layers and losses as plain functions of tensors
(torch.nn.functional), recorded by autograd and runnable on any device:
  F.linear, F.dropout, F.layer_norm, F.embedding
  F.conv1d/2d/3d, F.conv_transpose1d/2d/3d, F.max_pool1d/2d/3d, F.avg_pool1d/2d/3d,
  F.adaptive_avg_pool1d/2d/3d, F.adaptive_max_pool1d/2d/3d, F.batch_norm, F.group_norm,
  F.instance_norm (the engine's ops, also ember.conv2d, ...), F.pad, F.interpolate,
  F.unfold, F.fold, F.dropout1d/2d/3d, F.alpha_dropout, F.feature_alpha_dropout,
  F.max_unpool1d/2d/3d, F.max_pool1d/2d/3d_with_indices, F.channel_shuffle, F.bilinear,
  F.upsample, F.upsample_nearest, F.upsample_bilinear, F.relu_, F.elu_, ... (in place)
  F.scaled_dot_product_attention
  F.mse_loss, F.cross_entropy, F.nll_loss, F.binary_cross_entropy_with_logits
  F.check_reduction
Activations are tensor methods and ember functions: t:relu(), ember.softmax(t, dim), ...
Class indices are 1-based; losses take {reduction = "mean" | "sum" | "none"}.]=],
    example = [=[
local F = ember.nn.functional
local logits = ember.randn(4, 3)
print(F.cross_entropy(logits, ember.tensor({1, 2, 3, 1}), {label_smoothing = 0.1}))]=],
  },
  {
    name = "ember.nn.functional.linear",
    sig = "F.linear(x, weight [, bias] [, {bias =, activation = \"none\"}]) -> tensor",
    doc = [=[
act(x @ weight^T + bias): x [..., in], weight [out, in], bias [out] (optional) ->
[..., out], all of one dtype. What nn.Linear computes. One fused op: on the GPU a
cuBLASLt GEMM whose epilogue adds the bias (and applies the activation), float16 and
bfloat16 accumulating in float32; its backward is two or three calls (the weight
gradient's GEMM also gives the bias gradient). Integer tensors and empty products
are computed from matmul and add.
activation = "gelu_tanh" fuses GELU's tanh form: the same numbers as
F.gelu(F.linear(x, weight, bias), {approximate = "tanh"}), with one kernel less
forward and the pre-activation kept for the backward. The option names the
activation and its approximation explicitly because that form is the one cuBLASLt
computes; PyTorch has no public fused equivalent (torch._addmm_activation's GELU is
the tanh form on the GPU and the exact one on the CPU, an inconsistency avoided here).
The exact GELU ("gelu") has no fused form: compose F.gelu(F.linear(...)).]=],
    example = [=[
local F = ember.nn.functional
local y = F.linear(ember.randn(2, 3), ember.randn(4, 3), ember.zeros(4))
print(y.shape[1], y.shape[2])   -- 2 4
local h = F.linear(ember.randn(2, 3), ember.randn(4, 3), ember.zeros(4), {activation = "gelu_tanh"})
print(h.shape[2])               -- 4]=],
  },
  {
    name = "ember.nn.functional.dropout",
    sig = "F.dropout(x [, p = 0.5 [, training = true]]) -> tensor",
    doc = [=[
Zeroes each element with probability p and scales the others by 1/(1-p); returns x
itself when training is false or p is 0, and zeros when p is 1. p must be in [0, 1].
Uses ember's generator (ember.manual_seed).]=],
    example = [=[
local F = ember.nn.functional
ember.manual_seed(1)
print(F.dropout(ember.ones(6), 0.5))          -- each element 0 or 2
print(F.dropout(ember.ones(3), 0.5, false))   -- unchanged]=],
  },
  {
    name = "ember.nn.functional.pad",
    sig = "F.pad(x, pad [, mode = \"constant\" [, value = 0]]) -> tensor\n"
       .. "F.pad(x, pad, {mode =, value =})",
    doc = [=[
Pads x as torch.nn.functional.pad: pad lists (before, after) pairs starting from the LAST
dim: {left, right} pads the last dim, {left, right, top, bottom} the last two, and so on.
Negative amounts crop. Modes: "constant" (fills value), "reflect" (mirrors without the
edge; amounts below the dim's size), "replicate" (repeats the edge), "circular" (wraps
around; amounts up to the dim's size). The non-constant modes pad the last 1-3 dims of a
batched [N, C, ...] or unbatched [C, ...] input. Composed of index_select, narrow and
cat, so autograd and every device work.]=],
    example = [=[
local F = ember.nn.functional
local x = ember.arange(1, 4, {dtype = "float32"}):reshape(1, 1, 3)
print(F.pad(x, {2, 1}, "reflect"))       -- 3 2 1 2 3 2
print(F.pad(x, {1, -1}, {value = 9}))    -- 9 1 2]=],
  },
  {
    name = "ember.nn.functional.interpolate",
    sig = "F.interpolate(x, {size =, scale_factor =, mode = \"nearest\", align_corners =,\n"
       .. "                 recompute_scale_factor =}) -> tensor\n"
       .. "F.interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor)",
    doc = [=[
Resizes the spatial dims of x [N, C, d1 (, d2 (, d3))] as PyTorch. Give size (a number
or one per spatial dim) or scale_factor (output = floor(input * factor); the factor
itself sets the sampling unless recompute_scale_factor). Modes: "nearest" (source
floor(dst * in / out), computed in float32 as PyTorch), "nearest-exact", "linear"
(3-D), "bilinear" (4-D), "trilinear" (5-D) with align_corners (default false: pixel
centres; true: the corner pixels line up). Composed of index_select and weights.]=],
    example = [=[
local F = ember.nn.functional
local x = ember.tensor({{{1.0, 2.0, 4.0}}})
print(F.interpolate(x, {size = 6}))                                    -- 1 1 2 2 4 4
print(F.interpolate(x, {size = 5, mode = "linear", align_corners = true}))   -- 1 1.5 2 3 4]=],
  },
  {
    name = "ember.nn.functional.unfold",
    sig = "F.unfold(x, kernel_size [, {dilation = 1, padding = 0, stride = 1}]) -> tensor\n"
       .. "F.unfold(x, kernel_size, dilation, padding, stride)",
    doc = [=[
im2col: the sliding kernel_size blocks of x [N, C, H, W] (or [C, H, W]) as columns,
[N, C * kh * kw, L] with L the number of blocks (row-major over the block grid); rows go
by channel, then kernel position row-major, as PyTorch. Zero padding. Built from
strided views (Tensor:unfold), so it is differentiable.]=],
    example = [=[
local F = ember.nn.functional
local x = ember.arange(16, {dtype = "float32"}):reshape(1, 1, 4, 4)
local cols = F.unfold(x, 2, {stride = 2})
print(cols.shape)   -- {1, 4, 4}
print(cols[1][1])   -- top-left of each block: 0 2 8 10]=],
  },
  {
    name = "ember.nn.functional.fold",
    sig = "F.fold(cols, output_size, kernel_size [, {dilation = 1, padding = 0, stride = 1}]) -> tensor\n"
       .. "F.fold(cols, output_size, kernel_size, dilation, padding, stride)",
    doc = [=[
col2im, the adjoint of F.unfold: cols [N, C * kh * kw, L] (or unbatched) -> [N, C, H, W]
with output_size {H, W}; entries that land on the same pixel add up. L must be the
number of blocks that output_size, kernel_size, dilation, padding and stride give.
fold(unfold(x)) is x times the number of blocks covering each pixel.]=],
    example = [=[
local F = ember.nn.functional
print(F.fold(ember.ones(1, 4, 9), {4, 4}, 2))   -- how many 2x2 blocks cover each pixel]=],
  },
  {
    name = "ember.nn.functional.dropout2d",
    sig = "F.dropout2d(x [, p = 0.5 [, training = true]]) -> tensor",
    doc = [=[
Channel dropout: for x [N, C, H, W] (or [N, C, L], as PyTorch 1.13), zeroes each whole
channel (n, c) with probability p and scales the others by 1/(1-p). x itself when
training is false or p is 0. Uses ember's generator.]=],
    example = [=[
local F = ember.nn.functional
ember.manual_seed(2)
print(F.dropout2d(ember.ones(1, 4, 1, 2), 0.5))   -- each channel all 0 or all 2]=],
  },
  {
    name = "ember.nn.functional.max_unpool2d",
    sig = "F.max_unpool2d(x, indices, kernel_size [, {stride = kernel_size, padding = 0,\n"
       .. "                 output_size =}]) -> tensor",
    doc = [=[
The partial inverse of max_pool2d: each value of x [N, C, h, w] goes to its 1-based
position in its output plane (indices as max_pool2d with return_indices gives them),
zeros elsewhere. The plane is (h - 1) * stride - 2 * padding + kernel_size per dim, or
output_size ({H, W} or {N, C, H, W}) within stride of that. An index outside the plane
is an error.]=],
    example = [=[
local F = ember.nn.functional
local x = ember.tensor({{{{1.0, 5.0}, {3.0, 2.0}}}})
local y, i = F.max_pool2d(x, 2, {return_indices = true})
print(F.max_unpool2d(y, i, 2))   -- {{0, 5}, {0, 0}}]=],
  },
  {
    name = "ember.nn.functional.instance_norm",
    sig = "F.instance_norm(x [, running_mean [, running_var [, weight [, bias\n"
       .. "                 [, use_input_stats = true [, momentum = 0.1 [, eps = 1e-5]]]]]]]) -> tensor\n"
       .. "F.instance_norm(x, {running_mean =, running_var =, weight =, bias =, use_input_stats =, ...})",
    doc = [=[
Normalises each (sample, channel) plane of x [N, C, ...] to mean 0 and biased variance
1, then * weight[c] + bias[c]. As PyTorch: ember.batch_norm on x seen as [1, N * C,
...]; given running stats are updated in place with the batch mean of the per-sample
updates; use_input_stats = false normalises with the running stats instead.]=],
    example = [=[
local F = ember.nn.functional
local y = F.instance_norm(ember.randn(2, 3, 4, 4) * 3 + 1)
print(y[2][3]:mean():item())   -- about 0]=],
  },
  {
    name = "ember.nn.functional.dropout1d",
    also = {"ember.nn.functional.dropout3d"},
    sig = "F.dropout1d(x [, p = 0.5 [, training = true [, inplace = false]]]) -> tensor\n"
       .. "F.dropout3d(x [, p = 0.5 [, training = true [, inplace = false]]]) -> tensor",
    doc = [=[
Channel dropout as F.dropout2d: dropout1d takes [N, C, L] or unbatched [C, L], dropout3d
[N, C, D, H, W] or unbatched [C, D, H, W]; each channel is zeroed with probability p, the
others scaled by 1/(1-p). x itself when training is false or p is 0. Uses ember's
generator. Like torch.nn.functional.dropout1d and dropout3d; dropout3d refuses the other
ranks, which PyTorch only warns about.]=],
    example = [=[
local F = ember.nn.functional
ember.manual_seed(2)
print(F.dropout1d(ember.ones(3, 2), 0.5))   -- each row all 0 or all 2]=],
  },
  {
    name = "ember.nn.functional.alpha_dropout",
    also = {"ember.nn.functional.feature_alpha_dropout"},
    sig = "F.alpha_dropout(x [, p = 0.5 [, training = false [, inplace = false]]]) -> tensor\n"
       .. "F.feature_alpha_dropout(x [, p = 0.5 [, training = false [, inplace = false]]]) -> tensor",
    doc = [=[
Dropout for self-normalising (SELU) networks, as PyTorch: each element (alpha_dropout)
or each channel of [N, C, ...] (feature_alpha_dropout) is dropped with probability p;
dropped entries become -alpha' a + b and kept ones a x + b, alpha' = 1.7581 (SELU's
scale * alpha), a = 1 / sqrt((alpha'^2 p + 1) (1 - p)), b = alpha' a p, which keeps mean 0
and variance 1. training defaults to false, as in PyTorch; p = 1 gives zeros.
Like torch.nn.functional.alpha_dropout and feature_alpha_dropout.]=],
    example = [=[
local F = ember.nn.functional
ember.manual_seed(3)
print(F.alpha_dropout(ember.zeros(6), 0.5, true))   -- -0.7792 or 0.7792]=],
  },
  {
    name = "ember.nn.functional.max_unpool1d",
    also = {"ember.nn.functional.max_unpool3d"},
    sig = "F.max_unpool1d(x, indices, kernel_size [, {stride = kernel_size, padding = 0,\n"
       .. "                 output_size =}]) -> tensor; F.max_unpool3d alike",
    doc = [=[
F.max_unpool2d for one and three spatial dims: each value of x goes to its 1-based
position in its output plane (L, or D x H x W; indices as max_pool1d / max_pool3d with
return_indices give them), zeros elsewhere. Like torch.nn.functional.max_unpool1d and
max_unpool3d.]=],
    example = [=[
local F = ember.nn.functional
local y, i = F.max_pool1d(ember.tensor({{{1.0, 5.0, 3.0, 2.0}}}), 2, {return_indices = true})
print(F.max_unpool1d(y, i, 2))   -- [[[0, 5, 3, 0]]]]=],
  },
  {
    name = "ember.nn.functional.channel_shuffle",
    also = {"ember.nn.functional.native_channel_shuffle"},
    sig = "F.channel_shuffle(x, groups) -> tensor\nF.native_channel_shuffle(x, groups) -> tensor",
    doc = [=[
Regroups the channels of x [N, C, *] (more than 2 dims; C divisible by groups): seen as
[N, groups, C / groups, *], the two channel dims swap, so output channel j * groups + i
is input channel i * (C / groups) + j (0-based), ShuffleNet's shuffle. Differentiable.
Like torch.nn.functional.channel_shuffle (native_channel_shuffle is the same here).]=],
    example = [=[
local F = ember.nn.functional
print(F.channel_shuffle(ember.arange(6):reshape(1, 6, 1), 3):reshape(-1))   -- [0, 2, 4, 1, 3, 5]]=],
  },
  {
    name = "ember.nn.functional.bilinear",
    sig = "F.bilinear(x1, x2, weight [, bias]) -> tensor",
    doc = [=[
y[..., o] = sum over i, j of x1[..., i] weight[o, i, j] x2[..., j] (+ bias[o]): x1
[..., in1] and x2 [..., in2] with the same leading dims (none for 1-D), weight [out,
in1, in2], bias [out], all one dtype. One matmul and a product.
Like torch.nn.functional.bilinear.]=],
    example = [=[
local F = ember.nn.functional
print(F.bilinear(ember.ones(2, 3), ember.ones(2, 4), ember.ones(5, 3, 4)).shape)   -- {2, 5}]=],
  },
  {
    name = "ember.nn.functional.max_pool2d_with_indices",
    also = {"ember.nn.functional.max_pool1d_with_indices", "ember.nn.functional.max_pool3d_with_indices",
            "ember.nn.functional.adaptive_max_pool1d_with_indices",
            "ember.nn.functional.adaptive_max_pool2d_with_indices",
            "ember.nn.functional.adaptive_max_pool3d_with_indices"},
    sig = "F.max_pool2d_with_indices(x, kernel_size [, stride [, padding [, dilation [, ceil_mode]]]])\n"
       .. "  -> values, indices   (1d and 3d alike)\n"
       .. "F.adaptive_max_pool2d_with_indices(x, output_size) -> values, indices   (1d and 3d alike)",
    doc = [=[
max_poolNd and adaptive_max_poolNd with return_indices = true, whatever that argument
says (as PyTorch's): the maxima and their 1-based positions in each input plane. Like
torch.nn.functional.max_pool2d_with_indices and the others.]=],
    example = [=[
local F = ember.nn.functional
local y, i = F.max_pool2d_with_indices(ember.tensor({{{{1.0, 5.0}, {3.0, 2.0}}}}), 2)
print(y:item(), i:item())   -- 5 2]=],
  },
  {
    name = "ember.nn.functional.upsample",
    also = {"ember.nn.functional.upsample_nearest", "ember.nn.functional.upsample_bilinear"},
    sig = "F.upsample(x [, size [, scale_factor [, mode = \"nearest\" [, align_corners]]]]) -> tensor\n"
       .. "F.upsample_nearest(x [, size [, scale_factor]]) -> tensor\n"
       .. "F.upsample_bilinear(x [, size [, scale_factor]]) -> tensor",
    doc = [=[
PyTorch's deprecated names of F.interpolate: upsample takes its arguments (no
recompute_scale_factor), upsample_nearest is mode "nearest", upsample_bilinear mode
"bilinear" with align_corners = true. Like torch.nn.functional.upsample and the others
(no deprecation warning here).]=],
    example = [=[
local F = ember.nn.functional
print(F.upsample_bilinear(ember.tensor({{{{0.0, 1.0}}}}), {1, 3}))   -- [[[[0, 0.5, 1]]]]]=],
  },
  {
    name = "ember.nn.functional.embedding",
    sig = "F.embedding(idx, weight [, {padding_idx =}]) -> tensor",
    doc = [=[
The rows of weight [num, dim] picked by idx, an integer tensor of 1-based row numbers of
any shape; the result has shape idx.shape .. {dim}. An index outside 1..num is an error
naming the range. The row padding_idx (1-based) gets no gradient.]=],
    example = [=[
local F = ember.nn.functional
local w = ember.arange(1, 7):reshape(3, 2)
print(F.embedding(ember.tensor({{1, 3}}), w))   -- [[[1, 2], [5, 6]]]]=],
  },
  {
    name = "ember.nn.functional.embedding_bag",
    sig = "F.embedding_bag(input, weight [, offsets] [, {mode =, per_sample_weights =, ...}]) -> [B, dim]",
    doc = [=[
Bags of weight's rows reduced: mode "mean" (the default), "sum" or "max". input is 1-D
with offsets, the 1-based positions where the bags start (offsets[1] is 1; PyTorch's
offsets plus one), or 2-D [B, N], a bag per row. per_sample_weights (input's shape)
scale the rows, mode "sum" only; entries equal to padding_idx (1-based) take no part and
a mean counts the others; an empty bag gives zeros. include_last_offset: offsets has
B + 1 entries and the last is the number of entries plus one. max's gradient goes to the
first row holding the maximum, per column, as PyTorch's. PyTorch's positional order:
(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
per_sample_weights, include_last_offset, padding_idx); max_norm, scale_grad_by_freq and
sparse are refused unless at their defaults.]=],
    example = [=[
local F = ember.nn.functional
local w = ember.arange(1, 13):reshape(6, 2):double()
print(F.embedding_bag(ember.tensor({1, 2, 4, 5, 4}), w, ember.tensor({1, 3}), {mode = "sum"}))
-- [[4, 6], [23, 26]]]=],
  },
  {
    name = "ember.nn.functional.mse_loss",
    sig = "F.mse_loss(input, target [, {reduction = \"mean\"}]) -> tensor",
    doc = [=[
Mean squared error. input and target must have the same shape (PyTorch broadcasts with
a warning; here it is an error, as a silent broadcast is usually a bug).]=],
    example = [=[
local F = ember.nn.functional
print(F.mse_loss(ember.tensor({1.0, 2.0}), ember.tensor({3.0, 2.0})))   -- 2
print(F.mse_loss(ember.tensor({1.0, 2.0}), ember.tensor({3.0, 2.0}), {reduction = "sum"}))]=],
  },
  {
    name = "ember.nn.functional.nll_loss",
    sig = "F.nll_loss(logp, target [, {weight =, ignore_index = -100, reduction = \"mean\"}]) -> tensor",
    doc = [=[
Negative log-likelihood. logp: log-probabilities [N, C] (or [C], or [N, C, d1, ...]);
target: 1-based class indices (int64) of shape [N] ([] or [N, d1, ...]). weight: [C]
per-class weights: each term is -weight[target] * logp[target] and the mean divides by the
summed weights of the targets not equal to ignore_index, as PyTorch. A class index out of
1..C is an error.]=],
    example = [=[
local F = ember.nn.functional
local logits = ember.randn(3, 4)
print(F.nll_loss(logits:log_softmax(2), ember.tensor({1, 4, 2})))]=],
  },
  {
    name = "ember.nn.functional.cross_entropy",
    sig = "F.cross_entropy(logits, target [, {weight =, ignore_index = -100,\n"
       .. "                label_smoothing = 0, reduction = \"mean\"}]) -> tensor",
    doc = [=[
Cross entropy of unnormalised logits [N, C] (or [C], or [N, C, d1, ...]) against target:
1-based class indices (int64, shape [N]) or class probabilities (float, logits' shape).
weight [C] weighs the classes (the mean then divides by the summed weights of the
targets, as in PyTorch). label_smoothing eps gives (1-eps) * nll + eps * the mean over
classes of -logp. Class indices go through one fused, stable engine op whose backward
never builds a one-hot.]=],
    example = [=[
local F = ember.nn.functional
local logits = ember.randn(4, 3, {requires_grad = true})
local loss = F.cross_entropy(logits, ember.tensor({1, 2, 3, 1}), {label_smoothing = 0.1})
loss:backward()
print(loss, logits.grad:sum(2))   -- the gradient's rows sum to 0]=],
  },
  {
    name = "ember.nn.functional.binary_cross_entropy_with_logits",
    sig = "F.binary_cross_entropy_with_logits(x, y [, {weight =, pos_weight =,\n"
       .. "                                    reduction = \"mean\"}]) -> tensor",
    doc = [=[
Binary cross entropy on logits x, stable for any x:
max(x, 0) - x*y + log(1 + exp(-|x|)). y has x's shape with values in [0, 1] (integer y is
converted). pos_weight (broadcast along the last dim) weighs the positive term; weight
multiplies each element's loss.]=],
    example = [=[
local F = ember.nn.functional
local x, y = ember.tensor({0.0, 3.0}), ember.tensor({1.0, 1.0})
print(F.binary_cross_entropy_with_logits(x, y))]=],
  },
  {
    name = "ember.nn.functional.check_reduction",
    sig = "F.check_reduction(reduction, op) -> reduction",
    doc = [=[
Returns "mean" for nil and reduction itself for "mean", "sum" or "none"; anything else
raises an error naming op. For writing losses that take a reduction option.]=],
    example = [=[
local F = ember.nn.functional
print(F.check_reduction(nil, "my_loss"))        -- mean
print(pcall(F.check_reduction, "avg", "my_loss"))   -- false, an error naming my_loss]=],
  },

  -- ---- ember.nn.init ---------------------------------------------------------------
  {
    name = "ember.nn.init",
    sig = "local init = ember.nn.init",
    doc = [=[
In-place initialisers (torch.nn.init). They run under no_grad, so parameters can be
initialised directly, and return the tensor. The random ones draw from the default
generator (ember.manual_seed makes them reproducible) or, as PyTorch 2's, from the
ember.Generator given as their last argument or option generator:
  uniform_, normal_, constant_, zeros_, ones_,
  kaiming_uniform_, kaiming_normal_, xavier_uniform_, xavier_normal_,
  calculate_gain, calculate_fan_in_and_fan_out]=],
    example = [=[
local nn = ember.nn
local fc = nn.Linear(4, 3)
nn.init.xavier_uniform_(fc.weight)
nn.init.zeros_(fc.bias)
print(fc.bias)]=],
  },
  {
    name = "ember.nn.init.calculate_gain",
    sig = "nn.init.calculate_gain(nonlinearity [, param]) -> number",
    doc = [=[
The recommended gain for a nonlinearity, PyTorch's table: 1 for "linear", "identity",
"sigmoid" and the conv names; 5/3 for "tanh"; sqrt(2) for "relu"; 3/4 for "selu";
sqrt(2 / (1 + slope^2)) for "leaky_relu" (param = slope, default 0.01). Others: error.]=],
    example = [=[
local nn = ember.nn
print(nn.init.calculate_gain("relu"))             -- 1.4142
print(nn.init.calculate_gain("leaky_relu", 0.2))]=],
  },
  {
    name = "ember.nn.init.calculate_fan_in_and_fan_out",
    sig = "nn.init.calculate_fan_in_and_fan_out(t) -> fan_in, fan_out",
    doc = [=[
For a weight [out, in, k1, ...]: fan_in = in * k1 * ..., fan_out = out * k1 * ....
t needs at least 2 dims.]=],
    example = [=[
local nn = ember.nn
print(nn.init.calculate_fan_in_and_fan_out(ember.empty(8, 4, 3, 3)))   -- 36 72]=],
  },
  {
    name = "ember.nn.init.uniform_",
    also = {"ember.nn.init.uniform"},   -- PyTorch's deprecated name, the same function
    sig = "nn.init.uniform_(t [, a = 0 [, b = 1 [, generator]]]) -> t",
    doc = "Fills t in place with numbers drawn from U(a, b).",
    example = [=[
local nn = ember.nn
local w = nn.init.uniform_(ember.empty(2, 3), -0.1, 0.1)
print(w:abs():max():item() <= 0.1)   -- true]=],
  },
  {
    name = "ember.nn.init.normal_",
    also = {"ember.nn.init.normal"},   -- PyTorch's deprecated name, the same function
    sig = "nn.init.normal_(t [, mean = 0 [, std = 1 [, generator]]]) -> t",
    doc = "Fills t in place with numbers drawn from N(mean, std^2).",
    example = [=[
local nn = ember.nn
print(nn.init.normal_(ember.empty(1000), 5, 0.1):mean())   -- about 5]=],
  },
  {
    name = "ember.nn.init.constant_",
    also = {"ember.nn.init.constant"},   -- PyTorch's deprecated name, the same function
    sig = "nn.init.constant_(t, value) -> t",
    doc = "Fills t in place with value.",
    example = [=[
local nn = ember.nn
print(nn.init.constant_(ember.empty(3), 0.5))   -- [0.5, 0.5, 0.5]]=],
  },
  {
    name = "ember.nn.init.zeros_",
    sig = "nn.init.zeros_(t) -> t",
    doc = "Fills t in place with 0.",
    example = [=[
local nn = ember.nn
local fc = nn.Linear(2, 2)
nn.init.zeros_(fc.bias)
print(fc.bias)]=],
  },
  {
    name = "ember.nn.init.ones_",
    sig = "nn.init.ones_(t) -> t",
    doc = "Fills t in place with 1.",
    example = [=[
local nn = ember.nn
print(nn.init.ones_(ember.empty(2)))   -- [1, 1]]=],
  },
  {
    name = "ember.nn.init.kaiming_uniform_",
    also = {"ember.nn.init.kaiming_uniform"},   -- PyTorch's deprecated name, the same function
    sig = "nn.init.kaiming_uniform_(t [, {a = 0, mode = \"fan_in\", nonlinearity = \"leaky_relu\",\n"
       .. "  generator}]) -> t",
    doc = [=[
He initialisation: t ~ U(-b, b) with b = gain * sqrt(3 / fan), gain =
calculate_gain(nonlinearity, a), fan = fan_in or fan_out by mode. A number in place of
the options table is a. With a = sqrt(5) this is PyTorch's nn.Linear default,
b = 1/sqrt(fan_in).]=],
    example = [=[
local nn = ember.nn
local w = nn.init.kaiming_uniform_(ember.empty(10, 16), {a = math.sqrt(5)})
print(w:abs():max():item() <= 0.25)   -- true: 1/sqrt(16)]=],
  },
  {
    name = "ember.nn.init.kaiming_normal_",
    also = {"ember.nn.init.kaiming_normal"},   -- PyTorch's deprecated name, the same function
    sig = "nn.init.kaiming_normal_(t [, {a = 0, mode = \"fan_in\", nonlinearity = \"leaky_relu\",\n"
       .. "  generator}]) -> t",
    doc = "He initialisation from a normal: t ~ N(0, (gain / sqrt(fan))^2).\nOptions as kaiming_uniform_.",
    example = [=[
local nn = ember.nn
local w = nn.init.kaiming_normal_(ember.empty(64, 128), {nonlinearity = "relu"})
print(w:std())   -- about sqrt(2/128) = 0.125]=],
  },
  {
    name = "ember.nn.init.xavier_uniform_",
    also = {"ember.nn.init.xavier_uniform"},   -- PyTorch's deprecated name, the same function
    sig = "nn.init.xavier_uniform_(t [, gain = 1 [, generator]]) -> t",
    doc = [=[
Glorot initialisation: t ~ U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).
gain may also be given as {gain = g}.]=],
    example = [=[
local nn = ember.nn
local w = nn.init.xavier_uniform_(ember.empty(3, 5))
print(w:abs():max():item() <= math.sqrt(6 / 8))   -- true]=],
  },
  {
    name = "ember.nn.init.xavier_normal_",
    also = {"ember.nn.init.xavier_normal"},   -- PyTorch's deprecated name, the same function
    sig = "nn.init.xavier_normal_(t [, gain = 1 [, generator]]) -> t",
    doc = [=[
Glorot initialisation from a normal: t ~ N(0, std^2), std = gain * sqrt(2 / (fan_in +
fan_out)). gain may also be given as {gain = g}.]=],
    example = [=[
local nn = ember.nn
print(nn.init.xavier_normal_(ember.empty(200, 200)):std())   -- about 0.0707]=],
  },

  -- ---- ember.nn.utils --------------------------------------------------------------
  {
    name = "ember.nn.utils",
    sig = "ember.nn.utils",
    doc = [=[
torch.nn.utils of PyTorch 2.x: clip_grad_norm_ (the same as ember.optim.clip_grad_norm_),
clip_grad_value_, get_total_norm and clip_grads_with_norm_ (PyTorch 2.6's two halves of
clip_grad_norm_), parameters_to_vector, vector_to_parameters; nn.utils.parametrizations
(weight_norm, spectral_norm) and nn.utils.parametrize (register_parametrization,
remove_parametrizations, is_parametrized), with PyTorch's names in the state_dict.
nn.utils.rnn: variable-length batches for nn.RNN, nn.LSTM and nn.GRU (pad_sequence,
pack_padded_sequence, pad_packed_sequence, PackedSequence, ...; see help(nn.utils.rnn)).]=],
    example = [=[
local nn = ember.nn
local fc = nn.Linear(3, 1)
fc(ember.randn(4, 3)):sum():backward()
print(nn.utils.clip_grad_norm_(fc:parameters(), 1.0))]=],
  },
  {
    name = "ember.nn.utils.get_total_norm",
    sig = "nn.utils.get_total_norm(tensors [, {norm_type = 2, error_if_nonfinite = false, foreach =}])\n"
       .. "  -> total_norm",
    doc = [=[
The norm of order norm_type of all the elements of tensors together (the norm of their
norms; math.huge: the largest absolute value), a 0-d tensor; 0 for an empty list. It takes
the tensors themselves (pass the gradients), as torch.nn.utils.get_total_norm (2.6).]=],
    example = [=[
local nn = ember.nn
print(nn.utils.get_total_norm({ember.tensor({3.0}), ember.tensor({4.0})}))   -- 5]=],
  },
  {
    name = "ember.nn.utils.clip_grads_with_norm_",
    sig = "nn.utils.clip_grads_with_norm_(params, max_norm, total_norm [, {foreach =}])",
    doc = [=[
Multiplies the gradients of params in place by min(1, max_norm / (total_norm + 1e-6)),
total_norm given (a 0-d tensor or a number), as torch.nn.utils.clip_grads_with_norm_.
Parameters without a gradient are skipped; returns nothing.]=],
    example = [=[
local nn = ember.nn
local fc = nn.Linear(3, 1)
fc(ember.randn(4, 3)):sum():backward()
local grads = {fc.weight.grad, fc.bias.grad}
nn.utils.clip_grads_with_norm_(fc:parameters(), 1.0, nn.utils.get_total_norm(grads))]=],
  },
  {
    name = "ember.nn.utils.clip_grad_value_",
    sig = "nn.utils.clip_grad_value_(params, clip_value [, {foreach =}])",
    doc = "Clamps every gradient of params in place to [-clip_value, clip_value]; returns nothing.",
    example = [=[
local nn = ember.nn
local fc = nn.Linear(3, 1)
fc(ember.randn(4, 3) * 10):sum():backward()
nn.utils.clip_grad_value_(fc:parameters(), 0.1)
print(fc.weight.grad:abs():max():item() <= 0.1)   -- true]=],
  },
  {
    name = "ember.nn.utils.parameters_to_vector",
    sig = "nn.utils.parameters_to_vector(params) -> 1-D tensor",
    doc = [=[
The parameters flattened and concatenated in order (autograd follows it); they must share
a device.]=],
    example = [=[
local nn = ember.nn
print(nn.utils.parameters_to_vector(nn.Linear(3, 2):parameters()).shape[1])   -- 8]=],
  },
  {
    name = "ember.nn.utils.vector_to_parameters",
    sig = "nn.utils.vector_to_parameters(vec, params)",
    doc = [=[
Copies consecutive slices of the 1-D tensor vec into the parameters, in order; the sizes
must add up. PyTorch points each parameter's .data at a view of vec; ember copies, so the
parameters stay the same tensors and do not alias vec.]=],
    example = [=[
local nn = ember.nn
local fc = nn.Linear(3, 2)
nn.utils.vector_to_parameters(ember.zeros(8), fc:parameters())
print(fc.bias)   -- zeros]=],
  },
  {
    name = "ember.nn.utils.parametrizations.weight_norm",
    sig = "nn.utils.parametrizations.weight_norm(module [, name = \"weight\" [, {dim = 1}]]) -> module",
    doc = [=[
Reparametrizes module[name] as g * v / ||v||, the norm over every dim but dim (1-based;
dim = false: the whole tensor, PyTorch's dim=None), as PyTorch's
torch.nn.utils.parametrizations.weight_norm: g is parametrizations.<name>.original0, v
parametrizations.<name>.original1, so PyTorch's state_dicts load. Reading module[name]
computes the weight; the module's class becomes Parametrized<Class>.]=],
    example = [=[
local nn = ember.nn
local fc = nn.utils.parametrizations.weight_norm(nn.Linear(4, 3))
print(fc.parametrizations.weight.original0.shape[1], fc.weight.shape[2])   -- 3 4]=],
  },
  {
    name = "ember.nn.utils.parametrizations.spectral_norm",
    sig = "nn.utils.parametrizations.spectral_norm(module [, name = \"weight\"\n"
       .. "  [, {n_power_iterations = 1, eps = 1e-12, dim =}]]) -> module",
    doc = [=[
Reparametrizes module[name] as W / sigma, sigma W's largest singular value (W seen as a
matrix with dim first: 1, or 2 for ConvTranspose) by power iteration, as PyTorch's
torch.nn.utils.parametrizations.spectral_norm: the weight is
parametrizations.<name>.original, the vectors the buffers parametrizations.<name>.0._u
and _v. Each read of module[name] in
training mode runs n_power_iterations; in eval mode the vectors are left as they are.]=],
    example = [=[
local nn = ember.nn
local fc = nn.utils.parametrizations.spectral_norm(nn.Linear(6, 5), {n_power_iterations = 30})
print(ember.linalg.svdvals(fc.weight:detach())[1]:item())   -- about 1]=],
  },
  {
    name = "ember.nn.utils.parametrize.register_parametrization",
    also = {"ember.nn.utils.parametrize.is_parametrized", "ember.nn.utils.parametrize.ParametrizationList"},
    sig = "nn.utils.parametrize.register_parametrization(module, name, parametrization\n"
       .. "  [, {unsafe = false}]) -> module\nnn.utils.parametrize.is_parametrized(module [, name]) -> boolean",
    doc = [=[
Replaces the parameter (or buffer) name of module by parametrization(original),
computed on each read; gradients reach the original. With a right_inverse method the
parametrization stores what it returns (several tensors: original0, original1, ...);
more parametrizations of the same name apply after the first. Names as PyTorch's:
parametrizations.<name>.original and parametrizations.<name>.<k>.<buffer>. Unless
unsafe = true, registering checks as PyTorch does that the parametrized tensor (and, for
a parametrization added to others, its right_inverse's result) keeps module[name]'s
shape and dtype; a right_inverse returning one tensor may never change the dtype.]=],
    example = [=[
local nn = ember.nn
local Sym = nn.Module:extend("Sym")
function Sym:forward(x) return x:triu() + x:triu(1):t() end
local P = nn.utils.parametrize
local fc = P.register_parametrization(nn.Linear(3, 3), "weight", Sym())
print(fc.weight:eq(fc.weight:t()):all():item(), P.is_parametrized(fc))   -- true true]=],
  },
  {
    name = "ember.nn.utils.parametrize.cached",
    sig = "local _ <close> = nn.utils.parametrize.cached()\nnn.utils.parametrize.cached(fn, ...) -> fn(...)",
    doc = [=[
While the guard lives (or fn runs), each parametrized tensor is computed at its first read
and that tensor is returned by later reads, as PyTorch's `with parametrize.cached():`: for
a forward that reads a parametrized weight several times (an RNN's steps). Nested uses
share one cache, emptied when the outermost ends (also when fn raises an error).]=],
    example = [=[
local nn = ember.nn
local fc = nn.utils.parametrizations.weight_norm(nn.Linear(4, 4))
do
  local _ <close> = nn.utils.parametrize.cached()
  print(rawequal(fc.weight, fc.weight))   -- true: computed once
end
print(rawequal(fc.weight, fc.weight))     -- false]=],
  },
  {
    name = "ember.nn.utils.parametrize.remove_parametrizations",
    sig = "nn.utils.parametrize.remove_parametrizations(module, name\n"
       .. "  [, leave_parametrized = true]) -> module",
    doc = [=[
Removes the parametrizations of name: the parameter becomes the current parametrized value
(or, with leave_parametrized = false, the original tensor itself), registered again (so
last in the state_dict, as PyTorch's). With none left the module gets its class back.]=],
    example = [=[
local nn = ember.nn
local fc = nn.utils.parametrizations.weight_norm(nn.Linear(4, 3))
nn.utils.parametrize.remove_parametrizations(fc, "weight")
print(getmetatable(fc).__name)   -- Linear]=],
  },
  {
    name = "ember.nn.utils.clip_grad_norm_",
    sig = "nn.utils.clip_grad_norm_(params, max_norm [, {norm_type = 2, error_if_nonfinite = false}])\n"
       .. "  -> total_norm",
    doc = [=[
Calls ember.optim.clip_grad_norm_ with the same arguments: scales the gradients of params
in place so their total norm is at most max_norm and returns the total norm before
clipping (a 0-d tensor).]=],
    example = [=[
local nn = ember.nn
local w = ember.tensor({3.0, 4.0}, {requires_grad = true})
local loss = (w * w):sum()
loss:backward()                                         -- grad [6, 8], norm 10
print(nn.utils.clip_grad_norm_({w}, 1.0), w.grad)      -- 10, [0.6, 0.8]]=],
  },
}
