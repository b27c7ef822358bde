/*
 * optim.h — fused optimizer updates: one pass over a parameter, its gradient
 * and its state, in place. lua/ember/optim.lua builds SGD, Adam and AdamW on
 * these; each call is one backend `optim` kernel (engine/backend.h).
 *
 * Both functions follow torch.optim's single-tensor updates (1.13/2.x):
 *
 *   SGD:   d = g + wd*p                      (g negated first when maximize)
 *          buf = first_step ? d : momentum*buf + (1-dampening)*d   (momentum != 0)
 *          d = nesterov ? d + momentum*buf : buf                    (momentum != 0)
 *          p -= lr*d
 *   Adam:  decoupled (AdamW): p *= 1 - lr*wd;  otherwise (L2): g += wd*p
 *          m = beta1*m + (1-beta1)*g
 *          v = beta2*v + (1-beta2)*g*g
 *          p -= (lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps)
 *          with bc1 = 1 - beta1^step, bc2 = 1 - beta2^step (step counts from 1)
 *
 * p and the state tensors must share one shape, dtype (float32 or float64)
 * and device; g must have p's shape and device and a float dtype (cast to
 * p's dtype when it differs). Non-contiguous operands are handled (through
 * contiguous copies written back). The arithmetic runs in p's dtype, with
 * the scalar coefficients computed in double. On success p's and the state
 * tensors' versions are bumped. Like every in-place op, the step is refused
 * on a tensor that requires grad while grad mode is on: run it under
 * em_set_grad_enabled(false) (ember.no_grad in Lua).
 *
 * The backend kernel receives the hyper-parameters in h[]:
 *   EM_OPTIM_SGD  (nh = 7): h[0] lr, h[1] momentum, h[2] dampening,
 *       h[3] weight_decay, h[4] nesterov (0/1), h[5] first_step (0/1: the
 *       momentum buffer is set to d instead of updated), h[6] maximize (0/1).
 *       s1 is the momentum buffer, NULL when momentum == 0; s2 is NULL.
 *   EM_OPTIM_ADAM (nh = 9): h[0] lr, h[1] beta1, h[2] beta2, h[3] eps,
 *       h[4] weight_decay, h[5] decoupled (0/1: AdamW), h[6] bc1 = 1-beta1^step,
 *       h[7] bc2 = 1-beta2^step, h[8] maximize (0/1).
 *       s1 is exp_avg (m), s2 is exp_avg_sq (v).
 */
#ifndef EMBER_OPTIM_H
#define EMBER_OPTIM_H

#include "ember.h"

#define EM_OPTIM_SGD_NH 7
#define EM_OPTIM_ADAM_NH 9

/* momentum_buf may be NULL only when momentum == 0. */
int em_sgd_step_(em_tensor *p, const em_tensor *g, em_tensor *momentum_buf, double lr,
                 double momentum, double dampening, double weight_decay, bool nesterov,
                 bool first_step, bool maximize);

/* GradScaler's unscale: grad *= inv_scale in place, and found_inf (a
 * one-element float32 tensor on grad's device) is set to 1 when any value
 * of grad is inf or NaN (it is never reset here: one flag serves all the
 * gradients of an optimizer). One pass over grad, no host synchronisation.
 * PyTorch rounds inv_scale to float32 first; so should the caller. */
int em_amp_unscale_(em_tensor *grad, em_tensor *found_inf, double inv_scale);

/* step is the count including this update (1 on the first call). */
int em_adam_step_(em_tensor *p, const em_tensor *g, em_tensor *exp_avg, em_tensor *exp_avg_sq,
                  double lr, double beta1, double beta2, double eps, double weight_decay,
                  bool decoupled, int64_t step, bool maximize);

#endif
