/* lapack.c — the linalg family (backend.h) on the CPU: LAPACK from OpenBLAS,
 * opened on the first call (blas.c, whose table blas.h declares).
 *
 * OpenBLAS exports the Fortran LAPACK symbols (dgetrf_, ...), looked up by
 * name rather than through lapacke, which Debian ships separately.
 * Arguments go by pointer, and the routines compiled from Fortran take one
 * hidden length argument per character argument, passed last.
 *
 * Threads: as in gemm.c, OpenBLAS stays single-threaded (its idle workers
 * spin), and a batch is split over the engine's pool, one matrix per LAPACK
 * call. Workspaces are malloc'ed per range (cpu_alloc is not thread-safe). */
#include "blas.h"
#include "cpu.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct lapack_job {
    const cpu_blas_api *L;
    em_linalg_op op;
    bool f64;
    em_tensor *a, *b, *c, *d;
    const em_linalg_params *p;
    int *info;
    atomic_int failed;          /* a workspace could not be had */
} lapack_job;

/* Matrix i of t ([B, R, C] column-major). */
static void *mat(const em_tensor *t, int64_t i)
{
    if (!t) return NULL;
    /* per matrix: all dims but the batch (S and eigenvalues are [B, k]) */
    int64_t per = 1;
    for (int d = 1; d < t->ndim; d++) per *= t->sizes[d];
    return (char *)em_data_ptr(t) + (size_t)(i * per) * em_dtype_size(t->dtype);
}

static int ld(int64_t rows) { return rows > 1 ? (int)rows : 1; }

static void lu_one(lapack_job *j, int64_t i)
{
    int n = (int)j->a->sizes[1], lda = ld(n);
    int *piv = (int *)em_data_ptr(j->b) + i * n;
    if (j->f64) j->L->dgetrf(&n, &n, mat(j->a, i), &lda, piv, &j->info[i]);
    else j->L->sgetrf(&n, &n, mat(j->a, i), &lda, piv, &j->info[i]);
}

static void solve_one(lapack_job *j, int64_t i, int *piv)
{
    int n = (int)j->a->sizes[1], k = (int)j->b->sizes[2], lda = ld(n);
    if (j->f64) j->L->dgesv(&n, &k, mat(j->a, i), &lda, piv, mat(j->b, i), &lda, &j->info[i]);
    else j->L->sgesv(&n, &k, mat(j->a, i), &lda, piv, mat(j->b, i), &lda, &j->info[i]);
}

static void cholesky_one(lapack_job *j, int64_t i)
{
    int n = (int)j->a->sizes[1], lda = ld(n);
    if (j->f64) j->L->dpotrf("L", &n, mat(j->a, i), &lda, &j->info[i], 1);
    else j->L->spotrf("L", &n, mat(j->a, i), &lda, &j->info[i], 1);
}

/* work: at least `lwork` elements plus tau (min(m,n)). */
static void qr_one(lapack_job *j, int64_t i, void *work, int lwork, void *tau)
{
    int m = (int)j->a->sizes[1], n = (int)j->a->sizes[2], lda = ld(m), k = m < n ? m : n;
    void *a = mat(j->a, i);
    if (j->f64) j->L->dgeqrf(&m, &n, a, &lda, tau, work, &lwork, &j->info[i]);
    else j->L->sgeqrf(&m, &n, a, &lda, tau, work, &lwork, &j->info[i]);
    if (!j->b || j->info[i]) return;
    /* Q's first min(n, kq) columns start as the reflectors */
    int kq = (int)j->b->sizes[2], ncopy = n < kq ? n : kq;
    size_t esz = j->f64 ? 8 : 4;
    char *q = mat(j->b, i);
    memcpy(q, a, (size_t)m * (size_t)ncopy * esz);
    if (kq > ncopy) memset(q + (size_t)m * (size_t)ncopy * esz, 0, (size_t)m * (size_t)(kq - ncopy) * esz);
    if (j->f64) j->L->dorgqr(&m, &kq, &k, (double *)q, &lda, tau, work, &lwork, &j->info[i]);
    else j->L->sorgqr(&m, &kq, &k, (float *)q, &lda, tau, work, &lwork, &j->info[i]);
}

static const char *svd_job(const lapack_job *j)
{
    return !j->c ? "N" : j->p->full ? "A" : "S";
}

static void svd_one(lapack_job *j, int64_t i, void *work, int lwork, int *iwork)
{
    int m = (int)j->a->sizes[1], n = (int)j->a->sizes[2], lda = ld(m);
    int ldu = ld(m), ldvt = j->d ? ld(j->d->sizes[1]) : 1;
    /* jobz 'N' never touches u and vt, but LAPACK wants valid pointers */
    double dummy[1];
    void *u = j->c ? mat(j->c, i) : dummy, *vt = j->d ? mat(j->d, i) : dummy;
    if (j->f64)
        j->L->dgesdd(svd_job(j), &m, &n, mat(j->a, i), &lda, mat(j->b, i), u, &ldu, vt, &ldvt, work, &lwork,
                     iwork, &j->info[i], 1);
    else
        j->L->sgesdd(svd_job(j), &m, &n, mat(j->a, i), &lda, mat(j->b, i), u, &ldu, vt, &ldvt, work, &lwork,
                     iwork, &j->info[i], 1);
}

static void eigh_one(lapack_job *j, int64_t i, void *work, int lwork, int *iwork, int liwork)
{
    int n = (int)j->a->sizes[1], lda = ld(n);
    const char *jobz = j->p->vectors ? "V" : "N", *uplo = j->p->upper ? "U" : "L";
    if (j->f64)
        j->L->dsyevd(jobz, uplo, &n, mat(j->a, i), &lda, mat(j->b, i), work, &lwork, iwork, &liwork, &j->info[i],
                     1, 1);
    else
        j->L->ssyevd(jobz, uplo, &n, mat(j->a, i), &lda, mat(j->b, i), work, &lwork, iwork, &liwork, &j->info[i],
                     1, 1);
}

/* The workspace sizes LAPACK asks for (lwork = -1 queries), for matrix 0's
 * shape, which every matrix of the batch shares. */
static void workspace_query(lapack_job *j, int *lwork, int *liwork)
{
    int m = (int)j->a->sizes[1], n = (int)j->a->sizes[2], lda = ld(m), q = -1, info = 0;
    double wd[2] = {0, 0}, wd2[2] = {0, 0}, dd[1] = {0};
    float wf[2] = {0, 0}, wf2[2] = {0, 0}, df[1] = {0};
    int iw = 0;
    *lwork = 1;
    *liwork = 1;
    switch (j->op) {
    case EM_LINALG_QR: {
        if (j->f64) j->L->dgeqrf(&m, &n, NULL, &lda, NULL, wd, &q, &info);
        else j->L->sgeqrf(&m, &n, NULL, &lda, NULL, wf, &q, &info);
        if (j->b) {
            int kq = (int)j->b->sizes[2], k = m < n ? m : n;
            if (j->f64) j->L->dorgqr(&m, &kq, &k, NULL, &lda, NULL, wd2, &q, &info);
            else j->L->sorgqr(&m, &kq, &k, NULL, &lda, NULL, wf2, &q, &info);
        }
        double a = j->f64 ? wd[0] : wf[0], b = j->f64 ? wd2[0] : wf2[0];
        *lwork = (int)(a > b ? a : b) + 1;
        break;
    }
    case EM_LINALG_SVD: {
        int ldu = ld(m), ldvt = j->d ? ld(j->d->sizes[1]) : 1;
        if (j->f64) j->L->dgesdd(svd_job(j), &m, &n, NULL, &lda, NULL, dd, &ldu, dd, &ldvt, wd, &q, &iw, &info, 1);
        else j->L->sgesdd(svd_job(j), &m, &n, NULL, &lda, NULL, df, &ldu, df, &ldvt, wf, &q, &iw, &info, 1);
        *lwork = (int)(j->f64 ? wd[0] : wf[0]) + 1;
        *liwork = 8 * (m < n ? m : n) + 1;
        break;
    }
    case EM_LINALG_EIGH: {
        const char *jobz = j->p->vectors ? "V" : "N", *uplo = j->p->upper ? "U" : "L";
        if (j->f64) j->L->dsyevd(jobz, uplo, &n, NULL, &lda, NULL, wd, &q, &iw, &q, &info, 1, 1);
        else j->L->ssyevd(jobz, uplo, &n, NULL, &lda, NULL, wf, &q, &iw, &q, &info, 1, 1);
        *lwork = (int)(j->f64 ? wd[0] : wf[0]) + 1;
        *liwork = iw > 1 ? iw : 1;
        break;
    }
    default:
        break;
    }
}

static void lapack_range(int64_t lo, int64_t hi, void *ctx)
{
    lapack_job *j = ctx;
    int lwork, liwork;
    workspace_query(j, &lwork, &liwork);
    int64_t n = j->a->sizes[1] > j->a->sizes[2] ? j->a->sizes[1] : j->a->sizes[2];
    size_t esz = j->f64 ? 8 : 4;
    /* work, then tau (QR), then the ints (SOLVE's pivots, iwork) */
    void *work = malloc((size_t)(lwork + n + 1) * esz);
    int *iwork = malloc((size_t)(liwork + n + 1) * sizeof(int));
    if (!work || !iwork) {
        free(work);
        free(iwork);
        atomic_store(&j->failed, 1);
        return;
    }
    void *tau = (char *)work + (size_t)lwork * esz;
    for (int64_t i = lo; i < hi; i++) {
        switch (j->op) {
        case EM_LINALG_LU: lu_one(j, i); break;
        case EM_LINALG_SOLVE: solve_one(j, i, iwork); break;
        case EM_LINALG_CHOLESKY: cholesky_one(j, i); break;
        case EM_LINALG_QR: qr_one(j, i, work, lwork, tau); break;
        case EM_LINALG_SVD: svd_one(j, i, work, lwork, iwork); break;
        case EM_LINALG_EIGH: eigh_one(j, i, work, lwork, iwork, liwork); break;
        default: break;
        }
    }
    free(work);
    free(iwork);
}

static bool column_major(const em_tensor *t)
{
    return !t || (t->ndim == 3 && t->strides[1] == 1 && t->strides[2] == (t->sizes[1] > 1 ? t->sizes[1] : 1) &&
                  (t->sizes[0] <= 1 || t->strides[0] == t->sizes[1] * t->sizes[2]));
}

int cpu_linalg(em_linalg_op op, em_tensor *a, em_tensor *b, em_tensor *c, em_tensor *d,
               const em_linalg_params *p, int *info)
{
    if (op < 0 || op >= EM_NLINALG) return em_set_error("linalg: unknown op %d", (int)op);
    if (a->dtype != EM_FLOAT32 && a->dtype != EM_FLOAT64)
        return em_set_error("linalg: the CPU kernels take float32 or float64, got %s", em_dtype_name(a->dtype));
    if (!column_major(a) || (op != EM_LINALG_LU && op != EM_LINALG_SVD && op != EM_LINALG_EIGH && !column_major(b)) ||
        !column_major(c) || !column_major(d))
        return em_set_error("linalg: the CPU kernels take column-major matrix batches");
    if (a->sizes[1] > 1 << 30 || a->sizes[2] > 1 << 30)
        return em_set_error("linalg: matrices of %lld x %lld are too large for LAPACK", (long long)a->sizes[1],
                            (long long)a->sizes[2]);
    int64_t B = a->sizes[0];
    memset(info, 0, (size_t)B * sizeof(int));
    if (B == 0 || a->sizes[1] == 0 || a->sizes[2] == 0) return 0;
    static const char *names[EM_NLINALG] = {"linalg.lu", "linalg.solve", "linalg.cholesky", "linalg.qr",
                                            "linalg.svd", "linalg.eigh"};
    const cpu_blas_api *L = cpu_blas_open(names[op]);
    if (!L) return -1;
    lapack_job j = {.L = L, .op = op, .f64 = a->dtype == EM_FLOAT64, .a = a, .b = b, .c = c, .d = d, .p = p,
                    .info = info};
    atomic_init(&j.failed, 0);
    int64_t n = a->sizes[1] > a->sizes[2] ? a->sizes[1] : a->sizes[2];
    cpu_parallel_for(B, B * n * n * n, 1, lapack_range, &j);
    if (atomic_load(&j.failed)) return em_set_error("linalg: out of memory for a LAPACK workspace");
    return 0;
}
