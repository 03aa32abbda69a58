/* SPDX-License-Identifier: MIT
 * mrpingpong's command line and result lines (see ppargs.h).
 */
#include "ppargs.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (s == NULL || s[0] == '\0' || s[0] == '-')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

void mr_pp_usage(const char *argv0)
{
	printf("Usage:\n");
	printf("  %s            start a server and wait for connection\n", argv0);
	printf("  %s <host>     connect to server at <host>\n", argv0);
	printf("\n");
	printf("Options:\n");
	printf("  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n");
	printf("  -d, --ib-dev=<dev>     accepted, ignored (metaroced has one port)\n");
	printf("  -i, --ib-port=<port>   use port <port> of IB device (default 1)\n");
	printf("  -s, --size=<size>      size of message to exchange (default 4096)\n");
	printf("  -m, --mtu=<size>       path MTU (default 1024)\n");
	printf("  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n");
	printf("  -n, --iters=<iters>    number of exchanges (default 1000)\n");
	printf("  -l, --sl=<sl>          service level value\n");
	printf("  -e, --events           sleep on CQ events (default poll)\n");
	printf("  -g, --gid-idx=<gid index> local port gid index\n");
	printf("  -c, --chk              validate received buffer\n");
	printf("      --sock=<path>      metaroced socket (default $METAROCE_SOCK)\n");
}

int mr_pp_args_parse(int argc, char **argv, struct mr_pp_args *a, char *err, size_t errlen)
{
	static const struct option longs[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "size", required_argument, NULL, 's' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "iters", required_argument, NULL, 'n' },
		{ "sl", required_argument, NULL, 'l' },
		{ "events", no_argument, NULL, 'e' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "chk", no_argument, NULL, 'c' },
		{ "sock", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t v;
	int c;

	memset(a, 0, sizeof(*a));
	a->port = 18515;
	a->ib_port = 1;
	a->size = 4096;
	a->mtu = 1024;
	a->rx_depth = 500;
	a->iters = 1000;
	a->gid_index = -1;
	err[0] = '\0';
	optind = 0; /* reset getopt: parse may run more than once per process (tests) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "p:d:i:s:m:r:n:l:eg:ch", longs, NULL)) != -1) {
		int rc = 0;

		switch (c) {
		case 'p':
			rc = parse_u32(optarg, 1, 65535, &v);
			a->port = (uint16_t)v;
			break;
		case 'd':
			a->device = optarg;
			break;
		case 'i':
			rc = parse_u32(optarg, 1, 1, &v); /* one port */
			a->ib_port = v;
			break;
		case 's':
			rc = parse_u32(optarg, 1, 1u << 30, &a->size);
			break;
		case 'm':
			/* IBA 9.7.1 / table 7: the path MTU is one of 256 .. 4096 */
			rc = parse_u32(optarg, 256, 4096, &a->mtu);
			if (rc == 0 && (a->mtu & (a->mtu - 1)) != 0)
				rc = -EINVAL;
			break;
		case 'r':
			rc = parse_u32(optarg, 2, 1u << 16, &a->rx_depth);
			break;
		case 'n':
			rc = parse_u32(optarg, 1, 1u << 30, &a->iters);
			break;
		case 'l':
			rc = parse_u32(optarg, 0, 15, &v);
			a->sl = v;
			break;
		case 'e':
			a->events = true;
			break;
		case 'g':
			rc = parse_u32(optarg, 0, 255, &v);
			a->gid_index = (int)v;
			break;
		case 'c':
			a->chk = true;
			break;
		case 'S':
			a->sock = optarg;
			break;
		case 'h':
			mr_pp_usage(argv[0]);
			return 1;
		default:
			snprintf(err, errlen, "unknown option or missing value: %s",
				 argv[optind - 1 > 0 ? optind - 1 : 0]);
			return -EINVAL;
		}
		if (rc < 0) {
			snprintf(err, errlen, "bad value '%s' for -%c", optarg, c == 'S' ? '-' : c);
			return -EINVAL;
		}
	}
	if (optind + 1 == argc) {
		a->server = argv[optind];
	} else if (optind < argc) {
		snprintf(err, errlen, "more than one server name");
		return -EINVAL;
	}
	return 0;
}

int mr_pp_format_result(uint32_t size, uint32_t iters, double usec, char *out, size_t outlen)
{
	/* rc_pingpong keeps usec in a float and counts both directions */
	float us = (float)usec;
	long long bytes = (long long)size * iters * 2;
	int n;

	if (!(us > 0))
		us = 1;
	n = snprintf(out, outlen, "%lld bytes in %.2f seconds = %.2f Mbit/sec\n"
		     "%u iters in %.2f seconds = %.2f usec/iter\n",
		     bytes, us / 1000000., bytes * 8. / us, iters, us / 1000000., us / iters);
	if (n < 0 || (size_t)n >= outlen)
		return -ENOSPC;
	return n;
}
