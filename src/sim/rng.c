/*
 * rng.c: the simulator's random numbers: xoshiro256** (Blackman and
 * Vigna), seeded through splitmix64 so that any 64-bit seed, 0 included,
 * gives a well-mixed state. Written here because the sequence must be the
 * same on every platform and libc for runs to be reproducible.
 */
#include "drover/sim.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void drv_rng_seed(struct drv_rng *r, uint64_t seed)
{
	uint64_t x = seed;
	int i;
	for (i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t drv_rng_next(struct drv_rng *r)
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

double drv_rng_unit(struct drv_rng *r)
{
	/* 53 random bits, shifted to (0, 1] */
	return ((double)(drv_rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

double drv_rng_exp(struct drv_rng *r, double mean)
{
	return -log(drv_rng_unit(r)) * mean;
}

double drv_rng_normal(struct drv_rng *r)
{
	double u1 = drv_rng_unit(r), u2 = drv_rng_unit(r);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
