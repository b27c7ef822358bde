/* pooling.c — max and average pooling over 1 to 3 spatial dims, and the
 * adjoint of average pooling (see backend.h for the window rules).
 *
 * Every case is run as 3-D pooling: missing leading spatial dims get size 1
 * and a 1-wide window. The windows are clipped to the input once per dim and
 * output position (first position, count of positions inside [0, I), count
 * inside the padded range), so the plane loops never test bounds. Planes
 * (n, c) are independent and are split over threads. The common CNN case
 * (2-D, 2x2 windows, stride 2, no padding, float32) has its own loops: max
 * pooling of planes with even rows runs as straight loops over the plane
 * (max_plane_2x2_even_f32), [128,32,28,28] 1.57 -> 0.47 ms and
 * [128,64,14,14] 1.59 -> 0.33 ms (2 threads, best of 20, 2026-11-29;
 * PyTorch 2.15: 6.4 and 3.4 ms), where the row-by-row loop spent most of
 * its time on rows of 7 or 14 outputs. */
#include "cpu.h"

#include <stdlib.h>

/* One spatial dim's windows, o in [0, O): positions start[o] + j*step,
 * j < count[o], all inside [0, I); padcount[o] counts the window positions
 * inside [-pad, I + pad) (count_include_pad's divisor factor). */
typedef struct pool_dim {
    int64_t I, O, step;
    int64_t *start, *count, *padcount;
} pool_dim;

typedef struct pool_job {
    em_pool_op op;
    pool_dim d[3];
    int64_t in_plane, out_plane;
    int64_t divisor;            /* > 0: divisor_override */
    bool include_pad, fast2x2;
    em_dtype dtype;
    char *out;                  /* out (forward) or gin (backward) */
    int64_t *idx;
    const char *in;             /* in (forward) or gout (backward) */
} pool_job;

/* max_plane_2x2_even_f32's buffers, on each thread's stack: planes of up
 * to POOL_EVEN_MAX values in the rows used (64 x 64) */
#define POOL_EVEN_MAX 4096
typedef struct pool_scratch {
    float hm[POOL_EVEN_MAX], vm[POOL_EVEN_MAX];
    int32_t hx[POOL_EVEN_MAX];
    int64_t vx[POOL_EVEN_MAX];
} pool_scratch;

static int64_t ceil_div_pos(int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; }

static void dim_windows(pool_dim *d, int64_t k, int64_t s, int64_t pad, int64_t dil, bool adaptive)
{
    d->step = adaptive ? 1 : dil;
    for (int64_t o = 0; o < d->O; o++) {
        if (adaptive) {
            int64_t lo = o * d->I / d->O, hi = ((o + 1) * d->I + d->O - 1) / d->O;
            d->start[o] = lo;
            d->count[o] = d->padcount[o] = hi - lo;
            continue;
        }
        int64_t first = o * s - pad;
        int64_t jlo = first < 0 ? ceil_div_pos(-first, dil) : 0;
        int64_t jhi = ceil_div_pos(d->I - first, dil);
        jhi = jhi < k ? jhi : k;
        int64_t jpad = ceil_div_pos(d->I + pad - first, dil);
        d->start[o] = first + jlo * dil;
        d->count[o] = jhi > jlo ? jhi - jlo : 0;
        d->padcount[o] = jpad < k ? jpad : k;
    }
}

/* the divisor of output (o0, o1, o2) */
static int64_t avg_divisor(const pool_job *j, int64_t o0, int64_t o1, int64_t o2)
{
    if (j->divisor > 0) return j->divisor;
    if (j->include_pad)
        return j->d[0].padcount[o0] * j->d[1].padcount[o1] * j->d[2].padcount[o2];
    return j->d[0].count[o0] * j->d[1].count[o1] * j->d[2].count[o2];
}

/* ---- max ------------------------------------------------------------------------ */

/* One step of the 2x2 loop: (v, at) replaces (*m, *best) when v is larger
 * or the first NaN. Conditions without short-circuits and selects on
 * integers (the float's bits) compile to conditional moves: the rows are
 * short (14 outputs in a small CNN), so most outputs are computed by scalar
 * code, where a branch on random data would mispredict every other time. */
static inline void take_f32(float v, int64_t at, float *m, int64_t *best)
{
    int32_t t = -((int32_t)(v > *m) | ((int32_t)(v != v) & (int32_t)(*m == *m)));
    uint32_t vb, mb;
    memcpy(&vb, &v, sizeof vb);
    memcpy(&mb, m, sizeof mb);
    mb ^= (mb ^ vb) & (uint32_t)t;
    *best ^= (*best ^ at) & (int64_t)t;
    memcpy(m, &mb, sizeof *m);
}

/* 2x2 windows, stride 2, no padding, dilation 1, float32: the windows tile
 * the plane (an odd last row or column is never read), so each output row
 * reads two input rows. Same selection rule as max_plane_f32. */
static void max_plane_2x2_f32(const pool_job *j, float *out, int64_t *idx, const float *in)
{
    int64_t W = j->d[2].I, OH = j->d[1].O, OW = j->d[2].O;
    for (int64_t oh = 0; oh < OH; oh++) {
        const float *r0 = in + 2 * oh * W, *r1 = r0 + W;
        float *o = out + oh * OW;
        int64_t *ix = idx + oh * OW, p = 2 * oh * W + 1;    /* 1-based */
        for (int64_t ow = 0; ow < OW; ow++, p += 2) {
            float m = r0[2 * ow];
            int64_t best = p;
            take_f32(r0[2 * ow + 1], p + 1, &m, &best);
            take_f32(r1[2 * ow], p + W, &m, &best);
            take_f32(r1[2 * ow + 1], p + W + 1, &m, &best);
            o[ow] = m;
            ix[ow] = best;
        }
    }
}

/* The same windows on a plane whose rows have even length, in straight
 * loops over the whole plane (which vectorize) instead of short rows:
 *  1. the larger of each horizontal pair: the rows used hold OH * W / 2
 *     pairs and no pair straddles two rows, so pair i is in[2i], in[2i+1]
 *     (hm[i], and hx[i] its position);
 *  2. the larger of hm[i] and hm[i + OW], the pair below, for every i: the
 *     results of even rows are the outputs (the odd rows' are not used);
 *  3. those rows copied to out and idx.
 * The taking rule applied left before right, then top before bottom picks
 * what the row-major scan picks: the first NaN, else the first largest.
 * The buffers hold OH * W values. */
static void max_plane_2x2_even_f32(const pool_job *j, float *out, int64_t *idx, const float *in,
                                   pool_scratch *sc)
{
    int64_t W = j->d[2].I, OH = j->d[1].O, OW = j->d[2].O, n = OH * W;
    float *hm = sc->hm, *vm = sc->vm;
    int32_t *hx = sc->hx;
    int64_t *vx = sc->vx;
    for (int64_t i = 0; i < n; i++) {
        float a = in[2 * i], b = in[2 * i + 1];
        bool t = (b > a) | ((b != b) & (a == a));
        hm[i] = t ? b : a;
        hx[i] = (int32_t)(2 * i + 1) + t;      /* 1-based */
    }
    for (int64_t i = 0; i + OW < n; i++) {
        float a = hm[i], b = hm[i + OW];
        bool t = (b > a) | ((b != b) & (a == a));
        vm[i] = t ? b : a;
        vx[i] = t ? hx[i + OW] : hx[i];
    }
    for (int64_t oh = 0; oh < OH; oh++) {
        memcpy(out + oh * OW, vm + 2 * oh * OW, (size_t)OW * sizeof *out);
        memcpy(idx + oh * OW, vx + 2 * oh * OW, (size_t)OW * sizeof *idx);
    }
}

/* ---- average ---------------------------------------------------------------------- */

/* 2x2 windows tiling the plane (the max_plane_2x2_f32 case): every window
 * is whole, so the divisor is the same for all */
static void avg_plane_2x2_f32(const pool_job *j, float *out, const float *in)
{
    int64_t W = j->d[2].I, OH = j->d[1].O, OW = j->d[2].O;
    double inv = 1.0 / (double)(j->divisor > 0 ? j->divisor : 4);
    for (int64_t oh = 0; oh < OH; oh++) {
        const float *r0 = in + 2 * oh * W, *r1 = r0 + W;
        float *o = out + oh * OW;
        for (int64_t ow = 0; ow < OW; ow++)
            o[ow] = (float)((((double)r0[2 * ow] + r0[2 * ow + 1]) + r1[2 * ow] + r1[2 * ow + 1]) * inv);
    }
}

static void avg_back_plane_2x2_f32(const pool_job *j, float *gin, const float *gout)
{
    int64_t W = j->d[2].I, H = j->d[1].I, OH = j->d[1].O, OW = j->d[2].O;
    float inv = (float)(1.0 / (double)(j->divisor > 0 ? j->divisor : 4));
    if (2 * OH < H || 2 * OW < W) memset(gin, 0, (size_t)j->in_plane * sizeof *gin);
    for (int64_t oh = 0; oh < OH; oh++) {
        float *r0 = gin + 2 * oh * W, *r1 = r0 + W;
        const float *g = gout + oh * OW;
        for (int64_t ow = 0; ow < OW; ow++) {
            float v = g[ow] * inv;
            r0[2 * ow] = r0[2 * ow + 1] = r1[2 * ow] = r1[2 * ow + 1] = v;
        }
    }
}

/* ---- the general windows, float32 and float64 (pooling_float.inc) ----------------- */

#define T float
#define SFX f32
#include "pooling_float.inc"
#define T double
#define SFX f64
#include "pooling_float.inc"

/* ---- plane ranges ------------------------------------------------------------------- */

static void pool_range(int64_t lo, int64_t hi, void *ctx)
{
    const pool_job *j = ctx;
    size_t es = em_dtype_size(j->dtype);
    pool_scratch sc;
    for (int64_t pl = lo; pl < hi; pl++) {
        const char *in = j->in + pl * j->in_plane * (int64_t)es;
        char *out = j->out + pl * j->out_plane * (int64_t)es;
        int64_t *idx = j->idx ? j->idx + pl * j->out_plane : NULL;
        bool f32 = j->dtype == EM_FLOAT32;
        if (j->op == EM_POOL_MAX && j->fast2x2 && f32 && j->d[2].I == 2 * j->d[2].O &&
            j->d[1].O * j->d[2].I <= POOL_EVEN_MAX)
            max_plane_2x2_even_f32(j, (float *)out, idx, (const float *)in, &sc);
        else if (j->op == EM_POOL_MAX && j->fast2x2 && f32)
            max_plane_2x2_f32(j, (float *)out, idx, (const float *)in);
        else if (j->op == EM_POOL_MAX && f32)
            max_plane_f32(j, (float *)out, idx, (const float *)in);
        else if (j->op == EM_POOL_MAX)
            max_plane_f64(j, (double *)out, idx, (const double *)in);
        else if (j->fast2x2 && f32)
            avg_plane_2x2_f32(j, (float *)out, (const float *)in);
        else if (f32)
            avg_plane_f32(j, (float *)out, (const float *)in);
        else
            avg_plane_f64(j, (double *)out, (const double *)in);
    }
}

static void pool_back_range(int64_t lo, int64_t hi, void *ctx)
{
    const pool_job *j = ctx;
    size_t es = em_dtype_size(j->dtype);
    for (int64_t pl = lo; pl < hi; pl++) {
        char *gin = j->out + pl * j->in_plane * (int64_t)es;
        const char *gout = j->in + pl * j->out_plane * (int64_t)es;
        if (j->dtype == EM_FLOAT32 && j->fast2x2) avg_back_plane_2x2_f32(j, (float *)gin, (const float *)gout);
        else if (j->dtype == EM_FLOAT32) avg_back_plane_f32(j, (float *)gin, (const float *)gout);
        else avg_back_plane_f64(j, (double *)gin, (const double *)gout);
    }
}

/* ---- setup -------------------------------------------------------------------------- */

/* Checks the shapes (big [N, C, I...] and small [N, C, O...]) and fills the
 * job's dims; the window tables live in *tables (free it). */
static int pool_setup(pool_job *j, const char *name, const em_tensor *big, const em_tensor *small,
                      const em_pool_params *p, int64_t **tables)
{
    *tables = NULL;
    int ns = p->nspatial;
    if (ns < 1 || ns > EM_MAX_SPATIAL || big->ndim != ns + 2 || small->ndim != ns + 2)
        return em_set_error("%s: %d spatial dims with input %s and output %s", name, ns,
                            SHAPE(big), SHAPE(small));
    if (big->dtype != EM_FLOAT32 && big->dtype != EM_FLOAT64)
        return em_set_error("%s: dtype %s not supported on the CPU (float32, float64, float16, bfloat16)", name,
                            em_dtype_name(big->dtype));
    if (small->dtype != big->dtype || !em_is_contiguous(big) || !em_is_contiguous(small))
        return em_set_error("%s: expected contiguous tensors of one dtype", name);
    if (big->sizes[0] != small->sizes[0] || big->sizes[1] != small->sizes[1])
        return em_set_error("%s: input %s and output %s differ in N or C", name, SHAPE(big), SHAPE(small));
    int64_t total = 0;
    for (int i = 0; i < ns; i++) {
        if (small->sizes[2 + i] > 0 && big->sizes[2 + i] <= 0)
            return em_set_error("%s: empty input %s for output %s", name, SHAPE(big), SHAPE(small));
        if (!p->adaptive && (p->kernel[i] < 1 || p->stride[i] < 1 || p->dilation[i] < 1 || p->padding[i] < 0))
            return em_set_error("%s: kernel, stride and dilation must be positive, padding >= 0", name);
        total += small->sizes[2 + i];
    }
    int64_t *t = malloc((size_t)(3 * (total + 3)) * sizeof *t);
    if (!t) return em_set_error("%s: out of memory", name);
    *tables = t;
    j->in_plane = j->out_plane = 1;
    for (int d = 0; d < 3; d++) {
        int i = d - (3 - ns);               /* this dim's index in p, or < 0 for a filler */
        pool_dim *pd = &j->d[d];
        pd->I = i < 0 ? 1 : big->sizes[2 + i];
        pd->O = i < 0 ? 1 : small->sizes[2 + i];
        pd->start = t, pd->count = t + pd->O, pd->padcount = t + 2 * pd->O;
        t += 3 * pd->O;
        if (i < 0) dim_windows(pd, 1, 1, 0, 1, false);
        else dim_windows(pd, p->kernel[i], p->stride[i], p->padding[i], p->dilation[i], p->adaptive);
        j->in_plane *= pd->I;
        j->out_plane *= pd->O;
    }
    j->divisor = p->divisor;
    j->include_pad = p->count_include_pad && !p->adaptive;
    j->dtype = big->dtype;
    j->fast2x2 = ns == 2 && !p->adaptive && p->kernel[0] == 2 && p->kernel[1] == 2 && p->stride[0] == 2 &&
                 p->stride[1] == 2 && p->padding[0] == 0 && p->padding[1] == 0 && p->dilation[0] == 1 &&
                 p->dilation[1] == 1 && 2 * j->d[1].O <= j->d[1].I && 2 * j->d[2].O <= j->d[2].I;
    return 0;
}

/* Runs fn over the N*C planes, j writing dst from src, then frees pool_setup's tables; 0. */
static int run_planes(pool_job *j, em_tensor *dst, const em_tensor *src, cpu_range_fn fn, int64_t *tables)
{
    j->out = em_data_ptr(dst);
    j->in = em_data_ptr(src);
    cpu_parallel_for(src->sizes[0] * src->sizes[1], em_numel(src) + em_numel(dst), 1, fn, j);
    free(tables);
    return 0;
}

int cpu_pool(em_pool_op op, em_tensor *out, em_tensor *idx, const em_tensor *in, const em_pool_params *p)
{
    if (op != EM_POOL_MAX && op != EM_POOL_AVG) return em_set_error("pool: unknown op %d", (int)op);
    if (cpu_is_lowp(in) && out->dtype == in->dtype) {
        cpu_widened w = {0};
        em_tensor *o = (em_tensor *)cpu_widen(&w, out, true);
        const em_tensor *i32 = cpu_widen(&w, in, false);
        return cpu_narrow(&w, w.failed ? -1 : cpu_pool(op, o, idx, i32, p));
    }
    pool_job j = {.op = op};
    int64_t *tables;
    if (pool_setup(&j, "pool", in, out, p, &tables)) return -1;
    if (op == EM_POOL_MAX) {
        bool same = idx && idx->ndim == out->ndim;
        for (int i = 0; same && i < out->ndim; i++) same = idx->sizes[i] == out->sizes[i];
        if (!same || idx->dtype != EM_INT64 || !em_is_contiguous(idx)) {
            free(tables);
            return em_set_error("pool: max pooling needs contiguous int64 indices of the output's shape %s",
                                SHAPE(out));
        }
        j.idx = em_data_ptr(idx);
    }
    return run_planes(&j, out, in, pool_range, tables);
}

int cpu_pool_backward(em_pool_op op, em_tensor *gin, const em_tensor *gout, const em_pool_params *p)
{
    if (op != EM_POOL_AVG)
        return em_set_error("pool_backward: only average pooling (max pooling's backward is a scatter-add)");
    if (cpu_is_lowp(gin) && gout->dtype == gin->dtype) {
        cpu_widened w = {0};
        em_tensor *gi = (em_tensor *)cpu_widen(&w, gin, true);
        const em_tensor *go = cpu_widen(&w, gout, false);
        return cpu_narrow(&w, w.failed ? -1 : cpu_pool_backward(op, gi, go, p));
    }
    pool_job j = {.op = op};
    int64_t *tables;
    if (pool_setup(&j, "pool_backward", gin, gout, p, &tables)) return -1;
    return run_planes(&j, gin, gout, pool_back_range, tables);
}
