/* test_random.c — the Philox core against Random123's known answers, and the
 * counter mapping every backend must follow (engine/cpu/random.c). */
#include "../../engine/ember.h"
#include "../../engine/philox.h"
#include "check.h"

#include <string.h>

static void check_kat(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
                      uint32_t e0, uint32_t e1, uint32_t e2, uint32_t e3)
{
    uint32_t out[4] = {c0, c1, c2, c3};
    em_philox_rounds(out, k0, k1);
    CHECK(out[0] == e0);
    CHECK(out[1] == e1);
    CHECK(out[2] == e2);
    CHECK(out[3] == e3);
}

/* Random123 kat_vectors, philox4x32 10 rounds */
static void philox_known_answers(void)
{
    check_kat(0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
    check_kat(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
              0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
    check_kat(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
              0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1);
}

/* rand's float32 values are the documented function of the Philox lanes:
 * element i = (lane i%4 of counter offset + i/4) >> 8 * 2^-24. */
static void rand_follows_the_mapping(void)
{
    uint64_t seed = 0x0123456789abcdefULL;
    em_rng_set_state(seed, 5);
    int64_t n = 10;
    em_tensor *t = em_rand(&n, 1, EM_FLOAT32, (em_device){EM_CPU, 0});
    CHECK(t != NULL);
    if (!t) return;
    const float *v = em_data_ptr(t);
    for (int i = 0; i < n; i++) {
        uint32_t out[4] = {5u + (uint32_t)(i / 4), 0, 0, 0};
        em_philox_rounds(out, (uint32_t)seed, (uint32_t)(seed >> 32));
        CHECK(v[i] == (float)((out[i % 4] >> 8) * 0x1p-24));
    }
    uint64_t s, off;
    em_rng_get_state(&s, &off);
    CHECK(s == seed);
    CHECK(off == 5 + 3);     /* 10 values round up to 3 counters */
    em_release(t);
}

/* A strided output gets the numbers of its row-major positions. */
static void strided_output_matches_contiguous(void)
{
    em_device cpu = {EM_CPU, 0};
    int64_t sz[2] = {3, 5};
    em_manual_seed(7);
    em_tensor *a = em_randn(sz, 2, EM_FLOAT64, cpu);
    int64_t big[2] = {5, 3};
    em_tensor *b = em_empty(big, 2, EM_FLOAT64, cpu);
    em_tensor *bt = em_transpose(b, 0, 1);     /* [3,5], column-major */
    em_manual_seed(7);
    CHECK(em_normal_(bt, 0, 1) == 0);
    const double *pa = em_data_ptr(a), *pb = em_data_ptr(b);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) CHECK(pa[i * 5 + j] == pb[j * 3 + i]);
    em_release(a);
    em_release(bt);
    em_release(b);
}

/* Threads split the work but never change the numbers. */
static void large_is_same_as_prefix(void)
{
    em_device cpu = {EM_CPU, 0};
    int64_t n = 200003, m = 37;
    em_manual_seed(99);
    em_tensor *big = em_rand(&n, 1, EM_FLOAT32, cpu);
    em_manual_seed(99);
    em_tensor *small = em_rand(&m, 1, EM_FLOAT32, cpu);
    CHECK(memcmp(em_data_ptr(big), em_data_ptr(small), sizeof(float) * (size_t)m) == 0);
    const float *v = em_data_ptr(big);
    double sum = 0;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) { sum += v[i]; bad += !(v[i] >= 0 && v[i] < 1); }
    CHECK(bad == 0);
    CHECK_NEAR(sum / (double)n, 0.5, 0.01);
    em_release(big);
    em_release(small);
}

static void randint_wide_range(void)
{
    em_device cpu = {EM_CPU, 0};
    int64_t n = 1000;
    int64_t lo = -((int64_t)1 << 40), hi = (int64_t)1 << 41;
    em_manual_seed(3);
    em_tensor *t = em_randint(lo, hi, &n, 1, EM_INT64, cpu);
    CHECK(t != NULL);
    if (!t) return;
    const int64_t *v = em_data_ptr(t);
    int bad = 0, big = 0;
    for (int i = 0; i < n; i++) { bad += v[i] < lo || v[i] >= hi; big += v[i] > ((int64_t)1 << 33); }
    CHECK(bad == 0);
    CHECK(big > 0);
    uint64_t s, off;
    em_rng_get_state(&s, &off);
    CHECK(off == 500);       /* two values per element */
    em_release(t);
}

static void bad_arguments(void)
{
    em_device cpu = {EM_CPU, 0};
    int64_t n = 4;
    CHECK(em_rand(&n, 1, EM_INT64, cpu) == NULL);
    CHECK(strstr(em_error(), "rand:") != NULL);
    CHECK(em_randint(5, 5, &n, 1, EM_INT64, cpu) == NULL);
    CHECK(strstr(em_error(), "randint:") != NULL);
    CHECK(em_randint(0, 300, &n, 1, EM_UINT8, cpu) == NULL);
    CHECK(em_randperm(-1, EM_INT64, cpu) == NULL);
    em_tensor *t = em_empty(&n, 1, EM_INT64, cpu);
    CHECK(em_uniform_(t, 0, 1) != 0);
    CHECK(strstr(em_error(), "uniform_:") != NULL);
    em_release(t);
}

int main(void)
{
    RUN(philox_known_answers);
    RUN(rand_follows_the_mapping);
    RUN(strided_output_matches_contiguous);
    RUN(large_is_same_as_prefix);
    RUN(randint_wide_range);
    RUN(bad_arguments);
    CHECK_DONE();
}
