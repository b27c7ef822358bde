/*
 * cublas.cc — the emulated device's cuBLAS (kernels/emu/): handles, their
 * stream and math mode, and the GEMMs (cublasGemmStridedBatchedEx,
 * cublasGemmEx, cublasSgemm, cublasDgemm), computed on the host in the
 * handle's stream order.
 *
 * Semantics are NVIDIA's (cuBLAS documentation), not ember's: column-major
 * storage, op(A) is m x k, op(B) is k x n, C is m x n; lda >= max(1, rows of
 * A as stored), likewise ldb and ldc. As in the reference BLAS, A and B are
 * not read when alpha == 0 or k == 0, and C is not read when beta == 0 (so
 * NaN there is overwritten, never propagated).
 *
 * Arithmetic: products accumulate in float for the 32F compute types
 * (CUBLAS_COMPUTE_32F_FAST_* included: TF32 and half "fast" modes are
 * computed in full float32 here, which the fast modes allow), in double for
 * 64F. Half and bfloat16 elements convert through the toolkit's host
 * functions in cuda_fp16.h / cuda_bf16.h, rounding to nearest on store.
 * Left out: complex and integer types, CUBLAS_COMPUTE_16F (half
 * accumulation) and the emulated BF16x9 / fixed-point compute types; they
 * answer CUBLAS_STATUS_NOT_SUPPORTED.
 */
#include "emu.h"

#include <cublas_v2.h>

#include <stdint.h>
#include <stdlib.h>

#include <vector>

/* The handle: what cuBLAS keeps per context that changes our results or
 * ordering. The real struct is opaque, so this is ours to define. */
struct cublasContext {
    cudaStream_t stream;
    cublasMath_t math;
};

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    cublasContext *h = (cublasContext *)calloc(1, sizeof *h);
    if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
    h->stream = NULL;
    h->math = CUBLAS_DEFAULT_MATH;
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
{
    return emu::set_stream(handle, streamId, CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_NOT_INITIALIZED);
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId)
{
    return emu::get_stream(handle, streamId, CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_NOT_INITIALIZED,
                           CUBLAS_STATUS_INVALID_VALUE);
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    /* one base mode, optionally with the reduced-precision-reduction flag */
    unsigned base = (unsigned)mode & ~(unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    switch (base) {
    case CUBLAS_DEFAULT_MATH:
    case CUBLAS_TENSOR_OP_MATH:
    case CUBLAS_PEDANTIC_MATH:
    case CUBLAS_TF32_TENSOR_OP_MATH:
    case CUBLAS_FP32_EMULATED_BF16X9_MATH:
    case CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH:
        handle->math = mode;
        return CUBLAS_STATUS_SUCCESS;
    default:
        return CUBLAS_STATUS_INVALID_VALUE;
    }
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->math;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "<unknown>";
}

const char *cublasGetStatusString(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "an error was detected when checking the current licensing";
    }
    return "<unknown>";
}

/* ---- GEMM ------------------------------------------------------------------------------------- */

/* One strided-batched GEMM, everything the queued work needs, by value. */
struct gemm_call {
    bool ta, tb; /* op is a transpose (T and C are the same for real types) */
    int64_t m, n, k, batch;
    const void *A, *B;
    void *C;
    cudaDataType at, bt, ct;
    int64_t lda, ldb, ldc;
    long long sa, sb, sc;
    double alpha, beta; /* exact copies of the float or double scalars */
};

/* C[b] = alpha op(A[b]) op(B[b]) + beta C[b], accumulating in Acc. */
template <typename Acc> static void run_gemm(const gemm_call &g)
{
    size_t ea = emu::type_size(g.at), eb = emu::type_size(g.bt), ec = emu::type_size(g.ct);
    bool product = g.alpha != 0 && g.k > 0;
    Acc alpha = (Acc)g.alpha, beta = (Acc)g.beta;
    std::vector<Acc> pa, pb;
    for (int64_t b = 0; b < g.batch; b++) {
        const void *A = emu::batch_at(g.A, g.sa, b, ea), *B = emu::batch_at(g.B, g.sb, b, eb);
        void *C = (void *)emu::batch_at(g.C, g.sc, b, ec);
        if (!emu::matrix_range(C, ec, g.m, g.n, g.ldc, "cublasGemmEx: matrix C")) return;
        if (product) {
            /* A is stored m x k (k x m transposed); B k x n (n x k) */
            if (!emu::matrix_range(A, ea, g.ta ? g.k : g.m, g.ta ? g.m : g.k, g.lda, "cublasGemmEx: matrix A") ||
                !emu::matrix_range(B, eb, g.tb ? g.n : g.k, g.tb ? g.k : g.n, g.ldb, "cublasGemmEx: matrix B"))
                return;
            emu::pack(pa, A, g.at, g.lda, g.ta, g.m, g.k);
            /* op(B)^T, n x k: the transpose of a transpose is the stored B */
            emu::pack(pb, B, g.bt, g.ldb, !g.tb, g.n, g.k);
        }
        for (int64_t j = 0; j < g.n; j++) {
            for (int64_t i = 0; i < g.m; i++) {
                Acc v = product ? alpha * emu::dot(&pa[(size_t)(i * g.k)], &pb[(size_t)(j * g.k)], g.k) : (Acc)0;
                int64_t ci = i + j * g.ldc;
                if (g.beta != 0) v += beta * (Acc)emu::load(C, g.ct, ci);
                emu::store(C, g.ct, ci, (double)v);
            }
        }
    }
}

static bool is_op(cublasOperation_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

static bool is_algo(cublasGemmAlgo_t algo)
{
    int a = (int)algo;
    return a == CUBLAS_GEMM_DEFAULT || (a >= CUBLAS_GEMM_ALGO0 && a <= CUBLAS_GEMM_ALGO23) ||
           (a >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && a <= CUBLAS_GEMM_ALGO15_TENSOR_OP) || a == CUBLAS_GEMM_AUTOTUNE;
}

/* Which (Atype, Btype, Ctype, computeType) the documentation's table for
 * cublasGemmEx lists and the emulator computes; *f64 says the scalars and
 * the accumulator are double. An unknown compute type is an invalid value,
 * a known one we do not emulate is not supported. */
static cublasStatus_t check_types(cudaDataType at, cudaDataType bt, cudaDataType ct, cublasComputeType_t compute,
                                  bool *f64)
{
    switch (compute) {
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
        *f64 = true;
        return at == CUDA_R_64F && bt == CUDA_R_64F && ct == CUDA_R_64F ? CUBLAS_STATUS_SUCCESS
                                                                         : CUBLAS_STATUS_NOT_SUPPORTED;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
        *f64 = false;
        return at == bt && emu::f32_gemm_types(at, ct) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
        /* computed in full float32: more exact than the GPU, never less */
        *f64 = false;
        return at == CUDA_R_32F && bt == CUDA_R_32F && ct == CUDA_R_32F ? CUBLAS_STATUS_SUCCESS
                                                                         : CUBLAS_STATUS_NOT_SUPPORTED;
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* The checks every GEMM entry point shares, in the order the documentation
 * lists the statuses, then the queued computation. */
static cublasStatus_t gemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                           int64_t n, int64_t k, const void *alpha, const void *A, cudaDataType Atype, int64_t lda,
                           long long strideA, const void *B, cudaDataType Btype, int64_t ldb, long long strideB,
                           const void *beta, void *C, cudaDataType Ctype, int64_t ldc, long long strideC,
                           int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || batchCount < 0 || !is_op(transa) || !is_op(transb) || !is_algo(algo))
        return CUBLAS_STATUS_INVALID_VALUE;
    bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
    int64_t m1 = m > 1 ? m : 1, n1 = n > 1 ? n : 1, k1 = k > 1 ? k : 1;
    if (lda < (ta ? k1 : m1) || ldb < (tb ? n1 : k1) || ldc < m1) return CUBLAS_STATUS_INVALID_VALUE;
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    bool f64 = false;
    cublasStatus_t st = check_types(Atype, Btype, Ctype, computeType, &f64);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if (m == 0 || n == 0 || batchCount == 0) return CUBLAS_STATUS_SUCCESS;

    gemm_call g;
    g.ta = ta;
    g.tb = tb;
    g.m = m;
    g.n = n;
    g.k = k;
    g.batch = batchCount;
    g.A = A;
    g.B = B;
    g.C = C;
    g.at = Atype;
    g.bt = Btype;
    g.ct = Ctype;
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    g.sa = strideA;
    g.sb = strideB;
    g.sc = strideC;
    /* host pointer mode: the scalars are read now, not when the work runs */
    g.alpha = f64 ? *(const double *)alpha : *(const float *)alpha;
    g.beta = f64 ? *(const double *)beta : *(const float *)beta;
    cudaError_t e;
    if (f64)
        e = emu::submit(handle->stream, "cublasGemmEx", [g]() { run_gemm<double>(g); });
    else
        e = emu::submit(handle->stream, "cublasGemmEx", [g]() { run_gemm<float>(g); });
    return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void *alpha, const void *A, cudaDataType Atype,
                                          int lda, long long int strideA, const void *B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void *beta, void *C, cudaDataType Ctype,
                                          int ldc, long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    return gemm(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C,
                Ctype, ldc, strideC, batchCount, computeType, algo);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    return gemm(handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C, Ctype, ldc, 0, 1,
                computeType, algo);
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                              const float *beta, float *C, int ldc)
{
    /* whatever the math mode (TF32 included), float32 is computed in full */
    return gemm(handle, transa, transb, m, n, k, alpha, A, CUDA_R_32F, lda, 0, B, CUDA_R_32F, ldb, 0, beta, C,
                CUDA_R_32F, ldc, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const double *alpha, const double *A, int lda, const double *B, int ldb,
                              const double *beta, double *C, int ldc)
{
    return gemm(handle, transa, transb, m, n, k, alpha, A, CUDA_R_64F, lda, 0, B, CUDA_R_64F, ldb, 0, beta, C,
                CUDA_R_64F, ldc, 0, 1, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT);
}
