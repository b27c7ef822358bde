/* polygamma.h — digamma and polygamma(n, x), the one body of the formulas,
 * included by the unary formulas (engine/unary_math.h), the CPU's binary
 * kernels (engine/cpu/binary.c) and the CUDA ones (kernels/binary.cu), so
 * every backend computes the same values. Plain C that nvcc and g++ (the emulated device) also compile; host
 * and device there. Everything is in double: float32 (and float16/bfloat16,
 * through float32) inputs are widened and the result rounded once, which
 * leaves it within about half an ulp of float.
 *
 * psi^(n)(x), n >= 0, x real:
 *  - x > 0, n = 0: from x >= 10 the asymptotic series log x - 1/(2x) -
 *    sum B_2k / (2k x^2k); below, the recurrence psi(x + 1) = psi(x) + 1/x
 *    down (or up, from x < 1) to [1, 2], where psi is (x - x0) times a
 *    Chebyshev series, x0 = 1.4616... its root: no cancellation near x0,
 *    as summing the recurrence up to 10 would have (20 ulp there).
 *  - x > 0, n >= 1: (-1)^(n+1) n! zeta(n+1, x), the Hurwitz zeta as the
 *    direct sum of (x+k)^-(n+1) until x+k >= n+21, then Euler-Maclaurin with
 *    12 Bernoulli terms (each term below about (n+25)^2 / (2 pi a)^2 of the
 *    one before, so the remainder is far below an ulp). The terms are all
 *    positive and summed with Neumaier's compensation.
 *  - x < 0, not an integer: reflection. psi(1-x) - psi(x) = pi cot(pi x),
 *    differentiated n times: psi^(n)(x) = (-1)^n psi^(n)(1-x) - pi^(n+1)
 *    D_n(cot pi x), with D_0(u) = u, D_k+1(u) = -(1 + u^2) D_k'(u): a
 *    polynomial whose coefficients all have one sign, evaluated without
 *    cancellation. Near the roots of psi^(n) at negative x the two terms
 *    cancel, and the error there is a few ulp of the larger term.
 *    For n > EM_PG_REFLECT_MAX (D_n's coefficients would not fit the array)
 *    the sum of (x+k)^-(n+1), k >= 0, taking only the terms with -6 < x+k
 *    < 6: the largest is above 2^(n+1), the others each below 5^-(n+1), so
 *    even 2^52 of them stay far below an ulp of it.
 *  - the poles, x a non-positive integer (and -inf): PyTorch's values:
 *    digamma(+-0) = -+inf, digamma(negative integer) = NaN; for n >= 1
 *    +inf (n odd) or -inf (n even), the limit from both sides. (PyTorch's
 *    trigamma gives large finite values at the negative integers, pi^2 over
 *    the rounding error of sin(pi x), and NaN at -inf: README lists this.)
 *  - x = +inf: digamma inf; n >= 1: +0 (n odd) or -0 (n even), the limit
 *    (PyTorch's Cephes zeta gives NaN there for n >= 2: README lists it).
 *  - n not a non-negative integer (the Lua functions refuse it; the engine's
 *    table op takes any number): NaN.
 */
#ifndef EMBER_POLYGAMMA_H
#define EMBER_POLYGAMMA_H

#include <math.h>

#if defined(__CUDACC__) || defined(EMBER_CUDA_EMU)
#define EM_PG_FN __host__ __device__ static inline
#else
#define EM_PG_FN static inline
#endif

#define EM_PG_PI 3.14159265358979323846
/* D_n's coefficients live in an array of REFLECT_MAX + 2 doubles */
#define EM_PG_REFLECT_MAX 40

/* s + t with Neumaier's compensation carried in *c (none once the sum is
 * infinite, where the correction would be inf - inf) */
EM_PG_FN double em_pg_add(double s, double t, double *c)
{
    double u = s + t;
    double e = fabs(s) >= fabs(t) ? (s - u) + t : (t - u) + s;
    if (e == e) *c += e;
    return u;
}

/* psi(x) for x > 0, finite */
EM_PG_FN double em_digamma_pos(double x)
{
    if (x >= 10) {
        /* log x - 1/(2x) - sum B_2k / (2k x^2k), k = 1..8 */
        const double b[8] = {
            0.083333333333333333, -0.0083333333333333333, 0.0039682539682539683, -0.0041666666666666667,
            0.0075757575757575758, -0.021092796092796093, 0.083333333333333333, -0.44325980392156863,
        };
        double s = 0;
        if (x < 1e17) {
            double z = 1 / (x * x);
            double p = b[7];
            for (int k = 6; k >= 0; k--) p = p * z + b[k];
            s = p * z;
        }
        return (log(x) - 0.5 / x) - s;
    }
    /* psi(x) = psi(x + 1) - 1/x below 1; psi(x) = psi(x - m) + sum_j 1/(x - j) above 2 (x - j
     * exact, the terms positive and summed with compensation) */
    double add = 0, comp = 0;
    if (x < 1) {
        add = -1 / x;
        x += 1;
    }
    while (x > 2) {
        x -= 1;
        add = em_pg_add(add, 1 / x, &comp);
    }
    /* 1 <= x <= 2: (x - x0) g(x), x0 = 1.4616... the root in two parts (x - x0_hi exact), g
     * a Chebyshev series in s = 2x - 3: the interpolant of psi(x) / (x - x0) at 40 nodes,
     * from mpmath at 60 digits, to 25 terms (the next is 7e-20) */
    const double x0_hi = 1.4616321449683622, x0_lo = 9.549995429965697e-17;
    const double c[25] = {
        0.983570260441567, -0.2270640863346444, 0.03336889902393011, -0.005320077271596548,
        0.0008788656937820505, -0.00014773492650606044, 2.5060543468359146e-05, -4.2721034029993324e-06,
        7.302769272465923e-07, -1.2502886813559594e-07, 2.1425009322359472e-08, -3.673295918565179e-09,
        6.299717236108931e-10, -1.080593028883266e-10, 1.853735192053638e-11, -3.18023536582553e-12,
        5.456147570322795e-13, -9.360993131036438e-14, 1.606064636295075e-14, -2.7555431377438815e-15,
        4.727736178601912e-16, -8.11148420346509e-17, 1.391707769474154e-17, -2.3877901082188625e-18,
        4.096797187161558e-19,
    };
    double sv = 2 * x - 3, b1 = 0, b2 = 0;
    for (int k = 24; k >= 1; k--) {
        double t = 2 * sv * b1 - b2 + c[k];
        b2 = b1;
        b1 = t;
    }
    double g = sv * b1 - b2 + c[0];
    double psi = ((x - x0_hi) - x0_lo) * g;
    if (add == 0) return psi;
    return em_pg_add(psi, add, &comp) + comp;
}

/* zeta(s, q) = sum_k (q + k)^-s for integer s >= 2 and q > 0, as z h: h is 1, or a^((1-s)/2)
 * where q is already past the direct sum's end a, so that n! z h is computed as (n! z) h,
 * and a^(1-s) = h^2 cannot underflow where the polygamma would not (x^n > 1e308) */
EM_PG_FN double em_hurwitz_zeta(double s, double q, double *h)
{
    double sum = 0, comp = 0;
    double a = q;
    *h = 1;
    while (a < s + 20) {
        double t = pow(a, -s);
        sum = em_pg_add(sum, t, &comp);
        /* a large s: the rest are below an ulp of the sum */
        if (t <= 1e-18 * sum) return sum + comp;
        a += 1;
    }
    /* Euler-Maclaurin at a: a^(1-s) / (s-1) + a^-s / 2 + sum_j B_2j / (2j)! (s)_(2j-1) a^(-s-2j+1) */
    const double b[12] = {
        0.083333333333333333, -0.0013888888888888889, 3.3068783068783069e-5, -8.2671957671957672e-7,
        2.0876756987868099e-8, -5.2841901386874932e-10, 1.3382536530684679e-11, -3.3896802963225829e-13,
        8.5860620562778446e-15, -2.1748686985580619e-16, 5.5090028283602295e-18, -1.3954464685812523e-19,
    };
    double ia = 1 / a;
    double p1 = pow(a, 1 - s);
    if (a == q) {
        *h = pow(a, (1 - s) / 2);
        p1 = *h;
    }
    double term = p1 * ia * ia * s;       /* (s)_1 a^(-s-1), in units of h */
    double em = 0;
    for (int j = 0; j < 12; j++) {
        em += b[j] * term;
        term *= (s + 2 * j + 1) * (s + 2 * j + 2) * ia * ia;
    }
    double tail = p1 / (s - 1);
    tail = em_pg_add(tail, 0.5 * p1 * ia, &comp);
    tail = em_pg_add(tail, em, &comp);
    return em_pg_add(sum, tail, &comp) + comp;
}

/* n! for n <= 170 (exact up to 22!, then within a few ulp) */
EM_PG_FN double em_pg_factorial(double n)
{
    double f = 1;
    for (double k = 2; k <= n; k += 1) f *= k;
    return f;
}

/* log Gamma(x) for x > 0: lgamma_r on the host (lgamma writes the global signgam, a race
 * between the CPU's threads) */
EM_PG_FN double em_pg_lgamma(double x)
{
#ifdef __CUDA_ARCH__
    return lgamma(x);
#else
    int sign;
    return lgamma_r(x, &sign);
#endif
}

/* sign n! z; past 170! (which overflows alone) in logarithms, through lgamma */
EM_PG_FN double em_pg_times_factorial(double n, double sign, double z)
{
    if (n <= 170) return sign * em_pg_factorial(n) * z;
    if (z == 0) return sign * z;
    return sign * copysign(exp(em_pg_lgamma(n + 1) + log(fabs(z))), z);
}

/* psi^(n)(x) for n >= 1, x > 0 finite */
EM_PG_FN double em_polygamma_pos(double n, double x)
{
    double h;
    double z = em_hurwitz_zeta(n + 1, x, &h);
    return em_pg_times_factorial(n, fmod(n, 2) == 1 ? 1 : -1, z) * h;
}

/* pi's rounding error: pi = EM_PG_PI + EM_PG_PI_LO to about 1e-32 */
#define EM_PG_PI_LO 1.2246467991473532e-16

/* cot(pi r) for |r| <= 1/2, r != 0. pi r in two parts (pi's tail and fma's rounding error of
 * the product), the tail added through cot(y + e) = cot y - e (1 + cot^2 y): near a pole
 * psi^(n) grows as cot^(n+1), which multiplies cot's relative error by n+1. Near |r| = 1/2
 * through tan(pi (1/2 - |r|)), 1/2 - |r| exact there (cos(pi r) would lose the accuracy). */
EM_PG_FN double em_pg_cot_pi(double r)
{
    int small = fabs(r) <= 0.25;
    double w = small ? r : copysign(0.5 - fabs(r), r);
    double y = EM_PG_PI * w, e = fma(EM_PG_PI, w, -y) + EM_PG_PI_LO * w;
    double t = tan(y);
    double u = small ? 1 / t : t;
    return small ? u - e * (1 + u * u) : u + e * (1 + u * u);
}

/* psi^(n)(x) for n >= 1, x < 0 not an integer */
EM_PG_FN double em_polygamma_neg(double n, double x)
{
    double r = x - floor(x + 0.5);       /* exact, |r| <= 1/2: cot(pi x) = cot(pi r) */
    double sign = fmod(n, 2) == 1 ? 1 : -1;
    if (n > EM_PG_REFLECT_MAX) {
        double sum = 0, comp = 0, s = n + 1;
        for (double k = floor(-x) - 5 > 0 ? floor(-x) - 5 : 0; x + k < 6; k += 1)
            sum = em_pg_add(sum, pow(x + k, -s), &comp);
        return em_pg_times_factorial(n, sign, sum + comp);
    }
    double u = em_pg_cot_pi(r);
    int m = (int)n;
    /* D_m's coefficients, d[i] multiplying u^i: D_k+1[i] = -((i+1) D_k[i+1] + (i-1) D_k[i-1]),
     * updated upwards in place with D_k[i-1] kept aside */
    double d[EM_PG_REFLECT_MAX + 2];
    for (int i = 0; i < m + 2; i++) d[i] = 0;
    d[1] = 1;
    for (int k = 0; k < m; k++) {
        double below = 0;
        for (int i = 0; i <= k + 2; i++) {
            double old = d[i];
            d[i] = -((i + 1 <= k + 1 ? (i + 1) * d[i + 1] : 0) + (i - 1) * below);
            below = old;
        }
    }
    double au = fabs(u), p = 0;
    for (int i = m + 1; i >= 0; i--) p = p * au + d[i];
    /* D_m has the parity of m + 1 */
    if (u < 0 && (m + 1) % 2 == 1) p = -p;
    /* pi^(m+1) in two parts (pi's own rounding would leave (m+1)/3 ulp) */
    double pw = EM_PG_PI, pw_lo = EM_PG_PI_LO;
    for (int k = 0; k < m; k++) {
        double h = pw * EM_PG_PI;
        pw_lo = fma(pw, EM_PG_PI, -h) + pw * EM_PG_PI_LO + pw_lo * EM_PG_PI;
        pw = h;
    }
    pw += pw_lo;
    double refl = em_polygamma_pos(n, 1 - x);
    return (m % 2 == 0 ? refl : -refl) - pw * p;
}

/* polygamma(0, x) without the reflection's coefficient array (the CUDA kernels' stack):
 * psi(x) = psi(1 - x) - pi cot(pi x) at negative x */
EM_PG_FN double em_digamma(double x)
{
    if (x != x) return x;
    if (x <= 0 && x == floor(x)) return x == 0 ? copysign(INFINITY, -x) : NAN;
    if (x == INFINITY) return x;
    if (x > 0) return em_digamma_pos(x);
    double u = em_pg_cot_pi(x - floor(x + 0.5));
    return em_digamma_pos(1 - x) - fma(EM_PG_PI, u, EM_PG_PI_LO * u);
}

/* psi^(n)(x), with PyTorch's values at the poles (see above) */
EM_PG_FN double em_polygamma(double n, double x)
{
    if (!(n >= 0) || n != floor(n)) return NAN;
    if (n == 0) return em_digamma(x);
    if (x != x) return x;
    int odd = fmod(n, 2) == 1;
    if (x <= 0 && x == floor(x)) return odd ? INFINITY : -INFINITY;
    if (x == INFINITY) return odd ? 0.0 : -0.0;
    return x > 0 ? em_polygamma_pos(n, x) : em_polygamma_neg(n, x);
}

#endif
