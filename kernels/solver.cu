/* solver.cu — the linalg family (backend.h) on CUDA: cuSOLVER's dense
 * routines, one matrix at a time over the batch, on the device's stream.
 *
 * Matrices arrive column-major, as cuSOLVER takes them. getrf / getrs,
 * potrf, geqrf / orgqr and syevd map one to one. The SVD uses gesvdj (Jacobi),
 * which takes any m x n (gesvd wants m >= n) and returns V rather than V^T:
 * V is written to scratch and transposed into Vh by a small kernel. Each
 * routine's info goes to a device array and comes back in one copy at the
 * end (the only synchronisation). */
#include "kc.h"

#include <cusolverDn.h>

static cusolverDnHandle_t handles[64];    /* as gemm.cu: backend.cu opens at most 64 devices */

static int solver_error(const char *op, cusolverStatus_t st)
{
    return kc_error("linalg: %s failed (cuSOLVER status %d)", op, (int)st);
}

/* the device's handle bound to its stream */
static cusolverDnHandle_t handle_for(int device, cudaStream_t s)
{
    if (!handles[device]) {
        cusolverStatus_t st = cusolverDnCreate(&handles[device]);
        if (st != CUSOLVER_STATUS_SUCCESS) {
            solver_error("cusolverDnCreate", st);
            return NULL;
        }
    }
    cusolverDnSetStream(handles[device], s);
    return handles[device];
}

/* ---- float / double overloads of the cuSOLVER calls ----------------------- */

static cusolverStatus_t getrf_size(cusolverDnHandle_t h, int n, float *a, int *lw)
{ return cusolverDnSgetrf_bufferSize(h, n, n, a, n, lw); }
static cusolverStatus_t getrf_size(cusolverDnHandle_t h, int n, double *a, int *lw)
{ return cusolverDnDgetrf_bufferSize(h, n, n, a, n, lw); }
static cusolverStatus_t getrf(cusolverDnHandle_t h, int n, float *a, float *w, int *piv, int *info)
{ return cusolverDnSgetrf(h, n, n, a, n, w, piv, info); }
static cusolverStatus_t getrf(cusolverDnHandle_t h, int n, double *a, double *w, int *piv, int *info)
{ return cusolverDnDgetrf(h, n, n, a, n, w, piv, info); }
static cusolverStatus_t getrs(cusolverDnHandle_t h, int n, int k, const float *a, const int *piv, float *b, int *info)
{ return cusolverDnSgetrs(h, CUBLAS_OP_N, n, k, a, n, piv, b, n, info); }
static cusolverStatus_t getrs(cusolverDnHandle_t h, int n, int k, const double *a, const int *piv, double *b, int *info)
{ return cusolverDnDgetrs(h, CUBLAS_OP_N, n, k, a, n, piv, b, n, info); }
static cusolverStatus_t potrf_size(cusolverDnHandle_t h, int n, float *a, int *lw)
{ return cusolverDnSpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, a, n, lw); }
static cusolverStatus_t potrf_size(cusolverDnHandle_t h, int n, double *a, int *lw)
{ return cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, a, n, lw); }
static cusolverStatus_t potrf(cusolverDnHandle_t h, int n, float *a, float *w, int lw, int *info)
{ return cusolverDnSpotrf(h, CUBLAS_FILL_MODE_LOWER, n, a, n, w, lw, info); }
static cusolverStatus_t potrf(cusolverDnHandle_t h, int n, double *a, double *w, int lw, int *info)
{ return cusolverDnDpotrf(h, CUBLAS_FILL_MODE_LOWER, n, a, n, w, lw, info); }
static cusolverStatus_t geqrf_size(cusolverDnHandle_t h, int m, int n, float *a, int *lw)
{ return cusolverDnSgeqrf_bufferSize(h, m, n, a, m, lw); }
static cusolverStatus_t geqrf_size(cusolverDnHandle_t h, int m, int n, double *a, int *lw)
{ return cusolverDnDgeqrf_bufferSize(h, m, n, a, m, lw); }
static cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, float *a, float *tau, float *w, int lw, int *info)
{ return cusolverDnSgeqrf(h, m, n, a, m, tau, w, lw, info); }
static cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, double *a, double *tau, double *w, int lw, int *info)
{ return cusolverDnDgeqrf(h, m, n, a, m, tau, w, lw, info); }
static cusolverStatus_t orgqr_size(cusolverDnHandle_t h, int m, int n, int k, float *a, float *tau, int *lw)
{ return cusolverDnSorgqr_bufferSize(h, m, n, k, a, m, tau, lw); }
static cusolverStatus_t orgqr_size(cusolverDnHandle_t h, int m, int n, int k, double *a, double *tau, int *lw)
{ return cusolverDnDorgqr_bufferSize(h, m, n, k, a, m, tau, lw); }
static cusolverStatus_t orgqr(cusolverDnHandle_t h, int m, int n, int k, float *a, float *tau, float *w, int lw,
                              int *info)
{ return cusolverDnSorgqr(h, m, n, k, a, m, tau, w, lw, info); }
static cusolverStatus_t orgqr(cusolverDnHandle_t h, int m, int n, int k, double *a, double *tau, double *w, int lw,
                              int *info)
{ return cusolverDnDorgqr(h, m, n, k, a, m, tau, w, lw, info); }
static cusolverStatus_t syevd_size(cusolverDnHandle_t h, cusolverEigMode_t j, cublasFillMode_t u, int n, float *a,
                                   float *w, int *lw)
{ return cusolverDnSsyevd_bufferSize(h, j, u, n, a, n, w, lw); }
static cusolverStatus_t syevd_size(cusolverDnHandle_t h, cusolverEigMode_t j, cublasFillMode_t u, int n, double *a,
                                   double *w, int *lw)
{ return cusolverDnDsyevd_bufferSize(h, j, u, n, a, n, w, lw); }
static cusolverStatus_t syevd(cusolverDnHandle_t h, cusolverEigMode_t j, cublasFillMode_t u, int n, float *a,
                              float *w, float *work, int lw, int *info)
{ return cusolverDnSsyevd(h, j, u, n, a, n, w, work, lw, info); }
static cusolverStatus_t syevd(cusolverDnHandle_t h, cusolverEigMode_t j, cublasFillMode_t u, int n, double *a,
                              double *w, double *work, int lw, int *info)
{ return cusolverDnDsyevd(h, j, u, n, a, n, w, work, lw, info); }
static cusolverStatus_t gesvdj_size(cusolverDnHandle_t h, cusolverEigMode_t j, int econ, int m, int n, float *a,
                                    float *s, float *u, int ldu, float *v, int ldv, int *lw, gesvdjInfo_t p)
{ return cusolverDnSgesvdj_bufferSize(h, j, econ, m, n, a, m, s, u, ldu, v, ldv, lw, p); }
static cusolverStatus_t gesvdj_size(cusolverDnHandle_t h, cusolverEigMode_t j, int econ, int m, int n, double *a,
                                    double *s, double *u, int ldu, double *v, int ldv, int *lw, gesvdjInfo_t p)
{ return cusolverDnDgesvdj_bufferSize(h, j, econ, m, n, a, m, s, u, ldu, v, ldv, lw, p); }
static cusolverStatus_t gesvdj(cusolverDnHandle_t h, cusolverEigMode_t j, int econ, int m, int n, float *a, float *s,
                               float *u, int ldu, float *v, int ldv, float *w, int lw, int *info, gesvdjInfo_t p)
{ return cusolverDnSgesvdj(h, j, econ, m, n, a, m, s, u, ldu, v, ldv, w, lw, info, p); }
static cusolverStatus_t gesvdj(cusolverDnHandle_t h, cusolverEigMode_t j, int econ, int m, int n, double *a,
                               double *s, double *u, int ldu, double *v, int ldv, double *w, int lw, int *info,
                               gesvdjInfo_t p)
{ return cusolverDnDgesvdj(h, j, econ, m, n, a, m, s, u, ldu, v, ldv, w, lw, info, p); }

/* vh[b] (column-major [c, r]) = v[b]^T (v column-major [r, c]) */
template <typename T>
__global__ void transpose_batch(T *vh, const T *v, int64_t B, int r, int c)
{
    int64_t total = B * (int64_t)r * c;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = e / ((int64_t)r * c), rem = e % ((int64_t)r * c);
        int i = (int)(rem % r), j = (int)(rem / r);     /* v[i, j] */
        vh[b * (int64_t)r * c + j + (int64_t)i * c] = v[e];
    }
}

/* Scratch of one call, freed together. */
typedef struct scratch {
    void *p[6];
    size_t n[6];
    int count, device;
} scratch;

static void *take(scratch *s, size_t n)
{
    if (s->count == 6) return kc_error("linalg: internal: too many scratch buffers"), (void *)NULL;
    void *p = kc_alloc(n > 0 ? n : 1, s->device);
    if (p) {
        s->p[s->count] = p;
        s->n[s->count++] = n > 0 ? n : 1;
    }
    return p;
}

static void release(scratch *s)
{
    for (int i = 0; i < s->count; i++) kc_free(s->p[i], s->n[i], s->device);
}

template <typename T>
static int run(em_linalg_op op, em_tensor *a, em_tensor *b, em_tensor *c, em_tensor *d, const em_linalg_params *p,
               int *dinfo, cudaStream_t st, scratch *sc)
{
    int dev = kc_device_of(a);
    cusolverDnHandle_t h = handle_for(dev, st);
    if (!h) return -1;
    int64_t B = a->sizes[0];
    int m = (int)a->sizes[1], n = (int)a->sizes[2], k = m < n ? m : n;
    T *A = (T *)kc_ptr(a);
    int lw = 0;
    cusolverStatus_t s = CUSOLVER_STATUS_SUCCESS;
    switch (op) {
    case EM_LINALG_LU:
    case EM_LINALG_SOLVE: {
        if ((s = getrf_size(h, n, A, &lw))) return solver_error("getrf_bufferSize", s);
        T *w = (T *)take(sc, sizeof(T) * (size_t)lw);
        int *piv = op == EM_LINALG_LU ? (int *)kc_ptr(b) : (int *)take(sc, sizeof(int) * (size_t)n * (size_t)B);
        int *rs_info = op == EM_LINALG_SOLVE ? (int *)take(sc, sizeof(int)) : NULL;
        if (!w || !piv || (op == EM_LINALG_SOLVE && !rs_info)) return -1;
        for (int64_t i = 0; i < B; i++) {
            T *Ai = A + i * (int64_t)n * n;
            if ((s = getrf(h, n, Ai, w, piv + i * n, dinfo + i))) return solver_error("getrf", s);
            if (op == EM_LINALG_SOLVE) {
                int nrhs = (int)b->sizes[2];
                T *Bi = (T *)kc_ptr(b) + i * (int64_t)n * nrhs;
                if ((s = getrs(h, n, nrhs, Ai, piv + i * n, Bi, rs_info))) return solver_error("getrs", s);
            }
        }
        return 0;
    }
    case EM_LINALG_CHOLESKY: {
        if ((s = potrf_size(h, n, A, &lw))) return solver_error("potrf_bufferSize", s);
        T *w = (T *)take(sc, sizeof(T) * (size_t)lw);
        if (!w) return -1;
        for (int64_t i = 0; i < B; i++)
            if ((s = potrf(h, n, A + i * (int64_t)n * n, w, lw, dinfo + i))) return solver_error("potrf", s);
        return 0;
    }
    case EM_LINALG_QR: {
        int kq = b ? (int)b->sizes[2] : 0, lw2 = 0, ncopy = n < kq ? n : kq;
        T *tau = (T *)take(sc, sizeof(T) * (size_t)(k > 0 ? k : 1));
        if (!tau) return -1;
        if ((s = geqrf_size(h, m, n, A, &lw))) return solver_error("geqrf_bufferSize", s);
        if (b && (s = orgqr_size(h, m, kq, k, (T *)kc_ptr(b), tau, &lw2))) return solver_error("orgqr_bufferSize", s);
        T *w = (T *)take(sc, sizeof(T) * (size_t)(lw > lw2 ? lw : lw2));
        if (!w) return -1;
        for (int64_t i = 0; i < B; i++) {
            T *Ai = A + i * (int64_t)m * n;
            if ((s = geqrf(h, m, n, Ai, tau, w, lw > lw2 ? lw : lw2, dinfo + i))) return solver_error("geqrf", s);
            if (!b) continue;
            T *Q = (T *)kc_ptr(b) + i * (int64_t)m * kq;
            cudaError_t e = cudaMemcpyAsync(Q, Ai, sizeof(T) * (size_t)m * ncopy, cudaMemcpyDeviceToDevice, st);
            if (e == cudaSuccess && kq > ncopy)
                e = cudaMemsetAsync(Q + (int64_t)m * ncopy, 0, sizeof(T) * (size_t)m * (kq - ncopy), st);
            if (e != cudaSuccess) return kc_cuda_error("linalg.qr", e);
            if ((s = orgqr(h, m, kq, k, Q, tau, w, lw > lw2 ? lw : lw2, dinfo + i))) return solver_error("orgqr", s);
        }
        return 0;
    }
    case EM_LINALG_EIGH: {
        cusolverEigMode_t jz = p->vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
        cublasFillMode_t up = p->upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
        T *W = (T *)kc_ptr(b);
        if ((s = syevd_size(h, jz, up, n, A, W, &lw))) return solver_error("syevd_bufferSize", s);
        T *w = (T *)take(sc, sizeof(T) * (size_t)lw);
        if (!w) return -1;
        for (int64_t i = 0; i < B; i++)
            if ((s = syevd(h, jz, up, n, A + i * (int64_t)n * n, W + i * n, w, lw, dinfo + i)))
                return solver_error("syevd", s);
        return 0;
    }
    case EM_LINALG_SVD: {
        bool vec = c != NULL;
        int econ = p->full ? 0 : 1, uc = vec ? (int)c->sizes[2] : 1, vr = vec ? (int)d->sizes[1] : 1;
        cusolverEigMode_t jz = vec ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
        T *S = (T *)kc_ptr(b);
        /* U straight into c; V [n, vr] into scratch, transposed at the end */
        T *U = vec ? (T *)kc_ptr(c) : (T *)take(sc, sizeof(T) * (size_t)m);
        T *V = (T *)take(sc, sizeof(T) * (size_t)B * (size_t)n * (size_t)vr);
        gesvdjInfo_t par = NULL;
        if (!U || !V) return -1;
        if ((s = cusolverDnCreateGesvdjInfo(&par))) return solver_error("CreateGesvdjInfo", s);
        int rc = 0;
        if ((s = gesvdj_size(h, jz, econ, m, n, A, S, U, m, V, n, &lw, par))) {
            rc = solver_error("gesvdj_bufferSize", s);
        } else {
            T *w = (T *)take(sc, sizeof(T) * (size_t)lw);
            if (!w) rc = -1;
            for (int64_t i = 0; rc == 0 && i < B; i++) {
                T *Ui = vec ? U + i * (int64_t)m * uc : U;
                s = gesvdj(h, jz, econ, m, n, A + i * (int64_t)m * n, S + i * k, Ui, m, V + i * (int64_t)n * vr, n,
                           w, lw, dinfo + i, par);
                if (s) rc = solver_error("gesvdj", s);
            }
        }
        cusolverDnDestroyGesvdjInfo(par);
        if (rc || !vec) return rc;
        int64_t total = B * (int64_t)n * vr;
        if (total > 0) {
            KC_LAUNCH(kc_grid(total, dev), KC_THREADS, 0, st, transpose_batch<T>)((T *)kc_ptr(d), V, B, n, vr);
            if (kc_launched("linalg.svd", dev)) return -1;
        }
        return 0;
    }
    default:
        return kc_error("linalg: unknown op %d", (int)op);
    }
}

extern "C" int kc_linalg(em_linalg_op op, em_tensor *a, em_tensor *b, em_tensor *c, em_tensor *d,
                         const em_linalg_params *p, int *info)
{
    int64_t B = a->sizes[0];
    memset(info, 0, sizeof(int) * (size_t)(B > 0 ? B : 1));
    if (B == 0 || a->sizes[1] == 0 || a->sizes[2] == 0) return 0;
    if (a->dtype != EM_FLOAT32 && a->dtype != EM_FLOAT64)
        return kc_error("linalg: the CUDA kernels take float32 or float64, got %s", kc_dtype_name(a->dtype));
    if (a->sizes[1] > (1 << 30) || a->sizes[2] > (1 << 30)) return kc_error("linalg: matrices too large for cuSOLVER");
    int dev = kc_device_of(a);
    cudaStream_t st = kc_stream(dev);
    if (!st) return -1;
    scratch sc = {};
    sc.device = dev;
    if (kc_capturing(dev))      /* info must come back to the host before this returns */
        return kc_refuse_capture(dev, "linalg: cannot read the factorisation's status back to the host");
    int *dinfo = (int *)take(&sc, sizeof(int) * (size_t)B);
    int rc = dinfo ? 0 : -1;
    if (rc == 0) {
        cudaError_t e = cudaMemsetAsync(dinfo, 0, sizeof(int) * (size_t)B, st);
        if (e != cudaSuccess) rc = kc_cuda_error("linalg", e);
    }
    if (rc == 0)
        rc = a->dtype == EM_FLOAT64 ? run<double>(op, a, b, c, d, p, dinfo, st, &sc)
                                    : run<float>(op, a, b, c, d, p, dinfo, st, &sc);
    if (rc == 0) {
        cudaError_t e = cudaMemcpyAsync(info, dinfo, sizeof(int) * (size_t)B, cudaMemcpyDeviceToHost, st);
        if (e == cudaSuccess) e = kc_synchronize(st);
        if (e != cudaSuccess) rc = kc_cuda_error("linalg", e);
    }
    release(&sc);
    return rc;
}
