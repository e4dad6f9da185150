/* `tune rm NAME`: deletes an experiment's rows from the database and the results folder this
 * database owns (cli/folder.c), after asking on a terminal (--yes skips the question). Not
 * for: stopping a run; an experiment a tune process holds (its lock file) is refused; a
 * folder another database owns (the original of a copy, say) is left and said. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct exp_row {
    int found;
    long long id, ntrials, nresults;
};

static int read_exp(void *ud, int ncol, const char *const *names, const char *const *v,
                    const int *types)
{
    (void)ncol, (void)names, (void)types;
    struct exp_row *e = ud;
    e->found = 1;
    e->id = strtoll(v[0], NULL, 10);
    e->ntrials = v[1] ? strtoll(v[1], NULL, 10) : 0;
    e->nresults = v[2] ? strtoll(v[2], NULL, 10) : 0;
    return 0;
}

int cli_cmd_rm(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune rm NAME [--yes] [--db PATH]\n"
        "  deletes the experiment (its trials, results and decisions) from the database and\n"
        "  its results folder tune_results/NAME when this database owns it (a folder another\n"
        "  database owns, the original of a copied database say, is left and said); asks\n"
        "  first on a terminal (--yes: do not ask). Refused while a tune process runs the\n"
        "  experiment. A name that begins with '-' goes after --: tune rm -- -x\n";
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
                         "SELECT e.id,"
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
    /* The folders it may have, each judged by its owner file (cli/folder.c): only those
     * this database owns are deleted. No path is built from a name tune would not make. */
    cli_folder_t fs[2];
    int nf = 0;
    char ferr[1024] = "";
    int looked = cli_folder_find(st, db, name, e.id, fs, &nf, ferr, sizeof ferr) == 0;
    for (int i = 0; i < nf; i++)
        fs[i].owner = cli_folder_ours(&fs[i]) ? CLI_FOLDER_OURS : CLI_FOLDER_FOREIGN;

    /* The run's lock (cli_folder_take): while a tune process holds it the experiment is
     * being written, and deleting under it would lose the run. Held by us until the folder
     * is gone, so that no run starts in between. */
    for (int i = 0; i < nf; i++) {
        char pid[32];
        if (fs[i].owner != CLI_FOLDER_OURS) continue;
        if (cli_folder_lock(&fs[i], pid, sizeof pid) == 1) {
            cli_error("experiment \"%s\" is being run by a tune process%s%s%s: stop it first "
                      "(Ctrl-C, or kill that process), then tune rm %s",
                      name, pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "", name);
            rc = CLI_EXIT_FAIL;
            goto out;
        }
    }
    if (!yes) {
        if (!isatty(STDIN_FILENO)) {
            cli_error("rm: not asking without a terminal: say tune rm %s --yes to delete it", name);
            rc = CLI_EXIT_USAGE;
            goto out;
        }
        fprintf(stderr, "Delete experiment \"%s\" (%lld trials, %lld results) from %s", name,
                e.ntrials, e.nresults, db);
        for (int i = 0; i < nf; i++)
            if (fs[i].owner == CLI_FOLDER_OURS) fprintf(stderr, " and the folder %s", fs[i].path);
        fprintf(stderr, "? [y/N] ");
        char line[64] = "";
        if (!fgets(line, sizeof line, stdin) || (line[0] != 'y' && line[0] != 'Y')) {
            fprintf(stderr, "Nothing deleted.\n");
            rc = CLI_EXIT_FAIL;
            goto out;
        }
    }
    rc = store_experiment_delete(st, e.id, err, sizeof err);
    store_close(st);
    st = NULL;
    if (rc != 0) {
        cli_error("%s", err);
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    rc = CLI_EXIT_OK;
    for (int i = 0; i < nf; i++) {
        if (fs[i].owner != CLI_FOLDER_OURS) continue;
        if (cli_folder_remove(&fs[i], name, err, sizeof err) != 0) {
            cli_error("deleted experiment \"%s\" from %s, but could not remove %s: %s", name, db,
                      fs[i].path, err);
            fs[i].owner = CLI_FOLDER_FOREIGN;
            fs[i].why[0] = 0;
            rc = CLI_EXIT_FAIL;
        }
    }
    printf("Deleted experiment %s: %lld trials, %lld results", name, e.ntrials, e.nresults);
    for (int i = 0; i < nf; i++)
        if (fs[i].owner == CLI_FOLDER_OURS) printf("; removed %s", fs[i].path);
    printf("\n");
    fflush(stdout);
    for (int i = 0; i < nf; i++)
        if (fs[i].owner != CLI_FOLDER_OURS && fs[i].why[0])
            fprintf(stderr, "tune: left %s as it is: %s\n", fs[i].path, fs[i].why);
    if (!looked)
        fprintf(stderr,
                "tune: only the rows were deleted: tune does not look for a results folder by "
                "this name (%s)\n",
                ferr);
out:
    for (int i = 0; i < 2; i++)
        cli_folder_close(&fs[i]);
    store_close(st);
    return rc;
}
