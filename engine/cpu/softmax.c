/* softmax.c — softmax and log_softmax along one dim, per row:
 * max-subtract, exp, sum (in double), then divide (softmax) or subtract the
 * log of the sum (log_softmax). A NaN anywhere in a row makes the row NaN, and
 * so does a row of all -inf, as in PyTorch. Contiguous float32/float64 rows
 * take direct loops; other layouts and dtypes (float16, bfloat16) go through
 * double loads and stores. */
#include "cpu.h"

#include <math.h>

static void row_f32(em_softmax_op op, float *o, const float *x, int64_t n)
{
    float m = x[0];
    for (int64_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
    double s = 0;
    if (op == EM_SOFTMAX) {
        for (int64_t i = 0; i < n; i++) { o[i] = expf(x[i] - m); s += o[i]; }
        float inv = (float)(1.0 / s);
        for (int64_t i = 0; i < n; i++) o[i] *= inv;
    } else {
        for (int64_t i = 0; i < n; i++) s += expf(x[i] - m);
        float shift = m + (float)log(s);
        for (int64_t i = 0; i < n; i++) o[i] = x[i] - shift;
    }
}

static void row_f64(em_softmax_op op, double *o, const double *x, int64_t n)
{
    double m = x[0];
    for (int64_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
    double s = 0;
    if (op == EM_SOFTMAX) {
        for (int64_t i = 0; i < n; i++) { o[i] = exp(x[i] - m); s += o[i]; }
        double inv = 1.0 / s;
        for (int64_t i = 0; i < n; i++) o[i] *= inv;
    } else {
        for (int64_t i = 0; i < n; i++) s += exp(x[i] - m);
        double shift = m + log(s);
        for (int64_t i = 0; i < n; i++) o[i] = x[i] - shift;
    }
}

/* Any dtype, any strides (in bytes); exp is recomputed rather than stored so
 * that no scratch row is needed. */
static void row_any(em_softmax_op op, char *o, int64_t os, em_dtype od,
                    const char *x, int64_t xs, em_dtype xd, int64_t n)
{
    double m = cpu_load_f64(x, xd);
    for (int64_t i = 1; i < n; i++) {
        double v = cpu_load_f64(x + i * xs, xd);
        m = v > m ? v : m;
    }
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += exp(cpu_load_f64(x + i * xs, xd) - m);
    if (op == EM_SOFTMAX) {
        double inv = 1.0 / s;
        for (int64_t i = 0; i < n; i++)
            cpu_store_f64(o + i * os, od, exp(cpu_load_f64(x + i * xs, xd) - m) * inv);
    } else {
        double shift = m + log(s);
        for (int64_t i = 0; i < n; i++)
            cpu_store_f64(o + i * os, od, cpu_load_f64(x + i * xs, xd) - shift);
    }
}

/* Element offset of row r: the dims of t other than `dim`, row-major. */
static int64_t row_offset(const em_tensor *t, int dim, int64_t r)
{
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (d == dim) continue;
        off += (r % t->sizes[d]) * t->strides[d];
        r /= t->sizes[d];
    }
    return off;
}

int cpu_softmax(em_softmax_op op, em_tensor *out, const em_tensor *in, int dim)
{
    if (in->ndim == 0 || dim < 0 || dim >= in->ndim)
        return em_set_error("softmax: dimension %d out of range for %s", dim + 1, SHAPE(in));
    int64_t n = in->sizes[dim], numel = em_numel(in);
    if (n == 0 || numel == 0) return 0;
    int64_t rows = numel / n;
    int64_t xs = in->strides[dim], os = out->strides[dim];
    size_t xe = em_dtype_size(in->dtype), oe = em_dtype_size(out->dtype);
    char *ob = (char *)em_data_ptr(out);
    const char *xb = (const char *)em_data_ptr(in);
    bool fast = in->dtype == out->dtype && xs == 1 && os == 1 &&
                (in->dtype == EM_FLOAT32 || in->dtype == EM_FLOAT64);
    #pragma omp parallel for schedule(static) if (cpu_parallel(numel) && rows > 1)
    for (int64_t r = 0; r < rows; r++) {
        char *o = ob + row_offset(out, dim, r) * (int64_t)oe;
        const char *x = xb + row_offset(in, dim, r) * (int64_t)xe;
        if (fast && in->dtype == EM_FLOAT32) row_f32(op, (float *)o, (const float *)x, n);
        else if (fast) row_f64(op, (double *)o, (const double *)x, n);
        else row_any(op, o, os * (int64_t)oe, out->dtype, x, xs * (int64_t)xe, in->dtype, n);
    }
    return 0;
}
