/* scan.c — inclusive scans along one dim: cumsum / cumprod, cummax / cummin
 * (the running extreme; a NaN, once seen, stays) and logcumsumexp. Floats
 * accumulate in double, integers in int64 (wrapping, as PyTorch does). out
 * has in's shape and dtype (the engine casts integer inputs to int64 first).
 *
 * Rows along `dim` are spread over threads. When both tensors are contiguous
 * and dim is not the last, a row would be a strided walk through memory, so
 * instead each outer slice is scanned a whole inner block at a time: the
 * running values for the block live in a buffer and every step adds one
 * contiguous row, which vectorises. */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>

/* log(exp(a) + exp(b)) without overflow; equal infinities stay themselves */
static double log_add_exp(double a, double b)
{
    if (a != a || b != b) return a + b;
    if (a == b) return isinf(a) ? a : a + M_LN2;
    double hi = a > b ? a : b, lo = a > b ? b : a;
    return hi + log1p(exp(lo - hi));
}

static double fcomb(em_scan_op op, double acc, double v)
{
    switch (op) {
    case EM_CUMSUM: return acc + v;
    case EM_CUMPROD: return acc * v;
    case EM_CUMMAX: return acc != acc || acc > v ? acc : v;
    case EM_CUMMIN: return acc != acc || acc < v ? acc : v;
    default: return log_add_exp(acc, v);
    }
}

static uint64_t icomb(em_scan_op op, uint64_t acc, uint64_t v)
{
    switch (op) {
    case EM_CUMSUM: return acc + v;
    case EM_CUMPROD: return acc * v;
    case EM_CUMMAX: return (int64_t)acc > (int64_t)v ? acc : v;
    default: return (int64_t)acc < (int64_t)v ? acc : v;
    }
}

/* One row, any dtype and strides (in bytes). */
static void row_scan(em_scan_op op, char *o, int64_t os, const char *x, int64_t xs, em_dtype d, int64_t n)
{
    if (em_dtype_is_float(d)) {
        double acc = 0;
        for (int64_t i = 0; i < n; i++) {
            double v = d == EM_FLOAT32 ? *(const float *)(x + i * xs) : cpu_load_f64(x + i * xs, d);
            acc = i ? fcomb(op, acc, v) : v;
            if (d == EM_FLOAT32) *(float *)(o + i * os) = (float)acc;
            else cpu_store_f64(o + i * os, d, acc);
        }
    } else {
        uint64_t acc = 0;
        for (int64_t i = 0; i < n; i++) {
            uint64_t v = (uint64_t)cpu_load_i64(x + i * xs, d);
            acc = i ? icomb(op, acc, v) : v;
            cpu_store_i64(o + i * os, d, (int64_t)acc);
        }
    }
}

/* What the threads of one scan share. */
typedef struct scan_job {
    em_scan_op op;
    const em_tensor *in, *out;
    int dim;
    int64_t n, W;           /* block_scan: slices [outer][n][W] */
    int64_t xs, os;         /* row scans: byte strides along dim */
    _Atomic int fail;
} scan_job;

static void block_range(int64_t lo, int64_t hi, void *ctx)
{
    scan_job *j = ctx;
    int64_t n = j->n, W = j->W;
    em_dtype d = j->in->dtype;
    size_t esz = em_dtype_size(d);
    bool fl = em_dtype_is_float(d);
    char *ob = (char *)em_data_ptr(j->out);
    const char *xb = (const char *)em_data_ptr(j->in);
    em_scan_op op = j->op;
    /* double and int64 share one buffer: both are 8 bytes */
    int64_t *acc = malloc(sizeof(int64_t) * (size_t)W);
    if (!acc) { j->fail = 1; return; }
    double *facc = (double *)acc;
    for (int64_t g = lo; g < hi; g++) {
        for (int64_t k = 0; k < n; k++) {
            int64_t base = (g * n + k) * W;
            const char *x = xb + base * (int64_t)esz;
            char *o = ob + base * (int64_t)esz;
            if (d == EM_FLOAT32 && op <= EM_CUMPROD) {
                const float *xf = (const float *)x;
                float *of = (float *)o;
                if (k == 0) for (int64_t i = 0; i < W; i++) facc[i] = xf[i];
                else if (op == EM_CUMSUM) for (int64_t i = 0; i < W; i++) facc[i] += xf[i];
                else for (int64_t i = 0; i < W; i++) facc[i] *= xf[i];
                for (int64_t i = 0; i < W; i++) of[i] = (float)facc[i];
            } else if (d == EM_FLOAT64 && op <= EM_CUMPROD) {
                const double *xf = (const double *)x;
                double *of = (double *)o;
                if (k == 0) for (int64_t i = 0; i < W; i++) facc[i] = xf[i];
                else if (op == EM_CUMSUM) for (int64_t i = 0; i < W; i++) facc[i] += xf[i];
                else for (int64_t i = 0; i < W; i++) facc[i] *= xf[i];
                for (int64_t i = 0; i < W; i++) of[i] = facc[i];
            } else if (fl) {
                for (int64_t i = 0; i < W; i++) {
                    double v = cpu_load_f64(x + i * (int64_t)esz, d);
                    facc[i] = k == 0 ? v : fcomb(op, facc[i], v);
                    cpu_store_f64(o + i * (int64_t)esz, d, facc[i]);
                }
            } else {
                for (int64_t i = 0; i < W; i++) {
                    uint64_t v = (uint64_t)cpu_load_i64(x + i * (int64_t)esz, d), a = (uint64_t)acc[i];
                    a = k == 0 ? v : icomb(op, a, v);
                    acc[i] = (int64_t)a;
                    cpu_store_i64(o + i * (int64_t)esz, d, (int64_t)a);
                }
            }
        }
    }
    free(acc);
}

static void rows_range(int64_t lo, int64_t hi, void *ctx)
{
    const scan_job *j = ctx;
    size_t esz = em_dtype_size(j->in->dtype);
    char *ob = (char *)em_data_ptr(j->out);
    const char *xb = (const char *)em_data_ptr(j->in);
    for (int64_t r = lo; r < hi; r++)
        row_scan(j->op, ob + cpu_row_offset(j->out, j->dim, r) * (int64_t)esz, j->os,
                 xb + cpu_row_offset(j->in, j->dim, r) * (int64_t)esz, j->xs, j->in->dtype, j->n);
}

int cpu_scan(em_scan_op op, em_tensor *out, const em_tensor *in, int dim)
{
    static const char *const names[] = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"};
    const char *name = (unsigned)op <= EM_LOGCUMSUMEXP ? names[op] : "scan";
    if ((unsigned)op > EM_LOGCUMSUMEXP) return em_set_error("scan: unknown scan op %d", (int)op);
    if (op == EM_LOGCUMSUMEXP && !em_dtype_is_float(in->dtype))
        return em_set_error("logcumsumexp: expected a floating point dtype, got %s", em_dtype_name(in->dtype));
    if (out->dtype != in->dtype)
        return em_set_error("%s: output dtype %s differs from input dtype %s", name,
                            em_dtype_name(out->dtype), em_dtype_name(in->dtype));
    int64_t numel = em_numel(in);
    if (numel == 0) return 0;
    if (in->ndim == 0) return cpu_cast(out, in);
    if (dim < 0 || dim >= in->ndim)
        return em_set_error("%s: dimension %d out of range for %s", name, dim + 1, SHAPE(in));
    int64_t n = in->sizes[dim];
    scan_job j = {.op = op, .in = in, .out = out, .dim = dim, .n = n};
    size_t esz = em_dtype_size(in->dtype);
    if (dim < in->ndim - 1 && n > 1 && em_is_contiguous(in) && em_is_contiguous(out) && in->strides[dim] > 1) {
        /* contiguous, dim not last: slices [outer][n][W] scanned a row of W at a time */
        j.W = in->strides[dim];
        cpu_parallel_for(numel / (n * j.W), numel, 1, block_range, &j);
        if (j.fail)
            return em_set_error("%s: out of memory for a scan buffer of %lld elements", name, (long long)j.W);
        return 0;
    }
    j.xs = in->strides[dim] * (int64_t)esz;
    j.os = out->strides[dim] * (int64_t)esz;
    cpu_parallel_for(numel / n, numel, 1, rows_range, &j);
    return 0;
}
