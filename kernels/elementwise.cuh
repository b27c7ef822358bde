/*
 * elementwise.cuh — what the elementwise families (fill.cu, random.cu,
 * cast.cu, unary.cu, binary.cu, ternary.cu) share: the CPU backend's rules
 * for reading and writing each dtype, bit for bit, and the aligned vector
 * type of their 16-byte fast paths.
 *
 * Why not kc_to_f64/kc_from_f64 and __half: the CPU writes float16 and
 * bfloat16 through float ((float)v, then round to nearest even, its own NaN
 * encoding), saturates float-to-integer stores and keeps bool bytes as
 * uint8_t; a tensor must hold the same bytes whichever device computed it.
 * So dtypes here are their storage types (float16/bfloat16 as uint16_t bits,
 * bool as uint8_t, never C++ bool, whose loads assume 0 or 1), and the
 * conversions are engine/formulas.h's, which the CPU backend uses too.
 *
 * Element functions are __host__ __device__ wherever the device math
 * allows, so that their arithmetic can be compared with the CPU backend's
 * on a machine without a GPU.
 */
#ifndef EMBER_ELEMENTWISE_CUH
#define EMBER_ELEMENTWISE_CUH

#include "kc.h"
#include "../engine/formulas.h"

#include <string.h>

/* the bit casts, float16 / bfloat16 conversions and float-to-integer
 * saturation are engine/formulas.h's (emf_*), the CPU's own text */

/* Multiply and add rounded one at a time. The CPU build never fuses them
 * (ISO C mode), and nvcc would: where the CPU's formula is a*b + c these keep
 * the last bit the same. On the host, where the kernels' arithmetic can be
 * checked against the CPU's, the plain operators do the same. */
#ifdef __CUDA_ARCH__
__host__ __device__ inline double ew_dadd(double a, double b) { return __dadd_rn(a, b); }
__host__ __device__ inline double ew_dmul(double a, double b) { return __dmul_rn(a, b); }
__host__ __device__ inline float ew_fadd(float a, float b) { return __fadd_rn(a, b); }
__host__ __device__ inline float ew_fmul(float a, float b) { return __fmul_rn(a, b); }
#else
__host__ __device__ inline double ew_dadd(double a, double b) { return a + b; }
__host__ __device__ inline double ew_dmul(double a, double b) { return a * b; }
__host__ __device__ inline float ew_fadd(float a, float b) { return a + b; }
__host__ __device__ inline float ew_fmul(float a, float b) { return a * b; }
#endif

/* ---- dtypes ------------------------------------------------------------------
 * ew_dt<D>::S is the storage type of dtype D. Kernels are templates on the
 * dtype (not on S: bool and uint8, float16 and bfloat16 share a storage type
 * but not their rules). */
template <int D> struct ew_dt;
template <> struct ew_dt<EM_FLOAT32> { typedef float S; };
template <> struct ew_dt<EM_FLOAT64> { typedef double S; };
template <> struct ew_dt<EM_INT64> { typedef int64_t S; };
template <> struct ew_dt<EM_INT32> { typedef int32_t S; };
template <> struct ew_dt<EM_INT16> { typedef int16_t S; };
template <> struct ew_dt<EM_INT8> { typedef int8_t S; };
template <> struct ew_dt<EM_UINT8> { typedef uint8_t S; };
template <> struct ew_dt<EM_BOOL> { typedef uint8_t S; };
template <> struct ew_dt<EM_FLOAT16> { typedef uint16_t S; };
template <> struct ew_dt<EM_BFLOAT16> { typedef uint16_t S; };

template <int D> __host__ __device__ constexpr bool ew_is_float()
{
    return D == EM_FLOAT32 || D == EM_FLOAT64 || D == EM_FLOAT16 || D == EM_BFLOAT16;
}

/* cpu_load_f64 */
template <int D> __host__ __device__ inline double ew_load_f64(typename ew_dt<D>::S v)
{
    if constexpr (D == EM_FLOAT16) return (double)emf_half_to_float(v);
    else if constexpr (D == EM_BFLOAT16) return (double)emf_bf16_to_float(v);
    else if constexpr (D == EM_BOOL) return v ? 1.0 : 0.0;
    else return (double)v;
}

/* cpu_load_i64 (the CPU never takes this path for float dtypes; it saturates
 * here rather than leaving the conversion undefined) */
template <int D> __host__ __device__ inline int64_t ew_load_i64(typename ew_dt<D>::S v)
{
    if constexpr (D == EM_BOOL) return v != 0;
    else if constexpr (ew_is_float<D>()) return emf_f64_to_i64(ew_load_f64<D>(v));
    else return (int64_t)v;
}

/* cpu_store_f64: narrow integers keep the low bits of the saturated int64 */
template <int D> __host__ __device__ inline typename ew_dt<D>::S ew_store_f64(double v)
{
    if constexpr (D == EM_FLOAT32) return (float)v;
    else if constexpr (D == EM_FLOAT64) return v;
    else if constexpr (D == EM_INT64) return emf_f64_to_i64(v);
    else if constexpr (D == EM_INT32) return (int32_t)(uint32_t)(uint64_t)emf_f64_to_i64(v);
    else if constexpr (D == EM_INT16) return (int16_t)(uint16_t)(uint64_t)emf_f64_to_i64(v);
    else if constexpr (D == EM_INT8) return (int8_t)(uint8_t)(uint64_t)emf_f64_to_i64(v);
    else if constexpr (D == EM_UINT8) return (uint8_t)(uint64_t)emf_f64_to_i64(v);
    else if constexpr (D == EM_BOOL) return (uint8_t)(v != 0);
    else if constexpr (D == EM_FLOAT16) return emf_float_to_half((float)v);
    else return emf_float_to_bf16((float)v);
}

/* cpu_store_i64: float dtypes go through double, as on the CPU */
template <int D> __host__ __device__ inline typename ew_dt<D>::S ew_store_i64(int64_t v)
{
    if constexpr (D == EM_INT64) return v;
    else if constexpr (D == EM_INT32) return (int32_t)(uint32_t)(uint64_t)v;
    else if constexpr (D == EM_INT16) return (int16_t)(uint16_t)(uint64_t)v;
    else if constexpr (D == EM_INT8) return (int8_t)(uint8_t)(uint64_t)v;
    else if constexpr (D == EM_UINT8) return (uint8_t)(uint64_t)v;
    else if constexpr (D == EM_BOOL) return (uint8_t)(v != 0);
    else return ew_store_f64<D>((double)v);
}

/* The type elementwise arithmetic runs in and the conversions to it: float32
 * and float64 as themselves, integers and bool in int64 (unary.c and
 * binary.c do the same: wrap-around of the narrow type comes from keeping
 * the low bits on the way back, bool results are stored as value != 0). */
template <int D> struct ew_calc {
    typedef int64_t C;
    __host__ __device__ static C load(typename ew_dt<D>::S v) { return ew_load_i64<D>(v); }
    __host__ __device__ static typename ew_dt<D>::S store(C v) { return ew_store_i64<D>(v); }
};
template <> struct ew_calc<EM_FLOAT32> {
    typedef float C;
    __host__ __device__ static C load(float v) { return v; }
    __host__ __device__ static float store(C v) { return v; }
};
template <> struct ew_calc<EM_FLOAT64> {
    typedef double C;
    __host__ __device__ static C load(double v) { return v; }
    __host__ __device__ static double store(C v) { return v; }
};

/* ---- layouts ----------------------------------------------------------------- */
/* V elements loaded or stored as one access (16 bytes for the fast paths). */
template <typename T, int V> struct alignas(sizeof(T) * V) ew_vec { T v[V]; };

static inline bool ew_aligned(const void *p, size_t a) { return (uintptr_t)p % a == 0; }

/* Operand k's stride along the innermost coalesced dim, as the CPU's
 * iterator sees it (a tensor of one element has stride 0 there). The CPU
 * picks its loops by these strides, and where that changes the arithmetic
 * (pow by a scalar, the float32 ternary loops) the CUDA kernels follow. */
template <int N> static inline int64_t ew_inner_stride(const kc_iter<N> &it, int k)
{
    return it.ndim == 0 ? 0 : it.strides[k][it.ndim - 1];
}

template <int N, typename F>
static int ew_foreach(const char *op, const kc_iter<N> &it, int dev, cudaStream_t s, F f)
{
    KC_LAUNCH(kc_grid(it.numel, dev), KC_THREADS, 0, s, kc_foreach_kernel<N, F>)(it, f);
    return kc_launched(op, dev);
}

/* o[i] = f(a[i]) over dense memory, V = 16 bytes of input per access (o and a
 * aligned to V elements of their types); the tail one by one. */
template <typename T, typename O, typename F>
__global__ void ew_map_vec_kernel(O *o, const T *a, int64_t n, F f)
{
    const int V = 16 / sizeof(T);
    typedef ew_vec<T, V> VA;
    typedef ew_vec<O, V> VO;
    int64_t step = (int64_t)gridDim.x * blockDim.x, tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t nv = n / V;
    for (int64_t i = tid; i < nv; i += step) {
        VA x = ((const VA *)a)[i];
        VO y;
#pragma unroll
        for (int k = 0; k < V; k++) y.v[k] = (O)f(x.v[k]);
        ((VO *)o)[i] = y;
    }
    for (int64_t i = nv * V + tid; i < n; i += step) o[i] = (O)f(a[i]);
}

/* Launches ew_map_vec_kernel when out and in (operands 0 and 1 of it) are
 * dense on one dim and aligned for it; false when they are not. */
template <typename T, typename O, typename F>
static bool ew_try_map_vec(const char *op, const kc_iter<2> &it, int dev, cudaStream_t s, F f, int *rc)
{
    const int V = 16 / sizeof(T);
    if (!(it.contiguous && it.ndim == 1 && ew_aligned(it.data[0], V * sizeof(O)) &&
          ew_aligned(it.data[1], 16)))
        return false;
    int64_t nv = it.numel / V;
    KC_LAUNCH(kc_grid(nv > 0 ? nv : it.numel, dev), KC_THREADS, 0, s, ew_map_vec_kernel<T, O, F>)(
        (O *)it.data[0], (const T *)it.data[1], it.numel, f);
    *rc = kc_launched(op, dev);
    return true;
}

/* Loads/stores of operand k's element through kc_foreach's pointers. */
template <int D> __host__ __device__ inline typename ew_dt<D>::S ew_ld(const char *p)
{
    return *(const typename ew_dt<D>::S *)p;
}
template <int D> __host__ __device__ inline void ew_st(char *p, typename ew_dt<D>::S v)
{
    *(typename ew_dt<D>::S *)p = v;
}

/* switch over every dtype calling F<D>(args...) (EW_DISPATCH_DTYPE2:
 * F<P, D>(args...)), D the em_dtype as a template value; an error naming
 * op for anything else */
#define EW_DTYPE_CASE(D, CALL) case D: return CALL;
#define EW_DISPATCH_DTYPE(d, op, F, ...)                                                            \
    switch (d) {                                                                                    \
    EW_DTYPE_CASE(EM_FLOAT32, F<EM_FLOAT32>(__VA_ARGS__)) EW_DTYPE_CASE(EM_FLOAT64, F<EM_FLOAT64>(__VA_ARGS__)) \
    EW_DTYPE_CASE(EM_INT64, F<EM_INT64>(__VA_ARGS__)) EW_DTYPE_CASE(EM_INT32, F<EM_INT32>(__VA_ARGS__))         \
    EW_DTYPE_CASE(EM_INT16, F<EM_INT16>(__VA_ARGS__)) EW_DTYPE_CASE(EM_INT8, F<EM_INT8>(__VA_ARGS__))           \
    EW_DTYPE_CASE(EM_UINT8, F<EM_UINT8>(__VA_ARGS__)) EW_DTYPE_CASE(EM_BOOL, F<EM_BOOL>(__VA_ARGS__))           \
    EW_DTYPE_CASE(EM_FLOAT16, F<EM_FLOAT16>(__VA_ARGS__))                                          \
    EW_DTYPE_CASE(EM_BFLOAT16, F<EM_BFLOAT16>(__VA_ARGS__))                                        \
    default: return kc_error("%s: no CUDA kernel for %s", op, kc_dtype_name(d));                   \
    }
#define EW_DISPATCH_DTYPE2(d, op, F, P, ...)                                                        \
    switch (d) {                                                                                    \
    EW_DTYPE_CASE(EM_FLOAT32, (F<P, EM_FLOAT32>(__VA_ARGS__))) EW_DTYPE_CASE(EM_FLOAT64, (F<P, EM_FLOAT64>(__VA_ARGS__))) \
    EW_DTYPE_CASE(EM_INT64, (F<P, EM_INT64>(__VA_ARGS__))) EW_DTYPE_CASE(EM_INT32, (F<P, EM_INT32>(__VA_ARGS__)))         \
    EW_DTYPE_CASE(EM_INT16, (F<P, EM_INT16>(__VA_ARGS__))) EW_DTYPE_CASE(EM_INT8, (F<P, EM_INT8>(__VA_ARGS__)))           \
    EW_DTYPE_CASE(EM_UINT8, (F<P, EM_UINT8>(__VA_ARGS__))) EW_DTYPE_CASE(EM_BOOL, (F<P, EM_BOOL>(__VA_ARGS__)))           \
    EW_DTYPE_CASE(EM_FLOAT16, (F<P, EM_FLOAT16>(__VA_ARGS__)))                                     \
    EW_DTYPE_CASE(EM_BFLOAT16, (F<P, EM_BFLOAT16>(__VA_ARGS__)))                                   \
    default: return kc_error("%s: no CUDA kernel for %s", op, kc_dtype_name(d));                   \
    }

#endif
