/* unary_math.h — the formula of every unary elementwise op, written once for
 * every backend: the CPU's loops (engine/cpu/unary.c) and the CUDA kernels
 * (kernels/unary.cu, which the emulated device also compiles) call
 * em_un_f32 / em_un_f64 / em_un_i64 with a constant op, and each side's
 * dispatch is made from the op table (elementwise_ops.h). So an op is its
 * line in the table, its cases here and its backward
 * (engine/grad_elementwise.c).
 *
 * Most formulas are one text for every backend. Where the CPU and a GPU
 * want different code for float32, UM_PICK(gpu, cpu) names both: a GPU
 * takes CUDA's single-precision functions (expf, normcdff, ...), documented
 * within a few ulp; the CPU (and the emulated device, which runs on it)
 * takes the straight-line code below, which gcc vectorises: each widens
 * the float to double, evaluates there and rounds once, within about 0.51
 * ulp of the exact result (tests/lua/unary_accuracy_spec.lua measures
 * them against float64). float64 is libm's (or CUDA's) on both but for
 * erfinv and lgamma. Integer and bool inputs compute in int64 (wrap-around
 * through unsigned arithmetic), float16 and bfloat16 in float32.
 *
 * The switches have no default case, so gcc's -Wswitch (-Werror) refuses a
 * build where an op of the table has no case here. */
#ifndef EMBER_UNARY_MATH_H
#define EMBER_UNARY_MATH_H

#include "ember.h"
#include "polygamma.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__) || defined(EMBER_CUDA_EMU)
#define UM_FN __host__ __device__ static inline __attribute__((always_inline))
#else
#define UM_FN static inline __attribute__((always_inline))
#endif

/* UM_PICK(gpu, cpu): the GPU's expression in device code, the CPU's
 * elsewhere (the CPU backend, the emulated device, nvcc's host pass) */
#ifdef __CUDA_ARCH__
#define UM_PICK(gpu, cpu) (gpu)
#else
#define UM_PICK(gpu, cpu) (cpu)
#endif

/* GELU's tanh form: 0.5 x (1 + tanh(UM_GELU_K (x + UM_GELU_C x^3))) */
#define UM_GELU_K 0.7978845608028654   /* sqrt(2/pi) */
#define UM_GELU_C 0.044715

/* Which loops an op of the table has, from its em_op_dtypes class:
 * UM_IF_FLOAT_LOOP(dtypes, text) is text for the ops with float loops,
 * UM_IF_INT_LOOP(dtypes, text) for those with integer ones (logical_not,
 * EM_OPDT_TO_BOOL, has its own bool-valued loops on each backend). */
#define UM_IF_FLOAT_LOOP(dtypes, ...) UM_FLOAT_LOOP_##dtypes(__VA_ARGS__)
#define UM_FLOAT_LOOP_EM_OPDT_FLOAT(...) __VA_ARGS__
#define UM_FLOAT_LOOP_EM_OPDT_NUMERIC(...) __VA_ARGS__
#define UM_FLOAT_LOOP_EM_OPDT_ALL(...) __VA_ARGS__
#define UM_FLOAT_LOOP_EM_OPDT_INTEGER(...)
#define UM_FLOAT_LOOP_EM_OPDT_BITWISE(...)
#define UM_FLOAT_LOOP_EM_OPDT_TO_BOOL(...)
#define UM_IF_INT_LOOP(dtypes, ...) UM_INT_LOOP_##dtypes(__VA_ARGS__)
#define UM_INT_LOOP_EM_OPDT_FLOAT(...)
#define UM_INT_LOOP_EM_OPDT_NUMERIC(...) __VA_ARGS__
#define UM_INT_LOOP_EM_OPDT_ALL(...) __VA_ARGS__
#define UM_INT_LOOP_EM_OPDT_INTEGER(...) __VA_ARGS__
#define UM_INT_LOOP_EM_OPDT_BITWISE(...) __VA_ARGS__
#define UM_INT_LOOP_EM_OPDT_TO_BOOL(...)

#ifndef __CUDA_ARCH__
/* ---- the CPU's float32 formulas (host code) -------------------------------
 *
 * libm's expf, logf, tanhf, sinf... are a scalar call per element, which
 * gcc cannot vectorise. These are straight-line code that it does: each
 * widens the float to double, evaluates there (relative error near 1e-9 or
 * better, from the polynomials) and rounds once into float, so the float
 * result is within about 0.51 ulp of the exact one; exact float inputs of
 * the double formulas, overflow to inf and gradual underflow (subnormal
 * results) come from that last rounding. All selects are on double lanes
 * (gcc if-converts a float select poorly in a loop with double lanes). */
#define UM_CPU_FN static inline __attribute__((always_inline))

/* a * b + c, fused where the target has FMA (-std=c11 turns off gcc's own
 * contraction); elsewhere fma() would be a slow library call */
UM_CPU_FN double um_mad(double a, double b, double c)
{
#ifdef __FMA__
    return fma(a, b, c);
#else
    return a * b + c;
#endif
}

UM_CPU_FN double um_bits_to_f64(uint64_t u) { double d; memcpy(&d, &u, sizeof d); return d; }
UM_CPU_FN uint64_t um_f64_to_bits(double d) { uint64_t u; memcpy(&u, &d, sizeof u); return u; }

/* c ? a : b as a blend of bits: gcc does not if-convert a floating-point
 * ?: for AVX2 (the compare may trap, -ftrapping-math), but the value of a
 * compare it does vectorise */
UM_CPU_FN double um_sel(int c, double a, double b)
{
    uint64_t m = -(uint64_t)c;
    return um_bits_to_f64((um_f64_to_bits(a) & m) | (um_f64_to_bits(b) & ~m));
}


/* ---- erfinv -----------------------------------------------------------------
 * Giles' single-precision approximation ("Approximating the erfinv
 * function", GPU Computing Gems, 2011) as a start, then Newton steps in
 * double. */
static inline double um_erfinv_f64(double y)
{
    if (!(fabs(y) <= 1)) return NAN;
    if (fabs(y) == 1) return copysign(INFINITY, y);
    if (y == 0) return y;
    double w = -log((1 - y) * (1 + y)), p;
    if (w < 5) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = um_mad(p, w, 3.43273939e-07);
        p = um_mad(p, w, -3.5233877e-06);
        p = um_mad(p, w, -4.39150654e-06);
        p = um_mad(p, w, 0.00021858087);
        p = um_mad(p, w, -0.00125372503);
        p = um_mad(p, w, -0.00417768164);
        p = um_mad(p, w, 0.246640727);
        p = um_mad(p, w, 1.50140941);
    } else {
        w = sqrt(w) - 3;
        p = -0.000200214257;
        p = um_mad(p, w, 0.000100950558);
        p = um_mad(p, w, 0.00134934322);
        p = um_mad(p, w, -0.00367342844);
        p = um_mad(p, w, 0.00573950773);
        p = um_mad(p, w, -0.0076224613);
        p = um_mad(p, w, 0.00943887047);
        p = um_mad(p, w, 1.00167406);
        p = um_mad(p, w, 2.83297682);
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
UM_CPU_FN double um_exp_reduce(double y, double *scale)
{
    const double shift = 0x1.8p52;
    double kd = um_mad(y, 1.4426950408889634, shift);
    uint64_t kbits = um_f64_to_bits(kd);
    kd -= shift;
    *scale = um_bits_to_f64((kbits + 1023) << 52);
    return um_mad(-kd, 1.90821492927058770002e-10, um_mad(-kd, 6.93147180369123816490e-01, y));
}

/* exp(r) - 1 - r for |r| <= 0.3466: r^2 q(r), q of degree 5 fitted for
 * the relative error of exp(r) - 1 (below 5e-10) */
UM_CPU_FN double um_expm1_tail(double r)
{
    double p = 0.00019832959795681117;
    p = um_mad(p, r, 0.001393354430543637);
    p = um_mad(p, r, 0.00833339794128557);
    p = um_mad(p, r, 0.041666466187364325);
    p = um_mad(p, r, 0.1666666642104222);
    p = um_mad(p, r, 0.5000000013277789);
    return p * r * r;
}

UM_CPU_FN double um_clamp_f64(double y, double lo, double hi)
{
    y = um_sel(y < lo, lo, y);                   /* NaN passes both */
    return um_sel(y > hi, hi, y);
}

/* exp(y) for |y| <= 708 */
UM_CPU_FN double um_exp_core(double y)
{
    double scale;
    double r = um_exp_reduce(y, &scale);
    return (1.0 + (r + um_expm1_tail(r))) * scale;
}

/* exp(y) - 1 for |y| <= 708, relative error near 5e-10 for small |y| too:
 * 2^k (exp(r) - 1) + (2^k - 1), exact for k = 0 but for the polynomial */
UM_CPU_FN double um_expm1_core(double y)
{
    double scale;
    double r = um_exp_reduce(y, &scale);
    return um_mad(scale, r + um_expm1_tail(r), scale - 1.0);
}

/* log(x) for positive finite normal x: x = 2^e m with sqrt(1/2) <= m <
 * sqrt(2), log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172, as
 * 2s + s^3 R(s^2), R of degree 3 fitted for relative error (below 5e-12). e comes from the bits without an
 * integer-to-double conversion (AVX2 has none for 64-bit integers). */
UM_CPU_FN double um_log_pos_f64_lane(double x, double *ed)
{
    const uint64_t off = 0x3fe6a09e667f3bcdULL;       /* sqrt(1/2) */
    uint64_t ix = um_f64_to_bits(x);
    uint64_t u = ix - off + (0x200ULL << 52);         /* biased: no borrow */
    uint64_t eb = u >> 52;                            /* e + 0x200 */
    double m = um_bits_to_f64(ix - ((eb - 0x200) << 52));
    *ed = um_bits_to_f64(0x4330000000000000ULL | eb) - (0x1p52 + 0x200);
    double f = m - 1.0;
    double s = f / (2.0 + f), z = s * s;
    double p = 0.23581601175442896;
    p = um_mad(p, z, 0.2853734045594493);
    p = um_mad(p, z, 0.40000334632777396);
    p = um_mad(p, z, 0.6666666564822665);
    return um_mad(p * z, s, 2.0 * s);
}

/* the special values of a logarithm: -inf at 0, NaN below, inf at inf */
UM_CPU_FN double um_log_specials(double x, double y)
{
    y = um_sel(x == 0, -INFINITY, y);
    y = um_sel(x < 0, NAN, y);
    y = um_sel(x == INFINITY, x, y);
    return um_sel(x != x, x, y);
}

#define UM_LN2 0.69314718055994530942

/* exp(-104) rounds to 0 in float and exp(89) to inf: the clamp gives
 * both tails their float values */
UM_CPU_FN float um_exp_f32(float x) { return (float)um_exp_core(um_clamp_f64(x, -104.0, 89.0)); }

/* expm1(-30) rounds to -1; -0 stays -0 */
UM_CPU_FN float um_expm1_f32(float x)
{
    double d = x;
    return (float)um_sel(d == 0, d, um_expm1_core(um_clamp_f64(d, -30.0, 89.0)));
}

UM_CPU_FN float um_exp2_f32(float x)
{
    /* 2^x = 2^k 2^r, r = x - k exact; k from the rounding constant; 2^-151
     * rounds to 0 in float and 2^128 to inf */
    const double shift = 0x1.8p52;
    double dc = um_clamp_f64(x, -151.0, 128.0);
    double kd = dc + shift;
    uint64_t kbits = um_f64_to_bits(kd);
    kd -= shift;
    double r = (dc - kd) * UM_LN2;
    return (float)((1.0 + (r + um_expm1_tail(r))) * um_bits_to_f64((kbits + 1023) << 52));
}

UM_CPU_FN float um_log_f32(float x)
{
    double d = x, e;
    double l = um_log_pos_f64_lane(d, &e);
    return (float)um_log_specials(d, um_mad(e, UM_LN2, l));
}

UM_CPU_FN float um_log2_f32(float x)
{
    double d = x, e;
    double l = um_log_pos_f64_lane(d, &e);
    return (float)um_log_specials(d, um_mad(l, 1.44269504088896340736, e));
}

UM_CPU_FN float um_log10_f32(float x)
{
    double d = x, e;
    double l = um_log_pos_f64_lane(d, &e);
    return (float)um_log_specials(d, um_mad(e, UM_LN2, l) * 0.43429448190325182765);
}

/* log1p(x) = log(u) + (x - (u - 1)) / u with u = 1 + x rounded in double
 * (the second term corrects that rounding) */
UM_CPU_FN float um_log1p_f32(float x)
{
    double d = x, e;
    double u = 1.0 + d;
    double l = um_log_pos_f64_lane(u, &e);
    double y = um_mad(e, UM_LN2, l) + (d - (u - 1.0)) / u;
    y = um_log_specials(u, y);
    return (float)um_sel(d == 0, d, y);
}

/* tanh |x| = e / (e + 2), e = expm1(2 |x|), no cancellation near 0;
 * |x| >= 20 gives 1 */
UM_CPU_FN float um_tanh_f32(float x)
{
    double d = x;
    double ax = fabs(d);
    ax = um_sel(ax > 20.0, 20.0, ax);            /* NaN passes */
    double e = um_expm1_core(2.0 * ax);
    return (float)copysign(e / (e + 2.0), d);
}

/* 1 / (1 + exp(-x)): exp(-x) has full relative accuracy in double in both
 * tails, so sigmoid(-100) is its tiny subnormal float; below -104 the
 * float result is 0, which the clamp keeps */
UM_CPU_FN float um_sigmoid_f32(float x) { return (float)(1.0 / (1.0 + um_exp_core(um_clamp_f64(-(double)x, -104.0, 104.0)))); }

/* GELU's tanh form, 0.5 x (1 + tanh u) with u = sqrt(2/pi) (x + 0.044715 x^3),
 * as x sigmoid(2u): no cancellation where tanh u is near -1 (the tanh form
 * gives 0 for x below about -5 in float32, -9 in float64), and only exp, in
 * double lanes, rounded once. The clamp keeps exp finite: past |2u| = 104
 * the float result is already 0 or x. The derivative: s + 2 x s (1 - s) u'. */
UM_CPU_FN double um_gelu_tanh_sig(double x)
{
    double u = UM_GELU_K * (x + UM_GELU_C * x * x * x);
    return 1.0 / (1.0 + um_exp_core(um_clamp_f64(-2.0 * u, -104.0, 104.0)));
}

UM_CPU_FN float um_gelu_tanh_f32(float a)
{
    double x = a;
    return (float)(x * um_gelu_tanh_sig(x));
}

UM_CPU_FN float um_gelu_tanh_grad_f32(float a)
{
    double x = a, s = um_gelu_tanh_sig(x);
    return (float)(s + 2.0 * x * s * (1.0 - s) * UM_GELU_K * (1.0 + 3.0 * UM_GELU_C * x * x));
}

/* x / (1 + exp(-x)): down to -3.4e38 / exp(708) the float result is -0
 * as it should be; -inf gives NaN (-inf / inf, as the float formula and
 * PyTorch do) */
UM_CPU_FN float um_silu_f32(float x)
{
    double d = x;
    double e = um_exp_core(um_clamp_f64(-d, -708.0, 708.0));
    return (float)(d / (1.0 + um_sel(-d > 708.0, INFINITY, e)));
}

/* silu'(x) = s (1 + x (1 - s)) from the float sigmoid s (PyTorch's formula on
 * sigmoid's float value: at -inf, 0 (-inf) is NaN as there), in double, rounded
 * once */
UM_CPU_FN float um_silu_grad_f32(float x)
{
    double d = x, s = um_sigmoid_f32(x);
    return (float)(s * (1.0 + d * (1.0 - s)));
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
 *   um_exp_core's 5e-10 the float result is within about 0.51 ulp.
 * - the derivative takes degree 14 (1.4e-12): Phi(x) + x phi(x) cancels near
 *   its zero at x = -0.75, where only Q's error is magnified. exp's error
 *   is a factor common to both terms, exp(-x^2 / 2) (t Q(t) + x / sqrt(2 pi)),
 *   so it does not cancel and um_exp_core serves both.
 * tests/lua/gelu_spec.lua checks both against an independent erf. */
static const double um_normal_tail_q11[12] = {
    0.09973511170485935, 0.09974797408670849, 0.09335979479055642, 0.08192771680502306,
    0.060282790728771754, 0.049081285230503695, 0.02446369378641565, -0.025094491209695396,
    0.07650143465412923, -0.1039828531416055, 0.05405873130631142, -0.010081188939289797,
};
static const double um_normal_tail_q14[15] = {
    0.09973550186267201, 0.09973817198294127, 0.0934571507588776, 0.08150157642083157,
    0.06025333110715001, 0.059340186768718044, -0.03503071705932154, 0.16508458820767172,
    -0.32170477445076323, 0.4691528651118568, -0.5173850750634329, 0.3771915719638803,
    -0.16958775210148758, 0.04299850342306899, -0.0047451289323784136,
};

/* exp(-x^2 / 2), exactly 0 once it underflows double (so -inf Phi(-inf)
 * is -inf * 0, NaN, as in PyTorch) */
UM_CPU_FN double um_half_gauss(double x)
{
    double y = -0.5 * x * x;
    return um_sel(y < -708.0, 0.0, um_exp_core(um_clamp_f64(y, -708.0, 0.0)));
}

/* t = 1 / (1 + |x| / 4): a float division refined by one Newton step in
 * double (relative error near 1e-14). A vector float division costs about
 * half a double one, and the double division was the costliest instruction
 * of this loop. |x| is capped at 40, where the Gaussian factor is already
 * 0, so the step never sees infinities. */
UM_CPU_FN double um_tail_t(double x)
{
    double a = fabs(x);
    a = um_sel(a > 40.0, 40.0, a);               /* NaN passes */
    double d = um_mad(0.25, a, 1.0);
    double t = 1.0f / (float)d;
    return um_mad(t, um_mad(-d, t, 1.0), t);
}

/* |x| <= 3: Phi(x) = 1/2 + x P(x^2 / 9) and Phi(x) + x phi(x) = 1/2 +
 * x G(x^2 / 9), with no exp and no division. P of degree 13 and G of 15,
 * fitted for the absolute error of x P and x G, are within 3e-13 and 5e-14:
 * at x = -3, where 1/2 + x P cancels the most, that is still 2e-10 of
 * Phi(-3) = 1.3e-3. */
#define UM_GELU_NEAR 3.0f
static const double um_normal_near_p13[14] = {
    0.39894228039828306, -0.5984134201551383, 0.8078580989508164, -0.8655618966664085,
    0.7573628106030353, -0.5576679989708158, 0.35378335173689157, -0.19672151388104267,
    0.09676653581045139, -0.04189040508666855, 0.015461706862155436, -0.0045199175545278325,
    0.0009087828631472011, -9.171425415036939e-05,
};
static const double um_normal_near_g15[16] = {
    0.7978845608023741, -2.3936536823190777, 4.847148701996125, -6.924498027520041,
    7.573668020624271, -6.692352999498726, 4.954819657903757, -3.1544887803592965,
    1.7600340795672227, -0.8717968691375306, 0.38513003934440665, -0.15015062621763858,
    0.04980898798764176, -0.013032935322843891, 0.0023392872725317678, -0.0002108660551276777,
};

/* x Phi(x) and Phi(x) + x phi(x), |x| <= UM_GELU_NEAR */
UM_CPU_FN float um_gelu_near(float a)
{
    const double *c = um_normal_near_p13;
    double x = a, s = x * x * (1.0 / 9);
    double p = um_mad(um_mad(um_mad(um_mad(um_mad(um_mad(um_mad(c[13], s, c[12]), s, c[11]), s, c[10]), s, c[9]), s, c[8]), s, c[7]), s, c[6]);
    p = um_mad(um_mad(um_mad(um_mad(um_mad(um_mad(p, s, c[5]), s, c[4]), s, c[3]), s, c[2]), s, c[1]), s, c[0]);
    return (float)(x * um_mad(x, p, 0.5));
}

UM_CPU_FN float um_gelu_grad_near(float a)
{
    const double *c = um_normal_near_g15;
    double x = a, s = x * x * (1.0 / 9);
    double p = um_mad(um_mad(um_mad(um_mad(um_mad(um_mad(um_mad(um_mad(c[15], s, c[14]), s, c[13]), s, c[12]), s, c[11]), s, c[10]), s, c[9]), s, c[8]), s, c[7]);
    p = um_mad(um_mad(um_mad(um_mad(um_mad(um_mad(um_mad(p, s, c[6]), s, c[5]), s, c[4]), s, c[3]), s, c[2]), s, c[1]), s, c[0]);
    return (float)um_mad(x, p, 0.5);
}

/* the same for any x (the tail form; NaN too) */
UM_CPU_FN float um_gelu_far(float a)
{
    const double *c = um_normal_tail_q11;
    double x = a, t = um_tail_t(x);
    double q = um_mad(um_mad(um_mad(um_mad(c[11], t, c[10]), t, c[9]), t, c[8]), t, c[7]);
    q = um_mad(um_mad(um_mad(um_mad(um_mad(um_mad(um_mad(q, t, c[6]), t, c[5]), t, c[4]), t, c[3]), t, c[2]), t, c[1]), t, c[0]);
    double tail = um_half_gauss(x) * t * q;
    return (float)(x * um_sel(x < 0, tail, 1.0 - tail));
}

UM_CPU_FN float um_gelu_grad_far(float a)
{
    const double *c = um_normal_tail_q14;
    double x = a, t = um_tail_t(x), e = um_half_gauss(x);
    double q = um_mad(um_mad(um_mad(um_mad(c[14], t, c[13]), t, c[12]), t, c[11]), t, c[10]);
    q = um_mad(um_mad(um_mad(um_mad(um_mad(q, t, c[9]), t, c[8]), t, c[7]), t, c[6]), t, c[5]);
    q = um_mad(um_mad(um_mad(um_mad(um_mad(q, t, c[4]), t, c[3]), t, c[2]), t, c[1]), t, c[0]);
    double tail = e * t * q;
    return (float)(um_sel(x < 0, tail, 1.0 - tail) + x * (e * 0.39894228040143267794));
}

/* sin and cos: x = k pi/2 + r, |r| <= pi/4, Cody-Waite in double with pi/2
 * in three 33-bit parts (fdlibm's): for |k| < 2^20 each k * part is exact,
 * x - k p1 is exact, and the missing tail of pi/2 (below 1e-31) leaves r
 * an absolute error under 1e-25, far below the nearest approach of a float
 * to a multiple of pi/2 in that range. Inputs above UM_TRIG_BIG go to libm,
 * a block at a time on the CPU (engine/cpu/unary.c's trig_f32). */
#define UM_TRIG_BIG 1.0e6f
UM_CPU_FN double um_sin_poly(double r, double z)
{
    double p = 2.718121092851816e-06;
    p = um_mad(p, z, -0.000198393122055037);
    p = um_mad(p, z, 0.008333329304605643);
    p = um_mad(p, z, -0.16666666640794395);
    return um_mad(p * z, r, r);
}

UM_CPU_FN double um_cos_poly(double z)
{
    double p = 2.4383561298808465e-05;
    p = um_mad(p, z, -0.0013886681575206734);
    p = um_mad(p, z, 0.04166662035439209);
    p = um_mad(p, z, -0.49999999694444913);
    return um_mad(p, z, 1.0);
}

/* sin(x + q pi/2), for q = 0 (sin) or 1 (cos) */
UM_CPU_FN float um_sincos_f32(float x, uint64_t q)
{
    const double shift = 0x1.8p52;
    double d = x;
    double kd = um_mad(d, 0.63661977236758134308, shift);
    uint64_t n = um_f64_to_bits(kd) + q;
    kd -= shift;
    double r = um_mad(-kd, 1.57079632673412561417e+00, d);
    r = um_mad(-kd, 6.07710050630396597660e-11, r);
    r = um_mad(-kd, 2.02226624871116645580e-21, r);
    double z = r * r;
    double s = um_sin_poly(r, z), c = um_cos_poly(z);
    s = um_sel(z == 0, r, s);                    /* sin(-0) = -0 */
    uint64_t odd = -(n & 1);
    double v = um_bits_to_f64((um_f64_to_bits(c) & odd) | (um_f64_to_bits(s) & ~odd));
    v = um_bits_to_f64(um_f64_to_bits(v) ^ ((n & 2) << 62));
    return (float)v;
}


/* ---- the gamma functions ---------------------------------------------------
 * log |Gamma(x)| through lgamma_r (lgamma writes the global signgam, a race
 * between this pool's threads); float32 in double, rounded once. digamma is
 * engine/polygamma.h's, which every backend shares. */
static inline double um_lgamma_f64(double x)
{
    int sign;
    return lgamma_r(x, &sign);
}

/* sin(x) (q = 0) or cos(x) (q = 1); libm beyond UM_TRIG_BIG, inf and NaN */
UM_CPU_FN float um_trig_f32(float x, uint64_t q)
{
    return !(fabsf(x) < UM_TRIG_BIG) ? (q ? cosf(x) : sinf(x)) : um_sincos_f32(x, q);
}
#else
/* exp(-a^2 / 2) with a^2 carried as h + l (fmaf gives the rounding error l
 * exactly), so the argument's rounding does not grow with |a| */
__device__ static inline float um_gaussian_f(float a)
{
    float h = a * a;
    float l = fmaf(a, a, -h);
    return expf(-0.5f * h) * (1.0f - 0.5f * l);
}
#endif /* __CUDA_ARCH__ */

/* ---- the formulas ------------------------------------------------------- */

/* GELU's tanh form as x sigmoid(2u) with CUDA's expf (a GPU's float32
 * formula; no cancellation where tanh u is near -1), and its derivative
 * s + 2 x s (1 - s) u' */
UM_FN float um_gelu_tanh_sig_expf(float x)
{
    float u = (float)UM_GELU_K * (x + (float)UM_GELU_C * x * x * x);
    return 1.0f / (1.0f + expf(-2.0f * u));
}

UM_FN float um_gelu_tanh_grad_expf(float x)
{
    float s = um_gelu_tanh_sig_expf(x);
    return s + 2.0f * x * s * (1.0f - s) * (float)UM_GELU_K * (1.0f + 3.0f * (float)UM_GELU_C * x * x);
}

/* silu'(x) = s (1 + x (1 - s)) with CUDA's expf (a GPU's float32 formula) */
UM_FN float um_silu_grad_expf(float x)
{
    float s = 1.0f / (1.0f + expf(-x));
    return s * (1.0f + x * (1.0f - s));
}

/* the same in float64, exp's overflow giving the tails their 0 and 1 */
UM_FN double um_gelu_tanh_sig_f64(double x)
{
    double u = UM_GELU_K * (x + UM_GELU_C * x * x * x);
    return 1.0 / (1.0 + exp(-2.0 * u));
}

UM_FN float em_un_f32(em_unary_op op, float x)
{
    switch (op) {
    case EM_NEG: return -x;
    case EM_ABS: return fabsf(x);
    case EM_SIGN: return (float)((x > 0) - (x < 0));           /* NaN gives 0, as in PyTorch */
    case EM_EXP: return UM_PICK(expf(x), um_exp_f32(x));
    case EM_LOG: return UM_PICK(logf(x), um_log_f32(x));
    case EM_LOG1P: return UM_PICK(log1pf(x), um_log1p_f32(x));
    case EM_EXPM1: return UM_PICK(expm1f(x), um_expm1_f32(x));
    case EM_SQRT: return sqrtf(x);
    /* a correctly rounded division of a correctly rounded root (a GPU's
     * rsqrtf would differ in the last bits) */
    case EM_RSQRT: return 1.0f / sqrtf(x);
    case EM_SIN: return UM_PICK(sinf(x), um_trig_f32(x, 0));
    case EM_COS: return UM_PICK(cosf(x), um_trig_f32(x, 1));
    case EM_TANH: return UM_PICK(tanhf(x), um_tanh_f32(x));
    case EM_SIGMOID: return UM_PICK(1.0f / (1.0f + expf(-x)), um_sigmoid_f32(x));
    case EM_RELU: return x < 0 ? 0.0f : x;                       /* keeps NaN and -0.0, as PyTorch */
    /* x Phi(x): normcdff keeps its relative accuracy for negative x, where
     * 1 + erf(x / sqrt 2) would cancel */
    case EM_GELU: return UM_PICK(x * normcdff(x), fabsf(x) <= UM_GELU_NEAR ? um_gelu_near(x) : um_gelu_far(x));
    case EM_GELU_GRAD:
        return UM_PICK(normcdff(x) + x * um_gaussian_f(x) * 0.39894228040143267794f,
                       fabsf(x) <= UM_GELU_NEAR ? um_gelu_grad_near(x) : um_gelu_grad_far(x));
    case EM_SILU: return UM_PICK(x / (1.0f + expf(-x)), um_silu_f32(x));
    case EM_SIGMOID_GRAD: return x * (1.0f - x);           /* PyTorch's sigmoid_backward on the output */
    case EM_SILU_GRAD: return UM_PICK(um_silu_grad_expf(x), um_silu_grad_f32(x));
    case EM_GELU_TANH: return UM_PICK(x * um_gelu_tanh_sig_expf(x), um_gelu_tanh_f32(x));
    case EM_GELU_TANH_GRAD: return UM_PICK(um_gelu_tanh_grad_expf(x), um_gelu_tanh_grad_f32(x));
    case EM_FLOOR: return floorf(x);
    case EM_CEIL: return ceilf(x);
    case EM_ROUND: return UM_PICK(rintf(x), nearbyintf(x));      /* half to even */
    case EM_RECIPROCAL: return 1.0f / x;
    case EM_SQUARE: return x * x;
    case EM_EXP2: return UM_PICK(exp2f(x), um_exp2_f32(x));
    case EM_LOG2: return UM_PICK(log2f(x), um_log2_f32(x));
    case EM_LOG10: return UM_PICK(log10f(x), um_log10_f32(x));
    case EM_ERF: return erff(x);
    case EM_ERFC: return erfcf(x);
    case EM_ERFINV: return UM_PICK((float)erfinv((double)x), (float)um_erfinv_f64(x));
    case EM_TRUNC: return truncf(x);
    case EM_TAN: return tanf(x);
    case EM_SINH: return sinhf(x);
    case EM_COSH: return coshf(x);
    case EM_ASIN: return asinf(x);
    case EM_ACOS: return acosf(x);
    case EM_ATAN: return atanf(x);
    case EM_ASINH: return asinhf(x);
    case EM_ACOSH: return acoshf(x);
    case EM_ATANH: return atanhf(x);
    case EM_DIGAMMA: return (float)em_digamma((double)x);       /* in double, rounded once */
    case EM_LGAMMA: return UM_PICK((float)lgamma((double)x), (float)um_lgamma_f64(x));
    /* not float formulas: logical_not has bool-valued loops of its own,
     * bitwise_not takes integers only */
    case EM_LOGICAL_NOT: case EM_BITWISE_NOT: case EM_NUNARY: break;
    }
    return 0;
}

UM_FN double em_un_f64(em_unary_op op, double x)
{
    switch (op) {
    case EM_NEG: return -x;
    case EM_ABS: return fabs(x);
    case EM_SIGN: return (double)((x > 0) - (x < 0));
    case EM_EXP: return exp(x);
    case EM_LOG: return log(x);
    case EM_LOG1P: return log1p(x);
    case EM_EXPM1: return expm1(x);
    case EM_SQRT: return sqrt(x);
    case EM_RSQRT: return 1.0 / sqrt(x);
    case EM_SIN: return sin(x);
    case EM_COS: return cos(x);
    case EM_TANH: return tanh(x);
    case EM_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case EM_RELU: return x < 0 ? 0.0 : x;
    /* Phi through erfc: 1 + erf(x / sqrt 2) would cancel for negative x */
    case EM_GELU: return x * 0.5 * erfc(-x * 0.70710678118654752440);
    case EM_GELU_GRAD: return 0.5 * erfc(-x * 0.70710678118654752440) + x * exp(-0.5 * x * x) * 0.39894228040143267794;
    case EM_SILU: return x / (1.0 + exp(-x));
    case EM_SIGMOID_GRAD: return x * (1.0 - x);
    case EM_SILU_GRAD: {
        double s = 1.0 / (1.0 + exp(-x));
        return s * (1.0 + x * (1.0 - s));
    }
    /* as x sigmoid(2u): 0.5 x (1 + tanh u) would cancel where tanh u is near -1 */
    case EM_GELU_TANH: return x * um_gelu_tanh_sig_f64(x);
    case EM_GELU_TANH_GRAD: {
        double sg = um_gelu_tanh_sig_f64(x);
        return sg + 2.0 * x * sg * (1.0 - sg) * UM_GELU_K * (1.0 + 3.0 * UM_GELU_C * x * x);
    }
    case EM_FLOOR: return floor(x);
    case EM_CEIL: return ceil(x);
    case EM_ROUND: return UM_PICK(rint(x), nearbyint(x));
    case EM_RECIPROCAL: return 1.0 / x;
    case EM_SQUARE: return x * x;
    case EM_EXP2: return exp2(x);
    case EM_LOG2: return log2(x);
    case EM_LOG10: return log10(x);
    case EM_ERF: return erf(x);
    case EM_ERFC: return erfc(x);
    case EM_ERFINV: return UM_PICK(erfinv(x), um_erfinv_f64(x));
    case EM_TRUNC: return trunc(x);
    case EM_TAN: return tan(x);
    case EM_SINH: return sinh(x);
    case EM_COSH: return cosh(x);
    case EM_ASIN: return asin(x);
    case EM_ACOS: return acos(x);
    case EM_ATAN: return atan(x);
    case EM_ASINH: return asinh(x);
    case EM_ACOSH: return acosh(x);
    case EM_ATANH: return atanh(x);
    case EM_DIGAMMA: return em_digamma(x);
    case EM_LGAMMA: return UM_PICK(lgamma(x), um_lgamma_f64(x));
    case EM_LOGICAL_NOT: case EM_BITWISE_NOT: case EM_NUNARY: break;   /* as in em_un_f32 */
    }
    return 0;
}

/* the integer formulas (int64, uint8, int32 and bool compute here and keep
 * the low bits: neg of uint8 1 is 255) */
UM_FN int64_t em_un_i64(em_unary_op op, int64_t x)
{
    switch (op) {
    case EM_NEG: return (int64_t)(0 - (uint64_t)x);
    case EM_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case EM_SIGN: return (x > 0) - (x < 0);
    case EM_RELU: return x < 0 ? 0 : x;
    case EM_FLOOR: case EM_CEIL: case EM_ROUND: case EM_TRUNC: return x;
    case EM_BITWISE_NOT: return ~x;
    case EM_SQUARE: return (int64_t)((uint64_t)x * (uint64_t)x);
    /* float-only ops (EM_OPDT_FLOAT): the integer loops never run them */
    case EM_EXP: case EM_LOG: case EM_LOG1P: case EM_EXPM1: case EM_SQRT: case EM_RSQRT: case EM_SIN: case EM_COS:
    case EM_TANH: case EM_SIGMOID: case EM_GELU: case EM_GELU_GRAD: case EM_GELU_TANH: case EM_GELU_TANH_GRAD:
    case EM_SILU: case EM_SILU_GRAD: case EM_SIGMOID_GRAD: case EM_RECIPROCAL: case EM_EXP2:
    case EM_LOG2: case EM_LOG10: case EM_ERF: case EM_ERFC: case EM_ERFINV: case EM_TAN: case EM_SINH: case EM_COSH:
    case EM_ASIN: case EM_ACOS: case EM_ATAN: case EM_ASINH: case EM_ACOSH: case EM_ATANH: case EM_DIGAMMA:
    case EM_LGAMMA:
    case EM_LOGICAL_NOT: case EM_NUNARY: break;
    }
    return 0;
}

#endif
