/* grad_linalg.c — the gradient of matmul in all its shapes (mm, bmm, dot and
 * batched matmul with broadcast batch dims are special cases). */
#include "autograd.h"

#include <string.h>

/* 1-D operands are matrices with a size-1 dim, as matmul treats them. */
static em_tensor *as_matrix(const em_tensor *t, bool left)
{
    if (t->ndim != 1) return em_retain((em_tensor *)t);
    return em_unsqueeze(t, left ? 0 : 1);
}

/* x @ y, laid out like `like`: when `like` is the transpose of a contiguous
 * matrix (as a Linear layer's w:t() is), compute (y^T @ x^T)^T so the
 * gradient comes out in the memory order of the tensor it belongs to, and
 * accumulating it needs no transposing copy. */
static em_tensor *product_like(const em_tensor *x, const em_tensor *y, const em_tensor *like)
{
    int nd = like->ndim;
    bool transposed = nd >= 2 && like->strides[nd - 2] == 1 && like->strides[nd - 1] == like->sizes[nd - 2] &&
                      like->sizes[nd - 1] > 1 && like->sizes[nd - 2] > 1;
    if (!transposed) return ei_matmul(x, y);
    em_scope s = {0};
    em_tensor *p = es_matmul(&s, es_mT(&s, y), es_mT(&s, x));
    return em_scope_finish(&s, es_mT(&s, p));
}

/* One operand's gradient: x @ y laid out like its matrix form m (product_like),
 * summed over broadcast batch dims and given the operand's own shape. */
static em_tensor *operand_grad(const em_tensor *x, const em_tensor *y, const em_tensor *m, const em_tensor *operand)
{
    em_scope s = {0};
    em_tensor *p = em_scope_keep(&s, product_like(x, y, m));
    em_tensor *sum = p ? em_scope_keep(&s, em_sum_to(p, m->sizes, m->ndim)) : NULL;
    em_tensor *r = sum ? em_reshape(sum, operand->sizes, operand->ndim) : NULL;
    em_scope_drop(&s);
    return r;
}

/* grad of a for out = a @ b: g @ b^T, summed over broadcast batch dims */
static int matmul_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *a = em_ag_saved(n, 0), *b = em_ag_saved(n, 1);
    if (!a || !b) return -1;
    em_scope s = {0};
    em_tensor *a2 = em_scope_keep(&s, as_matrix(a, true)), *b2 = em_scope_keep(&s, as_matrix(b, false));
    if (!a2 || !b2) return em_scope_drop(&s), -1;
    /* the output gradient with the squeezed 1-D dims put back */
    em_tensor *g = gout[0];
    if (a->ndim == 1 && g)      /* a's row dim sits before b's column dim, if b has one */
        g = em_scope_keep(&s, em_unsqueeze(g, b->ndim == 1 ? g->ndim : g->ndim - 1));
    if (b->ndim == 1 && g) g = em_scope_keep(&s, em_unsqueeze(g, g->ndim));
    int rc = g ? 0 : -1;
    if (rc == 0 && em_ag_wants(n, 0)) {
        em_tensor *bt = es_mT(&s, b2);
        gin[0] = bt ? operand_grad(g, bt, a2, a) : NULL;
        if (!gin[0]) rc = -1;
    }
    if (rc == 0 && em_ag_wants(n, 1)) {
        em_tensor *at = es_mT(&s, a2);
        gin[1] = at ? operand_grad(at, g, b2, b) : NULL;
        if (!gin[1]) rc = -1;
    }
    em_scope_drop(&s);
    return rc;
}

em_tensor *em_ag_matmul(const em_tensor *a, const em_tensor *b)
{
    em_tensor *out = WITHOUT_GRAD(ei_matmul(a, b));
    if (!out || !em_dtype_is_float(out->dtype)) return out;
    em_node *n = em_ag_node("MatmulBackward", matmul_backward, 2);
    if (!n) { em_release(out); return NULL; }
    em_ag_input(n, 0, a);
    em_ag_input(n, 1, b);
    if (em_ag_save(n, 0, a, false) || em_ag_save(n, 1, b, false)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}
