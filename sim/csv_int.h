/* sim internals: the CSV reader and the result-line buffer of csv.c, for table.c, which
 * reads learning-curve tables with them. Not for use outside sim/ (sim.h is the API). */
#ifndef TUNE_SIM_CSV_INT_H
#define TUNE_SIM_CSV_INT_H

#include <stddef.h>

/* One CSV record: n fields, each a malloc'd, NUL-terminated copy (owned by the record;
 * sim__record_clear frees them, the caller frees f). */
struct sim_record {
    char **f;
    size_t n, cap;
};

/* Frees the record's fields and empties it (f is kept for the next record). */
void sim__record_clear(struct sim_record *r);
/* Reads one record from *p (advancing it). Returns 1 with r filled, 0 at the end of the
 * text, -1 on a malformed field (an unterminated quote) or out of memory. Blank lines are
 * skipped; *start gets the line the record starts on. */
int sim__read_record(const char **p, const char *end, struct sim_record *r, int *line, int *start);
/* A cell as a number: 1 with *v set (empty cells are not numbers; nan/NaN are NaN). */
int sim__cell_number(const char *s, double *v);

/* Appends text to the line being built: s is malloc'd (the caller frees it), oom set once
 * an allocation failed (later appends do nothing). */
struct sim_sbuf {
    char *s;
    size_t n, cap;
    int oom;
};

void sim__sb_add(struct sim_sbuf *b, const char *t, size_t len);
void sim__sb_str(struct sim_sbuf *b, const char *t);
/* A JSON string: quotes, backslashes and control characters escaped. */
void sim__sb_json_str(struct sim_sbuf *b, const char *t);
/* A number as JSON would hold it (NaN, Infinity, -Infinity as Python's json writes them). */
void sim__sb_num(struct sim_sbuf *b, double v);

#endif
