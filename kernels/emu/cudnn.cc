/*
 * cudnn.cc — the emulated device's stand-in for cuDNN's legacy convolution
 * API (cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h), compiled against the real
 * headers so that every signature is the toolkit's.
 *
 * What it covers: handles and streams; tensor, filter and convolution
 * descriptors; the heuristics (Get*Algorithm_v7) with their workspace
 * sizes; forward, backward-data and backward-filter convolutions with
 * alpha/beta blending, groups, padding, stride, dilation, both modes
 * (CUDNN_CROSS_CORRELATION, CUDNN_CONVOLUTION), 1-D to 3-D (descriptors of 3
 * to 5 dims).
 *
 * Data configurations (cuDNN's names): FLOAT_CONFIG (float tensors, float
 * arithmetic), DOUBLE_CONFIG (double, double) and PSEUDO_HALF_CONFIG /
 * PSEUDO_BFLOAT16 (half or bfloat16 tensors, float arithmetic, one rounding
 * to the storage type at the end). Anything else (TRUE_HALF, int8, a float
 * tensor with double arithmetic) is CUDNN_STATUS_NOT_SUPPORTED. Tensors may
 * have any positive strides (an NHWC tensor descriptor is a strided NCHW
 * one); a filter in CUDNN_TENSOR_NHWC (KRSC) layout is NOT_SUPPORTED.
 * Tensor-core math types are accepted and reported back, but the arithmetic
 * is plain IEEE float: no TF32 rounding is emulated.
 *
 * Algorithms: each direction has a direct one without workspace and a
 * GEMM one (im2col / col2im) whose column buffer lives in the caller's
 * workspace, so a short or unallocated workspace cannot go unnoticed:
 *   forward         IMPLICIT_GEMM (direct)   GEMM (workspace)
 *   backward data   ALGO_0 (direct)          ALGO_1 (workspace)
 *   backward filter ALGO_0 (direct)          ALGO_1 (workspace)
 * Every other algorithm is NOT_SUPPORTED, as on a GPU where an algorithm
 * does not support the problem.
 *
 * As emu.h asks: arguments are checked at the call (statuses from NVIDIA's
 * documentation of each function), the descriptors' contents and alpha/beta
 * are copied into the queued work, and the work checks every device range
 * before it touches it. The arithmetic gathers the operands into contiguous
 * host buffers of the arithmetic type first, which keeps the loops free of
 * strides and storage types.
 */
#include "emu.h"

#include <cudnn.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <vector>

/* ---- the opaque structs behind the handles ------------------------------------------ */

struct cudnnContext {
    cudaStream_t stream;        /* NULL: the legacy default stream, as after cudnnCreate */
};

struct cudnnTensorStruct {
    bool set;                   /* false until a Set*Descriptor succeeds */
    cudnnDataType_t dt;
    int nd;
    int dim[CUDNN_DIM_MAX];
    int stride[CUDNN_DIM_MAX];  /* in elements */
};

struct cudnnFilterStruct {
    bool set;
    cudnnDataType_t dt;
    cudnnTensorFormat_t format;
    int nd;
    int dim[CUDNN_DIM_MAX];     /* K, C (per group), spatial... */
};

struct cudnnConvolutionStruct {
    bool set;
    int nsp;                    /* the arrayLength: spatial dims */
    int pad[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX], dil[CUDNN_DIM_MAX];
    cudnnConvolutionMode_t mode;
    cudnnDataType_t compute;
    int groups;                 /* 1 unless cudnnSetConvolutionGroupCount says otherwise */
    cudnnMathType_t math;
};

/* ---- storage types ------------------------------------------------------------------ */

/* Bytes per element of the storage types convolutions accept (0: none). */
static size_t storage_size(cudnnDataType_t dt)
{
    switch (dt) {
    case CUDNN_DATA_FLOAT: return 4;
    case CUDNN_DATA_DOUBLE: return 8;
    case CUDNN_DATA_HALF: return 2;
    case CUDNN_DATA_BFLOAT16: return 2;
    default: return 0;
    }
}

/* Whether dt names a cudnnDataType_t at all: a descriptor may hold types
 * that convolutions then refuse (NOT_SUPPORTED), but not garbage (BAD_PARAM). */
static bool valid_data_type(cudnnDataType_t dt)
{
    return (int)dt >= (int)CUDNN_DATA_FLOAT && (int)dt <= (int)CUDNN_DATA_COMPLEX_FP64;
}

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t float_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* IEEE binary16 to float: exact. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (man << 13));        /* inf, NaN */
    if (exp != 0) return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));    /* normal */
    /* subnormal (or zero): man * 2^-24, exact in float */
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
}

/* float to binary16, round to nearest even (what __float2half does). */
static uint16_t float_to_half(float f)
{
    uint32_t u = float_to_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u)                                 /* inf or NaN (kept quiet) */
        return (uint16_t)(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
    if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);  /* rounds past 65504 */
    if (abs < 0x38800000u) {                                /* below 2^-14: subnormal half */
        /* the value in units of 2^-24, rounded to nearest even by the FPU */
        float v = bits_to_float(abs) * 16777216.0f;
        float r = nearbyintf(v);
        return (uint16_t)(sign | (uint16_t)r);
    }
    uint32_t exp = (abs >> 23) - 112, man = abs & 0x7fffff;
    uint32_t h = (exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;  /* a carry into the exponent is right */
    return (uint16_t)(sign | h);
}

static float bf16_to_float(uint16_t b) { return bits_to_float((uint32_t)b << 16); }

/* float to bfloat16, round to nearest even (what __float2bfloat16 does). */
static uint16_t float_to_bf16(float f)
{
    uint32_t u = float_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

static double load_elem(const void *base, cudnnDataType_t dt, int64_t i)
{
    switch (dt) {
    case CUDNN_DATA_FLOAT: return ((const float *)base)[i];
    case CUDNN_DATA_DOUBLE: return ((const double *)base)[i];
    case CUDNN_DATA_HALF: return half_to_float(((const uint16_t *)base)[i]);
    default: return bf16_to_float(((const uint16_t *)base)[i]);
    }
}

/* v is already rounded to the arithmetic type (float unless double), so
 * half and bfloat16 see one rounding from float. */
static void store_elem(void *base, cudnnDataType_t dt, int64_t i, double v)
{
    switch (dt) {
    case CUDNN_DATA_FLOAT: ((float *)base)[i] = (float)v; break;
    case CUDNN_DATA_DOUBLE: ((double *)base)[i] = v; break;
    case CUDNN_DATA_HALF: ((uint16_t *)base)[i] = float_to_half((float)v); break;
    default: ((uint16_t *)base)[i] = float_to_bf16((float)v); break;
    }
}

/* ---- version, errors, handles ------------------------------------------------------- */

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }

const char *cudnnGetErrorString(cudnnStatus_t status)
{
    switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH: return "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH";
    case CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH: return "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH";
    case CUDNN_STATUS_DEPRECATED: return "CUDNN_STATUS_DEPRECATED";
    case CUDNN_STATUS_LICENSE_ERROR: return "CUDNN_STATUS_LICENSE_ERROR";
    case CUDNN_STATUS_RUNTIME_IN_PROGRESS: return "CUDNN_STATUS_RUNTIME_IN_PROGRESS";
    case CUDNN_STATUS_RUNTIME_FP_OVERFLOW: return "CUDNN_STATUS_RUNTIME_FP_OVERFLOW";
    case CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED: return "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER: return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND: return "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND";
    case CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT: return "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT";
    case CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES: return "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES";
    case CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE: return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
    case CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE: return "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN: return "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN";
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE: return "CUDNN_STATUS_NOT_SUPPORTED_SHAPE";
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE: return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED_LAYOUT: return "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT";
    case CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER:
        return "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER";
    case CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART: return "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART";
    case CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH: return "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH";
    case CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING:
        return "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING";
    case CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE:
        return "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE";
    case CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT:
        return "CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT";
    case CUDNN_STATUS_NOT_SUPPORTED_PADDING: return "CUDNN_STATUS_NOT_SUPPORTED_PADDING";
    case CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM: return "CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API:
        return "CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API";
    case CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE:
        return "CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED: return "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED";
    case CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE: return "CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE";
    case CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED:
        return "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED";
    case CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED:
        return "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED";
    case CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM: return "CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM";
    case CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED:
        return "CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    case CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER: return "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER";
    case CUDNN_STATUS_EXECUTION_FAILED_CUBLAS: return "CUDNN_STATUS_EXECUTION_FAILED_CUBLAS";
    case CUDNN_STATUS_EXECUTION_FAILED_CUDART: return "CUDNN_STATUS_EXECUTION_FAILED_CUDART";
    case CUDNN_STATUS_EXECUTION_FAILED_CURAND: return "CUDNN_STATUS_EXECUTION_FAILED_CURAND";
    default: break;
    }
    /* cuDNN 9 composes codes from a category and a specific error: name the category */
    switch (CUDNN_STATUS_CATEGORY(status)) {
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_UNKNOWN";
    }
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)
{
    if (!handle) return CUDNN_STATUS_BAD_PARAM;
    cudnnContext *h = new cudnnContext();
    h->stream = NULL;
    *handle = h;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle)
{
    if (!handle) return CUDNN_STATUS_BAD_PARAM;
    delete handle;
    return CUDNN_STATUS_SUCCESS;
}

/* The stream is not checked here: emu::submit refuses a bad one at the
 * first computation, which is where the runtime knows streams. */
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId)
{
    return emu::set_stream(handle, streamId, CUDNN_STATUS_SUCCESS, CUDNN_STATUS_BAD_PARAM);
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t *streamId)
{
    return emu::get_stream(handle, streamId, CUDNN_STATUS_SUCCESS, CUDNN_STATUS_BAD_PARAM, CUDNN_STATUS_BAD_PARAM);
}

/* ---- tensor descriptors ------------------------------------------------------------- */

/* cudnnCreate*Descriptor: a zeroed descriptor (not set) into *desc. */
template <typename T>
static cudnnStatus_t new_descriptor(T **desc)
{
    if (!desc) return CUDNN_STATUS_BAD_PARAM;
    T *d = new T();
    memset(d, 0, sizeof *d);
    *desc = d;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *tensorDesc)
{
    return new_descriptor(tensorDesc);
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc)
{
    delete tensorDesc;          /* NULL is allowed, as in cuDNN */
    return CUDNN_STATUS_SUCCESS;
}

/* The documented limit: a tensor's elements must be addressable with int
 * (cuDNN: "the total size of a tensor including the potential padding
 * between dimensions is limited to 2 Giga-elements of type datatype"). */
static bool tensor_fits(int nd, const int *dim, const int *stride)
{
    int64_t last = 0;
    for (int i = 0; i < nd; i++) last += (int64_t)(dim[i] - 1) * (stride[i] > 0 ? stride[i] : -stride[i]);
    return last < INT32_MAX;
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int nbDims,
                                         const int dimA[], const int strideA[])
{
    if (!tensorDesc || !dimA || !strideA) return CUDNN_STATUS_BAD_PARAM;
    if (!valid_data_type(dataType)) return CUDNN_STATUS_BAD_PARAM;
    if (nbDims > CUDNN_DIM_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
    if (nbDims < 1) return CUDNN_STATUS_BAD_PARAM;
    for (int i = 0; i < nbDims; i++)
        if (dimA[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
    if (!tensor_fits(nbDims, dimA, strideA)) return CUDNN_STATUS_NOT_SUPPORTED;
    tensorDesc->dt = dataType;
    tensorDesc->nd = nbDims;
    for (int i = 0; i < nbDims; i++) {
        tensorDesc->dim[i] = dimA[i];
        tensorDesc->stride[i] = strideA[i];
    }
    tensorDesc->set = true;
    return CUDNN_STATUS_SUCCESS;
}

/* The packed strides of a format: NCHW is row-major over (N, C, spatial...),
 * NHWC puts C innermost. */
static void packed_strides(cudnnTensorFormat_t format, int nd, const int *dim, int *stride)
{
    if (format == CUDNN_TENSOR_NHWC) {
        int s = dim[1];
        stride[1] = 1;
        for (int i = nd - 1; i >= 2; i--) { stride[i] = s; s *= dim[i]; }
        stride[0] = s;
    } else {
        int s = 1;
        for (int i = nd - 1; i >= 0; i--) { stride[i] = s; s *= dim[i]; }
    }
}

cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                                           cudnnDataType_t dataType, int nbDims, const int dimA[])
{
    if (!tensorDesc || !dimA) return CUDNN_STATUS_BAD_PARAM;
    if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) {
        /* NCHW_VECT_C needs the vectorised int8 types this stand-in lacks */
        return format == CUDNN_TENSOR_NCHW_VECT_C ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_BAD_PARAM;
    }
    if (nbDims > CUDNN_DIM_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
    if (nbDims < 3) return CUDNN_STATUS_BAD_PARAM;
    for (int i = 0; i < nbDims; i++)
        if (dimA[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
    /* the product may overflow int before tensor_fits sees it */
    int64_t total = 1;
    for (int i = 0; i < nbDims; i++) {
        total *= dimA[i];
        if (total > INT32_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
    }
    int stride[CUDNN_DIM_MAX];
    packed_strides(format, nbDims, dimA, stride);
    return cudnnSetTensorNdDescriptor(tensorDesc, dataType, nbDims, dimA, stride);
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                                         cudnnDataType_t dataType, int n, int c, int h, int w)
{
    int dim[4] = {n, c, h, w};
    return cudnnSetTensorNdDescriptorEx(tensorDesc, format, dataType, 4, dim);
}

cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int n,
                                           int c, int h, int w, int nStride, int cStride, int hStride, int wStride)
{
    int dim[4] = {n, c, h, w}, stride[4] = {nStride, cStride, hStride, wStride};
    return cudnnSetTensorNdDescriptor(tensorDesc, dataType, 4, dim, stride);
}

cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t tensorDesc, int nbDimsRequested,
                                         cudnnDataType_t *dataType, int *nbDims, int dimA[], int strideA[])
{
    if (!tensorDesc || !tensorDesc->set || !dataType || !nbDims || nbDimsRequested < 0) return CUDNN_STATUS_BAD_PARAM;
    if (nbDimsRequested > 0 && (!dimA || !strideA)) return CUDNN_STATUS_BAD_PARAM;
    *dataType = tensorDesc->dt;
    *nbDims = tensorDesc->nd;
    for (int i = 0; i < nbDimsRequested && i < tensorDesc->nd; i++) {
        dimA[i] = tensorDesc->dim[i];
        strideA[i] = tensorDesc->stride[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t *dataType,
                                         int *n, int *c, int *h, int *w, int *nStride, int *cStride, int *hStride,
                                         int *wStride)
{
    if (!tensorDesc || !tensorDesc->set || !dataType || !n || !c || !h || !w || !nStride || !cStride || !hStride ||
        !wStride)
        return CUDNN_STATUS_BAD_PARAM;
    if (tensorDesc->nd != 4) return CUDNN_STATUS_BAD_PARAM;
    const cudnnTensorStruct *t = tensorDesc;
    *dataType = t->dt;
    *n = t->dim[0]; *c = t->dim[1]; *h = t->dim[2]; *w = t->dim[3];
    *nStride = t->stride[0]; *cStride = t->stride[1]; *hStride = t->stride[2]; *wStride = t->stride[3];
    return CUDNN_STATUS_SUCCESS;
}

/* ---- filter descriptors ------------------------------------------------------------- */

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *filterDesc)
{
    return new_descriptor(filterDesc);
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc)
{
    delete filterDesc;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                         cudnnTensorFormat_t format, int nbDims, const int filterDimA[])
{
    if (!filterDesc || !filterDimA) return CUDNN_STATUS_BAD_PARAM;
    if (!valid_data_type(dataType)) return CUDNN_STATUS_BAD_PARAM;
    if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC && format != CUDNN_TENSOR_NCHW_VECT_C)
        return CUDNN_STATUS_BAD_PARAM;
    if (nbDims > CUDNN_DIM_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
    if (nbDims < 3) return CUDNN_STATUS_BAD_PARAM;
    int64_t total = 1;
    for (int i = 0; i < nbDims; i++) {
        if (filterDimA[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
        total *= filterDimA[i];
        if (total > INT32_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
    }
    filterDesc->dt = dataType;
    filterDesc->format = format;
    filterDesc->nd = nbDims;
    for (int i = 0; i < nbDims; i++) filterDesc->dim[i] = filterDimA[i];
    filterDesc->set = true;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w)
{
    int dim[4] = {k, c, h, w};
    return cudnnSetFilterNdDescriptor(filterDesc, dataType, format, 4, dim);
}

cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t filterDesc, int nbDimsRequested,
                                         cudnnDataType_t *dataType, cudnnTensorFormat_t *format, int *nbDims,
                                         int filterDimA[])
{
    if (!filterDesc || !filterDesc->set || !dataType || !format || !nbDims || nbDimsRequested < 0)
        return CUDNN_STATUS_BAD_PARAM;
    if (nbDimsRequested > 0 && !filterDimA) return CUDNN_STATUS_BAD_PARAM;
    *dataType = filterDesc->dt;
    *format = filterDesc->format;
    *nbDims = filterDesc->nd;
    for (int i = 0; i < nbDimsRequested && i < filterDesc->nd; i++) filterDimA[i] = filterDesc->dim[i];
    return CUDNN_STATUS_SUCCESS;
}

/* ---- convolution descriptors -------------------------------------------------------- */

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *convDesc)
{
    cudnnStatus_t st = new_descriptor(convDesc);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    (*convDesc)->groups = 1;
    (*convDesc)->math = CUDNN_DEFAULT_MATH;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc)
{
    delete convDesc;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc, int arrayLength,
                                              const int padA[], const int filterStrideA[], const int dilationA[],
                                              cudnnConvolutionMode_t mode, cudnnDataType_t computeType)
{
    if (!convDesc || arrayLength < 0) return CUDNN_STATUS_BAD_PARAM;
    if (arrayLength > CUDNN_DIM_MAX - 2) return CUDNN_STATUS_NOT_SUPPORTED;
    if (arrayLength > 0 && (!padA || !filterStrideA || !dilationA)) return CUDNN_STATUS_BAD_PARAM;
    if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_BAD_PARAM;
    if (!valid_data_type(computeType)) return CUDNN_STATUS_BAD_PARAM;
    for (int i = 0; i < arrayLength; i++)
        if (padA[i] < 0 || filterStrideA[i] <= 0 || dilationA[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
    convDesc->nsp = arrayLength;
    for (int i = 0; i < arrayLength; i++) {
        convDesc->pad[i] = padA[i];
        convDesc->stride[i] = filterStrideA[i];
        convDesc->dil[i] = dilationA[i];
    }
    convDesc->mode = mode;
    convDesc->compute = computeType;
    convDesc->set = true;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u,
                                              int v, int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType)
{
    int pad[2] = {pad_h, pad_w}, stride[2] = {u, v}, dil[2] = {dilation_h, dilation_w};
    return cudnnSetConvolutionNdDescriptor(convDesc, 2, pad, stride, dil, mode, computeType);
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount)
{
    if (!convDesc || groupCount < 1) return CUDNN_STATUS_BAD_PARAM;
    convDesc->groups = groupCount;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int *groupCount)
{
    if (!convDesc || !groupCount) return CUDNN_STATUS_BAD_PARAM;
    *groupCount = convDesc->groups;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType)
{
    if (!convDesc) return CUDNN_STATUS_BAD_PARAM;
    if (mathType != CUDNN_DEFAULT_MATH && mathType != CUDNN_TENSOR_OP_MATH &&
        mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && mathType != CUDNN_FMA_MATH)
        return CUDNN_STATUS_BAD_PARAM;
    convDesc->math = mathType;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t *mathType)
{
    if (!convDesc || !mathType) return CUDNN_STATUS_BAD_PARAM;
    *mathType = convDesc->math;
    return CUDNN_STATUS_SUCCESS;
}

/* The output sizes of a forward convolution of x by w: N, K, then
 * 1 + (in + 2 pad - ((k - 1) dil + 1)) / stride per spatial dim. The
 * checks are those cudnnGetConvolutionNdForwardOutputDim documents:
 * matching ranks, input channels = filter channels * groups, and a dilated
 * kernel that fits in the padded input. */
static cudnnStatus_t forward_output_dims(const cudnnConvolutionStruct *cd, const cudnnTensorStruct *x,
                                         const cudnnFilterStruct *w, int *out)
{
    if (!cd || !x || !w || !cd->set || !x->set || !w->set) return CUDNN_STATUS_BAD_PARAM;
    if (x->nd < 3 || w->nd != x->nd || cd->nsp + 2 != x->nd) return CUDNN_STATUS_BAD_PARAM;
    if ((int64_t)w->dim[1] * cd->groups != x->dim[1]) return CUDNN_STATUS_BAD_PARAM;
    out[0] = x->dim[0];
    out[1] = w->dim[0];
    for (int i = 0; i < cd->nsp; i++) {
        int64_t span = (int64_t)(w->dim[2 + i] - 1) * cd->dil[i] + 1;
        int64_t room = (int64_t)x->dim[2 + i] + 2 * (int64_t)cd->pad[i];
        if (span > room) return CUDNN_STATUS_BAD_PARAM;
        out[2 + i] = (int)(1 + (room - span) / cd->stride[i]);
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                    const cudnnTensorDescriptor_t inputTensorDesc,
                                                    const cudnnFilterDescriptor_t filterDesc, int nbDims,
                                                    int tensorOuputDimA[])
{
    if (!tensorOuputDimA || !inputTensorDesc) return CUDNN_STATUS_BAD_PARAM;
    if (nbDims != inputTensorDesc->nd) return CUDNN_STATUS_BAD_PARAM;
    int out[CUDNN_DIM_MAX];
    cudnnStatus_t st = forward_output_dims(convDesc, inputTensorDesc, filterDesc, out);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    for (int i = 0; i < nbDims; i++) tensorOuputDimA[i] = out[i];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                    const cudnnTensorDescriptor_t inputTensorDesc,
                                                    const cudnnFilterDescriptor_t filterDesc, int *n, int *c,
                                                    int *h, int *w)
{
    if (!n || !c || !h || !w || !inputTensorDesc) return CUDNN_STATUS_BAD_PARAM;
    if (inputTensorDesc->nd != 4) return CUDNN_STATUS_BAD_PARAM;
    int out[CUDNN_DIM_MAX];
    cudnnStatus_t st = forward_output_dims(convDesc, inputTensorDesc, filterDesc, out);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    *n = out[0]; *c = out[1]; *h = out[2]; *w = out[3];
    return CUDNN_STATUS_SUCCESS;
}

/* ---- the problem, checked and flattened --------------------------------------------- */

enum conv_op { OP_FORWARD, OP_BACKWARD_DATA, OP_BACKWARD_FILTER };

/* Everything the queued work needs, by value. Spatial dims are padded at
 * the front to three (size 1, pad 0, stride 1, dilation 1), so one 3-D
 * implementation serves 1-D, 2-D and 3-D. */
struct conv_problem {
    cudnnDataType_t dt;         /* storage type of x, w and y */
    bool f64;                   /* double arithmetic (DOUBLE_CONFIG); else float */
    bool flip;                  /* CUDNN_CONVOLUTION: the kernel is applied mirrored */
    int n, c, k, groups;        /* batch, input channels, output channels */
    int in[3], ker[3], out[3];
    int pad[3], stride[3], dil[3];
    int64_t xs[5], ys[5];       /* element strides of x and y over N, C, D, H, W */
    size_t x_bytes, y_bytes, w_bytes;   /* the bytes each tensor's elements reach */
};

static int64_t volume3(const int *d) { return (int64_t)d[0] * d[1] * d[2]; }

/* Bytes from a strided tensor's first element to the end of its last. */
static size_t tensor_bytes(const cudnnTensorStruct *t)
{
    int64_t last = 0;
    for (int i = 0; i < t->nd; i++) last += (int64_t)(t->dim[i] - 1) * t->stride[i];
    return (size_t)(last + 1) * storage_size(t->dt);
}

/* Checks x, w, conv and y against each other as the three convolution
 * functions' documentation lists, and flattens them into p. The documented
 * statuses differ by direction in two places, kept here: a y of the wrong
 * spatial size is NOT_SUPPORTED for the forward call but BAD_PARAM for the
 * backward ones, and output channels that are not a multiple of the group
 * count are NOT_SUPPORTED for backward data but BAD_PARAM otherwise.
 * Ranks of 3 to 5 are accepted (cuDNN documents 4 and 5; a 3-D descriptor
 * is the 1-D case the brief of this stand-in asks for). */
static cudnnStatus_t make_problem(conv_op op, const cudnnTensorStruct *x, const cudnnFilterStruct *w,
                                  const cudnnConvolutionStruct *cd, const cudnnTensorStruct *y, conv_problem *p)
{
    if (!x || !w || !cd || !y) return CUDNN_STATUS_BAD_PARAM;
    if (!x->set || !w->set || !cd->set || !y->set) return CUDNN_STATUS_BAD_PARAM;
    if (x->nd != y->nd || x->nd != w->nd || x->nd < 3 || x->nd != cd->nsp + 2) return CUDNN_STATUS_BAD_PARAM;
    if (x->dt != y->dt || x->dt != w->dt) return CUDNN_STATUS_BAD_PARAM;
    int nd = x->nd;
    if (nd > 5) return CUDNN_STATUS_NOT_SUPPORTED;
    for (int i = 0; i < nd; i++)
        if (x->stride[i] <= 0 || y->stride[i] <= 0) return CUDNN_STATUS_NOT_SUPPORTED;
    if (w->format != CUDNN_TENSOR_NCHW) return CUDNN_STATUS_NOT_SUPPORTED;
    bool f32_config = (x->dt == CUDNN_DATA_FLOAT || x->dt == CUDNN_DATA_HALF || x->dt == CUDNN_DATA_BFLOAT16) &&
                      cd->compute == CUDNN_DATA_FLOAT;
    bool f64_config = x->dt == CUDNN_DATA_DOUBLE && cd->compute == CUDNN_DATA_DOUBLE;
    if (!f32_config && !f64_config) return CUDNN_STATUS_NOT_SUPPORTED;
    if (w->dim[0] % cd->groups != 0)
        return op == OP_BACKWARD_DATA ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_BAD_PARAM;
    int expect[CUDNN_DIM_MAX];
    cudnnStatus_t st = forward_output_dims(cd, x, w, expect);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (y->dim[0] != expect[0] || y->dim[1] != expect[1]) return CUDNN_STATUS_BAD_PARAM;
    for (int i = 2; i < nd; i++)
        if (y->dim[i] != expect[i])
            return op == OP_FORWARD ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_BAD_PARAM;

    memset(p, 0, sizeof *p);
    p->dt = x->dt;
    p->f64 = f64_config;
    p->flip = cd->mode == CUDNN_CONVOLUTION;
    p->n = x->dim[0];
    p->c = x->dim[1];
    p->k = w->dim[0];
    p->groups = cd->groups;
    p->xs[0] = x->stride[0]; p->xs[1] = x->stride[1];
    p->ys[0] = y->stride[0]; p->ys[1] = y->stride[1];
    int lead = 5 - nd;          /* padded spatial dims in front */
    for (int s = 0; s < 3; s++) {
        int i = s - lead;       /* the descriptor's spatial index, or < 0 */
        p->in[s] = i < 0 ? 1 : x->dim[2 + i];
        p->ker[s] = i < 0 ? 1 : w->dim[2 + i];
        p->out[s] = i < 0 ? 1 : y->dim[2 + i];
        p->pad[s] = i < 0 ? 0 : cd->pad[i];
        p->stride[s] = i < 0 ? 1 : cd->stride[i];
        p->dil[s] = i < 0 ? 1 : cd->dil[i];
        p->xs[2 + s] = i < 0 ? 0 : x->stride[2 + i];
        p->ys[2 + s] = i < 0 ? 0 : y->stride[2 + i];
    }
    p->x_bytes = tensor_bytes(x);
    p->y_bytes = tensor_bytes(y);
    int64_t wn = 1;
    for (int i = 0; i < nd; i++) wn *= w->dim[i];
    p->w_bytes = (size_t)wn * storage_size(w->dt);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- algorithms and their workspace ------------------------------------------------- */

/* The column buffer of the GEMM algorithms: one (sample, group) at a time,
 * rows = channels per group x kernel taps, columns = output positions, in
 * the arithmetic type. */
static size_t column_bytes(const conv_problem *p)
{
    size_t rows = (size_t)(p->c / p->groups) * (size_t)volume3(p->ker);
    return rows * (size_t)volume3(p->out) * (p->f64 ? sizeof(double) : sizeof(float));
}

/* What tells the three directions apart in the calls that serve all three
 * (heuristics, workspace sizes, the convolutions themselves). */
template <typename Algo>
struct conv_direction {
    conv_op op;
    const char *call;           /* the convolution's function, naming its queued work */
    Algo direct, gemm;          /* the two supported algorithms: without and with workspace */
    int count;                  /* the size of the direction's enumeration */
    bool direct_deterministic;  /* cuDNN's determinism of the direct one on a GPU */
};

static const conv_direction<cudnnConvolutionFwdAlgo_t> FORWARD = {
    OP_FORWARD, "cudnnConvolutionForward", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
    CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, true};
static const conv_direction<cudnnConvolutionBwdDataAlgo_t> BACKWARD_DATA = {
    OP_BACKWARD_DATA, "cudnnConvolutionBackwardData", CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, false};
static const conv_direction<cudnnConvolutionBwdFilterAlgo_t> BACKWARD_FILTER = {
    OP_BACKWARD_FILTER, "cudnnConvolutionBackwardFilter", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, false};

/* Workspace of each supported algorithm; false for one this stand-in has not. */
template <typename Algo>
static bool algorithm_workspace(const conv_problem *p, const conv_direction<Algo> &d, Algo algo, size_t *bytes)
{
    if (algo == d.direct) { *bytes = 0; return true; }
    if (algo == d.gemm) { *bytes = column_bytes(p); return true; }
    return false;
}

/* The problem a call in direction d describes, checked and flattened into p
 * (make_problem), and the workspace algo needs into *need: NOT_SUPPORTED
 * for an algorithm this stand-in has not. */
template <typename Algo>
static cudnnStatus_t problem_and_workspace(const conv_direction<Algo> &d, const cudnnTensorStruct *x,
                                           const cudnnFilterStruct *w, const cudnnConvolutionStruct *cd,
                                           const cudnnTensorStruct *y, Algo algo, conv_problem *p, size_t *need)
{
    cudnnStatus_t st = make_problem(d.op, x, w, cd, y, p);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    return algorithm_workspace(p, d, algo, need) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
}

/* Past this the GEMM algorithm is ranked after the direct one, as the
 * heuristics would not put a huge workspace first. */
#define WORKSPACE_PREFERRED_LIMIT ((size_t)1 << 30)

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int *count)
{
    if (!handle || !count) return CUDNN_STATUS_BAD_PARAM;
    *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle, int *count)
{
    if (!handle || !count) return CUDNN_STATUS_BAD_PARAM;
    *count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle, int *count)
{
    if (!handle || !count) return CUDNN_STATUS_BAD_PARAM;
    *count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    return CUDNN_STATUS_SUCCESS;
}

/* The heuristics' answer for direction d (the three calls below): the
 * problem x, w, cd, y describe, checked, then the two supported algorithms
 * ranked (the GEMM one first unless its workspace is huge), then the rest
 * of the enumeration with CUDNN_STATUS_NOT_SUPPORTED, as cuDNN lists every
 * algorithm. The determinism reported is cuDNN's for the algorithm (ALGO_0
 * of the backward passes uses atomics on a GPU), not this stand-in's,
 * which is always deterministic. time is -1: nothing was timed. */
template <typename Algo, typename Perf>
static cudnnStatus_t find_algorithms(cudnnHandle_t handle, const conv_direction<Algo> &d, const cudnnTensorStruct *x,
                                     const cudnnFilterStruct *w, const cudnnConvolutionStruct *cd,
                                     const cudnnTensorStruct *y, int requested, int *returned, Perf *perf)
{
    if (!handle || !returned || !perf || requested < 1) return CUDNN_STATUS_BAD_PARAM;
    conv_problem p;
    cudnnStatus_t st = make_problem(d.op, x, w, cd, y, &p);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    std::vector<Algo> order;
    bool gemm_first = column_bytes(&p) <= WORKSPACE_PREFERRED_LIMIT;
    order.push_back(gemm_first ? d.gemm : d.direct);
    order.push_back(gemm_first ? d.direct : d.gemm);
    for (int a = 0; a < d.count; a++)
        if (a != (int)d.gemm && a != (int)d.direct) order.push_back((Algo)a);
    int n = requested < (int)order.size() ? requested : (int)order.size();
    for (int i = 0; i < n; i++) {
        Perf *r = &perf[i];
        memset(r, 0, sizeof *r);
        size_t ws = 0;
        r->algo = order[i];
        r->status = algorithm_workspace(&p, d, order[i], &ws) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
        r->time = -1.0f;
        r->memory = ws;
        r->determinism =
            order[i] == d.direct && !d.direct_deterministic ? CUDNN_NON_DETERMINISTIC : CUDNN_DETERMINISTIC;
        r->mathType = cd->math;
    }
    *returned = n;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
                                                     const cudnnFilterDescriptor_t filterDesc,
                                                     const cudnnConvolutionDescriptor_t convDesc,
                                                     const cudnnTensorDescriptor_t destDesc,
                                                     const int requestedAlgoCount, int *returnedAlgoCount,
                                                     cudnnConvolutionFwdAlgoPerf_t *perfResults)
{
    return find_algorithms(handle, FORWARD, srcDesc, filterDesc, convDesc, destDesc, requestedAlgoCount,
                           returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t handle,
                                                          const cudnnFilterDescriptor_t filterDesc,
                                                          const cudnnTensorDescriptor_t diffDesc,
                                                          const cudnnConvolutionDescriptor_t convDesc,
                                                          const cudnnTensorDescriptor_t gradDesc,
                                                          const int requestedAlgoCount, int *returnedAlgoCount,
                                                          cudnnConvolutionBwdDataAlgoPerf_t *perfResults)
{
    return find_algorithms(handle, BACKWARD_DATA, gradDesc, filterDesc, convDesc, diffDesc, requestedAlgoCount,
                           returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t handle,
                                                            const cudnnTensorDescriptor_t srcDesc,
                                                            const cudnnTensorDescriptor_t diffDesc,
                                                            const cudnnConvolutionDescriptor_t convDesc,
                                                            const cudnnFilterDescriptor_t gradDesc,
                                                            const int requestedAlgoCount, int *returnedAlgoCount,
                                                            cudnnConvolutionBwdFilterAlgoPerf_t *perfResults)
{
    return find_algorithms(handle, BACKWARD_FILTER, srcDesc, gradDesc, convDesc, diffDesc, requestedAlgoCount,
                           returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                      const cudnnFilterDescriptor_t wDesc,
                                                      const cudnnConvolutionDescriptor_t convDesc,
                                                      const cudnnTensorDescriptor_t yDesc,
                                                      cudnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes)
{
    if (!handle || !sizeInBytes) return CUDNN_STATUS_BAD_PARAM;
    conv_problem p;
    return problem_and_workspace(FORWARD, xDesc, wDesc, convDesc, yDesc, algo, &p, sizeInBytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,
                                                           const cudnnTensorDescriptor_t dyDesc,
                                                           const cudnnConvolutionDescriptor_t convDesc,
                                                           const cudnnTensorDescriptor_t dxDesc,
                                                           cudnnConvolutionBwdDataAlgo_t algo, size_t *sizeInBytes)
{
    if (!handle || !sizeInBytes) return CUDNN_STATUS_BAD_PARAM;
    conv_problem p;
    return problem_and_workspace(BACKWARD_DATA, dxDesc, wDesc, convDesc, dyDesc, algo, &p, sizeInBytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t handle,
                                                             const cudnnTensorDescriptor_t xDesc,
                                                             const cudnnTensorDescriptor_t dyDesc,
                                                             const cudnnConvolutionDescriptor_t convDesc,
                                                             const cudnnFilterDescriptor_t gradDesc,
                                                             cudnnConvolutionBwdFilterAlgo_t algo,
                                                             size_t *sizeInBytes)
{
    if (!handle || !sizeInBytes) return CUDNN_STATUS_BAD_PARAM;
    conv_problem p;
    return problem_and_workspace(BACKWARD_FILTER, xDesc, gradDesc, convDesc, dyDesc, algo, &p, sizeInBytes);
}

/* ---- gathering operands and scattering results -------------------------------------- */

/* Reads a strided x-like or y-like tensor [n, ch, d0, d1, d2] into a
 * contiguous buffer of the arithmetic type. */
template <typename A>
static void gather_tensor(const void *base, cudnnDataType_t dt, int n, int ch, const int *sp, const int64_t *st,
                          std::vector<A> &out)
{
    out.resize((size_t)n * ch * volume3(sp));
    size_t o = 0;
    for (int i = 0; i < n; i++)
        for (int c = 0; c < ch; c++)
            for (int a = 0; a < sp[0]; a++)
                for (int b = 0; b < sp[1]; b++)
                    for (int e = 0; e < sp[2]; e++)
                        out[o++] = (A)load_elem(base, dt, i * st[0] + c * st[1] + a * st[2] + b * st[3] + e * st[4]);
}

/* Writes dst = alpha * r + beta * dst over a strided tensor. With beta = 0
 * the old value is not read, so NaN garbage in a fresh output cannot leak
 * into the result (cuDNN documents the same). */
template <typename A>
static void scatter_tensor(void *base, cudnnDataType_t dt, int n, int ch, const int *sp, const int64_t *st,
                           const std::vector<A> &r, double alpha, double beta)
{
    A al = (A)alpha, be = (A)beta;
    size_t o = 0;
    for (int i = 0; i < n; i++)
        for (int c = 0; c < ch; c++)
            for (int a = 0; a < sp[0]; a++)
                for (int b = 0; b < sp[1]; b++)
                    for (int e = 0; e < sp[2]; e++) {
                        int64_t at = i * st[0] + c * st[1] + a * st[2] + b * st[3] + e * st[4];
                        A v = al * r[o++];
                        if (beta != 0) v += be * (A)load_elem(base, dt, at);
                        store_elem(base, dt, at, (double)v);
                    }
}

/* The filter [k, c/g, taps] is packed KCRS; in CUDNN_CONVOLUTION mode the
 * arithmetic works on the mirrored kernel, so tap t is stored at ker-1-t. */
static int64_t filter_index(const conv_problem *p, int64_t kc, int t0, int t1, int t2)
{
    if (p->flip) {
        t0 = p->ker[0] - 1 - t0;
        t1 = p->ker[1] - 1 - t1;
        t2 = p->ker[2] - 1 - t2;
    }
    return ((kc * p->ker[0] + t0) * p->ker[1] + t1) * p->ker[2] + t2;
}

template <typename A>
static void gather_filter(const void *base, const conv_problem *p, std::vector<A> &out)
{
    int64_t kc = (int64_t)p->k * (p->c / p->groups);
    out.resize((size_t)(kc * volume3(p->ker)));
    size_t o = 0;
    for (int64_t j = 0; j < kc; j++)
        for (int t0 = 0; t0 < p->ker[0]; t0++)
            for (int t1 = 0; t1 < p->ker[1]; t1++)
                for (int t2 = 0; t2 < p->ker[2]; t2++)
                    out[o++] = (A)load_elem(base, p->dt, filter_index(p, j, t0, t1, t2));
}

template <typename A>
static void scatter_filter(void *base, const conv_problem *p, const std::vector<A> &r, double alpha, double beta)
{
    A al = (A)alpha, be = (A)beta;
    int64_t kc = (int64_t)p->k * (p->c / p->groups);
    size_t o = 0;
    for (int64_t j = 0; j < kc; j++)
        for (int t0 = 0; t0 < p->ker[0]; t0++)
            for (int t1 = 0; t1 < p->ker[1]; t1++)
                for (int t2 = 0; t2 < p->ker[2]; t2++) {
                    int64_t at = filter_index(p, j, t0, t1, t2);
                    A v = al * r[o++];
                    if (beta != 0) v += be * (A)load_elem(base, p->dt, at);
                    store_elem(base, p->dt, at, (double)v);
                }
}

/* ---- the arithmetic, on contiguous buffers (x [n,c,in], w [k,c/g,ker], y [n,k,out]) -- */

/* The input position that output position o and kernel tap t read along
 * spatial dim s, or -1 when it falls in the padding. */
static int input_at(const conv_problem *p, int s, int o, int t)
{
    int i = o * p->stride[s] - p->pad[s] + t * p->dil[s];
    return i >= 0 && i < p->in[s] ? i : -1;
}

/* The walk of the direct algorithms, forward and its transpose (backward
 * data): for each sample, output channel and output position in order,
 * f(yo, taps) with yo the output's offset in y; taps(t) calls t(xo, wo)
 * for each channel and kernel tap that output reads inside the input, in
 * order, xo the input's offset in x and wo the weight's in w. */
template <typename F>
static void for_each_window(const conv_problem *p, F f)
{
    int cg = p->c / p->groups, kg = p->k / p->groups;
    int64_t iv = volume3(p->in), ov = volume3(p->out), kv = volume3(p->ker);
    for (int n = 0; n < p->n; n++)
        for (int k = 0; k < p->k; k++) {
            int64_t xg = ((int64_t)n * p->c + (int64_t)(k / kg) * cg) * iv, wk = (int64_t)k * cg * kv;
            int64_t yk = ((int64_t)n * p->k + k) * ov;
            for (int o0 = 0; o0 < p->out[0]; o0++)
                for (int o1 = 0; o1 < p->out[1]; o1++)
                    for (int o2 = 0; o2 < p->out[2]; o2++)
                        f(yk + ((int64_t)o0 * p->out[1] + o1) * p->out[2] + o2, [&](auto t) {
                            for (int c = 0; c < cg; c++)
                                for (int t0 = 0; t0 < p->ker[0]; t0++) {
                                    int i0 = input_at(p, 0, o0, t0);
                                    if (i0 < 0) continue;
                                    for (int t1 = 0; t1 < p->ker[1]; t1++) {
                                        int i1 = input_at(p, 1, o1, t1);
                                        if (i1 < 0) continue;
                                        for (int t2 = 0; t2 < p->ker[2]; t2++) {
                                            int i2 = input_at(p, 2, o2, t2);
                                            if (i2 < 0) continue;
                                            t(xg + c * iv + ((int64_t)i0 * p->in[1] + i1) * p->in[2] + i2,
                                              wk + ((c * p->ker[0] + t0) * p->ker[1] + t1) * p->ker[2] + t2);
                                        }
                                    }
                                }
                        });
        }
}

/* Forward, direct: every output is its own dot product. */
template <typename A>
static void forward_direct(const conv_problem *p, const A *x, const A *w, A *y)
{
    for_each_window(p, [&](int64_t yo, auto taps) {
        A sum = 0;
        taps([&](int64_t xo, int64_t wo) { sum += x[xo] * w[wo]; });
        y[yo] = sum;
    });
}

/* For kernel tap (t0, t1, t2), each output position in order: f(o, i), o
 * the output's offset in [out] and i that of the input it reads in [in],
 * or -1 when that falls in the padding. */
template <typename F>
static void for_each_output(const conv_problem *p, int t0, int t1, int t2, F f)
{
    int64_t o = 0;
    for (int o0 = 0; o0 < p->out[0]; o0++) {
        int i0 = input_at(p, 0, o0, t0);
        for (int o1 = 0; o1 < p->out[1]; o1++) {
            int i1 = input_at(p, 1, o1, t1);
            for (int o2 = 0; o2 < p->out[2]; o2++, o++) {
                int i2 = input_at(p, 2, o2, t2);
                f(o, i0 < 0 || i1 < 0 || i2 < 0 ? -1 : ((int64_t)i0 * p->in[1] + i1) * p->in[2] + i2);
            }
        }
    }
}

/* The column buffer of one (sample, group), walked by im2col and its
 * adjoint col2im: row r = (channel, tap), column o = output position; f(e,
 * i) for each entry e = r * ov + o in order, i the offset in the group's
 * input channels it stands for, or -1 in the padding. */
template <typename F>
static void for_each_column_entry(const conv_problem *p, F f)
{
    int cg = p->c / p->groups;
    int64_t iv = volume3(p->in), ov = volume3(p->out);
    int64_t r = 0;
    for (int c = 0; c < cg; c++)
        for (int t0 = 0; t0 < p->ker[0]; t0++)
            for (int t1 = 0; t1 < p->ker[1]; t1++)
                for (int t2 = 0; t2 < p->ker[2]; t2++, r++)
                    for_each_output(p, t0, t1, t2,
                                    [&](int64_t o, int64_t i) { f(r * ov + o, i < 0 ? -1 : c * iv + i); });
}

/* im2col of one (sample, group): xg holds the group's cg channels; padding reads 0. */
template <typename A>
static void im2col(const conv_problem *p, const A *xg, A *col)
{
    for_each_column_entry(p, [&](int64_t e, int64_t i) { col[e] = i < 0 ? (A)0 : xg[i]; });
}

/* col2im: the adjoint of im2col, adding each column entry back into the
 * input position it came from (padding entries are dropped). */
template <typename A>
static void col2im(const conv_problem *p, const A *col, A *xg)
{
    for_each_column_entry(p, [&](int64_t e, int64_t i) {
        if (i >= 0) xg[i] += col[e];
    });
}

/* The walk of forward and backward-filter GEMM: for each (sample, group)
 * in order, the column buffer filled from x (im2col), then f(wo, yo) for
 * each of the group's output channels k, wo the offset of k's filter (a row
 * of the group's kg x rows matrix) in w and yo that of k's outputs in y. */
template <typename A, typename F>
static void for_each_column_block(const conv_problem *p, const A *x, A *col, F f)
{
    int cg = p->c / p->groups, kg = p->k / p->groups;
    int64_t iv = volume3(p->in), ov = volume3(p->out), rows = (int64_t)cg * volume3(p->ker);
    for (int n = 0; n < p->n; n++)
        for (int g = 0; g < p->groups; g++) {
            im2col(p, x + ((int64_t)n * p->c + (int64_t)g * cg) * iv, col);
            for (int k = 0; k < kg; k++)
                f(((int64_t)g * kg + k) * rows, ((int64_t)n * p->k + (int64_t)g * kg + k) * ov);
        }
}

/* Forward, GEMM: y[n, group] = W[group] (kg x rows) * col (rows x ov), the
 * column buffer being the caller's workspace. */
template <typename A>
static void forward_gemm(const conv_problem *p, const A *x, const A *w, A *y, A *col)
{
    int64_t ov = volume3(p->out), rows = (int64_t)(p->c / p->groups) * volume3(p->ker);
    for_each_column_block(p, x, col, [&](int64_t wo, int64_t yo) {
        const A *wk = w + wo;
        A *yk = y + yo;
        for (int64_t o = 0; o < ov; o++) yk[o] = 0;
        for (int64_t r = 0; r < rows; r++) {
            A wv = wk[r];
            const A *row = col + r * ov;
            for (int64_t o = 0; o < ov; o++) yk[o] += wv * row[o];
        }
    });
}

/* Backward data, direct: each output gradient is spread over the inputs
 * its window read (the transpose of forward_direct). dx starts at 0. */
template <typename A>
static void backward_data_direct(const conv_problem *p, const A *w, const A *dy, A *dx)
{
    for_each_window(p, [&](int64_t yo, auto taps) {
        A g = dy[yo];
        taps([&](int64_t xo, int64_t wo) { dx[xo] += g * w[wo]; });
    });
}

/* Backward data, GEMM: col = W[group]^T (rows x kg) * dy[n, group]
 * (kg x ov) in the workspace, then col2im into dx. dx starts at 0. */
template <typename A>
static void backward_data_gemm(const conv_problem *p, const A *w, const A *dy, A *dx, A *col)
{
    int cg = p->c / p->groups, kg = p->k / p->groups;
    int64_t iv = volume3(p->in), ov = volume3(p->out), rows = (int64_t)cg * volume3(p->ker);
    for (int n = 0; n < p->n; n++)
        for (int g = 0; g < p->groups; g++) {
            for (int64_t i = 0; i < rows * ov; i++) col[i] = 0;
            for (int k = 0; k < kg; k++) {
                const A *wk = w + ((int64_t)g * kg + k) * rows;
                const A *gk = dy + ((int64_t)n * p->k + (int64_t)g * kg + k) * ov;
                for (int64_t r = 0; r < rows; r++) {
                    A wv = wk[r];
                    A *row = col + r * ov;
                    for (int64_t o = 0; o < ov; o++) row[o] += wv * gk[o];
                }
            }
            col2im(p, col, dx + ((int64_t)n * p->c + (int64_t)g * cg) * iv);
        }
}

/* Backward filter, direct: each weight's gradient is the sum over samples
 * and output positions of dy times the input it met. */
template <typename A>
static void backward_filter_direct(const conv_problem *p, const A *x, const A *dy, A *dw)
{
    int cg = p->c / p->groups, kg = p->k / p->groups;
    int64_t iv = volume3(p->in), ov = volume3(p->out);
    for (int k = 0; k < p->k; k++)
        for (int c = 0; c < cg; c++)
            for (int t0 = 0; t0 < p->ker[0]; t0++)
                for (int t1 = 0; t1 < p->ker[1]; t1++)
                    for (int t2 = 0; t2 < p->ker[2]; t2++) {
                        A sum = 0;
                        for (int n = 0; n < p->n; n++) {
                            const A *xc = x + ((int64_t)n * p->c + (int64_t)(k / kg) * cg + c) * iv;
                            const A *gk = dy + ((int64_t)n * p->k + k) * ov;
                            for_each_output(p, t0, t1, t2, [&](int64_t o, int64_t i) {
                                if (i >= 0) sum += gk[o] * xc[i];
                            });
                        }
                        dw[((((int64_t)k * cg + c) * p->ker[0] + t0) * p->ker[1] + t1) * p->ker[2] + t2] = sum;
                    }
}

/* Backward filter, GEMM: dW[group] += dy[n, group] (kg x ov) * col^T
 * (ov x rows), col = im2col of x in the workspace. dw starts at 0. */
template <typename A>
static void backward_filter_gemm(const conv_problem *p, const A *x, const A *dy, A *dw, A *col)
{
    int64_t ov = volume3(p->out), rows = (int64_t)(p->c / p->groups) * volume3(p->ker);
    for_each_column_block(p, x, col, [&](int64_t wo, int64_t yo) {
        A *wk = dw + wo;
        const A *gk = dy + yo;
        for (int64_t r = 0; r < rows; r++) {
            const A *row = col + r * ov;
            A sum = 0;
            for (int64_t o = 0; o < ov; o++) sum += gk[o] * row[o];
            wk[r] += sum;
        }
    });
}

/* ---- the queued work ---------------------------------------------------------------- */

/* Each runs on the stream: checks the device ranges, gathers, computes,
 * blends into the output. ws is NULL for the direct algorithms. */
template <typename A>
static void run_forward(const conv_problem &p, bool gemm, const void *x, const void *w, void *y, void *ws,
                        size_t ws_bytes, double alpha, double beta)
{
    if (!emu::device_range(x, p.x_bytes, "cudnnConvolutionForward: x")) return;
    if (!emu::device_range(w, p.w_bytes, "cudnnConvolutionForward: w")) return;
    if (!emu::device_range(y, p.y_bytes, "cudnnConvolutionForward: y")) return;
    if (gemm && !emu::device_range(ws, ws_bytes, "cudnnConvolutionForward: workSpace")) return;
    std::vector<A> xb, wb, yb((size_t)p.n * p.k * volume3(p.out));
    gather_tensor<A>(x, p.dt, p.n, p.c, p.in, p.xs, xb);
    gather_filter<A>(w, &p, wb);
    if (gemm) forward_gemm<A>(&p, xb.data(), wb.data(), yb.data(), (A *)ws);
    else forward_direct<A>(&p, xb.data(), wb.data(), yb.data());
    scatter_tensor<A>(y, p.dt, p.n, p.k, p.out, p.ys, yb, alpha, beta);
}

template <typename A>
static void run_backward_data(const conv_problem &p, bool gemm, const void *w, const void *dy, void *dx, void *ws,
                              size_t ws_bytes, double alpha, double beta)
{
    if (!emu::device_range(w, p.w_bytes, "cudnnConvolutionBackwardData: w")) return;
    if (!emu::device_range(dy, p.y_bytes, "cudnnConvolutionBackwardData: dy")) return;
    if (!emu::device_range(dx, p.x_bytes, "cudnnConvolutionBackwardData: dx")) return;
    if (gemm && !emu::device_range(ws, ws_bytes, "cudnnConvolutionBackwardData: workSpace")) return;
    std::vector<A> wb, gb, xb((size_t)p.n * p.c * volume3(p.in), (A)0);
    gather_filter<A>(w, &p, wb);
    gather_tensor<A>(dy, p.dt, p.n, p.k, p.out, p.ys, gb);
    if (gemm) backward_data_gemm<A>(&p, wb.data(), gb.data(), xb.data(), (A *)ws);
    else backward_data_direct<A>(&p, wb.data(), gb.data(), xb.data());
    scatter_tensor<A>(dx, p.dt, p.n, p.c, p.in, p.xs, xb, alpha, beta);
}

template <typename A>
static void run_backward_filter(const conv_problem &p, bool gemm, const void *x, const void *dy, void *dw, void *ws,
                                size_t ws_bytes, double alpha, double beta)
{
    if (!emu::device_range(x, p.x_bytes, "cudnnConvolutionBackwardFilter: x")) return;
    if (!emu::device_range(dy, p.y_bytes, "cudnnConvolutionBackwardFilter: dy")) return;
    if (!emu::device_range(dw, p.w_bytes, "cudnnConvolutionBackwardFilter: dw")) return;
    if (gemm && !emu::device_range(ws, ws_bytes, "cudnnConvolutionBackwardFilter: workSpace")) return;
    std::vector<A> xb, gb, wb((size_t)p.k * (p.c / p.groups) * volume3(p.ker), (A)0);
    gather_tensor<A>(x, p.dt, p.n, p.c, p.in, p.xs, xb);
    gather_tensor<A>(dy, p.dt, p.n, p.k, p.out, p.ys, gb);
    if (gemm) backward_filter_gemm<A>(&p, xb.data(), gb.data(), wb.data(), (A *)ws);
    else backward_filter_direct<A>(&p, xb.data(), gb.data(), wb.data());
    scatter_filter<A>(dw, &p, wb, alpha, beta);
}

/* alpha and beta are host scalars: double for DOUBLE_CONFIG, float for
 * every other configuration (cuDNN's scaling-parameter rule). */
static double host_scalar(const void *s, bool f64) { return f64 ? *(const double *)s : *(const float *)s; }

/* The workspace a call was given against what its algorithm needs. The
 * documentation names no status for a short workspace; BAD_PARAM is what
 * an out-of-range argument gets, and the column buffer must also be aligned
 * for the arithmetic type. */
static cudnnStatus_t check_workspace(const conv_problem *p, void *ws, size_t given, size_t need)
{
    if (need == 0) return CUDNN_STATUS_SUCCESS;
    if (!ws || given < need) return CUDNN_STATUS_BAD_PARAM;
    size_t align = p->f64 ? sizeof(double) : sizeof(float);
    if ((uintptr_t)ws % align) return CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER;
    return CUDNN_STATUS_SUCCESS;
}

/* A failed submit means the stream is bad or the context already faulted:
 * on a GPU the kernel launch would fail the same way. */
static cudnnStatus_t submitted(cudaError_t e)
{
    return e == cudaSuccess ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED_CUDART;
}

/* What the three convolution calls share once their pointers are checked:
 * the problem, the algorithm's workspace against the one given, alpha and
 * beta read; then run(p, gemm, need, alpha, beta) queued on the handle's
 * stream (gemm: the algorithm with workspace). */
template <typename Algo, typename Run>
static cudnnStatus_t queue_convolution(cudnnHandle_t handle, const conv_direction<Algo> &d,
                                       const cudnnTensorStruct *x, const cudnnFilterStruct *w,
                                       const cudnnConvolutionStruct *cd, const cudnnTensorStruct *y, Algo algo,
                                       void *ws, size_t ws_bytes, const void *alpha, const void *beta, Run run)
{
    conv_problem p;
    size_t need = 0;
    cudnnStatus_t st = problem_and_workspace(d, x, w, cd, y, algo, &p, &need);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    st = check_workspace(&p, ws, ws_bytes, need);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    bool gemm = algo == d.gemm;
    double a = host_scalar(alpha, p.f64), b = host_scalar(beta, p.f64);
    return submitted(emu::submit(handle->stream, d.call, [=]() { run(p, gemm, need, a, b); }));
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc,
                                      const void *x, const cudnnFilterDescriptor_t wDesc, const void *w,
                                      const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
                                      void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
                                      const cudnnTensorDescriptor_t yDesc, void *y)
{
    if (!handle || !alpha || !beta || !x || !w || !y) return CUDNN_STATUS_BAD_PARAM;
    return queue_convolution(handle, FORWARD, xDesc, wDesc, convDesc, yDesc, algo, workSpace, workSpaceSizeInBytes,
                             alpha, beta, [=](const conv_problem &p, bool gemm, size_t need, double a, double b) {
        if (p.f64) run_forward<double>(p, gemm, x, w, y, workSpace, need, a, b);
        else run_forward<float>(p, gemm, x, w, y, workSpace, need, a, b);
    });
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha,
                                           const cudnnFilterDescriptor_t wDesc, const void *w,
                                           const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                           const cudnnConvolutionDescriptor_t convDesc,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,
                                           size_t workSpaceSizeInBytes, const void *beta,
                                           const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    if (!handle || !alpha || !beta || !w || !dy || !dx) return CUDNN_STATUS_BAD_PARAM;
    return queue_convolution(handle, BACKWARD_DATA, dxDesc, wDesc, convDesc, dyDesc, algo, workSpace,
                             workSpaceSizeInBytes, alpha, beta,
                             [=](const conv_problem &p, bool gemm, size_t need, double a, double b) {
        if (p.f64) run_backward_data<double>(p, gemm, w, dy, dx, workSpace, need, a, b);
        else run_backward_data<float>(p, gemm, w, dy, dx, workSpace, need, a, b);
    });
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void *alpha,
                                             const cudnnTensorDescriptor_t xDesc, const void *x,
                                             const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                             const cudnnConvolutionDescriptor_t convDesc,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace,
                                             size_t workSpaceSizeInBytes, const void *beta,
                                             const cudnnFilterDescriptor_t dwDesc, void *dw)
{
    if (!handle || !alpha || !beta || !x || !dy || !dw) return CUDNN_STATUS_BAD_PARAM;
    return queue_convolution(handle, BACKWARD_FILTER, xDesc, dwDesc, convDesc, dyDesc, algo, workSpace,
                             workSpaceSizeInBytes, alpha, beta,
                             [=](const conv_problem &p, bool gemm, size_t need, double a, double b) {
        if (p.f64) run_backward_filter<double>(p, gemm, x, dy, dw, workSpace, need, a, b);
        else run_backward_filter<float>(p, gemm, x, dy, dw, workSpace, need, a, b);
    });
}
