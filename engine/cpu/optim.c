/* optim.c — the CPU kernels of the fused optimizer updates (SGD, Adam/AdamW):
 * one pass over the parameter, its gradient and its state. The update rules
 * and the meaning of h[] are in engine/optim.h.
 *
 * The engine hands over contiguous float32/float64 tensors of one shape, so
 * each update is a plain loop gcc vectorises. The loop bodies take their
 * switches (weight decay on, momentum, first step, nesterov) as constant
 * arguments of always-inlined functions, so every variant is compiled as its
 * own branch-free loop. float32 parameters are updated in float arithmetic
 * with coefficients computed in double and rounded once, as PyTorch does, and
 * in the same order of operations as torch.optim's single-tensor updates. */
#include "cpu.h"
#include "../optim.h"

#include <math.h>

/* ---- SGD ------------------------------------------------------------------- */

typedef struct sgd_args {
    char *p, *buf;
    const char *g;
    double lr, momentum, dampening, wd;
    bool nesterov, first, maximize;
} sgd_args;

static inline __attribute__((always_inline)) void
sgd_f32_body(float *restrict p, const float *restrict g, float *restrict buf, int64_t n,
             float lr, float sign, float wd, float mom, float keep,
             bool use_wd, bool use_buf, bool first, bool nesterov)
{
    for (int64_t i = 0; i < n; i++) {
        float d = sign * g[i];
        if (use_wd) d = d + wd * p[i];
        if (use_buf) {
            float b = first ? d : mom * buf[i] + keep * d;
            buf[i] = b;
            d = nesterov ? d + mom * b : b;
        }
        p[i] = p[i] - lr * d;
    }
}

static inline __attribute__((always_inline)) void
sgd_f64_body(double *restrict p, const double *restrict g, double *restrict buf, int64_t n,
             double lr, double sign, double wd, double mom, double keep,
             bool use_wd, bool use_buf, bool first, bool nesterov)
{
    for (int64_t i = 0; i < n; i++) {
        double d = sign * g[i];
        if (use_wd) d = d + wd * p[i];
        if (use_buf) {
            double b = first ? d : mom * buf[i] + keep * d;
            buf[i] = b;
            d = nesterov ? d + mom * b : b;
        }
        p[i] = p[i] - lr * d;
    }
}

static void sgd_f32(float *p, const float *g, float *buf, int64_t n, const sgd_args *a)
{
    float lr = (float)a->lr, sign = a->maximize ? -1.0f : 1.0f, wd = (float)a->wd;
    float mom = (float)a->momentum, keep = (float)(1 - a->dampening);
    bool w = a->wd != 0;
    if (!buf) {
        if (w) sgd_f32_body(p, g, NULL, n, lr, sign, wd, mom, keep, true, false, false, false);
        else sgd_f32_body(p, g, NULL, n, lr, sign, wd, mom, keep, false, false, false, false);
    } else if (a->first) {
        /* nesterov or not, the first step has b == d */
        if (w) sgd_f32_body(p, g, buf, n, lr, sign, wd, mom, keep, true, true, true, a->nesterov);
        else sgd_f32_body(p, g, buf, n, lr, sign, wd, mom, keep, false, true, true, a->nesterov);
    } else if (a->nesterov) {
        if (w) sgd_f32_body(p, g, buf, n, lr, sign, wd, mom, keep, true, true, false, true);
        else sgd_f32_body(p, g, buf, n, lr, sign, wd, mom, keep, false, true, false, true);
    } else {
        if (w) sgd_f32_body(p, g, buf, n, lr, sign, wd, mom, keep, true, true, false, false);
        else sgd_f32_body(p, g, buf, n, lr, sign, wd, mom, keep, false, true, false, false);
    }
}

static void sgd_f64(double *p, const double *g, double *buf, int64_t n, const sgd_args *a)
{
    double lr = a->lr, sign = a->maximize ? -1.0 : 1.0, wd = a->wd;
    double mom = a->momentum, keep = 1 - a->dampening;
    bool w = a->wd != 0;
    if (!buf) {
        if (w) sgd_f64_body(p, g, NULL, n, lr, sign, wd, mom, keep, true, false, false, false);
        else sgd_f64_body(p, g, NULL, n, lr, sign, wd, mom, keep, false, false, false, false);
    } else if (a->first) {
        if (w) sgd_f64_body(p, g, buf, n, lr, sign, wd, mom, keep, true, true, true, a->nesterov);
        else sgd_f64_body(p, g, buf, n, lr, sign, wd, mom, keep, false, true, true, a->nesterov);
    } else if (a->nesterov) {
        if (w) sgd_f64_body(p, g, buf, n, lr, sign, wd, mom, keep, true, true, false, true);
        else sgd_f64_body(p, g, buf, n, lr, sign, wd, mom, keep, false, true, false, true);
    } else {
        if (w) sgd_f64_body(p, g, buf, n, lr, sign, wd, mom, keep, true, true, false, false);
        else sgd_f64_body(p, g, buf, n, lr, sign, wd, mom, keep, false, true, false, false);
    }
}

static void sgd_range_f32(int64_t lo, int64_t hi, void *ctx)
{
    const sgd_args *a = ctx;
    sgd_f32((float *)a->p + lo, (const float *)a->g + lo, a->buf ? (float *)a->buf + lo : NULL,
            hi - lo, a);
}

static void sgd_range_f64(int64_t lo, int64_t hi, void *ctx)
{
    const sgd_args *a = ctx;
    sgd_f64((double *)a->p + lo, (const double *)a->g + lo, a->buf ? (double *)a->buf + lo : NULL,
            hi - lo, a);
}

/* ---- Adam / AdamW ---------------------------------------------------------- */

typedef struct adam_args {
    char *p, *m, *v;
    const char *g;
    double b1, b2, eps, l2, decay, neg_step_size, bc2_sqrt;
    bool maximize;
} adam_args;

/* decay is 1 - lr*wd for AdamW and 1 otherwise (an exact no-op) */
static inline __attribute__((always_inline)) void
adam_f32_body(float *restrict p, const float *restrict g, float *restrict m, float *restrict v,
              int64_t n, float sign, float l2, float decay, float b1, float c1, float b2,
              float c2, float bc2s, float eps, float nss, bool use_l2)
{
    for (int64_t i = 0; i < n; i++) {
        float gi = sign * g[i];
        float pi = p[i];
        if (use_l2) gi = gi + l2 * pi;
        pi = pi * decay;
        float mi = b1 * m[i] + c1 * gi;
        float vi = b2 * v[i] + c2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) / bc2s + eps;
        p[i] = pi + nss * mi / denom;
    }
}

static inline __attribute__((always_inline)) void
adam_f64_body(double *restrict p, const double *restrict g, double *restrict m, double *restrict v,
              int64_t n, double sign, double l2, double decay, double b1, double c1, double b2,
              double c2, double bc2s, double eps, double nss, bool use_l2)
{
    for (int64_t i = 0; i < n; i++) {
        double gi = sign * g[i];
        double pi = p[i];
        if (use_l2) gi = gi + l2 * pi;
        pi = pi * decay;
        double mi = b1 * m[i] + c1 * gi;
        double vi = b2 * v[i] + c2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        double denom = sqrt(vi) / bc2s + eps;
        p[i] = pi + nss * mi / denom;
    }
}

static void adam_range_f32(int64_t lo, int64_t hi, void *ctx)
{
    const adam_args *a = ctx;
    float *p = (float *)a->p + lo, *m = (float *)a->m + lo, *v = (float *)a->v + lo;
    const float *g = (const float *)a->g + lo;
    float sign = a->maximize ? -1.0f : 1.0f, l2 = (float)a->l2, decay = (float)a->decay;
    float b1 = (float)a->b1, c1 = (float)(1 - a->b1), b2 = (float)a->b2, c2 = (float)(1 - a->b2);
    float bc2s = (float)a->bc2_sqrt, eps = (float)a->eps, nss = (float)a->neg_step_size;
    if (a->l2 != 0) adam_f32_body(p, g, m, v, hi - lo, sign, l2, decay, b1, c1, b2, c2, bc2s, eps, nss, true);
    else adam_f32_body(p, g, m, v, hi - lo, sign, l2, decay, b1, c1, b2, c2, bc2s, eps, nss, false);
}

static void adam_range_f64(int64_t lo, int64_t hi, void *ctx)
{
    const adam_args *a = ctx;
    double *p = (double *)a->p + lo, *m = (double *)a->m + lo, *v = (double *)a->v + lo;
    const double *g = (const double *)a->g + lo;
    double sign = a->maximize ? -1.0 : 1.0;
    double c1 = 1 - a->b1, c2 = 1 - a->b2;
    if (a->l2 != 0)
        adam_f64_body(p, g, m, v, hi - lo, sign, a->l2, a->decay, a->b1, c1, a->b2, c2, a->bc2_sqrt,
                      a->eps, a->neg_step_size, true);
    else
        adam_f64_body(p, g, m, v, hi - lo, sign, a->l2, a->decay, a->b1, c1, a->b2, c2, a->bc2_sqrt,
                      a->eps, a->neg_step_size, false);
}

/* ---- GradScaler's unscale ---------------------------------------------------- */

typedef struct unscale_args {
    char *g;
    float inv;          /* float32 as PyTorch's inv_scale tensor, used in the gradient's dtype */
    int any;            /* set (atomically) by a range that met inf or NaN */
} unscale_args;

static void unscale_range_f32(int64_t lo, int64_t hi, void *ctx)
{
    unscale_args *a = ctx;
    float *g = (float *)a->g + lo, inv = a->inv;
    bool bad = false;
    for (int64_t i = 0; i < hi - lo; i++) {
        bad |= !isfinite(g[i]);
        g[i] = g[i] * inv;
    }
    if (bad) __atomic_store_n(&a->any, 1, __ATOMIC_RELAXED);
}

static void unscale_range_f64(int64_t lo, int64_t hi, void *ctx)
{
    unscale_args *a = ctx;
    double *g = (double *)a->g + lo, inv = a->inv;
    bool bad = false;
    for (int64_t i = 0; i < hi - lo; i++) {
        bad |= !isfinite(g[i]);
        g[i] = g[i] * inv;
    }
    if (bad) __atomic_store_n(&a->any, 1, __ATOMIC_RELAXED);
}

static int cpu_unscale(em_tensor *g, em_tensor *flag, const double *h, int nh)
{
    const char *name = "amp_unscale_";
    if (nh != 1) return em_set_error("%s: expected 1 hyper-parameter, got %d", name, nh);
    if ((g->dtype != EM_FLOAT32 && g->dtype != EM_FLOAT64) || !em_is_contiguous(g))
        return em_set_error("%s: CPU kernel needs a contiguous float32 or float64 gradient, got %s %s", name,
                            em_dtype_name(g->dtype), SHAPE(g));
    if (!flag || flag->dtype != EM_FLOAT32 || em_numel(flag) != 1)
        return em_set_error("%s: CPU kernel needs a one-element float32 flag", name);
    unscale_args a = {.g = em_data_ptr(g), .inv = (float)h[0], .any = 0};
    cpu_for_ranges(em_numel(g), g->dtype == EM_FLOAT32 ? unscale_range_f32 : unscale_range_f64, &a);
    if (a.any) *(float *)em_data_ptr(flag) = 1.0f;
    return 0;
}

/* ---- entry ----------------------------------------------------------------- */

static int check_operand(const char *op, const char *what, const em_tensor *p, const em_tensor *t)
{
    if (!t) return em_set_error("%s: CPU kernel called without the %s", op, what);
    if (t->dtype != p->dtype || em_numel(t) != em_numel(p) || !em_is_contiguous(t))
        return em_set_error("%s: CPU kernel needs a contiguous %s %s of the parameter's dtype %s "
                            "(got %s %s)", op, what, SHAPE(p), em_dtype_name(p->dtype),
                            em_dtype_name(t->dtype), SHAPE(t));
    return 0;
}

int cpu_optim(em_optim_op op, em_tensor *p, const em_tensor *g, em_tensor *s1, em_tensor *s2,
              const double *h, int nh)
{
    if (op == EM_OPTIM_UNSCALE) return cpu_unscale(p, s1, h, nh);
    const char *name = op == EM_OPTIM_SGD ? "sgd_step" : "adam_step";
    if (op != EM_OPTIM_SGD && op != EM_OPTIM_ADAM)
        return em_set_error("optim: invalid op %d", (int)op);
    if (p->dtype != EM_FLOAT32 && p->dtype != EM_FLOAT64)
        return em_set_error("%s: CPU kernel supports float32 and float64 parameters, got %s", name,
                            em_dtype_name(p->dtype));
    if (check_operand(name, "parameter", p, p) || check_operand(name, "gradient", p, g)) return -1;
    int64_t n = em_numel(p);
    bool f32 = p->dtype == EM_FLOAT32;
    if (op == EM_OPTIM_SGD) {
        if (nh != EM_OPTIM_SGD_NH)
            return em_set_error("%s: expected %d hyper-parameters, got %d", name, EM_OPTIM_SGD_NH, nh);
        if (s1 && check_operand(name, "momentum buffer", p, s1)) return -1;
        sgd_args a = {
            .p = em_data_ptr(p), .g = em_data_ptr(g), .buf = s1 ? em_data_ptr(s1) : NULL,
            .lr = h[0], .momentum = h[1], .dampening = h[2], .wd = h[3],
            .nesterov = h[4] != 0, .first = h[5] != 0, .maximize = h[6] != 0,
        };
        if (a.momentum == 0) a.buf = NULL;
        else if (!a.buf) return em_set_error("%s: momentum %g without a momentum buffer", name, a.momentum);
        cpu_for_ranges(n, f32 ? sgd_range_f32 : sgd_range_f64, &a);
        return 0;
    }
    if (nh != EM_OPTIM_ADAM_NH)
        return em_set_error("%s: expected %d hyper-parameters, got %d", name, EM_OPTIM_ADAM_NH, nh);
    if (check_operand(name, "exp_avg", p, s1) || check_operand(name, "exp_avg_sq", p, s2)) return -1;
    double lr = h[0], wd = h[4];
    bool decoupled = h[5] != 0;
    adam_args a = {
        .p = em_data_ptr(p), .g = em_data_ptr(g), .m = em_data_ptr(s1), .v = em_data_ptr(s2),
        .b1 = h[1], .b2 = h[2], .eps = h[3],
        .l2 = decoupled ? 0 : wd, .decay = decoupled ? 1 - lr * wd : 1,
        .neg_step_size = -(lr / h[6]), .bc2_sqrt = sqrt(h[7]), .maximize = h[8] != 0,
    };
    cpu_for_ranges(n, f32 ? adam_range_f32 : adam_range_f64, &a);
    return 0;
}
