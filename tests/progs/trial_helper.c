/* trial_helper: a configurable fake trial for tests/test_trial.c. Its arguments are
 * actions run in order, e.g. `trial_helper print:hello err:oops exit:3`, so one small
 * program can misbehave in every way the executor must survive.
 * Not for: anything outside tests (synth_trial is the fake trial of the scheduler tests). */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int hexval(char c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* Writes n bytes of 'x' straight to fd 1, bypassing stdio. */
static void write_x(long long n)
{
    static char buf[1 << 16];
    memset(buf, 'x', sizeof buf);
    while (n > 0) {
        size_t k = n < (long long)sizeof buf ? (size_t)n : sizeof buf;
        ssize_t w = write(1, buf, k);
        if (w <= 0) exit(1);
        n -= w;
    }
}

static void status_line(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t fl = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, fl) == 0 && line[fl] == ':') fputs(line, stdout);
    if (f) fclose(f);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *colon = strchr(a, ':');
        const char *v = colon ? colon + 1 : "";
        size_t cl = colon ? (size_t)(colon - a) : strlen(a);
#define IS(w) (cl == strlen(w) && strncmp(a, w, cl) == 0)
        if (IS("print")) { /* print:TEXT -> TEXT and a newline */
            printf("%s\n", v);
        } else if (IS("raw")) { /* raw:TEXT -> TEXT, no newline */
            fputs(v, stdout);
        } else if (IS("hex")) { /* hex:0aff00 -> those bytes */
            for (size_t k = 0; v[k] && v[k + 1]; k += 2)
                putchar(hexval(v[k]) * 16 + hexval(v[k + 1]));
        } else if (IS("err")) {
            fprintf(stderr, "%s\n", v);
        } else if (IS("argv")) { /* every argument as a JSON array */
            putchar('[');
            for (int k = 0; k < argc; k++) {
                if (k) putchar(',');
                json_string(argv[k]);
            }
            printf("]\n");
        } else if (IS("env")) { /* env:NAME -> NAME=value or NAME unset */
            const char *e = getenv(v);
            if (e)
                printf("%s=%s\n", v, e);
            else
                printf("%s unset\n", v);
        } else if (IS("cwd")) {
            char buf[4096];
            printf("%s\n", getcwd(buf, sizeof buf) ? buf : "?");
        } else if (IS("fds")) { /* the open fds, ascending, e.g. "fds 0 1 2" */
            DIR *d = opendir("/proc/self/fd");
            int dfd = d ? dirfd(d) : -1, seen[4096] = {0};
            struct dirent *de;
            while (d && (de = readdir(d)))
                if (de->d_name[0] != '.' && atoi(de->d_name) != dfd && atoi(de->d_name) < 4096)
                    seen[atoi(de->d_name)] = 1;
            if (d) closedir(d);
            printf("fds");
            for (int k = 0; k < 4096; k++)
                if (seen[k]) printf(" %d", k);
            printf("\n");
        } else if (IS("stdin")) { /* "stdin PATH N": what fd 0 is, and what a read gives */
            char path[4096] = "";
            ssize_t k = readlink("/proc/self/fd/0", path, sizeof path - 1);
            path[k > 0 ? k : 0] = 0;
            char c;
            printf("stdin %s %d\n", path, (int)read(0, &c, 1));
        } else if (IS("status")) { /* status:SigIgn -> that line of /proc/self/status */
            status_line(v);
        } else if (IS("ids")) { /* "pid P pgid G ppid Q" */
            printf("pid %d pgid %d ppid %d\n", (int)getpid(), (int)getpgid(0), (int)getppid());
        } else if (IS("sleep")) {
            fflush(stdout);
            sleep_ms(atol(v));
        } else if (IS("ignore")) { /* ignore:TERM */
            signal(SIGTERM, SIG_IGN);
        } else if (IS("grandchild")) { /* forks a child that sleeps; prints its pid */
            fflush(stdout);
            pid_t c = fork();
            if (c == 0) {
                for (;;)
                    pause();
            }
            printf("grandchild %d\n", (int)c);
        } else if (IS("marker")) { /* marker:TEXT -> nothing: tags the process (and its
                                    * forks) for tests that count processes by argv */
        } else if (IS("escape")) {
            /* Forks a child that leaves for a session of its own and forks a grandchild that
             * does the same; both ignore SIGTERM, keep stdout open and sleep. Prints
             * "escaped CHILD GRANDCHILD" once both have called setsid(). */
            fflush(stdout);
            int pp[2];
            if (pipe(pp) != 0) return 1;
            signal(SIGTERM, SIG_IGN);
            pid_t c1 = fork();
            if (c1 == 0) {
                setsid();
                pid_t c2 = fork();
                if (c2 == 0) {
                    setsid();
                    pid_t me = getpid();
                    if (write(pp[1], &me, sizeof me) != sizeof me) _exit(1);
                }
                for (;;)
                    pause();
            }
            signal(SIGTERM, SIG_DFL);
            pid_t c2 = -1;
            if (read(pp[0], &c2, sizeof c2) != sizeof c2) return 1;
            close(pp[0]);
            close(pp[1]);
            printf("escaped %d %d\n", (int)c1, (int)c2);
        } else if (IS("orphan")) { /* orphan:MS -> a double-forked process that exits after
                                    * MS ms; prints "orphan PID" once it is orphaned */
            fflush(stdout);
            int pp[2], go[2];
            if (pipe(pp) != 0 || pipe(go) != 0) return 1;
            pid_t mid = fork();
            if (mid == 0) {
                pid_t o = fork();
                if (o == 0) {
                    close(go[1]);
                    char c;
                    if (read(go[0], &c, 1) != 1) _exit(1); /* after the middle has gone */
                    sleep_ms(atol(v));
                    _exit(0);
                }
                if (write(pp[1], &o, sizeof o) != sizeof o) _exit(1);
                _exit(0);
            }
            pid_t o = -1;
            if (read(pp[0], &o, sizeof o) != sizeof o) return 1;
            waitpid(mid, NULL, 0);
            if (write(go[1], "g", 1) != 1) return 1;
            close(pp[0]);
            close(pp[1]);
            close(go[0]);
            close(go[1]);
            printf("orphan %d\n", (int)o);
        } else if (IS("daemon")) { /* daemon[:bare] -> a daemon as the books make one: fork,
                                    * setsid, fork, stdio on /dev/null, the middle gone; it
                                    * sleeps (re-exec'd with an empty environment if bare).
                                    * Prints "daemon PID" once it is orphaned. */
            fflush(stdout);
            int pp[2];
            if (pipe(pp) != 0) return 1;
            pid_t mid = fork();
            if (mid == 0) {
                setsid();
                pid_t d = fork();
                if (d == 0) {
                    int null = open("/dev/null", O_RDWR);
                    dup2(null, 0);
                    dup2(null, 1);
                    dup2(null, 2);
                    if (write(pp[1], &(pid_t){getpid()}, sizeof(pid_t)) != sizeof(pid_t)) _exit(1);
                    close(pp[0]);
                    close(pp[1]);
                    if (strcmp(v, "bare") == 0) {
                        char *av[] = {argv[0], "sleep:60000", NULL}, *none[] = {NULL};
                        execve(argv[0], av, none);
                        _exit(1);
                    }
                    sleep_ms(60000);
                    _exit(0);
                }
                _exit(0);
            }
            pid_t d = -1;
            if (read(pp[0], &d, sizeof d) != sizeof d) return 1;
            waitpid(mid, NULL, 0);
            close(pp[0]);
            close(pp[1]);
            printf("daemon %d\n", (int)d);
        } else if (IS("raise")) { /* raise:N -> dies by signal N (default action, no core) */
            fflush(stdout);
            struct rlimit no_core = {0, 0};
            setrlimit(RLIMIT_CORE, &no_core);
            int sig = atoi(v);
            signal(sig, SIG_DFL);
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, sig);
            sigprocmask(SIG_UNBLOCK, &one, NULL);
            raise(sig);
            printf("survived %d\n", sig);
        } else if (IS("waitsig")) { /* waitsig:N -> prints "waiting", then "got N" once N came */
            int sig = atoi(v), got = 0;
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, sig);
            sigprocmask(SIG_BLOCK, &one, NULL);
            printf("waiting\n");
            fflush(stdout);
            sigwait(&one, &got);
            printf("got %d\n", got);
        } else if (IS("bigline")) { /* bigline:N -> N bytes of 'x', no newline */
            fflush(stdout);
            write_x(atoll(v));
        } else if (IS("jsonlines")) { /* jsonlines:N -> N small result lines */
            long n = atol(v);
            for (long k = 0; k < n; k++)
                printf("{\"training_iteration\": %ld, \"loss\": 0.%06ld}\n", k + 1, k % 1000000);
        } else if (IS("slowline")) { /* a line written in three parts, with pauses */
            fputs("{\"part\":", stdout);
            fflush(stdout);
            sleep_ms(50);
            fputs(" 1,", stdout);
            fflush(stdout);
            sleep_ms(50);
            fputs(" \"done\": true}\n", stdout);
        } else if (IS("exit")) {
            fflush(stdout);
            return atoi(v);
        } else if (IS("segv")) {
            fflush(stdout);
            struct rlimit no_core = {0, 0};
            setrlimit(RLIMIT_CORE, &no_core);
            signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler would turn this into exit 1 */
            raise(SIGSEGV);
        } else if (IS("kill")) {
            fflush(stdout);
            raise(SIGKILL);
        } else {
            fprintf(stderr, "trial_helper: unknown action \"%s\"\n", a);
            return 2;
        }
        fflush(stdout);
    }
    return 0;
}
