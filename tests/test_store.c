/* Tests of store/: opening, the schema and its version check, every write, the views,
 * batches seen from a second connection, read-only queries, disk full (a forked child
 * under RLIMIT_FSIZE), and real formatting. Each case works in its own temporary
 * directory. Not for speed: bench/store_bench.c measures that. */
#include "tinytest.h"

#include "store/store.h"
#include "store/store_int.h" /* store__write_image */

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------------ */

struct tmp {
    char dir[512];
    char db[600];
};

static int tmp_make(struct tmp *t)
{
    const char *base = getenv("TUNE_BINARY_DIR");
    if (!base || access(base, W_OK) != 0) base = "/tmp";
    snprintf(t->dir, sizeof t->dir, "%s/test_store_XXXXXX", base);
    if (!mkdtemp(t->dir)) return -1;
    snprintf(t->db, sizeof t->db, "%s/tune.db", t->dir);
    return 0;
}

static void rm_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) return;
    if (S_ISDIR(sb.st_mode)) {
        chmod(path, 0700);
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_tree(sub);
        }
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void tmp_clean(struct tmp *t)
{
    rm_tree(t->dir);
}

static store_t *open_rw(const char *path)
{
    store_t *st = NULL;
    char err[512];
    int rc = store_open(path, 0, &st, err, sizeof err);
    if (rc != 0) fprintf(stderr, "store_open(%s): %d %s\n", path, rc, err);
    return st;
}

static store_t *open_ro(const char *path)
{
    store_t *st = NULL;
    char err[512];
    int rc = store_open(path, STORE_OPEN_READONLY, &st, err, sizeof err);
    if (rc != 0) fprintf(stderr, "store_open(%s, ro): %d %s\n", path, rc, err);
    return st;
}

/* Query results as text: columns joined by '|', rows by '\n', NULL as "NULL". */
struct qbuf {
    char s[8192];
    size_t n;
    int rows;
};

static void qb_add(struct qbuf *b, const char *s)
{
    size_t k = strlen(s);
    if (b->n + k + 1 > sizeof b->s) k = sizeof b->s - b->n - 1;
    memcpy(b->s + b->n, s, k);
    b->n += k;
    b->s[b->n] = 0;
}

static int qb_row(void *ud, int ncol, const char *const *names, const char *const *vals,
                  const int *types)
{
    (void)names;
    (void)types;
    struct qbuf *b = ud;
    if (b->rows++) qb_add(b, "\n");
    for (int c = 0; c < ncol; c++) {
        if (c) qb_add(b, "|");
        qb_add(b, vals[c] ? vals[c] : "NULL");
    }
    return 0;
}

/* Runs sql (printf-style) and returns its rows as text, in one of 4 rotating buffers. */
static const char *q(store_t *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *q(store_t *st, const char *fmt, ...)
{
    static struct qbuf bufs[4];
    static int next;
    struct qbuf *b = &bufs[next++ % 4];
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    b->n = 0;
    b->rows = 0;
    b->s[0] = 0;
    char err[512];
    int rc = store_query(st, sql, NULL, 0, qb_row, b, err, sizeof err);
    if (rc != 0) snprintf(b->s, sizeof b->s, "ERROR %d: %s", rc, err);
    return b->s;
}

static int64_t mk_exp(store_t *st, const char *name, int mode_max)
{
    store_experiment_t e = {.name = name,
                            .space_text = "{\"lr\": {\"loguniform\": [1e-4, 1e-1]}}",
                            .settings_json = "{\"num_trials\": 4}",
                            .metric = "loss",
                            .mode_max = mode_max,
                            .scheduler = "asha",
                            .results_dir = "/tmp/results",
                            .num_trials = 4,
                            .seed = 42};
    int64_t id = -1;
    char err[512];
    if (store_experiment_create(st, &e, 1000.5, &id, err, sizeof err) != 0) {
        fprintf(stderr, "experiment_create: %s\n", err);
        return -1;
    }
    return id;
}

static int64_t mk_trial(store_t *st, int64_t exp, int64_t no, const char *cfg)
{
    char name[32], dir[64];
    snprintf(name, sizeof name, "trial_%05lld", (long long)no);
    snprintf(dir, sizeof dir, "/tmp/results/%s", name);
    int64_t id = -1;
    char err[512];
    if (store_trial_create(st, exp, no, name, cfg, dir, &id, err, sizeof err) != 0) {
        fprintf(stderr, "trial_create: %s\n", err);
        return -1;
    }
    return id;
}

static int add_result(store_t *st, int64_t trial, int attempt, int64_t it, double metric)
{
    char json[256], err[512];
    snprintf(json, sizeof json, "{\"training_iteration\": %lld, \"loss\": %.17g, \"acc\": 0.5}",
             (long long)it, metric);
    store_result_t r = {.trial_id = trial,
                        .attempt = attempt,
                        .iteration = it,
                        .time_value = (double)it,
                        .metric = metric,
                        .wall_time = 2000.0 + (double)it,
                        .json = json,
                        .json_len = strlen(json)};
    int rc = store_result_add(st, &r, err, sizeof err);
    if (rc) fprintf(stderr, "result_add: %s\n", err);
    return rc;
}

/* Writes schema_version by hand, as a different tune would have. */
static int set_version_by_hand(const char *path, const char *value)
{
    sqlite3 *db = NULL;
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE meta SET value = %s WHERE key = 'schema_version'", value);
    int rc = sqlite3_open(path, &db);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* ---- open, create, close ------------------------------------------------------------ */

TEST(open_create_close)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    CHECK(access(t.db, F_OK) == 0);
    CHECK_STR(q(st, "SELECT value FROM meta WHERE key = 'schema_version'"), "4");
    CHECK_EQ_INT(STORE_SCHEMA_VERSION, 4);
    CHECK_STR(q(st, "SELECT value FROM meta WHERE key = 'created_by'"), "tune " TUNE_VERSION);
    CHECK_STR(q(st, "PRAGMA journal_mode"), "wal");
    CHECK_STR(q(st, "PRAGMA foreign_keys"), "1");
    CHECK_STR(q(st, "PRAGMA synchronous"), "1"); /* NORMAL */
    CHECK_STR(q(st, "PRAGMA wal_autocheckpoint"), "10000");
    CHECK_STR(q(st, "PRAGMA busy_timeout"), "5000");
    CHECK_STR(q(st, "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master"
                    " WHERE type IN ('table', 'view') ORDER BY name)"),
              "decisions,experiment_summary,experiments,lineage,meta,params,result_ranges,results,"
              "results_all,results_current,trial_summary,trials");
    CHECK_STR(q(st, "SELECT count(*) FROM experiment_summary"), "0");
    store_close(st);
    store_close(NULL); /* NULL-safe */
    /* A read-only handle on the same file works too and sees the schema. */
    st = open_ro(t.db);
    REQUIRE(st);
    CHECK_STR(q(st, "SELECT count(*) FROM trial_summary"), "0");
    store_close(st);
    tmp_clean(&t);
}

/* Everything of a database that its creation decides, as text, read with SQLite alone. */
static void describe(const char *path, char *out, size_t n)
{
    static const char *const sql[] = {
        "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master ORDER BY rowid",
        "SELECT key, value FROM meta ORDER BY key",
        "PRAGMA page_size",
        "PRAGMA journal_mode",
        "PRAGMA encoding",
        "PRAGMA auto_vacuum",
        "PRAGMA user_version",
        "PRAGMA application_id",
        "PRAGMA integrity_check"};
    sqlite3 *db = NULL;
    size_t k = 0;
    out[0] = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(out, n, "cannot open %s", path);
        sqlite3_close(db);
        return;
    }
    for (size_t i = 0; i < sizeof sql / sizeof *sql; i++) {
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(db, sql[i], -1, &s, NULL) != SQLITE_OK) {
            k += (size_t)snprintf(out + k, n - k, "error: %s\n", sqlite3_errmsg(db));
            continue;
        }
        while (sqlite3_step(s) == SQLITE_ROW && k < n)
            for (int c = 0; c < sqlite3_column_count(s) && k < n; c++) {
                const unsigned char *v = sqlite3_column_text(s, c);
                k += (size_t)snprintf(out + k, n - k, "%s%c", v ? (const char *)v : "NULL",
                                      c + 1 < sqlite3_column_count(s) ? '|' : '\n');
            }
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
}

static long file_bytes(const char *path, unsigned char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long k = (long)fread(buf, 1, n, f);
    fclose(f);
    return k;
}

/* How many of dir's files are a new database's image under its own name (".new-"). */
static int new_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".new-") != NULL;
    if (d) closedir(d);
    return n;
}

/* A new database is written from the build-time image of an empty one; a file that exists
 * but is empty is filled by running schema.sql. The two must be the same database. */
TEST(new_database_from_image_is_the_schema)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    char by_sql[700], image[700];
    snprintf(by_sql, sizeof by_sql, "%s/by_sql.db", t.dir);
    snprintf(image, sizeof image, "%s/image.db", t.dir);
    write_file(by_sql, "");
    store_t *st = open_rw(by_sql);
    REQUIRE(st);
    store_close(st);
    REQUIRE(store__write_image(image) == 0);
    CHECK(store__write_image(image) == -1); /* it exists: left as it is */
    static char a[65536], b[65536];
    describe(by_sql, a, sizeof a);
    describe(image, b, sizeof b);
    CHECK_CONTAINS(a, "CREATE VIEW trial_summary");
    CHECK_CONTAINS(a, "created_by|tune " TUNE_VERSION "\n");
    CHECK_CONTAINS(a, "4096\nwal\nUTF-8\n0\n0\n0\nok\n");
    CHECK_STR(b, a);

    /* store_open writes the image (the file is the image's bytes until a checkpoint), and
     * leaves no file of its own beside it. */
    st = open_rw(t.db);
    REQUIRE(st);
    static unsigned char x[1 << 18], y[1 << 18];
    long nx = file_bytes(t.db, x, sizeof x), ny = file_bytes(image, y, sizeof y);
    CHECK(nx > 0 && nx == ny && memcmp(x, y, (size_t)nx) == 0);
    store_close(st);
    CHECK_EQ_INT(new_files(t.dir), 0);
    tmp_clean(&t);
}

/* A new database's image left under its own name by a tune killed while writing it (an
 * older tune's, or where the file system has no O_TMPFILE) is removed by the next creation
 * beside it, once the process that made it is gone; a live process's is left to it. */
TEST(an_image_left_by_a_killed_tune_is_removed)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    char gone[800], live[800], users[800], link[800], target[800];
    snprintf(gone, sizeof gone, "%s.new-999999999-0", t.db); /* over any pid_max */
    snprintf(live, sizeof live, "%s.new-%ld-0", t.db, (long)getppid());
    /* names tune never gives, though they start like one: a user's file, and a symlink */
    snprintf(users, sizeof users, "%s.new-999999999-0.keep", t.db);
    snprintf(link, sizeof link, "%s.new-999999998-0", t.db);
    snprintf(target, sizeof target, "%s/target", t.dir);
    write_file(gone, "half an image");
    write_file(live, "another tune's, being written");
    write_file(users, "a user's");
    write_file(target, "a user's");
    REQUIRE(symlink(target, link) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    store_close(st);
    CHECK(access(gone, F_OK) != 0);
    CHECK(access(live, F_OK) == 0);
    CHECK(access(users, F_OK) == 0);
    struct stat sb;
    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    CHECK(access(target, F_OK) == 0);
    CHECK_EQ_INT(new_files(t.dir), 3);
    unlink(live);
    unlink(users);
    unlink(link);
    unlink(target);
    tmp_clean(&t);
}

TEST(reopen_keeps_data)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp1", 0);
    int64_t tr = mk_trial(st, e, 0, "{\"lr\": 0.1}");
    REQUIRE(e > 0 && tr > 0);
    for (int i = 1; i <= 5; i++)
        CHECK(add_result(st, tr, 1, i, 1.0 / i) == 0);
    store_close(st);

    st = open_rw(t.db);
    REQUIRE(st);
    int64_t id = 0;
    char err[512];
    CHECK_EQ_INT(store_experiment_find(st, "exp1", &id, err, sizeof err), 0);
    CHECK_EQ_INT(id, e);
    CHECK_STR(q(st, "SELECT count(*), min(metric) FROM results"), "5|0.2");
    store_close(st);
    st = open_ro(t.db);
    REQUIRE(st);
    CHECK_STR(q(st, "SELECT trial, iterations, best_metric FROM trial_summary"),
              "trial_00000|5|0.2");
    store_close(st);
    tmp_clean(&t);
}

TEST(schema_version_newer)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    store_close(st);
    REQUIRE(set_version_by_hand(t.db, "5") == SQLITE_OK);
    char err[512] = "", want[700];
    st = (store_t *)0x1; /* out-parameters stay untouched on error */
    CHECK_EQ_INT(store_open(t.db, 0, &st, err, sizeof err), STORE_VERSION);
    CHECK(st == (store_t *)0x1);
    snprintf(want, sizeof want,
             "%s was written by a newer tune (schema version 5, this tune knows 4)", t.db);
    CHECK_CONTAINS(err, want);
    err[0] = 0;
    CHECK_EQ_INT(store_open(t.db, STORE_OPEN_READONLY, &st, err, sizeof err), STORE_VERSION);
    CHECK_CONTAINS(err, want);
    tmp_clean(&t);
}

TEST(schema_version_older)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    store_close(st);
    REQUIRE(set_version_by_hand(t.db, "0") == SQLITE_OK);
    char err[512] = "";
    CHECK_EQ_INT(store_open(t.db, 0, &st, err, sizeof err), STORE_VERSION);
    CHECK_CONTAINS(err, "has schema version 0, which this tune cannot read (it knows 4)");
    tmp_clean(&t);
}

TEST(not_a_database)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    char text[2048];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = 0;
    memcpy(text, "lr,loss\n0.1,0.5\n", 16);
    write_file(t.db, text);
    store_t *st = NULL;
    char err[512] = "", want[700];
    snprintf(want, sizeof want, "%s is not a tune database: file is not a database", t.db);
    CHECK_EQ_INT(store_open(t.db, 0, &st, err, sizeof err), STORE_NOTDB);
    CHECK_STR(err, want);
    err[0] = 0;
    CHECK_EQ_INT(store_open(t.db, STORE_OPEN_READONLY, &st, err, sizeof err), STORE_NOTDB);
    CHECK_STR(err, want);
    /* The writable attempt must not have touched the file. */
    FILE *f = fopen(t.db, "r");
    REQUIRE(f);
    char back[4096];
    size_t n = fread(back, 1, sizeof back, f);
    fclose(f);
    CHECK_EQ_INT(n, strlen(text));
    CHECK(memcmp(back, text, strlen(text)) == 0);
    tmp_clean(&t);
}

TEST(foreign_or_empty_database)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    /* Someone else's SQLite file: tune must not add its tables to it. */
    sqlite3 *db = NULL;
    REQUIRE(sqlite3_open(t.db, &db) == SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE photos (id INTEGER PRIMARY KEY)", NULL, NULL, NULL);
    sqlite3_close(db);
    store_t *st = NULL;
    char err[512] = "";
    CHECK_EQ_INT(store_open(t.db, 0, &st, err, sizeof err), STORE_NOTDB);
    CHECK_CONTAINS(err, "is not a tune database: it is a SQLite database without tune's schema");
    REQUIRE(sqlite3_open(t.db, &db) == SQLITE_OK);
    sqlite3_stmt *s = NULL;
    sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &s, NULL);
    CHECK(sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) == 1);
    sqlite3_finalize(s);
    sqlite3_close(db);

    /* An empty file read-only: nothing to query yet. Writable: becomes a database. */
    char empty[700];
    snprintf(empty, sizeof empty, "%s/empty.db", t.dir);
    write_file(empty, "");
    err[0] = 0;
    CHECK_EQ_INT(store_open(empty, STORE_OPEN_READONLY, &st, err, sizeof err), STORE_NOTDB);
    CHECK_CONTAINS(err, "is not a tune database: it is empty");
    st = open_rw(empty);
    CHECK(st != NULL);
    store_close(st);
    tmp_clean(&t);
}

TEST(readonly_open_missing_file)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = NULL;
    char err[512] = "", want[700];
    CHECK_EQ_INT(store_open(t.db, STORE_OPEN_READONLY, &st, err, sizeof err), STORE_NOTFOUND);
    snprintf(want, sizeof want, "no database at %s", t.db);
    CHECK_STR(err, want);
    CHECK(st == NULL);
    CHECK(access(t.db, F_OK) != 0); /* and nothing was created */
    tmp_clean(&t);
}

TEST(create_in_missing_dir)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    char path[700];
    store_t *st = NULL;
    char err[512] = "";
    snprintf(path, sizeof path, "%s/no/such/dir/tune.db", t.dir);
    CHECK_EQ_INT(store_open(path, 0, &st, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "cannot create database");
    CHECK_CONTAINS(err, path);
    CHECK_CONTAINS(err, strerror(ENOENT));
    /* A path through a regular file. */
    char file[700];
    snprintf(file, sizeof file, "%s/plain", t.dir);
    write_file(file, "x");
    snprintf(path, sizeof path, "%s/plain/tune.db", t.dir);
    err[0] = 0;
    CHECK_EQ_INT(store_open(path, 0, &st, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, strerror(ENOTDIR));
    /* A directory where the file should be. */
    err[0] = 0;
    CHECK_EQ_INT(store_open(t.dir, 0, &st, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "is a directory; give the path of a database file inside it");
    err[0] = 0;
    CHECK_EQ_INT(store_open("", 0, &st, err, sizeof err), STORE_ERR);
    CHECK_STR(err, "no database path given");
    err[0] = 0;
    CHECK_EQ_INT(store_open(t.db, 4, &st, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "unknown store_open flags 0x4");
    tmp_clean(&t);
}

TEST(create_in_readonly_dir)
{
    if (geteuid() == 0) SKIP("root writes into read-only directories");
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    REQUIRE(chmod(t.dir, 0555) == 0);
    store_t *st = NULL;
    char err[512] = "";
    CHECK_EQ_INT(store_open(t.db, 0, &st, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "cannot create database");
    CHECK_CONTAINS(err, strerror(EACCES));
    tmp_clean(&t);
}

TEST(readonly_file_writable_open)
{
    if (geteuid() == 0) SKIP("root writes into read-only files");
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    store_close(st);
    REQUIRE(chmod(t.db, 0444) == 0);
    char err[512] = "";
    CHECK_EQ_INT(store_open(t.db, 0, &st, err, sizeof err), STORE_READONLY);
    CHECK_CONTAINS(err, "the file is read-only to this user");
    st = open_ro(t.db);
    CHECK(st != NULL);
    store_close(st);
    tmp_clean(&t);
}

/* ---- read-only queries -------------------------------------------------------------- */

TEST(readonly_query_refuses_writes)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    int64_t tr = mk_trial(st, e, 0, "{}");
    CHECK(add_result(st, tr, 1, 1, 0.5) == 0);
    store_close(st);

    st = open_ro(t.db);
    REQUIRE(st);
    static const char *const writes[] = {
        "INSERT INTO meta (key, value) VALUES ('x', 1)",
        "DELETE FROM results",
        "UPDATE trials SET status = 'ERROR'",
        "CREATE TABLE x (a)",
        "DROP VIEW trial_summary",
        "CREATE INDEX i ON results (metric)",
        "PRAGMA user_version = 3",
        "PRAGMA schema_version = 99",
        "PRAGMA application_id = 7",
        "REPLACE INTO meta (key, value) VALUES ('schema_version', 9)",
        "WITH x AS (SELECT 1) DELETE FROM decisions",
        "VACUUM",
    };
    for (size_t i = 0; i < sizeof writes / sizeof *writes; i++) {
        char err[512] = "";
        int rc = store_query(st, writes[i], NULL, 0, qb_row, &(struct qbuf){0}, err, sizeof err);
        if (rc != STORE_READONLY) fprintf(stderr, "not refused: %s (%d %s)\n", writes[i], rc, err);
        CHECK_EQ_INT(rc, STORE_READONLY);
        CHECK_STR(err, "tune query is read-only: the statement would write");
    }
    CHECK_STR(q(st, "SELECT count(*) FROM results"), "1");
    CHECK_STR(q(st, "PRAGMA user_version"), "0");
    CHECK_STR(q(st, "SELECT value FROM meta WHERE key = 'schema_version'"), "4");

    /* The writing API is refused too, with its own message. */
    char err[512] = "";
    CHECK_EQ_INT(store_begin(st, err, sizeof err), STORE_READONLY);
    CHECK_CONTAINS(err, "cannot begin a batch: the database was opened read-only");
    err[0] = 0;
    store_result_t r = {.trial_id = tr, .attempt = 1, .json = "{}"};
    CHECK_EQ_INT(store_result_add(st, &r, err, sizeof err), STORE_READONLY);
    CHECK_CONTAINS(err, "cannot add a result: the database was opened read-only");
    store_experiment_t ex = {.name = "other"};
    CHECK_EQ_INT(store_experiment_create(st, &ex, 1.0, NULL, err, sizeof err), STORE_READONLY);
    CHECK_CONTAINS(err, "cannot create the experiment: the database was opened read-only");
    store_decision_t d = {.trial_id = tr, .action = "stop"};
    CHECK_EQ_INT(store_decision_add(st, &d, err, sizeof err), STORE_READONLY);
    store_trial_update_t u = {.fields = STORE_TU_STATUS, .status = "ERROR"};
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), STORE_READONLY);
    CHECK_EQ_INT(store_trial_create(st, 1, 5, "t5", "{}", NULL, NULL, err, sizeof err),
                 STORE_READONLY);
    CHECK_EQ_INT(store_experiment_set_status(st, 1, "FINISHED", 1.0, err, sizeof err),
                 STORE_READONLY);
    store_close(st);

    /* The file is as it was. */
    st = open_rw(t.db);
    REQUIRE(st);
    CHECK_STR(q(st, "SELECT count(*) FROM results"), "1");
    CHECK_STR(q(st, "SELECT count(*) FROM experiments"), "1");
    store_close(st);
    tmp_clean(&t);
}

/* The database's identity (store_identity): made once, on the first call of a writable
 * handle, the same ever after and in a copy of the file; a reader of a file without one is
 * told so; a value tune did not write is refused; never inside a batch. */
TEST(identity_is_made_once_and_kept)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    char err[512] = "", a[STORE_ID_LEN + 1] = "", b[STORE_ID_LEN + 1] = "";
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    store_close(st);
    /* A new file has none until it is asked for (store_open writes nothing for it). */
    st = open_ro(t.db);
    REQUIRE(st);
    CHECK_EQ_INT(store_identity(st, a, err, sizeof err), STORE_NOTFOUND);
    CHECK_CONTAINS(err, "has no identity yet (a tune that writes it gives it one)");
    store_close(st);
    st = open_rw(t.db);
    REQUIRE(st);
    CHECK_EQ_INT(store_begin(st, err, sizeof err), 0);
    CHECK_EQ_INT(store_identity(st, a, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "cannot make the database's identity inside a batch");
    CHECK_EQ_INT(store_commit(st, err, sizeof err), 0);
    CHECK_EQ_INT(store_identity(st, a, err, sizeof err), 0);
    CHECK_EQ_INT(strlen(a), STORE_ID_LEN);
    CHECK_EQ_INT(strspn(a, "0123456789abcdef"), STORE_ID_LEN);
    CHECK_EQ_INT(store_identity(st, b, err, sizeof err), 0);
    CHECK_STR(b, a);
    store_close(st);
    /* Read back by a reader, and by a writer of the file later. */
    st = open_ro(t.db);
    REQUIRE(st);
    CHECK_EQ_INT(store_identity(st, b, err, sizeof err), 0);
    CHECK_STR(b, a);
    CHECK_STR(q(st, "SELECT value FROM meta WHERE key = 'database_id'"), a);
    store_close(st);
    /* Another database gets another one. */
    char other[700];
    snprintf(other, sizeof other, "%s/other.db", t.dir);
    st = open_rw(other);
    REQUIRE(st);
    CHECK_EQ_INT(store_identity(st, b, err, sizeof err), 0);
    CHECK(strcmp(a, b) != 0);
    /* A value tune did not write. */
    CHECK_EQ_INT(store_query(st, "UPDATE meta SET value = 'x/../..' WHERE key = 'database_id'",
                             NULL, 0, NULL, NULL, err, sizeof err),
                 0);
    CHECK_EQ_INT(store_identity(st, b, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "meta.database_id \"x/../..\" is not an identity tune wrote (32 hex "
                        "digits)");
    store_close(st);
    tmp_clean(&t);
}

TEST(query_one_statement_only)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    store_close(st);
    st = open_ro(t.db);
    REQUIRE(st);
    char err[512] = "";
    /* A write hidden behind a read is refused whole, and so is a second read. */
    CHECK_EQ_INT(
        store_query(st, "SELECT 1; DELETE FROM meta", NULL, 0, NULL, NULL, err, sizeof err),
        STORE_ERR);
    CHECK_CONTAINS(err, "give one SQL statement at a time");
    CHECK_CONTAINS(err, "DELETE FROM meta");
    err[0] = 0;
    CHECK_EQ_INT(store_query(st, "SELECT 1; SELECT 2", NULL, 0, NULL, NULL, err, sizeof err),
                 STORE_ERR);
    CHECK_CONTAINS(err, "give one SQL statement at a time");
    CHECK_STR(q(st, "SELECT count(*) FROM meta"), "2");
    /* Trailing semicolons and comments are fine. */
    CHECK_STR(q(st, "SELECT 7;  ; -- done\n /* really */ "), "7");
    CHECK_STR(q(st, "SELECT 8 -- no semicolon"), "8");
    store_close(st);
    tmp_clean(&t);
}

TEST(query_errors)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    char err[512] = "";
    CHECK_EQ_INT(store_query(st, "SELEC 1", NULL, 0, NULL, NULL, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "query failed at character 1: near \"SELEC\": syntax error");
    err[0] = 0;
    CHECK_EQ_INT(store_query(st, "SELECT nope FROM trials", NULL, 0, NULL, NULL, err, sizeof err),
                 STORE_ERR);
    CHECK_CONTAINS(err, "no such column: nope");
    err[0] = 0;
    CHECK_EQ_INT(store_query(st, "SELECT ?1, ?2", NULL, 0, NULL, NULL, err, sizeof err), STORE_ERR);
    CHECK_STR(err, "query failed: the statement has 2 parameters but 0 values were given");
    err[0] = 0;
    const char *b[] = {"x", "y"};
    CHECK_EQ_INT(store_query(st, "SELECT ?1", b, 2, NULL, NULL, err, sizeof err), STORE_ERR);
    CHECK_STR(err, "query failed: the statement has 1 parameter but 2 values were given");
    err[0] = 0;
    CHECK_EQ_INT(store_query(st, "  -- nothing\n", NULL, 0, NULL, NULL, err, sizeof err),
                 STORE_ERR);
    CHECK_STR(err, "query failed: the SQL text is empty");
    err[0] = 0;
    CHECK_EQ_INT(
        store_query(st, "SELECT json_extract('{bad', '$.a')", NULL, 0, NULL, NULL, err, sizeof err),
        STORE_ERR);
    CHECK_CONTAINS(err, "query failed: malformed JSON");
    store_close(st);
    tmp_clean(&t);
}

TEST(query_binds)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    mk_exp(st, "alpha", 0);
    mk_exp(st, "beta", 1);
    const char *b[] = {"beta", NULL, "it's"};
    struct qbuf out = {0};
    char err[512] = "";
    CHECK_EQ_INT(store_query(st,
                             "SELECT name, mode, ?2 IS NULL, ?3 FROM experiments WHERE name = ?1",
                             b, 3, qb_row, &out, err, sizeof err),
                 0);
    CHECK_STR(out.s, "beta|max|1|it's");
    /* A bound value is data, never SQL. */
    const char *inj[] = {"x' OR '1'='1"};
    memset(&out, 0, sizeof out);
    CHECK_EQ_INT(store_query(st, "SELECT count(*) FROM experiments WHERE name = ?1", inj, 1, qb_row,
                             &out, err, sizeof err),
                 0);
    CHECK_STR(out.s, "0");
    store_close(st);
    tmp_clean(&t);
}

struct stop_ctx {
    int calls;
    int stop_after;
    int ncol;
    char first_name[32];
    int types[4];
};

static int stop_cb(void *ud, int ncol, const char *const *names, const char *const *vals,
                   const int *types)
{
    (void)vals;
    struct stop_ctx *c = ud;
    c->calls++;
    c->ncol = ncol;
    snprintf(c->first_name, sizeof c->first_name, "%s", names[0]);
    for (int i = 0; i < ncol && i < 4; i++)
        c->types[i] = types[i];
    return c->calls >= c->stop_after;
}

TEST(query_row_callback_stops_early)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    struct stop_ctx c = {.stop_after = 3};
    char err[512] = "";
    CHECK_EQ_INT(store_query(st,
                             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n"
                             " WHERE i < 10) SELECT i AS num, i * 0.5, 'x', NULL FROM n",
                             NULL, 0, stop_cb, &c, err, sizeof err),
                 0);
    CHECK_EQ_INT(c.calls, 3);
    CHECK_EQ_INT(c.ncol, 4);
    CHECK_STR(c.first_name, "num");
    CHECK_EQ_INT(c.types[0], STORE_COL_INT);
    CHECK_EQ_INT(c.types[1], STORE_COL_REAL);
    CHECK_EQ_INT(c.types[2], STORE_COL_TEXT);
    CHECK_EQ_INT(c.types[3], STORE_COL_NULL);
    /* A NULL callback runs the statement to the end. */
    CHECK_EQ_INT(store_query(st, "SELECT 1", NULL, 0, NULL, NULL, err, sizeof err), 0);
    store_close(st);
    tmp_clean(&t);
}

TEST(query_real_formatting_round_trip)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    CHECK_STR(q(st, "SELECT 0.1"), "0.1");
    CHECK_STR(q(st, "SELECT 3.0, 2.5, -0.125, 1e300, 1e-7, 42, 9e999, -9e999"),
              "3.0|2.5|-0.125|1e+300|1e-07|42|Inf|-Inf");
    /* 1/3 needs 16 digits, 0.1 + 0.2 needs 17: both read back to the same double. */
    const char *third = q(st, "SELECT 1.0 / 3");
    CHECK_STR(third, "0.3333333333333333");
    CHECK(strtod(third, NULL) == 1.0 / 3);
    const char *sum = q(st, "SELECT 0.1 + 0.2");
    CHECK_STR(sum, "0.30000000000000004");
    CHECK(strtod(sum, NULL) == 0.1 + 0.2);
    /* Values written through the API come back bit for bit. */
    int64_t e = mk_exp(st, "exp", 0);
    int64_t tr = mk_trial(st, e, 0, "{}");
    double vals[] = {1.0 / 3, 2.0 / 3, 1e-310, 123456789.123456789, 0.1 + 0.2, -1.0 / 7};
    for (int i = 0; i < 6; i++)
        CHECK(add_result(st, tr, 1, i, vals[i]) == 0);
    for (int i = 0; i < 6; i++) {
        const char *v = q(st, "SELECT metric FROM results WHERE iteration = %d", i);
        CHECK(strtod(v, NULL) == vals[i]);
    }
    CHECK_STR(q(st, "SELECT x'00ff10', typeof(x'00')"), "00ff10|blob");
    struct stop_ctx c = {.stop_after = 1};
    char err[512];
    CHECK_EQ_INT(store_query(st, "SELECT x'01'", NULL, 0, stop_cb, &c, err, sizeof err), 0);
    CHECK_EQ_INT(c.types[0], STORE_COL_BLOB);
    store_close(st);
    tmp_clean(&t);
}

/* ---- experiments -------------------------------------------------------------------- */

TEST(experiment_create_find_duplicate)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t id = mk_exp(st, "mnist-asha", 1);
    REQUIRE(id > 0);
    CHECK_STR(q(st, "SELECT name, status, created_at, ended_at, metric, mode, scheduler, seed,"
                    " num_trials, results_dir, space_json, settings_json FROM experiments"),
              "mnist-asha|RUNNING|1000.5|NULL|loss|max|asha|42|4|/tmp/results|"
              "{\"lr\": {\"loguniform\": [1e-4, 1e-1]}}|{\"num_trials\": 4}");
    int64_t found = 0;
    char err[512] = "";
    CHECK_EQ_INT(store_experiment_find(st, "mnist-asha", &found, err, sizeof err), 0);
    CHECK_EQ_INT(found, id);
    found = 77;
    CHECK_EQ_INT(store_experiment_find(st, "nope", &found, err, sizeof err), STORE_NOTFOUND);
    CHECK_CONTAINS(err, "no experiment named \"nope\"");
    CHECK_EQ_INT(found, 77);

    store_experiment_t dup = {.name = "mnist-asha", .mode_max = 0};
    int64_t id2 = 99;
    err[0] = 0;
    CHECK_EQ_INT(store_experiment_create(st, &dup, 1.0, &id2, err, sizeof err), STORE_EXISTS);
    CHECK_CONTAINS(err, "an experiment named \"mnist-asha\" exists already");
    CHECK_EQ_INT(id2, 99);
    store_experiment_t noname = {.name = ""};
    CHECK_EQ_INT(store_experiment_create(st, &noname, 1.0, &id2, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "cannot create the experiment: it has no name");

    /* A seed above 2^63 keeps its 64 bits. */
    store_experiment_t big = {.name = "big-seed", .seed = UINT64_MAX};
    CHECK_EQ_INT(store_experiment_create(st, &big, 1.0, &id2, err, sizeof err), 0);
    CHECK_STR(q(st, "SELECT seed, mode FROM experiments WHERE name = 'big-seed'"), "-1|min");

    CHECK_EQ_INT(store_experiment_set_status(st, id, "FINISHED", 2000.25, err, sizeof err), 0);
    CHECK_STR(q(st, "SELECT status, ended_at FROM experiments WHERE id = %lld", (long long)id),
              "FINISHED|2000.25");
    CHECK_EQ_INT(store_experiment_set_status(st, id, "RUNNING", 3000, err, sizeof err), 0);
    CHECK_STR(q(st, "SELECT status, ended_at FROM experiments WHERE id = %lld", (long long)id),
              "RUNNING|NULL");
    CHECK_EQ_INT(store_experiment_set_status(st, id, "INTERRUPTED", 4000, err, sizeof err), 0);
    CHECK_EQ_INT(store_experiment_set_status(st, id, "DONE", 1, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "unknown status \"DONE\" (RUNNING, FINISHED or INTERRUPTED)");
    CHECK_EQ_INT(store_experiment_set_status(st, 12345, "FINISHED", 1, err, sizeof err),
                 STORE_NOTFOUND);
    CHECK_CONTAINS(err, "no experiment with id 12345");
    CHECK_STR(q(st, "SELECT status FROM experiments WHERE id = %lld", (long long)id),
              "INTERRUPTED");
    store_close(st);
    tmp_clean(&t);
}

/* ---- trials ------------------------------------------------------------------------- */

TEST(trial_create_with_params)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    const char *cfg =
        "{\"lr\": 0.001, \"layers\": 3, \"opt\": \"adam\", \"bn\": true,"
        " \"drop\": false, \"sizes\": [64, 128, 0.1], \"net\": {\"a\": 1.5, \"b\": \"q\\\"x\"},"
        " \"none\": null, \"third\": 0.3333333333333333, \"big\": 1e300,"
        " \"name\": \"caf\\u00e9\",\t\"huge\" :12345678901234567890 ,"
        " \"deep\": {\"x\": [1, {\"y\": [\"]\", \"}\"]}], \"z\": {}}, \"empty\": [ ]}";
    int64_t tr = mk_trial(st, e, 7, cfg);
    REQUIRE(tr > 0);
    CHECK_STR(q(st,
                "SELECT experiment_id = %lld, trial_no, name, status, early_stopped, attempt,"
                " trial_dir FROM trials",
                (long long)e),
              "1|7|trial_00007|PENDING|0|1|/tmp/results/trial_00007");
    CHECK_STR(q(st, "SELECT config FROM trials"), cfg); /* verbatim */
    CHECK_STR(q(st, "SELECT count(*) FROM params WHERE trial_id = %lld", (long long)tr), "14");
    CHECK_STR(q(st, "SELECT value_json FROM params WHERE name = 'deep'"),
              "{\"x\":[1,{\"y\":[\"]\",\"}\"]}],\"z\":{}}");
    CHECK_STR(q(st, "SELECT value_json FROM params WHERE name = 'empty'"), "[]");
    CHECK_STR(q(st, "SELECT value_real, value_text, value_json FROM params WHERE name = 'lr'"),
              "0.001|NULL|0.001");
    CHECK_STR(q(st, "SELECT value_real, value_text, value_json FROM params WHERE name = 'layers'"),
              "3.0|NULL|3");
    CHECK_STR(q(st, "SELECT value_real, value_text, value_json FROM params WHERE name = 'opt'"),
              "NULL|adam|\"adam\"");
    CHECK_STR(q(st, "SELECT value_real, value_text, value_json FROM params WHERE name = 'bn'"),
              "1.0|NULL|true");
    CHECK_STR(q(st, "SELECT value_real, value_text, value_json FROM params WHERE name = 'drop'"),
              "0.0|NULL|false");
    CHECK_STR(q(st, "SELECT value_real, value_text, value_json FROM params WHERE name = 'sizes'"),
              "NULL|NULL|[64,128,0.1]"); /* the user's text, less its spaces */
    CHECK_STR(q(st, "SELECT value_real, value_text, value_json FROM params WHERE name = 'net'"),
              "NULL|NULL|{\"a\":1.5,\"b\":\"q\\\"x\"}");
    CHECK_STR(q(st, "SELECT value_real, value_text, value_json FROM params WHERE name = 'none'"),
              "NULL|NULL|null");
    CHECK_STR(q(st, "SELECT value_real, value_json FROM params WHERE name = 'third'"),
              "0.3333333333333333|0.3333333333333333");
    CHECK_STR(q(st, "SELECT value_real, value_json FROM params WHERE name = 'big'"),
              "1e+300|1e300");
    CHECK_STR(q(st, "SELECT value_text, value_json, json_extract(value_json, '$') FROM params"
                    " WHERE name = 'name'"),
              "caf\xc3\xa9|\"caf\\u00e9\"|caf\xc3\xa9");
    CHECK_STR(q(st, "SELECT value_real, value_json FROM params WHERE name = 'huge'"),
              "1.2345678901234567e+19|12345678901234567890");
    /* value_json agrees with SQLite's own reading of the configuration. */
    CHECK_STR(
        q(st,
          "SELECT count(*) FROM params p JOIN trials t ON t.id = p.trial_id"
          " WHERE json_extract(p.value_json, '$') IS NOT json_extract(t.config, '$.' || p.name)"),
        "0");
    /* The point of params: plain SQL filters on parameters. */
    mk_trial(st, e, 8, "{\"lr\": 0.5, \"opt\": \"sgd\"}");
    CHECK_STR(q(st, "SELECT t.trial_no FROM trials t JOIN params p ON p.trial_id = t.id"
                    " WHERE p.name = 'lr' AND p.value_real < 0.01"),
              "7");
    CHECK_STR(q(st, "SELECT t.trial_no FROM trials t JOIN params p ON p.trial_id = t.id"
                    " WHERE p.name = 'opt' AND p.value_text = 'sgd'"),
              "8");
    /* An empty configuration has no params. */
    int64_t tr3 = mk_trial(st, e, 9, "{}");
    CHECK_STR(q(st, "SELECT count(*) FROM params WHERE trial_id = %lld", (long long)tr3), "0");
    store_close(st);
    tmp_clean(&t);
}

TEST(trial_params_match_sqlite_json)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    /* value_json is the user's text of each value: whatever the quoting, escaping and
     * spacing, SQLite must read it as it reads that value inside the configuration. */
    static const char *const cfgs[] = {
        "{\"a\\\"b\": \"x\\\\\", \"c\": \"\\\\\\\"\", \"d\" : [ \"\\\\\", {\"e\\\"\":\"]\"} ] ,"
        " \"f\":-0.0, \"g\":1E+2}",
        "{\n\t\"k\"\n:\n[\n1\n,\n2\n]\n,\r\n\"l\":\"tab\\there\",\"m\":\"\\u00e9\\ud83d\\ude00\"}",
        "{\"\xc3\xa9t\xc3\xa9\": {\"a\": {\"b\": {\"c\": [[[]]]}}}, \"n\": -1.5e-300, \"o\": 0}",
        "{\"dup-looking\": \"a,b:c}\", \"x\": true, \"y\": false, \"z\": null}",
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++)
        CHECK(mk_trial(st, e, (int64_t)i, cfgs[i]) > 0);
    CHECK_STR(q(st, "SELECT count(*) FROM params"),
              q(st, "SELECT count(*) FROM trials t, json_each(t.config)"));
    CHECK_STR(q(st, "SELECT count(*) FROM params p JOIN trials t ON t.id = p.trial_id"
                    " JOIN json_each(t.config) j ON j.key = p.name"
                    /* SQLite 3.40's fullkey is no path for a key with a '"' in it */
                    " WHERE instr(p.name, '\"') = 0 AND (NOT json_valid(p.value_json)"
                    " OR json_extract(p.value_json, '$') IS NOT json_extract(t.config, j.fullkey)"
                    " OR json_type(p.value_json) IS NOT j.type)"),
              "0");
    CHECK_STR(q(st, "SELECT value_json, value_text = json_extract(value_json, '$') FROM params"
                    " WHERE name = 'a\"b'"),
              "\"x\\\\\"|1");
    CHECK_STR(q(st, "SELECT value_json FROM params WHERE name = 'd'"),
              "[\"\\\\\",{\"e\\\"\":\"]\"}]");
    CHECK_STR(q(st, "SELECT value_json FROM params WHERE name = 'k'"), "[1,2]");
    /* SQLite keeps integral reals as integers on disk, and so loses the sign of -0.0;
     * value_json keeps what the user wrote. */
    CHECK_STR(q(st, "SELECT value_json, value_real FROM params WHERE name = 'f'"), "-0.0|0.0");
    store_close(st);
    tmp_clean(&t);
}

TEST(trial_create_errors)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    int64_t id = 5;
    char err[512] = "";
    CHECK_EQ_INT(store_trial_create(st, e, 0, "t0", "{\"lr\": 0.1,", NULL, &id, err, sizeof err),
                 STORE_ERR);
    CHECK_CONTAINS(err,
                   "cannot create trial 0: its configuration is not valid JSON (at offset 11)");
    CHECK_EQ_INT(store_trial_create(st, e, 0, "t0", "[1, 2]", NULL, &id, err, sizeof err),
                 STORE_ERR);
    CHECK_CONTAINS(err, "cannot create trial 0: its configuration is not a JSON object");
    CHECK_EQ_INT(store_trial_create(st, e, 0, "t0", NULL, NULL, &id, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "its configuration is not a JSON object");
    CHECK_EQ_INT(store_trial_create(st, e, 0, "", "{}", NULL, &id, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "cannot create trial 0: it has no name");
    CHECK_EQ_INT(store_trial_create(st, 999, 0, "t0", "{}", NULL, &id, err, sizeof err),
                 STORE_NOTFOUND);
    CHECK_CONTAINS(err, "cannot create trial 0: no experiment with id 999");
    CHECK_EQ_INT(id, 5);
    CHECK(mk_trial(st, e, 0, "{\"a\": 1}") > 0);
    CHECK_EQ_INT(store_trial_create(st, e, 0, "again", "{}", NULL, &id, err, sizeof err),
                 STORE_EXISTS);
    CHECK_CONTAINS(err, "has a trial 0 already");
    /* A key given twice: neither the trial nor any of its params is left behind, and an
     * open batch goes on. */
    REQUIRE(store_begin(st, err, sizeof err) == 0);
    CHECK(mk_trial(st, e, 1, "{\"b\": 2}") > 0);
    CHECK_EQ_INT(store_trial_create(st, e, 2, "t2", "{\"a\": 1, \"c\": 3, \"a\": 2}", NULL, &id,
                                    err, sizeof err),
                 STORE_ERR);
    CHECK_CONTAINS(err, "cannot create trial 2: the configuration has the key \"a\" twice");
    CHECK(mk_trial(st, e, 3, "{\"d\": 4}") > 0);
    CHECK_EQ_INT(store_commit(st, err, sizeof err), 0);
    CHECK_STR(q(st, "SELECT group_concat(trial_no) FROM trials"), "0,1,3");
    CHECK_STR(q(st, "SELECT group_concat(name) FROM (SELECT name FROM params ORDER BY name)"),
              "a,b,d");
    /* The same outside a batch. */
    CHECK_EQ_INT(
        store_trial_create(st, e, 4, "t4", "{\"x\": 1, \"x\": 1}", NULL, &id, err, sizeof err),
        STORE_ERR);
    CHECK_STR(q(st, "SELECT count(*) FROM trials WHERE trial_no = 4"), "0");
    CHECK(mk_trial(st, e, 4, "{\"x\": 1}") > 0);
    store_close(st);
    tmp_clean(&t);
}

TEST(trial_update_each_field_group)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    int64_t tr = mk_trial(st, e, 0, "{}");
    REQUIRE(tr > 0);
    const char *cols = "SELECT status, early_stopped, slice, started_at, ended_at, exit_code,"
                       " exit_signal, error, stderr_tail, pid, exec_id, node, attempt FROM trials";
    /* Every field filled with junk: only the ones named in `fields` may land. */
    store_trial_update_t u = {.status = "RUNNING",
                              .early_stopped = 1,
                              .slice = "gpu:0,1",
                              .started_at = 100.5,
                              .ended_at = 200.25,
                              .exit_code = 3,
                              .exit_signal = 9,
                              .error = "boom",
                              .stderr_tail = "Traceback...",
                              .pid = 4242,
                              .exec_id = "12345.3",
                              .node = "node07",
                              .attempt = 2};
    char err[512] = "";
    CHECK_STR(q(st, "%s", cols), "PENDING|0|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|1");
    u.fields = STORE_TU_STATUS;
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);
    CHECK_STR(q(st, "%s", cols), "RUNNING|0|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|1");
    u.fields = STORE_TU_EARLY_STOPPED;
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);
    CHECK_STR(q(st, "%s", cols), "RUNNING|1|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|1");
    u.fields = STORE_TU_SLICE;
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);
    CHECK_STR(q(st, "%s", cols),
              "RUNNING|1|gpu:0,1|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|1");
    u.fields = STORE_TU_STARTED;
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);
    CHECK_STR(q(st, "%s", cols),
              "RUNNING|1|gpu:0,1|100.5|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|1");
    u.fields = STORE_TU_ENDED;
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);
    CHECK_STR(q(st, "%s", cols),
              "RUNNING|1|gpu:0,1|100.5|200.25|NULL|NULL|NULL|NULL|NULL|NULL|NULL|1");
    u.fields = STORE_TU_EXIT;
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);
    CHECK_STR(q(st, "%s", cols), "RUNNING|1|gpu:0,1|100.5|200.25|3|9|NULL|NULL|NULL|NULL|NULL|1");
    u.fields = STORE_TU_ERROR;
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);
    CHECK_STR(q(st, "%s", cols),
              "RUNNING|1|gpu:0,1|100.5|200.25|3|9|boom|Traceback...|NULL|NULL|NULL|1");
    u.fields = STORE_TU_PID;
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);
    CHECK_STR(q(st, "%s", cols),
              "RUNNING|1|gpu:0,1|100.5|200.25|3|9|boom|Traceback...|4242|NULL|NULL|1");
    u.fields = STORE_TU_EXEC_ID;
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);
    CHECK_STR(q(st, "%s", cols),
              "RUNNING|1|gpu:0,1|100.5|200.25|3|9|boom|Traceback...|4242|12345.3|node07|1");
    u.fields = STORE_TU_ATTEMPT;
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);
    CHECK_STR(q(st, "%s", cols),
              "RUNNING|1|gpu:0,1|100.5|200.25|3|9|boom|Traceback...|4242|12345.3|node07|2");

    /* "None" values clear: exit_code -1, exit_signal 0, pid 0, NaN times, NULL text. */
    store_trial_update_t clear = {.fields = STORE_TU_EXIT | STORE_TU_ERROR | STORE_TU_PID |
                                            STORE_TU_EXEC_ID | STORE_TU_STARTED | STORE_TU_ENDED |
                                            STORE_TU_SLICE | STORE_TU_EARLY_STOPPED |
                                            STORE_TU_STATUS,
                                  .status = "TERMINATED",
                                  .exit_code = -1,
                                  .exit_signal = 0,
                                  .started_at = NAN,
                                  .ended_at = NAN};
    CHECK_EQ_INT(store_trial_update(st, tr, &clear, err, sizeof err), 0);
    CHECK_STR(q(st, "%s", cols),
              "TERMINATED|0|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|2");
    u.fields = 0; /* nothing to write is fine */
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);

    u.fields = STORE_TU_STATUS;
    u.status = "DONE";
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "unknown status \"DONE\" (PENDING, RUNNING, PAUSED, TERMINATED or ERROR)");
    u.status = "PAUSED";
    CHECK_EQ_INT(store_trial_update(st, 4711, &u, err, sizeof err), STORE_NOTFOUND);
    CHECK_CONTAINS(err, "cannot update trial id 4711: no such trial");
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);
    CHECK_STR(q(st, "SELECT status FROM trials"), "PAUSED");
    store_close(st);
    tmp_clean(&t);
}

/* ---- results and decisions ---------------------------------------------------------- */

TEST(results_nan_metric_is_null)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    int64_t tr = mk_trial(st, e, 0, "{}");
    const char *json = "{\"training_iteration\": 1, \"loss\": null, \"acc\": 0.25}XXXX";
    store_result_t r = {.trial_id = tr,
                        .attempt = 1,
                        .iteration = 1,
                        .time_value = NAN,
                        .metric = NAN,
                        .wall_time = 5.5,
                        .json = json,
                        .json_len = strlen(json) - 4}; /* json_len is honoured */
    char err[512] = "";
    CHECK_EQ_INT(store_result_add(st, &r, err, sizeof err), 0);
    CHECK_STR(
        q(st,
          "SELECT trial_id = %lld, attempt, iteration, time_value, metric, wall_time,"
          " data, json_extract(data, '$.acc') FROM results",
          (long long)tr),
        "1|1|1|NULL|NULL|5.5|{\"training_iteration\": 1, \"loss\": null, \"acc\": 0.25}|0.25");
    /* json_len 0: the text is NUL-terminated. */
    r.json = "{\"loss\": 0.5}";
    r.json_len = 0;
    r.metric = 0.5;
    r.iteration = 2;
    CHECK_EQ_INT(store_result_add(st, &r, err, sizeof err), 0);
    CHECK_STR(q(st, "SELECT data, metric FROM results WHERE iteration = 2"), "{\"loss\": 0.5}|0.5");
    /* NULL metrics take no part in best or last-by-value questions. */
    CHECK_STR(q(st, "SELECT iterations, best_metric, last_metric FROM trial_summary"), "2|0.5|0.5");
    r.trial_id = 999;
    CHECK_EQ_INT(store_result_add(st, &r, err, sizeof err), STORE_NOTFOUND);
    CHECK_CONTAINS(err, "cannot add a result: no trial with id 999");
    r.trial_id = 0; /* 0 marks a free slot in the store's cache of known trials */
    CHECK_EQ_INT(store_result_add(st, &r, err, sizeof err), STORE_NOTFOUND);
    CHECK_CONTAINS(err, "cannot add a result: no trial with id 0");
    /* Inside a batch the check is the same, at once, and the batch goes on. */
    REQUIRE(store_begin(st, err, sizeof err) == 0);
    r.trial_id = 998;
    CHECK_EQ_INT(store_result_add(st, &r, err, sizeof err), STORE_NOTFOUND);
    r.trial_id = tr;
    r.iteration = 3;
    CHECK_EQ_INT(store_result_add(st, &r, err, sizeof err), 0);
    CHECK_EQ_INT(store_commit(st, err, sizeof err), 0);
    CHECK_STR(q(st, "SELECT count(*), max(iteration) FROM results"), "3|3");
    store_close(st);
    tmp_clean(&t);
}

/* Population Based Training's exploits: one lineage row each, written in the open batch,
 * and the exploited trial's new configuration replaces the old one, params and all. */
TEST(lineage_recorded)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    int64_t a = mk_trial(st, e, 0, "{\"lr\": 0.1, \"opt\": \"sgd\"}");
    int64_t b = mk_trial(st, e, 1, "{\"lr\": 0.01, \"opt\": \"adam\"}");
    char err[512] = "";
    REQUIRE(store_begin(st, err, sizeof err) == 0);
    store_lineage_t l = {.experiment_id = e,
                         .trial_id = a,
                         .attempt = 2,
                         .iteration = 4,
                         .time_value = 4,
                         .donor_trial_id = b,
                         .donor_attempt = 1,
                         .donor_iteration = 4,
                         .donor_time_value = 4,
                         .donor_checkpoint = "/r/trial_00001/checkpoints/ckpt_4",
                         .resume_from = "/r/trial_00000/resume/ckpt_4",
                         .old_config = "{\"lr\": 0.1, \"opt\": \"sgd\"}",
                         .new_config = "{\"lr\": 0.012, \"opt\": \"adam\"}",
                         .explore = "{\"lr\": \"*1.2\"}",
                         .value = 0.9,
                         .donor_value = NAN,
                         .wall_time = 12.5};
    CHECK_EQ_INT(store_lineage_add(st, &l, err, sizeof err), 0);
    CHECK_EQ_INT(store_trial_set_config(st, a, l.new_config, err, sizeof err), 0);
    CHECK_EQ_INT(store_commit(st, err, sizeof err), 0);
    CHECK_STR(q(st,
                "SELECT trial_id = %lld, attempt, iteration, donor_trial_id = %lld,"
                " donor_checkpoint, resume_from, json_extract(new_config, '$.lr'), explore,"
                " value, donor_value IS NULL, wall_time FROM lineage",
                (long long)a, (long long)b),
              "1|2|4|1|/r/trial_00001/checkpoints/ckpt_4|/r/trial_00000/resume/ckpt_4|0.012|"
              "{\"lr\": \"*1.2\"}|0.9|1|12.5");
    CHECK_STR(
        q(st, "SELECT json_extract(config, '$.opt') FROM trials WHERE id = %lld", (long long)a),
        "adam");
    CHECK_STR(q(st,
                "SELECT group_concat(name || '=' || value_json, ',') FROM params"
                " WHERE trial_id = %lld",
                (long long)a),
              "lr=0.012,opt=\"adam\"");
    /* Errors: no new configuration, a configuration that is no object, no such trial or
     * experiment. */
    l.new_config = NULL;
    CHECK_EQ_INT(store_lineage_add(st, &l, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "cannot record the lineage of trial id 1: it has no new configuration");
    l.new_config = "{}";
    l.experiment_id = 999;
    CHECK_EQ_INT(store_lineage_add(st, &l, err, sizeof err), STORE_NOTFOUND);
    CHECK_CONTAINS(err, "no experiment with id 999");
    CHECK_EQ_INT(store_trial_set_config(st, a, "[1]", err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "cannot change the configuration of trial id 1: it is not a JSON object");
    CHECK_EQ_INT(store_trial_set_config(st, 999, "{}", err, sizeof err), STORE_NOTFOUND);
    CHECK_CONTAINS(err, "no such trial");
    CHECK_STR(q(st, "SELECT count(*) FROM lineage"), "1");
    /* tune rm's delete takes the lineage with the experiment */
    CHECK_EQ_INT(store_experiment_delete(st, e, err, sizeof err), 0);
    CHECK_STR(q(st, "SELECT count(*) FROM lineage"), "0");
    store_close(st);
    tmp_clean(&t);
}

/* A version-2 file (no lineage table) gains it on a writable open, with the very text a
 * new file gets; a read-only open reads it as it is. */
TEST(version_2_gains_lineage)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    char *fresh = strdup(q(st, "SELECT group_concat(sql, ';') FROM (SELECT sql FROM sqlite_master"
                               " WHERE tbl_name = 'lineage' ORDER BY name)"));
    int64_t e = mk_exp(st, "old", 0);
    REQUIRE(e > 0);
    store_close(st);
    sqlite3 *db = NULL;
    REQUIRE(sqlite3_open(t.db, &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db,
                         "DROP TABLE lineage; UPDATE meta SET value = 2 WHERE key = "
                         "'schema_version'",
                         NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    st = open_ro(t.db);
    REQUIRE(st);
    CHECK_STR(q(st, "SELECT value FROM meta WHERE key = 'schema_version'"), "2");
    CHECK_STR(q(st, "SELECT count(*) FROM sqlite_master WHERE name = 'lineage'"), "0");
    store_close(st);
    st = open_rw(t.db);
    REQUIRE(st);
    CHECK_STR(q(st, "SELECT value FROM meta WHERE key = 'schema_version'"), "4");
    CHECK_STR(q(st, "SELECT group_concat(sql, ';') FROM (SELECT sql FROM sqlite_master"
                    " WHERE tbl_name = 'lineage' ORDER BY name)"),
              fresh);
    CHECK_STR(q(st, "SELECT name FROM experiments"), "old");
    free(fresh);
    store_close(st);
    tmp_clean(&t);
}

/* A version-3 file said which "stop" criterion completed a trial only in the decision's
 * sentence: the upgrade to version 4 moves it into decisions.criterion, once, and a
 * decision that merely words alike keeps none. */
TEST(version_3_gains_criterion)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "old", 0), tr = 0;
    REQUIRE(e > 0);
    char err[256];
    REQUIRE(store_trial_create(st, e, 0, "trial_00000", "{}", "/tmp/x", &tr, err, sizeof err) == 0);
    store_decision_t d = {.trial_id = tr,
                          .iteration = 5,
                          .time_value = 5,
                          .action = "complete",
                          .bracket = -1,
                          .rung = -1,
                          .milestone = NAN,
                          .value = 0.9,
                          .cutoff = 0.9,
                          .reason = "reached stop criterion val/acc: 0.9 >= 0.9",
                          .criterion = "val/acc"};
    REQUIRE(store_decision_add(st, &d, err, sizeof err) == 0);
    d.action = "stop";
    d.criterion = NULL;
    d.reason = "reached stop criterion x: said a user's sentence";
    REQUIRE(store_decision_add(st, &d, err, sizeof err) == 0);
    CHECK_STR(q(st, "SELECT group_concat(ifnull(criterion, '-'), ',') FROM decisions"),
              "val/acc,-");
    store_close(st);
    sqlite3 *db = NULL;
    REQUIRE(sqlite3_open(t.db, &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db,
                         "ALTER TABLE decisions DROP COLUMN criterion; UPDATE meta SET value = 3"
                         " WHERE key = 'schema_version'",
                         NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    st = open_ro(t.db); /* a reader reads it as it is */
    REQUIRE(st);
    CHECK_STR(q(st, "SELECT value FROM meta WHERE key = 'schema_version'"), "3");
    store_close(st);
    st = open_rw(t.db);
    REQUIRE(st);
    CHECK_STR(q(st, "SELECT value FROM meta WHERE key = 'schema_version'"), "4");
    CHECK_STR(q(st, "SELECT group_concat(ifnull(criterion, '-'), ',') FROM decisions"),
              "val/acc,-");
    store_close(st);
    tmp_clean(&t);
}

TEST(decisions_recorded)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    int64_t tr = mk_trial(st, e, 0, "{}");
    store_decision_t d = {.trial_id = tr,
                          .iteration = 4,
                          .time_value = 4,
                          .action = "continue",
                          .bracket = -1,
                          .rung = 0,
                          .milestone = 4,
                          .value = 0.75,
                          .cutoff = NAN,
                          .reason = "first result at rung 0 (milestone 4): no cutoff yet",
                          .wall_time = 77.5};
    char err[512] = "";
    CHECK_EQ_INT(store_decision_add(st, &d, err, sizeof err), 0);
    d.iteration = 16;
    d.time_value = 16;
    d.action = "stop";
    d.bracket = 1;
    d.rung = 1;
    d.milestone = 16;
    d.value = NAN;
    d.cutoff = 0.5;
    d.reason = "worse than rung 1 cutoff at milestone 16";
    CHECK_EQ_INT(store_decision_add(st, &d, err, sizeof err), 0);
    CHECK_STR(q(st, "SELECT iteration, time_value, action, bracket, rung, milestone, value, cutoff,"
                    " reason, wall_time FROM decisions ORDER BY id"),
              "4|4.0|continue|NULL|0|4.0|0.75|NULL|first result at rung 0 (milestone 4): no cutoff "
              "yet|77.5\n16|16.0|stop|1|1|16.0|NULL|0.5|worse than rung 1 cutoff at milestone "
              "16|77.5");
    d.rung = -1;
    d.milestone = NAN;
    d.action = "complete";
    CHECK_EQ_INT(store_decision_add(st, &d, err, sizeof err), 0);
    CHECK_STR(q(st, "SELECT rung, milestone FROM decisions WHERE action = 'complete'"),
              "NULL|NULL");
    /* In a batch decisions wait with the results, keep their order, and are seen by
     * others only after the commit. */
    store_t *r = open_ro(t.db);
    REQUIRE(r);
    REQUIRE(store_begin(st, err, sizeof err) == 0);
    for (int i = 0; i < 40; i++) {
        d.iteration = 100 + i;
        d.reason = i % 2 ? NULL : "even";
        CHECK_EQ_INT(store_decision_add(st, &d, err, sizeof err), 0);
        if (i % 3 == 0) add_result(st, tr, 1, 100 + i, 0.5);
    }
    CHECK_STR(q(r, "SELECT count(*) FROM decisions"), "3");
    CHECK_EQ_INT(store_commit(st, err, sizeof err), 0);
    CHECK_STR(q(r, "SELECT count(*), min(iteration), max(iteration), count(reason) FROM decisions"
                   " WHERE iteration >= 100"),
              "40|100|139|20");
    CHECK_STR(q(r, "SELECT count(*) FROM (SELECT iteration, lag(iteration) OVER (ORDER BY id) AS"
                   " prev FROM decisions WHERE iteration >= 100) WHERE prev >= iteration"),
              "0");
    store_close(r);
    d.action = NULL;
    CHECK_EQ_INT(store_decision_add(st, &d, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "cannot add a decision: it has no action");
    d.action = "stop";
    d.trial_id = 31337;
    CHECK_EQ_INT(store_decision_add(st, &d, err, sizeof err), STORE_NOTFOUND);
    CHECK_CONTAINS(err, "cannot add a decision: no trial with id 31337");
    store_close(st);
    tmp_clean(&t);
}

/* ---- views -------------------------------------------------------------------------- */

/* Three trials with metrics chosen so that min and max, last and best all differ. */
static void fill_views(store_t *st, int64_t e)
{
    static const double m[3][3] = {{0.9, 0.4, 0.6}, {0.5, 0.45, 0.8}, {0.7, 0.95, 0.2}};
    for (int k = 0; k < 3; k++) {
        int64_t tr = mk_trial(st, e, k, "{}");
        for (int i = 0; i < 3; i++)
            add_result(st, tr, 1, i + 1, m[k][i]);
    }
    mk_trial(st, e, 3, "{}"); /* no results yet */
    store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_EARLY_STOPPED,
                              .status = "TERMINATED",
                              .early_stopped = 1};
    char err[256];
    store_trial_update(st, 2, &u, err, sizeof err);
}

TEST(views_best_metric_min)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "lowest", 0);
    fill_views(st, e);
    CHECK_STR(q(st, "SELECT experiment, trial_no, trial, status, early_stopped, iterations,"
                    " last_metric, best_metric, json_extract(last_result, '$.training_iteration')"
                    " FROM trial_summary ORDER BY trial_no"),
              "lowest|0|trial_00000|PENDING|0|3|0.6|0.4|3\n"
              "lowest|1|trial_00001|TERMINATED|1|3|0.8|0.45|3\n"
              "lowest|2|trial_00002|PENDING|0|3|0.2|0.2|3\n"
              "lowest|3|trial_00003|PENDING|0|0|NULL|NULL|NULL");
    CHECK_STR(q(st, "SELECT experiment, mode, trials, pending, running, terminated, errors,"
                    " early_stopped, results, best_metric, best_trial FROM experiment_summary"),
              "lowest|min|4|3|0|1|0|1|9|0.2|trial_00002");
    store_close(st);
    tmp_clean(&t);
}

TEST(views_best_metric_max)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "highest", 1);
    fill_views(st, e);
    CHECK_STR(
        q(st, "SELECT trial_no, last_metric, best_metric FROM trial_summary ORDER BY trial_no"),
        "0|0.6|0.9\n1|0.8|0.8\n2|0.2|0.95\n3|NULL|NULL");
    CHECK_STR(q(st, "SELECT best_metric, best_trial FROM experiment_summary"), "0.95|trial_00002");
    /* A second experiment in the same file keeps to itself. */
    int64_t e2 = mk_exp(st, "empty", 1);
    REQUIRE(e2 > 0);
    CHECK_STR(q(st, "SELECT experiment, trials, pending, results, best_metric, best_trial"
                    " FROM experiment_summary ORDER BY experiment_id"),
              "highest|4|3|9|0.95|trial_00002\nempty|0|0|0|NULL|NULL");
    store_close(st);
    tmp_clean(&t);
}

TEST(views_exclude_superseded_attempts)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "retry", 0);
    int64_t tr = mk_trial(st, e, 0, "{}");
    /* Attempt 1 looked great and then crashed; attempt 2 is the one that counts. */
    for (int i = 1; i <= 4; i++)
        add_result(st, tr, 1, i, 0.01 * i);
    store_trial_update_t u = {.fields = STORE_TU_ATTEMPT, .attempt = 2};
    char err[256];
    CHECK_EQ_INT(store_trial_update(st, tr, &u, err, sizeof err), 0);
    add_result(st, tr, 2, 1, 0.7);
    add_result(st, tr, 2, 2, 0.5);
    CHECK_STR(q(st, "SELECT attempt, iterations, last_metric, best_metric,"
                    " json_extract(last_result, '$.loss') FROM trial_summary"),
              "2|2|0.5|0.5|0.5");
    CHECK_STR(q(st, "SELECT count(*), min(metric) FROM results_current"), "2|0.5");
    CHECK_STR(q(st, "SELECT count(*), min(metric) FROM results"), "6|0.01"); /* all attempts */
    CHECK_STR(q(st, "SELECT results, best_metric FROM experiment_summary"), "2|0.5");
    store_close(st);
    tmp_clean(&t);
}

TEST(views_use_the_index)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    /* The per-trial questions must read result_ranges by its key and results by id, never
     * scan results: with millions of results a scan per trial would make them unusable. */
    const char *plan = q(st, "EXPLAIN QUERY PLAN SELECT * FROM trial_summary");
    CHECK_CONTAINS(plan, "SEARCH g USING PRIMARY KEY (trial_id=? AND attempt=?)");
    CHECK_CONTAINS(plan, "SEARCH r USING INTEGER PRIMARY KEY (rowid=?)");
    CHECK(!strstr(plan, "SCAN r") && !strstr(plan, "SCAN g"));
    plan = q(st, "EXPLAIN QUERY PLAN SELECT * FROM results_current WHERE trial_id = 7");
    CHECK_CONTAINS(plan, "SEARCH g USING PRIMARY KEY (trial_id=? AND attempt=?)");
    CHECK_CONTAINS(plan, "SEARCH r USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)");
    plan = q(st, "EXPLAIN QUERY PLAN SELECT * FROM results_all WHERE trial_id = 7");
    CHECK_CONTAINS(plan, "SEARCH g USING PRIMARY KEY (trial_id=?)");
    plan = q(st, "EXPLAIN QUERY PLAN SELECT * FROM experiment_summary");
    CHECK(!strstr(plan, "SCAN r") && !strstr(plan, "SCAN g"));
    store_close(st);
    tmp_clean(&t);
}

/* Every range holds exactly its trial's results, and every result is in one range. */
static void check_ranges(store_t *st)
{
    CHECK_STR(q(st, "SELECT count(*) FROM result_ranges g WHERE g.n != g.last_id - g.first_id + 1"
                    " OR g.n != (SELECT count(*) FROM results r WHERE r.id BETWEEN g.first_id"
                    " AND g.last_id AND r.trial_id = g.trial_id AND r.attempt = g.attempt)"),
              "0");
    CHECK_STR(q(st, "SELECT (SELECT coalesce(sum(n), 0) FROM result_ranges) ="
                    " (SELECT count(*) FROM results)"),
              "1");
}

TEST(results_grouped_by_trial_in_ranges)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    int64_t a = mk_trial(st, e, 0, "{}"), b = mk_trial(st, e, 1, "{}"),
            c = mk_trial(st, e, 2, "{}");
    char err[512];
    /* One batch, results interleaved as trials report them; trial a restarts (attempt 2)
     * halfway. */
    REQUIRE(store_begin(st, err, sizeof err) == 0);
    for (int i = 1; i <= 4; i++) {
        add_result(st, a, i <= 2 ? 1 : 2, i, 1.0 * i);
        add_result(st, b, 1, i, 10.0 * i);
        if (i % 2) add_result(st, c, 1, i, i == 1 ? NAN : -1.0 * i);
    }
    REQUIRE(store_commit(st, err, sizeof err) == 0);
    check_ranges(st);
    CHECK_STR(q(st,
                "SELECT trial_id = %lld, attempt, n, min_metric, max_metric FROM result_ranges"
                " ORDER BY first_id",
                (long long)a),
              "1|1|2|1.0|2.0\n0|1|4|10.0|40.0\n0|1|2|-3.0|-3.0\n1|2|2|3.0|4.0");
    /* Within a trial the ids follow arrival. */
    CHECK_STR(q(st,
                "SELECT group_concat(iteration) FROM (SELECT iteration FROM results_all"
                " WHERE trial_id = %lld ORDER BY id)",
                (long long)b),
              "1,2,3,4");
    CHECK_STR(q(st,
                "SELECT group_concat(attempt || ':' || iteration) FROM (SELECT * FROM"
                " results_all WHERE trial_id = %lld ORDER BY id)",
                (long long)a),
              "1:1,1:2,2:3,2:4");
    /* A second batch adds a range per trial, and outside a batch each result is its own. */
    REQUIRE(store_begin(st, err, sizeof err) == 0);
    add_result(st, b, 1, 5, 50.0);
    add_result(st, c, 1, 5, -5.0);
    add_result(st, b, 1, 6, 60.0);
    REQUIRE(store_commit(st, err, sizeof err) == 0);
    add_result(st, b, 1, 7, 70.0);
    check_ranges(st);
    CHECK_STR(
        q(st, "SELECT count(*), sum(n) FROM result_ranges WHERE trial_id = %lld", (long long)b),
        "3|7");
    CHECK_STR(q(st, "SELECT iterations, last_metric, best_metric, json_extract(last_result,"
                    " '$.training_iteration') FROM trial_summary ORDER BY trial_no"),
              "2|2.0|1.0|2\n7|70.0|10.0|7\n3|-5.0|-5.0|5");
    store_close(st);
    tmp_clean(&t);
}

/* More trials in a batch than one range statement holds (16 rows), arriving out of
 * trial order: the range rows are written in key order, 16 to a statement, while the
 * result ids still follow the order of each trial's first result. */
TEST(results_many_trials_in_one_batch)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    enum { NT = 37 };
    int64_t id[NT];
    for (int i = 0; i < NT; i++)
        id[i] = mk_trial(st, e, i, "{}");
    char err[512];
    REQUIRE(store_begin(st, err, sizeof err) == 0);
    for (int it = 1; it <= 3; it++)
        for (int k = 0; k < NT; k++) {
            int i = (k * 11 + 5) % NT; /* a fixed shuffle: 11 is prime to 37 */
            REQUIRE(add_result(st, id[i], 1, it, 100.0 * i + it) == 0);
        }
    REQUIRE(store_commit(st, err, sizeof err) == 0);
    check_ranges(st);
    CHECK_STR(q(st, "SELECT count(*), min(n), max(n) FROM result_ranges"), "37|3|3");
    /* each trial's range holds its own results, its best and worst metric */
    CHECK_STR(q(st, "SELECT count(*) FROM result_ranges g JOIN trials tr ON tr.id = g.trial_id"
                    " WHERE g.min_metric != 100.0 * tr.trial_no + 1"
                    " OR g.max_metric != 100.0 * tr.trial_no + 3"),
              "0");
    /* ids: trials in the order of their first result, each trial's results in a row */
    CHECK_STR(q(st,
                "SELECT count(*) FROM results r JOIN trials tr ON tr.id = r.trial_id"
                " WHERE r.id != (SELECT min(id) FROM results) + 3 * ((tr.trial_no * 27 + 13) %% 37)"
                " + r.iteration - 1"),
              "0");
    store_close(st);
    tmp_clean(&t);
}

/* A trial that vanished behind the store's back (deleted by another program between its
 * creation and its results) fails the batch with its id, though the store checked it when
 * it was created: the foreign key of result_ranges catches it at the commit. */
TEST(results_of_a_vanished_trial_fail_the_batch)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    int64_t id[20];
    for (int i = 0; i < 20; i++)
        id[i] = mk_trial(st, e, i, "{}");
    sqlite3 *db = NULL;
    REQUIRE(sqlite3_open(t.db, &db) == SQLITE_OK);
    char sql[128];
    snprintf(sql, sizeof sql, "DELETE FROM trials WHERE id IN (%lld, %lld)", (long long)id[13],
             (long long)id[7]);
    REQUIRE(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    char err[512];
    REQUIRE(store_begin(st, err, sizeof err) == 0);
    for (int i = 19; i >= 0; i--)
        CHECK_EQ_INT(add_result(st, id[i], 1, 1, 0.5), 0); /* known to the store: no query */
    CHECK_EQ_INT(store_commit(st, err, sizeof err), STORE_NOTFOUND);
    char want[96];
    snprintf(want, sizeof want, "cannot write results: no trial with id %lld", (long long)id[7]);
    CHECK_CONTAINS(err, want);
    CHECK_STR(q(st, "SELECT count(*) FROM results"), "0"); /* the batch is rolled back whole */
    CHECK_STR(q(st, "SELECT count(*) FROM result_ranges"), "0");
    store_close(st);
    tmp_clean(&t);
}

TEST(results_large_batch_written_early)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 1);
    int64_t tr[7];
    for (int k = 0; k < 7; k++)
        tr[k] = mk_trial(st, e, k, "{}");
    char err[512];
    /* More results than the handle keeps (8192) in one batch: written out early, in the
     * same transaction, still invisible to others until the commit. */
    store_t *r = open_ro(t.db);
    REQUIRE(r);
    REQUIRE(store_begin(st, err, sizeof err) == 0);
    int n = 20000;
    for (int i = 0; i < n; i++)
        REQUIRE(add_result(st, tr[i % 7], 1, i / 7 + 1, (double)(i % 1000)) == 0);
    CHECK_STR(q(r, "SELECT count(*) FROM results"), "0");
    REQUIRE(store_commit(st, err, sizeof err) == 0);
    CHECK_STR(q(r, "SELECT count(*) FROM results"), "20000");
    check_ranges(st);
    CHECK_STR(q(st, "SELECT count(*) FROM result_ranges WHERE trial_id = %lld", (long long)tr[0]),
              "3");
    CHECK_STR(q(r, "SELECT sum(iterations), max(best_metric) FROM trial_summary"), "20000|999.0");
    CHECK_STR(q(r,
                "SELECT group_concat(i) FROM (SELECT iteration AS i FROM results_current"
                " WHERE trial_id = %lld ORDER BY id LIMIT 3 OFFSET 1170)",
                (long long)tr[3]),
              "1171,1172,1173");
    store_close(r);
    store_close(st);
    tmp_clean(&t);
}

/* ---- resume ------------------------------------------------------------------------- */

struct load_ctx {
    char text[2048];
    size_t n;
    int calls, stop_after;
};

static void lc_add(struct load_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lc_add(struct load_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(c->text + c->n, sizeof c->text - c->n, fmt, ap);
    va_end(ap);
    if (k > 0) c->n += (size_t)k < sizeof c->text - c->n ? (size_t)k : sizeof c->text - c->n - 1;
}

static int on_trial_row(void *ud, const store_trial_row_t *t)
{
    struct load_ctx *c = ud;
    lc_add(c, "%lld:%s:%s:%s:%d:%d:%s:%s;", (long long)t->trial_no, t->name, t->status,
           t->config_json, t->early_stopped, t->attempt, t->error ? t->error : "-",
           t->slice ? t->slice : "-");
    return ++c->calls == c->stop_after;
}

static int on_result_row(void *ud, const store_result_row_t *r)
{
    struct load_ctx *c = ud;
    lc_add(c, "%lld/%d/%lld/%g/%g;", (long long)r->trial_id, r->attempt, (long long)r->iteration,
           r->time_value, r->metric);
    return ++c->calls == c->stop_after;
}

TEST(resume_load_trials_and_replay_results)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0), other = mk_exp(st, "other", 0);
    int64_t a = mk_trial(st, e, 0, "{\"lr\": 0.1}"), b = mk_trial(st, e, 1, "{}");
    int64_t x = mk_trial(st, other, 0, "{}");
    store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_ERROR | STORE_TU_SLICE |
                                        STORE_TU_EARLY_STOPPED | STORE_TU_ATTEMPT,
                              .status = "ERROR",
                              .error = "boom",
                              .slice = "gpu:1",
                              .early_stopped = 1,
                              .attempt = 2};
    char err[512] = "";
    REQUIRE(store_trial_update(st, b, &u, err, sizeof err) == 0);
    REQUIRE(store_begin(st, err, sizeof err) == 0);
    add_result(st, a, 1, 1, 0.5);
    add_result(st, b, 1, 1, NAN);
    add_result(st, x, 1, 1, 9.0);
    add_result(st, a, 1, 2, 0.25);
    add_result(st, b, 2, 1, 0.75);
    struct load_ctx c = {0};
    /* Reads inside a batch see what the batch added. */
    CHECK_EQ_INT(store_results_replay(st, e, on_result_row, &c, err, sizeof err), 0);
    REQUIRE(store_commit(st, err, sizeof err) == 0);
    char want[512];
    snprintf(want, sizeof want, "%lld/1/1/1/0.5;%lld/1/2/2/0.25;%lld/1/1/1/nan;%lld/2/1/1/0.75;",
             (long long)a, (long long)a, (long long)b, (long long)b);
    CHECK_STR(c.text, want);
    memset(&c, 0, sizeof c);
    CHECK_EQ_INT(store_trials_load(st, e, on_trial_row, &c, err, sizeof err), 0);
    CHECK_STR(c.text,
              "0:trial_00000:PENDING:{\"lr\": 0.1}:0:1:-:-;1:trial_00001:ERROR:{}:1:2:boom:gpu:1;");
    memset(&c, 0, sizeof c);
    c.stop_after = 1; /* a non-zero return stops */
    CHECK_EQ_INT(store_trials_load(st, e, on_trial_row, &c, err, sizeof err), 0);
    CHECK_EQ_INT(c.calls, 1);
    store_close(st);
    tmp_clean(&t);
}

TEST(resume_carry_results_keeps_ranges)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    int64_t a = mk_trial(st, e, 0, "{}"), b = mk_trial(st, e, 1, "{}");
    char err[512] = "";
    /* Attempt 1 of trial a reports iterations 1..6 over two batches, mixed with trial b;
     * then it fails and attempt 2 resumes from a checkpoint taken at iteration 4. */
    for (int batch = 0; batch < 2; batch++) {
        REQUIRE(store_begin(st, err, sizeof err) == 0);
        for (int i = 1; i <= 3; i++) {
            add_result(st, a, 1, batch * 3 + i, 1.0 / (batch * 3 + i));
            add_result(st, b, 1, batch * 3 + i, 5.0);
        }
        REQUIRE(store_commit(st, err, sizeof err) == 0);
    }
    store_trial_update_t u = {.fields = STORE_TU_ATTEMPT, .attempt = 2};
    REQUIRE(store_trial_update(st, a, &u, err, sizeof err) == 0);
    REQUIRE(store_begin(st, err, sizeof err) == 0);
    store_carried_t moved = {-1, 0, 0};
    CHECK_EQ_INT(store_results_carry(st, a, 1, 2, 4, &moved, err, sizeof err), 0);
    CHECK_EQ_INT(moved.moved, 3);
    /* the best of what attempt 2 now holds (1, 1/2, 1/3), not of attempt 1's superseded */
    CHECK(fabs(moved.min_metric - 1.0 / 3) < 1e-12 && moved.max_metric == 1.0);
    add_result(st, a, 2, 4, 0.2);
    REQUIRE(store_commit(st, err, sizeof err) == 0);
    check_ranges(st);
    /* Attempt 2 holds iterations 1-3 (carried) and 4 (new); 4-6 of attempt 1 are
     * superseded but kept. */
    CHECK_STR(q(st,
                "SELECT group_concat(iteration) FROM (SELECT iteration FROM results_current"
                " WHERE trial_id = %lld ORDER BY id)",
                (long long)a),
              "1,2,3,4");
    CHECK_STR(q(st,
                "SELECT group_concat(attempt || ':' || iteration) FROM (SELECT * FROM results"
                " WHERE trial_id = %lld ORDER BY id)",
                (long long)a),
              "2:1,2:2,2:3,1:4,1:5,1:6,2:4");
    CHECK_STR(q(st,
                "SELECT iterations, last_metric, best_metric FROM trial_summary WHERE"
                " trial_id = %lld",
                (long long)a),
              "4|0.2|0.2");
    CHECK_STR(q(st, "SELECT iterations FROM trial_summary WHERE trial_id = %lld", (long long)b),
              "6");
    /* Outside a batch, and with nothing to move. */
    CHECK_EQ_INT(store_results_carry(st, b, 3, 4, 100, &moved, err, sizeof err), 0);
    CHECK_EQ_INT(moved.moved, 0);
    CHECK(isnan(moved.min_metric) && isnan(moved.max_metric));
    CHECK_EQ_INT(store_results_carry(st, b, 1, 2, 3, NULL, err, sizeof err), 0);
    check_ranges(st);
    CHECK_STR(
        q(st, "SELECT count(*) FROM results WHERE trial_id = %lld AND attempt = 2", (long long)b),
        "2");
    store_close(st);
    st = open_ro(t.db);
    REQUIRE(st);
    CHECK_EQ_INT(store_results_carry(st, b, 1, 2, 3, NULL, err, sizeof err), STORE_READONLY);
    CHECK_CONTAINS(err, "cannot carry results over to the resumed attempt: the database was opened"
                        " read-only");
    store_close(st);
    tmp_clean(&t);
}

/* ---- batches ------------------------------------------------------------------------ */

TEST(batch_visibility_to_second_connection)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *w = open_rw(t.db);
    REQUIRE(w);
    int64_t e = mk_exp(w, "exp", 0);
    int64_t tr = mk_trial(w, e, 0, "{}");
    store_t *r = open_ro(t.db);
    REQUIRE(r);
    /* Outside a batch every write commits at once. */
    CHECK_STR(q(r, "SELECT count(*) FROM trials"), "1");
    char err[512] = "";
    REQUIRE(store_begin(w, err, sizeof err) == 0);
    for (int i = 1; i <= 10; i++)
        add_result(w, tr, 1, i, 1.0 / i);
    CHECK_STR(q(w, "SELECT count(*) FROM results"), "10"); /* the writer sees its batch */
    CHECK_STR(q(r, "SELECT count(*) FROM results"), "0");  /* the reader does not, yet */
    CHECK_EQ_INT(store_begin(w, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "cannot begin a batch: one is open already (store_commit first)");
    CHECK_EQ_INT(store_commit(w, err, sizeof err), 0);
    CHECK_STR(q(r, "SELECT count(*) FROM results"), "10");
    CHECK_STR(q(r, "SELECT iterations FROM trial_summary"), "10");
    check_ranges(r);
    CHECK_EQ_INT(store_commit(w, err, sizeof err), STORE_ERR);
    CHECK_CONTAINS(err, "cannot commit: no batch is open (store_begin first)");
    /* Closing with a batch open commits nothing of it. */
    REQUIRE(store_begin(w, err, sizeof err) == 0);
    add_result(w, tr, 1, 11, 0.01);
    store_close(w);
    CHECK_STR(q(r, "SELECT count(*) FROM results"), "10");
    store_close(r);
    tmp_clean(&t);
}

TEST(busy_second_writer)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *a = open_rw(t.db);
    store_t *b = open_rw(t.db);
    REQUIRE(a && b);
    char err[512] = "";
    store_experiment_t ea = {.name = "a"}, eb = {.name = "b"};
    REQUIRE(store_begin(a, err, sizeof err) == 0);
    REQUIRE(store_experiment_create(a, &ea, 1.0, NULL, err, sizeof err) == 0);
    /* A batch takes the write lock at its first write: b's waits for the busy timeout
     * (5 s), then gives up with a message, before it wrote anything. */
    CHECK_EQ_INT(store_begin(b, err, sizeof err), 0);
    CHECK_EQ_INT(store_experiment_create(b, &eb, 1.0, NULL, err, sizeof err), STORE_BUSY);
    CHECK_CONTAINS(err, "cannot begin a batch: the database is locked by another writer");
    /* A failed write spoils its batch; nothing of it was written. */
    CHECK_EQ_INT(store_commit(b, err, sizeof err), STORE_BUSY);
    CHECK_CONTAINS(err, "batch rolled back after an earlier error");
    CHECK_EQ_INT(store_commit(a, err, sizeof err), 0);
    /* The lock is free: b's next batch writes. */
    CHECK_EQ_INT(store_begin(b, err, sizeof err), 0);
    CHECK_EQ_INT(store_experiment_create(b, &eb, 1.0, NULL, err, sizeof err), 0);
    CHECK_EQ_INT(store_commit(b, err, sizeof err), 0);
    CHECK_STR(q(a, "SELECT group_concat(name) FROM experiments"), "a,b");
    store_close(a);
    store_close(b);
    tmp_clean(&t);
}

/* Several tunes creating the same new file at the same moment: each opens one whole
 * database (the one whose image was linked first) and records in it; none sees a part of
 * one, and no temporary file is left beside it. */
TEST(tunes_creating_one_database_at_once_share_it)
{
    enum { N = 6 };
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    int go[2];
    REQUIRE(pipe(go) == 0);
    pid_t kids[N];
    for (int i = 0; i < N; i++) {
        kids[i] = fork();
        REQUIRE(kids[i] >= 0);
        if (kids[i] == 0) {
            close(go[1]);
            char c;
            if (read(go[0], &c, 1) != 0) _exit(10); /* EOF: all start together */
            store_t *st = NULL;
            char err[512];
            if (store_open(t.db, 0, &st, err, sizeof err) != 0) _exit(11);
            char name[16];
            snprintf(name, sizeof name, "e%d", i);
            store_experiment_t e = {.name = name};
            int rc = store_begin(st, err, sizeof err) ||
                     store_experiment_create(st, &e, 1.0, NULL, err, sizeof err) ||
                     store_commit(st, err, sizeof err);
            store_close(st);
            _exit(rc ? 12 : 0);
        }
    }
    close(go[0]);
    close(go[1]);
    for (int i = 0; i < N; i++) {
        int status = -1;
        REQUIRE(waitpid(kids[i], &status, 0) == kids[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    store_t *st = open_ro(t.db);
    REQUIRE(st);
    CHECK_STR(q(st, "SELECT count(*) FROM experiments"), "6");
    CHECK_STR(q(st, "SELECT value FROM meta WHERE key = 'schema_version'"), "4");
    CHECK_STR(q(st, "PRAGMA integrity_check"), "ok");
    store_close(st);
    CHECK_EQ_INT(new_files(t.dir), 0);
    tmp_clean(&t);
}

/* What the disk-full child reports to the parent through a pipe. */
struct full_report {
    int rc;        /* the first failure's code */
    int committed; /* batches committed before it */
    int later_rc;  /* a write after the failure, in the same batch */
    char msg[512];
    char later_msg[512];
};

enum { FULL_BATCH = 100 };

static void disk_full_child(const char *path, int fd)
{
    struct full_report rep = {0};
    signal(SIGXFSZ, SIG_IGN); /* write() then fails with EFBIG instead of killing us */
    struct rlimit rl = {.rlim_cur = 1 << 20, .rlim_max = 1 << 20};
    setrlimit(RLIMIT_FSIZE, &rl);
    store_t *st = open_rw(path);
    if (!st) _exit(3);
    char json[400], err[512];
    memset(json, ' ', sizeof json);
    memcpy(json, "{\"loss\": 0.5}", 13);
    json[sizeof json - 1] = 0;
    for (int b = 0; b < 100000 && !rep.rc; b++) {
        int rc = store_begin(st, err, sizeof err);
        for (int i = 0; i < FULL_BATCH && !rc; i++) {
            store_result_t r = {.trial_id = 1,
                                .attempt = 1,
                                .iteration = i,
                                .metric = 0.5,
                                .json = json,
                                .json_len = sizeof json - 1};
            rc = store_result_add(st, &r, err, sizeof err);
            if (rc) {
                /* A batch that failed once fails for good, and says why. */
                rep.later_rc = store_result_add(st, &r, rep.later_msg, sizeof rep.later_msg);
            }
        }
        if (!rc) {
            rc = store_commit(st, err, sizeof err);
        } else {
            char cerr[512];
            store_commit(st, cerr, sizeof cerr);
        }
        if (rc) {
            rep.rc = rc;
            snprintf(rep.msg, sizeof rep.msg, "%s", err);
        } else {
            rep.committed++;
        }
    }
    store_close(st);
    if (write(fd, &rep, sizeof rep) != (ssize_t)sizeof rep) _exit(4);
    _exit(0);
}

TEST(disk_full)
{
    struct tmp t;
    REQUIRE(tmp_make(&t) == 0);
    store_t *st = open_rw(t.db);
    REQUIRE(st);
    int64_t e = mk_exp(st, "exp", 0);
    REQUIRE(mk_trial(st, e, 0, "{}") == 1);
    store_close(st);

    int fds[2];
    REQUIRE(pipe(fds) == 0);
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        disk_full_child(t.db, fds[1]);
    }
    close(fds[1]);
    struct full_report rep;
    memset(&rep, 0, sizeof rep);
    ssize_t n = read(fds[0], &rep, sizeof rep);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    REQUIRE(n == (ssize_t)sizeof rep);
    fprintf(stderr, "disk full after %d batches: %s\n", rep.committed, rep.msg);
    CHECK_EQ_INT(rep.rc, STORE_FULL);
    CHECK_CONTAINS(rep.msg, t.db);
    CHECK_CONTAINS(rep.msg, "the disk is full or the file size limit was reached");
    CHECK_CONTAINS(rep.msg, "what was committed before is kept");
    CHECK(rep.committed > 0);
    if (rep.later_rc) { /* the failure came on a write, not on the commit */
        CHECK_EQ_INT(rep.later_rc, STORE_FULL);
        CHECK_CONTAINS(rep.later_msg, "the batch was abandoned after an earlier error");
    }

    /* The database opens and holds exactly the committed batches. */
    st = open_rw(t.db);
    REQUIRE(st);
    CHECK_STR(q(st, "PRAGMA integrity_check"), "ok");
    const char *count = q(st, "SELECT count(*) FROM results");
    CHECK_EQ_INT(strtol(count, NULL, 10), (long)rep.committed * FULL_BATCH);
    check_ranges(st);
    CHECK_EQ_INT(add_result(st, 1, 1, 1, 0.25), 0); /* and takes writes again */
    store_close(st);
    tmp_clean(&t);
}

TT_MAIN
