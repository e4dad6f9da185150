/* The reading commands: ls, trials, best, query, export. Each is one SQL query against
 * the documented schema (docs/schema.md) printed as a table, JSON or CSV; the database
 * is opened read-only so a run can be writing at the same time. Not for: the curves and
 * charts of show, plot and report (show.c, report.c), nor deleting (rm.c). */
#include "cli/cli.h"
#include "cli/curves.h"
#include "cli/front.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/render.h"

enum fmt { FMT_TABLE, FMT_JSON, FMT_CSV };

struct args {
    const char *pos; /* the one positional argument */
    enum fmt fmt;
    int all_attempts;
    const char *scope; /* best: "last" or "all" */
    const char *sort;  /* trials: --sort KEY */
};

/* Parses the options the reading commands share; returns -1 after printing an error.
 * need_pos: 1 the positional argument is required, 0 optional (an experiment name that
 * may be left out when the database holds one), -1 none allowed. Everything after "--"
 * is positional, so that an experiment named "-x" (from an older tune) can be named. */
static int parse_args(int argc, char **argv, struct args *a, int need_pos, const char *usage)
{
    memset(a, 0, sizeof *a);
    a->scope = "last";
    int opts = 1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (opts && strcmp(s, "--") == 0) {
            opts = 0;
        } else if (opts && strcmp(s, "--db") == 0 && i + 1 < argc) {
            i++;
        } else if (opts && strcmp(s, "--json") == 0) {
            a->fmt = FMT_JSON;
        } else if (opts && strcmp(s, "--csv") == 0) {
            a->fmt = FMT_CSV;
        } else if (opts && strcmp(s, "--all-attempts") == 0) {
            a->all_attempts = 1;
        } else if (opts && strcmp(s, "--scope") == 0 && i + 1 < argc) {
            a->scope = argv[++i];
            if (strcmp(a->scope, "last") && strcmp(a->scope, "all")) {
                cli_error("--scope wants \"last\" or \"all\", got \"%s\"", a->scope);
                return -1;
            }
        } else if (opts && strcmp(s, "--sort") == 0 && i + 1 < argc && strstr(usage, "--sort")) {
            a->sort = argv[++i];
        } else if (opts && s[0] == '-' && s[1]) {
            cli_error("%s: unknown option %s (a name that begins with '-' goes after --: "
                      "tune %s -- %s)\n%s",
                      argv[0], s, argv[0], s, usage);
            return -1;
        } else if (need_pos >= 0 && !a->pos) {
            a->pos = s;
        } else {
            cli_error("%s: unexpected argument \"%s\"\n%s", argv[0], s, usage);
            return -1;
        }
    }
    if (need_pos > 0 && !a->pos) {
        cli_error("%s: missing argument\n%s", argv[0], usage);
        return -1;
    }
    return 0;
}

/* The database (--db, read-only) and the experiment a command means: the one named, or
 * the only one in the database. On success *st is open and *name a new string, both the
 * caller's; else the error is printed, nothing is left open and the exit status returned. */
static int open_experiment(int argc, char **argv, const char *given, store_t **st, char **name)
{
    const char *db = cli_db_path(argc, argv);
    if (!(*st = cli_open_ro(db))) return CLI_EXIT_FAIL;
    char err[1024];
    int rc = cli_exp_pick(*st, db, given, name, err, sizeof err);
    if (rc == 0) return CLI_EXIT_OK;
    cli_error("%s", err);
    store_close(*st);
    *st = NULL;
    return rc == CLI_EXP_AMBIGUOUS ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
}

static void print_rowset(const cli_rows_t *r, enum fmt fmt, const char *const *json_cols)
{
    if (fmt == FMT_JSON) {
        cJSON *j = cli_rows_json(r, json_cols);
        cli_print_json(stdout, j);
        cJSON_Delete(j);
    } else if (fmt == FMT_CSV) {
        cli_print_csv(stdout, r);
    } else {
        cli_print_table(stdout, r);
    }
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
    print_rowset(&r, fmt, json_cols);
    cli_rows_free(&r);
    return CLI_EXIT_OK;
}

/* A configuration value as a cell: strings as they are, numbers with the digits the
 * trial's argv received (space_json_print), other JSON as compact JSON. */
static char *config_cell(const cJSON *v, int *type)
{
    if (cJSON_IsString(v)) {
        *type = STORE_COL_TEXT;
        return strdup(v->valuestring);
    }
    *type = cJSON_IsNumber(v) ? STORE_COL_REAL : STORE_COL_TEXT;
    return space_json_print(v);
}

/* Replaces column `cfgcol` (a configuration as JSON text) of r by one column per
 * parameter, in the order of first appearance (space.json's order). `prefix` goes before
 * each parameter's name ("" or "config/"). Returns 0, or -1 when out of memory. */
static int expand_config(cli_rows_t *r, int cfgcol, const char *prefix)
{
    cJSON **cfg = calloc(r->nrows + 1, sizeof *cfg);
    char **keys = NULL;
    int nk = 0, rc = -1;
    if (!cfg) return -1;
    for (size_t i = 0; i < r->nrows; i++) {
        const char *t = r->vals[i * (size_t)r->ncol + (size_t)cfgcol];
        cfg[i] = t ? cJSON_Parse(t) : NULL;
        const cJSON *it;
        cJSON_ArrayForEach(it, cfg[i])
        {
            int seen = 0;
            for (int k = 0; k < nk && !seen; k++)
                seen = strcmp(keys[k], it->string) == 0;
            if (seen) continue;
            char **nkeys = realloc(keys, (size_t)(nk + 1) * sizeof *keys);
            if (!nkeys) goto out;
            keys = nkeys;
            if (!(keys[nk] = strdup(it->string))) goto out;
            nk++;
        }
    }
    int ncol = r->ncol - 1 + nk;
    cli_rows_t o = {.ncol = ncol, .nrows = r->nrows, .cap = r->nrows};
    o.names = calloc((size_t)ncol + 1, sizeof *o.names);
    o.vals = calloc(r->nrows * (size_t)ncol + 1, sizeof *o.vals);
    o.types = calloc(r->nrows * (size_t)ncol + 1, sizeof *o.types);
    if (!o.names || !o.vals || !o.types) {
        free(o.names), free(o.vals), free(o.types);
        goto out;
    }
    for (int c = 0, oc = 0; c < r->ncol; c++) {
        if (c != cfgcol) {
            o.names[oc] = strdup(r->names[c]);
            for (size_t i = 0; i < r->nrows; i++) {
                size_t from = i * (size_t)r->ncol + (size_t)c, to = i * (size_t)ncol + (size_t)oc;
                o.vals[to] = r->vals[from];
                o.types[to] = r->types[from];
                r->vals[from] = NULL;
            }
            oc++;
            continue;
        }
        for (int k = 0; k < nk; k++, oc++) {
            size_t n = strlen(prefix) + strlen(keys[k]) + 1;
            if ((o.names[oc] = malloc(n))) snprintf(o.names[oc], n, "%s%s", prefix, keys[k]);
            for (size_t i = 0; i < r->nrows; i++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg[i], keys[k]);
                size_t to = i * (size_t)ncol + (size_t)oc;
                o.types[to] = STORE_COL_NULL;
                if (v) o.vals[to] = config_cell(v, &o.types[to]);
            }
        }
    }
    size_t nrows = r->nrows;
    cli_rows_free(r);
    *r = o;
    rc = 0;
    for (size_t i = 0; i < nrows; i++)
        cJSON_Delete(cfg[i]), cfg[i] = NULL;
out:
    for (size_t i = 0; i < r->nrows; i++)
        cJSON_Delete(cfg[i]);
    for (int k = 0; k < nk; k++)
        free(keys[k]);
    free(keys);
    free(cfg);
    return rc;
}

/* ---- --sort --------------------------------------------------------------------- */
struct sort_key {
    size_t row;
    int has, num;
    double v;
    const char *s;
};

/* qsort_r's comparison (glibc's argument order); desc points to 1 for descending. */
static int cmp_key(const void *pa, const void *pb, void *desc)
{
    const struct sort_key *a = pa, *b = pb;
    int c = 0;
    if (a->has != b->has) return a->has ? -1 : 1; /* no value last, either way */
    if (a->has) {
        if (a->num && b->num)
            c = (a->v > b->v) - (a->v < b->v);
        else if (a->num != b->num)
            c = a->num ? -1 : 1;
        else
            c = strcmp(a->s, b->s);
        if (*(const int *)desc) c = -c;
    }
    return c ? c : (a->row > b->row) - (a->row < b->row);
}

/* Where a --sort key's values come from, looked for in this order: a column of r, a
 * parameter (in column "config"), the experiment's metric (its last value, column
 * last_metric), a key of the trials' last results (column "last_result"). */
enum sort_from { FROM_NONE, FROM_COLUMN, FROM_CONFIG, FROM_RESULT };

/* Whether any of the n parsed objects has key. */
static int any_has(cJSON *const *objs, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (cJSON_GetObjectItemCaseSensitive(objs[i], key)) return 1;
    return 0;
}

/* The error for a key found nowhere: every name that would have sorted. */
static void sort_error(const cli_rows_t *r, const char *key, int cfgcol, int rescol,
                       const char *metric, cJSON *const *res)
{
    char list[1024] = "", keys[512] = "";
    size_t n = 0, nk = 0;
    for (int c = 0; c < r->ncol && n < sizeof list; c++)
        if (c != cfgcol && c != rescol && strcmp(r->names[c], "trial_no") != 0)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", r->names[c]);
    /* the keys of the last results, each once, in order of first appearance */
    const char *seen[32];
    size_t nseen = 0;
    for (size_t i = 0; res && i < r->nrows; i++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, res[i])
        {
            int dup = 0;
            for (size_t j = 0; j < nseen && !dup; j++)
                dup = strcmp(seen[j], e->string) == 0;
            if (dup || nseen == sizeof seen / sizeof seen[0]) continue;
            seen[nseen++] = e->string;
            if (nk < sizeof keys)
                nk += (size_t)snprintf(keys + nk, sizeof keys - nk, "%s%s", nk ? ", " : "",
                                       e->string);
        }
    }
    cli_error("--sort %s: no such column, parameter or reported key (there are: %s%s%s%s%s%s; "
              "-KEY sorts descending, `metric` best first)",
              key, list, cfgcol >= 0 ? ", the parameter names" : "", metric ? ", the metric " : "",
              metric ? metric : "", nk ? ", the keys the trials report: " : "", nk ? keys : "");
}

/* Sorts r's rows by KEY: a column, a parameter (inside column "config", JSON), the
 * experiment's metric by its name, or a key of each trial's last result (column
 * "last_result", JSON), looked for in that order; "-KEY" sorts descending; "metric" is the
 * last metric, best first by mode_max. Rows without a value go last either way. Returns 0,
 * or -1 after printing an error naming the keys there are. */
static int sort_rows(cli_rows_t *r, const char *key, int mode_max, const char *metric)
{
    int desc = 0;
    if (key[0] == '-') desc = 1, key++;
    if (strcmp(key, "metric") == 0) {
        key = "last_metric";
        desc ^= mode_max;
    }
    int col = -1, cfgcol = -1, rescol = -1, lastcol = -1;
    for (int c = 0; c < r->ncol; c++) {
        if (strcmp(r->names[c], key) == 0) col = c;
        if (strcmp(r->names[c], "config") == 0) cfgcol = c;
        if (strcmp(r->names[c], "last_result") == 0) rescol = c;
        if (strcmp(r->names[c], "last_metric") == 0) lastcol = c;
    }
    struct sort_key *k = calloc(r->nrows + 1, sizeof *k);
    cJSON **cfg = calloc(r->nrows + 1, sizeof *cfg), **res = calloc(r->nrows + 1, sizeof *res);
    char **perm = malloc((r->nrows * (size_t)r->ncol + 1) * sizeof *perm);
    int *tperm = malloc((r->nrows * (size_t)r->ncol + 1) * sizeof *tperm);
    int rc = -1;
    if (!k || !cfg || !res || !perm || !tperm) {
        cli_error("out of memory");
        goto out;
    }
    for (size_t i = 0; i < r->nrows; i++) {
        const char *t = cfgcol >= 0 ? r->vals[i * (size_t)r->ncol + (size_t)cfgcol] : NULL;
        const char *x = rescol >= 0 ? r->vals[i * (size_t)r->ncol + (size_t)rescol] : NULL;
        cfg[i] = t ? cJSON_Parse(t) : NULL;
        res[i] = x ? cJSON_Parse(x) : NULL;
    }
    enum sort_from from = col >= 0 ? FROM_COLUMN : FROM_NONE;
    if (from == FROM_NONE && any_has(cfg, r->nrows, key)) from = FROM_CONFIG;
    if (from == FROM_NONE && metric && strcmp(key, metric) == 0 && lastcol >= 0) {
        col = lastcol;
        from = FROM_COLUMN;
    }
    if (from == FROM_NONE && any_has(res, r->nrows, key)) from = FROM_RESULT;
    if (from == FROM_NONE && r->nrows) {
        sort_error(r, key, cfgcol, rescol, metric, res);
        goto out;
    }
    for (size_t i = 0; i < r->nrows; i++) {
        k[i].row = i;
        if (from == FROM_COLUMN) {
            size_t at = i * (size_t)r->ncol + (size_t)col;
            const char *v = r->vals[at];
            k[i].has = v != NULL;
            k[i].s = v;
            k[i].num = r->types[at] == STORE_COL_INT || r->types[at] == STORE_COL_REAL;
            if (v && r->types[at] == STORE_COL_TEXT) {
                char *end;
                double d = strtod(v, &end);
                if (end != v && !*end) k[i].num = 1;
                k[i].v = d;
            } else if (v) {
                k[i].v = strtod(v, NULL);
            }
        } else if (from != FROM_NONE) {
            const cJSON *v =
                cJSON_GetObjectItemCaseSensitive(from == FROM_CONFIG ? cfg[i] : res[i], key);
            if (!v) continue;
            k[i].has = !cJSON_IsNull(v);
            k[i].num = cJSON_IsNumber(v);
            k[i].v = v->valuedouble;
            k[i].s = cJSON_IsString(v) ? v->valuestring : "";
        }
    }
    qsort_r(k, r->nrows, sizeof *k, cmp_key, &desc);
    for (size_t i = 0; i < r->nrows; i++)
        for (int c = 0; c < r->ncol; c++) {
            perm[i * (size_t)r->ncol + (size_t)c] = r->vals[k[i].row * (size_t)r->ncol + (size_t)c];
            tperm[i * (size_t)r->ncol + (size_t)c] =
                r->types[k[i].row * (size_t)r->ncol + (size_t)c];
        }
    memcpy(r->vals, perm, r->nrows * (size_t)r->ncol * sizeof *perm);
    memcpy(r->types, tperm, r->nrows * (size_t)r->ncol * sizeof *tperm);
    rc = 0;
out:
    for (size_t i = 0; cfg && res && i < r->nrows; i++) {
        cJSON_Delete(cfg[i]);
        cJSON_Delete(res[i]);
    }
    free(cfg);
    free(res);
    free(k);
    free(perm);
    free(tperm);
    return rc;
}

/* Removes column c of r (its cells freed). */
static void drop_column(cli_rows_t *r, int c)
{
    size_t nc = (size_t)r->ncol;
    for (size_t i = 0; i < r->nrows; i++)
        free(r->vals[i * nc + (size_t)c]);
    for (size_t i = 0, to = 0; i < r->nrows * nc; i++) {
        if (i % nc == (size_t)c) continue;
        r->vals[to] = r->vals[i];
        r->types[to++] = r->types[i];
    }
    free(r->names[c]);
    memmove(r->names + c, r->names + c + 1, (nc - (size_t)c - 1) * sizeof *r->names);
    r->ncol--;
}

/* Inserts a column named `name` before column `at` of r (at == r->ncol: last), its cells
 * vals[0..nrows) taken (NULL for none), each of type `type`. 0, or -1 when out of memory
 * (vals freed either way). */
static int insert_column(cli_rows_t *r, int at, const char *name, char **vals, int type)
{
    size_t nc = (size_t)r->ncol, nr = r->nrows;
    char **names = realloc(r->names, (nc + 2) * sizeof *names);
    if (names) r->names = names;
    char **nv = malloc((nr * (nc + 1) + 1) * sizeof *nv);
    int *nt = malloc((nr * (nc + 1) + 1) * sizeof *nt);
    char *nm = strdup(name);
    if (!names || !nv || !nt || !nm) {
        free(nv), free(nt), free(nm);
        for (size_t i = 0; i < nr; i++)
            free(vals[i]);
        return -1;
    }
    for (size_t i = 0; i < nr; i++)
        for (size_t c = 0, o = 0; c <= nc; c++) {
            size_t to = i * (nc + 1) + c;
            if (c == (size_t)at) {
                nv[to] = vals[i];
                nt[to] = vals[i] ? type : STORE_COL_NULL;
                continue;
            }
            nv[to] = r->vals[i * nc + o];
            nt[to] = r->types[i * nc + o++];
        }
    memmove(r->names + at + 1, r->names + at, (nc - (size_t)at) * sizeof *r->names);
    r->names[at] = nm;
    free(r->vals);
    free(r->types);
    r->vals = nv;
    r->types = nt;
    r->ncol++;
    r->cap = nr;
    return 0;
}

static int column_of(const cli_rows_t *r, const char *name)
{
    for (int c = 0; c < r->ncol; c++)
        if (strcmp(r->names[c], name) == 0) return c;
    return -1;
}

/* The experiment's points when it has several objectives, or one with constraints: 1 with
 * f loaded, 0 for one objective without constraints (or a stored space.json that no longer
 * parses: the single-objective output it always had), -1 after printing an error. */
static int load_front(store_t *st, const char *name, cli_front_t *f)
{
    char err[1024];
    space_t *sp = NULL;
    memset(f, 0, sizeof *f);
    if (cli_front_space(st, name, &sp, err, sizeof err) != 0) return 0;
    const space_settings_t *set = space_settings(sp);
    int multi = cli_front_multi(set) || (set->nobjectives == 1 && set->nconstraints > 0);
    space_free(sp);
    if (!multi) return 0;
    if (cli_front_load(st, name, f, err, sizeof err) != 0) {
        cli_error("%s", err);
        return -1;
    }
    return 1;
}

/* A number as a cell: the shortest text that reads back exactly; NULL for NaN. */
static char *num_cell(double v)
{
    char b[32];
    return isnan(v) ? NULL : strdup(space_format_number(v, b));
}

/* The experiment's metric (a new string, NULL when it has none) and mode (1 for max). */
static char *exp_metric(store_t *st, const char *name, int *mode_max)
{
    char err[256];
    cli_rows_t r;
    const char *b[] = {name};
    char *metric = NULL;
    *mode_max = 0;
    if (cli_rows_query(st, "SELECT metric, mode = 'max' FROM experiments WHERE name = ?1", b, 1, &r,
                       err, sizeof err) == 0 &&
        r.nrows == 1) {
        metric = r.vals[0] ? strdup(r.vals[0]) : NULL;
        *mode_max = r.vals[1] && atoi(r.vals[1]) != 0;
    }
    cli_rows_free(&r);
    return metric;
}

/* ---- ls ------------------------------------------------------------------------- */
/* Cell c of row i of r becomes text v (a copy; NULL for SQL NULL). 0, or -1 out of memory. */
static int set_cell(cli_rows_t *r, size_t i, int c, const char *v)
{
    if (c < 0) return 0;
    size_t at = i * (size_t)r->ncol + (size_t)c;
    char *x = v ? strdup(v) : NULL;
    if (v && !x) return -1;
    free(r->vals[at]);
    r->vals[at] = x;
    r->types[at] = v ? STORE_COL_TEXT : STORE_COL_NULL;
    return 0;
}

/* ls's rows of experiments with several objectives, or one with constraints, as tune best
 * sees them (cli/front.c ranks both): several objectives have no best trial, so the row
 * gives each objective and mode, and the front's size where the best trial was ("front: 4
 * of 20", of the trials with a result); one objective with constraints names the best
 * trial whose last result meets them. Other rows, and those whose stored space.json no
 * longer parses, are left as the query gave them. 0, or -1 out of memory. */
static int ls_fronts(store_t *st, cli_rows_t *r)
{
    int cn = column_of(r, "name"), cm = column_of(r, "metric"), cmo = column_of(r, "mode"),
        cb = column_of(r, "best_metric"), ct = column_of(r, "best_trial");
    char err[1024];
    for (size_t i = 0; cn >= 0 && i < r->nrows; i++) {
        const char *name = r->vals[i * (size_t)r->ncol + (size_t)cn];
        space_t *sp = NULL;
        if (!name || cli_front_space(st, name, &sp, err, sizeof err) != 0) continue;
        const space_settings_t *set = space_settings(sp);
        int ranked = cli_front_multi(set) || (set->nobjectives == 1 && set->nconstraints > 0);
        space_free(sp);
        cli_front_t f;
        if (!ranked || cli_front_load(st, name, &f, err, sizeof err) != 0) continue;
        set = f.set;
        int rc = 0;
        if (f.k > 1) {
            char metrics[2048] = "", modes[256] = "", front[64];
            for (size_t j = 0; j < f.k; j++) {
                size_t ml = strlen(metrics), dl = strlen(modes);
                snprintf(metrics + ml, sizeof metrics - ml, "%s%s", j ? ", " : "", set->metrics[j]);
                snprintf(modes + dl, sizeof modes - dl, "%s%s", j ? ", " : "",
                         space_mode_name(set->modes[j]));
            }
            snprintf(front, sizeof front, "front: %zu of %zu", f.nfront, f.n);
            rc = set_cell(r, i, cm, metrics) | set_cell(r, i, cmo, modes) |
                 set_cell(r, i, cb, NULL) | set_cell(r, i, ct, front);
        } else {
            /* tune best's pick: pareto_rank's first feasible point with a value */
            long pick = cli_front_pick(&f);
            char *trial = NULL, *value = pick >= 0 ? num_cell(f.values[pick]) : NULL;
            if (pick >= 0) {
                char no[32];
                snprintf(no, sizeof no, "%lld", (long long)f.ids[pick]);
                const char *b[] = {name, no};
                cli_rows_t t;
                if (cli_rows_query(st,
                                   "SELECT trial FROM trial_summary WHERE experiment = ?1"
                                   " AND trial_no = ?2",
                                   b, 2, &t, err, sizeof err) == 0 &&
                    t.nrows == 1 && t.vals[0])
                    trial = strdup(t.vals[0]);
                cli_rows_free(&t);
            }
            rc = set_cell(r, i, cb, value) | set_cell(r, i, ct, trial);
            if (rc == 0 && value && cb >= 0)
                r->types[i * (size_t)r->ncol + (size_t)cb] = STORE_COL_REAL;
            free(value);
            free(trial);
        }
        cli_front_free(&f);
        if (rc != 0) return -1;
    }
    return 0;
}

int cli_cmd_ls(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune ls [--db PATH] [--json|--csv]\n"
        "  every experiment; its best trial as `tune best` picks it, by each trial's\n"
        "  last result (Ray Tune's default scope); with several objectives the size of\n"
        "  the Pareto front (`tune best NAME` prints it)\n";
    if (cli_help(argc, argv, usage)) return CLI_EXIT_OK;
    struct args a;
    if (parse_args(argc, argv, &a, -1, usage)) return CLI_EXIT_USAGE;
    store_t *st = cli_open_ro(cli_db_path(argc, argv));
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
    char err[1024];
    cli_rows_t r;
    int rc = cli_rows_query(st, sql, NULL, 0, &r, err, sizeof err);
    if (rc != 0) {
        cli_error("%s", err);
        cli_rows_free(&r);
        store_close(st);
        return rc == STORE_READONLY ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    rc = CLI_EXIT_OK;
    if (ls_fronts(st, &r) != 0) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAIL;
    } else {
        print_rowset(&r, a.fmt, NULL);
    }
    cli_rows_free(&r);
    store_close(st);
    return rc;
}

/* ---- trials --------------------------------------------------------------------- */
/* early_stopped is a boolean in the JSON contract. */
static void bool_member(cJSON *o, const char *key)
{
    cJSON *es = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!es) return;
    int v = cJSON_IsNumber(es) && es->valuedouble != 0;
    cJSON_ReplaceItemInObjectCaseSensitive(o, key, cJSON_CreateBool(v));
}

/* The words of `tune trials`' infeasible column for trial point p of f: the constraints
 * its last result (JSON text) violates. NULL when it violates none or has no result. */
static char *infeasible_cell(const cli_front_t *f, long p, const char *last)
{
    if (p < 0 || f->violation[p] == 0) return NULL;
    cJSON *res = last ? cJSON_Parse(last) : NULL;
    char words[1024];
    cli_violation_words(f->set, res, words, sizeof words);
    cJSON_Delete(res);
    return strdup(words[0] ? words : "yes");
}

/* With several objectives, the table's (and CSV's) columns after "iter": each objective's
 * last value, the trial's front (0 the Pareto front, 1 the next, ...; empty when it has
 * no result, violates a constraint or misses an objective) and the constraints it
 * violates. Columns trial_no and last_result must be there. 0, or -1 out of memory. */
static int add_front_columns(cli_rows_t *r, const cli_front_t *f)
{
    int at = column_of(r, "iter"), nocol = column_of(r, "trial_no"),
        rescol = column_of(r, "last_result");
    if (at < 0 || nocol < 0 || rescol < 0 || r->nrows == 0) return 0;
    at++;
    long *pt = malloc(r->nrows * sizeof *pt);
    if (!pt) return -1;
    for (size_t i = 0; i < r->nrows; i++) {
        const char *no = r->vals[i * (size_t)r->ncol + (size_t)nocol];
        pt[i] = no ? cli_front_find(f, strtoll(no, NULL, 10)) : -1;
    }
    int rc = 0;
    /* one objective (with constraints): its column is last_metric, kept */
    size_t j0 = f->k > 1 ? 0 : f->k;
    for (size_t j = j0; j <= f->k + 1 && rc == 0; j++) {
        char **v = calloc(r->nrows + 1, sizeof *v);
        if (!v) {
            rc = -1;
            break;
        }
        for (size_t i = 0; i < r->nrows; i++) {
            long p = pt[i];
            if (p < 0) continue;
            if (j < f->k) {
                v[i] = num_cell(f->values[(size_t)p * f->k + j]);
            } else if (j == f->k) {
                char b[32];
                int lv = cli_front_level(f, (size_t)p);
                snprintf(b, sizeof b, "%d", lv);
                if (lv >= 0) v[i] = strdup(b);
            } else {
                /* the columns inserted before it moved last_result on */
                rescol = column_of(r, "last_result");
                v[i] = infeasible_cell(f, p, r->vals[i * (size_t)r->ncol + (size_t)rescol]);
            }
        }
        const char *name = j < f->k ? f->set->metrics[j] : j == f->k ? "front" : "infeasible";
        int type = j < f->k ? STORE_COL_REAL : j == f->k ? STORE_COL_INT : STORE_COL_TEXT;
        rc = insert_column(r, at + (int)(j - j0), name, v, type);
        free(v);
    }
    free(pt);
    return rc;
}

/* With several objectives, the same in each object of `tune trials --json`: "values" (each
 * objective's last value as reported, null where missing), "violation" (0 feasible, null
 * when unknown), "front" and "infeasible" as the table's columns; all null without a
 * result. */
static void add_front_members(cJSON *arr, const cli_front_t *f)
{
    cJSON *o;
    cJSON_ArrayForEach(o, arr)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
        long p = cJSON_IsNumber(id) ? cli_front_find(f, (int64_t)id->valuedouble) : -1;
        if (p < 0) {
            cJSON_AddNullToObject(o, "values");
            cJSON_AddNullToObject(o, "violation");
            cJSON_AddNullToObject(o, "front");
            cJSON_AddNullToObject(o, "infeasible");
            continue;
        }
        cJSON *vals = cJSON_AddObjectToObject(o, "values");
        for (size_t j = 0; j < f->k; j++) {
            double v = f->values[(size_t)p * f->k + j];
            cJSON_AddItemToObject(vals, f->set->metrics[j],
                                  isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v));
        }
        double viol = f->violation[p];
        cJSON_AddItemToObject(o, "violation",
                              isfinite(viol) ? cJSON_CreateNumber(viol) : cJSON_CreateNull());
        int lv = cli_front_level(f, (size_t)p);
        cJSON_AddItemToObject(o, "front", lv >= 0 ? cJSON_CreateNumber(lv) : cJSON_CreateNull());
        char *words = NULL;
        if (viol != 0) {
            char buf[1024];
            cli_violation_words(f->set, cJSON_GetObjectItemCaseSensitive(o, "last_result"), buf,
                                sizeof buf);
            words = strdup(buf[0] ? buf : "yes");
        }
        cJSON_AddItemToObject(o, "infeasible",
                              words ? cJSON_CreateString(words) : cJSON_CreateNull());
        free(words);
    }
}

/* Every query goes through the documented views (trial_summary, results_current,
 * results_all), so that the physical layout of the results table can change. */
int cli_cmd_trials(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune trials [NAME] [--db PATH] [--json|--csv] [--all-attempts] [--sort KEY]\n"
        "  one row per trial: status, one column per parameter, iterations, last metrics.\n"
        "  NAME may be left out when the database holds one experiment.\n"
        "  --sort KEY: by a column, a parameter, the metric's name or any key of the trials'\n"
        "  last results (ascending, -KEY descending); `metric` sorts by the last metric,\n"
        "  best first.\n"
        "  With several objectives: a column per objective (its last value), `front` (0 for\n"
        "  the Pareto front, 1 the next, ...) and `infeasible` (the constraints violated)\n";
    if (cli_help(argc, argv, usage)) return CLI_EXIT_OK;
    struct args a;
    if (parse_args(argc, argv, &a, 0, usage)) return CLI_EXIT_USAGE;
    store_t *st = NULL;
    char *name = NULL;
    int rc = open_experiment(argc, argv, a.pos, &st, &name);
    if (rc) return rc;
    cli_front_t f;
    int multi = load_front(st, name, &f);
    if (multi < 0) {
        free(name);
        store_close(st);
        return CLI_EXIT_FAIL;
    }
    const char *b[] = {name};
    static const char sql_json[] =
        "SELECT s.trial_no AS id, s.trial AS name, s.status, s.early_stopped, s.config,"
        " s.iterations, s.last_metric, s.best_metric, s.last_result, s.error, s.slice,"
        " s.attempt, s.exit_code, s.exit_signal, s.started_at, s.ended_at"
        " FROM trial_summary s WHERE s.experiment = ?1 ORDER BY s.trial_no";
    static const char sql_json_all[] =
        "SELECT s.trial_no AS id, s.trial AS name, s.status, s.early_stopped, s.config,"
        " (SELECT count(*) FROM results_all r WHERE r.trial_id = s.trial_id) AS iterations,"
        " s.last_metric, s.best_metric,"
        " (SELECT r.data FROM results_all r WHERE r.trial_id = s.trial_id"
        "  ORDER BY r.id DESC LIMIT 1) AS last_result,"
        " s.error, s.slice, s.attempt, s.exit_code, s.exit_signal, s.started_at, s.ended_at"
        " FROM trial_summary s WHERE s.experiment = ?1 ORDER BY s.trial_no";
    static const char sql_table[] =
        "SELECT s.trial, s.status ||"
        " CASE WHEN s.early_stopped THEN ' (stopped)' ELSE '' END AS status, s.slice,"
        " s.config, s.iterations AS iter, s.last_metric, s.best_metric, s.error,"
        " s.last_result, s.trial_no" /* for --sort and the front: left out of what is printed */
        " FROM trial_summary s WHERE s.experiment = ?1 ORDER BY s.trial_no";
    const char *sql = a.fmt != FMT_JSON ? sql_table : a.all_attempts ? sql_json_all : sql_json;
    char err[1024];
    cli_rows_t r;
    rc = cli_rows_query(st, sql, b, 1, &r, err, sizeof err);
    if (rc != 0) {
        cli_error("%s", err);
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    if (a.fmt != FMT_JSON && expand_config(&r, 3, "") != 0) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    if (multi && a.fmt != FMT_JSON && add_front_columns(&r, &f) != 0) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    if (a.sort) {
        int mode_max;
        char *metric = exp_metric(st, name, &mode_max);
        int bad = sort_rows(&r, a.sort, mode_max, metric) != 0;
        free(metric);
        if (bad) {
            rc = CLI_EXIT_USAGE;
            goto out;
        }
    }
    /* Left out of what is printed: the hidden columns, and with several objectives the
     * first one's last and best metric (its column says the last; its best of all results
     * is no point of the front). */
    static const char *const hidden[] = {"last_result", "trial_no", "last_metric", "best_metric"};
    for (size_t h = 0; a.fmt != FMT_JSON && h < (multi > 0 && f.k > 1 ? 4u : 2u); h++) {
        int c = column_of(&r, hidden[h]);
        if (c >= 0) drop_column(&r, c);
    }
    if (a.fmt == FMT_JSON) {
        static const char *const json_cols[] = {"config", "last_result", NULL};
        cJSON *arr = cli_rows_json(&r, json_cols);
        cJSON *o;
        cJSON_ArrayForEach(o, arr) bool_member(o, "early_stopped");
        if (multi > 0) add_front_members(arr, &f);
        cli_print_json(stdout, arr);
        cJSON_Delete(arr);
    } else {
        print_rowset(&r, a.fmt, NULL);
    }
    rc = CLI_EXIT_OK;
out:
    cli_rows_free(&r);
    cli_front_free(&f);
    free(name);
    store_close(st);
    return rc;
}

/* ---- best ----------------------------------------------------------------------- */
/* `tune best` with several objectives: no trial meets the constraints. Names the trial
 * closest to meeting them (pareto_rank puts the smallest total violation first) and what
 * it violates. */
static void no_feasible(const char *name, const cli_front_t *f, const cli_rows_t *r, int rescol)
{
    size_t p = f->order[0];
    const char *last = NULL;
    char tname[64] = "";
    for (size_t i = 0; i < r->nrows; i++) {
        const char *no = r->vals[i * (size_t)r->ncol];
        if (no && strtoll(no, NULL, 10) == f->ids[p]) {
            last = r->vals[i * (size_t)r->ncol + (size_t)rescol];
            snprintf(tname, sizeof tname, "%s", r->vals[i * (size_t)r->ncol + 1]);
        }
    }
    cJSON *res = last ? cJSON_Parse(last) : NULL;
    char words[1024], tv[32];
    cli_violation_words(f->set, res, words, sizeof words);
    cJSON_Delete(res);
    cli_fmt_num(f->violation[p], tv, sizeof tv);
    cli_error("no trial of %s meets the constraints (%zu trial%s with a result, none feasible): "
              "the closest is %s (total violation %s): %s",
              name, f->n, f->n == 1 ? "" : "s", tname, tv, words);
}

/* `tune best` with several objectives: the Pareto front (front.h), as a table or as the
 * one JSON object docs/multiobjective.md describes. */
static int best_front(store_t *st, const char *name, const cli_front_t *f, enum fmt fmt)
{
    static const char sql[] =
        "SELECT s.trial_no AS id, s.trial AS name, s.status, s.early_stopped, s.config,"
        " s.iterations, s.last_result, s.trial_dir"
        " FROM trial_summary s WHERE s.experiment = ?1 ORDER BY s.trial_no";
    const char *b[] = {name};
    char err[1024];
    cli_rows_t r;
    size_t *front = NULL, nfront = 0;
    int rc = cli_rows_query(st, sql, b, 1, &r, err, sizeof err);
    if (rc != 0) {
        cli_error("%s", err);
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    if (f->n == 0) {
        cli_error("experiment \"%s\" has no trial with a result yet", name);
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    if (f->nfeasible == 0) {
        no_feasible(name, f, &r, 6);
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    if (f->nfront == 0) {
        cli_error("experiment \"%s\" has %zu feasible trial%s, but none with a value for every "
                  "objective yet",
                  name, f->nfeasible, f->nfeasible == 1 ? "" : "s");
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    if (cli_front_sorted(f, &front, &nfront) != 0) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    const space_settings_t *set = f->set;
    static const char *const json_cols[] = {"config", "last_result", NULL};
    cJSON *all = cli_rows_json(&r, json_cols);
    if (fmt == FMT_JSON) {
        cJSON *o = cJSON_CreateObject(), *objs = cJSON_AddArrayToObject(o, "objectives");
        for (size_t j = 0; j < f->k; j++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "metric", set->metrics[j]);
            cJSON_AddStringToObject(x, "mode", space_mode_name(set->modes[j]));
            cJSON_AddItemToArray(objs, x);
        }
        static const char *const cmp[SPACE_NCMP] = SPACE_CMP_NAMES;
        cJSON *cons = cJSON_AddArrayToObject(o, "constraints");
        for (size_t j = 0; j < set->nconstraints; j++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "key", set->constraints[j].key);
            cJSON_AddStringToObject(x, "op", cmp[set->constraints[j].op]);
            cJSON_AddNumberToObject(x, "bound", set->constraints[j].bound);
            cJSON_AddItemToArray(cons, x);
        }
        cJSON_AddNumberToObject(o, "trials", (double)f->n);
        cJSON_AddNumberToObject(o, "feasible", (double)f->nfeasible);
        cJSON *rows = cJSON_AddArrayToObject(o, "front");
        for (size_t q = 0; q < nfront; q++) {
            size_t p = front[q];
            cJSON *row = NULL, *it;
            cJSON_ArrayForEach(it, all)
            {
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
                if (cJSON_IsNumber(id) && (int64_t)id->valuedouble == f->ids[p]) row = it;
            }
            if (!row) continue;
            row = cJSON_Duplicate(row, 1);
            bool_member(row, "early_stopped");
            cJSON *vals = cJSON_AddObjectToObject(row, "values");
            for (size_t j = 0; j < f->k; j++)
                cJSON_AddNumberToObject(vals, set->metrics[j], f->values[p * f->k + j]);
            cJSON_AddNumberToObject(row, "violation", 0);
            cJSON_AddItemToArray(rows, row);
        }
        cli_print_json(stdout, o);
        cJSON_Delete(o);
    } else {
        /* trial, status, each objective, iterations, then one column per parameter */
        cli_rows_t t = {0};
        size_t nc = 4 + f->k;
        t.ncol = (int)nc;
        t.nrows = t.cap = nfront;
        t.names = calloc(nc + 1, sizeof *t.names);
        t.vals = calloc(nfront * nc + 1, sizeof *t.vals);
        t.types = calloc(nfront * nc + 1, sizeof *t.types);
        if (!t.names || !t.vals || !t.types) {
            cli_rows_free(&t);
            cJSON_Delete(all);
            cli_error("out of memory");
            rc = CLI_EXIT_FAIL;
            goto out;
        }
        t.names[0] = strdup("trial");
        t.names[1] = strdup("status");
        for (size_t j = 0; j < f->k; j++) {
            char h[300];
            snprintf(h, sizeof h, "%s (%s)", set->metrics[j], space_mode_name(set->modes[j]));
            t.names[2 + j] = strdup(h);
        }
        t.names[2 + f->k] = strdup("iter");
        t.names[3 + f->k] = strdup("config");
        for (size_t q = 0; q < nfront; q++) {
            size_t p = front[q];
            char **v = t.vals + q * nc;
            int *ty = t.types + q * nc;
            for (size_t i = 0; i < r.nrows; i++) {
                const char *const *rv = (const char *const *)r.vals + i * (size_t)r.ncol;
                if (!rv[0] || strtoll(rv[0], NULL, 10) != f->ids[p]) continue;
                int es = rv[3] && atoi(rv[3]);
                char st_[64];
                snprintf(st_, sizeof st_, "%s%s", rv[2] ? rv[2] : "?", es ? " (stopped)" : "");
                v[0] = strdup(rv[1] ? rv[1] : "?"), ty[0] = STORE_COL_TEXT;
                v[1] = strdup(st_), ty[1] = STORE_COL_TEXT;
                for (size_t j = 0; j < f->k; j++)
                    v[2 + j] = num_cell(f->values[p * f->k + j]), ty[2 + j] = STORE_COL_REAL;
                v[2 + f->k] = rv[5] ? strdup(rv[5]) : NULL, ty[2 + f->k] = STORE_COL_INT;
                v[3 + f->k] = rv[4] ? strdup(rv[4]) : NULL, ty[3 + f->k] = STORE_COL_TEXT;
            }
        }
        size_t infeasible = f->n - f->nfeasible;
        printf("Pareto front of %s: %zu trial%s (of %zu with a result: %zu feasible, %zu "
               "violating a constraint)\n",
               name, nfront, nfront == 1 ? "" : "s", f->n, f->nfeasible, infeasible);
        if (expand_config(&t, 3 + (int)f->k, "") != 0)
            cli_error("out of memory");
        else
            cli_print_table(stdout, &t);
        cli_rows_free(&t);
    }
    cJSON_Delete(all);
    rc = CLI_EXIT_OK;
out:
    free(front);
    cli_rows_free(&r);
    return rc;
}

/* The columns of `tune best`'s row for one objective (then the trial's number as ?2). */
#define BEST_ROW_LAST                                                                              \
    "SELECT s.trial_no AS id, s.trial AS name, s.status, s.early_stopped,"                         \
    " e.metric, s.last_metric AS value, s.best_metric, s.config, s.iterations,"                    \
    " s.last_result, s.trial_dir"                                                                  \
    " FROM trial_summary s JOIN experiments e ON e.id = s.experiment_id"                           \
    " WHERE s.experiment = ?1"

/* Prints the single-objective row r (one row) as `tune best` does. */
static void print_best_row(const cli_rows_t *r, enum fmt fmt)
{
    static const char *const json_cols[] = {"config", "last_result", NULL};
    cJSON *arr = cli_rows_json(r, json_cols);
    cJSON *o = cJSON_DetachItemFromArray(arr, 0);
    cJSON_Delete(arr);
    bool_member(o, "early_stopped");
    if (fmt == FMT_JSON) {
        cli_print_json(stdout, o);
    } else {
        cJSON *it;
        cJSON_ArrayForEach(it, o)
        {
            char *v = cJSON_IsString(it) ? NULL : space_json_print(it);
            char *shown = cli_escape_text(v ? v : it->valuestring);
            printf("%-12s %s\n", it->string, shown ? shown : "");
            free(shown);
            free(v);
        }
    }
    cJSON_Delete(o);
}

/* `tune best` with one objective and constraints: the best trial among those whose last
 * result meets them (pareto_rank's first feasible point with a value), printed as the
 * single-objective row; exit 1 naming the closest trial when none does. */
static int best_constrained(store_t *st, const char *name, const cli_front_t *f, const char *scope,
                            enum fmt fmt)
{
    if (strcmp(scope, "all") == 0) {
        cli_error("best: --scope all cannot be used with constraints: they are judged on each "
                  "trial's last result (its best result may be another one, never checked "
                  "against them); leave out --scope or say --scope last");
        return CLI_EXIT_USAGE;
    }
    char err[1024];
    const char *b[] = {name, NULL};
    cli_rows_t r;
    int rc = CLI_EXIT_FAIL;
    if (f->n && f->nfeasible == 0) {
        if (cli_rows_query(st,
                           "SELECT s.trial_no, s.trial, s.status, s.early_stopped, s.config,"
                           " s.iterations, s.last_result FROM trial_summary s"
                           " WHERE s.experiment = ?1 ORDER BY s.trial_no",
                           b, 1, &r, err, sizeof err) == 0)
            no_feasible(name, f, &r, 6);
        else
            cli_error("%s", err);
        cli_rows_free(&r);
        return CLI_EXIT_FAIL;
    }
    long pick = cli_front_pick(f);
    if (pick < 0) {
        cli_error("experiment \"%s\" has no trial with a value for its metric yet", name);
        return CLI_EXIT_FAIL;
    }
    char no[32];
    snprintf(no, sizeof no, "%lld", (long long)f->ids[pick]);
    b[1] = no;
    if (cli_rows_query(st, BEST_ROW_LAST " AND s.trial_no = ?2", b, 2, &r, err, sizeof err) != 0)
        cli_error("%s", err);
    else if (r.nrows == 1)
        print_best_row(&r, fmt), rc = CLI_EXIT_OK;
    cli_rows_free(&r);
    return rc;
}

int cli_cmd_best(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune best [NAME] [--db PATH] [--json] [--scope last|all]\n"
        "  the best trial by the experiment's metric and mode: by each trial's last result\n"
        "  (scope last, as Ray Tune's default) or its best result (scope all).\n"
        "  With several objectives: the Pareto front (the feasible trials no other trial\n"
        "  beats in every objective), by each trial's last result.\n"
        "  NAME may be left out when the database holds one experiment\n";
    if (cli_help(argc, argv, usage)) return CLI_EXIT_OK;
    struct args a;
    if (parse_args(argc, argv, &a, 0, usage)) return CLI_EXIT_USAGE;
    store_t *st = NULL;
    char *name = NULL;
    int rc = open_experiment(argc, argv, a.pos, &st, &name);
    if (rc) return rc;
    cli_front_t f;
    int multi = load_front(st, name, &f);
    if (multi > 0 && f.k == 1) {
        /* one objective under constraints: the row as ever, of the best feasible trial */
        rc = best_constrained(st, name, &f, a.scope, a.fmt);
        cli_front_free(&f);
        free(name);
        store_close(st);
        return rc;
    }
    if (multi != 0) {
        if (multi > 0 && strcmp(a.scope, "all") == 0) {
            /* A trial's best values of several objectives may come from different results:
             * no result of the trial is that point. */
            cli_error("best: --scope all has no meaning with several objectives (a trial's "
                      "best value of each may come from a different result, a point no "
                      "configuration reached at once); the front is by each trial's last "
                      "result: leave out --scope or say --scope last");
            rc = CLI_EXIT_USAGE;
        } else {
            rc = multi > 0 ? best_front(st, name, &f, a.fmt) : CLI_EXIT_FAIL;
        }
        cli_front_free(&f);
        free(name);
        store_close(st);
        return rc;
    }
    /* Ties go to the lower trial number. */
    static const char sql_last[] = BEST_ROW_LAST
        " AND s.last_metric IS NOT NULL"
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
    const char *b[] = {name};
    const char *sql = strcmp(a.scope, "all") == 0 ? sql_all : sql_last;
    rc = cli_rows_query(st, sql, b, 1, &r, err, sizeof err);
    if (rc != 0) {
        cli_error("%s", err);
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    if (r.nrows == 0) {
        cli_error("experiment \"%s\" has no trial with a value for its metric yet", name);
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    print_best_row(&r, a.fmt);
    rc = CLI_EXIT_OK;
out:
    cli_rows_free(&r);
    free(name);
    store_close(st);
    return rc;
}

/* ---- query ---------------------------------------------------------------------- */
int cli_cmd_query(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune query \"SELECT ...\" [--db PATH] [--json|--csv]\n"
        "  any read-only SQL; the schema and example queries are in docs/schema.md\n";
    if (cli_help(argc, argv, usage)) return CLI_EXIT_OK;
    struct args a;
    if (parse_args(argc, argv, &a, 1, usage)) return CLI_EXIT_USAGE;
    store_t *st = cli_open_ro(cli_db_path(argc, argv));
    if (!st) return CLI_EXIT_FAIL;
    int rc = print_rows(st, a.pos, NULL, 0, a.fmt, NULL);
    store_close(st);
    return rc;
}

/* ---- export --------------------------------------------------------------------- */
int cli_cmd_export(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune export [NAME] --csv|--json [--db PATH] [--all-attempts]\n"
        "       tune export NAME --table [--db PATH] > curves.csv\n"
        "  every recorded result, one row per result: trial_id, trial (its name), the\n"
        "  configuration (CSV: one config/NAME column per parameter; JSON: \"config\"), then\n"
        "  the result's keys. NAME may be left out when the database holds one experiment.\n"
        "  --table: the learning curves in the simulator's table format (docs/simulate.md)\n";
    if (cli_help(argc, argv, usage)) return CLI_EXIT_OK;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--table") == 0) return cli_cmd_export_table(argc, argv);
    struct args a;
    if (parse_args(argc, argv, &a, 0, usage)) return CLI_EXIT_USAGE;
    if (a.fmt == FMT_TABLE) {
        cli_error("export: say --csv or --json");
        return CLI_EXIT_USAGE;
    }
    store_t *st = NULL;
    char *name = NULL;
    int rc = open_experiment(argc, argv, a.pos, &st, &name);
    if (rc) return rc;
    static const char sql_cur[] =
        "SELECT t.trial_no AS trial_id, r.attempt, r.data, t.name, t.config FROM results_current r"
        " JOIN trials t ON t.id = r.trial_id JOIN experiments e ON e.id = t.experiment_id"
        " WHERE e.name = ?1 ORDER BY t.trial_no, r.id";
    static const char sql_all[] =
        "SELECT t.trial_no AS trial_id, r.attempt, r.data, t.name, t.config FROM results_all r"
        " JOIN trials t ON t.id = r.trial_id JOIN experiments e ON e.id = t.experiment_id"
        " WHERE e.name = ?1 ORDER BY t.trial_no, r.attempt, r.id";
    const char *b[] = {name};
    char err[1024];
    cli_rows_t r;
    rc = cli_rows_query(st, a.all_attempts ? sql_all : sql_cur, b, 1, &r, err, sizeof err);
    if (rc != 0) {
        cli_error("%s", err);
        cli_rows_free(&r);
        free(name);
        store_close(st);
        return CLI_EXIT_FAIL;
    }
    /* Each row: trial_id, trial, config, the result object's keys, then attempt (with
     * --all-attempts). A result key of the same name as one of these is left out: these
     * say which trial. */
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < r.nrows; i++) {
        const char *const *v = (const char *const *)r.vals + i * 5;
        cJSON *res = v[2] ? cJSON_Parse(v[2]) : NULL;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "trial_id", cli_json_number(v[0]));
        cJSON_AddItemToObject(o, "trial", v[3] ? cJSON_CreateString(v[3]) : cJSON_CreateNull());
        cJSON *cfg = v[4] ? cJSON_Parse(v[4]) : NULL;
        cJSON_AddItemToObject(o, "config", cfg ? cfg : cJSON_CreateNull());
        cJSON *it = cJSON_IsObject(res) ? res->child : NULL;
        for (; it; it = it->next) {
            if (cJSON_GetObjectItemCaseSensitive(o, it->string)) continue;
            cJSON_AddItemToObject(o, it->string, cJSON_Duplicate(it, 1));
        }
        if (a.all_attempts) {
            cJSON_DeleteItemFromObjectCaseSensitive(o, "attempt");
            cJSON_AddItemToObject(o, "attempt", cli_json_number(v[1]));
        }
        cJSON_Delete(res);
        cJSON_AddItemToArray(arr, o);
    }
    if (a.fmt == FMT_JSON) {
        cli_print_json(stdout, arr);
    } else {
        /* CSV columns: trial_id, trial, config/NAME per parameter, then every result key
         * in order of first appearance. */
        cli_rows_t out = {0};
        cJSON *keys = cJSON_CreateArray();
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
        int nk = cJSON_GetArraySize(keys), cfgcol = -1;
        out.ncol = nk;
        out.names = calloc((size_t)nk + 1, sizeof *out.names);
        out.nrows = out.cap = r.nrows;
        out.vals = calloc(r.nrows * (size_t)nk + 1, sizeof *out.vals);
        out.types = calloc(r.nrows * (size_t)nk + 1, sizeof *out.types);
        if (out.names && out.vals && out.types) {
            for (int c = 0; c < nk; c++) {
                out.names[c] = strdup(cJSON_GetArrayItem(keys, c)->valuestring);
                if (strcmp(out.names[c], "config") == 0) cfgcol = c;
            }
            size_t i = 0;
            cJSON_ArrayForEach(o, arr)
            {
                for (int c = 0; c < nk; c++) {
                    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, out.names[c]);
                    char *txt = NULL;
                    if (v && cJSON_IsString(v))
                        txt = strdup(v->valuestring);
                    else if (v && !cJSON_IsNull(v))
                        txt = space_json_print(v);
                    out.vals[i * (size_t)nk + (size_t)c] = txt;
                    out.types[i * (size_t)nk + (size_t)c] = STORE_COL_TEXT;
                }
                i++;
            }
            if (cfgcol < 0 || expand_config(&out, cfgcol, "config/") == 0)
                cli_print_csv(stdout, &out);
            else
                cli_error("out of memory");
        }
        cli_rows_free(&out);
        cJSON_Delete(keys);
    }
    cJSON_Delete(arr);
    cli_rows_free(&r);
    free(name);
    store_close(st);
    return CLI_EXIT_OK;
}
