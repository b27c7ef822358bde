/* grad_shape.c — gradients of views, copies and device moves.
 *
 * A view's gradient is the output gradient put back into the input's shape:
 * reshape it back, permute it back, sum out what expand broadcast, or place
 * it inside zeros at the positions the view selected (narrow, select, slice,
 * diagonal, unfold; the last adds overlapping windows). Placing into zeros
 * is linear in the gradient and its own gradient is the view again, so
 * these backwards can be differentiated again (create_graph). */
#include "autograd.h"

#include <stdlib.h>
#include <string.h>

static em_tensor *zeros_of(const em_node *n, const em_tensor *like)
{
    return em_zeros(n->sizes, n->ndim, n->dtype, em_dev(like));
}

/* Replays the view that selected part of the input, on t. */
static em_tensor *replay(const em_node *n, const em_tensor *t)
{
    const int64_t *p = n->strides;   /* parameters are kept in the strides array */
    switch ((em_view_kind)n->op) {
    case EM_VK_NARROW: return em_narrow(t, (int)p[0], p[1], p[2]);
    case EM_VK_SELECT: return em_select(t, (int)p[0], p[1]);
    case EM_VK_SLICE: return em_slice(t, (int)p[0], p[1], p[2], p[3]);
    case EM_VK_DIAGONAL: return em_diagonal(t);
    default: return em_set_error("backward: %s: bad view kind", n->name), NULL;
    }
}

static const char *const embed_names[] = {
    [EM_VK_NARROW] = "NarrowBackwardBackward", [EM_VK_SELECT] = "SelectBackwardBackward",
    [EM_VK_SLICE] = "SliceBackwardBackward", [EM_VK_DIAGONAL] = "DiagonalBackwardBackward",
};

/* The gradient of "g put into zeros at the view's positions" is the view. */
static int embed_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    gin[0] = replay(n, gout[0]);
    return gin[0] ? 0 : -1;
}

/* g put into zeros of the input's shape at the positions the view selected;
 * recorded, as a linear op of its own, when g requires grad (create_graph) */
static em_tensor *embed(const em_node *n, const em_tensor *g)
{
    em_tensor *r = zeros_of(n, g);
    em_tensor *v = r ? replay(n, r) : NULL;
    /* recording off: the copy writes g, which may require grad, in place */
    int rc = v ? WITHOUT_GRAD(em_copy_(v, g)) : -1;
    em_release(v);
    if (rc) { em_release(r); return NULL; }
    if (!em_ag_needed1(g)) return r;
    em_node *m = em_ag_node(embed_names[n->op], embed_backward, 1);
    if (!m) { em_release(r); return NULL; }
    m->op = n->op;
    memcpy(m->strides, n->strides, sizeof m->strides);
    em_ag_input(m, 0, g);
    return em_ag_output(m, r);
}

/* The windows' gradients added back where each window read, at once: g's
 * window dim (last) is moved next to dim and merged with it, so element k of
 * window j lands at j*step + k through one index_add (overlaps add up). */
static em_tensor *unfold_backward(const em_node *n, const em_tensor *g)
{
    int dim = (int)n->strides[0], last = g->ndim - 1;
    int64_t size = n->strides[1], step = n->strides[2], nwin = g->sizes[dim];
    int perm[EM_MAX_DIMS], k = 0;
    for (int i = 0; i <= dim; i++) perm[k++] = i;
    perm[k++] = last;
    for (int i = dim + 1; i < last; i++) perm[k++] = i;
    int64_t merged[EM_MAX_DIMS];
    memcpy(merged, n->sizes, sizeof(int64_t) * (size_t)n->ndim);
    merged[dim] = nwin * size;
    int64_t flat = nwin * size, wk[2] = {nwin, 1};
    em_device dev = em_dev(g);
    em_scope s = {0};
    em_tensor *moved = em_scope_keep(&s, em_permute(g, perm, g->ndim));
    em_tensor *src = moved ? em_scope_keep(&s, em_reshape(moved, merged, n->ndim)) : NULL;
    em_tensor *j = em_scope_keep(&s, em_arange(0, (double)nwin, 1, EM_INT64, dev));       /* window starts */
    em_tensor *js = es_scalar_ex(&s, EM_MUL, j, (double)step, true, false);
    em_tensor *jc = js ? em_scope_keep(&s, em_reshape(js, wk, 2)) : NULL;
    em_tensor *kk = em_scope_keep(&s, em_arange(1, (double)size + 1, 1, EM_INT64, dev));  /* 1-based offsets */
    em_tensor *pos = es_add(&s, jc, kk);
    em_tensor *idx = pos ? em_scope_keep(&s, em_reshape(pos, &flat, 1)) : NULL;
    em_tensor *r = src && idx ? em_ag_add_into_zeros(true, n->sizes, n->ndim, dim, idx, src) : NULL;
    em_scope_drop(&s);
    return r;
}

static int view_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    const em_tensor *g = gout[0];
    em_tensor *r = NULL;
    switch ((em_view_kind)n->op) {
    case EM_VK_RESHAPE:
        r = em_reshape(g, n->sizes, n->ndim);
        break;
    case EM_VK_PERMUTE: {
        int inv[EM_MAX_DIMS];
        for (int i = 0; i < n->ndims; i++) inv[n->dims[i]] = i;
        r = em_permute(g, inv, n->ndims);
        break;
    }
    case EM_VK_EXPAND:
        r = em_sum_to(g, n->sizes, n->ndim);
        break;
    case EM_VK_CLONE:
        r = em_retain((em_tensor *)g);
        break;
    case EM_VK_DEVICE:
        r = em_to_device(g, (em_device){(em_device_type)n->dim, n->ndims});
        break;
    case EM_VK_NARROW: case EM_VK_SELECT: case EM_VK_SLICE: case EM_VK_DIAGONAL: {
        /* another piece of the input (split's, chunk's) already has its
         * gradient there: add g into that part of it, rather than placing
         * g in zeros of the whole shape and adding the whole */
        em_tensor *b = em_ag_writable_buffer(n->next[0].node, n->sizes, n->ndim, g->dtype, em_dev(g));
        if (b && !g->requires_grad && g->dtype == n->dtype) {
            em_tensor *v = replay(n, b);
            int rc = v ? em_binary_(EM_ADD, v, g) : -1;
            em_release(v);
            return rc;        /* gin[0] stays NULL: the gradient is in the buffer */
        }
        r = embed(n, g);
        break;
    }
    case EM_VK_UNFOLD:
        r = unfold_backward(n, g);
        break;
    }
    return (gin[0] = r) ? 0 : -1;
}

static const char *const view_names[] = {
    [EM_VK_RESHAPE] = "ViewBackward", [EM_VK_PERMUTE] = "PermuteBackward", [EM_VK_EXPAND] = "ExpandBackward",
    [EM_VK_NARROW] = "NarrowBackward", [EM_VK_SELECT] = "SelectBackward", [EM_VK_SLICE] = "SliceBackward",
    [EM_VK_DIAGONAL] = "DiagonalBackward", [EM_VK_UNFOLD] = "UnfoldBackward", [EM_VK_CLONE] = "CloneBackward",
    [EM_VK_DEVICE] = "ToCopyBackward",
};

bool em_ag_is_view(const em_tensor *t)
{
    const em_ag_meta *m = t->autograd;
    return m && m->grad_fn && m->grad_fn->apply == view_backward && m->grad_fn->p.view.shares_storage;
}

em_tensor *em_ag_view(em_view_kind kind, const em_tensor *in, em_tensor *out, const int64_t *p, int np)
{
    if (!out || !em_ag_needed1(in) || !em_dtype_is_float(out->dtype)) return out;
    if (out->autograd) {   /* an op that returned its input (e.g. contiguous): already tracked */
        return out;
    }
    em_node *n = em_ag_node(view_names[kind], view_backward, 1);
    if (!n) { em_release(out); return NULL; }
    n->op = kind;
    n->ndim = in->ndim;
    n->dtype = in->dtype;
    n->p.view.shares_storage = out->storage == in->storage;
    memcpy(n->sizes, in->sizes, sizeof(int64_t) * (size_t)in->ndim);
    if (kind == EM_VK_PERMUTE) {
        n->ndims = np;
        for (int i = 0; i < np; i++) n->dims[i] = (int)p[i];
    } else if (kind == EM_VK_DEVICE) {
        n->dim = in->storage->device.type;
        n->ndims = in->storage->device.index;
    } else {
        for (int i = 0; i < np && i < EM_MAX_DIMS; i++) n->strides[i] = p[i];
    }
    em_ag_input(n, 0, in);
    return em_ag_output(n, out);
}
