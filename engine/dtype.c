/* dtype.c — dtype facts, type promotion, half/bfloat16 conversion, devices. */
#include "ember.h"
#include "formulas.h"

#include <math.h>

#include <stdio.h>
#include <string.h>

static const char *const dtype_names[EM_NDTYPES] = {
    [EM_FLOAT32] = "float32", [EM_FLOAT64] = "float64", [EM_INT64] = "int64",     [EM_INT32] = "int32",
    [EM_UINT8] = "uint8",     [EM_BOOL] = "bool",       [EM_FLOAT16] = "float16", [EM_BFLOAT16] = "bfloat16",
    [EM_INT8] = "int8",       [EM_INT16] = "int16",
};

static em_dtype default_dtype = EM_FLOAT32;

const char *em_dtype_name(em_dtype d) { return (unsigned)d < EM_NDTYPES ? dtype_names[d] : "?"; }

int em_dtype_from_name(const char *name, em_dtype *out)
{
    static const struct { const char *alias; em_dtype d; } aliases[] = {
        {"float", EM_FLOAT32}, {"double", EM_FLOAT64}, {"long", EM_INT64},
        {"int", EM_INT32}, {"half", EM_FLOAT16}, {"byte", EM_UINT8},
        {"short", EM_INT16}, {"char", EM_INT8},
    };
    for (int i = 0; i < EM_NDTYPES; i++)
        if (strcmp(name, dtype_names[i]) == 0) { *out = (em_dtype)i; return 0; }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0) { *out = aliases[i].d; return 0; }
    return em_set_error("unknown dtype '%s' (expected float32, float64, int64, int32, int16, "
                        "int8, uint8, bool, float16 or bfloat16)", name);
}

bool em_dtype_is_float(em_dtype d)
{
    return d == EM_FLOAT32 || d == EM_FLOAT64 || d == EM_FLOAT16 || d == EM_BFLOAT16;
}

bool em_dtype_is_int(em_dtype d)
{
    return d == EM_INT64 || d == EM_INT32 || d == EM_INT16 || d == EM_INT8 || d == EM_UINT8;
}

void em_int_range(em_dtype d, double *lo, double *hi)
{
    switch (d) {
    case EM_UINT8: *lo = 0; *hi = 255; break;
    case EM_INT8: *lo = -128; *hi = 127; break;
    case EM_INT16: *lo = -32768; *hi = 32767; break;
    case EM_INT32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    default: *lo = -9223372036854775808.0; *hi = 9223372036854774784.0; break;
    }
}

/* Whether the number v can be stored in dtype d without overflow: within
 * range for the integer dtypes (a fraction is cut off, as in PyTorch; NaN and
 * inf have no integer), finite values no larger than the largest finite
 * value for the float dtypes (inf and NaN are fine there). Any number fits in
 * bool. */
bool em_value_fits(double v, em_dtype d)
{
    switch (d) {
    case EM_BOOL: return true;
    case EM_UINT8: return v > -1 && v < 256;
    case EM_INT8: return v > -129 && v < 128;
    case EM_INT16: return v > -32769 && v < 32768;
    case EM_INT32: return v > -2147483649.0 && v < 2147483648.0;
    case EM_INT64: return v >= -9223372036854775808.0 && v < 9223372036854775808.0;
    case EM_FLOAT16: return !isfinite(v) || fabs(v) <= 65504.0;
    case EM_BFLOAT16: return !isfinite(v) || fabs(v) <= 3.3895313892515355e38;
    case EM_FLOAT32: return !isfinite(v) || fabs(v) <= 3.4028234663852886e38;
    default: return true;
    }
}

int em_check_value_fits(const char *op, double v, em_dtype d)
{
    if (em_value_fits(v, d)) return 0;
    return em_set_error("%s: value %.17g cannot be converted to %s without overflow", op, v, em_dtype_name(d));
}

em_dtype em_default_dtype(void) { return default_dtype; }
void em_set_default_dtype(em_dtype d) { default_dtype = d; }

/* PyTorch's promotion table restricted to our dtypes.
 * Order of rows/cols: f32 f64 i64 i32 u8 b f16 bf16 i8 i16 (the enum's) */
static const em_dtype promote_table[EM_NDTYPES][EM_NDTYPES] = {
#define F32 EM_FLOAT32
#define F64 EM_FLOAT64
#define I64 EM_INT64
#define I32 EM_INT32
#define U8 EM_UINT8
#define B EM_BOOL
#define F16 EM_FLOAT16
#define BF EM_BFLOAT16
#define I8 EM_INT8
#define I16 EM_INT16
    /* f32 */ {F32, F64, F32, F32, F32, F32, F32, F32, F32, F32},
    /* f64 */ {F64, F64, F64, F64, F64, F64, F64, F64, F64, F64},
    /* i64 */ {F32, F64, I64, I64, I64, I64, F16, BF, I64, I64},
    /* i32 */ {F32, F64, I64, I32, I32, I32, F16, BF, I32, I32},
    /* u8  */ {F32, F64, I64, I32, U8, U8, F16, BF, I16, I16},
    /* b   */ {F32, F64, I64, I32, U8, B, F16, BF, I8, I16},
    /* f16 */ {F32, F64, F16, F16, F16, F16, F16, F32, F16, F16},
    /* bf  */ {F32, F64, BF, BF, BF, BF, F32, BF, BF, BF},
    /* i8  */ {F32, F64, I64, I32, I16, I8, F16, BF, I8, I16},
    /* i16 */ {F32, F64, I64, I32, I16, I16, F16, BF, I16, I16},
#undef F32
#undef F64
#undef I64
#undef I32
#undef U8
#undef B
#undef F16
#undef BF
#undef I8
#undef I16
};

em_dtype em_promote(em_dtype a, em_dtype b) { return promote_table[a][b]; }

static int category(em_dtype d) { return d == EM_BOOL ? 0 : em_dtype_is_int(d) ? 1 : 2; }

/* priority: 2 dimensioned tensor, 1 zero-dim tensor, 0 wrapped number */
static int priority(const em_tensor *t) { return t->wrapped_number ? 0 : t->ndim > 0 ? 2 : 1; }

em_dtype em_result_type(const em_tensor *a, const em_tensor *b)
{
    int pa = priority(a), pb = priority(b);
    if (pa == pb && pa == 0) { /* two numbers: the default dtype of the higher category */
        int c = category(a->dtype) > category(b->dtype) ? category(a->dtype) : category(b->dtype);
        return c == 2 ? em_default_dtype() : c == 1 ? EM_INT64 : EM_BOOL;
    }
    if (pa == pb) return em_promote(a->dtype, b->dtype);
    const em_tensor *hi = pa > pb ? a : b, *lo = pa > pb ? b : a;
    if (category(lo->dtype) <= category(hi->dtype)) return hi->dtype;
    /* The weaker operand is of a higher category: its category wins. A wrapped
     * number contributes the default dtype of its category (float32 / int64). */
    if (lo->wrapped_number) {
        if (category(lo->dtype) == 2) return em_default_dtype();
        return EM_INT64; /* an integer number with a bool tensor */
    }
    return lo->dtype;
}

const char *em_device_str(em_device d, char *buf, size_t n)
{
    if (d.type == EM_CPU) snprintf(buf, n, "cpu");
    else snprintf(buf, n, "cuda:%d", d.index);
    return buf;
}

int em_device_parse(const char *s, em_device *out)
{
    if (strcmp(s, "cpu") == 0) { out->type = EM_CPU; out->index = 0; return 0; }
    if (strncmp(s, "cuda", 4) == 0) {
        out->type = EM_CUDA;
        out->index = 0;
        if (s[4] == '\0') return 0;
        if (s[4] == ':' && s[5] >= '0' && s[5] <= '9') {
            int idx = 0;
            const char *p = s + 5;
            while (*p >= '0' && *p <= '9' && idx < 1000) idx = idx * 10 + (*p++ - '0');
            if (*p == '\0') { out->index = idx; return 0; }
        }
    }
    return em_set_error("unknown device '%s' (expected \"cpu\", \"cuda\" or \"cuda:N\")", s);
}

bool em_device_eq(em_device a, em_device b) { return a.type == b.type && a.index == b.index; }

/* IEEE half and bfloat16 <-> float, round to nearest even: engine/formulas.h,
 * the text the CUDA kernels use too */
float em_half_to_float(uint16_t h) { return emf_half_to_float(h); }
uint16_t em_float_to_half(float f) { return emf_float_to_half(f); }
float em_bf16_to_float(uint16_t h) { return emf_bf16_to_float(h); }
uint16_t em_float_to_bf16(float f) { return emf_float_to_bf16(f); }
