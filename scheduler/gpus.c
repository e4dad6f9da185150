/* Finds the GPUs tune may hand out. The CUDA runtime is loaded with dlopen rather than
 * linked, so one tune binary runs unchanged on machines without a driver or without
 * CUDA at all (the pool is then empty and trials run on CPU).
 * Not for: placement decisions (pool.c) or anything a trial does on its GPU. */
#include "scheduler/sched.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef int (*cuda_count_fn)(int *);
typedef int (*cuda_peer_fn)(int *, int, int);

/* CUDA_VISIBLE_DEVICES="2,3" restricts tune itself: the pool is those ids as given. */
static int from_env(const char *v, int *ids, int max)
{
    int n = 0;
    const char *p = v;
    while (*p && n < max) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || x < 0) return -1; /* UUIDs or junk: let the runtime decide */
        ids[n++] = (int)x;
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return n;
}

int sched_detect_gpus(int *ids, int max, unsigned char *peer)
{
    if (peer) memset(peer, 0, (size_t)max * (size_t)max);
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    if (env && *env == 0) return 0;
    static const char *const libs[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                       "/usr/local/cuda/lib64/libcudart.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof libs / sizeof libs[0] && !h; i++)
        h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    cuda_count_fn count = (cuda_count_fn)(uintptr_t)dlsym(h, "cudaGetDeviceCount");
    cuda_peer_fn canpeer = (cuda_peer_fn)(uintptr_t)dlsym(h, "cudaDeviceCanAccessPeer");
    int n = 0;
    if (!count || count(&n) != 0 || n <= 0) {
        dlclose(h);
        return 0;
    }
    if (n > max) n = max;
    int env_ids[256];
    int ne = env ? from_env(env, env_ids, 256) : -1;
    for (int i = 0; i < n; i++)
        ids[i] = (ne >= n) ? env_ids[i] : i;
    if (peer && canpeer) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                int ok = 0;
                if (i != j && canpeer(&ok, i, j) == 0 && ok) peer[i * max + j] = 1;
            }
    }
    dlclose(h);
    return n;
}
