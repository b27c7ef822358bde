/* softmax.c — softmax and log_softmax along one dim, per row:
 * max-subtract, exp, sum (in double), then divide (softmax) or subtract the
 * log of the sum (log_softmax). A NaN anywhere in a row makes the row NaN, and
 * so does a row of all -inf, as in PyTorch. Contiguous float32/float64 rows
 * take direct loops; other layouts and dtypes (float16, bfloat16) go through
 * double loads and stores. */
#include "cpu.h"

#include <math.h>
#include <string.h>

/* max ignoring NaN (a NaN reaches the output through exp anyway) and sums
 * in double, each in eight lanes so that they vectorise */
static float max_f32(const float *x, int64_t n)
{
    float m[8];
    for (int k = 0; k < 8; k++) m[k] = x[0];
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) m[k] = x[i + k] > m[k] ? x[i + k] : m[k];
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    for (int k = 1; k < 8; k++) m[0] = m[k] > m[0] ? m[k] : m[0];
    return m[0];
}

static double sum_f32(const float *x, int64_t n)
{
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += x[i + k];
    for (; i < n; i++) acc[0] += x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static void row_f32(em_softmax_op op, float *o, const float *x, int64_t n)
{
    float m = max_f32(x, n);
    for (int64_t i = 0; i < n; i++) o[i] = cpu_exp_f32(x[i] - m);
    double s = sum_f32(o, n);
    if (op == EM_SOFTMAX) {
        float inv = (float)(1.0 / s);
        for (int64_t i = 0; i < n; i++) o[i] *= inv;
    } else {
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

/* Contiguous float32/float64, dim not last: the rows along dim are W apart,
 * so each unit takes a group of up to COLS neighbouring columns of one outer
 * slice [n][W] and runs the three passes over whole rows of them. */
#define COLS 512

static void cols_f32(em_softmax_op op, float *o, const float *x, int64_t n, int64_t W, int64_t w)
{
    float m[COLS];
    double s[COLS];
    for (int64_t j = 0; j < w; j++) { m[j] = x[j]; s[j] = 0; }
    for (int64_t k = 1; k < n; k++)
        for (int64_t j = 0; j < w; j++) m[j] = x[k * W + j] > m[j] ? x[k * W + j] : m[j];
    for (int64_t k = 0; k < n; k++)
        for (int64_t j = 0; j < w; j++) {
            float e = cpu_exp_f32(x[k * W + j] - m[j]);
            o[k * W + j] = e;
            s[j] += e;
        }
    if (op == EM_SOFTMAX) {
        for (int64_t j = 0; j < w; j++) m[j] = (float)(1.0 / s[j]);
        for (int64_t k = 0; k < n; k++)
            for (int64_t j = 0; j < w; j++) o[k * W + j] *= m[j];
    } else {
        for (int64_t j = 0; j < w; j++) m[j] += (float)log(s[j]);
        for (int64_t k = 0; k < n; k++)
            for (int64_t j = 0; j < w; j++) o[k * W + j] = x[k * W + j] - m[j];
    }
}

static void cols_f64(em_softmax_op op, double *o, const double *x, int64_t n, int64_t W, int64_t w)
{
    double m[COLS], s[COLS];
    for (int64_t j = 0; j < w; j++) { m[j] = x[j]; s[j] = 0; }
    for (int64_t k = 1; k < n; k++)
        for (int64_t j = 0; j < w; j++) m[j] = x[k * W + j] > m[j] ? x[k * W + j] : m[j];
    for (int64_t k = 0; k < n; k++)
        for (int64_t j = 0; j < w; j++) {
            double e = exp(x[k * W + j] - m[j]);
            o[k * W + j] = e;
            s[j] += e;
        }
    if (op == EM_SOFTMAX) {
        for (int64_t j = 0; j < w; j++) m[j] = 1.0 / s[j];
        for (int64_t k = 0; k < n; k++)
            for (int64_t j = 0; j < w; j++) o[k * W + j] *= m[j];
    } else {
        for (int64_t j = 0; j < w; j++) m[j] += log(s[j]);
        for (int64_t k = 0; k < n; k++)
            for (int64_t j = 0; j < w; j++) o[k * W + j] = x[k * W + j] - m[j];
    }
}

static void softmax_cols(em_softmax_op op, em_tensor *out, const em_tensor *in, int dim)
{
    int64_t n = in->sizes[dim], W = in->strides[dim], groups = em_numel(in) / (n * W);
    int64_t nblk = (W + COLS - 1) / COLS;
    bool f32 = in->dtype == EM_FLOAT32;
    char *ob = (char *)em_data_ptr(out);
    const char *xb = (const char *)em_data_ptr(in);
    int64_t esz = (int64_t)em_dtype_size(in->dtype);
    #pragma omp parallel for schedule(static) if (cpu_parallel(em_numel(in)) && groups * nblk > 1)
    for (int64_t u = 0; u < groups * nblk; u++) {
        int64_t g = u / nblk, j0 = (u % nblk) * COLS, w = W - j0 < COLS ? W - j0 : COLS;
        int64_t off = (g * n * W + j0) * esz;
        if (f32) cols_f32(op, (float *)(ob + off), (const float *)(xb + off), n, W, w);
        else cols_f64(op, (double *)(ob + off), (const double *)(xb + off), n, W, w);
    }
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
    bool fdt = in->dtype == out->dtype && (in->dtype == EM_FLOAT32 || in->dtype == EM_FLOAT64);
    /* n > 1: em_is_contiguous ignores the stride of a size-1 dim, so only
     * then is strides[dim] the row-major width softmax_cols assumes */
    if (fdt && n > 1 && xs > 1 && em_is_contiguous(in) && em_is_contiguous(out)) {
        softmax_cols(op, out, in, dim);
        return 0;
    }
    bool fast = fdt && xs == 1 && os == 1;
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
