/* SPDX-License-Identifier: MIT
 * Runs mrperf's argument parser alone, for tests/mrperf/test_perftest_flags.py:
 *   args_probe PROGNAME [ARGS...]   (PROGNAME is argv[0] as mrperf would see it)
 * prints "accepted" (exit 0), "rejected: MESSAGE" (a perftest flag metaroce cannot honour,
 * exit 1) or "invalid: MESSAGE" (bad syntax or value, exit 2).
 */
#include <errno.h>
#include <stdio.h>

#include "args.h"

int main(int argc, char **argv)
{
	struct mr_perf_args a;
	char err[256];
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: args_probe PROGNAME [ARGS...]\n");
		return 3;
	}
	rc = mr_perf_args_parse(argc - 1, (const char *const *)(argv + 1), &a, err, sizeof(err));
	if (rc == 0) {
		printf("accepted\n");
		for (unsigned i = 0; i < a.nnotes; i++)
			printf("ignored: --%s: %s\n", a.note_flag[i], a.note_why[i]);
		return 0;
	}
	printf("%s: %s\n", rc == -ENOTSUP ? "rejected" : "invalid", err);
	return rc == -ENOTSUP ? 1 : 2;
}
