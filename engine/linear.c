/* linear.c — F.linear as one fused op on the backend's linear family.
 *
 * y = act(x @ w^T + b) with x [..., K] folded into one [M, K] matrix, so the
 * forward is one backend call (cuBLASLt: the GEMM with a BIAS or GELU_AUX_BIAS
 * epilogue) and the backward two or three: GELU's derivative at the saved
 * pre-activation (DGELU), gX = dY @ W, and gW = dY^T @ X with the bias
 * gradient out of the same GEMM (BGRAD). When the backward is itself recorded
 * (create_graph), the same gradient is composed from engine ops with the
 * pre-activation recomputed, so its dependence on x, w and b is
 * differentiated too.
 *
 * Inputs outside the fused path (integer dtypes, empty products, sizes past
 * 2^31) take the composed path: matmul, add, then the activation.
 * All of F.linear's work enters through em_linear, so a cast of the inputs
 * (autocast) has one place to go. */
#include "autograd.h"

#include <string.h>

/* 0.5 x (1 + tanh(k (x + c x^3))): the table's op (elementwise_ops.h), one
 * pass with the formula the CPU's fused epilogue uses too; recorded */
em_tensor *em_gelu_tanh(const em_tensor *x) { return ei_unary(EM_GELU_TANH, x); }

/* its derivative, recorded (so the create_graph backward below differentiates) */
static em_tensor *gelu_tanh_grad(const em_tensor *x) { return ei_unary(EM_GELU_TANH_GRAD, x); }

static int check_args(const em_tensor *x, const em_tensor *w, const em_tensor *b, em_linear_act act)
{
    if (act != EM_LINEAR_ACT_NONE && act != EM_LINEAR_ACT_GELU_TANH)
        return em_set_error("linear: unknown activation %d", (int)act);
    if (em_check_same_device("linear", x, w) || (b && em_check_same_device("linear", x, b))) return -1;
    if (w->ndim != 2)
        return em_set_error("linear: expected a 2-D weight [out_features, in_features], got %s", SHAPE(w));
    if (x->ndim < 1)
        return em_set_error("linear: expected an input of shape [..., %lld], got a scalar", (long long)w->sizes[1]);
    if (x->sizes[x->ndim - 1] != w->sizes[1])
        return em_set_error("linear: input %s and weight %s: expected an input of shape [..., %lld]", SHAPE(x),
                            SHAPE(w), (long long)w->sizes[1]);
    if (b && (b->ndim != 1 || b->sizes[0] != w->sizes[0]))
        return em_set_error("linear: bias %s and weight %s: expected a bias of shape [%lld]", SHAPE(b), SHAPE(w),
                            (long long)w->sizes[0]);
    if (x->dtype != w->dtype || (b && b->dtype != x->dtype)) {
        if (b)
            return em_set_error("linear: input (%s), weight (%s) and bias (%s) must have one dtype",
                                em_dtype_name(x->dtype), em_dtype_name(w->dtype), em_dtype_name(b->dtype));
        return em_set_error("linear: input (%s) and weight (%s) must have one dtype", em_dtype_name(x->dtype),
                            em_dtype_name(w->dtype));
    }
    if (act != EM_LINEAR_ACT_NONE && !em_dtype_is_float(x->dtype))
        return em_set_error("linear: the gelu activation needs floating point tensors, got %s",
                            em_dtype_name(x->dtype));
    return 0;
}

/* x @ w^T (+ b), then the activation, from engine ops (recorded) */
static em_tensor *composed(const em_tensor *x, const em_tensor *w, const em_tensor *b, em_linear_act act)
{
    em_scope s = {0};
    em_tensor *wt = em_scope_keep(&s, em_transpose(w, 0, 1));
    em_tensor *y = wt ? em_scope_keep(&s, ei_matmul(x, wt)) : NULL;
    if (b) y = es_add(&s, y, b);
    if (act == EM_LINEAR_ACT_GELU_TANH) y = y ? em_scope_keep(&s, em_gelu_tanh(y)) : NULL;
    return em_scope_finish(&s, y);
}

/* x as [M, K] (a view when its layout allows) */
static em_tensor *rows_of(const em_tensor *x)
{
    int64_t K = x->sizes[x->ndim - 1], M = 1;
    for (int i = 0; i < x->ndim - 1; i++) M *= x->sizes[i];
    int64_t s[2] = {M, K};
    return em_reshape(x, s, 2);
}

/* ---- backward ---------------------------------------------------------------------------- */

/* the gradients from engine ops (recorded): x2 [M, K], gy2 [M, N] */
static int composed_backward(em_node *n, const em_tensor *x, const em_tensor *w, const em_tensor *b,
                             const em_tensor *gy2, em_tensor **gin)
{
    em_scope s = {0};
    em_tensor *x2 = em_scope_keep(&s, rows_of(x)), *d = (em_tensor *)gy2;
    if (!x2) return -1;
    if (n->op == EM_LINEAR_ACT_GELU_TANH) {
        em_tensor *pre = em_scope_keep(&s, composed(x2, w, b, EM_LINEAR_ACT_NONE));
        em_tensor *g = pre ? em_scope_keep(&s, gelu_tanh_grad(pre)) : NULL;
        d = es_mul(&s, gy2, g);
    }
    int rc = d ? 0 : -1;
    if (rc == 0 && em_ag_wants(n, 0)) {
        em_tensor *g = es_matmul(&s, d, w);
        gin[0] = g ? em_reshape(g, x->sizes, x->ndim) : NULL;
        if (!gin[0]) rc = -1;
    }
    if (rc == 0 && em_ag_wants(n, 1)) {
        em_tensor *dt = em_scope_keep(&s, em_transpose(d, 0, 1));
        gin[1] = dt ? ei_matmul(dt, x2) : NULL;
        if (!gin[1]) rc = -1;
    }
    if (rc == 0 && em_ag_wants(n, 2)) {
        int dim = 0;
        if (!(gin[2] = ei_sum(d, &dim, 1, false))) rc = -1;
    }
    em_scope_drop(&s);
    return rc;
}

static int linear_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *x = em_ag_saved(n, 0), *w = em_ag_saved(n, 1);
    em_tensor *b = n->p.linear.has_bias ? em_ag_saved(n, 2) : NULL;
    bool gelu = n->op == EM_LINEAR_ACT_GELU_TANH;
    em_tensor *aux = gelu ? em_ag_saved(n, 3) : NULL;
    if (!x || !w || (n->p.linear.has_bias && !b) || (gelu && !aux)) return -1;
    int64_t N = w->sizes[0], K = w->sizes[1], M = aux ? aux->sizes[0] : em_numel(x) / K;
    int64_t gs[2] = {M, N};
    em_scope s = {0};
    em_tensor *gy2 = em_scope_keep(&s, em_reshape(gout[0], gs, 2));
    if (gy2 && gy2->dtype != x->dtype) gy2 = em_scope_keep(&s, em_cast_to(gy2, x->dtype));
    if (!gy2) return em_scope_drop(&s), -1;
    if (em_grad_enabled()) {
        int rc = composed_backward(n, x, w, b, gy2, gin);
        em_scope_drop(&s);
        return rc;
    }
    const em_backend *be = em_be(x);
    em_device dev = em_dev(x);
    /* gradients often arrive expanded (stride 0): the kernels take them dense */
    em_tensor *d = em_scope_keep(&s, em_contiguous(gy2));
    if (gelu && d) {
        em_tensor *gyc = d;
        d = em_scope_keep(&s, em_empty(gs, 2, x->dtype, dev));
        if (d && be->linear(EM_LINEAR_DGELU, d, aux, gyc, NULL, NULL)) d = NULL;
    }
    int rc = d ? 0 : -1;
    if (rc == 0 && em_ag_wants(n, 0)) {
        int64_t sz[2] = {M, K};
        em_tensor *g = em_scope_keep(&s, em_empty(sz, 2, x->dtype, dev));
        rc = g ? be->linear(EM_LINEAR_PLAIN, g, NULL, d, w, NULL) : -1;
        gin[0] = rc == 0 ? em_view(g, x->sizes, x->ndim) : NULL;
        if (!gin[0]) rc = -1;
    }
    bool want_b = em_ag_wants(n, 2);
    em_tensor *gb = NULL;
    if (rc == 0 && em_ag_wants(n, 1)) {
        /* the weight's GEMM also sums d's columns into the bias gradient */
        int64_t sz[2] = {N, K};
        if (want_b) gb = em_scope_keep(&s, em_empty(&N, 1, x->dtype, dev));
        em_tensor *x2 = want_b && !gb ? NULL : em_scope_keep(&s, rows_of(x));
        em_tensor *dt = x2 ? em_scope_keep(&s, em_transpose(d, 0, 1)) : NULL;
        em_tensor *g = dt ? em_scope_keep(&s, em_empty(sz, 2, x->dtype, dev)) : NULL;
        rc = g ? be->linear(gb ? EM_LINEAR_BGRAD : EM_LINEAR_PLAIN, g, NULL, dt, x2, gb) : -1;
        gin[1] = rc == 0 ? em_retain(g) : NULL;
    } else if (rc == 0 && want_b) {
        /* no weight gradient wanted: the bias gradient alone, a column sum of d */
        int dim = 0;
        if (!(gb = es_sum(&s, d, &dim, 1, false))) rc = -1;
    }
    if (rc == 0 && gb) gin[2] = em_retain(gb);
    em_scope_drop(&s);
    return rc;
}

/* ---- the op --------------------------------------------------------------------------------- */

/* whether the backend's fused family takes these (else the composed path) */
static bool fused_ok(const em_tensor *x, const em_tensor *w)
{
    int64_t M = 1, N = w->sizes[0], K = w->sizes[1];
    for (int i = 0; i < x->ndim - 1; i++) M *= x->sizes[i];
    return em_be(x)->linear && em_dtype_is_float(x->dtype) && M > 0 && N > 0 && K > 0 && M <= INT32_MAX &&
           N <= INT32_MAX && K <= INT32_MAX;
}

em_tensor *ei_linear(const em_tensor *x, const em_tensor *w, const em_tensor *b, em_linear_act act)
{
    if (check_args(x, w, b, act)) return NULL;
    if (!fused_ok(x, w)) return composed(x, w, b, act);
    bool record = em_ag_needed3(x, w, b);
    bool gelu = act == EM_LINEAR_ACT_GELU_TANH;
    int64_t N = w->sizes[0];
    em_device dev = em_dev(x);
    bool was = em_set_grad_enabled(false);
    em_scope s = {0};
    em_tensor *x2 = em_scope_keep(&s, rows_of(x));
    int64_t sz[2] = {x2 ? x2->sizes[0] : 0, N};
    em_tensor *wt = x2 ? em_scope_keep(&s, em_transpose(w, 0, 1)) : NULL;
    em_tensor *bc = wt && b ? em_scope_keep(&s, em_contiguous(b)) : NULL;
    em_tensor *out = wt && (!b || bc) ? em_scope_keep(&s, em_empty(sz, 2, x->dtype, dev)) : NULL;
    em_tensor *aux = out && gelu && record ? em_scope_keep(&s, em_empty(sz, 2, x->dtype, dev)) : NULL;
    int rc = out && (aux || !gelu || !record) ? 0 : -1;
    if (rc == 0) rc = em_be(x)->linear(gelu ? EM_LINEAR_GELU : EM_LINEAR_PLAIN, out, aux, x2, wt, bc);
    em_set_grad_enabled(was);
    int64_t final[EM_MAX_DIMS];
    memcpy(final, x->sizes, sizeof(int64_t) * (size_t)x->ndim);
    final[x->ndim - 1] = N;
    em_tensor *y = rc == 0 ? em_view(out, final, x->ndim) : NULL;
    if (!y || !record) return em_scope_drop(&s), y;
    em_node *n = em_ag_node(gelu ? "LinearGeluBackward" : "LinearBackward", linear_backward, 3);
    if (!n) { em_scope_drop(&s); em_release(y); return NULL; }
    n->op = act;
    n->p.linear.has_bias = b != NULL;
    em_ag_input(n, 0, x);
    em_ag_input(n, 1, w);
    em_ag_input(n, 2, b);
    if (em_ag_save(n, 0, x, false) || em_ag_save(n, 1, w, false) || (b && em_ag_save(n, 2, b, false)) ||
        (aux && em_ag_save(n, 3, aux, false)))
        y = em_ag_abandon(n, y);
    else
        y = em_ag_output(n, y);
    em_scope_drop(&s);
    return y;
}

em_tensor *em_linear(const em_tensor *x, const em_tensor *w, const em_tensor *b, em_linear_act act)
{
    EM_AUTOCAST(EM_AC_LOWER, ei_linear(EM_AC_ARG(0), EM_AC_ARG(1), EM_AC_ARG(2), act), x, w, b);
    return ei_linear(x, w, b, act);
}
