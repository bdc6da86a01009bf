/*
 * proto.c: encoders and decoders of the agent protocol's messages
 * (include/drover/proto.h is the manual). A decoder walks one JSON
 * document with a reader that knows the key path it stands on, so every
 * error and every unknown key is named by its path ("tasks[2].epoch").
 */
#include "drover/proto.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A key path or message cut at its buffer is better than none. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

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

struct rd {
	struct drv_proto_dec *d;
	char path[192];
	size_t len;
	bool failed;
};

static void rd_init(struct rd *r, struct drv_proto_dec *d)
{
	r->d = d;
	r->path[0] = '\0';
	r->len = 0;
	r->failed = false;
	d->err[0] = '\0';
}

/* Appends ".key" (or "key" at the top) and returns the old length. */
static size_t push_key(struct rd *r, const char *key)
{
	size_t mark = r->len;
	int n = snprintf(r->path + r->len, sizeof(r->path) - r->len, "%s%s", r->len ? "." : "", key);

	if (n > 0)
		r->len = DRV_MIN(r->len + (size_t)n, sizeof(r->path) - 1);
	return mark;
}

static void push_index(struct rd *r, size_t i)
{
	int n = snprintf(r->path + r->len, sizeof(r->path) - r->len, "[%zu]", i);

	if (n > 0)
		r->len = DRV_MIN(r->len + (size_t)n, sizeof(r->path) - 1);
}

static void pop(struct rd *r, size_t mark)
{
	r->len = mark;
	r->path[mark] = '\0';
}

static const char *type_name(const json_t *v)
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
static int fail_at(struct rd *r, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail_at(struct rd *r, const char *key, const char *fmt, ...)
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
static json_t *field(struct rd *r, const json_t *o, const char *key, bool req,
		     int (*is)(const json_t *), const char *want)
{
	json_t *v = json_object_get(o, key);

	if (!v || (json_is_null(v) && !req)) {
		if (req)
			fail_at(r, key, "missing (expected %s)", want);
		return NULL;
	}
	if (!is(v)) {
		fail_at(r, key, "expected %s, found %s", want, type_name(v));
		return NULL;
	}
	return v;
}

static int is_str(const json_t *v) { return json_is_string(v); }
static int is_int(const json_t *v) { return json_is_integer(v); }
static int is_num(const json_t *v) { return json_is_number(v); }
static int is_bool(const json_t *v) { return json_is_boolean(v); }
static int is_arr(const json_t *v) { return json_is_array(v); }
static int is_obj(const json_t *v) { return json_is_object(v); }

static void g_str(struct rd *r, const json_t *o, const char *key, bool req, const char **out)
{
	json_t *v = field(r, o, key, req, is_str, "a string");

	if (v)
		*out = json_string_value(v);
}

static void g_int(struct rd *r, const json_t *o, const char *key, bool req, int64_t *out)
{
	json_t *v = field(r, o, key, req, is_int, "an integer");

	if (v)
		*out = json_integer_value(v);
}

static void g_num(struct rd *r, const json_t *o, const char *key, double *out)
{
	json_t *v = field(r, o, key, false, is_num, "a number");

	if (v)
		*out = json_number_value(v);
}

static void g_bool(struct rd *r, const json_t *o, const char *key, bool req, bool *out)
{
	json_t *v = field(r, o, key, req, is_bool, "true or false");

	if (v)
		*out = json_is_true(v);
}

static json_t *g_arr(struct rd *r, const json_t *o, const char *key, bool req)
{
	return field(r, o, key, req, is_arr, "a list");
}

/* Logs the keys of o that are not in known[] (a NULL-ended list). */
static void unknown_keys(struct rd *r, const json_t *o, const char *const *known)
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
		mark = push_key(r, key);
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
		pop(r, mark);
	}
}

/* Checks that o is a mapping, at the current path. */
static bool expect_obj(struct rd *r, const json_t *o)
{
	if (json_is_object(o))
		return true;
	fail_at(r, NULL, "expected a mapping, found %s", type_name(o));
	return false;
}

/*
 * Decodes the list at key into a new array of n elements of size elsz,
 * each element through one(r, item, element). *out NULL when absent.
 */
typedef void (*item_fn)(struct rd *r, const json_t *item, void *el);

static void g_list(struct rd *r, const json_t *o, const char *key, bool req, size_t elsz,
		   item_fn one, void *out, size_t *n)
{
	json_t *arr = g_arr(r, o, key, req), *item;
	char *els;
	size_t i, mark;

	*(void **)out = NULL;
	*n = 0;
	if (!arr || !json_array_size(arr))
		return;
	els = drv_calloc(json_array_size(arr), elsz);
	*(void **)out = els;
	mark = push_key(r, key);
	json_array_foreach(arr, i, item) {
		size_t m = r->len;

		push_index(r, i);
		one(r, item, els + i * elsz);
		pop(r, m);
		*n = i + 1;
		if (r->failed)
			break;
	}
	pop(r, mark);
}

static void one_str(struct rd *r, const json_t *item, void *el)
{
	if (!json_is_string(item))
		fail_at(r, NULL, "expected a string, found %s", type_name(item));
	else
		*(const char **)el = json_string_value(item);
}

static void one_int(struct rd *r, const json_t *item, void *el)
{
	if (!json_is_integer(item))
		fail_at(r, NULL, "expected an integer, found %s", type_name(item));
	else
		*(int64_t *)el = json_integer_value(item);
}

/* A mapping of strings, in its order. */
static void g_kv(struct rd *r, const json_t *o, const char *key, struct drv_proto_kv **out,
		 size_t *n)
{
	json_t *m = field(r, o, key, false, is_obj, "a mapping"), *v;
	const char *name;
	size_t i = 0, mark;

	*out = NULL;
	*n = 0;
	if (!m || !json_object_size(m))
		return;
	*out = drv_calloc(json_object_size(m), sizeof(**out));
	mark = push_key(r, key);
	json_object_foreach(m, name, v) {
		if (!json_is_string(v)) {
			fail_at(r, name, "expected a string, found %s", type_name(v));
			break;
		}
		(*out)[i].name = name;
		(*out)[i++].value = json_string_value(v);
	}
	*n = i;
	pop(r, mark);
}

/* --- writer helpers ----------------------------------------------------------- */

static void put_str(json_t *o, const char *key, const char *s)
{
	json_object_set_new(o, key, s ? json_string(s) : json_null());
}

static void put_opt_str(json_t *o, const char *key, const char *s)
{
	if (s)
		json_object_set_new(o, key, json_string(s));
}

static void put_int(json_t *o, const char *key, int64_t v)
{
	json_object_set_new(o, key, json_integer((json_int_t)v));
}

static json_t *int_list(const int64_t *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer((json_int_t)v[i]));
	return a;
}

static json_t *str_list(const char *const *v, size_t n)
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
static int finish(struct rd *r, json_t *j, json_t **doc, void (*release)(void *), void *m)
{
	if (r->failed) {
		release(m);
		return DRV_EINVAL;
	}
	*doc = json_incref(j);
	return 0;
}

/* --- (task_id, epoch) references ---------------------------------------------- */

static const char *const ref_keys[] = { "task_id", "epoch", "pid", "state", "reason", NULL };

static void one_ref(struct rd *r, const json_t *o, void *el)
{
	struct drv_proto_ref *x = el;

	if (!expect_obj(r, o))
		return;
	g_str(r, o, "task_id", true, &x->task_id);
	g_int(r, o, "epoch", true, &x->epoch);
	g_int(r, o, "pid", false, &x->pid);
	g_str(r, o, "state", false, &x->state);
	g_str(r, o, "reason", false, &x->reason);
	unknown_keys(r, o, ref_keys);
}

static json_t *refs_encode(const struct drv_proto_ref *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();

		put_str(o, "task_id", v[i].task_id);
		put_int(o, "epoch", v[i].epoch);
		if (v[i].pid)
			put_int(o, "pid", v[i].pid);
		put_opt_str(o, "state", v[i].state);
		put_opt_str(o, "reason", v[i].reason);
		json_array_append_new(a, o);
	}
	return a;
}

/* --- GPU health ---------------------------------------------------------------- */

static const char *const health_keys[] = { "index", "healthy", "xid", "ecc_uncorrected",
	"temperature_c", "utilization", "memory_used_mib", "power_w", NULL };

static void one_health(struct rd *r, const json_t *o, void *el)
{
	struct drv_proto_gpu_health *g = el;

	g->xid = g->ecc_uncorrected = g->temperature_c = g->utilization = -1;
	g->memory_used_mib = -1;
	g->power_w = NAN;
	if (!expect_obj(r, o))
		return;
	g_int(r, o, "index", true, &g->index);
	g_bool(r, o, "healthy", true, &g->healthy);
	g_int(r, o, "xid", false, &g->xid);
	g_int(r, o, "ecc_uncorrected", false, &g->ecc_uncorrected);
	g_int(r, o, "temperature_c", false, &g->temperature_c);
	g_int(r, o, "utilization", false, &g->utilization);
	g_int(r, o, "memory_used_mib", false, &g->memory_used_mib);
	g_num(r, o, "power_w", &g->power_w);
	unknown_keys(r, o, health_keys);
}

json_t *drv_proto_gpu_health_encode(const struct drv_proto_gpu_health *g, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();

		put_int(o, "index", g[i].index);
		json_object_set_new(o, "healthy", json_boolean(g[i].healthy));
		if (g[i].xid >= 0)
			put_int(o, "xid", g[i].xid);
		if (g[i].ecc_uncorrected >= 0)
			put_int(o, "ecc_uncorrected", g[i].ecc_uncorrected);
		if (g[i].temperature_c >= 0)
			put_int(o, "temperature_c", g[i].temperature_c);
		if (g[i].utilization >= 0)
			put_int(o, "utilization", g[i].utilization);
		if (g[i].memory_used_mib >= 0)
			put_int(o, "memory_used_mib", g[i].memory_used_mib);
		if (!isnan(g[i].power_w))
			json_object_set_new(o, "power_w", json_real(g[i].power_w));
		json_array_append_new(a, o);
	}
	return a;
}

/* --- reports -------------------------------------------------------------------- */

static const char *const state_names[] = { "running", "exited", "failed" };

const char *drv_proto_task_state_name(enum drv_proto_task_state s)
{
	return (unsigned)s < DRV_ARRAY_SIZE(state_names) ? state_names[s] : "?";
}

static const char *const report_keys[] = { "task_id", "epoch", "state", "pid", "time",
	"exit_code", "signal", "signal_name", "oom_killed", "reason", NULL };

static void one_report(struct rd *r, const json_t *o, void *el)
{
	struct drv_proto_report *x = el;
	const char *st = NULL;
	size_t k;

	x->exit_code = -1;
	if (!expect_obj(r, o))
		return;
	g_str(r, o, "task_id", true, &x->task_id);
	g_int(r, o, "epoch", true, &x->epoch);
	g_str(r, o, "state", true, &st);
	for (k = 0; st && k < DRV_ARRAY_SIZE(state_names) && strcmp(st, state_names[k]); k++)
		;
	if (st && k == DRV_ARRAY_SIZE(state_names))
		fail_at(r, "state", "\"%s\": expected running, exited or failed", st);
	x->state = (enum drv_proto_task_state)k;
	g_int(r, o, "pid", false, &x->pid);
	g_str(r, o, "time", false, &x->time);
	g_int(r, o, "exit_code", false, &x->exit_code);
	g_int(r, o, "signal", false, &x->signal);
	g_str(r, o, "signal_name", false, &x->signal_name);
	g_bool(r, o, "oom_killed", false, &x->oom_killed);
	g_str(r, o, "reason", false, &x->reason);
	unknown_keys(r, o, report_keys);
}

static json_t *report_encode(const struct drv_proto_report *x)
{
	json_t *o = json_object();

	put_str(o, "task_id", x->task_id);
	put_int(o, "epoch", x->epoch);
	put_str(o, "state", drv_proto_task_state_name(x->state));
	if (x->pid)
		put_int(o, "pid", x->pid);
	put_opt_str(o, "time", x->time);
	if (x->state == DRV_PROTO_EXITED) {
		if (x->signal) {
			put_int(o, "signal", x->signal);
			put_opt_str(o, "signal_name", x->signal_name);
		} else {
			put_int(o, "exit_code", x->exit_code);
		}
		json_object_set_new(o, "oom_killed", json_boolean(x->oom_killed));
	}
	put_opt_str(o, "reason", x->reason);
	return o;
}

/* --- task assignments ----------------------------------------------------------- */

void drv_proto_task_init(struct drv_proto_task *t)
{
	memset(t, 0, sizeof(*t));
	t->runtime = "host";
	t->gpu_milli = 1000;
	t->world_size = 1;
	t->local_world_size = 1;
	t->nnodes = 1;
	t->master_port = 29500;
	t->grace_s = -1;
}

static const char *const peer_keys[] = { "rank", "node", "address", NULL };

static void one_peer(struct rd *r, const json_t *o, void *el)
{
	struct drv_proto_peer *p = el;

	if (!expect_obj(r, o))
		return;
	g_int(r, o, "rank", true, &p->rank);
	g_str(r, o, "node", false, &p->node);
	g_str(r, o, "address", false, &p->address);
	unknown_keys(r, o, peer_keys);
}

static const char *const task_keys[] = { "task_id", "job_id", "job_name", "epoch", "desired",
	"stop_reason", "user", "runtime", "image", "container", "argv", "script", "workdir", "env",
	"gpus", "gpu_milli", "cpu_milli", "mem_mib", "rank", "world_size", "local_rank",
	"local_world_size", "node_rank", "nnodes", "master_addr", "master_port", "peers",
	"time_limit_s", "grace_s", NULL };

/* The identity and what to run. */
static void task_what(struct rd *r, const json_t *o, struct drv_proto_task *t)
{
	const char *desired = NULL;

	g_str(r, o, "task_id", true, &t->task_id);
	g_int(r, o, "job_id", true, &t->job_id);
	g_str(r, o, "job_name", false, &t->job_name);
	g_int(r, o, "epoch", true, &t->epoch);
	g_str(r, o, "desired", true, &desired);
	if (desired && strcmp(desired, "run") && strcmp(desired, "stop"))
		fail_at(r, "desired", "\"%s\": expected run or stop", desired);
	t->stop = desired && !strcmp(desired, "stop");
	g_str(r, o, "stop_reason", false, &t->stop_reason);
	g_str(r, o, "user", false, &t->user);
	g_str(r, o, "runtime", false, &t->runtime);
	g_str(r, o, "image", false, &t->image);
	g_str(r, o, "container", false, &t->container);
	g_list(r, o, "argv", false, sizeof(*t->argv), one_str, &t->argv, &t->nargv);
	g_str(r, o, "script", false, &t->script);
	g_str(r, o, "workdir", false, &t->workdir);
	g_kv(r, o, "env", &t->env, &t->nenv);
}

/* Where it runs, its share and its gang. */
static void task_where(struct rd *r, const json_t *o, struct drv_proto_task *t)
{
	g_list(r, o, "gpus", false, sizeof(*t->gpus), one_int, &t->gpus, &t->ngpus);
	g_int(r, o, "gpu_milli", false, &t->gpu_milli);
	g_int(r, o, "cpu_milli", false, &t->cpu_milli);
	g_int(r, o, "mem_mib", false, &t->mem_mib);
	g_int(r, o, "rank", false, &t->rank);
	g_int(r, o, "world_size", false, &t->world_size);
	g_int(r, o, "local_rank", false, &t->local_rank);
	g_int(r, o, "local_world_size", false, &t->local_world_size);
	g_int(r, o, "node_rank", false, &t->node_rank);
	g_int(r, o, "nnodes", false, &t->nnodes);
	g_str(r, o, "master_addr", false, &t->master_addr);
	g_int(r, o, "master_port", false, &t->master_port);
	g_list(r, o, "peers", false, sizeof(*t->peers), one_peer, &t->peers, &t->npeers);
	g_int(r, o, "time_limit_s", false, &t->time_limit_s);
	g_int(r, o, "grace_s", false, &t->grace_s);
}

static void one_task(struct rd *r, const json_t *o, void *el)
{
	struct drv_proto_task *t = el;

	drv_proto_task_init(t);
	if (!expect_obj(r, o))
		return;
	task_what(r, o, t);
	task_where(r, o, t);
	unknown_keys(r, o, task_keys);
}

static void task_release(struct drv_proto_task *t)
{
	drv_free(t->argv);
	drv_free(t->env);
	drv_free(t->gpus);
	drv_free(t->peers);
}

json_t *drv_proto_task_encode(const struct drv_proto_task *t)
{
	json_t *o = json_object(), *peers = json_array();

	put_str(o, "task_id", t->task_id);
	put_int(o, "job_id", t->job_id);
	put_str(o, "job_name", t->job_name);
	put_int(o, "epoch", t->epoch);
	put_str(o, "desired", t->stop ? "stop" : "run");
	put_opt_str(o, "stop_reason", t->stop_reason);
	put_str(o, "user", t->user);
	put_str(o, "runtime", t->runtime ? t->runtime : "host");
	put_str(o, "image", t->image);
	put_str(o, "container", t->container);
	json_object_set_new(o, "argv", str_list(t->argv, t->nargv));
	put_str(o, "script", t->script);
	put_str(o, "workdir", t->workdir);
	json_object_set_new(o, "env", drv_proto_kv_encode(t->env, t->nenv));
	json_object_set_new(o, "gpus", int_list(t->gpus, t->ngpus));
	put_int(o, "gpu_milli", t->gpu_milli);
	put_int(o, "cpu_milli", t->cpu_milli);
	put_int(o, "mem_mib", t->mem_mib);
	put_int(o, "rank", t->rank);
	put_int(o, "world_size", t->world_size);
	put_int(o, "local_rank", t->local_rank);
	put_int(o, "local_world_size", t->local_world_size);
	put_int(o, "node_rank", t->node_rank);
	put_int(o, "nnodes", t->nnodes);
	put_str(o, "master_addr", t->master_addr);
	put_int(o, "master_port", t->master_port);
	for (size_t i = 0; i < t->npeers; i++) {
		json_t *p = json_object();

		put_int(p, "rank", t->peers[i].rank);
		put_str(p, "node", t->peers[i].node);
		put_str(p, "address", t->peers[i].address);
		json_array_append_new(peers, p);
	}
	json_object_set_new(o, "peers", peers);
	put_int(o, "time_limit_s", t->time_limit_s);
	if (t->grace_s >= 0)
		put_int(o, "grace_s", t->grace_s);
	return o;
}

/* --- register ---------------------------------------------------------------------- */

static const char *const gpu_keys[] = { "index", "uuid", "model", "memory_mib", "pci_bus_id",
	NULL };

static void one_gpu(struct rd *r, const json_t *o, void *el)
{
	struct drv_proto_gpu *g = el;

	g->index = -1;
	if (!expect_obj(r, o))
		return;
	g_int(r, o, "index", false, &g->index);
	g_str(r, o, "uuid", false, &g->uuid);
	g_str(r, o, "model", true, &g->model);
	g_int(r, o, "memory_mib", false, &g->memory_mib);
	g_str(r, o, "pci_bus_id", false, &g->pci_bus_id);
	unknown_keys(r, o, gpu_keys);
}

static const char *const nic_keys[] = { "name", "link_layer", "state", "rate_gbps", "near_gpus",
	NULL };

static void one_nic(struct rd *r, const json_t *o, void *el)
{
	struct drv_proto_nic *x = el;

	if (!expect_obj(r, o))
		return;
	g_str(r, o, "name", true, &x->name);
	g_str(r, o, "link_layer", false, &x->link_layer);
	g_str(r, o, "state", false, &x->state);
	g_int(r, o, "rate_gbps", false, &x->rate_gbps);
	g_list(r, o, "near_gpus", false, sizeof(*x->near_gpus), one_int, &x->near_gpus,
	       &x->nnear);
	unknown_keys(r, o, nic_keys);
}

/* gpu_matrix rows: a list of lists of strings. */
static void g_matrix(struct rd *r, const json_t *topo, struct drv_proto_register *m)
{
	json_t *rows = g_arr(r, topo, "gpu_matrix", false), *row;
	size_t i, mark;

	if (!rows || !json_array_size(rows))
		return;
	m->gpu_matrix = drv_calloc(json_array_size(rows), sizeof(*m->gpu_matrix));
	m->matrix_len = drv_calloc(json_array_size(rows), sizeof(*m->matrix_len));
	mark = push_key(r, "gpu_matrix");
	json_array_foreach(rows, i, row) {
		size_t m2 = r->len, k;
		json_t *cell;

		push_index(r, i);
		m->nmatrix = i + 1;
		if (!json_is_array(row)) {
			fail_at(r, NULL, "expected a list, found %s", type_name(row));
			break;
		}
		m->gpu_matrix[i] = drv_calloc(json_array_size(row) + 1, sizeof(**m->gpu_matrix));
		json_array_foreach(row, k, cell) {
			size_t m3 = r->len;

			push_index(r, k);
			one_str(r, cell, &m->gpu_matrix[i][k]);
			pop(r, m3);
			m->matrix_len[i] = k + 1;
		}
		pop(r, m2);
		if (r->failed)
			break;
	}
	pop(r, mark);
}

static const char *const topo_keys[] = { "gpu_matrix", "nics", NULL };

static void g_topology(struct rd *r, const json_t *o, struct drv_proto_register *m)
{
	json_t *topo = field(r, o, "topology", false, is_obj, "a mapping");
	size_t mark;

	if (!topo)
		return;
	mark = push_key(r, "topology");
	g_matrix(r, topo, m);
	g_list(r, topo, "nics", false, sizeof(*m->nics), one_nic, &m->nics, &m->nnics);
	unknown_keys(r, topo, topo_keys);
	pop(r, mark);
}

static const char *const register_keys[] = { "protocol", "name", "hostname", "address",
	"agent_url", "version", "backend", "labels", "cpu_milli", "mem_mib", "gpus", "topology",
	"running", NULL };

void drv_proto_register_init(struct drv_proto_register *m)
{
	memset(m, 0, sizeof(*m));
	m->protocol = DRV_PROTO_VERSION;
}

static void register_release_(void *m)
{
	drv_proto_register_release(m);
}

int drv_proto_register_decode(json_t *j, struct drv_proto_register *m, struct drv_proto_dec *d)
{
	struct rd r;

	rd_init(&r, d);
	drv_proto_register_init(m);
	if (expect_obj(&r, j)) {
		g_int(&r, j, "protocol", true, &m->protocol);
		g_str(&r, j, "name", true, &m->name);
		g_str(&r, j, "hostname", false, &m->hostname);
		g_str(&r, j, "address", false, &m->address);
		g_str(&r, j, "agent_url", false, &m->agent_url);
		g_str(&r, j, "version", false, &m->version);
		g_str(&r, j, "backend", false, &m->backend);
		g_kv(&r, j, "labels", &m->labels, &m->nlabels);
		g_int(&r, j, "cpu_milli", false, &m->cpu_milli);
		g_int(&r, j, "mem_mib", false, &m->mem_mib);
		g_list(&r, j, "gpus", false, sizeof(*m->gpus), one_gpu, &m->gpus, &m->ngpus);
		g_topology(&r, j, m);
		g_list(&r, j, "running", false, sizeof(*m->running), one_ref, &m->running,
		       &m->nrunning);
		unknown_keys(&r, j, register_keys);
	}
	return finish(&r, j, &m->doc, register_release_, m);
}

static json_t *topology_encode(const struct drv_proto_register *m)
{
	json_t *topo = json_object(), *mat = json_array(), *nics = json_array();

	for (size_t i = 0; i < m->nmatrix; i++)
		json_array_append_new(mat, str_list(m->gpu_matrix[i], m->matrix_len[i]));
	for (size_t i = 0; i < m->nnics; i++) {
		const struct drv_proto_nic *x = &m->nics[i];
		json_t *o = json_object();

		put_str(o, "name", x->name);
		put_str(o, "link_layer", x->link_layer ? x->link_layer : "");
		put_str(o, "state", x->state ? x->state : "");
		put_int(o, "rate_gbps", x->rate_gbps);
		json_object_set_new(o, "near_gpus", int_list(x->near_gpus, x->nnear));
		json_array_append_new(nics, o);
	}
	json_object_set_new(topo, "gpu_matrix", mat);
	json_object_set_new(topo, "nics", nics);
	return topo;
}

json_t *drv_proto_register_encode(const struct drv_proto_register *m)
{
	json_t *o = json_object(), *gpus = json_array();

	put_int(o, "protocol", m->protocol);
	put_str(o, "name", m->name);
	put_opt_str(o, "hostname", m->hostname);
	put_opt_str(o, "address", m->address);
	put_opt_str(o, "agent_url", m->agent_url);
	put_opt_str(o, "version", m->version);
	json_object_set_new(o, "labels", drv_proto_kv_encode(m->labels, m->nlabels));
	put_int(o, "cpu_milli", m->cpu_milli);
	put_int(o, "mem_mib", m->mem_mib);
	put_opt_str(o, "backend", m->backend);
	for (size_t i = 0; i < m->ngpus; i++) {
		const struct drv_proto_gpu *g = &m->gpus[i];
		json_t *x = json_object();

		put_int(x, "index", g->index >= 0 ? g->index : (int64_t)i);
		put_opt_str(x, "uuid", g->uuid);
		put_str(x, "model", g->model);
		put_int(x, "memory_mib", g->memory_mib);
		put_opt_str(x, "pci_bus_id", g->pci_bus_id);
		json_array_append_new(gpus, x);
	}
	json_object_set_new(o, "gpus", gpus);
	json_object_set_new(o, "topology", topology_encode(m));
	json_object_set_new(o, "running", refs_encode(m->running, m->nrunning));
	return o;
}

void drv_proto_register_release(struct drv_proto_register *m)
{
	for (size_t i = 0; i < m->nnics; i++)
		drv_free(m->nics[i].near_gpus);
	for (size_t i = 0; i < m->nmatrix; i++)
		drv_free((void *)m->gpu_matrix[i]);
	drv_free(m->labels);
	drv_free(m->gpus);
	drv_free(m->gpu_matrix);
	drv_free(m->matrix_len);
	drv_free(m->nics);
	drv_free(m->running);
	json_decref(m->doc);
	memset(m, 0, sizeof(*m));
}

/* --- registered --------------------------------------------------------------------- */

static const char *const registered_keys[] = { "node", "session", "heartbeat_interval_s",
	"heartbeat_timeout_s", "pool", "labels", NULL };

void drv_proto_registered_init(struct drv_proto_registered *m)
{
	memset(m, 0, sizeof(*m));
	m->heartbeat_interval_s = 5;
	m->heartbeat_timeout_s = 30;
}

static void registered_release_(void *m)
{
	drv_proto_registered_release(m);
}

int drv_proto_registered_decode(json_t *j, struct drv_proto_registered *m,
				struct drv_proto_dec *d)
{
	struct rd r;

	rd_init(&r, d);
	drv_proto_registered_init(m);
	if (expect_obj(&r, j)) {
		g_str(&r, j, "node", true, &m->node);
		g_int(&r, j, "session", true, &m->session);
		g_int(&r, j, "heartbeat_interval_s", false, &m->heartbeat_interval_s);
		g_int(&r, j, "heartbeat_timeout_s", false, &m->heartbeat_timeout_s);
		g_str(&r, j, "pool", false, &m->pool);
		g_kv(&r, j, "labels", &m->labels, &m->nlabels);
		unknown_keys(&r, j, registered_keys);
	}
	return finish(&r, j, &m->doc, registered_release_, m);
}

json_t *drv_proto_registered_encode(const struct drv_proto_registered *m)
{
	json_t *o = json_object();

	put_str(o, "node", m->node);
	put_int(o, "session", m->session);
	put_int(o, "heartbeat_interval_s", m->heartbeat_interval_s);
	put_int(o, "heartbeat_timeout_s", m->heartbeat_timeout_s);
	put_str(o, "pool", m->pool);
	json_object_set_new(o, "labels", drv_proto_kv_encode(m->labels, m->nlabels));
	return o;
}

void drv_proto_registered_release(struct drv_proto_registered *m)
{
	drv_free(m->labels);
	json_decref(m->doc);
	memset(m, 0, sizeof(*m));
}

/* --- sync -------------------------------------------------------------------------- */

static const char *const sync_keys[] = { "node", "session", "version", "wait_s", "tasks",
	"reports", "gpus", NULL };

void drv_proto_sync_init(struct drv_proto_sync *m)
{
	memset(m, 0, sizeof(*m));
	m->wait_s = -1;
}

static void sync_release_(void *m)
{
	drv_proto_sync_release(m);
}

int drv_proto_sync_decode(json_t *j, struct drv_proto_sync *m, struct drv_proto_dec *d)
{
	struct rd r;

	rd_init(&r, d);
	drv_proto_sync_init(m);
	if (expect_obj(&r, j)) {
		g_str(&r, j, "node", true, &m->node);
		g_int(&r, j, "session", true, &m->session);
		g_int(&r, j, "version", true, &m->version);
		g_int(&r, j, "wait_s", false, &m->wait_s);
		g_list(&r, j, "tasks", false, sizeof(*m->tasks), one_ref, &m->tasks, &m->ntasks);
		g_list(&r, j, "reports", false, sizeof(*m->reports), one_report, &m->reports,
		       &m->nreports);
		g_list(&r, j, "gpus", false, sizeof(*m->gpus), one_health, &m->gpus, &m->ngpus);
		unknown_keys(&r, j, sync_keys);
	}
	return finish(&r, j, &m->doc, sync_release_, m);
}

json_t *drv_proto_sync_encode(const struct drv_proto_sync *m)
{
	json_t *o = json_object(), *reps = json_array();

	put_str(o, "node", m->node);
	put_int(o, "session", m->session);
	put_int(o, "version", m->version);
	if (m->wait_s >= 0)
		put_int(o, "wait_s", m->wait_s);
	json_object_set_new(o, "tasks", refs_encode(m->tasks, m->ntasks));
	for (size_t i = 0; i < m->nreports; i++)
		json_array_append_new(reps, report_encode(&m->reports[i]));
	json_object_set_new(o, "reports", reps);
	json_object_set_new(o, "gpus", drv_proto_gpu_health_encode(m->gpus, m->ngpus));
	return o;
}

void drv_proto_sync_release(struct drv_proto_sync *m)
{
	drv_free(m->tasks);
	drv_free(m->reports);
	drv_free(m->gpus);
	json_decref(m->doc);
	memset(m, 0, sizeof(*m));
}

/* --- sync reply ----------------------------------------------------------------------- */

static const char *const sync_reply_keys[] = { "version", "heartbeat_interval_s", "tasks",
	"stale", NULL };

void drv_proto_sync_reply_init(struct drv_proto_sync_reply *m)
{
	memset(m, 0, sizeof(*m));
}

static void sync_reply_release_(void *m)
{
	drv_proto_sync_reply_release(m);
}

int drv_proto_sync_reply_decode(json_t *j, struct drv_proto_sync_reply *m,
				struct drv_proto_dec *d)
{
	struct rd r;

	rd_init(&r, d);
	drv_proto_sync_reply_init(m);
	if (expect_obj(&r, j)) {
		g_int(&r, j, "version", true, &m->version);
		g_int(&r, j, "heartbeat_interval_s", true, &m->heartbeat_interval_s);
		m->has_tasks = json_object_get(j, "tasks") && !json_is_null(json_object_get(j, "tasks"));
		g_list(&r, j, "tasks", false, sizeof(*m->tasks), one_task, &m->tasks, &m->ntasks);
		g_list(&r, j, "stale", false, sizeof(*m->stale), one_ref, &m->stale, &m->nstale);
		unknown_keys(&r, j, sync_reply_keys);
	}
	return finish(&r, j, &m->doc, sync_reply_release_, m);
}

json_t *drv_proto_sync_reply_encode(const struct drv_proto_sync_reply *m)
{
	json_t *o = json_object();

	put_int(o, "version", m->version);
	put_int(o, "heartbeat_interval_s", m->heartbeat_interval_s);
	if (m->has_tasks) {
		json_t *tasks = json_array();

		for (size_t i = 0; i < m->ntasks; i++)
			json_array_append_new(tasks, drv_proto_task_encode(&m->tasks[i]));
		json_object_set_new(o, "tasks", tasks);
	}
	json_object_set_new(o, "stale", refs_encode(m->stale, m->nstale));
	return o;
}

void drv_proto_sync_reply_release(struct drv_proto_sync_reply *m)
{
	for (size_t i = 0; i < m->ntasks; i++)
		task_release(&m->tasks[i]);
	drv_free(m->tasks);
	drv_free(m->stale);
	json_decref(m->doc);
	memset(m, 0, sizeof(*m));
}

/* --- versions -------------------------------------------------------------------------- */

int drv_proto_version_check(int64_t theirs, char *msg, size_t msgsz)
{
	if (theirs >= DRV_PROTO_VERSION - 1 && theirs <= DRV_PROTO_VERSION + 1)
		return 0;
	snprintf(msg, msgsz, "agent speaks protocol %lld; this controller speaks %d (at most one "
		 "apart)", (long long)theirs, DRV_PROTO_VERSION);
	return DRV_EPERM;
}
