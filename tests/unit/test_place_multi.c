/*
 * test_place_multi.c: the multi-resource scorer ("multi", src/core/multi.c)
 * and its learned mix: on hand-built nodes it takes the node that strands
 * nothing where best-fit strands GPUs; it never over-commits GPUs, CPU or
 * memory on random clusters and jobs; the learned mix follows a workload
 * that shifts; the names parse.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "drover/model.h"

/* n nodes of 8 H100 and `cores` cores under one leaf */
static void build(struct drv_cluster *c, int n, int cores)
{
	static const char *const lv[] = { "cluster", "leaf", "node" };
	int h100 = drv_gpu_model_find("H100"), i;
	int32_t leaf;
	char name[32];

	drv_cluster_init(c, "t");
	cr_assert(eq(int, drv_cluster_set_levels(c, lv, 3), 0));
	leaf = drv_cluster_add_vertex(c, 0, "leaf");
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		cr_assert(ge(int, drv_cluster_add_node(c, leaf, name, h100, 8, cores * 1000LL,
						       1 << 20), 0));
	}
}

/* Holds `gpus` GPUs (the lowest) and `cores` cores of node ni. */
static void hold(struct drv_cluster *c, int32_t ni, int gpus, int cores)
{
	struct drv_task_place t = { .node = ni, .gpu_milli = DRV_MILLI,
				    .gpu_mask = gpus ? (1ULL << gpus) - 1 : 0,
				    .cpu_milli = cores * 1000LL };
	struct drv_placement p = { &t, 1, 1 };
	drv_cluster_commit(c, &p);
}

static void pod(struct drv_job *j, int gpus, int cores)
{
	drv_job_init(j);
	drv_job_add_group(j, "p", 1, gpus, 0)->cpu_milli = cores * 1000LL;
}

/* Where job goes under strategy s with mix m: the node's name. */
static const char *where(struct drv_cluster *c, struct drv_job *j, enum drv_place_strategy s,
			 const struct drv_place_mix *m)
{
	static char buf[64];
	struct drv_place_opts o = { .strategy = s, .mix = m };
	struct drv_placement p;
	char why[256];

	drv_placement_init(&p);
	cr_assert(eq(int, drv_place(c, j, &o, &p, why, sizeof(why)), 0), "%s", why);
	snprintf(buf, sizeof(buf), "%s", c->nodes[p.tasks[0].node].name);
	drv_placement_release(&p);
	return buf;
}

/* A mix of 1-GPU tasks with 12 cores each, as the scheduler would learn it. */
static void learn_gpu_tasks(struct drv_place_mix *m)
{
	struct drv_job j;
	int i;
	drv_place_mix_init(m, 0);
	pod(&j, 1, 12);
	for (i = 0; i < 10; i++)
		drv_place_mix_observe(m, &j);
	drv_job_release(&j);
}

Test(place_multi, gpu_task_goes_where_it_strands_no_gpu)
{
	struct drv_cluster c;
	struct drv_place_mix m;
	struct drv_job j;

	build(&c, 2, 96);
	hold(&c, 0, 6, 72); /* n0: 2 GPUs and 24 cores free: room for two such tasks */
	hold(&c, 1, 4, 32); /* n1: 4 GPUs and 64 cores free */
	learn_gpu_tasks(&m);
	pod(&j, 1, 16);
	/* best-fit takes n0 (fewer free GPUs) and leaves its last GPU 8 cores,
	 * too few for the 12 the tasks seen ask */
	cr_assert(eq(str, (char *)where(&c, &j, DRV_PLACE_BESTFIT, &m), "n0"));
	cr_assert(eq(str, (char *)where(&c, &j, DRV_PLACE_MULTI, &m), "n1"));
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(place_multi, cpu_only_task_leaves_the_cpus_idle_gpus_need)
{
	struct drv_cluster c;
	struct drv_place_mix m;
	struct drv_job j;

	build(&c, 2, 96);
	hold(&c, 0, 7, 72); /* n0: 1 GPU and 24 cores free */
	hold(&c, 1, 4, 0);  /* n1: 4 GPUs and 96 cores free */
	learn_gpu_tasks(&m);
	pod(&j, 0, 20);
	cr_assert(eq(str, (char *)where(&c, &j, DRV_PLACE_BESTFIT, &m), "n0"));
	cr_assert(eq(str, (char *)where(&c, &j, DRV_PLACE_MULTI, &m), "n1"));
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(place_multi, cpu_only_task_prefers_a_node_without_free_gpus)
{
	struct drv_cluster c;
	struct drv_place_mix m;
	struct drv_job j;

	build(&c, 3, 96);
	hold(&c, 0, 8, 0);  /* n0: no GPU free, 96 cores */
	learn_gpu_tasks(&m);
	pod(&j, 0, 8);
	cr_assert(eq(str, (char *)where(&c, &j, DRV_PLACE_MULTI, &m), "n0"));
	drv_job_release(&j);
	drv_cluster_release(&c);
}

/* A node of `gpus` H100s, `cores` cores and `gib` GiB under the one leaf. */
static void add_node(struct drv_cluster *c, const char *name, int gpus, int cores, int gib)
{
	cr_assert(ge(int, drv_cluster_add_node(c, 1, name, drv_gpu_model_find("H100"), gpus,
					       cores * 1000LL, (int64_t)gib << 10), 0));
}

/* A one-task job: whole GPUs, or a share of one (milli), and cores. */
static void task(struct drv_job *j, int gpus, int milli, int cores)
{
	drv_job_init(j);
	drv_job_add_group(j, "p", 1, gpus, milli)->cpu_milli = cores * 1000LL;
}

static const enum drv_place_strategy strategies[] = { DRV_PLACE_BESTFIT, DRV_PLACE_FGD,
						     DRV_PLACE_MULTI };

/*
 * prometheus_fleet.sh's fleet and jobs: nodes of 8, 4 and 2 GPUs with as
 * many cores as the host (2 to 64 here) and 23 GiB; an 8-GPU job, then two
 * half-GPU jobs of one core, each seen as it comes and placed before the
 * next comes. The two halves share one GPU under every strategy.
 */
Test(place_multi, two_halves_share_one_gpu)
{
	static const int cores[] = { 2, 4, 16, 64 };
	size_t si, ci;

	for (ci = 0; ci < DRV_ARRAY_SIZE(cores); ci++)
		for (si = 0; si < DRV_ARRAY_SIZE(strategies); si++) {
			static const char *const lv[] = { "cluster", "leaf", "node" };
			struct drv_cluster c;
			struct drv_place_mix m;
			struct drv_place_opts o = { .strategy = strategies[si], .mix = &m };
			struct drv_placement p1, p2;
			struct drv_job big, h1, h2;

			drv_cluster_init(&c, "t");
			cr_assert(eq(int, drv_cluster_set_levels(&c, lv, 3), 0));
			drv_cluster_add_vertex(&c, 0, "leaf");
			add_node(&c, "box", 8, cores[ci], 23);
			add_node(&c, "nv-1", 4, cores[ci], 23);
			add_node(&c, "sm-1", 2, cores[ci], 23);
			task(&big, 8, 0, 0);
			task(&h1, 0, 500, 1);
			task(&h2, 0, 500, 1);
			drv_place_mix_init(&m, 0);
			drv_placement_init(&p1);
			drv_placement_init(&p2);
			drv_place_mix_observe(&m, &big);
			cr_assert(eq(int, drv_place_commit(&c, &big, &o, &p1, NULL, 0), 0));
			drv_place_mix_observe(&m, &h1);
			cr_assert(eq(int, drv_place_commit(&c, &h1, &o, &p1, NULL, 0), 0));
			drv_place_mix_observe(&m, &h2);
			cr_assert(eq(int, drv_place_commit(&c, &h2, &o, &p2, NULL, 0), 0));
			cr_assert(eq(str, (char *)c.nodes[p2.tasks[0].node].name,
				     (char *)c.nodes[p1.tasks[0].node].name), "%s, %d cores",
				  drv_place_strategy_name(strategies[si]), cores[ci]);
			cr_assert(eq(u64, p2.tasks[0].gpu_mask, p1.tasks[0].gpu_mask), "%s, %d cores",
				  drv_place_strategy_name(strategies[si]), cores[ci]);
			drv_job_release(&big);
			drv_job_release(&h1);
			drv_job_release(&h2);
			drv_placement_release(&p1);
			drv_placement_release(&p2);
			drv_cluster_release(&c);
		}
}

/* A share fills the partly used GPU of a node with more free GPUs before
 * it opens one of a node with fewer: best fit by free GPUs comes second. */
Test(place_multi, share_fills_a_shared_gpu_before_a_fresh_one)
{
	static const char *const lv[] = { "cluster", "leaf", "node" };
	struct drv_cluster c;
	struct drv_place_mix m;
	struct drv_job a, j, w;
	int i;

	drv_cluster_init(&c, "t");
	cr_assert(eq(int, drv_cluster_set_levels(&c, lv, 3), 0));
	drv_cluster_add_vertex(&c, 0, "leaf");
	add_node(&c, "n0", 2, 96, 1024);
	add_node(&c, "n1", 8, 96, 1024);
	task(&a, 0, 500, 2);
	task(&j, 0, 250, 2);
	task(&w, 1, 0, 8);
	drv_place_mix_init(&m, 0);
	for (i = 0; i < 10; i++) {
		drv_place_mix_observe(&m, &a);
		drv_place_mix_observe(&m, &j);
		drv_place_mix_observe(&m, &w);
	}
	/* n1's first GPU is half taken; n0 has 2 whole GPUs and nothing else */
	{
		struct drv_task_place t = { .node = 1, .gpu_milli = 500, .gpu_mask = 1,
					    .cpu_milli = 2000 };
		struct drv_placement p = { &t, 1, 1 };
		drv_cluster_commit(&c, &p);
	}
	for (i = 0; i < (int)DRV_ARRAY_SIZE(strategies); i++)
		cr_assert(eq(str, (char *)where(&c, &j, strategies[i], &m), "n1"), "%s",
			  drv_place_strategy_name(strategies[i]));
	drv_job_release(&a);
	drv_job_release(&j);
	drv_job_release(&w);
	drv_cluster_release(&c);
}

static uint64_t rng = 88172645463325252ULL;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

Test(place_multi, never_over_commits_on_random_clusters)
{
	int round;

	for (round = 0; round < 20; round++) {
		struct drv_cluster c;
		struct drv_place_mix m;
		struct drv_place_opts o = { .strategy = DRV_PLACE_MULTI };
		struct drv_placement p;
		int i, placed = 0;

		build(&c, 2 + (int)rnd(10), 8 + (int)rnd(120));
		drv_place_mix_init(&m, 1 + (int)rnd(100));
		o.mix = &m;
		drv_placement_init(&p);
		for (i = 0; i < 300; i++) {
			struct drv_job j;
			uint32_t k = rnd(4);
			struct drv_task_group *g;
			drv_job_init(&j);
			g = drv_job_add_group(&j, "p", 1 + (int)rnd(2), k == 0 ? 0 : k == 1 ? 0 : 1 << rnd(4),
					      k == 1 ? 1 + (int)rnd(999) : 0);
			g->cpu_milli = rnd(40) * 1000LL;
			g->mem_mib = rnd(300000);
			drv_place_mix_observe(&m, &j);
			if (drv_place_commit(&c, &j, &o, &p, NULL, 0) == 0)
				placed++;
			drv_job_release(&j);
		}
		for (i = 0; i < c.nnodes; i++) {
			const struct drv_node *n = &c.nodes[i];
			int k;
			cr_assert(le(i64, n->cpu_used, n->cpu_milli));
			cr_assert(le(i64, n->mem_used, n->mem_mib));
			for (k = 0; k < n->ngpus; k++)
				cr_assert(le(int, n->gpu_milli_used[k], DRV_MILLI));
		}
		cr_assert(gt(int, placed, 0));
		cr_assert(eq(int, drv_cluster_check(&c), 0));
		drv_placement_release(&p);
		drv_cluster_release(&c);
	}
}

/* Whether a partly used GPU of an up node with room for g's CPU and memory
 * has room for g's share. */
static bool shared_gpu_has_room(const struct drv_cluster *c, const struct drv_task_group *g)
{
	int32_t i;
	int k;

	for (i = 0; i < c->nnodes; i++) {
		const struct drv_node *n = &c->nodes[i];
		if (n->cpu_milli - n->cpu_used < g->cpu_milli || n->mem_mib - n->mem_used < g->mem_mib)
			continue;
		for (k = 0; k < n->ngpus; k++)
			if (n->gpu_milli_used[k] > 0 && DRV_MILLI - n->gpu_milli_used[k] >= g->gpu_milli)
				return true;
	}
	return false;
}

/*
 * Shares of a quarter or a half GPU among whole-GPU tasks, on nodes of 1 to
 * 8 GPUs whose CPU and memory never run out, until 130% of the GPUs were
 * asked for: under every strategy a share never opens a fresh GPU while a
 * shared one has room, so at most two GPUs are ever partly used and what
 * they leave free is at most 750 milli-GPUs: nothing is stranded.
 */
Test(place_multi, shares_never_open_a_fresh_gpu_while_a_shared_one_has_room)
{
	static const char *const lv[] = { "cluster", "leaf", "node" };
	int round;

	for (round = 0; round < 30; round++) {
		enum drv_place_strategy s = strategies[round % 3];
		struct drv_cluster c;
		struct drv_place_mix m;
		struct drv_place_opts o = { .strategy = s, .mix = &m };
		struct drv_placement p;
		int64_t asked = 0, total = 0;
		int i, nodes = 2 + (int)rnd(12);
		char name[32];

		drv_cluster_init(&c, "t");
		cr_assert(eq(int, drv_cluster_set_levels(&c, lv, 3), 0));
		drv_cluster_add_vertex(&c, 0, "leaf");
		for (i = 0; i < nodes; i++) {
			int gpus = 1 << rnd(4);
			snprintf(name, sizeof(name), "n%d", i);
			add_node(&c, name, gpus, 1024, 1 << 16);
			total += gpus * DRV_MILLI;
		}
		drv_place_mix_init(&m, 1 + (int)rnd(200));
		drv_placement_init(&p);
		while (asked < total * 13 / 10) {
			struct drv_job j;
			uint32_t x = rnd(10);
			bool share = x < 7, room;
			int32_t ni, k, part = 0;
			int64_t part_free = 0;

			task(&j, share ? 0 : 1 << rnd(3), share ? (rnd(2) ? 250 : 500) : 0,
			     1 + (int)rnd(8));
			asked += share ? j.groups[0].gpu_milli : j.groups[0].gpus * DRV_MILLI;
			drv_place_mix_observe(&m, &j);
			room = share && shared_gpu_has_room(&c, &j.groups[0]);
			if (drv_place_commit(&c, &j, &o, &p, NULL, 0) == 0 && room) {
				const struct drv_node *n = &c.nodes[p.tasks[0].node];
				int gi = __builtin_ctzll(p.tasks[0].gpu_mask);
				cr_assert(n->gpu_milli_used[gi] > j.groups[0].gpu_milli,
					  "%s, round %d: a %d share opened GPU %d of %s while a shared "
					  "GPU had room", drv_place_strategy_name(s), round,
					  j.groups[0].gpu_milli, gi, n->name);
			}
			for (ni = 0; ni < c.nnodes; ni++)
				for (k = 0; k < c.nodes[ni].ngpus; k++)
					if (c.nodes[ni].gpu_milli_used[k] % DRV_MILLI) {
						part++;
						part_free += DRV_MILLI - c.nodes[ni].gpu_milli_used[k];
					}
			cr_assert(le(int, part, 2), "%s, round %d", drv_place_strategy_name(s), round);
			cr_assert(le(i64, part_free, 750), "%s, round %d", drv_place_strategy_name(s),
				  round);
			drv_job_release(&j);
		}
		cr_assert(eq(int, drv_cluster_check(&c), 0));
		drv_placement_release(&p);
		drv_cluster_release(&c);
	}
}

/* The share of the mix's shape asking milli per task (0 when absent). */
static double share_of(const struct drv_place_mix *m, int32_t milli)
{
	int32_t i;
	for (i = 0; i < m->n; i++)
		if (m->shape[i].milli == milli)
			return drv_place_mix_share(m, i);
	return 0;
}

Test(place_multi, learned_mix_follows_a_shifting_workload)
{
	struct drv_place_mix m;
	struct drv_job small, big;
	double sum = 0;
	int i;

	drv_place_mix_init(&m, 200);
	drv_job_init(&small);
	drv_job_add_group(&small, "s", 1, 0, 250);
	pod(&big, 8, 96);
	for (i = 0; i < 2000; i++)
		drv_place_mix_observe(&m, &small);
	cr_assert(gt(dbl, share_of(&m, 250), 0.999));
	/* half-life 200 tasks: after 200 of the new kind they weigh half */
	for (i = 0; i < 200; i++)
		drv_place_mix_observe(&m, &big);
	cr_assert(share_of(&m, 8000) > 0.48 && share_of(&m, 8000) < 0.52, "share %f",
		  share_of(&m, 8000));
	for (i = 0; i < 1800; i++)
		drv_place_mix_observe(&m, &big);
	cr_assert(gt(dbl, share_of(&m, 8000), 0.99));
	cr_assert(lt(dbl, share_of(&m, 250), 0.01));
	/* more shapes than the table holds: the lightest go, the shares stay a whole */
	for (i = 0; i < 40; i++) {
		struct drv_job j;
		drv_job_init(&j);
		drv_job_add_group(&j, "x", 1, 0, 10 + i);
		drv_place_mix_observe(&m, &j);
		drv_job_release(&j);
	}
	cr_assert(eq(int, m.n, DRV_MIX_MAX));
	for (i = 0; i < m.n; i++)
		sum += drv_place_mix_share(&m, i);
	cr_assert(gt(dbl, sum, 0.999999));
	cr_assert(lt(dbl, sum, 1.000001));
	cr_assert(gt(dbl, share_of(&m, 8000), 0.9), "the heavy shape stays");
	drv_job_release(&small);
	drv_job_release(&big);
}

Test(place_multi, names_parse)
{
	enum drv_place_strategy s;
	cr_assert(eq(int, drv_place_strategy_parse("multi", &s), 0));
	cr_assert(eq(int, (int)s, DRV_PLACE_MULTI));
	cr_assert(eq(int, drv_place_strategy_parse("Best-Fit", &s), 0));
	cr_assert(eq(int, (int)s, DRV_PLACE_BESTFIT));
	cr_assert(eq(int, drv_place_strategy_parse("fgd", &s), 0));
	cr_assert(eq(str, (char *)drv_place_strategy_name(DRV_PLACE_FGD), "fgd"));
	cr_assert(eq(int, drv_place_strategy_parse("worst", &s), DRV_EINVAL));
}
