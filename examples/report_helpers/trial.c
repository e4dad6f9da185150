/* A minimal C trial that reports to tune with include/tune_report.h: a made-up learning
 * curve whose floor depends on --lr (best near 0.01), one result per iteration.
 * Build: cc -O2 -I ../../include trial.c -o trial -lm
 * Not for: anything but showing the helper (tests/test_report.c runs it under tune). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune_report.h"

int main(int argc, char **argv)
{
    double lr = 0.01;
    int iters = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--lr") == 0) lr = atof(argv[i + 1]);
        if (strcmp(argv[i], "--iters") == 0) iters = atoi(argv[i + 1]);
    }
    for (int t = 1; t <= iters; t++) {
        double loss = 0.1 + 0.3 * fabs(log10(lr / 0.01)) + 1.0 / sqrt(t);
        tune_report_t r;
        tune_report_begin(&r);
        tune_report_int(&r, "training_iteration", t);
        tune_report_num(&r, "loss", loss);
        tune_report_num(&r, "accuracy", t == 1 ? NAN : 1.0 - loss / 3); /* null at first */
        tune_report_str(&r, "phase", "train");
        if (tune_report_end(&r) != 0) return 1;
    }
    return 0;
}
