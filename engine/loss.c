/* loss.c — fused cross-entropy with class-index targets.
 *
 * The backend computes each row's loss and log-sum-exp in one pass
 * (backend.h, cross_entropy); the reduction over rows is composed from
 * ordinary recorded ops, so the node here maps logits [M, C] to row losses
 * [M] and its backward is the backend's fused softmax-minus-target. When the
 * backward itself is recorded (create_graph), the same gradient is composed
 * from softmax and constants instead, so gradients of gradients work. */
#include "autograd.h"

#include <string.h>

typedef struct xent_params {
    int64_t ignore;
    double eps;
} xent_params;

/* The smoothed one-hot target q [M, C] and its row sums Q [M, 1]
 * (see backend.h), built with recording off: neither depends on x. */
static int smoothed_targets(const em_tensor *x, const em_tensor *t, const em_tensor *w, int64_t ignore,
                            double eps, em_tensor **q_out, em_tensor **Q_out)
{
    bool was = em_set_grad_enabled(false);
    int64_t M = x->sizes[0], C = x->sizes[1], col[2] = {M, 1};
    em_device dev = em_dev(x);
    em_scope s = {0};
    em_tensor *ign = es_scalar_ex(&s, EM_EQ, t, (double)ignore, true, false);
    em_tensor *safe = ign ? em_scope_keep(&s, em_masked_fill(t, ign, 1)) : NULL;
    em_tensor *keptf = es_to(&s, es_unary(&s, EM_LOGICAL_NOT, ign), x->dtype);
    em_tensor *wt = !safe ? NULL : em_scope_keep(&s, w ? em_index_select(w, 0, safe) : em_ones(&M, 1, x->dtype, dev));
    em_tensor *hit = es_mul(&s, wt, keptf);          /* w[t_i], 0 if ignored */
    em_tensor *hits = es_scalar(&s, EM_MUL, hit, 1 - eps);
    em_tensor *hitc = hits ? em_scope_keep(&s, em_reshape(hits, col, 2)) : NULL;
    em_tensor *safec = safe ? em_scope_keep(&s, em_reshape(safe, col, 2)) : NULL;
    em_tensor *q = em_zeros(x->sizes, 2, x->dtype, dev);
    int rc = q && hitc && safec ? em_scatter_add_(q, 1, safec, hitc) : -1;
    if (rc == 0 && eps > 0) {          /* + eps/C w_j on the rows kept */
        em_tensor *wrow = w ? es_scalar(&s, EM_MUL, w, eps / (double)C)
                            : em_scope_keep(&s, em_full(&C, 1, eps / (double)C, x->dtype, dev));
        em_tensor *kc = keptf ? em_scope_keep(&s, em_reshape(keptf, col, 2)) : NULL;
        em_tensor *sm = es_mul(&s, kc, wrow);
        rc = sm ? em_binary_(EM_ADD, q, sm) : -1;
    }
    int one = 1;
    em_tensor *Q = rc == 0 ? ei_sum(q, &one, 1, true) : NULL;
    em_scope_drop(&s);
    em_set_grad_enabled(was);
    if (!Q) { em_release(q); return -1; }
    *q_out = q;
    *Q_out = Q;
    return 0;
}

/* g [M] (recorded) times (Q softmax(x) - q): the create_graph path */
static em_tensor *composed_backward(const em_tensor *g, const em_tensor *x, const em_tensor *t,
                                    const em_tensor *w, int64_t ignore, double eps)
{
    em_tensor *q = NULL, *Q = NULL;
    if (smoothed_targets(x, t, w, ignore, eps, &q, &Q)) return NULL;
    int64_t col[2] = {x->sizes[0], 1};
    em_scope s = {0};
    em_scope_keep(&s, q);
    em_scope_keep(&s, Q);
    em_tensor *p = em_scope_keep(&s, ei_softmax(x, 1));
    em_tensor *d = es_sub(&s, es_mul(&s, p, Q), q);
    em_tensor *gc = em_scope_keep(&s, em_reshape(g, col, 2));
    return em_scope_finish(&s, es_mul(&s, d, gc));
}

static int xent_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *x = em_ag_saved(n, 0), *t = em_ag_saved(n, 1), *lse = em_ag_saved(n, 2);
    em_tensor *w = n->p.xent.has_weight ? em_ag_saved(n, 3) : NULL;
    if (!x || !t || !lse || (n->p.xent.has_weight && !w)) return -1;
    int64_t ignore = n->p.xent.ignore_index;
    double eps = n->p.xent.label_smoothing;
    if (em_grad_enabled()) {
        gin[0] = composed_backward(gout[0], x, t, w, ignore, eps);
        return gin[0] ? 0 : -1;
    }
    em_tensor *g = em_to_dtype(gout[0], x->dtype);
    em_tensor *gx = g ? em_empty(x->sizes, 2, x->dtype, em_dev(x)) : NULL;
    int rc = gx ? em_be(x)->cross_entropy_backward(gx, g, x, lse, t, w, ignore, eps) : -1;
    em_release(g);
    if (rc) { em_release(gx); return -1; }
    gin[0] = gx;
    return 0;
}

/* Row losses of x [M, C] (float32/float64) against t [M] (int64): the
 * backend's kernel, recorded as one node. *roww gets the row weights. */
static em_tensor *row_losses(const em_tensor *x, const em_tensor *t, const em_tensor *w, int64_t ignore,
                             double eps, em_tensor **roww)
{
    int64_t M = x->sizes[0];
    em_device dev = em_dev(x);
    em_tensor *loss = em_empty(&M, 1, x->dtype, dev);
    em_tensor *lse = loss ? em_empty(&M, 1, x->dtype, dev) : NULL;
    em_tensor *rw = lse ? em_empty(&M, 1, x->dtype, dev) : NULL;
    if (!rw || em_be(x)->cross_entropy(loss, lse, rw, x, t, w, ignore, eps)) {
        em_release(loss); em_release(lse); em_release(rw);
        return NULL;
    }
    *roww = rw;
    if (em_ag_needed1(x)) {
        em_node *n = em_ag_node("CrossEntropyBackward", xent_backward, 1);
        if (!n) { em_release(lse); em_release(rw); em_release(loss); *roww = NULL; return NULL; }
        n->p.xent.ignore_index = ignore;
        n->p.xent.label_smoothing = eps;
        n->p.xent.has_weight = w != NULL;
        em_ag_input(n, 0, x);
        if (em_ag_save(n, 0, x, false) || em_ag_save(n, 1, t, false) || em_ag_save(n, 2, lse, false) ||
            (w && em_ag_save(n, 3, w, false))) {
            em_release(lse); em_release(rw); *roww = NULL;
            return em_ag_abandon(n, loss);
        }
        loss = em_ag_output(n, loss);
    }
    em_release(lse);
    return loss;
}

em_tensor *ei_cross_entropy(const em_tensor *input, const em_tensor *target, const em_tensor *weight,
                            int64_t ignore_index, double smoothing, em_reduction reduction)
{
    const char *op = "cross_entropy";
    if (em_check_same_device(op, input, target) || (weight && em_check_same_device(op, input, weight)))
        return NULL;
    if (!em_dtype_is_float(input->dtype))
        return em_set_error("%s: input must be floating point (logits), got %s", op, em_dtype_name(input->dtype)), NULL;
    if (input->ndim == 0) return em_set_error("%s: input must have a class dimension, got a 0-d tensor", op), NULL;
    if (em_dtype_is_float(target->dtype) || target->dtype == EM_BOOL)
        return em_set_error("%s: class-index targets must be an integer tensor (int64), got %s", op,
                            em_dtype_name(target->dtype)), NULL;
    if (!(smoothing >= 0 && smoothing <= 1))
        return em_set_error("%s: label_smoothing must be in [0, 1], got %g", op, smoothing), NULL;
    if ((int)reduction < 0 || reduction > EM_REDUCTION_SUM)
        return em_set_error("%s: bad reduction %d", op, (int)reduction), NULL;
    int cdim = input->ndim == 1 ? 0 : 1;
    int64_t C = input->sizes[cdim];
    if (C == 0) return em_set_error("%s: input %s has no classes (dim %d is empty)", op, SHAPE(input), cdim + 1), NULL;
    /* the target's shape is the input's without the class dim */
    bool fits = target->ndim == input->ndim - 1;
    for (int i = 0, k = 0; fits && i < input->ndim; i++)
        if (i != cdim) fits = target->sizes[k++] == input->sizes[i];
    if (!fits)
        return em_set_error("%s: input %s needs class-index targets of the input's shape without dim %d, got %s",
                            op, SHAPE(input), cdim + 1, SHAPE(target)), NULL;
    if (weight && (weight->ndim != 1 || weight->sizes[0] != C || !em_dtype_is_float(weight->dtype)))
        return em_set_error("%s: weight must be a float tensor of shape [%lld] (one per class), got %s %s", op,
                            (long long)C, em_dtype_name(weight->dtype), SHAPE(weight)), NULL;

    /* x: [M, C] with classes last, in float32/float64, built with recorded
     * ops so the gradient flows back through them */
    em_dtype cd = input->dtype == EM_FLOAT64 ? EM_FLOAT64 : EM_FLOAT32;
    em_scope s = {0};
    em_tensor *x = es_to(&s, input, cd);
    if (x && input->ndim > 2) {
        int perm[EM_MAX_DIMS], k = 0;
        perm[k++] = 0;
        for (int i = 2; i < input->ndim; i++) perm[k++] = i;
        perm[k++] = 1;
        x = em_scope_keep(&s, em_permute(x, perm, input->ndim));
    }
    int64_t flat[2] = {-1, C};
    em_tensor *x2 = x ? em_scope_keep(&s, em_reshape(x, flat, 2)) : NULL;
    int64_t m1 = -1;
    em_tensor *t64 = es_to(&s, target, EM_INT64);
    em_tensor *t1 = t64 ? em_scope_keep(&s, em_reshape(t64, &m1, 1)) : NULL;
    em_tensor *w = es_to(&s, weight, cd);
    em_tensor *wd = w ? em_scope_keep(&s, em_detach(w)) : NULL;     /* class weights are constants, as in PyTorch */
    em_tensor *roww = NULL;
    em_tensor *rows = x2 && t1 && (!weight || wd)
                          ? em_scope_keep(&s, row_losses(x2, t1, wd, ignore_index, smoothing, &roww)) : NULL;
    em_scope_keep(&s, roww);
    if (!rows) return em_scope_drop(&s), NULL;

    em_tensor *r;
    if (reduction == EM_REDUCTION_NONE) {
        r = em_scope_keep(&s, em_reshape(rows, target->sizes, target->ndim));
    } else {
        r = es_sum(&s, rows, NULL, 0, false);
        if (r && reduction == EM_REDUCTION_MEAN)   /* 0/0 = NaN when every row is ignored */
            r = es_div(&s, r, es_sum(&s, roww, NULL, 0, false));
    }
    if (r && r->dtype != input->dtype) r = es_to(&s, r, input->dtype);
    return em_scope_finish(&s, r);
}

em_tensor *em_cross_entropy(const em_tensor *input, const em_tensor *target, const em_tensor *weight,
                            int64_t ignore_index, double smoothing, em_reduction reduction)
{
    EM_AUTOCAST(EM_AC_FP32,
                ei_cross_entropy(EM_AC_ARG(0), EM_AC_ARG(1), EM_AC_ARG(2), ignore_index, smoothing, reduction),
                input, target, weight);
    return ei_cross_entropy(input, target, weight, ignore_index, smoothing, reduction);
}
