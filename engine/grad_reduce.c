/* grad_reduce.c — gradients of reductions, softmax, cumulative sums and
 * products.
 * mean, var, std, norm and logsumexp are built from these and the
 * elementwise ops, so they need no formulas of their own, except var and
 * std without degrees of freedom (em_ag_variance). */
#include "autograd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { RK_SUM, RK_AMAX, RK_AMIN, RK_PROD };

/* g (reduced without keepdim) with the reduced dims put back as size 1. */
static em_tensor *unsqueeze_reduced(const em_node *n, const em_tensor *g, bool keepdim)
{
    if (keepdim) return em_retain((em_tensor *)g);
    int64_t kept[EM_MAX_DIMS];
    for (int d = 0; d < n->ndim; d++) kept[d] = n->dims[d] ? 1 : n->sizes[d];
    return em_reshape(g, kept, n->ndim);
}

/* t with its last dim (of size len) reversed, through index_select so
 * that it records itself (indices are 1-based in the engine) */
static em_tensor *reverse_last(const em_tensor *t, int last, int64_t len)
{
    em_tensor *ix = em_arange((double)len, 0, -1, EM_INT64, em_dev(t));
    em_tensor *r = ix ? em_index_select(t, last, ix) : NULL;
    em_release(ix);
    return r;
}

/* The exclusive cumulative product along the last dim: 1, x1, x1 x2, ... */
static em_tensor *exclusive_cumprod(const em_tensor *x, int last, int64_t len)
{
    int64_t sizes[EM_MAX_DIMS];
    memcpy(sizes, x->sizes, sizeof(int64_t) * (size_t)x->ndim);
    sizes[last] = 1;
    em_scope s = {0};
    em_tensor *one = em_scope_keep(&s, em_ones(sizes, x->ndim, x->dtype, em_dev(x)));
    em_tensor *head = es_narrow(&s, x, last, 0, len - 1);
    em_tensor *parts[2] = {one, head};
    em_tensor *shifted = one && head ? em_scope_keep(&s, ei_cat(parts, 2, last)) : NULL;
    return em_scope_finish(&s, shifted ? em_scope_keep(&s, ei_cumprod(shifted, last)) : NULL);
}

/* g times d prod / dx_i: the product of the other elements of x_i's slice,
 * as the product of the exclusive cumulative products from the left and
 * from the right. Unlike prod / x_i it is exact when x holds zeros (a finite
 * gradient, as PyTorch's), and cumprod's own gradient is exact with zeros,
 * so it stays right when differentiated again. The reduced dims are moved
 * last and flattened into one. */
static em_tensor *prod_of_others(const em_node *n, const em_tensor *gk, const em_tensor *x)
{
    int perm[EM_MAX_DIMS], inv[EM_MAX_DIMS], k = 0, nk;
    int64_t sizes[EM_MAX_DIMS], len = 1;
    for (int d = 0; d < n->ndim; d++) if (!n->dims[d]) { sizes[k] = x->sizes[d]; perm[k++] = d; }
    nk = k;
    for (int d = 0; d < n->ndim; d++) if (n->dims[d]) { len *= x->sizes[d]; perm[k++] = d; }
    for (int d = 0; d < n->ndim; d++) inv[perm[d]] = d;
    if (len == 0 || em_numel(x) == 0) return ei_binary(EM_MUL, gk, x);   /* empty: shapes only */
    sizes[nk] = len;
    em_scope s = {0};
    em_tensor *xp = em_scope_keep(&s, em_permute(x, perm, n->ndim));
    em_tensor *xr = xp ? em_scope_keep(&s, em_reshape(xp, sizes, nk + 1)) : NULL;
    em_tensor *left = xr ? em_scope_keep(&s, exclusive_cumprod(xr, nk, len)) : NULL;
    em_tensor *xrev = xr ? em_scope_keep(&s, reverse_last(xr, nk, len)) : NULL;
    em_tensor *rrev = xrev ? em_scope_keep(&s, exclusive_cumprod(xrev, nk, len)) : NULL;
    em_tensor *right = rrev ? em_scope_keep(&s, reverse_last(rrev, nk, len)) : NULL;
    em_tensor *o = es_mul(&s, left, right);
    em_tensor *op = o ? em_scope_keep(&s, em_reshape(o, xp->sizes, n->ndim)) : NULL;
    em_tensor *others = op ? em_scope_keep(&s, em_permute(op, inv, n->ndim)) : NULL;
    return em_scope_finish(&s, es_mul(&s, gk, others));
}

static int reduce_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *gk = unsqueeze_reduced(n, gout[0], n->p.reduce.keepdim);
    if (!gk) return -1;
    em_tensor *r = NULL;
    if (n->op == RK_SUM) {
        r = em_expand(gk, n->sizes, n->ndim);
    } else if (n->op == RK_PROD) {
        em_tensor *x = em_ag_saved(n, 0);
        r = x ? prod_of_others(n, gk, x) : NULL;
    } else {
        em_scope s = {0};
        em_tensor *x = em_ag_saved(n, 0), *y = em_ag_saved(n, 1);
        em_tensor *yk = x && y ? em_scope_keep(&s, unsqueeze_reduced(n, y, n->p.reduce.keepdim)) : NULL;
        /* the gradient is shared evenly by the elements equal to the extreme */
        em_tensor *hit = es_binary(&s, EM_EQ, x, yk);
        em_tensor *hf = hit ? em_scope_keep(&s, em_cast_to(hit, x->dtype)) : NULL;
        int dims[EM_MAX_DIMS], nd = 0;
        for (int d = 0; d < n->ndim; d++) if (n->dims[d]) dims[nd++] = d;
        em_tensor *cnt = es_sum(&s, hf, dims, nd, true);
        em_tensor *share = es_div(&s, gk, cnt);
        r = em_scope_finish(&s, es_mul(&s, hf, share));
    }
    em_release(gk);
    return (gin[0] = r) ? 0 : -1;
}

em_tensor *em_ag_reduce(int kind, const em_tensor *in, const int *dims, int ndims, bool keepdim)
{
    em_tensor *out;
    switch (kind) {
    case RK_SUM: out = WITHOUT_GRAD(ei_sum(in, dims, ndims, keepdim)); break;
    case RK_AMAX: out = WITHOUT_GRAD(em_amax(in, dims, ndims, keepdim)); break;
    case RK_AMIN: out = WITHOUT_GRAD(em_amin(in, dims, ndims, keepdim)); break;
    default: out = WITHOUT_GRAD(ei_prod(in, dims, ndims, keepdim)); break;
    }
    if (!out || !em_dtype_is_float(out->dtype)) return out;
    static const char *const names[] = {"SumBackward", "AmaxBackward", "AminBackward", "ProdBackward"};
    em_node *n = em_ag_node(names[kind], reduce_backward, 1);
    if (!n) { em_release(out); return NULL; }
    bool mask[EM_MAX_DIMS];
    if (em_dims_mask(in, dims, ndims, names[kind], mask) < 0) return em_ag_abandon(n, out);
    n->op = kind;
    n->p.reduce.keepdim = keepdim;
    n->ndim = in->ndim;
    memcpy(n->sizes, in->sizes, sizeof(int64_t) * (size_t)in->ndim);
    for (int d = 0; d < in->ndim; d++) n->dims[d] = mask[d];
    em_ag_input(n, 0, in);
    if (kind != RK_SUM && (em_ag_save(n, 0, in, false) || (kind != RK_PROD && em_ag_save(n, 1, out, true))))
        return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

/* values picked along a dim (max/min with a dim, sort, topk): the gradient
 * goes back to the positions the indices name */
static int dim_values_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *idx = em_ag_saved(n, 0);
    if (!idx) return -1;
    em_scope s = {0};
    const em_tensor *g = gout[0], *ix = idx;
    if (!n->p.reduce.keepdim) {   /* put the reduced dim back */
        g = es_unsqueeze(&s, g, n->dim);
        ix = es_unsqueeze(&s, ix, n->dim);
        if (!g || !ix) return em_scope_drop(&s), -1;
    }
    gin[0] = em_ag_add_into_zeros(false, n->sizes, n->ndim, n->dim, ix, g);
    em_scope_drop(&s);
    return gin[0] ? 0 : -1;
}

em_tensor *em_ag_dim_values(const em_tensor *in, int dim, bool keepdim, const em_tensor *indices, em_tensor *values)
{
    if (!values || !em_ag_needed1(in) || !em_dtype_is_float(values->dtype)) return values;
    em_node *n = em_ag_node("IndicesBackward", dim_values_backward, 1);
    if (!n) { em_release(values); return NULL; }
    n->dim = in->ndim ? dim : 0;
    n->p.reduce.keepdim = keepdim || in->ndim == 0;
    n->ndim = in->ndim;
    memcpy(n->sizes, in->sizes, sizeof(int64_t) * (size_t)in->ndim);
    em_ag_input(n, 0, in);
    if (em_ag_save(n, 0, indices, false)) return em_ag_abandon(n, values);
    return em_ag_output(n, values);
}

/* The node of an op along dim of its one input in (dim made non-negative);
 * NULL, with out released, when it cannot be made. */
static em_node *dim_node(const char *name, em_apply_fn apply, const em_tensor *in, int dim, em_tensor *out)
{
    em_node *n = em_ag_node(name, apply, 1);
    if (!n) { em_release(out); return NULL; }
    n->dim = in->ndim ? (dim < 0 ? dim + in->ndim : dim) : 0;
    em_ag_input(n, 0, in);
    return n;
}

static int softmax_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *y = em_ag_saved(n, 0);
    if (!y) return -1;
    const em_tensor *g = gout[0];
    em_scope s = {0};
    em_tensor *r;
    if (n->op == EM_SOFTMAX) {          /* y * (g - sum(g*y)) */
        em_tensor *gy = es_mul(&s, g, y);
        em_tensor *sum = es_sum(&s, gy, &n->dim, 1, true);
        em_tensor *d = es_sub(&s, g, sum);
        r = es_mul(&s, y, d);
    } else {                            /* g - exp(y) * sum(g) */
        em_tensor *sum = es_sum(&s, g, &n->dim, 1, true);
        em_tensor *e = es_unary(&s, EM_EXP, y);
        em_tensor *es = es_mul(&s, e, sum);
        r = es_sub(&s, g, es);
    }
    r = em_scope_finish(&s, r);
    return (gin[0] = r) ? 0 : -1;
}

em_tensor *em_ag_softmax(int op, const em_tensor *in, int dim)
{
    em_tensor *out = WITHOUT_GRAD(op == EM_SOFTMAX ? ei_softmax(in, dim) : ei_log_softmax(in, dim));
    if (!out) return NULL;
    em_node *n = dim_node(op == EM_SOFTMAX ? "SoftmaxBackward" : "LogSoftmaxBackward", softmax_backward, in, dim, out);
    if (!n) return NULL;
    n->op = op;
    if (em_ag_save(n, 0, out, true)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

static int cumsum_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    /* d/dx_i sum_{j>=i} g_j = total - cumsum(g) + g */
    const em_tensor *g = gout[0];
    em_scope s = {0};
    em_tensor *total = es_sum(&s, g, &n->dim, 1, true);
    em_tensor *c = em_scope_keep(&s, ei_cumsum(g, n->dim));
    em_tensor *d = es_sub(&s, total, c);
    em_tensor *r = em_scope_finish(&s, es_add(&s, d, g));
    return (gin[0] = r) ? 0 : -1;
}

em_tensor *em_ag_cumsum(const em_tensor *in, int dim)
{
    em_tensor *out = WITHOUT_GRAD(ei_cumsum(in, dim));
    if (!out || !em_dtype_is_float(out->dtype)) return out;
    em_node *n = dim_node("CumsumBackward", cumsum_backward, in, dim, out);
    return n ? em_ag_output(n, out) : NULL;
}

/* t moved s places towards index 0 along dim, zeros filling the end */
static em_tensor *shift_down(const em_tensor *t, int dim, int64_t s)
{
    int64_t zs[EM_MAX_DIMS];
    memcpy(zs, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    zs[dim] = s;
    em_scope sc = {0};
    em_tensor *head = es_narrow(&sc, t, dim, s, t->sizes[dim] - s);
    em_tensor *z = em_scope_keep(&sc, em_zeros(zs, t->ndim, t->dtype, em_dev(t)));
    em_tensor *parts[2] = {head, z};
    return em_scope_finish(&sc, head && z ? em_scope_keep(&sc, ei_cat(parts, 2, dim)) : NULL);
}

/* With y_j = prod_{i<=j} x_i,
 *     dL/dx_k = sum_{j>=k} g_j prod_{i<=j, i!=k} x_i = L_k R_k,
 * L_k = prod_{i<k} x_i (y moved up one place, 1 first) and
 * R_k = sum_{j>=k} g_j prod_{k<i<=j} x_i, the solution of the backward
 * recurrence R_k = g_k + x_{k+1} R_{k+1}. Doubling solves it in ceil(log2 n)
 * whole-tensor steps: R_k += A_k R_{k+s}, A_k *= A_{k+s}, where A_k is the
 * product of the s factors after x_k. The usual revcumsum(g*y)/x divides by
 * x, so it needs special cases for zeros (one per row, or several) and is
 * wrong in its second derivative there; this is a polynomial in x and g with
 * no division, exact for any zeros and to any order of differentiation. */
static int cumprod_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *x = em_ag_saved(n, 0), *saved_y = em_ag_saved(n, 1);
    if (!x || !saved_y) return -1;
    const em_tensor *g = gout[0];
    int d = n->dim;
    int64_t len = x->ndim ? x->sizes[d] : 1;
    if (len <= 1) {                     /* L = 1, R = g */
        gin[0] = em_retain((em_tensor *)g);
        return 0;
    }
    em_scope sc = {0};
    /* the saved output is detached; with create_graph L must depend on x */
    const em_tensor *y = em_grad_mode ? em_scope_keep(&sc, ei_cumprod(x, d)) : saved_y;
    int64_t os[EM_MAX_DIMS];
    memcpy(os, x->sizes, sizeof(int64_t) * (size_t)x->ndim);
    os[d] = 1;
    em_tensor *one = em_scope_keep(&sc, em_ones(os, x->ndim, x->dtype, em_dev(x)));
    em_tensor *top = es_narrow(&sc, y, d, 0, len - 1);
    em_tensor *parts[2] = {one, top};
    em_tensor *L = one && top ? em_scope_keep(&sc, ei_cat(parts, 2, d)) : NULL;
    /* A and R are carried from step to step: each step's scope takes the
     * ones it replaces, with its own temporaries */
    em_tensor *A = L ? shift_down(x, d, 1) : NULL;
    em_tensor *R = A ? em_retain((em_tensor *)g) : NULL;
    for (int64_t s = 1; R && s < len; s *= 2) {
        em_scope step = {0};
        em_tensor *Rs = em_scope_keep(&step, shift_down(R, d, s));
        em_tensor *AR = es_mul(&step, A, Rs);
        em_scope_keep(&step, R);
        R = AR ? ei_binary(EM_ADD, R, AR) : NULL;
        if (R && 2 * s < len) {
            em_tensor *As = em_scope_keep(&step, shift_down(A, d, s));
            em_scope_keep(&step, A);
            A = As ? ei_binary(EM_MUL, A, As) : NULL;
            if (!A) { em_release(R); R = NULL; }
        }
        em_scope_drop(&step);
    }
    em_tensor *r = es_mul(&sc, L, em_scope_keep(&sc, R));
    em_scope_keep(&sc, A);
    r = em_scope_finish(&sc, r);
    return (gin[0] = r) ? 0 : -1;
}

em_tensor *em_ag_cumprod(const em_tensor *in, int dim)
{
    em_tensor *out = WITHOUT_GRAD(ei_cumprod(in, dim));
    if (!out || !em_dtype_is_float(out->dtype)) return out;
    em_node *n = dim_node("CumprodBackward", cumprod_backward, in, dim, out);
    if (!n) return NULL;
    if (em_ag_save(n, 0, in, false) || em_ag_save(n, 1, out, true)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

/* ---- roots with a gradient of 0 at 0 ------------------------------------------ */

/* y = s^(1/p), the last step of std and of the p-norms. Its derivative
 * y^(1-p)/p is infinite at s = 0, where the chain rule then multiplies it by
 * the 0 of the step before (the deviations of constant data, the x of the
 * origin) and gives NaN. PyTorch defines the gradient of std and norm there
 * as 0; so does this node: g * y^(1-p) / p, with 0 where y is 0. */
static int root_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *y = em_ag_saved(n, 0);
    if (!y) return -1;
    double p = n->p.root.p;
    em_scope s = {0};
    em_tensor *zero = es_scalar_ex(&s, EM_EQ, y, 0, true, false);
    em_tensor *ys = zero ? em_scope_keep(&s, em_masked_fill(y, zero, 1)) : NULL;    /* y, with 1 where it is 0 */
    /* d = p y^(p-1), the derivative's denominator (2 y for a square root) */
    em_tensor *yp = p != 2 ? es_scalar(&s, EM_POW, ys, p - 1) : NULL;
    em_tensor *d = es_scalar(&s, EM_MUL, p == 2 ? ys : yp, p);
    em_tensor *r = es_div(&s, gout[0], d);
    gin[0] = r ? em_masked_fill(r, zero, 0) : NULL;
    em_scope_drop(&s);
    return gin[0] ? 0 : -1;
}

em_tensor *em_root(const em_tensor *s, double p)
{
    em_tensor *out = WITHOUT_GRAD(p == 2 ? ei_unary(EM_SQRT, s) : ei_binary_scalar(EM_POW, s, 1.0 / p, false, false));
    if (!out || !em_ag_needed1(s)) return out;
    em_node *n = em_ag_node(p == 2 ? "SqrtBackward" : "PowBackward", root_backward, 1);
    if (!n) { em_release(out); return NULL; }
    n->p.root.p = p;
    em_ag_input(n, 0, s);
    if (em_ag_save(n, 0, out, true)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

/* var and std with correction >= n divide by a clamped 0, and the composed
 * chain rule then mixes +inf and -inf into NaN everywhere. PyTorch's
 * var_backward gives, over all dims, g * (inf, or NaN where x equals its
 * mean); over given dims, 2 g (x - mean) / (n - correction) with the divisor
 * not clamped (±inf at correction = n, finite and of the other sign beyond).
 * std first turns g into g / (2 std), 0 where std is 0. This node gives the
 * same. */
static int variance_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *x = em_ag_saved(n, 0), *y = n->op ? em_ag_saved(n, 1) : NULL;
    if (!x || (n->op && !y)) return -1;
    em_scope s = {0};
    const em_tensor *gv = gout[0];
    if (n->op) {
        em_tensor *zero = es_scalar_ex(&s, EM_EQ, y, 0, true, false);
        em_tensor *y2 = zero ? es_scalar(&s, EM_MUL, y, 2) : NULL;
        em_tensor *q = es_div(&s, gout[0], y2);
        gv = q ? em_scope_keep(&s, em_masked_fill(q, zero, 0)) : NULL;
    }
    if (!gv) return em_scope_drop(&s), -1;
    int dims[EM_MAX_DIMS], nd = 0;
    for (int d = 0; d < n->ndim; d++) if (n->dims[d]) dims[nd++] = d;
    em_tensor *r = NULL;
    if (n->dim) {   /* over all dims */
        em_tensor *mu = em_scope_keep(&s, em_mean(x, NULL, 0, false));
        em_tensor *eq = es_binary(&s, EM_EQ, x, mu);
        em_tensor *inf = eq ? em_scope_keep(&s, em_full(x->sizes, x->ndim, INFINITY, x->dtype, em_dev(x))) : NULL;
        em_tensor *f = inf ? em_scope_keep(&s, em_masked_fill(inf, eq, NAN)) : NULL;
        r = es_mul(&s, gv, f);
    } else {
        em_tensor *gk = em_scope_keep(&s, unsqueeze_reduced(n, gv, n->p.var.keepdim));
        em_tensor *mu = gk ? em_scope_keep(&s, em_mean(x, dims, nd, true)) : NULL;
        em_tensor *xc = es_sub(&s, x, mu);
        em_tensor *gs = xc ? es_scalar(&s, EM_MUL, gk, 2.0 / n->p.var.correction) : NULL;
        r = es_mul(&s, gs, xc);
    }
    r = em_scope_finish(&s, r);
    return (gin[0] = r) ? 0 : -1;
}

em_tensor *em_ag_variance(const em_tensor *in, em_tensor *out, const int *dims, int ndims, double dof, bool keepdim,
                          bool take_sqrt)
{
    em_node *n = em_ag_node(take_sqrt ? "StdBackward" : "VarBackward", variance_backward, 1);
    if (!n) { em_release(out); return NULL; }
    bool mask[EM_MAX_DIMS];
    if (em_dims_mask(in, dims, ndims, take_sqrt ? "std" : "var", mask) < 0) return em_ag_abandon(n, out);
    n->op = take_sqrt;
    n->dim = ndims == 0 || in->ndim == 0;
    n->p.var.keepdim = keepdim;
    n->p.var.correction = dof;
    n->ndim = in->ndim;
    memcpy(n->sizes, in->sizes, sizeof(int64_t) * (size_t)in->ndim);
    for (int d = 0; d < in->ndim; d++) n->dims[d] = mask[d];
    em_ag_input(n, 0, in);
    if (em_ag_save(n, 0, in, false) || (take_sqrt && em_ag_save(n, 1, out, true))) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}
