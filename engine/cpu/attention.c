/* attention.c — fused scaled-dot-product attention, forward and backward
 * (the attention family of backend.h; formulas there).
 *
 * Flash-style: queries are cut into tiles of BQ rows and keys into tiles of
 * BK, and no Tq x Tk matrix ever exists. The forward keeps, per query row, a
 * running maximum m and sum l of exp(s - m) (online softmax): when a later
 * key tile raises the maximum, the row's partial output is rescaled by
 * exp(m_old - m_new). The backward recomputes P = exp(s - lse) tile by tile
 * from the saved log-sum-exp.
 *
 * Threads: the forward is split over (problem, query tile). The backward,
 * when there are many problems (at least 4 per thread), takes one problem
 * per item and sweeps its tiles once, summing dQ in scratch of the
 * problem's [Tq, D]; with few problems (one long sequence) dQ is split over
 * (problem, query tile) and dK, dV over (problem, key tile), which computes
 * each score tile twice but keeps every thread busy. Either way every item
 * writes only its own rows and no sum depends on the split, so results do
 * not depend on the load.
 *
 * Arithmetic is in the input's dtype (float32 or float64), with per-row
 * statistics (m, l, lse, D) in double. The tile products are written as
 * axpy loops over a contiguous row (the key tile is packed transposed, so
 * the scores of a query row are sum_d q[d] * Kt[d][0..BK)), which the
 * compiler vectorises without reassociating sums. The key tile is packed
 * pre-multiplied by the scale. */
#include "cpu.h"

#include <stdatomic.h>
#include <stdlib.h>

#define BQ 32
#define BK 64

void em_philox4x32(uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

typedef struct attn_job {
    const em_attn_params *p;
    bool f32;
    size_t es;                          /* element size */
    int64_t B, Tq, Tk, D, Dv;
    int64_t nqt, nkt;                   /* query and key tiles per problem */
    const char *q, *k, *v, *o, *go;
    const char *mask;                   /* NULL: none */
    int64_t msb, msi, msj;              /* its strides in elements */
    char *out, *gq, *gk, *gv;
    void *lse;                          /* float32 or float64 */
    double *drow;                       /* backward: D_i = <dO_i, O_i>, [B * Tq] */
    uint32_t key[2];
    double keep_thr;                    /* keep when the lane's integer is below this */
    int mshift;                         /* 32 - mantissa bits of the uniform */
    double keep_scale;                  /* 1 / (1 - p) */
    bool dropout;
    _Atomic int failed;                 /* a thread could not get its scratch */
} attn_job;

/* ---- vector loops (one per dtype) ------------------------------------------------------ */

/* The tile products are one small GEMM, C[m x n] (+)= A[m x k] B[k x n]:
 * A's element (r, c) at A[r sar + c sac] (so A may be a transposed view), B
 * row-major with rows ldb apart, C with rows ldc apart. Blocks of MR rows by
 * NR columns keep their sums in registers (the fixed-size loops unroll and
 * vectorise over the columns); the edges take plain loops. */
#define MR 4
#define NR32 32
#define NR64 16

static void gemm_f32(float *C, int64_t ldc, const float *A, int64_t sar, int64_t sac, const float *B, int64_t ldb,
                     int64_t m, int64_t n, int64_t k, bool acc)
{
    int64_t r = 0;
    for (; r + MR <= m; r += MR) {
        int64_t c = 0;
        for (; c + NR32 <= n; c += NR32) {
            float s[MR][NR32] = {{0}};
            for (int64_t kk = 0; kk < k; kk++) {
                const float *b = B + kk * ldb + c;
                for (int i = 0; i < MR; i++) {
                    float a = A[(r + i) * sar + kk * sac];
                    for (int x = 0; x < NR32; x++) s[i][x] += a * b[x];
                }
            }
            for (int i = 0; i < MR; i++) {
                float *o = C + (r + i) * ldc + c;
                if (acc) for (int x = 0; x < NR32; x++) o[x] += s[i][x];
                else for (int x = 0; x < NR32; x++) o[x] = s[i][x];
            }
        }
        for (int i = 0; i < MR && c < n; i++) {
            float *o = C + (r + i) * ldc;
            if (!acc) for (int64_t x = c; x < n; x++) o[x] = 0;
            for (int64_t kk = 0; kk < k; kk++) {
                float a = A[(r + i) * sar + kk * sac];
                const float *b = B + kk * ldb;
                for (int64_t x = c; x < n; x++) o[x] += a * b[x];
            }
        }
    }
    for (; r < m; r++) {
        float *o = C + r * ldc;
        if (!acc) for (int64_t x = 0; x < n; x++) o[x] = 0;
        for (int64_t kk = 0; kk < k; kk++) {
            float a = A[r * sar + kk * sac];
            const float *b = B + kk * ldb;
            for (int64_t x = 0; x < n; x++) o[x] += a * b[x];
        }
    }
}

static void gemm_f64(double *C, int64_t ldc, const double *A, int64_t sar, int64_t sac, const double *B, int64_t ldb,
                     int64_t m, int64_t n, int64_t k, bool acc)
{
    int64_t r = 0;
    for (; r + MR <= m; r += MR) {
        int64_t c = 0;
        for (; c + NR64 <= n; c += NR64) {
            double s[MR][NR64] = {{0}};
            for (int64_t kk = 0; kk < k; kk++) {
                const double *b = B + kk * ldb + c;
                for (int i = 0; i < MR; i++) {
                    double a = A[(r + i) * sar + kk * sac];
                    for (int x = 0; x < NR64; x++) s[i][x] += a * b[x];
                }
            }
            for (int i = 0; i < MR; i++) {
                double *o = C + (r + i) * ldc + c;
                if (acc) for (int x = 0; x < NR64; x++) o[x] += s[i][x];
                else for (int x = 0; x < NR64; x++) o[x] = s[i][x];
            }
        }
        for (int i = 0; i < MR && c < n; i++) {
            double *o = C + (r + i) * ldc;
            if (!acc) for (int64_t x = c; x < n; x++) o[x] = 0;
            for (int64_t kk = 0; kk < k; kk++) {
                double a = A[(r + i) * sar + kk * sac];
                const double *b = B + kk * ldb;
                for (int64_t x = c; x < n; x++) o[x] += a * b[x];
            }
        }
    }
    for (; r < m; r++) {
        double *o = C + r * ldc;
        if (!acc) for (int64_t x = 0; x < n; x++) o[x] = 0;
        for (int64_t kk = 0; kk < k; kk++) {
            double a = A[r * sar + kk * sac];
            const double *b = B + kk * ldb;
            for (int64_t x = 0; x < n; x++) o[x] += a * b[x];
        }
    }
}

static void gemm(bool f32, void *C, int64_t ldc, const void *A, int64_t sar, int64_t sac, const void *B, int64_t ldb,
                 int64_t m, int64_t n, int64_t k, bool acc)
{
    if (f32) gemm_f32(C, ldc, A, sar, sac, B, ldb, m, n, k, acc);
    else gemm_f64(C, ldc, A, sar, sac, B, ldb, m, n, k, acc);
}

/* sum_j exp(s[j] - m) with s overwritten by the terms */
static double exp_row_f32(float *s, int64_t n, double m)
{
    float mf = (float)m;
    for (int64_t j = 0; j < n; j++) s[j] = cpu_exp_f32(s[j] - mf);
    return cpu_sum_f32(s, n);
}

static double exp_row_f64(double *s, int64_t n, double m)
{
    double sum = 0;
    for (int64_t j = 0; j < n; j++) {
        s[j] = exp(s[j] - m);
        sum += s[j];
    }
    return sum;
}

/* ---- dispatch on the dtype -------------------------------------------------------------- */

/* S [nq, nk] (rows BK apart) = Q [nq, n] Xt [n, nk] (Xt packed, rows BK apart) */
static void scores(const attn_job *j, void *S, const char *Q, int64_t n, const void *Xt, int64_t nq, int64_t nk)
{
    gemm(j->f32, S, BK, Q, n, 1, Xt, BK, nq, nk, n, false);
}

/* O [nq, n] += P [nq, nk] X [nk, n] */
static void acc_nn(const attn_job *j, void *O, const void *P, const char *X, int64_t nq, int64_t nk, int64_t n)
{
    gemm(j->f32, O, n, P, BK, 1, X, n, nq, n, nk, true);
}

/* G [nk, n] += P^T X, P [nq, nk], X [nq, n] */
static void acc_tn(const attn_job *j, void *G, const void *P, const char *X, int64_t nq, int64_t nk, int64_t n)
{
    gemm(j->f32, G, n, P, 1, BK, X, n, nk, n, nq, true);
}

/* Xt[d][c] = alpha X[c][d] for the nk rows of a key tile (rows ld apart) */
static void pack_t(const attn_job *j, void *Xt, const char *X, int64_t nk, int64_t n, double alpha)
{
    if (j->f32) {
        const float *x = (const float *)X;
        float *t = Xt, a = (float)alpha;
        for (int64_t c = 0; c < nk; c++)
            for (int64_t d = 0; d < n; d++) t[d * BK + c] = a * x[c * n + d];
    } else {
        const double *x = (const double *)X;
        double *t = Xt;
        for (int64_t c = 0; c < nk; c++)
            for (int64_t d = 0; d < n; d++) t[d * BK + c] = alpha * x[c * n + d];
    }
}

static double get(const attn_job *j, const void *p, int64_t i)
{
    return j->f32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static void set(const attn_job *j, void *p, int64_t i, double v)
{
    if (j->f32) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

static void zero(const attn_job *j, void *p, int64_t n) { memset(p, 0, (size_t)n * j->es); }

/* Row i of a score tile (key tile from j0, nk keys): adds the mask and
 * sets -inf past the causal limit. Returns how many keys the row may see
 * (0: none in this tile). */
static int64_t finish_scores(const attn_job *j, void *srow, int64_t b, int64_t i, int64_t j0, int64_t nk)
{
    int64_t valid = nk;
    if (j->p->causal) valid = i - j0 + 1 < nk ? (i - j0 + 1 > 0 ? i - j0 + 1 : 0) : nk;
    if (j->mask) {
        const char *m = j->mask + (b * j->msb + i * j->msi + j0 * j->msj) * (int64_t)j->es;
        if (j->f32) {
            float *s = srow;
            const float *mk = (const float *)m;
            if (j->msj == 1) for (int64_t c = 0; c < valid; c++) s[c] += mk[c];
            else for (int64_t c = 0; c < valid; c++) s[c] += mk[c * j->msj];
        } else {
            double *s = srow;
            const double *mk = (const double *)m;
            if (j->msj == 1) for (int64_t c = 0; c < valid; c++) s[c] += mk[c];
            else for (int64_t c = 0; c < valid; c++) s[c] += mk[c * j->msj];
        }
    }
    for (int64_t c = valid; c < nk; c++) set(j, srow, c, -INFINITY);
    return valid;
}

static double row_max(const attn_job *j, const void *srow, int64_t n)
{
    double m = -INFINITY;
    if (j->f32) {
        const float *s = srow;
        float mf = -INFINITY;
        for (int64_t c = 0; c < n; c++) mf = s[c] > mf ? s[c] : mf;
        m = mf;
    } else {
        const double *s = srow;
        for (int64_t c = 0; c < n; c++) m = s[c] > m ? s[c] : m;
    }
    return m;
}

/* keep[c] for the keys j0 .. j0+nk-1 of query row i of problem b: the
 * uniform of row-major position n = (b Tq + i) Tk + j (backend.h) */
static void keep_row(const attn_job *j, int64_t b, int64_t i, int64_t j0, int64_t nk, unsigned char *keep)
{
    uint64_t n = ((uint64_t)b * (uint64_t)j->Tq + (uint64_t)i) * (uint64_t)j->Tk + (uint64_t)j0;
    uint32_t x[4];
    uint64_t have = UINT64_MAX;
    for (int64_t c = 0; c < nk; c++, n++) {
        uint64_t k = n / 4;
        if (k != have) {
            uint64_t ctr = j->p->offset + k;
            uint32_t w[4] = {(uint32_t)ctr, (uint32_t)(ctr >> 32), ctr < j->p->offset ? 1u : 0u, 0};
            em_philox4x32(w, j->key, x);
            have = k;
        }
        keep[c] = (double)(x[n % 4] >> j->mshift) < j->keep_thr;
    }
}

/* srow[c] *= keep[c] / (1 - p) */
static void apply_keep(const attn_job *j, void *srow, const unsigned char *keep, int64_t n)
{
    if (j->f32) {
        float *s = srow, sc = (float)j->keep_scale;
        for (int64_t c = 0; c < n; c++) s[c] = keep[c] ? s[c] * sc : 0.0f;
    } else {
        double *s = srow, sc = j->keep_scale;
        for (int64_t c = 0; c < n; c++) s[c] = keep[c] ? s[c] * sc : 0.0;
    }
}

/* the last key tile a query tile [i0, i0 + nq) sees (all of them unless causal) */
static int64_t key_tiles_for(const attn_job *j, int64_t i0, int64_t nq)
{
    if (!j->p->causal) return j->nkt;
    int64_t last = i0 + nq - 1;                 /* keys 0..last */
    int64_t t = last / BK + 1;
    return t < j->nkt ? t : j->nkt;
}

/* ---- forward ------------------------------------------------------------------------------ */

typedef struct fwd_scratch {
    void *S, *O, *Kt;
    double *m, *l;
    unsigned char *keep;
} fwd_scratch;

static void fwd_tile(const attn_job *j, fwd_scratch *w, int64_t b, int64_t i0, int64_t nq)
{
    int64_t D = j->D, Dv = j->Dv, es = (int64_t)j->es;
    const char *Q = j->q + (b * j->Tq + i0) * D * es;
    zero(j, w->O, nq * Dv);
    for (int64_t i = 0; i < nq; i++) { w->m[i] = -INFINITY; w->l[i] = 0; }
    int64_t nkt = key_tiles_for(j, i0, nq);
    for (int64_t kt = 0; kt < nkt; kt++) {
        int64_t j0 = kt * BK, nk = j->Tk - j0 < BK ? j->Tk - j0 : BK;
        pack_t(j, w->Kt, j->k + (b * j->Tk + j0) * D * es, nk, D, j->p->scale);
        scores(j, w->S, Q, D, w->Kt, nq, nk);
        for (int64_t i = 0; i < nq; i++) {
            char *srow = (char *)w->S + i * BK * es;
            int64_t valid = finish_scores(j, srow, b, i0 + i, j0, nk);
            double mt = valid ? row_max(j, srow, valid) : -INFINITY;
            double mnew = mt > w->m[i] ? mt : w->m[i];
            if (mnew == -INFINITY) {            /* nothing seen yet: no terms */
                zero(j, srow, nk);
                continue;
            }
            double sum = j->f32 ? exp_row_f32((float *)srow, nk, mnew) : exp_row_f64((double *)srow, nk, mnew);
            double alpha = exp(w->m[i] - mnew);
            if (alpha != 1) {
                char *o = (char *)w->O + i * Dv * es;
                for (int64_t c = 0; c < Dv; c++) set(j, o, c, get(j, o, c) * alpha);
            }
            w->l[i] = w->l[i] * alpha + sum;
            w->m[i] = mnew;
            if (j->dropout) {
                keep_row(j, b, i0 + i, j0, nk, w->keep);
                apply_keep(j, srow, w->keep, nk);
            }
        }
        acc_nn(j, w->O, w->S, j->v + (b * j->Tk + j0) * Dv * es, nq, nk, Dv);
    }
    char *out = j->out + (b * j->Tq + i0) * Dv * es;
    for (int64_t i = 0; i < nq; i++) {
        double l = w->l[i], inv = l > 0 ? 1 / l : NAN;
        const char *o = (const char *)w->O + i * Dv * es;
        for (int64_t c = 0; c < Dv; c++) set(j, out + i * Dv * es, c, get(j, o, c) * inv);
        double lse = l > 0 ? w->m[i] + log(l) : (l == 0 ? -INFINITY : NAN);
        set(j, j->lse, b * j->Tq + i0 + i, lse);
    }
}

static void fwd_range(int64_t lo, int64_t hi, void *ctx)
{
    const attn_job *j = ctx;
    size_t es = j->es;
    fwd_scratch w;
    char *buf = malloc(es * (size_t)(BQ * BK + BQ * j->Dv + j->D * BK) + sizeof(double) * 2 * BQ + BK);
    if (!buf) { atomic_store(&j->failed, 1); return; }
    w.S = buf;
    w.O = buf + es * BQ * BK;
    w.Kt = (char *)w.O + es * (size_t)(BQ * j->Dv);
    w.m = (double *)((char *)w.Kt + es * (size_t)(j->D * BK));
    w.l = w.m + BQ;
    w.keep = (unsigned char *)(w.l + BQ);
    for (int64_t it = lo; it < hi; it++) {
        int64_t b = it / j->nqt, i0 = (it % j->nqt) * BQ;
        fwd_tile(j, &w, b, i0, j->Tq - i0 < BQ ? j->Tq - i0 : BQ);
    }
    free(buf);
}

/* ---- backward ----------------------------------------------------------------------------- */

typedef struct bwd_scratch {
    void *P, *dP, *Kt, *Vt, *acc, *acc2;
    unsigned char *keep;
} bwd_scratch;

/* For query tile [i0, i0 + nq) and key tile [j0, j0 + nk) of problem b:
 * P (dropout applied when pd is set: pd gets P keep/(1-p)) and dS in dP. */
static void grad_tile(const attn_job *j, bwd_scratch *w, int64_t b, int64_t i0, int64_t nq, int64_t j0, int64_t nk,
                      void *pd)
{
    int64_t es = (int64_t)j->es;
    scores(j, w->P, j->q + (b * j->Tq + i0) * j->D * es, j->D, w->Kt, nq, nk);
    /* dP = dO V^T: the same product as the scores, with dO and V */
    scores(j, w->dP, j->go + (b * j->Tq + i0) * j->Dv * es, j->Dv, w->Vt, nq, nk);
    for (int64_t i = 0; i < nq; i++) {
        char *prow = (char *)w->P + i * BK * es, *dprow = (char *)w->dP + i * BK * es;
        finish_scores(j, prow, b, i0 + i, j0, nk);
        double lse = get(j, j->lse, b * j->Tq + i0 + i), di = j->drow[b * j->Tq + i0 + i];
        if (j->f32) {
            float *p = (float *)prow, *dp = (float *)dprow;
            float lf = (float)lse, df = (float)di;
            for (int64_t c = 0; c < nk; c++) p[c] = cpu_exp_f32(p[c] - lf);
            if (j->dropout) {
                keep_row(j, b, i0 + i, j0, nk, w->keep);
                apply_keep(j, dprow, w->keep, nk);
            }
            for (int64_t c = 0; c < nk; c++) dp[c] = p[c] * (dp[c] - df);
        } else {
            double *p = (double *)prow, *dp = (double *)dprow;
            for (int64_t c = 0; c < nk; c++) p[c] = exp(p[c] - lse);
            if (j->dropout) {
                keep_row(j, b, i0 + i, j0, nk, w->keep);
                apply_keep(j, dprow, w->keep, nk);
            }
            for (int64_t c = 0; c < nk; c++) dp[c] = p[c] * (dp[c] - di);
        }
        if (pd) {
            char *pdrow = (char *)pd + i * BK * es;
            memcpy(pdrow, prow, (size_t)(nk * es));
            if (j->dropout) apply_keep(j, pdrow, w->keep, nk);
        }
    }
}

static void store_scaled(const attn_job *j, char *dst, const void *src, int64_t n, double alpha)
{
    for (int64_t c = 0; c < n; c++) set(j, dst, c, get(j, src, c) * alpha);
}

static void dq_range(int64_t lo, int64_t hi, void *ctx)
{
    const attn_job *j = ctx;
    int64_t es = (int64_t)j->es, D = j->D, Dv = j->Dv;
    bwd_scratch w;
    char *buf = malloc((size_t)(es * (2 * BQ * BK + D * BK + Dv * BK + BQ * D)) + BK);
    if (!buf) { atomic_store(&j->failed, 1); return; }
    w.P = buf;
    w.dP = buf + es * BQ * BK;
    w.Kt = buf + es * 2 * BQ * BK;
    w.Vt = (char *)w.Kt + es * D * BK;
    w.acc = (char *)w.Vt + es * Dv * BK;
    w.keep = (unsigned char *)w.acc + es * BQ * D;
    for (int64_t it = lo; it < hi; it++) {
        int64_t b = it / j->nqt, i0 = (it % j->nqt) * BQ, nq = j->Tq - i0 < BQ ? j->Tq - i0 : BQ;
        zero(j, w.acc, nq * D);
        int64_t nkt = key_tiles_for(j, i0, nq);
        for (int64_t kt = 0; kt < nkt; kt++) {
            int64_t j0 = kt * BK, nk = j->Tk - j0 < BK ? j->Tk - j0 : BK;
            const char *K = j->k + (b * j->Tk + j0) * D * es;
            pack_t(j, w.Kt, K, nk, D, j->p->scale);
            pack_t(j, w.Vt, j->v + (b * j->Tk + j0) * Dv * es, nk, Dv, 1.0);
            grad_tile(j, &w, b, i0, nq, j0, nk, NULL);
            acc_nn(j, w.acc, w.dP, K, nq, nk, D);
        }
        store_scaled(j, j->gq + (b * j->Tq + i0) * D * es, w.acc, nq * D, j->p->scale);
    }
    free(buf);
}

static void dkv_range(int64_t lo, int64_t hi, void *ctx)
{
    const attn_job *j = ctx;
    int64_t es = (int64_t)j->es, D = j->D, Dv = j->Dv;
    bwd_scratch w;
    char *buf = malloc((size_t)(es * (3 * BQ * BK + D * BK + Dv * BK + BK * D + BK * Dv)) + BK);
    if (!buf) { atomic_store(&j->failed, 1); return; }
    char *pd = buf;
    w.P = buf + es * BQ * BK;
    w.dP = buf + es * 2 * BQ * BK;
    w.Kt = buf + es * 3 * BQ * BK;
    w.Vt = (char *)w.Kt + es * D * BK;
    w.acc = (char *)w.Vt + es * Dv * BK;          /* dK [BK, D] */
    w.acc2 = (char *)w.acc + es * BK * D;         /* dV [BK, Dv] */
    w.keep = (unsigned char *)w.acc2 + es * BK * Dv;
    for (int64_t it = lo; it < hi; it++) {
        int64_t b = it / j->nkt, j0 = (it % j->nkt) * BK, nk = j->Tk - j0 < BK ? j->Tk - j0 : BK;
        zero(j, w.acc, nk * D);
        zero(j, w.acc2, nk * Dv);
        pack_t(j, w.Kt, j->k + (b * j->Tk + j0) * D * es, nk, D, j->p->scale);
        pack_t(j, w.Vt, j->v + (b * j->Tk + j0) * Dv * es, nk, Dv, 1.0);
        /* causal: query rows before j0 see none of these keys */
        int64_t first = j->p->causal ? j0 / BQ : 0;
        for (int64_t qt = first; qt < j->nqt; qt++) {
            int64_t i0 = qt * BQ, nq = j->Tq - i0 < BQ ? j->Tq - i0 : BQ;
            grad_tile(j, &w, b, i0, nq, j0, nk, pd);
            acc_tn(j, w.acc2, pd, j->go + (b * j->Tq + i0) * Dv * es, nq, nk, Dv);
            acc_tn(j, w.acc, w.dP, j->q + (b * j->Tq + i0) * D * es, nq, nk, D);
        }
        if (j->gk) store_scaled(j, j->gk + (b * j->Tk + j0) * D * es, w.acc, nk * D, j->p->scale);
        if (j->gv) store_scaled(j, j->gv + (b * j->Tk + j0) * Dv * es, w.acc2, nk * Dv, 1.0);
    }
    free(buf);
}

/* One problem per item, in one sweep over (key tile, query tile): each score
 * tile is computed once and dQ is summed in scratch [Tq, D] (O(Tq D) per
 * problem). Used when there are enough problems to keep the threads busy. */
static void fused_range(int64_t lo, int64_t hi, void *ctx)
{
    const attn_job *j = ctx;
    int64_t es = (int64_t)j->es, D = j->D, Dv = j->Dv;
    bwd_scratch w;
    char *buf = malloc((size_t)(es * (3 * BQ * BK + D * BK + Dv * BK + BK * D + BK * Dv + j->Tq * D)) + BK);
    if (!buf) { atomic_store(&j->failed, 1); return; }
    char *pd = buf;
    w.P = buf + es * BQ * BK;
    w.dP = buf + es * 2 * BQ * BK;
    w.Kt = buf + es * 3 * BQ * BK;
    w.Vt = (char *)w.Kt + es * D * BK;
    w.acc = (char *)w.Vt + es * Dv * BK;          /* dK [BK, D] */
    w.acc2 = (char *)w.acc + es * BK * D;         /* dV [BK, Dv] */
    char *dq = (char *)w.acc2 + es * BK * Dv;     /* dQ [Tq, D] */
    w.keep = (unsigned char *)dq + es * j->Tq * D;
    for (int64_t b = lo; b < hi; b++) {
        zero(j, dq, j->Tq * D);
        for (int64_t kt = 0; kt < j->nkt; kt++) {
            int64_t j0 = kt * BK, nk = j->Tk - j0 < BK ? j->Tk - j0 : BK;
            const char *K = j->k + (b * j->Tk + j0) * D * es;
            zero(j, w.acc, nk * D);
            zero(j, w.acc2, nk * Dv);
            pack_t(j, w.Kt, K, nk, D, j->p->scale);
            pack_t(j, w.Vt, j->v + (b * j->Tk + j0) * Dv * es, nk, Dv, 1.0);
            int64_t first = j->p->causal ? j0 / BQ : 0;
            for (int64_t qt = first; qt < j->nqt; qt++) {
                int64_t i0 = qt * BQ, nq = j->Tq - i0 < BQ ? j->Tq - i0 : BQ;
                grad_tile(j, &w, b, i0, nq, j0, nk, pd);
                acc_tn(j, w.acc2, pd, j->go + (b * j->Tq + i0) * Dv * es, nq, nk, Dv);
                acc_tn(j, w.acc, w.dP, j->q + (b * j->Tq + i0) * D * es, nq, nk, D);
                if (j->gq) acc_nn(j, dq + i0 * D * es, w.dP, K, nq, nk, D);
            }
            if (j->gk) store_scaled(j, j->gk + (b * j->Tk + j0) * D * es, w.acc, nk * D, j->p->scale);
            if (j->gv) store_scaled(j, j->gv + (b * j->Tk + j0) * Dv * es, w.acc2, nk * Dv, 1.0);
        }
        if (j->gq) store_scaled(j, j->gq + b * j->Tq * D * es, dq, j->Tq * D, j->p->scale);
    }
    free(buf);
}

/* D_i = <dO_i, O_i> for every query row */
static void drow_range(int64_t lo, int64_t hi, void *ctx)
{
    const attn_job *j = ctx;
    int64_t Dv = j->Dv;
    for (int64_t r = lo; r < hi; r++) {
        double s = 0;
        if (j->f32) {
            const float *a = (const float *)j->go + r * Dv, *o = (const float *)j->o + r * Dv;
            for (int64_t c = 0; c < Dv; c++) s += (double)a[c] * o[c];
        } else {
            const double *a = (const double *)j->go + r * Dv, *o = (const double *)j->o + r * Dv;
            for (int64_t c = 0; c < Dv; c++) s += a[c] * o[c];
        }
        j->drow[r] = s;
    }
}

/* ---- entry points --------------------------------------------------------------------------- */

static int setup(attn_job *j, const char *op, const em_tensor *q, const em_tensor *k, const em_tensor *v,
                 const em_tensor *mask, const em_attn_params *p)
{
    memset(j, 0, sizeof *j);
    if (q->dtype != EM_FLOAT32 && q->dtype != EM_FLOAT64)
        return em_set_error("%s: the CPU kernel takes float32, float64, float16 or bfloat16, got %s", op, em_dtype_name(q->dtype));
    j->p = p;
    j->f32 = q->dtype == EM_FLOAT32;
    j->es = em_dtype_size(q->dtype);
    j->B = q->sizes[0];
    j->Tq = q->sizes[1];
    j->D = q->sizes[2];
    j->Tk = k->sizes[1];
    j->Dv = v->sizes[2];
    j->nqt = (j->Tq + BQ - 1) / BQ;
    j->nkt = (j->Tk + BK - 1) / BK;
    j->q = em_data_ptr(q);
    j->k = em_data_ptr(k);
    j->v = em_data_ptr(v);
    if (mask) {
        j->mask = em_data_ptr(mask);
        j->msb = mask->strides[0];
        j->msi = mask->strides[1];
        j->msj = mask->strides[2];
    }
    j->key[0] = (uint32_t)p->seed;
    j->key[1] = (uint32_t)(p->seed >> 32);
    j->dropout = p->dropout_p > 0;
    if (j->dropout) {
        int mbits = j->f32 ? 24 : 32;
        j->mshift = 32 - mbits;
        j->keep_thr = (1 - p->dropout_p) * ldexp(1.0, mbits);
        j->keep_scale = 1 / (1 - p->dropout_p);
    }
    return 0;
}

int cpu_attention(em_tensor *out, em_tensor *lse, const em_tensor *q, const em_tensor *k, const em_tensor *v,
                  const em_tensor *mask, const em_attn_params *p)
{
    const em_tensor *ops[4] = {q, k, v, out};
    if (cpu_any_lowp(ops, 4)) {
        cpu_widened w = {0};
        em_tensor *o32 = (em_tensor *)cpu_widen(&w, out, true);
        const em_tensor *q32 = cpu_widen(&w, q, false), *k32 = cpu_widen(&w, k, false);
        const em_tensor *v32 = cpu_widen(&w, v, false), *m32 = cpu_widen(&w, mask, false);
        return cpu_narrow(&w, w.failed ? -1 : cpu_attention(o32, lse, q32, k32, v32, m32, p));
    }
    attn_job j;
    if (setup(&j, "scaled_dot_product_attention", q, k, v, mask, p)) return -1;
    j.out = em_data_ptr(out);
    j.lse = em_data_ptr(lse);
    int64_t items = j.B * j.nqt;
    cpu_parallel_for(items, j.B * j.Tq * j.Tk * (j.D + j.Dv), 1, fwd_range, &j);
    if (atomic_load(&j.failed)) return em_set_error("scaled_dot_product_attention: out of memory (scratch)");
    return 0;
}

int cpu_attention_backward(em_tensor *gq, em_tensor *gk, em_tensor *gv, const em_tensor *gout, const em_tensor *q,
                           const em_tensor *k, const em_tensor *v, const em_tensor *out, const em_tensor *lse,
                           const em_tensor *mask, const em_attn_params *p)
{
    const em_tensor *ops[4] = {q, k, v, gout};
    if (cpu_any_lowp(ops, 4)) {
        cpu_widened w = {0};
        em_tensor *gq32 = (em_tensor *)cpu_widen(&w, gq, true), *gk32 = (em_tensor *)cpu_widen(&w, gk, true);
        em_tensor *gv32 = (em_tensor *)cpu_widen(&w, gv, true);
        const em_tensor *go32 = cpu_widen(&w, gout, false), *q32 = cpu_widen(&w, q, false);
        const em_tensor *k32 = cpu_widen(&w, k, false), *v32 = cpu_widen(&w, v, false);
        const em_tensor *o32 = cpu_widen(&w, out, false), *m32 = cpu_widen(&w, mask, false);
        return cpu_narrow(&w, w.failed ? -1 : cpu_attention_backward(gq32, gk32, gv32, go32, q32, k32, v32, o32, lse,
                                                                      m32, p));
    }
    attn_job j;
    if (setup(&j, "scaled_dot_product_attention_backward", q, k, v, mask, p)) return -1;
    j.o = em_data_ptr(out);
    j.go = em_data_ptr(gout);
    j.lse = em_data_ptr(lse);
    j.gq = gq ? em_data_ptr(gq) : NULL;
    j.gk = gk ? em_data_ptr(gk) : NULL;
    j.gv = gv ? em_data_ptr(gv) : NULL;
    int64_t rows = j.B * j.Tq;
    j.drow = malloc(sizeof(double) * (size_t)(rows ? rows : 1));
    if (!j.drow) return em_set_error("scaled_dot_product_attention_backward: out of memory");
    cpu_parallel_for(rows, rows * j.Dv, 64, drow_range, &j);
    int64_t work = j.B * j.Tq * j.Tk * (j.D + j.Dv);
    if (j.B >= 4 * (int64_t)cpu_threads() && (gk || gv)) {
        cpu_parallel_for(j.B, work, 1, fused_range, &j);
    } else {
        if (gq) cpu_parallel_for(j.B * j.nqt, work, 1, dq_range, &j);
        if (gk || gv) cpu_parallel_for(j.B * j.nkt, work, 1, dkv_range, &j);
    }
    free(j.drow);
    if (atomic_load(&j.failed)) return em_set_error("scaled_dot_product_attention_backward: out of memory (scratch)");
    return 0;
}
