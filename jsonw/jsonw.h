/* jsonw: the one JSON string writer of tune's hand-built JSON (the report's data blob, the
 * trainer's result lines, tune-slurm-task's line, sim's result lines from a table, search's
 * exact-number printer): quotes, backslashes and control characters escaped as RFC 8259
 * says, with the short forms (\n, \t, \b, \f, \r) where JSON has them. Not for: parsing,
 * or JSON built as a tree (cJSON does that); include/tune_report.h keeps its own, being a
 * header users copy without a library. */
#ifndef TUNE_JSONW_H
#define TUNE_JSONW_H

#include <stddef.h>
#include <stdio.h>

/* Also escape '<', '>', '&' and DEL as \u003c, \u003e, \u0026, \u007f: a string that sits
 * inside an HTML <script> can then never hold "</script>" or "<!--" (the HTML spec's
 * script data rules). */
#define JSONW_HTML 1u

/* Where the pieces go: put gets n bytes at p (a run of plain bytes or one whole escape) and
 * returns 0, or non-zero to stop (an allocation or a write that failed). */
typedef int (*jsonw_put_cb)(void *ud, const char *p, size_t n);

/* s as a JSON string, quotes included, handed to put piece by piece; s NULL is written as
 * null. Returns 0, or the first non-zero put returned. */
int jsonw_quote_cb(const char *s, unsigned flags, jsonw_put_cb put, void *ud);

/* The same into out[n] (NUL-terminated when n > 0), as snprintf does: returns the length
 * the whole string needs, without the NUL, so a result >= n means it was cut (before the first
 * piece that did not fit whole: never inside an escape). */
size_t jsonw_quote(char *out, size_t n, const char *s, unsigned flags);

/* The same, written to f: 0, or -1 when a write failed. */
int jsonw_fquote(FILE *f, const char *s, unsigned flags);

#endif
