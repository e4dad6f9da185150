/* `tune run` and `tune resume`: turn a space.json (or a stored experiment) and flags into
 * a pool, a store, an executor and a lock, hand them to the scheduler's loop, and print
 * the live table and the final summary. Not for: deciding anything about trials. */
#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "search/settings.h"
#include "search/space.h"
#include "trial/trial.h"

static const char run_usage[] =
    "usage: tune run SPACE.json [options]\n"
    "       tune resume NAME [options]\n"
    "  --db PATH              database (default tune.db)\n"
    "  --gpus LIST|none       GPU pool, e.g. 0,1,2,3 (default: detected)\n"
    "  --cpus N               CPU cores to hand out (default: all)\n"
    "  --status-interval S    seconds between status blocks when not on a terminal (default 30,\n"
    "                         or status_interval_s in the file)\n"
    "  --restart              run: start a fresh experiment under a new name if NAME exists\n"
    "  --resume               run: resume NAME if it exists and did not finish (no question);\n"
    "                         the stored space.json is used (differences are shown)\n"
    "  --more N               run: add N trials to NAME (continuing the seed's sequence)\n"
    "                         and run them; the same as tune extend NAME N\n"
    "  --quiet                no live table; only the final summary\n"
    "  --executor local|slurm run trials on this machine or through Slurm (default: the\n"
    "                         file's \"executor\", else local)\n"
    "  --allocation JOBID     slurm: run trials as steps of this running allocation (default:\n"
    "                         the file's, else $SLURM_JOB_ID; \"none\": a job per trial)\n";

struct run_opts {
    const char *db;
    int gpu_ids[256];
    int ngpus; /* -1: detect */
    int cpus;
    double status_interval; /* 0: the file's or 30 */
    int restart, resume, quiet;
    long more;              /* --more N: trials to add */
    const char *executor;   /* "local" | "slurm" | NULL: the file's */
    const char *allocation; /* Slurm job id, "none", or NULL */
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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

/* Parses options from argv[first..]; the one positional argument goes to *pos. */
static int parse_run_opts(int argc, char **argv, struct run_opts *o, const char **pos)
{
    memset(o, 0, sizeof *o);
    o->db = cli_db_path(argc, argv);
    o->ngpus = -1;
    o->cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    *pos = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--db") == 0 && i + 1 < argc) {
            i++;
        } else if (strcmp(a, "--gpus") == 0 && i + 1 < argc) {
            o->ngpus = parse_gpu_list(argv[++i], o->gpu_ids, 256);
            if (o->ngpus < 0) {
                cli_error("--gpus wants a comma-separated list of distinct device ids such as "
                          "0,1,2,3 (or none), got \"%s\"",
                          argv[i]);
                return -1;
            }
        } else if (strcmp(a, "--cpus") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1 << 20) {
                cli_error("--cpus wants a positive integer, got \"%s\"", argv[i]);
                return -1;
            }
            o->cpus = (int)v;
        } else if (strcmp(a, "--status-interval") == 0 && i + 1 < argc) {
            char *end;
            double v = strtod(argv[++i], &end);
            if (*end || !(v > 0)) {
                cli_error("--status-interval wants a positive number of seconds, got \"%s\"",
                          argv[i]);
                return -1;
            }
            o->status_interval = v;
        } else if (strcmp(a, "--restart") == 0) {
            o->restart = 1;
        } else if (strcmp(a, "--resume") == 0) {
            o->resume = 1;
        } else if (strcmp(a, "--more") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 100000000) {
                cli_error("--more wants a positive number of trials to add, got \"%s\"", argv[i]);
                return -1;
            }
            o->more = v;
        } else if (strcmp(a, "--executor") == 0 && i + 1 < argc) {
            o->executor = argv[++i];
            if (!trial_exec_known(o->executor)) {
                char names[128];
                trial_exec_names(names, sizeof names);
                cli_error("--executor wants %s, got \"%s\"", names, o->executor);
                return -1;
            }
        } else if (strcmp(a, "--allocation") == 0 && i + 1 < argc) {
            o->allocation = argv[++i];
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o->quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            cli_error("%s: unknown option %s (see tune %s --help)", argv[0], a, argv[0]);
            return -1;
        } else if (!*pos) {
            *pos = a;
        } else {
            cli_error("%s: unexpected argument \"%s\"", argv[0], a);
            return -1;
        }
    }
    return 0;
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
    for (const char *p = path; *p;) {
        const char *e = strchr(p, ':');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        snprintf(out, n, "%.*s/%s", (int)len, p, prog);
        if (len && access(out, X_OK) == 0) return 0;
        if (!e) break;
        p = e + 1;
    }
    return -1;
}

/* ---- relative paths -------------------------------------------------------------- */
/* Trials run in their own directories (tune_results/NAME/trial_NNNNN), so a program or a
 * script named by a relative path ("./train.sh", "python3 train.py") is not found there:
 * every trial fails at once. Said before anything runs, with the absolute path to use. */
void cli_warn_relative_paths(const space_t *sp, const char *file)
{
    static const char *const exts[] = {".py", ".sh", ".R",  ".r",  ".jl",
                                       ".js", ".pl", ".rb", ".lua"};
    const space_settings_t *set = space_settings(sp);
    for (int i = 0; i < set->command_argc; i++) {
        const char *a = set->command[i];
        if (!*a || a[0] == '/' || a[0] == '-' || a[0] == '~' || strchr(a, '{')) continue;
        int looks = i == 0 ? strchr(a, '/') != NULL : 0;
        size_t n = strlen(a);
        for (size_t k = 0; i > 0 && k < sizeof exts / sizeof exts[0]; k++) {
            size_t e = strlen(exts[k]);
            looks |= n > e && strcmp(a + n - e, exts[k]) == 0;
        }
        if (!looks) continue;
        /* Where the user probably means it: the current directory, else the file's. */
        char abs[PATH_MAX], guess[PATH_MAX * 2];
        const char *slash = strrchr(file, '/');
        if (realpath(a, abs)) {
            snprintf(guess, sizeof guess, "%s", abs);
        } else if (slash) {
            snprintf(guess, sizeof guess, "%.*s/%s", (int)(slash - file), file, a);
            if (realpath(guess, abs)) snprintf(guess, sizeof guess, "%s", abs);
        } else {
            snprintf(guess, sizeof guess, "/absolute/path/to/%s", a);
        }
        fprintf(stderr,
                "tune: warning: %s: command[%d] \"%s\" is a relative path, but each trial runs in "
                "its own directory (tune_results/%s/trial_NNNNN), where it will not exist: use "
                "its absolute path (\"%s\")\n",
                file, i, a, set->name, guess);
    }
}

/* ---- the live view -------------------------------------------------------------- */
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
    int noticed;
    const char *const *metric_columns;
    size_t nmetric_columns;
};

static void on_report(void *ud, const sched_snapshot_t *snap, int final)
{
    struct run_view *v = ud;
    if (snap->notice && snap->notice[0] && !v->noticed) {
        /* Once, as soon as it is known, and loudly: on stderr, whatever the table does. */
        v->noticed = 1;
        fprintf(stderr, "tune: %s\n", snap->notice);
        if (v->tty) v->last_lines = 0;
    }
    if (v->quiet) return;
    cli_table_opts_t o = {.params = v->params,
                          .nparams = v->nparams,
                          .time_attr = v->time_attr,
                          .show_exec = v->show_exec,
                          .metric_columns = v->metric_columns,
                          .nmetric_columns = v->nmetric_columns};
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
        /* Redraw in place: back to the start of the previous block, clear below. */
        if (v->last_lines > 0) printf("\033[%dA\r\033[J", v->last_lines);
        fputs(text, stdout);
        fflush(stdout);
        v->last_lines = 0;
        for (const char *p = text; *p; p++)
            v->last_lines += *p == '\n';
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

/* ---- running -------------------------------------------------------------------- */

/* What `tune run` holds while an experiment runs, released in one place (run_close). */
struct run {
    trial_exec_t *tx;   /* where trials run */
    sched_pool_t *pool; /* the slices handed out */
    cli_folder_t folder;
    sched_exec_t *sx; /* the loop's executor over tx */
    struct run_view view;
};

static void run_close(struct run *r)
{
    free(r->view.params);
    sched_exec_free(r->sx);
    trial_exec_free(r->tx);
    cli_folder_close(&r->folder);
    sched_pool_free(r->pool);
}

/* What the settings say that tune checks before anything else: the checkpoint copy mode,
 * the reporter's columns, relative paths (warned), the meaning of time_budget_s (noted).
 * Returns 0 or an exit code (printed); *copy_bytes from TUNE_CHECKPOINT_COPY. */
static int check_settings(const space_t *sp, const char *file, int *copy_bytes)
{
    const space_settings_t *set = space_settings(sp);
    /* How a PBT exploit copies its donor's checkpoint: hard links (the default: free), or
     * bytes, for trials that rewrite a checkpoint file in place (a link would change too). */
    const char *copy = getenv("TUNE_CHECKPOINT_COPY");
    if (copy && *copy && strcmp(copy, "link") != 0 && strcmp(copy, "bytes") != 0) {
        cli_error("TUNE_CHECKPOINT_COPY=%s: say link (a PBT exploit hard-links its donor's "
                  "checkpoint, the default) or bytes (copies it, for trials that rewrite their "
                  "checkpoint files in place)",
                  copy);
        return CLI_EXIT_USAGE;
    }
    *copy_bytes = copy && strcmp(copy, "bytes") == 0;
    for (char **c = set->parameter_columns; c && *c; c++) {
        size_t np = space_num_params(sp), i = 0;
        const char *cand[256];
        for (i = 0; i < np && i < 256; i++)
            cand[i] = space_param_name(sp, i);
        for (i = 0; i < np && strcmp(cand[i], *c) != 0; i++)
            ;
        if (i < np) continue;
        const char *dym = space_suggest(*c, cand, np < 256 ? np : 256);
        cli_error("%s: reporter.parameter_columns: \"%s\" is not a parameter of \"space\"%s%s%s",
                  file, *c, dym ? " (did you mean \"" : "", dym ? dym : "", dym ? "\"?)" : "");
        return CLI_EXIT_USAGE;
    }
    cli_warn_relative_paths(sp, file);
    if (set->time_budget_s > 0)
        fprintf(stderr,
                "tune: note: \"time_budget_s\" (%g s) now limits the whole experiment, as in Ray "
                "Tune: no new trials after it, running ones are stopped. For the old per-trial "
                "limit use \"trial_time_limit_s\".\n",
                set->time_budget_s);
    return 0;
}

/* Puts tune's own directory (self) first in PATH, so that trials find tune-train built
 * beside it, and checks that the program exists: otherwise every trial would fail.
 * Returns 0 or an exit code (printed). */
static int find_program(const space_settings_t *set, const char *self, const char *file)
{
    char path_env[8192], found[PATH_MAX];
    const char *old_path = getenv("PATH");
    snprintf(path_env, sizeof path_env, "%s%s%s", self, old_path ? ":" : "",
             old_path ? old_path : "");
    setenv("PATH", path_env, 1);
    if (strchr(set->command[0], '{') == NULL &&
        find_in_path(set->command[0], found, sizeof found)) {
        cli_error("%s: command[0]: cannot find program \"%s\" (not in PATH, nor beside tune in %s)",
                  file, set->command[0], self);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* The executor the flags or the file name, from trial/'s table, with the trial's request
 * checked against what it has before anything runs (Slurm: partitions, an allocation);
 * *cap then says what the pool may hand out. Returns 0 or an exit code (printed). */
static int open_executor(const space_t *sp, const struct run_opts *ro, const char *self,
                         const char *file, trial_exec_t **tx, trial_capacity_t *cap)
{
    const space_settings_t *set = space_settings(sp);
    char err[1024];
    trial_exec_conf_t c = {
        .name = ro->executor, .space = sp, .allocation = ro->allocation, .bindir = self};
    if (trial_exec_open(&c, tx, err, sizeof err) != 0) {
        cli_error("%s", err);
        return CLI_EXIT_USAGE;
    }
    if (trial_exec_check(*tx, 1, set->gpus_per_trial, set->cpus_per_trial, cap, err, sizeof err) !=
        0) {
        cli_error("%s: executor %s: %s", file, trial_exec_name(*tx), err);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* The pool of slices: the executor's numbers when it has them (cap), else --gpus or the
 * devices detected, and --cpus. Returns 0 or an exit code (printed). */
static int make_pool(const space_t *sp, const struct run_opts *ro, const trial_capacity_t *cap,
                     const char *file, sched_pool_t **out)
{
    const space_settings_t *set = space_settings(sp);
    char err[1024];
    int gpu_ids[256];
    int ngpus = ro->ngpus, cpus = ro->cpus;
    memcpy(gpu_ids, ro->gpu_ids, sizeof gpu_ids);
    unsigned char *peer = NULL;
    if (cap->known) {
        /* Slurm's numbers: an allocation's GPUs and cores, or, with a job per trial, room
         * for as many trials as may run at once (Slurm queues and places them; the pool's
         * device ids are only counters then, Slurm sets CUDA_VISIBLE_DEVICES). */
        int slots = set->max_concurrent > 0 ? set->max_concurrent : (int)space_num_trials(sp);
        if (slots > 256) slots = 256;
        ngpus = cap->gpus >= 0 ? cap->gpus : (int)ceil(set->gpus_per_trial) * slots;
        if (ngpus > 256) ngpus = 256;
        cpus = cap->cpus >= 0 ? cap->cpus : set->cpus_per_trial * slots;
        for (int i = 0; i < ngpus; i++)
            gpu_ids[i] = i;
    } else if (ngpus < 0) {
        peer = calloc(256 * 256, 1);
        ngpus = sched_detect_gpus(gpu_ids, 256, peer);
    }
    if (sched_pool_new(gpu_ids, ngpus, cpus, out, err, sizeof err) != 0) {
        cli_error("%s", err);
        free(peer);
        return CLI_EXIT_USAGE;
    }
    for (int i = 0; peer && i < ngpus; i++)
        for (int j = 0; j < ngpus; j++)
            if (peer[i * 256 + j]) sched_pool_set_peer(*out, i, j);
    free(peer);
    if (sched_pool_check(*out, set->gpus_per_trial, set->cpus_per_trial, err, sizeof err) != 0) {
        cli_error("%s: resources: %s", file, err);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* Records the run's start: a new experiment's row (*exp_id 0: set), or a resumed one
 * marked RUNNING, with what an interrupted run left in the executor cancelled first (jobs
 * of a tune killed while its srun waited in Slurm's queue would compete with the resumed
 * trials). Returns 0 or an exit code (printed). */
static int record_start(const space_t *sp, store_t *st, trial_exec_t *tx, const char *results_dir,
                        int64_t *exp_id)
{
    const char *name = space_settings(sp)->name;
    char err[1024];
    if (*exp_id == 0) {
        if (cli_experiment_create(st, sp, space_settings_json(sp), results_dir, wall_now(), exp_id,
                                  err, sizeof err) == 0)
            return 0;
        cli_error("%s", err);
        return CLI_EXIT_FAIL;
    }
    if (store_experiment_set_status(st, *exp_id, "RUNNING", wall_now(), err, sizeof err) != 0) {
        cli_error("%s", err);
        return CLI_EXIT_FAIL;
    }
    int left = trial_exec_cleanup(tx, name, err, sizeof err);
    if (left < 0)
        cli_error("could not look for leftover jobs of %s: %s", name, err);
    else if (left > 0)
        fprintf(stderr, "tune: cancelled %d leftover %s job%s of %s\n", left, trial_exec_name(tx),
                left == 1 ? "" : "s", name);
    return 0;
}

/* The live view's settings: the parameters it shows (the reporter's parameter_columns, in
 * their order, else every parameter), its metric columns and how often it prints. v->params
 * is new (the caller frees it). */
static void view_init(struct run_view *v, const space_t *sp, const struct run_opts *ro,
                      const trial_exec_t *tx)
{
    const space_settings_t *set = space_settings(sp);
    size_t np = space_num_params(sp);
    const char **params = calloc(np + 1, sizeof *params);
    for (size_t i = 0; params && i < np; i++)
        params[i] = space_param_name(sp, i);
    if (params && set->parameter_columns) {
        np = 0;
        for (char **c = set->parameter_columns; *c; c++)
            params[np++] = *c;
    }
    size_t nmc = 0;
    while (set->metric_columns && set->metric_columns[nmc])
        nmc++;
    double interval = ro->status_interval > 0      ? ro->status_interval
                      : set->status_interval_s > 0 ? set->status_interval_s
                                                   : 30;
    *v = (struct run_view){.tty = isatty(STDOUT_FILENO),
                           .quiet = ro->quiet,
                           .status_interval = interval,
                           .last_plain = -1e9,
                           .params = params,
                           .nparams = params ? np : 0,
                           .time_attr = set->sched.time_attr,
                           /* a job/node column where the executor names where trials run */
                           .show_exec = trial_exec_names_trials(tx),
                           .metric_columns = (const char *const *)set->metric_columns,
                           .nmetric_columns = nmc};
}

/* Records and prints how the run ended: the store failed (rc != 0, err), or the loop's
 * result res. Returns the exit code. */
static int report_end(store_t *st, const space_t *sp, int64_t exp_id, const struct run_opts *ro,
                      const char *file, const struct run *r, int rc, const char *err,
                      const sched_run_result_t *res)
{
    const space_settings_t *set = space_settings(sp);
    const char *db = ro->db, *name = set->name;
    if (rc != 0) {
        cli_error("experiment %s stopped: %s", name, err);
        char e2[256];
        store_experiment_set_status(st, exp_id, "INTERRUPTED", wall_now(), e2, sizeof e2);
        fprintf(stderr,
                "Everything recorded before the stop is in %s; continue with `tune resume "
                "%s --db %s` once the cause is fixed.\n",
                db, name, db);
        return CLI_EXIT_FAIL;
    }
    cli_run_record_end(st, exp_id, res, wall_now());
    cli_run_print_ended(name, res, set, space_num_trials(sp), "Finished");
    printf("Results are in %s. More: tune best %s --db %s | tune trials %s --db %s | tune "
           "query \"SELECT * FROM trial_summary\" --db %s\n",
           db, name, db, name, db, db);
    if (res->buffered)
        printf("Warning: %zu trial%s (first trial_%05lld): results arrived only at exit: the "
               "program buffers its output; flush after "
               "each line (print(..., flush=True)) or set PYTHONUNBUFFERED=1. Until then "
               "the scheduler cannot stop anything in time.\n",
               res->buffered, res->buffered == 1 ? "" : "s", (long long)res->buffered_trial);
    if (res->bad_example[0])
        printf("Warning: result lines that are not JSON were not recorded, e.g. from "
               "trial_%05lld: %s\n  Print each result as one JSON object per line: "
               "print(json.dumps({...}), flush=True) (or tune_report.report(...)); a Python "
               "dict printed as is has single quotes and is not JSON.\n",
               (long long)res->bad_trial, res->bad_example);
    if (res->notice[0] && !r->view.noticed) fprintf(stderr, "tune: %s\n", res->notice);
    char where[sizeof r->folder.path + 80], ff[2 * PATH_MAX], nm[PATH_MAX + 200];
    snprintf(where, sizeof where, " and the stderr.log in each trial's directory under %s",
             r->folder.path);
    snprintf(ff, sizeof ff,
             "Fix the cause (a relative path is looked up in each trial's own directory), "
             "then run again with --restart, or `tune resume %s --db %s` if the fix is "
             "outside space.json.",
             name, db);
    snprintf(nm, sizeof nm,
             "Then run it again under a fresh name with `tune run %s --restart` (the "
             "stored experiment keeps its space.json).",
             file);
    cli_run_fix_t fix = {.failed_where = where, .fail_fast = ff, .no_metric = nm, .stderr_logs = 1};
    int exit_code = cli_run_outcome(st, exp_id, name, db, res, &fix);
    if (res->interrupted) printf("Continue with: tune resume %s --db %s\n", name, db);
    return exit_code;
}

/* Runs (exp_id == 0: creates) the experiment described by sp: settings checked, the
 * program found, an executor and a pool made, the folder taken and locked, the start
 * recorded, the loop run, the end recorded and printed; everything released in one place. */
static int execute(space_t *sp, store_t *st, int64_t exp_id, const struct run_opts *ro,
                   const char *file)
{
    const space_settings_t *set = space_settings(sp);
    struct run r = {.folder = {.parent = -1, .fd = -1, .lock = -1}};
    char self[PATH_MAX], err[1024];
    self_dir(self, sizeof self);
    trial_capacity_t cap = {0};
    int copy_bytes = 0, resume = exp_id != 0, rc;
    if ((rc = check_settings(sp, file, &copy_bytes)) != 0) goto done;
    if ((rc = find_program(set, self, file)) != 0) goto done;
    if ((rc = open_executor(sp, ro, self, file, &r.tx, &cap)) != 0) goto done;
    if ((rc = make_pool(sp, ro, &cap, file, &r.pool)) != 0) goto done;
    /* The experiment's folder, tune_results/NAME beside the database, owned by this
     * database (cli/folder.c) and locked: one tune process writes an experiment at a
     * time, and the kernel releases the lock however tune ends (even kill -9). Absolute,
     * because trials run in their own directories and get TUNE_TRIAL_DIR. */
    if ((rc = cli_folder_take(st, ro->db, set->name, exp_id, &r.folder)) != 0) goto done;
    if ((rc = record_start(sp, st, r.tx, r.folder.path, &exp_id)) != 0) goto done;
    view_init(&r.view, sp, ro, r.tx);
    if (trial_sched_exec_new(r.tx, sp, &r.sx, err, sizeof err) != 0) {
        cli_error("%s", err);
        rc = CLI_EXIT_FAIL;
        goto done;
    }
    sched_run_opts_t so = {.space = sp,
                           .store = st,
                           .experiment_id = exp_id,
                           .resume = resume,
                           .exec = r.sx,
                           .pool = r.pool,
                           .results_dir = r.folder.path,
                           .report_every_s = r.view.tty ? 0.25 : 1.0,
                           /* No table shows more: with more trials than this, a finished
                            * trial the table cannot show is forgotten and a pending one has
                            * no record until it is needed, so that a run (or `tune extend`)
                            * of millions of trials starts at once in bounded memory. */
                           .report_trials = CLI_REPORT_TRIALS,
                           .copy_bytes = copy_bytes,
                           .report = on_report,
                           .report_ud = &r.view,
                           .handle_signals = 1,
                           .wake_fd = -1};
    sched_run_result_t res;
    int run_rc = sched_run(&so, &res, err, sizeof err);
    /* The run is over and its trials are stopped: what is left is recording how it ended.
     * A stop signal now (a second Ctrl-C, or one that crossed the end) would kill tune in
     * the middle of that, with a default exit status: it waits, blocked, until tune exits
     * with the status it chose. */
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigprocmask(SIG_BLOCK, &stops, NULL);
    sched_exec_free(r.sx);
    r.sx = NULL;
    rc = report_end(st, sp, exp_id, ro, file, &r, run_rc, err, &res);
    fflush(stdout);
done:
    run_close(&r);
    return rc;
}

struct exp_row {
    int found;
    int64_t id;
    int64_t num_trials;
    char status[32];
    char *space_json;
};

static int exp_row_cb(void *ud, int ncol, const char *const *names, const char *const *values,
                      const int *types)
{
    (void)names;
    (void)types;
    struct exp_row *r = ud;
    if (ncol < 3) return 1;
    r->found = 1;
    r->id = values[0] ? strtoll(values[0], NULL, 10) : 0;
    snprintf(r->status, sizeof r->status, "%s", values[1] ? values[1] : "");
    r->space_json = values[2] ? strdup(values[2]) : NULL;
    r->num_trials = ncol > 3 && values[3] ? strtoll(values[3], NULL, 10) : 0;
    return 1;
}

static int find_exp(store_t *st, const char *name, struct exp_row *r)
{
    memset(r, 0, sizeof *r);
    char err[512];
    const char *b[] = {name};
    if (store_query(st,
                    "SELECT id, status, space_json, num_trials FROM experiments WHERE name = ?1", b,
                    1, exp_row_cb, r, err, sizeof err) != 0) {
        cli_error("%s", err);
        return -1;
    }
    return 0;
}

/* Prints what differs between the stored space.json and the file on disk, key by key
 * (and parameter by parameter under "space"), to stderr. */
static void print_space_diff(const char *stored, const char *disk)
{
    cJSON *a = cJSON_Parse(stored), *b = cJSON_Parse(disk);
    if (!cJSON_IsObject(a) || !cJSON_IsObject(b)) {
        fprintf(stderr, "  (the texts differ)\n");
        goto out;
    }
    int shown = 0;
    for (int pass = 0; pass < 2; pass++) {
        cJSON *x = pass ? b : a, *y = pass ? a : b;
        for (cJSON *k = x->child; k; k = k->next) {
            cJSON *o = cJSON_GetObjectItemCaseSensitive(y, k->string);
            if (pass && o) continue; /* both have it: compared in the first pass */
            if (o && cJSON_Compare(k, o, 1)) continue;
            if (o && strcmp(k->string, "space") == 0 && cJSON_IsObject(k) && cJSON_IsObject(o)) {
                /* One line per parameter that changed. */
                for (int p2 = 0; p2 < 2; p2++) {
                    cJSON *xs = p2 ? o : k, *ys = p2 ? k : o;
                    for (cJSON *q = xs->child; q; q = q->next) {
                        cJSON *r = cJSON_GetObjectItemCaseSensitive(ys, q->string);
                        if ((p2 && r) || (r && cJSON_Compare(q, r, 1))) continue;
                        cJSON *sv = p2 ? r : q, *dv = p2 ? q : r;
                        char *s1 = sv ? cJSON_PrintUnformatted(sv) : NULL;
                        char *s2 = dv ? cJSON_PrintUnformatted(dv) : NULL;
                        fprintf(stderr, "  space.%.60s: stored %.120s, file %.120s\n", q->string,
                                s1 ? s1 : "(none)", s2 ? s2 : "(none)");
                        free(s1);
                        free(s2);
                        shown++;
                    }
                }
                continue;
            }
            cJSON *sv = pass ? o : k, *dv = pass ? k : o;
            char *s1 = sv ? cJSON_PrintUnformatted(sv) : NULL;
            char *s2 = dv ? cJSON_PrintUnformatted(dv) : NULL;
            fprintf(stderr, "  %.60s: stored %.120s, file %.120s\n", k->string, s1 ? s1 : "(none)",
                    s2 ? s2 : "(none)");
            free(s1);
            free(s2);
            shown++;
        }
    }
    if (!shown) fprintf(stderr, "  (only spacing or order differs)\n");
out:
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static int set_num_trials_row(store_t *st, int64_t exp_id, size_t n)
{
    char id[32], num[32], err[512];
    snprintf(id, sizeof id, "%lld", (long long)exp_id);
    snprintf(num, sizeof num, "%zu", n);
    const char *b[] = {num, id};
    if (store_query(st, "UPDATE experiments SET num_trials = ?1 WHERE id = ?2", b, 2, NULL, NULL,
                    err, sizeof err) != 0) {
        cli_error("cannot record the new number of trials: %s", err);
        return -1;
    }
    return 0;
}

/* Runs a stored experiment from the space.json stored with it (never from a file on disk
 * that may have changed since), with `more` trials added to it first. */
static int run_stored(store_t *st, const struct exp_row *ex, const char *name,
                      const struct run_opts *ro, long more)
{
    char label[300], err[1024];
    snprintf(label, sizeof label, "%s (stored space.json)", name);
    const char *text = ex->space_json ? ex->space_json : "";
    space_t *sp = NULL;
    if (space_parse(text, strlen(text), label, &sp, err, sizeof err) != 0 ||
        space_rename(sp, name, err, sizeof err) != 0) {
        cli_error("%s", err);
        space_free(sp);
        return CLI_EXIT_FAIL;
    }
    /* The stored count, which earlier --more runs may have grown past the file's. */
    size_t n = space_num_trials(sp);
    if (ex->num_trials > 0 && (size_t)ex->num_trials > n) n = (size_t)ex->num_trials;
    if (more > 0) n += (size_t)more;
    if (space_set_num_trials(sp, n, err, sizeof err) != 0) {
        cli_error("%s", err);
        space_free(sp);
        return CLI_EXIT_USAGE;
    }
    if (more > 0) {
        if (set_num_trials_row(st, ex->id, n) != 0) {
            space_free(sp);
            return CLI_EXIT_FAIL;
        }
        printf("Adding %ld trial%s to %s: trials %zu..%zu continue the seed's sequence.\n", more,
               more == 1 ? "" : "s", name, n - (size_t)more, n - 1);
    }
    int rc = execute(sp, st, ex->id, ro, label);
    space_free(sp);
    return rc;
}

static int ask_yes(const char *question)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) return 0;
    printf("%s [Y/n] ", question);
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin)) return 0;
    return line[0] == '\n' || line[0] == 'y' || line[0] == 'Y';
}

int cli_cmd_run(int argc, char **argv)
{
    if (cli_help(argc, argv, run_usage)) return CLI_EXIT_OK;
    struct run_opts ro;
    const char *file;
    if (parse_run_opts(argc, argv, &ro, &file) != 0) return CLI_EXIT_USAGE;
    if (!file) {
        cli_error("run: which experiment file? usage: tune run SPACE.json");
        return CLI_EXIT_USAGE;
    }
    char err[1024];
    space_t *sp = NULL;
    if (space_load(file, &sp, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return CLI_EXIT_USAGE;
    }
    store_t *st = NULL;
    if (store_open(ro.db, 0, &st, err, sizeof err) != 0) {
        cli_error("%s", err);
        space_free(sp);
        return CLI_EXIT_FAIL;
    }
    const char *name = space_settings(sp)->name;
    struct exp_row ex;
    int rc = CLI_EXIT_FAIL;
    int64_t exp_id = 0;
    if (find_exp(st, name, &ex) != 0) goto out;
    if (ro.more > 0) {
        /* --more grows the stored experiment (its own space.json, its seed's sequence). */
        if (!ex.found || ro.restart) {
            cli_error("--more adds trials to an experiment that exists%s%s%s%s",
                      ro.restart ? " (not with --restart)" : "; \"", ro.restart ? "" : name,
                      ro.restart ? "" : "\" is not in ", ro.restart ? "" : ro.db);
            rc = CLI_EXIT_USAGE;
            goto out;
        }
        if (strcmp(ex.space_json ? ex.space_json : "", space_text(sp)) != 0) {
            fprintf(stderr,
                    "tune: %s differs from the space.json stored with experiment \"%s\"; the "
                    "added trials use the stored one. Differences:\n",
                    file, name);
            print_space_diff(ex.space_json ? ex.space_json : "", space_text(sp));
        }
        rc = run_stored(st, &ex, name, &ro, ro.more);
        goto out;
    }
    if (ex.found) {
        int finished = strcmp(ex.status, "FINISHED") == 0;
        char q[512];
        snprintf(q, sizeof q, "Experiment \"%s\" exists in %s and did not finish (%s). Resume it?",
                 name, ro.db, ex.status);
        if (ro.restart) {
            char fresh[256];
            for (int k = 2; k < 100000; k++) {
                snprintf(fresh, sizeof fresh, "%s-%d", name, k);
                struct exp_row e2;
                if (find_exp(st, fresh, &e2) != 0) goto out;
                free(e2.space_json);
                if (!e2.found) break;
            }
            /* The results directory and the trials' TUNE_EXPERIMENT follow the new name. */
            if (space_rename(sp, fresh, err, sizeof err) != 0) {
                cli_error("%s", err);
                rc = CLI_EXIT_USAGE;
                goto out;
            }
        } else if (!finished && (ro.resume || ask_yes(q))) {
            exp_id = ex.id;
        } else {
            if (finished)
                cli_error("experiment \"%s\" already exists in %s and finished; pass --restart to "
                          "run it again under a new name, or use another --db",
                          name, ro.db);
            else
                cli_error("experiment \"%s\" already exists in %s and did not finish (%s): resume "
                          "it with `tune resume %s` (or tune run --resume), or pass --restart to "
                          "start a fresh experiment under a new name",
                          name, ro.db, ex.status, name);
            goto out;
        }
    }
    if (exp_id != 0) {
        /* Resuming: the stored experiment, as durability.md promises. */
        if (strcmp(ex.space_json ? ex.space_json : "", space_text(sp)) != 0) {
            fprintf(stderr,
                    "tune: %s differs from the space.json stored with experiment \"%s\"; resuming "
                    "with the stored one (--more N adds trials; --restart runs the file as a new "
                    "experiment). Differences:\n",
                    file, name);
            print_space_diff(ex.space_json ? ex.space_json : "", space_text(sp));
        }
        rc = run_stored(st, &ex, name, &ro, 0);
        goto out;
    }
    rc = execute(sp, st, exp_id, &ro, file);
out:
    free(ex.space_json);
    store_close(st);
    space_free(sp);
    return rc;
}

/* `tune resume NAME` and `tune extend NAME N` (more > 0). */
static int resume_named(int argc, char **argv, int extend)
{
    if (cli_help(argc, argv, run_usage)) return CLI_EXIT_OK;
    struct run_opts ro;
    const char *name;
    long more = 0;
    if (extend) {
        /* NAME N: the count is the second positional argument (option values skipped). */
        static const char *const with_value[] = {
            "--db",         "--gpus", "--cpus",           "--executor",
            "--allocation", "--more", "--status-interval"};
        int at = -1, pos = 0;
        for (int i = 1; i < argc; i++) {
            int takes = 0;
            for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
                takes |= strcmp(argv[i], with_value[k]) == 0;
            if (takes) {
                i++;
                continue;
            }
            if (argv[i][0] == '-') continue;
            if (++pos == 2) {
                at = i;
                break;
            }
        }
        char *end = NULL;
        if (at >= 1) more = strtol(argv[at], &end, 10);
        if (at < 1 || *end || more < 1 || more > 100000000) {
            cli_error("extend: usage: tune extend NAME N (N: how many trials to add, >= 1)");
            return CLI_EXIT_USAGE;
        }
        char *saved[64];
        int n = 0;
        for (int i = 0; i < argc && n < 63; i++)
            if (i != at) saved[n++] = argv[i];
        saved[n] = NULL;
        if (parse_run_opts(n, saved, &ro, &name) != 0) return CLI_EXIT_USAGE;
    } else if (parse_run_opts(argc, argv, &ro, &name) != 0) {
        return CLI_EXIT_USAGE;
    }
    if (!name) {
        cli_error("%s: which experiment? usage: tune %s NAME%s (see tune ls)", argv[0], argv[0],
                  extend ? " N" : "");
        return CLI_EXIT_USAGE;
    }
    if (extend)
        more += ro.more;
    else
        more = ro.more;
    char err[1024];
    store_t *st = NULL;
    if (store_open(ro.db, 0, &st, err, sizeof err) != 0) {
        cli_error("%s", err);
        return CLI_EXIT_FAIL;
    }
    struct exp_row ex;
    int rc = CLI_EXIT_FAIL;
    if (find_exp(st, name, &ex) != 0) goto out;
    if (!ex.found) {
        cli_error("no experiment named \"%s\" in %s (see tune ls --db %s)", name, ro.db, ro.db);
        goto out;
    }
    if (more == 0 && strcmp(ex.status, "FINISHED") == 0) {
        printf("Experiment %s already finished; nothing to resume (tune extend %s N adds "
               "trials).\n",
               name, name);
        rc = CLI_EXIT_OK;
        goto out;
    }
    rc = run_stored(st, &ex, name, &ro, more);
out:
    free(ex.space_json);
    store_close(st);
    return rc;
}

int cli_cmd_resume(int argc, char **argv)
{
    return resume_named(argc, argv, 0);
}

int cli_cmd_extend(int argc, char **argv)
{
    return resume_named(argc, argv, 1);
}
