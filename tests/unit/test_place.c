/*
 * test_place.c: placement behaviour a user relies on: whole gangs or
 * nothing, best-fit packing, required and preferred topology levels,
 * fractional packing, exact release, readable reasons, determinism.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drover/model.h"

/* cluster -> leaf x nleaves -> node x per_leaf, 8 H100 each */
static void build(struct drv_cluster *c, int nleaves, int per_leaf, int ngpus)
{
	static const char *const lv[] = { "cluster", "leaf", "node" };
	int h100 = drv_gpu_model_find("H100");
	int l, n;
	char name[64];

	drv_cluster_init(c, "t");
	cr_assert(eq(int, drv_cluster_set_levels(c, lv, 3), 0));
	for (l = 0; l < nleaves; l++) {
		int32_t leaf;
		snprintf(name, sizeof(name), "leaf%d", l);
		leaf = drv_cluster_add_vertex(c, 0, name);
		cr_assert(ge(int, leaf, 0));
		for (n = 0; n < per_leaf; n++) {
			snprintf(name, sizeof(name), "n%d-%d", l, n);
			cr_assert(ge(int, drv_cluster_add_node(c, leaf, name, h100, ngpus, 64000,
							       512 * 1024), 0));
		}
	}
	cr_assert(eq(int, drv_cluster_check(c), 0));
}

static void job1(struct drv_job *j, int tasks, int gpus, int milli)
{
	drv_job_init(j);
	drv_job_add_group(j, "w", tasks, gpus, milli);
}

static int place_commit(struct drv_cluster *c, struct drv_job *j, struct drv_placement *p,
			char *why, size_t wsz)
{
	int rc = drv_place(c, j, NULL, p, why, wsz);
	if (rc == 0)
		drv_cluster_commit(c, p);
	return rc;
}

Test(place, eight_gpu_task_takes_a_whole_node)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p;
	char buf[256];

	build(&c, 2, 4, 8);
	job1(&j, 1, 8, 0);
	drv_placement_init(&p);
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, buf, sizeof(buf)), 0));
	cr_assert(eq(int, p.ntasks, 1));
	drv_placement_format(&c, &p, buf, sizeof(buf));
	cr_assert(eq(str, buf, "n0-0:0,1,2,3,4,5,6,7"));
	/* drv_place left the cluster as it was */
	cr_assert(eq(int, c.vertices[0].free_gpus, 64));
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	drv_placement_release(&p);
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(place, small_tasks_pack_so_whole_nodes_stay_free)
{
	struct drv_cluster c;
	struct drv_job j, big;
	struct drv_placement p;
	char why[256];
	int i;

	build(&c, 2, 4, 8);
	drv_placement_init(&p);
	/* eight 1-GPU jobs one after another should fill one node, not eight */
	job1(&j, 1, 1, 0);
	for (i = 0; i < 8; i++)
		cr_assert(eq(int, place_commit(&c, &j, &p, why, sizeof(why)), 0));
	cr_assert(eq(int, c.vertices[0].free_nodes, 7));
	job1(&big, 7, 8, 0);
	cr_assert(eq(int, place_commit(&c, &big, &p, why, sizeof(why)), 0), "%s", why);
	cr_assert(eq(int, c.vertices[0].free_gpus, 0));
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	drv_job_release(&j);
	drv_job_release(&big);
	drv_placement_release(&p);
	drv_cluster_release(&c);
}

Test(place, gang_is_whole_or_nothing_with_reason)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p;
	char why[256];

	build(&c, 1, 4, 8);
	job1(&j, 5, 8, 0); /* 40 GPUs on 32 */
	drv_placement_init(&p);
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), DRV_ENOSPACE));
	cr_assert(eq(int, p.ntasks, 0));
	cr_assert(eq(str, why, "needs 40 GPUs; 32 are free"));
	cr_assert(eq(int, c.vertices[0].free_gpus, 32));
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	drv_job_release(&j);
	drv_placement_release(&p);
	drv_cluster_release(&c);
}

Test(place, required_leaf_is_never_broken)
{
	struct drv_cluster c;
	struct drv_job fill, j;
	struct drv_placement p, q;
	struct drv_place_info info;
	struct drv_place_opts o;
	char why[256];
	int i;

	build(&c, 2, 4, 8); /* two leaves of 32 GPUs */
	drv_placement_init(&p);
	drv_placement_init(&q);
	/* take one node in each leaf: 24 free per leaf, 48 in all */
	job1(&fill, 1, 8, 0);
	drv_job_set_topology(&fill, DRV_TOPO_REQUIRED, "node");
	cr_assert(eq(int, place_commit(&c, &fill, &p, why, sizeof(why)), 0));
	cr_assert(eq(int, place_commit(&c, &fill, &q, why, sizeof(why)), 0));
	/* best-fit: the second 8-GPU job joins the first in leaf0 */
	cr_assert(eq(int, c.vertices[1].free_gpus, 16));
	job1(&j, 4, 8, 0); /* 32 GPUs in one leaf: only leaf1 can */
	drv_job_set_topology(&j, DRV_TOPO_REQUIRED, "leaf");
	memset(&o, 0, sizeof(o));
	o.info = &info;
	cr_assert(eq(int, drv_place(&c, &j, &o, &p, why, sizeof(why)), 0), "%s", why);
	for (i = 0; i < p.ntasks; i++)
		cr_assert(eq(str, c.vertices[c.vertices[c.nodes[p.tasks[i].node].vertex].parent].name,
			     "leaf1"));
	drv_job_release(&j);
	job1(&j, 5, 8, 0); /* 40 in one leaf: never possible on 32-GPU leaves */
	drv_job_set_topology(&j, DRV_TOPO_REQUIRED, "leaf");
	cr_assert(eq(int, drv_place(&c, &j, &o, &p, why, sizeof(why)), DRV_ENOSPACE));
	cr_assert(eq(int, info.why, DRV_WHY_TOPOLOGY));
	cr_assert(eq(str, why, "needs 40 GPUs under one leaf; the emptiest leaf has 32 free"));
	cr_assert(eq(int, drv_place_check_static(&c, &j, NULL, why, sizeof(why)), DRV_ENOSPACE));
	/* preferred: spreads over both leaves when it must */
	drv_job_set_topology(&j, DRV_TOPO_PREFERRED, "leaf");
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0), "%s", why);
	drv_job_release(&fill);
	drv_job_release(&j);
	drv_placement_release(&p);
	drv_placement_release(&q);
	drv_cluster_release(&c);
}

/* cluster -> 2 spines -> 2 leaves each -> 2 nodes of 8 H100 each; the nodes
 * of spine s, leaf l are "s<s>l<l>n<n>", node index 4s + 2l + n */
static void build_spines(struct drv_cluster *c)
{
	static const char *const lv[] = { "cluster", "spine", "leaf", "node" };
	int h100 = drv_gpu_model_find("H100"), s, l, n;
	char name[64];

	drv_cluster_init(c, "t");
	cr_assert(eq(int, drv_cluster_set_levels(c, lv, 4), 0));
	for (s = 0; s < 2; s++) {
		int32_t sv;
		snprintf(name, sizeof(name), "spine%d", s);
		sv = drv_cluster_add_vertex(c, 0, name);
		for (l = 0; l < 2; l++) {
			int32_t lvx;
			snprintf(name, sizeof(name), "s%dl%d", s, l);
			lvx = drv_cluster_add_vertex(c, sv, name);
			for (n = 0; n < 2; n++) {
				snprintf(name, sizeof(name), "s%dl%dn%d", s, l, n);
				cr_assert(ge(int, drv_cluster_add_node(c, lvx, name, h100, 8, 64000,
								       512 * 1024), 0));
			}
		}
	}
	cr_assert(eq(int, drv_cluster_check(c), 0));
}

/* Takes every GPU of the named node. */
static void take_node(struct drv_cluster *c, const char *name)
{
	struct drv_placement p;
	int32_t i;
	drv_placement_init(&p);
	p.tasks = calloc(1, sizeof(*p.tasks));
	p.cap = 1;
	p.ntasks = 1;
	for (i = 0; i < c->nnodes && strcmp(c->nodes[i].name, name); i++)
		;
	cr_assert(lt(int, i, c->nnodes), "no node %s", name);
	p.tasks[0].node = i;
	p.tasks[0].gpu_milli = 1000;
	p.tasks[0].gpu_mask = 0xff;
	drv_cluster_commit(c, &p);
	drv_placement_release(&p);
}

/* The leaf every task of p sits under, or "spread" when they are not under one. */
static const char *one_leaf(const struct drv_cluster *c, const struct drv_placement *p)
{
	int32_t i, leaf = -1;
	for (i = 0; i < p->ntasks; i++) {
		int32_t l = c->vertices[c->nodes[p->tasks[i].node].vertex].parent;
		if (leaf >= 0 && l != leaf)
			return "spread";
		leaf = l;
	}
	return leaf >= 0 ? c->vertices[leaf].name : "spread";
}

/*
 * A gang that prefers a level is searched first as if it required it, then
 * as it is. Spine0 has one free node in each leaf (2 free), spine1 a whole
 * free leaf and one more node (3 free): best-fit alone takes the fuller
 * spine0 and spreads the 2-node gang over its two leaves; preferring leaf,
 * it lands in s1l0. When no leaf has room the preference falls back to
 * spreading (a required leaf is refused there).
 */
Test(place, preferred_level_first_then_fallback)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p;
	char why[256];

	build_spines(&c);
	drv_placement_init(&p);
	take_node(&c, "s0l0n0");
	take_node(&c, "s0l1n0");
	take_node(&c, "s1l1n0");
	job1(&j, 2, 8, 0);
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0), "%s", why);
	cr_assert(eq(str, (char *)one_leaf(&c, &p), "spread"), "best-fit alone keeps to spine0");
	drv_job_set_topology(&j, DRV_TOPO_PREFERRED, "leaf");
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0), "%s", why);
	cr_assert(eq(str, (char *)one_leaf(&c, &p), "s1l0"));
	/* no leaf with two free nodes left: preferred spreads, required waits */
	take_node(&c, "s1l0n0");
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0), "%s", why);
	cr_assert(eq(int, p.ntasks, 2));
	cr_assert(eq(str, (char *)one_leaf(&c, &p), "spread"));
	drv_job_set_topology(&j, DRV_TOPO_REQUIRED, "leaf");
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), DRV_ENOSPACE));
	/* a preferred level the cluster lacks is no constraint at all */
	drv_job_set_topology(&j, DRV_TOPO_PREFERRED, "rack");
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0), "%s", why);
	drv_job_release(&j);
	drv_placement_release(&p);
	drv_cluster_release(&c);
}

Test(place, smallest_subtree_best_fit)
{
	struct drv_cluster c;
	struct drv_job a, j;
	struct drv_placement p;
	char why[256];
	int i;

	build(&c, 3, 4, 8);
	drv_placement_init(&p);
	/* leaf1 gets 16 used: then a 16-GPU gang belongs in leaf1 (16 free), not in a whole leaf */
	job1(&a, 2, 8, 0);
	cr_assert(eq(int, place_commit(&c, &a, &p, why, sizeof(why)), 0));
	cr_assert(eq(int, c.nodes[p.tasks[0].node].vertex > 0, 1));
	{
		int leaf = c.vertices[c.nodes[p.tasks[0].node].vertex].parent;
		job1(&j, 2, 8, 0);
		drv_job_set_topology(&j, DRV_TOPO_REQUIRED, "leaf");
		cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0));
		for (i = 0; i < p.ntasks; i++)
			cr_assert(eq(int, c.vertices[c.nodes[p.tasks[i].node].vertex].parent, leaf));
	}
	drv_job_release(&a);
	drv_job_release(&j);
	drv_placement_release(&p);
	drv_cluster_release(&c);
}

Test(place, fractional_tasks_share_a_gpu_and_release_exactly)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p1, p2, p3;
	char why[256], buf[64];

	build(&c, 1, 2, 8);
	drv_placement_init(&p1);
	drv_placement_init(&p2);
	drv_placement_init(&p3);
	job1(&j, 1, 0, 300);
	j.groups[0].gpu_mem_mib = 20000;
	cr_assert(eq(int, place_commit(&c, &j, &p1, why, sizeof(why)), 0));
	cr_assert(eq(int, place_commit(&c, &j, &p2, why, sizeof(why)), 0));
	drv_placement_format(&c, &p1, buf, sizeof(buf));
	cr_assert(eq(str, buf, "n0-0:0"));
	drv_placement_format(&c, &p2, buf, sizeof(buf));
	cr_assert(eq(str, buf, "n0-0:0"));
	cr_assert(eq(int, c.nodes[0].gpu_milli_used[0], 600));
	/* memory: 3 x 20000 fits in 80 GB, a 4th at 20000 would too (81920) */
	cr_assert(eq(int, place_commit(&c, &j, &p3, why, sizeof(why)), 0));
	cr_assert(eq(int, c.nodes[0].gpu_milli_used[0], 900));
	cr_assert(eq(int, c.vertices[0].free_gpus, 15));
	cr_assert(eq(int, c.vertices[0].max_part_free, 100));
	drv_cluster_uncommit(&c, &p3);
	drv_cluster_uncommit(&c, &p2);
	drv_cluster_uncommit(&c, &p1);
	cr_assert(eq(int, c.vertices[0].free_gpus, 16));
	cr_assert(eq(int, c.vertices[0].free_milli, 16000));
	cr_assert(eq(int, c.nodes[0].gpu_mem_used[0], 0));
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	drv_job_release(&j);
	drv_placement_release(&p1);
	drv_placement_release(&p2);
	drv_placement_release(&p3);
	drv_cluster_release(&c);
}

Test(place, task_larger_than_any_node_is_refused_forever)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p;
	struct drv_place_info info;
	struct drv_place_opts o = { 0 };
	char why[256];

	build(&c, 1, 2, 8);
	drv_placement_init(&p);
	job1(&j, 1, 16, 0);
	o.info = &info;
	cr_assert(eq(int, drv_place(&c, &j, &o, &p, why, sizeof(why)), DRV_ENOSPACE));
	cr_assert(eq(str, why, "a task needs 16 GPUs on one node; the largest node has 8"));
	cr_assert(info.never);
	drv_job_release(&j);
	drv_placement_release(&p);
	drv_cluster_release(&c);
}

Test(place, draining_nodes_take_nothing_new)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p;
	char why[256], buf[64];

	build(&c, 1, 2, 8);
	drv_placement_init(&p);
	drv_cluster_set_node_state(&c, 0, DRV_NODE_DRAINING);
	cr_assert(eq(int, c.vertices[0].free_gpus, 8));
	job1(&j, 1, 4, 0);
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0));
	drv_placement_format(&c, &p, buf, sizeof(buf));
	cr_assert(eq(str, buf, "n0-1:0,1,2,3"));
	drv_cluster_set_node_state(&c, 1, DRV_NODE_DOWN);
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), DRV_ENOSPACE));
	cr_assert(eq(str, why, "needs 4 GPUs; 0 are free"));
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	drv_job_release(&j);
	drv_placement_release(&p);
	drv_cluster_release(&c);
}

Test(place, format_and_parse_round_trip)
{
	struct drv_cluster c;
	struct drv_placement p;
	char buf[128];

	build(&c, 1, 2, 8);
	drv_placement_init(&p);
	cr_assert(eq(int, drv_placement_parse(&c, "n0-0:0,3;n0-1:7", 1000, &p), 0));
	cr_assert(eq(int, p.ntasks, 2));
	drv_placement_format(&c, &p, buf, sizeof(buf));
	cr_assert(eq(str, buf, "n0-0:0,3;n0-1:7"));
	cr_assert(eq(int, drv_placement_parse(&c, "nope:1", 1000, &p), DRV_EINVAL));
	cr_assert(eq(int, drv_placement_parse(&c, "n0-0:9", 1000, &p), DRV_EINVAL));
	drv_placement_release(&p);
	drv_cluster_release(&c);
}

Test(place, fgd_keeps_usable_fragments_where_best_fit_fills_holes)
{
	struct drv_cluster c;
	struct drv_job a, b, j;
	struct drv_placement p;
	struct drv_place_opts o = { 0 };
	static const int32_t mix[] = { 250 };
	static const double w[] = { 1.0 };
	char why[256], buf[64];

	build(&c, 1, 2, 1); /* two nodes of one GPU */
	drv_placement_init(&p);
	job1(&a, 1, 0, 400); /* n0-0's GPU: 600 free */
	job1(&b, 1, 0, 700); /* n0-1's GPU: 300 free */
	cr_assert(eq(int, place_commit(&c, &a, &p, why, sizeof(why)), 0));
	cr_assert(eq(int, drv_place_commit(&c, &b, NULL, &p, why, sizeof(why)), 0));
	drv_placement_format(&c, &p, buf, sizeof(buf));
	cr_assert(eq(str, buf, "n0-1:0"));
	job1(&j, 1, 0, 250);
	/* best-fit: the fullest GPU that fits, leaving 50 nobody can use */
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0));
	drv_placement_format(&c, &p, buf, sizeof(buf));
	cr_assert(eq(str, buf, "n0-1:0"));
	/* FGD with a mix of quarter-GPU tasks: 600 -> 350 still fits one more */
	o.strategy = DRV_PLACE_FGD;
	o.mix_milli = mix;
	o.mix_weight = w;
	o.nmix = 1;
	cr_assert(eq(int, drv_place(&c, &j, &o, &p, why, sizeof(why)), 0));
	drv_placement_format(&c, &p, buf, sizeof(buf));
	cr_assert(eq(str, buf, "n0-0:0"));
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	drv_job_release(&a);
	drv_job_release(&b);
	drv_job_release(&j);
	drv_placement_release(&p);
	drv_cluster_release(&c);
}

Test(place, fragmented_leaves_are_explained_by_whole_free_nodes)
{
	struct drv_cluster c;
	struct drv_job one, j;
	struct drv_placement p;
	struct drv_place_info info;
	struct drv_place_opts o = { 0 };
	char why[256];
	int i;

	build(&c, 2, 4, 8); /* two leaves of 4 nodes */
	drv_placement_init(&p);
	/* one GPU busy on 3 nodes of each leaf: each leaf keeps 1 whole node, 29 free GPUs */
	job1(&one, 1, 1, 0);
	for (i = 0; i < 8; i++)
		if (i % 4 != 3) {
			struct drv_placement q = { 0 };
			drv_placement_parse(&c, c.nodes[i].name, 1000, &q);
			q.tasks[0].gpu_mask = 1;
			drv_cluster_commit(&c, &q);
			drv_placement_release(&q);
		}
	job1(&j, 2, 8, 0);
	drv_job_set_topology(&j, DRV_TOPO_REQUIRED, "leaf");
	o.info = &info;
	cr_assert(eq(int, drv_place(&c, &j, &o, &p, why, sizeof(why)), DRV_ENOSPACE));
	cr_assert(eq(str, why, "needs 2 whole free nodes under one leaf; the best leaf has 1 (58 GPUs free in all)"));
	cr_assert(eq(int, info.why, DRV_WHY_TOPOLOGY));
	/* without the constraint it spreads over both leaves */
	drv_job_set_topology(&j, DRV_TOPO_NONE, NULL);
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0));
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	drv_job_release(&one);
	drv_job_release(&j);
	drv_placement_release(&p);
	drv_cluster_release(&c);
}

Test(place, a_model_the_cluster_lacks_is_refused_forever)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p;
	struct drv_place_info info;
	struct drv_place_opts o = { 0 };
	char why[256];

	build(&c, 1, 2, 8);
	drv_placement_init(&p);
	job1(&j, 1, 2, 0);
	j.groups[0].model = (int8_t)drv_gpu_model_find("a100");
	o.info = &info;
	cr_assert(eq(int, drv_place(&c, &j, &o, &p, why, sizeof(why)), DRV_ENOSPACE));
	cr_assert(eq(str, why, "needs 2 A100 GPUs; the cluster has none (only H100)"));
	cr_assert(info.never);
	cr_assert(eq(int, info.why, DRV_WHY_MODEL));
	drv_job_release(&j);
	drv_placement_release(&p);
	drv_cluster_release(&c);
}

/* One A10G node (23028 MiB GPUs) and one H100 node (81920 MiB). */
static void build_two_models(struct drv_cluster *c)
{
	static const char *const lv[] = { "cluster", "node" };

	drv_cluster_init(c, "m");
	cr_assert(eq(int, drv_cluster_set_levels(c, lv, 2), 0));
	cr_assert(ge(int, drv_cluster_add_node(c, 0, "a10g", drv_gpu_model_find("A10G"), 1, 64000,
					       512 * 1024), 0));
	cr_assert(ge(int, drv_cluster_add_node(c, 0, "h100", drv_gpu_model_find("H100"), 1, 64000,
					       512 * 1024), 0));
}

Test(place, gpu_memory_share_is_per_model_and_never_zero)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p;
	char buf[256];

	cr_assert(eq(int, drv_gpu_mem_milli(20000, drv_gpu_model_find("H100")), 245),
		  "ceil(1000 x 20000 / 81920)");
	cr_assert(eq(int, drv_gpu_mem_milli(20000, drv_gpu_model_find("A10G")), 869));
	cr_assert(eq(int, drv_gpu_mem_milli(1, drv_gpu_model_find("H100")), 1), "at least 1");
	cr_assert(eq(int, drv_gpu_mem_milli(81920, drv_gpu_model_find("H100")), 1000));
	cr_assert(eq(int, drv_gpu_mem_milli(30000, drv_gpu_model_find("A10G")), -1),
		  "a smaller GPU is no candidate");

	build_two_models(&c);
	drv_placement_init(&p);
	/* 30000 MiB: the A10G is no candidate, the H100 takes it as 367 milli */
	drv_job_init(&j);
	drv_job_add_group(&j, "w", 1, 0, 0)->gpu_mem_mib = 30000;
	cr_assert(eq(int, place_commit(&c, &j, &p, buf, sizeof(buf)), 0), "%s", buf);
	cr_assert(eq(str, c.nodes[p.tasks[0].node].name, "h100"));
	cr_assert(eq(int, p.tasks[0].gpu_milli, 367));
	cr_assert(ne(u64, p.tasks[0].gpu_mask, 0), "a GPU, never none");
	drv_job_release(&j);
	/* 20000 MiB fits both; on the A10G it is 869 milli */
	drv_job_init(&j);
	drv_job_add_group(&j, "w", 2, 0, 0)->gpu_mem_mib = 20000;
	cr_assert(eq(int, place_commit(&c, &j, &p, buf, sizeof(buf)), 0), "%s", buf);
	for (int i = 0; i < 2; i++) {
		const char *n = c.nodes[p.tasks[i].node].name;
		cr_assert(eq(int, p.tasks[i].gpu_milli, strcmp(n, "a10g") == 0 ? 869 : 245), "%s", n);
		cr_assert(eq(int, p.tasks[i].gpu_mem_mib, 20000));
	}
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	drv_job_release(&j);
	/* 90000 MiB: no GPU has it */
	drv_job_init(&j);
	drv_job_add_group(&j, "w", 1, 0, 0)->gpu_mem_mib = 90000;
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, buf, sizeof(buf)), DRV_ENOSPACE));
	drv_job_release(&j);
	drv_placement_release(&p);
	drv_cluster_release(&c);
}

/* Pools p1 and p2 of one 8-GPU node each, zones z1 and z2 as node labels. */
static void build_zones(struct drv_cluster *c)
{
	static const char *const lv[] = { "cluster", "pool", "node" };
	int h100 = drv_gpu_model_find("H100");

	drv_cluster_init(c, "z");
	cr_assert(eq(int, drv_cluster_set_levels(c, lv, 3), 0));
	for (int i = 1; i <= 2; i++) {
		char pn[8], nn[8], zn[8];
		struct drv_pool p = { .name = pn, .region = "r" };
		int32_t node;

		snprintf(pn, sizeof(pn), "p%d", i);
		snprintf(nn, sizeof(nn), "n%d", i);
		snprintf(zn, sizeof(zn), "z%d", i);
		p.vertex = drv_cluster_add_vertex(c, 0, pn);
		cr_assert(ge(int, drv_cluster_add_pool(c, &p), 0));
		node = drv_cluster_add_node(c, p.vertex, nn, h100, 8, 64000, 512 * 1024);
		cr_assert(ge(int, node, 0));
		c->nodes[node].labels = drv_calloc(1, sizeof(struct drv_label));
		c->nodes[node].labels[0].key = drv_strdup("topology.kubernetes.io/zone");
		c->nodes[node].labels[0].value = drv_strdup(zn);
		c->nodes[node].nlabels = 1;
	}
}

static const char *placed_on(struct drv_cluster *c, const char *const *sel, int nsel)
{
	static char name[16];
	struct drv_job j;
	struct drv_placement p;
	char buf[256];
	int rc;

	drv_job_init(&j);
	drv_job_add_group(&j, "w", 1, 1, 0);
	for (int i = 0; i < nsel; i++)
		drv_job_add_node_label(&j, sel[2 * i], sel[2 * i + 1]);
	drv_placement_init(&p);
	rc = drv_place(c, &j, NULL, &p, buf, sizeof(buf));
	snprintf(name, sizeof(name), "%s", rc == 0 ? c->nodes[p.tasks[0].node].name : "none");
	drv_placement_release(&p);
	drv_job_release(&j);
	return name;
}

Test(place, node_selector_zone_and_pool)
{
	struct drv_cluster c;
	static const char *const z2[] = { "topology.kubernetes.io/zone", "z2" };
	static const char *const p1[] = { "drover.io/pool", "p1" };
	static const char *const z2p1[] = { "topology.kubernetes.io/zone", "z2", "drover.io/pool", "p1" };
	static const char *const z3z2[] = { "topology.kubernetes.io/zone", "z3",
					    "topology.kubernetes.io/zone", "z2" };
	static const char *const other[] = { "kubernetes.io/arch", "amd64" };

	build_zones(&c);
	cr_assert(eq(str, (char *)placed_on(&c, z2, 1), "n2"));
	cr_assert(eq(str, (char *)placed_on(&c, p1, 1), "n1"));
	cr_assert(eq(str, (char *)placed_on(&c, z2p1, 2), "none"), "both keys must hold");
	cr_assert(eq(str, (char *)placed_on(&c, z3z2, 2), "n2"), "values of one key: any one");
	cr_assert(eq(str, (char *)placed_on(&c, other, 1), "none"), "a label no node has");
	drv_cluster_release(&c);
}

/* Slurm's -w, -x and -C as node_selector entries (model.h). */
Test(place, slurm_nodelist_exclude_and_constraint)
{
	struct drv_cluster c;
	static const char *const w2[] = { DRV_LABEL_HOST, "n2" };
	static const char *const x1[] = { DRV_LABEL_EXCLUDE, "n1" };
	static const char *const x12[] = { DRV_LABEL_EXCLUDE, "n1", DRV_LABEL_EXCLUDE, "n2" };
	static const char *const c_z2[] = { DRV_LABEL_CONSTRAINT, "topology.kubernetes.io/zone=z2" };
	static const char *const c_or[] = { DRV_LABEL_CONSTRAINT,
					    "nosuch|(topology.kubernetes.io/zone&[x|y])" };
	static const char *const c_and[] = { DRV_LABEL_CONSTRAINT,
					     "topology.kubernetes.io/zone&nosuch" };
	static const char *const c_key[] = { DRV_LABEL_CONSTRAINT, "topology.kubernetes.io/zone",
					     DRV_LABEL_EXCLUDE, "n1" };
	size_t at = 0;

	build_zones(&c);
	cr_assert(eq(str, (char *)placed_on(&c, w2, 1), "n2"));
	cr_assert(eq(str, (char *)placed_on(&c, x1, 1), "n2"));
	cr_assert(eq(str, (char *)placed_on(&c, x12, 2), "none"));
	cr_assert(eq(str, (char *)placed_on(&c, c_z2, 1), "n2"), "KEY=VALUE");
	cr_assert(eq(str, (char *)placed_on(&c, c_or, 1), "none"), "x|y: no such feature");
	cr_assert(eq(str, (char *)placed_on(&c, c_and, 1), "none"));
	cr_assert(eq(str, (char *)placed_on(&c, c_key, 2), "n2"), "a label's key, n1 excluded");
	cr_assert(eq(int, drv_constraint_check("a&(b|c)|[d]", &at), 0));
	cr_assert(eq(int, drv_constraint_check("a*2", &at), -1));
	cr_assert(eq(sz, at, 1));
	cr_assert(eq(int, drv_constraint_check("(a|b", &at), -1));
	cr_assert(eq(int, drv_constraint_check("", &at), -1));
	cr_assert(eq(int, drv_constraint_check("a&", &at), -1));
	drv_cluster_release(&c);
}

/* Slurm's -N: a group with distinct_nodes never puts two of its tasks on
 * one node, where best-fit alone would pack them together. */
Test(place, distinct_nodes_never_share_a_node)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p;
	char why[256];
	int i, k;

	build(&c, 2, 4, 8);
	drv_placement_init(&p);
	job1(&j, 4, 1, 0);
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0), "%s", why);
	cr_assert(eq(int, p.tasks[0].node, p.tasks[3].node), "best-fit packs 4 one-GPU tasks");
	j.groups[0].distinct_nodes = true;
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0), "%s", why);
	for (i = 0; i < p.ntasks; i++)
		for (k = i + 1; k < p.ntasks; k++)
			cr_assert(ne(int, p.tasks[i].node, p.tasks[k].node), "tasks %d and %d", i, k);
	drv_job_release(&j);
	job1(&j, 9, 1, 0); /* 9 tasks on 8 nodes: impossible */
	j.groups[0].distinct_nodes = true;
	cr_assert(ne(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0));
	drv_job_release(&j);
	drv_placement_release(&p);
	drv_cluster_release(&c);
}

/* Slurm's --exclusive (drv_job.exclusive): only nodes with nothing on
 * them, every GPU, CPU and MiB of each, and no other job there after. */
Test(place, exclusive_takes_whole_idle_nodes)
{
	struct drv_cluster c;
	struct drv_job small, ex, none, ex2;
	struct drv_placement ps, pe, pn, p2;
	struct drv_task_group *g;
	char buf[256];

	build(&c, 1, 4, 8);
	drv_placement_init(&ps);
	drv_placement_init(&pe);
	drv_placement_init(&pn);
	drv_placement_init(&p2);
	job1(&small, 1, 1, 0);
	cr_assert(eq(int, place_commit(&c, &small, &ps, buf, sizeof(buf)), 0));
	drv_placement_format(&c, &ps, buf, sizeof(buf));
	cr_assert(eq(str, buf, "n0-0:0"));
	/* two one-GPU tasks on distinct nodes, asking one CPU each */
	drv_job_init(&ex);
	g = drv_job_add_group(&ex, "w", 2, 1, 0);
	g->cpu_milli = 1000;
	g->distinct_nodes = true;
	ex.exclusive = true;
	cr_assert(eq(int, drv_place(&c, &ex, NULL, &pe, buf, sizeof(buf)), 0), "%s", buf);
	cr_assert(eq(int, c.vertices[0].free_gpus, 31), "drv_place left the cluster as it was");
	cr_assert(eq(int, c.nodes[1].excl_tasks + c.nodes[2].excl_tasks, 0));
	cr_assert(eq(int, place_commit(&c, &ex, &pe, buf, sizeof(buf)), 0), "%s", buf);
	drv_placement_format(&c, &pe, buf, sizeof(buf));
	cr_assert(eq(str, buf, "n0-1:0,1,2,3,4,5,6,7;n0-2:0,1,2,3,4,5,6,7"), "not the used n0-0");
	cr_assert(eq(i64, pe.tasks[0].cpu_milli, 64000));
	cr_assert(eq(i64, pe.tasks[1].mem_mib, 512 * 1024));
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	/* a task asking nothing still keeps off its nodes */
	job1(&none, 3, 0, 0);
	cr_assert(eq(int, drv_place(&c, &none, NULL, &pn, buf, sizeof(buf)), 0), "%s", buf);
	for (int i = 0; i < 3; i++)
		cr_assert(pn.tasks[i].node != pe.tasks[0].node && pn.tasks[i].node != pe.tasks[1].node,
			  "task %d on node %d", i, pn.tasks[i].node);
	/* one idle node is left: a second two-node exclusive job waits, saying so */
	cr_assert(eq(int, drv_place(&c, &ex, NULL, &p2, buf, sizeof(buf)), DRV_ENOSPACE));
	cr_assert(eq(str, buf, "needs whole nodes (exclusive) for 2 tasks; 1 node has nothing on it"));
	/* two tasks without distinct nodes share the one idle node */
	drv_job_init(&ex2);
	drv_job_add_group(&ex2, "w", 2, 2, 0);
	ex2.exclusive = true;
	cr_assert(eq(int, drv_place(&c, &ex2, NULL, &p2, buf, sizeof(buf)), 0), "%s", buf);
	drv_placement_format(&c, &p2, buf, sizeof(buf));
	cr_assert(eq(str, buf, "n0-3:0,1,4,5,6,7;n0-3:2,3"));
	drv_cluster_uncommit(&c, &pe);
	cr_assert(eq(int, c.nodes[1].excl_tasks + c.nodes[2].excl_tasks, 0));
	cr_assert(eq(int, c.vertices[0].free_gpus, 31));
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	drv_job_release(&small);
	drv_job_release(&ex);
	drv_job_release(&ex2);
	drv_job_release(&none);
	drv_placement_release(&ps);
	drv_placement_release(&pe);
	drv_placement_release(&pn);
	drv_placement_release(&p2);
	drv_cluster_release(&c);
}

/* Slurm's -w with a larger -N: the named nodes are required (they would not
 * be best-fit's choice) and others are added; a busy required node leaves
 * the job waiting with a reason naming it; a node that does not exist is
 * refused by the static check. */
Test(place, slurm_include_nodes_with_more_nodes)
{
	struct drv_cluster c;
	struct drv_job j, busy;
	struct drv_placement p, q;
	char why[256];
	bool has12 = false;
	int i;

	build(&c, 2, 2, 8);
	drv_placement_init(&p);
	drv_placement_init(&q);
	job1(&j, 2, 1, 0);
	j.groups[0].distinct_nodes = true;
	drv_job_add_node_label(&j, DRV_LABEL_INCLUDE, "n1-1");
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0), "%s", why);
	cr_assert(eq(int, p.ntasks, 2));
	for (i = 0; i < p.ntasks; i++)
		has12 |= !strcmp(c.nodes[p.tasks[i].node].name, "n1-1");
	cr_assert(has12, "n1-1 is among the nodes");
	cr_assert(ne(int, p.tasks[0].node, p.tasks[1].node));
	cr_assert(eq(int, drv_place_check_static(&c, &j, NULL, why, sizeof(why)), 0), "%s", why);

	/* n1-1 full: the job waits, naming it, though other nodes are free */
	job1(&busy, 1, 8, 0);
	drv_job_add_node_label(&busy, DRV_LABEL_HOST, "n1-1");
	cr_assert(eq(int, drv_place_commit(&c, &busy, NULL, &q, why, sizeof(why)), 0), "%s", why);
	cr_assert(ne(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0));
	cr_assert(strstr(why, "required nodes n1-1") != NULL, "%s", why);
	cr_assert(eq(int, p.ntasks, 0));
	drv_job_release(&busy);
	drv_job_release(&j);

	job1(&j, 2, 1, 0);
	drv_job_add_node_label(&j, DRV_LABEL_INCLUDE, "n9-9");
	cr_assert(ne(int, drv_place_check_static(&c, &j, NULL, why, sizeof(why)), 0));
	cr_assert(strstr(why, "Invalid node name specified: n9-9") != NULL, "%s", why);
	drv_job_release(&j);
	drv_placement_release(&p);
	drv_placement_release(&q);
	drv_cluster_release(&c);
}
