/* net.c: the data-parallel world of ranks that tune-train did not fork: processes started
 * by srun (SLURM_PROCID/SLURM_NTASKS), a torchrun-style launcher or a test (RANK/
 * WORLD_SIZE), possibly on several machines. They meet at MASTER_ADDR:MASTER_PORT, where
 * rank 0 listens (torch's env:// rendezvous), and run star collectives over those TCP
 * connections: rank 0 adds the ranks' buffers in rank order and sends the sum back, so
 * every rank holds the same bits, the same bits as ddp.c's shared-memory world gives.
 * Every wait is bounded by the collective timeout, and a peer that dies closes its socket,
 * which ends the collective with an error on every rank: no rank is left waiting.
 * Not for: ranks forked by tune-train on one machine (ddp.c's shared memory is faster). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "train_int.h"

#define NET_MAGIC 0x31504444454e5554ULL /* "TUNEDDP1" */
#define MAX_NET_RANKS 1024

enum { TAG_BARRIER = 1, TAG_BCAST, TAG_SUM, TAG_ALLREDUCE };
static const char *const tag_names[] = {"?", "a barrier", "a broadcast", "a metric sum",
                                        "the gradient all-reduce"};

struct hello { /* a rank's first words to rank 0 */
    uint64_t magic, fingerprint;
    uint32_t rank, world;
};

struct reply { /* rank 0's answer: 0 = welcome, else why not */
    uint32_t status;
    char msg[236];
};

struct hdr { /* in front of every message, to catch ranks that are out of step */
    uint32_t tag;
    uint32_t pad;
    uint64_t len;
};

struct train__net {
    int rank, world;
    int *fd;    /* rank 0: fd[q] is rank q's connection (fd[0] = -1); others: fd[0] = rank 0 */
    int nfd;    /* entries in fd */
    float *tmp; /* rank 0's receive buffer for the all-reduce */
    size_t tmp_cap;
    double timeout_s;
    _Atomic int aborted;
};

/* ---- the environment ------------------------------------------------------------------ */

static int env_int(const char *name, long lo, long hi, long *v, char *err, size_t errlen)
{
    const char *s = getenv(name);
    char *end;
    errno = 0;
    long x = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || x < lo || x > hi) {
        snprintf(err, errlen, "$%s must be a whole number between %ld and %ld, got \"%s\"", name,
                 lo, hi, s ? s : "");
        return TRAIN_EINVAL;
    }
    *v = x;
    return 0;
}

int train__net_env(train__net_env_t *e, char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    e->world = 1;
    const char *rank_v, *size_v, *local_v;
    /* torchrun's names first: they are what a launcher sets on purpose. Under srun, a step's
     * task count is SLURM_STEP_NUM_TASKS; SLURM_NTASKS alone is also what a batch script
     * sees (one process, not a world), hence the preference. */
    if (getenv("RANK") && getenv("WORLD_SIZE")) {
        rank_v = "RANK", size_v = "WORLD_SIZE", local_v = "LOCAL_RANK";
        e->source = "torchrun-style";
    } else if (getenv("SLURM_PROCID") &&
               (getenv("SLURM_STEP_NUM_TASKS") || getenv("SLURM_NTASKS"))) {
        rank_v = "SLURM_PROCID", local_v = "SLURM_LOCALID";
        size_v = getenv("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
        e->source = "Slurm";
    } else {
        return 0;
    }
    long world, rank, local = 0, node = 0;
    int rc;
    if ((rc = env_int(size_v, 1, MAX_NET_RANKS, &world, err, errlen))) return rc;
    if ((rc = env_int(rank_v, 0, world - 1, &rank, err, errlen))) return rc;
    if (getenv(local_v) && (rc = env_int(local_v, 0, MAX_NET_RANKS, &local, err, errlen)))
        return rc;
    if (getenv("SLURM_NODEID") && (rc = env_int("SLURM_NODEID", 0, 1 << 20, &node, err, errlen)))
        return rc;
    e->world = (int)world, e->rank = (int)rank, e->local_rank = (int)local, e->node = (int)node;
    if (world == 1) return 0;
    e->addr = getenv("MASTER_ADDR");
    e->port = getenv("MASTER_PORT");
    if (!e->addr || !*e->addr) {
        const char *nn = getenv("SLURM_NNODES");
        if (nn && atoi(nn) > 1) {
            snprintf(err, errlen,
                     "this is rank %ld of a %ld-rank %s world on %s nodes, but $MASTER_ADDR is "
                     "not set: set it to rank 0's host name, e.g. "
                     "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1)",
                     rank, world, e->source, nn);
            return TRAIN_EINVAL;
        }
        e->addr = "127.0.0.1"; /* every rank is on this machine */
    }
    if (!e->port || !*e->port) {
        snprintf(err, errlen,
                 "this is rank %ld of a %ld-rank %s world, but $MASTER_PORT is not set: set it "
                 "to a free TCP port on rank 0's host (the same on every rank)",
                 rank, world, e->source);
        return TRAIN_EINVAL;
    }
    return 1;
}

/* ---- socket helpers ------------------------------------------------------------------- */

static double deadline_left(double deadline)
{
    return deadline - train__now();
}

/* Sends or receives exactly len bytes on fd before the deadline. 0, or TRAIN_EPEER with
 * err naming the peer rank and what was going on. */
static int xfer(train__net_t *n, int fd, int peer, void *buf, size_t len, int sending,
                double deadline, const char *what, char *err, size_t errlen)
{
    char *p = buf;
    while (len > 0) {
        if (atomic_load(&n->aborted)) {
            snprintf(err, errlen, "stopping %s: this rank is shutting down", what);
            return TRAIN_EPEER;
        }
        ssize_t k = sending ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
                            : recv(fd, p, len, MSG_DONTWAIT);
        if (k > 0) {
            p += k, len -= (size_t)k;
            continue;
        }
        if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            snprintf(err, errlen,
                     "lost the connection to rank %d during %s (%s): that rank has probably "
                     "died",
                     peer, what, k == 0 ? "closed by the peer" : strerror(errno));
            return TRAIN_EPEER;
        }
        double left = deadline_left(deadline);
        if (left <= 0) {
            snprintf(err, errlen,
                     "timed out after %.0f s waiting for rank %d in %s (a peer is stuck or "
                     "dead; see --timeout)",
                     n->timeout_s, peer, what);
            return TRAIN_EPEER;
        }
        struct pollfd pf = {.fd = fd, .events = sending ? POLLOUT : POLLIN};
        int ms = left > 0.2 ? 200 : (int)(left * 1000) + 1; /* wake up to notice an abort */
        poll(&pf, 1, ms);
    }
    return 0;
}

static void tune_socket(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* small messages go at once */
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* Rank 0: listens on every address (a host name may resolve to 127.0.1.1 on Debian, which
 * other machines cannot reach), IPv6 dual-stack where available. */
static int listen_on(const char *port, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM}, *res, *a;
    int g = getaddrinfo(NULL, port, &hints, &res);
    if (g) {
        snprintf(err, errlen, "bad $MASTER_PORT \"%s\": %s", port, gai_strerror(g));
        return TRAIN_EINVAL;
    }
    int fd = -1, saved = 0;
    for (int pass = 0; pass < 2 && fd < 0; pass++) /* IPv6 (dual-stack) first, then IPv4 */
        for (a = res; a && fd < 0; a = a->ai_next) {
            if ((pass == 0) != (a->ai_family == AF_INET6)) continue;
            fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
            if (fd < 0) continue;
            int one = 1, zero = 0;
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (a->ai_family == AF_INET6)
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
            if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 128) != 0) {
                saved = errno;
                close(fd);
                fd = -1;
            }
        }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "cannot listen on $MASTER_PORT %s: %s", port,
                 strerror(saved ? saved : EADDRNOTAVAIL));
        return TRAIN_ERR;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* Rank 0: accepts and checks the other ranks' hellos until all world-1 are in. */
static int gather_ranks(train__net_t *n, int lfd, const train__net_env_t *e, uint64_t fp,
                        double deadline, char *err, size_t errlen)
{
    int joined = 1;
    while (joined < n->world) {
        double left = deadline_left(deadline);
        if (left <= 0) {
            snprintf(err, errlen,
                     "only %d of %d ranks joined at %s:%s within %.0f s (did every "
                     "rank start, with the same $MASTER_ADDR and $MASTER_PORT? see --timeout)",
                     joined, n->world, e->addr, e->port, n->timeout_s);
            return TRAIN_EPEER;
        }
        struct pollfd pf = {.fd = lfd, .events = POLLIN};
        if (poll(&pf, 1, left > 0.2 ? 200 : (int)(left * 1000) + 1) <= 0) continue;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        tune_socket(fd);
        struct hello h;
        char why[256];
        /* a stranger (port scanner, a stale rank of another run) is dropped, not fatal */
        double hd = train__now() + 5.0 < deadline ? train__now() + 5.0 : deadline;
        if (xfer(n, fd, -1, &h, sizeof h, 0, hd, "the rendezvous", why, sizeof why) != 0 ||
            h.magic != NET_MAGIC) {
            close(fd);
            continue;
        }
        struct reply rp = {0};
        if (h.world != (uint32_t)n->world)
            snprintf(rp.msg, sizeof rp.msg, "rank %u says the world has %u ranks, rank 0 says %d",
                     h.rank, h.world, n->world);
        else if (h.rank == 0 || h.rank >= (uint32_t)n->world || n->fd[h.rank] >= 0)
            snprintf(rp.msg, sizeof rp.msg,
                     "two processes claim rank %u (each rank needs its own rank number)", h.rank);
        else if (h.fingerprint != fp)
            snprintf(rp.msg, sizeof rp.msg,
                     "rank %u was started with other training options than rank 0 (every rank "
                     "needs the same model, batch, seed and optimiser options)",
                     h.rank);
        rp.status = rp.msg[0] != 0;
        int rc = xfer(n, fd, (int)h.rank, &rp, sizeof rp, 1, hd, "the rendezvous", why, sizeof why);
        if (rp.status) {
            close(fd);
            snprintf(err, errlen, "%s", rp.msg);
            return TRAIN_EINVAL;
        }
        if (rc) {
            close(fd);
            continue;
        }
        n->fd[h.rank] = fd;
        joined++;
    }
    return 0;
}

/* Ranks > 0: connects to rank 0 (retrying while it is not up yet) and says hello. */
static int join_rank0(train__net_t *n, const train__net_env_t *e, uint64_t fp, double deadline,
                      char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *a;
    const char *last = "no answer";
    char lastbuf[128];
    for (;;) {
        int g = getaddrinfo(e->addr, e->port, &hints, &res);
        if (g == 0) {
            for (a = res; a; a = a->ai_next) {
                int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
                if (fd < 0) continue;
                if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
                    freeaddrinfo(res);
                    tune_socket(fd);
                    n->fd[0] = fd;
                    struct hello h = {.magic = NET_MAGIC,
                                      .fingerprint = fp,
                                      .rank = (uint32_t)n->rank,
                                      .world = (uint32_t)n->world};
                    struct reply rp;
                    int rc =
                        xfer(n, fd, 0, &h, sizeof h, 1, deadline, "the rendezvous", err, errlen);
                    if (!rc)
                        rc = xfer(n, fd, 0, &rp, sizeof rp, 0, deadline, "the rendezvous", err,
                                  errlen);
                    if (rc) return rc;
                    if (rp.status) {
                        rp.msg[sizeof rp.msg - 1] = 0;
                        snprintf(err, errlen, "refused by rank 0: %s", rp.msg);
                        return TRAIN_EINVAL;
                    }
                    return 0;
                }
                snprintf(lastbuf, sizeof lastbuf, "%s", strerror(errno));
                last = lastbuf;
                close(fd);
            }
            freeaddrinfo(res);
        } else {
            snprintf(lastbuf, sizeof lastbuf, "%s", gai_strerror(g));
            last = lastbuf;
        }
        if (deadline_left(deadline) <= 0) {
            snprintf(err, errlen,
                     "could not reach rank 0 at %s:%s within %.0f s (%s); is rank 0 running? "
                     "see --timeout",
                     e->addr, e->port, n->timeout_s, last);
            return TRAIN_EPEER;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int train__net_open(train__net_t **out, const train__net_env_t *e, uint64_t fingerprint,
                    double timeout_s, char *err, size_t errlen)
{
    train__net_t *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(err, errlen, "out of memory");
        return TRAIN_ERR;
    }
    n->rank = e->rank, n->world = e->world;
    n->timeout_s = timeout_s > 0 ? timeout_s : 300.0;
    n->nfd = e->rank == 0 ? e->world : 1;
    n->fd = malloc(sizeof(int) * (size_t)n->nfd);
    if (!n->fd) {
        free(n);
        snprintf(err, errlen, "out of memory");
        return TRAIN_ERR;
    }
    for (int i = 0; i < n->nfd; i++)
        n->fd[i] = -1;
    double deadline = train__now() + n->timeout_s;
    int rc;
    if (e->rank == 0) {
        int lfd = listen_on(e->port, err, errlen);
        if (lfd < 0) {
            train__net_free(n);
            return lfd;
        }
        rc = gather_ranks(n, lfd, e, fingerprint, deadline, err, errlen);
        close(lfd); /* the port is free again as soon as the world is complete */
    } else {
        rc = join_rank0(n, e, fingerprint, deadline, err, errlen);
    }
    if (rc) {
        train__net_free(n);
        return rc;
    }
    *out = n;
    return 0;
}

void train__net_free(train__net_t *n)
{
    if (!n) return;
    for (int i = 0; i < n->nfd; i++)
        if (n->fd[i] >= 0) close(n->fd[i]);
    free(n->fd);
    free(n->tmp);
    free(n);
}

void train__net_abort(train__net_t *n)
{
    atomic_store(&n->aborted, 1);
    for (int i = 0; i < n->nfd; i++) /* peers see the end of the stream at once */
        if (n->fd[i] >= 0) shutdown(n->fd[i], SHUT_RDWR);
}

int train__net_peer_gone(train__net_t *n)
{
    if (atomic_load(&n->aborted)) return 1;
    for (int i = 0; i < n->nfd; i++) {
        if (n->fd[i] < 0) continue;
        struct pollfd pf = {.fd = n->fd[i], .events = POLLIN};
        if (poll(&pf, 1, 0) <= 0) continue;
        if (pf.revents & (POLLERR | POLLHUP)) return 1;
        char c;
        if ((pf.revents & POLLIN) && recv(n->fd[i], &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) return 1;
    }
    return 0;
}

/* ---- star collectives ------------------------------------------------------------------- */

static int send_msg(train__net_t *n, int q, int tag, const void *buf, size_t len, double dl,
                    char *err, size_t errlen)
{
    struct hdr h = {.tag = (uint32_t)tag, .len = len};
    int fd = n->fd[n->rank == 0 ? q : 0];
    int rc = xfer(n, fd, q, &h, sizeof h, 1, dl, tag_names[tag], err, errlen);
    if (!rc && len) rc = xfer(n, fd, q, (void *)buf, len, 1, dl, tag_names[tag], err, errlen);
    return rc;
}

static int recv_msg(train__net_t *n, int q, int tag, void *buf, size_t len, double dl, char *err,
                    size_t errlen)
{
    struct hdr h;
    int fd = n->fd[n->rank == 0 ? q : 0];
    int rc = xfer(n, fd, q, &h, sizeof h, 0, dl, tag_names[tag], err, errlen);
    if (rc) return rc;
    if (h.tag != (uint32_t)tag || h.len != len) {
        snprintf(err, errlen,
                 "internal error: expected %s of %zu bytes from rank %d, got message %u of %llu "
                 "bytes (ranks out of step)",
                 tag_names[tag], len, q, h.tag, (unsigned long long)h.len);
        return TRAIN_ERR;
    }
    return len ? xfer(n, fd, q, buf, len, 0, dl, tag_names[tag], err, errlen) : 0;
}

int train__net_barrier(train__net_t *n, char *err, size_t errlen)
{
    double dl = train__now() + n->timeout_s;
    int rc = 0;
    if (n->rank != 0)
        return (rc = send_msg(n, 0, TAG_BARRIER, NULL, 0, dl, err, errlen))
                   ? rc
                   : recv_msg(n, 0, TAG_BARRIER, NULL, 0, dl, err, errlen);
    for (int q = 1; q < n->world && !rc; q++)
        rc = recv_msg(n, q, TAG_BARRIER, NULL, 0, dl, err, errlen);
    for (int q = 1; q < n->world && !rc; q++)
        rc = send_msg(n, q, TAG_BARRIER, NULL, 0, dl, err, errlen);
    return rc;
}

int train__net_bcast(train__net_t *n, void *buf, size_t len, int root, char *err, size_t errlen)
{
    double dl = train__now() + n->timeout_s;
    int rc = 0;
    if (root != 0) { /* through rank 0, the hub */
        if (n->rank == root) return send_msg(n, 0, TAG_BCAST, buf, len, dl, err, errlen);
        if (n->rank == 0 && (rc = recv_msg(n, root, TAG_BCAST, buf, len, dl, err, errlen)))
            return rc;
    }
    if (n->rank != 0) return recv_msg(n, 0, TAG_BCAST, buf, len, dl, err, errlen);
    for (int q = 1; q < n->world && !rc; q++)
        if (q != root) rc = send_msg(n, q, TAG_BCAST, buf, len, dl, err, errlen);
    return rc;
}

int train__net_sum(train__net_t *n, double *v, int count, char *err, size_t errlen)
{
    double dl = train__now() + n->timeout_s, in[16];
    size_t len = sizeof(double) * (size_t)count;
    int rc = 0;
    if (count > 16) {
        snprintf(err, errlen, "internal error: a sum of more than 16 numbers");
        return TRAIN_ERR;
    }
    if (n->rank != 0)
        return (rc = send_msg(n, 0, TAG_SUM, v, len, dl, err, errlen))
                   ? rc
                   : recv_msg(n, 0, TAG_SUM, v, len, dl, err, errlen);
    for (int q = 1; q < n->world && !rc; q++) {
        if ((rc = recv_msg(n, q, TAG_SUM, in, len, dl, err, errlen))) break;
        for (int i = 0; i < count; i++)
            v[i] += in[i];
    }
    for (int q = 1; q < n->world && !rc; q++)
        rc = send_msg(n, q, TAG_SUM, v, len, dl, err, errlen);
    return rc;
}

int train__net_allreduce(train__net_t *n, float *buf, size_t count, char *err, size_t errlen)
{
    double dl = train__now() + n->timeout_s;
    size_t len = sizeof(float) * count;
    int rc = 0;
    if (n->rank != 0)
        return (rc = send_msg(n, 0, TAG_ALLREDUCE, buf, len, dl, err, errlen))
                   ? rc
                   : recv_msg(n, 0, TAG_ALLREDUCE, buf, len, dl, err, errlen);
    if (count > n->tmp_cap) {
        free(n->tmp);
        n->tmp_cap = 0;
        if (!(n->tmp = malloc(len))) {
            snprintf(err, errlen, "out of memory for the all-reduce");
            return TRAIN_ERR;
        }
        n->tmp_cap = count;
    }
    /* ranks are received one after the other, so buf = ((s0 + s1) + s2) + ..., the order
     * ddp.c's reduce_chunk uses: N ranks give the same bits however they were started */
    for (int q = 1; q < n->world; q++) {
        if ((rc = recv_msg(n, q, TAG_ALLREDUCE, n->tmp, len, dl, err, errlen))) return rc;
        for (size_t i = 0; i < count; i++)
            buf[i] += n->tmp[i];
    }
    for (int q = 1; q < n->world && !rc; q++)
        rc = send_msg(n, q, TAG_ALLREDUCE, buf, len, dl, err, errlen);
    return rc;
}
