/* norm.c — batch, group and layer normalisation on the backend's norm family.
 *
 * Every op views its input as [N, C, S] (backend.h): batch norm keeps
 * statistics per channel, group norm per (sample, group), layer norm is
 * group norm with one group over the normalised trailing dims. The node's
 * first-order backward is the backend's fused kernel; when the backward is
 * itself recorded (create_graph), the same gradient is composed from engine
 * ops with the statistics recomputed from x, so that their dependence on x
 * is differentiated too (gradients of gradients are exact). */
#include "autograd.h"

#include <math.h>
#include <string.h>

/* the statistics' layout: dims of x viewed as stat_view() reduces over */
static em_tensor *stat_view(em_norm_op op, const em_tensor *x3, const em_norm_params *p)
{
    if (op == EM_NORM_BATCH) return em_retain((em_tensor *)x3);
    int64_t s[3] = {p->N, p->G, -1};
    return em_reshape(x3, s, 3);
}

static int stat_dims(em_norm_op op, int *dims)
{
    if (op == EM_NORM_BATCH) { dims[0] = 0; dims[1] = 2; return 2; }
    dims[0] = 2;
    return 1;
}

static em_tensor *channel_view(const em_tensor *w, int64_t C)
{
    int64_t s[3] = {1, C, 1};
    return em_reshape(w, s, 3);
}

/* gx, gw, gb from engine ops (recorded): x3 [N, C, S], gy like x3 */
static int composed_backward(em_node *n, em_norm_op op, const em_norm_params *p, const em_tensor *x3,
                             const em_tensor *w, const em_tensor *gy, em_tensor **gin)
{
    int dims[2], nd = stat_dims(op, dims), cdims[2] = {0, 2};
    int64_t C = p->C;
    em_scope s = {0};
    em_tensor *xs = em_scope_keep(&s, stat_view(op, x3, p));
    em_tensor *mu = xs ? em_scope_keep(&s, em_mean(xs, dims, nd, true)) : NULL;
    em_tensor *xc = es_sub(&s, xs, mu);
    em_tensor *sq = es_mul(&s, xc, xc);
    em_tensor *var = sq ? em_scope_keep(&s, em_mean(sq, dims, nd, true)) : NULL;
    em_tensor *rstd = es_unary(&s, EM_RSQRT, es_scalar(&s, EM_ADD, var, p->eps));
    em_tensor *xhat_s = es_mul(&s, xc, rstd);
    em_tensor *xhat = xhat_s ? em_scope_keep(&s, em_reshape(xhat_s, x3->sizes, 3)) : NULL;
    int rc = xhat ? 0 : -1;
    if (rc == 0 && em_ag_wants(n, 0)) {
        const em_tensor *gyw = w ? es_mul(&s, gy, em_scope_keep(&s, channel_view(w, C))) : gy;
        em_tensor *gs = gyw ? em_scope_keep(&s, stat_view(op, gyw, p)) : NULL;
        em_tensor *m1 = gs ? em_scope_keep(&s, em_mean(gs, dims, nd, true)) : NULL;
        em_tensor *gx_ = m1 ? es_mul(&s, gs, xhat_s) : NULL;
        em_tensor *m2 = gx_ ? em_scope_keep(&s, em_mean(gx_, dims, nd, true)) : NULL;
        em_tensor *t1 = m2 ? es_sub(&s, gs, m1) : NULL;
        em_tensor *t2 = t1 ? es_mul(&s, xhat_s, m2) : NULL;
        em_tensor *t4 = es_mul(&s, es_sub(&s, t1, t2), rstd);
        gin[0] = t4 ? em_reshape(t4, x3->sizes, 3) : NULL;
        if (!gin[0]) rc = -1;
    }
    if (rc == 0 && em_ag_wants(n, 1)) {
        em_tensor *gx_ = es_mul(&s, gy, xhat);
        gin[1] = gx_ ? ei_sum(gx_, cdims, 2, false) : NULL;
        if (!gin[1]) rc = -1;
    }
    if (rc == 0 && em_ag_wants(n, 2)) {
        gin[2] = ei_sum(gy, cdims, 2, false);
        if (!gin[2]) rc = -1;
    }
    em_scope_drop(&s);
    return rc;
}

static int norm_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_norm_op op = (em_norm_op)n->op;
    em_norm_params p = n->p.norm.params;
    em_tensor *x = em_ag_saved(n, 0), *w = n->p.norm.has_weight ? em_ag_saved(n, 1) : NULL;
    if (!x || (n->p.norm.has_weight && !w)) return -1;
    if (em_grad_enabled()) return composed_backward(n, op, &p, x, w, gout[0], gin);
    em_tensor *mean = em_ag_saved(n, 2), *rstd = em_ag_saved(n, 3);
    if (!mean || !rstd) return -1;
    /* the saved weight is the caller's tensor, a view with any strides; the
     * backend's fused kernel reads it densely */
    em_scope s = {0};
    em_tensor *gy = em_scope_keep(&s, em_contiguous(gout[0]));
    em_tensor *xc = gy ? em_scope_keep(&s, em_contiguous(x)) : NULL;
    em_tensor *wc = xc && w ? em_scope_keep(&s, em_contiguous(w)) : NULL;
    if (w && !wc) return em_scope_drop(&s), -1;
    em_device dev = em_dev(x);
    em_tensor *gx = xc && em_ag_wants(n, 0) ? em_empty(x->sizes, 3, x->dtype, dev) : NULL;
    em_tensor *gw = xc && em_ag_wants(n, 1) ? em_empty(&p.C, 1, x->dtype, dev) : NULL;
    em_tensor *gb = xc && em_ag_wants(n, 2) ? em_empty(&p.C, 1, x->dtype, dev) : NULL;
    bool ok = xc && (gx || !em_ag_wants(n, 0)) && (gw || !em_ag_wants(n, 1)) && (gb || !em_ag_wants(n, 2));
    if (ok && em_be(x)->norm_backward(op, gx, gw, gb, gy, xc, mean, rstd, wc, &p)) ok = false;
    em_scope_drop(&s);
    if (!ok) { em_release(gx); em_release(gw); em_release(gb); return -1; }
    gin[0] = gx;
    gin[1] = gw;
    gin[2] = gb;
    return 0;
}

/* y [N, C, S] of x3 (any strides), with the statistics (mean and biased
 * variance) in *mean and *var when asked; recorded when an input requires grad */
static em_tensor *norm_prim(em_norm_op op, const em_tensor *x3, const em_tensor *w, const em_tensor *b,
                            const em_norm_params *p, em_tensor **mean_out, em_tensor **var_out)
{
    const em_backend *be = em_be(x3);
    if (!be->norm || !be->norm_backward)
        return em_set_error("%s: not supported on the %s backend", op == EM_NORM_BATCH ? "batch_norm" : "group_norm",
                            be->name), NULL;
    int64_t nstats = op == EM_NORM_BATCH ? p->C : p->N * p->G;
    em_device dev = em_dev(x3);
    bool record = em_grad_mode && (x3->requires_grad || (w && w->requires_grad) || (b && b->requires_grad));
    bool was = em_set_grad_enabled(false);
    em_scope s = {0};
    em_tensor *xc = em_scope_keep(&s, em_contiguous(x3));
    em_tensor *wc = w ? em_scope_keep(&s, em_contiguous(w)) : NULL;
    em_tensor *bc = b ? em_scope_keep(&s, em_contiguous(b)) : NULL;
    em_tensor *y = xc ? em_empty(x3->sizes, 3, x3->dtype, dev) : NULL;
    /* float16/bfloat16 statistics stay in float32, as PyTorch's: the saved
     * mean and rstd feed the backward pass, where a rounded mean would skew
     * every centred value of an input with a large offset */
    em_dtype sd = x3->dtype == EM_FLOAT16 || x3->dtype == EM_BFLOAT16 ? EM_FLOAT32 : x3->dtype;
    em_tensor *mean = y ? em_empty(&nstats, 1, sd, dev) : NULL;
    em_tensor *var = mean ? em_empty(&nstats, 1, sd, dev) : NULL;
    bool ok = var && (!w || wc) && (!b || bc);
    if (ok && em_numel(xc) > 0 && be->norm(op, y, mean, var, xc, wc, bc, p)) ok = false;
    if (ok && em_numel(xc) == 0 && nstats > 0) ok = em_fill_(mean, NAN) == 0 && em_fill_(var, NAN) == 0;
    em_tensor *rstd = NULL;
    if (ok && record) {
        rstd = es_unary(&s, EM_RSQRT, es_scalar(&s, EM_ADD, var, p->eps));
        ok = rstd != NULL;
    }
    em_set_grad_enabled(was);
    if (!ok) { em_scope_drop(&s); em_release(y); em_release(mean); em_release(var); return NULL; }
    if (rstd) {
        em_node *n = em_ag_node(op == EM_NORM_BATCH ? "NativeBatchNormBackward" : "NativeGroupNormBackward",
                                norm_backward, 3);
        if (!n) { em_release(y); y = NULL; }
        else {
            n->op = op;
            n->p.norm.params = *p;
            n->p.norm.has_weight = w != NULL;
            em_ag_input(n, 0, x3);
            em_ag_input(n, 1, w);
            em_ag_input(n, 2, b);
            if (em_ag_save(n, 0, x3, false) || (w && em_ag_save(n, 1, w, false)) || em_ag_save(n, 2, mean, false) ||
                em_ag_save(n, 3, rstd, false))
                y = em_ag_abandon(n, y);
            else
                y = em_ag_output(n, y);
        }
    }
    em_scope_drop(&s);
    if (!y) { em_release(mean); em_release(var); return NULL; }
    if (mean_out) *mean_out = mean; else em_release(mean);
    if (var_out) *var_out = var; else em_release(var);
    return y;
}

/* ---- checks shared by the ops ------------------------------------------------- */

static int check_vector(const char *op, const char *what, const em_tensor *x, const em_tensor *v, int64_t n)
{
    if (!v) return 0;
    if (em_check_same_device(op, x, v)) return -1;
    if (v->dtype != x->dtype)
        return em_set_error("%s: %s (%s) must have the input's dtype %s", op, what, em_dtype_name(v->dtype),
                            em_dtype_name(x->dtype));
    if (v->ndim != 1 || v->sizes[0] != n)
        return em_set_error("%s: expected %s of shape [%lld] for input %s, got %s", op, what, (long long)n, SHAPE(x),
                            SHAPE(v));
    return 0;
}

static int check_input(const char *op, const em_tensor *x, int min_ndim)
{
    if (!em_dtype_is_float(x->dtype))
        return em_set_error("%s: input must be floating point, got %s", op, em_dtype_name(x->dtype));
    if (x->ndim < min_ndim)
        return em_set_error("%s: expected an input with at least %d dims ([N, C, ...]), got %s", op, min_ndim, SHAPE(x));
    return 0;
}

/* The norms' mixed-dtype case, which PyTorch's CPU kernels take (and
 * autocast reaches, leaving the norms in their input's dtype on the CPU):
 * 1 when x is float16/bfloat16 and every parameter given (of the n in ps,
 * NULL: not given) is float32, 0 when none is float32 (or x is not half),
 * -1 (the error set) when some are and some are not. The op then runs on a
 * float32 copy of x and its result is rounded once to x's dtype;
 * the parameters' gradients stay float32. */
static int mixed_params(const char *op, const em_tensor *x, const em_tensor *const *ps, const char *const *names,
                        int n)
{
    if (x->dtype != EM_FLOAT16 && x->dtype != EM_BFLOAT16) return 0;
    int given = 0, f32 = 0, other = -1;
    for (int i = 0; i < n; i++) {
        if (!ps[i]) continue;
        given++;
        if (ps[i]->dtype == EM_FLOAT32) f32++;
        else if (other < 0) other = i;
    }
    if (f32 == 0) return 0;
    if (f32 == given) return 1;
    return em_set_error("%s: %s (%s) must be float32 as the other parameters are, or all of them the "
                        "input's dtype %s", op, names[other], em_dtype_name(ps[other]->dtype), em_dtype_name(x->dtype));
}

/* mixed_params of the affine pair (weight, bias) */
static int mixed_affine(const char *op, const em_tensor *x, const em_tensor *weight, const em_tensor *bias)
{
    const em_tensor *ps[2] = {weight, bias};
    static const char *const names[2] = {"weight", "bias"};
    return mixed_params(op, x, ps, names, 2);
}

/* The mixed case's result: y, the op run on xf (x in float32; NULL when the
 * cast failed, and y NULL then), in x's dtype. Releases xf and y. */
static em_tensor *in_dtype_of(const em_tensor *x, em_tensor *xf, em_tensor *y)
{
    em_release(xf);
    em_tensor *r = y ? em_to_dtype(y, x->dtype) : NULL;
    em_release(y);
    return r;
}

/* in-place r = (1 - m) r + m s, on tensors that need no gradient */
static int running_update(em_tensor *r, const em_tensor *s, double m)
{
    bool was = em_set_grad_enabled(false);
    em_scope sc = {0};
    em_tensor *a = em_scope_keep(&sc, em_scalar(1 - m, r->dtype, em_dev(r)));
    em_tensor *ms = es_scalar(&sc, EM_MUL, s, m);
    int rc = a && ms && em_binary_(EM_MUL, r, a) == 0 && em_binary_(EM_ADD, r, ms) == 0 ? 0 : -1;
    em_scope_drop(&sc);
    em_set_grad_enabled(was);
    return rc;
}

/* eval-mode batch norm: x * scale + shift per channel, composed (recorded) */
static em_tensor *batch_norm_eval(const em_tensor *x, const em_tensor *rm, const em_tensor *rv, const em_tensor *w,
                                  const em_tensor *b, double eps)
{
    int64_t bs[EM_MAX_DIMS];
    bs[0] = 1;
    bs[1] = x->sizes[1];
    for (int i = 2; i < x->ndim; i++) bs[i] = 1;
    em_scope s = {0};
    em_tensor *inv = es_unary(&s, EM_RSQRT, es_scalar(&s, EM_ADD, rv, eps));
    em_tensor *scale = !inv ? NULL : w ? es_mul(&s, inv, w) : inv;
    em_tensor *ms = es_mul(&s, rm, scale);
    em_tensor *shift = !ms ? NULL : b ? es_sub(&s, b, ms) : es_unary(&s, EM_NEG, ms);
    em_tensor *sv = shift ? em_scope_keep(&s, em_reshape(scale, bs, x->ndim)) : NULL;
    em_tensor *hv = sv ? em_scope_keep(&s, em_reshape(shift, bs, x->ndim)) : NULL;
    em_tensor *xs = hv ? es_mul(&s, x, sv) : NULL;
    return em_scope_finish(&s, es_add(&s, xs, hv));
}

em_tensor *em_batch_norm(const em_tensor *x, em_tensor *running_mean, em_tensor *running_var, const em_tensor *weight,
                         const em_tensor *bias, bool training, double momentum, double eps)
{
    const char *op = "batch_norm";
    if (check_input(op, x, 2)) return NULL;
    const em_tensor *ps[4] = {running_mean, running_var, weight, bias};
    static const char *const names[4] = {"running_mean", "running_var", "weight", "bias"};
    int mixed = mixed_params(op, x, ps, names, 4);
    if (mixed < 0) return NULL;
    if (mixed) {
        em_tensor *xf = em_to_dtype(x, EM_FLOAT32);
        return in_dtype_of(x, xf, xf ? em_batch_norm(xf, running_mean, running_var, weight, bias, training, momentum,
                                                     eps) : NULL);
    }
    int64_t C = x->sizes[1];
    if (check_vector(op, "running_mean", x, running_mean, C) || check_vector(op, "running_var", x, running_var, C) ||
        check_vector(op, "weight", x, weight, C) || check_vector(op, "bias", x, bias, C))
        return NULL;
    if (!(eps >= 0)) return em_set_error("%s: eps must be non-negative, got %g", op, eps), NULL;
    if (!training) {
        if (!running_mean || !running_var)
            return em_set_error("%s: running_mean and running_var must be given when not training", op), NULL;
        return batch_norm_eval(x, running_mean, running_var, weight, bias, eps);
    }
    if ((running_mean == NULL) != (running_var == NULL))
        return em_set_error("%s: give both running_mean and running_var, or neither", op), NULL;
    int64_t N = x->sizes[0], S = 1;
    for (int i = 2; i < x->ndim; i++) S *= x->sizes[i];
    if (N * S <= 1 && C > 0)
        return em_set_error("%s: expected more than 1 value per channel when training, got input %s", op, SHAPE(x)),
               NULL;
    int64_t s3[3] = {N, C, S};
    em_norm_params p = {.N = N, .C = C, .S = S, .G = 1, .eps = eps};
    em_scope s = {0};
    em_tensor *x3 = em_scope_keep(&s, em_reshape(x, s3, 3));
    em_tensor *mean = NULL, *var = NULL;
    em_tensor *y3 = x3 ? em_scope_keep(&s, norm_prim(EM_NORM_BATCH, x3, weight, bias, &p, &mean, &var)) : NULL;
    em_scope_keep(&s, mean);
    em_scope_keep(&s, var);
    if (y3 && running_mean) {
        double n = (double)(N * S);
        em_tensor *unbiased = em_scope_keep(&s, WITHOUT_GRAD(ei_binary_scalar(EM_MUL, var, n / (n - 1), false, false)));
        if (!unbiased || running_update(running_mean, mean, momentum) ||
            running_update(running_var, unbiased, momentum))
            y3 = NULL;
    }
    return em_scope_finish(&s, y3 ? em_scope_keep(&s, em_reshape(y3, x->sizes, x->ndim)) : NULL);
}

em_tensor *ei_group_norm(const em_tensor *x, int64_t groups, const em_tensor *weight, const em_tensor *bias, double eps)
{
    const char *op = "group_norm";
    if (check_input(op, x, 2)) return NULL;
    int64_t N = x->sizes[0], C = x->sizes[1], S = 1;
    for (int i = 2; i < x->ndim; i++) S *= x->sizes[i];
    if (groups < 1 || C % groups != 0)
        return em_set_error("%s: num_groups %lld must be positive and divide the channels %lld (input %s)", op,
                            (long long)groups, (long long)C, SHAPE(x)), NULL;
    int mixed = mixed_affine(op, x, weight, bias);
    if (mixed < 0) return NULL;
    if (mixed) {
        em_tensor *xf = em_to_dtype(x, EM_FLOAT32);
        return in_dtype_of(x, xf, xf ? ei_group_norm(xf, groups, weight, bias, eps) : NULL);
    }
    if (check_vector(op, "weight", x, weight, C) || check_vector(op, "bias", x, bias, C)) return NULL;
    if (!(eps >= 0)) return em_set_error("%s: eps must be non-negative, got %g", op, eps), NULL;
    int64_t s3[3] = {N, C, S};
    em_norm_params p = {.N = N, .C = C, .S = S, .G = groups, .eps = eps};
    em_scope s = {0};
    em_tensor *x3 = em_scope_keep(&s, em_reshape(x, s3, 3));
    em_tensor *y3 = x3 ? em_scope_keep(&s, norm_prim(EM_NORM_GROUP, x3, weight, bias, &p, NULL, NULL)) : NULL;
    return em_scope_finish(&s, y3 ? em_scope_keep(&s, em_reshape(y3, x->sizes, x->ndim)) : NULL);
}

em_tensor *em_group_norm(const em_tensor *x, int64_t groups, const em_tensor *weight, const em_tensor *bias, double eps)
{
    EM_AUTOCAST(EM_AC_FP32_CUDA, ei_group_norm(EM_AC_ARG(0), groups, EM_AC_ARG(1), EM_AC_ARG(2), eps),
                x, weight, bias);
    return ei_group_norm(x, groups, weight, bias, eps);
}

em_tensor *ei_layer_norm(const em_tensor *x, const int64_t *normalized_shape, int nnorm, const em_tensor *weight,
                         const em_tensor *bias, double eps)
{
    const char *op = "layer_norm";
    if (check_input(op, x, 0)) return NULL;
    bool match = nnorm >= 1 && nnorm <= x->ndim;
    int64_t M = 1;
    for (int i = 0; match && i < nnorm; i++) {
        match = x->sizes[x->ndim - nnorm + i] == normalized_shape[i];
        M *= normalized_shape[i];
    }
    if (!match)
        return em_set_error("%s: input %s must end with normalized_shape %s", op, SHAPE(x),
                            em_sizes_tmp(normalized_shape, nnorm)), NULL;
    int mixed = mixed_affine(op, x, weight, bias);
    if (mixed < 0) return NULL;
    if (mixed) {
        em_tensor *xf = em_to_dtype(x, EM_FLOAT32);
        return in_dtype_of(x, xf, xf ? ei_layer_norm(xf, normalized_shape, nnorm, weight, bias, eps) : NULL);
    }
    const em_tensor *wb[2] = {weight, bias};
    static const char *const names[2] = {"weight", "bias"};
    for (int k = 0; k < 2; k++) {
        const em_tensor *v = wb[k];
        if (!v) continue;
        if (em_check_same_device(op, x, v)) return NULL;
        bool same = v->ndim == nnorm && v->dtype == x->dtype;
        for (int i = 0; same && i < nnorm; i++) same = v->sizes[i] == normalized_shape[i];
        if (!same)
            return em_set_error("%s: expected %s of shape %s and dtype %s, got %s %s", op, names[k],
                                em_sizes_tmp(normalized_shape, nnorm), em_dtype_name(x->dtype), SHAPE(v),
                                em_dtype_name(v->dtype)), NULL;
    }
    if (!(eps >= 0)) return em_set_error("%s: eps must be non-negative, got %g", op, eps), NULL;
    int64_t R = M ? em_numel(x) / M : 0;
    int64_t s3[3] = {R, M, 1};
    em_norm_params p = {.N = R, .C = M, .S = 1, .G = 1, .eps = eps};
    em_scope s = {0};
    em_tensor *x3 = em_scope_keep(&s, em_reshape(x, s3, 3));
    em_tensor *wf = weight ? em_scope_keep(&s, em_reshape(weight, &M, 1)) : NULL;
    em_tensor *bf = bias ? em_scope_keep(&s, em_reshape(bias, &M, 1)) : NULL;
    bool ok = x3 && (!weight || wf) && (!bias || bf);
    em_tensor *y3 = ok ? em_scope_keep(&s, norm_prim(EM_NORM_GROUP, x3, wf, bf, &p, NULL, NULL)) : NULL;
    return em_scope_finish(&s, y3 ? em_scope_keep(&s, em_reshape(y3, x->sizes, x->ndim)) : NULL);
}

em_tensor *em_layer_norm(const em_tensor *x, const int64_t *normalized_shape, int nnorm, const em_tensor *weight,
                         const em_tensor *bias, double eps)
{
    EM_AUTOCAST(EM_AC_FP32_CUDA, ei_layer_norm(EM_AC_ARG(0), normalized_shape, nnorm, EM_AC_ARG(1), EM_AC_ARG(2), eps),
                x, weight, bias);
    return ei_layer_norm(x, normalized_shape, nnorm, weight, bias, eps);
}
