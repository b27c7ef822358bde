/* grad_shape.c — gradients of views, copies and device moves.
 *
 * A view's gradient is the output gradient put back into the input's shape:
 * reshape it back, permute it back, sum out what expand broadcast, or place
 * it inside zeros at the positions the view selected (narrow, select, slice,
 * diagonal, unfold; the last adds overlapping windows). */
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
        if (g->requires_grad)
            return em_set_error("backward: %s: gradients of gradients through this view are not supported yet",
                                n->name);
        r = zeros_of(n, g);
        em_tensor *v = r ? replay(n, r) : NULL;
        int rc = v ? em_copy_(v, g) : -1;
        em_release(v);
        if (rc) { em_release(r); return -1; }
        break;
    }
    case EM_VK_UNFOLD: {
        if (g->requires_grad)
            return em_set_error("backward: %s: gradients of gradients through unfold are not supported yet", n->name);
        /* window j of size `size` starts at j*step along dim; the window's
         * elements run along g's last dim */
        int dim = (int)n->strides[0];
        int64_t size = n->strides[1], step = n->strides[2], nwin = g->sizes[dim];
        r = zeros_of(n, g);
        int rc = r ? 0 : -1;
        for (int64_t j = 0; j < nwin && rc == 0; j++) {
            em_tensor *slot = em_narrow(r, dim, j * step, size);
            em_tensor *gj = em_select(g, dim, j);            /* [..., size] with dim removed */
            em_tensor *moved = gj ? em_unsqueeze(gj, dim) : NULL;  /* size-1 at dim, window last */
            em_tensor *w = moved ? em_transpose(moved, dim, moved->ndim - 1) : NULL;
            em_tensor *sq = w ? em_squeeze_dim(w, w->ndim - 1) : NULL;
            rc = slot && sq ? em_binary_(EM_ADD, slot, sq) : -1;
            em_release(slot); em_release(gj); em_release(moved); em_release(w); em_release(sq);
        }
        if (rc) { em_release(r); return -1; }
        break;
    }
    }
    if (!r) return -1;
    gin[0] = r;
    return 0;
}

static const char *const view_names[] = {
    [EM_VK_RESHAPE] = "ViewBackward", [EM_VK_PERMUTE] = "PermuteBackward", [EM_VK_EXPAND] = "ExpandBackward",
    [EM_VK_NARROW] = "NarrowBackward", [EM_VK_SELECT] = "SelectBackward", [EM_VK_SLICE] = "SliceBackward",
    [EM_VK_DIAGONAL] = "DiagonalBackward", [EM_VK_UNFOLD] = "UnfoldBackward", [EM_VK_CLONE] = "CloneBackward",
    [EM_VK_DEVICE] = "ToCopyBackward",
};

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
