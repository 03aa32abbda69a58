/* SPDX-License-Identifier: MIT
 * metaroced: the length rule of the engine's light-load sleep ([engine] load_sleep_max_us;
 * engine.c load_sleep has the reasons and the measurements). Pure and DPDK-free, so that
 * tests/daemon drives it.
 */
#ifndef MR_DAEMON_LOAD_NAP_H
#define MR_DAEMON_LOAD_NAP_H

#include <stdbool.h>
#include <stdint.h>

/* Work (frames received, app requests, packets built) in one iteration that makes the next
 * sleep shorter: an eighth of memif's 4096-slot rx ring. Below half of it the sleep grows. */
#define MR_LOAD_NAP_GATHER 512u

/* The next sleep in us, from the last one, the work of the iteration that followed it and
 * whether the engine is a saturated sender (a full transmit budget or a transmit backlog:
 * no sleep at all). Doubles (from 1 us) below MR_LOAD_NAP_GATHER / 2, halves at
 * MR_LOAD_NAP_GATHER or more, never above cap_us ([engine] load_sleep_max_us, at most 1000:
 * config.c, so the doubling cannot overflow). */
static inline uint32_t mr_load_nap_next(uint32_t nap_us, unsigned int work, bool saturated,
					uint32_t cap_us)
{
	if (saturated)
		return 0;
	if (work >= MR_LOAD_NAP_GATHER)
		nap_us /= 2;
	else if (work < MR_LOAD_NAP_GATHER / 2)
		nap_us = nap_us == 0 ? 1 : nap_us * 2;
	return nap_us > cap_us ? cap_us : nap_us;
}

#endif
