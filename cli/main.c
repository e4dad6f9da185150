/* `tune`: the entry point (usage, --version, the table of commands) and `tune validate`.
 * Each other command has its own file: run/resume/extend run.c, ls/trials/best/query/export
 * query.c, show/plot show.c, report report.c, rm rm.c, simulate simulate.c. Only the cli
 * prints and exits; everything below it returns error codes. */
#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "search/render.h"
#include "search/settings.h"
#include "search/space.h"
#include "trial/trial.h"

static const char usage_text[] =
    "usage: tune <command> [options]\n"
    "\n"
    "commands:\n"
    "  run SPACE.json        run an experiment (live table; results in the database)\n"
    "  resume NAME           continue an interrupted experiment\n"
    "  simulate SPACE.json   replay it on a virtual clock over recorded curves (--table F)\n"
    "  extend NAME N         add N trials to an experiment (the seed's sequence) and run them\n"
    "  validate SPACE.json   check the file and print the first configurations\n"
    "  ls                    list experiments\n"
    "  trials [NAME]         one row per trial, a column per parameter (--json, --sort)\n"
    "  best [NAME]           the best trial by the experiment's metric (--json)\n"
    "  query \"SELECT ...\"    read-only SQL against the database (--json, --csv)\n"
    "  export [NAME]         every result, one row per result (--csv or --json)\n"
    "  show [NAME] TRIAL     one trial: config, status and why, curve, log tail\n"
    "  plot [NAME]           every trial's learning curve in the terminal (--ylim)\n"
    "  report [NAME] -o F    a self-contained HTML report (--ylim)\n"
    "  rm NAME               delete an experiment and its results folder (--yes)\n"
    "\n"
    "NAME may be left out when the database holds one experiment; a name that begins\n"
    "with '-' goes after \"--\" (tune trials -- -x).\n"
    "\n"
    "options for every command:\n"
    "  --db PATH             database file (default: $TUNE_DB, else tune.db in the\n"
    "                        current directory)\n"
    "  --help                help for a command\n"
    "  --version             print the version\n";

/* Finds the value of --db in argv (shared by every command). */
const char *cli_db_path(int argc, char **argv);

/* ---- validate ------------------------------------------------------------------- */
int cli_cmd_validate(int argc, char **argv)
{
    if (cli_help(argc, argv,
                 "usage: tune validate SPACE.json [-n N]\n"
                 "  checks the file and prints the first N configurations (default 5)\n"))
        return CLI_EXIT_OK;
    const char *file = NULL;
    long show = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            show = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) {
            i++;
        } else if (argv[i][0] == '-') {
            cli_error("validate: unknown option %s", argv[i]);
            return CLI_EXIT_USAGE;
        } else if (!file) {
            file = argv[i];
        } else {
            cli_error("validate: one file at a time");
            return CLI_EXIT_USAGE;
        }
    }
    if (!file) {
        cli_error("validate: which file? usage: tune validate SPACE.json");
        return CLI_EXIT_USAGE;
    }
    char err[1024];
    space_t *sp = NULL;
    if (space_load(file, &sp, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return CLI_EXIT_USAGE;
    }
    const space_settings_t *set = space_settings(sp);
    size_t n = space_num_trials(sp);
    printf("%s: ok: experiment \"%s\", %zu trials, scheduler %s", file, set->name, n,
           space_sched_name(set->sched.type));
    if (set->nobjectives > 1) {
        /* every objective, as the live table's header names them */
        for (size_t j = 0; j < set->nobjectives; j++)
            printf("%s %s (%s)", j ? "," : ", objectives", set->metrics[j],
                   space_mode_name(set->modes[j]));
    } else if (set->metric) {
        printf(", metric %s (%s)", set->metric, space_mode_name(set->mode));
    }
    static const char *const cmp[SPACE_NCMP] = SPACE_CMP_NAMES;
    for (size_t j = 0; j < set->nconstraints; j++) {
        const space_constraint_t *c = &set->constraints[j];
        char b[32];
        printf("%s %s %s %s", j ? "," : ", constraints", c->key,
               (unsigned)c->op < SPACE_NCMP ? cmp[c->op] : "?", space_format_number(c->bound, b));
    }
    printf("\n");
    for (size_t i = 0; space_note(sp, i); i++)
        printf("note: %s\n", space_note(sp, i));
    cli_warn_relative_paths(sp, file);
    for (size_t i = 0; i < n && (long)i < show; i++) {
        cJSON *cfg = NULL;
        if (space_sample(sp, i, &cfg, err, sizeof err) != 0) {
            cli_error("%s", err);
            space_free(sp);
            return CLI_EXIT_USAGE;
        }
        char **av = NULL;
        char *js = space_json_print(cfg);
        printf("trial_%05zu %s\n", i, js ? js : "?");
        free(js);
        if (space_render_argv(sp, cfg, "0", "TRIAL_DIR", &av, err, sizeof err) == 0) {
            printf("  argv:");
            for (char **a = av; *a; a++)
                printf(" [%s]", *a);
            printf("\n");
        }
        space_argv_free(av);
        cJSON_Delete(cfg);
    }
    space_free(sp);
    return CLI_EXIT_OK;
}

/* ---- dispatch ------------------------------------------------------------------- */
const char *cli_db_path(int argc, char **argv)
{
    /* After "--" every word is a name, even "--db". */
    for (int i = 1; i + 1 < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--db") == 0) return argv[i + 1];
    const char *env = getenv("TUNE_DB");
    return env && *env ? env : "tune.db";
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("tune %s\n", TUNE_VERSION);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return CLI_EXIT_OK;
    }
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"run", cli_cmd_run},           {"resume", cli_cmd_resume},
                {"validate", cli_cmd_validate}, {"ls", cli_cmd_ls},
                {"trials", cli_cmd_trials},     {"best", cli_cmd_best},
                {"query", cli_cmd_query},       {"export", cli_cmd_export},
                {"show", cli_cmd_show},         {"plot", cli_cmd_plot},
                {"report", cli_cmd_report},     {"rm", cli_cmd_rm},
                {"simulate", cli_cmd_simulate}};
    if (strcmp(cmd, "extend") == 0) return cli_cmd_extend(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(cmd, cmds[i].name) == 0) return cmds[i].fn(argc - 1, argv + 1);
    cli_error("unknown command \"%s\" (see tune --help)", cmd);
    return CLI_EXIT_USAGE;
}
