/* random.c — the CPU random kernel (the `random` family of backend.h).
 *
 * THE MAPPING (every backend must follow it exactly, so that one seed gives
 * the same numbers on every device; the CUDA backend copies this):
 *
 *  - Generator: Philox 4x32-10 (engine/philox.h), key
 *    {seed & 0xffffffff, seed >> 32}.
 *  - Counter: a 128-bit integer, little-endian in four 32-bit words. For the
 *    counter number q = offset + k (offset: the 64-bit value the engine
 *    passes; k: see below) the words are {lo32(q), hi32(q), carry, 0}, where
 *    carry is 1 if offset + k overflowed 64 bits.
 *  - Elements are numbered by their row-major position i in the output view
 *    (whatever its strides).
 *  - One value per element (EM_RAND_UNIFORM, EM_RAND_NORMAL, and EM_RAND_INT
 *    when b - a <= 2^32): element i takes lane x = out[i % 4] of counter
 *    k = i / 4.
 *  - Two values per element (EM_RAND_INT when b - a > 2^32): element i takes
 *    lanes 2*(i%2) (low word) and 2*(i%2)+1 (high word) of counter k = i / 2.
 *    The engine reserves 2n values for it.
 *
 * From the lane bits to a value (arithmetic in double, then rounded to the
 * output dtype):
 *  - UNIFORM [a, b): u = (x >> (32 - m)) * 2^-m where m is the dtype's
 *    mantissa precision capped at 32 bits: float32 24, float16 11,
 *    bfloat16 8, float64 32 (float64 therefore has 2^-32 resolution, not
 *    2^-53: one lane per element keeps the mapping simple and identical
 *    everywhere). value = a + (b - a) * u; if rounding makes it reach b (b > a)
 *    it is replaced by a, keeping the interval half-open.
 *  - NORMAL (mean a, std b): Box-Muller over the lane pairs (0,1) and (2,3)
 *    of a counter, i.e. elements 2j and 2j+1 share one pair:
 *    u1 = (x_even + 1) * 2^-32 in (0, 1] (never log(0)), u2 = x_odd * 2^-32,
 *    r = sqrt(-2 log u1), even element a + b * r cos(2 pi u2), odd element
 *    a + b * r sin(2 pi u2). Other backends may differ from this one in the
 *    last bits of log/cos/sin, not more (this one: log_u32, sincos_u32 below).
 *  - INT [a, b): range r = b - a; with one lane, value = a + ((x * r) >> 32)
 *    (multiply-shift: no division; bias at most r / 2^32); with two lanes,
 *    the 64-bit word w = lo | hi << 32 gives value = a + (w mod r) (bias at
 *    most r / 2^64).
 */
#include "cpu.h"
#include "../philox.h"

#include <math.h>

typedef struct rand_job {
    em_random_op op;
    em_tensor *out;
    uint32_t key[2];
    uint64_t offset;
    double a, b;
    int per_ctr;            /* elements per counter: 4, or 2 for 64-bit ints */
    int mbits;              /* uniform: bits of the lane used */
    uint64_t range;         /* int: b - a */
    bool contiguous;
} rand_job;

/* Counters drawn at a time: the length of the loops below, which the compiler
 * vectorises (Philox's rounds across counters, the conversions across lanes). */
#define BLOCK 64

/* The four output words of counters k0 .. k0 + n - 1 (n <= BLOCK) into x[4 c + lane]. */
static void philox_block(const rand_job *j, uint64_t k0, int n, uint32_t *x)
{
    for (int c = 0; c < n; c++) {
        uint64_t q = j->offset + k0 + (uint64_t)c;
        x[4 * c] = (uint32_t)q;
        x[4 * c + 1] = (uint32_t)(q >> 32);
        x[4 * c + 2] = q < j->offset ? 1u : 0u;
        x[4 * c + 3] = 0;
    }
    for (int c = 0; c < n; c++) em_philox_rounds(&x[4 * c], j->key[0], j->key[1]);
}

/* Walks the output's elements in row-major order from a start position,
 * for strided outputs. */
typedef struct walker {
    const em_tensor *t;
    int64_t coord[EM_MAX_DIMS];
    char *p;
    int64_t esz;
} walker;

static void walker_init(walker *w, const em_tensor *t, int64_t pos)
{
    w->t = t;
    w->esz = (int64_t)em_dtype_size(t->dtype);
    w->p = (char *)em_data_ptr(t);
    for (int d = t->ndim - 1; d >= 0; d--) {
        w->coord[d] = pos % t->sizes[d];
        pos /= t->sizes[d];
        w->p += w->coord[d] * t->strides[d] * w->esz;
    }
}

static void walker_next(walker *w)
{
    const em_tensor *t = w->t;
    for (int d = t->ndim - 1; d >= 0; d--) {
        w->p += t->strides[d] * w->esz;
        if (++w->coord[d] < t->sizes[d]) return;
        w->p -= t->sizes[d] * t->strides[d] * w->esz;
        w->coord[d] = 0;
    }
}

/* ---- normal draws ------------------------------------------------------------
 * log, cos and sin in straight-line double code that the compiler vectorises
 * (libm's per pair were five sixths of float32 randn's time): within a few
 * units in the last place of double, so a float32 result differs from one
 * through libm only where the double value lies that close to a rounding
 * boundary, and then by one unit (the GPU suite's tolerance). */

#define LN2_HI 0x1.62e42fefa3800p-1     /* ln 2 split: e * LN2_HI is exact for |e| < 2^11 */
#define LN2_LO 0x1.ef35793c76730p-45

/* log(k * 2^-32) for k in [1, 2^32]: k 2^-32 = m 2^e with m in [sqrt(1/2), sqrt(2)),
 * log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172: eleven terms of the
 * series reach double's precision. Near u = 1 (e = 0) nothing cancels. */
static inline double log_u32(uint64_t k)
{
    double u = (double)(int64_t)k * 0x1p-32;
    uint64_t bits;
    memcpy(&bits, &u, 8);
    int64_t e = (int64_t)(bits >> 52) - 1023;
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;     /* m in [1, 2) */
    double m;
    memcpy(&m, &bits, 8);
    int64_t big = m > 1.4142135623730951;
    m = big ? m * 0.5 : m;
    e += big;
    double s = (m - 1.0) / (m + 1.0), z = s * s;
    double p = 2.0 / 23;
    p = p * z + 2.0 / 21; p = p * z + 2.0 / 19; p = p * z + 2.0 / 17; p = p * z + 2.0 / 15;
    p = p * z + 2.0 / 13; p = p * z + 2.0 / 11; p = p * z + 2.0 / 9; p = p * z + 2.0 / 7;
    p = p * z + 2.0 / 5; p = p * z + 2.0 / 3; p = p * z + 2.0;
    double de = (double)e;
    return de * LN2_HI + (de * LN2_LO + s * p);
}

/* a where mask is all ones, b where it is zero; a with its sign flipped where
 * flip has the top bit: branch-free, so the loops below vectorise */
static inline double pick(uint64_t mask, double a, double b)
{
    uint64_t ua, ub;
    memcpy(&ua, &a, 8);
    memcpy(&ub, &b, 8);
    ua = (ua & mask) | (ub & ~mask);
    memcpy(&a, &ua, 8);
    return a;
}

static inline double negate_if(uint64_t flip, double a)
{
    uint64_t ua;
    memcpy(&ua, &a, 8);
    ua ^= flip & 0x8000000000000000ull;
    memcpy(&a, &ua, 8);
    return a;
}

/* cos and sin of 2 pi x 2^-32: the quadrant and the octant from x's top bits
 * (exact), then Taylor polynomials of the angle y in [0, pi/4] (terms to y^15
 * and y^16: the next are below 2^-54 of the result). */
static inline void sincos_u32(uint32_t x, double *c, double *s)
{
    int64_t q = x >> 30, r = x & 0x3fffffff;
    uint64_t swap = (uint64_t)0 - (uint64_t)(r > 0x20000000);       /* the angle past pi/4: take pi/2 - it */
    double y = (double)(r + (int64_t)(swap & 1) * (0x40000000 - 2 * r)) * (6.283185307179586 * 0x1p-32);
    double z = y * y;
    double ps = -1.0 / 1307674368000;
    ps = ps * z + 1.0 / 6227020800; ps = ps * z - 1.0 / 39916800; ps = ps * z + 1.0 / 362880;
    ps = ps * z - 1.0 / 5040; ps = ps * z + 1.0 / 120; ps = ps * z - 1.0 / 6;
    double sy = y + y * z * ps;
    double pc = 1.0 / 20922789888000;
    pc = pc * z - 1.0 / 87178291200; pc = pc * z + 1.0 / 479001600; pc = pc * z - 1.0 / 3628800;
    pc = pc * z + 1.0 / 40320; pc = pc * z - 1.0 / 720; pc = pc * z + 1.0 / 24; pc = pc * z - 0.5;
    double cy = 1.0 + z * pc;
    /* of the angle within the quadrant, then turned by q quarters:
     * (c, s) = (cq, sq), (-sq, cq), (-cq, -sq), (sq, -cq) */
    uint64_t odd = (uint64_t)0 - (uint64_t)(q & 1), across = swap ^ odd;
    *c = negate_if((uint64_t)((q ^ (q >> 1)) & 1) << 63, pick(across, sy, cy));
    *s = negate_if((uint64_t)(q >> 1) << 63, pick(across, cy, sy));
}

/* The values of counters k0 .. k0 + n - 1 (n <= BLOCK) as the mapping above
 * says: per_ctr of them per counter into v (floats) or iv (integers). */
static void draw_block(const rand_job *j, uint64_t k0, int n, double *v, int64_t *iv)
{
    uint32_t x[4 * BLOCK];
    philox_block(j, k0, n, x);
    switch (j->op) {
    case EM_RAND_UNIFORM: {
        int shift = 32 - j->mbits;
        double scale = ldexp(1.0, -j->mbits), a = j->a, w = j->b - j->a;
        for (int l = 0; l < 4 * n; l++) v[l] = a + w * ((double)(int64_t)(x[l] >> shift) * scale);
        break;
    }
    case EM_RAND_NORMAL:
        for (int p = 0; p < 2 * n; p++) {
            double r = sqrt(-2.0 * log_u32((uint64_t)x[2 * p] + 1)), cs, sn;
            sincos_u32(x[2 * p + 1], &cs, &sn);
            v[2 * p] = j->a + j->b * r * cs;
            v[2 * p + 1] = j->a + j->b * r * sn;
        }
        break;
    case EM_RAND_INT: {
        uint64_t lo = (uint64_t)(int64_t)j->a;
        if (j->per_ctr == 4) {
            for (int l = 0; l < 4 * n; l++) iv[l] = (int64_t)(lo + (((uint64_t)x[l] * j->range) >> 32));
        } else {
            for (int l = 0; l < 2 * n; l++) {
                uint64_t w = (uint64_t)x[2 * l] | (uint64_t)x[2 * l + 1] << 32;
                iv[l] = (int64_t)(lo + w % j->range);
            }
        }
        break;
    }
    default:
        break;
    }
}

/* Element l of a block into a strided output, converted to the dtype: iv[l]
 * for the integer op, v[l] for the others (the other buffer holds nothing). */
static void store(const rand_job *j, char *p, const double *vs, const int64_t *ivs, int l)
{
    em_dtype d = j->out->dtype;
    if (j->op == EM_RAND_INT) {
        if (em_dtype_is_float(d)) cpu_store_f64(p, d, (double)ivs[l]);
        else cpu_store_i64(p, d, ivs[l]);
        return;
    }
    double v = vs[l];
    if (j->op == EM_RAND_UNIFORM && j->b > j->a) {
        /* rounding to the dtype must not reach the open end */
        double r = v;
        if (d == EM_FLOAT32) r = (float)v;
        else if (d == EM_FLOAT16) r = em_half_to_float(em_float_to_half((float)v));
        else if (d == EM_BFLOAT16) r = em_bf16_to_float(em_float_to_bf16((float)v));
        if (r >= j->b) v = j->a;
    }
    cpu_store_f64(p, d, v);
}

/* Elements [start, end) of the output; start is a multiple of per_ctr. */
static void run_range(const rand_job *j, int64_t start, int64_t end);

/* chunks start at multiples of 64 elements, so each holds whole counters */
static void job_range(int64_t start, int64_t end, void *ctx) { run_range(ctx, start, end); }

/* uniform's draws that rounding to the dtype took to the open end b go to a */
static inline double open_end(const rand_job *j, double f) { return f >= j->b ? j->a : f; }

/* [start, end) a block of counters at a time: the block's m elements are
 * i + l for l < m, their values v[l] (floats) or iv[l] (integers). */
#define FOR_BLOCKS(BODY)                                                                     \
    for (int64_t i = start; i < end; i += BLOCK * pc) {                                      \
        int64_t m = end - i < BLOCK * pc ? end - i : BLOCK * pc;                             \
        draw_block(j, (uint64_t)(i / pc), (int)((m + pc - 1) / pc), v, iv);                 \
        BODY                                                                                 \
    }

/* The contiguous outputs: element i + l of the T data is VALUE (store() and the
 * walker per element were two thirds of randint's time). */
#define FILL_CONTIGUOUS(T, VALUE)                                                            \
    do {                                                                                     \
        T *o = (T *)em_data_ptr(out);                                                        \
        FOR_BLOCKS(for (int64_t l = 0; l < m; l++) o[i + l] = (VALUE);)                      \
        return;                                                                              \
    } while (0)

static void run_range(const rand_job *j, int64_t start, int64_t end)
{
    int pc = j->per_ctr;
    double v[4 * BLOCK];     /* draw_block fills the one its op uses */
    int64_t iv[4 * BLOCK];
    em_tensor *out = j->out;
    bool ints = j->op == EM_RAND_INT, half_open = j->op == EM_RAND_UNIFORM && j->b > j->a;
    if (j->contiguous && half_open && out->dtype == EM_FLOAT32) FILL_CONTIGUOUS(float, (float)open_end(j, (float)v[l]));
    if (j->contiguous && half_open && out->dtype == EM_FLOAT64) FILL_CONTIGUOUS(double, open_end(j, v[l]));
    if (j->contiguous && !ints && out->dtype == EM_FLOAT32) FILL_CONTIGUOUS(float, (float)v[l]);
    if (j->contiguous && !ints && out->dtype == EM_FLOAT64) FILL_CONTIGUOUS(double, v[l]);
    if (j->contiguous && ints && out->dtype == EM_INT64) FILL_CONTIGUOUS(int64_t, iv[l]);
    walker w;
    walker_init(&w, out, start);
    FOR_BLOCKS(for (int64_t l = 0; l < m; l++) {
        store(j, w.p, v, iv, (int)l);
        walker_next(&w);
    })
}

int cpu_random(em_random_op op, em_tensor *out, uint64_t seed, uint64_t offset, const uint64_t *dev_state, double a,
               double b)
{
    (void)dev_state;        /* CUDA graphs only: never set on the CPU */
    if ((unsigned)op >= EM_NRANDOM) return em_set_error("random: unknown op %d", (int)op);
    rand_job j = {
        .op = op, .out = out,
        .key = {(uint32_t)seed, (uint32_t)(seed >> 32)},
        .offset = offset, .a = a, .b = b,
        .per_ctr = 4,
        .mbits = emf_mantissa_bits(out->dtype),
        .contiguous = em_is_contiguous(out),
    };
    if (op == EM_RAND_INT) {
        j.range = (uint64_t)(int64_t)b - (uint64_t)(int64_t)a;   /* no signed overflow for wide ranges */
        if (j.range > ((uint64_t)1 << 32)) j.per_ctr = 4 / 2;
    }
    int64_t n = em_numel(out);
    if (n == 0) return 0;
    cpu_for_ranges(n, job_range, &j);
    return 0;
}
