/* resumable_trial: a trial that keeps tune's checkpoint contract to the letter, for the
 * tests of interruptions (tests/python/interrupt.py) and of what tune deletes
 * (tests/test_durable.c). Each iteration it saves its state (iteration and loss) as a new
 * file, renamed into place, then reports the result naming it; started with
 * TUNE_RESUME_FROM it restores that state and goes on from the next iteration, and a
 * checkpoint it cannot read fails it loudly (exit 3). Its loss follows pbt_toy's recurrence
 * loss <- (1 - lr) * loss + lr * lr, so a curve depends only on lr and the iteration: every
 * result says which iteration its process started from ("resumed_from", 0 for scratch),
 * and --reference prints the uninterrupted curve the same arithmetic gives.
 * Usage: resumable_trial --lr X [--iters N] [--sleep-ms M] [--file] [--tag T]
 *                        [--name-at K:TEXT]... [--symlink NAME:TARGET]... [--reference]
 *   --file             one checkpoint file, TUNE_TRIAL_DIR/checkpoint, never named in results
 *                      (tune finds it by its name): else TUNE_CHECKPOINT_DIR/ckpt_NNNNNN, named
 *   --name-at K:TEXT   at iteration K name TEXT as the checkpoint instead (a hostile trial);
 *                      K 0: at every iteration
 *   --symlink N:T      make symlink N in the trial's folder pointing at T, at the start
 *   --tag T            ignored: marks the process, so that a test can count what is left
 *   --hold-while PATH  restoring, it waits while PATH exists (at most 5 minutes): a window
 *                      for an interruption while it loads, which the test opens and closes
 *   --check-config     reports once whether TUNE_CONFIG (or the TUNE_CONFIG_FILE tune writes
 *                      for a long one) is whole JSON, and the length of its array "xs"
 * Not for: anything outside tests. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define MAX_NAMED 16

/* The configuration as tune handed it over, whole or not: one result. */
static int check_config(void)
{
    const char *env = getenv("TUNE_CONFIG"), *file = getenv("TUNE_CONFIG_FILE");
    char *text = NULL;
    if (!env && file) {
        FILE *f = fopen(file, "rb");
        if (f) {
            fseek(f, 0, SEEK_END);
            long n = ftell(f);
            fseek(f, 0, SEEK_SET);
            text = malloc((size_t)n + 1);
            size_t k = text ? fread(text, 1, (size_t)n, f) : 0;
            if (text) text[k] = 0;
            fclose(f);
        }
    }
    const char *src = env ? env : text ? text : "";
    cJSON *c = cJSON_Parse(src);
    const cJSON *xs = cJSON_GetObjectItemCaseSensitive(c, "xs");
    printf("{\"training_iteration\": 1, \"loss\": 0, \"config_valid\": %d, \"xs\": %d, "
           "\"config_bytes\": %zu, \"from_file\": %d}\n",
           c != NULL, cJSON_IsArray(xs) ? cJSON_GetArraySize(xs) : -1, strlen(src), !env && file);
    cJSON_Delete(c);
    free(text);
    return 0;
}

int main(int argc, char **argv)
{
    double lr = -1;
    long iters = 30, sleep_ms = 0;
    int one_file = 0, reference = 0, nnamed = 0;
    const char *hold = NULL;
    long named_at[MAX_NAMED];
    const char *named_text[MAX_NAMED];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--file") == 0) {
            one_file = 1;
        } else if (strcmp(a, "--reference") == 0) {
            reference = 1;
        } else if (strcmp(a, "--check-config") == 0) {
            return check_config();
        } else if (!v) {
            fprintf(stderr, "resumable_trial: %s needs a value\n", a);
            return 2;
        } else if (strcmp(a, "--lr") == 0) {
            lr = strtod(v, NULL), i++;
        } else if (strcmp(a, "--iters") == 0) {
            iters = strtol(v, NULL, 10), i++;
        } else if (strcmp(a, "--sleep-ms") == 0) {
            sleep_ms = strtol(v, NULL, 10), i++;
        } else if (strcmp(a, "--tag") == 0) {
            i++;
        } else if (strcmp(a, "--hold-while") == 0) {
            hold = v, i++;
        } else if (strcmp(a, "--name-at") == 0 && strchr(v, ':') && nnamed < MAX_NAMED) {
            named_at[nnamed] = strtol(v, NULL, 10);
            named_text[nnamed++] = strchr(v, ':') + 1;
            i++;
        } else if (strcmp(a, "--symlink") == 0 && strchr(v, ':')) {
            const char *dir = getenv("TUNE_TRIAL_DIR");
            char name[4096], path[8300];
            snprintf(name, sizeof name, "%.*s", (int)(strchr(v, ':') - v), v);
            snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", name);
            if (symlink(strchr(v, ':') + 1, path) != 0 && errno != EEXIST) {
                fprintf(stderr, "resumable_trial: symlink %s: %s\n", path, strerror(errno));
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "resumable_trial: unknown option %s\n", a);
            return 2;
        }
    }
    if (!(lr > 0 && lr < 1)) {
        fprintf(stderr, "resumable_trial: --lr must be in (0, 1)\n");
        return 2;
    }
    double loss = 1.0;
    long it = 0, from = 0;
    const char *resume = getenv("TUNE_RESUME_FROM");
    if (!reference && resume && *resume) {
        FILE *f = fopen(resume, "r");
        if (!f || fscanf(f, "%ld %lf", &it, &loss) != 2) {
            fprintf(stderr, "resumable_trial: cannot restore from %s: %s\n", resume,
                    f ? "not a checkpoint" : strerror(errno));
            return 3;
        }
        fclose(f);
        from = it;
        struct timespec tick = {0, 10 * 1000000L};
        for (int k = 0; hold && k < 30000 && access(hold, F_OK) == 0; k++)
            nanosleep(&tick, NULL);
    }
    const char *ckdir = getenv("TUNE_CHECKPOINT_DIR"), *tdir = getenv("TUNE_TRIAL_DIR");
    struct timespec nap = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
    while (it < iters) {
        it++;
        loss = (1 - lr) * loss + lr * lr;
        if (reference) {
            printf("%ld %.17g\n", it, loss);
            continue;
        }
        char ck[4300] = "", tmp[4400];
        if (one_file ? tdir != NULL : ckdir != NULL) {
            if (one_file)
                snprintf(ck, sizeof ck, "%s/checkpoint", tdir);
            else
                snprintf(ck, sizeof ck, "%s/ckpt_%06ld", ckdir, it);
            snprintf(tmp, sizeof tmp, "%s.tmp", ck);
            FILE *f = fopen(tmp, "w");
            if (!f || fprintf(f, "%ld %.17g\n", it, loss) < 0 || fclose(f) != 0 ||
                rename(tmp, ck) != 0) {
                fprintf(stderr, "resumable_trial: cannot write %s: %s\n", ck, strerror(errno));
                return 4;
            }
        }
        const char *name = one_file ? NULL : ck[0] ? ck : NULL;
        for (int k = 0; k < nnamed; k++)
            if (named_at[k] == it || named_at[k] == 0) name = named_text[k];
        printf(
            "{\"training_iteration\": %ld, \"loss\": %.17g, \"lr\": %.17g, \"resumed_from\": %ld",
            it, loss, lr, from);
        if (name) printf(", \"checkpoint\": \"%s\"", name);
        printf("}\n");
        fflush(stdout);
        if (sleep_ms > 0) nanosleep(&nap, NULL);
    }
    return 0;
}
