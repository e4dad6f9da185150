/* The schema and the meta table: a new file gets store/schema.sql (from the image made at
 * build time, store__write_image), an existing one is checked against the version this
 * tune knows and upgraded from an older one in one transaction, and the database's
 * identity is made once and read back. Not for: opening the file (store.c) or the data. */
#include "store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "schema_sql.h" /* generated from store/schema.sql by store/CMakeLists.txt */

/* Runs a PRAGMA or other statement that needs no result. */
int store__exec(store_t *st, const char *sql, const char *what, char *err, size_t errlen)
{
    int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : store__fail(st, rc, what, err, errlen);
}

/* Reads one integer (NULL reads as `null_value`) from a query without parameters. */
static int query_int(store_t *st, const char *sql, int64_t null_value, int64_t *out,
                     const char *what, char *err, size_t errlen)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_type(s, 0) == SQLITE_NULL ? null_value : sqlite3_column_int64(s, 0);
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        *out = null_value;
        rc = SQLITE_OK;
    }
    int out_rc = rc == SQLITE_OK ? 0 : store__fail(st, rc, what, err, errlen);
    sqlite3_finalize(s);
    return out_rc;
}

/* What the file holds: SCHEMA_NONE if it has no tables at all (a new or empty file),
 * SCHEMA_FOREIGN if it has tables but no tune schema, else its schema_version (checked by
 * the caller). */
#define SCHEMA_NONE (-1000000)
#define SCHEMA_FOREIGN (-1000001)
static int read_schema_version(store_t *st, int64_t *version, char *err, size_t errlen)
{
    int64_t tables = 0, has_meta = 0;
    int rc = query_int(st, "SELECT count(*) FROM sqlite_master", 0, &tables,
                       "cannot read the database", err, errlen);
    if (rc) return rc;
    if (tables == 0) {
        *version = SCHEMA_NONE;
        return 0;
    }
    rc = query_int(st, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
                   0, &has_meta, "cannot read the database", err, errlen);
    if (rc) return rc;
    if (!has_meta) {
        *version = SCHEMA_FOREIGN;
        return 0;
    }
    return query_int(st,
                     "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'"
                     " AND CAST(value AS INTEGER) = value",
                     SCHEMA_FOREIGN, version, "cannot read the schema version", err, errlen);
}

/* Creates the schema in an empty database, in one transaction; a second tune creating
 * the same file at the same moment waits on the write lock and then finds it done. */
static int create_schema(store_t *st, char *err, size_t errlen)
{
    int rc = store__exec(st, "BEGIN IMMEDIATE", "cannot create the schema", err, errlen);
    if (rc) return rc;
    int64_t v = 0;
    rc = read_schema_version(st, &v, err, errlen);
    if (!rc && v == SCHEMA_NONE) {
        rc = store__exec(st, store__schema_sql, "cannot create the schema", err, errlen);
        if (!rc)
            rc = store__exec(st, STORE__CREATED_BY_SQL, "cannot create the schema", err, errlen);
    }
    if (!rc) rc = store__exec(st, "COMMIT", "cannot create the schema", err, errlen);
    if (rc && !sqlite3_get_autocommit(st->db)) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* The lineage table of schema version 3, as store/schema.sql creates it: a migrated file
 * gets the very same text (test_store's migration case compares the two). */
static const char lineage_sql[] =
    "CREATE TABLE lineage (\n"
    "    id               INTEGER PRIMARY KEY, -- order of the exploits\n"
    "    experiment_id    INTEGER NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,\n"
    "    trial_id         INTEGER NOT NULL,    -- trials.id of the trial that was exploited\n"
    "    attempt          INTEGER NOT NULL,    -- the new attempt, which starts from the "
    "checkpoint\n"
    "    iteration        INTEGER,             -- the trial's iteration when it was exploited\n"
    "    time_value       REAL,                -- and its time_attr value\n"
    "    donor_trial_id   INTEGER NOT NULL,    -- trials.id of the trial it cloned\n"
    "    donor_attempt    INTEGER,\n"
    "    donor_iteration  INTEGER,             -- the donor's iteration at its checkpoint\n"
    "    donor_time_value REAL,                -- and its time_attr value\n"
    "    donor_checkpoint TEXT,                -- the donor's checkpoint as the donor reported "
    "it\n"
    "    resume_from      TEXT,                -- the copy the new attempt got in "
    "TUNE_RESUME_FROM\n"
    "    old_config       TEXT CHECK (old_config IS NULL OR json_valid(old_config)),\n"
    "    new_config       TEXT NOT NULL CHECK (json_valid(new_config)),\n"
    "    explore          TEXT,                -- JSON: what happened to each parameter\n"
    "    value            REAL,                -- the trial's value when it was exploited\n"
    "    donor_value      REAL,                -- the donor's\n"
    "    wall_time        REAL\n"
    ");\n"
    "CREATE INDEX lineage_trial ON lineage (trial_id, attempt);\n"
    "CREATE INDEX lineage_experiment ON lineage (experiment_id);\n";

/* Version 1, 2 or 3 -> 4: trials.suggested_by (why the searcher chose a trial's
 * configuration, version 2), the lineage table (version 3) and decisions.criterion
 * (version 4), added in one transaction; a second tune migrating the same file at the same
 * moment waits on the write lock and then finds it done. A version-3 file said which
 * criterion completed a trial only in the decision's sentence: that sentence is read this
 * once, here, and never again. */
static int migrate(store_t *st, char *err, size_t errlen)
{
    const char *what =
        "cannot upgrade the database to schema version " STORE__STR(STORE_SCHEMA_VERSION);
    int rc = store__exec(st, "BEGIN IMMEDIATE", what, err, errlen);
    if (rc) return rc;
    int64_t v = 0;
    rc = read_schema_version(st, &v, err, errlen);
    if (!rc && v == 1)
        rc = store__exec(st, "ALTER TABLE trials ADD COLUMN suggested_by TEXT", what, err, errlen);
    if (!rc && (v == 1 || v == 2)) rc = store__exec(st, lineage_sql, what, err, errlen);
    int64_t has = 0; /* a file whose version was written back by hand may have it */
    if (!rc && v >= 1 && v <= 3)
        rc = query_int(st,
                       "SELECT count(*) FROM pragma_table_info('decisions') WHERE name ="
                       " 'criterion'",
                       0, &has, what, err, errlen);
    if (!rc && v >= 1 && v <= 3 && !has)
        rc = store__exec(st, "ALTER TABLE decisions ADD COLUMN criterion TEXT", what, err, errlen);
    if (!rc && v >= 1 && v <= 3)
        rc = store__exec(
            st,
            "UPDATE decisions SET criterion = substr(reason, 24, instr(substr(reason, 24),"
            " ': ') - 1) WHERE criterion IS NULL AND action = 'complete' AND reason LIKE"
            " 'reached stop criterion %: %'",
            what, err, errlen);
    if (!rc && v >= 1 && v <= 3)
        rc = store__exec(st,
                         "UPDATE meta SET value = " STORE__STR(
                             STORE_SCHEMA_VERSION) " WHERE key = 'schema_version'",
                         what, err, errlen);
    if (!rc) rc = store__exec(st, "COMMIT", what, err, errlen);
    if (rc && !sqlite3_get_autocommit(st->db)) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Checks (creating it first when writable and missing, upgrading an older version) that
 * the file holds a schema this tune can use. */
int store__check_schema(store_t *st, char *err, size_t errlen)
{
    int64_t v = 0;
    int rc = read_schema_version(st, &v, err, errlen);
    if (rc) return rc;
    if (v == SCHEMA_NONE && !st->readonly) {
        rc = create_schema(st, err, errlen);
        if (rc) return rc;
        rc = read_schema_version(st, &v, err, errlen);
        if (rc) return rc;
    }
    if (v == SCHEMA_NONE)
        return store__err(err, errlen, STORE_NOTDB,
                          "%s is not a tune database: it is empty (run an experiment to fill it)",
                          st->path);
    if (v == SCHEMA_FOREIGN)
        return store__err(err, errlen, STORE_NOTDB,
                          "%s is not a tune database: it is a SQLite database without tune's "
                          "schema (no schema_version in a meta table)",
                          st->path);
    if (v > STORE_SCHEMA_VERSION)
        return store__err(err, errlen, STORE_VERSION,
                          "%s was written by a newer tune (schema version %lld, this tune knows "
                          "%d): use that tune or a newer one",
                          st->path, (long long)v, STORE_SCHEMA_VERSION);
    if (v >= 1 && v <= 3 && !st->readonly) {
        rc = migrate(st, err, errlen);
        if (rc) return rc;
        rc = read_schema_version(st, &v, err, errlen);
        if (rc) return rc;
    }
    /* A read-only reader of a version-1, -2 or -3 file reads it as it is: suggested_by,
     * lineage and decisions.criterion are the only differences, and readers that ask for
     * them get an error naming the column or table. */
    if (v >= 1 && v <= 3 && st->readonly) return 0;
    if (v < STORE_SCHEMA_VERSION)
        return store__err(err, errlen, STORE_VERSION,
                          "%s has schema version %lld, which this tune cannot read (it knows %d)",
                          st->path, (long long)v, STORE_SCHEMA_VERSION);
    return 0;
}

/* meta's database_id when it is one tune wrote (STORE_ID_LEN hex digits): 1, 0 when there
 * is none, or an error. */
static int read_identity(store_t *st, char *id, char *err, size_t errlen)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, "SELECT value FROM meta WHERE key = 'database_id'", -1, &s,
                                NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    int out = 0;
    if (rc == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(s, 0);
        size_t n = v ? strlen(v) : 0;
        out = n == STORE_ID_LEN && strspn(v, "0123456789abcdef") == n;
        if (out)
            memcpy(id, v, n + 1);
        else
            out = store__err(err, errlen, STORE_ERR,
                             "%s: meta.database_id \"%.40s\" is not an identity tune wrote "
                             "(%d hex digits)",
                             st->path, v ? v : "", STORE_ID_LEN);
    } else if (rc != SQLITE_DONE) {
        out = store__fail(st, rc, "cannot read the database's identity", err, errlen);
    }
    sqlite3_finalize(s);
    return out;
}

/* 16 random bytes from the kernel. */
static int random_bytes(unsigned char *b, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = getrandom(b + got, n - got, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    if (got == n) return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    for (got = 0; got < n;) {
        ssize_t k = read(fd, b + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    return got == n ? 0 : -1;
}

int store_identity(store_t *st, char *id, char *err, size_t errlen)
{
    int rc = read_identity(st, id, err, errlen);
    if (rc) return rc < 0 ? rc : 0;
    if (st->readonly)
        return store__err(err, errlen, STORE_NOTFOUND,
                          "%s has no identity yet (a tune that writes it gives it one)", st->path);
    if (st->in_batch)
        return store__err(err, errlen, STORE_ERR,
                          "%s: cannot make the database's identity inside a batch", st->path);
    unsigned char r[STORE_ID_LEN / 2];
    char hex[STORE_ID_LEN + 1];
    if (random_bytes(r, sizeof r) != 0)
        return store__err(err, errlen, STORE_ERR,
                          "%s: cannot make the database's identity: no random bytes (%s)", st->path,
                          strerror(errno));
    for (size_t i = 0; i < sizeof r; i++)
        snprintf(hex + 2 * i, 3, "%02x", r[i]);
    /* OR IGNORE: a second tune making one at the same moment keeps the first one's, and
     * both read that one back. */
    sqlite3_stmt *s = NULL;
    int src = sqlite3_prepare_v2(
        st->db, "INSERT OR IGNORE INTO meta (key, value) VALUES ('database_id', ?1)", -1, &s, NULL);
    if (src == SQLITE_OK) src = sqlite3_bind_text(s, 1, hex, -1, SQLITE_STATIC);
    if (src == SQLITE_OK) src = sqlite3_step(s);
    sqlite3_finalize(s);
    if (src != SQLITE_DONE)
        return store__fail(st, src, "cannot record the database's identity", err, errlen);
    rc = read_identity(st, id, err, errlen);
    if (rc == 0)
        return store__err(err, errlen, STORE_ERR, "%s: the database's identity did not stay",
                          st->path);
    return rc < 0 ? rc : 0;
}
