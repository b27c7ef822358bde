/* grad_index.c — gradients of index_select, gather and cat: the output's
 * gradient is added back at the positions it was read from. */
#include "autograd.h"

#include <stdlib.h>
#include <string.h>

/* index_select (op 0) and gather (op 1): zeros of the input's shape with the
 * gradient added at the read positions (repeated indices add up) */
static int gather_like_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *idx = em_ag_saved(n, 0);
    if (!idx) return -1;
    if (gout[0]->requires_grad)
        return em_set_error("backward: %s: gradients of gradients are not supported yet", n->name);
    em_tensor *z = em_zeros(n->sizes, n->ndim, gout[0]->dtype, em_dev(gout[0]));
    if (!z) return -1;
    int rc = n->op == 0 ? em_index_add_(z, n->dim, idx, gout[0]) : em_scatter_add_(z, n->dim, idx, gout[0]);
    if (rc) { em_release(z); return -1; }
    gin[0] = z;
    return 0;
}

static em_tensor *record_gather_like(int op, const char *name, const em_tensor *in, int dim, const em_tensor *idx,
                                     em_tensor *out)
{
    if (!out || !em_dtype_is_float(out->dtype)) return out;
    em_node *n = em_ag_node(name, gather_like_backward, 1);
    if (!n) { em_release(out); return NULL; }
    n->op = op;
    n->dim = in->ndim ? (dim < 0 ? dim + in->ndim : dim) : 0;
    n->ndim = in->ndim;
    memcpy(n->sizes, in->sizes, sizeof(int64_t) * (size_t)in->ndim);
    em_ag_input(n, 0, in);
    if (em_ag_save(n, 0, idx, false)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

em_tensor *em_ag_index_select(const em_tensor *in, int dim, const em_tensor *idx)
{
    return record_gather_like(0, "IndexSelectBackward", in, dim, idx, WITHOUT_GRAD(em_index_select(in, dim, idx)));
}

em_tensor *em_ag_gather(const em_tensor *in, int dim, const em_tensor *idx)
{
    return record_gather_like(1, "GatherBackward", in, dim, idx, WITHOUT_GRAD(em_gather(in, dim, idx)));
}

/* cat: each input gets its slice of the gradient, in its own dtype */
static int cat_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    int64_t start = 0;
    for (int i = 0; i < n->nin; i++) {
        int64_t len = n->extra[2 * i];
        em_dtype d = (em_dtype)n->extra[2 * i + 1];
        if (len < 0) continue;           /* a skipped empty input */
        if (em_ag_wants(n, i)) {
            em_tensor *piece = em_narrow(gout[0], n->dim, start, len);
            gin[i] = piece && piece->dtype != d ? em_to_dtype(piece, d) : piece ? em_retain(piece) : NULL;
            em_release(piece);
            if (!gin[i]) return -1;
        }
        start += len;
    }
    return 0;
}

em_tensor *em_ag_cat(em_tensor *const *ts, int n, int dim)
{
    em_tensor *out = WITHOUT_GRAD(em_cat(ts, n, dim));
    if (!out || !em_dtype_is_float(out->dtype)) return out;
    em_node *node = em_ag_node("CatBackward", cat_backward, n);
    if (!node) { em_release(out); return NULL; }
    node->extra = malloc(sizeof(int64_t) * 2 * (size_t)(n ? n : 1));
    if (!node->extra) { em_set_error("out of memory (cat)"); return em_ag_abandon(node, out); }
    node->dim = dim < 0 ? dim + out->ndim : dim;
    for (int i = 0; i < n; i++) {
        /* cat skips 1-D empty tensors; they get no gradient */
        bool skipped = ts[i]->ndim == 1 && ts[i]->sizes[0] == 0 && out->ndim != 1;
        node->extra[2 * i] = skipped ? -1 : ts[i]->sizes[node->dim];
        node->extra[2 * i + 1] = ts[i]->dtype;
        em_ag_input(node, i, skipped ? NULL : ts[i]);
    }
    return em_ag_output(node, out);
}
