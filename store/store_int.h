/* store internals shared by store.c (open, close, batches, errors), write.c (the rows the
 * scheduler records) and query.c (reading). Not for other modules: they use store.h. */
#ifndef TUNE_STORE_INT_H
#define TUNE_STORE_INT_H

#include "store/store.h"

#include <sqlite3.h>

/* Prepared statements, prepared on first use and kept for the life of the handle: the
 * hot path (one result row) is then bind + step + reset, never a parse. */
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
    STORE__PARAM_INSERT,
    STORE__TRIAL_UPDATE,
    STORE__RESULT_INSERT,
    STORE__DECISION_INSERT,
    STORE__NSTMT
};

struct store {
    sqlite3 *db;
    char *path;   /* as given to store_open, for messages */
    int readonly; /* opened with STORE_OPEN_READONLY */
    int in_batch; /* between store_begin and store_commit */
    /* The first error that spoiled the open batch (0 if none): a batch is all or nothing,
     * so after a failed write (disk full, I/O error) every later write of the batch and
     * its commit report this error, and the commit rolls the batch back. */
    int batch_rc;
    char batch_err[512];
    sqlite3_stmt *stmt[STORE__NSTMT];
};

/* Fills err (NULL-safe, always NUL-terminated) and returns rc. */
int store__err(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Maps SQLite's result code `src` (after a failed call on st->db) to a STORE_* code and
 * writes "<what> in PATH: <reason>" into err. Inside a batch, errors other than
 * constraint violations spoil the batch (see batch_rc). */
int store__fail(store_t *st, int src, const char *what, char *err, size_t errlen);

/* The cached statement `id`, reset and ready to bind; NULL with err filled on failure. */
sqlite3_stmt *store__stmt(store_t *st, enum store__stmt_id id, char *err, size_t errlen);

/* 0 when st may write now; STORE_READONLY for a read-only handle, or the error that
 * spoiled the open batch. */
int store__writable(store_t *st, const char *what, char *err, size_t errlen);

/* Binds a double, or NULL when it is NaN (SQLite would store NULL anyway; this says so). */
int store__bind_real(sqlite3_stmt *s, int i, double v);

/* Prints v in the shortest form that strtod reads back to the same double, with ".0"
 * added to integral values so that they still read as reals ("0.1", "3.0", "1e+300",
 * "Inf", "-Inf" as SQLite prints them). buf needs 32 bytes. */
void store__format_real(double v, char *buf, size_t n);
/* The same without the ".0", for JSON text ("3", "0.1"); non-finite values print "null". */
void store__format_json_number(double v, char *buf, size_t n);

#endif
