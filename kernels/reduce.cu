/*
 * reduce.cu — the reduction family (sum, prod, max, min, all, any) on the GPU;
 * the CUDA twin of engine/cpu/reduce.c (same results, same dtype rules).
 *
 * `in` arrives permuted so that its last `nreduce` dims are the reduced ones.
 * Both groups of dims are coalesced on the host, which leaves two layouts:
 *  - rows: each output reduces a run of elements (contiguous for reductions
 *    over the last dims). A group of G threads (1..256, a power of two) takes
 *    one output; contiguous runs are read with 16-byte loads. When there are
 *    too few outputs to fill the GPU (a full reduction, a handful of huge
 *    rows) each row is cut into S chunks whose partial results land in a
 *    scratch buffer and a second kernel folds them, in a fixed order.
 *  - columns: the kept dims end in a unit-stride dim and the reduced elements
 *    are strided (e.g. a bias gradient, a sum over dim 1 of [N, C]). Threads
 *    run across the kept unit-stride dim, so every load of a warp is one
 *    contiguous segment, and several rows of threads split the reduced
 *    positions; the reduced range may again be split over blocks.
 * Every combination is a fixed tree, so results do not depend on timing.
 *
 * Accumulators follow the CPU: float sums and products accumulate in double
 * (exact enough that a float32 result is almost always the correctly rounded
 * sum, and memory bound on every GPU this targets), integer and bool sums in
 * wrapping uint64 (stored as int64). max/min compare in the input's own
 * precision (float for float32/float16/bfloat16). all/any test v != 0, so NaN
 * is true. max/min track the 1-based row-major position of the first extreme
 * within the reduced dims: each thread visits increasing positions and ties
 * between threads go to the smaller position; NaN is the extreme (first NaN).
 */
#include "kc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

namespace {

/* bool storage read as bytes and normalised with != 0, as the CPU does */
struct kb8 { uint8_t v; };

/* ---- layouts ------------------------------------------------------------- */

struct rlayout {
    const char *in;
    int nk, nr;                                     /* coalesced kept / reduced dims */
    int64_t ksz[EM_MAX_DIMS], kst[EM_MAX_DIMS];     /* strides in elements */
    int64_t rsz[EM_MAX_DIMS], rst[EM_MAX_DIMS];
    int64_t outer, inner;
};

/* where output i (row-major over the kept dims) goes */
struct rout {
    char *out;
    int64_t *idx;
    int odt, oes, nd;
    bool ocontig, icontig;
    int64_t sz[EM_MAX_DIMS], ost[EM_MAX_DIMS], ist[EM_MAX_DIMS];
};

__device__ __forceinline__ int64_t dims_offset(int64_t i, int n, const int64_t *sz, const int64_t *st)
{
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        int64_t q = i / sz[d];
        off += (i - q * sz[d]) * st[d];
        i = q;
    }
    return off;
}

__device__ __forceinline__ int64_t reduced_offset(const rlayout &L, int64_t r)
{
    if (L.nr == 1) return r * L.rst[0];
    return dims_offset(r, L.nr, L.rsz, L.rst);
}

/* ---- conversions into the accumulator ------------------------------------ */

template <class A> struct conv;
template <> struct conv<double> {
    __device__ static double get(float v) { return v; }
    __device__ static double get(double v) { return v; }
    __device__ static double get(__half v) { return (double)__half2float(v); }
    __device__ static double get(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
    __device__ static double get(int64_t v) { return (double)v; }
    __device__ static double get(int32_t v) { return (double)v; }
    __device__ static double get(int16_t v) { return (double)v; }
    __device__ static double get(int8_t v) { return (double)v; }
    __device__ static double get(uint8_t v) { return (double)v; }
    __device__ static double get(kb8 v) { return v.v ? 1.0 : 0.0; }
};
template <> struct conv<float> {
    __device__ static float get(float v) { return v; }
    __device__ static float get(__half v) { return __half2float(v); }
    __device__ static float get(__nv_bfloat16 v) { return __bfloat162float(v); }
};
template <> struct conv<int64_t> {
    __device__ static int64_t get(int64_t v) { return v; }
    __device__ static int64_t get(int32_t v) { return v; }
    __device__ static int64_t get(int16_t v) { return v; }
    __device__ static int64_t get(int8_t v) { return v; }
    __device__ static int64_t get(uint8_t v) { return v; }
    __device__ static int64_t get(kb8 v) { return v.v != 0; }
};
template <> struct conv<uint64_t> {
    __device__ static uint64_t get(int64_t v) { return (uint64_t)v; }
    __device__ static uint64_t get(int32_t v) { return (uint64_t)(int64_t)v; }
    __device__ static uint64_t get(int16_t v) { return (uint64_t)(int64_t)v; }
    __device__ static uint64_t get(int8_t v) { return (uint64_t)(int64_t)v; }
    __device__ static uint64_t get(uint8_t v) { return v; }
    __device__ static uint64_t get(kb8 v) { return v.v != 0; }
};
/* all/any: truth values */
template <> struct conv<int> {
    __device__ static int get(float v) { return v != 0.0f; }
    __device__ static int get(double v) { return v != 0.0; }
    __device__ static int get(__half v) { return __half2float(v) != 0.0f; }
    __device__ static int get(__nv_bfloat16 v) { return __bfloat162float(v) != 0.0f; }
    __device__ static int get(int64_t v) { return v != 0; }
    __device__ static int get(int32_t v) { return v != 0; }
    __device__ static int get(int16_t v) { return v != 0; }
    __device__ static int get(int8_t v) { return v != 0; }
    __device__ static int get(uint8_t v) { return v != 0; }
    __device__ static int get(kb8 v) { return v.v != 0; }
};

/* ---- stores with the CPU's conversions (engine/formulas.h) ---- */

__device__ __forceinline__ void store_acc(char *p, int dt, double v) { emf_store_f64(p, dt, v); }
__device__ __forceinline__ void store_acc(char *p, int dt, float v) { emf_store_f64(p, dt, (double)v); }
__device__ __forceinline__ void store_acc(char *p, int dt, int64_t v) { emf_store_i64(p, dt, v); }
__device__ __forceinline__ void store_acc(char *p, int dt, uint64_t v) { emf_store_i64(p, dt, (int64_t)v); }
__device__ __forceinline__ void store_acc(char *p, int dt, int v) { emf_store_i64(p, dt, v); }

/* ---- the ops ----------------------------------------------------------------
 * fold(a, ap, v, vp) takes one more element; merge is the same rule for two
 * partial results. ap is the position of the extreme (max/min only). */

__device__ __forceinline__ bool is_nan(float v) { return v != v; }
__device__ __forceinline__ bool is_nan(double v) { return v != v; }
__device__ __forceinline__ bool is_nan(int64_t) { return false; }

template <class A> struct limits;
template <> struct limits<float> {
    __device__ static float lo() { return -INFINITY; }
    __device__ static float hi() { return INFINITY; }
};
template <> struct limits<double> {
    __device__ static double lo() { return -INFINITY; }
    __device__ static double hi() { return INFINITY; }
};
template <> struct limits<int64_t> {
    __device__ static int64_t lo() { return INT64_MIN; }
    __device__ static int64_t hi() { return INT64_MAX; }
};

template <class A> struct op_sum {
    typedef A acc;
    static const bool extreme = false;
    __device__ static A ident() { return A(0); }
    __device__ static void merge(A &a, int64_t &, A b, int64_t) { a = a + b; }
};

template <class A> struct op_prod {
    typedef A acc;
    static const bool extreme = false;
    __device__ static A ident() { return A(1); }
    __device__ static void merge(A &a, int64_t &, A b, int64_t) { a = a * b; }
};

struct op_all {
    typedef int acc;
    static const bool extreme = false;
    __device__ static int ident() { return 1; }
    __device__ static void merge(int &a, int64_t &, int b, int64_t) { a &= b; }
};

struct op_any {
    typedef int acc;
    static const bool extreme = false;
    __device__ static int ident() { return 0; }
    __device__ static void merge(int &a, int64_t &, int b, int64_t) { a |= b; }
};

/* The identity sits at position INT64_MAX, so a real element equal to it
 * (-inf for max, INT64_MIN, ...) still wins the tie on position. */
template <class A, bool MAX> struct op_ext {
    typedef A acc;
    static const bool extreme = true;
    __device__ static A ident() { return MAX ? limits<A>::lo() : limits<A>::hi(); }
    __device__ static void merge(A &a, int64_t &ap, A b, int64_t bp)
    {
        bool bn = is_nan(b), an = is_nan(a);
        bool better = bn ? !an : (MAX ? b > a : b < a);
        bool same = bn ? an : (!an && b == a);
        if (better || (same && bp < ap)) { a = b; ap = bp; }
    }
};

template <class Op, class T> __device__ __forceinline__ void fold(typename Op::acc &a, int64_t &ap, T v, int64_t pos)
{
    Op::merge(a, ap, conv<typename Op::acc>::get(v), pos);
}

/* Folds the elements at positions r, r + G, r + 2G, ... (stride st) four at a
 * time, four loads in flight, while four fit below r1; returns the first
 * position left for the caller's tail loop. */
template <class Op, class T>
__device__ __forceinline__ int64_t fold_strided4(const T *p, int64_t st, int64_t r, int64_t r1, int G,
                                                 typename Op::acc &a, int64_t &ap)
{
    for (; r + 3 * (int64_t)G < r1; r += 4 * (int64_t)G) {
        T v0 = p[r * st], v1 = p[(r + G) * st], v2 = p[(r + 2 * G) * st], v3 = p[(r + 3 * G) * st];
        fold<Op>(a, ap, v0, r);
        fold<Op>(a, ap, v1, r + G);
        fold<Op>(a, ap, v2, r + 2 * G);
        fold<Op>(a, ap, v3, r + 3 * G);
    }
    return r;
}

/* ---- one group of G threads folds positions [r0, r1) of a row ----------- */

template <class T> struct alignas(16) vec16 { T v[16 / sizeof(T)]; };

template <class T, class Op>
__device__ void fold_range(const rlayout &L, const T *p, int64_t r0, int64_t r1, int lane, int G,
                           typename Op::acc &a, int64_t &ap)
{
    if (L.nr == 1 && L.rst[0] == 1) {
        constexpr int V = 16 / (int)sizeof(T);
        const T *q = p + r0;
        int64_t n = r1 - r0;
        int64_t mis = (int64_t)(((uintptr_t)q & 15) / sizeof(T));
        int64_t head = mis ? (V - mis < n ? V - mis : n) : 0;     /* up to the first 16-byte boundary */
        for (int64_t r = lane; r < head; r += G) fold<Op>(a, ap, q[r], r0 + r);
        int64_t nv = (n - head) / V;
        const vec16<T> *qv = (const vec16<T> *)(q + head);
        int64_t k = lane;
        for (; k + G < nv; k += 2 * (int64_t)G) {       /* two loads in flight per thread */
            vec16<T> w0 = qv[k], w1 = qv[k + G];
            int64_t b0 = r0 + head + k * V, b1 = b0 + (int64_t)G * V;
#pragma unroll
            for (int e = 0; e < V; e++) fold<Op>(a, ap, w0.v[e], b0 + e);
#pragma unroll
            for (int e = 0; e < V; e++) fold<Op>(a, ap, w1.v[e], b1 + e);
        }
        for (; k < nv; k += G) {
            vec16<T> w0 = qv[k];
            int64_t b0 = r0 + head + k * V;
#pragma unroll
            for (int e = 0; e < V; e++) fold<Op>(a, ap, w0.v[e], b0 + e);
        }
        for (int64_t r = head + nv * V + lane; r < n; r += G) fold<Op>(a, ap, q[r], r0 + r);
        return;
    }
    if (L.nr == 1) {
        int64_t st = L.rst[0], r = fold_strided4<Op>(p, st, r0 + lane, r1, G, a, ap);
        for (; r < r1; r += G) fold<Op>(a, ap, p[r * st], r);
        return;
    }
    for (int64_t r = r0 + lane; r < r1; r += G) fold<Op>(a, ap, p[reduced_offset(L, r)], r);
}

/* Reduces (a, ap) over aligned groups of G threads (G a power of two up to
 * the block size); the result is in the group's first thread. Every thread
 * of the block must call it (callers loop over rows block-uniformly), so the
 * __syncthreads for groups wider than a warp are safe. */
template <class Op>
__device__ void group_reduce(typename Op::acc &a, int64_t &ap, int G, typename Op::acc *sv, int64_t *sp)
{
    typedef typename Op::acc A;
    for (int o = (G < 32 ? G : 32) / 2; o > 0; o >>= 1) {
        A b = __shfl_xor_sync(0xffffffffu, a, o);
        int64_t bp = Op::extreme ? __shfl_xor_sync(0xffffffffu, ap, o) : 0;
        Op::merge(a, ap, b, bp);
    }
    if (G <= 32) return;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = G >> 5;
    if (lane == 0) { sv[warp] = a; sp[warp] = ap; }
    __syncthreads();
    if ((warp & (nw - 1)) == 0) {       /* the group's first warp folds its nw warps */
        a = lane < nw ? sv[warp + lane] : Op::ident();
        ap = lane < nw ? sp[warp + lane] : INT64_MAX;
        for (int o = 16; o > 0; o >>= 1) {
            A b = __shfl_xor_sync(0xffffffffu, a, o);
            int64_t bp = Op::extreme ? __shfl_xor_sync(0xffffffffu, ap, o) : 0;
            Op::merge(a, ap, b, bp);
        }
    }
    __syncthreads();        /* sv is reused by the next row */
}

template <class A>
__device__ __forceinline__ void write_out(const rout &O, int64_t i, A a, int64_t ap)
{
    int64_t off = O.ocontig ? i : dims_offset(i, O.nd, O.sz, O.ost);
    store_acc(O.out + off * O.oes, O.odt, a);
    if (O.idx) O.idx[O.icontig ? i : dims_offset(i, O.nd, O.sz, O.ist)] = ap + 1;
}

/* ---- kernels ------------------------------------------------------------- */

/* rows: group g of the block takes row (output i, chunk s) = base + g. With
 * S == 1 it writes the output, otherwise the chunk's partial at [i*S + s]. */
template <class T, class Op>
__global__ void __launch_bounds__(KC_THREADS)
rows_kernel(rlayout L, rout O, int G, int64_t S, int64_t chunk, typename Op::acc *pv, int64_t *pp)
{
    typedef typename Op::acc A;
    KC_SHARED(A, sv, [KC_THREADS / 32]);
    KC_SHARED(int64_t, sp, [KC_THREADS / 32]);
    const int lane = threadIdx.x & (G - 1), gpb = blockDim.x / G;
    const int64_t nrows = L.outer * S;
    for (int64_t base = (int64_t)blockIdx.x * gpb; base < nrows; base += (int64_t)gridDim.x * gpb) {
        int64_t row = base + threadIdx.x / G;
        A a = Op::ident();
        int64_t ap = INT64_MAX;
        int64_t i = row / S, s = row - i * S;
        if (row < nrows) {
            int64_t r0 = s * chunk, r1 = r0 + chunk < L.inner ? r0 + chunk : L.inner;
            const T *p = (const T *)L.in + dims_offset(i, L.nk, L.ksz, L.kst);
            fold_range<T, Op>(L, p, r0, r1, lane, G, a, ap);
        }
        group_reduce<Op>(a, ap, G, sv, sp);
        if (row < nrows && lane == 0) {
            if (S == 1) write_out(O, i, a, ap);
            else {
                pv[row] = a;
                if (Op::extreme) pp[row] = ap;
            }
        }
    }
}

/* columns: a tile is BX neighbouring outputs of one group of the outer kept
 * dims; thread (tx, ty) folds reduced positions ty, ty + BY, ... of its
 * column within chunk blockIdx.y, then the BY rows of threads are merged
 * through shared memory. */
template <class T, class Op>
__global__ void __launch_bounds__(KC_THREADS)
cols_kernel(rlayout L, rout O, int BX, int64_t W, int64_t tilesW, int64_t ntiles, int64_t S, int64_t chunk,
            typename Op::acc *pv, int64_t *pp)
{
    typedef typename Op::acc A;
    KC_SHARED(A, sv, [KC_THREADS]);
    KC_SHARED(int64_t, sp, [KC_THREADS]);
    const int BY = blockDim.x / BX, tx = threadIdx.x % BX, ty = threadIdx.x / BX;
    const int64_t s = blockIdx.y, r0 = s * chunk, r1 = r0 + chunk < L.inner ? r0 + chunk : L.inner;
    for (int64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        int64_t g = tile / tilesW, j = (tile - g * tilesW) * BX + tx;
        A a = Op::ident();
        int64_t ap = INT64_MAX;
        if (j < W) {
            const T *p = (const T *)L.in + dims_offset(g, L.nk - 1, L.ksz, L.kst) + j;
            int64_t r = r0 + ty;
            if (L.nr == 1) r = fold_strided4<Op>(p, L.rst[0], r, r1, BY, a, ap);
            for (; r < r1; r += BY) fold<Op>(a, ap, p[reduced_offset(L, r)], r);
        }
        sv[threadIdx.x] = a;
        sp[threadIdx.x] = ap;
        __syncthreads();
        for (int h = BY / 2; h > 0; h >>= 1) {
            if (ty < h) {
                int o = threadIdx.x + h * BX;
                Op::merge(a, ap, sv[o], sp[o]);
                sv[threadIdx.x] = a;
                sp[threadIdx.x] = ap;
            }
            __syncthreads();
        }
        if (ty == 0 && j < W) {
            int64_t i = g * W + j;
            if (S == 1) write_out(O, i, a, ap);
            else {
                pv[i * S + s] = a;
                if (Op::extreme) pp[i * S + s] = ap;
            }
        }
    }
}

/* second pass: output i folds its S partials [i*S, i*S + S) */
template <class Op>
__global__ void __launch_bounds__(KC_THREADS)
finish_kernel(const typename Op::acc *pv, const int64_t *pp, int64_t outer, int64_t S, int G, rout O)
{
    typedef typename Op::acc A;
    KC_SHARED(A, sv, [KC_THREADS / 32]);
    KC_SHARED(int64_t, sp, [KC_THREADS / 32]);
    const int lane = threadIdx.x & (G - 1), gpb = blockDim.x / G;
    for (int64_t base = (int64_t)blockIdx.x * gpb; base < outer; base += (int64_t)gridDim.x * gpb) {
        int64_t i = base + threadIdx.x / G;
        A a = Op::ident();
        int64_t ap = INT64_MAX;
        if (i < outer)
            for (int64_t k = lane; k < S; k += G) Op::merge(a, ap, pv[i * S + k], Op::extreme ? pp[i * S + k] : 0);
        group_reduce<Op>(a, ap, G, sv, sp);
        if (i < outer && lane == 0) write_out(O, i, a, ap);
    }
}

/* ---- host side ----------------------------------------------------------- */

static int64_t pow2_at_least(int64_t n)
{
    int64_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct plan {
    rlayout L;
    rout O;
    int dev;
    cudaStream_t stream;
};

/* Folds the partials [outer][S] into the outputs and frees them. */
template <class Op>
static int finish(const plan &P, typename Op::acc *pv, int64_t *pp, int64_t S, size_t bytes)
{
    int64_t G = pow2_at_least(cdiv(S, 4));
    if (G > 256) G = 256;
    int64_t blocks = cdiv(P.L.outer, KC_THREADS / G), cap = (int64_t)kc_sm_count(P.dev) * 8;
    KC_LAUNCH((int)(blocks < cap ? blocks : cap), KC_THREADS, 0, P.stream, finish_kernel<Op>)(pv, pp, P.L.outer, S, (int)G,
                                                                                    P.O);
    kc_free(pv, bytes, P.dev);
    return kc_launched("reduce", P.dev);
}

template <class Op>
static int alloc_partials(const plan &P, int64_t n, typename Op::acc **pv, int64_t **pp, size_t *bytes)
{
    size_t nv = (size_t)n * sizeof(typename Op::acc);
    nv = (nv + 15) & ~(size_t)15;
    *bytes = nv + (Op::extreme ? (size_t)n * sizeof(int64_t) : 0);
    char *b = (char *)kc_alloc(*bytes, P.dev);
    if (!b) return -1;
    *pv = (typename Op::acc *)b;
    *pp = Op::extreme ? (int64_t *)(b + nv) : NULL;
    return 0;
}

template <class T, class Op>
static int run_rows(const plan &P)
{
    typedef typename Op::acc A;
    const rlayout &L = P.L;
    int64_t want = (int64_t)kc_sm_count(P.dev) * 2048;     /* resident threads of the whole GPU */
    bool contig = L.nr == 1 && L.rst[0] == 1;
    int64_t G = pow2_at_least(cdiv(L.inner, contig ? 8 : 2));
    if (G > 256) G = 256;
    int64_t S = 1, chunk = L.inner > 0 ? L.inner : 1;
    if (L.outer * 256 < want && L.inner >= 8192) {     /* too few rows: split them */
        G = 256;
        S = cdiv(want, L.outer * 256);
        if (S > L.inner / 4096) S = L.inner / 4096;
        chunk = cdiv(cdiv(L.inner, S), 256) * 256;      /* keeps chunks 16-byte aligned within a row */
        S = cdiv(L.inner, chunk);
    }
    int gpb = KC_THREADS / (int)G;
    int64_t blocks = cdiv(L.outer * S, gpb), cap = (int64_t)kc_sm_count(P.dev) * 8;
    if (blocks > cap) blocks = cap;
    if (S == 1) {
        KC_LAUNCH((int)blocks, KC_THREADS, 0, P.stream, rows_kernel<T, Op>)(L, P.O, (int)G, 1, chunk, NULL, NULL);
        return kc_launched("reduce", P.dev);
    }
    A *pv;
    int64_t *pp;
    size_t bytes;
    if (alloc_partials<Op>(P, L.outer * S, &pv, &pp, &bytes)) return -1;
    KC_LAUNCH((int)blocks, KC_THREADS, 0, P.stream, rows_kernel<T, Op>)(L, P.O, (int)G, S, chunk, pv, pp);
    if (kc_launched("reduce", P.dev)) { kc_free(pv, bytes, P.dev); return -1; }
    return finish<Op>(P, pv, pp, S, bytes);
}

template <class T, class Op>
static int run_cols(const plan &P)
{
    typedef typename Op::acc A;
    const rlayout &L = P.L;
    int64_t want = (int64_t)kc_sm_count(P.dev) * 2048;
    int64_t W = L.ksz[L.nk - 1];
    int BX = (int)(W >= 32 ? 32 : pow2_at_least(W)), BY = KC_THREADS / BX;
    int64_t tilesW = cdiv(W, BX), ntiles = (L.outer / W) * tilesW;
    int64_t S = 1, chunk = L.inner;
    if (ntiles * KC_THREADS < want && L.inner >= 32 * (int64_t)BY) {
        S = cdiv(want, ntiles * KC_THREADS);
        if (S > L.inner / (16 * (int64_t)BY)) S = L.inner / (16 * (int64_t)BY);
        if (S > 65535) S = 65535;
        if (S < 1) S = 1;
        chunk = cdiv(L.inner, S);
        S = cdiv(L.inner, chunk);
    }
    int64_t cap = (int64_t)kc_sm_count(P.dev) * 32;
    dim3 grid((unsigned)(ntiles < cap ? ntiles : cap), (unsigned)S);
    if (S == 1) {
        KC_LAUNCH(grid, KC_THREADS, 0, P.stream, cols_kernel<T, Op>)(L, P.O, BX, W, tilesW, ntiles, 1, chunk, NULL, NULL);
        return kc_launched("reduce", P.dev);
    }
    A *pv;
    int64_t *pp;
    size_t bytes;
    if (alloc_partials<Op>(P, L.outer * S, &pv, &pp, &bytes)) return -1;
    KC_LAUNCH(grid, KC_THREADS, 0, P.stream, cols_kernel<T, Op>)(L, P.O, BX, W, tilesW, ntiles, S, chunk, pv, pp);
    if (kc_launched("reduce", P.dev)) { kc_free(pv, bytes, P.dev); return -1; }
    return finish<Op>(P, pv, pp, S, bytes);
}

template <class T, class Op>
static int run(const plan &P)
{
    const rlayout &L = P.L;
    /* columns when the outputs are adjacent in memory and a row is not */
    bool rows_contig = L.rst[L.nr - 1] == 1;
    if (!rows_contig && L.nk > 0 && L.kst[L.nk - 1] == 1) return run_cols<T, Op>(P);
    return run_rows<T, Op>(P);
}

/* float inputs: sums and products in double, max/min in C */
template <class T, class C>
static int run_float(em_reduce_op op, const plan &P, em_dtype idt, em_dtype odt)
{
    switch (op) {
    case EM_RSUM: case EM_RPROD:
        if (!(odt == EM_FLOAT32 || odt == EM_FLOAT64 || odt == EM_FLOAT16 || odt == EM_BFLOAT16)) break;
        return op == EM_RSUM ? run<T, op_sum<double> >(P) : run<T, op_prod<double> >(P);
    case EM_RMAX: return run<T, op_ext<C, true> >(P);
    case EM_RMIN: return run<T, op_ext<C, false> >(P);
    case EM_RALL: return run<T, op_all>(P);
    case EM_RANY: return run<T, op_any>(P);
    default: break;
    }
    return kc_error("reduce: no CUDA kernel for op %d from %s into %s", (int)op, kc_dtype_name(idt),
                    kc_dtype_name(odt));
}

/* integer and bool inputs: sums and products in wrapping uint64, or in
 * double when a float result was asked for */
template <class T>
static int run_int(em_reduce_op op, const plan &P, em_dtype odt)
{
    bool fout = odt == EM_FLOAT32 || odt == EM_FLOAT64 || odt == EM_FLOAT16 || odt == EM_BFLOAT16;
    switch (op) {
    case EM_RSUM: return fout ? run<T, op_sum<double> >(P) : run<T, op_sum<uint64_t> >(P);
    case EM_RPROD: return fout ? run<T, op_prod<double> >(P) : run<T, op_prod<uint64_t> >(P);
    case EM_RMAX: return run<T, op_ext<int64_t, true> >(P);
    case EM_RMIN: return run<T, op_ext<int64_t, false> >(P);
    case EM_RALL: return run<T, op_all>(P);
    case EM_RANY: return run<T, op_any>(P);
    default: return kc_error("reduce: unknown op %d", (int)op);
    }
}

} /* namespace */

extern "C" int kc_reduce(em_reduce_op op, em_tensor *out, em_tensor *idx, const em_tensor *in, int nreduce)
{
    if (nreduce < 0 || nreduce > in->ndim || out->ndim != in->ndim - nreduce)
        return kc_error("reduce: %d reduced dims do not match an input of %d dims and an output of %d",
                        nreduce, in->ndim, out->ndim);
    if (idx && idx->dtype != EM_INT64)
        return kc_error("reduce: index output must be int64, got %s", kc_dtype_name(idx->dtype));
    plan P;
    P.dev = kc_device_of(in);
    P.stream = kc_stream(P.dev);
    if (!P.stream) return -1;

    rlayout &L = P.L;
    L.in = kc_ptr(in);
    int nk = in->ndim - nreduce;
    L.outer = 1;
    L.inner = 1;
    for (int d = 0; d < nk; d++) {
        L.ksz[d] = in->sizes[d];
        L.kst[d] = in->strides[d];
        L.outer *= in->sizes[d];
    }
    for (int d = 0; d < nreduce; d++) {
        L.rsz[d] = in->sizes[nk + d];
        L.rst[d] = in->strides[nk + d];
        L.inner *= in->sizes[nk + d];
    }
    if (L.outer == 0) return 0;
    if (L.inner == 0 && (op == EM_RMAX || op == EM_RMIN))
        return kc_error("%s: cannot reduce over an empty dimension", op == EM_RMAX ? "max" : "min");
    /* Without indices the order of the reduced elements is free: walking them
     * by decreasing stride makes e.g. a transposed tensor one contiguous run. */
    if (!idx) {
        for (int a = 1; a < nreduce; a++)
            for (int b = a; b > 0 && llabs(L.rst[b]) > llabs(L.rst[b - 1]); b--) {
                int64_t s = L.rsz[b]; L.rsz[b] = L.rsz[b - 1]; L.rsz[b - 1] = s;
                s = L.rst[b]; L.rst[b] = L.rst[b - 1]; L.rst[b - 1] = s;
            }
    }
    L.nk = emf_coalesce(L.ksz, L.kst, nk);
    L.nr = emf_coalesce(L.rsz, L.rst, nreduce);
    if (L.nr == 0) {            /* one element per output: a row of length 1 */
        L.nr = 1;
        L.rsz[0] = 1;
        L.rst[0] = 1;
    }

    rout &O = P.O;
    O.out = kc_ptr(out);
    O.idx = idx ? (int64_t *)kc_ptr(idx) : NULL;
    O.odt = (int)out->dtype;
    O.oes = (int)em_dtype_size(out->dtype);
    O.nd = out->ndim;
    O.ocontig = emf_is_contiguous(out);
    O.icontig = !idx || emf_is_contiguous(idx);
    for (int d = 0; d < out->ndim; d++) {
        O.sz[d] = out->sizes[d];
        O.ost[d] = out->strides[d];
        O.ist[d] = idx ? idx->strides[d] : 0;
    }

    em_dtype odt = out->dtype;
    switch (in->dtype) {
    case EM_FLOAT32: return run_float<float, float>(op, P, in->dtype, odt);
    case EM_FLOAT64: return run_float<double, double>(op, P, in->dtype, odt);
    case EM_FLOAT16: return run_float<__half, float>(op, P, in->dtype, odt);
    case EM_BFLOAT16: return run_float<__nv_bfloat16, float>(op, P, in->dtype, odt);
    case EM_INT64: return run_int<int64_t>(op, P, odt);
    case EM_INT32: return run_int<int32_t>(op, P, odt);
    case EM_INT16: return run_int<int16_t>(op, P, odt);
    case EM_INT8: return run_int<int8_t>(op, P, odt);
    case EM_UINT8: return run_int<uint8_t>(op, P, odt);
    case EM_BOOL: return run_int<kb8>(op, P, odt);
    default: return kc_error("reduce: no CUDA kernel for %s", kc_dtype_name(in->dtype));
    }
}
