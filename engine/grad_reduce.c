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
    em_tensor *one = em_ones(sizes, x->ndim, x->dtype, em_dev(x));
    em_tensor *head = em_narrow(x, last, 0, len - 1);
    em_tensor *parts[2] = {one, head};
    em_tensor *shifted = one && head ? ei_cat(parts, 2, last) : NULL;
    em_tensor *r = shifted ? ei_cumprod(shifted, last) : NULL;
    em_release(one); em_release(head); em_release(shifted);
    return r;
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
    em_tensor *xp = em_permute(x, perm, n->ndim);
    em_tensor *xr = xp ? em_reshape(xp, sizes, nk + 1) : NULL;
    em_tensor *left = xr ? exclusive_cumprod(xr, nk, len) : NULL;
    em_tensor *xrev = xr ? reverse_last(xr, nk, len) : NULL;
    em_tensor *rrev = xrev ? exclusive_cumprod(xrev, nk, len) : NULL;
    em_tensor *right = rrev ? reverse_last(rrev, nk, len) : NULL;
    em_tensor *o = left && right ? ei_binary(EM_MUL, left, right) : NULL;
    em_tensor *op = o ? em_reshape(o, xp->sizes, n->ndim) : NULL;
    em_tensor *others = op ? em_permute(op, inv, n->ndim) : NULL;
    em_tensor *r = others ? ei_binary(EM_MUL, gk, others) : NULL;
    em_release(xp); em_release(xr); em_release(left); em_release(xrev); em_release(rrev);
    em_release(right); em_release(o); em_release(op); em_release(others);
    return r;
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
        em_tensor *x = em_ag_saved(n, 0), *y = em_ag_saved(n, 1);
        em_tensor *yk = x && y ? unsqueeze_reduced(n, y, n->p.reduce.keepdim) : NULL;
        /* the gradient is shared evenly by the elements equal to the extreme */
        em_tensor *hit = yk ? ei_binary(EM_EQ, x, yk) : NULL;
        em_tensor *hf = hit ? em_cast_to(hit, x->dtype) : NULL;
        int dims[EM_MAX_DIMS], nd = 0;
        for (int d = 0; d < n->ndim; d++) if (n->dims[d]) dims[nd++] = d;
        em_tensor *cnt = hf ? ei_sum(hf, dims, nd, true) : NULL;
        em_tensor *share = cnt ? ei_binary(EM_DIV, gk, cnt) : NULL;
        r = share ? ei_binary(EM_MUL, hf, share) : NULL;
        em_release(hit); em_release(hf); em_release(cnt); em_release(share);
        em_release(yk);
    }
    em_release(gk);
    if (!r) return -1;
    gin[0] = r;
    return 0;
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
    em_tensor *g = em_retain((em_tensor *)gout[0]), *ix = em_retain(idx);
    if (!n->p.reduce.keepdim) {   /* put the reduced dim back */
        em_tensor *g2 = em_unsqueeze(g, n->dim), *i2 = em_unsqueeze(ix, n->dim);
        em_release(g); em_release(ix);
        g = g2; ix = i2;
        if (!g || !ix) { em_release(g); em_release(ix); return -1; }
    }
    gin[0] = em_ag_add_into_zeros(false, n->sizes, n->ndim, n->dim, ix, g);
    em_release(g);
    em_release(ix);
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
    em_tensor *r;
    if (n->op == EM_SOFTMAX) {          /* y * (g - sum(g*y)) */
        em_tensor *gy = ei_binary(EM_MUL, g, y);
        em_tensor *s = gy ? ei_sum(gy, &n->dim, 1, true) : NULL;
        em_tensor *d = s ? ei_binary(EM_SUB, g, s) : NULL;
        r = d ? ei_binary(EM_MUL, y, d) : NULL;
        em_release(gy); em_release(s); em_release(d);
    } else {                            /* g - exp(y) * sum(g) */
        em_tensor *s = ei_sum(g, &n->dim, 1, true);
        em_tensor *e = ei_unary(EM_EXP, y);
        em_tensor *es = s && e ? ei_binary(EM_MUL, e, s) : NULL;
        r = es ? ei_binary(EM_SUB, g, es) : NULL;
        em_release(s); em_release(e); em_release(es);
    }
    if (!r) return -1;
    gin[0] = r;
    return 0;
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
    em_tensor *total = ei_sum(g, &n->dim, 1, true);
    em_tensor *c = ei_cumsum(g, n->dim);
    em_tensor *d = total && c ? ei_binary(EM_SUB, total, c) : NULL;
    em_tensor *r = d ? ei_binary(EM_ADD, d, g) : NULL;
    em_release(total); em_release(c); em_release(d);
    if (!r) return -1;
    gin[0] = r;
    return 0;
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
    em_tensor *head = em_narrow(t, dim, s, t->sizes[dim] - s);
    em_tensor *z = em_zeros(zs, t->ndim, t->dtype, em_dev(t));
    em_tensor *parts[2] = {head, z};
    em_tensor *r = head && z ? ei_cat(parts, 2, dim) : NULL;
    em_release(head);
    em_release(z);
    return r;
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
    /* the saved output is detached; with create_graph L must depend on x */
    em_tensor *y = em_grad_mode ? ei_cumprod(x, d) : em_retain(saved_y);
    int64_t os[EM_MAX_DIMS];
    memcpy(os, x->sizes, sizeof(int64_t) * (size_t)x->ndim);
    os[d] = 1;
    em_tensor *one = em_ones(os, x->ndim, x->dtype, em_dev(x));
    em_tensor *top = y ? em_narrow(y, d, 0, len - 1) : NULL;
    em_tensor *parts[2] = {one, top};
    em_tensor *L = one && top ? ei_cat(parts, 2, d) : NULL;
    em_release(y); em_release(one); em_release(top);
    em_tensor *A = L ? shift_down(x, d, 1) : NULL;
    em_tensor *R = A ? em_retain((em_tensor *)g) : NULL;
    for (int64_t s = 1; R && s < len; s *= 2) {
        em_tensor *Rs = shift_down(R, d, s);
        em_tensor *AR = Rs ? ei_binary(EM_MUL, A, Rs) : NULL;
        em_tensor *R2 = AR ? ei_binary(EM_ADD, R, AR) : NULL;
        em_release(Rs); em_release(AR); em_release(R);
        R = R2;
        if (R && 2 * s < len) {
            em_tensor *As = shift_down(A, d, s);
            em_tensor *A2 = As ? ei_binary(EM_MUL, A, As) : NULL;
            em_release(As); em_release(A);
            A = A2;
            if (!A) { em_release(R); R = NULL; }
        }
    }
    em_tensor *r = R ? ei_binary(EM_MUL, L, R) : NULL;
    em_release(L); em_release(A); em_release(R);
    if (!r) return -1;
    gin[0] = r;
    return 0;
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
    em_tensor *zero = ei_binary_scalar(EM_EQ, y, 0, true, false);
    em_tensor *ys = zero ? em_masked_fill(y, zero, 1) : NULL;         /* y, with 1 where it is 0 */
    /* d = p y^(p-1), the derivative's denominator (2 y for a square root) */
    em_tensor *yp = ys && p != 2 ? ei_binary_scalar(EM_POW, ys, p - 1, false, false) : NULL;
    em_tensor *d = ys && (p == 2 || yp) ? ei_binary_scalar(EM_MUL, p == 2 ? ys : yp, p, false, false) : NULL;
    em_tensor *r = d ? ei_binary(EM_DIV, gout[0], d) : NULL;
    gin[0] = r ? em_masked_fill(r, zero, 0) : NULL;
    em_release(zero); em_release(ys); em_release(yp); em_release(d); em_release(r);
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
    em_tensor *gv;
    if (n->op) {
        em_tensor *zero = ei_binary_scalar(EM_EQ, y, 0, true, false);
        em_tensor *y2 = zero ? ei_binary_scalar(EM_MUL, y, 2, false, false) : NULL;
        em_tensor *q = y2 ? ei_binary(EM_DIV, gout[0], y2) : NULL;
        gv = q ? em_masked_fill(q, zero, 0) : NULL;
        em_release(zero); em_release(y2); em_release(q);
    } else {
        gv = em_retain((em_tensor *)gout[0]);
    }
    if (!gv) return -1;
    int dims[EM_MAX_DIMS], nd = 0;
    for (int d = 0; d < n->ndim; d++) if (n->dims[d]) dims[nd++] = d;
    em_tensor *r = NULL;
    if (n->dim) {   /* over all dims */
        em_tensor *mu = em_mean(x, NULL, 0, false);
        em_tensor *eq = mu ? ei_binary(EM_EQ, x, mu) : NULL;
        em_tensor *inf = eq ? em_full(x->sizes, x->ndim, INFINITY, x->dtype, em_dev(x)) : NULL;
        em_tensor *f = inf ? em_masked_fill(inf, eq, NAN) : NULL;
        r = f ? ei_binary(EM_MUL, gv, f) : NULL;
        em_release(mu); em_release(eq); em_release(inf); em_release(f);
    } else {
        em_tensor *gk = unsqueeze_reduced(n, gv, n->p.var.keepdim);
        em_tensor *mu = gk ? em_mean(x, dims, nd, true) : NULL;
        em_tensor *xc = mu ? ei_binary(EM_SUB, x, mu) : NULL;
        em_tensor *gs = xc ? ei_binary_scalar(EM_MUL, gk, 2.0 / n->p.var.correction, false, false) : NULL;
        r = gs ? ei_binary(EM_MUL, gs, xc) : NULL;
        em_release(gk); em_release(mu); em_release(xc); em_release(gs);
    }
    em_release(gv);
    if (!r) return -1;
    gin[0] = r;
    return 0;
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
