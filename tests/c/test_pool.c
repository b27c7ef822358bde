/* test_pool.c — the CPU thread pool (engine/cpu/pool.c): every item of a job
 * is run exactly once, in ranges that respect the alignment, whatever the
 * thread count; jobs follow each other without mixing; and results that
 * split work into fixed parts do not depend on the thread count. */
#include "../../engine/cpu/cpu.h"
#include "check.h"

#include <stdatomic.h>
#include <stdlib.h>

typedef struct cover {
    _Atomic int *hits;
    int64_t align;
    _Atomic int misaligned;
} cover;

static void mark(int64_t lo, int64_t hi, void *ctx)
{
    cover *c = ctx;
    if (lo % c->align != 0) atomic_store(&c->misaligned, 1);
    for (int64_t i = lo; i < hi; i++) atomic_fetch_add(&c->hits[i], 1);
}

/* runs a job of n items and checks each ran once */
static int covers_once(int64_t n, int64_t align)
{
    cover c = {calloc((size_t)n, sizeof(_Atomic int)), align, 0};
    if (!c.hits) return 0;
    cpu_parallel_for(n, CPU_PARALLEL_MIN, align, mark, &c);
    int ok = !atomic_load(&c.misaligned);
    for (int64_t i = 0; i < n; i++) ok &= atomic_load(&c.hits[i]) == 1;
    free(c.hits);
    return ok;
}

static void test_every_item_once(void)
{
    int saved = cpu_threads();
    int counts[] = {1, 2, 3, 8};
    for (int k = 0; k < 4; k++) {
        cpu_set_threads(counts[k]);
        CHECK(cpu_threads() == counts[k]);
        int64_t sizes[] = {1, 2, 7, 64, 1000, 100003};
        for (int s = 0; s < 6; s++) {
            CHECK(covers_once(sizes[s], 1));
            CHECK(covers_once(sizes[s], 64));
        }
    }
    cpu_set_threads(saved);
}

static void test_many_jobs_in_a_row(void)
{
    /* consecutive jobs reuse the claim word: a worker late for one job
     * must never run a chunk of the next with the old description */
    int saved = cpu_threads();
    cpu_set_threads(4);
    int ok = 1;
    for (int r = 0; r < 2000 && ok; r++) ok = covers_once(1 + r % 97 * 13, r % 2 ? 1 : 64);
    CHECK(ok);
    cpu_set_threads(saved);
}

static void test_small_work_runs_on_the_caller(void)
{
    /* below CPU_PARALLEL_MIN the caller runs one range */
    cover c = {calloc(100, sizeof(_Atomic int)), 1, 0};
    int calls = 0;
    cpu_set_threads(4);
    cpu_parallel_for(100, CPU_PARALLEL_MIN - 1, 1, mark, &c);
    for (int i = 0; i < 100; i++) calls += atomic_load(&c.hits[i]);
    CHECK(calls == 100);
    free(c.hits);
}

static const em_device CPU = {EM_CPU, 0};

/* a large sum: its parts are fixed by the configured count; for one count
 * the same bits come out every time, under any scheduling */
static void test_sum_is_reproducible(void)
{
    int64_t n = 3000001;
    em_tensor *x = em_empty(&n, 1, EM_FLOAT32, CPU);
    float *p = em_data_ptr(x);
    for (int64_t i = 0; i < n; i++) p[i] = (float)((i * 7919) % 1000) / 997.0f - 0.5f;
    cpu_set_threads(3);
    double first = 0;
    em_tensor *s = em_sum(x, NULL, 0, false);
    CHECK(s && em_item(s, &first) == 0);
    em_release(s);
    for (int r = 0; r < 20; r++) {
        double v = 0;
        s = em_sum(x, NULL, 0, false);
        CHECK(s && em_item(s, &v) == 0 && v == first);
        em_release(s);
    }
    em_release(x);
}

int main(void)
{
    RUN(test_every_item_once);
    RUN(test_many_jobs_in_a_row);
    RUN(test_small_work_runs_on_the_caller);
    RUN(test_sum_is_reproducible);
    CHECK_DONE();
}
