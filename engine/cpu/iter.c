/* iter.c — the CPU elementwise iterator: coalesces dims, then hands runs of
 * elements along the innermost dim to a loop function, over threads when the
 * tensor is large enough for that to pay. */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

typedef struct iter {
    int nops, ndim;
    int64_t sizes[EM_MAX_DIMS];                 /* innermost last */
    int64_t strides[CPU_MAX_OPS][EM_MAX_DIMS];  /* bytes */
    char *base[CPU_MAX_OPS];
    int64_t numel;
} iter;

static void iter_init(iter *it, int nops, const em_tensor *const *ts)
{
    const em_tensor *t0 = ts[0];
    it->nops = nops;
    it->numel = em_numel(t0);
    int nd = 0;
    /* drop size-1 dims, convert strides to bytes */
    for (int d = 0; d < t0->ndim; d++) {
        if (t0->sizes[d] == 1) continue;
        it->sizes[nd] = t0->sizes[d];
        for (int k = 0; k < nops; k++)
            it->strides[k][nd] = ts[k]->strides[d] * (int64_t)em_dtype_size(ts[k]->dtype);
        nd++;
    }
    /* merge a dim into the one inside it when every operand allows it */
    int out = 0;
    for (int d = 0; d < nd; d++) {
        if (out > 0) {
            bool ok = true;
            for (int k = 0; k < nops && ok; k++)
                ok = it->strides[k][out - 1] == it->strides[k][d] * it->sizes[d];
            if (ok) {
                it->sizes[out - 1] *= it->sizes[d];
                for (int k = 0; k < nops; k++) it->strides[k][out - 1] = it->strides[k][d];
                continue;
            }
        }
        it->sizes[out] = it->sizes[d];
        for (int k = 0; k < nops; k++) it->strides[k][out] = it->strides[k][d];
        out++;
    }
    if (out == 0) { /* 0-d or all size 1: one element */
        it->sizes[0] = 1;
        for (int k = 0; k < nops; k++) it->strides[k][0] = 0;
        out = 1;
    }
    it->ndim = out;
    for (int k = 0; k < nops; k++) it->base[k] = (char *)em_data_ptr(ts[k]);
}

/* Runs fn over the flattened positions [start, end). */
static void iter_range(const iter *it, int64_t start, int64_t end, cpu_loop_fn fn, void *ctx)
{
    int nd = it->ndim, inner = nd - 1;
    int64_t coord[EM_MAX_DIMS];
    char *ptrs[CPU_MAX_OPS];
    int64_t inner_strides[CPU_MAX_OPS];
    int64_t rem = start;
    for (int d = nd - 1; d >= 0; d--) { coord[d] = rem % it->sizes[d]; rem /= it->sizes[d]; }
    for (int k = 0; k < it->nops; k++) {
        char *p = it->base[k];
        for (int d = 0; d < nd; d++) p += coord[d] * it->strides[k][d];
        ptrs[k] = p;
        inner_strides[k] = it->strides[k][inner];
    }
    int64_t pos = start;
    while (pos < end) {
        int64_t len = it->sizes[inner] - coord[inner];
        if (len > end - pos) len = end - pos;
        fn(ptrs, inner_strides, len, ctx);
        pos += len;
        if (pos >= end) break;
        coord[inner] += len;
        for (int k = 0; k < it->nops; k++) ptrs[k] += len * inner_strides[k];
        /* carry into outer dims */
        for (int d = inner; d > 0 && coord[d] == it->sizes[d]; d--) {
            coord[d] = 0;
            coord[d - 1]++;
            for (int k = 0; k < it->nops; k++)
                ptrs[k] += it->strides[k][d - 1] - it->sizes[d] * it->strides[k][d];
        }
    }
}

/* Whether every operand is contiguous with ts[0]'s sizes (no broadcast, no
 * view): then the whole op is one run of numel elements, and a small op
 * skips the iterator (whose set-up cost more than a 16-element loop). */
static bool one_run(int nops, const em_tensor *const *ts, char **ptrs, int64_t *strides)
{
    const em_tensor *t0 = ts[0];
    for (int k = 0; k < nops; k++) {
        const em_tensor *t = ts[k];
        if (t->ndim != t0->ndim) return false;
        int64_t expected = 1;
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (t->sizes[d] != t0->sizes[d] || (t->sizes[d] != 1 && t->strides[d] != expected)) return false;
            expected *= t->sizes[d];
        }
        strides[k] = (int64_t)em_dtype_size(t->dtype);
        ptrs[k] = (char *)em_data_ptr(t);
    }
    return true;
}

void cpu_foreach_serial(int nops, const em_tensor *const *ts, cpu_loop_fn fn, void *ctx)
{
    char *ptrs[CPU_MAX_OPS];
    int64_t strides[CPU_MAX_OPS];
    int64_t n = em_numel(ts[0]);
    if (n > 0 && one_run(nops, ts, ptrs, strides)) {
        fn(ptrs, strides, n, ctx);
        return;
    }
    iter it;
    iter_init(&it, nops, ts);
    if (it.numel > 0) iter_range(&it, 0, it.numel, fn, ctx);
}

void cpu_for_ranges(int64_t n, cpu_range_fn fn, void *ctx)
{
    /* starts at multiples of 64: each thread on its own cache lines, and
     * random numbers keep whole Philox counters per range */
    cpu_parallel_for(n, n, 64, fn, ctx);
}

typedef struct foreach_job {
    const iter *it;
    cpu_loop_fn fn;
    void *ctx;
} foreach_job;

static void foreach_range(int64_t s, int64_t e, void *ctx)
{
    const foreach_job *j = ctx;
    iter_range(j->it, s, e, j->fn, j->ctx);
}

void cpu_foreach_lines(int nops, const em_tensor *const *ts, int64_t line, cpu_loop_fn fn, void *ctx)
{
    int64_t n = em_numel(ts[0]);
    if (!cpu_parallel(n) || line < 1 || line >= n) {   /* one thread: cpu_foreach_serial's fast path */
        cpu_foreach_serial(nops, ts, fn, ctx);
        return;
    }
    iter it;
    iter_init(&it, nops, ts);
    foreach_job j = {&it, fn, ctx};
    cpu_parallel_for(it.numel, it.numel, line, foreach_range, &j);
}

/* The order-free walk of cpu_foreach: when every operand that moves steps less
 * along the second-inner dim than along the inner one (an in-place op on a
 * transposed tensor, x:t():mul_(2)), the two are swapped, so each run is
 * contiguous. An operand sharing the output's memory as another view
 * (an overlapping slice) keeps the row-major order. (Tiles for a mix of
 * layouts, x:t() * 2 into a contiguous output, lost: the loops' cost per run
 * outweighed the cache lines they kept; such an operand is copied by blocks
 * first instead, worth_staging below.) */
static void reorder_inner(iter *it, int nops, const em_tensor *const *ts)
{
    int nd = it->ndim, a = nd - 2, b = nd - 1;
    if (nd < 2) return;
    for (int k = 0; k < nops; k++) {
        int64_t sa = llabs(it->strides[k][a]), sb = llabs(it->strides[k][b]);
        if (sa == 0 && sb == 0) continue;           /* a broadcast number */
        if (sa == 0 || sa >= sb) return;
        if (k > 0 && ts[k]->storage == ts[0]->storage &&
            (ts[k]->offset != ts[0]->offset || ts[k]->ndim != ts[0]->ndim ||
             memcmp(ts[k]->strides, ts[0]->strides, sizeof(int64_t) * (size_t)ts[0]->ndim)))
            return;
    }
    int64_t t = it->sizes[a]; it->sizes[a] = it->sizes[b]; it->sizes[b] = t;
    for (int k = 0; k < nops; k++) {
        t = it->strides[k][a]; it->strides[k][a] = it->strides[k][b]; it->strides[k][b] = t;
    }
}

static void run_iter(const iter *it, cpu_loop_fn fn, void *ctx)
{
    if (it->numel <= 0) return;
    if (!cpu_parallel(it->numel)) {
        iter_range(it, 0, it->numel, fn, ctx);
        return;
    }
    foreach_job j = {it, fn, ctx};
    cpu_parallel_for(it->numel, it->numel, 64, foreach_range, &j);
}

/* An input worth copying to a contiguous buffer first (the copy goes by
 * blocks, copy.c's copy_transposed): a large matrix-shaped operand with its
 * last two dims swapped, read into a contiguous output of the same sizes
 * (x:t():exp(), x:t() + y). Read in place, each run of the output steps
 * across a page of it: 2-5x the time of the copy and a contiguous op
 * together. When it is the output's own memory (x:add_(x:t())), the copy
 * also gives the op the values from before it, as NumPy does for operands
 * that overlap (read in place, threads would race over them). */
#define STAGE_MIN 65536
static bool worth_staging(const em_tensor *out, const em_tensor *t)
{
    int nd = t->ndim;
    size_t esz = em_dtype_size(t->dtype);
    if (nd < 2 || t->ndim != out->ndim || em_numel(t) < STAGE_MIN) return false;
    if (t->strides[nd - 2] != 1 || t->strides[nd - 1] == 1 || !em_is_contiguous(out)) return false;
    /* the blocked copy's own conditions, else the copy is as slow as the op */
    if ((esz != 2 && esz != 4 && esz != 8) || t->sizes[nd - 2] < 16 || t->sizes[nd - 1] < 16) return false;
    for (int d = 0; d < nd; d++)
        if (t->sizes[d] != out->sizes[d] || (t->sizes[d] > 1 && t->strides[d] == 0)) return false;
    return true;
}

static void foreach_impl(int nops, const em_tensor *const *ts, cpu_loop_fn fn, void *ctx, bool stage)
{
    char *ptrs[CPU_MAX_OPS];
    int64_t strides[CPU_MAX_OPS];
    int64_t n = em_numel(ts[0]);
    if (n <= 0) return;
    bool contiguous = one_run(nops, ts, ptrs, strides);
    if (contiguous && !cpu_parallel(n)) {
        fn(ptrs, strides, n, ctx);
        return;
    }
    const em_tensor *ops[CPU_MAX_OPS];
    em_tensor *staged[CPU_MAX_OPS] = {0};
    for (int k = 0; k < nops; k++) {
        ops[k] = ts[k];
        if (k == 0 || contiguous || !stage || !worth_staging(ts[0], ts[k])) continue;
        em_tensor *c = em_empty(ts[k]->sizes, ts[k]->ndim, ts[k]->dtype, em_dev(ts[k]));
        if (c && cpu_cast(c, ts[k]) == 0) ops[k] = staged[k] = c;
        else em_release(c);           /* no memory for it: read in place */
    }
    iter it;
    iter_init(&it, nops, ops);
    if (!contiguous) reorder_inner(&it, nops, ops);
    run_iter(&it, fn, ctx);
    for (int k = 0; k < nops; k++) em_release(staged[k]);
}

/* ranges starting at multiples of 64, as cpu_for_ranges's; any order */
void cpu_foreach(int nops, const em_tensor *const *ts, cpu_loop_fn fn, void *ctx)
{
    foreach_impl(nops, ts, fn, ctx, false);
}

void cpu_foreach_elementwise(int nops, const em_tensor *const *ts, cpu_loop_fn fn, void *ctx)
{
    foreach_impl(nops, ts, fn, ctx, true);
}
