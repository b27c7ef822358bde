/* grad_index.c — gradients of index_select, gather, scatter, scatter_add and
 * cat: the output's gradient is added back at the positions it was read from,
 * or read back from the positions it was written to.
 *
 * "Add g into zeros at the positions idx names" is how several backwards end
 * (gather, index_select, max/min along a dim, sort, unfold). It is linear in
 * g and recorded as an op of its own (em_ag_add_into_zeros), whose gradient
 * reads the same positions back; so those backwards can be differentiated
 * again, to any order. */
#include "autograd.h"

#include <stdlib.h>
#include <string.h>

enum { SK_SCATTER, SK_SCATTER_ADD, SK_INDEX_ADD };

/* g padded with zeros at the end of every dim to `sizes` (internal.h). Here:
 * scatter reads only the part of src that the index covers, the rest gets no
 * gradient. */
em_tensor *em_pad_end_zeros(const em_tensor *g, const int64_t *sizes, int ndim)
{
    /* a 0-d tensor counts as [1, ...] in scatter, so src and index may differ so */
    int64_t ones[EM_MAX_DIMS];
    for (int d = 0; d < ndim; d++) ones[d] = 1;
    em_tensor *cur = g->ndim == ndim ? em_retain((em_tensor *)g) : em_reshape(g, ones, ndim);
    for (int d = 0; cur && d < ndim; d++) {
        if (cur->sizes[d] == sizes[d]) continue;
        int64_t zs[EM_MAX_DIMS];
        memcpy(zs, cur->sizes, sizeof(int64_t) * (size_t)ndim);
        zs[d] = sizes[d] - cur->sizes[d];
        em_tensor *z = em_zeros(zs, ndim, cur->dtype, em_dev(cur));
        em_tensor *parts[2] = {cur, z};
        em_tensor *next = z ? ei_cat(parts, 2, d) : NULL;
        em_release(z);
        em_release(cur);
        cur = next;
    }
    return cur;
}

/* out = self.scatter(dim, idx, src), self.scatter_add(dim, idx, src) or
 * self.index_add(dim, idx, src, alpha) (self NULL: zeros). Inputs: 0 self (no edge for the zeros of
 * em_ag_add_into_zeros), 1 src. */
static int scatter_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *idx = em_ag_saved(n, 0);
    if (!idx) return -1;
    const em_tensor *g = gout[0];
    if (em_ag_wants(n, 0)) {
        if (n->op == SK_SCATTER) {
            /* the written positions no longer depend on self; masked_fill
             * (not a multiply by 0) keeps an inf or NaN there from leaking */
            em_tensor *mask = em_zeros(g->sizes, g->ndim, EM_BOOL, em_dev(g));
            int rc = mask ? em_scatter_value_(mask, n->dim, idx, 1) : -1;
            gin[0] = rc ? NULL : em_masked_fill(g, mask, 0);
            em_release(mask);
        } else {
            gin[0] = em_retain((em_tensor *)g);
        }
        if (!gin[0]) return -1;
    }
    if (em_ag_wants(n, 1)) {
        em_tensor *r = n->op == SK_INDEX_ADD ? em_index_select(g, n->dim, idx) : em_gather(g, n->dim, idx);
        if (r && n->p.scatter.alpha != 1) {   /* index_add's alpha */
            em_tensor *ra = ei_binary_scalar(EM_MUL, r, n->p.scatter.alpha, false, false);
            em_release(r);
            r = ra;
        }
        if (!r) return -1;
        em_tensor *p = n->op == SK_INDEX_ADD ? em_retain(r) : em_pad_end_zeros(r, n->sizes2, n->ndim2);
        em_release(r);
        if (!p) return -1;
        gin[1] = em_to_dtype(p, n->dtype2);
        em_release(p);
        if (!gin[1]) return -1;
    }
    return 0;
}

static const char *const scatter_names[] = {
    [SK_SCATTER] = "ScatterBackward", [SK_SCATTER_ADD] = "ScatterAddBackward", [SK_INDEX_ADD] = "IndexAddBackward",
};

/* Records out (made with recording off) as the result of a scatter-family op. */
static em_tensor *record_scatter(int kind, const em_tensor *self, int dim, const em_tensor *idx,
                                 const em_tensor *src, double alpha, em_tensor *out)
{
    if (!out || !em_dtype_is_float(out->dtype)) return out;
    em_node *n = em_ag_node(scatter_names[kind], scatter_backward, 2);
    if (!n) { em_release(out); return NULL; }
    n->op = kind;
    n->p.scatter.alpha = alpha;
    n->dim = out->ndim ? (dim < 0 ? dim + out->ndim : dim) : 0;
    n->ndim2 = src->ndim;
    memcpy(n->sizes2, src->sizes, sizeof(int64_t) * (size_t)src->ndim);
    n->dtype2 = src->dtype;
    em_ag_input(n, 0, self);
    em_ag_input(n, 1, src);
    if (em_ag_save(n, 0, idx, false)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

em_tensor *em_ag_scatter(bool add, const em_tensor *self, int dim, const em_tensor *idx, const em_tensor *src)
{
    em_tensor *out = WITHOUT_GRAD(add ? ei_scatter_add(self, dim, idx, src) : em_scatter(self, dim, idx, src));
    return record_scatter(add ? SK_SCATTER_ADD : SK_SCATTER, self, dim, idx, src, 1, out);
}

em_tensor *em_ag_index_add(const em_tensor *self, int dim, const em_tensor *idx, const em_tensor *src, double alpha)
{
    em_tensor *out = WITHOUT_GRAD(em_index_add(self, dim, idx, src, alpha));
    return record_scatter(SK_INDEX_ADD, self, dim, idx, src, alpha, out);
}

em_tensor *em_ag_add_into_zeros(bool index_add, const int64_t *sizes, int ndim, int dim, const em_tensor *idx,
                                const em_tensor *src)
{
    em_tensor *z = em_zeros(sizes, ndim, src->dtype, em_dev(src));
    if (!z) return NULL;
    /* in place on a fresh tensor; recording off, as src may require grad */
    int rc = WITHOUT_GRAD(index_add ? em_index_add_(z, dim, idx, src, 1) : em_scatter_add_(z, dim, idx, src));
    if (rc) { em_release(z); return NULL; }
    if (!em_ag_needed1(src)) return z;
    return record_scatter(index_add ? SK_INDEX_ADD : SK_SCATTER_ADD, NULL, dim, idx, src, 1, z);
}

/* index_select (op 0) and gather (op 1): zeros of the input's shape with the
 * gradient added at the read positions (repeated indices add up) */
static int gather_like_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *idx = em_ag_saved(n, 0);
    if (!idx) return -1;
    gin[0] = em_ag_add_into_zeros(n->op == 0, n->sizes, n->ndim, n->dim, idx, gout[0]);
    return gin[0] ? 0 : -1;
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
    em_tensor *out = WITHOUT_GRAD(ei_cat(ts, n, dim));
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
