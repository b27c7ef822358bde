/* check.h — a very small test harness for the engine's C tests.
 * Each test is a function; checks inside it record failures with their
 * location. Output is TAP ("ok N - name" / "not ok N - name"), which
 * tests/run.sh counts. */
#ifndef EMBER_CHECK_H
#define EMBER_CHECK_H

#include <math.h>
#include <stdio.h>

static int check_test_failed, check_count, check_failures;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            printf("#   %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);  \
            check_test_failed = 1;                                               \
        }                                                                        \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                    \
    do {                                                                         \
        double check_a_ = (a), check_b_ = (b);                                   \
        if (!(fabs(check_a_ - check_b_) <= (tol))) {                             \
            printf("#   %s:%d: %s = %.17g, expected %.17g\n", __FILE__, __LINE__, \
                   #a, check_a_, check_b_);                                      \
            check_test_failed = 1;                                               \
        }                                                                        \
    } while (0)

#define RUN(fn)                                                                  \
    do {                                                                         \
        check_test_failed = 0;                                                   \
        fn();                                                                    \
        check_count++;                                                           \
        if (check_test_failed) check_failures++;                                 \
        printf("%s %d - %s\n", check_test_failed ? "not ok" : "ok", check_count, #fn); \
    } while (0)

/* A test that does not apply to this build: reported as skipped */
#define SKIP(fn, why)                                                            \
    do {                                                                         \
        (void)fn;                                                                \
        check_count++;                                                           \
        printf("ok %d - %s # SKIP %s\n", check_count, #fn, why);                 \
    } while (0)

#define CHECK_DONE()                                                             \
    do {                                                                         \
        printf("1..%d\n", check_count);                                          \
        return check_failures != 0;                                              \
    } while (0)

#endif
