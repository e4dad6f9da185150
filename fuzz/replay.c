/* replay: runs every file of the given corpus folders (and single files) through a fuzz
 * target's LLVMFuzzerTestOneInput, built with the normal compiler and no libFuzzer, so
 * that every seed and every crash ever found stays a ctest case (tests/fuzz.cmake).
 * Not for: fuzzing (that is the same target linked with -fsanitize=fuzzer). */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads the whole file; NULL with errno set on failure. The buffer is exactly *n bytes
 * (plus no terminator), so an overread by the parser is caught by ASan and valgrind. */
static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
        }
        size_t k = fread(buf + len, 1, cap - len, f);
        len += k;
        if (k == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    /* Exactly len bytes: shrink so the allocation ends where the input does. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        errno = ENOMEM;
        return NULL;
    }
    if (len) memcpy(exact, buf, len);
    free(buf);
    *n = len;
    return exact;
}

static int run_file(const char *path, long *count)
{
    size_t n = 0;
    uint8_t *data = slurp(path, &n);
    if (!data) {
        fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    LLVMFuzzerTestOneInput(data, n);
    free(data);
    (*count)++;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file in dir, in name order (so a failure names the same file each run),
 * skipping README files that explain the folder. */
static int run_dir(const char *dir, long *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t nn = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, "README", 6) == 0) continue;
        if (nn == cap) {
            cap = cap ? cap * 2 : 64;
            char **nb = realloc(names, cap * sizeof *nb);
            if (!nb) break;
            names = nb;
        }
        names[nn] = strdup(e->d_name);
        if (names[nn]) nn++;
    }
    closedir(d);
    if (nn) qsort(names, nn, sizeof *names, cmp_names);
    int rc = 0;
    for (size_t i = 0; i < nn; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && run_file(path, count) != 0) rc = -1;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    long count = 0, min = 1;
    int rc = 0, first = 1;
    /* --min N: fail unless at least N inputs ran, so an emptied corpus cannot pass. */
    if (argc > 2 && strcmp(argv[1], "--min") == 0) {
        min = atol(argv[2]);
        first = 3;
    }
    for (int i = first; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            rc = 1;
        } else if (S_ISDIR(sb.st_mode) ? run_dir(argv[i], &count) != 0
                                       : run_file(argv[i], &count) != 0) {
            rc = 1;
        }
    }
    fprintf(stderr, "replay: %ld inputs ran without a crash\n", count);
    if (count < min) {
        fprintf(stderr, "replay: expected at least %ld inputs\n", min);
        rc = 1;
    }
    return rc;
}
