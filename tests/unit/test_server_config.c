/*
 * test_server_config.c: the controller's config file (src/server/config.c,
 * docs/api.md "Server configuration") through drv_server_start, as
 * `drover server --config FILE` uses it: each mistake is reported as
 * "file:line:col: error: field.path: found X, expected Y" (all of them,
 * one per line), the result is DRV_EINVAL/DRV_EPARSE (exit 2), and
 * nothing is started: no state.db appears. Also the state directory's
 * lock (src/server/state_lock.c): a second start on a held one is refused.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drover/server.h"
#include "../../src/server/server_int.h" /* srv_config_load: what a start would apply */

static char dir[] = "/tmp/drv-srvcfg-XXXXXX";

static void setup(void)
{
	cr_assert(mkdtemp(dir) != NULL);
}

/* Writes text as DIR/c.yaml and starts a server on it; returns rc, err. */
static int start(const char *text, char *err, size_t errsz)
{
	char path[256], state[256];
	struct drv_server_opts o;
	struct drv_server *s = NULL;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/c.yaml", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	f = fopen(path, "w");
	cr_assert(f != NULL);
	fputs(text, f);
	fclose(f);
	chmod(path, 0600);   /* it may hold tokens */
	memset(&o, 0, sizeof(o));
	o.listen = "127.0.0.1:0";
	o.state_dir = state;
	o.config_file = path;
	o.log = stderr;
	err[0] = '\0';
	rc = drv_server_start(&o, &s, err, errsz);
	if (rc == 0)
		drv_server_stop(s);
	return rc;
}

/* err with "DIR/" taken out, so that messages compare exactly */
static const char *rel(char *err)
{
	char pre[64];
	size_t n = (size_t)snprintf(pre, sizeof(pre), "%s/", dir);
	char *p;

	while ((p = strstr(err, pre)))
		memmove(p, p + n, strlen(p + n) + 1);
	return err;
}

static bool state_db(void)
{
	char p[256];
	struct stat st;
	snprintf(p, sizeof(p), "%s/state/state.db", dir);
	return stat(p, &st) == 0;
}

static void teardown(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir); /* mkdtemp's name: no quotes in it */
	cr_assert(eq(int, system(cmd), 0));
}

TestSuite(server_config, .init = setup, .fini = teardown);

Test(server_config, token_admin_wrong_type)
{
	char err[1024];
	int rc = start("tokens:\n"
		       "  - token: a\n"
		       "    user: alice\n"
		       "  - token: b\n"
		       "    user: ops\n"
		       "    admin: yes please\n",
		       err, sizeof(err));

	cr_assert(eq(int, rc, DRV_EINVAL));
	cr_assert(eq(str, (char *)rel(err),
		     "c.yaml:6:12: error: tokens[1].admin: found 'yes please', expected true or false"));
	cr_assert(not(state_db()), "nothing is started on a bad config");
}

Test(server_config, unknown_setting_and_token_field)
{
	char err[1024];
	int rc = start("cluster_token: x\n"
		       "tokens:\n"
		       "  - {token: a, user: alice, group: x}\n"
		       "heartbeat_timeoutt_s: 9\n",
		       err, sizeof(err));

	cr_assert(eq(int, rc, DRV_EINVAL));
	/* the whole list of settings is the config reader's (and docs/api.md's,
	 * which server_config_errors.sh compares as a set): only its start and
	 * end are pinned here, so a new setting does not edit this test */
	{
		const char *e = rel(err), *l2 = strchr(e, '\n');

		static const char l1[] = "c.yaml:3:29: error: tokens[0].group: found an unknown "
					 "field, expected one of: token, user, admin\n";
		static const char p2[] = "c.yaml:4:1: error: heartbeat_timeoutt_s: found an unknown "
					 "setting, expected one of: tokens, cluster_token, ";

		cr_assert(l2 && strncmp(e, l1, sizeof(l1) - 1) == 0, "%s", e);
		cr_assert(strncmp(l2 + 1, p2, sizeof(p2) - 1) == 0, "%s", e);
		cr_assert(strstr(e, "idempotency_ttl_s") && !strchr(l2 + 1, '\n'), "%s", e);
	}
}

Test(server_config, tls_fields_are_checked)
{
	char err[1024];
	int rc = start("tls:\n"
		       "  cert_file: server.pem\n"
		       "  keyfile: server-key.pem\n",
		       err, sizeof(err));

	cr_assert(eq(int, rc, DRV_EINVAL));
	cr_assert(eq(str, (char *)rel(err),
		     "c.yaml:3:3: error: tls.keyfile: found an unknown field, expected one of: "
		     "cert_file, key_file, ca_file\n"
		     "c.yaml:2:3: error: tls.key_file: found nothing, expected a file (cert_file "
		     "and key_file go together)"));
}

Test(server_config, tls_files_must_be_usable)
{
	char err[1024];
	int rc = start("tls: {cert_file: server.pem, key_file: server-key.pem}\n", err,
		       sizeof(err));

	/* relative to the config file's folder, and named when unreadable */
	cr_assert(eq(int, rc, DRV_EINVAL));
	cr_assert(eq(str, (char *)rel(err), "TLS certificate: cannot read server.pem: No such file "
		     "or directory"), "%s", err);
}

Test(server_config, agent_lease_outlasts_two_heartbeat_intervals)
{
	char err[1024];
	int rc = start("heartbeat_interval_s: 5\nagent_lease_s: 9\n", err, sizeof(err));

	cr_assert(eq(int, rc, DRV_EINVAL));
	cr_assert(eq(str, (char *)rel(err), "c.yaml:2:16: error: agent_lease_s: found '9', expected "
		     "at least twice heartbeat_interval_s (5)"));
}

Test(server_config, integers_strings_and_missing_values)
{
	char err[1024];
	int rc = start("heartbeat_timeout_s: 30s\n"
		       "retry_limit: 1001\n"
		       "cluster_token:\n"
		       "tokens:\n"
		       "  - user: bob\n"
		       "scheduler: {mode: eager}\n",
		       err, sizeof(err));

	cr_assert(eq(int, rc, DRV_EINVAL));
	cr_assert(eq(str, (char *)rel(err),
		     "c.yaml:1:22: error: heartbeat_timeout_s: found '30s', expected an integer from "
		     "1 to 86400\n"
		     "c.yaml:2:14: error: retry_limit: found '1001', expected an integer from 0 to "
		     "1000\n"
		     "c.yaml:3:1: error: cluster_token: found nothing, expected a non-empty string\n"
		     "c.yaml:5:5: error: tokens[0].token: found nothing, expected a non-empty string\n"
		     "c.yaml:6:19: error: scheduler.mode: found 'eager', expected strict, backfill or "
		     "greedy"));
}

Test(server_config, heartbeats_and_top_level)
{
	char err[1024];

	cr_assert(eq(int, start("heartbeat_interval_s: 60\nheartbeat_timeout_s: 60\n", err,
				sizeof(err)),
		     DRV_EINVAL));
	cr_assert(eq(str, (char *)rel(err),
		     "c.yaml:2:22: error: heartbeat_timeout_s: found '60', expected more than "
		     "heartbeat_interval_s (60)"));
	cr_assert(eq(int, start("- tokens\n", err, sizeof(err)), DRV_EINVAL));
	cr_assert(eq(str, (char *)rel(err),
		     "c.yaml:1:3: error: found a list, expected a mapping of settings"));
	cr_assert(eq(int, start("tokens: [\n", err, sizeof(err)), DRV_EPARSE));
	cr_assert(eq(str, (char *)rel(err),
		     "c.yaml:2:1: error: YAML syntax: flow sequence without a closing bracket"));
}

Test(server_config, documented_example_starts)
{
	char err[1024];
	int rc = start("tokens:\n"
		       "  - token: \"alice-secret\"\n"
		       "    user: alice\n"
		       "  - token: \"ops-secret\"\n"
		       "    user: ops\n"
		       "    admin: true\n"
		       "cluster_token: \"agents-secret\"\n"
		       "open_endpoints: true\n"
		       "allow_root_tasks: false\n"
		       "heartbeat_interval_s: 5\n"
		       "heartbeat_timeout_s: 30\n"
		       "retry_limit: 3\n"
		       "sched_delay_ms: 10\n"
		       "default_pool: default\n"
		       "default_leaf: default\n"
		       "scheduler:\n"
		       "  order: fifo\n"
		       "  mode: backfill\n"
		       "  pools: cheapest\n"
		       "  preemption: false\n"
		       "  placement: multi\n"
		       "  placement_half_life: 500\n",
		       err, sizeof(err));

	cr_assert(eq(int, rc, 0), "%s", err);
	cr_assert(state_db());
}

Test(server_config, scheduler_placement_names_and_half_life)
{
	char err[1024];

	cr_assert(eq(int, start("scheduler: {placement: multi, placement_half_life: 50}\n", err,
				sizeof(err)),
		     0), "%s", err);
	cr_assert(eq(int, start("scheduler:\n  placement: worstfit\n  placement_half_life: 0\n"
				"  placment: fgd\n",
				err, sizeof(err)),
		     DRV_EINVAL));
	cr_assert(eq(str, (char *)rel(err),
		     "c.yaml:2:14: error: scheduler.placement: found 'worstfit', expected bestfit, "
		     "fgd or multi\n"
		     "c.yaml:3:24: error: scheduler.placement_half_life: found '0', expected an "
		     "integer from 1 to 1000000000\n"
		     "c.yaml:4:3: error: scheduler.placment: found an unknown field, expected one of: "
		     "order, mode, pools, preemption, placement, placement_half_life, min_run_s, "
		     "las_promote_s, fair_half_life_s"));
}

/* Loads text as DIR/c.yaml into a bare server's config (nothing started);
 * returns rc, and the scheduling policy it would apply in *pol. */
static int load_policy(const char *text, struct drv_sched_policy *pol, char *err, size_t errsz)
{
	struct drv_server_opts o;
	struct drv_server *s = calloc(1, sizeof(*s));
	char path[256];
	FILE *f;
	int rc;

	cr_assert(s != NULL);
	snprintf(path, sizeof(path), "%s/c.yaml", dir);
	f = fopen(path, "w");
	cr_assert(f != NULL);
	fputs(text, f);
	fclose(f);
	chmod(path, 0600);
	memset(&o, 0, sizeof(o));
	o.config_file = path;
	o.log = stderr;
	err[0] = '\0';
	rc = srv_config_load(s, path, &o, err, errsz);
	if (rc == 0) {
		*pol = s->cfg.policy;
		srv_config_release(&s->cfg);
	}
	free(s);
	return rc;
}

/* scheduler.min_run_s, las_promote_s and fair_half_life_s reach the policy;
 * las without min_run_s gets drover sim's 12 h, other orders none. */
Test(server_config, scheduler_seconds)
{
	struct drv_sched_policy pol;
	char err[1024];

	cr_assert(eq(int, load_policy("scheduler: {order: fair, min_run_s: 600, "
				      "las_promote_s: 7200, fair_half_life_s: 86400}\n",
				      &pol, err, sizeof(err)),
		     0), "%s", err);
	cr_assert(eq(i64, pol.min_run_s, 600));
	cr_assert(eq(i64, pol.las_promote_s, 7200));
	cr_assert(eq(i64, pol.fair_half_life_s, 86400));
	cr_assert(eq(int, load_policy("scheduler: {order: las}\n", &pol, err, sizeof(err)), 0),
		  "%s", err);
	cr_assert(eq(i64, pol.min_run_s, 43200));
	cr_assert(eq(int, load_policy("scheduler: {min_run_s: 0, order: las}\n", &pol, err,
				      sizeof(err)),
		     0), "%s", err);
	cr_assert(eq(i64, pol.min_run_s, 0));
	cr_assert(eq(int, load_policy("scheduler: {order: sjf}\n", &pol, err, sizeof(err)), 0),
		  "%s", err);
	cr_assert(eq(i64, pol.min_run_s, 0));
	cr_assert(eq(int, start("scheduler:\n  min_run_s: -1\n  fair_half_life_s: 1h\n", err,
				sizeof(err)),
		     DRV_EINVAL));
	cr_assert(eq(str, (char *)rel(err),
		     "c.yaml:2:14: error: scheduler.min_run_s: found '-1', expected an integer "
		     "from 0 to 315360000\n"
		     "c.yaml:3:21: error: scheduler.fair_half_life_s: found '1h', expected an "
		     "integer from 0 to 315360000"));
}

/* `tenants:` names a file next to the config; its errors carry its own
 * name, line and column; nothing starts. A good one starts the server. */
Test(server_config, tenants_file_relative_and_errors)
{
	char err[2048], p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/t.yaml", dir);
	f = fopen(p, "w");
	cr_assert(f != NULL);
	fputs("tenants:\n  team-a:\n    quota: lots\n    weight: 0\n", f);
	fclose(f);
	cr_assert(eq(int, start("tenants: t.yaml\n", err, sizeof(err)), DRV_EINVAL));
	cr_assert(strncmp(rel(err), "t.yaml:3:12: error: tenants.team-a.quota: found 'lots'", 53) == 0,
		  "%s", err);
	cr_assert(strstr(err, "\nt.yaml:4:13: error: tenants.team-a.weight:") != NULL, "%s", err);
	cr_assert(not(state_db()), "nothing is started on a bad tenants file");

	cr_assert(eq(int, start("tenants: none.yaml\n", err, sizeof(err)), DRV_EINVAL));
	cr_assert(strstr(rel(err), "none.yaml: error: cannot read") != NULL, "%s", err);
	cr_assert(not(state_db()));

	f = fopen(p, "w");
	cr_assert(f != NULL);
	fputs("priorityClasses:\n  prod: {value: 100}\n"
	      "tenants:\n  team-a: {quota: 8, priorityClass: prod}\n", f);
	fclose(f);
	cr_assert(eq(int, start("tenants: t.yaml\n", err, sizeof(err)), 0), "%s", err);
	cr_assert(state_db());
}

/* One controller per state directory: while one holds STATE/lock, a second
 * start on it (another open file, even in this process) is refused with
 * DRV_ESTATE naming the holder's pid and bound address, and starts once
 * the first has stopped. */
Test(server_config, state_dir_held)
{
	char err[1024], want[256], state[256], cfg[256];
	struct drv_server_opts o = { .listen = "127.0.0.1:0", .state_dir = state,
				     .config_file = cfg, .log = stderr };
	struct drv_server *first = NULL;

	cr_assert(eq(int, start("cluster_token: x\n", err, sizeof(err)), 0), "%s", err);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	cr_assert(eq(int, drv_server_start(&o, &first, err, sizeof(err)), 0), "%s", err);
	cr_assert(eq(int, start("cluster_token: x\n", err, sizeof(err)), DRV_ESTATE));
	snprintf(want, sizeof(want),
		 "state directory state is in use by pid %ld (listening on 127.0.0.1:%d)",
		 (long)getpid(), drv_server_port(first));
	cr_assert(eq(str, (char *)rel(err), want));
	drv_server_stop(first);
	cr_assert(eq(int, start("cluster_token: x\n", err, sizeof(err)), 0), "%s", err);
}

/* A config holding tokens that group or others may read (0644, 0640) is
 * refused with one line naming it, its mode and the fix, nothing started;
 * 0600 and 0400 start; a 0644 file without tokens is not a secret. */
Test(server_config, a_config_others_may_read_is_refused)
{
	char path[256], state[256], err[1024], want[700];
	struct drv_server_opts o;
	struct drv_server *s = NULL;
	const int modes[] = { 0644, 0640, 0604, 0600, 0400 };
	FILE *f;

	snprintf(path, sizeof(path), "%s/lax.yaml", dir);
	snprintf(state, sizeof(state), "%s/state-lax", dir);
	for (int k = 0; k < 6; k++) {
		int mode = k < 5 ? modes[k] : 0644;

		f = fopen(path, "w");
		cr_assert(f != NULL);
		fputs(k < 5 ? "tokens: [{token: t, user: u}]\n" : "sched_delay_ms: 5\n", f);
		fclose(f);
		chmod(path, (mode_t)mode);
		memset(&o, 0, sizeof(o));
		o.listen = "127.0.0.1:0";
		o.state_dir = state;
		o.config_file = path;
		o.log = stderr;
		err[0] = '\0';
		if (k < 3) {
			cr_assert(eq(int, drv_server_start(&o, &s, err, sizeof(err)), DRV_EINVAL));
			snprintf(want, sizeof(want), "%s holds tokens and group or others may read it "
				 "(mode %04o); refusing to start: chmod 600 %s", path, mode, path);
			cr_assert(eq(str, err, want));
			cr_assert(eq(ptr, s, NULL));
		} else {
			cr_assert(eq(int, drv_server_start(&o, &s, err, sizeof(err)), 0), "%o: %s",
				  mode, err);
			drv_server_stop(s);
		}
	}
}

Test(server_config, idempotency_ttl_is_checked)
{
	char err[1024];
	int rc = start("idempotency_ttl_s: 0\n", err, sizeof(err));

	cr_assert(eq(int, rc, DRV_EINVAL));
	cr_assert(ne(ptr, strstr(err, "c.yaml:1:20: error: idempotency_ttl_s: found '0', expected an integer from 1 to 3153600000"),
		     NULL), "%s", err);
}

/* srun --container-image names as pyxis users write them, as podman reads them */
Test(server_config, step_image_names_as_pyxis_writes_them)
{
	static const char *const cases[][2] = {
		{ "ubuntu:22.04", "docker.io/library/ubuntu:22.04" },
		{ "pytorch/pytorch:2.4", "docker.io/pytorch/pytorch:2.4" },
		{ "nvcr.io#nvidia/pytorch:24.01-py3", "nvcr.io/nvidia/pytorch:24.01-py3" },
		{ "alice@nvcr.io#nvidia/pytorch:24.01-py3", "nvcr.io/nvidia/pytorch:24.01-py3" },
		{ "docker://ubuntu", "docker.io/library/ubuntu" },
		{ "registry.local:5000/team/img:1", "registry.local:5000/team/img:1" },
		{ "localhost/steps:1", "localhost/steps:1" },
		{ "localhost#steps:1", "localhost/steps:1" },
	};
	static const char *const bad[] = { "/shared/images/pytorch.sqsh", "./img.sqsh", "", "a b",
					   "nvcr.io#", "#img", "a#b#c", "nvcr.io#x\nrm -rf /", "nvcr.io#x y",
					   "q\x7f", "nvcr.io#'x'" };
	const char *why;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = srv_step_image_name(cases[i][0], &why);

		cr_assert(not(eq(ptr, got, NULL)), "%s: %s", cases[i][0], why);
		cr_assert(eq(str, got, (char *)cases[i][1]), "%s", cases[i][0]);
		drv_free(got);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert(eq(ptr, srv_step_image_name(bad[i], &why), NULL), "%s", bad[i]);
		cr_assert(not(eq(ptr, (void *)why, NULL)));
	}
}
