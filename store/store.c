/* store: opening and closing the database, creating or checking its schema, batches
 * (one transaction per scheduler turn), the prepared-statement cache and the mapping of
 * SQLite's errors to STORE_* codes and messages. Not for the rows themselves (write.c)
 * or for reading (query.c). */
#include "store/store_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "schema_image.h" /* an empty database, made at build time by store/mkimage.c */

/* How long a writer waits for another writer's transaction (and a reader for a
 * checkpoint) before giving up with STORE_BUSY. The scheduler holds the write lock for
 * one loop turn at a time, so a few seconds is generous. */
#define STORE_BUSY_TIMEOUT_MS 5000

/* WAL pages (4 KiB) between automatic checkpoints, and the longest time between two
 * (docs/schema.md, "Durability"). */
#define STORE_CHECKPOINT_PAGES 10000
#define STORE_CHECKPOINT_S 10.0

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

static double monotonic_s(void)
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
static int run_stmt(store_t *st, enum store__stmt_id id, const char *what, char *err, size_t errlen)
{
    sqlite3_stmt *s = store__stmt(st, id, err, errlen);
    if (!s) return STORE_ERR;
    int rc = sqlite3_step(s);
    int out = rc == SQLITE_DONE ? 0 : store__fail(st, rc, what, err, errlen);
    sqlite3_reset(s);
    return out;
}

/* Steps a cached statement whose outcome does not matter (a rollback on the way out). */
static void step_quietly(store_t *st, enum store__stmt_id id)
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
    if (rc && !sqlite3_get_autocommit(st->db)) step_quietly(st, STORE__SP_ROLLBACK);
    if (!sqlite3_get_autocommit(st->db)) {
        sqlite3_stmt *rel = store__stmt(st, STORE__SP_RELEASE, NULL, 0);
        int src = rel ? sqlite3_step(rel) : SQLITE_NOMEM;
        if (src != SQLITE_DONE && !rc) rc = store__fail(st, src, what, err, errlen);
        if (rel) sqlite3_reset(rel);
        /* A failed RELEASE outside a batch is a failed commit: end it like store_commit. */
        if (src != SQLITE_DONE && !st->in_batch && !sqlite3_get_autocommit(st->db))
            step_quietly(st, STORE__ROLLBACK);
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
        int rc = run_stmt(st, STORE__BEGIN, "cannot begin a batch", err, errlen);
        if (rc) return rc;
        st->tx_open = 1;
    }
    return 0;
}

int store__bind_real(sqlite3_stmt *s, int i, double v)
{
    return v == v ? sqlite3_bind_double(s, i, v) : sqlite3_bind_null(s, i);
}

/* ---- open and close -------------------------------------------------------------- */

/* The directory `path` is in: "." for a bare name, "/" for a file at the root. */
static void dir_of(const char *path, char *dir, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == path)
        snprintf(dir, n, "/");
    else
        snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* Why a file cannot be created at `path`, judged by its directory; "" when the directory
 * looks fine. */
static void dir_problem(const char *path, char *why, size_t n)
{
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    struct stat sb;
    if (stat(dir, &sb) != 0)
        snprintf(why, n, "%s (its directory)", strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        snprintf(why, n, "%s (its directory is a file)", strerror(ENOTDIR));
    else if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0)
        snprintf(why, n, "%s (its directory is not writable)", strerror(errno));
}

/* The "file:" URI of a finished database that a reader cannot open the usual way, or ""
 * when the usual way works. A WAL database needs its -shm file, which SQLite creates
 * beside it: in a directory this user may not write (a results folder on a read-only
 * share, another user's run) a clean, closed database has none, and even a read-only
 * open fails ("attempt to write a readonly database"). With no -wal file no writer has it
 * open and every committed page is in the main file, so it can be read as immutable. A
 * writer that starts later is not seen by this handle (a snapshot), and nothing is written
 * either way. */
static void immutable_uri(const char *path, char *uri, size_t n)
{
    uri[0] = 0;
    char wal[4200], dir[4096];
    snprintf(wal, sizeof wal, "%s-wal", path);
    if (access(wal, F_OK) == 0 || errno != ENOENT) return;
    dir_of(path, dir, sizeof dir);
    if (faccessat(AT_FDCWD, dir, W_OK, AT_EACCESS) == 0 || (errno != EACCES && errno != EROFS))
        return;
    size_t k = (size_t)snprintf(uri, n, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p && k + 4 < n; p++) {
        /* RFC 3986 unreserved characters and '/' as they are; the rest percent-encoded. */
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~/", *p))
            uri[k++] = (char)*p;
        else
            k += (size_t)snprintf(uri + k, n - k, "%%%02X", *p);
    }
    if (k + sizeof "?immutable=1" > n) {
        uri[0] = 0;
        return;
    }
    snprintf(uri + k, n - k, "?immutable=1");
}

/* Writes a new database at `path` from the image of an empty one (schema_image.h: what
 * create_schema makes, in WAL mode, made at build time), so that no run pays SQLite's
 * parsing of schema.sql and its fsyncs (bench/tuner/README.md). The image is
 * written whole, synced, under a name of its own and then linked into place (and the
 * directory synced), so that no one ever opens a part of it and a second tune creating
 * the same file at the same moment finds one whole database or the other. Returns 0 when it wrote
 * the file, else -1 (it exists already, the directory cannot hold it, or it allows no hard links):
 * the caller opens the path as usual, and SQLite creates a file that create_schema fills. */
/* Removes the named images (path.new-PID-K) that processes no longer alive left in dir. */
static void sweep_images(const char *path, const char *dir)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t bl = strlen(base);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        long pid = 0;
        int k = 0;
        if (strncmp(e->d_name, base, bl) != 0 ||
            sscanf(e->d_name + bl, ".new-%ld-%d", &pid, &k) != 2 || pid <= 0)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours */
        unlinkat(dirfd(d), e->d_name, 0);
    }
    if (d) closedir(d);
}

int store__write_image(const char *path)
{
    unsigned char *img = calloc(1, STORE__IMAGE_LEN);
    if (!img) return -1;
    size_t at = 0, n = STORE__IMAGE_LEN;
    for (size_t i = 0; i + 8 <= sizeof store__image_runs;) {
        const unsigned char *h = store__image_runs + i;
        size_t zeros = h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16 | (size_t)h[3] << 24;
        size_t bytes = h[4] | (size_t)h[5] << 8 | (size_t)h[6] << 16 | (size_t)h[7] << 24;
        i += 8;
        if (at + zeros + bytes > n || i + bytes > sizeof store__image_runs) {
            free(img);
            return -1;
        }
        memcpy(img + at + zeros, h + 8, bytes);
        at += zeros + bytes;
        i += bytes;
    }
    char tmp[4200], dir[4096];
    dir_of(path, dir, sizeof dir);
    /* A file with no name until it is whole (O_TMPFILE): a tune killed while writing it
     * leaves nothing beside the database. Where the file system has none, a named one,
     * which a kill can leave; those that processes gone left (an older tune's too) are
     * removed first. */
    sweep_images(path, dir);
    int fd = open(dir, O_WRONLY | O_TMPFILE | O_CLOEXEC, 0644);
    int anon = fd >= 0;
    for (int k = 0; k < 100 && fd < 0; k++) {
        snprintf(tmp, sizeof tmp, "%s.new-%ld-%d", path, (long)getpid(), k);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        free(img);
        return -1;
    }
    if (anon) snprintf(tmp, sizeof tmp, "/proc/self/fd/%d", fd);
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, img + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += (size_t)w;
    }
    int ok = done == n && fdatasync(fd) == 0;
    free(img);
    /* linked into place only if nothing is there yet (link never replaces a file) */
    ok = ok && linkat(AT_FDCWD, tmp, AT_FDCWD, path, anon ? AT_SYMLINK_FOLLOW : 0) == 0;
    close(fd);
    if (!anon) unlink(tmp);
    if (ok) { /* the new name survives a power loss, as SQLite's own creation syncs it */
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    return ok ? 0 : -1;
}

int store_open(const char *path, int flags, store_t **out, char *err, size_t errlen)
{
    if (!path || !*path) return store__err(err, errlen, STORE_ERR, "no database path given");
    if (flags & ~STORE_OPEN_READONLY)
        return store__err(err, errlen, STORE_ERR, "%s: unknown store_open flags 0x%x", path,
                          (unsigned)flags);
    int readonly = (flags & STORE_OPEN_READONLY) != 0;

    struct stat sb;
    int exists = stat(path, &sb) == 0;
    if (exists && S_ISDIR(sb.st_mode))
        return store__err(err, errlen, STORE_ERR,
                          "%s is a directory; give the path of a database file inside it", path);
    if (!exists && readonly)
        return store__err(err, errlen, STORE_NOTFOUND, "no database at %s", path);

    store_t *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        free(st);
        return store__err(err, errlen, STORE_ERR, "%s: out of memory", path);
    }
    st->readonly = readonly;
    if (!exists && !readonly) store__write_image(path);

    /* NOMUTEX: a handle belongs to one thread, so SQLite's per-connection mutex is pure
     * overhead on the hot path. */
    int oflags = SQLITE_OPEN_NOMUTEX |
                 (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    char uri[8400] = "";
    if (readonly) immutable_uri(path, uri, sizeof uri);
    if (uri[0]) oflags |= SQLITE_OPEN_URI;
    int rc = sqlite3_open_v2(uri[0] ? uri : path, &st->db, oflags, NULL);
    if (rc != SQLITE_OK) {
        int sys = st->db ? sqlite3_system_errno(st->db) : 0;
        const char *msg = st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc);
        /* SQLite retries a create it may not do as a read-only open, and then reports that
         * open's ENOENT: the directory says what really went wrong. */
        char why[256] = "";
        if (!exists) dir_problem(path, why, sizeof why);
        rc = store__err(err, errlen, STORE_ERR, "cannot %s database %s: %s (%s)",
                        exists ? "open" : "create", path,
                        why[0] ? why
                        : sys  ? strerror(sys)
                               : "SQLite error",
                        msg);
        goto fail;
    }
    sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);

    if (!readonly && sqlite3_db_readonly(st->db, "main") == 1) {
        rc = store__err(err, errlen, STORE_READONLY,
                        "cannot write %s: the file is read-only to this user (open it read-only "
                        "to query it, or fix its permissions)",
                        path);
        goto fail;
    }
    if (readonly) {
        /* Belt and braces: the file is opened read-only already, and query_only makes
         * SQLite refuse any write on this connection, attached files included. */
        rc = store__exec(st, "PRAGMA query_only = ON", "cannot open the database", err, errlen);
    } else {
        /* WAL: readers (tune query, the live table) never block the writer and the writer
         * never blocks them. synchronous=NORMAL in WAL mode syncs only at checkpoints:
         * a committed transaction survives a crash of tune but may be lost on power loss
         * (docs/schema.md, "Durability"). */
        rc = store__exec(st, "PRAGMA journal_mode = WAL", "cannot open the database", err, errlen);
        if (!rc)
            rc = store__exec(st, "PRAGMA synchronous = NORMAL", "cannot open the database", err,
                             errlen);
        if (!rc)
            rc = store__exec(st, "PRAGMA foreign_keys = ON", "cannot open the database", err,
                             errlen);
        /* Checkpoints (copying the WAL into the database, with two fsyncs) every
         * STORE_CHECKPOINT_PAGES pages instead of SQLite's 1000, and at least every
         * STORE_CHECKPOINT_S seconds (store_commit): fewer stalls at high result rates, a
         * bounded window of results a power loss can take at low ones. */
        if (!rc)
            rc = store__exec(st, "PRAGMA wal_autocheckpoint = " STORE__STR(STORE_CHECKPOINT_PAGES),
                             "cannot open the database", err, errlen);
        st->last_checkpoint = monotonic_s();
    }
    if (rc) {
        if (rc == STORE_NOTDB)
            store__err(err, errlen, rc, "%s is not a tune database: %s", path,
                       sqlite3_errmsg(st->db));
        goto fail;
    }
    rc = store__check_schema(st, err, errlen);
    if (rc) {
        if (rc == STORE_NOTDB && sqlite3_errcode(st->db) == SQLITE_NOTADB)
            store__err(err, errlen, rc, "%s is not a tune database: %s", path,
                       sqlite3_errmsg(st->db));
        goto fail;
    }
    *out = st;
    return 0;

fail:
    store_close(st);
    return rc ? rc : STORE_ERR;
}

int store_set_cache(store_t *st, int mib, char *err, size_t errlen)
{
    if (mib < 1 || mib > 65536)
        return store__err(err, errlen, STORE_ERR, "%s: a page cache of %d MiB: give 1 to 65536",
                          st->path, mib);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA cache_size = %d", -1024 * mib);
    return store__exec(st, sql, "cannot set the page cache", err, errlen);
}

void store_close(store_t *st)
{
    if (!st) return;
    if (st->db && !sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    for (int i = 0; i < STORE__NSTMT; i++)
        sqlite3_finalize(st->stmt[i]);
    for (int i = 0; i < st->ntu; i++)
        sqlite3_finalize(st->tu[i].stmt);
    sqlite3_close(st->db);
    store__free_pending(st);
    free(st->path);
    free(st);
}

/* ---- batches --------------------------------------------------------------------- */

int store_begin(store_t *st, char *err, size_t errlen)
{
    if (st->readonly)
        return store__err(err, errlen, STORE_READONLY,
                          "%s: cannot begin a batch: the database was opened read-only", st->path);
    if (st->in_batch)
        return store__err(err, errlen, STORE_ERR,
                          "%s: cannot begin a batch: one is open already (store_commit first)",
                          st->path);
    /* The transaction itself begins at the batch's first write (store__writable): the
     * scheduler opens a batch every turn, and most turns of a run with short trials
     * write nothing (a BEGIN IMMEDIATE and COMMIT cost their lock calls even then). */
    st->in_batch = 1;
    st->tx_open = 0;
    st->batch_rc = 0;
    st->batch_err[0] = 0;
    return 0;
}

int store_commit(store_t *st, char *err, size_t errlen)
{
    if (!st->in_batch)
        return store__err(err, errlen, STORE_ERR,
                          "%s: cannot commit: no batch is open (store_begin first)", st->path);
    int rc = st->batch_rc;
    if (rc)
        store__err(err, errlen, rc, "%s: batch rolled back after an earlier error: %s", st->path,
                   st->batch_err);
    /* A result added outside a batch waits without a transaction for the batch that
     * pending_added opens and commits at once: this is that commit, and it begins. */
    else if (!st->tx_open && (st->npend || st->npdec))
        rc = store__writable(st, "cannot commit", err, errlen);
    if (!rc && st->tx_open) { /* else the batch wrote nothing: nothing to commit */
        rc = store__flush(st, err, errlen);
        if (!rc) rc = run_stmt(st, STORE__COMMIT, "cannot commit", err, errlen);
        if (!rc) {
            double now = monotonic_s();
            if (now - st->last_checkpoint >= STORE_CHECKPOINT_S) {
                /* PASSIVE: copies what no reader still needs and never waits; a failure
                 * leaves the committed batch safe in the WAL, so it is not reported. */
                sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
                st->last_checkpoint = now;
            }
        }
    }
    /* After a failed commit (or a spoiled batch) SQLite may have rolled back already;
     * if it has not, roll back now so that the next batch starts clean. */
    if (rc) {
        if (!sqlite3_get_autocommit(st->db)) step_quietly(st, STORE__ROLLBACK);
        store__forget(st);
    }
    st->in_batch = 0;
    st->tx_open = 0;
    st->batch_rc = 0;
    return rc;
}
