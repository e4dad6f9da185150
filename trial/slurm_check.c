/* slurm_check.c: the Slurm executor's checks before a run: a request (ranks, GPUs, CPUs
 * per trial) against what Slurm has, the partitions sinfo lists (their GRES) or the
 * allocation scontrol shows, so that what can never run is an error before anything runs.
 * Not for: starting, reading or stopping trials (exec_slurm.c) or running the commands
 * themselves (slurm_cmd.c). */
#include "trial/slurm_int.h"
#include "trial/trial_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GPUs in a gres string: "gpu:4", "gpu:a100:4(S:0-1)", "gpu:a100:2,gpu:v100:1" (3),
 * "(null)" (0). */
static int gres_gpus(const char *g)
{
    int total = 0;
    const char *s = g;
    while (s && *s) {
        size_t len = 0;
        int depth = 0;
        while (s[len] && (depth > 0 || s[len] != ',')) {
            if (s[len] == '(') depth++;
            if (s[len] == ')' && depth > 0) depth--;
            len++;
        }
        if (strncmp(s, "gpu", 3) == 0 && (len == 3 || s[3] == ':' || s[3] == '(')) {
            size_t end = strcspn(s, "(");
            if (end > len) end = len;
            const char *c = s + end;
            while (c > s && c[-1] >= '0' && c[-1] <= '9')
                c--;
            int count = (c < s + end && c > s && c[-1] == ':') ? atoi(c) : 1;
            total += count;
        }
        s += len;
        if (*s == ',') s++;
    }
    return total;
}

/* The value after "Key=" in scontrol's one-line output, up to the next space. */
static int field(const char *s, const char *key, char *out, size_t n)
{
    size_t kl = strlen(key);
    for (const char *p = s; (p = strstr(p, key)); p += kl) {
        if ((p == s || p[-1] == ' ' || p[-1] == '\n') && p[kl] == '=') {
            size_t len = strcspn(p + kl + 1, " \n");
            snprintf(out, n, "%.*s", (int)len, p + kl + 1);
            return 0;
        }
    }
    out[0] = '\0';
    return -1;
}

static int check_allocation(const trial__slurm_site_t *x, int ranks, int G, int cpus,
                            trial_capacity_t *cap, char *err, size_t errlen)
{
    char *argv[] = {x->scontrol, "-d", "-o", "show", "job", x->allocation, NULL};
    char *out = NULL, e2[400];
    if (trial__slurm_cmd(argv, &out, e2, sizeof e2) != 0) {
        trial__errf(err, errlen, "allocation %s: %s", x->allocation, e2);
        return TRIAL_EINVAL;
    }
    char state[64], ncpus[32], gres[256];
    field(out, "JobState", state, sizeof state);
    field(out, "NumCPUs", ncpus, sizeof ncpus);
    field(out, "JOB_GRES", gres, sizeof gres);
    free(out);
    if (strcmp(state, "RUNNING") != 0) {
        trial__errf(err, errlen,
                    "allocation %s is %s, not RUNNING: tune starts its trials as steps of a "
                    "running allocation only (see squeue -j %s)",
                    x->allocation, state[0] ? state : "in an unknown state", x->allocation);
        return TRIAL_EINVAL;
    }
    cap->known = 1;
    cap->cpus = atoi(ncpus);
    cap->gpus = gres_gpus(gres);
    if (!x->u->cpus && cpus * ranks > cap->cpus) {
        trial__errf(err, errlen, "a trial asks for %d CPU(s) but allocation %s has %d",
                    cpus * ranks, x->allocation, cap->cpus);
        return TRIAL_EINVAL;
    }
    if (!x->u->gpus && G > cap->gpus) {
        trial__errf(err, errlen, "a trial asks for %d GPU(s) but allocation %s has %d", G,
                    x->allocation, cap->gpus);
        return TRIAL_EINVAL;
    }
    return TRIAL_OK;
}

/* Is name one of list's entries? Lists are srun's "a,b" or the "a, b" kept for messages:
 * an entry starts after a comma and optional spaces (partition names have no spaces). */
static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    if (n == 0) return 0;
    for (const char *p = list; (p = strstr(p, name)); p += n) {
        const char *b = p;
        while (b > list && b[-1] == ' ')
            b--;
        if ((b == list || b[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
    }
    return 0;
}

static int check_partitions(const trial__slurm_site_t *x, int ranks, int G, int cpus, char *err,
                            size_t errlen)
{
    char *argv[] = {x->sinfo, "-h", "-o", "%P|%a|%c|%G|%D", NULL};
    char *out = NULL, e2[400];
    if (trial__slurm_cmd(argv, &out, e2, sizeof e2) != 0) {
        trial__errf(err, errlen, "cannot ask Slurm about its partitions: %s", e2);
        return TRIAL_EINVAL;
    }
    char want[256] = "", names[512] = "";
    if (x->u->partition) snprintf(want, sizeof want, "%s", x->u->partition);
    int maxg = 0, maxc = 0, nodes = 0, found = 0;
    char state[32] = "";
    /* Two passes: the default partition is known only once every line has been seen. */
    for (int pass = 0; pass < 2; pass++) {
        for (char *line = out; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl) *nl = '\0';
            char part[128], avail[32], cpu[32], gres[256];
            int cnt = 0;
            if (sscanf(line, "%127[^|]|%31[^|]|%31[^|]|%255[^|]|%d", part, avail, cpu, gres,
                       &cnt) == 5) {
                size_t pl = strlen(part);
                int dflt = pl > 0 && part[pl - 1] == '*';
                if (dflt) part[pl - 1] = '\0';
                if (pass == 0) {
                    if (!in_list(names, part) && strlen(names) + pl + 3 < sizeof names)
                        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                                 names[0] ? ", " : "", part);
                    if (dflt && !want[0]) snprintf(want, sizeof want, "%s", part);
                } else if (in_list(want, part)) {
                    found++;
                    int g = gres_gpus(gres), c = atoi(cpu);
                    if (g > maxg) maxg = g;
                    if (c > maxc) maxc = c;
                    nodes += cnt;
                    if (strcmp(avail, "up") != 0) snprintf(state, sizeof state, "%s", avail);
                }
            }
            if (!nl) break;
            *nl = '\n';
            line = nl + 1;
        }
    }
    free(out);
    if (!want[0]) {
        trial__errf(err, errlen,
                    "Slurm has no default partition: name one in executor.srun_args, e.g. "
                    "[\"--partition=NAME\"] (partitions: %s)",
                    names);
        return TRIAL_EINVAL;
    }
    /* Every partition asked for must exist (srun takes a comma-separated list). */
    for (char *tok = want; *tok;) {
        size_t len = strcspn(tok, ",");
        char one[128];
        snprintf(one, sizeof one, "%.*s", (int)len, tok);
        if (!in_list(names, one)) {
            trial__errf(err, errlen, "Slurm has no partition \"%s\" (partitions: %s)", one, names);
            return TRIAL_EINVAL;
        }
        tok += len;
        if (*tok == ',') tok++;
    }
    if (!found) {
        trial__errf(err, errlen, "Slurm lists no nodes in partition %s", want);
        return TRIAL_EINVAL;
    }
    if (state[0]) {
        trial__errf(err, errlen, "Slurm partition %s is %s: its jobs would never start", want,
                    state);
        return TRIAL_EINVAL;
    }
    if (!x->u->cpus && cpus > maxc) {
        trial__errf(err, errlen,
                    "a trial asks for %d CPUs per process but the largest node of partition "
                    "%s has %d",
                    cpus, want, maxc);
        return TRIAL_EINVAL;
    }
    if (x->u->gpus || G == 0) return TRIAL_OK;
    if (maxg == 0) {
        trial__errf(err, errlen,
                    "a trial asks for %d GPU(s) but partition %s has no GPUs (no gres gpu in "
                    "sinfo)",
                    G, want);
        return TRIAL_EINVAL;
    }
    /* Per rank when the GPUs split evenly over ranks (--gpus-per-task), else all on the
     * nodes the job may span (one node for a single process). */
    int per = ranks > 1 && G % ranks == 0 ? G / ranks : G;
    int span = ranks > 1 && G % ranks != 0 ? (x->u->nodes > 0 ? x->u->nodes : nodes) : 1;
    if (per > maxg * span) {
        trial__errf(err, errlen,
                    "a trial asks for %d GPU(s)%s but the largest node of partition %s has %d", per,
                    ranks > 1 && G % ranks == 0 ? " per rank" : "", want, maxg);
        return TRIAL_EINVAL;
    }
    return TRIAL_OK;
}

int trial__slurm_check(const trial__slurm_site_t *x, int ranks, double gpus, int cpus,
                       trial_capacity_t *cap, char *err, size_t errlen)
{
    if (!(gpus >= 0) || gpus != floor(gpus) || gpus > 1e6) {
        trial__errf(err, errlen,
                    "Slurm hands out whole GPUs: gpus_per_trial %g cannot be asked for (use 0 "
                    "or a whole number with the slurm executor)",
                    gpus);
        return TRIAL_EINVAL;
    }
    if (x->u->ntasks > 0) ranks = x->u->ntasks;
    if (ranks < 1) ranks = 1;
    if (cpus < 1) cpus = 1;
    cap->known = 1;
    cap->gpus = cap->cpus = -1; /* per-trial jobs: Slurm queues what does not fit */
    if (x->allocation) return check_allocation(x, ranks, (int)gpus, cpus, cap, err, errlen);
    return check_partitions(x, ranks, (int)gpus, cpus, err, errlen);
}
