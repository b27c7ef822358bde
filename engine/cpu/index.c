/* index.c — the CPU index family (index_select, gather, scatter,
 * scatter_add, index_add) and nonzero.
 *
 * All five ops reduce to two loops over an iteration shape S:
 *   gather:       out[p] = in[p with p[dim] = idx[p]]
 *   scatter(add): out[p with p[dim] = idx[p]] (+)= src[p]
 * index_select is a gather whose index is the 1-D idx broadcast over S (the
 * output shape), and index_add a scatter_add whose index is broadcast over
 * the source shape. The tensor that is addressed through the index is seen
 * through a view of shape S with stride 0 along dim, so the iterator yields
 * the address of position 0 of its line and the loop adds idx * stride.
 *
 * Index values are 1-based; -n..-1 count from the end. Every value is
 * checked before it is used: a bad one is recorded (the first seen) and its
 * element skipped, so nothing outside the tensors is ever touched. */
#include "cpu.h"

#include <pthread.h>

#include <stdlib.h>
#include <string.h>

typedef struct index_ctx {
    int64_t stride;      /* bytes between slots along dim of the addressed tensor */
    int64_t size;        /* its size along dim */
    size_t esz;          /* element size */
    em_dtype dtype;
    int bad;             /* set when an index was out of range */
    int64_t bad_value;
} index_ctx;

/* 1-based (or negative) index -> 0-based slot, or -1 when out of range. */
static inline int64_t slot(int64_t v, int64_t n)
{
    if (v >= 1 && v <= n) return v - 1;
    if (v < 0 && v >= -n) return v + n;
    return -1;
}

static pthread_mutex_t bad_lock = PTHREAD_MUTEX_INITIALIZER;

/* the first bad index seen (threads may find several at once) */
static void record_bad(index_ctx *c, int64_t v)
{
    pthread_mutex_lock(&bad_lock);
    if (!c->bad) { c->bad = 1; c->bad_value = v; }
    pthread_mutex_unlock(&bad_lock);
}

/* A run in which the index does not move (index_select along an outer dim:
 * whole rows are copied). */
static void gather_row(char **p, const int64_t *s, int64_t n, index_ctx *c)
{
    int64_t v = *(const int64_t *)p[2], k = slot(v, c->size);
    if (k < 0) { record_bad(c, v); return; }
    const char *src = p[1] + k * c->stride;
    size_t esz = c->esz;
    if (s[0] == (int64_t)esz && s[1] == (int64_t)esz) { memcpy(p[0], src, (size_t)n * esz); return; }
    for (int64_t i = 0; i < n; i++) memcpy(p[0] + i * s[0], src + i * s[1], esz);
}

/* True when every index of the run is in 1..size, so the copy loop can skip
 * the per-element checks (negative indices take the checked loop). */
static bool run_in_range(const char *ix, int64_t step, int64_t n, int64_t size)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    if (step == 8) {
        const int64_t *v = (const int64_t *)ix;
        for (int64_t i = 0; i < n; i++) { lo = v[i] < lo ? v[i] : lo; hi = v[i] > hi ? v[i] : hi; }
    } else {
        for (int64_t i = 0; i < n; i++) {
            int64_t v = *(const int64_t *)(ix + i * step);
            lo = v < lo ? v : lo; hi = v > hi ? v : hi;
        }
    }
    return lo >= 1 && hi <= size;
}

static void gather_f32_fast(char **p, const int64_t *s, int64_t n, int64_t st)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int64_t *)(p[2] + i * s[2]);
        *(uint32_t *)(p[0] + i * s[0]) = *(const uint32_t *)(p[1] + i * s[1] + (v - 1) * st);
    }
}

static void gather_f64_fast(char **p, const int64_t *s, int64_t n, int64_t st)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int64_t *)(p[2] + i * s[2]);
        *(uint64_t *)(p[0] + i * s[0]) = *(const uint64_t *)(p[1] + i * s[1] + (v - 1) * st);
    }
}

/* ptrs: out, in (line base), idx */
static void gather_loop(char **p, const int64_t *s, int64_t n, void *ctx)
{
    index_ctx *c = ctx;
    int64_t st = c->stride, size = c->size;
    if (s[2] == 0) { gather_row(p, s, n, c); return; }
    if ((c->esz == 4 || c->esz == 8) && run_in_range(p[2], s[2], n, size)) {
        if (c->esz == 4) gather_f32_fast(p, s, n, st);
        else gather_f64_fast(p, s, n, st);
        return;
    }
    switch (c->esz) {
    case 4:
        for (int64_t i = 0; i < n; i++) {
            int64_t v = *(const int64_t *)(p[2] + i * s[2]), k = slot(v, size);
            if (k < 0) { record_bad(c, v); continue; }
            *(uint32_t *)(p[0] + i * s[0]) = *(const uint32_t *)(p[1] + i * s[1] + k * st);
        }
        break;
    case 8:
        for (int64_t i = 0; i < n; i++) {
            int64_t v = *(const int64_t *)(p[2] + i * s[2]), k = slot(v, size);
            if (k < 0) { record_bad(c, v); continue; }
            *(uint64_t *)(p[0] + i * s[0]) = *(const uint64_t *)(p[1] + i * s[1] + k * st);
        }
        break;
    case 2:
        for (int64_t i = 0; i < n; i++) {
            int64_t v = *(const int64_t *)(p[2] + i * s[2]), k = slot(v, size);
            if (k < 0) { record_bad(c, v); continue; }
            *(uint16_t *)(p[0] + i * s[0]) = *(const uint16_t *)(p[1] + i * s[1] + k * st);
        }
        break;
    default:
        for (int64_t i = 0; i < n; i++) {
            int64_t v = *(const int64_t *)(p[2] + i * s[2]), k = slot(v, size);
            if (k < 0) { record_bad(c, v); continue; }
            *(p[0] + i * s[0]) = *(p[1] + i * s[1] + k * st);
        }
        break;
    }
}

/* ptrs: out (line base), src, idx */
static void scatter_loop(char **p, const int64_t *s, int64_t n, void *ctx)
{
    index_ctx *c = ctx;
    int64_t st = c->stride, size = c->size;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int64_t *)(p[2] + i * s[2]), k = slot(v, size);
        if (k < 0) { record_bad(c, v); continue; }
        memcpy(p[0] + i * s[0] + k * st, p[1] + i * s[1], c->esz);
    }
}

static void scatter_add_loop(char **p, const int64_t *s, int64_t n, void *ctx)
{
    index_ctx *c = ctx;
    int64_t st = c->stride, size = c->size;
    em_dtype d = c->dtype;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int64_t *)(p[2] + i * s[2]), k = slot(v, size);
        if (k < 0) { record_bad(c, v); continue; }
        char *o = p[0] + i * s[0] + k * st;
        const char *a = p[1] + i * s[1];
        switch (d) {
        case EM_FLOAT32: *(float *)o += *(const float *)a; break;
        case EM_FLOAT64: *(double *)o += *(const double *)a; break;
        case EM_INT64: *(int64_t *)o = (int64_t)((uint64_t)*(int64_t *)o + (uint64_t)*(const int64_t *)a); break;
        case EM_BOOL: *(uint8_t *)o = *(uint8_t *)o || *(const uint8_t *)a; break;
        /* a float32 sum of two half values, rounded once: the bits the
         * double sum gives */
        case EM_BFLOAT16: {
            float sum = em_bf16_to_float(*(uint16_t *)o) + em_bf16_to_float(*(const uint16_t *)a);
            *(uint16_t *)o = em_float_to_bf16(sum);
            break;
        }
        case EM_FLOAT16: {
            float sum = em_half_to_float(*(uint16_t *)o) + em_half_to_float(*(const uint16_t *)a);
            *(uint16_t *)o = em_float_to_half(sum);
            break;
        }
        default:
            if (em_dtype_is_float(d)) cpu_store_f64(o, d, cpu_load_f64(o, d) + cpu_load_f64(a, d));
            else cpu_store_i64(o, d, (int64_t)((uint64_t)cpu_load_i64(o, d) + (uint64_t)cpu_load_i64(a, d)));
            break;
        }
    }
}

/* Moves t's dim d last (sizes and strides), keeping the others in order. */
static void dim_last(em_tensor *t, int d)
{
    int64_t size = t->sizes[d], stride = t->strides[d];
    for (int i = d; i + 1 < t->ndim; i++) {
        t->sizes[i] = t->sizes[i + 1];
        t->strides[i] = t->strides[i + 1];
    }
    t->sizes[t->ndim - 1] = size;
    t->strides[t->ndim - 1] = stride;
}

/* One reduction step o = o (op) a for scatter_reduce's multiply / amax /
 * amin; a NaN wins in amax and amin, as in PyTorch. */
static void reduce_one(char *o, const char *a, em_dtype d, em_index_op op)
{
    if (d == EM_BOOL) {
        uint8_t x = *(uint8_t *)o, y = *(const uint8_t *)a;
        *(uint8_t *)o = op == EM_SCATTER_AMAX ? (x || y) : (x && y);
    } else if (em_dtype_is_float(d)) {
        double x = cpu_load_f64(o, d), y = cpu_load_f64(a, d), r;
        if (op == EM_SCATTER_MUL) r = x * y;
        else if (x != x || y != y) r = x != x ? x : y;
        else r = op == EM_SCATTER_AMAX ? (y > x ? y : x) : (y < x ? y : x);
        cpu_store_f64(o, d, r);
    } else {
        int64_t x = cpu_load_i64(o, d), y = cpu_load_i64(a, d), r;
        if (op == EM_SCATTER_MUL) r = (int64_t)((uint64_t)x * (uint64_t)y);
        else r = op == EM_SCATTER_AMAX ? (y > x ? y : x) : (y < x ? y : x);
        cpu_store_i64(o, d, r);
    }
}

typedef struct reduce_ctx { index_ctx c; em_index_op op; } reduce_ctx;

static void scatter_reduce_loop(char **p, const int64_t *s, int64_t n, void *ctx)
{
    reduce_ctx *rc = ctx;
    index_ctx *c = &rc->c;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int64_t *)(p[2] + i * s[2]), k = slot(v, c->size);
        if (k < 0) { record_bad(c, v); continue; }
        reduce_one(p[0] + i * s[0] + k * c->stride, p[1] + i * s[1], c->dtype, rc->op);
    }
}

/* index_add on contiguous float32 or float64 tensors (the backward of
 * embedding and index_select): out seen as [outer, size, inner] and in as
 * [outer, n, inner], row j of in is added into row idx[j] of out. The
 * columns are split among the threads: each owns its columns of every row,
 * so repeated indices never race and each element's sum is taken in index
 * order, as the serial loop takes it. */
typedef struct rows_ctx {
    char *out;
    const char *in;
    const int64_t *slots;
    int64_t outer, size, n, inner;
    em_dtype dtype;
} rows_ctx;

static void add_rows_range(int64_t lo, int64_t hi, void *ctx)
{
    const rows_ctx *r = ctx;
    for (int64_t o = 0; o < r->outer; o++)
        for (int64_t j = 0; j < r->n; j++) {
            int64_t from = (o * r->n + j) * r->inner, to = (o * r->size + r->slots[j]) * r->inner;
            if (r->dtype == EM_FLOAT32) {
                float *restrict d = (float *)r->out + to;
                const float *restrict a = (const float *)r->in + from;
                for (int64_t i = lo; i < hi; i++) d[i] += a[i];
            } else {
                double *restrict d = (double *)r->out + to;
                const double *restrict a = (const double *)r->in + from;
                for (int64_t i = lo; i < hi; i++) d[i] += a[i];
            }
        }
}

/* 1 when it did the work, 0 when the general loop must, -1 on error (a bad
 * index, found before anything is written) */
static int index_add_rows(em_tensor *out, const em_tensor *in, int dim, const em_tensor *idx)
{
    if ((out->dtype != EM_FLOAT32 && out->dtype != EM_FLOAT64) || in->dtype != out->dtype ||
        idx->ndim != 1 || !em_is_contiguous(out) || !em_is_contiguous(in))
        return 0;
    rows_ctx r = {.out = em_data_ptr(out), .in = em_data_ptr(in), .outer = 1, .inner = 1,
                  .size = out->sizes[dim], .n = in->sizes[dim], .dtype = out->dtype};
    for (int i = 0; i < dim; i++) r.outer *= out->sizes[i];
    for (int i = dim + 1; i < out->ndim; i++) r.inner *= out->sizes[i];
    if (idx->sizes[0] != r.n || in->ndim != out->ndim) return 0;
    for (int i = 0; i < out->ndim; i++)
        if (i != dim && in->sizes[i] != out->sizes[i]) return 0;
    int64_t *slots = malloc(sizeof(int64_t) * (size_t)(r.n ? r.n : 1));
    if (!slots) return em_set_error("index_add: out of memory for %lld indices", (long long)r.n);
    const char *ip = em_data_ptr(idx);
    for (int64_t j = 0; j < r.n; j++) {
        int64_t v = *(const int64_t *)(ip + j * idx->strides[0] * (int64_t)sizeof(int64_t));
        slots[j] = slot(v, r.size);
        if (slots[j] < 0) {
            free(slots);
            return em_set_error("index_add: index %lld is out of bounds for dimension %d with size %lld",
                                (long long)v, dim + 1, (long long)r.size);
        }
    }
    r.slots = slots;
    cpu_parallel_for(r.inner, r.outer * r.n * r.inner, 16, add_rows_range, &r);
    free(slots);
    return 1;
}

int cpu_index(em_index_op op, em_tensor *out, const em_tensor *in, int dim, const em_tensor *idx)
{
    const char *name = emf_index_op_name(op);
    if (idx->dtype != EM_INT64)
        return em_set_error("%s: expected an int64 index tensor, got %s", name, em_dtype_name(idx->dtype));
    if (out->ndim == 0 || dim < 0 || dim >= out->ndim || in->ndim != out->ndim)
        return em_set_error("%s: bad arguments to the CPU kernel (out %s, in %s, dim %d)", name,
                            SHAPE(out), SHAPE(in), dim + 1);
    index_ctx c = {0};
    c.esz = em_dtype_size(out->dtype);
    c.dtype = out->dtype;
    em_tensor a, b, ix;
    const em_tensor *ts[3];
    switch (op) {
    case EM_INDEX_SELECT:
    case EM_GATHER:
        /* iteration shape: out */
        c.stride = in->strides[dim] * (int64_t)c.esz;
        c.size = in->sizes[dim];
        a = emf_line_view(in, out->sizes, out->ndim, dim);
        ix = op == EM_GATHER ? *idx : emf_spread_index(idx, out->sizes, out->ndim, dim);
        ts[0] = out; ts[1] = &a; ts[2] = &ix;
        cpu_foreach(3, ts, gather_loop, &c);
        break;
    case EM_SCATTER:
    case EM_SCATTER_ADD:
    case EM_SCATTER_MUL:
    case EM_SCATTER_AMAX:
    case EM_SCATTER_AMIN:
    case EM_INDEX_ADD: {
        if (op == EM_INDEX_ADD) {
            int rc = index_add_rows(out, in, dim, idx);
            if (rc) return rc < 0 ? -1 : 0;
        }
        /* iteration shape: the index (scatter) or the source (index_add) */
        const int64_t *sizes = op == EM_INDEX_ADD ? in->sizes : idx->sizes;
        c.stride = out->strides[dim] * (int64_t)c.esz;
        c.size = out->sizes[dim];
        a = emf_line_view(out, sizes, out->ndim, dim);
        b = *in;
        b.ndim = out->ndim;
        for (int i = 0; i < out->ndim; i++) b.sizes[i] = sizes[i];
        ix = op == EM_INDEX_ADD ? emf_spread_index(idx, sizes, out->ndim, dim) : *idx;
        /* Two positions name the same slot only when they differ in dim
         * alone: with dim moved last, each line along it goes to one thread
         * and is visited in order, so every slot sees its writes in the
         * serial order (the same bits), and the lines run in parallel. */
        ts[0] = &a; ts[1] = &b; ts[2] = &ix;
        for (int k = 0; k < 3; k++) dim_last((em_tensor *)ts[k], dim);
        int64_t line = sizes[dim];
        if (op == EM_SCATTER_MUL || op == EM_SCATTER_AMAX || op == EM_SCATTER_AMIN) {
            reduce_ctx rc = {c, op};
            cpu_foreach_lines(3, ts, line, scatter_reduce_loop, &rc);
            c = rc.c;
        } else {
            cpu_foreach_lines(3, ts, line, op == EM_SCATTER ? scatter_loop : scatter_add_loop, &c);
        }
        break;
    }
    default:
        return em_set_error("index: unknown op %d", (int)op);
    }
    if (c.bad)
        return em_set_error("%s: index %lld is out of bounds for dimension %d with size %lld", name,
                            (long long)c.bad_value, dim + 1, (long long)c.size);
    return 0;
}

static bool is_nonzero(const char *p, em_dtype d)
{
    switch (d) {
    case EM_FLOAT32: return *(const float *)p != 0.0f;
    case EM_FLOAT64: return *(const double *)p != 0.0;
    case EM_INT64: return *(const int64_t *)p != 0;
    case EM_INT32: return *(const int32_t *)p != 0;
    case EM_UINT8: case EM_INT8: case EM_BOOL: return *(const uint8_t *)p != 0;
    case EM_INT16: return *(const uint16_t *)p != 0;
    default: return cpu_load_f64(p, d) != 0.0;   /* NaN counts as non-zero */
    }
}

int cpu_nonzero(em_tensor *out, const em_tensor *in)
{
    int nd = in->ndim;
    if (out->dtype != EM_INT64 || out->ndim != 2 || out->sizes[1] != nd)
        return em_set_error("nonzero: output %s %s does not fit input %s", SHAPE(out),
                            em_dtype_name(out->dtype), SHAPE(in));
    int64_t numel = em_numel(in), rows = out->sizes[0], found = 0;
    if (numel == 0) return rows == 0 ? 0 : em_set_error("nonzero: expected 0 rows for an empty input, got %lld", (long long)rows);
    size_t esz = em_dtype_size(in->dtype);
    int64_t coord[EM_MAX_DIMS] = {0};
    const char *base = (const char *)em_data_ptr(in);
    char *obase = (char *)em_data_ptr(out);
    if (esz == 1 && em_is_contiguous(in) && em_is_contiguous(out)) {
        /* a contiguous bool / uint8 mask (masked_select, x[mask]): a plain scan, the
         * coordinates of a hit from its position (the per-element odometer and the
         * per-element dtype switch were most of nonzero's time, 4x PyTorch's) */
        const uint8_t *m = (const uint8_t *)base;
        int64_t *o = (int64_t *)obase;
        if (nd == 0) found = m[0] != 0;        /* a 0-d input: rows of no columns, no buffer */
        if (rows == 0 || nd == 0)
            return found == rows ? 0 : em_set_error("nonzero: found %lld non-zero elements, %lld counted",
                                                    (long long)found, (long long)rows);
        /* the positions of the hits first, without a branch on the mask (a
         * random mask mispredicted one in six), each stored and kept when a hit */
        int64_t pos = 0;
        for (; pos < numel && found < rows; pos++) {
            o[found] = pos;
            found += m[pos] != 0;
        }
        for (; pos < numel; pos++) found += m[pos] != 0;
        if (found != rows)
            return em_set_error("nonzero: found %lld non-zero elements, %lld counted", (long long)found, (long long)rows);
        /* then each position as its row of 1-based coordinates, from the last:
         * row k (at k * nd >= k) never covers a position not yet read */
        for (int64_t k = rows - 1; k >= 0; k--) {
            int64_t rem = o[k], *row = o + k * nd;
            for (int d = nd - 1; d > 0; d--) {
                row[d] = rem % in->sizes[d] + 1;
                rem /= in->sizes[d];
            }
            row[0] = rem + 1;
        }
        return 0;
    }
    int64_t off = 0;   /* element offset of coord in `in` */
    for (int64_t pos = 0; pos < numel; pos++) {
        if (is_nonzero(base + off * (int64_t)esz, in->dtype)) {
            if (found == rows)
                return em_set_error("nonzero: more than the %lld non-zero elements counted", (long long)rows);
            for (int d = 0; d < nd; d++)
                *(int64_t *)(obase + (found * out->strides[0] + d * out->strides[1]) * 8) = coord[d] + 1;
            found++;
        }
        for (int d = nd - 1; d >= 0; d--) {
            off += in->strides[d];
            if (++coord[d] < in->sizes[d]) break;
            off -= in->strides[d] * in->sizes[d];
            coord[d] = 0;
        }
    }
    if (found != rows)
        return em_set_error("nonzero: found %lld non-zero elements, %lld counted", (long long)found, (long long)rows);
    return 0;
}
