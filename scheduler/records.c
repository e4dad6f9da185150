/* The trial records: chunks of struct sched__trial made as they are needed and freed once
 * all their trials are gone, a trial's struct sched__live while it needs one, the store
 * rows of trials not started yet, the finished trials the live table may still show
 * (may_forget), interned slice names and configurations sampled again. Not for: what
 * happens to a trial (life.c). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scheduler/loop_int.h"
#include "trial/trial.h"

static void free_live(struct sched__live *x);

/* Records trial t's row (PENDING, as sched__create_trials does for every trial up front)
 * with its configuration and why it was chosen; suggested_by may be NULL. */
int sched__create_row(struct sched_loop *L, struct sched__trial *t, const char *suggested_by,
                      char *err, size_t errlen)
{
    const sched_run_opts_t *o = L->o;
    char *cfg = space_json_print(t->config);
    if (!cfg) {
        snprintf(err, errlen, "out of memory");
        return SCHED_ENOMEM;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", o->results_dir, t->name);
    int rc = store_trial_create(o->store, o->experiment_id, t->no, t->name, cfg, dir, &t->id, err,
                                errlen);
    free(cfg);
    if (rc == 0 && suggested_by) {
        store_trial_update_t u = {.fields = STORE_TU_SUGGESTED, .suggested_by = suggested_by};
        rc = store_trial_update(o->store, t->id, &u, err, errlen);
    }
    return rc == 0 ? 0 : SCHED_EINVAL;
}

/* Announces trials to the policy up to trial i, in trial order (a resumed policy then
 * draws the same brackets). */
int sched__add_upto(struct sched_loop *L, size_t i)
{
    for (; L->rec.nadded <= i && L->rec.nadded < L->rec.n; L->rec.nadded++)
        if (sched_on_trial_add(L->policy, (int64_t)L->rec.nadded) != 0) return SCHED_EINVAL;
    return SCHED_OK;
}

/* Makes chunk c: its trials' records as a first run starts them (the metric columns of
 * the chunk in one block, which its first record's `columns` owns). */
int sched__make_chunk(struct sched_loop *L, size_t c, char *err, size_t errlen)
{
    size_t lo = c * SCHED__CHUNK, k = sched__chunk_size(L, c);
    struct sched__trial *v = calloc(k, sizeof *v);
    double *cols = L->ncols > 0 ? malloc(k * L->ncols * sizeof *cols) : NULL;
    if (!v || (L->ncols > 0 && !cols)) {
        free(v);
        free(cols);
        snprintf(err, errlen, "out of memory for %zu trials", L->rec.n);
        return SCHED_ENOMEM;
    }
    for (size_t j = 0; j < k; j++) {
        struct sched__trial *t = &v[j];
        size_t i = lo + j;
        t->no = (int64_t)i;
        t->id = L->rec.row_id[i];
        t->x = &L->rec.nolive;
        t->last_time = t->last_metric = t->best_metric = NAN;
        t->attempt = 1;
        t->slice_str = "";
        if (cols) {
            t->columns = cols + j * L->ncols;
            for (size_t m = 0; m < L->ncols; m++)
                t->columns[m] = NAN;
        }
        snprintf(t->name, sizeof t->name, "trial_%05zu", i);
        if (!L->searcher && !L->rec.resample &&
            space_sample(L->o->space, i, &t->config, err, errlen) != 0) {
            for (size_t m = 0; m < j; m++)
                cJSON_Delete(v[m].config);
            free(cols);
            free(v);
            return SCHED_EINVAL;
        }
    }
    L->rec.chunk[c] = v;
    L->rec.chunk_state[c] = SCHED__CHUNK_MADE;
    return SCHED_OK;
}

struct sched__trial *sched__make(struct sched_loop *L, size_t i)
{
    size_t c = i / SCHED__CHUNK;
    char err[256];
    if (!L->rec.chunk[c] && (L->rec.chunk_state[c] == SCHED__CHUNK_FREED ||
                             sched__make_chunk(L, c, err, sizeof err) != 0))
        return NULL;
    return sched__at(L, i);
}

static void free_chunk(struct sched_loop *L, size_t c)
{
    struct sched__trial *v = L->rec.chunk[c];
    if (!v) return;
    for (size_t j = 0; j < sched__chunk_size(L, c); j++) {
        struct sched__trial *t = &v[j];
        cJSON_Delete(t->config);
        free(t->error);
        if (t->x == &L->rec.nolive) continue;
        if (t->x->started) L->o->exec->ops->release(L->o->exec->self, t->no);
        if (t->x->has_slice) sched_pool_release(L->o->pool, &t->x->slice);
        free_live(t->x);
    }
    free(v[0].columns);
    free(v);
    L->rec.chunk[c] = NULL;
}

int sched__make_rows(struct sched_loop *L, size_t upto, char *err, size_t errlen)
{
    const sched_run_opts_t *o = L->o;
    if (upto > L->rec.n) upto = L->rec.n;
    for (; L->rec.rows_next < upto; L->rec.rows_next++) {
        size_t i = L->rec.rows_next;
        struct sched__trial tmp, *t = sched__find(L, i);
        if (!t) { /* no record yet (may_forget): the row is made from a stand-in */
            memset(&tmp, 0, sizeof tmp);
            tmp.no = (int64_t)i;
            snprintf(tmp.name, sizeof tmp.name, "trial_%05zu", i);
            t = &tmp;
        }
        if (t->id > 0 || L->rec.row_id[i] > 0) continue; /* recorded already */
        if (L->rec.resample && space_sample(o->space, i, &t->config, err, errlen) != 0)
            return SCHED_EINVAL;
        if (!t->config) continue; /* chosen at launch */
        int rc = sched__create_row(L, t, NULL, err, errlen);
        if (rc != 0) {
            if (t == &tmp) cJSON_Delete(tmp.config);
            return rc;
        }
        L->rec.row_id[i] = t->id;
        if (L->rec.resample) {
            cJSON_Delete(t->config);
            t->config = NULL;
        }
    }
    return SCHED_OK;
}

static void free_live(struct sched__live *x)
{
    if (x->copy_pid > 0) { /* a copy still under way: it stops here */
        kill((pid_t)x->copy_pid, SIGKILL);
        while (waitpid((pid_t)x->copy_pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    free(x->dir);
    free(x->resume_from);
    free(x->named_ckpt);
    free(x->exploit_src);
    free(x->exploit_dst);
    for (size_t k = 0; k < x->nckpts; k++)
        free(x->ckpts[k].path);
    free(x->ckpts);
    free(x);
}

int sched__live(struct sched_loop *L, struct sched__trial *t)
{
    if (t->x != &L->rec.nolive) return SCHED_OK;
    struct sched__live *x = calloc(1, sizeof *x);
    if (!x) return SCHED_ENOMEM;
    t->x = x;
    return SCHED_OK;
}

/* A trial the live table can no longer show: counted, and its chunk freed once all of
 * its trials are gone. */
static void forget(struct sched_loop *L, struct sched__trial *t)
{
    t->fate = SCHED__GONE;
    free(t->error);
    t->error = NULL;
    L->rec.gone_counts[t->status]++;
    if (t->early_stopped) L->rec.gone_early++;
    if (sched__better(L->set->mode == SPACE_MODE_MAX, t->last_metric, L->rec.gone_best)) {
        L->rec.gone_best = t->last_metric;
        L->rec.gone_best_no = t->no;
    }
    size_t c = (size_t)t->no / SCHED__CHUNK;
    if (++L->rec.chunk_gone[c] == sched__chunk_size(L, c)) {
        free_chunk(L, c);
        L->rec.chunk_state[c] = SCHED__CHUNK_FREED;
    }
}

/* ---- the live table's order ------------------------------------------------------- */
/* The live table's order (sched_view_order) on what it reads of a trial. */
static int group_of(sched_trial_status_t st)
{
    switch (st) {
    case SCHED_TRIAL_RUNNING:
        return 0;
    case SCHED_TRIAL_ERROR:
        return 1;
    case SCHED_TRIAL_PAUSED:
        return 2;
    case SCHED_TRIAL_TERMINATED:
        return 3;
    default:
        return 4;
    }
}

static int order(sched_trial_status_t sa, double ma, int64_t na, sched_trial_status_t sb, double mb,
                 int64_t nb, int mode_max)
{
    int ga = group_of(sa), gb = group_of(sb);
    if (ga != gb) return ga - gb;
    if (ga == 3 && (!isnan(ma) || !isnan(mb))) {
        if (isnan(ma)) return 1;
        if (isnan(mb)) return -1;
        if (ma != mb) return (mode_max ? ma < mb : ma > mb) ? 1 : -1;
    }
    return na < nb ? -1 : na > nb;
}

int sched_view_order(const sched_trial_view_t *a, const sched_trial_view_t *b, int mode_max)
{
    return order(a->status, a->last_metric, a->trial_no, b->status, b->last_metric, b->trial_no,
                 mode_max);
}

/* The finished trials the live table may show are the first report_trials of them in its
 * order (sched__offer's heap). Finished trials never change, so one that falls out can
 * never come back in: it is forgotten. */
static void keep_or_forget(struct sched_loop *L, struct sched__trial *t)
{
    struct sched__key out;
    t->fate = SCHED__KEPT;
    if (sched__offer(L->rec.kept, &L->rec.nkept, L->o->report_trials,
                     (struct sched__key){t->status, t->last_metric, t->no},
                     L->set->mode == SPACE_MODE_MAX, &out))
        forget(L, sched__at(L, (size_t)out.no)); /* last: it may free that chunk */
}

void sched__retire(struct sched_loop *L, struct sched__trial *t)
{
    if (L->caps & SCHED_CAP_EXPLOIT || t->x->started || t->x->has_slice || t->fate) return;
    if (t->x != &L->rec.nolive) {
        free_live(t->x);
        t->x = &L->rec.nolive;
    }
    if (L->rec.resample) {
        cJSON_Delete(t->config);
        t->config = NULL;
    }
    if (L->rec.may_forget) keep_or_forget(L, t);
}

const char *sched__intern(struct sched_loop *L, const char *s)
{
    for (size_t i = 0; i < L->rec.ninterned; i++)
        if (strcmp(L->rec.interned[i], s) == 0) return L->rec.interned[i];
    char **v = realloc(L->rec.interned, (L->rec.ninterned + 1) * sizeof *v);
    if (!v) return "";
    L->rec.interned = v;
    if (!(v[L->rec.ninterned] = strdup(s))) return "";
    return v[L->rec.ninterned++];
}

const cJSON *sched__config(const struct sched_loop *L, const struct sched__trial *t,
                           cJSON **scratch)
{
    *scratch = NULL;
    if (t->config || !L->rec.resample) return t->config;
    char err[256];
    if (space_sample(L->o->space, (size_t)t->no, scratch, err, sizeof err) != 0) return NULL;
    return *scratch;
}

void sched__free_trials(struct sched_loop *L)
{
    for (size_t c = 0; L->rec.chunk && c * SCHED__CHUNK < L->rec.n; c++)
        free_chunk(L, c);
    free(L->rec.chunk);
    free(L->rec.chunk_state);
    free(L->rec.chunk_gone);
    free(L->rec.row_id);
    free(L->rec.kept);
    for (size_t i = 0; i < L->rec.ninterned; i++)
        free(L->rec.interned[i]);
    free(L->rec.interned);
    for (size_t i = 0; i < L->ck.ndoomed; i++)
        free(L->ck.doomed[i].path);
    free(L->ck.doomed);
    free(L->q.retry);
    free(L->q.run);
    free(L->q.paused);
    free(L->q.paused_ids);
    free(L->tm.timers);
    for (size_t i = 0; L->rep.view_cfg && L->rep.views && i < L->rep.nviews; i++)
        cJSON_Delete(L->rep.view_cfg[i]);
    free(L->rep.view_cfg);
    free(L->rep.sel);
    free(L->rep.views);
    sched_policy_free(L->policy);
    space_searcher_free(L->searcher);
}

int sched__offer(struct sched__key *sel, size_t *m, size_t k, struct sched__key key, int mx,
                 struct sched__key *out)
{
#define KEY_CMP(x, y) order((x).status, (x).metric, (x).no, (y).status, (y).metric, (y).no, mx)
    size_t c;
    if (*m < k) {
        c = (*m)++;
        while (c > 0 && KEY_CMP(sel[(c - 1) / 2], key) < 0) {
            sel[c] = sel[(c - 1) / 2];
            c = (c - 1) / 2;
        }
        sel[c] = key;
        return 0;
    }
    if (k == 0 || KEY_CMP(key, sel[0]) >= 0) {
        *out = key;
        return 1;
    }
    *out = sel[0];
    c = 0; /* the heap's worst goes; the key sifts down from the top */
    for (;;) {
        size_t l = 2 * c + 1, r = l + 1, w = c;
        struct sched__key wk = key;
        if (l < *m && KEY_CMP(sel[l], wk) > 0) w = l, wk = sel[l];
        if (r < *m && KEY_CMP(sel[r], wk) > 0) w = r;
        if (w == c) break;
        sel[c] = sel[w];
        c = w;
    }
    sel[c] = key;
    return 1;
#undef KEY_CMP
}
