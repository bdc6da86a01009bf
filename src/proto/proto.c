/*
 * proto.c: encoders and decoders of the agent protocol's messages
 * (include/drover/proto.h is the manual): register and its answer, the
 * sync and its answer, and the version rule. The reader and the parts
 * they are made of: proto_read.c, proto_parts.c.
 */
#include "proto_int.h"
#include <errno.h>
#include <stdlib.h>

#include <stdio.h>
#include <string.h>

/* --- register ---------------------------------------------------------------------- */

static const char *const gpu_keys[] = { "index", "uuid", "model", "memory_mib", "pci_bus_id",
	NULL };

static void one_gpu(struct proto_rd *r, const json_t *o, void *el)
{
	struct drv_proto_gpu *g = el;

	g->index = -1;
	if (!proto_expect_obj(r, o))
		return;
	proto_get_int(r, o, "index", false, &g->index);
	proto_get_str(r, o, "uuid", false, &g->uuid);
	proto_get_str(r, o, "model", true, &g->model);
	proto_get_int(r, o, "memory_mib", false, &g->memory_mib);
	proto_get_str(r, o, "pci_bus_id", false, &g->pci_bus_id);
	proto_unknown_keys(r, o, gpu_keys);
}

static const char *const nic_keys[] = { "name", "link_layer", "state", "rate_gbps", "near_gpus",
	NULL };

static void one_nic(struct proto_rd *r, const json_t *o, void *el)
{
	struct drv_proto_nic *x = el;

	if (!proto_expect_obj(r, o))
		return;
	proto_get_str(r, o, "name", true, &x->name);
	proto_get_str(r, o, "link_layer", false, &x->link_layer);
	proto_get_str(r, o, "state", false, &x->state);
	proto_get_int(r, o, "rate_gbps", false, &x->rate_gbps);
	proto_get_list(r, o, "near_gpus", false, sizeof(*x->near_gpus), proto_item_int, &x->near_gpus,
	       &x->nnear);
	proto_unknown_keys(r, o, nic_keys);
}

/* gpu_matrix rows: a list of lists of strings. */
static void g_matrix(struct proto_rd *r, const json_t *topo, struct drv_proto_register *m)
{
	json_t *rows = proto_get_array(r, topo, "gpu_matrix", false), *row;
	size_t i, mark;

	if (!rows || !json_array_size(rows))
		return;
	m->gpu_matrix = drv_calloc(json_array_size(rows), sizeof(*m->gpu_matrix));
	m->matrix_len = drv_calloc(json_array_size(rows), sizeof(*m->matrix_len));
	mark = proto_push_key(r, "gpu_matrix");
	json_array_foreach(rows, i, row) {
		size_t m2 = r->len, k;
		json_t *cell;

		proto_push_index(r, i);
		m->nmatrix = i + 1;
		if (!json_is_array(row)) {
			proto_fail_at(r, NULL, "expected a list, found %s", proto_type_name(row));
			break;
		}
		m->gpu_matrix[i] = drv_calloc(json_array_size(row) + 1, sizeof(**m->gpu_matrix));
		json_array_foreach(row, k, cell) {
			size_t m3 = r->len;

			proto_push_index(r, k);
			proto_item_str(r, cell, &m->gpu_matrix[i][k]);
			proto_pop(r, m3);
			m->matrix_len[i] = k + 1;
		}
		proto_pop(r, m2);
		if (r->failed)
			break;
	}
	proto_pop(r, mark);
}

static const char *const topo_keys[] = { "gpu_matrix", "nics", NULL };

static void g_topology(struct proto_rd *r, const json_t *o, struct drv_proto_register *m)
{
	json_t *topo = proto_get(r, o, "topology", false, proto_is_obj, "a mapping");
	size_t mark;

	if (!topo)
		return;
	mark = proto_push_key(r, "topology");
	g_matrix(r, topo, m);
	proto_get_list(r, topo, "nics", false, sizeof(*m->nics), one_nic, &m->nics, &m->nnics);
	proto_unknown_keys(r, topo, topo_keys);
	proto_pop(r, mark);
}

static const char *const register_keys[] = { "protocol", "name", "hostname", "address",
	"agent_url", "metrics_url", "no_metrics", "version", "backend", "labels", "cpu_milli", "mem_mib", "gpus", "topology",
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
	struct proto_rd r;

	proto_rd_init(&r, d);
	drv_proto_register_init(m);
	if (proto_expect_obj(&r, j)) {
		proto_get_int(&r, j, "protocol", true, &m->protocol);
		proto_get_str(&r, j, "name", true, &m->name);
		proto_get_str(&r, j, "hostname", false, &m->hostname);
		proto_get_str(&r, j, "address", false, &m->address);
		proto_get_str(&r, j, "agent_url", false, &m->agent_url);
		proto_get_str(&r, j, "metrics_url", false, &m->metrics_url);
		proto_get_bool(&r, j, "no_metrics", false, &m->no_metrics);
		proto_get_str(&r, j, "version", false, &m->version);
		proto_get_str(&r, j, "backend", false, &m->backend);
		proto_get_kv(&r, j, "labels", &m->labels, &m->nlabels);
		proto_get_int(&r, j, "cpu_milli", false, &m->cpu_milli);
		proto_get_int(&r, j, "mem_mib", false, &m->mem_mib);
		proto_get_list(&r, j, "gpus", false, sizeof(*m->gpus), one_gpu, &m->gpus, &m->ngpus);
		g_topology(&r, j, m);
		proto_get_list(&r, j, "running", false, sizeof(*m->running), proto_item_ref, &m->running,
		       &m->nrunning);
		proto_unknown_keys(&r, j, register_keys);
	}
	return proto_finish(&r, j, &m->doc, register_release_, m);
}

static json_t *topology_encode(const struct drv_proto_register *m)
{
	json_t *topo = json_object(), *mat = json_array(), *nics = json_array();

	for (size_t i = 0; i < m->nmatrix; i++)
		json_array_append_new(mat, proto_str_list(m->gpu_matrix[i], m->matrix_len[i]));
	for (size_t i = 0; i < m->nnics; i++) {
		const struct drv_proto_nic *x = &m->nics[i];
		json_t *o = json_object();

		proto_put_str(o, "name", x->name);
		proto_put_str(o, "link_layer", x->link_layer ? x->link_layer : "");
		proto_put_str(o, "state", x->state ? x->state : "");
		proto_put_int(o, "rate_gbps", x->rate_gbps);
		json_object_set_new(o, "near_gpus", proto_int_list(x->near_gpus, x->nnear));
		json_array_append_new(nics, o);
	}
	json_object_set_new(topo, "gpu_matrix", mat);
	json_object_set_new(topo, "nics", nics);
	return topo;
}

json_t *drv_proto_register_encode(const struct drv_proto_register *m)
{
	json_t *o = json_object(), *gpus = json_array();

	proto_put_int(o, "protocol", m->protocol);
	proto_put_str(o, "name", m->name);
	proto_put_opt_str(o, "hostname", m->hostname);
	proto_put_opt_str(o, "address", m->address);
	proto_put_opt_str(o, "agent_url", m->agent_url);
	proto_put_opt_str(o, "metrics_url", m->metrics_url);
	if (m->no_metrics)
		json_object_set_new(o, "no_metrics", json_true());
	proto_put_opt_str(o, "version", m->version);
	json_object_set_new(o, "labels", drv_proto_kv_encode(m->labels, m->nlabels));
	proto_put_int(o, "cpu_milli", m->cpu_milli);
	proto_put_int(o, "mem_mib", m->mem_mib);
	proto_put_opt_str(o, "backend", m->backend);
	for (size_t i = 0; i < m->ngpus; i++) {
		const struct drv_proto_gpu *g = &m->gpus[i];
		json_t *x = json_object();

		proto_put_int(x, "index", g->index >= 0 ? g->index : (int64_t)i);
		proto_put_opt_str(x, "uuid", g->uuid);
		proto_put_str(x, "model", g->model);
		proto_put_int(x, "memory_mib", g->memory_mib);
		proto_put_opt_str(x, "pci_bus_id", g->pci_bus_id);
		json_array_append_new(gpus, x);
	}
	json_object_set_new(o, "gpus", gpus);
	json_object_set_new(o, "topology", topology_encode(m));
	json_object_set_new(o, "running", proto_refs_encode(m->running, m->nrunning));
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
	proto_refs_release(m->running, m->nrunning);
	drv_free(m->running);
	json_decref(m->doc);
	memset(m, 0, sizeof(*m));
}

/* --- registered --------------------------------------------------------------------- */

/* "open_endpoints": false in j; absent is open. */
static bool closed_endpoints(struct proto_rd *r, const json_t *j)
{
	bool open = true;

	proto_get_bool(r, j, "open_endpoints", false, &open);
	return !open;
}

static const char *const registered_keys[] = { "node", "session", "heartbeat_interval_s",
	"heartbeat_timeout_s", "agent_lease_s", "allow_root_tasks", "open_endpoints", "pool", "labels",
	"protocol", NULL };

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
	struct proto_rd r;

	proto_rd_init(&r, d);
	drv_proto_registered_init(m);
	if (proto_expect_obj(&r, j)) {
		proto_get_str(&r, j, "node", true, &m->node);
		proto_get_int(&r, j, "session", true, &m->session);
		proto_get_int(&r, j, "heartbeat_interval_s", false, &m->heartbeat_interval_s);
		proto_get_int(&r, j, "heartbeat_timeout_s", false, &m->heartbeat_timeout_s);
		proto_get_int(&r, j, "agent_lease_s", false, &m->agent_lease_s);
		proto_get_bool(&r, j, "allow_root_tasks", false, &m->allow_root_tasks);
		m->endpoints_closed = closed_endpoints(&r, j);
		proto_get_str(&r, j, "pool", false, &m->pool);
		proto_get_kv(&r, j, "labels", &m->labels, &m->nlabels);
		proto_get_int(&r, j, "protocol", false, &m->protocol);
		proto_unknown_keys(&r, j, registered_keys);
	}
	return proto_finish(&r, j, &m->doc, registered_release_, m);
}

json_t *drv_proto_registered_encode(const struct drv_proto_registered *m)
{
	json_t *o = json_object();

	proto_put_str(o, "node", m->node);
	proto_put_int(o, "session", m->session);
	proto_put_int(o, "heartbeat_interval_s", m->heartbeat_interval_s);
	proto_put_int(o, "heartbeat_timeout_s", m->heartbeat_timeout_s);
	if (m->agent_lease_s > 0)
		proto_put_int(o, "agent_lease_s", m->agent_lease_s);
	json_object_set_new(o, "allow_root_tasks", json_boolean(m->allow_root_tasks));
	if (m->endpoints_closed)
		json_object_set_new(o, "open_endpoints", json_false());
	proto_put_str(o, "pool", m->pool);
	json_object_set_new(o, "labels", drv_proto_kv_encode(m->labels, m->nlabels));
	if (m->protocol > 0)
		proto_put_int(o, "protocol", m->protocol);
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
	struct proto_rd r;

	proto_rd_init(&r, d);
	drv_proto_sync_init(m);
	if (proto_expect_obj(&r, j)) {
		proto_get_str(&r, j, "node", true, &m->node);
		proto_get_int(&r, j, "session", true, &m->session);
		proto_get_int(&r, j, "version", true, &m->version);
		proto_get_int(&r, j, "wait_s", false, &m->wait_s);
		proto_get_list(&r, j, "tasks", false, sizeof(*m->tasks), proto_item_ref, &m->tasks, &m->ntasks);
		proto_get_list(&r, j, "reports", false, sizeof(*m->reports), proto_item_report, &m->reports,
		       &m->nreports);
		proto_get_list(&r, j, "gpus", false, sizeof(*m->gpus), proto_item_health, &m->gpus, &m->ngpus);
		proto_unknown_keys(&r, j, sync_keys);
	}
	return proto_finish(&r, j, &m->doc, sync_release_, m);
}

json_t *drv_proto_sync_encode(const struct drv_proto_sync *m)
{
	json_t *o = json_object(), *reps = json_array();

	proto_put_str(o, "node", m->node);
	proto_put_int(o, "session", m->session);
	proto_put_int(o, "version", m->version);
	if (m->wait_s >= 0)
		proto_put_int(o, "wait_s", m->wait_s);
	json_object_set_new(o, "tasks", proto_refs_encode(m->tasks, m->ntasks));
	for (size_t i = 0; i < m->nreports; i++)
		json_array_append_new(reps, proto_report_encode(&m->reports[i]));
	json_object_set_new(o, "reports", reps);
	json_object_set_new(o, "gpus", drv_proto_gpu_health_encode(m->gpus, m->ngpus));
	return o;
}

void drv_proto_sync_release(struct drv_proto_sync *m)
{
	proto_refs_release(m->tasks, m->ntasks);
	for (size_t i = 0; m->reports && i < m->nreports; i++)
		proto_usage_free(m->reports[i].usage);
	drv_free(m->tasks);
	drv_free(m->reports);
	drv_free(m->gpus);
	json_decref(m->doc);
	memset(m, 0, sizeof(*m));
}

/* --- sync reply ----------------------------------------------------------------------- */

static const char *const sync_reply_keys[] = { "version", "heartbeat_interval_s",
	"agent_lease_s", "allow_root_tasks", "open_endpoints", "tasks", "stale", NULL };

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
	struct proto_rd r;

	proto_rd_init(&r, d);
	drv_proto_sync_reply_init(m);
	if (proto_expect_obj(&r, j)) {
		proto_get_int(&r, j, "version", true, &m->version);
		proto_get_int(&r, j, "heartbeat_interval_s", true, &m->heartbeat_interval_s);
		proto_get_int(&r, j, "agent_lease_s", false, &m->agent_lease_s);
		proto_get_bool(&r, j, "allow_root_tasks", false, &m->allow_root_tasks);
		m->endpoints_closed = closed_endpoints(&r, j);
		m->has_tasks = json_object_get(j, "tasks") && !json_is_null(json_object_get(j, "tasks"));
		proto_get_list(&r, j, "tasks", false, sizeof(*m->tasks), proto_item_task, &m->tasks, &m->ntasks);
		proto_get_list(&r, j, "stale", false, sizeof(*m->stale), proto_item_ref, &m->stale, &m->nstale);
		proto_unknown_keys(&r, j, sync_reply_keys);
	}
	return proto_finish(&r, j, &m->doc, sync_reply_release_, m);
}

json_t *drv_proto_sync_reply_encode(const struct drv_proto_sync_reply *m)
{
	json_t *o = json_object();

	proto_put_int(o, "version", m->version);
	proto_put_int(o, "heartbeat_interval_s", m->heartbeat_interval_s);
	if (m->agent_lease_s > 0)
		proto_put_int(o, "agent_lease_s", m->agent_lease_s);
	if (m->allow_root_tasks)
		json_object_set_new(o, "allow_root_tasks", json_true());
	if (m->endpoints_closed)
		json_object_set_new(o, "open_endpoints", json_false());
	if (m->has_tasks) {
		json_t *tasks = json_array();

		for (size_t i = 0; i < m->ntasks; i++)
			json_array_append_new(tasks, drv_proto_task_encode(&m->tasks[i]));
		json_object_set_new(o, "tasks", tasks);
	}
	json_object_set_new(o, "stale", proto_refs_encode(m->stale, m->nstale));
	return o;
}

void drv_proto_sync_reply_release(struct drv_proto_sync_reply *m)
{
	for (size_t i = 0; i < m->ntasks; i++)
		proto_task_release(&m->tasks[i]);
	drv_free(m->tasks);
	proto_refs_release(m->stale, m->nstale);
	drv_free(m->stale);
	json_decref(m->doc);
	memset(m, 0, sizeof(*m));
}

/* --- versions -------------------------------------------------------------------------- */

int drv_proto_versions_check(int64_t ours, int64_t theirs, const char *peer, const char *self,
			     char *msg, size_t msgsz)
{
	if (theirs >= DRV_PROTO_MIN && theirs >= ours - 1 && theirs <= ours + 1)
		return 0;
	snprintf(msg, msgsz, "%s speaks protocol %lld; this %s speaks %lld (at most one apart)",
		 peer, (long long)theirs, self, (long long)ours);
	return DRV_EPERM;
}

int drv_proto_version_check(int64_t theirs, char *msg, size_t msgsz)
{
	return drv_proto_versions_check(DRV_PROTO_VERSION, theirs, "agent", "controller", msg,
					msgsz);
}

int drv_proto_speaks(char *msg, size_t msgsz)
{
	const char *v = getenv("DROVER_PROTO_VERSION");
	char *end;
	long n;

	if (!v || !*v)
		return DRV_PROTO_VERSION;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || n < DRV_PROTO_MIN || n > DRV_PROTO_VERSION) {
		snprintf(msg, msgsz, "DROVER_PROTO_VERSION: \"%s\": expected a protocol version "
			 "from %d to %d", v, DRV_PROTO_MIN, DRV_PROTO_VERSION);
		return DRV_EINVAL;
	}
	return (int)n;
}
