/* train_main.c: tune-train the program: options, data, and the launcher that forks
 * --ranks processes and supervises them as torchrun's elastic agent does: if any rank
 * dies or fails, the whole rank process group is killed and tune-train exits non-zero;
 * SIGTERM/SIGINT are forwarded to the ranks. This is the one place in train/ that
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

/* A hash of the options every rank of a pre-launched world must agree on (not --threads,
 * --data or the directories, which may differ between machines): rank 0 refuses a rank
 * whose hash differs rather than train N mismatched copies. FNV-1a. */
static uint64_t options_fingerprint(const train_opts_t *o)
{
    const double d[] = {o->lr,    o->momentum, o->weight_decay,  o->beta1,
                        o->beta2, o->eps,      o->warmup_epochs, o->min_lr};
    const long i[] = {o->model,        o->epochs,     o->batch_size,  o->hidden,     o->layers,
                      o->optimizer,    o->nesterov,   o->schedule,    (long)o->seed, o->resume,
                      o->report_every, o->stop_after, o->train_limit, o->val_limit};
    uint64_t h = 1469598103934665603ULL;
    const unsigned char *p = (const unsigned char *)d;
    for (size_t k = 0; k < sizeof d; k++)
        h = (h ^ p[k]) * 1099511628211ULL;
    p = (const unsigned char *)i;
    for (size_t k = 0; k < sizeof i; k++)
        h = (h ^ p[k]) * 1099511628211ULL;
    p = (const unsigned char *)o->device;
    for (; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h;
}

/* A world pre-launched by srun or a torchrun-style launcher (one process per rank, see
 * net.c): checks it against --ranks and makes --ranks the world size. Returns 1 for such
 * a world, 0 for none, TRAIN_EINVAL with err. */
static int world_from_env(train_opts_t *o, int ranks_given, train__net_env_t *ne, char *err,
                          size_t errlen)
{
    int rc = train__net_env(ne, err, errlen);
    if (rc <= 0) return rc;
    if (ranks_given && o->ranks != ne->world) {
        snprintf(err, errlen,
                 "--ranks %d, but this is rank %d of a %d-rank %s world: each rank is its own "
                 "process here (leave --ranks out, or make it %d)",
                 o->ranks, ne->rank, ne->world, ne->source, ne->world);
        return TRAIN_EINVAL;
    }
    o->ranks = ne->world;
    if (o->batch_size % o->ranks != 0) {
        snprintf(err, errlen,
                 "--batch-size %d is not divisible by the %d ranks of this %s world (the global "
                 "batch is split evenly over ranks)",
                 o->batch_size, o->ranks, ne->source);
        return TRAIN_EINVAL;
    }
    if (o->train_limit && o->train_limit < o->ranks) {
        snprintf(err, errlen, "--train-limit %ld is smaller than the %d ranks of this %s world",
                 o->train_limit, o->ranks, ne->source);
        return TRAIN_EINVAL;
    }
    return 1;
}

/* Where --resume reads from: $TUNE_RESUME_FROM (a file, or a directory holding
 * checkpoints), else the newest checkpoint in the checkpoint directory. NULL: start
 * afresh. */
static const char *resume_path(const train_opts_t *o, char *buf, size_t len)
{
    const char *env = getenv("TUNE_RESUME_FROM");
    struct stat st;
    if (env && *env) {
        if (stat(env, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (train__ckpt_newest(env, buf, len) != 0) /* reading it says what is missing */
                snprintf(buf, len, "%s/%s", env, TRAIN_CKPT_NAME);
        } else {
            snprintf(buf, len, "%s", env);
        }
        return buf;
    }
    if (!o->checkpoint_dir) {
        fprintf(stderr, "tune-train: warning: --resume without $TUNE_RESUME_FROM, "
                        "$TUNE_TRIAL_DIR or --checkpoint-dir: starting from scratch\n");
        return NULL;
    }
    if (train__ckpt_newest(o->checkpoint_dir, buf, len) != 0) {
        fprintf(stderr,
                "tune-train: warning: --resume: no checkpoint in %s yet: starting from "
                "scratch\n",
                o->checkpoint_dir);
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
        if (env->net) train__net_abort(env->net);
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
            env.local_rank = r;
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
    int ranks_given = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--ranks") == 0 || strncmp(argv[i], "--ranks=", 8) == 0)
            ranks_given = 1;
    train__net_env_t ne;
    int pre = 0; /* 1: this process is one rank of a world started by srun or a launcher */
    if (rc == 0 && (pre = world_from_env(&o, ranks_given, &ne, err, sizeof err)) < 0) rc = pre;
    if (rc == 0 && !train_be_find(o.device, err, sizeof err)) rc = TRAIN_EINVAL;
    if (rc) {
        fprintf(stderr, "tune-train: %s\n", err);
        return EXIT_USAGE;
    }
    if (o.max_t_ignored && env.rank == 0 && (!pre || ne.rank == 0))
        fprintf(stderr,
                "tune-train: warning: $TUNE_MAX_T=%s is not a whole number of epochs (1 to "
                "100000): training for %d epochs; give --epochs to choose\n",
                o.max_t_ignored, o.epochs);
    if (pre) { /* meet the other ranks first: a rank that fails later closes its connection,
                * which the others notice, but one that never came would be waited for */
        if ((rc = train__net_open(&env.net, &ne, options_fingerprint(&o), o.timeout_s, err,
                                  sizeof err))) {
            fprintf(stderr, "tune-train: rank %d: %s\n", ne.rank, err);
            return rc == TRAIN_EINVAL ? EXIT_USAGE : EXIT_FAIL;
        }
        env.rank = ne.rank;
        env.local_rank = ne.local_rank;
    }
    /* tune sets TUNE_RESUME_FROM only for an attempt that must go on from a checkpoint (a
     * retry, a paused trial resumed, a PBT clone): a command line without --resume would
     * silently train afresh and lose the exploit, so the variable alone is enough */
    const char *rf = getenv("TUNE_RESUME_FROM");
    if (rf && *rf) o.resume = 1;
    char rbuf[PATH_MAX];
    env.resume_path = o.resume ? resume_path(&o, rbuf, sizeof rbuf) : NULL;
    if (env.resume_path) { /* a bad checkpoint is reported once, before any rank starts */
        train__ckpt_t c;
        if (train__ckpt_read(env.resume_path, &c, err, sizeof err) != 0) {
            fprintf(stderr, "tune-train: --resume: %s\n", err);
            train__net_free(env.net);
            return EXIT_FAIL;
        }
        train__ckpt_clear(&c);
    }
    char cbuf[PATH_MAX];
    const char *cache = o.cache_dir ? o.cache_dir : train_default_cache_dir(cbuf, sizeof cbuf);
    train_data_t *data;
    if ((rc = train_data_open(&data, o.data_dir, cache, warn, sizeof warn, err, sizeof err))) {
        if (pre)
            fprintf(stderr, "tune-train: rank %d: %s\n", env.rank, err);
        else
            fprintf(stderr, "tune-train: %s\n", err);
        train__net_free(env.net);
        return EXIT_FAIL;
    }
    if (warn[0] && env.rank == 0) fprintf(stderr, "tune-train: warning: %s\n", warn);
    train__model_cfg_t cfg = {.kind = o.model, .hidden = o.hidden, .layers = o.layers};
    char desc[256];
    train__model_describe(&cfg, desc, sizeof desc);
    if (env.rank == 0)
        fprintf(stderr,
                "tune-train: %s; %d rank%s x %d thread%s on %s%s%s%s; global batch %d; data %s in "
                "%.3f s\n",
                desc, o.ranks, o.ranks > 1 ? "s" : "", o.threads, o.threads > 1 ? "s" : "",
                o.device, pre ? " (a " : "", pre ? ne.source : "", pre ? " world over TCP)" : "",
                o.batch_size, data->from_cache ? "mapped from cache" : "decoded",
                train__now() - env.t_start);
    env.opts = &o;
    env.data = data;
    env.result = print_result;
    env.progress = print_progress;
    env.nranks = o.ranks;
    if (o.ranks == 1 || pre)
        rc = rank_main(&env);
    else
        rc = launch(&env, &cfg);
    train_data_free(data);
    train__net_free(env.net);
    return rc;
}
