/* fuzz_space: libFuzzer entry point for the space.json parser (search/). Each input is a
 * whole experiment file; when it parses, the first configurations are also sampled and
 * rendered into argv, so the sampler and the template renderer see fuzzed spaces too.
 * Not for: checking results (tests/test_search.c does); only "no crash, no leak, no UB". */
#include "search/render.h"
#include "search/settings.h"
#include "search/space.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Sampling is a pure function of (seed, index); a few indices cover every code path
 * without letting a fuzzed num_samples of 10^9 turn one input into minutes of work. */
#define FUZZ_SAMPLES 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    space_t *s = NULL;
    if (space_parse((const char *)data, size, "fuzz.json", &s, err, sizeof err) != 0) return 0;
    cJSON *settings = space_settings_json(s);
    cJSON_Delete(settings);
    size_t n = space_num_trials(s);
    for (size_t i = 0; i < n && i < FUZZ_SAMPLES; i++) {
        cJSON *cfg = NULL;
        if (space_sample(s, i, &cfg, err, sizeof err) != 0) continue;
        char **argv = NULL;
        if (space_render_argv(s, cfg, "trial_00000", "/tmp/fuzz", &argv, err, sizeof err) == 0)
            space_argv_free(argv);
        cJSON_Delete(cfg);
    }
    space_free(s);
    return 0;
}
