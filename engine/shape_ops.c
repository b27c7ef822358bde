/* shape_ops.c — the shape ops: flip, roll, rot90, repeat, tile,
 * repeat_interleave, movedim, unbind, unflatten, diagonal (any two dims),
 * diag, diag_embed, diagflat, trace, meshgrid, cartesian_prod, block_diag,
 * broadcast_tensors / broadcast_to, atleast_Nd.
 *
 * Each is composed from engine ops that record themselves (index_select,
 * narrow, cat, expand, reshape, where, permute), so every backend runs them
 * and autograd needs nothing of its own here; the one exception is the
 * general diagonal, a strided view whose backward is recorded below. Where
 * PyTorch returns a view (movedim, unbind, unflatten, diagonal, broadcast_to,
 * meshgrid) so does ember; the others return new tensors, as in PyTorch. */
#include "internal.h"
#include "autograd.h"

#include <stdlib.h>
#include <string.h>

/* Normalises a list of dims of a tensor of ndim dims into out, refusing
 * repeats (PyTorch's "dim appears multiple times"). */
static int unique_dims(const char *op, const int *dims, int n, int ndim, int *out)
{
    bool seen[EM_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        int d = em_normalize_dim(dims[i], ndim, op);
        if (d < 0) return -1;
        if (seen[d]) return em_set_error("%s: dimension %d appears more than once in the list of dims", op, d + 1);
        seen[d] = true;
        out[i] = d;
    }
    return 0;
}

/* ---- flip / roll / rot90 ------------------------------------------------------ */

em_tensor *em_flip(const em_tensor *t, const int *dims, int ndims)
{
    int ds[EM_MAX_DIMS];
    if (ndims > EM_MAX_DIMS) return em_set_error("flip: %d dims given, at most %d", ndims, EM_MAX_DIMS), NULL;
    if (unique_dims("flip", dims, ndims, t->ndim, ds)) return NULL;
    em_tensor *cur = em_retain((em_tensor *)t);
    bool copied = false;
    for (int i = 0; cur && i < ndims && t->ndim > 0; i++) {
        int64_t n = cur->sizes[ds[i]];
        if (n <= 1) continue;
        /* a reversed gather: index n, n-1, ..., 1 (1-based) */
        em_tensor *idx = em_arange((double)n, 0, -1, EM_INT64, em_dev(t));
        em_tensor *next = idx ? em_index_select(cur, ds[i], idx) : NULL;
        em_release(idx);
        em_release(cur);
        cur = next;
        copied = true;
    }
    if (cur && !copied) {   /* flip always returns a new tensor */
        em_tensor *c = em_clone(cur);
        em_release(cur);
        cur = c;
    }
    return cur;
}

em_tensor *em_fliplr(const em_tensor *t)
{
    if (t->ndim < 2) return em_set_error("fliplr: expected a tensor with at least 2 dimensions, got %s", SHAPE(t)), NULL;
    int d = 1;
    return em_flip(t, &d, 1);
}

em_tensor *em_flipud(const em_tensor *t)
{
    if (t->ndim < 1) return em_set_error("flipud: expected a tensor with at least 1 dimension, got %s", SHAPE(t)), NULL;
    int d = 0;
    return em_flip(t, &d, 1);
}

/* t rolled by shift along dim d: the last `shift` slices come first. */
static em_tensor *roll1(const em_tensor *t, int64_t shift, int d)
{
    int64_t n = t->sizes[d];
    if (n == 0) return em_retain((em_tensor *)t);
    int64_t s = ((shift % n) + n) % n;
    if (s == 0) return em_retain((em_tensor *)t);
    em_scope sc = {0};
    em_tensor *parts[2] = {es_narrow(&sc, t, d, n - s, s), es_narrow(&sc, t, d, 0, n - s)};
    em_tensor *out = parts[0] && parts[1] ? ei_cat(parts, 2, d) : NULL;
    em_scope_drop(&sc);
    return out;
}

em_tensor *em_roll(const em_tensor *t, const int64_t *shifts, int nshifts, const int *dims, int ndims)
{
    const char *op = "roll";
    em_tensor *cur = NULL;
    if (ndims == 0) {   /* the flattened tensor, shape restored */
        if (nshifts != 1)
            return em_set_error("%s: without dims, expected one shift, got %d", op, nshifts), NULL;
        int64_t n = em_numel(t);
        em_scope s = {0};
        em_tensor *flat = em_scope_keep(&s, em_reshape(t, &n, 1));
        em_tensor *r = flat ? em_scope_keep(&s, roll1(flat, shifts[0], 0)) : NULL;
        cur = r ? em_reshape(r, t->sizes, t->ndim) : NULL;
        em_scope_drop(&s);
    } else {
        if (nshifts != ndims)
            return em_set_error("%s: shifts and dims must have the same length, got %d shifts and %d dims", op,
                                nshifts, ndims), NULL;
        int ds[EM_MAX_DIMS];
        if (ndims > EM_MAX_DIMS) return em_set_error("%s: %d dims given, at most %d", op, ndims, EM_MAX_DIMS), NULL;
        for (int i = 0; i < ndims; i++)
            if ((ds[i] = em_normalize_dim(dims[i], t->ndim, op)) < 0) return NULL;
        int64_t one = 1;
        cur = t->ndim == 0 ? em_reshape(t, &one, 1) : em_retain((em_tensor *)t);
        for (int i = 0; cur && i < ndims; i++) {
            em_tensor *next = roll1(cur, shifts[i], ds[i]);
            em_release(cur);
            cur = next;
        }
        if (cur && t->ndim == 0) {
            em_tensor *s = em_reshape(cur, t->sizes, 0);
            em_release(cur);
            cur = s;
        }
    }
    if (cur && cur == t) {   /* every shift a multiple of its size: still a copy */
        em_release(cur);
        cur = em_clone(t);
    } else if (cur && cur->storage == t->storage) {
        em_tensor *c = em_clone(cur);
        em_release(cur);
        cur = c;
    }
    return cur;
}

em_tensor *em_rot90(const em_tensor *t, int64_t k, int d0, int d1)
{
    const char *op = "rot90";
    if (t->ndim < 2) return em_set_error("%s: expected a tensor with at least 2 dimensions, got %s", op, SHAPE(t)), NULL;
    int a = em_normalize_dim(d0, t->ndim, op), b = a < 0 ? -1 : em_normalize_dim(d1, t->ndim, op);
    if (a < 0 || b < 0) return NULL;
    if (a == b) return em_set_error("%s: the two rotation dims must differ, got %d and %d", op, a + 1, b + 1), NULL;
    int64_t r = ((k % 4) + 4) % 4;
    int both[2] = {a, b};
    if (r == 0) return em_clone(t);
    if (r == 2) return em_flip(t, both, 2);
    em_tensor *f = em_flip(t, r == 1 ? &b : &a, 1);
    em_tensor *out = f ? em_transpose(f, a, b) : NULL;
    em_release(f);
    return out;
}

/* ---- repeat / tile / repeat_interleave ------------------------------------------ */

/* x with dim d repeated r times as a block: [.., s, ..] -> [.., r * s, ..] */
static em_tensor *repeat_dim(const em_tensor *x, int d, int64_t r, bool interleave)
{
    int at = interleave ? d + 1 : d;
    em_scope s = {0};
    em_tensor *u = es_unsqueeze(&s, x, at);
    if (!u) return NULL;
    int64_t sizes[EM_MAX_DIMS];
    memcpy(sizes, u->sizes, sizeof(int64_t) * (size_t)u->ndim);
    sizes[at] = r;
    em_tensor *e = em_scope_keep(&s, em_expand(u, sizes, u->ndim));
    em_tensor *out = e ? em_flatten(e, d, d + 1) : NULL;
    em_scope_drop(&s);
    return out;
}

em_tensor *em_repeat(const em_tensor *t, const int64_t *repeats, int n)
{
    const char *op = "repeat";
    if (n < t->ndim)
        return em_set_error("%s: the number of repeats (%d) cannot be smaller than the number of dimensions of %s",
                            op, n, SHAPE(t)), NULL;
    if (n > EM_MAX_DIMS) return em_set_error("%s: %d repeats, at most %d dimensions", op, n, EM_MAX_DIMS), NULL;
    int64_t sizes[EM_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        if (repeats[i] < 0)
            return em_set_error("%s: repeats must be non-negative, got %lld for dimension %d", op,
                                (long long)repeats[i], i + 1), NULL;
        sizes[i] = i < n - t->ndim ? 1 : t->sizes[i - (n - t->ndim)];
    }
    em_tensor *cur = em_reshape(t, sizes, n);
    bool copied = false;
    for (int i = 0; cur && i < n; i++) {
        if (repeats[i] == 1) continue;
        em_tensor *next = repeat_dim(cur, i, repeats[i], false);
        em_release(cur);
        cur = next;
        copied = true;
    }
    if (cur && !copied) {
        em_tensor *c = em_clone(cur);
        em_release(cur);
        cur = c;
    }
    return cur;
}

em_tensor *em_tile(const em_tensor *t, const int64_t *reps, int n)
{
    if (n >= t->ndim) return em_repeat(t, reps, n);
    int64_t full[EM_MAX_DIMS];
    int lead = t->ndim - n;
    for (int i = 0; i < t->ndim; i++) full[i] = i < lead ? 1 : reps[i - lead];
    return em_repeat(t, full, t->ndim);
}

em_tensor *em_repeat_interleave_index(const em_tensor *repeats, int64_t output_size)
{
    const char *op = "repeat_interleave";
    if (repeats->ndim > 1)
        return em_set_error("%s: repeats must be a 0-d or 1-D tensor, got %s", op, SHAPE(repeats)), NULL;
    if (repeats->dtype != EM_INT64 && repeats->dtype != EM_INT32)
        return em_set_error("%s: repeats must be an int64 or int32 tensor, got %s", op,
                            em_dtype_name(repeats->dtype)), NULL;
    int64_t n = em_numel(repeats);
    int64_t *r = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!r) return em_set_error("%s: out of memory", op), NULL;
    if (em_to_host_i64(repeats, r)) { free(r); return NULL; }
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (r[i] < 0) {
            em_set_error("%s: repeats must be non-negative, got %lld at position %lld", op, (long long)r[i],
                         (long long)i + 1);
            free(r);
            return NULL;
        }
        if (__builtin_add_overflow(total, r[i], &total) || total > ((int64_t)1 << 40)) {
            em_set_error("%s: the repeats add up to too many elements", op);
            free(r);
            return NULL;
        }
    }
    if (output_size >= 0 && output_size != total) {
        em_set_error("%s: output_size %lld does not match the sum of the repeats (%lld)", op,
                     (long long)output_size, (long long)total);
        free(r);
        return NULL;
    }
    int64_t *vals = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
    if (!vals) { free(r); return em_set_error("%s: out of memory", op), NULL; }
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < r[i]; j++) vals[k++] = i + 1;
    free(r);
    em_tensor *host = em_from_host(&total, 1, EM_INT64, NULL, vals);
    free(vals);
    if (!host || em_dev(repeats).type == EM_CPU) return host;
    em_tensor *out = em_to_device(host, em_dev(repeats));
    em_release(host);
    return out;
}

em_tensor *em_repeat_interleave(const em_tensor *t, int64_t repeats, const em_tensor *repeats_t, int dim,
                                bool has_dim, int64_t output_size)
{
    const char *op = "repeat_interleave";
    em_scope s = {0};
    em_tensor *x;
    int d = 0;
    if (has_dim) {
        if ((d = em_normalize_dim(dim, t->ndim, op)) < 0) return NULL;
        int64_t one = 1;
        x = em_scope_keep(&s, t->ndim == 0 ? em_reshape(t, &one, 1) : em_retain((em_tensor *)t));
    } else {
        int64_t n = em_numel(t);
        x = em_scope_keep(&s, em_reshape(t, &n, 1));
    }
    if (!x) return NULL;
    em_tensor *out = NULL;
    if (repeats_t && em_numel(repeats_t) == 1 && repeats_t->ndim <= 1) {
        int64_t r;
        if (em_to_host_i64(repeats_t, &r)) return em_scope_drop(&s), NULL;
        repeats_t = NULL;
        repeats = r;
    }
    if (repeats_t) {
        if (em_check_same_device(op, t, repeats_t)) return em_scope_drop(&s), NULL;
        if (repeats_t->ndim != 1 || repeats_t->sizes[0] != x->sizes[d]) {
            em_set_error("%s: repeats %s must have one entry per slice of the input along dimension %d (%lld)",
                         op, SHAPE(repeats_t), d + 1, (long long)x->sizes[d]);
            return em_scope_drop(&s), NULL;
        }
        em_tensor *idx = em_scope_keep(&s, em_repeat_interleave_index(repeats_t, output_size));
        out = idx ? em_index_select(x, d, idx) : NULL;
    } else {
        if (repeats < 0)
            em_set_error("%s: repeats must be non-negative, got %lld", op, (long long)repeats);
        else if (output_size >= 0 && (__int128)output_size != (__int128)repeats * x->sizes[d])
            em_set_error("%s: output_size %lld does not match %lld slices repeated %lld times", op,
                         (long long)output_size, (long long)x->sizes[d], (long long)repeats);
        else
            out = repeat_dim(x, d, repeats, true);
        if (out && out->storage == t->storage) {   /* repeats == 1 on a view: still a copy */
            em_tensor *c = em_clone(out);
            em_release(out);
            out = c;
        }
    }
    em_scope_drop(&s);
    return out;
}

/* ---- movedim / unbind / unflatten -------------------------------------------------- */

em_tensor *em_movedim(const em_tensor *t, const int *src, const int *dst, int n)
{
    const char *op = "movedim";
    int nd = t->ndim, s[EM_MAX_DIMS], d[EM_MAX_DIMS], perm[EM_MAX_DIMS];
    if (n > EM_MAX_DIMS) return em_set_error("%s: %d dims given, at most %d", op, n, EM_MAX_DIMS), NULL;
    if (unique_dims(op, src, n, nd, s) || unique_dims(op, dst, n, nd, d)) return NULL;
    if (nd == 0) return em_ag_view(EM_VK_CLONE, t, em_alias(t), NULL, 0);
    bool used[EM_MAX_DIMS] = {false};
    for (int i = 0; i < nd; i++) perm[i] = -1;
    for (int i = 0; i < n; i++) { perm[d[i]] = s[i]; used[s[i]] = true; }
    int next = 0;
    for (int i = 0; i < nd; i++) {
        if (perm[i] >= 0) continue;
        while (used[next]) next++;
        perm[i] = next++;
    }
    return em_permute(t, perm, nd);
}

int em_unbind(const em_tensor *t, int dim, em_tensor **out, int cap)
{
    const char *op = "unbind";
    if (t->ndim == 0) return em_set_error("%s: cannot unbind a 0-d tensor", op);
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return -1;
    int64_t n = t->sizes[d];
    if (n > cap) return em_set_error("%s: %lld pieces exceed the limit of %d", op, (long long)n, cap);
    for (int64_t i = 0; i < n; i++) {
        out[i] = em_select(t, d, i);
        if (!out[i]) {
            for (int64_t j = 0; j < i; j++) em_release(out[j]);
            return -1;
        }
    }
    return (int)n;
}

em_tensor *em_unflatten(const em_tensor *t, int dim, const int64_t *sizes, int n)
{
    const char *op = "unflatten";
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return NULL;
    if (t->ndim == 0) return em_set_error("%s: cannot unflatten a 0-d tensor", op), NULL;
    if (n < 1) return em_set_error("%s: sizes must be non-empty", op), NULL;
    if (t->ndim - 1 + n > EM_MAX_DIMS)
        return em_set_error("%s: the result would have more than %d dimensions", op, EM_MAX_DIMS), NULL;
    int64_t prod = 1, have = t->sizes[d];
    int infer = -1;
    for (int i = 0; i < n; i++) {
        if (sizes[i] == -1) {
            if (infer >= 0) return em_set_error("%s: only one size can be -1 in %s", op, em_sizes_tmp(sizes, n)), NULL;
            infer = i;
        } else if (sizes[i] < 0) {
            return em_set_error("%s: invalid size %lld in %s", op, (long long)sizes[i], em_sizes_tmp(sizes, n)), NULL;
        } else {
            prod *= sizes[i];
        }
    }
    bool ok = infer >= 0 ? (prod != 0 && have % prod == 0) || (prod == 0 && have == 0) : prod == have;
    if (!ok)
        return em_set_error("%s: sizes %s do not multiply to the size %lld of dimension %d of %s", op,
                            em_sizes_tmp(sizes, n), (long long)have, d + 1, SHAPE(t)), NULL;
    int64_t shape[EM_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < d; i++) shape[k++] = t->sizes[i];
    for (int i = 0; i < n; i++) shape[k++] = sizes[i];
    for (int i = d + 1; i < t->ndim; i++) shape[k++] = t->sizes[i];
    return em_reshape(t, shape, k);
}

/* ---- diagonal family ------------------------------------------------------------------ */

/* x padded with zeros along dim: `before` slices in front, `after` behind. */
static em_tensor *pad_dim(const em_tensor *x, int dim, int64_t before, int64_t after)
{
    em_tensor *parts[3];
    int n = 0;
    int64_t sizes[EM_MAX_DIMS];
    memcpy(sizes, x->sizes, sizeof(int64_t) * (size_t)x->ndim);
    em_scope s = {0};
    if (before > 0) {
        sizes[dim] = before;
        if (!(parts[n++] = em_scope_keep(&s, em_zeros(sizes, x->ndim, x->dtype, em_dev(x))))) return NULL;
    }
    parts[n++] = (em_tensor *)x;
    if (after > 0) {
        sizes[dim] = after;
        if (!(parts[n++] = em_scope_keep(&s, em_zeros(sizes, x->ndim, x->dtype, em_dev(x)))))
            return em_scope_drop(&s), NULL;
    }
    em_tensor *out = n == 1 ? em_retain((em_tensor *)x) : ei_cat(parts, n, dim);
    em_scope_drop(&s);
    return out;
}

/* The length of diagonal `offset` of an R x C matrix. */
static int64_t diag_len(int64_t rows, int64_t cols, int64_t offset)
{
    int64_t n;
    if (offset >= 0) n = offset >= cols ? 0 : (rows < cols - offset ? rows : cols - offset);
    else n = offset <= -rows ? 0 : (rows + offset < cols ? rows + offset : cols);   /* no -offset: INT64_MIN */
    return n > 0 ? n : 0;
}

/* g [..., n] put on diagonal `offset` of zeros [..., rows, cols], whose two
 * last dims then move to d1 and d2 (0-based dims of the ndim-dim result).
 * Made of recorded ops (where, cat, permute): it is diagonal's backward and
 * diag_embed itself, and can be differentiated again. */
static em_tensor *embed_diagonal(const em_tensor *g, int64_t offset, int d1, int d2, int64_t rows, int64_t cols)
{
    int nd = g->ndim + 1;
    int64_t n = g->ndim ? g->sizes[g->ndim - 1] : 1;
    int64_t sizes[EM_MAX_DIMS];
    memcpy(sizes, g->sizes, sizeof(int64_t) * (size_t)g->ndim);
    em_scope s = {0};
    em_tensor *m = NULL;
    if (n == 0 || diag_len(rows, cols, offset) == 0) {
        sizes[nd - 2] = rows;
        sizes[nd - 1] = cols;
        m = em_scope_keep(&s, em_zeros(sizes, nd, g->dtype, em_dev(g)));
    } else {
        sizes[nd - 1] = n;
        em_tensor *u = es_unsqueeze(&s, g, -1);                                 /* [..., n, 1] */
        em_tensor *e = u ? em_scope_keep(&s, em_expand(u, sizes, nd)) : NULL;  /* [..., n, n] */
        em_tensor *eye = em_scope_keep(&s, em_eye(n, n, EM_BOOL, em_dev(g)));
        em_tensor *zero = em_scope_keep(&s, em_scalar(0, g->dtype, em_dev(g)));
        /* where, not a product with the identity: an inf stays off the zeros */
        em_tensor *sq = e && eye && zero ? em_scope_keep(&s, em_where(eye, e, zero)) : NULL;
        int64_t rb = offset < 0 ? -offset : 0, cb = offset > 0 ? offset : 0;
        em_tensor *pr = sq ? em_scope_keep(&s, pad_dim(sq, nd - 2, rb, rows - rb - n)) : NULL;
        m = pr ? em_scope_keep(&s, pad_dim(pr, nd - 1, cb, cols - cb - n)) : NULL;
    }
    if (m && (d1 != nd - 2 || d2 != nd - 1)) {
        int src[2] = {nd - 2, nd - 1}, dst[2] = {d1, d2};
        m = em_scope_keep(&s, em_movedim(m, src, dst, 2));
    }
    return em_scope_finish(&s, m);
}

static int diagonal_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    gin[0] = embed_diagonal(gout[0], n->offset, n->dims[0], n->dims[1], n->sizes[n->dims[0]],
                            n->sizes[n->dims[1]]);
    return gin[0] ? 0 : -1;
}

em_tensor *em_diagonal_ex(const em_tensor *t, int64_t offset, int dim1, int dim2)
{
    const char *op = "diagonal";
    if (t->ndim < 2) return em_set_error("%s: expected a tensor with at least 2 dimensions, got %s", op, SHAPE(t)), NULL;
    int a = em_normalize_dim(dim1, t->ndim, op), b = a < 0 ? -1 : em_normalize_dim(dim2, t->ndim, op);
    if (a < 0 || b < 0) return NULL;
    if (a == b) return em_set_error("%s: dim1 and dim2 cannot be the same dimension (%d)", op, a + 1), NULL;
    int64_t len = diag_len(t->sizes[a], t->sizes[b], offset);
    int64_t start = t->offset;
    if (len > 0) start += offset >= 0 ? offset * t->strides[b] : -offset * t->strides[a];
    int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == a || i == b) continue;
        sizes[k] = t->sizes[i];
        strides[k++] = t->strides[i];
    }
    sizes[k] = len;
    strides[k++] = t->strides[a] + t->strides[b];
    em_tensor *out = em_as_strided(t, sizes, strides, k, start);
    if (!out || !em_ag_needed1(t) || !em_dtype_is_float(t->dtype)) return out;
    em_node *n = em_ag_node("DiagonalBackward", diagonal_backward, 1);
    if (!n) { em_release(out); return NULL; }
    n->offset = offset;
    n->dims[0] = a;
    n->dims[1] = b;
    n->ndim = t->ndim;
    memcpy(n->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    em_ag_input(n, 0, t);
    return em_ag_output(n, out);
}

em_tensor *em_diag_embed(const em_tensor *t, int64_t offset, int dim1, int dim2)
{
    const char *op = "diag_embed";
    if (t->ndim < 1) return em_set_error("%s: expected a tensor with at least 1 dimension, got %s", op, SHAPE(t)), NULL;
    if (t->ndim + 1 > EM_MAX_DIMS) return em_set_error("%s: the result would have too many dimensions", op), NULL;
    int nd = t->ndim + 1;
    int a = em_normalize_dim(dim1, nd, op), b = a < 0 ? -1 : em_normalize_dim(dim2, nd, op);
    if (a < 0 || b < 0) return NULL;
    if (a == b) return em_set_error("%s: dim1 and dim2 cannot be the same dimension (%d)", op, a + 1), NULL;
    int64_t n = t->sizes[t->ndim - 1];
    if (offset > INT64_MAX - n || offset < -(INT64_MAX - n))
        return em_set_error("%s: offset %lld is too large: the matrices would have more than 2^63 rows", op,
                            (long long)offset), NULL;
    int64_t m = n + (offset < 0 ? -offset : offset);
    return embed_diagonal(t, offset, a, b, m, m);
}

em_tensor *em_diag(const em_tensor *t, int64_t diagonal)
{
    if (t->ndim == 1) {
        em_tensor *r = em_diag_embed(t, diagonal, 0, 1);
        if (!r) em_rename_error("diag_embed", "diag");
        return r;
    }
    if (t->ndim != 2) return em_set_error("diag: expected a 1-D or 2-D tensor, got %s", SHAPE(t)), NULL;
    em_tensor *v = em_diagonal_ex(t, diagonal, 0, 1);
    em_tensor *c = v ? em_clone(v) : NULL;
    em_release(v);
    return c;
}

em_tensor *em_diagflat(const em_tensor *t, int64_t offset)
{
    int64_t n = em_numel(t);
    em_tensor *flat = em_reshape(t, &n, 1);
    em_tensor *out = flat ? em_diag_embed(flat, offset, 0, 1) : NULL;
    em_release(flat);
    if (!out) em_rename_error("diag_embed", "diagflat");
    return out;
}

em_tensor *em_trace(const em_tensor *t)
{
    if (t->ndim != 2) return em_set_error("trace: expected a 2-D tensor, got %s", SHAPE(t)), NULL;
    em_tensor *v = em_diagonal_ex(t, 0, 0, 1);
    em_tensor *s = v ? ei_sum(v, NULL, 0, false) : NULL;
    em_release(v);
    return s;
}

/* ---- broadcasting, grids, blocks --------------------------------------------------------- */

em_tensor *em_broadcast_to(const em_tensor *t, const int64_t *sizes, int ndim)
{
    em_tensor *out = em_expand(t, sizes, ndim);
    if (!out) em_rename_error("expand", "broadcast_to");
    return out;
}

int em_broadcast_tensors(em_tensor *const *ts, int n, em_tensor **out)
{
    int64_t shape[EM_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && em_check_same_device("broadcast_tensors", ts[0], ts[i])) return -1;
        int64_t next[EM_MAX_DIMS];
        int k = em_broadcast_shapes(shape, nd, ts[i]->sizes, ts[i]->ndim, next, "broadcast_tensors");
        if (k < 0) return -1;
        memcpy(shape, next, sizeof(int64_t) * (size_t)k);
        nd = k;
    }
    for (int i = 0; i < n; i++) {
        out[i] = em_expand(ts[i], shape, nd);
        if (!out[i]) {
            for (int j = 0; j < i; j++) em_release(out[j]);
            return -1;
        }
    }
    return n;
}

em_tensor *em_atleast(const em_tensor *t, int n)
{
    if (t->ndim >= n) return em_ag_view(EM_VK_CLONE, t, em_alias(t), NULL, 0);
    int64_t sizes[3] = {1, 1, 1};
    if (t->ndim == 1) {
        sizes[1] = t->sizes[0];   /* [n] -> [1, n] or [1, n, 1] */
    } else if (t->ndim == 2) {                 /* n == 3: [a, b] -> [a, b, 1] */
        sizes[0] = t->sizes[0];
        sizes[1] = t->sizes[1];
    }
    return em_reshape(t, sizes, n);
}

int em_meshgrid(em_tensor *const *ts, int n, bool xy, em_tensor **out)
{
    const char *op = "meshgrid";
    if (n < 1) return em_set_error("%s: expected at least one tensor", op);
    if (n > EM_MAX_DIMS) return em_set_error("%s: %d tensors, at most %d", op, n, EM_MAX_DIMS);
    int64_t shape[EM_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        if (ts[i]->ndim > 1)
            return em_set_error("%s: expected 0-d or 1-D tensors, got %s at position %d", op, SHAPE(ts[i]), i + 1);
        if (ts[i]->dtype != ts[0]->dtype)
            return em_set_error("%s: expected tensors of one dtype, got %s and %s", op, em_dtype_name(ts[0]->dtype),
                                em_dtype_name(ts[i]->dtype));
        if (em_check_same_device(op, ts[0], ts[i])) return -1;
        shape[i] = em_numel(ts[i]);
    }
    /* "xy": the first two axes swap places (Cartesian indexing) */
    bool swap = xy && n >= 2;
    if (swap) { int64_t s = shape[0]; shape[0] = shape[1]; shape[1] = s; }
    for (int i = 0; i < n; i++) {
        int at = swap && i < 2 ? 1 - i : i;
        int64_t vs[EM_MAX_DIMS];
        for (int k = 0; k < n; k++) vs[k] = k == at ? shape[at] : 1;
        em_tensor *v = em_reshape(ts[i], vs, n);
        out[i] = v ? em_expand(v, shape, n) : NULL;
        em_release(v);
        if (!out[i]) {
            for (int j = 0; j < i; j++) em_release(out[j]);
            return -1;
        }
    }
    return n;
}

em_tensor *em_cartesian_prod(em_tensor *const *ts, int n)
{
    const char *op = "cartesian_prod";
    if (n < 1) return em_set_error("%s: expected at least one tensor", op), NULL;
    for (int i = 0; i < n; i++)
        if (ts[i]->ndim != 1)
            return em_set_error("%s: expected 1-D tensors, got %s at position %d", op, SHAPE(ts[i]), i + 1), NULL;
    if (n == 1) return em_alias(ts[0]);
    em_tensor *grid[EM_MAX_DIMS], *flat[EM_MAX_DIMS];
    if (em_meshgrid(ts, n, false, grid) < 0) { em_rename_error("meshgrid", op); return NULL; }
    em_scope s = {0};
    for (int i = 0; i < n; i++) em_scope_keep(&s, grid[i]);
    int made = 0;
    for (; made < n; made++) {
        int64_t all = em_numel(grid[made]);
        if (!(flat[made] = em_scope_keep(&s, em_reshape(grid[made], &all, 1)))) break;
    }
    em_tensor *out = made == n ? ei_stack(flat, n, 1) : NULL;
    em_scope_drop(&s);
    return out;
}

em_tensor *em_block_diag(em_tensor *const *ts, int n)
{
    const char *op = "block_diag";
    if (n < 1) return em_set_error("%s: expected at least one tensor", op), NULL;
    em_dtype dt = ts[0]->dtype;
    int64_t rows = 0, cols = 0;
    for (int i = 0; i < n; i++) {
        if (ts[i]->ndim > 2)
            return em_set_error("%s: expected tensors of at most 2 dimensions, got %s at position %d", op,
                                SHAPE(ts[i]), i + 1), NULL;
        if (em_check_same_device(op, ts[0], ts[i])) return NULL;
        dt = em_promote(dt, ts[i]->dtype);
        rows += ts[i]->ndim == 2 ? ts[i]->sizes[0] : 1;
        cols += ts[i]->ndim == 2 ? ts[i]->sizes[1] : ts[i]->ndim == 1 ? ts[i]->sizes[0] : 1;
    }
    em_tensor **strips = calloc((size_t)n, sizeof *strips);
    if (!strips) return em_set_error("%s: out of memory", op), NULL;
    int64_t at = 0;
    int made = 0;
    for (; made < n; made++) {
        const em_tensor *x = ts[made];
        int64_t sz[2] = {x->ndim == 2 ? x->sizes[0] : 1, x->ndim == 2 ? x->sizes[1] : x->ndim == 1 ? x->sizes[0] : 1};
        em_scope s = {0};   /* this strip's temporaries */
        em_tensor *m = em_scope_keep(&s, em_reshape(x, sz, 2));
        em_tensor *c = es_to(&s, m, dt);
        strips[made] = c ? pad_dim(c, 1, at, cols - at - sz[1]) : NULL;
        em_scope_drop(&s);
        if (!strips[made]) break;
        at += sz[1];
    }
    em_tensor *out = made == n ? ei_cat(strips, n, 0) : NULL;
    for (int i = 0; i < made; i++) em_release(strips[i]);
    free(strips);
    (void)rows;
    return out;
}
