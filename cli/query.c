/* The reading commands: ls, trials, best, query, export. Each is one SQL query against
 * the documented schema (docs/schema.md) printed as a table, JSON or CSV; the database
 * is opened read-only so a run can be writing at the same time. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

const char *cli_db_path(int argc, char **argv);

enum fmt { FMT_TABLE, FMT_JSON, FMT_CSV };

struct args {
    const char *pos; /* the one positional argument */
    enum fmt fmt;
    int all_attempts;
    const char *scope; /* best: "last" or "all" */
};

/* Parses the options the reading commands share; returns -1 after printing an error. */
static int parse_args(int argc, char **argv, struct args *a, int allow_pos, const char *usage)
{
    memset(a, 0, sizeof *a);
    a->scope = "last";
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--db") == 0 && i + 1 < argc) {
            i++;
        } else if (strcmp(s, "--json") == 0) {
            a->fmt = FMT_JSON;
        } else if (strcmp(s, "--csv") == 0) {
            a->fmt = FMT_CSV;
        } else if (strcmp(s, "--all-attempts") == 0) {
            a->all_attempts = 1;
        } else if (strcmp(s, "--scope") == 0 && i + 1 < argc) {
            a->scope = argv[++i];
            if (strcmp(a->scope, "last") && strcmp(a->scope, "all")) {
                cli_error("--scope wants \"last\" or \"all\", got \"%s\"", a->scope);
                return -1;
            }
        } else if (s[0] == '-' && s[1]) {
            cli_error("%s: unknown option %s\n%s", argv[0], s, usage);
            return -1;
        } else if (allow_pos && !a->pos) {
            a->pos = s;
        } else {
            cli_error("%s: unexpected argument \"%s\"\n%s", argv[0], s, usage);
            return -1;
        }
    }
    if (allow_pos && !a->pos) {
        cli_error("%s: missing argument\n%s", argv[0], usage);
        return -1;
    }
    return 0;
}

static int help(int argc, char **argv, const char *usage)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        }
    return 0;
}

static store_t *open_ro(int argc, char **argv)
{
    char err[1024];
    store_t *st = NULL;
    if (store_open(cli_db_path(argc, argv), STORE_OPEN_READONLY, &st, err, sizeof err) != 0) {
        cli_error("%s", err);
        return NULL;
    }
    return st;
}

/* Fails with a clear message when the experiment does not exist. */
static int need_experiment(store_t *st, const char *name, const char *db)
{
    char err[512];
    int64_t id;
    int rc = store_experiment_find(st, name, &id, err, sizeof err);
    if (rc == STORE_NOTFOUND) {
        cli_error("no experiment named \"%s\" in %s (see tune ls --db %s)", name, db, db);
        return -1;
    }
    if (rc != 0) {
        cli_error("%s", err);
        return -1;
    }
    return 0;
}

static int print_rows(store_t *st, const char *sql, const char *const *binds, int nb, enum fmt fmt,
                      const char *const *json_cols)
{
    char err[1024];
    cli_rows_t r;
    int rc = cli_rows_query(st, sql, binds, nb, &r, err, sizeof err);
    if (rc != 0) {
        cli_error("%s", err);
        cli_rows_free(&r);
        return rc == STORE_READONLY ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    if (fmt == FMT_JSON) {
        cJSON *j = cli_rows_json(&r, json_cols);
        cli_print_json(stdout, j);
        cJSON_Delete(j);
    } else if (fmt == FMT_CSV) {
        cli_print_csv(stdout, &r);
    } else {
        cli_print_table(stdout, &r);
    }
    cli_rows_free(&r);
    return CLI_EXIT_OK;
}

/* ---- ls ------------------------------------------------------------------------- */
int cli_cmd_ls(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune ls [--db PATH] [--json|--csv]\n"
        "  every experiment; its best trial as `tune best` picks it, by each trial's\n"
        "  last result (Ray Tune's default scope)\n";
    if (help(argc, argv, usage)) return CLI_EXIT_OK;
    struct args a;
    if (parse_args(argc, argv, &a, 0, usage)) return CLI_EXIT_USAGE;
    store_t *st = open_ro(argc, argv);
    if (!st) return CLI_EXIT_FAIL;
    /* The best trial by last result, as `tune best`, the run's summary and the report
     * name it (experiment_summary's best_metric is the best of any result, scope all):
     * one command must not name another best trial than the next. Ties go to the
     * lower trial number. Ranked in a CTE rather than a correlated subquery: SQLite 3.40
     * misresolves outer names inside these views once it flattens them. */
    static const char sql[] =
        "WITH ranked AS ("
        " SELECT ts.experiment_id, ts.trial, ts.last_metric, row_number() OVER ("
        "   PARTITION BY ts.experiment_id ORDER BY"
        "   CASE WHEN ex.mode = 'max' THEN -ts.last_metric ELSE ts.last_metric END,"
        "   ts.trial_no) AS rk"
        " FROM trial_summary ts JOIN experiments ex ON ex.id = ts.experiment_id"
        " WHERE ts.last_metric IS NOT NULL)"
        "SELECT x.experiment AS name, x.status, x.scheduler, x.metric, x.mode,"
        " x.num_trials AS trials, x.terminated, x.early_stopped, x.errors, x.results,"
        " r.last_metric AS best_metric, r.trial AS best_trial,"
        " datetime(x.created_at, 'unixepoch', 'localtime') AS created"
        " FROM experiment_summary x"
        " LEFT JOIN ranked r ON r.experiment_id = x.experiment_id AND r.rk = 1"
        " ORDER BY x.experiment_id";
    int rc = print_rows(st, sql, NULL, 0, a.fmt, NULL);
    store_close(st);
    return rc;
}

/* ---- trials --------------------------------------------------------------------- */
/* Every query goes through the documented views (trial_summary, results_current,
 * results_all), so that the physical layout of the results table can change. */
int cli_cmd_trials(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune trials NAME [--db PATH] [--json|--csv] [--all-attempts]\n"
        "  one row per trial: status, config, iterations, last metrics\n";
    if (help(argc, argv, usage)) return CLI_EXIT_OK;
    struct args a;
    if (parse_args(argc, argv, &a, 1, usage)) return CLI_EXIT_USAGE;
    store_t *st = open_ro(argc, argv);
    if (!st) return CLI_EXIT_FAIL;
    if (need_experiment(st, a.pos, cli_db_path(argc, argv))) {
        store_close(st);
        return CLI_EXIT_FAIL;
    }
    const char *b[] = {a.pos};
    int rc;
    if (a.fmt == FMT_JSON) {
        static const char sql_cur[] =
            "SELECT s.trial_no AS id, s.trial AS name, s.status, s.early_stopped, s.config,"
            " s.iterations, s.last_result, s.error, s.slice, s.attempt, s.exit_code,"
            " s.exit_signal, s.started_at, s.ended_at"
            " FROM trial_summary s WHERE s.experiment = ?1 ORDER BY s.trial_no";
        static const char sql_all[] =
            "SELECT s.trial_no AS id, s.trial AS name, s.status, s.early_stopped, s.config,"
            " (SELECT count(*) FROM results_all r WHERE r.trial_id = s.trial_id) AS iterations,"
            " (SELECT r.data FROM results_all r WHERE r.trial_id = s.trial_id"
            "  ORDER BY r.id DESC LIMIT 1) AS last_result,"
            " s.error, s.slice, s.attempt, s.exit_code, s.exit_signal, s.started_at, s.ended_at"
            " FROM trial_summary s WHERE s.experiment = ?1 ORDER BY s.trial_no";
        char err[1024];
        cli_rows_t r;
        rc = cli_rows_query(st, a.all_attempts ? sql_all : sql_cur, b, 1, &r, err, sizeof err);
        if (rc != 0) {
            cli_error("%s", err);
            cli_rows_free(&r);
            store_close(st);
            return CLI_EXIT_FAIL;
        }
        static const char *const json_cols[] = {"config", "last_result", NULL};
        cJSON *arr = cli_rows_json(&r, json_cols);
        /* early_stopped is a boolean in the JSON contract. */
        cJSON *o;
        cJSON_ArrayForEach(o, arr)
        {
            cJSON *es = cJSON_GetObjectItemCaseSensitive(o, "early_stopped");
            int v = es && cJSON_IsNumber(es) && es->valuedouble != 0;
            cJSON_ReplaceItemInObjectCaseSensitive(o, "early_stopped", cJSON_CreateBool(v));
        }
        cli_print_json(stdout, arr);
        cJSON_Delete(arr);
        cli_rows_free(&r);
        rc = CLI_EXIT_OK;
    } else {
        static const char sql[] =
            "SELECT s.trial, s.status ||"
            " CASE WHEN s.early_stopped THEN ' (stopped)' ELSE '' END AS status, s.slice,"
            " s.config, s.iterations AS iter, s.last_metric, s.best_metric, s.error"
            " FROM trial_summary s WHERE s.experiment = ?1 ORDER BY s.trial_no";
        rc = print_rows(st, sql, b, 1, a.fmt, NULL);
    }
    store_close(st);
    return rc;
}

/* ---- best ----------------------------------------------------------------------- */
int cli_cmd_best(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune best NAME [--db PATH] [--json] [--scope last|all]\n"
        "  the best trial by the experiment's metric and mode: by each trial's last result\n"
        "  (scope last, as Ray Tune's default) or its best result (scope all)\n";
    if (help(argc, argv, usage)) return CLI_EXIT_OK;
    struct args a;
    if (parse_args(argc, argv, &a, 1, usage)) return CLI_EXIT_USAGE;
    store_t *st = open_ro(argc, argv);
    if (!st) return CLI_EXIT_FAIL;
    const char *db = cli_db_path(argc, argv);
    if (need_experiment(st, a.pos, db)) {
        store_close(st);
        return CLI_EXIT_FAIL;
    }
    /* Ties go to the lower trial number. */
    static const char sql_last[] =
        "SELECT s.trial_no AS id, s.trial AS name, s.status, s.early_stopped,"
        " e.metric, s.last_metric AS value, s.best_metric, s.config, s.iterations,"
        " s.last_result, s.trial_dir"
        " FROM trial_summary s JOIN experiments e ON e.id = s.experiment_id"
        " WHERE s.experiment = ?1 AND s.last_metric IS NOT NULL"
        " ORDER BY CASE WHEN e.mode = 'max' THEN -s.last_metric ELSE s.last_metric END,"
        " s.trial_no LIMIT 1";
    static const char sql_all[] =
        "SELECT s.trial_no AS id, s.trial AS name, s.status, s.early_stopped,"
        " e.metric, s.best_metric AS value, s.last_metric, s.config, s.iterations,"
        " s.last_result, s.trial_dir"
        " FROM trial_summary s JOIN experiments e ON e.id = s.experiment_id"
        " WHERE s.experiment = ?1 AND s.best_metric IS NOT NULL"
        " ORDER BY CASE WHEN e.mode = 'max' THEN -s.best_metric ELSE s.best_metric END,"
        " s.trial_no LIMIT 1";
    char err[1024];
    cli_rows_t r;
    const char *b[] = {a.pos};
    const char *sql = strcmp(a.scope, "all") == 0 ? sql_all : sql_last;
    int rc = cli_rows_query(st, sql, b, 1, &r, err, sizeof err);
    if (rc != 0) {
        cli_error("%s", err);
        cli_rows_free(&r);
        store_close(st);
        return CLI_EXIT_FAIL;
    }
    if (r.nrows == 0) {
        cli_error("experiment \"%s\" has no trial with a value for its metric yet", a.pos);
        cli_rows_free(&r);
        store_close(st);
        return CLI_EXIT_FAIL;
    }
    static const char *const json_cols[] = {"config", "last_result", NULL};
    cJSON *arr = cli_rows_json(&r, json_cols);
    cJSON *o = cJSON_DetachItemFromArray(arr, 0);
    cJSON_Delete(arr);
    cJSON *es = cJSON_GetObjectItemCaseSensitive(o, "early_stopped");
    cJSON_ReplaceItemInObjectCaseSensitive(o, "early_stopped",
                                           cJSON_CreateBool(es && es->valuedouble != 0));
    if (a.fmt == FMT_JSON) {
        cli_print_json(stdout, o);
    } else {
        cJSON *it;
        cJSON_ArrayForEach(it, o)
        {
            char *v = cJSON_IsString(it) ? NULL : cJSON_PrintUnformatted(it);
            printf("%-12s %s\n", it->string, v ? v : it->valuestring);
            free(v);
        }
    }
    cJSON_Delete(o);
    cli_rows_free(&r);
    store_close(st);
    return CLI_EXIT_OK;
}

/* ---- query ---------------------------------------------------------------------- */
int cli_cmd_query(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune query \"SELECT ...\" [--db PATH] [--json|--csv]\n"
        "  any read-only SQL; the schema and example queries are in docs/schema.md\n";
    if (help(argc, argv, usage)) return CLI_EXIT_OK;
    struct args a;
    if (parse_args(argc, argv, &a, 1, usage)) return CLI_EXIT_USAGE;
    store_t *st = open_ro(argc, argv);
    if (!st) return CLI_EXIT_FAIL;
    int rc = print_rows(st, a.pos, NULL, 0, a.fmt, NULL);
    store_close(st);
    return rc;
}

/* ---- export --------------------------------------------------------------------- */
int cli_cmd_export(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune export NAME --csv|--json [--db PATH] [--all-attempts]\n"
        "       tune export NAME --table [--db PATH] > curves.csv\n"
        "  every recorded result, one row per result (the result's metrics plus trial_id);\n"
        "  --table: the learning curves in the simulator's table format (docs/simulate.md)\n";
    if (help(argc, argv, usage)) return CLI_EXIT_OK;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--table") == 0) return cli_cmd_export_table(argc, argv);
    struct args a;
    if (parse_args(argc, argv, &a, 1, usage)) return CLI_EXIT_USAGE;
    if (a.fmt == FMT_TABLE) {
        cli_error("export: say --csv or --json");
        return CLI_EXIT_USAGE;
    }
    store_t *st = open_ro(argc, argv);
    if (!st) return CLI_EXIT_FAIL;
    if (need_experiment(st, a.pos, cli_db_path(argc, argv))) {
        store_close(st);
        return CLI_EXIT_FAIL;
    }
    static const char sql_cur[] =
        "SELECT t.trial_no AS trial_id, r.attempt, r.data FROM results_current r"
        " JOIN trials t ON t.id = r.trial_id JOIN experiments e ON e.id = t.experiment_id"
        " WHERE e.name = ?1 ORDER BY t.trial_no, r.id";
    static const char sql_all[] =
        "SELECT t.trial_no AS trial_id, r.attempt, r.data FROM results_all r"
        " JOIN trials t ON t.id = r.trial_id JOIN experiments e ON e.id = t.experiment_id"
        " WHERE e.name = ?1 ORDER BY t.trial_no, r.attempt, r.id";
    const char *b[] = {a.pos};
    char err[1024];
    cli_rows_t r;
    int rc = cli_rows_query(st, a.all_attempts ? sql_all : sql_cur, b, 1, &r, err, sizeof err);
    if (rc != 0) {
        cli_error("%s", err);
        cli_rows_free(&r);
        store_close(st);
        return CLI_EXIT_FAIL;
    }
    /* Each row: the result object plus trial_id (and attempt with --all-attempts). */
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < r.nrows; i++) {
        const char *data = r.vals[i * 3 + 2];
        cJSON *o = data ? cJSON_Parse(data) : NULL;
        if (!o || !cJSON_IsObject(o)) {
            cJSON_Delete(o);
            o = cJSON_CreateObject();
        }
        cJSON_DeleteItemFromObjectCaseSensitive(o, "trial_id");
        cJSON_AddItemToObject(o, "trial_id", cJSON_CreateRaw(r.vals[i * 3]));
        if (a.all_attempts) cJSON_AddItemToObject(o, "attempt", cJSON_CreateRaw(r.vals[i * 3 + 1]));
        cJSON_AddItemToArray(arr, o);
    }
    if (a.fmt == FMT_JSON) {
        cli_print_json(stdout, arr);
    } else {
        /* CSV columns: trial_id first, then every key in order of first appearance. */
        cli_rows_t out = {0};
        cJSON *keys = cJSON_CreateArray();
        cJSON_AddItemToArray(keys, cJSON_CreateString("trial_id"));
        cJSON *o;
        cJSON_ArrayForEach(o, arr)
        {
            cJSON *it;
            cJSON_ArrayForEach(it, o)
            {
                int seen = 0;
                cJSON *k;
                cJSON_ArrayForEach(k, keys) if (strcmp(k->valuestring, it->string) == 0) seen = 1;
                if (!seen) cJSON_AddItemToArray(keys, cJSON_CreateString(it->string));
            }
        }
        int nk = cJSON_GetArraySize(keys);
        out.ncol = nk;
        out.names = calloc((size_t)nk, sizeof *out.names);
        out.nrows = out.cap = r.nrows;
        out.vals = calloc(r.nrows * (size_t)nk + 1, sizeof *out.vals);
        out.types = calloc(r.nrows * (size_t)nk + 1, sizeof *out.types);
        if (out.names && out.vals && out.types) {
            for (int c = 0; c < nk; c++)
                out.names[c] = strdup(cJSON_GetArrayItem(keys, c)->valuestring);
            size_t i = 0;
            cJSON_ArrayForEach(o, arr)
            {
                for (int c = 0; c < nk; c++) {
                    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, out.names[c]);
                    char *txt = NULL;
                    if (v && cJSON_IsString(v))
                        txt = strdup(v->valuestring);
                    else if (v && !cJSON_IsNull(v))
                        txt = cJSON_PrintUnformatted(v);
                    out.vals[i * (size_t)nk + (size_t)c] = txt;
                }
                i++;
            }
            cli_print_csv(stdout, &out);
        }
        cli_rows_free(&out);
        cJSON_Delete(keys);
    }
    cJSON_Delete(arr);
    cli_rows_free(&r);
    store_close(st);
    return CLI_EXIT_OK;
}
