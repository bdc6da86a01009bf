/*
 * nodes.c: the controller's nodes and the cluster the scheduler sees:
 * finding a node by name, its state (up, draining, down) kept in step
 * with the cluster and the scheduler, the cluster file or the default
 * pool and leaf new nodes join, and adding a node an agent registers.
 * nodes[i] is cluster.nodes[i] throughout.
 */
#include "server_int.h"

#include <stdlib.h>
#include <string.h>

#include "drover/clusterfile.h"

/* FNV-1a: the name index's hash. */
static uint64_t name_hash(const char *name)
{
	uint64_t h = 1469598103934665603ull;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

/* Puts node i into the name index (open addressing, index + 1, 0 empty). */
static void index_put(struct drv_server *s, int32_t i)
{
	size_t mask = s->node_index_cap - 1, k = name_hash(s->nodes[i].name) & mask;

	while (s->node_index[k])
		k = (k + 1) & mask;
	s->node_index[k] = i + 1;
}

/* Keeps the index at most half full: every agent's sync finds its node by
 * name, so with 12,500 nodes a scan would be most of the server's work. */
static void index_add(struct drv_server *s, int32_t i)
{
	if ((size_t)s->nnodes * 2 > s->node_index_cap) {
		drv_free(s->node_index);
		s->node_index_cap = s->node_index_cap ? s->node_index_cap * 2 : 64;
		s->node_index = drv_calloc(s->node_index_cap, sizeof(*s->node_index));
		for (int32_t k = 0; k < s->nnodes; k++)
			index_put(s, k);
		return;
	}
	index_put(s, i);
}

int32_t srv_node_find(struct drv_server *s, const char *name)
{
	size_t mask = s->node_index_cap - 1, k;

	if (!s->node_index_cap)
		return -1;
	for (k = name_hash(name) & mask; s->node_index[k]; k = (k + 1) & mask)
		if (strcmp(s->nodes[s->node_index[k] - 1].name, name) == 0)
			return s->node_index[k] - 1;
	return -1;
}

void srv_node_mark(struct drv_server *s, int32_t i)
{
	if (s->nodes[i].dirty)
		return;
	s->nodes[i].dirty = true;
	DRV_GROW(s->dirty_nodes, s->ndirty_nodes + 1, s->dncap);
	s->dirty_nodes[s->ndirty_nodes++] = i;
}

void srv_node_set_state(struct drv_server *s, int32_t i, enum drv_node_state st, const char *reason)
{
	struct srv_node *n = &s->nodes[i];
	enum drv_node_state from = n->state;

	srv_set_str(&n->reason, reason ? reason : "");
	srv_node_mark(s, i);
	if (from == st)
		return;
	n->state = st;
	drv_cluster_set_node_state(&s->cluster, i, st);
	if (s->sched)
		drv_sched_cluster_changed(s->sched, drv_wall_s());
	srv_queue_event(s, "node", NULL, n->name, srv_nstate_name(from), srv_nstate_name(st), reason);
	drv_log(&s->log, "node %s: %s -> %s%s%s", n->name, srv_nstate_name(from), srv_nstate_name(st),
		reason && *reason ? ": " : "", reason ? reason : "");
	srv_sched_kick(s);
}

/* Makes sure nodes[] covers every cluster node (nodes from a file). */
static void nodes_sync(struct drv_server *s)
{
	while (s->nnodes < s->cluster.nnodes) {
		struct srv_node *n;

		DRV_GROW(s->nodes, (size_t)s->nnodes + 1, s->ncap);
		n = &s->nodes[s->nnodes];
		memset(n, 0, sizeof(*n));
		n->name = drv_strdup(s->cluster.nodes[s->nnodes].name);
		n->state = s->cluster.nodes[s->nnodes].state;
		n->labels = json_object();
		for (int32_t k = 0; k < s->cluster.nodes[s->nnodes].nlabels; k++)
			json_object_set_new(n->labels, s->cluster.nodes[s->nnodes].labels[k].key,
					    json_string(s->cluster.nodes[s->nnodes].labels[k].value));
		s->nnodes++;
		index_add(s, s->nnodes - 1);
	}
}

static int32_t child_named(struct drv_cluster *c, int32_t parent, const char *name)
{
	for (int32_t v = c->vertices[parent].first_child; v >= 0; v = c->vertices[v].next_sibling)
		if (strcmp(c->vertices[v].name, name) == 0)
			return v;
	return -1;
}

/* The pool and leaf where agents the cluster file does not name land. */
static int default_place(struct drv_server *s)
{
	struct drv_cluster *c = &s->cluster;
	int32_t v = 0;
	int pool_level = drv_cluster_level(c, "pool");

	for (int lvl = 1; lvl < c->nlevels - 1; lvl++) {
		const char *name = lvl == pool_level ? s->cfg.default_pool
				   : lvl == c->nlevels - 2 ? s->cfg.default_leaf : "default";
		int32_t w = child_named(c, v, name);

		if (w < 0) {
			w = drv_cluster_add_vertex(c, v, name);
			if (w < 0)
				return w;
		}
		v = w;
		if (lvl == pool_level) {
			int32_t p = -1;

			for (int32_t k = 0; k < c->npools; k++)
				if (strcmp(c->pools[k].name, name) == 0)
					p = k;
			if (p < 0) {
				struct drv_pool pool = { .name = (char *)name, .provider = (char *)"onprem",
							 .region = (char *)"local", .vertex = v };

				p = drv_cluster_add_pool(c, &pool);
				if (p < 0)
					return p;
			}
			s->default_pool_index = p;
		}
	}
	s->default_leaf_vertex = v;
	return 0;
}

/* The labels into cluster node cn; only the runtime label (SRV_RUNTIME_LABEL)
 * when runtime_only (a node of the cluster file keeps the file's labels). */
static void cluster_labels(struct drv_node *cn, json_t *labels, bool runtime_only)
{
	const char *k;
	json_t *v;

	if (runtime_only) {
		int32_t i;
		const char *val = json_string_value(json_object_get(labels, SRV_RUNTIME_LABEL));

		for (i = 0; i < cn->nlabels && strcmp(cn->labels[i].key, SRV_RUNTIME_LABEL); i++)
			;
		if (i == cn->nlabels) {
			if (!val)
				return;
			cn->labels = drv_realloc(cn->labels, sizeof(*cn->labels) * (size_t)(i + 1));
			cn->labels[i].key = drv_strdup(SRV_RUNTIME_LABEL);
			cn->labels[i].value = NULL;
			cn->nlabels++;
		}
		drv_free(cn->labels[i].value);
		cn->labels[i].value = drv_strdup(val ? val : "host");
		return;
	}
	cn->labels = drv_calloc(json_object_size(labels), sizeof(*cn->labels));
	json_object_foreach(labels, k, v) {
		cn->labels[cn->nlabels].key = drv_strdup(k);
		cn->labels[cn->nlabels].value = drv_strdup(json_is_string(v) ? json_string_value(v) : "");
		cn->nlabels++;
	}
}

void srv_node_runtime_label(struct drv_server *s, int32_t i, json_t *labels)
{
	cluster_labels(&s->cluster.nodes[i], labels, true);
	if (s->sched)
		drv_sched_cluster_changed(s->sched, drv_wall_s());
	srv_runtime_release(s);
}

int srv_node_add(struct drv_server *s, const char *name, int model, int ngpus, int64_t cpu,
	     int64_t mem, json_t *labels)
{
	int idx, rc;

	if (s->default_leaf_vertex < 0) {
		rc = default_place(s);
		if (rc < 0)
			return rc;
	}
	idx = drv_cluster_add_node(&s->cluster, s->default_leaf_vertex, name, model, ngpus, cpu,
				   mem);
	if (idx < 0)
		return idx;
	if (labels && json_object_size(labels))
		cluster_labels(&s->cluster.nodes[idx], labels, false);
	nodes_sync(s);
	json_decref(s->nodes[idx].labels);
	s->nodes[idx].labels = labels ? json_deep_copy(labels) : json_object();
	srv_node_mark(s, idx);
	if (s->sched)
		drv_sched_cluster_changed(s->sched, drv_wall_s());
	return idx;
}

int srv_cluster_setup(struct drv_server *s, const char *cluster_file, char *err, size_t errsz)
{
	static const char *const levels[] = { "cluster", "pool", "leaf", "node" };
	int rc;

	s->default_leaf_vertex = -1;
	s->default_pool_index = -1;
	if (cluster_file) {
		struct drv_diags d;

		drv_diags_init(&d, cluster_file);
		rc = drv_cluster_load_file(cluster_file, &s->cluster, &d);
		if (rc < 0) {
			drv_diags_print(&d, s->log.out ? s->log.out : stderr);
			snprintf(err, errsz, "%s: not a valid cluster file (%d error%s above)",
				 cluster_file, d.nerrors, d.nerrors == 1 ? "" : "s");
			drv_diags_release(&d);
			return rc == DRV_EIO ? DRV_EIO : DRV_EINVAL;
		}
		drv_diags_release(&d);
	} else {
		drv_cluster_init(&s->cluster, "cluster");
		rc = drv_cluster_set_levels(&s->cluster, levels, 4);
		if (rc < 0) {
			snprintf(err, errsz, "cannot set up the cluster: %s", drv_strerror(rc));
			return rc;
		}
	}
	nodes_sync(s);
	/* nodes named by the file are down until their agent registers */
	for (int32_t i = 0; i < s->nnodes; i++) {
		s->nodes[i].state = DRV_NODE_DOWN;
		drv_cluster_set_node_state(&s->cluster, i, DRV_NODE_DOWN);
		srv_set_str(&s->nodes[i].reason, "no agent has registered");
	}
	return 0;
}

void srv_node_gpus(const struct drv_server *s, int32_t i, struct srv_gpu_count *c)
{
	const struct drv_node *cn = &s->cluster.nodes[i];
	int64_t alloc = 0;

	for (int g = 0; g < cn->ngpus; g++)
		alloc += cn->gpu_milli_used && cn->gpu_milli_used[g] > 0;
	c->total += cn->ngpus;
	c->allocated += alloc;
	if (s->nodes[i].state == DRV_NODE_UP)
		c->free += cn->ngpus - alloc;
	else
		c->unavailable += cn->ngpus - alloc;
}

/* --- liveness and leases ------------------------------------------------ */

/* Whether job j has a task on node i that has not ended. */
static bool job_on_node(const struct srv_job *j, int32_t i)
{
	for (int32_t t = 0; t < j->ntasks; t++)
		if (j->tasks[t].node == i && !j->tasks[t].ended)
			return true;
	return false;
}

/* Calls fn on every active job with a task on node i that has not ended
 * (fn may requeue it: the active list is copied first). */
static void each_job_on_node(struct drv_server *s, int32_t i,
			     void (*fn)(struct drv_server *, struct srv_job *, int32_t, const char *),
			     const char *why)
{
	size_t nids;
	uint64_t *ids = srv_active_copy(s, &nids);

	for (size_t k = 0; k < nids; k++) {
		struct srv_job *j = srv_job_get(s, ids[k]);

		if (j && job_on_node(j, i))
			fn(s, j, i, why);
	}
	drv_free(ids);
}

/*
 * An admin drained node i (misc_api.c): every job with a task there that
 * still runs is stopped whole (its gang too: SIGTERM, the job's grace,
 * SIGKILL, by the agents) and goes back to the queue once every task is
 * gone, not counted against retry_limit (the job did nothing wrong). It
 * stays `running` while it stops, its reason saying why; the requeue is
 * one event, "...; requeued". Jobs already stopping or final are left
 * alone. Their ids are appended to ids (a JSON array).
 */
void srv_node_stop_jobs(struct drv_server *s, int32_t i, const char *why, json_t *ids)
{
	size_t nids;
	uint64_t *list = srv_active_copy(s, &nids);
	char reason[640], now[700];

	snprintf(reason, sizeof(reason), "stopped because node %s was %s", s->nodes[i].name, why);
	snprintf(now, sizeof(now), "its tasks are stopping because node %s was %s; it goes back "
		 "to the queue once they are gone", s->nodes[i].name, why);
	for (size_t k = 0; k < nids; k++) {
		struct srv_job *j = srv_job_get(s, list[k]);

		if (!j || !job_on_node(j, i) || j->stop_reason || srv_jstate_final(j->state))
			continue;
		json_array_append_new(ids, json_integer((json_int_t)j->id));
		j->requeue_on_stop = true;
		srv_set_str(&j->reason, now);
		srv_job_stop_tasks(s, j, reason);   /* may requeue it at once */
	}
	drv_free(list);
}

/* A job waits for the lease of node i: it says so, GPUs still held. */
static void job_holds_for_lease(struct drv_server *s, struct srv_job *j, int32_t i,
				const char *why)
{
	srv_set_str(&j->reason, why);
	srv_job_mark(s, j);
}

static void job_lost_node(struct drv_server *s, struct srv_job *j, int32_t i, const char *why)
{
	srv_job_requeue_node_down(s, j, s->nodes[i].name, why);
}

/* The silent node i goes down; its session ends (its agent must register
 * again, listing what it still runs). Its gangs keep their GPUs until the
 * lease is over: the agent may only be cut off, its tasks still running. */
static void node_timed_out(struct drv_server *s, int32_t i, int64_t now)
{
	struct srv_node *n = &s->nodes[i];
	char reason[96], why[400];
	int64_t left_s;

	/* a node restored after a controller restart was last answered by
	 * the previous controller, before its restore time */
	if (!n->last_reply_ms)
		n->last_reply_ms = n->last_hb_ms;

	left_s = (n->last_reply_ms + s->cfg.agent_lease_s * 1000 + SRV_LEASE_MARGIN_MS - now +
		  999) / 1000;
	snprintf(reason, sizeof(reason), "no heartbeat for %lld s",
		 (long long)s->cfg.heartbeat_timeout_s);
	n->registered = false;
	n->lease_wait = true;
	srv_node_mark(s, i);
	drv_http_wake_key(s->http, SRV_KEY_NODE(i));
	srv_node_set_state(s, i, DRV_NODE_DOWN, reason);
	snprintf(why, sizeof(why), "node %s is unreachable (%s); its tasks may still run until "
		 "its agent's lease ends, so the job's GPUs stay held and it restarts in %lld s "
		 "unless the node comes back", n->name, reason, (long long)DRV_MAX(left_s, 0));
	each_job_on_node(s, i, job_holds_for_lease, why);
}

/* The lease of node i is surely over: whatever ran there has stopped. */
static void node_lease_over(struct drv_server *s, int32_t i, int64_t now)
{
	struct srv_node *n = &s->nodes[i];
	char why[200];

	n->lease_wait = false;
	snprintf(why, sizeof(why), "unreachable for %lld s, past its agent's lease "
		 "(agent_lease_s %lld), so its tasks have stopped",
		 (long long)((now - n->last_reply_ms) / 1000), (long long)s->cfg.agent_lease_s);
	each_job_on_node(s, i, job_lost_node, why);
}

void srv_nodes_check_liveness(struct drv_server *s)
{
	int64_t now = drv_mono_ms(), limit = s->cfg.heartbeat_timeout_s * 1000;
	int64_t lease = s->cfg.agent_lease_s * 1000 + SRV_LEASE_MARGIN_MS;

	for (int32_t i = 0; i < s->nnodes; i++) {
		struct srv_node *n = &s->nodes[i];

		if (n->registered && now - n->last_hb_ms > limit)
			node_timed_out(s, i, now);
		if (!n->registered && n->lease_wait && now - n->last_reply_ms > lease)
			node_lease_over(s, i, now);
	}
}
