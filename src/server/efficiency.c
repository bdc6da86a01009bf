/*
 * efficiency.c: a job's efficiency, the line users read at the end of a
 * run (Slurm's seff, site jobstats tools): GPU utilisation and framebuffer
 * high-water mark per GPU and in all, CPU efficiency (CPU time over the
 * CPUs allocated times the time they were held) and memory efficiency (the
 * high-water mark over the request), from what the agents report of each
 * task (include/drover/proto.h, struct drv_proto_usage). The figures live
 * on the tasks (srv_task.usage, in the job's stored record), so a finished
 * job keeps them, and each accounting row carries its attempt's
 * (state.c, srv_acct_row). Keys: docs/api.md, "efficiency".
 */
#include "server_int.h"

#include <math.h>

void srv_task_set_usage(struct srv_task *t, const struct drv_proto_usage *u)
{
	if (!u)
		return;
	json_decref(t->usage);
	t->usage = drv_proto_usage_encode(u);
}

void srv_task_set_container(struct srv_task *t, const struct drv_proto_container *c)
{
	const char *k[] = { "name", "command", "image_pull" };
	const char *v[] = { c->name, c->command, c->image_pull };

	if (!c->name && !c->command && !c->image_pull)
		return;
	if (!t->container)
		t->container = json_object();
	for (size_t i = 0; i < DRV_ARRAY_SIZE(k); i++)
		if (v[i])
			json_object_set_new(t->container, k[i], json_string(v[i]));
}

static json_t *num_or_null(double v, bool known)
{
	return known ? json_real(round(v * 100.0) / 100.0) : json_null();
}

static json_t *int_or_null(int64_t v)
{
	return v >= 0 ? json_integer((json_int_t)v) : json_null();
}

struct eff {
	double util_w, cpu_s, cpu_alloc_s, cpus, mem_eff;
	int64_t samples, gmem_max, mem_max, mem_req, elapsed;
	bool any, cpu_known, cpu_unrequested;
	json_t *gpus;
};

/* Task t (rank r) of job j into e. */
static void add_task(struct drv_server *s, const struct srv_task *t, int32_t r, int64_t now,
		     struct eff *e)
{
	const json_t *u = t->usage, *g;
	int64_t end = t->end_time ? t->end_time : now;
	int64_t el = t->start_time && end > t->start_time ? end - t->start_time : 0;
	double cpu = drv_json_num(u, "cpu_s", -1);
	int64_t mem = drv_json_int(u, "mem_max_mib", -1);
	size_t k;

	e->any = true;
	e->elapsed = DRV_MAX(e->elapsed, el);
	e->cpus += (double)t->cpu_milli / 1000.0;
	if (cpu >= 0) {
		e->cpu_known = true;
		e->cpu_s += cpu;
		if (t->cpu_milli > 0)
			e->cpu_alloc_s += (double)t->cpu_milli / 1000.0 * (double)el;
		else
			e->cpu_unrequested = true;
	}
	if (mem >= 0) {
		e->mem_max = DRV_MAX(e->mem_max, mem);
		if (t->mem_mib > 0)
			e->mem_eff = DRV_MAX(e->mem_eff, 100.0 * (double)mem / (double)t->mem_mib);
	}
	e->mem_req = DRV_MAX(e->mem_req, t->mem_mib > 0 ? t->mem_mib : -1);
	json_array_foreach(json_object_get(u, "gpus"), k, g) {
		double util = drv_json_num(g, "util_pct", 0);
		int64_t n = drv_json_int(g, "samples", 0), gm = drv_json_int(g, "mem_max_mib", -1);

		e->util_w += util * (double)n;
		e->samples += n;
		e->gmem_max = DRV_MAX(e->gmem_max, gm);
		json_array_append_new(e->gpus, json_pack("{s:s,s:i,s:I,s:o,s:o}", "node",
			s->nodes[t->node].name, "rank", r, "gpu",
			(json_int_t)drv_json_int(g, "gpu", 0), "util_pct", num_or_null(util, n > 0),
			"mem_max_mib", int_or_null(gm)));
	}
}

json_t *srv_job_efficiency(struct drv_server *s, struct srv_job *j, int64_t now)
{
	struct eff e = { .mem_eff = -1, .gmem_max = -1, .mem_max = -1, .mem_req = -1,
			 .gpus = json_array() };
	json_t *o;

	for (int32_t r = 0; r < j->ntasks; r++)
		if (j->tasks[r].usage)
			add_task(s, &j->tasks[r], r, now, &e);
	if (!e.any) {
		json_decref(e.gpus);
		return NULL;
	}
	o = json_object();
	json_object_set_new(o, "gpu_util_pct", num_or_null(e.util_w / (double)DRV_MAX(e.samples, 1),
							  e.samples > 0));
	json_object_set_new(o, "gpu_mem_max_mib", int_or_null(e.gmem_max));
	json_object_set_new(o, "gpus", e.gpus);
	json_object_set_new(o, "cpu_s", num_or_null(e.cpu_s, e.cpu_known));
	json_object_set_new(o, "cpus", num_or_null(e.cpus, true));
	json_object_set_new(o, "elapsed_s", json_integer((json_int_t)e.elapsed));
	json_object_set_new(o, "cpu_efficiency_pct",
			    num_or_null(100.0 * e.cpu_s / (e.cpu_alloc_s > 0 ? e.cpu_alloc_s : 1),
					e.cpu_known && !e.cpu_unrequested && e.cpu_alloc_s > 0));
	json_object_set_new(o, "mem_max_mib", int_or_null(e.mem_max));
	json_object_set_new(o, "mem_request_mib", int_or_null(e.mem_req));
	json_object_set_new(o, "mem_efficiency_pct", num_or_null(e.mem_eff, e.mem_eff >= 0));
	return o;
}
