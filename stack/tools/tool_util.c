/* SPDX-License-Identifier: MIT */
#include "tool_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "metaroce/metaroce.h"

uint64_t mr_tool_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int mr_tool_vfail(char *err, size_t cap, const struct mrc_session *s, int rc, const char *fmt,
		  va_list ap)
{
	size_t n;

	vsnprintf(err, cap, fmt, ap);
	n = strlen(err);
	if (rc < 0 && n < cap) {
		const char *last = s != NULL ? mrc_last_error(s) : "";

		snprintf(err + n, cap - n, ": %s%s%s", mrc_strerror(rc), last[0] ? " - " : "", last);
	}
	return rc < 0 ? rc : -EIO;
}
