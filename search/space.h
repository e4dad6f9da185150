/* search/space.h: the experiment file (space.json) as a parsed space: parse or load it,
 * read its parameters, and sample a trial's configuration reproducibly from the seed. Not
 * for: the settings' fields (settings.h), rendering argv or printing JSON (render.h),
 * PBT's explore (explore.h) or the searcher (searcher.h); nor for running trials or
 * storing anything. What it produces is plain data (cJSON configurations) for cli and
 * scheduler. Ownership: a space_t is the caller's from space_parse/space_load until
 * space_free; everything a space hands out by pointer (names, settings, notes, the text)
 * lives as long as it does; configurations are the caller's to cJSON_Delete. */
#ifndef TUNE_SPACE_H
#define TUNE_SPACE_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Error codes (negative), returned by every function in search/ that can fail. */
#define SPACE_OK 0
#define SPACE_EINVAL (-1) /* the file is wrong: the message says where and why */
#define SPACE_EIO (-2)    /* the file could not be read */
#define SPACE_ENOMEM (-3)

typedef struct space space_t;
/* The settings (everything in space.json but "space"): their fields are in settings.h. */
typedef struct space_settings space_settings_t;

/* Parses an experiment file held in memory. `filename` is used only in messages,
 * which look like "space.json:12:7: \"loguniform\" needs low > 0" (or
 * "space.json: space.lr: ..." where there is no position). On success *out is a new
 * space the caller frees with space_free; on failure *out is untouched and err holds
 * the message. */
int space_parse(const char *text, size_t len, const char *filename, space_t **out, char *err,
                size_t errlen);
/* Reads and parses a file: space_parse on its contents. */
int space_load(const char *path, space_t **out, char *err, size_t errlen);
void space_free(space_t *s); /* NULL-safe */

const space_settings_t *space_settings(const space_t *s);
/* Gives the experiment another name (checked as space_check_name does), e.g. "exp-2"
 * when `tune run --restart` must not reuse an existing one. Added for cli. */
int space_rename(space_t *s, const char *name, char *err, size_t errlen);
const char *space_text(const space_t *s); /* the file as read, for the store */
/* Grows the experiment to n trials (n >= the current count): trials past the file's own
 * count continue the seed's sequence (further repeats in Ray Tune's order), which is what
 * `tune run --more` and `tune extend` add. 0 or SPACE_EINVAL. */
int space_set_num_trials(space_t *s, size_t n, char *err, size_t errlen);

/* The candidate closest to word (the spelling-mistake distance space.json's messages use
 * for "did you mean"), or NULL when none is close enough. */
const char *space_suggest(const char *word, const char *const *candidates, size_t n);

/* Number of trials the experiment has: num_samples x (product of grid sizes). */
size_t space_num_trials(const space_t *s);

/* Parameters, in the order space.json declares them. */
size_t space_num_params(const space_t *s);
const char *space_param_name(const space_t *s, size_t i);
/* Distribution name as written ("loguniform", "choice", "grid_search", "constant", ...),
 * or "object" for an object of distributions (a nested space). */
const char *space_param_kind(const space_t *s, size_t i);
int space_param_is_log(const space_t *s, size_t i); /* loguniform / qloguniform / lograndint */

/* Remarks about a file that is valid but may not do what its author means, for
 * `tune validate` to print: a parameter no {placeholder} uses ("the trial sees it only
 * through TUNE_CONFIG"), a placeholder that only some branches of a choice have. The i-th
 * note, or NULL past the last one; owned by the space. */
const char *space_note(const space_t *s, size_t i);

/* The configuration of trial `index` (0-based), a pure function of (seed, index): the
 * same on any machine and in any order of calls, which is what resume relies on.
 * Ray Tune's order: index = repeat * n_grid_points + grid_point. On success *out is a
 * new JSON object (keys in declaration order) the caller cJSON_Delete()s. */
int space_sample(const space_t *s, size_t index, cJSON **out, char *err, size_t errlen);

/* Checks an experiment name ([A-Za-z0-9_.-]+, not "."/"..", not beginning with '-' (it
 * would read as an option), <= 100 chars) so it can
 * never escape the results directory. Returns 0 or SPACE_EINVAL with a message. */
int space_check_name(const char *name, char *err, size_t errlen);

/* Parameter i's value v in the parameter's own scale, mapped to [0, 1]: the range
 * [low, high] linearly (logarithmically for log-scaled kinds; randint's high is
 * exclusive), mean +- 3 sd for randn, the value's position for choice and grid_search
 * (index / (n - 1)), 0.5 for a constant. Values outside the range are clamped. Returns 0
 * with *u set, or SPACE_EINVAL when v is not a value of the parameter (a string for a
 * number, a value no choice lists). Searchers model in this scale; the simulator measures
 * distances in it. */
int space_param_unit(const space_t *s, size_t i, const cJSON *v, double *u);
/* How far apart two values of parameter i are, in [0, 1]: |unit(a) - unit(b)| for
 * numeric kinds, 0 or 1 for choice, grid_search and constants (another value is another
 * category); NaN when either is not a value of the parameter. */
double space_param_distance(const space_t *s, size_t i, const cJSON *a, const cJSON *b);

#endif
