/* online_lse.cuh — the running max and sum of exp shared by softmax.cu
 * and xent.cu: one pass over a row keeps (m, s) with s = sum exp(x - m)
 * over the elements seen and m their max, and partial results of several
 * threads merge. -inf adds nothing (a row of only -inf is turned into NaN
 * at the end, as the CPU's exp(-inf - -inf) does); a NaN makes s NaN; +inf
 * makes s NaN through x - x, like the CPU's exp(inf - inf). */
#ifndef EMBER_ONLINE_LSE_CUH
#define EMBER_ONLINE_LSE_CUH

#include <math.h>

__device__ __forceinline__ float cexp(float v) { return expf(v); }
__device__ __forceinline__ double cexp(double v) { return exp(v); }
__device__ __forceinline__ float cmax(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double cmax(double a, double b) { return fmax(a, b); }

template <class C> __device__ __forceinline__ void online_add(C &m, C &s, C x)
{
    if (x == -(C)INFINITY) return;
    if (x > m) {
        s = s * cexp(m - x) + (x - x + (C)1);
        m = x;
    } else {
        s += cexp(x - m);
    }
}

template <class C> __device__ __forceinline__ void online_merge(C &m, C &s, C m2, C s2)
{
    C M = cmax(m, m2);
    s = (s != (C)0 ? s * cexp(m - M) : (C)0) + (s2 != (C)0 ? s2 * cexp(m2 - M) : (C)0);
    m = M;
}

#endif
