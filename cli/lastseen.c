/* cli: the last result of each trial a live table's snapshot holds, for the tables of
 * `tune run` and `tune simulate` (a snapshot carries numbers, not results). Read from the
 * store only for the trials with results not read yet. Not for: what the table does with
 * them (table.c, front.c). */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

static int seen_cmp(const void *a, const void *b)
{
    int64_t x = ((const struct cli_last_seen *)a)->no, y = ((const struct cli_last_seen *)b)->no;
    return (x > y) - (x < y);
}

static int seen_row(void *ud, int ncol, const char *const *names, const char *const *val,
                    const int *types)
{
    (void)names;
    (void)types;
    cli_last_t *v = ud;
    if (ncol < 3 || !val[0]) return 0;
    struct cli_last_seen key = {.no = strtoll(val[0], NULL, 10)};
    struct cli_last_seen *e = bsearch(&key, v->seen, v->n, sizeof *v->seen, seen_cmp);
    if (!e) return 0;
    free(e->json);
    e->json = val[2] ? strdup(val[2]) : NULL;
    e->iters = val[1] ? strtoll(val[1], NULL, 10) : 0;
    return 0;
}

const char **cli_last_results(cli_last_t *v, const sched_snapshot_t *snap)
{
    if (!v->want || !snap->ntrials) return NULL;
    struct cli_last_seen *nl = calloc(snap->ntrials, sizeof *nl);
    const char **out = calloc(snap->ntrials, sizeof *out);
    char *sql = NULL;
    size_t len = 0, cap = 0;
    if (!nl || !out) goto fail;
    /* the snapshot is in trial order, as v->seen: keep what is still current */
    size_t j = 0, nwant = 0;
    for (size_t i = 0; i < snap->ntrials; i++) {
        const sched_trial_view_t *t = &snap->trials[i];
        nl[i].no = t->trial_no;
        while (j < v->n && v->seen[j].no < t->trial_no)
            j++;
        if (j < v->n && v->seen[j].no == t->trial_no && v->seen[j].iters == t->iterations) {
            nl[i] = v->seen[j];
            v->seen[j].json = NULL;
        } else if (t->iterations > 0) {
            nwant++;
        }
    }
    for (size_t k = 0; k < v->n; k++)
        free(v->seen[k].json);
    free(v->seen);
    v->seen = nl;
    v->n = snap->ntrials;
    nl = NULL;
    if (nwant) {
        /* trial numbers are ours, printed as integers: no text of a user's goes in */
        cap = 160 + 22 * nwant;
        if (!(sql = malloc(cap))) goto fail;
        len = (size_t)snprintf(sql, cap,
                               "SELECT trial_no, iterations, last_result FROM trial_summary"
                               " WHERE experiment_id = %lld AND trial_no IN (",
                               (long long)v->exp_id);
        const char *sep = "";
        for (size_t i = 0; i < v->n; i++) {
            const sched_trial_view_t *t = &snap->trials[i];
            if (v->seen[i].json || t->iterations <= 0) continue;
            len += (size_t)snprintf(sql + len, cap - len, "%s%lld", sep, (long long)t->trial_no);
            sep = ",";
        }
        snprintf(sql + len, cap - len, ")");
        char err[256];
        if (store_query(v->st, sql, NULL, 0, seen_row, v, err, sizeof err) != 0) {
            /* the table goes on without them; the run is what matters */
            v->want = 0;
        }
    }
    for (size_t i = 0; i < v->n; i++)
        out[i] = v->seen[i].json;
    free(sql);
    return out;
fail:
    free(nl);
    free(out);
    free(sql);
    return NULL;
}

void cli_last_free(cli_last_t *v)
{
    if (!v) return;
    for (size_t i = 0; i < v->n; i++)
        free(v->seen[i].json);
    free(v->seen);
    v->seen = NULL;
    v->n = 0;
}
