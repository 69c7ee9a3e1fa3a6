/* rng.c: the deterministic random streams tuners draw from. xoshiro256** (Blackman
 * and Vigna) seeded through splitmix64, so that a (seed, stream) pair, e.g.
 * (experiment seed, tuner index), always gives the same sequence: the generator is
 * integer arithmetic only; normals add libm's log/cos, identical for one libm. */
#include "tuners/searchspace.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void rng_init(struct rng *r, uint64_t seed, uint64_t stream)
{
    /* Mix seed and stream separately before combining them, so that neighbouring
     * pairs such as (1, 0) and (0, 1) do not start from related states. */
    uint64_t a = seed, b = stream ^ 0x6A09E667F3BCC909ULL;
    uint64_t state = splitmix64(&a) ^ rotl(splitmix64(&b), 17);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&state);
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))  /* the one state xoshiro cannot leave */
        r->s[0] = 1;
}

uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rng_uniform(struct rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

double rng_normal(struct rng *r)
{
    /* Box-Muller without caching the second value: struct rng stays a plain state,
     * and every draw uses exactly two uniforms. 1 - u is in (0, 1], so log is finite. */
    double u1 = 1.0 - rng_uniform(r);
    double u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
    if (n == 0)
        return 0;
    /* Reject the top partial block so every value is equally likely. */
    uint64_t threshold = -n % n;
    for (;;) {
        uint64_t x = rng_next(r);
        if (x >= threshold)
            return x % n;
    }
}
