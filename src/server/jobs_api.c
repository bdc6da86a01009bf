/*
 * jobs_api.c: the job routes of docs/api.md: submit (by Content-Type),
 * batch, apply, list, get, cancel, logs (relayed from the agent), queue.
 *
 * A submit parses outside the lock, then under it writes the job and its
 * first event in one store transaction; only when that committed is the
 * job handed to the scheduler and 201 sent. A store failure answers 503
 * and leaves no trace of the job.
 */
#include "server_int.h"

#include "drover/hostlist.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static struct caller *caller_of(struct drv_http_req *r)
{
	return drv_http_req_user(r);
}

/* --- parsing a submitted body ------------------------------------------- */

enum body_kind { BK_JSON, BK_YAML, BK_SLURM, BK_SNIFF, BK_BAD };

static enum body_kind kind_of(const char *ctype, char *clean, size_t n)
{
	size_t l;

	if (!ctype || !*ctype) {
		snprintf(clean, n, "(none)");
		return BK_SNIFF;
	}
	l = strcspn(ctype, ";");
	while (l > 0 && ctype[l - 1] == ' ')
		l--;
	snprintf(clean, n, "%.*s", (int)l, ctype);
	if (strcasecmp(clean, "application/json") == 0)
		return BK_JSON;
	if (strcasecmp(clean, "application/yaml") == 0 || strcasecmp(clean, "application/x-yaml") == 0 ||
	    strcasecmp(clean, "text/yaml") == 0 || strcasecmp(clean, "text/x-yaml") == 0)
		return BK_YAML;
	if (strcasecmp(clean, "text/x-slurm") == 0 || strcasecmp(clean, "text/x-shellscript") == 0 ||
	    strcasecmp(clean, "application/x-sh") == 0)
		return BK_SLURM;
	if (strcasecmp(clean, "text/plain") == 0 || strcasecmp(clean, "application/octet-stream") == 0)
		return BK_SNIFF;
	return BK_BAD;
}

static json_t *diag_lines(const struct drv_diags *d)
{
	json_t *a = json_array();
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char *line, *save = NULL;

	if (!f)
		return a;
	drv_diags_print(d, f);
	fclose(f);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		json_array_append_new(a, json_string(line));
	free(buf);
	return a;
}

/*
 * Parses one job from body into spec (initialised). Returns 0, or sets
 * resp (400/415) and returns -1.
 */
static int parse_job(const char *body, size_t len, const char *ctype, const char *fname,
		     struct drv_jobspec *spec, struct drv_http_resp *resp)
{
	char clean[96];
	enum body_kind k = kind_of(ctype, clean, sizeof(clean));
	enum drv_spec_format f;
	struct drv_diags d;
	int rc;

	if (k == BK_BAD) {
		drv_http_resp_error(resp, 415, "unsupported_media_type", NULL,
				    "Content-Type %s: expected application/json (drover job), "
				    "application/yaml (Kubernetes manifest) or text/x-slurm "
				    "(Slurm batch script)", clean);
		return -1;
	}
	if (len == 0) {
		drv_http_resp_error(resp, 400, "invalid", NULL, "%s: empty body, expected a job",
				    fname);
		return -1;
	}
	f = drv_spec_sniff(body, len);
	if ((k == BK_SLURM && f != DRV_FMT_SBATCH) ||
	    ((k == BK_YAML || k == BK_JSON) && f != DRV_FMT_MANIFEST && f != DRV_FMT_CANONICAL)) {
		drv_http_resp_error(resp, 400, "invalid", NULL,
				    "%s: Content-Type %s, but the body reads as %s", fname, clean,
				    f == DRV_FMT_UNKNOWN ? "no job format drover knows"
							 : drv_spec_format_name(f));
		return -1;
	}
	drv_diags_init(&d, fname);
	if (f == DRV_FMT_CANONICAL && k == BK_JSON) {
		json_error_t je;
		json_t *j = json_loadb(body, len, 0, &je);

		if (!j) {
			drv_http_resp_error(resp, 400, "invalid", NULL, "%s:%d:%d: %s", fname, je.line,
					    je.column, je.text);
			drv_diags_release(&d);
			return -1;
		}
		rc = drv_jobspec_from_json(j, spec, &d);
		json_decref(j);
	} else {
		rc = drv_spec_parse_buffer(body, len, fname, spec, &d);
	}
	if (rc < 0 || d.nerrors > 0) {
		drv_http_resp_error(resp, 400, "invalid", diag_lines(&d), "%s: %d error%s in the job",
				    fname, d.nerrors ? d.nerrors : 1, d.nerrors == 1 ? "" : "s");
		drv_diags_release(&d);
		return -1;
	}
	drv_diags_release(&d);
	if (spec->format == DRV_FMT_SBATCH && !spec->slurm.submit_dir &&
	    (spec->slurm.output || spec->slurm.error || spec->slurm.open_mode))
		drv_jobspec_warn(spec, "#SBATCH --output/--error/--open-mode: not acted on: the "
				 "client did not say where the job was submitted (the sbatch command "
				 "does; drover submit keeps the output in drover logs)");
	if (drv_job_tasks(&spec->job) <= 0) {
		drv_http_resp_error(resp, 400, "invalid", NULL, "%s: the job has no tasks", fname);
		return -1;
	}
	return 0;
}

static int container_refused(struct drv_server *s, bool admin, const char *user,
			     const struct drv_jobspec *spec, struct drv_http_resp *resp);

/*
 * What the tenants file lets a plain user set (admins set anything): the
 * tenant (its users: list), the class (its allowedClasses) and the priority
 * (at most their highest value). 0 or sets resp (403) and returns -1.
 */
static int authorize(struct drv_server *s, const char *user, const struct drv_jobspec *spec,
		     struct drv_http_resp *resp)
{
	const struct drv_tenants *t = &s->cfg.tenants;
	const struct drv_tenant_conf *tc = drv_tenants_tenant(t, spec->job.tenant);
	const char *cls = spec->priority_class;
	int32_t cap = drv_tenant_priority_cap(t, tc);

	if (!drv_tenant_user_ok(tc, user)) {
		drv_http_resp_error(resp, 403, "forbidden", NULL,
				    "tenant: user %s may not use tenant %s (tenants file: users)", user,
				    spec->job.tenant);
		return -1;
	}
	if (cls && *cls && drv_tenants_class(t, cls) && !drv_tenant_class_ok(tc, cls)) {
		drv_http_resp_error(resp, 403, "forbidden", NULL,
				    "priorityClassName: user %s may not use class %s in tenant %s "
				    "(tenants file: allowedClasses)", user, cls, spec->job.tenant);
		return -1;
	}
	if (spec->job.priority > cap) {
		drv_http_resp_error(resp, 403, "forbidden", NULL,
				    "priority: user %s may set at most %d in tenant %s, found %d "
				    "(tenants file: allowedClasses)", user, cap, spec->job.tenant,
				    spec->job.priority);
		return -1;
	}
	return 0;
}

/* Owner and defaults; 0 or sets resp (403) and returns -1. */
static int own_job(struct drv_server *s, struct caller *c, struct drv_jobspec *spec,
		   struct drv_http_resp *resp)
{
	const char *user = c->user;

	for (int32_t g = 0; g < spec->job.ngroups && spec->run; g++) {
		if (!spec->run[g].gpu_model_name)
			continue;
		/* an agent reports only models of the catalog (docs/agent.md) */
		drv_http_resp_error(resp, 400, "invalid", NULL,
				    "needs GPU model %s; no node of the cluster has it (it is not "
				    "in drover's GPU catalog, so no agent registers one)",
				    spec->run[g].gpu_model_name);
		return -1;
	}
	if (spec->job.name && strlen(spec->job.name) > DRV_SPEC_MAX_NAME) {
		/* every row of a listing carries it; canonical jobs come here
		 * unchecked (a restore must still read an older long name) */
		drv_http_resp_error(resp, 400, "invalid", NULL,
				    "name: found a job name of %zu bytes, expected at most %d",
				    strlen(spec->job.name), DRV_SPEC_MAX_NAME);
		return -1;
	}
	if (spec->array.spec && drv_array_max(&spec->array) >= s->cfg.max_array_size) {
		/* Slurm's MaxArraySize: task ids from 0 to max_array_size - 1 */
		drv_http_resp_error(resp, 400, "invalid", NULL,
				    "Invalid job array specification: --array=%s has task id %d; "
				    "ids must be below max_array_size %lld", spec->array.spec,
				    drv_array_max(&spec->array), (long long)s->cfg.max_array_size);
		return -1;
	}
	if (c->admin && spec->job.user && *spec->job.user)
		user = spec->job.user;  /* admins may submit for someone */
	if (strcmp(user, "root") == 0 && !s->cfg.allow_root_tasks) {
		drv_http_resp_error(resp, 403, "forbidden", NULL,
				    "jobs of user root are refused: tasks would run as root "
				    "(set allow_root_tasks: true in the server config to allow it)");
		return -1;
	}
	if (container_refused(s, c->admin, user, spec, resp) < 0)
		return -1;
	{
		char *u = drv_strdup(user);

		drv_free(spec->job.user);
		spec->job.user = u;
	}
	if (!spec->job.tenant || !*spec->job.tenant)
		srv_set_str(&spec->job.tenant, spec->queue && *spec->queue ? spec->queue : "default");
	if (!spec->job.name || !*spec->job.name)
		srv_set_str(&spec->job.name, "job");
	return c->admin ? 0 : authorize(s, user, spec, resp);
}

/* Whether path is dir or below it. */
bool srv_path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/' || n == 1);
}

/*
 * securityContext.runAsUser/runAsGroup: uid 0 only with allow_root_tasks;
 * another uid or gid than the user's own (as this host's passwd has them)
 * only for admins. 403 naming the field otherwise.
 */
static int run_as_refused(struct drv_server *s, bool admin, const char *user,
			  const struct drv_task_run *r, struct drv_http_resp *resp)
{
	struct passwd pw, *pwp = NULL;
	char buf[4096];

	if (r->run_as_user < 0 && r->run_as_group < 0)
		return 0;
	if (r->run_as_user == 0 && !s->cfg.allow_root_tasks) {
		drv_http_resp_error(resp, 403, "forbidden", NULL,
				    "securityContext.runAsUser: 0 would run the task as root "
				    "(set allow_root_tasks: true in the server config to allow it)");
		return -1;
	}
	if (admin)
		return 0;
	if (getpwnam_r(user, &pw, buf, sizeof(buf), &pwp) != 0)
		pwp = NULL;
	if (r->run_as_user >= 0 && (!pwp || (int64_t)pwp->pw_uid != r->run_as_user)) {
		drv_http_resp_error(resp, 403, "forbidden", NULL,
				    "securityContext.runAsUser: %lld is not the uid of user %s "
				    "(%s); running as another uid needs the admin role",
				    (long long)r->run_as_user, user, pwp ? "see id(1)" :
				    "who has no uid on the controller");
		return -1;
	}
	if (r->run_as_group >= 0 && (!pwp || (int64_t)pwp->pw_gid != r->run_as_group)) {
		drv_http_resp_error(resp, 403, "forbidden", NULL,
				    "securityContext.runAsGroup: %lld is not the primary gid of "
				    "user %s; running as another gid needs the admin role",
				    (long long)r->run_as_group, user);
		return -1;
	}
	return 0;
}

/*
 * Containers do not widen what a user may do (docs/agent.md, "Runtimes"):
 * a hostPath must be under one of host_path_allow's prefixes (none by
 * default), and read-only unless the caller is an admin. 403 naming the
 * field otherwise.
 */
static int container_refused(struct drv_server *s, bool admin, const char *user,
			     const struct drv_jobspec *spec, struct drv_http_resp *resp)
{
	for (int32_t g = 0; spec->run && g < spec->job.ngroups; g++) {
		const struct drv_task_run *r = &spec->run[g];

		if (run_as_refused(s, admin, user, r, resp) < 0)
			return -1;

		for (int32_t k = 0; k < r->nmounts; k++) {
			const struct drv_mount *m = &r->mounts[k];
			bool ok = false;

			if (strcmp(m->type, "hostPath") || !m->host_path)
				continue;
			if (strstr(m->host_path, "/..") || (m->sub_path && strstr(m->sub_path, ".."))) {
				ok = false;
			} else {
				for (size_t i = 0; i < s->cfg.nhost_path_allow && !ok; i++)
					ok = srv_path_under(m->host_path, s->cfg.host_path_allow[i]);
			}
			if (!ok) {
				drv_http_resp_error(resp, 403, "forbidden", NULL,
						    "volumes[%s].hostPath.path: %s is not under the "
						    "server's host_path_allow (%s)", m->name,
						    m->host_path, s->cfg.nhost_path_allow ? "see "
						    "GET /v1/config" : "none allowed");
				return -1;
			}
			if (!m->read_only && !admin) {
				drv_http_resp_error(resp, 403, "forbidden", NULL,
						    "volumeMounts[%s].readOnly: a hostPath is mounted "
						    "read-only for users who are not admins; set "
						    "readOnly: true", m->name);
				return -1;
			}
		}
	}
	return 0;
}

static void set_reason(struct srv_job *j, const char *why)
{
	srv_set_str(&j->reason, why);
}

static struct srv_job *job_from_spec(struct drv_jobspec *spec)
{
	struct srv_job *j = drv_calloc(1, sizeof(*j));

	j->spec = *spec;                 /* moved */
	drv_jobspec_init(spec);
	j->events = json_array();
	return j;
}

/*
 * Queues the new jobs (ids assigned here) for the disk and returns the
 * ticket to answer after; the committer adds them to memory once written
 * (srv_jobs_adopt), or frees them if the write fails (their ids are not
 * reused). Under s->mu; the jobs are taken.
 */
static uint64_t add_jobs(struct drv_server *s, struct srv_job **js, size_t n, const char *by)
{
	int64_t now = drv_wall_s();
	char why[160];

	snprintf(why, sizeof(why), "submitted by %s", by);
	for (size_t i = 0; i < n; i++) {
		struct srv_job *j = js[i];

		j->id = ++s->next_id;
		j->spec.job.id = j->id;
		j->spec.job.submit_time = now;
		j->submit_time = now;
		j->canon = drv_jobspec_to_json(&j->spec);
		j->state = J_PENDING;
		set_reason(j, why);
		if (j->spec.slurm.begin && !j->par &&
		    drv_slurm_begin_parse(j->spec.slurm.begin, now, &j->begin_time) == 0 &&
		    j->begin_time <= now)
			j->begin_time = 0;   /* --begin in the past: at once, as Slurm */
		if (j->spec.slurm.hold && !j->spec.array.spec) {   /* sbatch -H; an array's elements */
			char hw[256];

			j->hold = SRV_HOLD_USER;
			snprintf(hw, sizeof(hw), "held: submitted with --hold by %s; "
				 "POST /v1/jobs/%llu/release (scontrol release) lets it run", by,
				 (unsigned long long)j->id);
			set_reason(j, hw);
		}
		srv_elements_added(s, j);
		json_array_append_new(j->events,
				      json_pack("{s:I,s:n,s:s,s:s}", "time", (json_int_t)now, "from",
						"to", "pending", "reason", why));
	}
	return srv_commit_new_jobs(s, js, n);
}

/*
 * A job that can never run on the cluster as configured is refused: 400
 * with the reason as message; so is one that depends on a job that does
 * not exist. Under s->mu; true when refused.
 */
static bool refuse_never(struct drv_server *s, const struct drv_jobspec *spec,
			 struct drv_http_resp *o)
{
	const struct drv_job *job = &spec->job;
	char why[256];

	if (srv_deps_refuse(s, spec, why, sizeof(why)) < 0 ||
	    srv_partition_refuse(s, spec, why, sizeof(why)) < 0) {
		drv_http_resp_error(o, 400, "invalid", NULL, "%s", why);
		return true;
	}

	if (job->topo_level && strchr(job->topo_level, '/') &&
	    drv_cluster_level(&s->cluster, job->topo_level) < 0) {
		/* a Kueue topology label only the cluster file can map to a level */
		drv_http_resp_error(o, 400, "invalid", NULL, "topology label %s names no level of "
				    "the cluster (a cluster file maps labels to levels in levelLabels)",
				    job->topo_level);
		return true;
	}
	srv_capacity_refresh(s);
	if (!srv_job_never(s, job, why, sizeof(why)))
		return false;
	/* its own code: sbatch says "Requested node configuration is not available" */
	drv_http_resp_error(o, 400, "unsatisfiable", NULL, "%s", why);
	return true;
}

/* The same for a batch: each such job named in the details. */
static bool refuse_never_batch(struct drv_server *s, struct srv_job **js, size_t n,
			       struct drv_http_resp *o)
{
	json_t *details = json_array();
	char why[256];

	srv_capacity_refresh(s);
	for (size_t i = 0; i < n; i++)
		if (srv_deps_refuse(s, &js[i]->spec, why, sizeof(why)) < 0 ||
		    srv_partition_refuse(s, &js[i]->spec, why, sizeof(why)) < 0 ||
		    srv_job_never(s, &js[i]->spec.job, why, sizeof(why)))
			json_array_append_new(details, json_sprintf("items[%zu]: %s", i, why));
	if (!json_array_size(details)) {
		json_decref(details);
		return false;
	}
	drv_http_resp_error(o, 400, "invalid", details,
			    "batch: %zu job%s can never run on this cluster, none accepted",
			    json_array_size(details), json_array_size(details) == 1 ? "" : "s");
	return true;
}

/*
 * POST /v1/jobs?dry_run=1: the job checked and refused as a submit would
 * (400 unsatisfiable for one that can never run), then placed on the
 * cluster as it is now without changing it; nothing stored, no id taken.
 * The reply is the job as it would be (id: the next id), with "dry_run":
 * true, "fits_now", and where and when it would start: "start_time" (now
 * when it fits; else when every running job's time limit has passed, null
 * when one has none), "placement_nodes" (the node names, when it fits
 * now) and "nodelist" compressed. sbatch --test-only prints this.
 * Under s->mu.
 */
static void dry_run(struct drv_server *s, struct srv_job *j, struct drv_http_resp *o)
{
	struct drv_placement pl;
	char why[256], names[4096] = "";
	const char *ns[512];
	size_t nn = 0, k = 0;
	int64_t now = drv_wall_s(), latest = now;
	bool fits, unbounded = false;
	json_t *out, *nodes = json_array();

	drv_placement_init(&pl);
	fits = drv_place(&s->cluster, &j->spec.job, NULL, &pl, why, sizeof(why)) == 0;
	for (int32_t i = 0; fits && i < pl.ntasks && nn < DRV_ARRAY_SIZE(ns); i++) {
		const char *n = s->nodes[pl.tasks[i].node].name;
		bool seen = false;

		for (size_t m = 0; m < nn; m++)
			seen |= !strcmp(ns[m], n);
		if (!seen) {
			ns[nn++] = n;
			json_array_append_new(nodes, json_string(n));
		}
	}
	if (nn)
		drv_hostlist_compress(ns, nn, names, sizeof(names));
	for (k = 0; !fits && k < s->nactive; k++) {
		struct srv_job *a = srv_job_get(s, s->active[k]);

		if (!a || !a->start_time)
			continue;
		if (a->spec.job.time_limit <= 0)
			unbounded = true;
		else if (a->start_time + a->spec.job.time_limit > latest)
			latest = a->start_time + a->spec.job.time_limit;
	}
	j->id = s->next_id + 1;
	j->spec.job.id = j->id;
	j->submit_time = now;
	j->state = J_PENDING;
	out = srv_job_api_json(s, j, false);
	json_object_set_new(out, "dry_run", json_true());
	json_object_set_new(out, "fits_now", json_boolean(fits));
	json_object_set_new(out, "start_time", fits || !unbounded ? srv_json_time(fits ? now : latest)
								  : json_null());
	json_object_set_new(out, "placement_nodes", nodes);
	json_object_set_new(out, "nodelist", json_string(names));
	if (!fits)
		json_object_set_new(out, "reason", json_string(why));
	drv_placement_release(&pl);
	drv_http_resp_json(o, 200, out);
}

static bool want_dry_run(struct drv_http_req *r)
{
	const char *v = drv_http_req_query(r, "dry_run");

	return v && (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "All"));
}

static void submit(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
		   struct srv_idem_req *iq)
{
	struct caller *c = caller_of(r);
	struct drv_jobspec spec;
	const char *fname = drv_http_req_query(r, "filename");
	size_t len;
	const char *body = drv_http_req_body(r, &len);
	struct srv_job *j, **js = NULL;
	char loc[64];
	uint64_t ticket;
	size_t n;

	drv_jobspec_init(&spec);
	if (parse_job(body, len, drv_http_req_header(r, "Content-Type"), fname ? fname : "job",
		      &spec, o) < 0 ||
	    own_job(s, c, &spec, o) < 0) {
		drv_jobspec_release(&spec);
		return;
	}
	/* a batch/v1 Job: the parent, then its elements (elements.c) */
	n = srv_elements_expand(s, &spec, &js);
	if (!n) {
		js = drv_calloc(1, sizeof(*js));
		js[0] = job_from_spec(&spec);
		n = 1;
	}
	j = js[0];
	pthread_mutex_lock(&s->mu);
	if (refuse_never(s, &j->spec, o)) {
		pthread_mutex_unlock(&s->mu);
		for (size_t i = 0; i < n; i++)
			srv_job_free(js[i]);
		drv_free(js);
		return;
	}
	if (want_dry_run(r)) {
		dry_run(s, j, o);
		pthread_mutex_unlock(&s->mu);
		for (size_t i = 0; i < n; i++)
			srv_job_free(js[i]);
		drv_free(js);
		return;
	}
	ticket = add_jobs(s, js, n, c->user);
	drv_free(js);
	/* the reply as it will be once the job is on disk (it is not in memory
	 * yet, so nothing else changes it meanwhile) */
	drv_http_resp_json(o, 201, srv_job_api_json(s, j, false));
	snprintf(loc, sizeof(loc), "/v1/jobs/%llu", (unsigned long long)j->id);
	drv_http_resp_header(o, "Location", loc);
	ticket = srv_idem_end(s, iq, o, ticket);
	srv_reply_when_durable(s, r, ticket, "the job was not accepted: ");
	pthread_mutex_unlock(&s->mu);
}

int srv_api_submit(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct srv_idem_req iq;

	if (srv_idem_begin(s, r, o, "POST /v1/jobs", &iq))
		return 0;
	submit(s, r, o, &iq);
	srv_idem_cancel(s, &iq);
	return 0;
}

static void batch(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
		  struct srv_idem_req *iq)
{
	struct caller *c = caller_of(r);
	json_t *body = drv_http_req_json(r, o), *items, *it, *out;
	struct srv_job **js = NULL;
	json_t *details = json_array();
	size_t n = 0, i;
	uint64_t ticket;

	if (!body)
		goto done;
	items = json_object_get(body, "items");
	if (!json_is_array(items)) {
		drv_http_resp_error(o, 400, "invalid", NULL,
				    "batch: expected {\"items\": [job, ...]} of canonical jobs");
		goto done;
	}
	if (json_array_size(items) > 10000) {
		drv_http_resp_error(o, 413, "too_large", NULL,
				    "batch: %zu jobs, at most 10000 in one batch",
				    json_array_size(items));
		goto done;
	}
	js = drv_calloc(json_array_size(items) + 1, sizeof(*js));
	json_array_foreach(items, i, it) {
		struct drv_jobspec spec;
		struct drv_diags d;
		char name[48];

		snprintf(name, sizeof(name), "items[%zu]", i);
		drv_jobspec_init(&spec);
		drv_diags_init(&d, name);
		if (drv_jobspec_from_json(it, &spec, &d) < 0 || d.nerrors ||
		    drv_job_tasks(&spec.job) <= 0) {
			json_t *lines = diag_lines(&d);
			size_t k;
			json_t *l;

			if (json_array_size(lines) == 0)
				json_array_append_new(details, json_sprintf("%s: the job has no tasks", name));
			json_array_foreach(lines, k, l)
				json_array_append(details, l);
			json_decref(lines);
			drv_diags_release(&d);
			drv_jobspec_release(&spec);
			continue;
		}
		drv_diags_release(&d);
		if (own_job(s, c, &spec, o) < 0) {
			drv_jobspec_release(&spec);
			goto done;
		}
		{
			struct srv_job **ev = NULL;
			size_t ne = srv_elements_expand(s, &spec, &ev);

			if (ne) {   /* the parent and its elements, in their order */
				js = drv_realloc(js, (json_array_size(items) + n + ne + 1) *
							     sizeof(*js));
				memcpy(&js[n], ev, ne * sizeof(*js));
				n += ne;
				drv_free(ev);
				continue;
			}
		}
		js[n++] = job_from_spec(&spec);
	}
	if (json_array_size(details)) {
		drv_http_resp_error(o, 400, "invalid", details, "batch: %zu invalid job%s, none accepted",
				    json_array_size(details), json_array_size(details) == 1 ? "" : "s");
		details = NULL;
		goto done;
	}
	pthread_mutex_lock(&s->mu);
	if (refuse_never_batch(s, js, n, o)) {
		pthread_mutex_unlock(&s->mu);
		goto done;
	}
	ticket = n ? add_jobs(s, js, n, c->user) : 0;   /* 0: nothing to wait for */
	out = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(out, json_pack("{s:I,s:s,s:s}", "id", (json_int_t)js[i]->id,
						     "name", js[i]->spec.job.name, "state",
						     srv_jstate_name(js[i]->state)));
	drv_http_resp_json(o, 201, json_pack("{s:o}", "items", out));
	ticket = srv_idem_end(s, iq, o, ticket);
	srv_reply_when_durable(s, r, ticket, "no job was accepted: ");
	n = 0;  /* owned by the server now */
	pthread_mutex_unlock(&s->mu);
done:
	for (i = 0; i < n; i++)
		srv_job_free(js[i]);
	drv_free(js);
	json_decref(details);
	json_decref(body);
}

int srv_api_batch(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct srv_idem_req iq;

	if (srv_idem_begin(s, r, o, "POST /v1/jobs/batch", &iq))
		return 0;
	batch(s, r, o, &iq);
	srv_idem_cancel(s, &iq);
	return 0;
}

/* Canonical text of a spec without its user and id, to compare specs. */
static char *spec_key(const json_t *canon)
{
	json_t *c = json_deep_copy(canon);
	char *s;

	json_object_del(c, "user");
	json_object_del(c, "id");
	s = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(c);
	return s;
}

static void apply(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
		  struct srv_idem_req *iq)
{
	struct caller *c = caller_of(r);
	struct drv_jobspec spec;
	const char *fname = drv_http_req_query(r, "filename");
	size_t len;
	const char *body = drv_http_req_body(r, &len);
	struct srv_job *found = NULL, *j;
	int nfound = 0;
	uint64_t ticket;
	json_t *canon;
	char *k1 = NULL, *k2 = NULL;

	drv_jobspec_init(&spec);
	if (parse_job(body, len, drv_http_req_header(r, "Content-Type"), fname ? fname : "job",
		      &spec, o) < 0 ||
	    own_job(s, c, &spec, o) < 0) {
		drv_jobspec_release(&spec);
		return;
	}
	pthread_mutex_lock(&s->mu);
	if (refuse_never(s, &spec, o))
		goto out;
	for (uint64_t id = 1; id <= s->njobs; id++) {
		struct srv_job *x = srv_job_get(s, id);

		if (x && !srv_jstate_final(x->state) && strcmp(x->spec.job.user, spec.job.user) == 0 &&
		    strcmp(x->spec.job.name, spec.job.name) == 0) {
			found = x;
			nfound++;
		}
	}
	if (nfound > 1) {
		drv_http_resp_error(o, 409, "conflict", NULL,
				    "%d unfinished jobs are named %s; use their ids", nfound,
				    spec.job.name);
		goto out;
	}
	if (!found) {
		struct srv_job **js = NULL;
		size_t n = srv_elements_expand(s, &spec, &js);  /* a batch/v1 Job: its pods too */

		if (!n) {
			js = drv_calloc(1, sizeof(*js));
			js[0] = job_from_spec(&spec);
			n = 1;
		}
		j = js[0];
		ticket = add_jobs(s, js, n, c->user);
		drv_free(js);
		drv_http_resp_json(o, 201, json_pack("{s:s,s:o}", "action", "created", "job",
						     srv_job_api_json(s, j, false)));
		ticket = srv_idem_end(s, iq, o, ticket);
		srv_reply_when_durable(s, r, ticket, "the job was not accepted: ");
		goto out;
	}
	spec.job.id = found->id;
	spec.job.submit_time = found->submit_time;
	canon = drv_jobspec_to_json(&spec);
	k1 = spec_key(canon);
	k2 = spec_key(found->canon);
	if (strcmp(k1, k2) == 0) {
		json_decref(canon);
		drv_http_resp_json(o, 200, json_pack("{s:s,s:o}", "action", "unchanged", "job",
						     srv_job_api_json(s, found, false)));
		ticket = srv_idem_end(s, iq, o, 0);
		if (ticket)
			srv_reply_when_durable(s, r, ticket, "the answer is not on disk yet: ");
		goto out;
	}
	if (found->par) {
		char why[320];

		if (srv_elements_update(s, found, &spec, canon, why, sizeof(why)) < 0) {
			json_decref(canon);
			drv_http_resp_error(o, 409, "conflict", NULL, "%s", why);
			goto out;
		}
		drv_http_resp_json(o, 200, json_pack("{s:s,s:o}", "action", "configured", "job",
						     srv_job_api_json(s, found, false)));
		srv_reply_when_durable(s, r, srv_idem_end(s, iq, o, srv_enqueue(s)),
				       "the change is not on disk yet: ");
		goto out;
	}
	if (found->parent) {
		json_decref(canon);
		drv_http_resp_error(o, 409, "conflict", NULL,
				    "job %llu is a Kubernetes Job's %s; its spec does not change by "
				    "apply (cancel it; POST /v1/jobs/ID/release resumes a suspended Job)",
				    (unsigned long long)found->id, found->par ? "parent" : "pod");
		goto out;
	}
	if (found->state != J_PENDING || found->holding) {
		json_decref(canon);
		drv_http_resp_error(o, 409, "conflict", NULL,
				    "job %llu is %s; cancel it to change its spec",
				    (unsigned long long)found->id, srv_jstate_name(found->state));
		goto out;
	}
	/* replace the spec of a pending job; it keeps its id and place */
	if (found->in_sched)
		drv_sched_finish(s->sched, found->id, drv_wall_s());
	drv_jobspec_release(&found->spec);
	found->spec = spec;
	drv_jobspec_init(&spec);
	json_decref(found->canon);
	found->canon = canon;
	found->in_sched = false;
	srv_job_queue(s, found);
	srv_job_transition(s, found, J_PENDING, "spec updated by apply");
	/* the kick may go before the disk: whatever the pass decides is
	 * written, and acted on, after this change */
	srv_sched_kick(s);
	drv_http_resp_json(o, 200, json_pack("{s:s,s:o}", "action", "configured", "job",
					     srv_job_api_json(s, found, false)));
	srv_reply_when_durable(s, r, srv_idem_end(s, iq, o, srv_enqueue(s)),
			       "the change is not on disk yet: ");
out:
	pthread_mutex_unlock(&s->mu);
	free(k1);
	free(k2);
	drv_jobspec_release(&spec);
}

int srv_api_apply(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct srv_idem_req iq;

	if (srv_idem_begin(s, r, o, "POST /v1/apply", &iq))
		return 0;
	apply(s, r, o, &iq);
	srv_idem_cancel(s, &iq);
	return 0;
}

/* --- reading ------------------------------------------------------------ */

/* Parses "pending,running" into a bit set; -1 on an unknown word. */
static int parse_states(const char *v, unsigned *set, struct drv_http_resp *o)
{
	char buf[256], *tok, *save = NULL;

	*set = 0;
	if (!v || !*v)
		return 0;
	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int st = srv_jstate_parse(tok);

		if (st < 0) {
			drv_http_resp_error(o, 400, "invalid", NULL,
					    "state=%s: expected pending, scheduled, running, "
					    "succeeded, failed, cancelled or preempted", tok);
			return -1;
		}
		*set |= 1u << st;
	}
	return 0;
}

static bool may_see(struct caller *c, struct srv_job *j)
{
	return c->admin || strcmp(c->user, j->spec.job.user) == 0;
}

struct list_filter {
	struct caller *c;
	unsigned states;
	const char *user, *tenant, *name;
};

static bool list_match(struct srv_job *j, void *cls)
{
	const struct list_filter *f = cls;

	return may_see(f->c, j) && (!f->states || (f->states & (1u << j->state))) &&
	       (!f->user || strcmp(f->user, j->spec.job.user) == 0) &&
	       (!f->tenant || strcmp(f->tenant, j->spec.job.tenant) == 0) &&
	       (!f->name || strcmp(f->name, j->spec.job.name) == 0);
}

/* ",succeeded,failed," for the store's filter; "" when no state is asked. */
static void states_list(unsigned states, char *buf, size_t n)
{
	size_t l = 0;

	buf[0] = '\0';
	for (int k = 0; k < J_NSTATES && states; k++)
		if (states & (1u << k))
			l += (size_t)snprintf(buf + l, n > l ? n - l : 0, "%s%s,", l ? "" : ",",
					      srv_jstate_name((enum jstate)k));
}

int srv_api_jobs(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct list_filter f = { .c = caller_of(r), .user = drv_http_req_query(r, "user"),
				 .tenant = drv_http_req_query(r, "tenant"),
				 .name = drv_http_req_query(r, "name") };
	struct drv_store_job_query q = { 0 };
	struct drv_dynbuf b = DRV_DYNBUF_INIT(DRV_HTTP_MAX_REPLY);
	char sts[160];
	int64_t limit, after;
	uint64_t last = 0;
	bool more = false;

	if (parse_states(drv_http_req_query(r, "state"), &f.states, o) < 0 ||
	    drv_http_req_query_int(r, "limit", SRV_PAGE_DEFAULT, 1, SRV_PAGE_MAX, &limit, o) < 0 ||
	    drv_http_req_query_int(r, "after", 0, 0, INT64_MAX, &after, o) < 0)
		return 0;
	states_list(f.states, sts, sizeof(sts));
	q = (struct drv_store_job_query){ .after = (uint64_t)after, .limit = (int)limit,
		.user = f.c->admin ? f.user : f.c->user, .tenant = f.tenant, .name = f.name,
		.states = *sts ? sts : NULL };
	/* {"items":[JOB,...],"next_after":N} as drv_http_resp_json would
	 * write it, the items' text kept from page to page (srv_job_api_text) */
	drv_dynbuf_add(&b, "{\"items\":[", 10);
	pthread_mutex_lock(&s->mu);
	srv_jobs_page(s, &q, list_match, &f, &b, &more, &last);
	pthread_mutex_unlock(&s->mu);
	drv_dynbuf_add(&b, "]", 1);
	if (more)
		drv_dynbuf_addf(&b, ",\"next_after\":%llu", (unsigned long long)last);
	drv_dynbuf_add(&b, "}\n", 2);
	drv_http_resp_bytes(o, 200, "application/json", drv_dynbuf_str(&b), drv_dynbuf_len(&b));
	drv_dynbuf_release(&b);
	return 0;
}

/* The job named by the route's first capture, visible to the caller; NULL
 * after setting a 404. A finished job is read from the store into *tmp,
 * which the caller frees (srv_job_free). Under s->mu (released meanwhile). */
static struct srv_job *route_job(struct drv_server *s, struct drv_http_req *r,
				 struct drv_http_resp *o, struct srv_job **tmp)
{
	const char *v = drv_http_req_param(r, 0);
	char *end;
	unsigned long long id = strtoull(v ? v : "", &end, 10);
	struct srv_job *j = (v && *v && !*end) ? srv_job_lookup(s, id, tmp) : NULL;

	if (!j || !may_see(caller_of(r), j)) {
		drv_http_resp_error(o, 404, "not_found", NULL, "job %s not found", v ? v : "");
		return NULL;
	}
	return j;
}

int srv_api_job(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct srv_job *j, *tmp = NULL;

	pthread_mutex_lock(&s->mu);
	j = route_job(s, r, o, &tmp);
	if (j)
		drv_http_resp_json(o, 200, srv_job_api_json(s, j, true));
	pthread_mutex_unlock(&s->mu);
	srv_job_free(tmp);
	return 0;
}

int srv_api_cancel(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct caller *c = caller_of(r);
	size_t len;
	json_t *body = NULL;
	char why[512];
	const char *given = NULL;
	struct srv_job *j, *tmp = NULL;

	drv_http_req_body(r, &len);
	if (len) {
		body = drv_http_req_json(r, o);
		if (!body)
			return 0;
		given = drv_json_str(body, "reason");
	}
	if (given && *given)
		snprintf(why, sizeof(why), "cancelled by %s: %s", c->user, given);
	else
		snprintf(why, sizeof(why), "cancelled by %s", c->user);
	pthread_mutex_lock(&s->mu);
	j = route_job(s, r, o, &tmp);
	if (!j)
		goto out;
	if (srv_jstate_final(j->state) || tmp) {
		drv_http_resp_error(o, 409, "conflict", NULL, "job %llu has already %s",
				    (unsigned long long)j->id, srv_jstate_name(j->state));
		goto out;
	}
	srv_job_cancel(s, j, why);
	drv_http_resp_json(o, 200, srv_job_api_json(s, j, false));
	srv_reply_when_durable(s, r, srv_enqueue(s), "the cancel is not on disk yet: ");
out:
	pthread_mutex_unlock(&s->mu);
	srv_job_free(tmp);
	json_decref(body);
	return 0;
}

/*
 * POST /v1/jobs/ID/release: lifts the hold a user may lift on their own
 * job (CONTRACTS.md section 4); today the `suspend` hold of a Kubernetes
 * Job written with spec.suspend: true. 409 when the job holds none.
 */
/* Takes pending job j (not a parent) off the scheduler under hold kind. */
static void hold_one(struct drv_server *s, struct srv_job *j, uint8_t kind, const char *why)
{
	if (j->in_sched) {
		drv_sched_finish(s->sched, j->id, drv_wall_s());
		j->in_sched = false;
	}
	j->hold = kind;
	srv_job_transition(s, j, J_PENDING, why);
	srv_job_mark(s, j);
}

/* Lifts j's hold; false when c may not (an admin hold needs an admin). */
static bool release_one(struct drv_server *s, struct caller *c, struct srv_job *j, const char *why)
{
	if (!j->hold || (j->hold == SRV_HOLD_ADMIN && !c->admin))
		return false;
	j->hold = SRV_HOLD_NONE;
	srv_job_transition(s, j, J_PENDING, why);
	srv_job_queue(s, j);
	srv_job_mark(s, j);
	srv_sched_kick(s);
	return true;
}

/* The parent's elements still in memory. */
#define EACH_ELEMENT(s, p, e)                                                           \
	for (uint64_t id_ = (p)->par->first; id_ < (p)->par->first + (uint64_t)(p)->par->n; \
	     id_++)                                                                     \
		if (((e) = srv_job_get((s), id_)) != NULL && (e)->parent == (p)->id)

/*
 * POST /v1/jobs/ID/release: lifts the hold a caller may lift
 * (CONTRACTS.md section 4): a `user` hold on one's own job (sbatch -H,
 * scontrol hold by a user), an `admin` hold by an admin, and the `suspend`
 * hold of a Kubernetes Job written with spec.suspend: true. For a parent,
 * its held elements. 409 when the job holds nothing, 403 for an admin
 * hold released by a user.
 */
int srv_api_release(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct caller *c = caller_of(r);
	struct srv_job *j, *e, *tmp = NULL;
	char why[160];
	int n = 0, denied = 0;

	pthread_mutex_lock(&s->mu);
	j = route_job(s, r, o, &tmp);
	if (!j)
		goto out;
	snprintf(why, sizeof(why), "released by %s", c->user);
	if (!tmp && j->par) {
		EACH_ELEMENT(s, j, e)
			if (e->hold && e->state == J_PENDING) {
				denied += e->hold == SRV_HOLD_ADMIN && !c->admin;
				n += release_one(s, c, e, why);
			}
	} else if (!tmp && j->hold && j->state == J_PENDING) {
		denied += j->hold == SRV_HOLD_ADMIN && !c->admin;
		n += release_one(s, c, j, why);
	}
	snprintf(why, sizeof(why), "resumed by %s: its pods may run", c->user);
	if (!tmp && !n && !denied && srv_elements_resume(s, j, why))
		n++;
	if (denied && !n) {
		drv_http_resp_error(o, 403, "forbidden", NULL, "job %llu has an admin hold; only an "
				    "admin may release it", (unsigned long long)j->id);
		goto out;
	}
	if (!n) {
		drv_http_resp_error(o, 409, "conflict", NULL, "job %llu holds nothing to release "
				    "(%s)", (unsigned long long)j->id, srv_jstate_name(j->state));
		goto out;
	}
	drv_http_resp_json(o, 200, srv_job_api_json(s, j, false));
	srv_reply_when_durable(s, r, srv_enqueue(s), "the release is not on disk yet: ");
out:
	pthread_mutex_unlock(&s->mu);
	srv_job_free(tmp);
	return 0;
}

/*
 * POST /v1/jobs/ID/hold [{"kind": "user"|"admin"}]: a pending job (or a
 * parent's pending elements) stays pending, unseen by the scheduler, until
 * released. The kind defaults to admin for admins (scontrol hold) and is
 * user otherwise (scontrol uhold); a user may not set an admin hold (403).
 * 409 when nothing is pending (Slurm: "Job is no longer pending execution").
 */
int srv_api_hold(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct caller *c = caller_of(r);
	struct srv_job *j, *e, *tmp = NULL;
	json_t *body = NULL;
	const char *kind = NULL;
	uint8_t k = c->admin ? SRV_HOLD_ADMIN : SRV_HOLD_USER;
	size_t len;
	char why[160];
	int n = 0;

	drv_http_req_body(r, &len);
	if (len) {
		if (!(body = drv_http_req_json(r, o)))
			return 0;
		kind = drv_json_str(body, "kind");
	}
	if (kind && strcmp(kind, "user") == 0) {
		k = SRV_HOLD_USER;
	} else if (kind && strcmp(kind, "admin") == 0) {
		if (!c->admin) {
			drv_http_resp_error(o, 403, "forbidden", NULL, "kind: only an admin may set an "
					    "admin hold");
			json_decref(body);
			return 0;
		}
		k = SRV_HOLD_ADMIN;
	} else if (kind) {
		drv_http_resp_error(o, 400, "invalid", NULL, "kind: found \"%s\", expected user or "
				    "admin", kind);
		json_decref(body);
		return 0;
	}
	snprintf(why, sizeof(why), "held by %s (%s hold); POST /v1/jobs/ID/release (scontrol "
		 "release) lets it run", c->user, k == SRV_HOLD_ADMIN ? "admin" : "user");
	pthread_mutex_lock(&s->mu);
	j = route_job(s, r, o, &tmp);
	if (!j)
		goto out;
	if (!tmp && j->par) {
		EACH_ELEMENT(s, j, e)
			if (e->state == J_PENDING) {
				hold_one(s, e, k, why);
				n++;
			}
	} else if (!tmp && j->state == J_PENDING) {
		hold_one(s, j, k, why);
		n++;
	}
	if (!n) {
		drv_http_resp_error(o, 409, "conflict", NULL, "job %llu is no longer pending "
				    "execution (%s)", (unsigned long long)j->id,
				    srv_jstate_name(j->state));
		goto out;
	}
	srv_sched_kick(s);
	drv_http_resp_json(o, 200, srv_job_api_json(s, j, false));
	srv_reply_when_durable(s, r, srv_enqueue(s), "the hold is not on disk yet: ");
out:
	pthread_mutex_unlock(&s->mu);
	srv_job_free(tmp);
	json_decref(body);
	return 0;
}

/*
 * POST /v1/jobs/ID/requeue: a running (or scheduled) job stops its tasks
 * and goes back to pending as a new attempt (scontrol requeue); 409 for a
 * job that is pending or has ended.
 */
int srv_api_requeue(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct caller *c = caller_of(r);
	struct srv_job *j, *tmp = NULL;
	char why[160];

	pthread_mutex_lock(&s->mu);
	j = route_job(s, r, o, &tmp);
	if (!j)
		goto out;
	if (tmp || j->par || !j->holding || srv_jstate_final(j->state) ||
	    j->state == J_PENDING) {
		drv_http_resp_error(o, 409, "conflict", NULL, "job %llu is %s: only a running job "
				    "is requeued", (unsigned long long)j->id, srv_jstate_name(j->state));
		goto out;
	}
	snprintf(why, sizeof(why), "requeued by %s", c->user);
	srv_job_transition(s, j, J_PENDING, why);
	j->requeue_on_stop = true;
	j->requeue_quiet = true;
	srv_set_str(&j->stop_reason, NULL);
	srv_job_stop_tasks(s, j, why);
	srv_sched_kick(s);
	drv_http_resp_json(o, 200, srv_job_api_json(s, j, false));
	srv_reply_when_durable(s, r, srv_enqueue(s), "the requeue is not on disk yet: ");
out:
	pthread_mutex_unlock(&s->mu);
	srv_job_free(tmp);
	return 0;
}

/*
 * POST /v1/jobs/ID/signal {"signal": N, "to": "steps"|"batch"|"all"}:
 * signal N (1..64) to a running job's processes (signals.c); "to" as
 * scancel's: "steps" (default) its steps' tasks, "batch" its batch shell
 * (every task of a job that is no #SBATCH script), "all" both. 409 when
 * it does not run.
 */
int srv_api_signal(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct srv_job *j, *tmp = NULL;
	json_t *body = drv_http_req_json(r, o), *sig;
	const char *to;
	int whom;

	if (!body)
		return 0;
	sig = json_object_get(body, "signal");
	to = drv_json_str(body, "to");
	if (!json_is_integer(sig) || json_integer_value(sig) < 1 || json_integer_value(sig) > 64) {
		drv_http_resp_error(o, 400, "invalid", NULL, "signal: expected a signal number 1..64");
		goto done;
	}
	whom = !to || !strcmp(to, "steps") ? SRV_SIG_STEPS : !strcmp(to, "batch") ? SRV_SIG_BATCH
	       : !strcmp(to, "all") ? SRV_SIG_BATCH | SRV_SIG_STEPS : 0;
	if (!whom) {
		drv_http_resp_error(o, 400, "invalid", NULL, "to: \"%s\", expected steps, batch or all",
				    to);
		goto done;
	}
	pthread_mutex_lock(&s->mu);
	j = route_job(s, r, o, &tmp);
	if (!j)
		goto out;
	if (!tmp && j->par) {   /* an array or Job: its running elements */
		int n = 0;

		for (int32_t k = 0; k < j->par->n; k++) {
			struct srv_job *e = srv_job_get(s, j->par->first + (uint64_t)k);

			if (e && e->holding && e->state != J_PENDING && !srv_jstate_final(e->state) &&
			    !e->stop_reason) {
				srv_job_signal(s, e, (int)json_integer_value(sig), whom);
				n++;
			}
		}
		if (n)
			goto sent;
	}
	if (tmp || j->par || !j->holding || srv_jstate_final(j->state) || j->state == J_PENDING ||
	    j->stop_reason) {
		drv_http_resp_error(o, 409, "conflict", NULL, "job %llu is %s: only a running job "
				    "is signalled", (unsigned long long)j->id, srv_jstate_name(j->state));
		goto out;
	}
	srv_job_signal(s, j, (int)json_integer_value(sig), whom);
sent:
	drv_http_resp_json(o, 200, json_pack("{s:I,s:i,s:s}", "id", (json_int_t)j->id, "signal",
					     (int)json_integer_value(sig), "to",
					     to ? to : "steps"));
out:
	pthread_mutex_unlock(&s->mu);
	srv_job_free(tmp);
done:
	json_decref(body);
	return 0;
}

/*
 * PATCH /v1/jobs/ID {"time_limit_s": N}: a pending job's time limit
 * (CONTRACTS.md section 4): a user may only lower it, an admin may also
 * raise it (0: none, admins only); Slurm's scontrol update TimeLimit=.
 * A running job's limit is fixed at its start (409).
 */
int srv_api_job_patch(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct caller *c = caller_of(r);
	struct srv_job *j, *tmp = NULL;
	json_t *body = drv_http_req_json(r, o), *v;
	const char *key;
	int64_t lim;
	char why[200];

	if (!body)
		return 0;
	json_object_foreach(body, key, v) {
		if (strcmp(key, "time_limit_s") != 0) {
			drv_http_resp_error(o, 400, "invalid", NULL, "%s: found an unknown field, "
					    "expected time_limit_s", key);
			json_decref(body);
			return 0;
		}
	}
	v = json_object_get(body, "time_limit_s");
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		drv_http_resp_error(o, 400, "invalid", NULL, "time_limit_s: expected a number of "
				    "seconds, 0 or more");
		json_decref(body);
		return 0;
	}
	lim = json_integer_value(v);
	pthread_mutex_lock(&s->mu);
	j = route_job(s, r, o, &tmp);
	if (!j)
		goto out;
	if (tmp || j->state != J_PENDING || j->par) {
		drv_http_resp_error(o, 409, "conflict", NULL, "job %llu is %s: only a pending job's "
				    "time limit changes (a running job keeps the one it started with)",
				    (unsigned long long)j->id, j->par ? "a parent" : srv_jstate_name(j->state));
		goto out;
	}
	if (!c->admin && (lim == 0 || (j->spec.job.time_limit && lim > j->spec.job.time_limit) ||
			  !j->spec.job.time_limit)) {
		drv_http_resp_error(o, 403, "forbidden", NULL, "time_limit_s: a user may only lower "
				    "a time limit (now %lld s); an admin may raise it",
				    (long long)j->spec.job.time_limit);
		goto out;
	}
	if (j->in_sched) {
		drv_sched_finish(s->sched, j->id, drv_wall_s());
		j->in_sched = false;
	}
	j->spec.job.time_limit = lim;
	json_object_set_new(j->canon, "timeLimit", json_integer(lim));
	snprintf(why, sizeof(why), "time limit set to %lld s by %s", (long long)lim, c->user);
	srv_job_transition(s, j, J_PENDING, why);
	srv_job_queue(s, j);
	srv_job_mark(s, j);
	srv_sched_kick(s);
	drv_http_resp_json(o, 200, srv_job_api_json(s, j, false));
	srv_reply_when_durable(s, r, srv_enqueue(s), "the change is not on disk yet: ");
out:
	pthread_mutex_unlock(&s->mu);
	srv_job_free(tmp);
	json_decref(body);
	return 0;
}

/*
 * GET /v1/jobs/ID/exec?task=N&command=ARG...: a command in a running task
 * over WebSocket (drover exec; the frames and flags of kubectl exec,
 * kube_exec.c).
 */
int srv_api_exec(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct srv_job *j, *tmp = NULL;
	json_t *cmd = drv_http_req_query_all(r, "command");
	char what[96];
	int64_t task;

	if (drv_http_req_query_int(r, "task", 0, 0, 1000000, &task, o) < 0)
		goto out;
	if (!json_array_size(cmd)) {
		drv_http_resp_error(o, 400, "invalid", NULL, "command: none given, expected one "
				    "query parameter command=ARG or more (drover exec ID -- CMD ARG...)");
		goto out;
	}
	pthread_mutex_lock(&s->mu);
	j = route_job(s, r, o, &tmp);
	if (!j) {
		;
	} else if (!srv_exec_proto(r)) {
		drv_http_resp_error(o, 400, "invalid", NULL, "exec is a WebSocket with the "
				    "subprotocol v5.channel.k8s.io (drover exec)");
	} else if (s->stopping) {
		drv_http_resp_error(o, 503, "unavailable", NULL, "the server is stopping");
	} else if (task >= j->ntasks) {
		drv_http_resp_error(o, 400, "invalid", NULL, "task: job %llu has %d task%s "
				    "(0..%d), found %lld", (unsigned long long)j->id, j->ntasks,
				    j->ntasks == 1 ? "" : "s", j->ntasks - 1, (long long)task);
	} else if (tmp || j->tasks[task].state != T_RUNNING ||
		   !s->nodes[j->tasks[task].node].agent_url) {
		drv_http_resp_error(o, 409, "conflict", NULL, "cannot exec in task %lld of job %llu: "
				    "it is not running (the job is %s)", (long long)task,
				    (unsigned long long)j->id, srv_jstate_name(j->state));
	} else {
		snprintf(what, sizeof(what), "task %lld of job %llu", (long long)task,
			 (unsigned long long)j->id);
		srv_exec_answer(s, r, o, j, (int32_t)task, what, cmd);
	}
	pthread_mutex_unlock(&s->mu);
	srv_job_free(tmp);
out:
	json_decref(cmd);
	return 0;
}

int srv_api_logs(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct srv_job *j, *tmp = NULL;
	int64_t task, offset, limit, step;
	const char *stream = drv_http_req_query(r, "stream");
	struct srv_logs_req q = { 0 };
	const struct srv_task *t = NULL;
	char tid[64];

	if (!stream)
		stream = "stdout";
	if (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0) {
		drv_http_resp_error(o, 400, "invalid", NULL, "stream=%s: expected stdout or stderr",
				    stream);
		return 0;
	}
	if (drv_http_req_query_int(r, "task", 0, 0, 1000000, &task, o) < 0 ||
	    drv_http_req_query_int(r, "step", -1, -1, INT32_MAX, &step, o) < 0 ||
	    drv_http_req_query_int(r, "offset", 0, 0, INT64_MAX, &offset, o) < 0 ||
	    drv_http_req_query_int(r, "limit", 1 << 20, 1, 16 << 20, &limit, o) < 0)
		return 0;
	pthread_mutex_lock(&s->mu);
	j = route_job(s, r, o, &tmp);
	if (j && step >= 0) {
		t = srv_step_log_task(s, j, step, task);
		snprintf(tid, sizeof(tid), "%llu.s%lld.%lld", (unsigned long long)j->id,
			 (long long)step, (long long)task);
	} else if (j && task < j->ntasks) {
		t = &j->tasks[task];
		snprintf(tid, sizeof(tid), "%llu.%lld", (unsigned long long)j->id, (long long)task);
	}
	if (j) {
		if (!t || t->state == T_PENDING || (step < 0 && srv_task_held(s, j, (int32_t)task))) {
			drv_http_resp_error(o, 404, "not_found", NULL,
					    "task %s has not started; no logs yet%s",
					    step >= 0 ? tid : tid, t && step < 0 && t->state != T_PENDING
					    ? " (it holds the job's share of its node for steps: srun "
					      "output is in its steps' logs)" : "");
		} else {
			struct srv_node *n = &s->nodes[t->node];

			snprintf(q.nodename, sizeof(q.nodename), "%s", n->name);
			if (!n->agent_url)
				drv_http_resp_error(o, 503, "unavailable", NULL,
						    "node %s's agent gave no URL to fetch logs from",
						    n->name);
			q.url = n->agent_url ? drv_strdup(n->agent_url) : NULL;
			q.tok = s->cfg.cluster_token ? drv_strdup(s->cfg.cluster_token) : NULL;
			q.offset = offset;
			snprintf(q.path, sizeof(q.path), "/v1/tasks/%s/logs?stream=%s&offset=%lld&limit=%lld",
				 tid, stream, (long long)offset, (long long)limit);
		}
	}
	pthread_mutex_unlock(&s->mu);
	srv_job_free(tmp);
	if (q.url)
		srv_logs_fetch(s, r, o, &q);   /* takes q */
	else
		drv_free(q.tok);
	return 0;
}

/*
 * A job's place in the queue's order: the pending jobs first, in the
 * scheduler's order (higher priority, then earlier submit, then lower id),
 * then the others by id. The cursor of GET /v1/queue names such a place.
 */
struct qent {
	bool other;        /* not pending */
	int32_t prio;
	int64_t submit;
	uint64_t id;
};

static int qcmp(const void *a, const void *b)
{
	const struct qent *x = a, *y = b;

	if (x->other != y->other)
		return x->other ? 1 : -1;
	if (!x->other && x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	if (!x->other && x->submit != y->submit)
		return x->submit < y->submit ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* "p.PRIO.SUBMIT.ID" (a pending job) or "o.ID" (another). */
static void cursor_of(const struct qent *e, char *buf, size_t n)
{
	if (e->other)
		snprintf(buf, n, "o.%llu", (unsigned long long)e->id);
	else
		snprintf(buf, n, "p.%d.%lld.%llu", (int)e->prio, (long long)e->submit,
			 (unsigned long long)e->id);
}

/* Parses a cursor into *e; -1 after a 400 when v is not one. */
static int cursor_parse(const char *v, struct qent *e, struct drv_http_resp *o)
{
	unsigned long long id;
	long long submit;
	int prio, used = -1;

	*e = (struct qent){ 0 };
	if (v && sscanf(v, "o.%llu%n", &id, &used) == 1 && used == (int)strlen(v)) {
		*e = (struct qent){ .other = true, .id = id };
		return 0;
	}
	used = -1;
	if (v && sscanf(v, "p.%d.%lld.%llu%n", &prio, &submit, &id, &used) == 3 &&
	    used == (int)strlen(v)) {
		*e = (struct qent){ .prio = prio, .submit = submit, .id = id };
		return 0;
	}
	drv_http_resp_error(o, 400, "invalid", NULL, "cursor=%s: expected the next_cursor of "
			    "an earlier page (p.PRIORITY.SUBMIT.ID or o.ID)", v ? v : "");
	return -1;
}

struct queue_q {
	unsigned states;
	const char *user, *tenant;
	bool from_cursor;
	struct qent cursor;
	int64_t limit;
};

/* The query of GET /v1/queue into *q; -1 after a 400. */
static int queue_query(struct drv_http_req *r, struct drv_http_resp *o, struct queue_q *q)
{
	const char *cur = drv_http_req_query(r, "cursor");
	const unsigned finished = (1u << J_SUCCEEDED) | (1u << J_FAILED) | (1u << J_CANCELLED) |
				  (1u << J_OUT_OF_MEMORY) | (1u << J_TIMEOUT) | (1u << J_NODE_FAIL);

	*q = (struct queue_q){ .user = drv_http_req_query(r, "user"),
			       .tenant = drv_http_req_query(r, "tenant") };
	if (parse_states(drv_http_req_query(r, "state"), &q->states, o) < 0 ||
	    drv_http_req_query_int(r, "limit", SRV_PAGE_DEFAULT, 1, SRV_PAGE_MAX, &q->limit, o) < 0)
		return -1;
	if (cur && cursor_parse(cur, &q->cursor, o) < 0)
		return -1;
	q->from_cursor = cur != NULL;
	if (q->states & finished) {
		/* finished jobs live in the store, not in the queue */
		drv_http_resp_error(o, 400, "invalid", NULL,
				    "state=%s: the queue holds unfinished jobs (pending, scheduled, "
				    "running, preempted); GET /v1/jobs?state=... lists finished ones",
				    drv_http_req_query(r, "state"));
		return -1;
	}
	if (!q->states)
		q->states = (1u << J_PENDING) | (1u << J_SCHEDULED) | (1u << J_RUNNING) |
			    (1u << J_PREEMPTED);
	return 0;
}

/* Every job the query matches, in the queue's order (*n of them; caller
 * frees). Under s->mu. */
static struct qent *queue_entries(struct drv_server *s, const struct queue_q *q, size_t *n)
{
	struct qent *v = NULL;
	size_t cap = 0;

	*n = 0;
	for (uint64_t id = 1; id <= s->njobs; id++) {
		struct srv_job *j = srv_job_get(s, id);

		if (!j || !(q->states & (1u << j->state)) ||
		    (q->user && strcmp(q->user, j->spec.job.user) != 0) ||
		    (q->tenant && strcmp(q->tenant, j->spec.job.tenant) != 0))
			continue;
		DRV_GROW(v, *n + 1, cap);
		v[(*n)++] = (struct qent){ j->state != J_PENDING, j->spec.job.priority,
					   j->submit_time, id };
	}
	if (*n > 0) /* v is NULL then, and qsort's first argument may not be */
		qsort(v, *n, sizeof(*v), qcmp);
	return v;
}

/* A JSON string's text as drv_http_resp_json writes it. */
static void add_json_string(struct drv_dynbuf *b, const char *v)
{
	json_t *j = json_string(v ? v : "");
	char *t = json_dumps(j, JSON_ENCODE_ANY | DRV_HTTP_JSON_FLAGS);

	drv_dynbuf_addstr(b, t ? t : "\"\"");
	free(t);
	json_decref(j);
}

/* One item of the queue: the job (its list form's text, srv_job_api_text),
 * then its position (rank among the pending jobs listed, null for others),
 * wait and queue, as the object's last members. */
static void queue_item(struct drv_server *s, const struct qent *e, size_t rank, int64_t now,
		       struct drv_dynbuf *b)
{
	struct srv_job *j = srv_job_get(s, e->id);
	int64_t until = e->other && j->start_time ? j->start_time : now;

	srv_job_api_text(s, j, b);
	drv_dynbuf_trim(b, 1);   /* its closing brace */
	if (e->other)
		drv_dynbuf_addstr(b, ",\"position\":null");
	else
		drv_dynbuf_addf(b, ",\"position\":%zu", rank);
	drv_dynbuf_addf(b, ",\"wait_s\":%lld", (long long)(until - j->submit_time));
	if (j->spec.job.tenant) {
		drv_dynbuf_addstr(b, ",\"queue\":");
		add_json_string(b, j->spec.job.tenant);
	}
	drv_dynbuf_add(b, "}", 1);
}

int srv_api_queue(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct drv_dynbuf b = DRV_DYNBUF_INIT(DRV_HTTP_MAX_REPLY);
	struct queue_q q;
	struct qent *v;
	size_t n, k = 0, end;
	int64_t now = drv_wall_s();
	char next[96] = "";

	if (queue_query(r, o, &q) < 0)
		return 0;
	/* {"items":[...],"total":T,"next_cursor":"C"} as drv_http_resp_json
	 * would write it, each item's job text kept between pages */
	drv_dynbuf_add(&b, "{\"items\":[", 10);
	pthread_mutex_lock(&s->mu);
	v = queue_entries(s, &q, &n);
	while (q.from_cursor && k < n && qcmp(&v[k], &q.cursor) <= 0)
		k++;
	end = DRV_MIN(n, k + (size_t)q.limit);
	for (size_t i = k; i < end; i++) {
		if (i > k)
			drv_dynbuf_add(&b, ",", 1);
		queue_item(s, &v[i], i + 1, now, &b);
	}
	if (end < n)
		cursor_of(&v[end - 1], next, sizeof(next));
	pthread_mutex_unlock(&s->mu);
	drv_dynbuf_addf(&b, "],\"total\":%zu", n);
	if (*next) {
		drv_dynbuf_addstr(&b, ",\"next_cursor\":");
		add_json_string(&b, next);
	}
	drv_dynbuf_add(&b, "}\n", 2);
	drv_free(v);
	drv_http_resp_bytes(o, 200, "application/json", drv_dynbuf_str(&b), drv_dynbuf_len(&b));
	drv_dynbuf_release(&b);
	return 0;
}

/* --- for the Kubernetes face (kube_write.c) ---------------------------- */

int srv_job_own(struct drv_server *s, struct caller *c, struct drv_jobspec *spec,
		struct drv_http_resp *resp)
{
	return own_job(s, c, spec, resp);
}

struct srv_job *srv_job_new(struct drv_jobspec *spec)
{
	return job_from_spec(spec);
}

uint64_t srv_jobs_add(struct drv_server *s, struct srv_job **js, size_t n, const char *by)
{
	return add_jobs(s, js, n, by);
}
