/* A trial's checkpoints: where a trial goes on from (the newest checkpoint* file), and for
 * PBT those kept, pinned and deleted (keep_checkpoints) and the exploit's mechanics (the
 * donor's checkpoint, copied into the clone's folder). Every deletion and copy is resolved
 * beneath the trial's folder, opened beneath the results folder the loop holds (dirs/),
 * never by a path's text. Not for: when a trial starts, stops or resumes (life.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dirs/dirs.h"
#include "scheduler/loop_int.h"

/* Trial t's folder as text (the results folder's, then its name): what its checkpoints'
 * names are read against. The folder itself is only ever opened beneath the results
 * folder tune holds (open_trial). */
static const char *dir_text(const struct sched_loop *L, const struct sched__trial *t, char *buf,
                            size_t n)
{
    snprintf(buf, n, "%s/%s", L->o->results_dir, t->name);
    return buf;
}

void sched__ckpt_path(const struct sched_loop *L, const struct sched__trial *t, const char *named,
                      char *buf, size_t n)
{
    if (named[0] == '/')
        snprintf(buf, n, "%s", named);
    else
        snprintf(buf, n, "%s/%s/%s", L->o->results_dir, t->name, named);
}

/* Trial t's folder, opened beneath the results folder without following a symlink: the
 * folder a trial's checkpoints are deleted and copied in. -1 when there is none. */
static int open_trial(const struct sched_loop *L, const struct sched__trial *t)
{
    return L->ck.results_fd >= 0 ? dirs_openat(L->ck.results_fd, t->name) : -1;
}

/* Where checkpoint `path` (as recorded: the trial's folder, '/', what it named; or an
 * absolute path) lies inside trial t's folder, or NULL with why: elsewhere, or a name
 * with "." or ".." in it. Only then is it resolved beneath the folder (dirs_*). */
static const char *ckpt_rel(const struct sched_loop *L, const struct sched__trial *t,
                            const char *path, char *why, size_t n)
{
    char d[4200];
    size_t dl = strlen(dir_text(L, t, d, sizeof d));
    if (strncmp(path, d, dl) != 0 || path[dl] != '/') {
        snprintf(why, n, "it is outside the trial's folder");
        return NULL;
    }
    return dirs_check(path + dl + 1, why, n) == DIRS_OK ? path + dl + 1 : NULL;
}

/* The last name of a relative path ("a/b/" gives "b"), into out. */
static void last_name(const char *rel, char *out, size_t n)
{
    size_t k = strlen(rel);
    while (k > 0 && rel[k - 1] == '/')
        k--;
    size_t b = k;
    while (b > 0 && rel[b - 1] != '/')
        b--;
    snprintf(out, n, "%.*s", (int)(k - b), rel + b);
}

/* What copy_donor did. */
enum { COPY_NONE, COPY_DONE, COPY_PENDING };

/* pbt: copies donor d's checkpoint src into trial t's folder as resume/attempt_N/NAME, the
 * copy t's attempt `attempt` restores from: each file a hard link where the file system
 * allows (a checkpoint of gigabytes costs nothing), so that whatever the donor does next
 * (a new checkpoint under the same name after its own restart) never changes it. Only a
 * checkpoint inside the donor's own folder is copied, nothing in it is followed out of
 * it (dirs_copy), and the copy lands inside t's folder, made under a name of its own and
 * renamed into place whole, so that a copy cut short is never taken for one. Where a file
 * needs its bytes copied (another file system, or the run asks for copies: copy_bytes), a
 * child process copies them and the loop goes on; t's launch waits for it (sched__copy_ready).
 * The copy's path into dst; COPY_NONE (dst empty: the donor's checkpoint is then handed on
 * as it is, pinned), COPY_DONE or COPY_PENDING. */
static int copy_donor(struct sched_loop *L, const struct sched__trial *d, struct sched__trial *t,
                      int attempt, const char *src, char *dst, size_t n)
{
    char why[256], base[300], whole[64], part[64], in[400], td[4200];
    dst[0] = 0;
    const char *srel = ckpt_rel(L, d, src, why, sizeof why);
    if (!srel || t->x->copy_pid > 0) return COPY_NONE;
    last_name(srel, base, sizeof base);
    snprintf(whole, sizeof whole, "attempt_%d", attempt);
    snprintf(part, sizeof part, ".attempt_%d.partial", attempt);
    snprintf(in, sizeof in, "%s/%s", part, base);
    int dfd = open_trial(L, d), tfd = dfd >= 0 ? open_trial(L, t) : -1, rfd = -1;
    int rc = COPY_NONE;
    if (tfd >= 0 && dirs_mkdirs(tfd, "resume", why, sizeof why) == DIRS_OK)
        rfd = dirs_openat(tfd, "resume");
    if (rfd < 0) goto out;
    if (dirs_exists(rfd, whole)) { /* made whole before (a resume making it again) */
        rc = COPY_DONE;
        goto out;
    }
    dirs_remove(rfd, part, why, sizeof why); /* what a copy cut short left */
    int crc = L->o->copy_bytes
                  ? DIRS_EBYTES
                  : dirs_copy(dfd, srel, rfd, in, DIRS_LINK_ONLY, NULL, why, sizeof why);
    if (crc == DIRS_OK && renameat(rfd, part, rfd, whole) == 0) {
        rc = COPY_DONE;
    } else if (crc == DIRS_EBYTES) {
        pid_t parent = getpid(), pid = fork();
        if (pid == 0) { /* tune has one thread: the child may use what the parent does */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(1);
            /* nothing of tune's but the two folders: above all not the experiment's lock
             * (.tune.lock, an flock the child would hold after a kill -9 of tune) */
            int lo = dfd < rfd ? dfd : rfd, hi = dfd < rfd ? rfd : dfd;
            if (lo > 3) close_range(3, (unsigned)lo - 1, 0);
            if (hi > lo + 1) close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
            close_range((unsigned)hi + 1, ~0u, 0);
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            int flags = L->o->copy_bytes ? DIRS_BYTES : 0;
            _exit(dirs_copy(dfd, srel, rfd, in, flags, NULL, why, sizeof why) == DIRS_OK &&
                          renameat(rfd, part, rfd, whole) == 0
                      ? 0
                      : 1);
        }
        if (pid > 0) {
            t->x->copy_pid = pid;
            rc = COPY_PENDING;
        }
    }
out:
    if (rc != COPY_NONE)
        snprintf(dst, n, "%s/resume/%s/%s", dir_text(L, t, td, sizeof td), whole, base);
    if (rfd >= 0) close(rfd);
    if (dfd >= 0) close(dfd);
    if (tfd >= 0) close(tfd);
    return rc;
}

/* pbt: whether trial t may launch: its exploit's copy is made (copy_donor, now if a resume
 * found none) or known to be impossible. 0 while a child still copies it. */
int sched__copy_ready(struct sched_loop *L, struct sched__trial *t)
{
    if (t->x->copy_pid > 0) {
        int st = 0;
        pid_t w = waitpid((pid_t)t->x->copy_pid, &st, WNOHANG);
        if (w == 0) return 0;
        t->x->copy_pid = 0;
        if (w < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) { /* the donor's own, then */
            free(t->x->exploit_dst);
            t->x->exploit_dst = NULL;
        } else if (t->x->exploit_dst) { /* one of t's checkpoints now (sched__exploit) */
            char folder[4600];
            snprintf(folder, sizeof folder, "%s", t->x->exploit_dst);
            *strrchr(folder, '/') = 0;
            sched__note_checkpoint(L, t, folder, 0);
        }
        return 1;
    }
    if (!t->x->exploit_src || !t->x->exploit_dst || t->x->exploit_donor <= 0) return 1;
    char why[256], dst[4600];
    const char *rel = ckpt_rel(L, t, t->x->exploit_dst, why, sizeof why);
    int tfd = rel ? open_trial(L, t) : -1;
    int have = tfd >= 0 && dirs_exists(tfd, rel);
    if (tfd >= 0) close(tfd);
    if (have) return 1;
    int rc = copy_donor(L, sched__at(L, (size_t)(t->x->exploit_donor - 1)), t, t->attempt,
                        t->x->exploit_src, dst, sizeof dst);
    if (rc == COPY_PENDING) return 0;
    if (rc == COPY_NONE || strcmp(dst, t->x->exploit_dst) != 0) {
        free(t->x->exploit_dst);
        t->x->exploit_dst = NULL;
    }
    return 1;
}

/* pbt: the new attempt of an exploited trial gets its copy of the donor's checkpoint
 * (sched__copy_ready made sure it is there), or the donor's own where no copy could be made (or
 * the checkpoint is the simulator's "iteration:N", or one outside the donor's folder),
 * which stays pinned until the new attempt has restored from it. */
void sched__prepare_exploit(struct sched__trial *t)
{
    if (!t->x->exploit_src) return;
    free(t->x->resume_from);
    t->x->resume_from = strdup(t->x->exploit_dst ? t->x->exploit_dst : t->x->exploit_src);
    t->x->resume_iter = t->x->exploit_iter;
    t->x->has_resume_iter = 1;
}

/* The newest "checkpoint*" entry in the trial's directory, or NULL. A trial that can
 * resume writes its checkpoints there under that name (tune-train does); the next
 * attempt is told where with TUNE_RESUME_FROM. */
static char *find_checkpoint(const char *dir)
{
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) return NULL;
    struct dirent *e;
    char best[4500] = "";
    struct timespec best_t = {0, 0};
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "checkpoint", 10) != 0) continue;
        if (strcmp(e->d_name, "checkpoints") == 0) continue; /* TUNE_CHECKPOINT_DIR itself */
        if (strstr(e->d_name, ".tmp")) continue;             /* half-written, never renamed */
        char path[4500];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0) continue;
        if (!best[0] || st.st_mtim.tv_sec > best_t.tv_sec ||
            (st.st_mtim.tv_sec == best_t.tv_sec && st.st_mtim.tv_nsec > best_t.tv_nsec)) {
            snprintf(best, sizeof best, "%s", path);
            best_t = st.st_mtim;
        }
    }
    closedir(d);
    return best[0] ? strdup(best) : NULL;
}

char *sched__newest_checkpoint(const struct sched_loop *L, const struct sched__trial *t)
{
    char dir[4200];
    return find_checkpoint(dir_text(L, t, dir, sizeof dir));
}

/* ---- Population Based Training: exploit, checkpoints kept ------------------------------- */

/* Whether some trial still needs `path`: an exploit's donor checkpoint not restored yet
 * (sched__trial.pinned), where a paused trial resumes from, or a trial's latest named
 * checkpoint (what an exploit of it would take). */
static int pinned_by_other(const struct sched_loop *L, const char *path)
{
    /* path itself or a folder holding it (an exploit's copy is kept as its folder) */
    size_t n = strlen(path);
#define COVERS(p) ((p) && strncmp((p), path, n) == 0 && ((p)[n] == 0 || (p)[n] == '/'))
    for (size_t i = 0; i < L->rec.n; i++) {
        const struct sched__trial *u = sched__at(L, i);
        if (u->x->pinned && COVERS(u->x->exploit_src)) return 1;
        /* a paused trial's, or a launched one's until its first result (it restores) */
        if ((u->status != SCHED_TRIAL_RUNNING || u->x->first_result_at == 0) &&
            COVERS(u->x->resume_from))
            return 1;
        /* an exploit decided but not started yet: the copy it restores from */
        if (COVERS(u->x->exploit_dst) || COVERS(u->x->named_ckpt)) return 1;
    }
#undef COVERS
    return 0;
}

/* Lets go of trial t's checkpoints beyond keep_checkpoints (deleted after the next commit,
 * sched__delete_doomed). */
static void trim_checkpoints(struct sched_loop *L, struct sched__trial *t)
{
    /* The oldest go first; one another trial still needs stays (and is tried again at the
     * next checkpoint). Only files inside the trial's own folder are ever deleted (dev and
     * ino known, sched__note_checkpoint): a path elsewhere is the user's. */
    size_t keep = (size_t)L->set->sched.keep_checkpoints;
    size_t excess = t->x->nckpts > keep ? t->x->nckpts - keep : 0, w = 0;
    for (size_t i = 0; i < t->x->nckpts; i++) {
        struct sched__ckpt c = t->x->ckpts[i];
        int own = c.dev || c.ino;
        if (excess > 0 && i + 1 < t->x->nckpts && own && !pinned_by_other(L, c.path)) {
            excess--;
            if (L->ck.ndoomed == L->ck.capdoomed) {
                size_t cap = L->ck.capdoomed ? 2 * L->ck.capdoomed : 16;
                struct sched__ckpt *d = realloc(L->ck.doomed, cap * sizeof *d);
                if (!d) {
                    free(c.path); /* out of memory: left on disk, which is safe */
                    continue;
                }
                L->ck.doomed = d;
                L->ck.capdoomed = cap;
            }
            L->ck.doomed[L->ck.ndoomed++] = c;
        } else {
            t->x->ckpts[w++] = c;
        }
    }
    t->x->nckpts = w;
}

/* The first checkpoint of t that keep_checkpoints may not delete is recorded as a
 * decision, with why, so that the disk it keeps is explained. */
static void note_kept(struct sched_loop *L, struct sched__trial *t, const char *path,
                      const char *why)
{
    if (t->x->kept_noted) return;
    t->x->kept_noted = 1;
    char reason[1200];
    snprintf(reason, sizeof reason,
             "checkpoint %.600s is never deleted by keep_checkpoints: %s (tune deletes only files "
             "inside the trial's own folder, named without \".\" or \"..\" and reached without "
             "a symlink: save checkpoints in TUNE_CHECKPOINT_DIR)",
             path, why);
    sched__add_note(L, t, "keep", t->x->named_ckpt_iter, t->x->named_ckpt_time, t->last_metric,
                    reason);
}

void sched__note_checkpoint(struct sched_loop *L, struct sched__trial *t, const char *path,
                            int quiet)
{
    struct stat st;
    struct sched__ckpt c = {NULL, 0, 0, t->no};
    char why[300] = "";
    const char *rel = ckpt_rel(L, t, path, why, sizeof why);
    int fd = rel ? open_trial(L, t) : -1;
    int src = fd >= 0 ? dirs_stat(fd, rel, &st) : DIRS_ERR;
    if (fd >= 0) close(fd);
    if (src == DIRS_OK) {
        c.dev = (unsigned long long)st.st_dev;
        c.ino = (unsigned long long)st.st_ino;
    } else if (rel && src == DIRS_EOUTSIDE) {
        snprintf(why, sizeof why, "a folder on its way is a symlink");
    }
    if (!c.dev && !c.ino) {
        /* never deleted, so not counted either: keep_checkpoints keeps the newest of the
         * trial's own */
        if (why[0] && L->ck.results_fd >= 0 && !quiet) note_kept(L, t, path, why);
        return;
    }
    size_t n = t->x->nckpts;
    if (n > 0 && strcmp(t->x->ckpts[n - 1].path, path) == 0) {
        t->x->ckpts[n - 1].dev = c.dev; /* saved again over itself: the file it is now */
        t->x->ckpts[n - 1].ino = c.ino;
        return;
    }
    /* the same name again (a restart saving over an older one): one entry, the newest */
    size_t w0 = 0;
    for (size_t i = 0; i < t->x->nckpts; i++) {
        if (strcmp(t->x->ckpts[i].path, path) == 0)
            free(t->x->ckpts[i].path);
        else
            t->x->ckpts[w0++] = t->x->ckpts[i];
    }
    t->x->nckpts = w0;
    struct sched__ckpt *v = realloc(t->x->ckpts, (t->x->nckpts + 1) * sizeof *v);
    c.path = strdup(path);
    if (v) t->x->ckpts = v;
    if (!v || !c.path) {
        free(c.path);
        return; /* out of memory: this one is never deleted, which is safe */
    }
    t->x->ckpts[t->x->nckpts++] = c;
    trim_checkpoints(L, t);
}

/* Deletes checkpoint c, if it is still the very file that was named, beneath its trial's
 * folder (nothing outside it, no symlink followed), never a file the trial saved under the
 * same name since, even at that very moment (dirs_remove_if). */
static void delete_checkpoint(struct sched_loop *L, const struct sched__ckpt *c)
{
    if (!c->dev && !c->ino) return;
    const struct sched__trial *t = sched__at(L, (size_t)c->owner);
    char why[300];
    const char *rel = ckpt_rel(L, t, c->path, why, sizeof why);
    int fd = rel ? open_trial(L, t) : -1;
    if (fd >= 0) dirs_remove_if(fd, rel, c->dev, c->ino, why, sizeof why); /* or left: safe */
    if (fd >= 0) close(fd);
}

void sched__delete_doomed(struct sched_loop *L)
{
    if (!(L->caps & SCHED_CAP_EXPLOIT))
        return; /* nothing is let go otherwise: no walk over a big population */
    /* a checkpoint kept because it was needed then may have been let go since */
    for (size_t k = 0; k < L->rec.n; k++)
        if (sched__at(L, k)->x->nckpts > (size_t)L->set->sched.keep_checkpoints)
            trim_checkpoints(L, sched__at(L, k));
    for (size_t i = 0; i < L->ck.ndoomed; i++) {
        struct sched__ckpt *c = &L->ck.doomed[i];
        /* named again since (a restart saving under the same name) or needed by an
         * exploit decided in the meantime: kept; and only the very file that was named
         * (the trial may have saved a new one under the same name, not named yet) */
        int keep = pinned_by_other(L, c->path);
        for (size_t k = 0; !keep && k < L->rec.n; k++)
            for (size_t j = 0; !keep && j < sched__at(L, k)->x->nckpts; j++)
                keep = strcmp(sched__at(L, k)->x->ckpts[j].path, c->path) == 0;
        if (!keep) delete_checkpoint(L, c);
        free(c->path);
    }
    L->ck.ndoomed = 0;
}

void sched__unpin(struct sched_loop *L, struct sched__trial *t)
{
    (void)L;
    t->x->pinned = 0;
    free(t->x->exploit_src);
    free(t->x->exploit_dst);
    t->x->exploit_src = t->x->exploit_dst = NULL;
}

/* The donor's latest checkpoint and the iteration it was taken at: what its results named
 * (kept past a pause as the resume point), else the executor's word (the simulator's
 * "iteration:N"). NULL when it has none, or none whose iteration is known: the newest
 * checkpoint* file of a paused donor that never named one holds an iteration tune cannot
 * know, and a clone restored from it would count its iterations from 0 while training on
 * from wherever the file stood. */
static char *donor_checkpoint(struct sched_loop *L, const struct sched__trial *d, int64_t *iter,
                              double *time)
{
    *iter = d->x->named_ckpt_iter;
    *time = d->x->named_ckpt_time;
    /* a donor that was itself exploited and has not restarted yet: its state is the copy
     * it will restore */
    long long n = 0;
    if (d->x->exploit_src && d->status != SCHED_TRIAL_RUNNING) {
        *iter = d->x->exploit_iter;
        *time = d->x->exploit_time;
        return strdup(d->x->exploit_dst ? d->x->exploit_dst : d->x->exploit_src);
    }
    if (d->x->named_ckpt) return strdup(d->x->named_ckpt);
    if (d->status == SCHED_TRIAL_PAUSED && d->x->resume_from) {
        if (sscanf(d->x->resume_from, "iteration:%lld", &n) == 1) { /* the simulator's */
            *iter = n;
            *time = L->time_is_iter ? (double)n : d->last_time;
        } else if (!d->x->has_resume_iter) {
            return NULL; /* found as the newest checkpoint* file, never named */
        }
        return strdup(d->x->resume_from);
    }
    const sched_exec_t *x = L->o->exec;
    char buf[4200];
    if (x->ops->checkpoint && x->ops->checkpoint(x->self, d->no, buf, sizeof buf) == 0) {
        if (sscanf(buf, "iteration:%lld", &n) == 1) {
            *iter = n;
            *time = L->time_is_iter ? (double)n : d->last_time;
        }
        return strdup(buf);
    }
    return NULL;
}

/* The fix for a population that names no checkpoint, in its users' words. */
static const char k_name_checkpoints[] =
    "Report each checkpoint: tune.report(..., checkpoint=PATH) in Python, or a \"checkpoint\" "
    "key in the result line (docs/pbt.md, \"The trial's contract\"); a checkpoint* file saved "
    "but never reported cannot be used, since its iteration is unknown";

/* Whether donor d has never named a checkpoint in a result, in any attempt (nor is a clone
 * waiting to restore one, nor the executor's word, the simulator's, stands for it). */
static int never_named(const struct sched__trial *d)
{
    return !d->x->named_ckpt && d->x->named_ckpt_iter == 0 && !d->x->has_resume_iter &&
           !d->x->exploit_src;
}

int sched__exploit(struct sched_loop *L, struct sched__trial *t, const sched_decision_t *d,
                   int64_t it, double tv)
{
    int stop = 0;
    const space_settings_t *set = L->set;
    double now = sched__wall(L);
    if (d->donor < 0 || (size_t)d->donor >= L->rec.n) return 0;
    struct sched__trial *donor = sched__at(L, d->donor);
    char reason[1200], vb[32], cb[32];
    int64_t diter = 0;
    double dtime = NAN;
    char *src = donor_checkpoint(L, donor, &diter, &dtime);
    store_decision_t sd = {.trial_id = t->id,
                           .iteration = it,
                           .time_value = tv,
                           .action = "continue",
                           .bracket = -1,
                           .rung = -1,
                           .milestone = tv,
                           .value = d->value,
                           .cutoff = d->cutoff,
                           .reason = reason,
                           .wall_time = now};
    if (!src && never_named(donor)) {
        /* PBT restarts a clone from the state its donor reported: without one it would
         * restore nothing while counting the donor's iterations. Said once, loudly (the
         * run's notice, on stderr), and at every perturbation it costs (the decision). */
        snprintf(reason, sizeof reason,
                 "perturbation at %s %s: %s in the bottom quantile, but %s has never reported a "
                 "checkpoint: no exploit. %s",
                 set->sched.time_attr, space_format_number(tv, vb), t->name, donor->name,
                 k_name_checkpoints);
        sched__add_decision(L, &sd);
        if (!L->seen.notice[0])
            snprintf(L->seen.notice, sizeof L->seen.notice,
                     "warning: PBT cannot exploit: %s has never reported a checkpoint (first "
                     "perturbation at %s %s), so no trial is restarted from another's state "
                     "until its donor reports one, and PBT does nothing a random search would "
                     "not. %s",
                     donor->name, set->sched.time_attr, space_format_number(tv, vb),
                     k_name_checkpoints);
        return 0;
    }
    if (!src) {
        snprintf(reason, sizeof reason,
                 "perturbation at %s %s: %s in the bottom quantile, but %s has no checkpoint yet: "
                 "no exploit (report \"checkpoint\" in results to allow one)",
                 set->sched.time_attr, space_format_number(tv, vb), t->name, donor->name);
        sched__add_decision(L, &sd);
        return 0;
    }
    struct stat sb;
    if (src[0] == '/' && stat(src, &sb) != 0) {
        /* named, but not there (deleted by hand, or never written): a clone could not
         * restore from it, and would fail */
        snprintf(reason, sizeof reason,
                 "perturbation at %s %s: %s in the bottom quantile, but %s's checkpoint %.600s "
                 "is not there (%s): no exploit",
                 set->sched.time_attr, space_format_number(tv, vb), t->name, donor->name, src,
                 strerror(errno));
        sched__add_decision(L, &sd);
        free(src);
        return 0;
    }
    char err[512];
    cJSON *ncfg = NULL, *what = NULL;
    if (sched_policy_explore(L->policy, t->no, donor->no, donor->config, &ncfg, &what, err,
                             sizeof err) != 0) {
        free(src);
        sched__fail(L, "cannot explore a configuration", err);
        return 0;
    }
    char *old_txt = space_json_print(t->config), *new_txt = space_json_print(ncfg);
    char *what_txt = space_json_print(what);
    cJSON_Delete(what);
    /* The copy is made now, so that whatever the donor does next (a new checkpoint under
     * the same name after its own restart) never changes it. */
    char dst[4600] = "";
    copy_donor(L, donor, t, t->attempt + 1, src, dst, sizeof dst);
    if (dst[0]) {
        /* the copy is one of t's checkpoints for keep_checkpoints, as its folder: deleted in
         * turn once t has newer ones of its own */
        char folder[4600];
        snprintf(folder, sizeof folder, "%s", dst);
        *strrchr(folder, '/') = 0;
        sched__note_checkpoint(L, t, folder, 0);
    }
    if (!old_txt || !new_txt || !what_txt) {
        sched__fail(L, "cannot explore a configuration", "out of memory");
        goto done;
    }
    store_lineage_t l = {.experiment_id = L->o->experiment_id,
                         .trial_id = t->id,
                         .attempt = t->attempt + 1,
                         .iteration = it,
                         .time_value = tv,
                         .donor_trial_id = donor->id,
                         .donor_attempt = donor->attempt,
                         .donor_iteration = diter,
                         .donor_time_value = dtime,
                         .donor_checkpoint = src,
                         .resume_from = dst[0] ? dst : src,
                         .old_config = old_txt,
                         .new_config = new_txt,
                         .explore = what_txt,
                         .value = d->value,
                         .donor_value = donor->last_metric,
                         .wall_time = now};
    if (store_lineage_add(L->o->store, &l, err, sizeof err) != 0 ||
        store_trial_set_config(L->o->store, t->id, new_txt, err, sizeof err) != 0) {
        sched__fail(L, "cannot record an exploit", err);
        goto done;
    }
    snprintf(reason, sizeof reason,
             "perturbation at %s %s: %s in the bottom quantile (%s) exploits %s (top quantile, "
             "its checkpoint at iteration %lld) and explores %s: %s",
             set->sched.time_attr, space_format_number(tv, vb), t->name,
             space_format_number(d->value, cb), donor->name, (long long)diter, what_txt, new_txt);
    sd.action = "exploit";
    sched__add_decision(L, &sd);
    cJSON_Delete(t->config);
    t->config = ncfg;
    ncfg = NULL;
    free(t->x->exploit_src);
    free(t->x->exploit_dst);
    t->x->exploit_src = src;
    t->x->exploit_dst = dst[0] ? strdup(dst) : NULL;
    t->x->exploit_iter = diter;
    t->x->exploit_time = dtime;
    t->x->exploit_donor = donor->no + 1;
    t->x->pinned = 1;
    src = NULL;
    stop = 1;
done:
    cJSON_Delete(ncfg);
    free(src);
    free(old_txt);
    free(new_txt);
    free(what_txt);
    return stop;
}
