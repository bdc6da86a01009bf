/*
 * cmd_place.c: 'drover place --cluster FILE [JOBFILE | job flags]': loads a
 * cluster file, builds the job from a job file (any format the spec parser
 * reads) or from flags, asks the placement engine and prints one line per
 * task, "node:gpu,gpu", or the one-line reason it does not fit (exit 1).
 * Bad input exits 2.
 */
#include "drover/clusterfile.h"
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/diag.h"
#include "drover/model.h"
#include "drover/spec.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: drover place --cluster FILE [options] [JOBFILE]\n"
		"  Places a job on an empty cluster and prints one line per task,\n"
		"  node:gpu,gpu, or the reason it does not fit (exit 1).\n"
		"  JOBFILE           a job file (Kubernetes, Slurm, drover JSON); or build one:\n"
		"  --tasks N         tasks in the gang (default 1)\n"
		"  --gpus N          whole GPUs per task\n"
		"  --gpu-milli M     a share of one GPU per task, 1..999 (instead of --gpus)\n"
		"  --gpu-mem MIB     GPU memory per task (fractional tasks)\n"
		"  --cpu CORES       CPUs per task\n"
		"  --model NAME      GPU model (H100, h100, NVIDIA-H100-80GB-HBM3, ...)\n"
		"  --require LEVEL   all tasks under one LEVEL (nvlink-domain, node, leaf, ...)\n"
		"  --prefer LEVEL    the same, when possible\n"
		"  --region R        allowed region (repeatable)\n"
		"  --strategy S      bestfit (default) or fgd\n"
		"  --json            print the placement as JSON\n");
}

static bool parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

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

int cmd_place(int argc, char **argv)
{
	const char *cluster_path = NULL, *job_path = NULL, *model = NULL, *require = NULL,
		   *prefer = NULL, *strategy = "bestfit";
	const char *regions[16];
	int nregions = 0;
	long tasks = 1, gpus = -1, milli = 0, gpu_mem = 0, cpu = 0;
	bool json = false, flags_used = false, have_cluster = false, have_spec = false;
	struct drv_cluster c;
	struct drv_jobspec spec;
	struct drv_job own, *job = NULL;
	struct drv_placement p;
	struct drv_place_opts opts;
	struct drv_diags d;
	char reason[512];
	int i, rc = DRV_EXIT_USAGE;

	drv_job_init(&own);
	drv_placement_init(&p);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = !strcmp(a, "--cluster") || !strcmp(a, "--tasks") || !strcmp(a, "--gpus") ||
			     !strcmp(a, "--gpu-milli") || !strcmp(a, "--model") ||
			     !strcmp(a, "--require") || !strcmp(a, "--prefer") ||
			     !strcmp(a, "--region") || !strcmp(a, "--strategy") ||
			     !strcmp(a, "--gpu-mem") || !strcmp(a, "--cpu");
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return DRV_EXIT_OK;
		}
		if (!strcmp(a, "--json")) {
			json = true;
			continue;
		}
		if (takes && !v) {
			fprintf(stderr, "drover place: %s needs a value\n", a);
			return DRV_EXIT_USAGE;
		}
		if (!strcmp(a, "--cluster")) {
			cluster_path = v;
		} else if (!strcmp(a, "--tasks")) {
			if (!parse_int(v, 1, 100000, &tasks)) {
				fprintf(stderr, "drover place: --tasks: found '%s', expected 1..100000\n", v);
				return DRV_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--gpus")) {
			if (!parse_int(v, 0, DRV_MAX_NODE_GPUS, &gpus)) {
				fprintf(stderr, "drover place: --gpus: found '%s', expected 0..%d per task\n",
					v, DRV_MAX_NODE_GPUS);
				return DRV_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--gpu-milli")) {
			if (!parse_int(v, 1, 999, &milli)) {
				fprintf(stderr, "drover place: --gpu-milli: found '%s', expected 1..999\n", v);
				return DRV_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--gpu-mem")) {
			if (!parse_int(v, 1, 1 << 24, &gpu_mem)) {
				fprintf(stderr, "drover place: --gpu-mem: found '%s', expected MiB\n", v);
				return DRV_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--cpu")) {
			if (!parse_int(v, 0, 1 << 20, &cpu)) {
				fprintf(stderr, "drover place: --cpu: found '%s', expected a core count\n", v);
				return DRV_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--model")) {
			model = v;
		} else if (!strcmp(a, "--require")) {
			require = v;
		} else if (!strcmp(a, "--prefer")) {
			prefer = v;
		} else if (!strcmp(a, "--region")) {
			if (nregions >= (int)DRV_ARRAY_SIZE(regions)) {
				fprintf(stderr, "drover place: too many --region\n");
				return DRV_EXIT_USAGE;
			}
			regions[nregions++] = v;
		} else if (!strcmp(a, "--strategy")) {
			strategy = v;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "drover place: unknown option %s\n", a);
			usage(stderr);
			return DRV_EXIT_USAGE;
		} else if (!job_path) {
			job_path = a;
			continue;
		} else {
			fprintf(stderr, "drover place: one job file at a time\n");
			return DRV_EXIT_USAGE;
		}
		if (takes)
			i++;
		if (strcmp(a, "--cluster") && strcmp(a, "--strategy") && strcmp(a, "--region") &&
		    strcmp(a, "--require") && strcmp(a, "--prefer"))
			flags_used = true;
	}
	if (!cluster_path) {
		fprintf(stderr, "drover place: --cluster FILE is required\n");
		usage(stderr);
		return DRV_EXIT_USAGE;
	}
	if (job_path && flags_used) {
		fprintf(stderr, "drover place: give a job file or --gpus/--tasks/..., not both\n");
		return DRV_EXIT_USAGE;
	}
	if (!job_path && gpus < 0 && !milli) {
		fprintf(stderr, "drover place: give a job file, or --gpus N or --gpu-milli M\n");
		usage(stderr);
		return DRV_EXIT_USAGE;
	}
	if (gpus > 0 && milli) {
		fprintf(stderr, "drover place: --gpus and --gpu-milli exclude each other\n");
		return DRV_EXIT_USAGE;
	}
	if (require && prefer) {
		fprintf(stderr, "drover place: --require and --prefer exclude each other\n");
		return DRV_EXIT_USAGE;
	}
	memset(&opts, 0, sizeof(opts));
	if (!strcmp(strategy, "bestfit") || !strcmp(strategy, "best-fit"))
		opts.strategy = DRV_PLACE_BESTFIT;
	else if (!strcmp(strategy, "fgd"))
		opts.strategy = DRV_PLACE_FGD;
	else {
		fprintf(stderr, "drover place: --strategy: found '%s', expected bestfit or fgd\n",
			strategy);
		return DRV_EXIT_USAGE;
	}

	drv_diags_init(&d, cluster_path);
	if (drv_cluster_load_file(cluster_path, &c, &d)) {
		drv_diags_print(&d, stderr);
		drv_diags_release(&d);
		goto out;
	}
	drv_diags_release(&d);
	have_cluster = true;

	if (job_path) {
		drv_jobspec_init(&spec);
		have_spec = true;
		drv_diags_init(&d, job_path);
		if (drv_spec_load_file(job_path, &spec, &d)) {
			drv_diags_print(&d, stderr);
			drv_diags_release(&d);
			goto out;
		}
		drv_diags_release(&d);
		job = &spec.job;
	} else {
		struct drv_task_group *g = drv_job_add_group(&own, "task", (int32_t)tasks,
							     gpus > 0 ? (int32_t)gpus : 0,
							     (int32_t)milli);
		g->gpu_mem_mib = (int32_t)gpu_mem;
		g->cpu_milli = cpu * 1000;
		job = &own;
		if (model) {
			int m = drv_gpu_model_find(model);
			if (m < 0) {
				fprintf(stderr, "drover place: --model: unknown GPU model '%s'\n", model);
				goto out;
			}
			g->model = (int8_t)m;
		}
	}
	/* Flags that refine a job file too: topology and regions. */
	if (require)
		drv_job_set_topology(job, DRV_TOPO_REQUIRED, require);
	else if (prefer)
		drv_job_set_topology(job, DRV_TOPO_PREFERRED, prefer);
	for (i = 0; i < nregions; i++)
		drv_job_add_region(job, regions[i]);
	if (job->topo_mode != DRV_TOPO_NONE && drv_cluster_level(&c, job->topo_level) < 0) {
		char lv[256];
		size_t len = 0;
		int l;
		lv[0] = 0;
		for (l = 0; l < c.nlevels; l++) {
			int k = snprintf(lv + len, sizeof(lv) - len, "%s, ", c.levels[l]);
			if (k > 0 && (size_t)k < sizeof(lv) - len)
				len += (size_t)k;
		}
		fprintf(stderr, "drover place: level '%s': found no such level in %s; expected one of: %snvlink-domain\n",
			job->topo_level, cluster_path, lv);
		goto out;
	}

	rc = drv_place(&c, job, &opts, &p, reason, sizeof(reason));
	if (rc == DRV_EINVAL) {
		fprintf(stderr, "drover place: invalid job: %s\n", reason);
		rc = DRV_EXIT_USAGE;
		goto out;
	}
	if (json) {
		rc = print_json(&c, job, &p, rc ? reason : NULL);
		goto out;
	}
	if (rc) {
		printf("does not fit: %s\n", reason);
		rc = DRV_EXIT_FAIL;
		goto out;
	}
	for (i = 0; i < p.ntasks; i++) {
		struct drv_placement one = { &p.tasks[i], 1, 1 };
		char line[1024];
		drv_placement_format(&c, &one, line, sizeof(line));
		printf("%s\n", line);
	}
	rc = DRV_EXIT_OK;
out:
	drv_placement_release(&p);
	drv_job_release(&own);
	if (have_spec)
		drv_jobspec_release(&spec);
	if (have_cluster)
		drv_cluster_release(&c);
	return rc;
}
