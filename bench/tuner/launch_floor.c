/* launch_floor: the least work any tuner that runs real trial processes must do, timed.
 * It runs N trials of a command, at most C at once, each through posix_spawn (no shell)
 * with stdout on a pipe, reads every pipe to EOF with poll(), counts lines that start
 * with '{', reaps every child, and prints {"trials": N, "lines": L, "recorded": R,
 * "wall_s": W}. bench/tuner/run.sh runs it beside `tune run` to show how much of tune's
 * wall time is the machine's own cost of those processes. Not a tuner (no early stopping,
 * no parsing, no storage, no process groups, no logs unless asked) and not a test: it
 * asserts nothing about the lines.
 *
 *   launch_floor [--trials N] [--concurrent C] [--seed S] [--relay [--hold]] [--logs DIR]
 *                [--db FILE [--record COUNTS]] -- COMMAND [ARG...]
 *
 * Every occurrence of "{lr}" in an ARG becomes that trial's value, drawn log-uniformly
 * over [1e-5, 1] from the seed, so trials differ the way tune's do.
 *
 * --relay: the same, through the process structure tune's guarantees need (trial/spawner.c)
 * and nothing else of tune: a forked child, a subreaper with a parent-death signal, starts
 * each trial when asked over a socket (the trial's stdout pipe passed with the request) and
 * answers its start and its end (reaped, its process group killed); a trial's slot is free
 * once both its EOF and its end are in. What this adds to the plain floor is what those
 * guarantees cost (two process wake-ups a trial: the end to us, the next start to it),
 * before any of tune's own work. --hold takes one of them out as tune does (sched__hold_next):
 * each running trial has the next start held behind it in the relay, which makes it the
 * moment that trial is reaped (tune holds behind a trial that is ending; here every trial
 * runs to its end).
 *
 * --logs DIR and --db FILE add the other two guarantees tune keeps, each as the least work
 * that keeps it: every log kept (each trial in a folder DIR/trial_NNNNN of its own, its
 * stderr on stderr.log, every byte of its stdout copied to stdout.log as it is read) and
 * every result durable (each result line, whole, a row of store/schema.sql's results table
 * in FILE, with tune's pragmas, committed before the next wait that would block; nothing
 * parsed). --record COUNTS records only as many lines of each trial as tune did: the i-th
 * number in the file COUNTS (one per line, cycling when there are fewer than trials) is
 * how many of trial i's result lines go to FILE; the rest are read and logged only. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "bench/bench_common.h"
#include "bench/tuner/floor_sql.h"

extern char **environ;

#define PLACEHOLDER "{lr}"
#define LR_LOW 1e-5
#define LR_HIGH 1.0

/* One running trial. `at_bol` carries "the next byte starts a line" across reads, since a
 * line may be split between two reads of the pipe. */
typedef struct slot {
    pid_t pid;
    int fd;
    int at_bol;
    long id;      /* the trial's number, which the relay's answers name */
    int ended;    /* --relay: its end answer came */
    int st;       /* --relay: its wait status */
    int waiting;  /* --hold: its start is held behind a trial whose end has not come */
    int has_succ; /* --hold: the next start is held behind it */
    long after;   /* --hold: the trial it waits for */
    int log_fd;   /* --logs: its stdout.log, else -1 */
    long nrec;    /* --db: its lines recorded so far */
    long limit;   /* --db: and how many it may record */
    char *part;   /* --db: the line begun in an earlier read (owned) */
    size_t plen, pcap;
} slot_t;

/* --relay: an answer, {trial id, pid or wait status, 0 started / 1 ended}. */
struct relay_msg {
    long id;
    int value, ended;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: launch_floor [--trials N] [--concurrent C] [--seed S] [--relay [--hold]]\n"
            "                    [--logs DIR] [--db FILE [--record COUNTS]] -- COMMAND [ARG...]\n"
            "  --trials N       trials to run (default 200)\n"
            "  --concurrent C   trials running at once (default 2)\n"
            "  --seed S         seed of the lr draw (default 0)\n"
            "  --relay          each trial started and reaped by a forked subreaper, as tune's\n"
            "                   spawner does, asked over a socket\n"
            "  --hold           with --relay: the next start held in the relay behind each\n"
            "                   running trial, made when that trial is reaped\n"
            "  --logs DIR       each trial in DIR/trial_NNNNN, stderr on stderr.log, stdout\n"
            "                   copied to stdout.log as it is read\n"
            "  --db FILE        each result line a row of a results table in the new SQLite\n"
            "                   file FILE (tune's pragmas), committed before a blocking wait\n"
            "  --record COUNTS  with --db: record only the first k result lines of trial i,\n"
            "                   k the i-th number in file COUNTS (one a line, cycling)\n"
            "  \"{lr}\" in an ARG becomes the trial's lr, log-uniform over [1e-5, 1].\n"
            "  Prints {\"trials\": N, \"lines\": L, \"recorded\": R, \"wall_s\": W}: L counts\n"
            "  stdout lines starting with '{', R those recorded, W runs from the first spawn\n"
            "  to the last reap.\n");
}

static long arg_long(const char *opt, const char *v, long lo, long hi)
{
    return bench_arg_long("launch_floor", opt, v, lo, hi);
}

static double draw_lr(uint64_t *state)
{
    double u = bench_uniform01(state);
    double llo = log(LR_LOW), lhi = log(LR_HIGH);
    return exp(llo + u * (lhi - llo));
}

/* `arg` with every PLACEHOLDER replaced by `value`, in a new string the caller frees;
 * NULL when out of memory. */
static char *substitute(const char *arg, const char *value)
{
    size_t plen = strlen(PLACEHOLDER), vlen = strlen(value), n = 0;
    for (const char *p = strstr(arg, PLACEHOLDER); p; p = strstr(p + plen, PLACEHOLDER))
        n++;
    char *out = malloc(strlen(arg) + n * vlen + 1), *o = out;
    if (!out) return NULL;
    for (const char *p = arg, *q; *p; p = q + plen) {
        q = strstr(p, PLACEHOLDER);
        if (!q) {
            strcpy(o, p);
            return out;
        }
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, value, vlen);
        o += vlen;
        if (!q[plen]) break;
    }
    *o = '\0';
    return out;
}

/* Starts one trial with stdout on a new pipe. Both pipe ends are close-on-exec, so no
 * trial inherits another's pipe and each EOF comes when that trial alone has exited;
 * dup2 onto fd 1 clears the flag for the trial's own stdout. Returns 0, or an errno. */
static int spawn_trial(char *const argv[], int errfd, slot_t *s)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return errno;
    posix_spawn_file_actions_t fa;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0) {
        rc = posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
        if (rc == 0 && errfd >= 0) rc = posix_spawn_file_actions_adddup2(&fa, errfd, 2);
        /* glibc's posix_spawn uses CLONE_VFORK and reports a failed exec here, as rc. */
        if (rc == 0) rc = posix_spawnp(&s->pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        return rc;
    }
    s->fd = p[0];
    return 0;
}

/* ---- --relay ------------------------------------------------------------------------ */

/* The relay's state: its running trials, and the starts it holds (--hold). */
struct relay {
    int sk;
    long ids[4096];
    pid_t pids[4096];
    int n;
    struct held {
        long after, id;
        char *args; /* the argv as NUL-ended strings, `len` bytes (owned) */
        size_t len;
        int fds[2];
    } held[4096];
    int nheld;
};

/* Starts trial `id` (argv packed in args[0..len)) with stdout on fds[0] (and stderr on
 * fds[1] unless -1), in a process group of its own, and answers its start. */
static void relay_launch(struct relay *R, long id, char *args, size_t len, const int fds[2])
{
    char *av[256];
    int na = 0;
    for (char *p = args; p < args + len && na < 255; p += strlen(p) + 1)
        av[na++] = p;
    av[na] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0], STDOUT_FILENO);
    if (fds[1] >= 0) posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    pid_t pid = -1;
    int rc = R->n < 4096 ? posix_spawnp(&pid, av[0], &fa, &at, av, environ) : EAGAIN;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(fds[0]);
    if (fds[1] >= 0) close(fds[1]);
    if (rc == 0) R->ids[R->n] = id, R->pids[R->n++] = pid;
    struct relay_msg m = {id, rc == 0 ? (int)pid : -rc, rc != 0};
    if (send(R->sk, &m, sizeof m, 0) < 0) _exit(1);
}

/* The relay's loop: a request is {id, after} followed by the argv as NUL-ended strings,
 * with the trial's stdout (and stderr) as SCM_RIGHTS; it answers the start at once, or,
 * when `after` names a trial still running (--hold), once that trial is reaped; and the
 * end once the trial is reaped (its group killed while it is a zombie, as the spawner
 * does). Ends when we do. */
static void relay_run(int sk)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    static char buf[65536];
    static struct relay R;
    R.sk = sk;
    for (;;) {
        struct pollfd pf[2] = {{sk, POLLIN, 0}, {sfd, POLLIN, 0}};
        if (poll(pf, 2, -1) < 0 && errno != EINTR) _exit(1);
        if (pf[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) > 0) {
            }
            siginfo_t w;
            for (;;) {
                memset(&w, 0, sizeof w);
                if (waitid(P_ALL, 0, &w, WEXITED | WNOHANG | WNOWAIT) < 0 || w.si_pid == 0) break;
                int k = 0;
                while (k < R.n && R.pids[k] != w.si_pid)
                    k++;
                if (k < R.n) kill(-w.si_pid, SIGKILL);
                int st = 0;
                waitpid(w.si_pid, &st, 0);
                if (k == R.n) continue;
                long id = R.ids[k];
                R.ids[k] = R.ids[R.n - 1], R.pids[k] = R.pids[R.n - 1], R.n--;
                /* The start held behind it first: the slot is free now. */
                for (int h = 0; h < R.nheld; h++) {
                    if (R.held[h].after != id) continue;
                    struct held x = R.held[h];
                    R.held[h] = R.held[--R.nheld];
                    relay_launch(&R, x.id, x.args, x.len, x.fds);
                    free(x.args);
                    break;
                }
                struct relay_msg m = {id, st, 1};
                if (send(sk, &m, sizeof m, 0) < 0) _exit(1);
            }
        }
        if (!(pf[0].revents & (POLLIN | POLLHUP))) continue;
        union {
            struct cmsghdr h;
            char b[CMSG_SPACE(2 * sizeof(int))];
        } c;
        struct iovec iov = {buf, sizeof buf};
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b, .msg_controllen = sizeof c.b};
        ssize_t r = recvmsg(sk, &mh, MSG_CMSG_CLOEXEC);
        if (r <= 0) _exit(0); /* we are done, or gone */
        struct cmsghdr *ch = CMSG_FIRSTHDR(&mh);
        int fds[2] = {-1, -1}; /* stdout, and stderr when --logs */
        if (ch && ch->cmsg_type == SCM_RIGHTS)
            memcpy(fds, CMSG_DATA(ch), ch->cmsg_len - CMSG_LEN(0));
        long id, after;
        memcpy(&id, buf, sizeof id);
        memcpy(&after, buf + sizeof id, sizeof after);
        char *args = buf + 2 * sizeof id;
        size_t len = (size_t)r - 2 * sizeof id;
        int running = 0;
        for (int k = 0; k < R.n && after >= 0 && !running; k++)
            running = R.ids[k] == after;
        if (running && R.nheld < 4096) {
            struct held *x = &R.held[R.nheld];
            if (!(x->args = malloc(len))) _exit(1);
            memcpy(x->args, args, len);
            x->len = len, x->after = after, x->id = id;
            memcpy(x->fds, fds, sizeof fds);
            R.nheld++;
            continue;
        }
        relay_launch(&R, id, args, len, fds);
    }
}

/* Forks the relay; our end of its socket, or -1. SIGCHLD is blocked across the fork, so
 * that the relay's signalfd sees every end. */
static int relay_start(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -1;
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &old);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        relay_run(sv[1]);
        _exit(0);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return -1;
    }
    return sv[0];
}

/* Asks the relay to start argv with stdout on a new pipe (and stderr on errfd, unless -1),
 * once trial `after` has been reaped (-1: now); its answer comes on sk. */
static int relay_spawn(int sk, long id, long after, char *const argv[], int errfd, slot_t *s)
{
    static char buf[65536];
    size_t k = 2 * sizeof id;
    memcpy(buf, &id, sizeof id);
    memcpy(buf + sizeof id, &after, sizeof after);
    for (int i = 0; argv[i]; i++) {
        size_t l = strlen(argv[i]) + 1;
        if (k + l > sizeof buf) return E2BIG;
        memcpy(buf + k, argv[i], l);
        k += l;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return errno;
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(2 * sizeof(int))];
    } c;
    memset(&c, 0, sizeof c);
    int fds[2] = {p[1], errfd}, nfd = errfd >= 0 ? 2 : 1;
    struct iovec iov = {buf, k};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = c.b,
                        .msg_controllen = CMSG_SPACE(nfd * sizeof(int))};
    struct cmsghdr *ch = CMSG_FIRSTHDR(&mh);
    ch->cmsg_level = SOL_SOCKET;
    ch->cmsg_type = SCM_RIGHTS;
    ch->cmsg_len = CMSG_LEN(nfd * sizeof(int));
    memcpy(CMSG_DATA(ch), fds, nfd * sizeof(int));
    int rc = sendmsg(sk, &mh, 0) < 0 ? errno : 0;
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        return rc;
    }
    s->pid = -1;
    s->fd = p[0];
    return 0;
}

/* ---- --logs and --db ------------------------------------------------------------------ */

/* --db: the results table in a new file with tune's pragmas, one prepared INSERT, and
 * whether a transaction is open. */
typedef struct rec {
    sqlite3 *db;
    sqlite3_stmt *ins, *begin, *commit;
    int tx;
    long rows;
    long *limits; /* --record: lines to record per trial, cycling; NULL: all */
    long nlimits;
} rec_t;

static void rec_die(const rec_t *r, const char *what)
{
    fprintf(stderr, "launch_floor: %s: %s\n", what,
            r->db ? sqlite3_errmsg(r->db) : "out of memory");
    exit(1);
}

static sqlite3_stmt *rec_prepare(rec_t *r, const char *sql)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK)
        rec_die(r, "cannot prepare a statement");
    return s;
}

static void rec_open(rec_t *r, const char *path)
{
    if (access(path, F_OK) == 0) {
        fprintf(stderr, "launch_floor: --db %s exists: give the path of a new file\n", path);
        exit(2);
    }
    if (sqlite3_open_v2(path, &r->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK ||
        sqlite3_exec(r->db, floor_pragmas, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(r->db, floor_schema, NULL, NULL, NULL) != SQLITE_OK)
        rec_die(r, "cannot create the database");
    /* IMMEDIATE, as tune's store begins its batches. */
    r->begin = rec_prepare(r, "BEGIN IMMEDIATE");
    r->commit = rec_prepare(r, "COMMIT");
    r->ins = rec_prepare(r, "INSERT INTO results (trial_id, attempt, iteration, wall_time, data)"
                            " VALUES (?, 1, ?, ?, ?)");
}

static void rec_step(const rec_t *r, sqlite3_stmt *s, const char *what)
{
    if (sqlite3_step(s) != SQLITE_DONE) rec_die(r, what);
    sqlite3_reset(s);
}

/* Makes what was recorded durable, as tune does before it blocks. */
static void rec_commit(rec_t *r)
{
    if (!r->tx) return;
    rec_step(r, r->commit, "cannot commit");
    r->tx = 0;
}

/* Reads --record's file: whole numbers, one per line. */
static void rec_limits(rec_t *r, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "launch_floor: cannot read --record %s: %s\n", path, strerror(errno));
        exit(2);
    }
    long v, cap = 0;
    while (fscanf(f, "%ld", &v) == 1) {
        if (r->nlimits == cap) {
            cap = cap ? 2 * cap : 256;
            r->limits = realloc(r->limits, (size_t)cap * sizeof *r->limits);
            if (!r->limits) rec_die(r, "--record");
        }
        r->limits[r->nlimits++] = v < 0 ? 0 : v;
    }
    int bad = !feof(f);
    fclose(f);
    if (bad || !r->nlimits) {
        fprintf(stderr, "launch_floor: --record %s: want whole numbers, one per line\n", path);
        exit(2);
    }
}

/* Records trial t's complete lines in buf[0..n) that start with '{', up to its limit, each
 * as a row; a line split between two reads waits in t->part for its end. */
static void rec_lines(rec_t *r, slot_t *t, const char *buf, size_t n)
{
    double now = bench_clock_s(CLOCK_REALTIME); /* one clock read a read, as tune's turn */
    while (n > 0 && t->nrec < t->limit) {
        const char *nl = memchr(buf, '\n', n);
        size_t k = nl ? (size_t)(nl - buf) : n;
        if (!nl || t->plen) {
            if (t->plen + k > t->pcap) {
                t->pcap = 2 * (t->plen + k);
                if (!(t->part = realloc(t->part, t->pcap))) rec_die(r, "a long line");
            }
            memcpy(t->part + t->plen, buf, k);
            t->plen += k;
        }
        if (!nl) return;
        const char *line = t->plen ? t->part : buf;
        size_t len = t->plen ? t->plen : k;
        if (len && line[0] == '{') {
            if (!r->tx) {
                rec_step(r, r->begin, "cannot begin");
                r->tx = 1;
            }
            sqlite3_bind_int64(r->ins, 1, t->id + 1);
            sqlite3_bind_int64(r->ins, 2, t->nrec + 1);
            sqlite3_bind_double(r->ins, 3, now);
            sqlite3_bind_text(r->ins, 4, line, (int)len, SQLITE_STATIC);
            rec_step(r, r->ins, "cannot insert a result");
            t->nrec++;
            r->rows++;
        }
        t->plen = 0;
        buf += k + 1;
        n -= k + 1;
    }
}

/* --logs: trial `id`'s folder under dir, its stdout.log (kept in the slot) and its
 * stderr.log (returned, for the trial's fd 2). */
static int open_logs(const char *dir, long id, slot_t *s)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/trial_%05ld", dir, id);
    if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
    size_t k = strlen(path);
    snprintf(path + k, sizeof path - k, "/stdout.log");
    s->log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    snprintf(path + k, sizeof path - k, "/stderr.log");
    return s->log_fd < 0 ? -1 : open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
}

static void write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            fprintf(stderr, "launch_floor: cannot write a log: %s\n", strerror(errno));
            exit(1);
        }
        buf += w;
        n -= (size_t)w;
    }
}

/* Counts the lines in buf[0..n) that start with '{'. */
static long count_lines(slot_t *s, const char *buf, ssize_t n)
{
    long lines = 0;
    for (ssize_t i = 0; i < n; i++) {
        if (s->at_bol && buf[i] == '{') lines++;
        s->at_bol = buf[i] == '\n';
    }
    return lines;
}

int main(int argc, char **argv)
{
    long trials = 200, concurrent = 2;
    uint64_t seed = 0;
    int cmd = 0, relay = 0, hold = 0;
    const char *logs = NULL, *dbpath = NULL, *counts = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) {
            cmd = i + 1;
            break;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (v && !strcmp(a, "--trials")) {
            trials = arg_long(a, v, 1, 100000000L), i++;
        } else if (v && !strcmp(a, "--concurrent")) {
            concurrent = arg_long(a, v, 1, 4096), i++;
        } else if (v && !strcmp(a, "--seed")) {
            seed = (uint64_t)arg_long(a, v, 0, 0x7fffffffL), i++;
        } else if (!strcmp(a, "--relay")) {
            relay = 1;
        } else if (!strcmp(a, "--hold")) {
            hold = 1;
        } else if (v && !strcmp(a, "--logs")) {
            logs = v, i++;
        } else if (v && !strcmp(a, "--db")) {
            dbpath = v, i++;
        } else if (v && !strcmp(a, "--record")) {
            counts = v, i++;
        } else {
            fprintf(stderr, "launch_floor: unknown option or missing value: \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!cmd || cmd >= argc) {
        fprintf(stderr, "launch_floor: no command: give it after \"--\"\n");
        usage(stderr);
        return 2;
    }
    if (concurrent > trials) concurrent = trials;
    if (hold && !relay) {
        fprintf(stderr, "launch_floor: --hold needs --relay\n");
        return 2;
    }
    if (counts && !dbpath) {
        fprintf(stderr, "launch_floor: --record needs --db\n");
        return 2;
    }
    rec_t rec = {0};
    if (counts) rec_limits(&rec, counts);
    if (logs && mkdir(logs, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "launch_floor: cannot create --logs %s: %s\n", logs, strerror(errno));
        return 1;
    }

    /* The command's argv, with the arguments that hold the placeholder rebuilt per trial. */
    int cargc = argc - cmd;
    char **cargv = calloc((size_t)cargc + 1, sizeof *cargv);
    /* With --hold, room for a start held behind each running trial, and for trials that
     * have ended while their output is not at EOF yet. */
    int cap = hold ? 4 * (int)concurrent : (int)concurrent;
    slot_t *run = calloc((size_t)cap, sizeof *run);
    struct pollfd *pfd = calloc((size_t)cap + 1, sizeof *pfd);
    int *pslot = calloc((size_t)cap + 1, sizeof *pslot);
    if (!cargv || !run || !pfd || !pslot) {
        fprintf(stderr, "launch_floor: out of memory\n");
        return 1;
    }
    int sk = relay ? relay_start() : -1;
    if (relay && sk < 0) {
        fprintf(stderr, "launch_floor: cannot start the relay: %s\n", strerror(errno));
        return 1;
    }
    if (dbpath) rec_open(&rec, dbpath);
    static char buf[65536];
    uint64_t rng = seed;
    long started = 0, reaped = 0, lines = 0, failed = 0;
    int nrun = 0; /* run[0..nrun) are the running trials, kept dense so pfd matches them */
    double t0 = bench_clock_s(CLOCK_MONOTONIC);
    while (reaped < trials) {
        while (started < trials && nrun < cap) {
            /* A free slot starts a trial now; with --hold, a running trial without a
             * successor gets the next start held behind it (a slot whose trial has ended
             * but whose output is not at EOF yet is free then: its successor runs). */
            int active = nrun;
            if (hold)
                for (int j = 0; j < nrun; j++)
                    active -= run[j].waiting || run[j].ended;
            long after = -1;
            if (active >= concurrent) {
                int j = 0;
                while (hold && j < nrun && (run[j].waiting || run[j].has_succ || run[j].ended))
                    j++;
                if (!hold || j == nrun) break;
                run[j].has_succ = 1;
                after = run[j].id;
            }
            char lr[32];
            snprintf(lr, sizeof lr, "%.17g", draw_lr(&rng));
            for (int k = 0; k < cargc; k++) {
                const char *a = argv[cmd + k];
                cargv[k] = strstr(a, PLACEHOLDER) ? substitute(a, lr) : (char *)a;
                if (!cargv[k]) {
                    fprintf(stderr, "launch_floor: out of memory\n");
                    return 1;
                }
            }
            slot_t *s = &run[nrun];
            *s = (slot_t){.fd = -1,
                          .at_bol = 1,
                          .id = started,
                          .waiting = after >= 0,
                          .after = after,
                          .log_fd = -1,
                          .limit = LONG_MAX};
            if (rec.limits) s->limit = rec.limits[started % rec.nlimits];
            int errfd = -1;
            if (logs && (errfd = open_logs(logs, started, s)) < 0) {
                fprintf(stderr, "launch_floor: cannot create trial %ld's logs under %s: %s\n",
                        started, logs, strerror(errno));
                return 1;
            }
            int rc = relay ? relay_spawn(sk, started, after, cargv, errfd, s)
                           : spawn_trial(cargv, errfd, s);
            if (errfd >= 0) close(errfd);
            for (int k = 0; k < cargc; k++)
                if (cargv[k] != argv[cmd + k]) free(cargv[k]);
            if (rc != 0) {
                fprintf(stderr, "launch_floor: cannot start \"%s\": %s\n", argv[cmd], strerror(rc));
                return 1;
            }
            nrun++, started++;
        }
        int np = 0;
        for (int j = 0; j < nrun; j++)
            if (run[j].fd >= 0) {
                pslot[np] = j;
                pfd[np++] = (struct pollfd){.fd = run[j].fd, .events = POLLIN};
            }
        if (relay) {
            pslot[np] = -1;
            pfd[np++] = (struct pollfd){.fd = sk, .events = POLLIN};
        }
        /* --db: what was recorded is committed before a wait that would block. */
        int pr = poll(pfd, (nfds_t)np, rec.tx ? 0 : -1);
        if (pr == 0) {
            rec_commit(&rec);
            pr = poll(pfd, (nfds_t)np, -1);
        }
        if (pr < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "launch_floor: poll: %s\n", strerror(errno));
            return 1;
        }
        for (int i = 0; i < np; i++) {
            if (!pfd[i].revents) continue;
            if (pslot[i] < 0) { /* the relay's answers */
                struct relay_msg m;
                ssize_t r;
                while ((r = recv(sk, &m, sizeof m, MSG_DONTWAIT)) == (ssize_t)sizeof m) {
                    int j = 0;
                    while (j < nrun && run[j].id != m.id)
                        j++;
                    if (j == nrun) continue;
                    if (!m.ended && m.value > 0) {
                        run[j].pid = m.value;
                        continue;
                    }
                    run[j].ended = 1;
                    run[j].st = m.value < 0 ? 127 << 8 : m.value; /* < 0: it did not start */
                    for (int k = 0; k < nrun; k++) /* what was held behind it runs now */
                        if (run[k].waiting && run[k].after == m.id) run[k].waiting = 0;
                }
                if (r == 0) {
                    fprintf(stderr, "launch_floor: the relay is gone\n");
                    return 1;
                }
                continue;
            }
            slot_t *t = &run[pslot[i]];
            ssize_t n = read(t->fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n > 0) {
                if (t->log_fd >= 0) write_all(t->log_fd, buf, (size_t)n);
                lines += count_lines(t, buf, n);
                if (rec.db) rec_lines(&rec, t, buf, (size_t)n);
                continue;
            }
            if (n < 0) fprintf(stderr, "launch_floor: read: %s\n", strerror(errno));
            /* EOF: the trial closed its stdout, so it has exited or is about to. */
            close(t->fd);
            t->fd = -1;
            if (t->log_fd >= 0) close(t->log_fd);
            t->log_fd = -1;
            free(t->part);
            t->part = NULL;
            if (n < 0) t->st = 1 << 8;
            if (relay) continue; /* reaped by the relay, which answers its end */
            int st;
            while (waitpid(t->pid, &st, 0) < 0) {
                if (errno != EINTR) {
                    fprintf(stderr, "launch_floor: waitpid: %s\n", strerror(errno));
                    return 1;
                }
            }
            t->ended = 1;
            if (!t->st) t->st = st;
        }
        /* A slot is free once its output is at EOF and its end is known; backwards, so that
         * moving the last slot into a freed one's place skips none. */
        for (int j = nrun - 1; j >= 0; j--) {
            if (run[j].fd >= 0 || !run[j].ended) continue;
            if (!WIFEXITED(run[j].st) || WEXITSTATUS(run[j].st) != 0) failed++;
            reaped++;
            run[j] = run[--nrun];
        }
    }
    if (sk >= 0) close(sk); /* the relay reads EOF and exits */
    if (rec.db) {
        rec_commit(&rec);
        sqlite3_finalize(rec.ins);
        sqlite3_finalize(rec.begin);
        sqlite3_finalize(rec.commit);
        if (sqlite3_close(rec.db) != SQLITE_OK) rec_die(&rec, "cannot close the database");
        free(rec.limits);
    }
    double wall = bench_clock_s(CLOCK_MONOTONIC) - t0;
    printf("{\"trials\": %ld, \"lines\": %ld, \"recorded\": %ld, \"wall_s\": %.6f}\n", reaped,
           lines, rec.rows, wall);
    free(cargv);
    free(run);
    free(pfd);
    free(pslot);
    if (failed) {
        fprintf(stderr, "launch_floor: %ld of %ld trials failed (exit status not 0)\n", failed,
                reaped);
        return 1;
    }
    return 0;
}
