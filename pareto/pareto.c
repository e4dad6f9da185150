/* pareto/pareto.c: dominance, the ranking of several objectives and the hypervolume
 * (pareto.h says the rules). Not for: what a result's objectives are (search/settings.c). */
#include "pareto/pareto.h"

#include <math.h>

int pareto_dominates(size_t k, const double *a, const double *b)
{
    int better = 0;
    for (size_t i = 0; i < k; i++) {
        if (isnan(a[i]) || isnan(b[i]) || a[i] > b[i]) return 0;
        better |= a[i] < b[i];
    }
    return better;
}
