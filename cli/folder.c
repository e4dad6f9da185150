/* folder.c: an experiment's results folder, tune_results/NAME beside its database, and which
 * database owns it. tune writes a small owner file, .tune-owner, into the folder when it
 * makes it: the database's identity (store_identity), the database's absolute path and the
 * experiment's name. tune run, resume and extend write only into a folder their database
 * owns, and tune rm deletes only such a folder, beneath the open tune_results folder
 * (dirs_remove). Not for: the trials' own folders inside it (scheduler/), or the rows. */
#include "cli/cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirs/dirs.h"

#define OWNER_FILE ".tune-owner"
#define LOCK_FILE ".tune.lock"

/* Who asks: this database. */
struct who {
    char id[STORE_ID_LEN + 1];
    char dir[PATH_MAX];      /* the database's folder, absolute, where tune_results goes */
    char db[PATH_MAX + 300]; /* the database, absolute (its folder resolved, its name kept) */
    struct stat st;          /* the database file, to know it under another path */
    int have_st;
};

static void folder_init(cli_folder_t *f)
{
    memset(f, 0, sizeof *f);
    f->parent = f->fd = f->lock = -1;
}

void cli_folder_close(cli_folder_t *f)
{
    if (!f) return;
    if (f->lock >= 0) close(f->lock);
    if (f->fd >= 0) close(f->fd);
    if (f->parent >= 0) close(f->parent);
    f->parent = f->fd = f->lock = -1;
}

static int whoami(store_t *st, const char *db, struct who *w, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    if (store_identity(st, w->id, err, errlen) != 0) return -1;
    /* The folder as the database's path names it (a symlinked database keeps its results
     * beside the link, as tune always did), resolved so that trials get an absolute path. */
    char d[PATH_MAX];
    const char *slash = strrchr(db, '/');
    if (!slash)
        snprintf(d, sizeof d, ".");
    else if (slash == db)
        snprintf(d, sizeof d, "/");
    else
        snprintf(d, sizeof d, "%.*s", (int)(slash - db), db);
    if (!realpath(d, w->dir)) {
        snprintf(err, errlen, "cannot find the folder of %s: %s", db, strerror(errno));
        return -1;
    }
    snprintf(w->db, sizeof w->db, "%s/%s", strcmp(w->dir, "/") == 0 ? "" : w->dir,
             slash ? slash + 1 : db);
    w->have_st = stat(db, &w->st) == 0;
    return 0;
}

/* ---- the owner file ---------------------------------------------------------------- */

/* The owner file of the folder open at dirfd: 0 with its fields, 1 when there is none,
 * -1 (errno set) when it cannot be read, -2 when it is not one tune wrote. */
static int read_owner(int dirfd, char *id, char *db, size_t dbn, char *exp, size_t expn)
{
    int fd = openat(dirfd, OWNER_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 1 : -1;
    char buf[8192];
    size_t n = 0;
    for (;;) {
        ssize_t k = read(fd, buf + n, sizeof buf - 1 - n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        n += (size_t)k;
        if (n == sizeof buf - 1) break;
    }
    close(fd);
    buf[n] = 0;
    cJSON *o = cJSON_Parse(buf);
    const char *i = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "database_id"));
    const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "database"));
    const char *e = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "experiment"));
    int ok = i && d && e && strlen(i) == STORE_ID_LEN && d[0] == '/' && strlen(d) < dbn &&
             strlen(e) < expn;
    if (ok) {
        memcpy(id, i, STORE_ID_LEN + 1);
        snprintf(db, dbn, "%s", d);
        snprintf(exp, expn, "%s", e);
    }
    cJSON_Delete(o);
    return ok ? 0 : -2;
}

/* Writes the owner file of the folder open at dirfd, whole (a file of its own, synced, then
 * linked into place: a tune killed on the way leaves no half-written one). With `replace`
 * an existing one is replaced (renamed over), else the first writer wins: 1 when another
 * tune's owner file was there first. 0, 1, or -1 with errno. */
static int write_owner(int dirfd, const struct who *w, const char *name, int replace)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "owner_of",
                            "this folder of tune results: tune rm deletes it only "
                            "for this database and experiment");
    cJSON_AddStringToObject(o, "database_id", w->id);
    cJSON_AddStringToObject(o, "database", w->db);
    cJSON_AddStringToObject(o, "experiment", name);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) {
        errno = ENOMEM;
        return -1;
    }
    char tmp[64];
    snprintf(tmp, sizeof tmp, OWNER_FILE ".%ld", (long)getpid());
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    int rc = fd < 0 ? -1 : 0;
    size_t n = text ? strlen(text) : 0, done = 0;
    while (!rc && done <= n) {
        /* the text, then a newline */
        ssize_t k = done < n ? write(fd, text + done, n - done) : write(fd, "\n", 1);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) rc = -1;
        done += k > 0 ? (size_t)k : 0;
    }
    free(text);
    if (!rc && fsync(fd) != 0) rc = -1;
    if (fd >= 0 && close(fd) != 0 && !rc) rc = -1;
    if (!rc && replace) {
        rc = renameat(dirfd, tmp, dirfd, OWNER_FILE) == 0 ? 0 : -1;
    } else if (!rc) {
        if (linkat(dirfd, tmp, dirfd, OWNER_FILE, 0) != 0) {
            if (errno == EEXIST)
                rc = 1;
            else if (errno == EPERM || errno == EOPNOTSUPP || errno == EMLINK)
                /* A file system without hard links: renamed, which a second tune claiming
                 * the same new folder in the same instant could overwrite. */
                rc = renameat(dirfd, tmp, dirfd, OWNER_FILE) == 0 ? 0 : -1;
            else
                rc = -1;
        }
    }
    int e = errno;
    unlinkat(dirfd, tmp, 0);
    if (rc == 0) fsync(dirfd);
    errno = e;
    return rc;
}

/* ---- judging a folder -------------------------------------------------------------- */

/* Whether the folder open at fd holds nothing of anyone's: no entry but the lock file and
 * owner files a claim cut short left. */
static int is_empty(int fd)
{
    int d2 = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
    if (!d) {
        if (d2 >= 0) close(d2);
        return 0;
    }
    int empty = 1;
    struct dirent *e;
    while (empty && (e = readdir(d)))
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
                strcmp(e->d_name, LOCK_FILE) == 0 ||
                strncmp(e->d_name, OWNER_FILE, strlen(OWNER_FILE)) == 0;
    closedir(d);
    return empty;
}

/* Whether a tune database other than w's own file is at path with w's identity (the
 * database w was copied from, or a copy of it). When it cannot be told (the file is there
 * but cannot be read), yes: the folder is then not taken. */
static int holds_identity(const char *path, const struct who *w)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return errno != ENOENT && errno != ENOTDIR;
    store_t *other = NULL;
    char err[512], id[STORE_ID_LEN + 1];
    int rc = store_open(path, STORE_OPEN_READONLY, &other, err, sizeof err);
    if (rc != 0) return rc != STORE_NOTFOUND && rc != STORE_NOTDB;
    rc = store_identity(other, id, err, sizeof err);
    store_close(other);
    return rc == 0 ? strcmp(id, w->id) == 0 : rc != STORE_NOTFOUND;
}

/* Whether the folder open at fd is the experiment's folder beside the database at db,
 * tune_results/NAME there (yes also when that cannot be told). */
static int is_beside(const char *db, const char *name, int fd)
{
    char p[PATH_MAX + 700];
    const char *slash = strrchr(db, '/');
    snprintf(p, sizeof p, "%.*s/tune_results/%s", (int)(slash - db), db, name);
    struct stat a, b;
    if (stat(p, &a) != 0) return errno != ENOENT && errno != ENOTDIR;
    return fstat(fd, &b) != 0 || (a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

/* Sets f->owner (and f->why when the folder is not this experiment's) for the folder open
 * at f->fd. `stored` (may be NULL): the experiment's recorded results_dir, when the folder
 * is the one beside the database, where a folder without an owner file that the row names
 * is this experiment's from an older tune. */
static void judge(cli_folder_t *f, const struct who *w, const char *name, const char *stored)
{
    char id[STORE_ID_LEN + 1], db[PATH_MAX + 300], exp[256];
    f->owner = CLI_FOLDER_FOREIGN;
    f->why[0] = 0;
    int r = read_owner(f->fd, id, db, sizeof db, exp, sizeof exp);
    struct stat a, b;
    if (r == 1) {
        if (stored && stat(stored, &a) == 0 && fstat(f->fd, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino)
            f->owner = CLI_FOLDER_LEGACY;
        else if (is_empty(f->fd)) {
            f->owner = CLI_FOLDER_UNCLAIMED;
            snprintf(f->why, sizeof f->why,
                     "it is empty and no database has claimed it (a tune killed as it made the "
                     "folder)");
        } else
            snprintf(f->why, sizeof f->why,
                     "it holds files, and no database has claimed it (a tune older than "
                     "owner files made it, for another database or for an experiment since "
                     "deleted)");
    } else if (r == -1) {
        snprintf(f->why, sizeof f->why, "its owner file %s cannot be read (%s)", OWNER_FILE,
                 strerror(errno));
    } else if (r == -2) {
        snprintf(f->why, sizeof f->why, "its owner file %s is not one tune wrote", OWNER_FILE);
    } else if (strcmp(id, w->id) != 0) {
        snprintf(f->why, sizeof f->why,
                 "it belongs to experiment \"%.100s\" of another database, %s", exp, db);
    } else if (strcmp(exp, name) != 0) {
        snprintf(f->why, sizeof f->why,
                 "it belongs to experiment \"%.100s\" of this database (the folder was renamed)",
                 exp);
    } else if (w->have_st && stat(db, &a) == 0 && a.st_dev == w->st.st_dev &&
               a.st_ino == w->st.st_ino) {
        f->owner = CLI_FOLDER_OURS;
    } else if (holds_identity(db, w) && is_beside(db, name, f->fd)) {
        snprintf(f->why, sizeof f->why,
                 "it belongs to %s, a database with this one's identity: this one is a copy of "
                 "it (or it of this one), and the folder stays with the database that made it",
                 db);
    } else {
        /* The database that made it is no longer where it was: it was moved, and this is
         * it. Or the folder was copied along with it (cp -r of the project): the copy is
         * this database's, the original's own folder is the one beside the original. */
        f->owner = CLI_FOLDER_MOVED;
        snprintf(f->was, sizeof f->was, "%s", db);
    }
}

/* ---- finding the folders ----------------------------------------------------------- */

/* Opens the tune_results folder in dir (made first when `make`): an fd, or -1 with errno.
 * tune_results itself may be a symlink (to a larger disk); nothing beneath it is followed. */
static int open_results(const char *dir, int make)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return -1;
    if (make && mkdirat(dfd, "tune_results", 0777) != 0 && errno != EEXIST) {
        int e = errno;
        close(dfd);
        errno = e;
        return -1;
    }
    int rfd = openat(dfd, "tune_results", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = errno;
    close(dfd);
    errno = e;
    return rfd;
}

/* Opens name beneath parent into f (f->parent takes parent): 0, or -1 with errno (ENOENT:
 * none; ELOOP or ENOTDIR: a symlink or not a folder, which f->why then says). */
static int open_in(cli_folder_t *f, int parent, const char *name)
{
    f->parent = parent;
    f->fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (f->fd >= 0) return 0;
    int e = errno;
    if (e == ELOOP || e == ENOTDIR)
        snprintf(f->why, sizeof f->why,
                 "it is a symlink or not a folder, which tune never follows");
    else if (e != ENOENT)
        snprintf(f->why, sizeof f->why, "it cannot be opened (%s)", strerror(e));
    errno = e;
    return -1;
}

/* The experiment's recorded results_dir, or "" (none, or not a folder tune_results/NAME:
 * a simulated experiment's, say); *parent gets its folder's path. */
static void stored_dir(store_t *st, int64_t exp_id, const char *name, char *dir, size_t n,
                       char *parent, size_t pn)
{
    dir[0] = parent[0] = 0;
    if (!exp_id) return;
    char id[32], err[512];
    snprintf(id, sizeof id, "%lld", (long long)exp_id);
    const char *b[] = {id};
    cli_rows_t r = {0};
    if (cli_rows_query(st, "SELECT results_dir FROM experiments WHERE id = ?1", b, 1, &r, err,
                       sizeof err) == 0 &&
        r.nrows == 1 && r.vals[0])
        snprintf(dir, n, "%s", r.vals[0]);
    cli_rows_free(&r);
    /* Only a path of tune's own shape is looked at: /.../tune_results/NAME. */
    size_t dl = strlen(dir), nl = strlen(name), tl = strlen("/tune_results/");
    if (dir[0] != '/' || dl <= nl + tl || strcmp(dir + dl - nl, name) != 0 ||
        strncmp(dir + dl - nl - tl, "/tune_results/", tl) != 0) {
        dir[0] = 0;
        return;
    }
    snprintf(parent, pn, "%.*s", (int)(dl - nl - 1), dir);
}

/* The folder the experiment's row names, when it is not the one beside the database
 * (the database was moved alone): judged, in f; -1 when there is none. */
static int open_stored(cli_folder_t *f, const char *stored, const char *sparent, const char *name,
                       const struct who *w)
{
    if (!stored[0]) return -1;
    int pfd = open(sparent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0) return -1;
    snprintf(f->path, sizeof f->path, "%s", stored);
    if (open_in(f, pfd, name) != 0) {
        if (errno == ENOENT) {
            cli_folder_close(f);
            return -1;
        }
        return 0;
    }
    judge(f, w, name, NULL);
    return 0;
}

int cli_folder_ours(const cli_folder_t *f)
{
    return f->fd >= 0 && (f->owner == CLI_FOLDER_OURS || f->owner == CLI_FOLDER_MOVED ||
                          f->owner == CLI_FOLDER_LEGACY);
}

int cli_folder_find(store_t *st, const char *db, const char *name, int64_t exp_id,
                    cli_folder_t out[2], int *n, char *err, size_t errlen)
{
    *n = 0;
    folder_init(&out[0]);
    folder_init(&out[1]);
    if (space_check_name(name, err, errlen) != 0) return -1;
    struct who w;
    if (whoami(st, db, &w, err, errlen) != 0) return -1;
    char stored[PATH_MAX + 300], sparent[PATH_MAX + 300];
    stored_dir(st, exp_id, name, stored, sizeof stored, sparent, sizeof sparent);
    cli_folder_t *f = &out[0];
    char fpath[sizeof f->path];
    snprintf(fpath, sizeof fpath, "%s/tune_results/%s", w.dir, name);
    snprintf(f->path, sizeof f->path, "%s", fpath);
    int rfd = open_results(w.dir, 0);
    struct stat fst;
    int have_f = 0;
    if (rfd >= 0 && open_in(f, rfd, name) == 0) {
        judge(f, &w, name, stored[0] ? stored : NULL);
        have_f = fstat(f->fd, &fst) == 0;
        (*n)++;
    } else if (rfd >= 0 && f->why[0]) {
        (*n)++; /* a symlink, or a folder that cannot be opened: said, never touched */
    } else {
        cli_folder_close(f);
        folder_init(f);
    }
    /* The folder the row names, if it is another one (the database was moved alone, or
     * this is a copy and that folder is the original's). */
    if (stored[0] && strcmp(stored, fpath) != 0) {
        cli_folder_t *g = &out[*n];
        struct stat gst;
        if (open_stored(g, stored, sparent, name, &w) == 0) {
            if (have_f && g->fd >= 0 && fstat(g->fd, &gst) == 0 && gst.st_dev == fst.st_dev &&
                gst.st_ino == fst.st_ino) {
                cli_folder_close(g);
                folder_init(g);
            } else {
                (*n)++;
            }
        }
    }
    return 0;
}

int cli_folder_lock(cli_folder_t *f, char *pid, size_t n)
{
    if (n) pid[0] = 0;
    int fd = openat(f->fd, LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ssize_t k = n > 1 ? pread(fd, pid, n - 1, 0) : 0;
        if (k > 0) pid[k] = 0;
        if (n) pid[strcspn(pid, "\n")] = 0;
        close(fd);
        return 1;
    }
    f->lock = fd;
    return 0;
}

int cli_folder_remove(cli_folder_t *f, const char *name, char *err, size_t errlen)
{
    /* The name must still be the folder that was judged (not one put there since). */
    struct stat a, b;
    int fd = openat(f->parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int same = fd >= 0 && fstat(fd, &a) == 0 && fstat(f->fd, &b) == 0 && a.st_dev == b.st_dev &&
               a.st_ino == b.st_ino;
    if (fd >= 0) close(fd);
    if (fd < 0 && errno == ENOENT) return 0;
    if (!same) {
        snprintf(err, errlen, "it was replaced while tune rm ran");
        return -1;
    }
    return dirs_remove(f->parent, name, err, errlen) == DIRS_OK ? 0 : -1;
}

/* ---- run, resume, extend ----------------------------------------------------------- */

/* Says why the folder cannot be this experiment's, and what to do. */
static int refuse(const cli_folder_t *f, const char *db, const char *name, int64_t exp_id)
{
    const char *base = strrchr(db, '/') ? strrchr(db, '/') + 1 : db;
    if (exp_id)
        cli_error("%s cannot be the results folder of experiment \"%s\" of %s: %s. Keep this "
                  "database in a folder of its own (move it there and pass --db DIR/%s): its "
                  "experiments' folders are made beside it",
                  f->path, name, db, f->why, base);
    else
        cli_error("%s cannot be the results folder of experiment \"%s\" of %s: %s. Give the "
                  "experiment another name (\"name\" in space.json), or keep this database in "
                  "a folder of its own (--db DIR/%s), where its experiments get folders of "
                  "their own",
                  f->path, name, db, f->why, base);
    return CLI_EXIT_USAGE;
}

/* Opens the experiment's folder into f: the one beside the database; when there is none,
 * the one its row names if that is this database's (it was moved away from it alone, and
 * the trials' logs and checkpoints are there); else a new one beside the database. 0, or
 * an exit status with the message printed. */
static int open_or_make(cli_folder_t *f, const struct who *w, const char *name, const char *stored,
                        const char *sparent, int64_t exp_id, const char *db)
{
    snprintf(f->path, sizeof f->path, "%s/tune_results/%s", w->dir, name);
    int rfd = open_results(w->dir, 0);
    if (rfd >= 0 && open_in(f, rfd, name) == 0) return 0;
    if (errno != ENOENT) {
        if (f->why[0]) return refuse(f, db, name, exp_id);
        cli_error("cannot open the results directory %s: %s", f->path, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    if (strcmp(stored, f->path) != 0) {
        cli_folder_t g;
        folder_init(&g);
        if (open_stored(&g, stored, sparent, name, w) == 0 && cli_folder_ours(&g)) {
            cli_folder_close(f);
            *f = g;
            fprintf(stderr,
                    "tune: experiment %s goes on in its results folder %s, made when this "
                    "database was %s\n",
                    name, f->path, f->owner == CLI_FOLDER_MOVED ? f->was : w->db);
            return 0;
        }
        cli_folder_close(&g);
    }
    if (rfd < 0 && (rfd = open_results(w->dir, 1)) < 0) {
        cli_error("cannot create the results directory %s/tune_results: %s", w->dir,
                  strerror(errno));
        return CLI_EXIT_FAIL;
    }
    /* mkdir, then open: a tune making the same folder in the same instant makes one
     * folder, which the first owner file claims. */
    for (int tries = 0; tries < 3; tries++) {
        if (mkdirat(rfd, name, 0777) != 0 && errno != EEXIST) break;
        if (open_in(f, rfd, name) == 0) return 0;
        if (errno != ENOENT) {
            if (f->why[0]) return refuse(f, db, name, exp_id);
            break;
        }
    }
    cli_error("cannot create the results directory %s: %s", f->path, strerror(errno));
    if (f->parent != rfd) close(rfd);
    return CLI_EXIT_FAIL;
}

int cli_folder_take(store_t *st, const char *db, const char *name, int64_t exp_id, cli_folder_t *f)
{
    folder_init(f);
    char err[1024];
    if (space_check_name(name, err, sizeof err) != 0) {
        cli_error("%s", err);
        return CLI_EXIT_USAGE;
    }
    struct who w;
    if (whoami(st, db, &w, err, sizeof err) != 0) {
        cli_error("%s", err);
        return CLI_EXIT_FAIL;
    }
    char stored[PATH_MAX + 300], sparent[PATH_MAX + 300];
    stored_dir(st, exp_id, name, stored, sizeof stored, sparent, sizeof sparent);
    int rc = open_or_make(f, &w, name, stored, sparent, exp_id, db);
    if (rc != 0) {
        cli_folder_close(f);
        return rc;
    }
    for (int tries = 0; tries < 2; tries++) {
        judge(f, &w, name, stored[0] ? stored : NULL);
        if (f->owner != CLI_FOLDER_UNCLAIMED && f->owner != CLI_FOLDER_LEGACY) break;
        /* A new folder, one a tune killed before its owner file left, or one an older tune
         * made for this very row: this database claims it. The first claim wins. */
        int rc = write_owner(f->fd, &w, name, 0);
        if (rc < 0) {
            cli_error("cannot write %s/%s: %s", f->path, OWNER_FILE, strerror(errno));
            cli_folder_close(f);
            return CLI_EXIT_FAIL;
        }
        if (rc == 0) {
            f->owner = CLI_FOLDER_OURS;
            break;
        }
    }
    if (!cli_folder_ours(f)) {
        int rc = refuse(f, db, name, exp_id);
        cli_folder_close(f);
        return rc;
    }
    char pid[32];
    int lk = cli_folder_lock(f, pid, sizeof pid);
    if (lk != 0) {
        if (lk < 0)
            cli_error("cannot create %s/%s: %s", f->path, LOCK_FILE, strerror(errno));
        else
            cli_error("experiment \"%s\" is being run by another tune process%s%s%s; readers "
                      "(tune trials, tune query) work meanwhile",
                      name, pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "");
        cli_folder_close(f);
        return CLI_EXIT_FAIL;
    }
    int k = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(f->lock, 0) == 0 && pwrite(f->lock, pid, (size_t)k, 0) < 0) {
        /* the pid is only informative */
    }
    /* Moved with its database (or the database moved away from it): from now on it is
     * this file's, so that a copy made later is told apart. Under the lock. */
    if ((f->owner == CLI_FOLDER_MOVED || f->owner == CLI_FOLDER_LEGACY) &&
        write_owner(f->fd, &w, name, 1) != 0) {
        cli_error("cannot write %s/%s: %s", f->path, OWNER_FILE, strerror(errno));
        cli_folder_close(f);
        return CLI_EXIT_FAIL;
    }
    if (exp_id && strcmp(stored, f->path) != 0) {
        char id[32];
        snprintf(id, sizeof id, "%lld", (long long)exp_id);
        const char *b[] = {f->path, id};
        if (store_query(st, "UPDATE experiments SET results_dir = ?1 WHERE id = ?2", b, 2, NULL,
                        NULL, err, sizeof err) != 0) {
            cli_error("cannot record the results folder: %s", err);
            cli_folder_close(f);
            return CLI_EXIT_FAIL;
        }
    }
    return 0;
}
