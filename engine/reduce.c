/* reduce.c — reductions (sum, prod, max/min, all/any, mean, var, std, norm,
 * logsumexp), softmax and scans.
 *
 * The primitive reductions permute the reduced dims to the end and call the
 * backend's `reduce` family once. mean, var, std, norm and logsumexp are
 * composed from those and elementwise ops, so every backend gets them (and,
 * later, their gradients) without new kernels.
 *
 * Result dtypes follow PyTorch: sum/prod/cumsum/cumprod of integer or bool
 * tensors give int64; mean/var/std/norm/softmax need a floating dtype;
 * logsumexp promotes integers to the default float dtype; all/any give bool;
 * max/min keep the input dtype. float16/bfloat16 compositions compute in
 * float32 and cast back. */
#include "internal.h"
#include "autograd.h"

#include <math.h>

/* Fills mask[0..EM_MAX_DIMS) (caller's array) with the reduced dims of t and
 * returns how many there are, or -1 with an error naming op. ndims == 0
 * selects every dim. A 0-d tensor accepts dim 0 / -1 and has nothing to
 * reduce, so the count is 0 there: 0 is not an error. */
int em_dims_mask(const em_tensor *t, const int *dims, int ndims, const char *op, bool *mask)
{
    for (int d = 0; d < EM_MAX_DIMS; d++) mask[d] = ndims == 0 && d < t->ndim;
    if (ndims == 0) return t->ndim;
    if (ndims < 0 || ndims > EM_MAX_DIMS || !dims)
        return em_set_error("%s: invalid list of %d dims", op, ndims);
    bool seen[EM_MAX_DIMS] = {false};
    int count = 0;
    for (int i = 0; i < ndims; i++) {
        int d = em_normalize_dim(dims[i], t->ndim, op);
        if (d < 0) return -1;
        if (seen[d]) return em_set_error("%s: dim %d appears multiple times in the list of dims", op, d + 1);
        seen[d] = true;
        if (t->ndim > 0) { mask[d] = true; count++; }
    }
    return count;
}

/* float16/bfloat16 compositions compute in float32 and cast back. These
 * casts, into float32 and back (es_to: em_to_dtype), are recorded: a half
 * input that requires grad keeps its gradient. */
static bool is_half(em_dtype d) { return d == EM_FLOAT16 || d == EM_BFLOAT16; }

static em_dtype acc_dtype(em_dtype d) { return em_dtype_is_float(d) ? d : EM_INT64; }

static int need_float(const char *op, const em_tensor *t)
{
    if (em_dtype_is_float(t->dtype)) return 0;
    return em_set_error("%s: expected a floating point dtype, got %s", op, em_dtype_name(t->dtype));
}

/* Sizes of the result with keepdim (kept[] has t->ndim entries) and without
 * (out[], returns its ndim). */
static int result_shape(const em_tensor *t, const bool *mask, int64_t *kept, int64_t *out)
{
    int n = 0;
    for (int d = 0; d < t->ndim; d++) {
        kept[d] = mask[d] ? 1 : t->sizes[d];
        if (!mask[d]) out[n++] = t->sizes[d];
    }
    return n;
}

/* Number of elements each output reduces over, after checking dims. */
static int reduced_count(const em_tensor *t, const int *dims, int ndims, const char *op, int64_t *count)
{
    bool mask[EM_MAX_DIMS];
    if (em_dims_mask(t, dims, ndims, op, mask) < 0) return -1;
    *count = 1;
    for (int d = 0; d < t->ndim; d++) if (mask[d]) *count *= t->sizes[d];
    return 0;
}

/* Reshapes a keepdim-shaped result r (dropping it) to the shape without the
 * reduced dims. */
static em_tensor *drop_reduced(em_tensor *r, const em_tensor *t, const int *dims, int ndims)
{
    if (!r) return NULL;
    bool mask[EM_MAX_DIMS];
    int64_t kept[EM_MAX_DIMS], out[EM_MAX_DIMS];
    if (em_dims_mask(t, dims, ndims, "reduce", mask) < 0) { em_release(r); return NULL; }
    int n = result_shape(t, mask, kept, out);
    em_tensor *v = em_reshape(r, out, n);
    em_release(r);
    return v;
}

/* The one call into the backend's reduce family. With idx_out, also returns
 * the 1-based indices of the extremes (max/min). */
static em_tensor *reduce_op(const char *name, em_reduce_op op, const em_tensor *t, const int *dims,
                            int ndims, bool keepdim, em_dtype odt, em_tensor **idx_out)
{
    bool mask[EM_MAX_DIMS];
    int nred = em_dims_mask(t, dims, ndims, name, mask);
    if (nred < 0) return NULL;
    int perm[EM_MAX_DIMS];
    int64_t kept[EM_MAX_DIMS], osz[EM_MAX_DIMS];
    int nk = result_shape(t, mask, kept, osz);
    for (int d = 0, k = 0; d < t->ndim; d++) if (!mask[d]) perm[k++] = d;
    for (int d = 0, k = nk; d < t->ndim; d++) {
        if (!mask[d]) continue;
        /* max/min have no identity, so an empty reduction has no answer */
        if ((op == EM_RMAX || op == EM_RMIN) && t->sizes[d] == 0)
            return em_set_error("%s: cannot reduce over an empty dimension (dimension %d of %s)",
                                name, d + 1, SHAPE(t)), NULL;
        perm[k++] = d;
    }
    em_tensor *p = em_permute(t, perm, t->ndim);
    em_tensor *out = p ? em_empty(osz, nk, odt, em_dev(t)) : NULL;
    em_tensor *idx = out && idx_out ? em_empty(osz, nk, EM_INT64, em_dev(t)) : NULL;
    if (!out || (idx_out && !idx) || em_be(t)->reduce(op, out, idx, p, nred)) {
        em_release(p);
        em_release(out);
        em_release(idx);
        return NULL;
    }
    em_release(p);
    if (keepdim && nk != t->ndim) {
        em_tensor *v = em_view(out, kept, t->ndim);
        em_release(out);
        out = v;
        if (idx) {
            em_tensor *w = v ? em_view(idx, kept, t->ndim) : NULL;
            em_release(idx);
            idx = w;
        }
        if (!out || (idx_out && !idx)) { em_release(out); em_release(idx); return NULL; }
    }
    if (idx_out) *idx_out = idx;
    return out;
}

/* ---- primitive reductions ------------------------------------------------ */

em_tensor *ei_sum(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    if (em_ag_needed1(t)) return em_ag_reduce(0, t, dims, ndims, keepdim);
    return reduce_op("sum", EM_RSUM, t, dims, ndims, keepdim, acc_dtype(t->dtype), NULL);
}

em_tensor *em_sum(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    EM_AUTOCAST(EM_AC_FP32_CUDA, ei_sum(EM_AC_ARG(0), dims, ndims, keepdim), t);
    return ei_sum(t, dims, ndims, keepdim);
}

em_tensor *em_sum_dtype(const em_tensor *t, const int *dims, int ndims, bool keepdim, em_dtype d)
{
    if ((unsigned)d >= EM_NDTYPES) return em_set_error("sum: invalid dtype %d", (int)d), NULL;
    if (em_ag_needed1(t) && em_dtype_is_float(d)) {     /* a recorded cast, then a recorded sum */
        em_tensor *c = em_to_dtype(t, d);
        em_tensor *r = c ? ei_sum(c, dims, ndims, keepdim) : NULL;
        em_release(c);
        return r;
    }
    /* PyTorch casts the input to d first. The kernel converts on the fly,
     * which is the same thing except when the cast itself would lose
     * something per element (float to int, anything to bool or narrower). */
    bool direct = d == t->dtype ||
                  (!em_dtype_is_float(t->dtype) && (d == EM_INT64 || d == EM_FLOAT32 || d == EM_FLOAT64));
    if (direct) return reduce_op("sum", EM_RSUM, t, dims, ndims, keepdim, d, NULL);
    em_tensor *c = em_cast_to(t, d);
    if (!c) return NULL;
    em_tensor *r = reduce_op("sum", EM_RSUM, c, dims, ndims, keepdim, d, NULL);
    em_release(c);
    return r;
}

em_tensor *ei_prod(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    if (em_ag_needed1(t)) return em_ag_reduce(3, t, dims, ndims, keepdim);
    return reduce_op("prod", EM_RPROD, t, dims, ndims, keepdim, acc_dtype(t->dtype), NULL);
}

em_tensor *em_prod(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    EM_AUTOCAST(EM_AC_FP32, ei_prod(EM_AC_ARG(0), dims, ndims, keepdim), t);
    return ei_prod(t, dims, ndims, keepdim);
}

em_tensor *em_amax(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    if (em_ag_needed1(t)) return em_ag_reduce(1, t, dims, ndims, keepdim);
    return reduce_op("amax", EM_RMAX, t, dims, ndims, keepdim, t->dtype, NULL);
}

em_tensor *em_amin(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    if (em_ag_needed1(t)) return em_ag_reduce(2, t, dims, ndims, keepdim);
    return reduce_op("amin", EM_RMIN, t, dims, ndims, keepdim, t->dtype, NULL);
}

/* all/any give bool, except on uint8, where PyTorch keeps uint8 (0 or 1) */
static em_tensor *logical_reduce(const char *name, em_reduce_op op, const em_tensor *t, const int *dims, int ndims,
                                 bool keepdim)
{
    em_tensor *r = reduce_op(name, op, t, dims, ndims, keepdim, EM_BOOL, NULL);
    if (!r || t->dtype != EM_UINT8) return r;
    em_tensor *u = em_cast_to(r, EM_UINT8);
    em_release(r);
    return u;
}

em_tensor *em_all(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    return logical_reduce("all", EM_RALL, t, dims, ndims, keepdim);
}

em_tensor *em_any(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    return logical_reduce("any", EM_RANY, t, dims, ndims, keepdim);
}

static int extreme_dim(const char *name, em_reduce_op op, const em_tensor *t, int dim, bool keepdim,
                       em_tensor **values, em_tensor **indices)
{
    *values = NULL;
    *indices = NULL;
    em_tensor *idx = NULL;
    em_tensor *v = reduce_op(name, op, t, &dim, 1, keepdim, t->dtype, &idx);
    if (!v) return -1;
    if (em_ag_needed1(t)) {
        v = em_ag_dim_values(t, t->ndim ? em_normalize_dim(dim, t->ndim, name) : 0, keepdim, idx, v);
        if (!v) { em_release(idx); return -1; }
    }
    *values = v;
    *indices = idx;
    return 0;
}

int em_max_dim(const em_tensor *t, int dim, bool keepdim, em_tensor **values, em_tensor **indices)
{
    return extreme_dim("max", EM_RMAX, t, dim, keepdim, values, indices);
}

int em_min_dim(const em_tensor *t, int dim, bool keepdim, em_tensor **values, em_tensor **indices)
{
    return extreme_dim("min", EM_RMIN, t, dim, keepdim, values, indices);
}

static em_tensor *arg_extreme(const char *name, em_reduce_op op, const em_tensor *t, int dim,
                              bool keepdim, bool flat)
{
    /* all dims in their own order: the kernel's position within the reduced
     * dims is then the row-major index into the flattened tensor */
    flat = flat || dim < -EM_MAX_DIMS;
    em_tensor *idx = NULL;
    em_tensor *v = reduce_op(name, op, t, flat ? NULL : &dim, flat ? 0 : 1, keepdim, t->dtype, &idx);
    if (!v) return NULL;
    em_release(v);
    return idx;
}

em_tensor *em_argmax(const em_tensor *t, int dim, bool keepdim, bool flat)
{
    return arg_extreme("argmax", EM_RMAX, t, dim, keepdim, flat);
}

em_tensor *em_argmin(const em_tensor *t, int dim, bool keepdim, bool flat)
{
    return arg_extreme("argmin", EM_RMIN, t, dim, keepdim, flat);
}

/* ---- composed reductions ------------------------------------------------- */

em_tensor *em_mean(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    if (need_float("mean", t)) return NULL;
    int64_t n;
    if (reduced_count(t, dims, ndims, "mean", &n)) return NULL;
    if (is_half(t->dtype)) {
        em_scope s = {0};
        em_tensor *f = es_to(&s, t, EM_FLOAT32);
        em_tensor *r = f ? em_scope_keep(&s, em_mean(f, dims, ndims, keepdim)) : NULL;
        return em_scope_finish(&s, es_to(&s, r, t->dtype));
    }
    em_tensor *s = ei_sum(t, dims, ndims, keepdim);
    if (!s) return NULL;
    /* an empty reduction divides 0 by 0: NaN, as in PyTorch */
    em_tensor *r = ei_binary_scalar(EM_DIV, s, (double)n, false, false);
    em_release(s);
    return r;
}

static em_tensor *variance(const char *name, const em_tensor *t, const int *dims, int ndims,
                           double correction, bool keepdim, bool take_sqrt)
{
    if (need_float(name, t)) return NULL;
    int64_t n;
    if (reduced_count(t, dims, ndims, name, &n)) return NULL;
    if (is_half(t->dtype)) {
        em_scope s = {0};
        em_tensor *f = es_to(&s, t, EM_FLOAT32);
        em_tensor *r = f ? em_scope_keep(&s, variance(name, f, dims, ndims, correction, keepdim, take_sqrt)) : NULL;
        return em_scope_finish(&s, es_to(&s, r, t->dtype));
    }
    double div = (double)n - correction;
    if (div <= 0 && em_ag_needed1(t)) {
        em_tensor *out = WITHOUT_GRAD(variance(name, t, dims, ndims, correction, keepdim, take_sqrt));
        return out ? em_ag_variance(t, out, dims, ndims, div, keepdim, take_sqrt) : NULL;
    }
    /* two passes (mean, then squared deviations): no cancellation trouble */
    em_scope s = {0};
    em_tensor *m = em_scope_keep(&s, em_mean(t, dims, ndims, true));
    em_tensor *dev = es_sub(&s, t, m);
    em_tensor *sq = es_unary(&s, EM_SQUARE, dev);
    em_tensor *sum = es_sum(&s, sq, dims, ndims, keepdim);
    /* PyTorch clamps the divisor at 0: too few elements give inf or NaN */
    em_tensor *v = es_scalar(&s, EM_DIV, sum, div > 0 ? div : 0);
    return em_scope_finish(&s, v && take_sqrt ? em_scope_keep(&s, em_root(v, 2)) : v);
}

em_tensor *em_var(const em_tensor *t, const int *dims, int ndims, double correction, bool keepdim)
{
    return variance("var", t, dims, ndims, correction, keepdim, false);
}

em_tensor *em_std(const em_tensor *t, const int *dims, int ndims, double correction, bool keepdim)
{
    return variance("std", t, dims, ndims, correction, keepdim, true);
}

em_tensor *ei_norm(const em_tensor *t, double p, const int *dims, int ndims, bool keepdim)
{
    if (need_float("norm", t)) return NULL;
    if (isnan(p)) return em_set_error("norm: the order p must be a number, got nan"), NULL;
    int64_t n;
    if (reduced_count(t, dims, ndims, "norm", &n)) return NULL;
    if (is_half(t->dtype)) {
        em_scope s = {0};
        em_tensor *f = es_to(&s, t, EM_FLOAT32);
        em_tensor *r = f ? em_scope_keep(&s, ei_norm(f, p, dims, ndims, keepdim)) : NULL;
        return em_scope_finish(&s, es_to(&s, r, t->dtype));
    }
    if (p == 0) {   /* the number of non-zero elements */
        em_tensor *nz = ei_binary_scalar(EM_NE, t, 0, false, false);
        if (!nz) return NULL;
        em_tensor *r = em_sum_dtype(nz, dims, ndims, keepdim, t->dtype);
        em_release(nz);
        return r;
    }
    em_scope s = {0};
    if (p == 2) {
        em_tensor *sum = es_sum(&s, es_unary(&s, EM_SQUARE, t), dims, ndims, keepdim);
        return em_scope_finish(&s, sum ? em_scope_keep(&s, em_root(sum, 2)) : NULL);
    }
    em_tensor *a = es_unary(&s, EM_ABS, t);
    if (!a) return NULL;
    em_tensor *r;
    if (isinf(p)) {
        r = em_scope_keep(&s, p > 0 ? em_amax(a, dims, ndims, keepdim) : em_amin(a, dims, ndims, keepdim));
    } else if (p == 1) {
        r = es_sum(&s, a, dims, ndims, keepdim);
    } else {
        em_tensor *sum = es_sum(&s, es_scalar(&s, EM_POW, a, p), dims, ndims, keepdim);
        r = sum ? em_scope_keep(&s, em_root(sum, p)) : NULL;
    }
    return em_scope_finish(&s, r);
}

em_tensor *em_norm(const em_tensor *t, double p, const int *dims, int ndims, bool keepdim)
{
    EM_AUTOCAST(EM_AC_FP32_CUDA, ei_norm(EM_AC_ARG(0), p, dims, ndims, keepdim), t);
    return ei_norm(t, p, dims, ndims, keepdim);
}

em_tensor *ei_logsumexp(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    if (!em_dtype_is_float(t->dtype) || is_half(t->dtype)) {
        em_dtype d = is_half(t->dtype) ? EM_FLOAT32 : em_default_dtype();
        em_scope s = {0};
        em_tensor *f = es_to(&s, t, d);
        em_tensor *r = f ? em_scope_keep(&s, ei_logsumexp(f, dims, ndims, keepdim)) : NULL;
        return em_scope_finish(&s, is_half(t->dtype) ? es_to(&s, r, t->dtype) : r);
    }
    bool mask[EM_MAX_DIMS];
    if (em_dims_mask(t, dims, ndims, "logsumexp", mask) < 0) return NULL;
    int64_t kept[EM_MAX_DIMS], osz[EM_MAX_DIMS], n = 1;
    int nk = result_shape(t, mask, kept, osz);
    for (int d = 0; d < t->ndim; d++) if (mask[d]) n *= t->sizes[d];
    if (n == 0)     /* log of an empty sum */
        return keepdim ? em_full(kept, t->ndim, -INFINITY, t->dtype, em_dev(t))
                       : em_full(osz, nk, -INFINITY, t->dtype, em_dev(t));
    /* Shift by the max so exp cannot overflow. An infinite max (a row of all
     * -inf, or a +inf) would give inf - inf = NaN, so it shifts by 0 instead:
     * the row then yields -inf or +inf as it should. */
    em_scope s = {0};
    em_tensor *m = em_scope_keep(&s, reduce_op("logsumexp", EM_RMAX, t, dims, ndims, true, t->dtype, NULL));
    em_tensor *am = es_unary(&s, EM_ABS, m);
    em_tensor *inf = es_scalar(&s, EM_EQ, am, INFINITY);
    em_tensor *shift = inf ? em_scope_keep(&s, em_masked_fill(m, inf, 0)) : NULL;
    em_tensor *x = es_sub(&s, t, shift);
    em_tensor *e = es_unary(&s, EM_EXP, x);
    em_tensor *sum = es_sum(&s, e, dims, ndims, true);
    em_tensor *l = es_unary(&s, EM_LOG, sum);
    em_tensor *r = em_scope_finish(&s, es_add(&s, l, shift));
    return keepdim ? r : drop_reduced(r, t, dims, ndims);
}

em_tensor *em_logsumexp(const em_tensor *t, const int *dims, int ndims, bool keepdim)
{
    EM_AUTOCAST(EM_AC_FP32_CUDA, ei_logsumexp(EM_AC_ARG(0), dims, ndims, keepdim), t);
    return ei_logsumexp(t, dims, ndims, keepdim);
}

/* ---- softmax and scans --------------------------------------------------- */

static em_tensor *softmax_op(const char *name, em_softmax_op op, const em_tensor *t, int dim)
{
    if (need_float(name, t)) return NULL;
    dim = em_normalize_dim(dim, t->ndim, name);
    if (dim < 0) return NULL;
    if (t->ndim == 0) {     /* one row of one element */
        int64_t one[1] = {1};
        em_scope s = {0};
        em_tensor *v = em_scope_keep(&s, em_reshape(t, one, 1));
        em_tensor *r = v ? em_scope_keep(&s, softmax_op(name, op, v, 0)) : NULL;
        return em_scope_finish(&s, r ? em_scope_keep(&s, em_reshape(r, one, 0)) : NULL);
    }
    em_tensor *out = em_empty(t->sizes, t->ndim, t->dtype, em_dev(t));
    if (!out) return NULL;
    if (em_be(t)->softmax(op, out, t, dim)) { em_release(out); return NULL; }
    return out;
}

em_tensor *ei_softmax(const em_tensor *t, int dim)
{
    if (em_ag_needed1(t)) return em_ag_softmax(EM_SOFTMAX, t, dim);
    return softmax_op("softmax", EM_SOFTMAX, t, dim);
}

em_tensor *em_softmax(const em_tensor *t, int dim)
{
    EM_AUTOCAST(EM_AC_FP32_CUDA, ei_softmax(EM_AC_ARG(0), dim), t);
    return ei_softmax(t, dim);
}

em_tensor *ei_log_softmax(const em_tensor *t, int dim)
{
    if (em_ag_needed1(t)) return em_ag_softmax(EM_LOG_SOFTMAX, t, dim);
    return softmax_op("log_softmax", EM_LOG_SOFTMAX, t, dim);
}

em_tensor *em_log_softmax(const em_tensor *t, int dim)
{
    EM_AUTOCAST(EM_AC_FP32_CUDA, ei_log_softmax(EM_AC_ARG(0), dim), t);
    return ei_log_softmax(t, dim);
}

static em_tensor *scan_op(const char *name, em_scan_op op, const em_tensor *t, int dim)
{
    dim = em_normalize_dim(dim, t->ndim, name);
    if (dim < 0) return NULL;
    /* the scan kernel keeps one dtype; integers accumulate in int64 */
    em_tensor *src = em_cast_to(t, acc_dtype(t->dtype));
    if (!src) return NULL;
    em_tensor *out = em_empty(src->sizes, src->ndim, src->dtype, em_dev(src));
    if (!out || em_be(src)->scan(op, out, src, dim)) {
        em_release(out);
        em_release(src);
        return NULL;
    }
    em_release(src);
    return out;
}

em_tensor *ei_cumsum(const em_tensor *t, int dim)
{
    if (em_ag_needed1(t)) return em_ag_cumsum(t, dim);
    return scan_op("cumsum", EM_CUMSUM, t, dim);
}

em_tensor *em_cumsum(const em_tensor *t, int dim)
{
    EM_AUTOCAST(EM_AC_FP32_CUDA, ei_cumsum(EM_AC_ARG(0), dim), t);
    return ei_cumsum(t, dim);
}

em_tensor *ei_cumprod(const em_tensor *t, int dim)
{
    if (em_ag_needed1(t)) return em_ag_cumprod(t, dim);
    return scan_op("cumprod", EM_CUMPROD, t, dim);
}

em_tensor *em_cumprod(const em_tensor *t, int dim)
{
    EM_AUTOCAST(EM_AC_FP32_CUDA, ei_cumprod(EM_AC_ARG(0), dim), t);
    return ei_cumprod(t, dim);
}
