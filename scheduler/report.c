/* What the loop tells its caller: the snapshot behind the live table (every trial's
 * status, slice, configuration and latest values, the rungs, the counts) and the run's
 * outcome at the end. Not for: rendering it (cli/table.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/loop_int.h"

/* The best trial by last metric: ties go to the lower trial number, as a walk in trial
 * order finds them. */
static void best_of(int mx, double m, int64_t no, double *best, int64_t *best_no)
{
    if (sched__better(mx, m, *best) || (!isnan(m) && m == *best && no < *best_no)) {
        *best = m;
        *best_no = no;
    }
}

/* Every trial's status counted, and the best: the records, the pending trials without
 * one yet, and the gone ones' counts. */
struct tally {
    size_t counts[SCHED_TRIAL_NSTATUS], early;
    double best;
    int64_t best_no;
};

static void tally(const struct sched_loop *L, struct tally *y)
{
    int mx = L->set->mode == SPACE_MODE_MAX;
    memset(y, 0, sizeof *y);
    y->best = NAN;
    y->best_no = -1;
    for (size_t c = 0; c * SCHED__CHUNK < L->rec.n; c++) {
        const struct sched__trial *v = L->rec.chunk[c];
        size_t k = sched__chunk_size(L, c);
        if (!v) {
            if (L->rec.chunk_state[c] == SCHED__CHUNK_NONE) y->counts[SCHED_TRIAL_PENDING] += k;
            continue;
        }
        for (size_t j = 0; j < k; j++) {
            const struct sched__trial *t = &v[j];
            if (t->fate == SCHED__GONE) continue;
            y->counts[t->status]++;
            if (t->early_stopped) y->early++;
            best_of(mx, t->last_metric, t->no, &y->best, &y->best_no);
        }
    }
    for (int k = 0; k < SCHED_TRIAL_NSTATUS; k++)
        y->counts[k] += L->rec.gone_counts[k];
    y->early += L->rec.gone_early;
    if (L->rec.gone_best_no >= 0)
        best_of(mx, L->rec.gone_best, L->rec.gone_best_no, &y->best, &y->best_no);
}

/* The k trials first in the table's order, into sel in trial order. A pending trial
 * without a record is offered as what it is (pending, no metric); only the first k of
 * such a chunk can be among them. */
static size_t select_trials(const struct sched_loop *L, size_t k, struct sched__key *sel)
{
    int mx = L->set->mode == SPACE_MODE_MAX;
    size_t m = 0, npending = 0;
    struct sched__key out; /* what drops out: nothing to do with it here */
    /* Pending trials come last in the order, by trial number: once k of them were offered,
     * no later one can be among the first k, so a run of millions of trials pays for k
     * pending ones, not for every one (the chunks are walked in trial order). */
    for (size_t c = 0; c * SCHED__CHUNK < L->rec.n; c++) {
        const struct sched__trial *v = L->rec.chunk[c];
        size_t n = sched__chunk_size(L, c);
        if (!v) {
            if (L->rec.chunk_state[c] != SCHED__CHUNK_NONE) continue;
            for (size_t j = 0; j < n && npending < k; j++, npending++)
                sched__offer(
                    sel, &m, k,
                    (struct sched__key){SCHED_TRIAL_PENDING, NAN, (int64_t)(c * SCHED__CHUNK + j)},
                    mx, &out);
            continue;
        }
        for (size_t j = 0; j < n; j++) {
            if (v[j].fate == SCHED__GONE) continue;
            if (v[j].status == SCHED_TRIAL_PENDING && npending++ >= k) continue;
            sched__offer(sel, &m, k, (struct sched__key){v[j].status, v[j].last_metric, v[j].no},
                         mx, &out);
        }
    }
    /* trial order, as a snapshot of every trial has it */
    for (size_t i = 1; i < m; i++) {
        struct sched__key v = sel[i];
        size_t j = i;
        for (; j > 0 && sel[j - 1].no > v.no; j--)
            sel[j] = sel[j - 1];
        sel[j] = v;
    }
    return m;
}

static void fill_view(struct sched_loop *L, const struct sched__trial *t, sched_trial_view_t *v,
                      cJSON **scratch)
{
    v->trial_no = t->no;
    v->name = t->name;
    v->status = t->status;
    v->early_stopped = t->early_stopped;
    v->slice = t->slice_str;
    v->config = sched__config(L, t, scratch);
    v->iterations = t->iters;
    v->last_time = t->last_time;
    v->last_metric = t->last_metric;
    v->best_metric = t->best_metric;
    v->exec_id = t->x->started ? t->x->exec_id : "";
    v->node = t->x->started ? t->x->node : "";
    v->error = t->error;
    v->columns = t->columns;
    v->ncolumns = L->ncols;
    v->run_s = t->status == SCHED_TRIAL_RUNNING ? L->turn.last_report - t->x->started_at : t->ran_s;
}

void sched__report(struct sched_loop *L, int final)
{
    L->turn.last_report = sched__now(L);
    if (!L->o->report) return;
    sched_snapshot_t s;
    memset(&s, 0, sizeof s);
    s.experiment = L->set->name;
    s.policy = sched_policy_name(L->policy);
    s.searcher = space_search_name(L->set);
    s.metric = L->set->metric;
    s.mode_max = L->set->mode == SPACE_MODE_MAX;
    s.elapsed_s = L->turn.last_report - L->turn.t0;
    s.best_trial = -1;
    s.best_metric = NAN;
    struct tally y;
    tally(L, &y);
    memcpy(s.counts, y.counts, sizeof s.counts);
    s.early_stopped = y.early;
    s.best_metric = y.best;
    s.best_trial = y.best_no;
    size_t k =
        L->o->report_trials && L->o->report_trials < L->rec.n ? L->o->report_trials : L->rec.n;
    if (!L->rep.views) {
        L->rep.views = calloc(k ? k : 1, sizeof *L->rep.views);
        L->rep.view_cfg = calloc(k ? k : 1, sizeof *L->rep.view_cfg);
        L->rep.sel = k < L->rec.n ? calloc(k ? k : 1, sizeof *L->rep.sel) : NULL;
        if (!L->rep.views || !L->rep.view_cfg || (k < L->rec.n && !L->rep.sel)) {
            free(L->rep.views), free(L->rep.view_cfg), free(L->rep.sel);
            L->rep.views = NULL, L->rep.view_cfg = NULL, L->rep.sel = NULL;
            k = 0; /* counts only */
        }
        L->rep.nviews = k;
    }
    k = L->rep.nviews;
    for (size_t i = 0; L->rep.view_cfg && i < k; i++) {
        cJSON_Delete(L->rep.view_cfg[i]);
        L->rep.view_cfg[i] = NULL;
    }
    size_t m = 0;
    if (k < L->rec.n && L->rep.sel) {
        size_t ns = select_trials(L, k, L->rep.sel);
        for (size_t i = 0; i < ns; i++) {
            /* a pending trial shown gets its record now (out of memory: not shown) */
            const struct sched__trial *t = sched__make(L, (size_t)L->rep.sel[i].no);
            if (t) fill_view(L, t, &L->rep.views[m], &L->rep.view_cfg[m]), m++;
        }
    } else { /* every trial: none is forgotten then (may_forget) */
        for (size_t i = 0; i < k; i++) {
            const struct sched__trial *t = sched__make(L, i);
            if (t) fill_view(L, t, &L->rep.views[m], &L->rep.view_cfg[m]), m++;
        }
    }
    sched_pool_usage(L->o->pool, &s.gpus_used, &s.gpus_total, &s.cpus_used, &s.cpus_total);
    size_t nr =
        sched_policy_rungs(L->policy, L->rep.rungs, sizeof L->rep.rungs / sizeof L->rep.rungs[0]);
    s.rungs = L->rep.rungs;
    s.nrungs = nr < 256 ? nr : 256;
    s.trials = L->rep.views;
    s.ntrials = m;
    s.total_trials = L->rec.n;
    s.results = L->seen.results;
    s.ignored = L->seen.ignored;
    s.bad_lines = L->seen.bad_lines;
    s.stopping = L->turn.stopping;
    s.notice = L->seen.notice;
    L->o->report(L->o->report_ud, &s, final);
}

void sched_loop_result(const sched_loop_t *L, sched_run_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->interrupted = L->turn.stopping && !L->end.fatal && L->turn.stop_signal != 0;
    res->signal = L->turn.stop_signal;
    res->best_trial = -1;
    res->best_metric = NAN;
    struct tally y;
    tally(L, &y);
    res->terminated = y.counts[SCHED_TRIAL_TERMINATED];
    res->errored = y.counts[SCHED_TRIAL_ERROR];
    res->paused = y.counts[SCHED_TRIAL_PAUSED];
    res->early_stopped = y.early;
    res->best_metric = y.best;
    res->best_trial = y.best_no;
    res->ended_by = L->end.ended_by;
    res->end_trial = L->end.end_trial;
    snprintf(res->end_msg, sizeof res->end_msg, "%s", L->end.end_msg);
    snprintf(res->end_detail, sizeof res->end_detail, "%s", L->end.end_detail);
    res->buffered = L->seen.buffered;
    res->buffered_trial = L->seen.buffered_trial;
    snprintf(res->bad_example, sizeof res->bad_example, "%s", L->seen.bad_example);
    res->bad_trial = L->seen.bad_trial;
    snprintf(res->notice, sizeof res->notice, "%s", L->seen.notice);
}
