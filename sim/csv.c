/* sim/csv.c: the CSV reader the learning-curve tables are read with (RFC 4180) and the
 * buffer a replayed result line is built in, JSON-escaped. Not for: what the columns mean
 * or checking a table (table.c), or finding a configuration's curve (curves.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw/jsonw.h"
#include "search/render.h"
#include "sim/csv_int.h"

/* ---- CSV (RFC 4180: quoted fields with "" for a quote, \n or \r\n line ends) ------- */
void sim__record_clear(struct sim_record *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->f[i]);
    r->n = 0;
}

static int record_push(struct sim_record *r, const char *s, size_t len)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        char **f = realloc(r->f, cap * sizeof *f);
        if (!f) return -1;
        r->f = f;
        r->cap = cap;
    }
    char *c = malloc(len + 1);
    if (!c) return -1;
    memcpy(c, s, len);
    c[len] = 0;
    r->f[r->n++] = c;
    return 0;
}

/* Reads one record from *p (advancing it). Returns 1 with r filled, 0 at the end of the
 * text, -1 on a malformed field (an unterminated quote) or out of memory. Blank lines are
 * skipped; *start gets the line the record starts on. */
int sim__read_record(const char **p, const char *end, struct sim_record *r, int *line, int *start)
{
    sim__record_clear(r);
    while (*p < end && (**p == '\n' || **p == '\r')) {
        if (**p == '\n') (*line)++;
        (*p)++;
    }
    *start = *line;
    if (*p >= end) return 0;
    char *buf = NULL;
    size_t cap = 0;
    for (;;) {
        const char *s = *p;
        size_t len = 0;
        if (s < end && *s == '"') {
            /* quoted: copy with "" -> " */
            size_t k = 0;
            const char *q = s + 1;
            for (;;) {
                if (q >= end) {
                    free(buf);
                    return -1;
                }
                if (*q == '"') {
                    if (q + 1 < end && q[1] == '"') {
                        q++;
                    } else {
                        q++;
                        break;
                    }
                }
                if (*q == '\n') (*line)++;
                if (k + 1 >= cap) {
                    cap = cap ? cap * 2 : 64;
                    char *nb = realloc(buf, cap);
                    if (!nb) {
                        free(buf);
                        return -1;
                    }
                    buf = nb;
                }
                buf[k++] = *q++;
            }
            *p = q;
            if (record_push(r, buf ? buf : "", k) != 0) {
                free(buf);
                return -1;
            }
        } else {
            while (s + len < end && s[len] != ',' && s[len] != '\n' && s[len] != '\r')
                len++;
            *p = s + len;
            if (record_push(r, s, len) != 0) {
                free(buf);
                return -1;
            }
        }
        if (*p < end && **p == ',') {
            (*p)++;
            continue;
        }
        if (*p < end && **p == '\r') (*p)++;
        if (*p < end && **p == '\n') {
            (*p)++;
            (*line)++;
        }
        break;
    }
    free(buf);
    return 1;
}

/* A cell as a number: 1 with *v set (empty cells are not numbers; nan/NaN are NaN). */
int sim__cell_number(const char *s, double *v)
{
    if (!*s) return 0;
    if (strcmp(s, "nan") == 0 || strcmp(s, "NaN") == 0 || strcmp(s, "null") == 0) {
        *v = NAN;
        return 1;
    }
    char *e;
    errno = 0;
    double x = strtod(s, &e);
    if (*e || e == s) return 0;
    *v = x;
    return 1;
}

/* ---- building a result line ----------------------------------------------------- */
void sim__sb_add(struct sim_sbuf *b, const char *t, size_t len)
{
    if (b->oom) return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + len + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, t, len);
    b->n += len;
    b->s[b->n] = 0;
}

void sim__sb_str(struct sim_sbuf *b, const char *t)
{
    sim__sb_add(b, t, strlen(t));
}

static int sb_put(void *b, const char *t, size_t len)
{
    sim__sb_add(b, t, len);
    return 0;
}

/* A JSON string (jsonw), appended. */
void sim__sb_json_str(struct sim_sbuf *b, const char *t)
{
    jsonw_quote_cb(t, 0, sb_put, b);
}

void sim__sb_num(struct sim_sbuf *b, double v)
{
    char nb[32];
    if (isnan(v))
        sim__sb_str(b, "NaN");
    else if (isinf(v))
        sim__sb_str(b, v > 0 ? "Infinity" : "-Infinity");
    else
        sim__sb_str(b, space_format_number(v, nb));
}
