/* group.c: a trial's process group signalled and the trial reaped: through the spawner
 * that started it, or directly (its keeper, tune's own child). Not for: starting a trial
 * (exec_local.c) or the spawner itself (spawner.c). */
#include "trial/trial_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int trial__kill_group(trial_proc_t *p, int sig)
{
    if (p->sv) return trial__spawner_signal(p->sv, p, sig);
    /* kill(0) and kill(-1) would hit tune's own group or every process we may signal. */
    if (p->pid <= 1) return TRIAL_EINVAL;
    /* The keeper is our unreaped child, so its pid is safe to signal; the trial's group id
     * is only safe while the keeper has not reaped the trial, which only the keeper knows. */
    union sigval v;
    v.sival_int = sig;
    if (sigqueue(p->pid, TRIAL__RELAY_SIG, v) == 0 || errno == ESRCH) return TRIAL_OK;
    /* The queue is full (RLIMIT_SIGPENDING). A kill cannot wait: the keeper goes, and the
     * trial with it (its parent-death signal). */
    if (errno == EAGAIN && sig == SIGKILL && kill(p->pid, SIGKILL) == 0) return TRIAL_OK;
    return TRIAL_ERR;
}

int trial__reap(trial_proc_t *p, int block)
{
    if (p->reaped) return 1;
    if (p->sv) return trial__spawner_reap(p->sv, p, block);
    int status = 0;
    pid_t w;
    do
        w = waitpid(p->pid, &status, block ? 0 : WNOHANG);
    while (w < 0 && errno == EINTR);
    if (w < 0) return TRIAL_ERR;
    if (w == 0) return 0;
    trial__set_exit(p, status);
    return 1;
}
