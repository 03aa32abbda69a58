/* SPDX-License-Identifier: MIT
 * Runs mrperf's argument parser alone, for tests/mrperf/test_perftest_flags.py:
 *   args_probe PROGNAME [ARGS...]   (PROGNAME is argv[0] as mrperf would see it)
 * prints "accepted" (exit 0), "rejected: MESSAGE" (a perftest flag metaroce cannot honour,
 * exit 1) or "invalid: MESSAGE" (bad syntax or value, exit 2).
 *   args_probe --batch
 * reads one command line per stdin line (PROGNAME and ARGS separated by tabs) and prints, for
 * each, one line "RC<TAB>OUTPUT" with OUTPUT as above and its lines joined by " | ". One process
 * for the whole table: under ASan a process start costs more than the parse.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "args.h"

#define PROBE_MAX_ARGS 16

/* Parses one command line; writes what the single-shot mode prints into out, its lines joined
 * by sep. Returns the single-shot exit code. */
static int probe(int argc, const char *const *argv, const char *sep, char *out, size_t len)
{
	struct mr_perf_args a;
	char err[256];
	size_t n;
	int rc;

	rc = mr_perf_args_parse(argc, argv, &a, err, sizeof(err));
	if (rc != 0) {
		snprintf(out, len, "%s: %s", rc == -ENOTSUP ? "rejected" : "invalid", err);
		return rc == -ENOTSUP ? 1 : 2;
	}
	n = (size_t)snprintf(out, len, "accepted");
	for (unsigned i = 0; i < a.nnotes && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%signored: --%s: %s", sep, a.note_flag[i],
				      a.note_why[i]);
	return 0;
}

static int batch(void)
{
	char line[1024], out[2048];
	const char *argv[PROBE_MAX_ARGS];

	while (fgets(line, sizeof(line), stdin)) {
		int argc = 0, rc;
		char *save = NULL;

		line[strcspn(line, "\n")] = '\0';
		for (char *t = strtok_r(line, "\t", &save); t && argc < PROBE_MAX_ARGS;
		     t = strtok_r(NULL, "\t", &save))
			argv[argc++] = t;
		if (argc == 0) {
			printf("3\tinvalid: empty line\n");
			continue;
		}
		rc = probe(argc, argv, " | ", out, sizeof(out));
		printf("%d\t%s\n", rc, out);
	}
	return 0;
}

int main(int argc, char **argv)
{
	char out[2048];
	int rc;

	if (argc == 2 && strcmp(argv[1], "--batch") == 0)
		return batch();
	if (argc < 2) {
		fprintf(stderr, "usage: args_probe PROGNAME [ARGS...] | args_probe --batch\n");
		return 3;
	}
	rc = probe(argc - 1, (const char *const *)(argv + 1), "\n", out, sizeof(out));
	printf("%s\n", out);
	return rc;
}
