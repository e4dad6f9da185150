/* End-to-end tests of nested search spaces and of validate's notes (issue 13, item 9): the
 * real `tune` binary validates and runs a space.json with a choice of sub-spaces, and the
 * trials' argv, environment and recorded configurations are read back.
 * Not for: the sampling rules themselves (tests/test_search.c pins those). */
#include "e2e.h"
#include "tinytest.h"

#define GROUP "nested"

TEST(validate_notes_parameter_not_in_command)
{
    char dir[4096];
    e2e_fresh_dir(dir, sizeof dir, GROUP, "notes");
    space_file(dir, "{\"name\": \"n\", \"command\": [\"prog\", \"--lr={lr}\"],\n"
                    " \"space\": {\"lr\": {\"uniform\": [0, 1]}, \"wd\": {\"uniform\": [0, 1]}}}");
    const char *a[] = {"validate", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "note: parameter \"wd\" is not used in command; the trial sees it only "
                          "through TUNE_CONFIG\n");
    CHECK_EQ_INT(count_of(o.out, "note:"), 1);
    out_free(&o);
}

TEST(validate_locates_nested_errors)
{
    char dir[4096];
    e2e_fresh_dir(dir, sizeof dir, GROUP, "errors");
    space_file(dir, "{\"name\": \"n\", \"command\": [\"prog\", \"{opt.momentum}\"],\n"
                    " \"space\": {\"opt\": {\"choice\": [\n"
                    "   {\"name\": \"sgd\", \"momentum\": {\"uniform\": [0.99, 0.5]}}]}}}");
    const char *a[] = {"validate", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "space.json:3:44: \"uniform\" needs low < high");
    out_free(&o);
    space_file(dir, "{\"name\": \"n\", \"command\": [\"prog\", \"{opt.momentom}\"],\n"
                    " \"space\": {\"opt\": {\"choice\": [\n"
                    "   {\"name\": \"sgd\", \"momentum\": {\"uniform\": [0.5, 0.99]}}]}}}");
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "space.json:1:35: command[1]: \"{opt.momentom}\" names no parameter "
                          "(did you mean \"opt.momentum\"?)");
    out_free(&o);
}

/* The value after `key` ("--m=") in the trial's argv dump, or NAN when it is absent. */
static double arg_value(const char *log, const char *key)
{
    const char *p = strstr(log, key);
    return p ? strtod(p + strlen(key), NULL) : NAN;
}

TEST(run_conditional_space)
{
    char dir[4096], sp[8192];
    e2e_paths();
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"cond\", \"num_samples\": 8, \"seed\": 3, \"max_concurrent\": 4,\n"
        " \"command\": [\"%s\", \"--argv\", \"--env\", \"--iters\", \"1\",\n"
        "   \"--opt={optimizer.name}\", \"--m={optimizer.momentum}\", "
        "\"--b1={optimizer.beta1}\", \"--w={model.width}\"],\n"
        " \"space\": {\n"
        "   \"optimizer\": {\"choice\": [\n"
        "     {\"name\": \"sgd\", \"momentum\": {\"uniform\": [0.5, 0.99]}},\n"
        "     {\"name\": \"adam\", \"beta1\": {\"uniform\": [0.8, 0.99]}}]},\n"
        "   \"model\": {\"width\": {\"choice\": [64, 128]}, \"depth\": {\"randint\": [1, 4]}}}}",
        g_synth);
    struct out o = run_space(dir, sizeof dir, GROUP, "run", sp, NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 8);
    int sgd = 0, adam = 0;
    for (int i = 0; i < 8; i++) {
        char q[512], path[4300];
        snprintf(q, sizeof q,
                 "SELECT json_extract(config, '$.optimizer.name') = 'sgd' FROM trials "
                 "WHERE trial_no = %d",
                 i);
        int is_sgd = (int)db_int(dir, q);
        snprintf(path, sizeof path, "%s/tune_results/cond/trial_%05d/stdout.log", dir, i);
        char *log = slurp(path);
        /* the recorded configuration holds the drawn sub-space, and argv carries it */
        const char *k = is_sgd ? "momentum" : "beta1";
        snprintf(q, sizeof q,
                 "SELECT json_extract(config, '$.optimizer.%s') FROM trials WHERE trial_no = %d", k,
                 i);
        double v = db_real(dir, q);
        CHECK(is_sgd ? v >= 0.5 && v < 0.99 : v >= 0.8 && v < 0.99);
        CHECK(arg_value(log, is_sgd ? "\"--m=" : "\"--b1=") == v);
        /* the element of the branch not drawn is left out of argv */
        CHECK(strstr(log, is_sgd ? "\"--b1=" : "\"--m=") == NULL);
        CHECK_CONTAINS(log, is_sgd ? "\"--opt=sgd\"" : "\"--opt=adam\"");
        CHECK_CONTAINS(log, "\"argc\": 8");
        snprintf(q, sizeof q,
                 "SELECT json_extract(config, '$.model.width') FROM trials WHERE trial_no = %d", i);
        CHECK(arg_value(log, "\"--w=") == db_real(dir, q));
        /* TUNE_CONFIG carries the nested objects too */
        CHECK_CONTAINS(log, is_sgd ? "TUNE_CONFIG={\"optimizer\":{\"name\":\"sgd\",\"momentum\":"
                                   : "TUNE_CONFIG={\"optimizer\":{\"name\":\"adam\",\"beta1\":");
        is_sgd ? sgd++ : adam++;
        free(log);
    }
    CHECK(sgd > 0 && adam > 0);
}

TEST(median_grace_period_zero_runs)
{
    /* issue 13 item 20, where the user meets it: Ray's MedianStoppingRule takes
     * grace_period 0, and so does space.json now (it was refused before the run). */
    char dir[4096], sp[8192];
    e2e_paths();
    snprintf(sp, sizeof sp,
             "{\"name\": \"med0\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4,\n"
             " \"command\": [\"%s\", \"--iters\", \"4\", \"--lr\", \"{lr}\"],\n"
             " \"scheduler\": {\"type\": \"median\", \"grace_period\": 0, \"max_t\": 4,\n"
             "               \"min_samples_required\": 1},\n"
             " \"space\": {\"lr\": {\"loguniform\": [1e-4, 1]}}}",
             g_synth);
    struct out o = run_space(dir, sizeof dir, GROUP, "median0", sp, NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 4);
    CHECK_EQ_INT(db_int(dir, "SELECT json_extract(settings_json, '$.scheduler.grace_period') FROM "
                             "experiments"),
                 0);
}

TT_MAIN
