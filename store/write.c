/* write.c: the rows the scheduler records at once: experiments, trials and their params, lineage,
 * each through a cached prepared statement. Not for results and decisions, which wait in
 * the write-behind buffer (pending.c), for reading (query.c) or for transactions
 * (store.c). */
#include "store/store_int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Text or NULL. Callers' strings outlive the step, so SQLITE_STATIC saves a copy; the
 * statement keeps the pointer after reset but never reads it again before every
 * parameter is bound afresh by the next call. */
static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static int is_one_of(const char *s, const char *const *list)
{
    for (; s && *list; list++)
        if (strcmp(s, *list) == 0) return 1;
    return 0;
}

/* "A, B or C" from a NULL-terminated list: the error names exactly what the list allows. */
static const char *one_of_text(const char *const *list, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; list[i] && k < n; i++) {
        const char *sep = i == 0 ? "" : list[i + 1] ? ", " : " or ";
        int w = snprintf(buf + k, n - k, "%s%s", sep, list[i]);
        if (w < 0) break;
        k += (size_t)w;
    }
    return buf;
}

/* The primary and extended code of the last error, to tell constraint kinds apart. */
static int ext_code(store_t *st)
{
    return sqlite3_extended_errcode(st->db);
}

/* ---- experiments ----------------------------------------------------------------- */

int store_experiment_create(store_t *st, const store_experiment_t *e, double now, int64_t *id_out,
                            char *err, size_t errlen)
{
    const char *what = "cannot create the experiment";
    int rc = store__writable(st, what, err, errlen);
    if (rc) return rc;
    if (!e->name || !*e->name)
        return store__err(err, errlen, STORE_ERR, "%s: %s: it has no name", st->path, what);
    sqlite3_stmt *s = store__stmt(st, STORE__EXP_INSERT, err, errlen);
    if (!s) return STORE_ERR;
    bind_text(s, 1, e->name);
    store__bind_real(s, 2, now);
    bind_text(s, 3, e->metric);
    bind_text(s, 4, e->mode_max ? "max" : "min");
    bind_text(s, 5, e->scheduler);
    sqlite3_bind_int64(s, 6, (int64_t)e->seed); /* the same 64 bits; see docs/schema.md */
    sqlite3_bind_int64(s, 7, e->num_trials);
    bind_text(s, 8, e->results_dir);
    bind_text(s, 9, e->space_text);
    bind_text(s, 10, e->settings_json);
    int src = sqlite3_step(s);
    if (src == SQLITE_DONE) {
        if (id_out) *id_out = sqlite3_last_insert_rowid(st->db);
        rc = 0;
    } else if (ext_code(st) == SQLITE_CONSTRAINT_UNIQUE) {
        rc = store__err(err, errlen, STORE_EXISTS, "%s: an experiment named \"%s\" exists already",
                        st->path, e->name);
    } else {
        rc = store__fail(st, src, what, err, errlen);
    }
    sqlite3_reset(s);
    return rc;
}

int store_experiment_find(store_t *st, const char *name, int64_t *id_out, char *err, size_t errlen)
{
    sqlite3_stmt *s = store__stmt(st, STORE__EXP_FIND, err, errlen);
    if (!s) return STORE_ERR;
    bind_text(s, 1, name);
    int src = sqlite3_step(s), rc;
    if (src == SQLITE_ROW) {
        if (id_out) *id_out = sqlite3_column_int64(s, 0);
        rc = 0;
    } else if (src == SQLITE_DONE) {
        rc = store__err(err, errlen, STORE_NOTFOUND, "%s: no experiment named \"%s\"", st->path,
                        name ? name : "");
    } else {
        rc = store__fail(st, src, "cannot look up the experiment", err, errlen);
    }
    sqlite3_reset(s);
    return rc;
}

int store_experiment_set_status(store_t *st, int64_t exp_id, const char *status, double now,
                                char *err, size_t errlen)
{
    static const char *const ok[] = {"RUNNING", "FINISHED", "INTERRUPTED", NULL};
    const char *what = "cannot set the experiment's status";
    int rc = store__writable(st, what, err, errlen);
    if (rc) return rc;
    if (!is_one_of(status, ok))
        return store__err(err, errlen, STORE_ERR,
                          "%s: %s: unknown status \"%s\" (RUNNING, FINISHED or INTERRUPTED)",
                          st->path, what, status ? status : "(null)");
    sqlite3_stmt *s = store__stmt(st, STORE__EXP_STATUS, err, errlen);
    if (!s) return STORE_ERR;
    sqlite3_bind_int64(s, 1, exp_id);
    bind_text(s, 2, status);
    store__bind_real(s, 3, now);
    int src = sqlite3_step(s);
    if (src != SQLITE_DONE)
        rc = store__fail(st, src, what, err, errlen);
    else if (sqlite3_changes(st->db) == 0)
        rc = store__err(err, errlen, STORE_NOTFOUND, "%s: %s: no experiment with id %lld", st->path,
                        what, (long long)exp_id);
    sqlite3_reset(s);
    return rc;
}

/* ---- trials ---------------------------------------------------------------------- */

/* A growable string for JSON text. */
struct buf {
    char *p;
    size_t n, cap;
    int oom;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* cJSON counts every byte up to 32 as whitespace; so must the scanner below. */
static const char *skip_ws(const char *p)
{
    while (*p && (unsigned char)*p <= 32)
        p++;
    return p;
}

/* Copies the JSON value at p into b as the user wrote it, less the whitespace between
 * tokens, and returns its end. The text was accepted by cJSON already, so it is valid.
 * Keeping the user's own text (rather than printing cJSON's doubles) keeps every
 * number exact, big integers and "1e-4" included. */
static const char *copy_value(struct buf *b, const char *p)
{
    p = skip_ws(p);
    const char *start = p;
    if (*p == '"') {
        for (p++; *p && *p != '"'; p++)
            if (*p == '\\' && p[1]) p++;
        if (*p) p++;
        buf_add(b, start, (size_t)(p - start));
        return p;
    }
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        buf_add(b, p, 1);
        p = skip_ws(p + 1);
        while (*p && *p != close) {
            if (close == '}') { /* "key": */
                p = skip_ws(copy_value(b, p));
                buf_add(b, ":", 1);
                if (*p == ':') p++;
            }
            p = skip_ws(copy_value(b, p));
            if (*p == ',') {
                buf_add(b, ",", 1);
                p = skip_ws(p + 1);
            }
        }
        buf_add(b, &close, 1);
        return *p ? p + 1 : p;
    }
    while (*p && (unsigned char)*p > 32 && *p != ',' && *p != ']' && *p != '}')
        p++; /* a number, true, false or null */
    buf_add(b, start, (size_t)(p - start));
    return p;
}

/* One params row per top-level key of the configuration: cJSON's reading of each value
 * for value_real and value_text, the user's text of it for value_json. */
static int insert_params(store_t *st, int64_t trial_id, const cJSON *cfg, const char *text,
                         const char *what, char *err, size_t errlen)
{
    sqlite3_stmt *s = store__stmt(st, STORE__PARAM_INSERT, err, errlen);
    if (!s) return STORE_ERR;
    struct buf b = {0}, key = {0};
    int rc = 0;
    const char *p = skip_ws(text);
    if (!strncmp(p, "\xef\xbb\xbf", 3)) p = skip_ws(p + 3); /* cJSON skips a UTF-8 BOM */
    p = skip_ws(p + 1);                                     /* past '{' */
    for (const cJSON *c = cfg->child; c && !rc; c = c->next) {
        /* The scanner walks the keys in the order cJSON keeps them. */
        key.n = 0;
        p = skip_ws(copy_value(&key, p));
        if (*p == ':') p++;
        b.n = 0;
        p = skip_ws(copy_value(&b, p));
        if (*p == ',') p++;
        if (b.oom || key.oom) {
            rc = store__err(err, errlen, STORE_ERR, "%s: %s: out of memory", st->path, what);
            break;
        }
        sqlite3_bind_int64(s, 1, trial_id);
        bind_text(s, 2, c->string);
        if (cJSON_IsNumber(c))
            store__bind_real(s, 3, c->valuedouble);
        else if (cJSON_IsBool(c)) /* as SQLite's json_extract reads true and false */
            sqlite3_bind_double(s, 3, cJSON_IsTrue(c) ? 1.0 : 0.0);
        else
            sqlite3_bind_null(s, 3);
        bind_text(s, 4, cJSON_IsString(c) ? c->valuestring : NULL);
        sqlite3_bind_text(s, 5, b.p ? b.p : "null", b.p ? (int)b.n : 4, SQLITE_STATIC);
        int src = sqlite3_step(s);
        if (src != SQLITE_DONE) {
            if (ext_code(st) == SQLITE_CONSTRAINT_PRIMARYKEY)
                rc = store__err(err, errlen, STORE_ERR,
                                "%s: %s: the configuration has the key \"%s\" twice", st->path,
                                what, c->string);
            else
                rc = store__fail(st, src, what, err, errlen);
        }
        sqlite3_reset(s);
    }
    free(b.p);
    free(key.p);
    return rc;
}

int store_trial_create(store_t *st, int64_t exp_id, int64_t trial_no, const char *name,
                       const char *config_json, const char *trial_dir, int64_t *id_out, char *err,
                       size_t errlen)
{
    char what[96];
    snprintf(what, sizeof what, "cannot create trial %lld", (long long)trial_no);
    int rc = store__writable(st, what, err, errlen);
    if (rc) return rc;
    if (!name || !*name)
        return store__err(err, errlen, STORE_ERR, "%s: %s: it has no name", st->path, what);
    const char *end = NULL;
    cJSON *cfg = config_json ? cJSON_ParseWithOpts(config_json, &end, 1) : NULL;
    if (!cJSON_IsObject(cfg)) {
        if (cfg || !config_json)
            rc = store__err(err, errlen, STORE_ERR,
                            "%s: %s: its configuration is not a JSON object", st->path, what);
        else
            rc = store__err(err, errlen, STORE_ERR,
                            "%s: %s: its configuration is not valid JSON (at offset %ld)", st->path,
                            what, end ? (long)(end - config_json) : 0L);
        cJSON_Delete(cfg);
        return rc;
    }

    /* The trial and its params land together or not at all, in a batch or not. */
    sqlite3_stmt *s = store__stmt(st, STORE__TRIAL_INSERT, err, errlen);
    rc = s ? store__sp_begin(st, what, err, errlen) : STORE_ERR;
    if (rc) {
        cJSON_Delete(cfg);
        return rc;
    }
    sqlite3_bind_int64(s, 1, exp_id);
    sqlite3_bind_int64(s, 2, trial_no);
    bind_text(s, 3, name);
    bind_text(s, 4, config_json);
    bind_text(s, 5, trial_dir);
    int src = sqlite3_step(s);
    int64_t id = 0;
    if (src == SQLITE_DONE) {
        id = sqlite3_last_insert_rowid(st->db);
    } else if (ext_code(st) == SQLITE_CONSTRAINT_FOREIGNKEY) {
        rc = store__err(err, errlen, STORE_NOTFOUND, "%s: %s: no experiment with id %lld", st->path,
                        what, (long long)exp_id);
    } else if (ext_code(st) == SQLITE_CONSTRAINT_UNIQUE) {
        rc = store__err(err, errlen, STORE_EXISTS,
                        "%s: %s: the experiment (id %lld) has a trial %lld already", st->path, what,
                        (long long)exp_id, (long long)trial_no);
    } else {
        rc = store__fail(st, src, what, err, errlen);
    }
    sqlite3_reset(s);
    if (!rc) rc = insert_params(st, id, cfg, config_json, what, err, errlen);
    cJSON_Delete(cfg);

    rc = store__sp_end(st, rc, what, err, errlen);
    if (!rc) {
        store__know_trial(st, id);
        if (id_out) *id_out = id;
    }
    return rc;
}

/* The UPDATE for one set of STORE_TU_* fields, prepared at its first use and kept (the
 * oldest is replaced when the cache is full). Every statement takes the same parameters
 * (?1 the trial's id, ?3.. the fields as listed below), so that one binding serves all;
 * SQLite ignores a binding to a parameter a statement does not use. */
static sqlite3_stmt *trial_update_stmt(store_t *st, unsigned fields, char *err, size_t errlen)
{
    static const struct {
        unsigned bit;
        const char *set;
    } cols[] = {
        {STORE_TU_STATUS, "status = ?3"},
        {STORE_TU_EARLY_STOPPED, "early_stopped = ?4"},
        {STORE_TU_SLICE, "slice = ?5"},
        {STORE_TU_STARTED, "started_at = ?6"},
        {STORE_TU_ENDED, "ended_at = ?7"},
        {STORE_TU_EXIT, "exit_code = ?8, exit_signal = ?9"},
        {STORE_TU_ERROR, "error = ?10, stderr_tail = ?11"},
        {STORE_TU_PID, "pid = ?12"},
        {STORE_TU_EXEC_ID, "exec_id = ?13, node = ?14"},
        {STORE_TU_ATTEMPT, "attempt = ?15"},
        {STORE_TU_SUGGESTED, "suggested_by = ?16"},
    };
    for (int i = 0; i < st->ntu; i++)
        if (st->tu[i].fields == fields) return st->tu[i].stmt;
    char sql[512];
    size_t k = (size_t)snprintf(sql, sizeof sql, "UPDATE trials SET ");
    const char *sep = "";
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
        if (fields & cols[i].bit) {
            k += (size_t)snprintf(sql + k, sizeof sql - k, "%s%s", sep, cols[i].set);
            sep = ", ";
        }
    /* No field: the row is only looked for (store_trial_update reports a missing one). */
    snprintf(sql + k, sizeof sql - k, "%s WHERE id = ?1", *sep ? "" : "id = id");
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL);
    if (rc != SQLITE_OK) {
        store__fail(st, rc, "cannot prepare a statement", err, errlen);
        return NULL;
    }
    if (st->ntu == STORE__TU_STMTS) {
        sqlite3_finalize(st->tu[0].stmt);
        memmove(st->tu, st->tu + 1, (STORE__TU_STMTS - 1) * sizeof *st->tu);
        st->ntu--;
    }
    st->tu[st->ntu].fields = fields;
    st->tu[st->ntu++].stmt = s;
    return s;
}

int store_trial_update(store_t *st, int64_t trial_id, const store_trial_update_t *u, char *err,
                       size_t errlen)
{
    /* The scheduler's sched_trial_status_t names (scheduler/sched.h), which the store does
     * not include; tests/test_vocab.c checks this list and schema.sql's CHECK against them. */
    static const char *const ok[] = {"PENDING", "RUNNING", "PAUSED", "TERMINATED", "ERROR", NULL};
    char what[96];
    snprintf(what, sizeof what, "cannot update trial id %lld", (long long)trial_id);
    int rc = store__writable(st, what, err, errlen);
    if (rc) return rc;
    if ((u->fields & STORE_TU_STATUS) && !is_one_of(u->status, ok)) {
        char list[128];
        return store__err(err, errlen, STORE_ERR, "%s: %s: unknown status \"%s\" (%s)", st->path,
                          what, u->status ? u->status : "(null)",
                          one_of_text(ok, list, sizeof list));
    }
    sqlite3_stmt *s = trial_update_stmt(st, u->fields & STORE_TU_ALL, err, errlen);
    if (!s) return STORE_ERR;
    sqlite3_bind_int64(s, 1, trial_id);
    bind_text(s, 3, u->status);
    sqlite3_bind_int(s, 4, u->early_stopped ? 1 : 0);
    bind_text(s, 5, u->slice);
    store__bind_real(s, 6, u->started_at);
    store__bind_real(s, 7, u->ended_at);
    if (u->exit_code >= 0) /* -1: the process did not exit normally */
        sqlite3_bind_int(s, 8, u->exit_code);
    else
        sqlite3_bind_null(s, 8);
    if (u->exit_signal > 0) /* 0: no signal */
        sqlite3_bind_int(s, 9, u->exit_signal);
    else
        sqlite3_bind_null(s, 9);
    bind_text(s, 10, u->error);
    bind_text(s, 11, u->stderr_tail);
    if (u->pid > 0)
        sqlite3_bind_int64(s, 12, u->pid);
    else
        sqlite3_bind_null(s, 12);
    bind_text(s, 13, u->exec_id);
    bind_text(s, 14, u->node);
    sqlite3_bind_int(s, 15, u->attempt);
    bind_text(s, 16, u->suggested_by);
    int src = sqlite3_step(s);
    if (src != SQLITE_DONE)
        rc = store__fail(st, src, what, err, errlen);
    else if (sqlite3_changes(st->db) == 0)
        rc = store__err(err, errlen, STORE_NOTFOUND, "%s: %s: no such trial", st->path, what);
    sqlite3_reset(s);
    return rc;
}

/* Runs one uncached statement binding trial_id to ?1 and text to ?2 (when not NULL): the
 * rare writes (a new configuration after an exploit) need no cache. */
static int run_once(store_t *st, const char *sql, int64_t trial_id, const char *text,
                    const char *what, char *err, size_t errlen)
{
    sqlite3_stmt *s = NULL;
    int src = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (src == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, trial_id);
        if (text) bind_text(s, 2, text);
        src = sqlite3_step(s);
    }
    int rc = src == SQLITE_DONE ? 0 : store__fail(st, src, what, err, errlen);
    sqlite3_finalize(s);
    return rc;
}

int store_trial_set_config(store_t *st, int64_t trial_id, const char *config_json, char *err,
                           size_t errlen)
{
    char what[96];
    snprintf(what, sizeof what, "cannot change the configuration of trial id %lld",
             (long long)trial_id);
    int rc = store__writable(st, what, err, errlen);
    if (rc) return rc;
    cJSON *cfg = config_json ? cJSON_Parse(config_json) : NULL;
    if (!cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        return store__err(err, errlen, STORE_ERR, "%s: %s: it is not a JSON object", st->path,
                          what);
    }
    /* The trial row and its params change together, as store_trial_create made them. */
    rc = run_once(st, "SAVEPOINT store_config", 0, NULL, what, err, errlen);
    if (!rc) {
        rc = run_once(st, "UPDATE trials SET config = ?2 WHERE id = ?1", trial_id, config_json,
                      what, err, errlen);
        if (!rc && sqlite3_changes(st->db) == 0)
            rc = store__err(err, errlen, STORE_NOTFOUND, "%s: %s: no such trial", st->path, what);
        if (!rc)
            rc = run_once(st, "DELETE FROM params WHERE trial_id = ?1", trial_id, NULL, what, err,
                          errlen);
        if (!rc) rc = insert_params(st, trial_id, cfg, config_json, what, err, errlen);
        if (rc && !sqlite3_get_autocommit(st->db))
            sqlite3_exec(st->db, "ROLLBACK TO store_config", NULL, NULL, NULL);
        if (!sqlite3_get_autocommit(st->db)) {
            int r2 = run_once(st, "RELEASE store_config", 0, NULL, what, err, errlen);
            if (!rc) rc = r2;
        }
    }
    cJSON_Delete(cfg);
    return rc;
}

int store_lineage_add(store_t *st, const store_lineage_t *l, char *err, size_t errlen)
{
    char what[96];
    snprintf(what, sizeof what, "cannot record the lineage of trial id %lld",
             (long long)l->trial_id);
    int rc = store__writable(st, what, err, errlen);
    if (rc) return rc;
    if (!l->new_config)
        return store__err(err, errlen, STORE_ERR, "%s: %s: it has no new configuration", st->path,
                          what);
    sqlite3_stmt *s = store__stmt(st, STORE__LINEAGE_INSERT, err, errlen);
    if (!s) return STORE_ERR;
    sqlite3_bind_int64(s, 1, l->experiment_id);
    sqlite3_bind_int64(s, 2, l->trial_id);
    sqlite3_bind_int(s, 3, l->attempt);
    sqlite3_bind_int64(s, 4, l->iteration);
    store__bind_real(s, 5, l->time_value);
    sqlite3_bind_int64(s, 6, l->donor_trial_id);
    sqlite3_bind_int(s, 7, l->donor_attempt);
    sqlite3_bind_int64(s, 8, l->donor_iteration);
    store__bind_real(s, 9, l->donor_time_value);
    bind_text(s, 10, l->donor_checkpoint);
    bind_text(s, 11, l->resume_from);
    bind_text(s, 12, l->old_config);
    bind_text(s, 13, l->new_config);
    bind_text(s, 14, l->explore);
    store__bind_real(s, 15, l->value);
    store__bind_real(s, 16, l->donor_value);
    store__bind_real(s, 17, l->wall_time);
    int src = sqlite3_step(s);
    if (src == SQLITE_DONE)
        rc = 0;
    else if (ext_code(st) == SQLITE_CONSTRAINT_FOREIGNKEY)
        rc = store__err(err, errlen, STORE_NOTFOUND, "%s: %s: no experiment with id %lld", st->path,
                        what, (long long)l->experiment_id);
    else
        rc = store__fail(st, src, what, err, errlen);
    sqlite3_reset(s);
    return rc;
}
