/* store: the SQLite database that records experiments, trials, every result and every
 * scheduler decision. The schema lives in store/schema.sql (one file, documented in
 * docs/schema.md). Not for: deciding anything; store knows nothing of schedulers or
 * terminals, it only writes what it is told and runs queries it is given. */
#ifndef TUNE_STORE_H
#define TUNE_STORE_H

#include <stddef.h>
#include <stdint.h>

/* Error codes (negative). */
#define STORE_OK 0
#define STORE_ERR (-1)      /* generic SQLite failure; the message says which */
#define STORE_NOTFOUND (-2) /* no such experiment/trial */
#define STORE_BUSY (-3)     /* another writer holds the database */
#define STORE_FULL (-4)     /* disk full / file too large */
#define STORE_READONLY (-5) /* a write was attempted on a read-only handle or file */
#define STORE_NOTDB (-6)    /* the file is not a SQLite database */
#define STORE_VERSION (-7)  /* the database has a newer schema than this tune knows */
#define STORE_EXISTS (-8)   /* an experiment of that name exists already */

/* store_open flags */
#define STORE_OPEN_READONLY 1 /* for `tune query` and readers: writes are refused */

#define STORE_SCHEMA_VERSION 4

typedef struct store store_t;

/* Opens (creating when writable and missing) the database at `path`, in WAL mode, and
 * creates or checks the schema; a writable handle upgrades a version-1, -2 or -3 file to
 * version 4 (trials.suggested_by, the lineage table, decisions.criterion), a newer version
 * than this tune knows is refused. On success *out is a new
 * handle closed with store_close. */
int store_open(const char *path, int flags, store_t **out, char *err, size_t errlen);
void store_close(store_t *st); /* NULL-safe; commits nothing that was not committed */
/* The database's identity: a random 128-bit id as STORE_ID_LEN lowercase hex digits, kept
 * in meta ('database_id'). A results folder records it to say which database owns it
 * (cli/folder.c); a copy of the file carries the same id, so the folder also records where
 * its database was. Made on the first call on a writable handle, outside a batch (a file
 * made by an older tune gains it then); id gets STORE_ID_LEN + 1 bytes. STORE_NOTFOUND on a
 * read-only handle of a file that has none yet. */
#define STORE_ID_LEN 32
int store_identity(store_t *st, char *id, char *err, size_t errlen);
/* Lets SQLite's page cache grow to `mib` MiB (SQLite's default is 2 MiB). For a large
 * experiment written fast (a simulation of a million trials): a transaction that outgrows
 * the cache spills pages into the WAL before its commit and reads them back. A real run
 * keeps the default, its memory bounded. */
int store_set_cache(store_t *st, int mib, char *err, size_t errlen);

/* Writes are batched: everything between begin and commit is one transaction (the
 * scheduler commits once per turn of its event loop). The transaction begins at the
 * batch's first write, which takes the write lock (so a busy database is reported by that
 * write, never halfway through the batch); a batch that writes nothing costs nothing.
 * Writes outside a batch commit one by one. */
int store_begin(store_t *st, char *err, size_t errlen);
int store_commit(store_t *st, char *err, size_t errlen);

/* ---- experiments ---------------------------------------------------------------- */
typedef struct store_experiment {
    const char *name;
    const char *space_text;    /* space.json as the user wrote it */
    const char *settings_json; /* resolved settings (defaults filled in) */
    const char *metric;
    int mode_max;          /* 0 = min, 1 = max */
    const char *scheduler; /* "fifo", "asha", "median", "pbt" */
    const char *results_dir;
    int64_t num_trials;
    uint64_t seed;
} store_experiment_t;

/* Creates an experiment in status RUNNING; STORE_EXISTS if the name is taken. */
int store_experiment_create(store_t *st, const store_experiment_t *e, double now, int64_t *id_out,
                            char *err, size_t errlen);
/* Finds an experiment by name; STORE_NOTFOUND if there is none. */
int store_experiment_find(store_t *st, const char *name, int64_t *id_out, char *err, size_t errlen);
/* Deletes an experiment with its trials, params, results and decisions, in one
 * transaction (`tune rm`); not inside a batch. */
int store_experiment_delete(store_t *st, int64_t exp_id, char *err, size_t errlen);
/* status: "RUNNING", "FINISHED", "INTERRUPTED"; sets ended_at unless RUNNING. */
int store_experiment_set_status(store_t *st, int64_t exp_id, const char *status, double now,
                                char *err, size_t errlen);

/* ---- trials --------------------------------------------------------------------- */
/* Creates trial number `trial_no` (0-based, per experiment) in status PENDING, with its
 * configuration (a JSON object) also spread into the params table for SQL filtering. */
int store_trial_create(store_t *st, int64_t exp_id, int64_t trial_no, const char *name,
                       const char *config_json, const char *trial_dir, int64_t *id_out, char *err,
                       size_t errlen);

/* Which fields of store_trial_update_t to write. */
#define STORE_TU_STATUS 0x001
#define STORE_TU_EARLY_STOPPED 0x002
#define STORE_TU_SLICE 0x004
#define STORE_TU_STARTED 0x008
#define STORE_TU_ENDED 0x010
#define STORE_TU_EXIT 0x020  /* exit_code and exit_signal */
#define STORE_TU_ERROR 0x040 /* error and stderr_tail */
#define STORE_TU_PID 0x080
#define STORE_TU_EXEC_ID 0x100 /* executor's id (Slurm job/step) and node */
#define STORE_TU_ATTEMPT 0x200
#define STORE_TU_SUGGESTED 0x400 /* suggested_by */
#define STORE_TU_ALL 0x7ff       /* every field above */

typedef struct store_trial_update {
    unsigned fields;
    const char *status; /* "PENDING","RUNNING","PAUSED","TERMINATED","ERROR" */
    int early_stopped;
    const char *slice; /* e.g. "gpu:0,1" or "gpu:2@0.25" or "cpu" */
    double started_at, ended_at;
    int exit_code;   /* -1 if none */
    int exit_signal; /* 0 if none */
    const char *error;
    const char *stderr_tail;
    int64_t pid;
    const char *exec_id; /* "12345" or "12345.3" */
    const char *node;
    int attempt;
    /* what the configuration was chosen by, e.g. "TPE (optuna) at rung 3 from 31
     * observations", "points_to_evaluate[2]" (NULL for random search sampled up front) */
    const char *suggested_by;
} store_trial_update_t;

int store_trial_update(store_t *st, int64_t trial_id, const store_trial_update_t *u, char *err,
                       size_t errlen);

/* Replaces a trial's configuration (trials.config and its params rows) with a JSON
 * object: Population Based Training's explore step gives a trial a new one. */
int store_trial_set_config(store_t *st, int64_t trial_id, const char *config_json, char *err,
                           size_t errlen);

/* ---- results and decisions ------------------------------------------------------ */
/* One reported result. `json` is the full result object as text (every metric);
 * `metric` is the experiment's metric (NaN if missing or not a number: stored NULL);
 * `time_value` the value of the scheduler's time_attr. */
typedef struct store_result {
    int64_t trial_id;
    int attempt;
    int64_t iteration;
    double time_value;
    double metric;
    double wall_time;
    const char *json;
    size_t json_len;
} store_result_t;
int store_result_add(store_t *st, const store_result_t *r, char *err, size_t errlen);

/* A scheduler decision: why a trial continued, stopped, paused or changed, or a note the
 * loop keeps beside them. Actions: "continue", "stop", "complete", "pause", "promote",
 * "resume", "exploit" (PBT), "keep" (a checkpoint kept for good), "gap" (iterations a
 * resume skipped); docs/schema.md says what each means. */
typedef struct store_decision {
    int64_t trial_id;
    int64_t iteration;
    double time_value;
    const char *action; /* one of the actions above */
    int bracket;        /* -1 if not applicable */
    int rung;           /* -1 if not applicable */
    double milestone;   /* NaN if not applicable */
    double value;       /* the trial's value as the scheduler compared it */
    double cutoff;      /* NaN when there was none */
    const char *reason; /* human-readable, e.g. "below rung 2 cutoff"; never read back */
    double wall_time;
    /* 'complete' by a "stop" criterion: the criterion's key (a resume reads it back:
     * store_criterion_stops); NULL otherwise */
    const char *criterion;
} store_decision_t;
int store_decision_add(store_t *st, const store_decision_t *d, char *err, size_t errlen);

/* One exploit of Population Based Training: trial `trial_id` took the checkpoint of
 * `donor_trial_id` and restarts as attempt `attempt` with `new_config`. Written at once
 * in the open batch (the loop's transaction), so it commits with the decision and the
 * trial row that go with it. Strings may be NULL except new_config. */
typedef struct store_lineage {
    int64_t experiment_id;
    int64_t trial_id;
    int attempt;       /* the new attempt */
    int64_t iteration; /* the trial's iteration when exploited */
    double time_value; /* its time_attr value */
    int64_t donor_trial_id;
    int donor_attempt;
    int64_t donor_iteration;
    double donor_time_value;
    const char *donor_checkpoint; /* the path the donor reported */
    const char *resume_from;      /* the copy handed to the new attempt */
    const char *old_config;       /* JSON object */
    const char *new_config;       /* JSON object */
    const char *explore;          /* JSON object: what happened to each parameter */
    double value, donor_value;    /* NaN when unknown */
    double wall_time;
} store_lineage_t;
int store_lineage_add(store_t *st, const store_lineage_t *l, char *err, size_t errlen);

/* ---- resume --------------------------------------------------------------------- */
/* What a resumed run needs to rebuild its state. Pointers are valid during the call. */
typedef struct store_trial_row {
    int64_t id, trial_no;
    const char *name, *status, *config_json, *error, *slice;
    int early_stopped;
    int attempt;
} store_trial_row_t;
typedef int (*store_trial_cb)(void *ud, const store_trial_row_t *t);
/* Calls cb for each trial of the experiment in trial_no order; a non-zero return stops. */
int store_trials_load(store_t *st, int64_t exp_id, store_trial_cb cb, void *ud, char *err,
                      size_t errlen);

typedef struct store_result_row {
    int64_t trial_id;
    int attempt;
    int64_t iteration;
    double time_value, metric; /* NaN where NULL */
    const char *data;          /* the result's JSON (store_results_replay_data only; else NULL) */
    size_t data_len;
} store_result_row_t;
typedef int (*store_result_cb)(void *ud, const store_result_row_t *r);
/* Calls cb for every result of the experiment (every attempt) in arrival order. */
int store_results_replay(store_t *st, int64_t exp_id, store_result_cb cb, void *ud, char *err,
                         size_t errlen);
/* The same, each row with its JSON text (data): for a resume whose policy reads more of a
 * result than its metric (several objectives, constraints). */
int store_results_replay_data(store_t *st, int64_t exp_id, store_result_cb cb, void *ud, char *err,
                              size_t errlen);
/* What a resume needs to know of checkpoints and exploits, read through the iterators
 * below (the scheduler speaks no SQL). */
typedef int (*store_id_cb)(void *ud, int64_t trial_id);
/* Calls cb with the trial of each 'complete' decision that a "stop" criterion made
 * (decisions.criterion), in arrival order. */
int store_criterion_stops(store_t *st, int64_t exp_id, store_id_cb cb, void *ud, char *err,
                          size_t errlen);
/* Calls cb with each 'pause' (promoted 0) and 'promote' (promoted 1) decision, in arrival
 * order, with the iteration it was made at: a trial promoted and interrupted before its
 * promoted attempt reported is promoted, not waiting to be. */
typedef int (*store_pause_cb)(void *ud, int64_t trial_id, int promoted, int64_t iteration);
int store_pauses(store_t *st, int64_t exp_id, store_pause_cb cb, void *ud, char *err,
                 size_t errlen);

typedef struct store_checkpoint_row {
    int64_t trial_id;
    const char *path;  /* as a result named it, or the copy an exploit made; never NULL */
    int64_t iteration; /* of the result that named it, or the donor's at the copy (NULL: 0) */
    double time_value; /* likewise; NaN where NULL */
    double wall_time;  /* when it was named or copied */
    int copy;          /* 1: an exploit's copy (lineage.resume_from) */
} store_checkpoint_row_t;
typedef int (*store_checkpoint_cb)(void *ud, const store_checkpoint_row_t *r);
typedef enum {
    STORE_CKPT_NAMED,         /* every checkpoint a result named (its "checkpoint" key), of
                               * every attempt, in arrival order */
    STORE_CKPT_NAMED_CURRENT, /* the same, of each trial's current attempt only */
    STORE_CKPT_RESTORED,      /* the copy each trial's current attempt started from after an
                               * exploit (PBT), in exploit order */
    STORE_CKPT_ON_DISK        /* the named ones and the copies exploits made (not a donor's file
                               * handed over as it was), by wall time, a name before a copy */
} store_ckpt_which_t;
int store_checkpoints(store_t *st, int64_t exp_id, store_ckpt_which_t which, store_checkpoint_cb cb,
                      void *ud, char *err, size_t errlen);
/* Calls cb for each exploit whose new attempt had not started when tune stopped (its
 * trial's attempt is older, and the trial is RUNNING, PAUSED or PENDING), in exploit
 * order. Filled: trial_id, attempt, donor_trial_id, donor_checkpoint (never NULL),
 * resume_from (may be NULL), donor_iteration (NULL: 0), donor_time_value (NaN). */
typedef int (*store_lineage_cb)(void *ud, const store_lineage_t *l);
int store_exploits_pending(store_t *st, int64_t exp_id, store_lineage_cb cb, void *ud, char *err,
                           size_t errlen);

/* What store_results_carry moved. */
typedef struct store_carried {
    int64_t moved;                 /* results that moved */
    double min_metric, max_metric; /* over to_attempt's results after the move (NaN: none) */
} store_carried_t;
/* An attempt that resumed from a checkpoint continues an earlier attempt: that attempt's
 * results with iteration < `below` move to `to_attempt` (the rest stay behind,
 * superseded). *out (may be NULL) says what moved. */
int store_results_carry(store_t *st, int64_t trial_id, int from_attempt, int to_attempt,
                        int64_t below, store_carried_t *out, char *err, size_t errlen);

/* ---- reading -------------------------------------------------------------------- */
/* Column types as SQLite reports them. */
#define STORE_COL_NULL 0
#define STORE_COL_INT 1
#define STORE_COL_REAL 2
#define STORE_COL_TEXT 3
#define STORE_COL_BLOB 4

/* Called once per row; values[i] is NULL for SQL NULL, text otherwise (reals printed so
 * they read back exactly). Return non-zero to stop early. Pointers are valid only
 * during the call. */
typedef int (*store_row_cb)(void *ud, int ncol, const char *const *names, const char *const *values,
                            const int *types);

/* Runs one SQL statement with text parameters bound to ?1..?n. On a handle opened with
 * STORE_OPEN_READONLY a statement that would write is refused with STORE_READONLY. */
int store_query(store_t *st, const char *sql, const char *const *binds, int nbinds, store_row_cb cb,
                void *ud, char *err, size_t errlen);

#endif
