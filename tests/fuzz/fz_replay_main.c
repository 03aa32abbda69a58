/* SPDX-License-Identifier: MIT
 * Replay driver: feeds every file named on the command line (directories: every regular file
 * in them, sorted) to LLVMFuzzerTestOneInput once. Linked instead of libFuzzer so that the
 * committed corpora and regressions run as ordinary meson tests under any compiler (and under
 * ASan/UBSan in the sanitizer build). A crash is the test failing; the file being run is
 * printed first so the log names it.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fz_transport.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (f == NULL) {
		perror(path);
		return -1;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (buf == NULL || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
		fprintf(stderr, "%s: read failed\n", path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	fprintf(stderr, "replay %s (%ld bytes)\n", path, n);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, unsigned int *count)
{
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	DIR *d = opendir(dir);
	int rc = 0;

	if (d == NULL)
		return 0; /* an absent regressions directory is an empty one */
	while ((de = readdir(d)) != NULL) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (de->d_name[0] == '.' || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*names));

			if (nn == NULL)
				break;
			names = nn;
		}
		names[n++] = strdup(path);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp);
	for (size_t i = 0; i < n; i++) {
		if (run_file(names[i]) < 0)
			rc = -1;
		else
			(*count)++;
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned int count = 0;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			if (run_dir(argv[i], &count) < 0)
				rc = 1;
		} else if (run_file(argv[i]) < 0) {
			rc = 1;
		} else {
			count++;
		}
	}
	printf("replayed %u inputs\n", count);
	return rc;
}
