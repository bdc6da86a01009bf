/*
 * manifest_node.c: reading values out of a manifest's libfyaml nodes, for
 * every manifest_*.c: errors at a node's line:col, a mapping's field,
 * field paths (metadata.labels["app.kubernetes.io/name"]), integers,
 * strings, lists and maps of strings under drover's limits, and keeping
 * the fields drover does not act on in spec->ignored with a warning.
 */
#include "spec_int.h"

#include <libfyaml.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mf_err(struct mf_ctx *c, struct fy_node *n, const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	drv_yaml_verr(c->d, n, path, fmt, ap);
	va_end(ap);
}

/* The scalar text of n, or NULL when n is not a scalar. */
const char *mf_scalar(struct fy_node *n)
{
	if (!n || !fy_node_is_scalar(n) || fy_node_is_alias(n))
		return NULL;
	return fy_node_get_scalar0(n);
}

/* Value of key in mapping m, or NULL. */
struct fy_node *mf_field(struct fy_node *m, const char *key)
{
	void *it = NULL;
	struct fy_node_pair *p;
	if (!m || !fy_node_is_mapping(m))
		return NULL;
	while ((p = fy_node_mapping_iterate(m, &it))) {
		const char *k = mf_scalar(fy_node_pair_key(p));
		if (k && strcmp(k, key) == 0)
			return fy_node_pair_value(p);
	}
	return NULL;
}

void mf_join(char *out, size_t sz, const char *path, const char *key)
{
	bool plain = true;
	const char *k;
	for (k = key; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		      (*k >= '0' && *k <= '9') || *k == '_'))
			plain = false;
	if (plain)
		snprintf(out, sz, "%s%s%s", path, *path ? "." : "", key);
	else
		snprintf(out, sz, "%s[\"%s\"]", path, key);
}

void drv_spec_keep_ignored(struct drv_jobspec *s, const char *path, json_t *value)
{
	if (!s->ignored)
		s->ignored = json_object();
	json_object_set_new(s->ignored, path, value);
	drv_jobspec_warn(s, "%s: kept, not acted on by drover", path);
}

/* Keeps every key of mapping m not in known[] as ignored. */
void mf_keep_unknown(struct drv_jobspec *s, struct fy_node *m, const char *path,
		     const char *const *known)
{
	void *it = NULL;
	struct fy_node_pair *p;
	char fp[512];
	if (!m || !fy_node_is_mapping(m))
		return;
	while ((p = fy_node_mapping_iterate(m, &it))) {
		const char *k = mf_scalar(fy_node_pair_key(p));
		const char *const *a;
		if (!k)
			continue;
		for (a = known; *a; a++)
			if (strcmp(*a, k) == 0)
				break;
		if (*a)
			continue;
		mf_join(fp, sizeof(fp), path, k);
		drv_spec_keep_ignored(s, fp, drv_yaml_node_json(fy_node_pair_value(p)));
	}
}

/* Reads a non-negative integer (plain or quoted). */
bool mf_int(struct mf_ctx *c, struct fy_node *n, const char *path, int64_t max,
	    int64_t *out)
{
	const char *t = mf_scalar(n), *p;
	int64_t v = 0;
	if (!t || !*t) {
		mf_err(c, n, path, "found %s, expected a non-negative integer",
		       t ? "an empty value" : drv_yaml_kind(n));
		return false;
	}
	for (p = t; *p; p++) {
		if (*p < '0' || *p > '9') {
			mf_err(c, n, path, "found \"%.64s\", expected a non-negative integer", t);
			return false;
		}
		v = v * 10 + (*p - '0');
		if (v > max) {
			mf_err(c, n, path, "found %.64s, expected at most %lld", t, (long long)max);
			return false;
		}
	}
	*out = v;
	return true;
}

char *mf_str(struct mf_ctx *c, struct fy_node *n, const char *path)
{
	const char *t = mf_scalar(n);
	if (!t) {
		mf_err(c, n, path, "found %s, expected a string", drv_yaml_kind(n));
		return NULL;
	}
	if (strlen(t) > DRV_SPEC_MAX_STRING) {
		mf_err(c, n, path, "found a string of %zu bytes, over the limit of %d", strlen(t),
		       DRV_SPEC_MAX_STRING);
		return NULL;
	}
	return drv_strdup(t);
}

char **mf_strv(struct mf_ctx *c, struct fy_node *n, const char *path, int32_t *count)
{
	void *it = NULL;
	struct fy_node *e;
	char **v;
	int i = 0;
	*count = 0;
	if (!fy_node_is_sequence(n)) {
		mf_err(c, n, path, "found %s, expected a list of strings", drv_yaml_kind(n));
		return NULL;
	}
	if (fy_node_sequence_item_count(n) > DRV_SPEC_MAX_ITEMS) {
		mf_err(c, n, path, "found %d items, over the limit of %d",
		       fy_node_sequence_item_count(n), DRV_SPEC_MAX_ITEMS);
		return NULL;
	}
	v = drv_calloc((size_t)fy_node_sequence_item_count(n) + 1, sizeof(char *));
	while ((e = fy_node_sequence_iterate(n, &it))) {
		char p[560];
		char *s;
		snprintf(p, sizeof(p), "%s[%d]", path, i++);
		if ((s = mf_str(c, e, p)))
			v[(*count)++] = s;
	}
	return v;
}

struct drv_label *mf_labels(struct mf_ctx *c, struct fy_node *n, const char *path,
			    int32_t *count)
{
	void *it = NULL;
	struct fy_node_pair *p;
	struct drv_label *v;
	*count = 0;
	if (!fy_node_is_mapping(n)) {
		mf_err(c, n, path, "found %s, expected a mapping of strings", drv_yaml_kind(n));
		return NULL;
	}
	if (fy_node_mapping_item_count(n) > DRV_SPEC_MAX_ITEMS) {
		mf_err(c, n, path, "found too many entries, over the limit of %d", DRV_SPEC_MAX_ITEMS);
		return NULL;
	}
	v = drv_calloc((size_t)fy_node_mapping_item_count(n) + 1, sizeof(*v));
	while ((p = fy_node_mapping_iterate(n, &it))) {
		const char *k = mf_scalar(fy_node_pair_key(p));
		char fp[560];
		char *val;
		if (!k) {
			mf_err(c, fy_node_pair_key(p), path, "found a complex key, expected a string");
			continue;
		}
		mf_join(fp, sizeof(fp), path, k);
		if (!(val = mf_str(c, fy_node_pair_value(p), fp)))
			continue;
		v[*count].key = drv_strdup(k);
		v[*count].value = val;
		(*count)++;
	}
	return v;
}

const char *mf_label_get(const struct drv_label *l, int32_t n, const char *key)
{
	int32_t i;
	for (i = 0; i < n; i++)
		if (strcmp(l[i].key, key) == 0)
			return l[i].value;
	return NULL;
}
