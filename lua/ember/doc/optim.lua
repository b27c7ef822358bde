-- Docs of ember.optim: the optimizers, their methods, clip_grad_norm_ and
-- ember.optim.lr_scheduler. Format: ember/help.lua.
return {
  {
    name = "ember.optim",
    sig = "local optim = ember.optim",
    doc = [=[
Optimizers with torch.optim's semantics and state layout:
  optim.SGD, optim.Adam, optim.AdamW   classes: optim.Name(params, {options})
  optim.RMSprop, Adagrad, Adamax, NAdam, RAdam, Adadelta, ASGD, Rprop, LBFGS   likewise
  optim.Optimizer                       their base class: step, zero_grad, state_dict, ...
  optim.clip_grad_norm_                 gradient clipping by total norm
  optim.lr_scheduler                    StepLR, CosineAnnealingLR, LinearLR, LambdaLR,
      MultiplicativeLR, MultiStepLR, ExponentialLR, ConstantLR, PolynomialLR,
      CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR, SequentialLR, ChainedScheduler,
      ReduceLROnPlateau
params is a list of tensors (model:parameters()), an iterator, or a list of parameter
groups {{params = ..., lr = ...}, ...}. opt.param_groups are plain tables: change
opt.param_groups[1].lr to change the learning rate. opt.state[p] holds a parameter's
state (SGD: momentum_buffer; Adam: step, exp_avg, exp_avg_sq), created on its first step.
SGD, Adam and AdamW (amsgrad = false) update a whole parameter group with one multi-tensor
engine op per device and dtype (one kernel launch on CUDA, as PyTorch's foreach/fused
optimizers); with foreach = false each parameter is its own fused op, with the same
results bit for bit. They also update float16 and bfloat16 parameters (state in the
parameter's dtype, arithmetic in float32). The others (and amsgrad) compose in-place
tensor ops. All run on the parameter's device. A PyTorch option ember does not implement
(differentiable; capturable outside Adam and AdamW) is accepted only as false, PyTorch's
default; true is an error naming it, as is an unknown or misspelt option.]=],
    example = [=[
local nn, optim = ember.nn, ember.optim
local model = nn.Linear(3, 1)
local opt = optim.AdamW(model:parameters(), {lr = 1e-2})
for _ = 1, 3 do
  opt:zero_grad()
  local loss = model(ember.randn(8, 3)):pow(2):mean()
  loss:backward()
  opt:step()
end
print(opt)]=],
  },
  {
    name = "ember.optim.Optimizer",
    sig = "ember.optim.Optimizer",
    doc = [=[
The base class of SGD, Adam and AdamW, holding what they share: param_groups (a list of
tables: params plus the hyper-parameters), state (parameter -> table), defaults, and the
methods step, zero_grad, add_param_group, state_dict, load_state_dict,
state_dict_flat and load_state_dict_flat. It is not constructed directly.
tostring(opt) lists the groups' hyper-parameters, like PyTorch.]=],
    example = [=[
local optim = ember.optim
local w = ember.zeros(2, {requires_grad = true})
local opt = optim.SGD({w}, {lr = 0.1})
print(opt.step == optim.Optimizer.step, #opt.param_groups)   -- true 1]=],
  },
  {
    name = "ember.optim.SGD",
    sig = "optim.SGD(params [, {lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0,\n"
       .. "                    nesterov = false, maximize = false, foreach = nil, fused = nil}]) -> optimizer",
    doc = [=[
Stochastic gradient descent, optionally with momentum (PyTorch's formulation: the buffer
starts as the first gradient) and Nesterov momentum (needs momentum > 0 and dampening 0).
weight_decay adds weight_decay * p to the gradient; maximize ascends. lr defaults to 1e-3
(PyTorch requires it). foreach and fused choose the implementation as in PyTorch: by
default (nil), foreach = true or fused = true, the group's parameters are updated together
by one multi-tensor op per device and dtype (one launch on CUDA); foreach = false updates
each parameter with its own fused op. The results are the same bit for bit; foreach and
fused cannot both be true. Parameters may be float32, float64, float16 or bfloat16 leaves
(half ones keep their momentum buffer in their dtype and compute in float32); other
unknown options, a negative lr, or another parameter are errors.]=],
    example = [=[
local optim = ember.optim
local w = ember.tensor({1.0, -2.0}, {requires_grad = true})
local opt = optim.SGD({w}, {lr = 0.1, momentum = 0.9})
local loss = (w * w):sum()
loss:backward()
opt:step()
print(w)   -- [0.8, -1.6]]=],
  },
  {
    name = "ember.optim.Adam",
    sig = "optim.Adam(params [, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8,\n"
       .. "                     weight_decay = 0, amsgrad = false, maximize = false,\n"
       .. "                     foreach = nil, fused = nil, capturable = false,\n"
       .. "                     decoupled_weight_decay = false}]) -> optimizer",
    doc = [=[
Adam with bias correction. weight_decay is the L2 form (added to the gradient);
decoupled_weight_decay = true (PyTorch 2.x's option) makes it AdamW's decoupled decay.
betas is a list of two numbers in [0, 1).
foreach and fused as for SGD: by default a group is one multi-tensor step per device and
dtype (as PyTorch's fused Adam: exp_avg and exp_avg_sq in the parameter's dtype, float16
and bfloat16 computing in float32); foreach = false steps each parameter alone, with the
same results. amsgrad = true always steps per parameter (composed tensor ops).
capturable = true (for CUDA graphs, see ember.cuda.CUDAGraph) keeps the step count in a
0-d tensor on the parameter's device and steps per parameter with tensor ops; lr may
then be a 0-d float32/float64 tensor on the parameters' device (as PyTorch's), which a
captured step reads at each replay: change it with g.lr:fill_(v), not by assigning.
state_dict_flat saves a tensor lr as its number. A tensor lr without capturable, of
another shape, dtype or device is an error.]=],
    example = [=[
local optim = ember.optim
local w = ember.tensor({1.0, -2.0}, {requires_grad = true})
local opt = optim.Adam({w}, {lr = 0.1})
local loss = (w * w):sum()
loss:backward()
opt:step()
print(w, opt.state[w].step)   -- each element moved by lr: [0.9, -1.9]  1]=],
  },
  {
    name = "ember.optim.AdamW",
    sig = "optim.AdamW(params [, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8,\n"
       .. "                      weight_decay = 1e-2, amsgrad = false, maximize = false,\n"
       .. "                      foreach = nil, fused = nil, capturable = false}]) -> optimizer",
    doc = [=[
Adam with decoupled weight decay: each step first shrinks p by p *= 1 - lr * weight_decay,
then applies the Adam update. Note the default weight_decay of 1e-2. To exempt biases
and norms, give two parameter groups. foreach, fused and capturable (a tensor lr) as for
Adam (by default one multi-tensor step per device and dtype).]=],
    example = [=[
local nn, optim = ember.nn, ember.optim
local model = nn.Linear(4, 2)
local opt = optim.AdamW({{params = {model.weight}, weight_decay = 0.01},
                         {params = {model.bias}, weight_decay = 0}}, {lr = 1e-3})
print(#opt.param_groups, opt.param_groups[2].weight_decay)   -- 2 0]=],
  },
  {
    name = "ember.optim.Optimizer:step",
    sig = "opt:step([closure]) -> loss or nil",
    doc = [=[
Updates every parameter that has a gradient (parameters whose .grad is nil are skipped)
under no_grad. With a closure (a function that re-evaluates the model and returns the
loss), calls it first with grad mode on and returns its result.]=],
    example = [=[
local nn, optim = ember.nn, ember.optim
local model = nn.Linear(2, 1)
local opt = optim.SGD(model:parameters(), {lr = 0.1})
local x = ember.randn(4, 2)
local loss = opt:step(function()
  opt:zero_grad()
  local l = model(x):pow(2):mean()
  l:backward()
  return l
end)
print(loss)]=],
  },
  {
    name = "ember.optim.Optimizer:zero_grad",
    sig = "opt:zero_grad([set_to_none = true])",
    doc = [=[
Drops the gradient of every parameter (.grad = nil), or with set_to_none = false fills
the existing gradients with zeros in place.]=],
    example = [=[
local optim = ember.optim
local w = ember.ones(2, {requires_grad = true})
local opt = optim.SGD({w}, {lr = 0.1})
w:sum():backward()
opt:zero_grad(false)
print(w.grad)   -- [0, 0]
opt:zero_grad()
print(w.grad)   -- nil]=],
  },
  {
    name = "ember.optim.Optimizer:add_param_group",
    sig = "opt:add_param_group({params = ..., [lr =, ...]})",
    doc = [=[
Adds a parameter group; hyper-parameters it does not give come from the optimizer's
defaults. A parameter already in a group, a non-leaf tensor, a non-float dtype or an
unknown option is an error. Useful for unfreezing layers during training.]=],
    example = [=[
local optim = ember.optim
local a, b = ember.zeros(2, {requires_grad = true}), ember.zeros(3, {requires_grad = true})
local opt = optim.SGD({a}, {lr = 0.1})
opt:add_param_group({params = {b}, lr = 0.01})
print(#opt.param_groups, opt.param_groups[2].lr)   -- 2 0.01]=],
  },
  {
    name = "ember.optim.Optimizer:state_dict",
    sig = "opt:state_dict() -> {state = {[i] = {...}}, param_groups = {{..., params = {i, ...}}}, class = name}",
    doc = [=[
PyTorch's layout: parameters are numbered 1, 2, ... over the groups in order; state[i]
is parameter i's state, param_groups copies each group's hyper-parameters with params
replaced by those numbers. State tensors are the live ones, not copies (as in PyTorch).
class names the optimizer ("AdamW"), so that loading into another one says so.]=],
    example = [=[
local optim = ember.optim
local w = ember.ones(2, {requires_grad = true})
local opt = optim.SGD({w}, {lr = 0.1, momentum = 0.9})
w:sum():backward()
opt:step()
local sd = opt:state_dict()
print(sd.param_groups[1].lr, sd.param_groups[1].params[1], sd.state[1].momentum_buffer)]=],
  },
  {
    name = "ember.optim.Optimizer:load_state_dict",
    sig = "opt:load_state_dict(sd)",
    doc = [=[
Restores state and hyper-parameters saved by state_dict: the number of groups and of
parameters per group must match; state tensors are copied, cast to each parameter's
dtype and device, and checked against its shape. State another optimizer saved is
refused with both names ("AdamW state loaded into SGD"; Adam's and AdamW's state
are interchangeable, as in PyTorch); a dict without class (one made by PyTorch) is
taken when its groups fit. Nothing changes when it fails. The
group tables stay the same tables, so a scheduler holding them keeps working.]=],
    example = [=[
local optim = ember.optim
local w = ember.ones(2, {requires_grad = true})
local opt = optim.Adam({w}, {lr = 0.1})
w:sum():backward()
opt:step()
local opt2 = optim.Adam({w}, {lr = 0.5})
opt2:load_state_dict(opt:state_dict())
print(opt2.param_groups[1].lr, opt2.state[w].step)   -- 0.1 1]=],
  },
  {
    name = "ember.optim.Optimizer:state_dict_flat",
    sig = "opt:state_dict_flat() -> tensors, metadata",
    doc = [=[
The state_dict as two flat tables fit for a safetensors file: tensors["state.<i>.<name>"]
and metadata strings ("class", "state.<i>.step", "param_groups",
"param_groups.<g>.<key>"), with numbers printed to 17 digits so they come back exactly.
ember.save(path, tensors, metadata) writes them; ember.save_checkpoint uses this.]=],
    example = [=[
local optim = ember.optim
local w = ember.ones(2, {requires_grad = true})
local opt = optim.SGD({w}, {lr = 0.1, momentum = 0.9})
w:sum():backward()
opt:step()
local tensors, meta = opt:state_dict_flat()
print(tensors["state.1.momentum_buffer"], meta["param_groups.1.lr"])]=],
  },
  {
    name = "ember.optim.Optimizer:load_state_dict_flat",
    sig = "opt:load_state_dict_flat(tensors, metadata)",
    doc = "The inverse of state_dict_flat: rebuilds the state_dict and loads it (load_state_dict).",
    example = [=[
local optim = ember.optim
local w = ember.ones(2, {requires_grad = true})
local opt = optim.SGD({w}, {lr = 0.1, momentum = 0.9})
w:sum():backward()
opt:step()
local opt2 = optim.SGD({w}, {lr = 1, momentum = 0.9})
opt2:load_state_dict_flat(opt:state_dict_flat())
print(opt2.param_groups[1].lr)   -- 0.1]=],
  },
  {
    name = "ember.optim.clip_grad_norm_",
    sig = "optim.clip_grad_norm_(params, max_norm [, {norm_type = 2, error_if_nonfinite = false,\n"
       .. "                                              foreach = nil}]) -> total_norm",
    doc = [=[
Scales the gradients of params (a tensor, a list or an iterator) in place by
min(max_norm / (total + 1e-6), 1), where total is their total norm (the norm of the
per-gradient norms), and returns total taken before clipping, as a 0-d tensor of the first
gradient's dtype and device. norm_type may be math.huge or "inf". For norm_type > 0 it is
two multi-tensor ops (as PyTorch's foreach path): one pass computing every gradient's
sum of |g|^p (or max |g|), accumulated in float64 on the device, and one pass scaling
them all by the coefficient computed on the device; foreach = false (or norm_type <= 0)
composes per-tensor ops instead. No value is read back, so no device synchronisation,
unless error_if_nonfinite is set (then a NaN or infinite norm is an error).
Also ember.nn.utils.clip_grad_norm_.]=],
    example = [=[
local optim = ember.optim
local w = ember.tensor({3.0, 4.0}, {requires_grad = true})
local loss = (w * w):sum()
loss:backward()                                    -- grad [6, 8]: norm 10
print(optim.clip_grad_norm_({w}, 1.0), w.grad)    -- 10, [0.6, 0.8]]=],
  },

  -- ---- lr_scheduler -----------------------------------------------------------------------
  {
    name = "ember.optim.lr_scheduler",
    sig = "local lr_scheduler = ember.optim.lr_scheduler",
    doc = [=[
Learning-rate schedules (torch.optim.lr_scheduler): StepLR, CosineAnnealingLR, LinearLR,
and their base class LRScheduler. As in PyTorch, constructing a scheduler records each
group's initial_lr and sets the lr of epoch 0; step() moves to the next epoch (call it
once per epoch, after opt:step()). StepLR and LinearLR use the chainable form, which
multiplies the group's current lr, so changes made by hand carry on.
Options: the schedule's own plus last_epoch (-1: start fresh) and verbose (ignored).]=],
    example = [=[
local optim = ember.optim
local w = ember.zeros(2, {requires_grad = true})
local opt = optim.SGD({w}, {lr = 0.1})
local sched = optim.lr_scheduler.StepLR(opt, {step_size = 2, gamma = 0.5})
for epoch = 1, 4 do
  -- train one epoch here, then:
  sched:step()
  print(epoch, sched:get_last_lr()[1])   -- 0.1 0.05 0.05 0.025
end]=],
  },
  {
    name = "ember.optim.lr_scheduler.LRScheduler",
    sig = "ember.optim.lr_scheduler.LRScheduler",
    doc = [=[
The base class of the schedulers: step, get_last_lr, state_dict, load_state_dict,
state_dict_flat, load_state_dict_flat. Fields: optimizer, last_epoch, base_lrs.
It is not constructed directly.]=],
    example = [=[
local lr_scheduler = ember.optim.lr_scheduler
print(lr_scheduler.StepLR.step == lr_scheduler.LRScheduler.step)   -- true]=],
  },
  {
    name = "ember.optim.lr_scheduler.StepLR",
    sig = "lr_scheduler.StepLR(opt, {step_size =, gamma = 0.1 [, last_epoch = -1]}) -> scheduler",
    doc = [=[
Multiplies each group's lr by gamma every step_size epochs: lr = base_lr *
gamma^(epoch // step_size). step_size (a positive integer) is required.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 1})
local sched = optim.lr_scheduler.StepLR(opt, {step_size = 3})
for _ = 1, 3 do sched:step() end
print(opt.param_groups[1].lr)   -- 0.1]=],
  },
  {
    name = "ember.optim.lr_scheduler.CosineAnnealingLR",
    sig = "lr_scheduler.CosineAnnealingLR(opt, {T_max =, eta_min = 0 [, last_epoch = -1]})\n"
       .. "  -> scheduler",
    doc = [=[
Cosine annealing from base_lr down to eta_min over T_max epochs, in closed form:
lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.
T_max (> 0) is required. Past T_max the cosine rises again, as in PyTorch.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 1})
local sched = optim.lr_scheduler.CosineAnnealingLR(opt, {T_max = 4})
sched:step(); sched:step()
print(sched:get_last_lr()[1])   -- 0.5 (half-way)]=],
  },
  {
    name = "ember.optim.lr_scheduler.LinearLR",
    sig = "lr_scheduler.LinearLR(opt [, {start_factor = 1/3, end_factor = 1, total_iters = 5,\n"
       .. "                              last_epoch = -1}]) -> scheduler",
    doc = [=[
Scales base_lr by a factor going linearly from start_factor to end_factor over
total_iters epochs, then stays at end_factor: a linear warm-up with the defaults.
start_factor must be in (0, 1], end_factor in [0, 1], total_iters a positive integer.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.3})
local sched = optim.lr_scheduler.LinearLR(opt, {total_iters = 2})
print(opt.param_groups[1].lr)   -- 0.1 (0.3 * 1/3)
sched:step(); sched:step()
print(opt.param_groups[1].lr)   -- 0.3]=],
  },
  {
    name = "ember.optim.lr_scheduler.LRScheduler:step",
    sig = "sched:step([epoch])",
    doc = [=[
Advances one epoch and sets each group's lr. step(epoch), deprecated in PyTorch, jumps
to that epoch with the closed form instead.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 1})
local sched = optim.lr_scheduler.StepLR(opt, {step_size = 1, gamma = 0.5})
sched:step()
sched:step(3)
print(sched.last_epoch, opt.param_groups[1].lr)   -- 3 0.125]=],
  },
  {
    name = "ember.optim.lr_scheduler.LRScheduler:get_last_lr",
    sig = "sched:get_last_lr() -> {lr of group 1, ...}",
    doc = "The learning rate of each group as set by the last step() (a copy).",
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1})
local sched = optim.lr_scheduler.StepLR(opt, {step_size = 1})
sched:step()
print(sched:get_last_lr()[1])   -- 0.01]=],
  },
  {
    name = "ember.optim.lr_scheduler.StepLR:get_lr",
    also = {"ember.optim.lr_scheduler.CosineAnnealingLR:get_lr",
            "ember.optim.lr_scheduler.LinearLR:get_lr",
            "ember.optim.lr_scheduler.ConstantLR:get_lr",
            "ember.optim.lr_scheduler.CosineAnnealingWarmRestarts:get_lr",
            "ember.optim.lr_scheduler.CyclicLR:get_lr",
            "ember.optim.lr_scheduler.ExponentialLR:get_lr",
            "ember.optim.lr_scheduler.LambdaLR:get_lr",
            "ember.optim.lr_scheduler.MultiStepLR:get_lr",
            "ember.optim.lr_scheduler.MultiplicativeLR:get_lr",
            "ember.optim.lr_scheduler.OneCycleLR:get_lr",
            "ember.optim.lr_scheduler.PolynomialLR:get_lr"},
    sig = "sched:get_lr() -> {lr of group 1, ...}",
    doc = [=[
The learning rates for the current epoch (last_epoch), which step() applies. StepLR and
LinearLR compute them from the groups' current lr (the chainable form), so calling
get_lr outside step() can give a value one step ahead; read get_last_lr() instead.
A scheduler written by extending one of these classes overrides get_lr.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 1})
local sched = optim.lr_scheduler.CosineAnnealingLR(opt, {T_max = 2})
sched.last_epoch = 1
print(sched:get_lr()[1])   -- 0.5]=],
  },
  {
    name = "ember.optim.lr_scheduler.LRScheduler:state_dict",
    sig = "sched:state_dict() -> table",
    doc = [=[
The scheduler's fields except the optimizer, in PyTorch's layout: last_epoch, base_lrs,
_last_lr, _step_count and the schedule's hyper-parameters (lists are copied).]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1})
local sd = optim.lr_scheduler.StepLR(opt, {step_size = 2}):state_dict()
print(sd.last_epoch, sd.step_size, sd.base_lrs[1])   -- 0 2 0.1]=],
  },
  {
    name = "ember.optim.lr_scheduler.LRScheduler:load_state_dict",
    sig = "sched:load_state_dict(sd)",
    doc = [=[
Restores fields saved by state_dict (numbers, or the strings of state_dict_flat). A
field the scheduler does not have, or of another type, is an error.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1})
local a = optim.lr_scheduler.StepLR(opt, {step_size = 2})
a:step(); a:step(); a:step()
local b = optim.lr_scheduler.StepLR(opt, {step_size = 2})
b:load_state_dict(a:state_dict())
print(b.last_epoch)   -- 3]=],
  },
  {
    name = "ember.optim.lr_scheduler.LRScheduler:state_dict_flat",
    sig = "sched:state_dict_flat() -> {[field] = string}",
    doc = [=[
The state_dict as strings (numbers to 17 digits, lists as "[a,b]"), for a safetensors
header's metadata; load_state_dict or load_state_dict_flat reads it back exactly.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1})
local meta = optim.lr_scheduler.StepLR(opt, {step_size = 2}):state_dict_flat()
print(meta.step_size, meta.base_lrs)   -- 2 [0.10000000000000001]]=],
  },
  {
    name = "ember.optim.lr_scheduler.LRScheduler:load_state_dict_flat",
    sig = "sched:load_state_dict_flat(metadata)",
    doc = "The inverse of state_dict_flat (the same as load_state_dict, which takes strings too).",
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1})
local a = optim.lr_scheduler.StepLR(opt, {step_size = 2})
a:step()
local b = optim.lr_scheduler.StepLR(opt, {step_size = 2})
b:load_state_dict_flat(a:state_dict_flat())
print(b.last_epoch)   -- 1]=],
  },
}
