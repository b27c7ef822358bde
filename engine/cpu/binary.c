/* binary.c — the CPU binary elementwise kernels.
 *
 * Float32 and float64 have typed loops over contiguous runs (gcc vectorises
 * them), with variants for a stride-0 operand (tensor op scalar). Any other
 * layout is processed in chunks: operands are gathered into small stack
 * buffers, the contiguous loop runs, the result is scattered back. So each op
 * is written once per element type and strided inputs still vectorise.
 *
 * The integer dtypes (int64, int32, uint8) and bool all compute in int64
 * through the same chunk buffers: add/sub/mul/pow are done in unsigned
 * arithmetic (wrap-around without undefined behaviour) and truncation back
 * to the narrow type keeps the wrap-around of that type; bool results are
 * stored as value != 0.
 *
 * float16 and bfloat16 compute in float32 a chunk at a time: operands
 * (each the half dtype, or float32 for a Lua number beside a half tensor,
 * kept unrounded as PyTorch's CUDA kernels keep it) are widened into the
 * chunk buffers,
 * the float32 loops run, and the result is rounded once into the output.
 * That is what casting to float32, the float32 op and a cast back give, bit
 * for bit, in one pass instead of four. */
#include "cpu.h"
#include "../polygamma.h"   /* before tgmath.h: its bodies are double */

#include <tgmath.h>
#include <string.h>

#define CHUNK 256

typedef struct bin_ctx {
    em_binary_op op;
    em_dtype dt;        /* compute dtype of the inputs */
    bool cmp;           /* output is bool (comparisons, logical ops) */
    int divzero;        /* set by integer remainder by zero */
    em_dtype da, db;    /* float16/bfloat16: each operand's own dtype (the half one or float32) */
} bin_ctx;

static bool is_cmp(em_binary_op op) { return em_binary_info(op)->dtypes == EM_OPDT_TO_BOOL; }
static bool is_bitwise(em_binary_op op)
{
    return em_binary_info(op)->dtypes == EM_OPDT_BITWISE || em_binary_info(op)->dtypes == EM_OPDT_INTEGER;
}
/* ops with no integer loop: the engine promotes their integer operands */
static bool float_only(em_binary_op op) { return em_binary_info(op)->dtypes == EM_OPDT_FLOAT; }

static bool is_half(em_dtype d) { return d == EM_FLOAT16 || d == EM_BFLOAT16; }

/* ---- float32 and float64: one body each (binary_float.inc) ------------- */

#define T float
#define SFX f32
#include "binary_float.inc"
#define T double
#define SFX f64
#include "binary_float.inc"

/* ---- float16 / bfloat16 (see the header) ---------------------------------- */

static void load_f32(float *dst, const char *p, int64_t stride, int64_t n, em_dtype d)
{
    if (d != EM_FLOAT32) cpu_half_to_f32(dst, p, stride, n, d);
    else if (stride == 4) memcpy(dst, p, (size_t)n * 4);
    else cpu_gather(dst, p, stride, n, 4);
}

static void loop_half(const bin_ctx *c, char **p, const int64_t *s, int64_t n)
{
    float ba[CHUNK], bb[CHUNK], bo[CHUNK];
    uint8_t bc[CHUNK];
    /* a stride-0 operand (tensor op scalar) takes the float32 scalar loops */
    float sa = 0, sb = 0;
    if (s[1] == 0) load_f32(&sa, p[1], 0, 1, c->da);
    if (s[2] == 0) load_f32(&sb, p[2], 0, 1, c->db);
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        const char *pa = p[1] + i * s[1], *pb = p[2] + i * s[2];
        char *out = p[0] + i * s[0];
        if (c->cmp) {
            load_f32(ba, pa, s[1], m, c->da);
            load_f32(bb, pb, s[2], m, c->db);
            uint8_t *o = s[0] == 1 ? (uint8_t *)out : bc;
            cmp_f32(c->op, o, ba, bb, m);
            if (o == bc) cpu_scatter(out, s[0], bc, m, 1);
            continue;
        }
        bool done = false;
        if (s[2] == 0 && s[1] != 0) {
            load_f32(ba, pa, s[1], m, c->da);
            done = bin_f32_vs(c->op, bo, ba, sb, m);
        } else if (s[1] == 0 && s[2] != 0) {
            load_f32(bb, pb, s[2], m, c->db);
            done = bin_f32_sv(c->op, bo, sa, bb, m);
        }
        if (!done) {
            load_f32(ba, pa, s[1], m, c->da);
            load_f32(bb, pb, s[2], m, c->db);
            bin_f32(c->op, bo, ba, bb, m);
        }
        cpu_f32_to_half(out, s[0], bo, m, c->dt);
    }
}

/* ---- integers and bool (computed in int64) ------------------------------- */

static inline int64_t wrap(uint64_t v) { return (int64_t)v; }

/* returns 1 if an integer remainder by zero was seen */
static int bin_i64(em_binary_op op, int64_t *restrict o, const int64_t *restrict a,
                   const int64_t *restrict b, int64_t n)
{
    int dz = 0;
    switch (op) {
    case EM_ADD: for (int64_t i = 0; i < n; i++) o[i] = wrap((uint64_t)a[i] + (uint64_t)b[i]); break;
    case EM_SUB: for (int64_t i = 0; i < n; i++) o[i] = wrap((uint64_t)a[i] - (uint64_t)b[i]); break;
    case EM_MUL: for (int64_t i = 0; i < n; i++) o[i] = wrap((uint64_t)a[i] * (uint64_t)b[i]); break;
    case EM_REMAINDER:
        for (int64_t i = 0; i < n; i++) {
            int64_t x = a[i], y = b[i], r;
            if (y == 0) { dz = 1; r = 0; }
            else if (y == -1) r = 0;    /* INT64_MIN % -1 traps on x86 */
            else {
                r = x % y;
                if (r != 0 && ((r < 0) != (y < 0))) r += y;
            }
            o[i] = r;
        }
        break;
    case EM_POW: for (int64_t i = 0; i < n; i++) o[i] = emf_pow_i64(a[i], b[i]); break;
    case EM_MAXIMUM: for (int64_t i = 0; i < n; i++) o[i] = a[i] > b[i] ? a[i] : b[i]; break;
    case EM_MINIMUM: for (int64_t i = 0; i < n; i++) o[i] = a[i] < b[i] ? a[i] : b[i]; break;
    case EM_FMOD: case EM_DIV_TRUNC: case EM_DIV_FLOOR:
        for (int64_t i = 0; i < n; i++) {
            int64_t x = a[i], y = b[i];
            if (y == 0) { dz = 1; o[i] = 0; continue; }
            /* y == -1 apart: INT64_MIN / -1 traps on x86 */
            if (op == EM_FMOD) o[i] = y == -1 ? 0 : x % y;
            else if (y == -1) o[i] = wrap(0 - (uint64_t)x);
            else {
                int64_t q = x / y;
                /* floor: one less when the signs differ and it did not divide */
                if (op == EM_DIV_FLOOR && (x % y != 0) && ((x < 0) != (y < 0))) q -= 1;
                o[i] = q;
            }
        }
        break;
    case EM_BITWISE_AND: for (int64_t i = 0; i < n; i++) o[i] = a[i] & b[i]; break;
    case EM_BITWISE_OR: for (int64_t i = 0; i < n; i++) o[i] = a[i] | b[i]; break;
    case EM_BITWISE_XOR: for (int64_t i = 0; i < n; i++) o[i] = a[i] ^ b[i]; break;
    /* counts outside [0, 64) are PyTorch 2's: 0 to the left, the sign to the
     * right; narrower types are sign- or zero-extended here, so their own
     * out-of-width counts come out the same after truncation */
    case EM_BITWISE_LSHIFT:
        for (int64_t i = 0; i < n; i++) o[i] = b[i] < 0 || b[i] >= 64 ? 0 : wrap((uint64_t)a[i] << b[i]);
        break;
    case EM_BITWISE_RSHIFT:
        for (int64_t i = 0; i < n; i++) o[i] = b[i] < 0 || b[i] >= 64 ? (a[i] < 0 ? -1 : 0) : a[i] >> b[i];
        break;
    default: break;
    }
    return dz;
}

static void cmp_i64(em_binary_op op, uint8_t *restrict o, const int64_t *restrict a,
                    const int64_t *restrict b, int64_t n)
{
    switch (op) {
    case EM_EQ: for (int64_t i = 0; i < n; i++) o[i] = a[i] == b[i]; break;
    case EM_NE: for (int64_t i = 0; i < n; i++) o[i] = a[i] != b[i]; break;
    case EM_LT: for (int64_t i = 0; i < n; i++) o[i] = a[i] < b[i]; break;
    case EM_LE: for (int64_t i = 0; i < n; i++) o[i] = a[i] <= b[i]; break;
    case EM_GT: for (int64_t i = 0; i < n; i++) o[i] = a[i] > b[i]; break;
    case EM_GE: for (int64_t i = 0; i < n; i++) o[i] = a[i] >= b[i]; break;
    case EM_LOGICAL_AND: for (int64_t i = 0; i < n; i++) o[i] = (a[i] != 0) & (b[i] != 0); break;
    case EM_LOGICAL_OR: for (int64_t i = 0; i < n; i++) o[i] = (a[i] != 0) | (b[i] != 0); break;
    default: break;
    }
}

static void loop_int(bin_ctx *c, char **p, const int64_t *s, int64_t n)
{
    int64_t ba[CHUNK], bb[CHUNK], bo[CHUNK];
    uint8_t bc[CHUNK];
    bool direct = c->dt == EM_INT64;
    int dz = 0;
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        const char *pa = p[1] + i * s[1], *pb = p[2] + i * s[2];
        char *out = p[0] + i * s[0];
        const int64_t *a = ba, *b = bb;
        if (direct && s[1] == 8) a = (const int64_t *)pa; else cpu_load_ints(ba, pa, s[1], m, c->dt);
        if (direct && s[2] == 8) b = (const int64_t *)pb; else cpu_load_ints(bb, pb, s[2], m, c->dt);
        if (c->cmp) {
            uint8_t *o = s[0] == 1 ? (uint8_t *)out : bc;
            cmp_i64(c->op, o, a, b, m);
            if (o == bc) cpu_scatter(out, s[0], bc, m, 1);
        } else {
            int64_t *o = direct && s[0] == 8 ? (int64_t *)out : bo;
            dz |= bin_i64(c->op, o, a, b, m);
            if (o == bo) cpu_store_ints(out, s[0], bo, m, c->dt);
        }
    }
    if (dz) __atomic_store_n(&c->divzero, 1, __ATOMIC_RELAXED);
}

static void binary_loop(char **p, const int64_t *s, int64_t n, void *ctx)
{
    bin_ctx *c = ctx;
    switch (c->dt) {
    case EM_FLOAT32: loop_f32(c, p, s, n); break;
    case EM_FLOAT64: loop_f64(c, p, s, n); break;
    case EM_FLOAT16: case EM_BFLOAT16: loop_half(c, p, s, n); break;
    default: loop_int(c, p, s, n); break;
    }
}

int cpu_binary(em_binary_op op, em_tensor *out, const em_tensor *a, const em_tensor *b)
{
    const char *name = em_binary_name(op);
    if ((unsigned)op >= EM_NBINARY) return em_set_error("binary: invalid op %d", (int)op);
    bool cmp = is_cmp(op);
    /* a half op: the half dtype is the output's (or, for comparisons, an
     * operand's); the other operand may be float32 (a Lua number) */
    em_dtype dt = a->dtype;
    if (is_half(b->dtype) && (!is_half(dt) || (!cmp && out->dtype == b->dtype))) dt = b->dtype;
    if (is_half(dt)) {
        if ((a->dtype != dt && a->dtype != EM_FLOAT32) || (b->dtype != dt && b->dtype != EM_FLOAT32))
            return em_set_error("%s: CPU kernel called with dtypes %s and %s (a %s op takes %s or float32)", name,
                                em_dtype_name(a->dtype), em_dtype_name(b->dtype), em_dtype_name(dt),
                                em_dtype_name(dt));
    } else if (b->dtype != dt) {
        return em_set_error("%s: CPU kernel called with mixed dtypes %s and %s", name,
                            em_dtype_name(dt), em_dtype_name(b->dtype));
    }
    if (out->dtype != (cmp ? EM_BOOL : dt))
        return em_set_error("%s: CPU kernel called with output dtype %s for %s inputs", name,
                            em_dtype_name(out->dtype), em_dtype_name(dt));
    if (!em_dtype_is_float(dt) && float_only(op))
        return em_set_error("%s: the CPU kernel needs float inputs, got %s", name, em_dtype_name(dt));
    if (em_dtype_is_float(dt) && is_bitwise(op))
        return em_set_error("%s: the CPU kernel needs integer or bool inputs, got %s", name, em_dtype_name(dt));
    bin_ctx c = {op, dt, cmp, 0, a->dtype, b->dtype};
    const em_tensor *ts[3] = {out, a, b};
    cpu_foreach_elementwise(3, ts, binary_loop, &c);
    if (c.divzero) return em_set_error("%s: integer division by zero", name);
    return 0;
}
