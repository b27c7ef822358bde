/* index.c — indexing ops: index_select, gather, scatter, index_add,
 * masked_select, nonzero, cat/stack, split/chunk, sort and topk.
 *
 * Index values are 1-based (ember.h); -n..-1 count from the end of the
 * dimension they index, and everything else is an error raised by the
 * backend kernel, which checks every value before using it.
 *
 * A 0-d tensor behaves as a 1-element 1-D tensor here, as in PyTorch, so the
 * kernels only ever see tensors with at least one dimension. */
#include "internal.h"
#include "autograd.h"

#include <stdlib.h>
#include <math.h>
#include <string.h>

/* Index tensors are int64; int32 is accepted through a cast. */
static em_tensor *index_tensor(const char *op, const em_tensor *idx)
{
    if (idx->dtype == EM_INT64) return em_retain((em_tensor *)idx);
    if (idx->dtype == EM_INT32) return em_cast_to(idx, EM_INT64);
    return em_set_error("%s: expected an int64 index tensor, got %s", op, em_dtype_name(idx->dtype)), NULL;
}

/* t itself, or a [1] view of it when t is 0-d. */
static em_tensor *at_least_1d(const em_tensor *t)
{
    if (t->ndim > 0) return em_retain((em_tensor *)t);
    int64_t one = 1;
    return em_view(t, &one, 1);
}

/* The sizes of a 0-d tensor: an empty list, but not NULL (memcpy of zero
 * bytes from NULL is still undefined behaviour). */
static const int64_t no_sizes[1] = {0};

static int ndim1(const em_tensor *t) { return t->ndim > 0 ? t->ndim : 1; }
static int64_t size1(const em_tensor *t, int d) { return t->ndim > 0 ? t->sizes[d] : 1; }

/* src converted to t's dtype, allowed when no information is lost in the
 * sense of type promotion (int into float is fine, float into int is not). */
static em_tensor *source_as(const char *op, const em_tensor *t, const em_tensor *src)
{
    if (src->dtype == t->dtype) return em_retain((em_tensor *)src);
    if (em_promote(t->dtype, src->dtype) != t->dtype)
        return em_set_error("%s: source of dtype %s cannot be written into a tensor of dtype %s",
                            op, em_dtype_name(src->dtype), em_dtype_name(t->dtype)), NULL;
    return em_cast_to(src, t->dtype);
}

/* Releases up to four tensors (NULL allowed). */
static void release4(em_tensor *a, em_tensor *b, em_tensor *c, em_tensor *d)
{
    em_release(a); em_release(b); em_release(c); em_release(d);
}

/* ---- index_select / gather ------------------------------------------------ */

em_tensor *em_index_select(const em_tensor *t, int dim, const em_tensor *index)
{
    const char *op = "index_select";
    if (em_check_same_device(op, t, index)) return NULL;
    if (em_ag_needed1(t)) return em_ag_index_select(t, dim, index);
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return NULL;
    if (index->ndim > 1)
        return em_set_error("%s: expected a 1-D index tensor, got %s", op, SHAPE(index)), NULL;
    em_tensor *ix = index_tensor(op, index);
    if (!ix) return NULL;
    em_tensor *ix1 = at_least_1d(ix), *t1 = at_least_1d(t), *out = NULL;
    if (!ix1 || !t1) goto done;
    int64_t sizes[EM_MAX_DIMS];
    memcpy(sizes, t1->sizes, sizeof(int64_t) * (size_t)t1->ndim);
    sizes[d] = ix1->sizes[0];
    out = em_empty(sizes, t1->ndim, t->dtype, em_dev(t));
    if (!out) goto done;
    if (em_be(t)->index(EM_INDEX_SELECT, out, t1, d, ix1)) { em_release(out); out = NULL; goto done; }
    if (t->ndim == 0 && sizes[0] == 1) {   /* a 0-d input gives a 0-d result */
        em_tensor *s = em_view(out, no_sizes, 0);
        em_release(out);
        out = s;
    }
done:
    release4(ix, ix1, t1, NULL);
    return out;
}

em_tensor *em_gather(const em_tensor *t, int dim, const em_tensor *index)
{
    const char *op = "gather";
    if (em_check_same_device(op, t, index)) return NULL;
    if (em_ag_needed1(t)) return em_ag_gather(t, dim, index);
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return NULL;
    if (ndim1(index) != ndim1(t))
        return em_set_error("%s: index %s and input %s must have the same number of dimensions",
                            op, SHAPE(index), SHAPE(t)), NULL;
    for (int k = 0; k < ndim1(t); k++)
        if (k != d && size1(index, k) > size1(t, k))
            return em_set_error("%s: index %s is larger than input %s in dimension %d (%lld vs %lld)",
                                op, SHAPE(index), SHAPE(t), k + 1, (long long)size1(index, k),
                                (long long)size1(t, k)), NULL;
    em_tensor *ix = index_tensor(op, index);
    if (!ix) return NULL;
    em_tensor *out = em_empty(index->sizes, index->ndim, t->dtype, em_dev(t));
    em_tensor *out1 = out ? at_least_1d(out) : NULL, *ix1 = at_least_1d(ix), *t1 = at_least_1d(t);
    if (!out1 || !ix1 || !t1 || em_be(t)->index(EM_GATHER, out1, t1, d, ix1)) {
        em_release(out);
        out = NULL;
    }
    release4(ix, ix1, t1, out1);
    return out;
}

/* ---- scatter / scatter_add / index_add (in place) -------------------------- */

static int scatter_common(const char *op, em_index_op kop, em_tensor *t, int dim,
                          const em_tensor *index, const em_tensor *src)
{
    if (em_check_same_device(op, t, index) || em_check_same_device(op, t, src)) return -1;
    if (em_ag_check_inplace(op, t, src)) return -1;
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0 || em_check_writable(op, t)) return -1;
    int nd = ndim1(t);
    if (ndim1(index) != nd || ndim1(src) != nd)
        return em_set_error("%s: index %s, self %s and src %s must have the same number of dimensions",
                            op, SHAPE(index), SHAPE(t), SHAPE(src));
    for (int k = 0; k < nd; k++) {
        if (size1(index, k) > size1(src, k) || (k != d && size1(index, k) > size1(t, k)))
            return em_set_error("%s: index %s must be no larger than src %s in every dimension and no larger "
                                "than self %s apart from dimension %d", op, SHAPE(index), SHAPE(src),
                                SHAPE(t), d + 1);
    }
    em_tensor *ix = index_tensor(op, index);
    if (!ix) return -1;
    em_tensor *s = source_as(op, t, src);
    if (!s) { em_release(ix); return -1; }
    em_tensor *t1 = at_least_1d(t), *ix1 = at_least_1d(ix), *s1 = at_least_1d(s);
    int rc = -1;
    if (t1 && ix1 && s1) {
        rc = em_numel(ix1) == 0 ? 0 : em_be(t)->index(kop, t1, s1, d, ix1);
        em_bump_version(t);
    }
    release4(ix, s, t1, ix1);
    em_release(s1);
    return rc;
}

int em_scatter_(em_tensor *t, int dim, const em_tensor *index, const em_tensor *src)
{
    return scatter_common("scatter", EM_SCATTER, t, dim, index, src);
}

int em_scatter_add_(em_tensor *t, int dim, const em_tensor *index, const em_tensor *src)
{
    return scatter_common("scatter_add", EM_SCATTER_ADD, t, dim, index, src);
}

int em_scatter_value_(em_tensor *t, int dim, const em_tensor *index, double value)
{
    if (em_check_value_fits("scatter", value, t->dtype)) return -1;
    /* the value seen as a source of the index's shape (stride 0 everywhere) */
    em_tensor *v = em_empty(no_sizes, 0, t->dtype, em_dev(t));
    if (!v) return -1;
    if (em_be(t)->fill(v, value)) { em_release(v); return -1; }
    em_tensor *src = em_expand(v, index->sizes, index->ndim);
    em_release(v);
    if (!src) return -1;
    int rc = scatter_common("scatter", EM_SCATTER, t, dim, index, src);
    em_release(src);
    return rc;
}

static em_tensor *scatter_copy(em_index_op kop, const em_tensor *t, int dim,
                               const em_tensor *index, const em_tensor *src)
{
    if (em_ag_needed2(t, src)) return em_ag_scatter(kop == EM_SCATTER_ADD, t, dim, index, src);
    em_tensor *c = em_clone(t);
    if (!c) return NULL;
    int rc = kop == EM_SCATTER ? em_scatter_(c, dim, index, src) : em_scatter_add_(c, dim, index, src);
    if (rc) { em_release(c); return NULL; }
    return c;
}

em_tensor *em_scatter(const em_tensor *t, int dim, const em_tensor *index, const em_tensor *src)
{
    return scatter_copy(EM_SCATTER, t, dim, index, src);
}

em_tensor *em_scatter_add(const em_tensor *t, int dim, const em_tensor *index, const em_tensor *src)
{
    return scatter_copy(EM_SCATTER_ADD, t, dim, index, src);
}

int em_index_add_(em_tensor *t, int dim, const em_tensor *index, const em_tensor *src, double alpha)
{
    const char *op = "index_add";
    if (em_check_same_device(op, t, index) || em_check_same_device(op, t, src)) return -1;
    if (em_ag_check_inplace(op, t, src)) return -1;
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0 || em_check_writable(op, t)) return -1;
    if (index->ndim > 1) return em_set_error("%s: expected a 1-D index tensor, got %s", op, SHAPE(index));
    int64_t k = em_numel(index);
    bool ok = ndim1(src) == ndim1(t);
    for (int i = 0; ok && i < ndim1(t); i++)
        ok = size1(src, i) == (i == d ? k : size1(t, i));
    if (!ok)
        return em_set_error("%s: source %s does not match self %s with dimension %d replaced by the "
                            "index length %lld", op, SHAPE(src), SHAPE(t), d + 1, (long long)k);
    if (!em_dtype_is_float(t->dtype) && alpha != floor(alpha))
        return em_set_error("%s: alpha %g must be an integer for a tensor of dtype %s", op, alpha,
                            em_dtype_name(t->dtype));
    if (em_numel(t) == 0 || em_numel(src) == 0) return 0;
    em_tensor *ix = index_tensor(op, index);
    if (!ix) return -1;
    /* alpha scales the source first, in its own dtype, as PyTorch does */
    em_tensor *scaled = alpha == 1 ? em_retain((em_tensor *)src)
                                   : em_binary_scalar(EM_MUL, src, alpha, !em_dtype_is_float(t->dtype), false);
    em_tensor *s = scaled ? source_as(op, t, scaled) : NULL;
    em_release(scaled);
    if (!s) { em_release(ix); return -1; }
    em_tensor *t1 = at_least_1d(t), *ix1 = at_least_1d(ix), *s1 = at_least_1d(s);
    int rc = -1;
    if (t1 && ix1 && s1) {
        rc = k == 0 ? 0 : em_be(t)->index(EM_INDEX_ADD, t1, s1, d, ix1);
        em_bump_version(t);
    }
    release4(ix, s, t1, ix1);
    em_release(s1);
    return rc;
}

em_tensor *em_index_add(const em_tensor *t, int dim, const em_tensor *index, const em_tensor *src, double alpha)
{
    if (em_ag_needed2(t, src)) return em_ag_index_add(t, dim, index, src, alpha);
    em_tensor *c = em_clone(t);
    if (!c) return NULL;
    if (em_index_add_(c, dim, index, src, alpha)) { em_release(c); return NULL; }
    return c;
}

/* ---- nonzero / masked_select --------------------------------------------- */

/* Number of non-zero elements (NaN counts), composed from backend families:
 * cast to bool, to int64, sum. */
static int count_nonzero(const em_tensor *t, int64_t *count)
{
    int64_t n = em_numel(t);
    *count = 0;
    if (n == 0) return 0;
    const em_backend *be = em_be(t);
    em_tensor *b = em_empty(t->sizes, t->ndim, EM_BOOL, em_dev(t));
    em_tensor *i = em_empty(t->sizes, t->ndim, EM_INT64, em_dev(t));
    em_tensor *s = em_empty(no_sizes, 0, EM_INT64, em_dev(t));
    em_tensor *flat = i ? em_view(i, &n, 1) : NULL;
    int rc = -1;
    double v = 0;
    if (b && s && flat && !be->cast(b, t) && !be->cast(i, b) &&
        !be->reduce(EM_RSUM, s, NULL, flat, 1) && !em_item(s, &v)) {
        *count = (int64_t)v;
        rc = 0;
    }
    release4(b, i, s, flat);
    return rc;
}

em_tensor *em_nonzero(const em_tensor *t)
{
    int64_t count;
    if (count_nonzero(t, &count)) return NULL;
    int64_t sizes[2] = {count, t->ndim};
    em_tensor *out = em_empty(sizes, 2, EM_INT64, em_dev(t));
    if (!out) return NULL;
    if (count > 0 && em_be(t)->nonzero(out, t)) { em_release(out); return NULL; }
    return out;
}

em_tensor *em_masked_select(const em_tensor *t, const em_tensor *mask)
{
    const char *op = "masked_select";
    if (em_check_same_device(op, t, mask)) return NULL;
    if (mask->dtype != EM_BOOL)
        return em_set_error("%s: expected a bool mask, got %s", op, em_dtype_name(mask->dtype)), NULL;
    int64_t sizes[EM_MAX_DIMS];
    int nd = em_broadcast_shapes(t->sizes, t->ndim, mask->sizes, mask->ndim, sizes, op);
    if (nd < 0) return NULL;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= sizes[i];
    /* positions of the true elements of the flattened mask are the 1-based
     * indices into the flattened input */
    em_tensor *te = em_expand(t, sizes, nd), *me = em_expand(mask, sizes, nd);
    em_tensor *tf = te ? em_reshape(te, &n, 1) : NULL, *mf = me ? em_reshape(me, &n, 1) : NULL;
    em_tensor *nz = mf ? em_nonzero(mf) : NULL, *out = NULL;
    if (nz) {
        int64_t k = nz->sizes[0];
        em_tensor *ix = em_view(nz, &k, 1);
        if (ix && tf) out = em_index_select(tf, 0, ix);
        em_release(ix);
    }
    release4(te, me, tf, mf);
    em_release(nz);
    return out;
}

/* ---- cat / stack ------------------------------------------------------------ */

/* PyTorch skips 1-D empty tensors in cat (a legacy of torch.Tensor()). */
static bool cat_skipped(const em_tensor *t) { return t->ndim == 1 && t->sizes[0] == 0; }

em_tensor *em_cat(em_tensor *const *ts, int n, int dim)
{
    const char *op = "cat";
    if (n < 1) return em_set_error("%s: expected a non-empty list of tensors", op), NULL;
    if (em_grad_mode)
        for (int i = 0; i < n; i++)
            if (ts[i]->requires_grad) return em_ag_cat(ts, n, dim);
    em_dtype dt = ts[0]->dtype;
    int ref = -1;
    for (int i = 0; i < n; i++) {
        if (em_check_same_device(op, ts[0], ts[i])) return NULL;
        if (ts[i]->ndim == 0)
            return em_set_error("%s: zero-dimensional tensor (at position %d) cannot be concatenated",
                                op, i + 1), NULL;
        if (i > 0) dt = em_promote(dt, ts[i]->dtype);
        if (ref < 0 && !cat_skipped(ts[i])) ref = i;
    }
    if (ref < 0) {   /* only empty tensors */
        if (em_normalize_dim(dim, 1, op) < 0) return NULL;
        int64_t zero = 0;
        return em_empty(&zero, 1, dt, em_dev(ts[0]));
    }
    const em_tensor *r = ts[ref];
    int d = em_normalize_dim(dim, r->ndim, op);
    if (d < 0) return NULL;
    int64_t sizes[EM_MAX_DIMS];
    memcpy(sizes, r->sizes, sizeof(int64_t) * (size_t)r->ndim);
    sizes[d] = 0;
    for (int i = 0; i < n; i++) {
        const em_tensor *t = ts[i];
        if (cat_skipped(t)) continue;
        if (t->ndim != r->ndim)
            return em_set_error("%s: tensors must have the same number of dimensions: got %s at position %d "
                                "and %s at position %d", op, SHAPE(r), ref + 1, SHAPE(t), i + 1), NULL;
        for (int k = 0; k < r->ndim; k++)
            if (k != d && t->sizes[k] != r->sizes[k])
                return em_set_error("%s: sizes must match except in dimension %d: got %s at position %d "
                                    "and %s at position %d (dimension %d: %lld vs %lld)", op, d + 1,
                                    SHAPE(r), ref + 1, SHAPE(t), i + 1, k + 1,
                                    (long long)r->sizes[k], (long long)t->sizes[k]), NULL;
        sizes[d] += t->sizes[d];
    }
    em_tensor *out = em_empty(sizes, r->ndim, dt, em_dev(r));
    if (!out) return NULL;
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        const em_tensor *t = ts[i];
        if (cat_skipped(t) || t->sizes[d] == 0) continue;
        em_tensor *part = em_narrow(out, d, at, t->sizes[d]);
        int rc = part ? em_be(out)->cast(part, t) : -1;
        em_release(part);
        if (rc) { em_release(out); return NULL; }
        at += t->sizes[d];
    }
    return out;
}

em_tensor *em_stack(em_tensor *const *ts, int n, int dim)
{
    const char *op = "stack";
    if (n < 1) return em_set_error("%s: expected a non-empty list of tensors", op), NULL;
    if (n > 1 << 20) return em_set_error("%s: too many tensors (%d)", op, n), NULL;
    const em_tensor *r = ts[0];
    for (int i = 1; i < n; i++) {
        bool same = ts[i]->ndim == r->ndim;
        for (int k = 0; same && k < r->ndim; k++) same = ts[i]->sizes[k] == r->sizes[k];
        if (!same)
            return em_set_error("%s: expected all tensors of one shape, got %s at position 1 and %s at position %d",
                                op, SHAPE(r), SHAPE(ts[i]), i + 1), NULL;
    }
    if (r->ndim >= EM_MAX_DIMS) return em_set_error("%s: tensors already have %d dimensions", op, EM_MAX_DIMS), NULL;
    int d = em_normalize_dim(dim, r->ndim + 1, op);
    if (d < 0) return NULL;
    em_tensor *small[16], **u = n <= 16 ? small : malloc(sizeof(em_tensor *) * (size_t)n);
    if (!u) return em_set_error("%s: out of memory", op), NULL;
    int made = 0;
    em_tensor *out = NULL;
    for (; made < n; made++) {
        u[made] = em_unsqueeze(ts[made], d);
        if (!u[made]) break;
    }
    if (made == n) out = em_cat(u, n, d);
    for (int i = 0; i < made; i++) em_release(u[i]);
    if (u != small) free(u);
    return out;
}

/* ---- split / chunk ----------------------------------------------------------- */

static void release_pieces(em_tensor **out, int n)
{
    for (int i = 0; i < n; i++) { em_release(out[i]); out[i] = NULL; }
}

int em_split(const em_tensor *t, int64_t size, int dim, em_tensor **out, int cap)
{
    const char *op = "split";
    if (t->ndim == 0) return em_set_error("%s: cannot split a 0-d tensor", op);
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return -1;
    int64_t n = t->sizes[d];
    if (size < 0 || (size == 0 && n > 0))
        return em_set_error("%s: split size must be positive, got %lld (dimension %d has size %lld)",
                            op, (long long)size, d + 1, (long long)n);
    int64_t count = n == 0 ? 1 : (n - 1) / size + 1;   /* (n + size - 1) / size overflows for huge sizes */
    if (count > cap)
        return em_set_error("%s: %lld pieces of %s along dimension %d exceed the limit of %d",
                            op, (long long)count, SHAPE(t), d + 1, cap);
    for (int64_t i = 0; i < count; i++) {
        int64_t start = i * size, len = n - start < size ? n - start : size;
        out[i] = em_narrow(t, d, start, len);
        if (!out[i]) { release_pieces(out, (int)i); return -1; }
    }
    return (int)count;
}

int em_split_sizes(const em_tensor *t, const int64_t *sizes, int n, int dim, em_tensor **out)
{
    const char *op = "split";
    if (t->ndim == 0) return em_set_error("%s: cannot split a 0-d tensor", op);
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return -1;
    if (n < 1) return em_set_error("%s: expected at least one split size", op);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0)
            return em_set_error("%s: split sizes must be non-negative, got %s", op, em_sizes_tmp(sizes, n < EM_MAX_DIMS ? n : EM_MAX_DIMS));
        if (sizes[i] > t->sizes[d] - total)
            return em_set_error("%s: split sizes sum to more than dimension %d of %s (size %lld)", op, d + 1,
                                SHAPE(t), (long long)t->sizes[d]);
        total += sizes[i];
    }
    if (total != t->sizes[d])
        return em_set_error("%s: split sizes sum to %lld, but dimension %d of %s has size %lld",
                            op, (long long)total, d + 1, SHAPE(t), (long long)t->sizes[d]);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        out[i] = em_narrow(t, d, at, sizes[i]);
        if (!out[i]) { release_pieces(out, i); return -1; }
        at += sizes[i];
    }
    return n;
}

int em_chunk(const em_tensor *t, int chunks, int dim, em_tensor **out, int cap)
{
    const char *op = "chunk";
    if (t->ndim == 0) return em_set_error("%s: cannot chunk a 0-d tensor", op);
    if (chunks < 1) return em_set_error("%s: number of chunks must be positive, got %d", op, chunks);
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return -1;
    int64_t n = t->sizes[d];
    if (n > 0) return em_split(t, (n + chunks - 1) / chunks, d, out, cap);
    /* an empty dimension gives `chunks` empty pieces, as in PyTorch */
    if (chunks > cap)
        return em_set_error("%s: %d pieces exceed the limit of %d", op, chunks, cap);
    for (int i = 0; i < chunks; i++) {
        out[i] = em_narrow(t, d, 0, 0);
        if (!out[i]) { release_pieces(out, i); return -1; }
    }
    return chunks;
}

/* ---- sort / topk --------------------------------------------------------------- */

int em_sort(const em_tensor *t, int dim, bool descending, bool stable,
            em_tensor **values, em_tensor **indices)
{
    *values = *indices = NULL;
    int d = em_normalize_dim(dim, t->ndim, "sort");
    if (d < 0) return -1;
    em_tensor *v = em_empty(t->sizes, t->ndim, t->dtype, em_dev(t));
    em_tensor *ix = em_empty(t->sizes, t->ndim, EM_INT64, em_dev(t));
    em_tensor *v1 = v ? at_least_1d(v) : NULL, *ix1 = ix ? at_least_1d(ix) : NULL, *t1 = at_least_1d(t);
    int rc = -1;
    if (v1 && ix1 && t1) rc = em_be(t)->sort(v1, ix1, t1, d, descending, stable);
    release4(v1, ix1, t1, NULL);
    if (rc) { em_release(v); em_release(ix); return -1; }
    if (em_ag_needed1(t) && !(v = em_ag_dim_values(t, d, true, ix, v))) { em_release(ix); return -1; }
    *values = v;
    *indices = ix;
    return 0;
}

int em_topk(const em_tensor *t, int64_t k, int dim, bool largest, bool sorted,
            em_tensor **values, em_tensor **indices)
{
    (void)sorted;   /* the result is always sorted */
    *values = *indices = NULL;
    int d = em_normalize_dim(dim, t->ndim, "topk");
    if (d < 0) return -1;
    int64_t n = size1(t, d);
    if (k < 0 || k > n)
        return em_set_error("topk: k (%lld) is out of range for dimension %d of size %lld (%s)",
                            (long long)k, d + 1, (long long)n, SHAPE(t));
    em_tensor *sv, *si;
    if (em_sort(t, d, largest, true, &sv, &si)) return -1;
    if (t->ndim == 0 || k == n) { *values = sv; *indices = si; return 0; }
    em_tensor *nv = em_narrow(sv, d, 0, k), *ni = em_narrow(si, d, 0, k);
    /* copies, so the result does not keep the whole sorted tensor alive */
    em_tensor *cv = nv ? em_clone(nv) : NULL, *ci = ni ? em_clone(ni) : NULL;
    release4(sv, si, nv, ni);
    if (!cv || !ci) { em_release(cv); em_release(ci); return -1; }
    *values = cv;
    *indices = ci;
    return 0;
}
