/* tune-slurm-task: what srun runs as each task of a Slurm trial. It sets MASTER_ADDR to
 * the step's first node (tune cannot know it before srun has placed the step; Slurm's
 * address for it when the node's name does not resolve), and RANK, WORLD_SIZE,
 * LOCAL_RANK, NODE_RANK from Slurm's SLURM_PROCID, NTASKS, LOCALID, NODEID; rank 0 tells
 * tune its job, step, node and GPUs on one TUNE_SLURM line; the other ranks' stdout goes
 * to rankN.stdout.log, so only rank 0's result lines count. Then it execs the trial's
 * argv (no shell, and no /bin/sh fallback for files without #!).
 * Not for: anything tune itself does; it is a separate program installed beside tune.
 *
 * usage: tune-slurm-task PROGRAM [ARGS...] */
#include "trial/slurm_int.h"

#include "jsonw/jsonw.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *env_or(const char *a, const char *b, const char *c)
{
    const char *v = getenv(a);
    if ((!v || !*v) && b) v = getenv(b);
    if ((!v || !*v) && c) v = getenv(c);
    return v ? v : "";
}

/* The address of Slurm node `node`, for MASTER_ADDR: its name when the name resolves (the
 * usual case), else the NodeAddr Slurm itself uses to reach it (`scontrol show node`):
 * Slurm's NodeName need not be a host name (NodeHostname/NodeAddr set apart, as on the
 * test cluster's fake nodes ci1, ci2). Every rank asks the same and gets the same answer.
 * Leaves out as it is when neither works. */
static void node_addr(const char *node, char *out, size_t n)
{
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(node, NULL, &hints, &ai) == 0) {
        freeaddrinfo(ai);
        return;
    }
    int p[2];
    if (pipe(p) != 0) return;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], STDOUT_FILENO);
        close(p[0]);
        close(p[1]);
        alarm(15); /* kept across exec: a controller that does not answer costs 15 s at most */
        execlp("scontrol", "scontrol", "-o", "show", "node", node, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return;
    }
    char buf[4096];
    size_t k = 0;
    while (k + 1 < sizeof buf) {
        ssize_t r = read(p[0], buf + k, sizeof buf - 1 - k);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        k += (size_t)r;
    }
    buf[k] = '\0';
    close(p[0]);
    int st = 1;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    const char *a = strstr(buf, " NodeAddr=");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !a) return;
    a += strlen(" NodeAddr=");
    size_t len = strcspn(a, " \n");
    if (len > 0 && len < n) snprintf(out, n, "%.*s", (int)len, a);
}

/* execvp without its /bin/sh retry on ENOEXEC: parameter values are never given to a
 * shell, which is also what the local executor guarantees. */
static int exec_path(char **argv)
{
    const char *prog = argv[0];
    if (strchr(prog, '/')) {
        execv(prog, argv);
        return errno;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/bin:/usr/bin";
    int e = ENOENT, eacces = 0;
    size_t plen = strlen(prog);
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char buf[8192];
        if (len + plen + 2 <= sizeof buf) {
            if (len == 0) {
                buf[0] = '.';
                len = 1;
            } else {
                memcpy(buf, p, len);
            }
            buf[len] = '/';
            memcpy(buf + len + 1, prog, plen + 1);
            execv(buf, argv);
            e = errno;
            if (e == EACCES)
                eacces = 1;
            else if (e != ENOENT && e != ENOTDIR && e != ESTALE && e != ENODEV && e != ETIMEDOUT)
                return e;
        }
        if (!colon) break;
        p = colon + 1;
    }
    return eacces ? EACCES : e;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: tune-slurm-task PROGRAM [ARGS...] (srun runs it for tune)\n");
        return 2;
    }
    const char *procid = env_or("SLURM_PROCID", NULL, NULL);
    int rank = *procid ? atoi(procid) : 0;

    const char *nodelist = env_or("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST");
    char first[256];
    if (trial__slurm_first_host(nodelist, first, sizeof first) == 0) {
        node_addr(first, first, sizeof first);
        setenv("MASTER_ADDR", first, 1);
    }
    /* torch.distributed's env:// names, from Slurm's own (the trial may read either). */
    static const char *const map[][2] = {{"RANK", "SLURM_PROCID"},
                                         {"WORLD_SIZE", "SLURM_NTASKS"},
                                         {"LOCAL_RANK", "SLURM_LOCALID"},
                                         {"NODE_RANK", "SLURM_NODEID"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        const char *v = getenv(map[i][1]);
        if (v && *v) setenv(map[i][0], v, 1);
    }

    if (rank == 0) {
        fputs(TRIAL__SLURM_TAG "{\"job\": ", stdout);
        jsonw_fquote(stdout, env_or("SLURM_JOB_ID", "SLURM_JOBID", NULL), 0);
        fputs(", \"step\": ", stdout);
        jsonw_fquote(stdout, env_or("SLURM_STEP_ID", "SLURM_STEPID", NULL), 0);
        fputs(", \"node\": ", stdout);
        jsonw_fquote(stdout, env_or("SLURMD_NODENAME", NULL, NULL), 0);
        fputs(", \"nodes\": ", stdout);
        jsonw_fquote(stdout, nodelist, 0);
        fputs(", \"gpus\": ", stdout);
        jsonw_fquote(stdout, env_or("CUDA_VISIBLE_DEVICES", NULL, NULL), 0);
        fputs("}\n", stdout);
        fflush(stdout);
    } else {
        /* Only rank 0 reports results: the others' stdout is kept, beside the trial's
         * own logs (the working directory is the trial's), but never read as results. */
        char path[64];
        snprintf(path, sizeof path, "rank%d.stdout.log", rank);
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0666);
        if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) dup2(STDERR_FILENO, STDOUT_FILENO);
        if (fd > STDOUT_FILENO) close(fd);
    }
    int e = exec_path(argv + 1);
    fprintf(stderr, "tune-slurm-task: cannot run \"%s\": %s\n", argv[1], strerror(e));
    return 127;
}
