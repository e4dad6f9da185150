/* bench/pareto_bench.c: pareto_rank's cost at n = 1,000 and 5,000 points, k = 2 and 3, on
 * scattered points (many fronts) and on points all on one front (the epsilon-net's worst
 * case), beside the textbook NSGA-II ranking measured in the same run (Deb's fast
 * non-dominated sort with its O(n^2) dominance lists, as Optuna 3.1's
 * _fast_non_dominated_sort, then crowding distance inside each front); and
 * pareto_hypervolume on the first front. A benchmark that prints numbers and ratios, never a
 * test. Usage: pareto_bench [REPEATS]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "pareto/pareto.h"

/* ---- the peer: Deb et al. 2002, written as the paper gives it ----------------------------- */

static const double *g_obj;
static size_t g_k, g_dim;
static double *g_crowd;

static int by_dim(const void *a, const void *b)
{
    double x = g_obj[*(const size_t *)a * g_k + g_dim], y = g_obj[*(const size_t *)b * g_k + g_dim];
    return (x > y) - (x < y);
}
static int by_crowd_desc(const void *a, const void *b)
{
    double x = g_crowd[*(const size_t *)a], y = g_crowd[*(const size_t *)b];
    return (x < y) - (x > y);
}

/* Fills order; returns the number of fronts (or 0 when out of memory). */
static size_t deb_rank(size_t n, size_t k, const double *obj, size_t *order)
{
    size_t *cnt = calloc(n, sizeof *cnt), *nlist = calloc(n, sizeof *nlist);
    size_t **list = calloc(n, sizeof *list), *cur = malloc(n * sizeof *cur);
    double *crowd = calloc(n, sizeof *crowd);
    for (size_t i = 0; i < n; i++)
        list[i] = malloc(n * sizeof **list);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            if (pareto_dominates(k, obj + i * k, obj + j * k)) {
                list[i][nlist[i]++] = j;
                cnt[j]++;
            } else if (pareto_dominates(k, obj + j * k, obj + i * k)) {
                list[j][nlist[j]++] = i;
                cnt[i]++;
            }
        }
    size_t ncur = 0, pos = 0, nf = 0;
    for (size_t i = 0; i < n; i++)
        if (cnt[i] == 0) cur[ncur++] = i;
    g_obj = obj;
    g_k = k;
    g_crowd = crowd;
    while (ncur) {
        size_t *f = order + pos;
        memcpy(f, cur, ncur * sizeof *cur);
        for (g_dim = 0; g_dim < k; g_dim++) {
            qsort(f, ncur, sizeof *f, by_dim);
            double w = obj[f[ncur - 1] * k + g_dim] - obj[f[0] * k + g_dim];
            crowd[f[0]] = crowd[f[ncur - 1]] = INFINITY;
            for (size_t t = 1; t + 1 < ncur && w > 0; t++)
                crowd[f[t]] += (obj[f[t + 1] * k + g_dim] - obj[f[t - 1] * k + g_dim]) / w;
        }
        qsort(f, ncur, sizeof *f, by_crowd_desc);
        size_t nnext = 0;
        for (size_t t = 0; t < ncur; t++)
            for (size_t u = 0; u < nlist[f[t]]; u++)
                if (--cnt[list[f[t]][u]] == 0) cur[nnext++] = list[f[t]][u];
        pos += ncur;
        ncur = nnext;
        nf++;
    }
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
    free(nlist);
    free(cnt);
    free(cur);
    free(crowd);
    return nf;
}

/* ---- workloads ---------------------------------------------------------------------------- */

/* scattered: uniform in the cube; one front: on the simplex sum = 1 (no point dominates). */
static void make_points(size_t n, size_t k, int one_front, uint64_t *seed, double *obj)
{
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t d = 0; d < k; d++) {
            obj[i * k + d] = bench_uniform01(seed);
            s += obj[i * k + d];
        }
        if (one_front)
            for (size_t d = 0; d < k; d++)
                obj[i * k + d] /= s;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? (int)bench_arg_long(argv[0], "REPEATS", argv[1], 1, 1000) : 5;
    printf("%-9s %5s %2s %7s %12s %12s %7s %14s %9s\n", "points", "n", "k", "fronts", "rank_ms",
           "deb_nsga2_ms", "ratio", "front0_size", "hv_ms");
    for (int one = 0; one <= 1; one++)
        for (size_t k = 2; k <= 3; k++)
            for (size_t n = 1000; n <= 5000; n += 4000) {
                uint64_t seed = 42 + n + k;
                double *obj = malloc(n * k * sizeof *obj);
                size_t *order = malloc(n * sizeof *order);
                int *level = malloc(n * sizeof *level);
                double t_rank[1000], t_deb[1000], t_hv[1000];
                make_points(n, k, one, &seed, obj);
                size_t nf = 0, nfront0 = 0;
                double ref[3] = {1.1, 1.1, 1.1};
                for (int r = 0; r < reps; r++) {
                    double t0 = bench_clock_s(CLOCK_MONOTONIC);
                    if (pareto_rank(n, k, obj, NULL, NULL, order, level, NULL, 0) != PARETO_OK) {
                        fprintf(stderr, "pareto_bench: pareto_rank failed\n");
                        return 1;
                    }
                    double t1 = bench_clock_s(CLOCK_MONOTONIC);
                    nf = deb_rank(n, k, obj, order);
                    double t2 = bench_clock_s(CLOCK_MONOTONIC);
                    int maxlevel = -1;
                    for (size_t i = 0; i < n; i++)
                        if (level[i] > maxlevel) maxlevel = level[i];
                    if ((size_t)maxlevel + 1 != nf) {
                        fprintf(stderr, "pareto_bench: %d fronts, Deb's sort %zu\n", maxlevel + 1,
                                nf);
                        return 1;
                    }
                    t_rank[r] = (t1 - t0) * 1e3;
                    t_deb[r] = (t2 - t1) * 1e3;
                    /* the hypervolume of the first front alone (what a report draws) */
                    double *f0 = malloc(n * k * sizeof *f0);
                    nfront0 = 0;
                    for (size_t i = 0; i < n; i++)
                        if (level[i] == 0) memcpy(f0 + nfront0++ * k, obj + i * k, k * sizeof *f0);
                    double t3 = bench_clock_s(CLOCK_MONOTONIC);
                    double hv = pareto_hypervolume(nfront0, k, f0, NULL, ref);
                    t_hv[r] = (bench_clock_s(CLOCK_MONOTONIC) - t3) * 1e3;
                    free(f0);
                    if (!(hv > 0)) {
                        fprintf(stderr, "pareto_bench: hypervolume %g\n", hv);
                        return 1;
                    }
                }
                qsort(t_rank, (size_t)reps, sizeof *t_rank, cmp_double);
                qsort(t_deb, (size_t)reps, sizeof *t_deb, cmp_double);
                qsort(t_hv, (size_t)reps, sizeof *t_hv, cmp_double);
                double mr = t_rank[reps / 2], md = t_deb[reps / 2];
                printf("%-9s %5zu %2zu %7zu %12.2f %12.2f %6.2fx %14zu %9.2f\n",
                       one ? "one-front" : "scattered", n, k, nf, mr, md, md / mr, nfront0,
                       t_hv[reps / 2]);
                free(obj);
                free(order);
                free(level);
            }
    printf("(median of %d runs each; ratio = Deb's NSGA-II ranking time / pareto_rank's)\n", reps);
    return 0;
}
