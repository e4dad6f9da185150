/* opts.c: tune-train's command line: defaults, parsing and validation, with messages
 * that name the option and quote the bad value (`--lr must be a positive number, got
 * "abc"`). Not for: acting on the options (train_main.c, train.c). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

static const char usage[] =
    "usage: tune-train [options]\n"
    "Trains a Fashion-MNIST classifier and prints one JSON result line per epoch.\n"
    "\n"
    "model\n"
    "  --model mlp|cnn          network (default mlp)\n"
    "  --hidden N               mlp hidden width (default 256)\n"
    "  --layers N               mlp hidden layers (default 2)\n"
    "training\n"
    "  --epochs N               epochs (default $TUNE_MAX_T, else 2)\n"
    "  --batch-size N           global batch, split evenly over ranks (default 64)\n"
    "  --optimizer sgd|adam     (default sgd)\n"
    "  --lr X                   peak learning rate (default 0.05)\n"
    "  --momentum X             sgd momentum (default 0.9)\n"
    "  --nesterov               Nesterov momentum\n"
    "  --weight-decay X         L2 penalty added to gradients (default 0)\n"
    "  --beta1 X --beta2 X --eps X   adam (default 0.9, 0.999, 1e-8)\n"
    "  --warmup-epochs X        linear learning-rate warm-up (default 0)\n"
    "  --schedule constant|cosine    learning-rate decay after warm-up (default cosine)\n"
    "  --min-lr X               floor of the cosine schedule (default 0)\n"
    "  --seed N                 seeds initialisation and data order (default 0)\n"
    "execution\n"
    "  --device cpu|cuda        (default cpu)\n"
    "  --ranks N                data-parallel processes (default 1)\n"
    "  --threads N              threads per rank (default $OMP_NUM_THREADS, else 1)\n"
    "  --timeout S              longest wait for a peer rank (default 300)\n"
    "  --tf32                   allow TF32 matrix products on the GPU (default: strict FP32)\n"
    "data and output\n"
    "  --data DIR               IDX files (default " TRAIN_DEFAULT_DATA_DIR ")\n"
    "  --cache-dir DIR|none     decoded-data cache (default $XDG_CACHE_HOME/tune)\n"
    "  --train-limit N          use the first N training images (default all)\n"
    "  --val-limit N            use the first N test images (default all)\n"
    "  --report-every N         also report every N steps within an epoch\n"
    "  --stop-after-epoch N     exit after epoch N as if paused (the schedule still spans\n"
    "                           --epochs); continue later with --resume\n"
    "  --checkpoint-dir DIR     checkpoint each epoch here as checkpoint.bin (default\n"
    "                           $TUNE_CHECKPOINT_DIR, one checkpoint_NNNNNN.bin per epoch,\n"
    "                           else $TUNE_TRIAL_DIR); result lines name the file\n"
    "  --resume                 continue from $TUNE_RESUME_FROM, else DIR's newest\n"
    "                           checkpoint: its model and optimiser state, with this command\n"
    "                           line's hyperparameters (lr, momentum, batch size, ...);\n"
    "                           a set $TUNE_RESUME_FROM resumes even without --resume\n"
    "  --help                   this text\n";

const char *train_usage(void)
{
    return usage;
}

void train_opts_default(train_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->model = TRAIN_MODEL_MLP;
    o->epochs = 2;
    o->ranks = 1;
    o->threads = 1;
    const char *omp = getenv("OMP_NUM_THREADS");
    if (omp) {
        char *end;
        long t = strtol(omp, &end, 10);
        if (end != omp && *end == 0 && t >= 1 && t <= 256) o->threads = (int)t;
    }
    o->batch_size = 64;
    o->hidden = 256;
    o->layers = 2;
    o->optimizer = TRAIN_OPT_SGD;
    o->lr = 0.05;
    o->momentum = 0.9;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-8;
    /* cosine decay to 0 over --epochs: the better default at a few epochs (the accuracies
     * are in bench/train/README.md) */
    o->schedule = TRAIN_SCHED_COSINE;
    o->device = "cpu";
    o->data_dir = TRAIN_DEFAULT_DATA_DIR;
    /* tune's checkpoint folder (Population Based Training copies a donor's checkpoint out
     * of it, so every epoch gets its own file, named in its result line), else the trial's
     * own folder, where one checkpoint.bin is replaced each epoch */
    const char *ck = getenv("TUNE_CHECKPOINT_DIR");
    if (ck && *ck) {
        o->checkpoint_dir = ck;
        o->ckpt_per_iteration = 1;
    } else {
        o->checkpoint_dir = getenv("TUNE_TRIAL_DIR");
        if (o->checkpoint_dir && !*o->checkpoint_dir) o->checkpoint_dir = NULL;
    }
    /* how far tune's scheduler lets the trial run (max_t in time_attr units): as epochs,
     * which is what it is for time_attr training_iteration with one result per epoch, so
     * that a paused and resumed trial (asha's promotion variant, pbt) knows where to end */
    const char *mt = getenv("TUNE_MAX_T");
    if (mt && *mt) {
        char *end;
        errno = 0;
        double x = strtod(mt, &end);
        if (end != mt && *end == 0 && !errno && x >= 1 && x <= 100000 && x == floor(x))
            o->epochs = (int)x;
        else
            o->max_t_ignored = mt;
    }
    o->timeout_s = 300;
}

enum kind { K_INT, K_LONG, K_U64, K_POS, K_NONNEG, K_UNIT, K_STR, K_FLAG, K_CHOICE };

struct opt {
    const char *name;
    enum kind kind;
    size_t off;
    long min, max; /* integers */
    const char *choices[3];
};

#define OFF(f) offsetof(train_opts_t, f)
static const struct opt opts[] = {
    {"--model", K_CHOICE, OFF(model), 0, 0, {"mlp", "cnn", NULL}},
    {"--epochs", K_INT, OFF(epochs), 1, 100000, {0}},
    {"--ranks", K_INT, OFF(ranks), 1, 64, {0}},
    {"--threads", K_INT, OFF(threads), 1, 256, {0}},
    {"--batch-size", K_INT, OFF(batch_size), 1, 1 << 20, {0}},
    {"--hidden", K_INT, OFF(hidden), 1, 1 << 16, {0}},
    {"--layers", K_INT, OFF(layers), 1, 32, {0}},
    {"--optimizer", K_CHOICE, OFF(optimizer), 0, 0, {"sgd", "adam", NULL}},
    {"--lr", K_POS, OFF(lr), 0, 0, {0}},
    {"--momentum", K_UNIT, OFF(momentum), 0, 0, {0}},
    {"--nesterov", K_FLAG, OFF(nesterov), 0, 0, {0}},
    {"--weight-decay", K_NONNEG, OFF(weight_decay), 0, 0, {0}},
    {"--beta1", K_UNIT, OFF(beta1), 0, 0, {0}},
    {"--beta2", K_UNIT, OFF(beta2), 0, 0, {0}},
    {"--eps", K_POS, OFF(eps), 0, 0, {0}},
    {"--warmup-epochs", K_NONNEG, OFF(warmup_epochs), 0, 0, {0}},
    {"--schedule", K_CHOICE, OFF(schedule), 0, 0, {"constant", "cosine", NULL}},
    {"--min-lr", K_NONNEG, OFF(min_lr), 0, 0, {0}},
    {"--seed", K_U64, OFF(seed), 0, 0, {0}},
    {"--device", K_STR, OFF(device), 0, 0, {0}},
    {"--data", K_STR, OFF(data_dir), 0, 0, {0}},
    {"--cache-dir", K_STR, OFF(cache_dir), 0, 0, {0}},
    {"--checkpoint-dir", K_STR, OFF(checkpoint_dir), 0, 0, {0}},
    {"--resume", K_FLAG, OFF(resume), 0, 0, {0}},
    {"--report-every", K_LONG, OFF(report_every), 0, LONG_MAX, {0}},
    {"--stop-after-epoch", K_INT, OFF(stop_after), 0, 100000, {0}},
    {"--train-limit", K_LONG, OFF(train_limit), 0, LONG_MAX, {0}},
    {"--val-limit", K_LONG, OFF(val_limit), 0, LONG_MAX, {0}},
    {"--timeout", K_POS, OFF(timeout_s), 0, 0, {0}},
    {"--tf32", K_FLAG, OFF(tf32), 0, 0, {NULL}},
};

static int set_value(train_opts_t *o, const struct opt *op, const char *v, char *err, size_t errlen)
{
    char *base = (char *)o + op->off, *end;
    errno = 0;
    switch (op->kind) {
    case K_INT:
    case K_LONG: {
        long x = strtol(v, &end, 10);
        if (end == v || *end || errno || x < op->min || x > op->max) {
            if (op->min == 1 && op->max >= 1 << 16)
                snprintf(err, errlen, "%s must be a positive integer, got \"%s\"", op->name, v);
            else if (op->min == 0)
                snprintf(err, errlen, "%s must be a non-negative integer, got \"%s\"", op->name, v);
            else
                snprintf(err, errlen, "%s must be an integer from %ld to %ld, got \"%s\"", op->name,
                         op->min, op->max, v);
            return TRAIN_EINVAL;
        }
        if (op->kind == K_INT)
            *(int *)base = (int)x;
        else
            *(long *)base = x;
        return 0;
    }
    case K_U64: {
        unsigned long long x = strtoull(v, &end, 10);
        if (end == v || *end || errno || v[0] == '-') {
            snprintf(err, errlen, "%s must be a non-negative integer, got \"%s\"", op->name, v);
            return TRAIN_EINVAL;
        }
        *(uint64_t *)base = (uint64_t)x;
        return 0;
    }
    case K_POS:
    case K_NONNEG:
    case K_UNIT: {
        double x = strtod(v, &end);
        int bad = end == v || *end || errno || !isfinite(x);
        if (op->kind == K_POS && !(x > 0)) bad = 1;
        if (op->kind == K_NONNEG && !(x >= 0)) bad = 1;
        if (op->kind == K_UNIT && !(x >= 0 && x < 1)) bad = 1;
        if (bad) {
            snprintf(err, errlen, "%s must be %s, got \"%s\"", op->name,
                     op->kind == K_POS      ? "a positive number"
                     : op->kind == K_NONNEG ? "a non-negative number"
                                            : "a number in [0, 1)",
                     v);
            return TRAIN_EINVAL;
        }
        *(double *)base = x;
        return 0;
    }
    case K_STR:
        if (!*v) {
            snprintf(err, errlen, "%s must not be empty", op->name);
            return TRAIN_EINVAL;
        }
        *(const char **)base = v;
        return 0;
    case K_CHOICE:
        for (int i = 0; op->choices[i]; i++)
            if (strcmp(v, op->choices[i]) == 0) {
                *(int *)base = i;
                return 0;
            }
        snprintf(err, errlen, "%s must be %s or %s, got \"%s\"", op->name, op->choices[0],
                 op->choices[1], v);
        return TRAIN_EINVAL;
    case K_FLAG:
        *(int *)base = 1;
        return 0;
    }
    return TRAIN_EINVAL;
}

int train_opts_parse(train_opts_t *o, int argc, char **argv, char *err, size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return 1;
        const char *eq = strchr(a, '=');
        size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        const struct opt *op = NULL;
        for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++)
            if (strlen(opts[k].name) == nlen && strncmp(opts[k].name, a, nlen) == 0) op = &opts[k];
        if (!op) {
            snprintf(err, errlen, "unknown option \"%s\" (see --help)", a);
            return TRAIN_EINVAL;
        }
        const char *v;
        if (op->kind == K_FLAG) {
            if (eq) {
                snprintf(err, errlen, "%s takes no value", op->name);
                return TRAIN_EINVAL;
            }
            v = "";
        } else if (eq) {
            v = eq + 1;
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            snprintf(err, errlen, "%s needs a value", op->name);
            return TRAIN_EINVAL;
        }
        int rc = set_value(o, op, v, err, errlen);
        if (rc) return rc;
        if (op->off == OFF(checkpoint_dir)) o->ckpt_per_iteration = 0; /* a folder of one's own */
        if (op->off == OFF(epochs)) o->max_t_ignored = NULL;
    }
    if (o->batch_size % o->ranks != 0) {
        snprintf(err, errlen,
                 "--batch-size %d is not divisible by --ranks %d (the global batch is split "
                 "evenly over ranks)",
                 o->batch_size, o->ranks);
        return TRAIN_EINVAL;
    }
    if (o->nesterov && !(o->momentum > 0) && o->optimizer == TRAIN_OPT_SGD) {
        snprintf(err, errlen, "--nesterov needs --momentum > 0");
        return TRAIN_EINVAL;
    }
    if (o->train_limit && o->train_limit < o->ranks) {
        snprintf(err, errlen, "--train-limit %ld is smaller than --ranks %d", o->train_limit,
                 o->ranks);
        return TRAIN_EINVAL;
    }
    return 0;
}
