/* test_vocab: one vocabulary, one place. Trial statuses, scheduler (policy) names and the
 * metric's mode are each spelled once (sched.h, space.h); these tests hold every other
 * spelling to it: the store's allow-list and schema.sql's CHECK, the policy table, and
 * what space.json accepts and space_settings_json writes back. Not for: behaviour of the
 * store, the parser or the policies beyond their names. */
#include "tinytest.h"

#include "scheduler/sched.h"
#include "search/settings.h"
#include "search/space.h"
#include "store/store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The enum's names in order, joined the way the store's error lists them: "A, B or C". */
static void status_list(char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int s = 0; s < SCHED_TRIAL_NSTATUS; s++) {
        const char *sep = s == 0 ? "" : s + 1 < SCHED_TRIAL_NSTATUS ? ", " : " or ";
        k += (size_t)snprintf(buf + k, n - k, "%s%s", sep, sched_status_name(s));
    }
}

TEST(status_names_are_distinct_and_upper_case)
{
    for (int s = 0; s < SCHED_TRIAL_NSTATUS; s++) {
        const char *a = sched_status_name(s);
        REQUIRE(a && *a && strcmp(a, "?") != 0);
        for (const char *c = a; *c; c++)
            CHECK(*c >= 'A' && *c <= 'Z');
        for (int t = 0; t < s; t++)
            CHECK(strcmp(a, sched_status_name(t)) != 0);
    }
    CHECK_STR(sched_status_name(SCHED_TRIAL_NSTATUS), "?");
    CHECK_STR(sched_status_name(SCHED_TRIAL_TERMINATED), "TERMINATED");
}

/* Every status the scheduler can be in is one the store records (its allow-list and the
 * schema's CHECK both pass it, and it reads back unchanged), and the store allows nothing
 * else: its error for an unknown status lists exactly the scheduler's names, in order. */
TEST(store_accepts_exactly_the_scheduler_statuses)
{
    char dir[512], db[600], err[512];
    const char *base = getenv("TUNE_BINARY_DIR");
    if (!base || access(base, W_OK) != 0) base = "/tmp";
    snprintf(dir, sizeof dir, "%s/test_vocab_XXXXXX", base);
    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(db, sizeof db, "%s/tune.db", dir);
    store_t *st = NULL;
    REQUIRE(store_open(db, 0, &st, err, sizeof err) == 0);
    store_experiment_t e = {.name = "vocab", .metric = "loss", .scheduler = "fifo"};
    int64_t exp = 0, tr = 0;
    REQUIRE(store_experiment_create(st, &e, 1.0, &exp, err, sizeof err) == 0);
    REQUIRE(store_trial_create(st, exp, 0, "t0", "{}", NULL, &tr, err, sizeof err) == 0);
    sqlite3 *rd = NULL;
    REQUIRE(sqlite3_open(db, &rd) == SQLITE_OK);
    for (int s = 0; s < SCHED_TRIAL_NSTATUS; s++) {
        store_trial_update_t u = {.fields = STORE_TU_STATUS, .status = sched_status_name(s)};
        if (store_trial_update(st, tr, &u, err, sizeof err) != 0) {
            fprintf(stderr, "status %s refused: %s\n", sched_status_name(s), err);
            CHECK(0);
            continue;
        }
        sqlite3_stmt *q = NULL;
        REQUIRE(sqlite3_prepare_v2(rd, "SELECT status FROM trials", -1, &q, NULL) == SQLITE_OK);
        REQUIRE(sqlite3_step(q) == SQLITE_ROW);
        CHECK_STR((const char *)sqlite3_column_text(q, 0), sched_status_name(s));
        sqlite3_finalize(q);
    }
    sqlite3_close(rd);
    store_trial_update_t bad = {.fields = STORE_TU_STATUS, .status = "DONE"};
    CHECK(store_trial_update(st, tr, &bad, err, sizeof err) != 0);
    char want[256], paren[300];
    status_list(want, sizeof want);
    snprintf(paren, sizeof paren, "\"DONE\" (%s)", want);
    CHECK_CONTAINS(err, paren);
    store_close(st);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* schema.sql's CHECK on trials.status names the same set as the enum, so a status added to
 * one place and not the other fails here rather than at a user's first such trial. */
TEST(schema_check_names_the_scheduler_statuses)
{
    const char *src = getenv("TUNE_SOURCE_DIR");
    REQUIRE(src != NULL);
    char path[600];
    snprintf(path, sizeof path, "%s/store/schema.sql", src);
    FILE *f = fopen(path, "r");
    REQUIRE(f != NULL);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *c = strstr(text, "CREATE TABLE trials (");
    REQUIRE(c != NULL);
    c = strstr(c, "CHECK (status = ");
    REQUIRE(c != NULL);
    const char *end = strstr(c, "),");
    REQUIRE(end != NULL);
    int found = 0;
    for (const char *q = strchr(c, '\''); q && q < end; q = strchr(q, '\'')) {
        const char *close = strchr(q + 1, '\'');
        REQUIRE(close != NULL);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(close - q - 1), q + 1);
        int known = 0;
        for (int s = 0; s < SCHED_TRIAL_NSTATUS; s++)
            known |= strcmp(name, sched_status_name(s)) == 0;
        if (!known) fprintf(stderr, "schema.sql allows %s, which sched.h does not name\n", name);
        CHECK(known);
        found++;
        q = close + 1;
    }
    CHECK_EQ_INT(found, SCHED_TRIAL_NSTATUS);
}

static space_t *parse_with(const char *mode, const char *sched, char *err, size_t errlen)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"name\": \"v\", \"metric\": \"loss\", \"mode\": \"%s\", \"command\": [\"true\"],"
             " \"scheduler\": {\"type\": \"%s\"}, \"space\": {\"x\": {\"uniform\": [0, 1]}}}",
             mode, sched);
    space_t *sp = NULL;
    if (space_parse(text, strlen(text), "space.json", &sp, err, errlen) != 0) return NULL;
    return sp;
}

/* space.json accepts each scheduler name and mode name from space.h and maps it to its
 * enum, space_settings_json writes the same name back, and the policy built for that
 * scheduler calls itself by the same name (policy.c's table). */
TEST(scheduler_and_mode_names_round_trip)
{
    char err[512];
    for (int t = 0; t < SPACE_NSCHED; t++) {
        for (int m = 0; m < SPACE_NMODES; m++) {
            space_t *sp = parse_with(space_mode_name(m), space_sched_name(t), err, sizeof err);
            if (!sp) fprintf(stderr, "%s/%s: %s\n", space_sched_name(t), space_mode_name(m), err);
            REQUIRE(sp != NULL);
            const space_settings_t *set = space_settings(sp);
            CHECK_EQ_INT((int)set->sched.type, t);
            CHECK_EQ_INT((int)set->mode, m);
            cJSON *j = space_settings_json(sp);
            REQUIRE(j != NULL);
            CHECK_STR(cJSON_GetObjectItem(j, "mode")->valuestring, space_mode_name(m));
            CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "scheduler"), "type")->valuestring,
                      space_sched_name(t));
            cJSON_Delete(j);
            space_free(sp);
        }
        space_t *sp = parse_with("min", "fifo", err, sizeof err);
        REQUIRE(sp != NULL);
        sched_opts_t o = {.sched = {.type = t,
                                    .max_t = 10,
                                    .grace_period = 1,
                                    .reduction_factor = 3,
                                    .brackets = 1,
                                    .min_samples_required = 3,
                                    .stop_last_trials = 1,
                                    .hard_stop = 1,
                                    .perturbation_interval = 4,
                                    .quantile_fraction = 0.25,
                                    .perturbation_factors = {1.2, 0.8},
                                    .nfactors = 2},
                          .space = sp};
        sched_policy_t *p = NULL;
        REQUIRE(sched_policy_new(&o, &p, err, sizeof err) == 0);
        CHECK_STR(sched_policy_name(p), space_sched_name(t));
        sched_policy_free(p);
        space_free(sp);
    }
    CHECK_STR(space_sched_name(SPACE_NSCHED), "?");
    CHECK_STR(space_mode_name(SPACE_NMODES), "?");
    CHECK(parse_with("maximize", "fifo", err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "\"mode\" must be \"min\" or \"max\"");
    CHECK(parse_with("min", "hb_bohb", err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "unknown scheduler type");
}

TT_MAIN
