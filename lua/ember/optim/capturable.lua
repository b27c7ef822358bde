-- ember.optim.capturable — Adam/AdamW with capturable = true: the step count
-- lives in a 0-d tensor on the parameter's device and the bias corrections
-- are computed there, so a step captured in a CUDA graph (ember.cuda.graph)
-- counts on at every replay. The fused engine step takes the count as a
-- host number, which a replay would repeat: it refuses to be captured.
--
-- This is torch.optim 1.13's capturable single-tensor Adam written with
-- tensor ops (several launches per parameter instead of one). Loaded by
-- ember.optim (install(M, H)).
--
-- The learning rate may be a 0-d tensor on the parameters' device (PyTorch
-- takes lr as a Tensor when capturable = true): a captured step then reads
-- it at every replay, so a schedule changes it between replays with
-- g.lr:fill_(v) (a kernel launch, queued before the next replay). Assigning
-- a new value to g.lr instead leaves a captured step reading the old tensor.
local ember = require "ember"

return function(_, H)
  -- the checks of a tensor lr (check_adam's part for it)
  function H.check_tensor_lr(g, where)
    local lr = g.lr
    if not g.capturable then
      H.fail("%s: lr as a tensor needs capturable = true (the fused steps take lr as a number)", where)
    end
    if lr.ndim ~= 0 then
      H.fail("%s: lr as a tensor must be 0-d (one value), got shape [%s]", where, table.concat(lr.shape, ","))
    end
    if lr.dtype ~= "float32" and lr.dtype ~= "float64" then
      H.fail("%s: lr as a tensor must be float32 or float64, got %s", where, lr.dtype)
    end
    local dev = tostring(lr.device)
    for i, p in ipairs(g.params) do
      if tostring(p.device) ~= dev then
        H.fail("%s: lr is a tensor on %s but parameter %d is on %s (a tensor lr must be on the parameters' "
                 .. "device)", where, dev, i, tostring(p.device))
      end
    end
  end

  function H.adam_capturable_param(self, p, grad, st, g)
    if st.exp_avg == nil then
      st.exp_avg, st.exp_avg_sq = ember.zeros_like(p), ember.zeros_like(p)
    end
    if not ember.is_tensor(st.step) then   -- a new state, or one loaded with a number
      st.step = ember.full({}, st.step or 0, {dtype = p.dtype, device = p.device})
    end
    local b1, b2 = g.betas[1], g.betas[2]
    if g.maximize then grad = -grad end
    if H.decoupled(self, g) then
      if g.weight_decay ~= 0 then p:mul_(1 - g.lr * g.weight_decay) end
    elseif g.weight_decay ~= 0 then
      grad = grad + p * g.weight_decay
    end
    st.step:add_(1)
    st.exp_avg:lerp_(grad, 1 - b1)
    st.exp_avg_sq:mul_(b2):add_((grad * (1 - b2)):mul_(grad))
    local neg_step_size = (1 - b1 ^ st.step):reciprocal_():mul_(-g.lr)
    local bc2_sqrt = (1 - b2 ^ st.step):sqrt_()
    local denom = (st.exp_avg_sq:sqrt() / (bc2_sqrt * neg_step_size)):add_(g.eps / neg_step_size)
    p:add_(st.exp_avg / denom)
  end
end
