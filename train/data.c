/* data.c: loads Fashion-MNIST from its IDX files (gzip or plain, via zlib) and keeps a
 * decoded copy in a cache file that later starts mmap, so a trial does not re-inflate
 * 26 MB before its first step. The cache is keyed by the sources' paths, sizes and
 * mtimes and written atomically (temp file, fsync, rename, fsync dir), so concurrent
 * trials may race to write it safely. Not for: batching or normalising (the backend's
 * load_batch does that from these uint8 arrays). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "train_int.h"

#define IDX_IMAGES_MAGIC 0x00000803u /* unsigned byte, 3 dimensions */
#define IDX_LABELS_MAGIC 0x00000801u /* unsigned byte, 1 dimension */
#define CACHE_MAGIC "TUNEFMN1"
#define CACHE_VERSION 1u
#define CACHE_HDR 4096 /* payload starts page-aligned */

static const char *const file_names[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                          "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

struct cache_hdr {
    char magic[8];
    uint32_t version, n_train, n_test, rows, cols;
    uint32_t payload_crc;
    uint64_t payload_len;
    char key[3000]; /* the source description, compared in full */
};

/* Path of source i: dir/name.gz, or dir/name when only the uncompressed file exists. */
static void source_path(const char *dir, int i, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s.gz", dir, file_names[i]);
    if (access(buf, F_OK) != 0) {
        char plain[PATH_MAX];
        snprintf(plain, sizeof plain, "%s/%s", dir, file_names[i]);
        if (access(plain, F_OK) == 0) snprintf(buf, len, "%s", plain);
    }
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads exactly len bytes; 0, or -1 with err explaining (short file, corrupt stream). */
static int gz_read_all(gzFile f, const char *path, void *buf, size_t len, char *err, size_t errlen)
{
    size_t got = 0;
    while (got < len) {
        unsigned chunk = len - got > (1u << 30) ? (1u << 30) : (unsigned)(len - got);
        int n = gzread(f, (char *)buf + got, chunk);
        if (n < 0) {
            int zerr;
            const char *m = gzerror(f, &zerr);
            snprintf(err, errlen, "%s: corrupt data (%s)", path,
                     zerr == Z_ERRNO ? strerror(errno) : m);
            return -1;
        }
        if (n == 0) {
            snprintf(err, errlen, "%s: truncated: expected %zu bytes of data, found %zu", path, len,
                     got);
            return -1;
        }
        got += (size_t)n;
    }
    return 0;
}

/* Decodes one IDX file into a new buffer (*out, malloc'd; caller frees). dims[] gets the
 * dimensions (count, rows, cols; rows = cols = 1 for labels). */
static int read_idx(const char *path, uint32_t want_magic, uint8_t **out, uint32_t dims[3],
                    char *err, size_t errlen)
{
    gzFile f = gzopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path,
                 errno ? strerror(errno) : "out of memory");
        return TRAIN_EDATA;
    }
    unsigned char hdr[16];
    int nd = want_magic == IDX_IMAGES_MAGIC ? 3 : 1;
    uint8_t *buf = NULL;
    if (gz_read_all(f, path, hdr, 4 + 4 * (size_t)nd, err, errlen) != 0) goto fail;
    uint32_t magic = be32(hdr);
    if (magic != want_magic) {
        snprintf(err, errlen, "%s: not an IDX %s file (magic 0x%08x, expected 0x%08x)", path,
                 nd == 3 ? "image" : "label", magic, want_magic);
        goto fail;
    }
    dims[0] = be32(hdr + 4);
    dims[1] = nd == 3 ? be32(hdr + 8) : 1;
    dims[2] = nd == 3 ? be32(hdr + 12) : 1;
    if (dims[0] == 0 || dims[0] > 10000000u || dims[1] != (nd == 3 ? 28u : 1u) ||
        dims[2] != (nd == 3 ? 28u : 1u)) {
        snprintf(err, errlen, "%s: unexpected dimensions %u x %u x %u (want N x 28 x 28 images)",
                 path, dims[0], dims[1], dims[2]);
        goto fail;
    }
    size_t len = (size_t)dims[0] * dims[1] * dims[2];
    buf = malloc(len);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    if (gz_read_all(f, path, buf, len, err, errlen) != 0) goto fail;
    gzclose(f);
    *out = buf;
    return 0;
fail:
    free(buf);
    gzclose(f);
    return TRAIN_EDATA;
}

const char *train_default_cache_dir(char *buf, size_t len)
{
    const char *x = getenv("XDG_CACHE_HOME");
    if (x && *x) {
        snprintf(buf, len, "%s/tune", x);
        return buf;
    }
    const char *h = getenv("HOME");
    if (h && *h) {
        snprintf(buf, len, "%s/.cache/tune", h);
        return buf;
    }
    return NULL;
}

/* The cache key: every source's absolute path, size and mtime. */
static int make_key(const char *dir, char *key, size_t len, char *err, size_t errlen)
{
    size_t off = 0;
    key[0] = 0;
    for (int i = 0; i < 4; i++) {
        char p[PATH_MAX], rp[PATH_MAX];
        struct stat st;
        source_path(dir, i, p, sizeof p);
        if (stat(p, &st) != 0 || !realpath(p, rp)) {
            snprintf(err, errlen, "cannot open %s: %s", p, strerror(errno));
            return TRAIN_EDATA;
        }
        int n = snprintf(key + off, len - off, "%s %lld %lld.%09ld\n", rp, (long long)st.st_size,
                         (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        if (n < 0 || (size_t)n >= len - off) {
            snprintf(err, errlen, "data path too long: %s", rp);
            return TRAIN_EDATA;
        }
        off += (size_t)n;
    }
    return 0;
}

static void cache_path(const char *cache_dir, const char *key, char *buf, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a 64 */
    for (const char *p = key; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    snprintf(buf, len, "%s/fashion-mnist-%016llx.bin", cache_dir, (unsigned long long)h);
}

/* Maps a valid cache file; 0 on success, -1 when absent or not valid (then ignored). */
static int cache_map(const char *path, const char *key, train_data_t *d)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    struct cache_hdr h;
    if (fstat(fd, &st) != 0 || st.st_size < CACHE_HDR ||
        pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h.magic, CACHE_MAGIC, 8) != 0 ||
        h.version != CACHE_VERSION || strncmp(h.key, key, sizeof h.key) != 0 ||
        (uint64_t)st.st_size != CACHE_HDR + h.payload_len) {
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return -1;
    size_t img = (size_t)h.rows * h.cols;
    if (h.payload_len != (uint64_t)(h.n_train + h.n_test) * (img + 1)) {
        munmap(m, (size_t)st.st_size);
        return -1;
    }
    const uint8_t *p = (const uint8_t *)m + CACHE_HDR;
    d->n_train = (int)h.n_train;
    d->n_test = (int)h.n_test;
    d->rows = (int)h.rows;
    d->cols = (int)h.cols;
    d->train_x = p;
    d->train_y = p + (size_t)h.n_train * img;
    d->test_x = d->train_y + h.n_train;
    d->test_y = d->test_x + (size_t)h.n_test * img;
    d->base = m;
    d->base_len = (size_t)st.st_size;
    d->mapped = 1;
    d->from_cache = 1;
    return 0;
}

static int mkdir_p(const char *dir)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

/* Writes the decoded arrays to the cache atomically; on failure explains in warn. */
static void cache_write(const char *cache_dir, const char *path, const char *key,
                        const train_data_t *d, char *warn, size_t warnlen)
{
    if (mkdir_p(cache_dir) != 0) {
        snprintf(warn, warnlen, "not caching the decoded data set: cannot create %s: %s", cache_dir,
                 strerror(errno));
        return;
    }
    size_t img = (size_t)d->rows * d->cols;
    struct cache_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, CACHE_MAGIC, 8);
    h.version = CACHE_VERSION;
    h.n_train = (uint32_t)d->n_train;
    h.n_test = (uint32_t)d->n_test;
    h.rows = (uint32_t)d->rows;
    h.cols = (uint32_t)d->cols;
    h.payload_len = (uint64_t)(d->n_train + d->n_test) * (img + 1);
    snprintf(h.key, sizeof h.key, "%s", key);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32_z(crc, d->train_x, (size_t)d->n_train * img);
    crc = crc32_z(crc, d->train_y, (size_t)d->n_train);
    crc = crc32_z(crc, d->test_x, (size_t)d->n_test * img);
    crc = crc32_z(crc, d->test_y, (size_t)d->n_test);
    h.payload_crc = (uint32_t)crc;
    char page[CACHE_HDR];
    memset(page, 0, sizeof page);
    memcpy(page, &h, sizeof h);
    train__part_t parts[5] = {{page, sizeof page},
                              {d->train_x, (size_t)d->n_train * img},
                              {d->train_y, (size_t)d->n_train},
                              {d->test_x, (size_t)d->n_test * img},
                              {d->test_y, (size_t)d->n_test}};
    int made;
    if (train__write_atomic(cache_dir, path + strlen(cache_dir) + 1, parts, 5, &made) != 0) {
        if (!made)
            snprintf(warn, warnlen, "not caching the decoded data set: cannot write in %s: %s",
                     cache_dir, strerror(errno));
        else
            snprintf(warn, warnlen, "not caching the decoded data set: writing %s failed: %s", path,
                     strerror(errno));
    }
}

int train_data_open(train_data_t **out, const char *dir, const char *cache_dir, char *warn,
                    size_t warnlen, char *err, size_t errlen)
{
    if (warn && warnlen) warn[0] = 0;
    char wbuf[512];
    if (!warn) {
        warn = wbuf;
        warnlen = sizeof wbuf;
    }
    train_data_t *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return TRAIN_ERR;
    }
    char key[3000], cpath[PATH_MAX];
    int rc = make_key(dir, key, sizeof key, err, errlen);
    if (rc) goto fail;
    int use_cache = cache_dir && *cache_dir && strcmp(cache_dir, "none") != 0;
    if (use_cache) {
        cache_path(cache_dir, key, cpath, sizeof cpath);
        if (cache_map(cpath, key, d) == 0) {
            *out = d;
            return 0;
        }
    }
    uint8_t *arr[4] = {0};
    uint32_t dims[4][3];
    for (int i = 0; i < 4; i++) {
        char p[PATH_MAX];
        source_path(dir, i, p, sizeof p);
        rc = read_idx(p, (i % 2) ? IDX_LABELS_MAGIC : IDX_IMAGES_MAGIC, &arr[i], dims[i], err,
                      errlen);
        if (rc) {
            for (int j = 0; j < i; j++)
                free(arr[j]);
            goto fail;
        }
    }
    for (int s = 0; s < 2; s++) {
        char p[PATH_MAX];
        source_path(dir, 2 * s + 1, p, sizeof p);
        if (dims[2 * s][0] != dims[2 * s + 1][0]) {
            snprintf(err, errlen, "%s: %u labels for %u images", p, dims[2 * s + 1][0],
                     dims[2 * s][0]);
            rc = TRAIN_EDATA;
        }
        for (uint32_t i = 0; !rc && i < dims[2 * s + 1][0]; i++)
            if (arr[2 * s + 1][i] > 9) {
                snprintf(err, errlen, "%s: label %u of item %u is not a class 0..9", p,
                         arr[2 * s + 1][i], i);
                rc = TRAIN_EDATA;
            }
    }
    /* one allocation, laid out like the cache file, so freeing is the same either way */
    size_t img = 28 * 28, ntr = dims[0][0], nte = dims[2][0];
    uint8_t *all = rc ? NULL : malloc((ntr + nte) * (img + 1));
    if (!rc && !all) {
        snprintf(err, errlen, "out of memory");
        rc = TRAIN_ERR;
    }
    if (!rc) {
        memcpy(all, arr[0], ntr * img);
        memcpy(all + ntr * img, arr[1], ntr);
        memcpy(all + ntr * (img + 1), arr[2], nte * img);
        memcpy(all + ntr * (img + 1) + nte * img, arr[3], nte);
    }
    for (int i = 0; i < 4; i++)
        free(arr[i]);
    if (rc) goto fail;
    d->n_train = (int)ntr;
    d->n_test = (int)nte;
    d->rows = d->cols = 28;
    d->train_x = all;
    d->train_y = all + ntr * img;
    d->test_x = all + ntr * (img + 1);
    d->test_y = d->test_x + nte * img;
    d->base = all;
    d->base_len = (ntr + nte) * (img + 1);
    if (use_cache) cache_write(cache_dir, cpath, key, d, warn, warnlen);
    *out = d;
    return 0;
fail:
    free(d);
    return rc;
}

void train_data_free(train_data_t *d)
{
    if (!d) return;
    if (d->mapped)
        munmap(d->base, d->base_len);
    else
        free(d->base);
    free(d);
}
