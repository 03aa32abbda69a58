/* SPDX-License-Identifier: MIT
 * metaroced logging: one line per event, "YYYY-mm-ddTHH:MM:SS.uuuuuu LEVEL message", to stderr.
 * Quiet by default (warnings and errors); -v raises the level.
 */
#ifndef MR_DAEMON_LOG_H
#define MR_DAEMON_LOG_H

enum mr_log_level {
	MR_LOG_ERR = 0,
	MR_LOG_WARN = 1,
	MR_LOG_INFO = 2,
	MR_LOG_DEBUG = 3,
};

void mr_log_set_level(enum mr_log_level lvl);
int mr_log_enabled(enum mr_log_level lvl);
void mr_log(enum mr_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
