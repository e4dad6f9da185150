/* synth_trial: a cheap, deterministic trial program for end-to-end tests and benchmarks.
 * It reports a synthetic learning curve whose quality depends on --lr (best near 0.01),
 * so ASHA has something real to decide, and it can misbehave on request (fail, crash,
 * ignore SIGTERM, fork a child, print garbage). With --slice-log it also appends its start
 * and end times and its GPU slice to $TUNE_TRIAL_DIR/slice.log, so tests can check slices
 * over time; only on request, because a benchmark runs the same trials under tune and with
 * no tuner (bench/tuner), and the log's file I/O would make tune's copies do more work.
 * With --checkpoint-dir it saves each iteration as a folder in $TUNE_CHECKPOINT_DIR
 * (ckpt_NNNNNN/state, and a symlink `outside` to $SYNTH_OUTSIDE when set), made under a
 * temporary name and renamed whole, names it in the result, and resumes from the folder
 * TUNE_RESUME_FROM names. Not for: anything outside tests and bench/. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void slice_log(int on, const char *what)
{
    const char *dir = getenv("TUNE_TRIAL_DIR");
    if (!on || !dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/slice.log", dir);
    FILE *f = fopen(path, "a");
    if (!f) return;
    const char *dev = getenv("CUDA_VISIBLE_DEVICES");
    const char *ng = getenv("TUNE_NUM_GPUS");
    fprintf(f, "%s %.6f %s %s\n", what, now(), dev && *dev ? dev : "-", ng ? ng : "0");
    fclose(f);
}

/* --checkpoint-dir: iteration t saved as the folder ckpt_NNNNNN in $TUNE_CHECKPOINT_DIR,
 * into path (n bytes); "" when it could not be made. */
static void save_dir(long t, char *path, size_t n)
{
    const char *ck = getenv("TUNE_CHECKPOINT_DIR");
    char tmp[4200], f[4300];
    path[0] = 0;
    if (!ck) return;
    snprintf(tmp, sizeof tmp, "%s/.ckpt_%06ld.tmp", ck, t);
    snprintf(f, sizeof f, "%s/state", tmp);
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return;
    FILE *s = fopen(f, "w");
    if (!s) return;
    fprintf(s, "%ld\n", t);
    fclose(s);
    if (getenv("SYNTH_OUTSIDE")) {
        snprintf(f, sizeof f, "%s/outside", tmp);
        if (symlink(getenv("SYNTH_OUTSIDE"), f) != 0 && errno != EEXIST) return;
    }
    snprintf(path, n, "%s/ckpt_%06ld", ck, t);
    if (rename(tmp, path) != 0) path[0] = 0;
}

static volatile sig_atomic_t got_term;
static void on_term(int sig)
{
    (void)sig;
    got_term = 1;
}

int main(int argc, char **argv)
{
    double lr = 0.01, sleep_ms = 0;
    long iters = 10, fail_at = -1, crash_at = -1;
    int ignore_term = 0, fork_child = 0, env_dump = 0, no_iter = 0, argv_dump = 0;
    int garbage = 0, extra_after_term = 0, checkpoint = 0, slices = 0, ckdir = 0;
    long fail_once_at = -1;
    const char *metric = "loss";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--lr"))
            lr = atof(v), i++;
        else if (!strcmp(a, "--iters"))
            iters = atol(v), i++;
        else if (!strcmp(a, "--sleep-ms"))
            sleep_ms = atof(v), i++;
        else if (!strcmp(a, "--fail-at"))
            fail_at = atol(v), i++;
        else if (!strcmp(a, "--crash-at"))
            crash_at = atol(v), i++;
        else if (!strcmp(a, "--metric"))
            metric = v, i++;
        else if (!strcmp(a, "--ignore-term"))
            ignore_term = 1;
        else if (!strcmp(a, "--fork-child"))
            fork_child = 1;
        else if (!strcmp(a, "--env"))
            env_dump = 1;
        else if (!strcmp(a, "--argv"))
            argv_dump = 1;
        else if (!strcmp(a, "--no-iter"))
            no_iter = 1;
        else if (!strcmp(a, "--garbage"))
            garbage = 1;
        else if (!strcmp(a, "--talk-after-term"))
            extra_after_term = 1;
        else if (!strcmp(a, "--fail-once-at"))
            fail_once_at = atol(v), i++;
        else if (!strcmp(a, "--checkpoint"))
            checkpoint = 1;
        else if (!strcmp(a, "--checkpoint-dir"))
            ckdir = 1;
        else if (!strcmp(a, "--slice-log"))
            slices = 1;
    }
    slice_log(slices, "start");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ignore_term ? SIG_IGN : on_term;
    sigaction(SIGTERM, &sa, NULL);
    if (fork_child && fork() == 0) {
        /* A child that would outlive its parent if tune did not kill the whole group. */
        for (;;)
            pause();
    }
    if (argv_dump) {
        printf("{\"argc\": %d", argc);
        for (int i = 1; i < argc; i++) {
            printf(", \"arg%d\": \"", i);
            for (const char *p = argv[i]; *p; p++) {
                if (*p == '"' || *p == '\\') putchar('\\');
                putchar(*p);
            }
            putchar('"');
        }
        printf(", \"%s\": 0}\n", metric);
        fflush(stdout);
    }
    if (env_dump) {
        static const char *const keys[] = {
            "TUNE_TRIAL_ID",   "TUNE_EXPERIMENT",      "TUNE_TRIAL_DIR",
            "TUNE_CONFIG",     "CUDA_VISIBLE_DEVICES", "TUNE_NUM_GPUS",
            "OMP_NUM_THREADS", "MASTER_ADDR",          "MASTER_PORT"};
        printf("ENV");
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            const char *v = getenv(keys[k]);
            printf("\t%s=%s", keys[k], v ? v : "(unset)");
        }
        printf("\n");
        fflush(stdout);
    }
    /* loss(t) = floor + scale / sqrt(t): floor grows with |log10(lr / 0.01)|. */
    double q = fabs(log10(lr / 0.01));
    double floor_ = 0.1 + 0.3 * q;
    /* --checkpoint: write $TUNE_TRIAL_DIR/checkpoint after every iteration and, when
     * TUNE_RESUME_FROM names one, continue after the iteration it holds. */
    long first = 1;
    const char *from = getenv("TUNE_RESUME_FROM");
    char state[4300];
    if (ckdir && from) {
        snprintf(state, sizeof state, "%s/state", from);
        from = state;
    }
    if ((checkpoint || ckdir) && from) {
        FILE *f = fopen(from, "r");
        if (f) {
            if (fscanf(f, "%ld", &first) == 1) first++;
            fclose(f);
        }
        fprintf(stderr, "synth_trial: resuming from %s at iteration %ld\n", from, first);
    }
    char marker[4200] = "";
    if (getenv("TUNE_TRIAL_DIR"))
        snprintf(marker, sizeof marker, "%s/failed_once", getenv("TUNE_TRIAL_DIR"));
    for (long t = first; t <= iters; t++) {
        if (sleep_ms > 0) usleep((useconds_t)(sleep_ms * 1000));
        if (got_term && !extra_after_term) break;
        if (t == fail_at) {
            fprintf(stderr, "synth_trial: failing on purpose at iteration %ld\n", t);
            slice_log(slices, "end");
            return 3;
        }
        if (t == fail_once_at && marker[0] && access(marker, F_OK) != 0) {
            FILE *m = fopen(marker, "w");
            if (m) fclose(m);
            fprintf(stderr, "synth_trial: failing once at iteration %ld\n", t);
            slice_log(slices, "end");
            return 4;
        }
        if (t == crash_at) {
            fprintf(stderr, "synth_trial: crashing at iteration %ld\n", t);
            slice_log(slices, "end");
            raise(SIGSEGV);
        }
        double loss = floor_ + 1.0 / sqrt((double)t);
        if (garbage) printf("not json at all %ld\n{\"broken\": \n", t);
        char saved[4200] = "";
        if (ckdir) save_dir(t, saved, sizeof saved);
        if (saved[0])
            printf("{\"training_iteration\": %ld, \"%s\": %.17g, \"checkpoint\": \"%s\"}\n", t,
                   metric, loss, saved);
        else if (no_iter)
            printf("{\"%s\": %.17g, \"acc\": %.6f}\n", metric, loss, 1.0 - loss / 3);
        else
            printf("{\"training_iteration\": %ld, \"%s\": %.17g, \"acc\": %.6f}\n", t, metric, loss,
                   1.0 - loss / 3);
        fflush(stdout);
        if (checkpoint && getenv("TUNE_TRIAL_DIR")) {
            char p[4200], tmp[4200];
            snprintf(p, sizeof p, "%s/checkpoint", getenv("TUNE_TRIAL_DIR"));
            snprintf(tmp, sizeof tmp, "%s/checkpoint.tmp", getenv("TUNE_TRIAL_DIR"));
            FILE *c = fopen(tmp, "w");
            if (c) {
                fprintf(c, "%ld\n", t);
                fclose(c);
                rename(tmp, p);
            }
        }
    }
    slice_log(slices, "end");
    return 0;
}
