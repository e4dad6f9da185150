/* big_experiment.h: the large experiment of tests/test_report.c's 5,000-trial case and of
 * bench/report: ntrials ASHA-like trials (rungs at 9, 27 and 81, max_t 100, about 21
 * results a trial, 100,000 for 5,000 trials) over three parameters, written through the
 * store in one batch, the same on every call. Header-only (static), aborts on any error.
 * Not for tune's own code, nor for a case that wants a real run (tests/e2e.h). */
#ifndef TUNE_BIG_EXPERIMENT_H
#define TUNE_BIG_EXPERIMENT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "store/store.h"

/* Writes experiment "big" of ntrials finished trials into a new database at db. */
static inline void big_experiment_write(const char *db, int ntrials)
{
    char err[512];
    store_t *st = NULL;
    if (store_open(db, 0, &st, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    static const char settings[] =
        "{\"name\":\"big\",\"metric\":\"loss\",\"mode\":\"min\",\"num_samples\":5000,"
        "\"max_concurrent\":0,\"seed\":0,\"command\":[\"synth_trial\"],"
        "\"resources\":{\"gpus_per_trial\":0,\"cpus_per_trial\":1},"
        "\"scheduler\":{\"type\":\"asha\",\"time_attr\":\"training_iteration\",\"max_t\":100,"
        "\"grace_period\":9,\"reduction_factor\":3,\"brackets\":1,\"min_samples_required\":3},"
        "\"num_trials\":5000,\"params\":[{\"name\":\"lr\",\"kind\":\"loguniform\"},"
        "{\"name\":\"batch\",\"kind\":\"choice\"},{\"name\":\"mom\",\"kind\":\"uniform\"}]}";
    store_experiment_t ex = {.name = "big",
                             .space_text = "{}",
                             .settings_json = settings,
                             .metric = "loss",
                             .scheduler = "asha",
                             .results_dir = "/tmp",
                             .num_trials = ntrials};
    int64_t eid;
    double now = (double)time(NULL) - 3600;
    if (store_experiment_create(st, &ex, now, &eid, err, sizeof err) != 0) abort();
    /* Quality by rank decides the rung a trial reaches (1/3 go on at each rung): with rungs
     * at 9, 27 and 81 and max_t 100 that is about 21 results a trial, 100,000 in all. */
    double *floor_ = malloc(sizeof(double) * (size_t)ntrials);
    double *lr = malloc(sizeof(double) * (size_t)ntrials);
    unsigned seed = 12345;
    for (int i = 0; i < ntrials; i++) {
        seed = seed * 1103515245u + 12345u;
        lr[i] = pow(10, -5 + 5.0 * (seed >> 8) / 16777216.0);
        floor_[i] = 0.1 + 0.3 * fabs(log10(lr[i] / 0.01));
    }
    if (store_begin(st, err, sizeof err) != 0) abort();
    static const int ms[] = {9, 27, 81};
    for (int i = 0; i < ntrials; i++) {
        int better = 0;
        for (int j = 0; j < ntrials; j++)
            better += floor_[j] < floor_[i];
        double q = (double)better / ntrials;
        int stop_at = q > 1.0 / 3 ? 9 : q > 1.0 / 9 ? 27 : q > 1.0 / 27 ? 81 : 100;
        char name[32], cfg[256];
        snprintf(name, sizeof name, "trial_%05d", i);
        snprintf(cfg, sizeof cfg, "{\"lr\":%.17g,\"batch\":%d,\"mom\":%.4f}", lr[i], 16 << (i % 3),
                 0.5 + 0.49 * (i % 97) / 96.0);
        int64_t tid;
        if (store_trial_create(st, eid, i, name, cfg, "/tmp", &tid, err, sizeof err) != 0) abort();
        for (int t = 1; t <= stop_at; t++) {
            double loss = floor_[i] + 1.0 / sqrt(t) + 0.02 * sin(0.7 * t + i);
            char js[128];
            int n = snprintf(js, sizeof js, "{\"training_iteration\":%d,\"loss\":%.17g}", t, loss);
            store_result_t r = {.trial_id = tid,
                                .attempt = 1,
                                .iteration = t,
                                .time_value = t,
                                .metric = loss,
                                .wall_time = now + i * 0.5 + t * 0.01,
                                .json = js,
                                .json_len = (size_t)n};
            if (store_result_add(st, &r, err, sizeof err) != 0) abort();
            for (int m = 0; m < 3; m++) {
                if (ms[m] != t) continue;
                int stop = t == stop_at;
                store_decision_t d = {.trial_id = tid,
                                      .iteration = t,
                                      .time_value = t,
                                      .action = stop ? "stop" : "continue",
                                      .bracket = 0,
                                      .rung = m,
                                      .milestone = t,
                                      .value = loss,
                                      .cutoff = loss - (stop ? 0.05 : -0.05),
                                      .reason = stop ? "worse than the cutoff" : "promoted",
                                      .wall_time = now};
                if (store_decision_add(st, &d, err, sizeof err) != 0) abort();
            }
        }
        store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_EARLY_STOPPED |
                                            STORE_TU_SLICE | STORE_TU_STARTED | STORE_TU_ENDED |
                                            STORE_TU_EXIT,
                                  .status = "TERMINATED",
                                  .early_stopped = stop_at < 100,
                                  .slice = "cpu:1",
                                  .started_at = now + i * 0.5,
                                  .ended_at = now + i * 0.5 + stop_at * 0.01,
                                  .exit_code = 0};
        if (store_trial_update(st, tid, &u, err, sizeof err) != 0) abort();
    }
    if (store_experiment_set_status(st, eid, "FINISHED", now + 3000, err, sizeof err) != 0) abort();
    if (store_commit(st, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    store_close(st);
    free(floor_);
    free(lr);
}

#endif
