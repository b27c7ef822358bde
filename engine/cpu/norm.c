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
 * over the (n, g) sets; its gw/gb sums run over channels in a second job.
 *
 * float32 outputs are computed as ((x - mh) - ml) * scale + shift, where
 * mh + ml is the mean in two floats: x - mh is exact near the mean, so no
 * precision is lost to a large mean. */
#include "cpu.h"

#include <stdlib.h>

#define CHUNK 2048
#define MIN_PART 16384      /* elements: smaller parts are not worth a thread */

typedef struct norm_job {
    em_norm_op op;
    int64_t N, C, S, G, cg;         /* cg: channels per group */
    int64_t nsets, setsize, parts;  /* BATCH: parts per channel */
    bool f32;
    double eps;
    const char *x, *gy;
    char *y, *gx;
    double *w, *b;                  /* [C], 1 and 0 when not given */
    double *mean, *var, *rstd;      /* per set */
    double *pn, *pmean, *pm2;       /* per unit partial statistics (parts > 1) */
    double *psg, *psgx;             /* per unit partial sums of gy and gy (x - mean) */
    double *gw, *gb;                /* [C] (backward; NULL when not wanted) */
    bool want_gx;
} norm_job;

/* ---- vector loops over one contiguous segment ---------------------------------- */

/* float32 sums in double, 8 accumulators (also softmax.c's) */
double cpu_sum_f32(const float *x, int64_t n)
{
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += x[i + k];
    for (; i < n; i++) acc[0] += x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static double sum_f64(const double *x, int64_t n)
{
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += x[i + k];
    for (; i < n; i++) acc[0] += x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static double sqdev_f32(const float *x, int64_t n, double m)
{
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) { double d = (double)x[i + k] - m; acc[k] += d * d; }
    for (; i < n; i++) { double d = (double)x[i] - m; acc[0] += d * d; }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static double sqdev_f64(const double *x, int64_t n, double m)
{
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) { double d = x[i + k] - m; acc[k] += d * d; }
    for (; i < n; i++) { double d = x[i] - m; acc[0] += d * d; }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* *sg += sum gy, *sgx += sum gy (x - m) */
static void gdot_f32(const float *gy, const float *x, int64_t n, double m, double *sg, double *sgx)
{
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) {
            double g = gy[i + k];
            a[k] += g;
            b[k] += g * ((double)x[i + k] - m);
        }
    for (; i < n; i++) { a[0] += gy[i]; b[0] += (double)gy[i] * ((double)x[i] - m); }
    *sg += ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    *sgx += ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]));
}

static void gdot_f64(const double *gy, const double *x, int64_t n, double m, double *sg, double *sgx)
{
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) {
            a[k] += gy[i + k];
            b[k] += gy[i + k] * (x[i + k] - m);
        }
    for (; i < n; i++) { a[0] += gy[i]; b[0] += gy[i] * (x[i] - m); }
    *sg += ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    *sgx += ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]));
}

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
    return j->f32 ? cpu_sum_f32((const float *)p + off, n) : sum_f64((const double *)p + off, n);
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

static double load(const norm_job *j, const char *p, int64_t i)
{
    return j->f32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
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
        const float *x = (const float *)j->x + base;
        for (int64_t c = 0; c < j->cg; c++) y[c] = (float)(((double)x[c] - m) * r * w[c] + b[c]);
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
        return em_set_error("%s: dtype %s not supported on the CPU (float32, float64)", name,
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
    if (j.parts == 1) {
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

/* gx of GROUP set u = (n, g):
 *   A = sum_c w_c sum_s gy,  B = sum_c w_c sum_s gy (x - mean),
 *   gx = rstd (w_c gy - A/M) - (x - mean) rstd^3 B / M */
static void group_gx(const norm_job *j, int64_t u)
{
    int64_t c0 = (u % j->G) * j->cg, base = u * j->setsize;
    double m = j->mean[u], r = j->rstd[u], M = (double)j->setsize, A = 0, B = 0;
    const double *w = j->w + c0;
    if (j->S > 1) {
        for (int64_t c = 0; c < j->cg; c++) {
            double sg = 0, sgx = 0;
            seg_gdot(j, base + c * j->S, j->S, m, &sg, &sgx);
            A += w[c] * sg, B += w[c] * sgx;
        }
        double k2 = -r * r * r * B / M, k3 = -r * A / M;
        for (int64_t c = 0; c < j->cg; c++) seg_gx(j, base + c * j->S, j->S, m, r * w[c], k2, k3);
        return;
    }
    for (int64_t c = 0; c < j->cg; c++) {
        double g = load(j, j->gy, base + c) * w[c];
        A += g, B += g * (load(j, j->x, base + c) - m);
    }
    double k2 = -r * r * r * B / M, k3 = -r * A / M;
    if (j->f32) {
        float *gx = (float *)j->gx + base;
        const float *gy = (const float *)j->gy + base, *x = (const float *)j->x + base;
        for (int64_t c = 0; c < j->cg; c++) gx[c] = (float)(r * w[c] * gy[c] + ((double)x[c] - m) * k2 + k3);
    } else {
        double *gx = (double *)j->gx + base;
        const double *gy = (const double *)j->gy + base, *x = (const double *)j->x + base;
        for (int64_t c = 0; c < j->cg; c++) gx[c] = r * w[c] * gy[c] + (x[c] - m) * k2 + k3;
    }
}

static void group_back_sets(int64_t lo, int64_t hi, void *ctx)
{
    for (int64_t u = lo; u < hi; u++) group_gx(ctx, u);
}

/* gw, gb of GROUP for channels [lo, hi), sample by sample (a fixed order):
 * gw_c = sum_n rstd_ng sum_s gy (x - mean_ng),  gb_c = sum_n sum_s gy */
static void group_back_params(int64_t lo, int64_t hi, void *ctx)
{
    norm_job *j = ctx;
    for (int64_t c = lo; c < hi; c++) j->gw[c] = j->gb[c] = 0;
    for (int64_t n = 0; n < j->N; n++)
        for (int64_t c = lo; c < hi; c++) {
            int64_t u = n * j->G + c / j->cg;
            double sg = 0, sgx = 0;
            seg_gdot(j, (n * j->C + c) * j->S, j->S, j->mean[u], &sg, &sgx);
            j->gb[c] += sg;
            j->gw[c] += sgx * j->rstd[u];
        }
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
    } else {
        if (gx) cpu_parallel_for(j.nsets, numel, 1, group_back_sets, &j);
        if (gw || gb) cpu_parallel_for(j.C, numel, 1, group_back_params, &j);
    }
    /* BATCH's sums are of gy (x - mean); gw wants gy xhat */
    if (op == EM_NORM_BATCH)
        for (int64_t c = 0; c < j.C; c++) j.gw[c] *= j.rstd[c];
    if (gw) store_vec(gw, j.gw, j.C);
    if (gb) store_vec(gb, j.gb, j.C);
    free(mem);
    return 0;
}
