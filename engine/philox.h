/* philox.h — Philox 4x32-10 (Salmon et al., "Parallel random numbers: as
 * easy as 1, 2, 3", SC'11), as in Random123: the one body of the rounds,
 * included by the CPU kernels (engine/cpu/random.c, engine/cpu/attention.c's
 * dropout), the CUDA kernels (kernels/random.cu, kernels/attention.cu's
 * dropout) and the known-answer test, so every backend draws the same bits.
 * engine/cpu/random.c's header maps counters to elements. Plain C that
 * nvcc and g++ (the emulated device) also compile; host and device there. */
#ifndef EMBER_PHILOX_H
#define EMBER_PHILOX_H

#include <stdint.h>

#if defined(__CUDACC__) || defined(EMBER_CUDA_EMU)
#define EM_PHILOX_FN __host__ __device__ static inline
#else
#define EM_PHILOX_FN static inline
#endif

/* the high 32 bits of a * b */
EM_PHILOX_FN uint32_t em_mulhi32(uint32_t a, uint32_t b)
{
#ifdef __CUDA_ARCH__
    return __umulhi(a, b);
#else
    return (uint32_t)(((uint64_t)a * b) >> 32);
#endif
}

/* c: the 128-bit counter, replaced by the four output words; (k0, k1): the
 * key (the seed's low and high words). */
EM_PHILOX_FN void em_philox_rounds(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    uint32_t c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int r = 0; r < 10; r++) {
        if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        uint32_t hi0 = em_mulhi32(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        uint32_t hi1 = em_mulhi32(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c1 = lo1;
        c3 = lo0;
        c0 = n0;
        c2 = n2;
    }
    c[0] = c0; c[1] = c1; c[2] = c2; c[3] = c3;
}

#endif
