/* ckpt.c: tune-train's checkpoint file: model parameters, optimiser state, epoch and
 * step counters and RNG state, written atomically (temp file, fsync, rename, fsync of the
 * directory) so a trial killed mid-write leaves the previous checkpoint intact.
 * Layout (little-endian, as the host): magic "TUNECKPT", u32 version, u32 header bytes,
 * the header, params, optimiser state, then a zlib crc32 of everything before it.
 * Not for: deciding when to checkpoint or what to resume (train.c, train_main.c). */
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
#define CKPT_VERSION 1u

/* The fixed-size header, written as is (a plain struct of fixed-width fields). */
struct hdr {
    uint32_t model, hidden, layers, optimizer;
    uint32_t world, threads, nstate, epoch;
    uint64_t seed, nparams, step, iteration;
    double elapsed_s;
    uint64_t rng[4];
};

static int write_all(int fd, const void *buf, size_t len, uLong *crc)
{
    *crc = crc32_z(*crc, buf, len);
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

int train__ckpt_write(const char *dir, const train__ckpt_t *c, char *err, size_t errlen)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, TRAIN_CKPT_NAME);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp.XXXXXX", dir, TRAIN_CKPT_NAME);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write a checkpoint in %s: %s", dir, strerror(errno));
        return TRAIN_ERR;
    }
    struct hdr h = {.model = c->model,
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
                    .elapsed_s = c->elapsed_s};
    memcpy(h.rng, c->rng.s, sizeof h.rng);
    uint32_t ver = CKPT_VERSION, hlen = sizeof h;
    uLong crc = crc32(0L, Z_NULL, 0);
    size_t np = (size_t)c->nparams;
    int ok = write_all(fd, CKPT_MAGIC, 8, &crc) == 0 && write_all(fd, &ver, 4, &crc) == 0 &&
             write_all(fd, &hlen, 4, &crc) == 0 && write_all(fd, &h, sizeof h, &crc) == 0 &&
             write_all(fd, c->params, sizeof(float) * np, &crc) == 0 &&
             write_all(fd, c->state, sizeof(float) * np * c->nstate, &crc) == 0;
    uint32_t crc32v = (uint32_t)crc;
    uLong dummy = 0;
    ok = ok && write_all(fd, &crc32v, 4, &dummy) == 0 && fsync(fd) == 0;
    int saved = errno;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        if (ok) saved = errno;
        unlink(tmp);
        snprintf(err, errlen, "cannot write checkpoint %s: %s", path, strerror(saved));
        return TRAIN_ERR;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
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
    const size_t fixed = 16 + sizeof(struct hdr) + 4;
    buf = malloc(len ? len : 1);
    if (!buf || fread(buf, 1, len, f) != len) goto corrupt;
    if (len < 8 || memcmp(buf, CKPT_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s is not a tune-train checkpoint (bad magic)", path);
        goto fail;
    }
    if (len < fixed) goto corrupt;
    uint32_t ver, hlen, crc_file;
    memcpy(&ver, buf + 8, 4);
    memcpy(&hlen, buf + 12, 4);
    if (ver != CKPT_VERSION || hlen != sizeof(struct hdr)) {
        snprintf(err, errlen, "checkpoint %s has version %u; this tune-train reads version %u",
                 path, ver, CKPT_VERSION);
        goto fail;
    }
    memcpy(&crc_file, buf + len - 4, 4);
    if ((uint32_t)crc32_z(crc32(0L, Z_NULL, 0), buf, len - 4) != crc_file) goto corrupt;
    struct hdr h;
    memcpy(&h, buf + 16, sizeof h);
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
    memcpy(c->params, buf + 16 + sizeof h, sizeof(float) * np);
    memcpy(c->state, buf + 16 + sizeof h + sizeof(float) * np, sizeof(float) * np * h.nstate);
    c->model = h.model, c->hidden = h.hidden, c->layers = h.layers, c->optimizer = h.optimizer;
    c->world = h.world, c->threads = h.threads, c->nstate = h.nstate, c->epoch = h.epoch;
    c->seed = h.seed, c->nparams = h.nparams, c->step = h.step, c->iteration = h.iteration;
    c->elapsed_s = h.elapsed_s;
    memcpy(c->rng.s, h.rng, sizeof h.rng);
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
