/* bench/search/tpe_bench.c: the TPE searcher's time per suggestion with 10,000 finished
 * trials and 10 parameters (target: at most 1 ms), beside Optuna 3.1's TPESampler time per
 * suggestion at 1,000 trials measured in the same run. A benchmark that prints numbers and
 * a ratio, never a test. Usage: tpe_bench [N_TRIALS [N_SUGGESTIONS]]. The first suggestion
 * after the N trials were told (it fits every estimator from them, as a resume does) is
 * timed apart from the N_SUGGESTIONS after it. Then the pool protocol's choice (tune simulate
 * --pool): TPE scoring 1,000 candidate configurations at 1,000 observations. Then MOTPE
 * (several objectives, docs/search.md) with 2 and 3 objectives at 1,000 trials, without and
 * with a constraint (target: at most 10 ms per suggestion). `tpe_bench --mo [N_TRIALS
 * [N_SUGGESTIONS]]` measures MOTPE alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/searcher.h"
#include "search/settings.h"
#include "search/space.h"

/* The ten parameters of optuna_tpe_time.py: every kind the searcher models. */
static const char *const k_space =
    "{\"name\": \"bench\", \"metric\": \"loss\", \"num_samples\": 100000, \"seed\": 1,"
    " \"command\": [\"x\"], \"space\": {"
    "\"u0\": {\"uniform\": [0, 1]}, \"u1\": {\"uniform\": [0, 1]}, \"u2\": {\"uniform\": [-1, 1]},"
    "\"l0\": {\"loguniform\": [1e-5, 1]}, \"l1\": {\"loguniform\": [1e-3, 10]},"
    "\"q0\": {\"quniform\": [0, 1, 0.05]}, \"i0\": {\"randint\": [1, 65]},"
    "\"i1\": {\"lograndint\": [1, 1025]}, \"c0\": {\"choice\": [\"a\", \"b\", \"c\", \"d\"]},"
    "\"u3\": {\"uniform\": [0, 10]}}}";

static double num(const cJSON *c, const char *k)
{
    return cJSON_GetObjectItem(c, k)->valuedouble;
}

static double objective(const cJSON *c)
{
    const char *c0 = cJSON_GetObjectItem(c, "c0")->valuestring;
    double u = num(c, "u0") - 0.3, l = log10(num(c, "l0")) + 3;
    return u * u + l * l + num(c, "q0") + (strcmp(c0, "b") == 0 ? 0.1 : 0.5) +
           fabs(num(c, "i0") - 20) / 64;
}

/* MOTPE's objectives: the one above and cost-like ones that pull elsewhere (a large i1, a
 * large u3, u1 far from 0.7), so that the front has many points; k of them into o. The
 * violation of the constraint u2 <= 0.5 when constrained. */
static void objectives_k(const cJSON *c, size_t k, double *o)
{
    o[0] = objective(c);
    if (k > 1) o[1] = log2(num(c, "i1")) / 10 + num(c, "u0");
    if (k > 2) o[2] = fabs(num(c, "u1") - 0.7) + (10 - num(c, "u3")) / 10;
}

static double violation_of(const cJSON *c, int constrained)
{
    return constrained && num(c, "u2") > 0.5 ? num(c, "u2") - 0.5 : 0;
}

/* Tells trial t's result: one objective as today, or k (> 1, or constrained) of them. */
static void tell(space_searcher_t *x, size_t t, const cJSON *c, size_t k, int constrained)
{
    if (k <= 1 && !constrained) {
        space_searcher_observe(x, t, 1, objective(c));
    } else {
        double o[3];
        objectives_k(c, k, o);
        space_searcher_observe_k(x, t, 1, o, violation_of(c, constrained));
    }
    space_searcher_trial_end(x, t, 0);
}

/* CPU seconds of this process: the machine may be shared, wall time would count others. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One suggestion for trial t, told its result at once as a finished trial (k objectives,
 * constrained or not: tell). */
static void ask_k(space_searcher_t *x, size_t t, char *why, size_t whylen, size_t k,
                  int constrained)
{
    char err[512];
    cJSON *c;
    if (space_searcher_suggest(x, t, &c, why, whylen, err, sizeof err)) {
        fprintf(stderr, "tpe_bench: %s\n", err);
        exit(1);
    }
    tell(x, t, c, k, constrained);
    cJSON_Delete(c);
}

static void ask(space_searcher_t *x, size_t t, char *why, size_t whylen)
{
    ask_k(x, t, why, whylen, 1, 0);
}

/* A TPE searcher with n finished trials drawn at random, told to it as a resume would, with
 * k objectives (constrained or not). */
static space_searcher_t *with_history_k(space_t *s, space_tpe_preset_t preset, size_t n, size_t k,
                                        int constrained)
{
    char err[512];
    space_search_opts_t o = {SPACE_SEARCH_TPE, preset, 0, 1, k, constrained};
    space_searcher_t *x = NULL;
    if (space_searcher_new(s, &o, &x, err, sizeof err)) {
        fprintf(stderr, "tpe_bench: %s\n", err);
        exit(1);
    }
    for (size_t t = 0; t < n; t++) {
        cJSON *c;
        if (space_sample(s, t, &c, err, sizeof err) ||
            space_searcher_add_trial(x, t, c, err, sizeof err)) {
            fprintf(stderr, "tpe_bench: %s\n", err);
            exit(1);
        }
        tell(x, t, c, k, constrained);
        cJSON_Delete(c);
    }
    return x;
}

static space_searcher_t *with_history(space_t *s, space_tpe_preset_t preset, size_t n)
{
    return with_history_k(s, preset, n, 1, 0);
}

/* MOTPE: k objectives (constrained or not), n finished trials, then `asks` suggestions. */
static double per_suggestion_k(space_t *s, size_t n, size_t asks, size_t k, int constrained)
{
    char why[512];
    space_searcher_t *x = with_history_k(s, SPACE_TPE_OPTUNA, n, k, constrained);
    double t0 = cpu_now();
    ask_k(x, n, why, sizeof why, k, constrained);
    double first = cpu_now() - t0;
    t0 = cpu_now();
    for (size_t t = n + 1; t < n + 1 + asks; t++)
        ask_k(x, t, why, sizeof why, k, constrained);
    double dt = (cpu_now() - t0) / (double)asks;
    printf("  tune MOTPE, %zu objectives%s, %zu trials: %.3f ms per suggestion (the first: %.1f "
           "ms)  [%s]\n",
           k, constrained ? " and a constraint" : "", n, dt * 1e3, first * 1e3, why);
    space_searcher_free(x);
    return dt;
}

static void motpe(space_t *s, size_t n, size_t asks)
{
    double worst = 0;
    for (size_t k = 2; k <= 3; k++)
        for (int con = 0; con <= 1; con++) {
            double dt = per_suggestion_k(s, n, asks, k, con);
            if (dt > worst) worst = dt;
        }
    printf("  target: <= 10 ms per suggestion at 1,000 trials (MOTPE): %s (worst %.3f ms)\n",
           worst <= 10e-3 ? "met" : "NOT met", worst * 1e3);
}

static double per_suggestion(space_t *s, space_tpe_preset_t preset, size_t n, size_t asks)
{
    char why[256];
    space_searcher_t *x = with_history(s, preset, n);
    /* the first suggestion fits every estimator from the record (what a resume pays
     * once): timed on its own, so the rest measure a suggestion of a running search */
    double t0 = cpu_now();
    ask(x, n, why, sizeof why);
    double first = cpu_now() - t0;
    t0 = cpu_now();
    for (size_t t = n + 1; t < n + 1 + asks; t++)
        ask(x, t, why, sizeof why);
    double dt = (cpu_now() - t0) / (double)asks;
    printf("  tune TPE (%s), %zu trials: %.3f ms per suggestion (the first: %.1f ms)  [%s]\n",
           preset == SPACE_TPE_OPTUNA ? "optuna" : "bohb", n, dt * 1e3, first * 1e3, why);
    space_searcher_free(x);
    return dt;
}

/* The pool protocol (space_searcher_choose): n finished trials, then `asks` choices each
 * among ncand candidates (the pool's unused rows: drawn configurations), each chosen one
 * told its result and taken out of the pool. */
static double per_choice(space_t *s, space_tpe_preset_t preset, int pool, size_t n, size_t ncand,
                         size_t asks)
{
    char err[512], why[512];
    space_searcher_t *x = with_history(s, preset, n);
    space_searcher_set_pool(x, pool); /* 0: the default, scoring every candidate */
    cJSON **cands = calloc(ncand + asks, sizeof *cands);
    if (!cands) {
        fprintf(stderr, "tpe_bench: out of memory\n");
        exit(1);
    }
    size_t left = ncand + asks;
    for (size_t k = 0; k < left; k++)
        if (space_sample(s, 50000 + k, &cands[k], err, sizeof err)) {
            fprintf(stderr, "tpe_bench: %s\n", err);
            exit(1);
        }
    double first = 0, t0 = 0;
    for (size_t a = 0; a <= asks; a++) {
        size_t t = n + a, k;
        if (a <= 1) t0 = cpu_now();
        /* ncand candidates each time: the pool as it would stand */
        if (space_searcher_choose(x, t, (const cJSON *const *)cands, ncand, &k, why, sizeof why,
                                  err, sizeof err)) {
            fprintf(stderr, "tpe_bench: %s\n", err);
            exit(1);
        }
        space_searcher_observe(x, t, 1, objective(cands[k]));
        space_searcher_trial_end(x, t, 0);
        cJSON_Delete(cands[k]);
        memmove(cands + k, cands + k + 1, (left - k - 1) * sizeof *cands);
        left--;
        if (a == 0) first = cpu_now() - t0;
    }
    double dt = (cpu_now() - t0) / (double)asks;
    printf("  tune TPE (%s%s), pool protocol, %zu observations, %zu candidates: %.3f ms per "
           "choice (the first: %.1f ms)  [%s]\n",
           preset == SPACE_TPE_OPTUNA ? "optuna" : "bohb",
           pool & SPACE_TPE_POOL_PROPOSE ? ", \"pool\": \"propose\"" : "", n, ncand, dt * 1e3,
           first * 1e3, why);
    for (size_t k = 0; k < left; k++)
        cJSON_Delete(cands[k]);
    free(cands);
    space_searcher_free(x);
    return dt;
}

int main(int argc, char **argv)
{
    int mo_only = argc > 1 && strcmp(argv[1], "--mo") == 0;
    if (mo_only) argc--, argv++;
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : mo_only ? 1000 : 10000;
    size_t asks = argc > 2 ? strtoul(argv[2], NULL, 10) : 100;
    char err[512];
    space_t *s = NULL;
    if (space_parse(k_space, strlen(k_space), "bench", &s, err, sizeof err)) {
        fprintf(stderr, "tpe_bench: %s\n", err);
        return 1;
    }
    if (mo_only) {
        printf("MOTPE, 10 parameters, CPU time per suggestion:\n");
        motpe(s, n, asks);
        space_free(s);
        return 0;
    }
    printf("TPE searcher, 10 parameters, CPU time per suggestion (each suggestion refits):\n");
    double ours = per_suggestion(s, SPACE_TPE_OPTUNA, n, asks);
    per_suggestion(s, SPACE_TPE_OPTUNA, 1000, asks);
    per_suggestion(s, SPACE_TPE_BOHB, n, asks);
    per_choice(s, SPACE_TPE_OPTUNA, 0, 1000, 1000, asks);
    per_choice(s, SPACE_TPE_OPTUNA, SPACE_TPE_POOL_PROPOSE | SPACE_TPE_POOL_STARTUP10, 1000, 1000,
               asks);
    per_choice(s, SPACE_TPE_BOHB, 0, 1000, 1000, asks);
    printf("  target: <= 1 ms at 10,000 trials (optuna preset): %s\n",
           ours <= 1e-3 ? "met" : "NOT met");
    motpe(s, 1000, asks);
    /* the peer, in the same run */
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 %s/bench/search/optuna_tpe_time.py 1000 20 2>/dev/null",
             TUNE_SOURCE_DIR);
    FILE *p = popen(cmd, "r");
    double peer = 0;
    if (!p || fscanf(p, "%lf", &peer) != 1 || !(peer > 0)) {
        printf("  Optuna 3.1 TPESampler: not measured (apt-get install -y python3-optuna)\n");
    } else {
        printf("  Optuna 3.1 TPESampler, 1000 trials: %.3f ms per suggestion (ask + tell)\n",
               peer * 1e3);
        printf("  ratio Optuna@1000 / tune@%zu: %.0fx\n", n, peer / ours);
    }
    if (p) pclose(p);
    space_free(s);
    return 0;
}
