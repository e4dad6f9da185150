/* Tests of pareto/: fronts checked by hand and against a brute-force peeling, the tie rule
 * inside a front (epsilon-net: hand cases, scale and permutation invariance, k == 1 is a
 * sort), feasibility and violation order, NaN objectives, duplicates, the hypervolume
 * against hand values, a grid count and inclusion-exclusion, the reference point, and every
 * allocation failing in turn (malloc is wrapped at link time: tests/pareto.cmake).
 * Not for speed: bench/pareto_bench.c measures that. */
#include "tinytest.h"

#include "pareto/pareto.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

/* ---- a failing allocator: the linker sends pareto.c's malloc calls here ------------------- */

void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
static long g_fail_at = -1; /* the index of the call that fails; -1: none */
static long g_nalloc;

void *__wrap_malloc(size_t size)
{
    if (g_fail_at >= 0 && g_nalloc++ == g_fail_at) return NULL;
    return __real_malloc(size);
}

/* ---- helpers ------------------------------------------------------------------------------ */

/* A small deterministic generator (splitmix64) so every run tests the same sets. */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double unif(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}
static size_t below(size_t m)
{
    return (size_t)(rnd() % m);
}

static void shuffle(size_t *perm, size_t n)
{
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = below(i), t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}

/* Ranks and returns the ids in rank order in out_ids (n of them). */
static int rank_ids(size_t n, size_t k, const double *obj, const double *viol, const int64_t *ids,
                    int64_t *out_ids, int *level)
{
    size_t *order = malloc(n * sizeof *order);
    char err[256] = "";
    int rc = pareto_rank(n, k, obj, viol, ids, order, level, err, sizeof err);
    if (rc == PARETO_OK)
        for (size_t i = 0; i < n; i++)
            out_ids[i] = ids ? ids[order[i]] : (int64_t)order[i];
    else
        fprintf(stderr, "pareto_rank: %d %s\n", rc, err);
    free(order);
    return rc;
}

/* Each level by peeling, straight from the definition: a front is the points no remaining
 * point dominates. O(n^3 k): the oracle for small sets. */
static void peel_levels(size_t n, size_t k, const double *obj, int *lv)
{
    for (size_t i = 0; i < n; i++)
        lv[i] = -1;
    for (int f = 0;; f++) {
        int any = 0;
        for (size_t i = 0; i < n; i++) {
            if (lv[i] != -1) continue;
            int dom = 0;
            for (size_t j = 0; j < n && !dom; j++)
                dom = (lv[j] == -1 || lv[j] == -2 - f) &&
                      pareto_dominates(k, obj + j * k, obj + i * k);
            if (!dom) lv[i] = -2 - f; /* marked this round, still "remaining" for the others */
        }
        for (size_t i = 0; i < n; i++)
            if (lv[i] == -2 - f) {
                lv[i] = f;
                any = 1;
            }
        if (!any) return;
    }
}

/* ---- ranking: fronts ---------------------------------------------------------------------- */

TEST(hand_fronts_2d)
{
    /* front 0: a(1,5) b(2,2) c(4,1); front 1: d(3,3) e(5,2); front 2: f(5,5) */
    const double obj[] = {5, 2, 1, 5, 3, 3, 2, 2, 5, 5, 4, 1};
    /*                   e     a     d     b     f     c   (indices 0..5) */
    size_t order[6];
    int level[6];
    CHECK_EQ_INT(pareto_rank(6, 2, obj, NULL, NULL, order, level, NULL, 0), PARETO_OK);
    CHECK_EQ_INT(level[1], 0);
    CHECK_EQ_INT(level[3], 0);
    CHECK_EQ_INT(level[5], 0);
    CHECK_EQ_INT(level[2], 1);
    CHECK_EQ_INT(level[0], 1);
    CHECK_EQ_INT(level[4], 2);
    /* front 0 by the epsilon-net: a (best first objective), then c (farthest), then b;
     * front 1: d, then e */
    const size_t want[] = {1, 5, 3, 2, 0, 4};
    for (int i = 0; i < 6; i++)
        CHECK_EQ_INT(order[i], want[i]);
}

TEST(levels_match_peeling)
{
    /* Small integer grids make many ties and duplicates: the cases ENS must get right. */
    for (size_t k = 2; k <= 4; k++)
        for (int rep = 0; rep < 40; rep++) {
            size_t n = 1 + below(60);
            double *obj = malloc(n * k * sizeof *obj);
            for (size_t i = 0; i < n * k; i++)
                obj[i] = (double)below(rep % 2 ? 5 : 50);
            int *lv = malloc(n * sizeof *lv), *want = malloc(n * sizeof *want);
            size_t *order = malloc(n * sizeof *order);
            REQUIRE(pareto_rank(n, k, obj, NULL, NULL, order, lv, NULL, 0) == PARETO_OK);
            peel_levels(n, k, obj, want);
            for (size_t i = 0; i < n; i++)
                CHECK_EQ_INT(lv[i], want[i]);
            /* order is a permutation, fronts in order, each led by its lexicographic best */
            char *seen = calloc(n, 1);
            for (size_t t = 0; t < n; t++) {
                REQUIRE(order[t] < n && !seen[order[t]]);
                seen[order[t]] = 1;
                if (t) CHECK(lv[order[t - 1]] <= lv[order[t]]);
                if (t == 0 || lv[order[t - 1]] != lv[order[t]])
                    for (size_t j = 0; j < n; j++)
                        if (lv[j] == lv[order[t]] && j != order[t])
                            CHECK(obj[order[t] * k] <= obj[j * k]);
            }
            free(seen);
            free(obj);
            free(lv);
            free(want);
            free(order);
        }
}

/* ---- ranking: the tie rule ---------------------------------------------------------------- */

TEST(eps_net_line_ties_by_id)
{
    /* Five points on a line; after the two ends, the middle; the two left are at the same
     * distance from everything taken (exactly, in binary), so the smaller id goes first. */
    const double obj[] = {1, 3, 0, 4, 3, 1, 2, 2, 4, 0};
    const int64_t ids[] = {40, 10, 30, 20, 50};
    int64_t got[5];
    REQUIRE(rank_ids(5, 2, obj, NULL, ids, got, NULL) == PARETO_OK);
    const int64_t want[] = {10, 50, 20, 30, 40};
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(got[i], want[i]);
    const int64_t ids2[] = {30, 10, 40, 20, 50};
    REQUIRE(rank_ids(5, 2, obj, NULL, ids2, got, NULL) == PARETO_OK);
    const int64_t want2[] = {10, 50, 20, 30, 40};
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(got[i], want2[i]);
}

TEST(eps_net_scales_by_range)
{
    /* A(0,1000) B(50,900) C(95,500) D(100,0), one front. Scaled by range, B is farther from
     * {A, D} than C is (0.26 against 0.2525); in raw units C would be (the second objective's
     * units dominate). The order follows the scaled distances, whatever the units. */
    double obj[] = {0, 1000, 50, 900, 95, 500, 100, 0};
    int64_t got[4];
    const int64_t want[] = {0, 3, 1, 2};
    REQUIRE(rank_ids(4, 2, obj, NULL, NULL, got, NULL) == PARETO_OK);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(got[i], want[i]);
    for (int i = 0; i < 4; i++)
        obj[2 * i] *= 1e6;
    REQUIRE(rank_ids(4, 2, obj, NULL, NULL, got, NULL) == PARETO_OK);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(got[i], want[i]);
    /* a range past DBL_MAX (-1.5e308 .. 1.5e308) must not turn distances into NaN */
    for (int i = 0; i < 4; i++)
        obj[2 * i] = (obj[2 * i] / 1e6 - 50) / 50 * 1.5e308;
    REQUIRE(rank_ids(4, 2, obj, NULL, NULL, got, NULL) == PARETO_OK);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(got[i], want[i]);
}

TEST(k1_is_ascending_sort)
{
    size_t n = 300;
    double v[300];
    int64_t ids[300], got[300];
    size_t perm[300];
    shuffle(perm, n);
    for (size_t i = 0; i < n; i++) {
        v[i] = (double)below(40) - 20.0; /* many equal values */
        ids[i] = (int64_t)perm[i] * 7 + 3;
    }
    int level[300];
    REQUIRE(rank_ids(n, 1, v, NULL, ids, got, level) == PARETO_OK);
    /* the expected order by an insertion sort on (value, id) */
    size_t want[300];
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        for (; j > 0 &&
               (v[want[j - 1]] > v[i] || (v[want[j - 1]] == v[i] && ids[want[j - 1]] > ids[i]));
             j--)
            want[j] = want[j - 1];
        want[j] = i;
    }
    int distinct = 0;
    for (size_t t = 0; t < n; t++) {
        CHECK_EQ_INT(got[t], ids[want[t]]);
        if (t && v[want[t]] != v[want[t - 1]]) distinct++;
        CHECK_EQ_INT(level[want[t]], distinct); /* one front per distinct value */
    }
}

TEST(permutation_invariance)
{
    for (size_t k = 2; k <= 4; k++)
        for (int rep = 0; rep < 20; rep++) {
            size_t n = 2 + below(200);
            double *obj = malloc(n * k * sizeof *obj), *obj2 = malloc(n * k * sizeof *obj2);
            double *viol = malloc(n * sizeof *viol), *viol2 = malloc(n * sizeof *viol2);
            int64_t *ids = malloc(n * sizeof *ids), *ids2 = malloc(n * sizeof *ids2);
            int64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
            size_t *perm = malloc(n * sizeof *perm);
            for (size_t i = 0; i < n; i++) {
                for (size_t d = 0; d < k; d++)
                    obj[i * k + d] = rep % 3 ? unif() : (double)below(6); /* ties, duplicates */
                if (below(10) == 0) obj[i * k + below(k)] = NAN;
                viol[i] = below(5) == 0 ? (double)below(3) : 0.0;
                if (below(30) == 0) viol[i] = INFINITY;
                ids[i] = (int64_t)(1000 - i * 3);
            }
            shuffle(perm, n);
            for (size_t i = 0; i < n; i++) {
                memcpy(obj2 + i * k, obj + perm[i] * k, k * sizeof *obj);
                viol2[i] = viol[perm[i]];
                ids2[i] = ids[perm[i]];
            }
            REQUIRE(rank_ids(n, k, obj, viol, ids, a, NULL) == PARETO_OK);
            REQUIRE(rank_ids(n, k, obj2, viol2, ids2, b, NULL) == PARETO_OK);
            for (size_t i = 0; i < n; i++)
                CHECK_EQ_INT(a[i], b[i]);
            free(obj);
            free(obj2);
            free(viol);
            free(viol2);
            free(ids);
            free(ids2);
            free(a);
            free(b);
            free(perm);
        }
}

TEST(scale_invariance)
{
    for (size_t k = 2; k <= 3; k++)
        for (int rep = 0; rep < 20; rep++) {
            size_t n = 2 + below(150);
            double *obj = malloc(n * k * sizeof *obj);
            int64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
            for (size_t i = 0; i < n; i++) {
                /* points near a front so that fronts are long and the tie rule matters */
                double t = unif();
                obj[i * k] = t + 0.05 * unif();
                obj[i * k + 1] = 1 - t + 0.05 * unif();
                if (k == 3) obj[i * k + 2] = unif();
            }
            REQUIRE(rank_ids(n, k, obj, NULL, NULL, a, NULL) == PARETO_OK);
            size_t which = below(k);
            for (size_t i = 0; i < n; i++)
                obj[i * k + which] *= 1000.0;
            REQUIRE(rank_ids(n, k, obj, NULL, NULL, b, NULL) == PARETO_OK);
            for (size_t i = 0; i < n; i++)
                CHECK_EQ_INT(a[i], b[i]);
            free(obj);
            free(a);
            free(b);
        }
}

TEST(duplicates_share_a_front_by_id)
{
    /* three copies of (1,1) and two of (2,0): all non-dominated, no copy dominates another */
    const double obj[] = {1, 1, 2, 0, 1, 1, 2, 0, 1, 1, 3, 3};
    const int64_t ids[] = {9, 8, 2, 5, 4, 1};
    int64_t got[6];
    int level[6];
    REQUIRE(rank_ids(6, 2, obj, NULL, ids, got, level) == PARETO_OK);
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(level[i], 0);
    CHECK_EQ_INT(level[5], 1);
    /* (1,1) first (best first objective, smallest id 2), then (2,0) id 5 (farthest),
     * then the remaining copies (distance 0 to a taken copy) by id */
    const int64_t want[] = {2, 5, 4, 8, 9, 1};
    for (int i = 0; i < 6; i++)
        CHECK_EQ_INT(got[i], want[i]);
}

/* ---- ranking: feasibility and NaN --------------------------------------------------------- */

TEST(feasible_first_then_violation_then_id)
{
    /* infeasible points with excellent objectives still rank after every feasible one */
    const double obj[] = {0, 0, 5, 5, 0, 0, 6, 1, 0, 1, 9, 9, 0, 0};
    const double viol[] = {2.0, 0.0, 0.5, 0.0, INFINITY, 0.0, 0.5};
    const int64_t ids[] = {1, 2, 3, 4, 5, 6, 7};
    int64_t got[7];
    int level[7];
    REQUIRE(rank_ids(7, 2, obj, viol, ids, got, level) == PARETO_OK);
    /* feasible: 2 (5,5), 4 (6,1), 6 (9,9): fronts {2,4} {6}; then 3 and 7 (0.5, by id), 1
     * (2.0), 5 (unknown) */
    const int64_t want[] = {2, 4, 6, 3, 7, 1, 5};
    for (int i = 0; i < 7; i++)
        CHECK_EQ_INT(got[i], want[i]);
    CHECK_EQ_INT(level[1], 0);
    CHECK_EQ_INT(level[3], 0);
    CHECK_EQ_INT(level[5], 1);
    CHECK_EQ_INT(level[2], 2); /* each infeasible point its own level, in order */
    CHECK_EQ_INT(level[6], 3);
    CHECK_EQ_INT(level[0], 4);
    CHECK_EQ_INT(level[4], 5);
}

TEST(nan_objectives_after_finite_before_infeasible)
{
    const double obj[] = {NAN, 0, 3, 3, 1, INFINITY, 4, 4, NAN, NAN, 2, 2};
    const double viol[] = {0, 0, 0, 0, 0, NAN};
    const int64_t ids[] = {6, 5, 4, 3, 2, 1};
    int64_t got[6];
    int level[6];
    REQUIRE(rank_ids(6, 2, obj, viol, ids, got, level) == PARETO_OK);
    /* finite feasible: id 5 (3,3), id 3 (4,4) -> fronts 0, 1; NaN/inf objective: ids 2, 4, 6
     * by id, one level each; then the infeasible id 1 (NaN violation read as unknown) */
    const int64_t want[] = {5, 3, 2, 4, 6, 1};
    for (int i = 0; i < 6; i++)
        CHECK_EQ_INT(got[i], want[i]);
    CHECK_EQ_INT(level[1], 0);
    CHECK_EQ_INT(level[3], 1);
    CHECK_EQ_INT(level[4], 2);
    CHECK_EQ_INT(level[2], 3);
    CHECK_EQ_INT(level[0], 4);
    CHECK_EQ_INT(level[5], 5);
    /* NULL violation: everything feasible, NULL ids: the index */
    size_t order[6];
    REQUIRE(pareto_rank(6, 2, obj, NULL, NULL, order, level, NULL, 0) == PARETO_OK);
    const size_t want2[] = {5, 1, 3, 0, 2, 4};
    for (int i = 0; i < 6; i++)
        CHECK_EQ_INT(order[i], want2[i]);
}

TEST(all_infeasible)
{
    const double obj[] = {1, 1, 0, 0, 2, 2, 3, 0, 0, 0, 0, 0};
    /* NaN violation reads as unknown (+INFINITY): after every finite one, then by id */
    const double viol[] = {3.0, 1.0, 1.0, 0.25, INFINITY, NAN};
    const int64_t ids[] = {10, 30, 20, 40, 50, 5};
    int64_t got[6];
    int level[6];
    REQUIRE(rank_ids(6, 2, obj, viol, ids, got, level) == PARETO_OK);
    const int64_t want[] = {40, 20, 30, 10, 5, 50};
    for (int i = 0; i < 6; i++)
        CHECK_EQ_INT(got[i], want[i]);
    CHECK_EQ_INT(level[3], 0); /* no feasible front at all: the levels start at 0 */
    CHECK_EQ_INT(level[2], 1);
    CHECK_EQ_INT(level[1], 2);
    CHECK_EQ_INT(level[0], 3);
    CHECK_EQ_INT(level[5], 4);
    CHECK_EQ_INT(level[4], 5);
}

TEST(rank_bad_arguments)
{
    double obj[2] = {1, 2};
    size_t order[2] = {7, 7};
    char err[128] = "";
    CHECK_EQ_INT(pareto_rank(2, 0, obj, NULL, NULL, order, NULL, err, sizeof err), PARETO_EINVAL);
    CHECK_CONTAINS(err, "k is 0");
    CHECK_EQ_INT(order[0], 7); /* untouched */
    CHECK_EQ_INT(pareto_rank(2, 1, NULL, NULL, NULL, order, NULL, err, sizeof err), PARETO_EINVAL);
    CHECK_CONTAINS(err, "must not be NULL");
    CHECK_EQ_INT(pareto_rank(2, 1, obj, NULL, NULL, NULL, NULL, NULL, 0), PARETO_EINVAL);
    CHECK_EQ_INT(pareto_rank(0, 1, NULL, NULL, NULL, NULL, NULL, err, sizeof err), PARETO_OK);
}

TEST(rank_out_of_memory)
{
    double obj[40];
    for (int i = 0; i < 40; i++)
        obj[i] = (double)((i * 7) % 11);
    size_t order[20], want[20];
    int level[20];
    REQUIRE(pareto_rank(20, 2, obj, NULL, NULL, want, NULL, NULL, 0) == PARETO_OK);
    int failures = 0;
    for (long at = 0;; at++) {
        char err[128] = "";
        for (int i = 0; i < 20; i++)
            order[i] = 99;
        g_nalloc = 0;
        g_fail_at = at;
        int rc = pareto_rank(20, 2, obj, NULL, NULL, order, level, err, sizeof err);
        g_fail_at = -1;
        if (g_nalloc <= at) { /* no call failed: done */
            CHECK_EQ_INT(rc, PARETO_OK);
            for (int i = 0; i < 20; i++)
                CHECK_EQ_INT(order[i], want[i]);
            break;
        }
        failures++;
        CHECK_EQ_INT(rc, PARETO_ENOMEM);
        CHECK_CONTAINS(err, "out of memory");
        CHECK_EQ_INT(order[0], 99);
    }
    CHECK(failures > 0);
}

/* ---- hypervolume -------------------------------------------------------------------------- */

/* Inclusion-exclusion over every non-empty subset: the union of the boxes [p, ref]. */
static double hv_inclusion_exclusion(size_t n, size_t k, const double *obj, const double *ref)
{
    double total = 0;
    for (unsigned long s = 1; s < (1ul << n); s++) {
        double v = 1;
        int bits = 0;
        for (size_t d = 0; d < k; d++) {
            double worst = -INFINITY;
            for (size_t i = 0; i < n; i++)
                if (s >> i & 1) worst = obj[i * k + d] > worst ? obj[i * k + d] : worst;
            v *= ref[d] - worst;
        }
        for (size_t i = 0; i < n; i++)
            bits += (int)(s >> i & 1);
        total += bits % 2 ? v : -v;
    }
    return total;
}

/* Integer points in [0, g)^k, ref = (g, ..., g): count the unit cells some point dominates. */
static double hv_grid(size_t n, size_t k, const double *obj, int g)
{
    long cells = 1, count = 0;
    for (size_t d = 0; d < k; d++)
        cells *= g;
    for (long c = 0; c < cells; c++) {
        int cell[8];
        long x = c;
        for (size_t d = 0; d < k; d++) {
            cell[d] = (int)(x % g);
            x /= g;
        }
        for (size_t i = 0; i < n; i++) {
            size_t d = 0;
            while (d < k && obj[i * k + d] <= cell[d])
                d++;
            if (d == k) {
                count++;
                break;
            }
        }
    }
    return (double)count;
}

TEST(hypervolume_2d_by_hand)
{
    const double ref[] = {4, 4};
    const double obj[] = {1, 3, 2, 2, 3, 1};
    CHECK_NEAR(pareto_hypervolume(3, 2, obj, NULL, ref), 3 + 2 + 1, 1e-12);
    const double one[] = {1, 1};
    CHECK_NEAR(pareto_hypervolume(1, 2, one, NULL, ref), 9, 1e-12);
    /* a dominated point and a duplicate change nothing */
    const double more[] = {1, 3, 2, 2, 3, 1, 3, 3, 2, 2};
    CHECK_NEAR(pareto_hypervolume(5, 2, more, NULL, ref), 6, 1e-12);
    CHECK_NEAR(pareto_hypervolume(0, 2, NULL, NULL, ref), 0, 0);
}

TEST(hypervolume_3d_by_hand)
{
    const double ref[] = {2, 2, 2};
    const double corner[] = {0, 0, 0};
    CHECK_NEAR(pareto_hypervolume(1, 3, corner, NULL, ref), 8, 1e-12);
    /* three unit-thick slabs from the axes: 4 + 4 + 4 - 2 - 2 - 2 + 1 = 7 */
    const double slabs[] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    CHECK_NEAR(pareto_hypervolume(3, 3, slabs, NULL, ref), 7, 1e-12);
    const double ref3[] = {3, 3, 3};
    const double two[] = {1, 1, 2, 2, 2, 1}; /* 2*2*1 + 1*1*2 - 1*1*1 = 5 */
    CHECK_NEAR(pareto_hypervolume(2, 3, two, NULL, ref3), 5, 1e-12);
}

TEST(hypervolume_ignores)
{
    const double ref[] = {4, 4};
    /* counted: (1,3), (3,1); not: (2,2) infeasible, (0,4) not strictly better than ref,
     * (NaN,0), (-inf,1), (0,5) */
    const double obj[] = {1, 3, 3, 1, 2, 2, 0, 4, NAN, 0, -INFINITY, 1, 0, 5};
    const double viol[] = {0, 0, 0.5, 0, 0, 0, 0};
    CHECK_NEAR(pareto_hypervolume(7, 2, obj, viol, ref), 3 + 3 - 1, 1e-12);
    /* without violations the (2,2) counts */
    CHECK_NEAR(pareto_hypervolume(7, 2, obj, NULL, ref), 6, 1e-12);
    const double worse[] = {5, 5};
    CHECK_NEAR(pareto_hypervolume(1, 2, worse, NULL, ref), 0, 0);
    CHECK(isnan(pareto_hypervolume(1, 0, obj, NULL, ref)));
    CHECK(isnan(pareto_hypervolume(1, 2, obj, NULL, NULL)));
    const double badref[] = {4, INFINITY};
    CHECK(isnan(pareto_hypervolume(1, 2, obj, NULL, badref)));
}

TEST(hypervolume_grid_count)
{
    for (size_t k = 2; k <= 5; k++) {
        int g = k <= 3 ? 12 : 6;
        for (int rep = 0; rep < 30; rep++) {
            size_t n = 1 + below(k <= 3 ? 300 : 25);
            double obj[300 * 5], ref[5];
            for (size_t i = 0; i < n * k; i++)
                obj[i] = (double)below((size_t)g);
            for (size_t d = 0; d < k; d++)
                ref[d] = g;
            CHECK_NEAR(pareto_hypervolume(n, k, obj, NULL, ref), hv_grid(n, k, obj, g), 1e-9);
        }
    }
}

TEST(hypervolume_inclusion_exclusion)
{
    for (size_t k = 2; k <= 5; k++)
        for (int rep = 0; rep < 40; rep++) {
            size_t n = 1 + below(11);
            double obj[11 * 5], ref[5];
            for (size_t i = 0; i < n; i++) {
                /* near the simplex, so few points are dominated */
                double s = 0;
                for (size_t d = 0; d < k; d++) {
                    obj[i * k + d] = unif();
                    s += obj[i * k + d];
                }
                for (size_t d = 0; d < k; d++)
                    obj[i * k + d] /= s;
            }
            for (size_t d = 0; d < k; d++)
                ref[d] = 1.1;
            double want = hv_inclusion_exclusion(n, k, obj, ref);
            CHECK_NEAR(pareto_hypervolume(n, k, obj, NULL, ref), want, 1e-9 * (1 + want));
        }
}

TEST(hypervolume_out_of_memory)
{
    double obj[12 * 4], ref[4] = {1, 1, 1, 1};
    for (int i = 0; i < 12 * 4; i++)
        obj[i] = unif();
    double want = pareto_hypervolume(12, 4, obj, NULL, ref);
    REQUIRE(want > 0);
    int failures = 0;
    for (long at = 0;; at++) {
        g_nalloc = 0;
        g_fail_at = at;
        double v = pareto_hypervolume(12, 4, obj, NULL, ref);
        g_fail_at = -1;
        if (g_nalloc <= at) {
            CHECK_NEAR(v, want, 0);
            break;
        }
        failures++;
        CHECK(isnan(v));
    }
    CHECK(failures > 3);
}

/* ---- reference point ---------------------------------------------------------------------- */

TEST(reference_point_rule)
{
    /* objective 0 over finite values: 1..5 -> 5 + 0.4; objective 1: all 2 -> 2 + 0.2;
     * objective 2: all 0 -> 1 */
    const double obj[] = {1, 2, 0, 5, 2, 0, NAN, 2, 0, 3, INFINITY, 0};
    double ref[3];
    char err[160] = "";
    REQUIRE(pareto_reference(4, 3, obj, ref, err, sizeof err) == PARETO_OK);
    CHECK_NEAR(ref[0], 5.4, 1e-12);
    CHECK_NEAR(ref[1], 2.2, 1e-12);
    CHECK_NEAR(ref[2], 1.0, 0);
    const double neg[] = {-10, -20};
    REQUIRE(pareto_reference(2, 1, neg, ref, err, sizeof err) == PARETO_OK);
    CHECK_NEAR(ref[0], -9, 1e-12);
    const double none[] = {1, NAN, 2, NAN};
    CHECK_EQ_INT(pareto_reference(2, 2, none, ref, err, sizeof err), PARETO_EINVAL);
    CHECK_CONTAINS(err, "objective 1 has no finite value");
    CHECK_EQ_INT(pareto_reference(1, 0, none, ref, err, sizeof err), PARETO_EINVAL);
    /* every point is strictly inside: each counts in the hypervolume */
    const double pts[] = {1, 4, 2, 2, 4, 1};
    REQUIRE(pareto_reference(3, 2, pts, ref, NULL, 0) == PARETO_OK);
    CHECK_NEAR(ref[0], 4.3, 1e-12);
    CHECK_NEAR(ref[1], 4.3, 1e-12);
    CHECK(pareto_hypervolume(1, 2, pts + 4, NULL, ref) > 0);
}

/* A trial may report 1e308 and another -1e308 (valid JSON, finite doubles): the range
 * overflows, and the reference point was +inf, which pareto_hypervolume refuses (NaN: the
 * report's hypervolume curve was empty and its reference "null"). It stays finite, past the
 * worst value, and the hypervolume against it is a number. */
TEST(reference_point_of_values_near_dbl_max_is_finite)
{
    const double pts[] = {-1e308, 1e308, 1e308, 0.5, 0, 6, 1, 5};
    double ref[2];
    REQUIRE(pareto_reference(4, 2, pts, ref, NULL, 0) == PARETO_OK);
    CHECK(isfinite(ref[0]) && ref[0] > 1e308);
    CHECK_NEAR(ref[0], 1.2e308, 1e296);
    CHECK(isfinite(ref[1]) && ref[1] > 1e308);
    CHECK(!isnan(pareto_hypervolume(4, 2, pts, NULL, ref)));
    const double top[] = {DBL_MAX, 1, -DBL_MAX, 2};
    REQUIRE(pareto_reference(2, 2, top, ref, NULL, 0) == PARETO_OK);
    CHECK(ref[0] == DBL_MAX);
    CHECK_NEAR(ref[1], 2.1, 1e-12);
    CHECK(!isnan(pareto_hypervolume(2, 2, top, NULL, ref)));
}

TT_MAIN
