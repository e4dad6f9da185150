/* ckpt.c: tune-train's checkpoint file: model parameters, optimiser state, epoch and
 * step counters and RNG state, written atomically (temp file, fsync, rename, fsync of the
 * directory) so a trial killed mid-write leaves the previous checkpoint intact.
 * Layout (little-endian, as the host): magic "TUNECKPT", u32 version, u32 header bytes,
 * the header, params, optimiser state, then a zlib crc32 of everything before it.
 * Version 2 appends the hyperparameters of the run to version 1's header; both are read.
 * Not for: deciding when to checkpoint or what to resume (train.c, train_main.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "train_int.h"

#define CKPT_MAGIC "TUNECKPT"
#define CKPT_VERSION 2u

/* The fixed-size header, written as is (a plain struct of fixed-width fields): version 1
 * is struct hdr1 alone, version 2 adds the hyperparameters. */
struct hdr1 {
    uint32_t model, hidden, layers, optimizer;
    uint32_t world, threads, nstate, epoch;
    uint64_t seed, nparams, step, iteration;
    double elapsed_s;
    uint64_t rng[4];
};

struct hdr {
    struct hdr1 v1;
    double lr, momentum, weight_decay, beta1, beta2, eps, warmup_epochs, min_lr;
    uint32_t batch_size, epochs, nesterov, schedule;
};

static int write_all(int fd, const void *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        buf = (const char *)buf + n;
        len -= (size_t)n;
    }
    return 0;
}

int train__write_atomic(const char *dir, const char *name, const train__part_t *parts, int n,
                        int *made)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp.XXXXXX", dir, name);
    if (made) *made = 0;
    int fd = mkstemp(tmp);
    if (fd < 0) return -1;
    if (made) *made = 1;
    int ok = 1;
    for (int i = 0; ok && i < n; i++)
        ok = write_all(fd, parts[i].p, parts[i].n) == 0;
    ok = ok && fsync(fd) == 0;
    int saved = errno;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        if (ok) saved = errno;
        unlink(tmp);
        errno = saved;
        return -1;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

int train__ckpt_write(const char *dir, const train__ckpt_t *c, char *err, size_t errlen)
{
    return train__ckpt_write_as(dir, TRAIN_CKPT_NAME, c, err, errlen);
}

int train__ckpt_write_as(const char *dir, const char *name, const train__ckpt_t *c, char *err,
                         size_t errlen)
{
    struct hdr h = {.v1 = {.model = c->model,
                           .hidden = c->hidden,
                           .layers = c->layers,
                           .optimizer = c->optimizer,
                           .world = c->world,
                           .threads = c->threads,
                           .nstate = c->nstate,
                           .epoch = c->epoch,
                           .seed = c->seed,
                           .nparams = c->nparams,
                           .step = c->step,
                           .iteration = c->iteration,
                           .elapsed_s = c->elapsed_s},
                    .lr = c->hp.lr,
                    .momentum = c->hp.momentum,
                    .weight_decay = c->hp.weight_decay,
                    .beta1 = c->hp.beta1,
                    .beta2 = c->hp.beta2,
                    .eps = c->hp.eps,
                    .warmup_epochs = c->hp.warmup_epochs,
                    .min_lr = c->hp.min_lr,
                    .batch_size = c->hp.batch_size,
                    .epochs = c->hp.epochs,
                    .nesterov = c->hp.nesterov,
                    .schedule = c->hp.schedule};
    memcpy(h.v1.rng, c->rng.s, sizeof h.v1.rng);
    uint32_t ver = CKPT_VERSION, hlen = sizeof h;
    size_t np = (size_t)c->nparams;
    train__part_t parts[7] = {{CKPT_MAGIC, 8},
                              {&ver, 4},
                              {&hlen, 4},
                              {&h, sizeof h},
                              {c->params, sizeof(float) * np},
                              {c->state, sizeof(float) * np * c->nstate},
                              {NULL, 4}};
    uLong crc = crc32(0L, Z_NULL, 0);
    for (int i = 0; i < 6; i++)
        crc = crc32_z(crc, parts[i].p, parts[i].n);
    uint32_t crc32v = (uint32_t)crc;
    parts[6].p = &crc32v;
    int made;
    if (train__write_atomic(dir, name, parts, 7, &made) != 0) {
        if (!made)
            snprintf(err, errlen, "cannot write a checkpoint in %s: %s", dir, strerror(errno));
        else
            snprintf(err, errlen, "cannot write checkpoint %s/%s: %s", dir, name, strerror(errno));
        return TRAIN_ERR;
    }
    return 0;
}

void train__ckpt_clear(train__ckpt_t *c)
{
    free(c->params);
    free(c->state);
    c->params = c->state = NULL;
}

int train__ckpt_read(const char *path, train__ckpt_t *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open checkpoint %s: %s", path, strerror(errno));
        return TRAIN_ECKPT;
    }
    unsigned char *buf = NULL;
    struct stat st;
    if (fstat(fileno(f), &st) != 0) goto corrupt;
    size_t len = (size_t)st.st_size;
    size_t fixed;
    buf = malloc(len ? len : 1);
    if (!buf || fread(buf, 1, len, f) != len) goto corrupt;
    if (len < 8 || memcmp(buf, CKPT_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s is not a tune-train checkpoint (bad magic)", path);
        goto fail;
    }
    if (len < 16 + sizeof(struct hdr1) + 4) goto corrupt;
    uint32_t ver, hlen, crc_file;
    memcpy(&ver, buf + 8, 4);
    memcpy(&hlen, buf + 12, 4);
    if (!(ver == 1 && hlen == sizeof(struct hdr1)) && !(ver == 2 && hlen == sizeof(struct hdr))) {
        snprintf(err, errlen,
                 "checkpoint %s has version %u; this tune-train reads versions 1 to %u", path, ver,
                 CKPT_VERSION);
        goto fail;
    }
    fixed = 16 + (size_t)hlen + 4;
    if (len < fixed) goto corrupt;
    memcpy(&crc_file, buf + len - 4, 4);
    if ((uint32_t)crc32_z(crc32(0L, Z_NULL, 0), buf, len - 4) != crc_file) goto corrupt;
    struct hdr hh;
    memset(&hh, 0, sizeof hh);
    memcpy(&hh, buf + 16, hlen);
    const struct hdr1 h = hh.v1;
    if (h.nstate > 2 || h.nparams > (uint64_t)1 << 32 ||
        len != fixed + sizeof(float) * (size_t)h.nparams * (1 + h.nstate))
        goto corrupt;
    size_t np = (size_t)h.nparams;
    c->params = malloc(sizeof(float) * (np ? np : 1));
    size_t ns = np * h.nstate;
    c->state = malloc(sizeof(float) * (ns > 0 ? ns : 1));
    if (!c->params || !c->state) {
        snprintf(err, errlen, "out of memory reading %s", path);
        goto fail;
    }
    memcpy(c->params, buf + 16 + hlen, sizeof(float) * np);
    memcpy(c->state, buf + 16 + hlen + sizeof(float) * np, sizeof(float) * np * h.nstate);
    c->model = h.model, c->hidden = h.hidden, c->layers = h.layers, c->optimizer = h.optimizer;
    c->world = h.world, c->threads = h.threads, c->nstate = h.nstate, c->epoch = h.epoch;
    c->seed = h.seed, c->nparams = h.nparams, c->step = h.step, c->iteration = h.iteration;
    c->elapsed_s = h.elapsed_s;
    memcpy(c->rng.s, h.rng, sizeof h.rng);
    if (ver >= 2) {
        c->has_hparams = 1;
        c->hp = (train__hparams_t){.lr = hh.lr,
                                   .momentum = hh.momentum,
                                   .weight_decay = hh.weight_decay,
                                   .beta1 = hh.beta1,
                                   .beta2 = hh.beta2,
                                   .eps = hh.eps,
                                   .warmup_epochs = hh.warmup_epochs,
                                   .min_lr = hh.min_lr,
                                   .batch_size = hh.batch_size,
                                   .epochs = hh.epochs,
                                   .nesterov = hh.nesterov,
                                   .schedule = hh.schedule};
    }
    free(buf);
    fclose(f);
    return 0;
corrupt:
    snprintf(err, errlen, "checkpoint %s is corrupt or truncated (checksum or size mismatch)",
             path);
fail:
    train__ckpt_clear(c);
    free(buf);
    fclose(f);
    return TRAIN_ECKPT;
}

int train__ckpt_newest(const char *dir, char *buf, size_t len)
{
    DIR *d = opendir(dir);
    unsigned long long best = 0;
    int found = 0, plain = 0;
    if (d) {
        for (struct dirent *e; (e = readdir(d));) {
            unsigned long long n;
            char tail[8];
            /* exactly checkpoint_<digits>.bin: not the temp files of a write in progress */
            if (sscanf(e->d_name, "checkpoint_%llu%7s", &n, tail) == 2 &&
                strcmp(tail, ".bin") == 0 && e->d_name[11] >= '0' && e->d_name[11] <= '9' &&
                (!found || n > best))
                best = n, found = 1;
            if (strcmp(e->d_name, TRAIN_CKPT_NAME) == 0) plain = 1;
        }
        closedir(d);
    }
    if (found) {
        char name[64];
        snprintf(name, sizeof name, TRAIN_CKPT_ITER_FMT, best);
        snprintf(buf, len, "%s/%s", dir, name);
        return 0;
    }
    if (!plain) return -1;
    snprintf(buf, len, "%s/%s", dir, TRAIN_CKPT_NAME);
    return 0;
}
