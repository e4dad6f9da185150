/* exec.c: the loop's executor handle (sched_exec_t): what every executor behind
 * sched_exec_ops_t shares, its release. Not for: any executor itself (real processes:
 * trial/exec_proc.c; the simulator's: sim/exec.c; the tests': tests/scripted.h). */
#include <stdlib.h>

#include "scheduler/sched.h"

void sched_exec_free(sched_exec_t *ex)
{
    if (!ex) return;
    if (ex->ops && ex->ops->free) ex->ops->free(ex->self);
    free(ex);
}
