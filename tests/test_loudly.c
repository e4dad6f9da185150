/* End-to-end tests of the mistakes a run must not swallow (issue "No silently wasted
 * run"): exit statuses, fail_fast, a metric no trial reports, the stderr line in errors,
 * stop criteria and budgets, the grace of a completed trial, buffered and non-JSON output,
 * resume with the stored space.json, --more/extend, the live table's columns and the
 * resumable PyTorch example. Not for: unit behaviour of one module. */
#include "e2e.h"
#include "tinytest.h"

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "include/tune_report.h"

#define PY "/usr/bin/python3"

static void fresh(char *dir, size_t n, const char *name)
{
    e2e_fresh_dir(dir, n, "loudly", name);
}

/* dir/NAME with the given text (a trial script). */
static void script(const char *dir, const char *name, const char *text)
{
    char p[4300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    write_file(p, text);
}

static struct out run_in(const char *dir)
{
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    return run_tune(dir, a);
}

/* ---- item 5: exit status and fail_fast ------------------------------------------ */
TEST(relative_script_path_fails_fast_with_its_stderr_exit_3)
{
    char dir[4096];
    fresh(dir, sizeof dir, "failfast");
    /* train.py exists beside space.json but not in each trial's directory. */
    script(dir, "train.py", "print('{\"loss\": 1}')\n");
    space_file(dir, "{\"name\": \"ff\", \"metric\": \"loss\", \"num_samples\": 10,"
                    " \"max_concurrent\": 1, \"command\": [\"" PY "\", \"train.py\"],"
                    " \"space\": {}}");
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 3);
    CHECK_CONTAINS(o.err, "3 trials failed the same way before reporting any result (fail_fast 3)");
    CHECK_CONTAINS(o.err, "can't open file");
    CHECK_CONTAINS(o.err, "First lines of ");
    out_free(&o);
    /* Stopped after three: the other seven never ran. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'ERROR'"), 3);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'PENDING'"), 7);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE error LIKE "
                             "'exited with code 2: %can''t open file%train.py%'"),
                 3);
}

/* A program that exists and may be executed but cannot run (a script without "#!"): the
 * trials' starts do not wait for the exec, so each trial ends with trial_start's own words
 * as its error, and three the same way stop the run. */
TEST(a_script_without_shebang_fails_fast_with_exec_format_error)
{
    char dir[4096], sp[8192], path[4300];
    fresh(dir, sizeof dir, "noshebang");
    script(dir, "train.sh", "echo '{\"loss\": 1}'\n");
    snprintf(path, sizeof path, "%s/train.sh", dir);
    REQUIRE(chmod(path, 0755) == 0);
    snprintf(sp, sizeof sp,
             "{\"name\": \"nsb\", \"metric\": \"loss\", \"num_samples\": 6,"
             " \"max_concurrent\": 2, \"command\": [\"%s\"], \"space\": {}}",
             path);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 3);
    char want[4400];
    snprintf(want, sizeof want, "cannot run \"%s\": Exec format error", path);
    CHECK_CONTAINS(o.err, want);
    out_free(&o);
    snprintf(sp, sizeof sp,
             "SELECT count(*) FROM trials WHERE status = 'ERROR' AND error = 'cannot run \"%s\": "
             "Exec format error'",
             path);
    CHECK(db_int(dir, sp) >= 3);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 0);
}

TEST(validate_warns_about_a_relative_script_path)
{
    char dir[4096];
    fresh(dir, sizeof dir, "relpath");
    script(dir, "train.py", "print('{\"loss\": 1}')\n");
    space_file(dir, "{\"name\": \"rp\", \"command\": [\"" PY "\", \"train.py\", \"--lr\","
                    " \"{lr}\"], \"space\": {\"lr\": 0.1}}");
    const char *a[] = {"validate", "space.json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.err, "command[1] \"train.py\" is a relative path, but each trial runs in its "
                          "own directory");
    char want[4300];
    snprintf(want, sizeof want, "use its absolute path (\"%s/train.py\")", dir);
    CHECK_CONTAINS(o.err, want);
    out_free(&o);
    /* An absolute path is fine. */
    char sp[8192];
    snprintf(sp, sizeof sp,
             "{\"name\": \"rp\", \"command\": [\"" PY "\", \"%s/train.py\"], \"space\": {}}", dir);
    space_file(dir, sp);
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK(strstr(o.err, "relative path") == NULL);
    out_free(&o);
}

TEST(every_trial_failed_exits_3_without_fail_fast)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "allfail");
    snprintf(sp, sizeof sp,
             "{\"name\": \"af\", \"metric\": \"loss\", \"num_samples\": 5, \"fail_fast\": false,"
             " \"command\": [\"%s\", \"--fail-at\", \"1\"], \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 3);
    CHECK_CONTAINS(o.out, "5 failed");
    /* item 8: the summary shows the cause, not just the code */
    CHECK_CONTAINS(o.out, "trial_00000: exited with code 3: synth_trial: failing on purpose at "
                          "iteration 1");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'ERROR'"), 5);
    /* fail_fast 0/false never stops; a boolean true is 1; a bad value is refused. */
    space_file(dir, "{\"name\": \"x\", \"fail_fast\": -1, \"command\": [\"true\"], \"space\": {}}");
    o = run_in(dir);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "\"fail_fast\" must be a non-negative integer");
    out_free(&o);
}

TEST(finished_run_without_errors_exits_0)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "ok");
    snprintf(sp, sizeof sp,
             "{\"name\": \"ok\", \"metric\": \"loss\", \"num_samples\": 2,"
             " \"command\": [\"%s\", \"--iters\", \"3\"], \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 0);
    CHECK(strstr(o.out, "failed:") == NULL);
    out_free(&o);
}

/* ---- item 8: the last stderr line goes with the exit code -------------------------- */
TEST(error_carries_the_last_stderr_line)
{
    char dir[4096];
    fresh(dir, sizeof dir, "stderr_line");
    script(dir, "t.py",
           "import json, sys\n"
           "print(json.dumps({'training_iteration': 1, 'loss': 1.0}), flush=True)\n"
           "raise ValueError('bad lr')\n");
    char sp[8192];
    snprintf(sp, sizeof sp,
             "{\"name\": \"se\", \"metric\": \"loss\", \"command\": [\"" PY "\", \"%s/t.py\"],"
             " \"space\": {}}",
             dir);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 3);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE error = "
                             "'exited with code 1: ValueError: bad lr'"),
                 1);
}

/* ---- item 4: a metric or time_attr no trial reports ------------------------------- */
TEST(misspelled_metric_is_an_error_with_did_you_mean)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "nometric");
    snprintf(sp, sizeof sp,
             "{\"name\": \"nm\", \"metric\": \"val_los\", \"mode\": \"min\", \"num_samples\": 6,"
             " \"max_concurrent\": 2,"
             " \"command\": [\"%s\", \"--iters\", \"50\", \"--sleep-ms\", \"20\", \"--metric\","
             " \"val_loss\"], \"scheduler\": {\"type\": \"asha\", \"max_t\": 50}, \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "reports no \"val_los\", the experiment's \"metric\" (did you mean "
                          "\"val_loss\"?)");
    CHECK_CONTAINS(o.err, "\"training_iteration\", \"val_loss\", \"acc\"");
    out_free(&o);
    /* Stopped at once: no trial ran to its end, most never started. */
    CHECK(db_int(dir, "SELECT max(iteration) FROM results") < 50);
    CHECK(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'PENDING'") >= 4);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'ERROR'"), 0);
    /* The trials that were running are PAUSED and the experiment resumable once fixed:
     * results after the mistake was found are recorded, not judged (their missing metric
     * is a NaN, which ASHA would stop at the first milestone; under load both trials' first
     * results can arrive in one turn). */
    CHECK(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'PAUSED'") >= 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status IN ('PAUSED', "
                             "'PENDING')"),
                 6);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM decisions"), 0);
    CHECK_EQ_INT(db_int(dir, "SELECT status = 'INTERRUPTED' FROM experiments"), 1);

    /* The same for the scheduler's time_attr. */
    snprintf(sp, sizeof sp,
             "{\"name\": \"nt\", \"metric\": \"loss\", \"mode\": \"min\","
             " \"command\": [\"%s\", \"--iters\", \"3\"],"
             " \"scheduler\": {\"type\": \"asha\", \"time_attr\": \"epochs\", \"max_t\": 3},"
             " \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    o = run_in(dir);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "reports no \"epochs\", the scheduler's \"time_attr\"");
    out_free(&o);
}

/* Several objectives and constraints (issue 30): every objective and every constrained key
 * the first result lacks is named, with a did-you-mean against the keys it has; a key no
 * trial reports would leave every trial unranked or infeasible. */
TEST(misspelled_objective_and_constraint_key_stop_the_run)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "noobjective");
    snprintf(sp, sizeof sp,
             "{\"name\": \"mo\", \"metric\": [\"val_loss\", \"accc\"], \"mode\": [\"min\", "
             "\"max\"], \"constraints\": {\"val_lss\": {\"<=\": 5}, \"gpu_mem_gb\": {\"<=\": 16}},"
             " \"num_samples\": 4, \"max_concurrent\": 2,"
             " \"command\": [\"%s\", \"--iters\", \"50\", \"--sleep-ms\", \"20\", \"--metric\","
             " \"val_loss\"], \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "reports no \"accc\", objective 2 of \"metric\" (did you mean "
                          "\"acc\"?)");
    CHECK_CONTAINS(o.err, "reports no \"val_lss\", a key of \"constraints\" (did you mean "
                          "\"val_loss\"?)");
    CHECK_CONTAINS(o.err, "reports no \"gpu_mem_gb\", a key of \"constraints\". Its first "
                          "result has: \"training_iteration\", \"val_loss\", \"acc\"");
    CHECK(strstr(o.err, "reports no \"val_loss\"") == NULL);
    out_free(&o);
    CHECK(db_int(dir, "SELECT max(iteration) FROM results") < 50);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'ERROR'"), 0);
    CHECK_EQ_INT(db_int(dir, "SELECT status = 'INTERRUPTED' FROM experiments"), 1);
}

/* A metric reported as a string ("0.5": str(loss) or f"{loss}" in the script) or a boolean
 * used to read as NaN, and ASHA wrote "diverged" for every trial: the first result now
 * stops the run naming the key, what it is and the fix (null stays allowed: it is how NaN
 * and infinity are written). */
TEST(an_objective_reported_as_a_string_stops_the_run_saying_so)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "stringmetric");
    script(
        dir, "t.sh",
        "for i in 1 2 3 4 5 6 7 8 9; do\n"
        "  echo \"{\\\"training_iteration\\\": $i, \\\"loss\\\": \\\"0.5\\\", \\\"ok\\\": true}\"\n"
        "done\n");
    snprintf(sp, sizeof sp,
             "{\"name\": \"sm\", \"metric\": \"loss\", \"mode\": \"min\","
             " \"constraints\": {\"ok\": {\">=\": 1}}, \"num_samples\": 2,"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 9},"
             " \"command\": [\"/bin/sh\", \"%s/t.sh\"], \"space\": {}}",
             dir);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "reports \"loss\", the experiment's \"metric\", as a string (\"0.5\")");
    CHECK_CONTAINS(o.err, "reports \"ok\", a key of \"constraints\", as a boolean (true)");
    CHECK_CONTAINS(o.err, "Report it as a number (float(value) in Python");
    CHECK(strstr(o.err, "Fix the name") == NULL);
    CHECK(strstr(o.err, "diverged") == NULL);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM decisions WHERE reason LIKE '%diverged%'"), 0);

    /* A misspelled metric beside a string constraint key: both fixes, each where it lies. */
    fresh(dir, sizeof dir, "stringmetric2");
    script(dir, "t.sh", "echo '{\"training_iteration\": 1, \"loss\": 0.5, \"ok\": \"1\"}'\n");
    snprintf(sp, sizeof sp,
             "{\"name\": \"sm\", \"metric\": \"los\", \"mode\": \"min\","
             " \"constraints\": {\"ok\": {\">=\": 1}}, \"num_samples\": 1,"
             " \"command\": [\"/bin/sh\", \"%s/t.sh\"], \"space\": {}}",
             dir);
    space_file(dir, sp);
    o = run_in(dir);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err,
                   "reports no \"los\", the experiment's \"metric\" (did you mean \"loss\"?)");
    CHECK_CONTAINS(o.err, "reports \"ok\", a key of \"constraints\", as a string (\"1\")");
    CHECK_CONTAINS(o.err, "Fix the name in space.json; report the others as numbers");
    out_free(&o);
}

TEST(allow_missing_metric_warns_once_and_runs)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "allowmissing");
    snprintf(sp, sizeof sp,
             "{\"name\": \"am\", \"metric\": \"val_los\", \"allow_missing_metric\": true,"
             " \"num_samples\": 3, \"command\": [\"%s\", \"--iters\", \"4\"], \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 0);
    CHECK_EQ_INT(count_of(o.err, "reports no \"val_los\""), 1);
    CHECK_CONTAINS(o.err, "allow_missing_metric is true");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), 12);
}

/* ---- item 12: stop criteria and the experiment's time budget --------------------- */
TEST(stop_criteria_end_trials_as_terminated)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "stop");
    snprintf(sp, sizeof sp,
             "{\"name\": \"st\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 2,"
             " \"stop_grace_s\": 0, \"stop\": {\"training_iteration\": 5},"
             " \"command\": [\"%s\", \"--iters\", \"200\", \"--sleep-ms\", \"5\"], \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT max(iteration) FROM results"), 5);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED' AND "
                             "early_stopped = 0 AND error IS NULL"),
                 2);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM decisions WHERE action = 'complete' AND reason "
                             "LIKE 'reached stop criterion training_iteration: 5 >= 5'"),
                 2);
}

TEST(metric_target_stops_the_experiment_when_asked)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "target");
    /* loss = 0.1 + 1/sqrt(t) at lr 0.01: <= 0.6 from t = 4 on. */
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"tg\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 6,"
        " \"max_concurrent\": 2, \"stop\": {\"loss\": 0.6}, \"stop_experiment_on_target\": true,"
        " \"command\": [\"%s\", \"--iters\", \"100\", \"--sleep-ms\", \"20\"], \"space\": {}}",
        g_synth);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Target reached, experiment stopped");
    CHECK_CONTAINS(o.out, "reached the target loss <= 0.6");
    out_free(&o);
    CHECK(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'PENDING'") >= 3);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'ERROR'"), 0);
    CHECK(db_int(dir, "SELECT max(iteration) FROM results") < 50);
    CHECK_EQ_INT(db_int(dir, "SELECT status = 'FINISHED' FROM experiments"), 1);
}

TEST(time_budget_is_the_experiments_and_trial_time_limit_the_trials)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "budget");
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"bu\", \"metric\": \"loss\", \"num_samples\": 4, \"max_concurrent\": 2,"
        " \"time_budget_s\": 1, \"stop_grace_s\": 1,"
        " \"command\": [\"%s\", \"--iters\", \"1000\", \"--sleep-ms\", \"50\"], \"space\": {}}",
        g_synth);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 0);
    /* The budget ended it, not the trials: alone they would each report 1,000 iterations. */
    CHECK(db_int(dir, "SELECT max(iteration) FROM results") < 1000);
    CHECK_CONTAINS(o.err, "\"time_budget_s\" (1 s) now limits the whole experiment");
    CHECK_CONTAINS(o.out, "The time budget ended the run (time_budget_s 1 s)");
    CHECK_CONTAINS(o.out, "2 trials never started");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED' AND "
                             "early_stopped = 0 AND error IS NULL"),
                 2);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM decisions WHERE reason = 'experiment stopped: "
                             "the experiment''s time budget ended (time_budget_s 1 s)'"),
                 2);

    snprintf(
        sp, sizeof sp,
        "{\"name\": \"tl\", \"metric\": \"loss\", \"trial_time_limit_s\": 0.5,"
        " \"command\": [\"%s\", \"--iters\", \"1000\", \"--sleep-ms\", \"50\"], \"space\": {}}",
        g_synth);
    space_file(dir, sp);
    o = run_in(dir);
    CHECK_EQ_INT(o.code, 3);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials t JOIN experiments e ON e.id = "
                             "t.experiment_id WHERE e.name = 'tl' AND t.status = 'ERROR' AND "
                             "t.error LIKE 'ran past trial_time_limit_s (0.5 s)%'"),
                 1);
}

/* ---- item 10: a completed trial finishes by itself ------------------------------- */
TEST(completed_trial_runs_the_code_after_its_last_report)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "grace");
    /* Reports up to max_t, then "saves the model" for 0.5 s: Python's default SIGTERM
     * would kill it before the file is written. */
    script(dir, "t.py",
           "import json, os, time\n"
           "for i in range(1, 4):\n"
           "    print(json.dumps({'training_iteration': i, 'loss': 1.0 / i}), flush=True)\n"
           "time.sleep(0.5)\n"
           "open(os.path.join(os.environ['TUNE_TRIAL_DIR'], 'saved'), 'w').write('ok')\n");
    snprintf(sp, sizeof sp,
             "{\"name\": \"gr\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 2,"
             " \"stop_grace_s\": 5, \"scheduler\": {\"type\": \"asha\", \"max_t\": 3},"
             " \"command\": [\"" PY "\", \"%s/t.py\"], \"space\": {}}",
             dir);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    for (int i = 0; i < 2; i++) {
        char p[4300];
        snprintf(p, sizeof p, "%s/tune_results/gr/trial_%05d/saved", dir, i);
        CHECK(access(p, F_OK) == 0);
    }
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 2);
}

/* ---- item 6: buffered output ------------------------------------------------------ */
TEST(python_trials_run_unbuffered_and_buffered_output_is_named)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "buffered");
    script(dir, "env.py",
           "import json, os\n"
           "print(json.dumps({'training_iteration': 1, 'loss': 1,"
           " 'unbuf': os.environ.get('PYTHONUNBUFFERED', 'unset')}))\n");
    snprintf(sp, sizeof sp,
             "{\"name\": \"en\", \"metric\": \"loss\", \"command\": [\"" PY "\", \"%s/env.py\"],"
             " \"space\": {}}",
             dir);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    const char *env[] = {"PYTHONUNBUFFERED", NULL};
    struct how h = {.env = env};
    struct out o = run_tune_how(dir, a, &h);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE json_extract(data, '$.unbuf') "
                             "= '1'"),
                 1);
    /* All results at exit after 3 s of silence: what a buffered print looks like. */
    script(dir, "late.py",
           "import json, time\n"
           "time.sleep(3.2)\n"
           "for i in range(1, 4):\n"
           "    print(json.dumps({'training_iteration': i, 'loss': 1.0 / i}))\n");
    snprintf(sp, sizeof sp,
             "{\"name\": \"la\", \"metric\": \"loss\", \"command\": [\"" PY "\", \"%s/late.py\"],"
             " \"space\": {}}",
             dir);
    space_file(dir, sp);
    o = run_in(dir);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "results arrived only at exit: the program buffers its output; flush "
                          "after each line (print(..., flush=True)) or set PYTHONUNBUFFERED=1");
    out_free(&o);
}

/* ---- item 7: results that are not JSON ------------------------------------------- */
TEST(python_dict_results_are_quoted_with_json_dumps_advice)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "notjson");
    script(dir, "d.py",
           "for i in range(1, 3):\n"
           "    print({'training_iteration': i, 'loss': 0.5, 'tag': '\\x1b[2J'})\n");
    snprintf(sp, sizeof sp,
             "{\"name\": \"nj\", \"metric\": \"loss\", \"allow_missing_metric\": true,"
             " \"command\": [\"" PY "\", \"%s/d.py\"], \"space\": {}}",
             dir);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out,
                   "from trial_00000: {'training_iteration': 1, 'loss': 0.5, 'tag': '\\x1b[2J'}");
    CHECK_CONTAINS(o.out, "json.dumps");
    CHECK(strstr(o.out, "\x1b[2J") == NULL); /* the escape sequence never reaches the terminal */
    out_free(&o);
}

/* ---- item 1: resume uses the stored space.json ---------------------------------- */
TEST(resume_uses_the_stored_space_and_shows_the_difference)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "resume_stored");
    snprintf(sp, sizeof sp,
             "{\"name\": \"rs\", \"metric\": \"loss\", \"num_samples\": 3, \"max_concurrent\": 1,"
             " \"command\": [\"%s\", \"--iters\", \"40\", \"--sleep-ms\", \"25\", \"--lr\", "
             "\"{lr}\"], \"space\": {\"lr\": {\"uniform\": [0.001, 0.002]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    /* Interrupted once the experiment is recorded and running (a result in), not after a
     * fixed delay a slow start can outlast; three trials of a second each remain. */
    int reached = 0;
    struct out o = run_tune_interrupted(dir, a, "SELECT count(*) FROM results", 1, &reached);
    CHECK(reached);
    CHECK_EQ_INT(o.code, 130);
    out_free(&o);
    /* The file is edited: more samples and another range. */
    snprintf(sp, sizeof sp,
             "{\"name\": \"rs\", \"metric\": \"loss\", \"num_samples\": 5, \"max_concurrent\": 1,"
             " \"command\": [\"%s\", \"--iters\", \"40\", \"--sleep-ms\", \"25\", \"--lr\", "
             "\"{lr}\"], \"space\": {\"lr\": {\"uniform\": [0.5, 0.6]}}}",
             g_synth);
    space_file(dir, sp);
    const char *r[] = {"run", "space.json", "--gpus", "none", "--resume", NULL};
    o = run_tune(dir, r);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.err, "differs from the space.json stored with experiment \"rs\"; resuming "
                          "with the stored one");
    CHECK_CONTAINS(o.err, "num_samples: stored 3, file 5");
    CHECK_CONTAINS(o.err, "space.lr: stored {\"uniform\":[0.001,0.002]}, file "
                          "{\"uniform\":[0.5,0.6]}");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 3);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 3);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE json_extract(config, '$.lr') > "
                             "0.1"),
                 0);
}

/* ---- item 13: --more and extend ------------------------------------------------- */
TEST(more_and_extend_continue_the_seeds_sequence)
{
    char dir[4096], ref[4096], sp[8192];
    fresh(dir, sizeof dir, "more");
    fresh(ref, sizeof ref, "more_ref");
    const char *fmt = "{\"name\": \"mo\", \"metric\": \"loss\", \"num_samples\": %d, \"seed\": 7,"
                      " \"command\": [\"%s\", \"--iters\", \"2\", \"--lr\", \"{lr}\"],"
                      " \"space\": {\"lr\": {\"loguniform\": [0.0001, 0.1]}}}";
    snprintf(sp, sizeof sp, fmt, 3, g_synth);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    const char *m[] = {"run", "space.json", "--gpus", "none", "--more", "2", NULL};
    o = run_tune(dir, m);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Adding 2 trials to mo: trials 3..4");
    out_free(&o);
    const char *x[] = {"extend", "mo", "1", "--gpus", "none", NULL};
    o = run_tune(dir, x);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT num_trials FROM experiments"), 6);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 6);
    CHECK_EQ_INT(db_int(dir, "SELECT max(trial_no) FROM trials"), 5);
    /* The same configurations as an experiment of 6 from the start. */
    snprintf(sp, sizeof sp, fmt, 6, g_synth);
    space_file(ref, sp);
    o = run_in(ref);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    for (int i = 0; i < 6; i++) {
        char q[200];
        snprintf(q, sizeof q, "SELECT json_extract(config, '$.lr') FROM trials WHERE trial_no = %d",
                 i);
        CHECK(db_real(dir, q) == db_real(ref, q));
    }
    /* --more on an experiment that does not exist is refused. */
    const char *bad[] = {"extend", "nope", "1", NULL};
    o = run_tune(dir, bad);
    CHECK(o.code != 0);
    CHECK_CONTAINS(o.err, "no experiment named \"nope\"");
    out_free(&o);
}

/* ---- item 11: the live table ---------------------------------------------------- */
TEST(table_keeps_metric_and_iteration_at_any_width)
{
    cJSON *cfg = cJSON_Parse("{\"learning_rate_schedule_name\": \"cosine_with_warmup\","
                             " \"weight_decay_coefficient\": 0.000123456,"
                             " \"hidden_layer_width\": 1024}");
    REQUIRE(cfg);
    double cols[1] = {0.875};
    sched_trial_view_t v = {.trial_no = 0,
                            .name = "trial_00000",
                            .status = SCHED_TRIAL_RUNNING,
                            .slice = "cpu:1",
                            .config = cfg,
                            .iterations = 17,
                            .last_time = 17,
                            .last_metric = 0.4321,
                            .best_metric = 0.4,
                            .columns = cols,
                            .ncolumns = 1,
                            .run_s = 75};
    sched_snapshot_t s = {.experiment = "e",
                          .policy = "asha",
                          .metric = "val_loss",
                          .trials = &v,
                          .ntrials = 1,
                          .best_trial = -1,
                          .best_metric = NAN};
    s.counts[SCHED_TRIAL_RUNNING] = 1;
    const char *params[] = {"learning_rate_schedule_name", "weight_decay_coefficient",
                            "hidden_layer_width"};
    const char *mc[] = {"val_acc"};
    cli_table_opts_t o = {.rows = 30,
                          .cols = 80,
                          .params = params,
                          .nparams = 3,
                          .time_attr = "training_iteration",
                          .metric_columns = mc,
                          .nmetric_columns = 1};
    char *t = cli_render_status(&s, &o);
    REQUIRE(t);
    const char *row = strstr(t, "trial_00000");
    REQUIRE(row);
    const char *eol = strchr(row, '\n');
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(eol ? eol - row : (long)strlen(row)), row);
    CHECK_CONTAINS(line, "17");     /* iter */
    CHECK_CONTAINS(line, "0.4321"); /* the metric */
    CHECK(strlen(line) <= 80);
    /* the extra metric column and the time made way for the parameters, and that is said
     * (the width policy: cli/table.c, tests/test_table.c) */
    CHECK_CONTAINS(t, "+1 metric column, slice, time hidden");
    free(t);
    /* Wide enough: every parameter is shown in full, the extra column and the time too. */
    o.cols = 0;
    t = cli_render_status(&s, &o);
    CHECK_CONTAINS(t, "cosine_with_warmup");
    CHECK_CONTAINS(t, "hidden_layer_width");
    CHECK_CONTAINS(t, "val_acc");
    CHECK_CONTAINS(t, "0.875");
    CHECK_CONTAINS(t, "1:15");
    free(t);
    /* A snapshot that hands out fewer trials than the experiment has (report_trials): the
     * table counts the rest by status, even with no limit on rows. */
    s.total_trials = 1000;
    s.counts[SCHED_TRIAL_TERMINATED] = 600;
    s.counts[SCHED_TRIAL_PENDING] = 399;
    o.rows = 0;
    t = cli_render_status(&s, &o);
    CHECK_CONTAINS(t, "Trials: 1000 total: 1 RUNNING, 399 PENDING, 600 TERMINATED");
    CHECK_CONTAINS(t, "... and 999 more trials (399 PENDING, 600 TERMINATED)");
    free(t);
    cJSON_Delete(cfg);
}

TEST(reporter_parameter_columns_must_name_parameters)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "reporter");
    snprintf(sp, sizeof sp,
             "{\"name\": \"rp\", \"metric\": \"loss\", \"reporter\": {\"parameter_columns\": "
             "[\"lrat\"], \"metric_columns\": [\"acc\"]}, \"command\": [\"%s\", \"--iters\", \"2\","
             " \"--lr\", \"{lrate}\"], \"space\": {\"lrate\": 0.01}}",
             g_synth);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "reporter.parameter_columns: \"lrat\" is not a parameter of \"space\" "
                          "(did you mean \"lrate\"?)");
    out_free(&o);
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"rp\", \"metric\": \"loss\", \"reporter\": {\"parameter_columns\": "
        "[\"lrate\"], \"metric_columns\": [\"acc\"]}, \"command\": [\"%s\", \"--iters\", \"2\","
        " \"--lr\", \"{lrate}\", \"{unused}\"], \"space\": {\"lrate\": 0.01, \"unused\": "
        "\"--argv\"}}",
        g_synth);
    space_file(dir, sp);
    o = run_in(dir);
    CHECK_EQ_INT(o.code, 0);
    /* The final status block shows the chosen columns only. */
    CHECK_CONTAINS(o.out, "acc");
    CHECK(strstr(o.out, "| unused") == NULL);
    out_free(&o);
}

/* ---- item 15: the resumable PyTorch example -------------------------------------- */
TEST(torch_example_resumes_from_its_checkpoint)
{
    if (system(PY " -c 'import torch' 2>/dev/null") != 0) {
        fprintf(stderr, "SKIP: no PyTorch under " PY " (apt-get install python3-torch)\n");
        exit(77);
    }
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "torch_resume");
    const char *src = getenv("TUNE_SOURCE_DIR");
    REQUIRE(src);
    /* Fails once at epoch 3: the retry must resume at 3 from checkpoint.pt (epoch 2). */
    snprintf(sp, sizeof sp,
             "{\"name\": \"tr\", \"metric\": \"loss\", \"mode\": \"min\", \"max_failures\": 1,"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 5},"
             " \"command\": [\"" PY "\", \"%s/examples/torch_resumable/train.py\", \"--epochs\","
             " \"5\", \"--fail-once-at\", \"3\"], \"space\": {}}",
             src);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT attempt FROM trials"), 2);
    /* Epochs 1..5 once each in the current attempt: 1-2 carried over, 3-5 computed again. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE attempt = 2"), 5);
    CHECK_EQ_INT(db_int(dir, "SELECT count(DISTINCT iteration) FROM results WHERE attempt = 2"), 5);
    /* checkpoint.pt, saved over itself each epoch in the trial's own folder, is named as it
     * is (tune_report copies only a checkpoint from outside that folder) */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE json_extract(data, "
                             "'$.checkpoint') LIKE '%/trial_00000/checkpoint.pt'"),
                 db_int(dir, "SELECT count(*) FROM results"));
    char p[4300];
    snprintf(p, sizeof p, "%s/tune_results/tr/trial_00000/stderr.log", dir);
    char *err = slurp(p);
    CHECK_CONTAINS(err, "checkpoint.pt at epoch 3");
    free(err);
    /* The code after the last report ran although max_t completed the trial. */
    snprintf(p, sizeof p, "%s/tune_results/tr/trial_00000/final_model.pt", dir);
    CHECK(access(p, F_OK) == 0);
}

/* ---- the new settings: each bad value has its message ---------------------------- */
TEST(new_settings_are_checked_and_stored)
{
    char dir[4096];
    fresh(dir, sizeof dir, "settings");
    static const struct {
        const char *body, *msg;
    } bad[] = {
        {"\"stop\": 5", "\"stop\" must be an object of criteria"},
        {"\"stop\": {\"acc\": \"high\"}", "stop criterion \"acc\" must be a number"},
        {"\"stop_experiment_on_target\": true, \"stop\": {\"training_iteration\": 3}",
         "needs a \"stop\" target for the experiment's metric \"loss\""},
        {"\"stop_experiment_on_target\": 1", "\"stop_experiment_on_target\" must be true or false"},
        {"\"allow_missing_metric\": \"yes\"", "\"allow_missing_metric\" must be true or false"},
        {"\"fail_fast\": 1.5", "\"fail_fast\" must be a non-negative integer"},
        {"\"trial_time_limit_s\": -1", "\"trial_time_limit_s\" must be a number >= 0"},
        {"\"reporter\": {\"metric_colums\": []}",
         "unknown key \"metric_colums\" in \"reporter\" (did you mean \"metric_columns\"?)"},
        {"\"reporter\": {\"metric_columns\": \"acc\"}", "\"metric_columns\" must be an array"},
        {"\"reporter\": {\"parameter_columns\": [1]}", "parameter_columns[0] must be a string"},
        {"\"scheduler\": {\"type\": \"asha\", \"stop_last_trials\": 0}",
         "\"stop_last_trials\" must be true or false"},
        {"\"scheduler\": {\"type\": \"median\", \"stop_last_trials\": false}",
         "\"stop_last_trials\" does not apply to the \"median\" scheduler"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char sp[2048];
        snprintf(sp, sizeof sp,
                 "{\"name\": \"s\", \"metric\": \"loss\", \"mode\": \"min\", %s,"
                 " \"command\": [\"true\"], \"space\": {}}",
                 bad[i].body);
        space_file(dir, sp);
        const char *a[] = {"validate", "space.json", NULL};
        struct out o = run_tune(dir, a);
        CHECK_EQ_INT(o.code, 2);
        CHECK_CONTAINS(o.err, bad[i].msg);
        out_free(&o);
    }
    /* The resolved settings in the database carry the new keys with their values. */
    char sp[8192];
    snprintf(sp, sizeof sp,
             "{\"name\": \"s\", \"metric\": \"loss\", \"mode\": \"min\", \"fail_fast\": true,"
             " \"trial_time_limit_s\": 60, \"stop\": {\"loss\": 0.01},"
             " \"reporter\": {\"metric_columns\": [\"acc\"]},"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 2, \"stop_last_trials\": false},"
             " \"command\": [\"%s\", \"--iters\", \"2\"], \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    struct out o = run_in(dir);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT json_extract(settings_json, '$.fail_fast') = 1 AND"
                             " json_extract(settings_json, '$.trial_time_limit_s') = 60 AND"
                             " json_extract(settings_json, '$.time_budget_s') = 0 AND"
                             " json_extract(settings_json, '$.stop.loss') = 0.01 AND"
                             " json_extract(settings_json, '$.allow_missing_metric') = 0 AND"
                             " json_extract(settings_json, '$.stop_experiment_on_target') = 0 AND"
                             " json_extract(settings_json, '$.reporter.metric_columns[0]') = 'acc'"
                             " AND json_extract(settings_json, '$.scheduler.stop_last_trials') = 0"
                             " FROM experiments"),
                 1);
}

TEST(trial_that_reached_a_stop_criterion_stays_done_after_kill_9)
{
    char dir[4096], sp[8192];
    fresh(dir, sizeof dir, "stop_resume");
    /* The trial reaches its criterion at iteration 2, then ignores SIGTERM and keeps
     * going: tune dies (kill -9) during its completion grace. */
    snprintf(sp, sizeof sp,
             "{\"name\": \"sr\", \"metric\": \"loss\", \"stop_grace_s\": 30,"
             " \"stop\": {\"training_iteration\": 2},"
             " \"command\": [\"%s\", \"--iters\", \"100000\", \"--sleep-ms\", \"20\","
             " \"--ignore-term\"], \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    pid_t pid = spawn_tune(dir, a, NULL);
    e2e_wait_db(dir, "SELECT count(*) FROM decisions WHERE action = 'complete'", 1, 60);
    kill(-pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    REQUIRE(db_int(dir, "SELECT count(*) FROM decisions WHERE action = 'complete'") == 1);
    const char *r[] = {"resume", "sr", "--gpus", "none", NULL};
    struct out o = run_tune(dir, r);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    /* Done, not run again as a second attempt. */
    CHECK_EQ_INT(db_int(dir, "SELECT status = 'TERMINATED' AND attempt = 1 FROM trials"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT max(iteration) FROM results"), 2);
}

/* The checkpoint key of both helpers: one JSON line with "checkpoint": PATH. */
TEST(report_helpers_name_the_checkpoint)
{
    char dir[4096], path[4300];
    fresh(dir, sizeof dir, "helpers");
    snprintf(path, sizeof path, "%s/c.out", dir);
    FILE *f = fopen(path, "w+");
    REQUIRE(f);
    tune_report_t r;
    tune_report_begin(&r);
    r.out = f;
    tune_report_int(&r, "training_iteration", 3);
    tune_report_checkpoint(&r, "/t/checkpoint \"3\".bin");
    CHECK_EQ_INT(tune_report_end(&r), 0);
    fclose(f);
    char *text = slurp(path);
    CHECK_STR(text,
              "{\"training_iteration\": 3, \"checkpoint\": \"/t/checkpoint \\\"3\\\".bin\"}\n");
    free(text);
    const char *src = getenv("TUNE_SOURCE_DIR");
    REQUIRE(src);
    char code[8192];
    snprintf(code, sizeof code,
             "import sys; sys.path.insert(0, '%s/python'); from tune_report import report;"
             " import pathlib; report(training_iteration=3, loss=0.5,"
             " checkpoint=pathlib.Path('/t/checkpoint.pt'))",
             src);
    const char *argv[] = {PY, "-c", code, NULL};
    struct out o = run_prog(dir, argv, NULL);
    CHECK_EQ_INT(o.code, 0);
    CHECK_STR(o.out,
              "{\"training_iteration\": 3, \"loss\": 0.5, \"checkpoint\": \"/t/checkpoint.pt\"}\n");
    out_free(&o);
}

TT_MAIN
