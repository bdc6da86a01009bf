/*
 * log.c: layer 0, libc only: one log line per call (include/drover/log.h).
 * The message is formatted first and written with a single fprintf, which
 * stdio locks, so concurrent lines stay whole.
 */
#include "drover/log.h"

#include "drover/clock.h"
#include "drover/common.h"
#include "drover/dynbuf.h"

#include <stdarg.h>

/* A log line longer than this is cut (a runaway diagnostic list). */
#define LOG_LINE_MAX (64u << 10)

void drv_log(const struct drv_log *lg, const char *fmt, ...)
{
	struct drv_dynbuf msg = DRV_DYNBUF_INIT(LOG_LINE_MAX);
	char ts[DRV_RFC3339_LEN] = "";
	FILE *f = lg->out ? lg->out : stderr;
	va_list ap;

	if (lg->flags & DRV_LOG_QUIET)
		return;
	if (lg->flags & DRV_LOG_TIME)
		drv_rfc3339(drv_wall_s(), ts, sizeof(ts));
	va_start(ap, fmt);
	if (drv_dynbuf_vaddf(&msg, fmt, ap) < 0)
		drv_dynbuf_addstr(&msg, "(log line too long)");
	va_end(ap);
	fprintf(f, "%s%s%s: %s\n", ts, ts[0] ? " " : "", lg->who ? lg->who : "drover",
		drv_dynbuf_str(&msg));
	fflush(f);
	drv_dynbuf_release(&msg);
}
