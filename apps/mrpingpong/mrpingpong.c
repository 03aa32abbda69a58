/* SPDX-License-Identifier: MIT
 * mrpingpong: rdma-core's ibv_rc_pingpong on metaroce.
 *
 *   mrpingpong [-p port] [-s size] [-n iters] [-m mtu] [-g gid_idx] [-r rx_depth] [-e] [-c]
 *              [--sock PATH] [server]
 *
 * Same flags, TCP exchange ("LID:QPN:PSN:GID" then "done", exchange.h) and output as
 * ibv_rc_pingpong, so either end may be the stock tool on a Linux rxe (or any verbs) peer.
 * Exit: 0 ok, 1 runtime failure, 2 bad command line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exchange.h"
#include "pingpong.h"
#include "ppargs.h"

#define EXCHANGE_TIMEOUT_MS 60000

static void print_dest(const char *label, const struct mr_pp_dest *d)
{
	char gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, d->gid, gid, sizeof(gid));
	printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", label, d->lid, d->qpn, d->psn,
	       gid);
	fflush(stdout);
}

/* The server connects between reading the client's message and answering it. */
static int connect_cb(void *arg, const struct mr_pp_dest *theirs)
{
	return mr_pp_connect(arg, theirs);
}

static int die(const struct mr_pp_ctx *c, const char *what, int rc)
{
	fprintf(stderr, "mrpingpong: %s%s%s\n", what, what[0] ? ": " : "",
		c->err[0] ? c->err : strerror(rc < 0 ? -rc : rc));
	return 1;
}

int main(int argc, char **argv)
{
	struct mr_pp_args a;
	struct mr_pp_ctx c;
	struct mr_pp_dest rem;
	char err[256], line[256];
	double usec = 0;
	int rc, fd;

	rc = mr_pp_args_parse(argc, argv, &a, err, sizeof(err));
	if (rc == 1)
		return 0;
	if (rc < 0) {
		fprintf(stderr, "mrpingpong: %s\n", err);
		mr_pp_usage(argv[0]);
		return 2;
	}
	memset(&c, 0, sizeof(c));
	rc = mr_pp_open(&c, &a);
	if (rc < 0) {
		die(&c, "", rc);
		mr_pp_close(&c);
		return 1;
	}
	if (a.mtu > c.port_mtu)
		fprintf(stderr, "mrpingpong: path MTU %u > port active MTU %u\n", a.mtu, c.port_mtu);
	print_dest("local address: ", &c.mine);
	if (a.server != NULL) {
		fd = mr_pt_connect(a.server, a.port, EXCHANGE_TIMEOUT_MS);
		if (fd < 0) {
			fprintf(stderr, "Couldn't connect to %s:%d\n", a.server, a.port);
			mr_pp_close(&c);
			return 1;
		}
		rc = mr_pp_exchange(fd, true, EXCHANGE_TIMEOUT_MS, &c.mine, &rem);
	} else {
		fd = mr_pt_accept(a.port, -1, NULL, NULL);
		if (fd < 0) {
			fprintf(stderr, "Couldn't listen to port %d\n", a.port);
			mr_pp_close(&c);
			return 1;
		}
		rc = mr_pp_exchange_cb(fd, false, EXCHANGE_TIMEOUT_MS, &c.mine, &rem, connect_cb,
				       &c);
	}
	close(fd);
	if (rc < 0) {
		rc = die(&c, "Couldn't exchange addresses", rc);
		mr_pp_close(&c);
		return rc;
	}
	print_dest("remote address:", &rem);
	if (a.server != NULL) {
		rc = mr_pp_connect(&c, &rem);
		if (rc < 0) {
			rc = die(&c, "", rc);
			mr_pp_close(&c);
			return rc;
		}
	}
	rc = mr_pp_run(&c, &usec);
	if (rc < 0) {
		rc = die(&c, "", rc);
		mr_pp_close(&c);
		return rc;
	}
	if (mr_pp_format_result(a.size, a.iters, usec, line, sizeof(line)) > 0)
		fputs(line, stdout);
	if (a.server == NULL && a.chk) {
		long page = sysconf(_SC_PAGESIZE);

		for (uint32_t i = 0; i < a.size; i += (uint32_t)page)
			if (c.buf[i] != (uint8_t)(i / (uint32_t)page % sizeof(char)))
				printf("invalid data in page %u\n", i / (uint32_t)page);
	}
	mr_pp_close(&c);
	return 0;
}
