/* Reading back what a run recorded, for `tune resume`: the trials with their state and
 * every result in arrival order (which is what lets ASHA's rungs be rebuilt exactly), and
 * the one write a resume needs: carrying results over to an attempt that continues from
 * a checkpoint. Not for: general queries (query.c). */
#include "store/store_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *col_text(sqlite3_stmt *s, int i)
{
    return (const char *)sqlite3_column_text(s, i);
}

static double col_real(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

/* Prepares sql on st (after writing anything pending, so reads see it). */
static sqlite3_stmt *prepare(store_t *st, const char *sql, const char *what, char *err,
                             size_t errlen)
{
    if (st->in_batch && store__flush(st, err, errlen) != 0) return NULL;
    sqlite3_stmt *s = NULL;
    int src = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (src != SQLITE_OK) {
        store__fail(st, src, what, err, errlen);
        return NULL;
    }
    return s;
}

/* Ends a read loop: src is the last sqlite3_step's answer (SQLITE_ROW when the callback
 * stopped it, SQLITE_DONE at the end); 0, or the failure worded with `what`. */
static int finish(store_t *st, sqlite3_stmt *s, int src, const char *what, char *err, size_t errlen)
{
    int rc = src != SQLITE_ROW && src != SQLITE_DONE ? store__fail(st, src, what, err, errlen)
                                                     : STORE_OK;
    sqlite3_finalize(s);
    return rc;
}

int store_trials_load(store_t *st, int64_t exp_id, store_trial_cb cb, void *ud, char *err,
                      size_t errlen)
{
    const char *what = "cannot read the trials";
    sqlite3_stmt *s = prepare(st,
                              "SELECT id, trial_no, name, status, config, error, slice,"
                              " early_stopped, attempt FROM trials WHERE experiment_id = ?1"
                              " ORDER BY trial_no",
                              what, err, errlen);
    if (!s) return STORE_ERR;
    sqlite3_bind_int64(s, 1, exp_id);
    int src;
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        store_trial_row_t r = {.id = sqlite3_column_int64(s, 0),
                               .trial_no = sqlite3_column_int64(s, 1),
                               .name = col_text(s, 2),
                               .status = col_text(s, 3),
                               .config_json = col_text(s, 4),
                               .error = col_text(s, 5),
                               .slice = col_text(s, 6),
                               .early_stopped = sqlite3_column_int(s, 7),
                               .attempt = sqlite3_column_int(s, 8)};
        if (!r.status) r.status = "PENDING";
        if (cb(ud, &r)) break;
    }
    return finish(st, s, src, what, err, errlen);
}

static int replay(store_t *st, int64_t exp_id, int with_data, store_result_cb cb, void *ud,
                  char *err, size_t errlen)
{
    const char *what = "cannot read the results";
    sqlite3_stmt *s =
        prepare(st,
                with_data ? "SELECT r.trial_id, r.attempt, r.iteration, r.time_value, r.metric,"
                            " r.data FROM results r JOIN trials t ON t.id = r.trial_id"
                            " WHERE t.experiment_id = ?1 ORDER BY r.id"
                          : "SELECT r.trial_id, r.attempt, r.iteration, r.time_value, r.metric"
                            " FROM results r JOIN trials t ON t.id = r.trial_id"
                            " WHERE t.experiment_id = ?1 ORDER BY r.id",
                what, err, errlen);
    if (!s) return STORE_ERR;
    sqlite3_bind_int64(s, 1, exp_id);
    int src;
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        store_result_row_t r = {.trial_id = sqlite3_column_int64(s, 0),
                                .attempt = sqlite3_column_int(s, 1),
                                .iteration = sqlite3_column_int64(s, 2),
                                .time_value = col_real(s, 3),
                                .metric = col_real(s, 4)};
        if (with_data) {
            r.data = (const char *)sqlite3_column_text(s, 5);
            r.data_len = (size_t)sqlite3_column_bytes(s, 5);
        }
        if (cb(ud, &r)) break;
    }
    return finish(st, s, src, what, err, errlen);
}

int store_results_replay(store_t *st, int64_t exp_id, store_result_cb cb, void *ud, char *err,
                         size_t errlen)
{
    return replay(st, exp_id, 0, cb, ud, err, errlen);
}

int store_results_replay_data(store_t *st, int64_t exp_id, store_result_cb cb, void *ud, char *err,
                              size_t errlen)
{
    return replay(st, exp_id, 1, cb, ud, err, errlen);
}

/* Splits the range first..last of `trial_id` into runs of consecutive ids with the same
 * attempt, after some of its results changed attempt, and writes one range per run. */
static int split_range(store_t *st, int64_t trial_id, int64_t first, int64_t last, const char *what,
                       char *err, size_t errlen)
{
    sqlite3_stmt *rd = NULL;
    int src = sqlite3_prepare_v2(st->db,
                                 "SELECT id, attempt, metric FROM results WHERE id BETWEEN ?1"
                                 " AND ?2 ORDER BY id",
                                 -1, &rd, NULL);
    sqlite3_stmt *ins = src == SQLITE_OK ? store__stmt(st, STORE__RANGE_INSERT, err, errlen) : NULL;
    if (!ins) {
        int rc = src == SQLITE_OK ? STORE_ERR : store__fail(st, src, what, err, errlen);
        sqlite3_finalize(rd);
        return rc;
    }
    sqlite3_bind_int64(rd, 1, first);
    sqlite3_bind_int64(rd, 2, last);
    int rc = 0, have = 0, attempt = 0;
    int64_t run_first = 0, run_last = 0;
    double lo = NAN, hi = NAN;
    for (;;) {
        src = sqlite3_step(rd);
        int64_t id = src == SQLITE_ROW ? sqlite3_column_int64(rd, 0) : 0;
        int a = src == SQLITE_ROW ? sqlite3_column_int(rd, 1) : 0;
        if (have && (src != SQLITE_ROW || a != attempt || id != run_last + 1)) {
            sqlite3_bind_int64(ins, 1, trial_id);
            sqlite3_bind_int(ins, 2, attempt);
            sqlite3_bind_int64(ins, 3, run_first);
            sqlite3_bind_int64(ins, 4, run_last);
            sqlite3_bind_int64(ins, 5, run_last - run_first + 1);
            store__bind_real(ins, 6, lo);
            store__bind_real(ins, 7, hi);
            int isrc = sqlite3_step(ins);
            if (isrc != SQLITE_DONE) rc = store__fail(st, isrc, what, err, errlen);
            sqlite3_reset(ins);
            have = 0;
            if (rc) break;
        }
        if (src != SQLITE_ROW) break;
        if (!have) {
            have = 1;
            attempt = a;
            run_first = id;
            lo = hi = NAN;
        }
        run_last = id;
        if (sqlite3_column_type(rd, 2) != SQLITE_NULL) {
            double m = sqlite3_column_double(rd, 2);
            if (!(m >= lo)) lo = m;
            if (!(m <= hi)) hi = m;
        }
    }
    if (!rc && src != SQLITE_DONE) rc = store__fail(st, src, what, err, errlen);
    sqlite3_finalize(rd);
    return rc;
}

/* Moves the results through result_ranges, which is both faster (results has no index by
 * trial) and what keeps the ranges true: a range whose results changed attempt is split
 * into runs of one attempt each. */
static int carry(store_t *st, int64_t trial_id, int from_attempt, int to_attempt, int64_t below,
                 int64_t *moved, const char *what, char *err, size_t errlen)
{
    sqlite3_stmt *sel = prepare(st,
                                "SELECT first_id, last_id FROM result_ranges WHERE trial_id = ?1"
                                " AND attempt = ?2 ORDER BY first_id",
                                what, err, errlen);
    if (!sel) return STORE_ERR;
    sqlite3_bind_int64(sel, 1, trial_id);
    sqlite3_bind_int(sel, 2, from_attempt);
    int64_t *r = NULL;
    size_t n = 0, cap = 0;
    int src, rc = 0;
    while ((src = sqlite3_step(sel)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            int64_t *p = realloc(r, 2 * cap * sizeof *p);
            if (!p) {
                rc = store__err(err, errlen, STORE_ERR, "%s: %s: out of memory", st->path, what);
                break;
            }
            r = p;
        }
        r[2 * n] = sqlite3_column_int64(sel, 0);
        r[2 * n + 1] = sqlite3_column_int64(sel, 1);
        n++;
    }
    if (!rc && src != SQLITE_DONE) rc = store__fail(st, src, what, err, errlen);
    sqlite3_finalize(sel);

    sqlite3_stmt *up = NULL, *del = NULL;
    if (!rc) {
        up = prepare(st,
                     "UPDATE results SET attempt = ?3 WHERE id BETWEEN ?4 AND ?5 AND trial_id = ?1"
                     " AND attempt = ?2 AND iteration < ?6",
                     what, err, errlen);
        del = up ? prepare(st,
                           "DELETE FROM result_ranges WHERE trial_id = ?1 AND attempt = ?2 AND"
                           " first_id = ?3",
                           what, err, errlen)
                 : NULL;
        if (!del) rc = STORE_ERR;
    }
    int64_t total = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        sqlite3_bind_int64(up, 1, trial_id);
        sqlite3_bind_int(up, 2, from_attempt);
        sqlite3_bind_int(up, 3, to_attempt);
        sqlite3_bind_int64(up, 4, r[2 * i]);
        sqlite3_bind_int64(up, 5, r[2 * i + 1]);
        sqlite3_bind_int64(up, 6, below);
        src = sqlite3_step(up);
        sqlite3_reset(up);
        if (src != SQLITE_DONE) {
            rc = store__fail(st, src, what, err, errlen);
            break;
        }
        int changed = sqlite3_changes(st->db);
        if (!changed) continue;
        total += changed;
        sqlite3_bind_int64(del, 1, trial_id);
        sqlite3_bind_int(del, 2, from_attempt);
        sqlite3_bind_int64(del, 3, r[2 * i]);
        src = sqlite3_step(del);
        sqlite3_reset(del);
        if (src != SQLITE_DONE)
            rc = store__fail(st, src, what, err, errlen);
        else
            rc = split_range(st, trial_id, r[2 * i], r[2 * i + 1], what, err, errlen);
    }
    sqlite3_finalize(up);
    sqlite3_finalize(del);
    free(r);
    if (!rc && moved) *moved = total;
    return rc;
}

/* The best values among to_attempt's results, read off its ranges. */
static int span(store_t *st, int64_t trial_id, int attempt, store_carried_t *out, const char *what,
                char *err, size_t errlen)
{
    sqlite3_stmt *s = prepare(st,
                              "SELECT min(min_metric), max(max_metric) FROM result_ranges"
                              " WHERE trial_id = ?1 AND attempt = ?2",
                              what, err, errlen);
    if (!s) return STORE_ERR;
    sqlite3_bind_int64(s, 1, trial_id);
    sqlite3_bind_int(s, 2, attempt);
    int src = sqlite3_step(s), rc = 0;
    if (src == SQLITE_ROW) {
        out->min_metric = col_real(s, 0);
        out->max_metric = col_real(s, 1);
    } else {
        rc = store__fail(st, src, what, err, errlen);
    }
    sqlite3_finalize(s);
    return rc;
}

int store_results_carry(store_t *st, int64_t trial_id, int from_attempt, int to_attempt,
                        int64_t below, store_carried_t *out, char *err, size_t errlen)
{
    const char *what = "cannot carry results over to the resumed attempt";
    int rc = store__writable(st, what, err, errlen);
    if (rc) return rc;
    if (st->in_batch && (rc = store__flush(st, err, errlen)) != 0) return rc;
    /* The moves and the new ranges land together, in a batch or not. */
    if ((rc = store__sp_begin(st, what, err, errlen)) != 0) return rc;
    int64_t moved = 0;
    store_carried_t c = {0, NAN, NAN};
    rc = carry(st, trial_id, from_attempt, to_attempt, below, &moved, what, err, errlen);
    if (!rc && out) rc = span(st, trial_id, to_attempt, &c, what, err, errlen);
    rc = store__sp_end(st, rc, what, err, errlen);
    if (!rc && out) {
        c.moved = moved;
        *out = c;
    }
    return rc;
}

/* ---- where each trial stands: checkpoints, exploits, criteria ------------------------- */
int store_criterion_stops(store_t *st, int64_t exp_id, store_id_cb cb, void *ud, char *err,
                          size_t errlen)
{
    const char *what = "cannot read the decisions";
    sqlite3_stmt *s =
        prepare(st,
                "SELECT d.trial_id FROM decisions d JOIN trials t ON t.id = d.trial_id"
                " WHERE t.experiment_id = ?1 AND d.action = 'complete'"
                " AND d.criterion IS NOT NULL ORDER BY d.id",
                what, err, errlen);
    if (!s) return STORE_ERR;
    sqlite3_bind_int64(s, 1, exp_id);
    int src;
    while ((src = sqlite3_step(s)) == SQLITE_ROW)
        if (cb(ud, sqlite3_column_int64(s, 0))) break;
    return finish(st, s, src, what, err, errlen);
}

int store_pauses(store_t *st, int64_t exp_id, store_pause_cb cb, void *ud, char *err, size_t errlen)
{
    const char *what = "cannot read the decisions";
    sqlite3_stmt *s =
        prepare(st,
                "SELECT d.trial_id, d.action = 'promote', d.iteration FROM decisions d JOIN trials"
                " t ON t.id = d.trial_id WHERE t.experiment_id = ?1 AND (d.action = 'pause' OR"
                " d.action = 'promote') ORDER BY d.id",
                what, err, errlen);
    if (!s) return STORE_ERR;
    sqlite3_bind_int64(s, 1, exp_id);
    int src;
    while ((src = sqlite3_step(s)) == SQLITE_ROW)
        if (cb(ud, sqlite3_column_int64(s, 0), sqlite3_column_int(s, 1),
               sqlite3_column_int64(s, 2)))
            break;
    return finish(st, s, src, what, err, errlen);
}

/* The results that named a checkpoint: columns trial, path, iteration, time, wall time,
 * copy (0), as store_checkpoints reads them. */
#define NAMED_CKPT_SQL(attempt_join)                                                               \
    "SELECT t.id, json_extract(r.data, '$.checkpoint'), r.iteration, r.time_value,"                \
    " r.wall_time, 0 FROM trials t"                                                                \
    " JOIN result_ranges g ON g.trial_id = t.id" attempt_join                                      \
    " JOIN results r ON r.id BETWEEN g.first_id AND g.last_id"                                     \
    " WHERE t.experiment_id = ?1 AND r.data LIKE '%\"checkpoint\"%'"

static const char *const ckpt_sql[] = {
    [STORE_CKPT_NAMED] = NAMED_CKPT_SQL("") " ORDER BY r.id",
    [STORE_CKPT_NAMED_CURRENT] = NAMED_CKPT_SQL(" AND g.attempt = t.attempt") " ORDER BY r.id",
    [STORE_CKPT_RESTORED] =
        "SELECT l.trial_id, l.resume_from, l.donor_iteration, l.donor_time_value, l.wall_time, 1"
        " FROM lineage l JOIN trials t ON t.id = l.trial_id AND t.attempt = l.attempt"
        " WHERE l.experiment_id = ?1 ORDER BY l.id",
    [STORE_CKPT_ON_DISK] = NAMED_CKPT_SQL("") " UNION ALL SELECT l.trial_id, l.resume_from,"
                                              " l.donor_iteration, l.donor_time_value, l.wall_time,"
                                              " 1 FROM lineage l WHERE l.experiment_id = ?1"
                                              " AND l.resume_from IS NOT l.donor_checkpoint"
                                              " ORDER BY 5, 6",
};

int store_checkpoints(store_t *st, int64_t exp_id, store_ckpt_which_t which, store_checkpoint_cb cb,
                      void *ud, char *err, size_t errlen)
{
    const char *what = "cannot read the checkpoints";
    if ((unsigned)which >= sizeof ckpt_sql / sizeof ckpt_sql[0])
        return store__err(err, errlen, STORE_ERR, "%s: %s: no such set (%d)", st->path, what,
                          (int)which);
    sqlite3_stmt *s = prepare(st, ckpt_sql[which], what, err, errlen);
    if (!s) return STORE_ERR;
    sqlite3_bind_int64(s, 1, exp_id);
    int src;
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        /* as text, whatever JSON type the trial gave its "checkpoint" */
        store_checkpoint_row_t r = {.trial_id = sqlite3_column_int64(s, 0),
                                    .path = col_text(s, 1),
                                    .iteration = sqlite3_column_int64(s, 2),
                                    .time_value = col_real(s, 3),
                                    .wall_time = col_real(s, 4),
                                    .copy = sqlite3_column_int(s, 5)};
        if (!r.path || !r.path[0]) continue;
        if (cb(ud, &r)) break;
    }
    return finish(st, s, src, what, err, errlen);
}

int store_exploits_pending(store_t *st, int64_t exp_id, store_lineage_cb cb, void *ud, char *err,
                           size_t errlen)
{
    const char *what = "cannot read the lineage";
    sqlite3_stmt *s = prepare(st,
                              "SELECT l.trial_id, l.attempt, l.donor_checkpoint, l.resume_from,"
                              " l.donor_iteration, l.donor_time_value, l.donor_trial_id"
                              " FROM lineage l JOIN trials t ON t.id = l.trial_id"
                              " WHERE l.experiment_id = ?1 AND l.attempt > t.attempt"
                              " AND t.status IN ('RUNNING', 'PAUSED', 'PENDING') ORDER BY l.id",
                              what, err, errlen);
    if (!s) return STORE_ERR;
    sqlite3_bind_int64(s, 1, exp_id);
    int src;
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        store_lineage_t l = {.experiment_id = exp_id,
                             .trial_id = sqlite3_column_int64(s, 0),
                             .attempt = sqlite3_column_int(s, 1),
                             .donor_checkpoint = col_text(s, 2),
                             .resume_from = col_text(s, 3),
                             .donor_iteration = sqlite3_column_int64(s, 4),
                             .donor_time_value = col_real(s, 5),
                             .donor_trial_id = sqlite3_column_int64(s, 6),
                             .iteration = 0,
                             .time_value = NAN,
                             .value = NAN,
                             .donor_value = NAN,
                             .wall_time = NAN};
        if (!l.donor_checkpoint) continue;
        if (cb(ud, &l)) break;
    }
    return finish(st, s, src, what, err, errlen);
}
