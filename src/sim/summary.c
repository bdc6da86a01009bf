/*
 * summary.c: what a simulation run writes: the JSON summary (jansson) and
 * the per-run CSV (--jobs-out), one row per run of a job, with enough in
 * it (times, every task's node and GPUs) to check the schedule
 * independently of drover.
 */
#include "drover/sim.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

const char *drv_sim_outcome_name(enum drv_sim_outcome o)
{
	switch (o) {
	case DRV_SIM_COMPLETED:
		return "completed";
	case DRV_SIM_PREEMPTED:
		return "preempted";
	case DRV_SIM_FAILED:
		return "failed";
	case DRV_SIM_RUNNING:
		return "running";
	case DRV_SIM_NEVER:
		return "pending";
	case DRV_SIM_REJECTED:
		return "rejected";
	case DRV_SIM_TIMEOUT:
		return "timed_out";
	}
	return "unknown";
}

void drv_sim_result_init(struct drv_sim_result *r)
{
	memset(r, 0, sizeof(*r));
}

void drv_sim_result_release(struct drv_sim_result *r)
{
	size_t i;
	for (i = 0; i < r->nruns; i++)
		drv_placement_release(&r->runs[i].place);
	drv_free(r->runs);
	drv_free(r->samples);
	drv_free(r->tenants);
	memset(r, 0, sizeof(*r));
}

/* Rounded to 3 decimals, so the JSON shows 13135.931, not 17 digits. */
static json_t *num3(double x)
{
	if (!isfinite(x))
		return json_real(0);
	return json_real(round(x * 1000.0) / 1000.0);
}

int drv_sim_write_json(FILE *f, const struct drv_sim_workload *w, const struct drv_sim_result *r,
		       const char *config_json)
{
	const struct drv_sim_summary *s = &r->sum;
	json_t *o = json_object(), *lit, *ten;
	int32_t t;
	int rc = 0;

	json_object_set_new(o, "jobs", json_integer(s->jobs));
	json_object_set_new(o, "completed", json_integer(s->completed));
	json_object_set_new(o, "rejected", json_integer(s->rejected));
	json_object_set_new(o, "malformed", json_integer(s->malformed));
	json_object_set_new(o, "never_started", json_integer(s->never_started));
	json_object_set_new(o, "services", json_integer(s->services));
	json_object_set_new(o, "avg_jct_s", num3(s->avg_jct_s));
	json_object_set_new(o, "p50_jct_s", num3(s->p50_jct_s));
	json_object_set_new(o, "p99_jct_s", num3(s->p99_jct_s));
	json_object_set_new(o, "avg_wait_s", num3(s->avg_wait_s));
	json_object_set_new(o, "p99_wait_s", num3(s->p99_wait_s));
	json_object_set_new(o, "makespan_s", json_integer(s->makespan_s));
	json_object_set_new(o, "gpu_alloc_ratio", json_real(round(s->gpu_alloc_ratio * 1e6) / 1e6));
	json_object_set_new(o, "preemptions", json_integer(s->preemptions));
	json_object_set_new(o, "failures", json_integer(s->failures));
	json_object_set_new(o, "requeues", json_integer(s->requeues));
	json_object_set_new(o, "lost_gpu_hours", num3(s->lost_gpu_hours));
	json_object_set_new(o, "cost_usd", json_real(round(s->cost_usd * 100.0) / 100.0));
	json_object_set_new(o, "events", json_integer(s->events));
	json_object_set_new(o, "passes", json_integer(s->passes));
	json_object_set_new(o, "sim_wall_s", num3(s->sim_wall_s));
	lit = json_object();
	json_object_set_new(lit, "mean_jobs_in_system", num3(s->mean_in_system));
	json_object_set_new(lit, "arrival_rate_per_s", json_real(s->arrival_rate));
	json_object_set_new(lit, "mean_time_in_system_s", num3(s->mean_sojourn_s));
	json_object_set_new(lit, "lambda_times_w", num3(s->arrival_rate * s->mean_sojourn_s));
	json_object_set_new(o, "littles_law", lit);
	ten = json_object();
	for (t = 0; w && t < r->ntenants && t < w->ntenants; t++) {
		const struct drv_sim_tenant_sum *ts = &r->tenants[t];
		json_t *x = json_object();
		json_object_set_new(x, "jobs", json_integer(ts->jobs));
		json_object_set_new(x, "completed", json_integer(ts->completed));
		json_object_set_new(x, "rejected", json_integer(ts->rejected));
		json_object_set_new(x, "never_started", json_integer(ts->never_started));
		json_object_set_new(x, "preempted", json_integer(ts->preempted));
		json_object_set_new(x, "avg_wait_s", num3(ts->avg_wait_s));
		json_object_set_new(x, "p99_wait_s", num3(ts->p99_wait_s));
		json_object_set_new(x, "avg_jct_s", num3(ts->avg_jct_s));
		json_object_set_new(x, "gpu_hours", num3(ts->gpu_hours));
		json_object_set_new(x, "avg_gpus", num3(ts->avg_gpus));
		json_object_set_new(x, "peak_gpus", num3(ts->peak_gpus));
		if (ts->quota_gpus >= 0)
			json_object_set_new(x, "quota_gpus", num3(ts->quota_gpus));
		json_object_set_new(ten, w->tenants[t], x);
	}
	json_object_set_new(o, "tenants", ten);
	if (config_json) {
		json_t *cfg = json_loads(config_json, 0, NULL);
		if (cfg)
			json_object_set_new(o, "config", cfg);
	}
	if (json_dumpf(o, f, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) < 0)
		rc = DRV_EIO;
	fputc('\n', f);
	json_decref(o);
	if (ferror(f))
		rc = DRV_EIO;
	return rc;
}

/* Writes s as one CSV field, quoted when it holds a comma or a quote. */
static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

int drv_sim_write_jobs(FILE *f, const struct drv_cluster *c, const struct drv_sim_workload *w,
		       const struct drv_sim_result *r)
{
	char *buf = NULL;
	size_t bcap = 0, i;

	fprintf(f, "job,attempt,tenant,submit_s,start_s,end_s,gpus,gpu_milli,tasks,placement,"
		   "preempted,cost_usd,outcome,priority,reason,priority_class\n");
	for (i = 0; i < r->nruns; i++) {
		const struct drv_sim_run *run = &r->runs[i];
		const struct drv_sim_job *sj = &w->jobs[run->job];
		const struct drv_job *j = &sj->job;
		int64_t whole = 0;
		int32_t milli = 1000, g;
		size_t need;

		for (g = 0; g < j->ngroups; g++)
			whole += (int64_t)j->groups[g].count *
				 (j->groups[g].gpus ? j->groups[g].gpus : (j->groups[g].gpu_milli ? 1 : 0));
		for (g = 0; g < j->ngroups; g++)
			if (j->groups[g].gpu_milli) {
				milli = j->groups[g].gpu_milli;
				break;
			}
		csv_field(f, j->name);
		fprintf(f, ",%d,", run->attempt);
		csv_field(f, j->tenant ? j->tenant : "");
		fprintf(f, ",%lld,", (long long)j->submit_time);
		if (run->start >= 0)
			fprintf(f, "%lld", (long long)run->start);
		fputc(',', f);
		if (run->end >= 0)
			fprintf(f, "%lld", (long long)run->end);
		fprintf(f, ",%lld,%d,%d,", (long long)whole, milli, drv_job_tasks(j));
		if (run->place.ntasks) {
			need = drv_placement_format(c, &run->place, buf, bcap);
			if (need + 1 > bcap) {
				bcap = need + 64;
				buf = drv_realloc(buf, bcap);
				drv_placement_format(c, &run->place, buf, bcap);
			}
			csv_field(f, buf);
		}
		fprintf(f, ",%d,%.6f,%s,%d,", run->outcome == DRV_SIM_PREEMPTED ? 1 : 0,
			(double)run->cost_micro / 1e6, drv_sim_outcome_name(run->outcome),
			j->priority);
		if (run->outcome == DRV_SIM_REJECTED && sj->reject)
			csv_field(f, sj->reject);
		fputc(',', f);
		if (sj->pclass >= 0)
			fputs(w->classes[sj->pclass], f);
		fputc('\n', f);
	}
	drv_free(buf);
	return ferror(f) ? DRV_EIO : 0;
}
