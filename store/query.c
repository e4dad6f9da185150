/* store: reading. store_query runs one statement with text parameters and hands each row
 * to a callback as text, reals printed so that they read back exactly; read-only handles
 * refuse statements that would write; and store_experiment_delete, the one bulk removal
 * (`tune rm`). Not for writing rows (write.c). */
#include "store/store_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shortest of %.15g, %.16g, %.17g that reads back to v: %.17g always does, but prints
 * 0.1 as 0.10000000000000001 (SQLite's own %.15g loses 1/3's last digits instead). */
static void shortest(double v, char *buf, size_t n)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (prec == 17 || strtod(buf, NULL) == v) return;
    }
}

void store__format_real(double v, char *buf, size_t n)
{
    if (isnan(v)) {
        snprintf(buf, n, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, n, v > 0 ? "Inf" : "-Inf");
        return;
    }
    shortest(v, buf, n);
    if (!strpbrk(buf, ".e")) { /* "3" would read as an integer; say "3.0" */
        size_t len = strlen(buf);
        if (len + 3 <= n) memcpy(buf + len, ".0", 3);
    }
}

/* Skips whitespace and SQL comments; true if nothing but those (and ';') is left. */
static int only_comments_left(const char *p)
{
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == ';')
            p++;
        if (p[0] == '-' && p[1] == '-') {
            while (*p && *p != '\n')
                p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            if (!e) return 1; /* SQLite treats an unterminated comment as ending the text */
            p = e + 2;
        } else {
            return *p == 0;
        }
    }
}

/* Prepare error with SQLite's position of the problem when it knows it. */
static int prepare_error(store_t *st, int src, const char *sql, char *err, size_t errlen)
{
    int off = sqlite3_error_offset(st->db);
    if ((src & 0xff) != SQLITE_ERROR) return store__fail(st, src, "query failed", err, errlen);
    if (off >= 0 && (size_t)off <= strlen(sql))
        return store__err(err, errlen, STORE_ERR, "query failed at character %d: %s", off + 1,
                          sqlite3_errmsg(st->db));
    return store__err(err, errlen, STORE_ERR, "query failed: %s", sqlite3_errmsg(st->db));
}

int store_query(store_t *st, const char *sql, const char *const *binds, int nbinds, store_row_cb cb,
                void *ud, char *err, size_t errlen)
{
    if (!sql) return store__err(err, errlen, STORE_ERR, "query failed: no SQL given");
    /* The writer reads its own batch: pending results go to SQLite first. */
    if (st->npend || st->npdec) {
        int frc = store__flush(st, err, errlen);
        if (frc) return frc;
    }
    sqlite3_stmt *s = NULL;
    const char *tail = NULL;
    int src = sqlite3_prepare_v2(st->db, sql, -1, &s, &tail);
    if (src != SQLITE_OK) return prepare_error(st, src, sql, err, errlen);
    if (!s) return store__err(err, errlen, STORE_ERR, "query failed: the SQL text is empty");

    int rc = 0;
    char **vals = NULL;
    const char **names = NULL;
    int *types = NULL;
    char **blobs = NULL; /* per column: the hex text of a blob value */
    int ncol = 0;
    /* One statement per call: a second one would have to be judged read-only too, and its
     * rows would come with other columns than the first one's. */
    if (tail && !only_comments_left(tail)) {
        rc = store__err(err, errlen, STORE_ERR,
                        "query failed: give one SQL statement at a time (more text follows the "
                        "first ';': \"%.40s\")",
                        tail);
        goto out;
    }
    if (st->readonly && !sqlite3_stmt_readonly(s)) {
        rc = store__err(err, errlen, STORE_READONLY,
                        "tune query is read-only: the statement would write");
        goto out;
    }
    int nparams = sqlite3_bind_parameter_count(s);
    if (nbinds != nparams) {
        rc = store__err(err, errlen, STORE_ERR,
                        "query failed: the statement has %d parameter%s but %d value%s given",
                        nparams, nparams == 1 ? "" : "s", nbinds, nbinds == 1 ? " was" : "s were");
        goto out;
    }
    for (int i = 0; i < nbinds; i++) {
        if (binds[i])
            sqlite3_bind_text(s, i + 1, binds[i], -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(s, i + 1);
    }

    ncol = sqlite3_column_count(s);
    /* Each column owns a 32-byte slot for a printed real; text points into SQLite. */
    vals = calloc((size_t)ncol + 1, sizeof *vals + 32);
    names = calloc((size_t)ncol + 1, sizeof *names);
    types = calloc((size_t)ncol + 1, sizeof *types);
    blobs = calloc((size_t)ncol + 1, sizeof *blobs);
    if (!vals || !names || !types || !blobs) {
        rc = store__err(err, errlen, STORE_ERR, "query failed: out of memory");
        goto out;
    }
    char *realbuf = (char *)(vals + ncol + 1);
    for (int c = 0; c < ncol; c++)
        names[c] = sqlite3_column_name(s, c);

    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        for (int c = 0; c < ncol; c++) {
            switch (sqlite3_column_type(s, c)) {
            case SQLITE_NULL:
                types[c] = STORE_COL_NULL;
                vals[c] = NULL;
                break;
            case SQLITE_INTEGER:
                types[c] = STORE_COL_INT;
                vals[c] = (char *)sqlite3_column_text(s, c);
                break;
            case SQLITE_FLOAT:
                types[c] = STORE_COL_REAL;
                vals[c] = realbuf + 32 * c;
                store__format_real(sqlite3_column_double(s, c), vals[c], 32);
                break;
            case SQLITE_TEXT:
                types[c] = STORE_COL_TEXT;
                vals[c] = (char *)sqlite3_column_text(s, c);
                break;
            default: { /* a blob, printed as hex so that the text stays printable */
                types[c] = STORE_COL_BLOB;
                const unsigned char *p = sqlite3_column_blob(s, c);
                size_t n = (size_t)sqlite3_column_bytes(s, c);
                char *h = realloc(blobs[c], 2 * n + 1);
                if (!h) {
                    rc = store__err(err, errlen, STORE_ERR, "query failed: out of memory");
                    goto out;
                }
                blobs[c] = h;
                static const char hex[] = "0123456789abcdef";
                for (size_t i = 0; i < n; i++) {
                    h[2 * i] = hex[p[i] >> 4];
                    h[2 * i + 1] = hex[p[i] & 15];
                }
                h[2 * n] = 0;
                vals[c] = h;
                break;
            }
            }
        }
        if (cb && cb(ud, ncol, names, (const char *const *)vals, types)) goto out;
    }
    if (src != SQLITE_DONE) rc = store__fail(st, src, "query failed", err, errlen);

out:
    sqlite3_finalize(s);
    free(vals);
    free(names);
    free(types);
    for (int c = 0; blobs && c < ncol; c++)
        free(blobs[c]);
    free(blobs);
    return rc;
}

/* ---- deleting an experiment ----------------------------------------------------- */
int store_experiment_delete(store_t *st, int64_t exp_id, char *err, size_t errlen)
{
    int rc = store__writable(st, "cannot delete the experiment", err, errlen);
    if (rc) return rc;
    if (st->in_batch)
        return store__err(err, errlen, STORE_ERR, "%s: cannot delete an experiment inside a batch",
                          st->path);
    /* results and decisions carry no foreign key (they are the hot tables, kept lean):
     * they go by trial id first; trials, params, result_ranges and lineage follow the experiment
     * by ON DELETE CASCADE. One transaction: all of it or none. */
    char sql[1024];
    snprintf(sql, sizeof sql,
             "BEGIN IMMEDIATE;"
             "DELETE FROM results WHERE trial_id IN (SELECT id FROM trials WHERE experiment_id = "
             "%lld);"
             "DELETE FROM decisions WHERE trial_id IN (SELECT id FROM trials WHERE experiment_id "
             "= %lld);"
             "DELETE FROM experiments WHERE id = %lld;"
             "COMMIT;",
             (long long)exp_id, (long long)exp_id, (long long)exp_id);
    int src = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
    if (src != SQLITE_OK) {
        rc = store__fail(st, src, "cannot delete the experiment", err, errlen);
        if (!sqlite3_get_autocommit(st->db)) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    }
    return rc;
}
