/* test_faults: end-to-end fault tests: the real `tune` binary against a full disk, a database
 * that is not one (or is too new), a read-only directory, hostile experiment names, hostile
 * trial output, and its own death by SIGKILL, checking what is left afterwards: the exit
 * status and message, the processes still alive, and the SQLite file itself.
 * Not for: unit behaviour of one module (tests/test_<module>.c) or the resume logic as
 * such (tests/test_cli.c). */
#define E2E_GROUP "faults"
#include "e2e.h"
#include "tinytest.h"

#include <dirent.h>
#include <sys/file.h>

/* ---- hostile experiment names --------------------------------------------------------- */

TEST(experiment_name_cannot_escape_the_results_directory)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "names");
    static const char *const bad[] = {"../../etc", "a/b", "/etc", "..", "."};
    static const char *const why[] = {"'/' is not allowed", "'/' is not allowed",
                                      "'/' is not allowed", "is not allowed", "is not allowed"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(sp, sizeof sp, "{\"name\": \"%s\", \"command\": [\"%s\"]}", bad[i], g_synth);
        space_file(dir, sp);
        const char *a[] = {"run", "space.json", "--quiet", NULL};
        struct out o = run_tune(dir, a);
        CHECK_EQ_INT(o.code, 2);
        char want[200];
        snprintf(want, sizeof want, "space.json:1:10: experiment name \"%s\"", bad[i]);
        CHECK_CONTAINS(o.err, want);
        CHECK_CONTAINS(o.err, why[i]);
        out_free(&o);
    }
    /* Nothing was created anywhere: no results folder, no database. */
    char p[4300];
    snprintf(p, sizeof p, "%s/tune_results", dir);
    CHECK(access(p, F_OK) != 0);
    snprintf(p, sizeof p, "%s/tune.db", dir);
    CHECK(access(p, F_OK) != 0);
    /* A name given on the command line only ever looks the experiment up. */
    const char *r[] = {"resume", "../../etc", NULL};
    struct out o = run_tune(dir, r);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "no experiment named \"../../etc\"");
    out_free(&o);
    snprintf(p, sizeof p, "%s/tune_results", dir);
    CHECK(access(p, F_OK) != 0);
}

/* ---- who owns a results folder ------------------------------------------------------- */

/* dir/space.json for experiment `name`: n trials of synth_trial, 3 iterations each. */
static void owner_space(const char *dir, const char *name, int n)
{
    char sp[8192];
    snprintf(sp, sizeof sp,
             "{\"name\": \"%s\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": %d,"
             " \"command\": [\"%s\", \"--iters\", \"3\", \"--lr\", \"{lr}\"],"
             " \"space\": {\"lr\": {\"loguniform\": [0.001, 0.1]}}}",
             name, n, g_synth);
    space_file(dir, sp);
}

/* tune in dir with the arguments up to NULL, its output shown when it failed. */
#define tune_in(dir, ...) run_tune_shown((dir), (const char *const[]){__VA_ARGS__})

/* Whether dir/rel exists (a symlink counts, never followed). */
static int exists_in(const char *dir, const char *rel)
{
    char p[16400];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    return lstat(p, &sb) == 0;
}

/* dir/rel's text ("" when it cannot be read); the caller frees. */
static char *text_in(const char *dir, const char *rel)
{
    char p[16400];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    return slurp(p);
}

/* A fresh directory under the case's, made, its absolute path resolved (tune's messages
 * name resolved paths). */
static void sub_dir(char *out, size_t n, const char *root, const char *name)
{
    char p[8400];
    snprintf(p, sizeof p, "%s/%s", root, name);
    if (mkdir(p, 0755) != 0 && errno != EEXIST) abort();
    if (!realpath(p, out)) abort();
    (void)n;
}

/* cp from to, byte for byte (a database closed by tune has no -wal file to copy). */
static int copy_file(const char *from, const char *to)
{
    char *t = NULL;
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    int ok = f && g;
    char buf[65536];
    size_t k;
    while (ok && (k = fread(buf, 1, sizeof buf, f)) > 0)
        ok = fwrite(buf, 1, k, g) == k;
    if (f) fclose(f);
    if (g && fclose(g) != 0) ok = 0;
    free(t);
    return ok ? 0 : -1;
}

/* A copied database shares its original's identity, and its rows name the original's
 * folder: tune rm of the copy leaves that folder (issue #26: `cp proj/tune.db backup/ &&
 * cd backup && tune rm e1 --yes` deleted proj/tune_results/e1), a resume of the copy writes
 * into a folder of its own, and a copy beside its original is refused the original's. */
TEST(a_copied_database_never_touches_its_originals_folder)
{
    char root[4096], proj[4096], backup[4096], other[4096], p[16400], q[16400], want[32768];
    fresh_dir(root, sizeof root, "owner_copy");
    sub_dir(proj, sizeof proj, root, "proj");
    sub_dir(backup, sizeof backup, root, "backup");
    owner_space(proj, "e1", 2);
    struct out o = tune_in(proj, "run", "space.json", "--gpus", "none", "--quiet", NULL);
    REQUIRE(o.code == 0);
    out_free(&o);
    char *log0 = text_in(proj, "tune_results/e1/trial_00000/stdout.log");
    REQUIRE(strstr(log0, "loss") != NULL);
    /* The owner file names the database and the experiment. */
    char *owner = text_in(proj, "tune_results/e1/.tune-owner");
    snprintf(want, sizeof want, "\"database\":\"%s/tune.db\"", proj);
    CHECK_CONTAINS(owner, want);
    CHECK_CONTAINS(owner, "\"experiment\":\"e1\"");
    free(owner);
    snprintf(p, sizeof p, "%s/tune.db", proj);
    snprintf(q, sizeof q, "%s/tune.db", backup);
    REQUIRE(copy_file(p, q) == 0);

    /* The copy goes on in a folder of its own. */
    o = tune_in(backup, "extend", "e1", "1", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK(exists_in(backup, "tune_results/e1/trial_00002/stdout.log"));
    CHECK(!exists_in(proj, "tune_results/e1/trial_00002"));

    /* An empty folder no database claims (a tune killed as it made it) is left by rm too. */
    sub_dir(other, sizeof other, backup, "other");
    snprintf(q, sizeof q, "%s/tune.db", other);
    snprintf(want, sizeof want, "%s/tune.db", backup);
    REQUIRE(copy_file(want, q) == 0);
    REQUIRE(mkdir(strcat(strcpy(want, other), "/tune_results"), 0755) == 0);
    REQUIRE(mkdir(strcat(want, "/e1"), 0755) == 0);
    o = tune_in(other, "rm", "e1", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    CHECK_STR(o.out, "Deleted experiment e1: 3 trials, 9 results\n");
    snprintf(want, sizeof want,
             "tune: left %s/tune_results/e1 as it is: it is empty and no database has claimed it",
             other);
    CHECK_CONTAINS(o.err, want);
    snprintf(want, sizeof want,
             "tune: left %s/tune_results/e1 as it is: it belongs to %s/tune.db, a database with "
             "this one's identity",
             backup, backup);
    CHECK_CONTAINS(o.err, want);
    out_free(&o);
    CHECK(exists_in(other, "tune_results/e1"));
    CHECK(exists_in(backup, "tune_results/e1/trial_00002/stdout.log"));
    CHECK(exists_in(proj, "tune_results/e1/trial_00000/stdout.log"));

    /* rm of the copy: its rows, never the original's folder. */
    snprintf(p, sizeof p, "%s/tune.db", proj);
    snprintf(q, sizeof q, "%s/tune.db", backup);
    REQUIRE(copy_file(p, q) == 0);
    o = tune_in(backup, "rm", "e1", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    snprintf(want, sizeof want,
             "Deleted experiment e1: 2 trials, 6 results; removed %s/tune_results/e1\n", backup);
    CHECK_STR(o.out, want); /* the copy's own folder, which its extend made */
    snprintf(want, sizeof want,
             "tune: left %s/tune_results/e1 as it is: it belongs to %s/tune.db, a database with "
             "this one's identity: this one is a copy of it (or it of this one)",
             proj, proj);
    CHECK_CONTAINS(o.err, want);
    out_free(&o);
    char *log1 = text_in(proj, "tune_results/e1/trial_00000/stdout.log");
    CHECK_STR(log1, log0);
    free(log1);
    snprintf(q, sizeof q, "%s/tune.db", backup);
    CHECK_EQ_INT(testdb_int(q, "SELECT count(*) FROM experiments"), 0);
    CHECK_EQ_INT(db_int(proj, "SELECT count(*) FROM trials"), 2);

    /* A copy beside its original: the original's folder is refused to it. */
    snprintf(q, sizeof q, "%s/b.db", proj);
    REQUIRE(copy_file(p, q) == 0);
    o = tune_in(proj, "extend", "e1", "1", "--db", "b.db", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 2);
    snprintf(want, sizeof want,
             "tune: %s/tune_results/e1 cannot be the results folder of experiment \"e1\" of "
             "b.db: it belongs to %s/tune.db, a database with this one's identity",
             proj, proj);
    CHECK_CONTAINS(o.err, want);
    CHECK_CONTAINS(o.err, "Keep this database in a folder of its own (move it there and pass "
                          "--db DIR/b.db)");
    out_free(&o);
    CHECK(!exists_in(proj, "tune_results/e1/trial_00002"));
    o = tune_in(proj, "rm", "e1", "--db", "b.db", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.err, "as it is: it belongs to");
    out_free(&o);
    CHECK(exists_in(proj, "tune_results/e1/trial_00000/stdout.log"));

    /* The whole project copied (cp -a): the copied folder is the copy's, the original's
     * stays the original's. */
    char proj3[8400], cmd[20000];
    snprintf(proj3, sizeof proj3, "%s3", proj);
    snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", proj, proj3);
    REQUIRE(system(cmd) == 0);
    o = tune_in(proj3, "extend", "e1", "1", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK(exists_in(proj3, "tune_results/e1/trial_00002/stdout.log"));
    CHECK(!exists_in(proj, "tune_results/e1/trial_00002"));
    owner = text_in(proj3, "tune_results/e1/.tune-owner");
    snprintf(want, sizeof want, "\"database\":\"%s/tune.db\"", proj3);
    CHECK_CONTAINS(owner, want);
    free(owner);
    o = tune_in(proj3, "rm", "e1", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    snprintf(want, sizeof want, "; removed %s/tune_results/e1\n", proj3);
    CHECK_CONTAINS(o.out, want);
    out_free(&o);
    CHECK(!exists_in(proj3, "tune_results/e1"));
    log1 = text_in(proj, "tune_results/e1/trial_00000/stdout.log");
    CHECK_STR(log1, log0);
    free(log1);

    /* The original removes its own. */
    o = tune_in(proj, "rm", "e1", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    snprintf(want, sizeof want, "; removed %s/tune_results/e1\n", proj);
    CHECK_CONTAINS(o.out, want);
    out_free(&o);
    CHECK(!exists_in(proj, "tune_results/e1"));
    free(log0);
}

/* Two databases in one folder with the same experiment name (issue #26: the second run
 * appended to the first's trial logs, and tune rm of the second deleted the first's
 * trials): the second is refused the folder, and rm of it never touches the first's. */
TEST(two_databases_in_one_folder_never_share_a_results_folder)
{
    char dir[4096], root[4096], other[4096], p[16400], q[16400], want[32768];
    fresh_dir(root, sizeof root, "owner_two_dbs");
    sub_dir(dir, sizeof dir, root, "proj");
    owner_space(dir, "e1", 2);
    struct out o =
        tune_in(dir, "run", "space.json", "--db", "a.db", "--gpus", "none", "--quiet", NULL);
    REQUIRE(o.code == 0);
    out_free(&o);
    char *log0 = text_in(dir, "tune_results/e1/trial_00000/stdout.log");
    REQUIRE(strstr(log0, "loss") != NULL);

    o = tune_in(dir, "run", "space.json", "--db", "b.db", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 2);
    snprintf(want, sizeof want,
             "tune: %s/tune_results/e1 cannot be the results folder of experiment \"e1\" of b.db: "
             "it belongs to experiment \"e1\" of another database, %s/a.db. Give the experiment "
             "another name (\"name\" in space.json), or keep this database in a folder of its own "
             "(--db DIR/b.db)",
             dir, dir);
    CHECK_CONTAINS(o.err, want);
    out_free(&o);
    char *log1 = text_in(dir, "tune_results/e1/trial_00000/stdout.log");
    CHECK_STR(log1, log0);
    free(log1);
    snprintf(p, sizeof p, "%s/b.db", dir);
    CHECK(testdb_int(p, "SELECT count(*) FROM experiments") <= 0);
    o = tune_in(dir, "rm", "e1", "--db", "b.db", "--yes", NULL);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "no experiment named \"e1\" in b.db");
    out_free(&o);
    CHECK(exists_in(dir, "tune_results/e1/trial_00000/stdout.log"));

    /* A database that has an e1 of its own, moved beside a.db: refused a.db's folder, and
     * its rm deletes its own folder only. */
    sub_dir(other, sizeof other, root, "other");
    owner_space(other, "e1", 2);
    o = tune_in(other, "run", "space.json", "--db", "c.db", "--gpus", "none", "--quiet", NULL);
    REQUIRE(o.code == 0);
    out_free(&o);
    snprintf(p, sizeof p, "%s/c.db", other);
    snprintf(q, sizeof q, "%s/c.db", dir);
    REQUIRE(rename(p, q) == 0);
    o = tune_in(dir, "extend", "e1", "1", "--db", "c.db", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "it belongs to experiment \"e1\" of another database");
    CHECK_CONTAINS(o.err, "Keep this database in a folder of its own");
    out_free(&o);
    CHECK(!exists_in(dir, "tune_results/e1/trial_00002"));
    o = tune_in(dir, "rm", "e1", "--db", "c.db", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    snprintf(want, sizeof want, "; removed %s/tune_results/e1\n", other);
    CHECK_CONTAINS(o.out, want);
    snprintf(want, sizeof want,
             "tune: left %s/tune_results/e1 as it is: it belongs to experiment \"e1\" of another "
             "database, %s/a.db\n",
             dir, dir);
    CHECK_CONTAINS(o.err, want);
    out_free(&o);
    CHECK(!exists_in(other, "tune_results/e1"));
    log1 = text_in(dir, "tune_results/e1/trial_00000/stdout.log");
    CHECK_STR(log1, log0);
    free(log1);

    /* a.db goes on as before. */
    o = tune_in(dir, "extend", "e1", "1", "--db", "a.db", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK(exists_in(dir, "tune_results/e1/trial_00002/stdout.log"));
    free(log0);
}

/* A database whose rows were crafted (issue #26: an experiment named "x/../.." made tune rm
 * delete outside tune_results): the name is checked before any path is built, only the
 * rows go, and nothing outside is touched. */
TEST(crafted_names_never_make_rm_touch_anything_outside)
{
    char root[4096], dir[4096], want[32768];
    fresh_dir(root, sizeof root, "owner_crafted");
    sub_dir(dir, sizeof dir, root, "proj");
    owner_space(dir, "x", 2);
    struct out o = tune_in(dir, "run", "space.json", "--gpus", "none", "--quiet", NULL);
    REQUIRE(o.code == 0);
    out_free(&o);
    owner_space(dir, "y", 1);
    o = tune_in(dir, "run", "space.json", "--gpus", "none", "--quiet", NULL);
    REQUIRE(o.code == 0);
    out_free(&o);
    char victim[8400];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    REQUIRE(mkdir(victim, 0755) == 0);
    strcat(victim, "/keep");
    write_file(victim, "keep\n");
    /* x's folder as text is the project folder; y's is the victim folder beside it. */
    REQUIRE(db_exec(dir, "UPDATE experiments SET name = 'x/../..',"
                         " results_dir = results_dir || '/../..' WHERE name = 'x';"
                         " UPDATE experiments SET name = '../victim',"
                         " results_dir = replace(results_dir, '/y', '/../victim')"
                         " WHERE name = 'y'") == 0);

    o = tune_in(dir, "extend", "x/../..", "1", NULL);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "'/' is not allowed");
    out_free(&o);
    o = tune_in(dir, "rm", "x/../..", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Deleted experiment x/../..: 2 trials, 6 results\n");
    CHECK_CONTAINS(o.err, "tune: only the rows were deleted: tune does not look for a results "
                          "folder by this name (experiment name \"x/../..\": '/' is not allowed");
    out_free(&o);
    o = tune_in(dir, "rm", "../victim", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.err, "tune: only the rows were deleted");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 0);
    /* Nothing else was touched: not the folders, not the victim, no lock file made. */
    CHECK(exists_in(dir, "tune_results/x/trial_00001/stdout.log"));
    CHECK(exists_in(dir, "tune_results/y/trial_00000/stdout.log"));
    CHECK(exists_in(dir, "victim/keep"));
    CHECK(!exists_in(dir, ".tune.lock"));
    CHECK(!exists_in(root, ".tune.lock"));
    CHECK(!exists_in(dir, "victim/.tune.lock"));

    /* A symlink planted where an experiment's folder goes is never followed. */
    REQUIRE(symlink("../victim", strcat(strcpy(want, dir), "/tune_results/z")) == 0);
    owner_space(dir, "z", 1);
    o = tune_in(dir, "run", "space.json", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 2);
    snprintf(want, sizeof want,
             "%s/tune_results/z cannot be the results folder of experiment \"z\" of tune.db: it "
             "is a symlink or not a folder, which tune never follows",
             dir);
    CHECK_CONTAINS(o.err, want);
    out_free(&o);
    CHECK(!exists_in(dir, "victim/.tune.lock"));
    CHECK(!exists_in(dir, "victim/.tune-owner"));
    CHECK(!exists_in(dir, "victim/trial_00000"));
}

/* A moved database keeps its folder (issue #26's other side: tune rm followed the absolute
 * path in the row, which a move leaves behind): moved with its project folder, it resumes
 * there; moved alone, it goes on in the folder its row names; tune rm removes that folder. */
TEST(a_moved_database_resumes_and_removes_its_own_folder)
{
    char root[4096], proj[4096], proj2[8400], alone[4096], p[16400], q[16400], want[32768];
    fresh_dir(root, sizeof root, "owner_moved");
    sub_dir(proj, sizeof proj, root, "proj");
    owner_space(proj, "e1", 2);
    struct out o = tune_in(proj, "run", "space.json", "--gpus", "none", "--quiet", NULL);
    REQUIRE(o.code == 0);
    out_free(&o);
    snprintf(proj2, sizeof proj2, "%s2", proj);
    REQUIRE(rename(proj, proj2) == 0);

    o = tune_in(proj2, "extend", "e1", "1", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK(exists_in(proj2, "tune_results/e1/trial_00002/stdout.log"));
    char *owner = text_in(proj2, "tune_results/e1/.tune-owner");
    snprintf(want, sizeof want, "\"database\":\"%s/tune.db\"", proj2);
    CHECK_CONTAINS(owner, want); /* from now on a copy is told apart from it */
    free(owner);
    snprintf(want, sizeof want, "%s/tune_results/e1", proj2);
    snprintf(q, sizeof q, "%s/tune.db", proj2);
    sqlite3 *db = testdb_open(q, 0);
    sqlite3_stmt *st = NULL;
    REQUIRE(db && sqlite3_prepare_v2(db, "SELECT results_dir FROM experiments", -1, &st, NULL) ==
                      SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ROW);
    CHECK_STR((const char *)sqlite3_column_text(st, 0), want);
    testdb_done(db, st);

    /* The database alone. */
    sub_dir(alone, sizeof alone, root, "alone");
    snprintf(p, sizeof p, "%s/tune.db", alone);
    REQUIRE(rename(q, p) == 0);
    o = tune_in(alone, "extend", "e1", "1", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 0);
    snprintf(want, sizeof want,
             "tune: experiment e1 goes on in its results folder %s/tune_results/e1, made when "
             "this database was %s/tune.db\n",
             proj2, proj2);
    CHECK_CONTAINS(o.err, want);
    out_free(&o);
    CHECK(exists_in(proj2, "tune_results/e1/trial_00003/stdout.log"));
    CHECK(!exists_in(alone, "tune_results"));

    o = tune_in(alone, "rm", "e1", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    snprintf(want, sizeof want,
             "Deleted experiment e1: 4 trials, 12 results; removed %s/tune_results/e1\n", proj2);
    CHECK_CONTAINS(o.out, want);
    out_free(&o);
    CHECK(!exists_in(proj2, "tune_results/e1"));
}

/* A folder an older tune made (no owner file) is taken by the database whose row names
 * it, and by no other; a folder whose owner file is not tune's, or names another
 * experiment of this database, is refused. */
TEST(a_folder_without_an_owner_file_is_adopted_only_by_its_own_database)
{
    char root[4096], dir[4096], p[16400], q[16400];
    fresh_dir(root, sizeof root, "owner_legacy");
    sub_dir(dir, sizeof dir, root, "proj");
    owner_space(dir, "e1", 2);
    struct out o =
        tune_in(dir, "run", "space.json", "--db", "a.db", "--gpus", "none", "--quiet", NULL);
    REQUIRE(o.code == 0);
    out_free(&o);
    snprintf(p, sizeof p, "%s/tune_results/e1/.tune-owner", dir);
    REQUIRE(unlink(p) == 0); /* as a tune older than owner files left it */

    o = tune_in(dir, "run", "space.json", "--db", "b.db", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "of b.db: it holds files, and no database has claimed it (a tune older "
                          "than owner files made it, for another database or for an experiment "
                          "since deleted)");
    out_free(&o);
    CHECK(!exists_in(dir, "tune_results/e1/.tune-owner"));
    o = tune_in(dir, "extend", "e1", "1", "--db", "a.db", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char *owner = text_in(dir, "tune_results/e1/.tune-owner");
    CHECK_CONTAINS(owner, "/a.db\"");
    free(owner);
    CHECK(exists_in(dir, "tune_results/e1/trial_00002/stdout.log"));

    /* An owner file that is not tune's, or a symlink in its place: refused. */
    snprintf(q, sizeof q, "%s/tune_results/e1/.tune-owner.saved", dir);
    REQUIRE(rename(p, q) == 0);
    write_file(p, "{\"database\": 3}\n");
    o = tune_in(dir, "extend", "e1", "1", "--db", "a.db", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "of a.db: its owner file .tune-owner is not one tune wrote. Keep this "
                          "database in a folder of its own");
    out_free(&o);
    REQUIRE(unlink(p) == 0 && symlink(".tune-owner.saved", p) == 0);
    o = tune_in(dir, "extend", "e1", "1", "--db", "a.db", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "its owner file .tune-owner cannot be read (");
    out_free(&o);
    o = tune_in(dir, "rm", "e1", "--db", "a.db", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.err, "as it is: its owner file .tune-owner cannot be read (");
    out_free(&o);
    CHECK(exists_in(dir, "tune_results/e1/trial_00000/stdout.log"));
    REQUIRE(unlink(p) == 0 && rename(q, p) == 0);

    /* A folder renamed by hand belongs to the experiment that made it. */
    owner_space(dir, "e3", 1);
    snprintf(q, sizeof q, "%s/tune_results/e3", dir);
    snprintf(p, sizeof p, "%s/tune_results/e1", dir);
    REQUIRE(rename(p, q) == 0);
    o = tune_in(dir, "run", "space.json", "--db", "a.db", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "of a.db: it belongs to experiment \"e1\" of this database (the folder "
                          "was renamed)");
    out_free(&o);
    CHECK(!exists_in(dir, "tune_results/e3/trial_00003"));
}

/* tune killed (SIGKILL) at any moment of a run or a resume, between making the folder and
 * its owner file or the experiment's row included: what it leaves is taken up by the next
 * run, and tune rm removes the folder. */
TEST(kill_9_between_the_folder_its_owner_file_and_the_row_leaves_a_usable_state)
{
    char root[4096], dir[4096], p[16400], want[32768];
    fresh_dir(root, sizeof root, "owner_kill9");
    sub_dir(dir, sizeof dir, root, "proj");
    owner_space(dir, "k", 2);
    /* Killed after mkdir, before the owner file (with a claim cut short in it). */
    REQUIRE(mkdir(strcat(strcpy(p, dir), "/tune_results"), 0755) == 0);
    REQUIRE(mkdir(strcat(p, "/k"), 0755) == 0);
    write_file(strcat(p, "/.tune-owner.99999"), "");
    struct out o = tune_in(dir, "run", "space.json", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char *owner = text_in(dir, "tune_results/k/.tune-owner");
    snprintf(want, sizeof want, "\"database\":\"%s/tune.db\",\"experiment\":\"k\"", dir);
    CHECK_CONTAINS(owner, want);
    free(owner);

    /* Killed after the owner file, before the row: rm has no experiment to delete and
     * leaves the folder; the next run takes it back. */
    REQUIRE(db_exec(dir, "PRAGMA foreign_keys = ON; DELETE FROM experiments") == 0);
    o = tune_in(dir, "rm", "k", "--yes", NULL);
    CHECK_EQ_INT(o.code, 1);
    out_free(&o);
    CHECK(exists_in(dir, "tune_results/k/.tune-owner"));
    o = tune_in(dir, "run", "space.json", "--gpus", "none", "--quiet", NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments WHERE status = 'FINISHED'"), 1);
    o = tune_in(dir, "rm", "k", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK(!exists_in(dir, "tune_results/k"));

    /* SIGKILL at many moments from the start of a run, then of each resume: whatever
     * state it stops in, every later run goes on and the folder stays the database's. */
    char sp[8192];
    snprintf(sp, sizeof sp,
             "{\"name\": \"k\", \"metric\": \"loss\", \"num_samples\": 3, \"max_concurrent\": 1,"
             " \"command\": [\"%s\", \"--iters\", \"4\", \"--sleep-ms\", \"40\"], \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    const char *r[] = {"run", "space.json", "--resume", "--gpus", "none", "--quiet", NULL};
    for (int round = 0; round < 12; round++) {
        pid_t pid = spawn_tune(dir, round == 0 ? a : r, NULL);
        usleep((useconds_t)(round * 5000));
        kill(-pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        /* Either no folder yet, or one this database owns or may claim. */
        owner = text_in(dir, "tune_results/k/.tune-owner");
        CHECK(!owner[0] || strstr(owner, "\"experiment\":\"k\""));
        free(owner);
    }
    if (db_int(dir, "SELECT count(*) FROM experiments WHERE status = 'FINISHED'") != 1) {
        o = tune_in(dir, "run", "space.json", "--resume", "--gpus", "none", "--quiet", NULL);
        CHECK_EQ_INT(o.code, 0);
        out_free(&o);
    }
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 3);
    o = tune_in(dir, "rm", "k", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    snprintf(want, sizeof want, "; removed %s/tune_results/k\n", dir);
    CHECK_CONTAINS(o.out, want);
    out_free(&o);
    CHECK(!exists_in(dir, "tune_results/k"));
}

/* ---- store faults ------------------------------------------------------------------- */

/* A disk that fills up in the middle of a run: tune stops every trial, says why, exits 1,
 * and leaves a database that opens, passes integrity_check, holds what was committed,
 * and resumes to the same result an undisturbed run gives. */
TEST(disk_full_stops_cleanly_and_resume_finishes)
{
    char dir[4096], sp[8192], tag[64];
    fresh_dir(dir, sizeof dir, "disk_full");
    snprintf(tag, sizeof tag, "dfull-%d", (int)getpid());
    snprintf(sp, sizeof sp,
             "{\"name\": \"full\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4,"
             " \"stop_grace_s\": 2, \"command\": [\"%s\", \"--iters\", \"4000\", \"--lr\","
             " \"{lr}\", \"--tag\", \"%s\"], \"space\": {\"lr\": {\"loguniform\": [0.001, 0.1]}}}",
             g_synth, tag);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--cpus", "4", "--gpus", "none", NULL};
    struct how h = {.fsize = 1 << 20};
    struct out o = run_tune_how(dir, a, &h);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "experiment full stopped: ");
    CHECK_CONTAINS(o.err, "the disk is full or the file size limit was reached");
    CHECK_CONTAINS(o.err, "Everything recorded before the stop is in");
    out_free(&o);
    CHECK_EQ_INT(e2e_count_procs(tag), 0); /* every trial was stopped */

    long long got = db_int(dir, "SELECT count(*) FROM results");
    CHECK(got > 0);
    CHECK(got < 4 * 4000);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 4);
    char path[4300];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    sqlite3 *db;
    REQUIRE(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    sqlite3_stmt *st;
    REQUIRE(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK);
    REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    CHECK_STR((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);

    /* Room again: resume finishes with every iteration of every trial. */
    const char *r[] = {"resume", "full", "--cpus", "4", "--gpus", "none", NULL};
    o = run_tune(dir, r);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments WHERE status='FINISHED'"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='TERMINATED'"), 4);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results_current"), 4 * 4000);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM (SELECT trial_id FROM results_current GROUP BY"
                             " trial_id HAVING count(*) != 4000 OR max(iteration) != 4000"
                             " OR count(DISTINCT iteration) != 4000)"),
                 0);
}

static void small_run(const char *dir, const char *name)
{
    char sp[8192];
    snprintf(sp, sizeof sp,
             "{\"name\": \"%s\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 2,"
             " \"command\": [\"%s\", \"--iters\", \"5\", \"--lr\", \"{lr}\"],"
             " \"space\": {\"lr\": {\"loguniform\": [0.001, 0.1]}}}",
             name, g_synth);
    space_file(dir, sp);
}

TEST(not_a_database_is_refused_and_left_alone)
{
    char dir[4096], path[4300];
    fresh_dir(dir, sizeof dir, "not_a_db");
    small_run(dir, "nd");
    snprintf(path, sizeof path, "%s/tune.db", dir);
    char text[3000];
    memset(text, 'y', sizeof text - 1);
    text[sizeof text - 1] = 0;
    memcpy(text, "lr,loss\n", 8);
    write_file(path, text);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "tune.db is not a tune database: file is not a database");
    out_free(&o);
    const char *t[] = {"trials", "nd", NULL};
    o = run_tune(dir, t);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "is not a tune database");
    out_free(&o);
    char *back = slurp(path);
    CHECK_STR(back, text); /* untouched, byte for byte */
    free(back);
    snprintf(path, sizeof path, "%s/tune_results/nd", dir);
    CHECK(access(path, F_OK) != 0); /* no trial ran */
}

TEST(newer_schema_is_refused_and_data_stays_readable)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "newer_schema");
    small_run(dir, "old");
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    long long before = db_int(dir, "SELECT count(*) FROM results");
    CHECK_EQ_INT(before, 10);
    /* What a future tune would leave behind. */
    REQUIRE(db_exec(dir, "UPDATE meta SET value = '99' WHERE key = 'schema_version'") == 0);
    small_run(dir, "new");
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "tune.db was written by a newer tune (schema version 99, this tune "
                          "knows 4)");
    out_free(&o);
    const char *t[] = {"trials", "old", NULL};
    o = run_tune(dir, t);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "newer tune");
    out_free(&o);
    /* Nothing was written: the data is all there for the newer tune (or sqlite3). */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), before);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT value FROM meta WHERE key = 'schema_version'"), 99);
}

/* As root every directory is writable, so the test drops to nobody there. */
static int readonly_setup(const char *dir, struct how *h)
{
    memset(h, 0, sizeof *h);
    if (geteuid() == 0) {
        h->as_nobody = 1;
        /* nobody must reach the binaries and read space.json, not write dir. */
        return chmod(dir, 0755);
    }
    return chmod(dir, 0555);
}

TEST(readonly_directory_is_a_clear_error)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "readonly_dir");
    small_run(dir, "ro");
    /* The outputs go to files the test creates first, writable by whoever tune runs as. */
    char p[4300];
    snprintf(p, sizeof p, "%s/.stdout", dir);
    write_file(p, "");
    chmod(p, 0666);
    snprintf(p, sizeof p, "%s/.stderr", dir);
    write_file(p, "");
    chmod(p, 0666);
    struct how h;
    REQUIRE(readonly_setup(dir, &h) == 0);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    struct out o = run_tune_how(dir, a, &h);
    if (o.code == 125) {
        out_free(&o);
        chmod(dir, 0755);
        SKIP("cannot switch to user nobody");
    }
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "cannot create database");
    CHECK_CONTAINS(o.err, "tune.db");
    CHECK_CONTAINS(o.err, strerror(EACCES));
    out_free(&o);
    chmod(dir, 0755);
    snprintf(p, sizeof p, "%s/tune.db", dir);
    CHECK(access(p, F_OK) != 0);
}

/* A finished database in a directory tune may not write: readers still read it, a writer
 * is refused with a clear message, and the file is unchanged. */
TEST(readonly_directory_with_a_database)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "readonly_db");
    small_run(dir, "rd");
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char p[4300];
    snprintf(p, sizeof p, "%s/.stdout", dir);
    chmod(p, 0666);
    snprintf(p, sizeof p, "%s/.stderr", dir);
    chmod(p, 0666);
    snprintf(p, sizeof p, "%s/tune.db", dir);
    chmod(p, 0644);
    struct how h;
    REQUIRE(readonly_setup(dir, &h) == 0);
    const char *t[] = {"trials", "rd", "--json", NULL};
    o = run_tune_how(dir, t, &h);
    if (o.code == 125) {
        out_free(&o);
        chmod(dir, 0755);
        SKIP("cannot switch to user nobody");
    }
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "trial_00001");
    out_free(&o);
    small_run(dir, "rd2");
    o = run_tune_how(dir, a, &h);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "tune.db");
    CHECK_CONTAINS(o.err, "read-only");
    out_free(&o);
    chmod(dir, 0755);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), 10);
}

/* ---- no trial outlives tune ------------------------------------------------------------ */

/* Trials that fork a child and ignore SIGTERM, and a tune that dies by `signal` while they
 * run. Every trial process and every keeper must be gone soon after. */
static void no_orphans_after(const char *name, int sig)
{
    char dir[4096], sp[8192], tag[64];
    fresh_dir(dir, sizeof dir, name);
    snprintf(tag, sizeof tag, "orphan-%s-%d", name, (int)getpid());
    snprintf(sp, sizeof sp,
             "{\"name\": \"orph\", \"num_samples\": 4, \"stop_grace_s\": 1,"
             " \"command\": [\"%s\", \"--iters\", \"100000\", \"--sleep-ms\", \"50\","
             " \"--fork-child\", \"--ignore-term\", \"--tag\", \"%s\"]}",
             g_synth, tag);
    space_file(dir, sp);
    char db[4300];
    snprintf(db, sizeof db, "%s/tune.db", dir);
    const char *a[] = {"run", "space.json", "--db", db, "--cpus", "4", "--gpus", "none", NULL};
    pid_t pid = spawn_tune(dir, a, NULL);
    /* 4 trials, each with the child it forked. */
    int n = e2e_wait_procs(tag, 8, 60);
    CHECK_EQ_INT(n, 8);
    /* tune and its spawner (a fork of tune) carry the database path in their command
     * line. */
    CHECK_EQ_INT(e2e_count_procs(db), 2);
    /* The rows of running trials get their pids within about a second (the loop keeps a
     * pid for the row's next update, LOOP_PID_SAVE_S), each a live trial process. (The
     * wait only bounds a hang: a busy machine may take longer than that second.) */
    long long with_pid =
        e2e_wait_db(dir, "SELECT count(pid) FROM trials WHERE status = 'RUNNING'", 4, 60);
    CHECK_EQ_INT(with_pid, 4);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'RUNNING' AND pid IN"
                             " (SELECT pid FROM trials GROUP BY pid HAVING count(*) = 1)"),
                 4);
    for (int k = 0; k < 4; k++) {
        char q[128];
        snprintf(q, sizeof q, "SELECT pid FROM trials WHERE status = 'RUNNING' LIMIT 1 OFFSET %d",
                 k);
        long long tp = db_int(dir, q);
        CHECK(tp > 0 && kill((pid_t)tp, 0) == 0);
    }
    double t0 = e2e_mono();
    kill(pid, sig);
    struct out o = finish_tune(dir, pid);
    if (sig == SIGKILL)
        CHECK_EQ_INT(o.code, 128 + SIGKILL);
    else
        CHECK_EQ_INT(o.code, 130);
    out_free(&o);
    CHECK_EQ_INT(e2e_wait_procs(tag, 0, 30), 0);
    CHECK_EQ_INT(e2e_wait_procs(db, 0, 30), 0);
    fprintf(stderr, "%s: every trial process gone %.2f s after the signal\n", name,
            e2e_mono() - t0);
}

TEST(kill_9_of_tune_leaves_no_trial_process)
{
    no_orphans_after("kill9_orphans", SIGKILL);
}

TEST(sigterm_of_tune_leaves_no_trial_process)
{
    no_orphans_after("sigterm_orphans", SIGTERM);
}

/* With every slice taken, the next trials wait in the spawner behind running ones that are
 * ending (held starts, trial_spawn_t.after): here two trials reached max_t and are given a
 * long grace to exit. The held trials' folders and logs are made, nothing of them runs,
 * and when tune dies they never start. */
TEST(held_starts_never_run_after_kill_9_of_tune)
{
    char dir[4096], sp[8192], tag[64];
    fresh_dir(dir, sizeof dir, "held_kill9");
    snprintf(tag, sizeof tag, "held-%d", (int)getpid());
    snprintf(sp, sizeof sp,
             "{\"name\": \"held\", \"num_samples\": 6, \"max_concurrent\": 2,"
             " \"stop_grace_s\": 60, \"metric\": \"loss\", \"mode\": \"min\","
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 3, \"grace_period\": 3},"
             " \"command\": [\"%s\", \"--iters\", \"100000\", \"--sleep-ms\", \"50\","
             " \"--fork-child\", \"--ignore-term\", \"--tag\", \"%s\"]}",
             g_synth, tag);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--cpus", "2", "--gpus", "none", NULL};
    pid_t pid = spawn_tune(dir, a, NULL);
    CHECK_EQ_INT(e2e_wait_procs(tag, 4, 60), 4); /* two trials, each with its child */
    char held[2][4300];
    for (int k = 0; k < 2; k++)
        snprintf(held[k], sizeof held[k], "%s/tune_results/held/trial_%05d/stdout.log", dir, 2 + k);
    struct stat sb;
    double until = e2e_mono() + 60;
    while ((stat(held[0], &sb) != 0 || stat(held[1], &sb) != 0) && e2e_mono() < until)
        e2e_nap_ms(20);
    CHECK(stat(held[0], &sb) == 0 && stat(held[1], &sb) == 0); /* both starts are held */
    e2e_nap_ms(300);
    CHECK_EQ_INT(e2e_count_procs(tag), 4); /* and neither runs */
    kill(pid, SIGKILL);
    struct out o = finish_tune(dir, pid);
    CHECK_EQ_INT(o.code, 128 + SIGKILL);
    out_free(&o);
    CHECK_EQ_INT(e2e_wait_procs(tag, 0, 30), 0);
    e2e_nap_ms(500);
    CHECK_EQ_INT(e2e_count_procs(tag), 0); /* no held start happened late */
    for (int k = 0; k < 2; k++) {
        char *text = slurp(held[k]);
        CHECK(text && text[0] == 0);
        free(text);
    }
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE trial_no >= 2 AND status = "
                             "'PENDING'"),
                 4);
}

/* ---- hostile trial output ------------------------------------------------------------ */

#ifdef __SANITIZE_ADDRESS__
#define ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD 1
#endif
#endif

/* One trial per kind of hostile output, all at once. tune must finish normally, record
 * every real result (and nothing else), count the lines it could not read, and stay
 * within bounded memory although trials print 100 MiB lines and a million results. */
TEST(hostile_trial_output_is_bounded_and_counted)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "hostile");
    snprintf(sp, sizeof sp,
             "{\"name\": \"hostile\", \"metric\": \"loss\", \"mode\": \"min\","
             " \"command\": [\"%s\", \"--mode\", \"{mode}\", \"--count\", \"1000000\"],"
             " \"space\": {\"mode\": {\"grid_search\": [\"bigline\", \"garbage\", \"utf8\","
             " \"deep\", \"nan\", \"string\", \"flood\", \"none\"]}}}",
             g_hostile);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--cpus", "8", "--gpus", "none", NULL};
    double t0 = e2e_mono();
    struct out o = run_tune(dir, a);
    double took = e2e_mono() - t0;
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "8 trials terminated");
    CHECK_CONTAINS(o.out, "0 failed");
    CHECK_CONTAINS(o.out, "unreadable result lines (over-long or not JSON)");
    fprintf(stderr, "hostile: %.1f s, peak RSS of tune and its children %ld KiB\n", took,
            o.maxrss_kb);
    /* A 100 MiB line held whole would show here; cut at TRIAL_MAX_LINE (1 MiB) it cannot.
     * ASan's quarantine and shadow memory take their own share. */
#ifdef ASAN_BUILD
    CHECK(o.maxrss_kb < 512 * 1024);
#else
    CHECK(o.maxrss_kb < 64 * 1024);
#endif
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 8);
    /* Every real result, per mode: 3 ordinary ones each, plus the NaN/Infinity ones (their
     * metric stored NULL or infinite), the string metric one (metric NULL), the flood. */
    static const struct {
        const char *mode;
        long long results, null_metric;
    } want[] = {{"bigline", 3, 0}, {"garbage", 3, 0}, {"utf8", 3, 0},        {"deep", 3, 0},
                {"nan", 6, 1},     {"string", 4, 1},  {"flood", 1000003, 0}, {"none", 3, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char sql[600];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM results_current r JOIN trials t ON t.id = r.trial_id"
                 " WHERE json_extract(t.config, '$.mode') = '%s'",
                 want[i].mode);
        long long got = db_int(dir, sql);
        if (got != want[i].results) fprintf(stderr, "mode %s\n", want[i].mode);
        CHECK_EQ_INT(got, want[i].results);
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM results_current r JOIN trials t ON t.id = r.trial_id"
                 " WHERE json_extract(t.config, '$.mode') = '%s' AND r.metric IS NULL",
                 want[i].mode);
        got = db_int(dir, sql);
        if (got != want[i].null_metric) fprintf(stderr, "mode %s (NULL metrics)\n", want[i].mode);
        CHECK_EQ_INT(got, want[i].null_metric);
    }
    /* The flood's iterations arrived complete and in order. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(DISTINCT r.iteration) FROM results_current r JOIN"
                             " trials t ON t.id = r.trial_id"
                             " WHERE json_extract(t.config, '$.mode') = 'flood'"),
                 1000003);
    /* Infinity is stored as such; the string metric keeps its JSON text. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE metric = 9e999"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE metric = -9e999"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results_current WHERE"
                             " json_extract(data, '$.loss') = '0.25'"),
                 1);
    /* Logged byte for byte: the 100 MiB line is in the trial's stdout.log. */
    char p[4300];
    snprintf(p, sizeof p, "%s/tune_results/hostile/trial_00000/stdout.log", dir);
    struct stat sb;
    CHECK(stat(p, &sb) == 0 && sb.st_size > (100 << 20));
}

/* A CUDA out-of-memory in a trial is recognised from its stderr (here PyTorch's words) and
 * recorded with the advice a user needs; another failure is not dressed up as one. */
TEST(cuda_out_of_memory_is_recognised_and_advised)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "oom");
    space_file(dir, "{\"name\": \"oom\", \"command\": [\"/bin/sh\", \"-c\", \"{script}\"],"
                    " \"space\": {\"script\": {\"grid_search\": ["
                    " \"echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate"
                    " 2.00 GiB (GPU 0; 79.1 GiB total capacity)' >&2; exit 1\","
                    " \"echo 'segment fault in my code' >&2; exit 3\"]}}}");
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 3); /* the experiment finished; its trials failed */
    CHECK_CONTAINS(o.out, "2 failed");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE trial_no = 0 AND status = 'ERROR'"
                             " AND error LIKE 'CUDA out of memory (exited with code 1)%'"
                             " AND error LIKE '%lower the batch size%'"
                             " AND stderr_tail LIKE '%Tried to allocate 2.00 GiB%'"),
                 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE trial_no = 1 AND status = 'ERROR'"
                             " AND error = 'exited with code 3: segment fault in my code'"),
                 1);
    const char *t[] = {"trials", "oom", "--json", NULL};
    o = run_tune(dir, t);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "lower the batch size");
    out_free(&o);
}

TT_MAIN
