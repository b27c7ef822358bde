/* sort.c — the CPU sort: each line along dim is sorted on its own (lines in
 * parallel), as (key, position) pairs so that ties keep their original order
 * whether or not a stable sort was asked for, and NaN sorts as the largest
 * value, as in PyTorch. Values are copied from the input by position, so
 * they come out bit-exact for every dtype. */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

typedef struct sort_item {
    union { double f; int64_t i; } key;
    int64_t pos;        /* 0-based position in the line */
} sort_item;

/* NaN is larger than everything, and equal to itself. */
static inline int cmp_f64(double a, double b)
{
    bool na = a != a, nb = b != b;
    if (na || nb) return na - nb;
    return (a > b) - (a < b);
}

static inline int cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }

static inline int by_pos(const sort_item *x, const sort_item *y) { return cmp_i64(x->pos, y->pos); }

static int asc_f64(const void *a, const void *b)
{
    const sort_item *x = a, *y = b;
    int c = cmp_f64(x->key.f, y->key.f);
    return c ? c : by_pos(x, y);
}

static int desc_f64(const void *a, const void *b)
{
    const sort_item *x = a, *y = b;
    int c = cmp_f64(y->key.f, x->key.f);
    return c ? c : by_pos(x, y);
}

static int asc_i64(const void *a, const void *b)
{
    const sort_item *x = a, *y = b;
    int c = cmp_i64(x->key.i, y->key.i);
    return c ? c : by_pos(x, y);
}

static int desc_i64(const void *a, const void *b)
{
    const sort_item *x = a, *y = b;
    int c = cmp_i64(y->key.i, x->key.i);
    return c ? c : by_pos(x, y);
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

int cpu_sort(em_tensor *values, em_tensor *indices, const em_tensor *in, int dim, bool descending, bool stable)
{
    (void)stable;   /* always stable: the position breaks ties */
    if (in->ndim == 0 || dim < 0 || dim >= in->ndim || indices->dtype != EM_INT64 ||
        values->dtype != in->dtype || values->ndim != in->ndim || indices->ndim != in->ndim)
        return em_set_error("sort: bad arguments to the CPU kernel (values %s, indices %s, in %s, dim %d)",
                            SHAPE(values), SHAPE(indices), SHAPE(in), dim + 1);
    int64_t numel = em_numel(in), n = in->sizes[dim];
    if (numel == 0) return 0;
    int64_t lines = numel / n;
    em_dtype dt = in->dtype;
    bool fl = em_dtype_is_float(dt);
    int (*cmp)(const void *, const void *) = fl ? (descending ? desc_f64 : asc_f64)
                                                : (descending ? desc_i64 : asc_i64);
    size_t esz = em_dtype_size(dt);
    const char *ibase = (const char *)in->storage->data;
    char *vbase = (char *)values->storage->data, *xbase = (char *)indices->storage->data;
    int failed = 0;
    #pragma omp parallel if (lines > 1 && numel >= CPU_PARALLEL_MIN)
    {
        sort_item *buf = malloc(sizeof(sort_item) * (size_t)n);
        if (!buf) {
            #pragma omp atomic write
            failed = 1;
        }
        #pragma omp for schedule(static)
        for (int64_t r = 0; r < lines; r++) {
            if (!buf) continue;
            const char *src = ibase + line_offset(in, dim, r) * (int64_t)esz;
            int64_t ist = in->strides[dim] * (int64_t)esz;
            for (int64_t j = 0; j < n; j++) {
                const char *p = src + j * ist;
                if (dt == EM_FLOAT32) buf[j].key.f = *(const float *)p;
                else if (fl) buf[j].key.f = cpu_load_f64(p, dt);
                else buf[j].key.i = cpu_load_i64(p, dt);
                buf[j].pos = j;
            }
            qsort(buf, (size_t)n, sizeof *buf, cmp);
            char *vd = vbase + line_offset(values, dim, r) * (int64_t)esz;
            char *xd = xbase + line_offset(indices, dim, r) * 8;
            int64_t vst = values->strides[dim] * (int64_t)esz, xst = indices->strides[dim] * 8;
            for (int64_t j = 0; j < n; j++) {
                memcpy(vd + j * vst, src + buf[j].pos * ist, esz);
                *(int64_t *)(xd + j * xst) = buf[j].pos + 1;
            }
        }
        free(buf);
    }
    if (failed) return em_set_error("sort: out of memory for a line of %lld elements", (long long)n);
    return 0;
}
