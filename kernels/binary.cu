/*
 * binary.cu — the binary elementwise kernels (the CUDA twin of
 * engine/cpu/binary.c), same ops, dtypes and formulas.
 *
 * Each op is a functor with one overload per compute type (float, double,
 * int64: integers and bool compute in int64 with wrap-around and keep the
 * low bits on the way back; bool results are stored as 0/1). Inputs share
 * the compute dtype; comparisons and logical ops write bool.
 *
 * Float32/float64 on one coalesced dim take 16-byte vector loads and stores,
 * with either input allowed to be a single broadcast value (stride 0: a
 * number expanded to the other's shape, x * 2), read once per thread.
 * Everything else goes through kc_foreach.
 */
#include "elementwise.cuh"
#include "../engine/polygamma.h"

#include <type_traits>

/* ---- ops --------------------------------------------------------------------- */

struct b_add {
    __host__ __device__ float operator()(float a, float b) const { return a + b; }
    __host__ __device__ double operator()(double a, double b) const { return a + b; }
    __host__ __device__ int64_t operator()(int64_t a, int64_t b) const
    {
        return (int64_t)((uint64_t)a + (uint64_t)b);
    }
};
struct b_sub {
    __host__ __device__ float operator()(float a, float b) const { return a - b; }
    __host__ __device__ double operator()(double a, double b) const { return a - b; }
    __host__ __device__ int64_t operator()(int64_t a, int64_t b) const
    {
        return (int64_t)((uint64_t)a - (uint64_t)b);
    }
};
struct b_mul {
    __host__ __device__ float operator()(float a, float b) const { return a * b; }
    __host__ __device__ double operator()(double a, double b) const { return a * b; }
    __host__ __device__ int64_t operator()(int64_t a, int64_t b) const
    {
        return (int64_t)((uint64_t)a * (uint64_t)b);
    }
};
struct b_div {
    __host__ __device__ float operator()(float a, float b) const { return a / b; }
    __host__ __device__ double operator()(double a, double b) const { return a / b; }
};
/* Python/PyTorch remainder: the result takes the sign of the divisor. An
 * integer remainder by zero gives 0 here: the CPU raises an error, which a
 * kernel that does not synchronise cannot. x % -1 is 0 (INT64_MIN % -1 would
 * trap). */
struct b_rem {
    __host__ __device__ float operator()(float a, float b) const
    {
        float r = fmodf(a, b);
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
    }
    __host__ __device__ double operator()(double a, double b) const
    {
        double r = fmod(a, b);
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
    }
    __host__ __device__ int64_t operator()(int64_t x, int64_t y) const
    {
        if (y == 0 || y == -1) return 0;
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return r;
    }
};
/* `scalar_b`: the CPU's tensor ^ scalar loop, which the CPU takes when the
 * output and a are dense and b is broadcast along the innermost dim: there
 * x^2 is x*x and x^0.5 is sqrt(x) (which differ from pow at -0 and -inf). */
struct b_pow {
    bool scalar_b;
    __host__ __device__ float operator()(float a, float b) const
    {
        if (scalar_b) {
            if (b == 2) return a * a;
            if (b == 0.5f) return sqrtf(a);
        }
        return powf(a, b);
    }
    __host__ __device__ double operator()(double a, double b) const
    {
        if (scalar_b) {
            if (b == 2) return a * a;
            if (b == 0.5) return sqrt(a);
        }
        return pow(a, b);
    }
    /* PyTorch: an integer to a negative power is 1/base^|e| truncated */
    __host__ __device__ int64_t operator()(int64_t base, int64_t e) const { return emf_pow_i64(base, e); }
};
/* NaN in either operand propagates (a's first) */
struct b_max {
    template <typename C> __host__ __device__ C operator()(C a, C b) const
    {
        return a != a ? a : b != b ? b : a > b ? a : b;
    }
};
struct b_min {
    template <typename C> __host__ __device__ C operator()(C a, C b) const
    {
        return a != a ? a : b != b ? b : a < b ? a : b;
    }
};
struct b_eq { template <typename C> __host__ __device__ bool operator()(C a, C b) const { return a == b; } };
struct b_ne { template <typename C> __host__ __device__ bool operator()(C a, C b) const { return a != b; } };
struct b_lt { template <typename C> __host__ __device__ bool operator()(C a, C b) const { return a < b; } };
struct b_le { template <typename C> __host__ __device__ bool operator()(C a, C b) const { return a <= b; } };
struct b_gt { template <typename C> __host__ __device__ bool operator()(C a, C b) const { return a > b; } };
struct b_ge { template <typename C> __host__ __device__ bool operator()(C a, C b) const { return a >= b; } };
struct b_and {
    template <typename C> __host__ __device__ bool operator()(C a, C b) const { return (a != 0) & (b != 0); }
};
struct b_or {
    template <typename C> __host__ __device__ bool operator()(C a, C b) const { return (a != 0) | (b != 0); }
};

/* ---- elementwise math (formulas as engine/cpu/binary.c) ----------------------- */

struct b_atan2 {
    __host__ __device__ float operator()(float a, float b) const { return atan2f(a, b); }
    __host__ __device__ double operator()(double a, double b) const { return atan2(a, b); }
};
/* (x, n): engine/polygamma.h in double, float32 rounded once, as on the CPU */
struct b_polygamma {
    __host__ __device__ float operator()(float a, float b) const { return (float)em_polygamma((double)b, (double)a); }
    __host__ __device__ double operator()(double a, double b) const { return em_polygamma(b, a); }
};
struct b_hypot {
    __host__ __device__ float operator()(float a, float b) const { return hypotf(a, b); }
    __host__ __device__ double operator()(double a, double b) const { return hypot(a, b); }
};
struct b_copysign {
    __host__ __device__ float operator()(float a, float b) const { return copysignf(a, b); }
    __host__ __device__ double operator()(double a, double b) const { return copysign(a, b); }
};
/* equal infinities give themselves (not inf - inf = NaN) */
struct b_logaddexp {
    __host__ __device__ float operator()(float a, float b) const
    {
        if (isinf(a) && a == b) return a;
        float m = a > b ? a : b;
        return m + log1pf(expf(-fabsf(a - b)));
    }
    __host__ __device__ double operator()(double a, double b) const
    {
        if (isinf(a) && a == b) return a;
        double m = a > b ? a : b;
        return m + log1p(exp(-fabs(a - b)));
    }
};
struct b_logaddexp2 {
    __host__ __device__ float operator()(float a, float b) const
    {
        if (isinf(a) && a == b) return a;
        float m = a > b ? a : b;
        return m + log1pf(exp2f(-fabsf(a - b))) * 1.44269504088896340736f;
    }
    __host__ __device__ double operator()(double a, double b) const
    {
        if (isinf(a) && a == b) return a;
        double m = a > b ? a : b;
        return m + log1p(exp2(-fabs(a - b))) * 1.44269504088896340736;
    }
};
/* Integer fmod and divisions by zero give 0 here (the CPU raises an error,
 * which a kernel that does not synchronise cannot); y == -1 apart, as
 * INT64_MIN / -1 would trap. */
struct b_fmod {
    __host__ __device__ float operator()(float a, float b) const { return fmodf(a, b); }
    __host__ __device__ double operator()(double a, double b) const { return fmod(a, b); }
    __host__ __device__ int64_t operator()(int64_t x, int64_t y) const
    {
        return y == 0 || y == -1 ? 0 : x % y;
    }
};
struct b_div_trunc {
    __host__ __device__ float operator()(float a, float b) const { return truncf(a / b); }
    __host__ __device__ double operator()(double a, double b) const { return trunc(a / b); }
    __host__ __device__ int64_t operator()(int64_t x, int64_t y) const
    {
        if (y == 0) return 0;
        if (y == -1) return (int64_t)(0 - (uint64_t)x);
        return x / y;
    }
};
/* PyTorch's div_floor_floating: the floor of the exact quotient, via fmod */
template <typename T> __host__ __device__ inline T div_floor_fp(T a, T b)
{
    if (b == 0) return a / b;
    T mod = fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
    if (div == 0) return copysign(T(0), a / b);
    T fl = floor(div);
    if (div - fl > T(0.5)) fl += 1;
    return fl;
}
struct b_div_floor {
    __host__ __device__ float operator()(float a, float b) const { return div_floor_fp<float>(a, b); }
    __host__ __device__ double operator()(double a, double b) const { return div_floor_fp<double>(a, b); }
    __host__ __device__ int64_t operator()(int64_t x, int64_t y) const
    {
        if (y == 0) return 0;
        if (y == -1) return (int64_t)(0 - (uint64_t)x);
        int64_t q = x / y;
        if (x % y != 0 && ((x < 0) != (y < 0))) q -= 1;
        return q;
    }
};
struct b_bit_and { __host__ __device__ int64_t operator()(int64_t a, int64_t b) const { return a & b; } };
struct b_bit_or { __host__ __device__ int64_t operator()(int64_t a, int64_t b) const { return a | b; } };
struct b_bit_xor { __host__ __device__ int64_t operator()(int64_t a, int64_t b) const { return a ^ b; } };
/* counts outside [0, 64): 0 to the left, the sign fill to the right */
struct b_lshift {
    __host__ __device__ int64_t operator()(int64_t a, int64_t b) const
    {
        return b < 0 || b >= 64 ? 0 : (int64_t)((uint64_t)a << b);
    }
};
struct b_rshift {
    __host__ __device__ int64_t operator()(int64_t a, int64_t b) const
    {
        return b < 0 || b >= 64 ? (a < 0 ? -1 : 0) : a >> b;
    }
};

/* ---- kernels ----------------------------------------------------------------- */

/* The result type of F on compute type C: bool for comparisons. */
template <typename F, typename C> struct b_result {
    typedef decltype(std::declval<F>()(std::declval<C>(), std::declval<C>())) type;
};

template <int D, typename F> struct bin_fn {
    F f;
    __host__ __device__ void operator()(char **p) const
    {
        typedef typename ew_calc<D>::C C;
        C x = ew_calc<D>::load(ew_ld<D>(p[1])), y = ew_calc<D>::load(ew_ld<D>(p[2]));
        if constexpr (std::is_same<typename b_result<F, C>::type, bool>::value)
            *(uint8_t *)p[0] = (uint8_t)f(x, y);
        else
            ew_st<D>(p[0], ew_calc<D>::store(f(x, y)));
    }
};

/* Dense float32/float64 on one dim. MODE 0: both inputs dense; 1: b is one
 * broadcast value; 2: a is. V = 16 bytes of input per access. */
template <typename T, typename O, int MODE, typename F>
__global__ void bin_vec_kernel(O *o, const T *a, const T *b, int64_t n, F f)
{
    const int V = 16 / sizeof(T);
    typedef ew_vec<T, V> VA;
    typedef ew_vec<O, V> VO;
    int64_t step = (int64_t)gridDim.x * blockDim.x, tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t nv = n / V;
    T sa = MODE == 2 ? *a : T(), sb = MODE == 1 ? *b : T();
    for (int64_t i = tid; i < nv; i += step) {
        VA x, y;
        if (MODE != 2) x = ((const VA *)a)[i];
        if (MODE != 1) y = ((const VA *)b)[i];
        VO r;
#pragma unroll
        for (int k = 0; k < V; k++) r.v[k] = (O)f(MODE == 2 ? sa : x.v[k], MODE == 1 ? sb : y.v[k]);
        ((VO *)o)[i] = r;
    }
    for (int64_t i = nv * V + tid; i < n; i += step)
        o[i] = (O)f(MODE == 2 ? sa : a[i], MODE == 1 ? sb : b[i]);
}

template <typename T, typename O, int MODE, typename F>
static int bin_vec(const char *name, const kc_iter<3> &it, int dev, cudaStream_t s, F f)
{
    int64_t nv = it.numel / (16 / (int64_t)sizeof(T));
    KC_LAUNCH(kc_grid(nv > 0 ? nv : it.numel, dev), KC_THREADS, 0, s, bin_vec_kernel<T, O, MODE, F>)(
        (O *)it.data[0], (const T *)it.data[1], (const T *)it.data[2], it.numel, f);
    return kc_launched(name, dev);
}

template <int D, typename F>
static int bin_run(const char *name, const kc_iter<3> &it, int dev, cudaStream_t s, F f)
{
    if constexpr (D == EM_FLOAT32 || D == EM_FLOAT64) {
        typedef typename ew_dt<D>::S T;
        typedef typename std::conditional<std::is_same<typename b_result<F, T>::type, bool>::value,
                                          uint8_t, T>::type O;
        const int V = 16 / sizeof(T);
        if (it.ndim == 1 && it.strides[0][0] == 1 && ew_aligned(it.data[0], V * sizeof(O))) {
            int64_t sa = it.strides[1][0], sb = it.strides[2][0];
            bool da = sa == 1 && ew_aligned(it.data[1], 16), db = sb == 1 && ew_aligned(it.data[2], 16);
            if (da && db) return bin_vec<T, O, 0>(name, it, dev, s, f);
            if (da && sb == 0) return bin_vec<T, O, 1>(name, it, dev, s, f);
            if (sa == 0 && db) return bin_vec<T, O, 2>(name, it, dev, s, f);
        }
    }
    return ew_foreach(name, it, dev, s, bin_fn<D, F>{f});
}

/* Every op for dtype D: float inputs take all but the bitwise ops, integer
 * and bool inputs all but true division and the float functions. */
template <int D>
static int bin_dispatch(em_binary_op op, const char *name, const kc_iter<3> &it, int dev, cudaStream_t s)
{
    constexpr bool fl = D == EM_FLOAT32 || D == EM_FLOAT64;
    switch (op) {
    case EM_ADD: return bin_run<D>(name, it, dev, s, b_add());
    case EM_SUB: return bin_run<D>(name, it, dev, s, b_sub());
    case EM_MUL: return bin_run<D>(name, it, dev, s, b_mul());
    case EM_REMAINDER: return bin_run<D>(name, it, dev, s, b_rem());
    case EM_POW: {
        bool scalar_b = fl && ew_inner_stride(it, 0) == 1 && ew_inner_stride(it, 1) == 1 &&
                        ew_inner_stride(it, 2) == 0;
        return bin_run<D>(name, it, dev, s, b_pow{scalar_b});
    }
    case EM_MAXIMUM: return bin_run<D>(name, it, dev, s, b_max());
    case EM_MINIMUM: return bin_run<D>(name, it, dev, s, b_min());
    case EM_EQ: return bin_run<D>(name, it, dev, s, b_eq());
    case EM_NE: return bin_run<D>(name, it, dev, s, b_ne());
    case EM_LT: return bin_run<D>(name, it, dev, s, b_lt());
    case EM_LE: return bin_run<D>(name, it, dev, s, b_le());
    case EM_GT: return bin_run<D>(name, it, dev, s, b_gt());
    case EM_GE: return bin_run<D>(name, it, dev, s, b_ge());
    case EM_LOGICAL_AND: return bin_run<D>(name, it, dev, s, b_and());
    case EM_LOGICAL_OR: return bin_run<D>(name, it, dev, s, b_or());
    case EM_FMOD: return bin_run<D>(name, it, dev, s, b_fmod());
    case EM_DIV_TRUNC: return bin_run<D>(name, it, dev, s, b_div_trunc());
    case EM_DIV_FLOOR: return bin_run<D>(name, it, dev, s, b_div_floor());
    /* float-only and integer-only ops: the other dtypes fall to the error */
    case EM_DIV: if constexpr (fl) return bin_run<D>(name, it, dev, s, b_div()); break;
    case EM_ATAN2: if constexpr (fl) return bin_run<D>(name, it, dev, s, b_atan2()); break;
    case EM_HYPOT: if constexpr (fl) return bin_run<D>(name, it, dev, s, b_hypot()); break;
    case EM_COPYSIGN: if constexpr (fl) return bin_run<D>(name, it, dev, s, b_copysign()); break;
    case EM_LOGADDEXP: if constexpr (fl) return bin_run<D>(name, it, dev, s, b_logaddexp()); break;
    case EM_LOGADDEXP2: if constexpr (fl) return bin_run<D>(name, it, dev, s, b_logaddexp2()); break;
    case EM_POLYGAMMA: if constexpr (fl) return bin_run<D>(name, it, dev, s, b_polygamma()); break;
    case EM_BITWISE_AND: if constexpr (!fl) return bin_run<D>(name, it, dev, s, b_bit_and()); break;
    case EM_BITWISE_OR: if constexpr (!fl) return bin_run<D>(name, it, dev, s, b_bit_or()); break;
    case EM_BITWISE_XOR: if constexpr (!fl) return bin_run<D>(name, it, dev, s, b_bit_xor()); break;
    case EM_BITWISE_LSHIFT: if constexpr (!fl) return bin_run<D>(name, it, dev, s, b_lshift()); break;
    case EM_BITWISE_RSHIFT: if constexpr (!fl) return bin_run<D>(name, it, dev, s, b_rshift()); break;
    /* No default case: -Wswitch fails the build while an op of the table
     * (engine/elementwise_ops.h) has no case here. */
    case EM_NBINARY:
        break;
    }
    return kc_error("%s: the CUDA kernel needs %s inputs, got %s", name, fl ? "integer or bool" : "float",
                    kc_dtype_name((em_dtype)D));
}

int kc_binary(em_binary_op op, em_tensor *out, const em_tensor *a, const em_tensor *b)
{
    if ((unsigned)op >= EM_NBINARY) return kc_error("binary: invalid op %d", (int)op);
    const char *name = em_binary_info(op)->name;
    em_dtype dt = a->dtype;
    if (b->dtype != dt)
        return kc_error("%s: CUDA kernel called with mixed dtypes %s and %s", name, kc_dtype_name(dt),
                        kc_dtype_name(b->dtype));
    bool cmp = em_binary_info(op)->dtypes == EM_OPDT_TO_BOOL;
    if (out->dtype != (cmp ? EM_BOOL : dt))
        return kc_error("%s: CUDA kernel called with output dtype %s for %s inputs", name,
                        kc_dtype_name(out->dtype), kc_dtype_name(dt));
    if (dt == EM_FLOAT16 || dt == EM_BFLOAT16)
        return kc_error("%s: the CUDA kernel has no %s loop (compute in float32)", name, kc_dtype_name(dt));
    const em_tensor *ts[3] = {out, a, b};
    kc_iter<3> it;
    int dev;
    cudaStream_t s;
    if (int go = kc_prepare(ts, &it, &dev, &s); go <= 0) return go;
    switch (dt) {
    case EM_FLOAT32: return bin_dispatch<EM_FLOAT32>(op, name, it, dev, s);
    case EM_FLOAT64: return bin_dispatch<EM_FLOAT64>(op, name, it, dev, s);
    case EM_INT64: return bin_dispatch<EM_INT64>(op, name, it, dev, s);
    case EM_INT32: return bin_dispatch<EM_INT32>(op, name, it, dev, s);
    case EM_INT16: return bin_dispatch<EM_INT16>(op, name, it, dev, s);
    case EM_INT8: return bin_dispatch<EM_INT8>(op, name, it, dev, s);
    case EM_UINT8: return bin_dispatch<EM_UINT8>(op, name, it, dev, s);
    case EM_BOOL: return bin_dispatch<EM_BOOL>(op, name, it, dev, s);
    default: return kc_error("%s: no CUDA kernel for %s", name, kc_dtype_name(dt));
    }
}
