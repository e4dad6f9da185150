/* What the loop tells its caller: the snapshot behind the live table (every trial's
 * status, slice, configuration and latest values, the rungs, the counts) and the run's
 * outcome at the end. Not for: rendering it (cli/table.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/loop_int.h"

/* ---- reporting ------------------------------------------------------------------------ */
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
        struct sched__trial *t = &L->t[i];
        sched_trial_view_t *v = &L->views[i];
        v->trial_no = t->no;
        v->name = t->name;
        v->status = t->status;
        v->early_stopped = t->early_stopped;
        v->slice = t->slice_str;
        v->config = t->config;
        v->iterations = t->iters;
        v->last_time = t->last_time;
        v->last_metric = t->last_metric;
        v->best_metric = t->best_metric;
        v->exec_id = t->started ? t->exec_id : "";
        v->node = t->started ? t->node : "";
        v->error = t->error;
        v->columns = t->columns;
        v->ncolumns = L->ncols;
        v->run_s = t->status == SCHED_TRIAL_RUNNING ? L->last_report - t->started_at : t->ran_s;
        s.counts[t->status]++;
        if (t->early_stopped) s.early_stopped++;
        if (sched__better(s.mode_max, t->last_metric, s.best_metric)) {
            s.best_metric = t->last_metric;
            s.best_trial = t->no;
        }
    }
    sched_pool_usage(L->o->pool, &s.gpus_used, &s.gpus_total, &s.cpus_used, &s.cpus_total);
    size_t nr = sched_policy_rungs(L->policy, L->rungs, sizeof L->rungs / sizeof L->rungs[0]);
    s.rungs = L->rungs;
    s.nrungs = nr < 256 ? nr : 256;
    s.trials = L->views;
    s.ntrials = L->n;
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
