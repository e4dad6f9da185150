/* End-to-end tests: run the real `tune` binary on real space.json files with the
 * synthetic trial program, then inspect the real SQLite file and the JSON outputs.
 * Not for: unit behaviour of one module (tests/test_<module>.c). */
#define E2E_GROUP "cli"
#include "e2e.h"
#include "tinytest.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- basic runs ----------------------------------------------------------------- */
TEST(version_and_help)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "version");
    const char *a1[] = {"--version", NULL};
    struct out o = run_tune(dir, a1);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "tune ");
    out_free(&o);
    const char *a2[] = {"run", "--help", NULL};
    o = run_tune(dir, a2);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "usage: tune run");
    out_free(&o);
    const char *a3[] = {"frobnicate", NULL};
    o = run_tune(dir, a3);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "unknown command \"frobnicate\"");
    out_free(&o);
    const char *cmds[] = {"ls", "trials", "best", "query", "export", "validate"};
    for (size_t i = 0; i < 6; i++) {
        const char *a[] = {cmds[i], "--help", NULL};
        o = run_tune(dir, a);
        CHECK_EQ_INT(o.code, 0);
        CHECK_CONTAINS(o.out, "usage: tune");
        out_free(&o);
    }
}

TEST(fifo_run_records_everything)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "fifo");
    snprintf(sp, sizeof sp,
             "{\"name\": \"fifo1\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 3,"
             " \"max_concurrent\": 2, \"seed\": 7,"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"5\"],"
             " \"space\": {\"lr\": {\"loguniform\": [0.0001, 0.1]}, \"layers\": {\"grid_search\": "
             "[1, 2]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Finished fifo1: 6 trials terminated");
    CHECK_CONTAINS(o.out, "Best trial: trial_");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 6);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), 30);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='TERMINATED'"), 6);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments WHERE status='FINISHED'"), 1);

    const char *t[] = {"trials", "fifo1", "--json", NULL};
    o = run_tune(dir, t);
    CHECK_EQ_INT(o.code, 0);
    cJSON *arr = cJSON_Parse(o.out);
    REQUIRE(arr && cJSON_IsArray(arr));
    CHECK_EQ_INT(cJSON_GetArraySize(arr), 6);
    int k = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        CHECK_EQ_INT(cJSON_GetObjectItem(e, "id")->valueint, k);
        CHECK_STR(cJSON_GetObjectItem(e, "status")->valuestring, "TERMINATED");
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(e, "early_stopped")));
        CHECK(cJSON_IsObject(cJSON_GetObjectItem(e, "config")));
        CHECK(cJSON_IsNumber(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "config"), "lr")));
        CHECK_EQ_INT(cJSON_GetObjectItem(e, "iterations")->valueint, 5);
        cJSON *lr = cJSON_GetObjectItem(e, "last_result");
        CHECK(cJSON_IsObject(lr));
        CHECK_EQ_INT(cJSON_GetObjectItem(lr, "training_iteration")->valueint, 5);
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(e, "error")));
        /* grid points alternate: trial index = repeat * 2 + grid point */
        CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "config"), "layers")->valueint,
                     1 + k % 2);
        k++;
    }
    cJSON_Delete(arr);
    out_free(&o);

    const char *x[] = {"export", "fifo1", "--json", NULL};
    o = run_tune(dir, x);
    CHECK_EQ_INT(o.code, 0);
    arr = cJSON_Parse(o.out);
    REQUIRE(arr);
    CHECK_EQ_INT(cJSON_GetArraySize(arr), 30);
    cJSON *first = cJSON_GetArrayItem(arr, 0);
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(first, "trial_id")));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(first, "loss")));
    cJSON_Delete(arr);
    out_free(&o);

    const char *c[] = {"export", "fifo1", "--csv", NULL};
    o = run_tune(dir, c);
    CHECK_EQ_INT(o.code, 0);
    CHECK(strncmp(o.out, "trial_id,trial,config/lr,config/layers,training_iteration,loss,acc\n",
                  67) == 0);
    int lines = 0;
    for (char *p = o.out; *p; p++)
        lines += *p == '\n';
    CHECK_EQ_INT(lines, 31);
    out_free(&o);

    const char *b[] = {"best", "fifo1", "--json", NULL};
    o = run_tune(dir, b);
    CHECK_EQ_INT(o.code, 0);
    cJSON *best = cJSON_Parse(o.out);
    REQUIRE(best);
    long long want = db_int(dir, "SELECT t.trial_no FROM trials t JOIN results r ON r.trial_id=t.id"
                                 " WHERE r.iteration=5 ORDER BY r.metric, t.trial_no LIMIT 1");
    CHECK_EQ_INT(cJSON_GetObjectItem(best, "id")->valueint, want);
    cJSON_Delete(best);
    out_free(&o);

    const char *l[] = {"ls", NULL};
    o = run_tune(dir, l);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "fifo1");
    CHECK_CONTAINS(o.out, "FINISHED");
    out_free(&o);

    /* `tune ls` names the best trial as `tune best` does, by last result, even when
     * another trial had a better result earlier on (its best of all results). */
    long long other = want == 0 ? 1 : 0;
    char upd[256];
    snprintf(upd, sizeof upd,
             "UPDATE result_ranges SET min_metric = -1 WHERE trial_id = "
             "(SELECT id FROM trials WHERE trial_no = %lld)",
             other);
    REQUIRE(db_exec(dir, upd) == 0);
    CHECK_EQ_INT(
        db_int(dir, "SELECT CAST(substr(best_trial, 7) AS INTEGER) FROM experiment_summary"),
        other);
    const char *lj[] = {"ls", "--json", NULL};
    o = run_tune(dir, lj);
    CHECK_EQ_INT(o.code, 0);
    cJSON *ls = cJSON_Parse(o.out);
    REQUIRE(cJSON_GetArraySize(ls) == 1);
    const cJSON *bt = cJSON_GetObjectItem(cJSON_GetArrayItem(ls, 0), "best_trial");
    REQUIRE(cJSON_IsString(bt));
    char wname[32];
    snprintf(wname, sizeof wname, "trial_%05lld", want);
    CHECK_STR(bt->valuestring, wname);
    cJSON_Delete(ls);
    out_free(&o);

    /* Logs are kept per trial. */
    char p[4300];
    snprintf(p, sizeof p, "%s/tune_results/fifo1/trial_00000/stdout.log", dir);
    char *log = slurp(p);
    CHECK_CONTAINS(log, "\"training_iteration\": 5");
    free(log);
}

TEST(asha_stops_poor_trials_and_records_why)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "asha");
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"asha1\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 20,"
        " \"max_concurrent\": 4, \"seed\": 3,"
        " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"27\", \"--sleep-ms\", \"2\"],"
        " \"scheduler\": {\"type\": \"asha\", \"max_t\": 27, \"grace_period\": 1,"
        "   \"reduction_factor\": 3},"
        " \"space\": {\"lr\": {\"loguniform\": [0.00001, 1]}}}",
        g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    long long stopped = db_int(dir, "SELECT count(*) FROM trials WHERE early_stopped=1");
    CHECK(stopped >= 5);
    CHECK(stopped < 20);
    /* Every early stop has a recorded decision with a cutoff it was worse than. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(DISTINCT trial_id) FROM decisions WHERE action='stop'"),
                 stopped);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM decisions WHERE action='stop' AND"
                             " NOT (value > cutoff)"),
                 0);
    /* Trials that reached max_t completed without being early-stopped. */
    CHECK(db_int(dir, "SELECT count(*) FROM decisions WHERE action='complete'") >= 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status!='TERMINATED'"), 0);
    /* A stopped trial records no result after the one that stopped it. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results r JOIN decisions d ON"
                             " d.trial_id=r.trial_id AND d.action='stop' WHERE r.iteration >"
                             " d.iteration"),
                 0);
}

/* Reads every trial's slice.log and checks that at no moment a device is given more
 * than its capacity. */
static void check_slices(const char *dir, const char *exp, int ntrials, double share)
{
    struct e2e_slice_ev ev[4096];
    int nev = e2e_slice_events(dir, exp, ntrials, ev, 4096, NULL);
    CHECK(nev > 0);
    double load[16] = {0}, peak = 0;
    for (int i = 0; i < nev; i++) {
        REQUIRE(ev[i].dev >= 0 && ev[i].dev < 16);
        load[ev[i].dev] += ev[i].start ? share : -share;
        if (load[ev[i].dev] > 1.0 + 1e-9) {
            fprintf(stderr, "device %d over-given: %g at %.6f\n", ev[i].dev, load[ev[i].dev],
                    ev[i].t);
            CHECK(0);
            return;
        }
        if (load[ev[i].dev] > peak) peak = load[ev[i].dev];
    }
    CHECK(peak > share - 1e-9); /* the pool was really used */
}

static void run_gpu_case(const char *name, const char *gpus_per_trial, double share, int ndev)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, name);
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"%s\", \"metric\": \"loss\", \"num_samples\": 12, \"max_concurrent\": 16,"
        " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"4\", \"--sleep-ms\", \"15\","
        "   \"--slice-log\"],"
        " \"resources\": {\"gpus_per_trial\": %s, \"cpus_per_trial\": 1},"
        " \"space\": {\"lr\": {\"uniform\": [0.001, 0.1]}}}",
        name, g_synth, gpus_per_trial);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "0,1,2,3", "--cpus", "64", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    if (o.code) fprintf(stderr, "%s\n", o.err);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='TERMINATED'"), 12);
    check_slices(dir, name, 12, share);
    (void)ndev;
}

TEST(gpu_pool_whole_gpus_never_overgiven)
{
    run_gpu_case("gpu1", "1", 1.0, 1);
}

TEST(gpu_pool_two_gpu_trials_never_overgiven)
{
    run_gpu_case("gpu2", "2", 1.0, 2);
}

TEST(gpu_pool_fractional_never_overgiven)
{
    run_gpu_case("gpuq", "0.25", 0.25, 1);
}

TEST(impossible_request_is_an_error_before_running)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "toobig");
    snprintf(sp, sizeof sp,
             "{\"name\": \"big\", \"command\": [\"%s\"],"
             " \"resources\": {\"gpus_per_trial\": 3}, \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "0,1", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "3");
    CHECK_CONTAINS(o.err, "2");
    out_free(&o);
    struct stat s;
    char db[4200];
    snprintf(db, sizeof db, "%s/tune_results/big", dir);
    CHECK(stat(db, &s) != 0); /* nothing ran */
}

TEST(bad_space_file_reports_position_and_exit_2)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "badspace");
    space_file(dir, "{\n  \"name\": \"x\",\n  \"comand\": [\"a\"]\n}\n");
    const char *a[] = {"run", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "space.json:3:");
    CHECK_CONTAINS(o.err, "did you mean \"command\"");
    out_free(&o);
    const char *v[] = {"validate", "space.json", NULL};
    o = run_tune(dir, v);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "space.json:3:");
    out_free(&o);
    const char *m[] = {"run", "missing.json", NULL};
    o = run_tune(dir, m);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "missing.json");
    out_free(&o);
}

TEST(missing_program_is_an_error_before_running)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "noprog");
    space_file(dir, "{\"name\": \"np\", \"command\": [\"no-such-program-xyz\"], \"space\": {}}");
    const char *a[] = {"run", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "cannot find program \"no-such-program-xyz\"");
    out_free(&o);
}

TEST(validate_prints_configurations)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "validate");
    snprintf(sp, sizeof sp,
             "{\"name\": \"v\", \"num_samples\": 4, \"seed\": 1, \"command\": [\"%s\", \"--lr\","
             " \"{lr}\"], \"space\": {\"lr\": {\"loguniform\": [0.0001, 0.1]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"validate", "space.json", "-n", "2", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "ok");
    CHECK_CONTAINS(o.out, "trial_00000 {\"lr\":");
    CHECK_CONTAINS(o.out, "trial_00001 {\"lr\":");
    CHECK(strstr(o.out, "trial_00002") == NULL);
    out_free(&o);

    /* one objective: its metric and mode, as ever */
    snprintf(sp, sizeof sp,
             "{\"name\": \"v\", \"metric\": \"loss\", \"num_samples\": 1, \"command\": "
             "[\"%s\"], \"space\": {\"lr\": {\"uniform\": [0, 1]}}}",
             g_synth);
    space_file(dir, sp);
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "space.json: ok: experiment \"v\", 1 trials, scheduler fifo, metric "
                          "loss (min)\n");
    out_free(&o);
    /* several objectives and constraints (docs/multiobjective.md): every objective with
     * its mode, every constraint with its bound */
    snprintf(sp, sizeof sp,
             "{\"name\": \"v\", \"metric\": [\"loss\", \"acc\", \"lat\"], \"mode\": "
             "[\"min\", \"max\", \"min\"], \"constraints\": {\"gpu\": {\"<=\": 16}, \"lat\": "
             "{\"<\": 20.5, \">=\": 1}}, \"num_samples\": 1, \"command\": [\"%s\"], "
             "\"space\": {\"lr\": {\"uniform\": [0, 1]}}}",
             g_synth);
    space_file(dir, sp);
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "space.json: ok: experiment \"v\", 1 trials, scheduler fifo, "
                          "objectives loss (min), acc (max), lat (min), constraints gpu <= 16, "
                          "lat < 20.5, lat >= 1\n");
    CHECK(!strstr(o.out, "metric loss"));
    out_free(&o);
    /* one objective with a constraint */
    snprintf(sp, sizeof sp,
             "{\"name\": \"v\", \"metric\": \"acc\", \"mode\": \"max\", \"constraints\": "
             "{\"gpu\": {\">\": 0.25}}, \"num_samples\": 1, \"command\": [\"%s\"], "
             "\"space\": {\"lr\": {\"uniform\": [0, 1]}}}",
             g_synth);
    space_file(dir, sp);
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "scheduler fifo, metric acc (max), constraints gpu > 0.25\n");
    out_free(&o);
}

TEST(failing_trials_are_errors_and_the_experiment_goes_on)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "failing");
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"f\", \"metric\": \"loss\", \"num_samples\": 1, \"max_concurrent\": 3,"
        " \"command\": [\"%s\", \"--iters\", \"5\", \"{how}\", \"{at}\"],"
        " \"space\": {\"how\": {\"grid_search\": [\"--fail-at\", \"--crash-at\", \"--iters\"]},"
        "  \"at\": 3}}",
        g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 3); /* trials ended in ERROR (README, "Exit status") */
    CHECK_CONTAINS(o.out, "2 failed");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='ERROR'"), 2);
    CHECK_EQ_INT(db_int(dir,
                        "SELECT count(*) FROM trials WHERE status='ERROR' AND exit_code=3"
                        " AND error LIKE '%code 3%' AND stderr_tail LIKE '%failing on purpose%'"),
                 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='ERROR' AND exit_signal=11"
                             " AND error LIKE '%SIGSEGV%'"),
                 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='TERMINATED'"), 1);
    const char *t[] = {"trials", "f", "--json", NULL};
    o = run_tune(dir, t);
    cJSON *arr = cJSON_Parse(o.out);
    REQUIRE(arr);
    CHECK(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "error")));
    cJSON_Delete(arr);
    out_free(&o);
}

TEST(trial_environment)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "env");
    snprintf(sp, sizeof sp,
             "{\"name\": \"env\", \"num_samples\": 2, \"max_concurrent\": 2,"
             " \"command\": [\"%s\", \"--env\", \"--iters\", \"3\", \"--sleep-ms\", \"100\"],"
             " \"resources\": {\"gpus_per_trial\": 1, \"cpus_per_trial\": 2},"
             " \"space\": {\"x\": {\"choice\": [\"a b\"]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "5,7", "--cpus", "4", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char p[4300];
    int ports[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/tune_results/env/trial_%05d/stdout.log", dir, i);
        char *log = slurp(p);
        char want[4400];
        snprintf(want, sizeof want, "TUNE_TRIAL_ID=%d\t", i);
        CHECK_CONTAINS(log, want);
        CHECK_CONTAINS(log, "TUNE_EXPERIMENT=env\t");
        CHECK_CONTAINS(log, "TUNE_CONFIG={\"x\":\"a b\"}");
        CHECK_CONTAINS(log, "OMP_NUM_THREADS=2\t");
        CHECK_CONTAINS(log, "MASTER_ADDR=127.0.0.1\t");
        CHECK_CONTAINS(log, "TUNE_NUM_GPUS=1\t");
        CHECK(strstr(log, "CUDA_VISIBLE_DEVICES=5\t") || strstr(log, "CUDA_VISIBLE_DEVICES=7\t"));
        snprintf(want, sizeof want, "TUNE_TRIAL_DIR=%s/tune_results/env/trial_%05d", dir, i);
        CHECK_CONTAINS(log, want);
        char *mp = strstr(log, "MASTER_PORT=");
        if (mp) ports[i] = atoi(mp + 12);
        free(log);
    }
    CHECK(ports[0] > 0 && ports[1] > 0 && ports[0] != ports[1]);
}

TEST(parameter_values_never_reach_a_shell)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "shell");
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"sh\", \"command\": [\"%s\", \"--argv\", \"--iters\", \"0\", \"{evil}\"],"
        " \"space\": {\"evil\": {\"choice\": [\"; touch pwned; $(touch pwned2) `touch p3`\"]}}}",
        g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char p[4300];
    snprintf(p, sizeof p, "%s/tune_results/sh/trial_00000/stdout.log", dir);
    char *log = slurp(p);
    CHECK_CONTAINS(log, "\"argc\": 5");
    CHECK_CONTAINS(log, "\"arg4\": \"; touch pwned; $(touch pwned2) `touch p3`\"");
    free(log);
    struct stat s;
    snprintf(p, sizeof p, "%s/tune_results/sh/trial_00000/pwned", dir);
    CHECK(stat(p, &s) != 0);
    snprintf(p, sizeof p, "%s/tune_results/sh/trial_00000/pwned2", dir);
    CHECK(stat(p, &s) != 0);
}

/* The interrupt lands once both running trials have recorded a result (not after a fixed
 * delay, which a busy machine can outlast before anything ran); the trials would run for
 * half an hour, so both are still running when it does. */
TEST(ctrl_c_stops_trials_and_exits_130)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "sigint");
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"si\", \"metric\": \"loss\", \"num_samples\": 6, \"max_concurrent\": 2,"
        " \"stop_grace_s\": 1,"
        " \"command\": [\"%s\", \"--iters\", \"100000\", \"--sleep-ms\", \"20\", \"--fork-child\","
        "   \"--lr\", \"0.0123456\"], \"space\": {}}",
        g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    int reached = 0;
    struct out o =
        run_tune_interrupted(dir, a, "SELECT count(DISTINCT trial_id) FROM results", 2, &reached);
    CHECK(reached);
    CHECK_EQ_INT(o.code, 130);
    CHECK_CONTAINS(o.out, "Interrupted si");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='PAUSED'"), 2);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='PENDING'"), 4);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments WHERE status='INTERRUPTED'"), 1);
    CHECK(db_int(dir, "SELECT count(*) FROM results") > 0);
    CHECK_EQ_INT(e2e_count_procs("0.0123456"), 0); /* children of trials died too */
}

/* The first Ctrl-C once both trials run (they ignore the SIGTERM it brings, and have 60 s
 * of grace), the second once tune has taken the first: two SIGINTs sent before tune runs
 * again are one signal to the kernel, which on a busy machine a fixed 300 ms between them
 * does not rule out. */
TEST(second_ctrl_c_kills_at_once)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "sigint2");
    snprintf(sp, sizeof sp,
             "{\"name\": \"si2\", \"metric\": \"loss\", \"num_samples\": 2,"
             " \"max_concurrent\": 2, \"stop_grace_s\": 60,"
             " \"command\": [\"%s\", \"--iters\", \"100000\", \"--sleep-ms\", \"20\","
             "   \"--ignore-term\", \"--lr\", \"0.0234567\"], \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    pid_t pid = spawn_tune(dir, a, NULL);
    CHECK_EQ_INT(e2e_wait_db(dir, "SELECT count(DISTINCT trial_id) FROM results", 2, 60), 2);
    CHECK(e2e_signal_taken(pid, SIGINT, 60));
    double t0 = e2e_mono();
    kill(pid, SIGINT);
    struct how h = {.timeout_s = 120};
    struct out o = e2e_finish(dir, pid, &h);
    double took = e2e_mono() - t0;
    fprintf(stderr, "the second Ctrl-C ended tune in %.2f s\n", took);
    CHECK_EQ_INT(o.code, 130);
    /* Not the grace period: the trials ignore SIGTERM, so only the SIGKILL the second
     * Ctrl-C brings ends them before 60 s (a bound on the behaviour, not on speed). */
    CHECK(took < 45);
    out_free(&o);
    CHECK_EQ_INT(e2e_count_procs("0.0234567"), 0);
}

TEST(trial_ignoring_sigterm_is_killed_after_grace)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "ignterm");
    snprintf(sp, sizeof sp,
             "{\"name\": \"ig\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 1, "
             "\"stop_grace_s\": 0.5,"
             " \"command\": [\"%s\", \"--iters\", \"100000\", \"--sleep-ms\", \"5\","
             "   \"--ignore-term\", \"--talk-after-term\"],"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 5, \"grace_period\": 1,"
             "  \"reduction_factor\": 2},"
             " \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    /* It completed at max_t = 5; results it kept printing were logged, not recorded. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), 5);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='TERMINATED' AND"
                             " early_stopped=0"),
                 1);
    char p[4300];
    snprintf(p, sizeof p, "%s/tune_results/ig/trial_00000/stdout.log", dir);
    char *log = slurp(p);
    CHECK_CONTAINS(log, "\"training_iteration\": 6,");
    free(log);
}

TEST(iteration_counted_when_trial_does_not_send_it)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "noiter");
    snprintf(sp, sizeof sp,
             "{\"name\": \"ni\", \"metric\": \"loss\", \"command\": [\"%s\", \"--iters\", \"4\","
             " \"--no-iter\", \"--garbage\"], \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), 4);
    CHECK_EQ_INT(db_int(dir, "SELECT max(json_extract(data, '$.training_iteration')) FROM results"),
                 4);
    CHECK_EQ_INT(db_int(dir, "SELECT sum(iteration) FROM results"), 10);
}

/* What the loop stores for each kind of result line: a plain JSON object exactly as the
 * trial wrote it (its fast path), and through cJSON the lines that need it: one without
 * training_iteration (counted and added), one with NaN (written as null), one whose metric
 * key is spelled with an escape (read as "loss"). trial_helper's hex action prints the
 * lines byte for byte, so no brace or quote has to survive space.json's templates. */
TEST(result_lines_stored_as_they_came_or_rewritten)
{
    char dir[4096], sp[16384], helper[4200];
    fresh_dir(dir, sizeof dir, "rawlines");
    const char *b = getenv("TUNE_BINARY_DIR");
    snprintf(helper, sizeof helper, "%s/tests/progs/trial_helper", b ? b : ".");
    const char *lines[] = {
        "{ \"training_iteration\" : 1,  \"loss\": 0.5e0, \"note\": \"Info NaN\" }",
        "{\"loss\": 0.25}", "{\"training_iteration\": 3, \"loss\": NaN, \"acc\": Infinity}",
        "{\"training_iteration\": 4, \"lo\\u0073s\": 0.125}", NULL};
    char args[8192] = "";
    for (int i = 0; lines[i]; i++) {
        size_t k = strlen(args);
        k += (size_t)snprintf(args + k, sizeof args - k, ", \"hex:");
        for (const unsigned char *c = (const unsigned char *)lines[i]; *c; c++)
            k += (size_t)snprintf(args + k, sizeof args - k, "%02x", *c);
        snprintf(args + k, sizeof args - k, "0a\"");
    }
    snprintf(sp, sizeof sp,
             "{\"name\": \"raw\", \"metric\": \"loss\", \"command\": [\"%s\"%s], \"space\": {}}",
             helper, args);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), 4);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM results WHERE iteration = 1 AND metric = 0.5 AND data = '%s'",
             lines[0]);
    CHECK_EQ_INT(db_int(dir, sql), 1); /* byte for byte, spaces and "NaN" in a string kept */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE iteration = 2 AND metric = 0.25"
                             " AND data = '{\"loss\":0.25,\"training_iteration\":2}'"),
                 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE iteration = 3 AND metric IS NULL"
                             " AND data = '{\"training_iteration\":3,\"loss\":null,\"acc\":null}'"),
                 1);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM results WHERE iteration = 4 AND metric = 0.125 AND data = '%s'",
             lines[3]);
    CHECK_EQ_INT(db_int(dir, sql), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE NOT json_valid(data)"), 0);
}

TEST(existing_experiment_is_not_overwritten)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "exists");
    snprintf(sp, sizeof sp,
             "{\"name\": \"ex\", \"metric\": \"loss\", \"command\": [\"%s\", \"--iters\", \"2\"],"
             " \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "experiment \"ex\" already exists");
    CHECK_CONTAINS(o.err, "--restart");
    out_free(&o);
    const char *r[] = {"run", "space.json", "--restart", NULL};
    o = run_tune(dir, r);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "ex-2");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 2);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), 4);
}

TEST(query_is_read_only_and_formats)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "query");
    snprintf(sp, sizeof sp,
             "{\"name\": \"q\", \"metric\": \"loss\", \"command\": [\"%s\", \"--iters\", \"3\"],"
             " \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    const char *w[] = {"query", "DELETE FROM results", NULL};
    o = run_tune(dir, w);
    CHECK(o.code != 0);
    CHECK_CONTAINS(o.err, "read-only");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), 3);
    const char *j[] = {"query", "SELECT iteration, metric FROM results ORDER BY iteration",
                       "--json", NULL};
    o = run_tune(dir, j);
    CHECK_EQ_INT(o.code, 0);
    cJSON *arr = cJSON_Parse(o.out);
    REQUIRE(arr);
    CHECK_EQ_INT(cJSON_GetArraySize(arr), 3);
    CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 2), "iteration")->valueint, 3);
    cJSON_Delete(arr);
    out_free(&o);
    const char *c[] = {"query", "SELECT 'a,b' AS x, 1 AS y", "--csv", NULL};
    o = run_tune(dir, c);
    CHECK_STR(o.out, "x,y\n\"a,b\",1\n");
    out_free(&o);
    const char *bad[] = {"query", "SELEC nonsense", NULL};
    o = run_tune(dir, bad);
    CHECK(o.code != 0);
    CHECK_CONTAINS(o.err, "syntax error");
    out_free(&o);
    const char *nx[] = {"trials", "nope", NULL};
    o = run_tune(dir, nx);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "no experiment named \"nope\"");
    out_free(&o);
    const char *nodb[] = {"ls", "--db", "missing.db", NULL};
    o = run_tune(dir, nodb);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "missing.db");
    out_free(&o);
}

TEST(status_block_when_not_a_terminal)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "plain");
    snprintf(sp, sizeof sp,
             "{\"name\": \"pl\", \"metric\": \"loss\", \"num_samples\": 2, \"command\": [\"%s\","
             " \"--iters\", \"10\", \"--sleep-ms\", \"150\", \"--lr\", \"{lr}\"],"
             " \"space\": {\"lr\": {\"choice\": [0.01, 0.1]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--status-interval", "0.5", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    int blocks = 0;
    for (const char *p = o.out; (p = strstr(p, "== Status ==")); p++)
        blocks++;
    CHECK(blocks >= 3); /* periodic blocks plus the final one */
    CHECK_CONTAINS(o.out, "trial_00001");
    CHECK_CONTAINS(o.out, "TERMINATED");
    CHECK(strstr(o.out, "\033[") == NULL); /* no terminal escapes in a file */
    out_free(&o);
}

/* One text value from dir/tune.db ("" when none); the caller frees. */
static char *db_text(const char *dir, const char *sql)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    char *t = testdb_text(path, sql);
    return t ? t : strdup("");
}

/* The trial names of a `tune trials --json` array, in its order: "trial_00002,trial_00000". */
static void json_trial_order(const char *json, char *got, size_t n)
{
    got[0] = 0;
    cJSON *arr = cJSON_Parse(json), *o;
    cJSON_ArrayForEach(o, arr)
    {
        size_t l = strlen(got);
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(o, "name"));
        snprintf(got + l, n - l, "%s%s", l ? "," : "", name ? name : "?");
    }
    cJSON_Delete(arr);
}

TEST(trials_sort_by_the_metric_name_and_reported_keys)
{
    /* On main, `tune trials --sort loss` failed with "no such column" on an experiment
     * whose metric is loss, and no reported key other than the metric could sort. */
    char dir[4096], sp[8192], got[256];
    fresh_dir(dir, sizeof dir, "sortkeys");
    snprintf(sp, sizeof sp,
             "{\"name\": \"sk\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4,"
             " \"seed\": 3, \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"3\"],"
             " \"space\": {\"lr\": {\"loguniform\": [1e-4, 1]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    static const struct {
        const char *key, *order;
    } sorts[] = {
        {"loss", "ORDER BY last_metric, trial_no"},
        {"-loss", "ORDER BY last_metric DESC, trial_no"},
        {"acc", "ORDER BY json_extract(last_result, '$.acc'), trial_no"},
        {"-acc", "ORDER BY json_extract(last_result, '$.acc') DESC, trial_no"},
    };
    for (size_t k = 0; k < sizeof sorts / sizeof sorts[0]; k++) {
        const char *t[] = {"trials", "--sort", sorts[k].key, "--json", NULL};
        o = run_tune(dir, t);
        CHECK_EQ_INT(o.code, 0);
        json_trial_order(o.out, got, sizeof got);
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT group_concat(trial, ',') FROM (SELECT trial FROM trial_summary %s)",
                 sorts[k].order);
        char *want = db_text(dir, sql);
        CHECK_STR(got, want);
        free(want);
        out_free(&o);
        /* the table sorts the same way, and does not show the last results it sorted by */
        const char *c[] = {"trials", "--sort", sorts[k].key, "--csv", NULL};
        o = run_tune(dir, c);
        CHECK_EQ_INT(o.code, 0);
        const char *hdr = "trial,status,slice,lr,iter,last_metric,best_metric,error\n";
        CHECK(strncmp(o.out, hdr, strlen(hdr)) == 0);
        out_free(&o);
    }
    /* the 4 distinct orders are not all the same: the test can tell them apart */
    CHECK_EQ_INT(db_int(dir, "SELECT count(DISTINCT json_extract(last_result, '$.acc')) FROM "
                             "trial_summary"),
                 4);
    const char *bad[] = {"trials", "--sort", "los", NULL};
    o = run_tune(dir, bad);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "--sort los: no such column");
    CHECK_CONTAINS(o.err, "the metric loss");
    CHECK_CONTAINS(o.err, "the keys the trials report: training_iteration, loss, acc");
    out_free(&o);
    const char *help[] = {"trials", "--help", NULL};
    o = run_tune(dir, help);
    CHECK_CONTAINS(o.out, "the metric's name or any key of the trials'");
    out_free(&o);
}

/* The last status block of a run's output (it ends the output, before the summary). */
static const char *last_block(const char *out)
{
    const char *b = out, *p = out;
    while ((p = strstr(p, "== Status ==")) != NULL)
        b = p++;
    return b;
}

TEST(without_a_metric_the_table_shows_what_trials_report)
{
    /* On main, a run without a metric showed "metric" and "best" columns of "-": nothing
     * the trials reported. */
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "nometric");
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"nm\", \"num_samples\": 2, \"seed\": 1, \"command\": [\"%s\","
        " \"--iters\", \"3\", \"--lr\", \"{lr}\"], \"space\": {\"lr\": {\"choice\": [0.01, 0.1]}}}",
        g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    const char *blk = last_block(o.out);
    CHECK_CONTAINS(blk, "| loss");
    CHECK_CONTAINS(blk, "| acc");
    CHECK(strstr(blk, "| best") == NULL);
    CHECK(strstr(blk, "| metric") == NULL);
    /* each trial's row holds its last loss as tune_trials' JSON has it */
    double loss = db_real(dir, "SELECT json_extract(last_result, '$.loss') FROM trial_summary"
                               " WHERE trial_no = 0");
    char want[64];
    snprintf(want, sizeof want, "%.5g", loss);
    const char *row = strstr(blk, "trial_00000");
    REQUIRE(row);
    const char *eol = strchr(row, '\n');
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(eol ? eol - row : (long)strlen(row)), row);
    CHECK_CONTAINS(line, want);
    out_free(&o);
}

TEST(metric_columns_do_not_show_the_metric_twice)
{
    /* On main, "metric_columns": ["loss", "acc"] with metric loss gave two loss columns. */
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "mcdup");
    snprintf(sp, sizeof sp,
             "{\"name\": \"mc\", \"metric\": \"loss\", \"num_samples\": 1, \"command\": [\"%s\","
             " \"--iters\", \"2\"], \"reporter\": {\"metric_columns\": [\"loss\", \"acc\","
             " \"training_iteration\"]}, \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    const char *blk = last_block(o.out);
    const char *names = strstr(blk, "\ntrial ");
    REQUIRE(names);
    char line[512];
    const char *eol = strchr(names + 1, '\n');
    snprintf(line, sizeof line, "%.*s", (int)(eol ? eol - names - 1 : 0), names + 1);
    int nloss = 0;
    for (const char *p = line; (p = strstr(p, "| loss")); p++)
        nloss++;
    CHECK_EQ_INT(nloss, 1);
    CHECK_CONTAINS(line, "| acc");
    CHECK(strstr(line, "training_iteration") == NULL);
    out_free(&o);
}

TEST(failed_trials_are_retried_up_to_max_failures)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "retry");
    /* Trial 0 fails once at iteration 3 and checkpoints: its retry resumes at 4.
     * Trial 1 fails every time: it is retried twice, then stays ERROR. */
    snprintf(sp, sizeof sp,
             "{\"name\": \"rt\", \"metric\": \"loss\", \"max_failures\": 2, \"max_concurrent\": 1,"
             " \"command\": [\"%s\", \"--iters\", \"5\", \"--checkpoint\", \"{how}\", \"3\"],"
             " \"space\": {\"how\": {\"grid_search\": [\"--fail-once-at\", \"--fail-at\"]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 3); /* a trial ended in ERROR */
    CHECK_CONTAINS(o.out, "1 failed");
    out_free(&o);
    CHECK_EQ_INT(
        db_int(dir, "SELECT status='TERMINATED' AND attempt=2 FROM trials WHERE trial_no=0"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT status='ERROR' AND attempt=3 FROM trials WHERE trial_no=1"),
                 1);
    /* the retry of trial 0 resumed from its checkpoint (written after iteration 2): its
     * second attempt reported 3, 4 and 5, and iterations 1 and 2 of the first attempt were
     * carried over to it, so the final attempt holds the whole curve once */
    CHECK_EQ_INT(db_int(dir,
                        "SELECT min(r.iteration) * 100 + count(*) FROM results r"
                        " JOIN trials t ON t.id=r.trial_id WHERE t.trial_no=0 AND r.attempt=2"),
                 105);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results r JOIN trials t ON t.id=r.trial_id"
                             " WHERE t.trial_no=0 AND r.attempt=1"),
                 0);
    CHECK_EQ_INT(db_int(dir, "SELECT iterations FROM trial_summary WHERE trial_no=0"), 5);
    char p[4300];
    snprintf(p, sizeof p, "%s/tune_results/rt/trial_00000/stderr.log", dir);
    char *log = slurp(p);
    CHECK_CONTAINS(log, "resuming from ");
    CHECK_CONTAINS(log, "at iteration 3");
    free(log);
    CHECK_EQ_INT(
        db_int(dir, "SELECT count(*) FROM trials WHERE trial_no=1 AND error LIKE '%code 3%'"), 1);
}

TEST(resume_after_ctrl_c_finishes_the_experiment)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "resume");
    snprintf(sp, sizeof sp,
             "{\"name\": \"rs\", \"metric\": \"loss\", \"num_samples\": 6, \"max_concurrent\": 2,"
             " \"stop_grace_s\": 1, \"command\": [\"%s\", \"--iters\", \"20\", \"--sleep-ms\","
             " \"60\", \"--lr\", \"{lr}\"], \"space\": {\"lr\": {\"loguniform\": [0.001, 0.1]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    /* Interrupted once a running trial has a result: that attempt is then superseded by
     * the resumed one (its trial has more than a second of work left). */
    int reached = 0;
    struct out o = run_tune_interrupted(dir, a,
                                        "SELECT count(*) FROM trials t WHERE status = 'RUNNING'"
                                        " AND EXISTS (SELECT 1 FROM results r WHERE r.trial_id ="
                                        " t.id)",
                                        1, &reached);
    CHECK(reached);
    CHECK_EQ_INT(o.code, 130);
    CHECK_CONTAINS(o.out, "tune resume rs");
    out_free(&o);
    long long paused = db_int(dir, "SELECT count(*) FROM trials WHERE status='PAUSED'");
    CHECK(paused >= 1);
    /* run again without a terminal: it does not start over, it says how to resume */
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "did not finish");
    CHECK_CONTAINS(o.err, "tune resume rs");
    out_free(&o);
    const char *r[] = {"resume", "rs", NULL};
    o = run_tune(dir, r);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Finished rs: 6 trials terminated");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='TERMINATED'"), 6);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments WHERE status='FINISHED'"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE attempt=2"), paused);
    /* every trial's current attempt has iterations 1..20, each once */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results_current"), 120);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM (SELECT trial_id, iteration FROM results_current"
                             " GROUP BY 1, 2 HAVING count(*) > 1)"),
                 0);
    /* the interrupted attempts' results are kept, superseded */
    CHECK(db_int(dir, "SELECT count(*) FROM results WHERE attempt=1 AND trial_id IN"
                      " (SELECT id FROM trials WHERE attempt=2)") >= 1);
    /* export shows the final attempts, --all-attempts the superseded results too */
    long long all = db_int(dir, "SELECT count(*) FROM results");
    CHECK(all > 120);
    const char *ex[] = {"export", "rs", "--json", NULL};
    o = run_tune(dir, ex);
    CHECK_EQ_INT(o.code, 0);
    CHECK_EQ_INT(count_of(o.out, "\"trial_id\""), 120);
    out_free(&o);
    const char *exa[] = {"export", "rs", "--json", "--all-attempts", NULL};
    o = run_tune(dir, exa);
    CHECK_EQ_INT(o.code, 0);
    CHECK_EQ_INT(count_of(o.out, "\"trial_id\""), all);
    CHECK_EQ_INT(count_of(o.out, "\"attempt\":\t1\n"),
                 db_int(dir, "SELECT count(*) FROM results WHERE attempt=1"));
    out_free(&o);
    const char *again[] = {"resume", "rs", NULL};
    o = run_tune(dir, again);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "nothing to resume");
    out_free(&o);
    const char *no[] = {"resume", "nope", NULL};
    o = run_tune(dir, no);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "no experiment named \"nope\"");
    out_free(&o);
}

TEST(second_writer_is_refused)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "lock");
    /* The trial runs until the case interrupts it; the second writer comes once the first
     * has recorded a result (it holds the database then), not after a fixed delay. */
    snprintf(sp, sizeof sp,
             "{\"name\": \"lk\", \"metric\": \"loss\", \"num_samples\": 1, \"command\": [\"%s\","
             " \"--iters\", \"100000\", \"--sleep-ms\", \"50\"], \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", NULL};
    pid_t pid = spawn_tune(dir, a, NULL);
    CHECK(e2e_wait_db(dir, "SELECT count(*) FROM results", 1, 60) >= 1);
    const char *r[] = {"run", "space.json", "--resume", NULL};
    struct out o = run_tune(dir, r);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "is being run by another tune process");
    out_free(&o);
    /* readers work while it writes */
    const char *q[] = {"trials", "lk", "--json", NULL};
    o = run_tune(dir, q);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "RUNNING");
    out_free(&o);
    kill(pid, SIGINT);
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 130);
}

/* The durability test of the issue: SIGKILL tune at many moments, resume each time, and
 * compare the finished database with an uninterrupted run of the same experiment. One
 * trial at a time, so the uninterrupted run is deterministic. */
TEST(kill_9_at_many_moments_then_resume_matches_uninterrupted)
{
    char ref[4096], dir[4096], sp[8192];
    fresh_dir(ref, sizeof ref, "kill9_ref");
    fresh_dir(dir, sizeof dir, "kill9");
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"k9\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 14,"
        " \"max_concurrent\": 1, \"seed\": 5, \"stop_grace_s\": 1,"
        " \"command\": [\"%s\", \"--iters\", \"9\", \"--sleep-ms\", \"8\", \"--lr\", \"{lr}\"],"
        " \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1,"
        "  \"reduction_factor\": 3},"
        " \"space\": {\"lr\": {\"loguniform\": [0.00001, 1]}}}",
        g_synth);
    space_file(ref, sp);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    struct out o = run_tune(ref, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);

    /* run --resume rather than resume: a kill that lands before the experiment was
     * recorded (a slow start, under ASan) must not end the test; it starts it afresh. */
    const char *r[] = {"run", "space.json", "--resume", "--quiet", NULL};
    int kills = 0, finished = 0;
    for (int round = 0; round < 40 && !finished; round++) {
        pid_t pid = spawn_tune(dir, round == 0 ? a : r, NULL);
        usleep((useconds_t)(40 + (round * 37) % 160) * 1000);
        if (kill(pid, SIGKILL) == 0) kills++;
        int st;
        waitpid(pid, &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) finished = 1;
        if (db_int(dir, "SELECT count(*) FROM experiments WHERE status='FINISHED'") == 1)
            finished = 1;
    }
    if (!finished) {
        o = run_tune(dir, r);
        CHECK_EQ_INT(o.code, 0);
        out_free(&o);
    }
    CHECK(kills >= 3);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments WHERE status='FINISHED'"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 14);
    CHECK_EQ_INT(db_int(dir, "SELECT count(DISTINCT config) FROM trials"), 14);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='TERMINATED'"), 14);
    /* no missing and no repeated iteration in any trial's final attempt */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM (SELECT trial_id FROM results_current GROUP BY"
                             " trial_id HAVING count(*) != max(iteration) OR min(iteration) != 1"
                             " OR count(DISTINCT iteration) != count(*))"),
                 0);
    /* the same ASHA outcome for every trial that was never interrupted */
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM trials t JOIN ref.trials u ON u.trial_no = t.trial_no"
             " WHERE t.attempt = 1 AND (t.early_stopped != u.early_stopped OR"
             " (SELECT count(*) FROM results r WHERE r.trial_id = t.id) !="
             " (SELECT count(*) FROM ref.results r WHERE r.trial_id = u.id))");
    char path[4300], attach[4400];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    snprintf(attach, sizeof attach, "ATTACH '%s/tune.db' AS ref", ref);
    sqlite3 *db;
    REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, attach, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_stmt *st;
    REQUIRE(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
    REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    CHECK_EQ_INT(sqlite3_column_int(st, 0), 0);
    sqlite3_finalize(st);
    /* and the same final stop decisions overall: ASHA continued as if nothing happened */
    REQUIRE(sqlite3_prepare_v2(db,
                               "SELECT (SELECT group_concat(trial_no) FROM (SELECT trial_no FROM"
                               " trials WHERE early_stopped ORDER BY 1)) = (SELECT"
                               " group_concat(trial_no) FROM (SELECT trial_no FROM ref.trials"
                               " WHERE early_stopped ORDER BY 1))",
                               -1, &st, NULL) == SQLITE_OK);
    REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    CHECK_EQ_INT(sqlite3_column_int(st, 0), 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

TT_MAIN
