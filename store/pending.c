/* pending.c: the write-behind buffer of results and decisions, the hot path of the whole
 * program. They wait in the handle during a batch and are written at its commit
 * (store__flush): grouped by trial, 16 rows to an INSERT, with one result_ranges row per
 * trial, which is what lets results go without a per-row index; and the cache of trials
 * known to exist that checks each one's trial_id; and the batches they wait in
 * (store_begin, store_commit: one transaction per scheduler turn, begun at its first
 * write). Not for experiments, trials and params (write.c) or reading (query.c). */
#include "store/store_int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the known-trial cache ---------------------------------------------------------- */

static size_t hash64(int64_t v)
{
    uint64_t z = (uint64_t)v * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing */
    return (size_t)(z ^ (z >> 29));
}

static int known_has(const store_t *st, int64_t id)
{
    if (!st->known_slots || id <= 0) return 0; /* 0 marks a free slot */
    size_t mask = (size_t)st->known_slots - 1;
    for (size_t i = hash64(id) & mask;; i = (i + 1) & mask) {
        if (st->known[i] == id) return 1;
        if (st->known[i] == 0) return 0;
    }
}

/* Trials remembered at most: past it the cache starts afresh (the next check of each
 * asks SQLite), so that a run of a million trials does not keep them all. Far more than
 * the trials that report within one run's reach (its running ones). */
#define STORE_KNOWN_MAX 65536

void store__know_trial(store_t *st, int64_t id)
{
    if (id <= 0 || known_has(st, id)) return;
    if (st->nknown + 1 > STORE_KNOWN_MAX) {
        memset(st->known, 0, (size_t)st->known_slots * sizeof *st->known);
        st->nknown = 0;
    }
    if (2 * (st->nknown + 1) > st->known_slots) {
        int slots = st->known_slots ? 2 * st->known_slots : 256;
        int64_t *k = calloc((size_t)slots, sizeof *k);
        if (!k) return; /* only a cache: the next check asks SQLite */
        for (int j = 0; j < st->known_slots; j++) {
            if (!st->known[j]) continue;
            size_t i = hash64(st->known[j]) & (size_t)(slots - 1);
            while (k[i])
                i = (i + 1) & (size_t)(slots - 1);
            k[i] = st->known[j];
        }
        free(st->known);
        st->known = k;
        st->known_slots = slots;
    }
    size_t mask = (size_t)st->known_slots - 1, i = hash64(id) & mask;
    while (st->known[i])
        i = (i + 1) & mask;
    st->known[i] = id;
    st->nknown++;
}

/* 0 if trial `id` exists, STORE_NOTFOUND (with a message) if not. */
static int check_trial(store_t *st, int64_t id, const char *what, char *err, size_t errlen)
{
    if (known_has(st, id)) return 0;
    sqlite3_stmt *s = store__stmt(st, STORE__TRIAL_EXISTS, err, errlen);
    if (!s) return STORE_ERR;
    sqlite3_bind_int64(s, 1, id);
    int src = sqlite3_step(s), rc = 0;
    if (src == SQLITE_ROW)
        store__know_trial(st, id);
    else if (src == SQLITE_DONE)
        rc = store__err(err, errlen, STORE_NOTFOUND, "%s: %s: no trial with id %lld", st->path,
                        what, (long long)id);
    else
        rc = store__fail(st, src, what, err, errlen);
    sqlite3_reset(s);
    return rc;
}

/* ---- pending results ------------------------------------------------------------------ */

/* The pending results and decisions, dropped: written, or rolled back with their batch. */
static void drop_pending(store_t *st)
{
    if (st->group_slots)
        memset(st->group_slot, 0, (size_t)st->group_slots * sizeof *st->group_slot);
    st->ngroups = 0;
    st->npend = 0;
    st->npdec = 0;
    st->arena_len = 0;
}

void store__forget(store_t *st)
{
    drop_pending(st);
    /* A rolled-back batch may have held the creation of a trial we remember. */
    if (st->known_slots) memset(st->known, 0, (size_t)st->known_slots * sizeof *st->known);
    st->nknown = 0;
}

void store__free_pending(store_t *st)
{
    free(st->pend);
    free(st->pdec);
    free(st->arena);
    free(st->groups);
    free(st->group_slot);
    free(st->known);
}

static size_t group_hash(int64_t trial_id, int attempt)
{
    return hash64(trial_id * 31 + attempt);
}

/* The group of (trial_id, attempt), created at the end when new; NULL when out of memory. */
static struct store__group *group_of(store_t *st, int64_t trial_id, int attempt)
{
    if (st->group_slots) {
        size_t mask = (size_t)st->group_slots - 1;
        for (size_t i = group_hash(trial_id, attempt) & mask; st->group_slot[i];
             i = (i + 1) & mask) {
            struct store__group *g = &st->groups[st->group_slot[i] - 1];
            if (g->trial_id == trial_id && g->attempt == attempt) return g;
        }
    }
    if (st->ngroups == st->cap_groups) {
        int cap = st->cap_groups ? 2 * st->cap_groups : 64;
        struct store__group *g = realloc(st->groups, (size_t)cap * sizeof *g);
        if (!g) return NULL;
        st->groups = g;
        st->cap_groups = cap;
    }
    if (2 * (st->ngroups + 1) > st->group_slots) { /* rehash into twice the slots */
        int slots = st->group_slots ? 2 * st->group_slots : 128;
        int *t = calloc((size_t)slots, sizeof *t);
        if (!t) return NULL;
        for (int k = 0; k < st->ngroups; k++) {
            size_t i =
                group_hash(st->groups[k].trial_id, st->groups[k].attempt) & (size_t)(slots - 1);
            while (t[i])
                i = (i + 1) & (size_t)(slots - 1);
            t[i] = k + 1;
        }
        free(st->group_slot);
        st->group_slot = t;
        st->group_slots = slots;
    }
    size_t mask = (size_t)st->group_slots - 1, i = group_hash(trial_id, attempt) & mask;
    while (st->group_slot[i])
        i = (i + 1) & mask;
    st->group_slot[i] = st->ngroups + 1;
    struct store__group *g = &st->groups[st->ngroups++];
    *g = (struct store__group){.trial_id = trial_id,
                               .attempt = attempt,
                               .head = -1,
                               .tail = -1,
                               .min_metric = NAN,
                               .max_metric = NAN};
    return g;
}

/* Makes room for n more bytes of text in the arena; -1 when out of memory. */
static int arena_reserve(store_t *st, size_t n)
{
    if (st->arena_len + n <= st->arena_cap) return 0;
    size_t cap = st->arena_cap ? st->arena_cap : 1 << 16;
    while (cap < st->arena_len + n)
        cap *= 2;
    char *a = realloc(st->arena, cap);
    if (!a) return -1;
    st->arena = a;
    st->arena_cap = cap;
    return 0;
}

/* Copies r into the pending set. */
static int pend_add(store_t *st, const store_result_t *r, const char *json, size_t len, char *err,
                    size_t errlen)
{
    if (st->npend == st->cap_pend) {
        int cap = st->cap_pend ? 2 * st->cap_pend : 1024;
        struct store__pending *p = realloc(st->pend, (size_t)cap * sizeof *p);
        if (!p) goto oom;
        st->pend = p;
        st->cap_pend = cap;
    }
    if (arena_reserve(st, len)) goto oom;
    struct store__group *g = group_of(st, r->trial_id, r->attempt);
    if (!g) goto oom;
    memcpy(st->arena + st->arena_len, json, len);
    int k = st->npend++;
    st->pend[k] = (struct store__pending){.trial_id = r->trial_id,
                                          .iteration = r->iteration,
                                          .time_value = r->time_value,
                                          .metric = r->metric,
                                          .wall_time = r->wall_time,
                                          .off = st->arena_len,
                                          .len = len,
                                          .attempt = r->attempt,
                                          .next = -1};
    st->arena_len += len;
    if (g->tail >= 0)
        st->pend[g->tail].next = k;
    else
        g->head = k;
    g->tail = k;
    g->n++;
    double m = r->metric;
    if (m == m) { /* NaN is no metric */
        if (!(m >= g->min_metric)) g->min_metric = m;
        if (!(m <= g->max_metric)) g->max_metric = m;
    }
    return 0;
oom:
    return store__err(err, errlen, STORE_ERR, "%s: cannot add a result: out of memory", st->path);
}

static void bind_result(sqlite3_stmt *s, int base, const store_t *st,
                        const struct store__pending *p)
{
    sqlite3_bind_int64(s, base, p->trial_id);
    sqlite3_bind_int(s, base + 1, p->attempt);
    sqlite3_bind_int64(s, base + 2, p->iteration);
    store__bind_real(s, base + 3, p->time_value);
    store__bind_real(s, base + 4, p->metric); /* NaN: NULL, so min()/max() skip it */
    store__bind_real(s, base + 5, p->wall_time);
    /* The arena outlives the step and is reused only after every parameter is bound
     * afresh (see bind_text). */
    sqlite3_bind_text(s, base + 6, st->arena + p->off, (int)p->len, SQLITE_STATIC);
}

/* Runs a bound results INSERT of k rows and checks that they got the ids next_id ..
 * next_id + k - 1 (next_id 0: whatever SQLite picks first); the ranges rely on it. */
static int step_results(store_t *st, sqlite3_stmt *s, int k, int64_t *next_id, const char *what,
                        char *err, size_t errlen)
{
    int src = sqlite3_step(s);
    int rc = src == SQLITE_DONE ? 0 : store__fail(st, src, what, err, errlen);
    sqlite3_reset(s);
    if (rc) return rc;
    int64_t last = sqlite3_last_insert_rowid(st->db);
    /* INTEGER PRIMARY KEY ids are max(id) + 1, in VALUES order, and nothing else writes
     * inside our transaction: anything else would be a bug worth stopping for. */
    if (*next_id && last != *next_id + k - 1) {
        rc = store__err(err, errlen, STORE_ERR,
                        "%s: %s: results got ids up to %lld, expected %lld (ids not consecutive)",
                        st->path, what, (long long)last, (long long)(*next_id + k - 1));
        if (st->in_batch && !st->batch_rc) {
            st->batch_rc = rc;
            snprintf(st->batch_err, sizeof st->batch_err, "%s: result ids not consecutive", what);
        }
        return rc;
    }
    *next_id = last + 1;
    return 0;
}

static int flush_decisions(store_t *st, const char *what, char *err, size_t errlen);

/* Groups in result_ranges' key order: (trial_id, attempt). */
static int group_cmp(const void *a, const void *b)
{
    const struct store__group *x = a, *y = b;
    if (x->trial_id != y->trial_id) return x->trial_id < y->trial_id ? -1 : 1;
    return (x->attempt > y->attempt) - (x->attempt < y->attempt);
}

static void bind_range(sqlite3_stmt *s, int base, const struct store__group *gr)
{
    sqlite3_bind_int64(s, base, gr->trial_id);
    sqlite3_bind_int(s, base + 1, gr->attempt);
    sqlite3_bind_int64(s, base + 2, gr->first_id);
    sqlite3_bind_int64(s, base + 3, gr->first_id + gr->n - 1);
    sqlite3_bind_int(s, base + 4, gr->n);
    store__bind_real(s, base + 5, gr->min_metric);
    store__bind_real(s, base + 6, gr->max_metric);
}

/* Writes the range rows of groups [g, g + k), k = 1 or STORE__RESULT_ROWS. A multi-row
 * statement that fails on a foreign key is undone by SQLite and redone a row at a time,
 * so that the message names the trial. */
static int insert_ranges(store_t *st, sqlite3_stmt *s1, sqlite3_stmt *sn, int g, int k,
                         const char *what, char *err, size_t errlen)
{
    sqlite3_stmt *s = k == 1 ? s1 : sn;
    for (int j = 0; j < k; j++)
        bind_range(s, 1 + 7 * j, &st->groups[g + j]);
    int src = sqlite3_step(s), rc = 0;
    if (src != SQLITE_DONE) {
        if (sqlite3_extended_errcode(st->db) == SQLITE_CONSTRAINT_FOREIGNKEY && k > 1) {
            sqlite3_reset(s);
            for (int j = 0; j < k && !rc; j++)
                rc = insert_ranges(st, s1, sn, g + j, 1, what, err, errlen);
            return rc;
        }
        if (sqlite3_extended_errcode(st->db) == SQLITE_CONSTRAINT_FOREIGNKEY)
            rc = store__err(err, errlen, STORE_NOTFOUND, "%s: %s: no trial with id %lld", st->path,
                            what, (long long)st->groups[g].trial_id);
        else
            rc = store__fail(st, src, what, err, errlen);
    }
    sqlite3_reset(s);
    return rc;
}

int store__flush(store_t *st, char *err, size_t errlen)
{
    if (st->npend == 0 && st->npdec == 0) return 0;
    const char *what = "cannot write results";
    int rc = 0;
    int *order = malloc((size_t)(st->npend ? st->npend : 1) * sizeof *order);
    sqlite3_stmt *sn = store__stmt(st, STORE__RESULT_INSERTN, err, errlen);
    sqlite3_stmt *s1 = sn ? store__stmt(st, STORE__RESULT_INSERT1, err, errlen) : NULL;
    sqlite3_stmt *sr = s1 ? store__stmt(st, STORE__RANGE_INSERT, err, errlen) : NULL;
    sqlite3_stmt *srn = sr ? store__stmt(st, STORE__RANGE_INSERTN, err, errlen) : NULL;
    if (!order || !srn) {
        rc = order ? STORE_ERR
                   : store__err(err, errlen, STORE_ERR, "%s: %s: out of memory", st->path, what);
        goto out;
    }
    /* Each trial's results together, in arrival order; trials in order of first result. */
    int n = 0;
    for (int g = 0; g < st->ngroups; g++)
        for (int k = st->groups[g].head; k >= 0; k = st->pend[k].next)
            order[n++] = k;

    /* The first statement tells the first id; the rest must follow on. */
    int64_t next_id = 0, first_id = 0;
    int i = 0;
    while (i < n && !rc) {
        int k = n - i >= STORE__RESULT_ROWS ? STORE__RESULT_ROWS : 1;
        sqlite3_stmt *s = k == 1 ? s1 : sn;
        for (int j = 0; j < k; j++)
            bind_result(s, 1 + 7 * j, st, &st->pend[order[i + j]]);
        rc = step_results(st, s, k, &next_id, what, err, errlen);
        if (!rc && i == 0) first_id = next_id - k;
        i += k;
    }
    /* One range per trial and attempt: its results got consecutive ids. The rows go in
     * in the table's key order, 16 to a statement: with many trials in a batch (one range
     * per result when each trial reported once) a statement per row was a large part of
     * the store's time (bench/tuner/README.md). The groups are sorted in place: the lookup slots
     * that index them are cleared below. */
    int64_t id = first_id;
    for (int g = 0; g < st->ngroups; g++) {
        st->groups[g].first_id = id;
        id += st->groups[g].n;
    }
    if (!rc && st->ngroups > 1)
        qsort(st->groups, (size_t)st->ngroups, sizeof *st->groups, group_cmp);
    for (int g = 0; g < st->ngroups && !rc;) {
        int k = st->ngroups - g >= STORE__RESULT_ROWS ? STORE__RESULT_ROWS : 1;
        rc = insert_ranges(st, sr, srn, g, k, what, err, errlen);
        g += k;
    }
    if (!rc) rc = flush_decisions(st, "cannot write decisions", err, errlen);
out:
    free(order);
    if (rc && st->in_batch && !st->batch_rc) { /* half a batch of results is no batch */
        st->batch_rc = rc;
        snprintf(st->batch_err, sizeof st->batch_err, "%s", err ? err : what);
    }
    /* Written or not, these results are done with: on failure the batch rolls back. */
    drop_pending(st);
    return rc;
}

/* After a result or decision joined the pending set: inside a batch it waits (unless too
 * many do); outside one it is written now, in a transaction of its own. */
static int pending_added(store_t *st, char *err, size_t errlen)
{
    if (st->in_batch)
        return st->npend + st->npdec >= STORE__PENDING_MAX ? store__flush(st, err, errlen) : 0;
    int rc = store_begin(st, err, errlen);
    if (rc) {
        store__forget(st);
        return rc;
    }
    return store_commit(st, err, errlen);
}

int store_result_add(store_t *st, const store_result_t *r, char *err, size_t errlen)
{
    const char *what = "cannot add a result";
    int rc = store__writable(st, what, err, errlen);
    if (rc) return rc;
    rc = check_trial(st, r->trial_id, what, err, errlen);
    if (rc) return rc;
    const char *json = r->json ? r->json : "{}";
    size_t len = r->json ? (r->json_len ? r->json_len : strlen(r->json)) : 2;
    if (len > 0x7fffffff)
        return store__err(err, errlen, STORE_ERR, "%s: %s: the result is %zu bytes long", st->path,
                          what, len);
    rc = pend_add(st, r, json, len, err, errlen);
    if (rc) return rc;
    return pending_added(st, err, errlen);
}

/* Copies d into the pending decisions. */
static int pdec_add(store_t *st, const store_decision_t *d, char *err, size_t errlen)
{
    size_t alen = strlen(d->action), rlen = d->reason ? strlen(d->reason) : 0,
           clen = d->criterion ? strlen(d->criterion) : 0;
    if (alen > 0x7fffffff || rlen > 0x7fffffff || clen > 0x7fffffff ||
        arena_reserve(st, alen + rlen + clen))
        return store__err(err, errlen, STORE_ERR, "%s: cannot add a decision: out of memory",
                          st->path);
    if (st->npdec == st->cap_pdec) {
        int cap = st->cap_pdec ? 2 * st->cap_pdec : 256;
        struct store__pdecision *p = realloc(st->pdec, (size_t)cap * sizeof *p);
        if (!p)
            return store__err(err, errlen, STORE_ERR, "%s: cannot add a decision: out of memory",
                              st->path);
        st->pdec = p;
        st->cap_pdec = cap;
    }
    struct store__pdecision *p = &st->pdec[st->npdec++];
    *p = (struct store__pdecision){.trial_id = d->trial_id,
                                   .iteration = d->iteration,
                                   .time_value = d->time_value,
                                   .milestone = d->milestone,
                                   .value = d->value,
                                   .cutoff = d->cutoff,
                                   .wall_time = d->wall_time,
                                   .bracket = d->bracket,
                                   .rung = d->rung,
                                   .action_off = st->arena_len,
                                   .action_len = alen,
                                   .reason_off = st->arena_len + alen,
                                   .reason_len = rlen,
                                   .criterion_off = st->arena_len + alen + rlen,
                                   .criterion_len = clen,
                                   .has_reason = d->reason != NULL,
                                   .has_criterion = d->criterion != NULL};
    memcpy(st->arena + st->arena_len, d->action, alen);
    if (rlen) memcpy(st->arena + st->arena_len + alen, d->reason, rlen);
    if (clen) memcpy(st->arena + st->arena_len + alen + rlen, d->criterion, clen);
    st->arena_len += alen + rlen + clen;
    return 0;
}

static void bind_decision(sqlite3_stmt *s, int base, const store_t *st,
                          const struct store__pdecision *p)
{
    sqlite3_bind_int64(s, base, p->trial_id);
    sqlite3_bind_int64(s, base + 1, p->iteration);
    store__bind_real(s, base + 2, p->time_value);
    sqlite3_bind_text(s, base + 3, st->arena + p->action_off, (int)p->action_len, SQLITE_STATIC);
    if (p->bracket >= 0) /* -1: not applicable */
        sqlite3_bind_int(s, base + 4, p->bracket);
    else
        sqlite3_bind_null(s, base + 4);
    if (p->rung >= 0)
        sqlite3_bind_int(s, base + 5, p->rung);
    else
        sqlite3_bind_null(s, base + 5);
    store__bind_real(s, base + 6, p->milestone);
    store__bind_real(s, base + 7, p->value);
    store__bind_real(s, base + 8, p->cutoff);
    if (p->has_reason)
        sqlite3_bind_text(s, base + 9, st->arena + p->reason_off, (int)p->reason_len,
                          SQLITE_STATIC);
    else
        sqlite3_bind_null(s, base + 9);
    store__bind_real(s, base + 10, p->wall_time);
    if (p->has_criterion)
        sqlite3_bind_text(s, base + 11, st->arena + p->criterion_off, (int)p->criterion_len,
                          SQLITE_STATIC);
    else
        sqlite3_bind_null(s, base + 11);
}

/* Writes the pending decisions, 16 to a statement. */
static int flush_decisions(store_t *st, const char *what, char *err, size_t errlen)
{
    sqlite3_stmt *sn = store__stmt(st, STORE__DECISION_INSERTN, err, errlen);
    sqlite3_stmt *s1 = sn ? store__stmt(st, STORE__DECISION_INSERT1, err, errlen) : NULL;
    if (!s1) return STORE_ERR;
    int rc = 0;
    for (int i = 0; i < st->npdec && !rc;) {
        int k = st->npdec - i >= STORE__RESULT_ROWS ? STORE__RESULT_ROWS : 1;
        sqlite3_stmt *s = k == 1 ? s1 : sn;
        for (int j = 0; j < k; j++)
            bind_decision(s, 1 + 12 * j, st, &st->pdec[i + j]);
        int src = sqlite3_step(s);
        if (src != SQLITE_DONE) rc = store__fail(st, src, what, err, errlen);
        sqlite3_reset(s);
        i += k;
    }
    return rc;
}

int store_decision_add(store_t *st, const store_decision_t *d, char *err, size_t errlen)
{
    const char *what = "cannot add a decision";
    int rc = store__writable(st, what, err, errlen);
    if (rc) return rc;
    if (!d->action || !*d->action)
        return store__err(err, errlen, STORE_ERR, "%s: %s: it has no action", st->path, what);
    rc = check_trial(st, d->trial_id, what, err, errlen);
    if (!rc) rc = pdec_add(st, d, err, errlen);
    if (rc) return rc;
    return pending_added(st, err, errlen);
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
        if (!rc) rc = store__run_stmt(st, STORE__COMMIT, "cannot commit", err, errlen);
        if (!rc) {
            double now = store__now_s();
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
        if (!sqlite3_get_autocommit(st->db)) store__step_quietly(st, STORE__ROLLBACK);
        store__forget(st);
    }
    st->in_batch = 0;
    st->tx_open = 0;
    st->batch_rc = 0;
    return rc;
}
