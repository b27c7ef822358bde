/*
 * cublas_test.cc — the emulated cuBLAS and cuBLASLt (kernels/emu/cublas.cc,
 * cublaslt.cc) against naive loops written here in double, on NVIDIA's
 * documented semantics: column-major storage, op(A) m x k, op(B) k x n,
 * leading dimensions larger than the rows, strided batches (stride 0
 * included), alpha/beta with the BLAS rule that C is not read when beta is
 * 0, half and bfloat16 storage with float32 compute, each cuBLASLt epilogue
 * (tanh GELU, its aux output and derivative, bias gradients) and the
 * documented statuses for bad arguments and a short workspace.
 *
 * Device memory is reached only through cudaMalloc / cudaMemcpy, as on a GPU.
 */
/* first: the emulator's cuda_runtime.h must precede the toolkit's headers */
#include <cuda_runtime.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <vector>

#include "../c/check.h"

/* ---- helpers ---------------------------------------------------------------------------------- */

static uint64_t rng = 0x853c49e6748fea9bull;

/* uniform in [-1, 1) */
static double urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / (double)(1ull << 52) - 1.0;
}

static size_t tsize(cudaDataType t)
{
    return t == CUDA_R_64F ? 8 : t == CUDA_R_32F ? 4 : 2;
}

/* Host values <-> the bytes of a device array of type t. */
static std::vector<unsigned char> encode(const std::vector<double> &v, cudaDataType t)
{
    std::vector<unsigned char> out(v.size() * tsize(t));
    for (size_t i = 0; i < v.size(); i++) {
        unsigned char *p = &out[i * tsize(t)];
        if (t == CUDA_R_64F) {
            memcpy(p, &v[i], 8);
        } else if (t == CUDA_R_32F) {
            float f = (float)v[i];
            memcpy(p, &f, 4);
        } else if (t == CUDA_R_16F) {
            __half h = __float2half_rn((float)v[i]);
            memcpy(p, &h, 2);
        } else {
            __nv_bfloat16 h = __float2bfloat16_rn((float)v[i]);
            memcpy(p, &h, 2);
        }
    }
    return out;
}

static std::vector<double> decode(const std::vector<unsigned char> &b, cudaDataType t)
{
    std::vector<double> v(b.size() / tsize(t));
    for (size_t i = 0; i < v.size(); i++) {
        const unsigned char *p = &b[i * tsize(t)];
        if (t == CUDA_R_64F) {
            memcpy(&v[i], p, 8);
        } else if (t == CUDA_R_32F) {
            float f;
            memcpy(&f, p, 4);
            v[i] = f;
        } else if (t == CUDA_R_16F) {
            __half h;
            memcpy(&h, p, 2);
            v[i] = __half2float(h);
        } else {
            __nv_bfloat16 h;
            memcpy(&h, p, 2);
            v[i] = __bfloat162float(h);
        }
    }
    return v;
}

/* v rounded to type t, as the device will hold it */
static std::vector<double> rounded(const std::vector<double> &v, cudaDataType t) { return decode(encode(v, t), t); }

static std::vector<double> random_values(size_t n)
{
    std::vector<double> v(n);
    for (size_t i = 0; i < n; i++) v[i] = urand();
    return v;
}

/* A device copy of v as type t (NULL for an empty v). */
static void *upload(const std::vector<double> &v, cudaDataType t)
{
    std::vector<unsigned char> b = encode(v, t);
    void *p = NULL;
    if (cudaMalloc(&p, b.size() ? b.size() : 1) != cudaSuccess) return NULL;
    if (b.size()) cudaMemcpy(p, b.data(), b.size(), cudaMemcpyHostToDevice);
    return p;
}

static std::vector<double> download(const void *p, size_t n, cudaDataType t)
{
    std::vector<unsigned char> b(n * tsize(t));
    if (n) cudaMemcpy(b.data(), p, b.size(), cudaMemcpyDeviceToHost);
    return decode(b, t);
}

/* op(X)(i, l) of a column-major X with leading dimension ld */
static double op_at(const std::vector<double> &x, size_t base, bool trans, int64_t ld, int64_t i, int64_t l)
{
    return trans ? x[base + (size_t)(l + i * ld)] : x[base + (size_t)(i + l * ld)];
}

/* Counts elements where |got - want| > tol (1 + |want|), printing the
 * first; NaN anywhere counts. */
static int mismatches(const char *what, const std::vector<double> &got, const std::vector<double> &want,
                      double tol)
{
    int bad = 0;
    for (size_t i = 0; i < want.size(); i++) {
        double d = fabs(got[i] - want[i]);
        if (!(d <= tol * (1 + fabs(want[i])))) {
            if (!bad) printf("#   %s[%zu] = %.9g, expected %.9g\n", what, i, got[i], want[i]);
            bad++;
        }
    }
    return bad;
}

/* Same bits (for the parts of C that must not be touched) */
static int changed(const std::vector<unsigned char> &a, const std::vector<unsigned char> &b)
{
    return a.size() != b.size() || memcmp(a.data(), b.data(), a.size()) != 0;
}

/* ---- cuBLAS ----------------------------------------------------------------------------------- */

static void test_handle(void)
{
    cublasHandle_t h = NULL;
    CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    cudaStream_t s = (cudaStream_t)1, mine = NULL;
    CHECK(cublasGetStream(h, &s) == CUBLAS_STATUS_SUCCESS && s == NULL);
    CHECK(cudaStreamCreate(&mine) == cudaSuccess);
    CHECK(cublasSetStream(h, mine) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasGetStream(h, &s) == CUBLAS_STATUS_SUCCESS && s == mine);
    CHECK(cublasGetStream(h, NULL) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasSetStream(h, NULL) == CUBLAS_STATUS_SUCCESS);
    cudaStreamDestroy(mine);

    cublasMath_t mode = CUBLAS_PEDANTIC_MATH;
    CHECK(cublasGetMathMode(h, &mode) == CUBLAS_STATUS_SUCCESS && mode == CUBLAS_DEFAULT_MATH);
    CHECK(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasGetMathMode(h, &mode) == CUBLAS_STATUS_SUCCESS && mode == CUBLAS_TF32_TENSOR_OP_MATH);
    CHECK(cublasSetMathMode(h, (cublasMath_t)12345) == CUBLAS_STATUS_INVALID_VALUE);

    CHECK(strcmp(cublasGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS") == 0);
    CHECK(strcmp(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED") == 0);
    CHECK(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE) != NULL);
    CHECK(strcmp(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE), cublasGetStatusString(CUBLAS_STATUS_SUCCESS)));

    CHECK(cublasSetStream(NULL, NULL) == CUBLAS_STATUS_NOT_INITIALIZED);
    CHECK(cublasGetMathMode(NULL, &mode) == CUBLAS_STATUS_NOT_INITIALIZED);
    CHECK(cublasCreate(NULL) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
}

/* One strided-batched GEMM case for cublasGemmStridedBatchedEx. */
struct gcase {
    cublasOperation_t ta, tb;
    int m, n, k;
    int pad; /* added to every leading dimension's minimum */
    cudaDataType ab, c;
    cublasComputeType_t compute;
    double alpha, beta;
    int batch;
    bool broadcast_a; /* strideA = 0 */
    bool nan_c;       /* C starts as NaN (only sensible with beta = 0) */
    bool nan_a;       /* A holds NaN (only sensible with alpha = 0) */
    double tol;
};

/* Runs c and compares against the loop here; C's padding rows and the gaps
 * between batches must come back untouched. */
static void run_gcase(const gcase &c)
{
    cublasHandle_t h = NULL;
    CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    bool ta = c.ta != CUBLAS_OP_N, tb = c.tb != CUBLAS_OP_N;
    int64_t ar = ta ? c.k : c.m, acols = ta ? c.m : c.k, br = tb ? c.n : c.k, bcols = tb ? c.k : c.n;
    int64_t lda = (ar > 1 ? ar : 1) + c.pad, ldb = (br > 1 ? br : 1) + c.pad, ldc = (c.m > 1 ? c.m : 1) + c.pad;
    long long sa = c.broadcast_a ? 0 : lda * acols + 3, sb = ldb * bcols + 5, sc = ldc * c.n + 2;
    size_t na = (size_t)(sa * (c.batch - 1) + lda * acols), nb = (size_t)(sb * (c.batch - 1) + ldb * bcols);
    size_t nc = (size_t)(sc * (c.batch - 1) + ldc * c.n);
    std::vector<double> A = random_values(na), B = random_values(nb), C = random_values(nc);
    if (c.nan_c)
        for (double &x : C) x = NAN;
    if (c.nan_a)
        for (double &x : A) x = NAN;
    A = rounded(A, c.ab);
    B = rounded(B, c.ab);
    C = rounded(C, c.c);
    void *dA = upload(A, c.ab), *dB = upload(B, c.ab), *dC = upload(C, c.c);
    std::vector<unsigned char> before = encode(C, c.c);

    float fa = (float)c.alpha, fb = (float)c.beta;
    bool f64 = c.compute == CUBLAS_COMPUTE_64F;
    const void *pa = f64 ? (const void *)&c.alpha : (const void *)&fa;
    const void *pb = f64 ? (const void *)&c.beta : (const void *)&fb;
    CHECK(cublasGemmStridedBatchedEx(h, c.ta, c.tb, c.m, c.n, c.k, pa, dA, c.ab, (int)lda, sa, dB, c.ab, (int)ldb, sb,
                                     pb, dC, c.c, (int)ldc, sc, c.batch, c.compute,
                                     CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<double> got = download(dC, nc, c.c);
    std::vector<unsigned char> after = encode(got, c.c);

    /* expected: the product where C is, the old bits everywhere else */
    std::vector<double> want_in, got_in;
    std::vector<unsigned char> outside_before, outside_after;
    std::vector<bool> inside(nc, false);
    for (int b = 0; b < c.batch; b++) {
        for (int j = 0; j < c.n; j++) {
            for (int i = 0; i < c.m; i++) {
                double s = 0;
                if (c.alpha != 0)
                    for (int l = 0; l < c.k; l++)
                        s += op_at(A, (size_t)(sa * b), ta, lda, i, l) * op_at(B, (size_t)(sb * b), !tb, ldb, j, l);
                size_t ci = (size_t)(sc * b + i + j * ldc);
                double v = c.alpha * s;
                if (c.beta != 0) v += c.beta * C[ci];
                want_in.push_back(v);
                got_in.push_back(got[ci]);
                inside[ci] = true;
            }
        }
    }
    size_t es = tsize(c.c);
    for (size_t i = 0; i < nc; i++)
        if (!inside[i]) {
            outside_before.insert(outside_before.end(), &before[i * es], &before[i * es] + es);
            outside_after.insert(outside_after.end(), &after[i * es], &after[i * es] + es);
        }
    CHECK(mismatches("C", got_in, want_in, c.tol) == 0);
    CHECK(!changed(outside_before, outside_after));
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    cublasDestroy(h);
}

static gcase base_case(void)
{
    gcase c;
    memset(&c, 0, sizeof c);
    c.ta = CUBLAS_OP_N;
    c.tb = CUBLAS_OP_N;
    c.m = 5;
    c.n = 4;
    c.k = 7;
    c.pad = 3;
    c.ab = CUDA_R_32F;
    c.c = CUDA_R_32F;
    c.compute = CUBLAS_COMPUTE_32F;
    c.alpha = 1.5;
    c.beta = -0.75;
    c.batch = 1;
    c.tol = 1e-5;
    return c;
}

static void test_gemm_transposes(void)
{
    cublasOperation_t ops[3] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
    for (int x = 0; x < 3; x++)
        for (int y = 0; y < 3; y++) {
            gcase c = base_case();
            c.ta = ops[x];
            c.tb = ops[y];
            run_gcase(c);
        }
}

static void test_gemm_beta_zero_nan(void)
{
    /* BLAS: with beta == 0, C is not read, so NaN in it never shows */
    gcase c = base_case();
    c.beta = 0;
    c.nan_c = true;
    run_gcase(c);
    c.ta = CUBLAS_OP_T;
    c.compute = CUBLAS_COMPUTE_64F;
    c.ab = c.c = CUDA_R_64F;
    c.tol = 1e-12;
    run_gcase(c);
}

static void test_gemm_alpha_zero(void)
{
    /* BLAS: with alpha == 0, A and B are not read: C = beta C */
    gcase c = base_case();
    c.alpha = 0;
    c.beta = 2;
    c.nan_a = true;
    run_gcase(c);
    /* k == 0: the empty sum, C = beta C */
    c = base_case();
    c.k = 0;
    c.beta = 0.5;
    run_gcase(c);
    c.beta = 0; /* and zeros */
    run_gcase(c);
}

static void test_gemm_f64(void)
{
    gcase c = base_case();
    c.ab = c.c = CUDA_R_64F;
    c.compute = CUBLAS_COMPUTE_64F;
    c.tol = 1e-12;
    c.ta = CUBLAS_OP_T;
    run_gcase(c);
    c.tb = CUBLAS_OP_T;
    c.batch = 3;
    run_gcase(c);
}

static void test_gemm_batched(void)
{
    gcase c = base_case();
    c.batch = 4;
    run_gcase(c);
    c.broadcast_a = true; /* strideA 0: every product reads the same A */
    c.tb = CUBLAS_OP_T;
    run_gcase(c);
    c.m = 1; /* a row vector times a batch of matrices */
    c.ta = CUBLAS_OP_T;
    run_gcase(c);
}

static void test_gemm_half_types(void)
{
    gcase c = base_case();
    c.k = 16;
    c.ab = CUDA_R_16F;
    c.c = CUDA_R_16F;
    c.tol = 2e-3; /* one rounding to half of a float-accumulated sum */
    run_gcase(c);
    c.c = CUDA_R_32F;
    c.tol = 1e-5;
    c.ta = CUBLAS_OP_T;
    run_gcase(c);
    c.ab = CUDA_R_16BF;
    c.c = CUDA_R_16BF;
    c.tol = 1e-2; /* bfloat16 keeps 8 bits */
    c.batch = 2;
    run_gcase(c);
    c.c = CUDA_R_32F;
    c.tol = 1e-5;
    c.beta = 0;
    c.nan_c = true;
    run_gcase(c);
}

static void test_gemm_fast_compute(void)
{
    /* TF32 and the other fast modes are computed in full float32 */
    gcase c = base_case();
    c.compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    run_gcase(c);
    c.compute = CUBLAS_COMPUTE_32F_PEDANTIC;
    run_gcase(c);
}

static void test_gemm_legacy(void)
{
    cublasHandle_t h = NULL;
    CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    /* C = A^T B, A 3x2 stored (lda 4), B 3x2 (ldb 3), C 2x2 (ldc 3) */
    std::vector<double> A = {1, 2, 3, 0, 4, 5, 6, 0}, B = {1, 0, -1, 2, 1, 0}, C = {10, 20, 99, 30, 40, 99};
    float fa = 2, fb = 1;
    void *dA = upload(A, CUDA_R_32F), *dB = upload(B, CUDA_R_32F), *dC = upload(C, CUDA_R_32F);
    CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 3, &fa, (const float *)dA, 4, (const float *)dB, 3, &fb,
                      (float *)dC, 3) == CUBLAS_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<double> got = download(dC, 6, CUDA_R_32F);
    /* A^T B = [[1-3, 2+2], [4-6, 8+5]] = [[-2, 4], [-2, 13]] */
    std::vector<double> want = {10 - 4, 20 - 4, 99, 30 + 8, 40 + 26, 99};
    CHECK(mismatches("C", got, want, 0) == 0);

    double da = 1, db = 0;
    void *eA = upload(A, CUDA_R_64F), *eB = upload(B, CUDA_R_64F), *eC = upload(C, CUDA_R_64F);
    CHECK(cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 3, &da, (const double *)eA, 4, (const double *)eB, 3, &db,
                      (double *)eC, 3) == CUBLAS_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    got = download(eC, 6, CUDA_R_64F);
    want = {-2, -2, 99, 4, 13, 99};
    CHECK(mismatches("C", got, want, 0) == 0);

    /* cublasGemmEx on a stream of our own */
    cudaStream_t s = NULL;
    CHECK(cudaStreamCreate(&s) == cudaSuccess);
    CHECK(cublasSetStream(h, s) == CUBLAS_STATUS_SUCCESS);
    fb = 0;
    CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 3, &fa, dA, CUDA_R_32F, 4, dB, CUDA_R_32F, 3, &fb, dC,
                       CUDA_R_32F, 3, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    got = download(dC, 6, CUDA_R_32F);
    want = {-4, -4, 99, 8, 26, 99};
    CHECK(mismatches("C", got, want, 0) == 0);
    cudaStreamDestroy(s);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(eA); cudaFree(eB); cudaFree(eC);
    cublasDestroy(h);
}

static void test_gemm_bad_arguments(void)
{
    cublasHandle_t h = NULL;
    CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    std::vector<double> z(64, 1.0);
    void *d = upload(z, CUDA_R_32F);
    std::vector<unsigned char> before = encode(z, CUDA_R_32F);
    float one = 1, zero = 0;
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    const cudaDataType F = CUDA_R_32F;
    const cublasComputeType_t C32 = CUBLAS_COMPUTE_32F;
    const cublasGemmAlgo_t DEF = CUBLAS_GEMM_DEFAULT;
    const cublasStatus_t INV = CUBLAS_STATUS_INVALID_VALUE, NS = CUBLAS_STATUS_NOT_SUPPORTED;
    /* m x n x k = 3 x 2 x 4 is fine with lda 3, ldb 4, ldc 3 */
    CHECK(cublasGemmEx(h, N, N, 3, 2, 4, &one, d, F, 3, d, F, 4, &zero, d, F, 3, C32, DEF) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasGemmEx(NULL, N, N, 3, 2, 4, &one, d, F, 3, d, F, 4, &zero, d, F, 3, C32, DEF) ==
          CUBLAS_STATUS_NOT_INITIALIZED);
    CHECK(cublasGemmEx(h, N, N, -1, 2, 4, &one, d, F, 3, d, F, 4, &zero, d, F, 3, C32, DEF) == INV);
    CHECK(cublasGemmEx(h, N, N, 3, -2, 4, &one, d, F, 3, d, F, 4, &zero, d, F, 3, C32, DEF) == INV);
    CHECK(cublasGemmEx(h, N, N, 3, 2, -4, &one, d, F, 3, d, F, 4, &zero, d, F, 3, C32, DEF) == INV);
    /* lda >= max(1, m) for N, max(1, k) for T; ldb >= k for N, n for T; ldc >= m */
    CHECK(cublasGemmEx(h, N, N, 3, 2, 4, &one, d, F, 2, d, F, 4, &zero, d, F, 3, C32, DEF) == INV);
    CHECK(cublasGemmEx(h, T, N, 3, 2, 4, &one, d, F, 3, d, F, 4, &zero, d, F, 3, C32, DEF) == INV);
    CHECK(cublasGemmEx(h, T, N, 3, 2, 4, &one, d, F, 4, d, F, 4, &zero, d, F, 3, C32, DEF) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasGemmEx(h, N, N, 3, 2, 4, &one, d, F, 3, d, F, 3, &zero, d, F, 3, C32, DEF) == INV);
    CHECK(cublasGemmEx(h, N, T, 3, 2, 4, &one, d, F, 3, d, F, 1, &zero, d, F, 3, C32, DEF) == INV);
    CHECK(cublasGemmEx(h, N, T, 3, 2, 4, &one, d, F, 3, d, F, 2, &zero, d, F, 3, C32, DEF) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasGemmEx(h, N, N, 3, 2, 4, &one, d, F, 3, d, F, 4, &zero, d, F, 2, C32, DEF) == INV);
    CHECK(cublasGemmEx(h, N, N, 0, 2, 4, &one, d, F, 0, d, F, 4, &zero, d, F, 0, C32, DEF) == INV); /* ld >= 1 */
    CHECK(cublasGemmEx(h, (cublasOperation_t)7, N, 3, 2, 4, &one, d, F, 4, d, F, 4, &zero, d, F, 3, C32, DEF) == INV);
    CHECK(cublasGemmEx(h, N, N, 3, 2, 4, NULL, d, F, 3, d, F, 4, &zero, d, F, 3, C32, DEF) == INV);
    CHECK(cublasGemmEx(h, N, N, 3, 2, 4, &one, d, F, 3, d, F, 4, NULL, d, F, 3, C32, DEF) == INV);
    CHECK(cublasGemmEx(h, N, N, 3, 2, 4, &one, d, F, 3, d, F, 4, &zero, d, F, 3, C32, (cublasGemmAlgo_t)55) == INV);
    CHECK(cublasGemmStridedBatchedEx(h, N, N, 3, 2, 4, &one, d, F, 3, 0, d, F, 4, 0, &zero, d, F, 3, 0, -1, C32,
                                     DEF) == INV);
    /* type combinations outside the documented table */
    CHECK(cublasGemmEx(h, N, N, 3, 2, 4, &one, d, CUDA_R_16F, 3, d, F, 4, &zero, d, F, 3, C32, DEF) == NS);
    CHECK(cublasGemmEx(h, N, N, 3, 2, 4, &one, d, F, 3, d, F, 4, &zero, d, CUDA_R_16F, 3, C32, DEF) == NS);
    CHECK(cublasGemmEx(h, N, N, 3, 2, 4, &one, d, F, 3, d, F, 4, &zero, d, F, 3, CUBLAS_COMPUTE_64F, DEF) == NS);
    CHECK(cublasGemmEx(h, N, N, 3, 2, 4, &one, d, CUDA_R_16F, 3, d, CUDA_R_16F, 4, &zero, d, CUDA_R_16F, 3,
                       CUBLAS_COMPUTE_32F_FAST_TF32, DEF) == NS);
    CHECK(cublasGemmEx(h, N, N, 3, 2, 4, &one, d, F, 3, d, F, 4, &zero, d, F, 3, (cublasComputeType_t)1234, DEF) ==
          INV);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    /* m == 0 or a zero batch: nothing to do, nothing touched; the two
     * successful calls above wrote zeros (beta 0, alpha 1 times ones = 4) */
    z.assign(64, 1.0);
    cudaMemcpy(d, encode(z, F).data(), 64 * 4, cudaMemcpyHostToDevice);
    CHECK(cublasGemmEx(h, N, N, 0, 2, 4, &one, d, F, 1, d, F, 4, &zero, d, F, 1, C32, DEF) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasGemmStridedBatchedEx(h, N, N, 3, 2, 4, &one, d, F, 3, 0, d, F, 4, 0, &zero, d, F, 3, 0, 0, C32, DEF) ==
          CUBLAS_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<double> got = download(d, 64, F);
    CHECK(!changed(encode(got, F), before));
    cudaFree(d);
    cublasDestroy(h);
}

/* ---- cuBLASLt --------------------------------------------------------------------------------- */

/* The tanh GELU as cuBLASLt documents it, and its derivative by central
 * difference: written apart from the emulator's closed form on purpose. */
static double gelu_ref(double x)
{
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

static double gelu_grad_ref(double x)
{
    double h = 1e-5;
    return (gelu_ref(x + h) - gelu_ref(x - h)) / (2 * h);
}

struct lcase {
    cublasOperation_t ta, tb;
    int m, n, k;
    int pad;
    cudaDataType ab, cd;
    cublasComputeType_t compute;
    cudaDataType scale;
    cublasLtEpilogue_t epi;
    int batch;
    double alpha, beta;
    bool in_place; /* C is D */
    bool nan_c;
    int aux_ld;    /* 0: the next multiple of 8 above m */
    double tol;
};

static lcase lt_base(void)
{
    lcase c;
    memset(&c, 0, sizeof c);
    c.ta = CUBLAS_OP_T;
    c.tb = CUBLAS_OP_N;
    c.m = 6;
    c.n = 5;
    c.k = 9;
    c.pad = 2;
    c.ab = c.cd = CUDA_R_32F;
    c.compute = CUBLAS_COMPUTE_32F;
    c.scale = CUDA_R_32F;
    c.epi = CUBLASLT_EPILOGUE_DEFAULT;
    c.batch = 1;
    c.alpha = 1.25;
    c.beta = 0.5;
    c.tol = 1e-5;
    return c;
}

static cublasLtMatrixLayout_t lt_layout(cudaDataType t, int64_t rows, int64_t cols, int64_t ld, int batch,
                                        int64_t stride)
{
    cublasLtMatrixLayout_t l = NULL;
    CHECK(cublasLtMatrixLayoutCreate(&l, t, (uint64_t)rows, (uint64_t)cols, ld) == CUBLAS_STATUS_SUCCESS);
    if (batch != 1) {
        int32_t b = batch;
        CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b) ==
              CUBLAS_STATUS_SUCCESS);
        CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                               sizeof stride) == CUBLAS_STATUS_SUCCESS);
    }
    return l;
}

static bool uses_bias(cublasLtEpilogue_t e)
{
    return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
           e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}

static bool makes_bias_grad(cublasLtEpilogue_t e)
{
    return e == CUBLASLT_EPILOGUE_DGELU_BGRAD || e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB;
}

static bool uses_aux(cublasLtEpilogue_t e)
{
    return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU ||
           e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
}

/* Runs c through the heuristic and cublasLtMatmul and checks D, the aux
 * output and the bias gradient against the loops here. */
static void run_lcase(const lcase &c)
{
    cublasLtHandle_t h = NULL;
    CHECK(cublasLtCreate(&h) == CUBLAS_STATUS_SUCCESS);
    bool ta = c.ta != CUBLAS_OP_N, tb = c.tb != CUBLAS_OP_N;
    bool f64 = c.scale == CUDA_R_64F;
    int64_t ar = ta ? c.k : c.m, acols = ta ? c.m : c.k, br = tb ? c.n : c.k, bcols = tb ? c.k : c.n;
    int64_t lda = ar + c.pad, ldb = br + c.pad, ldd = c.m + c.pad, ldc = c.in_place ? ldd : c.m + 2 * c.pad + 1;
    int64_t sa = lda * acols + 1, sb = ldb * bcols, sd = ldd * c.n + 3, sc = c.in_place ? sd : ldc * c.n;
    int64_t aux_ld = c.aux_ld ? c.aux_ld : (c.m + 7) / 8 * 8, saux = aux_ld * c.n;
    int64_t nbias = c.epi == CUBLASLT_EPILOGUE_BGRADB ? c.n : c.m;
    size_t na = (size_t)(sa * (c.batch - 1) + lda * acols), nb = (size_t)(sb * (c.batch - 1) + ldb * bcols);
    size_t nc = (size_t)(sc * (c.batch - 1) + ldc * c.n), nd = (size_t)(sd * (c.batch - 1) + ldd * c.n);
    size_t naux = (size_t)(saux * c.batch), nbv = (size_t)(nbias * c.batch);

    std::vector<double> A = rounded(random_values(na), c.ab), B = rounded(random_values(nb), c.ab);
    std::vector<double> C = rounded(random_values(nc), c.cd), D = rounded(random_values(nd), c.cd);
    std::vector<double> bias = rounded(random_values(nbv), c.cd);
    /* DGELU reads the GELU inputs: spread them over [-3, 3] */
    std::vector<double> aux = random_values(naux);
    for (double &x : aux) x *= 3;
    aux = rounded(aux, c.cd);
    if (c.nan_c)
        for (double &x : C) x = NAN;
    if (c.in_place) C = D;
    void *dA = upload(A, c.ab), *dB = upload(B, c.ab), *dD = upload(D, c.cd);
    void *dC = c.in_place ? dD : upload(C, c.cd);
    void *dbias = upload(bias, c.cd), *daux = upload(aux, c.cd);

    cublasLtMatmulDesc_t desc = NULL;
    CHECK(cublasLtMatmulDescCreate(&desc, c.compute, c.scale) == CUBLAS_STATUS_SUCCESS);
    int32_t ota = c.ta, otb = c.tb;
    uint32_t epi = c.epi;
    CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ota, sizeof ota) == 0);
    CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &otb, sizeof otb) == 0);
    CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) == 0);
    if (uses_bias(c.epi) || makes_bias_grad(c.epi)) {
        int64_t bstride = c.batch > 1 ? nbias : 0;
        CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias) == 0);
        CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bstride,
                                             sizeof bstride) == 0);
    }
    if (uses_aux(c.epi)) {
        CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &daux, sizeof daux) ==
              0);
        CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld) == 0);
        CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &saux,
                                             sizeof saux) == 0);
    }
    cublasLtMatrixLayout_t la = lt_layout(c.ab, ar, acols, lda, c.batch, sa);
    cublasLtMatrixLayout_t lb = lt_layout(c.ab, br, bcols, ldb, c.batch, sb);
    cublasLtMatrixLayout_t lc = lt_layout(c.cd, c.m, c.n, ldc, c.batch, sc);
    cublasLtMatrixLayout_t ld = lt_layout(c.cd, c.m, c.n, ldd, c.batch, sd);

    cublasLtMatmulPreference_t pref = NULL;
    CHECK(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
    uint64_t maxws = 32u << 20;
    CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxws,
                                               sizeof maxws) == 0);
    cublasLtMatmulHeuristicResult_t r;
    int found = 0;
    CHECK(cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, ld, pref, 1, &r, &found) == CUBLAS_STATUS_SUCCESS);
    CHECK(found == 1 && r.state == CUBLAS_STATUS_SUCCESS && r.workspaceSize <= maxws);
    void *ws = NULL;
    if (found == 1 && r.workspaceSize) cudaMalloc(&ws, r.workspaceSize);
    float fa = (float)c.alpha, fb = (float)c.beta;
    const void *pa = f64 ? (const void *)&c.alpha : (const void *)&fa;
    const void *pb = f64 ? (const void *)&c.beta : (const void *)&fb;
    if (found == 1) {
        CHECK(cublasLtMatmul(h, desc, pa, dA, la, dB, lb, pb, dC, lc, dD, ld, &r.algo, ws, r.workspaceSize, NULL) ==
              CUBLAS_STATUS_SUCCESS);
        CHECK(cudaDeviceSynchronize() == cudaSuccess);
    }
    std::vector<double> gotD = download(dD, nd, c.cd), gotaux = download(daux, naux, c.cd);
    std::vector<double> gotbias = download(dbias, nbv, c.cd);

    /* expected, from the documented formulas */
    std::vector<double> wantD = D, wantaux = aux, wantbias = bias;
    bool gelu = c.epi == CUBLASLT_EPILOGUE_GELU || c.epi == CUBLASLT_EPILOGUE_GELU_AUX ||
                c.epi == CUBLASLT_EPILOGUE_GELU_BIAS || c.epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    bool relu = c.epi == CUBLASLT_EPILOGUE_RELU || c.epi == CUBLASLT_EPILOGUE_RELU_BIAS;
    bool aux_out = c.epi == CUBLASLT_EPILOGUE_GELU_AUX || c.epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    bool dgelu = c.epi == CUBLASLT_EPILOGUE_DGELU || c.epi == CUBLASLT_EPILOGUE_DGELU_BGRAD;
    for (int b = 0; b < c.batch; b++) {
        std::vector<double> grad((size_t)nbias, 0.0);
        for (int j = 0; j < c.n; j++) {
            for (int i = 0; i < c.m; i++) {
                double s = 0;
                for (int l = 0; l < c.k; l++)
                    s += op_at(A, (size_t)(sa * b), ta, lda, i, l) * op_at(B, (size_t)(sb * b), !tb, ldb, j, l);
                double v = c.alpha * s;
                if (c.beta != 0) v += c.beta * C[(size_t)(sc * b + i + j * ldc)];
                if (uses_bias(c.epi)) v += bias[(size_t)(nbias * b + i)];
                size_t ai = (size_t)(saux * b + i + j * aux_ld);
                if (aux_out) wantaux[ai] = v;
                if (relu) v = v > 0 ? v : 0;
                if (gelu) v = gelu_ref(v);
                if (dgelu) v *= gelu_grad_ref(aux[ai]);
                if (c.epi == CUBLASLT_EPILOGUE_DGELU_BGRAD) grad[(size_t)i] += v;
                wantD[(size_t)(sd * b + i + j * ldd)] = v;
            }
        }
        if (c.epi == CUBLASLT_EPILOGUE_BGRADA)
            for (int i = 0; i < c.m; i++)
                for (int l = 0; l < c.k; l++) grad[(size_t)i] += op_at(A, (size_t)(sa * b), ta, lda, i, l);
        if (c.epi == CUBLASLT_EPILOGUE_BGRADB)
            for (int j = 0; j < c.n; j++)
                for (int l = 0; l < c.k; l++) grad[(size_t)j] += op_at(B, (size_t)(sb * b), !tb, ldb, j, l);
        if (makes_bias_grad(c.epi))
            for (int64_t i = 0; i < nbias; i++) wantbias[(size_t)(nbias * b + i)] = grad[(size_t)i];
    }
    /* everything not written keeps its old value exactly (tolerance applies
     * to the written values only: the others are equal anyway) */
    CHECK(mismatches("D", gotD, wantD, c.tol) == 0);
    CHECK(mismatches("aux", gotaux, wantaux, c.tol) == 0);
    CHECK(mismatches("bias", gotbias, wantbias, c.tol) == 0);

    if (ws) cudaFree(ws);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(desc);
    cudaFree(dA); cudaFree(dB); cudaFree(dD); cudaFree(dbias); cudaFree(daux);
    if (!c.in_place) cudaFree(dC);
    cublasLtDestroy(h);
}

static void test_lt_default(void)
{
    cublasOperation_t ops[2] = {CUBLAS_OP_N, CUBLAS_OP_T};
    for (int x = 0; x < 2; x++)
        for (int y = 0; y < 2; y++) {
            lcase c = lt_base();
            c.ta = ops[x];
            c.tb = ops[y];
            run_lcase(c);
        }
    lcase c = lt_base();
    c.batch = 3;
    run_lcase(c);
    c.in_place = true;
    run_lcase(c);
    c.in_place = false;
    c.beta = 0;
    c.nan_c = true; /* C is not read when beta is 0 */
    run_lcase(c);
    c = lt_base();
    c.ab = c.cd = CUDA_R_64F;
    c.compute = CUBLAS_COMPUTE_64F;
    c.scale = CUDA_R_64F;
    c.tol = 1e-12;
    run_lcase(c);
    c = lt_base();
    c.compute = CUBLAS_COMPUTE_32F_FAST_TF32; /* computed in full float32 */
    run_lcase(c);
}

static void test_lt_epilogues(void)
{
    cublasLtEpilogue_t all[] = {CUBLASLT_EPILOGUE_RELU,      CUBLASLT_EPILOGUE_BIAS,
                                CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_GELU,
                                CUBLASLT_EPILOGUE_GELU_AUX,  CUBLASLT_EPILOGUE_GELU_BIAS,
                                CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU,
                                CUBLASLT_EPILOGUE_DGELU_BGRAD, CUBLASLT_EPILOGUE_BGRADA,
                                CUBLASLT_EPILOGUE_BGRADB};
    for (size_t e = 0; e < sizeof all / sizeof all[0]; e++) {
        lcase c = lt_base();
        c.epi = all[e];
        c.tol = 2e-5; /* the finite-difference derivative and float sums */
        run_lcase(c);
        c.batch = 2; /* per-batch bias and aux through their batch strides */
        c.ta = CUBLAS_OP_N;
        c.tb = CUBLAS_OP_T;
        c.aux_ld = 16;
        run_lcase(c);
        c = lt_base(); /* and in double */
        c.epi = all[e];
        c.ab = c.cd = CUDA_R_64F;
        c.compute = CUBLAS_COMPUTE_64F;
        c.scale = CUDA_R_64F;
        c.tol = 1e-9;
        run_lcase(c);
    }
}

static void test_lt_half_types(void)
{
    cublasLtEpilogue_t some[] = {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
                                 CUBLASLT_EPILOGUE_DGELU_BGRAD, CUBLASLT_EPILOGUE_BGRADB};
    for (size_t e = 0; e < 4; e++) {
        lcase c = lt_base();
        c.epi = some[e];
        c.ab = c.cd = CUDA_R_16F;
        c.tol = 3e-3; /* one rounding to half (two for GELU: aux and D) */
        run_lcase(c);
        c.ab = c.cd = CUDA_R_16BF;
        c.tol = 2e-2;
        run_lcase(c);
        c.cd = CUDA_R_32F; /* bfloat16 inputs, float32 output */
        c.tol = 2e-5;
        run_lcase(c);
    }
}

static void test_lt_descriptors(void)
{
    cublasLtMatmulDesc_t d = NULL;
    CHECK(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
    int32_t v = -1;
    size_t written = 0;
    /* documented defaults, sizes and the size-query form */
    CHECK(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &v, sizeof v, &written) == 0 &&
          v == CUBLAS_OP_N && written == sizeof v);
    CHECK(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &v, sizeof v, NULL) == 0 &&
          v == CUBLAS_COMPUTE_32F);
    CHECK(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &v, sizeof v, NULL) == 0 &&
          v == CUDA_R_32F);
    uint32_t e = 0;
    CHECK(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e, NULL) == 0 &&
          e == CUBLASLT_EPILOGUE_DEFAULT);
    CHECK(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, NULL, 0, &written) == 0 &&
          written == sizeof(void *));
    CHECK(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, NULL, 0, NULL) ==
          CUBLAS_STATUS_INVALID_VALUE);
    v = CUBLAS_OP_T;
    CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &v, sizeof v) == 0);
    v = 0;
    CHECK(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &v, sizeof v, NULL) == 0 && v == CUBLAS_OP_T);
    int64_t ld = 24;
    CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld) == 0);
    CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, 4) ==
          CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, NULL, 4) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ld, sizeof ld, NULL) ==
          CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasLtMatmulDescDestroy(d) == CUBLAS_STATUS_SUCCESS);

    cublasLtMatrixLayout_t l = NULL;
    CHECK(cublasLtMatrixLayoutCreate(&l, CUDA_R_16F, 3, 4, 8) == CUBLAS_STATUS_SUCCESS);
    uint64_t rows = 0, cols = 0;
    int64_t lld = 0, stride = -1;
    int32_t order = -1, batch = 0;
    uint32_t type = 99;
    CHECK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, NULL) == 0 && rows == 3);
    CHECK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols, NULL) == 0 && cols == 4);
    CHECK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, &lld, sizeof lld, NULL) == 0 && lld == 8);
    CHECK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof type, NULL) == 0 &&
          type == CUDA_R_16F);
    CHECK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order, NULL) == 0 &&
          order == CUBLASLT_ORDER_COL);
    CHECK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch, NULL) == 0 &&
          batch == 1);
    CHECK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride,
                                           NULL) == 0 && stride == 0);
    rows = 5;
    CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows) == 0);
    rows = 0;
    CHECK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, NULL) == 0 && rows == 5);
    CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &batch, sizeof batch) ==
          CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasLtMatrixLayoutDestroy(l) == CUBLAS_STATUS_SUCCESS);

    cublasLtMatmulPreference_t p = NULL;
    CHECK(cublasLtMatmulPreferenceCreate(&p) == CUBLAS_STATUS_SUCCESS);
    uint64_t ws = 1 << 20;
    CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) == 0);
    CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, 4) ==
          CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasLtMatmulPreferenceDestroy(p) == CUBLAS_STATUS_SUCCESS);

    cublasLtHandle_t h = NULL;
    CHECK(cublasLtCreate(&h) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtDestroy(h) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtCreate(NULL) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasLtGetStatusString(CUBLAS_STATUS_SUCCESS) != NULL);
}

/* A small valid float problem (D 4x3 = A^T 4x5 @ B 5x3) whose pieces the
 * bad-argument and workspace tests spoil one at a time. */
struct lt_fixture {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatmulPreference_t pref;
    void *A, *B, *C, *D, *bias, *aux;
};

static void fixture_open(lt_fixture *f)
{
    memset(f, 0, sizeof *f);
    CHECK(cublasLtCreate(&f->h) == 0);
    CHECK(cublasLtMatmulDescCreate(&f->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == 0);
    int32_t t = CUBLAS_OP_T;
    CHECK(cublasLtMatmulDescSetAttribute(f->desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t) == 0);
    CHECK(cublasLtMatrixLayoutCreate(&f->la, CUDA_R_32F, 5, 4, 5) == 0);
    CHECK(cublasLtMatrixLayoutCreate(&f->lb, CUDA_R_32F, 5, 3, 5) == 0);
    CHECK(cublasLtMatrixLayoutCreate(&f->lc, CUDA_R_32F, 4, 3, 4) == 0);
    CHECK(cublasLtMatrixLayoutCreate(&f->ld, CUDA_R_32F, 4, 3, 4) == 0);
    CHECK(cublasLtMatmulPreferenceCreate(&f->pref) == 0);
    std::vector<double> z(64, 0.5);
    f->A = upload(z, CUDA_R_32F);
    f->B = upload(z, CUDA_R_32F);
    f->C = upload(z, CUDA_R_32F);
    f->D = upload(z, CUDA_R_32F);
    f->bias = upload(z, CUDA_R_32F);
    f->aux = upload(z, CUDA_R_32F);
}

static void fixture_close(lt_fixture *f)
{
    cublasLtMatmulPreferenceDestroy(f->pref);
    cublasLtMatrixLayoutDestroy(f->la);
    cublasLtMatrixLayoutDestroy(f->lb);
    cublasLtMatrixLayoutDestroy(f->lc);
    cublasLtMatrixLayoutDestroy(f->ld);
    cublasLtMatmulDescDestroy(f->desc);
    cublasLtDestroy(f->h);
    cudaFree(f->A); cudaFree(f->B); cudaFree(f->C); cudaFree(f->D); cudaFree(f->bias); cudaFree(f->aux);
}

static cublasStatus_t fixture_run(lt_fixture *f, const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsz)
{
    float one = 1, zero = 0;
    return cublasLtMatmul(f->h, f->desc, &one, f->A, f->la, f->B, f->lb, &zero, f->C, f->lc, f->D, f->ld, algo, ws,
                          wsz, NULL);
}

static cublasStatus_t fixture_heuristic(lt_fixture *f, cublasLtMatmulHeuristicResult_t *r, int *found)
{
    return cublasLtMatmulAlgoGetHeuristic(f->h, f->desc, f->la, f->lb, f->lc, f->ld, f->pref, 1, r, found);
}

static void test_lt_workspace(void)
{
    lt_fixture f;
    fixture_open(&f);
    cublasLtMatmulHeuristicResult_t r;
    int found = -1;
    /* the default preference allows no workspace: the algorithm needs none */
    CHECK(fixture_heuristic(&f, &r, &found) == CUBLAS_STATUS_SUCCESS && found == 1 && r.workspaceSize == 0);
    CHECK(fixture_run(&f, &r.algo, NULL, 0) == CUBLAS_STATUS_SUCCESS);
    /* a generous limit: this emulator's heuristic then picks an algorithm
     * that uses workspace (documented in cublaslt.cc), within the limit */
    uint64_t maxws = 32u << 20;
    CHECK(cublasLtMatmulPreferenceSetAttribute(f.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxws,
                                               sizeof maxws) == 0);
    CHECK(fixture_heuristic(&f, &r, &found) == CUBLAS_STATUS_SUCCESS && found == 1);
    CHECK(r.workspaceSize > 0 && r.workspaceSize <= maxws);
    size_t need = r.workspaceSize;
    void *ws = NULL;
    CHECK(cudaMalloc(&ws, need) == cudaSuccess);
    CHECK(fixture_run(&f, &r.algo, ws, need - 1) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(fixture_run(&f, &r.algo, NULL, 0) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(fixture_run(&f, &r.algo, ws, need) == CUBLAS_STATUS_SUCCESS);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_SUCCESS); /* implicit heuristic */
    /* a limit just under that algorithm's need excludes it */
    maxws = need - 1;
    CHECK(cublasLtMatmulPreferenceSetAttribute(f.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxws,
                                               sizeof maxws) == 0);
    CHECK(fixture_heuristic(&f, &r, &found) == CUBLAS_STATUS_SUCCESS && found == 1 && r.workspaceSize <= maxws);
    CHECK(fixture_run(&f, &r.algo, NULL, 0) == CUBLAS_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    /* and the result is right: every D element is 5 * 0.5 * 0.5 */
    std::vector<double> got = download(f.D, 12, CUDA_R_32F);
    CHECK(mismatches("D", got, std::vector<double>(12, 1.25), 0) == 0);
    /* an algorithm made up by the caller */
    cublasLtMatmulAlgo_t junk;
    memset(&junk, 0x5a, sizeof junk);
    CHECK(fixture_run(&f, &junk, ws, need) == CUBLAS_STATUS_INVALID_VALUE);
    /* requestedAlgoCount must be positive */
    CHECK(cublasLtMatmulAlgoGetHeuristic(f.h, f.desc, f.la, f.lb, f.lc, f.ld, f.pref, 0, &r, &found) ==
          CUBLAS_STATUS_INVALID_VALUE);
    cudaFree(ws);
    fixture_close(&f);
}

static void test_lt_bad_arguments(void)
{
    lt_fixture f;
    fixture_open(&f);
    float one = 1, zero = 0;
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtMatmul(NULL, f.desc, &one, f.A, f.la, f.B, f.lb, &zero, f.C, f.lc, f.D, f.ld, NULL, NULL, 0, NULL) ==
          CUBLAS_STATUS_NOT_INITIALIZED);
    CHECK(cublasLtMatmul(f.h, f.desc, NULL, f.A, f.la, f.B, f.lb, &zero, f.C, f.lc, f.D, f.ld, NULL, NULL, 0, NULL) ==
          CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasLtMatmul(f.h, f.desc, &one, f.A, NULL, f.B, f.lb, &zero, f.C, f.lc, f.D, f.ld, NULL, NULL, 0, NULL) ==
          CUBLAS_STATUS_INVALID_VALUE);

    /* shapes that do not fit: op(A) must be m x k with D's m */
    uint64_t rows = 3;
    CHECK(cublasLtMatrixLayoutSetAttribute(f.lb, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_INVALID_VALUE);
    rows = 5;
    CHECK(cublasLtMatrixLayoutSetAttribute(f.lb, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows) == 0);
    /* ld below the rows */
    int64_t ld = 3;
    CHECK(cublasLtMatrixLayoutSetAttribute(f.ld, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_INVALID_VALUE);
    ld = 4;
    CHECK(cublasLtMatrixLayoutSetAttribute(f.ld, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld) == 0);
    /* batch counts that differ */
    int32_t batch = 2;
    CHECK(cublasLtMatrixLayoutSetAttribute(f.la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_INVALID_VALUE);
    batch = 1;
    CHECK(cublasLtMatrixLayoutSetAttribute(f.la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch) == 0);
    /* in place (C is D) with a C layout other than D's: ld 8, not 4 */
    cublasLtMatrixLayout_t l8 = NULL;
    CHECK(cublasLtMatrixLayoutCreate(&l8, CUDA_R_32F, 4, 3, 8) == 0);
    CHECK(cublasLtMatmul(f.h, f.desc, &one, f.A, f.la, f.B, f.lb, &zero, f.D, l8, f.D, f.ld, NULL, NULL, 0, NULL) ==
          CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasLtMatmul(f.h, f.desc, &one, f.A, f.la, f.B, f.lb, &zero, f.C, l8, f.D, f.ld, NULL, NULL, 0, NULL) ==
          CUBLAS_STATUS_SUCCESS); /* out of place, C's ld may differ */
    cublasLtMatrixLayoutDestroy(l8);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_SUCCESS);

    /* row-major order is not emulated */
    int32_t order = CUBLASLT_ORDER_ROW;
    CHECK(cublasLtMatrixLayoutSetAttribute(f.lc, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_NOT_SUPPORTED);
    order = CUBLASLT_ORDER_COL;
    CHECK(cublasLtMatrixLayoutSetAttribute(f.lc, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order) == 0);

    /* types: C and D differ; float inputs with a half output */
    uint32_t t = CUDA_R_16F;
    CHECK(cublasLtMatrixLayoutSetAttribute(f.lc, CUBLASLT_MATRIX_LAYOUT_TYPE, &t, sizeof t) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_NOT_SUPPORTED);
    CHECK(cublasLtMatrixLayoutSetAttribute(f.ld, CUBLASLT_MATRIX_LAYOUT_TYPE, &t, sizeof t) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_NOT_SUPPORTED);
    t = CUDA_R_32F;
    CHECK(cublasLtMatrixLayoutSetAttribute(f.lc, CUBLASLT_MATRIX_LAYOUT_TYPE, &t, sizeof t) == 0);
    CHECK(cublasLtMatrixLayoutSetAttribute(f.ld, CUBLASLT_MATRIX_LAYOUT_TYPE, &t, sizeof t) == 0);

    /* device pointer mode is not emulated */
    int32_t pm = CUBLASLT_POINTER_MODE_DEVICE;
    CHECK(cublasLtMatmulDescSetAttribute(f.desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_NOT_SUPPORTED);
    pm = CUBLASLT_POINTER_MODE_HOST;
    CHECK(cublasLtMatmulDescSetAttribute(f.desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm) == 0);

    /* epilogues: BIAS without a bias pointer; GELU_AUX without aux, with an
     * aux ld that is no multiple of 8 or below the rows; a bad value */
    uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
    CHECK(cublasLtMatmulDescSetAttribute(f.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasLtMatmulDescSetAttribute(f.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &f.bias, sizeof f.bias) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_SUCCESS);
    epi = CUBLASLT_EPILOGUE_GELU_AUX;
    CHECK(cublasLtMatmulDescSetAttribute(f.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasLtMatmulDescSetAttribute(f.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &f.aux, sizeof f.aux) ==
          0);
    int64_t aux_ld = 4; /* >= rows but not a multiple of 8 */
    CHECK(cublasLtMatmulDescSetAttribute(f.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_INVALID_VALUE);
    cublasLtMatmulHeuristicResult_t r;
    int found = -1;
    CHECK(fixture_heuristic(&f, &r, &found) != CUBLAS_STATUS_SUCCESS && found == 0);
    aux_ld = 8;
    CHECK(cublasLtMatmulDescSetAttribute(f.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_SUCCESS);
    epi = 3; /* RELU | DEFAULT: no epilogue */
    CHECK(cublasLtMatmulDescSetAttribute(f.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) == 0);
    CHECK(fixture_run(&f, NULL, NULL, 0) == CUBLAS_STATUS_INVALID_VALUE);
    epi = CUBLASLT_EPILOGUE_DEFAULT;
    CHECK(cublasLtMatmulDescSetAttribute(f.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) == 0);

    /* compute and scale types that do not go together */
    cublasLtMatmulDesc_t d64 = NULL;
    CHECK(cublasLtMatmulDescCreate(&d64, CUBLAS_COMPUTE_64F, CUDA_R_64F) == 0);
    CHECK(cublasLtMatmul(f.h, d64, &one, f.A, f.la, f.B, f.lb, &zero, f.C, f.lc, f.D, f.ld, NULL, NULL, 0, NULL) ==
          CUBLAS_STATUS_NOT_SUPPORTED);
    cublasLtMatmulDescDestroy(d64);

    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    fixture_close(&f);
}

/* Last, as it leaves the context with a sticky error: a workspace
 * allocation shorter than the size passed is found when the work runs, as
 * a kernel would fault on a GPU. */
static void test_lt_short_workspace_faults(void)
{
    lt_fixture f;
    fixture_open(&f);
    uint64_t maxws = 32u << 20;
    CHECK(cublasLtMatmulPreferenceSetAttribute(f.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxws,
                                               sizeof maxws) == 0);
    cublasLtMatmulHeuristicResult_t r;
    int found = 0;
    CHECK(fixture_heuristic(&f, &r, &found) == CUBLAS_STATUS_SUCCESS && found == 1 && r.workspaceSize > 1);
    void *ws = NULL;
    CHECK(cudaMalloc(&ws, r.workspaceSize / 2) == cudaSuccess);
    CHECK(fixture_run(&f, &r.algo, ws, r.workspaceSize) == CUBLAS_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    cudaFree(ws);
    fixture_close(&f);
}

int main(void)
{
    RUN(test_handle);
    RUN(test_gemm_transposes);
    RUN(test_gemm_beta_zero_nan);
    RUN(test_gemm_alpha_zero);
    RUN(test_gemm_f64);
    RUN(test_gemm_batched);
    RUN(test_gemm_half_types);
    RUN(test_gemm_fast_compute);
    RUN(test_gemm_legacy);
    RUN(test_gemm_bad_arguments);
    RUN(test_lt_descriptors);
    RUN(test_lt_default);
    RUN(test_lt_epilogues);
    RUN(test_lt_half_types);
    RUN(test_lt_workspace);
    RUN(test_lt_bad_arguments);
    RUN(test_lt_short_workspace_faults);
    CHECK_DONE();
}
