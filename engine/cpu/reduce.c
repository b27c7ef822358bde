/* reduce.c — the CPU reduction kernel (sum, prod, max, min, all, any).
 *
 * `in` arrives permuted so that its last `nreduce` dims are the reduced ones
 * (backend.h). Both groups of dims are coalesced, which turns the common
 * layouts into one of two shapes:
 *  - rows: every output reduces a run of elements (contiguous for a reduction
 *    over the last dims or over a whole contiguous tensor). Outputs are spread
 *    over threads; a single big output (a full reduction) is split into
 *    chunks whose partial results are combined in order.
 *  - columns: the kept dims end in a unit-stride dim and the reduced dims do
 *    not (a reduction over leading dims, e.g. a column sum). Whole rows are
 *    accumulated into a block of outputs, which vectorises.
 *
 * Values are loaded a block at a time into a double (or int64) buffer, so the
 * arithmetic is written once for every dtype and float32 sums accumulate in
 * double. Whether an op computes in double or int64 follows the output dtype
 * for sum/prod (int64 for integer and bool inputs, chosen by the engine) and
 * the input dtype for max/min; all/any test values != 0 in double, so NaN
 * counts as true as in PyTorch. The output dtype may differ from the input's
 * (sum of int32 into int64, any/all into bool): values are converted here.
 * For max/min the index is the 1-based row-major position of the first
 * extreme within the reduced dims; NaN counts as the extreme (the first NaN
 * wins). */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BLK 1024            /* elements loaded per step (fits L1 as doubles) */
#define COLS 256            /* outputs accumulated together on the column path */

typedef struct layout {
    em_reduce_op op;
    bool fcat;              /* compute in double; otherwise in int64 */
    bool bf16_sum;          /* a sum of bfloat16 into bfloat16: float32 lanes on contiguous runs */
    bool want_idx;
    em_dtype dt, odt;
    size_t esz, oesz;
    const char *base;
    char *obase;            /* the (contiguous) output's elements */
    int nk, nr;             /* coalesced kept / reduced dims, in elements */
    int64_t ksz[EM_MAX_DIMS], kst[EM_MAX_DIMS];
    int64_t rsz[EM_MAX_DIMS], rst[EM_MAX_DIMS];
    int64_t outer, inner;
} layout;

/* The running result of reducing some elements into one output. */
typedef struct partial {
    double f;
    int64_t i;
    int64_t at;             /* 0-based position of the extreme (max/min) */
    bool has;               /* max/min: something seen yet */
} partial;

static void build_layout(layout *L, em_reduce_op op, const em_tensor *out, const em_tensor *in,
                         int nreduce, bool want_idx)
{
    L->op = op;
    L->want_idx = want_idx;
    L->dt = in->dtype;
    L->esz = em_dtype_size(in->dtype);
    L->base = (const char *)em_data_ptr(in);
    L->odt = out->dtype;
    L->oesz = em_dtype_size(out->dtype);
    L->obase = (char *)em_data_ptr(out);
    if (op == EM_RSUM || op == EM_RPROD) L->fcat = em_dtype_is_float(out->dtype);
    else if (op == EM_RMAX || op == EM_RMIN) L->fcat = em_dtype_is_float(in->dtype);
    else L->fcat = true;
    L->bf16_sum = op == EM_RSUM && in->dtype == EM_BFLOAT16 && out->dtype == EM_BFLOAT16;
    int nk = in->ndim - nreduce;
    L->outer = 1;
    L->inner = 1;
    for (int d = 0; d < nk; d++) {
        L->ksz[d] = in->sizes[d];
        L->kst[d] = in->strides[d];
        L->outer *= in->sizes[d];
    }
    for (int d = 0; d < nreduce; d++) {
        L->rsz[d] = in->sizes[nk + d];
        L->rst[d] = in->strides[nk + d];
        L->inner *= in->sizes[nk + d];
    }
    /* Without indices the order of the reduced elements is free: walking them
     * by decreasing stride makes e.g. a transposed tensor one contiguous run. */
    if (!want_idx) {
        for (int a = 1; a < nreduce; a++)
            for (int b = a; b > 0 && llabs(L->rst[b]) > llabs(L->rst[b - 1]); b--) {
                int64_t s = L->rsz[b]; L->rsz[b] = L->rsz[b - 1]; L->rsz[b - 1] = s;
                s = L->rst[b]; L->rst[b] = L->rst[b - 1]; L->rst[b - 1] = s;
            }
    }
    L->nk = emf_coalesce(L->ksz, L->kst, nk);
    L->nr = emf_coalesce(L->rsz, L->rst, nreduce);
}

/* ---- loading blocks ------------------------------------------------------ */

static const double *load_f(const char *p, int64_t n, int64_t st, em_dtype d, double *buf)
{
    if (d == EM_FLOAT64) {
        const double *q = (const double *)p;
        if (st == 1) return q;
        for (int64_t i = 0; i < n; i++) buf[i] = q[i * st];
    } else if (d == EM_FLOAT32) {
        const float *q = (const float *)p;
        if (st == 1) for (int64_t i = 0; i < n; i++) buf[i] = q[i];
        else for (int64_t i = 0; i < n; i++) buf[i] = q[i * st];
    } else if (d == EM_BFLOAT16) {
        /* the autocast CNN's bias gradients: a generic load per element cost
         * a tenth of its epoch */
        const uint16_t *q = (const uint16_t *)p;
        for (int64_t i = 0; i < n; i++) buf[i] = emf_bf16_to_float(q[i * st]);
    } else if (d == EM_FLOAT16) {
        const uint16_t *q = (const uint16_t *)p;
        for (int64_t i = 0; i < n; i++) buf[i] = em_half_to_float(q[i * st]);
    } else {
        int64_t step = st * (int64_t)em_dtype_size(d);
        for (int64_t i = 0; i < n; i++) buf[i] = cpu_load_f64(p + i * step, d);
    }
    return buf;
}

static const int64_t *load_i(const char *p, int64_t n, int64_t st, em_dtype d, int64_t *buf)
{
    if (d == EM_INT64) {
        const int64_t *q = (const int64_t *)p;
        if (st == 1) return q;
        for (int64_t i = 0; i < n; i++) buf[i] = q[i * st];
    } else if (d == EM_INT32) {
        const int32_t *q = (const int32_t *)p;
        for (int64_t i = 0; i < n; i++) buf[i] = q[i * st];
    } else if (d == EM_UINT8 || d == EM_BOOL) {     /* bool is stored as bytes 0 and 1 */
        const uint8_t *q = (const uint8_t *)p;
        for (int64_t i = 0; i < n; i++) buf[i] = q[i * st];
    } else {
        int64_t step = st * (int64_t)em_dtype_size(d);
        for (int64_t i = 0; i < n; i++) buf[i] = cpu_load_i64(p + i * step, d);
    }
    return buf;
}

/* ---- reducing one block into a partial ----------------------------------- */

/* The sum of n values of type T at x, in double: 32 lanes vectorise into four
 * independent vectors (eight lanes were one vector, whose adds wait on each
 * other: a quarter of the add rate), and are more accurate than one running
 * sum; the lanes are added pairwise. Short rows (sum(-1) of [N, 3]) take one
 * running sum: the lanes would cost more than they save. */
#define SUM_LANES(T)                                                                         \
    {                                                                                        \
        if (n < 32) {                                                                        \
            double s = 0;                                                                    \
            for (int64_t i = 0; i < n; i++) s += x[i];                                       \
            return s;                                                                        \
        }                                                                                    \
        double acc[32] = {0};                                                                \
        int64_t i = 0;                                                                       \
        for (; i + 32 <= n; i += 32)                                                         \
            for (int k = 0; k < 32; k++) acc[k] += x[i + k];                                 \
        double tail = 0;                                                                     \
        for (; i < n; i++) tail += x[i];                                                     \
        for (int w = 16; w >= 1; w /= 2)                                                     \
            for (int k = 0; k < w; k++) acc[k] += acc[k + w];                                \
        return acc[0] + tail;                                                                \
    }

static double sum_block(const double *x, int64_t n) SUM_LANES(double)

/* float32 straight from the tensor: converting into the double buffer first was
 * a second pass (sum(-1) of [1024, 1024] at 3x PyTorch's time) */
static double sum_f32(const float *x, int64_t n) SUM_LANES(float)

/* A contiguous bfloat16 block's sum in float32 lanes, PyTorch's accumulation
 * type for bfloat16 (64 lanes: four independent vectors, added pairwise at
 * the end); the partials across blocks add in double. Converting each element
 * to double first cost twice the time of the sum (bfloat16 is float32's top
 * half, so the conversion is a shift). For a 512-element row the rounding of
 * the float32 lanes is about 1/100 of a bfloat16 unit in the last place. */
static double sum_bf16(const uint16_t *q, int64_t n)
{
    float acc[64] = {0};
    int64_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int k = 0; k < 64; k++) acc[k] += emf_bf16_to_float(q[i + k]);
    float tail = 0;
    for (; i < n; i++) tail += emf_bf16_to_float(q[i]);
    for (int w = 32; w >= 1; w /= 2)
        for (int k = 0; k < w; k++) acc[k] += acc[k + w];
    return (double)acc[0] + tail;
}

/* The block's max (min); NaN if it holds one. Eight independent lanes of
 * compare-and-select vectorise (one running max is an ordered reduction the
 * compiler must keep scalar); NaNs are counted on the side. Comparing -v
 * instead of v turns the max into a min without a second loop. */
static double extreme_block(const double *x, int64_t n, bool ismax)
{
    double sign = ismax ? 1.0 : -1.0, m[8];
    int64_t nan[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < 8; k++) m[k] = sign * x[0];
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) {
            double v = sign * x[i + k];
            m[k] = v > m[k] ? v : m[k];
            nan[k] += v != v;
        }
    for (; i < n; i++) {
        double v = sign * x[i];
        m[0] = v > m[0] ? v : m[0];
        nan[0] += v != v;
    }
    for (int k = 1; k < 8; k++) { m[0] = m[k] > m[0] ? m[k] : m[0]; nan[0] += nan[k]; }
    return nan[0] ? NAN : sign * m[0];
}

static bool better_f(double v, double cur, bool ismax)
{
    if (v != v) return cur == cur;                  /* the first NaN wins */
    return ismax ? v > cur : v < cur;
}

static void block_f(const layout *L, const double *x, int64_t n, int64_t pos, partial *p)
{
    switch (L->op) {
    case EM_RSUM: p->f += sum_block(x, n); break;
    case EM_RPROD: {
        double r = 1;
        for (int64_t i = 0; i < n; i++) r *= x[i];
        p->f *= r;
        break;
    }
    case EM_RALL:
        if (p->i) for (int64_t i = 0; i < n; i++) if (x[i] == 0) { p->i = 0; break; }
        break;
    case EM_RANY:
        if (!p->i) for (int64_t i = 0; i < n; i++) if (x[i] != 0) { p->i = 1; break; }
        break;
    case EM_RMAX:
    case EM_RMIN: {
        bool ismax = L->op == EM_RMAX;
        /* branch-free pass for the block's extreme, then a search for its
         * first position only when it improves on what came before */
        double m = extreme_block(x, n, ismax);
        bool nan = m != m;
        if (p->has && !better_f(m, p->f, ismax)) break;
        p->f = m;
        p->has = true;
        if (L->want_idx) {
            int64_t k = 0;
            if (nan) while (x[k] == x[k]) k++;
            else while (x[k] != m) k++;
            p->at = pos + k;
        }
        break;
    }
    default: break;
    }
}

static void block_i(const layout *L, const int64_t *x, int64_t n, int64_t pos, partial *p)
{
    switch (L->op) {
    case EM_RSUM: {
        uint64_t s = (uint64_t)p->i;      /* wraps like PyTorch, without UB */
        for (int64_t i = 0; i < n; i++) s += (uint64_t)x[i];
        p->i = (int64_t)s;
        break;
    }
    case EM_RPROD: {
        uint64_t r = (uint64_t)p->i;
        for (int64_t i = 0; i < n; i++) r *= (uint64_t)x[i];
        p->i = (int64_t)r;
        break;
    }
    case EM_RMAX:
    case EM_RMIN: {
        bool ismax = L->op == EM_RMAX;
        int64_t m = x[0];
        if (ismax) for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
        else for (int64_t i = 0; i < n; i++) m = x[i] < m ? x[i] : m;
        if (p->has && !(ismax ? m > p->i : m < p->i)) break;
        p->i = m;
        p->has = true;
        if (L->want_idx) {
            int64_t k = 0;
            while (x[k] != m) k++;
            p->at = pos + k;
        }
        break;
    }
    default: break;
    }
}

static partial identity(const layout *L)
{
    partial p = {0, 0, 0, false};
    if (L->op == EM_RPROD) { p.f = 1; p.i = 1; }
    if (L->op == EM_RALL) p.i = 1;
    return p;
}

/* Folds b (covering later positions) into a. */
static void combine(const layout *L, partial *a, const partial *b)
{
    switch (L->op) {
    case EM_RSUM: a->f += b->f; a->i = (int64_t)((uint64_t)a->i + (uint64_t)b->i); break;
    case EM_RPROD: a->f *= b->f; a->i = (int64_t)((uint64_t)a->i * (uint64_t)b->i); break;
    case EM_RALL: a->i = a->i && b->i; break;
    case EM_RANY: a->i = a->i || b->i; break;
    default: {
        if (!b->has) break;
        bool ismax = L->op == EM_RMAX;
        bool take = !a->has || (L->fcat ? better_f(b->f, a->f, ismax)
                                        : (ismax ? b->i > a->i : b->i < a->i));
        if (take) *a = *b;
        break;
    }
    }
}

/* Folds the len elements at ptr (stride st; positions pos...) into p; false when
 * the result is decided (all / any), so the rest need not be read. */
static bool run_into(const layout *L, const char *ptr, int64_t len, int64_t st, int64_t pos, partial *p)
{
    double fbuf[BLK];
    int64_t ibuf[BLK];
    if (L->bf16_sum && st == 1) p->f += sum_bf16((const uint16_t *)ptr, len);
    else if (L->op == EM_RSUM && L->fcat && L->dt == EM_FLOAT32 && st == 1) p->f += sum_f32((const float *)ptr, len);
    else if (L->fcat) block_f(L, load_f(ptr, len, st, L->dt, fbuf), len, pos, p);
    else block_i(L, load_i(ptr, len, st, L->dt, ibuf), len, pos, p);
    return !((L->op == EM_RALL && !p->i) || (L->op == EM_RANY && p->i));
}

/* Reduces the reduced positions [r0, r1) of the block starting at obase. */
static void reduce_range(const layout *L, const char *obase, int64_t r0, int64_t r1, partial *p)
{
    if (L->nr == 0) {               /* one element per output */
        run_into(L, obase, 1, 1, 0, p);
        return;
    }
    if (L->nr == 1) {               /* one run, the usual case once dims are coalesced: no odometer (its
                                     * set-up was most of sum(-1)'s time on [65536, 3]) */
        int64_t st = L->rst[0], step = st * (int64_t)L->esz;
        for (int64_t pos = r0; pos < r1; pos += BLK)
            if (!run_into(L, obase + pos * step, r1 - pos < BLK ? r1 - pos : BLK, st, pos, p)) return;
        return;
    }
    int nr = L->nr, in = nr - 1;
    int64_t coord[EM_MAX_DIMS], rem = r0, off = 0;
    for (int d = nr - 1; d >= 0; d--) {
        coord[d] = rem % L->rsz[d];
        rem /= L->rsz[d];
        off += coord[d] * L->rst[d];
    }
    int64_t pos = r0;
    while (pos < r1) {
        int64_t len = L->rsz[in] - coord[in];
        if (len > r1 - pos) len = r1 - pos;
        if (len > BLK) len = BLK;
        if (!run_into(L, obase + off * (int64_t)L->esz, len, L->rst[in], pos, p)) return;
        pos += len;
        coord[in] += len;
        off += len * L->rst[in];
        for (int d = in; d > 0 && coord[d] == L->rsz[d]; d--) {
            coord[d] = 0;
            off -= L->rsz[d] * L->rst[d];
            coord[d - 1]++;
            off += L->rst[d - 1];
        }
    }
}

/* Element offset (in elements) of output i's block in the input. */
static int64_t kept_offset(const layout *L, int64_t i)
{
    int64_t off = 0;
    for (int d = L->nk - 1; d >= 0; d--) {
        off += (i % L->ksz[d]) * L->kst[d];
        i /= L->ksz[d];
    }
    return off;
}

static void store(const layout *L, int64_t *idx, int64_t i, const partial *p)
{
    char *o = L->obase + i * (int64_t)L->oesz;
    if (L->op == EM_RALL || L->op == EM_RANY) cpu_store_i64(o, L->odt, p->i);
    else if (!L->fcat) cpu_store_i64(o, L->odt, p->i);
    else if (L->odt == EM_FLOAT32) *(float *)o = (float)p->f;
    else if (L->odt == EM_FLOAT64) *(double *)o = p->f;
    else cpu_store_f64(o, L->odt, p->f);
    if (idx) idx[i] = p->at + 1;
}

/* ---- the rows path ------------------------------------------------------- */

typedef struct rows_job {
    const layout *L;
    int64_t *idx;
    const char *ob;         /* split path: the output's elements, the parts and their length */
    partial *parts;
    int64_t chunk;
} rows_job;

/* the parts of one output's elements, each a fixed range of `chunk` */
static void rows_parts(int64_t lo, int64_t hi, void *ctx)
{
    const rows_job *j = ctx;
    int64_t inner = j->L->inner;
    for (int64_t c = lo; c < hi; c++) {
        int64_t s = c * j->chunk, e = s + j->chunk < inner ? s + j->chunk : inner;
        j->parts[c] = identity(j->L);
        if (s < e) reduce_range(j->L, j->ob, s, e, &j->parts[c]);
    }
}

static void rows_range(int64_t lo, int64_t hi, void *ctx)
{
    const rows_job *j = ctx;
    const layout *L = j->L;
    /* the kept coordinates advance like an odometer: one division per range, not per output
     * (they were a third of sum(-1)'s time on [65536, 3]) */
    int64_t coord[EM_MAX_DIMS] = {0}, off = 0, rem = lo;
    for (int d = L->nk - 1; d >= 0; d--) {
        coord[d] = rem % L->ksz[d];
        rem /= L->ksz[d];
        off += coord[d] * L->kst[d];
    }
    /* short contiguous float rows summed whole (sum(-1) of [N, 3]): the sum itself,
     * without the per-row machinery of reduce_range (most of the time there) */
    bool short_sum = L->op == EM_RSUM && L->fcat && L->nr == 1 && L->rst[0] == 1 && L->inner < 32 &&
                     (L->dt == EM_FLOAT32 || L->dt == EM_FLOAT64);
    for (int64_t i = lo; i < hi; i++) {
        partial p = identity(L);
        const char *row = L->base + off * (int64_t)L->esz;
        if (short_sum) p.f = L->dt == EM_FLOAT32 ? sum_f32((const float *)row, L->inner)
                                                 : sum_block((const double *)row, L->inner);
        else reduce_range(L, row, 0, L->inner, &p);
        store(L, j->idx, i, &p);
        for (int d = L->nk - 1; d >= 0; d--) {
            off += L->kst[d];
            if (++coord[d] < L->ksz[d]) break;
            off -= coord[d] * L->kst[d];
            coord[d] = 0;
        }
    }
}

static void reduce_rows(const layout *L, int64_t *idx)
{
    int64_t outer = L->outer, inner = L->inner;
    int nt = cpu_threads();
    rows_job j = {.L = L, .idx = idx};
    if (outer < nt && cpu_parallel(inner) && nt > 1) {
        /* few big outputs: split each one's positions into nt fixed parts
         * (the same parts whichever threads run them: the same result) */
        partial *parts = malloc(sizeof(partial) * (size_t)nt);
        for (int64_t i = 0; i < outer; i++) {
            j.ob = L->base + kept_offset(L, i) * (int64_t)L->esz;
            partial total = identity(L);
            if (!parts) {
                reduce_range(L, j.ob, 0, inner, &total);
            } else {
                j.parts = parts;
                j.chunk = ((inner + nt - 1) / nt + BLK - 1) / BLK * BLK;
                cpu_parallel_for(nt, inner, 1, rows_parts, &j);
                for (int c = 0; c < nt; c++) combine(L, &total, &parts[c]);
            }
            store(L, idx, i, &total);
        }
        free(parts);
        return;
    }
    cpu_parallel_for(outer, outer * (inner + 4), 1, rows_range, &j);
}

/* ---- the columns path ---------------------------------------------------- */

static void cols_f(const layout *L, const double *x, int64_t n, int64_t r, double *acc, int64_t *iacc, int64_t *at)
{
    switch (L->op) {
    case EM_RSUM: for (int64_t j = 0; j < n; j++) acc[j] += x[j]; break;
    case EM_RPROD: for (int64_t j = 0; j < n; j++) acc[j] *= x[j]; break;
    case EM_RALL: for (int64_t j = 0; j < n; j++) iacc[j] &= x[j] != 0; break;
    case EM_RANY: for (int64_t j = 0; j < n; j++) iacc[j] |= x[j] != 0; break;
    case EM_RMAX:
    case EM_RMIN: {
        bool ismax = L->op == EM_RMAX;
        if (r == 0) {
            for (int64_t j = 0; j < n; j++) { acc[j] = x[j]; at[j] = 0; }
            break;
        }
        for (int64_t j = 0; j < n; j++)
            if (better_f(x[j], acc[j], ismax)) { acc[j] = x[j]; at[j] = r; }
        break;
    }
    default: break;
    }
}

static void cols_i(const layout *L, const int64_t *x, int64_t n, int64_t r, int64_t *iacc, int64_t *at)
{
    switch (L->op) {
    case EM_RSUM: for (int64_t j = 0; j < n; j++) iacc[j] = (int64_t)((uint64_t)iacc[j] + (uint64_t)x[j]); break;
    case EM_RPROD: for (int64_t j = 0; j < n; j++) iacc[j] = (int64_t)((uint64_t)iacc[j] * (uint64_t)x[j]); break;
    case EM_RMAX:
        if (r == 0) { for (int64_t j = 0; j < n; j++) { iacc[j] = x[j]; at[j] = 0; } break; }
        for (int64_t j = 0; j < n; j++) if (x[j] > iacc[j]) { iacc[j] = x[j]; at[j] = r; }
        break;
    case EM_RMIN:
        if (r == 0) { for (int64_t j = 0; j < n; j++) { iacc[j] = x[j]; at[j] = 0; } break; }
        for (int64_t j = 0; j < n; j++) if (x[j] < iacc[j]) { iacc[j] = x[j]; at[j] = r; }
        break;
    default: break;
    }
}

typedef struct cols_job {
    const layout *L, *Lk;   /* Lk: kept_offset over the outer kept dims */
    int64_t *idx;
    int64_t W, nblk;
} cols_job;

/* units u: group u / nblk of the outer kept dims, COLS outputs from (u % nblk) * COLS */
static void cols_range(int64_t lo, int64_t hi, void *ctx)
{
    const cols_job *cj = ctx;
    const layout *L = cj->L;
    int64_t W = cj->W, nblk = cj->nblk;
    for (int64_t u = lo; u < hi; u++) {
        int64_t g = u / nblk, j0 = (u % nblk) * COLS;
        int64_t n = W - j0 < COLS ? W - j0 : COLS;
        double acc[COLS], fbuf[COLS];
        int64_t iacc[COLS], at[COLS], ibuf[COLS];
        partial id = identity(L);
        for (int64_t j = 0; j < n; j++) { acc[j] = id.f; iacc[j] = id.i; at[j] = 0; }
        const char *gb = L->base + (kept_offset(cj->Lk, g) + j0) * (int64_t)L->esz;
        int64_t coord[EM_MAX_DIMS] = {0}, off = 0;
        for (int64_t r = 0; r < L->inner; r++) {
            const char *ptr = gb + off * (int64_t)L->esz;
            if (L->fcat) cols_f(L, load_f(ptr, n, 1, L->dt, fbuf), n, r, acc, iacc, at);
            else cols_i(L, load_i(ptr, n, 1, L->dt, ibuf), n, r, iacc, at);
            for (int d = L->nr - 1; d >= 0; d--) {
                off += L->rst[d];
                if (++coord[d] < L->rsz[d]) break;
                off -= coord[d] * L->rst[d];
                coord[d] = 0;
            }
        }
        for (int64_t j = 0; j < n; j++) {
            partial p = {acc[j], iacc[j], at[j], true};
            store(L, cj->idx, g * W + j0 + j, &p);
        }
    }
}

/* The kept dims end in a unit-stride dim of width W: for each group of COLS
 * outputs, walk every reduced position and fold a contiguous row in. */
static void reduce_cols(const layout *L, int64_t *idx)
{
    int64_t W = L->ksz[L->nk - 1];
    layout Lk = *L;
    Lk.nk = L->nk - 1;
    cols_job cj = {.L = L, .Lk = &Lk, .idx = idx, .W = W, .nblk = (W + COLS - 1) / COLS};
    cpu_parallel_for(L->outer / W * cj.nblk, L->outer * L->inner, 1, cols_range, &cj);
}

/* ---- entry --------------------------------------------------------------- */

static int reduce_contig(em_reduce_op op, em_tensor *out, em_tensor *idx, const em_tensor *in, int nreduce)
{
    layout L;
    build_layout(&L, op, out, in, nreduce, idx != NULL);
    if (L.outer == 0) return 0;
    if (L.inner == 0 && (op == EM_RMAX || op == EM_RMIN))
        return em_set_error("%s: cannot reduce over an empty dimension (input %s)",
                            op == EM_RMAX ? "max" : "min", SHAPE(in));
    int64_t *ip = idx ? (int64_t *)em_data_ptr(idx) : NULL;
    if (L.inner == 0) {
        partial p = identity(&L);
        for (int64_t i = 0; i < L.outer; i++) store(&L, ip, i, &p);
        return 0;
    }
    /* Columns when the outputs are adjacent in memory and the reduced
     * elements of one output are not; narrow column groups lose to rows. */
    bool rows_contig = L.nr == 0 || L.rst[L.nr - 1] == 1;
    if (!rows_contig && L.nk > 0 && L.kst[L.nk - 1] == 1 && L.ksz[L.nk - 1] >= 16)
        reduce_cols(&L, ip);
    else
        reduce_rows(&L, ip);
    return 0;
}

int cpu_reduce(em_reduce_op op, em_tensor *out, em_tensor *idx, const em_tensor *in, int nreduce)
{
    if (nreduce < 0 || nreduce > in->ndim || out->ndim != in->ndim - nreduce)
        return em_set_error("reduce: %d reduced dims do not match input %s and output %s",
                            nreduce, SHAPE(in), SHAPE(out));
    if (idx && idx->dtype != EM_INT64)
        return em_set_error("reduce: index output must be int64, got %s", em_dtype_name(idx->dtype));
    bool oc = em_is_contiguous(out), ic = !idx || em_is_contiguous(idx);
    if (oc && ic) return reduce_contig(op, out, idx, in, nreduce);
    /* strided outputs: reduce into contiguous ones, then copy over */
    em_tensor *o = oc ? em_retain(out) : em_empty(out->sizes, out->ndim, out->dtype, em_dev(out));
    em_tensor *x = (!idx || ic) ? (idx ? em_retain(idx) : NULL) : em_empty(idx->sizes, idx->ndim, EM_INT64, em_dev(idx));
    int rc = -1;
    if (o && (x || !idx)) {
        rc = reduce_contig(op, o, x, in, nreduce);
        if (rc == 0 && o != out) rc = cpu_cast(out, o);
        if (rc == 0 && idx && x != idx) rc = cpu_cast(idx, x);
    }
    if (o) em_release(o);
    if (x) em_release(x);
    return rc;
}
