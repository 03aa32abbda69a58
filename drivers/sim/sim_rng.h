/* SPDX-License-Identifier: MIT
 * Seeded PRNG for the simulator: xoshiro256** (Blackman & Vigna, 2018) seeded through
 * splitmix64, so one 64-bit seed gives a well-mixed 256-bit state. Deterministic across
 * platforms: the simulator's traces depend only on the seed.
 */
#ifndef MR_SIM_RNG_H
#define MR_SIM_RNG_H

#include <stdbool.h>
#include <stdint.h>

struct mr_sim_rng {
	uint64_t s[4];
};

/* splitmix64 step: advances *state and returns the next output. */
uint64_t mr_sim_splitmix64(uint64_t *state);
void mr_sim_rng_seed(struct mr_sim_rng *r, uint64_t seed);
uint64_t mr_sim_rng_next(struct mr_sim_rng *r);
/* Uniform double in [0, 1) with 53 random bits. */
double mr_sim_rng_unit(struct mr_sim_rng *r);
/* Uniform integer in [0, bound] (inclusive); bound 0 returns 0 without drawing. */
uint64_t mr_sim_rng_upto(struct mr_sim_rng *r, uint64_t bound);
/* Bernoulli(p). p <= 0 never draws (so disabled features do not perturb the stream). */
bool mr_sim_rng_chance(struct mr_sim_rng *r, double p);

#endif
