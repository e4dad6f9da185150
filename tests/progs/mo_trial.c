/* mo_trial: a cheap, deterministic trial with two objectives and a constrained key, for the
 * end-to-end tests of several objectives (tests/test_mo.c). A wider model learns to a lower
 * loss but answers slower and needs more memory: loss(t) = floor + 1/sqrt(t), its floor
 * growing with |log10(lr / 0.01)| and shrinking with log2(width); latency_ms = 1 + width / 2;
 * mem_gb = width / 8. Each iteration prints one result line. Not for: anything outside
 * tests. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    double lr = 0.01, width = 16, sleep_ms = 0;
    long iters = 9;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--lr"))
            lr = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--width"))
            width = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--iters"))
            iters = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--sleep-ms"))
            sleep_ms = atof(argv[i + 1]);
    }
    double floor_ = 0.5 + 0.3 * fabs(log10(lr / 0.01)) - 0.05 * log2(width);
    for (long t = 1; t <= iters; t++) {
        if (sleep_ms > 0) usleep((useconds_t)(sleep_ms * 1000));
        printf("{\"training_iteration\": %ld, \"loss\": %.17g, \"latency_ms\": %.17g,"
               " \"mem_gb\": %.17g}\n",
               t, floor_ + 1.0 / sqrt((double)t), 1 + width / 2, width / 8);
        fflush(stdout);
    }
    return 0;
}
