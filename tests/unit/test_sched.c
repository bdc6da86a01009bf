/*
 * test_sched.c: the scheduling pass (src/core/sched*.c) over random
 * workloads, checked after every pass from the outside: no GPU holds more
 * than it has, no gang is split, a job started in a pass never overlaps a
 * reservation of that pass unless it ends before the reservation starts,
 * no tenant holds more than its quota plus what it may borrow, preemption
 * victims are whole, preemptible, lower-priority gangs; and the same
 * workload gives the same decisions byte for byte. Plus the small API
 * contracts (errors, names, queries).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "drover/model.h"
#include "drover/sched.h"

/* ---- a random world ------------------------------------------------------ */

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int h100, a100;

/* Two pools (us: H100, on-demand; eu: A100, cheaper, spot), each with two
 * leaves of `per` 8-GPU nodes. */
static void build(struct drv_cluster *c, int per)
{
	static const char *const lv[] = { "cluster", "pool", "leaf", "node" };
	static const char *const pools[] = { "us", "eu" };
	char name[64];
	int p, l, n;
	h100 = drv_gpu_model_find("H100");
	a100 = drv_gpu_model_find("A100");
	drv_cluster_init(c, "rand");
	drv_cluster_set_levels(c, lv, 4);
	for (p = 0; p < 2; p++) {
		struct drv_pool pool;
		int pv = drv_cluster_add_vertex(c, 0, pools[p]);
		memset(&pool, 0, sizeof(pool));
		pool.name = (char *)pools[p];
		pool.region = (char *)(p ? "eu-west" : "us-east");
		pool.price_micro_per_gpu_hour = p ? 1500000 : 2000000;
		pool.spot = p == 1;
		pool.vertex = pv;
		cr_assert(ge(int, drv_cluster_add_pool(c, &pool), 0));
		for (l = 0; l < 2; l++) {
			int lvx;
			snprintf(name, sizeof(name), "%s-l%d", pools[p], l);
			lvx = drv_cluster_add_vertex(c, pv, name);
			for (n = 0; n < per; n++) {
				snprintf(name, sizeof(name), "%s-l%d-n%d", pools[p], l, n);
				cr_assert(ge(int, drv_cluster_add_node(c, lvx, name, p ? a100 : h100, 8,
								       64000, 512 * 1024), 0));
			}
		}
	}
}

struct wjob {
	struct drv_job job;
	int64_t actual;     /* true run time */
	int64_t end_at;     /* when it finishes if running (0 = not running) */
	int64_t stop_at;    /* victim: when it stops (0 = not terminating) */
	bool done;
	uint64_t preempted_by; /* victim: its preemptor */
	int waiting;        /* preemptor: victims not stopped yet */
	bool preemptor;     /* pending after preempting, not started yet */
};

struct world {
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct wjob *jobs;
	int njobs;
	uint64_t rng;
	uint64_t hash;      /* FNV over every decision line */
	int starts, preempts, reserves;
};

static const char *const tenant_names[] = { "a", "b", "c" };

static void make_job(struct world *w, struct wjob *x, uint64_t id, int64_t now)
{
	static const int sizes[] = { 1, 1, 2, 4, 8, 8, 16, 24 };
	struct drv_job *j = &x->job;
	uint64_t r = rnd(&w->rng);
	int size = sizes[r % 8];
	struct drv_task_group *g;
	drv_job_init(j);
	j->id = id;
	j->tenant = drv_strdup(tenant_names[(r >> 8) % 3]);
	j->priority = (int32_t)((r >> 12) % 3) * 10;
	j->preemptible = (r >> 16) % 3 != 0;
	j->submit_time = now;
	j->runtime_estimate = 50 + (int64_t)((r >> 20) % 400);
	x->actual = j->runtime_estimate / 2 + (int64_t)((r >> 30) % (uint64_t)j->runtime_estimate);
	if ((r >> 40) % 8 == 0) {
		g = drv_job_add_group(j, "m", 1 + (int)((r >> 44) % 2), 0, 250 * (int32_t)(1 + (r >> 46) % 3));
	} else if (size <= 8) {
		g = drv_job_add_group(j, "m", 1, size, 0);
	} else {
		g = drv_job_add_group(j, "m", size / 8, 8, 0);
		if ((r >> 48) % 2)
			drv_job_set_topology(j, DRV_TOPO_REQUIRED, "leaf");
	}
	if ((r >> 50) % 6 == 0)
		g->model = (int8_t)h100;
	if ((r >> 53) % 8 == 0)
		drv_job_add_region(j, "eu-west");
}

static struct wjob *wfind(struct world *w, uint64_t id)
{
	return id >= 1 && id <= (uint64_t)w->njobs ? &w->jobs[id - 1] : NULL;
}

static bool overlap(const struct drv_placement *a, const struct drv_placement *b)
{
	int32_t i, k;
	for (i = 0; i < a->ntasks; i++)
		for (k = 0; k < b->ntasks; k++)
			if (a->tasks[i].node == b->tasks[k].node &&
			    (a->tasks[i].gpu_mask & b->tasks[k].gpu_mask))
				return true;
	return false;
}

/* Tenant use by model, recounted from the running jobs' placements. */
static void recount(struct world *w, int64_t use[3][DRV_MAX_MODELS])
{
	int i;
	memset(use, 0, sizeof(int64_t) * 3 * DRV_MAX_MODELS);
	for (i = 0; i < w->njobs; i++) {
		struct drv_sched_job_info info;
		int32_t t, k;
		if (w->jobs[i].done || drv_sched_job_get(w->s, w->jobs[i].job.id, &info) ||
		    info.state == DRV_SJ_PENDING)
			continue;
		for (t = 0; t < 3; t++)
			if (!strcmp(w->jobs[i].job.tenant, tenant_names[t]))
				break;
		for (k = 0; k < info.placement->ntasks; k++) {
			const struct drv_task_place *tp = &info.placement->tasks[k];
			use[t][w->c.nodes[tp->node].model] +=
				(int64_t)tp->gpu_milli * __builtin_popcountll(tp->gpu_mask);
		}
	}
}

static void check_pass(struct world *w, int64_t now)
{
	struct drv_sched_decisions *d = &w->d;
	int64_t use[3][DRV_MAX_MODELS];
	int i, k;
	char line[2048];

	cr_assert(eq(int, drv_cluster_check(&w->c), 0), "over-commit or stale aggregates at %" PRId64, now);
	for (i = 0; i < d->n; i++) {
		const struct drv_sched_decision *x = &d->v[i];
		size_t n = drv_sched_decision_format(w->s, x, line, sizeof(line));
		const char *c;
		cr_assert(lt(sz, n, sizeof(line)));
		for (c = line; *c; c++)
			w->hash = (w->hash ^ (uint8_t)*c) * 0x100000001b3ull;
		if (x->kind == DRV_DEC_START) {
			struct wjob *j = wfind(w, x->job);
			int32_t t;
			cr_assert(j != NULL);
			/* the whole gang, every task its full share */
			cr_assert(eq(i32, x->placement->ntasks, drv_job_tasks(&j->job)), "gang split");
			for (t = 0; t < x->placement->ntasks; t++) {
				const struct drv_task_place *tp = &x->placement->tasks[t];
				const struct drv_task_group *g = &j->job.groups[tp->group];
				cr_assert(eq(int, __builtin_popcountll(tp->gpu_mask), g->gpus ? g->gpus : 1));
				if (g->model >= 0)
					cr_assert(eq(int, w->c.nodes[tp->node].model, g->model));
				if (j->job.nregions)
					cr_assert(eq(str, w->c.pools[w->c.nodes[tp->node].pool].region,
						     "eu-west"));
				if (!j->job.preemptible)
					cr_assert(not(w->c.pools[w->c.nodes[tp->node].pool].spot));
			}
			/* a started job never overlaps a reservation it could delay */
			for (k = 0; k < d->n; k++) {
				const struct drv_sched_decision *r = &d->v[k];
				if (r->kind != DRV_DEC_RESERVE || !overlap(x->placement, r->placement))
					continue;
				if (getenv("SCHED_DEBUG") && now + j->job.runtime_estimate > r->at) {
					int q;
					for (q = 0; q < d->n; q++) {
						drv_sched_decision_format(w->s, &d->v[q], line, sizeof(line));
						fprintf(stderr, "%" PRId64 " %s\n", now, line);
					}
				}
				cr_assert(gt(i64, j->job.runtime_estimate, 0));
				cr_assert(le(i64, now + j->job.runtime_estimate, r->at),
					  "job %" PRIu64 " (ends %" PRId64 ") delays reservation of %" PRIu64
					  " at %" PRId64, x->job, now + j->job.runtime_estimate, r->job, r->at);
			}
			j->end_at = now + j->actual;
			j->preemptor = false;
			w->starts++;
		} else if (x->kind == DRV_DEC_PREEMPT) {
			struct wjob *p = wfind(w, x->job);
			cr_assert(gt(i32, x->nvictims, 0));
			for (k = 0; k < x->nvictims; k++) {
				struct wjob *v = wfind(w, x->victims[k]);
				struct drv_sched_job_info info;
				cr_assert(v != NULL);
				cr_assert(v->job.preemptible, "victim not preemptible");
				cr_assert(eq(int, drv_sched_job_get(w->s, v->job.id, &info), 0));
				cr_assert(eq(int, info.state, DRV_SJ_TERMINATING));
				/* whole gang still held until it stops */
				cr_assert(eq(i32, info.placement->ntasks, drv_job_tasks(&v->job)));
				if (!(x->flags & DRV_DEC_RECLAIM) && w->pol.order != DRV_ORDER_LAS)
					cr_assert(lt(i32, v->job.priority, p->job.priority));
				v->stop_at = x->at;
				v->preempted_by = p->job.id;
			}
			p->preemptor = true;
			p->waiting = x->nvictims;
			w->preempts++;
		} else if (x->kind == DRV_DEC_RESERVE) {
			cr_assert(ge(i64, x->at, now));
			w->reserves++;
		}
	}
	/* quotas: a and b (cohort "lab") 48 H100 GPUs each, a may borrow 16 */
	recount(w, use);
	if (getenv("SCHED_DEBUG") && use[0][h100] > 64000)
		for (i = 0; i < d->n; i++) {
			drv_sched_decision_format(w->s, &d->v[i], line, sizeof(line));
			fprintf(stderr, "%" PRId64 " %s\n", now, line);
		}
	cr_assert(le(i64, use[0][h100], 48000 + 16000), "tenant a over quota + borrow limit");
	cr_assert(le(i64, use[0][h100] + use[1][h100], 96000), "cohort over its quota");
	cr_assert(le(i64, use[1][h100], 96000));
}

static void world_init(struct world *w, uint64_t seed, const struct drv_sched_policy *pol)
{
	struct drv_sched_tenant t;
	memset(w, 0, sizeof(*w));
	build(&w->c, 6);
	w->s = drv_sched_new(&w->c);
	w->pol = *pol;
	w->rng = seed;
	w->hash = 0xcbf29ce484222325ull;
	drv_sched_decisions_init(&w->d);
	drv_sched_tenant_default(&t, "a");
	t.cohort = "lab";
	t.quota_milli[h100] = 48000;
	t.borrow_limit_milli[h100] = 16000;
	cr_assert(ge(int, drv_sched_set_tenant(w->s, &t), 0));
	drv_sched_tenant_default(&t, "b");
	t.cohort = "lab";
	t.quota_milli[h100] = 48000;
	cr_assert(ge(int, drv_sched_set_tenant(w->s, &t), 0));
}

static void world_release(struct world *w)
{
	int i;
	drv_sched_free(w->s);
	cr_assert(eq(int, drv_cluster_check(&w->c), 0));
	cr_assert(eq(i32, w->c.vertices[0].free_gpus, w->c.vertices[0].total_gpus),
		  "freeing the state leaves the cluster empty");
	for (i = 0; i < w->njobs; i++)
		drv_job_release(&w->jobs[i].job);
	free(w->jobs);
	drv_sched_decisions_release(&w->d);
	drv_cluster_release(&w->c);
}

/*
 * The incremental state (sorted queue, compact copies, cached reservation,
 * skipping) must decide exactly what a state built from scratch decides.
 * Without preemption the state is a function of the jobs and placements, so
 * a fresh state with the same running and pending jobs must make the same
 * non-pending decisions in the next pass. Returns the fresh decisions' text.
 */
static char *fresh_pass(struct world *w, int64_t now)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_decisions d;
	struct drv_sched_tenant t;
	char *buf = NULL, line[2048];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int i;

	build(&c, 6);
	s = drv_sched_new(&c);
	drv_sched_decisions_init(&d);
	drv_sched_tenant_default(&t, "a");
	t.cohort = "lab";
	t.quota_milli[h100] = 48000;
	t.borrow_limit_milli[h100] = 16000;
	drv_sched_set_tenant(s, &t);
	drv_sched_tenant_default(&t, "b");
	t.cohort = "lab";
	t.quota_milli[h100] = 48000;
	drv_sched_set_tenant(s, &t);
	for (i = 0; i < w->njobs; i++) {
		struct drv_sched_job_info info;
		if (w->jobs[i].done || drv_sched_job_get(w->s, w->jobs[i].job.id, &info))
			continue;
		if (info.state == DRV_SJ_PENDING)
			cr_assert(eq(int, drv_sched_submit(s, &w->jobs[i].job, NULL), 0));
		else
			cr_assert(eq(int, drv_sched_add_running(s, &w->jobs[i].job, NULL, info.placement,
								info.start_time, 0), 0));
	}
	cr_assert(ge(int, drv_sched_pass(s, now, &w->pol, &d), 0));
	for (i = 0; i < d.n; i++) {
		if (d.v[i].kind == DRV_DEC_PENDING)
			continue;
		drv_sched_decision_format(s, &d.v[i], line, sizeof(line));
		fprintf(f, "%s\n", line);
	}
	fclose(f);
	drv_sched_free(s);
	drv_sched_decisions_release(&d);
	drv_cluster_release(&c);
	return buf;
}

static char *own_lines(struct world *w)
{
	char *buf = NULL, line[2048];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int i;
	for (i = 0; i < w->d.n; i++) {
		if (w->d.v[i].kind == DRV_DEC_PENDING)
			continue;
		drv_sched_decision_format(w->s, &w->d.v[i], line, sizeof(line));
		fprintf(f, "%s\n", line);
	}
	fclose(f);
	return buf;
}

/* A victim stopped (requeued, or it ended during its grace period). */
static void victim_stopped(struct world *w, struct wjob *v)
{
	struct wjob *p = wfind(w, v->preempted_by);
	if (p && p->preemptor && p->waiting > 0)
		p->waiting--;
	v->preempted_by = 0;
}

/*
 * Liveness: a preemptor whose victims had all stopped before a pass starts
 * in that pass on the GPUs held for it; only its tenant's quota (others
 * may have started meanwhile) may still hold it back.
 */
static void check_preemptors(struct world *w, int64_t now)
{
	int i;
	for (i = 0; i < w->njobs; i++) {
		struct wjob *x = &w->jobs[i];
		struct drv_sched_job_info info;
		if (!x->preemptor || x->waiting > 0 || x->done)
			continue;
		cr_assert(eq(int, drv_sched_job_get(w->s, x->job.id, &info), 0));
		if (info.state == DRV_SJ_PENDING && info.why.reason == DRV_REASON_PREEMPTING)
			continue; /* victims stopped before this pass: checked next time */
		if (info.state == DRV_SJ_PENDING)
			cr_assert(eq(int, info.why.reason, DRV_REASON_QUOTA),
				  "at %" PRId64 " preemptor %" PRIu64 " waits with its victims gone",
				  now, x->job.id);
		x->preemptor = false;
	}
}

/* Replays a random workload of n jobs; returns the hash of all decisions. */
static uint64_t run_world(uint64_t seed, const struct drv_sched_policy *pol, int n)
{
	struct world W, *w = &W;
	int64_t now = 0;
	int next = 0, i, steps;
	uint64_t h;

	world_init(w, seed, pol);
	w->jobs = calloc((size_t)n, sizeof(*w->jobs));
	for (steps = 0; steps < 4 * n && (next < n || steps < 3 * n); steps++) {
		int arrivals = (int)(rnd(&w->rng) % 4);
		now += 1 + (int64_t)(rnd(&w->rng) % 30);
		/* completions and victims that stopped */
		for (i = 0; i < w->njobs; i++) {
			struct wjob *x = &w->jobs[i];
			if (x->done)
				continue;
			if (x->stop_at && x->stop_at <= now) {
				cr_assert(eq(int, drv_sched_requeue(w->s, x->job.id, now), 0));
				x->stop_at = 0;
				x->end_at = 0;
				victim_stopped(w, x);
			} else if (x->end_at && x->end_at <= now) {
				cr_assert(eq(int, drv_sched_finish(w->s, x->job.id, now), 0));
				x->done = true;
				if (x->stop_at)
					victim_stopped(w, x);
			}
		}
		for (i = 0; i < arrivals && next < n; i++) {
			struct wjob *x = &w->jobs[next++];
			make_job(w, x, (uint64_t)next, now);
			w->njobs = next;
			cr_assert(eq(int, drv_sched_submit(w->s, &x->job, NULL), 0));
		}
		{
			char *fresh = NULL, *own;
			if (!w->pol.preemption && w->pol.order != DRV_ORDER_LAS && steps % 7 == 3)
				fresh = fresh_pass(w, now);
			cr_assert(ge(int, drv_sched_pass(w->s, now, &w->pol, &w->d), 0));
			if (fresh) {
				own = own_lines(w);
				cr_assert(eq(str, own, fresh),
					  "at %" PRId64 " the incremental state decided otherwise than a fresh one",
					  now);
				free(own);
				free(fresh);
			}
		}
		check_pass(w, now);
		check_preemptors(w, now);
	}
	cr_assert(gt(int, w->starts, n / 4), "the workload ran (%d starts)", w->starts);
	h = w->hash;
	world_release(w);
	return h;
}

static void props(enum drv_sched_order order, enum drv_sched_mode mode, bool preempt)
{
	struct drv_sched_policy pol;
	uint64_t seed;
	drv_sched_policy_default(&pol);
	pol.order = order;
	pol.mode = mode;
	pol.preemption = preempt;
	pol.min_run_s = 20;
	pol.grace_s = 15;
	pol.aging_interval_s = 200;
	pol.las_threshold[0] = 200;
	pol.las_threshold[1] = 4000;
	for (seed = 1; seed <= 3; seed++) {
		uint64_t a = run_world(seed, &pol, 300);
		uint64_t b = run_world(seed, &pol, 300);
		cr_assert(eq(u64, a, b), "same workload, same decisions");
	}
}

Test(sched_props, fifo_backfill) { props(DRV_ORDER_FIFO, DRV_MODE_BACKFILL, false); }
Test(sched_props, fifo_backfill_preempt) { props(DRV_ORDER_FIFO, DRV_MODE_BACKFILL, true); }
Test(sched_props, sjf_strict) { props(DRV_ORDER_SJF, DRV_MODE_STRICT, true); }
Test(sched_props, sjf_backfill) { props(DRV_ORDER_SJF, DRV_MODE_BACKFILL, false); }
Test(sched_props, fair_greedy) { props(DRV_ORDER_FAIR, DRV_MODE_GREEDY, false); }
Test(sched_props, fifo_strict) { props(DRV_ORDER_FIFO, DRV_MODE_STRICT, false); }
Test(sched_props, las_greedy_preempt) { props(DRV_ORDER_LAS, DRV_MODE_GREEDY, true); }
Test(sched_props, fair_backfill_preempt) { props(DRV_ORDER_FAIR, DRV_MODE_BACKFILL, true); }

Test(sched_props, conservative_backfill)
{
	struct drv_sched_policy pol;
	drv_sched_policy_default(&pol);
	pol.conservative_depth = 4;
	cr_assert(eq(u64, run_world(7, &pol, 300), run_world(7, &pol, 300)));
}

/* ---- contracts ------------------------------------------------------------ */

Test(sched_api, names_parse_both_ways)
{
	enum drv_sched_order o;
	enum drv_sched_mode m;
	enum drv_sched_pools p;
	enum drv_preempt_policy pp;
	cr_assert(eq(int, drv_sched_order_parse("LAS", &o), 0));
	cr_assert(eq(str, (char *)drv_sched_order_name(o), "las"));
	cr_assert(eq(int, drv_sched_mode_parse("greedy", &m), 0));
	cr_assert(eq(str, (char *)drv_sched_mode_name(m), "greedy"));
	cr_assert(eq(int, drv_sched_pools_parse("fastest", &p), 0));
	cr_assert(eq(str, (char *)drv_sched_pools_name(p), "fastest"));
	cr_assert(eq(int, drv_preempt_policy_parse("Never", &pp), 0));
	cr_assert(eq(int, pp, DRV_PREEMPT_NEVER));
	cr_assert(eq(int, drv_sched_order_parse("random", &o), DRV_EINVAL));
	cr_assert(eq(int, drv_preempt_policy_parse("Sometimes", &pp), DRV_EINVAL));
}

Test(sched_api, errors_and_queries)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_job a, big;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_sched_job_info info;
	char buf[512];

	build(&c, 1);
	s = drv_sched_new(&c);
	drv_sched_policy_default(&pol);
	drv_sched_decisions_init(&d);
	drv_job_init(&a);
	a.id = 1;
	a.tenant = drv_strdup("a");
	drv_job_add_group(&a, "m", 1, 8, 0);
	drv_job_init(&big);
	big.id = 2;
	big.tenant = drv_strdup("a");
	drv_job_add_group(&big, "m", 1, 16, 0); /* no node has 16 GPUs */

	cr_assert(eq(int, drv_sched_submit(s, &a, "nosuchclass"), DRV_ENOENT));
	cr_assert(eq(int, drv_sched_submit(s, &a, NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &a, NULL), DRV_EEXIST));
	cr_assert(eq(int, drv_sched_submit(s, &big, NULL), 0));
	cr_assert(eq(int, drv_sched_finish(s, 99, 0), DRV_ENOENT));
	cr_assert(eq(int, drv_sched_requeue(s, 1, 0), DRV_ESTATE));
	/* known to never fit right after submit */
	cr_assert(eq(int, drv_sched_job_get(s, 2, &info), 0));
	cr_assert(eq(int, info.why.reason, DRV_REASON_NEVER));

	pol.nlas = 2;
	pol.las_threshold[1] = pol.las_threshold[0];
	cr_assert(eq(int, drv_sched_pass(s, 0, &pol, &d), DRV_EINVAL), "thresholds must ascend");
	drv_sched_policy_default(&pol);
	cr_assert(ge(int, drv_sched_pass(s, 10, &pol, &d), 1));
	cr_assert(eq(int, drv_sched_pass(s, 5, &pol, &d), DRV_EINVAL), "time went backwards");
	cr_assert(eq(int, drv_sched_job_get(s, 1, &info), 0));
	cr_assert(eq(int, info.state, DRV_SJ_RUNNING));
	cr_assert(eq(i32, drv_sched_running_count(s), 1));
	cr_assert(eq(i32, drv_sched_pending_count(s), 1));
	cr_assert(eq(int, drv_sched_job_get(s, 2, &info), 0));
	drv_sched_decision_format(s, &info.why, buf, sizeof(buf));
	cr_assert(eq(str, buf, "pending 2: BadConstraints: a task needs 16 GPUs on one node; "
			       "the largest node has 8"));
	/* the attained service counts up while it runs */
	cr_assert(eq(int, drv_sched_requeue(s, 1, 110), 0));
	cr_assert(eq(int, drv_sched_job_get(s, 1, &info), 0));
	cr_assert(eq(i64, info.attained_gpu_s, 800));
	cr_assert(eq(int, info.state, DRV_SJ_PENDING));

	drv_sched_free(s);
	cr_assert(eq(i32, c.vertices[0].free_gpus, c.vertices[0].total_gpus));
	drv_sched_decisions_release(&d);
	drv_job_release(&a);
	drv_job_release(&big);
	drv_cluster_release(&c);
}

/* ---- preemption: the preemptor starts once its victims stopped ---------- */

/* One pool, one leaf, one 8-GPU H100 node. */
static void one_node(struct drv_cluster *c)
{
	static const char *const lv[] = { "cluster", "pool", "leaf", "node" };
	struct drv_pool pool;
	int pv, l;
	drv_cluster_init(c, "one");
	drv_cluster_set_levels(c, lv, 4);
	pv = drv_cluster_add_vertex(c, 0, "p");
	memset(&pool, 0, sizeof(pool));
	pool.name = (char *)"p";
	pool.provider = (char *)"onprem";
	pool.region = (char *)"r";
	pool.vertex = pv;
	cr_assert(ge(int, drv_cluster_add_pool(c, &pool), 0));
	l = drv_cluster_add_vertex(c, pv, "l");
	cr_assert(ge(int, drv_cluster_add_node(c, l, "n1", drv_gpu_model_find("H100"), 8, 64000, 512000), 0));
}

static int count_kind(const struct drv_sched_decisions *d, enum drv_sched_dec_kind k, uint64_t job)
{
	int i, n = 0;
	for (i = 0; i < d->n; i++)
		if (d->v[i].kind == k && d->v[i].job == job)
			n++;
	return n;
}

/*
 * A preemptible 8-GPU job runs on the only node; an 8-GPU job of higher
 * priority arrives and preempts it. While the victim is terminating the
 * preemptor waits ("preempting"); once the caller reports the victim
 * stopped (requeue), the next pass starts the preemptor on the GPUs it
 * freed, under every order the skip loop serves and every mode.
 */
static void preemptor_starts(enum drv_sched_order order, enum drv_sched_mode mode)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_sched_job_info info;
	struct drv_job lo, hi;
	int i;

	one_node(&c);
	s = drv_sched_new(&c);
	drv_sched_policy_default(&pol);
	pol.order = order;
	pol.mode = mode;
	pol.preemption = true;
	drv_sched_decisions_init(&d);
	drv_job_init(&lo);
	lo.id = 1;
	lo.tenant = drv_strdup("default");
	lo.preemptible = true;
	lo.submit_time = 100;
	drv_job_add_group(&lo, "g", 1, 8, 0);
	drv_job_init(&hi);
	hi.id = 2;
	hi.tenant = drv_strdup("default");
	hi.priority = 100;
	hi.submit_time = 101;
	drv_job_add_group(&hi, "g", 1, 8, 0);

	cr_assert(eq(int, drv_sched_submit(s, &lo, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 100, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 1), 1), "the low job starts");

	cr_assert(eq(int, drv_sched_submit(s, &hi, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 101, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_PREEMPT, 2), 1), "the high job preempts");
	for (i = 0; i < d.n; i++)
		if (d.v[i].kind == DRV_DEC_PREEMPT) {
			cr_assert(eq(int, d.v[i].nvictims, 1));
			cr_assert(eq(u64, d.v[i].victims[0], 1));
		}

	/* the victim has not stopped yet: the preemptor still waits for it */
	cr_assert(ge(int, drv_sched_pass(s, 102, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 2), 0));
	cr_assert(eq(int, drv_sched_job_get(s, 2, &info), 0));
	cr_assert(eq(int, info.state, DRV_SJ_PENDING));
	cr_assert(eq(int, info.why.reason, DRV_REASON_PREEMPTING));
	cr_assert(eq(i64, info.why.n[0], 1), "one victim left");

	cr_assert(eq(int, drv_sched_requeue(s, 1, 103), 0));
	cr_assert(ge(int, drv_sched_pass(s, 103, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 2), 1),
		  "the preemptor starts in the first pass after its victim stopped");
	cr_assert(eq(int, drv_sched_job_get(s, 2, &info), 0));
	cr_assert(eq(int, info.state, DRV_SJ_RUNNING));
	cr_assert(eq(int, info.placement->ntasks, 1));
	cr_assert(eq(u64, info.placement->tasks[0].gpu_mask, 0xff));
	cr_assert(eq(int, drv_sched_job_get(s, 1, &info), 0));
	cr_assert(eq(int, info.state, DRV_SJ_PENDING), "the victim waits again");
	/* and it stays so: the victim does not take the node back */
	cr_assert(ge(int, drv_sched_pass(s, 104, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 1), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_PREEMPT, 1), 0));
	cr_assert(eq(int, drv_sched_job_get(s, 2, &info), 0));
	cr_assert(eq(int, info.state, DRV_SJ_RUNNING));

	drv_sched_free(s);
	cr_assert(eq(i32, c.vertices[0].free_gpus, c.vertices[0].total_gpus));
	drv_sched_decisions_release(&d);
	drv_job_release(&lo);
	drv_job_release(&hi);
	drv_cluster_release(&c);
}

Test(sched_preempt, preemptor_starts_fifo_backfill) { preemptor_starts(DRV_ORDER_FIFO, DRV_MODE_BACKFILL); }
Test(sched_preempt, preemptor_starts_fifo_strict) { preemptor_starts(DRV_ORDER_FIFO, DRV_MODE_STRICT); }
Test(sched_preempt, preemptor_starts_fifo_greedy) { preemptor_starts(DRV_ORDER_FIFO, DRV_MODE_GREEDY); }
Test(sched_preempt, preemptor_starts_sjf_backfill) { preemptor_starts(DRV_ORDER_SJF, DRV_MODE_BACKFILL); }
Test(sched_preempt, preemptor_starts_las_backfill) { preemptor_starts(DRV_ORDER_LAS, DRV_MODE_BACKFILL); }
Test(sched_preempt, preemptor_starts_fair_backfill) { preemptor_starts(DRV_ORDER_FAIR, DRV_MODE_BACKFILL); }
Test(sched_preempt, preemptor_starts_fair_greedy) { preemptor_starts(DRV_ORDER_FAIR, DRV_MODE_GREEDY); }

/* ---- preemption: searches that find no victim without scanning ---------- */

static void mkjob(struct drv_job *j, uint64_t id, int32_t gpus, int32_t prio, bool preemptible,
		  int64_t submit)
{
	drv_job_init(j);
	j->id = id;
	j->tenant = drv_strdup("default");
	j->priority = prio;
	j->preemptible = preemptible;
	j->submit_time = submit;
	drv_job_add_group(j, "g", 1, gpus, 0);
}

/*
 * A pass knows, without scanning the running jobs, when none is of lower
 * priority (or, under LAS, of the same priority in a higher queue). That
 * knowledge must follow the running jobs: here a lower-priority job starts
 * in the same pass in which a search found no victim, and the next job of
 * higher priority that needs its GPUs must preempt it.
 */
Test(sched_preempt, victim_started_after_a_failed_search)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_job x, y, z, v;
	int i;

	one_node(&c);
	s = drv_sched_new(&c);
	drv_sched_policy_default(&pol);
	pol.preemption = true; /* backfill: y, the first blocked job, is always searched */
	drv_sched_decisions_init(&d);
	mkjob(&x, 1, 4, 20, true, 0);  /* holds half the node; too high to preempt */
	mkjob(&y, 2, 8, 10, false, 1); /* cannot fit, no victim of lower priority */
	mkjob(&z, 3, 4, 0, true, 2);   /* fits the other half */
	mkjob(&v, 4, 4, 10, false, 3); /* arrives later: may preempt z */

	cr_assert(eq(int, drv_sched_submit(s, &x, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 0, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 1), 1));
	cr_assert(eq(int, drv_sched_submit(s, &y, NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &z, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 2, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_PREEMPT, 2), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 3), 1), "z starts after y's search failed");

	cr_assert(eq(int, drv_sched_submit(s, &v, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 10, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_PREEMPT, 4), 1), "v preempts z");
	for (i = 0; i < d.n; i++)
		if (d.v[i].kind == DRV_DEC_PREEMPT) {
			cr_assert(eq(int, d.v[i].nvictims, 1));
			cr_assert(eq(u64, d.v[i].victims[0], 3));
		}
	cr_assert(eq(int, count_kind(&d, DRV_DEC_PREEMPT, 2), 0), "y still has no victim");

	drv_sched_free(s);
	drv_sched_decisions_release(&d);
	drv_job_release(&x);
	drv_job_release(&y);
	drv_job_release(&z);
	drv_job_release(&v);
	drv_cluster_release(&c);
}

/*
 * One 8-GPU job runs from 0 s under LAS with preemption, its first queue
 * ending at end_gpu_s GPU-seconds; a second 8-GPU job waits from 5 s. The
 * passes at times[i] must preempt for it want[i] times.
 */
static void las_crossing(int64_t end_gpu_s, const int64_t *times, const int *want, int n)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_job a, b;

	one_node(&c);
	s = drv_sched_new(&c);
	drv_sched_policy_default(&pol);
	pol.order = DRV_ORDER_LAS;
	pol.preemption = true;
	pol.las_threshold[0] = end_gpu_s;
	pol.las_threshold[1] = 10000;
	drv_sched_decisions_init(&d);
	mkjob(&a, 1, 8, 0, true, 0);
	mkjob(&b, 2, 8, 0, true, 5);

	cr_assert(eq(int, drv_sched_submit(s, &a, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 0, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 1), 1));
	cr_assert(eq(int, drv_sched_submit(s, &b, NULL), 0));
	for (int i = 0; i < n; i++) {
		cr_assert(ge(int, drv_sched_pass(s, times[i], &pol, &d), 0));
		cr_assert(eq(int, count_kind(&d, DRV_DEC_PREEMPT, 2), want[i]),
			  "%lld GPU-s at %lld s (queue end %lld)", (long long)(8 * times[i]),
			  (long long)times[i], (long long)end_gpu_s);
	}

	drv_sched_free(s);
	drv_sched_decisions_release(&d);
	drv_job_release(&a);
	drv_job_release(&b);
	drv_cluster_release(&c);
}

/*
 * Under LAS a running job moves to a higher queue as it attains service;
 * a search that found it in the same queue as the waiting job must not be
 * remembered once it moved: the waiting job then preempts it (8 GPUs pass
 * 100 GPU-s after 12.5 s).
 */
Test(sched_preempt, las_victim_moves_up_a_queue)
{
	static const int64_t t[] = { 5, 10, 13 };
	static const int want[] = { 0, 0, 1 };
	las_crossing(100, t, want, 3);
}

/*
 * A running job's LAS queue is recomputed only when it can have changed (at
 * the second its attained service reaches its queue's end, worked out in
 * advance): 8 GPUs reach 96 GPU-s at exactly 12 s, so the passes up to
 * 11 s still see the first queue and the pass at 12 s the second (ceil,
 * not floor + 1), after passes that used the time worked out.
 */
Test(sched_preempt, las_queue_changes_at_the_exact_second)
{
	static const int64_t t[] = { 5, 6, 7, 8, 9, 10, 11, 12 };
	static const int want[] = { 0, 0, 0, 0, 0, 0, 0, 1 };
	las_crossing(96, t, want, 8);
}

/* ---- backfill: the earliest reservation after galloping ----------------- */

/*
 * The reservation sweep frees running jobs in order of expected end and
 * tries the blocked job after each; after 16 failed tries it gallops
 * (skips ever more points) and, once the job fits, halves back to the
 * earliest point that fits. Here 36 CPU-only jobs end one by one (every
 * 100 s) and the blocked job needs the node's every CPU, so it fits only
 * once the last of them ended: the sweep gallops past points, and the
 * halving must narrow down to the last one (it once tried the same
 * failing point forever). The reservation is at the last end, 3,600 s.
 */
Test(sched_backfill, earliest_after_galloping, .timeout = 20)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_job small[36], big;
	int i, nresv = 0;

	one_node(&c);
	s = drv_sched_new(&c);
	drv_sched_policy_default(&pol);
	drv_sched_decisions_init(&d);
	for (i = 0; i < 36; i++) {
		struct drv_task_group *g;
		drv_job_init(&small[i]);
		small[i].id = (uint64_t)i + 1;
		small[i].tenant = drv_strdup("default");
		small[i].runtime_estimate = 100 * (i + 1);
		g = drv_job_add_group(&small[i], "cpu", 1, 0, 0);
		g->cpu_milli = 1500;
		cr_assert(eq(int, drv_sched_submit(s, &small[i], NULL), 0));
	}
	cr_assert(ge(int, drv_sched_pass(s, 0, &pol, &d), 0));
	cr_assert(eq(i32, drv_sched_running_count(s), 36));

	drv_job_init(&big);
	big.id = 100;
	big.tenant = drv_strdup("default");
	drv_job_add_group(&big, "all", 1, 1, 0)->cpu_milli = 64000;
	cr_assert(eq(int, drv_sched_submit(s, &big, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 1, &pol, &d), 0));
	for (i = 0; i < d.n; i++)
		if (d.v[i].kind == DRV_DEC_RESERVE && d.v[i].job == 100) {
			nresv++;
			cr_assert(eq(i64, d.v[i].at, 3600));
		}
	cr_assert(eq(int, nresv, 1), "the blocked job holds a reservation");

	drv_sched_free(s);
	drv_sched_decisions_release(&d);
	for (i = 0; i < 36; i++)
		drv_job_release(&small[i]);
	drv_job_release(&big);
	drv_cluster_release(&c);
}

/* ---- quotas: jobs held at their tenant's quota ---------------------------- */

/*
 * A pass passes over a job held at its tenant's quota without looking at it
 * again while nothing its quota check reads changed (the tenant's use of the
 * model, its cohort's, the tenants' settings). These tests fail when that
 * mark outlives such a change: the held job must start, or get its new
 * numbers, in the very pass that sees the change.
 */

static void qjob(struct drv_job *j, uint64_t id, int32_t gpus, const char *tenant,
		 int64_t submit, int64_t estimate)
{
	drv_job_init(j);
	j->id = id;
	j->tenant = drv_strdup(tenant);
	j->submit_time = submit;
	j->runtime_estimate = estimate;
	drv_job_add_group(j, "g", 1, gpus, 0);
}

static void qtenant(struct drv_sched *s, const char *name, const char *cohort, int32_t gpus,
		    int32_t borrow)
{
	struct drv_sched_tenant t;
	drv_sched_tenant_default(&t, name);
	t.cohort = cohort;
	t.quota_milli[drv_gpu_model_find("H100")] = gpus * 1000;
	if (borrow >= 0)
		t.borrow_limit_milli[drv_gpu_model_find("H100")] = borrow * 1000;
	cr_assert(ge(int, drv_sched_set_tenant(s, &t), 0));
}

static void expect_quota(struct drv_sched *s, uint64_t id, int64_t used, int64_t quota)
{
	struct drv_sched_job_info info;
	cr_assert(eq(int, drv_sched_job_get(s, id, &info), 0));
	cr_assert(eq(int, info.state, DRV_SJ_PENDING), "job %" PRIu64 " pending", id);
	cr_assert(eq(int, info.why.reason, DRV_REASON_QUOTA), "job %" PRIu64 ": reason %d", id,
		  info.why.reason);
	cr_assert(eq(i64, info.why.n[1], used), "job %" PRIu64 ": its tenant's use", id);
	cr_assert(eq(i64, info.why.n[2], quota), "job %" PRIu64 ": its tenant's quota", id);
}

/*
 * Tenant t may hold 2 GPUs of the 8-GPU node: a (2 GPUs) runs, b and c (2
 * each) wait at quota over passes in which nothing changes (b's reason is
 * reported once). The pass after a finishes starts b (and c still waits,
 * with t's use counted again), under every order and mode.
 */
static void held_starts_after_finish(enum drv_sched_order order, enum drv_sched_mode mode)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_job a, b, x;
	int64_t now;

	one_node(&c);
	s = drv_sched_new(&c);
	drv_sched_policy_default(&pol);
	pol.order = order;
	pol.mode = mode;
	drv_sched_decisions_init(&d);
	qtenant(s, "t", NULL, 2, -1);
	qjob(&a, 1, 2, "t", 0, 100);
	qjob(&b, 2, 2, "t", 1, 100);
	qjob(&x, 3, 2, "t", 2, 100);

	cr_assert(eq(int, drv_sched_submit(s, &a, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 0, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 1), 1));
	cr_assert(eq(int, drv_sched_submit(s, &b, NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &x, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 2, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_PENDING, 2), 1), "b's quota reason is reported");
	expect_quota(s, 2, 2000, 2000);
	for (now = 3; now < 10; now++) {
		cr_assert(ge(int, drv_sched_pass(s, now, &pol, &d), 0));
		cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 2), 0));
		cr_assert(eq(int, count_kind(&d, DRV_DEC_PENDING, 2), 0), "unchanged: not again");
		expect_quota(s, 2, 2000, 2000);
		expect_quota(s, 3, 2000, 2000);
	}
	cr_assert(eq(int, drv_sched_finish(s, 1, 10), 0));
	cr_assert(ge(int, drv_sched_pass(s, 10, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 2), 1), "b starts once a finished");
	expect_quota(s, 3, 2000, 2000);

	/* a job requeued (its node died) gives its quota back the same way */
	cr_assert(eq(int, drv_sched_requeue(s, 2, 20), 0));
	cr_assert(ge(int, drv_sched_pass(s, 20, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 2) + count_kind(&d, DRV_DEC_START, 3), 1),
		  "b or x takes the quota b gave back");

	drv_sched_free(s);
	drv_sched_decisions_release(&d);
	drv_job_release(&a);
	drv_job_release(&b);
	drv_job_release(&x);
	drv_cluster_release(&c);
}

Test(sched_quota, held_starts_after_finish_fifo) { held_starts_after_finish(DRV_ORDER_FIFO, DRV_MODE_BACKFILL); }
Test(sched_quota, held_starts_after_finish_sjf) { held_starts_after_finish(DRV_ORDER_SJF, DRV_MODE_BACKFILL); }
Test(sched_quota, held_starts_after_finish_las) { held_starts_after_finish(DRV_ORDER_LAS, DRV_MODE_BACKFILL); }
Test(sched_quota, held_starts_after_finish_fair) { held_starts_after_finish(DRV_ORDER_FAIR, DRV_MODE_BACKFILL); }
Test(sched_quota, held_starts_after_finish_strict) { held_starts_after_finish(DRV_ORDER_FIFO, DRV_MODE_STRICT); }
Test(sched_quota, held_starts_after_finish_greedy) { held_starts_after_finish(DRV_ORDER_FAIR, DRV_MODE_GREEDY); }

/*
 * Tenants a and b share cohort c (4 GPUs each, a may borrow 4). Each runs a
 * 4-GPU job; a's second waits: the cohort has nothing unused. When b's job
 * finishes, the pass that follows lets a borrow b's share: a's job starts.
 * A change in a peer's use is a change for the whole cohort.
 */
Test(sched_quota, cohort_peer_frees_what_to_borrow)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_job a1, b1, a2;
	int i, borrowing = 0;

	one_node(&c);
	s = drv_sched_new(&c);
	drv_sched_policy_default(&pol);
	pol.order = DRV_ORDER_FAIR;
	drv_sched_decisions_init(&d);
	qtenant(s, "a", "c", 4, 4);
	qtenant(s, "b", "c", 4, -1);
	qjob(&a1, 1, 4, "a", 0, 100);
	qjob(&b1, 2, 4, "b", 0, 100);
	qjob(&a2, 3, 4, "a", 1, 100);
	cr_assert(eq(int, drv_sched_submit(s, &a1, NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &b1, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 0, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 1) + count_kind(&d, DRV_DEC_START, 2), 2));
	cr_assert(eq(int, drv_sched_submit(s, &a2, NULL), 0));
	for (i = 1; i < 5; i++) {
		cr_assert(ge(int, drv_sched_pass(s, i, &pol, &d), 0));
		expect_quota(s, 3, 4000, 4000);
	}
	cr_assert(eq(int, drv_sched_finish(s, 2, 5), 0));
	cr_assert(ge(int, drv_sched_pass(s, 5, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 3), 1), "a borrows what b left");
	for (i = 0; i < d.n; i++)
		if (d.v[i].kind == DRV_DEC_START && d.v[i].job == 3)
			borrowing = !!(d.v[i].flags & DRV_DEC_BORROWING);
	cr_assert(borrowing, "a's second job starts borrowing");

	drv_sched_free(s);
	drv_sched_decisions_release(&d);
	drv_job_release(&a1);
	drv_job_release(&b1);
	drv_job_release(&a2);
	drv_cluster_release(&c);
}

/*
 * What a held job's quota check read is compared by value, not by when it
 * last moved: t (cap 2, no cohort) runs a1 and a2 (1 GPU each); big (2)
 * waits at 2 of 2. a1 ends and small (1 GPU, ahead of big in the queue)
 * takes its place in the same pass: t is back at 2 of 2, big's reason is
 * the same and not reported again. When a2 ends with nothing to take its
 * place, big's reason counts the new use at once; and a (cohort c, quota
 * 2, may borrow 2) at its borrowing limit keeps its reason while its peer
 * b's use moves, and starts x in the pass after one of its own jobs ends.
 */
Test(sched_quota, held_compared_by_value)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_job j[9];
	int i;

	one_node(&c);
	s = drv_sched_new(&c);
	drv_sched_policy_default(&pol);
	pol.order = DRV_ORDER_FAIR;
	drv_sched_decisions_init(&d);
	qtenant(s, "t", NULL, 2, -1);
	qtenant(s, "a", "c", 2, 2);
	qtenant(s, "b", "c", 4, -1);
	qjob(&j[0], 1, 1, "t", 0, 100);  /* a1 */
	qjob(&j[1], 2, 1, "t", 0, 1000); /* a2 */
	qjob(&j[2], 3, 2, "t", 2, 100);  /* big */
	qjob(&j[3], 4, 1, "t", 1, 100);  /* small */
	qjob(&j[4], 5, 2, "a", 0, 1000); /* a's two running */
	qjob(&j[5], 6, 2, "a", 0, 50);
	qjob(&j[6], 7, 1, "a", 3, 100);  /* x */
	qjob(&j[7], 8, 1, "b", 0, 10);   /* b's, in and out */
	qjob(&j[8], 9, 1, "b", 20, 10);
	for (i = 0; i < 3; i++)
		cr_assert(eq(int, drv_sched_submit(s, &j[i], NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &j[4], NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &j[5], NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &j[6], NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &j[7], NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 2, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 7), 0), "x waits: a is at its limit");
	expect_quota(s, 3, 2000, 2000);
	expect_quota(s, 7, 4000, 2000);
	cr_assert(ge(int, drv_sched_pass(s, 3, &pol, &d), 0));

	cr_assert(eq(int, drv_sched_finish(s, 1, 5), 0));
	cr_assert(eq(int, drv_sched_submit(s, &j[3], NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 5, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 4), 1), "small takes a1's place");
	cr_assert(eq(int, count_kind(&d, DRV_DEC_PENDING, 3), 0), "big: the same reason");
	expect_quota(s, 3, 2000, 2000);

	/* b's use moves (out, in) while a is at its limit: x's reason holds */
	cr_assert(eq(int, drv_sched_finish(s, 8, 10), 0));
	cr_assert(ge(int, drv_sched_pass(s, 10, &pol, &d), 0));
	expect_quota(s, 7, 4000, 2000);
	cr_assert(eq(int, count_kind(&d, DRV_DEC_PENDING, 7), 0), "x: the same reason");
	cr_assert(eq(int, drv_sched_submit(s, &j[8], NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 20, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 9), 1));
	expect_quota(s, 7, 4000, 2000);

	cr_assert(eq(int, drv_sched_finish(s, 2, 30), 0));
	cr_assert(ge(int, drv_sched_pass(s, 30, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_PENDING, 3), 1), "big's new numbers");
	expect_quota(s, 3, 1000, 2000);
	cr_assert(eq(int, drv_sched_finish(s, 6, 40), 0));
	cr_assert(ge(int, drv_sched_pass(s, 40, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 7), 1), "x starts once a job of a ends");

	drv_sched_free(s);
	drv_sched_decisions_release(&d);
	for (i = 0; i < 9; i++)
		drv_job_release(&j[i]);
	drv_cluster_release(&c);
}

/*
 * A change that does not free enough still changes the reason's numbers:
 * t (quota 4) runs x and y (2 GPUs each); z (4 GPUs) waits at 4 of 4. When
 * x finishes z still cannot start (2 of 4 used), and that pass reports z's
 * reason again with the new use.
 */
Test(sched_quota, reason_follows_the_use)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_job x, y, z;
	int i, found = 0;

	one_node(&c);
	s = drv_sched_new(&c);
	drv_sched_policy_default(&pol);
	drv_sched_decisions_init(&d);
	qtenant(s, "t", NULL, 4, -1);
	qjob(&x, 1, 2, "t", 0, 100);
	qjob(&y, 2, 2, "t", 0, 200);
	qjob(&z, 3, 4, "t", 1, 100);
	cr_assert(eq(int, drv_sched_submit(s, &x, NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &y, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 0, &pol, &d), 0));
	cr_assert(eq(int, drv_sched_submit(s, &z, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 1, &pol, &d), 0));
	cr_assert(ge(int, drv_sched_pass(s, 2, &pol, &d), 0));
	expect_quota(s, 3, 4000, 4000);
	cr_assert(eq(int, drv_sched_finish(s, 1, 3), 0));
	cr_assert(ge(int, drv_sched_pass(s, 3, &pol, &d), 0));
	for (i = 0; i < d.n; i++)
		if (d.v[i].kind == DRV_DEC_PENDING && d.v[i].job == 3) {
			found++;
			cr_assert(eq(int, d.v[i].reason, DRV_REASON_QUOTA));
			cr_assert(eq(i64, d.v[i].n[1], 2000), "the reason counts t's new use");
		}
	cr_assert(eq(int, found, 1), "z's reason is reported again");
	expect_quota(s, 3, 2000, 4000);

	drv_sched_free(s);
	drv_sched_decisions_release(&d);
	drv_job_release(&x);
	drv_job_release(&y);
	drv_job_release(&z);
	drv_cluster_release(&c);
}

/*
 * drv_sched_job_get tells a job the pass passed over as held at quota (its
 * quota reason) from jobs the pass never reached (the pass's "resources"
 * tail). r (6 GPUs) and q0 (t's 1-GPU quota) run; big (8) waits with a
 * reservation, so the pass skips what cannot fit: h (2 GPUs, long) is not
 * reached, q (1 GPU, short enough for the reserved GPU) is, and waits at
 * quota, in this pass and the next ones.
 */
Test(sched_quota, job_get_tells_held_from_unreached)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_sched_job_info info;
	struct drv_job r, q0, big, q, h;
	int64_t now;

	one_node(&c);
	s = drv_sched_new(&c);
	drv_sched_policy_default(&pol);
	drv_sched_decisions_init(&d);
	qtenant(s, "t", NULL, 1, -1);
	qjob(&r, 1, 6, "u", 0, 1000);
	qjob(&q0, 2, 1, "t", 0, 1000);
	qjob(&big, 3, 8, "u", 1, 100);
	qjob(&q, 4, 1, "t", 1, 10);
	qjob(&h, 5, 2, "u", 1, 5000);
	cr_assert(eq(int, drv_sched_submit(s, &r, NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &q0, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 0, &pol, &d), 0));
	cr_assert(eq(i32, drv_sched_running_count(s), 2));
	cr_assert(eq(int, drv_sched_submit(s, &big, NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &q, NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &h, NULL), 0));
	for (now = 1; now < 5; now++) {
		cr_assert(ge(int, drv_sched_pass(s, now, &pol, &d), 0));
		cr_assert(eq(int, drv_sched_job_get(s, 3, &info), 0));
		cr_assert(eq(int, info.why.reason, DRV_REASON_RESERVED));
		cr_assert(eq(int, drv_sched_job_get(s, 5, &info), 0));
		cr_assert(eq(int, info.why.reason, DRV_REASON_RESOURCES), "h: the pass's tail");
		expect_quota(s, 4, 1000, 1000);
	}

	drv_sched_free(s);
	drv_sched_decisions_release(&d);
	drv_job_release(&r);
	drv_job_release(&q0);
	drv_job_release(&big);
	drv_job_release(&q);
	drv_job_release(&h);
	drv_cluster_release(&c);
}

/*
 * A preemption search for a job within its nominal quota whose tenant has a
 * cohort may reclaim from peers over their own quota; with no such peer it
 * ends on the summary of possible victims. That must follow the peers' use:
 * a (quota 4) waits behind x (not preemptible) and b1 (b's 4, within b's
 * quota): no victim. Then x ends and b2 (higher priority) starts in the same
 * pass borrowing a's share, so b is over its quota: a's search in that pass
 * reclaims it.
 */
Test(sched_quota, reclaim_follows_a_peer_over_quota)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_job x, b1, a1, b2;
	int i, reclaims = 0;

	one_node(&c);
	s = drv_sched_new(&c);
	drv_sched_policy_default(&pol);
	pol.preemption = true;
	pol.min_run_s = 0;
	drv_sched_decisions_init(&d);
	qtenant(s, "a", "c", 4, -1);
	qtenant(s, "b", "c", 4, -1);
	qjob(&x, 1, 4, "u", 0, 100);
	x.priority = 100;
	qjob(&b1, 2, 4, "b", 0, 100);
	b1.preemptible = true;
	qjob(&a1, 3, 4, "a", 1, 100);
	qjob(&b2, 4, 4, "b", 2, 100);
	b2.priority = 50;
	b2.preemptible = true;

	cr_assert(eq(int, drv_sched_submit(s, &x, NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &b1, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 0, &pol, &d), 0));
	cr_assert(eq(i32, drv_sched_running_count(s), 2));
	cr_assert(eq(int, drv_sched_submit(s, &a1, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 1, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_PREEMPT, 3), 0), "b is within its quota");

	cr_assert(eq(int, drv_sched_finish(s, 1, 2), 0));
	cr_assert(eq(int, drv_sched_submit(s, &b2, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 2, &pol, &d), 0));
	cr_assert(eq(int, count_kind(&d, DRV_DEC_START, 4), 1), "b2 starts, borrowing");
	for (i = 0; i < d.n; i++)
		if (d.v[i].kind == DRV_DEC_PREEMPT && d.v[i].job == 3) {
			char line[512];
			drv_sched_decision_format(s, &d.v[i], line, sizeof(line));
			reclaims++;
			cr_assert(ne(u32, d.v[i].flags & DRV_DEC_RECLAIM, 0), "%s", line);
		}
	cr_assert(eq(int, reclaims, 1), "a reclaims its share from b in the same pass");

	drv_sched_free(s);
	drv_sched_decisions_release(&d);
	drv_job_release(&x);
	drv_job_release(&b1);
	drv_job_release(&a1);
	drv_job_release(&b2);
	drv_cluster_release(&c);
}
