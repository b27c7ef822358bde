/* ternary.c — CPU kernels for where, lerp, addcmul, addcdiv and clamp.
 *
 * where only selects, so it works on raw element bytes of any dtype. The
 * arithmetic ops have contiguous float32/float64 loops and a generic path
 * through doubles for everything else. */
#include "cpu.h"

#include <math.h>
#include <string.h>

/* ---- where --------------------------------------------------------------- */

/* The loops of one element size: contiguous ones, with either value or both a
 * broadcast scalar (stride 0: ReLU's backward picks between the gradient, itself
 * an expanded 0-d one after a sum, and a 0-d zero), then any strides. Both values
 * are read and then selected, which compiles to a select rather than a branch on
 * the mask (a random mask's mispredicted branches cost 3.6 ns an element). */
#define WHERE_LOOPS(T)                                                                       \
    do {                                                                                     \
        T *restrict o = (T *)p[0];                                                           \
        const T *restrict x = (const T *)p[2], *restrict y = (const T *)p[3];                \
        if (s[0] == sizeof(T) && s[1] == 1) {                                                \
            if (s[2] == sizeof(T) && s[3] == sizeof(T)) {                                    \
                for (int64_t i = 0; i < n; i++) o[i] = m[i] ? x[i] : y[i];                   \
                return;                                                                      \
            }                                                                                \
            if (s[2] == sizeof(T) && s[3] == 0) {                                            \
                T yv = y[0];                                                                 \
                for (int64_t i = 0; i < n; i++) o[i] = m[i] ? x[i] : yv;                     \
                return;                                                                      \
            }                                                                                \
            if (s[2] == 0 && s[3] == sizeof(T)) {                                            \
                T xv = x[0];                                                                 \
                for (int64_t i = 0; i < n; i++) o[i] = m[i] ? xv : y[i];                     \
                return;                                                                      \
            }                                                                                \
            if (s[2] == 0 && s[3] == 0) {                                                    \
                T xv = x[0], yv = y[0];                                                      \
                for (int64_t i = 0; i < n; i++) o[i] = m[i] ? xv : yv;                       \
                return;                                                                      \
            }                                                                                \
        }                                                                                    \
        for (int64_t i = 0; i < n; i++) {                                                    \
            T a = *(const T *)(p[2] + i * s[2]), b = *(const T *)(p[3] + i * s[3]);          \
            *(T *)(p[0] + i * s[0]) = m[i * s[1]] ? a : b;                                   \
        }                                                                                    \
        return;                                                                              \
    } while (0)

static void where_loop(char **p, const int64_t *s, int64_t n, void *ctx)
{
    size_t esz = *(const size_t *)ctx;
    const uint8_t *m = (const uint8_t *)p[1];
    switch (esz) {
    case 8: WHERE_LOOPS(uint64_t);
    case 4: WHERE_LOOPS(uint32_t);
    case 2: WHERE_LOOPS(uint16_t);
    default: WHERE_LOOPS(uint8_t);
    }
}

/* ---- lerp / addcmul / addcdiv -------------------------------------------- */

typedef struct tern_ctx { em_ternary_op op; em_dtype dt; double s; } tern_ctx;

/* the contiguous loop of one float type T, s already rounded to T (so a
 * float32 tensor computes in float, as PyTorch's) */
#define TERN_CONTIGUOUS(T)                                                                          \
    do {                                                                                            \
        T *restrict o = (T *)p[0];                                                                  \
        const T *restrict a = (const T *)p[1], *restrict b = (const T *)p[2], *restrict x = (const T *)p[3]; \
        T sv = (T)c->s;                                                                             \
        switch (c->op) {                                                                            \
        case EM_LERP: for (int64_t i = 0; i < n; i++) o[i] = a[i] + x[i] * (b[i] - a[i]); break;   \
        case EM_ADDCMUL: for (int64_t i = 0; i < n; i++) o[i] = a[i] + sv * b[i] * x[i]; break;    \
        case EM_ADDCDIV: for (int64_t i = 0; i < n; i++) o[i] = a[i] + sv * b[i] / x[i]; break;    \
        default: break;                                                                             \
        }                                                                                           \
        return;                                                                                     \
    } while (0)

static double tern_one(em_ternary_op op, double a, double b, double c, double s)
{
    switch (op) {
    case EM_LERP: return a + c * (b - a);
    case EM_ADDCMUL: return a + s * b * c;
    case EM_ADDCDIV: return a + s * b / c;
    default: return 0;
    }
}

static void tern_loop(char **p, const int64_t *s, int64_t n, void *vctx)
{
    const tern_ctx *c = vctx;
    int64_t esz = (int64_t)em_dtype_size(c->dt);
    bool contig = s[0] == esz && s[1] == esz && s[2] == esz && s[3] == esz;
    if (contig && c->dt == EM_FLOAT32) TERN_CONTIGUOUS(float);
    if (contig && c->dt == EM_FLOAT64) TERN_CONTIGUOUS(double);
    for (int64_t i = 0; i < n; i++) {
        double a = cpu_load_f64(p[1] + i * s[1], c->dt), b = cpu_load_f64(p[2] + i * s[2], c->dt);
        double x = cpu_load_f64(p[3] + i * s[3], c->dt);
        cpu_store_f64(p[0] + i * s[0], c->dt, tern_one(c->op, a, b, x, c->s));
    }
}

int cpu_ternary(em_ternary_op op, em_tensor *out, const em_tensor *a, const em_tensor *b,
                const em_tensor *c, double s)
{
    const em_tensor *ts[4] = {out, a, b, c};
    if (op == EM_WHERE) {
        if (a->dtype != EM_BOOL || b->dtype != out->dtype || c->dtype != out->dtype)
            return em_set_error("where: CPU kernel called with condition %s, values %s and %s, output %s",
                                em_dtype_name(a->dtype), em_dtype_name(b->dtype),
                                em_dtype_name(c->dtype), em_dtype_name(out->dtype));
        size_t esz = em_dtype_size(out->dtype);
        cpu_foreach_elementwise(4, ts, where_loop, &esz);
        return 0;
    }
    if ((unsigned)op >= EM_NTERNARY) return em_set_error("ternary: invalid op %d", (int)op);
    if (a->dtype != out->dtype || b->dtype != out->dtype || c->dtype != out->dtype)
        return em_set_error("ternary: CPU kernel called with mixed dtypes");
    tern_ctx ctx = {op, out->dtype, s};
    cpu_foreach_elementwise(4, ts, tern_loop, &ctx);
    return 0;
}

/* ---- clamp --------------------------------------------------------------- */

typedef struct clamp_ctx {
    em_dtype dt;
    double lo, hi;
    int64_t ilo, ihi;
    bool has_lo, has_hi;
} clamp_ctx;

/* Bounds are applied one after the other (max with lo, then min with hi),
 * so lo > hi gives hi, and a NaN input stays NaN, as in PyTorch. Float
 * types in their own type, strided runs too (a transposed input). */
#define CLAMP_FLOAT(T)                                                                          \
    static void clamp_##T(char **p, const int64_t *s, int64_t n, const clamp_ctx *c)            \
    {                                                                                           \
        T lo = c->has_lo ? (T)c->lo : -INFINITY, hi = c->has_hi ? (T)c->hi : INFINITY;          \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                           \
            T *restrict o = (T *)p[0];                                                          \
            const T *restrict a = (const T *)p[1];                                              \
            for (int64_t i = 0; i < n; i++) {                                                   \
                T x = a[i] < lo ? lo : a[i];                                                    \
                o[i] = x > hi ? hi : x;                                                         \
            }                                                                                   \
            return;                                                                             \
        }                                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                       \
            T v = *(const T *)(p[1] + i * s[1]), x = v < lo ? lo : v;                           \
            *(T *)(p[0] + i * s[0]) = x > hi ? hi : x;                                          \
        }                                                                                       \
    }
CLAMP_FLOAT(float)
CLAMP_FLOAT(double)

static void clamp_loop(char **p, const int64_t *s, int64_t n, void *vctx)
{
    const clamp_ctx *c = vctx;
    if (c->dt == EM_FLOAT32) { clamp_float(p, s, n, c); return; }
    if (c->dt == EM_FLOAT64) { clamp_double(p, s, n, c); return; }
    if (em_dtype_is_float(c->dt)) {
        double lo = c->has_lo ? c->lo : -INFINITY, hi = c->has_hi ? c->hi : INFINITY;
        for (int64_t i = 0; i < n; i++) {
            double x = cpu_load_f64(p[1] + i * s[1], c->dt);
            x = x < lo ? lo : x;
            cpu_store_f64(p[0] + i * s[0], c->dt, x > hi ? hi : x);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t x = cpu_load_i64(p[1] + i * s[1], c->dt);
        if (c->has_lo && x < c->ilo) x = c->ilo;
        if (c->has_hi && x > c->ihi) x = c->ihi;
        cpu_store_i64(p[0] + i * s[0], c->dt, x);
    }
}

/* A bound for an integer tensor, saturated so the conversion is defined. */
static int64_t int_bound(double v)
{
    if (v != v) return 0;
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)v;
}

int cpu_clamp(em_tensor *out, const em_tensor *a, double lo, double hi, bool has_lo, bool has_hi)
{
    if (a->dtype != out->dtype)
        return em_set_error("clamp: CPU kernel called with input %s and output %s",
                            em_dtype_name(a->dtype), em_dtype_name(out->dtype));
    clamp_ctx c = {a->dtype, lo, hi, int_bound(lo), int_bound(hi), has_lo, has_hi};
    const em_tensor *ts[2] = {out, a};
    cpu_foreach_elementwise(2, ts, clamp_loop, &c);
    return 0;
}
