/*
 * cmd_validate.c: 'drover validate [--json] FILE [SBATCH-OPTIONS...]': reads a
 * cluster file or a job file (Kubernetes manifest, Slurm batch script,
 * drover canonical JSON), told apart by content, not by name, and either
 * prints what is wrong (file:line:col or field path, exit 2) or a summary.
 * Warnings (fields kept but not acted on) go to stderr.
 *
 * Cluster files: pools, nodes, GPUs by model, NVLink domains; --json prints
 * the same as one JSON object with the GPU total as a plain integer.
 * Jobs: groups, GPUs, env; --json prints the canonical JSON job
 * (docs/job-format.md) on stdout, an array when the stream holds several.
 *
 * Cluster part by core; job part by spec.
 */
#include "drover/clusterfile.h"
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/diag.h"
#include "drover/fsutil.h"
#include "drover/model.h"
#include "drover/options.h"
#include "drover/spec.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct summary {
	int64_t gpus, gpus_up;
	int32_t nodes_by_state[3];
	int64_t by_model[DRV_MAX_MODELS];
	int32_t domains, dom_min, dom_max;
	int32_t *pool_nodes;
	int64_t *pool_gpus;
};

static void summarize(const struct drv_cluster *c, struct summary *s)
{
	int32_t *dom_gpus = drv_calloc((size_t)c->nvertices, sizeof(int32_t));
	int32_t i;

	memset(s, 0, sizeof(*s));
	s->pool_nodes = drv_calloc((size_t)c->npools + 1, sizeof(int32_t));
	s->pool_gpus = drv_calloc((size_t)c->npools + 1, sizeof(int64_t));
	for (i = 0; i < c->nnodes; i++) {
		const struct drv_node *n = &c->nodes[i];
		s->gpus += n->ngpus;
		if (n->state == DRV_NODE_UP)
			s->gpus_up += n->ngpus;
		s->nodes_by_state[n->state]++;
		if (n->model >= 0)
			s->by_model[n->model] += n->ngpus;
		if (n->pool >= 0) {
			s->pool_nodes[n->pool]++;
			s->pool_gpus[n->pool] += n->ngpus;
		}
		if (n->ngpus > 0)
			dom_gpus[n->nvl_domain] += n->ngpus;
	}
	s->dom_min = -1;
	for (i = 0; i < c->nvertices; i++)
		if (dom_gpus[i] > 0) {
			s->domains++;
			if (s->dom_min < 0 || dom_gpus[i] < s->dom_min)
				s->dom_min = dom_gpus[i];
			if (dom_gpus[i] > s->dom_max)
				s->dom_max = dom_gpus[i];
		}
	if (s->dom_min < 0)
		s->dom_min = 0;
	drv_free(dom_gpus);
}

static const char *nvl_name(const struct drv_cluster *c)
{
	return c->nvl_level >= 0 ? c->levels[c->nvl_level] : "node";
}

static void print_text(const char *path, const struct drv_cluster *c, const struct summary *s)
{
	int32_t i, l;
	int wname = 4, wreg = 1;

	printf("%s: cluster %s is valid\n", path, c->name);
	printf("  levels: ");
	for (l = 0; l < c->nlevels; l++)
		printf("%s%s", l ? " > " : "", c->levels[l]);
	printf("\n  pools: %d\n", (int)c->npools);
	for (i = 0; i < c->npools; i++) {
		int w = (int)strlen(c->pools[i].name);
		if (w > wname)
			wname = w;
		w = (int)strlen(c->pools[i].region);
		if (w > wreg)
			wreg = w;
	}
	for (i = 0; i < c->npools; i++) {
		const struct drv_pool *p = &c->pools[i];
		printf("    %-*s  %-7s %-*s  $%.2f/GPU-h%s%s  %d nodes, %lld GPUs", wname, p->name,
		       p->provider, wreg, *p->region ? p->region : "-",
		       p->price_micro_per_gpu_hour / 1e6,
		       p->spot ? "  spot" : "", p->elastic ? "  elastic" : "",
		       (int)s->pool_nodes[i], (long long)s->pool_gpus[i]);
		if (p->elastic && p->max_nodes)
			printf(" (up to %d nodes)", (int)p->max_nodes);
		printf("\n");
	}
	printf("  nodes: %d", (int)c->nnodes);
	if (s->nodes_by_state[DRV_NODE_DRAINING] || s->nodes_by_state[DRV_NODE_DOWN])
		printf(" (%d up, %d draining, %d down)", (int)s->nodes_by_state[DRV_NODE_UP],
		       (int)s->nodes_by_state[DRV_NODE_DRAINING], (int)s->nodes_by_state[DRV_NODE_DOWN]);
	printf("\n  GPUs: %lld\n", (long long)s->gpus);
	for (i = 0; i < drv_gpu_model_count(); i++)
		if (s->by_model[i])
			printf("    %-16s %lld\n", drv_gpu_model_at(i)->id, (long long)s->by_model[i]);
	printf("  NVLink domains: %d (level %s, ", (int)s->domains, nvl_name(c));
	if (s->dom_min == s->dom_max)
		printf("%d GPUs each)\n", (int)s->dom_max);
	else
		printf("%d to %d GPUs)\n", (int)s->dom_min, (int)s->dom_max);
}

static void print_json(const struct drv_cluster *c, const struct summary *s)
{
	json_t *o = json_object(), *levels = json_array(), *pools = json_array();
	json_t *models = json_object(), *nodes = json_object();
	int32_t i, l;
	char *txt;

	for (l = 0; l < c->nlevels; l++)
		json_array_append_new(levels, json_string(c->levels[l]));
	for (i = 0; i < c->npools; i++) {
		const struct drv_pool *p = &c->pools[i];
		json_t *po = json_object();
		json_object_set_new(po, "name", json_string(p->name));
		json_object_set_new(po, "provider", json_string(p->provider));
		json_object_set_new(po, "region", json_string(p->region));
		json_object_set_new(po, "price_per_gpu_hour",
				    json_real((double)p->price_micro_per_gpu_hour / 1e6));
		json_object_set_new(po, "spot", json_boolean(p->spot));
		json_object_set_new(po, "elastic", json_boolean(p->elastic));
		json_object_set_new(po, "max_nodes", json_integer(p->max_nodes));
		json_object_set_new(po, "nodes", json_integer(s->pool_nodes[i]));
		json_object_set_new(po, "gpus", json_integer(s->pool_gpus[i]));
		json_array_append_new(pools, po);
	}
	for (i = 0; i < drv_gpu_model_count(); i++)
		if (s->by_model[i])
			json_object_set_new(models, drv_gpu_model_at(i)->id, json_integer(s->by_model[i]));
	json_object_set_new(nodes, "total", json_integer(c->nnodes));
	json_object_set_new(nodes, "up", json_integer(s->nodes_by_state[DRV_NODE_UP]));
	json_object_set_new(nodes, "draining", json_integer(s->nodes_by_state[DRV_NODE_DRAINING]));
	json_object_set_new(nodes, "down", json_integer(s->nodes_by_state[DRV_NODE_DOWN]));

	json_object_set_new(o, "kind", json_string("Cluster"));
	json_object_set_new(o, "name", json_string(c->name));
	json_object_set_new(o, "valid", json_true());
	json_object_set_new(o, "levels", levels);
	json_object_set_new(o, "pools", pools);
	json_object_set_new(o, "nodes", nodes);
	json_object_set_new(o, "gpus", json_integer(s->gpus));
	json_object_set_new(o, "gpus_by_model", models);
	{
		json_t *d = json_object();
		json_object_set_new(d, "level", json_string(nvl_name(c)));
		json_object_set_new(d, "count", json_integer(s->domains));
		json_object_set_new(d, "min_gpus", json_integer(s->dom_min));
		json_object_set_new(d, "max_gpus", json_integer(s->dom_max));
		json_object_set_new(o, "nvlink_domains", d);
	}
	txt = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
	printf("%s\n", txt);
	free(txt);
	json_decref(o);
}

static int validate_cluster(const char *path, const char *buf, size_t len, bool json)
{
	struct drv_cluster c;
	struct drv_diags d;
	struct summary s;
	int rc;

	drv_diags_init(&d, path);
	rc = drv_cluster_load_buffer(buf, len, &c, &d);
	if (rc) {
		drv_diags_print(&d, stderr);
		drv_diags_release(&d);
		return DRV_EXIT_USAGE;
	}
	drv_diags_print(&d, stderr); /* warnings, if any */
	drv_diags_release(&d);
	summarize(&c, &s);
	if (json)
		print_json(&c, &s);
	else
		print_text(path, &c, &s);
	drv_free(s.pool_nodes);
	drv_free(s.pool_gpus);
	drv_cluster_release(&c);
	return DRV_EXIT_OK;
}

static void print_job_text(const char *path, const struct drv_jobspec *s)
{
	const struct drv_job *j = &s->job;
	int32_t g, e;

	printf("%s: job %s (%s %s%s%s) is valid\n", path, j->name, drv_spec_format_name(s->format),
	       s->api_version ? s->api_version : "", s->api_version ? " " : "",
	       s->kind ? s->kind : "");
	printf("  tasks: %d in %d group%s, ", (int)drv_job_tasks(j), (int)j->ngroups,
	       j->ngroups == 1 ? "" : "s");
	if (j->gang_min)
		printf("at least %d start together\n", (int)j->gang_min);
	else
		printf("all start together\n");
	if (!s->array.spec && drv_jobspec_elements(s) > 0) {
		printf("  pods: %d to succeed (%s), at most %d at once, backoffLimit %d",
		       (int)drv_jobspec_elements(s), s->k8s.indexed == 1 ? "Indexed" : "NonIndexed",
		       (int)drv_jobspec_parallelism(s),
		       s->k8s.backoff_limit >= 0 ? (int)s->k8s.backoff_limit : 6);
		if (s->k8s.active_deadline_s > 0)
			printf(", deadline %llds", (long long)s->k8s.active_deadline_s);
		if (s->k8s.suspend == 1)
			printf(", suspended");
		printf("; each pod is an element of its own\n");
	}
	for (g = 0; g < j->ngroups; g++) {
		const struct drv_task_group *tg = &j->groups[g];
		const struct drv_task_run *r = &s->run[g];
		printf("  group %s: %d x ", tg->name, (int)tg->count);
		if (tg->gpu_milli)
			printf("%d.%03d GPU", (int)(tg->gpu_milli / 1000), (int)(tg->gpu_milli % 1000));
		else
			printf("%d GPU%s", (int)tg->gpus, tg->gpus == 1 ? "" : "s");
		if (tg->model >= 0)
			printf(" %s", drv_gpu_model_at(tg->model)->id);
		else if (r->gpu_model_name)
			printf(" %s (not in the catalog)", r->gpu_model_name);
		if (tg->cpu_milli)
			printf(", %lld.%03lld CPU", (long long)(tg->cpu_milli / 1000),
			       (long long)(tg->cpu_milli % 1000));
		if (tg->mem_mib)
			printf(", %lld MiB", (long long)tg->mem_mib);
		printf("\n");
		if (r->image)
			printf("    image: %s\n", r->image);
		for (e = 0; e < r->nenv; e++) {
			char b[600];
			const char *v = drv_env_shown(&r->env[e], b, sizeof(b));

			printf("    env: %s=%s\n", r->env[e].name, v ? v : "(from the submitter)");
		}
	}
	if (j->topo_mode != DRV_TOPO_NONE)
		printf("  topology: %s %s\n", j->topo_mode == DRV_TOPO_REQUIRED ? "required" : "preferred",
		       j->topo_level);
	if (j->nregions) {
		printf("  regions:");
		for (g = 0; g < j->nregions; g++)
			printf(" %s", j->regions[g]);
		printf("\n");
	}
	if (j->nnode_selector) {
		printf("  nodes with:");
		for (g = 0; g < j->nnode_selector; g++)
			printf("%s %s=%s", g ? "," : "", j->node_selector[g].key,
			       j->node_selector[g].value);
		printf(" (one value per key)\n");
	}
	if (j->time_limit)
		printf("  time limit: %llds\n", (long long)j->time_limit);
	for (g = 0; g < s->ndeps; g++)
		printf("  after: %s%s%s%s\n", s->deps[g].type, s->deps[g].job ? " " : "",
		       s->deps[g].job ? s->deps[g].job : "",
		       g + 1 < s->ndeps ? (s->deps_any ? " (or)" : " (and)") : "");
	if (s->queue)
		printf("  queue: %s\n", s->queue);
	if (s->priority_class || j->priority)
		printf("  priority: %d%s%s\n", (int)j->priority, s->priority_class ? " class " : "",
		       s->priority_class ? s->priority_class : "");
	if (s->array.spec)
		printf("  array: %s (%d tasks, at most %d at once; each is a job of its own)\n",
		       s->array.spec, (int)s->array.count, (int)drv_jobspec_parallelism(s));
}

static int validate_job(const char *path, const char *buf, size_t len, bool json, int sargc,
			char **sargv)
{
	struct drv_spec_opts opts = { .sbatch_argc = sargc, .sbatch_argv = sargv };
	struct drv_specset set;
	struct drv_diags d;
	int32_t i, w;
	int rc;

	drv_specset_init(&set);
	drv_diags_init(&d, path);
	rc = drv_spec_parse_all(buf, len, path, &opts, &set, &d);
	drv_diags_print(&d, stderr);
	if (rc || d.nerrors) {
		drv_diags_release(&d);
		drv_specset_release(&set);
		return DRV_EXIT_USAGE;
	}
	for (i = 0; i < set.njobs; i++)
		for (w = 0; w < set.jobs[i].nwarnings; w++)
			fprintf(stderr, "%s: warning: %s\n", path, set.jobs[i].warnings[w]);
	if (json) {
		json_t *out;
		char *txt;
		if (set.njobs == 1) {
			out = drv_jobspec_to_json(&set.jobs[0]);
		} else {
			out = json_array();
			for (i = 0; i < set.njobs; i++)
				json_array_append_new(out, drv_jobspec_to_json(&set.jobs[i]));
		}
		txt = json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("%s\n", txt);
		free(txt);
		json_decref(out);
	} else {
		for (i = 0; i < set.njobs; i++)
			print_job_text(path, &set.jobs[i]);
		for (i = 0; i < set.nclasses; i++)
			printf("%s: PriorityClass %s = %d\n", path, set.classes[i].name,
			       (int)set.classes[i].value);
	}
	drv_diags_release(&d);
	drv_specset_release(&set);
	return DRV_EXIT_OK;
}

/*
 * The options before FILE; FILE and what follows it are left in argv[0..n-1]
 * (sbatch options, a face of sbatch's own: not parsed here), less any
 * --json among them. Returns n, or DRV_OPTS_HELP / DRV_OPTS_ERROR.
 */
static int parse_args(int argc, char **argv, bool *json)
{
	const struct drv_option table[] = {
		DRV_OPT_FLAG(0, "json", json,
			     "print the summary (cluster) or canonical JSON job (jobs)"),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover validate",
		.usage = "drover validate [--json] FILE [SBATCH-OPTIONS...]",
		.about = "Checks a cluster file or a job file (Kubernetes manifest, Slurm batch "
			 "script, drover JSON job; told apart by content) and prints a summary, "
			 "or every error as file:line:col or field path (exit 2). Warnings go to "
			 "stderr. Options after FILE are sbatch options that win over the "
			 "script's #SBATCH lines.",
		.options = table,
		.args_max = DRV_OPTS_ANY_ARGS,
		.flags = DRV_OPTS_STOP_AT_ARG,
	};
	int n = drv_opts_parse(&cmd, argc, argv), i, k = 0;

	if (n == 0) {
		drv_opts_usage_error(&cmd, "which file?");
		return DRV_OPTS_ERROR;
	}
	for (i = 0; i < n; i++) {
		if (i > 0 && !strcmp(argv[i], "--json"))
			*json = true;
		else
			argv[k++] = argv[i];
	}
	return n < 0 ? n : k;
}

int cmd_validate(int argc, char **argv)
{
	const char *path;
	bool json = false;
	char *buf;
	size_t len;
	int rc, n;

	n = parse_args(argc, argv, &json);
	if (n < 0)
		return drv_opts_exit(n);
	path = argv[0];
	if (drv_file_read(path, (size_t)256 << 20, &buf, &len) < 0) {
		fprintf(stderr, "%s: cannot read: %s\n", path, strerror(errno));
		return DRV_EXIT_USAGE;
	}
	if (n > 1 && drv_spec_sniff(buf, len) != DRV_FMT_SBATCH) {
		fprintf(stderr, "drover validate: %s is not a batch script; options after it (%s) "
			"are sbatch options\n", path, argv[1]);
		drv_free(buf);
		return DRV_EXIT_USAGE;
	}
	if (drv_spec_sniff(buf, len) == DRV_FMT_CLUSTER)
		rc = validate_cluster(path, buf, len, json);
	else
		rc = validate_job(path, buf, len, json, n - 1, argv + 1);
	drv_free(buf);
	return rc;
}
