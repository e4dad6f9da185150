/* slurm_hostlist.c: the first host of a Slurm hostlist ("ci[1-2]" -> "ci1"), which is
 * where a multi-node trial's rank 0 runs and so its MASTER_ADDR. Shared by the executor
 * library and tune-slurm-task, so it depends on libc only.
 * Not for: expanding whole lists (scontrol show hostnames does that). */
#include "trial/slurm_int.h"

#include <string.h>

/* Slurm's hostlist grammar (src/common/hostlist.c): comma-separated entries, each a
 * prefix with bracketed ranges "[a-b,c]" possibly followed by more text and brackets.
 * The first host takes the first entry and, in every bracket, the first number as
 * written (leading zeros kept: "node[007-009]" -> "node007"). */
int trial__slurm_first_host(const char *list, char *out, size_t n)
{
    if (!list || !out || n == 0) return -1;
    out[0] = '\0';
    size_t k = 0;
    int depth = 0;
    int first_in_bracket = 0; /* copying the first number of the current bracket */
    for (const char *s = list; *s; s++) {
        char c = *s;
        if (depth == 0) {
            if (c == ',') break; /* end of the first entry */
            if (c == ']') return -1;
            if (c == '[') {
                depth = 1;
                first_in_bracket = 1;
                continue;
            }
        } else {
            if (c == '[') return -1; /* no nesting in Slurm's grammar */
            if (c == ']') {
                depth = 0;
                continue;
            }
            if (c == ',' || c == '-') first_in_bracket = 0;
            if (!first_in_bracket) continue;
            if (c < '0' || c > '9') return -1;
        }
        if (c == ' ' || c == '\t' || c == '\n') return -1;
        if (k + 1 >= n) return -1;
        out[k++] = c;
    }
    if (depth != 0 || k == 0) {
        out[0] = '\0';
        return -1;
    }
    out[k] = '\0';
    return 0;
}
