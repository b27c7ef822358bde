/*
 * attention.cu — fused scaled-dot-product attention (backend.h's attention
 * family): a flash-attention-2-style forward and its backward, on the CUDA
 * cores (float32 / float64 arithmetic; no tensor-core path yet).
 *
 * Forward: one block per (problem b, tile of R queries). The Q tile stays in
 * shared memory; tiles of K keys of K and V go through shared memory in
 * turn. Each thread owns RA = R/16 query rows (ty + 16a) and, of the score
 * tile, the columns tx + 16c: neighbouring lanes read neighbouring rows of a
 * [rows][HD + 1] tile, whose odd row length spreads them over all banks. The
 * softmax is online (running max m and sum l per row, rescaled when the max
 * grows) in registers; the 16 lanes sharing a row combine with shuffles.
 * Causal problems stop at the last key tile a query tile can see. The
 * probabilities (after dropout) go to shared memory for the P V product.
 *
 * Backward (recomputes P = exp(s - lse)): a small kernel takes the row dots
 * delta_i = <dO_i, O_i>; then one kernel per query tile accumulates dQ over
 * the key tiles, and one per key tile accumulates dK and dV over the query
 * tiles (its score tile is transposed: rows are keys). Each gradient is
 * written by one block: deterministic, no atomics. The price is computing
 * the score and dP tiles twice.
 *
 * Inputs are contiguous [B, T, D]; tiles are zero-filled past T and past
 * D / Dv (to HD, the head-dim bucket 64 or 128), so padded rows and columns
 * add nothing and never read out of bounds. Offsets into the tensors are
 * int64. float16 / bfloat16 inputs are converted to float on load and
 * accumulate in float; float64 computes in double with smaller tiles.
 *
 * Dropout: keep_ij iff u < 1 - p, u the uniform of position
 * n = (b Tq + i) Tk + j drawn as random.c's mapping draws element n (Philox
 * counter offset + n/4, lane n % 4, key seed; u = (x >> (32 - m)) 2^-m with
 * m = 24 for float32 / float16 / bfloat16 inputs (the float32 uniform: the
 * compute dtype, as the mask's and lse's) and m = 32 for float64). The
 * comparison is done exactly in integers: u < t  iff  (x >> (32 - m)) <
 * ceil(t 2^m).
 */
#include "kc.h"
#include "../engine/philox.h"

#include <math.h>
#include <string.h>

#define ATTN_THREADS 256
#define ATTN_MAX_HD 128


namespace {

/* the element types' loads, stores, exp, log and max are kc.h's kc_ld, kc_st, ... */

/* Tile sizes per compute type: forward R x K, backward rows x columns of the
 * dQ kernel (queries x keys) and of the dK/dV kernel (keys x queries). double
 * halves them to stay inside shared memory. Rows and columns are multiples
 * of 16 (the 16 x 16 thread grid). */
template <class C> struct tiles {
    static const int FR = 64, FK = 64, BR = 64, BC = 32;
};
template <> struct tiles<double> {
    static const int FR = 32, FK = 32, BR = 32, BC = 16;
};

/* ---- arguments ---------------------------------------------------------------------------- */

/* additive mask, element (b, i, j) at p + moff(b) + i sq + j sk; b split by
 * the mask's leading dims in row-major order (size-1 dims broadcast) */
template <class C> struct mask_view {
    const C *p;
    int nb;
    int64_t bsz[EM_MAX_DIMS], bst[EM_MAX_DIMS];
    int64_t sq, sk;
};

template <class T, class C> struct attn_args {
    const T *q, *k, *v, *o, *go;
    T *out, *gq, *gk, *gv;
    C *lse;             /* forward: written */
    const C *lse_in;    /* backward: read */
    C *delta;           /* backward: <dO_i, O_i> */
    mask_view<C> mask;
    int64_t B, Tq, Tk;
    int D, Dv;
    C scale, inv_keep;
    bool causal, dropout;
    uint32_t k0, k1;    /* Philox key */
    uint64_t offset;
    const uint64_t *dev_state;  /* a CUDA graph's {seed, base}: key and offset + base come from it at run time */
    int shift;          /* 32 - m */
    uint64_t limit;     /* keep iff (x >> shift) < limit */
};

template <class C> __device__ __forceinline__ int64_t mask_base(const mask_view<C> &m, int64_t b)
{
    int64_t off = 0;
    for (int d = m.nb - 1; d >= 0; d--) {
        int64_t s = m.bsz[d], q = b / s;
        off += (b - q * s) * m.bst[d];
        b = q;
    }
    return off;
}

/* ---- dropout: random.c's Philox 4x32-10 --------------------------------------------------- */

/* lane `lane` of counter q (carry into the third word), engine/philox.h's rounds */
__device__ __forceinline__ uint32_t philox_lane(uint64_t q, bool carry, uint32_t k0, uint32_t k1, int lane)
{
    uint32_t c[4] = {(uint32_t)q, (uint32_t)(q >> 32), carry ? 1u : 0u, 0};
    em_philox_rounds(c, k0, k1);
    return lane == 0 ? c[0] : lane == 1 ? c[1] : lane == 2 ? c[2] : c[3];
}

template <class T, class C>
__device__ __forceinline__ bool keep_at(const attn_args<T, C> &a, int64_t b, int64_t i, int64_t j)
{
    uint64_t n = ((uint64_t)b * (uint64_t)a.Tq + (uint64_t)i) * (uint64_t)a.Tk + (uint64_t)j;
    uint32_t k0 = a.k0, k1 = a.k1;
    uint64_t offset = a.offset;
    if (a.dev_state) {          /* uniform across the grid: a cached broadcast load */
        uint64_t seed = __ldg((const unsigned long long *)a.dev_state);
        k0 = (uint32_t)seed;
        k1 = (uint32_t)(seed >> 32);
        offset += __ldg((const unsigned long long *)a.dev_state + 1);
    }
    uint64_t q = offset + (n >> 2);
    uint32_t x = philox_lane(q, q < offset, k0, k1, (int)(n & 3));
    return (uint64_t)(x >> a.shift) < a.limit;
}

/* ---- tiles in shared memory ----------------------------------------------------------------- */

/* rows [r0, r0 + ROWS) of a contiguous [T, n] matrix into s[ROWS][HD + 1],
 * zero past T and past n */
template <int ROWS, int HD, class T, class C>
__device__ __forceinline__ void load_tile(C *s, const T *g, int64_t r0, int64_t T_, int n)
{
    for (int idx = threadIdx.x; idx < ROWS * HD; idx += ATTN_THREADS) {
        int r = idx / HD, c = idx % HD;
        C v = (C)0;
        if (r0 + r < T_ && c < n) v = kc_ld(g[(r0 + r) * (int64_t)n + c]);
        s[r * (HD + 1) + c] = v;
    }
}

/* s[a][c] = sum_d A[ty + 16a][d] Bm[tx + 16c][d] over the HD (zero-padded)
 * columns of two [.][HD + 1] tiles */
template <int RA, int CB, int HD, class C>
__device__ __forceinline__ void dot_tile(const C *A, const C *Bm, C s[RA][CB], int ty, int tx)
{
#pragma unroll
    for (int a = 0; a < RA; a++)
#pragma unroll
        for (int c = 0; c < CB; c++) s[a][c] = (C)0;
    const C *ap = A + ty * (HD + 1), *bp = Bm + tx * (HD + 1);
#pragma unroll 8
    for (int d = 0; d < HD; d++) {
        C av[RA], bv[CB];
#pragma unroll
        for (int a = 0; a < RA; a++) av[a] = ap[16 * a * (HD + 1) + d];
#pragma unroll
        for (int c = 0; c < CB; c++) bv[c] = bp[16 * c * (HD + 1) + d];
#pragma unroll
        for (int a = 0; a < RA; a++)
#pragma unroll
            for (int c = 0; c < CB; c++) s[a][c] += av[a] * bv[c];
    }
}

/* acc[a][e] += sum_j P[ty + 16a][j] V[j][tx + 16e], P a [.][N + 1] tile and
 * V a [N][HD + 1] one */
template <int RA, int N, int HD, class C>
__device__ __forceinline__ void acc_tile(const C *P, const C *V, C acc[RA][HD / 16], int ty, int tx)
{
    const C *pp = P + ty * (N + 1), *vp = V + tx;
#pragma unroll 4
    for (int j = 0; j < N; j++) {
        C pv[RA], vv[HD / 16];
#pragma unroll
        for (int a = 0; a < RA; a++) pv[a] = pp[16 * a * (N + 1) + j];
#pragma unroll
        for (int e = 0; e < HD / 16; e++) vv[e] = vp[j * (HD + 1) + 16 * e];
#pragma unroll
        for (int a = 0; a < RA; a++)
#pragma unroll
            for (int e = 0; e < HD / 16; e++) acc[a][e] += pv[a] * vv[e];
    }
}

/* max / sum over the 16 lanes that share a row (lanes differing in bits 0-3) */
template <class C> __device__ __forceinline__ C row_max(C v)
{
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) v = kc_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
template <class C> __device__ __forceinline__ C row_sum(C v)
{
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* the score s_ij before the softmax: scale <q_i, k_j> + mask, -inf where
 * causal-masked or past the keys (i < Tq is the caller's) */
template <class T, class C>
__device__ __forceinline__ C score(const attn_args<T, C> &a, C dot, const C *mrow, int64_t i, int64_t j)
{
    if (j >= a.Tk || (a.causal && j > i)) return -(C)INFINITY;
    C v = dot * a.scale;
    if (mrow) v += mrow[j * a.mask.sk];
    return v;
}

/* ---- forward ------------------------------------------------------------------------------- */

template <class T, class C, int R, int K, int HD>
__global__ void __launch_bounds__(ATTN_THREADS) attn_fwd_kernel(attn_args<T, C> a)
{
    constexpr int RA = R / 16, CB = K / 16, E = HD / 16;
    KC_DYNAMIC_SHARED(unsigned char, attn_smem);
    C *Qs = (C *)attn_smem, *Ks = Qs + R * (HD + 1), *Vs = Ks + K * (HD + 1), *Ps = Vs + K * (HD + 1);
    const int64_t nqt = (a.Tq + R - 1) / R;
    const int64_t b = (int64_t)blockIdx.x / nqt;
    const int64_t i0 = (nqt - 1 - (int64_t)blockIdx.x % nqt) * R;   /* heavy causal tiles first */
    const int ty = threadIdx.x >> 4, tx = threadIdx.x & 15;

    load_tile<R, HD>(Qs, a.q + b * a.Tq * a.D, i0, a.Tq, a.D);
    const T *kb = a.k + b * a.Tk * a.D, *vb = a.v + b * a.Tk * a.Dv;
    const C *mrow[RA];
    int64_t mb = a.mask.p ? mask_base(a.mask, b) : 0;
#pragma unroll
    for (int r = 0; r < RA; r++) {
        int64_t i = i0 + ty + 16 * r;
        mrow[r] = a.mask.p && i < a.Tq ? a.mask.p + mb + i * a.mask.sq : NULL;
    }

    C m[RA], l[RA], acc[RA][E];
#pragma unroll
    for (int r = 0; r < RA; r++) {
        m[r] = -(C)INFINITY;
        l[r] = (C)0;
#pragma unroll
        for (int e = 0; e < E; e++) acc[r][e] = (C)0;
    }
    int64_t jend = a.Tk;
    if (a.causal && i0 + R < jend) jend = i0 + R;        /* keys j <= i <= i0 + R - 1 */
    for (int64_t j0 = 0; j0 < jend; j0 += K) {
        __syncthreads();            /* the previous tile's readers are done */
        load_tile<K, HD>(Ks, kb, j0, a.Tk, a.D);
        load_tile<K, HD>(Vs, vb, j0, a.Tk, a.Dv);
        __syncthreads();
        C s[RA][CB];
        dot_tile<RA, CB, HD>(Qs, Ks, s, ty, tx);
#pragma unroll
        for (int r = 0; r < RA; r++) {
            int64_t i = i0 + ty + 16 * r;
            C mx = -(C)INFINITY;
#pragma unroll
            for (int c = 0; c < CB; c++) {
                s[r][c] = score(a, s[r][c], mrow[r], i, j0 + tx + 16 * c);
                mx = kc_max(mx, s[r][c]);
            }
            C mnew = kc_max(m[r], row_max(mx));
            /* while every score so far is -inf, nothing has been added */
            C alpha = mnew == -(C)INFINITY ? (C)1 : kc_exp(m[r] - mnew);
            C sum = 0;
#pragma unroll
            for (int c = 0; c < CB; c++) {
                C p = mnew == -(C)INFINITY ? (C)0 : kc_exp(s[r][c] - mnew);
                sum += p;
                if (a.dropout) p = keep_at(a, b, i, j0 + tx + 16 * c) ? p * a.inv_keep : (C)0;
                Ps[(ty + 16 * r) * (K + 1) + tx + 16 * c] = p;
            }
            l[r] = l[r] * alpha + row_sum(sum);
            m[r] = mnew;
#pragma unroll
            for (int e = 0; e < E; e++) acc[r][e] *= alpha;
        }
        __syncthreads();
        acc_tile<RA, K, HD>(Ps, Vs, acc, ty, tx);
    }
#pragma unroll
    for (int r = 0; r < RA; r++) {
        int64_t i = i0 + ty + 16 * r;
        if (i >= a.Tq) continue;
        /* a row whose scores are all -inf: NaN outputs, lse -inf */
        C inv = l[r] == (C)0 ? (C)NAN : (C)1 / l[r];
        T *orow = a.out + (b * a.Tq + i) * a.Dv;
#pragma unroll
        for (int e = 0; e < E; e++) {
            int col = tx + 16 * e;
            if (col < a.Dv) kc_st(&orow[col], acc[r][e] * inv);
        }
        if (tx == 0) a.lse[b * a.Tq + i] = l[r] == (C)0 ? -(C)INFINITY : m[r] + kc_log(l[r]);
    }
}

/* ---- backward ------------------------------------------------------------------------------ */

/* delta_i = <dO_i, O_i>: a warp per row */
template <class T, class C> __global__ void __launch_bounds__(ATTN_THREADS) attn_delta_kernel(attn_args<T, C> a)
{
    const int lane = threadIdx.x & 31;
    const int64_t rows = a.B * a.Tq, wpb = ATTN_THREADS / 32;
    for (int64_t r = (int64_t)blockIdx.x * wpb + (threadIdx.x >> 5); r < rows; r += (int64_t)gridDim.x * wpb) {
        const T *o = a.o + r * a.Dv, *go = a.go + r * a.Dv;
        C s = 0;
        for (int c = lane; c < a.Dv; c += 32) s += kc_ld(o[c]) * kc_ld(go[c]);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
        if (lane == 0) a.delta[r] = s;
    }
}

/* P_ij (recomputed) and dS_ij from the score, dP = <dO_i, v_j> and the
 * row's lse and delta; pd gets the dropped-out probability */
template <class T, class C>
__device__ __forceinline__ C grad_score(const attn_args<T, C> &a, C sc, C dp, C lse, C delta, int64_t b, int64_t i,
                                        int64_t j, C *pd)
{
    C p = kc_exp(sc - lse);     /* NaN in a fully masked row (lse -inf), as its outputs */
    if (a.dropout) {
        bool keep = keep_at(a, b, i, j);
        dp = keep ? dp * a.inv_keep : (C)0;
        *pd = keep ? p * a.inv_keep : (C)0;
    } else {
        *pd = p;
    }
    return p * (dp - delta);
}

/* dQ: one block per (b, tile of R queries), over the key tiles */
template <class T, class C, int R, int K, int HD>
__global__ void __launch_bounds__(ATTN_THREADS) attn_dq_kernel(attn_args<T, C> a)
{
    constexpr int RA = R / 16, CB = K / 16, E = HD / 16;
    KC_DYNAMIC_SHARED(unsigned char, attn_smem);
    C *Qs = (C *)attn_smem, *dOs = Qs + R * (HD + 1), *Ks = dOs + R * (HD + 1), *Vs = Ks + K * (HD + 1);
    C *Ss = Vs + K * (HD + 1);
    const int64_t nqt = (a.Tq + R - 1) / R;
    const int64_t b = (int64_t)blockIdx.x / nqt;
    const int64_t i0 = (nqt - 1 - (int64_t)blockIdx.x % nqt) * R;
    const int ty = threadIdx.x >> 4, tx = threadIdx.x & 15;

    load_tile<R, HD>(Qs, a.q + b * a.Tq * a.D, i0, a.Tq, a.D);
    load_tile<R, HD>(dOs, a.go + b * a.Tq * a.Dv, i0, a.Tq, a.Dv);
    const T *kb = a.k + b * a.Tk * a.D, *vb = a.v + b * a.Tk * a.Dv;
    const C *mrow[RA];
    C lse[RA], dl[RA], acc[RA][E];
    int64_t mb = a.mask.p ? mask_base(a.mask, b) : 0;
#pragma unroll
    for (int r = 0; r < RA; r++) {
        int64_t i = i0 + ty + 16 * r;
        bool ok = i < a.Tq;
        mrow[r] = a.mask.p && ok ? a.mask.p + mb + i * a.mask.sq : NULL;
        lse[r] = ok ? a.lse_in[b * a.Tq + i] : (C)0;
        dl[r] = ok ? a.delta[b * a.Tq + i] : (C)0;
#pragma unroll
        for (int e = 0; e < E; e++) acc[r][e] = (C)0;
    }
    int64_t jend = a.Tk;
    if (a.causal && i0 + R < jend) jend = i0 + R;
    for (int64_t j0 = 0; j0 < jend; j0 += K) {
        __syncthreads();
        load_tile<K, HD>(Ks, kb, j0, a.Tk, a.D);
        load_tile<K, HD>(Vs, vb, j0, a.Tk, a.Dv);
        __syncthreads();
        C s[RA][CB], dp[RA][CB];
        dot_tile<RA, CB, HD>(Qs, Ks, s, ty, tx);
        dot_tile<RA, CB, HD>(dOs, Vs, dp, ty, tx);
#pragma unroll
        for (int r = 0; r < RA; r++) {
            int64_t i = i0 + ty + 16 * r;
#pragma unroll
            for (int c = 0; c < CB; c++) {
                int64_t j = j0 + tx + 16 * c;
                C ds = (C)0, pd;
                if (i < a.Tq && j < a.Tk)
                    ds = grad_score(a, score(a, s[r][c], mrow[r], i, j), dp[r][c], lse[r], dl[r], b, i, j, &pd);
                Ss[(ty + 16 * r) * (K + 1) + tx + 16 * c] = ds;
            }
        }
        __syncthreads();
        acc_tile<RA, K, HD>(Ss, Ks, acc, ty, tx);
    }
#pragma unroll
    for (int r = 0; r < RA; r++) {
        int64_t i = i0 + ty + 16 * r;
        if (i >= a.Tq) continue;
        T *row = a.gq + (b * a.Tq + i) * a.D;
#pragma unroll
        for (int e = 0; e < E; e++) {
            int col = tx + 16 * e;
            if (col < a.D) kc_st(&row[col], acc[r][e] * a.scale);
        }
    }
}

/* dK, dV: one block per (b, tile of R keys), over the query tiles; the
 * score tile is transposed (rows keys, columns queries) */
template <class T, class C, int R, int K, int HD>
__global__ void __launch_bounds__(ATTN_THREADS) attn_dkv_kernel(attn_args<T, C> a)
{
    constexpr int RA = R / 16, CB = K / 16, E = HD / 16;
    KC_DYNAMIC_SHARED(unsigned char, attn_smem);
    C *Ks = (C *)attn_smem, *Vs = Ks + R * (HD + 1), *Qs = Vs + R * (HD + 1), *dOs = Qs + K * (HD + 1);
    C *Pt = dOs + K * (HD + 1), *St = Pt + R * (K + 1), *lse_s = St + R * (K + 1), *dl_s = lse_s + K;
    const int64_t nkt = (a.Tk + R - 1) / R;
    const int64_t b = (int64_t)blockIdx.x / nkt;
    const int64_t j0 = ((int64_t)blockIdx.x % nkt) * R;
    const int ty = threadIdx.x >> 4, tx = threadIdx.x & 15;

    load_tile<R, HD>(Ks, a.k + b * a.Tk * a.D, j0, a.Tk, a.D);
    load_tile<R, HD>(Vs, a.v + b * a.Tk * a.Dv, j0, a.Tk, a.Dv);
    const T *qb = a.q + b * a.Tq * a.D, *gob = a.go + b * a.Tq * a.Dv;
    const C *mb = a.mask.p ? a.mask.p + mask_base(a.mask, b) : NULL;
    const bool want_k = a.gk != NULL;
    C ak[RA][E], av[RA][E];
#pragma unroll
    for (int r = 0; r < RA; r++)
#pragma unroll
        for (int e = 0; e < E; e++) ak[r][e] = av[r][e] = (C)0;
    /* causal: queries i >= j0 only */
    int64_t istart = a.causal ? (j0 / K) * K : 0;
    for (int64_t i0 = istart; i0 < a.Tq; i0 += K) {
        __syncthreads();
        load_tile<K, HD>(Qs, qb, i0, a.Tq, a.D);
        load_tile<K, HD>(dOs, gob, i0, a.Tq, a.Dv);
        for (int c = threadIdx.x; c < K; c += ATTN_THREADS) {
            bool ok = i0 + c < a.Tq;
            lse_s[c] = ok ? a.lse_in[b * a.Tq + i0 + c] : (C)0;
            dl_s[c] = ok ? a.delta[b * a.Tq + i0 + c] : (C)0;
        }
        __syncthreads();
        C s[RA][CB], dp[RA][CB];
        dot_tile<RA, CB, HD>(Ks, Qs, s, ty, tx);
        dot_tile<RA, CB, HD>(Vs, dOs, dp, ty, tx);
#pragma unroll
        for (int r = 0; r < RA; r++) {
            int64_t j = j0 + ty + 16 * r;
#pragma unroll
            for (int c = 0; c < CB; c++) {
                int64_t i = i0 + tx + 16 * c;
                C ds = (C)0, pd = (C)0;
                if (i < a.Tq && j < a.Tk) {
                    const C *mrow = mb ? mb + i * a.mask.sq : NULL;
                    ds = grad_score(a, score(a, s[r][c], mrow, i, j), dp[r][c], lse_s[tx + 16 * c],
                                    dl_s[tx + 16 * c], b, i, j, &pd);
                }
                Pt[(ty + 16 * r) * (K + 1) + tx + 16 * c] = pd;
                St[(ty + 16 * r) * (K + 1) + tx + 16 * c] = ds;
            }
        }
        __syncthreads();
        acc_tile<RA, K, HD>(Pt, dOs, av, ty, tx);
        if (want_k) acc_tile<RA, K, HD>(St, Qs, ak, ty, tx);
    }
#pragma unroll
    for (int r = 0; r < RA; r++) {
        int64_t j = j0 + ty + 16 * r;
        if (j >= a.Tk) continue;
        if (want_k) {
            T *row = a.gk + (b * a.Tk + j) * a.D;
#pragma unroll
            for (int e = 0; e < E; e++)
                if (tx + 16 * e < a.D) kc_st(&row[tx + 16 * e], ak[r][e] * a.scale);
        }
        if (a.gv) {
            T *row = a.gv + (b * a.Tk + j) * a.Dv;
#pragma unroll
            for (int e = 0; e < E; e++)
                if (tx + 16 * e < a.Dv) kc_st(&row[tx + 16 * e], av[r][e]);
        }
    }
}

/* ---- host side ------------------------------------------------------------------------------- */

/* raises the kernel's dynamic shared-memory limit to bytes, or says why not */
static int set_smem(const char *op, const void *fn, size_t bytes, int dev)
{
    int most = 0;
    cudaError_t e = cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e != cudaSuccess) return kc_cuda_error(op, e);
    if (bytes > (size_t)most)
        return kc_error("%s: needs %zu bytes of shared memory per block, the device allows %d", op, bytes, most);
    e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    return e == cudaSuccess ? 0 : kc_cuda_error(op, e);
}

static int check_blocks(const char *op, int64_t n)
{
    if (n > INT32_MAX) return kc_error("%s: %lld thread blocks (at most 2^31 - 1)", op, (long long)n);
    return 0;
}

template <class T, class C, int HD> static int launch_fwd(const attn_args<T, C> &a, int dev, cudaStream_t st)
{
    const int R = tiles<C>::FR, K = tiles<C>::FK;
    const char *op = "scaled_dot_product_attention";
    size_t smem = (size_t)((R + 2 * K) * (HD + 1) + R * (K + 1)) * sizeof(C);
    int64_t n = (a.Tq + R - 1) / R * a.B;
    if (check_blocks(op, n) || set_smem(op, (const void *)attn_fwd_kernel<T, C, R, K, HD>, smem, dev)) return -1;
    KC_LAUNCH((unsigned)n, ATTN_THREADS, smem, st, attn_fwd_kernel<T, C, R, K, HD>)(a);
    return 0;
}

template <class T, class C, int HD> static int launch_bwd(const attn_args<T, C> &a, int dev, cudaStream_t st)
{
    const int R = tiles<C>::BR, K = tiles<C>::BC;
    const char *op = "scaled_dot_product_attention backward";
    int64_t rows = a.B * a.Tq;
    KC_LAUNCH(kc_grid(rows * 32, dev), ATTN_THREADS, 0, st, attn_delta_kernel<T, C>)(a);
    if (a.gq) {
        /* rows queries, columns keys */
        size_t smem = (size_t)(2 * R * (HD + 1) + 2 * K * (HD + 1) + R * (K + 1)) * sizeof(C);
        int64_t n = (a.Tq + R - 1) / R * a.B;
        if (check_blocks(op, n) || set_smem(op, (const void *)attn_dq_kernel<T, C, R, K, HD>, smem, dev)) return -1;
        KC_LAUNCH((unsigned)n, ATTN_THREADS, smem, st, attn_dq_kernel<T, C, R, K, HD>)(a);
    }
    if ((a.gk || a.gv) && a.Tk > 0) {
        /* rows keys, columns queries */
        size_t smem = (size_t)(2 * R * (HD + 1) + 2 * K * (HD + 1) + 2 * R * (K + 1) + 2 * K) * sizeof(C);
        int64_t n = (a.Tk + R - 1) / R * a.B;
        if (check_blocks(op, n) || set_smem(op, (const void *)attn_dkv_kernel<T, C, R, K, HD>, smem, dev)) return -1;
        KC_LAUNCH((unsigned)n, ATTN_THREADS, smem, st, attn_dkv_kernel<T, C, R, K, HD>)(a);
    }
    return 0;
}

/* the problem's geometry, checked: q [.., Tq, D], k [.., Tk, D], v [.., Tk, Dv]
 * contiguous with B problems each */
typedef struct geom {
    int64_t B, Tq, Tk;
    int D, Dv;
} geom;

static int last2(const em_tensor *t, int64_t *rows, int64_t *cols, int64_t *batch)
{
    if (t->ndim < 2) return -1;
    *rows = t->sizes[t->ndim - 2];
    *cols = t->sizes[t->ndim - 1];
    int64_t n = 1;
    for (int d = 0; d < t->ndim - 2; d++) n *= t->sizes[d];
    *batch = n;
    return 0;
}

static int check_geom(const char *op, const em_tensor *q, const em_tensor *k, const em_tensor *v, geom *g)
{
    int64_t Tq, D, Bq, Tk, Dk, Bk, Tv, Dv, Bv;
    if (last2(q, &Tq, &D, &Bq) || last2(k, &Tk, &Dk, &Bk) || last2(v, &Tv, &Dv, &Bv))
        return kc_error("%s: q, k and v need at least 2 dims", op);
    if (Dk != D || Tv != Tk || Bk != Bq || Bv != Bq)
        return kc_error("%s: q [%lld, %lld, %lld], k [%lld, %lld, %lld], v [%lld, %lld, %lld] do not fit "
                        "(expected [B, Tq, D], [B, Tk, D], [B, Tk, Dv])", op, (long long)Bq, (long long)Tq,
                        (long long)D, (long long)Bk, (long long)Tk, (long long)Dk, (long long)Bv, (long long)Tv,
                        (long long)Dv);
    if (q->dtype != k->dtype || q->dtype != v->dtype)
        return kc_error("%s: q, k and v must share a dtype (%s, %s, %s)", op, kc_dtype_name(q->dtype),
                        kc_dtype_name(k->dtype), kc_dtype_name(v->dtype));
    if (!emf_is_contiguous(q) || !emf_is_contiguous(k) || !emf_is_contiguous(v))
        return kc_error("%s: q, k and v must be contiguous", op);
    if (D > ATTN_MAX_HD || Dv > ATTN_MAX_HD)
        return kc_error("%s: head dims D = %lld, Dv = %lld: the CUDA kernels take at most %d", op, (long long)D,
                        (long long)Dv, ATTN_MAX_HD);
    g->B = Bq;
    g->Tq = Tq;
    g->Tk = Tk;
    g->D = (int)D;
    g->Dv = (int)Dv;
    return 0;
}

static em_dtype compute_dtype(em_dtype d) { return d == EM_FLOAT64 ? EM_FLOAT64 : EM_FLOAT32; }

/* a result of the given shape and dtype, contiguous (out, lse, gradients) */
static int check_out(const char *op, const char *what, const em_tensor *t, em_dtype dt, int64_t numel)
{
    if (!t) return 0;
    if (t->dtype != dt || !emf_is_contiguous(t) || emf_numel(t) != numel)
        return kc_error("%s: %s must be a contiguous %s tensor of %lld elements (got %s, %lld)", op, what,
                        kc_dtype_name(dt), (long long)numel, kc_dtype_name(t->dtype), (long long)emf_numel(t));
    return 0;
}

/* The mask's view of the B problems. Its leading dims broadcast against
 * q's batch dims (aligned on the right, size 1 broadcasting); failing that,
 * when they hold B problems in all (an expanded, flattened view), b is split
 * by the mask's own sizes. */
template <class C>
static int set_mask(const char *op, mask_view<C> *m, const em_tensor *mask, const em_tensor *q, const geom &g)
{
    int nd = mask->ndim, mnb = nd > 2 ? nd - 2 : 0, qnb = q->ndim - 2;
    int64_t mq = nd >= 2 ? mask->sizes[nd - 2] : 1, mk = nd >= 1 ? mask->sizes[nd - 1] : 1, mbat = 1;
    for (int d = 0; d < mnb; d++) mbat *= mask->sizes[d];
    bool aligned = mnb <= qnb;
    for (int d = 0; d < mnb && aligned; d++) {
        int64_t ms = mask->sizes[d], qs = q->sizes[qnb - mnb + d];
        aligned = ms == qs || ms == 1;
    }
    if ((mq != g.Tq && mq != 1) || (mk != g.Tk && mk != 1) || (!aligned && mbat != g.B))
        return kc_error("%s: a mask of %lld x [%lld, %lld] does not fit %lld problems of [%lld, %lld]", op,
                        (long long)mbat, (long long)mq, (long long)mk, (long long)g.B, (long long)g.Tq,
                        (long long)g.Tk);
    m->sq = mq == 1 ? 0 : mask->strides[nd - 2];
    m->sk = mk == 1 ? 0 : mask->strides[nd - 1];
    if (aligned) {
        m->nb = qnb;
        for (int d = 0; d < qnb; d++) {
            int md = d - (qnb - mnb);
            m->bsz[d] = q->sizes[d];
            m->bst[d] = md < 0 || mask->sizes[md] == 1 ? 0 : mask->strides[md];
        }
    } else {
        m->nb = mnb;
        for (int d = 0; d < mnb; d++) {
            m->bsz[d] = mask->sizes[d];
            m->bst[d] = mask->sizes[d] == 1 ? 0 : mask->strides[d];
        }
    }
    return 0;
}

template <class T, class C>
static int fill_args(const char *op, attn_args<T, C> *a, const geom &g, const em_tensor *q, const em_tensor *k,
                     const em_tensor *v, const em_tensor *mask, const em_attn_params *p)
{
    memset(a, 0, sizeof *a);
    a->q = (const T *)kc_ptr(q);
    a->k = (const T *)kc_ptr(k);
    a->v = (const T *)kc_ptr(v);
    a->B = g.B;
    a->Tq = g.Tq;
    a->Tk = g.Tk;
    a->D = g.D;
    a->Dv = g.Dv;
    /* ember.h's rule, in case a caller passes it unresolved */
    a->scale = (C)(p->scale > 0 ? p->scale : (g.D > 0 ? 1.0 / sqrt((double)g.D) : 1.0));
    a->causal = p->causal;
    if (mask) {
        em_dtype md = compute_dtype(q->dtype);
        if (mask->dtype != md)
            return kc_error("%s: the mask must be %s for %s inputs, got %s", op, kc_dtype_name(md),
                            kc_dtype_name(q->dtype), kc_dtype_name(mask->dtype));
        if (set_mask(op, &a->mask, mask, q, g)) return -1;
        a->mask.p = (const C *)kc_ptr(mask);
    }
    double dp = p->dropout_p;
    if (!(dp >= 0 && dp <= 1)) return kc_error("%s: dropout_p must be in [0, 1], got %g", op, dp);
    if (dp > 0) {
        int mbits = q->dtype == EM_FLOAT64 ? 32 : 24;
        a->dropout = true;
        a->k0 = (uint32_t)p->seed;
        a->k1 = (uint32_t)(p->seed >> 32);
        a->offset = p->offset;
        a->dev_state = p->dev_state;
        a->shift = 32 - mbits;
        a->limit = (uint64_t)ceil((1.0 - dp) * ldexp(1.0, mbits));
        a->inv_keep = (C)(1.0 / (1.0 - dp));   /* inf at p = 1, never used: nothing is kept */
    }
    return 0;
}

template <class T, class C>
static int run_fwd(em_tensor *out, em_tensor *lse, const em_tensor *q, const em_tensor *k, const em_tensor *v,
                   const em_tensor *mask, const em_attn_params *p, const geom &g, int dev, cudaStream_t st)
{
    attn_args<T, C> a;
    if (fill_args("scaled_dot_product_attention", &a, g, q, k, v, mask, p)) return -1;
    a.out = (T *)kc_ptr(out);
    a.lse = (C *)kc_ptr(lse);
    if (g.D <= 64 && g.Dv <= 64) return launch_fwd<T, C, 64>(a, dev, st);
    return launch_fwd<T, C, 128>(a, dev, st);
}

template <class T, class C>
static int run_bwd(em_tensor *gq, em_tensor *gk, em_tensor *gv, const em_tensor *gout, const em_tensor *q,
                   const em_tensor *k, const em_tensor *v, const em_tensor *out, const em_tensor *lse,
                   const em_tensor *mask, const em_attn_params *p, const geom &g, int dev, cudaStream_t st)
{
    attn_args<T, C> a;
    if (fill_args("scaled_dot_product_attention backward", &a, g, q, k, v, mask, p)) return -1;
    a.o = (const T *)kc_ptr(out);
    a.go = (const T *)kc_ptr(gout);
    a.lse_in = (const C *)kc_ptr(lse);
    a.gq = gq ? (T *)kc_ptr(gq) : NULL;
    a.gk = gk ? (T *)kc_ptr(gk) : NULL;
    a.gv = gv ? (T *)kc_ptr(gv) : NULL;
    size_t bytes = (size_t)(g.B * g.Tq) * sizeof(C);
    a.delta = (C *)kc_alloc(bytes > 0 ? bytes : sizeof(C), dev);
    if (!a.delta) return -1;
    int rc = g.D <= 64 && g.Dv <= 64 ? launch_bwd<T, C, 64>(a, dev, st) : launch_bwd<T, C, 128>(a, dev, st);
    kc_free(a.delta, bytes > 0 ? bytes : sizeof(C), dev);
    return rc;
}

} // namespace

int kc_attention(em_tensor *out, em_tensor *lse, const em_tensor *q, const em_tensor *k, const em_tensor *v,
                 const em_tensor *mask, const em_attn_params *p)
{
    const char *op = "scaled_dot_product_attention";
    geom g;
    if (check_geom(op, q, k, v, &g)) return -1;
    if (check_out(op, "out", out, q->dtype, g.B * g.Tq * g.Dv) ||
        check_out(op, "lse", lse, compute_dtype(q->dtype), g.B * g.Tq))
        return -1;
    int dev = kc_device_of(q);
    cudaStream_t st = kc_stream(dev);
    if (!st) return -1;
    if (g.B == 0 || g.Tq == 0) return 0;
    int rc;
    switch (q->dtype) {
    case EM_FLOAT32: rc = run_fwd<float, float>(out, lse, q, k, v, mask, p, g, dev, st); break;
    case EM_FLOAT64: rc = run_fwd<double, double>(out, lse, q, k, v, mask, p, g, dev, st); break;
    case EM_FLOAT16: rc = run_fwd<__half, float>(out, lse, q, k, v, mask, p, g, dev, st); break;
    case EM_BFLOAT16: rc = run_fwd<__nv_bfloat16, float>(out, lse, q, k, v, mask, p, g, dev, st); break;
    default: return kc_error("%s: no CUDA kernel for %s", op, kc_dtype_name(q->dtype));
    }
    if (rc) return -1;
    return kc_launched(op, dev);
}

int kc_attention_backward(em_tensor *gq, em_tensor *gk, em_tensor *gv, const em_tensor *gout, const em_tensor *q,
                          const em_tensor *k, const em_tensor *v, const em_tensor *out, const em_tensor *lse,
                          const em_tensor *mask, const em_attn_params *p)
{
    const char *op = "scaled_dot_product_attention backward";
    geom g;
    if (check_geom(op, q, k, v, &g)) return -1;
    int64_t nq = g.B * g.Tq;
    if (check_out(op, "gout", gout, q->dtype, nq * g.Dv) || check_out(op, "out", out, q->dtype, nq * g.Dv) ||
        check_out(op, "lse", lse, compute_dtype(q->dtype), nq) ||
        check_out(op, "gq", gq, q->dtype, nq * g.D) || check_out(op, "gk", gk, q->dtype, g.B * g.Tk * g.D) ||
        check_out(op, "gv", gv, q->dtype, g.B * g.Tk * g.Dv))
        return -1;
    if (!gout || !out || !lse) return kc_error("%s: gout, out and lse are required", op);
    int dev = kc_device_of(q);
    cudaStream_t st = kc_stream(dev);
    if (!st) return -1;
    if (g.B == 0 || (!gq && !gk && !gv)) return 0;
    if (g.Tq == 0) {            /* no queries: nothing flows to the keys and values */
        if ((gk && kc_fill(gk, 0)) || (gv && kc_fill(gv, 0))) return -1;
        return kc_launched(op, dev);
    }
    int rc;
    switch (q->dtype) {
    case EM_FLOAT32: rc = run_bwd<float, float>(gq, gk, gv, gout, q, k, v, out, lse, mask, p, g, dev, st); break;
    case EM_FLOAT64: rc = run_bwd<double, double>(gq, gk, gv, gout, q, k, v, out, lse, mask, p, g, dev, st); break;
    case EM_FLOAT16: rc = run_bwd<__half, float>(gq, gk, gv, gout, q, k, v, out, lse, mask, p, g, dev, st); break;
    case EM_BFLOAT16:
        rc = run_bwd<__nv_bfloat16, float>(gq, gk, gv, gout, q, k, v, out, lse, mask, p, g, dev, st);
        break;
    default: return kc_error("%s: no CUDA kernel for %s", op, kc_dtype_name(q->dtype));
    }
    if (rc) return -1;
    return kc_launched(op, dev);
}
