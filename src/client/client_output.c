/*
 * client_output.c: how the client prints: plain tables padded like squeue and
 * sinfo print theirs, JSON through jansson and YAML through libfyaml's
 * emitter (-o json|yaml). Fields of the server's JSON are read with
 * json.h's getters.
 */
#include "drover/client.h"
#include "drover/common.h"

#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int drv_output_parse(const char *s, enum drv_output *out)
{
	if (!s || !*s || !strcmp(s, "table"))
		*out = DRV_OUT_TABLE;
	else if (!strcmp(s, "wide"))
		*out = DRV_OUT_WIDE;
	else if (!strcmp(s, "json"))
		*out = DRV_OUT_JSON;
	else if (!strcmp(s, "yaml"))
		*out = DRV_OUT_YAML;
	else
		return DRV_EINVAL;
	return 0;
}

int drv_emit_json(FILE *f, const json_t *v)
{
	if (json_dumpf(v, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY |
			       JSON_REAL_PRECISION(16)) < 0)
		return DRV_EIO;
	fputc('\n', f);
	return 0;
}

/*
 * Would the plain scalar s read back as something other than this string
 * (a number, a boolean, null, nothing)? Then it is emitted double-quoted.
 * The emitter itself quotes strings that plain style cannot hold at all
 * ("a: b", leading '-', '#', newlines).
 */
static int needs_quotes(const char *s)
{
	static const char *const words[] = { "true", "false", "null", "yes", "no", "on",
					     "off", "y", "n", "~", ".inf", ".nan" };
	size_t i;

	if (!*s)
		return 1;
	for (i = 0; i < DRV_ARRAY_SIZE(words); i++)
		if (drv_strcaseeq(s, words[i]))
			return 1;
	if (strchr("0123456789+-.", *s))
		return 1;
	/* Leading and trailing blanks and control characters: the emitter
	 * would keep them, but a reader could not tell them apart. */
	if (*s == ' ' || s[strlen(s) - 1] == ' ' || strpbrk(s, "\t\r\n\\\""))
		return 1;
	/* YAML indicators that may not start a plain scalar, and the two
	 * sequences that end one early; libfyaml's emitter misses some. */
	if (strchr("#@%!|>?`'&*-[]{},:", *s) || strstr(s, ": ") || strstr(s, " #") ||
	    s[strlen(s) - 1] == ':')
		return 1;
	return 0;
}

static struct fy_node *to_fy(struct fy_document *d, const json_t *v)
{
	struct fy_node *n = NULL;
	char num[64];
	size_t i;
	const char *key;
	const json_t *x;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		n = fy_node_create_mapping(d);
		json_object_foreach((json_t *)v, key, x)
			fy_node_mapping_append(n, fy_node_create_scalar_copy(d, key, strlen(key)),
					       to_fy(d, x));
		break;
	case JSON_ARRAY:
		n = fy_node_create_sequence(d);
		json_array_foreach(v, i, x)
			fy_node_sequence_append(n, to_fy(d, x));
		break;
	case JSON_STRING: {
		const char *s = json_string_value(v);
		if (needs_quotes(s)) {
			/* the document keeps pointing into the text: it takes it over */
			char *q = json_dumps(v, JSON_ENCODE_ANY);
			n = fy_node_build_from_malloc_string(d, q, FY_NT);
		} else {
			n = fy_node_create_scalar_copy(d, s, strlen(s));
		}
		break;
	}
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		n = fy_node_create_scalar_copy(d, num, strlen(num));
		break;
	case JSON_REAL:
		snprintf(num, sizeof(num), "%.16g", json_real_value(v)); /* as the server */
		n = fy_node_create_scalar_copy(d, num, strlen(num));
		break;
	case JSON_TRUE:
		n = fy_node_create_scalar(d, "true", 4);
		break;
	case JSON_FALSE:
		n = fy_node_create_scalar(d, "false", 5);
		break;
	case JSON_NULL:
		n = fy_node_create_scalar(d, "null", 4);
		break;
	}
	return n;
}

int drv_emit_yaml(FILE *f, const json_t *v)
{
	struct fy_document *d = fy_document_create(NULL);
	int rc = 0;

	if (!d)
		return DRV_EIO;
	fy_document_set_root(d, to_fy(d, v));
	if (fy_emit_document_to_fp(d, FYECF_MODE_BLOCK | FYECF_DOC_START_MARK_OFF |
					      FYECF_INDENT_2 | FYECF_WIDTH_INF, f))
		rc = DRV_EIO;
	fy_document_destroy(d);
	return rc;
}

void drv_table_init(struct drv_table *t, size_t ncols, const char *const *headers)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	drv_table_add(t, headers);
}

void drv_table_add(struct drv_table *t, const char *const *cells)
{
	size_t i;

	DRV_GROW(t->cells, (t->nrows + 1) * t->ncols, t->cap);
	for (i = 0; i < t->ncols; i++)
		t->cells[t->nrows * t->ncols + i] =
			drv_strdup(cells[i] && *cells[i] ? cells[i] : "-");
	t->nrows++;
}

void drv_table_print(const struct drv_table *t, FILE *f)
{
	drv_table_print_indent(t, f, 0);
}

void drv_table_print_indent(const struct drv_table *t, FILE *f, int indent)
{
	size_t *w = drv_calloc(t->ncols, sizeof(*w));
	size_t r, c;

	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols; c++)
			w[c] = DRV_MAX(w[c], strlen(t->cells[r * t->ncols + c]));
	for (r = 0; r < t->nrows; r++) {
		fprintf(f, "%*s", indent, "");
		for (c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];
			if (c + 1 == t->ncols)
				fprintf(f, "%s\n", s);
			else
				fprintf(f, "%-*s  ", (int)w[c], s);
		}
	}
	drv_free(w);
}

void drv_table_release(struct drv_table *t)
{
	size_t i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		drv_free(t->cells[i]);
	drv_free(t->cells);
	memset(t, 0, sizeof(*t));
}

char *drv_fmt_duration(long long secs, char *buf, size_t n)
{
	long long d, h, m, s;

	if (secs < 0)
		secs = 0;
	d = secs / 86400;
	h = secs / 3600 % 24;
	m = secs / 60 % 60;
	s = secs % 60;
	if (d)
		snprintf(buf, n, "%lld-%02lld:%02lld:%02lld", d, h, m, s);
	else if (h)
		snprintf(buf, n, "%lld:%02lld:%02lld", h, m, s);
	else
		snprintf(buf, n, "%lld:%02lld", m, s);
	return buf;
}
