/*
 * proto_read.c: the agent protocol's JSON helpers (proto_int.h): the
 * unknown keys already logged per peer, the reader that walks a document
 * knowing its key path, and the writer's small helpers.
 */
#include "proto_int.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* --- the unknown keys already logged ---------------------------------------- */

#define SEEN_CAP 4096

struct drv_proto_seen {
	pthread_mutex_t mu;
	char **keys;             /* "peer\x1fpath" */
	size_t n, cap;
};

struct drv_proto_seen *drv_proto_seen_new(void)
{
	struct drv_proto_seen *s = drv_calloc(1, sizeof(*s));

	pthread_mutex_init(&s->mu, NULL);
	return s;
}

void drv_proto_seen_free(struct drv_proto_seen *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		drv_free(s->keys[i]);
	drv_free(s->keys);
	pthread_mutex_destroy(&s->mu);
	drv_free(s);
}

/* True the first time (peer, path) is seen; false after, and past the cap. */
static bool seen_first(struct drv_proto_seen *s, const char *peer, const char *path)
{
	char key[320];
	bool first = true;

	if (!s)
		return true;
	snprintf(key, sizeof(key), "%s\x1f%s", peer ? peer : "", path);
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n && first; i++)
		first = strcmp(s->keys[i], key) != 0;
	if (first && s->n < SEEN_CAP) {
		DRV_GROW(s->keys, s->n + 1, s->cap);
		s->keys[s->n++] = drv_strdup(key);
	} else {
		first = false;
	}
	pthread_mutex_unlock(&s->mu);
	return first;
}

/* --- the reader ------------------------------------------------------------- */

void proto_rd_init(struct proto_rd *r, struct drv_proto_dec *d)
{
	r->d = d;
	r->path[0] = '\0';
	r->len = 0;
	r->failed = false;
	d->err[0] = '\0';
}

/* Appends ".key" (or "key" at the top) and returns the old length. */
size_t proto_push_key(struct proto_rd *r, const char *key)
{
	size_t mark = r->len;
	int n = snprintf(r->path + r->len, sizeof(r->path) - r->len, "%s%s", r->len ? "." : "", key);

	if (n > 0)
		r->len = DRV_MIN(r->len + (size_t)n, sizeof(r->path) - 1);
	return mark;
}

void proto_push_index(struct proto_rd *r, size_t i)
{
	int n = snprintf(r->path + r->len, sizeof(r->path) - r->len, "[%zu]", i);

	if (n > 0)
		r->len = DRV_MIN(r->len + (size_t)n, sizeof(r->path) - 1);
}

void proto_pop(struct proto_rd *r, size_t mark)
{
	r->len = mark;
	r->path[mark] = '\0';
}

const char *proto_type_name(const json_t *v)
{
	if (!v)
		return "nothing";
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "a mapping";
	case JSON_ARRAY: return "a list";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

/* Fails the decode at the current path plus key (first failure wins). */
int proto_fail_at(struct proto_rd *r, const char *key, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	if (r->failed)
		return DRV_EINVAL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(r->d->err, sizeof(r->d->err), "%s%s%s: %s", r->path,
		 key && r->len ? "." : "", key ? key : "", msg);
	if (!r->d->err[0] || r->d->err[0] == ':')
		snprintf(r->d->err, sizeof(r->d->err), "message: %s", msg);
	r->failed = true;
	return DRV_EINVAL;
}

/* The value of key in o, after checking its type with is(); NULL when
 * absent (or null, for an optional key) or on failure (r->failed). */
json_t *proto_get(struct proto_rd *r, const json_t *o, const char *key, bool req,
		     int (*is)(const json_t *), const char *want)
{
	json_t *v = json_object_get(o, key);

	if (!v || (json_is_null(v) && !req)) {
		if (req)
			proto_fail_at(r, key, "missing (expected %s)", want);
		return NULL;
	}
	if (!is(v)) {
		proto_fail_at(r, key, "expected %s, found %s", want, proto_type_name(v));
		return NULL;
	}
	return v;
}

int proto_is_str(const json_t *v) { return json_is_string(v); }
int proto_is_int(const json_t *v) { return json_is_integer(v); }
int proto_is_num(const json_t *v) { return json_is_number(v); }
int proto_is_bool(const json_t *v) { return json_is_boolean(v); }
int proto_is_arr(const json_t *v) { return json_is_array(v); }
int proto_is_obj(const json_t *v) { return json_is_object(v); }

void proto_get_str(struct proto_rd *r, const json_t *o, const char *key, bool req, const char **out)
{
	json_t *v = proto_get(r, o, key, req, proto_is_str, "a string");

	if (v)
		*out = json_string_value(v);
}

void proto_get_int(struct proto_rd *r, const json_t *o, const char *key, bool req, int64_t *out)
{
	json_t *v = proto_get(r, o, key, req, proto_is_int, "an integer");

	if (v)
		*out = json_integer_value(v);
}

void proto_get_num(struct proto_rd *r, const json_t *o, const char *key, double *out)
{
	json_t *v = proto_get(r, o, key, false, proto_is_num, "a number");

	if (v)
		*out = json_number_value(v);
}

void proto_get_bool(struct proto_rd *r, const json_t *o, const char *key, bool req, bool *out)
{
	json_t *v = proto_get(r, o, key, req, proto_is_bool, "true or false");

	if (v)
		*out = json_is_true(v);
}

json_t *proto_get_array(struct proto_rd *r, const json_t *o, const char *key, bool req)
{
	return proto_get(r, o, key, req, proto_is_arr, "a list");
}

/* Logs the keys of o that are not in known[] (a NULL-ended list). */
void proto_unknown_keys(struct proto_rd *r, const json_t *o, const char *const *known)
{
	const char *key;
	json_t *v;

	if (!r->d->log)
		return;
	json_object_foreach((json_t *)o, key, v) {
		char norm[192], line[512];
		size_t k, n = 0, mark;
		const char *p;

		for (k = 0; known[k] && strcmp(known[k], key); k++)
			;
		if (known[k])
			continue;
		mark = proto_push_key(r, key);
		for (p = r->path; *p && n + 1 < sizeof(norm); p++) {   /* "a[3].b" -> "a[].b" */
			if (*p == '[')
				for (norm[n++] = *p++; *p && *p != ']'; p++)
					;
			if (*p)
				norm[n++] = *p;
		}
		norm[n] = '\0';
		if (seen_first(r->d->seen, r->d->peer, norm)) {
			snprintf(line, sizeof(line), "%s: unknown key %s ignored",
				 r->d->peer ? r->d->peer : "peer", norm);
			r->d->log(r->d->log_cls, line);
		}
		proto_pop(r, mark);
	}
}

/* Checks that o is a mapping, at the current path. */
bool proto_expect_obj(struct proto_rd *r, const json_t *o)
{
	if (json_is_object(o))
		return true;
	proto_fail_at(r, NULL, "expected a mapping, found %s", proto_type_name(o));
	return false;
}

/*
 * Decodes the list at key into a new array of n elements of size elsz,
 * each element through one(r, item, element). *out NULL when absent.
 */
void proto_get_list(struct proto_rd *r, const json_t *o, const char *key, bool req, size_t elsz,
		   proto_item_fn one, void *out, size_t *n)
{
	json_t *arr = proto_get_array(r, o, key, req), *item;
	char *els;
	size_t i, mark;

	*(void **)out = NULL;
	*n = 0;
	if (!arr || !json_array_size(arr))
		return;
	els = drv_calloc(json_array_size(arr), elsz);
	*(void **)out = els;
	mark = proto_push_key(r, key);
	json_array_foreach(arr, i, item) {
		size_t m = r->len;

		proto_push_index(r, i);
		one(r, item, els + i * elsz);
		proto_pop(r, m);
		*n = i + 1;
		if (r->failed)
			break;
	}
	proto_pop(r, mark);
}

void proto_item_str(struct proto_rd *r, const json_t *item, void *el)
{
	if (!json_is_string(item))
		proto_fail_at(r, NULL, "expected a string, found %s", proto_type_name(item));
	else
		*(const char **)el = json_string_value(item);
}

void proto_item_int(struct proto_rd *r, const json_t *item, void *el)
{
	if (!json_is_integer(item))
		proto_fail_at(r, NULL, "expected an integer, found %s", proto_type_name(item));
	else
		*(int64_t *)el = json_integer_value(item);
}

/* A mapping of strings, in its order. */
void proto_get_kv(struct proto_rd *r, const json_t *o, const char *key, struct drv_proto_kv **out,
		 size_t *n)
{
	json_t *m = proto_get(r, o, key, false, proto_is_obj, "a mapping"), *v;
	const char *name;
	size_t i = 0, mark;

	*out = NULL;
	*n = 0;
	if (!m || !json_object_size(m))
		return;
	*out = drv_calloc(json_object_size(m), sizeof(**out));
	mark = proto_push_key(r, key);
	json_object_foreach(m, name, v) {
		if (!json_is_string(v)) {
			proto_fail_at(r, name, "expected a string, found %s", proto_type_name(v));
			break;
		}
		(*out)[i].name = name;
		(*out)[i++].value = json_string_value(v);
	}
	*n = i;
	proto_pop(r, mark);
}

/* --- writer helpers ----------------------------------------------------------- */

void proto_put_str(json_t *o, const char *key, const char *s)
{
	json_object_set_new(o, key, s ? json_string(s) : json_null());
}

void proto_put_opt_str(json_t *o, const char *key, const char *s)
{
	if (s)
		json_object_set_new(o, key, json_string(s));
}

void proto_put_int(json_t *o, const char *key, int64_t v)
{
	json_object_set_new(o, key, json_integer((json_int_t)v));
}

json_t *proto_int_list(const int64_t *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer((json_int_t)v[i]));
	return a;
}

json_t *proto_str_list(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i] ? v[i] : ""));
	return a;
}

json_t *drv_proto_kv_encode(const struct drv_proto_kv *kv, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; i < n; i++)
		json_object_set_new(o, kv[i].name, json_string(kv[i].value ? kv[i].value : ""));
	return o;
}

/* Finishes a decode: on failure the message is released and zeroed. */
int proto_finish(struct proto_rd *r, json_t *j, json_t **doc, void (*release)(void *), void *m)
{
	if (r->failed) {
		release(m);
		return DRV_EINVAL;
	}
	*doc = json_incref(j);
	return 0;
}

