/*
 * test_sim_packing.c: drv_sim_packing_loss on hand-built runs whose answer
 * is worked out by hand: two NVLink domains (racks) of two trays of four
 * GPUs, four one-tray jobs that leave one free tray in each rack, and a
 * waiting job that needs two trays in one rack (lost: 8 GPUs for 90 s) or
 * one tray (nothing lost, whether it starts at once or is held back); and
 * racks of three trays that two 2-tray gangs split with no better placement.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "drover/sim.h"

static char group[] = "w";

/* racks r0, r1 of trays t0, t1 (, t2); node index = trays * rack + tray */
static void make_cluster(struct drv_cluster *c, int trays)
{
	static const char *const lv[] = { "pool", "rack", "node" };
	int r, t, gb200 = drv_gpu_model_find("GB200");
	char name[32];

	drv_cluster_init(c, "nvl");
	cr_assert(eq(int, drv_cluster_set_levels(c, lv, 3), 0));
	c->nvl_level = 1;
	for (r = 0; r < 2; r++) {
		int32_t rack;
		snprintf(name, sizeof(name), "r%d", r);
		rack = drv_cluster_add_vertex(c, 0, name);
		for (t = 0; t < trays; t++) {
			snprintf(name, sizeof(name), "r%d-t%d", r, t);
			cr_assert(ge(int, drv_cluster_add_node(c, rack, name, gb200, 4, 144000, 1 << 20), 0));
		}
	}
}

/* A job of trays whole trays in one NVLink domain, submitted at t. */
static void add_job(struct drv_sim_workload *w, int trays, int64_t t)
{
	struct drv_sim_job *sj;
	DRV_GROW(w->jobs, (size_t)w->njobs + 1, w->cap);
	sj = &w->jobs[w->njobs++];
	memset(sj, 0, sizeof(*sj));
	sj->pclass = -1;
	sj->job.id = (uint64_t)w->njobs;
	sj->job.groups = drv_calloc(1, sizeof(*sj->job.groups));
	sj->job.ngroups = 1;
	sj->job.groups[0].name = group;
	sj->job.groups[0].model = -1;
	sj->job.groups[0].count = trays;
	sj->job.groups[0].gpus = 4;
	sj->job.submit_time = t;
	drv_job_set_topology(&sj->job, DRV_TOPO_REQUIRED, "nvlink-domain");
}

/* A run of job on the given nodes (all four GPUs of each), [start, end). */
static void add_run(struct drv_sim_result *r, int32_t job, int64_t start, int64_t end,
		    const int *nodes, int n)
{
	struct drv_sim_run *ru;
	int i;
	DRV_GROW(r->runs, r->nruns + 1, r->rcap);
	ru = &r->runs[r->nruns++];
	memset(ru, 0, sizeof(*ru));
	ru->job = job;
	ru->start = start;
	ru->end = end;
	ru->outcome = DRV_SIM_COMPLETED;
	drv_placement_init(&ru->place);
	DRV_GROW(ru->place.tasks, (size_t)n, ru->place.cap);
	for (i = 0; i < n; i++) {
		struct drv_task_place *tp = &ru->place.tasks[ru->place.ntasks++];
		memset(tp, 0, sizeof(*tp));
		tp->node = nodes[i];
		tp->gpu_milli = 1000;
		tp->gpu_mask = 0xf;
	}
}

/*
 * A, B, C, D (one tray each) at 0: A on r0-t0 and C on r1-t0 until 100, B
 * on r0-t1 and D on r1-t1 until 10. E, submitted at 5, needs e_trays; it
 * runs from e_start for 10 s on r0.
 */
static void scenario(struct drv_cluster *c, struct drv_sim_workload *w, struct drv_sim_result *r,
		     int e_trays, int64_t e_start)
{
	static const int n0[] = { 0 }, n1[] = { 1 }, n2[] = { 2 }, n3[] = { 3 }, n01[] = { 0, 1 };
	int i;

	make_cluster(c, 2);
	drv_sim_workload_init(w);
	drv_sim_result_init(r);
	for (i = 0; i < 4; i++)
		add_job(w, 1, 0);
	add_job(w, e_trays, 5);
	add_run(r, 0, 0, 100, n0, 1);
	add_run(r, 1, 0, 10, n1, 1);
	add_run(r, 2, 0, 100, n2, 1);
	add_run(r, 3, 0, 10, n3, 1);
	add_run(r, 4, e_start, e_start + 10, e_trays == 2 ? n01 : (e_start < 100 ? n1 : n0),
		e_trays);
}

static void done(struct drv_cluster *c, struct drv_sim_workload *w, struct drv_sim_result *r)
{
	drv_sim_result_release(r);
	drv_sim_workload_release(w);
	drv_cluster_release(c);
}

Test(sim_packing, split_capacity_is_lost)
{
	struct drv_cluster c;
	struct drv_sim_workload w;
	struct drv_sim_result r;
	struct drv_sim_packing pk;

	scenario(&c, &w, &r, 2, 100);
	cr_assert(eq(int, drv_sim_packing_loss(&c, &w, &r, 0, 110, &pk), 0));
	/* from 10 to 100 E waits with one free tray in each rack */
	cr_assert(eq(dbl, pk.gpu_s, 16.0 * 110));
	cr_assert(eq(dbl, pk.lost_gpu_s, 8.0 * 90));
	cr_assert(eq(dbl, pk.idle_wait_gpu_s, 8.0 * 90));
	/* A and C in one rack would have left the other to E */
	cr_assert(eq(dbl, pk.repack_lost_gpu_s, 8.0 * 90));
	cr_assert(eq(i64, pk.repack_undecided, 0));
	cr_assert(eq(dbl, pk.alloc_gpu_s, 16.0 * 10 + 8.0 * 90 + 8.0 * 10));
	cr_assert(eq(i64, pk.events, 4)); /* 0, 5, 10, 100 */
	/* a window counts only what lies inside it */
	cr_assert(eq(int, drv_sim_packing_loss(&c, &w, &r, 50, 110, &pk), 0));
	cr_assert(eq(dbl, pk.gpu_s, 16.0 * 60));
	cr_assert(eq(dbl, pk.lost_gpu_s, 8.0 * 50));
	cr_assert(eq(i64, pk.events, 1));
	cr_assert(eq(int, drv_sim_packing_loss(&c, &w, &r, 110, 100, &pk), DRV_EINVAL));
	done(&c, &w, &r);
}

Test(sim_packing, a_gang_that_fits_a_rack_loses_nothing)
{
	struct drv_cluster c;
	struct drv_sim_workload w;
	struct drv_sim_result r;
	struct drv_sim_packing pk;

	/* E needs one tray and starts as soon as one is free: nothing idles
	 * while it waits */
	scenario(&c, &w, &r, 1, 10);
	cr_assert(eq(int, drv_sim_packing_loss(&c, &w, &r, 0, 110, &pk), 0));
	cr_assert(eq(dbl, pk.lost_gpu_s, 0));
	cr_assert(eq(dbl, pk.idle_wait_gpu_s, 0));
	done(&c, &w, &r);
}

Test(sim_packing, a_held_back_gang_is_queue_order_not_packing)
{
	struct drv_cluster c;
	struct drv_sim_workload w;
	struct drv_sim_result r;
	struct drv_sim_packing pk;

	/* E needs one tray but waits until 100 (as a reservation would hold
	 * it): idle while waiting, yet a rack had room, so not packing */
	scenario(&c, &w, &r, 1, 100);
	cr_assert(eq(int, drv_sim_packing_loss(&c, &w, &r, 0, 110, &pk), 0));
	cr_assert(eq(dbl, pk.lost_gpu_s, 0));
	cr_assert(eq(dbl, pk.idle_wait_gpu_s, 8.0 * 90));
	done(&c, &w, &r);
}

Test(sim_packing, rejected_jobs_never_wait)
{
	struct drv_cluster c;
	struct drv_sim_workload w;
	struct drv_sim_result r;
	struct drv_sim_packing pk;

	scenario(&c, &w, &r, 2, 100);
	/* E made never-started and rejected: it is not waiting for anything */
	r.runs[4].start = r.runs[4].end = -1;
	r.runs[4].outcome = DRV_SIM_REJECTED;
	w.jobs[4].reject = drv_strdup("never fits");
	cr_assert(eq(int, drv_sim_packing_loss(&c, &w, &r, 0, 110, &pk), 0));
	cr_assert(eq(dbl, pk.lost_gpu_s, 0));
	/* not rejected and never started: it waits to the end of the window */
	drv_free(w.jobs[4].reject);
	w.jobs[4].reject = NULL;
	r.runs[4].outcome = DRV_SIM_NEVER;
	cr_assert(eq(int, drv_sim_packing_loss(&c, &w, &r, 0, 110, &pk), 0));
	/* from 100 both racks are free: it would fit, so that idles, not lost */
	cr_assert(eq(dbl, pk.lost_gpu_s, 8.0 * 90));
	cr_assert(eq(dbl, pk.idle_wait_gpu_s, 8.0 * 90 + 16.0 * 10));
	done(&c, &w, &r);
}

Test(sim_packing, split_that_no_placement_avoids_is_not_repack_lost)
{
	static const int x[] = { 0, 1 }, y[] = { 3, 4 };
	struct drv_cluster c;
	struct drv_sim_workload w;
	struct drv_sim_result r;
	struct drv_sim_packing pk;

	/* racks of 3 trays; X and Y (2 trays each) hold one rack each until
	 * 100; Z (2 trays) waits from 0 with one tray free in each rack */
	make_cluster(&c, 3);
	drv_sim_workload_init(&w);
	drv_sim_result_init(&r);
	add_job(&w, 2, 0);
	add_job(&w, 2, 0);
	add_job(&w, 2, 0);
	add_run(&r, 0, 0, 100, x, 2);
	add_run(&r, 1, 0, 100, y, 2);
	add_run(&r, 2, 100, 110, x, 2);
	cr_assert(eq(int, drv_sim_packing_loss(&c, &w, &r, 0, 110, &pk), 0));
	cr_assert(eq(dbl, pk.gpu_s, 24.0 * 110));
	cr_assert(eq(dbl, pk.lost_gpu_s, 8.0 * 100));
	/* three 2-tray gangs never share two 3-tray racks */
	cr_assert(eq(dbl, pk.repack_lost_gpu_s, 0));
	cr_assert(eq(i64, pk.repack_undecided, 0));
	done(&c, &w, &r);
}
