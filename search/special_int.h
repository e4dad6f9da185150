/* search internals: the numerical kernels the Parzen estimator and the KDE are built on
 * (special.c, and two exponentials inline here): sums in a fixed order, erfc, the normal
 * CDF and its inverse, truncated-normal masses and draws. Written here so no libm erf,
 * erfc or vector library decides a suggestion. Not for: anything that knows what a
 * component or an observation is (parzen.c), or anything outside search/ and its tests. */
#ifndef TUNE_SPECIAL_INT_H
#define TUNE_SPECIAL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "search/space_int.h"

/* Copies of a hot loop for AVX-512 and AVX2, chosen at load time where the CPU has them
 * (8 or 4 lanes instead of SSE2's 2). Only for loops whose operations are the same IEEE
 * operations in every copy (no fused multiply-adds: -ffp-contract=off), so the results
 * do not depend on the CPU. TUNE_PORTABLE builds the plain copy only. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute) && !defined(TUNE_PORTABLE)
#if __has_attribute(target_clones)
#define SPACE__CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef SPACE__CLONES
#define SPACE__CLONES
#endif

#define SPACE__SQRT_PI 1.7724538509055160273
#define SPACE__SQRT_2 1.4142135623730950488
#define SPACE__SQRT_2PI 2.5066282746310005024

/* The sum of v[0..n) in a fixed order (eight running sums, then a tree): what every total
 * of weights uses, so totals taken in different places agree bit for bit. */
double space__sum(const double *v, size_t n);

/* Accurate to a few units in the last place over the whole range (tests compare them
 * with the C library's erfc); only +, -, *, / and exp are used. */
double space__erfc(double x);
double space__ndtr(double x);  /* the standard normal CDF */
double space__ndtri(double p); /* its inverse, 0 < p < 1 */

/* Mass of the standard normal in [a, b], taken on the side where it is a small
 * difference of small numbers: Optuna's _truncnorm._log_gauss_mass before its log. */
double space__gauss_mass(double a, double b);

/* A draw from the standard normal truncated to [a, b] (a < b) by inversion of one uniform
 * u, as scipy's truncnorm.ppf (which Optuna 3.1 vendors as _truncnorm.ppf/rvs) does. The
 * two normal masses it inverts between depend only on (a, b): space__truncnorm_cdfs
 * computes them (c[0] = c[1] = -1 when both cut tails are negligible) so that a caller
 * drawing often from the same (a, b) keeps them; space__truncnorm_invert maps u. */
void space__truncnorm_cdfs(double a, double b, double c[2]);
double space__truncnorm_invert(double u, double a, double b, const double c[2]);
/* The same from the stream r: one uniform per draw. */
double space__truncnorm_draw(space__rng_t *r, double a, double b);

/* e^x for x <= 0, written out so the windowed sums' exponentials vectorise and do not
 * depend on the C library: Cody and Waite's reduction x = k ln2 + r (|r| <= ln2/2, ln2 in
 * two parts, the first with 21 trailing zero bits so k ln2hi is exact for |k| < 2^21),
 * e^r by its Taylor polynomial to degree 13 (truncation below 4e-18 relative), 2^k put
 * into the exponent bits and 0 below 2^-1022. Within 1 ulp of the correctly rounded
 * value (checked against the C library's exp over [-700, 0] in tpe.exp_nonpos_accuracy).
 * No branch: each step is the same IEEE operation whether a compiler vectorises it or
 * not, so the result does not depend on the vector width. Valid for -1e15 < x <= 0.
 * Inline so that the loops calling it vectorise; space__exp_nonpos is the same, called. */
static inline double space__exp_nonpos_inl(double x)
{
    const double log2e = 1.4426950408889634074, shift = 0x1.8p52;
    const double ln2hi = 6.93147180369123816490e-01, ln2lo = 1.90821492927058770002e-10;
    double kd = x * log2e + shift; /* k, rounded to nearest, in the low bits */
    uint64_t kb;
    memcpy(&kb, &kd, sizeof kb);
    kd -= shift;
    double r = (x - kd * ln2hi) - kd * ln2lo;
    /* Estrin's scheme: pairs of coefficients, then pairs of pairs; a shorter chain of
     * dependent operations than Horner's, which is what bounds a vectorised loop */
    double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    double a1 = 0.5 + r * (1.0 / 6.0), a2 = 1.0 / 24.0 + r * (1.0 / 120.0);
    double a3 = 1.0 / 720.0 + r * (1.0 / 5040.0), a4 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
    double a5 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
    double a6 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
    double b1 = a1 + r2 * a2, b2 = a3 + r2 * a4, b3 = a5 + r2 * a6;
    double q = (b1 + r4 * b2) + r8 * b3; /* sum over i >= 2 of r^(i-2) / i! */
    double p = 1.0 + (r + r2 * q);
    /* k + 1023, the biased exponent; zero (the result 0) when it is not positive */
    uint64_t kk = kb - 0x4338000000000000ULL + 1023;
    uint64_t sb = (kk << 52) & ((kk >> 63) - 1);
    double sc;
    memcpy(&sc, &sb, sizeof sc);
    return p * sc;
}
double space__exp_nonpos(double x);

/* e^y for y in [-50, 0] in single precision, within 4e-6 relative (Taylor to degree 5
 * after the reduction y = k ln2 + r; 2^k through the exponent bits): the single-precision
 * bounds' exponential (parzen_bounds.c), and the windowed walk's stopping test's. */
static inline float space__crude_expf(float y)
{
    /* y in [-50, 0]: y = k ln2 + r, k = round(y / ln2), 2^k through the exponent bits */
    const float log2e = 1.44269504f, shift = 12582912.0f; /* 1.5 x 2^23 */
    const float ln2hi = 0.693145752f, ln2lo = 1.42860677e-06f;
    float kf = y * log2e + shift;
    uint32_t kb;
    memcpy(&kb, &kf, sizeof kb);
    kf -= shift;
    float r = (y - kf * ln2hi) - kf * ln2lo;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120)))));
    uint32_t sb = (kb - 0x4B400000u + 127u) << 23; /* k + 127 > 0 for k >= -73 */
    float sc;
    memcpy(&sc, &sb, sizeof sc);
    return p * sc;
}

#endif
