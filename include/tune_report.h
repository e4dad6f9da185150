/* tune_report.h: report results to tune from a C or C++ trial. One header, no library:
 * copy it next to your program or add tune's include/ to the include path.
 *
 *     tune_report_t r;
 *     tune_report_begin(&r);
 *     tune_report_int(&r, "training_iteration", epoch);
 *     tune_report_num(&r, "loss", loss);
 *     tune_report_end(&r);
 *
 * Each report is one JSON object on one line of stdout, flushed at tune_report_end: every
 * stdout line that is a JSON object is a result to tune (README, "Trials"). Keys and string
 * values are escaped; NaN and infinities are written as null (tune records a missing
 * metric); doubles are printed with 17 significant digits, so they read back exactly.
 * Under a launcher that sets RANK (torchrun, MPI wrappers), only rank 0 writes.
 *
 * A report is built in a fixed buffer of TUNE_REPORT_MAX bytes (define it before including
 * to change it): one that does not fit is not written, and tune_report_end returns -1.
 * Not for: reading anything back from tune (the configuration is in your arguments and in
 * the TUNE_CONFIG environment variable). */
#ifndef TUNE_REPORT_H
#define TUNE_REPORT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TUNE_REPORT_MAX
#define TUNE_REPORT_MAX 4096
#endif

typedef struct tune_report {
    char buf[TUNE_REPORT_MAX];
    size_t len;
    int n;        /* key/value pairs so far */
    int overflow; /* the report did not fit in buf */
    FILE *out;    /* stdout, set by tune_report_begin; may be changed after it */
} tune_report_t;

static inline void tune_report__put(tune_report_t *r, const char *s, size_t n)
{
    /* Two bytes stay free for the closing "}\n". */
    if (r->overflow || r->len + n + 2 > sizeof r->buf) {
        r->overflow = 1;
        return;
    }
    memcpy(r->buf + r->len, s, n);
    r->len += n;
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static inline void tune_report__str(tune_report_t *r, const char *s)
{
    tune_report__put(r, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\', esc[1] = (char)*p;
            tune_report__put(r, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            tune_report__put(r, esc, 6);
        } else {
            tune_report__put(r, (const char *)p, 1);
        }
    }
    tune_report__put(r, "\"", 1);
}

static inline void tune_report__key(tune_report_t *r, const char *key)
{
    if (r->n++) tune_report__put(r, ", ", 2);
    tune_report__str(r, key);
    tune_report__put(r, ": ", 2);
}

/* Starts a report (writing to stdout). */
static inline void tune_report_begin(tune_report_t *r)
{
    r->len = 0;
    r->n = 0;
    r->overflow = 0;
    r->out = stdout;
    tune_report__put(r, "{", 1);
}

/* Adds a number; NaN and infinities become null. */
static inline void tune_report_num(tune_report_t *r, const char *key, double v)
{
    char b[40];
    tune_report__key(r, key);
    if (!isfinite(v)) {
        tune_report__put(r, "null", 4);
        return;
    }
    int k = snprintf(b, sizeof b, "%.17g", v);
    tune_report__put(r, b, (size_t)k);
}

/* Adds a whole number, e.g. training_iteration. */
static inline void tune_report_int(tune_report_t *r, const char *key, long long v)
{
    char b[32];
    tune_report__key(r, key);
    int k = snprintf(b, sizeof b, "%lld", v);
    tune_report__put(r, b, (size_t)k);
}

/* Adds a string (NULL is written as null). */
static inline void tune_report_str(tune_report_t *r, const char *key, const char *v)
{
    tune_report__key(r, key);
    if (v)
        tune_report__str(r, v);
    else
        tune_report__put(r, "null", 4);
}

/* Adds true or false. */
/* Names the checkpoint saved for this result (the "checkpoint" key). Save it completely
 * first (write a temporary file, then rename() it over the real name), then report it; a
 * trial started again finds its newest checkpoint in $TUNE_RESUME_FROM. */
static inline void tune_report_checkpoint(tune_report_t *r, const char *path)
{
    tune_report_str(r, "checkpoint", path);
}

static inline void tune_report_bool(tune_report_t *r, const char *key, int v)
{
    tune_report__key(r, key);
    tune_report__put(r, v ? "true" : "false", v ? 4 : 5);
}

/* Writes the report as one line and flushes it. Returns 0 when written (or skipped on a
 * rank other than 0), -1 when it did not fit in TUNE_REPORT_MAX bytes or the write failed. */
static inline int tune_report_end(tune_report_t *r)
{
    if (r->overflow) return -1;
    const char *rank = getenv("RANK");
    if (rank && strcmp(rank, "0") != 0) return 0;
    memcpy(r->buf + r->len, "}\n", 2); /* tune_report__put kept room for it */
    if (fwrite(r->buf, 1, r->len + 2, r->out) != r->len + 2) return -1;
    return fflush(r->out) == 0 ? 0 : -1;
}

#endif
