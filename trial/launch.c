/* launch.c: what tune's side of a launch and the spawner share, below both: how many file
 * descriptors a child may have open, the words for the stage a launch failed at, and the
 * reading of a keeper's status pipe. Not for: starting anything (exec_local.c, spawner.c). */
#include "trial/trial_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int trial__fd_bound(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        return rl.rlim_cur < (1u << 20) ? (int)rl.rlim_cur : (1 << 20);
    return 65536;
}

int trial__launch_error(const trial_spawn_t *sp, int stage, int e, char *err, size_t errlen)
{
    const char *prog = sp->argv[0], *why = strerror(e);
    switch (stage) {
    case TRIAL__FAIL_EXEC:
        trial__errf(err, errlen, "cannot run \"%s\": %s", prog, why);
        return TRIAL_ENOENT;
    case TRIAL__FAIL_CHDIR:
        trial__errf(err, errlen, "cannot enter working directory \"%s\": %s", sp->dir, why);
        return TRIAL_ERR;
    case TRIAL__FAIL_SETPGID:
        trial__errf(err, errlen, "cannot start \"%s\": setpgid: %s", prog, why);
        return TRIAL_ERR;
    case TRIAL__FAIL_PDEATHSIG:
        trial__errf(err, errlen, "cannot start \"%s\": prctl(PR_SET_PDEATHSIG): %s", prog, why);
        return TRIAL_ERR;
    case TRIAL__FAIL_SUBREAPER:
        trial__errf(err, errlen, "cannot start \"%s\": prctl(PR_SET_CHILD_SUBREAPER): %s", prog,
                    why);
        return TRIAL_ERR;
    case TRIAL__FAIL_FORK:
        trial__errf(err, errlen, "cannot start \"%s\": fork: %s", prog, why);
        return TRIAL_ERR;
    case TRIAL__FAIL_NO_PID:
        trial__errf(err, errlen, "cannot start \"%s\": its keeper process ended before starting it",
                    prog);
        return TRIAL_ERR;
    default:
        trial__errf(err, errlen, "cannot start \"%s\": redirecting its stdio: %s", prog, why);
        return TRIAL_ERR;
    }
}

void trial__read_status(int fd, pid_t *trial, int *stage, int *why)
{
    for (;;) {
        int msg[2];
        size_t got = 0;
        while (got < sizeof msg) {
            ssize_t r = read(fd, (char *)msg + got, sizeof msg - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (got < sizeof msg) return; /* EOF: every copy of the write end is closed */
        if (msg[0] == TRIAL__MSG_PID) {
            *trial = (pid_t)msg[1];
        } else if (*stage == 0) {
            *stage = msg[0];
            *why = msg[1];
        }
    }
}
