/* SPDX-License-Identifier: MIT
 * membarrier(2) for the fence-free doorbell (shm_abi.h MRC_FEAT_DB_ASYM): the app registers for
 * MEMBARRIER_CMD_GLOBAL_EXPEDITED and leaves the fence out of a post that finds its QP's bit
 * set; the daemon issues the barrier, which runs a full memory barrier on every CPU that runs a
 * registered process, between its clear of a bit and its last read of that QP. This is the
 * asymmetric Dekker pairing of membarrier(2) ("the fast path with a compiler barrier, the slow
 * path with membarrier"), as liburcu's urcu-memb flavour uses it.
 */
#ifndef MR_SHM_MEMBARRIER_H
#define MR_SHM_MEMBARRIER_H

#include <errno.h>
#include <stdbool.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>

static inline int mr_membarrier(int cmd)
{
#ifdef __NR_membarrier
	return syscall(__NR_membarrier, cmd, 0, 0) < 0 ? -errno : 0;
#else
	(void)cmd;
	return -ENOSYS;
#endif
}

/* True when this kernel offers both the registration and the global expedited barrier. */
static inline bool mr_membarrier_global_ok(void)
{
#ifdef __NR_membarrier
	long m = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	long need = MEMBARRIER_CMD_GLOBAL_EXPEDITED | MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED;

	return m >= 0 && (m & need) == need;
#else
	return false;
#endif
}

#endif
