/* online_lse.cuh — the running max and sum of exp shared by softmax.cu
 * and xent.cu: one pass over a row keeps (m, s) with s = sum exp(x - m)
 * over the elements seen and m their max, and partial results of several
 * threads merge. -inf adds nothing (a row of only -inf is turned into NaN
 * at the end, as the CPU's exp(-inf - -inf) does); a NaN makes s NaN; +inf
 * makes s NaN through x - x, like the CPU's exp(inf - inf). */
#ifndef EMBER_ONLINE_LSE_CUH
#define EMBER_ONLINE_LSE_CUH

#include "kc.h"

#include <math.h>

template <class C> __device__ __forceinline__ void online_add(C &m, C &s, C x)
{
    if (x == -(C)INFINITY) return;
    if (x > m) {
        s = s * kc_exp(m - x) + (x - x + (C)1);
        m = x;
    } else {
        s += kc_exp(x - m);
    }
}

template <class C> __device__ __forceinline__ void online_merge(C &m, C &s, C m2, C s2)
{
    C M = kc_max(m, m2);
    s = (s != (C)0 ? s * kc_exp(m - M) : (C)0) + (s2 != (C)0 ? s2 * kc_exp(m2 - M) : (C)0);
    m = M;
}

#endif
