/* formulas.h — what the CPU backend (engine/, engine/cpu/) and the CUDA
 * backend (kernels/) must compute alike, written once: float16 and bfloat16
 * conversions, float-to-integer saturation, integer powers, the random
 * generators' mantissa widths, and the layout arithmetic of the iterators
 * and the index ops. engine/polygamma.h and engine/philox.h are the two
 * larger formulas of this kind, in headers of their own.
 *
 * Plain C that nvcc and g++ (the emulated device) also compile. The scalar
 * functions are host and device there; the layout ones (on em_tensor
 * headers) are host code on every backend. Each is a static inline function,
 * so kernels/ (a shared object that never calls into the engine) and the
 * engine each get their own copy of one text. */
#ifndef EMBER_FORMULAS_H
#define EMBER_FORMULAS_H

#include "backend.h"     /* em_index_op */
#include "ember.h"

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__) || defined(EMBER_CUDA_EMU)
#define EMF_FN __host__ __device__ static inline
#else
#define EMF_FN static inline
#endif

/* ---- bits ------------------------------------------------------------------ */

/* a float's bits and back: the device's reinterpreting moves; in C, memcpy (one move too) */
#ifdef __CUDA_ARCH__
EMF_FN uint32_t emf_f32_bits(float f) { return __float_as_uint(f); }
EMF_FN float emf_bits_f32(uint32_t x) { return __uint_as_float(x); }
#else
EMF_FN uint32_t emf_f32_bits(float f) { uint32_t x; memcpy(&x, &f, 4); return x; }
EMF_FN float emf_bits_f32(uint32_t x) { float f; memcpy(&f, &x, 4); return f; }
#endif

/* ---- float16 and bfloat16: round to nearest even; NaN stays a quiet NaN -- */

EMF_FN float emf_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) bits = sign;
        else { /* subnormal: normalise */
            int e = -1;
            do { e++; mant <<= 1; } while (!(mant & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) bits = sign | 0x7f800000u | (mant << 13);
    else bits = sign | ((exp + 112) << 23) | (mant << 13);
    return emf_bits_f32(bits);
}

EMF_FN uint16_t emf_float_to_half(float f)
{
    uint32_t x = emf_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* overflow -> inf */
    if (absx < 0x38800000u) { /* subnormal or zero in half */
        if (absx < 0x33000000u) return (uint16_t)sign;
        uint32_t mant = (absx & 0x7fffff) | 0x800000;
        int shift = 113 - (int)(absx >> 23) + 13;
        uint32_t r = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((absx >> 13) - (112u << 10));
    uint32_t rem = absx & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

EMF_FN float emf_bf16_to_float(uint16_t h) { return emf_bits_f32((uint32_t)h << 16); }

EMF_FN uint16_t emf_float_to_bf16(float f)
{
    uint32_t x = emf_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet nan */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- integers ---------------------------------------------------------------- */

/* Float to int64 without undefined behaviour: NaN gives 0, out-of-range
 * values saturate. */
EMF_FN int64_t emf_f64_to_i64(double v)
{
    if (v != v) return 0;
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)v;
}

/* ---- an element stored from a double or an int64, with the CPU's conversions:
 * float to integer saturating (NaN 0) then wrapping to the narrower integer as
 * a C cast does, bool v != 0, half types rounded to nearest even. The CPU's
 * loops and the CUDA reductions' epilogues store through these. ------------- */

#ifdef __CUDA_ARCH__
#define EMF_HALF_BITS(f) __half_as_ushort(__float2half(f))
#define EMF_BF16_BITS(f) __bfloat16_as_ushort(__float2bfloat16(f))
#else
#define EMF_HALF_BITS(f) emf_float_to_half(f)
#define EMF_BF16_BITS(f) emf_float_to_bf16(f)
#endif

EMF_FN void emf_store_f64(void *p, int d, double v)
{
    switch (d) {
    case EM_FLOAT32: *(float *)p = (float)v; break;
    case EM_FLOAT64: *(double *)p = v; break;
    case EM_INT64: *(int64_t *)p = emf_f64_to_i64(v); break;
    case EM_INT32: *(int32_t *)p = (int32_t)(uint32_t)(uint64_t)emf_f64_to_i64(v); break;
    case EM_INT16: *(int16_t *)p = (int16_t)(uint16_t)(uint64_t)emf_f64_to_i64(v); break;
    case EM_INT8: *(int8_t *)p = (int8_t)(uint8_t)(uint64_t)emf_f64_to_i64(v); break;
    case EM_UINT8: *(uint8_t *)p = (uint8_t)(uint64_t)emf_f64_to_i64(v); break;
    case EM_BOOL: *(uint8_t *)p = v != 0; break;
    case EM_FLOAT16: *(uint16_t *)p = EMF_HALF_BITS((float)v); break;
    case EM_BFLOAT16: *(uint16_t *)p = EMF_BF16_BITS((float)v); break;
    default: break;
    }
}

EMF_FN void emf_store_i64(void *p, int d, int64_t v)
{
    switch (d) {
    case EM_INT64: *(int64_t *)p = v; break;
    case EM_INT32: *(int32_t *)p = (int32_t)(uint32_t)(uint64_t)v; break;
    case EM_INT16: *(int16_t *)p = (int16_t)(uint16_t)(uint64_t)v; break;
    case EM_INT8: *(int8_t *)p = (int8_t)(uint8_t)(uint64_t)v; break;
    case EM_UINT8: *(uint8_t *)p = (uint8_t)(uint64_t)v; break;
    case EM_BOOL: *(uint8_t *)p = v != 0; break;
    default: emf_store_f64(p, d, (double)v); break;
    }
}

/* base^e with int64 wrap-around; PyTorch's rule for a negative power: 1/base^|e|
 * truncated (so 0 but for base 1 and -1) */
EMF_FN int64_t emf_pow_i64(int64_t base, int64_t e)
{
    if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)base;
    while (e) {
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)r;
}

/* How many random bits a uniform draw of the float dtype d keeps (its
 * mantissa and the hidden bit; float64 takes 32, one Philox output) */
EMF_FN int emf_mantissa_bits(em_dtype d)
{
    switch (d) {
    case EM_FLOAT16: return 11;
    case EM_BFLOAT16: return 8;
    case EM_FLOAT64: return 32;
    default: return 24;
    }
}

/* ---- layout arithmetic (host code) --------------------------------------------- */

static inline int64_t emf_numel(const em_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->sizes[i];
    return n;
}

/* row-major with size-1 dims' strides free */
static inline bool emf_is_contiguous(const em_tensor *t)
{
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->sizes[i] != 1 && t->strides[i] != expected) return false;
        expected *= t->sizes[i];
    }
    return true;
}

/* Drops size-1 dims of (sz, st) and merges neighbours whose strides chain;
 * returns the dims left. */
static inline int emf_coalesce(int64_t *sz, int64_t *st, int n)
{
    int k = 0;
    for (int d = 0; d < n; d++) {
        if (sz[d] == 1) continue;
        if (k > 0 && st[k - 1] == st[d] * sz[d]) {
            sz[k - 1] *= sz[d];
            st[k - 1] = st[d];
            continue;
        }
        sz[k] = sz[d];
        st[k] = st[d];
        k++;
    }
    return k;
}

/* A header-only view of t with the given iteration sizes; along dim its
 * stride is 0, so an iterator yields the base of the line that an index then
 * addresses (gather, scatter and their relatives). */
static inline em_tensor emf_line_view(const em_tensor *t, const int64_t *sizes, int ndim, int dim)
{
    em_tensor v = *t;
    v.ndim = ndim;
    for (int i = 0; i < ndim; i++) { v.sizes[i] = sizes[i]; v.strides[i] = i == dim ? 0 : t->strides[i]; }
    return v;
}

/* The 1-D idx seen with the given sizes: it moves along dim only
 * (index_select and index_add as a gather and a scatter). */
static inline em_tensor emf_spread_index(const em_tensor *idx, const int64_t *sizes, int ndim, int dim)
{
    em_tensor v = *idx;
    v.ndim = ndim;
    for (int i = 0; i < ndim; i++) { v.sizes[i] = sizes[i]; v.strides[i] = i == dim ? idx->strides[0] : 0; }
    return v;
}

/* The op an index family call names in its errors (both backends say the same). */
static inline const char *emf_index_op_name(em_index_op op)
{
    switch (op) {
    case EM_INDEX_SELECT: return "index_select";
    case EM_GATHER: return "gather";
    case EM_SCATTER: return "scatter";
    case EM_SCATTER_ADD: return "scatter_add";
    case EM_INDEX_ADD: return "index_add";
    case EM_SCATTER_MUL: case EM_SCATTER_AMAX: case EM_SCATTER_AMIN: return "scatter_reduce";
    default: return "index";
    }
}

#endif
