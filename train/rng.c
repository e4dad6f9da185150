/* rng.c: tune-train's random numbers: xoshiro256** (Blackman & Vigna, "Scrambled linear
 * pseudorandom number generators", 2021) seeded through splitmix64, so a (seed, stream)
 * pair names a reproducible sequence on every rank and platform.
 * Not for: anything cryptographic. */
#include "train_int.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void train__rng_seed(train__rng_t *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t train__rng_next(train__rng_t *r)
{
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double train__rng_uniform(train__rng_t *r)
{
    return (double)(train__rng_next(r) >> 11) * 0x1.0p-53;
}

void train__permutation(int32_t *idx, int n, uint64_t seed, int epoch)
{
    train__rng_t r;
    /* stream 1000 + epoch: disjoint from the initialisation stream (0) */
    train__rng_seed(&r, seed, 1000u + (uint64_t)epoch);
    for (int i = 0; i < n; i++)
        idx[i] = i;
    for (int i = n - 1; i > 0; i--) { /* Fisher-Yates; the modulo bias is < 2^-40 */
        int j = (int)(train__rng_next(&r) % (uint64_t)(i + 1));
        int32_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}
