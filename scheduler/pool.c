/* The resource pool: hands out slices of GPUs (whole devices or 1/k shares) and CPU
 * cores, and takes them back. Pure accounting: nothing here touches a device, and the
 * pool does not know which trial holds what (the loop keeps each trial's slice).
 *
 * Capacity is counted in millionths (ppm) of a device so that k shares of
 * floor(1000000/k) always add up to at most one device. A slice is taken whole or not
 * at all. Placement, in the spirit of Ray's placement groups and of Slurm's
 * topology-aware GPU selection:
 *  - a 1/k share goes to the most used device that still has room (best fit), so
 *    shares pack together and whole devices stay free for whole-device trials;
 *  - n whole devices (one trial's DDP world) are n completely free devices, preferably
 *    all peers of each other (sched_pool_set_peer) and contiguous, else contiguous,
 *    else any; among equal choices the smallest run of free devices is used, so that
 *    long runs stay whole for larger requests.
 * Not for: detecting devices (gpus.c) or deciding which trial runs next (loop.c). */
#include "scheduler/sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PPM 1000000u
#define POOL_MAX_SHARE 1000 /* at most 1000 trials on one device: 1/k stays exact in ppm */

struct sched_pool {
    int n;
    int *ids;            /* as given: CUDA_VISIBLE_DEVICES names */
    uint32_t *used;      /* ppm in use per device, never above PPM */
    unsigned char *peer; /* n*n, symmetric */
    int any_peer;        /* some pair was declared: peer sets are preferred */
    int cpus_total, cpus_used;
    int *runlen, *pick; /* scratch for placement, n each */
};

/* A request in the pool's terms: ndev devices of share ppm each (ndev 0: CPU only). */
struct request {
    int ndev;
    uint32_t share;
    int k; /* 1/k share; 1 for whole devices */
};

/* gpus must be 0, a whole number, or 1/k: anything else gets a message. 0.333 is
 * taken as 1/3 (a relative slack of 0.5%), since JSON cannot write 1/3 exactly. */
static int parse_request(double g, struct request *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (!(g >= 0) || !isfinite(g)) {
        snprintf(err, errlen, "gpus_per_trial must be a number >= 0 (got %g)", g);
        return SCHED_ENOFIT;
    }
    if (g == 0) return SCHED_OK;
    if (g >= 1) {
        double n = round(g);
        if (fabs(g - n) > 1e-9) {
            snprintf(err, errlen,
                     "gpus_per_trial %g must be 0, a whole number, or 1/k such as 0.5 or 0.25", g);
            return SCHED_ENOFIT;
        }
        if (n > SCHED_MAX_SLICE_GPUS) {
            snprintf(err, errlen, "gpus_per_trial %g is more than the %d GPUs one trial may use", g,
                     SCHED_MAX_SLICE_GPUS);
            return SCHED_ENOFIT;
        }
        r->ndev = (int)n;
        r->share = PPM;
        r->k = 1;
        return SCHED_OK;
    }
    double k = round(1 / g);
    if (k > POOL_MAX_SHARE) {
        snprintf(err, errlen, "gpus_per_trial %g: at most %d trials can share one GPU", g,
                 POOL_MAX_SHARE);
        return SCHED_ENOFIT;
    }
    if (fabs(g * k - 1) > 5e-3) {
        snprintf(err, errlen,
                 "gpus_per_trial %g must be 0, a whole number, or 1/k such as 0.5 or 0.25", g);
        return SCHED_ENOFIT;
    }
    r->ndev = 1;
    r->k = (int)k;
    r->share = PPM / (uint32_t)r->k;
    return SCHED_OK;
}

int sched_pool_new(const int *gpu_ids, int ngpus, int cpus, sched_pool_t **out, char *err,
                   size_t errlen)
{
    if (ngpus < 0 || (ngpus > 0 && !gpu_ids)) {
        snprintf(err, errlen, "GPU pool: %d GPUs given without a list of ids", ngpus);
        return SCHED_EINVAL;
    }
    if (cpus < 0) {
        snprintf(err, errlen, "GPU pool: the number of CPUs must be >= 0 (got %d)", cpus);
        return SCHED_EINVAL;
    }
    for (int i = 0; i < ngpus; i++) {
        if (gpu_ids[i] < 0) {
            snprintf(err, errlen, "GPU pool: GPU id %d is not valid (ids are >= 0)", gpu_ids[i]);
            return SCHED_EINVAL;
        }
        for (int j = 0; j < i; j++)
            if (gpu_ids[j] == gpu_ids[i]) {
                snprintf(err, errlen, "GPU pool: GPU %d is listed twice", gpu_ids[i]);
                return SCHED_EINVAL;
            }
    }
    sched_pool_t *p = calloc(1, sizeof *p);
    if (!p) goto nomem;
    p->n = ngpus;
    p->cpus_total = cpus;
    size_t n = ngpus ? (size_t)ngpus : 1;
    p->ids = calloc(n, sizeof *p->ids);
    p->used = calloc(n, sizeof *p->used);
    p->peer = calloc(n * n, 1);
    p->runlen = calloc(n, sizeof *p->runlen);
    p->pick = calloc(n, sizeof *p->pick);
    if (!p->ids || !p->used || !p->peer || !p->runlen || !p->pick) goto nomem;
    if (ngpus) memcpy(p->ids, gpu_ids, (size_t)ngpus * sizeof *p->ids);
    *out = p;
    return SCHED_OK;
nomem:
    sched_pool_free(p);
    snprintf(err, errlen, "GPU pool: out of memory");
    return SCHED_ENOMEM;
}

void sched_pool_free(sched_pool_t *p)
{
    if (!p) return;
    free(p->ids);
    free(p->used);
    free(p->peer);
    free(p->runlen);
    free(p->pick);
    free(p);
}

void sched_pool_set_peer(sched_pool_t *p, int a, int b)
{
    if (a < 0 || b < 0 || a >= p->n || b >= p->n || a == b) return;
    p->peer[a * p->n + b] = p->peer[b * p->n + a] = 1;
    p->any_peer = 1;
}

/* "0,1,2" from the pool's ids of devices idx[0..n) (of devices 0..n-1 when idx is
 * NULL); always NUL-terminated. */
static void join_ids(const sched_pool_t *p, const int *idx, int n, char *buf, size_t size)
{
    if (size == 0) return;
    buf[0] = '\0';
    size_t len = 0;
    for (int i = 0; i < n && len < size; i++) {
        int w = snprintf(buf + len, size - len, i ? ",%d" : "%d", p->ids[idx ? idx[i] : i]);
        if (w < 0) break;
        len += (size_t)w;
    }
}

int sched_pool_check(const sched_pool_t *p, double gpus, int cpus, char *err, size_t errlen)
{
    struct request r;
    if (parse_request(gpus, &r, err, errlen) != 0) return SCHED_ENOFIT;
    if (r.ndev > 0 && p->n == 0) {
        snprintf(err, errlen, "gpus_per_trial %g needs a GPU but none is available", gpus);
        return SCHED_ENOFIT;
    }
    if (r.ndev > p->n) {
        char list[256];
        join_ids(p, NULL, p->n, list, sizeof list);
        snprintf(err, errlen, "gpus_per_trial %g needs %d GPUs but only %d are available (GPUs %s)",
                 gpus, r.ndev, p->n, list);
        return SCHED_ENOFIT;
    }
    if (cpus < 0) {
        snprintf(err, errlen, "cpus_per_trial must be >= 0 (got %d)", cpus);
        return SCHED_ENOFIT;
    }
    if (cpus > p->cpus_total) {
        snprintf(err, errlen, "cpus_per_trial %d needs %d CPUs but only %d are available", cpus,
                 cpus, p->cpus_total);
        return SCHED_ENOFIT;
    }
    return SCHED_OK;
}

/* runlen[i]: length of the run of completely free devices that contains i (0 if i is
 * in use). */
static void free_runs(sched_pool_t *p)
{
    for (int i = 0; i < p->n;) {
        if (p->used[i]) {
            p->runlen[i++] = 0;
            continue;
        }
        int j = i;
        while (j < p->n && !p->used[j])
            j++;
        for (int x = i; x < j; x++)
            p->runlen[x] = j - i;
        i = j;
    }
}

static int all_peers(const sched_pool_t *p, const int *idx, int n)
{
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (!p->peer[idx[a] * p->n + idx[b]]) return 0;
    return 1;
}

/* One device for a 1/k share: the most used one that still has room (best fit); among
 * free devices the one in the shortest free run. -1 if none has room. */
static int place_share(sched_pool_t *p, uint32_t share)
{
    int best = -1;
    for (int i = 0; i < p->n; i++) {
        if (p->used[i] + share > PPM) continue;
        if (best < 0 || p->used[i] > p->used[best] ||
            (p->used[i] == 0 && p->used[best] == 0 && p->runlen[i] < p->runlen[best]))
            best = i;
    }
    return best;
}

/* n completely free devices into p->pick, ascending. 0 or SCHED_EAGAIN. Order of
 * preference: a contiguous set of peers, any set of peers, a contiguous set, any set;
 * ties go to the shortest free run, then the lowest index. */
static int place_whole(sched_pool_t *p, int n)
{
    int nfree = 0;
    for (int i = 0; i < p->n; i++)
        nfree += p->used[i] == 0;
    if (nfree < n) return SCHED_EAGAIN;

    /* Contiguous windows [s, s+n) of free devices: each lies in one free run. */
    int best = -1, best_peer = 0, best_run = 0;
    for (int s = 0; s + n <= p->n; s++) {
        if (p->runlen[s] == 0) continue;
        int ok = 1;
        for (int i = s; i < s + n && ok; i++)
            ok = p->used[i] == 0;
        if (!ok) continue;
        for (int i = 0; i < n; i++)
            p->pick[i] = s + i;
        int peer = !p->any_peer || n == 1 || all_peers(p, p->pick, n);
        if (best < 0 || peer > best_peer || (peer == best_peer && p->runlen[s] < best_run)) {
            best = s;
            best_peer = peer;
            best_run = p->runlen[s];
        }
    }
    if (best >= 0 && best_peer) goto window;

    /* Not contiguous but all peers: grow a set greedily from each free device. */
    if (p->any_peer && n > 1) {
        for (int seed = 0; seed < p->n; seed++) {
            if (p->used[seed]) continue;
            int k = 0;
            p->pick[k++] = seed;
            for (int j = 0; j < p->n && k < n; j++) {
                if (j == seed || p->used[j]) continue;
                int ok = 1;
                for (int x = 0; x < k && ok; x++)
                    ok = p->peer[p->pick[x] * p->n + j];
                if (ok) p->pick[k++] = j;
            }
            if (k == n) {
                for (int a = 1; a < n; a++) /* ascending, as a device list reads best */
                    for (int b = a; b > 0 && p->pick[b - 1] > p->pick[b]; b--) {
                        int t = p->pick[b];
                        p->pick[b] = p->pick[b - 1];
                        p->pick[b - 1] = t;
                    }
                return SCHED_OK;
            }
        }
    }
    if (best >= 0) goto window;

    int k = 0;
    for (int i = 0; i < p->n && k < n; i++)
        if (p->used[i] == 0) p->pick[k++] = i;
    return SCHED_OK;
window:
    for (int i = 0; i < n; i++)
        p->pick[i] = best + i;
    return SCHED_OK;
}

int sched_pool_acquire(sched_pool_t *p, double gpus, int cpus, sched_slice_t *out)
{
    struct request r;
    char err[128]; /* unread: a size that fits the messages keeps -O3 from warning */
    if (parse_request(gpus, &r, err, sizeof err) != 0 || r.ndev > p->n || cpus < 0 ||
        cpus > p->cpus_total)
        return SCHED_ENOFIT;
    if (cpus > p->cpus_total - p->cpus_used) return SCHED_EAGAIN;
    free_runs(p);
    if (r.ndev == 1 && r.share < PPM) {
        int d = place_share(p, r.share);
        if (d < 0) return SCHED_EAGAIN;
        p->pick[0] = d;
    } else if (r.ndev > 0 && place_whole(p, r.ndev) != 0) {
        return SCHED_EAGAIN;
    }
    memset(out, 0, sizeof *out);
    out->ngpus = r.ndev;
    out->share_ppm = r.ndev ? r.share : 0;
    out->cpus = cpus;
    for (int i = 0; i < r.ndev; i++) {
        out->gpus[i] = p->pick[i];
        p->used[p->pick[i]] += r.share;
    }
    p->cpus_used += cpus;
    return SCHED_OK;
}

void sched_pool_release(sched_pool_t *p, const sched_slice_t *s)
{
    for (int i = 0; i < s->ngpus && i < SCHED_MAX_SLICE_GPUS; i++) {
        int d = s->gpus[i];
        if (d < 0 || d >= p->n) continue;
        p->used[d] = p->used[d] > s->share_ppm ? p->used[d] - s->share_ppm : 0;
    }
    p->cpus_used = p->cpus_used > s->cpus ? p->cpus_used - s->cpus : 0;
}

void sched_pool_usage(const sched_pool_t *p, double *gpus_used, int *gpus_total, int *cpus_used,
                      int *cpus_total)
{
    uint64_t ppm = 0;
    for (int i = 0; i < p->n; i++)
        ppm += p->used[i];
    if (gpus_used) *gpus_used = (double)ppm / PPM;
    if (gpus_total) *gpus_total = p->n;
    if (cpus_used) *cpus_used = p->cpus_used;
    if (cpus_total) *cpus_total = p->cpus_total;
}

void sched_slice_devices(const sched_pool_t *p, const sched_slice_t *s, char *buf, size_t n)
{
    int idx[SCHED_MAX_SLICE_GPUS], k = 0;
    for (int i = 0; i < s->ngpus && i < SCHED_MAX_SLICE_GPUS; i++)
        if (s->gpus[i] >= 0 && s->gpus[i] < p->n) idx[k++] = s->gpus[i];
    join_ids(p, idx, k, buf, n);
}

/* "gpu:0,1" (whole devices), "gpu:2@1/4" (a quarter of device 2), "cpu:2" (no GPU).
 * CPUs are left out when there are GPUs: every trial gets the same count anyway. */
void sched_slice_format(const sched_pool_t *p, const sched_slice_t *s, char *buf, size_t n)
{
    if (n == 0) return;
    if (s->ngpus == 0) {
        snprintf(buf, n, "cpu:%d", s->cpus);
        return;
    }
    char devs[512];
    sched_slice_devices(p, s, devs, sizeof devs);
    if (s->share_ppm >= PPM || s->share_ppm == 0) {
        snprintf(buf, n, "gpu:%s", devs);
        return;
    }
    uint32_t k = PPM / s->share_ppm;
    if (PPM / k == s->share_ppm)
        snprintf(buf, n, "gpu:%s@1/%u", devs, k);
    else
        snprintf(buf, n, "gpu:%s@%g", devs, s->share_ppm / 1e6);
}
