/* norm.c — batch and group normalisation, forward and backward (formulas
 * in backend.h). x is [N, C, S], contiguous, float32 or float64.
 *
 * A "set" is what one mean and variance describe: for BATCH the channel c,
 * N rows of S elements C*S apart; for GROUP the pair (n, g), one contiguous
 * block of C/G*S elements. Statistics accumulate in double. The variance is
 * exact even when the mean is large beside the spread: each chunk of up to
 * CHUNK elements is summed, then its squared deviations from its own mean
 * are summed while the chunk is still in L1, and the chunks are merged with
 * Chan's formula, so x is read from memory once for the statistics.
 *
 * Threads: BATCH splits over channels, and when there are few channels for
 * many elements each channel is also cut into `parts` pieces whose partial
 * statistics are merged in a fixed order (the cut depends only on the shape
 * and cpu_threads(), so results do not depend on the load). GROUP splits
 * over the (n, g) sets. Its backward cuts the sets into `gparts` ranges
 * (again from the shape and cpu_threads() alone): each range writes its gx
 * and adds its sets' share of gw/gb into its own [C] partial sums, which are
 * then added in range order, so x and gy are read once and gw/gb do not
 * depend on which thread ran what. When the partial sums would be large
 * beside the data (few long rows), gw/gb run over channels in a second job
 * instead. Layer norm (GROUP, S = 1: many short rows) has its own row loops
 * that the compiler vectorises.
 *
 * float32 outputs are computed as ((x - mh) - ml) * scale + shift, where
 * mh + ml is the mean in two floats: x - mh is exact near the mean, so no
 * precision is lost to a large mean (layer norm rows scale by rstd, then
 * by w, in float: a per-channel double scale would cost a pass per row).
 *
 * gcc vectorises a loop that adds into one array of 8 double sums, but not
 * one that updates two such arrays (6x slower): each sum has its own loop. */
#include "cpu.h"

#include <stdlib.h>

#define CHUNK 2048
#define MIN_PART 16384      /* elements: smaller parts are not worth a thread */
/* GROUP backward: at most this many set ranges per configured thread (the
 * pool's chunks per thread), so a late thread's share is taken by others */
#define GPARTS_PER_THREAD 4

typedef struct norm_job {
    em_norm_op op;
    int64_t N, C, S, G, cg;         /* cg: channels per group */
    int64_t nsets, setsize, parts;  /* BATCH: parts per channel */
    bool f32;
    double eps;
    const char *x, *gy;
    char *y, *gx;
    double *w, *b;                  /* [C], 1 and 0 when not given */
    float *wf, *bf;                 /* w and b in float (layer norm rows) */
    double *mean, *var, *rstd;      /* per set */
    double *pn, *pmean, *pm2;       /* per unit partial statistics (parts > 1) */
    double *psg, *psgx;             /* per unit partial sums of gy and gy (x - mean) */
    double *gw, *gb;                /* [C] (backward; NULL when not wanted) */
    int64_t gparts;                 /* GROUP backward: set ranges with partial gw/gb */
    double *pgw;                    /* [gparts][2][C]: partial gw, then gb, per range */
    bool want_gx;
} norm_job;

/* ---- vector loops over one contiguous segment ---------------------------------- */

/* sums, squared deviations and the backward's dot products (norm_float.inc) */
#define T float
#define SFX f32
#include "norm_float.inc"
#define T double
#define SFX f64
#include "norm_float.inc"

/* y = (x - m) * scale + shift */
static void affine_f32(float *y, const float *x, int64_t n, double m, double scale, double shift)
{
    float mh = (float)m, ml = (float)(m - (double)mh), sc = (float)scale, sh = (float)shift;
    for (int64_t i = 0; i < n; i++) y[i] = ((x[i] - mh) - ml) * sc + sh;
}

static void affine_f64(double *y, const double *x, int64_t n, double m, double scale, double shift)
{
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) * scale + shift;
}

/* gx = gy * k1 + (x - m) * k2 + k3 */
static void gx_f32(float *gx, const float *gy, const float *x, int64_t n, double m,
                   double k1, double k2, double k3)
{
    float mh = (float)m, ml = (float)(m - (double)mh), a = (float)k1, b = (float)k2, c = (float)k3;
    for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * a + ((x[i] - mh) - ml) * b + c;
}

static void gx_f64(double *gx, const double *gy, const double *x, int64_t n, double m,
                   double k1, double k2, double k3)
{
    for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * k1 + (x[i] - m) * k2 + k3;
}

/* dtype dispatch on element offsets */
static double seg_sum(const norm_job *j, const char *p, int64_t off, int64_t n)
{
    return j->f32 ? cpu_sum_f32((const float *)p + off, n) : cpu_sum_f64((const double *)p + off, n);
}

static double seg_sqdev(const norm_job *j, const char *p, int64_t off, int64_t n, double m)
{
    return j->f32 ? sqdev_f32((const float *)p + off, n, m) : sqdev_f64((const double *)p + off, n, m);
}

static void seg_gdot(const norm_job *j, int64_t off, int64_t n, double m, double *sg, double *sgx)
{
    if (j->f32) gdot_f32((const float *)j->gy + off, (const float *)j->x + off, n, m, sg, sgx);
    else gdot_f64((const double *)j->gy + off, (const double *)j->x + off, n, m, sg, sgx);
}

static void seg_affine(const norm_job *j, int64_t off, int64_t n, double m, double scale, double shift)
{
    if (j->f32) affine_f32((float *)j->y + off, (const float *)j->x + off, n, m, scale, shift);
    else affine_f64((double *)j->y + off, (const double *)j->x + off, n, m, scale, shift);
}

static void seg_gx(const norm_job *j, int64_t off, int64_t n, double m, double k1, double k2, double k3)
{
    if (j->f32) gx_f32((float *)j->gx + off, (const float *)j->gy + off, (const float *)j->x + off, n, m, k1, k2, k3);
    else gx_f64((double *)j->gx + off, (const double *)j->gy + off, (const double *)j->x + off, n, m, k1, k2, k3);
}

/* ---- sets as segments ------------------------------------------------------------- */

/* The contiguous segment holding flat position f of set u (f < setsize):
 * its element offset, and how many elements it has from f on. */
static int64_t seg_at(const norm_job *j, int64_t u, int64_t f, int64_t *len)
{
    if (j->op == EM_NORM_GROUP) {
        *len = j->setsize - f;
        return u * j->setsize + f;
    }
    int64_t r = f / j->S, i = f % j->S;
    *len = j->S - i;
    return (r * j->C + u) * j->S + i;
}

typedef struct stats { double n, mean, m2; } stats;

static void stats_merge(stats *a, stats b)
{
    if (b.n == 0) return;
    double n = a->n + b.n, d = b.mean - a->mean;
    a->mean += d * (b.n / n);
    a->m2 += b.m2 + d * d * (a->n * b.n / n);
    a->n = n;
}

/* statistics of the flat range [lo, hi) of set u, one chunk at a time */
static stats range_stats(const norm_job *j, int64_t u, int64_t lo, int64_t hi)
{
    stats acc = {0, 0, 0};
    for (int64_t c0 = lo; c0 < hi; c0 += CHUNK) {
        int64_t c1 = hi - c0 < CHUNK ? hi : c0 + CHUNK, len;
        double s = 0, q = 0;
        for (int64_t f = c0; f < c1; f += len) {
            int64_t off = seg_at(j, u, f, &len);
            len = len < c1 - f ? len : c1 - f;
            s += seg_sum(j, j->x, off, len);
        }
        double m = s / (double)(c1 - c0);
        for (int64_t f = c0; f < c1; f += len) {
            int64_t off = seg_at(j, u, f, &len);
            len = len < c1 - f ? len : c1 - f;
            q += seg_sqdev(j, j->x, off, len, m);
        }
        stats_merge(&acc, (stats){(double)(c1 - c0), m, q});
    }
    return acc;
}

/* y over the flat range [lo, hi) of BATCH set (channel) u */
static void batch_affine(const norm_job *j, int64_t u, int64_t lo, int64_t hi)
{
    double scale = j->rstd[u] * j->w[u];
    int64_t n;
    for (int64_t f = lo; f < hi; f += n) {
        int64_t off = seg_at(j, u, f, &n);
        n = n < hi - f ? n : hi - f;
        seg_affine(j, off, n, j->mean[u], scale, j->b[u]);
    }
}

/* y of GROUP set u = (n, g): channel by channel, or element by element when
 * S == 1 (layer norm) so the loop stays a vector loop */
static void group_affine(const norm_job *j, int64_t u)
{
    int64_t c0 = (u % j->G) * j->cg, base = u * j->setsize;
    double m = j->mean[u], r = j->rstd[u];
    if (j->S > 1) {
        for (int64_t c = 0; c < j->cg; c++)
            seg_affine(j, base + c * j->S, j->S, m, r * j->w[c0 + c], j->b[c0 + c]);
        return;
    }
    const double *w = j->w + c0, *b = j->b + c0;
    if (j->f32) {
        float *y = (float *)j->y + base;
        const float *x = (const float *)j->x + base, *wf = j->wf + c0, *bf = j->bf + c0;
        float mh = (float)m, ml = (float)(m - (double)mh), rf = (float)r;
        for (int64_t c = 0; c < j->cg; c++) y[c] = ((x[c] - mh) - ml) * rf * wf[c] + bf[c];
    } else {
        double *y = (double *)j->y + base;
        const double *x = (const double *)j->x + base;
        for (int64_t c = 0; c < j->cg; c++) y[c] = (x[c] - m) * r * w[c] + b[c];
    }
}

static void set_stats(norm_job *j, int64_t u, stats s)
{
    j->mean[u] = s.n > 0 ? s.mean : NAN;
    double var = s.n > 0 ? s.m2 / s.n : NAN;
    j->var[u] = var;
    j->rstd[u] = 1.0 / sqrt(var + j->eps);
}

/* ---- forward jobs -------------------------------------------------------------------- */

/* whole sets: statistics, then y while the set is still in cache */
static void fwd_sets(int64_t lo, int64_t hi, void *ctx)
{
    norm_job *j = ctx;
    for (int64_t u = lo; u < hi; u++) {
        set_stats(j, u, range_stats(j, u, 0, j->setsize));
        if (j->op == EM_NORM_GROUP) group_affine(j, u);
        else batch_affine(j, u, 0, j->setsize);
    }
}

/* layer norm rows (GROUP, S = 1, a set of at most CHUNK elements): the
 * same statistics as range_stats' single chunk, without its segment walk */
static void fwd_rows(int64_t lo, int64_t hi, void *ctx)
{
    norm_job *j = ctx;
    double n = (double)j->cg;
    for (int64_t u = lo; u < hi; u++) {
        int64_t base = u * j->cg;
        double m = seg_sum(j, j->x, base, j->cg) / n;
        set_stats(j, u, (stats){n, m, seg_sqdev(j, j->x, base, j->cg, m)});
        group_affine(j, u);
    }
}

static void part_bounds(const norm_job *j, int64_t k, int64_t *lo, int64_t *hi)
{
    int64_t p = k % j->parts;
    *lo = j->setsize * p / j->parts;
    *hi = j->setsize * (p + 1) / j->parts;
}

static void fwd_part_stats(int64_t lo, int64_t hi, void *ctx)
{
    norm_job *j = ctx;
    for (int64_t k = lo; k < hi; k++) {
        int64_t a, b;
        part_bounds(j, k, &a, &b);
        stats s = range_stats(j, k / j->parts, a, b);
        j->pn[k] = s.n, j->pmean[k] = s.mean, j->pm2[k] = s.m2;
    }
}

static void fwd_part_affine(int64_t lo, int64_t hi, void *ctx)
{
    norm_job *j = ctx;
    for (int64_t k = lo; k < hi; k++) {
        int64_t a, b;
        part_bounds(j, k, &a, &b);
        batch_affine(j, k / j->parts, a, b);
    }
}

/* ---- setup ------------------------------------------------------------------------------ */

static bool is_vec(const em_tensor *t, int64_t n)
{
    return t && t->ndim >= 1 && em_numel(t) == n && em_is_contiguous(t) &&
           (t->dtype == EM_FLOAT32 || t->dtype == EM_FLOAT64);
}

static int check_x(const char *name, const em_tensor *x, const em_norm_params *p, em_norm_op op)
{
    if (op != EM_NORM_BATCH && op != EM_NORM_GROUP) return em_set_error("%s: unknown op %d", name, (int)op);
    if (x->dtype != EM_FLOAT32 && x->dtype != EM_FLOAT64)
        return em_set_error("%s: dtype %s not supported on the CPU (float32, float64, float16, bfloat16)", name,
                            em_dtype_name(x->dtype));
    if (p->N < 0 || p->C < 1 || p->S < 0 || em_numel(x) != p->N * p->C * p->S || !em_is_contiguous(x))
        return em_set_error("%s: x %s is not a contiguous [N=%lld, C=%lld, S=%lld]", name, SHAPE(x),
                            (long long)p->N, (long long)p->C, (long long)p->S);
    if (op == EM_NORM_GROUP && (p->G < 1 || p->C % p->G != 0))
        return em_set_error("%s: %lld groups do not divide %lld channels", name, (long long)p->G,
                            (long long)p->C);
    return 0;
}

static int check_same(const char *name, const char *what, const em_tensor *t, const em_tensor *x)
{
    if (t->dtype != x->dtype || em_numel(t) != em_numel(x) || !em_is_contiguous(t))
        return em_set_error("%s: %s %s %s does not match x %s %s", name, what, SHAPE(t),
                            em_dtype_name(t->dtype), SHAPE(x), em_dtype_name(x->dtype));
    return 0;
}

/* Fills the geometry, the parameter and statistics scratch (one block, in
 * *mem: free it). */
static int job_setup(norm_job *j, const char *name, em_norm_op op, const em_tensor *x,
                     const em_tensor *w, const em_tensor *b, const em_norm_params *p, double **mem)
{
    *mem = NULL;
    j->op = op, j->N = p->N, j->C = p->C, j->S = p->S, j->eps = p->eps;
    j->G = op == EM_NORM_GROUP ? p->G : 1;
    j->cg = p->C / j->G;
    j->f32 = x->dtype == EM_FLOAT32;
    j->nsets = op == EM_NORM_BATCH ? p->C : p->N * p->G;
    j->setsize = op == EM_NORM_BATCH ? p->N * p->S : j->cg * p->S;
    j->parts = 1;
    int64_t T = cpu_threads();
    if (op == EM_NORM_BATCH && T > 1 && p->C < 4 * T) {
        int64_t want = (4 * T + p->C - 1) / p->C, most = j->setsize / MIN_PART;
        j->parts = want < most ? want : most;
        if (j->parts < 1) j->parts = 1;
    }
    if ((w && !is_vec(w, p->C)) || (b && !is_vec(b, p->C)))
        return em_set_error("%s: weight and bias must be contiguous float [%lld]", name, (long long)p->C);
    int64_t units = j->nsets * j->parts;
    size_t n = (size_t)(2 * p->C + 3 * j->nsets + 5 * units + 2 * p->C);
    double *m = malloc(n * sizeof *m);
    if (!m) return em_set_error("%s: out of memory", name);
    *mem = m;
    j->w = m, j->b = m + p->C, m += 2 * p->C;
    for (int64_t c = 0; c < p->C; c++) {
        j->w[c] = w ? cpu_load_f64((const char *)em_data_ptr(w) + c * em_dtype_size(w->dtype), w->dtype) : 1.0;
        j->b[c] = b ? cpu_load_f64((const char *)em_data_ptr(b) + c * em_dtype_size(b->dtype), b->dtype) : 0.0;
    }
    j->mean = m, j->var = m + j->nsets, j->rstd = m + 2 * j->nsets, m += 3 * j->nsets;
    j->pn = m, j->pmean = m + units, j->pm2 = m + 2 * units, m += 3 * units;
    j->psg = m, j->psgx = m + units, m += 2 * units;
    j->gw = m, j->gb = m + p->C;
    j->x = em_data_ptr(x);
    return 0;
}

int cpu_norm(em_norm_op op, em_tensor *y, em_tensor *mean, em_tensor *var, const em_tensor *x,
             const em_tensor *w, const em_tensor *b, const em_norm_params *p)
{
    if (cpu_is_lowp(x) && y->dtype == x->dtype) {
        cpu_widened wd = {0};
        em_tensor *y32 = (em_tensor *)cpu_widen(&wd, y, true), *m32 = (em_tensor *)cpu_widen(&wd, mean, true);
        em_tensor *v32 = (em_tensor *)cpu_widen(&wd, var, true);
        const em_tensor *x32 = cpu_widen(&wd, x, false), *w32 = cpu_widen(&wd, w, false);
        const em_tensor *b32 = cpu_widen(&wd, b, false);
        return cpu_narrow(&wd, wd.failed ? -1 : cpu_norm(op, y32, m32, v32, x32, w32, b32, p));
    }
    if (check_x("norm", x, p, op) || check_same("norm", "y", y, x)) return -1;
    norm_job j = {0};
    double *mem;
    if (job_setup(&j, "norm", op, x, w, b, p, &mem)) return -1;
    if (!is_vec(mean, j.nsets) || !is_vec(var, j.nsets)) {
        free(mem);
        return em_set_error("norm: mean and var must be contiguous float [%lld]", (long long)j.nsets);
    }
    j.y = em_data_ptr(y);
    int64_t numel = em_numel(x);
    float *wbf = op == EM_NORM_GROUP && j.S == 1 ? malloc((size_t)(2 * j.C) * sizeof *wbf) : NULL;
    if (op == EM_NORM_GROUP && j.S == 1 && !wbf) {
        free(mem);
        return em_set_error("norm: out of memory");
    }
    if (wbf) {
        j.wf = wbf, j.bf = wbf + j.C;
        for (int64_t c = 0; c < j.C; c++) j.wf[c] = (float)j.w[c], j.bf[c] = (float)j.b[c];
    }
    if (op == EM_NORM_GROUP && j.S == 1 && j.cg <= CHUNK) {
        cpu_parallel_for(j.nsets, numel, 1, fwd_rows, &j);
    } else if (j.parts == 1) {
        cpu_parallel_for(j.nsets, numel, 1, fwd_sets, &j);
    } else {
        int64_t units = j.nsets * j.parts;
        cpu_parallel_for(units, numel, 1, fwd_part_stats, &j);
        for (int64_t u = 0; u < j.nsets; u++) {
            stats s = {0, 0, 0};
            for (int64_t k = u * j.parts; k < (u + 1) * j.parts; k++)
                stats_merge(&s, (stats){j.pn[k], j.pmean[k], j.pm2[k]});
            set_stats(&j, u, s);
        }
        cpu_parallel_for(units, numel, 1, fwd_part_affine, &j);
    }
    char *mp = em_data_ptr(mean), *vp = em_data_ptr(var);
    size_t ms = em_dtype_size(mean->dtype), vs = em_dtype_size(var->dtype);
    for (int64_t u = 0; u < j.nsets; u++) {
        cpu_store_f64(mp + u * (int64_t)ms, mean->dtype, j.mean[u]);
        cpu_store_f64(vp + u * (int64_t)vs, var->dtype, j.var[u]);
    }
    free(wbf);
    free(mem);
    return 0;
}

/* ---- backward jobs ------------------------------------------------------------------- */

/* sums of gy and gy (x - mean) over the flat range [lo, hi) of BATCH set u */
static void batch_sums(const norm_job *j, int64_t u, int64_t lo, int64_t hi, double *sg, double *sgx)
{
    *sg = *sgx = 0;
    int64_t n;
    for (int64_t f = lo; f < hi; f += n) {
        int64_t off = seg_at(j, u, f, &n);
        n = n < hi - f ? n : hi - f;
        seg_gdot(j, off, n, j->mean[u], sg, sgx);
    }
}

/* gx over [lo, hi) of BATCH set u from its totals sg, sgx:
 * gx = rstd w (gy - sg/M - xhat rstd sgx / M) */
static void batch_gx(const norm_job *j, int64_t u, int64_t lo, int64_t hi, double sg, double sgx)
{
    double r = j->rstd[u], M = (double)j->setsize, k1 = r * j->w[u];
    double k2 = -k1 * r * r * sgx / M, k3 = -k1 * sg / M;
    int64_t n;
    for (int64_t f = lo; f < hi; f += n) {
        int64_t off = seg_at(j, u, f, &n);
        n = n < hi - f ? n : hi - f;
        seg_gx(j, off, n, j->mean[u], k1, k2, k3);
    }
}

static void batch_back_sets(int64_t lo, int64_t hi, void *ctx)
{
    norm_job *j = ctx;
    for (int64_t u = lo; u < hi; u++) {
        double sg, sgx;
        batch_sums(j, u, 0, j->setsize, &sg, &sgx);
        j->psg[u] = sg, j->psgx[u] = sgx;
        if (j->want_gx) batch_gx(j, u, 0, j->setsize, sg, sgx);
    }
}

static void batch_back_part_sums(int64_t lo, int64_t hi, void *ctx)
{
    norm_job *j = ctx;
    for (int64_t k = lo; k < hi; k++) {
        int64_t a, b;
        part_bounds(j, k, &a, &b);
        batch_sums(j, k / j->parts, a, b, &j->psg[k], &j->psgx[k]);
    }
}

static void batch_back_part_gx(int64_t lo, int64_t hi, void *ctx)
{
    norm_job *j = ctx;
    for (int64_t k = lo; k < hi; k++) {
        int64_t a, b, u = k / j->parts;
        part_bounds(j, k, &a, &b);
        batch_gx(j, u, a, b, j->gb[u], j->gw[u]);
    }
}

/* One GROUP set u = (n, g) of S > 1: with, per channel c,
 * sg_c = sum_s gy and sgx_c = sum_s gy (x - mean),
 *   A = sum_c w_c sg_c,  B = sum_c w_c sgx_c,
 *   gx = rstd (w_c gy - A/M) - (x - mean) rstd^3 B / M;
 * adds sgx_c rstd to pgw[c] and sg_c to pgb[c] when pgw is given. */
static void group_back_set(const norm_job *j, int64_t u, double *pgw, double *pgb)
{
    int64_t c0 = (u % j->G) * j->cg, base = u * j->setsize;
    double m = j->mean[u], r = j->rstd[u], M = (double)j->setsize, A = 0, B = 0;
    const double *w = j->w + c0;
    for (int64_t c = 0; c < j->cg; c++) {
        double sg = 0, sgx = 0;
        seg_gdot(j, base + c * j->S, j->S, m, &sg, &sgx);
        A += w[c] * sg, B += w[c] * sgx;
        if (pgw) pgw[c0 + c] += sgx * r, pgb[c0 + c] += sg;
    }
    if (!j->want_gx) return;
    double k2 = -r * r * r * B / M, k3 = -r * A / M;
    for (int64_t c = 0; c < j->cg; c++) seg_gx(j, base + c * j->S, j->S, m, r * w[c], k2, k3);
}

/* pgw += gy (x - m) r, pgb += gy, and when gx: gx = r w gy + (x - m) k2 + k3,
 * with A, B as above, k2 = -r^3 B / n, k3 = -r A / n */
static void row_back_f32(const norm_job *j, int64_t u, double *pgw, double *pgb)
{
    int64_t n = j->cg, c0 = (u % j->G) * n;
    const float *gy = (const float *)j->gy + u * n, *x = (const float *)j->x + u * n;
    const double *w = j->w + c0;
    const float *wf = j->wf + c0;
    double m = j->mean[u], r = j->rstd[u];
    if (!j->want_gx) {
        pgw += c0, pgb += c0;
        for (int64_t c = 0; c < n; c++) pgw[c] += (double)gy[c] * ((double)x[c] - m) * r, pgb[c] += gy[c];
        return;
    }
    double A, B;
    row_sums_f32(gy, x, w, n, m, &A, &B);
    float mh = (float)m, ml = (float)(m - (double)mh), rf = (float)r;
    float k2 = (float)(-r * r * r * B / (double)n), k3 = (float)(-r * A / (double)n);
    float *gx = (float *)j->gx + u * n;
    if (!pgw) {
        for (int64_t c = 0; c < n; c++) gx[c] = gy[c] * wf[c] * rf + ((x[c] - mh) - ml) * k2 + k3;
        return;
    }
    pgw += c0, pgb += c0;
    for (int64_t c = 0; c < n; c++) {
        float d = (x[c] - mh) - ml;
        gx[c] = gy[c] * wf[c] * rf + d * k2 + k3;
        pgw[c] += (double)gy[c] * ((double)x[c] - m) * r, pgb[c] += gy[c];
    }
}

static void row_back_f64(const norm_job *j, int64_t u, double *pgw, double *pgb)
{
    int64_t n = j->cg, c0 = (u % j->G) * n;
    const double *gy = (const double *)j->gy + u * n, *x = (const double *)j->x + u * n;
    const double *w = j->w + c0;
    double m = j->mean[u], r = j->rstd[u];
    if (pgw) {
        pgw += c0, pgb += c0;
        for (int64_t c = 0; c < n; c++) pgw[c] += gy[c] * (x[c] - m) * r, pgb[c] += gy[c];
    }
    if (!j->want_gx) return;
    double A, B;
    row_sums_f64(gy, x, w, n, m, &A, &B);
    double k2 = -r * r * r * B / (double)n, k3 = -r * A / (double)n;
    double *gx = (double *)j->gx + u * n;
    for (int64_t c = 0; c < n; c++) gx[c] = r * w[c] * gy[c] + (x[c] - m) * k2 + k3;
}

static void group_back_one(const norm_job *j, int64_t u, double *pgw, double *pgb)
{
    if (j->S > 1) group_back_set(j, u, pgw, pgb);
    else if (j->f32) row_back_f32(j, u, pgw, pgb);
    else row_back_f64(j, u, pgw, pgb);
}

/* gx only, or gx with gw/gb in the second job */
static void group_back_sets(int64_t lo, int64_t hi, void *ctx)
{
    for (int64_t u = lo; u < hi; u++) group_back_one(ctx, u, NULL, NULL);
}

/* set ranges [lo, hi) of gparts: gx, and each range's partial gw, gb */
static void group_back_ranges(int64_t lo, int64_t hi, void *ctx)
{
    norm_job *j = ctx;
    for (int64_t k = lo; k < hi; k++) {
        double *pgw = j->pgw + k * 2 * j->C, *pgb = pgw + j->C;
        for (int64_t c = 0; c < 2 * j->C; c++) pgw[c] = 0;
        int64_t u0 = j->nsets * k / j->gparts, u1 = j->nsets * (k + 1) / j->gparts;
        for (int64_t u = u0; u < u1; u++) group_back_one(j, u, pgw, pgb);
    }
}

/* How many set ranges the GROUP backward sums gw/gb over, from the shape
 * and cpu_threads() only. Each range's 2C partial sums stay within an
 * eighth of its data (N S / 16 ranges at most). 0: fewer ranges than
 * threads for a job worth threads (a few long rows): summing over channels
 * in a second job is then faster. */
static int64_t group_ranges(const norm_job *j)
{
    int64_t T = cpu_threads(), numel = j->nsets * j->setsize, k = GPARTS_PER_THREAD * T;
    if (k > numel / MIN_PART) k = numel / MIN_PART;
    if (k > j->nsets) k = j->nsets;
    if (k > j->N * j->S / 16) k = j->N * j->S / 16;
    if (k < 1) k = 1;
    return k < T && numel >= CPU_PARALLEL_MIN ? 0 : k;
}

/* gw, gb of GROUP for channels [lo, hi), sample by sample (a fixed order):
 * gw_c = sum_n rstd_ng sum_s gy (x - mean_ng),  gb_c = sum_n sum_s gy */
static void group_back_params(int64_t lo, int64_t hi, void *ctx)
{
    norm_job *j = ctx;
    for (int64_t c = lo; c < hi; c++) j->gw[c] = j->gb[c] = 0;
    for (int64_t n = 0; n < j->N; n++)
        for (int64_t c = lo; c < hi; c++) {
            int64_t u = n * j->G + c / j->cg, i = n * j->C + c;
            double sg = 0, sgx = 0;
            if (j->S > 1) {
                seg_gdot(j, i * j->S, j->S, j->mean[u], &sg, &sgx);
            } else if (j->f32) {                /* one element: no call per element */
                sg = ((const float *)j->gy)[i];
                sgx = sg * ((double)((const float *)j->x)[i] - j->mean[u]);
            } else {
                sg = ((const double *)j->gy)[i];
                sgx = sg * (((const double *)j->x)[i] - j->mean[u]);
            }
            j->gb[c] += sg;
            j->gw[c] += sgx * j->rstd[u];
        }
}

/* GROUP: gx where wanted, and gw/gb into j->gw, j->gb when params;
 * -1: out of memory */
static int group_backward(norm_job *j, bool params)
{
    int64_t numel = j->nsets * j->setsize;
    if (!params && !j->want_gx) return 0;
    j->gparts = params ? group_ranges(j) : 0;
    size_t nd = (size_t)(j->gparts * 2 * j->C), nf = (size_t)j->C;
    double *scratch = malloc(nd * sizeof(double) + nf * sizeof(float));
    if (!scratch) return -1;
    j->pgw = scratch;
    j->wf = (float *)(scratch + nd);
    for (int64_t c = 0; c < j->C; c++) j->wf[c] = (float)j->w[c];
    if (!params) {
        cpu_parallel_for(j->nsets, numel, 1, group_back_sets, j);
    } else if (j->gparts == 0) {
        if (j->want_gx) cpu_parallel_for(j->nsets, numel, 1, group_back_sets, j);
        cpu_parallel_for(j->C, numel, 1, group_back_params, j);
    } else {
        cpu_parallel_for(j->gparts, numel, 1, group_back_ranges, j);
        for (int64_t c = 0; c < j->C; c++) j->gw[c] = j->gb[c] = 0;
        for (int64_t k = 0; k < j->gparts; k++) {
            const double *pgw = j->pgw + k * 2 * j->C, *pgb = pgw + j->C;
            for (int64_t c = 0; c < j->C; c++) j->gw[c] += pgw[c], j->gb[c] += pgb[c];
        }
    }
    free(scratch);
    return 0;
}

static void store_vec(em_tensor *t, const double *v, int64_t n)
{
    char *p = em_data_ptr(t);
    for (int64_t i = 0; i < n; i++) cpu_store_f64(p + i * (int64_t)em_dtype_size(t->dtype), t->dtype, v[i]);
}

int cpu_norm_backward(em_norm_op op, em_tensor *gx, em_tensor *gw, em_tensor *gb, const em_tensor *gy,
                      const em_tensor *x, const em_tensor *mean, const em_tensor *rstd, const em_tensor *w,
                      const em_norm_params *p)
{
    const char *name = "norm_backward";
    if (cpu_is_lowp(x) && gy->dtype == x->dtype) {
        cpu_widened wd = {0};
        em_tensor *gx32 = (em_tensor *)cpu_widen(&wd, gx, true), *gw32 = (em_tensor *)cpu_widen(&wd, gw, true);
        em_tensor *gb32 = (em_tensor *)cpu_widen(&wd, gb, true);
        const em_tensor *gy32 = cpu_widen(&wd, gy, false), *x32 = cpu_widen(&wd, x, false);
        const em_tensor *m32 = cpu_widen(&wd, mean, false), *r32 = cpu_widen(&wd, rstd, false);
        const em_tensor *w32 = cpu_widen(&wd, w, false);
        return cpu_narrow(&wd, wd.failed ? -1 : cpu_norm_backward(op, gx32, gw32, gb32, gy32, x32, m32, r32, w32, p));
    }
    if (check_x(name, x, p, op) || check_same(name, "gy", gy, x) || (gx && check_same(name, "gx", gx, x)))
        return -1;
    norm_job j = {0};
    double *mem;
    if (job_setup(&j, name, op, x, w, NULL, p, &mem)) return -1;
    if (!is_vec(mean, j.nsets) || !is_vec(rstd, j.nsets)) {
        free(mem);
        return em_set_error("%s: mean and rstd must be contiguous float [%lld]", name, (long long)j.nsets);
    }
    if ((gw && !is_vec(gw, j.C)) || (gb && !is_vec(gb, j.C))) {
        free(mem);
        return em_set_error("%s: gw and gb must be contiguous float [%lld]", name, (long long)j.C);
    }
    const char *mp = em_data_ptr(mean), *rp = em_data_ptr(rstd);
    for (int64_t u = 0; u < j.nsets; u++) {
        j.mean[u] = cpu_load_f64(mp + u * (int64_t)em_dtype_size(mean->dtype), mean->dtype);
        j.rstd[u] = cpu_load_f64(rp + u * (int64_t)em_dtype_size(rstd->dtype), rstd->dtype);
    }
    j.gy = em_data_ptr(gy);
    j.gx = gx ? em_data_ptr(gx) : NULL;
    j.want_gx = gx != NULL;
    int64_t numel = em_numel(x);
    if (op == EM_NORM_BATCH && j.parts == 1) {
        cpu_parallel_for(j.nsets, numel, 1, batch_back_sets, &j);
        for (int64_t c = 0; c < j.C; c++) j.gb[c] = j.psg[c], j.gw[c] = j.psgx[c];
    } else if (op == EM_NORM_BATCH) {
        cpu_parallel_for(j.nsets * j.parts, numel, 1, batch_back_part_sums, &j);
        for (int64_t c = 0; c < j.C; c++) {
            j.gb[c] = j.gw[c] = 0;
            for (int64_t k = c * j.parts; k < (c + 1) * j.parts; k++) j.gb[c] += j.psg[k], j.gw[c] += j.psgx[k];
        }
        if (gx) cpu_parallel_for(j.nsets * j.parts, numel, 1, batch_back_part_gx, &j);
    } else if (group_backward(&j, gw || gb)) {
        free(mem);
        return em_set_error("%s: out of memory", name);
    }
    /* BATCH's sums are of gy (x - mean); gw wants gy xhat */
    if (op == EM_NORM_BATCH)
        for (int64_t c = 0; c < j.C; c++) j.gw[c] *= j.rstd[c];
    if (gw) store_vec(gw, j.gw, j.C);
    if (gb) store_vec(gb, j.gb, j.C);
    free(mem);
    return 0;
}
