/* train_int.h: what tune-train's files share with each other (and white-box tests):
 * the random number generator, the model written once against backend.h, the
 * data-parallel shared-memory world and checkpoints. Not part of train.h's contract. */
#ifndef TUNE_TRAIN_INT_H
#define TUNE_TRAIN_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "train.h"

/* ---- rng: xoshiro256** (Blackman & Vigna), seeded through splitmix64 ---------------- */
typedef struct train__rng {
    uint64_t s[4];
} train__rng_t;

void train__rng_seed(train__rng_t *r, uint64_t seed, uint64_t stream);
uint64_t train__rng_next(train__rng_t *r);
double train__rng_uniform(train__rng_t *r); /* [0, 1) with 53 bits */
/* idx[i] = a permutation of 0..n-1 drawn from (seed, epoch), identical on every rank,
 * like DistributedSampler's torch.randperm(n, generator seeded with seed + epoch). */
void train__permutation(int32_t *idx, int n, uint64_t seed, int epoch);

/* ---- model ------------------------------------------------------------------------- */
typedef struct train__model train__model_t;

typedef struct train__model_cfg {
    int kind;   /* TRAIN_MODEL_* */
    int hidden; /* mlp width */
    int layers; /* mlp hidden layers */
} train__model_cfg_t;

/* Called during backward as soon as a layer's parameter gradients are final, last layer
 * first (the order DDP's reducer buckets them): floats [off, off+count) of the flat
 * gradient vector. */
typedef void (*train__grad_ready_cb)(void *ud, size_t off, size_t count);

/* Number of parameters of a configuration (without building it). */
size_t train__model_count(const train__model_cfg_t *cfg);
/* PyTorch's default initialisation (U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and
 * biases of Linear and Conv2d) of a flat host vector of train__model_count floats. */
void train__model_init(const train__model_cfg_t *cfg, float *params, uint64_t seed);
/* The all-reduce buckets: one per layer with parameters, as ascending offsets
 * off[0] = 0 < off[1] < ... < off[nb] = count. Returns nb (<= max - 1). */
int train__model_buckets(const train__model_cfg_t *cfg, size_t *off, int max);
/* Describes the model in one line ("mlp 784-256-256-10, 269322 parameters"). */
void train__model_describe(const train__model_cfg_t *cfg, char *buf, size_t len);

/* Builds activations and plans for forward passes of up to max_n samples and training
 * steps (forward and backward) of up to max_train <= max_n on an open backend. The
 * parameter and gradient vectors are given by the caller (device memory, nparams floats
 * each; grads may live in shared memory for the CPU backend); borrowed. Returns 0 or
 * negative with err. Freed with train__model_free (NULL-safe). */
int train__model_new(train__model_t **out, const train__model_cfg_t *cfg, const train_be_ops_t *ops,
                     train_be_ctx_t *ctx, int max_n, int max_train, float *params, float *grads,
                     char *err, size_t errlen);
void train__model_free(train__model_t *m);

/* Forward pass of n <= max_n samples x (device, n x 784), then softmax cross-entropy
 * against y (device labels), accumulating loss sum and correct count into stats (device
 * doubles). With grad_scale != 0 (then n <= max_train) the backward pass follows, writing
 * every parameter gradient and calling ready (may be NULL) per layer. */
void train__model_step(train__model_t *m, const float *x, const int32_t *y, int n, float grad_scale,
                       double *stats, train__grad_ready_cb ready, void *ud);

/* ---- data-parallel world (ddp.c) ---------------------------------------------------- */
typedef struct train__world train__world_t;

/* Creates the shared region for `world` ranks before fork: per-rank gradient slots and
 * a reduced-gradient buffer of nfloats each, `shared_floats` more for the caller, and
 * control blocks. bucket_off holds nbuckets+1 ascending offsets (0 first, nfloats last)
 * describing the all-reduce buckets. Returns 0 or negative with err. The parent frees it
 * (train__world_free) after all ranks ended. */
int train__world_new(train__world_t **out, int world, size_t nfloats, const size_t *bucket_off,
                     int nbuckets, size_t shared_floats, double timeout_s, char *err,
                     size_t errlen);
void train__world_free(train__world_t *w);
/* In a rank after fork: who am I. */
void train__world_join(train__world_t *w, int rank);
int train__world_rank(const train__world_t *w);
int train__world_size(const train__world_t *w);
float *train__world_grad_slot(train__world_t *w); /* this rank's gradient slot */
float *train__world_reduced(train__world_t *w);   /* the summed gradients */
float *train__world_shared(train__world_t *w);    /* the caller's shared floats */
/* Called by whichever rank reduced a chunk, right after reduced[off, off+count) became
 * final and before the all-reduce counts it done: the trainer applies the optimiser to
 * that chunk of the shared parameters there, so the update is sharded over ranks and
 * done while the chunk is in cache (the idea of ZeRO's sharded optimiser, on one shared
 * copy). Every rank must set the same callback. */
typedef void (*train__world_chunk_cb)(void *ud, size_t off, size_t count);
void train__world_set_chunk_cb(train__world_t *w, train__world_chunk_cb cb, void *ud);
/* Marks that every rank must stop (the launcher, or a rank that failed). */
void train__world_abort(train__world_t *w);
/* Non-zero once the world was aborted or the launcher is gone (cheap; any thread). */
int train__world_aborted(train__world_t *w);

/* Barrier across ranks; TRAIN_EPEER with err if a peer died, aborted or timed out. */
int train__world_barrier(train__world_t *w, char *err, size_t errlen);
/* Rank root's `len` bytes to every rank (len <= the buffer size nfloats*4). */
int train__world_bcast(train__world_t *w, void *buf, size_t len, int root, char *err,
                       size_t errlen);
/* Sums n <= 16 doubles across ranks in rank order (identical on every rank). */
int train__world_sum(train__world_t *w, double *v, int n, char *err, size_t errlen);

/* Gradient all-reduce of one step, bucketed as DDP's reducer: call ready() as each
 * bucket's floats are final in the slot (any order), then finish(), after which
 * train__world_reduced() holds the sum over ranks (summed in rank order, so the result is
 * identical on every rank). Reduction work is shared between ranks chunk by chunk and
 * starts as soon as all ranks delivered a bucket, overlapping the rest of backward. */
void train__world_grad_ready(train__world_t *w, size_t off, size_t count);
int train__world_grad_finish(train__world_t *w, char *err, size_t errlen);

/* ---- a world of ranks started by someone else (net.c) ---------------------------------- */
typedef struct train__net train__net_t;

/* Where this process stands in a pre-launched world, from the environment. */
typedef struct train__net_env {
    int rank, world, local_rank, node;
    const char *addr, *port; /* $MASTER_ADDR (default 127.0.0.1 on one node), $MASTER_PORT */
    const char *source;      /* "Slurm" or "torchrun-style": which variables were read */
} train__net_env_t;

/* Reads RANK/WORLD_SIZE/LOCAL_RANK (torchrun's env://) or, failing those, srun's
 * SLURM_PROCID/SLURM_STEP_NUM_TASKS (else SLURM_NTASKS)/SLURM_LOCALID/SLURM_NODEID, and
 * MASTER_ADDR/MASTER_PORT. Returns 1 for a world of more than one rank, 0 when this process
 * is alone (e->world == 1), TRAIN_EINVAL with err for bad or missing variables. */
int train__net_env(train__net_env_t *e, char *err, size_t errlen);
/* The rendezvous: rank 0 listens on $MASTER_PORT until world-1 ranks have joined, the
 * others connect (retrying until rank 0 is up). Every rank must pass the same fingerprint
 * (a hash of the options that must agree). Gives up after timeout_s (0: 300 s). Returns 0
 * and *out (freed with train__net_free, NULL-safe), or negative with err. */
int train__net_open(train__net_t **out, const train__net_env_t *e, uint64_t fingerprint,
                    double timeout_s, char *err, size_t errlen);
void train__net_free(train__net_t *n);
/* Ends every collective of this rank and shows the peers a closed connection. */
void train__net_abort(train__net_t *n);
/* Non-zero when this rank aborted or a connection to a peer is closed (cheap, any thread):
 * lets a device collective (NCCL) give up when a rank on another machine died. */
int train__net_peer_gone(train__net_t *n);
/* Collectives with ddp.c's meaning (every rank calls them in the same order); each waits
 * at most the timeout and returns 0 or negative (TRAIN_EPEER: a peer died or timed out). */
int train__net_barrier(train__net_t *n, char *err, size_t errlen);
int train__net_bcast(train__net_t *n, void *buf, size_t len, int root, char *err, size_t errlen);
int train__net_sum(train__net_t *n, double *v, int count, char *err, size_t errlen); /* <= 16 */
/* In-place sum of count floats over ranks, added in rank order: identical on every rank and
 * to ddp.c's shared-memory sum. */
int train__net_allreduce(train__net_t *n, float *buf, size_t count, char *err, size_t errlen);

/* ---- files written whole or not at all (ckpt.c) ---------------------------------------- */
typedef struct train__part {
    const void *p;
    size_t n;
} train__part_t;
/* Writes the n parts, in order, to dir/name atomically: a hidden temp file in dir
 * (".NAME.tmp.XXXXXX"), fsync, rename over dir/name, fsync of dir. 0, or -1 with errno;
 * *made (may be NULL) says whether the temp file could be created at all. A failure
 * leaves no temp file behind. */
int train__write_atomic(const char *dir, const char *name, const train__part_t *parts, int n,
                        int *made);

/* ---- checkpoints (ckpt.c) ------------------------------------------------------------ */
/* The hyperparameters a checkpoint was trained with (version 2 on), so that a resume with
 * other ones (Population Based Training's explore step) can say what changed. */
typedef struct train__hparams {
    double lr, momentum, weight_decay, beta1, beta2, eps, warmup_epochs, min_lr;
    uint32_t batch_size, epochs, nesterov, schedule;
} train__hparams_t;

typedef struct train__ckpt {
    uint32_t model, hidden, layers, optimizer;
    uint32_t world, threads;
    uint64_t seed;
    uint64_t nparams;
    uint32_t nstate;    /* optimiser state vectors of nparams floats (sgd 1, adam 2) */
    uint32_t epoch;     /* epochs completed */
    uint64_t step;      /* optimiser steps taken */
    uint64_t iteration; /* result lines printed */
    double elapsed_s;   /* training time before this checkpoint */
    train__rng_t rng;
    int has_hparams;     /* 0 for a version-1 file, which did not record them */
    train__hparams_t hp; /* written always; read when has_hparams */
    float *params;       /* nparams */
    float *state;        /* nstate * nparams */
} train__ckpt_t;

/* Writes c to dir/name atomically (temp file, fsync, rename, fsync dir) with a magic,
 * version and zlib crc32. Returns 0 or TRAIN_ERR with err. */
int train__ckpt_write_as(const char *dir, const char *name, const train__ckpt_t *c, char *err,
                         size_t errlen);
/* train__ckpt_write_as(dir, TRAIN_CKPT_NAME, ...). */
int train__ckpt_write(const char *dir, const train__ckpt_t *c, char *err, size_t errlen);
/* Reads a checkpoint file (version 1 or 2); params/state are malloc'd (free with
 * train__ckpt_clear). TRAIN_ECKPT with err for a missing, truncated, corrupt or foreign
 * file. */
int train__ckpt_read(const char *path, train__ckpt_t *c, char *err, size_t errlen);
void train__ckpt_clear(train__ckpt_t *c);
#define TRAIN_CKPT_NAME "checkpoint.bin"
/* One file per epoch in tune's $TUNE_CHECKPOINT_DIR: "checkpoint_%06llu.bin" of the
 * training_iteration it was written at, so a result line's file is never replaced. */
#define TRAIN_CKPT_ITER_FMT "checkpoint_%06llu.bin"
/* The newest checkpoint in dir: the highest-numbered checkpoint_NNNNNN.bin, else
 * checkpoint.bin, written into buf. Returns 0, or -1 when dir holds neither. */
int train__ckpt_newest(const char *dir, char *buf, size_t len);

/* ---- one rank's training run (train.c) ------------------------------------------------ */
typedef struct train__run_env {
    const train_opts_t *opts;
    const train_data_t *data;
    train__world_t *world; /* ranks forked by tune-train; NULL otherwise */
    train__net_t *net;     /* ranks started by srun or a launcher (net.c); NULL otherwise */
    int rank, nranks;
    int local_rank;          /* rank on this machine (a GPU backend picks its device with it) */
    double t_start;          /* CLOCK_MONOTONIC seconds when the program started */
    const char *resume_path; /* checkpoint to resume from, or NULL */
    /* rank 0's output, so that only the program decides where text goes: one result line
     * (JSON, no newline) and progress messages */
    void (*result)(void *ud, const char *line);
    void (*progress)(void *ud, const char *msg);
    void *ud;
} train__run_env_t;

/* Trains; rank 0 hands result lines and progress to the callbacks. A failure's reason goes
 * into err. Returns 0 or negative. */
int train__run(const train__run_env_t *env, char *err, size_t errlen);

double train__now(void); /* CLOCK_MONOTONIC seconds */

#endif
