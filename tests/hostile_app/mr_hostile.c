/* SPDX-License-Identifier: MIT
 * mr_hostile: hostile-app cases against two real metaroced daemons (see hostile.h).
 *
 *   mr_hostile --sock-a PATH --sock-b PATH [--pid-a N] [--pid-b N] [--hold FILE]
 *              [--timeout SEC] CASE...
 *   mr_hostile --sock-a PATH --sock-b PATH ping      (both daemons answer a new session)
 *
 * Prints "mr_hostile: CASE: PASS" or "... FAIL (n checks)" per case; exit 0 only if every
 * case passed, 2 on usage errors. METAROCE_TIMEOUT_MS bounds every control call, so a daemon
 * that stopped answering shows as a failed check, not as a hang.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostile.h"

static void case_ping(void)
{
	hcheck_daemons("ping");
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{ "ping", case_ping },
	{ "ring_sq_jump", case_ring_sq_jump },
	{ "ring_sq_back", case_ring_sq_back },
	{ "ring_rq_jump", case_ring_rq_jump },
	{ "ring_garbage", case_ring_garbage },
	{ "cq_cons_games", case_cq_cons_games },
	{ "ring_error_report", case_ring_error_report },
	{ "sqe_bad_fields", case_sqe_bad_fields },
	{ "sge_overflow", case_sge_overflow },
	{ "remote_wrap", case_remote_wrap },
	{ "foreign_keys", case_foreign_keys },
	{ "foreign_handles", case_foreign_handles },
	{ "double_destroy", case_double_destroy },
	{ "dereg_inflight_write", case_dereg_inflight_write },
	{ "dereg_inflight_remote", case_dereg_inflight_remote },
	{ "dereg_inflight_read", case_dereg_inflight_read },
	{ "destroy_qp_inflight", case_destroy_qp_inflight },
	{ "crash_midflight", case_crash_midflight },
	{ "queue_overflow", case_queue_overflow },
	{ "cq_overrun_report", case_cq_overrun_report },
	{ "eventfd_block", case_eventfd_block },
	{ "quota_qp", case_quota_qp },
	{ "quota_mr", case_quota_mr },
	{ "quota_mem", case_quota_mem },
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sock-a", required_argument, NULL, 'a' }, { "sock-b", required_argument, NULL, 'b' },
		{ "pid-a", required_argument, NULL, 'A' }, { "pid-b", required_argument, NULL, 'B' },
		{ "hold", required_argument, NULL, 'H' }, { "timeout", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	static struct hopts o = { .timeout_s = 20 };
	unsigned int failed_cases = 0;
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN); /* a daemon that died must show as an error, not kill us */
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'a': o.sock[0] = optarg; break;
		case 'b': o.sock[1] = optarg; break;
		case 'A': o.pid[0] = atoi(optarg); break;
		case 'B': o.pid[1] = atoi(optarg); break;
		case 'H': o.hold = optarg; break;
		case 't': o.timeout_s = (unsigned int)strtoul(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (o.sock[0] == NULL || o.sock[1] == NULL || optind >= argc || o.timeout_s == 0) {
		fprintf(stderr, "usage: mr_hostile --sock-a PATH --sock-b PATH [--pid-a N] [--pid-b N] "
			"[--hold FILE] [--timeout SEC] CASE...\ncases:");
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			fprintf(stderr, " %s", cases[i].name);
		fprintf(stderr, "\n");
		return 2;
	}
	g_opt = &o;
	for (int i = optind; i < argc; i++) {
		size_t k;
		unsigned int before = g_failed;

		for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
			if (strcmp(argv[i], cases[k].name) == 0)
				break;
		if (k == sizeof(cases) / sizeof(cases[0])) {
			fprintf(stderr, "mr_hostile: unknown case '%s'\n", argv[i]);
			return 2;
		}
		printf("mr_hostile: %s: start\n", argv[i]);
		cases[k].fn();
		if (g_failed == before) {
			printf("mr_hostile: %s: PASS\n", argv[i]);
		} else {
			printf("mr_hostile: %s: FAIL (%u checks)\n", argv[i], g_failed - before);
			failed_cases++;
		}
	}
	return failed_cases ? 1 : 0;
}
