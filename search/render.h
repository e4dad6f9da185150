/* search/render.h: a configuration turned into text: the command template rendered into
 * a trial's argv, numbers printed so they read back exactly, and JSON printed with those
 * numbers. Not for: choosing configurations (space.h, searcher.h) or running the argv
 * (trial/). Ownership: every string and vector returned is new and the caller's (freed as
 * each function says). */
#ifndef TUNE_RENDER_H
#define TUNE_RENDER_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "search/space.h"

/* Renders the command template for one configuration: "{name}" becomes the value
 * (numbers printed so they read back exactly, strings as they are, other JSON as JSON),
 * "{a.b}" the value at that path in a nested object, "{trial_id}" and "{trial_dir}" the
 * given strings, "{{" and "}}" literal braces. An element whose "{a.b}" the
 * configuration lacks (a branch of a choice that was not drawn) is left out of argv; a
 * placeholder whose top-level parameter is missing is an error.
 * On success *argv_out is a new NULL-terminated vector freed with space_argv_free. */
int space_render_argv(const space_t *s, const cJSON *config, const char *trial_id,
                      const char *trial_dir, char ***argv_out, char *err, size_t errlen);
void space_argv_free(char **argv); /* NULL-safe */

/* Prints v in the shortest form that strtod reads back exactly ("0.1", "3", "1e-05").
 * Writes at most 32 bytes into buf and returns buf. */
char *space_format_number(double v, char buf[32]);

/* A JSON value as compact text with every number printed as space_format_number prints it
 * (cJSON_PrintUnformatted rounds to 15 digits), NaN and infinities as null. Every place
 * that prints a configuration (the store, TUNE_CONFIG, the cli) uses it, so each shows the
 * very double the trial's argv received. NULL when out of memory; the caller frees. */
char *space_json_print(const cJSON *v);
/* The same, laid out as cJSON_Print does (one object member a line, tab-indented). */
char *space_json_print_pretty(const cJSON *v);

#endif
