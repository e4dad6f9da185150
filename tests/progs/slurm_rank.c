/* slurm_rank: a trial program for the Slurm tests. Every rank reports, as JSON result
 * lines, where it runs as Slurm and tune-slurm-task told it (SLURM_PROCID, SLURM_NTASKS,
 * SLURM_LOCALID, SLURM_NODEID, MASTER_ADDR, RANK...), so a test can check that only rank
 * 0's lines count and that the others landed in rankN.stdout.log. It can also fail on one
 * rank, or stay silent for a while (to exercise -K1 and the watchdog).
 * Not for: anything outside tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env(const char *k)
{
    const char *v = getenv(k);
    return v ? v : "";
}

int main(int argc, char **argv)
{
    long iters = 3, sleep_ms = 0, fail_rank = -1, quiet_s = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--iters"))
            iters = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--sleep-ms"))
            sleep_ms = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--fail-rank"))
            fail_rank = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--quiet-s"))
            quiet_s = atol(argv[i + 1]);
    }
    long rank = atol(env("SLURM_PROCID"));
    if (rank == fail_rank) {
        fprintf(stderr, "slurm_rank: rank %ld failing on purpose\n", rank);
        return 3;
    }
    if (quiet_s > 0) sleep((unsigned)quiet_s);
    for (long t = 1; t <= iters; t++) {
        if (sleep_ms > 0) usleep((useconds_t)sleep_ms * 1000);
        printf("{\"training_iteration\": %ld, \"loss\": %ld, \"rank\": \"%s\", \"world\": \"%s\", "
               "\"local\": \"%s\", \"node_id\": \"%s\", \"node\": \"%s\", \"master\": \"%s\", "
               "\"RANK\": \"%s\", \"WORLD_SIZE\": \"%s\", \"LOCAL_RANK\": \"%s\"}\n",
               t, rank, env("SLURM_PROCID"), env("SLURM_NTASKS"), env("SLURM_LOCALID"),
               env("SLURM_NODEID"), env("SLURMD_NODENAME"), env("MASTER_ADDR"), env("RANK"),
               env("WORLD_SIZE"), env("LOCAL_RANK"));
        fflush(stdout);
    }
    return 0;
}
