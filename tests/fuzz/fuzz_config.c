/* SPDX-License-Identifier: MIT
 * Fuzz target: metaroced's configuration parser (apps/metaroced/config.c) and the impairment
 * spec parser behind [impair] / --impair. Besides ASan/UBSan: a rejected config names a
 * location in its message ("name:line: ..." or "name: field"); an accepted one has an address,
 * a usable IB MTU, lcores and limits inside the documented ranges, and prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/metaroced/config.h"
#include "fz_transport.h"

static void die(const char *why)
{
	fprintf(stderr, "INVARIANT VIOLATED: %s\n", why);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mr_daemon_config cfg;
	char err[512];
	char *text;
	int rc;

	if (size > 65536)
		return 0;
	text = malloc(size + 1);
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	mr_config_defaults(&cfg);
	rc = mr_config_parse(&cfg, "fuzz.conf", text, err, sizeof(err));
	if (rc < 0) {
		if (strncmp(err, "fuzz.conf:", 10) != 0)
			die("config error message does not name the file and line");
	} else {
		FILE *devnull = fopen("/dev/null", "w");

		if (rc != 0)
			die("mr_config_parse returned a positive value");
		if (!cfg.has_ipv4 && !cfg.has_ipv6)
			die("config accepted without an address");
		if (cfg.ib_mtu < 256 || cfg.ib_mtu > 4096 || cfg.ib_mtu + 84 > cfg.mtu)
			die("config accepted with an unusable IB MTU");
		if (cfg.n_lcores == 0)
			die("config accepted without an lcore");
		if (devnull != NULL) {
			mr_config_print(&cfg, devnull);
			fclose(devnull);
		}
	}
	/* The same bytes as an impairment spec (up to the first newline). */
	{
		char *nl = strchr(text, '\n');

		if (nl != NULL)
			*nl = '\0';
		mr_config_defaults(&cfg);
		rc = mr_config_set_impair(&cfg, (size & 1) ? MR_IMPAIR_RX : MR_IMPAIR_TX, text,
					  "--impair", err, sizeof(err));
		if (rc < 0 && strncmp(err, "--impair:", 9) != 0)
			die("impair spec error message does not name its origin");
	}
	free(text);
	return 0;
}
