/* optim.cu — the CUDA fused optimizer steps (SGD with momentum/nesterov,
 * Adam/AdamW): one pass over the parameter, its gradient and its state; the
 * twin of engine/cpu/optim.c. The update rules are in engine/optim.h, the
 * hyper-parameters' struct in engine/backend.h.
 *
 * Results match the CPU bit for bit: the coefficients are computed in double
 * on the host exactly as the CPU computes them (rounded once to float for
 * float32), and the per-element arithmetic uses the _rn intrinsics in the
 * CPU's order of operations. The intrinsics matter: nvcc would otherwise fuse
 * a*b + c into one FMA, which rounds once where the CPU (built without
 * contraction, -std=c11) rounds twice. Where the CPU calls fma() (PyTorch's
 * add with alpha, addcmul and lerp, fused on its CPUs), op_fma is the fused
 * one-rounding operation here too.
 *
 * The switches (weight decay, momentum buffer, first step, nesterov, L2) are
 * template parameters, so every variant is its own branch-free kernel. When
 * every operand is 16-byte aligned, elements move as float4 / double2. */
#include "kc.h"
#include "elementwise.cuh"

#include <math.h>

/* ---- rounding-exact arithmetic ---------------------------------------------------- */

__device__ __forceinline__ float op_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float op_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float op_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float op_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ float op_sqrt(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double op_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double op_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double op_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double op_div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ double op_sqrt(double a) { return __dsqrt_rn(a); }
#ifdef EMBER_CUDA_EMU
/* the emulator's host compiler: the C library's correctly rounded fma */
__device__ __forceinline__ float op_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double op_fma(double a, double b, double c) { return fma(a, b, c); }
#else
__device__ __forceinline__ float op_fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double op_fma(double a, double b, double c) { return __fma_rn(a, b, c); }
#endif

/* W elements loaded or stored as one (16-byte when W * sizeof(T) == 16) access */
template <typename T, int W> struct alignas(sizeof(T) * W) optim_pack {
    T v[W];
};

/* ---- SGD ------------------------------------------------------------------------------ */

template <typename T> struct sgd_coef {
    T lr, sign, wd, mom, keep;
};

/* the switches as arguments: constants in the single-tensor kernels (folded
 * away), uniform run-time flags in the multi-tensor ones */
template <typename T>
__device__ __forceinline__ void sgd_update(T &p, T g, T &b, const sgd_coef<T> &c, bool wd, bool buf, bool first,
                                           bool nest)
{
    T d = op_mul(c.sign, g);
    if (wd) d = op_fma(c.wd, p, d);
    if (buf) {
        b = first ? d : op_fma(c.keep, d, op_mul(c.mom, b));
        d = nest ? op_fma(c.mom, b, d) : b;
    }
    p = op_fma(-c.lr, d, p);
}

template <typename T, bool WD, bool BUF, bool FIRST, bool NEST>
__device__ __forceinline__ void sgd_one(T &p, T g, T &b, const sgd_coef<T> &c)
{
    sgd_update<T>(p, g, b, c, WD, BUF, FIRST, NEST);
}

template <typename T, int W, bool WD, bool BUF, bool FIRST, bool NEST>
__global__ void sgd_kernel(T *p, const T *g, T *buf, int64_t n, sgd_coef<T> c)
{
    typedef optim_pack<T, W> V;
    int64_t step = (int64_t)gridDim.x * blockDim.x, tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t nvec = n / W;
    for (int64_t i = tid; i < nvec; i += step) {
        V pv = ((const V *)p)[i], gv = ((const V *)g)[i], bv = {};
        if (BUF && !FIRST) bv = ((const V *)buf)[i];
        for (int k = 0; k < W; k++) sgd_one<T, WD, BUF, FIRST, NEST>(pv.v[k], gv.v[k], bv.v[k], c);
        ((V *)p)[i] = pv;
        if (BUF) ((V *)buf)[i] = bv;
    }
    for (int64_t i = nvec * W + tid; i < n; i += step) {      /* the tail, W > 1 only */
        T pi = p[i], b = BUF && !FIRST ? buf[i] : T(0);
        sgd_one<T, WD, BUF, FIRST, NEST>(pi, g[i], b, c);
        p[i] = pi;
        if (BUF) buf[i] = b;
    }
}

template <typename T, int W, bool WD, bool BUF, bool FIRST, bool NEST>
static void sgd_launch(T *p, const T *g, T *buf, int64_t n, const sgd_coef<T> &c, int dev, cudaStream_t s)
{
    KC_LAUNCH(kc_grid(n / W > 0 ? n / W : n, dev), KC_THREADS, 0, s, sgd_kernel<T, W, WD, BUF, FIRST, NEST>)(p, g, buf, n, c);
}

template <typename T, int W, bool WD>
static void sgd_pick(T *p, const T *g, T *buf, int64_t n, const sgd_coef<T> &c, bool first, bool nest,
                     int dev, cudaStream_t s)
{
    if (!buf) sgd_launch<T, W, WD, false, false, false>(p, g, buf, n, c, dev, s);
    else if (first && nest) sgd_launch<T, W, WD, true, true, true>(p, g, buf, n, c, dev, s);
    else if (first) sgd_launch<T, W, WD, true, true, false>(p, g, buf, n, c, dev, s);
    else if (nest) sgd_launch<T, W, WD, true, false, true>(p, g, buf, n, c, dev, s);
    else sgd_launch<T, W, WD, true, false, false>(p, g, buf, n, c, dev, s);
}

template <typename T, int W>
static void sgd_pick_wd(T *p, const T *g, T *buf, int64_t n, const sgd_coef<T> &c, bool wd, bool first,
                        bool nest, int dev, cudaStream_t s)
{
    if (wd) sgd_pick<T, W, true>(p, g, buf, n, c, first, nest, dev, s);
    else sgd_pick<T, W, false>(p, g, buf, n, c, first, nest, dev, s);
}

/* ---- Adam / AdamW --------------------------------------------------------------------- */

/* lw, base_g: exp_avg.lerp_(grad, w = 1 - beta1) as the CPU computes it (engine/cpu/optim_float.inc) */
template <typename T> struct adam_coef {
    T sign, l2, decay, lw, b2, c2, bc2s, eps, nss;
    bool base_g;
};

template <typename T>
__device__ __forceinline__ void adam_update(T &p, T g, T &m, T &v, const adam_coef<T> &c, bool l2)
{
    T gi = op_mul(c.sign, g);
    T pi = p;
    if (l2) gi = op_fma(c.l2, pi, gi);
    pi = op_mul(pi, c.decay);
    T mi = op_fma(c.lw, op_sub(gi, m), c.base_g ? gi : m);
    T vi = op_fma(op_mul(c.c2, gi), gi, op_mul(c.b2, v));
    m = mi;
    v = vi;
    T denom = op_add(op_div(op_sqrt(vi), c.bc2s), c.eps);
    p = op_add(pi, op_div(op_mul(c.nss, mi), denom));
}

template <typename T, bool L2>
__device__ __forceinline__ void adam_one(T &p, T g, T &m, T &v, const adam_coef<T> &c)
{
    adam_update<T>(p, g, m, v, c, L2);
}

template <typename T, int W, bool L2>
__global__ void adam_kernel(T *p, const T *g, T *m, T *v, int64_t n, adam_coef<T> c)
{
    typedef optim_pack<T, W> V;
    int64_t step = (int64_t)gridDim.x * blockDim.x, tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t nvec = n / W;
    for (int64_t i = tid; i < nvec; i += step) {
        V pv = ((const V *)p)[i], gv = ((const V *)g)[i], mv = ((const V *)m)[i], vv = ((const V *)v)[i];
        for (int k = 0; k < W; k++) adam_one<T, L2>(pv.v[k], gv.v[k], mv.v[k], vv.v[k], c);
        ((V *)p)[i] = pv;
        ((V *)m)[i] = mv;
        ((V *)v)[i] = vv;
    }
    for (int64_t i = nvec * W + tid; i < n; i += step) {      /* the tail, W > 1 only */
        T pi = p[i], mi = m[i], vi = v[i];
        adam_one<T, L2>(pi, g[i], mi, vi, c);
        p[i] = pi;
        m[i] = mi;
        v[i] = vi;
    }
}

template <typename T, int W>
static void adam_launch(T *p, const T *g, T *m, T *v, int64_t n, const adam_coef<T> &c, bool l2, int dev,
                        cudaStream_t s)
{
    int grid = kc_grid(n / W > 0 ? n / W : n, dev);
    if (l2) KC_LAUNCH(grid, KC_THREADS, 0, s, adam_kernel<T, W, true>)(p, g, m, v, n, c);
    else KC_LAUNCH(grid, KC_THREADS, 0, s, adam_kernel<T, W, false>)(p, g, m, v, n, c);
}

/* ---- GradScaler's unscale -------------------------------------------------------------- */

/* g *= inv, and *found = 1 where a value (before scaling) is inf or NaN: every
 * writer stores the same 1.0f, as PyTorch's kernel does */
template <typename T>
__global__ void unscale_kernel(T *g, int64_t n, T inv, float *found)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x, tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t i = tid; i < n; i += step) {
        T v = g[i];
        if (!isfinite(v)) *found = 1.0f;
        g[i] = op_mul(v, inv);
    }
}

static int unscale(em_tensor *g, em_tensor *flag, const em_optim_hyper *h)
{
    const char *name = "amp_unscale_";
    if ((g->dtype != EM_FLOAT32 && g->dtype != EM_FLOAT64) || !emf_is_contiguous(g))
        return kc_error("%s: CUDA kernel needs a contiguous float32 or float64 gradient, got %s", name,
                        kc_dtype_name(g->dtype));
    if (!flag || flag->dtype != EM_FLOAT32 || emf_numel(flag) != 1 || kc_device_of(flag) != kc_device_of(g))
        return kc_error("%s: CUDA kernel needs a one-element float32 flag on the gradient's device", name);
    int64_t n = emf_numel(g);
    if (n == 0) return 0;
    int dev = kc_device_of(g);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    float inv = (float)h->inv_scale, *found = (float *)kc_ptr(flag);
    if (g->dtype == EM_FLOAT32)
        KC_LAUNCH(kc_grid(n, dev), KC_THREADS, 0, s, unscale_kernel<float>)((float *)kc_ptr(g), n, inv, found);
    else
        KC_LAUNCH(kc_grid(n, dev), KC_THREADS, 0, s, unscale_kernel<double>)((double *)kc_ptr(g), n, (double)inv, found);
    return kc_launched(name, dev);
}

/* ---- coefficients, computed in double on the host as the CPU does ------------------------ */

template <typename T> static sgd_coef<T> sgd_coef_of(const em_optim_hyper *h)
{
    sgd_coef<T> c;
    c.lr = (T)h->lr;
    c.sign = h->maximize ? T(-1) : T(1);
    c.wd = (T)h->weight_decay;
    c.mom = (T)h->momentum;
    c.keep = (T)(1 - h->dampening);
    return c;
}

template <typename T> static adam_coef<T> adam_coef_of(const em_optim_hyper *h)
{
    double lr = h->lr, wd = h->weight_decay;
    adam_coef<T> c;
    c.sign = h->maximize ? T(-1) : T(1);
    c.l2 = (T)(h->decoupled ? 0 : wd);
    c.decay = (T)(h->decoupled ? 1 - lr * wd : 1);
    T w = (T)(1 - h->beta1);
    c.base_g = !(fabs(w) < T(0.5));
    c.lw = c.base_g ? T(w - T(1)) : w;
    c.b2 = (T)h->beta2;
    c.c2 = (T)(1 - h->beta2);
    c.bc2s = (T)sqrt(h->bc2);
    c.eps = (T)h->eps;
    c.nss = (T)(-(lr / h->bc1));
    return c;
}

/* ---- entry -------------------------------------------------------------------------------- */

static bool aligned16(const void *q) { return !q || ((uintptr_t)q & 15) == 0; }

template <typename T>
static int optim_typed(em_optim_op op, em_tensor *pt, const em_tensor *gt, em_tensor *s1, em_tensor *s2,
                       const em_optim_hyper *h, int dev, cudaStream_t s)
{
    constexpr int W = 16 / (int)sizeof(T);      /* 4 floats or 2 doubles */
    int64_t n = emf_numel(pt);
    T *p = (T *)kc_ptr(pt);
    const T *g = (const T *)kc_ptr(gt);
    if (op == EM_OPTIM_SGD) {
        T *buf = h->momentum != 0 && s1 ? (T *)kc_ptr(s1) : NULL;     /* no buffer without momentum */
        sgd_coef<T> c = sgd_coef_of<T>(h);
        bool wd = h->weight_decay != 0, first = h->first_step, nest = h->nesterov;
        if (aligned16(p) && aligned16(g) && aligned16(buf))
            sgd_pick_wd<T, W>(p, g, buf, n, c, wd, first, nest, dev, s);
        else
            sgd_pick_wd<T, 1>(p, g, buf, n, c, wd, first, nest, dev, s);
        return kc_launched("sgd_step", dev);
    }
    bool decoupled = h->decoupled;
    double l2 = decoupled ? 0 : h->weight_decay;
    adam_coef<T> c = adam_coef_of<T>(h);
    T *m = (T *)kc_ptr(s1), *v = (T *)kc_ptr(s2);
    if (aligned16(p) && aligned16(g) && aligned16(m) && aligned16(v))
        adam_launch<T, W>(p, g, m, v, n, c, l2 != 0, dev, s);
    else
        adam_launch<T, 1>(p, g, m, v, n, c, l2 != 0, dev, s);
    return kc_launched(decoupled ? "adamw_step" : "adam_step", dev);
}

static int check_operand(const char *op, const char *what, const em_tensor *p, const em_tensor *t)
{
    if (!t) return kc_error("%s: CUDA kernel called without the %s", op, what);
    if (t->dtype != p->dtype || emf_numel(t) != emf_numel(p) || !emf_is_contiguous(t) ||
        kc_device_of(t) != kc_device_of(p))
        return kc_error("%s: CUDA kernel needs a contiguous %s of the parameter's dtype %s and device "
                        "(got %s)", op, what, kc_dtype_name(p->dtype), kc_dtype_name(t->dtype));
    return 0;
}

extern "C" int kc_optim(em_optim_op op, em_tensor *p, const em_tensor *g, em_tensor *s1, em_tensor *s2,
                        const em_optim_hyper *h)
{
    if (op == EM_OPTIM_UNSCALE) return unscale(p, s1, h);
    if (op != EM_OPTIM_SGD && op != EM_OPTIM_ADAM) return kc_error("optim: invalid op %d", (int)op);
    const char *name = op == EM_OPTIM_SGD ? "sgd_step" : "adam_step";
    if (p->dtype != EM_FLOAT32 && p->dtype != EM_FLOAT64)
        return kc_error("%s: CUDA kernel supports float32 and float64 parameters, got %s", name,
                        kc_dtype_name(p->dtype));
    if (check_operand(name, "parameter", p, p) || check_operand(name, "gradient", p, g)) return -1;
    if (op == EM_OPTIM_SGD) {
        if (h->momentum != 0) {
            if (!s1) return kc_error("%s: momentum %g without a momentum buffer", name, h->momentum);
            if (check_operand(name, "momentum buffer", p, s1)) return -1;
        }
    } else {
        if (check_operand(name, "exp_avg", p, s1) || check_operand(name, "exp_avg_sq", p, s2)) return -1;
    }
    if (emf_numel(p) == 0) return 0;
    int dev = kc_device_of(p);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    if (p->dtype == EM_FLOAT32) return optim_typed<float>(op, p, g, s1, s2, h, dev, s);
    return optim_typed<double>(op, p, g, s1, s2, h, dev, s);
}

/* ---- multi-tensor ops (em_multi_op), as PyTorch's multi_tensor_apply ------------------------
 * The kernel arguments carry a table of up to MT_TENSORS(D) tensors (D pointers each, one
 * per list) and a map from each block to its (tensor, chunk); a block runs one chunk of
 * MT_CHUNK elements. The host fills the table in tensor order and launches when it is full
 * of tensors or blocks, carrying a tensor cut in the middle over to the next table: one
 * launch per call unless the table overflows. The table stays under the 4 KiB of kernel
 * arguments every architecture takes. float16/bfloat16 load to float, compute in float
 * with the float32 arithmetic and round back, with the CPU's conversions (elementwise.cuh),
 * so every dtype matches the CPU bit for bit except the norm's summation order. */

#define MT_CHUNK 65536
#define MT_BLOCKS 320

template <int D> struct mt_capacity { static const int tensors = 110; };
template <> struct mt_capacity<3> { static const int tensors = 48; };
template <> struct mt_capacity<4> { static const int tensors = 36; };

template <int D> struct mt_table {
    void *ptr[D][mt_capacity<D>::tensors];
    int64_t numel[mt_capacity<D>::tensors];
    int index[mt_capacity<D>::tensors];         /* the tensor's position in the caller's lists */
    unsigned char block_tensor[MT_BLOCKS];
    int block_chunk[MT_BLOCKS];
    int64_t slot_base;                          /* the call-wide number of block 0 (the norm's partials) */
};

/* the block's tensor and element range */
template <int D>
__device__ __forceinline__ int mt_chunk(const mt_table<D> &tab, int64_t &lo, int64_t &hi)
{
    int t = tab.block_tensor[blockIdx.x];
    lo = (int64_t)tab.block_chunk[blockIdx.x] * MT_CHUNK;
    hi = lo + MT_CHUNK < tab.numel[t] ? lo + MT_CHUNK : tab.numel[t];
    return t;
}

/* dtypes: S stored, C computed */
struct mt_f32 {
    typedef float S; typedef float C;
    __device__ static C load(S x) { return x; }
    __device__ static S store(C x) { return x; }
};
struct mt_f64 {
    typedef double S; typedef double C;
    __device__ static C load(S x) { return x; }
    __device__ static S store(C x) { return x; }
};
struct mt_f16 {
    typedef uint16_t S; typedef float C;
    __device__ static C load(S x) { return emf_half_to_float(x); }
    __device__ static S store(C x) { return emf_float_to_half(x); }
};
struct mt_bf16 {
    typedef uint16_t S; typedef float C;
    __device__ static C load(S x) { return emf_bf16_to_float(x); }
    __device__ static S store(C x) { return emf_float_to_bf16(x); }
};

template <typename IO>
__global__ void mt_sgd_kernel(mt_table<3> tab, sgd_coef<typename IO::C> c, bool wd, bool buf, bool first, bool nest)
{
    typedef typename IO::S S;
    typedef typename IO::C C;
    int64_t lo, hi;
    int t = mt_chunk(tab, lo, hi);
    S *p = (S *)tab.ptr[0][t], *b = (S *)tab.ptr[2][t];
    const S *g = (const S *)tab.ptr[1][t];
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        C pi = IO::load(p[i]), bi = buf && !first ? IO::load(b[i]) : C(0);
        sgd_update<C>(pi, IO::load(g[i]), bi, c, wd, buf, first, nest);
        p[i] = IO::store(pi);
        if (buf) b[i] = IO::store(bi);
    }
}

template <typename IO>
__global__ void mt_adam_kernel(mt_table<4> tab, adam_coef<typename IO::C> c, bool l2)
{
    typedef typename IO::S S;
    typedef typename IO::C C;
    int64_t lo, hi;
    int t = mt_chunk(tab, lo, hi);
    S *p = (S *)tab.ptr[0][t], *m = (S *)tab.ptr[2][t], *v = (S *)tab.ptr[3][t];
    const S *g = (const S *)tab.ptr[1][t];
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        C pi = IO::load(p[i]), mi = IO::load(m[i]), vi = IO::load(v[i]);
        adam_update<C>(pi, IO::load(g[i]), mi, vi, c, l2);
        p[i] = IO::store(pi);
        m[i] = IO::store(mi);
        v[i] = IO::store(vi);
    }
}

/* inv_scale read on the device; every writer of found stores the same 1.0f */
template <typename IO>
__global__ void mt_unscale_kernel(mt_table<1> tab, const float *inv_scale, float *found)
{
    typedef typename IO::S S;
    typedef typename IO::C C;
    int64_t lo, hi;
    int t = mt_chunk(tab, lo, hi);
    S *g = (S *)tab.ptr[0][t];
    C inv = (C)*inv_scale;
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        C v = IO::load(g[i]);
        if (!isfinite(v)) *found = 1.0f;
        g[i] = IO::store(op_mul(v, inv));
    }
}

/* clip_grad_norm_'s coefficient min(max_norm / (total + 1e-6), 1) in the norm's dtype N
 * (NaN kept), rounded to the tensor's dtype, then the product in C */
template <typename IO, typename N>
__global__ void mt_scale_kernel(mt_table<1> tab, const N *total, double max_norm)
{
    typedef typename IO::S S;
    typedef typename IO::C C;
    int64_t lo, hi;
    int t = mt_chunk(tab, lo, hi);
    S *g = (S *)tab.ptr[0][t];
    N coef = op_div((N)max_norm, op_add(*total, (N)1e-6));
    coef = coef > N(1) ? N(1) : coef;
    C c = IO::load(IO::store((C)coef));
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) g[i] = IO::store(op_mul(IO::load(g[i]), c));
}

enum { MT_L1, MT_L2, MT_INF, MT_P };

__device__ __forceinline__ double mt_combine(int kind, double acc, double x)
{
    if (kind != MT_INF) return acc + x;
    return x > acc || x != x ? x : acc;         /* a NaN, once met, stays */
}

__device__ __forceinline__ double mt_term(int kind, double x, double p)
{
    double a = fabs(x);
    return kind == MT_L2 ? a * a : kind == MT_P ? pow(a, p) : a;
}

/* thread 0 gets the block's combination of v, in a fixed tree order */
__device__ double mt_block_reduce(int kind, double v, double *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = KC_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] = mt_combine(kind, sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    return sh[0];
}

/* one float64 partial per block (chunk), tagged with its tensor */
template <typename IO>
__global__ void mt_norm_kernel(mt_table<1> tab, int kind, double p, double *partial, int *part_tensor)
{
    KC_SHARED(double, sh, [KC_THREADS]);
    typedef typename IO::S S;
    int64_t lo, hi;
    int t = mt_chunk(tab, lo, hi);
    const S *x = (const S *)tab.ptr[0][t];
    double acc = 0;
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x)
        acc = mt_combine(kind, acc, mt_term(kind, (double)IO::load(x[i]), p));
    double r = mt_block_reduce(kind, acc, sh);
    if (threadIdx.x == 0) {
        partial[tab.slot_base + blockIdx.x] = r;
        part_tensor[tab.slot_base + blockIdx.x] = tab.index[t];
    }
}

/* one block: out[i] from tensor i's partials (their tags ascend), out[n] from the out[i] */
__global__ void mt_norm_finish(const double *partial, const int *part_tensor, int64_t nslots, int64_t n, int kind,
                               double *out)
{
    KC_SHARED(double, sh, [KC_THREADS]);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        int64_t a = 0, b = nslots;
        while (a < b) {
            int64_t m = a + (b - a) / 2;
            if (part_tensor[m] < i) a = m + 1;
            else b = m;
        }
        double acc = 0;
        for (int64_t s = a; s < nslots && part_tensor[s] == i; s++) acc = mt_combine(kind, acc, partial[s]);
        out[i] = acc;
    }
    __syncthreads();
    double acc = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc = mt_combine(kind, acc, out[i]);
    double r = mt_block_reduce(kind, acc, sh);
    if (threadIdx.x == 0) out[n] = r;
}

/* Walks the lists `which` (D of them) in tables; launch(table, nblocks) for each full one. */
template <int D, typename L>
static int mt_walk(const em_tensor_lists *l, const int *which, L &launch)
{
    const int cap = mt_capacity<D>::tensors;
    mt_table<D> tab;
    memset(&tab, 0, sizeof tab);
    int nt = 0, nb = 0;
    for (int64_t i = 0; i < l->n; i++) {
        int64_t numel = emf_numel(l->t[which[0]][i]);
        if (numel == 0) continue;
        for (int k = 0; k < D; k++) tab.ptr[k][nt] = l->t[which[k]] ? kc_ptr(l->t[which[k]][i]) : NULL;
        tab.numel[nt] = numel;
        tab.index[nt] = (int)i;
        nt++;
        int64_t chunks = (numel + MT_CHUNK - 1) / MT_CHUNK;
        for (int64_t c = 0; c < chunks; c++) {
            tab.block_tensor[nb] = (unsigned char)(nt - 1);
            tab.block_chunk[nb] = (int)c;
            nb++;
            bool last = c == chunks - 1;
            if ((nt == cap && last) || nb == MT_BLOCKS) {
                if (launch(tab, nb)) return -1;
                tab.slot_base += nb;
                nb = 0;
                if (last) {
                    nt = 0;
                } else {            /* the tensor goes on in the next table, as its entry 0 */
                    for (int k = 0; k < D; k++) tab.ptr[k][0] = tab.ptr[k][nt - 1];
                    tab.numel[0] = tab.numel[nt - 1];
                    tab.index[0] = tab.index[nt - 1];
                    nt = 1;
                }
            }
        }
    }
    return nb > 0 ? launch(tab, nb) : 0;
}

template <typename IO> struct mt_sgd_launch {
    sgd_coef<typename IO::C> c;
    bool wd, buf, first, nest;
    cudaStream_t s;
    int dev;
    int operator()(const mt_table<3> &tab, int nb) const
    {
        KC_LAUNCH(nb, KC_THREADS, 0, s, mt_sgd_kernel<IO>)(tab, c, wd, buf, first, nest);
        return kc_launched("sgd_step", dev);
    }
};

template <typename IO> struct mt_adam_launch {
    adam_coef<typename IO::C> c;
    bool l2;
    cudaStream_t s;
    int dev;
    int operator()(const mt_table<4> &tab, int nb) const
    {
        KC_LAUNCH(nb, KC_THREADS, 0, s, mt_adam_kernel<IO>)(tab, c, l2);
        return kc_launched("adam_step", dev);
    }
};

template <typename IO> struct mt_unscale_launch {
    const float *inv;
    float *found;
    cudaStream_t s;
    int dev;
    int operator()(const mt_table<1> &tab, int nb) const
    {
        KC_LAUNCH(nb, KC_THREADS, 0, s, mt_unscale_kernel<IO>)(tab, inv, found);
        return kc_launched("amp_unscale_", dev);
    }
};

template <typename IO, typename N> struct mt_scale_launch {
    const N *total;
    double max_norm;
    cudaStream_t s;
    int dev;
    int operator()(const mt_table<1> &tab, int nb) const
    {
        KC_LAUNCH(nb, KC_THREADS, 0, s, mt_scale_kernel<IO, N>)(tab, total, max_norm);
        return kc_launched("multi_scale_", dev);
    }
};

template <typename IO> struct mt_norm_launch {
    int kind;
    double p;
    double *partial;
    int *part_tensor;
    cudaStream_t s;
    int dev;
    int operator()(const mt_table<1> &tab, int nb) const
    {
        KC_LAUNCH(nb, KC_THREADS, 0, s, mt_norm_kernel<IO>)(tab, kind, p, partial, part_tensor);
        return kc_launched("multi_norm", dev);
    }
};

static const int mt_lists[4] = {0, 1, 2, 3};

template <typename IO>
static int mt_norm(const em_tensor_lists *l, em_tensor *out, double p, int dev, cudaStream_t s)
{
    int64_t slots = 0;
    for (int64_t i = 0; i < l->n; i++) slots += (emf_numel(l->t[0][i]) + MT_CHUNK - 1) / MT_CHUNK;
    size_t bytes = (size_t)(slots ? slots : 1) * (sizeof(double) + sizeof(int));
    char *work = (char *)kc_alloc(bytes, dev);
    if (!work) return -1;
    mt_norm_launch<IO> f;
    f.kind = p == 1 ? MT_L1 : p == 2 ? MT_L2 : isinf(p) && p > 0 ? MT_INF : MT_P;
    f.p = p;
    f.partial = (double *)work;
    f.part_tensor = (int *)(work + (size_t)(slots ? slots : 1) * sizeof(double));
    f.s = s;
    f.dev = dev;
    int rc = mt_walk<1>(l, mt_lists, f);
    if (rc == 0) {
        KC_LAUNCH(1, KC_THREADS, 0, s, mt_norm_finish)(f.partial, f.part_tensor, slots, l->n, f.kind, (double *)kc_ptr(out));
        rc = kc_launched("multi_norm", dev);
    }
    kc_free(work, bytes, dev);          /* safe once queued: the device's work runs in order */
    return rc;
}

template <typename IO>
static int mt_typed(em_multi_op op, const em_tensor_lists *l, em_tensor *a, em_tensor *b, const em_optim_hyper *h,
                    int dev, cudaStream_t s)
{
    typedef typename IO::C C;
    switch (op) {
    case EM_MULTI_SGD: {
        mt_sgd_launch<IO> f = {sgd_coef_of<C>(h), h->weight_decay != 0, h->momentum != 0, h->first_step,
                               h->nesterov, s, dev};
        return mt_walk<3>(l, mt_lists, f);
    }
    case EM_MULTI_ADAM: {
        mt_adam_launch<IO> f = {adam_coef_of<C>(h), !h->decoupled && h->weight_decay != 0, s, dev};
        return mt_walk<4>(l, mt_lists, f);
    }
    case EM_MULTI_UNSCALE: {
        mt_unscale_launch<IO> f = {(const float *)kc_ptr(a), (float *)kc_ptr(b), s, dev};
        return mt_walk<1>(l, mt_lists, f);
    }
    case EM_MULTI_NORM:
        return mt_norm<IO>(l, a, h->norm_type, dev, s);
    default:
        if (a->dtype == EM_FLOAT64) {
            mt_scale_launch<IO, double> f = {(const double *)kc_ptr(a), h->max_norm, s, dev};
            return mt_walk<1>(l, mt_lists, f);
        }
        mt_scale_launch<IO, float> f = {(const float *)kc_ptr(a), h->max_norm, s, dev};
        return mt_walk<1>(l, mt_lists, f);
    }
}

static const char *const mt_names[EM_NMULTI] = {"sgd_step", "adam_step", "amp_unscale_", "multi_norm",
                                                "multi_scale_"};

/* the engine's promises, checked cheaply: one dtype and device, contiguous, one numel per index */
static int mt_check(em_multi_op op, const em_tensor_lists *l, em_tensor *a, em_tensor *b)
{
    static const int nlists[EM_NMULTI] = {3, 4, 1, 1, 1};
    const char *name = mt_names[op];
    if (l->n > INT32_MAX) return kc_error("%s: too many tensors (%lld)", name, (long long)l->n);
    const em_tensor *t0 = l->t[0][0];
    for (int64_t i = 0; i < l->n; i++) {
        for (int k = 0; k < nlists[op]; k++) {
            if (!l->t[k]) {
                if (k == 1 || k == 3 || (k == 2 && op == EM_MULTI_ADAM))
                    return kc_error("%s: CUDA kernel called without list %d", name, k);
                continue;
            }
            const em_tensor *t = l->t[k][i];
            if (t->dtype != t0->dtype || emf_numel(t) != emf_numel(l->t[0][i]) || !emf_is_contiguous(t) ||
                kc_device_of(t) != kc_device_of(t0))
                return kc_error("%s: CUDA kernel needs contiguous tensors of one dtype (%s) and device and, per "
                                "parameter, one numel: tensor %lld of list %d is %s", name, kc_dtype_name(t0->dtype),
                                (long long)i, k, kc_dtype_name(t->dtype));
        }
    }
    bool scalar_ok = true;
    if (op == EM_MULTI_UNSCALE)
        scalar_ok = a && b && a->dtype == EM_FLOAT32 && b->dtype == EM_FLOAT32 && emf_numel(a) == 1 &&
                    emf_numel(b) == 1 && kc_device_of(a) == kc_device_of(t0) && kc_device_of(b) == kc_device_of(t0);
    else if (op == EM_MULTI_NORM)
        scalar_ok = a && a->dtype == EM_FLOAT64 && emf_numel(a) == l->n + 1 && emf_is_contiguous(a) &&
                    kc_device_of(a) == kc_device_of(t0);
    else if (op == EM_MULTI_SCALE)
        scalar_ok = a && (a->dtype == EM_FLOAT32 || a->dtype == EM_FLOAT64) && emf_numel(a) == 1 &&
                    kc_device_of(a) == kc_device_of(t0);
    if (!scalar_ok) return kc_error("%s: CUDA kernel called with bad scalar operands", name);
    return 0;
}

extern "C" int kc_optim_multi(em_multi_op op, const em_tensor_lists *l, em_tensor *a, em_tensor *b,
                              const em_optim_hyper *h)
{
    if ((int)op < 0 || op >= EM_NMULTI) return kc_error("optim_multi: invalid op %d", (int)op);
    if (l->n <= 0) return 0;
    if (mt_check(op, l, a, b)) return -1;
    if (op == EM_MULTI_SGD && h->momentum != 0 && !l->t[2])
        return kc_error("sgd_step: momentum %g without momentum buffers", h->momentum);
    int dev = kc_device_of(l->t[0][0]);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    switch (l->t[0][0]->dtype) {
    case EM_FLOAT32: return mt_typed<mt_f32>(op, l, a, b, h, dev, s);
    case EM_FLOAT64: return mt_typed<mt_f64>(op, l, a, b, h, dev, s);
    case EM_FLOAT16: return mt_typed<mt_f16>(op, l, a, b, h, dev, s);
    case EM_BFLOAT16: return mt_typed<mt_bf16>(op, l, a, b, h, dev, s);
    default: return kc_error("%s: no CUDA kernel for %s", mt_names[op], kc_dtype_name(l->t[0][0]->dtype));
    }
}
