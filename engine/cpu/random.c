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
 *    last bits of log/cos/sin, not more.
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

static void philox_at(const rand_job *j, uint64_t k, uint32_t out[4])
{
    uint64_t q = j->offset + k;
    out[0] = (uint32_t)q;
    out[1] = (uint32_t)(q >> 32);
    out[2] = q < j->offset ? 1u : 0u;
    out[3] = 0;
    em_philox_rounds(out, j->key[0], j->key[1]);
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

static double uniform_value(const rand_job *j, uint32_t x)
{
    double u = (double)(x >> (32 - j->mbits)) * ldexp(1.0, -j->mbits);
    return j->a + (j->b - j->a) * u;
}

/* Computes the values of the elements drawn from counter k (up to 4). */
static void values_at(const rand_job *j, uint64_t k, double *v, int64_t *iv)
{
    uint32_t x[4];
    philox_at(j, k, x);
    switch (j->op) {
    case EM_RAND_UNIFORM:
        for (int l = 0; l < 4; l++) v[l] = uniform_value(j, x[l]);
        break;
    case EM_RAND_NORMAL:
        for (int l = 0; l < 4; l += 2) {
            double u1 = ((double)x[l] + 1.0) * 0x1p-32, u2 = (double)x[l + 1] * 0x1p-32;
            double r = sqrt(-2.0 * log(u1)), th = 2.0 * M_PI * u2;
            v[l] = j->a + j->b * r * cos(th);
            v[l + 1] = j->a + j->b * r * sin(th);
        }
        break;
    case EM_RAND_INT: {
        int64_t lo = (int64_t)j->a;
        if (j->per_ctr == 4) {
            for (int l = 0; l < 4; l++)
                iv[l] = (int64_t)((uint64_t)lo + (((uint64_t)x[l] * j->range) >> 32));
        } else {
            for (int l = 0; l < 2; l++) {
                uint64_t w = (uint64_t)x[2 * l] | (uint64_t)x[2 * l + 1] << 32;
                iv[l] = (int64_t)((uint64_t)lo + w % j->range);
            }
        }
        break;
    }
    default:
        break;
    }
}

static void store(const rand_job *j, char *p, double v, int64_t iv)
{
    em_dtype d = j->out->dtype;
    if (j->op == EM_RAND_INT) {
        if (em_dtype_is_float(d)) cpu_store_f64(p, d, (double)iv);
        else cpu_store_i64(p, d, iv);
        return;
    }
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
static inline double open_end(const rand_job *j, double f)
{
    return j->op == EM_RAND_UNIFORM && j->b > j->a && f >= j->b ? j->a : f;
}

/* The contiguous outputs' loop: element i + l of the T data is VALUE (of v[l]
 * or iv[l]); store() and the walker per element were two thirds of randint's
 * time. */
#define FILL_CONTIGUOUS(T, VALUE)                                                            \
    do {                                                                                     \
        T *o = (T *)em_data_ptr(out);                                                        \
        for (int64_t i = start; i < end; i += pc) {                                          \
            values_at(j, (uint64_t)(i / pc), v, iv);                                         \
            int64_t m = end - i < pc ? end - i : pc;                                         \
            for (int l = 0; l < m; l++) o[i + l] = (VALUE);                                  \
        }                                                                                    \
        return;                                                                              \
    } while (0)

static void run_range(const rand_job *j, int64_t start, int64_t end)
{
    int pc = j->per_ctr;
    double v[4] = {0};
    int64_t iv[4] = {0};
    em_tensor *out = j->out;
    bool ints = j->op == EM_RAND_INT;
    if (j->contiguous && !ints && out->dtype == EM_FLOAT32) FILL_CONTIGUOUS(float, (float)open_end(j, (float)v[l]));
    if (j->contiguous && !ints && out->dtype == EM_FLOAT64) FILL_CONTIGUOUS(double, open_end(j, v[l]));
    if (j->contiguous && ints && out->dtype == EM_INT64) FILL_CONTIGUOUS(int64_t, iv[l]);
    walker w;
    walker_init(&w, out, start);
    for (int64_t i = start; i < end; i += pc) {
        values_at(j, (uint64_t)(i / pc), v, iv);
        int64_t m = end - i < pc ? end - i : pc;
        for (int l = 0; l < m; l++) {
            store(j, w.p, v[l], iv[l]);
            walker_next(&w);
        }
    }
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
