/* loop_int.h: the event loop's state, shared by its files: loop.c (the handle and its
 * turn), life.c (a trial's life: launched, stopped, ended, retried, resumed), diagnose.c
 * (why a trial failed), start.c (the trial table at the start, afresh or replayed from the
 * store), records.c (the trial records, their rows and live state), ckpt.c (a trial's checkpoints:
 * found, kept, deleted, copied for PBT's exploits), result.c (the per-result path: record, decide,
 * word the reason), timers.c (the timer heap) and report.c (snapshots and the outcome). Not for
 * anything outside scheduler/ (sched.h is the API). */
#ifndef TUNE_LOOP_INT_H
#define TUNE_LOOP_INT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "scheduler/sched.h"
#include "search/render.h"
#include "search/searcher.h"
#include "search/settings.h"
#include "search/space.h"
#include "store/store.h"

/* Why a running trial was asked to stop: that decides how its end is recorded. */
enum sched__stop {
    SCHED__STOP_NONE = 0,
    SCHED__STOP_EARLY,      /* the policy stopped it: TERMINATED, early_stopped */
    SCHED__STOP_COMPLETE,   /* it reached max_t: TERMINATED */
    SCHED__STOP_USER,       /* Ctrl-C, a fatal store error, a mistake that stopped the run:
                             * PAUSED, resumable */
    SCHED__STOP_TIMEOUT,    /* a time limit or the executor's watchdog: ERROR */
    SCHED__STOP_EXPERIMENT, /* the experiment ended as planned (time budget, a target):
                             * TERMINATED, neither early-stopped nor failed */
    SCHED__STOP_PAUSE,      /* the policy paused it: PAUSED, its slice freed, resumed later
                             * from its checkpoint as a new attempt (docs/pbt.md) */
    SCHED__STOP_EXPLOIT     /* pbt exploited it: PAUSED until a slice is free, then a new
                             * attempt from the donor's checkpoint with its new configuration */
};

/* Keys read from every result: training_iteration, time_attr, metric, then the "stop"
 * criteria, then the reporter's metric_columns. */
#define SCHED__KEY_STOP 3
#define SCHED__MAX_KEYS (3 + SPACE_MAX_STOP + SPACE_MAX_COLUMNS)

/* pbt: a checkpoint a trial named, and the file that was there when it was named: a
 * restart that saves under the same name makes a new file, which deleting the old
 * checkpoint by its name alone would take with it. */
struct sched__ckpt {
    char *path;
    unsigned long long dev, ino; /* 0, 0: not a file inside its trial's folder, never deleted */
    int64_t owner;               /* the trial whose folder holds it */
};

/* What a trial needs only while it is launched, paused or waiting for another attempt:
 * allocated when it first needs it (sched__live) and freed when it ends for good
 * (sched__retire), so that a finished trial costs only its struct sched__trial. A trial
 * without one points at the loop's shared all-zero `nolive`, which reads as "never
 * started, nothing pending" and is never written (checked after each turn in debug
 * builds). */
struct sched__live {
    enum sched__stop stop;
    double stop_deadline; /* loop clock: SIGKILL after this */
    double term_at;       /* loop clock: SIGTERM at this time (a completed trial's grace) */
    int term_sent;
    int killed;
    int started;    /* the executor holds it (from start until release) */
    size_t run_pos; /* its index in the loop's list of running trials */
    sched_slice_t slice;
    int has_slice;
    double started_at;      /* loop clock */
    double last_result_at;  /* loop clock */
    double first_result_at; /* this attempt's first result, 0 if none yet */
    int64_t nresults;       /* results this attempt recorded (iters counts carried ones too) */
    char exec_id[96];       /* the executor's id last recorded (Slurm's job/step id arrives late) */
    char node[96];
    /* The process id the executor reported after the start (a start that does not wait for
     * the exec), not yet in the trial's row: written with the row's next update, or by a
     * turn LOOP_PID_SAVE_S after it came (ev_pid, save_pids). */
    int64_t pid;
    int pid_unsaved;
    double pid_at; /* loop clock */
    char *dir;
    char *resume_from;   /* checkpoint handed to the next attempt (TUNE_RESUME_FROM) */
    int64_t resume_iter; /* the iteration resume_from holds, when known (has_resume_iter) */
    int has_resume_iter;
    /* The attempt whose results the store shows as the trial's (trials.attempt), while a
     * newer attempt (sched__trial.attempt) has not reported yet; 0 when they are the same.
     * The newer attempt takes over at its first result, in the same transaction
     * (sched__take_over), so that an interruption at any moment leaves the trial's whole
     * history current: never doubled, never hidden. */
    int shown;
    int carry;               /* it resumed from a checkpoint: the shown attempt's results before the
                              * checkpoint's iteration carry over to it at the take-over */
    int kept_noted;          /* a checkpoint keep_checkpoints may not delete was recorded as such */
    char *named_ckpt;        /* the last "checkpoint" a result of this attempt named, or NULL */
    int64_t named_ckpt_iter; /* the iteration of the result that named it (kept past a pause) */
    double named_ckpt_time;  /* and its time_attr value */
    /* pbt: the checkpoints this trial named, oldest first, for keep_checkpoints */
    struct sched__ckpt *ckpts;
    size_t nckpts;
    /* pbt: an exploit's donor checkpoint (a path, or the simulator's "iteration:N") and the
     * copy the next attempt gets in TUNE_RESUME_FROM; pinned (never deleted) until the
     * new attempt has reported a result, i.e. restored from it */
    char *exploit_src, *exploit_dst;
    int64_t exploit_donor; /* 1 + the donor's trial number (0: not known) */
    int64_t copy_pid;      /* a child copying exploit_dst's bytes (copy_donor), 0 if none */
    int pinned;            /* exploit_src is pinned for this trial */
    int64_t exploit_iter;  /* the donor's iteration and time at exploit_src */
    double exploit_time;
    int policy_paused; /* resume: the policy's replayed decision on its last result was PAUSE */
    /* A start held by the executor (sched__hold_next): on the held trial, 1 + the running
     * trial it waits for; on that trial, 1 + the held one. 0: none. */
    int64_t held_after, successor;
};

/* One per trial of the experiment, for its whole run: what the live table, the outcome
 * and the policies read of a trial at any time. Kept small: a simulation holds a million. */
struct sched__trial {
    int64_t no, id; /* trial number and its row in the store */
    sched_trial_status_t status;
    int early_stopped;
    unsigned gen; /* bumped at each launch: timers of an earlier launch are stale */
    int reported; /* any result recorded, in any attempt */
    int attempt;  /* 1 for the first run; each retry or resume adds one */
    int failures; /* failed attempts so far */
    int64_t iters;
    double last_time, last_metric, best_metric;
    double ran_s; /* how long the last attempt ran, once it ended */
    /* NULL while the space can give it again (space_sample: random search, no PBT) and the
     * trial is not running: sched__config */
    cJSON *config;
    double *columns;       /* the reporter's metric_columns (ncols values), or NULL if none */
    const char *slice_str; /* its slice, as shown (interned by the loop: sched__intern) */
    char *error;
    struct sched__live *x; /* never NULL: its own, or the loop's nolive */
    int fate;              /* may_forget: SCHED__KEPT or SCHED__GONE once it ended for good */
    char name[32];
};

/* The loop's state, in parts, each written by the file named beside it; where another file
 * writes a field too, the part's comment names it. Everything else only reads a part. The
 * settings at the top of struct sched_loop are written once, by sched_loop_new, and are
 * read-only after. */

/* records.c (start.c fills it at the start; loop.c's debug check restores nolive): the
 * trials, in chunks of SCHED__CHUNK records
 * (sched__at). With may_forget a chunk is made when one of its trials is first needed (a
 * pending trial has no record until then) and freed once all of its trials are gone:
 * ended for good and not among the first report_trials finished ones, the only ones the
 * live table can show. Otherwise every chunk is made up front and kept, as the records of
 * a real run are. */
struct sched__records {
    struct sched__trial **chunk;
    unsigned char *chunk_state; /* SCHED__CHUNK_NONE, _MADE or _FREED */
    uint16_t *chunk_gone;       /* how many of a made chunk's trials are gone */
    int64_t *row_id;            /* each trial's store row, 0 until it is created */
    size_t rows_next;           /* trials below it have their rows (sched__make_rows) */
    size_t n;
    size_t nloaded; /* resume: trials below it had rows in the store (their records made) */
    int may_forget; /* random search, no PBT, report_trials > 0 */
    size_t nadded;  /* trials announced to the policy (in trial order; lazily with may_forget) */
    /* what the gone trials add to the snapshot and the outcome */
    size_t gone_counts[SCHED_TRIAL_NSTATUS], gone_early;
    double gone_best;
    int64_t gone_best_no;
    /* the finished trials kept, at most report_trials: a heap by sched__offer */
    struct sched__key *kept;
    size_t nkept;
    /* what a trial without a struct sched__live of its own points at: all zero */
    struct sched__live nolive;
    /* the slices' text as shown, one copy of each (sched__intern) */
    char **interned;
    size_t ninterned;
    /* trials' configurations can be dropped and sampled again (sched__config): random
     * search, no PBT */
    int resample;
};

/* life.c: which trials run, wait or are held. Also written by loop.c's launch_ready, which
 * takes the next trial off the queue, by start.c (the waiting trials of a resume), and, for
 * npid_unsaved, by loop.c's pid events and journal.c's row update. */
struct sched__queue {
    size_t next;   /* next trial to launch */
    size_t nheld;  /* trials whose start the executor holds (sched__hold_next) */
    int no_hold;   /* the executor cannot hold a start: never asked again */
    size_t *retry; /* trials waiting for another attempt, launched before `next` */
    size_t nretry;
    size_t running;
    size_t *run; /* the running trials (indices), so a turn's work follows them, not all */
    /* Trials the policy paused, in the order they paused, waiting for choose_next; ids is
     * scratch for their trial numbers. */
    size_t *paused;
    int64_t *paused_ids;
    size_t npaused;
    size_t npid_unsaved; /* running trials with pid_unsaved (at most: a sweep recounts) */
};

/* ckpt.c: the experiment's results folder, held open: every deletion and copy of a
 * checkpoint is resolved beneath it (dirs/dirs.h), never by a path's text; -1 where there
 * is none (the simulator's). And, for pbt, checkpoints past keep_checkpoints, deleted once
 * the turn that named newer ones is committed, so that the database never names a deleted
 * checkpoint as a trial's latest (a kill -9 between the two resumes from what the
 * database says). */
struct sched__ckpts {
    int results_fd;
    struct sched__ckpt *doomed;
    size_t ndoomed, capdoomed;
};

/* timers.c: a min-heap by time of a trial's time budget, its result timeout and the end of
 * its stop grace. Entries of a trial that has ended or been launched again are stale and
 * dropped when they come up. */
struct sched__timer {
    double at;
    size_t idx;
    unsigned gen;
};
struct sched__timers {
    struct sched__timer *timers;
    size_t ntimers, captimers;
};

/* loop.c: the turn and the run's stop. Also written: stopping by journal.c (the
 * experiment ended early), hard_done by life.c's timers, last_report by report.c, rx_* by
 * result.c. */
struct sched__turn {
    int hard_done;      /* the second Ctrl-C's kills were sent (life.c's timers) */
    double last_commit; /* CLOCK_MONOTONIC of the last commit */
    int stopping;       /* no new trials (journal.c too: the experiment ended early) */
    int hard_stop;      /* second Ctrl-C: kill now */
    int stop_signal;
    int in_batch;            /* a store transaction is open */
    size_t nevents;          /* lines and ends the executor's last wait reported */
    sig_atomic_t stops_seen; /* of o->stops, taken as sched_loop_stop */
    int ended;               /* the final report was made (report.c) */
    double t0;
    double last_report;
    /* When this turn's lines arrived: the clocks are read at the turn's first result and
     * reset (0) before each wait. The lines of one turn were all
     * waiting when the wait returned, and two clock reads per result were a measurable
     * share of the path. */
    double rx_wall, rx_now;
};

/* journal.c: why the experiment ended early, and the first store failure. */
struct sched__end {
    int fatal;
    char fatal_msg[1024]; /* start.c words a failed resume here before the loop runs */
    sched_end_t ended_by;
    int64_t end_trial;
    char end_msg[1024], end_detail[2048];
};

/* result.c: what the trials' output and ends told. Also written: early, nearly and
 * buffered by diagnose.c, results by start.c's replay, notice by ckpt.c. */
struct sched__seen {
    uint64_t results, ignored, bad_lines;
    int metric_checked; /* the first result was checked for metric and time_attr */
    int results_seen;   /* a trial of this run has reported a result */
    char notice[1024];  /* allow_missing_metric's, or PBT's without checkpoints (ckpt.c) */
    struct {
        char msg[512];
        int count;
        int64_t first; /* index of the first trial that failed so */
    } early[8];        /* identical early failures, for fail_fast */
    size_t nearly;
    size_t buffered;
    int64_t buffered_trial;
    char bad_example[160];
    int64_t bad_trial;
};

/* report.c: snapshot storage, reused between reports: the views, the configurations
 * sampled again for them (sched__config), the selected trials (report_trials), the
 * rungs (start.c reads them for the searcher). */
struct sched__snapshots {
    sched_trial_view_t *views;
    cJSON **view_cfg;
    struct sched__key *sel;
    size_t nviews;
    sched_rung_info_t rungs[256];
};

struct sched_loop {
    /* settings: written by sched_loop_new, read-only after */
    const sched_run_opts_t *o;
    const space_settings_t *set;
    const sched_clock_t *clock;
    sched_policy_t *policy;
    /* The searcher (tpe, or points_to_evaluate): each trial's configuration is chosen
     * when it is launched, from what was observed by then, and its row is created then.
     * NULL for random search, whose configurations are all sampled up front. */
    space_searcher_t *searcher;
    unsigned caps; /* what the policy may ask of the loop: SCHED_CAP_* (sched_policy_caps) */
    /* The policy ranks points (several objectives or constraints: sched_policy_ranked):
     * each result's objectives and violation are read (space_objectives, space_violation)
     * and handed to it; otherwise the metric alone, on today's path. */
    int ranked;
    int time_is_iter;
    /* Keys read from each result (see SCHED__KEY_STOP) and where the columns start. */
    const char *keys[SCHED__MAX_KEYS];
    size_t nkeys, col0, ncols;
    int dup[SCHED__MAX_KEYS]; /* the earlier slot holding the same key, or -1 */

    struct sched__records rec;
    struct sched__queue q;
    struct sched__ckpts ck;
    struct sched__timers tm;
    struct sched__turn turn;
    struct sched__end end;
    struct sched__seen seen;
    struct sched__snapshots rep;
};

#define SCHED__CHUNK 256
enum { SCHED__KEPT = 1, SCHED__GONE = 2 };
enum { SCHED__CHUNK_NONE = 0, SCHED__CHUNK_MADE, SCHED__CHUNK_FREED };

/* Trial i's record, or NULL: its chunk not made yet (a pending trial) or freed (gone). */
static inline struct sched__trial *sched__find(const struct sched_loop *L, size_t i)
{
    struct sched__trial *c = L->rec.chunk[i / SCHED__CHUNK];
    return c ? &c[i % SCHED__CHUNK] : NULL;
}

static inline size_t sched__chunk_size(const struct sched_loop *L, size_t c)
{
    size_t lo = c * SCHED__CHUNK;
    return L->rec.n - lo < SCHED__CHUNK ? L->rec.n - lo : SCHED__CHUNK;
}

/* A trial as the live table orders it (report.c) */
struct sched__key {
    sched_trial_status_t status;
    double metric;
    int64_t no;
};

/* Trial i's record, which the caller knows exists (a live, paused or retried trial). */
static inline struct sched__trial *sched__at(const struct sched_loop *L, size_t i)
{
    return &L->rec.chunk[i / SCHED__CHUNK][i % SCHED__CHUNK];
}

/* records.c: the trial records */
/* Trial i's record, its chunk made first if need be; NULL when out of memory or gone. */
struct sched__trial *sched__make(struct sched_loop *L, size_t i);
/* Announces trials up to i to the policy, in trial order; SCHED_EINVAL if it refuses. */
int sched__add_upto(struct sched_loop *L, size_t i);
/* Gives t a struct sched__live of its own (a no-op if it has one); SCHED_ENOMEM. */
int sched__live(struct sched_loop *L, struct sched__trial *t);
/* t has ended for good: its struct sched__live (and, where it can be sampled again, its
 * configuration) is freed. Not for PBT, whose checkpoints outlive their trials. */
void sched__retire(struct sched_loop *L, struct sched__trial *t);
/* The loop's one copy of text s ("" when out of memory); lives as long as the loop. */
const char *sched__intern(struct sched_loop *L, const char *s);
/* t's configuration: its own, else sampled again into *scratch (the caller frees it);
 * NULL when it has none. */
const cJSON *sched__config(const struct sched_loop *L, const struct sched__trial *t,
                           cJSON **scratch);

/* records.c: offers key to the first k in the live table's order (sched_view_order), kept
 * in sel[0..*m) as a max-heap, the worst on top. Returns 1 when one drops out (the heap's
 * worst, or key itself), into *out; 0 when key joined a heap not yet full. */
int sched__offer(struct sched__key *sel, size_t *m, size_t k, struct sched__key key, int mx,
                 struct sched__key *out);

/* timers.c: files a timer for trial t at loop-clock time `at`. */
void sched__timer_add(struct sched_loop *L, struct sched__trial *t, double at);

/* journal.c: below every other file of the loop */
double sched__now(const struct sched_loop *L);
double sched__wall(const struct sched_loop *L);
/* A store write failed: remember the first failure; the loop then stops every trial and
 * reports it at the end. Everything committed before stays readable. */
void sched__fail(struct sched_loop *L, const char *what, const char *err);
/* a better than b in the experiment's mode; NaN is never better */
int sched__better(int mode_max, double a, double b);
/* Ends the experiment early for `why` (no new trials; running ones are stopped). The
 * first reason given is the one reported. */
void sched__end_experiment(struct sched_loop *L, sched_end_t why, int64_t trial, const char *msg);
/* Copies s into out (n bytes) with control characters escaped and the text cut at `max`
 * characters, so that a trial's output quoted in a message never reaches the terminal as
 * an escape sequence. */
void sched__escape_quote(const char *s, size_t len, char *out, size_t n, size_t max);
/* A result's point for a ranked policy (sched_policy_ranked): obj (room for
 * SPACE_MAX_OBJECTIVES) gets its objectives by space_objectives and pt->violation its
 * space_violation; pt->obj points at obj. r NULL (not JSON): NaN objectives, violation
 * +INFINITY. The one reading of a point, for a result as it arrives and as a resume
 * replays it. */
void sched__result_point(const space_settings_t *set, const cJSON *r, sched_point_t *pt,
                         double *obj);
/* Records a decision row (a failure goes to sched__fail). */
void sched__add_decision(struct sched_loop *L, const store_decision_t *sd);
/* Records a decision on trial t that no rung or cutoff judged (the end of the run, a
 * checkpoint kept, a gap after a resume): at iteration it and time tv, with t's value v. */
void sched__add_note(struct sched_loop *L, const struct sched__trial *t, const char *action,
                     int64_t it, double tv, double v, const char *reason);
void sched__update_row(struct sched_loop *L, struct sched__trial *t, const store_trial_update_t *u);

/* timers.c: the earliest timer, taken off the heap (the heap not empty). */
struct sched__timer sched__timer_pop(struct sched_loop *L);
/* life.c: fires the timers due at `now` and returns the time of the nearest one ahead
 * (or `wake`, if sooner); the second Ctrl-C kills every running trial once. */
double sched__run_timers(struct sched_loop *L, double now, double wake);
/* report.c: calls the report callback with a snapshot (final: the last one). */
void sched__report(struct sched_loop *L, int final);

/* start.c: the records (sched__make_chunk), the searcher, and on resume what the store
 * has of them; their rows are made by sched__make_rows, in the first turn. */
int sched__create_trials(struct sched_loop *L, char *err, size_t errlen);
/* records.c: makes chunk c's records as a first run starts them (configurations sampled
 * unless resampled or chosen at launch). */
int sched__make_chunk(struct sched_loop *L, size_t c, char *err, size_t errlen);
/* records.c: records trial t's row as PENDING with its configuration (and why the searcher
 * chose it, or NULL), in the open batch. */
int sched__create_row(struct sched_loop *L, struct sched__trial *t, const char *suggested_by,
                      char *err, size_t errlen);
/* Records trials rows_next..upto-1 that have no row yet as PENDING, in the open batch.
 * Random search samples every configuration up front, so its rows list the whole
 * experiment once the first turn has made them all (after its launches: the first trials
 * need not wait for thousands of rows). With a searcher a trial's configuration is chosen,
 * and its row created, at its launch (choose_config): experiments.num_trials says how
 * many there will be. On resume, the trials the store lacks are created as on a first
 * run. */
int sched__make_rows(struct sched_loop *L, size_t upto, char *err, size_t errlen);
/* life.c */
/* Starts trial t if its slice is free now: 1 if started (or failed for good), 0 if it has
 * to wait for resources. */
int sched__launch(struct sched_loop *L, struct sched__trial *t);
/* When every slice is taken: has the executor hold the next pending trial's start behind
 * a running trial that is ending (stopped by the policy, at max_t, past a time limit), in
 * that trial's slice, so that it starts the moment that trial ends, with no turn of the
 * loop in between (a wake-up of tune each way, on the critical path of every start). Only
 * where nothing the loop learns meanwhile could change which trial goes next: random
 * search, no retries, no pausing policy. 1 if one is now held. */
int sched__hold_next(struct sched_loop *L);
/* Takes back a held start that has not happened (L stopping, or a slice is free with
 * nothing else to run): 1 and t is pending again, 0 when it has started meanwhile. */
int sched__unhold(struct sched_loop *L, struct sched__trial *t);
/* Whether one more trial could start now: a slice free and max_concurrent not reached. */
int sched__slice_free(struct sched_loop *L);
void sched__request_stop(struct sched_loop *L, struct sched__trial *t, enum sched__stop why);
/* The executor reported the trial's end: record it, retry it, or let it go. */
void sched__ended(struct sched_loop *L, struct sched__trial *t, const sched_exit_t *ex);
void sched__free_trials(struct sched_loop *L);
/* Resumes L->q.paused[k] as a new attempt from its checkpoint if a slice is free: 1 if it
 * left the paused list (started, or failed to start), 0 if it has to wait. why: the
 * policy's evidence, recorded as a 'promote' (a rung) or 'resume' decision. */
int sched__resume(struct sched_loop *L, size_t k, const sched_decision_t *why);
/* Nothing is left to run: trials still paused end TERMINATED (early-stopped), with a
 * decision row saying so. */
void sched__end_paused(struct sched_loop *L);
/* Paused trials the policy has ended meanwhile (sched_policy_drop: HyperBand halved them
 * away while they waited at a milestone) end now, TERMINATED, in the policy's words. */
void sched__end_dropped(struct sched_loop *L);
/* Tells the searcher (if any) that trial t has ended for good. */
void sched__searcher_end(struct sched_loop *L, const struct sched__trial *t);

/* diagnose.c */
/* "SIGKILL", "SIGSEGV", ... ("?" for one without a name here). */
const char *sched__signame(int sig);
/* Trial t failed with msg before reporting anything: counted with the identical early
 * failures for fail_fast (L->seen.early), which ends the experiment at fail_fast of them. */
void sched__count_early_failure(struct sched_loop *L, struct sched__trial *t, const char *msg);
/* t ended: were all its results written within a second of its exit although it ran for
 * longer (its output buffered)? Counted once per trial for the outcome's warning. */
void sched__check_buffered(struct sched_loop *L, struct sched__trial *t);
/* The words for failed attempt t: msg (n bytes), what ended it ("exited with code 1"), gains
 * the last line of its stderr.log, or says CUDA ran out of memory, with the fix; t->error
 * is set to it, and tail (tn bytes) to the end of stderr.log. */
void sched__explain_failure(struct sched__trial *t, char *msg, size_t n, char *tail, size_t tn);

/* ckpt.c: a trial's checkpoints. */
/* The newest "checkpoint*" file in trial t's folder (the caller frees), or NULL: where a
 * trial whose results named none goes on from. */
char *sched__newest_checkpoint(const struct sched_loop *L, const struct sched__trial *t);
/* The path of a checkpoint a result of trial t named: as it is when absolute, else in the
 * trial's folder (as text: it is resolved beneath the folder when deleted or copied). */
void sched__ckpt_path(const struct sched_loop *L, const struct sched__trial *t, const char *named,
                      char *buf, size_t n);
/* pbt: trial t, at iteration it and time tv, exploits the trial d->donor names:
 * the configuration explored, lineage and decision recorded, the donor's checkpoint
 * pinned and copied into t's folder: 1, and the caller stops t to restart from it. No
 * checkpoint on the donor (or not on disk): recorded, 0, and t goes on (Ray Tune's "no
 * checkpoint for trial, skip exploit"). */
int sched__exploit(struct sched_loop *L, struct sched__trial *t, const sched_decision_t *d,
                   int64_t it, double tv);
/* pbt: whether exploited trial t may launch now: its copy of the donor's checkpoint is made
 * (now, if a resume found none) or cannot be; 0 while a child still copies its bytes. */
int sched__copy_ready(struct sched_loop *L, struct sched__trial *t);
/* pbt: the new attempt of an exploited trial starts from its copy of the donor's
 * checkpoint (TUNE_RESUME_FROM), or from the donor's own where none could be made. */
void sched__prepare_exploit(struct sched__trial *t);
/* pbt: a new checkpoint of trial t (its path): kept, and its checkpoints beyond
 * keep_checkpoints deleted, oldest first, unless another trial's exploit still needs one.
 * quiet: a resume noting them again, no 'keep' decision for one never deleted. */
void sched__note_checkpoint(struct sched_loop *L, struct sched__trial *t, const char *path,
                            int quiet);
/* pbt: t's new attempt has restored (reported a result) or ended: its donor's checkpoint
 * is no longer needed for it. */
void sched__unpin(struct sched_loop *L, struct sched__trial *t);
/* pbt: deletes the checkpoints sched__note_checkpoint let go, after a commit. */
void sched__delete_doomed(struct sched_loop *L);

/* The first result of an attempt that has not reported yet (sched__live.shown) at
 * iteration it: the trial's results before the checkpoint it resumed from carry over to
 * it, and the store shows it as the trial's attempt from now on. 0, or -1 when the store
 * failed (recorded with sched__fail). */
int sched__take_over(struct sched_loop *L, struct sched__trial *t, int64_t it);
/* The training_iteration tune counts for t's next result when the trial sends none: on
 * from its history; an attempt that has not reported yet goes on from its checkpoint's
 * iteration (when known), or starts again at 1 from scratch. */
int64_t sched__counted_iteration(const struct sched__trial *t);

/* result.c */
void sched__on_line(struct sched_loop *L, struct sched__trial *t, const char *line, size_t len,
                    int truncated);

#endif
