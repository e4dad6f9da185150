/* backend.c: the registry that maps --device names to compute backends (backend.h).
 * The CPU backend is always present; CUDA only in builds with TUNE_HAVE_CUDA, the way
 * redis compiles in ae_epoll.c or ae_select.c behind one ae.h.
 * Not for: opening devices (each backend's open does that and explains failures). */
#include <stdio.h>
#include <string.h>

#include "backend.h"

static const train_be_ops_t *const backends[] = {
    &train_be_cpu,
#ifdef TUNE_HAVE_CUDA
    &train_be_cuda,
#endif
};

const train_be_ops_t *train_be_find(const char *name, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (strcmp(backends[i]->name, name) == 0) return backends[i];
    if (strcmp(name, "cuda") == 0)
        snprintf(err, errlen,
                 "--device cuda: this tune-train was built without CUDA "
                 "(configure with -DTUNE_CUDA=ON on a machine with the CUDA toolkit)");
    else
        snprintf(err, errlen, "--device must be cpu or cuda, got \"%s\"", name);
    return NULL;
}
