/*
 * json.c: layer 0 over jansson: the NULL-safe field getters of
 * include/drover/json.h.
 */
#include "drover/json.h"

#include "drover/clock.h"
#include "drover/common.h"

#include <stdio.h>
#include <stdlib.h>

static const json_t *field(const json_t *obj, const char *key)
{
	return obj ? json_object_get(obj, key) : NULL;
}

const char *drv_json_str(const json_t *obj, const char *key)
{
	const json_t *v = field(obj, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

int64_t drv_json_int(const json_t *obj, const char *key, int64_t def)
{
	const json_t *v = field(obj, key);

	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_real(v))
		return (int64_t)json_real_value(v);
	if (json_is_string(v)) {
		const char *t = json_string_value(v);
		char *end;
		long long x = strtoll(t, &end, 10);

		if (end != t && !*end)
			return x;
	}
	return def;
}

double drv_json_num(const json_t *obj, const char *key, double def)
{
	const json_t *v = field(obj, key);

	return json_is_number(v) ? json_number_value(v) : def;
}

int drv_json_bool(const json_t *obj, const char *key, int def)
{
	const json_t *v = field(obj, key);

	return json_is_boolean(v) ? json_is_true(v) : def;
}

const char *drv_json_text(const json_t *obj, const char *key, char *buf, size_t n)
{
	const json_t *v = field(obj, key);

	buf[0] = '\0';
	if (json_is_string(v))
		snprintf(buf, n, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, n, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
	return buf;
}

int64_t drv_json_time(const json_t *obj, const char *key)
{
	const json_t *v = field(obj, key);
	int64_t t;

	if (json_is_number(v))
		return drv_json_int(obj, key, 0);
	if (!json_is_string(v))
		return 0;
	drv_rfc3339_parse(json_string_value(v), &t);
	return t;
}
