/* store internals shared by store.c (open, close, batches, errors), write.c (experiments,
 * trials, params), pending.c (the write-behind buffer of results and decisions), query.c
 * (reading) and resume.c (reading a run back). Not for other modules: they use store.h. */
#ifndef TUNE_STORE_INT_H
#define TUNE_STORE_INT_H

#include "store/store.h"

#include <sqlite3.h>

/* The row a new database gets besides schema.sql's own, saying which tune made it: written
 * by create_schema and by store/mkimage.c's image of an empty database alike. */
#ifdef TUNE_VERSION
#define STORE__CREATED_BY_SQL                                                                      \
    "INSERT INTO meta (key, value) VALUES ('created_by', 'tune " TUNE_VERSION "')"
#else
#define STORE__CREATED_BY_SQL "SELECT 1"
#endif

/* Writes a new database at path, whole, from the image of an empty one made at build time
 * (store/mkimage.c); 0, or -1 when it did not (path exists, or cannot be written or
 * linked). store_open's way to create a database; exposed for test_store. */
int store__write_image(const char *path);

/* Prepared statements, prepared on first use and kept for the life of the handle: the
 * hot path is then bind + step + reset, never a parse. */
#define STORE__STR_(x) #x
#define STORE__STR(x) STORE__STR_(x)

enum store__stmt_id {
    STORE__BEGIN,
    STORE__COMMIT,
    STORE__ROLLBACK,
    STORE__SP_BEGIN, /* a savepoint makes a trial and its params one unit, batch or not */
    STORE__SP_RELEASE,
    STORE__SP_ROLLBACK,
    STORE__EXP_INSERT,
    STORE__EXP_FIND,
    STORE__EXP_STATUS,
    STORE__TRIAL_INSERT,
    STORE__TRIAL_EXISTS,
    STORE__PARAM_INSERT,
    STORE__RESULT_INSERT1, /* one results row */
    STORE__RESULT_INSERTN, /* STORE__RESULT_ROWS rows in one statement */
    STORE__RANGE_INSERT,
    STORE__RANGE_INSERTN,    /* STORE__RESULT_ROWS rows in one statement */
    STORE__DECISION_INSERT1, /* one decisions row */
    STORE__DECISION_INSERTN, /* STORE__RESULT_ROWS rows in one statement */
    STORE__LINEAGE_INSERT,
    STORE__NSTMT
};
#define STORE__TU_STMTS 8

/* Rows per multi-row INSERT of results and of decisions: a statement per row costs SQLite
 * more than the row itself (opening cursors, constraint checks, halting); 16 rows keep
 * most of the gain of larger statements (docs/schema.md, "Performance"). */
#define STORE__RESULT_ROWS 16
/* Results and decisions kept in the handle before a batch is written out early. */
#define STORE__PENDING_MAX 8192

/* A result waiting in the handle until the batch is written (see store__flush). */
struct store__pending {
    int64_t trial_id;
    int64_t iteration;
    double time_value, metric, wall_time;
    size_t off, len; /* its JSON text in the handle's arena */
    int attempt;
    int next; /* the next pending result of the same trial and attempt, -1 at the end */
};

/* A decision waiting like the results; its text is in the arena too. */
struct store__pdecision {
    int64_t trial_id, iteration;
    double time_value, milestone, value, cutoff, wall_time;
    int bracket, rung;
    size_t action_off, action_len, reason_off, reason_len, criterion_off, criterion_len;
    int has_reason, has_criterion;
};

/* The results of one trial and attempt in the pending set, in arrival order. */
struct store__group {
    int64_t trial_id;
    int64_t first_id; /* its first result's id, once written */
    int attempt;
    int head, tail, n;
    double min_metric, max_metric; /* NaN while no metric was seen */
};

struct store {
    sqlite3 *db;
    char *path;   /* as given to store_open, for messages */
    int readonly; /* opened with STORE_OPEN_READONLY */
    int in_batch; /* between store_begin and store_commit */
    /* The batch's BEGIN IMMEDIATE has run: it runs at the batch's first write
     * (store__writable), so a batch that writes nothing costs no transaction. */
    int tx_open;
    /* The first error that spoiled the open batch (0 if none): a batch is all or nothing,
     * so after a failed write (disk full, I/O error) every later write of the batch and
     * its commit report this error, and the commit rolls the batch back. */
    int batch_rc;
    char batch_err[512];
    sqlite3_stmt *stmt[STORE__NSTMT];
    /* The trial updates, one statement per set of STORE_TU_* fields (a run uses four or
     * five sets): a statement that names only the columns it sets is cheaper than one that
     * names every column in a CASE on the fields (bench/tuner/README.md). */
    struct {
        unsigned fields;
        sqlite3_stmt *stmt;
    } tu[STORE__TU_STMTS];
    int ntu;
    double last_checkpoint; /* CLOCK_MONOTONIC seconds of the last checkpoint we asked for */

    /* Results added in the open batch and not written yet: written grouped by trial at
     * commit (or when STORE__PENDING_MAX are waiting, or before a query on this handle),
     * so that each trial's results get consecutive ids and one result_ranges row. */
    struct store__pending *pend;
    int npend, cap_pend;
    struct store__pdecision *pdec; /* decisions, in arrival order */
    int npdec, cap_pdec;
    char *arena; /* the pending results' JSON text and the decisions' text */
    size_t arena_len, arena_cap;
    struct store__group *groups; /* in order of first appearance */
    int ngroups, cap_groups;
    int *group_slot; /* open addressing over (trial_id, attempt): group index + 1, 0 free */
    int group_slots; /* a power of two, at least twice ngroups */

    /* Trial ids known to exist (created or looked up by this handle), so that checking a
     * result's trial_id costs a probe, not a query. Open addressing, 0 = free (SQLite
     * rowids of our trials are >= 1). Cleared whenever a rollback may have undone one. */
    int64_t *known;
    int nknown, known_slots;
};

/* ---- the write-behind buffer (pending.c) ---- */

/* Writes the pending results and decisions (a no-op when there are none). Inside a
 * batch; a failure spoils it. */
int store__flush(store_t *st, char *err, size_t errlen);
/* Forgets pending results and known trials after a rollback. */
void store__forget(store_t *st);
/* Frees what the pending set and the known-trial cache hold. */
void store__free_pending(store_t *st);
/* Remembers that trial `id` exists. */
void store__know_trial(store_t *st, int64_t id);

/* Fills err (NULL-safe, always NUL-terminated) and returns rc. */
int store__err(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Maps SQLite's result code `src` (after a failed call on st->db) to a STORE_* code and
 * writes "PATH: <what>: <reason>" into err. Inside a batch, I/O, space, lock and memory
 * errors spoil the batch (see batch_rc); constraint violations do not. */
int store__fail(store_t *st, int src, const char *what, char *err, size_t errlen);

/* The cached statement `id`, ready to bind (every user resets it after its step); NULL
 * with err filled on failure. */
sqlite3_stmt *store__stmt(store_t *st, enum store__stmt_id id, char *err, size_t errlen);

/* Writes that land together or not at all, in a batch or not (a trial and its params, the
 * results a resumed attempt carries over): store__sp_begin opens the savepoint; store__sp_end
 * rolls back to it when rc is an error, then ends it, which commits when no batch is open.
 * store__sp_end returns rc, or else the failure of ending the savepoint. */
int store__sp_begin(store_t *st, const char *what, char *err, size_t errlen);
int store__sp_end(store_t *st, int rc, const char *what, char *err, size_t errlen);

/* 0 when st may write now; STORE_READONLY for a read-only handle, or the error that
 * spoiled the open batch. Every write calls it first: in a batch, the first call begins
 * the batch's transaction (STORE_BUSY if another writer holds the lock). */
int store__writable(store_t *st, const char *what, char *err, size_t errlen);

/* Binds a double, or NULL when it is NaN (SQLite would store NULL anyway; this says so). */
int store__bind_real(sqlite3_stmt *s, int i, double v);
/* base.c: CLOCK_MONOTONIC in seconds. */
double store__now_s(void);
/* base.c: runs cached statement id (BEGIN, COMMIT, a savepoint): 0, or the error worded
 * with `what`. */
int store__run_stmt(store_t *st, enum store__stmt_id id, const char *what, char *err,
                    size_t errlen);
/* base.c: runs cached statement id, its failure ignored (a rollback after a failure). */
void store__step_quietly(store_t *st, enum store__stmt_id id);
/* How long a writer waits for another writer's transaction (and a reader for a
 * checkpoint) before giving up with STORE_BUSY. The scheduler holds the write lock for
 * one loop turn at a time, so a few seconds is generous. */
#define STORE_BUSY_TIMEOUT_MS 5000
/* The longest time between two WAL checkpoints (docs/schema.md, "Durability"). */
#define STORE_CHECKPOINT_S 10.0
/* schema.c: runs a statement that needs no result (what: the message's start). */
int store__exec(store_t *st, const char *sql, const char *what, char *err, size_t errlen);
/* schema.c: checks (creating it first when writable and missing, upgrading an older
 * version) that the file holds a schema this tune can use. */
int store__check_schema(store_t *st, char *err, size_t errlen);

/* Prints v in the shortest form that strtod reads back to the same double, with ".0"
 * added to integral values so that they still read as reals ("0.1", "3.0", "1e+300",
 * "Inf", "-Inf" as SQLite prints them). buf needs 32 bytes. */
void store__format_real(double v, char *buf, size_t n);

#endif
