/* fuzz_result: libFuzzer entry point for the result-line parser (trial/result.c), the code
 * every byte a trial prints goes through. Each input is one stdout line.
 * Not for: checking what is a result (tests/test_trial.c does); only "no crash, no leak,
 * no UB, what parses is a JSON object, and the fast scan (result_scan.c) agrees". */
#include "trial/trial.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Same double, bit for bit (NaN == NaN). */
static int same_double(double a, double b)
{
    return (a != a && b != b) || memcmp(&a, &b, sizeof a) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The scheduler's fast path (trial/result_scan.c) must never take a line the parser
     * refuses, and must read the same numbers from the lines it takes. */
    static const char *const keys[3] = {"training_iteration", "loss", "a"};
    double v[3];
    int scanned = trial_result_scan((const char *)data, size, keys, 3, v);
    cJSON *r = NULL;
    if (trial_result_parse((const char *)data, size, &r) != 1) {
        if (scanned) abort();
        return 0;
    }
    for (int i = 0; scanned && i < 3; i++)
        if (!same_double(v[i], trial_result_number(r, keys[i]))) abort();
    /* The contract the scheduler relies on: a result is an object, and numbers read out
     * of it are numbers or NaN. abort() makes a broken contract a finding. */
    if (!cJSON_IsObject(r)) abort();
    (void)trial_result_number(r, "training_iteration");
    (void)trial_result_number(r, "loss");
    /* The scheduler re-prints results holding NaN/Infinity before storing them. */
    char *printed = cJSON_PrintUnformatted(r);
    free(printed);
    cJSON_Delete(r);
    return 0;
}
