/* shape_index.c — the index ops: take, take_along_dim,
 * index_fill, index_copy, masked_scatter, one_hot and scatter_reduce.
 *
 * All but scatter_reduce's prod/amax/amin are compositions of index_select,
 * gather, scatter, scatter_add and masked_fill, which record themselves, so
 * they run on every backend and differentiate for free. Index values are
 * 1-based (ember.h); the kernels underneath check their range, and their
 * errors are renamed after the op the user called. */
#include "internal.h"
#include "autograd.h"

#include <stdlib.h>
#include <string.h>
#include <math.h>

static em_tensor *index_tensor(const char *op, const em_tensor *idx)
{
    if (idx->dtype == EM_INT64) return em_retain((em_tensor *)idx);
    if (idx->dtype == EM_INT32) return em_cast_to(idx, EM_INT64);
    return em_set_error("%s: expected an int64 index tensor, got %s", op, em_dtype_name(idx->dtype)), NULL;
}

static em_tensor *flat(const em_tensor *t)
{
    int64_t n = em_numel(t);
    return em_reshape(t, &n, 1);
}

/* Writes r (computed out of place) into t, as the in-place form of an op. */
static int assign(const char *op, em_tensor *t, em_tensor *r)
{
    if (!r) return -1;
    int rc = WITHOUT_GRAD(em_copy_(t, r));
    em_release(r);
    if (rc) em_rename_error("copy_", op);
    return rc;
}

static int inplace_checks(const char *op, em_tensor *t, const em_tensor *src)
{
    if (em_ag_check_inplace(op, t, src)) return -1;
    return em_check_writable(op, t);
}

/* ---- take / take_along_dim ---------------------------------------------------------- */

em_tensor *em_take(const em_tensor *t, const em_tensor *index)
{
    const char *op = "take";
    if (em_check_same_device(op, t, index)) return NULL;
    em_scope s = {0};
    em_tensor *ix = em_scope_keep(&s, index_tensor(op, index));
    if (!ix) return NULL;
    em_tensor *tf = em_scope_keep(&s, flat(t)), *xf = em_scope_keep(&s, flat(ix));
    em_tensor *r = tf && xf ? em_scope_keep(&s, em_index_select(tf, 0, xf)) : NULL;
    if (!r && tf && xf) em_rename_error("index_select", op);
    em_tensor *out = r ? em_reshape(r, index->sizes, index->ndim) : NULL;
    em_scope_drop(&s);
    return out;
}

em_tensor *em_take_along_dim(const em_tensor *t, const em_tensor *index, int dim, bool has_dim)
{
    const char *op = "take_along_dim";
    if (em_check_same_device(op, t, index)) return NULL;
    em_scope s = {0};
    em_tensor *ix = em_scope_keep(&s, index_tensor(op, index));
    if (!ix) return NULL;
    em_tensor *out = NULL;
    if (!has_dim) {
        em_tensor *tf = em_scope_keep(&s, flat(t)), *xf = em_scope_keep(&s, flat(ix));
        out = tf && xf ? em_gather(tf, 0, xf) : NULL;
        if (!out) em_rename_error("gather", op);
        em_scope_drop(&s);
        return out;
    }
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return em_scope_drop(&s), NULL;
    if (t->ndim != ix->ndim) {
        em_set_error("%s: input %s and indices %s must have the same number of dimensions", op, SHAPE(t), SHAPE(ix));
        return em_scope_drop(&s), NULL;
    }
    if (t->ndim == 0) {
        out = em_gather(t, 0, ix);
        if (!out) em_rename_error("gather", op);
        em_scope_drop(&s);
        return out;
    }
    /* every dim but d broadcasts between the input and the indices */
    int64_t ts[EM_MAX_DIMS], shape[EM_MAX_DIMS];
    memcpy(ts, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    ts[d] = ix->sizes[d];
    int nd = em_broadcast_shapes(ts, t->ndim, ix->sizes, ix->ndim, shape, op);
    em_tensor *xb = nd < 0 ? NULL : em_scope_keep(&s, em_expand(ix, shape, nd)), *tb = NULL;
    if (xb) {
        shape[d] = t->sizes[d];
        tb = em_scope_keep(&s, em_expand(t, shape, nd));
    }
    if (tb) {
        out = em_gather(tb, d, xb);
        if (!out) em_rename_error("gather", op);
    }
    em_scope_drop(&s);
    return out;
}

/* ---- index_fill / index_copy --------------------------------------------------------- */

/* A bool mask broadcastable to t: true at the slots `index` names along dim. */
static em_tensor *slot_mask(const char *op, const em_tensor *t, int d, const em_tensor *index)
{
    if (index->ndim > 1) return em_set_error("%s: expected a 0-d or 1-D index tensor, got %s", op, SHAPE(index)), NULL;
    if (em_check_same_device(op, t, index)) return NULL;
    em_scope s = {0};
    em_tensor *ix = em_scope_keep(&s, index_tensor(op, index));
    if (!ix) return NULL;
    int64_t n = t->ndim ? t->sizes[d] : 1;
    em_tensor *m = em_scope_keep(&s, em_zeros(&n, 1, EM_BOOL, em_dev(t)));
    em_tensor *xf = em_scope_keep(&s, flat(ix));
    int rc = m && xf ? em_scatter_value_(m, 0, xf, 1) : -1;
    if (rc && m && xf) em_rename_error("scatter", op);
    em_tensor *out = NULL;
    if (!rc) {
        int64_t shape[EM_MAX_DIMS];
        for (int i = 0; i < t->ndim; i++) shape[i] = i == d ? n : 1;
        out = em_reshape(m, shape, t->ndim);
    }
    em_scope_drop(&s);
    return out;
}

em_tensor *em_index_fill(const em_tensor *t, int dim, const em_tensor *index, double value)
{
    const char *op = "index_fill";
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return NULL;
    em_tensor *mask = slot_mask(op, t, d, index);
    em_tensor *out = mask ? em_masked_fill(t, mask, value) : NULL;
    if (mask && !out) em_rename_error("masked_fill", op);
    em_release(mask);
    return out;
}

int em_index_fill_(em_tensor *t, int dim, const em_tensor *index, double value)
{
    const char *op = "index_fill_";
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0 || inplace_checks(op, t, t)) return -1;
    em_tensor *mask = slot_mask(op, t, d, index);
    int rc = mask ? em_masked_fill_(t, mask, value) : -1;
    if (mask && rc) em_rename_error("masked_fill_", op);
    em_release(mask);
    return rc;
}

/* index [k] seen as a scatter index of src's shape: it moves along d only. */
static em_tensor *copy_index(const char *op, const em_tensor *t, int d, const em_tensor *index, const em_tensor *src)
{
    if (index->ndim > 1) return em_set_error("%s: expected a 0-d or 1-D index tensor, got %s", op, SHAPE(index)), NULL;
    if (em_check_same_device(op, t, index) || em_check_same_device(op, t, src)) return NULL;
    if (src->dtype != t->dtype)
        return em_set_error("%s: self (%s) and source (%s) must have the same dtype", op, em_dtype_name(t->dtype),
                            em_dtype_name(src->dtype)), NULL;
    int64_t k = em_numel(index);
    bool ok = src->ndim == t->ndim || (t->ndim <= 1 && src->ndim <= 1);
    for (int i = 0; ok && i < t->ndim; i++) ok = (src->ndim ? src->sizes[i] : 1) == (i == d ? k : t->sizes[i]);
    if (!ok)
        return em_set_error("%s: source %s must have the shape of self %s with dimension %d of the index length %lld",
                            op, SHAPE(src), SHAPE(t), d + 1, (long long)k), NULL;
    em_scope s = {0};
    em_tensor *ix = em_scope_keep(&s, index_tensor(op, index));
    if (!ix) return NULL;
    int nd = t->ndim ? t->ndim : 1;
    int64_t shape[EM_MAX_DIMS], full[EM_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        shape[i] = i == d ? k : 1;
        full[i] = i == d ? k : t->sizes[i];
    }
    em_tensor *v = em_scope_keep(&s, em_reshape(ix, shape, nd));
    em_tensor *out = v ? em_expand(v, full, nd) : NULL;
    em_scope_drop(&s);
    return out;
}

em_tensor *em_index_copy(const em_tensor *t, int dim, const em_tensor *index, const em_tensor *src)
{
    const char *op = "index_copy";
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return NULL;
    em_tensor *ix = copy_index(op, t, d, index, src);
    if (!ix) return NULL;
    em_tensor *out = em_scatter(t, d, ix, src);
    if (!out) em_rename_error("scatter", op);
    em_release(ix);
    return out;
}

int em_index_copy_(em_tensor *t, int dim, const em_tensor *index, const em_tensor *src)
{
    const char *op = "index_copy_";
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0 || inplace_checks(op, t, src)) return -1;
    em_tensor *ix = copy_index(op, t, d, index, src);
    if (!ix) return -1;
    int rc = em_scatter_(t, d, ix, src);
    if (rc) em_rename_error("scatter", op);
    em_release(ix);
    return rc;
}

/* ---- masked_scatter ---------------------------------------------------------------------- */

em_tensor *em_masked_scatter(const em_tensor *t, const em_tensor *mask, const em_tensor *src)
{
    const char *op = "masked_scatter";
    if (em_check_same_device(op, t, mask) || em_check_same_device(op, t, src)) return NULL;
    if (mask->dtype != EM_BOOL)
        return em_set_error("%s: expected a bool mask, got %s", op, em_dtype_name(mask->dtype)), NULL;
    if (src->dtype != t->dtype)
        return em_set_error("%s: self (%s) and source (%s) must have the same dtype", op, em_dtype_name(t->dtype),
                            em_dtype_name(src->dtype)), NULL;
    int64_t shape[EM_MAX_DIMS];
    int nd = em_broadcast_shapes(t->sizes, t->ndim, mask->sizes, mask->ndim, shape, op);
    if (nd < 0) return NULL;
    em_scope s = {0};
    em_tensor *te = em_scope_keep(&s, em_expand(t, shape, nd)), *me = em_scope_keep(&s, em_expand(mask, shape, nd));
    em_tensor *tf = te ? em_scope_keep(&s, flat(te)) : NULL, *mf = me ? em_scope_keep(&s, flat(me)) : NULL;
    /* the true positions of the flat mask, in order, take src's first elements */
    em_tensor *nz = mf ? em_scope_keep(&s, em_nonzero(mf)) : NULL, *out = NULL;
    if (nz && tf) {
        int64_t k = nz->sizes[0];
        if (em_numel(src) < k) {
            em_set_error("%s: source %s has fewer elements than the %lld true elements of the mask %s", op,
                         SHAPE(src), (long long)k, SHAPE(mask));
        } else {
            em_tensor *pos = em_scope_keep(&s, em_view(nz, &k, 1)), *sf = em_scope_keep(&s, flat(src));
            em_tensor *sk = es_narrow(&s, sf, 0, 0, k);
            em_tensor *r = pos && sk ? em_scope_keep(&s, em_scatter(tf, 0, pos, sk)) : NULL;
            out = r ? em_reshape(r, shape, nd) : NULL;
        }
    }
    em_scope_drop(&s);
    return out;
}

int em_masked_scatter_(em_tensor *t, const em_tensor *mask, const em_tensor *src)
{
    const char *op = "masked_scatter_";
    if (inplace_checks(op, t, src)) return -1;
    int64_t shape[EM_MAX_DIMS];
    int nd = em_broadcast_shapes(t->sizes, t->ndim, mask->sizes, mask->ndim, shape, op);
    if (nd < 0) return -1;
    if (nd != t->ndim || memcmp(shape, t->sizes, sizeof(int64_t) * (size_t)nd) != 0)
        return em_set_error("%s: mask %s does not broadcast to self %s", op, SHAPE(mask), SHAPE(t));
    em_tensor *r = WITHOUT_GRAD(em_masked_scatter(t, mask, src));
    if (!r) em_rename_error("masked_scatter", op);
    return assign(op, t, r);
}

/* ---- one_hot -------------------------------------------------------------------------------- */

em_tensor *em_one_hot(const em_tensor *t, int64_t num_classes)
{
    const char *op = "one_hot";
    if (t->dtype != EM_INT64)
        return em_set_error("%s: expected an int64 tensor of class values, got %s", op, em_dtype_name(t->dtype)), NULL;
    if (num_classes < -1 || (num_classes == 0 && em_numel(t) > 0))
        return em_set_error("%s: num_classes must be positive or -1 (infer), got %lld", op,
                            (long long)num_classes), NULL;
    if (t->ndim + 1 > EM_MAX_DIMS) return em_set_error("%s: the result would have too many dimensions", op), NULL;
    int64_t lo = 1, hi = 0;
    if (em_numel(t) > 0) {
        em_scope s = {0};
        em_tensor *mn = em_scope_keep(&s, em_amin(t, NULL, 0, false));
        em_tensor *mx = em_scope_keep(&s, em_amax(t, NULL, 0, false));
        int rc = mn && mx ? em_to_host_i64(mn, &lo) | em_to_host_i64(mx, &hi) : -1;
        em_scope_drop(&s);
        if (rc) return NULL;
    } else if (num_classes == -1) {
        return em_set_error("%s: cannot infer the number of classes from an empty tensor %s", op, SHAPE(t)), NULL;
    }
    if (lo < 1)
        return em_set_error("%s: class values must be at least 1 (classes are 1-based), got %lld", op,
                            (long long)lo), NULL;
    if (num_classes == -1) num_classes = hi;
    if (hi > num_classes)
        return em_set_error("%s: class values must be at most num_classes (%lld), got %lld", op,
                            (long long)num_classes, (long long)hi), NULL;
    int64_t sizes[EM_MAX_DIMS];
    memcpy(sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    sizes[t->ndim] = num_classes;
    em_tensor *out = em_zeros(sizes, t->ndim + 1, EM_INT64, em_dev(t));
    em_tensor *ix = em_unsqueeze(t, t->ndim);
    int rc = out && ix ? em_scatter_value_(out, t->ndim, ix, 1) : -1;
    em_release(ix);
    if (rc) { em_release(out); return NULL; }
    return out;
}
