/* unary.c — the CPU unary elementwise kernels.
 *
 * As in binary.c: one contiguous loop per op and element type (float32,
 * float64, int64); strided runs go through small stack buffers so the same
 * loop serves them. int32, uint8 and bool compute in int64 and are truncated
 * back, which keeps the wrap-around of the narrow type (neg of uint8 1 is
 * 255). Float-only ops on integer inputs are the engine's business: it
 * promotes before calling, and this file refuses them. float16 and bfloat16
 * compute in float32 a chunk at a time and round once into the output. */
#include "cpu.h"

#include <math.h>
#include <string.h>

#define CHUNK 256

typedef struct un_ctx { em_unary_op op; em_dtype dt; bool to_bool; } un_ctx;

static void gather(void *dst, const char *p, int64_t stride, int64_t n, size_t esz)
{
    switch (esz) {
    case 8: { uint64_t *d = dst; for (int64_t i = 0; i < n; i++) d[i] = *(const uint64_t *)(p + i * stride); break; }
    case 4: { uint32_t *d = dst; for (int64_t i = 0; i < n; i++) d[i] = *(const uint32_t *)(p + i * stride); break; }
    default: { uint8_t *d = dst; for (int64_t i = 0; i < n; i++) d[i] = *(const uint8_t *)(p + i * stride); break; }
    }
}

static void scatter(char *p, int64_t stride, const void *src, int64_t n, size_t esz)
{
    switch (esz) {
    case 8: { const uint64_t *s = src; for (int64_t i = 0; i < n; i++) *(uint64_t *)(p + i * stride) = s[i]; break; }
    case 4: { const uint32_t *s = src; for (int64_t i = 0; i < n; i++) *(uint32_t *)(p + i * stride) = s[i]; break; }
    default: { const uint8_t *s = src; for (int64_t i = 0; i < n; i++) *(uint8_t *)(p + i * stride) = s[i]; break; }
    }
}

/* ---- the normal distribution, for GELU -----------------------------------
 *
 * gelu(x) = x Phi(x) and its derivative Phi(x) + x phi(x). libm's erff is a
 * scalar call per element, and 0.5 (1 + erf(x / sqrt 2)) cancels for
 * negative x, so float32 goes through straight-line code that gcc
 * vectorises, in double: the square of a float is exact there, so
 * exp(-x^2 / 2) takes no rounding error into its argument, and the float
 * result is within about half an ulp. float64 keeps libm's erf. */

/* Phi(-|x|) = exp(-x^2 / 2) t Q(t), t = 1 / (1 + |x| / 4). Q is a
 * degree 14 least-squares fit, weighted for relative error, at 600
 * Chebyshev nodes in t for |x| <= 20, against mpmath's erfc (relative error
 * 1.4e-12, which GELU's derivative needs: Phi(x) + x phi(x) cancels near
 * its zero at x = -0.75; beyond 20, Phi(-|x|) is far below the smallest
 * float).
 * tests/lua/gelu_spec.lua checks it against an independent erf. */
static const double normal_tail_q[15] = {
    0.099735501862731377, 0.099738171981006152, 0.093457150786775328, 0.081501576185525448,
    0.060253332400632999, 0.059340181886933678, -0.035030704101401473, 0.16508456393173709,
    -0.32170474297986351, 0.46915283863826679, -0.51738506352961267, 0.37719157323351366,
    -0.16958775668434864, 0.042998505734491779, -0.0047451293461033116,
};

/* a * b + c, fused where the target has FMA (-std=c11 turns off gcc's own
 * contraction); elsewhere fma() would be a slow library call */
static inline double mad(double a, double b, double c)
{
#ifdef __FMA__
    return fma(a, b, c);
#else
    return a * b + c;
#endif
}

/* exp(y) for y <= 0: y = k ln 2 + r with |r| <= ln 2 / 2, 2^k built from
 * its bits (the rounding constant leaves k in the low bits of the sum), and
 * a degree 10 Taylor polynomial for exp(r) (error below 1e-13). 0 below
 * -708, where 2^k would leave the normal range. */
static inline double exp_nonpositive(double y)
{
    const double shift = 0x1.8p52;
    double yc = y < -708.0 ? -708.0 : y;
    double kd = mad(yc, 1.4426950408889634, shift);
    uint64_t kbits;
    memcpy(&kbits, &kd, sizeof kd);
    kd -= shift;
    /* ln 2 in two parts: k times the high part is exact */
    double r = mad(-kd, 1.90821492927058770002e-10, mad(-kd, 6.93147180369123816490e-01, yc));
    double p = 1.0 / 3628800;
    p = mad(p, r, 1.0 / 362880);
    p = mad(p, r, 1.0 / 40320);
    p = mad(p, r, 1.0 / 5040);
    p = mad(p, r, 1.0 / 720);
    p = mad(p, r, 1.0 / 120);
    p = mad(p, r, 1.0 / 24);
    p = mad(p, r, 1.0 / 6);
    p = mad(p, r, 0.5);
    p = mad(p, r, 1.0);
    p = mad(p, r, 1.0);
    uint64_t sbits = (kbits + 1023) << 52;
    double scale;
    memcpy(&scale, &sbits, sizeof scale);
    return y < -708.0 ? 0.0 : p * scale;
}

/* Phi(x), and phi(x) = exp(-x^2 / 2) / sqrt(2 pi) in *pdf. NaN stays NaN;
 * phi(+-inf) is 0. */
static inline double normal_cdf_pdf(double x, double *pdf)
{
    double e = exp_nonpositive(-0.5 * x * x);
    double t = 1.0 / (1.0 + 0.25 * fabs(x));
    const double *c = normal_tail_q;
    double q = mad(mad(mad(mad(c[14], t, c[13]), t, c[12]), t, c[11]), t, c[10]);
    q = mad(mad(mad(mad(mad(q, t, c[9]), t, c[8]), t, c[7]), t, c[6]), t, c[5]);
    q = mad(mad(mad(mad(mad(q, t, c[4]), t, c[3]), t, c[2]), t, c[1]), t, c[0]);
    double tail = e * t * q;
    *pdf = e * 0.39894228040143267794;
    return x < 0 ? tail : 1.0 - tail;
}

static void gelu_f32(float *restrict o, const float *restrict a, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], pdf;
        o[i] = (float)(x * normal_cdf_pdf(x, &pdf));
    }
}

/* d/dx x Phi(x) = Phi(x) + x phi(x) */
static void gelu_grad_f32(float *restrict o, const float *restrict a, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], pdf;
        double cdf = normal_cdf_pdf(x, &pdf);
        o[i] = (float)(cdf + x * pdf);
    }
}

/* ---- erfinv -----------------------------------------------------------------
 * Giles' single-precision approximation ("Approximating the erfinv
 * function", GPU Computing Gems, 2011) as a start, then Newton steps in
 * double. */
static double erfinv_f64(double y)
{
    if (!(fabs(y) <= 1)) return NAN;
    if (fabs(y) == 1) return copysign(INFINITY, y);
    if (y == 0) return y;
    double w = -log((1 - y) * (1 + y)), p;
    if (w < 5) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = mad(p, w, 3.43273939e-07);
        p = mad(p, w, -3.5233877e-06);
        p = mad(p, w, -4.39150654e-06);
        p = mad(p, w, 0.00021858087);
        p = mad(p, w, -0.00125372503);
        p = mad(p, w, -0.00417768164);
        p = mad(p, w, 0.246640727);
        p = mad(p, w, 1.50140941);
    } else {
        w = sqrt(w) - 3;
        p = -0.000200214257;
        p = mad(p, w, 0.000100950558);
        p = mad(p, w, 0.00134934322);
        p = mad(p, w, -0.00367342844);
        p = mad(p, w, 0.00573950773);
        p = mad(p, w, -0.0076224613);
        p = mad(p, w, 0.00943887047);
        p = mad(p, w, 1.00167406);
        p = mad(p, w, 2.83297682);
    }
    double x = p * y;
    if (fabs(y) < 0.5) {
        for (int k = 0; k < 2; k++) x -= (erf(x) - y) / (1.12837916709551257390 * exp(-x * x));
        return x;
    }
    /* Near +-1 the start is poor (the approximation was fitted for floats)
     * and erf(x) rounds to 1: solve log erfc(|x|) = log(1 - |y|) instead,
     * which is nearly quadratic in the tail, so Newton converges in a few
     * steps from any start; 1 - |y| is exact here. */
    double q = 1 - fabs(y), ax = fabs(x), lq = log(q);
    for (int k = 0; k < 12; k++) {
        double e = erfc(ax);
        double step = (log(e) - lq) / (-1.12837916709551257390 * exp(-ax * ax) / e);
        ax -= step;
        if (fabs(step) <= 1e-16 * ax) break;
    }
    return copysign(ax, y);
}

/* ---- float32 ------------------------------------------------------------- */

static void un_f32(em_unary_op op, float *restrict o, const float *restrict a, int64_t n)
{
    switch (op) {
    case EM_NEG: for (int64_t i = 0; i < n; i++) o[i] = -a[i]; break;
    case EM_ABS: for (int64_t i = 0; i < n; i++) o[i] = fabsf(a[i]); break;
    /* NaN gives 0, as in PyTorch */
    case EM_SIGN: for (int64_t i = 0; i < n; i++) o[i] = (float)((a[i] > 0) - (a[i] < 0)); break;
    case EM_EXP: for (int64_t i = 0; i < n; i++) o[i] = expf(a[i]); break;
    case EM_LOG: for (int64_t i = 0; i < n; i++) o[i] = logf(a[i]); break;
    case EM_LOG1P: for (int64_t i = 0; i < n; i++) o[i] = log1pf(a[i]); break;
    case EM_EXPM1: for (int64_t i = 0; i < n; i++) o[i] = expm1f(a[i]); break;
    case EM_SQRT: for (int64_t i = 0; i < n; i++) o[i] = sqrtf(a[i]); break;
    case EM_RSQRT: for (int64_t i = 0; i < n; i++) o[i] = 1.0f / sqrtf(a[i]); break;
    case EM_SIN: for (int64_t i = 0; i < n; i++) o[i] = sinf(a[i]); break;
    case EM_COS: for (int64_t i = 0; i < n; i++) o[i] = cosf(a[i]); break;
    case EM_TANH: for (int64_t i = 0; i < n; i++) o[i] = tanhf(a[i]); break;
    case EM_SIGMOID: for (int64_t i = 0; i < n; i++) o[i] = 1.0f / (1.0f + expf(-a[i])); break;
    /* x < 0 ? 0 : x keeps NaN and -0.0 as PyTorch does */
    case EM_RELU: for (int64_t i = 0; i < n; i++) o[i] = a[i] < 0 ? 0.0f : a[i]; break;
    case EM_GELU: gelu_f32(o, a, n); break;
    case EM_GELU_GRAD: gelu_grad_f32(o, a, n); break;
    case EM_SILU: for (int64_t i = 0; i < n; i++) o[i] = a[i] / (1.0f + expf(-a[i])); break;
    case EM_FLOOR: for (int64_t i = 0; i < n; i++) o[i] = floorf(a[i]); break;
    case EM_CEIL: for (int64_t i = 0; i < n; i++) o[i] = ceilf(a[i]); break;
    /* the default rounding mode rounds half to even */
    case EM_ROUND: for (int64_t i = 0; i < n; i++) o[i] = nearbyintf(a[i]); break;
    case EM_RECIPROCAL: for (int64_t i = 0; i < n; i++) o[i] = 1.0f / a[i]; break;
    case EM_SQUARE: for (int64_t i = 0; i < n; i++) o[i] = a[i] * a[i]; break;
    case EM_EXP2: for (int64_t i = 0; i < n; i++) o[i] = exp2f(a[i]); break;
    case EM_LOG2: for (int64_t i = 0; i < n; i++) o[i] = log2f(a[i]); break;
    case EM_LOG10: for (int64_t i = 0; i < n; i++) o[i] = log10f(a[i]); break;
    case EM_ERF: for (int64_t i = 0; i < n; i++) o[i] = erff(a[i]); break;
    case EM_ERFC: for (int64_t i = 0; i < n; i++) o[i] = erfcf(a[i]); break;
    case EM_ERFINV: for (int64_t i = 0; i < n; i++) o[i] = (float)erfinv_f64(a[i]); break;
    case EM_TRUNC: for (int64_t i = 0; i < n; i++) o[i] = truncf(a[i]); break;
    case EM_TAN: for (int64_t i = 0; i < n; i++) o[i] = tanf(a[i]); break;
    case EM_SINH: for (int64_t i = 0; i < n; i++) o[i] = sinhf(a[i]); break;
    case EM_COSH: for (int64_t i = 0; i < n; i++) o[i] = coshf(a[i]); break;
    case EM_ASIN: for (int64_t i = 0; i < n; i++) o[i] = asinf(a[i]); break;
    case EM_ACOS: for (int64_t i = 0; i < n; i++) o[i] = acosf(a[i]); break;
    case EM_ATAN: for (int64_t i = 0; i < n; i++) o[i] = atanf(a[i]); break;
    case EM_ASINH: for (int64_t i = 0; i < n; i++) o[i] = asinhf(a[i]); break;
    case EM_ACOSH: for (int64_t i = 0; i < n; i++) o[i] = acoshf(a[i]); break;
    case EM_ATANH: for (int64_t i = 0; i < n; i++) o[i] = atanhf(a[i]); break;
    default: break;
    }
}

static void un_f64(em_unary_op op, double *restrict o, const double *restrict a, int64_t n)
{
    switch (op) {
    case EM_NEG: for (int64_t i = 0; i < n; i++) o[i] = -a[i]; break;
    case EM_ABS: for (int64_t i = 0; i < n; i++) o[i] = fabs(a[i]); break;
    case EM_SIGN: for (int64_t i = 0; i < n; i++) o[i] = (double)((a[i] > 0) - (a[i] < 0)); break;
    case EM_EXP: for (int64_t i = 0; i < n; i++) o[i] = exp(a[i]); break;
    case EM_LOG: for (int64_t i = 0; i < n; i++) o[i] = log(a[i]); break;
    case EM_LOG1P: for (int64_t i = 0; i < n; i++) o[i] = log1p(a[i]); break;
    case EM_EXPM1: for (int64_t i = 0; i < n; i++) o[i] = expm1(a[i]); break;
    case EM_SQRT: for (int64_t i = 0; i < n; i++) o[i] = sqrt(a[i]); break;
    case EM_RSQRT: for (int64_t i = 0; i < n; i++) o[i] = 1.0 / sqrt(a[i]); break;
    case EM_SIN: for (int64_t i = 0; i < n; i++) o[i] = sin(a[i]); break;
    case EM_COS: for (int64_t i = 0; i < n; i++) o[i] = cos(a[i]); break;
    case EM_TANH: for (int64_t i = 0; i < n; i++) o[i] = tanh(a[i]); break;
    case EM_SIGMOID: for (int64_t i = 0; i < n; i++) o[i] = 1.0 / (1.0 + exp(-a[i])); break;
    case EM_RELU: for (int64_t i = 0; i < n; i++) o[i] = a[i] < 0 ? 0.0 : a[i]; break;
    /* Phi through erfc: 1 + erf(x / sqrt 2) would cancel for negative x */
    case EM_GELU: for (int64_t i = 0; i < n; i++) o[i] = a[i] * 0.5 * erfc(-a[i] * M_SQRT1_2); break;
    case EM_GELU_GRAD:
        for (int64_t i = 0; i < n; i++)
            o[i] = 0.5 * erfc(-a[i] * M_SQRT1_2) + a[i] * exp(-0.5 * a[i] * a[i]) * 0.39894228040143267794;
        break;
    case EM_SILU: for (int64_t i = 0; i < n; i++) o[i] = a[i] / (1.0 + exp(-a[i])); break;
    case EM_FLOOR: for (int64_t i = 0; i < n; i++) o[i] = floor(a[i]); break;
    case EM_CEIL: for (int64_t i = 0; i < n; i++) o[i] = ceil(a[i]); break;
    case EM_ROUND: for (int64_t i = 0; i < n; i++) o[i] = nearbyint(a[i]); break;
    case EM_RECIPROCAL: for (int64_t i = 0; i < n; i++) o[i] = 1.0 / a[i]; break;
    case EM_SQUARE: for (int64_t i = 0; i < n; i++) o[i] = a[i] * a[i]; break;
    case EM_EXP2: for (int64_t i = 0; i < n; i++) o[i] = exp2(a[i]); break;
    case EM_LOG2: for (int64_t i = 0; i < n; i++) o[i] = log2(a[i]); break;
    case EM_LOG10: for (int64_t i = 0; i < n; i++) o[i] = log10(a[i]); break;
    case EM_ERF: for (int64_t i = 0; i < n; i++) o[i] = erf(a[i]); break;
    case EM_ERFC: for (int64_t i = 0; i < n; i++) o[i] = erfc(a[i]); break;
    case EM_ERFINV: for (int64_t i = 0; i < n; i++) o[i] = erfinv_f64(a[i]); break;
    case EM_TRUNC: for (int64_t i = 0; i < n; i++) o[i] = trunc(a[i]); break;
    case EM_TAN: for (int64_t i = 0; i < n; i++) o[i] = tan(a[i]); break;
    case EM_SINH: for (int64_t i = 0; i < n; i++) o[i] = sinh(a[i]); break;
    case EM_COSH: for (int64_t i = 0; i < n; i++) o[i] = cosh(a[i]); break;
    case EM_ASIN: for (int64_t i = 0; i < n; i++) o[i] = asin(a[i]); break;
    case EM_ACOS: for (int64_t i = 0; i < n; i++) o[i] = acos(a[i]); break;
    case EM_ATAN: for (int64_t i = 0; i < n; i++) o[i] = atan(a[i]); break;
    case EM_ASINH: for (int64_t i = 0; i < n; i++) o[i] = asinh(a[i]); break;
    case EM_ACOSH: for (int64_t i = 0; i < n; i++) o[i] = acosh(a[i]); break;
    case EM_ATANH: for (int64_t i = 0; i < n; i++) o[i] = atanh(a[i]); break;
    default: break;
    }
}

/* integer ops: wrap-around through unsigned arithmetic */
static void un_i64(em_unary_op op, int64_t *restrict o, const int64_t *restrict a, int64_t n)
{
    switch (op) {
    case EM_NEG: for (int64_t i = 0; i < n; i++) o[i] = (int64_t)(0 - (uint64_t)a[i]); break;
    case EM_ABS:
        for (int64_t i = 0; i < n; i++) o[i] = a[i] < 0 ? (int64_t)(0 - (uint64_t)a[i]) : a[i];
        break;
    case EM_SIGN: for (int64_t i = 0; i < n; i++) o[i] = (a[i] > 0) - (a[i] < 0); break;
    case EM_RELU: for (int64_t i = 0; i < n; i++) o[i] = a[i] < 0 ? 0 : a[i]; break;
    case EM_FLOOR: case EM_CEIL: case EM_ROUND: case EM_TRUNC:
        for (int64_t i = 0; i < n; i++) o[i] = a[i];
        break;
    case EM_BITWISE_NOT: for (int64_t i = 0; i < n; i++) o[i] = ~a[i]; break;
    case EM_SQUARE: for (int64_t i = 0; i < n; i++) o[i] = (int64_t)((uint64_t)a[i] * (uint64_t)a[i]); break;
    default: break;
    }
}

static void not_f32(uint8_t *restrict o, const float *restrict a, int64_t n)
{
    for (int64_t i = 0; i < n; i++) o[i] = a[i] == 0;
}

static void not_f64(uint8_t *restrict o, const double *restrict a, int64_t n)
{
    for (int64_t i = 0; i < n; i++) o[i] = a[i] == 0;
}

static void not_i64(uint8_t *restrict o, const int64_t *restrict a, int64_t n)
{
    for (int64_t i = 0; i < n; i++) o[i] = a[i] == 0;
}

static void load_ints(int64_t *d, const char *p, int64_t stride, int64_t n, em_dtype dt)
{
    switch (dt) {
    case EM_INT64: for (int64_t i = 0; i < n; i++) d[i] = *(const int64_t *)(p + i * stride); break;
    case EM_INT32: for (int64_t i = 0; i < n; i++) d[i] = *(const int32_t *)(p + i * stride); break;
    case EM_BOOL: for (int64_t i = 0; i < n; i++) d[i] = *(const uint8_t *)(p + i * stride) != 0; break;
    default: for (int64_t i = 0; i < n; i++) d[i] = *(const uint8_t *)(p + i * stride); break;
    }
}

static void store_ints(char *p, int64_t stride, const int64_t *s, int64_t n, em_dtype dt)
{
    switch (dt) {
    case EM_INT64: for (int64_t i = 0; i < n; i++) *(int64_t *)(p + i * stride) = s[i]; break;
    case EM_INT32: for (int64_t i = 0; i < n; i++) *(int32_t *)(p + i * stride) = (int32_t)(uint32_t)(uint64_t)s[i]; break;
    case EM_BOOL: for (int64_t i = 0; i < n; i++) *(uint8_t *)(p + i * stride) = s[i] != 0; break;
    default: for (int64_t i = 0; i < n; i++) *(uint8_t *)(p + i * stride) = (uint8_t)(uint64_t)s[i]; break;
    }
}

static void loop_f32(const un_ctx *c, char **p, const int64_t *s, int64_t n)
{
    int64_t osz = c->to_bool ? 1 : 4;
    if (s[0] == osz && s[1] == 4) {
        if (c->to_bool) not_f32((uint8_t *)p[0], (const float *)p[1], n);
        else un_f32(c->op, (float *)p[0], (const float *)p[1], n);
        return;
    }
    float ba[CHUNK], bo[CHUNK];
    uint8_t bc[CHUNK];
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        const float *a = (const float *)(p[1] + i * s[1]);
        if (s[1] != 4) { gather(ba, (const char *)a, s[1], m, 4); a = ba; }
        char *out = p[0] + i * s[0];
        if (c->to_bool) {
            uint8_t *o = s[0] == 1 ? (uint8_t *)out : bc;
            not_f32(o, a, m);
            if (o == bc) scatter(out, s[0], bc, m, 1);
        } else {
            float *o = s[0] == 4 ? (float *)out : bo;
            un_f32(c->op, o, a, m);
            if (o == bo) scatter(out, s[0], bo, m, 4);
        }
    }
}

/* float16/bfloat16: each chunk widened to float32, the float32 loop, one
 * rounding into the output (what the casts around a float32 op give, in
 * one pass) */
static void loop_half(const un_ctx *c, char **p, const int64_t *s, int64_t n)
{
    float ba[CHUNK], bo[CHUNK];
    uint8_t bc[CHUNK];
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        cpu_half_to_f32(ba, p[1] + i * s[1], s[1], m, c->dt);
        char *out = p[0] + i * s[0];
        if (c->to_bool) {
            uint8_t *o = s[0] == 1 ? (uint8_t *)out : bc;
            not_f32(o, ba, m);
            if (o == bc) scatter(out, s[0], bc, m, 1);
        } else {
            un_f32(c->op, bo, ba, m);
            cpu_f32_to_half(out, s[0], bo, m, c->dt);
        }
    }
}

static void loop_f64(const un_ctx *c, char **p, const int64_t *s, int64_t n)
{
    int64_t osz = c->to_bool ? 1 : 8;
    if (s[0] == osz && s[1] == 8) {
        if (c->to_bool) not_f64((uint8_t *)p[0], (const double *)p[1], n);
        else un_f64(c->op, (double *)p[0], (const double *)p[1], n);
        return;
    }
    double ba[CHUNK], bo[CHUNK];
    uint8_t bc[CHUNK];
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        const double *a = (const double *)(p[1] + i * s[1]);
        if (s[1] != 8) { gather(ba, (const char *)a, s[1], m, 8); a = ba; }
        char *out = p[0] + i * s[0];
        if (c->to_bool) {
            uint8_t *o = s[0] == 1 ? (uint8_t *)out : bc;
            not_f64(o, a, m);
            if (o == bc) scatter(out, s[0], bc, m, 1);
        } else {
            double *o = s[0] == 8 ? (double *)out : bo;
            un_f64(c->op, o, a, m);
            if (o == bo) scatter(out, s[0], bo, m, 8);
        }
    }
}

static void loop_int(const un_ctx *c, char **p, const int64_t *s, int64_t n)
{
    int64_t ba[CHUNK], bo[CHUNK];
    uint8_t bc[CHUNK];
    bool direct = c->dt == EM_INT64;
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        const char *pa = p[1] + i * s[1];
        char *out = p[0] + i * s[0];
        const int64_t *a = ba;
        if (direct && s[1] == 8) a = (const int64_t *)pa; else load_ints(ba, pa, s[1], m, c->dt);
        if (c->to_bool) {
            uint8_t *o = s[0] == 1 ? (uint8_t *)out : bc;
            not_i64(o, a, m);
            if (o == bc) scatter(out, s[0], bc, m, 1);
        } else {
            int64_t *o = direct && s[0] == 8 ? (int64_t *)out : bo;
            un_i64(c->op, o, a, m);
            if (o == bo) store_ints(out, s[0], bo, m, c->dt);
        }
    }
}

static void unary_loop(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const un_ctx *c = ctx;
    switch (c->dt) {
    case EM_FLOAT32: loop_f32(c, p, s, n); break;
    case EM_FLOAT64: loop_f64(c, p, s, n); break;
    case EM_FLOAT16: case EM_BFLOAT16: loop_half(c, p, s, n); break;
    default: loop_int(c, p, s, n); break;
    }
}

/* ops the integer loop implements; the rest need float inputs */
static bool int_op(em_unary_op op)
{
    switch (op) {
    case EM_NEG: case EM_ABS: case EM_SIGN: case EM_RELU: case EM_FLOOR: case EM_CEIL:
    case EM_ROUND: case EM_SQUARE: case EM_LOGICAL_NOT: case EM_TRUNC: case EM_BITWISE_NOT:
        return true;
    default:
        return false;
    }
}

int cpu_unary(em_unary_op op, em_tensor *out, const em_tensor *a)
{
    if ((unsigned)op >= EM_NUNARY) return em_set_error("unary: invalid op %d", (int)op);
    const char *name = em_unary_name(op);
    em_dtype dt = a->dtype;
    bool to_bool = op == EM_LOGICAL_NOT;
    if (out->dtype != (to_bool ? EM_BOOL : dt))
        return em_set_error("%s: CPU kernel called with output dtype %s for %s input", name,
                            em_dtype_name(out->dtype), em_dtype_name(dt));
    if (!em_dtype_is_float(dt) && !int_op(op))
        return em_set_error("%s: the CPU kernel needs float input, got %s", name, em_dtype_name(dt));
    /* bool is 0/1 in the int64 loop, where ~1 would store true */
    if (op == EM_BITWISE_NOT && (em_dtype_is_float(dt) || dt == EM_BOOL))
        return em_set_error("bitwise_not: the CPU kernel needs integer input, got %s", em_dtype_name(dt));
    un_ctx c = {op, dt, to_bool};
    const em_tensor *ts[2] = {out, a};
    cpu_foreach(2, ts, unary_loop, &c);
    return 0;
}
