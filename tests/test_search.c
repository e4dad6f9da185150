/* tests for search/: parsing space.json, every error message with its LINE:COL, the
 * distributions' bounds and shapes, reproducibility from the seed, grid order and argv
 * rendering. Not for: running trials (scheduler and trial tests do that). */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search/render.h"
#include "search/settings.h"
#include "search/space.h"
#include "tinytest.h"

#define FILE_NAME "t.json"

static const char *const example_json =
    "{\n"
    "  \"name\": \"fmnist-asha\",\n"
    "  \"metric\": \"loss\", \"mode\": \"min\",\n"
    "  \"num_samples\": 32, \"max_concurrent\": 4, \"seed\": 0,\n"
    "  \"command\": [\"tune-train\", \"--lr\", \"{lr}\", \"--batch-size\", \"{batch_size}\"],\n"
    "  \"resources\": {\"gpus_per_trial\": 1, \"cpus_per_trial\": 1},\n"
    "  \"scheduler\": {\"type\": \"asha\", \"time_attr\": \"training_iteration\", \"max_t\": 81,\n"
    "                \"grace_period\": 1, \"reduction_factor\": 3, \"brackets\": 1},\n"
    "  \"space\": {\n"
    "    \"lr\": {\"loguniform\": [1e-4, 1e-1]},\n"
    "    \"batch_size\": {\"choice\": [16, 32, 64, 128]},\n"
    "    \"momentum\": {\"uniform\": [0.5, 0.99]},\n"
    "    \"layers\": {\"grid_search\": [1, 2]}\n"
    "  }\n"
    "}\n";

static char g_err[2048];

/* Parses json (which must be valid); NULL and a printed message otherwise. */
static space_t *parse(const char *json)
{
    space_t *s = NULL;
    g_err[0] = '\0';
    if (space_parse(json, strlen(json), FILE_NAME, &s, g_err, sizeof g_err) != 0) {
        fprintf(stderr, "unexpected parse error: %s\n", g_err);
        return NULL;
    }
    return s;
}

/* The message space_parse gives for json, or "(parsed fine)". */
static const char *parse_err(const char *json)
{
    space_t *s = NULL;
    snprintf(g_err, sizeof g_err, "(no message)");
    int rc = space_parse(json, strlen(json), FILE_NAME, &s, g_err, sizeof g_err);
    if (rc == 0) {
        space_free(s);
        snprintf(g_err, sizeof g_err, "(parsed fine)");
    } else if (rc != SPACE_EINVAL) {
        snprintf(g_err, sizeof g_err, "(rc %d, not SPACE_EINVAL)", rc);
    }
    return g_err;
}

/* A valid document with `extra` members placed at the start of line 2, so that a
 * needle's column in `extra` is its column in the file. */
static char g_doc[8192];
static const char *doc(const char *extra)
{
    snprintf(g_doc, sizeof g_doc, "{\"name\": \"t\", \"command\": [\"run\"],\n%s}", extra);
    return g_doc;
}

/* Checks that doc(extra) fails with "t.json:2:COL: msg", COL being where `needle` is in
 * extra (occurrence `nth`, 0-based). */
static int expect_at_n(const char *extra, const char *needle, int nth, const char *msg)
{
    const char *p = extra;
    for (int i = 0; p && i <= nth; i++) {
        p = strstr(i ? p + 1 : p, needle);
    }
    if (!p) {
        fprintf(stderr, "test bug: needle %s not in %s\n", needle, extra);
        return 0;
    }
    char want[2048];
    snprintf(want, sizeof want, "%s:2:%d: %s", FILE_NAME, (int)(p - extra) + 1, msg);
    const char *got = parse_err(doc(extra));
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "  want: %s\n  got:  %s\n", want, got);
        return 0;
    }
    return 1;
}
#define EXPECT_AT(extra, needle, msg) CHECK(expect_at_n(extra, needle, 0, msg))
#define EXPECT_AT_N(extra, needle, nth, msg) CHECK(expect_at_n(extra, needle, nth, msg))

static cJSON *sample(const space_t *s, size_t i)
{
    cJSON *c = NULL;
    char err[256];
    if (space_sample(s, i, &c, err, sizeof err) != 0) {
        fprintf(stderr, "sample %zu failed: %s\n", i, err);
        return NULL;
    }
    return c;
}

static double num(const cJSON *c, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* A space with one parameter `p` drawn n times (num_samples n). */
static space_t *one_param(const char *dist, int n, unsigned seed)
{
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"name\":\"d\",\"command\":[\"x\"],\"num_samples\":%d,\"seed\":%u,"
             "\"space\":{\"p\":%s}}",
             n, seed, dist);
    return parse(buf);
}

/* ---- parsing -------------------------------------------------------------------------- */
TEST(parse_example)
{
    space_t *s = parse(example_json);
    REQUIRE(s);
    const space_settings_t *t = space_settings(s);
    CHECK_STR(t->name, "fmnist-asha");
    CHECK_STR(t->metric, "loss");
    CHECK_EQ_INT(t->mode, SPACE_MODE_MIN);
    CHECK_EQ_INT(t->num_samples, 32);
    CHECK_EQ_INT(t->max_concurrent, 4);
    CHECK_EQ_INT(t->seed, 0);
    CHECK_EQ_INT(t->command_argc, 5);
    CHECK_STR(t->command[0], "tune-train");
    CHECK_STR(t->command[4], "{batch_size}");
    CHECK(t->command[5] == NULL);
    CHECK_NEAR(t->gpus_per_trial, 1, 0);
    CHECK_EQ_INT(t->cpus_per_trial, 1);
    CHECK_EQ_INT(t->sched.type, SPACE_SCHED_ASHA);
    CHECK_STR(t->sched.time_attr, "training_iteration");
    CHECK_NEAR(t->sched.max_t, 81, 0);
    CHECK_NEAR(t->sched.grace_period, 1, 0);
    CHECK_NEAR(t->sched.reduction_factor, 3, 0);
    CHECK_EQ_INT(t->sched.brackets, 1);
    CHECK_EQ_INT(t->exec.type, SPACE_EXEC_LOCAL);
    CHECK(t->exec.srun_args == NULL);
    CHECK(t->exec.allocation == NULL);
    CHECK_NEAR(t->stop_grace_s, 5, 0);
    CHECK_NEAR(t->status_interval_s, 30, 0);
    CHECK_NEAR(t->result_timeout_s, 0, 0);
    CHECK_NEAR(t->time_budget_s, 0, 0);
    CHECK_EQ_INT(t->max_failures, 0);
    CHECK_EQ_INT(space_num_trials(s), 64);
    REQUIRE(space_num_params(s) == 4);
    CHECK_STR(space_param_name(s, 0), "lr");
    CHECK_STR(space_param_name(s, 1), "batch_size");
    CHECK_STR(space_param_name(s, 2), "momentum");
    CHECK_STR(space_param_name(s, 3), "layers");
    CHECK(space_param_name(s, 4) == NULL);
    CHECK_STR(space_param_kind(s, 0), "loguniform");
    CHECK_STR(space_param_kind(s, 1), "choice");
    CHECK_STR(space_param_kind(s, 2), "uniform");
    CHECK_STR(space_param_kind(s, 3), "grid_search");
    CHECK(space_param_is_log(s, 0));
    CHECK(!space_param_is_log(s, 1));
    CHECK(!space_param_is_log(s, 2));
    CHECK_STR(space_text(s), example_json);
    space_free(s);
}

TEST(parse_defaults)
{
    space_t *s = parse("{\"name\": \"x\", \"command\": [\"a\"]}");
    REQUIRE(s);
    const space_settings_t *t = space_settings(s);
    CHECK(t->metric == NULL);
    CHECK_EQ_INT(t->mode, SPACE_MODE_MIN);
    CHECK_EQ_INT(t->num_samples, 1);
    CHECK_EQ_INT(t->max_concurrent, 0);
    CHECK_EQ_INT(t->seed, 0);
    CHECK_NEAR(t->gpus_per_trial, 0, 0);
    CHECK_EQ_INT(t->cpus_per_trial, 1);
    /* Ray Tune's ASHAScheduler defaults. */
    CHECK_EQ_INT(t->sched.type, SPACE_SCHED_FIFO);
    CHECK_STR(t->sched.time_attr, "training_iteration");
    CHECK_NEAR(t->sched.max_t, 100, 0);
    CHECK_NEAR(t->sched.grace_period, 1, 0);
    CHECK_NEAR(t->sched.reduction_factor, 4, 0);
    CHECK_EQ_INT(t->sched.brackets, 1);
    CHECK_EQ_INT(t->sched.min_samples_required, 3);
    CHECK_EQ_INT(t->exec.type, SPACE_EXEC_LOCAL);
    CHECK_NEAR(t->stop_grace_s, 5, 0);
    CHECK_NEAR(t->status_interval_s, 30, 0);
    CHECK_EQ_INT(space_num_trials(s), 1);
    CHECK_EQ_INT(space_num_params(s), 0);
    cJSON *c = sample(s, 0);
    REQUIRE(c);
    CHECK_EQ_INT(cJSON_GetArraySize(c), 0);
    cJSON_Delete(c);
    space_free(s);
}

TEST(parse_asha_defaults)
{
    space_t *s = parse("{\"name\":\"x\",\"command\":[\"a\"],\"metric\":\"acc\",\"mode\":\"max\","
                       "\"scheduler\":{\"type\":\"asha\"}}");
    REQUIRE(s);
    const space_settings_t *t = space_settings(s);
    CHECK_EQ_INT(t->mode, SPACE_MODE_MAX);
    CHECK_EQ_INT(t->sched.type, SPACE_SCHED_ASHA);
    CHECK_NEAR(t->sched.max_t, 100, 0);
    CHECK_NEAR(t->sched.grace_period, 1, 0);
    CHECK_NEAR(t->sched.reduction_factor, 4, 0);
    CHECK_EQ_INT(t->sched.brackets, 1);
    space_free(s);
}

TEST(parse_median)
{
    space_t *s = parse("{\"name\":\"x\",\"command\":[\"a\"],\"metric\":\"acc\",\"mode\":\"max\","
                       "\"scheduler\":{\"type\":\"median\",\"min_samples_required\":5,"
                       "\"grace_period\":10,\"time_attr\":\"epoch\",\"max_t\":50}}");
    REQUIRE(s);
    const space_settings_t *t = space_settings(s);
    CHECK_EQ_INT(t->sched.type, SPACE_SCHED_MEDIAN);
    CHECK_EQ_INT(t->sched.min_samples_required, 5);
    CHECK_NEAR(t->sched.grace_period, 10, 0);
    CHECK_NEAR(t->sched.max_t, 50, 0);
    CHECK_STR(t->sched.time_attr, "epoch");
    space_free(s);
}

TEST(median_grace_period_zero_accepted)
{
    /* Ray's MedianStoppingRule takes grace_period 0 (its tests use it throughout); asha's
     * first rung must stay above 0. */
    space_t *s = parse("{\"name\":\"x\",\"command\":[\"a\"],\"metric\":\"acc\",\"mode\":\"max\","
                       "\"scheduler\":{\"type\":\"median\",\"grace_period\":0}}");
    REQUIRE(s);
    CHECK_NEAR(space_settings(s)->sched.grace_period, 0, 0);
    space_free(s);
    const char *mm = "\"metric\": \"m\", \"mode\": \"min\", ";
    char b[512];
    snprintf(b, sizeof b, "%s\"scheduler\": {\"type\": \"median\", \"grace_period\": -1}", mm);
    EXPECT_AT(b, "-1", "\"grace_period\" must be a number >= 0");
    snprintf(b, sizeof b, "%s\"scheduler\": {\"grace_period\": 0, \"type\": \"asha\"}", mm);
    EXPECT_AT(b, "0,", "\"grace_period\" must be a number > 0");
}

TEST(parse_optional_keys)
{
    space_t *s = parse(
        "{\"name\":\"x\",\"command\":[\"a\"],\"stop_grace_s\":2.5,\"status_interval_s\":10,"
        "\"result_timeout_s\":600,\"time_budget_s\":3600,\"max_failures\":2,"
        "\"executor\":{\"type\":\"slurm\",\"srun_args\":[\"--exclusive\",\"-p\",\"gpu\"],"
        "\"allocation\":123456},\"resources\":{\"gpus_per_trial\":0.25,\"cpus_per_trial\":4}}");
    REQUIRE(s);
    const space_settings_t *t = space_settings(s);
    CHECK_NEAR(t->stop_grace_s, 2.5, 0);
    CHECK_NEAR(t->status_interval_s, 10, 0);
    CHECK_NEAR(t->result_timeout_s, 600, 0);
    CHECK_NEAR(t->time_budget_s, 3600, 0);
    CHECK_EQ_INT(t->max_failures, 2);
    CHECK_EQ_INT(t->exec.type, SPACE_EXEC_SLURM);
    REQUIRE(t->exec.srun_args);
    CHECK_STR(t->exec.srun_args[0], "--exclusive");
    CHECK_STR(t->exec.srun_args[2], "gpu");
    CHECK(t->exec.srun_args[3] == NULL);
    CHECK_STR(t->exec.allocation, "123456");
    CHECK_NEAR(t->gpus_per_trial, 0.25, 0);
    CHECK_EQ_INT(t->cpus_per_trial, 4);
    space_free(s);

    s = parse("{\"name\":\"x\",\"command\":[\"a\"],\"executor\":{\"type\":\"slurm\","
              "\"allocation\":\"777_3\",\"srun_args\":[]}}");
    REQUIRE(s);
    CHECK_STR(space_settings(s)->exec.allocation, "777_3");
    CHECK(space_settings(s)->exec.srun_args == NULL);
    space_free(s);
}

TEST(parse_big_seed_exact)
{
    space_t *s = parse("{\"name\":\"x\",\"command\":[\"a\"],\"seed\":18446744073709551615}");
    REQUIRE(s);
    CHECK(space_settings(s)->seed == UINT64_MAX);
    cJSON *j = space_settings_json(s);
    REQUIRE(j);
    char *txt = cJSON_PrintUnformatted(j);
    CHECK_CONTAINS(txt, "\"seed\":18446744073709551615");
    free(txt);
    cJSON_Delete(j);
    space_free(s);
}

TEST(gpus_fractions_accepted)
{
    const char *ok[] = {
        "0",     "1",  "2", "8", "0.5", "0.25", "0.2", "0.333333333", "0.3333333333333333",
        "0.125", "4.0"};
    double want[] = {0, 1, 2, 8, 0.5, 0.25, 0.2, 1.0 / 3, 1.0 / 3, 0.125, 4};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char buf[256];
        snprintf(buf, sizeof buf,
                 "{\"name\":\"x\",\"command\":[\"a\"],\"resources\":{\"gpus_per_trial\":%s}}",
                 ok[i]);
        space_t *s = parse(buf);
        CHECK(s != NULL);
        if (s) CHECK(space_settings(s)->gpus_per_trial == want[i]);
        space_free(s);
    }
}

TEST(settings_json_resolved)
{
    space_t *s = parse(example_json);
    REQUIRE(s);
    cJSON *j = space_settings_json(s);
    REQUIRE(j);
    CHECK_STR(cJSON_GetObjectItem(j, "name")->valuestring, "fmnist-asha");
    CHECK_STR(cJSON_GetObjectItem(j, "metric")->valuestring, "loss");
    CHECK_STR(cJSON_GetObjectItem(j, "mode")->valuestring, "min");
    CHECK_NEAR(num(j, "num_samples"), 32, 0);
    CHECK_NEAR(num(j, "num_trials"), 64, 0);
    CHECK_NEAR(num(j, "stop_grace_s"), 5, 0);
    cJSON *sc = cJSON_GetObjectItem(j, "scheduler");
    REQUIRE(sc);
    CHECK_STR(cJSON_GetObjectItem(sc, "type")->valuestring, "asha");
    CHECK_NEAR(num(sc, "max_t"), 81, 0);
    CHECK_NEAR(num(sc, "reduction_factor"), 3, 0);
    CHECK_NEAR(num(sc, "min_samples_required"), 3, 0);
    cJSON *res = cJSON_GetObjectItem(j, "resources");
    CHECK_NEAR(num(res, "gpus_per_trial"), 1, 0);
    cJSON *cmd = cJSON_GetObjectItem(j, "command");
    CHECK_EQ_INT(cJSON_GetArraySize(cmd), 5);
    cJSON *ex = cJSON_GetObjectItem(j, "executor");
    CHECK_STR(cJSON_GetObjectItem(ex, "type")->valuestring, "local");
    cJSON *ps = cJSON_GetObjectItem(j, "params");
    CHECK_EQ_INT(cJSON_GetArraySize(ps), 4);
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(ps, 0), "kind")->valuestring, "loguniform");
    cJSON_Delete(j);
    space_free(s);
}

TEST(rename)
{
    space_t *s = parse(example_json);
    REQUIRE(s);
    char err[256];
    CHECK_EQ_INT(space_rename(s, "fmnist-asha-2", err, sizeof err), 0);
    CHECK_STR(space_settings(s)->name, "fmnist-asha-2");
    CHECK_EQ_INT(space_rename(s, "../x", err, sizeof err), SPACE_EINVAL);
    CHECK_CONTAINS(err, "'/' is not allowed");
    CHECK_STR(space_settings(s)->name, "fmnist-asha-2");
    space_free(s);
}

/* ---- load ------------------------------------------------------------------------------ */
TEST(load_file)
{
    char path[] = "/tmp/tune_search_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const char *bad = "{\"name\": \"x\",\n \"command\": [\"a\"], \"seeed\": 1}";
    REQUIRE(write(fd, bad, strlen(bad)) == (ssize_t)strlen(bad));
    close(fd);
    space_t *s = NULL;
    char err[512], want[512];
    CHECK_EQ_INT(space_load(path, &s, err, sizeof err), SPACE_EINVAL);
    snprintf(want, sizeof want, "%s:2:20: unknown key \"seeed\" (did you mean \"seed\"?)", path);
    CHECK_STR(err, want);
    CHECK(s == NULL);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs(example_json, f);
    fclose(f);
    CHECK_EQ_INT(space_load(path, &s, err, sizeof err), 0);
    REQUIRE(s);
    CHECK_STR(space_text(s), example_json);
    space_free(s);
    unlink(path);
}

TEST(load_missing_file)
{
    space_t *s = NULL;
    char err[512];
    CHECK_EQ_INT(space_load("/nonexistent/dir/space.json", &s, err, sizeof err), SPACE_EIO);
    CHECK_STR(err, "cannot read /nonexistent/dir/space.json: No such file or directory");
    CHECK_EQ_INT(space_load("/tmp", &s, err, sizeof err), SPACE_EIO);
    CHECK_STR(err, "cannot read /tmp: Is a directory");
    CHECK(s == NULL);
}

/* ---- JSON syntax errors ------------------------------------------------------------------ */
TEST(err_json_missing_comma)
{
    CHECK_STR(parse_err("{\n  \"name\": \"x\",\n  \"command\": [\"a\"]\n  \"seed\": 1\n}"),
              "t.json:4:3: invalid JSON: expected ',' or '}' after an object member, found '\"'");
}

TEST(err_json_trailing_comma)
{
    CHECK_STR(parse_err("{\"name\": \"x\",\n \"command\": [\"a\", ],}"),
              "t.json:2:19: invalid JSON: trailing comma before ']' (JSON allows none)");
    CHECK_STR(parse_err("{\"name\": \"x\", \"command\": [\"a\"],\n}"),
              "t.json:2:1: invalid JSON: trailing comma before '}' (JSON allows none)");
}

TEST(err_json_unterminated)
{
    CHECK_STR(parse_err("{\"name\": \"x"), "t.json:1:10: invalid JSON: unterminated string");
    CHECK_STR(parse_err("{\"name\": \"x\""),
              "t.json:1:13: invalid JSON: expected ',' or '}' after an object member, found end "
              "of file");
}

TEST(err_json_empty_and_garbage)
{
    CHECK_STR(parse_err(""), "t.json:1:1: invalid JSON: expected a value, found end of file");
    CHECK_STR(parse_err("  \n"), "t.json:2:1: invalid JSON: expected a value, found end of file");
    CHECK_STR(parse_err("{} x"),
              "t.json:1:4: invalid JSON: 'x' after the end of the top-level value");
    CHECK_STR(parse_err("{\"name\": 'x'}"),
              "t.json:1:10: invalid JSON: strings need double quotes, not single");
    CHECK_STR(parse_err("{name: 1}"),
              "t.json:1:2: invalid JSON: expected a key in double quotes, found 'n'");
    CHECK_STR(parse_err("{\"a\" 1}"),
              "t.json:1:6: invalid JSON: expected ':' after the key, found '1'");
    CHECK_STR(parse_err("{\"a\": tru}"), "t.json:1:7: invalid JSON: expected a value, found 't'");
}

TEST(err_json_numbers_and_strings)
{
    CHECK_STR(parse_err("{\"seed\": 01}"),
              "t.json:1:10: invalid JSON: numbers cannot have leading zeros");
    CHECK_STR(parse_err("{\"seed\": 1.}"),
              "t.json:1:10: invalid JSON: malformed number (a digit must follow '.')");
    CHECK_STR(parse_err("{\"seed\": 1e}"),
              "t.json:1:10: invalid JSON: malformed number (exponent without digits)");
    CHECK_STR(parse_err("{\"seed\": 1e999}"), "t.json:1:10: number 1e999 is out of range");
    CHECK_STR(parse_err("{\"a\": \"x\\qy\"}"),
              "t.json:1:9: invalid JSON: unknown escape \\q in a string");
    CHECK_STR(parse_err("{\"a\": \"x\ty\"}"),
              "t.json:1:9: invalid JSON: control character (byte 0x09) in a string; write it "
              "as an escape such as \\n");
    CHECK_STR(parse_err("{\"a\": \"\\ud800\"}"),
              "t.json:1:8: invalid JSON: unpaired surrogate \\uD800 in a string");
    CHECK_STR(parse_err("{\"a\": \"\\u12\"}"),
              "t.json:1:10: invalid JSON: \\u needs four hex digits");
}

TEST(err_json_columns_count_characters)
{
    /* "é" is two bytes but one column; the error after it is at column 13. */
    CHECK_STR(parse_err("{\"name\": \"\xc3\xa9\" \"x\"}"),
              "t.json:1:14: invalid JSON: expected ',' or '}' after an object member, found '\"'");
    /* A byte order mark is skipped and not counted. */
    space_t *s = parse("\xef\xbb\xbf{\"name\": \"x\", \"command\": [\"a\"]}");
    CHECK(s != NULL);
    space_free(s);
    CHECK_STR(parse_err("\xef\xbb\xbf{\"nme\": \"x\"}"),
              "t.json:1:2: unknown key \"nme\" (did you mean \"name\"?)");
}

TEST(err_json_too_deep)
{
    char buf[2100];
    memset(buf, '[', 2000);
    buf[2000] = '\0';
    CHECK_CONTAINS(parse_err(buf), "invalid JSON: nested deeper than");
}

TEST(err_not_an_object)
{
    CHECK_STR(parse_err("[1, 2]"),
              "t.json:1:1: the experiment file must be a JSON object, not an array");
}

TEST(err_duplicate_key)
{
    CHECK_STR(parse_err("{\"name\": \"x\",\n \"name\": \"y\"}"),
              "t.json:2:2: duplicate key \"name\" (first given at line 1, column 2)");
    EXPECT_AT_N("\"space\": {\"lr\": 1, \"lr\": 2}", "\"lr\"", 1,
                "duplicate key \"lr\" (first given at line 2, column 11)");
}

/* ---- unknown keys ----------------------------------------------------------------------- */
TEST(err_unknown_top_key)
{
    EXPECT_AT("\"num_sample\": 3", "\"num_sample\"",
              "unknown key \"num_sample\" (did you mean \"num_samples\"?)");
    EXPECT_AT("\"metirc\": \"loss\"", "\"metirc\"",
              "unknown key \"metirc\" (did you mean \"metric\"?)");
    EXPECT_AT("\"zzzzzzzz\": 1", "\"zzzzzzzz\"", "unknown key \"zzzzzzzz\"");
}

TEST(err_unknown_nested_keys)
{
    EXPECT_AT("\"metric\": \"m\", \"mode\": \"min\", \"scheduler\": {\"type\": \"asha\", "
              "\"grace_perod\": 2}",
              "\"grace_perod\"",
              "unknown key \"grace_perod\" in \"scheduler\" (did you mean \"grace_period\"?)");
    EXPECT_AT("\"resources\": {\"gpu_per_trial\": 1}", "\"gpu_per_trial\"",
              "unknown key \"gpu_per_trial\" in \"resources\" (did you mean \"gpus_per_trial\"?)");
    EXPECT_AT("\"executor\": {\"typ\": \"slurm\"}", "\"typ\"",
              "unknown key \"typ\" in \"executor\" (did you mean \"type\"?)");
}

TEST(err_unknown_distribution)
{
    EXPECT_AT("\"space\": {\"lr\": {\"logunifrom\": [1e-4, 1e-1]}}", "\"logunifrom\"",
              "unknown distribution \"logunifrom\" (did you mean \"loguniform\"?)");
    EXPECT_AT("\"space\": {\"lr\": {\"Uniform\": [0, 1]}}", "\"Uniform\"",
              "unknown distribution \"Uniform\" (did you mean \"uniform\"?)");
    EXPECT_AT("\"space\": {\"lr\": {\"gaussian\": [0, 1]}}", "\"gaussian\"",
              "unknown distribution \"gaussian\"");
}

TEST(err_param_object_shape)
{
    EXPECT_AT("\"space\": {\"lr\": {}}", "{}",
              "parameter \"lr\" is an empty object: give a constant or one distribution, such "
              "as {\"uniform\": [0, 1]}");
    EXPECT_AT("\"space\": {\"lr\": {\"uniform\": [0, 1], \"q\": 0.1}}", "\"q\"",
              "parameter \"lr\" must have exactly one distribution key; \"q\" is one too many");
}

TEST(err_param_names)
{
    EXPECT_AT("\"space\": {\"\": 1}", "\"\"", "parameter name is empty");
    EXPECT_AT("\"space\": {\"a{b\": 1}", "\"a{b\"",
              "parameter name \"a{b\" cannot contain '{' or '}'");
    EXPECT_AT("\"space\": {\"trial_id\": 1}", "\"trial_id\"",
              "parameter name \"trial_id\" is reserved for the {trial_id} placeholder");
    EXPECT_AT("\"space\": {\"trial_dir\": 1}", "\"trial_dir\"",
              "parameter name \"trial_dir\" is reserved for the {trial_dir} placeholder");
    EXPECT_AT("\"space\": [1]", "[1]", "\"space\" must be an object of parameter names");
}

/* ---- wrong types and values ------------------------------------------------------------- */
TEST(err_num_samples)
{
    const char *m = "\"num_samples\" must be a positive integer";
    EXPECT_AT("\"num_samples\": 0", "0", m);
    EXPECT_AT("\"num_samples\": -3", "-3", m);
    EXPECT_AT("\"num_samples\": 2.5", "2.5", m);
    EXPECT_AT("\"num_samples\": \"4\"", "\"4\"", m);
    EXPECT_AT("\"num_samples\": 1e12", "1e12", m);
}

TEST(err_other_integers)
{
    EXPECT_AT("\"max_concurrent\": -1", "-1",
              "\"max_concurrent\" must be a non-negative integer (0: no limit)");
    EXPECT_AT("\"seed\": -1", "-1", "\"seed\" must be a non-negative integer below 2^64");
    EXPECT_AT("\"seed\": 1.5", "1.5", "\"seed\" must be a non-negative integer below 2^64");
    EXPECT_AT("\"seed\": 18446744073709551616", "1844",
              "\"seed\" must be a non-negative integer below 2^64");
    EXPECT_AT("\"seed\": \"7\"", "\"7\"", "\"seed\" must be a non-negative integer below 2^64");
    EXPECT_AT("\"max_failures\": -1", "-1", "\"max_failures\" must be a non-negative integer");
}

TEST(err_times)
{
    EXPECT_AT("\"stop_grace_s\": -1", "-1", "\"stop_grace_s\" must be a number >= 0 (seconds)");
    EXPECT_AT("\"status_interval_s\": 0", "0",
              "\"status_interval_s\" must be a number > 0 (seconds)");
    EXPECT_AT("\"result_timeout_s\": \"1m\"", "\"1m\"",
              "\"result_timeout_s\" must be a number >= 0 (seconds)");
    EXPECT_AT("\"time_budget_s\": -5", "-5", "\"time_budget_s\" must be a number >= 0 (seconds)");
}

TEST(err_name)
{
    CHECK_STR(parse_err("{\"command\": [\"a\"]}"),
              "t.json: name: required key is missing (the experiment's name)");
    CHECK_STR(parse_err("{\"name\": 5, \"command\": [\"a\"]}"),
              "t.json:1:10: \"name\" must be a string");
    CHECK_STR(parse_err("{\"name\": \"../../etc\", \"command\": [\"a\"]}"),
              "t.json:1:10: experiment name \"../../etc\": '/' is not allowed (use letters, "
              "digits, '_', '.' and '-')");
    CHECK_STR(parse_err("{\"name\": \"..\", \"command\": [\"a\"]}"),
              "t.json:1:10: experiment name \"..\" is not allowed");
    CHECK_STR(parse_err("{\"name\": \"\", \"command\": [\"a\"]}"),
              "t.json:1:10: experiment name is empty");
}

TEST(err_metric_mode)
{
    const char *metric_shape = "\"metric\" must be a non-empty string (one objective) or a list "
                               "of them (several, such as [\"val_loss\", \"latency_ms\"])";
    EXPECT_AT("\"metric\": 3", "3", metric_shape);
    EXPECT_AT("\"metric\": \"\"", "\"\"", metric_shape);
    EXPECT_AT("\"metric\": {\"a\": 1}", "{", metric_shape);
    EXPECT_AT("\"mode\": \"minimize\"", "\"minimize\"",
              "\"mode\" must be \"min\" or \"max\" (did you mean \"min\"?)");
    EXPECT_AT("\"mode\": \"up\"", "\"up\"", "\"mode\" must be \"min\" or \"max\"");
    EXPECT_AT("\"mode\": 1", "1",
              "\"mode\" must be \"min\" or \"max\" (or a list of them, one per metric)");
    CHECK_STR(parse_err(doc("\"scheduler\": {\"type\": \"asha\"}")),
              "t.json: metric: required with the \"asha\" scheduler (the reported value that "
              "ranks trials)");
    CHECK_STR(parse_err(doc("\"metric\": \"m\", \"scheduler\": {\"type\": \"median\"}")),
              "t.json: mode: required with the \"median\" scheduler (\"min\" or \"max\")");
    /* fifo needs neither */
    space_t *s = parse(doc("\"scheduler\": {\"type\": \"fifo\"}"));
    CHECK(s != NULL);
    space_free(s);
}

/* fifo's mode defaults to "min": a metric named like an accuracy must say its mode, or it
 * would be minimised (issue 28); the same word list orders another metric in `tune plot`. */
TEST(err_metric_reads_higher_is_better)
{
    const char *fix = "reads as higher-is-better, but \"mode\" is not given and defaults to "
                      "\"min\": add \"mode\": \"max\" (or \"mode\": \"min\" if smaller really "
                      "is better)";
    char msg[512];
    snprintf(msg, sizeof msg, "metric \"val_accuracy\" %s", fix);
    EXPECT_AT("\"metric\": \"val_accuracy\"", "\"val_accuracy\"", msg);
    snprintf(msg, sizeof msg, "metric \"eval/F1\" %s", fix);
    EXPECT_AT("\"scheduler\": {\"type\": \"fifo\"}, \"metric\": \"eval/F1\"", "\"eval/F1\"", msg);
    /* with a mode, either way, it is the author's word */
    const char *ok[] = {"\"metric\": \"val_accuracy\", \"mode\": \"max\"",
                        "\"metric\": \"mean_reward\", \"mode\": \"min\"",
                        "\"metric\": \"accumulated_loss\"", "\"metric\": \"val_loss\""};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        space_t *s = parse(doc(ok[i]));
        CHECK(s != NULL);
        space_free(s);
    }
    CHECK(space_metric_looks_max("top1"));
    CHECK(space_metric_looks_max("Mean-Reward"));
    CHECK(!space_metric_looks_max("mapping_loss"));
    CHECK(!space_metric_looks_max(""));
}

TEST(err_command)
{
    CHECK_STR(parse_err("{\"name\": \"x\"}"),
              "t.json: command: required key is missing (the argv of a trial, such as "
              "[\"python\", \"train.py\", \"--lr\", \"{lr}\"])");
    CHECK_STR(parse_err("{\"name\": \"x\", \"command\": []}"),
              "t.json:1:26: \"command\" must not be empty");
    CHECK_STR(parse_err("{\"name\": \"x\", \"command\": \"python train.py\"}"),
              "t.json:1:26: \"command\" must be an array of strings (an argv; no shell runs it)");
    CHECK_STR(parse_err("{\"name\": \"x\", \"command\": [\"a\", 5]}"),
              "t.json:1:32: command[1] must be a string, not a number");
    CHECK_STR(parse_err("{\"name\": \"x\", \"command\": [\"\"]}"),
              "t.json:1:27: command[0] (the program) must not be empty");
}

TEST(err_placeholder_names_no_parameter)
{
    const char *j = "{\n"
                    "  \"name\": \"x\",\n"
                    "  \"space\": {\"lr\": {\"uniform\": [0, 1]}},\n"
                    "  \"command\": [\"train\", \"--lr\", \"--x\", \"{lrr}\"]\n"
                    "}";
    CHECK_STR(parse_err(j),
              "t.json:4:39: command[3]: \"{lrr}\" names no parameter (did you mean \"lr\"?)");
    CHECK_STR(parse_err("{\"name\": \"x\", \"command\": [\"a\", \"--out={trial_dri}\"]}"),
              "t.json:1:32: command[1]: \"{trial_dri}\" names no parameter (did you mean "
              "\"trial_dir\"?)");
    CHECK_STR(parse_err("{\"name\": \"x\", \"command\": [\"{nothing}\"]}"),
              "t.json:1:27: command[0]: \"{nothing}\" names no parameter");
}

TEST(err_placeholder_braces)
{
    CHECK_STR(parse_err("{\"name\": \"x\", \"command\": [\"a\", \"{lr\"]}"),
              "t.json:1:32: command[1]: unmatched \"{\" (write \"{{\" for a literal brace)");
    CHECK_STR(parse_err("{\"name\": \"x\", \"command\": [\"a}\"]}"),
              "t.json:1:27: command[0]: unmatched \"}\" (write \"}}\" for a literal brace)");
    CHECK_STR(parse_err("{\"name\": \"x\", \"command\": [\"a{}\"]}"),
              "t.json:1:27: command[0]: empty placeholder \"{}\" (write \"{{}}\" for literal "
              "braces)");
}

TEST(err_resources)
{
    const char *g = "\"gpus_per_trial\" must be 0, a whole number, or 1/k for an integer k (0.5, "
                    "0.25, ...)";
    EXPECT_AT("\"resources\": {\"gpus_per_trial\": 0.3}", "0.3", g);
    EXPECT_AT("\"resources\": {\"gpus_per_trial\": 1.5}", "1.5", g);
    EXPECT_AT("\"resources\": {\"gpus_per_trial\": -1}", "-1", g);
    EXPECT_AT("\"resources\": {\"gpus_per_trial\": 0.33}", "0.33", g);
    EXPECT_AT("\"resources\": {\"gpus_per_trial\": \"1\"}", "\"1\"", g);
    EXPECT_AT("\"resources\": {\"cpus_per_trial\": 0}", "0",
              "\"cpus_per_trial\" must be an integer >= 1");
    EXPECT_AT("\"resources\": {\"cpus_per_trial\": 1.5}", "1.5",
              "\"cpus_per_trial\" must be an integer >= 1");
    EXPECT_AT("\"resources\": 4", "4", "\"resources\" must be an object");
}

TEST(err_scheduler_values)
{
    const char *mm = "\"metric\": \"m\", \"mode\": \"min\", ";
    char b[512];
#define SCHED(x) (snprintf(b, sizeof b, "%s\"scheduler\": {%s}", mm, x), b)
    EXPECT_AT(SCHED("\"type\": \"asha\", \"grace_period\": 10, \"max_t\": 5"), "10",
              "\"grace_period\" (10) must not exceed \"max_t\" (5)");
    EXPECT_AT(SCHED("\"type\": \"asha\", \"max_t\": 0.5"), "0.5",
              "\"grace_period\" (1) must not exceed \"max_t\" (0.5)");
    EXPECT_AT(SCHED("\"type\": \"asha\", \"reduction_factor\": 1"), "1}",
              "\"reduction_factor\" must be a number > 1");
    EXPECT_AT(SCHED("\"type\": \"asha\", \"reduction_factor\": 0.5"), "0.5",
              "\"reduction_factor\" must be a number > 1");
    EXPECT_AT(SCHED("\"type\": \"asha\", \"brackets\": 0"), "0}",
              "\"brackets\" must be an integer >= 1");
    EXPECT_AT(SCHED("\"type\": \"asha\", \"brackets\": 1.5"), "1.5",
              "\"brackets\" must be an integer >= 1");
    EXPECT_AT(SCHED("\"type\": \"asha\", \"max_t\": 0"), "0}", "\"max_t\" must be a number > 0");
    EXPECT_AT(SCHED("\"type\": \"asha\", \"grace_period\": 0"), "0}",
              "\"grace_period\" must be a number > 0");
    EXPECT_AT(SCHED("\"type\": \"median\", \"min_samples_required\": 0"), "0}",
              "\"min_samples_required\" must be an integer >= 1");
    EXPECT_AT(SCHED("\"type\": \"asah\""), "\"asah\"",
              "unknown scheduler type \"asah\" (did you mean \"asha\"?); use \"fifo\", \"asha\", "
              "\"median\", \"pbt\" or \"hyperband\"");
    EXPECT_AT(SCHED("\"type\": \"hb_bohb\""), "\"hb_bohb\"",
              "unknown scheduler type \"hb_bohb\"; use \"fifo\", \"asha\", \"median\", \"pbt\" or "
              "\"hyperband\"");
    EXPECT_AT(
        SCHED("\"type\": 1"), "1",
        "scheduler \"type\" must be \"fifo\", \"asha\", \"median\", \"pbt\" or \"hyperband\"");
    EXPECT_AT(SCHED("\"type\": \"hyperband\", \"grace_period\": 3"), "\"grace_period\"",
              "\"grace_period\" does not apply to the \"hyperband\" scheduler");
    EXPECT_AT(SCHED("\"type\": \"hyperband\", \"brackets\": 3"), "\"brackets\"",
              "\"brackets\" does not apply to the \"hyperband\" scheduler");
    EXPECT_AT(SCHED("\"type\": \"hyperband\", \"max_t\": 0.5"), "0.5",
              "hyperband \"max_t\" must be a number >= 1 (its first bracket trains "
              "int(max_t) units)");
    EXPECT_AT(SCHED("\"type\": \"median\", \"reduction_factor\": 3"), "\"reduction_factor\"",
              "\"reduction_factor\" does not apply to the \"median\" scheduler");
    EXPECT_AT(SCHED("\"max_t\": 3"), "\"max_t\"",
              "\"max_t\" does not apply to the \"fifo\" scheduler");
    EXPECT_AT(SCHED("\"type\": \"asha\", \"time_attr\": \"\""), "\"\"",
              "\"time_attr\" must be a non-empty string of at most 63 characters");
#undef SCHED
    EXPECT_AT("\"scheduler\": \"asha\"", "\"asha\"", "\"scheduler\" must be an object");
}

TEST(err_executor)
{
    EXPECT_AT("\"executor\": {\"type\": \"slurmm\"}", "\"slurmm\"",
              "unknown executor type \"slurmm\" (did you mean \"slurm\"?); use \"local\" or "
              "\"slurm\"");
    EXPECT_AT("\"executor\": {\"type\": 3}", "3",
              "executor \"type\" must be \"local\" or \"slurm\"");
    EXPECT_AT("\"executor\": {\"srun_args\": [\"-p\"]}", "\"srun_args\"",
              "\"srun_args\" applies only to the \"slurm\" executor");
    EXPECT_AT("\"executor\": {\"type\": \"slurm\", \"srun_args\": [\"-p\", 3]}", "3]",
              "srun_args[1] must be a string, not a number");
    EXPECT_AT("\"executor\": {\"type\": \"slurm\", \"srun_args\": \"-p gpu\"}", "\"-p gpu\"",
              "\"srun_args\" must be an array of strings");
    EXPECT_AT("\"executor\": {\"type\": \"slurm\", \"allocation\": true}", "true",
              "\"allocation\" must be a Slurm job id (a string or a whole number)");
    EXPECT_AT("\"executor\": []", "[]", "\"executor\" must be an object");
}

/* ---- distribution arguments ------------------------------------------------------------- */
TEST(err_ranges)
{
    EXPECT_AT("\"space\": {\"p\": {\"uniform\": [1, 0]}}", "[1, 0]",
              "\"uniform\" needs low < high");
    EXPECT_AT("\"space\": {\"p\": {\"uniform\": [1, 1]}}", "[1, 1]",
              "\"uniform\" needs low < high");
    EXPECT_AT("\"space\": {\"p\": {\"randint\": [5, 5]}}", "[5, 5]",
              "\"randint\" needs low < high");
    EXPECT_AT("\"space\": {\"p\": {\"quniform\": [2, 1, 0.5]}}", "[2",
              "\"quniform\" needs low < high");
    EXPECT_AT("\"space\": {\"p\": {\"loguniform\": [0, 1]}}", "0,", "\"loguniform\" needs low > 0");
    EXPECT_AT("\"space\": {\"p\": {\"loguniform\": [-1, 1]}}", "-1",
              "\"loguniform\" needs low > 0");
    EXPECT_AT("\"space\": {\"p\": {\"qloguniform\": [0, 1, 0.1]}}", "0,",
              "\"qloguniform\" needs low > 0");
    EXPECT_AT("\"space\": {\"p\": {\"lograndint\": [0, 10]}}", "0,",
              "\"lograndint\" needs low >= 1");
    EXPECT_AT("\"space\": {\"p\": {\"qlograndint\": [0, 10, 2]}}", "0,",
              "\"qlograndint\" needs low >= 1");
    EXPECT_AT("\"space\": {\"p\": {\"loguniform\": [1, 10, 1]}}", "1]",
              "\"loguniform\" needs base > 0 and base != 1");
    EXPECT_AT("\"space\": {\"p\": {\"qloguniform\": [1, 10, 1, -2]}}", "-2",
              "\"qloguniform\" needs base > 0 and base != 1");
}

TEST(err_q_and_sd)
{
    EXPECT_AT("\"space\": {\"p\": {\"quniform\": [0, 1, 0]}}", "0]", "\"quniform\" needs q > 0");
    EXPECT_AT("\"space\": {\"p\": {\"quniform\": [0, 1, -0.1]}}", "-0.1",
              "\"quniform\" needs q > 0");
    EXPECT_AT("\"space\": {\"p\": {\"qrandint\": [0, 10, 0]}}", "0]", "\"qrandint\" needs q > 0");
    EXPECT_AT("\"space\": {\"p\": {\"qrandint\": [0, 10, 1.5]}}", "1.5",
              "\"qrandint\" needs a whole-number q");
    EXPECT_AT("\"space\": {\"p\": {\"qrandn\": [0, 1, 0]}}", "0]", "\"qrandn\" needs q > 0");
    EXPECT_AT("\"space\": {\"p\": {\"randn\": [0, 0]}}", "0]", "\"randn\" needs sd > 0");
    EXPECT_AT("\"space\": {\"p\": {\"randn\": [0, -1]}}", "-1", "\"randn\" needs sd > 0");
    EXPECT_AT("\"space\": {\"p\": {\"qrandn\": [0, -1, 1]}}", "-1", "\"qrandn\" needs sd > 0");
    EXPECT_AT("\"space\": {\"p\": {\"quniform\": [0.1, 0.19, 0.2]}}", "[0.1",
              "\"quniform\" has no multiple of q in [low, high]");
    EXPECT_AT("\"space\": {\"p\": {\"quniform\": [0, 1, 1e-300]}}", "1e-300",
              "\"quniform\": q is too small for the range (more than 2^51 multiples)");
}

TEST(err_dist_shapes)
{
    EXPECT_AT("\"space\": {\"p\": {\"uniform\": [0]}}", "[0]", "\"uniform\" takes [low, high]");
    EXPECT_AT("\"space\": {\"p\": {\"uniform\": 1}}", "1}", "\"uniform\" takes [low, high]");
    EXPECT_AT("\"space\": {\"p\": {\"quniform\": [0, 1]}}", "[0, 1]",
              "\"quniform\" takes [low, high, q]");
    EXPECT_AT("\"space\": {\"p\": {\"loguniform\": [1, 2, 3, 4]}}", "[1",
              "\"loguniform\" takes [low, high] or [low, high, base]");
    EXPECT_AT("\"space\": {\"p\": {\"uniform\": [0, \"1\"]}}", "\"1\"",
              "\"uniform\": high must be a number, not a string");
    EXPECT_AT("\"space\": {\"p\": {\"randn\": [null, 1]}}", "null",
              "\"randn\": mean must be a number, not null");
    EXPECT_AT("\"space\": {\"p\": {\"randint\": [0.5, 3]}}", "0.5",
              "\"randint\" needs whole-number bounds (low is 0.5)");
    EXPECT_AT("\"space\": {\"p\": {\"qrandint\": [0, 3.5, 1]}}", "3.5",
              "\"qrandint\" needs whole-number bounds (high is 3.5)");
    EXPECT_AT("\"space\": {\"p\": {\"randint\": [0, 1e17]}}", "1e17",
              "\"randint\" bounds must be within -2^53..2^53");
}

TEST(err_choice_grid)
{
    EXPECT_AT("\"space\": {\"p\": {\"choice\": []}}", "[]", "\"choice\" needs at least one value");
    EXPECT_AT("\"space\": {\"p\": {\"grid_search\": []}}", "[]",
              "\"grid_search\" needs at least one value");
    EXPECT_AT("\"space\": {\"p\": {\"choice\": 3}}", "3}",
              "\"choice\" takes a list of values, such as {\"choice\": [16, 32]}");
    EXPECT_AT("\"space\": {\"p\": {\"grid_search\": {\"a\": 1}}}", "{\"a\"",
              "\"grid_search\" takes a list of values, such as {\"grid_search\": [16, 32]}");
}

TEST(err_too_many_trials)
{
    EXPECT_AT(
        "\"num_samples\": 2000000, \"space\": {\"a\": {\"grid_search\": [1,2,3,4,5,6,7,8,9,10]},"
        " \"b\": {\"grid_search\": [1,2,3,4,5,6,7,8,9,10]}}",
        "\"space\"",
        "more than 100000000 trials (num_samples x grid points); split the experiment");
}

TEST(error_buffer_small_and_null)
{
    space_t *s = NULL;
    char tiny[8];
    const char *j = "{\"nme\": 1}";
    CHECK_EQ_INT(space_parse(j, strlen(j), FILE_NAME, &s, tiny, sizeof tiny), SPACE_EINVAL);
    CHECK_STR(tiny, "t.json:");
    CHECK_EQ_INT(space_parse(j, strlen(j), FILE_NAME, &s, NULL, 0), SPACE_EINVAL);
    CHECK(s == NULL);
}

/* Mutated and truncated files must give a message with a position inside the file, and
 * never crash (this runs under ASan/UBSan in the sanitizer build). */
static void check_positioned(const char *text, size_t len, const char *msg)
{
    int line = 0, col = 0;
    if (sscanf(msg, "t.json:%d:%d:", &line, &col) == 2) {
        int lines = 1;
        for (size_t i = 0; i < len; i++)
            lines += text[i] == '\n';
        CHECK(line >= 1 && line <= lines && col >= 1);
    } else {
        CHECK(strncmp(msg, "t.json: ", 8) == 0);
    }
}

TEST(truncated_files_fail_with_position)
{
    size_t n = strlen(example_json);
    for (size_t len = 0; len + 1 < n; len++) {
        space_t *s = NULL;
        char err[512];
        int rc = space_parse(example_json, len, FILE_NAME, &s, err, sizeof err);
        CHECK_EQ_INT(rc, SPACE_EINVAL);
        check_positioned(example_json, len, err);
    }
}

TEST(mutated_files_never_crash)
{
    size_t n = strlen(example_json);
    char *buf = malloc(n + 1);
    REQUIRE(buf);
    const char alphabet[] = "{}[]\",:0123456789.eE-+ \n\\tfnu{}";
    uint64_t x = 99;
    int parsed = 0;
    for (int round = 0; round < 3000; round++) {
        memcpy(buf, example_json, n + 1);
        for (int m = 0; m < 1 + round % 3; m++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t at = (size_t)(x >> 33) % n;
            buf[at] = alphabet[(x >> 20) % (sizeof alphabet - 1)];
        }
        space_t *s = NULL;
        char err[512];
        if (space_parse(buf, n, FILE_NAME, &s, err, sizeof err) != 0) {
            check_positioned(buf, n, err);
            continue;
        }
        parsed++;
        for (size_t i = 0; i < space_num_trials(s) && i < 3; i++) {
            cJSON *c = sample(s, i);
            char **argv = NULL;
            CHECK(c && space_render_argv(s, c, "1", "d", &argv, err, sizeof err) == 0);
            space_argv_free(argv);
            cJSON_Delete(c);
        }
        space_free(s);
    }
    CHECK(parsed > 0); /* some mutations (inside strings, digits) keep the file valid */
    free(buf);
}

/* ---- name checks -------------------------------------------------------------------------- */
TEST(check_name)
{
    char err[256];
    CHECK_EQ_INT(space_check_name("fmnist-asha_2.v1", err, sizeof err), 0);
    CHECK_EQ_INT(space_check_name("a", err, sizeof err), 0);
    CHECK_EQ_INT(space_check_name("...", err, sizeof err), 0);
    CHECK_EQ_INT(space_check_name("../../etc", err, sizeof err), SPACE_EINVAL);
    CHECK_STR(err, "experiment name \"../../etc\": '/' is not allowed (use letters, digits, '_', "
                   "'.' and '-')");
    CHECK_EQ_INT(space_check_name(".", err, sizeof err), SPACE_EINVAL);
    CHECK_STR(err, "experiment name \".\" is not allowed");
    CHECK_EQ_INT(space_check_name("..", err, sizeof err), SPACE_EINVAL);
    CHECK_EQ_INT(space_check_name("", err, sizeof err), SPACE_EINVAL);
    CHECK_STR(err, "experiment name is empty");
    CHECK_EQ_INT(space_check_name(NULL, err, sizeof err), SPACE_EINVAL);
    CHECK_EQ_INT(space_check_name("a b", err, sizeof err), SPACE_EINVAL);
    CHECK_CONTAINS(err, "' ' is not allowed");
    CHECK_EQ_INT(space_check_name("caf\xc3\xa9", err, sizeof err), SPACE_EINVAL);
    CHECK_CONTAINS(err, "byte 0xc3 is not allowed");
    char longname[102];
    memset(longname, 'a', 101);
    longname[101] = '\0';
    CHECK_EQ_INT(space_check_name(longname, err, sizeof err), SPACE_EINVAL);
    CHECK_CONTAINS(err, "is longer than 100 characters");
    longname[100] = '\0';
    CHECK_EQ_INT(space_check_name(longname, err, sizeof err), 0);
}

/* ---- distributions ------------------------------------------------------------------------ */
TEST(uniform_bounds_and_mean)
{
    const int n = 20000;
    space_t *s = one_param("{\"uniform\": [0.5, 0.99]}", n, 1);
    REQUIRE(s);
    double sum = 0, lo = 1, hi = 0;
    for (int i = 0; i < n; i++) {
        cJSON *c = sample(s, (size_t)i);
        REQUIRE(c);
        double v = num(c, "p");
        sum += v;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        cJSON_Delete(c);
    }
    CHECK(lo >= 0.5);
    CHECK(hi < 0.99);
    CHECK(lo < 0.501);
    CHECK(hi > 0.989);
    CHECK_NEAR(sum / n, 0.745, 0.005);
    space_free(s);
}

/* Counts how often each value of p comes up (values given as formatted numbers). */
static void histogram(space_t *s, int n, const char *const *vals, int nvals, int *counts,
                      int *others)
{
    *others = 0;
    for (int k = 0; k < nvals; k++)
        counts[k] = 0;
    for (int i = 0; i < n; i++) {
        cJSON *c = sample(s, (size_t)i);
        if (!c) {
            (*others)++;
            continue;
        }
        char b[32];
        space_format_number(num(c, "p"), b);
        int k = 0;
        while (k < nvals && strcmp(b, vals[k]) != 0)
            k++;
        if (k < nvals)
            counts[k]++;
        else {
            if (*others == 0) fprintf(stderr, "unexpected value %s\n", b);
            (*others)++;
        }
        cJSON_Delete(c);
    }
}

TEST(qrandint_every_multiple_equally_likely)
{
    /* Ray Tune's qrandint(1, 10, 2) rounds half to even and never gives 10. */
    const int n = 20000;
    space_t *s = one_param("{\"qrandint\": [1, 10, 2]}", n, 3);
    REQUIRE(s);
    const char *vals[] = {"2", "4", "6", "8", "10"};
    int counts[5], others;
    histogram(s, n, vals, 5, counts, &others);
    CHECK_EQ_INT(others, 0);
    for (int k = 0; k < 5; k++)
        CHECK_NEAR(counts[k] / (double)n, 0.2, 0.015);
    space_free(s);
}

TEST(quantised_q1_still_quantises_unlike_ray)
{
    /* docs/space.md: Ray skips quantising when q = 1 (its qrandint(0, 5, 1) never gives 5,
     * its quniform(0, 5, 1) and qrandn(0, 1, 1) give fractions); tune's rule holds for
     * every q. */
    const int n = 12000;
    const char *vals[] = {"0", "1", "2", "3", "4", "5"};
    const char *dists[] = {"{\"qrandint\": [0, 5, 1]}", "{\"quniform\": [0, 5, 1]}"};
    for (int d = 0; d < 2; d++) {
        space_t *s = one_param(dists[d], n, 11);
        REQUIRE(s);
        int counts[6], others;
        histogram(s, n, vals, 6, counts, &others);
        CHECK_EQ_INT(others, 0);
        for (int k = 0; k < 6; k++)
            CHECK_NEAR(counts[k] / (double)n, 1 / 6.0, 0.015);
        space_free(s);
    }
    space_t *s = one_param("{\"qrandn\": [0, 1, 1]}", 500, 2);
    REQUIRE(s);
    for (int i = 0; i < 500; i++) {
        cJSON *c = sample(s, (size_t)i);
        REQUIRE(c);
        CHECK(num(c, "p") == floor(num(c, "p")));
        cJSON_Delete(c);
    }
    space_free(s);
    /* Bounds that are not multiples of q: Ray refuses them, tune uses the multiples inside. */
    const char *inside[] = {"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"};
    s = one_param("{\"quniform\": [0.05, 1, 0.1]}", 5000, 4);
    REQUIRE(s);
    int counts[10], others;
    histogram(s, 5000, inside, 10, counts, &others);
    CHECK_EQ_INT(others, 0);
    CHECK(counts[0] > 0 && counts[9] > 0);
    space_free(s);
}

TEST(quniform_end_points_as_frequent)
{
    const int n = 20000;
    space_t *s = one_param("{\"quniform\": [0, 1, 0.25]}", n, 4);
    REQUIRE(s);
    const char *vals[] = {"0", "0.25", "0.5", "0.75", "1"};
    int counts[5], others;
    histogram(s, n, vals, 5, counts, &others);
    CHECK_EQ_INT(others, 0);
    for (int k = 0; k < 5; k++)
        CHECK_NEAR(counts[k] / (double)n, 0.2, 0.015);
    space_free(s);
}

TEST(quniform_prints_clean_multiples)
{
    /* 0.3 must come out as the double nearest 0.3, never 3 * 0.1 = 0.30000000000000004. */
    const int n = 2000;
    space_t *s = one_param("{\"quniform\": [0.3, 0.7, 0.1]}", n, 5);
    REQUIRE(s);
    const char *vals[] = {"0.3", "0.4", "0.5", "0.6", "0.7"};
    int counts[5], others;
    histogram(s, n, vals, 5, counts, &others);
    CHECK_EQ_INT(others, 0);
    for (int k = 0; k < 5; k++)
        CHECK(counts[k] > 300);
    space_free(s);
    s = one_param("{\"quniform\": [-1, 1, 0.05]}", n, 6);
    REQUIRE(s);
    for (int i = 0; i < n; i++) {
        cJSON *c = sample(s, (size_t)i);
        REQUIRE(c);
        char b[32];
        space_format_number(num(c, "p"), b);
        CHECK(strlen(b) <= 5); /* "-0.95" at most */
        double k = num(c, "p") / 0.05;
        CHECK_NEAR(k, nearbyint(k), 1e-9);
        CHECK(num(c, "p") >= -1 && num(c, "p") <= 1);
        cJSON_Delete(c);
    }
    space_free(s);
}

TEST(randint_never_reaches_high)
{
    const int n = 10000;
    space_t *s = one_param("{\"randint\": [0, 5]}", n, 7);
    REQUIRE(s);
    const char *vals[] = {"0", "1", "2", "3", "4"};
    int counts[5], others;
    histogram(s, n, vals, 5, counts, &others);
    CHECK_EQ_INT(others, 0);
    for (int k = 0; k < 5; k++)
        CHECK_NEAR(counts[k] / (double)n, 0.2, 0.02);
    cJSON *c = sample(s, 0);
    REQUIRE(c);
    char *js = cJSON_PrintUnformatted(c);
    CHECK(strchr(js, '.') == NULL); /* integers stay JSON integers */
    free(js);
    cJSON_Delete(c);
    space_free(s);
    s = one_param("{\"randint\": [-3, -1]}", 1000, 7);
    REQUIRE(s);
    const char *neg[] = {"-3", "-2"};
    int nc[2];
    histogram(s, 1000, neg, 2, nc, &others);
    CHECK_EQ_INT(others, 0);
    CHECK(nc[0] > 400 && nc[1] > 400);
    space_free(s);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

TEST(loguniform_median_near_geometric_mean)
{
    const int n = 10000;
    space_t *s = one_param("{\"loguniform\": [1e-4, 1e-1]}", n, 8);
    REQUIRE(s);
    double *v = malloc(n * sizeof *v);
    REQUIRE(v);
    int below_1e3 = 0;
    for (int i = 0; i < n; i++) {
        cJSON *c = sample(s, (size_t)i);
        REQUIRE(c);
        v[i] = num(c, "p");
        CHECK(v[i] >= 1e-4 && v[i] <= 1e-1);
        if (v[i] < 1e-3) below_1e3++;
        cJSON_Delete(c);
    }
    qsort(v, n, sizeof *v, cmp_double);
    CHECK_NEAR(log10(v[n / 2]), -2.5, 0.05);          /* geometric mean sqrt(1e-4 * 1e-1) */
    CHECK_NEAR(below_1e3 / (double)n, 1.0 / 3, 0.02); /* one decade of three */
    free(v);
    space_free(s);
    s = one_param("{\"loguniform\": [1, 1000, 2]}", 2000, 8); /* base changes nothing */
    REQUIRE(s);
    cJSON *c = sample(s, 0);
    CHECK(c && num(c, "p") >= 1 && num(c, "p") <= 1000);
    cJSON_Delete(c);
    space_free(s);
}

TEST(qloguniform_each_multiple_owns_its_cell)
{
    /* Log-uniform over [0.5, 4.5]: P(k) = log((k + 0.5) / (k - 0.5)) / log(9). */
    const int n = 20000;
    space_t *s = one_param("{\"qloguniform\": [1, 4, 1]}", n, 9);
    REQUIRE(s);
    const char *vals[] = {"1", "2", "3", "4"};
    int counts[4], others;
    histogram(s, n, vals, 4, counts, &others);
    CHECK_EQ_INT(others, 0);
    for (int k = 0; k < 4; k++) {
        double want = log((k + 1.5) / (k + 0.5)) / log(9);
        CHECK_NEAR(counts[k] / (double)n, want, 0.015);
    }
    space_free(s);
    /* Same cells for qlograndint [1, 8, 2]: multiples 2..8, log-uniform over [1, 9]. */
    s = one_param("{\"qlograndint\": [1, 8, 2]}", n, 10);
    REQUIRE(s);
    const char *ivals[] = {"2", "4", "6", "8"};
    histogram(s, n, ivals, 4, counts, &others);
    CHECK_EQ_INT(others, 0);
    for (int k = 0; k < 4; k++) {
        double want = log((k + 1.5) / (k + 0.5)) / log(9);
        CHECK_NEAR(counts[k] / (double)n, want, 0.015);
    }
    space_free(s);
}

TEST(qloguniform_decimal_q)
{
    const int n = 2000;
    space_t *s = one_param("{\"qloguniform\": [0.1, 1, 0.1]}", n, 11);
    REQUIRE(s);
    for (int i = 0; i < n; i++) {
        cJSON *c = sample(s, (size_t)i);
        REQUIRE(c);
        char b[32];
        space_format_number(num(c, "p"), b);
        CHECK(strlen(b) == 3 || strcmp(b, "1") == 0);
        CHECK(num(c, "p") >= 0.1 && num(c, "p") <= 1);
        cJSON_Delete(c);
    }
    space_free(s);
}

TEST(lograndint_bounds)
{
    const int n = 5000;
    space_t *s = one_param("{\"lograndint\": [1, 10]}", n, 12);
    REQUIRE(s);
    int seen[11] = {0};
    for (int i = 0; i < n; i++) {
        cJSON *c = sample(s, (size_t)i);
        REQUIRE(c);
        double v = num(c, "p");
        CHECK(v == floor(v) && v >= 1 && v <= 9);
        if (v >= 0 && v <= 10) seen[(int)v]++;
        cJSON_Delete(c);
    }
    CHECK_EQ_INT(seen[10], 0);
    CHECK(seen[1] > seen[9]); /* log-uniform favours the small end */
    CHECK(seen[9] > 0);
    space_free(s);
}

TEST(randn_moments)
{
    const int n = 20000;
    space_t *s = one_param("{\"randn\": [3, 2]}", n, 13);
    REQUIRE(s);
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++) {
        cJSON *c = sample(s, (size_t)i);
        REQUIRE(c);
        double v = num(c, "p");
        sum += v;
        sq += v * v;
        cJSON_Delete(c);
    }
    double mean = sum / n, sd = sqrt(sq / n - mean * mean);
    CHECK_NEAR(mean, 3, 0.05);
    CHECK_NEAR(sd, 2, 0.05);
    space_free(s);
}

/* Integral values take the integer formatter: the text must be what %.0f prints. */
TEST(format_number_prints_integral_values_as_percent_0f_does)
{
    const double v[] = {0.0,
                        -0.0,
                        1,
                        -1,
                        81,
                        128,
                        1e15,
                        -1e15,
                        9007199254740991.0,
                        -9007199254740991.0,
                        4503599627370496.0,
                        123456789012.0};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        char b[32], want[64];
        snprintf(want, sizeof want, "%.0f", v[i]);
        CHECK_STR(space_format_number(v[i], b), want);
    }
    char b[32];
    CHECK_STR(space_format_number(0.5, b), "0.5");
}

TEST(qrandn_multiples)
{
    const int n = 2000;
    space_t *s = one_param("{\"qrandn\": [0, 1, 0.2]}", n, 14);
    REQUIRE(s);
    int zeros = 0;
    for (int i = 0; i < n; i++) {
        cJSON *c = sample(s, (size_t)i);
        REQUIRE(c);
        double v = num(c, "p");
        char b[32];
        space_format_number(v, b);
        CHECK(strlen(b) <= 4); /* "-1.2", "0.4", "2" ... */
        CHECK_NEAR(v / 0.2, nearbyint(v / 0.2), 1e-9);
        if (v == 0) zeros++;
        cJSON_Delete(c);
    }
    CHECK(zeros > 100); /* P(|x| < 0.1) is about 8% */
    space_free(s);
}

TEST(choice_uniform_and_types_kept)
{
    const int n = 8000;
    space_t *s = one_param("{\"choice\": [16, \"relu\", true, {\"a\": [1, 2]}]}", n, 15);
    REQUIRE(s);
    int counts[4] = {0};
    for (int i = 0; i < n; i++) {
        cJSON *c = sample(s, (size_t)i);
        REQUIRE(c);
        cJSON *v = cJSON_GetObjectItem(c, "p");
        if (cJSON_IsNumber(v) && v->valuedouble == 16) counts[0]++;
        if (cJSON_IsString(v) && strcmp(v->valuestring, "relu") == 0) counts[1]++;
        if (cJSON_IsTrue(v)) counts[2]++;
        if (cJSON_IsObject(v) && cJSON_GetArraySize(cJSON_GetObjectItem(v, "a")) == 2) counts[3]++;
        cJSON_Delete(c);
    }
    CHECK_EQ_INT(counts[0] + counts[1] + counts[2] + counts[3], n);
    for (int k = 0; k < 4; k++)
        CHECK_NEAR(counts[k] / (double)n, 0.25, 0.02);
    space_free(s);
}

TEST(constants)
{
    /* Any JSON value that is not an object is a constant; an object is a distribution. */
    space_t *s = parse("{\"name\":\"c\",\"command\":[\"x\"],\"num_samples\":2,\"space\":{"
                       "\"epochs\": 10, \"opt\": \"adam\", \"dims\": [64, 32], \"flag\": false,"
                       " \"none\": null, \"rate\": 0.5}}");
    REQUIRE(s);
    CHECK_STR(space_param_kind(s, 0), "constant");
    CHECK_EQ_INT(space_num_trials(s), 2);
    cJSON *c = sample(s, 1);
    REQUIRE(c);
    char *js = cJSON_PrintUnformatted(c);
    CHECK_STR(js, "{\"epochs\":10,\"opt\":\"adam\",\"dims\":[64,32],\"flag\":false,\"none\":null,"
                  "\"rate\":0.5}");
    free(js);
    cJSON_Delete(c);
    space_free(s);
}

/* ---- grid --------------------------------------------------------------------------------- */
TEST(grid_product_count_and_order)
{
    /* Ray Tune: grid parameters sorted by name, the first changing fastest; each grid
     * point repeated num_samples times, index = repeat * n_points + point. The file
     * declares "b" before "a" on purpose. */
    space_t *s = parse("{\"name\":\"g\",\"command\":[\"x\"],\"num_samples\":2,\"space\":{"
                       "\"b\": {\"grid_search\": [\"x\", \"y\", \"z\"]},"
                       "\"u\": {\"uniform\": [0, 1]},"
                       "\"a\": {\"grid_search\": [1, 2]}}}");
    REQUIRE(s);
    CHECK_EQ_INT(space_num_trials(s), 12);
    const char *bs[] = {"x", "y", "z"};
    double first_u[6];
    for (size_t i = 0; i < 12; i++) {
        cJSON *c = sample(s, i);
        REQUIRE(c);
        size_t point = i % 6;
        CHECK_NEAR(num(c, "a"), (double)(1 + point % 2), 0);
        CHECK_STR(cJSON_GetObjectItem(c, "b")->valuestring, bs[point / 2]);
        /* keys in declaration order */
        CHECK_STR(c->child->string, "b");
        double u = num(c, "u");
        if (i < 6)
            first_u[point] = u;
        else
            CHECK(u != first_u[point]); /* random values are drawn afresh per trial */
        cJSON_Delete(c);
    }
    cJSON *c = NULL;
    char err[256];
    CHECK_EQ_INT(space_sample(s, 12, &c, err, sizeof err), SPACE_EINVAL);
    CHECK_STR(err, "trial index 12 is out of range: the experiment has 12 trials");
    CHECK(c == NULL);
    space_free(s);
}

TEST(grid_example_layers)
{
    space_t *s = parse(example_json);
    REQUIRE(s);
    for (size_t i = 0; i < 6; i++) {
        cJSON *c = sample(s, i);
        REQUIRE(c);
        CHECK_NEAR(num(c, "layers"), (double)(1 + i % 2), 0);
        double bs = num(c, "batch_size");
        CHECK(bs == 16 || bs == 32 || bs == 64 || bs == 128);
        CHECK(num(c, "lr") >= 1e-4 && num(c, "lr") <= 1e-1);
        CHECK(num(c, "momentum") >= 0.5 && num(c, "momentum") < 0.99);
        char *js = cJSON_PrintUnformatted(c);
        CHECK_CONTAINS(js, "\"layers\":");
        CHECK(strstr(js, "\"layers\":1.0") == NULL);
        free(js);
        cJSON_Delete(c);
    }
    space_free(s);
}

/* ---- reproducibility -------------------------------------------------------------------- */
static const char *const golden_json =
    "{\"name\":\"g\",\"seed\":42,\"num_samples\":3,\"command\":[\"x\"],\"space\":{"
    "\"u\":{\"uniform\":[0,1]},\"lu\":{\"loguniform\":[1e-4,1e-1]},\"ri\":{\"randint\":[0,1000]},"
    "\"qu\":{\"quniform\":[0,1,0.1]},\"c\":{\"choice\":[\"a\",\"b\",\"c\",\"d\"]},"
    "\"n\":{\"randn\":[0,1]}}}";

TEST(golden_values)
{
    /* Written down once from this implementation: if any of these change, every resumed
     * experiment would get different configurations. Only uniform, randint, quniform and
     * choice are pure integer/IEEE arithmetic; loguniform and randn go through libm's
     * exp/log/cos, hence the tiny tolerance there. */
    space_t *s = parse(golden_json);
    REQUIRE(s);
    struct {
        double u, lu, n;
        int ri;
        const char *qu, *c;
    } want[3] = {
        {0.99807849536564308, 0.0007217958014198914, 0.18571563661438237, 868, "0.8", "c"},
        {0.47055008546270749, 0.0057717722739943529, 1.0674374458987146, 333, "0.5", "d"},
        {0.69512673842850137, 0.00050765208546703702, 0.24723564825021338, 578, "1", "b"},
    };
    for (size_t i = 0; i < 3; i++) {
        cJSON *c = sample(s, i);
        REQUIRE(c);
        CHECK(num(c, "u") == want[i].u);
        CHECK_NEAR(num(c, "lu"), want[i].lu, want[i].lu * 1e-12);
        CHECK_NEAR(num(c, "n"), want[i].n, 1e-12);
        CHECK_EQ_INT((int)num(c, "ri"), want[i].ri);
        char b[32];
        CHECK_STR(space_format_number(num(c, "qu"), b), want[i].qu);
        CHECK_STR(cJSON_GetObjectItem(c, "c")->valuestring, want[i].c);
        cJSON_Delete(c);
    }
    space_free(s);
}

static char *sample_text(const space_t *s, size_t i)
{
    cJSON *c = sample(s, i);
    char *t = c ? cJSON_PrintUnformatted(c) : NULL;
    cJSON_Delete(c);
    return t;
}

TEST(same_seed_same_values)
{
    space_t *a = parse(example_json), *b = parse(example_json);
    REQUIRE(a && b);
    for (size_t i = 0; i < space_num_trials(a); i++) {
        char *x = sample_text(a, i), *y = sample_text(b, i);
        CHECK_STR(x, y);
        free(x);
        free(y);
    }
    space_free(a);
    space_free(b);
}

TEST(different_seeds_differ)
{
    space_t *a = one_param("{\"uniform\": [0, 1]}", 10, 1);
    REQUIRE(a);
    cJSON *c = sample(a, 0);
    double v1 = num(c, "p");
    cJSON_Delete(c);
    space_free(a);
    a = one_param("{\"uniform\": [0, 1]}", 10, 2);
    REQUIRE(a);
    c = sample(a, 0);
    double v2 = num(c, "p");
    cJSON_Delete(c);
    CHECK(v1 != v2);
    /* and different trials of one seed differ */
    c = sample(a, 1);
    CHECK(num(c, "p") != v2);
    cJSON_Delete(c);
    space_free(a);
}

TEST(sample_independent_of_call_order)
{
    space_t *s = parse(example_json);
    REQUIRE(s);
    char *fwd[64];
    for (size_t i = 0; i < 64; i++)
        fwd[i] = sample_text(s, i);
    for (size_t k = 0; k < 64; k++) {
        size_t i = (k * 37 + 11) % 64; /* a permutation of 0..63 */
        char *t = sample_text(s, i);
        CHECK_STR(t, fwd[i]);
        free(t);
    }
    for (size_t i = 0; i < 64; i++)
        free(fwd[i]);
    space_free(s);
}

TEST(params_have_independent_streams)
{
    /* Adding a parameter after others leaves their values unchanged. */
    space_t *a = parse("{\"name\":\"g\",\"command\":[\"x\"],\"num_samples\":5,\"space\":{"
                       "\"u\":{\"uniform\":[0,1]}}}");
    space_t *b = parse("{\"name\":\"g\",\"command\":[\"x\"],\"num_samples\":5,\"space\":{"
                       "\"u\":{\"uniform\":[0,1]},\"v\":{\"uniform\":[0,1]}}}");
    REQUIRE(a && b);
    for (size_t i = 0; i < 5; i++) {
        cJSON *x = sample(a, i), *y = sample(b, i);
        REQUIRE(x && y);
        CHECK(num(x, "u") == num(y, "u"));
        CHECK(num(y, "u") != num(y, "v"));
        cJSON_Delete(x);
        cJSON_Delete(y);
    }
    space_free(a);
    space_free(b);
}

/* ---- numbers and argv ---------------------------------------------------------------------- */
TEST(format_number)
{
    char b[32];
    CHECK_STR(space_format_number(0.1, b), "0.1");
    CHECK_STR(space_format_number(3, b), "3");
    CHECK_STR(space_format_number(1e-05, b), "1e-05");
    CHECK_STR(space_format_number(128, b), "128");
    CHECK_STR(space_format_number(-2.5, b), "-2.5");
    CHECK_STR(space_format_number(0, b), "0");
    CHECK_STR(space_format_number(1e15, b), "1000000000000000");
    CHECK_STR(space_format_number(1e20, b), "1e+20");
    CHECK_STR(space_format_number(0.1 + 0.2, b), "0.30000000000000004");
    CHECK_STR(space_format_number(1.0 / 3, b), "0.3333333333333333");
    CHECK_STR(space_format_number(5e-324, b), "5e-324");
    CHECK_STR(space_format_number(1.7976931348623157e308, b), "1.7976931348623157e+308");
    /* Round trip over many bit patterns. */
    uint64_t x = 12345;
    for (int i = 0; i < 20000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        double d;
        uint64_t bits = x ^ (x >> 29);
        memcpy(&d, &bits, sizeof d);
        if (!isfinite(d)) continue;
        space_format_number(d, b);
        CHECK(strtod(b, NULL) == d);
        CHECK(strlen(b) < 32);
    }
}

static char **render(const char *json, const char *config, const char *id, const char *dir)
{
    space_t *s = parse(json);
    if (!s) return NULL;
    cJSON *c = cJSON_Parse(config);
    char **argv = NULL;
    char err[256];
    if (space_render_argv(s, c, id, dir, &argv, err, sizeof err) != 0) {
        fprintf(stderr, "render failed: %s\n", err);
        argv = NULL;
    }
    cJSON_Delete(c);
    space_free(s);
    return argv;
}

TEST(render_example_round_trip)
{
    space_t *s = parse(example_json);
    REQUIRE(s);
    for (size_t i = 0; i < 8; i++) {
        cJSON *c = sample(s, i);
        REQUIRE(c);
        char **argv = NULL, err[256];
        REQUIRE(space_render_argv(s, c, "7", "/tmp/t7", &argv, err, sizeof err) == 0);
        CHECK_STR(argv[0], "tune-train");
        CHECK_STR(argv[1], "--lr");
        CHECK(strtod(argv[2], NULL) == num(c, "lr")); /* exact */
        CHECK_STR(argv[3], "--batch-size");
        CHECK(strchr(argv[4], '.') == NULL);
        CHECK(atof(argv[4]) == num(c, "batch_size"));
        CHECK(argv[5] == NULL);
        space_argv_free(argv);
        cJSON_Delete(c);
    }
    space_free(s);
}

TEST(render_strings_stay_one_element)
{
    const char *j = "{\"name\":\"r\",\"command\":[\"prog\",\"--act\",\"{act}\",\"--x={act}!\"],"
                    "\"space\":{\"act\":{\"choice\":[\"; rm -rf ~\"]}}}";
    char **argv = render(j, "{\"act\": \"; rm -rf ~ $(x) `y` a b\"}", "1", "d");
    REQUIRE(argv);
    CHECK_STR(argv[0], "prog");
    CHECK_STR(argv[1], "--act");
    CHECK_STR(argv[2], "; rm -rf ~ $(x) `y` a b");
    CHECK_STR(argv[3], "--x=; rm -rf ~ $(x) `y` a b!");
    CHECK(argv[4] == NULL);
    space_argv_free(argv);
}

TEST(render_trial_placeholders_and_braces)
{
    const char *j = "{\"name\":\"r\",\"command\":[\"p\",\"--id={trial_id}\",\"{trial_dir}/ckpt\","
                    "\"{{lr}}\",\"{{{lr}}}\",\"}}{{\",\"{lr}-{lr}\",\"{lr}{n}\"],"
                    "\"space\":{\"lr\":{\"uniform\":[0,1]},\"n\":{\"randint\":[1,9]}}}";
    char **argv = render(j, "{\"lr\": 0.1, \"n\": 4}", "trial_00003", "/r/exp/trial_00003");
    REQUIRE(argv);
    CHECK_STR(argv[1], "--id=trial_00003");
    CHECK_STR(argv[2], "/r/exp/trial_00003/ckpt");
    CHECK_STR(argv[3], "{lr}");
    CHECK_STR(argv[4], "{0.1}");
    CHECK_STR(argv[5], "}{");
    CHECK_STR(argv[6], "0.1-0.1");
    CHECK_STR(argv[7], "0.14");
    CHECK(argv[8] == NULL);
    space_argv_free(argv);
    /* NULL trial_id / trial_dir render as empty */
    argv = render(j, "{\"lr\": 0.1, \"n\": 4}", NULL, NULL);
    REQUIRE(argv);
    CHECK_STR(argv[1], "--id=");
    CHECK_STR(argv[2], "/ckpt");
    space_argv_free(argv);
}

/* {max_t}: the scheduler's max_t (issue 12: a trial paused and promoted learns how far to
 * run from it), a parameter named max_t first; an error where the scheduler has none. */
TEST(render_max_t_placeholder)
{
#define MT(sched, space)                                                                           \
    "{\"name\":\"r\",\"metric\":\"m\",\"mode\":\"min\",\"command\":[\"p\",\"--epochs\",\"{max_t}"  \
    "\",\"--lr\",\"{lr}"                                                                           \
    "\"],"                                                                                         \
    "\"scheduler\":" sched ",\"space\":{\"lr\":{\"uniform\":[0,1]}" space "}}"
    char **argv = render(MT("{\"type\":\"asha\",\"max_t\":27}", ""), "{\"lr\": 0.5}", "t", "d");
    REQUIRE(argv);
    CHECK_STR(argv[2], "27");
    space_argv_free(argv);
    argv = render(MT("{\"type\":\"pbt\",\"max_t\":12.5}", ""), "{\"lr\": 0.5}", "t", "d");
    REQUIRE(argv);
    CHECK_STR(argv[2], "12.5");
    space_argv_free(argv);
    /* a parameter of that name wins */
    argv = render(MT("{\"type\":\"asha\",\"max_t\":27}", ",\"max_t\":{\"choice\":[3]}"),
                  "{\"lr\": 0.5, \"max_t\": 3}", "t", "d");
    REQUIRE(argv);
    CHECK_STR(argv[2], "3");
    space_argv_free(argv);
    CHECK_CONTAINS(parse_err(MT("{\"type\":\"fifo\"}", "")),
                   "command[2]: \"{max_t}\" is the scheduler's max_t, and the fifo scheduler has "
                   "none");
    CHECK_CONTAINS(parse_err(MT("{\"type\":\"pbt\"}", "")), "the pbt scheduler has none");
#undef MT
}

TEST(render_other_json_values)
{
    const char *j =
        "{\"name\":\"r\",\"command\":[\"p\",\"{a}\",\"{b}\",\"{c}\",\"{d}\",\"{e}\"],"
        "\"space\":{\"a\":true,\"b\":null,\"c\":[1,\"x\"],\"d\":{\"choice\":[{\"k\":2}]},"
        "\"e\":1e-7}}";
    space_t *s = parse(j);
    REQUIRE(s);
    cJSON *c = sample(s, 0);
    REQUIRE(c);
    char **argv = NULL, err[256];
    REQUIRE(space_render_argv(s, c, "0", "d", &argv, err, sizeof err) == 0);
    CHECK_STR(argv[1], "true");
    CHECK_STR(argv[2], "null");
    CHECK_STR(argv[3], "[1,\"x\"]");
    CHECK_STR(argv[4], "{\"k\":2}");
    CHECK_STR(argv[5], "1e-07");
    space_argv_free(argv);
    cJSON_Delete(c);
    space_free(s);
}

TEST(render_missing_value)
{
    space_t *s = parse("{\"name\":\"r\",\"command\":[\"p\",\"{lr}\"],"
                       "\"space\":{\"lr\":{\"uniform\":[0,1]}}}");
    REQUIRE(s);
    cJSON *c = cJSON_Parse("{\"other\": 1}");
    char **argv = NULL, err[256];
    CHECK_EQ_INT(space_render_argv(s, c, "0", "d", &argv, err, sizeof err), SPACE_EINVAL);
    CHECK_STR(err, "command[1]: the configuration has no value for \"{lr}\"");
    CHECK(argv == NULL);
    cJSON_Delete(c);
    space_free(s);
    space_argv_free(NULL);
    space_free(NULL);
}

/* ---- nested spaces (docs/space.md, "Nested spaces") ------------------------------------ */
static const char *const nested_json =
    "{\"name\":\"n\",\"num_samples\":400,\"seed\":5,\n"
    "\"command\":[\"p\",\"--opt={optimizer.name}\",\"--m={optimizer.momentum}\",\n"
    "\"--b1={optimizer.beta1}\",\"{model.width}\",\"{optimizer}\"],\n"
    "\"space\":{\"optimizer\":{\"choice\":[{\"name\":\"sgd\",\"momentum\":{\"uniform\":[0.5,0.99]}}"
    ",\n"
    "{\"name\":\"adam\",\"beta1\":{\"uniform\":[0.8,0.99]}}]},\n"
    "\"model\":{\"width\":{\"choice\":[64,128]},\"depth\":{\"randint\":[1,4]},\"act\":\"relu\"}}}";

TEST(nested_choice_samples_each_branch)
{
    space_t *s = parse(nested_json);
    REQUIRE(s);
    CHECK_EQ_INT(space_num_trials(s), 400);
    CHECK_STR(space_param_kind(s, 0), "choice");
    CHECK_STR(space_param_kind(s, 1), "object");
    int sgd = 0, adam = 0, widths[2] = {0}, depths[3] = {0};
    double m_lo = 1, m_hi = 0, b_lo = 1, b_hi = 0;
    for (size_t i = 0; i < 400; i++) {
        cJSON *c = sample(s, i);
        REQUIRE(c);
        const cJSON *o = cJSON_GetObjectItem(c, "optimizer");
        REQUIRE(cJSON_IsObject(o));
        const char *name = cJSON_GetObjectItem(o, "name")->valuestring;
        if (strcmp(name, "sgd") == 0) {
            sgd++;
            double m = num(o, "momentum");
            CHECK(m >= 0.5 && m < 0.99);
            m_lo = fmin(m_lo, m), m_hi = fmax(m_hi, m);
            CHECK(!cJSON_GetObjectItem(o, "beta1"));
        } else {
            CHECK_STR(name, "adam");
            adam++;
            double b = num(o, "beta1");
            CHECK(b >= 0.8 && b < 0.99);
            b_lo = fmin(b_lo, b), b_hi = fmax(b_hi, b);
            CHECK(!cJSON_GetObjectItem(o, "momentum"));
        }
        const cJSON *m = cJSON_GetObjectItem(c, "model");
        REQUIRE(cJSON_IsObject(m));
        CHECK_EQ_INT(cJSON_GetArraySize(m), 3);
        double w = num(m, "width"), d = num(m, "depth");
        widths[w == 128]++;
        CHECK(w == 64 || w == 128);
        CHECK(d >= 1 && d <= 3 && d == floor(d));
        if (d >= 1 && d <= 3) depths[(int)d - 1]++;
        CHECK_STR(cJSON_GetObjectItem(m, "act")->valuestring, "relu");
        cJSON_Delete(c);
    }
    /* both branches drawn, and the nested distributions really drawn (not one value) */
    CHECK_NEAR(sgd / 400.0, 0.5, 0.1);
    CHECK_EQ_INT(sgd + adam, 400);
    CHECK(m_lo < 0.6 && m_hi > 0.9);
    CHECK(b_lo < 0.83 && b_hi > 0.96);
    CHECK(widths[0] > 150 && widths[1] > 150);
    CHECK(depths[0] > 90 && depths[1] > 90 && depths[2] > 90);
    space_free(s);
}

/* Inserts text before the first `where` in buf (which has room); 0 when not found. */
static int insert_before(char *buf, const char *where, const char *text)
{
    char *at = strstr(buf, where);
    if (!at) return 0;
    size_t n = strlen(text);
    memmove(at + n, at, strlen(at) + 1);
    memcpy(at, text, n);
    return 1;
}

TEST(nested_sampling_reproducible_and_stable)
{
    space_t *a = parse(nested_json), *b = parse(nested_json);
    REQUIRE(a && b);
    /* a pure function of (seed, index): any order, any instance */
    for (int i = 399; i >= 0; i -= 7) {
        char *x = sample_text(a, (size_t)i), *y = sample_text(b, (size_t)(399 - i));
        char *z = sample_text(b, (size_t)i);
        CHECK(x && z && strcmp(x, z) == 0);
        free(x), free(y), free(z);
    }
    /* A third branch and an extra key leave the other nested draws alone: whenever both
     * spaces draw the same branch, its momentum is the same; the model's width and depth
     * never change. */
    char more[2048];
    snprintf(more, sizeof more, "%s", nested_json);
    REQUIRE(insert_before(more, "{\"name\":\"adam\"",
                          "{\"name\":\"rms\",\"alpha\":{\"uniform\":[0, 1]}},"));
    REQUIRE(insert_before(more, "\"act\":\"relu\"", "\"drop\":{\"uniform\":[0,0.5]},"));
    space_t *c = parse(more);
    REQUIRE(c);
    int same_branch = 0;
    for (size_t i = 0; i < 400; i++) {
        cJSON *x = sample(a, i), *y = sample(c, i);
        REQUIRE(x && y);
        const cJSON *ox = cJSON_GetObjectItem(x, "optimizer"),
                    *oy = cJSON_GetObjectItem(y, "optimizer");
        const char *nx = cJSON_GetObjectItem(ox, "name")->valuestring;
        if (strcmp(nx, cJSON_GetObjectItem(oy, "name")->valuestring) == 0) {
            same_branch++;
            const char *k = strcmp(nx, "sgd") == 0 ? "momentum" : "beta1";
            CHECK(num(ox, k) == num(oy, k));
        }
        const cJSON *mx = cJSON_GetObjectItem(x, "model"), *my = cJSON_GetObjectItem(y, "model");
        CHECK(num(mx, "width") == num(my, "width"));
        CHECK(num(mx, "depth") == num(my, "depth"));
        CHECK(cJSON_IsNumber(cJSON_GetObjectItem(my, "drop")));
        cJSON_Delete(x);
        cJSON_Delete(y);
    }
    CHECK(same_branch > 100);
    space_free(a);
    space_free(b);
    space_free(c);
}

TEST(nested_flat_streams_unchanged)
{
    /* A flat parameter's stream is its position: adding a nested parameter after it does
     * not change its values (the golden values pin the flat ones themselves). */
    space_t *a = parse("{\"name\":\"f\",\"num_samples\":20,\"command\":[\"x\"],\"space\":{"
                       "\"u\":{\"uniform\":[0,1]},\"c\":{\"choice\":[1,2,3]}}}");
    space_t *b = parse("{\"name\":\"f\",\"num_samples\":20,\"command\":[\"x\"],\"space\":{"
                       "\"u\":{\"uniform\":[0,1]},\"c\":{\"choice\":[1,2,3]},"
                       "\"m\":{\"x\":{\"uniform\":[0,1]}}}}");
    REQUIRE(a && b);
    for (size_t i = 0; i < 20; i++) {
        cJSON *x = sample(a, i), *y = sample(b, i);
        REQUIRE(x && y);
        CHECK(num(x, "u") == num(y, "u"));
        CHECK(num(x, "c") == num(y, "c"));
        /* a nested value has its own stream, not the one of the flat parameter before it */
        CHECK(num(cJSON_GetObjectItem(y, "m"), "x") != num(y, "u"));
        cJSON_Delete(x);
        cJSON_Delete(y);
    }
    space_free(a);
    space_free(b);
}

TEST(nested_constants_stay_constants)
{
    /* Objects with no distribution inside are values, copied as written. */
    space_t *s = one_param("{\"choice\": [{\"name\": \"sgd\", \"momentum\": 0.9}, "
                           "{\"name\": \"adam\", \"betas\": [0.9, 0.999]}]}",
                           50, 1);
    REQUIRE(s);
    int seen = 0;
    for (size_t i = 0; i < 50; i++) {
        char *t = sample_text(s, i);
        REQUIRE(t);
        if (strcmp(t, "{\"p\":{\"name\":\"sgd\",\"momentum\":0.9}}") == 0) seen |= 1;
        if (strcmp(t, "{\"p\":{\"name\":\"adam\",\"betas\":[0.9,0.999]}}") == 0) seen |= 2;
        free(t);
    }
    CHECK_EQ_INT(seen, 3);
    space_free(s);
}

TEST(nested_choice_of_distributions)
{
    /* a value of a choice may itself be a distribution: the branch drawn is then drawn */
    const int n = 3000;
    space_t *s =
        one_param("{\"choice\": [{\"uniform\": [0, 1]}, 5, {\"qrandint\": [10, 20, 5]}]}", n, 9);
    REQUIRE(s);
    int uni = 0, five = 0, q[3] = {0}, other = 0;
    for (int i = 0; i < n; i++) {
        cJSON *c = sample(s, (size_t)i);
        REQUIRE(c);
        double v = num(c, "p");
        if (v >= 0 && v < 1)
            uni++;
        else if (v == 5)
            five++;
        else if (v == 10 || v == 15 || v == 20)
            q[(int)v / 5 - 2]++;
        else
            other++;
        cJSON_Delete(c);
    }
    CHECK_EQ_INT(other, 0);
    CHECK_NEAR(uni / (double)n, 1 / 3.0, 0.04);
    CHECK_NEAR(five / (double)n, 1 / 3.0, 0.04);
    for (int k = 0; k < 3; k++)
        CHECK_NEAR(q[k] / (double)n, 1 / 9.0, 0.03);
    space_free(s);
}

TEST(nested_grid_search)
{
    /* A grid inside an object is a grid of the experiment, ordered by path as Ray sorts
     * its path tuples: ("m", "a") comes before ("m-b",), although "m.a" > "m-b". */
    space_t *s =
        parse("{\"name\":\"g\",\"command\":[\"x\"],\"num_samples\":2,\"space\":{"
              "\"m-b\":{\"grid_search\":[1,2]},"
              "\"m\":{\"a\":{\"grid_search\":[\"p\",\"q\",\"r\"]},\"u\":{\"uniform\":[0,1]}}}}");
    REQUIRE(s);
    CHECK_EQ_INT(space_num_trials(s), 12);
    const char *want_a[] = {"p", "q", "r", "p", "q", "r"};
    const int want_b[] = {1, 1, 1, 2, 2, 2};
    for (size_t i = 0; i < 12; i++) {
        cJSON *c = sample(s, i);
        REQUIRE(c);
        const cJSON *m = cJSON_GetObjectItem(c, "m");
        CHECK_STR(cJSON_GetObjectItem(m, "a")->valuestring, want_a[i % 6]);
        CHECK_EQ_INT((int)num(c, "m-b"), want_b[i % 6]);
        cJSON_Delete(c);
    }
    space_free(s);
    /* grid values that hold distributions: each value in turn, drawn inside */
    s = one_param("{\"grid_search\": [{\"lr\": {\"loguniform\": [1e-4, 1e-2]}}, 5]}", 3, 0);
    REQUIRE(s);
    CHECK_EQ_INT(space_num_trials(s), 6);
    for (size_t i = 0; i < 6; i++) {
        cJSON *c = sample(s, i);
        REQUIRE(c);
        const cJSON *p = cJSON_GetObjectItem(c, "p");
        if (i % 2 == 0) {
            double lr = num(p, "lr");
            CHECK(lr >= 1e-4 && lr <= 1e-2);
        } else {
            CHECK(cJSON_IsNumber(p) && p->valuedouble == 5);
        }
        cJSON_Delete(c);
    }
    space_free(s);
}

TEST(nested_errors_located)
{
    /* every error inside a nested spec points at its place, as at the top level */
    EXPECT_AT("\"space\": {\"o\": {\"choice\": [{\"n\": \"sgd\", \"m\": {\"uniform\": [1, 0]}}]}}",
              "[1, 0]", "\"uniform\" needs low < high");
    EXPECT_AT("\"space\": {\"o\": {\"choice\": [{\"n\": \"sgd\", \"m\": {\"unifrom\": [0, 1]}}]}}",
              "\"unifrom\"", "unknown distribution \"unifrom\" (did you mean \"uniform\"?)");
    EXPECT_AT("\"space\": {\"m\": {\"w\": {\"choice\": []}, \"d\": {\"randint\": [1, 4]}}}", "[]}",
              "\"choice\" needs at least one value");
    EXPECT_AT("\"space\": {\"m\": {\"w\": {\"loguniform\": [0, 1]}, \"d\": 3}}", "0,",
              "\"loguniform\" needs low > 0");
    EXPECT_AT("\"space\": {\"o\": {\"choice\": [{\"g\": {\"grid_search\": [1, 2]}}]}}",
              "\"grid_search\"",
              "\"grid_search\" inside a value of \"choice\" or \"grid_search\" is not supported "
              "(the number of trials would depend on the value drawn): use \"choice\" here, or "
              "list the combinations in the outer grid_search");
    EXPECT_AT("\"space\": {\"o\": {\"choice\": [[{\"uniform\": [0, 1]}]]}}", "{\"uniform\"",
              "a distribution inside an array is not sampled: put it in an object (a nested "
              "space) or make the array a value of \"choice\"");
    /* at the top level too: before, the array was a constant and the trial got the text */
    EXPECT_AT("\"space\": {\"v\": [1, {\"uniform\": [0, 1]}]}", "{\"uniform\"",
              "a distribution inside an array is not sampled: put it in an object (a nested "
              "space) or make the array a value of \"choice\"");
    /* a top-level object without any distribution is still a misspelt distribution */
    EXPECT_AT("\"space\": {\"lr\": {\"logunifrom\": [1e-4, 1e-1]}}", "\"logunifrom\"",
              "unknown distribution \"logunifrom\" (did you mean \"loguniform\"?)");
    EXPECT_AT("\"space\": {\"m\": {\"width\": 64, \"depth\": 2}}", "\"width\"",
              "unknown distribution \"width\"");
}

TEST(nested_placeholders_checked)
{
    const char *sp = "\"space\": {\"opt\": {\"choice\": [{\"name\": \"sgd\", \"momentum\": "
                     "{\"uniform\": [0.5, 0.9]}}, {\"name\": \"adam\"}]}}";
    char b[1024];
    snprintf(b, sizeof b, "%s, \"command\": [\"p\", \"{opt.momentom}\"]", sp);
    /* doc() puts "command" first; give the whole document here */
    snprintf(g_doc, sizeof g_doc, "{\"name\": \"t\",\n%s}", b);
    const char *e = parse_err(g_doc);
    CHECK_CONTAINS(e, "command[1]: \"{opt.momentom}\" names no parameter (did you mean "
                      "\"opt.momentum\"?)");
    CHECK(strncmp(e, "t.json:2:", 9) == 0);
    snprintf(g_doc, sizeof g_doc, "{\"name\": \"t\",\n%s, \"command\": [\"p\", \"{opt.name.x}\"]}",
             sp);
    CHECK_CONTAINS(parse_err(g_doc), "command[1]: \"{opt.name.x}\" names no parameter");
    snprintf(g_doc, sizeof g_doc, "{\"name\": \"t\",\n%s, \"command\": [\"{opt.momentum}\"]}", sp);
    CHECK_CONTAINS(parse_err(g_doc), "command[0] (the program) cannot use \"{opt.momentum}\", "
                                     "which only some configurations have");
    /* every branch has opt.name: always there, no note */
    snprintf(g_doc, sizeof g_doc,
             "{\"name\": \"t\",\n%s, \"command\": [\"p\", \"{opt.name}\", \"--m\", "
             "\"{opt.momentum}\", \"--x={opt.momentum}\"]}",
             sp);
    space_t *s = parse(g_doc);
    REQUIRE(s);
    CHECK_STR(space_note(s, 0),
              "command[3]: \"{opt.momentum}\" has a value only in some branches of a choice or "
              "grid_search; a trial without it runs without command[3], but \"--m\" before it "
              "stays: write them as one element, \"--m={opt.momentum}\"");
    CHECK_STR(space_note(s, 1),
              "command[4]: \"{opt.momentum}\" has a value only in some branches of a choice or "
              "grid_search; a trial without it runs without command[4]");
    CHECK(space_note(s, 2) == NULL);
    space_free(s);
}

TEST(note_parameter_not_used_in_command)
{
    space_t *s = parse("{\"name\":\"u\",\"command\":[\"p\",\"--lr={lr}\",\"{m.w}\"],\"space\":{"
                       "\"lr\":{\"uniform\":[0,1]},\"wd\":{\"uniform\":[0,1]},\"epochs\":10,"
                       "\"m\":{\"w\":{\"choice\":[1,2]}}}}");
    REQUIRE(s);
    CHECK_STR(space_note(s, 0), "parameter \"wd\" is not used in command; the trial sees it only "
                                "through TUNE_CONFIG");
    CHECK_STR(space_note(s, 1), "parameter \"epochs\" is not used in command; the trial sees it "
                                "only through TUNE_CONFIG");
    CHECK(space_note(s, 2) == NULL);
    space_free(s);
    s = parse(example_json);
    REQUIRE(s);
    CHECK_STR(space_note(s, 0), "parameter \"momentum\" is not used in command; the trial sees it "
                                "only through TUNE_CONFIG");
    CHECK_STR(space_note(s, 1), "parameter \"layers\" is not used in command; the trial sees it "
                                "only through TUNE_CONFIG");
    CHECK(space_note(s, 2) == NULL);
    space_free(s);
}

TEST(render_nested_placeholders)
{
    space_t *s = parse(nested_json);
    REQUIRE(s);
    int sgd = 0, adam = 0;
    for (size_t i = 0; i < 40; i++) {
        cJSON *c = sample(s, i);
        REQUIRE(c);
        char **argv = NULL, err[256];
        REQUIRE(space_render_argv(s, c, "0", "d", &argv, err, sizeof err) == 0);
        const cJSON *o = cJSON_GetObjectItem(c, "optimizer");
        char want[64], *js = space_json_print(o); /* numbers as argv gets them */
        const char *name = cJSON_GetObjectItem(o, "name")->valuestring;
        snprintf(want, sizeof want, "--opt=%s", name);
        CHECK_STR(argv[1], want);
        /* the element of the branch not drawn is left out */
        int is_sgd = strcmp(name, "sgd") == 0;
        const char *k = is_sgd ? "--m=" : "--b1=";
        CHECK(strncmp(argv[2], k, strlen(k)) == 0);
        CHECK(strtod(argv[2] + strlen(k), NULL) == num(o, is_sgd ? "momentum" : "beta1"));
        CHECK(atof(argv[3]) == num(cJSON_GetObjectItem(c, "model"), "width"));
        CHECK_STR(argv[4], js); /* the whole object as JSON */
        CHECK(argv[5] == NULL);
        strcmp(name, "sgd") == 0 ? sgd++ : adam++;
        free(js);
        space_argv_free(argv);
        cJSON_Delete(c);
    }
    CHECK(sgd > 0 && adam > 0);
    /* a top-level parameter missing from the configuration is still an error; a key that
     * itself holds a dot is found whole */
    cJSON *c = cJSON_Parse("{\"model\": {\"width\": 3}}");
    char **argv = NULL, err[256];
    CHECK_EQ_INT(space_render_argv(s, c, "0", "d", &argv, err, sizeof err), SPACE_EINVAL);
    CHECK_STR(err, "command[1]: the configuration has no value for \"{optimizer.name}\"");
    cJSON_Delete(c);
    space_free(s);
    char **av =
        render("{\"name\":\"r\",\"command\":[\"p\",\"{a.b}\",\"{a.c.d}\",\"{x.y.z}\"],"
               "\"space\":{\"a.b\":1,\"a\":{\"c.d\":{\"choice\":[2]},\"e\":{\"uniform\":[0,1]}},"
               "\"x\":{\"y\":{\"z\":{\"choice\":[\"deep\"]}}}}}",
               "{\"a.b\": 1, \"a\": {\"c.d\": 2, \"e\": 0.5}, \"x\": {\"y\": {\"z\": \"deep\"}}}",
               "0", "d");
    REQUIRE(av);
    CHECK_STR(av[1], "1");
    CHECK_STR(av[2], "2");
    CHECK_STR(av[3], "deep");
    space_argv_free(av);
}

/* ---- several objectives and constraints (issue 30) ------------------------------------ */
TEST(objectives_parsed)
{
    space_t *s = parse(doc("\"metric\": [\"val_loss\", \"latency_ms\", \"val_acc\"], "
                           "\"mode\": [\"min\", \"min\", \"max\"]"));
    REQUIRE(s);
    const space_settings_t *t = space_settings(s);
    CHECK_EQ_INT((int)t->nobjectives, 3);
    CHECK_STR(t->metrics[0], "val_loss");
    CHECK_STR(t->metrics[1], "latency_ms");
    CHECK_STR(t->metrics[2], "val_acc");
    CHECK(t->metric == t->metrics[0]);
    CHECK_EQ_INT(t->modes[0], SPACE_MODE_MIN);
    CHECK_EQ_INT(t->modes[1], SPACE_MODE_MIN);
    CHECK_EQ_INT(t->modes[2], SPACE_MODE_MAX);
    CHECK_EQ_INT(t->mode, SPACE_MODE_MIN);
    CHECK_EQ_INT((int)t->nconstraints, 0);
    CHECK(t->constraints == NULL);
    space_free(s);

    /* the first objective's mode is "mode" */
    s = parse(doc("\"metric\": [\"val_acc\", \"latency_ms\"], \"mode\": [\"max\", \"min\"]"));
    REQUIRE(s);
    t = space_settings(s);
    CHECK_EQ_INT(t->mode, SPACE_MODE_MAX);
    CHECK_EQ_INT(t->modes[1], SPACE_MODE_MIN);
    space_free(s);

    /* a string is one objective, as before; so is a list of one, with either mode */
    const char *one[] = {
        "\"metric\": \"loss\", \"mode\": \"max\"", "\"metric\": [\"loss\"], \"mode\": \"max\"",
        "\"metric\": [\"loss\"], \"mode\": [\"max\"]", "\"metric\": \"loss\", \"mode\": [\"max\"]"};
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
        s = parse(doc(one[i]));
        REQUIRE(s);
        t = space_settings(s);
        CHECK_EQ_INT((int)t->nobjectives, 1);
        CHECK_STR(t->metric, "loss");
        CHECK(t->metrics[0] == t->metric);
        CHECK_EQ_INT(t->mode, SPACE_MODE_MAX);
        CHECK_EQ_INT(t->modes[0], SPACE_MODE_MAX);
        space_free(s);
    }
    /* no metric: no objectives; a list of one without a mode is "min" */
    s = parse(doc("\"mode\": \"max\""));
    REQUIRE(s);
    CHECK_EQ_INT((int)space_settings(s)->nobjectives, 0);
    CHECK(space_settings(s)->metric == NULL);
    CHECK_EQ_INT(space_settings(s)->mode, SPACE_MODE_MAX);
    space_free(s);
    s = parse(doc("\"metric\": [\"loss\"]"));
    REQUIRE(s);
    CHECK_EQ_INT(space_settings(s)->modes[0], SPACE_MODE_MIN);
    space_free(s);

    /* every scheduler that ranks several objectives (or runs everything) takes them */
    const char *scheds[] = {"{\"type\": \"asha\"}",
                            "{\"type\": \"asha\", \"variant\": \"promotion\"}",
                            "{\"type\": \"hyperband\"}", "{\"type\": \"fifo\"}"};
    for (size_t i = 0; i < sizeof scheds / sizeof scheds[0]; i++) {
        char extra[512];
        snprintf(extra, sizeof extra,
                 "\"metric\": [\"a\", \"b\"], \"mode\": [\"min\", \"max\"], \"scheduler\": %s",
                 scheds[i]);
        s = parse(doc(extra));
        CHECK(s != NULL);
        space_free(s);
    }
    /* random search too, said or not */
    s = parse(doc("\"metric\": [\"a\", \"b\"], \"mode\": [\"min\", \"max\"], "
                  "\"search\": {\"type\": \"random\"}"));
    CHECK(s != NULL);
    space_free(s);
}

TEST(err_objectives)
{
    EXPECT_AT("\"metric\": []", "[",
              "\"metric\" is an empty list: name at least one reported value, such as "
              "[\"val_loss\", \"latency_ms\"]");
    EXPECT_AT("\"metric\": [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\", \"i\"]", "[",
              "\"metric\" lists 9 objectives; at most 8 are allowed");
    EXPECT_AT("\"metric\": [\"a\", 3]", "3",
              "\"metric\" entries must be non-empty strings (the names of reported values), "
              "not a number");
    EXPECT_AT("\"metric\": [\"a\", \"\"]", "\"\"",
              "\"metric\" entries must be non-empty strings (the names of reported values), "
              "not an empty string");
    EXPECT_AT_N("\"metric\": [\"a\", \"b\", \"a\"], \"mode\": [\"min\", \"min\", \"min\"]", "\"a\"",
                1, "\"metric\" lists \"a\" twice (entries 1 and 3): name each objective once");
    /* a missing mode, a string mode, lengths that differ: the fix keeps what is given and
     * guesses the rest from the names */
    EXPECT_AT("\"metric\": [\"val_loss\", \"val_acc\"]", "[",
              "\"mode\" is missing for 2 metrics: add \"mode\": [\"min\", \"max\"] (one per "
              "metric, in the order of \"metric\")");
    EXPECT_AT("\"metric\": [\"loss\", \"latency\"], \"mode\": \"max\"", "\"max\"",
              "\"mode\" is one string for 2 metrics: write \"mode\": [\"max\", \"min\"] (one per "
              "metric, in the order of \"metric\")");
    EXPECT_AT("\"metric\": [\"a\", \"b\"], \"mode\": [\"min\"]", "[\"min",
              "\"mode\" has 1 entry for 2 metrics: write \"mode\": [\"min\", \"min\"]");
    EXPECT_AT("\"metric\": [\"a\", \"b\"], \"mode\": [\"max\", \"min\", \"max\"]", "[\"max",
              "\"mode\" has 3 entries for 2 metrics: write \"mode\": [\"max\", \"min\"]");
    EXPECT_AT("\"metric\": \"a\", \"mode\": [\"min\", \"max\"]", "[",
              "\"mode\" has 2 entries for 1 metric: write \"mode\": \"min\"");
    EXPECT_AT("\"metric\": \"a\", \"mode\": []", "[",
              "\"mode\" is an empty list: write \"mode\": \"min\"");
    EXPECT_AT("\"mode\": [\"min\", \"max\"]", "[",
              "\"mode\" has 2 entries but there is no \"metric\": add \"metric\": [...] with one "
              "reported value per mode");
    EXPECT_AT("\"metric\": [\"a\", \"b\"], \"mode\": [\"min\", \"maximize\"]", "\"maximize\"",
              "\"mode\" must be \"min\" or \"max\" (did you mean \"max\"?)");
    EXPECT_AT("\"metric\": [\"a\", \"b\"], \"mode\": [\"min\", 1]", "1]",
              "\"mode\" must be \"min\" or \"max\"");
    /* the higher-is-better refusal holds for a list of one, pointing at the name */
    EXPECT_AT("\"metric\": [\"val_accuracy\"]", "\"val_accuracy\"",
              "metric \"val_accuracy\" reads as higher-is-better, but \"mode\" is not given and "
              "defaults to \"min\": add \"mode\": \"max\" (or \"mode\": \"min\" if smaller really "
              "is better)");
}

TEST(err_objectives_scheduler_search_stop)
{
    const char *two = "\"metric\": [\"a\", \"b\"], \"mode\": [\"min\", \"min\"], ";
    char extra[1024];
    snprintf(extra, sizeof extra, "%s\"scheduler\": {\"type\": \"median\"}", two);
    EXPECT_AT(extra, "\"median\"",
              "the \"median\" scheduler takes one objective, and \"metric\" lists 2: median "
              "stopping compares a trial's metric with the median of the others', and several "
              "objectives have no single median; use \"asha\" or \"hyperband\" (which rank "
              "several objectives at each rung) or \"fifo\"");
    snprintf(extra, sizeof extra, "%s\"scheduler\": {\"type\": \"pbt\"}", two);
    EXPECT_AT(extra, "\"pbt\"",
              "the \"pbt\" scheduler takes one objective, and \"metric\" lists 2: PBT replaces "
              "the worst quantile of trials by the best by one metric (Ray Tune refuses several "
              "too), and several objectives have no single best quantile; use \"asha\" or "
              "\"hyperband\" (which rank several objectives at each rung) or \"fifo\"");
    /* one objective in a list is one objective: median takes it */
    space_t *s =
        parse(doc("\"metric\": [\"a\"], \"mode\": \"min\", \"scheduler\": {\"type\": \"median\"}"));
    CHECK(s != NULL);
    space_free(s);
    snprintf(extra, sizeof extra, "%s\"search\": {\"type\": \"tpe\", \"preset\": \"bohb\"}", two);
    EXPECT_AT(extra, "\"bohb\"",
              "\"search\" preset \"bohb\" models one objective (HpBandSter's BOHB ranks one "
              "loss), and \"metric\" lists 2: use \"preset\": \"optuna\" (MOTPE, Optuna's "
              "multi-objective TPE) or leave \"preset\" out");
    /* MOTPE: tpe with several objectives is taken */
    snprintf(extra, sizeof extra, "%s\"search\": {\"type\": \"tpe\"}", two);
    s = parse(doc(extra));
    CHECK(s != NULL);
    space_free(s);
    snprintf(extra, sizeof extra, "%s\"stop\": {\"a\": 0.1}, \"stop_experiment_on_target\": true",
             two);
    EXPECT_AT(extra, "true",
              "\"stop_experiment_on_target\" takes one objective, and \"metric\" lists 2: no "
              "single target says a trade-off is good enough. Remove it (\"stop\" targets still "
              "end each trial that reaches one; \"num_samples\" or \"time_budget_s\" end the "
              "run)");
}

/* A "stop" target on an objective is reached when the result is at least as good in that
 * objective's mode; on any other key when result >= target (Ray Tune's). */
TEST(stop_targets_follow_each_objective_mode)
{
    space_t *s = parse(doc("\"metric\": [\"acc\", \"loss\"], \"mode\": [\"max\", \"min\"], "
                           "\"stop\": {\"acc\": 0.9, \"loss\": 0.1, \"training_iteration\": 5}"));
    REQUIRE(s);
    const space_settings_t *t = space_settings(s);
    REQUIRE(t->nstop == 3);
    for (size_t i = 0; i < t->nstop; i++) {
        space_cmp_t want = strcmp(t->stop[i].key, "loss") == 0 ? SPACE_CMP_LE : SPACE_CMP_GE;
        CHECK_EQ_INT(space_stop_cmp(t, i), want);
    }
    space_free(s);
    s = parse(doc("\"metric\": \"loss\", \"stop\": {\"loss\": 0.1, \"acc\": 0.5}"));
    REQUIRE(s);
    t = space_settings(s);
    CHECK_EQ_INT(space_stop_cmp(t, 0), SPACE_CMP_LE);
    CHECK_EQ_INT(space_stop_cmp(t, 1), SPACE_CMP_GE);
    space_free(s);
}

TEST(constraints_parsed)
{
    /* allowed with one objective, on an objective too */
    space_t *s = parse(doc("\"metric\": \"latency_ms\", \"constraints\": {\"gpu_mem_gb\": "
                           "{\"<=\": 16}, \"latency_ms\": {\"<\": 20, \">=\": 1}, \"x\": {\">\": "
                           "-2.5}}"));
    REQUIRE(s);
    const space_settings_t *t = space_settings(s);
    REQUIRE(t->nconstraints == 4);
    const char *keys[] = {"gpu_mem_gb", "latency_ms", "latency_ms", "x"};
    space_cmp_t ops[] = {SPACE_CMP_LE, SPACE_CMP_LT, SPACE_CMP_GE, SPACE_CMP_GT};
    double bounds[] = {16, 20, 1, -2.5};
    for (size_t i = 0; i < 4; i++) {
        CHECK_STR(t->constraints[i].key, keys[i]);
        CHECK_EQ_INT(t->constraints[i].op, ops[i]);
        CHECK_NEAR(t->constraints[i].bound, bounds[i], 0);
    }
    CHECK_EQ_INT((int)t->nobjectives, 1);
    space_free(s);
    /* without any metric as well; a point range is allowed */
    s = parse(doc("\"constraints\": {\"g\": {\">=\": 5, \"<=\": 5}}"));
    REQUIRE(s);
    CHECK_EQ_INT((int)space_settings(s)->nconstraints, 2);
    space_free(s);
}

TEST(err_constraints)
{
    const char *eg = "{\"gpu_mem_gb\": {\"<=\": 16}, \"latency_ms\": {\"<\": 20}}";
    char msg[512];
    snprintf(msg, sizeof msg,
             "\"constraints\" must be an object of reported keys, each with its bounds, such as %s",
             eg);
    EXPECT_AT("\"constraints\": [1]", "[", msg);
    EXPECT_AT("\"constraints\": 3", "3", msg);
    snprintf(msg, sizeof msg,
             "\"constraints\" is empty: remove it, or bound a reported value, such as %s", eg);
    EXPECT_AT("\"constraints\": {}", "{", msg);
    EXPECT_AT("\"constraints\": {\"g\": 16}", "16",
              "constraint \"g\" must be an object of comparisons, such as {\"<=\": 16}, not a "
              "number");
    EXPECT_AT_N("\"constraints\": {\"g\": {}}", "{", 1,
                "constraint \"g\" has no comparison: write one such as {\"<=\": 16} (\"<=\", "
                "\">=\", \"<\" or \">\")");
    EXPECT_AT("\"constraints\": {\"\": {\"<=\": 1}}", "\"\"", "a constraint needs a result key");
    EXPECT_AT("\"constraints\": {\"g\": {\"=<\": 16}}", "\"=<\"",
              "constraint \"g\": unknown comparison \"=<\" (did you mean \"<=\"?); use \"<=\", "
              "\">=\", \"<\" or \">\"");
    EXPECT_AT("\"constraints\": {\"g\": {\"<=\": 1, \"=>\": 0}}", "\"=>\"",
              "constraint \"g\": unknown comparison \"=>\" (did you mean \">=\"?); use \"<=\", "
              "\">=\", \"<\" or \">\"");
    EXPECT_AT("\"constraints\": {\"g\": {\"LTE\": 16}}", "\"LTE\"",
              "constraint \"g\": unknown comparison \"LTE\" (did you mean \"<=\"?); use \"<=\", "
              "\">=\", \"<\" or \">\"");
    EXPECT_AT("\"constraints\": {\"g\": {\"between\": 16}}", "\"between\"",
              "constraint \"g\": unknown comparison \"between\"; use \"<=\", \">=\", \"<\" or "
              "\">\"");
    const char *eq = "constraint \"g\": %s is not a constraint on a real value (a measured value "
                     "almost never equals a bound exactly): use a range, such as {\">=\": low, "
                     "\"<=\": high}";
    snprintf(msg, sizeof msg, eq, "\"==\"");
    EXPECT_AT("\"constraints\": {\"g\": {\"==\": 16}}", "\"==\"", msg);
    snprintf(msg, sizeof msg, eq, "\"=\"");
    EXPECT_AT("\"constraints\": {\"g\": {\"=\": 16}}", "\"=\"", msg);
    EXPECT_AT("\"constraints\": {\"g\": {\"<=\": \"16\"}}", "\"16\"",
              "constraint \"g\" \"<=\": the bound must be a number, not a string");
    EXPECT_AT("\"constraints\": {\"g\": {\"<=\": null}}", "null",
              "constraint \"g\" \"<=\": the bound must be a number, not null");
    /* a bound that is not finite cannot be written: the JSON reader refuses it */
    EXPECT_AT("\"constraints\": {\"g\": {\"<=\": -1e999}}", "-1e999",
              "number -1e999 is out of range");
    EXPECT_AT("\"constraints\": {\"g\": {\">=\": 5, \"<=\": 1}}",
              "{\">=", "constraint \"g\" can never be met: it asks for a value >= 5 and <= 1");
    EXPECT_AT("\"constraints\": {\"g\": {\"<\": 5, \">\": 5}}", "{\"<",
              "constraint \"g\" can never be met: it asks for a value > 5 and < 5");
    EXPECT_AT("\"constraints\": {\"g\": {\"<=\": 5, \">\": 5}}",
              "{\"<=", "constraint \"g\" can never be met: it asks for a value > 5 and <= 5");
    /* at most SPACE_MAX_CONSTRAINTS comparisons: the first one past it is pointed at */
    char extra[2048] = "\"constraints\": {";
    for (int i = 0; i <= SPACE_MAX_CONSTRAINTS; i++) {
        char one[64];
        snprintf(one, sizeof one, "%s\"k%d\": {\"<=\": %d}", i ? ", " : "", i, i);
        strcat(extra, one);
    }
    strcat(extra, "}");
    snprintf(msg, sizeof msg,
             "\"constraints\" has more than %d comparisons: keep the ones that matter",
             SPACE_MAX_CONSTRAINTS);
    EXPECT_AT_N(extra, "\"<=\"", SPACE_MAX_CONSTRAINTS, msg);
    /* exactly the most is fine */
    char *last = strrchr(extra, ',');
    REQUIRE(last);
    strcpy(last, "}");
    space_t *s = parse(doc(extra));
    REQUIRE(s);
    CHECK_EQ_INT((int)space_settings(s)->nconstraints, SPACE_MAX_CONSTRAINTS);
    space_free(s);
}

/* A result's objectives: as reported for min, negated for max, NaN where a value is
 * missing, not a number or not finite. */
TEST(space_objectives_values)
{
    space_t *s = parse(doc("\"metric\": [\"loss\", \"acc\", \"lat\", \"gone\", \"inf\", \"nan\"], "
                           "\"mode\": [\"min\", \"max\", \"max\", \"min\", \"min\", \"max\"]"));
    REQUIRE(s);
    const space_settings_t *t = space_settings(s);
    cJSON *r = cJSON_Parse("{\"loss\": 0.25, \"acc\": 0.9, \"lat\": \"12\", \"x\": 1}");
    REQUIRE(r);
    cJSON_AddNumberToObject(r, "inf", INFINITY);
    cJSON_AddNumberToObject(r, "nan", NAN);
    double out[SPACE_MAX_OBJECTIVES + 1];
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        out[i] = 12345;
    space_objectives(t, r, out);
    CHECK_NEAR(out[0], 0.25, 0);
    CHECK_NEAR(out[1], -0.9, 0);
    CHECK(isnan(out[2]));         /* a string is not a number */
    CHECK(isnan(out[3]));         /* missing */
    CHECK(isnan(out[4]));         /* infinite */
    CHECK(isnan(out[5]));         /* NaN */
    CHECK_NEAR(out[6], 12345, 0); /* nothing written past nobjectives */
    cJSON_Delete(r);
    /* a boolean is not a number either; a max objective at 0 stays 0 */
    r = cJSON_Parse("{\"loss\": true, \"acc\": 0}");
    REQUIRE(r);
    space_objectives(t, r, out);
    CHECK(isnan(out[0]));
    CHECK(out[1] == 0);
    cJSON_Delete(r);
    space_free(s);

    /* no metric: nothing written */
    s = parse(doc("\"seed\": 1"));
    REQUIRE(s);
    out[0] = 7;
    r = cJSON_Parse("{\"loss\": 1}");
    space_objectives(space_settings(s), r, out);
    CHECK_NEAR(out[0], 7, 0);
    cJSON_Delete(r);
    space_free(s);
}

static double violation_of(const space_settings_t *t, const char *json)
{
    cJSON *r = cJSON_Parse(json);
    if (!r) return -1;
    double v = space_violation(t, r);
    cJSON_Delete(r);
    return v;
}

/* Violations sum |value - bound| over the constraints not met; a loose one met with
 * equality is met; a strict one met with equality is violated by the smallest positive
 * double; a constrained key missing or not a number is infinitely far. */
TEST(space_violation_values)
{
    space_t *s = parse(doc("\"constraints\": {\"g\": {\"<=\": 16}, \"l\": {\"<\": 20, \">=\": 1}, "
                           "\"a\": {\">\": 0}}"));
    REQUIRE(s);
    const space_settings_t *t = space_settings(s);
    CHECK(violation_of(t, "{\"g\": 16, \"l\": 1, \"a\": 0.5}") == 0);
    CHECK(violation_of(t, "{\"g\": 10, \"l\": 19.5, \"a\": 3, \"other\": 1e9}") == 0);
    CHECK_NEAR(violation_of(t, "{\"g\": 17, \"l\": 10, \"a\": 1}"), 1, 0);
    CHECK_NEAR(violation_of(t, "{\"g\": 18, \"l\": 0.5, \"a\": 1}"), 2.5, 0);
    CHECK_NEAR(violation_of(t, "{\"g\": 16, \"l\": 25, \"a\": -2}"), 7, 0);
    /* strict at equality: infeasible by the least amount there is */
    CHECK(violation_of(t, "{\"g\": 16, \"l\": 20, \"a\": 1}") == DBL_TRUE_MIN);
    CHECK(violation_of(t, "{\"g\": 16, \"l\": 10, \"a\": 0}") == DBL_TRUE_MIN);
    CHECK(violation_of(t, "{\"g\": 16, \"l\": 10, \"a\": 0}") > 0);
    /* a strict equality beside a real violation adds nothing measurable */
    CHECK_NEAR(violation_of(t, "{\"g\": 17, \"l\": 20, \"a\": 1}"), 1, 0);
    /* missing, a string, null, a boolean: +inf */
    CHECK(isinf(violation_of(t, "{\"l\": 10, \"a\": 1}")));
    CHECK(isinf(violation_of(t, "{\"g\": \"1\", \"l\": 10, \"a\": 1}")));
    CHECK(isinf(violation_of(t, "{\"g\": null, \"l\": 10, \"a\": 1}")));
    CHECK(isinf(violation_of(t, "{\"g\": true, \"l\": 10, \"a\": 1}")));
    cJSON *r = cJSON_Parse("{\"l\": 10, \"a\": 1}");
    REQUIRE(r);
    cJSON_AddNumberToObject(r, "g", NAN);
    CHECK(isinf(space_violation(t, r)) && space_violation(t, r) > 0);
    cJSON_Delete(r);
    space_free(s);
    /* no constraints: always feasible, even with nothing reported */
    s = parse(doc("\"metric\": \"loss\""));
    REQUIRE(s);
    CHECK(violation_of(space_settings(s), "{}") == 0);
    space_free(s);
}

TEST(settings_json_objectives_and_constraints)
{
    space_t *s = parse(doc("\"metric\": [\"val_loss\", \"val_acc\"], \"mode\": [\"min\", "
                           "\"max\"], \"constraints\": {\"gpu_mem_gb\": {\"<=\": 16}, "
                           "\"latency_ms\": {\"<\": 20, \">=\": 1}}"));
    REQUIRE(s);
    cJSON *j = space_settings_json(s);
    REQUIRE(j);
    char *txt = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "metric"));
    CHECK_STR(txt, "[\"val_loss\",\"val_acc\"]");
    free(txt);
    txt = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "mode"));
    CHECK_STR(txt, "[\"min\",\"max\"]");
    free(txt);
    txt = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "constraints"));
    CHECK_STR(txt, "{\"gpu_mem_gb\":{\"<=\":16},\"latency_ms\":{\"<\":20,\">=\":1}}");
    free(txt);
    cJSON_Delete(j);
    space_free(s);

    /* one objective: strings as before, and no "constraints" unless there are some */
    s = parse(doc("\"metric\": [\"val_loss\"], \"mode\": [\"max\"]"));
    REQUIRE(s);
    j = space_settings_json(s);
    REQUIRE(j);
    CHECK_STR(cJSON_GetObjectItem(j, "metric")->valuestring, "val_loss");
    CHECK_STR(cJSON_GetObjectItem(j, "mode")->valuestring, "max");
    CHECK(cJSON_GetObjectItem(j, "constraints") == NULL);
    cJSON_Delete(j);
    space_free(s);
    s = parse(doc("\"metric\": \"loss\", \"constraints\": {\"g\": {\">\": 0.5}}"));
    REQUIRE(s);
    j = space_settings_json(s);
    REQUIRE(j);
    CHECK_STR(cJSON_GetObjectItem(j, "metric")->valuestring, "loss");
    txt = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "constraints"));
    CHECK_STR(txt, "{\"g\":{\">\":0.5}}");
    free(txt);
    cJSON_Delete(j);
    space_free(s);
}

/* Every ```json block of docs/space.md marked "<!-- test: space.json" parses, and the
 * several-objectives example means what the page says. The page is found beside this file
 * (CMake compiles it by its full path). */
TEST(docs_space_md_examples_parse)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *slash = strrchr(path, '/');
    REQUIRE(slash && slash - path > 6 && strncmp(slash - 6, "/tests", 6) == 0);
    strcpy(slash - 6, "/docs/space.md");
    FILE *f = fopen(path, "r");
    REQUIRE(f);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    int blocks = 0, several = 0;
    for (const char *p = text; (p = strstr(p, "<!-- test: space.json")) != NULL; p++) {
        const char *open = strstr(p, "```json\n"), *close = open ? strstr(open + 8, "\n```") : NULL;
        REQUIRE(open && close);
        size_t len = (size_t)(close - open - 8);
        space_t *s = NULL;
        char err[1024];
        if (space_parse(open + 8, len, "space.md block", &s, err, sizeof err) != 0) {
            fprintf(stderr, "docs/space.md block %d: %s\n", blocks, err);
            CHECK(0);
            continue;
        }
        const space_settings_t *t = space_settings(s);
        if (t->nobjectives == 2) {
            several++;
            CHECK_STR(t->metrics[1], "latency_ms");
            CHECK_EQ_INT((int)t->nconstraints, 3);
            CHECK_EQ_INT(t->sched.type, SPACE_SCHED_ASHA);
        }
        space_free(s);
        blocks++;
    }
    CHECK(blocks >= 1);
    CHECK_EQ_INT(several, 1);
}

TT_MAIN
