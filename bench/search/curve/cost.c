/* bench/search/curve/cost.c: what one suggestion of the curve searchers would cost in C at
 * n trials: the pooled power-law refit (curve.py) over ASHA-shaped curves, and the kernel
 * regression's leave-one-out bandwidth choice and EI scoring (searchers.py KernelEI). A
 * sizing program for the README, not product code and not built by CMake:
 *   cc -O2 -std=c11 -o /tmp/cost bench/search/curve/cost.c -lm && /tmp/cost 1000 8 50
 * Curves and configurations are random (the cost does not depend on the values). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NG 8
static const double GAM[NG] = {0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double urand(unsigned long long *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (*s >> 11) * (1.0 / 9007199254740992.0);
}

/* weighted ridge fit of y = a + beta (b^-g - T^-g) over the first m points: returns a */
static double fit(const double *b, const double *y, int m, double g, double T, double bb,
                  double lam, double *beta)
{
    double sw = 0, swp = 0, swpp = 0, swy = 0, swpy = 0, mb = 0;
    for (int j = 0; j < m; j++)
        mb += b[j];
    mb /= m;
    double tg = pow(T, -g);
    for (int j = 0; j < m; j++) {
        double w = b[j] / mb, p = pow(b[j], -g) - tg;
        sw += w, swp += w * p, swpp += w * p * p, swy += w * y[j], swpy += w * p * y[j];
    }
    double a11 = sw, a12 = swp, a22 = swpp + lam, r1 = swy, r2 = swpy + lam * bb;
    double det = a11 * a22 - a12 * a12;
    *beta = (a11 * r2 - a12 * r1) / det;
    return (a22 * r1 - a12 * r2) / det;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000, d = argc > 2 ? atoi(argv[2]) : 8;
    int T = argc > 3 ? atoi(argv[3]) : 50, reps = 20;
    unsigned long long s = 1;
    /* ASHA with grace 1, rf 3: a third of the trials pass each rung (1, 3, 9, 27, T) */
    int *m = malloc(n * sizeof *m), tot = 0;
    for (int i = 0; i < n; i++) {
        int k = 1;
        while (k < T && urand(&s) < 1.0 / 3)
            k = k * 3 > T ? T : k * 3;
        m[i] = k, tot += k;
    }
    double *b = malloc(tot * sizeof *b), *y = malloc(tot * sizeof *y), *all = malloc(tot * 8);
    double *X = malloc((size_t)n * d * 8), *yh = malloc(n * 8), *c = malloc(n * 8);
    double *sl = malloc(n * 8);
    for (int i = 0, o = 0; i < n; i++)
        for (int j = 0; j < m[i]; j++, o++)
            b[o] = j + 1, y[o] = 0.5 + urand(&s);
    for (int i = 0; i < n * d; i++)
        X[i] = urand(&s);

    double t0 = now(), sink = 0;
    for (int r = 0; r < reps; r++) { /* the refit: cap, gamma by holdout, every a_i */
        memcpy(all, y, tot * 8);
        qsort(all, tot, 8, cmpd);
        double cap = all[(int)(0.9 * (tot - 1))], best = INFINITY, bg = 0.5, bbb = 0;
        for (int g = 0; g < NG; g++) {
            int nl = 0;
            for (int i = 0, o = 0; i < n; o += m[i], i++)
                if (m[i] >= 6) fit(b + o, y + o, m[i], GAM[g], T, 0, 1e-9, &sl[nl++]);
            if (!nl) break;
            qsort(sl, nl, 8, cmpd);
            double bb = sl[nl / 2], err = 0, beta;
            for (int i = 0, o = 0; i < n; o += m[i], i++) {
                if (m[i] < 6) continue;
                int k = m[i] / 3 > 2 ? m[i] / 3 : 2;
                double a = fit(b + o, y + o, k, GAM[g], T, bb, 1.0, &beta);
                double e =
                    a + beta * (pow(b[o + m[i] - 1], -GAM[g]) - pow(T, -GAM[g])) - y[o + m[i] - 1];
                err += e * e;
            }
            if (err < best) best = err, bg = GAM[g], bbb = bb;
        }
        for (int i = 0, o = 0; i < n; o += m[i], i++) {
            double beta;
            yh[i] = fit(b + o, y + o, m[i], bg, T, bbb, 1.0, &beta);
            c[i] = b[o + m[i] - 1] / (b[o + m[i] - 1] + 0.1 * T);
        }
        sink += cap + yh[n / 2];
    }
    double t_refit = (now() - t0) / reps;

    static const double BW[4] = {0.05, 0.1, 0.2, 0.4};
    t0 = now();
    for (int r = 0; r < 3; r++) /* leave-one-out bandwidth: n^2 d distances, 4 kernels */
        for (int h = 0; h < 4; h++) {
            double err = 0, ih = -0.5 / (BW[h] * BW[h]);
            for (int i = 0; i < n; i++) {
                double sw = 0, swy = 0;
                for (int j = 0; j < n; j++) {
                    if (j == i) continue;
                    double d2 = 0;
                    for (int k = 0; k < d; k++) {
                        double z = X[i * d + k] - X[j * d + k];
                        d2 += z * z;
                    }
                    double w = exp(d2 * ih) * c[j];
                    sw += w, swy += w * yh[j];
                }
                double mu = (swy + 1e-6) / (sw + 1e-6) - yh[i];
                err += c[i] * mu * mu;
            }
            sink += err;
        }
    double t_loo = (now() - t0) / 3;

    int ncs[3] = {24, 256, 1000};
    double t_ei[3];
    for (int q = 0; q < 3; q++) { /* EI at nc candidates: nc n d distances */
        int nc = ncs[q];
        double *C = malloc((size_t)nc * d * 8);
        for (int i = 0; i < nc * d; i++)
            C[i] = urand(&s);
        t0 = now();
        for (int r = 0; r < 5; r++)
            for (int i = 0; i < nc; i++) {
                double sw = 0, swy = 0, swyy = 0, sww = 0;
                for (int j = 0; j < n; j++) {
                    double d2 = 0;
                    for (int k = 0; k < d; k++) {
                        double z = C[i * d + k] - X[j * d + k];
                        d2 += z * z;
                    }
                    double w = exp(-0.5 * d2 / 0.04) * c[j];
                    sw += w, swy += w * yh[j], swyy += w * yh[j] * yh[j], sww += w * w;
                }
                sink += (swy + 0.7) / (sw + 1) + sww + swyy;
            }
        t_ei[q] = (now() - t0) / 5;
        free(C);
    }
    printf("n %d trials (%d results), d %d, T %d\n", n, tot, d, T);
    printf("curve refit (cap, gamma, every a_i): %.3f ms\n", 1e3 * t_refit);
    printf("kernel LOO bandwidth (4 widths):     %.3f ms\n", 1e3 * t_loo);
    for (int q = 0; q < 3; q++)
        printf("kernel EI at %4d candidates:        %.3f ms\n", ncs[q], 1e3 * t_ei[q]);
    fprintf(stderr, "%g\n", sink);
    free(m), free(b), free(y), free(all), free(X), free(yh), free(c), free(sl);
    return 0;
}
