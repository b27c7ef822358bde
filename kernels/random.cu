/*
 * random.cu — the random kernel (uniform, normal, integers), the CUDA twin
 * of engine/cpu/random.c. That file's header is the mapping from Philox
 * counters to elements; this one follows it to the bit: one thread per
 * counter, the same lanes, and the same double arithmetic with every
 * multiply and add rounded on its own (ew_dadd/ew_dmul: no fused
 * multiply-add, which the CPU build does not use either). Uniform and
 * integer values are therefore identical on both devices; normal values may
 * differ in the last bits of log/cos/sin, as the mapping allows.
 */
#include "elementwise.cuh"
#include "../engine/philox.h"

/* Philox 4x32-10: engine/philox.h, the engine's own rounds */
__host__ __device__ inline void rand_philox(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    em_philox_rounds(c, k0, k1);
}

struct rand_args {
    uint32_t k0, k1;        /* key: seed's low and high words */
    uint64_t offset;
    double a, b;
    double span;            /* b - a */
    double scale;           /* uniform: 2^-m */
    int shift;              /* uniform: 32 - m */
    bool open_end;          /* uniform with b > a: a value rounded up to b becomes a */
    int64_t lo;             /* int: (int64_t)a */
    uint64_t range;         /* int: b - a */
    int per_ctr;            /* elements per counter: 4, or 2 for 64-bit ints */
    const uint64_t *dev_state;  /* a CUDA graph's {seed, base}: key and offset come from it at run time */
};

/* The four lanes of counter number offset + k (carry into the third word). */
__host__ __device__ inline void rand_lanes(const rand_args &j, uint64_t k, uint32_t x[4])
{
    uint64_t q = j.offset + k;
    x[0] = (uint32_t)q;
    x[1] = (uint32_t)(q >> 32);
    x[2] = q < j.offset ? 1u : 0u;
    x[3] = 0;
    rand_philox(x, j.k0, j.k1);
}

/* random.c's store(): uniform values that round to b in the output dtype
 * fall back to a, keeping [a, b) half-open. */
template <int D, int OP>
__host__ __device__ inline typename ew_dt<D>::S rand_store(const rand_args &j, double v)
{
    if (OP == EM_RAND_UNIFORM && j.open_end) {
        double r = v;
        if constexpr (D == EM_FLOAT32) r = (double)(float)v;
        else if constexpr (D == EM_FLOAT16) r = (double)emf_half_to_float(emf_float_to_half((float)v));
        else if constexpr (D == EM_BFLOAT16) r = (double)emf_bf16_to_float(emf_float_to_bf16((float)v));
        if (r >= j.b) v = j.a;
    }
    return ew_store_f64<D>(v);
}

/* The elements drawn from counter k, converted to the output dtype: four,
 * or two for 64-bit integers (r[0..1]). */
template <int D, int OP>
__host__ __device__ inline void rand_counter(const rand_args &j, uint64_t k, typename ew_dt<D>::S r[4])
{
    uint32_t x[4];
    rand_lanes(j, k, x);
    if constexpr (OP == EM_RAND_INT) {
        if (j.per_ctr == 4) {
            for (int l = 0; l < 4; l++)
                r[l] = ew_store_i64<D>((int64_t)((uint64_t)j.lo + (((uint64_t)x[l] * j.range) >> 32)));
        } else {
            for (int l = 0; l < 2; l++) {
                uint64_t w = (uint64_t)x[2 * l] | (uint64_t)x[2 * l + 1] << 32;
                r[l] = ew_store_i64<D>((int64_t)((uint64_t)j.lo + w % j.range));
            }
            r[2] = r[3] = r[0];
        }
    } else if constexpr (OP == EM_RAND_UNIFORM) {
        for (int l = 0; l < 4; l++) {
            double u = (double)(x[l] >> j.shift) * j.scale;
            r[l] = rand_store<D, OP>(j, ew_dadd(j.a, ew_dmul(j.span, u)));
        }
    } else {
        /* Box-Muller on lane pairs (0,1) and (2,3); u1 in (0, 1] */
        const double two_pi = 6.283185307179586476925286766559;   /* 2.0 * M_PI, rounded once */
        for (int l = 0; l < 4; l += 2) {
            double u1 = ((double)x[l] + 1.0) * 0x1p-32, u2 = (double)x[l + 1] * 0x1p-32;
            double rad = sqrt(-2.0 * log(u1)), th = two_pi * u2;
            double br = ew_dmul(j.b, rad);
            r[l] = rand_store<D, OP>(j, ew_dadd(j.a, ew_dmul(br, cos(th))));
            r[l + 1] = rand_store<D, OP>(j, ew_dadd(j.a, ew_dmul(br, sin(th))));
        }
    }
}

/* One thread per counter. `vec`: the output is contiguous and aligned for
 * one 4-element store per counter. */
template <int D, int OP>
__global__ void rand_kernel(kc_iter<1> it, rand_args j, bool vec)
{
    typedef typename ew_dt<D>::S S;
    if (j.dev_state) {
        uint64_t seed = j.dev_state[0];
        j.k0 = (uint32_t)seed;
        j.k1 = (uint32_t)(seed >> 32);
        j.offset += j.dev_state[1];
    }
    const int64_t n = it.numel, pc = j.per_ctr;
    const int64_t nctr = (n + pc - 1) / pc;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nctr; k += step) {
        S r[4];
        rand_counter<D, OP>(j, (uint64_t)k, r);
        int64_t i0 = k * pc;
        if (vec && i0 + 4 <= n) {
            ew_vec<S, 4> w;
#pragma unroll
            for (int l = 0; l < 4; l++) w.v[l] = r[l];
            ((ew_vec<S, 4> *)it.data[0])[k] = w;
            continue;
        }
        for (int l = 0; l < pc && i0 + l < n; l++) {
            char *p[1];
            kc_iter_ptrs(it, i0 + l, p);
            ew_st<D>(p[0], r[l]);
        }
    }
}

template <int D>
static int rand_run(em_random_op op, em_tensor *out, rand_args j)
{
    typedef typename ew_dt<D>::S S;
    const em_tensor *ts[1] = {out};
    kc_iter<1> it;
    int dev;
    cudaStream_t s;
    if (int go = kc_prepare(ts, &it, &dev, &s); go <= 0) return go;
    int64_t nctr = (it.numel + j.per_ctr - 1) / j.per_ctr;
    bool vec = it.contiguous && j.per_ctr == 4 && ew_aligned(it.data[0], 4 * sizeof(S));
    int grid = kc_grid(nctr, dev);
    switch (op) {
    case EM_RAND_UNIFORM: KC_LAUNCH(grid, KC_THREADS, 0, s, rand_kernel<D, EM_RAND_UNIFORM>)(it, j, vec); break;
    case EM_RAND_NORMAL: KC_LAUNCH(grid, KC_THREADS, 0, s, rand_kernel<D, EM_RAND_NORMAL>)(it, j, vec); break;
    default: KC_LAUNCH(grid, KC_THREADS, 0, s, rand_kernel<D, EM_RAND_INT>)(it, j, vec); break;
    }
    return kc_launched("random", dev);
}

/* random.c's job setup */
static rand_args rand_setup(em_random_op op, em_dtype d, uint64_t seed, uint64_t offset, const uint64_t *dev_state,
                            double a, double b)
{
    rand_args j;
    memset(&j, 0, sizeof j);
    j.k0 = (uint32_t)seed;
    j.k1 = (uint32_t)(seed >> 32);
    j.offset = offset;
    j.dev_state = dev_state;
    j.a = a;
    j.b = b;
    j.span = b - a;
    int m = emf_mantissa_bits(d);
    j.shift = 32 - m;
    j.scale = ldexp(1.0, -m);
    j.open_end = op == EM_RAND_UNIFORM && b > a;
    j.per_ctr = 4;
    if (op == EM_RAND_INT) {
        j.lo = (int64_t)a;
        j.range = (uint64_t)(int64_t)b - (uint64_t)(int64_t)a;   /* no signed overflow for wide ranges */
        if (j.range > ((uint64_t)1 << 32)) j.per_ctr = 2;
    }
    return j;
}

int kc_random(em_random_op op, em_tensor *out, uint64_t seed, uint64_t offset, const uint64_t *dev_state, double a,
              double b)
{
    if ((unsigned)op >= EM_NRANDOM) return kc_error("random: unknown op %d", (int)op);
    rand_args j = rand_setup(op, out->dtype, seed, offset, dev_state, a, b);
    EW_DISPATCH_DTYPE(out->dtype, "random", rand_run, op, out, j)
}
