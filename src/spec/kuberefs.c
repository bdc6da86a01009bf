/*
 * kuberefs.c: the checks of a job's references to Kubernetes Secrets and
 * ConfigMaps (docs/job-format.md, "Secrets and ConfigMaps"): an env
 * entry's valueFrom, a container's envFrom, and drover's form of a
 * mounted secret or configMap volume (the mount and its volume in one
 * item). The manifest reader and the canonical reader both keep these in
 * Kubernetes' own JSON shape and check them here, so the controller that
 * resolves them at launch reads only what passed.
 */
#include "drover/json.h"
#include "drover/spec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct ck {
	char *where;
	size_t wn;
	char *what;
	size_t n;
};

static const char *jtype(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "a mapping";
	case JSON_ARRAY: return "a list";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: case JSON_REAL: return "a number";
	case JSON_TRUE: case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

static bool bad(struct ck *c, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool bad(struct ck *c, const char *where, const char *fmt, ...)
{
	va_list ap;

	snprintf(c->where, c->wn, "%s", where);
	va_start(ap, fmt);
	vsnprintf(c->what, c->n, fmt, ap);
	va_end(ap);
	return false;
}

/* Only keys among allowed (NULL-ended). */
static bool keys_ok(struct ck *c, const json_t *o, const char *at, const char *const *allowed)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v) {
		const char *const *a;
		char w[300];

		for (a = allowed; *a && strcmp(*a, k) != 0; a++)
			;
		if (!*a) {
			char list[200] = "";

			for (a = allowed; *a; a++)
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
					 a == allowed ? "" : ", ", *a);
			snprintf(w, sizeof(w), "%s.%.200s", at, k);
			return bad(c, w, "found a field drover does not know, expected one of %s",
				   list);
		}
	}
	return true;
}

/* A DNS subdomain (RFC 1123), as Kubernetes object names are. */
static bool dns_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.'))
			return false;
	}
	return s[0] != '-' && s[0] != '.' && s[n - 1] != '-' && s[n - 1] != '.';
}

static bool str_field(struct ck *c, const json_t *o, const char *at, const char *k, bool req,
		      bool dns)
{
	json_t *v = json_object_get(o, k);
	char w[300];

	snprintf(w, sizeof(w), "%s.%s", at, k);
	if (!v)
		return req ? bad(c, w, "found nothing, expected %s", dns ? "an object name"
								     : "a string") : true;
	if (!json_is_string(v))
		return bad(c, w, "found %s, expected a string", jtype(v));
	if (req && !*json_string_value(v))
		return bad(c, w, "found an empty string, expected %s", dns ? "an object name"
									 : "a string");
	if (dns && !dns_name(json_string_value(v)))
		return bad(c, w, "found \"%.64s\", expected a name of lowercase letters, digits, "
			   "'-' and '.'", json_string_value(v));
	return true;
}

static bool bool_field(struct ck *c, const json_t *o, const char *at, const char *k)
{
	json_t *v = json_object_get(o, k);
	char w[300];

	snprintf(w, sizeof(w), "%s.%s", at, k);
	if (v && !json_is_boolean(v))
		return bad(c, w, "found %s, expected true or false", jtype(v));
	return true;
}

/* A file mode: 0 to 0777 (JSON has no octal: 420 is 0644). */
static bool mode_field(struct ck *c, const json_t *o, const char *at, const char *k)
{
	json_t *v = json_object_get(o, k);
	char w[300];

	snprintf(w, sizeof(w), "%s.%s", at, k);
	if (v && (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 0777))
		return bad(c, w, "found %s, expected a file mode from 0 to 511 (0777)",
			   json_is_integer(v) ? "a number out of range" : jtype(v));
	return true;
}

/* A path below a directory: relative, no "..". */
static bool rel_path(const char *p)
{
	const char *s = p;

	if (!*p || *p == '/')
		return false;
	while (*s) {
		const char *e = strchr(s, '/');
		size_t l = e ? (size_t)(e - s) : strlen(s);

		if (l == 2 && s[0] == '.' && s[1] == '.')
			return false;
		s += l + (e ? 1 : 0);
	}
	return true;
}

bool drv_spec_check_value_from(const json_t *v, char *where, size_t wn, char *what, size_t n)
{
	static const char *const keys[] = { "secretKeyRef", "configMapKeyRef", NULL };
	static const char *const rkeys[] = { "name", "key", "optional", NULL };
	struct ck c = { where, wn, what, n };
	const char *kind;
	json_t *ref;
	char at[64];

	if (!json_is_object(v))
		return bad(&c, "", "found %s, expected {secretKeyRef} or {configMapKeyRef}",
			   jtype(v));
	if (!keys_ok(&c, v, "", keys))
		return false;
	if (json_object_size(v) != 1)
		return bad(&c, "", "found %zu sources, expected one of secretKeyRef, "
			   "configMapKeyRef", json_object_size(v));
	kind = json_object_get(v, "secretKeyRef") ? "secretKeyRef" : "configMapKeyRef";
	ref = json_object_get(v, kind);
	snprintf(at, sizeof(at), ".%s", kind);
	if (!json_is_object(ref))
		return bad(&c, at, "found %s, expected {name, key, optional}", jtype(ref));
	return keys_ok(&c, ref, at, rkeys) && str_field(&c, ref, at, "name", true, true) &&
	       str_field(&c, ref, at, "key", true, false) &&
	       bool_field(&c, ref, at, "optional");
}

bool drv_spec_check_env_from(const json_t *v, char *where, size_t wn, char *what, size_t n)
{
	static const char *const keys[] = { "secretRef", "configMapRef", "prefix", NULL };
	static const char *const rkeys[] = { "name", "optional", NULL };
	struct ck c = { where, wn, what, n };
	size_t i;
	json_t *e;

	if (!json_is_array(v))
		return bad(&c, "", "found %s, expected a list of {secretRef} or {configMapRef}",
			   jtype(v));
	json_array_foreach(v, i, e) {
		char at[64], at2[96];
		const char *kind;
		json_t *ref;

		snprintf(at, sizeof(at), "[%zu]", i);
		if (!json_is_object(e))
			return bad(&c, at, "found %s, expected {secretRef} or {configMapRef}",
				   jtype(e));
		if (!keys_ok(&c, e, at, keys) || !str_field(&c, e, at, "prefix", false, false))
			return false;
		if (!!json_object_get(e, "secretRef") == !!json_object_get(e, "configMapRef"))
			return bad(&c, at, "found %s, expected one of secretRef, configMapRef",
				   json_object_get(e, "secretRef") ? "both" : "neither");
		kind = json_object_get(e, "secretRef") ? "secretRef" : "configMapRef";
		ref = json_object_get(e, kind);
		snprintf(at2, sizeof(at2), "%s.%s", at, kind);
		if (!json_is_object(ref))
			return bad(&c, at2, "found %s, expected {name, optional}", jtype(ref));
		if (!keys_ok(&c, ref, at2, rkeys) || !str_field(&c, ref, at2, "name", true, true) ||
		    !bool_field(&c, ref, at2, "optional"))
			return false;
	}
	return true;
}

/* One volume's source: secret {secretName, ...} or configMap {name, ...}. */
static bool source_ok(struct ck *c, const json_t *src, const char *at, bool secret)
{
	static const char *const skeys[] = { "secretName", "items", "defaultMode", "optional",
					     NULL };
	static const char *const ckeys[] = { "name", "items", "defaultMode", "optional", NULL };
	static const char *const ikeys[] = { "key", "path", "mode", NULL };
	json_t *items, *it;
	size_t i;

	if (!json_is_object(src))
		return bad(c, at, "found %s, expected {%s, items, defaultMode, optional}",
			   jtype(src), secret ? "secretName" : "name");
	if (!keys_ok(c, src, at, secret ? skeys : ckeys) ||
	    !str_field(c, src, at, secret ? "secretName" : "name", true, true) ||
	    !mode_field(c, src, at, "defaultMode") || !bool_field(c, src, at, "optional"))
		return false;
	items = json_object_get(src, "items");
	if (!items)
		return true;
	if (!json_is_array(items)) {
		char w[300];

		snprintf(w, sizeof(w), "%s.items", at);
		return bad(c, w, "found %s, expected a list of {key, path, mode}", jtype(items));
	}
	json_array_foreach(items, i, it) {
		char w[300];

		snprintf(w, sizeof(w), "%s.items[%zu]", at, i);
		if (!json_is_object(it))
			return bad(c, w, "found %s, expected {key, path, mode}", jtype(it));
		if (!keys_ok(c, it, w, ikeys) || !str_field(c, it, w, "key", true, false) ||
		    !str_field(c, it, w, "path", true, false) || !mode_field(c, it, w, "mode"))
			return false;
		if (!rel_path(json_string_value(json_object_get(it, "path")))) {
			strncat(w, ".path", sizeof(w) - strlen(w) - 1);
			return bad(c, w, "found \"%.64s\", expected a relative path without '..'",
				   json_string_value(json_object_get(it, "path")));
		}
	}
	return true;
}

bool drv_spec_check_volumes(const json_t *v, char *where, size_t wn, char *what, size_t n)
{
	static const char *const keys[] = { "name", "mountPath", "readOnly", "subPath", "secret",
					    "configMap", NULL };
	struct ck c = { where, wn, what, n };
	size_t i;
	json_t *e;

	if (!json_is_array(v))
		return bad(&c, "", "found %s, expected a list of volumes", jtype(v));
	json_array_foreach(v, i, e) {
		char at[64], w[96];
		const char *mp, *sp;
		bool secret;

		snprintf(at, sizeof(at), "[%zu]", i);
		if (!json_is_object(e))
			return bad(&c, at, "found %s, expected a volume", jtype(e));
		if (!keys_ok(&c, e, at, keys) || !str_field(&c, e, at, "name", true, false) ||
		    !str_field(&c, e, at, "mountPath", true, false) ||
		    !str_field(&c, e, at, "subPath", false, false) ||
		    !bool_field(&c, e, at, "readOnly"))
			return false;
		mp = json_string_value(json_object_get(e, "mountPath"));
		if (mp[0] != '/') {
			snprintf(w, sizeof(w), "%s.mountPath", at);
			return bad(&c, w, "found \"%.64s\", expected an absolute path", mp);
		}
		sp = json_string_value(json_object_get(e, "subPath"));
		if (sp && !rel_path(sp)) {
			snprintf(w, sizeof(w), "%s.subPath", at);
			return bad(&c, w, "found \"%.64s\", expected a relative path without '..'", sp);
		}
		if (!!json_object_get(e, "secret") == !!json_object_get(e, "configMap"))
			return bad(&c, at, "found %s, expected one of secret, configMap",
				   json_object_get(e, "secret") ? "both" : "neither");
		secret = json_object_get(e, "secret") != NULL;
		snprintf(w, sizeof(w), "%s.%s", at, secret ? "secret" : "configMap");
		if (!source_ok(&c, json_object_get(e, secret ? "secret" : "configMap"), w, secret))
			return false;
	}
	return true;
}

const char *drv_env_shown(const struct drv_env *e, char *buf, size_t n)
{
	json_t *ref;

	if (!e->value_from)
		return e->value;
	if (json_object_get(e->value_from, "secretKeyRef"))
		return "<secret>";
	ref = json_object_get(e->value_from, "configMapKeyRef");
	snprintf(buf, n, "<configMap %s.%s>", drv_json_str(ref, "name"), drv_json_str(ref, "key"));
	return buf;
}
