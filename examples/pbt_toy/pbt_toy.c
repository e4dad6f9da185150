/* pbt_toy: the classic Population Based Training toy, a trial whose best hyperparameter
 * changes during training. Its loss follows noisy SGD's behaviour in one line:
 *     loss <- (1 - lr) * loss + lr * lr
 * a large lr closes the gap fast but settles at a high floor (lr), a small lr settles
 * low but slowly, so the best lr falls as training goes on (an annealing schedule), and
 * no fixed lr is best throughout. It keeps tune's trial contract (docs/pbt.md): a
 * checkpoint each iteration written into $TUNE_CHECKPOINT_DIR and named in the result,
 * and a restart from $TUNE_RESUME_FROM (the loss and iteration it holds) with the lr of
 * its argv. A checkpoint it is told to resume from that it cannot read is an error: a
 * deleted checkpoint fails the trial loudly.
 * Usage: pbt_toy --lr X [--iters N] [--sleep-ms M]. Not for: anything but examples and
 * tests. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    double lr = -1;
    long iters = 60, sleep_ms = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--lr") == 0)
            lr = strtod(argv[i + 1], NULL);
        else if (strcmp(argv[i], "--iters") == 0)
            iters = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--sleep-ms") == 0)
            sleep_ms = strtol(argv[i + 1], NULL, 10);
        else {
            fprintf(stderr, "pbt_toy: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!(lr > 0 && lr < 1)) {
        fprintf(stderr, "pbt_toy: --lr must be in (0, 1)\n");
        return 2;
    }
    double loss = 1.0;
    long it = 0;
    const char *from = getenv("TUNE_RESUME_FROM");
    if (from && *from) {
        FILE *f = fopen(from, "r");
        if (!f || fscanf(f, "%ld %lf", &it, &loss) != 2) {
            fprintf(stderr, "pbt_toy: cannot restore from %s: %s\n", from,
                    f ? "not a checkpoint" : strerror(errno));
            return 3;
        }
        fclose(f);
        fprintf(stderr, "pbt_toy: restored iteration %ld, loss %.17g from %s\n", it, loss, from);
    }
    const char *dir = getenv("TUNE_CHECKPOINT_DIR");
    struct timespec nap = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
    while (it < iters) {
        it++;
        loss = (1 - lr) * loss + lr * lr;
        char ck[4200] = "";
        if (dir) {
            /* a new file each time, written under another name and renamed: a copy (a hard
             * link) of an older one never changes */
            char tmp[4300];
            snprintf(ck, sizeof ck, "%s/ckpt_%06ld", dir, it);
            snprintf(tmp, sizeof tmp, "%s.tmp", ck);
            FILE *f = fopen(tmp, "w");
            if (!f || fprintf(f, "%ld %.17g\n", it, loss) < 0 || fclose(f) != 0 ||
                rename(tmp, ck) != 0) {
                fprintf(stderr, "pbt_toy: cannot write %s: %s\n", ck, strerror(errno));
                return 4;
            }
        }
        if (ck[0])
            printf("{\"training_iteration\": %ld, \"loss\": %.17g, \"lr\": %.17g, \"checkpoint\": "
                   "\"%s\"}\n",
                   it, loss, lr, ck);
        else
            printf("{\"training_iteration\": %ld, \"loss\": %.17g, \"lr\": %.17g}\n", it, loss, lr);
        fflush(stdout);
        if (sleep_ms > 0) nanosleep(&nap, NULL);
    }
    return 0;
}
