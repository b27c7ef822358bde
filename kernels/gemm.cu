/* gemm.cu — batched GEMM through cuBLAS (backend.h: out[b] = alpha a[b] @
 * b[b] + beta out[b], 3-D operands, any strides, stride 0 on the batch dim
 * for broadcast operands).
 *
 * cuBLAS is column-major; a row-major matrix is the column-major view of its
 * transpose, so out = a @ b is computed as out^T = b^T a^T, and every
 * operand that has a unit stride in either dim is passed as it is (with the
 * transpose flag saying which). Only an operand with no unit stride, or an
 * output that is not row-major, goes through a contiguous copy. float32
 * uses TF32 tensor cores only when ember.backends.cuda.matmul.allow_tf32 is
 * set (off by default, as in PyTorch). */
#include "kc.h"

#include <cublas_v2.h>

static cublasHandle_t handles[64];

static cublasHandle_t handle_of(int device, cudaStream_t s)
{
    if (device < 0 || device >= 64) return NULL;
    if (!handles[device]) {
        cublasStatus_t st = cublasCreate(&handles[device]);
        if (st != CUBLAS_STATUS_SUCCESS) {
            kc_error("matmul: cuBLAS could not start: %s", cublasGetStatusString(st));
            handles[device] = NULL;
            return NULL;
        }
    }
    cublasSetStream(handles[device], s);
    return handles[device];
}

/* How a [rows, cols] matrix with strides (s0, s1) looks to cuBLAS: row-major
 * (transposed in column-major terms) or column-major, and its leading
 * dimension; false when neither dim has a usable unit stride. A dim of size
 * 1 may have any stride, so it never decides. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t s0, int64_t s1, bool *row_major, int64_t *ld)
{
    if (s1 == 1 || cols == 1) {
        int64_t l = rows == 1 ? cols : s0;
        if (l >= (cols > 1 ? cols : 1)) { *row_major = true; *ld = l > 0 ? l : 1; return true; }
    }
    if (s0 == 1 || rows == 1) {
        int64_t l = cols == 1 ? rows : s1;
        if (l >= (rows > 1 ? rows : 1)) { *row_major = false; *ld = l > 0 ? l : 1; return true; }
    }
    return false;
}

/* A contiguous copy of t in scratch memory, as a tensor header on the stack. */
typedef struct scratch {
    em_storage storage;
    em_tensor t;
    size_t nbytes;
} scratch;

static int make_scratch(scratch *s, const em_tensor *like, int device)
{
    memset(s, 0, sizeof *s);
    s->t = *like;
    s->t.offset = 0;
    int64_t st = 1;
    for (int i = like->ndim - 1; i >= 0; i--) { s->t.strides[i] = st; st *= like->sizes[i]; }
    s->nbytes = (size_t)kc_numel(like) * kc_dtype_size(like->dtype);
    s->storage = *like->storage;
    s->storage.data = kc_alloc(s->nbytes, device);
    if (!s->storage.data) return -1;
    s->storage.nbytes = s->nbytes;
    s->t.storage = &s->storage;
    return 0;
}

static void drop_scratch(scratch *s, int device)
{
    if (s->storage.data) kc_free(s->storage.data, s->nbytes, device);
}

template <typename T> static int run_gemm(cublasHandle_t h, em_tensor *out, const em_tensor *a, const em_tensor *b,
                                          double alpha, double beta)
{
    int64_t B = out->sizes[0], M = out->sizes[1], N = out->sizes[2], K = a->sizes[2];
    bool a_rm = true, b_rm = true, o_rm = true;
    int64_t lda = 1, ldb = 1, ldo = 1;
    blas_layout(M, K, a->strides[1], a->strides[2], &a_rm, &lda);
    blas_layout(K, N, b->strides[1], b->strides[2], &b_rm, &ldb);
    blas_layout(M, N, out->strides[1], out->strides[2], &o_rm, &ldo);
    /* out^T [N, M] (column-major, ldo) = op(b) [N, K] @ op(a) [K, M] */
    cublasOperation_t tb = b_rm ? CUBLAS_OP_N : CUBLAS_OP_T;
    cublasOperation_t ta = a_rm ? CUBLAS_OP_N : CUBLAS_OP_T;
    long long sa = a->sizes[0] == 1 ? 0 : a->strides[0], sb = b->sizes[0] == 1 ? 0 : b->strides[0];
    long long so = out->strides[0];
    cublasStatus_t st;
    if (sizeof(T) == 4) {
        float al = (float)alpha, be = (float)beta;
        cublasComputeType_t ct = kc_allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        st = cublasGemmStridedBatchedEx(h, tb, ta, (int)N, (int)M, (int)K, &al, kc_ptr(b), CUDA_R_32F, (int)ldb, sb,
                                        kc_ptr(a), CUDA_R_32F, (int)lda, sa, &be, kc_ptr(out), CUDA_R_32F, (int)ldo,
                                        so, (int)B, ct, CUBLAS_GEMM_DEFAULT);
    } else {
        st = cublasGemmStridedBatchedEx(h, tb, ta, (int)N, (int)M, (int)K, &alpha, kc_ptr(b), CUDA_R_64F, (int)ldb,
                                        sb, kc_ptr(a), CUDA_R_64F, (int)lda, sa, &beta, kc_ptr(out), CUDA_R_64F,
                                        (int)ldo, so, (int)B, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT);
    }
    if (st != CUBLAS_STATUS_SUCCESS)
        return kc_error("matmul: cuBLAS failed on [%lld,%lld,%lld] @ [%lld,%lld,%lld]: %s", (long long)B, (long long)M,
                        (long long)K, (long long)b->sizes[0], (long long)K, (long long)N, cublasGetStatusString(st));
    return 0;
}

int kc_gemm(em_tensor *out, const em_tensor *a, const em_tensor *b, double alpha, double beta)
{
    int dev = kc_device_of(out);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    if (out->dtype != EM_FLOAT32 && out->dtype != EM_FLOAT64)
        return kc_error("matmul: no CUDA GEMM for %s (float32 and float64 only)", kc_dtype_name(out->dtype));
    int64_t M = out->sizes[1], N = out->sizes[2], K = a->sizes[2];
    if (kc_numel(out) == 0) return 0;
    /* an empty sum: out = beta * out (cuBLAS scales C when k is 0) */
    if (K == 0 && beta == 0) return kc_fill(out, 0);
    if (K == 0 && beta == 1) return 0;
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || out->sizes[0] > INT32_MAX)
        return kc_error("matmul: dimensions over 2^31 are not supported by cuBLAS");
    cublasHandle_t h = handle_of(dev, s);
    if (!h) return -1;

    bool rm = true;
    int64_t ld = 1;
    scratch sa, sb, so;
    memset(&sa, 0, sizeof sa); memset(&sb, 0, sizeof sb); memset(&so, 0, sizeof so);
    const em_tensor *A = a, *Bm = b;
    em_tensor *O = out;
    int rc = 0;
    /* the batch stride must be a plain stride too: a batch dim folded into a
     * matrix dim (stride 0 apart from broadcasting is fine) */
    if (!blas_layout(M, K, a->strides[1], a->strides[2], &rm, &ld)) {
        rc = make_scratch(&sa, a, dev) || kc_cast(&sa.t, a);
        A = &sa.t;
    }
    if (rc == 0 && !blas_layout(K, N, b->strides[1], b->strides[2], &rm, &ld)) {
        rc = make_scratch(&sb, b, dev) || kc_cast(&sb.t, b);
        Bm = &sb.t;
    }
    bool out_copy = false;
    if (rc == 0 && (!blas_layout(M, N, out->strides[1], out->strides[2], &rm, &ld) || !rm)) {
        rc = make_scratch(&so, out, dev) || (beta != 0 && kc_cast(&so.t, out));
        O = &so.t;
        out_copy = true;
    }
    if (rc == 0) rc = out->dtype == EM_FLOAT32 ? run_gemm<float>(h, O, A, Bm, alpha, beta)
                                               : run_gemm<double>(h, O, A, Bm, alpha, beta);
    if (rc == 0 && out_copy) rc = kc_cast(out, O);
    drop_scratch(&sa, dev); drop_scratch(&sb, dev); drop_scratch(&so, dev);
    if (rc) return -1;
    return kc_launched("matmul", dev);
}
