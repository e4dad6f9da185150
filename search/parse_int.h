/* search internals of the space.json parser, shared by its files: parse.c (the top level
 * and the parameters), settings.c (the settings sections), placeholders.c (the command
 * template), space.c (parsing's entry points) and parse_util.c (the helpers below). Not
 * for: anything outside those files; names here use the space__parse_ prefix. Every
 * helper that fails writes its message into the context's err and returns SPACE_EINVAL
 * (or SPACE_ENOMEM); the caller returns that code on. */
#ifndef TUNE_PARSE_INT_H
#define TUNE_PARSE_INT_H

#include <stddef.h>

#include "search/space_int.h"

/* No experiment is this large on purpose; the scheduler allocates per trial up front. */
#define SPACE_MAX_TRIALS 100000000u
#define SPACE_MAX_FILE (64u << 20)

/* One parse of one file: where messages point, and where they go. */
struct space__parse_ctx {
    const char *file;
    const char *text;
    size_t len;
    char *err;
    size_t errlen;
};

/* ---- messages (parse_util.c) ---------------------------------------------------------- */
/* An error at a byte offset of the file: "FILE:LINE:COL: message". */
int space__parse_at(struct space__parse_ctx *c, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An error with no position (a missing key): "FILE: key.path: message". */
int space__parse_at_path(struct space__parse_ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int space__parse_nomem(char *err, size_t errlen); /* "out of memory", SPACE_ENOMEM */
/* Writes ` (did you mean "x"?)` into buf, or nothing (space__suggest's choice). */
const char *space__parse_did_you_mean(const char *word, const char *const *cand, size_t n,
                                      char *buf, size_t len);
/* Quotes a user string for a message, cut short so a message stays readable. */
const char *space__parse_quoted(const char *s, char *buf, size_t len);
/* "a number", "a string", ... for messages. */
const char *space__parse_type_name(const sj_node_t *n);

/* ---- typed getters (parse_util.c): `what` is the whole message on a wrong value ------- */
/* An integral number within [min, max]. */
int space__parse_get_int(struct space__parse_ctx *c, const sj_node_t *n, long long min,
                         long long max, long long *out, const char *what);
/* A number >= min (> min when min_open). */
int space__parse_get_double(struct space__parse_ctx *c, const sj_node_t *n, double min,
                            int min_open, double *out, const char *what);
/* root's boolean key (default def). */
int space__parse_get_bool(struct space__parse_ctx *c, const sj_node_t *root, const char *key,
                          int def, int *out);
/* *dst = a copy of s, owned by the space being parsed. */
int space__parse_dup_str(char **dst, const char *s, char *err, size_t errlen);
/* Every key of obj must be in allowed[]; `where` names the object in the message. */
int space__parse_check_keys(struct space__parse_ctx *c, const sj_node_t *obj,
                            const char *const *allowed, size_t n, const char *where);
/* An array of strings as a new NULL-terminated vector in *out (set before the first
 * string, so the space frees a half-read one); *argc its length when not NULL. */
int space__parse_str_array(struct space__parse_ctx *c, const sj_node_t *n, const char *what,
                           char ***out, int *argc);
/* Adds a note for `tune validate`; out of memory only loses the note. */
void space__parse_note(space_t *sp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- the distributions (parse_util.c) ---------------------------------------------------
 * Every distribution space.json names, read by parse.c and named again by settings.c's
 * JSON and space_param_kind: in parse_util.c, below all three. */
struct space__parse_dist {
    const char *name;
    space_pkind_t kind;
    int nmin, nmax;      /* number of arguments; 0 for value lists */
    const char *sig;     /* for messages */
    const char *args[4]; /* argument names, for messages */
};
#define SPACE__PARSE_NDISTS 12
extern const struct space__parse_dist space__parse_dists[];
const char *space__parse_kind_name(space_pkind_t k); /* "loguniform", "constant", ... */

/* ---- the sections, in the order space__parse_root reads them ------------------------- */
/* The file's top level into sp, whose settings and parameters it fills in (parse.c). */
int space__parse_root(struct space__parse_ctx *c, space_t *sp, const sj_node_t *root);
/* "metric" and "mode", one objective or several, into metric/mode and metrics/modes/
 * nobjectives (parse_objectives.c). */
int space__parse_objectives(struct space__parse_ctx *c, space_settings_t *s, const sj_node_t *root);
/* "constraints" into constraints/nconstraints (parse_objectives.c). */
int space__parse_constraints(struct space__parse_ctx *c, space_settings_t *s,
                             const sj_node_t *root);
/* Everything before "space" (settings.c). */
int space__parse_settings(struct space__parse_ctx *c, space_settings_t *s, const sj_node_t *root);
/* "command" and its placeholders, once the parameters are read (placeholders.c). */
int space__parse_command(struct space__parse_ctx *c, space_t *sp, const sj_node_t *n);
/* "search", once the scheduler and the parameters are read (settings.c). */
int space__parse_search(struct space__parse_ctx *c, space_t *sp, const sj_node_t *root);

#endif
