/* optim.c — fused optimizer steps: validation, then one backend `optim`
 * kernel per parameter (the update rules and the h[] layouts are in
 * optim.h). Runs on any backend: the only data access is the kernel. */
#include "optim.h"
#include "internal.h"
#include "autograd.h"

#include <math.h>
#include <string.h>

static bool same_shape(const em_tensor *a, const em_tensor *b)
{
    return a->ndim == b->ndim && memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

static int check_param(const char *op, const em_tensor *p, const em_tensor *g)
{
    if (!p || !g) return em_set_error("%s: missing %s", op, p ? "gradient" : "parameter");
    if (p->dtype != EM_FLOAT32 && p->dtype != EM_FLOAT64)
        return em_set_error("%s: parameter %s has dtype %s; expected float32 or float64", op,
                            SHAPE(p), em_dtype_name(p->dtype));
    if (!em_dtype_is_float(g->dtype))
        return em_set_error("%s: gradient %s has dtype %s; expected a floating dtype", op,
                            SHAPE(g), em_dtype_name(g->dtype));
    if (!same_shape(p, g))
        return em_set_error("%s: gradient shape %s does not match parameter shape %s", op,
                            SHAPE(g), SHAPE(p));
    if (em_check_same_device(op, p, g)) return -1;
    if (em_ag_check_inplace(op, p, NULL)) return -1;
    return em_check_writable(op, p);
}

static int check_state(const char *op, const char *what, const em_tensor *p, const em_tensor *s)
{
    if (!s) return em_set_error("%s: missing the %s state tensor", op, what);
    if (!same_shape(p, s))
        return em_set_error("%s: %s shape %s does not match parameter shape %s", op, what,
                            SHAPE(s), SHAPE(p));
    if (s->dtype != p->dtype)
        return em_set_error("%s: %s has dtype %s but the parameter %s", op, what,
                            em_dtype_name(s->dtype), em_dtype_name(p->dtype));
    if (em_check_same_device(op, p, s)) return -1;
    if (s->storage == p->storage)
        return em_set_error("%s: %s shares memory with the parameter", op, what);
    if (em_ag_check_inplace(op, s, NULL)) return -1;
    return em_check_writable(op, s);
}

/* The tensors one kernel call works on: contiguous stand-ins for the
 * caller's tensors (the same tensor, retained, when already contiguous). */
typedef struct work {
    em_tensor *p, *g, *s1, *s2;
} work;

static void work_release(work *w)
{
    em_release(w->p); em_release(w->g); em_release(w->s1); em_release(w->s2);
}

static em_tensor *writable_copy(em_tensor *t)
{
    return t ? em_contiguous(t) : NULL;
}

/* The gradient as a contiguous tensor of p's dtype that no written tensor
 * aliases (a grad sharing memory with p would be read after being written). */
static em_tensor *grad_input(const em_tensor *g, const em_tensor *p, const em_tensor *s1,
                             const em_tensor *s2)
{
    em_tensor *c = em_cast_to(g, p->dtype);
    if (!c) return NULL;
    bool aliased = c->storage == p->storage || (s1 && c->storage == s1->storage) ||
                   (s2 && c->storage == s2->storage);
    em_tensor *r = aliased ? em_clone(c) : em_contiguous(c);
    em_release(c);
    return r;
}

static int write_back(em_tensor *dst, em_tensor *work_t)
{
    if (!dst || dst == work_t) return 0;
    return em_be(dst)->cast(dst, work_t);
}

static int run_step(em_optim_op kind, em_tensor *p, const em_tensor *g,
                    em_tensor *s1, em_tensor *s2, const double *h, int nh)
{
    if (em_numel(p) == 0) return 0;
    /* internal copies and casts must not be recorded on the tape */
    bool prev = em_set_grad_enabled(false);
    work w = {0};
    int rc = -1;
    w.p = writable_copy(p);
    w.s1 = writable_copy(s1);
    w.s2 = writable_copy(s2);
    w.g = grad_input(g, p, s1, s2);
    if (!w.p || (s1 && !w.s1) || (s2 && !w.s2) || !w.g) goto done;
    if (em_be(p)->optim(kind, w.p, w.g, w.s1, w.s2, h, nh)) goto done;
    if (write_back(p, w.p) || write_back(s1, w.s1) || write_back(s2, w.s2)) goto done;
    em_bump_version(p);
    if (s1) em_bump_version(s1);
    if (s2) em_bump_version(s2);
    rc = 0;
done:
    work_release(&w);
    em_set_grad_enabled(prev);
    return rc;
}

/* NaN fails every comparison, so `!(x >= 0)` rejects it too. */
int em_sgd_step_(em_tensor *p, const em_tensor *g, em_tensor *momentum_buf, double lr,
                 double momentum, double dampening, double weight_decay, bool nesterov,
                 bool first_step, bool maximize)
{
    const char *op = "sgd_step";
    if (!(lr >= 0)) return em_set_error("%s: invalid learning rate lr=%g (must be >= 0)", op, lr);
    if (!(momentum >= 0)) return em_set_error("%s: invalid momentum=%g (must be >= 0)", op, momentum);
    if (!isfinite(dampening)) return em_set_error("%s: invalid dampening=%g", op, dampening);
    if (!(weight_decay >= 0))
        return em_set_error("%s: invalid weight_decay=%g (must be >= 0)", op, weight_decay);
    if (nesterov && (momentum <= 0 || dampening != 0))
        return em_set_error("%s: nesterov momentum requires momentum > 0 and dampening = 0 "
                            "(got momentum=%g, dampening=%g)", op, momentum, dampening);
    if (check_param(op, p, g)) return -1;
    if (first_step && momentum != 0 &&
        em_check_not_capturing(em_dev(p), op, "capture the first step with momentum (it sets the momentum buffer, "
                               "and every replay would set it again): run a few eager steps before capturing"))
        return -1;
    if (momentum != 0) {
        if (check_state(op, "momentum_buffer", p, momentum_buf)) return -1;
    } else {
        momentum_buf = NULL;
    }
    double h[EM_OPTIM_SGD_NH] = {lr, momentum, dampening, weight_decay, nesterov ? 1 : 0,
                                 first_step ? 1 : 0, maximize ? 1 : 0};
    return run_step(EM_OPTIM_SGD, p, g, momentum_buf, NULL, h, EM_OPTIM_SGD_NH);
}

int em_adam_step_(em_tensor *p, const em_tensor *g, em_tensor *exp_avg, em_tensor *exp_avg_sq,
                  double lr, double beta1, double beta2, double eps, double weight_decay,
                  bool decoupled, int64_t step, bool maximize)
{
    const char *op = decoupled ? "adamw_step" : "adam_step";
    if (!(lr >= 0)) return em_set_error("%s: invalid learning rate lr=%g (must be >= 0)", op, lr);
    if (!(beta1 >= 0 && beta1 < 1))
        return em_set_error("%s: invalid beta1=%g (betas[1] must be in [0, 1))", op, beta1);
    if (!(beta2 >= 0 && beta2 < 1))
        return em_set_error("%s: invalid beta2=%g (betas[2] must be in [0, 1))", op, beta2);
    if (!(eps >= 0)) return em_set_error("%s: invalid eps=%g (must be >= 0)", op, eps);
    if (!(weight_decay >= 0))
        return em_set_error("%s: invalid weight_decay=%g (must be >= 0)", op, weight_decay);
    if (step < 1) return em_set_error("%s: invalid step=%lld (counts from 1)", op, (long long)step);
    if (check_param(op, p, g)) return -1;
    if (check_state(op, "exp_avg", p, exp_avg) || check_state(op, "exp_avg_sq", p, exp_avg_sq))
        return -1;
    if (exp_avg->storage == exp_avg_sq->storage)
        return em_set_error("%s: exp_avg and exp_avg_sq share memory", op);
    if (em_check_not_capturing(em_dev(p), op, "capture a step whose count is a host number (every replay would "
                               "repeat this step's bias correction): construct the optimizer with capturable = true"))
        return -1;
    double bc1 = 1 - pow(beta1, (double)step), bc2 = 1 - pow(beta2, (double)step);
    double h[EM_OPTIM_ADAM_NH] = {lr, beta1, beta2, eps, weight_decay, decoupled ? 1 : 0,
                                  bc1, bc2, maximize ? 1 : 0};
    return run_step(EM_OPTIM_ADAM, p, g, exp_avg, exp_avg_sq, h, EM_OPTIM_ADAM_NH);
}

int em_amp_unscale_(em_tensor *grad, em_tensor *found_inf, double inv_scale)
{
    const char *op = "amp_unscale_";
    if (grad->dtype != EM_FLOAT32 && grad->dtype != EM_FLOAT64)
        return em_set_error("%s: gradient %s has dtype %s; expected float32 or float64", op, SHAPE(grad),
                            em_dtype_name(grad->dtype));
    if (found_inf->dtype != EM_FLOAT32 || em_numel(found_inf) != 1)
        return em_set_error("%s: found_inf must be a one-element float32 tensor, got %s %s", op,
                            em_dtype_name(found_inf->dtype), SHAPE(found_inf));
    if (em_check_same_device(op, grad, found_inf)) return -1;
    if (found_inf->storage == grad->storage) return em_set_error("%s: found_inf shares memory with the gradient", op);
    if (em_check_writable(op, grad) || em_check_writable(op, found_inf)) return -1;
    if (em_numel(grad) == 0) return 0;
    bool prev = em_set_grad_enabled(false);
    em_tensor *g = writable_copy(grad), *f = writable_copy(found_inf);
    double h[1] = {inv_scale};
    int rc = g && f ? em_be(grad)->optim(EM_OPTIM_UNSCALE, g, NULL, f, NULL, h, 1) : -1;
    if (rc == 0) rc = write_back(grad, g) || write_back(found_inf, f) ? -1 : 0;
    if (rc == 0) {
        em_bump_version(grad);
        em_bump_version(found_inf);
    }
    em_release(g);
    em_release(f);
    em_set_grad_enabled(prev);
    return rc;
}
