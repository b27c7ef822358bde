/* cpu.h — internals of the CPU backend (engine/cpu/). Only the backend
 * table in backend.c is visible outside this folder. */
#ifndef EMBER_CPU_H
#define EMBER_CPU_H

#include "../internal.h"
#include "../formulas.h"

#include <math.h>
#include <string.h>

/* ---- the elementwise iterator --------------------------------------------
 * cpu_foreach walks `nops` tensors of one shape (ts[0] is usually the output)
 * and calls `fn` on runs of elements along the innermost (coalesced) dim:
 *     fn(ptrs, strides, n, ctx)
 * ptrs[k] points at the first element of the run of operand k and
 * strides[k] is its step in BYTES (0 for a broadcast operand). Dims are
 * coalesced first, so a contiguous tensor is one run of numel elements and
 * `strides[k] == element size` marks the fast path. Above
 * CPU_PARALLEL_MIN elements the work is split over the pool's threads by ranges
 * of the flattened index (so fn must not assume it sees a whole row). */
typedef void (*cpu_loop_fn)(char **ptrs, const int64_t *strides, int64_t n, void *ctx);

#define CPU_MAX_OPS 5
#define CPU_PARALLEL_MIN 65536

void cpu_foreach(int nops, const em_tensor *const *ts, cpu_loop_fn fn, void *ctx);
/* The same for an elementwise op whose operands 1.. are inputs read element
 * by element (unary, binary, ternary, clamp, cast): a large one with its last
 * two dims swapped, into a contiguous ts[0], is copied by blocks first (iter.c,
 * worth_staging). Not for views with a meaning of their own (index's lines). */
void cpu_foreach_elementwise(int nops, const em_tensor *const *ts, cpu_loop_fn fn, void *ctx);
/* The same, never multi-threaded (for order-dependent loops). */
void cpu_foreach_serial(int nops, const em_tensor *const *ts, cpu_loop_fn fn, void *ctx);
/* The same, split over threads only between lines: each run of `line`
 * consecutive positions (row-major over ts[0]'s shape) is seen by one
 * thread, in order. For loops whose order matters only within a line. */
void cpu_foreach_lines(int nops, const em_tensor *const *ts, int64_t line, cpu_loop_fn fn, void *ctx);

/* ---- threads (pool.c) ------------------------------------------------------
 * cpu_parallel_for(n, work, align, fn, ctx) calls fn(lo, hi, ctx) on
 * disjoint ranges covering [0, n) of n work items, on the pool's threads
 * and the caller's. `work` is the job's size in elements: below
 * CPU_PARALLEL_MIN the caller runs fn(0, n) alone. Range starts are
 * multiples of `align`. Ranges may run in any order on any thread, so fn
 * writes only what its range owns; how items are grouped into ranges
 * varies with the load, so an order-dependent result (a sum of partial
 * sums) must be split by the caller into cpu_threads() fixed parts, each
 * an item. cpu_threads() is the configured thread count (em_set_num_threads,
 * EMBER_NUM_THREADS or OMP_NUM_THREADS, else the CPUs this process may use). */
typedef void (*cpu_range_fn)(int64_t lo, int64_t hi, void *ctx);
void cpu_parallel_for(int64_t n, int64_t work, int64_t align, cpu_range_fn fn, void *ctx);
int cpu_threads(void);
void cpu_set_threads(int n);

/* Element ranges [lo, hi) covering [0, n) (starts at multiples of 64): one
 * range when n is small. For kernels that index elements themselves. */
void cpu_for_ranges(int64_t n, cpu_range_fn fn, void *ctx);

/* True when the loop over n elements should use threads. */
static inline int cpu_parallel(int64_t n) { return n >= CPU_PARALLEL_MIN; }

/* ---- float16/bfloat16 chunks (copy.c) -------------------------------------
 * n values at src (stride in bytes) widened to float32, and float32 values
 * rounded once (to nearest, ties to even; NaN stays NaN) into dst: the
 * casts' own conversions. */
void cpu_half_to_f32(float *dst, const char *src, int64_t stride, int64_t n, em_dtype d);
void cpu_f32_to_half(char *dst, int64_t stride, const float *src, int64_t n, em_dtype d);

/* ---- integer and bool chunks (copy.c) --------------------------------------
 * n values at p (stride in bytes) of int64, int32, uint8 or bool widened to
 * int64 (bool as 0/1), and int64 values stored back truncated to the type's
 * width (its wrap-around; bool as value != 0): the integer kernels compute
 * in int64 a chunk at a time. */
void cpu_load_ints(int64_t *d, const char *p, int64_t stride, int64_t n, em_dtype dt);
void cpu_store_ints(char *p, int64_t stride, const int64_t *s, int64_t n, em_dtype dt);

/* ---- scalar access for generic (slow) paths ------------------------------ */
double cpu_load_f64(const void *p, em_dtype d);
int64_t cpu_load_i64(const void *p, em_dtype d);
void cpu_store_f64(void *p, em_dtype d, double v);
void cpu_store_i64(void *p, em_dtype d, int64_t v);

/* Element pointer at a multi-index (sizes/strides of t). */
static inline char *cpu_elem(const em_tensor *t, const int64_t *idx)
{
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) off += idx[i] * t->strides[i];
    return (char *)t->storage->data + off * (int64_t)em_dtype_size(t->dtype);
}

/* Element offset of row r of t along `dim` (softmax, scans): the dims other
 * than dim, row-major. */
/* n elements of esz bytes (1, 2, 4 or 8), p + i * stride, into the packed
 * dst (cpu_gather), or from the packed src to p + i * stride (cpu_scatter):
 * the strided operands of the elementwise loops, a chunk at a time */
static inline void cpu_gather(void *dst, const char *p, int64_t stride, int64_t n, size_t esz)
{
    switch (esz) {
    case 8: { uint64_t *d = dst; for (int64_t i = 0; i < n; i++) d[i] = *(const uint64_t *)(p + i * stride); break; }
    case 4: { uint32_t *d = dst; for (int64_t i = 0; i < n; i++) d[i] = *(const uint32_t *)(p + i * stride); break; }
    case 2: { uint16_t *d = dst; for (int64_t i = 0; i < n; i++) d[i] = *(const uint16_t *)(p + i * stride); break; }
    default: { uint8_t *d = dst; for (int64_t i = 0; i < n; i++) d[i] = *(const uint8_t *)(p + i * stride); break; }
    }
}

static inline void cpu_scatter(char *p, int64_t stride, const void *src, int64_t n, size_t esz)
{
    switch (esz) {
    case 8: { const uint64_t *s = src; for (int64_t i = 0; i < n; i++) *(uint64_t *)(p + i * stride) = s[i]; break; }
    case 4: { const uint32_t *s = src; for (int64_t i = 0; i < n; i++) *(uint32_t *)(p + i * stride) = s[i]; break; }
    case 2: { const uint16_t *s = src; for (int64_t i = 0; i < n; i++) *(uint16_t *)(p + i * stride) = s[i]; break; }
    default: { const uint8_t *s = src; for (int64_t i = 0; i < n; i++) *(uint8_t *)(p + i * stride) = s[i]; break; }
    }
}

static inline int64_t cpu_row_offset(const em_tensor *t, int dim, int64_t r)
{
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (d == dim) continue;
        off += (r % t->sizes[d]) * t->strides[d];
        r /= t->sizes[d];
    }
    return off;
}

/* ---- fast math shared by kernels ----------------------------------------- */
/* exp for float32, written so that loops over it vectorise (libm's expf
 * does not): exp(x) = 2^n * exp(r) with n = round(x / ln 2), |r| <= ln2 / 2,
 * and a degree-6 polynomial for exp(r) (the Cephes coefficients, about 1 ulp).
 * Results below 2^-126 flush to 0, which softmax cannot tell apart. */
static inline float cpu_exp_f32(float x)
{
    float c = x > -87.0f ? x : -87.0f;     /* NaN too: the integer part stays defined */
    c = c < 88.0f ? c : 88.0f;
    float n = rintf(c * 1.44269504088896341f);
    float r = c - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    y *= scale;
    y = x < -87.0f ? 0.0f : y;
    y = x > 88.0f ? INFINITY : y;
    return x != x ? x : y;
}

/* ---- kernels (one file per family) --------------------------------------- */
void *cpu_alloc(size_t nbytes, int device_index);
void cpu_free(void *p, size_t nbytes, int device_index);
void cpu_empty_cache(int device_index);
int cpu_memcpy(void *dst, const void *src, size_t n, int device_index);
int cpu_synchronize(int device_index);
int cpu_fill(em_tensor *out, double value);
int cpu_arange(em_tensor *out, double start, double step);
int cpu_cast(em_tensor *dst, const em_tensor *src);                    /* copy.c */
int cpu_random(em_random_op op, em_tensor *out, uint64_t seed, uint64_t offset,   /* random.c */
               const uint64_t *dev_state, double a, double b);
int cpu_unary(em_unary_op op, em_tensor *out, const em_tensor *a);     /* unary.c */
int cpu_binary(em_binary_op op, em_tensor *out, const em_tensor *a,
               const em_tensor *b);                                      /* binary.c */
int cpu_ternary(em_ternary_op op, em_tensor *out, const em_tensor *a,
                const em_tensor *b, const em_tensor *c, double s);      /* ternary.c */
int cpu_clamp(em_tensor *out, const em_tensor *a, double lo, double hi,
              bool has_lo, bool has_hi);                                 /* ternary.c */
int cpu_reduce(em_reduce_op op, em_tensor *out, em_tensor *idx,
               const em_tensor *in, int nreduce);                        /* reduce.c */
int cpu_scan(em_scan_op op, em_tensor *out, const em_tensor *in, int dim); /* scan.c */
int cpu_softmax(em_softmax_op op, em_tensor *out, const em_tensor *in, int dim); /* softmax.c */
int cpu_cross_entropy(em_tensor *loss, em_tensor *lse, em_tensor *roww, const em_tensor *x,
                      const em_tensor *t, const em_tensor *w, int64_t ignore_index, double eps);  /* xent.c */
int cpu_cross_entropy_backward(em_tensor *gx, const em_tensor *g, const em_tensor *x, const em_tensor *lse,
                               const em_tensor *t, const em_tensor *w, int64_t ignore_index, double eps);
int cpu_index(em_index_op op, em_tensor *out, const em_tensor *in, int dim,
              const em_tensor *idx);                                     /* index.c */
int cpu_nonzero(em_tensor *out, const em_tensor *in);                  /* index.c */
int cpu_sort(em_tensor *values, em_tensor *indices, const em_tensor *in,
             int dim, bool descending, bool stable);                     /* sort.c */
int cpu_gemm(em_tensor *out, const em_tensor *a, const em_tensor *b,
             double alpha, double beta);                                 /* gemm.c */
/* acc (float32) = a @ b for float16/bfloat16 a, b (3-D as cpu_gemm's):
 * float32 sums, not rounded to the half dtype (linear.c's epilogues). */
int cpu_gemm_acc32(em_tensor *acc, const em_tensor *a, const em_tensor *b);
int cpu_optim(em_optim_op op, em_tensor *p, const em_tensor *g, em_tensor *s1,
              em_tensor *s2, const em_optim_hyper *h);                   /* optim.c */
int cpu_optim_multi(em_multi_op op, const em_tensor_lists *l, em_tensor *a, em_tensor *b,
                    const em_optim_hyper *h);                            /* optim.c */

/* The libraries loaded on first use (OpenBLAS in blas.c, oneDNN in dnnl.c):
 * each function pointer of a table is stored at its offset in the api struct. */
typedef struct cpu_dl_symbol {
    const char *name;
    size_t offset;
} cpu_dl_symbol;
/* Fills api from the dlopen handle h; NULL, or the name of the first symbol
 * h lacks (dlerror() then says why). blas.c */
const char *cpu_dl_bind(void *h, const cpu_dl_symbol *symbols, size_t n, void *api);

/* convolutional families (backend.h): conv.c (reference, im2col + GEMM) and
 * dnnl.c (oneDNN, loaded on first use), pooling.c, norm.c */
int cpu_conv(em_conv_op op, em_tensor *out, const em_tensor *a, const em_tensor *b,
             const em_conv_params *p);                                   /* conv.c */
int cpu_pool(em_pool_op op, em_tensor *out, em_tensor *idx, const em_tensor *in,
             const em_pool_params *p);                                   /* pooling.c */
int cpu_pool_backward(em_pool_op op, em_tensor *gin, const em_tensor *gout,
                      const em_pool_params *p);                          /* pooling.c */
int cpu_norm(em_norm_op op, em_tensor *y, em_tensor *mean, em_tensor *var, const em_tensor *x,
             const em_tensor *w, const em_tensor *b, const em_norm_params *p);   /* norm.c */
double cpu_sum_f32(const float *x, int64_t n);   /* norm.c: in double, 8 accumulators */
double cpu_sum_f64(const double *x, int64_t n);
int cpu_norm_backward(em_norm_op op, em_tensor *gx, em_tensor *gw, em_tensor *gb,
                      const em_tensor *gy, const em_tensor *x, const em_tensor *mean,
                      const em_tensor *rstd, const em_tensor *w, const em_norm_params *p);

/* attention family (backend.h): attention.c, flash-style tiles */
int cpu_attention(em_tensor *out, em_tensor *lse, const em_tensor *q, const em_tensor *k, const em_tensor *v,
                  const em_tensor *mask, const em_attn_params *p);
int cpu_attention_backward(em_tensor *gq, em_tensor *gk, em_tensor *gv, const em_tensor *gout, const em_tensor *q,
                           const em_tensor *k, const em_tensor *v, const em_tensor *out, const em_tensor *lse,
                           const em_tensor *mask, const em_attn_params *p);

/* float16/bfloat16 operands of the float32-only kernels (lowp.c): widen
 * each to a float32 working copy (outputs too, with is_out), run the float32
 * kernel on the copies, then cpu_narrow(&w, rc) rounds the outputs back
 * (when rc is 0) and frees the copies; it returns rc, or -1 when a copy
 * failed. */
#define CPU_MAX_WIDENED 10
typedef struct cpu_widened {
    int n;
    bool failed;
    em_tensor *orig[CPU_MAX_WIDENED], *wide[CPU_MAX_WIDENED];
    bool out[CPU_MAX_WIDENED];
} cpu_widened;
bool cpu_is_lowp(const em_tensor *t);
bool cpu_any_lowp(const em_tensor *const *ts, int n);
const em_tensor *cpu_widen(cpu_widened *w, const em_tensor *t, bool is_out);
int cpu_narrow(cpu_widened *w, int rc);

#endif
