/* The composition root of a run: a space.json's settings checked, its program found, an
 * executor, a pool, the results folder taken and locked, the start recorded, the
 * scheduler's loop run with the live table drawn from its snapshots, and the end recorded
 * and printed; everything released in one place. Not for: which experiment to run or the
 * flags (run.c). */
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

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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
    const space_settings_t *settings; /* the table's objectives (cli_table_opts_t) */
    /* Without a metric and metric_columns, or with several objectives, the table shows
     * what the trials last reported (lastseen.c). */
    cli_last_t last;
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
                          .nmetric_columns = v->nmetric_columns,
                          .settings = v->settings};
    if (v->tty) {
        struct winsize ws;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) {
            o.rows = ws.ws_row - 1;
            o.cols = ws.ws_col;
        } else {
            o.rows = 40;
            o.cols = 160;
        }
        const char **last = cli_last_results(&v->last, snap);
        o.last_results = last;
        char *text = cli_render_status(snap, &o);
        free(last);
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
    const char **last = cli_last_results(&v->last, snap);
    o.last_results = last;
    char *text = cli_render_status(snap, &o);
    free(last);
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
    cli_last_free(&r->view.last);
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
static int open_executor(const space_t *sp, const struct cli_run_opts *ro, const char *self,
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
static int make_pool(const space_t *sp, const struct cli_run_opts *ro, const trial_capacity_t *cap,
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
 * their order, else every parameter), its metric columns, how often it prints, and where
 * it reads the trials' last results when there is no metric (st, experiment exp_id).
 * v->params is new (the caller frees it). */
static void view_init(struct run_view *v, const space_t *sp, const struct cli_run_opts *ro,
                      const trial_exec_t *tx, store_t *st, int64_t exp_id)
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
                           .nmetric_columns = nmc,
                           .settings = set,
                           /* several objectives: the front is ranked from last results */
                           .last = {.st = st,
                                    .exp_id = exp_id,
                                    .want = (!set->metric && nmc == 0) || set->nobjectives > 1}};
}

/* Records and prints how the run ended: the store failed (rc != 0, err), or the loop's
 * result res. Returns the exit code. */
static int report_end(store_t *st, const space_t *sp, int64_t exp_id, const struct cli_run_opts *ro,
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
int cli_execute(space_t *sp, store_t *st, int64_t exp_id, const struct cli_run_opts *ro,
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
    view_init(&r.view, sp, ro, r.tx, st, exp_id);
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
