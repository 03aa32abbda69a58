/* SPDX-License-Identifier: MIT
 * mrpingpong's command line: rdma-core's ibv_rc_pingpong flags (same names, defaults and
 * meaning), plus --sock for the metaroced socket. No I/O, so unit tests drive it directly.
 */
#ifndef MRPINGPONG_PPARGS_H
#define MRPINGPONG_PPARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mr_pp_args {
	uint16_t port;         /* -p: TCP port of the exchange (18515) */
	const char *device;    /* -d: accepted and ignored (one metaroced port) */
	unsigned ib_port;      /* -i: must be 1 */
	uint32_t size;         /* -s: message size (4096) */
	uint32_t mtu;          /* -m: path MTU in bytes (1024) */
	uint32_t rx_depth;     /* -r: receives posted at a time (500) */
	uint32_t iters;        /* -n: exchanges (1000) */
	unsigned sl;           /* -l: service level, accepted (no SL on RoCE v2, A17.4.5) */
	int gid_index;         /* -g: local GID index (-1 = none, as rc_pingpong) */
	bool events;           /* -e: sleep on CQ events */
	bool chk;              /* -c: validate the received buffer */
	const char *sock;      /* --sock: metaroced socket (NULL = library default) */
	const char *server;    /* positional: the server's address; NULL = be the server */
};

/* Parses argv (argv[0] is the program name). 0, 1 for --help (usage printed to stdout), or
 * -EINVAL with a message in err. Does not keep pointers other than into argv. */
int mr_pp_args_parse(int argc, char **argv, struct mr_pp_args *a, char *err, size_t errlen);
/* ibv_rc_pingpong's usage text. */
void mr_pp_usage(const char *argv0);
/* rc_pingpong's two result lines for size x iters round trips in usec microseconds (bytes =
 * 2 * size * iters, both directions); -ENOSPC if out is too small, else the length. */
int mr_pp_format_result(uint32_t size, uint32_t iters, double usec, char *out, size_t outlen);

#endif
