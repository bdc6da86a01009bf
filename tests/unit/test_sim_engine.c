/*
 * test_sim_engine.c: the simulator against theory and against itself.
 * M/M/c (one node of c one-GPU slots, Poisson arrivals, exponential
 * service) gives the Erlang-C mean wait; Little's law holds; runs are
 * deterministic; failures requeue gangs whole; impossible jobs are
 * rejected; no GPU is ever over-committed.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drover/sched.h"
#include "drover/sim.h"

/* nnodes nodes of g GPUs under leaves of per_leaf nodes, one pool */
static void make_cluster(struct drv_cluster *c, int nnodes, int g, int per_leaf)
{
	static const char *const lv[] = { "cluster", "pool", "leaf", "node" };
	struct drv_pool p = { .name = "onprem", .provider = "onprem", .region = "local",
			      .price_micro_per_gpu_hour = 2000000 };
	int32_t pool_v, leaf = -1;
	int i, model = drv_gpu_model_find("P100");
	char name[32];

	drv_cluster_init(c, "t");
	cr_assert(eq(int, drv_cluster_set_levels(c, lv, 4), 0));
	pool_v = drv_cluster_add_vertex(c, 0, "onprem");
	cr_assert(ge(int, pool_v, 0));
	p.vertex = pool_v;
	cr_assert(ge(int, drv_cluster_add_pool(c, &p), 0));
	for (i = 0; i < nnodes; i++) {
		if (i % per_leaf == 0) {
			snprintf(name, sizeof(name), "leaf%d", i / per_leaf);
			leaf = drv_cluster_add_vertex(c, pool_v, name);
		}
		snprintf(name, sizeof(name), "n%d", i);
		cr_assert(ge(int, drv_cluster_add_node(c, leaf, name, model, g, 64000, 512000), 0));
	}
}

static double erlang_c_wait(int c, double lambda, double mu)
{
	double a = lambda / mu, rho = a / c, term = 1, sum = 0, pw;
	int k;
	for (k = 0; k < c; k++) {
		sum += term;
		term *= a / (k + 1);
	}
	/* term = a^c / c! */
	pw = term / (1 - rho) / (sum + term / (1 - rho));
	return pw / (c * mu - lambda);
}

static void run_opt(struct drv_cluster *c, struct drv_sim_workload *w,
		    const struct drv_sched_policy *pol, double mtbf, bool every_pass,
		    struct drv_sim_result *r)
{
	struct drv_sim_opts o = { .policy = pol, .mtbf_hours = mtbf, .repair_hours = 2,
				  .seed = 3, .provision_delay_s = 300, .every_pass = every_pass };
	drv_sim_result_init(r);
	cr_assert(eq(int, drv_sim_run(c, w, &o, r), 0));
}

static void run(struct drv_cluster *c, struct drv_sim_workload *w,
		const struct drv_sched_policy *pol, double mtbf, struct drv_sim_result *r)
{
	run_opt(c, w, pol, mtbf, false, r);
}

static void check_little(const struct drv_sim_summary *s)
{
	double l = s->mean_in_system, lw = s->arrival_rate * s->mean_sojourn_s;
	cr_assert(gt(dbl, l, 0));
	cr_assert(lt(dbl, fabs(l - lw) / l, 0.02), "L %f, lambda W %f", l, lw);
}

Test(sim_engine, mmc_mean_wait_matches_erlang_c)
{
	const int c = 4;
	struct drv_cluster cl;
	struct drv_sim_workload w;
	struct drv_sim_result r;
	struct drv_sched_policy pol;
	struct drv_sim_gen_opts g = { .njobs = 200000, .load = 0.7, .seed = 11,
				      .dist = DRV_SIM_DIST_EXP, .mean_duration_s = 1000,
				      .node_gpus = c, .total_gpus = c };
	double lambda, mu, sum = 0, want;
	int32_t i;

	make_cluster(&cl, 1, c, 1);
	drv_sim_workload_init(&w);
	cr_assert(eq(int, drv_sim_generate(&g, &w), 0));
	for (i = 0; i < w.njobs; i++)
		sum += (double)w.jobs[i].duration;
	/* the realised rates, not the nominal ones */
	mu = w.njobs / sum;
	lambda = (double)(w.njobs - 1) / (double)w.jobs[w.njobs - 1].job.submit_time;
	drv_sched_policy_default(&pol);
	pol.order = DRV_ORDER_FIFO;
	run(&cl, &w, &pol, 0, &r);
	want = erlang_c_wait(c, lambda, mu);
	cr_log_info("M/M/%d rho %.3f: mean wait %.2f s, Erlang-C %.2f s", c, lambda / (c * mu),
		    r.sum.avg_wait_s, want);
	cr_assert(eq(i64, r.sum.completed, w.njobs));
	cr_assert(lt(dbl, fabs(r.sum.avg_wait_s - want) / want, 0.05),
		  "mean wait %.2f s, Erlang-C %.2f s (lambda %g, mu %g)", r.sum.avg_wait_s, want,
		  lambda, mu);
	/* an M/M/c's servers are busy a fraction rho of the time overall */
	check_little(&r.sum);
	drv_sim_result_release(&r);
	drv_sim_workload_release(&w);
	drv_cluster_release(&cl);
}

static char *jobs_csv(const struct drv_cluster *c, const struct drv_sim_workload *w,
		      const struct drv_sim_result *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert(eq(int, drv_sim_write_jobs(f, c, w, r), 0));
	fclose(f);
	return buf;
}

/* Replays the runs: no GPU ever holds more than 1000 milli, a gang's tasks
 * all start at the run's start (one run = one placement of every task). */
static void check_capacity(const struct drv_cluster *c, const struct drv_sim_workload *w,
			   const struct drv_sim_result *r)
{
	struct ev {
		int64_t t;
		int32_t delta; /* +milli or -milli */
		int32_t gpu;   /* node * 64 + index */
	} *ev = NULL;
	size_t n = 0, cap = 0, i;
	int32_t *used = calloc((size_t)c->nnodes * 64, sizeof(int32_t));
	int64_t end = r->sum.makespan_s + 1;

	for (i = 0; i < r->nruns; i++) {
		const struct drv_sim_run *ru = &r->runs[i];
		int32_t t;
		if (ru->start < 0)
			continue;
		cr_assert(eq(int, ru->place.ntasks, drv_job_tasks(&w->jobs[ru->job].job)),
			  "job %d run %d: every task placed", ru->job, ru->attempt);
		for (t = 0; t < ru->place.ntasks; t++) {
			const struct drv_task_place *tp = &ru->place.tasks[t];
			int b;
			for (b = 0; b < 64; b++) {
				if (!(tp->gpu_mask >> b & 1))
					continue;
				if (n + 2 > cap) {
					cap = cap ? cap * 2 : 1024;
					ev = realloc(ev, cap * sizeof(*ev));
				}
				ev[n++] = (struct ev){ ru->start, tp->gpu_milli, tp->node * 64 + b };
				ev[n++] = (struct ev){ ru->end >= 0 ? ru->end : end, -tp->gpu_milli,
						       tp->node * 64 + b };
			}
		}
	}
	/* at equal times, releases first */
	for (i = 1; i < n; i++) {
		struct ev x = ev[i];
		size_t k = i;
		while (k > 0 && (ev[k - 1].t > x.t || (ev[k - 1].t == x.t && ev[k - 1].delta > x.delta))) {
			ev[k] = ev[k - 1];
			k--;
		}
		ev[k] = x;
	}
	for (i = 0; i < n; i++) {
		used[ev[i].gpu] += ev[i].delta;
		cr_assert(le(i32, used[ev[i].gpu], 1000), "GPU %d over-committed at %lld",
			  ev[i].gpu, (long long)ev[i].t);
	}
	free(ev);
	free(used);
}

Test(sim_engine, deterministic_little_and_capacity)
{
	struct drv_cluster cl;
	struct drv_sim_workload w;
	struct drv_sim_result r1, r2;
	struct drv_sched_policy pol;
	struct drv_sim_gen_opts g = { .njobs = 3000, .load = 0.85, .seed = 2,
				      .dist = DRV_SIM_DIST_PHILLY, .node_gpus = 8,
				      .total_gpus = 128 };
	static const enum drv_sched_order orders[] = { DRV_ORDER_FIFO, DRV_ORDER_SJF,
						       DRV_ORDER_LAS, DRV_ORDER_FAIR };
	static const enum drv_sched_mode modes[] = { DRV_MODE_STRICT, DRV_MODE_BACKFILL,
						     DRV_MODE_GREEDY };
	size_t a, b;

	drv_sim_workload_init(&w);
	cr_assert(eq(int, drv_sim_generate(&g, &w), 0));
	for (a = 0; a < DRV_ARRAY_SIZE(orders); a++) {
		for (b = 0; b < DRV_ARRAY_SIZE(modes); b++) {
			char *c1, *c2;
			drv_sched_policy_default(&pol);
			pol.order = orders[a];
			pol.mode = modes[b];
			pol.preemption = orders[a] == DRV_ORDER_LAS;
			make_cluster(&cl, 16, 8, 4);
			run(&cl, &w, &pol, 0, &r1);
			c1 = jobs_csv(&cl, &w, &r1);
			drv_cluster_release(&cl);
			/* the second run never skips a pass: skipping must change nothing */
			make_cluster(&cl, 16, 8, 4);
			run_opt(&cl, &w, &pol, 0, true, &r2);
			c2 = jobs_csv(&cl, &w, &r2);
			cr_assert(eq(str, c1, c2), "%s/%s: same inputs, same schedule",
				  drv_sched_order_name(orders[a]), drv_sched_mode_name(modes[b]));
			cr_assert(ge(i64, r2.sum.passes, r1.sum.passes));
			cr_assert(eq(i64, r1.sum.completed, w.njobs));
			check_little(&r1.sum);
			check_capacity(&cl, &w, &r1);
			free(c1);
			free(c2);
			drv_sim_result_release(&r1);
			drv_sim_result_release(&r2);
			drv_cluster_release(&cl);
		}
	}
	drv_sim_workload_release(&w);
}

Test(sim_engine, failures_requeue_whole_gangs)
{
	struct drv_cluster cl;
	struct drv_sim_workload w;
	struct drv_sim_result r;
	struct drv_sched_policy pol;
	struct drv_sim_gen_opts g = { .njobs = 2000, .load = 0.6, .seed = 4,
				      .dist = DRV_SIM_DIST_PHILLY, .node_gpus = 8,
				      .total_gpus = 128 };
	size_t i;
	int64_t failed_runs = 0;

	drv_sim_workload_init(&w);
	cr_assert(eq(int, drv_sim_generate(&g, &w), 0));
	drv_sched_policy_default(&pol);
	make_cluster(&cl, 16, 8, 4);
	run(&cl, &w, &pol, 24.0 * 7, &r);
	cr_assert(gt(i64, r.sum.failures, 0));
	cr_assert(gt(dbl, r.sum.lost_gpu_hours, 0));
	cr_assert(eq(i64, r.sum.completed, w.njobs), "every job completes in the end");
	for (i = 0; i < r.nruns; i++) {
		const struct drv_sim_run *ru = &r.runs[i];
		if (ru->outcome != DRV_SIM_FAILED)
			continue;
		failed_runs++;
		/* requeued whole: the next row is the same job's next attempt */
		cr_assert(lt(sz, i + 1, r.nruns));
		cr_assert(eq(i32, r.runs[i + 1].job, ru->job));
		cr_assert(eq(i32, r.runs[i + 1].attempt, ru->attempt + 1));
		cr_assert(eq(i32, r.runs[i + 1].place.ntasks, ru->place.ntasks));
	}
	cr_assert(eq(i64, failed_runs + r.sum.preemptions, r.sum.requeues));
	check_little(&r.sum);
	check_capacity(&cl, &w, &r);
	drv_sim_result_release(&r);
	drv_sim_workload_release(&w);
	drv_cluster_release(&cl);
}

Test(sim_engine, impossible_jobs_are_rejected_with_a_reason)
{
	static const char *csv = "name,submit_s,duration_s,tasks,gpus,gpu_model\n"
				 "ok,0,100,1,8,\n"
				 "huge,5,100,9,8,\n"
				 "wrongmodel,6,100,1,1,H100\n"
				 "after,10,100,2,8,\n";
	struct drv_cluster cl;
	struct drv_sim_workload w;
	struct drv_sim_result r;
	struct drv_sched_policy pol;
	struct drv_diags d;
	FILE *f = fmemopen((void *)csv, strlen(csv), "r");

	drv_sim_workload_init(&w);
	drv_diags_init(&d, "w.csv");
	cr_assert(eq(int, drv_sim_read_native(f, true, &w, &d), 0));
	fclose(f);
	drv_sched_policy_default(&pol);
	make_cluster(&cl, 8, 8, 4); /* 64 P100s */
	run(&cl, &w, &pol, 0, &r);
	cr_assert(eq(i64, r.sum.rejected, 2));
	cr_assert(eq(i64, r.sum.completed, 2));
	cr_assert(not(eq(ptr, w.jobs[1].reject, NULL)));
	cr_assert(not(eq(ptr, w.jobs[2].reject, NULL)));
	cr_assert(eq(int, r.runs[1].outcome, DRV_SIM_REJECTED));
	/* the 16-GPU job after them is not held up */
	cr_assert(eq(i64, r.runs[3].start, 10));
	check_little(&r.sum);
	drv_sim_result_release(&r);
	drv_diags_release(&d);
	drv_sim_workload_release(&w);
	drv_cluster_release(&cl);
}
