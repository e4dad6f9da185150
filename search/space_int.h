/* search internals: the position-tracking JSON reader, the parsed space and the
 * helpers the search/ files share. Not for: anything outside search/ (the public
 * contract is space.h and its sibling headers); names here use the space__ prefix. */
#ifndef TUNE_SPACE_INT_H
#define TUNE_SPACE_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "search/settings.h"
#include "search/space.h"

/* ---- JSON reader (json.c) ----------------------------------------------------------
 * cJSON keeps no positions, so space.json is read by this small reader first: every
 * value and every object key remembers its byte offset, which is turned into LINE:COL
 * only when a message needs it. It also rejects duplicate keys, which cJSON accepts. */
typedef enum { SJ_NULL, SJ_FALSE, SJ_TRUE, SJ_NUMBER, SJ_STRING, SJ_ARRAY, SJ_OBJECT } sj_type_t;

typedef struct sj_node {
    sj_type_t type;
    size_t off;                   /* byte offset of the value's first character */
    size_t key_off;               /* object members: byte offset of the key's opening quote */
    char *key;                    /* object members: the key, decoded */
    char *str;                    /* SJ_STRING: the decoded text (never contains NUL) */
    double num;                   /* SJ_NUMBER */
    int is_int;                   /* SJ_NUMBER written without fraction or exponent */
    char *raw;                    /* SJ_NUMBER: the token as written */
    struct sj_node *child, *last; /* SJ_ARRAY / SJ_OBJECT members in order */
    struct sj_node *next;
    size_t n; /* number of members */
} sj_node_t;

/* Parses text[0..len) into a tree the caller frees with space__json_free. On a syntax
 * error returns SPACE_EINVAL (or SPACE_ENOMEM), sets *err_off to where the problem is
 * and writes the reason (without position) into msg. */
int space__json_parse(const char *text, size_t len, sj_node_t **out, size_t *err_off, char *msg,
                      size_t msglen);
void space__json_free(sj_node_t *n); /* NULL-safe */
/* The member named key of an object, or NULL. */
sj_node_t *space__json_get(const sj_node_t *obj, const char *key);
/* The i-th member of an array or object, or NULL. */
sj_node_t *space__json_at(const sj_node_t *arr, size_t i);
/* A cJSON copy of n (caller frees), or NULL when out of memory. */
cJSON *space__json_to_cjson(const sj_node_t *n);
/* 1-based line and column (columns count characters, not bytes) of byte offset off. */
void space__json_pos(const char *text, size_t len, size_t off, int *line, int *col);

/* ---- the parsed experiment (parse.c) --------------------------------------------- */
typedef enum {
    SPACE_P_CONSTANT,
    SPACE_P_UNIFORM,
    SPACE_P_QUNIFORM,
    SPACE_P_LOGUNIFORM,
    SPACE_P_QLOGUNIFORM,
    SPACE_P_RANDN,
    SPACE_P_QRANDN,
    SPACE_P_RANDINT,
    SPACE_P_QRANDINT,
    SPACE_P_LOGRANDINT,
    SPACE_P_QLOGRANDINT,
    SPACE_P_CHOICE,
    SPACE_P_GRID,
    SPACE_P_OBJECT /* a plain object with distributions somewhere inside (a nested space) */
} space_pkind_t;

/* A multiple-of-q grid: the values k*q for kmin <= k <= kmax. When q has a short
 * decimal form (0.1, 0.25, 5) qscaled/qdigits hold q = qscaled / 10^qdigits, so k*q can
 * be computed as the exact integer k*qscaled divided once by 10^qdigits: the result is
 * the double nearest the decimal k*q, i.e. what strtod("0.3") gives, never
 * 0.30000000000000004. */
typedef struct space_quant {
    double q;
    int64_t kmin, kmax;
    int qdigits; /* -1 when q has no decimal form of at most 15 digits */
    int64_t qscaled;
} space_quant_t;

/* One node of the space: a top-level parameter, a member of a nested object, or one
 * value of a choice/grid_search whose values hold distributions (docs/space.md, "Nested
 * spaces"). A flat space has top-level nodes only, each with alts and members NULL. */
typedef struct space_param {
    char *name; /* parameter name, or the member's key; NULL for a choice/grid value */
    space_pkind_t kind;
    double a, b;    /* low/high, or mean/sd for randn */
    double base;    /* loguniform family: as written (the distribution does not depend on it) */
    int64_t ia, ib; /* integer bounds (randint family) */
    space_quant_t qu;
    cJSON *values; /* choice/grid: the array of values; constant: the value */
    size_t nvalues;
    size_t grid_stride; /* grid: how many grid points pass before this one changes */
    /* choice/grid whose values hold a distribution: one node per value (nvalues of them),
     * sampled when drawn; NULL when every value is a constant (then values is copied). */
    struct space_param *alts;
    struct space_param *members; /* SPACE_P_OBJECT: one node per key, in file order */
    size_t nmembers;
    /* The random stream this node draws from, with (seed, trial index): a top-level
     * parameter's position in "space" (what a flat space has always used), or below it a
     * hash of that position and the path of keys, so that adding a branch or a key leaves
     * the others' draws alone. */
    uint64_t rkey;
    /* grid: the path of keys from "space" down, separated by NUL bytes, so that sorting it
     * bytewise sorts as Ray Tune sorts its path tuples. */
    char *gpath;
    size_t gpath_len;
} space_param_t;

struct space {
    space_settings_t set;
    char *text; /* the file as read, NUL-terminated */
    size_t text_len;
    space_param_t *params;
    size_t nparams;
    size_t n_grid_points; /* product of the grid sizes (1 without grids) */
    size_t num_trials;
    /* PBT's "hyperparam_mutations": nmuts nodes, each mutating top-level parameter
     * mut_pos[i]; none when the scheduler has no such key (then every mutable parameter
     * is mutated with its own distribution). */
    space_param_t *muts;
    size_t *mut_pos;
    size_t nmuts;
    char **notes; /* remarks for `tune validate` (space_note), nnotes of them */
    size_t nnotes;
};

/* ---- a kind's scale and a stepped parameter's values (unit.c) -------------------------
 * Below everything that parses, samples or models: each of those asks, none is asked. */
/* Integers above 2^53 cannot all be held by a double (and so by JSON readers). */
#define SPACE_MAX_EXACT 9007199254740992.0
/* loguniform, qloguniform, lograndint, qlograndint: modelled on a log scale. */
int space__is_log_kind(space_pkind_t k);
/* q * k printed cleanly (see space_quant_t). */
double space__quant_value(const space_quant_t *qu, int64_t k);

/* ---- command templates (render.c) -------------------------------------------------
 * Walks one argv element: each call yields the next piece, either literal text or a
 * placeholder name. Returns 1 with a piece, 0 at the end, or -1 on a malformed template
 * with *at pointing at the offending brace and msg saying why. */
typedef struct space_tmpl_piece {
    const char *s; /* literal text, or the placeholder's name */
    size_t len;
    int is_name;
} space_tmpl_piece_t;
/* The {max_t} placeholder: the scheduler's max_t, where it has one (asha, median, and pbt
 * when it was given; fifo runs trials to their end). */
static inline int space__is_max_t(const char *name, size_t len)
{
    return len == 5 && memcmp(name, "max_t", 5) == 0;
}
static inline int space__has_max_t(const space_settings_t *set)
{
    return set->sched.type != SPACE_SCHED_FIFO && set->sched.max_t > 0;
}

int space__tmpl_next(const char **p, space_tmpl_piece_t *piece, const char **at, char *msg,
                     size_t msglen);

/* The value a placeholder name (len bytes, not NUL-terminated) stands for in a
 * configuration: the member of obj named exactly so if there is one, else a dotted path
 * "a.b.c" walked through nested objects (a key that itself holds dots is matched whole
 * first). Sets *head when some leading part of the name is a key of obj, i.e. the name is
 * a nested value this configuration does not have rather than no parameter at all. Returns
 * NULL when there is no such value (render.c). */
const cJSON *space__lookup(const cJSON *obj, const char *name, size_t len, int *head);

/* strtod in the C locale whatever LC_NUMERIC says (render.c). */
double space__strtod(const char *s);

/* ---- small helpers (parse_util.c) -------------------------------------------------------- */
/* The candidate closest to word by edit distance (case-insensitive, transpositions count
 * as one edit), or NULL when none is close enough to be a plausible typo. */
const char *space__suggest(const char *word, const char *const *candidates, size_t n);

/* ---- random streams (shared by sample.c and the TPE searcher) ------------------------
 * splitmix64 (Steele, Lea, Flood 2014) turns a key into an independent 256-bit state and
 * xoshiro256** (Blackman & Vigna 2018) draws from it. Only integer arithmetic decides
 * which values come out; doubles are built from the top 53 bits, so draws do not depend
 * on the compiler or CPU. Each user derives its keys apart (sample.c per (seed, trial,
 * parameter), the searcher per (seed, trial) with its own tag). */
#define SPACE__GOLDEN 0x9e3779b97f4a7c15ULL

static inline uint64_t space__mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

typedef struct space__rng {
    uint64_t s[4];
} space__rng_t;

/* The state for a key: four steps of splitmix64. */
static inline void space__rng_key(space__rng_t *r, uint64_t key)
{
    for (int i = 0; i < 4; i++) {
        key += SPACE__GOLDEN;
        r->s[i] = space__mix64(key);
    }
}

static inline uint64_t space__rng_next(space__rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t x = s[1] * 5;
    uint64_t result = ((x << 7) | (x >> 57)) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double space__rng_uniform(space__rng_t *r)
{
    return (double)(space__rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n), n >= 1, without modulo bias (rejects the short last block). */
static inline uint64_t space__rng_below(space__rng_t *r, uint64_t n)
{
    uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t x = space__rng_next(r);
        if (x >= threshold) return x % n;
    }
}

/* One node's value drawn from the stream r (sample.c): what space_sample draws for it
 * with the stream of (seed, trial index, node), and what PBT's resample draws with a
 * stream of its own. index picks a grid point and keys nested nodes' own streams. */
cJSON *space__draw_node(const space_t *s, const space_param_t *P, space__rng_t *r, size_t index);

#endif
