/*
 * unary.cu — the unary elementwise kernels: engine/unary_math.h's formulas,
 * which the CPU's loops (engine/cpu/unary.c) compute too, one functor per
 * op, the dispatch made from the op table (engine/elementwise_ops.h).
 *
 * Integers and bool compute in int64 and keep the low bits on the way back,
 * so neg of uint8 1 is 255. Contiguous float32/float64 tensors go through
 * 16-byte vector loads and stores; everything else through kc_foreach.
 * float16/bfloat16 are storage types here: this backend has no half loops
 * (no elementwise_half), so the engine casts them to float32 and back, and
 * this file refuses them. (The CPU's loops take them, widening to float32 a
 * chunk at a time.)
 *
 * On a GPU, float32 takes CUDA's single-precision functions where
 * unary_math.h's UM_PICK names them (expf, normcdff, ...: within their
 * documented few ulp of the CPU's, not always to the bit); the emulated
 * device, compiled for the host, takes the CPU's formulas.
 */
#include "elementwise.cuh"
#include "../engine/unary_math.h"

#include <type_traits>

/* ---- ops ---------------------------------------------------------------------
 * Every op is engine/unary_math.h's formula, one functor per op with an
 * overload per compute type (float, double, int64). */

template <em_unary_op OP> struct u_op {
    __host__ __device__ float operator()(float a) const { return em_un_f32(OP, a); }
    __host__ __device__ double operator()(double a) const { return em_un_f64(OP, a); }
    __host__ __device__ int64_t operator()(int64_t a) const { return em_un_i64(OP, a); }
};

/* the one op with a bool result */
struct u_not {
    template <typename C> __host__ __device__ bool operator()(C a) const { return a == 0; }
};

template <typename F> struct u_to_bool { static const bool value = false; };
template <> struct u_to_bool<u_not> { static const bool value = true; };

/* ---- kernels ----------------------------------------------------------------- */

template <int D, typename F> struct un_fn {
    F f;
    __host__ __device__ void operator()(char **p) const
    {
        typename ew_calc<D>::C x = ew_calc<D>::load(ew_ld<D>(p[1]));
        if constexpr (u_to_bool<F>::value) *(uint8_t *)p[0] = (uint8_t)f(x);
        else ew_st<D>(p[0], ew_calc<D>::store(f(x)));
    }
};

template <int D, typename F>
static int un_run(const char *name, em_tensor *out, const em_tensor *a)
{
    const em_tensor *ts[2] = {out, a};
    kc_iter<2> it;
    int dev;
    cudaStream_t s;
    if (int go = kc_prepare(ts, &it, &dev, &s); go <= 0) return go;
    if constexpr (D == EM_FLOAT32 || D == EM_FLOAT64) {
        typedef typename ew_dt<D>::S T;
        typedef typename std::conditional<u_to_bool<F>::value, uint8_t, T>::type O;
        int rc;
        if (ew_try_map_vec<T, O>(name, it, dev, s, F(), &rc)) return rc;
    }
    return ew_foreach(name, it, dev, s, un_fn<D, F>{F()});
}

/* float inputs: the ops with float loops (the op table's dtypes column) */
#define UN_FLOAT_CASE(op_, name_, inplace, backward, dtypes, ...) \
    UM_IF_FLOAT_LOOP(dtypes, case op_: return un_run<D, u_op<op_>>(name, out, a);)
template <int D>
static int un_float(em_unary_op op, const char *name, em_tensor *out, const em_tensor *a)
{
    switch (op) {
    EM_UNARY_OPS(UN_FLOAT_CASE)
    case EM_LOGICAL_NOT: return un_run<D, u_not>(name, out, a);
    default: break;
    }
    return kc_error("%s: the CUDA kernel needs integer input, got %s", name, kc_dtype_name(a->dtype));
}

/* integer and bool inputs: the ops with integer loops */
#define UN_INT_CASE(op_, name_, inplace, backward, dtypes, ...) \
    UM_IF_INT_LOOP(dtypes, case op_: return un_run<D, u_op<op_>>(name, out, a);)
template <int D>
static int un_int(em_unary_op op, const char *name, em_tensor *out, const em_tensor *a)
{
    /* bool is 0/1 in the int64 compute type, where ~1 would store true */
    if (op == EM_BITWISE_NOT && D == EM_BOOL) return kc_error("bitwise_not: the CUDA kernel needs integer input, got bool");
    switch (op) {
    EM_UNARY_OPS(UN_INT_CASE)
    case EM_LOGICAL_NOT: return un_run<D, u_not>(name, out, a);
    default: break;
    }
    return kc_error("%s: the CUDA kernel needs float input, got %s", name, kc_dtype_name(a->dtype));
}

int kc_unary(em_unary_op op, em_tensor *out, const em_tensor *a)
{
    if ((unsigned)op >= EM_NUNARY) return kc_error("unary: invalid op %d", (int)op);
    const char *name = em_unary_info(op)->name;
    em_dtype dt = a->dtype;
    bool to_bool = em_unary_info(op)->dtypes == EM_OPDT_TO_BOOL;
    if (out->dtype != (to_bool ? EM_BOOL : dt))
        return kc_error("%s: CUDA kernel called with output dtype %s for %s input", name,
                        kc_dtype_name(out->dtype), kc_dtype_name(dt));
    switch (dt) {
    case EM_FLOAT32: return un_float<EM_FLOAT32>(op, name, out, a);
    case EM_FLOAT64: return un_float<EM_FLOAT64>(op, name, out, a);
    case EM_INT64: return un_int<EM_INT64>(op, name, out, a);
    case EM_INT32: return un_int<EM_INT32>(op, name, out, a);
    case EM_INT16: return un_int<EM_INT16>(op, name, out, a);
    case EM_INT8: return un_int<EM_INT8>(op, name, out, a);
    case EM_UINT8: return un_int<EM_UINT8>(op, name, out, a);
    case EM_BOOL: return un_int<EM_BOOL>(op, name, out, a);
    default:
        return kc_error("%s: the CUDA kernel has no %s loop (compute in float32)", name, kc_dtype_name(dt));
    }
}
