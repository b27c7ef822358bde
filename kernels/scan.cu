/*
 * scan.cu — inclusive cumsum / cumprod / cummax / cummin / logcumsumexp
 * along one dim on the GPU; the CUDA twin of engine/cpu/scan.c. Floats
 * accumulate in double, integers in wrapping uint64; out has in's shape and dtype (the engine casts integer
 * inputs to int64 first).
 *
 * A "line" is one run of elements along dim. Two layouts:
 *  - warp lines: a warp scans a line 128 elements at a time (4 consecutive
 *    per lane, a shuffle scan across lanes, a running carry). Used for the
 *    last dim and for any layout the next one does not fit.
 *  - column lines: dim is not the unit-stride dim but a neighbouring dim is,
 *    so one thread per line walks it sequentially and the threads of a warp
 *    read adjacent elements at every step.
 * When there are too few lines to fill the GPU, each line is cut into S
 * chunks: a first kernel writes every chunk's total, a second turns the
 * totals into the carry entering each chunk, and the scan kernel starts each
 * chunk from its carry. In floating point that groups the operations
 * differently from the CPU's sequential loop (in double, so a float32 result
 * rarely differs in its last bit).
 */
#include "kc.h"

#include <stdint.h>

namespace {

/* loads into the accumulator and stores back with the CPU's conversions */
__device__ __forceinline__ double ld(float v) { return v; }
__device__ __forceinline__ double ld(double v) { return v; }
__device__ __forceinline__ double ld(__half v) { return (double)__half2float(v); }
__device__ __forceinline__ double ld(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
__device__ __forceinline__ uint64_t ld(int64_t v) { return (uint64_t)v; }
__device__ __forceinline__ uint64_t ld(int32_t v) { return (uint64_t)(int64_t)v; }
__device__ __forceinline__ uint64_t ld(int16_t v) { return (uint64_t)(int64_t)v; }
__device__ __forceinline__ uint64_t ld(int8_t v) { return (uint64_t)(int64_t)v; }
__device__ __forceinline__ uint64_t ld(uint8_t v) { return v; }

__device__ __forceinline__ void st(float *p, double v) { *p = (float)v; }
__device__ __forceinline__ void st(double *p, double v) { *p = v; }
__device__ __forceinline__ void st(__half *p, double v) { *p = __float2half((float)v); }
__device__ __forceinline__ void st(__nv_bfloat16 *p, double v) { *p = __float2bfloat16((float)v); }
__device__ __forceinline__ void st(int64_t *p, uint64_t v) { *p = (int64_t)v; }
__device__ __forceinline__ void st(int32_t *p, uint64_t v) { *p = (int32_t)(uint32_t)v; }
__device__ __forceinline__ void st(int16_t *p, uint64_t v) { *p = (int16_t)(uint16_t)v; }
__device__ __forceinline__ void st(int8_t *p, uint64_t v) { *p = (int8_t)(uint8_t)v; }
__device__ __forceinline__ void st(uint8_t *p, uint64_t v) { *p = (uint8_t)v; }

/* the running extremes: a NaN, once seen, stays; integers compare signed */
__device__ __forceinline__ double ext(double a, double b, bool mx)
{
    return a != a || (mx ? a > b : a < b) ? a : b;
}
__device__ __forceinline__ uint64_t ext(uint64_t a, uint64_t b, bool mx)
{
    return (mx ? (int64_t)a > (int64_t)b : (int64_t)a < (int64_t)b) ? a : b;
}

/* log(exp(a) + exp(b)) without overflow; equal infinities stay themselves */
__device__ __forceinline__ double lae(double a, double b)
{
    if (a != a || b != b) return a + b;
    if (a == b) return isinf(a) ? a : a + 0.69314718055994530942;
    double hi = a > b ? a : b, lo = a > b ? b : a;
    return hi + log1p(exp(lo - hi));
}
__device__ __forceinline__ uint64_t lae(uint64_t a, uint64_t) { return a; }   /* never launched */

__device__ __forceinline__ double lowest(double) { return -INFINITY; }
__device__ __forceinline__ double highest(double) { return INFINITY; }
__device__ __forceinline__ uint64_t lowest(uint64_t) { return (uint64_t)INT64_MIN; }
__device__ __forceinline__ uint64_t highest(uint64_t) { return (uint64_t)INT64_MAX; }

/* OP is an em_scan_op; every one of them is associative, so the chunked and
 * shuffle scans below apply to all */
template <class A, int OP> struct sop {
    __device__ static A ident()
    {
        switch (OP) {
        case EM_CUMPROD: return A(1);
        case EM_CUMMAX: case EM_LOGCUMSUMEXP: return lowest(A(0));
        case EM_CUMMIN: return highest(A(0));
        default: return A(0);
        }
    }
    __device__ static A apply(A a, A b)
    {
        switch (OP) {
        case EM_CUMPROD: return a * b;
        case EM_CUMMAX: return ext(a, b, true);
        case EM_CUMMIN: return ext(a, b, false);
        case EM_LOGCUMSUMEXP: return lae(a, b);
        default: return a + b;
        }
    }
};

#define SCAN_K 4        /* consecutive elements per lane in the warp scan */

/* ---- warp lines ------------------------------------------------------------ */

/* Chunk c of a line: its input x, output o and elements [k0, k1). */
template <class T> struct span {
    const T *x;
    T *o;
    int64_t k0, k1;
};

template <class T>
__device__ __forceinline__ span<T> chunk_of(const kc_lines &Ln, int64_t chunk, int64_t line, int64_t c)
{
    int64_t io, oo;
    kc_line_offsets(Ln, line, &io, &oo);
    int64_t k0 = c * chunk;
    return span<T>{(const T *)Ln.in + io, (T *)Ln.out + oo, k0, k0 + chunk < Ln.n ? k0 + chunk : Ln.n};
}

/* Warp w's: chunk w % S of line w / S. */
template <class T>
__device__ __forceinline__ span<T> warp_chunk(const kc_lines &Ln, int64_t S, int64_t chunk, int64_t w)
{
    int64_t line = w / S;
    return chunk_of<T>(Ln, chunk, line, w - line * S);
}

/* Warp w takes chunk c = w % S of line w / S and scans it, starting from
 * carry[w] (the identity when carry is NULL). */
template <class T, class A, int OP>
__global__ void __launch_bounds__(KC_THREADS)
warp_scan_kernel(kc_lines Ln, int64_t S, int64_t chunk, const A *carry)
{
    typedef sop<A, OP> op;
    const int lane = threadIdx.x & 31;
    const int64_t wpb = blockDim.x >> 5, total = Ln.count * S;
    for (int64_t w = (int64_t)blockIdx.x * wpb + (threadIdx.x >> 5); w < total; w += (int64_t)gridDim.x * wpb) {
        const span<T> sp = warp_chunk<T>(Ln, S, chunk, w);
        A run = carry ? carry[w] : op::ident();
        for (int64_t k = sp.k0; k < sp.k1; k += 32 * SCAN_K) {
            int64_t b = k + (int64_t)lane * SCAN_K;
            A v[SCAN_K];
#pragma unroll
            for (int e = 0; e < SCAN_K; e++) {
                A y = b + e < sp.k1 ? ld(sp.x[(b + e) * Ln.xs]) : op::ident();
                v[e] = e ? op::apply(v[e - 1], y) : y;
            }
            A incl = v[SCAN_K - 1];
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                A y = __shfl_up_sync(0xffffffffu, incl, d);
                if (lane >= d) incl = op::apply(y, incl);
            }
            A excl = __shfl_up_sync(0xffffffffu, incl, 1);
            A pre = lane ? op::apply(run, excl) : run;
#pragma unroll
            for (int e = 0; e < SCAN_K; e++)
                if (b + e < sp.k1) st(&sp.o[(b + e) * Ln.os], op::apply(pre, v[e]));
            run = op::apply(run, __shfl_sync(0xffffffffu, incl, 31));
        }
    }
}

/* totals of the chunks, one warp each, into tot[line * S + c] */
template <class T, class A, int OP>
__global__ void __launch_bounds__(KC_THREADS)
warp_total_kernel(kc_lines Ln, int64_t S, int64_t chunk, A *tot)
{
    typedef sop<A, OP> op;
    const int lane = threadIdx.x & 31;
    const int64_t wpb = blockDim.x >> 5, total = Ln.count * S;
    for (int64_t w = (int64_t)blockIdx.x * wpb + (threadIdx.x >> 5); w < total; w += (int64_t)gridDim.x * wpb) {
        const span<T> sp = warp_chunk<T>(Ln, S, chunk, w);
        A a = op::ident();
        for (int64_t k = sp.k0 + lane; k < sp.k1; k += 32) a = op::apply(a, ld(sp.x[k * Ln.xs]));
        for (int d = 16; d > 0; d >>= 1) a = op::apply(a, __shfl_xor_sync(0xffffffffu, a, d));
        if (lane == 0) tot[w] = a;
    }
}

/* ---- column lines ---------------------------------------------------------- */

/* Thread t takes line t % count of chunk t / count, so neighbouring threads
 * take neighbouring lines. */
template <class T, class A, int OP>
__global__ void __launch_bounds__(KC_THREADS)
col_scan_kernel(kc_lines Ln, int64_t S, int64_t chunk, const A *carry)
{
    typedef sop<A, OP> op;
    const int64_t total = Ln.count * S;
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = t / Ln.count, line = t - c * Ln.count;
        const span<T> sp = chunk_of<T>(Ln, chunk, line, c);
        const T *x = sp.x;
        T *o = sp.o;
        int64_t k = sp.k0, k1 = sp.k1;
        A run = carry ? carry[line * S + c] : op::ident();
        for (; k + 3 < k1; k += 4) {        /* four loads in flight */
            T v0 = x[k * Ln.xs], v1 = x[(k + 1) * Ln.xs], v2 = x[(k + 2) * Ln.xs], v3 = x[(k + 3) * Ln.xs];
            run = op::apply(run, ld(v0)); st(&o[k * Ln.os], run);
            run = op::apply(run, ld(v1)); st(&o[(k + 1) * Ln.os], run);
            run = op::apply(run, ld(v2)); st(&o[(k + 2) * Ln.os], run);
            run = op::apply(run, ld(v3)); st(&o[(k + 3) * Ln.os], run);
        }
        for (; k < k1; k++) {
            run = op::apply(run, ld(x[k * Ln.xs]));
            st(&o[k * Ln.os], run);
        }
    }
}

template <class T, class A, int OP>
__global__ void __launch_bounds__(KC_THREADS)
col_total_kernel(kc_lines Ln, int64_t S, int64_t chunk, A *tot)
{
    typedef sop<A, OP> op;
    const int64_t total = Ln.count * S;
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = t / Ln.count, line = t - c * Ln.count;
        const span<T> sp = chunk_of<T>(Ln, chunk, line, c);
        A a = op::ident();
        for (int64_t k = sp.k0; k < sp.k1; k++) a = op::apply(a, ld(sp.x[k * Ln.xs]));
        tot[line * S + c] = a;
    }
}

/* ---- carries --------------------------------------------------------------- */

/* One warp per line turns tot[line * S + c] into the exclusive scan over c,
 * in place: the carry entering each chunk. */
template <class A, int OP>
__global__ void __launch_bounds__(KC_THREADS)
carry_kernel(A *tot, int64_t count, int64_t S)
{
    typedef sop<A, OP> op;
    const int lane = threadIdx.x & 31;
    const int64_t wpb = blockDim.x >> 5;
    for (int64_t line = (int64_t)blockIdx.x * wpb + (threadIdx.x >> 5); line < count;
         line += (int64_t)gridDim.x * wpb) {
        A *t = tot + line * S, run = op::ident();
        for (int64_t c0 = 0; c0 < S; c0 += 32) {
            int64_t c = c0 + lane;
            A incl = c < S ? t[c] : op::ident();
            for (int d = 1; d < 32; d <<= 1) {
                A y = __shfl_up_sync(0xffffffffu, incl, d);
                if (lane >= d) incl = op::apply(y, incl);
            }
            A excl = __shfl_up_sync(0xffffffffu, incl, 1);
            if (c < S) t[c] = lane ? op::apply(run, excl) : run;
            run = op::apply(run, __shfl_sync(0xffffffffu, incl, 31));
        }
    }
}

/* ---- host side --------------------------------------------------------------- */

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int blocks_for(int64_t items_per_block, int64_t items, int dev)
{
    int64_t b = cdiv(items, items_per_block), cap = (int64_t)kc_sm_count(dev) * 8;
    if (b > cap) b = cap;
    return b < 1 ? 1 : (int)b;
}

template <class T, class A, int OP>
static int run(const kc_lines &Ln, bool cols, int dev, cudaStream_t s)
{
    int64_t sm = kc_sm_count(dev), S = 1, chunk = Ln.n;
    if (cols) {
        int64_t want = sm * 2048;               /* threads */
        if (Ln.count * 2 < want && Ln.n >= 64) {
            S = cdiv(want, Ln.count);
            if (S > Ln.n / 32) S = Ln.n / 32;
        }
    } else {
        int64_t want = sm * 64;                 /* warps */
        if (Ln.count * 2 < want && Ln.n >= 2048) {
            S = cdiv(want, Ln.count);
            if (S > Ln.n / 1024) S = Ln.n / 1024;
        }
    }
    if (S > 1) {
        chunk = cdiv(cdiv(Ln.n, S), 32 * SCAN_K) * (32 * SCAN_K);
        S = cdiv(Ln.n, chunk);
    }
    int64_t items = Ln.count * S;
    A *tot = NULL;
    size_t bytes = (size_t)items * sizeof(A);
    if (S > 1) {
        tot = (A *)kc_alloc(bytes, dev);
        if (!tot) return -1;
        if (cols) KC_LAUNCH(blocks_for(KC_THREADS, items, dev), KC_THREADS, 0, s, col_total_kernel<T, A, OP>)(Ln, S, chunk, tot);
        else KC_LAUNCH(blocks_for(KC_THREADS / 32, items, dev), KC_THREADS, 0, s, warp_total_kernel<T, A, OP>)(Ln, S, chunk, tot);
        KC_LAUNCH(blocks_for(KC_THREADS / 32, Ln.count, dev), KC_THREADS, 0, s, carry_kernel<A, OP>)(tot, Ln.count, S);
    }
    if (cols) KC_LAUNCH(blocks_for(KC_THREADS, items, dev), KC_THREADS, 0, s, col_scan_kernel<T, A, OP>)(Ln, S, chunk, tot);
    else KC_LAUNCH(blocks_for(KC_THREADS / 32, items, dev), KC_THREADS, 0, s, warp_scan_kernel<T, A, OP>)(Ln, S, chunk, tot);
    if (tot) kc_free(tot, bytes, dev);
    static const char *const names[] = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"};
    return kc_launched(names[OP], dev);
}

template <class T, class A>
static int run_op(em_scan_op op, const kc_lines &Ln, bool cols, int dev, cudaStream_t s)
{
    switch (op) {
    case EM_CUMPROD: return run<T, A, EM_CUMPROD>(Ln, cols, dev, s);
    case EM_CUMMAX: return run<T, A, EM_CUMMAX>(Ln, cols, dev, s);
    case EM_CUMMIN: return run<T, A, EM_CUMMIN>(Ln, cols, dev, s);
    case EM_LOGCUMSUMEXP: return run<T, A, EM_LOGCUMSUMEXP>(Ln, cols, dev, s);
    default: return run<T, A, EM_CUMSUM>(Ln, cols, dev, s);
    }
}

} /* namespace */

extern "C" int kc_scan(em_scan_op op, em_tensor *out, const em_tensor *in, int dim)
{
    static const char *const names[] = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"};
    if ((unsigned)op > EM_LOGCUMSUMEXP) return kc_error("scan: unknown scan op %d", (int)op);
    const char *name = names[op];
    if (op == EM_LOGCUMSUMEXP && (in->dtype != EM_FLOAT32 && in->dtype != EM_FLOAT64 &&
                                  in->dtype != EM_FLOAT16 && in->dtype != EM_BFLOAT16))
        return kc_error("logcumsumexp: expected a floating point dtype, got %s", kc_dtype_name(in->dtype));
    if (out->dtype != in->dtype)
        return kc_error("%s: output dtype %s differs from input dtype %s", name, kc_dtype_name(out->dtype),
                        kc_dtype_name(in->dtype));
    if (in->ndim > 0 && (dim < 0 || dim >= in->ndim))
        return kc_error("%s: dimension %d out of range for a tensor of %d dims", name, dim + 1, in->ndim);
    int64_t numel = emf_numel(in);
    int dev = kc_device_of(in);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    if (numel == 0) return 0;

    kc_lines Ln;
    kc_lines_init(&Ln, out, in, dim);
    bool cols = kc_column_lines(Ln);

    switch (in->dtype) {
    case EM_FLOAT32: return run_op<float, double>(op, Ln, cols, dev, s);
    case EM_FLOAT64: return run_op<double, double>(op, Ln, cols, dev, s);
    case EM_FLOAT16: return run_op<__half, double>(op, Ln, cols, dev, s);
    case EM_BFLOAT16: return run_op<__nv_bfloat16, double>(op, Ln, cols, dev, s);
    case EM_INT64: return run_op<int64_t, uint64_t>(op, Ln, cols, dev, s);
    case EM_INT32: return run_op<int32_t, uint64_t>(op, Ln, cols, dev, s);
    case EM_INT16: return run_op<int16_t, uint64_t>(op, Ln, cols, dev, s);
    case EM_INT8: return run_op<int8_t, uint64_t>(op, Ln, cols, dev, s);
    case EM_UINT8: return run_op<uint8_t, uint64_t>(op, Ln, cols, dev, s);
    default: return kc_error("%s: no CUDA kernel for %s", name, kc_dtype_name(in->dtype));
    }
}
