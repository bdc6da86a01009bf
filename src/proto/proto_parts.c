/*
 * proto_parts.c: the parts of the agent protocol's messages: (task_id,
 * epoch) references, a GPU's health, a task report and a task assignment,
 * each with its decoder (a reader item) and encoder.
 */
#include "proto_int.h"

#include <math.h>
#include <string.h>

/* --- (task_id, epoch) references ---------------------------------------------- */

/* --- usage ------------------------------------------------------------------- */

static const char *const usage_keys[] = { "cpu_s", "mem_max_mib", "gpus", NULL };
static const char *const gpu_use_keys[] = { "gpu", "util_pct", "mem_max_mib", "samples", NULL };

static void item_gpu_use(struct proto_rd *r, const json_t *o, void *el)
{
	struct drv_proto_gpu_use *g = el;

	g->mem_max_mib = -1;
	if (!proto_expect_obj(r, o))
		return;
	proto_get_int(r, o, "gpu", true, &g->gpu);
	proto_get_num(r, o, "util_pct", &g->util_pct);
	proto_get_int(r, o, "mem_max_mib", false, &g->mem_max_mib);
	proto_get_int(r, o, "samples", false, &g->samples);
	proto_unknown_keys(r, o, gpu_use_keys);
}

void proto_get_usage(struct proto_rd *r, const json_t *o, struct drv_proto_usage **out)
{
	json_t *v = proto_get(r, o, "usage", false, proto_is_obj, "an object");
	struct drv_proto_usage *u;
	size_t mark;

	*out = NULL;
	if (!v)
		return;
	u = drv_calloc(1, sizeof(*u));
	*out = u;
	u->cpu_s = -1;
	u->mem_max_mib = -1;
	mark = proto_push_key(r, "usage");
	proto_get_num(r, v, "cpu_s", &u->cpu_s);
	proto_get_int(r, v, "mem_max_mib", false, &u->mem_max_mib);
	proto_get_list(r, v, "gpus", false, sizeof(*u->gpus), item_gpu_use, &u->gpus, &u->ngpus);
	proto_unknown_keys(r, v, usage_keys);
	proto_pop(r, mark);
}

json_t *proto_usage_encode(const struct drv_proto_usage *u)
{
	json_t *o = json_object(), *gs = json_array();

	if (u->cpu_s >= 0)
		json_object_set_new(o, "cpu_s", json_real(u->cpu_s));
	if (u->mem_max_mib >= 0)
		proto_put_int(o, "mem_max_mib", u->mem_max_mib);
	for (size_t i = 0; i < u->ngpus; i++) {
		const struct drv_proto_gpu_use *g = &u->gpus[i];
		json_t *e = json_object();

		proto_put_int(e, "gpu", g->gpu);
		json_object_set_new(e, "util_pct", json_real(g->util_pct));
		if (g->mem_max_mib >= 0)
			proto_put_int(e, "mem_max_mib", g->mem_max_mib);
		proto_put_int(e, "samples", g->samples);
		json_array_append_new(gs, e);
	}
	json_object_set_new(o, "gpus", gs);
	return o;
}

json_t *drv_proto_usage_encode(const struct drv_proto_usage *u)
{
	return proto_usage_encode(u);
}

void proto_usage_free(struct drv_proto_usage *u)
{
	if (!u)
		return;
	drv_free(u->gpus);
	drv_free(u);
}

void proto_refs_release(struct drv_proto_ref *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		proto_usage_free(v[i].usage);
		v[i].usage = NULL;
	}
}

/* --- (task_id, epoch) references -------------------------------------------- */

static const char *const ref_keys[] = { "task_id", "epoch", "pid", "state", "reason", "usage",
	"container", NULL };
static const char *const container_keys[] = { "name", "command", "image_pull", NULL };

/* "container": {name, command, image_pull}, optional. */
static void proto_get_container(struct proto_rd *r, const json_t *o,
				struct drv_proto_container *c)
{
	json_t *v = proto_get(r, o, "container", false, proto_is_obj, "an object");
	size_t mark;

	if (!v)
		return;
	mark = proto_push_key(r, "container");
	proto_get_str(r, v, "name", false, &c->name);
	proto_get_str(r, v, "command", false, &c->command);
	proto_get_str(r, v, "image_pull", false, &c->image_pull);
	proto_unknown_keys(r, v, container_keys);
	proto_pop(r, mark);
}

static void proto_put_container(json_t *o, const struct drv_proto_container *c)
{
	json_t *v;

	if (!c->name && !c->command && !c->image_pull)
		return;
	v = json_object();
	proto_put_opt_str(v, "name", c->name);
	proto_put_opt_str(v, "command", c->command);
	proto_put_opt_str(v, "image_pull", c->image_pull);
	json_object_set_new(o, "container", v);
}

void proto_item_ref(struct proto_rd *r, const json_t *o, void *el)
{
	struct drv_proto_ref *x = el;

	if (!proto_expect_obj(r, o))
		return;
	proto_get_str(r, o, "task_id", true, &x->task_id);
	proto_get_int(r, o, "epoch", true, &x->epoch);
	proto_get_int(r, o, "pid", false, &x->pid);
	proto_get_str(r, o, "state", false, &x->state);
	proto_get_str(r, o, "reason", false, &x->reason);
	proto_get_usage(r, o, &x->usage);
	proto_get_container(r, o, &x->container);
	proto_unknown_keys(r, o, ref_keys);
}

json_t *proto_refs_encode(const struct drv_proto_ref *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();

		proto_put_str(o, "task_id", v[i].task_id);
		proto_put_int(o, "epoch", v[i].epoch);
		if (v[i].pid)
			proto_put_int(o, "pid", v[i].pid);
		proto_put_opt_str(o, "state", v[i].state);
		proto_put_opt_str(o, "reason", v[i].reason);
		if (v[i].usage)
			json_object_set_new(o, "usage", proto_usage_encode(v[i].usage));
		proto_put_container(o, &v[i].container);
		json_array_append_new(a, o);
	}
	return a;
}

/* --- GPU health ---------------------------------------------------------------- */

static const char *const health_keys[] = { "index", "healthy", "xid", "ecc_uncorrected",
	"temperature_c", "utilization", "memory_used_mib", "power_w", NULL };

void proto_item_health(struct proto_rd *r, const json_t *o, void *el)
{
	struct drv_proto_gpu_health *g = el;

	g->xid = g->ecc_uncorrected = g->temperature_c = g->utilization = -1;
	g->memory_used_mib = -1;
	g->power_w = NAN;
	if (!proto_expect_obj(r, o))
		return;
	proto_get_int(r, o, "index", true, &g->index);
	proto_get_bool(r, o, "healthy", true, &g->healthy);
	proto_get_int(r, o, "xid", false, &g->xid);
	proto_get_int(r, o, "ecc_uncorrected", false, &g->ecc_uncorrected);
	proto_get_int(r, o, "temperature_c", false, &g->temperature_c);
	proto_get_int(r, o, "utilization", false, &g->utilization);
	proto_get_int(r, o, "memory_used_mib", false, &g->memory_used_mib);
	proto_get_num(r, o, "power_w", &g->power_w);
	proto_unknown_keys(r, o, health_keys);
}

json_t *drv_proto_gpu_health_encode(const struct drv_proto_gpu_health *g, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();

		proto_put_int(o, "index", g[i].index);
		json_object_set_new(o, "healthy", json_boolean(g[i].healthy));
		if (g[i].xid >= 0)
			proto_put_int(o, "xid", g[i].xid);
		if (g[i].ecc_uncorrected >= 0)
			proto_put_int(o, "ecc_uncorrected", g[i].ecc_uncorrected);
		if (g[i].temperature_c >= 0)
			proto_put_int(o, "temperature_c", g[i].temperature_c);
		if (g[i].utilization >= 0)
			proto_put_int(o, "utilization", g[i].utilization);
		if (g[i].memory_used_mib >= 0)
			proto_put_int(o, "memory_used_mib", g[i].memory_used_mib);
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
	"exit_code", "signal", "signal_name", "oom_killed", "timed_out", "fenced", "reason", "usage",
	"container", "requeue", "drain",
	NULL };

void proto_item_report(struct proto_rd *r, const json_t *o, void *el)
{
	struct drv_proto_report *x = el;
	const char *st = NULL;
	size_t k;

	x->exit_code = -1;
	if (!proto_expect_obj(r, o))
		return;
	proto_get_str(r, o, "task_id", true, &x->task_id);
	proto_get_int(r, o, "epoch", true, &x->epoch);
	proto_get_str(r, o, "state", true, &st);
	for (k = 0; st && k < DRV_ARRAY_SIZE(state_names) && strcmp(st, state_names[k]); k++)
		;
	if (st && k == DRV_ARRAY_SIZE(state_names))
		proto_fail_at(r, "state", "\"%s\": expected running, exited or failed", st);
	x->state = (enum drv_proto_task_state)k;
	proto_get_int(r, o, "pid", false, &x->pid);
	proto_get_str(r, o, "time", false, &x->time);
	proto_get_int(r, o, "exit_code", false, &x->exit_code);
	proto_get_int(r, o, "signal", false, &x->signal);
	proto_get_str(r, o, "signal_name", false, &x->signal_name);
	proto_get_bool(r, o, "oom_killed", false, &x->oom_killed);
	proto_get_bool(r, o, "timed_out", false, &x->timed_out);
	proto_get_bool(r, o, "fenced", false, &x->fenced);
	proto_get_str(r, o, "reason", false, &x->reason);
	proto_get_bool(r, o, "requeue", false, &x->requeue);
	proto_get_str(r, o, "drain", false, &x->drain);
	proto_get_usage(r, o, &x->usage);
	proto_get_container(r, o, &x->container);
	proto_unknown_keys(r, o, report_keys);
}

json_t *proto_report_encode(const struct drv_proto_report *x)
{
	json_t *o = json_object();

	proto_put_str(o, "task_id", x->task_id);
	proto_put_int(o, "epoch", x->epoch);
	proto_put_str(o, "state", drv_proto_task_state_name(x->state));
	if (x->pid)
		proto_put_int(o, "pid", x->pid);
	proto_put_opt_str(o, "time", x->time);
	if (x->state == DRV_PROTO_EXITED) {
		if (x->signal) {
			proto_put_int(o, "signal", x->signal);
			proto_put_opt_str(o, "signal_name", x->signal_name);
		} else {
			proto_put_int(o, "exit_code", x->exit_code);
		}
		json_object_set_new(o, "oom_killed", json_boolean(x->oom_killed));
		if (x->timed_out)
			json_object_set_new(o, "timed_out", json_true());
		if (x->fenced)
			json_object_set_new(o, "fenced", json_true());
	}
	proto_put_opt_str(o, "reason", x->reason);
	if (x->requeue)
		json_object_set_new(o, "requeue", json_true());
	proto_put_opt_str(o, "drain", x->drain);
	if (x->usage)
		json_object_set_new(o, "usage", proto_usage_encode(x->usage));
	proto_put_container(o, &x->container);
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
	t->command_len = -1;
	t->run_as_uid = t->run_as_gid = -1;
	t->umask = -1;
}

static const char *const peer_keys[] = { "rank", "node", "address", NULL };

static void one_peer(struct proto_rd *r, const json_t *o, void *el)
{
	struct drv_proto_peer *p = el;

	if (!proto_expect_obj(r, o))
		return;
	proto_get_int(r, o, "rank", true, &p->rank);
	proto_get_str(r, o, "node", false, &p->node);
	proto_get_str(r, o, "address", false, &p->address);
	proto_unknown_keys(r, o, peer_keys);
}

static const char *const task_keys[] = { "task_id", "job_id", "job_name", "epoch", "desired",
	"stop_reason", "user", "runtime", "image", "container", "argv", "script", "workdir", "env",
	"volumes", "gpus", "gpu_milli", "cpu_milli", "mem_mib", "rank", "world_size", "local_rank",
	"local_world_size", "node_rank", "nnodes", "master_addr", "master_port", "peers",
	"time_limit_s", "grace_s", "output_max_bytes", "command_len", "pull_policy", "mounts", "shm_mib", "host_ipc",
	"run_as_uid", "run_as_gid", "run_as_non_root", "stdout_file", "stderr_file", "open_append",
	"umask", "signal", "signal_seq", "signal_group", "pty", "pty_rows", "pty_cols", NULL };

static const char *const mount_keys[] = { "name", "type", "host_path", "container_path",
	"sub_path", "read_only", "memory", "size_mib", NULL };

static void one_mount(struct proto_rd *r, const json_t *o, void *el)
{
	struct drv_proto_mount *m = el;

	if (!proto_expect_obj(r, o))
		return;
	proto_get_str(r, o, "name", false, &m->name);
	proto_get_str(r, o, "type", true, &m->type);
	proto_get_str(r, o, "host_path", false, &m->host_path);
	proto_get_str(r, o, "container_path", true, &m->container_path);
	proto_get_str(r, o, "sub_path", false, &m->sub_path);
	proto_get_bool(r, o, "read_only", false, &m->read_only);
	proto_get_bool(r, o, "memory", false, &m->memory);
	proto_get_int(r, o, "size_mib", false, &m->size_mib);
	proto_unknown_keys(r, o, mount_keys);
}

static const char *const file_keys[] = { "path", "mode", "data", NULL };
static const char *const volume_keys[] = { "name", "mount_path", "sub_path", "read_only",
	"secret", "files", NULL };

static void one_file(struct proto_rd *r, const json_t *o, void *el)
{
	struct drv_proto_file *f = el;

	f->mode = -1;
	if (!proto_expect_obj(r, o))
		return;
	proto_get_str(r, o, "path", true, &f->path);
	proto_get_int(r, o, "mode", false, &f->mode);
	proto_get_str(r, o, "data", true, &f->data);
	proto_unknown_keys(r, o, file_keys);
}

static void one_volume(struct proto_rd *r, const json_t *o, void *el)
{
	struct drv_proto_volume *v = el;

	v->read_only = true;
	if (!proto_expect_obj(r, o))
		return;
	proto_get_str(r, o, "name", true, &v->name);
	proto_get_str(r, o, "mount_path", true, &v->mount_path);
	proto_get_str(r, o, "sub_path", false, &v->sub_path);
	proto_get_bool(r, o, "read_only", false, &v->read_only);
	proto_get_bool(r, o, "secret", false, &v->secret);
	proto_get_list(r, o, "files", false, sizeof(*v->files), one_file, &v->files, &v->nfiles);
	proto_unknown_keys(r, o, volume_keys);
}

static json_t *volumes_encode(const struct drv_proto_volume *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object(), *fs = json_array();

		proto_put_str(o, "name", v[i].name);
		proto_put_str(o, "mount_path", v[i].mount_path);
		proto_put_opt_str(o, "sub_path", v[i].sub_path);
		json_object_set_new(o, "read_only", json_boolean(v[i].read_only));
		json_object_set_new(o, "secret", json_boolean(v[i].secret));
		for (size_t k = 0; k < v[i].nfiles; k++) {
			json_t *f = json_object();

			proto_put_str(f, "path", v[i].files[k].path);
			if (v[i].files[k].mode >= 0)
				proto_put_int(f, "mode", v[i].files[k].mode);
			proto_put_str(f, "data", v[i].files[k].data);
			json_array_append_new(fs, f);
		}
		json_object_set_new(o, "files", fs);
		json_array_append_new(a, o);
	}
	return a;
}

/* The identity and what to run. */
static void task_what(struct proto_rd *r, const json_t *o, struct drv_proto_task *t)
{
	const char *desired = NULL;

	proto_get_str(r, o, "task_id", true, &t->task_id);
	proto_get_int(r, o, "job_id", true, &t->job_id);
	proto_get_str(r, o, "job_name", false, &t->job_name);
	proto_get_int(r, o, "epoch", true, &t->epoch);
	proto_get_str(r, o, "desired", true, &desired);
	if (desired && strcmp(desired, "run") && strcmp(desired, "stop"))
		proto_fail_at(r, "desired", "\"%s\": expected run or stop", desired);
	t->stop = desired && !strcmp(desired, "stop");
	proto_get_str(r, o, "stop_reason", false, &t->stop_reason);
	proto_get_str(r, o, "user", false, &t->user);
	proto_get_str(r, o, "runtime", false, &t->runtime);
	proto_get_str(r, o, "image", false, &t->image);
	proto_get_str(r, o, "container", false, &t->container);
	proto_get_list(r, o, "argv", false, sizeof(*t->argv), proto_item_str, &t->argv, &t->nargv);
	proto_get_int(r, o, "command_len", false, &t->command_len);
	if (t->command_len > (int64_t)t->nargv)
		proto_fail_at(r, "command_len", "%lld: expected at most the %zu of argv",
			      (long long)t->command_len, t->nargv);
	proto_get_str(r, o, "pull_policy", false, &t->pull_policy);
	proto_get_list(r, o, "mounts", false, sizeof(*t->mounts), one_mount, &t->mounts,
		       &t->nmounts);
	proto_get_int(r, o, "shm_mib", false, &t->shm_mib);
	proto_get_bool(r, o, "host_ipc", false, &t->host_ipc);
	proto_get_int(r, o, "run_as_uid", false, &t->run_as_uid);
	proto_get_int(r, o, "run_as_gid", false, &t->run_as_gid);
	proto_get_bool(r, o, "run_as_non_root", false, &t->run_as_non_root);
	proto_get_str(r, o, "script", false, &t->script);
	proto_get_str(r, o, "workdir", false, &t->workdir);
	proto_get_kv(r, o, "env", &t->env, &t->nenv);
	proto_get_list(r, o, "volumes", false, sizeof(*t->volumes), one_volume, &t->volumes,
		       &t->nvolumes);
}

/* Where it runs, its share and its gang. */
static void task_where(struct proto_rd *r, const json_t *o, struct drv_proto_task *t)
{
	proto_get_list(r, o, "gpus", false, sizeof(*t->gpus), proto_item_int, &t->gpus, &t->ngpus);
	proto_get_int(r, o, "gpu_milli", false, &t->gpu_milli);
	proto_get_int(r, o, "cpu_milli", false, &t->cpu_milli);
	proto_get_int(r, o, "mem_mib", false, &t->mem_mib);
	proto_get_int(r, o, "rank", false, &t->rank);
	proto_get_int(r, o, "world_size", false, &t->world_size);
	proto_get_int(r, o, "local_rank", false, &t->local_rank);
	proto_get_int(r, o, "local_world_size", false, &t->local_world_size);
	proto_get_int(r, o, "node_rank", false, &t->node_rank);
	proto_get_int(r, o, "nnodes", false, &t->nnodes);
	proto_get_str(r, o, "master_addr", false, &t->master_addr);
	proto_get_int(r, o, "master_port", false, &t->master_port);
	proto_get_list(r, o, "peers", false, sizeof(*t->peers), one_peer, &t->peers, &t->npeers);
	proto_get_int(r, o, "time_limit_s", false, &t->time_limit_s);
	proto_get_int(r, o, "grace_s", false, &t->grace_s);
	proto_get_int(r, o, "output_max_bytes", false, &t->output_max_bytes);
	proto_get_str(r, o, "stdout_file", false, &t->stdout_file);
	proto_get_str(r, o, "stderr_file", false, &t->stderr_file);
	proto_get_bool(r, o, "open_append", false, &t->open_append);
	proto_get_int(r, o, "umask", false, &t->umask);
	if (t->umask < -1 || t->umask > 0777)
		proto_fail_at(r, "umask", "%lld: expected 0..511 (0777)", (long long)t->umask);
	proto_get_int(r, o, "signal", false, &t->signal);
	proto_get_int(r, o, "signal_seq", false, &t->signal_seq);
	proto_get_bool(r, o, "signal_group", false, &t->signal_group);
	if (t->signal < 0 || t->signal > 64)
		proto_fail_at(r, "signal", "%lld: expected a signal number 1..64",
			      (long long)t->signal);
	proto_get_bool(r, o, "pty", false, &t->pty);
	proto_get_int(r, o, "pty_rows", false, &t->pty_rows);
	proto_get_int(r, o, "pty_cols", false, &t->pty_cols);
	if (t->pty_rows < 0 || t->pty_rows > 65535)
		proto_fail_at(r, "pty_rows", "%lld: expected 0..65535", (long long)t->pty_rows);
	if (t->pty_cols < 0 || t->pty_cols > 65535)
		proto_fail_at(r, "pty_cols", "%lld: expected 0..65535", (long long)t->pty_cols);
}

void proto_item_task(struct proto_rd *r, const json_t *o, void *el)
{
	struct drv_proto_task *t = el;

	drv_proto_task_init(t);
	if (!proto_expect_obj(r, o))
		return;
	task_what(r, o, t);
	task_where(r, o, t);
	proto_unknown_keys(r, o, task_keys);
}

void proto_task_release(struct drv_proto_task *t)
{
	drv_free(t->argv);
	drv_free(t->env);
	for (size_t i = 0; i < t->nvolumes; i++)
		drv_free(t->volumes[i].files);
	drv_free(t->volumes);
	drv_free(t->gpus);
	drv_free(t->peers);
	drv_free(t->mounts);
}

json_t *drv_proto_task_encode(const struct drv_proto_task *t)
{
	json_t *o = json_object(), *peers = json_array();

	proto_put_str(o, "task_id", t->task_id);
	proto_put_int(o, "job_id", t->job_id);
	proto_put_str(o, "job_name", t->job_name);
	proto_put_int(o, "epoch", t->epoch);
	proto_put_str(o, "desired", t->stop ? "stop" : "run");
	proto_put_opt_str(o, "stop_reason", t->stop_reason);
	proto_put_str(o, "user", t->user);
	proto_put_str(o, "runtime", t->runtime ? t->runtime : "host");
	proto_put_str(o, "image", t->image);
	proto_put_str(o, "container", t->container);
	json_object_set_new(o, "argv", proto_str_list(t->argv, t->nargv));
	if (t->command_len >= 0)
		proto_put_int(o, "command_len", t->command_len);
	proto_put_opt_str(o, "pull_policy", t->pull_policy);
	if (t->nmounts) {
		json_t *ms = json_array();

		for (size_t i = 0; i < t->nmounts; i++) {
			const struct drv_proto_mount *m = &t->mounts[i];
			json_t *e = json_object();

			proto_put_opt_str(e, "name", m->name);
			proto_put_str(e, "type", m->type);
			proto_put_opt_str(e, "host_path", m->host_path);
			proto_put_str(e, "container_path", m->container_path);
			proto_put_opt_str(e, "sub_path", m->sub_path);
			if (m->read_only)
				json_object_set_new(e, "read_only", json_true());
			if (m->memory)
				json_object_set_new(e, "memory", json_true());
			if (m->size_mib)
				proto_put_int(e, "size_mib", m->size_mib);
			json_array_append_new(ms, e);
		}
		json_object_set_new(o, "mounts", ms);
	}
	if (t->shm_mib > 0)
		proto_put_int(o, "shm_mib", t->shm_mib);
	if (t->host_ipc)
		json_object_set_new(o, "host_ipc", json_true());
	if (t->run_as_uid >= 0)
		proto_put_int(o, "run_as_uid", t->run_as_uid);
	if (t->run_as_gid >= 0)
		proto_put_int(o, "run_as_gid", t->run_as_gid);
	if (t->run_as_non_root)
		json_object_set_new(o, "run_as_non_root", json_true());
	proto_put_str(o, "script", t->script);
	proto_put_str(o, "workdir", t->workdir);
	json_object_set_new(o, "env", drv_proto_kv_encode(t->env, t->nenv));
	if (t->nvolumes)
		json_object_set_new(o, "volumes", volumes_encode(t->volumes, t->nvolumes));
	json_object_set_new(o, "gpus", proto_int_list(t->gpus, t->ngpus));
	proto_put_int(o, "gpu_milli", t->gpu_milli);
	proto_put_int(o, "cpu_milli", t->cpu_milli);
	proto_put_int(o, "mem_mib", t->mem_mib);
	proto_put_int(o, "rank", t->rank);
	proto_put_int(o, "world_size", t->world_size);
	proto_put_int(o, "local_rank", t->local_rank);
	proto_put_int(o, "local_world_size", t->local_world_size);
	proto_put_int(o, "node_rank", t->node_rank);
	proto_put_int(o, "nnodes", t->nnodes);
	proto_put_str(o, "master_addr", t->master_addr);
	proto_put_int(o, "master_port", t->master_port);
	for (size_t i = 0; i < t->npeers; i++) {
		json_t *p = json_object();

		proto_put_int(p, "rank", t->peers[i].rank);
		proto_put_str(p, "node", t->peers[i].node);
		proto_put_str(p, "address", t->peers[i].address);
		json_array_append_new(peers, p);
	}
	json_object_set_new(o, "peers", peers);
	proto_put_int(o, "time_limit_s", t->time_limit_s);
	if (t->grace_s >= 0)
		proto_put_int(o, "grace_s", t->grace_s);
	if (t->output_max_bytes > 0)
		proto_put_int(o, "output_max_bytes", t->output_max_bytes);
	proto_put_opt_str(o, "stdout_file", t->stdout_file);
	proto_put_opt_str(o, "stderr_file", t->stderr_file);
	if (t->open_append)
		json_object_set_new(o, "open_append", json_true());
	if (t->umask >= 0)
		proto_put_int(o, "umask", t->umask);
	if (t->signal_seq > 0) {
		proto_put_int(o, "signal", t->signal);
		proto_put_int(o, "signal_seq", t->signal_seq);
		if (t->signal_group)
			json_object_set_new(o, "signal_group", json_true());
	}
	if (t->pty) {
		json_object_set_new(o, "pty", json_true());
		proto_put_int(o, "pty_rows", t->pty_rows);
		proto_put_int(o, "pty_cols", t->pty_cols);
	}
	return o;
}

