/*
 * test_sim_heap.c: the event heap pops in (time, push order) order, and
 * the generator is deterministic and hits its offered load.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>

#include "drover/sim.h"

Test(sim_heap, pops_by_time_then_push_order)
{
	struct drv_sim_heap h;
	struct drv_sim_event ev;
	struct drv_rng r;
	int64_t last_t = -1;
	int32_t last_a = -1;
	int i, n = 0;

	drv_sim_heap_init(&h);
	drv_rng_seed(&r, 7);
	/* a = push index; times from a small range so ties are common */
	for (i = 0; i < 5000; i++)
		drv_sim_heap_push(&h, (int64_t)(drv_rng_next(&r) % 100), 1, i, 0);
	cr_assert(eq(i64, drv_sim_heap_peek(&h)->time, 0));
	while (drv_sim_heap_pop(&h, &ev)) {
		cr_assert(ge(i64, ev.time, last_t));
		if (ev.time == last_t)
			cr_assert(gt(i32, ev.a, last_a), "ties pop in push order");
		last_t = ev.time;
		last_a = ev.a;
		n++;
	}
	cr_assert(eq(int, n, 5000));
	cr_assert(eq(ptr, (void *)drv_sim_heap_peek(&h), NULL));
	drv_sim_heap_release(&h);
}

Test(sim_rng, seeded_and_exponential_mean)
{
	struct drv_rng a, b;
	double sum = 0;
	int i;
	drv_rng_seed(&a, 42);
	drv_rng_seed(&b, 42);
	for (i = 0; i < 100; i++)
		cr_assert(eq(u64, drv_rng_next(&a), drv_rng_next(&b)));
	drv_rng_seed(&b, 43);
	cr_assert(not(eq(u64, drv_rng_next(&a), drv_rng_next(&b))));
	for (i = 0; i < 200000; i++)
		sum += drv_rng_exp(&a, 10.0);
	cr_assert(lt(dbl, fabs(sum / 200000 - 10.0), 0.1));
}

static double offered_load(const struct drv_sim_workload *w, int total_gpus)
{
	double work = 0;
	int32_t i, g;
	for (i = 0; i < w->njobs; i++) {
		int64_t n = 0;
		for (g = 0; g < w->jobs[i].job.ngroups; g++)
			n += (int64_t)w->jobs[i].job.groups[g].count * w->jobs[i].job.groups[g].gpus;
		work += (double)n * w->jobs[i].duration;
	}
	/* arrivals span (n-1) inter-arrival gaps of a Poisson process */
	return work / ((double)w->jobs[w->njobs - 1].job.submit_time * total_gpus);
}

Test(sim_gen, deterministic_and_at_load)
{
	struct drv_sim_gen_opts o = { .njobs = 20000, .load = 0.7, .seed = 5,
				      .dist = DRV_SIM_DIST_PHILLY, .node_gpus = 8,
				      .total_gpus = 512 };
	struct drv_sim_workload w1, w2;
	int32_t i;
	double rho;

	drv_sim_workload_init(&w1);
	drv_sim_workload_init(&w2);
	cr_assert(eq(int, drv_sim_generate(&o, &w1), 0));
	cr_assert(eq(int, drv_sim_generate(&o, &w2), 0));
	cr_assert(eq(int, w1.njobs, 20000));
	for (i = 0; i < w1.njobs; i++) {
		cr_assert(eq(i64, w1.jobs[i].job.submit_time, w2.jobs[i].job.submit_time));
		cr_assert(eq(i64, w1.jobs[i].duration, w2.jobs[i].duration));
		cr_assert(eq(int, w1.jobs[i].job.priority, w2.jobs[i].job.priority));
		if (i)
			cr_assert(ge(i64, w1.jobs[i].job.submit_time,
				     w1.jobs[i - 1].job.submit_time));
	}
	rho = offered_load(&w1, 512);
	cr_assert(lt(dbl, fabs(rho - 0.7), 0.7 * 0.03), "offered load %f", rho);
	drv_sim_workload_release(&w1);
	drv_sim_workload_release(&w2);

	o.dist = DRV_SIM_DIST_EXP;
	o.mean_duration_s = 100;
	o.total_gpus = 4;
	drv_sim_workload_init(&w1);
	cr_assert(eq(int, drv_sim_generate(&o, &w1), 0));
	rho = offered_load(&w1, 4);
	cr_assert(lt(dbl, fabs(rho - 0.7), 0.7 * 0.03), "offered load %f", rho);
	drv_sim_workload_release(&w1);
}

/* Philly's size mix on a 16-GPU cluster: no job asks for more GPUs than
 * the cluster has (the 32- and 64-GPU sizes are left out), and the mix's
 * larger sizes that fit still come. */
Test(sim_gen, sizes_never_exceed_the_cluster)
{
	struct drv_sim_gen_opts o = { .njobs = 5000, .load = 0.7, .seed = 9,
				      .dist = DRV_SIM_DIST_PHILLY, .node_gpus = 8,
				      .total_gpus = 16 };
	struct drv_sim_workload w;
	int64_t most = 0;
	int32_t i, g;

	drv_sim_workload_init(&w);
	cr_assert(eq(int, drv_sim_generate(&o, &w), 0));
	for (i = 0; i < w.njobs; i++) {
		int64_t n = 0;
		for (g = 0; g < w.jobs[i].job.ngroups; g++)
			n += (int64_t)w.jobs[i].job.groups[g].count * w.jobs[i].job.groups[g].gpus;
		cr_assert(le(i64, n, 16), "job %d asks for %lld GPUs", i, (long long)n);
		most = n > most ? n : most;
	}
	cr_assert(eq(i64, most, 16));
	drv_sim_workload_release(&w);
}
