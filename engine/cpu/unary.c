/* unary.c — the CPU unary elementwise kernels.
 *
 * As in binary.c: one contiguous loop per op and element type (float32,
 * float64, int64); strided runs go through small stack buffers so the same
 * loop serves them. int32, uint8 and bool compute in int64 and are truncated
 * back, which keeps the wrap-around of the narrow type (neg of uint8 1 is
 * 255). Float-only ops on integer inputs are the engine's business: it
 * promotes before calling, and this file refuses them. float16 and bfloat16
 * compute in float32 and round once into the output: a chunk at a time, or,
 * for the transcendental ops, through a table of those results for all
 * 65536 inputs. */
#include "cpu.h"
#include "../unary_math.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 256

typedef struct un_ctx { em_unary_op op; em_dtype dt; bool to_bool; } un_ctx;

/* ---- float32: the block paths ---------------------------------------------
 * GELU's elements go in blocks: a block whose every |x| is at most
 * UM_GELU_NEAR (most of them, for activations) takes the short polynomial,
 * any other (NaN too) the tail form, so each block's loop is straight-line
 * code. sin and cos take the vectorised reduction a chunk at a time, libm
 * for a chunk with an element beyond UM_TRIG_BIG (or inf or NaN). */
#define GELU_BLOCK 32
static bool gelu_block_near(const float *restrict a, int64_t n)
{
    int far = 0;
    for (int64_t i = 0; i < n; i++) far |= !(fabsf(a[i]) <= UM_GELU_NEAR);
    return !far;
}

static void gelu_blocks_f32(float *restrict o, const float *restrict a, int64_t n, bool grad)
{
    for (int64_t b = 0; b < n; b += GELU_BLOCK) {
        int64_t m = n - b < GELU_BLOCK ? n - b : GELU_BLOCK;
        const float *x = a + b;
        float *y = o + b;
        if (gelu_block_near(x, m)) {
            if (grad) for (int64_t i = 0; i < m; i++) y[i] = um_gelu_grad_near(x[i]);
            else for (int64_t i = 0; i < m; i++) y[i] = um_gelu_near(x[i]);
        } else {
            if (grad) for (int64_t i = 0; i < m; i++) y[i] = um_gelu_grad_far(x[i]);
            else for (int64_t i = 0; i < m; i++) y[i] = um_gelu_far(x[i]);
        }
    }
}

static void trig_f32(float *restrict o, const float *restrict a, int64_t n, uint64_t q)
{
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t m = n - i0 < CHUNK ? n - i0 : CHUNK;
        const float *x = a + i0;
        float *y = o + i0;
        /* inf and NaN count as big (libm gives their NaN) */
        const uint32_t big_bits = 0x49742400u;
        uint32_t big = 0;
        for (int64_t i = 0; i < m; i++) {
            uint32_t b;
            memcpy(&b, &x[i], sizeof b);
            big |= (b & 0x7fffffffu) >= big_bits;
        }
        if (!big) {
            for (int64_t i = 0; i < m; i++) y[i] = um_sincos_f32(x[i], q);
        } else {
            for (int64_t i = 0; i < m; i++) y[i] = um_trig_f32(x[i], q);
        }
    }
}

/* ---- the loops --------------------------------------------------------------
 * One loop per op and compute type, made from the op table: em_un_f32 (and
 * f64, i64) inlined with a constant op is that op's straight-line formula,
 * which gcc vectorises. */

#define UN_F32_LOOP(op_, name, inplace, backward, dtypes, ...) \
    UM_IF_FLOAT_LOOP(dtypes, case op_: for (int64_t i = 0; i < n; i++) o[i] = em_un_f32(op_, a[i]); break;)
#define UN_F64_LOOP(op_, name, inplace, backward, dtypes, ...) \
    UM_IF_FLOAT_LOOP(dtypes, case op_: for (int64_t i = 0; i < n; i++) o[i] = em_un_f64(op_, a[i]); break;)
#define UN_I64_LOOP(op_, name, inplace, backward, dtypes, ...) \
    UM_IF_INT_LOOP(dtypes, case op_: for (int64_t i = 0; i < n; i++) o[i] = em_un_i64(op_, a[i]); break;)

static void un_f32(em_unary_op op, float *restrict o, const float *restrict a, int64_t n)
{
    switch (op) {
    case EM_SIN: trig_f32(o, a, n, 0); return;
    case EM_COS: trig_f32(o, a, n, 1); return;
    case EM_GELU: gelu_blocks_f32(o, a, n, false); return;
    case EM_GELU_GRAD: gelu_blocks_f32(o, a, n, true); return;
    default: break;
    }
    switch (op) {
    EM_UNARY_OPS(UN_F32_LOOP)
    default: break;
    }
}

static void un_f64(em_unary_op op, double *restrict o, const double *restrict a, int64_t n)
{
    switch (op) {
    EM_UNARY_OPS(UN_F64_LOOP)
    default: break;
    }
}

static void un_i64(em_unary_op op, int64_t *restrict o, const int64_t *restrict a, int64_t n)
{
    switch (op) {
    EM_UNARY_OPS(UN_I64_LOOP)
    default: break;
    }
}

static void not_f32(uint8_t *restrict o, const float *restrict a, int64_t n)
{
    for (int64_t i = 0; i < n; i++) o[i] = a[i] == 0;
}

static void not_f64(uint8_t *restrict o, const double *restrict a, int64_t n)
{
    for (int64_t i = 0; i < n; i++) o[i] = a[i] == 0;
}

static void not_i64(uint8_t *restrict o, const int64_t *restrict a, int64_t n)
{
    for (int64_t i = 0; i < n; i++) o[i] = a[i] == 0;
}

/* The float32 or float64 loop (un_f32 / un_f64, or logical_not) on o[0..m)
 * from a[0..m) */
static void float_run(const un_ctx *c, void *o, const void *a, int64_t m)
{
    bool f32 = c->dt == EM_FLOAT32;
    if (c->to_bool) {
        if (f32) not_f32(o, a, m);
        else not_f64(o, a, m);
    } else if (f32) {
        un_f32(c->op, o, a, m);
    } else {
        un_f64(c->op, o, a, m);
    }
}

/* float32 and float64: contiguous operands in one run; strided ones a chunk
 * at a time through packed buffers */
static void loop_float(const un_ctx *c, char **p, const int64_t *s, int64_t n)
{
    int64_t esz = c->dt == EM_FLOAT32 ? 4 : 8, osz = c->to_bool ? 1 : esz;
    if (s[0] == osz && s[1] == esz) {
        float_run(c, p[0], p[1], n);
        return;
    }
    double ba[CHUNK], bo[CHUNK];    /* CHUNK elements of either dtype */
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        const char *a = p[1] + i * s[1];
        if (s[1] != esz) { cpu_gather(ba, a, s[1], m, (size_t)esz); a = (const char *)ba; }
        char *out = p[0] + i * s[0];
        void *o = s[0] == osz ? (void *)out : (void *)bo;
        float_run(c, o, a, m);
        if (o == bo) cpu_scatter(out, s[0], bo, m, (size_t)osz);
    }
}

/* ---- float16/bfloat16 through a table ------------------------------------
 * A half input has 65536 values, so a transcendental op of a half tensor is
 * a table of the float32 loop's results, rounded once: what loop_half below
 * computes, bit for bit, made on first use (a few hundred microseconds,
 * 128 KiB) and then one load per element, 1.8 to 2.4 times faster than the
 * loop on one thread. The cheap ops (relu, sqrt, rounding...) keep the loop;
 * neg and abs work on the sign bit (loop_sign_bit). */
static _Atomic(uint16_t *) half_tables[EM_NUNARY][2];

/* the float-only ops, but for the ones a vector instruction or two computes */
static bool table_op(em_unary_op op)
{
    return em_unary_info(op)->dtypes == EM_OPDT_FLOAT && op != EM_SQRT && op != EM_RECIPROCAL;
}

static const uint16_t *half_table(em_unary_op op, em_dtype dt)
{
    int k = dt == EM_BFLOAT16;
    uint16_t *t = atomic_load_explicit(&half_tables[op][k], memory_order_acquire);
    if (t) return t;
    uint16_t *made = malloc(65536 * sizeof *made);
    if (!made) return NULL;
    float x[CHUNK], y[CHUNK];
    for (int32_t b = 0; b < 65536; b += CHUNK) {
        uint16_t bits[CHUNK];
        for (int i = 0; i < CHUNK; i++) bits[i] = (uint16_t)(b + i);
        cpu_half_to_f32(x, (const char *)bits, 2, CHUNK, dt);
        un_f32(op, y, x, CHUNK);
        cpu_f32_to_half((char *)(made + b), 2, y, CHUNK, dt);
    }
    uint16_t *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&half_tables[op][k], &none, made, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        free(made);
        return none;
    }
    return made;
}

/* o[i] = tab[a[i]]; o may be a (an in-place op) */
static void loop_table(const uint16_t *tab, char **p, const int64_t *s, int64_t n)
{
    if (s[0] == 2 && s[1] == 2) {
        uint16_t *o = (uint16_t *)p[0];
        const uint16_t *a = (const uint16_t *)p[1];
        for (int64_t i = 0; i < n; i++) o[i] = tab[a[i]];
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        uint16_t v;
        memcpy(&v, p[1] + i * s[1], 2);
        v = tab[v];
        memcpy(p[0] + i * s[0], &v, 2);
    }
}

/* neg and abs of a float16/bfloat16 flip or clear its sign bit: exactly
 * what the float32 round trip gives (a NaN's payload aside), at the speed of
 * a copy */
static void loop_sign_bit(bool flip, char **p, const int64_t *s, int64_t n)
{
    uint16_t x = flip ? 0x8000 : 0, m = flip ? 0xffff : 0x7fff;
    if (s[0] == 2 && s[1] == 2) {
        uint16_t *o = (uint16_t *)p[0];
        const uint16_t *a = (const uint16_t *)p[1];
        for (int64_t i = 0; i < n; i++) o[i] = (uint16_t)((a[i] & m) ^ x);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        uint16_t v;
        memcpy(&v, p[1] + i * s[1], 2);
        v = (uint16_t)((v & m) ^ x);
        memcpy(p[0] + i * s[0], &v, 2);
    }
}

/* float16/bfloat16: each chunk widened to float32, the float32 loop, one
 * rounding into the output (what the casts around a float32 op give, in
 * one pass) */
static void loop_half(const un_ctx *c, char **p, const int64_t *s, int64_t n)
{
    if (c->op == EM_NEG || c->op == EM_ABS) {
        loop_sign_bit(c->op == EM_NEG, p, s, n);
        return;
    }
    if (!c->to_bool && table_op(c->op)) {
        const uint16_t *tab = half_table(c->op, c->dt);
        if (tab) {
            loop_table(tab, p, s, n);
            return;
        }
    }
    float ba[CHUNK], bo[CHUNK];
    uint8_t bc[CHUNK];
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        cpu_half_to_f32(ba, p[1] + i * s[1], s[1], m, c->dt);
        char *out = p[0] + i * s[0];
        if (c->to_bool) {
            uint8_t *o = s[0] == 1 ? (uint8_t *)out : bc;
            not_f32(o, ba, m);
            if (o == bc) cpu_scatter(out, s[0], bc, m, 1);
        } else {
            un_f32(c->op, bo, ba, m);
            cpu_f32_to_half(out, s[0], bo, m, c->dt);
        }
    }
}

static void loop_int(const un_ctx *c, char **p, const int64_t *s, int64_t n)
{
    int64_t ba[CHUNK], bo[CHUNK];
    uint8_t bc[CHUNK];
    bool direct = c->dt == EM_INT64;
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        const char *pa = p[1] + i * s[1];
        char *out = p[0] + i * s[0];
        const int64_t *a = ba;
        if (direct && s[1] == 8) a = (const int64_t *)pa; else cpu_load_ints(ba, pa, s[1], m, c->dt);
        if (c->to_bool) {
            uint8_t *o = s[0] == 1 ? (uint8_t *)out : bc;
            not_i64(o, a, m);
            if (o == bc) cpu_scatter(out, s[0], bc, m, 1);
        } else {
            int64_t *o = direct && s[0] == 8 ? (int64_t *)out : bo;
            un_i64(c->op, o, a, m);
            if (o == bo) cpu_store_ints(out, s[0], bo, m, c->dt);
        }
    }
}

static void unary_loop(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const un_ctx *c = ctx;
    switch (c->dt) {
    case EM_FLOAT32: case EM_FLOAT64: loop_float(c, p, s, n); break;
    case EM_FLOAT16: case EM_BFLOAT16: loop_half(c, p, s, n); break;
    default: loop_int(c, p, s, n); break;
    }
}

/* ops the integer loop implements (un_i64); the float ops need float inputs */
static bool int_op(em_unary_op op) { return em_unary_info(op)->dtypes != EM_OPDT_FLOAT; }

int cpu_unary(em_unary_op op, em_tensor *out, const em_tensor *a)
{
    if ((unsigned)op >= EM_NUNARY) return em_set_error("unary: invalid op %d", (int)op);
    const char *name = em_unary_name(op);
    em_dtype dt = a->dtype;
    bool to_bool = op == EM_LOGICAL_NOT;
    if (out->dtype != (to_bool ? EM_BOOL : dt))
        return em_set_error("%s: CPU kernel called with output dtype %s for %s input", name,
                            em_dtype_name(out->dtype), em_dtype_name(dt));
    if (!em_dtype_is_float(dt) && !int_op(op))
        return em_set_error("%s: the CPU kernel needs float input, got %s", name, em_dtype_name(dt));
    /* bool is 0/1 in the int64 loop, where ~1 would store true */
    if (op == EM_BITWISE_NOT && (em_dtype_is_float(dt) || dt == EM_BOOL))
        return em_set_error("bitwise_not: the CPU kernel needs integer input, got %s", em_dtype_name(dt));
    un_ctx c = {op, dt, to_bool};
    const em_tensor *ts[2] = {out, a};
    cpu_foreach_elementwise(2, ts, unary_loop, &c);
    return 0;
}
