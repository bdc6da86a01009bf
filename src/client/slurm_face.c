/*
 * slurm_face.c: what the Slurm faces share (slurm_int.h): state words,
 * Slurm's time formats, job ids and node lists as Slurm writes them, job
 * lists read page by page, and %-formats and field-name lists turned into
 * columns.
 */
#include "slurm_int.h"

#include "drover/common.h"
#include "drover/hostlist.h"
#include "drover/spec.h"

#include <ctype.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int sl_exit(int code)
{
	return code ? 1 : 0;
}

int sl_connect(struct cli *cli, const char *name)
{
	static char who[8][48];
	static int k;

	/* cli_err prints "CMD: message": Slurm's lines read "squeue: error: ..." */
	snprintf(who[k % 8], sizeof(who[0]), "%s: error", name);
	cli->cmd = who[k++ % 8];
	return sl_exit(cli_connect(cli));
}

void sl_warn(const char *name, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: warning: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const struct {
	const char *drover, *code, *name;
} states[] = {
	{ "pending", "PD", "PENDING" },     { "scheduled", "CF", "CONFIGURING" },
	{ "running", "R", "RUNNING" },      { "succeeded", "CD", "COMPLETED" },
	{ "failed", "F", "FAILED" },        { "cancelled", "CA", "CANCELLED" },
	{ "preempted", "PR", "PREEMPTED" }, { "timeout", "TO", "TIMEOUT" },
	{ "out_of_memory", "OOM", "OUT_OF_MEMORY" }, { "node_fail", "NF", "NODE_FAIL" },
};

const char *sl_state_code(const char *state, bool completing)
{
	if (completing)
		return "CG";
	for (size_t i = 0; state && i < DRV_ARRAY_SIZE(states); i++)
		if (!strcmp(state, states[i].drover))
			return states[i].code;
	return state ? state : "";
}

const char *sl_state_name(const char *state, bool completing)
{
	if (completing)
		return "COMPLETING";
	for (size_t i = 0; state && i < DRV_ARRAY_SIZE(states); i++)
		if (!strcmp(state, states[i].drover))
			return states[i].name;
	return state ? state : "";
}

long sl_uid_of(const char *user)
{
	struct passwd *pw = user && *user ? getpwnam(user) : NULL;

	return pw ? (long)pw->pw_uid : 0;
}

const char *sl_sacct_state(const json_t *job, char *buf, size_t n)
{
	const char *st = drv_json_str(job, "state");
	const char *why = drv_json_str(job, "reason");

	if (st && !strcmp(st, "scheduled")) {
		snprintf(buf, n, "RUNNING");
	} else if (st && !strcmp(st, "cancelled")) {
		char who[128] = "";

		/* the server's reason: "cancelled by USER[: text]" */
		if (why && !strncmp(why, "cancelled by ", 13))
			sscanf(why + 13, "%127[^: ]", who);
		snprintf(buf, n, "CANCELLED by %ld", sl_uid_of(who));
	} else {
		snprintf(buf, n, "%s", sl_state_name(st, false));
	}
	return buf;
}

int sl_split(char *buf, const char **list, int max)
{
	int n = 0;
	char *tok, *save = NULL;

	for (tok = strtok_r(buf, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save))
		list[n++] = tok;
	return n;
}

const char *sl_state_parse(const char *w, bool *never)
{
	*never = false;
	if (!strcasecmp(w, "S") || !strcasecmp(w, "SUSPENDED")) {
		*never = true;   /* drover never shows S (CONTRACTS.md section 1) */
		return NULL;
	}
	if (!strcasecmp(w, "CG") || !strcasecmp(w, "COMPLETING"))
		return "completing";
	for (size_t i = 0; i < DRV_ARRAY_SIZE(states); i++)
		if (!strcasecmp(w, states[i].code) || !strcasecmp(w, states[i].name) ||
		    !strcasecmp(w, states[i].drover))
			return states[i].drover;
	return NULL;
}

bool sl_job_completing(const json_t *job)
{
	const char *st = drv_json_str(job, "state");

	/* final, with tasks not known gone: the server says "completing": true */
	return st && json_is_true(json_object_get(job, "completing"));
}

void sl_secs_short(int64_t t, char *buf, size_t n)
{
	long d, h, m, s;

	if (t < 0)
		t = 0;
	d = (long)(t / 86400), h = (long)(t / 3600 % 24), m = (long)(t / 60 % 60), s = (long)(t % 60);
	if (d)
		snprintf(buf, n, "%ld-%02ld:%02ld:%02ld", d, h, m, s);
	else if (h)
		snprintf(buf, n, "%ld:%02ld:%02ld", h, m, s);
	else
		snprintf(buf, n, "%ld:%02ld", m, s);
}

void sl_secs_hms(int64_t t, char *buf, size_t n)
{
	long d, h, m, s;

	if (t < 0)
		t = 0;
	d = (long)(t / 86400), h = (long)(t / 3600 % 24), m = (long)(t / 60 % 60), s = (long)(t % 60);
	if (d)
		snprintf(buf, n, "%ld-%02ld:%02ld:%02ld", d, h, m, s);
	else
		snprintf(buf, n, "%02ld:%02ld:%02ld", h, m, s);
}

void sl_limit(const json_t *job, bool hms, char *buf, size_t n)
{
	int64_t l = drv_json_int(job, "time_limit_s", 0);

	if (l <= 0)
		snprintf(buf, n, "UNLIMITED");
	else if (hms)
		sl_secs_hms(l, buf, n);
	else
		sl_secs_short(l, buf, n);
}

void sl_time(int64_t t, const char *unknown_word, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0) {
		snprintf(buf, n, "%s", unknown_word);
		return;
	}
	localtime_r(&tt, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
}

/* "now[+-]N[units]": seconds, minutes, hours, days, weeks. */
static int64_t when_now(const char *s, int64_t now)
{
	char *end;
	long long v;
	int sign;

	if (!*s)
		return now;
	if (*s != '+' && *s != '-')
		return -1;
	sign = *s == '-' ? -1 : 1;
	v = strtoll(s + 1, &end, 10);
	if (end == s + 1 || v < 0)
		return -1;
	if (!*end || !strcasecmp(end, "seconds") || !strcasecmp(end, "s"))
		return now + sign * v;
	if (!strcasecmp(end, "minutes") || !strcasecmp(end, "min") || !strcasecmp(end, "m"))
		return now + sign * v * 60;
	if (!strcasecmp(end, "hours") || !strcasecmp(end, "hour") || !strcasecmp(end, "h"))
		return now + sign * v * 3600;
	if (!strcasecmp(end, "days") || !strcasecmp(end, "day") || !strcasecmp(end, "d"))
		return now + sign * v * 86400;
	if (!strcasecmp(end, "weeks") || !strcasecmp(end, "week") || !strcasecmp(end, "w"))
		return now + sign * v * 7 * 86400;
	return -1;
}

int64_t sl_parse_when(const char *s, int64_t now)
{
	struct tm tm;
	time_t tt = (time_t)now;
	int Y, M, D, h = 0, m = 0, sec = 0, k = 0;

	if (!strncasecmp(s, "now", 3))
		return when_now(s + 3, now);
	localtime_r(&tt, &tm);
	if (sscanf(s, "%4d-%2d-%2d%n", &Y, &M, &D, &k) == 3) {
		if (s[k] == 'T' && sscanf(s + k + 1, "%2d:%2d%n", &h, &m, &k) >= 2) {
			/* seconds optional */
			const char *r = strchr(s, 'T') + 1;
			int got = sscanf(r, "%2d:%2d:%2d", &h, &m, &sec);
			if (got < 2)
				return -1;
		} else if (s[k]) {
			return -1;
		}
		tm.tm_year = Y - 1900, tm.tm_mon = M - 1, tm.tm_mday = D;
	} else if (strlen(s) == 6 && sscanf(s, "%2d%2d%2d", &M, &D, &Y) == 3) {
		tm.tm_year = Y + 100, tm.tm_mon = M - 1, tm.tm_mday = D;
	} else if (sscanf(s, "%2d:%2d%n", &h, &m, &k) == 2) {
		if (s[k] == ':' && sscanf(s + k + 1, "%2d", &sec) != 1)
			return -1;
	} else {
		return -1;
	}
	tm.tm_hour = h, tm.tm_min = m, tm.tm_sec = sec, tm.tm_isdst = -1;
	return (int64_t)mktime(&tm);
}

const char *sl_job_id(const json_t *job, char *buf, size_t n)
{
	const json_t *a = json_object_get(job, "array_job_id");

	if (json_is_integer(a))
		snprintf(buf, n, "%lld_%lld", (long long)json_integer_value(a),
			 (long long)drv_json_int(job, "array_task_id", 0));
	else
		snprintf(buf, n, "%lld", (long long)drv_json_int(job, "id", 0));
	return buf;
}

const char *sl_job_reason(const json_t *job, char *buf, size_t n)
{
	const char *code = drv_json_str(job, "reason_code");
	const char *why = drv_json_str(job, "reason");
	const char *names[64];
	char list[1024], *p, *save = NULL;
	size_t k = 0, len;

	if (!code || !*code)
		code = "None";
	snprintf(buf, n, "%s", code);
	/* the reason function's text for it starts with UnavailableNodes:a,b */
	if (strcmp(code, "ReqNodeNotAvail") || !why || strncmp(why, "UnavailableNodes:", 17))
		return buf;
	len = strcspn(why + 17, ": ");
	snprintf(list, sizeof(list), "%.*s", (int)DRV_MIN(len, sizeof(list) - 1), why + 17);
	for (p = strtok_r(list, ",", &save); p && k < DRV_ARRAY_SIZE(names);
	     p = strtok_r(NULL, ",", &save))
		names[k++] = p;
	len = (size_t)snprintf(buf, n, "%s, UnavailableNodes:", code);
	if (len < n)
		drv_hostlist_compress(names, k, buf + len, n - len);
	return buf;
}

const char *sl_job_nodelist(const json_t *job, char *buf, size_t n)
{
	char flat[4096];
	const char *names[512];
	size_t k = 0;
	char *p, *save = NULL;

	buf[0] = '\0';
	drv_json_text(job, "nodelist", flat, sizeof(flat));
	if (!flat[0])
		job_nodes(job, flat, sizeof(flat));
	for (p = strtok_r(flat, ",", &save); p && k < DRV_ARRAY_SIZE(names);
	     p = strtok_r(NULL, ",", &save))
		names[k++] = p;
	if (k)
		drv_hostlist_compress(names, k, buf, n);
	return buf;
}

int sl_each_job(struct cli *cli, const char *path, int (*fn)(const json_t *job, void *cls),
		void *cls)
{
	char page[2048];
	long long after = -1;

	for (;;) {
		struct drv_client_reply r;
		const json_t *items, *job, *next;
		size_t i;
		int rc, stop = 0;

		if (after >= 0)
			snprintf(page, sizeof(page), "%s%cafter=%lld", path,
				 strchr(path, '?') ? '&' : '?', after);
		else
			snprintf(page, sizeof(page), "%s", path);
		rc = cli_call(cli, "GET", page, NULL, NULL, 0, &r);
		if (rc)
			return sl_exit(rc);
		items = cli_items(r.json);
		if (!items) {
			cli_err(cli, "the server's reply to GET %s is not a list", path);
			drv_client_reply_release(&r);
			return 1;
		}
		json_array_foreach(items, i, job)
			if (!stop)
				stop = fn(job, cls);
		next = json_object_get(r.json, "next_after");
		after = json_is_integer(next) ? (long long)json_integer_value(next) : -1;
		drv_client_reply_release(&r);
		if (stop || after < 0)
			return 0;
	}
}

int sl_cluster(struct cli *cli, json_t **out)
{
	struct drv_client_reply r;
	int rc = cli_call(cli, "GET", "/v1/cluster", NULL, NULL, 0, &r);

	if (rc)
		return sl_exit(rc);
	*out = json_incref(r.json);
	drv_client_reply_release(&r);
	return 0;
}

/* ---- formats ---- */

static void add_prefix(struct sl_col *c, const char *from, size_t len)
{
	size_t k = strlen(c->prefix);

	if (k + len >= sizeof(c->prefix))
		len = sizeof(c->prefix) - 1 - k;
	memcpy(c->prefix + k, from, len);
	c->prefix[k + len] = '\0';
}

int sl_fmt_percent(const char *spec, const struct sl_letter *letters, struct sl_fmt *out,
		   char *err, size_t errsz)
{
	const char *p = spec, *lit = spec;

	memset(out, 0, sizeof(*out));
	while (*p) {
		const struct sl_letter *l;
		struct sl_col *c;
		bool right = false;
		int w = 0;

		if (*p != '%') {
			p++;
			continue;
		}
		if (p[1] == '%') {   /* a literal percent sign */
			p += 2;
			continue;
		}
		if (out->ncols == (int)DRV_ARRAY_SIZE(out->cols)) {
			snprintf(err, errsz, "more than %zu fields", DRV_ARRAY_SIZE(out->cols));
			return -1;
		}
		c = &out->cols[out->ncols];
		memset(c, 0, sizeof(*c));
		add_prefix(c, lit, (size_t)(p - lit));
		p++;
		if (*p == '.')
			right = true, p++;
		else if (*p == '-')
			p++;
		while (isdigit((unsigned char)*p))
			w = w * 10 + (*p++ - '0');
		for (l = letters; l->letter && l->letter != *p; l++)
			;
		if (!l->letter) {
			snprintf(err, errsz, "%%%c: not a field (docs/slurm.md lists them)",
				 *p ? *p : ' ');
			return -1;
		}
		c->field = l->field;
		c->width = w;
		c->right = right;
		out->ncols++;
		lit = ++p;
	}
	snprintf(out->suffix, sizeof(out->suffix), "%s", lit);
	return 0;
}

int sl_fmt_names(const char *spec, const struct sl_name *names, char sep, struct sl_fmt *out,
		 char *err, size_t errsz)
{
	char buf[2048], *tok, *save = NULL, seps[2] = { sep, '\0' };

	memset(out, 0, sizeof(*out));
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, seps, &save); tok; tok = strtok_r(NULL, seps, &save)) {
		char *w = strpbrk(tok, sep == ',' && strchr(tok, ':') ? ":" : "%");
		const struct sl_name *nm;
		struct sl_col *c;

		while (*tok == ' ')
			tok++;
		if (w)
			*w++ = '\0';
		for (nm = names; nm->name && strcasecmp(nm->name, tok); nm++)
			;
		if (!nm->name) {
			snprintf(err, errsz, "Invalid field requested: \"%s\"", tok);
			return -1;
		}
		if (out->ncols == (int)DRV_ARRAY_SIZE(out->cols)) {
			snprintf(err, errsz, "more than %zu fields", DRV_ARRAY_SIZE(out->cols));
			return -1;
		}
		c = &out->cols[out->ncols++];
		memset(c, 0, sizeof(*c));
		c->field = nm->field;
		c->width = nm->width < 0 ? -nm->width : nm->width;
		c->right = nm->width > 0;
		if (w && *w) {
			char *end;
			long v = strtol(w, &end, 10);

			if (*end == '.' || *end == '\0')
				c->width = (int)(v < 0 ? 0 : v);
		}
	}
	return 0;
}

void sl_cell(FILE *f, const struct sl_col *c, const char *v, bool cut)
{
	int w = c->width, len = (int)strlen(v);

	fputs(c->prefix, f);
	if (!w) {
		fputs(v, f);
		return;
	}
	if (len > w && cut) {
		fwrite(v, 1, (size_t)w, f);
		return;
	}
	fprintf(f, c->right ? "%*s" : "%-*s", w, v);
}

unsigned long long sl_array_element(const json_t *parent, long long task)
{
	const json_t *el = json_object_get(parent, "elements");
	const char *spec = drv_json_str(el, "array");
	struct drv_array a = { 0 };
	unsigned long long id = 0;

	if (!spec || drv_array_parse(spec, &a) < 0)
		return 0;
	for (int32_t k = 0; k < a.count; k++)
		if (drv_array_index(&a, k) == task) {
			id = (unsigned long long)drv_json_int(el, "first", 0) + (unsigned long long)k;
			break;
		}
	drv_array_release(&a);
	return id;
}
