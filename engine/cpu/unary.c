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
#include "../polygamma.h"

#include <math.h>
#include <string.h>

#define CHUNK 256

typedef struct un_ctx { em_unary_op op; em_dtype dt; bool to_bool; } un_ctx;

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

#define F32_INLINE static inline __attribute__((always_inline))

F32_INLINE double bits_to_f64(uint64_t u) { double d; memcpy(&d, &u, sizeof d); return d; }
F32_INLINE uint64_t f64_to_bits(double d) { uint64_t u; memcpy(&u, &d, sizeof u); return u; }

/* c ? a : b as a blend of bits: gcc does not if-convert a floating-point
 * ?: for AVX2 (the compare may trap, -ftrapping-math), but the value of a
 * compare it does vectorise */
F32_INLINE double sel(int c, double a, double b)
{
    uint64_t m = -(uint64_t)c;
    return bits_to_f64((f64_to_bits(a) & m) | (f64_to_bits(b) & ~m));
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

/* ---- float32 transcendentals ---------------------------------------------
 *
 * libm's expf, logf, tanhf, sinf... are a scalar call per element, which
 * gcc cannot vectorise. The float32 versions below are straight-line code
 * that it does vectorise: each widens the float to double, evaluates there
 * (relative error near 1e-9 or better, from the polynomials) and rounds
 * once into float, so the float result is within about 0.51 ulp of the
 * exact one; exact float inputs of the double formulas, overflow to inf and
 * gradual underflow (subnormal results) come from that last rounding. All
 * selects are on double lanes (gcc if-converts a float select poorly in a
 * loop with double lanes). float64 keeps libm.
 * tests/lua/unary_accuracy_spec.lua measures them against float64 Lua. */

/* y = k ln 2 + r, |r| <= ln 2 / 2, for |y| <= 708 (the caller clamps);
 * returns r and 2^k in *scale */
F32_INLINE double exp_reduce(double y, double *scale)
{
    const double shift = 0x1.8p52;
    double kd = mad(y, 1.4426950408889634, shift);
    uint64_t kbits = f64_to_bits(kd);
    kd -= shift;
    *scale = bits_to_f64((kbits + 1023) << 52);
    return mad(-kd, 1.90821492927058770002e-10, mad(-kd, 6.93147180369123816490e-01, y));
}

/* exp(r) - 1 - r for |r| <= 0.3466: r^2 q(r), q of degree 5 fitted for
 * the relative error of exp(r) - 1 (below 5e-10) */
F32_INLINE double expm1_tail(double r)
{
    double p = 0.00019832959795681117;
    p = mad(p, r, 0.001393354430543637);
    p = mad(p, r, 0.00833339794128557);
    p = mad(p, r, 0.041666466187364325);
    p = mad(p, r, 0.1666666642104222);
    p = mad(p, r, 0.5000000013277789);
    return p * r * r;
}

F32_INLINE double clamp_f64(double y, double lo, double hi)
{
    y = sel(y < lo, lo, y);                   /* NaN passes both */
    return sel(y > hi, hi, y);
}

/* exp(y) for |y| <= 708 */
F32_INLINE double exp_core(double y)
{
    double scale;
    double r = exp_reduce(y, &scale);
    return (1.0 + (r + expm1_tail(r))) * scale;
}

/* exp(y) - 1 for |y| <= 708, relative error near 5e-10 for small |y| too:
 * 2^k (exp(r) - 1) + (2^k - 1), exact for k = 0 but for the polynomial */
F32_INLINE double expm1_core(double y)
{
    double scale;
    double r = exp_reduce(y, &scale);
    return mad(scale, r + expm1_tail(r), scale - 1.0);
}

/* log(x) for positive finite normal x: x = 2^e m with sqrt(1/2) <= m <
 * sqrt(2), log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172, as
 * 2s + s^3 R(s^2), R of degree 3 fitted for relative error (below 5e-12). e comes from the bits without an
 * integer-to-double conversion (AVX2 has none for 64-bit integers). */
F32_INLINE double log_pos_f64_lane(double x, double *ed)
{
    const uint64_t off = 0x3fe6a09e667f3bcdULL;       /* sqrt(1/2) */
    uint64_t ix = f64_to_bits(x);
    uint64_t u = ix - off + (0x200ULL << 52);         /* biased: no borrow */
    uint64_t eb = u >> 52;                            /* e + 0x200 */
    double m = bits_to_f64(ix - ((eb - 0x200) << 52));
    *ed = bits_to_f64(0x4330000000000000ULL | eb) - (0x1p52 + 0x200);
    double f = m - 1.0;
    double s = f / (2.0 + f), z = s * s;
    double p = 0.23581601175442896;
    p = mad(p, z, 0.2853734045594493);
    p = mad(p, z, 0.40000334632777396);
    p = mad(p, z, 0.6666666564822665);
    return mad(p * z, s, 2.0 * s);
}

/* the special values of a logarithm: -inf at 0, NaN below, inf at inf */
F32_INLINE double log_specials(double x, double y)
{
    y = sel(x == 0, -INFINITY, y);
    y = sel(x < 0, NAN, y);
    y = sel(x == INFINITY, x, y);
    return sel(x != x, x, y);
}

#define LN2 0.69314718055994530942

/* exp(-104) rounds to 0 in float and exp(89) to inf: the clamp gives
 * both tails their float values */
F32_INLINE float exp_f32(float x) { return (float)exp_core(clamp_f64(x, -104.0, 89.0)); }

/* expm1(-30) rounds to -1; -0 stays -0 */
F32_INLINE float expm1_f32(float x)
{
    double d = x;
    return (float)sel(d == 0, d, expm1_core(clamp_f64(d, -30.0, 89.0)));
}

F32_INLINE float exp2_f32(float x)
{
    /* 2^x = 2^k 2^r, r = x - k exact; k from the rounding constant; 2^-151
     * rounds to 0 in float and 2^128 to inf */
    const double shift = 0x1.8p52;
    double dc = clamp_f64(x, -151.0, 128.0);
    double kd = dc + shift;
    uint64_t kbits = f64_to_bits(kd);
    kd -= shift;
    double r = (dc - kd) * LN2;
    return (float)((1.0 + (r + expm1_tail(r))) * bits_to_f64((kbits + 1023) << 52));
}

F32_INLINE float log_f32(float x)
{
    double d = x, e;
    double l = log_pos_f64_lane(d, &e);
    return (float)log_specials(d, mad(e, LN2, l));
}

F32_INLINE float log2_f32(float x)
{
    double d = x, e;
    double l = log_pos_f64_lane(d, &e);
    return (float)log_specials(d, mad(l, 1.44269504088896340736, e));
}

F32_INLINE float log10_f32(float x)
{
    double d = x, e;
    double l = log_pos_f64_lane(d, &e);
    return (float)log_specials(d, mad(e, LN2, l) * 0.43429448190325182765);
}

/* log1p(x) = log(u) + (x - (u - 1)) / u with u = 1 + x rounded in double
 * (the second term corrects that rounding) */
F32_INLINE float log1p_f32(float x)
{
    double d = x, e;
    double u = 1.0 + d;
    double l = log_pos_f64_lane(u, &e);
    double y = mad(e, LN2, l) + (d - (u - 1.0)) / u;
    y = log_specials(u, y);
    return (float)sel(d == 0, d, y);
}

/* tanh |x| = e / (e + 2), e = expm1(2 |x|), no cancellation near 0;
 * |x| >= 20 gives 1 */
F32_INLINE float tanh_f32(float x)
{
    double d = x;
    double ax = fabs(d);
    ax = sel(ax > 20.0, 20.0, ax);            /* NaN passes */
    double e = expm1_core(2.0 * ax);
    return (float)copysign(e / (e + 2.0), d);
}

/* 1 / (1 + exp(-x)): exp(-x) has full relative accuracy in double in both
 * tails, so sigmoid(-100) is its tiny subnormal float; below -104 the
 * float result is 0, which the clamp keeps */
F32_INLINE float sigmoid_f32(float x) { return (float)(1.0 / (1.0 + exp_core(clamp_f64(-(double)x, -104.0, 104.0)))); }

/* x / (1 + exp(-x)): down to -3.4e38 / exp(708) the float result is -0
 * as it should be; -inf gives NaN (-inf / inf, as the float formula and
 * PyTorch do) */
F32_INLINE float silu_f32(float x)
{
    double d = x;
    double e = exp_core(clamp_f64(-d, -708.0, 708.0));
    return (float)(d / (1.0 + sel(-d > 708.0, INFINITY, e)));
}

/* ---- the normal distribution, for GELU -----------------------------------
 *
 * gelu(x) = x Phi(x) and its derivative Phi(x) + x phi(x). libm's erff is a
 * scalar call per element, and 0.5 (1 + erf(x / sqrt 2)) cancels for
 * negative x, so float32 goes through straight-line code that gcc
 * vectorises, in double as the functions above: the square of a float is
 * exact there, so exp(-x^2 / 2) takes no rounding error into its argument.
 * float64 keeps libm's erfc.
 *
 * Phi(-|x|) = exp(-x^2 / 2) t Q(t), t = 1 / (1 + |x| / 4), Q a polynomial
 * least-squares fit, weighted for relative error, at 600 Chebyshev nodes in
 * t for |x| <= 20 against mpmath's erfc (scripts/fit_normal_polys.py fits
 * every table of this section again). Beyond 20, Phi(-|x|) is far below
 * the smallest float.
 * - gelu itself takes degree 11 (relative error 4e-10): x Phi(x) never
 *   cancels (for x > 0 it is x (1 - Phi(-x)), Phi(-x) <= 1/2), so with
 *   exp_core's 5e-10 the float result is within about 0.51 ulp.
 * - the derivative takes degree 14 (1.4e-12): Phi(x) + x phi(x) cancels near
 *   its zero at x = -0.75, where only Q's error is magnified. exp's error
 *   is a factor common to both terms, exp(-x^2 / 2) (t Q(t) + x / sqrt(2 pi)),
 *   so it does not cancel and exp_core serves both.
 * tests/lua/gelu_spec.lua checks both against an independent erf. */
static const double normal_tail_q11[12] = {
    0.09973511170485935, 0.09974797408670849, 0.09335979479055642, 0.08192771680502306,
    0.060282790728771754, 0.049081285230503695, 0.02446369378641565, -0.025094491209695396,
    0.07650143465412923, -0.1039828531416055, 0.05405873130631142, -0.010081188939289797,
};
static const double normal_tail_q14[15] = {
    0.09973550186267201, 0.09973817198294127, 0.0934571507588776, 0.08150157642083157,
    0.06025333110715001, 0.059340186768718044, -0.03503071705932154, 0.16508458820767172,
    -0.32170477445076323, 0.4691528651118568, -0.5173850750634329, 0.3771915719638803,
    -0.16958775210148758, 0.04299850342306899, -0.0047451289323784136,
};

/* exp(-x^2 / 2), exactly 0 once it underflows double (so -inf Phi(-inf)
 * is -inf * 0, NaN, as in PyTorch) */
F32_INLINE double half_gauss(double x)
{
    double y = -0.5 * x * x;
    return sel(y < -708.0, 0.0, exp_core(clamp_f64(y, -708.0, 0.0)));
}

/* t = 1 / (1 + |x| / 4): a float division refined by one Newton step in
 * double (relative error near 1e-14). A vector float division costs about
 * half a double one, and the double division was the costliest instruction
 * of this loop. |x| is capped at 40, where the Gaussian factor is already
 * 0, so the step never sees infinities. */
F32_INLINE double tail_t(double x)
{
    double a = fabs(x);
    a = sel(a > 40.0, 40.0, a);               /* NaN passes */
    double d = mad(0.25, a, 1.0);
    double t = 1.0f / (float)d;
    return mad(t, mad(-d, t, 1.0), t);
}

/* |x| <= 3: Phi(x) = 1/2 + x P(x^2 / 9) and Phi(x) + x phi(x) = 1/2 +
 * x G(x^2 / 9), with no exp and no division. P of degree 13 and G of 15,
 * fitted for the absolute error of x P and x G, are within 3e-13 and 5e-14:
 * at x = -3, where 1/2 + x P cancels the most, that is still 2e-10 of
 * Phi(-3) = 1.3e-3. */
#define GELU_NEAR 3.0f
static const double normal_near_p13[14] = {
    0.39894228039828306, -0.5984134201551383, 0.8078580989508164, -0.8655618966664085,
    0.7573628106030353, -0.5576679989708158, 0.35378335173689157, -0.19672151388104267,
    0.09676653581045139, -0.04189040508666855, 0.015461706862155436, -0.0045199175545278325,
    0.0009087828631472011, -9.171425415036939e-05,
};
static const double normal_near_g15[16] = {
    0.7978845608023741, -2.3936536823190777, 4.847148701996125, -6.924498027520041,
    7.573668020624271, -6.692352999498726, 4.954819657903757, -3.1544887803592965,
    1.7600340795672227, -0.8717968691375306, 0.38513003934440665, -0.15015062621763858,
    0.04980898798764176, -0.013032935322843891, 0.0023392872725317678, -0.0002108660551276777,
};

/* the elements go in blocks: a block whose every |x| is at most 3 (most of
 * them, for activations) takes the short polynomial, any other (NaN too)
 * the tail form above */
#define GELU_BLOCK 32
static bool gelu_block_near(const float *restrict a, int64_t n)
{
    int far = 0;
    for (int64_t i = 0; i < n; i++) far |= !(fabsf(a[i]) <= GELU_NEAR);
    return !far;
}

static void gelu_near_f32(float *restrict o, const float *restrict a, int64_t n)
{
    const double *c = normal_near_p13;
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], s = x * x * (1.0 / 9);
        double p = mad(mad(mad(mad(mad(mad(mad(c[13], s, c[12]), s, c[11]), s, c[10]), s, c[9]), s, c[8]), s, c[7]), s, c[6]);
        p = mad(mad(mad(mad(mad(mad(p, s, c[5]), s, c[4]), s, c[3]), s, c[2]), s, c[1]), s, c[0]);
        o[i] = (float)(x * mad(x, p, 0.5));
    }
}

static void gelu_far_f32(float *restrict o, const float *restrict a, int64_t n)
{
    const double *c = normal_tail_q11;
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], t = tail_t(x);
        double q = mad(mad(mad(mad(c[11], t, c[10]), t, c[9]), t, c[8]), t, c[7]);
        q = mad(mad(mad(mad(mad(mad(mad(q, t, c[6]), t, c[5]), t, c[4]), t, c[3]), t, c[2]), t, c[1]), t, c[0]);
        double tail = half_gauss(x) * t * q;
        o[i] = (float)(x * sel(x < 0, tail, 1.0 - tail));
    }
}

/* d/dx x Phi(x) = Phi(x) + x phi(x) */
static void gelu_grad_near_f32(float *restrict o, const float *restrict a, int64_t n)
{
    const double *c = normal_near_g15;
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], s = x * x * (1.0 / 9);
        double p = mad(mad(mad(mad(mad(mad(mad(mad(c[15], s, c[14]), s, c[13]), s, c[12]), s, c[11]), s, c[10]), s, c[9]), s, c[8]), s, c[7]);
        p = mad(mad(mad(mad(mad(mad(mad(p, s, c[6]), s, c[5]), s, c[4]), s, c[3]), s, c[2]), s, c[1]), s, c[0]);
        o[i] = (float)mad(x, p, 0.5);
    }
}

static void gelu_grad_far_f32(float *restrict o, const float *restrict a, int64_t n)
{
    const double *c = normal_tail_q14;
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], t = tail_t(x), e = half_gauss(x);
        double q = mad(mad(mad(mad(c[14], t, c[13]), t, c[12]), t, c[11]), t, c[10]);
        q = mad(mad(mad(mad(mad(q, t, c[9]), t, c[8]), t, c[7]), t, c[6]), t, c[5]);
        q = mad(mad(mad(mad(mad(q, t, c[4]), t, c[3]), t, c[2]), t, c[1]), t, c[0]);
        double tail = e * t * q;
        o[i] = (float)(sel(x < 0, tail, 1.0 - tail) + x * (e * 0.39894228040143267794));
    }
}

static void gelu_blocks_f32(float *restrict o, const float *restrict a, int64_t n, bool grad)
{
    for (int64_t b = 0; b < n; b += GELU_BLOCK) {
        int64_t m = n - b < GELU_BLOCK ? n - b : GELU_BLOCK;
        bool near = gelu_block_near(a + b, m);
        if (grad) (near ? gelu_grad_near_f32 : gelu_grad_far_f32)(o + b, a + b, m);
        else (near ? gelu_near_f32 : gelu_far_f32)(o + b, a + b, m);
    }
}

/* sin and cos: x = k pi/2 + r, |r| <= pi/4, Cody-Waite in double with pi/2
 * in three 33-bit parts (fdlibm's): for |k| < 2^20 each k * part is exact,
 * x - k p1 is exact, and the missing tail of pi/2 (below 1e-31) leaves r
 * an absolute error under 1e-25, far below the nearest approach of a float
 * to a multiple of pi/2 in that range. Inputs above TRIG_BIG go to libm,
 * a block at a time (trig_f32 below). */
#define TRIG_BIG 1.0e6f
F32_INLINE double sin_poly(double r, double z)
{
    double p = 2.718121092851816e-06;
    p = mad(p, z, -0.000198393122055037);
    p = mad(p, z, 0.008333329304605643);
    p = mad(p, z, -0.16666666640794395);
    return mad(p * z, r, r);
}

F32_INLINE double cos_poly(double z)
{
    double p = 2.4383561298808465e-05;
    p = mad(p, z, -0.0013886681575206734);
    p = mad(p, z, 0.04166662035439209);
    p = mad(p, z, -0.49999999694444913);
    return mad(p, z, 1.0);
}

/* sin(x + q pi/2), for q = 0 (sin) or 1 (cos) */
F32_INLINE float sincos_f32(float x, uint64_t q)
{
    const double shift = 0x1.8p52;
    double d = x;
    double kd = mad(d, 0.63661977236758134308, shift);
    uint64_t n = f64_to_bits(kd) + q;
    kd -= shift;
    double r = mad(-kd, 1.57079632673412561417e+00, d);
    r = mad(-kd, 6.07710050630396597660e-11, r);
    r = mad(-kd, 2.02226624871116645580e-21, r);
    double z = r * r;
    double s = sin_poly(r, z), c = cos_poly(z);
    s = sel(z == 0, r, s);                    /* sin(-0) = -0 */
    uint64_t odd = -(n & 1);
    double v = bits_to_f64((f64_to_bits(c) & odd) | (f64_to_bits(s) & ~odd));
    v = bits_to_f64(f64_to_bits(v) ^ ((n & 2) << 62));
    return (float)v;
}

static void trig_f32(float *restrict o, const float *restrict a, int64_t n, uint64_t q)
{
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t m = n - i0 < CHUNK ? n - i0 : CHUNK;
        const float *x = a + i0;
        float *y = o + i0;
        /* inf and NaN count as big (libm gives their NaN) */
        const uint32_t big_bits = 0x49742400u;
        uint32_t big = 0;
        for (int64_t i = 0; i < m; i++) {
            uint32_t b;
            memcpy(&b, &x[i], sizeof b);
            big |= (b & 0x7fffffffu) >= big_bits;
        }
        if (!big) {
            for (int64_t i = 0; i < m; i++) y[i] = sincos_f32(x[i], q);
        } else {
            for (int64_t i = 0; i < m; i++) {
                float v = x[i];
                y[i] = !(fabsf(v) < TRIG_BIG) ? (q ? cosf(v) : sinf(v)) : sincos_f32(v, q);
            }
        }
    }
}

/* ---- the gamma functions ---------------------------------------------------
 * log |Gamma(x)| through lgamma_r (lgamma writes the global signgam, a race
 * between this pool's threads); float32 in double, rounded once. digamma is
 * engine/polygamma.h's, which every backend shares. */
static double lgamma_f64(double x)
{
    int sign;
    return lgamma_r(x, &sign);
}

/* ---- float32 ------------------------------------------------------------- */

static void un_f32(em_unary_op op, float *restrict o, const float *restrict a, int64_t n)
{
    switch (op) {
    case EM_NEG: for (int64_t i = 0; i < n; i++) o[i] = -a[i]; break;
    case EM_ABS: for (int64_t i = 0; i < n; i++) o[i] = fabsf(a[i]); break;
    /* NaN gives 0, as in PyTorch */
    case EM_SIGN: for (int64_t i = 0; i < n; i++) o[i] = (float)((a[i] > 0) - (a[i] < 0)); break;
    case EM_EXP: for (int64_t i = 0; i < n; i++) o[i] = exp_f32(a[i]); break;
    case EM_LOG: for (int64_t i = 0; i < n; i++) o[i] = log_f32(a[i]); break;
    case EM_LOG1P: for (int64_t i = 0; i < n; i++) o[i] = log1p_f32(a[i]); break;
    case EM_EXPM1: for (int64_t i = 0; i < n; i++) o[i] = expm1_f32(a[i]); break;
    case EM_SQRT: for (int64_t i = 0; i < n; i++) o[i] = sqrtf(a[i]); break;
    case EM_RSQRT: for (int64_t i = 0; i < n; i++) o[i] = 1.0f / sqrtf(a[i]); break;
    case EM_SIN: trig_f32(o, a, n, 0); break;
    case EM_COS: trig_f32(o, a, n, 1); break;
    case EM_TANH: for (int64_t i = 0; i < n; i++) o[i] = tanh_f32(a[i]); break;
    case EM_SIGMOID: for (int64_t i = 0; i < n; i++) o[i] = sigmoid_f32(a[i]); break;
    /* x < 0 ? 0 : x keeps NaN and -0.0 as PyTorch does */
    case EM_RELU: for (int64_t i = 0; i < n; i++) o[i] = a[i] < 0 ? 0.0f : a[i]; break;
    case EM_GELU: gelu_blocks_f32(o, a, n, false); break;
    case EM_GELU_GRAD: gelu_blocks_f32(o, a, n, true); break;
    case EM_SILU: for (int64_t i = 0; i < n; i++) o[i] = silu_f32(a[i]); break;
    case EM_FLOOR: for (int64_t i = 0; i < n; i++) o[i] = floorf(a[i]); break;
    case EM_CEIL: for (int64_t i = 0; i < n; i++) o[i] = ceilf(a[i]); break;
    /* the default rounding mode rounds half to even */
    case EM_ROUND: for (int64_t i = 0; i < n; i++) o[i] = nearbyintf(a[i]); break;
    case EM_RECIPROCAL: for (int64_t i = 0; i < n; i++) o[i] = 1.0f / a[i]; break;
    case EM_SQUARE: for (int64_t i = 0; i < n; i++) o[i] = a[i] * a[i]; break;
    case EM_EXP2: for (int64_t i = 0; i < n; i++) o[i] = exp2_f32(a[i]); break;
    case EM_LOG2: for (int64_t i = 0; i < n; i++) o[i] = log2_f32(a[i]); break;
    case EM_LOG10: for (int64_t i = 0; i < n; i++) o[i] = log10_f32(a[i]); break;
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
    case EM_DIGAMMA: for (int64_t i = 0; i < n; i++) o[i] = (float)em_digamma(a[i]); break;
    case EM_LGAMMA: for (int64_t i = 0; i < n; i++) o[i] = (float)lgamma_f64(a[i]); break;
    /* not float loops (logical_not: not_f32; bitwise_not: integers only).
     * No default case: -Wswitch fails the build while an op of the table
     * has no case here. */
    case EM_LOGICAL_NOT: case EM_BITWISE_NOT: case EM_NUNARY: break;
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
    case EM_DIGAMMA: for (int64_t i = 0; i < n; i++) o[i] = em_digamma(a[i]); break;
    case EM_LGAMMA: for (int64_t i = 0; i < n; i++) o[i] = lgamma_f64(a[i]); break;
    case EM_LOGICAL_NOT: case EM_BITWISE_NOT: case EM_NUNARY: break;   /* as in un_f32 */
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

/* The float32 or float64 loop (un_f32 / un_f64, or logical_not) on o[0..m)
 * from a[0..m) */
static void float_run(const un_ctx *c, void *o, const void *a, int64_t m)
{
    bool f32 = c->dt == EM_FLOAT32;
    if (c->to_bool) {
        if (f32) not_f32(o, a, m);
        else not_f64(o, a, m);
    } else if (f32) {
        un_f32(c->op, o, a, m);
    } else {
        un_f64(c->op, o, a, m);
    }
}

/* float32 and float64: contiguous operands in one run; strided ones a chunk
 * at a time through packed buffers */
static void loop_float(const un_ctx *c, char **p, const int64_t *s, int64_t n)
{
    int64_t esz = c->dt == EM_FLOAT32 ? 4 : 8, osz = c->to_bool ? 1 : esz;
    if (s[0] == osz && s[1] == esz) {
        float_run(c, p[0], p[1], n);
        return;
    }
    double ba[CHUNK], bo[CHUNK];    /* CHUNK elements of either dtype */
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        const char *a = p[1] + i * s[1];
        if (s[1] != esz) { cpu_gather(ba, a, s[1], m, (size_t)esz); a = (const char *)ba; }
        char *out = p[0] + i * s[0];
        void *o = s[0] == osz ? (void *)out : (void *)bo;
        float_run(c, o, a, m);
        if (o == bo) cpu_scatter(out, s[0], bo, m, (size_t)osz);
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
            if (o == bc) cpu_scatter(out, s[0], bc, m, 1);
        } else {
            un_f32(c->op, bo, ba, m);
            cpu_f32_to_half(out, s[0], bo, m, c->dt);
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
        if (direct && s[1] == 8) a = (const int64_t *)pa; else cpu_load_ints(ba, pa, s[1], m, c->dt);
        if (c->to_bool) {
            uint8_t *o = s[0] == 1 ? (uint8_t *)out : bc;
            not_i64(o, a, m);
            if (o == bc) cpu_scatter(out, s[0], bc, m, 1);
        } else {
            int64_t *o = direct && s[0] == 8 ? (int64_t *)out : bo;
            un_i64(c->op, o, a, m);
            if (o == bo) cpu_store_ints(out, s[0], bo, m, c->dt);
        }
    }
}

static void unary_loop(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const un_ctx *c = ctx;
    switch (c->dt) {
    case EM_FLOAT32: case EM_FLOAT64: loop_float(c, p, s, n); break;
    case EM_FLOAT16: case EM_BFLOAT16: loop_half(c, p, s, n); break;
    default: loop_int(c, p, s, n); break;
    }
}

/* ops the integer loop implements (un_i64); the float ops need float inputs */
static bool int_op(em_unary_op op) { return em_unary_info(op)->dtypes != EM_OPDT_FLOAT; }

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
