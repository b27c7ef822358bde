-- ember.optim.optimizers — the optimizers without a fused engine step:
-- RMSprop, Adagrad, Adamax, NAdam, RAdam, Adadelta, ASGD, Rprop, Adafactor, Muon,
-- and Adam/AdamW with amsgrad. Loaded by ember.optim, which passes its class builder and
-- checks (install(M, H)).
--
-- Each update is torch.optim 2.x's single-tensor algorithm written with
-- tensor ops, in place and under no_grad (Optimizer:step), so it runs on
-- whatever device the parameter lives. PyTorch's addcmul_/addcdiv_ compute
-- self + (value*t1)*t2 and self + (value*t1)/t2; the helpers below keep
-- that order. PyTorch's CPU kernels fuse the final multiply-add (one
-- rounding, as its add with alpha and lerp), ember's tensor ops round twice:
-- float64 trajectories agree to about 1e-14 relative, not to the bit (the
-- fused SGD/Adam engine steps do agree to the bit).
--
-- State names are PyTorch's so state dicts correspond; `step` is a Lua
-- number (a 0-d tensor in PyTorch; load_state_dict takes either).
local ember = require "ember"

-- self += (value * t1) * t2
local function addcmul_(self, t1, t2, value)
  return self:add_((t1 * value):mul_(t2))
end

-- self += (value * t1) / t2
local function addcdiv_(self, t1, t2, value)
  return self:add_((t1 * value):div_(t2))
end

-- PyTorch keeps NAdam's mu_product and ASGD's eta and mu in 0-d tensors of its
-- default dtype (float32 unless set to float64); rounding them the same way is
-- needed to follow its float64 trajectories beyond ~1e-8. The default is read
-- at each step (PyTorch fixes the tensor's dtype when the state is made).
local function default_dtype(x)
  if ember.get_default_dtype() == "float64" then return x end
  return (string.unpack("f", string.pack("f", x)))
end

-- The gradient as the update sees it: negated for maximize, plus the L2
-- term; with decoupled_weight_decay (NAdam, RAdam) p is scaled by
-- 1 - lr * weight_decay instead. A new tensor whenever it differs from p.grad
-- (never written to).
local function effective_grad(p, grad, g)
  if g.maximize then grad = -grad end
  if g.weight_decay ~= 0 then
    if g.decoupled_weight_decay then p:mul_(1 - g.lr * g.weight_decay)
    else grad = grad + p * g.weight_decay end
  end
  return grad
end

return function(M, H)
  local class, check_number, check_boolean, fail = H.class, H.check_number, H.check_boolean, H.fail
  local IGNORED, check_adam_family, zero_state = H.IGNORED, H.check_adam_family, H.zero_state

  local function check_lr(g, where)
    check_number(where, "lr", g.lr, 0, false, nil, nil, "learning rate")
  end

  -- check_adam_family's checks, then these options as booleans
  local function adam_family_checks(...)
    local booleans = {...}
    return function(g, where)
      check_adam_family(g, where)
      for _, name in ipairs(booleans) do check_boolean(where, name, g[name]) end
    end
  end

  -- the Adam family's step: st.step counts this one; returns it and the betas
  local function adam_step(st, g)
    st.step = st.step + 1
    return st.step, g.betas[1], g.betas[2]
  end

  -------------------------------------------------------------------------
  -- Adam/AdamW with amsgrad: the fused step covers amsgrad = false; the
  -- amsgrad variant also keeps max_exp_avg_sq and divides by its root.

  function H.adam_amsgrad_param(self, p, grad, st, g)
    zero_state(st, p, "exp_avg", "exp_avg_sq")
    if st.max_exp_avg_sq == nil then st.max_exp_avg_sq = ember.zeros_like(p) end
    local step, b1, b2 = adam_step(st, g)
    if g.maximize then grad = -grad end
    if H.decoupled(self, g) then
      p:mul_(1 - g.lr * g.weight_decay)
    elseif g.weight_decay ~= 0 then
      grad = grad + p * g.weight_decay
    end
    st.exp_avg:lerp_(grad, 1 - b1)
    addcmul_(st.exp_avg_sq:mul_(b2), grad, grad, 1 - b2)
    local bc1, bc2 = 1 - b1 ^ step, 1 - b2 ^ step
    st.max_exp_avg_sq:maximum_(st.exp_avg_sq)
    local denom = (st.max_exp_avg_sq:sqrt() / math.sqrt(bc2)):add_(g.eps)
    addcdiv_(p, st.exp_avg, denom, -(g.lr / bc1))
  end

  -------------------------------------------------------------------------
  -- RMSprop

  local function check_rmsprop(g, where)
    check_lr(g, where)
    check_number(where, "alpha", g.alpha, 0, false, nil, nil, "alpha value")
    check_number(where, "eps", g.eps, 0, false, nil, nil, "epsilon value")
    check_number(where, "weight_decay", g.weight_decay, 0)
    check_number(where, "momentum", g.momentum, 0, false, nil, nil, "momentum value")
    check_boolean(where, "centered", g.centered)
    check_boolean(where, "maximize", g.maximize)
  end

  local function rmsprop_param(_, p, grad, st, g)
    zero_state(st, p, "square_avg")
    if g.momentum > 0 and st.momentum_buffer == nil then st.momentum_buffer = ember.zeros_like(p) end
    if g.centered and st.grad_avg == nil then st.grad_avg = ember.zeros_like(p) end
    st.step = st.step + 1
    grad = effective_grad(p, grad, g)
    local alpha = g.alpha
    addcmul_(st.square_avg:mul_(alpha), grad, grad, 1 - alpha)
    local avg
    if g.centered then
      st.grad_avg:lerp_(grad, 1 - alpha)
      avg = addcmul_(st.square_avg:clone(), st.grad_avg, st.grad_avg, -1):sqrt_()
    else
      avg = st.square_avg:sqrt()
    end
    avg:add_(g.eps)
    if g.momentum > 0 then
      addcdiv_(st.momentum_buffer:mul_(g.momentum), grad, avg, 1)
      p:add_(st.momentum_buffer, {alpha = -g.lr})
    else
      addcdiv_(p, grad, avg, -g.lr)
    end
  end

  --- optim.RMSprop(params, {lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0,
  ---                        momentum = 0, centered = false, maximize = false})
  M.RMSprop = class("RMSprop", {lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0,
                                centered = false, maximize = false},
                    {foreach = true}, check_rmsprop, rmsprop_param)

  -------------------------------------------------------------------------
  -- Adagrad

  local function check_adagrad(g, where)
    check_lr(g, where)
    check_number(where, "lr_decay", g.lr_decay, 0, false, nil, nil, "lr_decay value")
    check_number(where, "weight_decay", g.weight_decay, 0)
    check_number(where, "initial_accumulator_value", g.initial_accumulator_value, 0)
    check_number(where, "eps", g.eps, 0, false, nil, nil, "epsilon value")
    check_boolean(where, "maximize", g.maximize)
  end

  local function adagrad_param(_, p, grad, st, g)
    if st.sum == nil then
      st.step = 0
      st.sum = ember.full_like(p, g.initial_accumulator_value)
    end
    local step = st.step + 1
    st.step = step
    grad = effective_grad(p, grad, g)
    local clr = g.lr / (1 + (step - 1) * g.lr_decay)
    addcmul_(st.sum, grad, grad, 1)
    local std = st.sum:sqrt():add_(g.eps)
    addcdiv_(p, grad, std, -clr)
  end

  --- optim.Adagrad(params, {lr = 1e-2, lr_decay = 0, weight_decay = 0,
  ---                        initial_accumulator_value = 0, eps = 1e-10, maximize = false})
  M.Adagrad = class("Adagrad", {lr = 1e-2, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0,
                                eps = 1e-10, maximize = false}, {foreach = true, fused = true}, check_adagrad,
                    adagrad_param)
  M.Adagrad._unsupported = {differentiable = H.NOT_DIFFERENTIABLE}   -- PyTorch's Adagrad has no capturable

  -------------------------------------------------------------------------
  -- Adamax

  local check_adamax = adam_family_checks("maximize")

  local function adamax_param(_, p, grad, st, g)
    zero_state(st, p, "exp_avg", "exp_inf")
    local step, b1, b2 = adam_step(st, g)
    grad = effective_grad(p, grad, g)
    st.exp_avg:lerp_(grad, 1 - b1)
    st.exp_inf:mul_(b2):maximum_(grad:abs():add_(g.eps))
    addcdiv_(p, st.exp_avg, st.exp_inf, -(g.lr / (1 - b1 ^ step)))
  end

  --- optim.Adamax(params, {lr = 2e-3, betas = {0.9, 0.999}, eps = 1e-8,
  ---                       weight_decay = 0, maximize = false})
  M.Adamax = class("Adamax", {lr = 2e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
                              maximize = false}, IGNORED, check_adamax, adamax_param)

  -------------------------------------------------------------------------
  -- NAdam and RAdam (PyTorch 2.x's: maximize, and decoupled_weight_decay, which
  -- scales p by 1 - lr * weight_decay before the step instead of adding the L2 term)

  local check_radam = adam_family_checks("decoupled_weight_decay", "maximize")

  local function check_nadam(g, where)
    check_radam(g, where)
    check_number(where, "momentum_decay", g.momentum_decay, 0, false, nil, nil, "momentum_decay value")
  end

  local function nadam_param(_, p, grad, st, g)
    if zero_state(st, p, "exp_avg", "exp_avg_sq") then st.mu_product = 1.0 end
    local step, b1, b2 = adam_step(st, g)
    local bc2 = 1 - b2 ^ step
    grad = effective_grad(p, grad, g)
    local mu = b1 * (1 - 0.5 * 0.96 ^ (step * g.momentum_decay))
    local mu_next = b1 * (1 - 0.5 * 0.96 ^ ((step + 1) * g.momentum_decay))
    local mu_product = default_dtype(st.mu_product * default_dtype(mu))
    st.mu_product = mu_product
    -- PyTorch 2.x: mu_product * mu_next in double (1.13 multiplied by mu a second time)
    local mu_product_next = mu_product * mu_next
    st.exp_avg:lerp_(grad, 1 - b1)
    addcmul_(st.exp_avg_sq:mul_(b2), grad, grad, 1 - b2)
    local denom = (st.exp_avg_sq / bc2):sqrt_():add_(g.eps)
    addcdiv_(p, grad, denom, -g.lr * (1 - mu) / (1 - mu_product))
    addcdiv_(p, st.exp_avg, denom, -g.lr * mu_next / (1 - mu_product_next))
  end

  --- optim.NAdam(params, {lr = 2e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
  ---                      momentum_decay = 4e-3, decoupled_weight_decay = false, maximize = false})
  M.NAdam = class("NAdam", {lr = 2e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
                            momentum_decay = 4e-3, decoupled_weight_decay = false, maximize = false},
                  IGNORED, check_nadam, nadam_param)
  M.NAdam._scalar_state = {mu_product = true}

  -------------------------------------------------------------------------
  -- RAdam

  local function radam_param(_, p, grad, st, g)
    zero_state(st, p, "exp_avg", "exp_avg_sq")
    local step, b1, b2 = adam_step(st, g)
    local bc1, bc2 = 1 - b1 ^ step, 1 - b2 ^ step
    grad = effective_grad(p, grad, g)
    st.exp_avg:lerp_(grad, 1 - b1)
    addcmul_(st.exp_avg_sq:mul_(b2), grad, grad, 1 - b2)
    local corrected = st.exp_avg / bc1
    local rho_inf = 2 / (1 - b2) - 1
    local rho_t = rho_inf - 2 * step * (b2 ^ step) / bc2
    if rho_t > 5 then
      local rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
      local adaptive = math.sqrt(bc2) / st.exp_avg_sq:sqrt():add_(g.eps)
      p:add_(corrected:mul_(g.lr):mul_(adaptive):mul_(rect), {alpha = -1})
    else
      p:add_(corrected:mul_(g.lr), {alpha = -1})
    end
  end

  --- optim.RAdam(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
  ---                      decoupled_weight_decay = false, maximize = false})
  M.RAdam = class("RAdam", {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
                            decoupled_weight_decay = false, maximize = false},
                  IGNORED, check_radam, radam_param)

  -------------------------------------------------------------------------
  -- Adadelta

  local function check_adadelta(g, where)
    check_lr(g, where)
    check_number(where, "rho", g.rho, 0, false, 1, false, "rho value")
    check_number(where, "eps", g.eps, 0, false, nil, nil, "epsilon value")
    check_number(where, "weight_decay", g.weight_decay, 0)
    check_boolean(where, "maximize", g.maximize)
  end

  local function adadelta_param(_, p, grad, st, g)
    zero_state(st, p, "square_avg", "acc_delta")
    st.step = st.step + 1
    local rho = g.rho
    grad = effective_grad(p, grad, g)
    addcmul_(st.square_avg:mul_(rho), grad, grad, 1 - rho)
    local std = (st.square_avg + g.eps):sqrt_()
    local delta = (st.acc_delta + g.eps):sqrt_():div_(std):mul_(grad)
    addcmul_(st.acc_delta:mul_(rho), delta, delta, 1 - rho)
    p:add_(delta, {alpha = -g.lr})
  end

  --- optim.Adadelta(params, {lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0, maximize = false})
  M.Adadelta = class("Adadelta", {lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0, maximize = false},
                     IGNORED, check_adadelta, adadelta_param)

  -------------------------------------------------------------------------
  -- ASGD (averaged SGD). PyTorch keeps eta and mu in 0-d tensors of its default dtype
  -- and steps with their rounded values; ember keeps them as numbers rounded the same
  -- way (default_dtype), so float64 trajectories agree to the last bits.

  local function check_asgd(g, where)
    check_lr(g, where)
    check_number(where, "lambd", g.lambd)
    check_number(where, "alpha", g.alpha)
    check_number(where, "t0", g.t0)
    check_number(where, "weight_decay", g.weight_decay, 0)
    check_boolean(where, "maximize", g.maximize)
  end

  local function asgd_param(_, p, grad, st, g)
    if st.ax == nil then
      st.step, st.eta, st.mu = 0, default_dtype(g.lr), 1.0
      st.ax = ember.zeros_like(p)
    end
    local step = st.step + 1
    st.step = step
    grad = effective_grad(p, grad, g)
    local eta = st.eta
    p:mul_(1 - g.lambd * eta)
    p:add_(grad, {alpha = -eta})
    if st.mu ~= 1 then
      st.ax:add_((p - st.ax):mul_(st.mu))
    else
      st.ax:copy_(p)
    end
    st.eta = default_dtype(g.lr / ((1 + g.lambd * g.lr * step) ^ g.alpha))
    st.mu = default_dtype(1 / math.max(1, step - g.t0))
  end

  --- optim.ASGD(params, {lr = 1e-2, lambd = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0,
  ---                     maximize = false})
  M.ASGD = class("ASGD", {lr = 1e-2, lambd = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0, maximize = false},
                 IGNORED, check_asgd, asgd_param)
  M.ASGD._scalar_state = {eta = true, mu = true}

  -------------------------------------------------------------------------
  -- Rprop (no weight_decay in PyTorch)

  local function check_rprop(g, where)
    check_lr(g, where)
    if type(g.etas) ~= "table" or #g.etas ~= 2 or type(g.etas[1]) ~= "number" or type(g.etas[2]) ~= "number" then
      fail("%s: etas must be a list of two numbers {etaminus, etaplus}, e.g. {0.5, 1.2}", where)
    end
    if not (0 < g.etas[1] and g.etas[1] < 1 and 1 < g.etas[2]) then
      fail("%s: invalid eta values: etas = {%s, %s} (must be 0 < etaminus < 1 < etaplus)", where,
           tostring(g.etas[1]), tostring(g.etas[2]))
    end
    if type(g.step_sizes) ~= "table" or #g.step_sizes ~= 2 or type(g.step_sizes[1]) ~= "number"
        or type(g.step_sizes[2]) ~= "number" then
      fail("%s: step_sizes must be a list of two numbers {min, max}, e.g. {1e-6, 50}", where)
    end
    if not (g.step_sizes[1] <= g.step_sizes[2]) then
      fail("%s: invalid step_sizes = {%s, %s} (min must be <= max)", where,
           tostring(g.step_sizes[1]), tostring(g.step_sizes[2]))
    end
    check_boolean(where, "maximize", g.maximize)
  end

  local function rprop_param(_, p, grad, st, g)
    if st.prev == nil then
      st.step = 0
      st.prev = ember.zeros_like(p)
      st.step_size = ember.full_like(p, g.lr)
    end
    st.step = st.step + 1
    local etaminus, etaplus = g.etas[1], g.etas[2]
    if g.maximize then grad = -grad end
    local sign = (grad * st.prev):sign_()
    sign:masked_fill_(sign:gt(0), etaplus)
    sign:masked_fill_(sign:lt(0), etaminus)
    sign:masked_fill_(sign:eq(0), 1)
    st.step_size:mul_(sign):clamp_(g.step_sizes[1], g.step_sizes[2])
    grad = grad:clone()
    grad:masked_fill_(sign:eq(etaminus), 0)
    addcmul_(p, grad:sign(), st.step_size, -1)
    st.prev:copy_(grad)
  end

  --- optim.Rprop(params, {lr = 1e-2, etas = {0.5, 1.2}, step_sizes = {1e-6, 50}, maximize = false})
  M.Rprop = class("Rprop", {lr = 1e-2, etas = {0.5, 1.2}, step_sizes = {1e-6, 50}, maximize = false},
                  IGNORED, check_rprop, rprop_param)

  -------------------------------------------------------------------------
  -- Adafactor (PyTorch 2.5's): the second moment of a matrix (or of the last two dims of
  -- a larger tensor) kept as its row and column means, a vector's in full; no first
  -- moment; relative step sizes (the parameter's RMS times min(lr, 1 / sqrt(step))) and
  -- the update's RMS clipped at d.

  local EPS = {float32 = 1.1920928955078125e-07, float64 = 2.220446049250313e-16,
               float16 = 0.0009765625, bfloat16 = 0.0078125}

  local function check_adafactor(g, where)
    check_lr(g, where)
    if type(g.beta2_decay) ~= "number" or not (g.beta2_decay <= 0) then
      fail("%s: invalid beta2_decay: %s (must be <= 0)", where, tostring(g.beta2_decay))
    end
    if type(g.eps) ~= "table" or (g.eps[1] and type(g.eps[1]) ~= "number") or type(g.eps[2]) ~= "number" then
      fail("%s: eps must be a pair {eps1 (nil or false: the dtype's eps), eps2}, e.g. {false, 1e-3}", where)
    end
    if g.eps[1] then check_number(where, "eps[1]", g.eps[1], 0, false, nil, nil, "epsilon1") end
    check_number(where, "eps[2]", g.eps[2], 0, false, nil, nil, "epsilon2")
    check_number(where, "d", g.d, 1, false, nil, nil, "clipping threshold d")
    check_number(where, "weight_decay", g.weight_decay, 0, false, nil, nil, "weight_decay value")
    check_boolean(where, "maximize", g.maximize)
  end

  -- the mean of the squares along dim, kept
  local function mean_sq(x, dim) return ember.linalg.vector_norm(x, 2, dim, true):square_():div_(x:size(dim)) end

  -- p's sizes with dim d (from the end) 1: the row and column means of the squares
  local function factored_shape(p, d)
    local sizes = {}
    for i = 1, p.ndim do sizes[i] = p:size(i) end
    sizes[p.ndim + 1 - d] = 1
    return sizes
  end

  local function adafactor_param(_, p, grad, st, g)
    if st.step == nil then
      st.step = 0
      if grad.ndim > 1 then
        st.row_var = ember.zeros(factored_shape(p, 1), {dtype = grad.dtype, device = grad.device})
        st.col_var = ember.zeros(factored_shape(p, 2), {dtype = grad.dtype, device = grad.device})
      else
        st.variance = ember.zeros_like(grad)
      end
    end
    if g.maximize then grad = -grad end
    local step = st.step + 1
    st.step = step
    local eps1, eps2 = g.eps[1] or EPS[p.dtype], g.eps[2]
    local w = step ^ g.beta2_decay                      -- 1 - beta2 at this step
    local rho = math.min(g.lr, 1 / math.sqrt(step))
    local alpha = math.max(eps2, p:norm():item() / math.sqrt(p:numel())) * rho
    if g.weight_decay ~= 0 then p:mul_(1 - g.lr * g.weight_decay) end
    local var
    if grad.ndim > 1 then
      st.row_var:lerp_(mean_sq(grad, -1), w)
      st.col_var:lerp_(mean_sq(grad, -2), w)
      var = st.row_var:matmul(st.col_var):div_(st.row_var:mean(-2, true):clamp_(eps1))
    else
      st.variance:lerp_(grad * grad, w)
      var = st.variance:clone()
    end
    local update = var:clamp_(eps1 * eps1):rsqrt_():mul_(grad)
    local denom = math.max(1, update:norm():item() / (math.sqrt(update:numel()) * g.d))
    p:add_(update, {alpha = -alpha / denom})
  end

  --- optim.Adafactor(params, {lr = 1e-2, beta2_decay = -0.8, eps = {false, 1e-3}, d = 1,
  ---                          weight_decay = 0, maximize = false})
  M.Adafactor = class("Adafactor", {lr = 1e-2, beta2_decay = -0.8, eps = {false, 1e-3}, d = 1.0, weight_decay = 0,
                                    maximize = false}, IGNORED, check_adafactor, adafactor_param)
  M.Adafactor._unsupported = {}
  M.Adafactor._state_shapes = {row_var = function(p) return factored_shape(p, 1) end,
                               col_var = function(p) return factored_shape(p, 2) end}

  -------------------------------------------------------------------------
  -- Muon (PyTorch 2.9's): SGD momentum (Nesterov's by default) whose update, a matrix, is
  -- orthogonalised by a quintic Newton-Schulz iteration in bfloat16 before the step. For 2-D
  -- parameters only (the others go to another optimizer, as in PyTorch).

  local ADJUST_LR = {original = true, match_rms_adamw = true, spectral_unclamped = true}

  local function check_muon(g, where)
    check_lr(g, where)
    check_number(where, "weight_decay", g.weight_decay, 0, false, nil, nil, "weight decay")
    check_number(where, "momentum", g.momentum, 0, false, nil, nil, "momentum")
    check_boolean(where, "nesterov", g.nesterov)
    local c = g.ns_coefficients
    if type(c) ~= "table" or #c ~= 3 or type(c[1]) ~= "number" or type(c[2]) ~= "number" or type(c[3]) ~= "number" then
      fail("%s: ns_coefficients must be a list of three numbers {a, b, c}", where)
    end
    check_number(where, "eps", g.eps, 0, false, nil, nil, "epsilon")
    if math.type(g.ns_steps) ~= "integer" or g.ns_steps < 0 or g.ns_steps >= 100 then
      fail("%s: ns_steps must be an integer in [0, 100), got %s", where, tostring(g.ns_steps))
    end
    if g.adjust_lr_fn ~= nil and not ADJUST_LR[g.adjust_lr_fn] then
      fail("%s: adjust_lr_fn %s is not supported (nil, \"original\", \"match_rms_adamw\" or "
           .. "\"spectral_unclamped\")", where, tostring(g.adjust_lr_fn))
    end
    for i, p in ipairs(g.params) do
      if p.ndim ~= 2 then
        fail("%s: Muon only supports 2-D parameters, parameter %d has shape [%s]", where, i,
             table.concat(p.shape, ", "))
      end
    end
  end

  -- G's orthogonalisation X ~ U S' V^T (S' near 1) by ns_steps of X <- a X + (b A + c A A) X,
  -- A = X X^T, in bfloat16 on the wide orientation, after X = G / max(||G||, eps)
  local function zeropower(grad, g)
    local a, b, c = g.ns_coefficients[1], g.ns_coefficients[2], g.ns_coefficients[3]
    local tall = grad:size(1) > grad:size(2)
    local x = grad:to("bfloat16")
    if tall then x = x:t() end
    x = x / x:norm():clamp(g.eps)
    for _ = 1, g.ns_steps do
      local gram = x:matmul(x:t())
      x = ember.addmm(x, ember.addmm(gram, gram, gram, {beta = b, alpha = c}), x, {beta = a})
    end
    if tall then x = x:t() end
    return x
  end

  local function muon_lr(lr, fn, rows, cols)
    if fn == nil or fn == "original" then return lr * math.sqrt(math.max(1, rows / cols)) end
    if fn == "match_rms_adamw" then return lr * 0.2 * math.sqrt(math.max(rows, cols)) end
    return lr * math.sqrt(rows / cols)                  -- spectral_unclamped
  end

  local function muon_param(_, p, grad, st, g)
    if st.momentum_buffer == nil then st.momentum_buffer = ember.zeros_like(grad) end
    local buf = st.momentum_buffer
    buf:lerp_(grad, 1 - g.momentum)
    local update = g.nesterov and grad:lerp(buf, g.momentum) or buf
    update = zeropower(update, g)
    p:mul_(1 - g.lr * g.weight_decay)
    p:add_(update, {alpha = -muon_lr(g.lr, g.adjust_lr_fn, p:size(1), p:size(2))})
  end

  --- optim.Muon(params, {lr = 1e-3, weight_decay = 0.1, momentum = 0.95, nesterov = true,
  ---                     ns_coefficients = {3.4445, -4.775, 2.0315}, eps = 1e-7, ns_steps = 5,
  ---                     adjust_lr_fn = nil})
  M.Muon = class("Muon", {lr = 1e-3, weight_decay = 0.1, momentum = 0.95, nesterov = true,
                          ns_coefficients = {3.4445, -4.775, 2.0315}, eps = 1e-7, ns_steps = 5}, {},
                 check_muon, muon_param)
  M.Muon._optional = {adjust_lr_fn = true}
  M.Muon._unsupported = {}
end
