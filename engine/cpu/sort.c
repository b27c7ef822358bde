/* sort.c — the CPU sort: each line along dim is sorted on its own (lines in
 * parallel).
 *
 * Every value is mapped to an unsigned 64-bit key whose integer order is the
 * wanted order (floats by their bits with the sign handled, -0.0 made +0.0,
 * every NaN made the largest key, as PyTorch sorts NaN; descending order is
 * the bitwise complement). Keys are then sorted with an LSD radix sort, one
 * byte per pass, skipping bytes all keys share. Radix sorting is stable, so
 * equal values keep their original order whether or not `stable` was asked
 * for. Values are copied from the input by position, so they come out
 * bit-exact for every dtype. */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

typedef struct sort_item {
    uint64_t key;
    int64_t pos;        /* 0-based position in the line */
} sort_item;

static uint64_t key_f64(double v)
{
    if (v != v) return UINT64_MAX;
    if (v == 0) v = 0.0;            /* -0.0 sorts with +0.0 */
    uint64_t b;
    memcpy(&b, &v, 8);
    return b >> 63 ? ~b : b | (UINT64_C(1) << 63);
}

static uint64_t key_f32(float v)
{
    if (v != v) return UINT64_MAX;
    if (v == 0) v = 0.0f;
    uint32_t b;
    memcpy(&b, &v, 4);
    return b >> 31 ? (uint32_t)~b : b | (UINT32_C(1) << 31);
}

static uint64_t key_of(const char *p, em_dtype d)
{
    switch (d) {
    case EM_FLOAT32: return key_f32(*(const float *)p);
    case EM_FLOAT64: return key_f64(*(const double *)p);
    case EM_FLOAT16: case EM_BFLOAT16: return key_f32((float)cpu_load_f64(p, d));
    default: return (uint64_t)cpu_load_i64(p, d) ^ (UINT64_C(1) << 63);
    }
}

/* Sorts a[0..n) by key, stably; tmp has room for n items. Returns the
 * buffer that holds the result (a or tmp). */
static sort_item *radix_sort(sort_item *a, sort_item *tmp, int64_t n)
{
    if (n < 64) {   /* insertion sort: stable, and cheaper for short lines */
        for (int64_t i = 1; i < n; i++) {
            sort_item x = a[i];
            int64_t j = i - 1;
            while (j >= 0 && a[j].key > x.key) { a[j + 1] = a[j]; j--; }
            a[j + 1] = x;
        }
        return a;
    }
    static _Thread_local int64_t count[8][256];
    memset(count, 0, sizeof count);
    for (int64_t i = 0; i < n; i++) {
        uint64_t k = a[i].key;
        for (int b = 0; b < 8; b++) count[b][(k >> (8 * b)) & 255]++;
    }
    for (int b = 0; b < 8; b++) {
        int64_t *c = count[b];
        if (c[(a[0].key >> (8 * b)) & 255] == n) continue;   /* every key has this byte */
        int64_t sum = 0;
        for (int v = 0; v < 256; v++) { int64_t t = c[v]; c[v] = sum; sum += t; }
        for (int64_t i = 0; i < n; i++) tmp[c[(a[i].key >> (8 * b)) & 255]++] = a[i];
        sort_item *s = a; a = tmp; tmp = s;
    }
    return a;
}

/* Element offset of the start of line `r` of t (lines run along dim). */
static int64_t line_offset(const em_tensor *t, int dim, int64_t r)
{
    int64_t off = t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (d == dim) continue;
        off += (r % t->sizes[d]) * t->strides[d];
        r /= t->sizes[d];
    }
    return off;
}

/* What the threads of one sort share. */
typedef struct sort_job {
    const em_tensor *in, *values, *indices;
    int dim;
    int64_t n;
    em_dtype dt;
    size_t esz;
    const char *ibase;
    char *vbase, *xbase;
    int64_t ist, vst, xst;      /* byte strides along dim */
    uint64_t flip;
    _Atomic int failed;
} sort_job;

static void sort_lines(int64_t lo, int64_t hi, void *ctx)
{
    sort_job *j = ctx;
    int64_t n = j->n;
    sort_item *buf = malloc(sizeof(sort_item) * 2 * (size_t)n);
    if (!buf) { j->failed = 1; return; }
    for (int64_t r = lo; r < hi; r++) {
        const char *src = j->ibase + line_offset(j->in, j->dim, r) * (int64_t)j->esz;
        for (int64_t k = 0; k < n; k++) {
            buf[k].key = key_of(src + k * j->ist, j->dt) ^ j->flip;
            buf[k].pos = k;
        }
        const sort_item *s = radix_sort(buf, buf + n, n);
        char *vd = j->vbase + line_offset(j->values, j->dim, r) * (int64_t)j->esz;
        char *xd = j->xbase + line_offset(j->indices, j->dim, r) * 8;
        for (int64_t k = 0; k < n; k++) {
            memcpy(vd + k * j->vst, src + s[k].pos * j->ist, j->esz);
            *(int64_t *)(xd + k * j->xst) = s[k].pos + 1;
        }
    }
    free(buf);
}

int cpu_sort(em_tensor *values, em_tensor *indices, const em_tensor *in, int dim, bool descending, bool stable)
{
    (void)stable;   /* always stable */
    if (in->ndim == 0 || dim < 0 || dim >= in->ndim || indices->dtype != EM_INT64 ||
        values->dtype != in->dtype || values->ndim != in->ndim || indices->ndim != in->ndim)
        return em_set_error("sort: bad arguments to the CPU kernel (values %s, indices %s, in %s, dim %d)",
                            SHAPE(values), SHAPE(indices), SHAPE(in), dim + 1);
    int64_t numel = em_numel(in), n = in->sizes[dim];
    if (numel == 0) return 0;
    int64_t lines = numel / n;
    em_dtype dt = in->dtype;
    size_t esz = em_dtype_size(dt);
    const char *ibase = (const char *)in->storage->data;
    char *vbase = (char *)values->storage->data, *xbase = (char *)indices->storage->data;
    int64_t ist = in->strides[dim] * (int64_t)esz, vst = values->strides[dim] * (int64_t)esz;
    int64_t xst = indices->strides[dim] * 8;
    sort_job j = {.in = in, .values = values, .indices = indices, .dim = dim, .n = n, .dt = dt, .esz = esz,
                  .ibase = ibase, .vbase = vbase, .xbase = xbase, .ist = ist, .vst = vst, .xst = xst,
                  .flip = descending ? UINT64_MAX : 0};
    cpu_parallel_for(lines, numel, 1, sort_lines, &j);
    if (j.failed) return em_set_error("sort: out of memory for a line of %lld elements", (long long)n);
    return 0;
}
