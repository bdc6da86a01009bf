/*
 * expand.c: `$(VAR)` references in a Kubernetes container's command, args
 * and env values, expanded as kubelet expands them (its "expansion"
 * package): `$(NAME)` becomes NAME's value when NAME is defined, and is
 * left as written when it is not; `$$` is one literal `$` (so `$$(NAME)`
 * stays `$(NAME)`); any other `$` is itself. An env value sees only the
 * entries before it, already expanded; command and args see them all.
 */
#include "drover/spec.h"

#include <string.h>

#include "drover/dynbuf.h"

/* The value of the last of env[0..n) named name (len bytes), or NULL. */
static const char *lookup(const struct drv_env *env, int32_t n, const char *name, size_t len)
{
	for (int32_t i = n - 1; i >= 0; i--)
		if (env[i].name && env[i].value && strlen(env[i].name) == len &&
		    memcmp(env[i].name, name, len) == 0)
			return env[i].value;
	return NULL;
}

char *drv_k8s_expand(const char *in, const struct drv_env *env, int32_t nenv)
{
	struct drv_dynbuf b;
	const char *p = in, *close, *v;


	drv_dynbuf_init(&b, DRV_SPEC_MAX_STRING * 4);
	while (*p) {
		if (p[0] != '$') {
			drv_dynbuf_add(&b, p, 1);
			p++;
		} else if (p[1] == '$') {
			drv_dynbuf_add(&b, "$", 1);
			p += 2;
		} else if (p[1] == '(' && (close = strchr(p + 2, ')')) != NULL) {
			v = lookup(env, nenv, p + 2, (size_t)(close - p - 2));
			if (v)
				drv_dynbuf_add(&b, v, strlen(v));
			else
				drv_dynbuf_add(&b, p, (size_t)(close - p + 1));
			p = close + 1;
		} else {
			drv_dynbuf_add(&b, p, 1);
			p++;
		}
	}
	return drv_dynbuf_take(&b, NULL);
}
