/* cli: the `tune` command. The only module that prints or exits; it turns files and
 * flags into calls of search, store and scheduler, and their answers into tables,
 * JSON and CSV. Internal header shared by the cli's files; nothing else includes it. */
#ifndef TUNE_CLI_H
#define TUNE_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "scheduler/sched.h"
#include "search/render.h"
#include "search/settings.h"
#include "search/space.h"
#include "store/store.h"

/* Exit statuses: 0 done (no trial ended in ERROR), 1 tune itself failed, 2 bad usage or
 * bad input file (a metric no trial reports included), 3 the experiment ran but trials
 * ended in ERROR (fail_fast included), 130 interrupted. README, "Exit status". */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_TRIALS 3
#define CLI_EXIT_INTERRUPTED 130

/* The most trials a live table or status block of `tune run` lists (the rest are counted
 * by status): the scheduler keeps records of no more finished trials than that. */
#define CLI_REPORT_TRIALS 1000

/* A result set held in memory (query output is small enough for that). */
typedef struct cli_rows {
    int ncol;
    char **names;
    size_t nrows, cap;
    char **vals; /* nrows * ncol, NULL for SQL NULL */
    int *types;  /* STORE_COL_* per cell */
} cli_rows_t;

void cli_rows_free(cli_rows_t *r);
/* Runs sql on st into *r; returns store_query's code (err filled). */
int cli_rows_query(store_t *st, const char *sql, const char *const *binds, int nbinds,
                   cli_rows_t *r, char *err, size_t errlen);
/* Printers: aligned text table, JSON array of objects, CSV with a header. */
void cli_print_table(FILE *f, const cli_rows_t *r);
void cli_print_csv(FILE *f, const cli_rows_t *r);
/* Cell as JSON: numbers as numbers, text that is a JSON object/array when `parse_json`
 * names that column, else a string; NULL as null. Caller cJSON_Delete()s the array. */
cJSON *cli_rows_json(const cli_rows_t *r, const char *const *json_cols);
/* A column's text as a JSON number (null for NaN/Inf or text that is no number). */
cJSON *cli_json_number(const char *text);
/* Prints j laid out for reading, numbers exactly (space_json_print_pretty). */
void cli_print_json(FILE *f, cJSON *j);

/* Live table: renders a snapshot into buf (at most `rows` lines, `cols` wide; what gives
 * way when it is narrow is table.c's ladder). */
typedef struct cli_table_opts {
    int rows, cols;            /* terminal size; 0 = unlimited */
    const char *const *params; /* parameter names for columns */
    size_t nparams;
    const char *time_attr;
    int show_exec; /* show the executor id/node column */
    /* The reporter's metric_columns (values in each view's columns[]); none if 0. */
    const char *const *metric_columns;
    size_t nmetric_columns;
    /* Without a metric and metric_columns: each snapshot trial's last result as JSON text,
     * indexed as snap->trials (NULL where none; the array itself may be NULL). Its numbers
     * are shown, since there is no metric to show. */
    const char *const *last_results;
    /* The experiment's settings, or NULL. With several objectives and last_results the
     * table shows each objective's last value, the front marker and the size of the
     * Pareto front over the snapshot's trials (front.h), computed when it is drawn. */
    const space_settings_t *settings;
} cli_table_opts_t;
/* Returns a malloc'd NUL-terminated block; caller frees. */
char *cli_render_status(const sched_snapshot_t *s, const cli_table_opts_t *o);

/* lastseen.c: the last result of each trial of a live table's snapshots (its
 * last_results), kept by trial number (ascending) with the number of results it was read
 * at, and read from st again only when that changed. Zero it, set st, exp_id and want;
 * cli_last_free releases what it read. */
typedef struct cli_last {
    store_t *st;
    int64_t exp_id;
    int want; /* read at all; cleared when a read fails (the table goes on without) */
    struct cli_last_seen {
        int64_t no, iters;
        char *json;
    } * seen;
    size_t n;
} cli_last_t;
/* The last result of each trial of snap (JSON text, indexed as snap->trials; NULL where
 * none), the trials with results not read yet read in one query. Returns a new array (free
 * it; its strings are v's, valid until the next call), or NULL when v does not want them,
 * there are none or no memory. */
const char **cli_last_results(cli_last_t *v, const sched_snapshot_t *snap);
void cli_last_free(cli_last_t *v); /* NULL-safe; v can be used again */

/* A metric or setting for people: 5 significant digits (4 in exponent form when tiny or
 * huge), "-" for NaN (no value). The table, show and plot all print numbers this way. */
void cli_fmt_num(double v, char *out, size_t n);

/* run.c: what `tune run`, `resume` and `extend` were told (parsed from their flags). */
struct cli_run_opts {
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
/* execute.c: runs (exp_id == 0: creates) the experiment sp describes, as ro says, and
 * prints its end; label names the space in messages. Returns the command's exit status. */
int cli_execute(struct space *sp, store_t *st, int64_t exp_id, const struct cli_run_opts *ro,
                const char *label);
/* Commands. argv[0] is the command name. */
int cli_cmd_run(int argc, char **argv);
int cli_cmd_resume(int argc, char **argv);
/* Warns on stderr about a program or script named by a relative path in the command
 * (trials run in their own directories): tune validate and tune run call it. */
struct space;
void cli_warn_relative_paths(const struct space *sp, const char *file);
/* `tune extend NAME N`: N more trials for a stored experiment, then runs them. */
int cli_cmd_extend(int argc, char **argv);
/* --db's value (looked for before any "--"), else $TUNE_DB when set and not empty, else
 * tune.db. */
const char *cli_db_path(int argc, char **argv);
int cli_cmd_validate(int argc, char **argv);
int cli_cmd_ls(int argc, char **argv);
int cli_cmd_trials(int argc, char **argv);
int cli_cmd_best(int argc, char **argv);
int cli_cmd_query(int argc, char **argv);
int cli_cmd_export(int argc, char **argv);
/* After the run (show.c, report.c): one trial, all curves in the terminal, the HTML report. */
int cli_cmd_show(int argc, char **argv);
int cli_cmd_plot(int argc, char **argv);
int cli_cmd_report(int argc, char **argv);
/* rm.c: deletes an experiment's rows and its results folder. */
int cli_cmd_rm(int argc, char **argv);

/* ---- folder.c: an experiment's results folder, tune_results/NAME beside its database, and
 * which database owns it (README, "Trials"; docs/durability.md, "Who owns a results
 * folder"). ---- */
enum {
    CLI_FOLDER_FOREIGN = 0, /* not this experiment's: why says whose it is */
    CLI_FOLDER_OURS,        /* its owner file names this database and experiment */
    CLI_FOLDER_MOVED,       /* ... and where this database was before it moved (or the folder
                             * was copied along with it): ours, its owner file to rewrite */
    CLI_FOLDER_LEGACY,      /* no owner file (an older tune's), and the row names it */
    CLI_FOLDER_UNCLAIMED    /* no owner file and nothing in it: anyone's to claim */
};
typedef struct cli_folder {
    int parent;      /* the open folder it is in (tune_results); -1 */
    int fd;          /* the folder, open; -1 when it could not be opened (why says) */
    int lock;        /* its .tune.lock, held (cli_folder_lock); -1 */
    int owner;       /* CLI_FOLDER_* */
    char path[4400]; /* absolute, as trials are told it */
    char why[4800];  /* whose it is, when not this experiment's */
    char was[4400];  /* CLI_FOLDER_MOVED: where the database was */
} cli_folder_t;

/* tune run, resume and extend (exp_id 0: a new experiment): the experiment's folder beside
 * the database, made with its owner file when there is none (or, when there is none and
 * the database was moved away from its folder alone, the folder its row names), refused
 * when another database or experiment owns it, and locked for this process (its pid
 * written into the lock). The row's results_dir follows the folder. Returns 0 or an exit
 * status, the message printed; close f with cli_folder_close. */
int cli_folder_take(store_t *st, const char *db, const char *name, int64_t exp_id, cli_folder_t *f);
/* tune rm: the folders experiment exp_id may have, judged: the one beside the database and
 * the one its row names, if another. *n gets how many there are (0 to 2) in out, each closed
 * with cli_folder_close. -1 with err when the name could not be a folder's name (nothing is
 * looked at then) or the database's identity cannot be had. */
int cli_folder_find(store_t *st, const char *db, const char *name, int64_t exp_id,
                    cli_folder_t out[2], int *n, char *err, size_t errlen);
/* Takes f's .tune.lock: 0; 1 when a tune process holds it (pid, as it wrote it, in pid[n]);
 * -1 with errno. */
int cli_folder_lock(cli_folder_t *f, char *pid, size_t n);
/* Whether f is this experiment's to write into or delete: opened, and owned by this
 * database (its own, moved with it, or an older tune's the row names). */
int cli_folder_ours(const cli_folder_t *f);
/* Deletes folder f, `name` in f->parent, when it is still the folder that was judged
 * (dirs_remove: nothing beneath it followed). 0 or -1 with err. */
int cli_folder_remove(cli_folder_t *f, const char *name, char *err, size_t errlen);
void cli_folder_close(cli_folder_t *f); /* NULL-safe */

/* Text from a trial (its output, error, stderr tail, result strings) made safe for a
 * terminal: control characters and bytes that are not UTF-8 become \xNN (C1 controls
 * \u00NN), the rest is kept. Returns a new string (NULL when out of memory). */
char *cli_escape_mem(const char *s, size_t n);
char *cli_escape_text(const char *s); /* NULL is "" */

/* --help or -h among the arguments (before any "--"): prints usage on stdout and returns
 * 1 (the command then exits 0), else 0. */
int cli_help(int argc, char **argv, const char *usage);

/* Opens the database read-only, as every reading command does; prints the error and
 * returns NULL when it cannot. Closed with store_close. */
store_t *cli_open_ro(const char *db);

/* Records the experiment of space sp in st (its name, text, metric, scheduler and
 * settings) as tune run and tune simulate create it: settings is space_settings_json(sp),
 * perhaps with more in it (NULL: none), and is taken. results_dir: where its trials' folders
 * go ("" for none). */
int cli_experiment_create(store_t *st, const space_t *sp, cJSON *settings, const char *results_dir,
                          double now, int64_t *id, char *err, size_t errlen);

/* Prints "tune: " + message to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* An experiment's learning curves as a table (tables.c, docs/simulate.md): one CSV row
 * per (trial, iteration). With min_time > 0 only trials whose results reached min_time
 * (the scheduler's time_attr) are written; *kept and *left (may be NULL) get how many
 * trials were written and left out. Returns 0, or -1 with err filled. */
int cli_write_table(store_t *st, const char *name, double min_time, FILE *f, size_t *kept,
                    size_t *left, char *err, size_t errlen);
/* How a run of the loop ended (outcome.c), for tune run and tune simulate alike. A run
 * that ended for a mistake (a metric or time_attr no trial reports, fail_fast's identical
 * early failures) is recorded as INTERRUPTED and stays resumable. */
int cli_run_mistake(const sched_run_result_t *res);
/* Records the end of experiment exp_id at `when`: INTERRUPTED when it was interrupted or
 * ended for a mistake, else FINISHED (a failure to record it is printed). */
void cli_run_record_end(store_t *st, int64_t exp_id, const sched_run_result_t *res, double when);
/* The summary's first lines: "DONE NAME: N trials terminated (...), K failed." (DONE is
 * "Interrupted" or "Stopped" when the run was), why it ended early when a time budget or
 * a target ended it, and the best trial. trials: how many the experiment has. */
void cli_run_print_ended(const char *name, const sched_run_result_t *res,
                         const space_settings_t *set, size_t trials, const char *done);
/* What each command tells the user to do after a failure, in its own words. */
typedef struct cli_run_fix {
    const char *failed_where; /* after "N trials failed: see `tune trials NAME --db DB`" */
    const char *fail_fast;    /* after fail_fast's common error */
    const char *no_metric;    /* after the message about a metric no trial reports */
    int stderr_logs;          /* trials write a stderr.log, whose first lines fail_fast quotes */
} cli_run_fix_t;
/* Says why trials failed or the run stopped (the first failed trials and their errors on
 * stdout; fail_fast's common error or the missing metric on stderr, each with its fix) and
 * returns the exit status: 130 interrupted, else 2 for a metric no trial reports, 3 when
 * trials failed or fail_fast stopped the run, 0 otherwise. */
int cli_run_outcome(store_t *st, int64_t exp_id, const char *name, const char *db,
                    const sched_run_result_t *res, const cli_run_fix_t *fix);

/* `tune simulate` (simulate.c). */
int cli_cmd_simulate(int argc, char **argv);
/* `tune export NAME --table` (tables.c). */
int cli_cmd_export_table(int argc, char **argv);

#endif
