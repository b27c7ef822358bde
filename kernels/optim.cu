/* optim.cu — the CUDA fused optimizer steps (SGD with momentum/nesterov,
 * Adam/AdamW): one pass over the parameter, its gradient and its state; the
 * twin of engine/cpu/optim.c. The update rules and h[] are in engine/optim.h.
 *
 * Results match the CPU bit for bit: the coefficients are computed in double
 * on the host exactly as the CPU computes them (rounded once to float for
 * float32), and the per-element arithmetic uses the _rn intrinsics in the
 * CPU's order of operations. The intrinsics matter: nvcc would otherwise fuse
 * a*b + c into one FMA, which rounds once where the CPU (built without
 * contraction, -std=c11) rounds twice.
 *
 * The switches (weight decay, momentum buffer, first step, nesterov, L2) are
 * template parameters, so every variant is its own branch-free kernel. When
 * every operand is 16-byte aligned, elements move as float4 / double2. */
#include "kc.h"

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

/* W elements loaded or stored as one (16-byte when W * sizeof(T) == 16) access */
template <typename T, int W> struct alignas(sizeof(T) * W) optim_pack {
    T v[W];
};

/* ---- SGD ------------------------------------------------------------------------------ */

template <typename T> struct sgd_coef {
    T lr, sign, wd, mom, keep;
};

template <typename T, bool WD, bool BUF, bool FIRST, bool NEST>
__device__ __forceinline__ void sgd_one(T &p, T g, T &b, const sgd_coef<T> &c)
{
    T d = op_mul(c.sign, g);
    if (WD) d = op_add(d, op_mul(c.wd, p));
    if (BUF) {
        b = FIRST ? d : op_add(op_mul(c.mom, b), op_mul(c.keep, d));
        d = NEST ? op_add(d, op_mul(c.mom, b)) : b;
    }
    p = op_sub(p, op_mul(c.lr, d));
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
    sgd_kernel<T, W, WD, BUF, FIRST, NEST><<<kc_grid(n / W > 0 ? n / W : n, dev), KC_THREADS, 0, s>>>(p, g, buf, n, c);
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

template <typename T> struct adam_coef {
    T sign, l2, decay, b1, c1, b2, c2, bc2s, eps, nss;
};

template <typename T, bool L2>
__device__ __forceinline__ void adam_one(T &p, T g, T &m, T &v, const adam_coef<T> &c)
{
    T gi = op_mul(c.sign, g);
    T pi = p;
    if (L2) gi = op_add(gi, op_mul(c.l2, pi));
    pi = op_mul(pi, c.decay);
    T mi = op_add(op_mul(c.b1, m), op_mul(c.c1, gi));
    T vi = op_add(op_mul(c.b2, v), op_mul(op_mul(c.c2, gi), gi));
    m = mi;
    v = vi;
    T denom = op_add(op_div(op_sqrt(vi), c.bc2s), c.eps);
    p = op_add(pi, op_div(op_mul(c.nss, mi), denom));
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
    if (l2) adam_kernel<T, W, true><<<grid, KC_THREADS, 0, s>>>(p, g, m, v, n, c);
    else adam_kernel<T, W, false><<<grid, KC_THREADS, 0, s>>>(p, g, m, v, n, c);
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

static int unscale(em_tensor *g, em_tensor *flag, const double *h, int nh)
{
    const char *name = "amp_unscale_";
    if (nh != 1) return kc_error("%s: expected 1 hyper-parameter, got %d", name, nh);
    if ((g->dtype != EM_FLOAT32 && g->dtype != EM_FLOAT64) || !kc_is_contiguous(g))
        return kc_error("%s: CUDA kernel needs a contiguous float32 or float64 gradient, got %s", name,
                        kc_dtype_name(g->dtype));
    if (!flag || flag->dtype != EM_FLOAT32 || kc_numel(flag) != 1 || kc_device_of(flag) != kc_device_of(g))
        return kc_error("%s: CUDA kernel needs a one-element float32 flag on the gradient's device", name);
    int64_t n = kc_numel(g);
    if (n == 0) return 0;
    int dev = kc_device_of(g);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    float inv = (float)h[0], *found = (float *)kc_ptr(flag);
    if (g->dtype == EM_FLOAT32)
        unscale_kernel<float><<<kc_grid(n, dev), KC_THREADS, 0, s>>>((float *)kc_ptr(g), n, inv, found);
    else
        unscale_kernel<double><<<kc_grid(n, dev), KC_THREADS, 0, s>>>((double *)kc_ptr(g), n, (double)inv, found);
    return kc_launched(name, dev);
}

/* ---- entry -------------------------------------------------------------------------------- */

static bool aligned16(const void *q) { return !q || ((uintptr_t)q & 15) == 0; }

template <typename T>
static int optim_typed(em_optim_op op, em_tensor *pt, const em_tensor *gt, em_tensor *s1, em_tensor *s2,
                       const double *h, int dev, cudaStream_t s)
{
    constexpr int W = 16 / (int)sizeof(T);      /* 4 floats or 2 doubles */
    int64_t n = kc_numel(pt);
    T *p = (T *)kc_ptr(pt);
    const T *g = (const T *)kc_ptr(gt);
    if (op == EM_OPTIM_SGD) {
        T *buf = h[1] != 0 && s1 ? (T *)kc_ptr(s1) : NULL;     /* no buffer without momentum */
        sgd_coef<T> c;
        c.lr = (T)h[0];
        c.sign = h[6] != 0 ? T(-1) : T(1);
        c.wd = (T)h[3];
        c.mom = (T)h[1];
        c.keep = (T)(1 - h[2]);
        bool wd = h[3] != 0, first = h[5] != 0, nest = h[4] != 0;
        if (aligned16(p) && aligned16(g) && aligned16(buf))
            sgd_pick_wd<T, W>(p, g, buf, n, c, wd, first, nest, dev, s);
        else
            sgd_pick_wd<T, 1>(p, g, buf, n, c, wd, first, nest, dev, s);
        return kc_launched("sgd_step", dev);
    }
    double lr = h[0], wd = h[4];
    bool decoupled = h[5] != 0;
    double l2 = decoupled ? 0 : wd, decay = decoupled ? 1 - lr * wd : 1;
    adam_coef<T> c;
    c.sign = h[8] != 0 ? T(-1) : T(1);
    c.l2 = (T)l2;
    c.decay = (T)decay;
    c.b1 = (T)h[1];
    c.c1 = (T)(1 - h[1]);
    c.b2 = (T)h[2];
    c.c2 = (T)(1 - h[2]);
    c.bc2s = (T)sqrt(h[7]);
    c.eps = (T)h[3];
    c.nss = (T)(-(lr / h[6]));
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
    if (t->dtype != p->dtype || kc_numel(t) != kc_numel(p) || !kc_is_contiguous(t) ||
        kc_device_of(t) != kc_device_of(p))
        return kc_error("%s: CUDA kernel needs a contiguous %s of the parameter's dtype %s and device "
                        "(got %s)", op, what, kc_dtype_name(p->dtype), kc_dtype_name(t->dtype));
    return 0;
}

extern "C" int kc_optim(em_optim_op op, em_tensor *p, const em_tensor *g, em_tensor *s1, em_tensor *s2,
                        const double *h, int nh)
{
    if (op == EM_OPTIM_UNSCALE) return unscale(p, s1, h, nh);
    if (op != EM_OPTIM_SGD && op != EM_OPTIM_ADAM) return kc_error("optim: invalid op %d", (int)op);
    const char *name = op == EM_OPTIM_SGD ? "sgd_step" : "adam_step";
    if (p->dtype != EM_FLOAT32 && p->dtype != EM_FLOAT64)
        return kc_error("%s: CUDA kernel supports float32 and float64 parameters, got %s", name,
                        kc_dtype_name(p->dtype));
    if (check_operand(name, "parameter", p, p) || check_operand(name, "gradient", p, g)) return -1;
    if (op == EM_OPTIM_SGD) {
        if (nh != 7) return kc_error("%s: expected 7 hyper-parameters, got %d", name, nh);
        if (h[1] != 0) {
            if (!s1) return kc_error("%s: momentum %g without a momentum buffer", name, h[1]);
            if (check_operand(name, "momentum buffer", p, s1)) return -1;
        }
    } else {
        if (nh != 9) return kc_error("%s: expected 9 hyper-parameters, got %d", name, nh);
        if (check_operand(name, "exp_avg", p, s1) || check_operand(name, "exp_avg_sq", p, s2)) return -1;
    }
    if (kc_numel(p) == 0) return 0;
    int dev = kc_device_of(p);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    if (p->dtype == EM_FLOAT32) return optim_typed<float>(op, p, g, s1, s2, h, dev, s);
    return optim_typed<double>(op, p, g, s1, s2, h, dev, s);
}
