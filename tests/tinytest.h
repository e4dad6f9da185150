/* tinytest: the tiny test registry every tests/test_<module>.c uses.
 * Each TEST(name) becomes its own ctest entry (tests/CMakeLists.txt scans the
 * source for TEST( lines), so a failing case is named, timed and re-runnable alone:
 *   ./test_store            runs every case;   ./test_store open_bad_file   runs one.
 * Not for benchmarks: timing assertions do not belong in tests. */
#ifndef TUNE_TINYTEST_H
#define TUNE_TINYTEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TT_MAX_CASES 512
#define TT_SKIP_CODE 77

typedef void (*tt_fn)(void);
struct tt_case {
    const char *name;
    tt_fn fn;
};
static struct tt_case tt_cases[TT_MAX_CASES];
static int tt_ncases;
static int tt_failed; /* failures in the case running now */
static int tt_skipped;

static void tt_register(const char *name, tt_fn fn)
{
    if (tt_ncases < TT_MAX_CASES) {
        tt_cases[tt_ncases].name = name;
        tt_cases[tt_ncases].fn = fn;
        tt_ncases++;
    }
}

#define TEST(name)                                                                                 \
    static void test_##name(void);                                                                 \
    __attribute__((constructor)) static void tt_reg_##name(void)                                   \
    {                                                                                              \
        tt_register(#name, test_##name);                                                           \
    }                                                                                              \
    static void test_##name(void)

/* CHECK records a failure and goes on; REQUIRE records it and leaves the case. */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            tt_failed++;                                                                           \
        }                                                                                          \
    } while (0)
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond);             \
            tt_failed++;                                                                           \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long tt_a = (long long)(a), tt_b = (long long)(b);                                    \
        if (tt_a != tt_b) {                                                                        \
            fprintf(stderr, "%s:%d: CHECK_EQ_INT failed: %s == %lld, %s == %lld\n", __FILE__,      \
                    __LINE__, #a, tt_a, #b, tt_b);                                                 \
            tt_failed++;                                                                           \
        }                                                                                          \
    } while (0)
#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *tt_a = (a), *tt_b = (b);                                                       \
        if (!tt_a || !tt_b || strcmp(tt_a, tt_b) != 0) {                                           \
            fprintf(stderr, "%s:%d: CHECK_STR failed:\n  %s = \"%s\"\n  %s = \"%s\"\n", __FILE__,  \
                    __LINE__, #a, tt_a ? tt_a : "(null)", #b, tt_b ? tt_b : "(null)");             \
            tt_failed++;                                                                           \
        }                                                                                          \
    } while (0)
#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        const char *tt_h = (hay), *tt_n = (needle);                                                \
        if (!tt_h || !strstr(tt_h, tt_n)) {                                                        \
            fprintf(stderr, "%s:%d: CHECK_CONTAINS failed: \"%s\" not in \"%s\"\n", __FILE__,      \
                    __LINE__, tt_n, tt_h ? tt_h : "(null)");                                       \
            tt_failed++;                                                                           \
        }                                                                                          \
    } while (0)
#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double tt_a = (a), tt_b = (b), tt_t = (tol);                                               \
        if (!(fabs(tt_a - tt_b) <= tt_t)) {                                                        \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.17g, %s = %.17g, tol %g\n",          \
                    __FILE__, __LINE__, #a, tt_a, #b, tt_b, tt_t);                                 \
            tt_failed++;                                                                           \
        }                                                                                          \
    } while (0)
/* Leave the case as skipped (ctest shows it as skipped through SKIP_RETURN_CODE 77). */
#define SKIP(why)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "SKIP: %s\n", why);                                                        \
        tt_skipped = 1;                                                                            \
        return;                                                                                    \
    } while (0)

static int tt_run_one(const struct tt_case *c)
{
    tt_failed = 0;
    tt_skipped = 0;
    c->fn();
    if (tt_failed) {
        fprintf(stderr, "FAIL %s (%d failed checks)\n", c->name, tt_failed);
        return 1;
    }
    fprintf(stderr, tt_skipped ? "skip %s\n" : "ok   %s\n", c->name);
    return tt_skipped ? TT_SKIP_CODE : 0;
}

/* Runs the named cases (or all); the exit code is what ctest reads. */
static int tt_main(int argc, char **argv)
{
    int failed = 0, skipped = 0, ran = 0;
    for (int i = 0; i < tt_ncases; i++) {
        int want = argc < 2;
        for (int a = 1; a < argc; a++)
            if (strcmp(argv[a], tt_cases[i].name) == 0) want = 1;
        if (!want) continue;
        ran++;
        int rc = tt_run_one(&tt_cases[i]);
        if (rc == TT_SKIP_CODE)
            skipped++;
        else if (rc)
            failed++;
    }
    if (ran == 0) {
        fprintf(stderr, "no test case matched\n");
        return 2;
    }
    if (failed) return 1;
    return (skipped == ran) ? TT_SKIP_CODE : 0;
}

#define TT_MAIN                                                                                    \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        return tt_main(argc, argv);                                                                \
    }

#endif
