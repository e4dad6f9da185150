/* exec.c: the one table of executors, by the name a run or its settings give ("executor"),
 * and trial_exec_open, which makes the one asked for. A new executor is a backend of its
 * own in trial/ (trial_int.h's ops) and a row here; nothing outside trial/ names it.
 * Not for: any executor's own settings (each backend reads its own). */
#include "trial/trial_int.h"

#include <stdio.h>
#include <string.h>

#include "search/settings.h"
#include "search/space.h"

static const struct {
    const char *name;
    space_exec_type_t type; /* the settings' "executor": {"type": ...} */
    int (*open)(const trial_exec_conf_t *c, trial_exec_t **out, char *err, size_t errlen);
} executors[] = {
    {"local", SPACE_EXEC_LOCAL, trial__local_open},
    {"slurm", SPACE_EXEC_SLURM, trial__slurm_open},
};
#define NEXECUTORS (sizeof executors / sizeof executors[0])

int trial_exec_known(const char *name)
{
    for (size_t i = 0; name && i < NEXECUTORS; i++)
        if (strcmp(executors[i].name, name) == 0) return 1;
    return 0;
}

void trial_exec_names(char *buf, size_t n)
{
    size_t k = 0;
    if (n) buf[0] = '\0';
    for (size_t i = 0; i < NEXECUTORS && k < n; i++) {
        const char *sep = i == 0 ? "" : i + 1 == NEXECUTORS ? " or " : ", ";
        int w = snprintf(buf + k, n - k, "%s%s", sep, executors[i].name);
        if (w < 0) break;
        k += (size_t)w;
    }
}

int trial_exec_open(const trial_exec_conf_t *c, trial_exec_t **out, char *err, size_t errlen)
{
    if (!c || !out || (!c->name && !c->space)) {
        trial__errf(err, errlen, "trial_exec_open: no executor name, settings or result handle");
        return TRIAL_EINVAL;
    }
    for (size_t i = 0; i < NEXECUTORS; i++) {
        int match = c->name ? strcmp(executors[i].name, c->name) == 0
                            : executors[i].type == space_settings(c->space)->exec.type;
        if (match) return executors[i].open(c, out, err, errlen);
    }
    char names[128];
    trial_exec_names(names, sizeof names);
    trial__errf(err, errlen, "unknown executor \"%s\": use %s", c->name ? c->name : "?", names);
    return TRIAL_EINVAL;
}
