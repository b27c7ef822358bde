/* random.c — the global Philox generator state and the random ops built on
 * the backend's `random` family.
 *
 * The state is (seed, offset). The seed is the Philox key; the offset counts
 * 128-bit counters already handed out. Each random op reserves the counters
 * its elements will use (em_rng_reserve) and passes (seed, offset) to the
 * kernel, which derives element i's bits from counter offset + i/4 (see
 * engine/cpu/random.c for the exact mapping every backend follows). So the
 * numbers depend only on the seed and the sequence of ops, never on the
 * device or the number of threads, and a saved state replays exactly. */
#include "internal.h"
#include "autograd.h"

#include <math.h>

/* PyTorch's default seed, so an unseeded program repeats itself too. */
#define DEFAULT_SEED 67280421310721ULL

static uint64_t rng_seed = DEFAULT_SEED;
static uint64_t rng_offset;

void em_manual_seed(uint64_t seed)
{
    rng_seed = seed;
    rng_offset = 0;
}

uint64_t em_initial_seed(void) { return rng_seed; }

void em_rng_get_state(uint64_t *seed, uint64_t *offset)
{
    *seed = rng_seed;
    *offset = rng_offset;
}

void em_rng_set_state(uint64_t seed, uint64_t offset)
{
    rng_seed = seed;
    rng_offset = offset;
}

/* CUDA graph captures, per device (PyTorch's graph-safe Philox): a captured
 * kernel reads the seed and a base offset from the graph's device words,
 * which each replay sets to the generator's state before it runs, and adds
 * its offset within the graph. The host generator does not move during the
 * capture (nothing is drawn then); each replay advances it by `used`, so
 * replays and the eager code around them draw what eager code alone would. */
#define RNG_CAPTURE_DEVICES 64

static struct rng_capture {
    const uint64_t *dev_state;      /* NULL: no capture */
    uint64_t used;                  /* counters reserved within the graph */
} rng_captures[RNG_CAPTURE_DEVICES];

static struct rng_capture *capture_of(em_device dev)
{
    if (dev.type != EM_CUDA || dev.index < 0 || dev.index >= RNG_CAPTURE_DEVICES) return NULL;
    struct rng_capture *c = &rng_captures[dev.index];
    /* the backend may have discarded the capture (an op refused during it) */
    return c->dev_state && em_cuda_is_capturing(dev.index) ? c : NULL;
}

void em_rng_capture_begin(int device, const uint64_t *dev_state)
{
    if (device < 0 || device >= RNG_CAPTURE_DEVICES) return;
    rng_captures[device] = (struct rng_capture){.dev_state = dev_state, .used = 0};
}

uint64_t em_rng_capture_end(int device, const uint64_t *dev_state)
{
    if (device < 0 || device >= RNG_CAPTURE_DEVICES || rng_captures[device].dev_state != dev_state) return 0;
    uint64_t used = rng_captures[device].used;
    rng_captures[device] = (struct rng_capture){0};
    return used;
}

bool em_rng_captured(em_device dev, const uint64_t *dev_state)
{
    const struct rng_capture *c = capture_of(dev);
    return c && c->dev_state == dev_state;
}

void em_rng_advance(uint64_t counters) { rng_offset += counters; }

void em_rng_reserve(em_device dev, int64_t n, uint64_t *seed, uint64_t *offset, const uint64_t **dev_state)
{
    uint64_t counters = n > 0 ? ((uint64_t)n + 3) / 4 : 0;
    struct rng_capture *c = capture_of(dev);
    *seed = rng_seed;
    *dev_state = c ? c->dev_state : NULL;
    uint64_t *next = c ? &c->used : &rng_offset;
    *offset = *next;
    *next += counters;
}

/* Runs the backend's random kernel over t with freshly reserved counters.
 * `values` is how many 32-bit values the op consumes (see randint). */
static int run_random(em_random_op op, em_tensor *t, int64_t values, double a, double b)
{
    uint64_t seed, offset;
    const uint64_t *dev_state;
    int64_t n = em_numel(t);
    if (n == 0) return 0;
    em_rng_reserve(em_dev(t), values, &seed, &offset, &dev_state);
    if (em_be(t)->random(op, t, seed, offset, dev_state, a, b)) return -1;
    em_bump_version(t);
    return 0;
}

static int check_float_out(const char *op, const em_tensor *t)
{
    if (em_dtype_is_float(t->dtype)) return 0;
    return em_set_error("%s: expected a floating point tensor, got %s", op, em_dtype_name(t->dtype));
}

int em_uniform_(em_tensor *t, double lo, double hi)
{
    if (check_float_out("uniform_", t) || em_ag_check_inplace("uniform_", t, NULL) ||
        em_check_writable("uniform_", t)) return -1;
    if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi))
        return em_set_error("uniform_: expected finite bounds with from <= to, got from=%g, to=%g", lo, hi);
    /* a value is from + (to - from) u: the width must be a finite number of the dtype
     * (a wider range would give inf and then from, silently) */
    const char *dt = em_dtype_name(t->dtype);
    if (!em_value_fits(lo, t->dtype) || !em_value_fits(hi, t->dtype))
        return em_set_error("uniform_: from=%g and to=%g must be within %s's range", lo, hi, dt);
    if (!isfinite(hi - lo) || !em_value_fits(hi - lo, t->dtype))
        return em_set_error("uniform_: to - from must be at most %s's largest value, got from=%g, to=%g", dt, lo, hi);
    return run_random(EM_RAND_UNIFORM, t, em_numel(t), lo, hi);
}

int em_normal_(em_tensor *t, double mean, double std)
{
    if (check_float_out("normal_", t) || em_ag_check_inplace("normal_", t, NULL) ||
        em_check_writable("normal_", t)) return -1;
    if (!(std >= 0) || !isfinite(std) || !isfinite(mean))
        return em_set_error("normal_: expected a finite mean and std >= 0, got mean=%g, std=%g", mean, std);
    return run_random(EM_RAND_NORMAL, t, em_numel(t), mean, std);
}

static em_tensor *random_float(const char *op, em_random_op rop, const int64_t *sizes, int ndim,
                               em_dtype d, em_device dev)
{
    if (!em_dtype_is_float(d))
        return em_set_error("%s: expected a floating point dtype, got %s", op, em_dtype_name(d)), NULL;
    em_tensor *t = em_empty(sizes, ndim, d, dev);
    if (!t) return NULL;
    if (run_random(rop, t, em_numel(t), 0.0, 1.0)) { em_release(t); return NULL; }
    return t;
}

em_tensor *em_rand(const int64_t *sizes, int ndim, em_dtype d, em_device dev)
{
    return random_float("rand", EM_RAND_UNIFORM, sizes, ndim, d, dev);
}

em_tensor *em_randn(const int64_t *sizes, int ndim, em_dtype d, em_device dev)
{
    return random_float("randn", EM_RAND_NORMAL, sizes, ndim, d, dev);
}

/* The largest integer n such that every integer in [-n, n] is exactly
 * representable in d. */
static double exact_int_limit(em_dtype d)
{
    switch (d) {
    case EM_FLOAT32: return 16777216.0;              /* 2^24 */
    case EM_FLOAT64: return 9007199254740992.0;      /* 2^53 */
    case EM_FLOAT16: return 2048.0;
    case EM_BFLOAT16: return 256.0;
    default: return 0;
    }
}

/* Whether a 64-bit integer survives the trip through a double (the kernel
 * interface carries bounds as doubles). */
static bool exact_in_double(int64_t x)
{
    double d = (double)x;
    return d < 9.2233720368547758e18 && d >= -9.2233720368547758e18 && (int64_t)d == x;
}

em_tensor *em_randint(int64_t low, int64_t high, const int64_t *sizes, int ndim,
                      em_dtype d, em_device dev)
{
    if (low >= high)
        return em_set_error("randint: expected low < high, got low=%lld, high=%lld",
                            (long long)low, (long long)high), NULL;
    if (!exact_in_double(low) || !exact_in_double(high))
        return em_set_error("randint: bounds must be integers exactly representable as doubles "
                            "(|x| <= 2^53), got low=%lld, high=%lld", (long long)low, (long long)high), NULL;
    if ((unsigned)d >= EM_NDTYPES)
        return em_set_error("randint: invalid dtype %d", (int)d), NULL;
    /* every value in [low, high) must fit the dtype */
    int64_t lo_ok, hi_ok;
    switch (d) {
    case EM_INT64: lo_ok = INT64_MIN; hi_ok = INT64_MAX; break;
    case EM_INT32: lo_ok = INT32_MIN; hi_ok = (int64_t)INT32_MAX + 1; break;
    case EM_INT16: lo_ok = INT16_MIN; hi_ok = (int64_t)INT16_MAX + 1; break;
    case EM_INT8: lo_ok = INT8_MIN; hi_ok = (int64_t)INT8_MAX + 1; break;
    case EM_UINT8: lo_ok = 0; hi_ok = 256; break;
    case EM_BOOL: lo_ok = 0; hi_ok = 2; break;
    default: {
        int64_t lim = (int64_t)exact_int_limit(d);
        lo_ok = -lim; hi_ok = lim + 1;
        break;
    }
    }
    if (low < lo_ok || high > hi_ok)
        return em_set_error("randint: range [%lld, %lld) does not fit dtype %s (allowed [%lld, %lld))",
                            (long long)low, (long long)high, em_dtype_name(d),
                            (long long)lo_ok, (long long)hi_ok), NULL;
    em_tensor *t = em_empty(sizes, ndim, d, dev);
    if (!t) return NULL;
    /* Ranges wider than 2^32 take 64 bits (two values) per element. */
    uint64_t range = (uint64_t)high - (uint64_t)low;
    int64_t n = em_numel(t);
    int64_t values = range > ((uint64_t)1 << 32) ? 2 * n : n;
    if (run_random(EM_RAND_INT, t, values, (double)low, (double)high)) { em_release(t); return NULL; }
    return t;
}

/* A permutation as the argsort of random 62-bit keys: every backend draws the
 * same keys, and a stable sort breaks the (astronomically unlikely) ties by
 * position, so the permutation is the same on every device. */
em_tensor *em_randperm(int64_t n, em_dtype d, em_device dev)
{
    if (n < 0) return em_set_error("randperm: n must be non-negative, got %lld", (long long)n), NULL;
    if ((unsigned)d >= EM_NDTYPES || d == EM_BOOL)
        return em_set_error("randperm: unsupported dtype %s", (unsigned)d < EM_NDTYPES ? em_dtype_name(d) : "?"), NULL;
    double lim = exact_int_limit(d);
    if (em_dtype_is_int(d)) {     /* the values 1 .. n (Lua's positions) fit */
        double lo;
        em_int_range(d, &lo, &lim);
    }
    if ((double)n > lim)
        return em_set_error("randperm: n=%lld is too large for dtype %s", (long long)n, em_dtype_name(d)), NULL;
    int64_t size = n;
    em_tensor *keys = em_randint(0, (int64_t)1 << 62, &size, 1, EM_INT64, dev);
    if (!keys) return NULL;
    em_tensor *values = em_empty(&size, 1, EM_INT64, dev);
    em_tensor *perm = em_empty(&size, 1, EM_INT64, dev);
    int rc = values && perm ? 0 : -1;
    if (rc == 0 && n > 0) rc = em_be(keys)->sort(values, perm, keys, 0, false, true);
    em_release(keys);
    em_release(values);
    if (rc) { em_release(perm); return NULL; }
    em_tensor *out = em_cast_to(perm, d);
    em_release(perm);
    return out;
}
