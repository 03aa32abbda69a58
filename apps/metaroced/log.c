/* SPDX-License-Identifier: MIT
 * metaroced logging (see log.h).
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

static enum mr_log_level g_level = MR_LOG_WARN;

void mr_log_set_level(enum mr_log_level lvl)
{
	g_level = lvl;
}

int mr_log_enabled(enum mr_log_level lvl)
{
	return lvl <= g_level;
}

void mr_log(enum mr_log_level lvl, const char *fmt, ...)
{
	static const char *const names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
	char ts[32];
	struct timeval tv;
	struct tm tm;
	va_list ap;

	if (lvl > g_level)
		return;
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	/* One fprintf per part, but stderr is unbuffered and only the engine thread logs. */
	fprintf(stderr, "%s.%06ld %-5s ", ts, (long)tv.tv_usec, names[lvl]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
