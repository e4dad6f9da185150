/* test_dirs: the gate every deletion and copy goes through (dirs/dirs.h): nothing outside
 * the folder is ever touched, whatever a name says or a symlink points at. Each case
 * builds a small tree in a fresh folder: a "victim" folder beside the one the gate holds,
 * which must come out unchanged. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirs/dirs.h"
#include "tinytest.h"

static char g_root[4096];

/* A fresh root with root/held (the folder the gate holds) and root/victim/file. */
static int fresh(const char *name)
{
    const char *b = getenv("TUNE_BINARY_DIR");
    snprintf(g_root, sizeof g_root, "%s/e2e/dirs/%s", b ? b : "/tmp", name);
    char cmd[20000];
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s' && mkdir -p '%s/held' '%s/victim' && echo keep > '%s/victim/file'",
             g_root, g_root, g_root, g_root);
    if (system(cmd) != 0) abort();
    char held[4200];
    snprintf(held, sizeof held, "%s/held", g_root);
    return dirs_open(held);
}

static void put(const char *rel, const char *text)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", g_root, rel);
    FILE *f = fopen(p, "w");
    if (!f) abort();
    fputs(text, f);
    fclose(f);
}

static void mk(const char *rel)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", g_root, rel);
    if (mkdir(p, 0777) != 0 && errno != EEXIST) abort();
}

static void sym(const char *target, const char *rel)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", g_root, rel);
    if (symlink(target, p) != 0) abort();
}

static int there(const char *rel)
{
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", g_root, rel);
    return lstat(p, &st) == 0;
}

static int victim_intact(void)
{
    return there("victim") && there("victim/file") && there("held");
}

TEST(check_refuses_dot_dotdot_absolute_and_empty)
{
    char err[256];
    CHECK_EQ_INT(dirs_check("a/b", err, sizeof err), DIRS_OK);
    CHECK_EQ_INT(dirs_check("a//b/", err, sizeof err), DIRS_OK);
    const char *bad[] = {"..",  ".",   "",  "/", "/etc", "a/../b", "checkpoints/..",
                         "./x", "a/.", "//"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK_EQ_INT(dirs_check(bad[i], err, sizeof err), DIRS_EOUTSIDE);
        CHECK(err[0] != 0);
    }
    CHECK(dirs_check(NULL, err, sizeof err) == DIRS_EOUTSIDE);
}

TEST(beneath_is_only_text_under_the_base)
{
    CHECK(strcmp(dirs_beneath("/r/t", "/r/t/ck"), "ck") == 0);
    CHECK(strcmp(dirs_beneath("/r/t", "rel/x"), "rel/x") == 0);
    CHECK(dirs_beneath("/r/t", "/r/tx/ck") == NULL);
    CHECK(dirs_beneath("/r/t", "/elsewhere") == NULL);
    CHECK(strcmp(dirs_beneath("/r/t", "/r/t/"), "") == 0); /* then refused by dirs_check */
}

TEST(remove_deletes_files_and_trees_inside)
{
    int fd = fresh("remove_inside");
    REQUIRE(fd >= 0);
    mk("held/ck");
    mk("held/ck/sub");
    put("held/ck/sub/a", "1");
    put("held/ck/b", "2");
    put("held/f", "3");
    char err[256];
    CHECK_EQ_INT(dirs_remove(fd, "ck", err, sizeof err), DIRS_OK);
    CHECK_EQ_INT(dirs_remove(fd, "f", err, sizeof err), DIRS_OK);
    CHECK(!there("held/ck"));
    CHECK(!there("held/f"));
    CHECK_EQ_INT(dirs_remove(fd, "nothing/here", err, sizeof err), DIRS_OK);
    CHECK(victim_intact());
    close(fd);
}

TEST(remove_refuses_every_way_out)
{
    int fd = fresh("remove_escapes");
    REQUIRE(fd >= 0);
    mk("held/checkpoints");
    sym("../victim", "held/lnk"); /* a symlink to a folder outside */
    sym("/", "held/root");
    char err[256];
    const char *bad[] = {"..",       ".",        "checkpoints/..", "lnk/..",
                         "lnk/file", "root/etc", "../victim"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ_INT(dirs_remove(fd, bad[i], err, sizeof err), DIRS_EOUTSIDE);
    /* "lnk/" and "lnk" name the symlink itself: it goes, what it points at stays */
    CHECK_EQ_INT(dirs_remove(fd, "lnk/", err, sizeof err), DIRS_OK);
    CHECK(!there("held/lnk"));
    CHECK(victim_intact());
    close(fd);
}

TEST(remove_never_follows_a_symlink_inside_a_tree)
{
    int fd = fresh("remove_tree_links");
    REQUIRE(fd >= 0);
    mk("held/ck");
    sym("../../victim", "held/ck/out");
    sym("../../victim/file", "held/ck/file");
    char err[256];
    CHECK_EQ_INT(dirs_remove(fd, "ck", err, sizeof err), DIRS_OK);
    CHECK(!there("held/ck"));
    CHECK(victim_intact());
    close(fd);
}

TEST(copy_links_files_and_leaves_symlinks_out)
{
    int fd = fresh("copy");
    REQUIRE(fd >= 0);
    mk("held/donor");
    mk("held/donor/ck");
    mk("held/donor/ck/sub");
    put("held/donor/ck/w", "weights");
    put("held/donor/ck/sub/o", "opt");
    sym("../../../victim/file", "held/donor/ck/leak");
    sym("../../../victim", "held/donor/ck/leakdir");
    int src = dirs_openat(fd, "donor");
    REQUIRE(src >= 0);
    dirs_copied_t what = {0};
    char err[256];
    CHECK_EQ_INT(dirs_copy(src, "ck", fd, "clone/resume/attempt_2/ck", 0, &what, err, sizeof err),
                 DIRS_OK);
    CHECK(there("held/clone/resume/attempt_2/ck/w"));
    CHECK(there("held/clone/resume/attempt_2/ck/sub/o"));
    CHECK(!there("held/clone/resume/attempt_2/ck/leak"));
    CHECK(!there("held/clone/resume/attempt_2/ck/leakdir"));
    CHECK_EQ_INT((int)what.linked, 2);
    CHECK_EQ_INT((int)what.skipped, 2);
    /* again (a resume making the copy once more): nothing changes */
    CHECK_EQ_INT(dirs_copy(src, "ck", fd, "clone/resume/attempt_2/ck", 0, NULL, err, sizeof err),
                 DIRS_OK);
    /* a source that is a symlink, or leaves the donor, is refused */
    CHECK_EQ_INT(dirs_copy(src, "ck/leak", fd, "x", 0, NULL, err, sizeof err), DIRS_EOUTSIDE);
    CHECK_EQ_INT(dirs_copy(src, "../victim", fd, "x", 0, NULL, err, sizeof err), DIRS_EOUTSIDE);
    CHECK_EQ_INT(dirs_copy(src, "nope", fd, "x", 0, NULL, err, sizeof err), DIRS_ENOENT);
    /* a destination whose parent is a symlink out is refused */
    sym("../victim", "held/out");
    CHECK_EQ_INT(dirs_copy(src, "ck/w", fd, "out/w", 0, NULL, err, sizeof err), DIRS_EOUTSIDE);
    CHECK(!there("victim/w"));
    CHECK(victim_intact());
    close(src);
    close(fd);
}

TEST(mkdirs_and_openat_never_follow)
{
    int fd = fresh("mkdirs");
    REQUIRE(fd >= 0);
    char err[256];
    CHECK_EQ_INT(dirs_mkdirs(fd, "a/b/c", err, sizeof err), DIRS_OK);
    CHECK(there("held/a/b/c"));
    sym("../victim", "held/v");
    CHECK_EQ_INT(dirs_mkdirs(fd, "v/x", err, sizeof err), DIRS_EOUTSIDE);
    CHECK(!there("victim/x"));
    CHECK(dirs_openat(fd, "v") < 0);
    CHECK(dirs_openat(fd, "..") < 0);
    int a = dirs_openat(fd, "a/b");
    CHECK(a >= 0);
    if (a >= 0) close(a);
    CHECK(dirs_exists(fd, "a/b/c"));
    CHECK(dirs_exists(fd, "v")); /* the link itself */
    CHECK(!dirs_exists(fd, "v/file"));
    CHECK(victim_intact());
    close(fd);
}

static int same_dev(const char *a, const char *b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev;
}

/* DIRS_BYTES: every file copied, none linked (a clone whose donor rewrites its files in
 * place must not see it change). */
TEST(copy_bytes_never_links)
{
    int fd = fresh("copy_bytes_only");
    REQUIRE(fd >= 0);
    mk("held/d");
    put("held/d/w", "weights");
    dirs_copied_t what = {0};
    char err[256];
    CHECK_EQ_INT(dirs_copy(fd, "d", fd, "e/d", DIRS_BYTES, &what, err, sizeof err), DIRS_OK);
    CHECK_EQ_INT((int)what.linked, 0);
    CHECK_EQ_INT((int)what.copied, 1);
    struct stat a, b;
    char p[4300], q[4300];
    snprintf(p, sizeof p, "%s/held/d/w", g_root);
    snprintf(q, sizeof q, "%s/held/e/d/w", g_root);
    CHECK(stat(p, &a) == 0 && stat(q, &b) == 0 && a.st_ino != b.st_ino && b.st_size == 7);
    close(fd);
}

TEST(copy_across_file_systems_copies_bytes)
{
    int fd = fresh("copy_bytes");
    REQUIRE(fd >= 0);
    char shm[64];
    snprintf(shm, sizeof shm, "/dev/shm/tune-test-dirs-%d", (int)getpid());
    if (mkdir(shm, 0777) != 0) {
        printf("no /dev/shm: skipped\n");
        close(fd);
        exit(TT_SKIP_CODE);
    }
    char p[128];
    snprintf(p, sizeof p, "%s/ck", shm);
    FILE *f = fopen(p, "w");
    REQUIRE(f);
    for (int i = 0; i < 100000; i++)
        fputs("0123456789", f);
    fclose(f);
    int src = dirs_open(shm);
    REQUIRE(src >= 0);
    struct stat a, b;
    CHECK(stat(p, &a) == 0);
    dirs_copied_t what = {0};
    char err[256];
    /* link only: refused, nothing made */
    CHECK_EQ_INT(dirs_copy(src, "ck", fd, "clone/ck", DIRS_LINK_ONLY, NULL, err, sizeof err),
                 same_dev(shm, g_root) ? DIRS_OK : DIRS_EBYTES);
    int rc = dirs_copy(src, "ck", fd, "clone/ck", 0, &what, err, sizeof err);
    char q[4200];
    snprintf(q, sizeof q, "%s/held/clone/ck", g_root);
    struct stat dst;
    int same_fs = stat(q, &dst) == 0 && stat(shm, &b) == 0 && dst.st_dev == b.st_dev;
    CHECK_EQ_INT(rc, DIRS_OK);
    CHECK(stat(q, &dst) == 0 && dst.st_size == a.st_size);
    if (!same_fs) {
        CHECK_EQ_INT((int)what.copied, 1);
        CHECK_EQ_INT((long long)what.bytes, 1000000);
    }
    unlink(p);
    rmdir(shm);
    close(src);
    close(fd);
}

/* dirs_remove_if deletes a name only while it is the very file looked at before: one
 * saved anew under the name (another inode) stays, and so does whatever lies outside. */
TEST(remove_if_deletes_only_that_very_file)
{
    int fd = fresh("remove_if");
    REQUIRE(fd >= 0);
    mk("held/checkpoints");
    put("held/checkpoints/ck", "old");
    struct stat st;
    char err[256];
    REQUIRE(dirs_stat(fd, "checkpoints/ck", &st) == DIRS_OK);
    /* saved anew: a new file renamed over the name */
    put("held/checkpoints/ck.tmp", "new");
    char a[4300], b[4300];
    snprintf(a, sizeof a, "%s/held/checkpoints/ck.tmp", g_root);
    snprintf(b, sizeof b, "%s/held/checkpoints/ck", g_root);
    REQUIRE(rename(a, b) == 0);
    CHECK_EQ_INT(dirs_remove_if(fd, "checkpoints/ck", st.st_dev, st.st_ino, err, sizeof err),
                 DIRS_OK);
    CHECK(there("held/checkpoints/ck"));
    /* the very file: deleted, and nothing is left aside */
    REQUIRE(dirs_stat(fd, "checkpoints/ck", &st) == DIRS_OK);
    CHECK_EQ_INT(dirs_remove_if(fd, "checkpoints/ck", st.st_dev, st.st_ino, err, sizeof err),
                 DIRS_OK);
    CHECK(!there("held/checkpoints/ck"));
    CHECK(!there("held/checkpoints/.ck.tune-deleting.tmp"));
    CHECK_EQ_INT(dirs_remove_if(fd, "checkpoints/ck", st.st_dev, st.st_ino, err, sizeof err),
                 DIRS_OK); /* gone already */
    sym("../victim", "held/lnk");
    CHECK_EQ_INT(dirs_remove_if(fd, "lnk/file", 0, 0, err, sizeof err), DIRS_EOUTSIDE);
    CHECK(victim_intact());
    close(fd);
}

TT_MAIN
