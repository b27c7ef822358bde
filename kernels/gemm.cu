/* gemm.cu — batched GEMM through cuBLASLt and cuBLAS (backend.h: out[b] =
 * alpha a[b] @ b[b] + beta out[b], 3-D operands, any strides, stride 0 on the
 * batch dim for broadcast operands), and the fused linear family on
 * cuBLASLt's epilogues (bias, GELU with its input saved, bias gradient).
 *
 * cuBLAS is column-major; a row-major matrix is the column-major view of its
 * transpose, so out = a @ b is computed as out^T = b^T a^T, and every
 * operand that has a unit stride in either dim is passed as it is (with the
 * transpose flag saying which). Only an operand with no unit stride, or an
 * output that is not row-major, goes through a contiguous copy. float32
 * uses TF32 tensor cores only when ember.backends.cuda.matmul.allow_tf32 is
 * set (off by default, as in PyTorch); float16/bfloat16 accumulate in
 * float32 (CUBLAS_COMPUTE_32F).
 *
 * cuBLASLt takes float32 and the half dtypes; plain cuBLAS keeps what it
 * cannot: float64 and batches with a broadcast (stride 0) operand. Lt's
 * algorithm search (cublasLtMatmulAlgoGetHeuristic) costs more than a small
 * GEMM, so its answer is cached per shape, layout, dtype, epilogue and
 * pointer alignment. Its workspace comes from the caching allocator per call
 * (freeing it once the GEMM is queued is safe: one stream per device). When
 * Lt has no algorithm for a case (an epilogue's alignment rules, say), the
 * linear family runs the GEMM alone and its epilogue as a kernel here. */
#include "kc.h"
#include "../engine/unary_math.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <string>
#include <unordered_map>

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
    s->nbytes = (size_t)emf_numel(like) * em_dtype_size(like->dtype);
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

static cudaDataType_t cuda_type(em_dtype d)
{
    switch (d) {
    case EM_FLOAT64: return CUDA_R_64F;
    case EM_FLOAT16: return CUDA_R_16F;
    case EM_BFLOAT16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
    }
}

static cublasComputeType_t compute_type(em_dtype d)
{
    if (d == EM_FLOAT64) return CUBLAS_COMPUTE_64F;
    if (d == EM_FLOAT32 && kc_allow_tf32) return CUBLAS_COMPUTE_32F_FAST_TF32;
    return CUBLAS_COMPUTE_32F;
}

static int run_gemm(cublasHandle_t h, em_tensor *out, const em_tensor *a, const em_tensor *b, double alpha,
                    double beta)
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
    cudaDataType_t t = cuda_type(out->dtype);
    float al = (float)alpha, be = (float)beta;
    bool f64 = out->dtype == EM_FLOAT64;
    const void *pa = f64 ? (const void *)&alpha : (const void *)&al, *pb = f64 ? (const void *)&beta : (const void *)&be;
    cublasStatus_t st = cublasGemmStridedBatchedEx(h, tb, ta, (int)N, (int)M, (int)K, pa, kc_ptr(b), t, (int)ldb, sb,
                                                   kc_ptr(a), t, (int)lda, sa, pb, kc_ptr(out), t, (int)ldo, so,
                                                   (int)B, compute_type(out->dtype), CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS)
        return kc_error("matmul: cuBLAS failed on [%lld,%lld,%lld] @ [%lld,%lld,%lld]: %s", (long long)B, (long long)M,
                        (long long)K, (long long)b->sizes[0], (long long)K, (long long)N, cublasGetStatusString(st));
    return 0;
}

/* ---- cuBLASLt ------------------------------------------------------------------------------- */

static cublasLtHandle_t lt_handles[64];

static cublasLtHandle_t lt_handle_of(int device)
{
    if (device < 0 || device >= 64) return NULL;
    if (!lt_handles[device] && cublasLtCreate(&lt_handles[device]) != CUBLAS_STATUS_SUCCESS) {
        lt_handles[device] = NULL;
        return NULL;
    }
    return lt_handles[device];
}

/* Hopper's best kernels use up to 32 MiB (PyTorch's default there too) */
#define LT_WORKSPACE ((size_t)32 << 20)

/* One GEMM for cuBLASLt in its column-major terms: D [m, n] = op(A) op(B)
 * (+ the epilogue), with D = out^T, A = b^T and B = a^T of out = a @ b. */
struct lt_problem {
    em_dtype dtype;
    cublasLtEpilogue_t epilogue;
    cublasOperation_t ta, tb;
    int64_t m, n, k, lda, ldb, ldd, batch, sa, sb, sd, aux_ld;
    const void *A, *B;
    void *D;
    void *bias, *aux;
    float alpha, beta;
};

/* Everything the heuristic's answer depends on, packed without padding. */
struct lt_key {
    int64_t v[20];
};

struct lt_entry {
    bool found;
    cublasLtMatmulAlgo_t algo;
    size_t workspace;
};

static std::unordered_map<std::string, lt_entry> lt_cache;

static int64_t alignment(const void *p)
{
    uintptr_t u = (uintptr_t)p;
    int64_t a = 16;
    while (a > 1 && u % (uintptr_t)a) a /= 2;
    return a;
}

static std::string key_of(int device, const lt_problem *p)
{
    lt_key k;
    memset(&k, 0, sizeof k);
    int64_t f[] = {device, p->dtype, compute_type(p->dtype), p->epilogue, p->ta, p->tb, p->m, p->n, p->k,
                   p->lda, p->ldb, p->ldd, p->batch, p->sa, p->sb, p->sd, p->aux_ld,
                   alignment(p->A) * 10000 + alignment(p->B) * 100 + alignment(p->D),
                   alignment(p->bias) * 100 + alignment(p->aux)};
    memcpy(k.v, f, sizeof f);
    return std::string((const char *)&k, sizeof k);
}

static bool set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *v, size_t n)
{
    return cublasLtMatmulDescSetAttribute(d, a, v, n) == CUBLAS_STATUS_SUCCESS;
}

static cublasLtMatrixLayout_t make_layout(em_dtype dt, cublasOperation_t op, int64_t rows, int64_t cols, int64_t ld,
                                          int64_t batch, int64_t stride)
{
    /* the stored matrix, before op: op(X) is rows x cols */
    uint64_t r = (uint64_t)(op == CUBLAS_OP_N ? rows : cols), c = (uint64_t)(op == CUBLAS_OP_N ? cols : rows);
    cublasLtMatrixLayout_t l = NULL;
    if (cublasLtMatrixLayoutCreate(&l, cuda_type(dt), r, c, ld) != CUBLAS_STATUS_SUCCESS) return NULL;
    if (batch > 1) {
        int32_t bc = (int32_t)batch;
        if (cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc) ||
            cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride)) {
            cublasLtMatrixLayoutDestroy(l);
            return NULL;
        }
    }
    return l;
}

/* Runs p through cuBLASLt. 1 (no error set) when Lt has no algorithm for it
 * or refuses it, so that the caller takes its other path; -1 on a real
 * failure (memory). */
static int lt_matmul(int device, cudaStream_t s, const lt_problem *p)
{
    cublasLtHandle_t h = lt_handle_of(device);
    if (!h || p->dtype == EM_FLOAT64) return 1;
    cublasComputeType_t ct = compute_type(p->dtype);
    cublasLtMatmulDesc_t desc = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    int rc = 1;
    if (cublasLtMatmulDescCreate(&desc, ct, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return 1;
    bool ok = set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, &p->ta, sizeof p->ta) &&
              set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, &p->tb, sizeof p->tb) &&
              set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &p->epilogue, sizeof p->epilogue);
    if (ok && p->bias) ok = set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p->bias, sizeof p->bias);
    if (ok && p->aux)
        ok = set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &p->aux, sizeof p->aux) &&
             set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &p->aux_ld, sizeof p->aux_ld);
    if (ok) {
        la = make_layout(p->dtype, p->ta, p->m, p->k, p->lda, p->batch, p->sa);
        lb = make_layout(p->dtype, p->tb, p->k, p->n, p->ldb, p->batch, p->sb);
        ld = make_layout(p->dtype, CUBLAS_OP_N, p->m, p->n, p->ldd, p->batch, p->sd);
        ok = la && lb && ld;
    }
    std::string key = ok ? key_of(device, p) : std::string();
    auto it = ok ? lt_cache.find(key) : lt_cache.end();
    if (ok && it == lt_cache.end()) {
        lt_entry e;
        memset(&e, 0, sizeof e);
        uint64_t ws = LT_WORKSPACE;
        uint32_t al[4] = {(uint32_t)alignment(p->A), (uint32_t)alignment(p->B), (uint32_t)alignment(p->D),
                          (uint32_t)alignment(p->D)};
        cublasLtMatmulHeuristicResult_t r;
        int found = 0;
        if (cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
            !cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) &&
            !cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], 4) &&
            !cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], 4) &&
            !cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], 4) &&
            !cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[3], 4) &&
            cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, ld, ld, pref, 1, &r, &found) == CUBLAS_STATUS_SUCCESS &&
            found > 0) {
            e.found = true;
            e.algo = r.algo;
            e.workspace = r.workspaceSize;
        }
        it = lt_cache.emplace(key, e).first;
    }
    if (ok && it->second.found) {
        size_t wsz = it->second.workspace;
        void *ws = wsz ? kc_alloc(wsz, device) : NULL;
        if (wsz && !ws) {
            rc = -1;
        } else {
            /* C is D (beta scales what out held) */
            cublasStatus_t st = cublasLtMatmul(h, desc, &p->alpha, p->A, la, p->B, lb, &p->beta, p->D, ld, p->D, ld,
                                               &it->second.algo, ws, wsz, s);
            if (ws) kc_free(ws, wsz, device);
            rc = st == CUBLAS_STATUS_SUCCESS ? 0 : 1;
        }
    }
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(desc);
    return rc;
}

/* out = alpha a @ b + beta out on 3-D views BLAS can read (out row-major)
 * through Lt; 1 when Lt does not take it. Broadcast batches stay with cuBLAS. */
static int lt_gemm(int device, cudaStream_t s, em_tensor *out, const em_tensor *a, const em_tensor *b, double alpha,
                   double beta, cublasLtEpilogue_t epi, void *bias, void *aux)
{
    int64_t B = out->sizes[0], M = out->sizes[1], N = out->sizes[2], K = a->sizes[2];
    int64_t sa = a->sizes[0] == 1 ? 0 : a->strides[0], sb = b->sizes[0] == 1 ? 0 : b->strides[0];
    if (B > 1 && (sa == 0 || sb == 0)) return 1;
    bool a_rm = true, b_rm = true, o_rm = true;
    int64_t lda = 1, ldb = 1, ldo = 1;
    blas_layout(M, K, a->strides[1], a->strides[2], &a_rm, &lda);
    blas_layout(K, N, b->strides[1], b->strides[2], &b_rm, &ldb);
    blas_layout(M, N, out->strides[1], out->strides[2], &o_rm, &ldo);
    lt_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = out->dtype;
    p.epilogue = epi;
    p.ta = b_rm ? CUBLAS_OP_N : CUBLAS_OP_T;
    p.tb = a_rm ? CUBLAS_OP_N : CUBLAS_OP_T;
    p.m = N; p.n = M; p.k = K;
    p.lda = ldb; p.ldb = lda; p.ldd = ldo;
    p.batch = B; p.sa = sb; p.sb = sa; p.sd = out->strides[0];
    p.A = kc_ptr(b); p.B = kc_ptr(a); p.D = kc_ptr(out);
    p.bias = bias;
    p.aux = aux;
    p.aux_ld = aux ? N : 0;
    p.alpha = (float)alpha;
    p.beta = (float)beta;
    return lt_matmul(device, s, &p);
}

/* out = alpha a @ b + beta out (+ a cuBLASLt epilogue epi with its bias and
 * aux pointers) on 3-D operands, copying those BLAS cannot read. With an
 * epilogue other than DEFAULT, 1 (no error set) when Lt does not take it. */
static int gemm_core(int dev, cudaStream_t s, em_tensor *out, const em_tensor *a, const em_tensor *b, double alpha,
                     double beta, cublasLtEpilogue_t epi, void *bias, void *aux)
{
    int64_t M = out->sizes[1], N = out->sizes[2], K = a->sizes[2];
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || out->sizes[0] > INT32_MAX)
        return kc_error("matmul: dimensions over 2^31 are not supported by cuBLAS");
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
    if (rc == 0) {
        rc = out->dtype == EM_FLOAT64 ? 1 : lt_gemm(dev, s, O, A, Bm, alpha, beta, epi, bias, aux);
        if (rc == 1 && epi == CUBLASLT_EPILOGUE_DEFAULT) {
            cublasHandle_t h = handle_of(dev, s);
            rc = h ? run_gemm(h, O, A, Bm, alpha, beta) : -1;
        }
    }
    if (rc == 0 && out_copy) rc = kc_cast(out, O);
    drop_scratch(&sa, dev); drop_scratch(&sb, dev); drop_scratch(&so, dev);
    return rc;
}

int kc_gemm(em_tensor *out, const em_tensor *a, const em_tensor *b, double alpha, double beta)
{
    int dev = kc_device_of(out);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    if (out->dtype != EM_FLOAT32 && out->dtype != EM_FLOAT64 && out->dtype != EM_FLOAT16 &&
        out->dtype != EM_BFLOAT16)
        return kc_error("matmul: no CUDA GEMM for %s (float32, float64, float16 and bfloat16 only)",
                        kc_dtype_name(out->dtype));
    int64_t K = a->sizes[2];
    if (emf_numel(out) == 0) return 0;
    /* an empty sum: out = beta * out (cuBLAS scales C when k is 0) */
    if (K == 0 && beta == 0) return kc_fill(out, 0);
    if (K == 0 && beta == 1) return 0;
    if (gemm_core(dev, s, out, a, b, alpha, beta, CUBLASLT_EPILOGUE_DEFAULT, NULL, NULL)) return -1;
    return kc_launched("matmul", dev);
}

/* ---- the fused linear family (backend.h em_linear_op) ----------------------------------------- */

/* the epilogue's arithmetic type: float, double for float64 */
template <typename T> struct lin_acc { typedef float type; };
template <> struct lin_acc<double> { typedef double type; };

template <typename T> __device__ inline typename lin_acc<T>::type lin_load(T v) { return (typename lin_acc<T>::type)v; }
template <> __device__ inline float lin_load<__half>(__half v) { return __half2float(v); }
template <> __device__ inline float lin_load<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T, typename C> __device__ inline T lin_store(C v) { return (T)v; }
template <> __device__ inline __half lin_store<__half, float>(float v) { return __float2half_rn(v); }
template <> __device__ inline __nv_bfloat16 lin_store<__nv_bfloat16, float>(float v) { return __float2bfloat16_rn(v); }

/* GELU's tanh form and its derivative: the op table's formulas (engine/unary_math.h) */
__device__ inline float gelu_tanh(float x) { return em_un_f32(EM_GELU_TANH, x); }
__device__ inline double gelu_tanh(double x) { return em_un_f64(EM_GELU_TANH, x); }
__device__ inline float gelu_tanh_grad(float x) { return em_un_f32(EM_GELU_TANH_GRAD, x); }
__device__ inline double gelu_tanh_grad(double x) { return em_un_f64(EM_GELU_TANH_GRAD, x); }

/* The epilogue Lt did not take, after the GEMM: pre = out + bias[n] (rounded
 * to T, as the fused epilogue's is), aux = pre, out = gelu(pre) for GELU.
 * out and aux contiguous [M, N]. */
template <typename T>
__global__ void bias_act_kernel(T *out, T *aux, const T *bias, int64_t total, int64_t N, bool gelu)
{
    typedef typename lin_acc<T>::type C;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        C v = lin_load(out[i]);
        if (bias) v = lin_load(lin_store<T, C>(v + lin_load(bias[i % N])));
        if (aux) aux[i] = lin_store<T, C>(v);
        out[i] = lin_store<T, C>(gelu ? gelu_tanh(v) : v);
    }
}

/* out = g * gelu_tanh'(x), contiguous, n elements */
template <typename T> __global__ void dgelu_kernel(T *out, const T *g, const T *x, int64_t n)
{
    typedef typename lin_acc<T>::type C;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        out[i] = lin_store<T, C>(lin_load(g[i]) * gelu_tanh_grad(lin_load(x[i])));
}

struct lin_epilogue {
    template <typename T> static int run(int dev, cudaStream_t s, em_tensor *out, em_tensor *aux, const em_tensor *bias,
                                         bool gelu)
    {
        int64_t total = emf_numel(out), N = out->sizes[out->ndim - 1];
        KC_LAUNCH(kc_grid(total, dev), KC_THREADS, 0, s, bias_act_kernel<T>)(
            (T *)kc_ptr(out), aux ? (T *)kc_ptr(aux) : NULL, bias ? (const T *)kc_ptr(bias) : NULL, total, N, gelu);
        return 0;
    }
};

struct lin_dgelu {
    template <typename T> static int run(int dev, cudaStream_t s, em_tensor *out, const em_tensor *g,
                                         const em_tensor *x)
    {
        int64_t n = emf_numel(out);
        KC_LAUNCH(kc_grid(n, dev), KC_THREADS, 0, s, dgelu_kernel<T>)((T *)kc_ptr(out), (const T *)kc_ptr(g),
                                                               (const T *)kc_ptr(x), n);
        return 0;
    }
};

/* a [M, K] as a [1, M, K] header on the stack (the same storage) */
static em_tensor as_batch1(const em_tensor *t)
{
    em_tensor v = *t;
    v.ndim = 3;
    v.sizes[0] = 1; v.sizes[1] = t->sizes[0]; v.sizes[2] = t->sizes[1];
    v.strides[0] = t->sizes[0] * t->sizes[1];
    v.strides[1] = t->strides[0]; v.strides[2] = t->strides[1];
    return v;
}

static int linear_dispatch_epilogue(int dev, cudaStream_t s, em_tensor *out, em_tensor *aux, const em_tensor *bias,
                                    bool gelu)
{
    switch (out->dtype) {
    case EM_FLOAT32: return lin_epilogue::run<float>(dev, s, out, aux, bias, gelu);
    case EM_FLOAT64: return lin_epilogue::run<double>(dev, s, out, aux, bias, gelu);
    case EM_FLOAT16: return lin_epilogue::run<__half>(dev, s, out, aux, bias, gelu);
    case EM_BFLOAT16: return lin_epilogue::run<__nv_bfloat16>(dev, s, out, aux, bias, gelu);
    default: return kc_error("linear: no CUDA kernel for %s", kc_dtype_name(out->dtype));
    }
}

static int linear_dgelu(int dev, cudaStream_t s, em_tensor *out, const em_tensor *g, const em_tensor *x)
{
    if (!emf_is_contiguous(out) || !emf_is_contiguous(g) || !emf_is_contiguous(x))
        return kc_error("linear: DGELU expects contiguous tensors");
    switch (out->dtype) {
    case EM_FLOAT32: return lin_dgelu::run<float>(dev, s, out, g, x);
    case EM_FLOAT64: return lin_dgelu::run<double>(dev, s, out, g, x);
    case EM_FLOAT16: return lin_dgelu::run<__half>(dev, s, out, g, x);
    case EM_BFLOAT16: return lin_dgelu::run<__nv_bfloat16>(dev, s, out, g, x);
    default: return kc_error("linear: no CUDA kernel for %s", kc_dtype_name(out->dtype));
    }
}

static cublasLtEpilogue_t lt_epilogue(em_linear_op op, bool bias, bool aux)
{
    if (op == EM_LINEAR_BGRAD) return bias ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_DEFAULT;
    if (op == EM_LINEAR_GELU) {
        if (aux) return bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
        return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    }
    return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

int kc_linear(em_linear_op op, em_tensor *out, em_tensor *aux, const em_tensor *a, const em_tensor *b,
              em_tensor *bias)
{
    int dev = kc_device_of(out);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    if (op < 0 || op >= EM_NLINEAR) return kc_error("linear: unknown fused op %d", (int)op);
    if (op == EM_LINEAR_DGELU) {
        if (linear_dgelu(dev, s, out, a, aux)) return -1;
        return kc_launched("linear", dev);
    }
    if (emf_numel(out) == 0) {
        if (op == EM_LINEAR_BGRAD && bias && emf_numel(bias) > 0) return kc_fill(bias, 0);
        return 0;
    }
    em_tensor a3 = as_batch1(a), b3 = as_batch1(b), o3 = as_batch1(out);
    int rc = 1;
    if (a->sizes[1] > 0)
        rc = gemm_core(dev, s, &o3, &a3, &b3, 1.0, 0.0, lt_epilogue(op, bias != NULL, aux != NULL),
                       bias ? kc_ptr(bias) : NULL, aux ? kc_ptr(aux) : NULL);
    if (rc < 0) return -1;
    if (rc == 1) {
        /* unfused: the GEMM alone, then the epilogue as a kernel */
        if (kc_gemm(&o3, &a3, &b3, 1.0, 0.0)) return -1;
        if (op == EM_LINEAR_BGRAD) {
            if (bias && kc_reduce(EM_RSUM, bias, NULL, a, 1)) return -1;
        } else if (bias || op == EM_LINEAR_GELU) {
            if (linear_dispatch_epilogue(dev, s, out, aux, bias, op == EM_LINEAR_GELU)) return -1;
        }
    }
    return kc_launched("linear", dev);
}
