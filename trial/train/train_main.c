/* train_main.c: tune-train the program: options, data, and the launcher that forks
 * --ranks processes and supervises them as torchrun's elastic agent does: if any rank
 * dies or fails, the whole rank process group is killed and tune-train exits non-zero;
 * SIGTERM/SIGINT are forwarded to the ranks. This is the one place in trial/train that
 * prints and decides exit codes.
 * Not for: the training loop (train.c) or the shared-memory collectives (ddp.c). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "train_int.h"

#define EXIT_FAIL 1
#define EXIT_USAGE 2

/* TODO(slurm): a world pre-launched by srun (SLURM_PROCID / SLURM_NTASKS, like torchrun's
 * env:// rendezvous) needs a network all-reduce (and a rendezvous address) that ddp.c
 * does not have yet. Until then a multi-task Slurm world is refused with a clear message
 * rather than silently training N independent copies. A single task is fine. */
static int world_from_env(char *err, size_t errlen)
{
    const char *procid = getenv("SLURM_PROCID"), *ntasks = getenv("SLURM_NTASKS");
    if (procid && ntasks && atoi(ntasks) > 1) {
        snprintf(err, errlen,
                 "this is task %s of a %s-task Slurm job, but pre-launched multi-process worlds "
                 "are not supported yet: run one task and let tune-train start the ranks "
                 "(--ranks N)",
                 procid, ntasks);
        return TRAIN_EINVAL;
    }
    return 0;
}

/* Where --resume reads from: $TUNE_RESUME_FROM (a file, or a directory holding
 * checkpoint.bin), else checkpoint.bin in the checkpoint directory. NULL: start afresh. */
static const char *resume_path(const train_opts_t *o, char *buf, size_t len)
{
    const char *env = getenv("TUNE_RESUME_FROM");
    struct stat st;
    if (env && *env) {
        if (stat(env, &st) == 0 && S_ISDIR(st.st_mode))
            snprintf(buf, len, "%s/%s", env, TRAIN_CKPT_NAME);
        else
            snprintf(buf, len, "%s", env);
        return buf;
    }
    if (!o->checkpoint_dir) {
        fprintf(stderr, "tune-train: warning: --resume without $TUNE_RESUME_FROM, "
                        "$TUNE_TRIAL_DIR or --checkpoint-dir: starting from scratch\n");
        return NULL;
    }
    snprintf(buf, len, "%s/%s", o->checkpoint_dir, TRAIN_CKPT_NAME);
    if (stat(buf, &st) != 0) {
        fprintf(stderr,
                "tune-train: warning: --resume: no checkpoint at %s yet: starting from "
                "scratch\n",
                buf);
        return NULL;
    }
    return buf;
}

static void print_result(void *ud, const char *line)
{
    (void)ud;
    printf("%s\n", line);
    fflush(stdout); /* a scheduler reads results as they come */
}

static void print_progress(void *ud, const char *msg)
{
    (void)ud;
    fprintf(stderr, "tune-train: %s\n", msg);
}

static int rank_main(train__run_env_t *env)
{
    char err[1024];
    int rc = train__run(env, err, sizeof err);
    if (rc) {
        if (env->nranks > 1)
            fprintf(stderr, "tune-train: rank %d: %s\n", env->rank, err);
        else
            fprintf(stderr, "tune-train: %s\n", err);
        if (env->world) train__world_abort(env->world);
    }
    fflush(stdout);
    fflush(stderr);
    return rc ? EXIT_FAIL : 0;
}

static void describe_status(int st, char *buf, size_t len)
{
    if (WIFSIGNALED(st))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
}

/* Kills the rank group and reaps every rank still alive. */
static void kill_all(pid_t pgid, pid_t *pids, int n, int sig)
{
    kill(-pgid, sig);
    for (int r = 0; r < n; r++)
        if (pids[r] > 0) {
            kill(pids[r], sig); /* in case it had not joined the group yet */
            while (waitpid(pids[r], NULL, 0) < 0 && errno == EINTR) {
            }
            pids[r] = 0;
        }
}

/* Forks the ranks and supervises them. Returns the exit status. */
static int launch(train__run_env_t *base, const train__model_cfg_t *cfg)
{
    const train_opts_t *o = base->opts;
    char err[1024];
    size_t off[65];
    int nb = train__model_buckets(cfg, off, 65);
    train__world_t *w;
    /* shared floats: parameters (padded to 16) then optimiser state (train.c's layout) */
    size_t np = train__model_count(cfg);
    size_t shared = (np + 15) / 16 * 16 + np * (o->optimizer == TRAIN_OPT_ADAM ? 2 : 1);
    if (train__world_new(&w, o->ranks, np, off, nb, shared, o->timeout_s, err, sizeof err) != 0) {
        fprintf(stderr, "tune-train: %s\n", err);
        return EXIT_FAIL;
    }
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &old);
    pid_t *pids = calloc((size_t)o->ranks, sizeof(pid_t)), pgid = 0, me = getpid();
    if (!pids) {
        fprintf(stderr, "tune-train: out of memory\n");
        train__world_free(w);
        return EXIT_FAIL;
    }
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < o->ranks; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "tune-train: cannot start rank %d: %s\n", r, strerror(errno));
            if (pgid) kill_all(pgid, pids, r, SIGKILL);
            free(pids);
            train__world_free(w);
            return EXIT_FAIL;
        }
        if (pid == 0) {
            /* a rank: its own group (so the launcher can kill all ranks at once), dies with
             * the launcher, default signal handling */
            setpgid(0, pgid);
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != me) _exit(EXIT_FAIL);
            sigprocmask(SIG_SETMASK, &old, NULL);
            train__run_env_t env = *base;
            env.world = w;
            env.rank = r;
            train__world_join(w, r);
            _exit(rank_main(&env));
        }
        if (r == 0) pgid = pid;
        setpgid(pid, pgid); /* also here: whichever of parent and child runs first */
        pids[r] = pid;
    }
    int alive = o->ranks, status = 0;
    while (alive > 0) {
        siginfo_t si;
        int sig = sigwaitinfo(&set, &si);
        if (sig < 0) continue;
        if (sig != SIGCHLD) {
            fprintf(stderr, "tune-train: got %s; stopping the ranks\n", strsignal(sig));
            train__world_abort(w);
            kill(-pgid, SIGTERM);
            /* a grace period for the ranks to end, then SIGKILL */
            struct timespec ts = {2, 0};
            sigset_t chld;
            sigemptyset(&chld);
            sigaddset(&chld, SIGCHLD);
            double t_end = train__now() + 2.0;
            while (alive > 0 && train__now() < t_end) {
                pid_t p;
                int st;
                while ((p = waitpid(-pgid, &st, WNOHANG)) > 0) {
                    for (int r = 0; r < o->ranks; r++)
                        if (pids[r] == p) pids[r] = 0, alive--;
                }
                if (alive > 0) sigtimedwait(&chld, NULL, &ts);
            }
            kill_all(pgid, pids, o->ranks, SIGKILL);
            status = 128 + sig;
            break;
        }
        pid_t p;
        int st;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            int rank = -1;
            for (int r = 0; r < o->ranks; r++)
                if (pids[r] == p) rank = r;
            if (rank < 0) continue;
            pids[rank] = 0;
            alive--;
            if (WIFEXITED(st) && WEXITSTATUS(st) == 0) continue;
            char how[128];
            describe_status(st, how, sizeof how);
            if (alive > 0)
                fprintf(stderr, "tune-train: rank %d (pid %d) %s; stopping the other ranks\n", rank,
                        (int)p, how);
            else
                fprintf(stderr, "tune-train: rank %d (pid %d) %s\n", rank, (int)p, how);
            train__world_abort(w);
            kill_all(pgid, pids, o->ranks, SIGKILL);
            alive = 0;
            status = EXIT_FAIL;
        }
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    free(pids);
    train__world_free(w);
    return status;
}

int train_main(int argc, char **argv)
{
    train__run_env_t env = {0};
    env.t_start = train__now();
    train_opts_t o;
    char err[1024], warn[512];
    train_opts_default(&o);
    int rc = train_opts_parse(&o, argc, argv, err, sizeof err);
    if (rc == 1) {
        fputs(train_usage(), stdout);
        return 0;
    }
    if (rc == 0) rc = world_from_env(err, sizeof err);
    if (rc == 0 && !train_be_find(o.device, err, sizeof err)) rc = TRAIN_EINVAL;
    if (rc) {
        fprintf(stderr, "tune-train: %s\n", err);
        return EXIT_USAGE;
    }
    char rbuf[PATH_MAX];
    env.resume_path = o.resume ? resume_path(&o, rbuf, sizeof rbuf) : NULL;
    if (env.resume_path) { /* a bad checkpoint is reported once, before any rank starts */
        train__ckpt_t c;
        if (train__ckpt_read(env.resume_path, &c, err, sizeof err) != 0) {
            fprintf(stderr, "tune-train: --resume: %s\n", err);
            return EXIT_FAIL;
        }
        train__ckpt_clear(&c);
    }
    char cbuf[PATH_MAX];
    const char *cache = o.cache_dir ? o.cache_dir : train_default_cache_dir(cbuf, sizeof cbuf);
    train_data_t *data;
    if ((rc = train_data_open(&data, o.data_dir, cache, warn, sizeof warn, err, sizeof err))) {
        fprintf(stderr, "tune-train: %s\n", err);
        return EXIT_FAIL;
    }
    if (warn[0]) fprintf(stderr, "tune-train: warning: %s\n", warn);
    train__model_cfg_t cfg = {.kind = o.model, .hidden = o.hidden, .layers = o.layers};
    char desc[256];
    train__model_describe(&cfg, desc, sizeof desc);
    fprintf(stderr,
            "tune-train: %s; %d rank%s x %d thread%s on %s; global batch %d; data %s in %.3f s\n",
            desc, o.ranks, o.ranks > 1 ? "s" : "", o.threads, o.threads > 1 ? "s" : "", o.device,
            o.batch_size, data->from_cache ? "mapped from cache" : "decoded",
            train__now() - env.t_start);
    env.opts = &o;
    env.data = data;
    env.result = print_result;
    env.progress = print_progress;
    env.nranks = o.ranks;
    if (o.ranks == 1)
        rc = rank_main(&env);
    else
        rc = launch(&env, &cfg);
    train_data_free(data);
    return rc;
}
