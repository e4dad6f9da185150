/* bench/mo/mo_hv.c: the engine's hypervolume (pareto_hypervolume) of points read from
 * stdin, so that bench/mo/mo.py can check its own 2-D hypervolume against the one tune's
 * report and docs use. Not for: anything a user runs (tune best --json gives the front).
 *
 * usage: mo_hv REF_1 .. REF_k < points   (k numbers per point, whitespace-separated;
 * "nan" allowed); prints the hypervolume with 17 significant digits. */
#include <stdio.h>
#include <stdlib.h>

#include "pareto/pareto.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: mo_hv REF_1 .. REF_k < points\n");
        return 2;
    }
    size_t k = (size_t)argc - 1, n = 0, cap = 1024;
    double *ref = malloc(k * sizeof *ref), *obj = malloc(cap * k * sizeof *obj);
    if (!ref || !obj) return 1;
    for (size_t j = 0; j < k; j++) {
        char *end;
        ref[j] = strtod(argv[j + 1], &end);
        if (*end) {
            fprintf(stderr, "mo_hv: reference \"%s\" is not a number\n", argv[j + 1]);
            return 2;
        }
    }
    for (;;) {
        if (n == cap) {
            cap *= 2;
            double *o = realloc(obj, cap * k * sizeof *obj);
            if (!o) return 1;
            obj = o;
        }
        size_t j = 0;
        while (j < k && scanf("%lf", &obj[n * k + j]) == 1)
            j++;
        if (j == 0) break;
        if (j < k) {
            fprintf(stderr, "mo_hv: point %zu has %zu of %zu numbers\n", n + 1, j, k);
            return 2;
        }
        n++;
    }
    printf("%.17g\n", pareto_hypervolume(n, k, obj, NULL, ref));
    free(obj);
    free(ref);
    return 0;
}
