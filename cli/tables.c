/* An experiment's learning curves as a table (docs/simulate.md): one CSV row per
 * (trial, iteration) with the trial's configuration in config/ columns, the seconds the
 * iteration took and every reported value. `tune export NAME --table` prints it and
 * `tune simulate --from NAME` replays it. Not for: reading tables (sim/). */
#include "cli/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/render.h"

struct trow {
    int64_t trial_no;
    char *name, *config, *data;
    double started, time_value, wall;
    int64_t iteration;
};

struct tcollect {
    struct trow *r;
    size_t n, cap;
    int oom;
};

static double num_or_nan(const char *s)
{
    return s ? strtod(s, NULL) : NAN;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int collect_row(void *ud, int ncol, const char *const *names, const char *const *v,
                       const int *types)
{
    (void)names;
    (void)types;
    struct tcollect *c = ud;
    if (ncol < 8) return 1;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        struct trow *r = realloc(c->r, cap * sizeof *r);
        if (!r) {
            c->oom = 1;
            return 1;
        }
        c->r = r;
        c->cap = cap;
    }
    struct trow *t = &c->r[c->n++];
    t->trial_no = v[0] ? strtoll(v[0], NULL, 10) : -1;
    t->name = dup_or_null(v[1]);
    t->config = dup_or_null(v[2]);
    t->started = num_or_nan(v[3]);
    t->iteration = v[4] ? strtoll(v[4], NULL, 10) : 0;
    t->time_value = num_or_nan(v[5]);
    t->wall = num_or_nan(v[6]);
    t->data = dup_or_null(v[7]);
    return 0;
}

/* Adds key to the list of column names unless it is there (first-seen order). */
static void add_key(cJSON *keys, const char *k)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, keys) if (strcmp(e->valuestring, k) == 0) return;
    cJSON_AddItemToArray(keys, cJSON_CreateString(k));
}

/* One CSV cell: quoted when it holds a comma, quote, line break or edge blanks. */
static void csv_cell(FILE *f, const char *s)
{
    size_t n = strlen(s);
    int quote = n && (s[0] == ' ' || s[n - 1] == ' ');
    for (const char *p = s; *p && !quote; p++)
        quote = *p == ',' || *p == '"' || *p == '\n' || *p == '\r';
    if (!quote) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const char *p = s; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

/* A JSON value as a cell: numbers read back exactly, null as `null_text`. */
static void json_cell(FILE *f, const cJSON *v, const char *null_text)
{
    char nb[32];
    if (!v) return;
    if (cJSON_IsNumber(v)) {
        fputs(space_format_number(v->valuedouble, nb), f);
    } else if (cJSON_IsString(v)) {
        csv_cell(f, v->valuestring);
    } else if (cJSON_IsBool(v)) {
        fputs(cJSON_IsTrue(v) ? "true" : "false", f);
    } else if (cJSON_IsNull(v)) {
        fputs(null_text, f);
    } else {
        char *s = space_json_print(v);
        if (s) csv_cell(f, s);
        free(s);
    }
}

int cli_write_table(store_t *st, const char *name, double min_time, FILE *f, size_t *kept,
                    size_t *left, char *err, size_t errlen)
{
    static const char sql[] =
        "SELECT t.trial_no, t.name, t.config, t.started_at, r.iteration, r.time_value,"
        " r.wall_time, r.data FROM results_current r JOIN trials t ON t.id = r.trial_id"
        " JOIN experiments e ON e.id = t.experiment_id WHERE e.name = ?1"
        " ORDER BY t.trial_no, r.id";
    struct tcollect c = {0};
    const char *b[] = {name};
    int rc = store_query(st, sql, b, 1, collect_row, &c, err, errlen);
    if (rc == 0 && c.oom) {
        snprintf(err, errlen, "out of memory reading the results of %s", name);
        rc = -1;
    }
    cJSON *ckeys = cJSON_CreateArray(), *mkeys = cJSON_CreateArray();
    cJSON **cfg = calloc(c.n + 1, sizeof *cfg), **res = calloc(c.n + 1, sizeof *res);
    char *keep = calloc(c.n + 1, 1);
    size_t nkept = 0, nleft = 0;
    if (rc == 0 && (!ckeys || !mkeys || !cfg || !res || !keep)) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < c.n;) {
        /* One trial's rows: kept when its results reached min_time. */
        size_t j = i;
        double reach = -INFINITY;
        while (j < c.n && c.r[j].trial_no == c.r[i].trial_no) {
            if (!isnan(c.r[j].time_value) && c.r[j].time_value > reach) reach = c.r[j].time_value;
            j++;
        }
        int k = min_time <= 0 || reach >= min_time;
        k ? nkept++ : nleft++;
        for (size_t x = i; x < j; x++) {
            keep[x] = (char)k;
            if (!k) continue;
            cfg[x] = c.r[x].config ? cJSON_Parse(c.r[x].config) : NULL;
            res[x] = c.r[x].data ? cJSON_Parse(c.r[x].data) : NULL;
            const cJSON *e;
            if (x == i) cJSON_ArrayForEach(e, cfg[x]) add_key(ckeys, e->string);
            cJSON_ArrayForEach(e, res[x])
            {
                if (strcmp(e->string, "training_iteration") != 0 &&
                    strcmp(e->string, "time_this_iter_s") != 0)
                    add_key(mkeys, e->string);
            }
        }
        i = j;
    }
    if (rc == 0) {
        const cJSON *e;
        fputs("trial", f);
        cJSON_ArrayForEach(e, ckeys)
        {
            char h[1024];
            snprintf(h, sizeof h, "config/%s", e->valuestring);
            fputc(',', f);
            csv_cell(f, h);
        }
        fputs(",training_iteration,time_this_iter_s", f);
        cJSON_ArrayForEach(e, mkeys)
        {
            fputc(',', f);
            csv_cell(f, e->valuestring);
        }
        fputc('\n', f);
        size_t first = 0; /* the current trial's first row, for its config */
        double prev_total = 0, prev_wall = NAN;
        for (size_t x = 0; x < c.n; x++) {
            if (x == 0 || c.r[x].trial_no != c.r[x - 1].trial_no) {
                first = x;
                prev_total = 0;
                prev_wall = c.r[x].started;
            }
            if (!keep[x]) continue;
            csv_cell(f, c.r[x].name ? c.r[x].name : "");
            cJSON_ArrayForEach(e, ckeys)
            {
                fputc(',', f);
                json_cell(f, cJSON_GetObjectItemCaseSensitive(cfg[first], e->valuestring), "");
            }
            /* The seconds of this iteration: the trial's own time_this_iter_s, else the
             * step of its time_total_s, else the time between its results' arrivals. */
            const cJSON *ti = cJSON_GetObjectItemCaseSensitive(res[x], "time_this_iter_s");
            const cJSON *tt = cJSON_GetObjectItemCaseSensitive(res[x], "time_total_s");
            double secs;
            if (cJSON_IsNumber(ti)) {
                secs = ti->valuedouble;
            } else if (cJSON_IsNumber(tt)) {
                secs = tt->valuedouble - prev_total;
                prev_total = tt->valuedouble;
            } else {
                secs = c.r[x].wall - prev_wall;
            }
            prev_wall = c.r[x].wall;
            if (!(secs >= 0)) secs = 0;
            char nb[32];
            fprintf(f, ",%lld,%s", (long long)c.r[x].iteration, space_format_number(secs, nb));
            cJSON_ArrayForEach(e, mkeys)
            {
                fputc(',', f);
                json_cell(f, cJSON_GetObjectItemCaseSensitive(res[x], e->valuestring), "nan");
            }
            fputc('\n', f);
        }
        if (ferror(f)) {
            snprintf(err, errlen, "cannot write the table");
            rc = -1;
        }
    }
    for (size_t x = 0; x < c.n; x++) {
        free(c.r[x].name);
        free(c.r[x].config);
        free(c.r[x].data);
        if (cfg) cJSON_Delete(cfg[x]);
        if (res) cJSON_Delete(res[x]);
    }
    free(c.r);
    free(cfg);
    free(res);
    free(keep);
    cJSON_Delete(ckeys);
    cJSON_Delete(mkeys);
    if (kept) *kept = nkept;
    if (left) *left = nleft;
    return rc;
}

int cli_cmd_export_table(int argc, char **argv)
{
    const char *name = NULL, *db = cli_db_path(argc, argv);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
            i++;
        else if (strcmp(argv[i], "--table") == 0)
            continue;
        else if (argv[i][0] == '-') {
            cli_error("export --table: unknown option %s (usage: tune export NAME --table "
                      "[--db PATH] > curves.csv)",
                      argv[i]);
            return CLI_EXIT_USAGE;
        } else if (!name)
            name = argv[i];
        else {
            cli_error("export --table: one experiment at a time");
            return CLI_EXIT_USAGE;
        }
    }
    if (!name) {
        cli_error("export --table: which experiment? usage: tune export NAME --table > curves.csv");
        return CLI_EXIT_USAGE;
    }
    char err[1024];
    store_t *st = cli_open_ro(db);
    if (!st) return CLI_EXIT_FAIL;
    int64_t id;
    int rc = store_experiment_find(st, name, &id, err, sizeof err);
    if (rc == STORE_NOTFOUND) {
        cli_error("no experiment named \"%s\" in %s (see tune ls --db %s)", name, db, db);
    } else if (rc == 0) {
        rc = cli_write_table(st, name, 0, stdout, NULL, NULL, err, sizeof err);
        if (rc != 0) cli_error("%s", err);
    } else {
        cli_error("%s", err);
    }
    store_close(st);
    if (fflush(stdout) != 0 && rc == 0) {
        cli_error("export --table: cannot write the output");
        rc = -1;
    }
    return rc == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
