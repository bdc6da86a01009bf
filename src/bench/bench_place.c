/*
 * bench_place.c: 'drover bench place [--json] [--placement NAME] [--ops N]
 * [--seed N] [--compare]': placement latency on HGX clusters of whole
 * leaves (8 GPUs a node, 32 nodes a leaf, 16 leaves a spine) of 1,024,
 * 10,240 and 100,352 GPUs.
 *
 * Each cluster is first filled to about 80% with the job mix and churned a
 * while (ops/5 + 1000 attempts), untimed; then a mixed stream keeps it there: below 80% the next job is placed,
 * above it a random running job is released. Every place attempt is timed
 * (drv_place, plus the commit when it fits), including attempts that find
 * no room. The mix: gangs of 1, 2, 4, 8, 16 and 64 GPUs everywhere (a third
 * of the 1-GPU jobs fractional: a quarter or half of a GPU), 256 and 1024 on
 * the two larger clusters; gangs over 8 GPUs are tasks of 8 GPUs, half of
 * them require one leaf when they can fit in one (<= 256 GPUs), the rest
 * prefer it.
 *
 * Each figure is the median over --trials runs of the same stream (3), so
 * one burst of other users' load on the shared machine does not decide it;
 * a large gang's attempt starts right after sched_yield() for the same
 * reason. Times are wall-clock (the vDSO monotonic clock), less the cost of
 * reading it.
 *
 * --json prints {"results":[{"gpus","p50_us","p99_us","placements_per_s",
 * "small_p99_us","large_p99_us","fail_p99_us","leaf_kept_share"}, ...],
 * "nvl72":{...}} (small: gangs <= 64 GPUs; large: 256 and 1024, null where
 * none ran). leaf_kept_share and "nvl72" measure topology quality, not
 * time (see topo_leaf_room, nvl72_fill and nvl72_steady below). --compare runs a
 * fractional-heavy stream under best-fit and FGD on the same jobs and
 * reports how much each could place.
 */
#include "drover/bench.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/model.h"
#include "drover/options.h"
#include "drover/sched.h"
#include "drover/sim.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stddef.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NODE_GPUS 8
#define LEAF_NODES 32
#define SPINE_LEAVES 16

static uint64_t rng;
static double (*clock_now)(void);
static double clock_cost; /* what reading the clock twice costs, subtracted */

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* Microseconds with the monotonic clock's full resolution, for clock_now. */
static double now_us(void)
{
	return drv_mono_s() * 1e6;
}

static void build_hgx(struct drv_cluster *c, int gpus)
{
	static const char *const lv[] = { "cluster", "spine", "leaf", "node" };
	int leaves = gpus / (NODE_GPUS * LEAF_NODES), l, n, h100 = drv_gpu_model_find("H100");
	int32_t spine = -1, leaf;
	char name[64];

	drv_cluster_init(c, "bench");
	drv_cluster_set_levels(c, lv, 4);
	for (l = 0; l < leaves; l++) {
		if (l % SPINE_LEAVES == 0) {
			snprintf(name, sizeof(name), "spine%d", l / SPINE_LEAVES);
			spine = drv_cluster_add_vertex(c, 0, name);
		}
		snprintf(name, sizeof(name), "leaf%d", l);
		leaf = drv_cluster_add_vertex(c, spine, name);
		for (n = 0; n < LEAF_NODES; n++) {
			snprintf(name, sizeof(name), "l%d-n%d", l, n);
			drv_cluster_add_node(c, leaf, name, h100, NODE_GPUS, 224000, 2 << 20);
		}
	}
}

/* Job templates, built once: no allocation in the timed loop. */
enum { T_FRAC_Q, T_FRAC_H, T_1, T_2, T_4, T_8, T_16R, T_16P, T_64R, T_64P, T_256R, T_256P,
       T_1024P, NTEMPL };

struct templ {
	struct drv_job job;
	int gpus;       /* gang size in GPUs (fractional count as 1) */
	bool large;
};

static void make_templates(struct templ *t)
{
	static const struct { int gpus, milli; int topo; } spec[NTEMPL] = {
		{ 1, 250, 0 }, { 1, 500, 0 }, { 1, 0, 0 }, { 2, 0, 0 }, { 4, 0, 0 }, { 8, 0, 0 },
		{ 16, 0, 2 }, { 16, 0, 1 }, { 64, 0, 2 }, { 64, 0, 1 }, { 256, 0, 2 }, { 256, 0, 1 },
		{ 1024, 0, 1 },
	};
	int i;

	for (i = 0; i < NTEMPL; i++) {
		struct drv_job *j = &t[i].job;
		int g = spec[i].gpus;
		drv_job_init(j);
		if (spec[i].milli)
			drv_job_add_group(j, "w", 1, 0, spec[i].milli);
		else if (g <= NODE_GPUS)
			drv_job_add_group(j, "w", 1, g, 0);
		else
			drv_job_add_group(j, "w", g / NODE_GPUS, NODE_GPUS, 0);
		if (spec[i].topo == 2)
			drv_job_set_topology(j, DRV_TOPO_REQUIRED, "leaf");
		else if (spec[i].topo == 1)
			drv_job_set_topology(j, DRV_TOPO_PREFERRED, "leaf");
		t[i].gpus = g;
		t[i].large = g >= 256;
	}
}

/* The mix: weights per template (the larger two only on larger clusters). */
static int pick(bool with_large)
{
	static const int w[NTEMPL] = { 5, 5, 20, 15, 15, 18, 4, 4, 3, 3, 1, 1, 1 };
	int total = 0, i, r;

	for (i = 0; i < NTEMPL; i++)
		if (with_large || i < T_256R)
			total += w[i];
	r = (int)rnd((uint32_t)total);
	for (i = 0; i < NTEMPL; i++) {
		if (!with_large && i >= T_256R)
			break;
		if (r < w[i])
			return i;
		r -= w[i];
	}
	return T_1;
}

struct samples {
	double *v;
	size_t n, cap;
};

static void add(struct samples *s, double x)
{
	DRV_GROW(s->v, s->n + 1, s->cap);
	s->v[s->n++] = x;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(struct samples *s, double p)
{
	size_t k;
	if (!s->n)
		return -1;
	qsort(s->v, s->n, sizeof(double), cmpd);
	k = (size_t)(p * (double)(s->n - 1) + 0.5);
	return s->v[k];
}

struct result {
	int gpus;
	double p50, p99, per_s, small_p99, large_p99, fail_p99;
	long placed, failed;
	long leaf_room, leaf_kept; /* multi-node attempts a leaf had room for; kept in one */
};

/* The leaf vertices of c (level leaf), in *out; returns how many. */
static int leaf_list(const struct drv_cluster *c, int32_t **out)
{
	int lv = drv_cluster_level(c, "leaf"), n = 0;
	int32_t v;
	*out = drv_calloc((size_t)c->nvertices, sizeof(**out));
	for (v = 0; v < c->nvertices; v++)
		if (c->vertices[v].level == lv)
			(*out)[n++] = v;
	return n;
}

/* Whether one leaf has ntasks free whole nodes (the bench's gangs over 8
 * GPUs are tasks of a whole node, without CPU or memory asks). */
static bool topo_leaf_room(const struct drv_cluster *c, const int32_t *leaves, int nleaves,
			   int ntasks)
{
	int i;
	for (i = 0; i < nleaves; i++)
		if (c->vertices[leaves[i]].free_nodes >= ntasks)
			return true;
	return false;
}

/* Whether every task of p sits on a node under one leaf (parent vertex). */
static bool topo_one_leaf(const struct drv_cluster *c, const struct drv_placement *p)
{
	int32_t leaf = c->vertices[c->nodes[p->tasks[0].node].vertex].parent, i;
	for (i = 1; i < p->ntasks; i++)
		if (c->vertices[c->nodes[p->tasks[i].node].vertex].parent != leaf)
			return false;
	return true;
}

struct running {
	struct drv_placement p;
	int64_t milli;
};

static void run_cluster(int gpus, long ops, enum drv_place_strategy strat, struct result *r)
{
	struct drv_cluster c;
	struct templ t[NTEMPL];
	struct drv_place_opts opts;
	struct drv_place_mix mix;
	struct running *run;
	int nrun = 0, maxrun = gpus * 2 + 16, i;
	int64_t used = 0, total = (int64_t)gpus * DRV_MILLI, target = total * 8 / 10;
	struct samples all = { 0 }, small = { 0 }, large = { 0 }, fail = { 0 }, per[NTEMPL];
	bool dbg = getenv("DROVER_BENCH_DEBUG") != NULL; /* per-kind figures on stderr */
	double spent = 0;
	bool with_large = gpus > 1024;
	long op;
	char why[256];
	int32_t *leaves;
	int nleaves;

	memset(per, 0, sizeof(per));
	build_hgx(&c, gpus);
	nleaves = leaf_list(&c, &leaves);
	make_templates(t);
	memset(&opts, 0, sizeof(opts));
	opts.strategy = strat;
	/* multi learns the stream's mix as a scheduler would, untimed */
	drv_place_mix_init(&mix, 0);
	opts.mix = &mix;
	run = drv_calloc((size_t)maxrun, sizeof(*run));
	/* buffers sized for the largest gang up front, as a scheduler reusing
	 * its placements would have them: no allocation while timing */
	for (i = 0; i < maxrun; i++) {
		drv_placement_init(&run[i].p);
		DRV_GROW(run[i].p.tasks, 1024 / NODE_GPUS, run[i].p.cap);
	}
	memset(r, 0, sizeof(*r));
	r->gpus = gpus;

	/* fill to the target (untimed) */
	while (used <= target && nrun < maxrun) {
		const struct drv_job *j = &t[pick(with_large)].job;
		drv_place_mix_observe(&mix, j);
		if (drv_place_commit(&c, j, &opts, &run[nrun].p, NULL, 0) == 0) {
			run[nrun].milli = drv_job_gpu_milli(j);
			used += run[nrun].milli;
			nrun++;
		}
	}
	/* churn a while untimed, then the timed stream */
	for (op = -(ops / 5 + 1000); op < ops; op++) {
		bool timed = op >= 0;
		if (used > target && nrun > 0) {
			int k = (int)rnd((uint32_t)nrun);
			struct running tmp;
			drv_cluster_uncommit(&c, &run[k].p);
			used -= run[k].milli;
			tmp = run[k];
			run[k] = run[nrun - 1];
			run[nrun - 1] = tmp;
			nrun--;
			if (timed)
				op--; /* count place attempts only */
			continue;
		}
		{
			int ti = pick(with_large);
			struct drv_job *j = &t[ti].job;
			double t0, dt;
			int rc;
			/* topology quality (untimed): a multi-node gang a leaf had room for */
			bool room = timed && t[ti].gpus > NODE_GPUS &&
				    topo_leaf_room(&c, leaves, nleaves, t[ti].gpus / NODE_GPUS);
			if (nrun >= maxrun)
				break;
			/* A large gang takes tens of microseconds: start it on a fresh
			 * time slice, so that other tenants of the shared machine do
			 * not preempt it half-way and turn the p99 into theirs. */
			drv_place_mix_observe(&mix, j);
			if (timed && t[ti].large)
				sched_yield();
			t0 = clock_now();
			rc = drv_place_commit(&c, j, &opts, &run[nrun].p, why, sizeof(why));
			dt = clock_now() - t0 - clock_cost;
			r->leaf_room += room;
			r->leaf_kept += room && rc == 0 && topo_one_leaf(&c, &run[nrun].p);
			if (rc == 0) {
				run[nrun].milli = drv_job_gpu_milli(j);
				used += run[nrun].milli;
				nrun++;
			}
			if (!timed)
				continue;
			spent += dt;
			add(&all, dt);
			if (dbg)
				add(&per[ti], dt);
			if (rc == 0) {
				r->placed++;
				add(t[ti].large ? &large : &small, dt);
			} else {
				r->failed++;
				add(&fail, dt);
				if (dbg && dt > 10)
					fprintf(stderr, "  slow refusal (%.1f us) of template %d: %s\n", dt, ti, why);
			}
		}
	}
	if (dbg)
		for (i = 0; i < NTEMPL; i++)
			if (per[i].n) {
				fprintf(stderr, "  %d GPUs template %2d: n %6zu p50 %7.2f p90 %7.2f p99 %7.2f max %8.2f\n",
					gpus, i, per[i].n, pct(&per[i], 0.5), pct(&per[i], 0.9),
					pct(&per[i], 0.99), pct(&per[i], 1.0));
				drv_free(per[i].v);
			}
	r->p50 = pct(&all, 0.50);
	r->p99 = pct(&all, 0.99);
	r->small_p99 = pct(&small, 0.99);
	r->large_p99 = pct(&large, 0.99);
	r->fail_p99 = pct(&fail, 0.99);
	r->per_s = spent > 0 ? (double)r->placed / (spent / 1e6) : 0;
	if (drv_cluster_check(&c))
		fprintf(stderr, "bench place: aggregates drifted on the %d-GPU cluster\n", gpus);
	for (i = 0; i < maxrun; i++)
		drv_placement_release(&run[i].p);
	drv_free(run);
	drv_free(leaves);
	for (i = 0; i < NTEMPL; i++)
		drv_job_release(&t[i].job);
	drv_free(all.v);
	drv_free(small.v);
	drv_free(large.v);
	drv_free(fail.v);
	drv_cluster_release(&c);
}

/* Median over n trials of the double at offset off (-1 = none ran). */
static double median(const struct result *r, int n, size_t off)
{
	double v[15], t;
	int i, j;
	for (i = 0; i < n; i++)
		memcpy(&v[i], (const char *)&r[i] + off, sizeof(double));
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

static json_t *num_or_null(double x)
{
	return x < 0 ? json_null() : json_real((double)(int64_t)(x * 100 + 0.5) / 100);
}

/*
 * The GB200 NVL72 example cluster (examples/clusters/gb200-nvl72.yaml),
 * built in code so the bench needs no file: 4 racks, each one NVLink
 * domain of 18 trays of 4 GPUs (144 cores, 960 GiB).
 */
#define NVL_RACKS 4
#define NVL_TRAYS 18
#define NVL_GPUS 4

static void build_nvl72(struct drv_cluster *c)
{
	static const char *const lv[] = { "pool", "rack", "node" };
	int r, n, gb200 = drv_gpu_model_find("GB200");
	int32_t rack;
	char name[64];

	drv_cluster_init(c, "gb200-nvl72");
	drv_cluster_set_levels(c, lv, 3);
	c->nvl_level = 1;
	for (r = 0; r < NVL_RACKS; r++) {
		snprintf(name, sizeof(name), "nvl72-r%d", r);
		rack = drv_cluster_add_vertex(c, 0, name);
		for (n = 0; n < NVL_TRAYS; n++) {
			snprintf(name, sizeof(name), "nvl72-r%d-t%02d", r, n);
			drv_cluster_add_node(c, rack, name, gb200, NVL_GPUS, 144000, 960 << 10);
		}
	}
}

/*
 * One fill of the NVL72 cluster: gangs of whole trays (1, 2, 4, 8, 9, 16
 * or 18 trays: 4 to 72 GPUs), each requiring one NVLink domain, are offered
 * in a random order until 125% of the GPUs were asked for; each is placed
 * or refused once (nothing ends, so a refused gang would be refused again:
 * it stays pending). Returns the GPUs left free in racks that the smallest
 * pending gang does not fit (0 when nothing is pending).
 */
static int nvl72_fill(enum drv_place_strategy strat)
{
	static const int trays[] = { 1, 2, 4, 8, 9, 16, 18 }, w[] = { 1, 1, 2, 2, 2, 2, 4 };
	struct drv_cluster c;
	struct drv_place_opts opts;
	struct drv_place_mix mix;
	struct drv_placement p;
	int64_t offered = 0, cap = NVL_RACKS * NVL_TRAYS * NVL_GPUS;
	int min_pending = NVL_TRAYS + 1, lost = 0, r, k;

	build_nvl72(&c);
	memset(&opts, 0, sizeof(opts));
	opts.strategy = strat;
	drv_place_mix_init(&mix, 0);
	opts.mix = &mix;
	drv_placement_init(&p);
	while (offered < cap * 5 / 4) {
		struct drv_job j;
		int x = (int)rnd(14);
		for (k = 0; x >= w[k]; k++)
			x -= w[k];
		drv_job_init(&j);
		drv_job_add_group(&j, "w", trays[k], NVL_GPUS, 0);
		drv_job_set_topology(&j, DRV_TOPO_REQUIRED, "nvlink-domain");
		drv_place_mix_observe(&mix, &j);
		if (drv_place_commit(&c, &j, &opts, &p, NULL, 0) != 0 && trays[k] < min_pending)
			min_pending = trays[k];
		offered += trays[k] * NVL_GPUS;
		drv_job_release(&j);
	}
	for (r = 0; r < c.nvertices; r++) {
		const struct drv_vertex *v = &c.vertices[r];
		if (v->level == 1 && v->free_nodes < min_pending && min_pending <= NVL_TRAYS)
			lost += v->free_gpus;
	}
	drv_placement_release(&p);
	drv_cluster_release(&c);
	return lost;
}

/*
 * The steady state of the same cluster, as a user of a running NVL72
 * cluster sees it: NVL_STEADY_JOBS gangs of the fill's tray mix (each
 * requiring one NVLink domain) arrive as a Poisson stream whose offered load
 * (GPU-seconds of work per second, over the cluster's GPUs) is
 * NVL_STEADY_LOAD, each running for an exponential time (mean one hour)
 * that the scheduler is told as its estimate. drover's simulator replays
 * them: its scheduling pass (fifo, EASY backfill, the given placement) at
 * every event, releases at every end. Measured by drv_sim_packing_loss
 * (sim.h) from the tenth arrival to the last, so that neither the empty
 * start nor the drain after the stream ends counts: GPUs lost to packing
 * are the free GPUs at instants when the smallest waiting gang would fit
 * the free total but no single rack.
 */
#define NVL_STEADY_JOBS 10000
#define NVL_STEADY_LOAD 1.05

static char nvl_group[] = "w";

static void nvl72_workload(struct drv_sim_workload *w, uint64_t seed, int32_t njobs, double load)
{
	static const int trays[] = { 1, 2, 4, 8, 9, 16, 18 };
	static const double share[] = { 1, 1, 2, 2, 2, 2, 4 };
	struct drv_rng r;
	double work = 0, t = 0, gap;
	int32_t i, tenant = drv_sim_tenant(w, "nvl72");
	char name[24];

	drv_rng_seed(&r, seed);
	DRV_GROW(w->jobs, (size_t)njobs, w->cap);
	for (i = 0; i < njobs; i++) {
		struct drv_sim_job *sj = &w->jobs[w->njobs++];
		struct drv_job *j = &sj->job;
		double u = drv_rng_unit(&r) * 14, acc = 0;
		int k;
		for (k = 0; k < 6 && u > acc + share[k]; k++)
			acc += share[k];
		memset(sj, 0, sizeof(*sj));
		sj->pclass = -1;
		sj->tenant = tenant;
		snprintf(name, sizeof(name), "nvl%d", i + 1);
		j->name = drv_strdup(name);
		j->id = (uint64_t)i + 1;
		j->tenant = w->tenants[tenant];
		/* the workload's own groups (names static), as its readers make them */
		j->groups = drv_calloc(1, sizeof(*j->groups));
		j->ngroups = 1;
		j->groups[0].name = nvl_group;
		j->groups[0].model = -1;
		j->groups[0].count = trays[k];
		j->groups[0].gpus = NVL_GPUS;
		drv_job_set_topology(j, DRV_TOPO_REQUIRED, "nvlink-domain");
		sj->duration = (int64_t)llround(drv_rng_exp(&r, 3600));
		if (sj->duration < 1)
			sj->duration = 1;
		j->runtime_estimate = sj->duration;
		work += (double)sj->duration * trays[k] * NVL_GPUS;
	}
	/* arrivals: mean gap so that the offered load is exactly load */
	gap = work / (load * NVL_RACKS * NVL_TRAYS * NVL_GPUS) / njobs;
	for (i = 0; i < njobs; i++) {
		w->jobs[i].job.submit_time = (int64_t)floor(t);
		t += drv_rng_exp(&r, gap);
	}
}

struct nvl_steady {
	struct drv_sim_packing pk;
	int64_t jobs;
	double load;
};

static int nvl72_steady(enum drv_place_strategy strat, uint64_t seed, int32_t njobs, double load,
			struct nvl_steady *out)
{
	struct drv_cluster c;
	struct drv_sim_workload w;
	struct drv_sim_result r;
	struct drv_sched_policy pol;
	struct drv_sim_opts o;
	int rc;

	build_nvl72(&c);
	drv_sim_workload_init(&w);
	drv_sim_result_init(&r);
	nvl72_workload(&w, seed, njobs, load);
	drv_sched_policy_default(&pol);
	pol.place = strat;
	memset(&o, 0, sizeof(o));
	o.policy = &pol;
	o.seed = seed;
	rc = drv_sim_run(&c, &w, &o, &r);
	if (rc == 0)
		rc = drv_sim_packing_loss(&c, &w, &r, w.jobs[njobs / 10].job.submit_time,
					  w.jobs[njobs - 1].job.submit_time, &out->pk);
	out->jobs = njobs;
	out->load = load;
	drv_sim_result_release(&r);
	drv_sim_workload_release(&w);
	drv_cluster_release(&c);
	return rc;
}

/* "nvl72": the mean over rounds fills of the share of GPUs lost. */
static json_t *nvl72_report(enum drv_place_strategy strat, int rounds, uint64_t seed)
{
	json_t *o = json_object();
	struct nvl_steady st;
	long lost = 0;
	int i;
	for (i = 0; i < rounds; i++)
		lost += nvl72_fill(strat);
	json_object_set_new(o, "gpus", json_integer(NVL_RACKS * NVL_TRAYS * NVL_GPUS));
	json_object_set_new(o, "rounds", json_integer(rounds));
	json_object_set_new(o, "gpus_lost_share",
			    json_real((double)lost / ((double)rounds * NVL_RACKS * NVL_TRAYS * NVL_GPUS)));
	if (nvl72_steady(strat, seed, NVL_STEADY_JOBS, NVL_STEADY_LOAD, &st) != 0) {
		fprintf(stderr, "bench place: the NVL72 steady-state run failed\n");
		return o;
	}
	json_object_set_new(o, "steady_jobs", json_integer(st.jobs));
	json_object_set_new(o, "steady_load", json_real(st.load));
	json_object_set_new(o, "steady_events", json_integer(st.pk.events));
	json_object_set_new(o, "steady_alloc", json_real(st.pk.alloc_gpu_s / st.pk.gpu_s));
	json_object_set_new(o, "steady_idle_waiting_share",
			    json_real(st.pk.idle_wait_gpu_s / st.pk.gpu_s));
	json_object_set_new(o, "steady_gpus_lost_share", json_real(st.pk.lost_gpu_s / st.pk.gpu_s));
	json_object_set_new(o, "steady_repack_lost_share",
			    json_real(st.pk.repack_lost_gpu_s / st.pk.gpu_s));
	json_object_set_new(o, "steady_repack_undecided", json_integer(st.pk.repack_undecided));
	return o;
}

/*
 * --compare: best-fit against FGD on one cluster and one job stream that
 * mixes whole and fractional tasks (4 in 10 are shares of a GPU). Each
 * tick one job arrives (dropped when it does not fit) and, nine times in
 * ten, a random running job ends: offered load exceeds the cluster, so it
 * runs saturated and what differs is how well each strategy packs. Over
 * the second half of the ticks we report the mean share of GPU capacity
 * allocated and the share of arrivals refused although the cluster had
 * enough free capacity in total (refused by fragmentation).
 */
static void compare(int gpus, uint64_t seed, json_t *out)
{
	static const enum drv_place_strategy strat[2] = { DRV_PLACE_BESTFIT, DRV_PLACE_FGD };
	static const char *const names[2] = { "bestfit", "fgd" };
	static const int32_t mix[] = { 100, 200, 250, 300, 500, 700, 1000, 2000, 4000, 8000 };
	static const double mixw[] = { 0.4 / 6, 0.4 / 6, 0.4 / 6, 0.4 / 6, 0.4 / 6, 0.4 / 6,
				       0.30, 0.15, 0.10, 0.05 };
	int s;

	for (s = 0; s < 2; s++) {
		struct drv_cluster c;
		struct drv_place_opts opts;
		struct running *run;
		int nrun = 0, maxrun = gpus * 12, i;
		long ticks = 40L * gpus, k, arrivals = 0, frag_refusals = 0, placed = 0;
		int64_t used = 0, total = (int64_t)gpus * DRV_MILLI;
		double alloc_sum = 0, t0 = now_us(), spent;
		uint64_t arr_rng = seed, dep_rng = seed ^ 0x9e3779b97f4a7c15ULL;
		json_t *o = json_object();

		build_hgx(&c, gpus);
		memset(&opts, 0, sizeof(opts));
		opts.strategy = strat[s];
		/* FGD is told the stream's true mix of task sizes */
		opts.mix_milli = mix;
		opts.mix_weight = mixw;
		opts.nmix = (int32_t)DRV_ARRAY_SIZE(mix);
		run = drv_calloc((size_t)maxrun, sizeof(*run));
		for (i = 0; i < maxrun; i++)
			drv_placement_init(&run[i].p);
		for (k = 0; k < ticks; k++) {
			struct drv_job j;
			int kind;
			bool measure = k >= ticks / 2;

			rng = arr_rng;
			kind = (int)rnd(20);
			drv_job_init(&j);
			if (kind < 8)
				drv_job_add_group(&j, "f", 1, 0, (int[]){ 100, 200, 250, 300, 500, 700 }[rnd(6)]);
			else if (kind < 14)
				drv_job_add_group(&j, "w", 1, 1, 0);
			else if (kind < 17)
				drv_job_add_group(&j, "w", 1, 2, 0);
			else if (kind < 19)
				drv_job_add_group(&j, "w", 1, 4, 0);
			else
				drv_job_add_group(&j, "w", 1, 8, 0);
			arr_rng = rng;
			if (nrun < maxrun &&
			    drv_place_commit(&c, &j, &opts, &run[nrun].p, NULL, 0) == 0) {
				run[nrun].milli = drv_job_gpu_milli(&j);
				used += run[nrun].milli;
				nrun++;
				if (measure)
					placed++;
			} else if (measure && total - used >= drv_job_gpu_milli(&j)) {
				frag_refusals++;
			}
			if (measure)
				arrivals++;
			drv_job_release(&j);
			rng = dep_rng;
			if (nrun > 0 && rnd(10) < 9) {
				int x = (int)rnd((uint32_t)nrun);
				struct running tmp;
				drv_cluster_uncommit(&c, &run[x].p);
				used -= run[x].milli;
				tmp = run[x];
				run[x] = run[nrun - 1];
				run[nrun - 1] = tmp;
				nrun--;
			}
			dep_rng = rng;
			if (measure)
				alloc_sum += (double)used / (double)total;
		}
		spent = now_us() - t0;
		json_object_set_new(o, "strategy", json_string(names[s]));
		json_object_set_new(o, "gpus", json_integer(gpus));
		json_object_set_new(o, "mean_alloc", json_real(alloc_sum / (double)(ticks - ticks / 2)));
		json_object_set_new(o, "placed", json_integer(placed));
		json_object_set_new(o, "frag_refused_share",
				    json_real(arrivals ? (double)frag_refusals / (double)arrivals : 0));
		json_object_set_new(o, "us_per_tick", json_real(spent / (double)ticks));
		json_array_append_new(out, o);
		for (i = 0; i < maxrun; i++)
			drv_placement_release(&run[i].p);
		drv_free(run);
		drv_cluster_release(&c);
	}
}

int drv_bench_place(int argc, char **argv)
{
	static const int sizes[] = { 1024, 10240, 100352 };
	bool json = false, cmp = false;
	int trials = 3;
	long ops = 0;
	uint64_t seed = 42;
	enum drv_place_strategy strat = DRV_PLACE_DEFAULT;
	json_t *root, *arr;
	char *txt;
	size_t i;
	int a;

	long long ops_arg = 0, seed_arg = 42;
	int strategy = DRV_PLACE_DEFAULT;
	const struct drv_option table[] = {
		DRV_OPT_FLAG(0, "json", &json, "print one JSON object"),
		DRV_OPT_ENUM(0, "placement", &strategy, drv_place_choices,
			     "the placement scorer (default " DRV_PLACE_DEFAULT_NAME ")"),
		DRV_OPT_ENUM(0, "strategy", &strategy, drv_place_choices,
			     "the same as --placement (its older name)"),
		DRV_OPT_LLONG(0, "ops", &ops_arg, 0, 1000000000, "N",
			      "timed placements per cluster size (default 100000)"),
		DRV_OPT_INT(0, "trials", &trials, -1000, 1000, "N",
			    "trials, the median kept (1 to 15, default 3)"),
		DRV_OPT_LLONG(0, "seed", &seed_arg, 0, 9223372036854775807LL, "N",
			      "the workload's seed (default 42)"),
		DRV_OPT_FLAG(0, "compare", &cmp,
			     "best-fit and FGD side by side on the 1k and 10k clusters"),
		DRV_OPT_END(),
	};
	const struct drv_opts usage = {
		.name = "drover bench place",
		.usage = "drover bench place [--json] [--placement NAME] [--ops N] [--trials N] "
			 "[--seed N] [--compare]",
		.about = "Placement latency on 1k, 10k and 100k-GPU clusters.",
		.options = table,
	};

	a = drv_opts_parse(&usage, argc, argv);
	if (a < 0)
		return drv_opts_exit(a);
	ops = (long)ops_arg;
	seed = (uint64_t)seed_arg;
	strat = (enum drv_place_strategy)strategy;
	if (seed == 0)
		seed = 42;
	clock_now = now_us;
	if (trials < 1 || trials > 15)
		trials = 3;
	{
		/* calibrate: the least of many back-to-back reads */
		int k;
		clock_cost = 1e9;
		for (k = 0; k < 2000; k++) {
			double t0 = clock_now(), t1 = clock_now();
			if (t1 - t0 < clock_cost)
				clock_cost = t1 - t0;
		}
	}
	root = json_object();
	arr = json_array();
	if (cmp) {
		for (i = 0; i < 2; i++) {
			rng = seed;
			compare(i == 0 ? 1024 : 10240, seed, arr);
		}
		json_object_set_new(root, "compare", arr);
	} else {
		for (i = 0; i < DRV_ARRAY_SIZE(sizes); i++) {
			struct result r, tr[15];
			json_t *o = json_object();
			int k;
			/* the same stream (same seed) several times; each figure is the
			 * median over the trials, so one burst of other load on the
			 * shared machine does not decide it */
			for (k = 0; k < trials; k++) {
				rng = seed;
				run_cluster(sizes[i], ops > 0 ? ops : 100000, strat, &tr[k]);
			}
			r = tr[0];
			r.p50 = median(tr, trials, offsetof(struct result, p50));
			r.p99 = median(tr, trials, offsetof(struct result, p99));
			r.per_s = median(tr, trials, offsetof(struct result, per_s));
			r.small_p99 = median(tr, trials, offsetof(struct result, small_p99));
			r.large_p99 = median(tr, trials, offsetof(struct result, large_p99));
			r.fail_p99 = median(tr, trials, offsetof(struct result, fail_p99));
			json_object_set_new(o, "gpus", json_integer(r.gpus));
			json_object_set_new(o, "p50_us", num_or_null(r.p50));
			json_object_set_new(o, "p99_us", num_or_null(r.p99));
			json_object_set_new(o, "placements_per_s", json_integer((json_int_t)r.per_s));
			json_object_set_new(o, "small_p99_us", num_or_null(r.small_p99));
			json_object_set_new(o, "large_p99_us", num_or_null(r.large_p99));
			json_object_set_new(o, "fail_p99_us", num_or_null(r.fail_p99));
			/* the same stream each trial, so the same decisions: trial 0's */
			json_object_set_new(o, "leaf_kept_share",
					    r.leaf_room ? json_real((double)r.leaf_kept / (double)r.leaf_room)
							: json_null());
			json_array_append_new(arr, o);
			if (!json)
				fprintf(stderr, "%d GPUs: %ld place attempts per trial, %ld placed, %ld refused\n",
					r.gpus, r.placed + r.failed, r.placed, r.failed);
		}
		json_object_set_new(root, "results", arr);
		rng = seed;
		json_object_set_new(root, "nvl72", nvl72_report(strat, 100, seed));
	}
	txt = json_dumps(root, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8) |
				       (json ? 0 : JSON_INDENT(2)));
	printf("%s\n", txt);
	free(txt);
	json_decref(root);
	return DRV_EXIT_OK;
}
