/*
 * fgd.c: fragmentation-aware scoring, the second placement strategy
 * (src/core), after "Fragmentation Gradient Descent" (Weng et al., ATC'23).
 *
 * A node's fragmentation for one kind of task is the free GPU capacity on
 * it that such a task could not use: for a share of m milli-GPUs, the free
 * milli on GPUs with less than m free; for a task of g whole GPUs, the free
 * milli on partly used GPUs, or all of the node's free milli when fewer
 * than g GPUs are wholly free. The expected fragmentation weighs that over
 * the expected mix of task sizes. FGD puts each task on the node and GPU
 * whose choice increases the expected fragmentation least.
 *
 * In drover the topology search above the nodes is unchanged (smallest
 * subtree, best-fit); FGD decides among the nodes of the chosen subtree
 * and, for fractional tasks, among the GPUs of a node.
 */
#include "drover/model.h"
#include "core_int.h"

/* The built-in mix: shares and whole-GPU tasks, in milli-GPUs. */
static const int32_t default_mix[] = { 250, 500, 1000, 2000, 4000, 8000 };
static const double default_weight[] = { 0.10, 0.15, 0.35, 0.10, 0.10, 0.20 };

/* Expected fragmentation of a node whose GPUs have free[k] milli free. */
static double frag(const int32_t *free, int ngpus, const int32_t *mix, const double *w, int nmix)
{
	double f = 0;
	int t, k;

	for (t = 0; t < nmix; t++) {
		int32_t m = mix[t];
		int64_t part = 0, all = 0, whole = 0;
		for (k = 0; k < ngpus; k++) {
			all += free[k];
			if (free[k] == DRV_MILLI)
				whole++;
			else if (m < DRV_MILLI ? free[k] < m : 1)
				part += free[k];
		}
		if (m < DRV_MILLI) {
			/* free[k] == 1000 is never < m here */
			f += w[t] * (double)part;
		} else {
			int64_t g = m / DRV_MILLI;
			f += w[t] * (double)(whole < g ? all : part);
		}
	}
	return f;
}

double drv__fgd_delta(const struct drv_node *n, const struct drv_task_group *g,
		      const struct drv_place_opts *opts, int *gpu)
{
	const int32_t *mix = default_mix;
	const double *w = default_weight;
	int nmix = (int)DRV_ARRAY_SIZE(default_mix), k, best = -1, taken = 0;
	int32_t free[DRV_MAX_NODE_GPUS], seen[DRV_MAX_NODE_GPUS], nseen = 0;
	double before, after, bestd = 0;

	if (opts && opts->mix_milli && opts->mix_weight && opts->nmix > 0) {
		mix = opts->mix_milli;
		w = opts->mix_weight;
		nmix = opts->nmix;
	}
	for (k = 0; k < n->ngpus; k++)
		free[k] = DRV_MILLI - n->gpu_milli_used[k];
	before = frag(free, n->ngpus, mix, w, nmix);
	if (gpu)
		*gpu = -1;
	if (g->gpus > 0) {
		/* which free GPUs a whole task takes does not change the score */
		for (k = 0; k < n->ngpus && taken < g->gpus; k++)
			if (free[k] == DRV_MILLI) {
				free[k] = 0;
				taken++;
			}
		if (taken < g->gpus)
			return 1e18;
		return frag(free, n->ngpus, mix, w, nmix) - before;
	}
	if (g->gpu_milli <= 0)
		return 0;
	for (k = 0; k < n->ngpus; k++) {
		int32_t f0 = free[k], i;
		if (f0 < g->gpu_milli)
			continue;
		/* GPUs with as much free score alike: only the first is scored */
		for (i = 0; i < nseen && seen[i] != f0; i++)
			;
		if (i < nseen)
			continue;
		seen[nseen++] = f0;
		free[k] = f0 - g->gpu_milli;
		after = frag(free, n->ngpus, mix, w, nmix);
		free[k] = f0;
		/* ties: the fuller GPU (best fit), then the lower index */
		if (best < 0 || after - before < bestd - 1e-9 ||
		    (after - before < bestd + 1e-9 && f0 < free[best])) {
			best = k;
			bestd = after - before;
		}
	}
	if (gpu)
		*gpu = best;
	return best < 0 ? 1e18 : bestd;
}
