/* optim.c — fused optimizer steps: validation, then one backend `optim`
 * kernel per parameter (the update rules are in optim.h, the
 * hyper-parameters' struct in backend.h). Runs on any backend: the only data access is the kernel. */
#include "optim.h"
#include "internal.h"
#include "autograd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool same_shape(const em_tensor *a, const em_tensor *b)
{
    return a->ndim == b->ndim && memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

static int check_param(const char *op, const em_tensor *p, const em_tensor *g)
{
    if (!p || !g) return em_set_error("%s: missing %s", op, p ? "gradient" : "parameter");
    if (!em_dtype_is_float(p->dtype))
        return em_set_error("%s: parameter %s has dtype %s; expected float32, float64, float16 or "
                            "bfloat16", op, SHAPE(p), em_dtype_name(p->dtype));
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
                    em_tensor *s1, em_tensor *s2, const em_optim_hyper *h)
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
    if (em_be(p)->optim(kind, w.p, w.g, w.s1, w.s2, h)) goto done;
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
static int check_sgd_args(const char *op, double lr, double momentum, double dampening, double weight_decay,
                          bool nesterov)
{
    if (!(lr >= 0)) return em_set_error("%s: invalid learning rate lr=%g (must be >= 0)", op, lr);
    if (!(momentum >= 0)) return em_set_error("%s: invalid momentum=%g (must be >= 0)", op, momentum);
    if (!isfinite(dampening)) return em_set_error("%s: invalid dampening=%g", op, dampening);
    if (!(weight_decay >= 0))
        return em_set_error("%s: invalid weight_decay=%g (must be >= 0)", op, weight_decay);
    if (nesterov && (momentum <= 0 || dampening != 0))
        return em_set_error("%s: nesterov momentum requires momentum > 0 and dampening = 0 "
                            "(got momentum=%g, dampening=%g)", op, momentum, dampening);
    return 0;
}

static int check_adam_args(const char *op, double lr, double beta1, double beta2, double eps, double weight_decay)
{
    if (!(lr >= 0)) return em_set_error("%s: invalid learning rate lr=%g (must be >= 0)", op, lr);
    if (!(beta1 >= 0 && beta1 < 1))
        return em_set_error("%s: invalid beta1=%g (betas[1] must be in [0, 1))", op, beta1);
    if (!(beta2 >= 0 && beta2 < 1))
        return em_set_error("%s: invalid beta2=%g (betas[2] must be in [0, 1))", op, beta2);
    if (!(eps >= 0)) return em_set_error("%s: invalid eps=%g (must be >= 0)", op, eps);
    if (!(weight_decay >= 0))
        return em_set_error("%s: invalid weight_decay=%g (must be >= 0)", op, weight_decay);
    return 0;
}

/* Steps a CUDA graph cannot replay faithfully (engine/graph.c refuses them
 * while a capture is under way). */
#define SGD_FIRST_STEP_CAPTURE "capture the first step with momentum (it sets the momentum buffer, " \
    "and every replay would set it again): run a few eager steps before capturing"
#define ADAM_STEP_CAPTURE "capture a step whose count is a host number (every replay would " \
    "repeat this step's bias correction): construct the optimizer with capturable = true"

int em_sgd_step_(em_tensor *p, const em_tensor *g, em_tensor *momentum_buf, double lr,
                 double momentum, double dampening, double weight_decay, bool nesterov,
                 bool first_step, bool maximize)
{
    const char *op = "sgd_step";
    if (check_sgd_args(op, lr, momentum, dampening, weight_decay, nesterov)) return -1;
    if (check_param(op, p, g)) return -1;
    if (first_step && momentum != 0 &&
        em_check_not_capturing(em_dev(p), op, SGD_FIRST_STEP_CAPTURE))
        return -1;
    if (p->dtype == EM_FLOAT16 || p->dtype == EM_BFLOAT16) {   /* only the multi-tensor kernels have half */
        em_tensor *bufs[1] = {momentum_buf};
        return em_sgd_multi_step_(1, &p, (em_tensor *const *)&g, bufs, &first_step, lr, momentum, dampening,
                                  weight_decay, nesterov, maximize);
    }
    if (momentum != 0) {
        if (check_state(op, "momentum_buffer", p, momentum_buf)) return -1;
    } else {
        momentum_buf = NULL;
    }
    em_optim_hyper h = {.lr = lr, .momentum = momentum, .dampening = dampening, .weight_decay = weight_decay,
                        .nesterov = nesterov, .first_step = first_step, .maximize = maximize};
    return run_step(EM_OPTIM_SGD, p, g, momentum_buf, NULL, &h);
}

int em_adam_step_(em_tensor *p, const em_tensor *g, em_tensor *exp_avg, em_tensor *exp_avg_sq,
                  double lr, double beta1, double beta2, double eps, double weight_decay,
                  bool decoupled, int64_t step, bool maximize)
{
    const char *op = decoupled ? "adamw_step" : "adam_step";
    if (check_adam_args(op, lr, beta1, beta2, eps, weight_decay)) return -1;
    if (step < 1) return em_set_error("%s: invalid step=%lld (counts from 1)", op, (long long)step);
    if (check_param(op, p, g)) return -1;
    if (p->dtype == EM_FLOAT16 || p->dtype == EM_BFLOAT16)
        return em_adam_multi_step_(1, &p, (em_tensor *const *)&g, &exp_avg, &exp_avg_sq, &step, lr, beta1, beta2,
                                   eps, weight_decay, decoupled, maximize);
    if (check_state(op, "exp_avg", p, exp_avg) || check_state(op, "exp_avg_sq", p, exp_avg_sq))
        return -1;
    if (exp_avg->storage == exp_avg_sq->storage)
        return em_set_error("%s: exp_avg and exp_avg_sq share memory", op);
    if (em_check_not_capturing(em_dev(p), op, ADAM_STEP_CAPTURE))
        return -1;
    em_optim_hyper h = {.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay,
                        .decoupled = decoupled, .bc1 = 1 - pow(beta1, (double)step),
                        .bc2 = 1 - pow(beta2, (double)step), .maximize = maximize};
    return run_step(EM_OPTIM_ADAM, p, g, exp_avg, exp_avg_sq, &h);
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
    em_optim_hyper h = {.inv_scale = inv_scale};
    int rc = g && f ? em_be(grad)->optim(EM_OPTIM_UNSCALE, g, NULL, f, NULL, &h) : -1;
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

/* ---- multi-tensor steps ------------------------------------------------------------
 * The lists are validated whole before anything is written, then split into
 * groups of one device and one dtype (and one first_step / step count, which
 * the kernel takes as a scalar), and each group is one backend optim_multi
 * call on contiguous stand-ins, written back afterwards. */

/* A written tensor's byte extent in its storage, for the overlap check. */
typedef struct span {
    const em_storage *s;
    int64_t lo, hi;         /* [lo, hi) in bytes */
    int list;
    int64_t index;
} span;

static int span_cmp(const void *x, const void *y)
{
    const span *a = x, *b = y;
    if (a->s != b->s) return (uintptr_t)a->s < (uintptr_t)b->s ? -1 : 1;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static span span_of(const em_tensor *t, int list, int64_t index)
{
    int64_t last = t->offset;
    for (int d = 0; d < t->ndim; d++) last += (t->sizes[d] - 1) * (t->strides[d] < 0 ? -t->strides[d] : t->strides[d]);
    int64_t es = (int64_t)em_dtype_size(t->dtype);
    return (span){t->storage, t->offset * es, (last + 1) * es, list, index};
}

typedef struct multi_call {
    const char *op;
    em_multi_op kind;
    int nlists;
    em_tensor *const *lists[4];     /* the caller's; NULL where unused */
    const char *names[4];
    unsigned written;               /* bit k: list k is updated in place */
    int grad_list;                  /* the list cast to list 0's dtype, or -1 */
    const int64_t *extra;           /* a per-index key that must be equal within a group, or NULL */
    span *spans;                    /* the written tensors, sorted */
    int64_t nspans;
} multi_call;

/* Sorts the written tensors' extents; an error when two overlap (they would
 * be updated twice, or read after being written). */
static int collect_spans(multi_call *c, int64_t n)
{
    int64_t cap = 0;
    for (int k = 0; k < c->nlists; k++) if (c->lists[k] && (c->written >> k & 1)) cap += n;
    c->spans = malloc(sizeof *c->spans * (size_t)(cap ? cap : 1));
    if (!c->spans) return em_set_error("%s: out of memory", c->op);
    for (int k = 0; k < c->nlists; k++) {
        if (!c->lists[k] || !(c->written >> k & 1)) continue;
        for (int64_t i = 0; i < n; i++)
            if (em_numel(c->lists[k][i]) > 0) c->spans[c->nspans++] = span_of(c->lists[k][i], k, i);
    }
    qsort(c->spans, (size_t)c->nspans, sizeof *c->spans, span_cmp);
    for (int64_t i = 1; i < c->nspans; i++) {
        const span *a = &c->spans[i - 1], *b = &c->spans[i];
        if (a->s == b->s && b->lo < a->hi)
            return em_set_error("%s: %s %lld and %s %lld share memory (each tensor updated in place must "
                                "have its own)", c->op, c->names[a->list], (long long)a->index + 1,
                                c->names[b->list], (long long)b->index + 1);
    }
    return 0;
}

static bool storage_written(const multi_call *c, const em_storage *s)
{
    int64_t a = 0, b = c->nspans;
    while (a < b) {
        int64_t m = a + (b - a) / 2;
        if ((uintptr_t)c->spans[m].s < (uintptr_t)s) a = m + 1;
        else b = m;
    }
    return a < c->nspans && c->spans[a].s == s;
}

/* The indices of the next group (all not yet taken that share the device,
 * dtype and extra key of the first one not taken), ascending; 0 at the end.
 * Empty tensors are taken without being grouped: there is nothing to do. */
static int64_t take_group(const multi_call *c, int64_t n, bool *taken, int64_t *idx)
{
    em_tensor *const *t0 = c->lists[0];
    int64_t first = -1, m = 0;
    for (int64_t i = 0; i < n && first < 0; i++) {
        if (!taken[i] && em_numel(t0[i]) == 0) taken[i] = true;
        else if (!taken[i]) first = i;
    }
    if (first < 0) return 0;
    for (int64_t i = first; i < n; i++) {
        if (taken[i] || em_numel(t0[i]) == 0) continue;
        if (!em_device_eq(em_dev(t0[i]), em_dev(t0[first])) || t0[i]->dtype != t0[first]->dtype) continue;
        if (c->extra && c->extra[i] != c->extra[first]) continue;
        taken[i] = true;
        idx[m++] = i;
    }
    return m;
}

static void release_all(em_tensor **w, int64_t n)
{
    for (int64_t i = 0; i < n; i++) em_release(w[i]);
}

/* One backend call over the group idx[0..m): a and b on the group's device. */
static int run_group(const multi_call *c, const int64_t *idx, int64_t m, em_tensor *a, em_tensor *b,
                     const em_optim_hyper *h)
{
    em_tensor **w = calloc((size_t)(4 * m), sizeof *w);
    if (!w) return em_set_error("%s: out of memory", c->op);
    em_tensor *p0 = c->lists[0][idx[0]];
    em_tensor_lists l = {.n = m};
    int rc = -1;
    for (int k = 0; k < c->nlists; k++) {
        if (!c->lists[k]) continue;
        l.t[k] = w + k * m;
        for (int64_t j = 0; j < m; j++) {
            em_tensor *src = c->lists[k][idx[j]];
            if (k != c->grad_list) {
                w[k * m + j] = em_contiguous(src);
            } else {
                em_tensor *cast = em_cast_to(src, p0->dtype);
                w[k * m + j] = !cast ? NULL : storage_written(c, cast->storage) ? em_clone(cast) : em_contiguous(cast);
                em_release(cast);
            }
            if (!w[k * m + j]) goto done;
        }
    }
    const em_backend *be = em_be(p0);
    if (!be->optim_multi) {
        em_set_error("%s: the %s backend has no multi-tensor kernels", c->op, em_dev(p0).type == EM_CPU ? "CPU" : "CUDA");
        goto done;
    }
    if (be->optim_multi(c->kind, &l, a, b, h)) goto done;
    for (int k = 0; k < c->nlists; k++) {
        if (!c->lists[k] || !(c->written >> k & 1)) continue;
        for (int64_t j = 0; j < m; j++) {
            if (write_back(c->lists[k][idx[j]], w[k * m + j])) goto done;
            em_bump_version(c->lists[k][idx[j]]);
        }
    }
    rc = 0;
done:
    release_all(w, 4 * m);
    free(w);
    return rc;
}

/* Every group of c's lists through the backend with the same a, b and
 * hyper-parameters (a and b moved to each group's device when they live
 * elsewhere), but for first_step (SGD) or the step's bias corrections (Adam),
 * which the hook sets from `extra`. */
typedef void (*group_hook)(const multi_call *c, int64_t first_index, em_optim_hyper *h);

static int run_groups(multi_call *c, int64_t n, em_tensor *a, em_tensor *b, const em_optim_hyper *h,
                      group_hook hook)
{
    bool *taken = calloc((size_t)(n ? n : 1), sizeof *taken);
    int64_t *idx = malloc(sizeof *idx * (size_t)(n ? n : 1));
    int rc = -1;
    if (!taken || !idx) {
        em_set_error("%s: out of memory", c->op);
        goto done;
    }
    bool prev = em_set_grad_enabled(false);     /* the copies and casts are not recorded */
    int64_t m;
    em_optim_hyper hh = *h;
    while ((m = take_group(c, n, taken, idx)) > 0) {
        em_device dev = em_dev(c->lists[0][idx[0]]);
        em_tensor *ga = a && !em_device_eq(em_dev(a), dev) ? em_to_device(a, dev) : (a ? em_retain(a) : NULL);
        em_tensor *gb = b && !em_device_eq(em_dev(b), dev) ? em_to_device(b, dev) : (b ? em_retain(b) : NULL);
        if (hook) hook(c, idx[0], &hh);
        int r = (a && !ga) || (b && !gb) ? -1 : run_group(c, idx, m, ga, gb, &hh);
        em_release(ga);
        em_release(gb);
        if (r) {
            em_set_grad_enabled(prev);
            goto done;
        }
    }
    em_set_grad_enabled(prev);
    rc = 0;
done:
    free(taken);
    free(idx);
    return rc;
}

static void multi_call_free(multi_call *c) { free(c->spans); }

/* "op: parameter i" into buf, so the single-parameter checks name the index */
static const char *nth(char *buf, size_t size, const char *op, int64_t i)
{
    snprintf(buf, size, "%s: parameter %lld", op, (long long)i + 1);
    return buf;
}

static int check_lists_present(const char *op, int64_t n, em_tensor *const *p, em_tensor *const *g)
{
    if (n < 0) return em_set_error("%s: invalid list length %lld", op, (long long)n);
    if (n > 0 && (!p || !g)) return em_set_error("%s: missing the %s list", op, p ? "gradient" : "parameter");
    return 0;
}

static void sgd_group_hook(const multi_call *c, int64_t i, em_optim_hyper *h)
{
    h->first_step = c->extra[i] != 0;
}

int em_sgd_multi_step_(int64_t n, em_tensor *const *p, em_tensor *const *g, em_tensor *const *bufs,
                       const bool *first, double lr, double momentum, double dampening, double weight_decay,
                       bool nesterov, bool maximize)
{
    const char *op = "sgd_step";
    char buf[96];
    if (check_sgd_args(op, lr, momentum, dampening, weight_decay, nesterov)) return -1;
    if (check_lists_present(op, n, p, g)) return -1;
    bool use_buf = momentum != 0;
    if (use_buf && n > 0 && (!bufs || !first))
        return em_set_error("%s: momentum=%g needs the momentum buffers and their first_step flags", op, momentum);
    for (int64_t i = 0; i < n; i++) {
        if (check_param(nth(buf, sizeof buf, op, i), p[i], g[i])) return -1;
        if (use_buf && check_state(nth(buf, sizeof buf, op, i), "momentum_buffer", p[i], bufs[i])) return -1;
        if (use_buf && first[i] && em_check_not_capturing(em_dev(p[i]), op, SGD_FIRST_STEP_CAPTURE)) return -1;
    }
    int64_t *extra = calloc((size_t)(n ? n : 1), sizeof *extra);
    if (!extra) return em_set_error("%s: out of memory", op);
    for (int64_t i = 0; i < n && use_buf; i++) extra[i] = first[i] ? 1 : 0;
    multi_call c = {.op = op, .kind = EM_MULTI_SGD, .nlists = 3, .lists = {p, g, use_buf ? bufs : NULL},
                    .names = {"parameter", "gradient", "momentum_buffer"}, .written = 1u | 4u,
                    .grad_list = 1, .extra = extra};
    em_optim_hyper h = {.lr = lr, .momentum = momentum, .dampening = dampening, .weight_decay = weight_decay,
                        .nesterov = nesterov, .maximize = maximize};
    int rc = collect_spans(&c, n) ? -1 : run_groups(&c, n, NULL, NULL, &h, sgd_group_hook);
    multi_call_free(&c);
    free(extra);
    return rc;
}

/* the bias corrections of the group's step count, computed as em_adam_step_ does */
static void adam_group_hook(const multi_call *c, int64_t i, em_optim_hyper *h)
{
    double step = (double)c->extra[i];
    h->bc1 = 1 - pow(h->beta1, step);
    h->bc2 = 1 - pow(h->beta2, step);
}

int em_adam_multi_step_(int64_t n, em_tensor *const *p, em_tensor *const *g, em_tensor *const *exp_avg,
                        em_tensor *const *exp_avg_sq, const int64_t *steps, double lr, double beta1, double beta2,
                        double eps, double weight_decay, bool decoupled, bool maximize)
{
    const char *op = decoupled ? "adamw_step" : "adam_step";
    char buf[96];
    if (check_adam_args(op, lr, beta1, beta2, eps, weight_decay)) return -1;
    if (check_lists_present(op, n, p, g)) return -1;
    if (n > 0 && (!exp_avg || !exp_avg_sq || !steps))
        return em_set_error("%s: missing the exp_avg, exp_avg_sq or step list", op);
    for (int64_t i = 0; i < n; i++) {
        const char *at = nth(buf, sizeof buf, op, i);
        if (steps[i] < 1) return em_set_error("%s: invalid step=%lld (counts from 1)", at, (long long)steps[i]);
        if (check_param(at, p[i], g[i]) || check_state(at, "exp_avg", p[i], exp_avg[i]) ||
            check_state(at, "exp_avg_sq", p[i], exp_avg_sq[i]))
            return -1;
        if (em_check_not_capturing(em_dev(p[i]), op, ADAM_STEP_CAPTURE)) return -1;
    }
    multi_call c = {.op = op, .kind = EM_MULTI_ADAM, .nlists = 4, .lists = {p, g, exp_avg, exp_avg_sq},
                    .names = {"parameter", "gradient", "exp_avg", "exp_avg_sq"}, .written = 1u | 4u | 8u,
                    .grad_list = 1, .extra = steps};
    em_optim_hyper h = {.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay,
                        .decoupled = decoupled, .maximize = maximize};
    int rc = collect_spans(&c, n) ? -1 : run_groups(&c, n, NULL, NULL, &h, adam_group_hook);
    multi_call_free(&c);
    return rc;
}

/* Float tensors of any device (checked per op), none NULL. */
static int check_float_list(const char *op, const char *what, int64_t n, em_tensor *const *ts)
{
    if (n < 0) return em_set_error("%s: invalid list length %lld", op, (long long)n);
    if (n > 0 && !ts) return em_set_error("%s: missing the %s list", op, what);
    for (int64_t i = 0; i < n; i++) {
        if (!ts[i]) return em_set_error("%s: %s %lld is missing", op, what, (long long)i + 1);
        if (!em_dtype_is_float(ts[i]->dtype))
            return em_set_error("%s: %s %lld %s has dtype %s; expected a floating dtype", op, what,
                                (long long)i + 1, SHAPE(ts[i]), em_dtype_name(ts[i]->dtype));
    }
    return 0;
}

static int check_scalar_f32(const char *op, const char *what, const em_tensor *t)
{
    if (!t || t->dtype != EM_FLOAT32 || em_numel(t) != 1)
        return t ? em_set_error("%s: %s must be a one-element float32 tensor, got %s %s", op, what,
                                em_dtype_name(t->dtype), SHAPE(t))
                 : em_set_error("%s: missing %s", op, what);
    return 0;
}

int em_amp_unscale_multi_(int64_t n, em_tensor *const *grads, em_tensor *found_inf, const em_tensor *inv_scale)
{
    const char *op = "amp_unscale_";
    if (check_float_list(op, "gradient", n, grads)) return -1;
    if (check_scalar_f32(op, "found_inf", found_inf) || check_scalar_f32(op, "inv_scale", inv_scale)) return -1;
    if (em_check_same_device(op, found_inf, inv_scale) || em_check_writable(op, found_inf)) return -1;
    for (int64_t i = 0; i < n; i++) {
        if (em_check_same_device(op, grads[i], found_inf) || em_check_writable(op, grads[i])) return -1;
        if (grads[i]->storage == found_inf->storage || grads[i]->storage == inv_scale->storage)
            return em_set_error("%s: gradient %lld shares memory with found_inf or inv_scale", op, (long long)i + 1);
    }
    if (found_inf->storage == inv_scale->storage)
        return em_set_error("%s: found_inf and inv_scale share memory", op);
    multi_call c = {.op = op, .kind = EM_MULTI_UNSCALE, .nlists = 1, .lists = {grads},
                    .names = {"gradient"}, .written = 1u, .grad_list = -1};
    bool prev = em_set_grad_enabled(false);
    em_tensor *inv = em_contiguous(inv_scale), *found = em_contiguous(found_inf);
    em_optim_hyper none = {0};      /* inv_scale travels as the tensor a */
    int rc = !inv || !found || collect_spans(&c, n) ? -1 : run_groups(&c, n, inv, found, &none, NULL);
    if (rc == 0 && write_back(found_inf, found)) rc = -1;
    if (rc == 0) em_bump_version(found_inf);
    em_release(inv);
    em_release(found);
    em_set_grad_enabled(prev);
    multi_call_free(&c);
    return rc;
}

static bool valid_norm_type(double p) { return p > 0; }    /* inf included, NaN not */

em_tensor *em_multi_norm(int64_t n, em_tensor *const *ts, double norm_type)
{
    const char *op = "multi_norm";
    if (check_float_list(op, "tensor", n, ts)) return NULL;
    if (n < 1) return em_set_error("%s: needs at least one tensor", op), NULL;
    if (!valid_norm_type(norm_type))
        return em_set_error("%s: norm_type must be > 0 or inf, got %g", op, norm_type), NULL;
    multi_call c = {.op = op, .kind = EM_MULTI_NORM, .nlists = 1, .lists = {ts}, .names = {"tensor"},
                    .grad_list = -1};
    bool *taken = calloc((size_t)n, sizeof *taken);
    int64_t *idx = malloc(sizeof *idx * (size_t)n);
    em_tensor **totals = calloc((size_t)n, sizeof *totals);
    em_tensor *r = NULL;
    em_device dev0 = em_dev(ts[0]);
    int ngroups = 0;
    bool prev = em_set_grad_enabled(false);
    em_scope sc = {0};
    if (!taken || !idx || !totals) {
        em_set_error("%s: out of memory", op);
        goto done;
    }
    int64_t m;
    em_optim_hyper h = {.norm_type = norm_type};
    while ((m = take_group(&c, n, taken, idx)) > 0) {
        int64_t size = m + 1;
        em_tensor *acc = em_empty(&size, 1, EM_FLOAT64, em_dev(ts[idx[0]]));
        int rc = acc ? run_group(&c, idx, m, acc, NULL, &h) : -1;
        em_tensor *total = rc ? NULL : em_select(acc, 0, m);
        em_release(acc);
        em_tensor *here = total && !em_device_eq(em_dev(total), dev0) ? em_to_device(total, dev0) : em_retain(total);
        em_release(total);
        if (!here) goto done;
        totals[ngroups++] = here;
    }
    em_tensor *all;
    if (ngroups == 0) {
        all = em_scope_keep(&sc, em_scalar(0, EM_FLOAT64, dev0));
    } else {
        em_tensor *stacked = em_scope_keep(&sc, ei_stack(totals, ngroups, 0));
        all = !stacked ? NULL
              : em_scope_keep(&sc, isinf(norm_type) ? em_amax(stacked, NULL, 0, false) : ei_sum(stacked, NULL, 0, false));
    }
    em_tensor *norm = !all || norm_type == 1 || isinf(norm_type) ? all
                      : em_scope_keep(&sc, norm_type == 2 ? ei_unary(EM_SQRT, all) : ei_pow_scalar(all, 1 / norm_type));
    r = norm ? em_cast_to(norm, ts[0]->dtype) : NULL;
done:
    for (int i = 0; i < ngroups; i++) em_release(totals[i]);
    em_scope_drop(&sc);
    em_set_grad_enabled(prev);
    free(taken);
    free(idx);
    free(totals);
    return r;
}

int em_multi_scale_(int64_t n, em_tensor *const *ts, const em_tensor *total_norm, double max_norm)
{
    const char *op = "multi_scale_";
    if (check_float_list(op, "tensor", n, ts)) return -1;
    if (!total_norm || em_numel(total_norm) != 1 || !em_dtype_is_float(total_norm->dtype))
        return em_set_error("%s: the total norm must be a one-element floating tensor%s%s", op,
                            total_norm ? ", got " : "", total_norm ? SHAPE(total_norm) : "");
    if (isnan(max_norm)) return em_set_error("%s: max_norm is NaN", op);
    for (int64_t i = 0; i < n; i++) {
        if (em_ag_check_inplace(op, ts[i], NULL) || em_check_writable(op, ts[i])) return -1;
        if (ts[i]->storage == total_norm->storage)
            return em_set_error("%s: tensor %lld shares memory with the total norm", op, (long long)i + 1);
    }
    multi_call c = {.op = op, .kind = EM_MULTI_SCALE, .nlists = 1, .lists = {ts}, .names = {"tensor"},
                    .written = 1u, .grad_list = -1};
    bool prev = em_set_grad_enabled(false);
    /* float16/bfloat16 norms: the coefficient is computed in float32 */
    em_dtype dt = total_norm->dtype == EM_FLOAT64 ? EM_FLOAT64 : EM_FLOAT32;
    em_scope s = {0};
    em_tensor *cast = em_scope_keep(&s, em_cast_to(total_norm, dt));
    em_tensor *tn = cast ? em_scope_keep(&s, em_contiguous(cast)) : NULL;
    em_optim_hyper h = {.max_norm = max_norm};
    int rc = !tn || collect_spans(&c, n) ? -1 : run_groups(&c, n, tn, NULL, &h, NULL);
    em_scope_drop(&s);
    em_set_grad_enabled(prev);
    multi_call_free(&c);
    return rc;
}
