/* What the loop tells its caller: the snapshot behind the live table (every trial's
 * status, slice, configuration and latest values, the rungs, the counts) and the run's
 * outcome at the end. Not for: rendering it (cli/table.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/loop_int.h"

/* ---- reporting ------------------------------------------------------------------------ */

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

static int trial_order(const struct sched__trial *a, const struct sched__trial *b, int mode_max)
{
    return order(a->status, a->last_metric, a->no, b->status, b->last_metric, b->no, mode_max);
}

/* The k trials first in the table's order, into sel (ascending trial number): a max-heap
 * of the best k seen, so a report over n trials takes O(n log k) time and no memory per
 * trial. */
static size_t select_trials(const struct sched_loop *L, size_t k, size_t *sel)
{
    int mx = L->set->mode == SPACE_MODE_MAX;
    size_t m = 0;
    for (size_t i = 0; i < L->n; i++) {
        const struct sched__trial *t = &L->t[i];
        size_t c;
        if (m < k) {
            c = m++;
            while (c > 0 && trial_order(&L->t[sel[(c - 1) / 2]], t, mx) < 0) {
                sel[c] = sel[(c - 1) / 2];
                c = (c - 1) / 2;
            }
            sel[c] = i;
            continue;
        }
        if (trial_order(t, &L->t[sel[0]], mx) >= 0) continue;
        c = 0; /* the heap's worst goes; t sifts down from the top */
        for (;;) {
            size_t l = 2 * c + 1, r = l + 1, w = c;
            const struct sched__trial *wt = t;
            if (l < m && trial_order(&L->t[sel[l]], wt, mx) > 0) w = l, wt = &L->t[sel[l]];
            if (r < m && trial_order(&L->t[sel[r]], wt, mx) > 0) w = r;
            if (w == c) break;
            sel[c] = sel[w];
            c = w;
        }
        sel[c] = i;
    }
    /* trial order, as a snapshot of every trial has it */
    for (size_t i = 1; i < m; i++) {
        size_t v = sel[i], j = i;
        for (; j > 0 && sel[j - 1] > v; j--)
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
    v->run_s = t->status == SCHED_TRIAL_RUNNING ? L->last_report - t->x->started_at : t->ran_s;
}

void sched__report(struct sched_loop *L, int final)
{
    L->last_report = sched__now(L);
    if (!L->o->report) return;
    sched_snapshot_t s;
    memset(&s, 0, sizeof s);
    s.experiment = L->set->name;
    s.policy = sched_policy_name(L->policy);
    s.searcher = space_search_name(L->set);
    s.metric = L->set->metric;
    s.mode_max = L->set->mode == SPACE_MODE_MAX;
    s.elapsed_s = L->last_report - L->t0;
    s.best_trial = -1;
    s.best_metric = NAN;
    for (size_t i = 0; i < L->n; i++) {
        const struct sched__trial *t = &L->t[i];
        s.counts[t->status]++;
        if (t->early_stopped) s.early_stopped++;
        if (sched__better(s.mode_max, t->last_metric, s.best_metric)) {
            s.best_metric = t->last_metric;
            s.best_trial = t->no;
        }
    }
    size_t k = L->o->report_trials && L->o->report_trials < L->n ? L->o->report_trials : L->n;
    if (!L->views) {
        L->views = calloc(k ? k : 1, sizeof *L->views);
        L->view_cfg = calloc(k ? k : 1, sizeof *L->view_cfg);
        L->sel = k < L->n ? calloc(k ? k : 1, sizeof *L->sel) : NULL;
        if (!L->views || !L->view_cfg || (k < L->n && !L->sel)) {
            free(L->views), free(L->view_cfg), free(L->sel);
            L->views = NULL, L->view_cfg = NULL, L->sel = NULL;
            k = 0; /* counts only */
        }
        L->nviews = k;
    }
    k = L->nviews;
    for (size_t i = 0; L->view_cfg && i < k; i++) {
        cJSON_Delete(L->view_cfg[i]);
        L->view_cfg[i] = NULL;
    }
    size_t m = k;
    if (k < L->n && L->sel) m = select_trials(L, k, L->sel);
    for (size_t i = 0; i < m; i++)
        fill_view(L, &L->t[k < L->n ? L->sel[i] : i], &L->views[i], &L->view_cfg[i]);
    sched_pool_usage(L->o->pool, &s.gpus_used, &s.gpus_total, &s.cpus_used, &s.cpus_total);
    size_t nr = sched_policy_rungs(L->policy, L->rungs, sizeof L->rungs / sizeof L->rungs[0]);
    s.rungs = L->rungs;
    s.nrungs = nr < 256 ? nr : 256;
    s.trials = L->views;
    s.ntrials = m;
    s.total_trials = L->n;
    s.results = L->results;
    s.ignored = L->ignored;
    s.bad_lines = L->bad_lines;
    s.stopping = L->stopping;
    s.notice = L->notice;
    L->o->report(L->o->report_ud, &s, final);
}

void sched_loop_result(const sched_loop_t *L, sched_run_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->interrupted = L->stopping && !L->fatal && L->stop_signal != 0;
    res->signal = L->stop_signal;
    res->best_trial = -1;
    res->best_metric = NAN;
    for (size_t i = 0; i < L->n; i++) {
        const struct sched__trial *t = &L->t[i];
        if (t->status == SCHED_TRIAL_TERMINATED) res->terminated++;
        if (t->status == SCHED_TRIAL_ERROR) res->errored++;
        if (t->status == SCHED_TRIAL_PAUSED) res->paused++;
        if (t->early_stopped) res->early_stopped++;
        if (sched__better(L->set->mode == SPACE_MODE_MAX, t->last_metric, res->best_metric)) {
            res->best_metric = t->last_metric;
            res->best_trial = t->no;
        }
    }
    res->ended_by = L->ended_by;
    res->end_trial = L->end_trial;
    snprintf(res->end_msg, sizeof res->end_msg, "%s", L->end_msg);
    snprintf(res->end_detail, sizeof res->end_detail, "%s", L->end_detail);
    res->buffered = L->buffered;
    res->buffered_trial = L->buffered_trial;
    snprintf(res->bad_example, sizeof res->bad_example, "%s", L->bad_example);
    res->bad_trial = L->bad_trial;
    snprintf(res->notice, sizeof res->notice, "%s", L->notice);
}
