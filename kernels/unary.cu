/*
 * unary.cu — the unary elementwise kernels (the CUDA twin of
 * engine/cpu/unary.c), same ops, dtypes and formulas.
 *
 * Each op is a functor with one overload per compute type (float, double,
 * int64: integers and bool compute in int64 and keep the low bits on the way
 * back, so neg of uint8 1 is 255). Contiguous float32/float64 tensors go
 * through 16-byte vector loads and stores; everything else through
 * kc_foreach. float16/bfloat16 are storage types here: this backend has no
 * half loops (no elementwise_half), so the engine casts them to float32 and
 * back, and this file refuses them. (The CPU's loops take them, widening to
 * float32 a chunk at a time.)
 *
 * float32 math uses CUDA's single-precision functions (expf, normcdff, ...),
 * which agree with glibc's (or, for GELU, the CPU's own float32 path) to
 * within their documented few ulp, not always to the bit.
 */
#include "elementwise.cuh"
#include "../engine/polygamma.h"

#include <type_traits>

/* ---- ops --------------------------------------------------------------------- */

struct u_neg {
    __host__ __device__ float operator()(float a) const { return -a; }
    __host__ __device__ double operator()(double a) const { return -a; }
    __host__ __device__ int64_t operator()(int64_t a) const { return (int64_t)(0 - (uint64_t)a); }
};
struct u_abs {
    __host__ __device__ float operator()(float a) const { return fabsf(a); }
    __host__ __device__ double operator()(double a) const { return fabs(a); }
    __host__ __device__ int64_t operator()(int64_t a) const { return a < 0 ? (int64_t)(0 - (uint64_t)a) : a; }
};
/* NaN gives 0, as in PyTorch */
struct u_sign {
    __host__ __device__ float operator()(float a) const { return (float)((a > 0) - (a < 0)); }
    __host__ __device__ double operator()(double a) const { return (double)((a > 0) - (a < 0)); }
    __host__ __device__ int64_t operator()(int64_t a) const { return (a > 0) - (a < 0); }
};
struct u_exp {
    __host__ __device__ float operator()(float a) const { return expf(a); }
    __host__ __device__ double operator()(double a) const { return exp(a); }
};
struct u_log {
    __host__ __device__ float operator()(float a) const { return logf(a); }
    __host__ __device__ double operator()(double a) const { return log(a); }
};
struct u_log1p {
    __host__ __device__ float operator()(float a) const { return log1pf(a); }
    __host__ __device__ double operator()(double a) const { return log1p(a); }
};
struct u_expm1 {
    __host__ __device__ float operator()(float a) const { return expm1f(a); }
    __host__ __device__ double operator()(double a) const { return expm1(a); }
};
struct u_sqrt {
    __host__ __device__ float operator()(float a) const { return sqrtf(a); }
    __host__ __device__ double operator()(double a) const { return sqrt(a); }
};
/* a correctly rounded division of a correctly rounded root, as on the CPU
 * (rsqrtf would differ in the last bits) */
struct u_rsqrt {
    __host__ __device__ float operator()(float a) const { return 1.0f / sqrtf(a); }
    __host__ __device__ double operator()(double a) const { return 1.0 / sqrt(a); }
};
struct u_sin {
    __host__ __device__ float operator()(float a) const { return sinf(a); }
    __host__ __device__ double operator()(double a) const { return sin(a); }
};
struct u_cos {
    __host__ __device__ float operator()(float a) const { return cosf(a); }
    __host__ __device__ double operator()(double a) const { return cos(a); }
};
struct u_tanh {
    __host__ __device__ float operator()(float a) const { return tanhf(a); }
    __host__ __device__ double operator()(double a) const { return tanh(a); }
};
struct u_sigmoid {
    __host__ __device__ float operator()(float a) const { return 1.0f / (1.0f + expf(-a)); }
    __host__ __device__ double operator()(double a) const { return 1.0 / (1.0 + exp(-a)); }
};
/* x < 0 ? 0 : x keeps NaN and -0.0 as PyTorch does */
struct u_relu {
    __host__ __device__ float operator()(float a) const { return a < 0 ? 0.0f : a; }
    __host__ __device__ double operator()(double a) const { return a < 0 ? 0.0 : a; }
    __host__ __device__ int64_t operator()(int64_t a) const { return a < 0 ? 0 : a; }
};
/* The exact form x Phi(x). float32 takes normcdff, which keeps its relative
 * accuracy for negative x where 1 + erf(x / sqrt 2) would cancel; float64
 * the erf form, as on the CPU. */
struct u_gelu {
    __host__ __device__ float operator()(float a) const { return a * normcdff(a); }
    __host__ __device__ double operator()(double a) const
    {
        return 0.5 * a * (1.0 + erf(a * 0.70710678118654752440));
    }
};
/* exp(-a^2 / 2) with a^2 carried as h + l (fmaf gives the rounding error l
 * exactly), so the argument's rounding does not grow with |a| */
__host__ __device__ inline float gaussian_f(float a)
{
    float h = a * a;
    float l = fmaf(a, a, -h);
    return expf(-0.5f * h) * (1.0f - 0.5f * l);
}
/* GELU's derivative Phi(x) + x phi(x) */
struct u_gelu_grad {
    __host__ __device__ float operator()(float a) const
    {
        return normcdff(a) + a * gaussian_f(a) * 0.39894228040143267794f;
    }
    __host__ __device__ double operator()(double a) const
    {
        return 0.5 * erfc(-a * 0.70710678118654752440) + a * exp(-0.5 * a * a) * 0.39894228040143267794;
    }
};
struct u_silu {
    __host__ __device__ float operator()(float a) const { return a / (1.0f + expf(-a)); }
    __host__ __device__ double operator()(double a) const { return a / (1.0 + exp(-a)); }
};
struct u_floor {
    __host__ __device__ float operator()(float a) const { return floorf(a); }
    __host__ __device__ double operator()(double a) const { return floor(a); }
    __host__ __device__ int64_t operator()(int64_t a) const { return a; }
};
struct u_ceil {
    __host__ __device__ float operator()(float a) const { return ceilf(a); }
    __host__ __device__ double operator()(double a) const { return ceil(a); }
    __host__ __device__ int64_t operator()(int64_t a) const { return a; }
};
/* half to even, as nearbyint in the default rounding mode */
struct u_round {
    __host__ __device__ float operator()(float a) const { return rintf(a); }
    __host__ __device__ double operator()(double a) const { return rint(a); }
    __host__ __device__ int64_t operator()(int64_t a) const { return a; }
};
struct u_reciprocal {
    __host__ __device__ float operator()(float a) const { return 1.0f / a; }
    __host__ __device__ double operator()(double a) const { return 1.0 / a; }
};
struct u_square {
    __host__ __device__ float operator()(float a) const { return a * a; }
    __host__ __device__ double operator()(double a) const { return a * a; }
    __host__ __device__ int64_t operator()(int64_t a) const { return (int64_t)((uint64_t)a * (uint64_t)a); }
};
/* elementwise math, CUDA's single- and double-precision functions */
struct u_exp2 {
    __host__ __device__ float operator()(float a) const { return exp2f(a); }
    __host__ __device__ double operator()(double a) const { return exp2(a); }
};
struct u_log2 {
    __host__ __device__ float operator()(float a) const { return log2f(a); }
    __host__ __device__ double operator()(double a) const { return log2(a); }
};
struct u_log10 {
    __host__ __device__ float operator()(float a) const { return log10f(a); }
    __host__ __device__ double operator()(double a) const { return log10(a); }
};
struct u_erf {
    __host__ __device__ float operator()(float a) const { return erff(a); }
    __host__ __device__ double operator()(double a) const { return erf(a); }
};
struct u_erfc {
    __host__ __device__ float operator()(float a) const { return erfcf(a); }
    __host__ __device__ double operator()(double a) const { return erfc(a); }
};
struct u_tan {
    __host__ __device__ float operator()(float a) const { return tanf(a); }
    __host__ __device__ double operator()(double a) const { return tan(a); }
};
struct u_sinh {
    __host__ __device__ float operator()(float a) const { return sinhf(a); }
    __host__ __device__ double operator()(double a) const { return sinh(a); }
};
struct u_cosh {
    __host__ __device__ float operator()(float a) const { return coshf(a); }
    __host__ __device__ double operator()(double a) const { return cosh(a); }
};
struct u_asin {
    __host__ __device__ float operator()(float a) const { return asinf(a); }
    __host__ __device__ double operator()(double a) const { return asin(a); }
};
struct u_acos {
    __host__ __device__ float operator()(float a) const { return acosf(a); }
    __host__ __device__ double operator()(double a) const { return acos(a); }
};
struct u_atan {
    __host__ __device__ float operator()(float a) const { return atanf(a); }
    __host__ __device__ double operator()(double a) const { return atan(a); }
};
struct u_asinh {
    __host__ __device__ float operator()(float a) const { return asinhf(a); }
    __host__ __device__ double operator()(double a) const { return asinh(a); }
};
struct u_acosh {
    __host__ __device__ float operator()(float a) const { return acoshf(a); }
    __host__ __device__ double operator()(double a) const { return acosh(a); }
};
struct u_atanh {
    __host__ __device__ float operator()(float a) const { return atanhf(a); }
    __host__ __device__ double operator()(double a) const { return atanh(a); }
};
/* CUDA's erfinv (float32 in double, as on the CPU) */
struct u_erfinv {
    __host__ __device__ float operator()(float a) const { return (float)erfinv((double)a); }
    __host__ __device__ double operator()(double a) const { return erfinv(a); }
};
struct u_trunc {
    __host__ __device__ float operator()(float a) const { return truncf(a); }
    __host__ __device__ double operator()(double a) const { return trunc(a); }
    __host__ __device__ int64_t operator()(int64_t a) const { return a; }
};
/* engine/polygamma.h's digamma, and CUDA's lgamma; float32 in double and
 * rounded once, as on the CPU */
struct u_digamma {
    __host__ __device__ float operator()(float a) const { return (float)em_digamma((double)a); }
    __host__ __device__ double operator()(double a) const { return em_digamma(a); }
};
struct u_lgamma {
    __host__ __device__ float operator()(float a) const { return (float)lgamma((double)a); }
    __host__ __device__ double operator()(double a) const { return lgamma(a); }
};
/* integers only: the engine turns bool's into logical_not */
struct u_bitwise_not {
    __host__ __device__ int64_t operator()(int64_t a) const { return ~a; }
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

/* float inputs: every op */
template <int D>
static int un_float(em_unary_op op, const char *name, em_tensor *out, const em_tensor *a)
{
    switch (op) {
    case EM_NEG: return un_run<D, u_neg>(name, out, a);
    case EM_ABS: return un_run<D, u_abs>(name, out, a);
    case EM_SIGN: return un_run<D, u_sign>(name, out, a);
    case EM_EXP: return un_run<D, u_exp>(name, out, a);
    case EM_LOG: return un_run<D, u_log>(name, out, a);
    case EM_LOG1P: return un_run<D, u_log1p>(name, out, a);
    case EM_EXPM1: return un_run<D, u_expm1>(name, out, a);
    case EM_SQRT: return un_run<D, u_sqrt>(name, out, a);
    case EM_RSQRT: return un_run<D, u_rsqrt>(name, out, a);
    case EM_SIN: return un_run<D, u_sin>(name, out, a);
    case EM_COS: return un_run<D, u_cos>(name, out, a);
    case EM_TANH: return un_run<D, u_tanh>(name, out, a);
    case EM_SIGMOID: return un_run<D, u_sigmoid>(name, out, a);
    case EM_RELU: return un_run<D, u_relu>(name, out, a);
    case EM_GELU: return un_run<D, u_gelu>(name, out, a);
    case EM_SILU: return un_run<D, u_silu>(name, out, a);
    case EM_FLOOR: return un_run<D, u_floor>(name, out, a);
    case EM_CEIL: return un_run<D, u_ceil>(name, out, a);
    case EM_ROUND: return un_run<D, u_round>(name, out, a);
    case EM_LOGICAL_NOT: return un_run<D, u_not>(name, out, a);
    case EM_RECIPROCAL: return un_run<D, u_reciprocal>(name, out, a);
    case EM_SQUARE: return un_run<D, u_square>(name, out, a);
    case EM_GELU_GRAD: return un_run<D, u_gelu_grad>(name, out, a);
    case EM_EXP2: return un_run<D, u_exp2>(name, out, a);
    case EM_LOG2: return un_run<D, u_log2>(name, out, a);
    case EM_LOG10: return un_run<D, u_log10>(name, out, a);
    case EM_ERF: return un_run<D, u_erf>(name, out, a);
    case EM_ERFC: return un_run<D, u_erfc>(name, out, a);
    case EM_ERFINV: return un_run<D, u_erfinv>(name, out, a);
    case EM_TRUNC: return un_run<D, u_trunc>(name, out, a);
    case EM_TAN: return un_run<D, u_tan>(name, out, a);
    case EM_SINH: return un_run<D, u_sinh>(name, out, a);
    case EM_COSH: return un_run<D, u_cosh>(name, out, a);
    case EM_ASIN: return un_run<D, u_asin>(name, out, a);
    case EM_ACOS: return un_run<D, u_acos>(name, out, a);
    case EM_ATAN: return un_run<D, u_atan>(name, out, a);
    case EM_ASINH: return un_run<D, u_asinh>(name, out, a);
    case EM_ACOSH: return un_run<D, u_acosh>(name, out, a);
    case EM_ATANH: return un_run<D, u_atanh>(name, out, a);
    case EM_DIGAMMA: return un_run<D, u_digamma>(name, out, a);
    case EM_LGAMMA: return un_run<D, u_lgamma>(name, out, a);
    /* No default case: -Wswitch fails the build while an op of the table
     * (engine/elementwise_ops.h) has no case here. */
    case EM_BITWISE_NOT: case EM_NUNARY: break;
    }
    return kc_error("%s: the CUDA kernel needs integer input, got %s", name, kc_dtype_name(a->dtype));
}

/* integer and bool inputs: the ops unary.c's integer loop has */
template <int D>
static int un_int(em_unary_op op, const char *name, em_tensor *out, const em_tensor *a)
{
    switch (op) {
    case EM_NEG: return un_run<D, u_neg>(name, out, a);
    case EM_ABS: return un_run<D, u_abs>(name, out, a);
    case EM_SIGN: return un_run<D, u_sign>(name, out, a);
    case EM_RELU: return un_run<D, u_relu>(name, out, a);
    case EM_FLOOR: return un_run<D, u_floor>(name, out, a);
    case EM_CEIL: return un_run<D, u_ceil>(name, out, a);
    case EM_ROUND: return un_run<D, u_round>(name, out, a);
    case EM_SQUARE: return un_run<D, u_square>(name, out, a);
    case EM_LOGICAL_NOT: return un_run<D, u_not>(name, out, a);
    case EM_TRUNC: return un_run<D, u_trunc>(name, out, a);
    case EM_BITWISE_NOT:
        if (D == EM_BOOL) return kc_error("bitwise_not: the CUDA kernel needs integer input, got bool");
        return un_run<D, u_bitwise_not>(name, out, a);
    default:
        return kc_error("%s: the CUDA kernel needs float input, got %s", name, kc_dtype_name(a->dtype));
    }
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
    case EM_UINT8: return un_int<EM_UINT8>(op, name, out, a);
    case EM_BOOL: return un_int<EM_BOOL>(op, name, out, a);
    default:
        return kc_error("%s: the CUDA kernel has no %s loop (compute in float32)", name, kc_dtype_name(dt));
    }
}
