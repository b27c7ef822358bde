/*
 * softmax.cu — softmax and log_softmax along one dim on the GPU; the CUDA
 * twin of engine/cpu/softmax.c. float32, float16 and bfloat16 compute in
 * float, float64 in double; every row is max-shifted. As on the CPU, a NaN
 * anywhere in a row makes the whole row NaN, and so do a row of all -inf and
 * a row holding +inf (exp(inf - inf)).
 *
 * A "row" is one run of elements along dim. Three kernels:
 *  - short rows (n <= 1024 with unit stride along dim, n <= 256 otherwise):
 *    a group of up to 32 lanes holds a row in registers (K elements per
 *    lane, lane-strided so loads coalesce) and runs the CPU's passes (max,
 *    sum of exp, scale) on them: one read and one write of the data. Rows
 *    shorter than 32 share a warp.
 *  - long rows: one block per row, an online max/sum pass (the running sum is
 *    rescaled when the max grows) and a writing pass.
 *  - column rows: dim is not the unit-stride dim but a neighbouring dim is,
 *    and there are many rows: one thread per row with the same two passes,
 *    so the threads of a warp read neighbouring elements.
 */
#include "kc.h"
#include "online_lse.cuh"

#include <math.h>
#include <stdint.h>

namespace {

/* kc.h's lines, called rows here, and which of the two ops */
struct rows : kc_lines {
    bool log;                                       /* log_softmax */
};

/* after the last merge: what the outputs are computed from */
template <class C> __device__ __forceinline__ void online_final(C m, C s, bool log, C *shift, C *scale)
{
    if (s == (C)0) s = (C)NAN;              /* every element was -inf */
    *shift = log ? m + kc_log(s) : m;
    *scale = (C)1 / s;
}

template <class T, class C>
__device__ __forceinline__ void write_row(const rows &R, const T *x, T *o, int64_t j0, int64_t step, C shift, C scale)
{
    if (R.log)
        for (int64_t j = j0; j < R.n; j += step) kc_st(&o[j * R.os], kc_ld(x[j * R.xs]) - shift);
    else
        for (int64_t j = j0; j < R.n; j += step) kc_st(&o[j * R.os], kc_exp(kc_ld(x[j * R.xs]) - shift) * scale);
}

/* ---- short rows: registers ------------------------------------------------------- */

/* Groups of W lanes (a power of two <= 32) each take a row of n <= W*K
 * elements; lane l holds elements l, l + W, ... Rows longer than 32 take a
 * whole warp (K > 1 implies W == 32), so with unit strides (UNIT) every
 * offset is a constant and the K loads share one address register. */
template <class T, class C, int K, bool UNIT>
__global__ void __launch_bounds__(KC_THREADS)
warp_kernel(rows R, int W)
{
    if (K > 1) W = 32;
    const int lane = threadIdx.x & (W - 1);
    const int64_t gpw = 32 / W, wpb = blockDim.x >> 5;
    const int64_t gw = (int64_t)blockIdx.x * wpb + (threadIdx.x >> 5);
    for (int64_t base = gw * gpw; base < R.count; base += (int64_t)gridDim.x * wpb * gpw) {
        int64_t r = base + (threadIdx.x & 31) / W;
        bool active = r < R.count;
        const T *x = NULL;
        T *o = NULL;
        if (active) {
            int64_t io, oo;
            kc_line_offsets(R, r, &io, &oo);
            x = (const T *)R.in + io;
            o = (T *)R.out + oo;
        }
        /* lane's elements: j = lane + k*W, k < nk; pointers step by W strides */
        const int nk = lane < R.n ? (int)((R.n - 1 - lane) / W) + 1 : 0;
        const int64_t xstep = UNIT ? W : (int64_t)W * R.xs, ostep = UNIT ? W : (int64_t)W * R.os;
        C v[K];
        C m = -(C)INFINITY;
        const T *xp = x + (UNIT ? lane : lane * R.xs);
#pragma unroll
        for (int k = 0; k < K; k++) {
            v[k] = active && k < nk ? kc_ld(xp[k * xstep]) : -(C)INFINITY;
            m = kc_max(m, v[k]);
        }
        for (int d = W / 2; d > 0; d >>= 1) m = kc_max(m, __shfl_xor_sync(0xffffffffu, m, d));
        C s = 0;
#pragma unroll
        for (int k = 0; k < K; k++) {
            C e = k < nk ? kc_exp(v[k] - m) : (C)0;
            if (!R.log) v[k] = e;
            s += e;
        }
        for (int d = W / 2; d > 0; d >>= 1) s += __shfl_xor_sync(0xffffffffu, s, d);
        if (!active) continue;
        T *op = o + (UNIT ? lane : lane * R.os);
        if (R.log) {
            C shift = m + kc_log(s);
#pragma unroll
            for (int k = 0; k < K; k++)
                if (k < nk) kc_st(&op[k * ostep], v[k] - shift);
        } else {
            C inv = (C)1 / s;
#pragma unroll
            for (int k = 0; k < K; k++)
                if (k < nk) kc_st(&op[k * ostep], v[k] * inv);
        }
    }
}

/* ---- long rows: a block each -------------------------------------------------------- */

template <class T, class C>
__global__ void __launch_bounds__(KC_THREADS)
block_kernel(rows R)
{
    KC_SHARED(C, sm, [KC_THREADS / 32]);
    KC_SHARED(C, ss, [KC_THREADS / 32]);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int64_t r = blockIdx.x; r < R.count; r += gridDim.x) {
        int64_t io, oo;
        kc_line_offsets(R, r, &io, &oo);
        const T *x = (const T *)R.in + io;
        T *o = (T *)R.out + oo;
        C m = -(C)INFINITY, s = 0;
        for (int64_t j = threadIdx.x; j < R.n; j += blockDim.x) online_add(m, s, kc_ld(x[j * R.xs]));
        for (int d = 16; d > 0; d >>= 1) {
            C m2 = __shfl_xor_sync(0xffffffffu, m, d), s2 = __shfl_xor_sync(0xffffffffu, s, d);
            online_merge(m, s, m2, s2);
        }
        if (lane == 0) { sm[warp] = m; ss[warp] = s; }
        __syncthreads();
        m = sm[0];
        s = ss[0];
        for (int w = 1; w < nw; w++) online_merge(m, s, sm[w], ss[w]);
        __syncthreads();        /* sm/ss are reused by the next row */
        C shift, scale;
        online_final(m, s, R.log, &shift, &scale);
        write_row(R, x, o, threadIdx.x, blockDim.x, shift, scale);
    }
}

/* ---- column rows: a thread each -------------------------------------------------------- */

template <class T, class C>
__global__ void __launch_bounds__(KC_THREADS)
col_kernel(rows R)
{
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < R.count; r += (int64_t)gridDim.x * blockDim.x) {
        int64_t io, oo;
        kc_line_offsets(R, r, &io, &oo);
        const T *x = (const T *)R.in + io;
        T *o = (T *)R.out + oo;
        C m = -(C)INFINITY, s = 0;
        int64_t j = 0;
        for (; j + 3 < R.n; j += 4) {       /* four loads in flight */
            C v0 = kc_ld(x[j * R.xs]), v1 = kc_ld(x[(j + 1) * R.xs]), v2 = kc_ld(x[(j + 2) * R.xs]), v3 = kc_ld(x[(j + 3) * R.xs]);
            online_add(m, s, v0);
            online_add(m, s, v1);
            online_add(m, s, v2);
            online_add(m, s, v3);
        }
        for (; j < R.n; j++) online_add(m, s, kc_ld(x[j * R.xs]));
        C shift, scale;
        online_final(m, s, R.log, &shift, &scale);
        write_row(R, x, o, 0, 1, shift, scale);
    }
}

/* ---- host side ------------------------------------------------------------------------- */

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int capped(int64_t blocks, int dev)
{
    int64_t cap = (int64_t)kc_sm_count(dev) * 8;
    if (blocks > cap) blocks = cap;
    return blocks < 1 ? 1 : (int)blocks;
}

template <class T, class C, bool UNIT>
static void warp_launch(const rows &R, int W, int64_t K, int blocks, cudaStream_t s)
{
    if (K <= 1) KC_LAUNCH(blocks, KC_THREADS, 0, s, warp_kernel<T, C, 1, UNIT>)(R, W);
    else if (K <= 2) KC_LAUNCH(blocks, KC_THREADS, 0, s, warp_kernel<T, C, 2, UNIT>)(R, W);
    else if (K <= 4) KC_LAUNCH(blocks, KC_THREADS, 0, s, warp_kernel<T, C, 4, UNIT>)(R, W);
    else if (K <= 8) KC_LAUNCH(blocks, KC_THREADS, 0, s, warp_kernel<T, C, 8, UNIT>)(R, W);
    else if constexpr (UNIT) {      /* strided rows this long go to block_kernel */
        if (K <= 16) KC_LAUNCH(blocks, KC_THREADS, 0, s, warp_kernel<T, C, 16, UNIT>)(R, W);
        else KC_LAUNCH(blocks, KC_THREADS, 0, s, warp_kernel<T, C, 32, UNIT>)(R, W);
    }
}

template <class T, class C>
static int run(const rows &R, bool cols, int dev, cudaStream_t s)
{
    const char *name = R.log ? "log_softmax" : "softmax";
    if (cols && R.count >= (int64_t)kc_sm_count(dev) * 128) {
        KC_LAUNCH(capped(cdiv(R.count, KC_THREADS), dev), KC_THREADS, 0, s, col_kernel<T, C>)(R);
        return kc_launched(name, dev);
    }
    bool unit = R.xs == 1 && R.os == 1;
    if (R.n > 1024 || (!unit && R.n > 256)) {
        KC_LAUNCH(capped(R.count, dev), KC_THREADS, 0, s, block_kernel<T, C>)(R);
        return kc_launched(name, dev);
    }
    int W = 1;
    while (W < R.n && W < 32) W <<= 1;
    int64_t K = cdiv(R.n, W);
    int blocks = capped(cdiv(R.count, (KC_THREADS / 32) * (32 / W)), dev);
    if (unit) warp_launch<T, C, true>(R, W, K, blocks, s);
    else warp_launch<T, C, false>(R, W, K, blocks, s);
    return kc_launched(name, dev);
}

} /* namespace */

extern "C" int kc_softmax(em_softmax_op op, em_tensor *out, const em_tensor *in, int dim)
{
    const char *name = op == EM_LOG_SOFTMAX ? "log_softmax" : "softmax";
    if (in->ndim == 0 || dim < 0 || dim >= in->ndim)
        return kc_error("%s: dimension %d out of range for a tensor of %d dims", name, dim + 1, in->ndim);
    if (out->dtype != in->dtype)
        return kc_error("%s: output dtype %s differs from input dtype %s", name, kc_dtype_name(out->dtype),
                        kc_dtype_name(in->dtype));
    int dev = kc_device_of(in);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    int64_t numel = emf_numel(in);
    if (numel == 0 || in->sizes[dim] == 0) return 0;

    rows R;
    kc_lines_init(&R, out, in, dim);
    R.log = op == EM_LOG_SOFTMAX;
    bool cols = kc_column_lines(R);

    switch (in->dtype) {
    case EM_FLOAT32: return run<float, float>(R, cols, dev, s);
    case EM_FLOAT64: return run<double, double>(R, cols, dev, s);
    case EM_FLOAT16: return run<__half, float>(R, cols, dev, s);
    case EM_BFLOAT16: return run<__nv_bfloat16, float>(R, cols, dev, s);
    default: return kc_error("%s: no CUDA kernel for %s", name, kc_dtype_name(in->dtype));
    }
}
