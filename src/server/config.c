/*
 * config.c: the controller's config file (docs/api.md, "Server
 * configuration"): bearer tokens of people, the cluster token of agents,
 * open endpoints, root tasks, liveness timeouts, the retry limit, the
 * scheduling batch window and policy.
 *
 * The file is YAML (or JSON, which is YAML); libfyaml reads it and hands
 * it over as JSON to jansson, so both spellings go through one reader.
 * Without a file the server writes one with random tokens (mode 0600) on
 * first start and reads it on later starts.
 */
#include "internal.h"

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

static int bad(char *err, size_t errsz, const char *path, const char *key, const char *want)
{
	snprintf(err, errsz, "%s: %s: expected %s", path, key, want);
	return DRV_EINVAL;
}

static int get_int(json_t *root, const char *key, int64_t min, int64_t max, int64_t *out,
		   const char *path, char *err, size_t errsz)
{
	json_t *v = json_object_get(root, key);
	char want[96];

	if (!v)
		return 0;
	snprintf(want, sizeof(want), "an integer from %lld to %lld", (long long)min, (long long)max);
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return bad(err, errsz, path, key, want);
	*out = json_integer_value(v);
	return 0;
}

static int get_bool(json_t *root, const char *key, bool *out, const char *path, char *err,
		    size_t errsz)
{
	json_t *v = json_object_get(root, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return bad(err, errsz, path, key, "true or false");
	*out = json_is_true(v);
	return 0;
}

static int get_str(json_t *root, const char *key, char **out, const char *path, char *err,
		   size_t errsz)
{
	json_t *v = json_object_get(root, key);

	if (!v)
		return 0;
	if (!json_is_string(v) || json_string_length(v) == 0)
		return bad(err, errsz, path, key, "a non-empty string");
	srv_set_str(out, json_string_value(v));
	return 0;
}

static const char *const known_keys[] = {
	"tokens", "cluster_token", "open_endpoints", "allow_root_tasks", "heartbeat_interval_s",
	"heartbeat_timeout_s", "retry_limit", "sched_delay_ms", "default_pool", "default_leaf",
	"scheduler", NULL
};

static int parse(struct srv_config *c, json_t *root, const char *path, char *err, size_t errsz)
{
	const char *key;
	json_t *v;
	int rc;

	if (!json_is_object(root))
		return bad(err, errsz, path, "(top)", "a mapping of settings");
	json_object_foreach(root, key, v) {
		bool ok = false;

		for (int i = 0; known_keys[i]; i++)
			ok |= strcmp(known_keys[i], key) == 0;
		if (!ok) {
			snprintf(err, errsz, "%s: %s: unknown setting (known: tokens, cluster_token, "
				 "open_endpoints, allow_root_tasks, heartbeat_interval_s, "
				 "heartbeat_timeout_s, retry_limit, sched_delay_ms, default_pool, "
				 "default_leaf, scheduler)", path, key);
			return DRV_EINVAL;
		}
	}
	v = json_object_get(root, "tokens");
	if (v) {
		size_t i;
		json_t *t;

		if (!json_is_array(v))
			return bad(err, errsz, path, "tokens", "a list of {token, user, admin}");
		c->tokens = drv_calloc(json_array_size(v) + 1, sizeof(*c->tokens));
		json_array_foreach(v, i, t) {
			const char *tok = drv_json_str(t, "token"), *user = drv_json_str(t, "user");
			char where[64];

			snprintf(where, sizeof(where), "tokens[%zu]", i);
			if (!tok || !*tok || !user || !*user)
				return bad(err, errsz, path, where,
					   "token and user, both non-empty strings");
			c->tokens[c->ntokens].token = drv_strdup(tok);
			c->tokens[c->ntokens].user = drv_strdup(user);
			c->tokens[c->ntokens].admin = drv_json_bool(t, "admin", 0);
			c->ntokens++;
		}
	}
	if ((rc = get_str(root, "cluster_token", &c->cluster_token, path, err, errsz)) ||
	    (rc = get_bool(root, "open_endpoints", &c->open_endpoints, path, err, errsz)) ||
	    (rc = get_bool(root, "allow_root_tasks", &c->allow_root_tasks, path, err, errsz)) ||
	    (rc = get_int(root, "heartbeat_interval_s", 1, 3600, &c->heartbeat_interval_s, path,
			  err, errsz)) ||
	    (rc = get_int(root, "heartbeat_timeout_s", 1, 86400, &c->heartbeat_timeout_s, path,
			  err, errsz)) ||
	    (rc = get_int(root, "sched_delay_ms", 0, 10000, &c->sched_delay_ms, path, err,
			  errsz)) ||
	    (rc = get_str(root, "default_pool", &c->default_pool, path, err, errsz)) ||
	    (rc = get_str(root, "default_leaf", &c->default_leaf, path, err, errsz)))
		return rc;
	{
		int64_t rl = c->retry_limit;

		if ((rc = get_int(root, "retry_limit", 0, 1000, &rl, path, err, errsz)))
			return rc;
		c->retry_limit = (int32_t)rl;
	}
	v = json_object_get(root, "scheduler");
	if (v) {
		const char *s;
		bool pre = c->policy.preemption;

		if (!json_is_object(v))
			return bad(err, errsz, path, "scheduler", "a mapping (order, mode, preemption)");
		if ((s = drv_json_str(v, "order")) && drv_sched_order_parse(s, &c->policy.order) < 0)
			return bad(err, errsz, path, "scheduler.order", "fifo, sjf, las or fair");
		if ((s = drv_json_str(v, "mode")) && drv_sched_mode_parse(s, &c->policy.mode) < 0)
			return bad(err, errsz, path, "scheduler.mode", "strict, backfill or greedy");
		if ((s = drv_json_str(v, "pools")) && drv_sched_pools_parse(s, &c->policy.pools) < 0)
			return bad(err, errsz, path, "scheduler.pools", "cheapest or fastest");
		if ((rc = get_bool(v, "preemption", &pre, path, err, errsz)))
			return rc;
		c->policy.preemption = pre;
	}
	if (c->heartbeat_timeout_s <= c->heartbeat_interval_s)
		return bad(err, errsz, path, "heartbeat_timeout_s",
			   "more than heartbeat_interval_s");
	return 0;
}

int srv_config_load(struct drv_server *s, const char *path, const struct drv_server_opts *o,
		char *err, size_t errsz)
{
	struct srv_config *c = &s->cfg;
	struct fy_document *fyd = NULL;
	char *buf = NULL, gerr[256];
	size_t len = 0;
	json_t *root = NULL;
	int rc;

	memset(c, 0, sizeof(*c));
	c->open_endpoints = true;
	c->heartbeat_interval_s = 5;
	c->heartbeat_timeout_s = 30;
	c->retry_limit = 3;
	c->sched_delay_ms = 10;
	drv_sched_policy_default(&c->policy);

	if (access(path, F_OK) != 0) {
		if (o->config_file) {
			snprintf(err, errsz, "%s: %s", path, strerror(errno));
			return DRV_EINVAL;
		}
		rc = write_default(path, o, err, errsz);
		if (rc < 0)
			return rc;
		srv_log(s, "wrote a new config with an admin token and a cluster token: %s", path);
	}
	rc = drv_spec_read_file(path, 1 << 20, &buf, &len);
	if (rc < 0) {
		snprintf(err, errsz, "%s: %s", path, drv_strerror(rc));
		goto out;
	}
	/* libfyaml 0.7.12 crashes on some tabs: the shared check first (spec.h) */
	if (!drv_yaml_guard_err(buf, len, gerr, sizeof(gerr))) {
		snprintf(err, errsz, "%s:%s", path, gerr);
		rc = DRV_EPARSE;
		goto out;
	}
	fyd = fy_document_build_from_string(NULL, buf, len);
	if (!fyd) {
		snprintf(err, errsz, "%s: not valid YAML or JSON (or unreadable)", path);
		rc = DRV_EPARSE;
		goto out;
	}
	if (!fy_document_root(fyd)) {
		root = json_object();
	} else {
		/* not libfyaml's JSON emitter: it crashes on "key: |" at the end */
		root = drv_yaml_node_json(fy_document_root(fyd));
	}
	if (!root) {
		snprintf(err, errsz, "%s: cannot read it as a mapping of settings", path);
		rc = DRV_EPARSE;
		goto out;
	}
	rc = parse(c, root, path, err, errsz);
	if (rc < 0)
		goto out;
	if (!c->default_pool)
		c->default_pool = drv_strdup("default");
	if (!c->default_leaf)
		c->default_leaf = drv_strdup("default");
	if (!c->cluster_token)
		srv_log(s, "warning: %s has no cluster_token; no agent can join", path);
	if (c->ntokens == 0)
		srv_log(s, "warning: %s has no tokens; no user can call the API", path);
out:
	json_decref(root);
	if (fyd)
		fy_document_destroy(fyd);
	drv_free(buf); /* after fyd: the document reads from it */
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
	drv_free(c->default_pool);
	drv_free(c->default_leaf);
	memset(c, 0, sizeof(*c));
}

const struct token *srv_config_find_token(const struct srv_config *c, const char *tok)
{
	for (int i = 0; i < c->ntokens; i++)
		if (strcmp(c->tokens[i].token, tok) == 0)
			return &c->tokens[i];
	return NULL;
}
