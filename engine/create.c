/* create.c — tensors made from sizes and values: full/zeros/ones, ranges,
 * eye, and tensors built from host values. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

em_tensor *em_full(const int64_t *sizes, int ndim, double value, em_dtype d, em_device dev)
{
    if (em_check_value_fits("full", value, d)) return NULL;
    em_tensor *t = em_empty(sizes, ndim, d, dev);
    if (!t) return NULL;
    if (em_be(t)->fill(t, value)) { em_release(t); return NULL; }
    return t;
}

em_tensor *em_zeros(const int64_t *sizes, int ndim, em_dtype d, em_device dev)
{
    return em_full(sizes, ndim, 0.0, d, dev);
}

em_tensor *em_ones(const int64_t *sizes, int ndim, em_dtype d, em_device dev)
{
    return em_full(sizes, ndim, 1.0, d, dev);
}

em_tensor *em_scalar(double value, em_dtype d, em_device dev)
{
    return em_full(NULL, 0, value, d, dev);
}

int em_fill_(em_tensor *t, double value)
{
    if (em_grad_enabled() && t->requires_grad)
        return em_set_error("fill_: in-place operation on a tensor that requires grad; use ember.no_grad");
    if (em_check_value_fits("fill_", value, t->dtype)) return -1;
    if (em_be(t)->fill(t, value)) return -1;
    em_bump_version(t);
    return 0;
}

em_tensor *em_arange(double start, double end, double step, em_dtype d, em_device dev)
{
    if (step == 0) return em_set_error("arange: step must be non-zero"), NULL;
    if (!isfinite(start) || !isfinite(end) || !isfinite(step))
        return em_set_error("arange: start, end and step must be finite (got %g, %g, %g)", start, end, step), NULL;
    if ((step > 0 && end < start) || (step < 0 && end > start))
        return em_set_error("arange: upper bound and step have inconsistent signs (start %g, end %g, step %g)",
                            start, end, step), NULL;
    double n = ceil((end - start) / step);
    if (n > 1e12) return em_set_error("arange: %g elements is too many", n), NULL;
    int64_t len = (int64_t)n;
    em_tensor *t = em_empty(&len, 1, d, dev);
    if (!t) return NULL;
    if (em_be(t)->arange(t, start, step)) { em_release(t); return NULL; }
    return t;
}

em_tensor *em_linspace(double start, double end, int64_t steps, em_dtype d, em_device dev)
{
    if (steps < 0) return em_set_error("linspace: number of steps must be non-negative, got %lld", (long long)steps), NULL;
    em_tensor *t = em_empty(&steps, 1, d, dev);
    if (!t || steps == 0) return t;
    if (steps == 1) {   /* one point: start, as PyTorch (the fill below would give end) */
        if (em_be(t)->fill(t, start)) { em_release(t); return NULL; }
        return t;
    }
    double step = steps > 1 ? (end - start) / (double)(steps - 1) : 0.0;
    /* PyTorch fills the second half backwards from `end` so that the last
     * element is exactly `end`; do the same with two arange fills. */
    int64_t half = steps / 2;
    em_tensor *lo = em_narrow(t, 0, 0, half), *hi = em_narrow(t, 0, half, steps - half);
    int rc = (!lo || !hi) ? -1 : 0;
    if (!rc && half > 0) rc = em_be(t)->arange(lo, start, step);
    if (!rc) rc = em_be(t)->arange(hi, end - (double)(steps - half - 1) * step, step);
    em_release(lo);
    em_release(hi);
    if (rc) { em_release(t); return NULL; }
    return t;
}

em_tensor *em_eye(int64_t n, int64_t m, em_dtype d, em_device dev)
{
    if (n < 0 || m < 0) return em_set_error("eye: sizes must be non-negative, got %lld x %lld", (long long)n, (long long)m), NULL;
    int64_t sizes[2] = {n, m};
    em_tensor *t = em_zeros(sizes, 2, d, dev);
    if (!t) return NULL;
    em_tensor *diag = em_diagonal(t);
    int rc = diag ? em_be(t)->fill(diag, 1.0) : -1;
    em_release(diag);
    if (rc) { em_release(t); return NULL; }
    return t;
}

em_tensor *em_from_host(const int64_t *sizes, int ndim, em_dtype d, const double *fvals, const int64_t *ivals)
{
    em_device cpu = {EM_CPU, 0};
    em_tensor *t = em_empty(sizes, ndim, d, cpu);
    if (!t) return NULL;
    int64_t n = em_numel(t);
    /* stage the values in float64 / int64 tensors and let the cast kernel convert */
    em_tensor *src = em_empty(sizes, ndim, fvals ? EM_FLOAT64 : EM_INT64, cpu);
    if (!src) { em_release(t); return NULL; }
    memcpy(em_data_ptr(src), fvals ? (const void *)fvals : (const void *)ivals, (size_t)n * 8);
    int rc = em_be(t)->cast(t, src);
    em_release(src);
    if (rc) { em_release(t); return NULL; }
    return t;
}

/* base ** linspace(start, end, steps), computed in float64 and then cast,
 * so integer dtypes get the truncated powers. */
em_tensor *em_logspace(double start, double end, int64_t steps, double base, em_dtype d, em_device dev)
{
    if (steps < 0) return em_set_error("logspace: number of steps must be non-negative, got %lld", (long long)steps), NULL;
    em_scope s = {0};
    em_tensor *e = em_scope_keep(&s, em_linspace(start, end, steps, EM_FLOAT64, dev));
    em_tensor *p = es_scalar_ex(&s, EM_POW, e, base, false, true);
    return em_scope_finish(&s, p ? em_scope_keep(&s, em_cast_to(p, d)) : NULL);
}

/* The 1-based coordinates [2, N] of the lower (upper false) or upper
 * triangle of a rows x cols matrix, row by row, as torch.tril_indices. */
static em_tensor *triangle_indices(const char *op, int64_t rows, int64_t cols, int64_t offset, bool upper,
                                   em_dtype d, em_device dev)
{
    if (rows < 0 || cols < 0)
        return em_set_error("%s: row and col must be non-negative, got %lld and %lld", op, (long long)rows,
                            (long long)cols), NULL;
    if (d != EM_INT64 && d != EM_INT32 && d != EM_FLOAT32 && d != EM_FLOAT64)
        return em_set_error("%s: dtype %s is not supported (int64, int32, float32 or float64)", op, em_dtype_name(d)), NULL;
    if (rows > ((int64_t)1 << 31) || cols > ((int64_t)1 << 31))
        return em_set_error("%s: %lld x %lld is too large", op, (long long)rows, (long long)cols), NULL;
    int64_t n = 0;
    for (int64_t i = 0; i < rows; i++) {
        int64_t lo = upper ? i + offset : 0, hi = upper ? cols : i + offset + 1;   /* columns [lo, hi) */
        if (lo < 0) lo = 0;
        if (hi > cols) hi = cols;
        if (hi > lo) n += hi - lo;
    }
    if (n > ((int64_t)1 << 34)) return em_set_error("%s: %lld indices are too many", op, (long long)n), NULL;
    int64_t *vals = malloc(sizeof(int64_t) * (size_t)(2 * n + 1));
    if (!vals) return em_set_error("%s: out of memory", op), NULL;
    int64_t k = 0;
    for (int64_t i = 0; i < rows; i++) {
        int64_t lo = upper ? i + offset : 0, hi = upper ? cols : i + offset + 1;
        if (lo < 0) lo = 0;
        if (hi > cols) hi = cols;
        for (int64_t j = lo; j < hi; j++, k++) {
            vals[k] = i + 1;
            vals[n + k] = j + 1;
        }
    }
    int64_t sizes[2] = {2, n};
    em_tensor *host = em_from_host(sizes, 2, d, NULL, vals);
    free(vals);
    if (!host || dev.type == EM_CPU) return host;
    em_tensor *out = em_to_device(host, dev);
    em_release(host);
    return out;
}

em_tensor *em_tril_indices(int64_t rows, int64_t cols, int64_t offset, em_dtype d, em_device dev)
{
    return triangle_indices("tril_indices", rows, cols, offset, false, d, dev);
}

em_tensor *em_triu_indices(int64_t rows, int64_t cols, int64_t offset, em_dtype d, em_device dev)
{
    return triangle_indices("triu_indices", rows, cols, offset, true, d, dev);
}
