/* SPDX-License-Identifier: MIT
 * The daemon's own view of its port, for tests/verbs/test_devinfo.sh to hold `ibv_devinfo -v`
 * (run through metaroce-run on the verbs library) against: what mrc_query_port returns over the
 * daemon's socket, one "key=value" line each, GIDs as 32 hex digits.
 *
 *     mr_port_attr SOCKET
 * Exit 0, or 1 with the reason on stderr (no daemon, query failed).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "metaroce/metaroce.h"

int main(int argc, char **argv)
{
	struct mrc_port_attr a;
	struct mrc_session *s;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: mr_port_attr SOCKET\n");
		return 2;
	}
	s = mrc_open(argv[1]);
	if (s == NULL) {
		fprintf(stderr, "mr_port_attr: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	rc = mrc_query_port(s, &a);
	if (rc < 0) {
		fprintf(stderr, "mr_port_attr: mrc_query_port: %s\n", strerror(-rc));
		mrc_close(s);
		return 1;
	}
	printf("state=%u\nactive_mtu=%u\nmax_mtu=%u\n", a.state, a.active_mtu, a.max_mtu);
	printf("mac=%02x:%02x:%02x:%02x:%02x:%02x\n", a.mac[0], a.mac[1], a.mac[2], a.mac[3],
	       a.mac[4], a.mac[5]);
	printf("gid_count=%u\n", a.gid_count);
	for (unsigned int i = 0; i < a.gid_count && i < MRC_MAX_GIDS; i++) {
		printf("gid%u=", i);
		for (unsigned int k = 0; k < 16; k++)
			printf("%02x", a.gid[i][k]);
		printf("\n");
	}
	printf("max_qp=%u\nmax_qp_wr=%u\nmax_cq=%u\nmax_cqe=%u\nmax_mr=%u\nmax_pd=%u\n"
	       "max_sge=%u\nmax_inline_data=%u\nmax_mr_size=%" PRIu64 "\n", a.max_qp, a.max_qp_wr,
	       a.max_cq, a.max_cqe, a.max_mr, a.max_pd, a.max_sge, a.max_inline_data,
	       a.max_mr_size);
	mrc_close(s);
	return 0;
}
