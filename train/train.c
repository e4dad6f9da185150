/* train.c: one rank's training run: data order as torch's DistributedSampler (a
 * permutation seeded by (seed, epoch), padded to a multiple of the ranks and dealt out
 * rank-strided), learning-rate warm-up and cosine decay, SGD/Adam steps on the averaged
 * gradients, evaluation on the test set, result lines and checkpoints.
 * Not for: processes and signals (train_main.c) or arithmetic (the backend). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "jsonw/jsonw.h"
#include "train_int.h"

#define MEAN 0.2860f /* Fashion-MNIST pixel statistics, the usual normalisation */
#define STD 0.3530f
#define EVAL_BATCH 256

double train__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct run {
    const train__run_env_t *env;
    const train_opts_t *o;
    const train_be_ops_t *ops;
    train_be_ctx_t *ctx;
    train__model_t *model;
    train__model_cfg_t cfg;
    size_t np;
    int nstate;
    float *params, *grads, *state, *x;
    int32_t *y;
    double *stats; /* [0..1] train, [2..3] validation (device) */
    const uint8_t *tr_x, *tr_y, *te_x, *te_y;
    int own_data;      /* the data set was uploaded (not host memory) */
    float *host_grads; /* staging for device backends in a multi-rank world */
    int n_train, n_val, local_b, steps_per_epoch, shard;
    long total_steps, warmup_steps;
    uint64_t step, iteration;
    /* where the learning-rate schedule stands: a resumed run continues it from the epoch
     * it resumed at, measured in this run's steps per epoch (the batch size may change) */
    uint64_t step0;
    int epoch0;
    double elapsed0;
    train__rng_t rng;
    /* CPU ranks share one copy of parameters and optimiser state in the world's shared
     * memory; each chunk is updated by the rank that reduced it (ddp.c) */
    int sharded;
    float lr_now; /* this step's learning rate */
    /* the first result line after a resume says from where and what the command line
     * changed: a JSON member ("resumed": {...}), emptied once printed */
    char resumed[PATH_MAX * 2 + 2048];
};

static void ready_cb(void *ud, size_t off, size_t count)
{
    train__world_grad_ready(ud, off, count);
}

/* A device collective (NCCL) per bucket as soon as backward wrote it, as DDP's reducer
 * does: the backend queues it on its communication stream behind the ops issued so far,
 * so the last layers' all-reduce runs while the first layers' backward still computes. */
static void device_ready_cb(void *ud, size_t off, size_t count)
{
    struct run *r = ud;
    r->ops->allreduce_sum(r->ctx, r->grads + off, count);
}

/* The collectives of whichever world this rank is in: forked (ddp.c), started by someone
 * else (net.c), or none. */
static int coll_sum(const train__run_env_t *env, double *v, int n, char *err, size_t errlen)
{
    if (env->world) return train__world_sum(env->world, v, n, err, errlen);
    if (env->net) return train__net_sum(env->net, v, n, err, errlen);
    return 0;
}

static int coll_bcast(const train__run_env_t *env, void *buf, size_t len, int root, char *err,
                      size_t errlen)
{
    if (env->world) return train__world_bcast(env->world, buf, len, root, err, errlen);
    if (env->net) return train__net_bcast(env->net, buf, len, root, err, errlen);
    return 0;
}

static float lr_at(const struct run *r, uint64_t step_taken)
{
    const train_opts_t *o = r->o;
    long step = (long)(step_taken - r->step0) + (long)r->epoch0 * r->steps_per_epoch;
    if (step < r->warmup_steps) return (float)(o->lr * (double)(step + 1) / r->warmup_steps);
    if (o->schedule == TRAIN_SCHED_CONSTANT) return (float)o->lr;
    long span = r->total_steps - r->warmup_steps;
    double t = span > 0 ? (double)(step - r->warmup_steps) / span : 1.0;
    if (t > 1) t = 1;
    return (float)(o->min_lr + 0.5 * (o->lr - o->min_lr) * (1.0 + cos(M_PI * t)));
}

/* Averages the step's gradients over ranks; returns where the optimiser reads them. */
static int allreduce(struct run *r, const float **g, char *err, size_t errlen)
{
    train__world_t *w = r->env->world;
    train__net_t *net = r->env->net;
    *g = r->grads;
    if (!w && !net) return 0;
    if (r->ops->allreduce_sum) /* device collective (NCCL), issued per bucket in backward */
        return 0;
    int rc;
    if (net) { /* over TCP, from host memory */
        float *h = r->ops->host_memory ? r->grads : r->host_grads;
        if (!r->ops->host_memory &&
            (rc = r->ops->download(r->ctx, h, r->grads, sizeof(float) * r->np, err, errlen)))
            return rc;
        if ((rc = train__net_allreduce(net, h, r->np, err, errlen))) return rc;
        if (!r->ops->host_memory) r->ops->upload(r->ctx, r->grads, h, sizeof(float) * r->np);
        return 0;
    }
    if (!r->ops->host_memory) { /* stage through host shared memory */
        if ((rc = r->ops->download(r->ctx, train__world_grad_slot(w), r->grads,
                                   sizeof(float) * r->np, err, errlen)))
            return rc;
        train__world_grad_ready(w, 0, r->np);
    }
    if ((rc = train__world_grad_finish(w, err, errlen))) return rc;
    if (!r->ops->host_memory) {
        r->ops->upload(r->ctx, r->grads, train__world_reduced(w), sizeof(float) * r->np);
        return 0;
    }
    *g = train__world_reduced(w);
    return 0;
}

/* The optimiser on floats [off, off+n) of the parameters; g points at their gradients. */
static void opt_step(struct run *r, const float *g, size_t off, size_t n)
{
    const train_opts_t *o = r->o;
    if (o->optimizer == TRAIN_OPT_SGD) {
        r->ops->sgd_step(r->ctx, r->params + off, g, r->state + off, n, r->lr_now,
                         (float)o->momentum, (float)o->weight_decay, o->nesterov);
    } else {
        double t = (double)(r->step + 1);
        r->ops->adam_step(r->ctx, r->params + off, g, r->state + off, r->state + r->np + off, n,
                          r->lr_now, (float)o->beta1, (float)o->beta2, (float)o->eps,
                          (float)o->weight_decay, (float)(1.0 - pow(o->beta1, t)),
                          (float)(1.0 - pow(o->beta2, t)));
    }
}

static void chunk_cb(void *ud, size_t off, size_t count)
{
    struct run *r = ud;
    opt_step(r, train__world_reduced(r->env->world) + off, off, count);
}

/* Loss and accuracy on this rank's share of the test images, summed over ranks. */
static int evaluate(struct run *r, double *loss, double *acc, char *err, size_t errlen)
{
    const train__run_env_t *env = r->env;
    int lo = (int)((long)r->n_val * env->rank / env->nranks);
    int hi = (int)((long)r->n_val * (env->rank + 1) / env->nranks);
    int32_t idx[EVAL_BATCH];
    r->ops->zero(r->ctx, r->stats + 2, 2 * sizeof(double));
    const int maxb = EVAL_BATCH; /* the model holds max(local batch, EVAL_BATCH) */
    for (int i = lo; i < hi; i += maxb) {
        int n = hi - i < maxb ? hi - i : maxb;
        for (int j = 0; j < n; j++)
            idx[j] = i + j;
        r->ops->load_batch(r->ctx, r->te_x, r->te_y, idx, n, 784, MEAN, STD, r->x, r->y);
        train__model_step(r->model, r->x, r->y, n, 0.0f, r->stats + 2, NULL, NULL);
    }
    double s[2];
    int rc = r->ops->download(r->ctx, s, r->stats + 2, sizeof s, err, errlen);
    if (rc) return rc;
    if ((rc = coll_sum(env, s, 2, err, errlen))) return rc;
    *loss = s[0] / r->n_val;
    *acc = s[1] / r->n_val;
    return 0;
}

/* A metric as a result-line token: a diverged run's NaN or infinite loss is written the
 * way Python's json.dumps writes it (NaN, Infinity), which tune reads, rather than
 * printf's "-nan", which no JSON reader takes. */
static const char *metric_token(char *buf, size_t n, double v)
{
    if (isnan(v)) return "NaN";
    if (isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    snprintf(buf, n, "%.9g", v);
    return buf;
}

static int checkpoint(struct run *r, int epoch, char *path, size_t pathlen, char *err,
                      size_t errlen);

/* One result line (rank 0 prints; every rank takes part in the sums). At an epoch's end
 * the checkpoint is written first and the line names it, so that whoever reads the line
 * (tune copying a donor's checkpoint for Population Based Training) finds the file whole. */
static int report(struct run *r, int epoch, int epoch_end, long samples, double train_time,
                  char *err, size_t errlen)
{
    const train__run_env_t *env = r->env;
    double s[3];
    int rc = r->ops->download(r->ctx, s, r->stats, 2 * sizeof(double), err, errlen);
    if (rc) return rc;
    s[2] = (double)samples;
    if ((rc = coll_sum(env, s, 3, err, errlen))) return rc;
    double vloss, vacc;
    if ((rc = evaluate(r, &vloss, &vacc, err, errlen))) return rc;
    r->ops->zero(r->ctx, r->stats, 2 * sizeof(double));
    r->iteration++;
    char ck[PATH_MAX + 64] = "";
    if (epoch_end && (rc = checkpoint(r, epoch, ck, sizeof ck, err, errlen))) return rc;
    if (env->rank == 0 && env->result) {
        char line[PATH_MAX * 4 + 4096], tl[32], vl[32], ckj[PATH_MAX * 2 + 16] = "";
        if (ck[0]) jsonw_quote(ckj, sizeof ckj, ck, 0);
        snprintf(line, sizeof line,
                 "{\"training_iteration\": %llu, \"epoch\": %d, \"step\": %llu, "
                 "\"train_loss\": %s, \"val_loss\": %s, \"val_accuracy\": %.6g, "
                 "\"learning_rate\": %.6g, \"samples_per_s\": %.1f, \"time_s\": %.3f%s%s%s%s}",
                 (unsigned long long)r->iteration, epoch, (unsigned long long)r->step,
                 metric_token(tl, sizeof tl, s[2] > 0 ? s[0] / s[2] : 0.0),
                 metric_token(vl, sizeof vl, vloss), vacc, (double)r->lr_now,
                 train_time > 0 ? s[2] / train_time : 0.0,
                 r->elapsed0 + train__now() - env->t_start, ck[0] ? ", \"checkpoint\": " : "", ckj,
                 r->resumed[0] ? ", " : "", r->resumed);
        env->result(env->ud, line);
    }
    r->resumed[0] = 0;
    return 0;
}

/* Rank 0 writes the checkpoint of the epoch just ended; path gets its file name ("" when
 * there is no checkpoint directory, and on other ranks). */
static int checkpoint(struct run *r, int epoch, char *path, size_t pathlen, char *err,
                      size_t errlen)
{
    const train_opts_t *o = r->o;
    path[0] = 0;
    if (!o->checkpoint_dir || r->env->rank != 0) return 0;
    train__ckpt_t c = {.model = (uint32_t)o->model,
                       .hidden = (uint32_t)o->hidden,
                       .layers = (uint32_t)o->layers,
                       .optimizer = (uint32_t)o->optimizer,
                       .world = (uint32_t)r->env->nranks,
                       .threads = (uint32_t)o->threads,
                       .seed = o->seed,
                       .nparams = r->np,
                       .nstate = (uint32_t)r->nstate,
                       .epoch = (uint32_t)epoch,
                       .step = r->step,
                       .iteration = r->iteration,
                       .elapsed_s = r->elapsed0 + train__now() - r->env->t_start,
                       .rng = r->rng,
                       .hp = {.lr = o->lr,
                              .momentum = o->momentum,
                              .weight_decay = o->weight_decay,
                              .beta1 = o->beta1,
                              .beta2 = o->beta2,
                              .eps = o->eps,
                              .warmup_epochs = o->warmup_epochs,
                              .min_lr = o->min_lr,
                              .batch_size = (uint32_t)o->batch_size,
                              .epochs = (uint32_t)o->epochs,
                              .nesterov = (uint32_t)o->nesterov,
                              .schedule = (uint32_t)o->schedule}};
    c.params = malloc(sizeof(float) * r->np);
    c.state = malloc(sizeof(float) * r->np * (size_t)r->nstate);
    int rc = TRAIN_ERR;
    if (!c.params || !c.state) {
        snprintf(err, errlen, "out of memory writing a checkpoint");
        goto out;
    }
    if ((rc = r->ops->download(r->ctx, c.params, r->params, sizeof(float) * r->np, err, errlen)))
        goto out;
    if ((rc = r->ops->download(r->ctx, c.state, r->state, sizeof(float) * r->np * r->nstate, err,
                               errlen)))
        goto out;
    mkdir(o->checkpoint_dir, 0755); /* an existing one is fine; failure shows when writing */
    char name[64];
    if (o->ckpt_per_iteration)
        snprintf(name, sizeof name, TRAIN_CKPT_ITER_FMT, (unsigned long long)r->iteration);
    else
        snprintf(name, sizeof name, "%s", TRAIN_CKPT_NAME);
    rc = train__ckpt_write_as(o->checkpoint_dir, name, &c, err, errlen);
    if (rc == 0) snprintf(path, pathlen, "%s/%s", o->checkpoint_dir, name);
out:
    free(c.params);
    free(c.state);
    return rc;
}

/* Appends `"name": [was, now]` to the JSON object being built in j and `name was -> now`
 * to the sentence in t, when the values differ. */
struct changes {
    char j[1536], t[1024];
    size_t jn, tn;
};

static void changed_num(struct changes *c, const char *name, double was, double now)
{
    if (was == now || c->jn + 100 > sizeof c->j || c->tn + 100 > sizeof c->t) return;
    c->jn += (size_t)snprintf(c->j + c->jn, sizeof c->j - c->jn, "%s\"%s\": [%.9g, %.9g]",
                              c->jn ? ", " : "", name, was, now);
    c->tn += (size_t)snprintf(c->t + c->tn, sizeof c->t - c->tn, "%s%s %.9g -> %.9g",
                              c->tn ? ", " : "", name, was, now);
}

static void changed_str(struct changes *c, const char *name, const char *was, const char *now)
{
    if (strcmp(was, now) == 0 || c->jn + 100 > sizeof c->j || c->tn + 100 > sizeof c->t) return;
    c->jn += (size_t)snprintf(c->j + c->jn, sizeof c->j - c->jn, "%s\"%s\": [%s, %s]",
                              c->jn ? ", " : "", name, was, now);
    c->tn += (size_t)snprintf(c->t + c->tn, sizeof c->t - c->tn, "%s%s %s -> %s", c->tn ? ", " : "",
                              name, was, now);
}

/* What this run's command line changes against the checkpoint's hyperparameters (only
 * those the optimiser in use reads): the command line wins, as Population Based
 * Training's explore step needs, and the first result line says so. */
static void describe_changes(struct run *r, const train__ckpt_t *c, const char *path)
{
    const train_opts_t *o = r->o;
    static const char *const sched[] = {"\"constant\"", "\"cosine\""};
    struct changes ch;
    memset(&ch, 0, sizeof ch);
    if (c->has_hparams) {
        const train__hparams_t *h = &c->hp;
        changed_num(&ch, "lr", h->lr, o->lr);
        if (o->optimizer == TRAIN_OPT_SGD) {
            changed_num(&ch, "momentum", h->momentum, o->momentum);
            changed_str(&ch, "nesterov", h->nesterov ? "true" : "false",
                        o->nesterov ? "true" : "false");
        } else {
            changed_num(&ch, "beta1", h->beta1, o->beta1);
            changed_num(&ch, "beta2", h->beta2, o->beta2);
            changed_num(&ch, "eps", h->eps, o->eps);
        }
        changed_num(&ch, "weight_decay", h->weight_decay, o->weight_decay);
        changed_num(&ch, "warmup_epochs", h->warmup_epochs, o->warmup_epochs);
        changed_str(&ch, "schedule", sched[h->schedule ? 1 : 0], sched[o->schedule ? 1 : 0]);
        changed_num(&ch, "min_lr", h->min_lr, o->min_lr);
        changed_num(&ch, "batch_size", h->batch_size, o->batch_size);
        changed_num(&ch, "epochs", h->epochs, o->epochs);
    }
    changed_num(&ch, "seed", (double)c->seed, (double)o->seed);
    char pj[PATH_MAX * 2 + 16];
    jsonw_quote(pj, sizeof pj, path, 0);
    snprintf(r->resumed, sizeof r->resumed,
             "\"resumed\": {\"from\": %s, \"epoch\": %u, \"changed\": %s%s%s}", pj, c->epoch,
             c->has_hparams ? "{" : "null", ch.j, c->has_hparams ? "}" : "");
    if (r->env->rank == 0 && r->env->progress) {
        char msg[PATH_MAX + 1200];
        if (!c->has_hparams)
            snprintf(msg, sizeof msg,
                     "resumed from %s after epoch %u with this command line's hyperparameters "
                     "(the checkpoint, version 1, does not record its own)%s%s",
                     path, c->epoch, ch.tn ? "; " : "", ch.t);
        else if (ch.tn)
            snprintf(msg, sizeof msg,
                     "resumed from %s after epoch %u with this command line's hyperparameters: %s",
                     path, c->epoch, ch.t);
        else
            snprintf(msg, sizeof msg, "resumed from %s after epoch %u, hyperparameters unchanged",
                     path, c->epoch);
        r->env->progress(r->env->ud, msg);
    }
}

/* Restores parameters, optimiser state and counters; returns the epochs completed. The
 * hyperparameters are this run's (the command line wins over the checkpoint's); the
 * model and the optimiser's kind must match, since the state is theirs. */
static int resume(struct run *r, const char *path, int *epoch0, char *err, size_t errlen)
{
    const train_opts_t *o = r->o;
    train__ckpt_t c;
    int rc = train__ckpt_read(path, &c, err, errlen);
    if (rc) return rc;
    static const char *const models[] = {"mlp", "cnn"}, *const optims[] = {"sgd", "adam"};
    if (c.model != (uint32_t)o->model || c.nparams != r->np ||
        (o->model == TRAIN_MODEL_MLP &&
         (c.hidden != (uint32_t)o->hidden || c.layers != (uint32_t)o->layers))) {
        snprintf(err, errlen,
                 "checkpoint %s is for --model %s (hidden %u, layers %u, %llu parameters), "
                 "not this run's",
                 path, c.model < 2 ? models[c.model] : "?", c.hidden, c.layers,
                 (unsigned long long)c.nparams);
        rc = TRAIN_ECKPT;
    } else if (c.optimizer != (uint32_t)o->optimizer) {
        snprintf(err, errlen, "checkpoint %s is for --optimizer %s, not %s", path,
                 c.optimizer < 2 ? optims[c.optimizer] : "?", optims[o->optimizer]);
        rc = TRAIN_ECKPT;
    }
    if (rc == 0 && c.nstate != (uint32_t)r->nstate) {
        snprintf(err, errlen, "checkpoint %s is corrupt (optimiser state)", path);
        rc = TRAIN_ECKPT;
    }
    if (rc == 0) {
        if (!r->sharded || r->env->rank == 0) {
            r->ops->upload(r->ctx, r->params, c.params, sizeof(float) * r->np);
            r->ops->upload(r->ctx, r->state, c.state, sizeof(float) * r->np * c.nstate);
        }
        *epoch0 = (int)c.epoch;
        r->epoch0 = (int)c.epoch;
        r->step = r->step0 = c.step;
        describe_changes(r, &c, path);
        r->iteration = c.iteration;
        r->elapsed0 = c.elapsed_s;
        r->rng = c.rng;
    }
    train__ckpt_clear(&c);
    return rc;
}

static void run_free(struct run *r)
{
    if (!r->ctx) return;
    train__model_free(r->model);
    const train_be_ops_t *o = r->ops;
    if (!r->sharded) {
        o->free_mem(r->ctx, r->params);
        o->free_mem(r->ctx, r->state);
    }
    if (!(r->env->world && o->host_memory)) o->free_mem(r->ctx, r->grads);
    free(r->host_grads);
    o->free_mem(r->ctx, r->x);
    o->free_mem(r->ctx, r->y);
    o->free_mem(r->ctx, r->stats);
    if (r->own_data) {
        o->free_mem(r->ctx, (void *)r->tr_x);
        o->free_mem(r->ctx, (void *)r->tr_y);
        o->free_mem(r->ctx, (void *)r->te_x);
        o->free_mem(r->ctx, (void *)r->te_y);
    }
    o->close(r->ctx);
}

static int peer_dead(void *ud)
{
    const train__run_env_t *env = ud;
    return env->world ? train__world_aborted(env->world) : train__net_peer_gone(env->net);
}

static int bcast_cb(void *ud, void *buf, size_t len, int root, char *err, size_t errlen)
{
    return coll_bcast(ud, buf, len, root, err, errlen);
}

static int setup(struct run *r, int *epoch0, char *err, size_t errlen)
{
    const train__run_env_t *env = r->env;
    const train_opts_t *o = r->o;
    const train_data_t *d = env->data;
    int rc;
    if (!(r->ops = train_be_find(o->device, err, errlen))) return TRAIN_EINVAL;
    train_be_opts_t bo = {.threads = o->threads,
                          .rank = env->rank,
                          .world = env->nranks,
                          .local_rank = env->local_rank,
                          .allow_tf32 = o->tf32,
                          .timeout_s = o->timeout_s,
                          .peer_dead = env->world || env->net ? peer_dead : NULL,
                          .peer_ud = (void *)env};
    if ((rc = r->ops->open(&bo, &r->ctx, err, errlen))) return rc;
    const train_be_ops_t *ops = r->ops;
    if ((env->world || env->net) && ops->comm_init &&
        (rc = ops->comm_init(r->ctx, env->rank, env->nranks, bcast_cb, (void *)env, err, errlen)))
        return rc;
    r->cfg = (train__model_cfg_t){.kind = o->model, .hidden = o->hidden, .layers = o->layers};
    r->np = train__model_count(&r->cfg);
    r->nstate = o->optimizer == TRAIN_OPT_ADAM ? 2 : 1;
    r->n_train = o->train_limit && o->train_limit < d->n_train ? (int)o->train_limit : d->n_train;
    r->n_val = o->val_limit && o->val_limit < d->n_test ? (int)o->val_limit : d->n_test;
    r->local_b = o->batch_size / env->nranks;
    r->shard = (r->n_train + env->nranks - 1) / env->nranks;
    r->steps_per_epoch = (r->shard + r->local_b - 1) / r->local_b;
    r->total_steps = (long)r->steps_per_epoch * o->epochs;
    r->warmup_steps = lround(o->warmup_epochs * r->steps_per_epoch);
    int max_n = r->local_b > EVAL_BATCH ? r->local_b : EVAL_BATCH;

    r->sharded = env->world && ops->host_memory && !ops->allreduce_sum;
    if (r->sharded) { /* layout agreed with train_main.c: params (padded), then state */
        r->params = train__world_shared(env->world);
        r->state = r->params + (r->np + 15) / 16 * 16;
        train__world_set_chunk_cb(env->world, chunk_cb, r);
    } else {
        r->params = ops->alloc(r->ctx, sizeof(float) * r->np);
        r->state = ops->alloc(r->ctx, sizeof(float) * r->np * (size_t)r->nstate);
    }
    r->grads = env->world && ops->host_memory ? train__world_grad_slot(env->world)
                                              : ops->alloc(r->ctx, sizeof(float) * r->np);
    r->x = ops->alloc(r->ctx, sizeof(float) * (size_t)max_n * 784);
    r->y = ops->alloc(r->ctx, sizeof(int32_t) * (size_t)max_n);
    r->stats = ops->alloc(r->ctx, 4 * sizeof(double));
    if (ops->host_memory) {
        r->tr_x = d->train_x, r->tr_y = d->train_y, r->te_x = d->test_x, r->te_y = d->test_y;
    } else {
        size_t img = (size_t)d->rows * d->cols;
        uint8_t *a = ops->alloc(r->ctx, (size_t)d->n_train * img),
                *b = ops->alloc(r->ctx, (size_t)d->n_train),
                *c = ops->alloc(r->ctx, (size_t)d->n_test * img),
                *e = ops->alloc(r->ctx, (size_t)d->n_test);
        r->own_data = 1;
        r->tr_x = a, r->tr_y = b, r->te_x = c, r->te_y = e;
        if (a && b && c && e) {
            ops->upload(r->ctx, a, d->train_x, (size_t)d->n_train * img);
            ops->upload(r->ctx, b, d->train_y, (size_t)d->n_train);
            ops->upload(r->ctx, c, d->test_x, (size_t)d->n_test * img);
            ops->upload(r->ctx, e, d->test_y, (size_t)d->n_test);
        }
    }
    if (env->net && !ops->host_memory && !ops->allreduce_sum &&
        !(r->host_grads = malloc(sizeof(float) * r->np))) {
        snprintf(err, errlen, "out of memory");
        return TRAIN_ERR;
    }
    if ((rc = ops->sync(r->ctx, err, errlen))) return rc;
    if (!r->params || !r->grads || !r->state || !r->x || !r->y || !r->stats || !r->tr_x ||
        !r->tr_y || !r->te_x || !r->te_y) {
        snprintf(err, errlen, "out of memory");
        return TRAIN_ERR;
    }
    if ((rc = train__model_new(&r->model, &r->cfg, ops, r->ctx, max_n, r->local_b, r->params,
                               r->grads, err, errlen)))
        return rc;
    *epoch0 = 0;
    train__rng_seed(&r->rng, o->seed, 1);
    if (env->resume_path) {
        if ((rc = resume(r, env->resume_path, epoch0, err, errlen))) return rc;
        return r->sharded ? train__world_barrier(env->world, err, errlen) : 0;
    }
    if (r->sharded) { /* one shared copy: rank 0 initialises it, the rest wait */
        if (env->rank == 0) train__model_init(&r->cfg, r->params, o->seed);
        return train__world_barrier(env->world, err, errlen);
    }
    /* DDP's way: rank 0 initialises, everyone receives the same parameters */
    float *host = malloc(sizeof(float) * r->np);
    if (!host) {
        snprintf(err, errlen, "out of memory");
        return TRAIN_ERR;
    }
    if (env->rank == 0) train__model_init(&r->cfg, host, o->seed);
    if ((rc = coll_bcast(env, host, sizeof(float) * r->np, 0, err, errlen))) {
        free(host);
        return rc;
    }
    ops->upload(r->ctx, r->params, host, sizeof(float) * r->np);
    free(host);
    return ops->sync(r->ctx, err, errlen);
}

int train__run(const train__run_env_t *env, char *err, size_t errlen)
{
    struct run r;
    memset(&r, 0, sizeof r);
    r.env = env;
    r.o = env->opts;
    const train_opts_t *o = r.o;
    int epoch0 = 0, rc = setup(&r, &epoch0, err, errlen);
    int32_t *perm = NULL, *mine = NULL;
    if (rc) goto out;
    char msg[256];
    if (epoch0 >= o->epochs && env->rank == 0 && env->progress) {
        snprintf(msg, sizeof msg, "the checkpoint already has %d epochs; nothing to do", epoch0);
        env->progress(env->ud, msg);
    }
    int nr = env->nranks, padded = r.shard * nr;
    perm = malloc(sizeof(int32_t) * (size_t)padded);
    mine = malloc(sizeof(int32_t) * (size_t)r.shard);
    if (!perm || !mine) {
        snprintf(err, errlen, "out of memory");
        rc = TRAIN_ERR;
        goto out;
    }
    int first = 1;
    for (int epoch = epoch0 + 1; epoch <= o->epochs; epoch++) {
        /* DistributedSampler(shuffle=True, drop_last=False): permute, pad by repeating
         * the head, then rank r takes positions r, r+N, r+2N, ... */
        train__permutation(perm, r.n_train, o->seed, epoch - 1);
        for (int i = r.n_train; i < padded; i++)
            perm[i] = perm[i - r.n_train];
        for (int i = 0; i < r.shard; i++)
            mine[i] = perm[env->rank + nr * i];
        r.ops->zero(r.ctx, r.stats, 2 * sizeof(double));
        double t0 = train__now(), train_time = 0;
        long samples = 0;
        for (int s = 0; s < r.steps_per_epoch; s++) {
            int lo = s * r.local_b, n = r.shard - lo < r.local_b ? r.shard - lo : r.local_b;
            if (first && env->rank == 0 && env->progress) {
                snprintf(msg, sizeof msg, "first training step after %.3f s",
                         train__now() - env->t_start);
                env->progress(env->ud, msg);
            }
            first = 0;
            r.ops->load_batch(r.ctx, r.tr_x, r.tr_y, mine + lo, n, 784, MEAN, STD, r.x, r.y);
            /* mean loss over the global batch: every rank's batch has the same size */
            r.lr_now = lr_at(&r, r.step);
            int dev_coll = (env->world || env->net) && r.ops->allreduce_sum;
            train__model_step(r.model, r.x, r.y, n, 1.0f / ((float)n * (float)nr), r.stats,
                              r.sharded  ? ready_cb
                              : dev_coll ? device_ready_cb
                                         : NULL,
                              r.sharded ? (void *)env->world : (void *)&r);
            if (r.sharded) { /* reduction and update happen chunk by chunk in ddp.c */
                if ((rc = train__world_grad_finish(env->world, err, errlen))) goto out;
            } else {
                const float *g;
                if ((rc = allreduce(&r, &g, err, errlen))) goto out;
                opt_step(&r, g, 0, r.np);
            }
            r.step++;
            samples += n; /* this rank's; report() sums over ranks */
            int last = s + 1 == r.steps_per_epoch;
            if (last || (o->report_every && (s + 1) % o->report_every == 0)) {
                if ((rc = r.ops->sync(r.ctx, err, errlen))) goto out;
                train_time += train__now() - t0;
                if ((rc = report(&r, epoch, last, samples, train_time, err, errlen))) goto out;
                samples = 0;
                train_time = 0;
                t0 = train__now();
            }
        }
        if (o->stop_after && epoch >= o->stop_after && epoch < o->epochs) break; /* paused */
    }
    rc = r.ops->sync(r.ctx, err, errlen);
out:
    free(perm);
    free(mine);
    run_free(&r);
    return rc;
}
