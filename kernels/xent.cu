/*
 * xent.cu — fused cross-entropy with 1-based class-index targets on the GPU
 * (formulas in engine/backend.h); the CUDA twin of engine/cpu/xent.c.
 *
 * Forward: a group of G threads per row of x [M, C] (a power of two: up to 32
 * lanes when C <= 1024, several rows to a warp when C is small, a whole block
 * for longer rows) makes one pass over the row, keeping an online max and
 * sum of exp (the sum is rescaled when the max grows) and, with label
 * smoothing, sum_j w_j x_ij and sum_j w_j. The group's first thread then
 * forms lse, the loss and the row weight in double. float32 rows accumulate
 * in float, float64 rows in double.
 *
 * Backward: gx_ij = g_i (Q_i exp(x_ij - lse_i) - q_ij) needs no reduction
 * except sum_j w_j (label smoothing with class weights), which a one-block
 * kernel computes first; groups of threads then write whole rows.
 *
 * A target outside 1..C that is not ignore_index is recorded in the device's
 * error word (raised at the next synchronisation) and its row is treated as
 * ignored: no kernel reads x or w at a bad target.
 */
#include "kc.h"
#include "online_lse.cuh"

#include <math.h>
#include <stdint.h>
#include <type_traits>

namespace {

/* The target of row i, or 0 when the row is ignored; a bad target is
 * reported (when report is set) and ignored. */
__device__ __forceinline__ int64_t row_target(const int64_t *t, int64_t ts, int64_t i, int64_t C, int64_t ignore,
                                              kc_error_word *err, bool report)
{
    int64_t v = t[i * ts];
    if (v == ignore) return 0;
    if (v < 1 || v > C) {
        if (report) kc_report_bad_index(err, KC_ERR_CROSS_ENTROPY, v, i, C);
        return 0;
    }
    return v;
}

struct fwd {
    const char *x, *w;
    const int64_t *t;
    char *loss, *lse, *roww;
    int64_t xs0, xs1, ws, ts, ls, es, rs;
    int64_t M, C, ignore;
    double eps;
    kc_error_word *err;
};

struct bwd {
    char *gx;
    const char *g, *x, *lse, *w;
    const int64_t *t;
    const double *wsum;                 /* device sum of w (NULL: wsum_host) */
    double wsum_host;
    int64_t gxs0, gxs1, gs, xs0, xs1, es, ws, ts;
    int64_t M, C, ignore;
    double eps;
    kc_error_word *err;
};

/* ---- forward ----------------------------------------------------------------- */

/* Groups of G threads (a power of two up to the block size) take rows; the
 * loop runs block-uniformly so that every thread reaches the block-wide
 * steps of the reduction when G > 32. */
template <class T, class C>
__global__ void __launch_bounds__(KC_THREADS)
fwd_kernel(fwd P, int G)
{
    KC_SHARED(C, sh, [4][KC_THREADS / 32]);
    const int lane = threadIdx.x & (G - 1), gpb = blockDim.x / G;
    const bool smooth = P.eps > 0;
    for (int64_t base = (int64_t)blockIdx.x * gpb; base < P.M; base += (int64_t)gridDim.x * gpb) {
        int64_t i = base + threadIdx.x / G;
        bool active = i < P.M;
        C m = -(C)INFINITY, s = 0, sw = 0, wsum = 0;
        const T *x = (const T *)P.x + i * P.xs0;
        const T *w = (const T *)P.w;
        if (active) {
            for (int64_t j = lane; j < P.C; j += G) {
                C v = x[j * P.xs1];
                online_add(m, s, v);
                if (smooth) {
                    C wj = w ? (C)w[j * P.ws] : (C)1;
                    sw += wj * v;
                    wsum += wj;
                }
            }
        }
        for (int d = (G < 32 ? G : 32) / 2; d > 0; d >>= 1) {
            C m2 = __shfl_xor_sync(0xffffffffu, m, d), s2 = __shfl_xor_sync(0xffffffffu, s, d);
            online_merge(m, s, m2, s2);
            if (smooth) {
                sw += __shfl_xor_sync(0xffffffffu, sw, d);
                wsum += __shfl_xor_sync(0xffffffffu, wsum, d);
            }
        }
        if (G > 32) {           /* one row per block: fold the warps */
            int warp = threadIdx.x >> 5, nw = G >> 5;
            if ((threadIdx.x & 31) == 0) {
                sh[0][warp] = m; sh[1][warp] = s; sh[2][warp] = sw; sh[3][warp] = wsum;
            }
            __syncthreads();
            if (threadIdx.x == 0)
                for (int k = 1; k < nw; k++) {
                    online_merge(m, s, sh[0][k], sh[1][k]);
                    sw += sh[2][k];
                    wsum += sh[3][k];
                }
            __syncthreads();    /* sh is reused by the next row */
        }
        if (!active || lane != 0) continue;
        if (s == (C)0) s = (C)NAN;          /* every logit -inf: NaN, as on the CPU */
        double lse = (double)m + log((double)s);
        *(T *)(P.lse + i * P.es * (int64_t)sizeof(T)) = (T)lse;
        int64_t tt = row_target(P.t, P.ts, i, P.C, P.ignore, P.err, true);
        double loss = 0, wt = 0;
        if (tt) {
            wt = w ? (double)w[(tt - 1) * P.ws] : 1.0;
            loss = -(1 - P.eps) * wt * ((double)x[(tt - 1) * P.xs1] - lse);
            if (smooth)         /* sum_j w_j (x_ij - lse) */
                loss -= P.eps / (double)P.C * ((double)sw - lse * (w ? (double)wsum : (double)P.C));
        }
        *(T *)(P.loss + i * P.ls * (int64_t)sizeof(T)) = (T)loss;
        *(T *)(P.roww + i * P.rs * (int64_t)sizeof(T)) = (T)wt;
    }
}

/* ---- backward ------------------------------------------------------------------ */

/* sum_j w_j in double, by one block */
template <class T>
__global__ void __launch_bounds__(KC_THREADS)
wsum_kernel(const T *w, int64_t ws, int64_t C, double *out)
{
    KC_SHARED(double, sh, [KC_THREADS / 32]);
    double a = 0;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) a += (double)w[j * ws];
    for (int d = 16; d > 0; d >>= 1) a += __shfl_xor_sync(0xffffffffu, a, d);
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = a;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int k = 1; k < (int)(blockDim.x >> 5); k++) a += sh[k];
        *out = a;
    }
}

template <class T, class C>
__global__ void __launch_bounds__(KC_THREADS)
bwd_kernel(bwd P, int G)
{
    const int lane = threadIdx.x & (G - 1), gpb = blockDim.x / G;
    const T *w = (const T *)P.w;
    const double ec = P.eps / (double)P.C, wsum = P.wsum ? *P.wsum : P.wsum_host;
    for (int64_t i = (int64_t)blockIdx.x * gpb + threadIdx.x / G; i < P.M; i += (int64_t)gridDim.x * gpb) {
        int64_t tt = row_target(P.t, P.ts, i, P.C, P.ignore, P.err, lane == 0);
        double g = tt ? (double)((const T *)P.g)[i * P.gs] : 0.0;
        double wt = !tt ? 0.0 : w ? (double)w[(tt - 1) * P.ws] : 1.0;
        double Q = (1 - P.eps) * wt + ec * wsum;
        C gq = (C)(g * Q), ge = (C)(g * ec), gt = (C)(g * (1 - P.eps) * wt);
        C lse = (C)((const T *)P.lse)[i * P.es];
        const T *x = (const T *)P.x + i * P.xs0;
        T *o = (T *)P.gx + i * P.gxs0;
        for (int64_t j = lane; j < P.C; j += G) {
            C v = gq * kc_exp((C)x[j * P.xs1] - lse) - ge * (w ? (C)w[j * P.ws] : (C)1);
            if (j == tt - 1) v -= gt;
            o[j * P.gxs1] = (T)v;
        }
    }
}

/* ---- host side --------------------------------------------------------------- */

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* threads per row: up to a warp for rows of up to 1024, a block beyond */
static int group_size(int64_t C)
{
    if (C > 1024) return KC_THREADS;
    int G = 1;
    while (G < 32 && (int64_t)G * 4 < C) G <<= 1;
    return G;
}

static int blocks_for(int64_t M, int G, int dev)
{
    int64_t b = cdiv(M, KC_THREADS / G), cap = (int64_t)kc_sm_count(dev) * 8;
    if (b > cap) b = cap;
    return b < 1 ? 1 : (int)b;
}

template <class T>
static int run_fwd(const fwd &P, const em_tensor *x)
{
    typedef typename std::conditional<sizeof(T) == 8, double, float>::type C;
    int dev = kc_device_of(x);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    int G = group_size(P.C);
    KC_LAUNCH(blocks_for(P.M, G, dev), KC_THREADS, 0, s, fwd_kernel<T, C>)(P, G);
    return kc_launched("cross_entropy", dev);
}

template <class T>
static int run_bwd(bwd P, const em_tensor *x)
{
    typedef typename std::conditional<sizeof(T) == 8, double, float>::type C;
    int dev = kc_device_of(x);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    double *ws = NULL;
    if (P.w && P.eps > 0) {
        ws = (double *)kc_alloc(sizeof(double), dev);
        if (!ws) return -1;
        KC_LAUNCH(1, KC_THREADS, 0, s, wsum_kernel<T>)((const T *)P.w, P.ws, P.C, ws);
        P.wsum = ws;
    }
    int G = group_size(P.C);
    KC_LAUNCH(blocks_for(P.M, G, dev), KC_THREADS, 0, s, bwd_kernel<T, C>)(P, G);
    if (ws) kc_free(ws, sizeof(double), dev);
    return kc_launched("cross_entropy", dev);
}

/* the checks every entry makes; the dtypes and shapes are the engine's */
static int check(const em_tensor *x, const em_tensor *t, const em_tensor *w)
{
    if (x->ndim != 2 || t->ndim != 1 || t->sizes[0] != x->sizes[0] || t->dtype != EM_INT64)
        return kc_error("cross_entropy: expected logits [M, C] and int64 targets [M]");
    if (w && (w->ndim != 1 || w->sizes[0] != x->sizes[1] || w->dtype != x->dtype))
        return kc_error("cross_entropy: class weights must be [C] in the logits' dtype");
    if (x->sizes[1] == 0) return kc_error("cross_entropy: no classes (input has 0 columns)");
    if (x->dtype != EM_FLOAT32 && x->dtype != EM_FLOAT64)
        return kc_error("cross_entropy: no CUDA kernel for %s", kc_dtype_name(x->dtype));
    return 0;
}

/* The fields fwd and bwd share: the sizes, the error word, the logits x,
 * targets t and class weights w (NULL: none). 1 when there is no row. */
template <class Par>
static int common_fields(Par &P, const em_tensor *x, const em_tensor *t, const em_tensor *w, int64_t ignore_index,
                         double eps)
{
    P.M = x->sizes[0];
    P.C = x->sizes[1];
    if (P.M == 0) return 1;
    P.err = kc_error_word_of(kc_device_of(x));
    if (!P.err) return -1;
    P.x = kc_ptr(x);
    P.xs0 = x->strides[0];
    P.xs1 = x->strides[1];
    P.t = (const int64_t *)kc_ptr(t);
    P.ts = t->strides[0];
    P.w = w ? kc_ptr(w) : NULL;
    P.ws = w ? w->strides[0] : 0;
    P.ignore = ignore_index;
    P.eps = eps;
    return 0;
}

} /* namespace */

extern "C" int kc_cross_entropy(em_tensor *loss, em_tensor *lse, em_tensor *roww, const em_tensor *x,
                                const em_tensor *t, const em_tensor *w, int64_t ignore_index, double eps)
{
    if (check(x, t, w)) return -1;
    fwd P;
    int rc = common_fields(P, x, t, w, ignore_index, eps);
    if (rc) return rc < 0 ? -1 : 0;
    P.loss = kc_ptr(loss);
    P.ls = loss->strides[0];
    P.lse = kc_ptr(lse);
    P.es = lse->strides[0];
    P.roww = kc_ptr(roww);
    P.rs = roww->strides[0];
    return x->dtype == EM_FLOAT64 ? run_fwd<double>(P, x) : run_fwd<float>(P, x);
}

extern "C" int kc_cross_entropy_backward(em_tensor *gx, const em_tensor *g, const em_tensor *x, const em_tensor *lse,
                                         const em_tensor *t, const em_tensor *w, int64_t ignore_index, double eps)
{
    if (check(x, t, w)) return -1;
    if (gx->dtype != x->dtype || g->dtype != x->dtype || lse->dtype != x->dtype)
        return kc_error("cross_entropy_backward: gradients and log-sum-exp must be in the logits' dtype");
    bwd P;
    int rc = common_fields(P, x, t, w, ignore_index, eps);
    if (rc) return rc < 0 ? -1 : 0;
    P.gx = kc_ptr(gx);
    P.gxs0 = gx->strides[0];
    P.gxs1 = gx->strides[1];
    P.g = kc_ptr(g);
    P.gs = g->strides[0];
    P.lse = kc_ptr(lse);
    P.es = lse->strides[0];
    P.wsum = NULL;
    P.wsum_host = (double)P.C;
    return x->dtype == EM_FLOAT64 ? run_bwd<double>(P, x) : run_bwd<float>(P, x);
}
