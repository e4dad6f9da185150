/* How an experiment's run ended, for `tune run` and `tune simulate` alike: the status it
 * is recorded with, the cause said on stderr (failed trials, fail_fast, a metric no trial
 * reports) and the exit status (README, "Exit status"). Not for: the summary lines, which
 * each command words for itself, or what the fix is (the caller says it). */
#include "cli/cli.h"

#include <string.h>

int cli_run_mistake(const sched_run_result_t *res)
{
    return res->ended_by == SCHED_END_NO_METRIC || res->ended_by == SCHED_END_FAIL_FAST;
}

void cli_run_record_end(store_t *st, int64_t exp_id, const sched_run_result_t *res, double when)
{
    /* A run stopped for a mistake stays resumable; one that ran out of budget or reached
     * its target is finished. */
    const char *status = res->interrupted || cli_run_mistake(res) ? "INTERRUPTED" : "FINISHED";
    char err[512];
    if (store_experiment_set_status(st, exp_id, status, when, err, sizeof err) != 0)
        cli_error("cannot record the end of the experiment: %s", err);
}

void cli_run_print_ended(const char *name, const sched_run_result_t *res,
                         const space_settings_t *set, size_t trials, const char *done)
{
    printf("\n%s %s: %zu trials terminated (%zu stopped early by %s), %zu failed",
           res->interrupted       ? "Interrupted"
           : cli_run_mistake(res) ? "Stopped"
                                  : done,
           name, res->terminated, res->early_stopped, space_sched_name(set->sched.type),
           res->errored);
    if (res->paused) printf(", %zu paused", res->paused);
    printf(".\n");
    size_t ended = res->terminated + res->errored + res->paused;
    size_t never = trials > ended ? trials - ended : 0;
    if (res->ended_by == SCHED_END_BUDGET) {
        printf("The time budget ended the run (time_budget_s %g s): running trials were "
               "stopped and recorded as TERMINATED",
               set->time_budget_s);
        if (never) printf("; %zu trial%s never started", never, never == 1 ? "" : "s");
        printf(".\n");
    } else if (res->ended_by == SCHED_END_TARGET)
        printf("Target reached, experiment stopped (stop_experiment_on_target): %s.\n",
               res->end_msg);
    if (set->nobjectives > 1) {
        /* several objectives have no one best trial: the front is tune best's */
        printf("Several objectives: the Pareto front of the trials is `tune best %s`.\n", name);
    } else if (res->best_trial >= 0) {
        char num[32];
        printf("Best trial: trial_%05lld with %s=%s (last result).\n", (long long)res->best_trial,
               set->metric ? set->metric : "metric", space_format_number(res->best_metric, num));
    }
}

static int error_row_cb(void *ud, int ncol, const char *const *names, const char *const *values,
                        const int *types)
{
    (void)names;
    (void)types;
    (void)ud;
    if (ncol < 2) return 1;
    char e[400];
    /* The message can quote a trial's stderr: escaped so it cannot drive the terminal. */
    size_t k = 0;
    for (const char *p = values[1] ? values[1] : ""; *p && k + 5 < sizeof e; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch < 0x20 || ch == 0x7f)
            k += (size_t)snprintf(e + k, sizeof e - k, "\\x%02x", ch);
        else
            e[k++] = (char)ch;
    }
    e[k] = 0;
    printf("  %s: %s\n", values[0] ? values[0] : "?", e);
    return 0;
}

/* The first failed trials with their errors (which carry the last line of stderr). */
static void print_errors(store_t *st, int64_t exp_id)
{
    char id[32], err[256];
    snprintf(id, sizeof id, "%lld", (long long)exp_id);
    const char *b[] = {id};
    store_query(st,
                "SELECT name, error FROM trials WHERE experiment_id = ?1 AND status = 'ERROR' "
                "ORDER BY trial_no LIMIT 3",
                b, 1, error_row_cb, NULL, err, sizeof err);
}

int cli_run_outcome(store_t *st, int64_t exp_id, const char *name, const char *db,
                    const sched_run_result_t *res, const cli_run_fix_t *fix)
{
    int code = CLI_EXIT_OK;
    if (res->errored) {
        printf("%zu trial%s failed: see `tune trials %s --db %s`%s.\n", res->errored,
               res->errored == 1 ? "" : "s", name, db, fix->failed_where);
        print_errors(st, exp_id);
        code = CLI_EXIT_TRIALS;
    }
    if (res->ended_by == SCHED_END_FAIL_FAST) {
        cli_error("experiment %s stopped: %s", name, res->end_msg);
        if (fix->stderr_logs && res->end_detail[0]) fprintf(stderr, "%s", res->end_detail);
        fprintf(stderr, "%s \"fail_fast\": 0 turns this check off.\n", fix->fail_fast);
        code = CLI_EXIT_TRIALS;
    } else if (res->ended_by == SCHED_END_NO_METRIC) {
        cli_error("experiment %s stopped: %s", name, res->end_msg);
        fprintf(stderr, "%s\n", fix->no_metric);
        code = CLI_EXIT_USAGE;
    }
    return res->interrupted ? CLI_EXIT_INTERRUPTED : code;
}
