/*
 * cublaslt.cc — the emulated device's cuBLASLt (kernels/emu/): the handle,
 * the matmul, matrix-layout and preference descriptors, the algorithm
 * heuristic and cublasLtMatmul with its epilogues, computed on the host in
 * the given stream's order.
 *
 * Semantics follow NVIDIA's cuBLASLt documentation (cublasLt.h comments):
 * D = epilogue(alpha op(A) op(B) + beta C), column-major, op(A) m x k,
 * op(B) k x n, C and D m x n; ld >= rows. Epilogues emulated: DEFAULT, RELU,
 * BIAS, RELU_BIAS, GELU, GELU_AUX, GELU_BIAS, GELU_AUX_BIAS, DGELU,
 * DGELU_BGRAD, BGRADA, BGRADB, with the tanh GELU cuBLASLt documents,
 * gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))):
 *  - the bias (length m, packed, type D's unless BIAS_DATA_TYPE says float
 *    for half D) is added after the scaling, before the activation;
 *  - GELU_AUX* store the activation's input (after the bias) in the aux
 *    matrix (type D's, leading dimension AUX_LD: a multiple of 8, >= m);
 *  - DGELU* read that matrix back: D = (alpha op(A) op(B) + beta C) *
 *    gelu'(aux); DGELU_BGRAD also stores bias[i] = sum over j of D(i, j),
 *    the gradient of the bias that fed the forward GELU;
 *  - BGRADA stores bias[i] = sum over l of op(A)(i, l) (length m), BGRADB
 *    bias[j] = sum over l of op(B)(l, j) (length n): the reduction is over
 *    the GEMM's k dimension, as documented; D is the plain product.
 * Left out (CUBLAS_STATUS_NOT_SUPPORTED): the ReLU bit-mask epilogues
 * (RELU_AUX*, DRELU*), orders other than column-major, pointer-array
 * batches, planar complex, device pointer modes, the fp8 scale and amax
 * pointers, CUBLAS_COMPUTE_16F and integer types.
 *
 * Arithmetic as in cublas.cc: float accumulation for the 32F compute types
 * (TF32 and the other fast modes computed in full float32), double for 64F;
 * half and bfloat16 through the toolkit's host conversions.
 *
 * Algorithms: the heuristic knows two, with the same arithmetic. Algorithm
 * 1 needs LT_WORKSPACE bytes of workspace (and checks that it was given
 * that much device memory, as a GPU kernel would fault past it); algorithm
 * 0 needs none. It answers algorithm 1 when the preference's
 * MAX_WORKSPACE_BYTES allows it, else algorithm 0 (the default preference
 * allows no workspace). cublasLtMatmul with less workspace than its
 * algorithm needs is CUBLAS_STATUS_INVALID_VALUE, as documented.
 */
#include "emu.h"

#include <cublasLt.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <vector>

/* Workspace of emulated algorithm 1: small enough for any test to
 * allocate, large enough that a caller's sizing bug shows. */
#define LT_WORKSPACE ((size_t)64 << 10)

/* Tags algorithms made by this heuristic ("emuLt"). */
#define LT_ALGO_TAG 0x744c756d65ull

struct cublasLtContext {
    int unused;
};

/* The descriptors are ours to define (the toolkit's types are opaque
 * storage); each is allocated as its own struct and handed out as the
 * toolkit's pointer type. */
struct lt_layout {
    uint32_t type;
    int32_t order;
    uint64_t rows, cols;
    int64_t ld;
    int32_t batch;
    int64_t stride;
    int64_t plane_offset;
    uint32_t batch_mode;
};

struct lt_desc {
    int32_t compute, scale, pointer_mode;
    int32_t transa, transb, transc, fill_mode;
    uint32_t epilogue;
    const void *bias;
    int64_t bias_batch_stride;
    void *aux;
    int64_t aux_ld, aux_batch_stride;
    int32_t sm_count;
    int32_t aux_type, bias_type;
};

struct lt_pref {
    uint32_t search_mode;
    uint64_t max_workspace;
    uint32_t reduction_mask;
    uint32_t align[4]; /* A, B, C, D */
    float max_waves;
    uint64_t impl_mask;
};

static lt_layout *layout_of(cublasLtMatrixLayout_t l) { return (lt_layout *)(void *)l; }
static lt_desc *desc_of(cublasLtMatmulDesc_t d) { return (lt_desc *)(void *)d; }
static lt_pref *pref_of(cublasLtMatmulPreference_t p) { return (lt_pref *)(void *)p; }

cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle)
{
    if (!lightHandle) return CUBLAS_STATUS_INVALID_VALUE;
    cublasLtContext *h = (cublasLtContext *)calloc(1, sizeof *h);
    if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
    *lightHandle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle)
{
    if (!lightHandle) return CUBLAS_STATUS_NOT_INITIALIZED;
    free(lightHandle);
    return CUBLAS_STATUS_SUCCESS;
}

/* the same words as cuBLAS's (cublas.cc, the same library) */
const char *cublasLtGetStatusString(cublasStatus_t status) { return cublasGetStatusString(status); }

const char *cublasLtGetStatusName(cublasStatus_t status) { return cublasGetStatusName(status); }

/* ---- attributes ------------------------------------------------------------------------------- */

/* Setting and getting share one rule (cublasLt.h): the buffer's size must be
 * the attribute's exactly; a get with size 0 asks for the size. */
static cublasStatus_t set_field(void *field, size_t size, const void *buf, size_t sizeInBytes)
{
    if (!buf || sizeInBytes != size) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(field, buf, size);
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t get_field(const void *field, size_t size, void *buf, size_t sizeInBytes, size_t *sizeWritten)
{
    if (sizeInBytes == 0) {
        if (!sizeWritten) return CUBLAS_STATUS_INVALID_VALUE;
        *sizeWritten = size;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (!buf || sizeInBytes != size) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(buf, field, size);
    if (sizeWritten) *sizeWritten = size;
    return CUBLAS_STATUS_SUCCESS;
}

/* cublasLt*SetAttribute and cublasLt*GetAttribute: the field that field_of
 * (desc_field, layout_field or pref_field below) finds for attr in d, by
 * the rule above; INVALID_VALUE for a NULL descriptor, field_of's status
 * for an attribute it does not give. */
template <typename Desc, typename Attr>
static cublasStatus_t set_attribute(Desc *d, void *(*field_of)(Desc *, Attr, size_t *, cublasStatus_t *), Attr attr,
                                    const void *buf, size_t sizeInBytes)
{
    size_t size = 0;
    cublasStatus_t st = CUBLAS_STATUS_INVALID_VALUE;
    void *f = d ? field_of(d, attr, &size, &st) : NULL;
    return f ? set_field(f, size, buf, sizeInBytes) : st;
}

template <typename Desc, typename Attr>
static cublasStatus_t get_attribute(Desc *d, void *(*field_of)(Desc *, Attr, size_t *, cublasStatus_t *), Attr attr,
                                    void *buf, size_t sizeInBytes, size_t *sizeWritten)
{
    size_t size = 0;
    cublasStatus_t st = CUBLAS_STATUS_INVALID_VALUE;
    void *f = d ? field_of(d, attr, &size, &st) : NULL;
    return f ? get_field(f, size, buf, sizeInBytes, sizeWritten) : st;
}

/* Where attribute attr of d lives and its size; NULL for one this emulator
 * does not model (*st says whether it is unknown or just not emulated). */
static void *desc_field(lt_desc *d, cublasLtMatmulDescAttributes_t attr, size_t *size, cublasStatus_t *st)
{
    *st = CUBLAS_STATUS_SUCCESS;
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: *size = sizeof d->compute; return &d->compute;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: *size = sizeof d->scale; return &d->scale;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: *size = sizeof d->pointer_mode; return &d->pointer_mode;
    case CUBLASLT_MATMUL_DESC_TRANSA: *size = sizeof d->transa; return &d->transa;
    case CUBLASLT_MATMUL_DESC_TRANSB: *size = sizeof d->transb; return &d->transb;
    case CUBLASLT_MATMUL_DESC_TRANSC: *size = sizeof d->transc; return &d->transc;
    case CUBLASLT_MATMUL_DESC_FILL_MODE: *size = sizeof d->fill_mode; return &d->fill_mode;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: *size = sizeof d->epilogue; return &d->epilogue;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: *size = sizeof d->bias; return &d->bias;
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: *size = sizeof d->bias_batch_stride; return &d->bias_batch_stride;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: *size = sizeof d->aux; return &d->aux;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: *size = sizeof d->aux_ld; return &d->aux_ld;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE: *size = sizeof d->aux_batch_stride; return &d->aux_batch_stride;
    case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET: *size = sizeof d->sm_count; return &d->sm_count;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE: *size = sizeof d->aux_type; return &d->aux_type;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: *size = sizeof d->bias_type; return &d->bias_type;
    /* the alpha-vector, fp8 scaling, amax and emulation attributes exist
     * but are not emulated: refusing them beats ignoring them */
    case CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE:
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_C_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER:
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM:
    case CUBLASLT_MATMUL_DESC_A_SCALE_MODE:
    case CUBLASLT_MATMUL_DESC_B_SCALE_MODE:
    case CUBLASLT_MATMUL_DESC_C_SCALE_MODE:
    case CUBLASLT_MATMUL_DESC_D_SCALE_MODE:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE:
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE:
    case CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR:
        *st = CUBLAS_STATUS_NOT_SUPPORTED;
        return NULL;
    }
    *st = CUBLAS_STATUS_INVALID_VALUE;
    return NULL;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType)
{
    if (!matmulDesc) return CUBLAS_STATUS_INVALID_VALUE;
    lt_desc *d = (lt_desc *)calloc(1, sizeof *d);
    if (!d) return CUBLAS_STATUS_ALLOC_FAILED;
    d->compute = computeType;
    d->scale = scaleType;
    d->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    d->transa = d->transb = d->transc = CUBLAS_OP_N;
    d->fill_mode = CUBLAS_FILL_MODE_FULL;
    d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    d->aux_type = -1; /* -1: the type of D, as documented */
    d->bias_type = -1;
    *matmulDesc = (cublasLtMatmulDesc_t)(void *)d;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)
{
    free(desc_of(matmulDesc));
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t sizeInBytes)
{
    return set_attribute(desc_of(matmulDesc), desc_field, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              void *buf, size_t sizeInBytes, size_t *sizeWritten)
{
    return get_attribute(desc_of(matmulDesc), desc_field, attr, buf, sizeInBytes, sizeWritten);
}

static void *layout_field(lt_layout *l, cublasLtMatrixLayoutAttribute_t attr, size_t *size, cublasStatus_t *st)
{
    switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: *size = sizeof l->type; return &l->type;
    case CUBLASLT_MATRIX_LAYOUT_ORDER: *size = sizeof l->order; return &l->order;
    case CUBLASLT_MATRIX_LAYOUT_ROWS: *size = sizeof l->rows; return &l->rows;
    case CUBLASLT_MATRIX_LAYOUT_COLS: *size = sizeof l->cols; return &l->cols;
    case CUBLASLT_MATRIX_LAYOUT_LD: *size = sizeof l->ld; return &l->ld;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: *size = sizeof l->batch; return &l->batch;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: *size = sizeof l->stride; return &l->stride;
    case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET: *size = sizeof l->plane_offset; return &l->plane_offset;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_MODE: *size = sizeof l->batch_mode; return &l->batch_mode;
    }
    *st = CUBLAS_STATUS_INVALID_VALUE;
    return NULL;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld)
{
    if (!matLayout) return CUBLAS_STATUS_INVALID_VALUE;
    lt_layout *l = (lt_layout *)calloc(1, sizeof *l);
    if (!l) return CUBLAS_STATUS_ALLOC_FAILED;
    l->type = (uint32_t)type;
    l->order = CUBLASLT_ORDER_COL;
    l->rows = rows;
    l->cols = cols;
    l->ld = ld;
    l->batch = 1;
    l->stride = 0;
    l->batch_mode = CUBLASLT_BATCH_MODE_STRIDED;
    *matLayout = (cublasLtMatrixLayout_t)(void *)l;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout)
{
    free(layout_of(matLayout));
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr, const void *buf,
                                                size_t sizeInBytes)
{
    return set_attribute(layout_of(matLayout), layout_field, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr, void *buf, size_t sizeInBytes,
                                                size_t *sizeWritten)
{
    return get_attribute(layout_of(matLayout), layout_field, attr, buf, sizeInBytes, sizeWritten);
}

static void *pref_field(lt_pref *p, cublasLtMatmulPreferenceAttributes_t attr, size_t *size, cublasStatus_t *st)
{
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE: *size = sizeof p->search_mode; return &p->search_mode;
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: *size = sizeof p->max_workspace; return &p->max_workspace;
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK: *size = sizeof p->reduction_mask; return &p->reduction_mask;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: *size = sizeof p->align[0]; return &p->align[0];
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: *size = sizeof p->align[1]; return &p->align[1];
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: *size = sizeof p->align[2]; return &p->align[2];
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: *size = sizeof p->align[3]; return &p->align[3];
    case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT: *size = sizeof p->max_waves; return &p->max_waves;
    case CUBLASLT_MATMUL_PREF_IMPL_MASK: *size = sizeof p->impl_mask; return &p->impl_mask;
    }
    *st = CUBLAS_STATUS_INVALID_VALUE;
    return NULL;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)
{
    if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
    lt_pref *p = (lt_pref *)calloc(1, sizeof *p);
    if (!p) return CUBLAS_STATUS_ALLOC_FAILED;
    p->max_workspace = 0; /* documented default: no workspace allowed */
    p->reduction_mask = 0xffffffffu;
    for (int i = 0; i < 4; i++) p->align[i] = 256;
    p->impl_mask = ~(uint64_t)0;
    *pref = (cublasLtMatmulPreference_t)(void *)p;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
{
    free(pref_of(pref));
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t sizeInBytes)
{
    return set_attribute(pref_of(pref), pref_field, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, void *buf,
                                                    size_t sizeInBytes, size_t *sizeWritten)
{
    return get_attribute(pref_of(pref), pref_field, attr, buf, sizeInBytes, sizeWritten);
}

/* ---- the problem ------------------------------------------------------------------------------ */

/* What an epilogue does, decoded once. */
struct lt_epi {
    bool bias_in;   /* add bias[i] */
    bool relu, gelu;
    bool aux_out;   /* store the activation's input */
    bool dgelu;     /* multiply by gelu'(aux) */
    bool bgrad_d;   /* bias = row sums of D */
    bool bgrad_a, bgrad_b;
};

/* Decodes e; CUBLAS_STATUS_NOT_SUPPORTED for the documented ones left
 * out, CUBLAS_STATUS_INVALID_VALUE for values that are no epilogue. */
static cublasStatus_t decode_epilogue(uint32_t e, lt_epi *x)
{
    memset(x, 0, sizeof *x);
    switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_RELU: x->relu = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_BIAS: x->bias_in = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_RELU_BIAS: x->relu = x->bias_in = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_GELU: x->gelu = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_GELU_AUX: x->gelu = x->aux_out = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_GELU_BIAS: x->gelu = x->bias_in = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: x->gelu = x->aux_out = x->bias_in = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_DGELU: x->dgelu = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_DGELU_BGRAD: x->dgelu = x->bgrad_d = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_BGRADA: x->bgrad_a = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_BGRADB: x->bgrad_b = true; return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_RELU_AUX:
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
    case CUBLASLT_EPILOGUE_DRELU:
    case CUBLASLT_EPILOGUE_DRELU_BGRAD:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* One matmul, checked, with everything the queued work needs by value. */
struct lt_plan {
    lt_epi epi;
    bool f64;
    bool ta, tb;
    int64_t m, n, k, batch;
    cudaDataType at, bt, ct, dt, bias_t, aux_t;
    int64_t lda, ldb, ldc, ldd, sa, sb, sc, sd;
    const void *bias;  /* read (BIAS) or written (BGRAD): one pointer */
    void *aux;
    int64_t aux_ld, bias_stride, aux_stride;
    /* filled by cublasLtMatmul only */
    const void *A, *B, *C;
    void *D;
    double alpha, beta;
    void *workspace;
    size_t workspace_size;
};

static bool is_op(int32_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

/* The type combinations cublasLtMatmul documents for real types, within
 * what the emulator computes: *f64 for double scalars and accumulation. */
static cublasStatus_t check_types(const lt_desc *d, cudaDataType at, cudaDataType bt, cudaDataType ct,
                                  cudaDataType dt, bool *f64)
{
    if (ct != dt || at != bt) return CUBLAS_STATUS_NOT_SUPPORTED;
    switch (d->compute) {
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
        *f64 = true;
        return d->scale == CUDA_R_64F && at == CUDA_R_64F && dt == CUDA_R_64F ? CUBLAS_STATUS_SUCCESS
                                                                               : CUBLAS_STATUS_NOT_SUPPORTED;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
        *f64 = false;
        return d->scale == CUDA_R_32F && emu::f32_gemm_types(at, dt) ? CUBLAS_STATUS_SUCCESS
                                                                      : CUBLAS_STATUS_NOT_SUPPORTED;
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
        /* computed in full float32 here */
        *f64 = false;
        return d->scale == CUDA_R_32F && at == CUDA_R_32F && dt == CUDA_R_32F ? CUBLAS_STATUS_SUCCESS
                                                                               : CUBLAS_STATUS_NOT_SUPPORTED;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

/* The checks cublasLtMatmul and the heuristic share. */
static cublasStatus_t make_plan(cublasLtMatmulDesc_t computeDesc, cublasLtMatrixLayout_t Adesc,
                                cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
                                cublasLtMatrixLayout_t Ddesc, lt_plan *p)
{
    memset(p, 0, sizeof *p);
    if (!computeDesc || !Adesc || !Bdesc || !Cdesc || !Ddesc) return CUBLAS_STATUS_INVALID_VALUE;
    const lt_desc *d = desc_of(computeDesc);
    const lt_layout *la = layout_of(Adesc), *lb = layout_of(Bdesc), *lc = layout_of(Cdesc), *ld = layout_of(Ddesc);
    const lt_layout *all[4] = {la, lb, lc, ld};

    if (!is_op(d->transa) || !is_op(d->transb) || !is_op(d->transc)) return CUBLAS_STATUS_INVALID_VALUE;
    cublasStatus_t st = decode_epilogue(d->epilogue, &p->epi);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    /* documented limits of the library (TRANSC) and of this emulator */
    if (d->transc != CUBLAS_OP_N || d->fill_mode != CUBLAS_FILL_MODE_FULL ||
        d->pointer_mode != CUBLASLT_POINTER_MODE_HOST)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    for (int i = 0; i < 4; i++)
        if (all[i]->order != CUBLASLT_ORDER_COL || all[i]->batch_mode != CUBLASLT_BATCH_MODE_STRIDED ||
            all[i]->plane_offset != 0)
            return CUBLAS_STATUS_NOT_SUPPORTED;
    st = check_types(d, (cudaDataType)la->type, (cudaDataType)lb->type, (cudaDataType)lc->type,
                     (cudaDataType)ld->type, &p->f64);
    if (st != CUBLAS_STATUS_SUCCESS) return st;

    /* shapes: op(A) m x k, op(B) k x n, C and D m x n */
    for (int i = 0; i < 4; i++)
        if (all[i]->rows > INT32_MAX || all[i]->cols > INT32_MAX || all[i]->ld < 0 ||
            (uint64_t)all[i]->ld < all[i]->rows || all[i]->batch < 1)
            return CUBLAS_STATUS_INVALID_VALUE;
    p->ta = d->transa != CUBLAS_OP_N;
    p->tb = d->transb != CUBLAS_OP_N;
    p->m = (int64_t)ld->rows;
    p->n = (int64_t)ld->cols;
    p->k = (int64_t)(p->ta ? la->rows : la->cols);
    int64_t am = (int64_t)(p->ta ? la->cols : la->rows);
    int64_t bk = (int64_t)(p->tb ? lb->cols : lb->rows), bn = (int64_t)(p->tb ? lb->rows : lb->cols);
    if (am != p->m || bk != p->k || bn != p->n || lc->rows != ld->rows || lc->cols != ld->cols)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (la->batch != ld->batch || lb->batch != ld->batch || lc->batch != ld->batch)
        return CUBLAS_STATUS_INVALID_VALUE;

    p->batch = ld->batch;
    p->at = (cudaDataType)la->type;
    p->bt = (cudaDataType)lb->type;
    p->ct = (cudaDataType)lc->type;
    p->dt = (cudaDataType)ld->type;
    p->lda = la->ld;
    p->ldb = lb->ld;
    p->ldc = lc->ld;
    p->ldd = ld->ld;
    p->sa = la->stride;
    p->sb = lb->stride;
    p->sc = lc->stride;
    p->sd = ld->stride;

    /* the epilogue's vectors */
    const lt_epi &e = p->epi;
    if (e.bias_in || e.bgrad_d || e.bgrad_a || e.bgrad_b) {
        if (!d->bias) return CUBLAS_STATUS_INVALID_VALUE;
        p->bias = d->bias;
        p->bias_stride = d->bias_batch_stride;
        if (d->bias_type == -1 || d->bias_type == (int32_t)p->dt)
            p->bias_t = p->dt;
        else if (d->bias_type == CUDA_R_32F && (p->dt == CUDA_R_16F || p->dt == CUDA_R_16BF))
            p->bias_t = CUDA_R_32F;
        else
            return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (e.aux_out || e.dgelu) {
        /* the GELU input matrix: ld a multiple of 8, at least D's rows */
        if (!d->aux || d->aux_ld < p->m || d->aux_ld % 8 != 0) return CUBLAS_STATUS_INVALID_VALUE;
        if (p->batch > 1 && d->aux_batch_stride % 8 != 0) return CUBLAS_STATUS_INVALID_VALUE;
        if (d->aux_type != -1 && d->aux_type != (int32_t)p->dt) return CUBLAS_STATUS_NOT_SUPPORTED;
        p->aux = d->aux;
        p->aux_t = p->dt;
        p->aux_ld = d->aux_ld;
        p->aux_stride = d->aux_batch_stride;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- the computation -------------------------------------------------------------------------- */

template <typename Acc> static Acc gelu(Acc x)
{
    const Acc k = (Acc)0.7978845608028654; /* sqrt(2/pi) */
    const Acc c = (Acc)0.044715;
    return (Acc)0.5 * x * ((Acc)1 + std::tanh(k * (x + c * x * x * x)));
}

template <typename Acc> static Acc gelu_grad(Acc x)
{
    const Acc k = (Acc)0.7978845608028654;
    const Acc c = (Acc)0.044715;
    Acc t = std::tanh(k * (x + c * x * x * x));
    return (Acc)0.5 * ((Acc)1 + t) + (Acc)0.5 * x * ((Acc)1 - t * t) * k * ((Acc)1 + (Acc)3 * c * x * x);
}

template <typename Acc> static void run_matmul(const lt_plan &p)
{
    const lt_epi &e = p.epi;
    size_t ea = emu::type_size(p.at), eb = emu::type_size(p.bt), ec = emu::type_size(p.ct), ed = emu::type_size(p.dt);
    size_t ebias = emu::type_size(p.bias_t), eaux = emu::type_size(p.aux_t);
    /* the workspace is not needed for the arithmetic, but an algorithm
     * that uses it would fault past the caller's allocation */
    if (p.workspace_size && !emu::device_range(p.workspace, p.workspace_size, "cublasLtMatmul: workspace")) return;
    bool product = p.alpha != 0 && p.k > 0;
    bool read_a = p.k > 0 && (product || e.bgrad_a), read_b = p.k > 0 && (product || e.bgrad_b);
    Acc alpha = (Acc)p.alpha, beta = (Acc)p.beta;
    std::vector<Acc> pa, pb, grad;
    int64_t nbias = e.bgrad_b ? p.n : p.m;
    for (int64_t b = 0; b < p.batch; b++) {
        const void *A = emu::batch_at(p.A, p.sa, b, ea), *B = emu::batch_at(p.B, p.sb, b, eb);
        const void *C = emu::batch_at(p.C, p.sc, b, ec);
        void *D = (void *)emu::batch_at(p.D, p.sd, b, ed);
        void *bias = p.bias ? (void *)emu::batch_at(p.bias, p.bias_stride, b, ebias) : NULL;
        void *aux = p.aux ? (void *)emu::batch_at(p.aux, p.aux_stride, b, eaux) : NULL;
        if (read_a && !emu::matrix_range(A, ea, p.ta ? p.k : p.m, p.ta ? p.m : p.k, p.lda, "cublasLtMatmul: matrix A"))
            return;
        if (read_b && !emu::matrix_range(B, eb, p.tb ? p.n : p.k, p.tb ? p.k : p.n, p.ldb, "cublasLtMatmul: matrix B"))
            return;
        if (p.beta != 0 && !emu::matrix_range(C, ec, p.m, p.n, p.ldc, "cublasLtMatmul: matrix C")) return;
        if (!emu::matrix_range(D, ed, p.m, p.n, p.ldd, "cublasLtMatmul: matrix D")) return;
        if (bias && nbias > 0 && !emu::device_range(bias, (size_t)nbias * ebias, "cublasLtMatmul: bias vector"))
            return;
        if (aux && !emu::matrix_range(aux, eaux, p.m, p.n, p.aux_ld, "cublasLtMatmul: epilogue aux matrix")) return;
        if (read_a) emu::pack(pa, A, p.at, p.lda, p.ta, p.m, p.k);
        if (read_b) emu::pack(pb, B, p.bt, p.ldb, !p.tb, p.n, p.k); /* op(B)^T, n x k */
        grad.assign((size_t)nbias, (Acc)0);

        for (int64_t j = 0; j < p.n; j++) {
            for (int64_t i = 0; i < p.m; i++) {
                Acc v = product ? alpha * emu::dot(&pa[(size_t)(i * p.k)], &pb[(size_t)(j * p.k)], p.k) : (Acc)0;
                if (p.beta != 0) v += beta * (Acc)emu::load(C, p.ct, i + j * p.ldc);
                if (e.bias_in) v += (Acc)emu::load(bias, p.bias_t, i);
                if (e.aux_out) emu::store(aux, p.aux_t, i + j * p.aux_ld, (double)v);
                if (e.relu) v = v < 0 ? (Acc)0 : v;
                if (e.gelu) v = gelu(v);
                if (e.dgelu) v *= gelu_grad((Acc)emu::load(aux, p.aux_t, i + j * p.aux_ld));
                if (e.bgrad_d) grad[(size_t)i] += v;
                emu::store(D, p.dt, i + j * p.ldd, (double)v);
            }
        }
        /* the bias gradients reduce over k: rows of op(A), columns of op(B) */
        if (e.bgrad_a)
            for (int64_t i = 0; i < p.m; i++)
                for (int64_t l = 0; l < p.k; l++) grad[(size_t)i] += pa[(size_t)(i * p.k + l)];
        if (e.bgrad_b)
            for (int64_t j = 0; j < p.n; j++)
                for (int64_t l = 0; l < p.k; l++) grad[(size_t)j] += pb[(size_t)(j * p.k + l)];
        if (e.bgrad_d || e.bgrad_a || e.bgrad_b)
            for (int64_t i = 0; i < nbias; i++) emu::store(bias, p.bias_t, i, (double)grad[(size_t)i]);
    }
}

/* ---- heuristic and matmul --------------------------------------------------------------------- */

static void make_algo(cublasLtMatmulAlgo_t *algo, uint64_t id, size_t workspace)
{
    memset(algo, 0, sizeof *algo);
    algo->data[0] = LT_ALGO_TAG;
    algo->data[1] = id;
    algo->data[2] = workspace;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int *returnAlgoCount)
{
    if (!lightHandle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (requestedAlgoCount <= 0 || !heuristicResultsArray || !returnAlgoCount || !preference)
        return CUBLAS_STATUS_INVALID_VALUE;
    *returnAlgoCount = 0;
    lt_plan p;
    cublasStatus_t st = make_plan(operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    const lt_pref *pref = pref_of(preference);
    /* both algorithms need each matrix aligned to its element size, no more */
    size_t esize[4] = {emu::type_size(p.at), emu::type_size(p.bt), emu::type_size(p.ct), emu::type_size(p.dt)};
    for (int i = 0; i < 4; i++)
        if (pref->align[i] < esize[i]) return CUBLAS_STATUS_NOT_SUPPORTED;
    size_t ws = pref->max_workspace >= LT_WORKSPACE ? LT_WORKSPACE : 0;
    cublasLtMatmulHeuristicResult_t *r = &heuristicResultsArray[0];
    memset(r, 0, sizeof *r);
    make_algo(&r->algo, ws ? 1 : 0, ws);
    r->workspaceSize = ws;
    r->state = CUBLAS_STATUS_SUCCESS;
    r->wavesCount = 1.0f;
    *returnAlgoCount = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                              cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                              cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspaceSizeInBytes,
                              cudaStream_t stream)
{
    if (!lightHandle) return CUBLAS_STATUS_NOT_INITIALIZED;
    lt_plan p;
    cublasStatus_t st = make_plan(computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    /* NULL: an implicit heuristic query with the default preference, which
     * allows no workspace, so algorithm 0 */
    size_t need = 0;
    if (algo) {
        if (algo->data[0] != LT_ALGO_TAG || algo->data[1] > 1) return CUBLAS_STATUS_INVALID_VALUE;
        need = (size_t)algo->data[2];
    }
    if (workspaceSizeInBytes < need) return CUBLAS_STATUS_INVALID_VALUE;
    if (workspaceSizeInBytes > 0 && !workspace) return CUBLAS_STATUS_INVALID_VALUE;
    /* in place needs the same layout for C and D (documented) */
    if (C == D && (p.ldc != p.ldd || p.sc != p.sd)) return CUBLAS_STATUS_INVALID_VALUE;

    p.A = A;
    p.B = B;
    p.C = C;
    p.D = D;
    p.alpha = p.f64 ? *(const double *)alpha : *(const float *)alpha;
    p.beta = p.f64 ? *(const double *)beta : *(const float *)beta;
    p.workspace = workspace;
    p.workspace_size = need;
    cudaError_t e;
    if (p.f64)
        e = emu::submit(stream, "cublasLtMatmul", [p]() { run_matmul<double>(p); });
    else
        e = emu::submit(stream, "cublasLtMatmul", [p]() { run_matmul<float>(p); });
    return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
