/* store: opening and closing the database (its file, the schema image a new one starts
 * from, WAL mode) and the page cache. Not for: the schema (schema.c), batches (pending.c),
 * statements and errors (base.c), the rows themselves (write.c) or reading (query.c). */
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

/* WAL pages (4 KiB) between automatic checkpoints (docs/schema.md, "Durability"). */
#define STORE_CHECKPOINT_PAGES 10000

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
        int k = 0, end = 0;
        struct stat sb;
        /* exactly a name store__write_image gives, whole (not one a user added to), and a
         * plain file, as it made it */
        if (strncmp(e->d_name, base, bl) != 0 ||
            sscanf(e->d_name + bl, ".new-%ld-%d%n", &pid, &k, &end) != 2 || pid <= 0 ||
            e->d_name[bl + (size_t)end] != 0 ||
            fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
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
        st->last_checkpoint = store__now_s();
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
