/*
 * ternary.cu — where, lerp, addcmul, addcdiv and clamp (the CUDA twins of
 * engine/cpu/ternary.c).
 *
 * where only selects, so it moves raw element bytes of any dtype; dense
 * 4- and 8-byte data take vector accesses, with either value allowed to be
 * one broadcast element (masked_fill's value). lerp/addcmul/addcdiv compute
 * where the CPU does: in float32 when every operand is dense along the
 * innermost dim (the CPU's typed loop), through double otherwise, with each
 * multiply and add rounded on its own as on the CPU. clamp applies the lower
 * bound, then the upper one, so lo > hi gives hi and NaN stays NaN.
 */
#include "elementwise.cuh"

#include <math.h>

static const char *const tern_names[EM_NTERNARY] = {"where", "lerp", "addcmul", "addcdiv"};

/* ---- where ------------------------------------------------------------------- */

template <typename U> struct where_fn {
    __host__ __device__ void operator()(char **p) const
    {
        *(U *)p[0] = *(const uint8_t *)p[1] ? *(const U *)p[2] : *(const U *)p[3];
    }
};

/* Dense on one dim; SB/SC: b/c is one broadcast element. */
template <typename U, int SB, int SC>
__global__ void where_vec_kernel(U *o, const uint8_t *m, const U *b, const U *c, int64_t n)
{
    const int V = 16 / sizeof(U);
    typedef ew_vec<U, V> VU;
    typedef ew_vec<uint8_t, V> VM;
    int64_t step = (int64_t)gridDim.x * blockDim.x, tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t nv = n / V;
    U sb = SB ? *b : U(), sc = SC ? *c : U();
    for (int64_t i = tid; i < nv; i += step) {
        VM mv = ((const VM *)m)[i];
        VU x, y, r;
        if (!SB) x = ((const VU *)b)[i];
        if (!SC) y = ((const VU *)c)[i];
#pragma unroll
        for (int k = 0; k < V; k++) r.v[k] = mv.v[k] ? (SB ? sb : x.v[k]) : (SC ? sc : y.v[k]);
        ((VU *)o)[i] = r;
    }
    for (int64_t i = nv * V + tid; i < n; i += step) o[i] = m[i] ? (SB ? sb : b[i]) : (SC ? sc : c[i]);
}

template <typename U, int SB, int SC>
static int where_vec(const kc_iter<4> &it, int dev, cudaStream_t s)
{
    int64_t nv = it.numel / (16 / (int64_t)sizeof(U));
    KC_LAUNCH(kc_grid(nv > 0 ? nv : it.numel, dev), KC_THREADS, 0, s, where_vec_kernel<U, SB, SC>)(
        (U *)it.data[0], (const uint8_t *)it.data[1], (const U *)it.data[2], (const U *)it.data[3], it.numel);
    return kc_launched("where", dev);
}

template <typename U>
static int where_run(const kc_iter<4> &it, int dev, cudaStream_t s)
{
    if constexpr (sizeof(U) >= 4) {
        const int V = 16 / sizeof(U);
        if (it.ndim == 1 && it.strides[0][0] == 1 && ew_aligned(it.data[0], 16) && it.strides[1][0] == 1 &&
            ew_aligned(it.data[1], V)) {
            int64_t sb = it.strides[2][0], sc = it.strides[3][0];
            bool db = sb == 1 && ew_aligned(it.data[2], 16), dc = sc == 1 && ew_aligned(it.data[3], 16);
            if (db && dc) return where_vec<U, 0, 0>(it, dev, s);
            if (sb == 0 && dc) return where_vec<U, 1, 0>(it, dev, s);
            if (db && sc == 0) return where_vec<U, 0, 1>(it, dev, s);
            if (sb == 0 && sc == 0) return where_vec<U, 1, 1>(it, dev, s);
        }
    }
    return ew_foreach("where", it, dev, s, where_fn<U>());
}

/* ---- lerp / addcmul / addcdiv -------------------------------------------------- */

__host__ __device__ inline double tern_f64(int op, double a, double b, double c, double s)
{
    switch (op) {
    case EM_LERP: return ew_dadd(a, ew_dmul(c, b - a));
    case EM_ADDCMUL: return ew_dadd(a, ew_dmul(ew_dmul(s, b), c));
    default: return a + ew_dmul(s, b) / c;
    }
}

__host__ __device__ inline float tern_f32(int op, float a, float b, float c, float s)
{
    switch (op) {
    case EM_LERP: return ew_fadd(a, ew_fmul(c, b - a));
    case EM_ADDCMUL: return ew_fadd(a, ew_fmul(ew_fmul(s, b), c));
    default: return a + ew_fmul(s, b) / c;
    }
}

/* in_float: float32 operands all dense along the innermost dim, where the
 * CPU computes in float32 (elsewhere it goes through double). */
template <int D> struct tern_fn {
    int op;
    double s;
    bool in_float;
    __host__ __device__ void operator()(char **p) const
    {
        if constexpr (D == EM_FLOAT32) {
            if (in_float) {
                ew_st<D>(p[0], tern_f32(op, ew_ld<D>(p[1]), ew_ld<D>(p[2]), ew_ld<D>(p[3]), (float)s));
                return;
            }
        }
        double r = tern_f64(op, ew_load_f64<D>(ew_ld<D>(p[1])), ew_load_f64<D>(ew_ld<D>(p[2])),
                            ew_load_f64<D>(ew_ld<D>(p[3])), s);
        ew_st<D>(p[0], ew_store_f64<D>(r));
    }
};

template <int D>
static int tern_run(em_ternary_op op, const kc_iter<4> &it, double s, int dev, cudaStream_t st)
{
    bool in_float = true;
    for (int k = 0; k < 4; k++) in_float = in_float && ew_inner_stride(it, k) == 1;
    return ew_foreach(tern_names[op], it, dev, st, tern_fn<D>{(int)op, s, in_float});
}

int kc_ternary(em_ternary_op op, em_tensor *out, const em_tensor *a, const em_tensor *b,
               const em_tensor *c, double s)
{
    if ((unsigned)op >= EM_NTERNARY) return kc_error("ternary: invalid op %d", (int)op);
    if (op == EM_WHERE) {
        if (a->dtype != EM_BOOL || b->dtype != out->dtype || c->dtype != out->dtype)
            return kc_error("where: CUDA kernel called with condition %s, values %s and %s, output %s",
                            kc_dtype_name(a->dtype), kc_dtype_name(b->dtype), kc_dtype_name(c->dtype),
                            kc_dtype_name(out->dtype));
    } else if (a->dtype != out->dtype || b->dtype != out->dtype || c->dtype != out->dtype) {
        return kc_error("%s: CUDA kernel called with mixed dtypes", tern_names[op]);
    }
    const em_tensor *ts[4] = {out, a, b, c};
    kc_iter<4> it;
    int dev;
    cudaStream_t st;
    if (int go = kc_prepare(ts, &it, &dev, &st); go <= 0) return go;
    if (op == EM_WHERE) {
        switch (em_dtype_size(out->dtype)) {
        case 1: return where_run<uint8_t>(it, dev, st);
        case 2: return where_run<uint16_t>(it, dev, st);
        case 4: return where_run<uint32_t>(it, dev, st);
        default: return where_run<uint64_t>(it, dev, st);
        }
    }
    EW_DISPATCH_DTYPE(out->dtype, tern_names[op], tern_run, op, it, s, dev, st)
}

/* ---- clamp ------------------------------------------------------------------- */

/* float32/float64 with the bounds in the element type (absent: infinite).
 * The CPU's other float32 loop compares in double and rounds the result,
 * which picks the same values: rounding to float is monotonic. */
template <typename T> struct clamp_typed {
    T lo, hi;
    __host__ __device__ T operator()(T a) const
    {
        T x = a < lo ? lo : a;
        return x > hi ? hi : x;
    }
};
template <int D> struct clamp_typed_fn {
    clamp_typed<typename ew_dt<D>::S> f;
    __host__ __device__ void operator()(char **p) const { ew_st<D>(p[0], f(ew_ld<D>(p[1]))); }
};

/* float16/bfloat16: through double */
template <int D> struct clamp_f64_fn {
    double lo, hi;
    __host__ __device__ void operator()(char **p) const
    {
        double x = ew_load_f64<D>(ew_ld<D>(p[1]));
        x = x < lo ? lo : x;
        ew_st<D>(p[0], ew_store_f64<D>(x > hi ? hi : x));
    }
};

/* integers and bool: in int64 with saturated bounds */
template <int D> struct clamp_int_fn {
    int64_t lo, hi;
    bool has_lo, has_hi;
    __host__ __device__ void operator()(char **p) const
    {
        int64_t x = ew_load_i64<D>(ew_ld<D>(p[1]));
        if (has_lo && x < lo) x = lo;
        if (has_hi && x > hi) x = hi;
        ew_st<D>(p[0], ew_store_i64<D>(x));
    }
};

template <int D>
static int clamp_run(const kc_iter<2> &it, int dev, cudaStream_t s, double lo, double hi, bool has_lo,
                     bool has_hi)
{
    typedef typename ew_dt<D>::S T;
    if constexpr (D == EM_FLOAT32 || D == EM_FLOAT64) {
        clamp_typed<T> f = {has_lo ? (T)lo : (T)-INFINITY, has_hi ? (T)hi : (T)INFINITY};
        int rc;
        if (ew_try_map_vec<T, T>("clamp", it, dev, s, f, &rc)) return rc;
        return ew_foreach("clamp", it, dev, s, clamp_typed_fn<D>{f});
    } else if constexpr (ew_is_float<D>()) {
        return ew_foreach("clamp", it, dev, s,
                          clamp_f64_fn<D>{has_lo ? lo : -INFINITY, has_hi ? hi : INFINITY});
    } else {
        return ew_foreach("clamp", it, dev, s,
                          clamp_int_fn<D>{emf_f64_to_i64(lo), emf_f64_to_i64(hi), has_lo, has_hi});
    }
}

int kc_clamp(em_tensor *out, const em_tensor *a, double lo, double hi, bool has_lo, bool has_hi)
{
    if (a->dtype != out->dtype)
        return kc_error("clamp: CUDA kernel called with input %s and output %s", kc_dtype_name(a->dtype),
                        kc_dtype_name(out->dtype));
    const em_tensor *ts[2] = {out, a};
    kc_iter<2> it;
    int dev;
    cudaStream_t s;
    if (int go = kc_prepare(ts, &it, &dev, &s); go <= 0) return go;
    EW_DISPATCH_DTYPE(out->dtype, "clamp", clamp_run, it, dev, s, lo, hi, has_lo, has_hi)
}
