/*
 * config.c: the controller's config file (docs/api.md, "Server
 * configuration"): bearer tokens of people, the cluster token of agents,
 * open endpoints, root tasks, liveness timeouts, the retry limit, the
 * scheduling batch window and policy, and the tenants file (quotas,
 * fair-share weights, priority classes: docs/simulator.md, "Tenants file"),
 * read with the simulator's parser so both mean the same.
 *
 * The file is YAML (or JSON, which is YAML), read with the shared libfyaml
 * reader of src/spec; values are typed as JSON (drv_yaml_node_json), so
 * both spellings mean the same. Bad input is reported as "file:line:col:
 * error: field.path: found X, expected Y", every error of the file, and
 * nothing of it is applied.
 * Without a file the server writes one with random tokens (mode 0600) on
 * first start and reads it on later starts.
 */
#include "server_int.h"

#include "drover/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libfyaml.h>

static int random_token(char *out, size_t n)
{
	unsigned char b[20];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return DRV_EIO;
	got = read(fd, b, sizeof(b));
	close(fd);
	if (got != (ssize_t)sizeof(b))
		return DRV_EIO;
	for (size_t i = 0; i < sizeof(b) && 2 * i + 2 < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

static int write_default(const char *path, const struct drv_server_opts *o, char *err,
			 size_t errsz)
{
	char admin[48], cluster[48];
	FILE *f;
	int fd;

	if (random_token(admin, sizeof(admin)) < 0 || random_token(cluster, sizeof(cluster)) < 0) {
		snprintf(err, errsz, "cannot read /dev/urandom for tokens");
		return DRV_EIO;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errsz, "cannot create %s: %s", path, strerror(errno));
		return DRV_EIO;
	}
	f = fdopen(fd, "w");
	fprintf(f,
		"# drover server config, written on first start. See docs/api.md.\n"
		"tokens:\n"
		"  - token: \"%s\"\n"
		"    user: \"%s\"\n"
		"    admin: true\n"
		"cluster_token: \"%s\"\n"
		"open_endpoints: true\n"
		"allow_root_tasks: %s\n"
		"heartbeat_interval_s: 5\n"
		"heartbeat_timeout_s: 30\n"
		"retry_limit: 3\n",
		admin, o->admin_user ? o->admin_user : "admin", cluster,
		o->allow_root_tasks ? "true" : "false");
	if (fflush(f) != 0 || fsync(fd) != 0) {
		snprintf(err, errsz, "cannot write %s: %s", path, strerror(errno));
		fclose(f);
		return DRV_EIO;
	}
	fclose(f);
	return 0;
}

/* ---- reading the file: every error at its node's line:col ---------------- */

struct cload {
	struct srv_config *c;
	struct drv_diags *d;
};

/* A value as the JSON reader typed it (drv_yaml_node_json): plain true,
 * false, null and numbers are typed, everything else is a string. */
static bool want_int(struct cload *L, struct fy_node_pair *p, const char *path, int64_t min,
		     int64_t max, int64_t *out)
{
	struct fy_node *n = fy_node_pair_value(p), *at = drv_yaml_pair_at(p);
	json_t *j = drv_yaml_node_json(n);
	bool ok = json_is_integer(j) && json_integer_value(j) >= min &&
		  json_integer_value(j) <= max;
	char f[80];

	if (ok) {
		*out = json_integer_value(j);
	} else {
		drv_yaml_found(n, f, sizeof(f));
		drv_yaml_err(L->d, at, path, "found %s, expected an integer from %lld to %lld", f,
			     (long long)min, (long long)max);
	}
	json_decref(j);
	return ok;
}

static bool want_bool(struct cload *L, struct fy_node_pair *p, const char *path, bool *out)
{
	struct fy_node *n = fy_node_pair_value(p), *at = drv_yaml_pair_at(p);
	json_t *j = drv_yaml_node_json(n);
	bool ok = json_is_boolean(j);
	char f[80];

	if (ok) {
		*out = json_is_true(j);
	} else {
		drv_yaml_found(n, f, sizeof(f));
		drv_yaml_err(L->d, at, path, "found %s, expected true or false", f);
	}
	json_decref(j);
	return ok;
}

/* A non-empty string; *out is replaced (freed first). */
static bool want_str(struct cload *L, struct fy_node_pair *p, const char *path, char **out)
{
	struct fy_node *n = fy_node_pair_value(p), *at = drv_yaml_pair_at(p);
	json_t *j = drv_yaml_node_json(n);
	bool ok = json_is_string(j) && json_string_length(j) > 0;
	char f[80];

	if (ok) {
		srv_set_str(out, json_string_value(j));
	} else {
		drv_yaml_found(n, f, sizeof(f));
		drv_yaml_err(L->d, at, path, "found %s, expected a non-empty string", f);
	}
	json_decref(j);
	return ok;
}

/* A list of absolute paths (host_path_allow); *out replaced. */
static bool want_paths(struct cload *L, struct fy_node_pair *p, const char *path, char ***out,
		       size_t *n)
{
	struct fy_node *at = drv_yaml_pair_at(p);
	json_t *j = drv_yaml_node_json(fy_node_pair_value(p)), *e;
	size_t i;
	bool ok = json_is_array(j);

	json_array_foreach(j, i, e)
		ok = ok && json_is_string(e) && json_string_value(e)[0] == '/';
	if (!ok) {
		drv_yaml_err(L->d, at, path, "found %s, expected a list of absolute paths (the "
			     "hostPath prefixes Pods may mount)", json_is_array(j) ? "an item that "
			     "is not an absolute path" : "no list");
		json_decref(j);
		return false;
	}
	for (i = 0; i < *n; i++)
		drv_free((*out)[i]);
	drv_free(*out);
	*n = json_array_size(j);
	*out = drv_calloc(*n + 1, sizeof(**out));
	json_array_foreach(j, i, e)
		(*out)[i] = drv_strdup(json_string_value(e));
	json_decref(j);
	return true;
}

/* The key's text, or NULL (reported) when it is not a scalar. */
static const char *key_of(struct cload *L, struct fy_node_pair *p, const char *base)
{
	struct fy_node *k = fy_node_pair_key(p);
	const char *s = k && fy_node_is_scalar(k) ? fy_node_get_scalar0(k) : NULL;
	char f[80];

	if (!s) {
		drv_yaml_found(k, f, sizeof(f));
		drv_yaml_err(L->d, k ? k : fy_node_pair_value(p), base,
			     "found %s as a key, expected a setting name", f);
	}
	return s;
}

static void unknown(struct cload *L, struct fy_node *k, const char *path, const char *what,
		    const char *list)
{
	drv_yaml_err(L->d, k, path, "found an unknown %s, expected one of: %s", what, list);
}

static void read_tokens(struct cload *L, struct fy_node_pair *tp)
{
	struct fy_node *v = fy_node_pair_value(tp);
	struct srv_config *c = L->c;
	void *it = NULL;
	struct fy_node *t;
	char f[80];
	int i = 0;

	if (!v || !fy_node_is_sequence(v)) {
		drv_yaml_found(v, f, sizeof(f));
		drv_yaml_err(L->d, drv_yaml_pair_at(tp), "tokens", "found %s, expected a list of {token, user, admin}",
			     f);
		return;
	}
	c->tokens = drv_calloc((size_t)fy_node_sequence_item_count(v) + 1, sizeof(*c->tokens));
	for (; (t = fy_node_sequence_iterate(v, &it)); i++) {
		struct token *tk = &c->tokens[c->ntokens];
		struct fy_node_pair *p;
		void *pit = NULL;
		char where[48], path[96];
		bool admin = false, ok = true;

		snprintf(where, sizeof(where), "tokens[%d]", i);
		if (!fy_node_is_mapping(t)) {
			drv_yaml_found(t, f, sizeof(f));
			drv_yaml_err(L->d, t, where, "found %s, expected a mapping {token, user, admin}",
				     f);
			continue;
		}
		while ((p = fy_node_mapping_iterate(t, &pit))) {
			const char *k = key_of(L, p, where);
			if (!k) {
				ok = false;
				continue;
			}
			snprintf(path, sizeof(path), "%s.%s", where, k);
			if (strcmp(k, "token") == 0)
				ok &= want_str(L, p, path, &tk->token);
			else if (strcmp(k, "user") == 0)
				ok &= want_str(L, p, path, &tk->user);
			else if (strcmp(k, "admin") == 0)
				ok &= want_bool(L, p, path, &admin);
			else {
				unknown(L, fy_node_pair_key(p), path, "field", "token, user, admin");
				ok = false;
			}
		}
		if (ok && (!tk->token || !tk->user)) {
			snprintf(path, sizeof(path), "%s.%s", where, !tk->token ? "token" : "user");
			drv_yaml_err(L->d, t, path, "found nothing, expected a non-empty string");
			ok = false;
		}
		tk->admin = admin;
		if (ok && tk->token && tk->user) {
			c->ntokens++;
		} else {
			drv_free(tk->token);
			drv_free(tk->user);
			memset(tk, 0, sizeof(*tk));
		}
	}
}

#define SCHEDULER_FIELDS                                                                     \
	"order, mode, pools, preemption, placement, placement_half_life, min_run_s, "        \
	"las_promote_s, fair_half_life_s"

/* LAS's minimum run when the file gives none: 12 h, as drover sim's
 * (docs/scheduling.md) */
#define SRV_LAS_MIN_RUN_S 43200

/* scheduler.min_run_s, las_promote_s and fair_half_life_s: seconds, 0 for
 * none. False when k is none of them. */
static bool read_sched_seconds(struct cload *L, struct fy_node_pair *p, const char *k,
			       const char *path, struct drv_sched_policy *pol, bool *min_run_set)
{
	int64_t *at, x;
	if (strcmp(k, "min_run_s") == 0)
		at = &pol->min_run_s;
	else if (strcmp(k, "las_promote_s") == 0)
		at = &pol->las_promote_s;
	else if (strcmp(k, "fair_half_life_s") == 0)
		at = &pol->fair_half_life_s;
	else
		return false;
	if (want_int(L, p, path, 0, INT64_C(10) * 365 * 86400, &x)) {
		*at = x;
		*min_run_set |= at == &pol->min_run_s;
	}
	return true;
}

static void read_scheduler(struct cload *L, struct fy_node_pair *sp)
{
	struct fy_node *v = fy_node_pair_value(sp);
	struct drv_sched_policy *pol = &L->c->policy;
	struct fy_node_pair *p;
	void *it = NULL;
	bool min_run_set = false;
	char f[80];

	if (!v || !fy_node_is_mapping(v)) {
		drv_yaml_found(v, f, sizeof(f));
		drv_yaml_err(L->d, drv_yaml_pair_at(sp), "scheduler",
			     "found %s, expected a mapping (" SCHEDULER_FIELDS ")", f);
		return;
	}
	while ((p = fy_node_mapping_iterate(v, &it))) {
		const char *k = key_of(L, p, "scheduler");
		struct fy_node *val = fy_node_pair_value(p);
		char path[64], *s = NULL;
		int rc = 0;

		if (!k)
			continue;
		snprintf(path, sizeof(path), "scheduler.%s", k);
		if (strcmp(k, "preemption") == 0) {
			bool pre = pol->preemption;
			if (want_bool(L, p, path, &pre))
				pol->preemption = pre;
			continue;
		}
		if (strcmp(k, "placement_half_life") == 0) {
			int64_t hl;
			if (want_int(L, p, path, 1, 1000000000, &hl))
				pol->mix_half_life = (int32_t)hl;
			continue;
		}
		if (read_sched_seconds(L, p, k, path, pol, &min_run_set))
			continue;
		if (strcmp(k, "order") && strcmp(k, "mode") && strcmp(k, "pools") &&
		    strcmp(k, "placement")) {
			unknown(L, fy_node_pair_key(p), path, "field", SCHEDULER_FIELDS);
			continue;
		}
		if (!want_str(L, p, path, &s))
			continue;
		if (strcmp(k, "order") == 0 && (rc = drv_sched_order_parse(s, &pol->order)) < 0)
			drv_yaml_err(L->d, val, path, "found '%s', expected fifo, sjf, las or fair", s);
		else if (strcmp(k, "mode") == 0 && (rc = drv_sched_mode_parse(s, &pol->mode)) < 0)
			drv_yaml_err(L->d, val, path, "found '%s', expected strict, backfill or greedy",
				     s);
		else if (strcmp(k, "pools") == 0 && (rc = drv_sched_pools_parse(s, &pol->pools)) < 0)
			drv_yaml_err(L->d, val, path, "found '%s', expected cheapest or fastest", s);
		else if (strcmp(k, "placement") == 0 &&
			 (rc = drv_place_strategy_parse(s, &pol->place)) < 0)
			drv_yaml_err(L->d, val, path, "found '%s', expected " DRV_PLACE_NAMES, s);
		drv_free(s);
	}
	/* LAS preempts by attained service: without a minimum run a job that
	 * has just started is the next victim (drover sim's default too) */
	if (pol->order == DRV_ORDER_LAS && !min_run_set)
		pol->min_run_s = SRV_LAS_MIN_RUN_S;
}

/* tls: {cert_file, key_file, ca_file}: files; cert and key go together. */
static void read_tls(struct cload *L, struct fy_node_pair *tp)
{
	struct fy_node *v = fy_node_pair_value(tp);
	struct srv_config *c = L->c;
	struct fy_node_pair *p;
	void *it = NULL;
	char f[80];

	if (!v || !fy_node_is_mapping(v)) {
		drv_yaml_found(v, f, sizeof(f));
		drv_yaml_err(L->d, drv_yaml_pair_at(tp), "tls",
			     "found %s, expected a mapping (cert_file, key_file, ca_file)", f);
		return;
	}
	while ((p = fy_node_mapping_iterate(v, &it))) {
		const char *k = key_of(L, p, "tls");
		char path[64];

		if (!k)
			continue;
		snprintf(path, sizeof(path), "tls.%s", k);
		if (strcmp(k, "cert_file") == 0)
			want_str(L, p, path, &c->tls_cert_file);
		else if (strcmp(k, "key_file") == 0)
			want_str(L, p, path, &c->tls_key_file);
		else if (strcmp(k, "ca_file") == 0)
			want_str(L, p, path, &c->tls_ca_file);
		else
			unknown(L, fy_node_pair_key(p), path, "field", "cert_file, key_file, ca_file");
	}
	if (!c->tls_cert_file != !c->tls_key_file)
		drv_yaml_err(L->d, drv_yaml_pair_at(tp), c->tls_cert_file ? "tls.key_file"
									 : "tls.cert_file",
			     "found nothing, expected a file (cert_file and key_file go together)");
}

/* A lease must outlast the exchanges that renew it: each may wait up to
 * heartbeat_interval_s at the controller, and the agent counts from when
 * it sent it. */
static void check_lease(struct cload *L, struct fy_node *at)
{
	const struct srv_config *c = L->c;
	char f[80];

	if (!at || c->agent_lease_s >= 2 * c->heartbeat_interval_s)
		return;
	drv_yaml_found(at, f, sizeof(f));
	drv_yaml_err(L->d, at, "agent_lease_s",
		     "found %s, expected at least twice heartbeat_interval_s (%lld)", f,
		     (long long)c->heartbeat_interval_s);
}

/* The store is SQLite (sqlite, or nothing: STATE_DIR/state.db) or a
 * PostgreSQL URL; a failover must end well inside the agents' lease, so a
 * takeover never outlives the tasks it should keep. */
static void check_store(struct cload *L, struct fy_node *store_at, struct fy_node *leader,
			struct fy_node *lease)
{
	const struct srv_config *c = L->c;
	char f[80];

	if (store_at && c->store && strcmp(c->store, "sqlite") && !drv_store_is_pg_url(c->store)) {
		drv_yaml_found(store_at, f, sizeof(f));
		drv_yaml_err(L->d, store_at, "store", "found %s, expected sqlite or a "
			     "postgres://USER@HOST:PORT/DB URL", f);
	}
	if ((leader || (lease && drv_store_is_pg_url(c->store))) &&
	    2 * c->leader_lease_s > c->agent_lease_s) {
		drv_yaml_found(leader ? leader : lease, f, sizeof(f));
		drv_yaml_err(L->d, leader ? leader : lease, leader ? "leader_lease_s" : "agent_lease_s",
			     leader ? "found %s, expected at most half of agent_lease_s (%lld): a "
			     "failover must end well inside the agents' lease"
			     : "found %s, expected at least twice leader_lease_s (%lld)", f,
			     (long long)(leader ? c->agent_lease_s : c->leader_lease_s));
	}
}

#define KNOWN_SETTINGS                                                                       \
	"tokens, cluster_token, open_endpoints, allow_root_tasks, heartbeat_interval_s, "    \
	"heartbeat_timeout_s, agent_lease_s, retry_limit, sched_delay_ms, default_pool, "    \
	"default_leaf, scheduler, tenants, tls, job_retention_s, "    \
	"task_output_max_bytes, max_unauthenticated_per_client, "                        \
	"max_user_connections_per_client, max_cluster_connections_per_client, idempotency_ttl_s, "    \
	"max_array_size, kill_invalid_depend, store, store_password_file, leader_lease_s, "    \
	"advertise_url, min_job_age_s, host_path_allow, cluster_name"

static void read_root(struct cload *L, struct fy_node *root)
{
	struct srv_config *c = L->c;
	struct fy_node *hb_timeout = NULL, *hb_interval = NULL, *lease = NULL;
	struct fy_node *leader = NULL, *store_at = NULL;
	struct fy_node_pair *p;
	void *it = NULL;
	char f[80];

	if (!fy_node_is_mapping(root)) {
		drv_yaml_found(root, f, sizeof(f));
		drv_yaml_err(L->d, root, NULL, "found %s, expected a mapping of settings", f);
		return;
	}
	while ((p = fy_node_mapping_iterate(root, &it))) {
		const char *k = key_of(L, p, NULL);
		struct fy_node *v = fy_node_pair_value(p);
		int64_t n;

		if (!k)
			continue;
		if (strcmp(k, "tokens") == 0) {
			read_tokens(L, p);
		} else if (strcmp(k, "cluster_token") == 0) {
			want_str(L, p, k, &c->cluster_token);
		} else if (strcmp(k, "open_endpoints") == 0) {
			want_bool(L, p, k, &c->open_endpoints);
		} else if (strcmp(k, "allow_root_tasks") == 0) {
			want_bool(L, p, k, &c->allow_root_tasks);
		} else if (strcmp(k, "heartbeat_interval_s") == 0) {
			if (want_int(L, p, k, 1, 3600, &c->heartbeat_interval_s))
				hb_interval = v;
		} else if (strcmp(k, "heartbeat_timeout_s") == 0) {
			if (want_int(L, p, k, 1, 86400, &c->heartbeat_timeout_s))
				hb_timeout = v;
		} else if (strcmp(k, "agent_lease_s") == 0) {
			if (want_int(L, p, k, 2, 86400, &c->agent_lease_s))
				lease = v;
		} else if (strcmp(k, "retry_limit") == 0) {
			if (want_int(L, p, k, 0, 1000, &n))
				c->retry_limit = (int32_t)n;
		} else if (strcmp(k, "task_output_max_bytes") == 0) {
			want_int(L, p, k, 0, INT64_C(1) << 50, &c->task_output_max_bytes);
		} else if (strcmp(k, "job_retention_s") == 0) {
			want_int(L, p, k, 1, INT64_C(100) * 365 * 86400, &c->job_retention_s);
		} else if (strcmp(k, "sched_delay_ms") == 0) {
			want_int(L, p, k, 0, 10000, &c->sched_delay_ms);
		} else if (strcmp(k, "default_pool") == 0) {
			want_str(L, p, k, &c->default_pool);
		} else if (strcmp(k, "default_leaf") == 0) {
			want_str(L, p, k, &c->default_leaf);
		} else if (strcmp(k, "cluster_name") == 0) {
			want_str(L, p, k, &c->cluster_name);
		} else if (strcmp(k, "scheduler") == 0) {
			read_scheduler(L, p);
		} else if (strcmp(k, "tenants") == 0) {
			want_str(L, p, k, &c->tenants_path);
		} else if (strcmp(k, "tls") == 0) {
			read_tls(L, p);
		} else if (strcmp(k, "max_unauthenticated_per_client") == 0) {
			want_int(L, p, k, 1, 1000000, &c->max_unauth_per_client);
		} else if (strcmp(k, "max_user_connections_per_client") == 0) {
			want_int(L, p, k, 1, 1000000, &c->max_user_conns_per_client);
		} else if (strcmp(k, "max_cluster_connections_per_client") == 0) {
			want_int(L, p, k, 1, 1000000, &c->max_cluster_conns_per_client);
		} else if (strcmp(k, "idempotency_ttl_s") == 0) {
			want_int(L, p, k, 1, INT64_C(100) * 365 * 86400, &c->idempotency_ttl_s);
		} else if (strcmp(k, "max_array_size") == 0) {
			want_int(L, p, k, 1, 4000001, &c->max_array_size);
		} else if (strcmp(k, "kill_invalid_depend") == 0) {
			want_bool(L, p, k, &c->kill_invalid_depend);
		} else if (strcmp(k, "store") == 0) {
			want_str(L, p, k, &c->store);
			store_at = v;
		} else if (strcmp(k, "store_password_file") == 0) {
			want_str(L, p, k, &c->store_password_file);
		} else if (strcmp(k, "leader_lease_s") == 0) {
			if (want_int(L, p, k, 1, 3600, &c->leader_lease_s))
				leader = v;
		} else if (strcmp(k, "advertise_url") == 0) {
			want_str(L, p, k, &c->advertise_url);
		} else if (strcmp(k, "min_job_age_s") == 0) {
			want_int(L, p, k, 0, INT64_C(100) * 365 * 86400, &c->min_job_age_s);
		} else if (strcmp(k, "host_path_allow") == 0) {
			want_paths(L, p, k, &c->host_path_allow, &c->nhost_path_allow);
		} else {
			unknown(L, fy_node_pair_key(p), k, "setting", KNOWN_SETTINGS);
		}
	}
	if ((hb_timeout || hb_interval) && c->heartbeat_timeout_s <= c->heartbeat_interval_s) {
		drv_yaml_found(hb_timeout ? hb_timeout : hb_interval, f, sizeof(f));
		if (hb_timeout)
			drv_yaml_err(L->d, hb_timeout, "heartbeat_timeout_s",
				     "found %s, expected more than heartbeat_interval_s (%lld)", f,
				     (long long)c->heartbeat_interval_s);
		else
			drv_yaml_err(L->d, hb_interval, "heartbeat_interval_s",
				     "found %s, expected less than heartbeat_timeout_s (%lld)", f,
				     (long long)c->heartbeat_timeout_s);
	}
	/* unset, the lease follows a long heartbeat interval up */
	if (!lease && c->agent_lease_s < 2 * c->heartbeat_interval_s)
		c->agent_lease_s = 2 * c->heartbeat_interval_s;
	check_lease(L, lease);
	check_store(L, store_at, leader, lease);
}

/* A relative path in the config (`tenants:`, `tls:`) names a file next to
 * the config file. */
static void resolve_path(char **path, const char *cfg_path)
{
	const char *slash = strrchr(cfg_path, '/');
	size_t dl, n;
	char *p;

	if (!*path || (*path)[0] == '/' || !slash)
		return;
	dl = (size_t)(slash - cfg_path) + 1;       /* with the slash */
	n = dl + strlen(*path) + 1;
	p = drv_malloc(n);
	memcpy(p, cfg_path, dl);
	memcpy(p + dl, *path, n - dl);
	drv_free(*path);
	*path = p;
}

/* Every diagnostic of d into err, one per line ("file:line:col: error:
 * path: message"), cut at errsz. */
static void diags_to_err(const struct drv_diags *d, char *err, size_t errsz)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		snprintf(err, errsz, "%s: not a valid config", d->file);
		return;
	}
	drv_diags_print(d, f);
	fclose(f);
	while (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	snprintf(err, errsz, "%s", buf);
	free(buf); /* open_memstream's buffer: malloc'd by libc */
}

/* Tokens in a file that group or others may read are refused, as a token
 * file is (CONTRACTS.md §6): every local user could call the API as an
 * admin or join fake agents. DRV_EINVAL (exit 2) with one line naming the
 * file, its mode and the fix. */
static int check_mode(const char *path, const struct srv_config *c, char *err, size_t errsz)
{
	struct stat st;

	if (!(c->ntokens || c->cluster_token) || stat(path, &st) != 0 || !(st.st_mode & 077))
		return 0;
	snprintf(err, errsz, "%s holds tokens and group or others may read it (mode %04o); "
		 "refusing to start: chmod 600 %s", path, (unsigned)(st.st_mode & 07777), path);
	return DRV_EINVAL;
}

int srv_config_load(struct drv_server *s, const char *path, const struct drv_server_opts *o,
		char *err, size_t errsz)
{
	struct srv_config *c = &s->cfg;
	struct fy_document *fyd = NULL;
	struct drv_diags d;
	struct cload L;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	memset(c, 0, sizeof(*c));
	c->open_endpoints = true;
	c->heartbeat_interval_s = 5;
	c->job_retention_s = 35 * 86400;   /* a month of accounting at hand, and then some */
	c->task_output_max_bytes = INT64_C(1) << 30;   /* a runaway print loop fills no disk */
	c->heartbeat_timeout_s = 30;
	c->agent_lease_s = 60;
	c->retry_limit = 3;
	c->sched_delay_ms = 10;
	c->max_unauth_per_client = DRV_HTTP_UNAUTH_PER_CLIENT;
	c->max_user_conns_per_client = DRV_HTTP_USER_PER_CLIENT;
	c->max_cluster_conns_per_client = DRV_HTTP_CLUSTER_PER_CLIENT;
	c->idempotency_ttl_s = 86400;   /* a day: longer than any client retries */
	c->max_array_size = 1001;       /* Slurm's MaxArraySize default */
	c->leader_lease_s = 10;         /* takeover within 15 s, well inside agent_lease_s */
	c->min_job_age_s = 300;         /* Slurm's MinJobAge default */
	drv_sched_policy_default(&c->policy);
	drv_diags_init(&d, path);

	if (access(path, F_OK) != 0) {
		if (o->config_file) {
			snprintf(err, errsz, "%s: %s", path, strerror(errno));
			rc = DRV_EINVAL;
			goto out;
		}
		rc = write_default(path, o, err, errsz);
		if (rc < 0)
			goto out;
		drv_log(&s->log, "wrote a new config with an admin token and a cluster token: %s", path);
	}
	rc = drv_file_read(path, 1 << 20, &buf, &len);
	if (rc < 0) {
		snprintf(err, errsz, "%s: %s", path, drv_strerror(rc));
		goto out;
	}
	/* the shared reader: the tab check libfyaml 0.7.12 needs, syntax errors
	 * with positions (spec.h) */
	rc = drv_yaml_load(buf, len, &d, &fyd);
	if (rc == 0 && fyd && fy_document_root(fyd)) {
		L.c = c;
		L.d = &d;
		read_root(&L, fy_document_root(fyd)); /* an empty file: all defaults */
	}
	if (rc == 0 && d.nerrors)
		rc = DRV_EINVAL;
	if (rc < 0) {
		diags_to_err(&d, err, errsz);
		srv_config_release(c); /* nothing half-applied */
		goto out;
	}
	if (c->tenants_path) {
		struct drv_diags td;

		resolve_path(&c->tenants_path, path);
		drv_diags_init(&td, c->tenants_path);
		rc = drv_tenants_load_file(c->tenants_path, &c->tenants, &td);
		if (rc == 0 && td.nerrors)
			rc = DRV_EINVAL;
		if (rc < 0) {
			diags_to_err(&td, err, errsz);
			drv_diags_release(&td);
			srv_config_release(c);
			rc = DRV_EINVAL; /* bad input, whatever the reason: exit 2 */
			goto out;
		}
		drv_diags_release(&td);
		drv_log(&s->log, "tenants from %s: %d tenants, %d priority classes", c->tenants_path,
			(int)c->tenants.ntenants, (int)c->tenants.nclasses);
	}
	resolve_path(&c->tls_cert_file, path);
	resolve_path(&c->tls_key_file, path);
	resolve_path(&c->tls_ca_file, path);
	resolve_path(&c->store_password_file, path);
	if (!c->default_pool)
		c->default_pool = drv_strdup("default");
	if (!c->default_leaf)
		c->default_leaf = drv_strdup("default");
	rc = check_mode(path, c, err, errsz);
	if (rc < 0) {
		srv_config_release(c);
		goto out;
	}
	if (!c->cluster_token)
		drv_log(&s->log, "warning: %s has no cluster_token; no agent can join", path);
	if (c->ntokens == 0)
		drv_log(&s->log, "warning: %s has no tokens; no user can call the API", path);
out:
	if (fyd)
		fy_document_destroy(fyd);
	drv_free(buf); /* after fyd: the document reads from it */
	drv_diags_release(&d);
	return rc;
}

void srv_config_release(struct srv_config *c)
{
	for (int i = 0; i < c->ntokens; i++) {
		drv_free(c->tokens[i].token);
		drv_free(c->tokens[i].user);
	}
	drv_free(c->tokens);
	drv_free(c->cluster_token);
	for (size_t i = 0; i < c->nhost_path_allow; i++)
		drv_free(c->host_path_allow[i]);
	drv_free(c->host_path_allow);
	c->host_path_allow = NULL;
	c->nhost_path_allow = 0;
	drv_free(c->default_pool);
	drv_free(c->cluster_name);
	drv_free(c->default_leaf);
	drv_free(c->tenants_path);
	drv_free(c->tls_cert_file);
	drv_free(c->tls_key_file);
	drv_free(c->tls_ca_file);
	drv_free(c->store);
	drv_free(c->store_password_file);
	drv_free(c->advertise_url);
	drv_tenants_release(&c->tenants);
	memset(c, 0, sizeof(*c));
}

const struct token *srv_config_find_token(const struct srv_config *c, const char *tok)
{
	const struct token *found = NULL;

	/* every token looked at, each in constant time: how long this takes
	 * says nothing about which token, or how much of one, was right */
	for (int i = 0; i < c->ntokens; i++)
		if (drv_http_token_eq(c->tokens[i].token, tok) && !found)
			found = &c->tokens[i];
	return found;
}
