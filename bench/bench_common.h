/* bench_common.h: the clock and the seeded random stream every benchmark program under
 * bench/ needs, so that each measures and draws the same way. Header-only (static inline):
 * the benchmarks are single-file programs. Not for tune itself: its sampler lives in
 * search/ and must give the same configurations on every machine. */
#ifndef TUNE_BENCH_COMMON_H
#define TUNE_BENCH_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Seconds on the given clock (CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_PROCESS_CPUTIME_ID). */
static inline double bench_clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* splitmix64 (Steele, Lea, Flood 2014): a seeded, portable stream for configurations and
 * orders; one step per draw. */
static inline uint64_t bench_mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1): the top 53 bits of one draw. */
static inline double bench_uniform01(uint64_t *s)
{
    return (double)(bench_mix(s) >> 11) * 0x1.0p-53;
}

/* The whole number v given for option opt, within [lo, hi]; anything else is a usage error:
 * a message naming prog and exit status 2 (a benchmark's main is its only caller). */
static inline long bench_arg_long(const char *prog, const char *opt, const char *v, long lo,
                                  long hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "%s: %s wants a whole number in [%ld, %ld], not \"%s\"\n", prog, opt, lo,
                hi, v);
        exit(2);
    }
    return x;
}

#endif
