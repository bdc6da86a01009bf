/*
 * util.c: small helpers of the controller: clocks, RFC 3339 times, state
 * names, the log line, GPU index lists.
 */
#include "server_int.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

int64_t srv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t srv_wall_s(void)
{
	return (int64_t)time(NULL);
}

void srv_fmt_time(int64_t t, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *srv_json_time(int64_t t)
{
	char b[32];

	if (t <= 0)
		return json_null();
	srv_fmt_time(t, b, sizeof(b));
	return json_string(b);
}

void srv_log(struct drv_server *s, const char *fmt, ...)
{
	char ts[32];
	va_list ap;
	FILE *f = s->log ? s->log : stderr;

	srv_fmt_time(srv_wall_s(), ts, sizeof(ts));
	fprintf(f, "%s drover server: ", ts);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fflush(f);
}

static const char *const jnames[J_NSTATES] = { "pending", "scheduled", "running", "succeeded",
					       "failed", "cancelled", "preempted" };
static const char *const tnames[T_NSTATES] = { "pending", "starting", "running", "succeeded",
					       "failed", "cancelled", "lost" };

const char *srv_jstate_name(enum jstate st)
{
	return (unsigned)st < J_NSTATES ? jnames[st] : "unknown";
}

int srv_jstate_parse(const char *name)
{
	for (int i = 0; i < J_NSTATES; i++)
		if (strcmp(jnames[i], name) == 0)
			return i;
	return -1;
}

const char *srv_tstate_name(enum tstate st)
{
	return (unsigned)st < T_NSTATES ? tnames[st] : "unknown";
}

const char *srv_nstate_name(enum drv_node_state st)
{
	switch (st) {
	case DRV_NODE_UP: return "up";
	case DRV_NODE_DRAINING: return "draining";
	case DRV_NODE_DOWN: return "down";
	}
	return "unknown";
}

bool srv_jstate_final(enum jstate st)
{
	return st == J_SUCCEEDED || st == J_FAILED || st == J_CANCELLED;
}

void srv_set_str(char **dst, const char *src)
{
	char *n = src ? drv_strdup(src) : NULL;

	drv_free(*dst);
	*dst = n;
}

char *srv_mask_str(uint64_t mask, char *buf, size_t n)
{
	size_t len = 0;
	int i = 0;

	buf[0] = '\0';
	while (i < 64) {
		int j;

		if (!(mask & (1ull << i))) {
			i++;
			continue;
		}
		j = i;
		while (j + 1 < 64 && (mask & (1ull << (j + 1))))
			j++;
		if (len < n)
			len += (size_t)snprintf(buf + len, n - len, "%s%d", len ? "," : "", i);
		if (j > i && len < n)
			len += (size_t)snprintf(buf + len, n - len, "%s%d", j > i + 1 ? "-" : ",", j);
		i = j + 1;
	}
	return buf;
}
