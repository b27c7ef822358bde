/* cusolver.cc — the emulated device's cuSOLVER (dense API, cusolverDn.h):
 * LAPACK from OpenBLAS run as queued work on the handle's stream.
 *
 * Each routine checks its arguments at the call as cuSOLVER documents
 * (CUSOLVER_STATUS_INVALID_VALUE for a bad size, leading dimension, mode or a
 * Lwork below what _bufferSize answers), then queues the LAPACK call with
 * emu::submit. The queued work checks every device range it touches with
 * emu::device_range first, so a matrix, pivot array, workspace or devInfo
 * that is too small faults as it would under compute-sanitizer.
 *
 * The _bufferSize answers are this file's own: LAPACK's workspace query plus
 * whatever else the routine keeps in the workspace (integer work arrays,
 * a copy of A). getrf and potrf have no LAPACK workspace, so they factor a
 * packed copy of A inside the workspace and copy it back: the workspace is
 * really written, and one too small cannot pass unnoticed.
 *
 * devInfo is written with LAPACK's info, which has cuSOLVER's meaning for
 * these routines (U(i,i) == 0 for getrf, a leading minor that is not
 * positive definite for potrf, ...).
 *
 * gesvdj is not a Jacobi method here: it is LAPACK's gesdd (divide and
 * conquer), which gives the same decomposition (singular values descending,
 * U and V orthonormal). The Jacobi controls (tolerance, max sweeps, sort) are
 * kept and reported back but do not steer the computation; the reported
 * residual is measured, the reported sweep count is 1.
 *
 * OpenBLAS exports the Fortran LAPACK symbols; they are declared by hand as
 * in engine/cpu/lapack.c (arguments by pointer, gfortran's hidden string
 * lengths last). */
#include "emu.h"

#include <cusolverDn.h>

#include <cmath>
#include <limits>
#include <memory>
#include <new>
#include <stdint.h>
#include <string.h>
#include <string>

typedef size_t flen;    /* gfortran's hidden string length */

extern "C" {
void sgetrf_(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void sgetrs_(const char *trans, const int *n, const int *nrhs, const float *a, const int *lda, const int *ipiv,
             float *b, const int *ldb, int *info, flen);
void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda, const int *ipiv,
             double *b, const int *ldb, int *info, flen);
void spotrf_(const char *uplo, const int *n, float *a, const int *lda, int *info, flen);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, flen);
void spotrs_(const char *uplo, const int *n, const int *nrhs, const float *a, const int *lda, float *b,
             const int *ldb, int *info, flen);
void dpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *lda, double *b,
             const int *ldb, int *info, flen);
void sgeqrf_(const int *m, const int *n, float *a, const int *lda, float *tau, float *work, const int *lwork,
             int *info);
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work, const int *lwork,
             int *info);
void sorgqr_(const int *m, const int *n, const int *k, float *a, const int *lda, const float *tau, float *work,
             const int *lwork, int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda, const double *tau, double *work,
             const int *lwork, int *info);
void ssyevd_(const char *jobz, const char *uplo, const int *n, float *a, const int *lda, float *w, float *work,
             const int *lwork, int *iwork, const int *liwork, int *info, flen, flen);
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w, double *work,
             const int *lwork, int *iwork, const int *liwork, int *info, flen, flen);
void sgesdd_(const char *jobz, const int *m, const int *n, float *a, const int *lda, float *s, float *u,
             const int *ldu, float *vt, const int *ldvt, float *work, const int *lwork, int *iwork, int *info, flen);
void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda, double *s, double *u,
             const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork, int *iwork, int *info,
             flen);
}

/* ---- float / double overloads of the LAPACK calls ------------------------- */

static void lapack_getrf(int m, int n, float *a, int lda, int *ipiv, int *info) { sgetrf_(&m, &n, a, &lda, ipiv, info); }
static void lapack_getrf(int m, int n, double *a, int lda, int *ipiv, int *info) { dgetrf_(&m, &n, a, &lda, ipiv, info); }

static void lapack_getrs(char t, int n, int k, const float *a, int lda, const int *ipiv, float *b, int ldb, int *info)
{ sgetrs_(&t, &n, &k, a, &lda, ipiv, b, &ldb, info, 1); }
static void lapack_getrs(char t, int n, int k, const double *a, int lda, const int *ipiv, double *b, int ldb, int *info)
{ dgetrs_(&t, &n, &k, a, &lda, ipiv, b, &ldb, info, 1); }

static void lapack_potrf(char u, int n, float *a, int lda, int *info) { spotrf_(&u, &n, a, &lda, info, 1); }
static void lapack_potrf(char u, int n, double *a, int lda, int *info) { dpotrf_(&u, &n, a, &lda, info, 1); }

static void lapack_potrs(char u, int n, int k, const float *a, int lda, float *b, int ldb, int *info)
{ spotrs_(&u, &n, &k, a, &lda, b, &ldb, info, 1); }
static void lapack_potrs(char u, int n, int k, const double *a, int lda, double *b, int ldb, int *info)
{ dpotrs_(&u, &n, &k, a, &lda, b, &ldb, info, 1); }

static void lapack_geqrf(int m, int n, float *a, int lda, float *tau, float *w, int lw, int *info)
{ sgeqrf_(&m, &n, a, &lda, tau, w, &lw, info); }
static void lapack_geqrf(int m, int n, double *a, int lda, double *tau, double *w, int lw, int *info)
{ dgeqrf_(&m, &n, a, &lda, tau, w, &lw, info); }

static void lapack_orgqr(int m, int n, int k, float *a, int lda, const float *tau, float *w, int lw, int *info)
{ sorgqr_(&m, &n, &k, a, &lda, tau, w, &lw, info); }
static void lapack_orgqr(int m, int n, int k, double *a, int lda, const double *tau, double *w, int lw, int *info)
{ dorgqr_(&m, &n, &k, a, &lda, tau, w, &lw, info); }

static void lapack_syevd(char jz, char u, int n, float *a, int lda, float *w, float *work, int lw, int *iw, int liw,
                         int *info)
{ ssyevd_(&jz, &u, &n, a, &lda, w, work, &lw, iw, &liw, info, 1, 1); }
static void lapack_syevd(char jz, char u, int n, double *a, int lda, double *w, double *work, int lw, int *iw,
                         int liw, int *info)
{ dsyevd_(&jz, &u, &n, a, &lda, w, work, &lw, iw, &liw, info, 1, 1); }

static void lapack_gesdd(char jz, int m, int n, float *a, int lda, float *s, float *u, int ldu, float *vt, int ldvt,
                         float *w, int lw, int *iw, int *info)
{ sgesdd_(&jz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, w, &lw, iw, info, 1); }
static void lapack_gesdd(char jz, int m, int n, double *a, int lda, double *s, double *u, int ldu, double *vt,
                         int ldvt, double *w, int lw, int *iw, int *info)
{ dgesdd_(&jz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, w, &lw, iw, info, 1); }

/* ---- handles and gesvdj parameters ---------------------------------------- */

/* The header declares these structs opaque; the emulator's are small. */
struct cusolverDnContext {
    cudaStream_t stream;
};

/* What a gesvdj run reports back. Shared with the queued work, because the
 * caller may destroy the gesvdjInfo_t before the stream runs the work. */
struct gesvdj_result {
    double residual = 0;
    int sweeps = 0;
};

struct gesvdjInfo {
    double tolerance;       /* <= 0: machine accuracy of the type */
    int max_sweeps;
    int sort;
    std::shared_ptr<gesvdj_result> result;
};

/* ---- helpers --------------------------------------------------------------- */

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

/* Bytes spanned by a rows x cols column-major matrix with leading dimension
 * ld: up to its last element, not ld * cols (the last column may end early). */
static size_t span(int rows, int cols, int ld, size_t elem)
{
    if (rows <= 0 || cols <= 0) return 0;
    return ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * elem;
}

/* Inside queued work: checks one device range, named "<routine>: <argument>". */
static bool dev_ok(const char *fn, const char *arg, const void *p, size_t bytes)
{
    if (bytes == 0) return true;
    std::string what = std::string(fn) + ": " + arg;
    return emu::device_range(p, bytes, what.c_str());
}

/* A workspace size from LAPACK's query (work[0] holds it as a real). */
template <typename T>
static int64_t queried(T w)
{
    double v = std::ceil((double)w);
    return v < 1 ? 1 : (int64_t)v;
}

/* Elements of T holding n ints (LAPACK's integer work arrays live in the
 * workspace after the real one). */
template <typename T>
static int64_t ints_as(int64_t n)
{
    return (n * (int64_t)sizeof(int) + (int64_t)sizeof(T) - 1) / (int64_t)sizeof(T);
}

/* A workspace size as the int cuSOLVER's _bufferSize returns. */
static cusolverStatus_t answer(int64_t elems, int *lwork)
{
    if (elems > std::numeric_limits<int>::max()) return CUSOLVER_STATUS_INVALID_VALUE;
    *lwork = (int)elems;
    return CUSOLVER_STATUS_SUCCESS;
}

static char fill_char(cublasFillMode_t uplo) { return uplo == CUBLAS_FILL_MODE_UPPER ? 'U' : 'L'; }

static bool fill_ok(cublasFillMode_t uplo) { return uplo == CUBLAS_FILL_MODE_LOWER || uplo == CUBLAS_FILL_MODE_UPPER; }

static bool jobz_ok(cusolverEigMode_t j) { return j == CUSOLVER_EIG_MODE_NOVECTOR || j == CUSOLVER_EIG_MODE_VECTOR; }

/* Copies a rows x cols matrix between leading dimensions. */
template <typename T>
static void copy_matrix(int rows, int cols, const T *src, int lds, T *dst, int ldd)
{
    for (int j = 0; j < cols; j++) memcpy(dst + (size_t)j * ldd, src + (size_t)j * lds, sizeof(T) * (size_t)rows);
}

/* LU without pivoting (cuSOLVER's getrf with devIpiv == NULL): A = L U, unit
 * lower L. Returns LAPACK's info: the first j with U(j,j) == 0 (1-based). A
 * zero pivot cannot be divided by, so its column is left unscaled and does
 * not update the rest: the factors are then meaningless, and info says so. */
template <typename T>
static int lu_nopivot(int m, int n, T *a, int lda)
{
    int info = 0, k = imin(m, n);
    for (int j = 0; j < k; j++) {
        T p = a[j + (size_t)j * lda];
        if (p == 0) {
            if (info == 0) info = j + 1;
            continue;
        }
        for (int i = j + 1; i < m; i++) a[i + (size_t)j * lda] /= p;
        for (int c = j + 1; c < n; c++) {
            T t = a[j + (size_t)c * lda];
            if (t == 0) continue;
            for (int i = j + 1; i < m; i++) a[i + (size_t)c * lda] -= a[i + (size_t)j * lda] * t;
        }
    }
    return info;
}

/* ---- handle ---------------------------------------------------------------- */

/* cusolverDnDestroy and cusolverDnDestroyGesvdjInfo: deletes p; if_null for a NULL p. */
template <typename T>
static cusolverStatus_t destroy(T *p, cusolverStatus_t if_null)
{
    if (!p) return if_null;
    delete p;
    return CUSOLVER_STATUS_SUCCESS;
}

extern "C" cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t *handle)
{
    if (!handle) return CUSOLVER_STATUS_INVALID_VALUE;
    cusolverDnContext *h = new (std::nothrow) cusolverDnContext;
    if (!h) return CUSOLVER_STATUS_ALLOC_FAILED;
    h->stream = NULL;
    *handle = h;
    return CUSOLVER_STATUS_SUCCESS;
}

extern "C" cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t handle)
{
    /* queued work holds the stream, not the handle, so it may outlive this */
    return destroy(handle, CUSOLVER_STATUS_NOT_INITIALIZED);
}

extern "C" cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t streamId)
{
    return emu::set_stream(handle, streamId, CUSOLVER_STATUS_SUCCESS, CUSOLVER_STATUS_NOT_INITIALIZED);
}

extern "C" cusolverStatus_t cusolverDnGetStream(cusolverDnHandle_t handle, cudaStream_t *streamId)
{
    return emu::get_stream(handle, streamId, CUSOLVER_STATUS_SUCCESS, CUSOLVER_STATUS_NOT_INITIALIZED,
                           CUSOLVER_STATUS_INVALID_VALUE);
}

/* Queues fn on the handle's stream; a stream the runtime refuses (or a sticky
 * error) means the work never runs, which cuSOLVER reports as this. */
static cusolverStatus_t queue(cusolverDnHandle_t h, const char *fn, std::function<void()> work)
{
    if (emu::submit(h->stream, fn, std::move(work)) != cudaSuccess) return CUSOLVER_STATUS_EXECUTION_FAILED;
    return CUSOLVER_STATUS_SUCCESS;
}

/* ---- getrf / getrs ---------------------------------------------------------- */

/* Workspace: the packed m x n copy of A that is factored. */
static int64_t getrf_work(int m, int n)
{
    return m > 0 && n > 0 ? (int64_t)m * n : 1;
}

static cusolverStatus_t getrf_size(cusolverDnHandle_t h, int m, int n, int lda, int *lwork)
{
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || lda < imax(1, m) || !lwork) return CUSOLVER_STATUS_INVALID_VALUE;
    return answer(getrf_work(m, n), lwork);
}

template <typename T>
static cusolverStatus_t getrf(const char *fn, cusolverDnHandle_t h, int m, int n, T *A, int lda, T *work, int *ipiv,
                              int *info)
{
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || lda < imax(1, m)) return CUSOLVER_STATUS_INVALID_VALUE;
    return queue(h, fn, [=]() {
        int k = imin(m, n), ldw = imax(1, m);
        if (!dev_ok(fn, "devInfo", info, sizeof(int))) return;
        if (!dev_ok(fn, "A", A, span(m, n, lda, sizeof(T)))) return;
        /* an empty matrix is a quick return that never touches the workspace */
        if (k > 0 && !dev_ok(fn, "Workspace", work, sizeof(T) * (size_t)getrf_work(m, n))) return;
        if (ipiv && !dev_ok(fn, "devIpiv", ipiv, sizeof(int) * (size_t)k)) return;
        int r = 0;
        if (k > 0) {
            copy_matrix(m, n, A, lda, work, ldw);
            if (ipiv) lapack_getrf(m, n, work, ldw, ipiv, &r);
            else r = lu_nopivot(m, n, work, ldw);
            copy_matrix(m, n, work, ldw, A, lda);
        }
        *info = r;
    });
}

template <typename T>
static cusolverStatus_t getrs(const char *fn, cusolverDnHandle_t h, cublasOperation_t trans, int n, int nrhs,
                              const T *A, int lda, const int *ipiv, T *B, int ldb, int *info)
{
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (trans != CUBLAS_OP_N && trans != CUBLAS_OP_T && trans != CUBLAS_OP_C) return CUSOLVER_STATUS_INVALID_VALUE;
    if (n < 0 || nrhs < 0 || lda < imax(1, n) || ldb < imax(1, n)) return CUSOLVER_STATUS_INVALID_VALUE;
    /* for real matrices the conjugate transpose is the transpose */
    char t = trans == CUBLAS_OP_N ? 'N' : 'T';
    return queue(h, fn, [=]() {
        if (!dev_ok(fn, "devInfo", info, sizeof(int))) return;
        if (!dev_ok(fn, "A", A, span(n, n, lda, sizeof(T)))) return;
        if (!dev_ok(fn, "devIpiv", ipiv, sizeof(int) * (size_t)n)) return;
        if (!dev_ok(fn, "B", B, span(n, nrhs, ldb, sizeof(T)))) return;
        int r = 0;
        if (n > 0 && nrhs > 0) lapack_getrs(t, n, nrhs, A, lda, ipiv, B, ldb, &r);
        *info = r;
    });
}

/* ---- potrf / potrs ---------------------------------------------------------- */

/* Workspace: the packed n x n copy of A that is factored. */
static int64_t potrf_work(int n)
{
    return n > 0 ? (int64_t)n * n : 1;
}

template <typename T>
static cusolverStatus_t potrf_size(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, int lda, int *lwork)
{
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!fill_ok(uplo) || n < 0 || lda < imax(1, n) || !lwork) return CUSOLVER_STATUS_INVALID_VALUE;
    return answer(potrf_work(n), lwork);
}

template <typename T>
static cusolverStatus_t potrf(const char *fn, cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T *A, int lda,
                              T *work, int lwork, int *info)
{
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!fill_ok(uplo) || n < 0 || lda < imax(1, n)) return CUSOLVER_STATUS_INVALID_VALUE;
    int64_t need = potrf_work(n);
    if (lwork < need) return CUSOLVER_STATUS_INVALID_VALUE;
    char u = fill_char(uplo);
    return queue(h, fn, [=]() {
        int ldw = imax(1, n);
        if (!dev_ok(fn, "devInfo", info, sizeof(int))) return;
        if (!dev_ok(fn, "A", A, span(n, n, lda, sizeof(T)))) return;
        if (n > 0 && !dev_ok(fn, "Workspace", work, sizeof(T) * (size_t)need)) return;
        int r = 0;
        if (n > 0) {
            copy_matrix(n, n, A, lda, work, ldw);
            lapack_potrf(u, n, work, ldw, &r);
            /* only the referenced triangle comes back: the other one of A is
             * left as it was, as cuSOLVER and LAPACK leave it */
            for (int j = 0; j < n; j++) {
                int lo = u == 'L' ? j : 0, hi = u == 'L' ? n : j + 1;
                for (int i = lo; i < hi; i++) A[i + (size_t)j * lda] = work[i + (size_t)j * ldw];
            }
        }
        *info = r;
    });
}

template <typename T>
static cusolverStatus_t potrs(const char *fn, cusolverDnHandle_t h, cublasFillMode_t uplo, int n, int nrhs,
                              const T *A, int lda, T *B, int ldb, int *info)
{
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!fill_ok(uplo) || n < 0 || nrhs < 0 || lda < imax(1, n) || ldb < imax(1, n))
        return CUSOLVER_STATUS_INVALID_VALUE;
    char u = fill_char(uplo);
    return queue(h, fn, [=]() {
        if (!dev_ok(fn, "devInfo", info, sizeof(int))) return;
        if (!dev_ok(fn, "A", A, span(n, n, lda, sizeof(T)))) return;
        if (!dev_ok(fn, "B", B, span(n, nrhs, ldb, sizeof(T)))) return;
        int r = 0;
        if (n > 0 && nrhs > 0) lapack_potrs(u, n, nrhs, A, lda, B, ldb, &r);
        *info = r;
    });
}

/* ---- geqrf / orgqr ---------------------------------------------------------- */

template <typename T>
static int64_t geqrf_work(int m, int n, int lda)
{
    T q = 0, dummy = 0;
    int r = 0;
    lapack_geqrf(m, n, &dummy, lda, &dummy, &q, -1, &r);
    return queried(q);
}

template <typename T>
static cusolverStatus_t geqrf_size(cusolverDnHandle_t h, int m, int n, int lda, int *lwork)
{
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || lda < imax(1, m) || !lwork) return CUSOLVER_STATUS_INVALID_VALUE;
    return answer(geqrf_work<T>(m, n, lda), lwork);
}

template <typename T>
static cusolverStatus_t geqrf(const char *fn, cusolverDnHandle_t h, int m, int n, T *A, int lda, T *tau, T *work,
                              int lwork, int *info)
{
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || lda < imax(1, m)) return CUSOLVER_STATUS_INVALID_VALUE;
    int64_t need = geqrf_work<T>(m, n, lda);
    if (lwork < need) return CUSOLVER_STATUS_INVALID_VALUE;
    return queue(h, fn, [=]() {
        int k = imin(m, n);
        if (!dev_ok(fn, "devInfo", info, sizeof(int))) return;
        if (!dev_ok(fn, "A", A, span(m, n, lda, sizeof(T)))) return;
        if (!dev_ok(fn, "TAU", tau, sizeof(T) * (size_t)k)) return;
        if (k > 0 && !dev_ok(fn, "Workspace", work, sizeof(T) * (size_t)need)) return;
        int r = 0;
        if (k > 0) lapack_geqrf(m, n, A, lda, tau, work, (int)need, &r);
        *info = r;
    });
}

/* cuSOLVER's orgqr conditions: 0 <= k <= n <= m, lda >= max(1, m) */
static bool orgqr_args_ok(int m, int n, int k, int lda)
{
    return m >= 0 && n >= 0 && k >= 0 && n <= m && k <= n && lda >= imax(1, m);
}

template <typename T>
static int64_t orgqr_work(int m, int n, int k, int lda)
{
    T q = 0, dummy = 0;
    int r = 0;
    lapack_orgqr(m, n, k, &dummy, lda, &dummy, &q, -1, &r);
    return queried(q);
}

template <typename T>
static cusolverStatus_t orgqr_size(cusolverDnHandle_t h, int m, int n, int k, int lda, int *lwork)
{
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!orgqr_args_ok(m, n, k, lda) || !lwork) return CUSOLVER_STATUS_INVALID_VALUE;
    return answer(orgqr_work<T>(m, n, k, lda), lwork);
}

template <typename T>
static cusolverStatus_t orgqr(const char *fn, cusolverDnHandle_t h, int m, int n, int k, T *A, int lda,
                              const T *tau, T *work, int lwork, int *info)
{
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!orgqr_args_ok(m, n, k, lda)) return CUSOLVER_STATUS_INVALID_VALUE;
    int64_t need = orgqr_work<T>(m, n, k, lda);
    if (lwork < need) return CUSOLVER_STATUS_INVALID_VALUE;
    return queue(h, fn, [=]() {
        if (!dev_ok(fn, "info", info, sizeof(int))) return;
        if (!dev_ok(fn, "A", A, span(m, n, lda, sizeof(T)))) return;
        if (!dev_ok(fn, "tau", tau, sizeof(T) * (size_t)k)) return;
        if (n > 0 && !dev_ok(fn, "work", work, sizeof(T) * (size_t)need)) return;
        int r = 0;
        if (n > 0) lapack_orgqr(m, n, k, A, lda, tau, work, (int)need, &r);
        *info = r;
    });
}

/* ---- syevd ------------------------------------------------------------------- */

/* Workspace: LAPACK's real work array, then its integer one. */
typedef struct syevd_layout {
    int64_t lwork, liwork, total;
} syevd_layout;

template <typename T>
static syevd_layout syevd_work(char jz, char u, int n, int lda)
{
    T q = 0, dummy = 0;
    int iq = 0, r = 0;
    lapack_syevd(jz, u, n, &dummy, lda, &dummy, &q, -1, &iq, -1, &r);
    syevd_layout l;
    l.lwork = queried(q);
    l.liwork = iq > 1 ? iq : 1;
    l.total = l.lwork + ints_as<T>(l.liwork);
    return l;
}

static bool syevd_args_ok(cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, int lda)
{
    return jobz_ok(jobz) && fill_ok(uplo) && n >= 0 && lda >= imax(1, n);
}

/* cusolverDn[SD]syevd_bufferSize, with their arguments as they come (A and W are not read). */
template <typename T>
static cusolverStatus_t syevd_size(cusolverDnHandle_t h, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n,
                                   const T *A, int lda, const T *W, int *lwork)
{
    (void)A;
    (void)W;
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!syevd_args_ok(jobz, uplo, n, lda) || !lwork) return CUSOLVER_STATUS_INVALID_VALUE;
    char jz = jobz == CUSOLVER_EIG_MODE_VECTOR ? 'V' : 'N';
    return answer(syevd_work<T>(jz, fill_char(uplo), n, lda).total, lwork);
}

template <typename T>
static cusolverStatus_t syevd(const char *fn, cusolverDnHandle_t h, cusolverEigMode_t jobz, cublasFillMode_t uplo,
                              int n, T *A, int lda, T *W, T *work, int lwork, int *info)
{
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!syevd_args_ok(jobz, uplo, n, lda)) return CUSOLVER_STATUS_INVALID_VALUE;
    char jz = jobz == CUSOLVER_EIG_MODE_VECTOR ? 'V' : 'N', u = fill_char(uplo);
    syevd_layout l = syevd_work<T>(jz, u, n, lda);
    if (lwork < l.total) return CUSOLVER_STATUS_INVALID_VALUE;
    return queue(h, fn, [=]() {
        if (!dev_ok(fn, "info", info, sizeof(int))) return;
        if (!dev_ok(fn, "A", A, span(n, n, lda, sizeof(T)))) return;
        if (!dev_ok(fn, "W", W, sizeof(T) * (size_t)n)) return;
        if (n > 0 && !dev_ok(fn, "work", work, sizeof(T) * (size_t)l.total)) return;
        int r = 0;
        if (n > 0)
            lapack_syevd(jz, u, n, A, lda, W, work, (int)l.lwork, (int *)(work + l.lwork), (int)l.liwork, &r);
        *info = r;
    });
}

/* ---- gesvdj (by gesdd) --------------------------------------------------------- */

extern "C" cusolverStatus_t cusolverDnCreateGesvdjInfo(gesvdjInfo_t *info)
{
    if (!info) return CUSOLVER_STATUS_INVALID_VALUE;
    gesvdjInfo *p = new (std::nothrow) gesvdjInfo;
    if (!p) return CUSOLVER_STATUS_ALLOC_FAILED;
    p->tolerance = 0;       /* cuSOLVER's default: machine accuracy */
    p->max_sweeps = 100;    /* cuSOLVER's default */
    p->sort = 1;
    p->result = std::make_shared<gesvdj_result>();
    *info = p;
    return CUSOLVER_STATUS_SUCCESS;
}

extern "C" cusolverStatus_t cusolverDnDestroyGesvdjInfo(gesvdjInfo_t info)
{
    return destroy(info, CUSOLVER_STATUS_INVALID_VALUE);
}

extern "C" cusolverStatus_t cusolverDnXgesvdjSetTolerance(gesvdjInfo_t info, double tolerance)
{
    if (!info) return CUSOLVER_STATUS_INVALID_VALUE;
    info->tolerance = tolerance;    /* <= 0 means the default, as documented */
    return CUSOLVER_STATUS_SUCCESS;
}

extern "C" cusolverStatus_t cusolverDnXgesvdjSetMaxSweeps(gesvdjInfo_t info, int max_sweeps)
{
    if (!info) return CUSOLVER_STATUS_INVALID_VALUE;
    info->max_sweeps = max_sweeps > 0 ? max_sweeps : 100;   /* <= 0: the default */
    return CUSOLVER_STATUS_SUCCESS;
}

/* gesdd always sorts; sorted output is also a valid answer when sorting is
 * switched off, so this only records the choice. */
extern "C" cusolverStatus_t cusolverDnXgesvdjSetSortEig(gesvdjInfo_t info, int sort_svd)
{
    if (!info) return CUSOLVER_STATUS_INVALID_VALUE;
    info->sort = sort_svd;
    return CUSOLVER_STATUS_SUCCESS;
}

/* Read after the stream has run the gesvdj, as on a GPU. */
extern "C" cusolverStatus_t cusolverDnXgesvdjGetResidual(cusolverDnHandle_t handle, gesvdjInfo_t info,
                                                         double *residual)
{
    if (!handle) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!info || !residual) return CUSOLVER_STATUS_INVALID_VALUE;
    *residual = info->result->residual;
    return CUSOLVER_STATUS_SUCCESS;
}

extern "C" cusolverStatus_t cusolverDnXgesvdjGetSweeps(cusolverDnHandle_t handle, gesvdjInfo_t info,
                                                       int *executed_sweeps)
{
    if (!handle) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!info || !executed_sweeps) return CUSOLVER_STATUS_INVALID_VALUE;
    *executed_sweeps = info->result->sweeps;
    return CUSOLVER_STATUS_SUCCESS;
}

/* Workspace of gesvdj, in elements of T, in this order:
 *   LAPACK's real work array (lwork),
 *   V^T as gesdd writes it (vt: ldvt x n, vectors only),
 *   a packed copy of A (m x n), kept to measure the residual,
 *   gesdd's integer work array (8 min(m, n) ints). */
typedef struct gesvdj_layout {
    char jz;                /* gesdd's JOBZ: 'N', 'S' (econ) or 'A' */
    int ldvt;
    int64_t lwork, vt, acopy, iwork, total;
} gesvdj_layout;

template <typename T>
static gesvdj_layout gesvdj_work(cusolverEigMode_t jobz, int econ, int m, int n, int lda)
{
    gesvdj_layout l;
    int k = imin(m, n);
    bool vec = jobz == CUSOLVER_EIG_MODE_VECTOR;
    l.jz = !vec ? 'N' : econ ? 'S' : 'A';
    l.ldvt = !vec ? 1 : imax(1, econ ? k : n);
    T q = 0, dummy = 0;
    int iq = 0, r = 0;
    lapack_gesdd(l.jz, m, n, &dummy, lda, &dummy, &dummy, imax(1, m), &dummy, l.ldvt, &q, -1, &iq, &r);
    l.lwork = queried(q);
    l.vt = vec ? (int64_t)l.ldvt * n : 0;
    l.acopy = (int64_t)m * n;
    l.iwork = ints_as<T>(8 * (int64_t)imax(1, k));
    l.total = l.lwork + l.vt + l.acopy + l.iwork;
    return l;
}

static bool gesvdj_args_ok(cusolverEigMode_t jobz, int m, int n, int lda, int ldu, int ldv)
{
    return jobz_ok(jobz) && m >= 0 && n >= 0 && lda >= imax(1, m) && ldu >= imax(1, m) && ldv >= imax(1, n);
}

/* cusolverDn[SD]gesvdj_bufferSize, with their arguments as they come (the matrices and params are not read). */
template <typename T>
static cusolverStatus_t gesvdj_size(cusolverDnHandle_t h, cusolverEigMode_t jobz, int econ, int m, int n,
                                    const T *A, int lda, const T *S, const T *U, int ldu, const T *V, int ldv,
                                    int *lwork, gesvdjInfo_t params)
{
    (void)A;
    (void)S;
    (void)U;
    (void)V;
    (void)params;
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!gesvdj_args_ok(jobz, m, n, lda, ldu, ldv) || !lwork) return CUSOLVER_STATUS_INVALID_VALUE;
    return answer(gesvdj_work<T>(jobz, econ, m, n, lda).total, lwork);
}

/* ||A - U diag(S) V^T||_F over the min(m, n) singular triplets (a is the
 * packed copy, u has leading dimension ldu, vt is k' x n with ldvt). */
template <typename T>
static double svd_residual(int m, int n, const T *a, const T *s, const T *u, int ldu, const T *vt, int ldvt)
{
    int k = imin(m, n);
    double sum = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double x = a[i + (size_t)j * m];
            for (int l = 0; l < k; l++) x -= (double)u[i + (size_t)l * ldu] * s[l] * vt[l + (size_t)j * ldvt];
            sum += x * x;
        }
    return std::sqrt(sum);
}

template <typename T>
static cusolverStatus_t gesvdj(const char *fn, cusolverDnHandle_t h, cusolverEigMode_t jobz, int econ, int m, int n,
                               T *A, int lda, T *S, T *U, int ldu, T *V, int ldv, T *work, int lwork, int *info,
                               gesvdjInfo_t params)
{
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!gesvdj_args_ok(jobz, m, n, lda, ldu, ldv)) return CUSOLVER_STATUS_INVALID_VALUE;
    gesvdj_layout l = gesvdj_work<T>(jobz, econ, m, n, lda);
    if (lwork < l.total) return CUSOLVER_STATUS_INVALID_VALUE;
    /* a NULL params is taken as the defaults; the result goes nowhere then */
    std::shared_ptr<gesvdj_result> result = params ? params->result : std::make_shared<gesvdj_result>();
    return queue(h, fn, [=]() {
        int k = imin(m, n);
        bool vec = l.jz != 'N';
        int ucols = econ ? k : m, vcols = econ ? k : n;
        if (!dev_ok(fn, "info", info, sizeof(int))) return;
        if (!dev_ok(fn, "A", A, span(m, n, lda, sizeof(T)))) return;
        if (!dev_ok(fn, "S", S, sizeof(T) * (size_t)k)) return;
        /* U and V are not referenced without vectors */
        if (vec && !dev_ok(fn, "U", U, span(m, ucols, ldu, sizeof(T)))) return;
        if (vec && !dev_ok(fn, "V", V, span(n, vcols, ldv, sizeof(T)))) return;
        if (k > 0 && !dev_ok(fn, "work", work, sizeof(T) * (size_t)l.total)) return;
        T *vt = work + l.lwork, *acopy = vt + l.vt;
        int *iwork = (int *)(acopy + l.acopy);
        result->sweeps = 0;
        result->residual = 0;
        if (k == 0) {
            *info = 0;
            return;
        }
        copy_matrix(m, n, A, lda, acopy, m);
        int r = 0;
        /* U is written in place (ldu >= m is what gesdd asks); V^T into the
         * workspace, to be transposed into V */
        lapack_gesdd(l.jz, m, n, A, lda, S, vec ? U : work, vec ? ldu : 1, vec ? vt : work, l.ldvt, work,
                     (int)l.lwork, iwork, &r);
        if (r != 0) {
            /* gesdd's only failures after the checks above: a NaN in A (-4)
             * or no convergence (> 0). A Jacobi sweep whose off-diagonal norm
             * is NaN never meets the tolerance either, so both are reported
             * as cuSOLVER reports non-convergence: info = min(m, n) + 1. */
            const T nan = std::numeric_limits<T>::quiet_NaN();
            for (int i = 0; i < k; i++) S[i] = nan;
            for (int j = 0; vec && j < ucols; j++)
                for (int i = 0; i < m; i++) U[i + (size_t)j * ldu] = nan;
            for (int j = 0; vec && j < vcols; j++)
                for (int i = 0; i < n; i++) V[i + (size_t)j * ldv] = nan;
            result->residual = std::numeric_limits<double>::quiet_NaN();
            *info = k + 1;
            return;
        }
        if (vec) {
            /* cuSOLVER's gesvdj returns V, not V^T */
            for (int j = 0; j < vcols; j++)
                for (int i = 0; i < n; i++) V[i + (size_t)j * ldv] = vt[j + (size_t)i * l.ldvt];
            result->residual = svd_residual(m, n, acopy, S, U, ldu, vt, l.ldvt);
        } else {
            /* without vectors: how far the singular values are from carrying
             * A's Frobenius norm */
            double na = 0, ns = 0;
            for (int64_t i = 0; i < (int64_t)m * n; i++) na += (double)acopy[i] * acopy[i];
            for (int i = 0; i < k; i++) ns += (double)S[i] * S[i];
            result->residual = std::fabs(std::sqrt(na) - std::sqrt(ns));
        }
        result->sweeps = 1;     /* one pass of a direct method */
        *info = 0;
    });
}

/* ---- the entry points ------------------------------------------------------------ */

extern "C" cusolverStatus_t cusolverDnSgetrf_bufferSize(cusolverDnHandle_t handle, int m, int n, float *A, int lda,
                                                        int *Lwork)
{
    (void)A;
    return getrf_size(handle, m, n, lda, Lwork);
}

extern "C" cusolverStatus_t cusolverDnDgetrf_bufferSize(cusolverDnHandle_t handle, int m, int n, double *A, int lda,
                                                        int *Lwork)
{
    (void)A;
    return getrf_size(handle, m, n, lda, Lwork);
}

extern "C" cusolverStatus_t cusolverDnSgetrf(cusolverDnHandle_t handle, int m, int n, float *A, int lda,
                                             float *Workspace, int *devIpiv, int *devInfo)
{
    return getrf<float>("cusolverDnSgetrf", handle, m, n, A, lda, Workspace, devIpiv, devInfo);
}

extern "C" cusolverStatus_t cusolverDnDgetrf(cusolverDnHandle_t handle, int m, int n, double *A, int lda,
                                             double *Workspace, int *devIpiv, int *devInfo)
{
    return getrf<double>("cusolverDnDgetrf", handle, m, n, A, lda, Workspace, devIpiv, devInfo);
}

extern "C" cusolverStatus_t cusolverDnSgetrs(cusolverDnHandle_t handle, cublasOperation_t trans, int n, int nrhs,
                                             const float *A, int lda, const int *devIpiv, float *B, int ldb,
                                             int *devInfo)
{
    return getrs<float>("cusolverDnSgetrs", handle, trans, n, nrhs, A, lda, devIpiv, B, ldb, devInfo);
}

extern "C" cusolverStatus_t cusolverDnDgetrs(cusolverDnHandle_t handle, cublasOperation_t trans, int n, int nrhs,
                                             const double *A, int lda, const int *devIpiv, double *B, int ldb,
                                             int *devInfo)
{
    return getrs<double>("cusolverDnDgetrs", handle, trans, n, nrhs, A, lda, devIpiv, B, ldb, devInfo);
}

extern "C" cusolverStatus_t cusolverDnSpotrf_bufferSize(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n,
                                                        float *A, int lda, int *Lwork)
{
    (void)A;
    return potrf_size<float>(handle, uplo, n, lda, Lwork);
}

extern "C" cusolverStatus_t cusolverDnDpotrf_bufferSize(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n,
                                                        double *A, int lda, int *Lwork)
{
    (void)A;
    return potrf_size<double>(handle, uplo, n, lda, Lwork);
}

extern "C" cusolverStatus_t cusolverDnSpotrf(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, float *A,
                                             int lda, float *Workspace, int Lwork, int *devInfo)
{
    return potrf<float>("cusolverDnSpotrf", handle, uplo, n, A, lda, Workspace, Lwork, devInfo);
}

extern "C" cusolverStatus_t cusolverDnDpotrf(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, double *A,
                                             int lda, double *Workspace, int Lwork, int *devInfo)
{
    return potrf<double>("cusolverDnDpotrf", handle, uplo, n, A, lda, Workspace, Lwork, devInfo);
}

extern "C" cusolverStatus_t cusolverDnSpotrs(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, int nrhs,
                                             const float *A, int lda, float *B, int ldb, int *devInfo)
{
    return potrs<float>("cusolverDnSpotrs", handle, uplo, n, nrhs, A, lda, B, ldb, devInfo);
}

extern "C" cusolverStatus_t cusolverDnDpotrs(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, int nrhs,
                                             const double *A, int lda, double *B, int ldb, int *devInfo)
{
    return potrs<double>("cusolverDnDpotrs", handle, uplo, n, nrhs, A, lda, B, ldb, devInfo);
}

extern "C" cusolverStatus_t cusolverDnSgeqrf_bufferSize(cusolverDnHandle_t handle, int m, int n, float *A, int lda,
                                                        int *lwork)
{
    (void)A;
    return geqrf_size<float>(handle, m, n, lda, lwork);
}

extern "C" cusolverStatus_t cusolverDnDgeqrf_bufferSize(cusolverDnHandle_t handle, int m, int n, double *A, int lda,
                                                        int *lwork)
{
    (void)A;
    return geqrf_size<double>(handle, m, n, lda, lwork);
}

extern "C" cusolverStatus_t cusolverDnSgeqrf(cusolverDnHandle_t handle, int m, int n, float *A, int lda, float *TAU,
                                             float *Workspace, int Lwork, int *devInfo)
{
    return geqrf<float>("cusolverDnSgeqrf", handle, m, n, A, lda, TAU, Workspace, Lwork, devInfo);
}

extern "C" cusolverStatus_t cusolverDnDgeqrf(cusolverDnHandle_t handle, int m, int n, double *A, int lda,
                                             double *TAU, double *Workspace, int Lwork, int *devInfo)
{
    return geqrf<double>("cusolverDnDgeqrf", handle, m, n, A, lda, TAU, Workspace, Lwork, devInfo);
}

extern "C" cusolverStatus_t cusolverDnSorgqr_bufferSize(cusolverDnHandle_t handle, int m, int n, int k,
                                                        const float *A, int lda, const float *tau, int *lwork)
{
    (void)A;
    (void)tau;
    return orgqr_size<float>(handle, m, n, k, lda, lwork);
}

extern "C" cusolverStatus_t cusolverDnDorgqr_bufferSize(cusolverDnHandle_t handle, int m, int n, int k,
                                                        const double *A, int lda, const double *tau, int *lwork)
{
    (void)A;
    (void)tau;
    return orgqr_size<double>(handle, m, n, k, lda, lwork);
}

extern "C" cusolverStatus_t cusolverDnSorgqr(cusolverDnHandle_t handle, int m, int n, int k, float *A, int lda,
                                             const float *tau, float *work, int lwork, int *info)
{
    return orgqr<float>("cusolverDnSorgqr", handle, m, n, k, A, lda, tau, work, lwork, info);
}

extern "C" cusolverStatus_t cusolverDnDorgqr(cusolverDnHandle_t handle, int m, int n, int k, double *A, int lda,
                                             const double *tau, double *work, int lwork, int *info)
{
    return orgqr<double>("cusolverDnDorgqr", handle, m, n, k, A, lda, tau, work, lwork, info);
}

extern "C" cusolverStatus_t cusolverDnSsyevd_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                                        cublasFillMode_t uplo, int n, const float *A, int lda,
                                                        const float *W, int *lwork)
{
    return syevd_size<float>(handle, jobz, uplo, n, A, lda, W, lwork);
}

extern "C" cusolverStatus_t cusolverDnDsyevd_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                                        cublasFillMode_t uplo, int n, const double *A, int lda,
                                                        const double *W, int *lwork)
{
    return syevd_size<double>(handle, jobz, uplo, n, A, lda, W, lwork);
}

extern "C" cusolverStatus_t cusolverDnSsyevd(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                             cublasFillMode_t uplo, int n, float *A, int lda, float *W, float *work,
                                             int lwork, int *info)
{
    return syevd<float>("cusolverDnSsyevd", handle, jobz, uplo, n, A, lda, W, work, lwork, info);
}

extern "C" cusolverStatus_t cusolverDnDsyevd(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
                                             cublasFillMode_t uplo, int n, double *A, int lda, double *W,
                                             double *work, int lwork, int *info)
{
    return syevd<double>("cusolverDnDsyevd", handle, jobz, uplo, n, A, lda, W, work, lwork, info);
}

extern "C" cusolverStatus_t cusolverDnSgesvdj_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t jobz, int econ,
                                                         int m, int n, const float *A, int lda, const float *S,
                                                         const float *U, int ldu, const float *V, int ldv,
                                                         int *lwork, gesvdjInfo_t params)
{
    return gesvdj_size<float>(handle, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv, lwork, params);
}

extern "C" cusolverStatus_t cusolverDnDgesvdj_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t jobz, int econ,
                                                         int m, int n, const double *A, int lda, const double *S,
                                                         const double *U, int ldu, const double *V, int ldv,
                                                         int *lwork, gesvdjInfo_t params)
{
    return gesvdj_size<double>(handle, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv, lwork, params);
}

extern "C" cusolverStatus_t cusolverDnSgesvdj(cusolverDnHandle_t handle, cusolverEigMode_t jobz, int econ, int m,
                                              int n, float *A, int lda, float *S, float *U, int ldu, float *V,
                                              int ldv, float *work, int lwork, int *info, gesvdjInfo_t params)
{
    return gesvdj<float>("cusolverDnSgesvdj", handle, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv, work, lwork, info,
                         params);
}

extern "C" cusolverStatus_t cusolverDnDgesvdj(cusolverDnHandle_t handle, cusolverEigMode_t jobz, int econ, int m,
                                              int n, double *A, int lda, double *S, double *U, int ldu, double *V,
                                              int ldv, double *work, int lwork, int *info, gesvdjInfo_t params)
{
    return gesvdj<double>("cusolverDnDgesvdj", handle, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv, work, lwork,
                          info, params);
}
