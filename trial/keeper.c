/* keeper.c: what runs in tune's forked child: the keeper that stands between tune and one
 * trial so that nothing the trial starts outlives it or tune, and the trial's own set-up
 * between its fork and exec (trial__trial_run, which the spawner's vfork runs too). Not
 * for: anything tune itself runs (exec_local.c builds what is needed before fork and reads
 * the status pipe; proc.c relays signals and reaps).
 *
 * Where a keeper is used: local trials are started by the spawner (spawner_run.c), which
 * keeps the same guarantees for every trial in one process; a keeper per trial stands
 * between tune and Slurm's srun, and between tune and a local trial when TUNE_SPAWNER=0,
 * when the spawner cannot be started, or for a launch too big for one message to it.
 *
 * Why a keeper. PR_SET_PDEATHSIG only reaches tune's direct child: a torchrun launcher's
 * ranks, a shell pipeline or tune-train's rank processes would be orphaned, still running,
 * when tune is SIGKILLed, and a process that called setsid() leaves the trial's group, so
 * not even a group kill reaches it. The keeper is tune's child; it leads a process group of
 * its own (tune's group, or a job-control kill of it, does not take it along), is a child
 * subreaper (PR_SET_CHILD_SUBREAPER, as `tini -s` and Bazel's process-wrapper do), so every
 * descendant the trial orphans is re-parented to it, and has a catchable parent-death
 * signal, so it outlives tune by exactly as long as it takes to kill the rest. It forks the
 * trial into a group of the trial's own and then only waits:
 *  - the trial ends: its group is SIGKILLed while the trial is still an unreaped zombie
 *    (which keeps the group id from being reused), then every other descendant (below);
 *    the keeper then ends the way the trial ended: same exit code, or killed by the same
 *    signal, so tune's waitpid on the keeper reads the trial's status unchanged;
 *  - tune asks for a signal (sigqueue of TRIAL__RELAY_SIG carrying the signal number): it is
 *    sent to the trial's group; SIGKILL kills every descendant. tune never signals the
 *    trial's group itself: only the keeper knows when the trial was reaped, and so when that
 *    group id stops being safe to signal;
 *  - tune is gone (the parent-death signal wakes the keeper, getppid() tells): every
 *    descendant is SIGKILLed, reaped, and the keeper exits.
 * Killing every descendant: SIGKILL the trial's group and every child of the keeper, reap,
 * and repeat until the keeper has no child at all. A process's children are re-parented to
 * the subreaper before the process becomes a zombie, so by the time waitid() says "no child"
 * every descendant, however it left the group, has been killed and reaped.
 *
 * Why a fork of tune rather than a re-exec'd keeper binary: tune stays one file that needs
 * no helper found or installed beside it (and every program linking tune_trial, the Slurm
 * executor's srun included, gets the keeper for free), and a trial costs no extra exec,
 * which measured dearer than the fork (bench/tuner/README.md; the program exists, as
 * tune-keeper, keeper_main.c, for TUNE_KEEPER to choose). The price is the rule for a fork:
 * no malloc, no stdio, no locks, only system calls, since tune may hold a lock at fork (it
 * is single-threaded, but so stays the habit); everything needed is built before fork. The
 * keeper touches almost none of tune's memory, so copy-on-write shares it. The keeper
 * starts the trial with vfork: the trial's few system calls before exec run in the
 * keeper's memory, so tune's page tables are not copied a second time per trial. */
#include "trial/trial_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- small async-signal-safe helpers ---------------------------------------------- */

/* {tag, value}: 8 bytes < PIPE_BUF, so one atomic write that never interleaves. */
static void status_send(int fd, int tag, int value)
{
    int msg[2] = {tag, value};
    ssize_t r;
    do
        r = write(fd, msg, sizeof msg);
    while (r < 0 && errno == EINTR);
}

__attribute__((noreturn)) static void fail(int fd, int stage, int e)
{
    status_send(fd, stage, e);
    _exit(127);
}

/* Moves fd to 3 or above, so that the dup2s onto 0, 1 and 2 can never overwrite a source
 * still needed (tune itself may have had 0, 1 or 2 closed when the pipes were made). */
static int move_up(int fd)
{
    return fd >= 3 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

void trial__close_all_but(int *keep, int n, int maxfd)
{
    for (int i = 1; i < n; i++) /* insertion sort: n <= 4 */
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    int ok = 1;
    unsigned lo = 0;
    for (int i = 0; i < n && ok; i++) {
        if ((unsigned)keep[i] > lo) ok = close_range(lo, (unsigned)keep[i] - 1, 0) == 0;
        lo = (unsigned)keep[i] + 1;
    }
    if (ok && close_range(lo, ~0u, 0) == 0) return;
    for (int fd = 0; fd < maxfd; fd++) { /* kernels before 5.9 */
        int kept = 0;
        for (int i = 0; i < n; i++)
            kept |= keep[i] == fd;
        if (!kept) close(fd);
    }
}

static char *put_uint(char *s, unsigned long v)
{
    char tmp[24];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    while (n > 0)
        *s++ = tmp[--n];
    *s = '\0';
    return s;
}

/* The hex mask after `key` in a /proc/<pid>/status text, or all ones if it is not there. */
static uint64_t status_mask(const char *b, size_t n, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl < n; i++) {
        if ((i > 0 && b[i - 1] != '\n') || memcmp(b + i, key, kl) != 0) continue;
        uint64_t v = 0;
        size_t j = i + kl, digits = 0;
        while (j < n && (b[j] == ' ' || b[j] == '\t'))
            j++;
        for (; j < n && digits < 16; j++, digits++) {
            char c = b[j];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0) break;
            v = v << 4 | (uint64_t)d;
        }
        return digits == 16 ? v : ~(uint64_t)0;
    }
    return ~(uint64_t)0;
}

/* Signals 1..64 (bit s-1) whose action is not the default: ignored or caught, from
 * /proc/self/status (SigIgn, SigCgt); all ones when that cannot be read. */
static uint64_t signals_not_default(void)
{
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ~(uint64_t)0;
    char buf[4096];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf && (r = read(fd, buf + n, sizeof buf - n)) != 0) {
        if (r < 0) {
            if (errno == EINTR) continue;
            close(fd);
            return ~(uint64_t)0;
        }
        n += (size_t)r;
    }
    close(fd);
    return status_mask(buf, n, "SigIgn:") | status_mask(buf, n, "SigCgt:");
}

void trial__reset_signals(void)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    uint64_t changed = signals_not_default();
    for (int s = 1; s < NSIG && s <= 64; s++)
        if (s != SIGKILL && s != SIGSTOP && (changed >> (s - 1) & 1))
            sigaction(s, &dfl, NULL); /* 32, 33 fail: fine */
}

/* ---- finding the keeper's children ---------------------------------------------- */

/* From /proc/<pid>/task/<pid>/children (kernels with CONFIG_PROC_CHILDREN; the process is
 * single-threaded, so its main thread's children are all of them). -1 if unreadable. */
static int children_file(pid_t parent, pid_t *out, int max)
{
    char path[64], *s = path;
    memcpy(s, "/proc/", 6);
    s = put_uint(s + 6, (unsigned long)parent);
    memcpy(s, "/task/", 6);
    s = put_uint(s + 6, (unsigned long)parent);
    memcpy(s, "/children", 10);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[512];
    long cur = -1;
    int n = 0;
    ssize_t r;
    while (n < max && (r = read(fd, buf, sizeof buf)) != 0) {
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (ssize_t i = 0; i < r && n < max; i++) {
            if (buf[i] >= '0' && buf[i] <= '9') {
                cur = (cur < 0 ? 0 : cur * 10) + (buf[i] - '0');
            } else if (cur >= 0) {
                out[n++] = (pid_t)cur;
                cur = -1;
            }
        }
    }
    if (cur >= 0 && n < max) out[n++] = (pid_t)cur;
    close(fd);
    return n;
}

/* The parent pid in a /proc/<pid>/stat line: the field after the state, which follows the
 * last ')' (the command name may itself hold spaces and parentheses). -1 if malformed. */
static long stat_ppid(const char *b, size_t n)
{
    const char *rp = NULL;
    for (size_t i = 0; i < n; i++)
        if (b[i] == ')') rp = b + i;
    if (!rp || rp + 4 >= b + n || rp[1] != ' ' || rp[3] != ' ') return -1;
    long v = -1;
    for (const char *p = rp + 4; p < b + n && *p >= '0' && *p <= '9'; p++)
        v = (v < 0 ? 0 : v * 10) + (*p - '0');
    return v;
}

/* The same by reading every /proc/<pid>/stat: for kernels without the children file. */
static int children_scan(pid_t parent, pid_t *out, int max)
{
    int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return -1;
    /* struct linux_dirent64, as getdents64(2) documents it; glibc's readdir allocates. */
    char ents[4096] __attribute__((aligned(8)));
    int n = 0;
    long got;
    while (n < max && (got = syscall(SYS_getdents64, dfd, ents, sizeof ents)) > 0) {
        for (long off = 0; off < got && n < max;) {
            unsigned short reclen;
            memcpy(&reclen, ents + off + 16, sizeof reclen);
            const char *name = ents + off + 19;
            off += reclen;
            long pid = 0;
            const char *c = name;
            for (; *c >= '0' && *c <= '9'; c++)
                pid = pid * 10 + (*c - '0');
            if (c == name || *c != '\0') continue;
            char path[32], *s = put_uint(path, (unsigned long)pid);
            memcpy(s, "/stat", 6);
            int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) continue; /* ended meanwhile */
            char buf[512];
            ssize_t r;
            do
                r = read(fd, buf, sizeof buf);
            while (r < 0 && errno == EINTR);
            close(fd);
            if (r > 0 && stat_ppid(buf, (size_t)r) == (long)parent) out[n++] = (pid_t)pid;
        }
    }
    close(dfd);
    return n;
}

int trial__keeper_children(pid_t parent, pid_t *out, int max, int scan)
{
    int n = scan ? -1 : children_file(parent, out, max);
    return n >= 0 ? n : children_scan(parent, out, max);
}

/* ---- the trial, between its fork and exec ------------------------------------------ */

void trial__trial_run(const struct trial__launch *l, pid_t parent, int st)
{
    /* Dispositions were reset to the default by the keeper (or the spawner); the mask is
     * still all-blocked from tune's fork, so no signal is taken before exec. */
    if (setpgid(0, 0) < 0) fail(st, TRIAL__FAIL_SETPGID, errno);
    /* Dies with its parent even if that is SIGKILLed from outside; if the parent is gone
     * already there is nobody left to run for. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) fail(st, TRIAL__FAIL_PDEATHSIG, errno);
    if (getppid() != parent) _exit(127);
    int in = move_up(l->in), out = move_up(l->out), err = move_up(l->err);
    if (in < 0 || out < 0 || err < 0) fail(st, TRIAL__FAIL_FDS, errno);
    if (st < 3 && (st = move_up(st)) < 0) _exit(127); /* the dup2s below must not hit it */
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) fail(st, TRIAL__FAIL_FDS, errno);
    if (l->dir && chdir(l->dir) < 0) fail(st, TRIAL__FAIL_CHDIR, errno);
    int keep[4] = {0, 1, 2, st};
    trial__close_all_but(keep, 4, l->maxfd);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* The PATH walk follows glibc's execvpe: skip entries that do not have the program,
     * remember EACCES, stop at any other error. */
    int e = ENOENT, eacces = 0;
    for (char *const *cand = l->paths; *cand; cand++) {
        execve(*cand, l->argv, l->envp);
        e = errno;
        if (e == EACCES) {
            eacces = 1;
            continue;
        }
        if (e == ENOENT || e == ENOTDIR || e == ESTALE || e == ENODEV || e == ETIMEDOUT) continue;
        fail(st, TRIAL__FAIL_EXEC, e);
    }
    fail(st, TRIAL__FAIL_EXEC, eacces ? EACCES : e);
}

/* ---- the keeper ------------------------------------------------------------------ */

struct keeper {
    pid_t self, parent, trial;
    int relay;
    int killing;      /* the trial ended, SIGKILL was asked for, or tune is gone */
    int trial_reaped; /* from here on the trial's group id is not ours to signal */
    int no_children;
    int status; /* the trial's wait status, once reaped */
};

/* Reaps whatever has ended without blocking; sets no_children when nothing is left. */
static void reap(struct keeper *k)
{
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
            if (errno == EINTR) continue;
            k->no_children = 1; /* ECHILD */
            return;
        }
        if (si.si_pid == 0) return;
        int is_trial = si.si_pid == k->trial && !k->trial_reaped;
        if (is_trial) {
            /* While the trial is a zombie its pid, and so its group id, cannot be reused:
             * this is the last moment its group is safe to kill (a trial that forks and
             * exits has its group killed). */
            kill(-k->trial, SIGKILL);
            k->killing = 1;
        }
        int st = 0;
        pid_t w;
        do
            w = waitpid(si.si_pid, &st, 0);
        while (w < 0 && errno == EINTR);
        if (is_trial && w == k->trial) {
            k->status = st;
            k->trial_reaped = 1;
        }
    }
}

/* SIGKILLs the trial's group (while that is still safe) and every child of the keeper:
 * the trial, and whatever it orphaned, setsid() or not. */
static void kill_all(struct keeper *k)
{
    if (!k->trial_reaped) kill(-k->trial, SIGKILL);
    pid_t kids[256];
    int n = trial__keeper_children(k->self, kids, 256, 0);
    for (int i = 0; i < n; i++)
        kill(kids[i], SIGKILL); /* our unreaped children: their pids cannot have been reused */
}

/* Ends the keeper the way the trial ended. */
__attribute__((noreturn)) static void mirror(int st)
{
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        /* The trial's crash made its own core file if any; the keeper must make none. */
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        prctl(PR_SET_DUMPABLE, 0);
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        kill(getpid(), sig);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL); /* the pending signal is taken here */
    }
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 127);
}

__attribute__((noreturn)) static void keeper_loop(struct keeper *k)
{
    sigset_t all;
    sigfillset(&all);
    for (;;) {
        if (!k->killing && getppid() != k->parent) k->killing = 1; /* tune is gone */
        reap(k);
        if (k->killing) {
            kill_all(k);
            reap(k);
        }
        if (k->trial_reaped && k->no_children) mirror(k->status);
        /* While killing, orphans may be re-parented to us without any signal saying so:
         * look again shortly. Otherwise sleep until a signal comes. */
        struct timespec tick = {0, 10 * 1000 * 1000};
        siginfo_t si;
        int s = sigtimedwait(&all, &si, k->killing ? &tick : NULL);
        if (s <= 0 || s == SIGCHLD) continue;
        if (s == k->relay) {
            /* Not queued by tune: the parent-death signal (the loop's top decides) or a
             * stranger's; either way not a request. */
            if (si.si_code != SI_QUEUE || si.si_pid != k->parent) continue;
            int sig = si.si_value.sival_int;
            if (sig == SIGKILL)
                k->killing = 1;
            else if (sig > 0 && sig < NSIG && !k->trial_reaped)
                kill(-k->trial, sig);
            continue;
        }
        /* Someone signalled the keeper itself (a user's `kill`): that was meant for the trial. */
        if (!k->trial_reaped && !k->killing) kill(-k->trial, s);
    }
}

void trial__keeper_run(const struct trial__launch *l)
{
    /* Handlers and ignored signals are tune's business: reset them all, keeping every signal
     * blocked (tune blocked them across fork), so that each one waits for sigtimedwait. A
     * blocked signal is queued even when its default is to be ignored (SIGCHLD), and an
     * inherited SIG_IGN for SIGCHLD would even make children reap themselves. */
    /* Only the signals tune handles or ignores, as /proc says: a handful of system calls
     * instead of one per signal, on the path tune waits on (every signal, if unreadable). */
    trial__reset_signals();
    int st = move_up(l->status);
    if (st < 0) _exit(127);
    if (setpgid(0, 0) < 0) fail(st, TRIAL__FAIL_SETPGID, errno);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) fail(st, TRIAL__FAIL_SUBREAPER, errno);
    /* Learn of tune's death even by SIGKILL. PDEATHSIG fires when the forking thread ends,
     * and tune is single-threaded. If tune died before prctl took effect we have been
     * re-parented already and there is nothing to start. */
    if (prctl(PR_SET_PDEATHSIG, l->relay) < 0) fail(st, TRIAL__FAIL_PDEATHSIG, errno);
    if (getppid() != l->parent) _exit(127);
    prctl(PR_SET_NAME, "tune-keeper"); /* what ps and top show; the cmdline stays tune's */
    int keep[4] = {l->in, l->out, l->err, st};
    trial__close_all_but(keep, 4, l->maxfd); /* tune's database, sockets, other trials' pipes */
    struct keeper k = {.self = getpid(), .parent = l->parent, .relay = l->relay};
    /* vfork: trial_run only makes system calls and writes its own stack frame before exec
     * or _exit, and the keeper waits until then (so the pid is sent after the exec). */
    pid_t t = vfork();
    if (t == 0) trial__trial_run(l, k.self, st);
    if (t < 0) fail(st, TRIAL__FAIL_FORK, errno);
    /* Both sides call setpgid, so the group exists before anything signals it. */
    setpgid(t, t);
    k.trial = t;
    status_send(st, TRIAL__MSG_PID, (int)t);
    /* Only the trial holds its stdout now: when it and its descendants are gone, tune reads
     * EOF. The status pipe stays open only in the trial, until its exec closes it. */
    close(st);
    close(l->in);
    close(l->out);
    close(l->err);
    keeper_loop(&k);
}
