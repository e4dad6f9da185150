/* proc.c: the trial handle every executor shares: the public trial_* calls that dispatch
 * to an executor's vtable, the stdout line splitter and log, exit statuses, and file tails.
 * Not for: how a trial is started (exec_local.c) or what a line means (result.c). */
#include "trial/trial_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void trial__errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- executors ------------------------------------------------------------------- */

static void exec_release(trial_exec_t *ex)
{
    if (ex->ops->exec_free) ex->ops->exec_free(ex);
    free(ex);
}

void trial_exec_free(trial_exec_t *ex)
{
    if (!ex) return;
    /* The contract asks callers to free their trials first; if one is still live, its
     * handle points here, so the executor goes with the last trial instead. */
    if (ex->live > 0) {
        ex->free_late = 1;
        return;
    }
    exec_release(ex);
}

const char *trial_exec_name(const trial_exec_t *ex)
{
    return ex ? ex->ops->name : "";
}

int trial_exec_names_trials(const trial_exec_t *ex)
{
    return ex ? ex->ops->names_trials : 0;
}

/* ---- starting and freeing ---------------------------------------------------------- */

int trial_start(trial_exec_t *ex, const trial_spawn_t *sp, trial_proc_t **out, char *err,
                size_t errlen)
{
    return trial_start_after(ex, sp, NULL, out, err, errlen);
}

int trial_start_after(trial_exec_t *ex, const trial_spawn_t *sp, const trial_proc_t *after,
                      trial_proc_t **out, char *err, size_t errlen)
{
    if (!ex || !sp || !out) {
        trial__errf(err, errlen, "trial_start: no executor, spawn options or result handle");
        return TRIAL_EINVAL;
    }
    if (!sp->argv || !sp->argv[0] || !sp->argv[0][0]) {
        trial__errf(err, errlen, "no program to run: argv is empty");
        return TRIAL_EINVAL;
    }
    for (char *const *e = sp->env; e && *e; e++) {
        if ((*e)[0] == '=' || !strchr(*e, '=')) {
            trial__errf(err, errlen, "environment entry \"%s\" is not KEY=VALUE", *e);
            return TRIAL_EINVAL;
        }
    }
    if (after && (!sp->no_wait || after->ex != ex || !trial_exec_can_hold(ex))) {
        trial__errf(err, errlen, "this executor cannot hold a start behind another trial");
        return TRIAL_EINVAL;
    }
    trial_proc_t *p = calloc(1, sizeof *p);
    if (!p) {
        trial__errf(err, errlen, "out of memory");
        return TRIAL_ERR;
    }
    p->ex = ex;
    p->pid = p->pgid = p->trial_pid = -1;
    p->fd = p->log_fd = -1;
    /* The log is opened before anything runs, so a bad path costs no process. */
    if (sp->log_fds) {
        p->log_fd = fcntl(sp->stdout_fd, F_DUPFD_CLOEXEC, 0);
        if (p->log_fd < 0) {
            trial__errf(err, errlen, "cannot keep the stdout log open: %s", strerror(errno));
            free(p);
            return TRIAL_ERR;
        }
    } else if (sp->stdout_log) {
        p->log_fd = open(sp->stdout_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
        if (p->log_fd < 0) {
            trial__errf(err, errlen, "cannot open stdout log \"%s\": %s", sp->stdout_log,
                        strerror(errno));
            free(p);
            return TRIAL_ERR;
        }
    }
    int rc = ex->ops->start(ex, sp, after, p, err, errlen);
    if (rc != 0) {
        if (p->log_fd >= 0) close(p->log_fd);
        if (p->fd >= 0) close(p->fd);
        free(p);
        return rc;
    }
    ex->live++;
    *out = p;
    return TRIAL_OK;
}

void trial_proc_free(trial_proc_t *p)
{
    if (!p) return;
    trial_exec_t *ex = p->ex;
    ex->ops->proc_free(p); /* kills and reaps whatever still runs (tmux job_free habit) */
    if (p->fd >= 0) close(p->fd);
    if (p->log_fd >= 0) close(p->log_fd);
    free(p->line);
    free(p->start_err);
    free(p);
    if (--ex->live == 0 && ex->free_late) exec_release(ex);
}

/* ---- the simple dispatchers ------------------------------------------------------ */

int trial_fd(const trial_proc_t *p)
{
    return p ? p->ex->ops->fd(p) : -1;
}

int trial_read(trial_proc_t *p, trial_line_cb cb, void *ud, size_t max_bytes)
{
    if (!p || !cb) return TRIAL_EINVAL;
    return p->ex->ops->read(p, cb, ud, max_bytes);
}

int trial_signal(trial_proc_t *p, int sig)
{
    if (!p) return TRIAL_EINVAL;
    /* Once reaped, the keeper had killed the whole tree before it ended, and its pid may
     * belong to someone else by now: there is nothing of this trial left to signal. */
    if (p->reaped) return TRIAL_OK;
    return p->ex->ops->signal(p, sig);
}

int trial_exec_can_hold(trial_exec_t *ex)
{
    return ex && ex->ops->can_hold ? ex->ops->can_hold(ex) : 0;
}

int trial_cancel(trial_proc_t *p)
{
    return p && p->ex->ops->cancel ? p->ex->ops->cancel(p) : 0;
}

int trial_poll_exit(trial_proc_t *p, trial_exit_t *out)
{
    if (!p) return TRIAL_EINVAL;
    if (!p->reaped) {
        int rc = p->ex->ops->poll_exit(p, out);
        if (rc != 1) return rc;
    }
    if (out) *out = p->exit;
    return 1;
}

/* The program's own pid, which is what a user wants to look at (top, py-spy, gdb) and what
 * the store records; the keeper between tune and it is an implementation detail. */
pid_t trial_pid(const trial_proc_t *p)
{
    if (!p) return -1;
    return p->trial_pid > 0 ? p->trial_pid : p->pid;
}

const char *trial_start_error(const trial_proc_t *p)
{
    return p ? p->start_err : NULL;
}

int trial_exec_fd(const trial_exec_t *ex)
{
    return ex && ex->ops->events_fd ? ex->ops->events_fd(ex) : -1;
}

void trial_exec_poll(trial_exec_t *ex)
{
    if (ex && ex->ops->events) ex->ops->events(ex);
}

const char *trial_exec_id(const trial_proc_t *p)
{
    return p ? p->ex->ops->exec_id(p) : "";
}

const char *trial_node(const trial_proc_t *p)
{
    return p ? p->ex->ops->node(p) : "";
}

/* The optional ops: an executor without them (local) has nothing to watch, no limits of
 * its own and leaves nothing behind. */
int trial_health(trial_proc_t *p, double now, char *why, size_t n)
{
    if (why && n) why[0] = '\0';
    if (!p || p->reaped || !p->ex->ops->health) return 0;
    return p->ex->ops->health(p, now, why, n);
}

int trial_exec_check(trial_exec_t *ex, int ranks, double gpus, int cpus, trial_capacity_t *cap,
                     char *err, size_t errlen)
{
    if (!ex || !cap) {
        trial__errf(err, errlen, "trial_exec_check: no executor or result");
        return TRIAL_EINVAL;
    }
    cap->known = 0;
    cap->gpus = cap->cpus = -1;
    if (!ex->ops->check) return TRIAL_OK;
    return ex->ops->check(ex, ranks, gpus, cpus, cap, err, errlen);
}

int trial_exec_cleanup(trial_exec_t *ex, const char *experiment, char *err, size_t errlen)
{
    if (!ex || !experiment) {
        trial__errf(err, errlen, "trial_exec_cleanup: no executor or experiment");
        return TRIAL_EINVAL;
    }
    if (!ex->ops->cleanup) return 0;
    return ex->ops->cleanup(ex, experiment, err, errlen);
}

void trial__set_exit(trial_proc_t *p, int status)
{
    p->reaped = 1;
    if (WIFSIGNALED(status)) {
        p->exit.code = -1;
        p->exit.signal = WTERMSIG(status);
    } else {
        p->exit.code = WEXITSTATUS(status);
        p->exit.signal = 0;
    }
}

/* ---- reading stdout: log, then split into lines ----------------------------------- */

static void log_bytes(trial_proc_t *p, const char *buf, size_t n)
{
    while (p->log_fd >= 0 && n > 0) {
        ssize_t w = write(p->log_fd, buf, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            /* A full disk must not stop the trial's results from reaching the scheduler;
             * the log is given up and the reason kept in p->log_errno. */
            p->log_errno = w < 0 ? errno : EIO;
            close(p->log_fd);
            p->log_fd = -1;
            return;
        }
        buf += w;
        n -= (size_t)w;
    }
}

/* Appends n bytes to the unfinished line; the caller has made sure it stays within
 * TRIAL_MAX_LINE, so the buffer never grows past TRIAL_MAX_LINE + 1. */
static int line_append(trial_proc_t *p, const char *s, size_t n)
{
    size_t need = p->line_len + n + 1;
    if (need > p->line_cap) {
        size_t cap = p->line_cap ? p->line_cap : 4096;
        while (cap < need)
            cap *= 2;
        if (cap > (size_t)TRIAL_MAX_LINE + 1) cap = (size_t)TRIAL_MAX_LINE + 1;
        char *nb = realloc(p->line, cap);
        if (!nb) return TRIAL_ERR;
        p->line = nb;
        p->line_cap = cap;
    }
    memcpy(p->line + p->line_len, s, n);
    p->line_len += n;
    return 0;
}

static void line_deliver(trial_proc_t *p, trial_line_cb cb, void *ud, int truncated)
{
    size_t len = p->line_len;
    p->line_len = 0;
    if (!p->line) { /* an empty line that never needed the buffer */
        cb(ud, "", 0, truncated);
        return;
    }
    p->line[len] = '\0';
    cb(ud, p->line, len, truncated);
}

/* Splits buf (n bytes, ours to modify) into lines. A line that fits in one read is handed
 * out in place; only a line split across reads is copied, and at most TRIAL_MAX_LINE of
 * it: past that it is delivered cut and its rest is skipped up to the newline. */
static int split_lines(trial_proc_t *p, char *buf, size_t n, trial_line_cb cb, void *ud)
{
    const size_t max = TRIAL_MAX_LINE;
    char *s = buf, *end = buf + n;
    while (s < end) {
        char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t seg = (size_t)((nl ? nl : end) - s);
        char *next = nl ? nl + 1 : end;
        if (p->discarding) {
            if (nl) p->discarding = 0;
        } else if (p->line_len == 0 && nl && seg <= max) {
            *nl = '\0';
            cb(ud, s, seg, 0);
        } else if (seg > max - p->line_len) {
            if (line_append(p, s, max - p->line_len) != 0) return TRIAL_ERR;
            line_deliver(p, cb, ud, 1);
            p->discarding = nl == NULL;
        } else {
            if (line_append(p, s, seg) != 0) return TRIAL_ERR;
            if (nl) line_deliver(p, cb, ud, 0);
        }
        s = next;
    }
    return 0;
}

/* The callback may signal or poll the trial but must not read it again or free it: the
 * line it is handed lives in this call's buffer or in p->line. */
int trial__read_pipe(trial_proc_t *p, trial_line_cb cb, void *ud, size_t max_bytes)
{
    if (p->fd < 0) return 1;
    if (max_bytes == 0) max_bytes = TRIAL__READ_DEFAULT;
    char buf[64 * 1024];
    size_t total = 0;
    while (total < max_bytes) {
        size_t want = max_bytes - total < sizeof buf ? max_bytes - total : sizeof buf;
        ssize_t n = read(p->fd, buf, want);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
            return TRIAL_ERR;
        }
        if (n == 0) {
            if (p->line_len > 0 && !p->discarding) line_deliver(p, cb, ud, 0);
            p->line_len = 0;
            p->discarding = 0;
            close(p->fd);
            p->fd = -1;
            return 1;
        }
        log_bytes(p, buf, (size_t)n); /* before splitting: the splitter writes NULs into buf */
        if (split_lines(p, buf, (size_t)n, cb, ud) != 0) return TRIAL_ERR;
        total += (size_t)n;
        /* A short read means the pipe was empty a moment ago: let the loop poll again
         * rather than pay one more read() that would only say EAGAIN. */
        if ((size_t)n < want) return 0;
    }
    return 0;
}

/* ---- file tails ------------------------------------------------------------------ */

int trial_mkdirs(const char *path)
{
    /* The parents usually exist (every trial after the first): one mkdir then. */
    if (mkdir(path, 0777) == 0 || errno == EEXIST) return 0;
    char buf[4096];
    size_t n = strlen(path);
    if (n >= sizeof buf) return -1;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            buf[i] = c;
        }
    }
    return 0;
}

size_t trial_file_tail(const char *path, char *buf, size_t n)
{
    if (!buf || n == 0) return 0;
    buf[0] = '\0';
    if (!path) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
        close(fd);
        return 0;
    }
    size_t size = (size_t)st.st_size;
    size_t want = size < n - 1 ? size : n - 1;
    size_t got = 0;
    while (got < want) {
        ssize_t r = pread(fd, buf + got, want - got, (off_t)(size - want + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    size_t start = 0;
    /* Cut in mid-line: begin after the first newline, unless that newline is the very
     * last byte (then the tail would be empty and a partial line says more). */
    if (want < size && got > 1) {
        char *nl = memchr(buf, '\n', got - 1);
        if (nl) start = (size_t)(nl + 1 - buf);
    }
    memmove(buf, buf + start, got - start);
    buf[got - start] = '\0';
    return got - start;
}
