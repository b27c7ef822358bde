/* view.c — operations that return a new view on the same storage, and the
 * ones that fall back to a copy when no view exists (reshape, contiguous). */
#include "internal.h"
#include "autograd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *em_sizes_tmp(const int64_t *sizes, int ndim)
{
    static char bufs[8][160];
    static int next;
    char *b = bufs[next++ & 7];
    return em_sizes_str(sizes, ndim, b, sizeof bufs[0]);
}

const char *em_shape_tmp(const em_tensor *t) { return em_sizes_tmp(t->sizes, t->ndim); }

int em_normalize_dim(int dim, int ndim, const char *op)
{
    int n = ndim > 0 ? ndim : 1;   /* a 0-d tensor accepts dims 0 and -1 */
    if (dim < -n || dim >= n)
        return em_set_error("%s: dimension %d out of range (tensor has %d dimension%s)", op,
                            dim >= 0 ? dim + 1 : dim, ndim, ndim == 1 ? "" : "s");
    return dim < 0 ? dim + n : dim;
}

int em_check_same_device(const char *op, const em_tensor *a, const em_tensor *b)
{
    if (em_device_eq(em_dev(a), em_dev(b))) return 0;
    char da[32], db[32];
    return em_set_error("%s: expected all tensors on one device, got %s and %s", op,
                        em_device_str(em_dev(a), da, sizeof da), em_device_str(em_dev(b), db, sizeof db));
}

/* Whether two elements of t share memory, decided exactly. The usual
 * layouts are settled by the ordering argument: with the dims of size > 1
 * sorted by stride, if each stride exceeds the furthest offset reachable
 * through the smaller ones, every element has its own offset. Only layouts
 * that fail it (unfold with step < size, some as_strided views) are checked
 * element by element, with a bitmap over the span of offsets. */
static int overlap_state(const em_tensor *t)
{
    int64_t st[EM_MAX_DIMS], sz[EM_MAX_DIMS];
    int n = 0;
    if (em_numel(t) == 0) return 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->sizes[i] == 1) continue;
        if (t->strides[i] == 0) return 1;
        int64_t s = t->strides[i] < 0 ? -t->strides[i] : t->strides[i];
        int k = n++;   /* insertion sort by stride */
        while (k > 0 && st[k - 1] > s) { st[k] = st[k - 1]; sz[k] = sz[k - 1]; k--; }
        st[k] = s;
        sz[k] = t->sizes[i];
    }
    int64_t reach = 0;   /* the furthest offset the smaller strides reach */
    bool ordered = true;
    for (int i = 0; i < n && ordered; i++) {
        ordered = st[i] > reach;
        reach += st[i] * (sz[i] - 1);
    }
    if (ordered) return 0;
    /* the span is bounded by the storage the view lies in */
    if (reach > ((int64_t)1 << 27)) return 2;
    uint64_t *seen = calloc((size_t)(reach / 64 + 1), sizeof *seen);
    if (!seen) return 2;
    int64_t idx[EM_MAX_DIMS] = {0}, off = 0;
    int rc = 0;
    for (;;) {
        if (seen[off / 64] >> (off % 64) & 1) { rc = 1; break; }
        seen[off / 64] |= (uint64_t)1 << (off % 64);
        int d = 0;
        while (d < n && ++idx[d] == sz[d]) { off -= st[d] * (sz[d] - 1); idx[d++] = 0; }
        if (d == n) break;
        off += st[d];
    }
    free(seen);
    return rc;
}

int em_check_writable(const char *op, const em_tensor *t)
{
    int state = overlap_state(t);
    if (state == 0) return 0;
    char strides[160];
    em_sizes_str(t->strides, t->ndim, strides, sizeof strides);
    return em_set_error("%s: cannot write in place to %s (strides %s): %s; clone() it first", op, SHAPE(t),
                        strides, state == 1 ? "more than one element refers to the same memory location "
                                              "(an expanded or overlapping view, e.g. from expand or unfold)"
                                            : "its elements may share memory locations");
}

/* A shape no view may exceed: the product of its sizes (zeros counted as
 * ones, since an empty tensor's other dims still give strides) at most
 * 2^60, so element counts and byte offsets cannot overflow int64. */
int em_check_shape(const char *op, const int64_t *sizes, int ndim)
{
    int64_t span = 1;
    for (int i = 0; i < ndim; i++) {
        if (sizes[i] < 0) return em_set_error("%s: negative size in %s", op, em_sizes_tmp(sizes, ndim));
        int64_t s = sizes[i] ? sizes[i] : 1;
        if (span > ((int64_t)1 << 60) / s)
            return em_set_error("%s: size %s is too large (more than 2^60 elements)", op, em_sizes_tmp(sizes, ndim));
        span *= s;
    }
    return 0;
}

em_tensor *em_as_strided(const em_tensor *t, const int64_t *sizes, const int64_t *strides,
                         int ndim, int64_t offset)
{
    if (ndim < 0 || ndim > EM_MAX_DIMS)
        return em_set_error("as_strided: %d dimensions (at most %d)", ndim, EM_MAX_DIMS), NULL;
    if (em_check_shape("as_strided", sizes, ndim)) return NULL;
    /* the view must stay inside the storage */
    int64_t lo = offset, hi = offset, esz = (int64_t)em_dtype_size(t->dtype);
    bool empty = false, over = offset < 0;
    for (int i = 0; i < ndim; i++) {
        if (sizes[i] == 0) empty = true;
        int64_t span;
        over |= __builtin_mul_overflow(sizes[i] ? sizes[i] - 1 : 0, strides[i], &span);
        over |= span < 0 ? __builtin_add_overflow(lo, span, &lo) : __builtin_add_overflow(hi, span, &hi);
    }
    if (!empty && !over && (__builtin_add_overflow(hi, 1, &hi) || __builtin_mul_overflow(hi, esz, &hi))) over = true;
    if (!empty && (over || lo < 0 || hi > (int64_t)t->storage->nbytes))
        return em_set_error("as_strided: view of size %s reaches outside its storage (%zu bytes)",
                            em_sizes_tmp(sizes, ndim), t->storage->nbytes), NULL;
    em_tensor *v = em_header_on(t);
    if (!v) return NULL;
    v->ndim = ndim;
    v->offset = offset;
    if (ndim > 0) {
        memcpy(v->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
        memcpy(v->strides, strides, sizeof(int64_t) * (size_t)ndim);
    }
    return v;
}

/* Fills in a -1 and checks the element count; returns 0 or -1. */
static int infer_size(const char *op, const em_tensor *t, const int64_t *sizes, int ndim, int64_t *out)
{
    int64_t n = em_numel(t), known = 1;
    int infer = -1;
    if (ndim > EM_MAX_DIMS) return em_set_error("%s: %d dimensions (at most %d)", op, ndim, EM_MAX_DIMS);
    for (int i = 0; i < ndim; i++) {
        if (sizes[i] == -1) {
            if (infer >= 0) return em_set_error("%s: only one dimension can be -1, got %s", op, em_sizes_tmp(sizes, ndim));
            infer = i;
        } else if (sizes[i] < 0) {
            return em_set_error("%s: invalid size %s", op, em_sizes_tmp(sizes, ndim));
        } else if (__builtin_mul_overflow(known, sizes[i], &known)) {
            return em_set_error("%s: shape %s is invalid for a tensor of %lld elements (%s)", op,
                                em_sizes_tmp(sizes, ndim), (long long)n, SHAPE(t));
        }
        out[i] = sizes[i];
    }
    if (infer >= 0) {
        if (known == 0 || n % known != 0)
            return em_set_error("%s: shape %s is invalid for a tensor of %lld elements (%s)", op,
                                em_sizes_tmp(sizes, ndim), (long long)n, SHAPE(t));
        out[infer] = n / known;
    } else if (known != n) {
        return em_set_error("%s: shape %s is invalid for a tensor of %lld elements (%s)", op,
                            em_sizes_tmp(sizes, ndim), (long long)n, SHAPE(t));
    }
    return em_check_shape(op, out, ndim);
}

/* Strides for viewing t with new sizes without copying (PyTorch's
 * computeStride); returns false when the memory layout does not allow it. */
static bool view_strides(const em_tensor *t, const int64_t *sizes, int ndim, int64_t *strides)
{
    if (em_numel(t) == 0 || t->ndim == 0) {
        int64_t s = 1;
        for (int i = ndim - 1; i >= 0; i--) { strides[i] = s; s *= sizes[i] ? sizes[i] : 1; }
        return true;
    }
    int view_d = ndim - 1;
    int64_t chunk_base_stride = t->strides[t->ndim - 1], tensor_numel = 1, view_numel = 1;
    for (int td = t->ndim - 1; td >= 0; td--) {
        tensor_numel *= t->sizes[td];
        if (td == 0 || (t->sizes[td - 1] != 1 && t->strides[td - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
                strides[view_d] = view_numel * chunk_base_stride;
                view_numel *= sizes[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (td > 0) {
                chunk_base_stride = t->strides[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

em_tensor *em_view(const em_tensor *t, const int64_t *sizes, int ndim)
{
    int64_t sz[EM_MAX_DIMS], st[EM_MAX_DIMS];
    if (infer_size("view", t, sizes, ndim, sz)) return NULL;
    if (!view_strides(t, sz, ndim, st))
        return em_set_error("view: size %s is not compatible with the strides of the input %s "
                            "(at least one dimension spans two contiguous subspaces); use reshape",
                            em_sizes_tmp(sz, ndim), SHAPE(t)), NULL;
    return em_ag_view(EM_VK_RESHAPE, t, em_as_strided(t, sz, st, ndim, t->offset), NULL, 0);
}

em_tensor *em_reshape(const em_tensor *t, const int64_t *sizes, int ndim)
{
    int64_t sz[EM_MAX_DIMS], st[EM_MAX_DIMS];
    if (infer_size("reshape", t, sizes, ndim, sz)) return NULL;
    if (view_strides(t, sz, ndim, st))
        return em_ag_view(EM_VK_RESHAPE, t, em_as_strided(t, sz, st, ndim, t->offset), NULL, 0);
    em_tensor *c = em_clone(t);
    if (!c) return NULL;
    em_tensor *v = em_view(c, sz, ndim);
    em_release(c);
    return v;
}

em_tensor *em_transpose(const em_tensor *t, int d0, int d1)
{
    if (t->ndim == 0) {
        if (em_normalize_dim(d0, 0, "transpose") < 0 || em_normalize_dim(d1, 0, "transpose") < 0) return NULL;
        return em_ag_view(EM_VK_CLONE, t, em_alias(t), NULL, 0);
    }
    d0 = em_normalize_dim(d0, t->ndim, "transpose");
    if (d0 < 0) return NULL;
    d1 = em_normalize_dim(d1, t->ndim, "transpose");
    if (d1 < 0) return NULL;
    em_tensor *v = em_alias(t);
    if (!v) return NULL;
    int64_t s = v->sizes[d0]; v->sizes[d0] = v->sizes[d1]; v->sizes[d1] = s;
    s = v->strides[d0]; v->strides[d0] = v->strides[d1]; v->strides[d1] = s;
    int64_t perm[EM_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) perm[i] = i;
    perm[d0] = d1;
    perm[d1] = d0;
    return em_ag_view(EM_VK_PERMUTE, t, v, perm, t->ndim);
}

em_tensor *em_t(const em_tensor *t)
{
    if (t->ndim > 2)
        return em_set_error("t: expected a tensor with at most 2 dimensions, got %s; use transpose",
                            SHAPE(t)), NULL;
    if (t->ndim < 2) return em_ag_view(EM_VK_CLONE, t, em_alias(t), NULL, 0);
    return em_transpose(t, 0, 1);
}

em_tensor *em_permute(const em_tensor *t, const int *dims, int ndims)
{
    if (ndims != t->ndim)
        return em_set_error("permute: %d dimensions given for a tensor of %d (%s)", ndims, t->ndim, SHAPE(t)), NULL;
    bool seen[EM_MAX_DIMS] = {false};
    int d[EM_MAX_DIMS];
    for (int i = 0; i < ndims; i++) {
        d[i] = em_normalize_dim(dims[i], t->ndim, "permute");
        if (d[i] < 0) return NULL;
        if (seen[d[i]]) return em_set_error("permute: dimension %d repeated", d[i] + 1), NULL;
        seen[d[i]] = true;
    }
    em_tensor *v = em_alias(t);
    if (!v) return NULL;
    for (int i = 0; i < ndims; i++) { v->sizes[i] = t->sizes[d[i]]; v->strides[i] = t->strides[d[i]]; }
    int64_t perm[EM_MAX_DIMS];
    for (int i = 0; i < ndims; i++) perm[i] = d[i];
    return em_ag_view(EM_VK_PERMUTE, t, v, perm, ndims);
}

em_tensor *em_narrow(const em_tensor *t, int dim, int64_t start, int64_t length)
{
    if (t->ndim == 0) return em_set_error("narrow: cannot narrow a 0-d tensor"), NULL;
    dim = em_normalize_dim(dim, t->ndim, "narrow");
    if (dim < 0) return NULL;
    int64_t n = t->sizes[dim];
    if (start < 0) start += n;
    if (start < 0 || length < 0 || start > n || length > n - start)   /* start + length may overflow */
        return em_set_error("narrow: start %lld, length %lld out of range for dimension %d of size %lld (%s)",
                            (long long)start + 1, (long long)length, dim + 1, (long long)n, SHAPE(t)), NULL;
    em_tensor *v = em_alias(t);
    if (!v) return NULL;
    v->offset += start * t->strides[dim];
    v->sizes[dim] = length;
    int64_t p[3] = {dim, start, length};
    return em_ag_view(EM_VK_NARROW, t, v, p, 3);
}

em_tensor *em_select(const em_tensor *t, int dim, int64_t index)
{
    if (t->ndim == 0) return em_set_error("select: cannot index a 0-d tensor"), NULL;
    dim = em_normalize_dim(dim, t->ndim, "select");
    if (dim < 0) return NULL;
    int64_t n = t->sizes[dim];
    if (index < -n || index >= n)
        return em_set_error("select: index %lld out of range for dimension %d of size %lld (%s)",
                            (long long)(index >= 0 ? index + 1 : index), dim + 1, (long long)n, SHAPE(t)), NULL;
    if (index < 0) index += n;
    em_tensor *v = em_alias(t);
    if (!v) return NULL;
    v->offset += index * t->strides[dim];
    for (int i = dim; i < t->ndim - 1; i++) { v->sizes[i] = t->sizes[i + 1]; v->strides[i] = t->strides[i + 1]; }
    v->ndim--;
    int64_t p[2] = {dim, index};
    return em_ag_view(EM_VK_SELECT, t, v, p, 2);
}

em_tensor *em_slice(const em_tensor *t, int dim, int64_t start, int64_t stop, int64_t step)
{
    if (t->ndim == 0) return em_set_error("slice: cannot slice a 0-d tensor"), NULL;
    dim = em_normalize_dim(dim, t->ndim, "slice");
    if (dim < 0) return NULL;
    if (step <= 0) return em_set_error("slice: step must be positive, got %lld", (long long)step), NULL;
    int64_t n = t->sizes[dim];
    if (start < 0) start += n;
    if (stop < 0) stop += n;
    if (start < 0) start = 0;
    if (stop > n) stop = n;
    if (start > n) start = n;
    int64_t len = stop > start ? (stop - start - 1) / step + 1 : 0;   /* no overflow for a huge step */
    em_tensor *v = em_alias(t);
    if (!v) return NULL;
    v->offset += start * t->strides[dim];
    v->sizes[dim] = len;
    /* one element needs no stride; more than one stay inside the storage,
     * so the product cannot overflow then */
    v->strides[dim] = len > 1 ? t->strides[dim] * step : t->strides[dim];
    int64_t p[4] = {dim, start, stop, step};
    return em_ag_view(EM_VK_SLICE, t, v, p, 4);
}

em_tensor *em_expand(const em_tensor *t, const int64_t *sizes, int ndim)
{
    if (ndim < t->ndim || ndim > EM_MAX_DIMS)
        return em_set_error("expand: cannot expand %s to %s (fewer dimensions)", SHAPE(t),
                            em_sizes_tmp(sizes, ndim)), NULL;
    int64_t sz[EM_MAX_DIMS], st[EM_MAX_DIMS];
    int lead = ndim - t->ndim;
    for (int i = ndim - 1; i >= 0; i--) {
        int j = i - lead;
        int64_t want = sizes[i];
        if (j < 0) {
            if (want < 0) return em_set_error("expand: size -1 not allowed in a new leading dimension (%s)", em_sizes_tmp(sizes, ndim)), NULL;
            sz[i] = want; st[i] = 0;
        } else if (want == -1 || want == t->sizes[j]) {
            sz[i] = t->sizes[j]; st[i] = t->strides[j];
        } else if (t->sizes[j] == 1 && want >= 0) {
            sz[i] = want; st[i] = 0;
        } else {
            return em_set_error("expand: cannot expand %s to %s (dimension %d: %lld vs %lld; only size-1 dimensions expand)",
                                SHAPE(t), em_sizes_tmp(sizes, ndim), i + 1, (long long)t->sizes[j], (long long)want), NULL;
        }
    }
    if (em_check_shape("expand", sz, ndim)) return NULL;
    em_tensor *v = em_header_on(t);
    if (!v) return NULL;
    v->ndim = ndim;
    memcpy(v->sizes, sz, sizeof(int64_t) * (size_t)ndim);
    memcpy(v->strides, st, sizeof(int64_t) * (size_t)ndim);
    return em_ag_view(EM_VK_EXPAND, t, v, NULL, 0);
}

em_tensor *em_squeeze(const em_tensor *t)
{
    em_tensor *v = em_alias(t);
    if (!v) return NULL;
    int k = 0;
    for (int i = 0; i < t->ndim; i++)
        if (t->sizes[i] != 1) { v->sizes[k] = t->sizes[i]; v->strides[k] = t->strides[i]; k++; }
    v->ndim = k;
    return em_ag_view(EM_VK_RESHAPE, t, v, NULL, 0);
}

em_tensor *em_squeeze_dim(const em_tensor *t, int dim)
{
    if (t->ndim == 0) {
        if (em_normalize_dim(dim, 0, "squeeze") < 0) return NULL;
        return em_ag_view(EM_VK_CLONE, t, em_alias(t), NULL, 0);
    }
    dim = em_normalize_dim(dim, t->ndim, "squeeze");
    if (dim < 0) return NULL;
    em_tensor *v = em_alias(t);
    if (!v || t->sizes[dim] != 1) return em_ag_view(EM_VK_CLONE, t, v, NULL, 0);
    for (int i = dim; i < t->ndim - 1; i++) { v->sizes[i] = t->sizes[i + 1]; v->strides[i] = t->strides[i + 1]; }
    v->ndim--;
    return em_ag_view(EM_VK_RESHAPE, t, v, NULL, 0);
}

em_tensor *em_unsqueeze(const em_tensor *t, int dim)
{
    if (t->ndim >= EM_MAX_DIMS) return em_set_error("unsqueeze: tensor already has %d dimensions", EM_MAX_DIMS), NULL;
    dim = em_normalize_dim(dim, t->ndim + 1, "unsqueeze");
    if (dim < 0) return NULL;
    em_tensor *v = em_alias(t);
    if (!v) return NULL;
    for (int i = t->ndim; i > dim; i--) { v->sizes[i] = t->sizes[i - 1]; v->strides[i] = t->strides[i - 1]; }
    v->sizes[dim] = 1;
    v->strides[dim] = dim < t->ndim ? t->sizes[dim] * t->strides[dim] : 1;
    v->ndim++;
    return em_ag_view(EM_VK_RESHAPE, t, v, NULL, 0);
}

int em_become_view_(const char *base, em_tensor *t, em_tensor *v)
{
    char op[64];
    snprintf(op, sizeof op, "%s_", base);
    if (!v) {
        em_rename_error(base, op);
        return -1;
    }
    if (v->storage != t->storage) em_set_error("%s: internal error: the result is not a view of the input", op);
    if (v->storage != t->storage || em_ag_check_inplace(op, t, NULL)) {
        em_release(v);
        return -1;
    }
    t->offset = v->offset;
    t->ndim = v->ndim;
    memcpy(t->sizes, v->sizes, sizeof t->sizes);
    memcpy(t->strides, v->strides, sizeof t->strides);
    em_release(v);
    em_bump_version(t);
    return 0;
}

em_tensor *em_flatten(const em_tensor *t, int start_dim, int end_dim)
{
    if (t->ndim == 0) { int64_t one = 1; return em_reshape(t, &one, 1); }
    start_dim = em_normalize_dim(start_dim, t->ndim, "flatten");
    if (start_dim < 0) return NULL;
    end_dim = em_normalize_dim(end_dim, t->ndim, "flatten");
    if (end_dim < 0) return NULL;
    if (start_dim > end_dim)
        return em_set_error("flatten: start dimension %d comes after end dimension %d", start_dim + 1, end_dim + 1), NULL;
    int64_t sz[EM_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < start_dim; i++) sz[k++] = t->sizes[i];
    int64_t m = 1;
    for (int i = start_dim; i <= end_dim; i++) m *= t->sizes[i];
    sz[k++] = m;
    for (int i = end_dim + 1; i < t->ndim; i++) sz[k++] = t->sizes[i];
    return em_reshape(t, sz, k);
}

em_tensor *em_unfold(const em_tensor *t, int dim, int64_t size, int64_t step)
{
    if (t->ndim >= EM_MAX_DIMS) return em_set_error("unfold: too many dimensions"), NULL;
    int nd = t->ndim ? t->ndim : 1;
    dim = em_normalize_dim(dim, t->ndim, "unfold");
    if (dim < 0) return NULL;
    int64_t n = t->ndim ? t->sizes[dim] : 1, stride = t->ndim ? t->strides[dim] : 1;
    if (size < 0 || size > n)
        return em_set_error("unfold: size %lld exceeds dimension %d of size %lld (%s)", (long long)size, dim + 1, (long long)n, SHAPE(t)), NULL;
    if (step <= 0) return em_set_error("unfold: step must be positive, got %lld", (long long)step), NULL;
    int64_t sz[EM_MAX_DIMS], st[EM_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) { sz[i] = t->sizes[i]; st[i] = t->strides[i]; }
    if (t->ndim == 0) { sz[0] = 1; st[0] = 1; }
    sz[dim] = (n - size) / step + 1;
    st[dim] = step * stride;
    sz[nd] = size;
    st[nd] = stride;
    int64_t p[3] = {t->ndim ? dim : 0, size, step};
    if (t->ndim == 0) return em_ag_view(EM_VK_RESHAPE, t, em_as_strided(t, sz, st, nd + 1, t->offset), NULL, 0);
    return em_ag_view(EM_VK_UNFOLD, t, em_as_strided(t, sz, st, nd + 1, t->offset), p, 3);
}

em_tensor *em_diagonal(const em_tensor *t)
{
    if (t->ndim != 2) return em_set_error("diagonal: expected a 2-D tensor, got %s", SHAPE(t)), NULL;
    int64_t n = t->sizes[0] < t->sizes[1] ? t->sizes[0] : t->sizes[1];
    int64_t st = t->strides[0] + t->strides[1];
    return em_ag_view(EM_VK_DIAGONAL, t, em_as_strided(t, &n, &st, 1, t->offset), NULL, 0);
}

em_tensor *em_contiguous(const em_tensor *t)
{
    if (em_is_contiguous(t)) return em_retain((em_tensor *)t);
    return em_clone(t);
}

em_tensor *em_clone(const em_tensor *t)
{
    em_tensor *c = em_empty_like(t);
    if (!c) return NULL;
    if (em_be(t)->cast(c, t)) { em_release(c); return NULL; }
    return em_ag_view(EM_VK_CLONE, t, c, NULL, 0);
}

em_tensor *em_cast_to(const em_tensor *t, em_dtype d)
{
    if (t->dtype == d) return em_retain((em_tensor *)t);
    em_tensor *c = em_empty(t->sizes, t->ndim, d, em_dev(t));
    if (!c) return NULL;
    if (em_be(t)->cast(c, t)) { em_release(c); return NULL; }
    return c;
}

em_tensor *em_to_dtype(const em_tensor *t, em_dtype d)
{
    if (em_ag_needed1(t) && t->dtype != d) return em_ag_cast(t, d);
    return em_cast_to(t, d);
}

int em_copy_(em_tensor *dst, const em_tensor *src)
{
    if (em_ag_check_inplace("copy_", dst, src) || em_check_writable("copy_", dst)) return -1;
    if (!em_device_eq(em_dev(dst), em_dev(src))) {
        em_tensor *moved = em_to_device(src, em_dev(dst));
        if (!moved) return -1;
        int rc = em_copy_(dst, moved);
        em_release(moved);
        return rc;
    }
    em_tensor *e = em_expand(src, dst->sizes, dst->ndim);
    if (!e) {
        return em_set_error("copy_: source %s cannot be broadcast to destination %s",
                            SHAPE(src), SHAPE(dst));
    }
    /* A source in the destination's memory other than the same view (y[2:]
     * = y[:-1]) would be read after parts of it were written: read a copy
     * (the result is what cloning the source gives; PyTorch refuses). The
     * sanitizer build found the overlapping memcpy this used to do. */
    if (e->storage == dst->storage && em_numel(dst) > 0 &&
        !(e->offset == dst->offset && memcmp(e->strides, dst->strides, sizeof(int64_t) * (size_t)dst->ndim) == 0)) {
        em_tensor *c = em_empty_like(e);
        int crc = c ? em_be(dst)->cast(c, e) : -1;
        em_release(e);
        if (crc) { em_release(c); return -1; }
        e = c;
    }
    int rc = em_be(dst)->cast(dst, e);
    em_release(e);
    if (rc == 0) em_bump_version(dst);
    return rc;
}

em_tensor *em_to_device(const em_tensor *t, em_device d)
{
    if (em_device_eq(em_dev(t), d)) return em_retain((em_tensor *)t);
    if (em_check_not_capturing(em_dev(t), "to", "copy a tensor off the GPU (item(), tolist(), printing, :to(\"cpu\"))") ||
        em_check_not_capturing(d, "to", "copy a tensor to the GPU from another device"))
        return NULL;
    em_tensor *c = em_contiguous(t);
    if (!c) return NULL;
    em_tensor *out = em_empty(t->sizes, t->ndim, t->dtype, d);
    if (!out) { em_release(c); return NULL; }
    size_t n = (size_t)em_numel(c) * em_dtype_size(c->dtype);
    int rc;
    if (d.type == EM_CPU) rc = em_be(c)->memcpy_d2h(em_data_ptr(out), em_data_ptr(c), n, em_dev(c).index);
    else if (em_dev(c).type == EM_CPU) rc = em_be(out)->memcpy_h2d(em_data_ptr(out), em_data_ptr(c), n, d.index);
    else { /* device to device through the host */
        em_tensor *h = em_to_device(c, (em_device){EM_CPU, 0});
        rc = h ? em_be(out)->memcpy_h2d(em_data_ptr(out), em_data_ptr(h), n, d.index) : -1;
        em_release(h);
    }
    em_release(c);
    if (rc) { em_release(out); return NULL; }
    return em_ag_view(EM_VK_DEVICE, t, out, NULL, 0);
}

int em_broadcast_shapes(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out, const char *op)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int ia = na - n + i, ib = nb - n + i;
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa == sb || sb == 1) out[i] = sa;
        else if (sa == 1) out[i] = sb;
        else
            return em_set_error("%s: shapes %s and %s cannot be broadcast (dimension %d: %lld vs %lld)", op,
                                em_sizes_tmp(a, na), em_sizes_tmp(b, nb), i + 1, (long long)sa, (long long)sb);
    }
    return n;
}
