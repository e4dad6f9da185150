/* What every file of the store stands on: the SQL of every cached statement and the
 * cache, the mapping of SQLite's errors to STORE_* codes and messages (and what an error
 * does to an open batch), savepoints, and the check that a write may go ahead. Calls no
 * other file of the store. */
#include "store/store_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The multi-row INSERTs: STORE__RESULT_ROWS rows of anonymous parameters. */
#define RESULT_ROW "(?, ?, ?, ?, ?, ?, ?)"
#define RESULT_ROWS2 RESULT_ROW ", " RESULT_ROW
#define RESULT_ROWS4 RESULT_ROWS2 ", " RESULT_ROWS2
#define RESULT_ROWS8 RESULT_ROWS4 ", " RESULT_ROWS4
#define RESULT_ROWS16 RESULT_ROWS8 ", " RESULT_ROWS8
#define RANGE_ROWS16 RESULT_ROWS16 /* a range row has 7 columns too */
#define DECISION_ROW "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define DECISION_ROWS2 DECISION_ROW ", " DECISION_ROW
#define DECISION_ROWS4 DECISION_ROWS2 ", " DECISION_ROWS2
#define DECISION_ROWS8 DECISION_ROWS4 ", " DECISION_ROWS4
#define DECISION_ROWS16 DECISION_ROWS8 ", " DECISION_ROWS8
_Static_assert(STORE__RESULT_ROWS == 16, "the *_ROWS16 statements must match STORE__RESULT_ROWS");

/* The SQL of every cached statement, indexed by enum store__stmt_id (the trial update has a
 * statement per set of fields, write.c). */
static const char *const stmt_sql[STORE__NSTMT] = {
    [STORE__BEGIN] = "BEGIN IMMEDIATE",
    [STORE__COMMIT] = "COMMIT",
    [STORE__ROLLBACK] = "ROLLBACK",
    [STORE__SP_BEGIN] = "SAVEPOINT store_trial",
    [STORE__SP_RELEASE] = "RELEASE store_trial",
    [STORE__SP_ROLLBACK] = "ROLLBACK TO store_trial",
    [STORE__EXP_INSERT] =
        "INSERT INTO experiments (name, status, created_at, metric, mode, scheduler, seed,"
        " num_trials, results_dir, space_json, settings_json)"
        " VALUES (?1, 'RUNNING', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [STORE__EXP_FIND] = "SELECT id FROM experiments WHERE name = ?1",
    [STORE__EXP_STATUS] = "UPDATE experiments SET status = ?2,"
                          " ended_at = CASE WHEN ?2 = 'RUNNING' THEN NULL ELSE ?3 END"
                          " WHERE id = ?1",
    [STORE__TRIAL_INSERT] = "INSERT INTO trials (experiment_id, trial_no, name, config, trial_dir)"
                            " VALUES (?1, ?2, ?3, ?4, ?5)",
    [STORE__PARAM_INSERT] =
        "INSERT INTO params (trial_id, name, value_real, value_text, value_json)"
        " VALUES (?1, ?2, ?3, ?4, ?5)",
    [STORE__TRIAL_EXISTS] = "SELECT 1 FROM trials WHERE id = ?1",
    [STORE__RESULT_INSERT1] = "INSERT INTO results (trial_id, attempt, iteration, time_value,"
                              " metric, wall_time, data) VALUES " RESULT_ROW,
    [STORE__RESULT_INSERTN] = "INSERT INTO results (trial_id, attempt, iteration, time_value,"
                              " metric, wall_time, data) VALUES " RESULT_ROWS16,
    [STORE__RANGE_INSERT] = "INSERT INTO result_ranges (trial_id, attempt, first_id, last_id, n,"
                            " min_metric, max_metric) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [STORE__RANGE_INSERTN] = "INSERT INTO result_ranges (trial_id, attempt, first_id, last_id, n,"
                             " min_metric, max_metric) VALUES " RANGE_ROWS16,
    [STORE__DECISION_INSERT1] =
        "INSERT INTO decisions (trial_id, iteration, time_value, action,"
        " bracket, rung, milestone, value, cutoff, reason, wall_time, criterion)"
        " VALUES " DECISION_ROW,
    [STORE__DECISION_INSERTN] =
        "INSERT INTO decisions (trial_id, iteration, time_value, action,"
        " bracket, rung, milestone, value, cutoff, reason, wall_time, criterion)"
        " VALUES " DECISION_ROWS16,
    [STORE__LINEAGE_INSERT] =
        "INSERT INTO lineage (experiment_id, trial_id, attempt, iteration, time_value,"
        " donor_trial_id, donor_attempt, donor_iteration, donor_time_value, donor_checkpoint,"
        " resume_from, old_config, new_config, explore, value, donor_value, wall_time)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
};

double store__now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int store__err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* Errors after which the open transaction cannot be trusted to hold every write. */
static int spoils_batch(int primary)
{
    switch (primary) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_NOMEM:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
    case SQLITE_READONLY:
        return 1;
    default:
        return 0;
    }
}

int store__fail(store_t *st, int src, const char *what, char *err, size_t errlen)
{
    int c_errno = errno; /* before anything below can change it */
    int primary = src & 0xff;
    /* SQLite records the OS error for some failures only (it says 0 after a failed WAL
     * write at commit); the failed write() was then the last failing system call, so its
     * errno is still in errno. */
    int sys = sqlite3_system_errno(st->db);
    if (!sys && primary == SQLITE_IOERR) sys = c_errno;
    const char *msg = sqlite3_errmsg(st->db);
    char reason[384];
    int rc = STORE_ERR;
    /* SQLite says SQLITE_FULL for ENOSPC and short writes, but SQLITE_IOERR for EFBIG
     * (RLIMIT_FSIZE) and EDQUOT: to the user all of them mean "no room". */
    if (primary == SQLITE_FULL ||
        (primary == SQLITE_IOERR && (sys == ENOSPC || sys == EFBIG || sys == EDQUOT))) {
        rc = STORE_FULL;
        snprintf(reason, sizeof reason,
                 "the disk is full or the file size limit was reached (%s); what was committed "
                 "before is kept",
                 sys ? strerror(sys) : msg);
    } else if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
        rc = STORE_BUSY;
        snprintf(reason, sizeof reason,
                 "the database is locked by another writer for more than %d ms (%s)",
                 STORE_BUSY_TIMEOUT_MS, msg);
    } else if (primary == SQLITE_READONLY) {
        rc = STORE_READONLY;
        snprintf(reason, sizeof reason, "the database is read-only (%s)", msg);
    } else if (primary == SQLITE_NOTADB) {
        rc = STORE_NOTDB;
        snprintf(reason, sizeof reason, "not a tune database: %s", msg);
    } else if (primary == SQLITE_CORRUPT) {
        snprintf(reason, sizeof reason, "the database file is damaged (%s)", msg);
    } else if (primary == SQLITE_IOERR && sys) {
        snprintf(reason, sizeof reason, "%s (%s)", msg, strerror(sys));
    } else {
        snprintf(reason, sizeof reason, "%s", msg);
    }
    store__err(err, errlen, rc, "%s: %s: %s", st->path, what, reason);
    if (st->in_batch && !st->batch_rc &&
        (spoils_batch(primary) || sqlite3_get_autocommit(st->db))) {
        st->batch_rc = rc;
        snprintf(st->batch_err, sizeof st->batch_err, "%s: %s", what, reason);
    }
    return rc;
}

sqlite3_stmt *store__stmt(store_t *st, enum store__stmt_id id, char *err, size_t errlen)
{
    if (!st->stmt[id]) {
        int rc = sqlite3_prepare_v3(st->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                    &st->stmt[id], NULL);
        if (rc != SQLITE_OK) {
            store__fail(st, rc, "cannot prepare a statement", err, errlen);
            st->stmt[id] = NULL;
            return NULL;
        }
    }
    return st->stmt[id];
}

/* Runs one cached statement that returns no rows. */
int store__run_stmt(store_t *st, enum store__stmt_id id, const char *what, char *err, size_t errlen)
{
    sqlite3_stmt *s = store__stmt(st, id, err, errlen);
    if (!s) return STORE_ERR;
    int rc = sqlite3_step(s);
    int out = rc == SQLITE_DONE ? 0 : store__fail(st, rc, what, err, errlen);
    sqlite3_reset(s);
    return out;
}

/* Steps a cached statement whose outcome does not matter (a rollback on the way out). */
void store__step_quietly(store_t *st, enum store__stmt_id id)
{
    sqlite3_stmt *s = store__stmt(st, id, NULL, 0);
    if (s) {
        sqlite3_step(s);
        sqlite3_reset(s);
    }
}

int store__sp_begin(store_t *st, const char *what, char *err, size_t errlen)
{
    sqlite3_stmt *sp = store__stmt(st, STORE__SP_BEGIN, err, errlen);
    if (!sp) return STORE_ERR;
    int src = sqlite3_step(sp);
    sqlite3_reset(sp);
    return src == SQLITE_DONE ? 0 : store__fail(st, src, what, err, errlen);
}

int store__sp_end(store_t *st, int rc, const char *what, char *err, size_t errlen)
{
    /* ROLLBACK TO keeps the savepoint open; RELEASE then ends it. SQLite may have rolled
     * everything back itself after an I/O error: then there is no savepoint left to end. */
    if (rc && !sqlite3_get_autocommit(st->db)) store__step_quietly(st, STORE__SP_ROLLBACK);
    if (!sqlite3_get_autocommit(st->db)) {
        sqlite3_stmt *rel = store__stmt(st, STORE__SP_RELEASE, NULL, 0);
        int src = rel ? sqlite3_step(rel) : SQLITE_NOMEM;
        if (src != SQLITE_DONE && !rc) rc = store__fail(st, src, what, err, errlen);
        if (rel) sqlite3_reset(rel);
        /* A failed RELEASE outside a batch is a failed commit: end it like store_commit. */
        if (src != SQLITE_DONE && !st->in_batch && !sqlite3_get_autocommit(st->db))
            store__step_quietly(st, STORE__ROLLBACK);
    }
    return rc;
}

int store__writable(store_t *st, const char *what, char *err, size_t errlen)
{
    if (st->readonly)
        return store__err(err, errlen, STORE_READONLY, "%s: %s: the database was opened read-only",
                          st->path, what);
    if (st->in_batch && st->batch_rc)
        return store__err(err, errlen, st->batch_rc,
                          "%s: %s: the batch was abandoned after an earlier error: %s", st->path,
                          what, st->batch_err);
    if (st->in_batch && !st->tx_open) {
        /* IMMEDIATE takes the write lock before the batch's first write, so that a busy
         * database is reported by that write, never halfway through the batch. A write
         * that failed spoils its batch, this one too (store__fail). */
        int rc = store__run_stmt(st, STORE__BEGIN, "cannot begin a batch", err, errlen);
        if (rc) return rc;
        st->tx_open = 1;
    }
    return 0;
}

int store__bind_real(sqlite3_stmt *s, int i, double v)
{
    return v == v ? sqlite3_bind_double(s, i, v) : sqlite3_bind_null(s, i);
}
