/* SPDX-License-Identifier: MIT
 * metaroced --telemetry (stats_telemetry.h): the published stats document answered to DPDK
 * telemetry clients, one dict per section.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "stats_telemetry.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_doc;     /* the last published document (stats_server.h format) */

void mr_stats_telemetry_publish(const struct mr_stats_view *v, struct mr_stats_base *base)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return;
	mr_stats_doc_write(f, v, base);
	if (fclose(f) != 0) {
		free(buf);
		return;
	}
	pthread_mutex_lock(&g_lock);
	free(g_doc);
	g_doc = buf;
	pthread_mutex_unlock(&g_lock);
}

/* The entries of section `want` ("port 1", "link") as a dict; at most the dict's capacity. */
static int section_dict(const char *want, struct rte_tel_data *d)
{
	const char *p;
	bool in = false;
	unsigned int n = 0;
	char line[256];

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&g_lock);
	for (p = g_doc; p != NULL && *p; ) {
		const char *e = strchr(p, '\n');
		size_t l = e != NULL ? (size_t)(e - p) : strlen(p);
		char kind, name[64];
		uint64_t v;
		int off = 0;

		if (l >= sizeof(line))
			l = sizeof(line) - 1;
		memcpy(line, p, l);
		line[l] = '\0';
		p = e != NULL ? e + 1 : p + strlen(p);
		if (strncmp(line, "section ", 8) == 0) {
			in = strcmp(line + 8, want) == 0;
			continue;
		}
		if (!in || n >= RTE_TEL_MAX_DICT_ENTRIES ||
		    sscanf(line, "%c %63s %n", &kind, name, &off) < 2 || off == 0)
			continue;
		if (kind == 's')
			rte_tel_data_add_dict_string(d, name, line + off);
		else if (sscanf(line + off, "%" SCNu64, &v) == 1)
			rte_tel_data_add_dict_u64(d, name, v);
		else
			continue;
		n++;
	}
	pthread_mutex_unlock(&g_lock);
	return 0;
}

static int cmd_port(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	return section_dict("port 1", d);
}

static int cmd_link(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	return section_dict("link", d);
}

int mr_stats_telemetry_init(void)
{
	int rc = rte_telemetry_register_cmd("/metaroce/port", cmd_port,
					    "metaroce port counters (as mrstat port). No parameters");

	if (rc == 0)
		rc = rte_telemetry_register_cmd("/metaroce/link", cmd_link,
						"metaroce device/port view (as mrstat link). No parameters");
	return rc;
}

void mr_stats_telemetry_fini(void)
{
	pthread_mutex_lock(&g_lock);
	free(g_doc);
	g_doc = NULL;
	pthread_mutex_unlock(&g_lock);
}
