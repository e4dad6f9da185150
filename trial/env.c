/* env.c: the trial's environment, built in this one place for every executor from what the
 * loop's executor (exec_proc.c) knows when it starts a trial; README.md documents it.
 * Not for: what an executor adds where the trial runs (tune-slurm-task sets MASTER_ADDR to
 * the step's first node and RANK, WORLD_SIZE, LOCAL_RANK, NODE_RANK from Slurm's, which
 * only the node knows), or the spawner's TUNE_SPAWN_SLOT. */
#include "trial/trial_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "search/render.h"

/* A new "KEY=value" string, or NULL when out of memory. */
__attribute__((format(printf, 1, 2))) static char *entry(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

char **trial__env_new(const struct trial__env_in *in)
{
    enum { MAX_ENTRIES = 16 };
    char **env = calloc(MAX_ENTRIES, sizeof *env);
    if (!env) return NULL;
    char nb[32];
    size_t n = 0;
    int oom = 0;
#define ADD(...) oom |= (env[n++] = entry(__VA_ARGS__)) == NULL
    ADD("TUNE_TRIAL_ID=%lld", (long long)in->trial_no);
    ADD("TUNE_EXPERIMENT=%s", in->experiment);
    ADD("TUNE_TRIAL_DIR=%s", in->dir);
    if (in->config_file)
        ADD("TUNE_CONFIG_FILE=%s", in->config_file);
    else
        ADD("TUNE_CONFIG=%s", in->config);
    /* An executor that places GPUs itself sets the list it gave; none from the pool. */
    if (in->devices) ADD("CUDA_VISIBLE_DEVICES=%s", in->devices);
    ADD("TUNE_NUM_GPUS=%s", space_format_number(in->gpus, nb));
    ADD("OMP_NUM_THREADS=%d", in->cpus > 0 ? in->cpus : 1);
    /* The loopback: one trial's ranks meet on its one machine. A trial that spans nodes
     * gets its first node from its executor, where it runs (tune-slurm-task). */
    ADD("MASTER_ADDR=127.0.0.1");
    /* A port no other running trial has (exec_proc.c), so that torchrun-style rendezvous
     * of concurrent trials never collide. */
    ADD("MASTER_PORT=%d", in->port);
    /* Every trial gets a checkpoint folder of its own (docs/pbt.md, "The trial's
     * contract"): what it saves there and names in a result ("checkpoint") is what a pause
     * or an exploit resumes from. */
    ADD("TUNE_CHECKPOINT_DIR=%s", in->ckpt_dir);
    /* Python buffers stdout when it is a pipe, so a script that prints without flush
     * delivers every result at exit (ASHA then stops nothing in time): unbuffered unless
     * the user's environment says otherwise. */
    if (!getenv("PYTHONUNBUFFERED")) ADD("PYTHONUNBUFFERED=1");
    if (in->resume_from) ADD("TUNE_RESUME_FROM=%s", in->resume_from);
    /* How far the scheduler lets it run (max_t in time_attr units), so that a trial that
     * is paused and promoted (asha's promotion variant) can also stop by itself. */
    if (in->max_t > 0) ADD("TUNE_MAX_T=%s", space_format_number(in->max_t, nb));
#undef ADD
    env[n] = NULL;
    if (oom) { /* free every entry made, past a NULL one too */
        for (size_t i = 0; i < n; i++)
            free(env[i]);
        free(env);
        return NULL;
    }
    return env;
}

void trial__env_free(char **env)
{
    for (char **e = env; e && *e; e++)
        free(*e);
    free(env);
}
