/* `tune rm NAME`: deletes an experiment's rows from the database and its results folder,
 * after asking on a terminal (--yes skips the question). Not for: stopping a run; an
 * experiment a tune process holds (its lock file) is refused. */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

struct exp_row {
    int found;
    long long id, ntrials, nresults;
    char dir[4096];
};

static int read_exp(void *ud, int ncol, const char *const *names, const char *const *v,
                    const int *types)
{
    (void)ncol, (void)names, (void)types;
    struct exp_row *e = ud;
    e->found = 1;
    e->id = strtoll(v[0], NULL, 10);
    snprintf(e->dir, sizeof e->dir, "%s", v[1] ? v[1] : "");
    e->ntrials = v[2] ? strtoll(v[2], NULL, 10) : 0;
    e->nresults = v[3] ? strtoll(v[3], NULL, 10) : 0;
    return 0;
}

int cli_cmd_rm(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune rm NAME [--yes] [--db PATH]\n"
        "  deletes the experiment (its trials, results and decisions) from the database and\n"
        "  its results folder tune_results/NAME; asks first on a terminal (--yes: do not\n"
        "  ask). Refused while a tune process runs the experiment. A name that begins with\n"
        "  '-' goes after --: tune rm -- -x\n";
    const char *name = NULL;
    int yes = 0, opts = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts && strcmp(a, "--") == 0) {
            opts = 0;
        } else if (opts && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            fputs(usage, stdout);
            return CLI_EXIT_OK;
        } else if (opts && strcmp(a, "--db") == 0 && i + 1 < argc) {
            i++;
        } else if (opts && (strcmp(a, "--yes") == 0 || strcmp(a, "-y") == 0)) {
            yes = 1;
        } else if (opts && a[0] == '-' && a[1]) {
            cli_error("rm: unknown option %s (a name that begins with '-' goes after --: tune rm "
                      "-- %s)\n%s",
                      a, a, usage);
            return CLI_EXIT_USAGE;
        } else if (!name) {
            name = a;
        } else {
            cli_error("rm: one experiment at a time (got \"%s\" and \"%s\")\n%s", name, a, usage);
            return CLI_EXIT_USAGE;
        }
    }
    if (!name) {
        cli_error("rm: which experiment? (tune ls lists them)\n%s", usage);
        return CLI_EXIT_USAGE;
    }
    const char *db = cli_db_path(argc, argv);
    if (access(db, F_OK) != 0) {
        cli_error("%s: no such database (--db PATH or TUNE_DB names another)", db);
        return CLI_EXIT_FAIL;
    }
    char err[1024];
    store_t *st = NULL;
    if (store_open(db, 0, &st, err, sizeof err) != 0) {
        cli_error("%s", err);
        return CLI_EXIT_FAIL;
    }
    struct exp_row e = {0};
    const char *b[] = {name};
    int rc = store_query(st,
                         "SELECT e.id, e.results_dir,"
                         " (SELECT count(*) FROM trials t WHERE t.experiment_id = e.id),"
                         " (SELECT coalesce(sum(g.n), 0) FROM result_ranges g JOIN trials t"
                         "   ON t.id = g.trial_id WHERE t.experiment_id = e.id)"
                         " FROM experiments e WHERE e.name = ?1",
                         b, 1, read_exp, &e, err, sizeof err);
    if (rc != 0 || !e.found) {
        if (rc != 0)
            cli_error("%s", err);
        else
            cli_error("no experiment named \"%s\" in %s (see tune ls --db %s)", name, db, db);
        store_close(st);
        return CLI_EXIT_FAIL;
    }
    /* A folder is removed only when it is the experiment's own: .../tune_results/NAME. */
    char tail[256];
    snprintf(tail, sizeof tail, "/tune_results/%s", name);
    size_t dl = strlen(e.dir), tl = strlen(tail);
    int own_dir = dl > tl && strcmp(e.dir + dl - tl, tail) == 0;
    struct stat sb;
    int have_dir = own_dir && lstat(e.dir, &sb) == 0 && S_ISDIR(sb.st_mode);

    /* The run's lock (cli/run.c, lock_experiment): while a tune process holds it the
     * experiment is being written, and deleting under it would lose the run. Held by us
     * until the folder is gone, so that no run starts in between. */
    int lock = -1;
    if (have_dir) {
        char lp[4200];
        snprintf(lp, sizeof lp, "%s/.tune.lock", e.dir);
        lock = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) != 0) {
            char pid[32] = "";
            ssize_t k = pread(lock, pid, sizeof pid - 1, 0);
            if (k > 0) pid[k] = 0;
            pid[strcspn(pid, "\n")] = 0;
            cli_error("experiment \"%s\" is being run by a tune process%s%s%s: stop it first "
                      "(Ctrl-C, or kill that process), then tune rm %s",
                      name, pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "", name);
            close(lock);
            store_close(st);
            return CLI_EXIT_FAIL;
        }
    }
    if (!yes) {
        if (!isatty(STDIN_FILENO)) {
            cli_error("rm: not asking without a terminal: say tune rm %s --yes to delete it", name);
            if (lock >= 0) close(lock);
            store_close(st);
            return CLI_EXIT_USAGE;
        }
        fprintf(stderr, "Delete experiment \"%s\" (%lld trials, %lld results) from %s%s%s? [y/N] ",
                name, e.ntrials, e.nresults, db, have_dir ? " and the folder " : "",
                have_dir ? e.dir : "");
        char line[64] = "";
        if (!fgets(line, sizeof line, stdin) || (line[0] != 'y' && line[0] != 'Y')) {
            fprintf(stderr, "Nothing deleted.\n");
            if (lock >= 0) close(lock);
            store_close(st);
            return CLI_EXIT_FAIL;
        }
    }
    rc = store_experiment_delete(st, e.id, err, sizeof err);
    store_close(st);
    if (rc != 0) {
        cli_error("%s", err);
        if (lock >= 0) close(lock);
        return CLI_EXIT_FAIL;
    }
    int dir_rc = have_dir ? nftw(e.dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) : 0;
    if (lock >= 0) close(lock);
    if (dir_rc != 0) {
        cli_error("deleted experiment \"%s\" from %s, but could not remove %s: %s", name, db, e.dir,
                  strerror(errno));
        return CLI_EXIT_FAIL;
    }
    printf("Deleted experiment %s: %lld trials, %lld results%s%s\n", name, e.ntrials, e.nresults,
           have_dir ? "; removed " : "", have_dir ? e.dir : "");
    return CLI_EXIT_OK;
}
