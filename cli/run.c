/* `tune run`, `tune resume` and `tune extend`: the flags, the stored experiment a name
 * finds (resumed, extended, or started afresh under a new name, asking when it must), and
 * the space.json they run, handed to cli_execute (execute.c). Not for: deciding anything
 * about trials, or putting the run together (execute.c). */
#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "search/settings.h"
#include "search/space.h"
#include "trial/trial.h"

static const char run_usage[] =
    "usage: tune run SPACE.json [options]\n"
    "       tune resume NAME [options]\n"
    "  --db PATH              database (default tune.db)\n"
    "  --gpus LIST|none       GPU pool, e.g. 0,1,2,3 (default: detected)\n"
    "  --cpus N               CPU cores to hand out (default: all)\n"
    "  --status-interval S    seconds between status blocks when not on a terminal (default 30,\n"
    "                         or status_interval_s in the file)\n"
    "  --restart              run: start a fresh experiment under a new name if NAME exists\n"
    "  --resume               run: resume NAME if it exists and did not finish (no question);\n"
    "                         the stored space.json is used (differences are shown)\n"
    "  --more N               run: add N trials to NAME (continuing the seed's sequence)\n"
    "                         and run them; the same as tune extend NAME N\n"
    "  --quiet                no live table; only the final summary\n"
    "  --executor local|slurm run trials on this machine or through Slurm (default: the\n"
    "                         file's \"executor\", else local)\n"
    "  --allocation JOBID     slurm: run trials as steps of this running allocation (default:\n"
    "                         the file's, else $SLURM_JOB_ID; \"none\": a job per trial)\n";

static int parse_gpu_list(const char *s, int *ids, int max)
{
    if (strcmp(s, "none") == 0 || *s == 0) return 0;
    int n = 0;
    while (*s) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > 1 << 20 || n >= max) return -1;
        for (int i = 0; i < n; i++)
            if (ids[i] == v) return -1;
        ids[n++] = (int)v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

/* Parses options from argv[first..]; the one positional argument goes to *pos. */
static int parse_run_opts(int argc, char **argv, struct cli_run_opts *o, const char **pos)
{
    memset(o, 0, sizeof *o);
    o->db = cli_db_path(argc, argv);
    o->ngpus = -1;
    o->cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    *pos = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--db") == 0 && i + 1 < argc) {
            i++;
        } else if (strcmp(a, "--gpus") == 0 && i + 1 < argc) {
            o->ngpus = parse_gpu_list(argv[++i], o->gpu_ids, 256);
            if (o->ngpus < 0) {
                cli_error("--gpus wants a comma-separated list of distinct device ids such as "
                          "0,1,2,3 (or none), got \"%s\"",
                          argv[i]);
                return -1;
            }
        } else if (strcmp(a, "--cpus") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1 << 20) {
                cli_error("--cpus wants a positive integer, got \"%s\"", argv[i]);
                return -1;
            }
            o->cpus = (int)v;
        } else if (strcmp(a, "--status-interval") == 0 && i + 1 < argc) {
            char *end;
            double v = strtod(argv[++i], &end);
            if (*end || !(v > 0)) {
                cli_error("--status-interval wants a positive number of seconds, got \"%s\"",
                          argv[i]);
                return -1;
            }
            o->status_interval = v;
        } else if (strcmp(a, "--restart") == 0) {
            o->restart = 1;
        } else if (strcmp(a, "--resume") == 0) {
            o->resume = 1;
        } else if (strcmp(a, "--more") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 100000000) {
                cli_error("--more wants a positive number of trials to add, got \"%s\"", argv[i]);
                return -1;
            }
            o->more = v;
        } else if (strcmp(a, "--executor") == 0 && i + 1 < argc) {
            o->executor = argv[++i];
            if (!trial_exec_known(o->executor)) {
                char names[128];
                trial_exec_names(names, sizeof names);
                cli_error("--executor wants %s, got \"%s\"", names, o->executor);
                return -1;
            }
        } else if (strcmp(a, "--allocation") == 0 && i + 1 < argc) {
            o->allocation = argv[++i];
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o->quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            cli_error("%s: unknown option %s (see tune %s --help)", argv[0], a, argv[0]);
            return -1;
        } else if (!*pos) {
            *pos = a;
        } else {
            cli_error("%s: unexpected argument \"%s\"", argv[0], a);
            return -1;
        }
    }
    return 0;
}

struct exp_row {
    int found;
    int64_t id;
    int64_t num_trials;
    char status[32];
    char *space_json;
};

static int exp_row_cb(void *ud, int ncol, const char *const *names, const char *const *values,
                      const int *types)
{
    (void)names;
    (void)types;
    struct exp_row *r = ud;
    if (ncol < 3) return 1;
    r->found = 1;
    r->id = values[0] ? strtoll(values[0], NULL, 10) : 0;
    snprintf(r->status, sizeof r->status, "%s", values[1] ? values[1] : "");
    r->space_json = values[2] ? strdup(values[2]) : NULL;
    r->num_trials = ncol > 3 && values[3] ? strtoll(values[3], NULL, 10) : 0;
    return 1;
}

static int find_exp(store_t *st, const char *name, struct exp_row *r)
{
    memset(r, 0, sizeof *r);
    char err[512];
    const char *b[] = {name};
    if (store_query(st,
                    "SELECT id, status, space_json, num_trials FROM experiments WHERE name = ?1", b,
                    1, exp_row_cb, r, err, sizeof err) != 0) {
        cli_error("%s", err);
        return -1;
    }
    return 0;
}

/* Prints what differs between the stored space.json and the file on disk, key by key
 * (and parameter by parameter under "space"), to stderr. */
static void print_space_diff(const char *stored, const char *disk)
{
    cJSON *a = cJSON_Parse(stored), *b = cJSON_Parse(disk);
    if (!cJSON_IsObject(a) || !cJSON_IsObject(b)) {
        fprintf(stderr, "  (the texts differ)\n");
        goto out;
    }
    int shown = 0;
    for (int pass = 0; pass < 2; pass++) {
        cJSON *x = pass ? b : a, *y = pass ? a : b;
        for (cJSON *k = x->child; k; k = k->next) {
            cJSON *o = cJSON_GetObjectItemCaseSensitive(y, k->string);
            if (pass && o) continue; /* both have it: compared in the first pass */
            if (o && cJSON_Compare(k, o, 1)) continue;
            if (o && strcmp(k->string, "space") == 0 && cJSON_IsObject(k) && cJSON_IsObject(o)) {
                /* One line per parameter that changed. */
                for (int p2 = 0; p2 < 2; p2++) {
                    cJSON *xs = p2 ? o : k, *ys = p2 ? k : o;
                    for (cJSON *q = xs->child; q; q = q->next) {
                        cJSON *r = cJSON_GetObjectItemCaseSensitive(ys, q->string);
                        if ((p2 && r) || (r && cJSON_Compare(q, r, 1))) continue;
                        cJSON *sv = p2 ? r : q, *dv = p2 ? q : r;
                        char *s1 = sv ? cJSON_PrintUnformatted(sv) : NULL;
                        char *s2 = dv ? cJSON_PrintUnformatted(dv) : NULL;
                        fprintf(stderr, "  space.%.60s: stored %.120s, file %.120s\n", q->string,
                                s1 ? s1 : "(none)", s2 ? s2 : "(none)");
                        free(s1);
                        free(s2);
                        shown++;
                    }
                }
                continue;
            }
            cJSON *sv = pass ? o : k, *dv = pass ? k : o;
            char *s1 = sv ? cJSON_PrintUnformatted(sv) : NULL;
            char *s2 = dv ? cJSON_PrintUnformatted(dv) : NULL;
            fprintf(stderr, "  %.60s: stored %.120s, file %.120s\n", k->string, s1 ? s1 : "(none)",
                    s2 ? s2 : "(none)");
            free(s1);
            free(s2);
            shown++;
        }
    }
    if (!shown) fprintf(stderr, "  (only spacing or order differs)\n");
out:
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static int set_num_trials_row(store_t *st, int64_t exp_id, size_t n)
{
    char id[32], num[32], err[512];
    snprintf(id, sizeof id, "%lld", (long long)exp_id);
    snprintf(num, sizeof num, "%zu", n);
    const char *b[] = {num, id};
    if (store_query(st, "UPDATE experiments SET num_trials = ?1 WHERE id = ?2", b, 2, NULL, NULL,
                    err, sizeof err) != 0) {
        cli_error("cannot record the new number of trials: %s", err);
        return -1;
    }
    return 0;
}

/* Runs a stored experiment from the space.json stored with it (never from a file on disk
 * that may have changed since), with `more` trials added to it first. */
static int run_stored(store_t *st, const struct exp_row *ex, const char *name,
                      const struct cli_run_opts *ro, long more)
{
    char label[300], err[1024];
    snprintf(label, sizeof label, "%s (stored space.json)", name);
    const char *text = ex->space_json ? ex->space_json : "";
    space_t *sp = NULL;
    if (space_parse(text, strlen(text), label, &sp, err, sizeof err) != 0 ||
        space_rename(sp, name, err, sizeof err) != 0) {
        cli_error("%s", err);
        space_free(sp);
        return CLI_EXIT_FAIL;
    }
    /* The stored count, which earlier --more runs may have grown past the file's. */
    size_t n = space_num_trials(sp);
    if (ex->num_trials > 0 && (size_t)ex->num_trials > n) n = (size_t)ex->num_trials;
    if (more > 0) n += (size_t)more;
    if (space_set_num_trials(sp, n, err, sizeof err) != 0) {
        cli_error("%s", err);
        space_free(sp);
        return CLI_EXIT_USAGE;
    }
    if (more > 0) {
        if (set_num_trials_row(st, ex->id, n) != 0) {
            space_free(sp);
            return CLI_EXIT_FAIL;
        }
        printf("Adding %ld trial%s to %s: trials %zu..%zu continue the seed's sequence.\n", more,
               more == 1 ? "" : "s", name, n - (size_t)more, n - 1);
    }
    int rc = cli_execute(sp, st, ex->id, ro, label);
    space_free(sp);
    return rc;
}

static int ask_yes(const char *question)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) return 0;
    printf("%s [Y/n] ", question);
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin)) return 0;
    return line[0] == '\n' || line[0] == 'y' || line[0] == 'Y';
}

int cli_cmd_run(int argc, char **argv)
{
    if (cli_help(argc, argv, run_usage)) return CLI_EXIT_OK;
    struct cli_run_opts ro;
    const char *file;
    if (parse_run_opts(argc, argv, &ro, &file) != 0) return CLI_EXIT_USAGE;
    if (!file) {
        cli_error("run: which experiment file? usage: tune run SPACE.json");
        return CLI_EXIT_USAGE;
    }
    char err[1024];
    space_t *sp = NULL;
    if (space_load(file, &sp, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return CLI_EXIT_USAGE;
    }
    store_t *st = NULL;
    if (store_open(ro.db, 0, &st, err, sizeof err) != 0) {
        cli_error("%s", err);
        space_free(sp);
        return CLI_EXIT_FAIL;
    }
    const char *name = space_settings(sp)->name;
    struct exp_row ex;
    int rc = CLI_EXIT_FAIL;
    int64_t exp_id = 0;
    if (find_exp(st, name, &ex) != 0) goto out;
    if (ro.more > 0) {
        /* --more grows the stored experiment (its own space.json, its seed's sequence). */
        if (!ex.found || ro.restart) {
            cli_error("--more adds trials to an experiment that exists%s%s%s%s",
                      ro.restart ? " (not with --restart)" : "; \"", ro.restart ? "" : name,
                      ro.restart ? "" : "\" is not in ", ro.restart ? "" : ro.db);
            rc = CLI_EXIT_USAGE;
            goto out;
        }
        if (strcmp(ex.space_json ? ex.space_json : "", space_text(sp)) != 0) {
            fprintf(stderr,
                    "tune: %s differs from the space.json stored with experiment \"%s\"; the "
                    "added trials use the stored one. Differences:\n",
                    file, name);
            print_space_diff(ex.space_json ? ex.space_json : "", space_text(sp));
        }
        rc = run_stored(st, &ex, name, &ro, ro.more);
        goto out;
    }
    if (ex.found) {
        int finished = strcmp(ex.status, "FINISHED") == 0;
        char q[512];
        snprintf(q, sizeof q, "Experiment \"%s\" exists in %s and did not finish (%s). Resume it?",
                 name, ro.db, ex.status);
        if (ro.restart) {
            char fresh[256];
            for (int k = 2; k < 100000; k++) {
                snprintf(fresh, sizeof fresh, "%s-%d", name, k);
                struct exp_row e2;
                if (find_exp(st, fresh, &e2) != 0) goto out;
                free(e2.space_json);
                if (!e2.found) break;
            }
            /* The results directory and the trials' TUNE_EXPERIMENT follow the new name. */
            if (space_rename(sp, fresh, err, sizeof err) != 0) {
                cli_error("%s", err);
                rc = CLI_EXIT_USAGE;
                goto out;
            }
        } else if (!finished && (ro.resume || ask_yes(q))) {
            exp_id = ex.id;
        } else {
            if (finished)
                cli_error("experiment \"%s\" already exists in %s and finished; pass --restart to "
                          "run it again under a new name, or use another --db",
                          name, ro.db);
            else
                cli_error("experiment \"%s\" already exists in %s and did not finish (%s): resume "
                          "it with `tune resume %s` (or tune run --resume), or pass --restart to "
                          "start a fresh experiment under a new name",
                          name, ro.db, ex.status, name);
            goto out;
        }
    }
    if (exp_id != 0) {
        /* Resuming: the stored experiment, as durability.md promises. */
        if (strcmp(ex.space_json ? ex.space_json : "", space_text(sp)) != 0) {
            fprintf(stderr,
                    "tune: %s differs from the space.json stored with experiment \"%s\"; resuming "
                    "with the stored one (--more N adds trials; --restart runs the file as a new "
                    "experiment). Differences:\n",
                    file, name);
            print_space_diff(ex.space_json ? ex.space_json : "", space_text(sp));
        }
        rc = run_stored(st, &ex, name, &ro, 0);
        goto out;
    }
    rc = cli_execute(sp, st, exp_id, &ro, file);
out:
    free(ex.space_json);
    store_close(st);
    space_free(sp);
    return rc;
}

/* `tune resume NAME` and `tune extend NAME N` (more > 0). */
static int resume_named(int argc, char **argv, int extend)
{
    if (cli_help(argc, argv, run_usage)) return CLI_EXIT_OK;
    struct cli_run_opts ro;
    const char *name;
    long more = 0;
    if (extend) {
        /* NAME N: the count is the second positional argument (option values skipped). */
        static const char *const with_value[] = {
            "--db",         "--gpus", "--cpus",           "--executor",
            "--allocation", "--more", "--status-interval"};
        int at = -1, pos = 0;
        for (int i = 1; i < argc; i++) {
            int takes = 0;
            for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
                takes |= strcmp(argv[i], with_value[k]) == 0;
            if (takes) {
                i++;
                continue;
            }
            if (argv[i][0] == '-') continue;
            if (++pos == 2) {
                at = i;
                break;
            }
        }
        char *end = NULL;
        if (at >= 1) more = strtol(argv[at], &end, 10);
        if (at < 1 || *end || more < 1 || more > 100000000) {
            cli_error("extend: usage: tune extend NAME N (N: how many trials to add, >= 1)");
            return CLI_EXIT_USAGE;
        }
        char *saved[64];
        int n = 0;
        for (int i = 0; i < argc && n < 63; i++)
            if (i != at) saved[n++] = argv[i];
        saved[n] = NULL;
        if (parse_run_opts(n, saved, &ro, &name) != 0) return CLI_EXIT_USAGE;
    } else if (parse_run_opts(argc, argv, &ro, &name) != 0) {
        return CLI_EXIT_USAGE;
    }
    if (!name) {
        cli_error("%s: which experiment? usage: tune %s NAME%s (see tune ls)", argv[0], argv[0],
                  extend ? " N" : "");
        return CLI_EXIT_USAGE;
    }
    if (extend)
        more += ro.more;
    else
        more = ro.more;
    char err[1024];
    store_t *st = NULL;
    if (store_open(ro.db, 0, &st, err, sizeof err) != 0) {
        cli_error("%s", err);
        return CLI_EXIT_FAIL;
    }
    struct exp_row ex;
    int rc = CLI_EXIT_FAIL;
    if (find_exp(st, name, &ex) != 0) goto out;
    if (!ex.found) {
        cli_error("no experiment named \"%s\" in %s (see tune ls --db %s)", name, ro.db, ro.db);
        goto out;
    }
    if (more == 0 && strcmp(ex.status, "FINISHED") == 0) {
        printf("Experiment %s already finished; nothing to resume (tune extend %s N adds "
               "trials).\n",
               name, name);
        rc = CLI_EXIT_OK;
        goto out;
    }
    rc = run_stored(st, &ex, name, &ro, more);
out:
    free(ex.space_json);
    store_close(st);
    return rc;
}

int cli_cmd_resume(int argc, char **argv)
{
    return resume_named(argc, argv, 0);
}

int cli_cmd_extend(int argc, char **argv)
{
    return resume_named(argc, argv, 1);
}
