/* pooling.cu — the pooling family (backend.h em_pool_op): max pooling with
 * int64 1-based indices, average pooling and its backward, plain or
 * adaptive windows, 1 to 3 spatial dims.
 *
 * Own kernels rather than cuDNN's: cuDNN's max pooling gives no indices,
 * and the window and divisor rules must be PyTorch's exactly (backend.h).
 * Every problem is seen as 3-D: missing leading spatial dims have size 1,
 * kernel 1, stride 1, no padding, so one kernel serves 1, 2 and 3 dims.
 * One thread per output element (forward) or input element (backward), in a
 * grid-stride loop; the backward gathers from the outputs whose windows hold
 * an input position, so it needs no atomics and is deterministic. */
#include "kc.h"

#include <math.h>

typedef struct pool_geom {
    int64_t I[3], O[3], k[3], s[3], p[3], d[3];
    int64_t planes;             /* N * C */
    int64_t isz, osz;           /* elements of one input / output plane */
    int64_t divisor;            /* > 0: divisor_override */
    bool adaptive, include_pad;
} pool_geom;

/* The taps of output o along dim a: positions first + j*step, j < taps, all
 * inside [0, I); count is what an average divides by along this dim. */
typedef struct taps {
    int64_t first, step, n, count;
} taps;

static __device__ inline taps window(const pool_geom &g, int a, int64_t o)
{
    taps t;
    int64_t I = g.I[a];
    if (g.adaptive) {
        int64_t O = g.O[a];
        int64_t lo = o * I / O, hi = ((o + 1) * I + O - 1) / O;
        t.first = lo;
        t.step = 1;
        t.n = hi - lo;
        t.count = t.n;
        return t;
    }
    int64_t k = g.k[a], s = g.s[a], p = g.p[a], d = g.d[a];
    int64_t start = o * s - p;
    int64_t jlo = start < 0 ? (-start + d - 1) / d : 0;
    int64_t jhi = I - 1 - start >= 0 ? (I - 1 - start) / d : -1;
    if (jhi > k - 1) jhi = k - 1;
    t.first = start + jlo * d;
    t.step = d;
    t.n = jhi >= jlo ? jhi - jlo + 1 : 0;
    if (g.include_pad) {
        /* positions inside [-p, I + p); start >= -p always */
        int64_t room = I + p - 1 - start;
        int64_t c = room >= 0 ? room / d + 1 : 0;
        t.count = c < k ? c : k;
    } else {
        t.count = t.n;
    }
    return t;
}

/* Output element i of the planes' outputs: its plane and its window's taps
 * along depth, height and width. */
typedef struct pool_window {
    int64_t plane;
    taps d, h, w;
} pool_window;

static __device__ inline pool_window output_window(const pool_geom &g, int64_t i)
{
    pool_window win;
    win.plane = i / g.osz;
    int64_t r = i - win.plane * g.osz;
    int64_t ow = r % g.O[2], oh = (r / g.O[2]) % g.O[1], od = r / (g.O[2] * g.O[1]);
    win.d = window(g, 0, od);
    win.h = window(g, 1, oh);
    win.w = window(g, 2, ow);
    return win;
}

template <typename T> static __device__ inline bool is_nan(T v) { return v != v; }

/* float16 and bfloat16 are compared and summed in float32, and an average is
 * rounded to the storage type once, as PyTorch's CUDA kernels do */
template <typename T> struct pool_acc { typedef T A; };
template <> struct pool_acc<__half> { typedef float A; };
template <> struct pool_acc<__nv_bfloat16> { typedef float A; };

template <typename T>
__global__ void max_pool_kernel(pool_geom g, const T *in, T *out, int64_t *idx)
{
    int64_t total = g.planes * g.osz, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        pool_window win = output_window(g, i);
        typedef typename pool_acc<T>::A A;
        const T *src = in + win.plane * g.isz;
        A best = (A)-INFINITY;
        int64_t besti = -1;     /* an empty window (never made by the engine): -inf and index 0, as the CPU */
        bool nan_seen = false;
        for (int64_t a = 0; a < win.d.n && !nan_seen; a++) {
            int64_t z = win.d.first + a * win.d.step;
            for (int64_t b = 0; b < win.h.n && !nan_seen; b++) {
                int64_t y = win.h.first + b * win.h.step;
                int64_t row = (z * g.I[1] + y) * g.I[2];
                for (int64_t c = 0; c < win.w.n; c++) {
                    int64_t pos = row + win.w.first + c * win.w.step;
                    A v = (A)src[pos];
                    if (is_nan(v)) { best = v; besti = pos; nan_seen = true; break; }   /* the first NaN wins */
                    if (v > best || (a == 0 && b == 0 && c == 0)) { best = v; besti = pos; }
                }
            }
        }
        out[i] = (T)best;
        if (idx) idx[i] = besti + 1;
    }
}

template <typename T>
__global__ void avg_pool_kernel(pool_geom g, const T *in, T *out)
{
    int64_t total = g.planes * g.osz, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        pool_window win = output_window(g, i);
        typedef typename pool_acc<T>::A A;
        const T *src = in + win.plane * g.isz;
        A sum = 0;
        for (int64_t a = 0; a < win.d.n; a++) {
            int64_t z = win.d.first + a * win.d.step;
            for (int64_t b = 0; b < win.h.n; b++) {
                int64_t row = (z * g.I[1] + win.h.first + b * win.h.step) * g.I[2];
                for (int64_t c = 0; c < win.w.n; c++) sum += (A)src[row + win.w.first + c * win.w.step];
            }
        }
        int64_t div = g.divisor > 0 ? g.divisor : win.d.count * win.h.count * win.w.count;
        out[i] = (T)(sum / (A)div);
    }
}

/* The outputs o along dim a whose window holds input position x: o in
 * [lo, hi], those with (x + p - o s) a multiple of d below k d. */
static __device__ inline void outputs_of(const pool_geom &g, int a, int64_t x, int64_t *lo, int64_t *hi)
{
    int64_t O = g.O[a];
    if (g.adaptive) {
        int64_t I = g.I[a];
        *lo = x * O / I;
        *hi = ((x + 1) * O + I - 1) / I - 1;
    } else {
        int64_t k = g.k[a], s = g.s[a], p = g.p[a], d = g.d[a];
        int64_t top = x + p;                        /* o s <= top and o s >= top - (k-1) d */
        int64_t bottom = top - (k - 1) * d;
        *lo = bottom <= 0 ? 0 : (bottom + s - 1) / s;
        *hi = top / s;
    }
    if (*hi > O - 1) *hi = O - 1;
}

static __device__ inline bool holds(const pool_geom &g, int a, int64_t o, int64_t x)
{
    if (g.adaptive) return true;
    int64_t r = x + g.p[a] - o * g.s[a];
    return r >= 0 && r % g.d[a] == 0 && r / g.d[a] < g.k[a];
}

template <typename T>
__global__ void avg_pool_backward_kernel(pool_geom g, const T *gout, T *gin)
{
    int64_t total = g.planes * g.isz, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        int64_t plane = i / g.isz, r = i - plane * g.isz;
        int64_t x = r % g.I[2], y = (r / g.I[2]) % g.I[1], z = r / (g.I[2] * g.I[1]);
        int64_t dlo, dhi, hlo, hhi, wlo, whi;
        outputs_of(g, 0, z, &dlo, &dhi);
        outputs_of(g, 1, y, &hlo, &hhi);
        outputs_of(g, 2, x, &wlo, &whi);
        typedef typename pool_acc<T>::A A;
        const T *src = gout + plane * g.osz;
        A sum = 0;
        for (int64_t od = dlo; od <= dhi; od++) {
            if (!holds(g, 0, od, z)) continue;
            int64_t cd = window(g, 0, od).count;
            for (int64_t oh = hlo; oh <= hhi; oh++) {
                if (!holds(g, 1, oh, y)) continue;
                int64_t ch = window(g, 1, oh).count;
                for (int64_t ow = wlo; ow <= whi; ow++) {
                    if (!holds(g, 2, ow, x)) continue;
                    int64_t div = g.divisor > 0 ? g.divisor : cd * ch * window(g, 2, ow).count;
                    sum += (A)src[(od * g.O[1] + oh) * g.O[2] + ow] / (A)div;
                }
            }
        }
        gin[i] = (T)sum;
    }
}

/* in: [N, C, I...], out: [N, C, O...] (the engine's shapes) */
static int make_geom(pool_geom *g, const em_tensor *in, const em_tensor *out, const em_pool_params *p,
                     const char *name)
{
    int ns = p->nspatial;
    if (ns < 1 || ns > 3 || in->ndim != ns + 2 || out->ndim != ns + 2)
        return kc_error("%s: expected [N, C] plus 1 to 3 spatial dims", name);
    int lead = 3 - ns;
    for (int a = 0; a < 3; a++) {
        g->I[a] = g->O[a] = g->k[a] = g->s[a] = g->d[a] = 1;
        g->p[a] = 0;
    }
    for (int i = 0; i < ns; i++) {
        int a = lead + i;
        g->I[a] = in->sizes[2 + i];
        g->O[a] = out->sizes[2 + i];
        if (!p->adaptive) {
            g->k[a] = p->kernel[i];
            g->s[a] = p->stride[i];
            g->p[a] = p->padding[i];
            g->d[a] = p->dilation[i];
            if (g->k[a] < 1 || g->s[a] < 1 || g->d[a] < 1 || g->p[a] < 0)
                return kc_error("%s: bad kernel_size, stride, padding or dilation", name);
        }
    }
    g->planes = in->sizes[0] * in->sizes[1];
    g->isz = g->I[0] * g->I[1] * g->I[2];
    g->osz = g->O[0] * g->O[1] * g->O[2];
    g->divisor = p->divisor;
    g->adaptive = p->adaptive;
    g->include_pad = p->count_include_pad && !p->adaptive;
    return 0;
}

template <typename T> static int run_pool(em_pool_op op, em_tensor *out, em_tensor *idx, const em_tensor *in,
                                          const pool_geom &g, int dev, cudaStream_t s)
{
    int64_t n = emf_numel(out);
    if (op == EM_POOL_MAX)
        KC_LAUNCH(kc_grid(n, dev), KC_THREADS, 0, s, max_pool_kernel<T>)(g, (const T *)kc_ptr(in), (T *)kc_ptr(out),
                                                                  idx ? (int64_t *)kc_ptr(idx) : NULL);
    else
        KC_LAUNCH(kc_grid(n, dev), KC_THREADS, 0, s, avg_pool_kernel<T>)(g, (const T *)kc_ptr(in), (T *)kc_ptr(out));
    return kc_launched(op == EM_POOL_MAX ? "max_pool" : "avg_pool", dev);
}

int kc_pooling(em_pool_op op, em_tensor *out, em_tensor *idx, const em_tensor *in, const em_pool_params *p)
{
    const char *name = op == EM_POOL_MAX ? "max_pool" : "avg_pool";
    if (op != EM_POOL_MAX && op != EM_POOL_AVG) return kc_error("pool: unknown op %d", (int)op);
    int dev = kc_device_of(out);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    pool_geom g;
    if (make_geom(&g, in, out, p, name)) return -1;
    if (idx && (idx->dtype != EM_INT64 || emf_numel(idx) != emf_numel(out)))
        return kc_error("%s: indices must be int64 with the output's shape", name);
    if (emf_numel(out) == 0) return 0;
    if (g.isz == 0) return kc_error("%s: empty input planes with a non-empty output", name);
    switch (out->dtype) {
    KC_CASES_FLOAT(run_pool, op, out, idx, in, g, dev, s)
    KC_CASES_HALF(run_pool, op, out, idx, in, g, dev, s)
    KC_NO_KERNEL(out->dtype, name)
    }
}

template <typename T> static int run_pool_backward(em_tensor *gin, const em_tensor *gout, const pool_geom &g,
                                                   int dev, cudaStream_t s)
{
    int64_t n = emf_numel(gin);
    KC_LAUNCH(kc_grid(n, dev), KC_THREADS, 0, s, avg_pool_backward_kernel<T>)(g, (const T *)kc_ptr(gout),
                                                                       (T *)kc_ptr(gin));
    return kc_launched("avg_pool backward", dev);
}

int kc_pooling_backward(em_pool_op op, em_tensor *gin, const em_tensor *gout, const em_pool_params *p)
{
    if (op != EM_POOL_AVG)
        return kc_error("pool backward: only average pooling has a backward kernel (max's is a scatter-add)");
    int dev = kc_device_of(gin);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    pool_geom g;
    if (make_geom(&g, gin, gout, p, "avg_pool backward")) return -1;
    if (emf_numel(gin) == 0) return 0;
    if (g.osz == 0 || g.planes == 0) return kc_fill(gin, 0);
    switch (gin->dtype) {
    KC_CASES_FLOAT(run_pool_backward, gin, gout, g, dev, s)
    KC_CASES_HALF(run_pool_backward, gin, gout, g, dev, s)
    KC_NO_KERNEL(gin->dtype, "avg_pool backward")
    }
}
