/*
 * gen.c: synthetic workloads for the simulator.
 *
 * DRV_SIM_DIST_PHILLY draws sizes and durations shaped like Microsoft's
 * Philly trace (most jobs one GPU, a long tail of gangs up to 128 GPUs;
 * log-normal durations with a median near 19 minutes and a mean near 3.6
 * hours, clipped so the work fits the arrival window), tenants with skewed
 * shares, and three priority levels.
 * DRV_SIM_DIST_EXP gives M/M/c jobs: one task of one GPU, exponential
 * durations. In both, arrivals are Poisson and the rate is set from the
 * drawn jobs so that the offered load (GPU-seconds of work per second,
 * over the cluster's GPUs) is exactly the requested one.
 *
 * Every draw comes from one seeded stream, in a fixed order, so a seed
 * names a workload.
 */
#include "drover/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static char group_name[] = "tasks";

/* Philly's shares of jobs by GPU count (its 82,247 jobs, rounded). */
static const struct {
	int gpus;
	double share;
} philly_sizes[] = {
	{ 1, 0.9317 }, { 2, 0.0221 }, { 4, 0.0227 }, { 8, 0.0200 }, { 12, 0.0001 },
	{ 16, 0.0024 }, { 24, 0.0001 }, { 32, 0.0008 }, { 64, 0.0001 },
};

static const struct {
	const char *name;
	double share;
} tenants[] = {
	{ "vision", 0.40 }, { "speech", 0.20 }, { "nlp", 0.15 }, { "ads", 0.10 },
	{ "research", 0.08 }, { "search", 0.05 }, { "robotics", 0.02 },
};

static int pick(struct drv_rng *r, const double *share, int n)
{
	double u = drv_rng_unit(r), acc = 0, tot = 0;
	int i;
	for (i = 0; i < n; i++)
		tot += share[i];
	u *= tot;
	for (i = 0; i < n; i++) {
		acc += share[i];
		if (u <= acc)
			return i;
	}
	return n - 1;
}

static void set_gang(struct drv_job *j, int n, int node_gpus)
{
	int ng = (n <= node_gpus || n % node_gpus == 0) ? 1 : 2;
	j->groups = drv_calloc((size_t)ng, sizeof(*j->groups));
	j->ngroups = ng;
	j->groups[0].name = group_name;
	j->groups[0].model = -1;
	if (n <= node_gpus) {
		j->groups[0].count = 1;
		j->groups[0].gpus = n;
		return;
	}
	j->groups[0].count = n / node_gpus;
	j->groups[0].gpus = node_gpus;
	if (ng == 2) {
		j->groups[1].name = group_name;
		j->groups[1].model = -1;
		j->groups[1].count = 1;
		j->groups[1].gpus = n % node_gpus;
	}
}

int drv_sim_generate(const struct drv_sim_gen_opts *o, struct drv_sim_workload *w)
{
	struct drv_rng rng;
	double size_share[DRV_ARRAY_SIZE(philly_sizes)], tenant_share[DRV_ARRAY_SIZE(tenants)];
	int32_t first = w->njobs, i;
	size_t k;
	double work = 0, rate, t = 0;
	int maxsize;

	if (o->njobs < 1 || !(o->load > 0) || o->load > 100 || o->total_gpus < 1 ||
	    o->node_gpus < 1 || (o->dist == DRV_SIM_DIST_EXP && !(o->mean_duration_s >= 1)))
		return DRV_EINVAL;
	drv_rng_seed(&rng, o->seed);
	maxsize = o->total_gpus;
	for (k = 0; k < DRV_ARRAY_SIZE(philly_sizes); k++)
		size_share[k] = philly_sizes[k].gpus <= maxsize ? philly_sizes[k].share : 0;
	for (k = 0; k < DRV_ARRAY_SIZE(tenants); k++)
		tenant_share[k] = tenants[k].share;
	for (k = 0; k < DRV_ARRAY_SIZE(tenants); k++)
		drv_sim_tenant(w, tenants[k].name);

	DRV_GROW(w->jobs, (size_t)(w->njobs + o->njobs), w->cap);
	for (i = 0; i < o->njobs; i++) {
		struct drv_sim_job *sj = &w->jobs[w->njobs++];
		struct drv_job *j = &sj->job;
		char nm[24];
		int n;
		double u;

		memset(sj, 0, sizeof(*sj));
		sj->pclass = -1;
		snprintf(nm, sizeof(nm), "g%d", i + 1);
		j->name = drv_strdup(nm);
		if (o->dist == DRV_SIM_DIST_EXP) {
			n = 1;
			sj->duration = (int64_t)llround(drv_rng_exp(&rng, o->mean_duration_s));
			if (sj->duration < 1)
				sj->duration = 1;
			sj->tenant = drv_sim_tenant(w, tenants[0].name);
			j->preemptible = false;
		} else {
			double d;
			n = philly_sizes[pick(&rng, size_share, (int)DRV_ARRAY_SIZE(size_share))].gpus;
			/* log-normal: median 1,144 s, sigma 2.2 (Philly's median and mean) */
			d = exp(log(1144.0) + 2.2 * drv_rng_normal(&rng));
			if (d < 10)
				d = 10;
			if (d > 30 * 86400.0)
				d = 30 * 86400.0;
			sj->duration = (int64_t)llround(d);
			sj->tenant = (int32_t)pick(&rng, tenant_share, (int)DRV_ARRAY_SIZE(tenants));
			u = drv_rng_unit(&rng);
			/* priorities: 80% batch (0), 15% normal (10), 5% urgent (100) */
			j->priority = u <= 0.80 ? 0 : (u <= 0.95 ? 10 : 100);
			j->preemptible = j->priority < 100;
		}
		set_gang(j, n, o->node_gpus);
		j->runtime_estimate = sj->duration;
		work += (double)sj->duration * n;
	}
	/*
	 * Heavy tails and short runs: a few month-long gangs can hold most of
	 * the work, which then lands long after the last arrival, and the load
	 * inside the arrival window is far below the one asked for. So
	 * durations are clipped to a quarter of the arrival window (twice, as
	 * clipping shortens the window).
	 */
	if (o->dist == DRV_SIM_DIST_PHILLY) {
		int pass;
		for (pass = 0; pass < 2; pass++) {
			double window = work / (o->load * o->total_gpus);
			int64_t cap = (int64_t)(window / 4);
			if (cap < 10)
				cap = 10;
			work = 0;
			for (i = first; i < w->njobs; i++) {
				struct drv_sim_job *sj = &w->jobs[i];
				if (sj->duration > cap)
					sj->duration = cap;
				sj->job.runtime_estimate = sj->duration;
				work += (double)sj->duration * drv_job_gpu_milli(&sj->job) / 1000.0;
			}
		}
	}
	/* rate so that offered GPU-seconds per second = load x GPUs */
	rate = o->load * o->total_gpus / (work / o->njobs);
	for (i = first; i < w->njobs; i++) {
		t += drv_rng_exp(&rng, 1.0 / rate);
		w->jobs[i].job.submit_time = (int64_t)floor(t);
	}
	/* relative to the first submit; ids in order */
	{
		int64_t t0 = w->jobs[first].job.submit_time;
		for (i = first; i < w->njobs; i++) {
			w->jobs[i].job.submit_time -= t0;
			w->jobs[i].job.id = (uint64_t)i + 1;
			w->jobs[i].job.tenant = w->tenants[w->jobs[i].tenant];
		}
	}
	return 0;
}
