/* SPDX-License-Identifier: MIT
 * xoshiro256** and splitmix64, written from the published algorithm descriptions. */
#include "sim_rng.h"

uint64_t mr_sim_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void mr_sim_rng_seed(struct mr_sim_rng *r, uint64_t seed)
{
	uint64_t st = seed;

	for (int i = 0; i < 4; i++)
		r->s[i] = mr_sim_splitmix64(&st);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t mr_sim_rng_next(struct mr_sim_rng *r)
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

double mr_sim_rng_unit(struct mr_sim_rng *r)
{
	return (double)(mr_sim_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t mr_sim_rng_upto(struct mr_sim_rng *r, uint64_t bound)
{
	if (bound == 0)
		return 0;
	if (bound == UINT64_MAX)
		return mr_sim_rng_next(r);
	/* Modulo bias is < bound/2^64: irrelevant for jitter in nanoseconds. */
	return mr_sim_rng_next(r) % (bound + 1);
}

bool mr_sim_rng_chance(struct mr_sim_rng *r, double p)
{
	if (p <= 0.0)
		return false;
	if (p >= 1.0)
		return true;
	return mr_sim_rng_unit(r) < p;
}
