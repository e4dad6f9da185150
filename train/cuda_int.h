/* cuda_int.h: private state of the CUDA backend of tune-train, shared by its translation
 * units (backend_cuda.cu: lifetime, memory, cuBLAS; conv_cuda.cu: cuDNN's convolutions;
 * kernels_cuda.cu: our own kernels; nccl_cuda.cu: the NCCL communicator). Not for: anything outside
 * train/'s
 * *_cuda.cu files; the rest of the trainer sees only train_be_cuda in backend.h. */
#ifndef TUNE_TRAIN_CUDA_INT_H
#define TUNE_TRAIN_CUDA_INT_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <stddef.h>
#include <stdint.h>

#include "train/backend.h"
#include "train/train.h"

/* Pinned staging slots for host->device copies: upload() and load_batch() return as soon
 * as the host bytes are in a slot, so the caller may reuse its buffer while the copy is
 * still queued; a slot is reused only after the copy that last read it has finished. */
#define CUDA_STAGE_SLOTS 2
#define CUDA_STAGE_BYTES (4u << 20)

/* All-reduces still running on the comm stream, by address range: an op that touches
 * one of these ranges first makes the compute stream wait for the comm stream, so the
 * all-reduce of one layer's gradients overlaps the backward of the layers below it
 * (PyTorch DDP's bucketing idea, with the ordering done by CUDA events). */
#define CUDA_MAX_PENDING 64

/* How long a collective may make no progress when train_be_opts_t.timeout_s is 0: the
 * default of tune-train's --timeout. */
#define CUDA_DEFAULT_TIMEOUT_S 300.0

struct train_be_ctx {
    int dev;           /* CUDA ordinal inside this process's CUDA_VISIBLE_DEVICES */
    char gpu_name[64]; /* what messages call the GPU: its id as CUDA_VISIBLE_DEVICES names it */
    int tf32;          /* TF32 tensor-core math allowed in cuBLAS and cuDNN */
    int rank, world;

    cudaStream_t stream; /* every op, in issue order */
    cublasHandle_t blas;
    cudnnHandle_t dnn;

    /* first error since the last sync (rc < 0); `fatal` errors (the device or the
     * communicator is unusable) are reported again by every later sync */
    int rc;
    int fatal;
    char err[512];

    /* staging (see CUDA_STAGE_SLOTS) */
    void *stage[CUDA_STAGE_SLOTS];
    cudaEvent_t stage_done[CUDA_STAGE_SLOTS];
    int stage_next;

    /* load_batch's sample numbers on the device, softmax_xent's per-sample partials */
    int32_t *idx_dev;
    size_t idx_cap; /* entries */
    double *xent_part;
    size_t xent_cap; /* samples */

    /* cuDNN workspace shared by every plan (one stream runs one op at a time) */
    void *ws;
    size_t ws_size;

    /* conv plans still open, freed by close() */
    train_be_conv_t *plans;

    /* NCCL (nccl_cuda.cu); comm is NULL until comm_init and after an abort */
    ncclComm_t comm;
    cudaStream_t comm_stream;
    cudaEvent_t ev_compute;   /* compute stream reached the point an all-reduce waits for */
    cudaEvent_t ev_comm_done; /* the last issued all-reduce has finished */
    cudaEvent_t ev_sync;      /* sync()/download(): everything issued so far is done */
    struct {
        uintptr_t lo, hi;
    } pending[CUDA_MAX_PENDING];
    int npending;
    double nccl_timeout_s;      /* a collective that makes no progress this long is aborted */
    int (*peer_dead)(void *ud); /* the launcher says the run is over (may be NULL) */
    void *peer_ud;
    int parent_pid; /* getppid() at open: a rank whose launcher died aborts */
};

/* Bytes as MiB, rounded up, for messages. */
#define CUDA_MIB(b) (((b) + (1u << 20) - 1) >> 20)

/* ---- errors (backend_cuda.cu) --------------------------------------------------- */
/* Records the first error since the last sync (printf-style) with code TRAIN_ERR; later
 * ones are dropped unless they are fatal and the recorded one is not. fatal: the context
 * can no longer run ops (reported by every later sync). */
void train_cuda__fail(train_be_ctx_t *ctx, int fatal, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with another code (TRAIN_EPEER when a peer rank is gone). */
void train_cuda__fail_rc(train_be_ctx_t *ctx, int fatal, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Checks a CUDA runtime result; records it (OOM worded for the user) and returns 0 on
 * failure, 1 on success. `what` names the call for the message. */
int train_cuda__ok(train_be_ctx_t *ctx, cudaError_t e, const char *what);
/* Checks the last kernel launch (cudaGetLastError). */
int train_cuda__launched(train_be_ctx_t *ctx, const char *kernel);
/* Records an out-of-memory error for `bytes` in the user-facing wording. */
void train_cuda__oom(train_be_ctx_t *ctx, size_t bytes);
/* Checks a cuDNN result the same way; 1 on success. */
int train_cuda__dnn_ok(train_be_ctx_t *ctx, cudnnStatus_t s, const char *what);
/* cudaMalloc that reports OOM in the user-facing wording; NULL on failure. */
void *train_cuda__malloc(train_be_ctx_t *ctx, size_t bytes);
/* Copies host bytes to the device through the pinned staging slots (see above). */
void train_cuda__stage_upload(train_be_ctx_t *ctx, void *dst, const void *src, size_t bytes);
/* Makes *p hold at least `need` device bytes, keeping nothing (the contents are scratch);
 * growing waits for the device. 1, or 0 with the error recorded. */
int train_cuda__grow(train_be_ctx_t *ctx, void **p, size_t *have, size_t need);

/* ---- convolutions (conv_cuda.cu): backend.h's conv_* ops ---------------------------- */
train_be_conv_t *train_cuda__conv_plan(train_be_ctx_t *ctx, const train_be_conv_shape_t *s);
void train_cuda__conv_free(train_be_ctx_t *ctx, train_be_conv_t *plan);
void train_cuda__conv_forward(train_be_ctx_t *ctx, train_be_conv_t *pl, int n, const float *x,
                              const float *w, const float *bias, float *y, int act);
void train_cuda__conv_backward(train_be_ctx_t *ctx, train_be_conv_t *pl, int n, const float *x,
                               const float *w, const float *dy, float *dx, float *dw, float *dbias);
/* Unlinks a plan from ctx->plans and frees it with its descriptors (close() frees those
 * still open this way). */
void train_cuda__plan_destroy(train_be_conv_t *pl);

/* ---- ordering with the comm stream (nccl_cuda.cu) --------------------------------- */
/* Makes the compute stream wait for pending all-reduces if [p, p+bytes) overlaps one. */
void train_cuda__touch(train_be_ctx_t *ctx, const void *p, size_t bytes);
/* Blocks until everything issued on both streams is done, watching NCCL for async
 * errors, a stalled collective and a dead launcher. Returns 1, or 0 with the error
 * recorded (the communicator is then aborted). */
int train_cuda__wait_all(train_be_ctx_t *ctx);
/* Blocks until `ev` has completed, watching NCCL the same way. Returns 1, or 0. */
int train_cuda__wait_event(train_be_ctx_t *ctx, cudaEvent_t ev);
/* Finalizes (or, after an error, aborts) and frees the communicator. */
void train_cuda__comm_close(train_be_ctx_t *ctx);
int train_cuda__comm_init(train_be_ctx_t *ctx, int rank, int world, train_be_bcast_cb bcast,
                          void *bcast_ud, char *err, size_t errlen);
void train_cuda__allreduce_sum(train_be_ctx_t *ctx, float *buf, size_t n);

/* ---- our kernels (kernels_cuda.cu); each records its own launch errors ------------- */
void train_cuda__bias_act(train_be_ctx_t *ctx, float *y, const float *bias, int rows, int cols,
                          int act);
/* y[n][k][hw] += bias[k], then act: the convolution's epilogue. */
void train_cuda__bias_act_nchw(train_be_ctx_t *ctx, float *y, const float *bias, int n, int k,
                               int hw, int act);
/* dbias[k] = sum over n and hw of dy[n][k][hw], in a fixed order (deterministic). */
void train_cuda__bias_grad_nchw(train_be_ctx_t *ctx, const float *dy, int n, int k, int hw,
                                float *dbias);
void train_cuda__sum_rows(train_be_ctx_t *ctx, const float *x, int rows, int cols, float *out);
void train_cuda__relu_backward(train_be_ctx_t *ctx, const float *y, const float *dy, float *dx,
                               size_t n);
void train_cuda__scale(train_be_ctx_t *ctx, float *x, size_t n, float alpha);
void train_cuda__maxpool_forward(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                                 const float *x, float *y, int32_t *argmax);
void train_cuda__maxpool_backward(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                                  const float *dy, const int32_t *argmax, float *dx);
void train_cuda__load_batch(train_be_ctx_t *ctx, const uint8_t *images, const uint8_t *labels,
                            const int32_t *idx_dev, int n, int dim, float mean, float std, float *x,
                            int32_t *y);
void train_cuda__softmax_xent(train_be_ctx_t *ctx, const float *logits, const int32_t *y, int n,
                              int classes, float grad_scale, float *dlogits, double *part,
                              double *stats);
void train_cuda__sgd_step(train_be_ctx_t *ctx, float *param, const float *grad, float *buf,
                          size_t n, float lr, float momentum, float weight_decay, int nesterov);
void train_cuda__adam_step(train_be_ctx_t *ctx, float *param, const float *grad, float *m, float *v,
                           size_t n, float lr, float beta1, float beta2, float eps,
                           float weight_decay, float bc1, float bc2);

#endif
