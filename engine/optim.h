/*
 * optim.h — fused optimizer updates: one pass over a parameter, its gradient
 * and its state, in place. lua/ember/optim.lua builds SGD, Adam and AdamW on
 * these; each call is one backend `optim` kernel (engine/backend.h), and the
 * multi-tensor forms at the end one `optim_multi` call per device and dtype.
 *
 * Both functions follow torch.optim 2.x's single-tensor updates, rounding
 * where PyTorch's CPU kernels round: fma(a, b, c) marks a multiply-add they
 * fuse (add with alpha, addcmul, lerp), rounded once.
 *
 *   SGD:   d = fma(wd, p, g)                 (g negated first when maximize)
 *          buf = first_step ? d : fma(1-dampening, d, momentum*buf)  (momentum != 0)
 *          d = nesterov ? fma(momentum, buf, d) : buf                 (momentum != 0)
 *          p = fma(-lr, d, p)
 *   Adam:  decoupled (AdamW): p *= 1 - lr*wd;  otherwise (L2): g = fma(wd, p, g)
 *          m = lerp(m, g, w = 1-beta1): fma(w, g-m, m) if w < 0.5, else fma(w-1, g-m, g)
 *          v = fma((1-beta2)*g, g, beta2*v)
 *          p += (-lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps)
 *          with bc1 = 1 - beta1^step, bc2 = 1 - beta2^step (step counts from 1)
 *
 * p and the state tensors must share one shape, dtype (float32 or float64;
 * float16 and bfloat16 go to the multi-tensor kernels below, as a list of
 * one) and device; g must have p's shape and device and a float dtype (cast
 * to p's dtype when it differs). Non-contiguous operands are handled (through
 * contiguous copies written back). The arithmetic runs in p's dtype, with
 * the scalar coefficients computed in double. On success p's and the state
 * tensors' versions are bumped. Like every in-place op, the step is refused
 * on a tensor that requires grad while grad mode is on: run it under
 * em_set_grad_enabled(false) (ember.no_grad in Lua).
 *
 * The backend kernel receives the hyper-parameters in an em_optim_hyper
 * (engine/backend.h); for SGD the momentum buffer s1 is NULL when momentum
 * is 0, for Adam s1 is exp_avg (m) and s2 exp_avg_sq (v).
 */
#ifndef EMBER_OPTIM_H
#define EMBER_OPTIM_H

#include "ember.h"


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

/* ---- multi-tensor steps (PyTorch's foreach / fused optimizers) ----------------
 * The same updates over n parameters at once: the lists are checked whole
 * (each entry as the single-tensor step checks it, and no two tensors
 * updated in place may overlap) before anything is written, then grouped by
 * device and dtype, and each group is one backend optim_multi call (one
 * launch on CUDA). Parameters may also be float16 or bfloat16: they and
 * their state stay in that dtype and the arithmetic runs in float32. In
 * float32/float64 the results equal the single-tensor steps' bit for bit.
 * first[i] (SGD) and steps[i] (Adam) are per parameter, as the state is. */
int em_sgd_multi_step_(int64_t n, em_tensor *const *p, em_tensor *const *g, em_tensor *const *bufs,
                       const bool *first, double lr, double momentum, double dampening, double weight_decay,
                       bool nesterov, bool maximize);
int em_adam_multi_step_(int64_t n, em_tensor *const *p, em_tensor *const *g, em_tensor *const *exp_avg,
                        em_tensor *const *exp_avg_sq, const int64_t *steps, double lr, double beta1, double beta2,
                        double eps, double weight_decay, bool decoupled, bool maximize);

/* GradScaler's unscale over n gradients of found_inf's device (any float
 * dtypes): grads *= inv_scale, read on the device from a one-element
 * float32 tensor (no host synchronisation), found_inf set as above. */
int em_amp_unscale_multi_(int64_t n, em_tensor *const *grads, em_tensor *found_inf, const em_tensor *inv_scale);

/* clip_grad_norm_'s two halves. em_multi_norm: the norm of order norm_type
 * (> 0, or inf) of all the tensors together (the norm of their norms), a
 * 0-d tensor of ts[0]'s dtype and device; accumulated in float64 on each
 * device, no host synchronisation. em_multi_scale_: every tensor *=
 * min(max_norm / (total_norm + 1e-6), 1), the coefficient computed on the
 * device in total_norm's dtype (float32 for float16/bfloat16). */
em_tensor *em_multi_norm(int64_t n, em_tensor *const *ts, double norm_type);
int em_multi_scale_(int64_t n, em_tensor *const *ts, const em_tensor *total_norm, double max_norm);

#endif
