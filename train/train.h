/* train.h: the public face of tune-train, the built-in Fashion-MNIST trainer: its
 * options, its data set loader and one entry point per process role. tune-train's own
 * main() and the tests use it; the rest of tune only ever runs the binary.
 * Not for: the compute interface (backend.h) or internals shared between the trainer's
 * files (train_int.h). */
#ifndef TUNE_TRAIN_H
#define TUNE_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#define TRAIN_OK 0
#define TRAIN_ERR (-1)      /* system or resource failure; the message says which */
#define TRAIN_EINVAL (-2)   /* bad option or argument */
#define TRAIN_EDATA (-3)    /* missing or corrupt data set */
#define TRAIN_ECKPT (-4)    /* missing, corrupt or mismatching checkpoint */
#define TRAIN_EPEER (-5)    /* another rank died or a collective timed out */
#define TRAIN_ESTOPPED (-6) /* stopped by a signal */

enum { TRAIN_MODEL_MLP = 0, TRAIN_MODEL_CNN = 1 };
enum { TRAIN_OPT_SGD = 0, TRAIN_OPT_ADAM = 1 };
enum { TRAIN_SCHED_CONSTANT = 0, TRAIN_SCHED_COSINE = 1 };

/* Everything on tune-train's command line. Strings point into argv (or are literals). */
typedef struct train_opts {
    int model;                  /* TRAIN_MODEL_* (--model mlp|cnn) */
    int epochs;                 /* --epochs, >= 1; default $TUNE_MAX_T, else 2 */
    int ranks;                  /* --ranks, data-parallel processes, >= 1 */
    int threads;                /* --threads per rank; default OMP_NUM_THREADS, else 1 */
    int batch_size;             /* --batch-size: the GLOBAL batch, split evenly over ranks */
    int hidden;                 /* --hidden (mlp), default 256 */
    int layers;                 /* --layers: hidden layers of the mlp, default 2 */
    int optimizer;              /* TRAIN_OPT_* (--optimizer sgd|adam) */
    double lr;                  /* --lr, peak learning rate */
    double momentum;            /* --momentum (sgd) */
    int nesterov;               /* --nesterov */
    double weight_decay;        /* --weight-decay (L2 added to the gradient, as torch.optim) */
    double beta1, beta2, eps;   /* --beta1 --beta2 --eps (adam) */
    double warmup_epochs;       /* --warmup-epochs: linear warm-up, may be fractional */
    int schedule;               /* TRAIN_SCHED_* (--schedule constant|cosine) */
    double min_lr;              /* --min-lr: the floor of the cosine schedule */
    uint64_t seed;              /* --seed */
    const char *device;         /* --device cpu|cuda */
    const char *data_dir;       /* --data, default /usr/share/datasets/fashion-mnist */
    const char *cache_dir;      /* --cache-dir (default $XDG_CACHE_HOME/tune); "none" = off */
    const char *checkpoint_dir; /* --checkpoint-dir, default $TUNE_CHECKPOINT_DIR, else
                                 * $TUNE_TRIAL_DIR; may be NULL */
    int ckpt_per_iteration;     /* 1: one file per checkpoint (checkpoint_NNNNNN.bin), left
                                 * for tune to prune; 0: checkpoint.bin, replaced each time */
    int resume;                 /* --resume */
    long report_every;          /* --report-every N steps (0 = once per epoch) */
    int stop_after;             /* --stop-after-epoch N: exit 0 after epoch N, as if paused */
    long train_limit;           /* --train-limit N: first N training images (0 = all) */
    long val_limit;             /* --val-limit N: first N test images (0 = all) */
    double timeout_s;           /* --timeout: longest wait for a peer rank in a collective */
    int tf32;                   /* --tf32: let a GPU backend use TF32 matrix products */
    const char *max_t_ignored;  /* $TUNE_MAX_T when it was set but is not a whole number of
                                 * epochs (the caller warns); NULL otherwise */
} train_opts_t;

#define TRAIN_DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"

/* Fills *o with the defaults (env OMP_NUM_THREADS, TUNE_MAX_T, TUNE_CHECKPOINT_DIR and
 * TUNE_TRIAL_DIR are read here). */
void train_opts_default(train_opts_t *o);

/* Parses argv[1..argc) on top of *o. Returns 0, 1 when --help was asked for, or
 * TRAIN_EINVAL with a message like `--lr must be a positive number, got "abc"`. */
int train_opts_parse(train_opts_t *o, int argc, char **argv, char *err, size_t errlen);

/* The --help text (static). */
const char *train_usage(void);

/* ---- the data set ---------------------------------------------------------------- */
/* Fashion-MNIST decoded: 28x28 uint8 images, labels 0..9. */
typedef struct train_data {
    int n_train, n_test, rows, cols;
    const uint8_t *train_x, *train_y, *test_x, *test_y;
    int from_cache; /* 1 when mapped from the decoded cache */
    void *base;     /* mapping or allocation behind the arrays */
    size_t base_len;
    int mapped;
} train_data_t;

/* Reads the four IDX files (gzip or plain) from dir. With cache_dir not NULL (and not
 * "none"), decoded arrays are cached in cache_dir in a file keyed by the sources' paths,
 * sizes and mtimes, written atomically and mmap'd on later starts. A cache that cannot be
 * written is not an error: *warn (if not NULL) then says why. Returns 0 and *out (freed
 * with train_data_free) or TRAIN_EDATA with a message naming the file and the problem. */
int train_data_open(train_data_t **out, const char *dir, const char *cache_dir, char *warn,
                    size_t warnlen, char *err, size_t errlen);
void train_data_free(train_data_t *d);

/* The cache directory used by default: $XDG_CACHE_HOME/tune, else $HOME/.cache/tune,
 * written into buf. Returns buf, or NULL when neither variable is set. */
const char *train_default_cache_dir(char *buf, size_t len);

/* ---- running ----------------------------------------------------------------------- */
/* The whole program: parses argv, loads data, launches and supervises ranks (forking
 * when --ranks > 1), prints result lines on stdout and messages on stderr. Returns the
 * process exit status. Only tune-train's main() calls it. */
int train_main(int argc, char **argv);

#endif
