/* memory.c — CPU memory, fill and arange. */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

void *cpu_alloc(size_t nbytes, int device_index)
{
    (void)device_index;
    size_t rounded = (nbytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, rounded);
    if (!p) em_set_error("out of memory: could not allocate %zu bytes on the CPU", nbytes);
    return p;
}

void cpu_free(void *p, int device_index)
{
    (void)device_index;
    free(p);
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
    cpu_foreach(1, ts, fill_any, &fb);
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
