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
    em_scope s = {0};
    em_tensor *ix = em_scope_keep(&s, index_tensor(op, index));
    if (!ix) return NULL;
    em_tensor *ix1 = em_scope_keep(&s, at_least_1d(ix)), *t1 = em_scope_keep(&s, at_least_1d(t));
    if (!ix1 || !t1) return em_scope_drop(&s), NULL;
    int64_t sizes[EM_MAX_DIMS];
    memcpy(sizes, t1->sizes, sizeof(int64_t) * (size_t)t1->ndim);
    sizes[d] = ix1->sizes[0];
    em_tensor *out = em_scope_keep(&s, em_empty(sizes, t1->ndim, t->dtype, em_dev(t)));
    if (!out || em_be(t)->index(EM_INDEX_SELECT, out, t1, d, ix1)) return em_scope_drop(&s), NULL;
    if (t->ndim == 0 && sizes[0] == 1)   /* a 0-d input gives a 0-d result */
        out = em_scope_keep(&s, em_view(out, no_sizes, 0));
    return em_scope_finish(&s, out);
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
    em_scope s = {0};
    em_tensor *ix = em_scope_keep(&s, index_tensor(op, index));
    if (!ix) return NULL;
    em_tensor *out = em_scope_keep(&s, em_empty(index->sizes, index->ndim, t->dtype, em_dev(t)));
    em_tensor *out1 = out ? em_scope_keep(&s, at_least_1d(out)) : NULL;
    em_tensor *ix1 = em_scope_keep(&s, at_least_1d(ix)), *t1 = em_scope_keep(&s, at_least_1d(t));
    if (!out1 || !ix1 || !t1 || em_be(t)->index(EM_GATHER, out1, t1, d, ix1)) return em_scope_drop(&s), NULL;
    return em_scope_finish(&s, out);
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
    em_scope sc = {0};
    em_tensor *ix = em_scope_keep(&sc, index_tensor(op, index));
    if (!ix) return -1;
    em_tensor *s = em_scope_keep(&sc, source_as(op, t, src));
    if (!s) return em_scope_drop(&sc), -1;
    em_tensor *t1 = em_scope_keep(&sc, at_least_1d(t)), *ix1 = em_scope_keep(&sc, at_least_1d(ix));
    em_tensor *s1 = em_scope_keep(&sc, at_least_1d(s));
    int rc = -1;
    if (t1 && ix1 && s1) {
        rc = em_numel(ix1) == 0 ? 0 : em_be(t)->index(kop, t1, s1, d, ix1);
        em_bump_version(t);
    }
    em_scope_drop(&sc);
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
    em_scope s = {0};
    em_tensor *v = em_scope_keep(&s, em_empty(no_sizes, 0, t->dtype, em_dev(t)));
    if (!v || em_be(t)->fill(v, value)) return em_scope_drop(&s), -1;
    em_tensor *src = em_scope_keep(&s, em_expand(v, index->sizes, index->ndim));
    int rc = src ? scatter_common("scatter", EM_SCATTER, t, dim, index, src) : -1;
    em_scope_drop(&s);
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

em_tensor *ei_scatter_add(const em_tensor *t, int dim, const em_tensor *index, const em_tensor *src)
{
    return scatter_copy(EM_SCATTER_ADD, t, dim, index, src);
}

em_tensor *em_scatter_add(const em_tensor *t, int dim, const em_tensor *index, const em_tensor *src)
{
    EM_AUTOCAST(EM_AC_PROMOTE, ei_scatter_add(EM_AC_ARG(0), dim, index, EM_AC_ARG(1)), t, src);
    return ei_scatter_add(t, dim, index, src);
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
    em_scope sc = {0};
    em_tensor *ix = em_scope_keep(&sc, index_tensor(op, index));
    if (!ix) return -1;
    /* alpha scales the source first, in its own dtype, as PyTorch does */
    bool int_alpha = !em_dtype_is_float(t->dtype);
    const em_tensor *scaled = alpha == 1 ? src
                                         : es_scalar_ex(&sc, EM_MUL, src, alpha, int_alpha, false);
    em_tensor *s = scaled ? em_scope_keep(&sc, source_as(op, t, scaled)) : NULL;
    if (!s) return em_scope_drop(&sc), -1;
    em_tensor *t1 = em_scope_keep(&sc, at_least_1d(t)), *ix1 = em_scope_keep(&sc, at_least_1d(ix));
    em_tensor *s1 = em_scope_keep(&sc, at_least_1d(s));
    int rc = -1;
    if (t1 && ix1 && s1) {
        rc = k == 0 ? 0 : em_be(t)->index(EM_INDEX_ADD, t1, s1, d, ix1);
        em_bump_version(t);
    }
    em_scope_drop(&sc);
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
 * cast to bool, sum into int64 (backend.h: a sum of bool loads it as integers;
 * an int64 copy of the whole tensor first was a third of nonzero's time). */
static int count_nonzero(const em_tensor *t, int64_t *count)
{
    int64_t n = em_numel(t);
    *count = 0;
    if (n == 0) return 0;
    const em_backend *be = em_be(t);
    em_scope sc = {0};
    bool is_bool = t->dtype == EM_BOOL && em_is_contiguous(t);    /* a mask as it is: no copy */
    em_tensor *b = em_scope_keep(&sc, is_bool ? em_retain((em_tensor *)t) : em_empty(t->sizes, t->ndim, EM_BOOL, em_dev(t)));
    em_tensor *s = em_scope_keep(&sc, em_empty(no_sizes, 0, EM_INT64, em_dev(t)));
    em_tensor *flat = b ? em_scope_keep(&sc, em_view(b, &n, 1)) : NULL;
    int rc = -1;
    double v = 0;
    if (s && flat && (is_bool || !be->cast(b, t)) && !be->reduce(EM_RSUM, s, NULL, flat, 1) && !em_item(s, &v)) {
        *count = (int64_t)v;
        rc = 0;
    }
    em_scope_drop(&sc);
    return rc;
}

em_tensor *em_nonzero(const em_tensor *t)
{
    int64_t count;
    if (em_check_not_capturing(em_dev(t), "nonzero", "size its result (the count of non-zero values must come "
                               "back to the host)"))
        return NULL;
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
    if (em_check_not_capturing(em_dev(t), op, "size its result (the count of true mask values must come back to "
                               "the host)"))
        return NULL;
    if (mask->dtype != EM_BOOL)
        return em_set_error("%s: expected a bool mask, got %s", op, em_dtype_name(mask->dtype)), NULL;
    int64_t sizes[EM_MAX_DIMS];
    int nd = em_broadcast_shapes(t->sizes, t->ndim, mask->sizes, mask->ndim, sizes, op);
    if (nd < 0) return NULL;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= sizes[i];
    /* positions of the true elements of the flattened mask are the 1-based
     * indices into the flattened input */
    em_scope s = {0};
    em_tensor *te = em_scope_keep(&s, em_expand(t, sizes, nd)), *me = em_scope_keep(&s, em_expand(mask, sizes, nd));
    em_tensor *tf = te ? em_scope_keep(&s, em_reshape(te, &n, 1)) : NULL;
    em_tensor *mf = me ? em_scope_keep(&s, em_reshape(me, &n, 1)) : NULL;
    em_tensor *nz = mf ? em_scope_keep(&s, em_nonzero(mf)) : NULL, *out = NULL;
    if (nz) {
        int64_t k = nz->sizes[0];
        em_tensor *ix = em_scope_keep(&s, em_view(nz, &k, 1));
        if (ix && tf) out = em_index_select(tf, 0, ix);
    }
    em_scope_drop(&s);
    return out;
}

/* ---- cat / stack ------------------------------------------------------------ */

/* PyTorch skips 1-D empty tensors in cat (a legacy of torch.Tensor()). */
static bool cat_skipped(const em_tensor *t) { return t->ndim == 1 && t->sizes[0] == 0; }

em_tensor *ei_cat(em_tensor *const *ts, int n, int dim)
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

em_tensor *em_cat(em_tensor *const *ts, int n, int dim)
{
    EM_AUTOCAST_LIST(EM_AC_PROMOTE, ei_cat(EM_AC_LIST, n, dim), ts, n);
    return ei_cat(ts, n, dim);
}

em_tensor *ei_stack(em_tensor *const *ts, int n, int dim)
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
    if (made == n) out = ei_cat(u, n, d);
    for (int i = 0; i < made; i++) em_release(u[i]);
    if (u != small) free(u);
    return out;
}

em_tensor *em_stack(em_tensor *const *ts, int n, int dim)
{
    EM_AUTOCAST_LIST(EM_AC_PROMOTE, ei_stack(EM_AC_LIST, n, dim), ts, n);
    return ei_stack(ts, n, dim);
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
    em_scope s = {0};
    em_tensor *v1 = v ? em_scope_keep(&s, at_least_1d(v)) : NULL;
    em_tensor *ix1 = ix ? em_scope_keep(&s, at_least_1d(ix)) : NULL, *t1 = em_scope_keep(&s, at_least_1d(t));
    int rc = -1;
    if (v1 && ix1 && t1) rc = em_be(t)->sort(v1, ix1, t1, d, descending, stable);
    em_scope_drop(&s);
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
    em_scope s = {0};
    em_scope_keep(&s, sv), em_scope_keep(&s, si);
    em_tensor *nv = es_narrow(&s, sv, d, 0, k), *ni = es_narrow(&s, si, d, 0, k);
    /* copies, so the result does not keep the whole sorted tensor alive */
    em_tensor *cv = nv ? em_clone(nv) : NULL, *ci = ni ? em_clone(ni) : NULL;
    em_scope_drop(&s);
    if (!cv || !ci) { em_release(cv); em_release(ci); return -1; }
    *values = cv;
    *indices = ci;
    return 0;
}

/* ---- tril / triu ---------------------------------------------------------------- */

/* The [R, C] bool mask of the positions of t [..., R, C] that tril (upper
 * false) or triu zeroes: column - row > diagonal, or < diagonal. Built from
 * arange on t's device, so the zeroing is an ordinary masked_fill: it works
 * on every backend and for every dtype, and its gradient is the same
 * triangle of the incoming gradient. */
static em_tensor *triangle_outside(const char *op, const em_tensor *t, int64_t diagonal, bool upper)
{
    if (t->ndim < 2)
        return em_set_error("%s: expected a tensor with at least 2 dimensions, got %s", op, SHAPE(t)), NULL;
    int64_t rows = t->sizes[t->ndim - 2], cols = t->sizes[t->ndim - 1];
    /* past +-(rows + cols) a diagonal keeps all or nothing; clamping keeps
     * the comparison value exact in the double the scalar op takes */
    int64_t lim = rows + cols;
    if (diagonal > lim) diagonal = lim;
    if (diagonal < -lim) diagonal = -lim;
    int64_t rs[2] = {rows, 1}, cs[2] = {1, cols};
    em_scope s = {0};
    em_tensor *r = em_scope_keep(&s, em_arange(0, (double)rows, 1, EM_INT64, em_dev(t)));
    em_tensor *c = em_scope_keep(&s, em_arange(0, (double)cols, 1, EM_INT64, em_dev(t)));
    em_tensor *rv = r ? em_scope_keep(&s, em_view(r, rs, 2)) : NULL;
    em_tensor *cv = c ? em_scope_keep(&s, em_view(c, cs, 2)) : NULL;
    /* column > row + diagonal (tril) or < (triu), compared as [1, C] against [R, 1]:
     * the bool mask in one pass (an int64 [R, C] of column - row first was most of
     * tril's time, 3.6x PyTorch's on [1024, 1024]) */
    em_tensor *shifted = rv ? es_scalar_ex(&s, EM_ADD, rv, (double)diagonal, true, false) : NULL;
    em_tensor *mask = cv && shifted ? ei_binary(upper ? EM_LT : EM_GT, cv, shifted) : NULL;
    em_scope_drop(&s);
    return mask;
}

static em_tensor *triangle(const char *op, const em_tensor *t, int64_t diagonal, bool upper)
{
    em_tensor *mask = triangle_outside(op, t, diagonal, upper);
    if (!mask) return NULL;
    em_tensor *out = em_masked_fill(t, mask, 0);
    em_release(mask);
    return out;
}

em_tensor *em_tril(const em_tensor *t, int64_t diagonal) { return triangle("tril", t, diagonal, false); }
em_tensor *em_triu(const em_tensor *t, int64_t diagonal) { return triangle("triu", t, diagonal, true); }

/* ---- multinomial ------------------------------------------------------------------ */

/* Checks the rows of p [N, C] (float64) as PyTorch does and returns the
 * number of positive entries of each row (bool pos [N, C] given), as an
 * int64 tensor [N, 1] on p's device; *any_zero tells whether some row has
 * a zero entry (the counts come to the host for the checks anyway). */
static em_tensor *positive_counts(const em_tensor *p, const em_tensor *pos, int64_t n, bool replacement,
                                  const em_tensor *probs, bool *any_zero)
{
    const char *op = "multinomial";
    /* one test for negative, NaN and inf: every entry in [0, DBL_MAX] */
    em_scope s = {0};
    em_tensor *ge = es_scalar(&s, EM_GE, p, 0);
    em_tensor *le = ge ? es_scalar(&s, EM_LE, p, 1.7976931348623157e308) : NULL;
    em_tensor *ok = es_binary(&s, EM_LOGICAL_AND, ge, le);
    em_tensor *all = ok ? em_scope_keep(&s, em_all(ok, NULL, 0, false)) : NULL;
    double good = 0;
    int rc = all ? em_item(all, &good) : -1;
    em_scope_drop(&s);
    if (rc) return NULL;
    if (good == 0)
        return em_set_error("%s: invalid distribution (probability tensor contains either `inf`, `nan` or "
                            "element < 0), probs %s", op, SHAPE(probs)), NULL;
    int dim = 1;
    em_tensor *count = em_sum_dtype(pos, &dim, 1, true, EM_INT64);
    if (!count) return NULL;
    int64_t rows = p->sizes[0];
    int64_t *host = malloc(sizeof(int64_t) * (size_t)rows);
    if (!host) { em_release(count); return em_set_error("%s: out of memory", op), NULL; }
    rc = em_to_host_i64(count, host);
    *any_zero = false;
    for (int64_t i = 0; rc == 0 && i < rows; i++) {
        if (host[i] < p->sizes[1]) *any_zero = true;
        if (host[i] == 0)
            rc = em_set_error("%s: invalid distribution (sum of probabilities <= 0) in row %lld of probs %s",
                              op, (long long)i + 1, SHAPE(probs));
        else if (!replacement && host[i] < n)
            rc = em_set_error("%s: invalid distribution (with replacement=False, not enough categories with "
                              "non-zero probability to sample %lld: row %lld of probs %s has %lld)", op,
                              (long long)n, (long long)i + 1, SHAPE(probs), (long long)host[i]);
    }
    free(host);
    if (rc) { em_release(count); return NULL; }
    return count;
}

/* The 1-based category of 0-based rank `rank` [N, n] among the positive
 * entries of each row of pos [N, C], in order: a table of the positive
 * categories by rank, made by scattering each positive category to its
 * place (the running count of positives; zero categories all go to a spare
 * last column, which is never read), then a gather. */
static em_tensor *category_of_rank(const em_tensor *pos, const em_tensor *rank)
{
    int64_t rows = pos->sizes[0], cats = pos->sizes[1];
    int64_t table_sizes[2] = {rows, cats + 1}, cs[2] = {1, cats}, es[2] = {rows, cats};
    em_tensor *out = NULL;
    em_scope s = {0};
    em_tensor *pos64 = em_scope_keep(&s, em_cast_to(pos, EM_INT64));
    em_tensor *place = pos64 ? em_scope_keep(&s, ei_cumsum(pos64, 1)) : NULL;
    em_tensor *zero = es_unary(&s, EM_LOGICAL_NOT, pos);
    em_tensor *dest = place && zero ? em_scope_keep(&s, em_masked_fill(place, zero, (double)cats + 1)) : NULL;
    em_tensor *table = em_scope_keep(&s, em_zeros(table_sizes, 2, EM_INT64, em_dev(pos)));
    em_tensor *cat = em_scope_keep(&s, em_arange(1, (double)cats + 1, 1, EM_INT64, em_dev(pos)));
    em_tensor *cat2 = cat ? em_scope_keep(&s, em_view(cat, cs, 2)) : NULL;
    em_tensor *src = cat2 ? em_scope_keep(&s, em_expand(cat2, es, 2)) : NULL;
    em_tensor *first = es_scalar_ex(&s, EM_ADD, rank, 1, true, false);
    if (dest && table && src && first && em_scatter_(table, 1, dest, src) == 0)
        out = em_gather(table, 1, first);
    em_scope_drop(&s);
    return out;
}

/* With replacement: inverse CDF. Each draw x = u * total falls in the
 * bucket [cdf[k-1], cdf[k]) of one category; its 0-based rank among the
 * positive categories is the number of their cdf entries <= x. Those entries
 * are gathered per row in rank order (scattered to their running count of
 * positives; the zero categories' go to a spare last column, and unfilled
 * places hold a value above every x), and a binary search counts them, so a
 * draw costs O(log C), not O(C). Searching over positive categories only
 * keeps the zero ones out even where the scan rounds its sums differently
 * from one entry to the next (the GPU's scan does), and the clamp to
 * count - 1 covers x rounding up to total. Where every weight is positive,
 * rank + 1 is the category. */
static em_tensor *sample_with_replacement(const em_tensor *p, const em_tensor *pos, const em_tensor *count,
                                          int64_t n, bool any_zero)
{
    int64_t rows = p->sizes[0], cats = p->sizes[1];
    int one = 1;
    em_tensor *out = NULL;
    em_scope s = {0};
    /* scaled to a row maximum of 1, so the sums stay finite (at most cats) */
    em_tensor *mx = em_scope_keep(&s, em_amax(p, &one, 1, true));
    em_tensor *q = es_div(&s, p, mx);
    em_tensor *cdf = q ? em_scope_keep(&s, ei_cumsum(q, 1)) : NULL;
    em_tensor *total = es_narrow(&s, cdf, 1, cats - 1, 1);
    /* the positive categories' cdf entries by rank: [rows, cats + 1] */
    em_tensor *pos64 = em_scope_keep(&s, em_cast_to(pos, EM_INT64));
    em_tensor *place = pos64 ? em_scope_keep(&s, ei_cumsum(pos64, 1)) : NULL;
    em_tensor *zero = es_unary(&s, EM_LOGICAL_NOT, pos);
    em_tensor *dest = place && zero ? em_scope_keep(&s, em_masked_fill(place, zero, (double)cats + 1)) : NULL;
    int64_t table_sizes[2] = {rows, cats + 1};
    em_tensor *table = em_scope_keep(&s, em_full(table_sizes, 2, (double)cats + 1, EM_FLOAT64, em_dev(p)));
    int64_t us[2] = {rows, n};
    em_tensor *u = total ? em_scope_keep(&s, em_rand(us, 2, EM_FLOAT64, em_dev(p))) : NULL;
    em_tensor *x = es_mul(&s, u, total);
    if (!cdf || !dest || !table || !x || em_scatter_(table, 1, dest, cdf)) return em_scope_drop(&s), NULL;
    /* searchsorted (right) gives the 1-based place after the entries <= x */
    em_tensor *after = em_scope_keep(&s, em_searchsorted(table, x, true, NULL, false));
    em_tensor *rank = es_scalar_ex(&s, EM_SUB, after, 1, true, false);
    em_tensor *last = rank ? es_scalar_ex(&s, EM_SUB, count, 1, true, false) : NULL;
    em_tensor *clamped = es_binary(&s, EM_MINIMUM, rank, last);
    if (clamped)
        out = any_zero ? category_of_rank(pos, clamped) : ei_binary_scalar(EM_ADD, clamped, 1, true, false);
    em_scope_drop(&s);
    return out;
}

/* Without replacement: the exponential race. With E_k ~ Exp(1), the
 * categories sorted by E_k / p_k come in the order of successive draws
 * without replacement (the first is k with probability p_k / sum p, and the
 * race restarts memorylessly among the rest), so the top n of the key
 * p_k / E_k are the sample. Zero categories get the key -1, below every
 * positive one's (>= 0, +inf when E is 0), and are never among the top n,
 * as every row has at least n positive ones. */
static em_tensor *sample_without_replacement(const em_tensor *p, const em_tensor *pos, int64_t n)
{
    em_scope s = {0};
    em_tensor *u = em_scope_keep(&s, em_rand(p->sizes, 2, EM_FLOAT64, em_dev(p)));
    em_tensor *nu = es_unary(&s, EM_NEG, u);
    em_tensor *l1 = es_unary(&s, EM_LOG1P, nu);
    em_tensor *e = es_unary(&s, EM_NEG, l1);         /* -log(1 - u) >= 0 */
    em_tensor *ratio = es_div(&s, p, e);
    em_tensor *zero = es_unary(&s, EM_LOGICAL_NOT, pos);
    em_tensor *key = ratio && zero ? em_scope_keep(&s, em_masked_fill(ratio, zero, -1)) : NULL;
    em_tensor *values = NULL, *indices = NULL;
    /* one draw is an argmax: no sort of the whole row */
    if (key && n == 1) indices = em_argmax(key, 1, true, false);
    else if (key) {
        em_topk(key, n, 1, true, true, &values, &indices);
        em_scope_keep(&s, values);   /* the sample is the indices */
    }
    em_scope_drop(&s);
    return indices;
}

em_tensor *em_multinomial(const em_tensor *probs, int64_t num_samples, bool replacement)
{
    const char *op = "multinomial";
    if (probs->ndim < 1 || probs->ndim > 2)
        return em_set_error("%s: prob_dist must be 1 or 2 dim, got probs %s", op, SHAPE(probs)), NULL;
    if (!em_dtype_is_float(probs->dtype))
        return em_set_error("%s: only supports floating-point dtypes for probs, got %s %s", op,
                            em_dtype_name(probs->dtype), SHAPE(probs)), NULL;
    if (num_samples <= 0)
        return em_set_error("%s: cannot sample n_sample <= 0 samples (got %lld)", op, (long long)num_samples), NULL;
    int64_t cats = probs->sizes[probs->ndim - 1];
    if (!replacement && num_samples > cats)
        return em_set_error("%s: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                            "(%lld > %lld, probs %s)", op, (long long)num_samples, (long long)cats,
                            SHAPE(probs)), NULL;
    int64_t rows = probs->ndim == 2 ? probs->sizes[0] : 1;
    int64_t out1[1] = {num_samples}, out2[2] = {rows, num_samples}, ps[2] = {rows, cats};
    if (rows == 0) return em_empty(out2, 2, EM_INT64, em_dev(probs));
    /* the result is an index tensor: nothing to record */
    bool grad = em_set_grad_enabled(false);
    em_tensor *out = NULL, *count = NULL;
    em_scope s = {0};
    em_tensor *p64 = em_scope_keep(&s, em_cast_to(probs, EM_FLOAT64));
    em_tensor *p = p64 ? em_scope_keep(&s, em_reshape(p64, ps, 2)) : NULL;
    em_tensor *pos = es_scalar(&s, EM_GT, p, 0);
    bool any_zero = true;
    if (pos) count = em_scope_keep(&s, positive_counts(p, pos, num_samples, replacement, probs, &any_zero));
    if (count)
        out = replacement ? sample_with_replacement(p, pos, count, num_samples, any_zero)
                          : sample_without_replacement(p, pos, num_samples);
    em_scope_drop(&s);
    em_set_grad_enabled(grad);
    if (out && probs->ndim == 1) {
        em_tensor *flat = em_view(out, out1, 1);
        em_release(out);
        out = flat;
    }
    return out;
}

/* ---- scatter_reduce ----------------------------------------------------------------- */

/* The message of a failed scatter/scatter_add renamed after scatter_reduce. */
static void rename_scatter_error(const char *op)
{
    const char *msg = em_error();
    const char *rest = strncmp(msg, "scatter_add:", 12) == 0 ? msg + 12 : strncmp(msg, "scatter:", 8) == 0 ? msg + 8 : NULL;
    if (!rest) return;
    char *copy = strdup(rest);
    if (!copy) return;
    em_set_error("%s:%s", op, copy);
    free(copy);
}

/* x cut down to `sizes` (no larger in any dim): the part of a scatter
 * source that its index reads. */
static em_tensor *narrow_to(const em_tensor *x, const int64_t *sizes, int ndim)
{
    em_tensor *cur = em_retain((em_tensor *)x);
    for (int d = 0; cur && d < ndim && d < x->ndim; d++) {
        if (cur->sizes[d] == sizes[d]) continue;
        em_tensor *next = em_narrow(cur, d, 0, sizes[d]);
        em_release(cur);
        cur = next;
    }
    return cur;
}

/* The bool mask of the positions of t that index names along d. */
static em_tensor *touched_mask(const em_tensor *t, int d, const em_tensor *ix)
{
    em_tensor *m = em_zeros(t->sizes, t->ndim, EM_BOOL, em_dev(t));
    if (m && WITHOUT_GRAD(em_scatter_value_(m, d, ix, 1))) { em_release(m); return NULL; }
    return m;
}

/* How many values reduce into each position of t: 1 for self (where it
 * takes part) plus the sources, never less than 1 (mean's divisor). */
static em_tensor *reduce_count(const em_tensor *t, int d, const em_tensor *ix, bool include_self)
{
    em_dtype dt = em_dtype_is_float(t->dtype) ? t->dtype : EM_INT64;
    em_tensor *count = include_self ? em_ones(t->sizes, t->ndim, dt, em_dev(t))
                                    : em_zeros(t->sizes, t->ndim, dt, em_dev(t));
    em_scope s = {0};
    em_tensor *one = em_scope_keep(&s, em_scalar(1, dt, em_dev(t)));
    em_tensor *ones = one ? em_scope_keep(&s, em_expand(one, ix->sizes, ix->ndim)) : NULL;
    int rc = count && ones ? em_scatter_add_(count, d, ix, ones) : -1;
    if (rc == 0 && !include_self) {   /* what nothing reached keeps its value: a count of 1, not 0 */
        em_tensor *zero = es_scalar_ex(&s, EM_EQ, count, 0, true, false);
        if (!zero || em_masked_fill_(count, zero, 1)) rc = -1;
    }
    em_scope_drop(&s);
    if (rc) { em_release(count); return NULL; }
    return count;
}

/* out (a fresh copy of self) reduced in place, recording off */
static int scatter_reduce_into(em_tensor *out, int d, const em_tensor *ix, const em_tensor *src,
                               em_scatter_reduction r, bool include_self)
{
    const char *op = "scatter_reduce";
    bool was = em_set_grad_enabled(false);
    int rc = 0;
    if (!include_self) {   /* the positions written start from the reduction's identity */
        if (r == EM_SR_AMAX || r == EM_SR_AMIN) rc = scatter_common(op, EM_SCATTER, out, d, ix, src);
        else rc = em_scatter_value_(out, d, ix, r == EM_SR_PROD ? 1 : 0);
    }
    if (!rc) {
        em_index_op kop = r == EM_SR_PROD ? EM_SCATTER_MUL : r == EM_SR_AMAX ? EM_SCATTER_AMAX
                        : r == EM_SR_AMIN ? EM_SCATTER_AMIN : EM_SCATTER_ADD;
        rc = scatter_common(op, kop, out, d, ix, src);
    }
    if (!rc && r == EM_SR_MEAN) {
        em_scope s = {0};
        em_tensor *count = em_scope_keep(&s, reduce_count(out, d, ix, include_self));
        em_tensor *q = es_div(&s, out, count);
        /* integers: floor division, as PyTorch */
        em_tensor *f = q && !em_dtype_is_float(out->dtype) ? es_unary(&s, EM_FLOOR, q) : q;
        rc = f ? em_copy_(out, f) : -1;
        em_scope_drop(&s);
    }
    em_set_grad_enabled(was);
    return rc;
}

static int scatter_reduce_checks(const char *op, const em_tensor *t, int dim, const em_tensor *index,
                                 const em_tensor *src, em_scatter_reduction r)
{
    if ((unsigned)r > EM_SR_AMIN) return em_set_error("%s: unknown reduction %d", op, (int)r);
    if (em_normalize_dim(dim, t->ndim, op) < 0) return -1;
    if (src->dtype != t->dtype)
        return em_set_error("%s: self (%s) and src (%s) must have the same dtype", op, em_dtype_name(t->dtype),
                            em_dtype_name(src->dtype));
    if (r == EM_SR_MEAN && t->dtype == EM_BOOL)
        return em_set_error("%s: reduce=\"mean\" is not defined for bool tensors", op);
    if (index->dtype != EM_INT64)
        return em_set_error("%s: expected an int64 index tensor, got %s", op, em_dtype_name(index->dtype));
    return 0;
}

int em_scatter_reduce_(em_tensor *t, int dim, const em_tensor *index, const em_tensor *src,
                       em_scatter_reduction r, bool include_self)
{
    const char *op = "scatter_reduce_";
    if (scatter_reduce_checks(op, t, dim, index, src, r)) return -1;
    if (em_ag_check_inplace(op, t, src) || em_check_writable(op, t)) return -1;
    int d = em_normalize_dim(dim, t->ndim, op);
    int64_t one = 1;
    em_tensor *t1 = t->ndim ? em_retain(t) : em_view(t, &one, 1);
    int rc = t1 ? scatter_reduce_into(t1, d, index, src, r, include_self) : -1;
    em_release(t1);
    if (!rc) em_bump_version(t);
    else rename_scatter_error(op);
    return rc;
}

/* Gradients of amax / amin (shared evenly among the values equal to the
 * result, as PyTorch) and of prod (the product of the other values, which
 * handles zeros by counting them). Saved: 0 self, 1 src, 2 index, 3 out.
 * Written with recorded ops, so the result is linear in g and recorded; the
 * masks and counts are constants. */
static int scatter_reduce_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *self = em_ag_saved(n, 0), *src = em_ag_saved(n, 1), *ix = em_ag_saved(n, 2), *out = em_ag_saved(n, 3);
    if (!self || !src || !ix || !out) return -1;
    const em_tensor *g = gout[0];
    int d = n->dim;
    bool include_self = n->p.scatter_reduce.include_self;
    em_scope s = {0};
    em_tensor *srcu = em_scope_keep(&s, narrow_to(src, ix->sizes, ix->ndim));   /* the part of src the index reads */
    em_tensor *zero = em_scope_keep(&s, em_scalar(0, g->dtype, em_dev(g)));
    em_tensor *touched = em_scope_keep(&s, touched_mask(self, d, ix));
    em_tensor *gs = NULL, *gx = NULL;   /* the gradient at self's shape, at the index's shape */
    if (!srcu || !zero || !touched) return em_scope_drop(&s), -1;
    if (n->op == EM_SR_AMAX || n->op == EM_SR_AMIN) {
        em_tensor *at = em_scope_keep(&s, WITHOUT_GRAD(em_gather(out, d, ix)));
        em_tensor *self_hit = include_self ? es_binary(&s, EM_EQ, self, out) : es_unary(&s, EM_LOGICAL_NOT, touched);
        em_tensor *src_hit = es_binary(&s, EM_EQ, srcu, at);
        em_tensor *hits = src_hit ? em_scope_keep(&s, em_cast_to(src_hit, g->dtype)) : NULL;
        em_tensor *count = self_hit ? em_scope_keep(&s, em_cast_to(self_hit, g->dtype)) : NULL;
        if (hits && count && WITHOUT_GRAD(em_scatter_add_(count, d, ix, hits)) == 0) {
            em_tensor *share = es_div(&s, g, count);
            em_tensor *at_src = share ? em_scope_keep(&s, em_gather(share, d, ix)) : NULL;
            gs = share ? em_scope_keep(&s, em_where(self_hit, share, zero)) : NULL;
            gx = at_src ? em_scope_keep(&s, em_where(src_hit, at_src, zero)) : NULL;
        }
    } else {   /* prod */
        em_tensor *self_zero = es_scalar(&s, EM_EQ, self, 0);
        em_tensor *src_zero = es_scalar(&s, EM_EQ, srcu, 0);
        em_tensor *one = em_scope_keep(&s, em_scalar(1, g->dtype, em_dev(g)));
        /* the number of zeros and the product of the non-zero values per slot */
        em_tensor *zc = NULL, *nzp = NULL;
        if (self_zero && src_zero && one) {
            em_tensor *sz = em_scope_keep(&s, include_self ? em_cast_to(self_zero, g->dtype)
                                                           : em_zeros(self->sizes, self->ndim, g->dtype, em_dev(g)));
            em_tensor *xz = em_scope_keep(&s, em_cast_to(src_zero, g->dtype));
            if (sz && xz && WITHOUT_GRAD(em_scatter_add_(sz, d, ix, xz)) == 0) zc = sz;
            em_tensor *base = em_scope_keep(&s, include_self ? WITHOUT_GRAD(em_where(self_zero, one, self))
                                                             : em_ones(self->sizes, self->ndim, g->dtype, em_dev(g)));
            em_tensor *sx = em_scope_keep(&s, WITHOUT_GRAD(em_where(src_zero, one, srcu)));
            if (base && sx && scatter_reduce_into(base, d, ix, sx, EM_SR_PROD, true) == 0) nzp = base;
        }
        em_tensor *single = es_scalar(&s, EM_EQ, zc, 1);
        em_tensor *g_out = es_mul(&s, g, out);     /* g * prod, for non-zero values */
        em_tensor *g_nzp = es_mul(&s, g, nzp);     /* g * the others, for the one zero */
        em_tensor *for_zero = single && g_nzp ? em_scope_keep(&s, em_where(single, g_nzp, zero)) : NULL;
        if (g_out && for_zero) {
            em_tensor *qs = es_div(&s, g_out, self);
            em_tensor *s_nz = qs ? em_scope_keep(&s, em_where(self_zero, for_zero, qs)) : NULL;
            gs = s_nz ? (include_self ? s_nz : em_scope_keep(&s, em_where(touched, zero, g))) : NULL;
            em_tensor *go_at = em_scope_keep(&s, em_gather(g_out, d, ix));
            em_tensor *fz_at = em_scope_keep(&s, em_gather(for_zero, d, ix));
            em_tensor *qx = es_div(&s, go_at, srcu);
            gx = qx && fz_at ? em_scope_keep(&s, em_where(src_zero, fz_at, qx)) : NULL;
        }
    }
    if (!gs || !gx) return em_scope_drop(&s), -1;
    if (em_ag_wants(n, 0)) gin[0] = em_retain(gs);
    if (em_ag_wants(n, 1)) gin[1] = em_pad_end_zeros(gx, n->sizes2, n->ndim2);
    em_scope_drop(&s);
    return em_ag_wants(n, 1) && !gin[1] ? -1 : 0;
}

em_tensor *em_scatter_reduce(const em_tensor *t, int dim, const em_tensor *index, const em_tensor *src,
                             em_scatter_reduction r, bool include_self)
{
    const char *op = "scatter_reduce";
    if (scatter_reduce_checks(op, t, dim, index, src, r)) return NULL;
    if (em_check_same_device(op, t, index) || em_check_same_device(op, t, src)) return NULL;
    int d = em_normalize_dim(dim, t->ndim, op);
    bool grad = em_ag_needed2(t, src) && em_dtype_is_float(t->dtype);
    if (grad && (r == EM_SR_SUM || r == EM_SR_MEAN)) {
        /* composed of recorded ops: masked_fill, scatter_add, a divide */
        em_scope sc = {0};
        const em_tensor *base = t;
        if (!include_self) {
            em_tensor *mask = em_scope_keep(&sc, touched_mask(t, d, index));
            base = mask ? em_scope_keep(&sc, em_masked_fill(t, mask, 0)) : NULL;
        }
        em_tensor *s = base ? em_scope_keep(&sc, ei_scatter_add(base, d, index, src)) : NULL, *out = s;
        if (s && r == EM_SR_MEAN) {
            em_tensor *count = em_scope_keep(&sc, WITHOUT_GRAD(reduce_count(t, d, index, include_self)));
            out = es_div(&sc, s, count);
        }
        if (!out) rename_scatter_error(op);
        return em_scope_finish(&sc, out);
    }
    em_tensor *out = WITHOUT_GRAD(em_clone(t));
    if (!out) return NULL;
    int64_t one = 1;
    em_tensor *o1 = t->ndim ? em_retain(out) : em_view(out, &one, 1);
    int rc = o1 ? scatter_reduce_into(o1, d, index, src, r, include_self) : -1;
    em_release(o1);
    if (rc) { rename_scatter_error(op); em_release(out); return NULL; }
    if (!grad) return out;
    em_node *n = em_ag_node(r == EM_SR_PROD ? "ScatterReduceProdBackward" : "ScatterReduceMaxBackward",
                            scatter_reduce_backward, 2);
    if (!n) { em_release(out); return NULL; }
    n->op = r;
    n->dim = t->ndim ? d : 0;
    n->p.scatter_reduce.include_self = include_self;
    n->ndim2 = src->ndim;
    memcpy(n->sizes2, src->sizes, sizeof(int64_t) * (size_t)src->ndim);
    em_ag_input(n, 0, t);
    em_ag_input(n, 1, src);
    if (em_ag_save(n, 0, t, false) || em_ag_save(n, 1, src, false) || em_ag_save(n, 2, index, false) ||
        em_ag_save(n, 3, out, true))
        return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}
