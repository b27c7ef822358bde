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


static void row_f32(em_softmax_op op, float *o, const float *x, int64_t n)
{
    float m = max_f32(x, n);
    for (int64_t i = 0; i < n; i++) o[i] = cpu_exp_f32(x[i] - m);
    double s = cpu_sum_f32(o, n);
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

/* Contiguous float32/float64, dim not last: the rows along dim are W apart,
 * so each unit takes a group of up to COLS neighbouring columns of one outer
 * slice [n][W] and runs the three passes over whole rows of them. */
#define COLS 512

/* cols_f32 and cols_f64: one body, T the element type and EXP its exp
 * (float32: the vectorised cpu_exp_f32); the sums are in double for both */
#define DEFINE_COLS(SFX, T, EXP)                                                                   \
    static void cols_##SFX(em_softmax_op op, T *o, const T *x, int64_t n, int64_t W, int64_t w)   \
    {                                                                                              \
        T m[COLS];                                                                                 \
        double s[COLS];                                                                            \
        for (int64_t j = 0; j < w; j++) { m[j] = x[j]; s[j] = 0; }                                 \
        for (int64_t k = 1; k < n; k++)                                                            \
            for (int64_t j = 0; j < w; j++) m[j] = x[k * W + j] > m[j] ? x[k * W + j] : m[j];      \
        for (int64_t k = 0; k < n; k++)                                                            \
            for (int64_t j = 0; j < w; j++) {                                                      \
                T e = EXP(x[k * W + j] - m[j]);                                                    \
                o[k * W + j] = e;                                                                  \
                s[j] += e;                                                                         \
            }                                                                                      \
        if (op == EM_SOFTMAX) {                                                                    \
            for (int64_t j = 0; j < w; j++) m[j] = (T)(1.0 / s[j]);                                \
            for (int64_t k = 0; k < n; k++)                                                        \
                for (int64_t j = 0; j < w; j++) o[k * W + j] *= m[j];                              \
        } else {                                                                                   \
            for (int64_t j = 0; j < w; j++) m[j] += (T)log(s[j]);                                  \
            for (int64_t k = 0; k < n; k++)                                                        \
                for (int64_t j = 0; j < w; j++) o[k * W + j] = x[k * W + j] - m[j];                \
        }                                                                                          \
    }
DEFINE_COLS(f32, float, cpu_exp_f32)
DEFINE_COLS(f64, double, exp)

/* What the threads of one softmax share. */
typedef struct sm_job {
    em_softmax_op op;
    const em_tensor *in, *out;
    int dim;
    char *ob;
    const char *xb;
    int64_t n, W, nblk, esz;   /* the columns path */
    int64_t xs, os;            /* the rows path: element strides along dim */
    bool fast;
} sm_job;

/* units u: slice u / nblk, COLS columns from (u % nblk) * COLS */
static void cols_range(int64_t lo, int64_t hi, void *ctx)
{
    const sm_job *j = ctx;
    for (int64_t u = lo; u < hi; u++) {
        int64_t g = u / j->nblk, j0 = (u % j->nblk) * COLS, w = j->W - j0 < COLS ? j->W - j0 : COLS;
        int64_t off = (g * j->n * j->W + j0) * j->esz;
        if (j->in->dtype == EM_FLOAT32)
            cols_f32(j->op, (float *)(j->ob + off), (const float *)(j->xb + off), j->n, j->W, w);
        else
            cols_f64(j->op, (double *)(j->ob + off), (const double *)(j->xb + off), j->n, j->W, w);
    }
}

static void rows_range(int64_t lo, int64_t hi, void *ctx)
{
    const sm_job *j = ctx;
    size_t xe = em_dtype_size(j->in->dtype), oe = em_dtype_size(j->out->dtype);
    for (int64_t r = lo; r < hi; r++) {
        char *o = j->ob + cpu_row_offset(j->out, j->dim, r) * (int64_t)oe;
        const char *x = j->xb + cpu_row_offset(j->in, j->dim, r) * (int64_t)xe;
        if (j->fast && j->in->dtype == EM_FLOAT32) row_f32(j->op, (float *)o, (const float *)x, j->n);
        else if (j->fast) row_f64(j->op, (double *)o, (const double *)x, j->n);
        else row_any(j->op, o, j->os * (int64_t)oe, j->out->dtype, x, j->xs * (int64_t)xe, j->in->dtype, j->n);
    }
}

int cpu_softmax(em_softmax_op op, em_tensor *out, const em_tensor *in, int dim)
{
    if (in->ndim == 0 || dim < 0 || dim >= in->ndim)
        return em_set_error("softmax: dimension %d out of range for %s", dim + 1, SHAPE(in));
    int64_t n = in->sizes[dim], numel = em_numel(in);
    if (n == 0 || numel == 0) return 0;
    sm_job j = {.op = op, .in = in, .out = out, .dim = dim, .ob = (char *)em_data_ptr(out),
                .xb = (const char *)em_data_ptr(in), .n = n, .xs = in->strides[dim], .os = out->strides[dim]};
    bool fdt = in->dtype == out->dtype && (in->dtype == EM_FLOAT32 || in->dtype == EM_FLOAT64);
    /* Contiguous float32/float64 with dim not last: the columns path. n > 1:
     * em_is_contiguous ignores the stride of a size-1 dim, so only then is
     * strides[dim] the row-major width it assumes */
    if (fdt && n > 1 && j.xs > 1 && em_is_contiguous(in) && em_is_contiguous(out)) {
        j.W = j.xs;
        j.nblk = (j.W + COLS - 1) / COLS;
        j.esz = (int64_t)em_dtype_size(in->dtype);
        cpu_parallel_for(numel / (n * j.W) * j.nblk, numel, 1, cols_range, &j);
        return 0;
    }
    j.fast = fdt && j.xs == 1 && j.os == 1;
    cpu_parallel_for(numel / n, numel, 1, rows_range, &j);
    return 0;
}
