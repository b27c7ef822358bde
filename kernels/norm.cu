/* norm.cu — the normalisation family (backend.h em_norm_op): batch norm
 * (one set of statistics per channel, over N and S) and group norm (one set
 * per (n, g); layer norm is G = 1, S = 1, instance norm G = C), forward with
 * the mean and biased variance, and the backward from mean and rstd.
 *
 * Own kernels rather than cuDNN's batch norm, whose saved statistics and
 * variance conventions differ from the contract and which has no group norm.
 * float32 accumulates in float and float64 in double, as PyTorch's kernels.
 *
 * Statistics are Welford states (count, mean, M2) merged with Chan's formula,
 * so no variance is lost to cancellation. A set of statistics is reduced by
 *  - a block per set, or per (set, split) with the splits' states merged by a
 *    second kernel in a fixed order when there are too few sets to fill the
 *    GPU (the reductions are deterministic: no atomics);
 *  - for per-channel sums over [N, C, S] with S < 32, where a set's elements
 *    are strided, a column kernel instead: the data as an [N, C S] matrix,
 *    32 consecutive columns per block so loads stay coalesced.
 * Group sets are contiguous ((C/G) S elements), so with one block per set the
 * forward and backward are single fused kernels (statistics, then the
 * elementwise pass over data the block has just read): that is the layer
 * norm path, rows of 64 to 4096 elements.
 *
 * float16 and bfloat16 inputs run the float32 kernels on float32 working
 * copies (the statistics the engine asks for are float32 already), and the
 * outputs are rounded to the storage type once: float32 accumulation, at the
 * cost of a conversion pass over each operand. */
#include "kc.h"

#include <math.h>

#define FULL_MASK 0xffffffffu
#define MAX_SPLITS 1024

/* ---- reduction states ---------------------------------------------------------- */

template <typename T> struct wf_state {
    T mean, m2;
    long long n;
};

template <typename T> struct sum_state {
    T a, b;
};

template <typename T> static __device__ inline void welford_add(wf_state<T> &s, T v)
{
    s.n++;
    T d = v - s.mean;
    s.mean += d / (T)s.n;
    s.m2 += d * (v - s.mean);
}

template <typename T> static __device__ inline void merge(wf_state<T> &x, const wf_state<T> &y)
{
    if (y.n == 0) return;
    if (x.n == 0) { x = y; return; }
    long long n = x.n + y.n;
    T d = y.mean - x.mean, ratio = (T)y.n / (T)n;
    x.mean += d * ratio;
    x.m2 += y.m2 + d * d * (T)x.n * ratio;
    x.n = n;
}

template <typename T> static __device__ inline void merge(sum_state<T> &x, const sum_state<T> &y)
{
    x.a += y.a;
    x.b += y.b;
}

template <typename T> static __device__ inline wf_state<T> shfl_down(const wf_state<T> &v, int off)
{
    wf_state<T> r;
    r.mean = __shfl_down_sync(FULL_MASK, v.mean, off);
    r.m2 = __shfl_down_sync(FULL_MASK, v.m2, off);
    r.n = __shfl_down_sync(FULL_MASK, v.n, off);
    return r;
}

template <typename T> static __device__ inline sum_state<T> shfl_down(const sum_state<T> &v, int off)
{
    sum_state<T> r;
    r.a = __shfl_down_sync(FULL_MASK, v.a, off);
    r.b = __shfl_down_sync(FULL_MASK, v.b, off);
    return r;
}

/* The merged state of the whole block, in every thread. blockDim.x is a
 * multiple of 32 (at most 1024) and every thread calls it. */
template <typename S> __device__ S block_reduce(S v)
{
    KC_SHARED(unsigned char, buf, [32 * sizeof(S)]);
    S *sh = (S *)buf;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (int off = 16; off > 0; off >>= 1) merge(v, shfl_down(v, off));
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? sh[lane] : S{};
        for (int off = 16; off > 0; off >>= 1) merge(v, shfl_down(v, off));
        if (lane == 0) sh[0] = v;
    }
    __syncthreads();
    S r = sh[0];
    __syncthreads();            /* the buffer may be used again by the caller */
    return r;
}

template <typename T> static __device__ inline T inv_sqrt(T v) { return (T)1 / sqrt(v); }

/* ---- geometry ------------------------------------------------------------------- */

typedef struct norm_geom {
    int64_t N, C, S, G, Cg, M;  /* M = Cg * S: one group set */
    bool batch;
} norm_geom;

/* i / S and i % S along a loop that steps i by a constant, with one division
 * at the start (64-bit divisions are slow on the GPU). */
struct walker {
    int64_t q, r, S, dq, dr;
    __device__ walker(int64_t i, int64_t step, int64_t s) : q(i / s), r(i % s), S(s), dq(step / s), dr(step % s) {}
    __device__ void next()
    {
        q += dq;
        r += dr;
        if (r >= S) { r -= S; q++; }
    }
};

/* ---- element operations of the reductions ------------------------------------------ */

/* forward statistics: Welford over x */
template <typename T> struct stats_op {
    typedef wf_state<T> state;
    const T *x;
    T *mean, *var;
    __device__ void add(state &s, int64_t e, int64_t, int64_t) const { welford_add(s, x[e]); }
    __device__ void finish(int64_t k, const state &s) const
    {
        if (s.n == 0) { mean[k] = var[k] = (T)NAN; return; }
        mean[k] = s.mean;
        var[k] = s.m2 / (T)s.n;
    }
};

/* backward sums a = gy w', b = gy w' xhat, with w' = w[c] when use_w (else
 * 1) and xhat from the statistics of the element's set: per channel for
 * batch norm, per (n, g) for group norm */
template <typename T> struct grad_op {
    typedef sum_state<T> state;
    const T *x, *gy, *mean, *rstd, *w;
    int64_t G, Cg;
    bool batch_stats, use_w;
    T *a_out, *b_out;
    __device__ void add(state &s, int64_t e, int64_t n, int64_t c) const
    {
        int64_t k = batch_stats ? c : n * G + c / Cg;
        T xh = (x[e] - mean[k]) * rstd[k];
        T g = gy[e];
        if (use_w && w) g *= w[c];
        s.a += g;
        s.b += g * xh;
    }
    __device__ void finish(int64_t k, const state &s) const
    {
        a_out[k] = s.a;
        b_out[k] = s.b;
    }
};

/* ---- reduction kernels ------------------------------------------------------------- */

/* Block (set k, split) reduces elements [split*chunk, +chunk) of set k:
 * channel sets (channel_sets: set k is channel k, elements (n, k, s)) or
 * group sets (set k = (n, g), the contiguous M elements at k M). With one
 * split it finishes the set itself; else it leaves its state in partial. */
template <typename Op>
__global__ void set_reduce_kernel(norm_geom g, bool channel_sets, int64_t L, int64_t chunk, Op op,
                                  typename Op::state *partial)
{
    int64_t k = blockIdx.x, split = blockIdx.y;
    int64_t lo = split * chunk, hi = lo + chunk < L ? lo + chunk : L;
    typename Op::state s = typename Op::state{};
    int64_t step = blockDim.x, i = lo + threadIdx.x;
    if (i < hi) {
        walker wk(i, step, g.S);
        int64_t gn = k / (g.G > 0 ? g.G : 1), gc = (g.G > 0 ? k % g.G : 0) * g.Cg;
        for (; i < hi; i += step, wk.next()) {
            if (channel_sets) op.add(s, (wk.q * g.C + k) * g.S + wk.r, wk.q, k);
            else op.add(s, k * g.M + i, gn, gc + wk.q);
        }
    }
    s = block_reduce(s);
    if (threadIdx.x == 0) {
        if (partial) partial[k * gridDim.y + split] = s;
        else op.finish(k, s);
    }
}

/* Per-channel reduction of [N, C, S] seen as an [N, C S] matrix: block
 * (32, 8) covers 32 columns and rows [split*rows, +rows), its 8 thread rows
 * taking every 8th row. partial[split][column]. */
template <typename Op>
__global__ void column_reduce_kernel(norm_geom g, int64_t rows, Op op, typename Op::state *partial)
{
    KC_SHARED(typename Op::state, sh, [8][32]);
    int64_t cols = g.C * g.S, j = (int64_t)blockIdx.x * 32 + threadIdx.x;
    int64_t lo = (int64_t)blockIdx.y * rows, hi = lo + rows < g.N ? lo + rows : g.N;
    typename Op::state s = typename Op::state{};
    if (j < cols) {
        int64_t c = j / g.S;
        for (int64_t r = lo + threadIdx.y; r < hi; r += 8) op.add(s, r * cols + j, r, c);
    }
    sh[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && j < cols) {
        for (int t = 1; t < 8; t++) merge(s, sh[t][threadIdx.x]);
        partial[(int64_t)blockIdx.y * cols + j] = s;
    }
}

/* Merges, per set, the states partial[k * per + j*stride + m] for j < outer,
 * m < inner (in that order) and finishes the set. */
template <typename Op>
__global__ void finish_kernel(int64_t nsets, int64_t per, int64_t outer, int64_t stride, int64_t inner, Op op,
                              const typename Op::state *partial)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nsets; k += step) {
        typename Op::state s = typename Op::state{};
        for (int64_t j = 0; j < outer; j++)
            for (int64_t m = 0; m < inner; m++) merge(s, partial[k * per + j * stride + m]);
        op.finish(k, s);
    }
}

/* ---- elementwise kernels ----------------------------------------------------------- */

/* I is uint32_t when every index fits (32-bit division is several times
 * cheaper than 64-bit on the GPU), else int64_t. */
template <typename T, typename I>
__global__ void normalize_kernel(norm_geom g, const T *x, const T *mean, const T *var, const T *w, const T *b, T *y,
                                 T eps)
{
    I total = (I)(g.N * g.C * g.S), step = (I)gridDim.x * blockDim.x, S = (I)g.S, C = (I)g.C, M = (I)g.M;
    for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        I c = (e / S) % C, k = g.batch ? c : e / M;
        T scale = inv_sqrt(var[k] + eps);
        if (w) scale *= w[c];
        y[e] = (x[e] - mean[k]) * scale + (b ? b[c] : (T)0);
    }
}

/* gx from the per-set sums a, b (grad_op): batch norm's are sums of gy and
 * gy xhat (w is constant over a set), group norm's already carry w */
template <typename T, typename I>
__global__ void grad_input_kernel(norm_geom g, const T *x, const T *gy, const T *mean, const T *rstd, const T *w,
                                  const T *a, const T *b, T *gx)
{
    I total = (I)(g.N * g.C * g.S), step = (I)gridDim.x * blockDim.x, S = (I)g.S, C = (I)g.C, M = (I)g.M;
    T inv = (T)1 / (T)(g.batch ? g.N * g.S : g.M);
    for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        I c = (e / S) % C, k = g.batch ? c : e / M;
        T r = rstd[k], xh = (x[e] - mean[k]) * r, wc = w ? w[c] : (T)1;
        if (g.batch) gx[e] = r * wc * (gy[e] - a[k] * inv - xh * b[k] * inv);
        else gx[e] = r * (gy[e] * wc - a[k] * inv - xh * b[k] * inv);
    }
}

/* ---- fused group kernels: one block per (n, g) set ------------------------------------ */

template <typename T>
__global__ void group_forward_kernel(norm_geom g, const T *x, const T *w, const T *b, T *y, T *mean, T *var, T eps)
{
    int64_t k = blockIdx.x, step = blockDim.x;
    const T *src = x + k * g.M;
    wf_state<T> s = wf_state<T>{};
    for (int64_t i = threadIdx.x; i < g.M; i += step) welford_add(s, src[i]);
    s = block_reduce(s);
    T mu = s.mean, v = s.n ? s.m2 / (T)s.n : (T)NAN;
    if (threadIdx.x == 0) {
        mean[k] = s.n ? mu : (T)NAN;
        var[k] = v;
    }
    T r = inv_sqrt(v + eps);
    T *dst = y + k * g.M;
    int64_t c0 = (k % g.G) * g.Cg;
    if (!w && !b) {
        for (int64_t i = threadIdx.x; i < g.M; i += step) dst[i] = (src[i] - mu) * r;
        return;
    }
    if ((int64_t)threadIdx.x >= g.M) return;
    walker wk(threadIdx.x, step, g.S);
    for (int64_t i = threadIdx.x; i < g.M; i += step, wk.next()) {
        int64_t c = c0 + wk.q;
        dst[i] = (src[i] - mu) * r * (w ? w[c] : (T)1) + (b ? b[c] : (T)0);
    }
}

template <typename T>
__global__ void group_backward_kernel(norm_geom g, const T *x, const T *gy, const T *mean, const T *rstd, const T *w,
                                      T *gx)
{
    int64_t k = blockIdx.x, step = blockDim.x;
    const T *xs = x + k * g.M, *gs = gy + k * g.M;
    T mu = mean[k], r = rstd[k];
    int64_t c0 = (k % g.G) * g.Cg;
    sum_state<T> s = sum_state<T>{};
    if ((int64_t)threadIdx.x < g.M) {
        walker wk(threadIdx.x, step, g.S);
        for (int64_t i = threadIdx.x; i < g.M; i += step, wk.next()) {
            T gv = gs[i] * (w ? w[c0 + wk.q] : (T)1);
            s.a += gv;
            s.b += gv * (xs[i] - mu) * r;
        }
    }
    s = block_reduce(s);
    T inv = (T)1 / (T)g.M, ma = s.a * inv, mb = s.b * inv;
    T *dst = gx + k * g.M;
    if ((int64_t)threadIdx.x >= g.M) return;
    walker wk(threadIdx.x, step, g.S);
    for (int64_t i = threadIdx.x; i < g.M; i += step, wk.next()) {
        T gv = gs[i] * (w ? w[c0 + wk.q] : (T)1);
        dst[i] = r * (gv - ma - (xs[i] - mu) * r * mb);
    }
}

/* ---- host side -------------------------------------------------------------------- */

static int block_for(int64_t n)
{
    int t = 32;
    while (t < 512 && (int64_t)t * 4 < n) t *= 2;
    return t;
}

/* splits of a set of L elements so that nsets * splits blocks fill the GPU */
static int64_t splits_for(int64_t nsets, int64_t L, int threads, int dev)
{
    int64_t target = (int64_t)kc_sm_count(dev) * 4;
    int64_t want = (target + nsets - 1) / nsets;
    int64_t most = (L + (int64_t)threads * 8 - 1) / ((int64_t)threads * 8);
    int64_t s = want < most ? want : most;
    if (s > MAX_SPLITS) s = MAX_SPLITS;
    return s < 1 ? 1 : s;
}

/* Reduces per channel (batch norm's sets, and group norm's gw, gb) with op. */
template <typename Op>
static int channel_reduce(const norm_geom &g, const Op &op, int dev, cudaStream_t st)
{
    typedef typename Op::state S;
    if (g.S >= 32) {
        int64_t L = g.N * g.S;
        int threads = block_for(L);
        int64_t splits = splits_for(g.C, L, threads, dev);
        int64_t chunk = (L + splits - 1) / splits;
        S *part = NULL;
        if (splits > 1 && !(part = (S *)kc_alloc((size_t)(g.C * splits) * sizeof(S), dev))) return -1;
        KC_LAUNCH(dim3((unsigned)g.C, (unsigned)splits), threads, 0, st, set_reduce_kernel<Op>)(g, true, L, chunk, op, part);
        if (part) {
            KC_LAUNCH(kc_grid(g.C, dev), KC_THREADS, 0, st, finish_kernel<Op>)(g.C, splits, splits, 1, 1, op, part);
            kc_free(part, (size_t)(g.C * splits) * sizeof(S), dev);
        }
        return 0;
    }
    int64_t cols = g.C * g.S, colblocks = (cols + 31) / 32;
    int64_t target = (int64_t)kc_sm_count(dev) * 4;
    int64_t want = (target + colblocks - 1) / colblocks, most = (g.N + 63) / 64;
    int64_t splits = want < most ? want : most;
    if (splits > MAX_SPLITS) splits = MAX_SPLITS;
    if (splits < 1) splits = 1;
    int64_t rows = (g.N + splits - 1) / splits;
    size_t bytes = (size_t)(cols * splits) * sizeof(S);
    S *part = (S *)kc_alloc(bytes, dev);
    if (!part) return -1;
    KC_LAUNCH(dim3((unsigned)colblocks, (unsigned)splits), dim3(32, 8), 0, st, column_reduce_kernel<Op>)(g, rows, op, part);
    /* channel c: columns c S .. c S + S - 1 of every split */
    KC_LAUNCH(kc_grid(g.C, dev), KC_THREADS, 0, st, finish_kernel<Op>)(g.C, g.S, splits, cols, g.S, op, part);
    kc_free(part, bytes, dev);
    return 0;
}

/* Reduces per group set (n, g) with op, in `splits` pieces per set. */
template <typename Op>
static int group_reduce(const norm_geom &g, int64_t splits, int threads, const Op &op, int dev, cudaStream_t st)
{
    typedef typename Op::state S;
    int64_t nsets = g.N * g.G, chunk = (g.M + splits - 1) / splits;
    S *part = NULL;
    size_t bytes = (size_t)(nsets * splits) * sizeof(S);
    if (splits > 1 && !(part = (S *)kc_alloc(bytes, dev))) return -1;
    KC_LAUNCH(dim3((unsigned)nsets, (unsigned)splits), threads, 0, st, set_reduce_kernel<Op>)(g, false, g.M, chunk, op, part);
    if (part) {
        KC_LAUNCH(kc_grid(nsets, dev), KC_THREADS, 0, st, finish_kernel<Op>)(nsets, splits, splits, 1, 1, op, part);
        kc_free(part, bytes, dev);
    }
    return 0;
}

static const char *norm_name(em_norm_op op) { return op == EM_NORM_BATCH ? "batch_norm" : "group_norm"; }

/* ---- float16 / bfloat16: float32 working copies on the device --------------------------- */

#define MAX_WIDE 8

typedef struct wide_copy {
    em_storage storage;
    em_tensor t;
    em_tensor *orig;
    bool out;
} wide_copy;

typedef struct widened {
    int n, device;
    bool failed;
    wide_copy c[MAX_WIDE];
} widened;

static bool is_lowp(const em_tensor *t) { return t && (t->dtype == EM_FLOAT16 || t->dtype == EM_BFLOAT16); }

/* A contiguous float32 copy of t when t is float16/bfloat16 (an output's
 * copy too: the kernels write every element, so it is left unfilled), else t. */
static em_tensor *widen(widened *w, const em_tensor *t, bool out)
{
    if (!is_lowp(t) || w->failed) return (em_tensor *)t;
    wide_copy *c = &w->c[w->n];
    memset(c, 0, sizeof *c);
    c->t = *t;
    c->t.dtype = EM_FLOAT32;
    c->t.offset = 0;
    int64_t st = 1;
    for (int i = t->ndim - 1; i >= 0; i--) { c->t.strides[i] = st; st *= t->sizes[i]; }
    size_t nbytes = (size_t)emf_numel(t) * sizeof(float);
    c->storage = *t->storage;
    c->storage.data = kc_alloc(nbytes ? nbytes : 1, w->device);
    c->storage.nbytes = nbytes;
    c->t.storage = &c->storage;
    c->orig = (em_tensor *)t;
    c->out = out;
    if (!c->storage.data || (!out && kc_cast(&c->t, t))) {
        if (c->storage.data) kc_free(c->storage.data, nbytes ? nbytes : 1, w->device);
        w->failed = true;
        return (em_tensor *)t;
    }
    w->n++;
    return &c->t;
}

/* Rounds the outputs back when rc is 0, frees the copies; rc, or -1. */
static int narrow(widened *w, int rc)
{
    if (w->failed) rc = -1;
    for (int i = 0; i < w->n; i++) {
        wide_copy *c = &w->c[i];
        if (rc == 0 && c->out && kc_cast(c->orig, &c->t)) rc = -1;
        size_t nbytes = c->storage.nbytes;
        kc_free(c->storage.data, nbytes ? nbytes : 1, w->device);
    }
    w->n = 0;
    return rc;
}

static int check(em_norm_op op, const em_tensor *x, const em_norm_params *p, norm_geom *g)
{
    const char *name = norm_name(op);
    if (op != EM_NORM_BATCH && op != EM_NORM_GROUP) return kc_error("norm: unknown op %d", (int)op);
    if (x->dtype != EM_FLOAT32 && x->dtype != EM_FLOAT64)
        return kc_error("%s: no CUDA kernel for %s (float32, float64; float16 and bfloat16 through float32)", name,
                        kc_dtype_name(x->dtype));
    if (p->N < 0 || p->C < 0 || p->S < 0 || emf_numel(x) != p->N * p->C * p->S)
        return kc_error("%s: the input's %lld elements are not N*C*S = %lld*%lld*%lld", name,
                        (long long)emf_numel(x), (long long)p->N, (long long)p->C, (long long)p->S);
    g->N = p->N;
    g->C = p->C;
    g->S = p->S > 0 ? p->S : 1;
    g->batch = op == EM_NORM_BATCH;
    g->G = g->batch ? 1 : p->G;
    if (!g->batch && (g->G < 1 || p->C % g->G != 0))
        return kc_error("%s: %lld channels do not split into %lld groups", name, (long long)p->C, (long long)p->G);
    g->Cg = g->batch ? g->C : g->C / g->G;
    g->M = g->Cg * g->S;
    int64_t nsets = g->batch ? g->C : g->N * g->G;
    if (nsets > INT32_MAX) return kc_error("%s: %lld statistics sets (at most 2^31 - 1)", name, (long long)nsets);
    return 0;
}

template <typename T>
static int run_norm(em_norm_op op, em_tensor *y, em_tensor *mean, em_tensor *var, const em_tensor *x,
                    const em_tensor *w, const em_tensor *b, const norm_geom &g, double eps, int dev, cudaStream_t st)
{
    const T *xp = (const T *)kc_ptr(x), *wp = w ? (const T *)kc_ptr(w) : NULL, *bp = b ? (const T *)kc_ptr(b) : NULL;
    T *yp = (T *)kc_ptr(y), *mp = (T *)kc_ptr(mean), *vp = (T *)kc_ptr(var);
    int64_t total = g.N * g.C * g.S;
    stats_op<T> op_s = {xp, mp, vp};
    if (op == EM_NORM_GROUP) {
        int64_t nsets = g.N * g.G;
        int threads = block_for(g.M);
        int64_t splits = splits_for(nsets, g.M, threads, dev);
        if (splits == 1) {
            KC_LAUNCH((unsigned)nsets, threads, 0, st, group_forward_kernel<T>)(g, xp, wp, bp, yp, mp, vp, (T)eps);
            return 0;
        }
        if (group_reduce(g, splits, 256, op_s, dev, st)) return -1;
    } else {
        if (channel_reduce(g, op_s, dev, st)) return -1;
    }
    if (total <= INT32_MAX)
        KC_LAUNCH(kc_grid(total, dev), KC_THREADS, 0, st, normalize_kernel<T, uint32_t>)(g, xp, mp, vp, wp, bp, yp, (T)eps);
    else
        KC_LAUNCH(kc_grid(total, dev), KC_THREADS, 0, st, normalize_kernel<T, int64_t>)(g, xp, mp, vp, wp, bp, yp, (T)eps);
    return 0;
}

int kc_norm(em_norm_op op, em_tensor *y, em_tensor *mean, em_tensor *var, const em_tensor *x, const em_tensor *w,
            const em_tensor *b, const em_norm_params *p)
{
    if (is_lowp(x) && y->dtype == x->dtype) {
        widened wd;
        wd.n = 0, wd.device = kc_device_of(x), wd.failed = false;
        em_tensor *y32 = widen(&wd, y, true), *m32 = widen(&wd, mean, true), *v32 = widen(&wd, var, true);
        const em_tensor *x32 = widen(&wd, x, false), *w32 = widen(&wd, w, false), *b32 = widen(&wd, b, false);
        return narrow(&wd, wd.failed ? -1 : kc_norm(op, y32, m32, v32, x32, w32, b32, p));
    }
    norm_geom g;
    if (check(op, x, p, &g)) return -1;
    const char *name = norm_name(op);
    int dev = kc_device_of(x);
    cudaStream_t st = kc_stream(dev);
    if (!st) return -1;
    int64_t nsets = g.batch ? g.C : g.N * g.G, L = g.batch ? g.N * g.S : g.M;
    if (nsets == 0) return 0;
    if (L == 0) {               /* empty sets: no statistics */
        if (kc_fill(mean, NAN) || kc_fill(var, NAN)) return -1;
        return kc_launched(name, dev);
    }
    int rc;
    switch (x->dtype) {
    case EM_FLOAT32: rc = run_norm<float>(op, y, mean, var, x, w, b, g, p->eps, dev, st); break;
    case EM_FLOAT64: rc = run_norm<double>(op, y, mean, var, x, w, b, g, p->eps, dev, st); break;
    default: return kc_error("%s: no CUDA kernel for %s", name, kc_dtype_name(x->dtype));
    }
    if (rc) return -1;
    return kc_launched(name, dev);
}

template <typename T>
static void grad_input(const norm_geom &g, const T *x, const T *gy, const T *mean, const T *rstd, const T *w,
                       const T *a, const T *b, T *gx, int64_t total, int dev, cudaStream_t st)
{
    if (total <= INT32_MAX)
        KC_LAUNCH(kc_grid(total, dev), KC_THREADS, 0, st, grad_input_kernel<T, uint32_t>)(g, x, gy, mean, rstd, w, a, b, gx);
    else
        KC_LAUNCH(kc_grid(total, dev), KC_THREADS, 0, st, grad_input_kernel<T, int64_t>)(g, x, gy, mean, rstd, w, a, b, gx);
}

template <typename T>
static int run_norm_backward(em_tensor *gx, em_tensor *gw, em_tensor *gb, const em_tensor *gy,
                             const em_tensor *x, const em_tensor *mean, const em_tensor *rstd, const em_tensor *w,
                             const norm_geom &g, int dev, cudaStream_t st)
{
    const T *xp = (const T *)kc_ptr(x), *gyp = (const T *)kc_ptr(gy), *mp = (const T *)kc_ptr(mean);
    const T *rp = (const T *)kc_ptr(rstd), *wp = w ? (const T *)kc_ptr(w) : NULL;
    T *gxp = gx ? (T *)kc_ptr(gx) : NULL;
    int64_t total = g.N * g.C * g.S;
    /* per-channel sums of gy and gy xhat: gb and gw, or scratch */
    bool need_channel = g.batch ? true : (gw || gb);
    T *scratch = NULL;
    size_t sbytes;
    int64_t nsets = g.batch ? g.C : g.N * g.G;
    int threads = block_for(g.M);
    int64_t splits = g.batch ? 1 : splits_for(nsets, g.M, threads, dev);
    bool fused = !g.batch && splits == 1;
    /* scratch holds what the outputs cannot: [2][C] channel sums, [2][N G] set sums */
    sbytes = (size_t)(2 * g.C + (!g.batch && gxp && !fused ? 2 * nsets : 0)) * sizeof(T);
    if (!(scratch = (T *)kc_alloc(sbytes, dev))) return -1;
    int rc = 0;
    T *ca = gb ? (T *)kc_ptr(gb) : scratch, *cb = gw ? (T *)kc_ptr(gw) : scratch + g.C;
    if (need_channel) {
        grad_op<T> op_c = {xp, gyp, mp, rp, wp, g.G, g.Cg, g.batch, false, ca, cb};
        rc = channel_reduce(g, op_c, dev, st);
    }
    if (rc == 0 && gxp) {
        if (g.batch) {
            grad_input(g, xp, gyp, mp, rp, wp, ca, cb, gxp, total, dev, st);
        } else if (fused) {
            KC_LAUNCH((unsigned)nsets, threads, 0, st, group_backward_kernel<T>)(g, xp, gyp, mp, rp, wp, gxp);
        } else {
            T *sa = scratch + 2 * g.C, *sb = sa + nsets;
            grad_op<T> op_g = {xp, gyp, mp, rp, wp, g.G, g.Cg, false, true, sa, sb};
            rc = group_reduce(g, splits, 256, op_g, dev, st);
            if (rc == 0)
                grad_input(g, xp, gyp, mp, rp, wp, sa, sb, gxp, total, dev, st);
        }
    }
    kc_free(scratch, sbytes, dev);
    return rc;
}

int kc_norm_backward(em_norm_op op, em_tensor *gx, em_tensor *gw, em_tensor *gb, const em_tensor *gy,
                     const em_tensor *x, const em_tensor *mean, const em_tensor *rstd, const em_tensor *w,
                     const em_norm_params *p)
{
    if (is_lowp(x) && gy->dtype == x->dtype) {
        widened wd;
        wd.n = 0, wd.device = kc_device_of(x), wd.failed = false;
        em_tensor *gx32 = widen(&wd, gx, true), *gw32 = widen(&wd, gw, true), *gb32 = widen(&wd, gb, true);
        const em_tensor *gy32 = widen(&wd, gy, false), *x32 = widen(&wd, x, false);
        const em_tensor *m32 = widen(&wd, mean, false), *r32 = widen(&wd, rstd, false), *w32 = widen(&wd, w, false);
        return narrow(&wd, wd.failed ? -1 : kc_norm_backward(op, gx32, gw32, gb32, gy32, x32, m32, r32, w32, p));
    }
    norm_geom g;
    if (check(op, x, p, &g)) return -1;
    const char *name = op == EM_NORM_BATCH ? "batch_norm backward" : "group_norm backward";
    int dev = kc_device_of(x);
    cudaStream_t st = kc_stream(dev);
    if (!st) return -1;
    if (emf_numel(x) == 0) {     /* sums over nothing */
        if ((gw && kc_fill(gw, 0)) || (gb && kc_fill(gb, 0))) return -1;
        return kc_launched(name, dev);
    }
    int rc;
    switch (x->dtype) {
    case EM_FLOAT32: rc = run_norm_backward<float>(gx, gw, gb, gy, x, mean, rstd, w, g, dev, st); break;
    case EM_FLOAT64: rc = run_norm_backward<double>(gx, gw, gb, gy, x, mean, rstd, w, g, dev, st); break;
    default: return kc_error("%s: no CUDA kernel for %s", name, kc_dtype_name(x->dtype));
    }
    if (rc) return -1;
    return kc_launched(name, dev);
}
