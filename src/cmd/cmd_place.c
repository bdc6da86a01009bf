/*
 * cmd_place.c: 'drover place --cluster FILE [JOBFILE | job options]': loads
 * a cluster file, builds the job from a job file (any format the spec parser
 * reads) or from options (one table, include/drover/options.h), asks the
 * placement engine and prints one line per task, "node:gpu,gpu", or the
 * one-line reason it does not fit (exit 1). Bad input exits 2.
 */
#include "drover/bench.h"
#include "drover/clusterfile.h"
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/diag.h"
#include "drover/model.h"
#include "drover/options.h"
#include "drover/sched.h"
#include "drover/spec.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int print_json(const struct drv_cluster *c, const struct drv_job *job,
		      const struct drv_placement *p, const char *reason)
{
	json_t *o = json_object();
	char *txt;
	int32_t i;

	json_object_set_new(o, "fits", json_boolean(reason == NULL));
	if (reason) {
		json_object_set_new(o, "reason", json_string(reason));
	} else {
		json_t *tasks = json_array();
		for (i = 0; i < p->ntasks; i++) {
			const struct drv_task_place *t = &p->tasks[i];
			json_t *to = json_object(), *g = json_array();
			uint64_t m;
			const char *gname = job->groups[t->group].name;
			json_object_set_new(to, "group", json_string(gname ? gname : ""));
			json_object_set_new(to, "node", json_string(c->nodes[t->node].name));
			for (m = t->gpu_mask; m; m &= m - 1)
				json_array_append_new(g, json_integer(__builtin_ctzll(m)));
			json_object_set_new(to, "gpus", g);
			json_object_set_new(to, "gpu_milli", json_integer(t->gpu_milli));
			json_array_append_new(tasks, to);
		}
		json_object_set_new(o, "tasks", tasks);
	}
	txt = json_dumps(o, JSON_PRESERVE_ORDER);
	printf("%s\n", txt);
	free(txt);
	json_decref(o);
	return reason ? DRV_EXIT_FAIL : DRV_EXIT_OK;
}

/* What the command line says. -1 (or 0 where 0 is not allowed) is unset. */
struct place_args {
	const char *cluster, *job_path, *model, *require, *prefer;
	const char *regions[16];
	struct drv_opt_list region_list;
	int strategy, tasks, gpus, milli, gpu_mem, cpu;
	bool json;
};

/* The options that go together; 0 or exit code 2. */
static int check_args(const struct drv_opts *cmd, const struct place_args *a)
{
	bool job_flags = a->tasks >= 0 || a->gpus >= 0 || a->milli || a->gpu_mem ||
			 a->cpu >= 0 || a->model;

	if (a->job_path && job_flags)
		return drv_opts_usage_error(cmd, "give a job file or --gpus/--tasks/..., not both");
	if (!a->job_path && a->gpus < 0 && !a->milli)
		return drv_opts_usage_error(cmd, "give a job file, or --gpus N or --gpu-milli M");
	if (a->gpus > 0 && a->milli)
		return drv_opts_usage_error(cmd, "--gpus and --gpu-milli exclude each other");
	if (a->require && a->prefer)
		return drv_opts_usage_error(cmd, "--require and --prefer exclude each other");
	return 0;
}

/* 0, DRV_OPTS_HELP, or exit code 2 after printing why. */
static int parse_args(int argc, char **argv, struct place_args *a)
{
	const struct drv_option table[] = {
		DRV_OPT_STRING(0, "cluster", &a->cluster, "FILE", "the cluster file",
			       .flags = DRV_OPTF_REQUIRED),
		DRV_OPT_GROUP("the job, when there is no JOBFILE"),
		DRV_OPT_INT(0, "tasks", &a->tasks, 1, 100000, "N", "tasks in the gang (default 1)"),
		DRV_OPT_INT(0, "gpus", &a->gpus, 0, DRV_MAX_NODE_GPUS, "N", "whole GPUs per task"),
		DRV_OPT_INT(0, "gpu-milli", &a->milli, 1, 999, "M",
			    "a share of one GPU per task, 1..999 (instead of --gpus)"),
		DRV_OPT_INT(0, "gpu-mem", &a->gpu_mem, 1, 1 << 24, "MIB",
			    "GPU memory per task (fractional tasks)",
			    .expect = "MiB from 1 to 16777216"),
		DRV_OPT_INT(0, "cpu", &a->cpu, 0, 1 << 20, "CORES", "CPUs per task",
			    .expect = "a core count from 0 to 1048576"),
		DRV_OPT_STRING(0, "model", &a->model, "NAME",
			       "GPU model (H100, h100, NVIDIA-H100-80GB-HBM3, ...)"),
		DRV_OPT_GROUP("placement (a JOBFILE's too)"),
		DRV_OPT_STRING(0, "require", &a->require, "LEVEL",
			       "all tasks under one LEVEL (nvlink-domain, node, leaf, ...)"),
		DRV_OPT_STRING(0, "prefer", &a->prefer, "LEVEL", "the same, when possible"),
		DRV_OPT_LIST(0, "region", &a->region_list, "R", "allowed region (repeatable)"),
		DRV_OPT_ENUM(0, "placement", &a->strategy, drv_place_choices,
			     "the placement scorer (default " DRV_PLACE_DEFAULT_NAME ")"),
		DRV_OPT_ENUM(0, "strategy", &a->strategy, drv_place_choices,
			     "the same as --placement (its older name)"),
		DRV_OPT_GROUP("output"),
		DRV_OPT_FLAG(0, "json", &a->json, "print the placement as JSON"),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover place",
		.usage = "drover place --cluster FILE [options] [JOBFILE]",
		.about = "Places a job on an empty cluster and prints one line per task, "
			 "node:gpu,gpu, or the reason it does not fit (exit 1). JOBFILE is a "
			 "job file (Kubernetes, Slurm, drover JSON); or build one with the "
			 "options.",
		.options = table,
		.args_max = 1,
	};
	int n;

	memset(a, 0, sizeof(*a));
	a->region_list = (struct drv_opt_list){ a->regions, (int)DRV_ARRAY_SIZE(a->regions), 0 };
	a->strategy = DRV_PLACE_DEFAULT;
	a->tasks = a->gpus = a->cpu = -1;
	n = drv_opts_parse(&cmd, argc, argv);
	if (n < 0)
		return n == DRV_OPTS_HELP ? n : DRV_EXIT_USAGE;
	a->job_path = n ? argv[0] : NULL;
	return check_args(&cmd, a);
}

/* The job from the options; 0 or exit code 2. */
static int job_from_args(const struct place_args *a, struct drv_job *job)
{
	struct drv_task_group *g =
		drv_job_add_group(job, "task", a->tasks > 0 ? a->tasks : 1,
				  a->gpus > 0 ? a->gpus : 0, a->milli);
	int m;

	g->gpu_mem_mib = a->gpu_mem;
	g->cpu_milli = a->cpu > 0 ? a->cpu * 1000LL : 0;
	if (a->model) {
		m = drv_gpu_model_find(a->model);
		if (m < 0) {
			fprintf(stderr, "drover place: --model: unknown GPU model '%s'\n", a->model);
			return DRV_EXIT_USAGE;
		}
		g->model = (int8_t)m;
	}
	return 0;
}

/* A topology level the cluster lacks: say which it has; 0 or exit code 2. */
static int check_level(const struct drv_cluster *c, const struct drv_job *job,
		       const char *cluster_path)
{
	char lv[256];
	size_t len = 0;
	const char *bad = job->topo_mode != DRV_TOPO_NONE &&
			  drv_cluster_level(c, job->topo_level) < 0 ? job->topo_level :
			  job->slice_size > 0 && drv_cluster_level(c, job->slice_level) < 0 ?
			  job->slice_level : NULL;
	int l, k;

	if (!bad)
		return 0;
	lv[0] = 0;
	for (l = 0; l < c->nlevels; l++) {
		k = snprintf(lv + len, sizeof(lv) - len, "%s, ", c->levels[l]);
		if (k > 0 && (size_t)k < sizeof(lv) - len)
			len += (size_t)k;
	}
	fprintf(stderr, "drover place: level '%s': found no such level in %s; expected one of: "
			"%snvlink-domain\n", bad, cluster_path, lv);
	return DRV_EXIT_USAGE;
}

/* A job that can never fit the cluster: the reason into buf, in the words
 * the server and the simulator use (drv_capacity_check); false when none. */
static bool never_fits(const struct drv_cluster *c, const struct drv_job *job, char *buf,
		       size_t n)
{
	struct drv_capacity *cap = drv_capacity_new();
	struct drv_sched_decision w;
	bool never;

	drv_capacity_build(cap, c, NULL, NULL);
	never = drv_capacity_check(cap, c, job, &w) != 0;
	if (never)
		drv_sched_reason_text(c, &w, 0, buf, n);
	drv_capacity_free(cap);
	return never;
}

/* Places job and prints the lines or the JSON; an exit code. */
static int place_and_print(const struct place_args *a, const struct drv_cluster *c,
			   const struct drv_job *job)
{
	struct drv_place_opts opts = { .strategy = (enum drv_place_strategy)a->strategy };
	struct drv_place_mix mix;
	struct drv_placement p;
	char reason[512], line[1024];
	int32_t i;
	int rc;

	/* the workload seen is this job, as a scheduler sees it on submit */
	drv_place_mix_init(&mix, 0);
	drv_place_mix_observe(&mix, job);
	opts.mix = &mix;
	drv_placement_init(&p);
	rc = never_fits(c, job, reason, sizeof(reason)) ? DRV_ENOSPACE :
		drv_place(c, job, &opts, &p, reason, sizeof(reason));
	if (rc == DRV_EINVAL) {
		fprintf(stderr, "drover place: invalid job: %s\n", reason);
		rc = DRV_EXIT_USAGE;
	} else if (a->json) {
		rc = print_json(c, job, &p, rc ? reason : NULL);
	} else if (rc) {
		printf("does not fit: %s\n", reason);
		rc = DRV_EXIT_FAIL;
	} else {
		for (i = 0; i < p.ntasks; i++) {
			struct drv_placement one = { &p.tasks[i], 1, 1 };
			drv_placement_format(c, &one, line, sizeof(line));
			printf("%s\n", line);
		}
		rc = DRV_EXIT_OK;
	}
	drv_placement_release(&p);
	return rc;
}

/* Loads path into spec (diagnostics printed); 0 or exit code 2. */
static int load(const char *path, bool cluster, struct drv_cluster *c, struct drv_jobspec *spec)
{
	struct drv_diags d;
	int rc;

	drv_diags_init(&d, path);
	rc = cluster ? drv_cluster_load_file(path, c, &d) : drv_spec_load_file(path, spec, &d);
	if (rc)
		drv_diags_print(&d, stderr);
	drv_diags_release(&d);
	for (int32_t g = 0; !rc && !cluster && g < spec->job.ngroups; g++) {
		if (!spec->run[g].gpu_model_name)
			continue;
		/* the core knows the catalog's models only: none of its nodes has this one */
		fprintf(stderr, "%s: error: needs GPU model %s, which is not in drover's catalog; "
			"no node of a cluster has it\n", path, spec->run[g].gpu_model_name);
		return DRV_EXIT_USAGE;
	}
	return rc ? DRV_EXIT_USAGE : 0;
}

int cmd_place(int argc, char **argv)
{
	struct place_args a;
	struct drv_cluster c;
	struct drv_jobspec spec;
	struct drv_job own, *job = &own;
	bool have_cluster = false;
	int i, rc;

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc == DRV_OPTS_HELP ? DRV_EXIT_OK : rc;
	drv_job_init(&own);
	drv_jobspec_init(&spec);
	rc = load(a.cluster, true, &c, NULL);
	if (rc)
		goto out;
	have_cluster = true;
	if (a.job_path) {
		rc = load(a.job_path, false, NULL, &spec);
		job = &spec.job;
	} else {
		rc = job_from_args(&a, &own);
	}
	if (rc)
		goto out;
	/* Options that refine a job file too: topology and regions. */
	if (a.require)
		drv_job_set_topology(job, DRV_TOPO_REQUIRED, a.require);
	else if (a.prefer)
		drv_job_set_topology(job, DRV_TOPO_PREFERRED, a.prefer);
	for (i = 0; i < a.region_list.n; i++)
		drv_job_add_region(job, a.regions[i]);
	rc = check_level(&c, job, a.cluster);
	if (!rc)
		rc = place_and_print(&a, &c, job);
out:
	drv_job_release(&own);
	drv_jobspec_release(&spec);
	if (have_cluster)
		drv_cluster_release(&c);
	return rc;
}
