/* memory.c — CPU memory, fill and arange. */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

/* Large blocks are kept in a cache when freed and handed out again for a
 * request of the same size class. Without it every large temporary is a
 * fresh mmap whose pages fault in on first write, which costs more than the
 * op itself for memory-bound kernels; and since Lua frees tensors when its
 * collector runs, not when the last reference goes, a collection frees a
 * whole batch of blocks at once (hundreds in a training loop) and the next
 * steps must find them all again. So each size class has its own bin, a
 * last-in-first-out stack (the most recently freed block is the likeliest
 * to be warm in the CPU caches) linked through the free blocks themselves.
 * Blocks under CACHE_MIN come from malloc's own bins. The engine is
 * single-threaded, so no lock. */
#define CACHE_MIN ((size_t)1 << 16)
#ifdef EMBER_SANITIZE
#define SANITIZE 1
#else
#define SANITIZE 0
#endif
#define CACHE_MAX_BYTES ((size_t)1 << 30)
#define CACHE_MAX_BLOCK (CACHE_MAX_BYTES / 4)

/* Size classes: 4 KiB steps up to 1 MiB, then eighths of a power of two
 * (at most 12.5% rounding waste). The sanitizer build (EMBER_SANITIZE)
 * allocates exactly what was asked and caches nothing, so that
 * AddressSanitizer sees small overruns and uses after free. */
static size_t size_class(size_t n)
{
#ifdef EMBER_SANITIZE
    return n ? n : 1;
#endif
    if (n < CACHE_MIN) return (n + 63) & ~(size_t)63;
    size_t step = 4096;
    if (n > ((size_t)1 << 20)) {
        size_t p = (size_t)1 << (63 - __builtin_clzll((unsigned long long)n));
        step = p / 8;
    }
    return (n + step - 1) / step * step;
}

/* The bin of a cached size class (CACHE_MIN <= size <= CACHE_MAX_BLOCK):
 * 256 bins of 4 KiB steps up to 1 MiB, then 8 per power of two. */
#define NBINS (256 + 8 * 28)
static int bin_of(size_t size)
{
    if (size <= ((size_t)1 << 20)) return (int)(size / 4096) - 1;
    int lg = 63 - __builtin_clzll((unsigned long long)(size - 1));   /* size in (2^lg, 2^(lg+1)] */
    size_t step = ((size_t)1 << lg) / 8;
    return 256 + 8 * (lg - 20) + (int)((size - ((size_t)1 << lg)) / step) - 1;
}

typedef struct free_block { struct free_block *next; } free_block;
static free_block *bins[NBINS];
static size_t cached_bytes;

void cpu_empty_cache(int device_index)
{
    (void)device_index;
    for (int b = 0; b < NBINS; b++)
        while (bins[b]) {
            free_block *f = bins[b];
            bins[b] = f->next;
            free(f);
        }
    cached_bytes = 0;
}

void *cpu_alloc(size_t nbytes, int device_index)
{
    (void)device_index;
    size_t size = size_class(nbytes);
    if (!SANITIZE && size >= CACHE_MIN && size <= CACHE_MAX_BLOCK) {
        int b = bin_of(size);
        if (bins[b]) {
            free_block *f = bins[b];
            bins[b] = f->next;
            cached_bytes -= size;
            return f;
        }
    }
    void *p = NULL;
    /* posix_memalign: aligned_alloc wants a multiple of the alignment, which
     * the sanitizer build's exact sizes are not */
    if (posix_memalign(&p, 64, size)) p = NULL;
    if (!p && cached_bytes) {       /* give the cache back and try once more */
        cpu_empty_cache(device_index);
        if (posix_memalign(&p, 64, size)) p = NULL;
    }
    if (!p) em_set_error("out of memory: could not allocate %zu bytes on the CPU", nbytes);
    return p;
}

void cpu_free(void *p, size_t nbytes, int device_index)
{
    (void)device_index;
    size_t size = size_class(nbytes);
    /* a full cache hands the block back rather than evicting warm ones */
    if (SANITIZE || size < CACHE_MIN || size > CACHE_MAX_BLOCK || cached_bytes + size > CACHE_MAX_BYTES) {
        free(p);
        return;
    }
    free_block *f = p;
    int b = bin_of(size);
    f->next = bins[b];
    bins[b] = f;
    cached_bytes += size;
}

int cpu_memcpy(void *dst, const void *src, size_t n, int device_index)
{
    (void)device_index;
    if (n) memcpy(dst, src, n);
    return 0;
}

int cpu_synchronize(int device_index)
{
    (void)device_index;
    return 0;
}

static void fill_f32(char **p, const int64_t *s, int64_t n, void *ctx)
{
    float v = (float)*(double *)ctx;
    if (s[0] == 4) { float *o = (float *)p[0]; for (int64_t i = 0; i < n; i++) o[i] = v; }
    else for (int64_t i = 0; i < n; i++) *(float *)(p[0] + i * s[0]) = v;
}

static void fill_f64(char **p, const int64_t *s, int64_t n, void *ctx)
{
    double v = *(double *)ctx;
    if (s[0] == 8) { double *o = (double *)p[0]; for (int64_t i = 0; i < n; i++) o[i] = v; }
    else for (int64_t i = 0; i < n; i++) *(double *)(p[0] + i * s[0]) = v;
}

typedef struct fill_bytes { unsigned char bytes[8]; size_t size; } fill_bytes;

/* float16/bfloat16 (the zeros of their gradients): fill_any's memcpy per
 * element cost more than the rest of a bfloat16 training step's fills */
static void fill_u16(char **p, const int64_t *s, int64_t n, void *ctx)
{
    uint16_t v;
    memcpy(&v, ((fill_bytes *)ctx)->bytes, sizeof v);
    if (s[0] == 2) { uint16_t *o = (uint16_t *)p[0]; for (int64_t i = 0; i < n; i++) o[i] = v; }
    else for (int64_t i = 0; i < n; i++) *(uint16_t *)(p[0] + i * s[0]) = v;
}

static void fill_any(char **p, const int64_t *s, int64_t n, void *ctx)
{
    fill_bytes *fb = ctx;
    for (int64_t i = 0; i < n; i++) memcpy(p[0] + i * s[0], fb->bytes, fb->size);
}

int cpu_fill(em_tensor *out, double value)
{
    const em_tensor *ts[1] = {out};
    if (out->dtype == EM_FLOAT32) { cpu_foreach(1, ts, fill_f32, &value); return 0; }
    if (out->dtype == EM_FLOAT64) { cpu_foreach(1, ts, fill_f64, &value); return 0; }
    fill_bytes fb;
    fb.size = em_dtype_size(out->dtype);
    cpu_store_f64(fb.bytes, out->dtype, value);
    cpu_foreach(1, ts, fb.size == 2 ? fill_u16 : fill_any, &fb);
    return 0;
}

/* arange works on positions, so it walks the tensor serially by index */
typedef struct arange_ctx { double start, step; int64_t next; em_dtype d; } arange_ctx;

static void arange_loop(char **p, const int64_t *s, int64_t n, void *ctx)
{
    arange_ctx *a = ctx;
    for (int64_t i = 0; i < n; i++, a->next++) {
        double v = a->start + (double)a->next * a->step;
        if (em_dtype_is_float(a->d)) cpu_store_f64(p[0] + i * s[0], a->d, v);
        else cpu_store_i64(p[0] + i * s[0], a->d, (int64_t)v);
    }
}

int cpu_arange(em_tensor *out, double start, double step)
{
    arange_ctx a = {start, step, 0, out->dtype};
    const em_tensor *ts[1] = {out};
    cpu_foreach_serial(1, ts, arange_loop, &a);
    return 0;
}
