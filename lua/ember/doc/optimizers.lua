-- Docs of the optimizers and schedulers (ember.optim.optimizers,
-- ember.optim.lbfgs, ember.optim.lr_scheduler). Format: ember/help.lua.

-- the example most optimizers share: three steps on w^2 with the optimizer `make` builds
local function three_steps(make)
  return ([=[
local optim = ember.optim
local w = ember.tensor({1.0, -2.0}, {dtype = "float64", requires_grad = true})
local opt = %s
for _ = 1, 3 do
  opt:zero_grad()
  local loss = (w * w):sum()
  loss:backward()
  opt:step()
end
print(w)]=]):format(make)
end

return {
  {
    name = "ember.optim.RMSprop",
    sig = [=[optim.RMSprop(params [, {lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0,
                        momentum = 0, centered = false, maximize = false}]) -> optimizer]=],
    doc = [=[
RMSprop: square_avg = alpha*square_avg + (1-alpha)*g^2; the step divides g by
sqrt(square_avg) + eps (centered: by sqrt(square_avg - grad_avg^2) + eps), through a
momentum buffer when momentum > 0. State: step, square_avg, momentum_buffer, grad_avg.
Matches torch.optim.RMSprop 2.x step for step.
Updates are composed from in-place tensor ops, so they run on any device.]=],
    example = three_steps("optim.RMSprop({w}, {lr = 0.01, momentum = 0.9, centered = true})"),
  },
  {
    name = "ember.optim.Adagrad",
    sig = [=[optim.Adagrad(params [, {lr = 1e-2, lr_decay = 0, weight_decay = 0,
                        initial_accumulator_value = 0, eps = 1e-10, maximize = false}]) -> optimizer]=],
    doc = [=[
Adagrad: sum += g^2; p -= clr * g / (sqrt(sum) + eps), with
clr = lr / (1 + (step-1)*lr_decay).
State: step, sum (starting at initial_accumulator_value, created on the first step).
Updates are composed from in-place tensor ops, so they run on any device.]=],
    example = three_steps("optim.Adagrad({w}, {lr = 0.1, lr_decay = 0.01})"),
  },
  {
    name = "ember.optim.Adamax",
    sig = [=[optim.Adamax(params [, {lr = 2e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
                       maximize = false}]) -> optimizer]=],
    doc = [=[
Adamax, Adam with the infinity norm: exp_inf = max(beta2*exp_inf, |g| + eps);
p -= lr / (1 - beta1^step) * exp_avg / exp_inf. State: step, exp_avg, exp_inf.
Updates are composed from in-place tensor ops, so they run on any device.]=],
    example = three_steps("optim.Adamax({w}, {lr = 0.1})"),
  },
  {
    name = "ember.optim.NAdam",
    sig = [=[optim.NAdam(params [, {lr = 2e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
                      momentum_decay = 4e-3, decoupled_weight_decay = false,
                      maximize = false}]) -> optimizer]=],
    doc = [=[
Adam with Nesterov momentum (PyTorch 2.x's NAdam; decoupled_weight_decay = true scales p
by 1 - lr*weight_decay instead of adding the L2 term to the gradient). The momentum
schedule mu_t = beta1*(1 - 0.5*0.96^(t*momentum_decay)); state: step, mu_product (kept
rounded to the default dtype, float32 unless set, as PyTorch's 0-d tensor), exp_avg,
exp_avg_sq.
Updates are composed from in-place tensor ops, so they run on any device.]=],
    example = three_steps("optim.NAdam({w}, {lr = 0.1})"),
  },
  {
    name = "ember.optim.RAdam",
    sig = [=[optim.RAdam(params [, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
                      decoupled_weight_decay = false, maximize = false}]) -> optimizer]=],
    doc = [=[
Rectified Adam: plain momentum steps while the variance estimate is unreliable
(rho_t <= 5), rectified adaptive steps after. decoupled_weight_decay as NAdam's.
State: step, exp_avg, exp_avg_sq.
Updates are composed from in-place tensor ops, so they run on any device.]=],
    example = three_steps("optim.RAdam({w}, {lr = 0.1})"),
  },
  {
    name = "ember.optim.Adadelta",
    sig = [=[optim.Adadelta(params [, {lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0,
                         maximize = false}]) -> optimizer]=],
    doc = [=[
Adadelta: delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g, running averages
with rho (in [0, 1]); p -= lr * delta. State: step, square_avg, acc_delta.
Updates are composed from in-place tensor ops, so they run on any device.]=],
    example = three_steps("optim.Adadelta({w}, {rho = 0.8})"),
  },
  {
    name = "ember.optim.ASGD",
    sig = [=[optim.ASGD(params [, {lr = 1e-2, lambd = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0,
                     maximize = false}]) -> optimizer]=],
    doc = [=[
Averaged SGD: p *= 1 - lambd*eta, then p -= eta*g; ax, the running average of p, starts
averaging after t0 steps (mu = 1/max(1, step - t0)); eta = lr/(1 + lambd*lr*step)^alpha.
State: step, eta, mu (numbers rounded to the default dtype, as PyTorch's 0-d tensors), ax.
Updates are composed from in-place tensor ops, so they run on any device.]=],
    example = three_steps("optim.ASGD({w}, {lr = 0.1, t0 = 1})"),
  },
  {
    name = "ember.optim.Rprop",
    sig = [=[optim.Rprop(params [, {lr = 1e-2, etas = {0.5, 1.2}, step_sizes = {1e-6, 50},
                      maximize = false}]) -> optimizer]=],
    doc = [=[
Resilient backpropagation: each element's step size grows by etaplus while the gradient
keeps its sign and shrinks by etaminus when it flips (that element then skips one update),
clamped to step_sizes; p -= sign(g) * step_size. Needs 0 < etaminus < 1 < etaplus. No
weight_decay (as PyTorch). State: step, prev, step_size.
Updates are composed from in-place tensor ops, so they run on any device.]=],
    example = three_steps("optim.Rprop({w}, {lr = 0.05})"),
  },
  {
    name = "ember.optim.LBFGS",
    sig = [=[optim.LBFGS(params [, {lr = 1, max_iter = 20, max_eval = max_iter*5//4, tolerance_grad = 1e-7,
                      tolerance_change = 1e-9, history_size = 100, line_search_fn = nil | "strong_wolfe",
                      maximize = false}]) -> optimizer]=],
    doc = [=[
Limited-memory BFGS (torch.optim.LBFGS 2.x: the line search stops within max_eval
evaluations; maximize searches on the negated loss and gradients; a PyTorch state_dict
loads): opt:step(closure) runs up to max_iter
iterations; the closure zeroes the gradients, recomputes the loss, calls backward and
returns the loss; step returns the closure's first loss. One parameter group only. All
parameters are handled as one flat vector; scalars come back to the host every iteration.
State (of the first parameter): func_evals, n_iter, d, t, old_dirs, old_stps, ro, H_diag,
prev_flat_grad, prev_loss; state_dict and state_dict_flat save it.]=],
    example = [=[
local optim = ember.optim
local x = ember.tensor({-1.5, 2.0}, {dtype = "float64", requires_grad = true})
local opt = optim.LBFGS({x}, {line_search_fn = "strong_wolfe"})
local function closure()
  opt:zero_grad()
  local a, b = 1 - x:narrow(1, 1, 1), x:narrow(1, 2, 1) - x:narrow(1, 1, 1) ^ 2
  local loss = (a * a + 100 * b * b):sum()
  loss:backward()
  return loss
end
for _ = 1, 5 do opt:step(closure) end
print(x)   -- close to (1, 1), Rosenbrock's minimum]=],
  },
  {
    name = "ember.optim.lr_scheduler.LambdaLR",
    sig = [=[lr_scheduler.LambdaLR(opt, {lr_lambda = f | {f1, f2, ...} [, last_epoch = -1]}) -> scheduler]=],
    doc = [=[
lr = initial_lr * f(epoch), one function for all groups or one per group. The functions
are not saved by state_dict (as PyTorch leaves plain functions out).]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1, momentum = 0.9})
local sched = optim.lr_scheduler.LambdaLR(opt, {lr_lambda = function(e) return 0.9 ^ e end})
for _ = 1, 4 do opt:step(); sched:step() end
print(sched:get_last_lr()[1])]=],
  },
  {
    name = "ember.optim.lr_scheduler.MultiplicativeLR",
    sig = [=[lr_scheduler.MultiplicativeLR(opt, {lr_lambda = f | {f1, ...} [, last_epoch = -1]}) -> scheduler]=],
    doc = [=[
lr *= f(epoch) at every epoch after the first (chainable). Functions are not saved.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1, momentum = 0.9})
local sched = optim.lr_scheduler.MultiplicativeLR(opt, {lr_lambda = function() return 0.95 end})
for _ = 1, 4 do opt:step(); sched:step() end
print(sched:get_last_lr()[1])]=],
  },
  {
    name = "ember.optim.lr_scheduler.MultiStepLR",
    sig = [=[lr_scheduler.MultiStepLR(opt, {milestones = {e1, e2, ...}, gamma = 0.1 [, last_epoch = -1]}) -> scheduler]=],
    doc = [=[
lr *= gamma at each milestone epoch (a milestone listed twice multiplies twice).]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1, momentum = 0.9})
local sched = optim.lr_scheduler.MultiStepLR(opt, {milestones = {2, 3}, gamma = 0.5})
for _ = 1, 4 do opt:step(); sched:step() end
print(sched:get_last_lr()[1])]=],
  },
  {
    name = "ember.optim.lr_scheduler.ExponentialLR",
    sig = [=[lr_scheduler.ExponentialLR(opt, {gamma = [, last_epoch = -1]}) -> scheduler]=],
    doc = [=[
lr *= gamma every epoch.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1, momentum = 0.9})
local sched = optim.lr_scheduler.ExponentialLR(opt, {gamma = 0.9})
for _ = 1, 4 do opt:step(); sched:step() end
print(sched:get_last_lr()[1])]=],
  },
  {
    name = "ember.optim.lr_scheduler.ConstantLR",
    sig = [=[lr_scheduler.ConstantLR(opt, {factor = 1/3, total_iters = 5 [, last_epoch = -1]}) -> scheduler]=],
    doc = [=[
lr = initial_lr * factor until epoch total_iters, then initial_lr. factor in [0, 1].]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1, momentum = 0.9})
local sched = optim.lr_scheduler.ConstantLR(opt, {factor = 0.5, total_iters = 2})
for _ = 1, 4 do opt:step(); sched:step() end
print(sched:get_last_lr()[1])]=],
  },
  {
    name = "ember.optim.lr_scheduler.PolynomialLR",
    sig = [=[lr_scheduler.PolynomialLR(opt, {total_iters = 5, power = 1 [, last_epoch = -1]}) -> scheduler]=],
    doc = [=[
lr = initial_lr * (1 - min(epoch, total_iters)/total_iters)^power (chainable form).]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1, momentum = 0.9})
local sched = optim.lr_scheduler.PolynomialLR(opt, {total_iters = 8, power = 2})
for _ = 1, 4 do opt:step(); sched:step() end
print(sched:get_last_lr()[1])]=],
  },
  {
    name = "ember.optim.lr_scheduler.CosineAnnealingWarmRestarts",
    sig = [=[lr_scheduler.CosineAnnealingWarmRestarts(opt, {T_0 =, T_mult = 1, eta_min = 0 [, last_epoch = -1]}) -> scheduler]=],
    doc = [=[
SGDR: cosine annealing from initial_lr to eta_min over T_i epochs, restarting with
T_i = T_0, T_0*T_mult, ... sched:step(epoch) takes fractional epochs
(epoch + batch/batches).]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1, momentum = 0.9})
local sched = optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, {T_0 = 3, T_mult = 2})
for _ = 1, 4 do opt:step(); sched:step() end
print(sched:get_last_lr()[1])]=],
  },
  {
    name = "ember.optim.lr_scheduler.CyclicLR",
    sig = [=[lr_scheduler.CyclicLR(opt, {base_lr =, max_lr =, step_size_up = 2000, step_size_down = step_size_up,
                                mode = "triangular" | "triangular2" | "exp_range", gamma = 1, scale_fn = nil,
                                scale_mode = "cycle", cycle_momentum = true, base_momentum = 0.8,
                                max_momentum = 0.9 [, last_epoch = -1]}) -> scheduler]=],
    doc = [=[
Cyclical learning rate between base_lr and max_lr (numbers or one per group), stepped
per batch; with cycle_momentum (needs an optimizer with momentum) the momentum cycles
inversely between max_momentum and base_momentum. A custom scale_fn(x) replaces mode.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1, momentum = 0.9})
local sched = optim.lr_scheduler.CyclicLR(opt, {base_lr = 0.01, max_lr = 0.1, step_size_up = 2})
for _ = 1, 4 do opt:step(); sched:step() end
print(sched:get_last_lr()[1])]=],
  },
  {
    name = "ember.optim.lr_scheduler.OneCycleLR",
    sig = [=[lr_scheduler.OneCycleLR(opt, {max_lr =, total_steps = | epochs =, steps_per_epoch =, pct_start = 0.3,
                                  anneal_strategy = "cos" | "linear", cycle_momentum = true,
                                  base_momentum = 0.85, max_momentum = 0.95, div_factor = 25,
                                  final_div_factor = 1e4, three_phase = false [, last_epoch = -1]}) -> scheduler]=],
    doc = [=[
The 1cycle policy: lr rises from max_lr/div_factor to max_lr over pct_start of the steps,
then anneals to initial_lr/final_div_factor (three_phase: back to the initial lr first).
Momentum (or Adam's betas[1]) cycles inversely. Stepping past total_steps is an error.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1, momentum = 0.9})
local sched = optim.lr_scheduler.OneCycleLR(opt, {max_lr = 1.0, total_steps = 10})
for _ = 1, 4 do opt:step(); sched:step() end
print(sched:get_last_lr()[1])]=],
  },
  {
    name = "ember.optim.lr_scheduler.ReduceLROnPlateau",
    sig = [=[lr_scheduler.ReduceLROnPlateau(opt [, {mode = "min" | "max", factor = 0.1, patience = 10, threshold = 1e-4,
                                        threshold_mode = "rel" | "abs", cooldown = 0, min_lr = 0, eps = 1e-8}]) -> scheduler]=],
    doc = [=[
Multiplies the lr by factor when the metric given to sched:step(metric) (a number or a
1-element tensor) has not improved for patience epochs, then waits cooldown epochs; never
below min_lr (a number or one per group), and skips changes smaller than eps.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1})
local sched = optim.lr_scheduler.ReduceLROnPlateau(opt, {patience = 1})
for _, val_loss in ipairs({1.0, 0.9, 0.9, 0.9}) do sched:step(val_loss) end
print(opt.param_groups[1].lr)   -- 0.01]=],
  },
  {
    name = "ember.optim.lr_scheduler.ReduceLROnPlateau:step",
    sig = [=[sched:step(metric)]=],
    doc = [=[
Records one epoch's metric and reduces the lr if it has stopped improving.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 0.1})
local sched = optim.lr_scheduler.ReduceLROnPlateau(opt, {mode = "max", patience = 0})
sched:step(0.5); sched:step(0.4)
print(sched:get_last_lr()[1])]=],
  },
  {
    name = "ember.optim.lr_scheduler.SequentialLR",
    sig = [=[lr_scheduler.SequentialLR(opt, {schedulers = {s1, s2, ...}, milestones = {m1, ...}}) -> scheduler]=],
    doc = [=[
Runs s1 until epoch m1, then s2 (restarted at its epoch 0), and so on; the schedulers
must be made on opt. state_dict holds theirs in _schedulers; the flat form prefixes
their keys with "_schedulers.<i>.".]=],
    example = [=[
local optim, L = ember.optim, ember.optim.lr_scheduler
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 1})
local sched = L.SequentialLR(opt, {schedulers = {L.ConstantLR(opt, {factor = 0.1, total_iters = 2}),
                                                 L.ExponentialLR(opt, {gamma = 0.9})}, milestones = {2}})
for _ = 1, 3 do opt:step(); sched:step() end
print(sched:get_last_lr()[1])   -- 0.9 (as PyTorch 1.13)]=],
  },
  {
    name = "ember.optim.lr_scheduler.ChainedScheduler",
    sig = [=[lr_scheduler.ChainedScheduler({s1, s2, ...}) -> scheduler]=],
    doc = [=[
step() steps every scheduler in turn, so chainable schedules multiply.]=],
    example = [=[
local optim, L = ember.optim, ember.optim.lr_scheduler
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 1})
local sched = L.ChainedScheduler({L.ConstantLR(opt, {factor = 0.1, total_iters = 2}),
                                  L.ExponentialLR(opt, {gamma = 0.9})})
for _ = 1, 2 do opt:step(); sched:step() end
print(sched:get_last_lr()[1])   -- 0.81]=],
  },
  {
    name = "ember.optim.LBFGS:step",
    sig = "opt:step(closure) -> the closure's first loss",
    doc = [=[
Runs up to max_iter L-BFGS iterations (at most max_eval closure calls). The closure is
required: it must zero the gradients, compute the loss, call backward and return it.]=],
    example = [=[
local x = ember.tensor({3.0}, {dtype = "float64", requires_grad = true})
local opt = ember.optim.LBFGS({x})
print(opt:step(function() opt:zero_grad(); local l = (x * x):sum(); l:backward(); return l end))]=],
  },
  {
    name = "ember.optim.LBFGS:state_dict",
    also = {"ember.optim.LBFGS:load_state_dict", "ember.optim.LBFGS:state_dict_flat"},
    sig = "opt:state_dict() -> {state = {[1] = {...}}, param_groups = {...}}",
    doc = [=[
LBFGS's state sits on its first parameter and holds flat vectors and lists of them;
these methods save and restore it (the flat form names list entries
"state.1.old_dirs.<i>"); load_state_dict_flat is the base class's.]=],
    example = [=[
local x = ember.tensor({3.0}, {dtype = "float64", requires_grad = true})
local opt = ember.optim.LBFGS({x}, {max_iter = 2})
opt:step(function() opt:zero_grad(); local l = (x * x):sum(); l:backward(); return l end)
print(opt:state_dict().state[1].func_evals)]=],
  },
  {
    name = "ember.optim.lr_scheduler.CosineAnnealingWarmRestarts:step",
    sig = "sched:step([epoch])",
    doc = [=[
Advances one epoch, or jumps to epoch (a number >= 0, fractional allowed) and sets
T_cur and T_i as PyTorch does.]=],
    example = [=[
local optim = ember.optim
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 1})
local sched = optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, {T_0 = 4})
sched:step(2.0)
print(sched:get_last_lr()[1])   -- 0.5]=],
  },
  {
    name = "ember.optim.lr_scheduler.SequentialLR:step",
    also = {"ember.optim.lr_scheduler.ChainedScheduler:step"},
    sig = "sched:step()",
    doc = [=[
SequentialLR steps the scheduler of the current stretch (restarting it at a milestone);
ChainedScheduler steps all of its schedulers in order.]=],
    example = [=[
local optim, L = ember.optim, ember.optim.lr_scheduler
local opt = optim.SGD({ember.zeros(1, {requires_grad = true})}, {lr = 1})
local sched = L.ChainedScheduler({L.ExponentialLR(opt, {gamma = 0.5})})
sched:step()
print(sched:get_last_lr()[1])   -- 0.5]=],
  },
}
