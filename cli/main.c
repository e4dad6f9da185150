/* `tune`: entry point and the commands that run experiments (run, validate).
 * Reading commands (ls, trials, best, query, export) are in query.c, the live table in
 * table.c. Only the cli prints and exits; everything below it returns error codes. */
#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "search/space.h"
#include "trial/trial.h"

static const char usage_text[] =
    "usage: tune <command> [options]\n"
    "\n"
    "commands:\n"
    "  run SPACE.json        run an experiment (live table; results in the database)\n"
    "  validate SPACE.json   check the file and print the first configurations\n"
    "  ls                    list experiments\n"
    "  trials NAME           one row per trial (--json)\n"
    "  best NAME             the best trial by the experiment's metric (--json)\n"
    "  query \"SELECT ...\"    read-only SQL against the database (--json, --csv)\n"
    "  export NAME           every result, one row per result (--csv or --json)\n"
    "\n"
    "options for every command:\n"
    "  --db PATH             database file (default: tune.db in the current directory)\n"
    "  --help                help for a command\n"
    "  --version             print the version\n";

static const char run_usage[] =
    "usage: tune run SPACE.json [options]\n"
    "  --db PATH              database (default tune.db)\n"
    "  --gpus LIST|none       GPU pool, e.g. 0,1,2,3 (default: detected)\n"
    "  --cpus N               CPU cores to hand out (default: all)\n"
    "  --status-interval S    seconds between status blocks when not on a terminal (default 30,\n"
    "                         or status_interval_s in the file)\n"
    "  --restart              start a fresh experiment under a new name if NAME exists\n"
    "  --quiet                no live table; only the final summary\n";

/* Finds the value of --db in argv (shared by every command). */
const char *cli_db_path(int argc, char **argv);

static int want_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
    return 0;
}

/* ---- helpers -------------------------------------------------------------------- */
static int parse_gpu_list(const char *s, int *ids, int max)
{
    if (strcmp(s, "none") == 0 || *s == 0) return 0;
    int n = 0;
    while (*s) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > 1 << 20 || n >= max) return -1;
        for (int i = 0; i < n; i++)
            if (ids[i] == v) return -1;
        ids[n++] = (int)v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

/* The directory of the running tune binary, so that tune-train built beside it is found
 * by trials without installing anything. */
static void self_dir(char *buf, size_t n)
{
    ssize_t k = readlink("/proc/self/exe", buf, n - 1);
    if (k <= 0) {
        buf[0] = 0;
        return;
    }
    buf[k] = 0;
    char *slash = strrchr(buf, '/');
    if (slash) *slash = 0;
}

static int find_in_path(const char *prog, char *out, size_t n)
{
    if (strchr(prog, '/')) {
        snprintf(out, n, "%s", prog);
        return access(prog, X_OK) == 0 ? 0 : -1;
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    const char *p = path;
    while (*p) {
        const char *e = strchr(p, ':');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        snprintf(out, n, "%.*s/%s", (int)len, p, prog);
        if (len && access(out, X_OK) == 0) return 0;
        if (!e) break;
        p = e + 1;
    }
    return -1;
}

static void dirname_of(const char *path, char *out, size_t n)
{
    snprintf(out, n, "%s", path);
    char *slash = strrchr(out, '/');
    if (!slash)
        snprintf(out, n, ".");
    else if (slash == out)
        out[1] = 0;
    else
        *slash = 0;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- validate ------------------------------------------------------------------- */
int cli_cmd_validate(int argc, char **argv)
{
    if (want_help(argc, argv)) {
        printf("usage: tune validate SPACE.json [-n N]\n"
               "  checks the file and prints the first N configurations (default 5)\n");
        return CLI_EXIT_OK;
    }
    const char *file = NULL;
    long show = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            show = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) {
            i++;
        } else if (argv[i][0] == '-') {
            cli_error("validate: unknown option %s", argv[i]);
            return CLI_EXIT_USAGE;
        } else if (!file) {
            file = argv[i];
        } else {
            cli_error("validate: one file at a time");
            return CLI_EXIT_USAGE;
        }
    }
    if (!file) {
        cli_error("validate: which file? usage: tune validate SPACE.json");
        return CLI_EXIT_USAGE;
    }
    char err[1024];
    space_t *sp = NULL;
    if (space_load(file, &sp, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return CLI_EXIT_USAGE;
    }
    const space_settings_t *set = space_settings(sp);
    size_t n = space_num_trials(sp);
    static const char *const sched_names[] = {"fifo", "asha", "median"};
    printf("%s: ok: experiment \"%s\", %zu trials, scheduler %s", file, set->name, n,
           sched_names[set->sched.type]);
    if (set->metric) printf(", metric %s (%s)", set->metric, set->mode ? "max" : "min");
    printf("\n");
    for (size_t i = 0; i < n && (long)i < show; i++) {
        cJSON *cfg = NULL;
        if (space_sample(sp, i, &cfg, err, sizeof err) != 0) {
            cli_error("%s", err);
            space_free(sp);
            return CLI_EXIT_USAGE;
        }
        char **av = NULL;
        char *js = cJSON_PrintUnformatted(cfg);
        printf("trial_%05zu %s\n", i, js ? js : "?");
        free(js);
        if (space_render_argv(sp, cfg, "0", "TRIAL_DIR", &av, err, sizeof err) == 0) {
            printf("  argv:");
            for (char **a = av; *a; a++) printf(" [%s]", *a);
            printf("\n");
        }
        space_argv_free(av);
        cJSON_Delete(cfg);
    }
    space_free(sp);
    return CLI_EXIT_OK;
}

/* ---- run ------------------------------------------------------------------------ */
struct run_view {
    int tty;
    int quiet;
    double status_interval;
    double last_plain;
    int last_lines;
    const char **params;
    size_t nparams;
    const char *time_attr;
    int show_exec;
};

static void count_lines(const char *s, int *n)
{
    *n = 0;
    for (; *s; s++)
        if (*s == '\n') (*n)++;
}

static void on_report(void *ud, const sched_snapshot_t *snap, int final)
{
    struct run_view *v = ud;
    if (v->quiet) return;
    cli_table_opts_t o = {.params = v->params,
                          .nparams = v->nparams,
                          .time_attr = v->time_attr,
                          .show_exec = v->show_exec};
    if (v->tty) {
        struct winsize ws;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) {
            o.rows = ws.ws_row - 1;
            o.cols = ws.ws_col;
        } else {
            o.rows = 40;
            o.cols = 160;
        }
        char *text = cli_render_status(snap, &o);
        if (!text) return;
        /* Redraw in place: move to the start of the previous block and clear below. */
        if (v->last_lines > 0) printf("\033[%dA\r\033[J", v->last_lines);
        fputs(text, stdout);
        fflush(stdout);
        count_lines(text, &v->last_lines);
        free(text);
        return;
    }
    double now = snap->elapsed_s;
    if (!final && now - v->last_plain < v->status_interval) return;
    v->last_plain = now;
    o.rows = final ? 0 : 60;
    char *text = cli_render_status(snap, &o);
    if (!text) return;
    fputs(text, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    free(text);
}

static int run_with_space(space_t *sp, const char *db, int argc, char **argv, const char *file)
{
    const space_settings_t *set = space_settings(sp);
    int gpu_ids[256];
    int ngpus = -1;
    int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int restart = 0, quiet = 0;
    double status_interval = set->status_interval_s > 0 ? set->status_interval_s : 30;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--db") == 0 && i + 1 < argc) {
            i++;
        } else if (strcmp(a, "--gpus") == 0 && i + 1 < argc) {
            ngpus = parse_gpu_list(argv[++i], gpu_ids, 256);
            if (ngpus < 0) {
                cli_error("--gpus wants a comma-separated list of distinct device ids such as "
                          "0,1,2,3 (or none), got \"%s\"",
                          argv[i]);
                return CLI_EXIT_USAGE;
            }
        } else if (strcmp(a, "--cpus") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1 << 20) {
                cli_error("--cpus wants a positive integer, got \"%s\"", argv[i]);
                return CLI_EXIT_USAGE;
            }
            cpus = (int)v;
        } else if (strcmp(a, "--status-interval") == 0 && i + 1 < argc) {
            char *end;
            double v = strtod(argv[++i], &end);
            if (*end || !(v > 0)) {
                cli_error("--status-interval wants a positive number of seconds, got \"%s\"",
                          argv[i]);
                return CLI_EXIT_USAGE;
            }
            status_interval = v;
        } else if (strcmp(a, "--restart") == 0) {
            restart = 1;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            quiet = 1;
        } else {
            cli_error("run: unknown option %s (see tune run --help)", a);
            return CLI_EXIT_USAGE;
        }
    }
    char err[1024];
    /* The program must exist before anything runs: otherwise every trial would fail. */
    char self[PATH_MAX], path_env[8192], found[PATH_MAX];
    self_dir(self, sizeof self);
    const char *old_path = getenv("PATH");
    snprintf(path_env, sizeof path_env, "%s%s%s", self, old_path ? ":" : "",
             old_path ? old_path : "");
    setenv("PATH", path_env, 1);
    if (strchr(set->command[0], '{') == NULL && find_in_path(set->command[0], found, sizeof found)) {
        cli_error("%s: command[0]: cannot find program \"%s\" (not in PATH, nor beside tune in %s)",
                  file, set->command[0], self);
        return CLI_EXIT_USAGE;
    }

    unsigned char *peer = NULL;
    if (ngpus < 0) {
        peer = calloc(256 * 256, 1);
        ngpus = sched_detect_gpus(gpu_ids, 256, peer);
    }
    sched_pool_t *pool = NULL;
    if (sched_pool_new(gpu_ids, ngpus, cpus, &pool, err, sizeof err) != 0) {
        cli_error("%s", err);
        free(peer);
        return CLI_EXIT_USAGE;
    }
    for (int i = 0; peer && i < ngpus; i++)
        for (int j = 0; j < ngpus; j++)
            if (peer[i * 256 + j]) sched_pool_set_peer(pool, i, j);
    free(peer);
    if (sched_pool_check(pool, set->gpus_per_trial, set->cpus_per_trial, err, sizeof err) != 0) {
        cli_error("%s: resources: %s", file, err);
        sched_pool_free(pool);
        return CLI_EXIT_USAGE;
    }

    store_t *st = NULL;
    if (store_open(db, 0, &st, err, sizeof err) != 0) {
        cli_error("%s", err);
        sched_pool_free(pool);
        return CLI_EXIT_FAIL;
    }
    char name[256];
    snprintf(name, sizeof name, "%s", set->name);
    int64_t exp_id = 0;
    int rc = store_experiment_find(st, name, &exp_id, err, sizeof err);
    if (rc == 0) {
        if (!restart) {
            cli_error("experiment \"%s\" already exists in %s; resume it with `tune resume %s`, "
                      "or pass --restart to start a fresh experiment under a new name",
                      name, db, name);
            store_close(st);
            sched_pool_free(pool);
            return CLI_EXIT_FAIL;
        }
        for (int k = 2; k < 100000; k++) {
            snprintf(name, sizeof name, "%s-%d", set->name, k);
            if (store_experiment_find(st, name, &exp_id, err, sizeof err) == STORE_NOTFOUND) break;
        }
        /* The results directory and the trials' TUNE_EXPERIMENT follow the new name. */
        if (space_rename(sp, name, err, sizeof err) != 0) {
            cli_error("%s", err);
            store_close(st);
            sched_pool_free(pool);
            return CLI_EXIT_USAGE;
        }
    } else if (rc != STORE_NOTFOUND) {
        cli_error("%s", err);
        store_close(st);
        sched_pool_free(pool);
        return CLI_EXIT_FAIL;
    }

    /* Absolute, because trials run in their own directories and get TUNE_TRIAL_DIR. */
    char dbdir0[PATH_MAX], dbdir[PATH_MAX], results_dir[PATH_MAX + 300];
    dirname_of(db, dbdir0, sizeof dbdir0);
    if (!realpath(dbdir0, dbdir)) snprintf(dbdir, sizeof dbdir, "%s", dbdir0);
    snprintf(results_dir, sizeof results_dir, "%s/tune_results/%s", dbdir, name);
    cJSON *sj = space_settings_json(sp);
    char *settings = sj ? cJSON_PrintUnformatted(sj) : NULL;
    cJSON_Delete(sj);
    static const char *const sched_names[] = {"fifo", "asha", "median"};
    store_experiment_t e = {.name = name,
                            .space_text = space_text(sp),
                            .settings_json = settings ? settings : "{}",
                            .metric = set->metric,
                            .mode_max = set->mode == SPACE_MODE_MAX,
                            .scheduler = sched_names[set->sched.type],
                            .results_dir = results_dir,
                            .num_trials = (int64_t)space_num_trials(sp),
                            .seed = set->seed};
    rc = store_experiment_create(st, &e, wall_now(), &exp_id, err, sizeof err);
    free(settings);
    if (rc != 0) {
        cli_error("%s", err);
        store_close(st);
        sched_pool_free(pool);
        return CLI_EXIT_FAIL;
    }

    trial_exec_t *ex = NULL;
    if (trial_exec_local_new(&ex, err, sizeof err) != 0) {
        cli_error("%s", err);
        store_close(st);
        sched_pool_free(pool);
        return CLI_EXIT_FAIL;
    }
    size_t np = space_num_params(sp);
    const char **params = calloc(np + 1, sizeof *params);
    for (size_t i = 0; params && i < np; i++) params[i] = space_param_name(sp, i);
    struct run_view view = {.tty = isatty(STDOUT_FILENO),
                            .quiet = quiet,
                            .status_interval = status_interval,
                            .last_plain = -1e9,
                            .params = params,
                            .nparams = params ? np : 0,
                            .time_attr = set->sched.time_attr,
                            .show_exec = 0};
    sched_run_opts_t ro = {.space = sp,
                           .store = st,
                           .experiment_id = exp_id,
                           .exec = ex,
                           .pool = pool,
                           .results_dir = results_dir,
                           .report_every_s = view.tty ? 0.25 : 1.0,
                           .report = on_report,
                           .report_ud = &view,
                           .handle_signals = 1};
    sched_run_result_t res;
    rc = sched_run(&ro, &res, err, sizeof err);
    int exit_code = CLI_EXIT_OK;
    if (rc != 0) {
        cli_error("experiment %s stopped: %s", name, err);
        char e2[256];
        store_experiment_set_status(st, exp_id, "INTERRUPTED", wall_now(), e2, sizeof e2);
        exit_code = CLI_EXIT_FAIL;
    } else {
        const char *status = res.interrupted ? "INTERRUPTED" : "FINISHED";
        if (store_experiment_set_status(st, exp_id, status, wall_now(), err, sizeof err) != 0)
            cli_error("cannot record the end of the experiment: %s", err);
        printf("\n%s %s: %zu trials terminated (%zu stopped early by %s), %zu failed",
               res.interrupted ? "Interrupted" : "Finished", name, res.terminated,
               res.early_stopped, sched_names[set->sched.type], res.errored);
        if (res.paused) printf(", %zu paused", res.paused);
        printf(".\n");
        if (res.best_trial >= 0) {
            char num[32];
            printf("Best trial: trial_%05lld with %s=%s (last result).\n",
                   (long long)res.best_trial, set->metric, space_format_number(res.best_metric, num));
        }
        printf("Results are in %s. More: tune best %s --db %s | tune trials %s --db %s | tune "
               "query \"SELECT * FROM trial_summary\" --db %s\n",
               db, name, db, name, db, db);
        if (res.errored)
            printf("%zu trial%s failed: see `tune trials %s --db %s` and the stderr.log in each "
                   "trial's directory under %s.\n",
                   res.errored, res.errored == 1 ? "" : "s", name, db, results_dir);
        if (res.interrupted) exit_code = CLI_EXIT_INTERRUPTED;
    }
    free(params);
    trial_exec_free(ex);
    store_close(st);
    sched_pool_free(pool);
    return exit_code;
}

int cli_cmd_run(int argc, char **argv)
{
    if (want_help(argc, argv)) {
        fputs(run_usage, stdout);
        return CLI_EXIT_OK;
    }
    if (argc < 2 || argv[1][0] == '-') {
        cli_error("run: which experiment file? usage: tune run SPACE.json");
        return CLI_EXIT_USAGE;
    }
    char err[1024];
    space_t *sp = NULL;
    if (space_load(argv[1], &sp, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return CLI_EXIT_USAGE;
    }
    int rc = run_with_space(sp, cli_db_path(argc, argv), argc, argv, argv[1]);
    space_free(sp);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------------- */
const char *cli_db_path(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--db") == 0) return argv[i + 1];
    return "tune.db";
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("tune %s\n", TUNE_VERSION);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return CLI_EXIT_OK;
    }
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"run", cli_cmd_run},       {"validate", cli_cmd_validate},
                {"ls", cli_cmd_ls},         {"trials", cli_cmd_trials},
                {"best", cli_cmd_best},     {"query", cli_cmd_query},
                {"export", cli_cmd_export}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(cmd, cmds[i].name) == 0) return cmds[i].fn(argc - 1, argv + 1);
    cli_error("unknown command \"%s\" (see tune --help)", cmd);
    return CLI_EXIT_USAGE;
}
