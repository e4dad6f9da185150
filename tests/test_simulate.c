/* End-to-end tests of what `tune simulate` replays: an experiment exported as a table
 * (`tune export NAME --table`) reads back through sim/ with every trial answered by
 * itself at distance 0 and every recorded value intact.
 * Not for: sim/'s own parsing rules (tests/test_sim.c). */
#include "e2e.h"
#include "tinytest.h"

#include <cjson/cJSON.h>

#include "search/space.h"
#include "sim/sim.h"

TEST(export_table_reads_back_as_the_same_curves)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "export_table");
    snprintf(sp, sizeof sp,
             "{\"name\": \"tab\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4,"
             " \"max_concurrent\": 2, \"seed\": 5,"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"6\", \"--tag\", \"{opt}\"],"
             " \"space\": {\"lr\": {\"loguniform\": [0.0001, 0.1]}, \"opt\": {\"choice\": "
             "[\"sgd, momentum\", \"adam\"]}}}",
             g_synth);
    space_file(dir, sp);
    const char *run[] = {"run", "space.json", "--gpus", "none", NULL};
    struct out o = run_tune(dir, run);
    if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
    REQUIRE(o.code == 0);
    out_free(&o);
    const char *ex[] = {"export", "tab", "--table", NULL};
    o = run_tune(dir, ex);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "trial,config/lr,config/opt,training_iteration,time_this_iter_s,loss");
    CHECK_EQ_INT(count_of(o.out, "\n"), 1 + 4 * 6);

    space_t *s = NULL;
    char err[1024];
    REQUIRE(space_parse(sp, strlen(sp), "space.json", &s, err, sizeof err) == 0);
    sim_curves_t *c = NULL;
    int rc = sim_table_parse(o.out, strlen(o.out), "export", s, &c, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    REQUIRE(rc == 0);
    CHECK_EQ_INT(sim_curves_count(c), 4);
    CHECK_EQ_INT(sim_curves_max_iters(c), 6);
    for (int t = 0; t < 4; t++) {
        cJSON *cfg = NULL;
        REQUIRE(space_sample(s, (size_t)t, &cfg, err, sizeof err) == 0);
        sim_curve_t cv;
        REQUIRE(sim_curves_lookup(c, cfg, &cv, err, sizeof err) == 0);
        CHECK_EQ_INT(cv.row, t);
        CHECK(cv.distance == 0);
        char name[32];
        snprintf(name, sizeof name, "trial_%05d", t);
        CHECK_STR(sim_curves_row_name(c, cv.row), name);
        for (int it = 1; it <= 6; it++) {
            const char *line;
            size_t len;
            double secs;
            REQUIRE(sim_curve_result(c, &cv, it, &line, &len, &secs) == 1);
            CHECK(secs >= 0);
            cJSON *r = cJSON_Parse(line);
            char q[256];
            snprintf(q, sizeof q,
                     "SELECT r.metric FROM results_current r JOIN trials t ON t.id = r.trial_id"
                     " WHERE t.trial_no = %d AND r.iteration = %d",
                     t, it);
            const cJSON *m = cJSON_GetObjectItem(r, "loss");
            CHECK(m && m->valuedouble == db_real(dir, q)); /* exactly the recorded double */
            cJSON_Delete(r);
        }
        cJSON_Delete(cfg);
    }
    sim_curves_free(c);
    space_free(s);
    out_free(&o);

    const char *bad[] = {"export", "nope", "--table", NULL};
    o = run_tune(dir, bad);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "no experiment named \"nope\"");
    out_free(&o);
}

TT_MAIN
