/* Why a trial failed, in words that name the fix: the signal that ended it, a CUDA
 * out-of-memory, the last line of its stderr, identical early failures counted for
 * fail_fast, and output that arrived only at the exit (buffered). Not for: deciding what
 * happens to the trial (life.c). */
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

const char *sched__signame(int sig)
{
    switch (sig) {
    case SIGKILL:
        return "SIGKILL";
    case SIGTERM:
        return "SIGTERM";
    case SIGSEGV:
        return "SIGSEGV";
    case SIGABRT:
        return "SIGABRT";
    case SIGINT:
        return "SIGINT";
    case SIGBUS:
        return "SIGBUS";
    case SIGFPE:
        return "SIGFPE";
    case SIGILL:
        return "SIGILL";
    default:
        return "signal";
    }
}

/* CUDA's out-of-memory errors, as the CUDA runtime, cuBLAS/cuDNN and PyTorch print them. */
static int looks_like_cuda_oom(const char *tail)
{
    return strstr(tail, "CUDA out of memory") || strstr(tail, "CUDA_ERROR_OUT_OF_MEMORY") ||
           strstr(tail, "cudaErrorMemoryAllocation") ||
           strstr(tail, "CUBLAS_STATUS_ALLOC_FAILED") ||
           strstr(tail, "CUDNN_STATUS_ALLOC_FAILED") || strstr(tail, "out of memory allocating");
}

/* The last line of a stderr tail with something in it, escaped and cut short; 0 if none. */
static int last_stderr_line(const char *tail, char *out, size_t n)
{
    size_t end = strlen(tail);
    for (;;) {
        while (end > 0 && (tail[end - 1] == '\n' || tail[end - 1] == '\r' || tail[end - 1] == ' ' ||
                           tail[end - 1] == '\t'))
            end--;
        if (end == 0) return 0;
        size_t start = end;
        while (start > 0 && tail[start - 1] != '\n')
            start--;
        size_t s = start;
        while (s < end && (tail[s] == ' ' || tail[s] == '\t'))
            s++;
        /* Python's caret lines ("    ^^^^") under a source line say nothing by themselves. */
        size_t k = s;
        while (k < end && (tail[k] == '^' || tail[k] == '~' || tail[k] == ' '))
            k++;
        if (k < end) {
            sched__escape_quote(tail + s, end - s, out, n, 200);
            return 1;
        }
        end = start;
    }
}

/* The first lines (at most 10) of a file, escaped, for a message; "" if unreadable. */
static void file_head(const char *path, char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char buf[1500];
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    size_t lines = 0, o = 0;
    for (size_t i = 0; i < k && lines < 10 && o + 8 < n; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (ch == '\n') {
            lines++;
            out[o++] = '\n';
        } else if (ch < 0x20 && ch != '\t') {
            o += (size_t)snprintf(out + o, n - o, "\\x%02x", ch);
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o < n ? o : n - 1] = 0;
}

/* fail_fast (Ray Tune's FailureConfig(fail_fast=...), counted): trials that fail before
 * reporting anything, with the same message once their own directory and name are taken
 * out of it, are the same mistake each time (a wrong path, a missing module); after
 * fail_fast of them the experiment stops instead of failing every trial. */
void sched__count_early_failure(struct sched_loop *L, struct sched__trial *t, const char *msg)
{
    if (L->set->fail_fast <= 0 || t->reported || L->turn.stopping) return;
    char norm[512];
    size_t o = 0;
    size_t dl = t->x->dir ? strlen(t->x->dir) : 0, nl = strlen(t->name);
    for (const char *p = msg; *p && o + 16 < sizeof norm;) {
        if (dl && strncmp(p, t->x->dir, dl) == 0) {
            o += (size_t)snprintf(norm + o, sizeof norm - o, "{trial_dir}");
            p += dl;
        } else if (nl && strncmp(p, t->name, nl) == 0) {
            o += (size_t)snprintf(norm + o, sizeof norm - o, "{trial}");
            p += nl;
        } else {
            norm[o++] = *p++;
        }
    }
    norm[o] = 0;
    size_t i = 0;
    while (i < L->seen.nearly && strcmp(L->seen.early[i].msg, norm) != 0)
        i++;
    if (i == L->seen.nearly) {
        if (L->seen.nearly == sizeof L->seen.early / sizeof L->seen.early[0]) return;
        snprintf(L->seen.early[i].msg, sizeof L->seen.early[i].msg, "%s", norm);
        L->seen.early[i].first = t->no;
        L->seen.nearly++;
    }
    if (++L->seen.early[i].count < L->set->fail_fast) return;
    char m[800];
    snprintf(m, sizeof m,
             "%d trial%s failed the same way before reporting any result (fail_fast %d): %s",
             L->seen.early[i].count, L->seen.early[i].count == 1 ? "" : "s", L->set->fail_fast,
             msg);
    int64_t first = L->seen.early[i].first;
    sched__end_experiment(L, SCHED_END_FAIL_FAST, first, m);
    {
        /* its folder, as sched__launch named it (its record may be gone) */
        char path[4200], head[1600];
        snprintf(path, sizeof path, "%s/trial_%05lld/stderr.log", L->o->results_dir,
                 (long long)first);
        file_head(path, head, sizeof head);
        snprintf(L->end.end_detail, sizeof L->end.end_detail, "First lines of %.400s:\n%.1500s",
                 path, head[0] ? head : "(empty)\n");
    }
}

/* Results that all arrived within a second of the trial's exit, although it ran for
 * several seconds: its output was buffered until exit. Judged on an attempt that started
 * from scratch and reported at least two results itself. An attempt resumed from a
 * checkpoint (a PBT clone, a paused trial, a retry) spends its first seconds loading it and
 * may have one or two iterations left, which then arrive at its exit for no fault of its
 * output; and t->iters counts the results it carried, not the ones it sent. A program that
 * buffers does so in its first attempt too, where it is caught. */
void sched__check_buffered(struct sched_loop *L, struct sched__trial *t)
{
    if (t->x->nresults < 2 || t->x->first_result_at == 0 || t->x->resume_from) return;
    if (t->x->stop != SCHED__STOP_NONE && t->x->stop != SCHED__STOP_COMPLETE) return;
    double now = sched__now(L);
    if (now - t->x->first_result_at <= 1.0 && now - t->x->started_at >= 3.0) {
        if (L->seen.buffered++ == 0) L->seen.buffered_trial = t->no;
    }
}

/* The words for attempt t's failure: msg (n bytes), what ended it ("exited with code 1"),
 * gains the last line of the trial's stderr.log, where the cause usually is; a CUDA
 * out-of-memory is said as such, with the fix. t->error becomes the result, tail (tn
 * bytes) the end of stderr.log. */
void sched__explain_failure(struct sched__trial *t, char *msg, size_t n, char *tail, size_t tn)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/stderr.log", t->x->dir);
    trial_file_tail(path, tail, tn);
    /* The cause is usually the last line the program wrote to stderr (a Python
     * traceback ends with the exception): it goes with the exit code. */
    char last[256];
    int oom = looks_like_cuda_oom(tail);
    if (!oom && t->x->stop != SCHED__STOP_TIMEOUT && last_stderr_line(tail, last, sizeof last)) {
        size_t k = strlen(msg);
        snprintf(msg + k, n - k, ": %s", last);
    }
    if (oom) {
        char m2[512];
        snprintf(m2, sizeof m2,
                 "CUDA out of memory (%.300s): lower the batch size, give each trial more GPU "
                 "memory (gpus_per_trial 1 instead of a fraction), or run fewer trials per GPU",
                 msg);
        snprintf(msg, n, "%s", m2);
    }
    free(t->error);
    t->error = strdup(msg);
}
