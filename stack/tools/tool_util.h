/* SPDX-License-Identifier: MIT
 * Small helpers shared by the metaroce client tools (mrperf, mrpingpong). */
#ifndef MR_TOOL_UTIL_H
#define MR_TOOL_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct mrc_session;

/* CLOCK_MONOTONIC in ns. */
uint64_t mr_tool_now_ns(void);

/* Format fmt/ap into err (cap bytes); for a negative errno rc, append its text and the session's
 * last error message (s may be NULL). Returns rc if negative, else -EIO. */
int mr_tool_vfail(char *err, size_t cap, const struct mrc_session *s, int rc, const char *fmt,
		  va_list ap);

#endif
