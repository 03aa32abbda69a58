/* SPDX-License-Identifier: MIT
 * SOCK_SEQPACKET helpers shared by libmetaroce and the daemon's shm server: one message per
 * call, with up to MR_SHM_MAX_FDS file descriptors passed as SCM_RIGHTS.
 */
#ifndef MR_SHM_SOCK_H
#define MR_SHM_SOCK_H

#include <stddef.h>
#include <sys/types.h>

#define MR_SHM_MAX_FDS 2

/* Sends len bytes and nfds descriptors. Returns 0, or -errno (-EPIPE when the peer is gone:
 * never raises SIGPIPE). */
int mr_shm_send(int sock, const void *buf, size_t len, const int *fds, unsigned int nfds);

/* Receives one message. Returns its length (0 = peer closed), or -errno. Descriptors received
 * beyond maxfds, or with a truncated message, are closed (never leaked); *nfds says how many
 * were stored in fds. flags: MSG_DONTWAIT or 0. */
ssize_t mr_shm_recv(int sock, void *buf, size_t cap, int *fds, unsigned int maxfds,
		    unsigned int *nfds, int flags);

#endif
