/*
 * log.h: the one way drover's long-running parts (controller, agent) write
 * a log line (layer 0, src/base/log.c; libc only, not for the core, which
 * hands its decisions back as data instead).
 *
 * A line is "[TIME ]WHO: MESSAGE\n": TIME is the wall clock in RFC 3339
 * when DRV_LOG_TIME is set, WHO names the process ("drover server"). Each
 * line is written with one call and flushed, so lines from several threads
 * do not mix. A struct drv_log is plain data: the caller owns it and keeps
 * out and who alive as long as it logs; drv_log() only reads it, so
 * threads may share one.
 */
#ifndef DROVER_LOG_H
#define DROVER_LOG_H

#include <stdio.h>

enum {
	DRV_LOG_TIME = 1,  /* start each line with the RFC 3339 wall time */
	DRV_LOG_QUIET = 2, /* drop every line */
};

struct drv_log {
	FILE *out;       /* NULL: stderr */
	const char *who; /* the line's prefix, e.g. "drover agent" */
	unsigned flags;  /* DRV_LOG_* */
};

/* Writes one line (printf-style; no trailing newline in fmt). */
void drv_log(const struct drv_log *lg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
