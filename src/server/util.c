/*
 * util.c: small helpers of the controller: RFC 3339 times in replies,
 * state names, GPU index lists.
 */
#include "server_int.h"

#include <string.h>

json_t *srv_json_time(int64_t t)
{
	char b[32];

	if (t <= 0)
		return json_null();
	drv_rfc3339(t, b, sizeof(b));
	return json_string(b);
}

json_t *srv_json_usd(int64_t micro)
{
	return json_real((double)micro / 1e6);
}

static const char *const jnames[J_NSTATES] = { "pending", "scheduled", "running", "succeeded",
					       "failed", "cancelled", "preempted",
					       "out_of_memory", "timeout", "node_fail" };
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
	return st == J_SUCCEEDED || st == J_FAILED || st == J_CANCELLED || st == J_OUT_OF_MEMORY ||
	       st == J_TIMEOUT || st == J_NODE_FAIL;
}

void srv_set_str(char **dst, const char *src)
{
	char *n;

	/* a pass sets every pending job's reason again, mostly to the same */
	if (*dst && src && strcmp(*dst, src) == 0)
		return;
	n = src ? drv_strdup(src) : NULL;

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
