/*
 * kc.h — shared internals of the CUDA backend (kernels/). Every .cu file
 * includes this one header; the engine sees only the em_backend table that
 * backend.cu fills (engine/backend.h is the contract: shapes, dtypes and
 * index conventions are the same as for the CPU backend).
 *
 * Conventions inside kernels/:
 *  - Every family entry point runs on the stream of the device its tensors
 *    live on (kc_stream), never on the legacy default stream, and ends with
 *    `return kc_launched("op", dev)`, which checks the launch and, with
 *    EMBER_CUDA_SYNC=1, synchronises so an error is pinned to its op.
 *  - Errors go through kc_error (the engine's em_set_error, handed over at
 *    init: this shared object cannot see the engine's symbols).
 *  - Kernels never read or write out of bounds. A bad index found on the
 *    device (index ops, cross-entropy targets) is recorded in the device's
 *    error word (kc_report_bad_index) and raised as a Lua error at the next
 *    synchronisation (or at once with EMBER_CUDA_SYNC=1): checking it after
 *    every op would cost a round trip to the host per op.
 *  - Temporary device memory comes from the caching allocator (kc_alloc /
 *    kc_free); freeing is safe as soon as the work using it is queued,
 *    because all of a device's work runs in order on its one stream.
 *  - Prefer functor structs with a __device__ operator() over lambdas.
 */
#ifndef EMBER_KC_H
#define EMBER_KC_H

extern "C" {
#include "../engine/backend.h"
}

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

#include "../engine/formulas.h"

#define KC_THREADS 256

/* ---- one source for nvcc and for the emulated device (kernels/emu/) ----------
 * A launch is written KC_LAUNCH(grid, block, shared_bytes, stream, kernel)(args)
 * (nvcc: kernel<<<grid, block, shared_bytes, stream>>>(args); the kernel comes
 * last because its template arguments may hold commas), shared memory
 * KC_SHARED(type, name, [dims]) inside a kernel and KC_DYNAMIC_SHARED(type,
 * name) for the launch's dynamic area. KC_EMU_MARK tells the emulator which
 * bytes of the caching allocator's segments a tensor may use, in stream order;
 * it is nothing under nvcc. */
#ifdef EMBER_CUDA_EMU
#define KC_LAUNCH(grid, block, smem, stream, ...) \
    emu::make_launcher(#__VA_ARGS__, grid, block, smem, stream, __VA_ARGS__)
#define KC_SHARED(T, name, dims) EMU_SHARED(T, name, dims)
#define KC_DYNAMIC_SHARED(T, name) EMU_DYNAMIC_SHARED(T, name)
extern "C" void kc_emu_mark(cudaStream_t s, const void *p, size_t n, int usable);
#define KC_EMU_MARK(stream, p, n, usable) kc_emu_mark(stream, p, n, usable)
#else
#define KC_LAUNCH(grid, block, smem, stream, ...) __VA_ARGS__<<<grid, block, smem, stream>>>
#define KC_SHARED(T, name, dims) __shared__ __align__(16) T name dims
#define KC_DYNAMIC_SHARED(T, name) extern __shared__ __align__(16) T name[]
#define KC_EMU_MARK(stream, p, n, usable) ((void)0)
#endif

/* ---- host services and errors -------------------------------------------- */
extern const em_host_api *kc_host;
#define kc_error(...) (kc_host->set_error(__VA_ARGS__))

/* "op: CUDA error: <reason>"; returns -1 */
int kc_cuda_error(const char *op, cudaError_t e);
/* After a launch: -1 with an error if it failed; with sync debug on, also
 * synchronises and raises kernel faults and bad indices here. */
int kc_launched(const char *op, int device);
/* cudaStreamSynchronize, every host wait for the GPU goes through it or
 * wait_idle: when the watchdog ends the process, the abort it makes lets
 * a stuck wait go, and the thread stops here (em_hold_if_ending) instead
 * of returning with what the aborted work left. */
cudaError_t kc_synchronize(cudaStream_t s);
extern int kc_sync_debug;
extern int kc_allow_tf32;
extern int kc_deterministic;         /* ember.use_deterministic_algorithms */
extern int kc_cudnn_tf32;            /* ember.backends.cudnn.allow_tf32 */
extern int kc_cudnn_deterministic;   /* ember.backends.cudnn.deterministic */

/* ---- devices --------------------------------------------------------------- */
/* Makes `device` current and returns its stream (NULL with an error). */
cudaStream_t kc_stream(int device);
int kc_sm_count(int device);
/* Grid size for a grid-stride loop over n items with KC_THREADS threads. */
int kc_grid(int64_t n, int device);

/* ---- memory ---------------------------------------------------------------- */
void *kc_alloc(size_t n, int device);           /* caching allocator; NULL + error */
void kc_free(void *p, size_t n, int device);

/* ---- CUDA graphs (graph.cu; private pools in allocator.cu) ------------------ */
struct kc_mempool;
kc_mempool *kc_mempool_new(int device);         /* one reference */
void kc_mempool_retain(kc_mempool *m);
void kc_mempool_release(kc_mempool *m);         /* the last one hands its memory to the cache */
int kc_mempool_device(const kc_mempool *m);
void kc_mempool_capture(int device, kc_mempool *m);     /* NULL: allocations from the cache again */
/* Whether a capture is under way on the device: every path that would
 * synchronise or copy to the host checks this and calls kc_refuse_capture,
 * which ends and discards the capture (so the session goes on) and returns
 * -1 with "<message> (... the capture was ended and discarded ...)". */
bool kc_capturing(int device);
int kc_refuse_capture(int device, const char *fmt, ...);
/* Ends and discards the device's capture, if any (after a CUDA error in it). */
void kc_abort_capture(int device);
void kc_graph_entries(em_backend *b);           /* fills the backend's graph_* entries */

/* ---- asynchronous bad-index reports --------------------------------------- */
typedef enum kc_err_op {
    KC_ERR_INDEX_SELECT, KC_ERR_GATHER, KC_ERR_SCATTER, KC_ERR_SCATTER_ADD, KC_ERR_INDEX_ADD,
    KC_ERR_CROSS_ENTROPY, KC_NERR_OPS
} kc_err_op;

typedef struct kc_error_word {
    int flag;                 /* 0: nothing to report */
    int op;                   /* kc_err_op */
    long long value, position, limit;   /* the bad index, where (0-based), the valid 1..limit */
} kc_error_word;

/* The device's error word (device-visible pointer into mapped host memory). */
kc_error_word *kc_error_word_of(int device);
/* Raises a recorded report (after the work has finished): -1 with the message. */
int kc_check_error_word(int device);

__device__ inline void kc_report_bad_index(kc_error_word *w, int op, int64_t value, int64_t pos, int64_t limit)
{
    if (atomicCAS(&w->flag, 0, 1) == 0) {
        w->op = op;
        w->value = value;
        w->position = pos;
        w->limit = limit;
        __threadfence_system();
    }
}

/* ---- tensors ---------------------------------------------------------------- */
/* em_dtype_size, em_data_ptr: ember.h (inline); emf_numel, emf_is_contiguous: engine/formulas.h */
static inline int kc_device_of(const em_tensor *t) { return t->storage->device.index; }
static inline char *kc_ptr(const em_tensor *t) { return (char *)em_data_ptr(t); }
const char *kc_dtype_name(em_dtype d);

/* C++ types of the dtypes */
template <typename T> struct kc_tag { typedef T type; };

/* Calls F::template run<T>(args...) with T the C++ type of d (float, double,
 * int64_t, int32_t, int16_t, int8_t, uint8_t, bool, __half, __nv_bfloat16); an error naming
 * op for dtypes the caller's set excludes. */
#define KC_CASE(D, T, F, ...) case D: return F<T>(__VA_ARGS__);
#define KC_CASES_FLOAT(F, ...)                                                       \
    KC_CASE(EM_FLOAT32, float, F, __VA_ARGS__)                                       \
    KC_CASE(EM_FLOAT64, double, F, __VA_ARGS__)
#define KC_CASES_INTEGER(F, ...)                                                     \
    KC_CASE(EM_INT64, int64_t, F, __VA_ARGS__)                                       \
    KC_CASE(EM_INT32, int32_t, F, __VA_ARGS__)                                       \
    KC_CASE(EM_INT16, int16_t, F, __VA_ARGS__)                                       \
    KC_CASE(EM_INT8, int8_t, F, __VA_ARGS__)                                         \
    KC_CASE(EM_UINT8, uint8_t, F, __VA_ARGS__)                                       \
    KC_CASE(EM_BOOL, bool, F, __VA_ARGS__)
#define KC_CASES_HALF(F, ...)                                                        \
    KC_CASE(EM_FLOAT16, __half, F, __VA_ARGS__)                                      \
    KC_CASE(EM_BFLOAT16, __nv_bfloat16, F, __VA_ARGS__)
#define KC_NO_KERNEL(d, op) default: return kc_error("%s: no CUDA kernel for %s", op, kc_dtype_name(d));
#define KC_DISPATCH_FLOAT(d, op, F, ...)                                             \
    switch (d) { KC_CASES_FLOAT(F, __VA_ARGS__) KC_NO_KERNEL(d, op) }
#define KC_DISPATCH_NUMERIC(d, op, F, ...)                                           \
    switch (d) { KC_CASES_FLOAT(F, __VA_ARGS__) KC_CASES_INTEGER(F, __VA_ARGS__) KC_NO_KERNEL(d, op) }
#define KC_DISPATCH_ALL(d, op, F, ...)                                               \
    switch (d) {                                                                     \
    KC_CASES_FLOAT(F, __VA_ARGS__) KC_CASES_INTEGER(F, __VA_ARGS__)                  \
    KC_CASES_HALF(F, __VA_ARGS__) KC_NO_KERNEL(d, op)                                \
    }

/* Loads and stores through double/int64, for generic paths and casts. */
template <typename T> __device__ __host__ inline double kc_to_f64(T v) { return (double)v; }
template <> __device__ __host__ inline double kc_to_f64<__half>(__half v) { return (double)__half2float(v); }
template <> __device__ __host__ inline double kc_to_f64<__nv_bfloat16>(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
template <typename T> __device__ __host__ inline T kc_from_f64(double v) { return (T)v; }
template <> __device__ __host__ inline bool kc_from_f64<bool>(double v) { return v != 0; }
template <> __device__ __host__ inline __half kc_from_f64<__half>(double v) { return __double2half(v); }
template <> __device__ __host__ inline __nv_bfloat16 kc_from_f64<__nv_bfloat16>(double v) { return __double2bfloat16(v); }

/* Into and out of the compute type of a kernel templated on the element
 * type (attention, softmax): half types compute in float, float and double
 * in themselves. */
__device__ __forceinline__ float kc_ld(float v) { return v; }
__device__ __forceinline__ double kc_ld(double v) { return v; }
__device__ __forceinline__ float kc_ld(__half v) { return __half2float(v); }
__device__ __forceinline__ float kc_ld(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void kc_st(float *p, float v) { *p = v; }
__device__ __forceinline__ void kc_st(double *p, double v) { *p = v; }
__device__ __forceinline__ void kc_st(__half *p, float v) { *p = __float2half(v); }
__device__ __forceinline__ void kc_st(__nv_bfloat16 *p, float v) { *p = __float2bfloat16(v); }
__device__ __forceinline__ float kc_log(float v) { return logf(v); }
__device__ __forceinline__ double kc_log(double v) { return log(v); }
__device__ __forceinline__ float kc_exp(float v) { return expf(v); }
__device__ __forceinline__ double kc_exp(double v) { return exp(v); }
__device__ __forceinline__ float kc_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double kc_max(double a, double b) { return fmax(a, b); }

/* ---- strided iteration ------------------------------------------------------
 * N operands of one shape (ts[0] is usually the output), dims coalesced on
 * the host (size-1 dims dropped, neighbours merged where every operand's
 * strides allow), so a contiguous tensor is one dim. Strides are in elements
 * of each operand; 0 marks a broadcast operand. */
template <int N> struct kc_iter {
    int ndim;
    bool contiguous;            /* every operand dense row-major: element i at data + i */
    int64_t numel;
    int64_t sizes[EM_MAX_DIMS];
    int64_t strides[N][EM_MAX_DIMS];
    char *data[N];
    int esize[N];
};

/* Host: fills it from ts (all of the same shape). */
template <int N> void kc_iter_init(kc_iter<N> *it, const em_tensor *const *ts)
{
    const em_tensor *t0 = ts[0];
    it->numel = emf_numel(t0);
    for (int k = 0; k < N; k++) { it->data[k] = kc_ptr(ts[k]); it->esize[k] = (int)em_dtype_size(ts[k]->dtype); }
    int nd = 0;
    for (int d = 0; d < t0->ndim; d++) {
        if (t0->sizes[d] == 1) continue;
        if (nd > 0) {           /* merge d into the previous dim when every operand allows */
            bool merge = true;
            for (int k = 0; k < N && merge; k++)
                merge = it->strides[k][nd - 1] == ts[k]->strides[d] * t0->sizes[d];
            if (merge) {
                it->sizes[nd - 1] *= t0->sizes[d];
                for (int k = 0; k < N; k++) it->strides[k][nd - 1] = ts[k]->strides[d];
                continue;
            }
        }
        it->sizes[nd] = t0->sizes[d];
        for (int k = 0; k < N; k++) it->strides[k][nd] = ts[k]->strides[d];
        nd++;
    }
    it->ndim = nd;
    bool c = true;
    for (int k = 0; k < N && c; k++) c = nd == 0 || (nd == 1 && it->strides[k][0] == 1);
    it->contiguous = c;
}

/* The start of an elementwise entry point: the device of ts[0] made current,
 * its stream, and the iterator over ts. Returns -1 when the device cannot
 * start (the error set), 0 when there are no elements, 1 to go on. */
template <int N>
static inline int kc_prepare(const em_tensor *const *ts, kc_iter<N> *it, int *dev, cudaStream_t *s)
{
    *dev = kc_device_of(ts[0]);
    if (!(*s = kc_stream(*dev))) return -1;
    kc_iter_init(it, ts);
    return it->numel > 0 ? 1 : 0;
}

/* Device: pointers to the operands' element i (row-major position). */
template <int N> __device__ inline void kc_iter_ptrs(const kc_iter<N> &it, int64_t i, char **p)
{
    if (it.contiguous) {
        for (int k = 0; k < N; k++) p[k] = it.data[k] + i * it.esize[k];
        return;
    }
    int64_t off[N];
    for (int k = 0; k < N; k++) off[k] = 0;
    for (int d = it.ndim - 1; d >= 0; d--) {
        int64_t s = it.sizes[d], q = i / s, r = i - q * s;
        i = q;
        for (int k = 0; k < N; k++) off[k] += r * it.strides[k][d];
    }
    for (int k = 0; k < N; k++) p[k] = it.data[k] + off[k] * it.esize[k];
}

/* f(p) for every element, p[k] pointing at operand k's element. */
template <int N, typename F> __global__ void kc_foreach_kernel(kc_iter<N> it, F f)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < it.numel; i += step) {
        char *p[N];
        kc_iter_ptrs(it, i, p);
        f(p);
    }
}

template <int N, typename F> int kc_foreach(const char *op, const em_tensor *const *ts, F f)
{
    kc_iter<N> it;
    int dev;
    cudaStream_t s;
    if (int go = kc_prepare(ts, &it, &dev, &s); go <= 0) return go;
    KC_LAUNCH(kc_grid(it.numel, dev), KC_THREADS, 0, s, kc_foreach_kernel<N, F>)(it, f);
    return kc_launched(op, dev);
}

/* ---- lines along one dim (scan.cu, softmax.cu) -----------------------------
 * A line is one run of elements along dim of in and out (one shape); the
 * other dims, size-1 ones dropped and neighbours merged where both tensors'
 * strides allow, number the lines. */
struct kc_lines {
    const char *in;
    char *out;
    int nd;                                         /* coalesced dims other than dim */
    int64_t sz[EM_MAX_DIMS], ist[EM_MAX_DIMS], ost[EM_MAX_DIMS];
    int64_t n, xs, os;                              /* length and strides along dim */
    int64_t count;                                  /* number of lines */
};

/* Host: fills L for a non-empty in and out (a 0-d tensor is one line of one). */
static inline void kc_lines_init(kc_lines *L, const em_tensor *out, const em_tensor *in, int dim)
{
    L->in = kc_ptr(in);
    L->out = kc_ptr(out);
    L->n = in->ndim ? in->sizes[dim] : 1;
    L->xs = in->ndim ? in->strides[dim] : 1;
    L->os = in->ndim ? out->strides[dim] : 1;
    L->count = emf_numel(in) / L->n;
    int nd = 0;
    for (int d = 0; d < in->ndim; d++) {
        if (d == dim || in->sizes[d] == 1) continue;
        if (nd > 0 && L->ist[nd - 1] == in->strides[d] * in->sizes[d] &&
            L->ost[nd - 1] == out->strides[d] * in->sizes[d]) {
            L->sz[nd - 1] *= in->sizes[d];
            L->ist[nd - 1] = in->strides[d];
            L->ost[nd - 1] = out->strides[d];
            continue;
        }
        L->sz[nd] = in->sizes[d];
        L->ist[nd] = in->strides[d];
        L->ost[nd] = out->strides[d];
        nd++;
    }
    L->nd = nd;
}

/* Whether one thread per line reads coalesced: a line itself is strided,
 * but neighbouring lines are neighbouring elements (and at least 16 of them). */
static inline bool kc_column_lines(const kc_lines &L)
{
    return L.xs != 1 && L.nd > 0 && L.ist[L.nd - 1] == 1 && L.ost[L.nd - 1] == 1 && L.sz[L.nd - 1] >= 16;
}

/* Device: the offsets (in elements) of line l's first element in in and out. */
__device__ __forceinline__ void kc_line_offsets(const kc_lines &L, int64_t l, int64_t *io, int64_t *oo)
{
    int64_t a = 0, b = 0;
    for (int d = L.nd - 1; d >= 0; d--) {
        int64_t q = l / L.sz[d], r = l - q * L.sz[d];
        a += r * L.ist[d];
        b += r * L.ost[d];
        l = q;
    }
    *io = a;
    *oo = b;
}

/* ---- family entry points (one file each) ------------------------------------ */
extern "C" {
int kc_fill(em_tensor *out, double value);                                             /* fill.cu */
int kc_arange(em_tensor *out, double start, double step);
int kc_random(em_random_op op, em_tensor *out, uint64_t seed, uint64_t offset,     /* random.cu */
              const uint64_t *dev_state, double a, double b);
int kc_cast(em_tensor *dst, const em_tensor *src);                                     /* cast.cu */
int kc_unary(em_unary_op op, em_tensor *out, const em_tensor *a);                      /* unary.cu */
int kc_binary(em_binary_op op, em_tensor *out, const em_tensor *a, const em_tensor *b); /* binary.cu */
int kc_ternary(em_ternary_op op, em_tensor *out, const em_tensor *a, const em_tensor *b,
               const em_tensor *c, double s);                                          /* ternary.cu */
int kc_clamp(em_tensor *out, const em_tensor *a, double lo, double hi, bool has_lo, bool has_hi);
int kc_reduce(em_reduce_op op, em_tensor *out, em_tensor *idx, const em_tensor *in, int nreduce); /* reduce.cu */
int kc_scan(em_scan_op op, em_tensor *out, const em_tensor *in, int dim);              /* scan.cu */
int kc_softmax(em_softmax_op op, em_tensor *out, const em_tensor *in, int dim);        /* softmax.cu */
int kc_cross_entropy(em_tensor *loss, em_tensor *lse, em_tensor *roww, const em_tensor *x,
                     const em_tensor *t, const em_tensor *w, int64_t ignore_index, double eps); /* xent.cu */
int kc_cross_entropy_backward(em_tensor *gx, const em_tensor *g, const em_tensor *x, const em_tensor *lse,
                              const em_tensor *t, const em_tensor *w, int64_t ignore_index, double eps);
int kc_index(em_index_op op, em_tensor *out, const em_tensor *in, int dim, const em_tensor *idx); /* index.cu */
int kc_nonzero(em_tensor *out, const em_tensor *in);
int kc_sort(em_tensor *values, em_tensor *indices, const em_tensor *in, int dim, bool descending,
            bool stable);                                                              /* sort.cu */
int kc_gemm(em_tensor *out, const em_tensor *a, const em_tensor *b, double alpha, double beta); /* gemm.cu */
int kc_linear(em_linear_op op, em_tensor *out, em_tensor *aux, const em_tensor *a, const em_tensor *b,
              em_tensor *bias);                                                        /* gemm.cu */
int kc_optim(em_optim_op op, em_tensor *p, const em_tensor *g, em_tensor *s1, em_tensor *s2,
             const em_optim_hyper *h);                                                 /* optim.cu */
int kc_optim_multi(em_multi_op op, const em_tensor_lists *l, em_tensor *a, em_tensor *b,
                   const em_optim_hyper *h);                                           /* optim.cu */
}

/* ---- convolution, pooling, normalisation (contiguous float32/float64 only) ----
 * (kc_pooling, not kc_pool: that is allocator.cu's per-device pool type) */
extern "C" {
int kc_conv(em_conv_op op, em_tensor *out, const em_tensor *a, const em_tensor *b,
            const em_conv_params *p);                                                  /* conv.cu (cuDNN) */
int kc_pooling(em_pool_op op, em_tensor *out, em_tensor *idx, const em_tensor *in,
               const em_pool_params *p);                                               /* pooling.cu */
int kc_pooling_backward(em_pool_op op, em_tensor *gin, const em_tensor *gout, const em_pool_params *p);
int kc_norm(em_norm_op op, em_tensor *y, em_tensor *mean, em_tensor *var, const em_tensor *x,
            const em_tensor *w, const em_tensor *b, const em_norm_params *p);          /* norm.cu */
int kc_norm_backward(em_norm_op op, em_tensor *gx, em_tensor *gw, em_tensor *gb, const em_tensor *gy,
                     const em_tensor *x, const em_tensor *mean, const em_tensor *rstd, const em_tensor *w,
                     const em_norm_params *p);
}

/* ---- attention (attention.cu: float32, float64, float16, bfloat16; D, Dv <= 128) ---- */
extern "C" {
int kc_attention(em_tensor *out, em_tensor *lse, const em_tensor *q, const em_tensor *k, const em_tensor *v,
                 const em_tensor *mask, const em_attn_params *p);
int kc_attention_backward(em_tensor *gq, em_tensor *gk, em_tensor *gv, const em_tensor *gout, const em_tensor *q,
                          const em_tensor *k, const em_tensor *v, const em_tensor *out, const em_tensor *lse,
                          const em_tensor *mask, const em_attn_params *p);
}

#endif
