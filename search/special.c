/* search/special.c: the special functions the TPE searcher's estimators use, written out
 * from classical expansions so that no C library's erf, erfc or exp decides a suggestion:
 * a sum in a fixed order, erfc and the normal CDF, its inverse, Gaussian masses and the
 * truncated-normal draw. Optuna 3.1 vendors the same pieces from scipy in
 * optuna/samplers/_tpe/_erf.py (erf) and _truncnorm.py (_ndtr, _log_gauss_mass, ppf, rvs);
 * the correspondence is named at each function. Not for: the estimators themselves
 * (parzen.c, kde.c) or the random stream (space_int.h, keyed in sample.c). Learnt from
 * the sources named at each function; no code copied. */
#include <math.h>

#include "search/special_int.h"

/* Eight running sums, element i into sum i mod 8, then added as a tree: no chain of n
 * dependent additions, and the order does not depend on how a compiler vectorises it.
 * Every total of weights that must agree bit for bit uses this one. The sums are
 * variables, not an array: an array of them stayed in memory. */
SPACE__CLONES static double sum8(const double *restrict v, size_t n)
{
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        a0 += v[i], a1 += v[i + 1], a2 += v[i + 2], a3 += v[i + 3];
        a4 += v[i + 4], a5 += v[i + 5], a6 += v[i + 6], a7 += v[i + 7];
    }
    double t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t j = 0; i < n; i++, j++)
        t[j] = v[i];
    a0 += t[0], a1 += t[1], a2 += t[2], a3 += t[3], a4 += t[4], a5 += t[5], a6 += t[6];
    a7 += t[7];
    return ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7));
}

double space__sum(const double *v, size_t n)
{
    return sum8(v, n);
}

/* erfc from two classical expansions (Optuna's _erf.py is scipy's rational fits instead):
 * below 2 the all-positive series erf(x) = 2/sqrt(pi) e^(-x^2) sum (2x^2)^n x /
 * (1*3*...*(2n+1)) (no cancellation), above it Laplace's continued fraction
 * erfc(x) = e^(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), evaluated
 * backwards from a fixed depth that has converged to double precision at that x. */
double space__erfc(double x)
{
    if (isnan(x)) return x;
    if (x < 0) return 2.0 - space__erfc(-x);
    double x2 = x * x;
    if (x < 2.0) {
        double t = x, sum = x;
        for (int n = 1; n < 100; n++) {
            t *= 2.0 * x2 / (2 * n + 1);
            sum += t;
            if (t < sum * 1e-17) break;
        }
        return 1.0 - 2.0 / SPACE__SQRT_PI * exp(-x2) * sum;
    }
    if (x > 27.3) return 0.0; /* below the smallest subnormal */
    int depth = x < 2.5 ? 48 : x < 3.0 ? 40 : x < 4.0 ? 28 : x < 6.0 ? 20 : 12;
    double f = x;
    for (int n = depth; n >= 1; n--)
        f = x + (0.5 * n) / f;
    return exp(-x2) / SPACE__SQRT_PI / f;
}

/* _truncnorm._ndtr */
double space__ndtr(double x)
{
    return 0.5 * space__erfc(-x / SPACE__SQRT_2);
}

/* Acklam's rational approximation (relative error 1.15e-9), then one Halley step against
 * space__ndtr, which brings it to double precision. (_truncnorm inverts by bisection on
 * log ndtr, _ndtri_exp: the same function, to its own precision.) */
double space__ndtri(double p)
{
    static const double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                -2.759285104469687e+02, 1.383577518672690e+02,
                                -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[5] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                -1.556989798598866e+02, 6.680131188771972e+01,
                                -1.328068155288572e+01};
    static const double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                -2.400758277161838e+00, -2.549732539343734e+00,
                                4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[4] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                3.754408661907416e+00};
    if (!(p > 0)) return -INFINITY;
    if (!(p < 1)) return INFINITY;
    double x;
    if (p < 0.02425 || p > 1 - 0.02425) {
        double pp = p < 0.5 ? p : 1 - p;
        double q = sqrt(-2 * log(pp));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
        if (p > 0.5) x = -x;
    } else {
        double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
    }
    /* Halley's step on the tail that is small, so the residual keeps its precision */
    double e = x <= 0 ? space__ndtr(x) - p : (1 - p) - space__ndtr(-x);
    double u = e * SPACE__SQRT_2PI * exp(0.5 * x * x);
    return x - u / (1 + 0.5 * x * u);
}

/* _log_gauss_mass's three cases (left tail, right tail, central), without the log. */
double space__gauss_mass(double a, double b)
{
    if (a >= 0) return space__ndtr(-a) - space__ndtr(-b);
    if (b <= 0) return space__ndtr(b) - space__ndtr(a);
    return 1.0 - space__ndtr(a) - space__ndtr(-b);
}

/* ppf's two cases (a < 0: from the left; else from the right, where the upper tail keeps
 * its precision), with the masses computed once per (a, b). */
void space__truncnorm_cdfs(double a, double b, double c[2])
{
    if (a < -8.5 && b > 8.5) { /* both cut tails below 1e-17: the truncation cannot move a draw */
        c[0] = c[1] = -1;
    } else if (a >= 0) { /* right tail: the upper tail keeps its precision */
        c[0] = space__ndtr(-a), c[1] = space__ndtr(-b);
    } else {
        c[0] = space__ndtr(a), c[1] = space__ndtr(b);
    }
}

double space__truncnorm_invert(double u, double a, double b, const double c[2])
{
    double x;
    if (c[0] < 0)
        x = space__ndtri(u > 0 ? u : 0x1.0p-60);
    else if (a >= 0)
        x = -space__ndtri(c[0] - u * (c[0] - c[1]));
    else
        x = space__ndtri(c[0] + u * (c[1] - c[0]));
    if (!(x >= a)) x = a; /* also when the mass underflowed */
    if (x > b) x = b;
    return x;
}

/* _truncnorm.rvs: one uniform per draw */
double space__truncnorm_draw(space__rng_t *r, double a, double b)
{
    double u = space__rng_uniform(r), c[2];
    space__truncnorm_cdfs(a, b, c);
    return space__truncnorm_invert(u, a, b, c);
}

double space__exp_nonpos(double x)
{
    return space__exp_nonpos_inl(x);
}
