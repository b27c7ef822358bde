/* copy.c — element access by dtype and the strided, converting copy. */
#include "cpu.h"

#include <string.h>

double cpu_load_f64(const void *p, em_dtype d)
{
    switch (d) {
    case EM_FLOAT32: return *(const float *)p;
    case EM_FLOAT64: return *(const double *)p;
    case EM_INT64: return (double)*(const int64_t *)p;
    case EM_INT32: return *(const int32_t *)p;
    case EM_INT16: return *(const int16_t *)p;
    case EM_INT8: return *(const int8_t *)p;
    case EM_UINT8: return *(const uint8_t *)p;
    case EM_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    case EM_FLOAT16: return em_half_to_float(*(const uint16_t *)p);
    case EM_BFLOAT16: return em_bf16_to_float(*(const uint16_t *)p);
    default: return 0;
    }
}

int64_t cpu_load_i64(const void *p, em_dtype d)
{
    switch (d) {
    case EM_INT64: return *(const int64_t *)p;
    case EM_INT32: return *(const int32_t *)p;
    case EM_INT16: return *(const int16_t *)p;
    case EM_INT8: return *(const int8_t *)p;
    case EM_UINT8: return *(const uint8_t *)p;
    case EM_BOOL: return *(const uint8_t *)p != 0;
    default: return (int64_t)cpu_load_f64(p, d);
    }
}

void cpu_store_f64(void *p, em_dtype d, double v) { emf_store_f64(p, (int)d, v); }

void cpu_store_i64(void *p, em_dtype d, int64_t v) { emf_store_i64(p, (int)d, v); }

typedef struct cast_ctx { em_dtype to, from; size_t size; } cast_ctx;

static void copy_same(char **p, const int64_t *s, int64_t n, void *ctx)
{
    size_t sz = ((cast_ctx *)ctx)->size;
    if (s[0] == (int64_t)sz && s[1] == (int64_t)sz) { memcpy(p[0], p[1], (size_t)n * sz); return; }
    switch (sz) {
    case 4: for (int64_t i = 0; i < n; i++) *(uint32_t *)(p[0] + i * s[0]) = *(uint32_t *)(p[1] + i * s[1]); break;
    case 8: for (int64_t i = 0; i < n; i++) *(uint64_t *)(p[0] + i * s[0]) = *(uint64_t *)(p[1] + i * s[1]); break;
    case 2: for (int64_t i = 0; i < n; i++) *(uint16_t *)(p[0] + i * s[0]) = *(uint16_t *)(p[1] + i * s[1]); break;
    default: for (int64_t i = 0; i < n; i++) *(p[0] + i * s[0]) = *(p[1] + i * s[1]); break;
    }
}

/* Conversions that data pipelines, masks and mixed dtypes use all the time
 * (float64 <-> float32, image bytes, labels, bool masks) get loops of their
 * own, one body: a plain C conversion, contiguous runs apart so they
 * vectorise. The rest go through cast_generic's per-element switch. */
#define CAST_LOOP(NAME, TO, FROM)                                                               \
    static void NAME(char **p, const int64_t *s, int64_t n, void *ctx)                          \
    {                                                                                           \
        (void)ctx;                                                                              \
        if (s[0] == sizeof(TO) && s[1] == sizeof(FROM)) {                                       \
            TO *o = (TO *)p[0];                                                                 \
            const FROM *a = (const FROM *)p[1];                                                 \
            for (int64_t i = 0; i < n; i++) o[i] = (TO)a[i];                                    \
        } else {                                                                                \
            for (int64_t i = 0; i < n; i++) *(TO *)(p[0] + i * s[0]) = (TO)*(const FROM *)(p[1] + i * s[1]); \
        }                                                                                       \
    }
CAST_LOOP(f64_to_f32, float, double)
CAST_LOOP(f32_to_f64, double, float)
CAST_LOOP(u8_to_f32, float, uint8_t)
CAST_LOOP(i64_to_f32, float, int64_t)
CAST_LOOP(u8_to_i64, int64_t, uint8_t)

/* float32 <-> float16/bfloat16, the conversions mixed precision runs on every
 * op it widens: plain loops (the bfloat16 ones vectorise; the bit operations
 * are em_float_to_bf16's, here where the compiler can inline them). */
static inline uint16_t f32_to_bf16_bits(uint32_t x)
{
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);   /* quiet NaN */
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);                     /* nearest, ties to even */
}

static void f32_to_bf16(char **p, const int64_t *s, int64_t n, void *ctx)
{
    (void)ctx;
    if (s[0] == 2 && s[1] == 4) {
        uint16_t *o = (uint16_t *)p[0];
        const uint32_t *a = (const uint32_t *)p[1];
        for (int64_t i = 0; i < n; i++) o[i] = f32_to_bf16_bits(a[i]);
    } else for (int64_t i = 0; i < n; i++) *(uint16_t *)(p[0] + i * s[0]) = f32_to_bf16_bits(*(const uint32_t *)(p[1] + i * s[1]));
}

static void bf16_to_f32(char **p, const int64_t *s, int64_t n, void *ctx)
{
    (void)ctx;
    if (s[0] == 4 && s[1] == 2) {
        uint32_t *o = (uint32_t *)p[0];
        const uint16_t *a = (const uint16_t *)p[1];
        for (int64_t i = 0; i < n; i++) o[i] = (uint32_t)a[i] << 16;
    } else for (int64_t i = 0; i < n; i++) *(uint32_t *)(p[0] + i * s[0]) = (uint32_t)*(const uint16_t *)(p[1] + i * s[1]) << 16;
}

/* n values of a float16/bfloat16 array (stride in bytes) widened into
 * dst, and back with one rounding, as the casts above do: for kernels that
 * compute half tensors a chunk at a time in float32 (binary.c). */
void cpu_half_to_f32(float *dst, const char *src, int64_t stride, int64_t n, em_dtype d)
{
    if (d == EM_BFLOAT16 && stride == 2) {   /* contiguous: a loop gcc vectorises */
        uint32_t *o = (uint32_t *)dst;
        const uint16_t *a = (const uint16_t *)src;
        for (int64_t i = 0; i < n; i++) o[i] = (uint32_t)a[i] << 16;
    } else if (d == EM_BFLOAT16) {
        uint32_t *o = (uint32_t *)dst;
        for (int64_t i = 0; i < n; i++) o[i] = (uint32_t)*(const uint16_t *)(src + i * stride) << 16;
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = em_half_to_float(*(const uint16_t *)(src + i * stride));
    }
}

void cpu_f32_to_half(char *dst, int64_t stride, const float *src, int64_t n, em_dtype d)
{
    if (d == EM_BFLOAT16 && stride == 2) {
        const uint32_t *a = (const uint32_t *)src;
        uint16_t *o = (uint16_t *)dst;
        for (int64_t i = 0; i < n; i++) o[i] = f32_to_bf16_bits(a[i]);
    } else if (d == EM_BFLOAT16) {
        const uint32_t *a = (const uint32_t *)src;
        for (int64_t i = 0; i < n; i++) *(uint16_t *)(dst + i * stride) = f32_to_bf16_bits(a[i]);
    } else {
        for (int64_t i = 0; i < n; i++) *(uint16_t *)(dst + i * stride) = em_float_to_half(src[i]);
    }
}

static void f32_to_f16(char **p, const int64_t *s, int64_t n, void *ctx)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++) *(uint16_t *)(p[0] + i * s[0]) = em_float_to_half(*(const float *)(p[1] + i * s[1]));
}

static void f16_to_f32(char **p, const int64_t *s, int64_t n, void *ctx)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++) *(float *)(p[0] + i * s[0]) = em_half_to_float(*(const uint16_t *)(p[1] + i * s[1]));
}

static void cast_generic(char **p, const int64_t *s, int64_t n, void *ctx)
{
    cast_ctx *c = ctx;
    if (em_dtype_is_float(c->from))
        for (int64_t i = 0; i < n; i++) cpu_store_f64(p[0] + i * s[0], c->to, cpu_load_f64(p[1] + i * s[1], c->from));
    else
        for (int64_t i = 0; i < n; i++) cpu_store_i64(p[0] + i * s[0], c->to, cpu_load_i64(p[1] + i * s[1], c->from));
}

/* ---- transposed copies ------------------------------------------------------
 * A copy between a contiguous tensor and one whose last two dims are swapped
 * (x:t():contiguous(), or an in-place op on a transposed view writing its
 * result back): element by element, each access on the swapped side lies in
 * another page (and, for power-of-two strides, the same cache set), and the
 * copy ran at a seventh of memory's speed. PyTorch copies such matrices by
 * blocks; so does this. A block is one cache line along the swapped side's
 * unit stride by COL_TILE along the other dim: the sizes measured best on
 * [1024, 1024] float32 (16 x 8: 0.42 ms; 8 x 8 0.43, 16 x 16 0.52, 64 x 8
 * 0.57, 32 x 4 0.72, element by element 3.8). A work item is one block row
 * of one matrix of the batch. */
#define COL_TILE 8
#define LINE_BYTES 64

typedef struct transpose_job {
    char *dst;
    const char *src;
    int64_t rows, cols;       /* rows: the swapped side's unit-stride dim */
    int64_t dr, dc, sr, sc;   /* the strides (elements) along rows and cols */
    int64_t row_tile, row_blocks;
    int outer;                /* batch dims: sizes and both strides (elements) */
    const int64_t *sizes, *dstrides, *sstrides;
    size_t esz;
} transpose_job;

#define TRANSPOSE_BLOCK(T)                                                                         \
    static void transpose_block_##T(T *d, const T *s, const transpose_job *j, int64_t r0, int64_t r1, \
                                    int64_t c0, int64_t c1)                                        \
    {                                                                                              \
        for (int64_t r = r0; r < r1; r++)                                                          \
            for (int64_t c = c0; c < c1; c++) d[r * j->dr + c * j->dc] = s[r * j->sr + c * j->sc]; \
    }
TRANSPOSE_BLOCK(uint16_t)
TRANSPOSE_BLOCK(uint32_t)
TRANSPOSE_BLOCK(uint64_t)

static void transpose_range(int64_t lo, int64_t hi, void *ctx)
{
    const transpose_job *j = ctx;
    for (int64_t item = lo; item < hi; item++) {
        int64_t m = item / j->row_blocks, rb = item % j->row_blocks, doff = 0, soff = 0, rest = m;
        for (int k = j->outer - 1; k >= 0; k--) {
            doff += rest % j->sizes[k] * j->dstrides[k];
            soff += rest % j->sizes[k] * j->sstrides[k];
            rest /= j->sizes[k];
        }
        char *d = j->dst + (size_t)doff * j->esz;
        const char *s = j->src + (size_t)soff * j->esz;
        int64_t r0 = rb * j->row_tile, r1 = r0 + j->row_tile < j->rows ? r0 + j->row_tile : j->rows;
        for (int64_t c0 = 0; c0 < j->cols; c0 += COL_TILE) {
            int64_t c1 = c0 + COL_TILE < j->cols ? c0 + COL_TILE : j->cols;
            switch (j->esz) {
            case 2: transpose_block_uint16_t((uint16_t *)d, (const uint16_t *)s, j, r0, r1, c0, c1); break;
            case 4: transpose_block_uint32_t((uint32_t *)d, (const uint32_t *)s, j, r0, r1, c0, c1); break;
            default: transpose_block_uint64_t((uint64_t *)d, (const uint64_t *)s, j, r0, r1, c0, c1); break;
            }
        }
    }
}

/* t's last two dims swapped: the second-to-last of stride 1, the last not */
static bool swapped(const em_tensor *t) { return t->strides[t->ndim - 2] == 1 && t->strides[t->ndim - 1] != 1; }

/* The blocked copy when it applies (same dtype of 2, 4 or 8 bytes, one side
 * contiguous and the other swapped, matrices of at least 16 x 16); false
 * otherwise. */
static bool copy_transposed(em_tensor *dst, const em_tensor *src)
{
    int nd = dst->ndim;
    size_t esz = em_dtype_size(dst->dtype);
    if (dst->dtype != src->dtype || nd < 2 || (esz != 2 && esz != 4 && esz != 8)) return false;
    int64_t m = dst->sizes[nd - 2], n = dst->sizes[nd - 1];
    if (m < 16 || n < 16) return false;
    /* rows run along the swapped side's unit stride: the matrix's dim nd-2 */
    bool into_plain = swapped(src) && em_is_contiguous(dst), from_plain = swapped(dst) && em_is_contiguous(src);
    if (!into_plain && !from_plain) return false;
    int64_t row_tile = LINE_BYTES / (int64_t)esz;
    transpose_job j = {
        .dst = (char *)dst->storage->data + (size_t)dst->offset * esz,
        .src = (const char *)src->storage->data + (size_t)src->offset * esz,
        .rows = m, .cols = n,
        .dr = dst->strides[nd - 2], .dc = dst->strides[nd - 1], .sr = src->strides[nd - 2], .sc = src->strides[nd - 1],
        .row_tile = row_tile, .row_blocks = (m + row_tile - 1) / row_tile,
        .outer = nd - 2, .sizes = dst->sizes, .dstrides = dst->strides, .sstrides = src->strides, .esz = esz,
    };
    cpu_parallel_for(em_numel(dst) / (m * n) * j.row_blocks, em_numel(dst), 1, transpose_range, &j);
    return true;
}

int cpu_cast(em_tensor *dst, const em_tensor *src)
{
    if (copy_transposed(dst, src)) return 0;
    const em_tensor *ts[2] = {dst, src};
    cast_ctx c = {dst->dtype, src->dtype, em_dtype_size(dst->dtype)};
    cpu_loop_fn fn = cast_generic;
    if (dst->dtype == src->dtype) fn = copy_same;
    else if (dst->dtype == EM_FLOAT32 && src->dtype == EM_FLOAT64) fn = f64_to_f32;
    else if (dst->dtype == EM_FLOAT64 && src->dtype == EM_FLOAT32) fn = f32_to_f64;
    else if (dst->dtype == EM_FLOAT32 && (src->dtype == EM_UINT8 || src->dtype == EM_BOOL)) fn = u8_to_f32;
    else if (dst->dtype == EM_FLOAT32 && src->dtype == EM_INT64) fn = i64_to_f32;
    else if (dst->dtype == EM_INT64 && src->dtype == EM_UINT8) fn = u8_to_i64;
    else if (dst->dtype == EM_BFLOAT16 && src->dtype == EM_FLOAT32) fn = f32_to_bf16;
    else if (dst->dtype == EM_FLOAT32 && src->dtype == EM_BFLOAT16) fn = bf16_to_f32;
    else if (dst->dtype == EM_FLOAT16 && src->dtype == EM_FLOAT32) fn = f32_to_f16;
    else if (dst->dtype == EM_FLOAT32 && src->dtype == EM_FLOAT16) fn = f16_to_f32;
    cpu_foreach_elementwise(2, ts, fn, &c);
    return 0;
}

/* ---- integer chunks (cpu.h) ------------------------------------------------- */

void cpu_load_ints(int64_t *d, const char *p, int64_t stride, int64_t n, em_dtype dt)
{
    switch (dt) {
    case EM_INT64: for (int64_t i = 0; i < n; i++) d[i] = *(const int64_t *)(p + i * stride); break;
    case EM_INT32: for (int64_t i = 0; i < n; i++) d[i] = *(const int32_t *)(p + i * stride); break;
    case EM_INT16: for (int64_t i = 0; i < n; i++) d[i] = *(const int16_t *)(p + i * stride); break;
    case EM_INT8: for (int64_t i = 0; i < n; i++) d[i] = *(const int8_t *)(p + i * stride); break;
    case EM_BOOL: for (int64_t i = 0; i < n; i++) d[i] = *(const uint8_t *)(p + i * stride) != 0; break;
    case EM_UINT8: for (int64_t i = 0; i < n; i++) d[i] = *(const uint8_t *)(p + i * stride); break;
    default: for (int64_t i = 0; i < n; i++) d[i] = cpu_load_i64(p + i * stride, dt); break;
    }
}

void cpu_store_ints(char *p, int64_t stride, const int64_t *s, int64_t n, em_dtype dt)
{
    switch (dt) {
    case EM_INT64: for (int64_t i = 0; i < n; i++) *(int64_t *)(p + i * stride) = s[i]; break;
    case EM_INT32: for (int64_t i = 0; i < n; i++) *(int32_t *)(p + i * stride) = (int32_t)(uint32_t)(uint64_t)s[i]; break;
    case EM_INT16: for (int64_t i = 0; i < n; i++) *(int16_t *)(p + i * stride) = (int16_t)(uint16_t)(uint64_t)s[i]; break;
    case EM_INT8: for (int64_t i = 0; i < n; i++) *(int8_t *)(p + i * stride) = (int8_t)(uint8_t)(uint64_t)s[i]; break;
    case EM_BOOL: for (int64_t i = 0; i < n; i++) *(uint8_t *)(p + i * stride) = s[i] != 0; break;
    case EM_UINT8: for (int64_t i = 0; i < n; i++) *(uint8_t *)(p + i * stride) = (uint8_t)(uint64_t)s[i]; break;
    default: for (int64_t i = 0; i < n; i++) cpu_store_i64(p + i * stride, dt, s[i]); break;
    }
}
