/* testdb.h: reading and writing a test's SQLite file directly, as a user's sqlite3 would,
 * to check what tune recorded. Header-only (static), for the end-to-end test programs.
 * Not for tune's own code, which goes through store/. */
#ifndef TUNE_TESTDB_H
#define TUNE_TESTDB_H

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Removes the database at path and its -wal and -shm files, for a test that starts afresh. */
static inline void testdb_remove(const char *path)
{
    char p[4200];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

/* Opens path read-only, or read-write; NULL when it cannot be opened. A failed open still
 * allocates a handle, which is closed here: under LeakSanitizer a test that looks at a
 * database before tune has created it would otherwise fail on the leak. */
static inline sqlite3 *testdb_open(const char *path, int writable)
{
    sqlite3 *db = NULL;
    int flags = writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
    if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

/* Runs sql on path (read-only) and leaves *st on its first row: 1 then, with *db and *st
 * for the caller to read and hand to testdb_done; 0 when there is no file, no row, or an
 * error (printed), with nothing left open. */
static inline int testdb_row(const char *path, const char *sql, sqlite3 **db, sqlite3_stmt **st)
{
    *st = NULL;
    if (!(*db = testdb_open(path, 0))) return 0;
    if (sqlite3_prepare_v2(*db, sql, -1, st, NULL) == SQLITE_OK && sqlite3_step(*st) == SQLITE_ROW)
        return 1;
    fprintf(stderr, "testdb: %s: %s\n", sql, sqlite3_errmsg(*db));
    sqlite3_finalize(*st);
    sqlite3_close(*db);
    return 0;
}

static inline void testdb_done(sqlite3 *db, sqlite3_stmt *st)
{
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* The first column of the first row of sql as a number, or `none` (no file, no row, or an
 * error, which is printed). */
static inline double testdb_num(const char *path, const char *sql, double none)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    if (!testdb_row(path, sql, &db, &st)) return none;
    double v = sqlite3_column_double(st, 0);
    testdb_done(db, st);
    return v;
}

/* The same as a whole number (-1 for none). */
static inline long long testdb_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    if (!testdb_row(path, sql, &db, &st)) return -1;
    long long v = sqlite3_column_int64(st, 0);
    testdb_done(db, st);
    return v;
}

/* The same as text, copied (the caller frees), or NULL for none. */
static inline char *testdb_text(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    if (!testdb_row(path, sql, &db, &st)) return NULL;
    const unsigned char *v = sqlite3_column_text(st, 0);
    char *out = v ? strdup((const char *)v) : NULL;
    testdb_done(db, st);
    return out;
}

/* Runs writing statements; 0 on success, -1 (printed) otherwise. */
static inline int testdb_exec(const char *path, const char *sql)
{
    sqlite3 *db = testdb_open(path, 1);
    if (!db) return -1;
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) fprintf(stderr, "testdb: %s: %s\n", sql, msg ? msg : "?");
    sqlite3_free(msg);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}

#endif
