/*
 * fymark.c: where a libfyaml node starts in its file and what it is, for
 * error messages. Shared by every reader of YAML (manifests, cluster and
 * tenants files, the server's config), which all report "file:line:col:
 * path: found X, expected Y" for any node, collections included.
 */
#include "spec_int.h"

#include <libfyaml.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void drv_spec_node_mark(struct fy_node *n, int *line, int *col)
{
	int guard = 0;

	*line = *col = 0;
	/* a collection has no token of its own: use its first scalar's */
	while (n && guard++ < DRV_SPEC_MAX_DEPTH) {
		if (fy_node_is_scalar(n)) {
			struct fy_token *t = fy_node_get_scalar_token(n);
			const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
			if (m) {
				*line = m->line + 1; /* fy_mark is 0-based */
				*col = m->column + 1;
			}
			return;
		} else if (fy_node_is_mapping(n)) {
			void *it = NULL;
			struct fy_node_pair *p = fy_node_mapping_iterate(n, &it);
			n = p ? fy_node_pair_key(p) : NULL;
		} else if (fy_node_is_sequence(n)) {
			void *it = NULL;
			n = fy_node_sequence_iterate(n, &it);
		} else {
			return;
		}
	}
}

void drv_yaml_found(struct fy_node *n, char *buf, size_t sz)
{
	const char *s = drv_yaml_scalar(n);

	if (!n || (s && !*s)) {
		snprintf(buf, sz, "nothing");
	} else if (s) {
		/* one line: a multi-line scalar's breaks and controls shown as spaces */
		char *p;
		snprintf(buf, sz, "'%.60s'", s);
		for (p = buf; *p; p++)
			if ((unsigned char)*p < 0x20)
				*p = ' ';
	} else {
		snprintf(buf, sz, "%s", fy_node_is_mapping(n) ? "a mapping" : "a list");
	}
}

void drv_yaml_verr(struct drv_diags *d, struct fy_node *n, const char *path, const char *fmt,
		   va_list ap)
{
	char buf[1024];
	int line, col;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	drv_spec_node_mark(n, &line, &col);
	drv_diag_err(d, line, col, path, "%s", buf);
}

void drv_yaml_err(struct drv_diags *d, struct fy_node *n, const char *path, const char *fmt,
		  ...)
{
	va_list ap;

	va_start(ap, fmt);
	drv_yaml_verr(d, n, path && *path ? path : NULL, fmt, ap);
	va_end(ap);
}

const char *drv_yaml_scalar(struct fy_node *n)
{
	if (!n || !fy_node_is_scalar(n))
		return NULL;
	return fy_node_get_scalar0(n);
}

const char *drv_yaml_kind(struct fy_node *n)
{
	if (!n)
		return "nothing";
	if (fy_node_is_mapping(n))
		return "a mapping";
	if (fy_node_is_sequence(n))
		return "a list";
	return "a scalar";
}

void drv_yaml_join(char *out, size_t sz, const char *base, const char *key)
{
	int n;

	if (base && *base)
		n = snprintf(out, sz, "%s.%s", base, key);
	else
		n = snprintf(out, sz, "%s", key);
	if (n >= (int)sz && sz > 4)
		memcpy(out + sz - 4, "...", 4); /* deep paths end in ... */
}

struct fy_node *drv_yaml_pair_at(struct fy_node_pair *p)
{
	struct fy_node *v = fy_node_pair_value(p);
	const char *s = drv_yaml_scalar(v);

	return v && !(s && !*s) ? v : fy_node_pair_key(p);
}
