/* reduce_order.c — reductions by order and counting: median, nanmedian,
 * kthvalue, mode, quantile, nanquantile, cummax / cummin, logcumsumexp,
 * nansum, nanmean, count_nonzero, aminmax, var_mean / std_mean, unique,
 * unique_consecutive, bincount, histc, searchsorted and bucketize.
 *
 * Almost everything is composed from the (stable) sort, gather, scatter_add
 * and elementwise ops, so it runs on every backend. Values that pick
 * elements (median, kthvalue, mode, quantile, cummax) are read with gather
 * from the sorted values or from the input, so their gradients come from
 * sort's and gather's own: the gradient goes to the picked element, and
 * quantile's is the interpolation's. The only kernels of their own are the
 * running max / min and logcumsumexp scans of the backend's scan family.
 *
 * Index results are 1-based int64 as elsewhere; searchsorted and bucketize
 * give the 1-based insertion position (PyTorch's result + 1). */
#include "internal.h"
#include "autograd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

/* t as a 1-D tensor of one element when it is 0-d (dim 0 then names it) */
static em_tensor *at_least_1d(const em_tensor *t)
{
    if (t->ndim > 0) return em_retain((em_tensor *)t);
    int64_t one = 1;
    return em_reshape(t, &one, 1);
}

/* r (dropped) reshaped to 0-d */
static em_tensor *to_0d(em_tensor *r)
{
    if (!r) return NULL;
    em_tensor *v = em_reshape(r, NULL, 0);
    em_release(r);
    return v;
}

static em_tensor *flat(const em_tensor *t)
{
    int64_t n = em_numel(t);
    return em_reshape(t, &n, 1);
}

static em_tensor *isnan_of(const em_tensor *t) { return ei_binary(EM_NE, t, t); }

/* 1-based positions start .. start + n - 1 along dim of an ndim-dims
 * tensor (size 1 in the other dims), int64 */
static em_tensor *positions(int64_t n, int dim, int ndim, em_device dev)
{
    em_tensor *a = em_arange(1, (double)n + 1, 1, EM_INT64, dev);
    if (!a || ndim <= 1) return a;
    int64_t sizes[EM_MAX_DIMS];
    for (int d = 0; d < ndim; d++) sizes[d] = d == dim ? n : 1;
    em_tensor *r = em_reshape(a, sizes, ndim);
    em_release(a);
    return r;
}

/* An inclusive scan of the backend's scan family, with no recording. */
static em_tensor *raw_scan(em_scan_op op, const em_tensor *src, int dim)
{
    em_tensor *out = em_empty(src->sizes, src->ndim, src->dtype, em_dev(src));
    if (!out || em_be(src)->scan(op, out, src, dim)) { em_release(out); return NULL; }
    return out;
}

/* sv and si gathered at the 1-based positions pos (sized 1 along dim), the
 * dim dropped unless keepdim; both made 0-d when zero_d (the input was 0-d
 * and sorted as at_least_1d of it) */
static int pick_sorted(const em_tensor *sv, const em_tensor *si, int dim, const em_tensor *pos, bool keepdim,
                       bool zero_d, em_tensor **values, em_tensor **indices)
{
    em_scope s = {0};
    em_tensor *v = em_scope_keep(&s, em_gather(sv, dim, pos));
    em_tensor *i = v ? em_scope_keep(&s, em_gather(si, dim, pos)) : NULL;
    if (i && zero_d) {
        v = em_scope_keep(&s, em_reshape(v, NULL, 0));
        i = em_scope_keep(&s, em_reshape(i, NULL, 0));
    } else if (i && !keepdim) {
        v = em_scope_keep(&s, em_squeeze_dim(v, dim));
        i = v ? em_scope_keep(&s, em_squeeze_dim(i, dim)) : NULL;
    }
    if (!v || !i) return em_scope_drop(&s), -1;
    *values = em_retain(v);
    *indices = em_retain(i);
    em_scope_drop(&s);
    return 0;
}

/* at_least_1d(t), refused with an error naming op when its dim d is empty */
static em_tensor *nonempty_line(const char *op, const em_tensor *t, int d)
{
    em_tensor *w = at_least_1d(t);
    if (w && w->sizes[d] == 0) {
        em_set_error("%s: cannot compute over the empty dimension %d of %s", op, d + 1, SHAPE(t));
        em_release(w);
        return NULL;
    }
    return w;
}

/* ---- median, nanmedian, kthvalue ---------------------------------------------- */

typedef enum { PICK_MEDIAN, PICK_NANMEDIAN, PICK_KTH } pick_kind;

/* The 1-based sorted position to pick in each line (sizes: the keepdim
 * shape): median takes the lower middle, or the first NaN when the line has
 * one (sort puts NaN last, stably, so that is the first NaN of the line);
 * nanmedian the lower middle of the values that are not NaN. */
static em_tensor *pick_position(pick_kind kind, int64_t k, const em_tensor *sv, int d, const int64_t *kept)
{
    int64_t n = sv->sizes[d];
    em_device dev = em_dev(sv);
    if (kind == PICK_KTH) return em_full(kept, sv->ndim, (double)k, EM_INT64, dev);
    em_scope s = {0};
    em_tensor *mid = em_scope_keep(&s, em_full(kept, sv->ndim, (double)((n - 1) / 2 + 1), EM_INT64, dev));
    if (!mid || !em_dtype_is_float(sv->dtype)) return em_scope_finish(&s, mid);
    em_tensor *nan = em_scope_keep(&s, isnan_of(sv));
    em_tensor *cnt = es_sum(&s, nan, &d, 1, true);
    em_tensor *r = NULL;
    if (cnt && kind == PICK_MEDIAN) {
        em_tensor *first_nan = es_scalar_ex(&s, EM_SUB, cnt, (double)(n + 1), true, true);
        em_tensor *has = first_nan ? es_scalar_ex(&s, EM_GT, cnt, 0, true, false) : NULL;
        r = has ? em_scope_keep(&s, em_where(has, first_nan, mid)) : NULL;
    } else if (cnt) {   /* floor((m + 1) / 2) of the m values that are not NaN, at least 1 */
        em_tensor *m1 = es_scalar_ex(&s, EM_SUB, cnt, (double)(n + 1), true, true);
        em_tensor *f = m1 ? em_scope_keep(&s, em_cast_to(m1, EM_FLOAT64)) : NULL;
        em_tensor *h = es_scalar(&s, EM_MUL, f, 0.5);
        em_tensor *fl = es_unary(&s, EM_FLOOR, h);
        double one = 1;
        em_tensor *c = fl ? em_scope_keep(&s, em_clamp(fl, &one, NULL)) : NULL;
        r = c ? em_scope_keep(&s, em_cast_to(c, EM_INT64)) : NULL;
    }
    return em_scope_finish(&s, r);
}

static int order_pick(const char *op, pick_kind kind, int64_t k, const em_tensor *t, int dim, bool keepdim,
                      em_tensor **values, em_tensor **indices)
{
    *values = *indices = NULL;
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return -1;
    if (t->dtype == EM_BOOL)
        return em_set_error("%s: not supported for bool tensors (%s); cast to an integer dtype first", op, SHAPE(t));
    em_scope s = {0};
    em_tensor *w = em_scope_keep(&s, nonempty_line(op, t, d));
    if (!w) return -1;
    int64_t n = w->sizes[d];
    if (kind == PICK_KTH && (k < 1 || k > n)) {
        em_set_error("%s: k (%lld) is out of range for dimension %d of size %lld (%s); expected 1 <= k <= %lld",
                     op, (long long)k, d + 1, (long long)n, SHAPE(t), (long long)n);
        return em_scope_drop(&s), -1;
    }
    em_tensor *sv, *si;
    if (em_sort(w, d, false, true, &sv, &si)) return em_scope_drop(&s), -1;
    em_scope_keep(&s, sv), em_scope_keep(&s, si);
    int64_t kept[EM_MAX_DIMS];
    memcpy(kept, w->sizes, sizeof(int64_t) * (size_t)w->ndim);
    kept[d] = 1;
    em_tensor *pos = em_scope_keep(&s, pick_position(kind, k, sv, d, kept));
    int rc = pos ? pick_sorted(sv, si, d, pos, keepdim, t->ndim == 0, values, indices) : -1;
    em_scope_drop(&s);
    return rc;
}

int em_median_dim(const em_tensor *t, int dim, bool keepdim, em_tensor **values, em_tensor **indices)
{
    return order_pick("median", PICK_MEDIAN, 0, t, dim, keepdim, values, indices);
}

int em_nanmedian_dim(const em_tensor *t, int dim, bool keepdim, em_tensor **values, em_tensor **indices)
{
    return order_pick("nanmedian", PICK_NANMEDIAN, 0, t, dim, keepdim, values, indices);
}

int em_kthvalue(const em_tensor *t, int64_t k, int dim, bool keepdim, em_tensor **values, em_tensor **indices)
{
    return order_pick("kthvalue", PICK_KTH, k, t, dim, keepdim, values, indices);
}

static em_tensor *median_all(const char *op, pick_kind kind, const em_tensor *t)
{
    if (em_numel(t) == 0) {
        if (em_dtype_is_float(t->dtype)) return em_scalar(NAN, t->dtype, em_dev(t));
        return em_set_error("%s: cannot compute the median of the empty %s tensor %s", op,
                            em_dtype_name(t->dtype), SHAPE(t)), NULL;
    }
    em_scope s = {0};
    em_tensor *f = em_scope_keep(&s, flat(t)), *v = NULL, *i = NULL;
    if (!f || order_pick(op, kind, 0, f, 0, false, &v, &i)) return em_scope_drop(&s), NULL;
    em_scope_keep(&s, i);   /* only the values are wanted */
    em_scope_drop(&s);
    return v;
}

em_tensor *em_median(const em_tensor *t) { return median_all("median", PICK_MEDIAN, t); }
em_tensor *em_nanmedian(const em_tensor *t) { return median_all("nanmedian", PICK_NANMEDIAN, t); }

/* ---- mode ----------------------------------------------------------------------- */

/* In the sorted line each element's count is its position within its run of
 * equal values; the first maximum of the counts ends the run of the most
 * frequent value, and of the smallest such value (sorted ascending). The
 * index is that of the run's last element: the last occurrence. NaNs differ
 * from each other, so each counts once. */
int em_mode(const em_tensor *t, int dim, bool keepdim, em_tensor **values, em_tensor **indices)
{
    const char *op = "mode";
    *values = *indices = NULL;
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return -1;
    em_scope s = {0};
    em_tensor *w = em_scope_keep(&s, nonempty_line(op, t, d));
    if (!w) return -1;
    int64_t n = w->sizes[d];
    em_tensor *sv = NULL, *si = NULL;
    if (em_sort(w, d, false, true, &sv, &si)) return em_scope_drop(&s), -1;
    em_scope_keep(&s, sv), em_scope_keep(&s, si);
    em_tensor *pos = NULL;
    {
        bool was = em_set_grad_enabled(false);
        int64_t os[EM_MAX_DIMS];
        memcpy(os, sv->sizes, sizeof(int64_t) * (size_t)sv->ndim);
        os[d] = 1;
        em_tensor *next = es_narrow(&s, sv, d, 1, n - 1);
        em_tensor *prev = next ? es_narrow(&s, sv, d, 0, n - 1) : NULL;
        em_tensor *starts = es_binary(&s, EM_NE, next, prev);                     /* a new run starts */
        em_tensor *first = starts ? em_scope_keep(&s, em_full(os, sv->ndim, 1, EM_BOOL, em_dev(sv))) : NULL;
        em_tensor *parts[2] = {first, starts};
        em_tensor *is_start = first ? em_scope_keep(&s, ei_cat(parts, 2, d)) : NULL;
        em_tensor *at = is_start ? em_scope_keep(&s, positions(n, d, sv->ndim, em_dev(sv))) : NULL;
        em_tensor *zero = es_scalar_ex(&s, EM_MUL, at, 0, true, false);
        /* the run starts' positions, then each one's run start */
        em_tensor *start_at = zero ? em_scope_keep(&s, em_where(is_start, at, zero)) : NULL;
        em_tensor *run_start = start_at ? em_scope_keep(&s, raw_scan(EM_CUMMAX, start_at, d)) : NULL;
        em_tensor *count1 = es_sub(&s, at, run_start);                              /* count - 1 */
        pos = count1 ? em_scope_keep(&s, em_argmax(count1, d, true, false)) : NULL;
        em_set_grad_enabled(was);
    }
    int rc = pos ? pick_sorted(sv, si, d, pos, keepdim, t->ndim == 0, values, indices) : -1;
    em_scope_drop(&s);
    return rc;
}

/* ---- quantile ------------------------------------------------------------------- */

/* PyTorch's lerp: from the nearer end, so weight 1 gives `hi` exactly */
static em_tensor *lerp(const em_tensor *lo, const em_tensor *hi, const em_tensor *w)
{
    em_scope s = {0};
    em_tensor *diff = es_sub(&s, hi, lo);
    em_tensor *a1 = es_mul(&s, w, diff);
    em_tensor *a = es_add(&s, lo, a1);
    em_tensor *w1 = a ? es_scalar_ex(&s, EM_SUB, w, 1, true, true) : NULL;
    em_tensor *b1 = es_mul(&s, diff, w1);
    em_tensor *b = es_sub(&s, hi, b1);
    em_tensor *near_lo = b ? es_scalar(&s, EM_LT, w, 0.5) : NULL;
    return em_scope_finish(&s, near_lo ? em_scope_keep(&s, em_where(near_lo, a, b)) : NULL);
}

/* sv at the 1-based position rank + 1 (rank: whole numbers, float) */
static em_tensor *at_rank(const em_tensor *sv, int d, const em_tensor *rank)
{
    em_scope s = {0};
    em_tensor *i = em_scope_keep(&s, em_cast_to(rank, EM_INT64));
    em_tensor *i1 = es_scalar_ex(&s, EM_ADD, i, 1, true, false);
    return em_scope_finish(&s, i1 ? em_scope_keep(&s, em_gather(sv, d, i1)) : NULL);
}

/* One quantile q of every line of sv (sorted along d; cnt its NaN counts),
 * in the keepdim shape. The ranks are computed as PyTorch does, in the
 * input's dtype. */
static em_tensor *one_quantile(const em_tensor *sv, int d, const em_tensor *cnt, double q,
                               em_quantile_interp interp, bool ignore_nan)
{
    int64_t n = sv->sizes[d];
    em_scope s = {0};
    em_tensor *rank;
    bool was = em_set_grad_enabled(false);
    if (ignore_nan) {   /* q (m - 1) of the m values that are not NaN, 0 when there are none */
        em_tensor *m1 = es_scalar_ex(&s, EM_SUB, cnt, (double)(n - 1), true, true);
        em_tensor *mf = m1 ? em_scope_keep(&s, em_cast_to(m1, sv->dtype)) : NULL;
        em_tensor *qm = es_scalar(&s, EM_MUL, mf, q);
        double zero = 0;
        rank = qm ? em_scope_keep(&s, em_clamp(qm, &zero, NULL)) : NULL;
    } else {            /* q (n - 1), or the last (a NaN) when the line has a NaN */
        em_tensor *qf = em_scope_keep(&s, em_full(cnt->sizes, cnt->ndim, q, sv->dtype, em_dev(sv)));
        em_tensor *qn = es_scalar_ex(&s, EM_MUL, qf, (double)(n - 1), true, false);
        em_tensor *has = qn ? es_scalar_ex(&s, EM_GT, cnt, 0, true, false) : NULL;
        rank = has ? em_scope_keep(&s, em_masked_fill(qn, has, (double)(n - 1))) : NULL;
    }
    bool between = interp == EM_QUANTILE_LINEAR || interp == EM_QUANTILE_MIDPOINT;
    if (rank && !between) {
        em_unary_op r = interp == EM_QUANTILE_LOWER ? EM_FLOOR : interp == EM_QUANTILE_HIGHER ? EM_CEIL : EM_ROUND;
        rank = es_unary(&s, r, rank);
    }
    em_tensor *below = NULL, *above = NULL, *w = NULL;
    if (rank && between) {
        below = es_unary(&s, EM_FLOOR, rank);
        above = below ? es_unary(&s, EM_CEIL, rank) : NULL;
        if (above && interp == EM_QUANTILE_MIDPOINT)
            w = em_scope_keep(&s, em_full(rank->sizes, rank->ndim, 0.5, sv->dtype, em_dev(sv)));
        else if (above) w = es_sub(&s, rank, below);
    }
    em_set_grad_enabled(was);
    em_tensor *r = NULL;
    if (rank && !between) {
        r = em_scope_keep(&s, at_rank(sv, d, rank));
    } else if (w) {
        em_tensor *lo = em_scope_keep(&s, at_rank(sv, d, below));
        em_tensor *hi = lo ? em_scope_keep(&s, at_rank(sv, d, above)) : NULL;
        r = hi ? em_scope_keep(&s, lerp(lo, hi, w)) : NULL;
    }
    return em_scope_finish(&s, r);
}

/* The quantiles qv[0..nq) of t along d (of its flattened values when
 * all_dims), stacked along a new first dim when stack. */
static em_tensor *quantiles(const em_tensor *t, const double *qv, int nq, bool stack, bool all_dims, int d,
                            bool keepdim, em_quantile_interp interp, bool ignore_nan)
{
    /* only the sorted values and the NaN counts live through the loop: the
     * input's copy, the indices and the mask are freed as soon as they are used */
    em_tensor *w = all_dims ? flat(t) : at_least_1d(t), *sv = NULL, *si = NULL;
    bool sorted = w && em_sort(w, d, false, true, &sv, &si) == 0;
    em_release(w);
    em_release(si);
    if (!sorted) return NULL;
    em_scope s = {0};
    em_scope_keep(&s, sv);
    em_tensor *nan = WITHOUT_GRAD(isnan_of(sv));
    em_tensor *cnt = nan ? em_scope_keep(&s, WITHOUT_GRAD(ei_sum(nan, &d, 1, true))) : NULL;
    em_release(nan);
    /* the shape of each quantile's result */
    int64_t rs[EM_MAX_DIMS + 1];
    int rn = 0;
    for (int k = 0; k < t->ndim; k++) {
        if (all_dims ? keepdim : (k != d || keepdim)) rs[rn++] = k == d || all_dims ? 1 : t->sizes[k];
    }
    /* one part per quantile, as many as q has: kept out of the scope */
    em_tensor **parts = cnt ? calloc((size_t)(nq ? nq : 1), sizeof(em_tensor *)) : NULL;
    int made = 0;
    for (; parts && made < nq; made++) {
        em_tensor *r = one_quantile(sv, d, cnt, qv[made], interp, ignore_nan);
        parts[made] = r ? em_reshape(r, rs, rn) : NULL;
        em_release(r);
        if (!parts[made]) break;
    }
    em_tensor *out = NULL;
    if (parts && made == nq) {
        if (nq == 0) {
            memmove(rs + 1, rs, sizeof(int64_t) * (size_t)rn);
            rs[0] = 0;
            out = em_empty(rs, rn + 1, t->dtype, em_dev(t));
        } else {
            out = stack ? ei_stack(parts, nq, 0) : em_retain(parts[0]);
        }
    }
    for (int k = 0; parts && k < (made < nq ? made : nq); k++) em_release(parts[k]);
    free(parts);
    em_scope_drop(&s);
    return out;
}

em_tensor *em_quantile(const em_tensor *t, const em_tensor *q, double qs, bool all_dims, int dim, bool keepdim,
                       em_quantile_interp interp, bool ignore_nan)
{
    const char *op = ignore_nan ? "nanquantile" : "quantile";
    if (t->dtype != EM_FLOAT32 && t->dtype != EM_FLOAT64)
        return em_set_error("%s: expected a float32 or float64 input, got %s", op, em_dtype_name(t->dtype)), NULL;
    if ((unsigned)interp > EM_QUANTILE_NEAREST)
        return em_set_error("%s: unknown interpolation %d", op, (int)interp), NULL;
    int d = 0;
    if (!all_dims && (d = em_normalize_dim(dim, t->ndim, op)) < 0) return NULL;
    if (em_numel(t) == 0) return em_set_error("%s: the input must not be empty (%s)", op, SHAPE(t)), NULL;
    int nq = 1;
    double *qv = &qs;
    if (q) {
        if (q->ndim > 1) return em_set_error("%s: q must be a number or a 0-d or 1-D tensor, got %s", op, SHAPE(q)), NULL;
        if (q->dtype != t->dtype)
            return em_set_error("%s: q (%s) must have the input's dtype (%s)", op, em_dtype_name(q->dtype),
                                em_dtype_name(t->dtype)), NULL;
        if (em_numel(q) > 1 << 20) return em_set_error("%s: too many quantiles (%s)", op, SHAPE(q)), NULL;
        nq = (int)em_numel(q);
        qv = malloc(sizeof(double) * (size_t)(nq ? nq : 1));
        if (!qv) return em_set_error("%s: out of memory", op), NULL;
        if (em_to_host_f64(q, qv)) { free(qv); return NULL; }
    }
    em_tensor *out = NULL;
    int i = 0;
    while (i < nq && qv[i] >= 0 && qv[i] <= 1) i++;
    if (i < nq) em_set_error("%s: q must be in the range [0, 1], got %g", op, qv[i]);
    else out = quantiles(t, qv, nq, q && q->ndim == 1, all_dims, d, keepdim, interp, ignore_nan);
    if (qv != &qs) free(qv);
    return out;
}

/* ---- nan-ignoring sums, counts, extremes, moments ---------------------------------- */

static em_tensor *nan_to_zero(const em_tensor *t)
{
    if (!em_dtype_is_float(t->dtype)) return em_retain((em_tensor *)t);
    em_tensor *nan = isnan_of(t);
    em_tensor *r = nan ? em_masked_fill(t, nan, 0) : NULL;
    em_release(nan);
    return r;
}

em_tensor *em_nansum(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    em_tensor *z = nan_to_zero(t);
    em_tensor *r = z ? ei_sum(z, dims, ndims, keepdim) : NULL;
    em_release(z);
    return r;
}

em_tensor *em_nanmean(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    if (!em_dtype_is_float(t->dtype))
        return em_set_error("nanmean: expected a floating point dtype, got %s", em_dtype_name(t->dtype)), NULL;
    em_scope s = {0};
    if (t->dtype == EM_FLOAT16 || t->dtype == EM_BFLOAT16) {
        em_tensor *f = es_to(&s, t, EM_FLOAT32);
        em_tensor *r = f ? em_scope_keep(&s, em_nanmean(f, dims, ndims, keepdim)) : NULL;
        return em_scope_finish(&s, es_to(&s, r, t->dtype));
    }
    em_tensor *sum = em_scope_keep(&s, em_nansum(t, dims, ndims, keepdim));
    em_tensor *nan = sum ? em_scope_keep(&s, isnan_of(t)) : NULL;
    em_tensor *ok = es_unary(&s, EM_LOGICAL_NOT, nan);
    em_tensor *cnt = ok ? em_scope_keep(&s, em_sum_dtype(ok, dims, ndims, keepdim, t->dtype)) : NULL;
    return em_scope_finish(&s, es_div(&s, sum, cnt));
}

em_tensor *em_count_nonzero(const em_tensor *t, const int *dims, int ndims)
{
    em_tensor *nz = ei_binary_scalar(EM_NE, t, 0, true, false);
    em_tensor *r = nz ? em_sum_dtype(nz, dims, ndims, false, EM_INT64) : NULL;
    em_release(nz);
    return r;
}

int em_aminmax(const em_tensor *t, const int *dims, int ndims, bool keepdim, em_tensor **min, em_tensor **max)
{
    *min = em_amin(t, dims, ndims, keepdim);
    *max = *min ? em_amax(t, dims, ndims, keepdim) : NULL;
    if (*max) return 0;
    em_release(*min);
    *min = NULL;
    return -1;
}

static int moments(bool take_sqrt, const em_tensor *t, const int *dims, int ndims, double correction, bool keepdim,
                   em_tensor **spread, em_tensor **mean)
{
    *spread = take_sqrt ? em_std(t, dims, ndims, correction, keepdim) : em_var(t, dims, ndims, correction, keepdim);
    *mean = *spread ? em_mean(t, dims, ndims, keepdim) : NULL;
    if (*mean) return 0;
    em_release(*spread);
    *spread = NULL;
    return -1;
}

int em_var_mean(const em_tensor *t, const int *dims, int ndims, double correction, bool keepdim, em_tensor **var,
                em_tensor **mean)
{
    return moments(false, t, dims, ndims, correction, keepdim, var, mean);
}

int em_std_mean(const em_tensor *t, const int *dims, int ndims, double correction, bool keepdim, em_tensor **std,
                em_tensor **mean)
{
    return moments(true, t, dims, ndims, correction, keepdim, std, mean);
}

/* ---- cummax / cummin / logcumsumexp ------------------------------------------------ */

/* The running extreme's index is the last position j <= i where x_j reached
 * the running extreme (x_j == v_j, ties taking the later one as PyTorch
 * does) or is NaN (a NaN stays the extreme, and PyTorch points at the latest
 * NaN): the running max of those positions. The values are then gathered
 * from t, so they are t's elements and carry gather's gradient. */
static int cum_extreme(const char *op, em_scan_op sop, const em_tensor *t, int dim, em_tensor **values,
                       em_tensor **indices)
{
    *values = *indices = NULL;
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return -1;
    em_scope s = {0};
    em_tensor *w = em_scope_keep(&s, at_least_1d(t));
    if (!w) return -1;
    int64_t n = w->sizes[d];
    em_tensor *idx = NULL;
    {
        bool was = em_set_grad_enabled(false);
        const em_tensor *x = em_dtype_is_float(w->dtype) ? w : em_scope_keep(&s, em_cast_to(w, EM_INT64));
        em_tensor *run = x ? em_scope_keep(&s, raw_scan(sop, x, d)) : NULL;
        em_tensor *reached = es_binary(&s, EM_EQ, x, run);
        em_tensor *nan = reached ? em_scope_keep(&s, isnan_of(x)) : NULL;
        em_tensor *hit = es_binary(&s, EM_LOGICAL_OR, reached, nan);
        em_tensor *at = hit ? em_scope_keep(&s, positions(n, d, w->ndim, em_dev(w))) : NULL;
        em_tensor *zero = es_scalar_ex(&s, EM_MUL, at, 0, true, false);
        em_tensor *hit_at = zero ? em_scope_keep(&s, em_where(hit, at, zero)) : NULL;
        idx = hit_at && em_numel(w) ? raw_scan(EM_CUMMAX, hit_at, d) : hit_at ? em_retain(hit_at) : NULL;
        em_set_grad_enabled(was);
    }
    em_tensor *v = idx ? em_gather(w, d, idx) : NULL;
    em_scope_drop(&s);
    if (v && t->ndim == 0) { v = to_0d(v); idx = to_0d(idx); }
    if (!v || !idx) { em_release(v); em_release(idx); return -1; }
    *values = v;
    *indices = idx;
    return 0;
}

int em_cummax(const em_tensor *t, int dim, em_tensor **values, em_tensor **indices)
{
    return cum_extreme("cummax", EM_CUMMAX, t, dim, values, indices);
}

int em_cummin(const em_tensor *t, int dim, em_tensor **values, em_tensor **indices)
{
    return cum_extreme("cummin", EM_CUMMIN, t, dim, values, indices);
}

/* t reversed along dim, recorded (index_select) */
static em_tensor *reverse(const em_tensor *t, int dim)
{
    int64_t n = t->sizes[dim];
    em_tensor *ix = em_arange((double)n, 0, -1, EM_INT64, em_dev(t));
    em_tensor *r = ix ? em_index_select(t, dim, ix) : NULL;
    em_release(ix);
    return r;
}

static em_tensor *rev_logcumsumexp(const em_tensor *t, int dim)
{
    em_scope s = {0};
    em_tensor *a = em_scope_keep(&s, reverse(t, dim));
    em_tensor *b = a ? em_scope_keep(&s, em_logcumsumexp(a, dim)) : NULL;
    return em_scope_finish(&s, b ? em_scope_keep(&s, reverse(b, dim)) : NULL);
}

/* exp(x_k + log sum_{j>=k} exp(log|g_j| - y_j)) for the positive and the
 * negative parts of g, as PyTorch does: every term is at most |g_j| since
 * y_j >= x_k, so nothing overflows. The lowest finite value stands for the
 * log of 0 so that no inf - inf appears. */
static int logcumsumexp_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *x = em_ag_saved(n, 0), *y = em_ag_saved(n, 1);
    if (!x || !y) return -1;
    const em_tensor *g = gout[0];
    if (x->ndim == 0) {     /* one element: y = x */
        gin[0] = em_retain((em_tensor *)g);
        return 0;
    }
    int d = n->dim;
    double lowest = x->dtype == EM_FLOAT64 ? -1.7976931348623157e308 : -3.4028234663852886e38;
    em_scope s = {0};
    em_tensor *ag = es_unary(&s, EM_ABS, g);
    em_tensor *lg = es_unary(&s, EM_LOG, ag);
    em_tensor *part[2] = {NULL, NULL};
    for (int k = 0; k < 2 && lg; k++) {   /* the positive, then the negative part; each step's own scope */
        em_scope step = {0};
        em_tensor *sel = es_scalar_ex(&step, k ? EM_LT : EM_GT, g, 0, true, false);
        em_tensor *off = es_unary(&step, EM_LOGICAL_NOT, sel);
        em_tensor *l = off ? em_scope_keep(&step, em_masked_fill(lg, off, lowest)) : NULL;
        em_tensor *ly = es_sub(&step, l, y);
        em_tensor *c = ly ? em_scope_keep(&step, rev_logcumsumexp(ly, d)) : NULL;
        em_tensor *cx = es_add(&step, c, x);
        part[k] = es_unary(&s, EM_EXP, cx);
        em_scope_drop(&step);
        if (!part[k]) break;
    }
    gin[0] = part[0] && part[1] ? ei_binary(EM_SUB, part[0], part[1]) : NULL;
    em_scope_drop(&s);
    return gin[0] ? 0 : -1;
}

em_tensor *em_logcumsumexp(const em_tensor *t, int dim)
{
    const char *op = "logcumsumexp";
    if (!em_dtype_is_float(t->dtype))
        return em_set_error("%s: expected a floating point dtype, got %s", op, em_dtype_name(t->dtype)), NULL;
    int d = em_normalize_dim(dim, t->ndim, op);
    if (d < 0) return NULL;
    em_tensor *w = at_least_1d(t);
    em_tensor *out = w ? WITHOUT_GRAD(raw_scan(EM_LOGCUMSUMEXP, w, d)) : NULL;
    if (out && t->ndim == 0) out = to_0d(out);
    if (!out || !em_ag_needed1(t)) { em_release(w); return out; }
    em_node *n = em_ag_node("LogcumsumexpBackward", logcumsumexp_backward, 1);
    if (!n) { em_release(w); em_release(out); return NULL; }
    n->dim = d;
    em_ag_input(n, 0, t);
    /* the backward works on the 1-D view of a 0-d input */
    int bad = em_ag_save(n, 0, t, false) || em_ag_save(n, 1, out, true);
    em_release(w);
    if (bad) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

/* ---- unique / unique_consecutive ------------------------------------------------------ */

/* Sorted order of the rows of x [n, m], lexicographic: stable sorts by each
 * column, the last first (1-based, int64 [n]). */
static em_tensor *row_order(const em_tensor *x)
{
    int64_t n = x->sizes[0], m = x->sizes[1];
    em_tensor *perm = em_arange(1, (double)n + 1, 1, EM_INT64, em_dev(x));
    for (int64_t c = m - 1; c >= 0 && perm; c--) {
        em_scope s = {0};   /* this column's temporaries, and the order it refines */
        em_tensor *col = em_scope_keep(&s, em_select(x, 1, c));
        em_tensor *key = col ? em_scope_keep(&s, em_index_select(col, 0, perm)) : NULL;
        em_tensor *sv = NULL, *order = NULL;
        int rc = key ? em_sort(key, 0, false, true, &sv, &order) : -1;
        em_scope_keep(&s, sv), em_scope_keep(&s, order), em_scope_keep(&s, perm);
        perm = rc == 0 ? em_index_select(perm, 0, order) : NULL;
        em_scope_drop(&s);
    }
    return perm;
}

/* Whether each row of rows ([n, m], or [n] of single values) starts a new
 * run: the first row, and every row unlike the one before. bool [n]. */
static em_tensor *run_starts(const em_tensor *rows)
{
    int64_t n = rows->sizes[0];
    em_scope s = {0};
    em_tensor *a = es_narrow(&s, rows, 0, 1, n - 1), *b = a ? es_narrow(&s, rows, 0, 0, n - 1) : NULL;
    em_tensor *ne = es_binary(&s, EM_NE, a, b);
    int one = 1;
    em_tensor *diff = ne && rows->ndim == 2 ? em_scope_keep(&s, em_any(ne, &one, 1, false)) : ne;
    int64_t s1 = 1;
    em_tensor *first = diff ? em_scope_keep(&s, em_full(&s1, 1, 1, EM_BOOL, em_dev(rows))) : NULL;
    em_tensor *parts[2] = {first, diff};
    return em_scope_finish(&s, first ? em_scope_keep(&s, ei_cat(parts, 2, 0)) : NULL);
}

/* The slices of t along d (all of t, flattened, when d < 0) as the rows
 * of x [n, m]: the unique rows, each input row's 1-based run number
 * (inverse) and the runs' lengths (counts) */
static int unique_rows(const em_tensor *t, const em_tensor *moved, const em_tensor *x, bool consecutive, int d,
                       const int *inv_dims, em_tensor **values, em_tensor **inverse, em_tensor **counts)
{
    em_device dev = em_dev(t);
    int64_t n = x->sizes[0];
    em_scope s = {0};
    em_tensor *perm = NULL, *rows = NULL;
    if (consecutive) {
        rows = em_scope_keep(&s, em_retain((em_tensor *)x));
    } else if (d < 0) {
        if (em_sort(x, 0, false, true, &rows, &perm)) return -1;
        em_scope_keep(&s, rows), em_scope_keep(&s, perm);
    } else {
        perm = em_scope_keep(&s, row_order(x));
        rows = perm ? em_scope_keep(&s, em_index_select(x, 0, perm)) : NULL;
    }
    em_tensor *starts = rows ? em_scope_keep(&s, run_starts(rows)) : NULL;
    em_tensor *run = starts ? em_scope_keep(&s, ei_cumsum(starts, 0)) : NULL;    /* each sorted row's run number */
    em_tensor *at = run ? em_scope_keep(&s, em_arange(1, (double)n + 1, 1, EM_INT64, dev)) : NULL;
    em_tensor *firsts = at ? em_scope_keep(&s, em_masked_select(at, starts)) : NULL;   /* the first row of each run */
    if (firsts && d < 0) {
        *values = em_index_select(rows, 0, firsts);
    } else if (firsts) {
        em_tensor *src = perm ? em_scope_keep(&s, em_index_select(perm, 0, firsts)) : firsts;
        em_tensor *picked = src ? em_scope_keep(&s, em_index_select(moved, 0, src)) : NULL;
        em_tensor *back = picked ? em_scope_keep(&s, em_permute(picked, inv_dims, t->ndim)) : NULL;
        *values = back ? em_contiguous(back) : NULL;
    }
    em_tensor *inv = NULL;
    if (*values && !perm) {
        inv = run;
    } else if (*values) {
        em_tensor *z = em_scope_keep(&s, em_zeros(&n, 1, EM_INT64, dev));
        inv = z ? em_scope_keep(&s, em_scatter(z, 0, perm, run)) : NULL;
    }
    *inverse = inv && d < 0 ? em_reshape(inv, t->sizes, t->ndim) : inv ? em_retain(inv) : NULL;
    if (*inverse) {
        int64_t u = em_numel(firsts);
        em_tensor *z = em_scope_keep(&s, em_zeros(&u, 1, EM_INT64, dev));
        em_tensor *ones = z ? em_scope_keep(&s, em_ones(&n, 1, EM_INT64, dev)) : NULL;
        *counts = ones ? ei_scatter_add(z, 0, run, ones) : NULL;
    }
    em_scope_drop(&s);
    return *counts ? 0 : -1;
}

static int unique_impl(const em_tensor *t, bool consecutive, int d, em_tensor **values, em_tensor **inverse,
                       em_tensor **counts)
{
    em_device dev = em_dev(t);
    int64_t n = d < 0 ? em_numel(t) : t->sizes[d], zero = 0;
    em_scope s = {0};
    em_tensor *moved = NULL, *x = NULL;
    int perm_dims[EM_MAX_DIMS], inv_dims[EM_MAX_DIMS];
    if (d < 0) {
        x = em_scope_keep(&s, flat(t));
    } else {
        perm_dims[0] = d;
        for (int k = 0, j = 1; k < t->ndim; k++) if (k != d) perm_dims[j++] = k;
        for (int k = 0; k < t->ndim; k++) inv_dims[perm_dims[k]] = k;
        moved = em_scope_keep(&s, em_permute(t, perm_dims, t->ndim));
        int64_t s2[2] = {n, n ? em_numel(t) / n : 0};
        x = moved ? em_scope_keep(&s, em_reshape(moved, s2, 2)) : NULL;
    }
    int rc = -1;
    if (x && n == 0) {
        *values = d < 0 ? em_empty(&zero, 1, t->dtype, dev) : em_clone(t);
        *inverse = em_empty(d < 0 ? t->sizes : &zero, d < 0 ? t->ndim : 1, EM_INT64, dev);
        *counts = em_empty(&zero, 1, EM_INT64, dev);
        rc = *values && *inverse && *counts ? 0 : -1;
    } else if (x) {
        rc = unique_rows(t, moved, x, consecutive, d, inv_dims, values, inverse, counts);
    }
    em_scope_drop(&s);
    if (rc) {
        em_release(*values); em_release(*inverse); em_release(*counts);
        *values = *inverse = *counts = NULL;
    }
    return rc;
}

int em_unique(const em_tensor *t, bool consecutive, bool has_dim, int dim, em_tensor **values, em_tensor **inverse,
              em_tensor **counts)
{
    const char *op = consecutive ? "unique_consecutive" : "unique";
    *values = *inverse = *counts = NULL;
    int d = -1;
    if (has_dim) {
        if (t->ndim == 0) return em_set_error("%s: a 0-d tensor has no dim to take slices along", op);
        if ((d = em_normalize_dim(dim, t->ndim, op)) < 0) return -1;
    }
    bool was = em_set_grad_enabled(false);    /* unique has no gradient */
    int rc = unique_impl(t, consecutive, d, values, inverse, counts);
    em_set_grad_enabled(was);
    return rc;
}

/* ---- bincount / histc ----------------------------------------------------------------- */

/* Values are positions, 1-based as every index in ember: result[k] counts the value k,
 * for k = 1 .. max(largest value, minlength) (PyTorch: 0-based, max(largest + 1, minlength)). */
em_tensor *em_bincount(const em_tensor *t, const em_tensor *weights, int64_t minlength)
{
    const char *op = "bincount";
    if (t->ndim != 1 || !em_dtype_is_int(t->dtype))
        return em_set_error("%s: expected a 1-D tensor of positive integers (1-based values), got a %s tensor %s", op,
                            em_dtype_name(t->dtype), SHAPE(t)), NULL;
    if (minlength < 0) return em_set_error("%s: minlength must be non-negative, got %lld", op, (long long)minlength), NULL;
    if (weights && (weights->ndim != 1 || weights->sizes[0] != t->sizes[0]))
        return em_set_error("%s: weights %s must be 1-D with the input's length (%s)", op, SHAPE(weights), SHAPE(t)), NULL;
    int64_t len = minlength;
    if (em_numel(t) > 0) {
        em_scope s = {0};
        em_tensor *mn = em_scope_keep(&s, em_amin(t, NULL, 0, false));
        em_tensor *mx = mn ? em_scope_keep(&s, em_amax(t, NULL, 0, false)) : NULL;
        double lo = 0, hi = 0;
        int rc = mx ? em_item(mn, &lo) || em_item(mx, &hi) : -1;
        em_scope_drop(&s);
        if (rc) return NULL;
        if (lo < 1)
            return em_set_error("%s: values are 1-based positions (result[k] counts the value k), so they must be >= 1, "
                                "got %lld in %s", op, (long long)lo, SHAPE(t)), NULL;
        if (hi > len) len = (int64_t)hi;
    }
    em_dtype od = !weights ? EM_INT64 : weights->dtype == EM_FLOAT32 ? EM_FLOAT32 : EM_FLOAT64;
    em_scope s = {0};
    em_tensor *z = em_scope_keep(&s, em_zeros(&len, 1, od, em_dev(t)));
    em_tensor *i = z ? em_scope_keep(&s, em_cast_to(t, EM_INT64)) : NULL;   /* scatter_add's indices are 1-based too */
    em_tensor *src = !i ? NULL
                        : em_scope_keep(&s, weights ? em_to_dtype(weights, od) : em_ones(t->sizes, 1, od, em_dev(t)));
    return em_scope_finish(&s, src ? em_scope_keep(&s, ei_scatter_add(z, 0, i, src)) : NULL);
}

static double round_to(em_dtype d, double v)
{
    switch (d) {
    case EM_FLOAT32: return (float)v;
    case EM_FLOAT16: return em_half_to_float(em_float_to_half((float)v));
    case EM_BFLOAT16: return em_bf16_to_float(em_float_to_bf16((float)v));
    default: return v;
    }
}

em_tensor *em_histc(const em_tensor *t, int64_t bins, double lo, double hi)
{
    const char *op = "histc";
    if (!em_dtype_is_float(t->dtype))
        return em_set_error("%s: expected a floating point dtype, got %s", op, em_dtype_name(t->dtype)), NULL;
    if (bins < 1) return em_set_error("%s: bins must be positive, got %lld", op, (long long)bins), NULL;
    if (isnan(lo) || isnan(hi) || lo > hi)
        return em_set_error("%s: max (%g) must be larger than or equal to min (%g)", op, hi, lo), NULL;
    /* the range rounded to the input's dtype, as PyTorch's bin edges are */
    lo = round_to(t->dtype, lo);
    hi = round_to(t->dtype, hi);
    if (lo == hi && em_numel(t) > 0) {
        em_scope s = {0};
        em_tensor *mn = em_scope_keep(&s, em_amin(t, NULL, 0, false));
        em_tensor *mx = mn ? em_scope_keep(&s, em_amax(t, NULL, 0, false)) : NULL;
        int rc = mx ? em_item(mn, &lo) || em_item(mx, &hi) : -1;
        em_scope_drop(&s);
        if (rc) return NULL;
    }
    if (lo == hi) { lo -= 1; hi += 1; }
    if (!isfinite(lo) || !isfinite(hi))
        return em_set_error("%s: the range [%g, %g] is not finite", op, lo, hi), NULL;
    bool was = em_set_grad_enabled(false);
    em_scope s = {0};
    em_tensor *ge = es_scalar(&s, EM_GE, t, lo);
    em_tensor *le = ge ? es_scalar(&s, EM_LE, t, hi) : NULL;
    em_tensor *in = es_binary(&s, EM_LOGICAL_AND, ge, le);                   /* in range (not NaN) */
    /* PyTorch's bin: (x - min) * bins / (max - min), in the input's dtype */
    em_tensor *x0 = in ? es_scalar(&s, EM_SUB, t, lo) : NULL;
    em_tensor *xb = es_scalar_ex(&s, EM_MUL, x0, (double)bins, true, false);
    em_tensor *bin = es_scalar(&s, EM_DIV, xb, hi - lo);
    em_tensor *out = bin ? es_unary(&s, EM_LOGICAL_NOT, in) : NULL;
    em_tensor *bin0 = out ? em_scope_keep(&s, em_masked_fill(bin, out, 0)) : NULL;
    em_tensor *fl = es_unary(&s, EM_FLOOR, bin0);
    double zero = 0, last = (double)(bins - 1);
    em_tensor *cl = fl ? em_scope_keep(&s, em_clamp(fl, &zero, &last)) : NULL;   /* max itself: the last bin */
    em_tensor *i = cl ? em_scope_keep(&s, em_cast_to(cl, EM_INT64)) : NULL;
    em_tensor *i1 = es_scalar_ex(&s, EM_ADD, i, 1, true, false);
    em_tensor *fi = i1 ? em_scope_keep(&s, flat(i1)) : NULL;
    em_tensor *w = fi ? em_scope_keep(&s, em_cast_to(in, t->dtype)) : NULL;
    em_tensor *fw = w ? em_scope_keep(&s, flat(w)) : NULL;
    em_tensor *z = fw ? em_scope_keep(&s, em_zeros(&bins, 1, t->dtype, em_dev(t))) : NULL;
    em_tensor *r = em_scope_finish(&s, z ? em_scope_keep(&s, ei_scatter_add(z, 0, fi, fw)) : NULL);
    em_set_grad_enabled(was);
    return r;
}

/* ---- searchsorted / bucketize --------------------------------------------------------- */

/* PyTorch's binary search, run on every value at once: lo and hi bound each
 * value's place, and each round compares the boundary at mid = (lo + hi) / 2
 * with the value, moving lo past mid where !(b >= v) (left) or !(b > v)
 * (right), else hi to mid. floor(log2 n) + 1 rounds settle every value, with
 * O(numel(values)) memory; the path is PyTorch's, so a NaN in the sequence
 * (which the predicates put nowhere in particular) gives PyTorch's result. */
/* One round: lo and hi (owned) are replaced by the next round's bounds. */
static int search_round(const em_tensor *sorted, const em_tensor *v, int64_t n, bool right, em_tensor **lo,
                        em_tensor **hi)
{
    em_scope s = {0};
    em_tensor *active = es_binary(&s, EM_LT, *lo, *hi);
    em_tensor *mid = es_scalar_ex(&s, EM_BITWISE_RSHIFT, es_add(&s, *lo, *hi), 1, true, false);
    em_tensor *mid1 = es_scalar_ex(&s, EM_ADD, mid, 1, true, false);
    /* gather's positions are 1-based; a settled value (lo == hi == n) reads
     * the last boundary and ignores it */
    em_tensor *at = es_scalar_ex(&s, EM_MINIMUM, mid1, (double)n, true, false);
    em_tensor *b = at ? em_scope_keep(&s, em_gather(sorted, v->ndim - 1, at)) : NULL;
    em_tensor *right_of = es_unary(&s, EM_LOGICAL_NOT, es_binary(&s, right ? EM_GT : EM_GE, b, v));
    em_tensor *up = es_binary(&s, EM_LOGICAL_AND, active, right_of);
    em_tensor *down = es_binary(&s, EM_LOGICAL_AND, active, es_unary(&s, EM_LOGICAL_NOT, right_of));
    em_tensor *new_lo = up ? em_where(up, mid1, *lo) : NULL;
    em_tensor *new_hi = down && new_lo ? em_where(down, mid, *hi) : NULL;
    em_scope_drop(&s);
    if (!new_hi) {
        em_release(new_lo);
        return -1;
    }
    em_release(*lo);
    em_release(*hi);
    *lo = new_lo;
    *hi = new_hi;
    return 0;
}

em_tensor *em_searchsorted(const em_tensor *seq, const em_tensor *values, bool right, const em_tensor *sorter,
                           bool out_int32)
{
    const char *op = "searchsorted";
    if (seq->ndim == 0) return em_set_error("%s: the sorted sequence must have at least 1 dim, got %s", op, SHAPE(seq)), NULL;
    if (seq->ndim > 1) {
        bool same = values->ndim == seq->ndim;
        for (int k = 0; same && k < seq->ndim - 1; k++) same = values->sizes[k] == seq->sizes[k];
        if (!same)
            return em_set_error("%s: the sorted sequence %s and the values %s must have the same leading dims "
                                "(all but the last), or the sequence must be 1-D", op, SHAPE(seq), SHAPE(values)), NULL;
    }
    if (seq->dtype == EM_BOOL || values->dtype == EM_BOOL)
        return em_set_error("%s: bool tensors are not supported (%s and %s)", op, em_dtype_name(seq->dtype),
                            em_dtype_name(values->dtype)), NULL;
    if (sorter) {
        bool same = sorter->ndim == seq->ndim && sorter->dtype == EM_INT64;
        for (int k = 0; same && k < seq->ndim; k++) same = sorter->sizes[k] == seq->sizes[k];
        if (!same)
            return em_set_error("%s: sorter (%s %s) must be int64 with the sorted sequence's shape %s", op,
                                em_dtype_name(sorter->dtype), SHAPE(sorter), SHAPE(seq)), NULL;
    }
    int last = seq->ndim - 1;
    int64_t n = seq->sizes[last];
    em_device dev = values->storage->device;
    bool was = em_set_grad_enabled(false);
    em_scope s = {0};
    const em_tensor *sorted = sorter ? em_scope_keep(&s, em_gather(seq, last, sorter)) : seq;
    /* a 1-D sequence serves values of any shape: search their flat list */
    int64_t m = em_numel(values);
    const em_tensor *v = !sorted ? NULL : seq->ndim > 1 ? values : em_scope_keep(&s, em_reshape(values, &m, 1));
    em_tensor *lo = v ? em_zeros(v->sizes, v->ndim, EM_INT64, dev) : NULL;
    em_tensor *hi = v ? em_full(v->sizes, v->ndim, (double)n, EM_INT64, dev) : NULL;
    bool ok = lo && hi;
    for (int64_t span = n; ok && span > 0; span >>= 1) ok = search_round(sorted, v, n, right, &lo, &hi) == 0;
    em_release(hi);
    if (!ok) {
        em_release(lo);
        lo = NULL;
    }
    em_scope_keep(&s, lo);
    em_tensor *r = es_scalar_ex(&s, EM_ADD, lo, 1, true, false);   /* 1-based */
    if (r && seq->ndim == 1) r = em_scope_keep(&s, em_reshape(r, values->sizes, values->ndim));
    if (r && out_int32) r = em_scope_keep(&s, em_cast_to(r, EM_INT32));
    r = em_scope_finish(&s, r);
    em_set_grad_enabled(was);
    return r;
}

em_tensor *em_bucketize(const em_tensor *values, const em_tensor *boundaries, bool right, bool out_int32)
{
    if (boundaries->ndim != 1)
        return em_set_error("bucketize: boundaries must be 1-D, got %s", SHAPE(boundaries)), NULL;
    return em_searchsorted(boundaries, values, right, NULL, out_int32);
}
