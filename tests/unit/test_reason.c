/*
 * test_reason.c: src/core/reason.c. What the cluster as configured could
 * ever hold (down and draining nodes count, elastic pools at maxNodes, an
 * empty cluster refuses nothing), the node-down verdict, and the words:
 * codes and sentences with durations from now, never epochs.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "drover/model.h"
#include "drover/sched.h"

/* Two nodes of 8 H100s (224 CPUs, 2 TiB) and one of 4, in pool "dc". */
static void build(struct drv_cluster *c)
{
	static const char *const lv[] = { "cluster", "pool", "node" };
	struct drv_pool p = { .name = "dc", .region = "us" };
	int h100 = drv_gpu_model_find("H100");
	int pv;

	drv_cluster_init(c, "t");
	drv_cluster_set_levels(c, lv, 3);
	pv = drv_cluster_add_vertex(c, 0, "dc");
	p.vertex = pv;
	drv_cluster_add_pool(c, &p);
	drv_cluster_add_node(c, pv, "a", h100, 8, 224000, 2 << 20);
	drv_cluster_add_node(c, pv, "b", h100, 8, 224000, 2 << 20);
	drv_cluster_add_node(c, pv, "c", h100, 4, 2000, 1024);
}

static int check(struct drv_cluster *c, struct drv_job *j, char *buf, size_t n)
{
	struct drv_capacity *cap = drv_capacity_new();
	struct drv_sched_decision w;
	int r;

	drv_capacity_build(cap, c, NULL, NULL);
	r = drv_capacity_check(cap, c, j, &w);
	drv_sched_reason_text(c, &w, 0, buf, n);
	if (r)
		cr_assert(eq(int, (int)w.reason, r));
	drv_capacity_free(cap);
	return r;
}

Test(reason, never_fits_names_the_resource)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_task_group *g;
	char buf[256];

	build(&c);
	drv_job_init(&j);
	drv_job_add_group(&j, "t", 1, 16, 0);
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), DRV_REASON_NEVER));
	cr_assert(eq(str, buf, "a task needs 16 GPUs on one node; the largest node has 8"));
	drv_job_release(&j);

	drv_job_init(&j);
	g = drv_job_add_group(&j, "t", 1, 2, 0);
	g->model = (int8_t)drv_gpu_model_find("H200");
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), DRV_REASON_NEVER));
	cr_assert(eq(str, buf, "needs H200; the cluster has only H100"));
	drv_job_release(&j);

	/* a share by GPU memory that no GPU of the cluster has: never, 0 GPUs is no answer */
	drv_job_init(&j);
	g = drv_job_add_group(&j, "t", 1, 0, 0);
	g->gpu_mem_mib = 90000;
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), DRV_REASON_NEVER));
	cr_assert(eq(str, buf, "a task needs 90000 MiB of one GPU's memory; the largest GPU (H100) "
		     "has 80 GiB"));
	drv_job_release(&j);
	drv_job_init(&j);
	g = drv_job_add_group(&j, "t", 1, 0, 0);
	g->gpu_mem_mib = 20000;
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), 0), "fits an H100: %s", buf);
	drv_job_release(&j);

	drv_job_init(&j);
	g = drv_job_add_group(&j, "t", 1, 1, 0);
	g->cpu_milli = 400000;
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), DRV_REASON_NEVER));
	cr_assert(eq(str, buf, "a task needs 400 CPUs; the largest node has 224"));
	drv_job_release(&j);

	drv_job_init(&j);
	drv_job_add_group(&j, "t", 3, 8, 0);
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), DRV_REASON_NEVER));
	cr_assert(eq(str, buf, "needs 24 GPUs; the cluster has 20"));
	drv_job_release(&j);

	/* fits: 2 x 8 */
	drv_job_init(&j);
	drv_job_add_group(&j, "t", 2, 8, 0);
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), 0));
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(reason, down_nodes_count_and_are_named)
{
	struct drv_cluster c;
	struct drv_job j;
	char buf[256];

	build(&c);
	drv_cluster_set_node_state(&c, 0, DRV_NODE_DOWN);
	drv_cluster_set_node_state(&c, 1, DRV_NODE_DRAINING);
	drv_job_init(&j);
	drv_job_add_group(&j, "t", 1, 8, 0);
	/* it fits the cluster as configured: not refused, waits for a, b */
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), DRV_REASON_NODE_DOWN));
	cr_assert(eq(str, buf, "a task needs 8 GPUs on one node; the largest node up has 4; "
			       "fits when nodes down or draining return: a and 1 more"));
	drv_job_release(&j);
	drv_cluster_release(&c);
}

/* Slurm's ReqNodeNotAvail: a node the job requires (-w with a larger -N)
 * or the only nodes it may use (-w) down or draining; code and text from
 * the one function, the text led by Slurm's UnavailableNodes:LIST. */
Test(reason, required_nodes_down_are_req_node_not_avail)
{
	struct drv_sched_decision d;
	struct drv_cluster c;
	struct drv_job j;
	struct drv_task_group *g;
	char buf[256];

	build(&c);
	drv_cluster_set_node_state(&c, 1, DRV_NODE_DRAINING);
	/* -N 2 -w b: b is required; a and c could take the rest */
	drv_job_init(&j);
	g = drv_job_add_group(&j, "t", 2, 1, 0);
	g->distinct_nodes = true;
	drv_job_add_node_label(&j, DRV_LABEL_INCLUDE, "b");
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), DRV_REASON_REQ_NODE));
	cr_assert(eq(str, buf, "UnavailableNodes:b: a node it requires (-w/--nodelist) is down "
			       "or draining"));
	d = (struct drv_sched_decision){ .reason = DRV_REASON_REQ_NODE };
	cr_assert(eq(str, (char *)drv_sched_reason_code(&d), "ReqNodeNotAvail"));
	drv_job_release(&j);

	/* -w a,b (one task on each): b is one of the only two it may use */
	drv_job_init(&j);
	g = drv_job_add_group(&j, "t", 2, 1, 0);
	g->distinct_nodes = true;
	drv_job_add_node_label(&j, DRV_LABEL_HOST, "a");
	drv_job_add_node_label(&j, DRV_LABEL_HOST, "b");
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), DRV_REASON_REQ_NODE));
	cr_assert(eq(str, buf, "UnavailableNodes:b: too few of the nodes it may use "
			       "(-w/--nodelist) are up"));
	drv_job_release(&j);

	/* -w b,c with one task: c is up, the job may run there: no verdict */
	drv_job_init(&j);
	drv_job_add_group(&j, "t", 1, 1, 0);
	drv_job_add_node_label(&j, DRV_LABEL_HOST, "b");
	drv_job_add_node_label(&j, DRV_LABEL_HOST, "c");
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), 0));
	drv_job_release(&j);

	/* the required node up again: it only waits for room (Resources, in the pass) */
	drv_cluster_set_node_state(&c, 1, DRV_NODE_UP);
	drv_job_init(&j);
	g = drv_job_add_group(&j, "t", 2, 1, 0);
	g->distinct_nodes = true;
	drv_job_add_node_label(&j, DRV_LABEL_INCLUDE, "b");
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), 0));
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(reason, empty_cluster_refuses_nothing)
{
	struct drv_cluster c;
	struct drv_job j;
	char buf[64];

	drv_cluster_init(&c, "none");
	drv_job_init(&j);
	drv_job_add_group(&j, "t", 1, 64, 0);
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), 0));
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(reason, elastic_pool_counts_at_max_nodes)
{
	static const char *const lv[] = { "cluster", "pool", "node" };
	struct drv_pool p = { .name = "cloud", .elastic = true, .max_nodes = 4 };
	struct drv_cluster c;
	struct drv_job j;
	char buf[128];
	int pv;

	drv_cluster_init(&c, "t");
	drv_cluster_set_levels(&c, lv, 3);
	pv = drv_cluster_add_vertex(&c, 0, "cloud");
	p.vertex = pv;
	drv_cluster_add_pool(&c, &p);
	drv_cluster_add_node(&c, pv, "n0", drv_gpu_model_find("H100"), 8, 0, 0);
	drv_job_init(&j);
	drv_job_add_group(&j, "t", 4, 8, 0);   /* 4 nodes: the pool may grow to them */
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), 0));
	drv_job_release(&j);
	drv_job_init(&j);
	drv_job_add_group(&j, "t", 5, 8, 0);
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), DRV_REASON_NEVER));
	cr_assert(eq(str, buf, "needs 40 GPUs; the cluster has 32"));
	drv_job_release(&j);
	drv_cluster_release(&c);
}

/* -N 4 with no GPU (sbatch -N 4 --wrap true) on a cluster of three
 * nodes: never (it used to wait for Resources for ever); -N 3 fits, and a
 * node down still counts. An elastic pool that may grow refuses nothing of
 * the kind: its nodes are not there yet. */
Test(reason, distinct_nodes_beyond_the_cluster_never_fit)
{
	static const char *const lv[] = { "cluster", "pool", "node" };
	struct drv_pool p = { .name = "cloud", .elastic = true, .max_nodes = 8 };
	struct drv_cluster c;
	struct drv_job j;
	struct drv_task_group *g;
	char buf[160];
	int pv;

	build(&c);
	drv_job_init(&j);
	g = drv_job_add_group(&j, "t", 4, 0, 0);
	g->distinct_nodes = true;
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), DRV_REASON_NEVER));
	cr_assert(eq(str, buf, "needs 4 distinct nodes that fit a task; the cluster has 3"));
	g->count = 3;
	drv_cluster_set_node_state(&c, 2, DRV_NODE_DOWN);
	cr_assert(ne(int, check(&c, &j, buf, sizeof(buf)), DRV_REASON_NEVER), "%s", buf);
	/* tasks too big for node c: only a and b fit one */
	g->cpu_milli = 4000;
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), DRV_REASON_NEVER));
	cr_assert(eq(str, buf, "needs 3 distinct nodes that fit a task; the cluster has 2"));
	drv_job_release(&j);
	drv_cluster_release(&c);

	drv_cluster_init(&c, "t");
	drv_cluster_set_levels(&c, lv, 3);
	pv = drv_cluster_add_vertex(&c, 0, "cloud");
	p.vertex = pv;
	drv_cluster_add_pool(&c, &p);
	drv_cluster_add_node(&c, pv, "n0", drv_gpu_model_find("H100"), 8, 0, 0);
	drv_job_init(&j);
	g = drv_job_add_group(&j, "t", 4, 0, 0);
	g->distinct_nodes = true;
	cr_assert(eq(int, check(&c, &j, buf, sizeof(buf)), 0), "%s", buf);
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(reason, codes_and_durations)
{
	struct drv_sched_decision d;
	char buf[128];

	memset(&d, 0, sizeof(d));
	d.kind = DRV_DEC_PENDING;
	d.reason = DRV_REASON_RESERVED;
	d.at = 1000 + 2 * 3600 + 13 * 60;
	drv_sched_reason_text(NULL, &d, 1000, buf, sizeof(buf));
	cr_assert(eq(str, buf, "holds a reservation; starts in 2h13m"));
	cr_assert(eq(str, (char *)drv_sched_reason_code(&d), "Reservation"));
	d.reason = DRV_REASON_RESERVATION;
	d.n[0] = 7;
	drv_sched_reason_text(NULL, &d, 1000 + 2 * 3600 + 13 * 60 - 100, buf, sizeof(buf));
	cr_assert(eq(str, buf, "would delay job 7, whose reservation starts in 1m40s"));
	cr_assert(eq(str, (char *)drv_sched_reason_code(&d), "Priority"));
	d.reason = DRV_REASON_NODE_DOWN;
	cr_assert(eq(str, (char *)drv_sched_reason_code(&d), "NodeDown"));
	d.reason = DRV_REASON_NEVER;
	cr_assert(eq(str, (char *)drv_sched_reason_code(&d), "BadConstraints"));
	d.reason = DRV_REASON_TOPOLOGY;
	cr_assert(eq(str, (char *)drv_sched_reason_code(&d), "Resources"));
}
