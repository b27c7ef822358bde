/*
 * emu.h — the emulated CUDA device's internal interface (kernels/emu/).
 *
 * The emulator is one host process's picture of a GPU: device memory is host
 * memory the emulator hands out (and checks), streams are in-order queues of
 * host functions, and a kernel's threads are fibers run block by block on the
 * calling thread. The library stand-ins (cublas.cc, cublaslt.cc, cusolver.cc,
 * cudnn.cc, nccl.cc) use only what is declared here plus the real toolkit
 * headers, whose declarations they implement.
 *
 * Rules for a stand-in:
 *  - check the arguments at the call, as the real library does, and return
 *    its status for bad ones (never touch device memory at the call);
 *  - queue the computation with emu::submit on the handle's stream: it runs
 *    in order with the stream's other work (at the next synchronisation, or,
 *    while the stream is being captured, at each replay of the graph);
 *  - inside the queued function, check every device range it reads or writes
 *    with emu::device_range before touching it, and return at once when it
 *    says no (the context then holds a sticky cudaErrorIllegalAddress, as a
 *    faulting kernel leaves it on a GPU).
 */
#ifndef EMBER_EMU_H
#define EMBER_EMU_H

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <library_types.h>

#include <functional>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <vector>

namespace emu {

/* Queues fn on stream s (NULL: the legacy default stream). `what` names the
 * work in reports ("cublasGemmStridedBatchedEx"). Returns cudaSuccess, the
 * context's sticky error, or an error for a bad stream. */
cudaError_t submit(cudaStream_t s, const char *what, std::function<void()> fn);

/* Queues on stream s a command that is not done while pending() says so
 * (an NCCL kernel waiting for a peer): the stream stops there; a query
 * answers cudaErrorNotReady, a synchronisation waits, letting other host
 * threads call in meanwhile. pending runs with the API lock held, on any
 * thread that runs the stream: atomics only. */
cudaError_t submit_pending(cudaStream_t s, const char *what, std::function<bool()> pending);

/* Inside queued work: true when [p, p + n) lies inside one live device
 * allocation (exact bytes: the caching allocator's unused tails and freed
 * blocks do not count). Else reports "<what>: <reason>" on stderr, makes
 * the context's error cudaErrorIllegalAddress and returns false. */
bool device_range(const void *p, size_t n, const char *what);

/* Whether p points into the emulated device's memory (live or not). */
bool is_device_pointer(const void *p);

/* Makes the context's sticky error e after a fault found in queued work,
 * printing "ember (emulated CUDA): <message>" on stderr. */
void fault(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with the message after prefix ("" for none), its arguments in ap. */
void vfault(cudaError_t e, const char *prefix, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* Whether the context has a sticky error (NCCL's asynchronous error check). */
bool sticky_error_for_nccl();

/* ---- library handles (cublas.cc, cudnn.cc, cusolver.cc) ----------------------------- */

/* A handle's SetStream (h->stream = s), with the library's status for a NULL handle. */
template <typename Status, typename Handle>
Status set_stream(Handle h, cudaStream_t s, Status ok, Status no_handle)
{
    if (!h) return no_handle;
    h->stream = s;
    return ok;
}

/* A handle's GetStream (*s = h->stream), with the library's statuses for a NULL handle and a NULL s. */
template <typename Status, typename Handle>
Status get_stream(Handle h, cudaStream_t *s, Status ok, Status no_handle, Status no_out)
{
    if (!h) return no_handle;
    if (!s) return no_out;
    *s = h->stream;
    return ok;
}

/* ---- matrices of the BLAS stand-ins (cublas.cc, cublaslt.cc) ------------------------ */

/* Bytes per element of the real types the GEMMs take (0: another type). */
inline size_t type_size(cudaDataType t)
{
    switch (t) {
    case CUDA_R_64F: return 8;
    case CUDA_R_32F: return 4;
    case CUDA_R_16F: return 2;
    case CUDA_R_16BF: return 2;
    default: return 0;
    }
}

/* Element i of a float/double/half/bfloat16 array, exactly, as double. */
inline double load(const void *p, cudaDataType t, int64_t i)
{
    switch (t) {
    case CUDA_R_64F: return ((const double *)p)[i];
    case CUDA_R_32F: return ((const float *)p)[i];
    case CUDA_R_16F: return __half2float(((const __half *)p)[i]);
    case CUDA_R_16BF: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    default: return 0;
    }
}

/* Stores v (a value of the compute type) as element i, rounding to nearest. */
inline void store(void *p, cudaDataType t, int64_t i, double v)
{
    switch (t) {
    case CUDA_R_64F: ((double *)p)[i] = v; break;
    case CUDA_R_32F: ((float *)p)[i] = (float)v; break;
    case CUDA_R_16F: ((__half *)p)[i] = __float2half_rn((float)v); break;
    case CUDA_R_16BF: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)v); break;
    default: break;
    }
}

/* The element types a GEMM with float32 accumulation takes (the tables of
 * cublasGemmEx and cublasLtMatmul agree): float32 inputs with a float32
 * output, half or bfloat16 inputs with an output of their type or float32. */
inline bool f32_gemm_types(cudaDataType in, cudaDataType out)
{
    if (in == CUDA_R_32F) return out == CUDA_R_32F;
    return (in == CUDA_R_16F || in == CUDA_R_16BF) && (out == in || out == CUDA_R_32F);
}

/* Matrix b of a strided batch: pointer arithmetic in integers, since a
 * negative or zero stride may point anywhere (or nowhere new). */
inline const void *batch_at(const void *p, int64_t stride, int64_t b, size_t esize)
{
    return (const void *)((uintptr_t)p + (uintptr_t)(stride * b * (int64_t)esize));
}

/* Checks the bytes a rows x cols column-major matrix with leading dimension
 * ld covers: the last column ends rows elements after its start. */
inline bool matrix_range(const void *p, size_t esize, int64_t rows, int64_t cols, int64_t ld, const char *what)
{
    if (rows <= 0 || cols <= 0) return true;
    size_t n = ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * esize;
    return device_range(p, n, what);
}

/* dst[i * c + l] = op(X)(i, l) for op(X) r x c, X stored column-major with
 * leading dimension ld (so op(X)(i, l) is X[i + l ld] or, transposed,
 * X[l + i ld]). Each output element then reads a contiguous row. */
template <typename Acc>
void pack(std::vector<Acc> &dst, const void *x, cudaDataType t, int64_t ld, bool trans, int64_t r, int64_t c)
{
    dst.resize((size_t)(r * c));
    for (int64_t i = 0; i < r; i++)
        for (int64_t l = 0; l < c; l++)
            dst[(size_t)(i * c + l)] = (Acc)load(x, t, trans ? l + i * ld : i + l * ld);
}

/* The sum of a[l] * b[l] over l < k, in order, in the accumulation type. */
template <typename Acc> Acc dot(const Acc *a, const Acc *b, int64_t k)
{
    Acc s = 0;
    for (int64_t l = 0; l < k; l++) s += a[l] * b[l];
    return s;
}

} // namespace emu

#endif
